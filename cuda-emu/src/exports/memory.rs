//! Memory management (CUDA Driver API §6.13) and peer copies (§6.31).

use std::ffi::c_void;
use std::ptr::NonNull;

use oxicuda_driver::ffi::{CUcontext, CUdeviceptr, CUresult, CUstream};

use super::{guard, handle, host_range_ok, put, raw, then_sync};
use crate::driver;
use crate::error::*;
use crate::handles::device_address_space;
use crate::host::{HostDst, HostSrc};
use crate::memory::On;

/// # Safety
/// `dptr` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAlloc_v2(dptr: *mut CUdeviceptr, bytes: usize) -> CUresult {
    guard("cuMemAlloc_v2", || {
        if dptr.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let a = driver::with(|d| d.mem_alloc(bytes))?;
        // SAFETY: the caller's contract for `dptr`.
        unsafe { put(dptr, a) }
    })
}

/// # Safety
/// No pointer arguments (a device address is a value).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemFree_v2(dptr: CUdeviceptr) -> CUresult {
    guard("cuMemFree_v2", || driver::with(|d| d.mem_free(dptr)))
}

/// `cuMemAllocAsync` (see `Driver::mem_alloc_async`).
///
/// # Safety
/// `dptr` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocAsync(
    dptr: *mut CUdeviceptr,
    bytes: usize,
    stream: CUstream,
) -> CUresult {
    guard("cuMemAllocAsync", || {
        if dptr.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let a = driver::with(|d| d.mem_alloc_async(bytes, raw(stream.0)))?;
        // SAFETY: the caller's contract for `dptr`.
        unsafe { put(dptr, a) }
    })
}

/// `cuMemFreeAsync` (see `Driver::mem_free_async`).
///
/// # Safety
/// No pointer arguments (a device address is a value).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemFreeAsync(dptr: CUdeviceptr, stream: CUstream) -> CUresult {
    guard("cuMemFreeAsync", || {
        driver::with(|d| d.mem_free_async(dptr, raw(stream.0)))
    })
}

/// # Safety
/// `free` and `total` are null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize) -> CUresult {
    guard("cuMemGetInfo_v2", || {
        let (f, t) = driver::with(|d| d.mem_info())?;
        // SAFETY: the caller's contract for both.
        unsafe {
            put(free, f)?;
            put(total, t)
        }
    })
}

/// # Safety
/// `pbase` and `psize` are null (not written) or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemGetAddressRange_v2(
    pbase: *mut CUdeviceptr,
    psize: *mut usize,
    dptr: CUdeviceptr,
) -> CUresult {
    guard("cuMemGetAddressRange_v2", || {
        let (b, s) = driver::with(|d| d.address_range(dptr))?;
        // SAFETY: each is null (skipped) or valid for a write.
        unsafe {
            if !pbase.is_null() {
                put(pbase, b)?;
            }
            if !psize.is_null() {
                put(psize, s)?;
            }
        }
        Ok(())
    })
}

/// Host → device: the device range is checked before the host buffer is
/// read (staged at the call from pageable memory, read when the copy runs
/// from page-locked memory).
fn htod(name: &str, dst: CUdeviceptr, src: *const c_void, bytes: usize, on: On) -> CUresult {
    guard(name, || {
        host_range_ok(src as usize, bytes)?;
        let p = match NonNull::new(src.cast_mut().cast::<u8>()) {
            Some(p) => p,
            // bytes == 0 (host_range_ok refuses a null pointer otherwise)
            None => NonNull::dangling(),
        };
        then_sync(driver::with_sync(|d| {
            // SAFETY: the call's contract: `src` is readable for `bytes`
            // bytes during the call and, for page-locked memory (whose copy
            // reads it when it runs), until the copy has run;
            // `cuMemFreeHost` and `cuMemHostUnregister` run such copies
            // before they return.
            let src = unsafe { HostSrc::new(p, bytes) };
            d.copy_htod(dst, src, on)
        }))
    })
}

