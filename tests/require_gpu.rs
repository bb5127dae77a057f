//! `PTXSMITH_REQUIRE_GPU`: with it set, a missing CUDA device fails
//! `cuda_for_tests()` (and so every device test) instead of skipping it.
//!
//! The tests here need no GPU: each re-runs this test binary
//! (`std::env::current_exe()`) with `PTXSMITH_REQUIRE_GPU` set, unset or
//! `0`, selecting only [`require_gpu_helper_calls_cuda_for_tests`], and
//! checks the child's exit status and output against what this machine
//! has. Without a driver: set, the child fails naming the reason; unset
//! or `0`, it passes and prints `SKIP: no CUDA device (<reason>)`. With a
//! device the child passes either way and prints no SKIP.

use std::process::{Command, Output};

use ptxsmith::runtime::cuda_unavailable_reason;
use ptxsmith::testing::{REQUIRE_GPU_VAR, REQUIRED_GPU_MISSING, SKIP_NO_DEVICE, cuda_for_tests};

const HELPER: &str = "require_gpu_helper_calls_cuda_for_tests";

/// The test the other tests run in a child process. Run directly it is an
/// ordinary device test: it skips without a device, unless
/// `PTXSMITH_REQUIRE_GPU` is set, when it fails.
#[test]
fn require_gpu_helper_calls_cuda_for_tests() {
    match cuda_for_tests() {
        Some(ctx) => println!("HELPER: device context {:?}", ctx.kind()),
        None => println!("HELPER: skipped"),
    }
}

/// Run the helper in a child process with `PTXSMITH_REQUIRE_GPU` set to
/// `value` (`None`: removed from the environment).
fn run_helper(value: Option<&str>) -> (Output, String) {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut cmd = Command::new(exe);
    cmd.args([HELPER, "--exact", "--nocapture", "--test-threads=1"]);
    match value {
        Some(v) => cmd.env(REQUIRE_GPU_VAR, v),
        None => cmd.env_remove(REQUIRE_GPU_VAR),
    };
    let out = cmd.output().expect("the test binary runs");
    let text = format!(
        "--- status: {}\n--- stdout:\n{}\n--- stderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // The filter must have selected exactly the helper.
    assert!(
        text.contains("running 1 test"),
        "the child ran something else:\n{text}"
    );
    (out, text)
}

/// Without the switch (or with it off) the helper passes: a SKIP line
/// without a device, a context with one.
fn assert_skips_or_runs(value: Option<&str>) {
    let (out, text) = run_helper(value);
    assert!(out.status.success(), "the helper must pass:\n{text}");
    match cuda_unavailable_reason() {
        Some(reason) => {
            let skip = format!("{SKIP_NO_DEVICE} ({reason})");
            assert!(text.contains(&skip), "expected `{skip}`:\n{text}");
            assert!(text.contains("HELPER: skipped"), "{text}");
        }
        None => {
            assert!(!text.contains(SKIP_NO_DEVICE), "{text}");
            assert!(text.contains("HELPER: device context"), "{text}");
        }
    }
}

#[test]
fn require_gpu_unset_skips_without_a_device() {
    assert_skips_or_runs(None);
}

#[test]
fn require_gpu_zero_or_empty_is_off() {
    assert_skips_or_runs(Some("0"));
    assert_skips_or_runs(Some(""));
}

#[test]
fn require_gpu_set_fails_without_a_device_naming_the_reason() {
    for value in ["1", "yes"] {
        let (out, text) = run_helper(Some(value));
        match cuda_unavailable_reason() {
            Some(reason) => {
                assert!(
                    !out.status.success(),
                    "{REQUIRE_GPU_VAR}={value} without a device must fail:\n{text}"
                );
                let msg = format!("{REQUIRED_GPU_MISSING}: {reason}");
                assert!(text.contains(&msg), "expected `{msg}`:\n{text}");
                assert!(!text.contains(SKIP_NO_DEVICE), "{text}");
                assert!(text.contains("test result: FAILED"), "{text}");
            }
            None => {
                assert!(out.status.success(), "a device is present:\n{text}");
                assert!(text.contains("HELPER: device context"), "{text}");
                assert!(!text.contains(SKIP_NO_DEVICE), "{text}");
            }
        }
    }
}
