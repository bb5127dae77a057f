//! Stream capture and graphs (CUDA Driver API §6.18, §6.24): see
//! `crate::graph` for what is recorded and the rules for illegal calls
//! during capture.

use std::ffi::c_void;

use oxicuda_driver::ffi::{CUresult, CUstream};

use super::{guard, handle, put, raw};
use crate::driver;
use crate::error::*;

/// `cuStreamBeginCapture_v2`: modes `CU_STREAM_CAPTURE_MODE_GLOBAL` (0),
/// `THREAD_LOCAL` (1), `RELAXED` (2); not on the legacy stream
/// (`CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`), not twice
/// (`CUDA_ERROR_ILLEGAL_STATE`).
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamBeginCapture_v2(s: CUstream, mode: u32) -> CUresult {
    guard("cuStreamBeginCapture_v2", || {
        driver::with(|d| d.begin_capture(raw(s.0), mode))
    })
}

/// `cuStreamBeginCapture` (CUDA 10.0, no mode): global mode.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamBeginCapture(s: CUstream) -> CUresult {
    guard("cuStreamBeginCapture", || {
        driver::with(|d| d.begin_capture(raw(s.0), 0))
    })
}

/// `cuStreamEndCapture`: `*graph` is the captured graph, or null with
/// `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED` (the capture ended);
/// `CUDA_ERROR_ILLEGAL_STATE` when the stream does not capture;
/// `CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD` for a thread-local capture
/// ended on another thread.
///
/// # Safety
/// `graph` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamEndCapture(s: CUstream, graph: *mut *mut c_void) -> CUresult {
    guard("cuStreamEndCapture", || {
        if graph.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let r = driver::with(|d| d.end_capture(raw(s.0)));
        if r == Err(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) {
            // SAFETY: the caller's contract for `graph`.
            unsafe { put(graph, std::ptr::null_mut())? };
        }
        let g = r?;
        // SAFETY: as above.
        unsafe { put(graph, handle(g)) }
    })
}

/// `cuStreamIsCapturing`: `CU_STREAM_CAPTURE_STATUS_NONE` (0), `ACTIVE`
/// (1) or `INVALIDATED` (2); the legacy stream while a blocking stream
/// captures is `CUDA_ERROR_STREAM_CAPTURE_IMPLICIT`.
///
/// # Safety
/// `status` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamIsCapturing(s: CUstream, status: *mut u32) -> CUresult {
    guard("cuStreamIsCapturing", || {
        if status.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let (st, _, _) = driver::with(|d| d.capture_info(raw(s.0)))?;
        // SAFETY: the caller's contract for `status`.
        unsafe { put(status, st) }
    })
}

/// The common part of the `cuStreamGetCaptureInfo` versions: status
/// (required), id, graph, and an empty dependency set (a graph is one
/// chain here; its nodes are not handed out).
///
/// # Safety
/// Each pointer null or writable.
unsafe fn capture_info(
    s: CUstream,
    status: *mut u32,
    id: *mut u64,
    graph: *mut *mut c_void,
    deps: *mut *const c_void,
    edges: *mut *const c_void,
    n_deps: *mut usize,
) -> Res<()> {
    if status.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let (st, cid, g) = driver::with(|d| d.capture_info(raw(s.0)))?;
    // SAFETY: the caller's contract for each out-pointer.
    unsafe {
        put(status, st)?;
        if st == crate::graph::STATUS_ACTIVE || st == crate::graph::STATUS_INVALIDATED {
            if !id.is_null() {
                put(id, cid)?;
            }
            if !graph.is_null() {
                put(graph, handle(g))?;
            }
            if !deps.is_null() {
                put(deps, std::ptr::null())?;
            }
            if !edges.is_null() {
                put(edges, std::ptr::null())?;
            }
            if !n_deps.is_null() {
                put(n_deps, 0)?;
            }
        }
    }
    Ok(())
}

/// `cuStreamGetCaptureInfo` (CUDA 11.0 form): status and id.
///
/// # Safety
/// `status` writable; `id` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetCaptureInfo(
    s: CUstream,
    status: *mut u32,
    id: *mut u64,
) -> CUresult {
    guard("cuStreamGetCaptureInfo", || {
        let n = std::ptr::null_mut();
        // SAFETY: the caller's contract.
        unsafe { capture_info(s, status, id, n, n.cast(), n.cast(), n.cast()) }
    })
}

/// `cuStreamGetCaptureInfo_v2`: status, id, the graph being captured
/// into, and no dependency nodes (null, 0).
///
/// # Safety
/// `status` writable; the others null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetCaptureInfo_v2(
    s: CUstream,
    status: *mut u32,
    id: *mut u64,
    graph: *mut *mut c_void,
    deps: *mut *const c_void,
    n_deps: *mut usize,
) -> CUresult {
    guard("cuStreamGetCaptureInfo_v2", || {
        // SAFETY: the caller's contract.
        unsafe { capture_info(s, status, id, graph, deps, std::ptr::null_mut(), n_deps) }
    })
}

/// `cuStreamGetCaptureInfo_v3`: as `_v2`, with no edge data (null).
///
/// # Safety
/// `status` writable; the others null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetCaptureInfo_v3(
    s: CUstream,
    status: *mut u32,
    id: *mut u64,
    graph: *mut *mut c_void,
    deps: *mut *const c_void,
    edges: *mut *const c_void,
    n_deps: *mut usize,
) -> CUresult {
    guard("cuStreamGetCaptureInfo_v3", || {
        // SAFETY: the caller's contract.
        unsafe { capture_info(s, status, id, graph, deps, edges, n_deps) }
    })
}

/// `cuGraphInstantiateWithFlags`: see `Driver::graph_instantiate` for the
/// flags; an unknown graph is `CUDA_ERROR_INVALID_VALUE`.
///
/// # Safety
/// `exec` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphInstantiateWithFlags(
    exec: *mut *mut c_void,
    graph: *mut c_void,
    flags: u64,
) -> CUresult {
    guard("cuGraphInstantiateWithFlags", || {
        if exec.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let e = driver::with(|d| d.graph_instantiate(raw(graph), flags))?;
        // SAFETY: the caller's contract for `exec`.
        unsafe { put(exec, handle(e)) }
    })
}

/// `cuGraphLaunch`: the recorded operations are queued on the stream in
/// order (`CUDA_ERROR_INVALID_VALUE` for an unknown executable graph or a
/// stream of another context).
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphLaunch(exec: *mut c_void, s: CUstream) -> CUresult {
    guard("cuGraphLaunch", || {
        driver::with(|d| d.graph_launch(raw(exec), raw(s.0), true))
    })
}

/// `cuGraphUpload`: checked as `cuGraphLaunch`; nothing to upload.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphUpload(exec: *mut c_void, s: CUstream) -> CUresult {
    guard("cuGraphUpload", || {
        driver::with(|d| d.graph_launch(raw(exec), raw(s.0), false))
    })
}

/// `cuGraphExecDestroy` (launches already queued keep their operations).
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphExecDestroy(exec: *mut c_void) -> CUresult {
    guard("cuGraphExecDestroy", || {
        driver::with(|d| d.graph_exec_destroy(raw(exec)))
    })
}

/// `cuGraphDestroy` (executable graphs made of it live on).
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphDestroy(graph: *mut c_void) -> CUresult {
    guard("cuGraphDestroy", || {
        driver::with(|d| d.graph_destroy(raw(graph)))
    })
}