/// # Safety
/// `src` is readable for `bytes` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyHtoD_v2(
    dst: CUdeviceptr,
    src: *const c_void,
    bytes: usize,
) -> CUresult {
    htod("cuMemcpyHtoD_v2", dst, src, bytes, On::Sync)
}

/// # Safety
/// `src` is readable for `bytes` bytes (staged at the call).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyHtoDAsync_v2(
    dst: CUdeviceptr,
    src: *const c_void,
    bytes: usize,
    stream: CUstream,
) -> CUresult {
    htod(
        "cuMemcpyHtoDAsync_v2",
        dst,
        src,
        bytes,
        On::Stream(raw(stream.0)),
    )
}

/// # Safety
/// `dst` is writable for `bytes` bytes until the copy has run (its stream
/// synchronised), and untouched by others meanwhile.
unsafe fn dtoh(name: &str, dst: *mut c_void, src: CUdeviceptr, bytes: usize, on: On) -> CUresult {
    guard(name, || {
        host_range_ok(dst as usize, bytes)?;
        let Some(p) = NonNull::new(dst.cast::<u8>()) else {
            // bytes == 0 with a null destination: nothing to copy, but the
            // source is still checked.
            return driver::with(|d| d.copy_dtod(src, src, 0, on));
        };
        then_sync(driver::with_sync(|d| {
            // SAFETY: the caller's contract, passed on to the queued copy.
            let dst = unsafe { HostDst::new(p, bytes) };
            d.copy_dtoh(dst, src, on)
        }))
    })
}

/// # Safety
/// `dst` is writable for `bytes` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyDtoH_v2(
    dst: *mut c_void,
    src: CUdeviceptr,
    bytes: usize,
) -> CUresult {
    // SAFETY: the copy completes before this call returns.
    unsafe { dtoh("cuMemcpyDtoH_v2", dst, src, bytes, On::Sync) }
}

/// The host buffer is written when the stream is synchronised.
///
/// # Safety
/// `dst` is writable for `bytes` bytes until the stream has been
/// synchronised, and nobody touches it meanwhile.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyDtoHAsync_v2(
    dst: *mut c_void,
    src: CUdeviceptr,
    bytes: usize,
    stream: CUstream,
) -> CUresult {
    // SAFETY: the caller's contract, as documented.
    unsafe {
        dtoh(
            "cuMemcpyDtoHAsync_v2",
            dst,
            src,
            bytes,
            On::Stream(raw(stream.0)),
        )
    }
}

/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyDtoD_v2(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    bytes: usize,
) -> CUresult {
    guard("cuMemcpyDtoD_v2", || {
        driver::with(|d| d.copy_dtod(dst, src, bytes, On::Sync))
    })
}

/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyDtoDAsync_v2(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    bytes: usize,
    stream: CUstream,
) -> CUresult {
    guard("cuMemcpyDtoDAsync_v2", || {
        driver::with(|d| d.copy_dtod(dst, src, bytes, On::Stream(raw(stream.0))))
    })
}

/// Whether `addr` lies in the emulated device address space (unified
/// addressing tells device from host pointers by address).
fn is_device(addr: u64) -> bool {
    let (lo, hi) = device_address_space(crate::config::MAX_DEVICES);
    (lo..hi).contains(&addr)
}

