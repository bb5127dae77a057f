//! Primary contexts and contexts (CUDA Driver API §6.7, §6.8).

use std::ffi::{c_int, c_void};

use oxicuda_driver::ffi::{CUcontext, CUdevice, CUresult};

use super::{guard, handle, put, raw};
use crate::driver;
use crate::error::*;
use crate::handles::Kind;

/// # Safety
/// `pctx` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevicePrimaryCtxRetain(pctx: *mut CUcontext, dev: CUdevice) -> CUresult {
    guard("cuDevicePrimaryCtxRetain", || {
        if pctx.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let h = driver::with(|d| d.primary_retain(dev))?;
        // SAFETY: the caller's contract for `pctx`.
        unsafe { put(pctx, CUcontext(handle(h))) }
    })
}

/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevicePrimaryCtxRelease_v2(dev: CUdevice) -> CUresult {
    guard("cuDevicePrimaryCtxRelease_v2", || {
        driver::with(|d| d.primary_release(dev))
    })
}

/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevicePrimaryCtxReset_v2(dev: CUdevice) -> CUresult {
    guard("cuDevicePrimaryCtxReset_v2", || {
        driver::with(|d| d.primary_reset(dev))
    })
}

/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevicePrimaryCtxSetFlags_v2(dev: CUdevice, flags: u32) -> CUresult {
    guard("cuDevicePrimaryCtxSetFlags_v2", || {
        driver::with(|d| d.primary_set_flags(dev, flags))
    })
}

/// # Safety
/// `flags` and `active` are null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevicePrimaryCtxGetState(
    dev: CUdevice,
    flags: *mut u32,
    active: *mut c_int,
) -> CUresult {
    guard("cuDevicePrimaryCtxGetState", || {
        let (f, a) = driver::with(|d| d.primary_state(dev))?;
        // SAFETY: the caller's contract for both.
        unsafe {
            put(flags, f)?;
            put(active, c_int::from(a))
        }
    })
}

/// # Safety
/// `pctx` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxCreate_v2(
    pctx: *mut CUcontext,
    flags: u32,
    dev: CUdevice,
) -> CUresult {
    guard("cuCtxCreate_v2", || {
        // SAFETY: the caller's contract for `pctx`.
        unsafe { ctx_create(pctx, flags, dev) }
    })
}

/// `CUctxCreateParams` (`cuda.h`, CUDA 12.5+).
#[repr(C)]
pub struct CtxCreateParams {
    pub exec_affinity_params: *mut c_void,
    pub num_exec_affinity_params: c_int,
    pub cig_params: *mut c_void,
}

/// `cuCtxCreate_v3`: execution affinity (an SM count for the context)
/// needs MPS on a real GPU and is not offered here: `numParams > 0` is
/// `CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY`, a negative count or a null
/// array with a positive one `CUDA_ERROR_INVALID_VALUE`; with no
/// parameters it is `cuCtxCreate_v2`.
///
/// # Safety
/// `pctx` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxCreate_v3(
    pctx: *mut CUcontext,
    params: *mut c_void,
    num_params: c_int,
    flags: u32,
    dev: CUdevice,
) -> CUresult {
    guard("cuCtxCreate_v3", || {
        check_affinity(params, num_params)?;
        // SAFETY: the caller's contract for `pctx`.
        unsafe { ctx_create(pctx, flags, dev) }
    })
}

/// `cuCtxCreate_v4`: null `ctxCreateParams` is `cuCtxCreate_v2`; execution
/// affinity as in `cuCtxCreate_v3`; CUDA-in-graphics parameters
/// (`cigParams`, a graphics API's command queue) are
/// `CUDA_ERROR_NOT_SUPPORTED`.
///
/// # Safety
/// `pctx` is null or valid for a write; `params` is null or points to a
/// `CUctxCreateParams`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxCreate_v4(
    pctx: *mut CUcontext,
    params: *mut CtxCreateParams,
    flags: u32,
    dev: CUdevice,
) -> CUresult {
    guard("cuCtxCreate_v4", || {
        if !params.is_null() {
            // SAFETY: the caller's contract: a `CUctxCreateParams`.
            let p = unsafe { params.read_unaligned() };
            check_affinity(p.exec_affinity_params, p.num_exec_affinity_params)?;
            if !p.cig_params.is_null() {
                driver::with(|d| d.device(dev).map(drop))?;
                return Err(CUDA_ERROR_NOT_SUPPORTED);
            }
        }
        // SAFETY: the caller's contract for `pctx`.
        unsafe { ctx_create(pctx, flags, dev) }
    })
}

