//! Runtime: devices, module cache, launches and backends.
//!
//! # Layers
//!
//! [`Context`] (one device: a GPU on its primary context, or the CPU
//! simulator) → [`Stream`] (ordered, asynchronous copies and launches) →
//! [`DeviceBuffer<T>`] / [`DeviceSlice`] / [`DeviceSliceMut`] (typed device
//! memory; host copies through `bytemuck` views). Kernel launch code is
//! written once against these and runs the same on a GPU and on Sim. The
//! runtime depends on the DSL (modules, parameter descriptions), never the
//! reverse; launch arguments and buffers meet in [`Stream::arg`] /
//! [`Stream::launch`].
//!
//! Below the runtime: the backend trait [`Executor`] and the launch
//! vocabulary ([`LaunchConfig`], [`RawStream`], [`Traffic`], …) live in the
//! leaf [`crate::exec`] (re-exported here and as [`exec`]), which the
//! simulator implements without importing the runtime. The GPU backend is
//! the folder [`gpu`]: [`Gpu`] and device probing, its `Executor`
//! (`gpu/cuda.rs`), the JIT [`ModuleCache`] and the FFI. A simulator
//! context keeps its [`Sim`](crate::sim::Sim) as itself
//! ([`Context::with_sim`]); the trait never names the simulator. Helpers
//! for device tests are in [`crate::testing`], not here.
//!
//! # The fence around `unsafe`
//!
//! ptxsmith talks to the GPU through the CUDA driver API only (no runtime
//! library, no NVRTC): PTX text is JIT-compiled by the driver. The unsafe
//! surface is fenced in three layers, and everything under `runtime` except
//! the first layer is compiled with `#![deny(unsafe_code)]`:
//!
//! 1. **FFI** (`runtime::gpu::ffi`, crate-private, the only module allowed
//!    `unsafe`): the launch argument pack and `cuLaunchKernel`, owned
//!    device allocations whose copies and fills check their byte ranges,
//!    events, the primary context. Every `unsafe` carries a `SAFETY:`
//!    comment.
//! 2. **Driver wrappers** from the `oxicuda-*` crates: `Module` (JIT with
//!    logs), `Kernel`, `Stream`, all RAII.
//! 3. **The safe [`Executor`]** implemented by [`Gpu`]: allocations by
//!    address with range checks, launches checked against the module's
//!    parameters *and* the entry signature in its PTX text, pointer
//!    arguments checked to lie in live buffers, launch shapes and static +
//!    dynamic shared memory checked against the device. The CPU simulator
//!    implements the same trait.
//!
//! Memory and streams of another stack enter through `unsafe fn`
//! constructors whose `# Safety` sections say what the caller vouches for
//! ([`ForeignSlice::from_raw_parts`], [`ForeignSliceMut::from_raw_parts`],
//! [`Stream::from_raw`]); they contain no unsafe operation themselves (they
//! are allowed `unsafe_code` for the declaration only). A foreign view is
//! checked as far as the driver can tell (context, range, alignment) and,
//! while it lives, launches and copies accept its memory. The raw-pointer
//! entry points of the kernel families (`*_raw`) are thin `unsafe`
//! wrappers that build such views from their shapes.
//!
//! # Module cache
//!
//! Each [`Gpu`] owns a [`ModuleCache`] keyed by [`ModuleKey`] =
//! `(kernel, tuning, sm)`: a module is JIT-compiled once per context. A JIT
//! failure is an [`Error::Jit`](crate::Error::Jit) carrying the driver's
//! error log (and, for a PTX ISA version the driver does not know, the driver
//! the module needs); a second, different PTX text under the same key is
//! refused.
//!
//! # Backends
//!
//! [`Backend`] says where a slice-API kernel call runs (`Cuda` fails loud
//! without a device, `Auto` falls back to the host model and says so,
//! `Host`, `Sim`); [`resolve`] turns it into a [`Resolved`], once: the
//! GPU's context or a fresh simulator context ([`Resolved::context`]), or
//! the host model. Without a
//! driver every device entry point returns
//! [`Error::NoDevice`](crate::Error::NoDevice) with the loader's reason;
//! nothing panics.

#![deny(unsafe_code)]

pub mod backend;
pub mod buffer;
pub mod context;
#[cfg(feature = "cudarc")]
#[cfg_attr(docsrs, doc(cfg(feature = "cudarc")))]
#[allow(unsafe_code)]
pub mod cudarc;
pub mod exec;
pub mod gpu;

pub use backend::{Backend, Ran, Resolved, default_sim_sm, resolve};
pub use buffer::{
    AsDevice, AsDeviceMut, DeviceBuffer, DeviceRepr, DeviceSlice, DeviceSliceMut, ForeignSlice,
    ForeignSliceMut,
};
pub use context::{Context, DeviceKind, Stream};
#[cfg(feature = "cudarc")]
pub use cudarc::{CudarcView, CudarcViewMut};
pub use exec::{CUdeviceptr, Executor, LaunchConfig, RawStream, Traffic};
pub use gpu::cache::{CacheStats, ModuleCache, ModuleKey};
pub use gpu::{
    EMULATOR_NAME_PREFIX, Gpu, GpuInfo, cuda_available, cuda_unavailable_reason, device_count,
    device_sm,
};
