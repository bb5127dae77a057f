//! Symbol lookup by clients that do not `dlsym` every entry point:
//! `cuGetProcAddress` / `cuGetProcAddress_v2` (the CUDA runtime and
//! cuda-python resolve the driver this way) and `cuGetExportTable` (the
//! private tables NVRTC and other toolkit libraries ask for).

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;

use oxicuda_driver::ffi::CUresult;

use super::*;
use crate::error::*;

/// `CU_GET_PROC_ADDRESS_LEGACY_STREAM` and `_PER_THREAD_DEFAULT_STREAM`
/// (`CU_GET_PROC_ADDRESS_DEFAULT` is 0).
const LEGACY_STREAM: u64 = 1;
const PER_THREAD_DEFAULT_STREAM: u64 = 2;

/// `CUdriverProcAddressQueryResult`.
pub const PROC_SUCCESS: c_int = 0;
pub const PROC_SYMBOL_NOT_FOUND: c_int = 1;
pub const PROC_VERSION_NOT_SUFFICIENT: c_int = 2;

/// One exported entry point: its symbol, the base name clients ask
/// `cuGetProcAddress` for, the CUDA version (`1000 * major + 10 * minor`)
/// that introduced this symbol, and its address.
pub struct Symbol {
    pub name: &'static str,
    pub base: &'static str,
    pub since: c_int,
    pub addr: usize,
}

/// The CUDA version that introduced `name` (its `_vN` symbol for a
/// versioned one): `cuda.h`'s `__CUDA_API_VERSION` history for the
/// versioned symbols; base names 2.0 unless listed.
fn since(name: &str) -> c_int {
    match name {
        "cuCtxCreate_v3" | "cuDeviceGetUuid_v2" => 11040,
        "cuCtxCreate_v4" => 12050,
        "cuGetProcAddress_v2" => 12000,
        "cuGetProcAddress" => 11030,
        "cuCtxDestroy_v2"
        | "cuCtxPopCurrent_v2"
        | "cuCtxPushCurrent_v2"
        | "cuStreamDestroy_v2"
        | "cuEventDestroy_v2" => 4000,
        "cuMemHostRegister_v2" => 6050,
        "cuDevicePrimaryCtxRelease_v2"
        | "cuDevicePrimaryCtxReset_v2"
        | "cuDevicePrimaryCtxSetFlags_v2" => 11000,
        "cuStreamBeginCapture_v2" => 10010,
        "cuStreamBeginCapture"
        | "cuStreamEndCapture"
        | "cuGraphLaunch"
        | "cuGraphExecDestroy"
        | "cuGraphDestroy" => 10000,
        "cuStreamGetCaptureInfo" => 10010,
        "cuStreamGetCaptureInfo_v2" => 11030,
        "cuStreamGetCaptureInfo_v3" => 12030,
        "cuGraphInstantiateWithFlags" => 11040,
        "cuGraphUpload" => 11010,
        "cuEventRecordWithFlags" => 11010,
        "cuMemAllocAsync" | "cuMemFreeAsync" => 11020,
        "cuLibraryLoadData"
        | "cuLibraryLoadFromFile"
        | "cuLibraryUnload"
        | "cuLibraryGetKernel"
        | "cuLibraryGetModule"
        | "cuLibraryGetGlobal"
        | "cuKernelGetFunction"
        | "cuKernelGetAttribute"
        | "cuKernelSetAttribute" => 12000,
        // cuda-bindings 12.9 asks for it at 11.6 (driver_linux.pyx)
        "cuLaunchKernelEx" => 11060,
        "cuKernelGetName" => 12030,
        "cuLibraryGetKernelCount"
        | "cuLibraryEnumerateKernels"
        | "cuKernelGetParamInfo"
        | "cuFuncGetParamInfo" => 12040,
        "cuKernelGetLibrary" => 12050,
        "cuTensorMapEncodeTiled" => 12000,
        "cuLinkCreate_v2" | "cuLinkAddData_v2" | "cuLinkAddFile_v2" => 6050,
        "cuLinkCreate" | "cuLinkAddData" | "cuLinkAddFile" | "cuLinkComplete" | "cuLinkDestroy" => {
            5050
        }
        "cuLaunchHostFunc" | "cuStreamIsCapturing" => 10000,
        "cuStreamGetCtx" | "cuDeviceGetUuid" => 9020,
        "cuLaunchCooperativeKernel"
        | "cuLaunchCooperativeKernelMultiDevice"
        | "cuFuncSetAttribute" => 9000,
        "cuMemAdvise" | "cuMemPrefetchAsync" => 8000,
        "cuPointerGetAttributes" | "cuDevicePrimaryCtxRetain" | "cuDevicePrimaryCtxGetState" => {
            7000
        }
        "cuOccupancyMaxActiveBlocksPerMultiprocessor"
        | "cuOccupancyMaxPotentialBlockSize"
        | "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags" => 6050,
        "cuMemAllocManaged" => 6000,
        "cuStreamCreateWithPriority" | "cuCtxGetStreamPriorityRange" | "cuStreamGetPriority" => {
            5050
        }
        "cuStreamAddCallback" | "cuStreamGetFlags" => 5000,
        "cuGetExportTable" | "cuCtxGetApiVersion" => 3000,
        n if n.ends_with("_v2") => 3020,
        n if [
            "cuMemcpyPeer",
            "cuCtxEnablePeerAccess",
            "cuCtxDisablePeerAccess",
            "cuDeviceCanAccessPeer",
            "cuMemHostUnregister",
            "cuMemcpy",
            "cuMemcpyAsync",
            "cuPointerGetAttribute",
            "cuCtxSetCurrent",
            "cuCtxGetCurrent",
            "cuProfilerStart",
            "cuProfilerStop",
            "cuLaunchKernel",
        ]
        .iter()
        .any(|m| n.starts_with(m)) =>
        {
            4000
        }
        _ => 2000,
    }
}

