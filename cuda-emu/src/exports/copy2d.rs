//! Pitched allocations and 2D copies (CUDA Driver API §6.13:
//! `cuMemAllocPitch`, `cuMemcpy2D`, `cuMemcpy2DUnaligned`,
//! `cuMemcpy2DAsync`). A 2D copy is `Height` rows of `WidthInBytes`
//! bytes; every row range of both sides is checked (device rows inside
//! one live allocation of the current context, host rows outside the
//! device address space) before any memory is touched, then each row is
//! queued as the 1D copy of its direction would be.

use std::ffi::c_void;
use std::ptr::NonNull;

use oxicuda_driver::ffi::{CUdeviceptr, CUresult, CUstream};

use super::{guard, host_range_ok, put, raw, then_sync};
use crate::driver;
use crate::error::*;
use crate::handles::device_address_space;
use crate::host::{HostDst, HostSrc};
use crate::memory::On;

/// The pitch `cuMemAllocPitch` rounds rows up to.
pub const PITCH_ALIGNMENT: usize = 512;

/// `cuMemAllocPitch_v2`: `height` rows of `width` bytes, each row padded
/// to a multiple of 512 bytes (`*pitch`). `element_size` must be 4, 8 or
/// 16 and both sizes non-zero (`CUDA_ERROR_INVALID_VALUE`).
///
/// # Safety
/// `dptr` and `pitch` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocPitch_v2(
    dptr: *mut CUdeviceptr,
    pitch: *mut usize,
    width: usize,
    height: usize,
    element_size: u32,
) -> CUresult {
    guard("cuMemAllocPitch_v2", || {
        if dptr.is_null() || pitch.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        if width == 0 || height == 0 || ![4, 8, 16].contains(&element_size) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let p = width
            .checked_next_multiple_of(PITCH_ALIGNMENT)
            .ok_or(CUDA_ERROR_INVALID_VALUE)?;
        let bytes = p.checked_mul(height).ok_or(CUDA_ERROR_OUT_OF_MEMORY)?;
        let a = driver::with(|d| d.mem_alloc(bytes))?;
        // SAFETY: the caller's contract for both out-pointers.
        unsafe {
            put(dptr, a)?;
            put(pitch, p)
        }
    })
}

/// `CUDA_MEMCPY2D` (`cuda.h`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Memcpy2D {
    pub src_x: usize,
    pub src_y: usize,
    pub src_type: u32,
    pub src_host: *const c_void,
    pub src_device: CUdeviceptr,
    pub src_array: *mut c_void,
    pub src_pitch: usize,
    pub dst_x: usize,
    pub dst_y: usize,
    pub dst_type: u32,
    pub dst_host: *mut c_void,
    pub dst_device: CUdeviceptr,
    pub dst_array: *mut c_void,
    pub dst_pitch: usize,
    pub width: usize,
    pub height: usize,
}

/// `CUmemorytype`.
const HOST: u32 = 1;
const DEVICE: u32 = 2;
const ARRAY: u32 = 3;
const UNIFIED: u32 = 4;

/// One side of a 2D copy: host or device, and the address of its first
/// row's first byte.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Host(usize),
    Device(u64),
}

