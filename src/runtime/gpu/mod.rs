//! The GPU backend, [`Gpu`], in one folder: here, opening a CUDA device
//! (driver probe, the device's primary context, a default stream, and the
//! facts ptxsmith needs about the card: target SM, SM count, memory
//! bandwidth); in `cuda`, its [`Executor`](crate::exec::Executor) (device
//! buffers, streams, JIT through the module [`cache`], checked launches);
//! in `ffi`, the only module of the crate allowed `unsafe` (layer 1 of
//! the fence described in [`crate::runtime`]).
//!
//! Without a driver (no `libcuda`, or `cuInit` failing, or no device) every
//! entry point here returns [`Error::NoDevice`] carrying the loader's reason;
//! nothing panics.

pub mod cache;
mod cuda;
#[allow(unsafe_code)]
pub(crate) mod ffi;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, OnceLock};

use oxicuda_driver::context::Context;
use oxicuda_driver::device::Device;
use oxicuda_driver::error::CudaError;
use oxicuda_driver::loader::{driver_load_error, try_driver};
use oxicuda_driver::module::{Function, Module};
use oxicuda_driver::stream::Stream;

use crate::error::{DriverCode, Error, Result};
use crate::exec::Traffic;
use crate::target::Sm;
use cache::ModuleCache;
use ffi::DeviceAlloc;

/// Device names of the CUDA driver emulator (`cuda-emu/`, a `libcuda.so.1`
/// that runs kernels on the simulator) start with this.
pub const EMULATOR_NAME_PREFIX: &str = "ptxsmith-emu";

/// The driver's result code of `e`.
pub(crate) fn code_of(e: &CudaError) -> DriverCode {
    DriverCode(e.as_raw())
}

/// Map a driver error to ptxsmith's [`Error`]: "driver not loadable / no
/// device" becomes [`Error::NoDevice`] with the loader's reason, anything
/// else [`Error::Driver`] naming the call.
pub(crate) fn driver_error(call: &'static str, e: CudaError) -> Error {
    match e {
        CudaError::NotInitialized | CudaError::Deinitialized => {
            Error::NoDevice(load_failure_reason())
        }
        CudaError::NoDevice | CudaError::StubLibrary => Error::NoDevice(format!("{call}: {e}")),
        CudaError::DeviceUnavailable | CudaError::NotPermitted => Error::DeviceBusy(format!(
            "{call}: {e} (another process may hold the device in exclusive-process compute mode)"
        )),
        other => Error::Driver {
            call,
            code: code_of(&other),
            message: other.to_string(),
        },
    }
}

/// Why the driver could not be used, as the loader reported it.
fn load_failure_reason() -> String {
    match driver_load_error() {
        Some(e) => e.to_string(),
        None => "the CUDA driver is not initialised".to_string(),
    }
}

/// The cached outcome of the cheap driver probe: `Ok(device count)` or the
/// reason no device can be used.
fn probe() -> &'static std::result::Result<u32, String> {
    static PROBE: OnceLock<std::result::Result<u32, String>> = OnceLock::new();
    PROBE.get_or_init(|| {
        if try_driver().is_err() {
            return Err(load_failure_reason());
        }
        match Device::count() {
            Ok(n) if n > 0 => Ok(n as u32),
            Ok(_) => Err("the CUDA driver loaded but reports no device".to_string()),
            Err(e) => Err(format!("cuDeviceGetCount: {e}")),
        }
    })
}

/// Whether a CUDA driver is loadable and reports at least one device.
/// Cheap: the probe runs once per process and is cached.
pub fn cuda_available() -> bool {
    probe().is_ok()
}

/// Why CUDA is unavailable (the loader's or driver's reason), or `None`
/// when a device is present. Cached like [`cuda_available`].
pub fn cuda_unavailable_reason() -> Option<&'static str> {
    probe().as_ref().err().map(String::as_str)
}