/// `name` without a `_vN` suffix.
fn base(name: &str) -> &str {
    match name.rsplit_once("_v") {
        Some((b, n)) if !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()) => b,
        _ => name,
    }
}

/// Whether `name` is a per-thread-default-stream variant (`_ptsz`,
/// `_ptds`): `cuGetProcAddress` gives those for their base name under
/// `CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM`, never by their own.
fn is_per_thread_variant(name: &str) -> bool {
    name.ends_with("_ptsz") || name.ends_with("_ptds")
}

/// The per-thread-default-stream variant of export `name`, if it has one.
fn per_thread_variant(name: &str) -> Option<&'static Symbol> {
    let (_, suffix) = super::PER_THREAD_BASES.iter().find(|(b, _)| *b == name)?;
    let full = format!("{name}{suffix}");
    symbols().iter().find(|s| s.name == full)
}

macro_rules! symbols {
    ($($f:ident),* $(,)?) => {
        vec![$(Symbol {
            name: stringify!($f),
            base: base(stringify!($f)),
            since: since(stringify!($f)),
            addr: ($f as *const ()).expose_provenance(),
        }),*]
    };
}

/// Every exported entry point (`tests/hostile/` checks the list against
/// the exports in the sources).
pub fn symbols() -> &'static [Symbol] {
    static TABLE: OnceLock<Vec<Symbol>> = OnceLock::new();
    TABLE.get_or_init(|| {
        symbols![
            cuInit,
            cuDriverGetVersion,
            cuGetErrorName,
            cuGetErrorString,
            cuGetProcAddress,
            cuGetProcAddress_v2,
            cuGetExportTable,
            cuDeviceGet,
            cuDeviceGetCount,
            cuDeviceGetName,
            cuDeviceGetUuid,
            cuDeviceGetUuid_v2,
            cuDeviceTotalMem_v2,
            cuDeviceGetAttribute,
            cuDeviceComputeCapability,
            cuDeviceCanAccessPeer,
            cuDevicePrimaryCtxRetain,
            cuDevicePrimaryCtxRelease_v2,
            cuDevicePrimaryCtxReset_v2,
            cuDevicePrimaryCtxSetFlags_v2,
            cuDevicePrimaryCtxGetState,
            cuCtxCreate_v2,
            cuCtxCreate_v3,
            cuCtxCreate_v4,
            cuCtxDestroy_v2,
            cuCtxPushCurrent_v2,
            cuCtxPopCurrent_v2,
            cuCtxSetCurrent,
            cuCtxGetCurrent,
            cuCtxGetDevice,
            cuCtxGetFlags,
            cuCtxSynchronize,
            cuCtxGetApiVersion,
            cuCtxSetLimit,
            cuCtxGetLimit,
            cuCtxGetCacheConfig,
            cuCtxSetCacheConfig,
            cuCtxGetSharedMemConfig,
            cuCtxSetSharedMemConfig,
            cuCtxGetStreamPriorityRange,
            cuCtxEnablePeerAccess,
            cuCtxDisablePeerAccess,
            cuMemAlloc_v2,
            cuMemFree_v2,
            cuMemAllocAsync,
            cuMemFreeAsync,
            cuMemGetInfo_v2,
            cuMemGetAddressRange_v2,
            cuMemAllocPitch_v2,
            cuMemcpy2D_v2,
            cuMemcpy2DUnaligned_v2,
            cuMemcpy2DAsync_v2,
            cuMemcpyHtoD_v2,
            cuMemcpyHtoDAsync_v2,
            cuMemcpyDtoH_v2,
            cuMemcpyDtoHAsync_v2,
            cuMemcpyDtoD_v2,
            cuMemcpyDtoDAsync_v2,
            cuMemcpy,
            cuMemcpyAsync,
            cuMemcpyPeer,
            cuMemcpyPeerAsync,
            cuMemsetD8_v2,
            cuMemsetD16_v2,
            cuMemsetD32_v2,
            cuMemsetD8Async,
            cuMemsetD16Async,
            cuMemsetD32Async,
            cuMemAllocHost_v2,
            cuMemHostAlloc,
            cuMemFreeHost,
            cuMemHostRegister_v2,
            cuMemHostUnregister,
            cuMemHostGetDevicePointer_v2,
            cuPointerGetAttribute,
            cuPointerGetAttributes,
            cuMemAllocManaged,
            cuTensorMapEncodeTiled,
            cuMemAdvise,
            cuMemPrefetchAsync,
            cuModuleLoadData,
            cuModuleLoadDataEx,
            cuModuleUnload,
            cuModuleGetFunction,
            cuModuleGetGlobal_v2,
            cuModuleLoad,
            cuLinkCreate,
            cuLinkCreate_v2,
            cuLinkAddData,
            cuLinkAddData_v2,
            cuLinkAddFile,
            cuLinkAddFile_v2,
            cuLinkComplete,
            cuLinkDestroy,
            cuLibraryLoadData,
            cuLibraryLoadFromFile,
            cuLibraryUnload,
            cuLibraryGetKernel,
            cuLibraryGetModule,
            cuLibraryGetGlobal,
            cuKernelGetFunction,
            cuKernelGetAttribute,
            cuKernelSetAttribute,
            cuKernelGetName,
            cuLibraryGetKernelCount,
            cuLibraryEnumerateKernels,
            cuKernelGetLibrary,
            cuKernelGetParamInfo,
            cuFuncGetParamInfo,
            cuFuncGetAttribute,
            cuFuncSetAttribute,
            cuFuncSetCacheConfig,
            cuFuncSetSharedMemConfig,
            cuOccupancyMaxActiveBlocksPerMultiprocessor,
            cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags,
            cuOccupancyMaxPotentialBlockSize,
            cuLaunchKernel,
            cuLaunchKernelEx,
            cuLaunchCooperativeKernel,
            cuLaunchCooperativeKernelMultiDevice,
            cuLaunchHostFunc,
            cuStreamCreate,
            cuStreamCreateWithPriority,
            cuStreamDestroy_v2,
            cuStreamQuery,
            cuStreamSynchronize,
            cuStreamWaitEvent,
            cuStreamGetFlags,
            cuStreamGetPriority,
            cuStreamGetCtx,
            cuStreamBeginCapture,
            cuStreamBeginCapture_v2,
            cuStreamEndCapture,
            cuStreamGetCaptureInfo,
            cuStreamGetCaptureInfo_v2,
            cuStreamGetCaptureInfo_v3,
            cuGraphInstantiateWithFlags,
            cuGraphLaunch,
            cuGraphUpload,
            cuGraphExecDestroy,
            cuGraphDestroy,
            cuStreamIsCapturing,
            cuStreamAddCallback,
            cuEventCreate,
            cuEventDestroy_v2,
            cuEventRecord,
            cuEventRecordWithFlags,
            cuEventQuery,
            cuEventSynchronize,
            cuEventElapsedTime,
            cuProfilerStart,
            cuProfilerStop,
            cuMemcpyAsync_ptsz,
            cuMemcpyPeerAsync_ptsz,
            cuMemcpyHtoDAsync_v2_ptsz,
            cuMemcpyDtoHAsync_v2_ptsz,
            cuMemcpyDtoDAsync_v2_ptsz,
            cuMemcpy2DAsync_v2_ptsz,
            cuMemsetD8Async_ptsz,
            cuMemsetD16Async_ptsz,
            cuMemsetD32Async_ptsz,
            cuLaunchKernel_ptsz,
            cuLaunchKernelEx_ptsz,
            cuLaunchCooperativeKernel_ptsz,
            cuLaunchHostFunc_ptsz,
            cuStreamGetPriority_ptsz,
            cuStreamGetFlags_ptsz,
            cuStreamGetCtx_ptsz,
            cuStreamWaitEvent_ptsz,
            cuStreamAddCallback_ptsz,
            cuStreamQuery_ptsz,
            cuStreamSynchronize_ptsz,
            cuStreamBeginCapture_ptsz,
            cuStreamBeginCapture_v2_ptsz,
            cuStreamEndCapture_ptsz,
            cuStreamIsCapturing_ptsz,
            cuStreamGetCaptureInfo_ptsz,
            cuStreamGetCaptureInfo_v2_ptsz,
            cuStreamGetCaptureInfo_v3_ptsz,
            cuEventRecord_ptsz,
            cuEventRecordWithFlags_ptsz,
            cuMemAllocAsync_ptsz,
            cuMemFreeAsync_ptsz,
            cuGraphLaunch_ptsz,
            cuGraphUpload_ptsz,
            cuMemPrefetchAsync_ptsz,
            cuMemcpy_ptds,
            cuMemcpyPeer_ptds,
            cuMemcpyHtoD_v2_ptds,
            cuMemcpyDtoH_v2_ptds,
            cuMemcpyDtoD_v2_ptds,
            cuMemcpy2D_v2_ptds,
            cuMemcpy2DUnaligned_v2_ptds,
            cuMemsetD8_v2_ptds,
            cuMemsetD16_v2_ptds,
            cuMemsetD32_v2_ptds,
        ]
    })
}

