//! FP8 (E4M3 / E5M2) codec and per-tensor scaled quantization.
//!
//! [`host`] is the bit-exact CPU model and the specification of the GPU
//! kernels of this family: the hardware path (`cvt.rn.satfinite.e4m3x2.f32`
//! and its e5m2 twin, sm_89+) and the integer software encoder used below
//! sm_89 must reproduce it byte for byte. Read the [`host`] module docs for
//! the full contract (rounding, subnormals, saturation, NaN, signed zero,
//! the amax/scale rules for every input).
//!
//! [`ptx`] generates the kernels per SM (grid-wide absmax in two passes,
//! quantize with the device-computed or a given scale, dequantize; the
//! hardware `cvt` on sm_89+, the integer codec everywhere else), and
//! [`launch`] runs them: `launch::quantize(backend, xs)` and friends take a
//! [`crate::runtime::Backend`] and report which implementation ran, while
//! `launch::*_on(executor, …)` run the same launch sequence on a GPU or on
//! the simulator.
//!
//! Everything public in [`host`] is re-exported here (the launch entry
//! points are not, since they share the host functions' names).

pub mod host;
pub mod launch;
pub mod ptx;

pub use host::*;