/// Number of CUDA devices, or [`Error::NoDevice`].
pub fn device_count() -> Result<u32> {
    probe().clone().map_err(Error::NoDevice)
}

/// The [`Sm`] ptxsmith compiles for on device 0: the arch-specific target
/// of exactly the card's architecture (`sm_100a` on 10.0, `sm_120a` on
/// 12.0), else the newest supported plain target not newer than the card
/// (see [`Sm::for_compute_capability`]). [`Error::NoDevice`] without a driver,
/// [`Error::UnsupportedSm`] for cards older than sm_70.
pub fn device_sm() -> Result<Sm> {
    device_count()?;
    let dev = Device::get(0).map_err(|e| driver_error("cuDeviceGet", e))?;
    let (major, minor) = dev
        .compute_capability()
        .map_err(|e| driver_error("cuDeviceGetAttribute", e))?;
    Sm::for_compute_capability(major as u32, minor as u32)
}

/// Facts about an opened device.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuInfo {
    /// Device ordinal as the driver numbers it.
    pub ordinal: u32,
    /// Marketing name, e.g. "NVIDIA H100 80GB HBM3".
    pub name: String,
    /// Compute capability `(major, minor)`.
    pub compute_capability: (u32, u32),
    /// The target ptxsmith generates code for on this card.
    pub sm: Sm,
    /// Number of streaming multiprocessors.
    pub multiprocessors: u32,
    /// Total device memory in bytes.
    pub total_memory_bytes: u64,
    /// Largest dynamic shared memory one block may opt in to, in bytes.
    pub max_smem_per_block_optin: u32,
    /// Peak memory clock in kHz, when the driver reports it (newer drivers
    /// may report 0, which is mapped to `None`).
    pub memory_clock_khz: Option<u32>,
    /// Memory bus width in bits, when the driver reports it.
    pub memory_bus_width_bits: Option<u32>,
    /// Driver API version as `(major, minor)`, e.g. `(12, 4)`.
    pub driver_version: Option<(u32, u32)>,
}

impl GpuInfo {
    /// Whether the device is the CUDA driver emulator's (`cuda-emu/`):
    /// kernels run on the CPU simulator, so device tests size their work
    /// for it.
    pub fn is_emulator(&self) -> bool {
        self.name.starts_with(EMULATOR_NAME_PREFIX)
    }

    /// Theoretical peak DRAM bandwidth in GB/s (10^9 bytes/s): memory clock
    /// × 2 (double data rate) × bus width in bytes. `None` when the driver
    /// does not report clock or width.
    pub fn peak_bandwidth_gbps(&self) -> Option<f64> {
        let clock_hz = f64::from(self.memory_clock_khz?) * 1e3;
        let bytes = f64::from(self.memory_bus_width_bits?) / 8.0;
        Some(2.0 * clock_hz * bytes / 1e9)
    }
}

impl fmt::Display for GpuInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (ma, mi) = self.compute_capability;
        write!(
            f,
            "device {} `{}` (cc {ma}.{mi}, code for {}, {} SMs, {:.1} GiB",
            self.ordinal,
            self.name,
            self.sm,
            self.multiprocessors,
            self.total_memory_bytes as f64 / f64::from(1u32 << 30)
        )?;
        if let Some(bw) = self.peak_bandwidth_gbps() {
            write!(f, ", peak {bw:.0} GB/s")?;
        }
        if let Some((a, b)) = self.driver_version {
            write!(f, ", driver API {a}.{b}")?;
        }
        f.write_str(")")
    }
}

/// One live allocation of a [`Gpu`]: the memory and the size asked for.
pub(crate) struct DevBuf {
    pub(crate) mem: DeviceAlloc,
    /// The size the caller asked for (may be 0; the allocation has at
    /// least one word).
    pub(crate) bytes: usize,
}

