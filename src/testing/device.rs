//! Helpers for tests that need a CUDA device and must skip cleanly on
//! machines without one, unless [`REQUIRE_GPU_VAR`] says a device is
//! required.

use crate::runtime::{Context, cuda_unavailable_reason};

/// The line printed when a device test is skipped.
pub const SKIP_NO_DEVICE: &str = "SKIP: no CUDA device";

/// The environment variable that turns "no CUDA device" from a skip into a
/// failure: `PTXSMITH_REQUIRE_GPU`. Set to anything but empty or `0`, it
/// makes [`cuda_for_tests`] (and the GPU parts of the benches) panic with
/// the driver's reason instead of skipping.
pub const REQUIRE_GPU_VAR: &str = "PTXSMITH_REQUIRE_GPU";

/// The message [`cuda_for_tests`] panics with under [`REQUIRE_GPU_VAR`]
/// when there is no usable device; the reason follows it.
pub const REQUIRED_GPU_MISSING: &str =
    "PTXSMITH_REQUIRE_GPU is set but there is no usable CUDA device";

/// Whether `ctx` runs on the CUDA driver emulator (`cuda-emu/`), whose
/// kernels execute on the CPU simulator: device tests sized for a GPU
/// (sweeps over 2³² inputs, gigabytes of data) use a smaller size there.
pub fn on_emulator(ctx: &Context) -> bool {
    ctx.info().is_some_and(|i| i.is_emulator())
}

/// The environment variable that asks device tests for their small shapes
/// on a GPU too (the device suite sets it under compute-sanitizer, whose
/// instrumentation makes the GPU sizes take minutes).
pub const SMALL_SHAPES_VAR: &str = "PTXSMITH_DEVICE_TESTS_SMALL";

/// Whether a device test on `ctx` should use its small shapes: on the
/// driver emulator (see [`on_emulator`]), or when [`SMALL_SHAPES_VAR`] is
/// set to a value other than empty or `0`. The small shapes run the same
/// kernel variants as the large ones.
pub fn small_shapes(ctx: &Context) -> bool {
    on_emulator(ctx)
        || std::env::var_os(SMALL_SHAPES_VAR).is_some_and(|v| !v.is_empty() && v != "0")
}

/// Whether [`REQUIRE_GPU_VAR`] is set to a value other than empty or `0`.
pub fn gpu_required() -> bool {
    std::env::var_os(REQUIRE_GPU_VAR).is_some_and(|v| !v.is_empty() && v != "0")
}

/// Device 0's shared context for a test, or print `SKIP: no CUDA device
/// (<reason>)` and return `None` when there is no driver or no device:
///
/// ```no_run
/// let Some(ctx) = ptxsmith::testing::cuda_for_tests() else { return };
/// ```
///
/// # `PTXSMITH_REQUIRE_GPU`
///
/// With `PTXSMITH_REQUIRE_GPU=1` in the environment (any value but empty
/// or `0`, see [`gpu_required`]) a missing device is a failure, not a
/// skip: this function panics with [`REQUIRED_GPU_MISSING`] followed by the
/// reason (the CUDA driver library could not be loaded, `cuInit` failed,
/// or the driver reports no device). Set it wherever a device is supposed
/// to be present (the device suite, `scripts/device-suite.sh`, sets it), so
/// a broken driver setup cannot turn the device tests green by skipping
/// them all.
///
/// # Panics
///
/// If a device is present but cannot be opened (that is a real failure,
/// not a reason to skip), and under `PTXSMITH_REQUIRE_GPU` when there is
/// no device.
pub fn cuda_for_tests() -> Option<Context> {
    if let Some(reason) = cuda_unavailable_reason() {
        if gpu_required() {
            panic!("{REQUIRED_GPU_MISSING}: {reason}");
        }
        println!("{SKIP_NO_DEVICE} ({reason})");
        return None;
    }
    match Context::cuda(0) {
        Ok(ctx) => Some(ctx),
        Err(e) => panic!("a CUDA device is present but could not be opened: {e}"),
    }
}