/// What `cuGetProcAddress` finds for `symbol` at `version` with `flags`:
/// the address, or the error code and the `symbolStatus`.
pub fn lookup(symbol: &str, version: c_int, flags: u64) -> Result<usize, (CUresult, c_int)> {
    if flags & !(LEGACY_STREAM | PER_THREAD_DEFAULT_STREAM) != 0
        || flags == LEGACY_STREAM | PER_THREAD_DEFAULT_STREAM
    {
        return Err((CUDA_ERROR_INVALID_VALUE, PROC_SYMBOL_NOT_FOUND));
    }
    let candidates = symbols()
        .iter()
        .filter(|s| s.base == symbol && !is_per_thread_variant(s.name));
    let mut any = false;
    let mut best: Option<&Symbol> = None;
    for s in candidates {
        any = true;
        if s.since <= version && best.is_none_or(|b| s.since > b.since) {
            best = Some(s);
        }
    }
    match best {
        Some(s) if flags & PER_THREAD_DEFAULT_STREAM != 0 => {
            Ok(per_thread_variant(s.name).unwrap_or(s).addr)
        }
        Some(s) => Ok(s.addr),
        None if any => Err((CUDA_ERROR_NOT_FOUND, PROC_VERSION_NOT_SUFFICIENT)),
        None => Err((CUDA_ERROR_NOT_FOUND, PROC_SYMBOL_NOT_FOUND)),
    }
}

