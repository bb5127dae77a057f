//! The per-thread-default-stream variants (`_ptsz` for calls that take a
//! stream, `_ptds` for synchronous copies and fills) that the driver
//! exports beside each call using the default stream, and that
//! `cuGetProcAddress` gives with `CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM`
//! (what code built with `--default-stream per-thread` calls). Each runs
//! its base entry point with the default stream (handle 0, and the stream
//! of synchronous copies and fills) meaning the calling thread's
//! per-thread default stream (`CU_STREAM_PER_THREAD`) instead of the
//! legacy stream; `CU_STREAM_LEGACY` given explicitly stays the legacy
//! stream. `cuMemcpyPeer_ptds` and `cuMemcpyPeerAsync_ptsz` on the
//! default stream still use the destination context's legacy stream.
//! Generated from the base signatures (the list: [`PER_THREAD_BASES`]).

#![allow(clippy::too_many_arguments)]

use std::ffi::{c_int, c_void};

use oxicuda_driver::ffi::{
    CUcontext, CUdevice, CUdeviceptr, CUevent, CUfunction, CUresult, CUstream,
};

use super::*;
use crate::driver::with_per_thread_default;

/// The entry points with a per-thread-default-stream variant, and its
/// suffix.
pub const PER_THREAD_BASES: &[(&str, &str)] = &[
    ("cuMemcpyAsync", "_ptsz"),
    ("cuMemcpyPeerAsync", "_ptsz"),
    ("cuMemcpyHtoDAsync_v2", "_ptsz"),
    ("cuMemcpyDtoHAsync_v2", "_ptsz"),
    ("cuMemcpyDtoDAsync_v2", "_ptsz"),
    ("cuMemcpy2DAsync_v2", "_ptsz"),
    ("cuMemsetD8Async", "_ptsz"),
    ("cuMemsetD16Async", "_ptsz"),
    ("cuMemsetD32Async", "_ptsz"),
    ("cuLaunchKernel", "_ptsz"),
    ("cuLaunchKernelEx", "_ptsz"),
    ("cuLaunchCooperativeKernel", "_ptsz"),
    ("cuLaunchHostFunc", "_ptsz"),
    ("cuStreamGetPriority", "_ptsz"),
    ("cuStreamGetFlags", "_ptsz"),
    ("cuStreamGetCtx", "_ptsz"),
    ("cuStreamWaitEvent", "_ptsz"),
    ("cuStreamAddCallback", "_ptsz"),
    ("cuStreamQuery", "_ptsz"),
    ("cuStreamSynchronize", "_ptsz"),
    ("cuStreamBeginCapture", "_ptsz"),
    ("cuStreamBeginCapture_v2", "_ptsz"),
    ("cuStreamEndCapture", "_ptsz"),
    ("cuStreamIsCapturing", "_ptsz"),
    ("cuStreamGetCaptureInfo", "_ptsz"),
    ("cuStreamGetCaptureInfo_v2", "_ptsz"),
    ("cuStreamGetCaptureInfo_v3", "_ptsz"),
    ("cuEventRecord", "_ptsz"),
    ("cuEventRecordWithFlags", "_ptsz"),
    ("cuMemAllocAsync", "_ptsz"),
    ("cuMemFreeAsync", "_ptsz"),
    ("cuGraphLaunch", "_ptsz"),
    ("cuGraphUpload", "_ptsz"),
    ("cuMemPrefetchAsync", "_ptsz"),
    ("cuMemcpy", "_ptds"),
    ("cuMemcpyPeer", "_ptds"),
    ("cuMemcpyHtoD_v2", "_ptds"),
    ("cuMemcpyDtoH_v2", "_ptds"),
    ("cuMemcpyDtoD_v2", "_ptds"),
    ("cuMemcpy2D_v2", "_ptds"),
    ("cuMemcpy2DUnaligned_v2", "_ptds"),
    ("cuMemsetD8_v2", "_ptds"),
    ("cuMemsetD16_v2", "_ptds"),
    ("cuMemsetD32_v2", "_ptds"),
];

/// [`cuMemcpyAsync`] with the per-thread default stream.
///
/// # Safety
/// As [`cuMemcpyAsync`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyAsync_ptsz(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    bytes: usize,
    stream: CUstream,
) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuMemcpyAsync(dst, src, bytes, stream) })
}

/// [`cuMemcpyPeerAsync`] with the per-thread default stream.
///
/// # Safety
/// As [`cuMemcpyPeerAsync`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyPeerAsync_ptsz(
    dst: CUdeviceptr,
    dst_ctx: CUcontext,
    src: CUdeviceptr,
    src_ctx: CUcontext,
    bytes: usize,
    stream: CUstream,
) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe {
        cuMemcpyPeerAsync(dst, dst_ctx, src, src_ctx, bytes, stream)
    })
}