/// Resolve one side: its memory type, base addresses, offsets and pitch
/// give the first row's address; the span of all rows is checked for
/// overflow. `CUDA_ERROR_NOT_SUPPORTED` for arrays (absent here).
fn side(
    ty: u32,
    host: usize,
    device: u64,
    x: usize,
    y: usize,
    pitch: usize,
    c: &Memcpy2D,
) -> Res<(Side, usize)> {
    let (lo, hi) = device_address_space(crate::config::MAX_DEVICES);
    // A unified address is in the `*Device` field, host or device.
    let host = if ty == UNIFIED { device as usize } else { host };
    let is_device = match ty {
        HOST => false,
        DEVICE => true,
        UNIFIED => (lo..hi).contains(&device),
        ARRAY => return Err(CUDA_ERROR_NOT_SUPPORTED),
        _ => return Err(CUDA_ERROR_INVALID_VALUE),
    };
    if c.height > 1 && pitch < c.width {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    // Offset of the first row, and the span from it to the last row's end.
    let first = y
        .checked_mul(pitch)
        .and_then(|o| o.checked_add(x))
        .ok_or(CUDA_ERROR_INVALID_VALUE)?;
    let span = (c.height - 1)
        .checked_mul(pitch)
        .and_then(|o| o.checked_add(c.width))
        .ok_or(CUDA_ERROR_INVALID_VALUE)?;
    if is_device {
        let base = device
            .checked_add(first as u64)
            .filter(|b| b.checked_add(span as u64).is_some())
            .ok_or(CUDA_ERROR_INVALID_VALUE)?;
        Ok((Side::Device(base), span))
    } else {
        let base = host
            .checked_add(first)
            .filter(|b| b.checked_add(span).is_some())
            .ok_or(CUDA_ERROR_INVALID_VALUE)?;
        host_range_ok(base, span)?;
        Ok((Side::Host(base), span))
    }
}

/// Check and queue a 2D copy.
///
/// # Safety
/// The host rows the descriptor names are readable (source) or writable
/// (destination) until the copy has run.
unsafe fn copy2d(c: &Memcpy2D, on: On) -> Res<()> {
    if c.width == 0 || c.height == 0 {
        return driver::with(|d| d.current_ctx().map(drop));
    }
    let (src, span_s) = side(
        c.src_type,
        c.src_host as usize,
        c.src_device,
        c.src_x,
        c.src_y,
        c.src_pitch,
        c,
    )?;
    let (dst, span_d) = side(
        c.dst_type,
        c.dst_host as usize,
        c.dst_device,
        c.dst_x,
        c.dst_y,
        c.dst_pitch,
        c,
    )?;
    if let (Side::Host(_), Side::Host(_)) = (src, dst) {
        // Host to host: no device work to order it with.
        return Err(CUDA_ERROR_NOT_SUPPORTED);
    }
    // Every device span inside one live allocation of the current context
    // (the rows lie in it, in order), before anything is touched.
    driver::with(|d| {
        let ctx = d.current_handle()?;
        d.contexts[&ctx].usable()?;
        if let Side::Device(a) = src {
            d.check_device(ctx, a, span_s)?;
        }
        if let Side::Device(a) = dst {
            d.check_device(ctx, a, span_d)?;
        }
        Ok(())
    })?;
    let row = |s: Side, pitch: usize, r: usize| match s {
        Side::Host(a) => Side::Host(a + r * pitch),
        Side::Device(a) => Side::Device(a + (r * pitch) as u64),
    };
    let mut last = None;
    for r in 0..c.height {
        let (s, t) = (row(src, c.src_pitch, r), row(dst, c.dst_pitch, r));
        let target = driver::with(|d| match (s, t) {
            (Side::Device(a), Side::Device(b)) => d.copy_dtod(b, a, c.width, on).map(|()| None),
            (Side::Host(a), Side::Device(b)) => {
                let p = NonNull::new(a as *mut u8).ok_or(CUDA_ERROR_INVALID_VALUE)?;
                // SAFETY: the caller's contract for the source rows.
                let src = unsafe { HostSrc::new(p, c.width) };
                d.copy_htod(b, src, on)
            }
            (Side::Device(a), Side::Host(b)) => {
                let p = NonNull::new(b as *mut u8).ok_or(CUDA_ERROR_INVALID_VALUE)?;
                // SAFETY: the caller's contract for the destination rows.
                let dst = unsafe { HostDst::new(p, c.width) };
                d.copy_dtoh(dst, a, on)
            }
            (Side::Host(_), Side::Host(_)) => unreachable!("refused above"),
        })?;
        if target.is_some() {
            last = target;
        }
    }
    then_sync(Ok(last))
}

/// # Safety
/// `copy` null or a readable `CUDA_MEMCPY2D` whose host rows are valid.
unsafe fn read(copy: *const Memcpy2D) -> Res<Memcpy2D> {
    if copy.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY: non-null and readable (the caller's contract).
    Ok(unsafe { copy.read_unaligned() })
}

/// `cuMemcpy2D_v2`: synchronous (legacy stream); host to host and arrays
/// are `CUDA_ERROR_NOT_SUPPORTED`.
///
/// # Safety
/// `copy` a readable descriptor whose host rows are valid for the copy.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpy2D_v2(copy: *const Memcpy2D) -> CUresult {
    guard("cuMemcpy2D_v2", || {
        // SAFETY: the caller's contract.
        let c = unsafe { read(copy)? };
        // The legacy stream's earlier work first (as the 1D copies do).
        driver::with_sync(|d| {
            let (ctx, key) = d.resolve_stream(0, true)?;
            d.sync_stream(ctx, key)
        })?;
        // SAFETY: the caller's contract.
        unsafe { copy2d(&c, On::Sync) }
    })
}

/// `cuMemcpy2DUnaligned_v2`: as [`cuMemcpy2D_v2`] (the emulator has no
/// alignment restriction on 2D copies).
///
/// # Safety
/// As [`cuMemcpy2D_v2`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpy2DUnaligned_v2(copy: *const Memcpy2D) -> CUresult {
    // SAFETY: the same contract.
    unsafe { cuMemcpy2D_v2(copy) }
}

/// `cuMemcpy2DAsync_v2`: queued on `stream` (rows into pageable host
/// memory complete before the call returns, as the 1D copy).
///
/// # Safety
/// `copy` a readable descriptor whose host rows stay valid until the copy
/// has run.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpy2DAsync_v2(copy: *const Memcpy2D, stream: CUstream) -> CUresult {
    guard("cuMemcpy2DAsync_v2", || {
        // SAFETY: the caller's contract.
        let c = unsafe { read(copy)? };
        // SAFETY: the caller's contract.
        unsafe { copy2d(&c, On::Stream(raw(stream.0))) }
    })
}
