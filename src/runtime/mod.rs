//! Runtime: devices, module cache, launches and backends.
//!
//! # The fence around `unsafe`
//!
//! ptxsmith talks to the GPU through the CUDA driver API only (no runtime
//! library, no NVRTC): PTX text is JIT-compiled by the driver. The unsafe
//! surface is fenced in three layers, and everything under `runtime` except
//! the first layer is compiled with `#![deny(unsafe_code)]`:
//!
//! 1. **FFI arguments** (`runtime::ffi`, crate-private, the only module
//!    allowed `unsafe`): the launch argument pack, one 8-byte-aligned slot
//!    per parameter, with its `unsafe impl oxicuda_launch::KernelArgs`;
//!    and prefix copies between host slices and device buffers. A pack can
//!    only be built after [`check_args`](crate::dsl::params::check_args)
//!    accepted the arguments for the module it will launch. Every `unsafe`
//!    carries a `SAFETY:` comment.
//! 2. **Driver wrappers** from the `oxicuda-*` crates: `Context`, `Stream`,
//!    `Module` (JIT with logs), `Kernel`, `DeviceBuffer`, all RAII.
//! 3. **The safe [`Executor`]** implemented by [`Gpu`]: buffers by device
//!    address with length checks, launches checked against the module's
//!    parameters, pointer arguments checked to lie in live buffers, launch
//!    shapes checked, every operation synchronised so errors surface at the
//!    call that caused them. The CPU simulator implements the same trait, so
//!    kernel launch code is written once.
//!
//! # Module cache
//!
//! Each [`Gpu`] owns a [`ModuleCache`] keyed by [`ModuleKey`] =
//! `(kernel, tuning, sm)`: a module is JIT-compiled once per context. A JIT
//! failure is an [`Error::Jit`](crate::Error::Jit) carrying the driver's
//! error log; a second, different PTX text under the same key is refused.
//!
//! # Backends
//!
//! [`Backend`] says where a kernel call runs (`Cuda` fails loud without a
//! device, `Auto` falls back to the host model and says so, `Host`, `Sim`);
//! [`resolve`] turns it into a [`Resolved`], with the process-wide
//! [`SharedGpu`] for the device. Without a driver every device entry point
//! returns [`Error::NoDevice`](crate::Error::NoDevice) with the loader's
//! reason; nothing panics.

#![deny(unsafe_code)]

pub mod backend;
pub mod cache;
mod cuda;
pub mod device;
pub mod device_tests_support;
pub mod exec;
#[allow(unsafe_code)]
mod ffi;

pub use backend::{Backend, Ran, Resolved, SharedGpu, resolve, shared_gpu};
pub use cache::{ModuleCache, ModuleKey};
pub use device::{Gpu, GpuInfo, cuda_available, cuda_unavailable_reason, device_count, device_sm};
pub use device_tests_support::{SKIP_NO_DEVICE, gpu_for_tests};
pub use exec::{BufferId, Executor, LaunchConfig, Traffic};