/// [`cuMemcpyHtoDAsync_v2`] with the per-thread default stream.
///
/// # Safety
/// As [`cuMemcpyHtoDAsync_v2`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyHtoDAsync_v2_ptsz(
    dst: CUdeviceptr,
    src: *const c_void,
    bytes: usize,
    stream: CUstream,
) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuMemcpyHtoDAsync_v2(dst, src, bytes, stream) })
}

/// [`cuMemcpyDtoHAsync_v2`] with the per-thread default stream.
///
/// # Safety
/// As [`cuMemcpyDtoHAsync_v2`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyDtoHAsync_v2_ptsz(
    dst: *mut c_void,
    src: CUdeviceptr,
    bytes: usize,
    stream: CUstream,
) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuMemcpyDtoHAsync_v2(dst, src, bytes, stream) })
}

/// [`cuMemcpyDtoDAsync_v2`] with the per-thread default stream.
///
/// # Safety
/// As [`cuMemcpyDtoDAsync_v2`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyDtoDAsync_v2_ptsz(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    bytes: usize,
    stream: CUstream,
) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuMemcpyDtoDAsync_v2(dst, src, bytes, stream) })
}

/// [`cuMemcpy2DAsync_v2`] with the per-thread default stream.
///
/// # Safety
/// As [`cuMemcpy2DAsync_v2`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpy2DAsync_v2_ptsz(
    copy: *const Memcpy2D,
    stream: CUstream,
) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuMemcpy2DAsync_v2(copy, stream) })
}

/// [`cuMemsetD8Async`] with the per-thread default stream.
///
/// # Safety
/// As [`cuMemsetD8Async`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemsetD8Async_ptsz(
    dst: CUdeviceptr,
    value: u8,
    n: usize,
    s: CUstream,
) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuMemsetD8Async(dst, value, n, s) })
}

/// [`cuMemsetD16Async`] with the per-thread default stream.
///
/// # Safety
/// As [`cuMemsetD16Async`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemsetD16Async_ptsz(
    dst: CUdeviceptr,
    value: u16,
    n: usize,
    s: CUstream,
) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuMemsetD16Async(dst, value, n, s) })
}

/// [`cuMemsetD32Async`] with the per-thread default stream.
///
/// # Safety
/// As [`cuMemsetD32Async`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemsetD32Async_ptsz(
    dst: CUdeviceptr,
    value: u32,
    n: usize,
    s: CUstream,
) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuMemsetD32Async(dst, value, n, s) })
}

/// [`cuLaunchKernel`] with the per-thread default stream.
///
/// # Safety
/// As [`cuLaunchKernel`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLaunchKernel_ptsz(
    f: CUfunction,
    gx: u32,
    gy: u32,
    gz: u32,
    bx: u32,
    by: u32,
    bz: u32,
    smem: u32,
    stream: CUstream,
    kernel_params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe {
        cuLaunchKernel(
            f,
            gx,
            gy,
            gz,
            bx,
            by,
            bz,
            smem,
            stream,
            kernel_params,
            extra,
        )
    })
}

/// [`cuLaunchKernelEx`] with the per-thread default stream.
///
/// # Safety
/// As [`cuLaunchKernelEx`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLaunchKernelEx_ptsz(
    config: *const LaunchConfig,
    f: CUfunction,
    kernel_params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuLaunchKernelEx(config, f, kernel_params, extra) })
}

/// [`cuLaunchCooperativeKernel`] with the per-thread default stream.
///
/// # Safety
/// As [`cuLaunchCooperativeKernel`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLaunchCooperativeKernel_ptsz(
    f: CUfunction,
    gx: u32,
    gy: u32,
    gz: u32,
    bx: u32,
    by: u32,
    bz: u32,
    smem: u32,
    s: CUstream,
    params: *mut *mut c_void,
) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe {
        cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, smem, s, params)
    })
}

/// [`cuLaunchHostFunc`] with the per-thread default stream.
///
/// # Safety
/// As [`cuLaunchHostFunc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLaunchHostFunc_ptsz(
    s: CUstream,
    f: Option<unsafe extern "C" fn(*mut c_void)>,
    data: *mut c_void,
) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuLaunchHostFunc(s, f, data) })
}

/// [`cuStreamGetPriority`] with the per-thread default stream.
///
/// # Safety
/// As [`cuStreamGetPriority`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetPriority_ptsz(h: CUstream, priority: *mut c_int) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuStreamGetPriority(h, priority) })
}

