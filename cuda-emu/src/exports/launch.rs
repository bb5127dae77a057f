//! `cuLaunchKernel` (CUDA Driver API §6.22): the parameters are read from
//! the caller's memory exactly as the driver reads them, by the entry's
//! `.param` list.

use std::ffi::c_void;

use oxicuda_driver::ffi::{CUfunction, CUresult, CUstream};

use super::{guard, raw};
use crate::driver;
use crate::error::*;
use crate::launch::{Params, check_extra_size};

/// `CU_LAUNCH_PARAM_END`, `_BUFFER_POINTER`, `_BUFFER_SIZE` (`cuda.h`).
const PARAM_END: usize = 0;
const PARAM_BUFFER_POINTER: usize = 1;
const PARAM_BUFFER_SIZE: usize = 2;
/// An `extra` list longer than this many entries is refused (it is
/// missing its terminator).
const MAX_EXTRA: usize = 64;

/// Read the parameter buffer of a function with `layout` / `param_bytes`
/// from `kernel_params` or `extra`.
///
/// # Safety
/// `kernel_params`, when not null, holds one pointer per parameter, each
/// readable for the parameter's size; `extra`, when not null, is a
/// `CU_LAUNCH_PARAM_END`/null-terminated list of key/value pairs whose
/// buffer pointer is readable for the given size.
unsafe fn read_params(
    layout: &[(u32, u32)],
    param_bytes: u32,
    kernel_params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> Res<Params> {
    let mut buf = vec![0u8; param_bytes as usize];
    match (kernel_params.is_null(), extra.is_null()) {
        (false, false) => Err(CUDA_ERROR_INVALID_VALUE),
        (true, true) => {
            if layout.is_empty() {
                Ok(Params::Buffer(buf))
            } else {
                Err(CUDA_ERROR_INVALID_VALUE)
            }
        }
        (false, true) => {
            for (i, &(off, size)) in layout.iter().enumerate() {
                // SAFETY: the array holds one pointer per parameter.
                let p = unsafe { kernel_params.add(i).read_unaligned() };
                if p.is_null() {
                    return Err(CUDA_ERROR_INVALID_VALUE);
                }
                // SAFETY: `p` is readable for the parameter's size (the
                // caller's contract); the destination range lies inside
                // `buf` (the layout ends at `param_bytes`).
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        p.cast::<u8>(),
                        buf.as_mut_ptr().add(off as usize),
                        size as usize,
                    );
                }
            }
            Ok(Params::Buffer(buf))
        }
        (true, false) => {
            let (mut ptr, mut size) = (None, None);
            let mut i = 0;
            loop {
                if i >= MAX_EXTRA {
                    return Err(CUDA_ERROR_INVALID_VALUE);
                }
                // SAFETY: the list is terminated; each key is followed by
                // its value.
                let key = unsafe { extra.add(i).read_unaligned() } as usize;
                if key == PARAM_END {
                    break;
                }
                // SAFETY: as above.
                let val = unsafe { extra.add(i + 1).read_unaligned() };
                match key {
                    PARAM_BUFFER_POINTER => ptr = Some(val),
                    PARAM_BUFFER_SIZE => {
                        if val.is_null() {
                            return Err(CUDA_ERROR_INVALID_VALUE);
                        }
                        // SAFETY: the value points to a size_t.
                        size = Some(unsafe { val.cast::<usize>().read_unaligned() });
                    }
                    _ => return Err(CUDA_ERROR_INVALID_VALUE),
                }
                i += 2;
            }
            match (ptr, size) {
                (Some(p), Some(n)) if !p.is_null() => {
                    check_extra_size(param_bytes, n)?;
                    // SAFETY: the buffer holds `n >= param_bytes` bytes.
                    unsafe {
                        std::ptr::copy_nonoverlapping(p.cast::<u8>(), buf.as_mut_ptr(), buf.len());
                    }
                    Ok(Params::Buffer(buf))
                }
                // A size without a buffer, or a buffer without its size.
                (None, Some(n)) if n != 0 => Err(CUDA_ERROR_INVALID_VALUE),
                _ if layout.is_empty() => Ok(Params::Buffer(buf)),
                _ => Err(CUDA_ERROR_INVALID_VALUE),
            }
        }
    }
}

/// # Safety
/// As the driver's: `kernel_params` (or `extra`) describes the kernel's
/// parameters as the entry declares them; see `read_params`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLaunchKernel(
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
    guard("cuLaunchKernel", || {
        let h = raw(f.0);
        let (layout, bytes) = driver::with(|d| {
            d.current_ctx()?;
            d.param_layout(h)
        })?;
        // SAFETY: the caller's contract for the parameter arrays.
        let params = unsafe { read_params(&layout, bytes, kernel_params, extra)? };
        driver::with(|d| d.launch(h, (gx, gy, gz), (bx, by, bz), smem, raw(stream.0), params))
    })
}
