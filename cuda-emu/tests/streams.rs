//! Queued work runs only when something synchronises, in the order the
//! Driver API's stream rules give: a host read before synchronisation sees
//! the old bytes, a missing `cuStreamWaitEvent` gives the wrong answer,
//! the legacy default stream orders blocking streams but not non-blocking
//! ones, queries answer NOT_READY before running pending work.

use std::ffi::c_void;

use ptxsmith_cuda_emu::exports as cu;

mod common;
use common::*;

const NON_BLOCKING: u32 = 0x1;

fn fill_args(p: CUdeviceptr, n: u32, v: u32) -> [Arg; 3] {
    [Arg::U64(p), Arg::U32(n), Arg::U32(v)]
}

#[test]
fn a_host_read_before_synchronisation_sees_the_old_bytes() {
    let _c = TestCtx::new();
    let fill = emu_kernel("fill");
    let p = alloc(4 * 8);
    ok(htod(p, &[0u32; 8]));
    let s = stream(NON_BLOCKING);
    ok(launch(fill, 1, 8, 0, s, &fill_args(p, 8, 100)));
    // A synchronous copy runs on the legacy stream, which does not wait for
    // a non-blocking stream: the kernel has not run.
    assert_eq!(read_u32(p, 8), [0; 8]);
    // An asynchronous copy into page-locked memory on the kernel's stream
    // is ordered after it, but lands only when the stream is synchronised.
    let mut pinned: *mut c_void = std::ptr::null_mut();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cu::cuMemAllocHost_v2(&mut pinned, 32) });
    // SAFETY: 32 bytes of page-locked memory, nothing else uses them until
    // the free below.
    let host = unsafe { std::slice::from_raw_parts_mut(pinned.cast::<u32>(), 8) };
    host.fill(7);
    // SAFETY: `host` stays alive and untouched until the stream is
    // synchronised below.
    ok(unsafe { cu::cuMemcpyDtoHAsync_v2(pinned, p, 32, s) });
    assert_eq!(host, [7; 8], "nothing lands before synchronisation");
    ok(sync(s));
    let want: Vec<u32> = (100..108).collect();
    assert_eq!(host.to_vec(), want);
    assert_eq!(read_u32(p, 8), want);
    // SAFETY: allocated above, no queued work uses it.
    ok(unsafe { cu::cuMemFreeHost(pinned) });
    // Into pageable memory the call returns only once the copy has
    // completed (API synchronization behavior, Asynchronous): the
    // stream's earlier work runs first.
    ok(launch(fill, 1, 8, 0, s, &fill_args(p, 8, 200)));
    let mut pageable = [7u32; 8];
    // SAFETY: `pageable` is written before the call returns.
    ok(unsafe { cu::cuMemcpyDtoHAsync_v2(pageable.as_mut_ptr().cast(), p, 32, s) });
    assert_eq!(pageable.to_vec(), (200..208).collect::<Vec<u32>>());
}

#[test]
fn cross_stream_order_needs_an_event_wait() {
    let _c = TestCtx::new();
    let (fill, twice) = (emu_kernel("fill"), emu_kernel("twice_plus_one"));
    let n = 64u32;
    let want: Vec<u32> = (0..n).map(|i| (10 + i) * 2 + 1).collect();
    for with_wait in [false, true] {
        let p = alloc(4 * n as usize);
        ok(htod(p, &vec![0u32; n as usize]));
        // The synchronous upload's transfer is on the legacy stream, which
        // the non-blocking streams below are not ordered with: let it land.
        ok(ctx_sync());
        let (a, b) = (stream(NON_BLOCKING), stream(NON_BLOCKING));
        ok(launch(fill, 1, n, 0, a, &fill_args(p, n, 10)));
        if with_wait {
            let e = event(0x2);
            // SAFETY: handle values.
            ok(unsafe { cu::cuEventRecord(e, a) });
            // SAFETY: handle values.
            ok(unsafe { cu::cuStreamWaitEvent(b, e, 0) });
            // Destroying the event leaves the wait in place.
            // SAFETY: a handle value.
            ok(unsafe { cu::cuEventDestroy_v2(e) });
        }
        ok(launch(twice, 1, n, 0, b, &[Arg::U64(p), Arg::U32(n)]));
        // Only b is synchronised: without the wait, a's fill has not run.
        ok(sync(b));
        let got = read_u32(p, n as usize);
        if with_wait {
            assert_eq!(got, want);
        } else {
            assert_eq!(got, vec![1; n as usize], "b ran alone on zeros");
        }
        ok(ctx_sync());
    }
}