/// A JIT-compiled entry and what the launch checks need from it.
pub(crate) struct LoadedKernel {
    /// The entry's handle; valid while `_module` is loaded.
    pub(crate) function: Function,
    /// The loaded module (unloaded on drop, after the function's last use).
    pub(crate) _module: Module,
    /// Static shared memory of the entry (`CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`).
    pub(crate) static_smem: u32,
    /// Parameter sizes of the entry as its PTX text declares them.
    pub(crate) param_sizes: Vec<u32>,
}

/// At most this many runs of kernel names are remembered per stream
/// between synchronisations (see [`Pending`]).
pub(crate) const PENDING_RUNS: usize = 32;

/// The kernels queued on one stream since its last synchronisation through
/// ptxsmith, to name them when queued work fails. Bounded however the
/// stream is synchronised (a foreign stream may be synchronised only by
/// its owner, never through ptxsmith): consecutive launches of one kernel
/// share an entry (`name ×count`), and past [`PENDING_RUNS`] entries the
/// oldest are dropped and only counted.
#[derive(Debug, Default, Clone)]
pub(crate) struct Pending {
    runs: std::collections::VecDeque<(String, u64)>,
    /// Launches whose names were dropped.
    dropped: u64,
}

impl Pending {
    /// Record a launch of `kernel`.
    pub(crate) fn push(&mut self, kernel: &str) {
        if let Some((last, n)) = self.runs.back_mut()
            && last == kernel
        {
            *n += 1;
            return;
        }
        if self.runs.len() == PENDING_RUNS
            && let Some((_, n)) = self.runs.pop_front()
        {
            self.dropped += n;
        }
        self.runs.push_back((kernel.to_string(), 1));
    }

    /// The names, oldest first: `"a, b ×3"`, with the dropped count.
    pub(crate) fn describe(&self) -> String {
        let mut parts: Vec<String> = Vec::with_capacity(self.runs.len() + 1);
        if self.dropped > 0 {
            parts.push(format!("{} earlier launches", self.dropped));
        }
        for (name, n) in &self.runs {
            parts.push(if *n == 1 {
                name.clone()
            } else {
                format!("{name} ×{n}")
            });
        }
        parts.join(", ")
    }

    /// Entries held.
    pub(crate) fn len(&self) -> usize {
        self.runs.len()
    }
}

/// Foreign device memory a live foreign view vouches for (see
/// `ForeignSlice`): `[start, end)`, with the number of live views of
/// exactly that range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ForeignRange {
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) views: usize,
}

/// A CUDA device opened on its **primary context** (the context the CUDA
/// runtime, cudarc and most libraries share): a default stream, more
/// streams on request, the module cache, the live buffers. Implements
/// [`Executor`](crate::runtime::Executor) (see `runtime::gpu::cuda`); users
/// reach it through [`Context::cuda`](crate::runtime::Context::cuda).
///
/// Every operation first makes the context current on the calling thread
/// (`cuCtxSetCurrent`, cheap), so a `Gpu` can move between threads.
pub struct Gpu {
    // Field order is drop order: buffers and modules before the streams,
    // the streams before the context wrapper.
    pub(crate) buffers: BTreeMap<u64, DevBuf>,
    pub(crate) modules: ModuleCache<Arc<LoadedKernel>>,
    /// Streams made by `create_stream`, by raw handle.
    pub(crate) streams: HashMap<u64, Stream>,
    /// Kernels queued on each stream since its last successful
    /// synchronisation, to name them when asynchronous work fails.
    pub(crate) pending: HashMap<u64, Pending>,
    /// The start event of the device timing open on each stream
    /// (`Executor::timing_start`).
    pub(crate) timing: HashMap<u64, oxicuda_driver::event::Event>,
    /// Foreign memory of live foreign views (launch pointer checks and
    /// copies accept it).
    pub(crate) foreign: Vec<ForeignRange>,
    pub(crate) traffic: Traffic,
    /// Set when a device-side fault destroyed the context.
    pub(crate) lost: Option<String>,
    pub(crate) default_stream: Stream,
    pub(crate) ctx: Arc<Context>,
    pub(crate) info: GpuInfo,
}

