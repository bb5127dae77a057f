//! The one error type of the crate. Every public fallible API returns
//! [`Result<T>`]; messages name the offending values.

use crate::target::{Feature, PtxVersion, Sm};

/// Errors returned by ptxsmith's public API.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No CUDA driver could be loaded, or it reports no device.
    #[error("no CUDA device: {0}")]
    NoDevice(String),

    /// The device exists but refuses a context: another process holds it in
    /// exclusive-process compute mode, or it is prohibited. Not a reason to
    /// fall back to the host (`Backend::Auto` returns this error).
    #[error("CUDA device busy or unavailable: {0}")]
    DeviceBusy(String),

    /// A device-side fault (illegal address, trap, …) destroyed the CUDA
    /// context this handle belongs to. The fault was reported once, by the
    /// call that synchronised after it; every later use of the old
    /// [`Context`](crate::runtime::Context) or its buffers returns this.
    /// [`Context::cuda`](crate::runtime::Context::cuda) opens a fresh one.
    #[error("CUDA context of device {ordinal} is lost after a device fault: {fault}")]
    DeviceLost { ordinal: u32, fault: String },

    /// A buffer or stream was used with a context it does not belong to.
    #[error("{what} belongs to context #{owner}, used with context #{used}")]
    WrongContext { what: String, owner: u64, used: u64 },

    /// A CUDA driver call failed (other than JIT or launch).
    #[error("CUDA driver error in {call}: {message}")]
    Driver { call: &'static str, message: String },

    /// The driver's JIT compiler rejected a PTX module.
    #[error("JIT compilation of `{kernel}` for {sm} failed: {message}\n--- JIT log ---\n{log}")]
    Jit {
        kernel: String,
        sm: Sm,
        message: String,
        log: String,
    },

    /// A kernel launch (or the synchronisation after it) failed.
    #[error("launch of `{kernel}` failed: {message}")]
    Launch { kernel: String, message: String },

    /// A caller-supplied argument is invalid (shape, length, alignment,
    /// overflow). The message carries the values.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// The target SM is not one ptxsmith supports.
    #[error("unsupported SM: {0}")]
    UnsupportedSm(String),

    /// An instruction or feature the target SM does not have.
    #[error("{feature} is not available on {sm} (needs {needs})")]
    UnsupportedFeature {
        feature: Feature,
        sm: Sm,
        needs: String,
    },

    /// A kernel needs a newer PTX ISA than the caller allowed.
    #[error("kernel `{kernel}` needs PTX ISA {needs}, above the allowed {allowed}")]
    PtxVersion {
        kernel: String,
        needs: PtxVersion,
        allowed: PtxVersion,
    },

    /// The kernel builder was used inconsistently (a bug in a generator,
    /// reported instead of emitting invalid PTX).
    #[error("kernel `{kernel}`: {message}")]
    Build { kernel: String, message: String },

    /// The CPU PTX simulator refused or stopped a launch.
    #[error(transparent)]
    Sim(#[from] crate::sim::SimError),

    /// A backend was asked for that this entry point or build cannot run.
    #[error("backend {backend} unavailable: {reason}")]
    BackendUnavailable {
        backend: &'static str,
        reason: String,
    },
}

/// Shorthand for `std::result::Result<T, ptxsmith::Error>`.
pub type Result<T> = std::result::Result<T, Error>;

/// Helper for building [`Error::InvalidArgument`] with `format!` syntax.
#[macro_export]
#[doc(hidden)]
macro_rules! invalid_arg {
    ($($t:tt)*) => { $crate::Error::InvalidArgument(format!($($t)*)) };
}