#[test]
fn the_legacy_stream_orders_blocking_streams_only() {
    let _c = TestCtx::new();
    let fill = emu_kernel("fill");
    for (flags, waited) in [(0, true), (NON_BLOCKING, false)] {
        let p = alloc(16);
        ok(htod(p, &[0u32; 4]));
        let s = stream(flags);
        ok(launch(fill, 1, 4, 0, s, &fill_args(p, 4, 50)));
        // The synchronous copy (legacy stream) waits for a blocking stream's
        // earlier work, not for a non-blocking one's.
        let got = read_u32(p, 4);
        assert_eq!(got == [50, 51, 52, 53], waited, "flags {flags}: {got:?}");
        ok(ctx_sync());
    }
    // Work queued on the legacy stream runs before later work of a
    // blocking stream.
    let p = alloc(16);
    ok(htod(p, &[0u32; 4]));
    let s = stream(0);
    ok(launch(
        fill,
        1,
        4,
        0,
        CUstream::default(),
        &fill_args(p, 4, 1),
    ));
    ok(launch(
        emu_kernel("twice_plus_one"),
        1,
        4,
        0,
        s,
        &[Arg::U64(p), Arg::U32(4)],
    ));
    ok(sync(s));
    let mut host = [0u32; 4];
    // SAFETY: the copy runs on `s` (already idle) at the synchronisation.
    ok(unsafe { cu::cuMemcpyDtoHAsync_v2(host.as_mut_ptr().cast(), p, 16, s) });
    ok(sync(s));
    assert_eq!(host, [3, 5, 7, 9]);
}

#[test]
fn queries_answer_not_ready_before_running_the_work() {
    let _c = TestCtx::new();
    let fill = emu_kernel("fill");
    let p = alloc(16);
    let s = stream(NON_BLOCKING);
    // SAFETY: handle value.
    ok(unsafe { cu::cuStreamQuery(s) });
    ok(launch(fill, 1, 4, 0, s, &fill_args(p, 4, 9)));
    let e = event(0);
    // SAFETY: handle values.
    ok(unsafe { cu::cuEventRecord(e, s) });
    // SAFETY: handle value.
    is(unsafe { cu::cuEventQuery(e) }, CUDA_ERROR_NOT_READY);
    // SAFETY: handle value.
    is(unsafe { cu::cuStreamQuery(s) }, CUDA_ERROR_NOT_READY);
    // A polling loop ends: the second query runs the work.
    // SAFETY: handle value.
    ok(unsafe { cu::cuStreamQuery(s) });
    // SAFETY: handle value.
    ok(unsafe { cu::cuEventQuery(e) });
    assert_eq!(read_u32(p, 4), [9, 10, 11, 12]);
}

