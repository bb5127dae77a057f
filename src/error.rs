//! The one error type of the crate. Every public fallible API returns
//! [`Result<T>`]; messages name the offending values.
//!
//! Two variants carry structure a program can match on besides the text:
//!
//! * [`Error::Driver`] and [`Error::Launch`] carry the CUDA driver's result
//!   code as a [`DriverCode`], so out-of-memory, an illegal address or
//!   "not supported" are matched by code, not by message:
//!
//!   ```
//!   use ptxsmith::{DriverCode, Error};
//!
//!   fn retry_smaller(e: &Error) -> bool {
//!       matches!(e, Error::Driver { code: DriverCode::OUT_OF_MEMORY, .. })
//!   }
//!   # assert!(!retry_smaller(&Error::invalid("x")));
//!   ```
//! * [`Error::InvalidArgument`] carries an [`ArgError`]: the argument at
//!   fault (`what`), what the entry point `expected` and what it `got`,
//!   besides the message.

use std::fmt;
use std::ops::Deref;

use crate::target::{Feature, PtxVersion, Sm};

/// A CUDA driver result code (`CUresult`), as the driver returned it.
///
/// The constants name the codes a program typically matches on; any other
/// code is carried as its number. Codes are compared by value, so they
/// work in patterns:
///
/// ```
/// use ptxsmith::DriverCode;
/// let c = DriverCode(700);
/// assert_eq!(c, DriverCode::ILLEGAL_ADDRESS);
/// assert_eq!(c.name(), "CUDA_ERROR_ILLEGAL_ADDRESS");
/// assert_eq!(c.to_string(), "CUDA_ERROR_ILLEGAL_ADDRESS (700)");
/// assert!(c.is_device_fault());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DriverCode(pub u32);

macro_rules! driver_codes {
    ($($(#[$doc:meta])* $name:ident = $v:expr),* $(,)?) => {
        impl DriverCode {
            $($(#[$doc])* pub const $name: DriverCode = DriverCode($v);)*

            /// The driver's name of the code (`CUDA_ERROR_OUT_OF_MEMORY`),
            /// or `"CUresult"` for a code without a constant here.
            pub const fn name(self) -> &'static str {
                match self.0 {
                    $($v => concat!("CUDA_ERROR_", stringify!($name)),)*
                    _ => "CUresult",
                }
            }
        }
    };
}

driver_codes! {
    /// `CUDA_ERROR_INVALID_VALUE`: an argument the driver refuses.
    INVALID_VALUE = 1,
    /// `CUDA_ERROR_OUT_OF_MEMORY`: an allocation the device cannot hold.
    OUT_OF_MEMORY = 2,
    /// `CUDA_ERROR_NOT_INITIALIZED`.
    NOT_INITIALIZED = 3,
    /// `CUDA_ERROR_DEINITIALIZED`: the driver is shutting down.
    DEINITIALIZED = 4,
    /// `CUDA_ERROR_STUB_LIBRARY`: a stub `libcuda` without a driver.
    STUB_LIBRARY = 34,
    /// `CUDA_ERROR_DEVICE_UNAVAILABLE`: exclusive-process or prohibited.
    DEVICE_UNAVAILABLE = 46,
    /// `CUDA_ERROR_NO_DEVICE`.
    NO_DEVICE = 100,
    /// `CUDA_ERROR_INVALID_DEVICE`: an ordinal the driver does not report.
    INVALID_DEVICE = 101,
    /// `CUDA_ERROR_INVALID_CONTEXT`.
    INVALID_CONTEXT = 201,
    /// `CUDA_ERROR_NO_BINARY_FOR_GPU`.
    NO_BINARY_FOR_GPU = 209,
    /// `CUDA_ERROR_INVALID_PTX`: the JIT rejected the PTX.
    INVALID_PTX = 218,
    /// `CUDA_ERROR_UNSUPPORTED_PTX_VERSION`: a `.version` newer than the driver.
    UNSUPPORTED_PTX_VERSION = 222,
    /// `CUDA_ERROR_INVALID_HANDLE`: e.g. a stream of another context.
    INVALID_HANDLE = 400,
    /// `CUDA_ERROR_NOT_FOUND`.
    NOT_FOUND = 500,
    /// `CUDA_ERROR_NOT_READY`.
    NOT_READY = 600,
    /// `CUDA_ERROR_ILLEGAL_ADDRESS`: a kernel accessed memory it may not (sticky).
    ILLEGAL_ADDRESS = 700,
    /// `CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES`.
    LAUNCH_OUT_OF_RESOURCES = 701,
    /// `CUDA_ERROR_LAUNCH_TIMEOUT`: the watchdog stopped a kernel (sticky).
    LAUNCH_TIMEOUT = 702,
    /// `CUDA_ERROR_CONTEXT_IS_DESTROYED`.
    CONTEXT_IS_DESTROYED = 709,
    /// `CUDA_ERROR_ASSERT`: a device-side assertion (sticky).
    ASSERT = 710,
    /// `CUDA_ERROR_HARDWARE_STACK_ERROR` (sticky).
    HARDWARE_STACK_ERROR = 714,
    /// `CUDA_ERROR_ILLEGAL_INSTRUCTION` (sticky).
    ILLEGAL_INSTRUCTION = 715,
    /// `CUDA_ERROR_MISALIGNED_ADDRESS` (sticky).
    MISALIGNED_ADDRESS = 716,
    /// `CUDA_ERROR_INVALID_ADDRESS_SPACE` (sticky).
    INVALID_ADDRESS_SPACE = 717,
    /// `CUDA_ERROR_INVALID_PC` (sticky).
    INVALID_PC = 718,
    /// `CUDA_ERROR_LAUNCH_FAILED`: a kernel faulted (`trap`, …; sticky).
    LAUNCH_FAILED = 719,
    /// `CUDA_ERROR_NOT_PERMITTED`.
    NOT_PERMITTED = 800,
    /// `CUDA_ERROR_NOT_SUPPORTED`: the device or driver lacks the feature.
    NOT_SUPPORTED = 801,
    /// `CUDA_ERROR_UNKNOWN`.
    UNKNOWN = 999,
}

impl DriverCode {
    /// The raw `CUresult` value.
    pub const fn raw(self) -> u32 {
        self.0
    }

    /// Whether the code is a device-side fault that destroys the context
    /// (illegal address, misaligned address, launch failure, watchdog
    /// timeout, …): after one, the context answers
    /// [`Error::DeviceLost`].
    pub const fn is_device_fault(self) -> bool {
        matches!(self.0, 700 | 702 | 710 | 714..=719)
    }
}

impl fmt::Display for DriverCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.0)
    }
}