impl fmt::Debug for Gpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gpu")
            .field("info", &self.info)
            .field("live_buffers", &self.buffers.len())
            .field("cached_modules", &self.modules.len())
            .field("streams", &(self.streams.len() + 1))
            .field("traffic", &self.traffic)
            .field("lost", &self.lost)
            .finish_non_exhaustive()
    }
}

fn attr(dev: &Device, what: &'static str, r: oxicuda_driver::CudaResult<i32>) -> Result<u32> {
    let v = r.map_err(|e| driver_error(what, e))?;
    u32::try_from(v).map_err(|_| Error::Driver {
        call: what,
        code: DriverCode::UNKNOWN,
        message: format!("device {} reported {v}", dev.ordinal()),
    })
}

fn positive(r: oxicuda_driver::CudaResult<i32>) -> Option<u32> {
    r.ok()
        .and_then(|v| u32::try_from(v).ok())
        .filter(|&v| v > 0)
}

/// Read the properties ptxsmith needs from device `ordinal`.
fn read_info(dev: &Device, ordinal: u32) -> Result<GpuInfo> {
    let name = dev.name().map_err(|e| driver_error("cuDeviceGetName", e))?;
    let (major, minor) = dev
        .compute_capability()
        .map_err(|e| driver_error("cuDeviceGetAttribute", e))?;
    let compute_capability = (major as u32, minor as u32);
    let sm = Sm::for_compute_capability(compute_capability.0, compute_capability.1).map_err(
        |e| match e {
            Error::UnsupportedSm(m) => {
                Error::UnsupportedSm(format!("device {ordinal} `{name}`: {m}"))
            }
            other => other,
        },
    )?;
    let multiprocessors = attr(
        dev,
        "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)",
        dev.multiprocessor_count(),
    )?;
    let max_smem_per_block_optin = attr(
        dev,
        "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)",
        dev.max_shared_memory_per_block_optin(),
    )?;
    let total_memory_bytes = dev
        .total_memory()
        .map_err(|e| driver_error("cuDeviceTotalMem", e))? as u64;
    let driver_version = oxicuda_driver::driver_version()
        .ok()
        .and_then(|v| u32::try_from(v).ok())
        .map(|v| (v / 1000, (v % 1000) / 10));
    Ok(GpuInfo {
        ordinal,
        name,
        compute_capability,
        sm,
        multiprocessors,
        total_memory_bytes,
        max_smem_per_block_optin,
        memory_clock_khz: positive(dev.memory_clock_rate_khz()),
        memory_bus_width_bits: positive(dev.memory_bus_width()),
        driver_version,
    })
}

impl Gpu {
    /// Open device `ordinal` on its primary context, with a new
    /// non-blocking default stream, and read its properties. Prefer
    /// [`Context::cuda`](crate::runtime::Context::cuda), which shares one
    /// `Gpu` per device across the process.
    ///
    /// Errors: [`Error::NoDevice`] without a usable driver or when
    /// `ordinal` is out of range (the message says why);
    /// [`Error::DeviceBusy`] when the device refuses a context (exclusive
    /// process mode); [`Error::UnsupportedSm`] for cards older than sm_70;
    /// [`Error::Driver`] if stream creation fails.
    pub fn open(ordinal: u32) -> Result<Gpu> {
        let count = device_count()?;
        if ordinal >= count {
            return Err(Error::NoDevice(format!(
                "device ordinal {ordinal} requested, the driver reports {count} device(s)"
            )));
        }
        let dev = Device::get(ordinal as i32).map_err(|e| driver_error("cuDeviceGet", e))?;
        let info = read_info(&dev, ordinal)?;
        let ctx =
            ffi::primary_context(&dev).map_err(|e| driver_error("cuDevicePrimaryCtxRetain", e))?;
        ctx.set_current()
            .map_err(|e| driver_error("cuCtxSetCurrent", e))?;
        let default_stream = Stream::new(&ctx).map_err(|e| driver_error("cuStreamCreate", e))?;
        Ok(Gpu {
            buffers: BTreeMap::new(),
            modules: ModuleCache::new(),
            streams: HashMap::new(),
            pending: HashMap::new(),
            timing: HashMap::new(),
            foreign: Vec::new(),
            traffic: Traffic::default(),
            lost: None,
            default_stream,
            ctx,
            info,
        })
    }