/// The common part of both versions: `pfn` is set (null when nothing is
/// found), `status` too when given.
///
/// # Safety
/// `symbol` is null or a NUL-terminated string; `pfn` and `status` are
/// null or valid for a write.
unsafe fn get_proc(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: c_int,
    flags: u64,
    status: *mut c_int,
) -> Res<()> {
    if symbol.is_null() || pfn.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY: the caller's contract: a NUL-terminated string.
    let name = unsafe { CStr::from_ptr(symbol) }.to_str().unwrap_or("");
    let (addr, code, st) = match lookup(name, version, flags) {
        Ok(a) => (a, CUDA_SUCCESS, PROC_SUCCESS),
        Err((code, st)) => (0, code, st),
    };
    // SAFETY: the caller's contract for both out-pointers.
    unsafe {
        put(pfn, std::ptr::with_exposed_provenance_mut(addr))?;
        if !status.is_null() {
            put(status, st)?;
        }
    }
    if code == CUDA_SUCCESS {
        Ok(())
    } else {
        Err(code)
    }
}

/// `cuGetProcAddress` (CUDA 11.3 form): the entry point `symbol` (a base
/// name such as `cuMemAlloc`) names at CUDA version `version`
/// (`cuMemAlloc_v2` from 3.2 on; its `_ptsz`/`_ptds` variant with
/// `CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM`, where it has one).
/// `CUDA_ERROR_NOT_FOUND` with `*pfn` null for an unknown or suffixed
/// symbol or a symbol newer than `version`;
/// `CUDA_ERROR_INVALID_VALUE` for null arguments or unknown flags. It
/// needs no `cuInit`, as the driver's.
///
/// # Safety
/// `symbol` is null or NUL-terminated; `pfn` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetProcAddress(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: c_int,
    flags: u64,
) -> CUresult {
    guard("cuGetProcAddress", || {
        // SAFETY: the caller's contract.
        unsafe { get_proc(symbol, pfn, version, flags, std::ptr::null_mut()) }
    })
}