/// The details of an [`Error::InvalidArgument`]: which argument, what was
/// expected, what was given, and the message.
///
/// `what`, `expected` and `got` are empty for the errors that only carry
/// a message (built with [`Error::invalid`]). The value dereferences to
/// its message, so `e.contains("…")` reads the text.
///
/// ```
/// use ptxsmith::{ArgError, Error};
/// let e = Error::invalid_argument("x", "6 elements", "5 elements");
/// let Error::InvalidArgument(a) = &e else { unreachable!() };
/// assert_eq!((a.what.as_str(), a.got.as_str()), ("x", "5 elements"));
/// assert_eq!(e.to_string(), "invalid argument: x: expected 6 elements, got 5 elements");
/// // A family's own wording, with the same fields:
/// let a = ArgError::new("x", "6 elements", "5 elements").with_message("x has 5 elements, expected 6");
/// assert_eq!(a.to_string(), "x has 5 elements, expected 6");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ArgError {
    /// The argument (or property of it) at fault, as the entry point names
    /// it: `"x"`, `"lengths[3]"`, `"s"`, `"scale"`, `"shape"`, …
    pub what: String,
    /// What the entry point needs, e.g. `"rows × n = 2 × 3 = 6 elements"`.
    pub expected: String,
    /// What it was given, e.g. `"5 elements"`.
    pub got: String,
    message: String,
}

impl ArgError {
    /// `what` was `got` where `expected` was needed; the message reads
    /// `"{what}: expected {expected}, got {got}"`.
    pub fn new(
        what: impl Into<String>,
        expected: impl Into<String>,
        got: impl Into<String>,
    ) -> Self {
        let (what, expected, got) = (what.into(), expected.into(), got.into());
        let message = format!("{what}: expected {expected}, got {got}");
        Self {
            what,
            expected,
            got,
            message,
        }
    }

    /// A message only (no fields), for a misuse that no single argument's
    /// value describes.
    pub fn message_only(message: impl Into<String>) -> Self {
        Self {
            what: String::new(),
            expected: String::new(),
            got: String::new(),
            message: message.into(),
        }
    }

    /// The same fields with another message (a family's established
    /// wording).
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl Deref for ArgError {
    type Target = str;

    fn deref(&self) -> &str {
        &self.message
    }
}

impl From<ArgError> for Error {
    fn from(a: ArgError) -> Self {
        Error::InvalidArgument(a)
    }
}

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
    /// The CUDA driver keeps a device fault for the rest of the process
    /// (its documentation has the process restarted), so
    /// [`Context::cuda`](crate::runtime::Context::cuda) returns it too for
    /// that device; it retries a reset and a fresh context each time, in
    /// case a driver recovers.
    #[error("CUDA context of device {ordinal} is lost after a device fault: {fault}")]
    DeviceLost {
        /// The device ordinal.
        ordinal: u32,
        /// The fault, as the call that observed it reported it.
        fault: String,
    },

