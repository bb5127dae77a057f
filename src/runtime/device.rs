//! Opening a CUDA device: driver probe, context, stream, and the facts
//! ptxsmith needs about the card (target SM, SM count, memory bandwidth).
//!
//! Without a driver (no `libcuda`, or `cuInit` failing, or no device) every
//! entry point here returns [`Error::NoDevice`] carrying the loader's reason;
//! nothing panics.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use oxicuda_driver::context::Context;
use oxicuda_driver::device::Device;
use oxicuda_driver::error::CudaError;
use oxicuda_driver::loader::{driver_load_error, try_driver};
use oxicuda_driver::stream::Stream;
use oxicuda_launch::Kernel;
use oxicuda_memory::DeviceBuffer;

use crate::error::{Error, Result};
use crate::runtime::cache::ModuleCache;
use crate::runtime::exec::Traffic;
use crate::target::Sm;

/// Map a driver error to ptxsmith's [`Error`]: "driver not loadable / no
/// device" becomes [`Error::NoDevice`] with the loader's reason, anything
/// else [`Error::Driver`] naming the call.
pub(crate) fn driver_error(call: &'static str, e: CudaError) -> Error {
    match e {
        CudaError::NotInitialized | CudaError::Deinitialized => {
            Error::NoDevice(load_failure_reason())
        }
        CudaError::NoDevice | CudaError::StubLibrary | CudaError::DeviceUnavailable => {
            Error::NoDevice(format!("{call}: {e}"))
        }
        other => Error::Driver {
            call,
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

/// The [`Sm`] ptxsmith compiles for on device 0: the newest supported
/// plain target not newer than the card (see
/// [`Sm::for_compute_capability`]). [`Error::NoDevice`] without a driver,
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

/// One live device allocation of a [`Gpu`].
pub(crate) struct DevBuf {
    /// The allocation (at least one byte: the driver refuses empty ones).
    pub(crate) mem: DeviceBuffer<u8>,
    /// The size the caller asked for (may be 0).
    pub(crate) bytes: usize,
}

/// An opened CUDA device: its own context, one stream, the module cache and
/// the live buffers. Implements [`Executor`](crate::runtime::Executor)
/// (see `runtime::cuda`).
///
/// # Threads and contexts
///
/// `Gpu` is `Send + Sync` but every operation takes `&mut self`, so one
/// thread uses it at a time (share it through a `Mutex`, as
/// [`shared_gpu`](crate::runtime::shared_gpu) does). A CUDA context is
/// *current* per host thread, so every operation first makes this `Gpu`'s
/// context current on the calling thread (`cuCtxSetCurrent`, cheap) and
/// leaves it current afterwards. A `Gpu` can therefore move between threads
/// freely, and several `Gpu`s can be used from one thread interleaved.
pub struct Gpu {
    // Field order is drop order: buffers and modules go before the stream,
    // the stream before the context (which `Stream` also keeps alive).
    pub(crate) buffers: BTreeMap<u64, DevBuf>,
    pub(crate) modules: ModuleCache<Arc<Kernel>>,
    pub(crate) traffic: Traffic,
    /// Set when a launch faulted: the driver's errors after a device-side
    /// fault are sticky, the context cannot be used again.
    pub(crate) lost: Option<String>,
    pub(crate) stream: Stream,
    pub(crate) ctx: Arc<Context>,
    pub(crate) info: GpuInfo,
}

impl fmt::Debug for Gpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gpu")
            .field("info", &self.info)
            .field("live_buffers", &self.buffers.len())
            .field("cached_modules", &self.modules.len())
            .field("traffic", &self.traffic)
            .field("lost", &self.lost)
            .finish_non_exhaustive()
    }
}

fn attr(dev: &Device, what: &'static str, r: oxicuda_driver::CudaResult<i32>) -> Result<u32> {
    let v = r.map_err(|e| driver_error(what, e))?;
    u32::try_from(v).map_err(|_| Error::Driver {
        call: what,
        message: format!("device {} reported {v}", dev.ordinal()),
    })
}

fn positive(r: oxicuda_driver::CudaResult<i32>) -> Option<u32> {
    r.ok()
        .and_then(|v| u32::try_from(v).ok())
        .filter(|&v| v > 0)
}

impl Gpu {
    /// Open device `ordinal`: create a context and a stream on it and read
    /// its properties.
    ///
    /// Errors: [`Error::NoDevice`] without a usable driver or when
    /// `ordinal` is out of range (the message says why);
    /// [`Error::UnsupportedSm`] for cards older than sm_70;
    /// [`Error::Driver`] if context or stream creation fails.
    pub fn open(ordinal: u32) -> Result<Gpu> {
        let count = device_count()?;
        if ordinal >= count {
            return Err(Error::NoDevice(format!(
                "device ordinal {ordinal} requested, the driver reports {count} device(s)"
            )));
        }
        let dev = Device::get(ordinal as i32).map_err(|e| driver_error("cuDeviceGet", e))?;
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
            &dev,
            "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)",
            dev.multiprocessor_count(),
        )?;
        let max_smem_per_block_optin = attr(
            &dev,
            "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)",
            dev.max_shared_memory_per_block_optin(),
        )?;
        let total_memory_bytes =
            dev.total_memory()
                .map_err(|e| driver_error("cuDeviceTotalMem", e))? as u64;
        let driver_version = oxicuda_driver::driver_version()
            .ok()
            .and_then(|v| u32::try_from(v).ok())
            .map(|v| (v / 1000, (v % 1000) / 10));
        let info = GpuInfo {
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
        };

        // `cuCtxCreate` makes the new context current on this thread.
        let ctx = Arc::new(Context::new(&dev).map_err(|e| driver_error("cuCtxCreate", e))?);
        let stream = Stream::new(&ctx).map_err(|e| driver_error("cuStreamCreate", e))?;
        Ok(Gpu {
            buffers: BTreeMap::new(),
            modules: ModuleCache::new(),
            traffic: Traffic::default(),
            lost: None,
            stream,
            ctx,
            info,
        })
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
        if let Some(why) = &self.lost {
            return Err(Error::Driver {
                call: "cuCtxSetCurrent",
                message: format!("the CUDA context is unusable after an earlier fault: {why}"),
            });
        }
        self.ctx
            .set_current()
            .map_err(|e| driver_error("cuCtxSetCurrent", e))
    }

    /// Wait until all work queued on this device's stream has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.make_current()?;
        self.stream
            .synchronize()
            .map_err(|e| driver_error("cuStreamSynchronize", e))
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
        // Free buffers and unload modules while the context is current on
        // this thread; errors cannot be reported from a destructor, and a
        // lost context is torn down as a whole by `cuCtxDestroy`.
        if self.ctx.set_current().is_ok() && self.lost.is_none() {
            let _ = self.stream.synchronize();
        }
        self.buffers.clear();
        self.modules.clear();
    }
}

// The shared GPU lives behind a `Mutex` and is handed between threads.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Gpu>();
};
