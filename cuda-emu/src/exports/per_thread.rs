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
//! Generated from the base signatures by `per_thread!` (the list:
//! [`PER_THREAD_BASES`]).

#![allow(clippy::too_many_arguments)]

use std::ffi::{c_int, c_void};

use oxicuda_driver::ffi::{
    CUcontext, CUdevice, CUdeviceptr, CUevent, CUfunction, CUresult, CUstream,
};

use super::*;
use crate::driver::with_per_thread_default;

/// `base => variant(params);` for each entry: the exported `variant`,
/// which runs `base` with the per-thread default stream, and the row
/// `(base, suffix)` of [`PER_THREAD_BASES`].
macro_rules! per_thread {
    ($($base:ident => $name:ident($($arg:ident: $ty:ty),* $(,)?);)*) => {
        /// The entry points with a per-thread-default-stream variant, and
        /// its suffix (`_ptsz` or `_ptds`).
        pub const PER_THREAD_BASES: &[(&str, &str)] = &[$((
            stringify!($base),
            suffix(stringify!($base), stringify!($name)),
        )),*];
        $(
            #[doc = concat!("[`", stringify!($base), "`] with the per-thread default stream.")]
            ///
            /// # Safety
            #[doc = concat!("As [`", stringify!($base), "`].")]
            #[unsafe(no_mangle)]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> CUresult {
                // SAFETY: the caller's contract, passed on unchanged.
                with_per_thread_default(|| unsafe { $base($($arg),*) })
            }
        )*
    };
}

/// The suffix of `name` past `base`, checked at compile time: a variant is
/// its base's name and `_ptsz` or `_ptds`.
const fn suffix(base: &'static str, name: &'static str) -> &'static str {
    let (b, n) = (base.as_bytes(), name.as_bytes());
    assert!(
        n.len() == b.len() + 5,
        "a variant is its base and a 5-byte suffix"
    );
    let mut i = 0;
    while i < b.len() {
        assert!(b[i] == n[i], "a variant starts with its base's name");
        i += 1;
    }
    match name.split_at(b.len()).1.as_bytes() {
        b"_ptsz" => "_ptsz",
        b"_ptds" => "_ptds",
        _ => panic!("the suffix is _ptsz or _ptds"),
    }
}

