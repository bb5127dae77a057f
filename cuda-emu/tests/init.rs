//! Before `cuInit` every call but the version and error-string queries
//! answers `CUDA_ERROR_NOT_INITIALIZED`; `cuInit` takes no flags. One test:
//! it must run before anything in this process initialises the driver.

use ptxsmith_cuda_emu::exports as cu;

mod common;
use common::*;

#[test]
fn calls_before_cuinit_are_not_initialized() {
    let mut n = -1;
    // SAFETY: out-pointer.
    is(
        unsafe { cu::cuDeviceGetCount(&mut n) },
        CUDA_ERROR_NOT_INITIALIZED,
    );
    let mut c = CUcontext::default();
    // SAFETY: out-pointer.
    is(
        unsafe { cu::cuDevicePrimaryCtxRetain(&mut c, 0) },
        CUDA_ERROR_NOT_INITIALIZED,
    );
    let mut v = 0;
    // SAFETY: out-pointer; works without cuInit.
    ok(unsafe { cu::cuDriverGetVersion(&mut v) });
    assert_eq!(v, 12090);
    assert_eq!(
        error_name(CUDA_ERROR_NOT_INITIALIZED),
        "CUDA_ERROR_NOT_INITIALIZED"
    );
    // SAFETY: no pointers; flags must be 0.
    is(unsafe { cu::cuInit(1) }, CUDA_ERROR_INVALID_VALUE);
    init();
    // SAFETY: out-pointer.
    ok(unsafe { cu::cuDeviceGetCount(&mut n) });
    assert_eq!(n, 1);
    init();
}
