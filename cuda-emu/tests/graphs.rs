//! Stream capture and graphs through the C ABI: what capture records and
//! a graph launch replays, and the driver's codes for illegal calls during
//! capture (see `src/graph.rs`).

use std::ffi::c_void;
use std::ptr::null_mut;

use ptxsmith_cuda_emu::exports as cu;

mod common;
use common::*;

const GLOBAL: u32 = 0;
const THREAD_LOCAL: u32 = 1;
const RELAXED: u32 = 2;
const UNSUPPORTED: CUresult = 900;
const INVALIDATED: CUresult = 901;
const IMPLICIT: CUresult = 906;
const CAPTURED_EVENT: CUresult = 907;
const WRONG_THREAD: CUresult = 908;
const ISOLATION: CUresult = 905;
const ILLEGAL_STATE: CUresult = 401;

fn begin(s: CUstream, mode: u32) -> CUresult {
    // SAFETY: a handle value.
    unsafe { cu::cuStreamBeginCapture_v2(s, mode) }
}

fn end(s: CUstream) -> Result<*mut c_void, (CUresult, *mut c_void)> {
    let mut g = std::ptr::without_provenance_mut(1);
    // SAFETY: a valid out-pointer.
    let rc = unsafe { cu::cuStreamEndCapture(s, &mut g) };
    if rc == CUDA_SUCCESS {
        Ok(g)
    } else {
        Err((rc, g))
    }
}

fn status(s: CUstream) -> u32 {
    let mut st = 99;
    // SAFETY: a valid out-pointer.
    ok(unsafe { cu::cuStreamIsCapturing(s, &mut st) });
    st
}

fn instantiate(g: *mut c_void, flags: u64) -> Result<*mut c_void, CUresult> {
    let mut e = null_mut();
    // SAFETY: a valid out-pointer.
    let rc = unsafe { cu::cuGraphInstantiateWithFlags(&mut e, g, flags) };
    if rc == CUDA_SUCCESS { Ok(e) } else { Err(rc) }
}

fn memset32(p: u64, v: u32, n: usize, s: CUstream) -> CUresult {
    // SAFETY: a device address.
    unsafe { cu::cuMemsetD32Async(p, v, n, s) }
}

#[test]
fn capture_records_without_running_and_a_graph_replays_in_order() {
    let _c = TestCtx::new();
    let s = stream(0);
    let (p, q) = (alloc(256), alloc(256));
    ok(htod(p, &[1u32; 64]));
    ok(htod(q, &[2u32; 64]));
    ok(sync(s));
    assert_eq!(status(s), 0);
    ok(begin(s, THREAD_LOCAL));
    assert_eq!(status(s), 1);
    let (mut st, mut id, mut g) = (0u32, 0u64, null_mut());
    let mut n = 7usize;
    let mut deps = std::ptr::without_provenance(8);
    // SAFETY: valid out-pointers.
    ok(unsafe { cu::cuStreamGetCaptureInfo_v2(s, &mut st, &mut id, &mut g, &mut deps, &mut n) });
    assert_eq!((st, n), (1, 0));
    assert!(id != 0 && !g.is_null() && deps.is_null());
    // Recorded: a fill, a kernel (p[i] = 10 + i), a copy p -> q.
    ok(memset32(p, 0, 64, s));
    let f = emu_kernel("fill");
    ok(launch(
        f,
        1,
        64,
        0,
        s,
        &[Arg::U64(p), Arg::U32(32), Arg::U32(10)],
    ));
    // SAFETY: device addresses.
    ok(unsafe { cu::cuMemcpyDtoDAsync_v2(q, p, 256, s) });
    let graph = end(s).unwrap();
    assert_eq!(graph, g, "the graph GetCaptureInfo named");
    assert_eq!(status(s), 0);
    ok(sync(s));
    assert_eq!(read_u32(p, 64), vec![1; 64], "capture ran nothing");
    assert_eq!(read_u32(q, 64), vec![2; 64]);

    let exec = instantiate(graph, 0).unwrap();
    // SAFETY: handle values.
    ok(unsafe { cu::cuGraphLaunch(exec, s) });
    ok(sync(s));
    let want: Vec<u32> = (0..64).map(|i| if i < 32 { 10 + i } else { 0 }).collect();
    assert_eq!(read_u32(p, 64), want);
    assert_eq!(read_u32(q, 64), want);
    // Replayed: the fill and copy run again over new contents.
    ok(htod(p, &[5u32; 64]));
    ok(htod(q, &[6u32; 64]));
    // SAFETY: handle values.
    ok(unsafe { cu::cuGraphLaunch(exec, CUstream::default()) });
    ok(ctx_sync());
    assert_eq!(read_u32(q, 64), want);
    // SAFETY: handle values.
    unsafe {
        ok(cu::cuGraphUpload(exec, s));
        ok(cu::cuGraphExecDestroy(exec));
        is(cu::cuGraphLaunch(exec, s), CUDA_ERROR_INVALID_VALUE);
        is(cu::cuGraphExecDestroy(exec), CUDA_ERROR_INVALID_VALUE);
        ok(cu::cuGraphDestroy(graph));
        is(cu::cuGraphDestroy(graph), CUDA_ERROR_INVALID_VALUE);
    }
}