    /// A buffer or stream was used with a context it does not belong to.
    #[error("{what} belongs to {}, used with context #{used}", context_name(*owner))]
    WrongContext {
        /// The buffer or stream, as the call names it.
        what: String,
        /// The id ([`Context::id`](crate::runtime::Context::id)) of the
        /// context it belongs to; [`FOREIGN_CONTEXT`] (0) for memory or a
        /// stream of a CUDA context that is not the one ptxsmith uses
        /// (another device's, or a context another stack created).
        owner: u64,
        /// The id of the context it was used with.
        used: u64,
    },

    /// A CUDA driver call failed (other than JIT or launch).
    #[error("CUDA driver error in {call}: {message}")]
    Driver {
        /// The driver function, e.g. `cuMemAlloc`.
        call: &'static str,
        /// The driver's result code: match e.g.
        /// [`DriverCode::OUT_OF_MEMORY`] or [`DriverCode::NOT_SUPPORTED`].
        code: DriverCode,
        /// The driver's description, with the values involved.
        message: String,
    },

    /// The driver's JIT compiler rejected a PTX module.
    #[error("JIT compilation of `{kernel}` for {sm} failed: {message}\n--- JIT log ---\n{log}")]
    Jit {
        /// The entry name of the module.
        kernel: String,
        /// The target the module was generated for.
        sm: Sm,
        /// The driver's error (and the driver a too-new PTX ISA needs).
        message: String,
        /// The JIT's error and info log.
        log: String,
    },

    /// A kernel launch (or the synchronisation after it) failed.
    #[error("launch of `{kernel}` failed: {message}")]
    Launch {
        /// The kernel (or the kernels queued since the last
        /// synchronisation, when queued work failed).
        kernel: String,
        /// The driver's result code: [`DriverCode::ILLEGAL_ADDRESS`],
        /// [`DriverCode::LAUNCH_FAILED`], … (see
        /// [`DriverCode::is_device_fault`]).
        code: DriverCode,
        /// The driver's description and the launch shape.
        message: String,
    },

    /// A caller-supplied argument is invalid (shape, length, alignment,
    /// overflow): which one, what was expected and what was given
    /// ([`ArgError`]), and a message naming the values.
    #[error("invalid argument: {0}")]
    InvalidArgument(ArgError),

    /// The target SM is not one ptxsmith supports.
    #[error("unsupported SM: {0}")]
    UnsupportedSm(String),

    /// An instruction or feature the target SM does not have.
    #[error("{feature} is not available on {sm} (needs {needs})")]
    UnsupportedFeature {
        /// The feature.
        feature: Feature,
        /// The target that lacks it.
        sm: Sm,
        /// The targets (and PTX ISA) that have it.
        needs: String,
    },

    /// A kernel needs a newer PTX ISA than the caller allowed.
    #[error("kernel `{kernel}` needs PTX ISA {needs}, above the allowed {allowed}")]
    PtxVersion {
        /// The kernel.
        kernel: String,
        /// The PTX ISA version it needs.
        needs: PtxVersion,
        /// The highest version allowed.
        allowed: PtxVersion,
    },

    /// The kernel builder was used inconsistently (a bug in a generator,
    /// reported instead of emitting invalid PTX): which misuse, with its
    /// values ([`BuildError`](crate::dsl::BuildError)), and where in the
    /// generator's source it happened.
    ///
    /// ```
    /// use ptxsmith::dsl::{BuildError, KernelBuilder, types::F32};
    /// use ptxsmith::{Error, Sm};
    /// let mut b = KernelBuilder::new("k", Sm::Sm80);
    /// let a = b.shared_array::<F32>("a", 4, 4);
    /// let _ = b.ld_shared_at(&a, 7);
    /// let line = line!() - 1;
    /// let e = b.finish().unwrap_err();
    /// let Error::Build { error: BuildError::SharedIndex { index, len, .. }, location, .. } = &e
    /// else { panic!("{e}") };
    /// assert_eq!((*index, *len), (7, 4));
    /// assert_eq!(location.map(|l| l.line()), Some(line));
    /// assert!(e.to_string().contains("constant index 7 past shared array `a` of 4 (at "));
    /// ```
    #[error("kernel `{kernel}`: {error}{}", at(location))]
    Build {
        /// The kernel being built.
        kernel: String,
        /// What was inconsistent, with the values.
        error: crate::dsl::BuildError,
        /// The generator's call that did it (the builder's methods are
        /// `#[track_caller]`); `None` for errors found outside a builder
        /// call (the module cache, the report's inspection).
        location: Option<&'static std::panic::Location<'static>>,
    },

