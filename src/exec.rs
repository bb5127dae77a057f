//! The launch vocabulary ([`LaunchConfig`], [`CUdeviceptr`],
//! [`RawStream`], [`Traffic`], [`CacheStats`]) and the backend interface
//! ([`Executor`]): byte buffers by device address, streams by raw handle,
//! asynchronous launches. The CUDA device (the runtime's `Gpu`) and the
//! CPU PTX simulator (`sim::Sim`) implement it, so every kernel's launch
//! code, written once against the runtime's typed layer on top, runs the
//! same sequence of copies and launches on both.
//!
//! A leaf under both the runtime and the simulator: it names neither
//! (only the DSL's module and argument types), so the simulator can
//! implement the trait without depending on the runtime above it. The
//! runtime re-exports everything here (`runtime::exec`, and its root).
//!
//! Users normally go through the runtime's `Context`, `Stream` and
//! `DeviceBuffer`; this trait is the seam for a new backend.

use crate::abi::ArgValue;
use crate::dsl::PtxModule;
use crate::error::Result;
use crate::target::Sm;

/// Grid and block shape plus dynamic shared memory of one launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    /// CTAs in x, y, z.
    pub grid: (u32, u32, u32),
    /// Threads per CTA in x, y, z.
    pub block: (u32, u32, u32),
    /// Dynamic shared memory per CTA, in bytes.
    pub dynamic_smem_bytes: u32,
}

impl LaunchConfig {
    /// A 1-D launch.
    pub fn linear(grid: u32, block: u32) -> Self {
        Self {
            grid: (grid, 1, 1),
            block: (block, 1, 1),
            dynamic_smem_bytes: 0,
        }
    }
}

/// A device address as the CUDA driver API spells it (`CUdeviceptr`): what
/// the raw-pointer entry points take. On the simulator, an address in its
/// own simulated address space.
pub type CUdeviceptr = u64;

/// A stream as the backend knows it: on a GPU the `CUstream` handle's
/// value (0 is the legacy default stream), on the simulator an id it
/// handed out. Interop code builds one from a foreign `CUstream` with
/// [`RawStream::from_ptr`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RawStream(pub u64);

impl RawStream {
    /// The legacy default stream (`CUstream` null) on a GPU.
    pub const NULL: RawStream = RawStream(0);

    /// The handle of a driver `CUstream` (e.g. cudarc's
    /// `CudaStream::cu_stream()`), as an opaque value.
    pub fn from_ptr<P>(stream: *mut P) -> Self {
        RawStream(stream as usize as u64)
    }
}

/// Traffic counters of a backend, for tests that assert what crossed the
/// bus (e.g. a resident dictionary uploaded once, only results
/// downloaded).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Bytes copied host → device.
    pub bytes_uploaded: u64,
    /// Bytes copied device → host.
    pub bytes_downloaded: u64,
    /// Bytes copied device → device.
    pub bytes_copied_on_device: u64,
    /// Host → device copy operations.
    pub uploads: u64,
    /// Device → host copy operations.
    pub downloads: u64,
    /// Kernel launches.
    pub launches: u64,
    /// Device allocations made.
    pub allocations: u64,
}

impl Traffic {
    /// The counters accumulated since `earlier` (a snapshot of the same
    /// backend).
    pub fn since(&self, earlier: &Traffic) -> Traffic {
        Traffic {
            bytes_uploaded: self.bytes_uploaded - earlier.bytes_uploaded,
            bytes_downloaded: self.bytes_downloaded - earlier.bytes_downloaded,
            bytes_copied_on_device: self.bytes_copied_on_device - earlier.bytes_copied_on_device,
            uploads: self.uploads - earlier.uploads,
            downloads: self.downloads - earlier.downloads,
            launches: self.launches - earlier.launches,
            allocations: self.allocations - earlier.allocations,
        }
    }
}

/// Counters of a JIT module cache (the runtime's `ModuleCache`, see
/// [`Executor::module_cache_stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups that found the module loaded.
    pub hits: u64,
    /// Successful loads (misses that compiled).
    pub loads: u64,
    /// Module texts hashed to check the key (zero for memoised modules).
    pub text_hashes: u64,
    /// Modules held.
    pub modules: usize,
}

