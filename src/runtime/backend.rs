//! Choosing where a kernel call runs.
//!
//! Kernel entry points take a [`Backend`], call [`resolve`] once, and run
//! what it returns:
//!
//! * [`Resolved::Cuda`]: the device's shared [`Context`] (see
//!   [`Context::cuda`]): device 0 for [`Backend::Cuda`] and
//!   [`Backend::Auto`], device `n` for [`Backend::CudaDevice`]`(n)`;
//! * [`Resolved::Host`]: the kernel's bit-exact host model;
//! * [`Resolved::Sim`]: a fresh CPU PTX simulator context
//!   ([`Context::sim`]) for [`default_sim_sm`].
//!
//! Either device case carries its [`Context`] ([`Resolved::context`]), so
//! an entry point runs its launch sequence on that context's default
//! stream whichever it is. Entry points report which one ran as a
//! [`Ran`].

use std::fmt;
use std::str::FromStr;

use crate::error::{ArgError, Error, Result};
use crate::runtime::context::Context;
use crate::target::Sm;

/// The SM whose variants [`Backend::Sim`] runs when the caller does not
/// pick one: the live device's when there is a GPU, else sm_80. Use a
/// kernel's device entry point on [`Context::sim`]`(sm)` to simulate
/// another target.
pub fn default_sim_sm() -> Sm {
    crate::runtime::device_sm().unwrap_or(Sm::Sm80)
}

/// Where a kernel call should run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Backend {
    /// CUDA device 0. Fails loud with [`Error::NoDevice`] when no device
    /// (or no driver) is present: never a silent fallback.
    Cuda,
    /// CUDA device `ordinal` (the driver's numbering, as
    /// [`Context::cuda`]); fails loud like [`Backend::Cuda`], also for an
    /// ordinal the driver does not report. Written `cuda:1`.
    CudaDevice(u32),
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

    /// The name [`FromStr`] accepts: "cuda", "auto", "host" or "sim"
    /// ("cuda" for [`Backend::CudaDevice`] too, which prints and parses as
    /// `cuda:<ordinal>`).
    pub const fn name(self) -> &'static str {
        match self {
            Backend::Cuda | Backend::CudaDevice(_) => "cuda",
            Backend::Auto => "auto",
            Backend::Host => "host",
            Backend::Sim => "sim",
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Backend::CudaDevice(n) => write!(f, "cuda:{n}"),
            b => f.write_str(b.name()),
        }
    }
}

impl FromStr for Backend {
    type Err = Error;

    /// Parse "cuda", "cuda:N" (device N), "auto", "host" or "sim" (ASCII
    /// case-insensitive, surrounding whitespace ignored).
    fn from_str(s: &str) -> Result<Backend> {
        let t = s.trim();
        if let Some((head, n)) = t.split_once(':')
            && head.eq_ignore_ascii_case("cuda")
            && let Ok(n) = n.parse::<u32>()
        {
            return Ok(Backend::CudaDevice(n));
        }
        Backend::ALL
            .into_iter()
            .find(|b| b.name().eq_ignore_ascii_case(t))
            .ok_or_else(|| {
                let names = Backend::ALL.map(Backend::name).join(", ") + ", cuda:<ordinal>";
                ArgError::new("backend", format!("one of: {names}"), format!("`{s}`"))
                    .with_message(format!("unknown backend `{s}` (expected one of: {names})"))
                    .into()
            })
    }
}

/// Which implementation actually ran a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
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

/// What a [`Backend`] resolved to.
#[derive(Debug, Clone)]
pub enum Resolved {
    /// Run on the device's shared context.
    Cuda(Context),
    /// Run the host model.
    Host,
    /// Run on this fresh CPU PTX simulator context (for
    /// [`default_sim_sm`]).
    Sim(Context),
}

impl Resolved {
    /// What will have run.
    pub fn ran(&self) -> Ran {
        match self {
            Resolved::Cuda(_) => Ran::Cuda,
            Resolved::Host => Ran::Host,
            Resolved::Sim(_) => Ran::Sim,
        }
    }

    /// The context to run on: the GPU's or the simulator's; `None` for the
    /// host model.
    pub fn context(&self) -> Option<&Context> {
        match self {
            Resolved::Cuda(ctx) | Resolved::Sim(ctx) => Some(ctx),
            Resolved::Host => None,
        }
    }
}

/// Resolve `backend` into what to run. `Cuda` returns device 0's context
/// ([`Context::cuda`]) or its error ([`Error::NoDevice`] without a device),
/// `CudaDevice(n)` device `n`'s;
/// `Auto` that context, or [`Resolved::Host`] when there is no (supported)
/// device (a busy or faulted device is an error, not a fallback); `Host`
/// never touches the driver; `Sim` a fresh simulator context for
/// [`default_sim_sm`] (which asks the driver only for the live device's
/// SM).
///
/// ```
/// use ptxsmith::runtime::{Backend, Ran, resolve};
///
/// assert_eq!(resolve(Backend::Sim)?.ran(), Ran::Sim);
/// // Auto: the GPU when there is one, else the host model.
/// let auto = resolve(Backend::Auto)?.ran();
/// assert!(auto == Ran::Cuda || auto == Ran::Host);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
pub fn resolve(backend: Backend) -> Result<Resolved> {
    match backend {
        Backend::Cuda => Context::cuda(0).map(Resolved::Cuda),
        Backend::CudaDevice(n) => Context::cuda(n).map(Resolved::Cuda),
        Backend::Auto => match Context::cuda(0) {
            Ok(gpu) => Ok(Resolved::Cuda(gpu)),
            Err(e @ (Error::NoDevice(_) | Error::UnsupportedSm(_))) => {
                tracing::info!(
                    target: "ptxsmith::backend",
                    reason = %e,
                    "Backend::Auto falls back to the host model"
                );
                Ok(Resolved::Host)
            }
            Err(e) => Err(e),
        },
        Backend::Host => Ok(Resolved::Host),
        Backend::Sim => Ok(Resolved::Sim(Context::sim(default_sim_sm()))),
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
        assert_eq!("cuda:3".parse::<Backend>().unwrap(), Backend::CudaDevice(3));
        assert_eq!(Backend::CudaDevice(3).to_string(), "cuda:3");
        let e = "gpu".parse::<Backend>().unwrap_err();
        assert!(
            matches!(&e, Error::InvalidArgument(m) if m.contains("`gpu`") && m.contains("cuda, auto, host, sim") && m.what == "backend")
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
