//! The primary context: retain/release counting, one handle per device, a
//! fresh address range after `cuDevicePrimaryCtxReset` (old pointers are
//! invalid), the per-thread current-context rule, and a fault poisoning
//! the device for the rest of the process (the reset does not clear it). One test: the scenario resets the primary context
//! every test of this binary would share.

use ptxsmith_cuda_emu::exports as cu;

mod common;
use common::*;

fn state() -> (u32, i32) {
    let (mut flags, mut active) = (0, 0);
    // SAFETY: out-pointers.
    ok(unsafe { cu::cuDevicePrimaryCtxGetState(0, &mut flags, &mut active) });
    (flags, active)
}

fn retain() -> CUcontext {
    let mut c = CUcontext::default();
    // SAFETY: out-pointer.
    ok(unsafe { cu::cuDevicePrimaryCtxRetain(&mut c, 0) });
    c
}

#[test]
fn primary_context_lifecycle_faults_reset_and_threads() {
    init();
    assert_eq!(state(), (0, 0), "inactive before the first retain");
    // Flags: at most one scheduling mode.
    // SAFETY: no pointers.
    is(
        unsafe { cu::cuDevicePrimaryCtxSetFlags_v2(0, 0x3) },
        CUDA_ERROR_INVALID_VALUE,
    );
    // SAFETY: no pointers.
    ok(unsafe { cu::cuDevicePrimaryCtxSetFlags_v2(0, 0x4) });
    let h = retain();
    assert_eq!(retain(), h, "one primary context per device");
    assert_eq!(state(), (0x4, 1));
    // Primary contexts are not made current by retaining them.
    let mut p = 0;
    // SAFETY: out-pointer.
    is(
        unsafe { cu::cuMemAlloc_v2(&mut p, 4) },
        CUDA_ERROR_INVALID_CONTEXT,
    );
    // SAFETY: a handle value.
    ok(unsafe { cu::cuCtxSetCurrent(h) });
    let mut cur = CUcontext::default();
    // SAFETY: out-pointer.
    ok(unsafe { cu::cuCtxGetCurrent(&mut cur) });
    assert_eq!(cur, h);
    // The current context is per thread.
    let other = std::thread::spawn(move || {
        let mut q = 0;
        // SAFETY: out-pointer.
        let before = unsafe { cu::cuMemAlloc_v2(&mut q, 4) };
        // SAFETY: a handle value, then an out-pointer.
        let after = unsafe {
            cu::cuCtxSetCurrent(h);
            cu::cuMemAlloc_v2(&mut q, 4)
        };
        (before, after)
    })
    .join()
    .unwrap();
    assert_eq!(other, (CUDA_ERROR_INVALID_CONTEXT, CUDA_SUCCESS));
    // A primary context cannot be destroyed as a created one.
    // SAFETY: a handle value; refused.
    is(
        unsafe { cu::cuCtxDestroy_v2(h) },
        CUDA_ERROR_INVALID_CONTEXT,
    );

    // A reset gives a fresh context under the same handle, still retained.
    let old = alloc(16);
    ok(htod(old, &[1u32; 4]));
    let store = emu_kernel("store_one");
    // SAFETY: no pointers.
    ok(unsafe { cu::cuDevicePrimaryCtxReset_v2(0) });
    assert_eq!(state(), (0x4, 1));
    assert_eq!(retain(), h);
    let fresh = alloc(16);
    ok(htod(fresh, &[3u32; 4]));
    assert_eq!(read_u32(fresh, 4), [3; 4]);
    // Memory of the old context is gone: its pointer is refused (the new
    // context has a new address range).
    is(htod(old, &[2u32; 4]), CUDA_ERROR_INVALID_VALUE);
    // The old module's function is gone too.
    is(
        launch(store, 1, 1, 0, CUstream::default(), &[Arg::U64(fresh)]),
        CUDA_ERROR_INVALID_HANDLE,
    );

    // Three retains, three releases: then it is destroyed, and a thread
    // that still has it current is told so.
    for _ in 0..3 {
        // SAFETY: no pointers.
        ok(unsafe { cu::cuDevicePrimaryCtxRelease_v2(0) });
    }
    assert_eq!(state().1, 0);
    let mut q = 0;
    // SAFETY: out-pointer.
    is(
        unsafe { cu::cuMemAlloc_v2(&mut q, 4) },
        CUDA_ERROR_CONTEXT_IS_DESTROYED,
    );
    // SAFETY: no pointers; nothing left to release.
    is(
        unsafe { cu::cuDevicePrimaryCtxRelease_v2(0) },
        CUDA_ERROR_INVALID_CONTEXT,
    );
    // Retained again, it is a working context under the same handle.
    assert_eq!(retain(), h);
    let p = alloc(4);
    ok(htod(p, &[5u32]));
    assert_eq!(read_u32(p, 1), [5]);
    // An ordinal the driver does not have.
    let mut c = CUcontext::default();
    // SAFETY: out-pointer.
    is(
        unsafe { cu::cuDevicePrimaryCtxRetain(&mut c, 1) },
        CUDA_ERROR_INVALID_DEVICE,
    );

    // Last, because nothing on device 0 works afterwards: a kernel using
    // a pointer of the destroyed context faults, and the fault poisons
    // the device for the rest of the process, as on the real driver.
    let store = emu_kernel("store_one");
    ok(launch(
        store,
        1,
        1,
        0,
        CUstream::default(),
        &[Arg::U64(old)],
    ));
    is(ctx_sync(), CUDA_ERROR_ILLEGAL_ADDRESS);
    is(htod(p, &[2u32]), CUDA_ERROR_ILLEGAL_ADDRESS);
    let mut m = CUmodule::default();
    // SAFETY: out-pointer; the image is never read (the context is poisoned).
    let rc = unsafe { cu::cuModuleLoadData(&mut m, c"".as_ptr().cast()) };
    is(rc, CUDA_ERROR_ILLEGAL_ADDRESS);
    // The reset succeeds but does not clear the fault: the replacement
    // context is poisoned and retaining the primary context returns the
    // fault (an H200 with driver 580.159.04 answered
    // cuDevicePrimaryCtxRetain so after the reset).
    // SAFETY: no pointers.
    ok(unsafe { cu::cuDevicePrimaryCtxReset_v2(0) });
    is(htod(p, &[2u32]), CUDA_ERROR_ILLEGAL_ADDRESS);
    // SAFETY: out-pointer.
    is(
        unsafe { cu::cuDevicePrimaryCtxRetain(&mut c, 0) },
        CUDA_ERROR_ILLEGAL_ADDRESS,
    );
}
