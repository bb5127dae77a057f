//! Helpers for tests that need a CUDA device and must skip cleanly on
//! machines without one.

use crate::runtime::context::Context;
use crate::runtime::device::cuda_unavailable_reason;

/// The line printed when a device test is skipped.
pub const SKIP_NO_DEVICE: &str = "SKIP: no CUDA device";

/// Device 0's shared context for a test, or print `SKIP: no CUDA device
/// (<reason>)` and return `None` when there is no driver or no device:
///
/// ```no_run
/// let Some(ctx) = ptxsmith::runtime::cuda_for_tests() else { return };
/// ```
///
/// Panics if a device is present but cannot be opened: that is a real
/// failure, not a reason to skip.
pub fn cuda_for_tests() -> Option<Context> {
    if let Some(reason) = cuda_unavailable_reason() {
        println!("{SKIP_NO_DEVICE} ({reason})");
        return None;
    }
    match Context::cuda(0) {
        Ok(ctx) => Some(ctx),
        Err(e) => panic!("a CUDA device is present but could not be opened: {e}"),
    }
}