#[test]
fn a_graph_launched_into_a_capture_is_captured() {
    let _c = TestCtx::new();
    let (s, t) = (stream(0), stream(0));
    let p = alloc(256);
    ok(htod(p, &[1u32; 64]));
    ok(begin(s, GLOBAL));
    ok(memset32(p, 3, 64, s));
    let inner = instantiate(end(s).unwrap(), 0).unwrap();
    ok(begin(t, RELAXED));
    // SAFETY: handle values.
    ok(unsafe { cu::cuGraphLaunch(inner, t) });
    let outer = instantiate(end(t).unwrap(), 0).unwrap();
    assert_eq!(read_u32(p, 64), vec![1; 64]);
    // SAFETY: handle values.
    ok(unsafe { cu::cuGraphLaunch(outer, t) });
    ok(sync(t));
    assert_eq!(read_u32(p, 64), vec![3; 64]);
}

#[test]
fn capture_misuse_gets_the_drivers_codes() {
    let _c = TestCtx::new();
    let s = stream(0);
    let early = alloc(256);
    let p = alloc(16);
    is(begin(CUstream::default(), GLOBAL), UNSUPPORTED);
    is(begin(s, 7), CUDA_ERROR_INVALID_VALUE);
    is(end(s).unwrap_err().0, ILLEGAL_STATE);
    ok(begin(s, GLOBAL));
    is(begin(s, GLOBAL), ILLEGAL_STATE);
    // Synchronising the capturing stream invalidates the capture.
    is(sync(s), UNSUPPORTED);
    assert_eq!(status(s), 2);
    is(memset32(early, 0, 1, s), INVALIDATED);
    let (rc, g) = end(s).unwrap_err();
    is(rc, INVALIDATED);
    assert!(g.is_null());
    assert_eq!(status(s), 0);
    // Querying too.
    ok(begin(s, RELAXED));
    // SAFETY: a handle value.
    is(unsafe { cu::cuStreamQuery(s) }, UNSUPPORTED);
    is(end(s).unwrap_err().0, INVALIDATED);
    // An event recorded in the capture cannot be queried.
    let e = event(0);
    ok(begin(s, RELAXED));
    // SAFETY: handle values.
    unsafe {
        ok(cu::cuEventRecord(e, s));
        is(cu::cuEventQuery(e), CAPTURED_EVENT);
        is(cu::cuEventSynchronize(e), CAPTURED_EVENT);
    }
    is(end(s).unwrap_err().0, INVALIDATED);
    // SAFETY: handle values; re-recorded outside capture it is an event again.
    unsafe {
        ok(cu::cuEventRecord(e, s));
        ok(cu::cuEventSynchronize(e));
    }
    // Waiting on an event recorded outside the capture.
    ok(begin(s, RELAXED));
    // SAFETY: handle values.
    is(unsafe { cu::cuStreamWaitEvent(s, e, 0) }, ISOLATION);
    is(end(s).unwrap_err().0, INVALIDATED);
    // ... and on one recorded inside it: fine.
    ok(begin(s, RELAXED));
    // SAFETY: handle values.
    unsafe {
        ok(cu::cuEventRecord(e, s));
        ok(cu::cuStreamWaitEvent(s, e, 0));
    }
    end(s).unwrap();
    // Stream-ordered allocation, and a copy into pageable memory the call
    // would wait for.
    ok(begin(s, RELAXED));
    let mut d = 0u64;
    // SAFETY: a valid out-pointer.
    is(unsafe { cu::cuMemAllocAsync(&mut d, 256, s) }, UNSUPPORTED);
    is(end(s).unwrap_err().0, INVALIDATED);
    ok(begin(s, RELAXED));
    let mut host = [0u8; 16];
    // SAFETY: a host buffer of 16 bytes.
    is(
        unsafe { cu::cuMemcpyDtoHAsync_v2(host.as_mut_ptr().cast(), p, 16, s) },
        UNSUPPORTED,
    );
    is(end(s).unwrap_err().0, INVALIDATED);
    // Instantiation flags.
    ok(begin(s, GLOBAL));
    let g = end(s).unwrap();
    is(instantiate(g, 1 | 4).unwrap_err(), CUDA_ERROR_INVALID_VALUE);
    is(instantiate(g, 16).unwrap_err(), CUDA_ERROR_INVALID_VALUE);
    is(instantiate(g, 4).unwrap_err(), CUDA_ERROR_NOT_SUPPORTED);
    for flags in [0, 1, 2, 8, 1 | 8] {
        instantiate(g, flags).unwrap();
    }
    is(
        instantiate(null_mut(), 0).unwrap_err(),
        CUDA_ERROR_INVALID_VALUE,
    );
}

