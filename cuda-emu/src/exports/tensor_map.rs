//! `cuTensorMapEncodeTiled` (CUDA Driver API, "Tensor Map Object
//! Managment"): validated as the driver documents it
//! (`ptxsmith::tensor_map::TiledDesc::validate`), then ptxsmith's private
//! encoding (`ptxsmith::tensor_map::encoding`: magic, version, the fields)
//! written into the 128 bytes, which the simulator decodes from a kernel
//! parameter. A real driver's map is opaque and not this encoding.

use std::ffi::c_void;

use oxicuda_driver::ffi::CUresult;
use ptxsmith::tensor_map::encoding::{desc_from_codes, encode};

use super::guard;
use crate::driver;
use crate::error::*;

/// Read `n` values from `p` (null refused).
///
/// # Safety
/// `p` is null or valid for reads of `n` values of `T`.
unsafe fn read<T: Copy>(p: *const T, n: usize) -> Res<Vec<T>> {
    if n > 0 && p.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY: non-null (or nothing read) and readable for `n` values by
    // the caller's contract; read unaligned, as C code might pass them.
    Ok((0..n)
        .map(|k| unsafe { p.add(k).read_unaligned() })
        .collect())
}

/// # Safety
/// `tensor_map` is null or valid for a write of 128 bytes (64-byte aligned,
/// as the driver requires: a misaligned one is refused); `global_dim`,
/// `box_dim` and `element_strides` are readable for `tensor_rank` values,
/// `global_strides` for `tensor_rank - 1`, as the driver's contract.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cuTensorMapEncodeTiled(
    tensor_map: *mut c_void,
    tensor_data_type: u32,
    tensor_rank: u32,
    global_address: *mut c_void,
    global_dim: *const u64,
    global_strides: *const u64,
    box_dim: *const u32,
    element_strides: *const u32,
    interleave: u32,
    swizzle: u32,
    l2_promotion: u32,
    oob_fill: u32,
) -> CUresult {
    guard("cuTensorMapEncodeTiled", || {
        driver::with(|_| Ok(()))?;
        if tensor_map.is_null() || !(tensor_map as usize).is_multiple_of(64) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let rank = tensor_rank as usize;
        if !(1..=5).contains(&rank) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: the caller's contract for the four arrays.
        let (dims, strides, boxes, el) = unsafe {
            (
                read(global_dim, rank)?,
                read(global_strides, rank - 1)?,
                read(box_dim, rank)?,
                read(element_strides, rank)?,
            )
        };
        let d = desc_from_codes(
            tensor_data_type,
            global_address as usize as u64,
            &dims,
            &strides,
            &boxes,
            &el,
            interleave,
            swizzle,
            l2_promotion,
            oob_fill,
        )
        .map_err(|e| {
            if driver::tracing() {
                eprintln!("ptxsmith-emu: cuTensorMapEncodeTiled: {e}");
            }
            CUDA_ERROR_INVALID_VALUE
        })?;
        let bytes = encode(&d);
        // SAFETY: non-null, 64-byte aligned and writable for 128 bytes by
        // the caller's contract.
        unsafe { tensor_map.cast::<[u8; 128]>().write(bytes) };
        Ok(())
    })
}