/// `cuGetProcAddress_v2` (CUDA 12.0): as `cuGetProcAddress`, and
/// `*symbolStatus` (when not null) says why nothing was found:
/// `CU_GET_PROC_ADDRESS_SUCCESS` (0), `_SYMBOL_NOT_FOUND` (1) or
/// `_VERSION_NOT_SUFFICIENT` (2).
///
/// # Safety
/// `symbol` is null or NUL-terminated; `pfn` and `status` are null or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetProcAddress_v2(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: c_int,
    flags: u64,
    status: *mut c_int,
) -> CUresult {
    guard("cuGetProcAddress_v2", || {
        // SAFETY: the caller's contract.
        unsafe { get_proc(symbol, pfn, version, flags, status) }
    })
}

/// `cuGetExportTable`: the driver's private tables (NVRTC, the CUDA
/// runtime and tools ask for them by UUID) are not emulated: every table
/// is `CUDA_ERROR_NOT_FOUND`, with `*ppExportTable` set to null, which
/// NVRTC takes as "not there" and carries on; null arguments are
/// `CUDA_ERROR_INVALID_VALUE`.
///
/// # Safety
/// `table` is null or writable; `id` is null or points to 16 bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetExportTable(
    table: *mut *const c_void,
    id: *const c_void,
) -> CUresult {
    guard("cuGetExportTable", || {
        if table.is_null() || id.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: the caller's contract for `table`.
        unsafe { put(table, std::ptr::null())? };
        Err(CUDA_ERROR_NOT_FOUND)
    })
}
