//! Choosing where a kernel call runs.
//!
//! Kernel entry points take a [`Backend`], call [`resolve`], and run what
//! it returns:
//!
//! * [`Resolved::Cuda`]: the process-wide shared [`Gpu`] (see
//!   [`shared_gpu`]);
//! * [`Resolved::Host`]: the kernel's bit-exact host model;
//! * [`Resolved::Sim`]: the CPU PTX simulator (`crate::sim`), which the
//!   entry point constructs itself for the SM it wants.
//!
//! Entry points report which one ran as a [`Ran`].

use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::error::{Error, Result};
use crate::runtime::device::{Gpu, GpuInfo, cuda_unavailable_reason};
use crate::target::Sm;

/// Where a kernel call should run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Backend {
    /// The CUDA device. Fails loud with [`Error::NoDevice`] when no device
    /// (or no driver) is present: never a silent fallback.
    Cuda,
    /// The CUDA device when one is present, else the host model. The call
    /// reports which one ran ([`Ran`]). Falls back only when there is no
    /// device ([`Error::NoDevice`]) or the card is older than every
    /// supported target ([`Error::UnsupportedSm`]); any other driver error
    /// is returned.
    #[default]
    Auto,
    /// The kernel's bit-exact host model (plain Rust on the CPU).
    Host,
    /// The CPU PTX simulator running the exact PTX the device would run.
    Sim,
}

impl Backend {
    /// Every backend, in documentation order.
    pub const ALL: [Backend; 4] = [Backend::Cuda, Backend::Auto, Backend::Host, Backend::Sim];

    /// The name [`FromStr`] accepts: "cuda", "auto", "host" or "sim".
    pub const fn name(self) -> &'static str {
        match self {
            Backend::Cuda => "cuda",
            Backend::Auto => "auto",
            Backend::Host => "host",
            Backend::Sim => "sim",
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Backend {
    type Err = Error;

    /// Parse "cuda", "auto", "host" or "sim" (ASCII case-insensitive,
    /// surrounding whitespace ignored).
    fn from_str(s: &str) -> Result<Backend> {
        let t = s.trim();
        Backend::ALL
            .into_iter()
            .find(|b| b.name().eq_ignore_ascii_case(t))
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "unknown backend `{s}` (expected one of: {})",
                    Backend::ALL.map(Backend::name).join(", ")
                ))
            })
    }
}

/// Which implementation actually ran a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ran {
    /// The CUDA device.
    Cuda,
    /// The host model.
    Host,
    /// The CPU PTX simulator.
    Sim,
}

impl fmt::Display for Ran {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Ran::Cuda => "cuda",
            Ran::Host => "host",
            Ran::Sim => "sim",
        })
    }
}

/// A handle to the process-wide shared [`Gpu`] (device 0). Cloning is
/// cheap; all clones use the same context, stream and module cache, one
/// thread at a time.
#[derive(Clone)]
pub struct SharedGpu {
    gpu: Arc<Mutex<Gpu>>,
    info: Arc<GpuInfo>,
}

impl SharedGpu {
    /// Exclusive use of the device until the guard drops. `Gpu` makes its
    /// context current on whichever thread calls it, so the guard may be
    /// taken from any thread. A panic while the lock was held does not
    /// make the device unusable (the guard is recovered; `Gpu` keeps its own
    /// state consistent between driver calls).
    pub fn lock(&self) -> MutexGuard<'_, Gpu> {
        self.gpu.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The device's properties (without taking the lock).
    pub fn info(&self) -> &GpuInfo {
        &self.info
    }

    /// The target ptxsmith compiles for on this device.
    pub fn sm(&self) -> Sm {
        self.info.sm
    }
}

impl fmt::Debug for SharedGpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedGpu")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

/// The process-wide GPU: device 0, opened on first use and kept for the
/// life of the process (its context is never destroyed).
///
/// [`Error::NoDevice`] without a driver or device. A failed open is not
/// cached (the driver probe is), so a transient failure can be retried.
pub fn shared_gpu() -> Result<SharedGpu> {
    static SHARED: Mutex<Option<SharedGpu>> = Mutex::new(None);
    if let Some(reason) = cuda_unavailable_reason() {
        return Err(Error::NoDevice(reason.to_string()));
    }
    let mut slot = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(shared) = slot.as_ref() {
        return Ok(shared.clone());
    }
    let gpu = Gpu::open(0)?;
    let shared = SharedGpu {
        info: Arc::new(gpu.info().clone()),
        gpu: Arc::new(Mutex::new(gpu)),
    };
    *slot = Some(shared.clone());
    Ok(shared)
}

/// What a [`Backend`] resolved to.
#[derive(Debug, Clone)]
pub enum Resolved {
    /// Run on the shared GPU.
    Cuda(SharedGpu),
    /// Run the host model.
    Host,
    /// Run the CPU PTX simulator (the caller builds `crate::sim::Sim`).
    Sim,
}

impl Resolved {
    /// What will have run.
    pub fn ran(&self) -> Ran {
        match self {
            Resolved::Cuda(_) => Ran::Cuda,
            Resolved::Host => Ran::Host,
            Resolved::Sim => Ran::Sim,
        }
    }
}

/// Resolve `backend` into what to run. `Cuda` returns the shared GPU or
/// its error ([`Error::NoDevice`] without a device); `Auto` the shared GPU,
/// or [`Resolved::Host`] when there is no (supported) device; `Host` and
/// `Sim` never touch the driver.
pub fn resolve(backend: Backend) -> Result<Resolved> {
    match backend {
        Backend::Cuda => shared_gpu().map(Resolved::Cuda),
        Backend::Auto => match shared_gpu() {
            Ok(gpu) => Ok(Resolved::Cuda(gpu)),
            Err(Error::NoDevice(_) | Error::UnsupportedSm(_)) => Ok(Resolved::Host),
            Err(e) => Err(e),
        },
        Backend::Host => Ok(Resolved::Host),
        Backend::Sim => Ok(Resolved::Sim),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backends_parse_and_print() {
        for b in Backend::ALL {
            assert_eq!(b.to_string().parse::<Backend>().unwrap(), b);
        }
        assert_eq!(" CUDA ".parse::<Backend>().unwrap(), Backend::Cuda);
        assert_eq!("Sim".parse::<Backend>().unwrap(), Backend::Sim);
        let e = "gpu".parse::<Backend>().unwrap_err();
        assert!(
            matches!(&e, Error::InvalidArgument(m) if m.contains("`gpu`") && m.contains("cuda, auto, host, sim"))
        );
        assert_eq!(Backend::default(), Backend::Auto);
    }

    #[test]
    fn ran_display() {
        assert_eq!(Ran::Cuda.to_string(), "cuda");
        assert_eq!(Ran::Host.to_string(), "host");
        assert_eq!(Ran::Sim.to_string(), "sim");
    }

    #[test]
    fn host_and_sim_resolve_without_a_driver() {
        assert_eq!(resolve(Backend::Host).unwrap().ran(), Ran::Host);
        assert_eq!(resolve(Backend::Sim).unwrap().ran(), Ran::Sim);
    }
}