/// Execution-affinity parameters: none may be asked for.
fn check_affinity(params: *mut c_void, n: c_int) -> Res<()> {
    match n {
        0 => Ok(()),
        n if n < 0 || params.is_null() => Err(CUDA_ERROR_INVALID_VALUE),
        _ => Err(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY),
    }
}

/// The common part of the `cuCtxCreate` versions.
///
/// # Safety
/// `pctx` is null or valid for a write.
unsafe fn ctx_create(pctx: *mut CUcontext, flags: u32, dev: CUdevice) -> Res<()> {
    if pctx.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let h = driver::with(|d| d.ctx_create(flags, dev))?;
    // SAFETY: the caller's contract for `pctx`.
    unsafe { put(pctx, CUcontext(handle(h))) }
}

/// # Safety
/// No pointer arguments (the handle is a value).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxDestroy_v2(ctx: CUcontext) -> CUresult {
    guard("cuCtxDestroy_v2", || {
        driver::with(|d| d.ctx_destroy(raw(ctx.0)))
    })
}

/// A context handle that may be bound to a thread: a live context or a
/// primary context (active or not).
fn bindable(d: &driver::Driver, h: u64) -> Res<()> {
    if h >> 48 != Kind::Context as u64 {
        return Err(CUDA_ERROR_INVALID_CONTEXT);
    }
    if d.contexts.contains_key(&h) || d.devices.iter().any(|x| x.primary == h) {
        return Ok(());
    }
    d.check_ctx(h)
}

/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxSetCurrent(ctx: CUcontext) -> CUresult {
    guard("cuCtxSetCurrent", || {
        let h = raw(ctx.0);
        driver::with(|d| if h == 0 { Ok(()) } else { bindable(d, h) })?;
        driver::set_current(h);
        Ok(())
    })
}

/// # Safety
/// `pctx` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetCurrent(pctx: *mut CUcontext) -> CUresult {
    guard("cuCtxGetCurrent", || {
        driver::with(|_| Ok(()))?;
        let h = driver::current().unwrap_or(0);
        // SAFETY: the caller's contract for `pctx`.
        unsafe { put(pctx, CUcontext(handle(h))) }
    })
}

/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxPushCurrent_v2(ctx: CUcontext) -> CUresult {
    guard("cuCtxPushCurrent_v2", || {
        let h = raw(ctx.0);
        driver::with(|d| bindable(d, h))?;
        driver::push_current(h);
        Ok(())
    })
}

/// # Safety
/// `pctx` is null (the popped context is not returned) or valid for a
/// write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxPopCurrent_v2(pctx: *mut CUcontext) -> CUresult {
    guard("cuCtxPopCurrent_v2", || {
        driver::with(|_| Ok(()))?;
        let h = driver::pop_current().ok_or(CUDA_ERROR_INVALID_CONTEXT)?;
        if pctx.is_null() {
            return Ok(());
        }
        // SAFETY: non-null, the caller's contract.
        unsafe { put(pctx, CUcontext(handle(h))) }
    })
}

/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxSynchronize() -> CUresult {
    guard("cuCtxSynchronize", || {
        driver::with_sync(|d| d.ctx_synchronize())
    })
}

/// # Safety
/// `device` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetDevice(device: *mut CUdevice) -> CUresult {
    guard("cuCtxGetDevice", || {
        let v = driver::with(|d| d.ctx_device())?;
        // SAFETY: the caller's contract for `device`.
        unsafe { put(device, v) }
    })
}

/// # Safety
/// `flags` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetFlags(flags: *mut u32) -> CUresult {
    guard("cuCtxGetFlags", || {
        let v = driver::with(|d| Ok(d.contexts[&d.current_handle()?].flags))?;
        // SAFETY: the caller's contract for `flags`.
        unsafe { put(flags, v) }
    })
}

/// # Safety
/// `version` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetApiVersion(ctx: CUcontext, version: *mut u32) -> CUresult {
    guard("cuCtxGetApiVersion", || {
        let h = raw(ctx.0);
        driver::with(|d| {
            if h == 0 {
                d.current_handle().map(drop)
            } else {
                d.check_ctx(h)
            }
        })?;
        // SAFETY: the caller's contract for `version`.
        unsafe { put(version, 3020) }
    })
}