#[test]
fn modes_decide_which_unsafe_calls_are_refused() {
    let _c = TestCtx::new();
    let blocking = stream(0);
    let non_blocking = stream(1);
    let mut d = 0u64;
    // Global: cuMemAlloc is refused from any thread, and invalidates.
    ok(begin(non_blocking, GLOBAL));
    // SAFETY: a valid out-pointer.
    is(unsafe { cu::cuMemAlloc_v2(&mut d, 256) }, UNSUPPORTED);
    is(end(non_blocking).unwrap_err().0, INVALIDATED);
    ok(begin(non_blocking, GLOBAL));
    let c = _c.0;
    let rc = std::thread::spawn(move || {
        // SAFETY: a handle value and a valid out-pointer.
        ok(unsafe { cu::cuCtxSetCurrent(c) });
        let mut d = 0u64;
        // SAFETY: as above.
        unsafe { cu::cuMemAlloc_v2(&mut d, 256) }
    })
    .join()
    .unwrap();
    is(rc, UNSUPPORTED);
    is(ctx_sync(), UNSUPPORTED);
    is(end(non_blocking).unwrap_err().0, INVALIDATED);
    // Thread-local: only the capturing thread is refused; only it may end.
    ok(begin(non_blocking, THREAD_LOCAL));
    let c = _c.0;
    let s = non_blocking;
    let (rc, end_rc) = std::thread::spawn(move || {
        // SAFETY: a handle value and a valid out-pointer.
        ok(unsafe { cu::cuCtxSetCurrent(c) });
        let mut d = 0u64;
        // SAFETY: as above.
        let rc = unsafe { cu::cuMemAlloc_v2(&mut d, 256) };
        (rc, end(s).unwrap_err().0)
    })
    .join()
    .unwrap();
    ok(rc);
    is(end_rc, WRONG_THREAD);
    // SAFETY: a valid out-pointer.
    is(unsafe { cu::cuMemAlloc_v2(&mut d, 256) }, UNSUPPORTED);
    is(end(non_blocking).unwrap_err().0, INVALIDATED);
    // Relaxed: allowed, and the legacy stream may run beside a capturing
    // non-blocking stream ...
    ok(begin(non_blocking, RELAXED));
    // SAFETY: as above.
    ok(unsafe { cu::cuMemAlloc_v2(&mut d, 256) });
    ok(htod(d, &[4u32; 64]));
    assert_eq!(read_u32(d, 64), vec![4; 64]);
    end(non_blocking).unwrap();
    // ... but not beside a capturing blocking stream (implicit dependency).
    ok(begin(blocking, RELAXED));
    is(htod(d, &[5u32; 64]), IMPLICIT);
    let mut st = 0;
    // SAFETY: a valid out-pointer.
    is(
        unsafe { cu::cuStreamIsCapturing(CUstream::default(), &mut st) },
        IMPLICIT,
    );
    is(end(blocking).unwrap_err().0, INVALIDATED);
    assert_eq!(read_u32(d, 64), vec![4; 64]);
}
