//! Helpers for tests, benches and examples of code built on ptxsmith: not
//! part of the kernel or runtime API.
//!
//! [`device`]: device tests that need a CUDA device skip cleanly on a
//! machine without one ([`cuda_for_tests`]), unless
//! [`REQUIRE_GPU_VAR`] says a device is required, and pick smaller shapes
//! on the driver emulator ([`on_emulator`], [`small_shapes`]).
//!
//! The test kit for kernels of one's own:
//!
//! * [`sweep`]: run a kernel generator on the simulator for every SM it
//!   supports and compare its output with a host model bit for bit
//!   ([`check_on_every_sm`]), with a typed report of the first mismatch;
//! * [`inspect`]: assertions on ptxas' resource report and the SASS with
//!   the pinned NVIDIA tools ([`assert_no_spills`],
//!   [`assert_opcode_absent`], [`assert_opcode_present`]), which skip when
//!   the tools are missing ([`or_skip`]);
//! * [`inputs`]: `f32` edge values and deterministic mixed vectors for
//!   property tests ([`special_f32s`], [`mixed_f32`]).
//!
//! [`calibrate`]: probes that time, with `%clock64`, the latencies the
//! simulator's critical-path scoreboard assumes, on a GPU and on the
//! scoreboard itself (`examples/calibrate.rs`).

pub mod calibrate;
pub mod device;
pub mod inputs;
pub mod inspect;
pub mod sweep;

pub use device::{
    REQUIRE_GPU_VAR, REQUIRED_GPU_MISSING, SKIP_NO_DEVICE, SMALL_SHAPES_VAR, cuda_for_tests,
    gpu_required, on_emulator, small_shapes,
};
pub use inputs::{SplitMix64, finite_f32, mixed_f32, special_f32s, special_f64s};
pub use inspect::{
    InspectError, KernelReport, SassReport, assemble, assert_no_spills, assert_opcode_absent,
    assert_opcode_present, or_skip, sass, tools,
};
pub use sweep::{
    BitExact, CheckError, Mismatch, SmSweep, check_buffers_on_every_sm, check_buffers_on_sms,
    check_on_every_sm, check_on_sms,
};