/// A device (GPU or simulator) that holds buffers and runs PTX modules on
/// streams.
///
/// Ordering: operations on one stream run in the order they were queued.
/// `copy_dtod`, `zero` and `launch` may return before the work ran;
/// `copy_htod` and `copy_dtoh` return when the bytes have landed (they
/// borrow host memory), `synchronize` when the stream is idle. Errors of
/// asynchronous work are returned by the next synchronizing call on that
/// stream, naming the kernels queued since the last one.
pub trait Executor: Send {
    /// The SM the backend compiles for.
    fn sm(&self) -> Sm;
    /// Number of streaming multiprocessors (for grid sizing).
    fn multiprocessor_count(&self) -> u32;
    /// The stream every context starts with.
    fn default_stream(&self) -> RawStream;
    /// A new stream.
    fn create_stream(&mut self) -> Result<RawStream>;
    /// Synchronize and destroy a stream made by [`create_stream`](Self::create_stream).
    fn destroy_stream(&mut self, s: RawStream) -> Result<()>;
    /// Allocate `bytes` of device memory, zeroed or not (the simulator
    /// tracks the bytes of an unzeroed allocation as uninitialised).
    /// Returns the address, aligned to at least 256 bytes.
    fn alloc(&mut self, bytes: usize, zeroed: bool) -> Result<u64>;
    /// Release the allocation at `addr`. The caller has synchronised every
    /// stream that used it.
    fn free(&mut self, addr: u64) -> Result<()>;
    /// Copy `src` to device memory at `dst`; returns when it has landed.
    fn copy_htod(&mut self, s: RawStream, dst: u64, src: &[u8]) -> Result<()>;
    /// Copy device memory at `src` into `dst`; returns when it has landed.
    fn copy_dtoh(&mut self, s: RawStream, src: u64, dst: &mut [u8]) -> Result<()>;
    /// Queue a device → device copy. Both ranges lie in live buffers or
    /// adopted foreign views (see [`adopt_foreign`](Self::adopt_foreign)).
    fn copy_dtod(&mut self, s: RawStream, dst: u64, src: u64, bytes: usize) -> Result<()>;
    /// Queue zeroing `bytes` bytes at `dst`.
    fn zero(&mut self, s: RawStream, dst: u64, bytes: usize) -> Result<()>;
    /// Queue `module`'s entry with `args` (checked against the module's
    /// parameters and its PTX entry signature; every non-null pointer must
    /// lie in, or one past, a live buffer or an adopted foreign view).
    fn launch(
        &mut self,
        s: RawStream,
        module: &PtxModule,
        cfg: LaunchConfig,
        args: &[ArgValue],
    ) -> Result<()>;
    /// Make `waiter` wait for the work queued on `waited` so far.
    fn stream_wait(&mut self, waiter: RawStream, waited: RawStream) -> Result<()>;
    /// Wait for `s`, or for every stream of the context with `None`.
    fn synchronize(&mut self, s: Option<RawStream>) -> Result<()>;
    /// Bytes moved and launches made so far.
    fn traffic(&self) -> Traffic;
    /// Why the backend can no longer be used (a device-side fault), if so.
    fn lost(&self) -> Option<String> {
        None
    }
    /// Whether every operation has finished when it returns (the
    /// simulator): then dropped buffers are freed at once.
    fn is_synchronous(&self) -> bool {
        false
    }
    /// Make the backend's context current on the calling thread, so other
    /// CUDA code on this thread works in it (a no-op on the simulator).
    fn make_current(&self) -> Result<()> {
        Ok(())
    }
    /// JIT-compile `module` now (a no-op where there is no JIT).
    fn load(&mut self, _module: &PtxModule) -> Result<()> {
        Ok(())
    }
    /// Accept the foreign device memory `[addr, addr + bytes)` of a new
    /// foreign view (the runtime's `ForeignSlice`)
    /// in launches and copies until [`forget_foreign`](Self::forget_foreign).
    /// A GPU checks it with the driver first: memory of another context is
    /// [`Error::WrongContext`](crate::Error::WrongContext), a range past
    /// its allocation or an address the driver does not know
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument). The
    /// default accepts it (the simulator checks every access itself).
    fn adopt_foreign(&mut self, _addr: u64, _bytes: usize) -> Result<()> {
        Ok(())
    }
    /// A foreign view of `[addr, addr + bytes)` was dropped.
    fn forget_foreign(&mut self, _addr: u64, _bytes: usize) {}
    /// Fail unless `s` is a stream of this backend's context. The default
    /// makes `s` wait for itself, which a backend refuses for a stream it
    /// does not know.
    fn verify_stream(&mut self, s: RawStream) -> Result<()> {
        self.stream_wait(s, s)
    }
    /// The driver's handle of the backend's context (`CUcontext` as an
    /// integer), where there is one.
    fn driver_context(&self) -> Option<usize> {
        None
    }
    /// Entries the backend keeps about queued work (kernel names per
    /// stream, foreign views): bounded however streams are synchronised.
    fn bookkeeping(&self) -> usize {
        0
    }
    /// The counters of the backend's JIT module cache (`None` where
    /// nothing is compiled, as on the simulator).
    fn module_cache_stats(&self) -> Option<CacheStats> {
        None
    }
    /// Start device timing on `s`: a timing event recorded there (on a
    /// GPU). `Ok(false)` where the backend has no device clock (the
    /// default, the simulator). A second start on the same stream replaces
    /// the first.
    fn timing_start(&mut self, _s: RawStream) -> Result<bool> {
        Ok(false)
    }
    /// End the device timing [`timing_start`](Self::timing_start) opened
    /// on `s`: an event recorded there, the stream synchronised (errors of
    /// queued work surface here, as from
    /// [`synchronize`](Self::synchronize)), and the device time between the
    /// two events. `Ok(None)` where no timing is open or there is no
    /// device clock.
    fn timing_end(&mut self, _s: RawStream) -> Result<Option<std::time::Duration>> {
        Ok(None)
    }
}
