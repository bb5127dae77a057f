//! Stream-ordered allocation (`cuMemAllocAsync`, `cuMemFreeAsync`): the
//! memory is there at the call, gone for every later call at the free, and
//! released when the stream reaches the free (earlier work still uses it,
//! later work faults).

use ptxsmith_cuda_emu::exports as cu;

mod common;
use common::*;

const NON_BLOCKING: u32 = 0x1;

fn alloc_async(bytes: usize, s: CUstream) -> CUdeviceptr {
    let mut p = 0;
    // SAFETY: a valid out-pointer.
    ok(unsafe { cu::cuMemAllocAsync(&mut p, bytes, s) });
    p
}

fn free_info() -> usize {
    let (mut free, mut total) = (0, 0);
    // SAFETY: valid out-pointers.
    ok(unsafe { cu::cuMemGetInfo_v2(&mut free, &mut total) });
    free
}

#[test]
fn memory_pools_are_reported_and_async_memory_works() {
    init();
    let mut pools = -1;
    // SAFETY: a valid out-pointer.
    ok(unsafe { cu::cuDeviceGetAttribute(&mut pools, 115, 0) });
    assert_eq!(pools, 1);
    let _c = TestCtx::new();
    let s = stream(NON_BLOCKING);
    let before = free_info();
    let p = alloc_async(64, s);
    let keep = alloc(64);
    assert!(free_info() < before);
    let fill = emu_kernel("fill");
    ok(launch(
        fill,
        1,
        16,
        0,
        s,
        &[Arg::U64(p), Arg::U32(16), Arg::U32(40)],
    ));
    // Queued before the free: still runs on the memory.
    // SAFETY: device addresses of this context.
    unsafe {
        ok(cu::cuMemcpyDtoDAsync_v2(keep, p, 64, s));
        ok(cu::cuMemFreeAsync(p, s));
    }
    // Gone for every later call at once, released for the device count.
    // SAFETY: as above; refused calls.
    unsafe {
        is(
            cu::cuMemcpyDtoDAsync_v2(keep, p, 4, s),
            CUDA_ERROR_INVALID_VALUE,
        );
        is(cu::cuMemFreeAsync(p, s), CUDA_ERROR_INVALID_VALUE);
        is(cu::cuMemFree_v2(p), CUDA_ERROR_INVALID_VALUE);
    }
    ok(sync(s));
    assert_eq!(read_u32(keep, 16), (40..56).collect::<Vec<u32>>());
    assert!(free_info() >= before - 256);
}

#[test]
fn work_that_runs_after_the_free_faults() {
    let _c = TestCtx::new();
    let s = stream(NON_BLOCKING);
    let p = alloc_async(64, s);
    // SAFETY: a device address of this context.
    ok(unsafe { cu::cuMemFreeAsync(p, s) });
    // A launch is not checked against the allocations when queued; it runs
    // after the free and faults.
    let fill = emu_kernel("fill");
    ok(launch(
        fill,
        1,
        16,
        0,
        s,
        &[Arg::U64(p), Arg::U32(16), Arg::U32(1)],
    ));
    is(sync(s), CUDA_ERROR_ILLEGAL_ADDRESS);
}

#[test]
fn async_allocation_refusals() {
    let _c = TestCtx::new();
    let s = stream(0);
    // SAFETY: null and made-up arguments are refused before use.
    unsafe {
        let mut p = 7;
        ok(cu::cuMemAllocAsync(&mut p, 0, s));
        assert_eq!(p, 0, "0 bytes: the address 0");
        ok(cu::cuMemFreeAsync(0, s));
        is(
            cu::cuMemAllocAsync(std::ptr::null_mut(), 16, s),
            CUDA_ERROR_INVALID_VALUE,
        );
        is(
            cu::cuMemAllocAsync(&mut p, usize::MAX, s),
            CUDA_ERROR_OUT_OF_MEMORY,
        );
        let p = alloc_async(16, CUstream::default());
        let dead = stream(0);
        ok(cu::cuStreamDestroy_v2(dead));
        is(
            cu::cuMemAllocAsync(&mut 0, 16, dead),
            CUDA_ERROR_INVALID_HANDLE,
        );
        is(cu::cuMemFreeAsync(p, dead), CUDA_ERROR_INVALID_HANDLE);
        is(cu::cuMemFreeAsync(p + 4, s), CUDA_ERROR_INVALID_VALUE);
        ok(cu::cuMemFreeAsync(p, CUstream::default()));
    }
}