/// # Safety
/// Host ranges among `dst` / `src` are valid for `bytes` bytes (the
/// destination until the copy has run).
unsafe fn generic(
    name: &str,
    dst: CUdeviceptr,
    src: CUdeviceptr,
    bytes: usize,
    on: On,
) -> CUresult {
    match (is_device(dst), is_device(src)) {
        (true, true) => guard(name, || driver::with(|d| d.copy_dtod(dst, src, bytes, on))),
        (true, false) => htod(name, dst, src as usize as *const c_void, bytes, on),
        // SAFETY: the caller's contract for the host destination.
        (false, true) => unsafe { dtoh(name, dst as usize as *mut c_void, src, bytes, on) },
        (false, false) => guard(name, || {
            // Host to host: done at once, without a staging buffer.
            host_range_ok(src as usize, bytes)?;
            host_range_ok(dst as usize, bytes)?;
            if bytes > 0 {
                // SAFETY: both ranges are the caller's host buffers of
                // `bytes` bytes, checked non-null and outside the device
                // address space; `copy` allows them to overlap.
                unsafe {
                    std::ptr::copy(src as usize as *const u8, dst as usize as *mut u8, bytes)
                };
            }
            Ok(())
        }),
    }
}

/// Unified-addressing copy: the kind is told from the addresses.
///
/// # Safety
/// As the specific copies.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpy(dst: CUdeviceptr, src: CUdeviceptr, bytes: usize) -> CUresult {
    // SAFETY: the caller's contract.
    unsafe { generic("cuMemcpy", dst, src, bytes, On::Sync) }
}

/// # Safety
/// As the specific asynchronous copies.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyAsync(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    bytes: usize,
    stream: CUstream,
) -> CUresult {
    // SAFETY: the caller's contract.
    unsafe { generic("cuMemcpyAsync", dst, src, bytes, On::Stream(raw(stream.0))) }
}

fn memset(name: &str, dst: CUdeviceptr, value: u32, elem: usize, n: usize, on: On) -> CUresult {
    guard(name, || driver::with(|d| d.memset(dst, value, elem, n, on)))
}

/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemsetD8_v2(dst: CUdeviceptr, value: u8, n: usize) -> CUresult {
    memset("cuMemsetD8_v2", dst, u32::from(value), 1, n, On::Sync)
}

/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemsetD16_v2(dst: CUdeviceptr, value: u16, n: usize) -> CUresult {
    memset("cuMemsetD16_v2", dst, u32::from(value), 2, n, On::Sync)
}

/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemsetD32_v2(dst: CUdeviceptr, value: u32, n: usize) -> CUresult {
    memset("cuMemsetD32_v2", dst, value, 4, n, On::Sync)
}

/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemsetD8Async(
    dst: CUdeviceptr,
    value: u8,
    n: usize,
    s: CUstream,
) -> CUresult {
    memset(
        "cuMemsetD8Async",
        dst,
        u32::from(value),
        1,
        n,
        On::Stream(raw(s.0)),
    )
}

/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemsetD16Async(
    dst: CUdeviceptr,
    value: u16,
    n: usize,
    s: CUstream,
) -> CUresult {
    memset(
        "cuMemsetD16Async",
        dst,
        u32::from(value),
        2,
        n,
        On::Stream(raw(s.0)),
    )
}

/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemsetD32Async(
    dst: CUdeviceptr,
    value: u32,
    n: usize,
    s: CUstream,
) -> CUresult {
    memset("cuMemsetD32Async", dst, value, 4, n, On::Stream(raw(s.0)))
}

/// # Safety
/// `pp` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocHost_v2(pp: *mut *mut c_void, bytes: usize) -> CUresult {
    guard("cuMemAllocHost_v2", || {
        if pp.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let a = driver::with(|d| d.mem_alloc_host(bytes))?;
        // SAFETY: the caller's contract for `pp`.
        unsafe { put(pp, a as *mut c_void) }
    })
}

/// `CU_MEMHOSTALLOC_PORTABLE` and `_WRITECOMBINED` are accepted;
/// `_DEVICEMAP` (kernels reading host memory) is not supported.
///
/// # Safety
/// `pp` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemHostAlloc(
    pp: *mut *mut c_void,
    bytes: usize,
    flags: u32,
) -> CUresult {
    guard("cuMemHostAlloc", || {
        if flags & !0x7 != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        if flags & 0x2 != 0 {
            return Err(CUDA_ERROR_NOT_SUPPORTED);
        }
        if pp.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let a = driver::with(|d| d.mem_alloc_host(bytes))?;
        // SAFETY: the caller's contract for `pp`.
        unsafe { put(pp, a as *mut c_void) }
    })
}

