//! Result codes: the `CUresult` values the emulator returns, their names and
//! descriptions (`cuGetErrorName` / `cuGetErrorString`), and the mapping
//! from a simulator finding to the sticky error a real device would raise.

use std::ffi::CStr;

pub use oxicuda_driver::ffi::CUresult;
pub use oxicuda_driver::ffi::{
    CUDA_ERROR_CONTEXT_IS_DESTROYED, CUDA_ERROR_DEINITIALIZED, CUDA_ERROR_ILLEGAL_ADDRESS,
    CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_DEVICE, CUDA_ERROR_INVALID_HANDLE,
    CUDA_ERROR_INVALID_IMAGE, CUDA_ERROR_INVALID_PTX, CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_LAUNCH_FAILED, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, CUDA_ERROR_LAUNCH_TIMEOUT,
    CUDA_ERROR_MISALIGNED_ADDRESS, CUDA_ERROR_NO_DEVICE, CUDA_ERROR_NOT_FOUND,
    CUDA_ERROR_NOT_INITIALIZED, CUDA_ERROR_NOT_READY, CUDA_ERROR_NOT_SUPPORTED,
    CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_PEER_ACCESS_UNSUPPORTED,
    CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, CUDA_ERROR_UNKNOWN, CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
    CUDA_SUCCESS,
};
use ptxsmith::sim::SimError;

/// A call's outcome: `Err` carries the `CUresult` to return.
pub type Res<T> = Result<T, CUresult>;

/// Names and descriptions of the codes `cuGetErrorName` /
/// `cuGetErrorString` know (the CUDA Driver API's "Data types" section,
/// `CUresult`).
const CODES: &[(CUresult, &CStr, &CStr)] = &[
    (0, c"CUDA_SUCCESS", c"no error"),
    (1, c"CUDA_ERROR_INVALID_VALUE", c"invalid argument"),
    (2, c"CUDA_ERROR_OUT_OF_MEMORY", c"out of memory"),
    (3, c"CUDA_ERROR_NOT_INITIALIZED", c"initialization error"),
    (4, c"CUDA_ERROR_DEINITIALIZED", c"driver shutting down"),
    (
        100,
        c"CUDA_ERROR_NO_DEVICE",
        c"no CUDA-capable device is detected",
    ),
    (101, c"CUDA_ERROR_INVALID_DEVICE", c"invalid device ordinal"),
    (
        200,
        c"CUDA_ERROR_INVALID_IMAGE",
        c"device kernel image is invalid",
    ),
    (
        201,
        c"CUDA_ERROR_INVALID_CONTEXT",
        c"invalid device context",
    ),
    (
        209,
        c"CUDA_ERROR_NO_BINARY_FOR_GPU",
        c"no kernel image is available for execution on the device",
    ),
    (
        217,
        c"CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
        c"peer access is not supported between these two devices",
    ),
    (
        218,
        c"CUDA_ERROR_INVALID_PTX",
        c"a PTX JIT compilation failed",
    ),
    (
        222,
        c"CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
        c"the provided PTX was compiled with an unsupported toolchain.",
    ),
    (
        400,
        c"CUDA_ERROR_INVALID_HANDLE",
        c"invalid resource handle",
    ),
    (
        401,
        c"CUDA_ERROR_ILLEGAL_STATE",
        c"the operation cannot be performed in the present state",
    ),
    (500, c"CUDA_ERROR_NOT_FOUND", c"named symbol not found"),
    (600, c"CUDA_ERROR_NOT_READY", c"device not ready"),
    (
        700,
        c"CUDA_ERROR_ILLEGAL_ADDRESS",
        c"an illegal memory access was encountered",
    ),
    (
        701,
        c"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
        c"too many resources requested for launch",
    ),
    (
        702,
        c"CUDA_ERROR_LAUNCH_TIMEOUT",
        c"the launch timed out and was terminated",
    ),
    (
        708,
        c"CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE",
        c"primary context active",
    ),
    (
        709,
        c"CUDA_ERROR_CONTEXT_IS_DESTROYED",
        c"context is destroyed",
    ),
    (
        715,
        c"CUDA_ERROR_ILLEGAL_INSTRUCTION",
        c"an illegal instruction was encountered",
    ),
    (716, c"CUDA_ERROR_MISALIGNED_ADDRESS", c"misaligned address"),
    (
        719,
        c"CUDA_ERROR_LAUNCH_FAILED",
        c"unspecified launch failure",
    ),
    (801, c"CUDA_ERROR_NOT_SUPPORTED", c"operation not supported"),
    (999, c"CUDA_ERROR_UNKNOWN", c"unknown error"),
];