/// [`cuStreamGetFlags`] with the per-thread default stream.
///
/// # Safety
/// As [`cuStreamGetFlags`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetFlags_ptsz(h: CUstream, flags: *mut u32) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuStreamGetFlags(h, flags) })
}

/// [`cuStreamGetCtx`] with the per-thread default stream.
///
/// # Safety
/// As [`cuStreamGetCtx`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetCtx_ptsz(h: CUstream, pctx: *mut CUcontext) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuStreamGetCtx(h, pctx) })
}

/// [`cuStreamWaitEvent`] with the per-thread default stream.
///
/// # Safety
/// As [`cuStreamWaitEvent`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamWaitEvent_ptsz(h: CUstream, ev: CUevent, flags: u32) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuStreamWaitEvent(h, ev, flags) })
}

/// [`cuStreamAddCallback`] with the per-thread default stream.
///
/// # Safety
/// As [`cuStreamAddCallback`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamAddCallback_ptsz(
    s: CUstream,
    callback: Option<unsafe extern "C" fn(*mut c_void, CUresult, *mut c_void)>,
    user_data: *mut c_void,
    flags: u32,
) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuStreamAddCallback(s, callback, user_data, flags) })
}

/// [`cuStreamQuery`] with the per-thread default stream.
///
/// # Safety
/// As [`cuStreamQuery`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamQuery_ptsz(h: CUstream) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuStreamQuery(h) })
}

/// [`cuStreamSynchronize`] with the per-thread default stream.
///
/// # Safety
/// As [`cuStreamSynchronize`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamSynchronize_ptsz(h: CUstream) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuStreamSynchronize(h) })
}

/// [`cuStreamBeginCapture`] with the per-thread default stream.
///
/// # Safety
/// As [`cuStreamBeginCapture`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamBeginCapture_ptsz(s: CUstream) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuStreamBeginCapture(s) })
}

/// [`cuStreamBeginCapture_v2`] with the per-thread default stream.
///
/// # Safety
/// As [`cuStreamBeginCapture_v2`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamBeginCapture_v2_ptsz(s: CUstream, mode: u32) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuStreamBeginCapture_v2(s, mode) })
}

/// [`cuStreamEndCapture`] with the per-thread default stream.
///
/// # Safety
/// As [`cuStreamEndCapture`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamEndCapture_ptsz(s: CUstream, graph: *mut *mut c_void) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuStreamEndCapture(s, graph) })
}

/// [`cuStreamIsCapturing`] with the per-thread default stream.
///
/// # Safety
/// As [`cuStreamIsCapturing`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamIsCapturing_ptsz(s: CUstream, status: *mut u32) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuStreamIsCapturing(s, status) })
}

/// [`cuStreamGetCaptureInfo`] with the per-thread default stream.
///
/// # Safety
/// As [`cuStreamGetCaptureInfo`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetCaptureInfo_ptsz(
    s: CUstream,
    status: *mut u32,
    id: *mut u64,
) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuStreamGetCaptureInfo(s, status, id) })
}

/// [`cuStreamGetCaptureInfo_v2`] with the per-thread default stream.
///
/// # Safety
/// As [`cuStreamGetCaptureInfo_v2`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetCaptureInfo_v2_ptsz(
    s: CUstream,
    status: *mut u32,
    id: *mut u64,
    graph: *mut *mut c_void,
    deps: *mut *const c_void,
    n_deps: *mut usize,
) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe {
        cuStreamGetCaptureInfo_v2(s, status, id, graph, deps, n_deps)
    })
}

/// [`cuStreamGetCaptureInfo_v3`] with the per-thread default stream.
///
/// # Safety
/// As [`cuStreamGetCaptureInfo_v3`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetCaptureInfo_v3_ptsz(
    s: CUstream,
    status: *mut u32,
    id: *mut u64,
    graph: *mut *mut c_void,
    deps: *mut *const c_void,
    edges: *mut *const c_void,
    n_deps: *mut usize,
) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe {
        cuStreamGetCaptureInfo_v3(s, status, id, graph, deps, edges, n_deps)
    })
}

/// [`cuEventRecord`] with the per-thread default stream.
///
/// # Safety
/// As [`cuEventRecord`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventRecord_ptsz(ev: CUevent, h: CUstream) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuEventRecord(ev, h) })
}

/// [`cuEventRecordWithFlags`] with the per-thread default stream.
///
/// # Safety
/// As [`cuEventRecordWithFlags`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventRecordWithFlags_ptsz(
    ev: CUevent,
    h: CUstream,
    flags: u32,
) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuEventRecordWithFlags(ev, h, flags) })
}