#[test]
fn events_time_and_synchronise_their_captured_work() {
    let _c = TestCtx::new();
    let fill = emu_kernel("fill");
    let p = alloc(4 * 1024);
    let s = stream(NON_BLOCKING);
    let (e0, e1) = (event(0), event(0));
    let mut ms = 0f32;
    // SAFETY: out-pointer; neither event has been recorded.
    is(
        unsafe { cu::cuEventElapsedTime(&mut ms, e0, e1) },
        CUDA_ERROR_INVALID_HANDLE,
    );
    // SAFETY: handle values.
    ok(unsafe { cu::cuEventRecord(e0, s) });
    ok(launch(fill, 4, 256, 0, s, &fill_args(p, 1024, 0)));
    // SAFETY: handle values.
    ok(unsafe { cu::cuEventRecord(e1, s) });
    // Not run yet.
    // SAFETY: out-pointer.
    is(
        unsafe { cu::cuEventElapsedTime(&mut ms, e0, e1) },
        CUDA_ERROR_NOT_READY,
    );
    // SAFETY: handle value.
    ok(unsafe { cu::cuEventSynchronize(e1) });
    // SAFETY: out-pointer.
    ok(unsafe { cu::cuEventElapsedTime(&mut ms, e0, e1) });
    assert!(ms >= 0.0, "{ms}");
    assert_eq!(read_u32(p, 3), [0, 1, 2]);
    // Events without timing cannot be timed.
    let quiet = event(0x2);
    // SAFETY: handle values.
    ok(unsafe { cu::cuEventRecord(quiet, s) });
    ok(sync(s));
    // SAFETY: out-pointer.
    is(
        unsafe { cu::cuEventElapsedTime(&mut ms, e0, quiet) },
        CUDA_ERROR_INVALID_HANDLE,
    );
    // An event that was never recorded is complete.
    let fresh = event(0);
    // SAFETY: handle value.
    ok(unsafe { cu::cuEventSynchronize(fresh) });
    // SAFETY: handle value.
    ok(unsafe { cu::cuEventQuery(fresh) });
    // Bad flags.
    let mut e = CUevent::default();
    // SAFETY: out-pointer; INTERPROCESS without DISABLE_TIMING is refused.
    is(
        unsafe { cu::cuEventCreate(&mut e, 0x4) },
        CUDA_ERROR_INVALID_VALUE,
    );
}

#[test]
fn a_destroyed_stream_still_runs_its_work_when_waited_for() {
    let _c = TestCtx::new();
    let fill = emu_kernel("fill");
    let p = alloc(16);
    let s = stream(NON_BLOCKING);
    ok(launch(fill, 1, 4, 0, s, &fill_args(p, 4, 3)));
    // SAFETY: a handle value.
    ok(unsafe { cu::cuStreamDestroy_v2(s) });
    ok(ctx_sync());
    assert_eq!(read_u32(p, 4), [3, 4, 5, 6]);
}

#[test]
fn memsets_and_device_copies_are_queued_on_their_stream() {
    let _c = TestCtx::new();
    let (a, b) = (alloc(64), alloc(64));
    let s = stream(NON_BLOCKING);
    // SAFETY: no host memory involved.
    unsafe {
        ok(cu::cuMemsetD32Async(a, 0xDEAD_BEEF, 16, s));
        ok(cu::cuMemsetD8Async(a + 4, 0x11, 4, s));
        ok(cu::cuMemsetD16Async(a + 8, 0x2233, 2, s));
        ok(cu::cuMemcpyDtoDAsync_v2(b, a, 64, s));
    }
    let mut before = [0u8; 4];
    // The legacy stream does not wait for `s`: `b` is still unwritten (the
    // emulator reads it as zero).
    ok(dtoh(&mut before, b));
    assert_eq!(before, [0; 4]);
    ok(sync(s));
    let got = read_u32(b, 4);
    assert_eq!(got, [0xDEAD_BEEF, 0x1111_1111, 0x2233_2233, 0xDEAD_BEEF]);
    // Synchronous memsets go to the legacy stream: the next synchronous
    // copy sees them.
    // SAFETY: no host memory involved.
    ok(unsafe { cu::cuMemsetD32_v2(b, 7, 16) });
    assert_eq!(read_u32(b, 2), [7, 7]);
    // A host → device copy stages the source at the call.
    let mut src = [1u32; 4];
    // SAFETY: `src` is readable for 16 bytes (staged now).
    ok(unsafe { cu::cuMemcpyHtoDAsync_v2(b, src.as_ptr().cast::<c_void>(), 16, s) });
    src = [2; 4];
    ok(sync(s));
    assert_eq!(read_u32(b, 4), [1; 4]);
    assert_eq!(src, [2; 4]);
}