/// `(name, description)` of `code`, or `None` for a code the emulator
/// does not know (`cuGetErrorName` then returns `CUDA_ERROR_INVALID_VALUE`).
pub fn describe(code: CUresult) -> Option<(&'static CStr, &'static CStr)> {
    CODES
        .iter()
        .find(|(c, _, _)| *c == code)
        .map(|&(_, n, d)| (n, d))
}

/// The name of `code` as a Rust string (for messages).
pub fn name(code: CUresult) -> String {
    describe(code).map_or_else(
        || format!("CUresult {code}"),
        |(n, _)| n.to_string_lossy().into_owned(),
    )
}

/// The sticky error a simulator finding raises (README, "Findings").
///
/// * out-of-bounds access (global, shared, local, param, const), which
///   includes every use of freed memory and of another context's memory:
///   `CUDA_ERROR_ILLEGAL_ADDRESS`, as the device's memory fault;
/// * misaligned access: `CUDA_ERROR_MISALIGNED_ADDRESS`;
/// * instruction budget spent (a kernel that does not finish):
///   `CUDA_ERROR_LAUNCH_TIMEOUT`, as the display watchdog's;
/// * everything else the simulator finds that a GPU does not trap on
///   (`trap`, integer division by zero, shared-memory races, barrier or
///   warp divergence, deadlock, uninitialised reads) and PTX it cannot run
///   at launch time: `CUDA_ERROR_LAUNCH_FAILED`, the driver's "unspecified
///   launch failure".
pub fn finding_code(e: &SimError) -> CUresult {
    match e {
        SimError::OutOfBounds { .. } | SimError::InvalidMemory(_) => CUDA_ERROR_ILLEGAL_ADDRESS,
        SimError::Misaligned { .. } => CUDA_ERROR_MISALIGNED_ADDRESS,
        SimError::InstructionLimit { .. } => CUDA_ERROR_LAUNCH_TIMEOUT,
        _ => CUDA_ERROR_LAUNCH_FAILED,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_a_distinct_name_that_matches_oxicudas_constant() {
        use oxicuda_driver::ffi as f;
        let pairs = [
            (f::CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE"),
            (f::CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX"),
            (f::CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS"),
            (
                f::CUDA_ERROR_MISALIGNED_ADDRESS,
                "CUDA_ERROR_MISALIGNED_ADDRESS",
            ),
            (f::CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED"),
            (f::CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED"),
            (
                f::CUDA_ERROR_NO_BINARY_FOR_GPU,
                "CUDA_ERROR_NO_BINARY_FOR_GPU",
            ),
            (
                f::CUDA_ERROR_CONTEXT_IS_DESTROYED,
                "CUDA_ERROR_CONTEXT_IS_DESTROYED",
            ),
        ];
        for (code, want) in pairs {
            assert_eq!(name(code), want);
        }
        let mut seen = std::collections::HashSet::new();
        for (c, n, d) in CODES {
            assert!(seen.insert(*c), "{c} twice");
            assert!(!d.is_empty() && n.to_bytes().starts_with(b"CUDA_"));
        }
        assert_eq!(describe(12345), None);
    }
}