/// [`cuMemAllocAsync`] with the per-thread default stream.
///
/// # Safety
/// As [`cuMemAllocAsync`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocAsync_ptsz(
    dptr: *mut CUdeviceptr,
    bytes: usize,
    stream: CUstream,
) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuMemAllocAsync(dptr, bytes, stream) })
}

/// [`cuMemFreeAsync`] with the per-thread default stream.
///
/// # Safety
/// As [`cuMemFreeAsync`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemFreeAsync_ptsz(dptr: CUdeviceptr, stream: CUstream) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuMemFreeAsync(dptr, stream) })
}

/// [`cuGraphLaunch`] with the per-thread default stream.
///
/// # Safety
/// As [`cuGraphLaunch`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphLaunch_ptsz(exec: *mut c_void, s: CUstream) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuGraphLaunch(exec, s) })
}

/// [`cuGraphUpload`] with the per-thread default stream.
///
/// # Safety
/// As [`cuGraphUpload`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphUpload_ptsz(exec: *mut c_void, s: CUstream) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuGraphUpload(exec, s) })
}

/// [`cuMemPrefetchAsync`] with the per-thread default stream.
///
/// # Safety
/// As [`cuMemPrefetchAsync`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPrefetchAsync_ptsz(
    p: CUdeviceptr,
    n: usize,
    dev: CUdevice,
    s: CUstream,
) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuMemPrefetchAsync(p, n, dev, s) })
}

/// [`cuMemcpy`] with the per-thread default stream.
///
/// # Safety
/// As [`cuMemcpy`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpy_ptds(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    bytes: usize,
) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuMemcpy(dst, src, bytes) })
}

/// [`cuMemcpyPeer`] with the per-thread default stream.
///
/// # Safety
/// As [`cuMemcpyPeer`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyPeer_ptds(
    dst: CUdeviceptr,
    dst_ctx: CUcontext,
    src: CUdeviceptr,
    src_ctx: CUcontext,
    bytes: usize,
) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuMemcpyPeer(dst, dst_ctx, src, src_ctx, bytes) })
}

/// [`cuMemcpyHtoD_v2`] with the per-thread default stream.
///
/// # Safety
/// As [`cuMemcpyHtoD_v2`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyHtoD_v2_ptds(
    dst: CUdeviceptr,
    src: *const c_void,
    bytes: usize,
) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuMemcpyHtoD_v2(dst, src, bytes) })
}

/// [`cuMemcpyDtoH_v2`] with the per-thread default stream.
///
/// # Safety
/// As [`cuMemcpyDtoH_v2`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyDtoH_v2_ptds(
    dst: *mut c_void,
    src: CUdeviceptr,
    bytes: usize,
) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuMemcpyDtoH_v2(dst, src, bytes) })
}

/// [`cuMemcpyDtoD_v2`] with the per-thread default stream.
///
/// # Safety
/// As [`cuMemcpyDtoD_v2`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyDtoD_v2_ptds(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    bytes: usize,
) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuMemcpyDtoD_v2(dst, src, bytes) })
}

/// [`cuMemcpy2D_v2`] with the per-thread default stream.
///
/// # Safety
/// As [`cuMemcpy2D_v2`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpy2D_v2_ptds(copy: *const Memcpy2D) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuMemcpy2D_v2(copy) })
}

/// [`cuMemcpy2DUnaligned_v2`] with the per-thread default stream.
///
/// # Safety
/// As [`cuMemcpy2DUnaligned_v2`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpy2DUnaligned_v2_ptds(copy: *const Memcpy2D) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuMemcpy2DUnaligned_v2(copy) })
}

/// [`cuMemsetD8_v2`] with the per-thread default stream.
///
/// # Safety
/// As [`cuMemsetD8_v2`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemsetD8_v2_ptds(dst: CUdeviceptr, value: u8, n: usize) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuMemsetD8_v2(dst, value, n) })
}

/// [`cuMemsetD16_v2`] with the per-thread default stream.
///
/// # Safety
/// As [`cuMemsetD16_v2`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemsetD16_v2_ptds(dst: CUdeviceptr, value: u16, n: usize) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuMemsetD16_v2(dst, value, n) })
}

/// [`cuMemsetD32_v2`] with the per-thread default stream.
///
/// # Safety
/// As [`cuMemsetD32_v2`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemsetD32_v2_ptds(dst: CUdeviceptr, value: u32, n: usize) -> CUresult {
    // SAFETY: the caller's contract, passed on unchanged.
    with_per_thread_default(|| unsafe { cuMemsetD32_v2(dst, value, n) })
}
