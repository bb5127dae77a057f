//! Helpers for tests, benches and examples of code built on ptxsmith: not
//! part of the kernel or runtime API.
//!
//! [`device`]: device tests that need a CUDA device skip cleanly on a
//! machine without one ([`cuda_for_tests`]), unless
//! [`REQUIRE_GPU_VAR`] says a device is required, and pick smaller shapes
//! on the driver emulator ([`on_emulator`], [`small_shapes`]).

pub mod device;

pub use device::{
    REQUIRE_GPU_VAR, REQUIRED_GPU_MISSING, SKIP_NO_DEVICE, SMALL_SHAPES_VAR, cuda_for_tests,
    gpu_required, on_emulator, small_shapes,
};
