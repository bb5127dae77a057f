//! Compiler-generated device code on the emulator: a `.func` called from
//! a kernel runs, recursion too (to the simulator's depth of 32, past which
//! the launch fails as a device would on a stack overflow); a failed
//! device `assert` (`__assertfail`) is `CUDA_ERROR_ASSERT`, sticky like
//! the other device faults.

use ptxsmith_cuda_emu::exports as cu;

mod common;
use common::*;

const CALLS_PTX: &str = include_str!("ptx/calls.ptx");

#[test]
fn a_device_function_call_runs() {
    let _c = TestCtx::new();
    let f = function(load(CALLS_PTX), "add_kernel").unwrap();
    let out = alloc(4 * 32);
    ok(launch(f, 1, 32, 0, CUstream::default(), &[Arg::U64(out)]));
    ok(ctx_sync());
    let want: Vec<u32> = (0..32).map(|t| 4 * t).collect();
    assert_eq!(read_u32(out, 32), want);
}

#[test]
fn a_failed_assert_is_cuda_error_assert_and_sticky() {
    let _c = TestCtx::new();
    let f = function(load(CALLS_PTX), "assert_kernel").unwrap();
    let mut text = [0u8; 64];
    for (at, s) in [(0, "x < 5"), (32, "t.cu"), (48, "void k()")] {
        text[at..at + s.len()].copy_from_slice(s.as_bytes());
    }
    let s = alloc(64);
    ok(htod(s, &text));
    // five threads: nobody asserts
    ok(launch(f, 1, 5, 0, CUstream::default(), &[Arg::U64(s)]));
    ok(ctx_sync());
    ok(launch(f, 1, 32, 0, CUstream::default(), &[Arg::U64(s)]));
    is(ctx_sync(), CUDA_ERROR_ASSERT);
    // sticky: every later call in the context returns it
    let mut p = 0;
    // SAFETY: out-pointer.
    is(unsafe { cu::cuMemAlloc_v2(&mut p, 4) }, CUDA_ERROR_ASSERT);
    is(
        launch(f, 1, 5, 0, CUstream::default(), &[Arg::U64(s)]),
        CUDA_ERROR_ASSERT,
    );
    is(ctx_sync(), CUDA_ERROR_ASSERT);
}

#[test]
fn recursion_runs_and_a_call_past_the_depth_limit_fails_the_launch() {
    let _c = TestCtx::new();
    let f = function(load(CALLS_PTX), "fact_kernel").unwrap();
    let out = alloc(4 * 32);
    // fact(0..32): at most 32 activations
    ok(launch(
        f,
        1,
        32,
        0,
        CUstream::default(),
        &[Arg::U64(out), Arg::U32(1)],
    ));
    ok(ctx_sync());
    let want: Vec<u32> = (1..=32u32)
        .map(|n| (1..=n).fold(1u32, |a, k| a.wrapping_mul(k)))
        .collect();
    assert_eq!(read_u32(out, 32), want);
    // fact(2..34): 33 activations for fact(33)
    ok(launch(
        f,
        1,
        32,
        0,
        CUstream::default(),
        &[Arg::U64(out), Arg::U32(2)],
    ));
    is(ctx_sync(), CUDA_ERROR_LAUNCH_FAILED);
}