/// # Safety
/// `p` came from `cuMemAllocHost` and no queued copy still targets it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemFreeHost(p: *mut c_void) -> CUresult {
    guard("cuMemFreeHost", || {
        let bytes = driver::with_sync(|d| d.mem_free_host(p as usize))?;
        let p = NonNull::new(p.cast::<u8>()).ok_or(CUDA_ERROR_INVALID_VALUE)?;
        // SAFETY: allocated by `pinned_alloc(bytes)` (it was in the table,
        // now removed, so freed once); the caller's contract for queued work.
        unsafe { crate::host::pinned_free(p, bytes) };
        Ok(())
    })
}

/// # Safety
/// `p` is host memory of `bytes` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemHostRegister_v2(
    p: *mut c_void,
    bytes: usize,
    flags: u32,
) -> CUresult {
    guard("cuMemHostRegister_v2", || {
        if flags & !0xF != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        if flags & 0x2 != 0 {
            // DEVICEMAP: kernels cannot read host memory here.
            return Err(CUDA_ERROR_NOT_SUPPORTED);
        }
        driver::with(|d| d.host_register(p as usize, bytes))
    })
}

/// # Safety
/// No memory is touched.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemHostUnregister(p: *mut c_void) -> CUresult {
    guard("cuMemHostUnregister", || {
        driver::with_sync(|d| d.host_unregister(p as usize))
    })
}

/// The `CU_POINTER_ATTRIBUTE_*` values the emulator answers: CONTEXT (1),
/// MEMORY_TYPE (2), DEVICE_POINTER (3), HOST_POINTER (4, page-locked host
/// memory), BUFFER_ID (7), IS_MANAGED (8, always 0), DEVICE_ORDINAL (9),
/// RANGE_START_ADDR (11), RANGE_SIZE (12).
const POINTER_ATTRIBUTES: [u32; 9] = [1, 2, 3, 4, 7, 8, 9, 11, 12];

