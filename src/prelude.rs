//! The names a program that launches kernels uses, in one import:
//!
//! ```
//! use ptxsmith::prelude::*;
//!
//! let ctx = Context::sim(Sm::Sm80); // or Context::cuda(0)?
//! let st = ctx.default_stream();
//! let (x, y) = (st.upload(&[1.0f32, 2.0])?, st.upload(&[3.0f32, 4.0])?);
//! let mut out = ctx.alloc::<f32>(1)?;
//! dot::dot_rows_dev(&st, dot::Shape { rows: 1, n: 2 }, &x, &y, &mut out)?;
//! assert_eq!(st.to_vec(&out)?, [11.0]);
//! # Ok::<(), Error>(())
//! ```
//!
//! The kernel families come in as modules (`dot`, `fp8`, `score`, …),
//! each with its request types and entry points at its root; the runtime
//! types (contexts, streams, buffers, foreign views, backends) and the
//! error types come in by name, and so do a user kernel's
//! ([`Kernel`], launched with [`Stream::launch_kernel`] and a
//! [`LaunchConfig`]).

pub use crate::dsl::Kernel;
pub use crate::error::{ArgError, DriverCode, Error, Result};
pub use crate::exec::LaunchConfig;
pub use crate::kernels::{block_ell, block_scaled, dot, fp8, hmm, logcumsumexp, score, viterbi};
pub use crate::runtime::{
    AsDevice, AsDeviceMut, Backend, Context, DeviceBuffer, DeviceSlice, DeviceSliceMut,
    ForeignSlice, ForeignSliceMut, Ran, RawStream, Stream,
};
pub use crate::target::Sm;
