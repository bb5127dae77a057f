//! Entry points the driver loaders resolve eagerly (or common clients
//! call) for features the emulator does not have. Each answers
//! `CUDA_ERROR_NOT_SUPPORTED` (or, where the feature's absence has a
//! documented answer, that answer) after its usual argument checks.

use std::ffi::c_void;

use oxicuda_driver::ffi::{CUdevice, CUdeviceptr, CUfunction, CUresult, CUstream};

use super::guard;
use crate::driver;
use crate::error::*;

fn unsupported(name: &str) -> CUresult {
    guard(name, || {
        driver::with(|_| Ok(()))?;
        Err(CUDA_ERROR_NOT_SUPPORTED)
    })
}

/// Managed memory: the host cannot address simulated device memory.
///
/// # Safety
/// No memory is touched.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocManaged(
    _dptr: *mut CUdeviceptr,
    _bytes: usize,
    _flags: u32,
) -> CUresult {
    unsupported("cuMemAllocManaged")
}

/// Mapped host memory: kernels cannot read host memory.
///
/// # Safety
/// No memory is touched.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemHostGetDevicePointer_v2(
    _pdptr: *mut CUdeviceptr,
    _p: *mut c_void,
    _flags: u32,
) -> CUresult {
    unsupported("cuMemHostGetDevicePointer_v2")
}

/// Managed-memory advice.
///
/// # Safety
/// No memory is touched.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAdvise(
    _p: CUdeviceptr,
    _n: usize,
    _advice: u32,
    _dev: CUdevice,
) -> CUresult {
    unsupported("cuMemAdvise")
}

/// Managed-memory prefetch.
///
/// # Safety
/// No memory is touched.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPrefetchAsync(
    _p: CUdeviceptr,
    _n: usize,
    _dev: CUdevice,
    _s: CUstream,
) -> CUresult {
    unsupported("cuMemPrefetchAsync")
}

/// Cooperative launches (grid-wide synchronisation).
///
/// # Safety
/// No memory is touched.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLaunchCooperativeKernel(
    _f: CUfunction,
    _gx: u32,
    _gy: u32,
    _gz: u32,
    _bx: u32,
    _by: u32,
    _bz: u32,
    _smem: u32,
    _s: CUstream,
    _params: *mut *mut c_void,
) -> CUresult {
    unsupported("cuLaunchCooperativeKernel")
}

/// # Safety
/// No memory is touched.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLaunchCooperativeKernelMultiDevice(
    _list: *mut c_void,
    _n: u32,
    _flags: u32,
) -> CUresult {
    unsupported("cuLaunchCooperativeKernelMultiDevice")
}

/// Profiler markers: nothing to profile; they need a current context, as
/// the driver's (`CUDA_ERROR_INVALID_CONTEXT` without one).
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuProfilerStart() -> CUresult {
    guard("cuProfilerStart", || {
        driver::with(|d| d.current_ctx().map(drop))
    })
}

/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuProfilerStop() -> CUresult {
    guard("cuProfilerStop", || {
        driver::with(|d| d.current_ctx().map(drop))
    })
}
