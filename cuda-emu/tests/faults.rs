//! Simulator findings become the sticky error a device fault raises
//! (README, "Findings"), returned by the synchronising call and by every
//! later call in the context until it is destroyed (or, for the primary
//! context, reset: `primary.rs`).

use ptxsmith_cuda_emu::exports as cu;

mod common;
use common::*;

/// Run `entry` with `args` in a fresh context and return what the
/// synchronisation says, then check the context stays poisoned.
fn fault_of(entry: &str, args: impl Fn() -> Vec<Arg>) -> CUresult {
    let c = TestCtx::new();
    let f = emu_kernel(entry);
    let args = args();
    ok(launch(f, 1, 32, 0, CUstream::default(), &args));
    let code = ctx_sync();
    assert_ne!(code, CUDA_SUCCESS, "{entry} did not fault");
    // Sticky: every later call in the context returns it.
    let mut p = 0;
    // SAFETY: out-pointer.
    is(unsafe { cu::cuMemAlloc_v2(&mut p, 4) }, code);
    is(launch(f, 1, 32, 0, CUstream::default(), &args), code);
    is(ctx_sync(), code);
    let mut s = CUstream::default();
    // SAFETY: out-pointer.
    is(unsafe { cu::cuStreamCreate(&mut s, 0) }, code);
    // ... but not device queries or the current context.
    let mut dev = -1;
    // SAFETY: out-pointer.
    ok(unsafe { cu::cuCtxGetDevice(&mut dev) });
    drop(c);
    code
}

#[test]
fn an_access_outside_every_allocation_is_an_illegal_address() {
    let code = fault_of("store_one", || vec![Arg::U64(0x10)]);
    is(code, CUDA_ERROR_ILLEGAL_ADDRESS);
}

#[test]
fn a_misaligned_access_is_a_misaligned_address() {
    let code = fault_of("load_misaligned", || {
        let p = alloc(64);
        ok(htod(p, &[0u32; 16]));
        vec![Arg::U64(p), Arg::U64(p + 32)]
    });
    is(code, CUDA_ERROR_MISALIGNED_ADDRESS);
}

#[test]
fn a_trap_is_a_launch_failure() {
    is(fault_of("trap_now", Vec::new), CUDA_ERROR_LAUNCH_FAILED);
}

#[test]
fn a_read_of_memory_nobody_wrote_is_a_launch_failure() {
    // The simulator's initialisation check: cuMemAlloc memory is
    // uninitialised until written.
    let code = fault_of("copy_one", || vec![Arg::U64(alloc(4)), Arg::U64(alloc(4))]);
    is(code, CUDA_ERROR_LAUNCH_FAILED);
}

#[test]
fn a_fault_in_one_context_leaves_the_others_working() {
    let good = TestCtx::new();
    let p = alloc(16);
    let fill = emu_kernel("fill");
    let bad = TestCtx::new();
    ok(launch(
        emu_kernel("trap_now"),
        1,
        1,
        0,
        CUstream::default(),
        &[],
    ));
    is(ctx_sync(), CUDA_ERROR_LAUNCH_FAILED);
    good.bind();
    ok(launch(
        fill,
        1,
        4,
        0,
        CUstream::default(),
        &[Arg::U64(p), Arg::U32(4), Arg::U32(1)],
    ));
    assert_eq!(read_u32(p, 4), [1, 2, 3, 4]);
    // Destroying the faulted context is allowed.
    drop(bad);
}

#[test]
fn queued_work_after_the_fault_is_dropped() {
    let _c = TestCtx::new();
    let p = alloc(16);
    ok(htod(p, &[0u32; 4]));
    let s = stream(0x1);
    ok(launch(emu_kernel("trap_now"), 1, 1, 0, s, &[]));
    ok(launch(
        emu_kernel("fill"),
        1,
        4,
        0,
        s,
        &[Arg::U64(p), Arg::U32(4), Arg::U32(1)],
    ));
    is(sync(s), CUDA_ERROR_LAUNCH_FAILED);
    let mut out = [9u32; 4];
    is(dtoh(&mut out, p), CUDA_ERROR_LAUNCH_FAILED);
    assert_eq!(out, [9; 4], "nothing was copied");
}

#[test]
fn error_names_and_strings_are_the_drivers() {
    assert_eq!(
        error_name(CUDA_ERROR_ILLEGAL_ADDRESS),
        "CUDA_ERROR_ILLEGAL_ADDRESS"
    );
    assert_eq!(error_name(CUDA_ERROR_INVALID_PTX), "CUDA_ERROR_INVALID_PTX");
    let mut p: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: out-pointer; an unknown code is refused and p set to null.
    is(
        unsafe { cu::cuGetErrorString(4242, &mut p) },
        CUDA_ERROR_INVALID_VALUE,
    );
    assert!(p.is_null());
}

/// `k(out, v)`: every thread stores `v` (`same` = 1) or its `%tid.x` to
/// `out[0]`, with no barrier.
const ONE_WORD: &str = "
.version 7.0
.target sm_70
.address_size 64
.visible .entry k(.param .u64 out, .param .u32 same)
{
.reg .b32 %r<4>;
.reg .b64 %rd<2>;
.reg .pred %p<2>;
ld.param.u64 %rd0, [out];
ld.param.u32 %r1, [same];
mov.u32 %r0, %tid.x;
setp.ne.u32 %p0, %r1, 0;
selp.u32 %r2, 42, %r0, %p0;
st.global.u32 [%rd0], %r2;
ret;
}
";

#[test]
fn racing_stores_of_the_same_value_run_and_of_different_values_fault() {
    // compute-sanitizer's racecheck: a write-after-write that writes the
    // current value is no ERROR; the launch runs (a warning goes to the
    // log) and the value lands
    let c = TestCtx::new();
    let f = function(load(ONE_WORD), "k").unwrap();
    let out = alloc(4);
    ok(launch(
        f,
        1,
        1024,
        0,
        CUstream::default(),
        &[Arg::U64(out), Arg::U32(1)],
    ));
    ok(ctx_sync());
    assert_eq!(read_u32(out, 1), [42]);
    drop(c);
    // different values: the race finding, a launch failure
    let code = fault_of_module(ONE_WORD, "k", 64);
    is(code, CUDA_ERROR_LAUNCH_FAILED);
}

/// [`fault_of`] for `entry` of `ptx` on `block` threads with (`out`, 0).
fn fault_of_module(ptx: &str, entry: &str, block: u32) -> CUresult {
    let c = TestCtx::new();
    let f = function(load(ptx), entry).unwrap();
    ok(launch(
        f,
        1,
        block,
        0,
        CUstream::default(),
        &[Arg::U64(alloc(4)), Arg::U32(0)],
    ));
    let code = ctx_sync();
    let mut p = 0;
    // SAFETY: out-pointer.
    is(unsafe { cu::cuMemAlloc_v2(&mut p, 4) }, code);
    drop(c);
    code
}