/// # Safety
/// `least` and `greatest` are null (not written) or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetStreamPriorityRange(
    least: *mut c_int,
    greatest: *mut c_int,
) -> CUresult {
    guard("cuCtxGetStreamPriorityRange", || {
        driver::with(|d| d.current_handle().map(drop))?;
        let (l, g) = crate::stream::PRIORITY_RANGE;
        // SAFETY: each is null (skipped) or valid for a write.
        unsafe {
            if !least.is_null() {
                put(least, l)?;
            }
            if !greatest.is_null() {
                put(greatest, g)?;
            }
        }
        Ok(())
    })
}

/// Defaults of `cuCtxGetLimit` (`CUlimit`): stack, printf FIFO, malloc
/// heap, runtime sync depth, pending launches, L2 fetch granularity,
/// persisting L2.
fn limit_default(limit: u32) -> Res<usize> {
    Ok(match limit {
        0 => 1024,
        1 => 1 << 20,
        2 => 8 << 20,
        3 => 2,
        4 => 2048,
        5 => 64,
        6 => 0,
        _ => return Err(oxicuda_driver::ffi::CUDA_ERROR_UNSUPPORTED_LIMIT),
    })
}

/// # Safety
/// `value` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetLimit(value: *mut usize, limit: u32) -> CUresult {
    guard("cuCtxGetLimit", || {
        let v = driver::with(|d| {
            let def = limit_default(limit)?;
            let c = d.current_ctx()?;
            Ok(c.limits.get(&limit).copied().unwrap_or(def))
        })?;
        // SAFETY: the caller's contract for `value`.
        unsafe { put(value, v) }
    })
}

/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxSetLimit(limit: u32, value: usize) -> CUresult {
    guard("cuCtxSetLimit", || {
        driver::with(|d| {
            limit_default(limit)?;
            d.current_ctx()?.limits.insert(limit, value);
            Ok(())
        })
    })
}

/// # Safety
/// `config` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetCacheConfig(config: *mut u32) -> CUresult {
    guard("cuCtxGetCacheConfig", || {
        driver::with(|d| d.current_ctx().map(drop))?;
        // SAFETY: the caller's contract for `config`.
        unsafe { put(config, 0) }
    })
}

/// Accepted (`CU_FUNC_CACHE_PREFER_*`, 0..=3) and ignored.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxSetCacheConfig(config: u32) -> CUresult {
    guard("cuCtxSetCacheConfig", || {
        driver::with(|d| d.current_ctx().map(drop))?;
        if config > 3 {
            Err(CUDA_ERROR_INVALID_VALUE)
        } else {
            Ok(())
        }
    })
}

/// # Safety
/// `config` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetSharedMemConfig(config: *mut u32) -> CUresult {
    guard("cuCtxGetSharedMemConfig", || {
        driver::with(|d| d.current_ctx().map(drop))?;
        // SAFETY: the caller's contract for `config`.
        unsafe { put(config, 0) }
    })
}

/// Accepted (`CUsharedconfig`, 0..=2) and ignored.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxSetSharedMemConfig(config: u32) -> CUresult {
    guard("cuCtxSetSharedMemConfig", || {
        driver::with(|d| d.current_ctx().map(drop))?;
        if config > 2 {
            Err(CUDA_ERROR_INVALID_VALUE)
        } else {
            Ok(())
        }
    })
}

/// Peer access is not supported between emulated devices
/// (`cuDeviceCanAccessPeer` says 0).
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxEnablePeerAccess(peer: CUcontext, flags: u32) -> CUresult {
    guard("cuCtxEnablePeerAccess", || {
        driver::with(|d| {
            d.current_ctx()?;
            d.check_ctx(raw(peer.0))
        })?;
        if flags != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        Err(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED)
    })
}

/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxDisablePeerAccess(peer: CUcontext) -> CUresult {
    guard("cuCtxDisablePeerAccess", || {
        driver::with(|d| {
            d.current_ctx()?;
            d.check_ctx(raw(peer.0))
        })?;
        Err(oxicuda_driver::ffi::CUDA_ERROR_PEER_ACCESS_NOT_ENABLED)
    })
}