    /// Reset device `ordinal`'s primary context after a fault destroyed it
    /// (every handle into it must have been forgotten, as a lost `Gpu`
    /// does), so that [`Gpu::open`] gets a working one.
    pub(crate) fn reset_primary(ordinal: u32) -> Result<()> {
        let dev = Device::get(ordinal as i32).map_err(|e| driver_error("cuDeviceGet", e))?;
        ffi::reset_primary_context(&dev).map_err(|e| driver_error("cuDevicePrimaryCtxReset", e))
    }

    /// The device's properties.
    pub fn info(&self) -> &GpuInfo {
        &self.info
    }

    /// The device's name.
    pub fn name(&self) -> &str {
        &self.info.name
    }

    /// Make this device's context current on the calling thread, refusing
    /// if an earlier fault lost the context.
    pub(crate) fn make_current(&self) -> Result<()> {
        if let Some(fault) = &self.lost {
            return Err(Error::DeviceLost {
                ordinal: self.info.ordinal,
                fault: fault.clone(),
            });
        }
        self.ctx
            .set_current()
            .map_err(|e| driver_error("cuCtxSetCurrent", e))
    }

    /// Record a sticky fault: the context is gone for every user. Every
    /// driver object of the old context is forgotten, not destroyed: after
    /// the primary context is reset, their handles could name objects of
    /// the new one.
    pub(crate) fn mark_lost(&mut self, fault: String) {
        if self.lost.is_some() {
            return;
        }
        self.lost = Some(fault);
        for b in self.buffers.values_mut() {
            b.mem.leak();
        }
        std::mem::forget(std::mem::take(&mut self.modules));
        std::mem::forget(std::mem::take(&mut self.streams));
        std::mem::forget(self.default_stream.clone());
    }

    /// Number of live buffers.
    pub fn live_buffers(&self) -> usize {
        self.buffers.len()
    }

    /// Number of modules in the JIT cache.
    pub fn cached_modules(&self) -> usize {
        self.modules.len()
    }

    /// Number of JIT compilations this `Gpu` has performed (each distinct
    /// `(kernel, tuning, sm)` is compiled once).
    pub fn jit_compilations(&self) -> u64 {
        self.modules.loads()
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // Wait for queued work before buffers are freed and modules
        // unloaded (a lost context has leaked its objects instead).
        if self.lost.is_none() && self.ctx.set_current().is_ok() {
            let _ = ffi::context_synchronize();
        }
        self.buffers.clear();
        self.modules.clear();
        self.timing.clear();
        self.streams.clear();
    }
}

// A `Gpu` lives behind a `Mutex` in a `Context` and is handed between threads.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Gpu>();
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_kernel_names_stay_bounded() {
        let mut p = Pending::default();
        for _ in 0..100_000 {
            p.push("dot_rows_f32");
        }
        assert_eq!(p.len(), 1);
        assert_eq!(p.describe(), "dot_rows_f32 ×100000");
        for i in 0..1000 {
            p.push(if i % 2 == 0 { "a" } else { "b" });
        }
        assert_eq!(p.len(), PENDING_RUNS);
        let d = p.describe();
        assert!(d.starts_with("100968 earlier launches, a, b"), "{d}");
        assert!(d.ends_with("a, b"), "{d}");
    }
}