per_thread! {
    cuMemcpyAsync => cuMemcpyAsync_ptsz(dst: CUdeviceptr, src: CUdeviceptr, bytes: usize, stream: CUstream);
    cuMemcpyPeerAsync => cuMemcpyPeerAsync_ptsz(dst: CUdeviceptr, dst_ctx: CUcontext, src: CUdeviceptr, src_ctx: CUcontext, bytes: usize, stream: CUstream);
    cuMemcpyHtoDAsync_v2 => cuMemcpyHtoDAsync_v2_ptsz(dst: CUdeviceptr, src: *const c_void, bytes: usize, stream: CUstream);
    cuMemcpyDtoHAsync_v2 => cuMemcpyDtoHAsync_v2_ptsz(dst: *mut c_void, src: CUdeviceptr, bytes: usize, stream: CUstream);
    cuMemcpyDtoDAsync_v2 => cuMemcpyDtoDAsync_v2_ptsz(dst: CUdeviceptr, src: CUdeviceptr, bytes: usize, stream: CUstream);
    cuMemcpy2DAsync_v2 => cuMemcpy2DAsync_v2_ptsz(copy: *const Memcpy2D, stream: CUstream);
    cuMemsetD8Async => cuMemsetD8Async_ptsz(dst: CUdeviceptr, value: u8, n: usize, s: CUstream);
    cuMemsetD16Async => cuMemsetD16Async_ptsz(dst: CUdeviceptr, value: u16, n: usize, s: CUstream);
    cuMemsetD32Async => cuMemsetD32Async_ptsz(dst: CUdeviceptr, value: u32, n: usize, s: CUstream);
    cuLaunchKernel => cuLaunchKernel_ptsz(f: CUfunction, gx: u32, gy: u32, gz: u32, bx: u32, by: u32, bz: u32, smem: u32, stream: CUstream, kernel_params: *mut *mut c_void, extra: *mut *mut c_void);
    cuLaunchKernelEx => cuLaunchKernelEx_ptsz(config: *const LaunchConfig, f: CUfunction, kernel_params: *mut *mut c_void, extra: *mut *mut c_void);
    cuLaunchCooperativeKernel => cuLaunchCooperativeKernel_ptsz(f: CUfunction, gx: u32, gy: u32, gz: u32, bx: u32, by: u32, bz: u32, smem: u32, s: CUstream, params: *mut *mut c_void);
    cuLaunchHostFunc => cuLaunchHostFunc_ptsz(s: CUstream, f: Option<unsafe extern "C" fn(*mut c_void)>, data: *mut c_void);
    cuStreamGetPriority => cuStreamGetPriority_ptsz(h: CUstream, priority: *mut c_int);
    cuStreamGetFlags => cuStreamGetFlags_ptsz(h: CUstream, flags: *mut u32);
    cuStreamGetCtx => cuStreamGetCtx_ptsz(h: CUstream, pctx: *mut CUcontext);
    cuStreamWaitEvent => cuStreamWaitEvent_ptsz(h: CUstream, ev: CUevent, flags: u32);
    cuStreamAddCallback => cuStreamAddCallback_ptsz(s: CUstream, callback: Option<unsafe extern "C" fn(*mut c_void, CUresult, *mut c_void)>, user_data: *mut c_void, flags: u32);
    cuStreamQuery => cuStreamQuery_ptsz(h: CUstream);
    cuStreamSynchronize => cuStreamSynchronize_ptsz(h: CUstream);
    cuStreamBeginCapture => cuStreamBeginCapture_ptsz(s: CUstream);
    cuStreamBeginCapture_v2 => cuStreamBeginCapture_v2_ptsz(s: CUstream, mode: u32);
    cuStreamEndCapture => cuStreamEndCapture_ptsz(s: CUstream, graph: *mut *mut c_void);
    cuStreamIsCapturing => cuStreamIsCapturing_ptsz(s: CUstream, status: *mut u32);
    cuStreamGetCaptureInfo => cuStreamGetCaptureInfo_ptsz(s: CUstream, status: *mut u32, id: *mut u64);
    cuStreamGetCaptureInfo_v2 => cuStreamGetCaptureInfo_v2_ptsz(s: CUstream, status: *mut u32, id: *mut u64, graph: *mut *mut c_void, deps: *mut *const c_void, n_deps: *mut usize);
    cuStreamGetCaptureInfo_v3 => cuStreamGetCaptureInfo_v3_ptsz(s: CUstream, status: *mut u32, id: *mut u64, graph: *mut *mut c_void, deps: *mut *const c_void, edges: *mut *const c_void, n_deps: *mut usize);
    cuEventRecord => cuEventRecord_ptsz(ev: CUevent, h: CUstream);
    cuEventRecordWithFlags => cuEventRecordWithFlags_ptsz(ev: CUevent, h: CUstream, flags: u32);
    cuMemAllocAsync => cuMemAllocAsync_ptsz(dptr: *mut CUdeviceptr, bytes: usize, stream: CUstream);
    cuMemFreeAsync => cuMemFreeAsync_ptsz(dptr: CUdeviceptr, stream: CUstream);
    cuGraphLaunch => cuGraphLaunch_ptsz(exec: *mut c_void, s: CUstream);
    cuGraphUpload => cuGraphUpload_ptsz(exec: *mut c_void, s: CUstream);
    cuMemPrefetchAsync => cuMemPrefetchAsync_ptsz(p: CUdeviceptr, n: usize, dev: CUdevice, s: CUstream);
    cuMemcpy => cuMemcpy_ptds(dst: CUdeviceptr, src: CUdeviceptr, bytes: usize);
    cuMemcpyPeer => cuMemcpyPeer_ptds(dst: CUdeviceptr, dst_ctx: CUcontext, src: CUdeviceptr, src_ctx: CUcontext, bytes: usize);
    cuMemcpyHtoD_v2 => cuMemcpyHtoD_v2_ptds(dst: CUdeviceptr, src: *const c_void, bytes: usize);
    cuMemcpyDtoH_v2 => cuMemcpyDtoH_v2_ptds(dst: *mut c_void, src: CUdeviceptr, bytes: usize);
    cuMemcpyDtoD_v2 => cuMemcpyDtoD_v2_ptds(dst: CUdeviceptr, src: CUdeviceptr, bytes: usize);
    cuMemcpy2D_v2 => cuMemcpy2D_v2_ptds(copy: *const Memcpy2D);
    cuMemcpy2DUnaligned_v2 => cuMemcpy2DUnaligned_v2_ptds(copy: *const Memcpy2D);
    cuMemsetD8_v2 => cuMemsetD8_v2_ptds(dst: CUdeviceptr, value: u8, n: usize);
    cuMemsetD16_v2 => cuMemsetD16_v2_ptds(dst: CUdeviceptr, value: u16, n: usize);
    cuMemsetD32_v2 => cuMemsetD32_v2_ptds(dst: CUdeviceptr, value: u32, n: usize);
}
