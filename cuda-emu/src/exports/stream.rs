//! Streams (CUDA Driver API §6.18) and events (§6.19).

use std::ffi::{c_int, c_void};

use oxicuda_driver::ffi::{CUcontext, CUevent, CUresult, CUstream};

use super::{guard, handle, put, raw};
use crate::driver;
use crate::error::*;
use crate::handles::Kind;
use crate::host::HostFn;

/// # Safety
/// `ph` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamCreate(ph: *mut CUstream, flags: u32) -> CUresult {
    guard("cuStreamCreate", || {
        if ph.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let h = driver::with(|d| d.stream_create(flags, 0))?;
        // SAFETY: the caller's contract for `ph`.
        unsafe { put(ph, CUstream(handle(h))) }
    })
}

/// # Safety
/// `ph` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamCreateWithPriority(
    ph: *mut CUstream,
    flags: u32,
    priority: c_int,
) -> CUresult {
    guard("cuStreamCreateWithPriority", || {
        if ph.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let h = driver::with(|d| d.stream_create(flags, priority))?;
        // SAFETY: the caller's contract for `ph`.
        unsafe { put(ph, CUstream(handle(h))) }
    })
}

/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamDestroy_v2(h: CUstream) -> CUresult {
    guard("cuStreamDestroy_v2", || {
        driver::with(|d| d.stream_destroy(raw(h.0)))
    })
}

/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamSynchronize(h: CUstream) -> CUresult {
    guard("cuStreamSynchronize", || {
        driver::with_sync(|d| d.stream_synchronize(raw(h.0)))
    })
}

/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamQuery(h: CUstream) -> CUresult {
    guard("cuStreamQuery", || {
        driver::with_sync(|d| d.stream_query(raw(h.0)))
    })
}

/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamWaitEvent(h: CUstream, ev: CUevent, flags: u32) -> CUresult {
    guard("cuStreamWaitEvent", || {
        driver::with(|d| d.stream_wait_event(raw(h.0), raw(ev.0), flags))
    })
}

/// # Safety
/// `priority` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetPriority(h: CUstream, priority: *mut c_int) -> CUresult {
    guard("cuStreamGetPriority", || {
        let (_, p) = driver::with(|d| d.stream_info(raw(h.0)))?;
        // SAFETY: the caller's contract for `priority`.
        unsafe { put(priority, p) }
    })
}

/// # Safety
/// `flags` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetFlags(h: CUstream, flags: *mut u32) -> CUresult {
    guard("cuStreamGetFlags", || {
        let (f, _) = driver::with(|d| d.stream_info(raw(h.0)))?;
        // SAFETY: the caller's contract for `flags`.
        unsafe { put(flags, f) }
    })
}

/// # Safety
/// `pctx` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetCtx(h: CUstream, pctx: *mut CUcontext) -> CUresult {
    guard("cuStreamGetCtx", || {
        let (ctx, _) = driver::with(|d| d.resolve_stream(raw(h.0), false))?;
        // SAFETY: the caller's contract for `pctx`.
        unsafe { put(pctx, CUcontext(handle(ctx))) }
    })
}

/// # Safety
/// `ph` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventCreate(ph: *mut CUevent, flags: u32) -> CUresult {
    guard("cuEventCreate", || {
        if ph.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let h = driver::with(|d| d.event_create(flags))?;
        // SAFETY: the caller's contract for `ph`.
        unsafe { put(ph, CUevent(handle(h))) }
    })
}

/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventDestroy_v2(ev: CUevent) -> CUresult {
    guard("cuEventDestroy_v2", || {
        driver::with(|d| d.event_destroy(raw(ev.0)))
    })
}

/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventRecord(ev: CUevent, h: CUstream) -> CUresult {
    guard("cuEventRecord", || {
        driver::with(|d| d.event_record(raw(ev.0), raw(h.0)))
    })
}

/// `CU_EVENT_RECORD_DEFAULT` (0) or `CU_EVENT_RECORD_EXTERNAL` (1, which
/// only matters under stream capture).
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventRecordWithFlags(ev: CUevent, h: CUstream, flags: u32) -> CUresult {
    guard("cuEventRecordWithFlags", || {
        if flags > 1 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        driver::with(|d| d.event_record(raw(ev.0), raw(h.0)))
    })
}

/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventQuery(ev: CUevent) -> CUresult {
    guard("cuEventQuery", || {
        driver::with_sync(|d| d.event_query(raw(ev.0)))
    })
}

/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventSynchronize(ev: CUevent) -> CUresult {
    guard("cuEventSynchronize", || {
        driver::with_sync(|d| d.event_synchronize(raw(ev.0)))
    })
}

/// # Safety
/// `ms` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventElapsedTime(
    ms: *mut f32,
    start: CUevent,
    end: CUevent,
) -> CUresult {
    guard("cuEventElapsedTime", || {
        if ms.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let v = driver::with(|d| {
            d.owner(raw(start.0), Kind::Event)?;
            d.event_elapsed(raw(start.0), raw(end.0))
        })?;
        // SAFETY: the caller's contract for `ms`.
        unsafe { put(ms, v) }
    })
}

/// `cuLaunchHostFunc`: `f(data)` runs when the stream reaches it (at a
/// synchronisation that waits for it, in the emulator's deferred model),
/// on a thread of its own, without the emulator's lock (it may call the
/// driver, though the driver documents that it must not); the stream's
/// later work waits until it has returned. A null `f` is
/// `CUDA_ERROR_INVALID_VALUE`.
///
/// # Safety
/// `f`, if given, may be called once with `data` from another thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLaunchHostFunc(
    s: CUstream,
    f: Option<unsafe extern "C" fn(*mut c_void)>,
    data: *mut c_void,
) -> CUresult {
    guard("cuLaunchHostFunc", || {
        let f = f.ok_or(CUDA_ERROR_INVALID_VALUE)?;
        // SAFETY: the caller's contract for `f` and `data`.
        let call = unsafe { HostFn::func(f, data) };
        driver::with(|d| d.launch_host_function(raw(s.0), call))
    })
}

/// `cuStreamAddCallback`: as `cuLaunchHostFunc`, the callback getting the
/// stream handle as given, `CUDA_SUCCESS` and `user_data`. Flags other
/// than 0 and a null callback are `CUDA_ERROR_INVALID_VALUE`. (A stream
/// whose work a device fault dropped drops its callbacks too.)
///
/// # Safety
/// `callback`, if given, may be called once from another thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamAddCallback(
    s: CUstream,
    callback: Option<unsafe extern "C" fn(*mut c_void, CUresult, *mut c_void)>,
    user_data: *mut c_void,
    flags: u32,
) -> CUresult {
    guard("cuStreamAddCallback", || {
        if flags != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let f = callback.ok_or(CUDA_ERROR_INVALID_VALUE)?;
        // SAFETY: the caller's contract for `callback` and `user_data`.
        let call = unsafe { HostFn::callback(f, s.0, user_data) };
        driver::with(|d| d.launch_host_function(raw(s.0), call))
    })
}