/// Write attribute `attribute` of `ptr` (found as `p`, or `None`: unknown
/// to the driver, the null values `cuPointerGetAttributes` gives) to
/// `data`. `Err(INVALID_VALUE)` for an attribute that does not apply (the
/// host pointer of device memory, the ordinal of host memory), with
/// `strict` (`cuPointerGetAttribute`); without it, the null value.
///
/// # Safety
/// `data` is null (refused) or valid for a write of the attribute's type.
unsafe fn write_pointer_attribute(
    data: *mut c_void,
    attribute: u32,
    ptr: CUdeviceptr,
    p: Option<crate::memory::PointerInfo>,
    strict: bool,
) -> Res<()> {
    if !POINTER_ATTRIBUTES.contains(&attribute) {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let Some(p) = p else {
        if strict {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: each arm writes the type the attribute documents.
        return unsafe {
            match attribute {
                1 => put(data.cast::<CUcontext>(), CUcontext::default()),
                2 => put(data.cast::<u32>(), 0),
                3 | 7 | 11 => put(data.cast::<u64>(), 0),
                4 => put(data.cast::<*mut c_void>(), std::ptr::null_mut()),
                8 => put(data.cast::<u32>(), 0),
                9 => put(data.cast::<i32>(), -1),
                _ => put(data.cast::<usize>(), 0),
            }
        };
    };
    // SAFETY: each arm writes the type the attribute documents, to the
    // caller's buffer of that type.
    unsafe {
        match attribute {
            1 => put(data.cast::<CUcontext>(), CUcontext(handle(p.ctx))),
            2 => put(data.cast::<u32>(), if p.device { 2 } else { 1 }),
            3 => put(data.cast::<CUdeviceptr>(), ptr),
            4 if !p.device => put(data.cast::<*mut c_void>(), ptr as usize as *mut c_void),
            4 if !strict => put(data.cast::<*mut c_void>(), std::ptr::null_mut()),
            7 => put(data.cast::<u64>(), p.base),
            8 => put(data.cast::<u32>(), 0),
            9 if p.device => put(data.cast::<i32>(), p.ordinal),
            9 if !strict => put(data.cast::<i32>(), -1),
            11 => put(data.cast::<CUdeviceptr>(), p.base),
            12 => put(data.cast::<usize>(), p.size),
            _ => Err(CUDA_ERROR_INVALID_VALUE),
        }
    }
}

/// `cuPointerGetAttribute`: one of `POINTER_ATTRIBUTES` of an address
/// the driver knows (`CUDA_ERROR_INVALID_VALUE` otherwise).
///
/// # Safety
/// `data` is null or valid for a write of the attribute's type.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuPointerGetAttribute(
    data: *mut c_void,
    attribute: u32,
    ptr: CUdeviceptr,
) -> CUresult {
    guard("cuPointerGetAttribute", || {
        let found = driver::with(|d| Ok(d.find_pointer(ptr)))?;
        if data.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: the caller's contract for `data`.
        unsafe { write_pointer_attribute(data, attribute, ptr, found, true) }
    })
}

/// `cuPointerGetAttributes`: `n` attributes at once, each into its
/// `data[i]`. Unlike `cuPointerGetAttribute`, an address the driver does
/// not know is no error: its attributes get null values (context null,
/// memory type 0, addresses and sizes 0, ordinal -1). An attribute the
/// emulator does not answer (P2P tokens, sync memops, mapping and pool
/// attributes: not in `POINTER_ATTRIBUTES`), a null array or a null
/// `data[i]` is `CUDA_ERROR_INVALID_VALUE`, with nothing written.
///
/// # Safety
/// `attributes` and `data` are null or hold `n` elements; each `data[i]`
/// is null or valid for a write of its attribute's type.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuPointerGetAttributes(
    n: u32,
    attributes: *const u32,
    data: *mut *mut c_void,
    ptr: CUdeviceptr,
) -> CUresult {
    guard("cuPointerGetAttributes", || {
        let found = driver::with(|d| Ok(d.find_pointer(ptr)))?;
        if n == 0 || attributes.is_null() || data.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let mut wanted = Vec::new();
        for i in 0..n as usize {
            // SAFETY: both arrays hold `n` elements (the caller's contract).
            let (a, d) = unsafe {
                (
                    attributes.add(i).read_unaligned(),
                    data.add(i).read_unaligned(),
                )
            };
            if !POINTER_ATTRIBUTES.contains(&a) || d.is_null() {
                return Err(CUDA_ERROR_INVALID_VALUE);
            }
            wanted.push((a, d));
        }
        for (a, d) in wanted {
            // SAFETY: the caller's contract for each `data[i]`.
            unsafe { write_pointer_attribute(d, a, ptr, found, false)? };
        }
        Ok(())
    })
}

/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyPeer(
    dst: CUdeviceptr,
    dst_ctx: CUcontext,
    src: CUdeviceptr,
    src_ctx: CUcontext,
    bytes: usize,
) -> CUresult {
    guard("cuMemcpyPeer", || {
        then_sync(driver::with_sync(|d| {
            d.copy_peer(dst, raw(dst_ctx.0), src, raw(src_ctx.0), bytes, On::Sync)
        }))
    })
}

/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyPeerAsync(
    dst: CUdeviceptr,
    dst_ctx: CUcontext,
    src: CUdeviceptr,
    src_ctx: CUcontext,
    bytes: usize,
    stream: CUstream,
) -> CUresult {
    guard("cuMemcpyPeerAsync", || {
        let on = On::Stream(raw(stream.0));
        then_sync(driver::with_sync(|d| {
            d.copy_peer(dst, raw(dst_ctx.0), src, raw(src_ctx.0), bytes, on)
        }))
    })
}