    /// The CPU PTX simulator refused or stopped a launch.
    #[error(transparent)]
    Sim(#[from] crate::sim::SimError),

    /// A tensor-map description refused before encoding
    /// ([`crate::tensor_map::TiledDesc::validate`]).
    #[error("tensor map: {0}")]
    TensorMap(#[from] crate::tensor_map::TensorMapError),

    /// A backend was asked for that this entry point or build cannot run.
    #[error("backend {backend} unavailable: {reason}")]
    BackendUnavailable {
        /// The backend's name.
        backend: &'static str,
        /// Why it cannot run here.
        reason: String,
    },
}

/// [`Error::WrongContext::owner`] of memory or a stream that belongs to a
/// CUDA context ptxsmith does not use (context ids start at 1).
pub const FOREIGN_CONTEXT: u64 = 0;

fn at(location: &Option<&'static std::panic::Location<'static>>) -> String {
    location.map_or_else(String::new, |l| format!(" (at {l})"))
}

fn context_name(id: u64) -> String {
    if id == FOREIGN_CONTEXT {
        "a CUDA context ptxsmith does not use (another device's or another stack's)".to_string()
    } else {
        format!("context #{id}")
    }
}

impl Error {
    /// [`Error::InvalidArgument`] with a message only (no `what` /
    /// `expected` / `got`), for a misuse that no single argument's value
    /// describes; prefer [`Error::invalid_argument`] where one does.
    pub fn invalid(message: impl Into<String>) -> Self {
        Error::InvalidArgument(ArgError::message_only(message))
    }

    /// [`Error::InvalidArgument`]: `what` was `got` where `expected` was
    /// needed (see [`ArgError::new`]).
    pub fn invalid_argument(
        what: impl Into<String>,
        expected: impl Into<String>,
        got: impl Into<String>,
    ) -> Self {
        Error::InvalidArgument(ArgError::new(what, expected, got))
    }

    /// The driver's result code of a [`Driver`](Error::Driver) or
    /// [`Launch`](Error::Launch) error.
    pub fn driver_code(&self) -> Option<DriverCode> {
        match self {
            Error::Driver { code, .. } | Error::Launch { code, .. } => Some(*code),
            _ => None,
        }
    }
}

/// Shorthand for `std::result::Result<T, ptxsmith::Error>`.
pub type Result<T> = std::result::Result<T, Error>;

/// Helper for building [`Error::InvalidArgument`] with `format!` syntax.
#[macro_export]
#[doc(hidden)]
macro_rules! invalid_arg {
    ($($t:tt)*) => { $crate::Error::invalid(format!($($t)*)) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_codes_name_and_match() {
        assert_eq!(DriverCode::OUT_OF_MEMORY.name(), "CUDA_ERROR_OUT_OF_MEMORY");
        assert_eq!(DriverCode(12345).name(), "CUresult");
        assert_eq!(DriverCode(12345).to_string(), "CUresult (12345)");
        let e = Error::Driver {
            call: "cuMemAlloc",
            code: DriverCode(2),
            message: "out of device memory".into(),
        };
        assert!(matches!(
            e,
            Error::Driver {
                code: DriverCode::OUT_OF_MEMORY,
                ..
            }
        ));
        assert_eq!(e.driver_code(), Some(DriverCode::OUT_OF_MEMORY));
        for c in [700, 702, 710, 714, 715, 716, 717, 718, 719] {
            assert!(DriverCode(c).is_device_fault(), "{c}");
        }
        for c in [1, 2, 201, 400, 701, 801] {
            assert!(!DriverCode(c).is_device_fault(), "{c}");
        }
    }

    #[test]
    fn argument_errors_carry_fields_and_keep_their_text() {
        let e = Error::invalid("free text");
        assert_eq!(e.to_string(), "invalid argument: free text");
        let Error::InvalidArgument(a) = &e else {
            panic!("{e:?}")
        };
        assert!(a.what.is_empty() && a.expected.is_empty() && a.got.is_empty());
        assert!(a.contains("free"));
        let e: Error = ArgError::new("x", "6 elements", "5 elements")
            .with_message("x has 5 elements, expected 6")
            .into();
        assert_eq!(
            e.to_string(),
            "invalid argument: x has 5 elements, expected 6"
        );
        let Error::InvalidArgument(a) = e else {
            unreachable!()
        };
        assert_eq!(
            (a.what.as_str(), a.expected.as_str(), a.got.as_str()),
            ("x", "6 elements", "5 elements")
        );
        assert_eq!(a.message(), "x has 5 elements, expected 6");
    }
}
