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
        let shape = ((gx, gy, gz), (bx, by, bz), smem);
        // SAFETY: the caller's contract for the parameter arrays.
        unsafe { launch(raw(f.0), shape, None, raw(stream.0), kernel_params, extra) }
    })
}

/// A launch's grid, block and dynamic shared memory.
type Shape = ((u32, u32, u32), (u32, u32, u32), u32);

/// Read the parameters of function (or kernel) `f` and queue the launch.
///
/// # Safety
/// As [`cuLaunchKernel`].
unsafe fn launch(
    f: u64,
    (grid, block, smem): Shape,
    cluster: Option<(u32, u32, u32)>,
    stream: u64,
    kernel_params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> Res<()> {
    let (h, (layout, bytes)) = driver::with(|d| {
        d.current_ctx()?;
        let h = d.launchable(f)?;
        Ok((h, d.param_layout(h)?))
    })?;
    // SAFETY: the caller's contract for the parameter arrays.
    let params = unsafe { read_params(&layout, bytes, kernel_params, extra)? };
    driver::with(|d| d.launch(h, grid, block, smem, stream, params, cluster))
}

/// `CUlaunchConfig` (`cuda.h`).
#[repr(C)]
pub struct LaunchConfig {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub smem: u32,
    pub stream: CUstream,
    pub attrs: *mut LaunchAttribute,
    pub num_attrs: u32,
}

/// `CUlaunchAttribute`: an id and a 64-byte value union.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct LaunchAttribute {
    pub id: u32,
    pub pad: [u8; 4],
    pub value: [u32; 16],
}

/// `CUlaunchAttributeID`s the emulator knows.
const ATTR_IGNORE: u32 = 0;
const ATTR_COOPERATIVE: u32 = 2;
const ATTR_CLUSTER_DIMENSION: u32 = 4;
const ATTR_PROGRAMMATIC_STREAM_SERIALIZATION: u32 = 6;
const ATTR_PRIORITY: u32 = 8;
/// Ids above this are not in CUDA 12.9's `cuda.h`.
const ATTR_LAST: u32 = 13;

/// Check one launch attribute: `Ok` for one that changes nothing here,
/// `CUDA_ERROR_NOT_SUPPORTED` for a feature the emulator does not have,
/// `CUDA_ERROR_INVALID_VALUE` for an unknown id or a malformed value.
pub fn check_attribute(a: &LaunchAttribute) -> Res<()> {
    let v = a.value;
    match a.id {
        ATTR_IGNORE | ATTR_PRIORITY => Ok(()),
        ATTR_COOPERATIVE | ATTR_PROGRAMMATIC_STREAM_SERIALIZATION => {
            if v[0] == 0 {
                Ok(())
            } else {
                Err(CUDA_ERROR_NOT_SUPPORTED)
            }
        }
        // the shape itself is checked with the kernel and the device
        // (`cluster::launch_shape`)
        ATTR_CLUSTER_DIMENSION => match (v[0], v[1], v[2]) {
            (x, y, z) if x == 0 || y == 0 || z == 0 => Err(CUDA_ERROR_INVALID_VALUE),
            _ => Ok(()),
        },
        id if id <= ATTR_LAST => Err(CUDA_ERROR_NOT_SUPPORTED),
        _ => Err(CUDA_ERROR_INVALID_VALUE),
    }
}

/// `cuLaunchKernelEx`: as `cuLaunchKernel` with the shape and stream from
/// `config` and its attributes checked first (see [`check_attribute`]:
/// `IGNORE`, `PRIORITY`, `COOPERATIVE` 0 and
/// `PROGRAMMATIC_STREAM_SERIALIZATION` 0 run; `CLUSTER_DIMENSION` runs the
/// launch in thread-block clusters on sm_90+ devices (the last one given
/// counts; checked with the kernel, see `cluster::launch_shape`: below
/// sm_90 only (1, 1, 1), ignored, and others `CUDA_ERROR_NOT_SUPPORTED`;
/// a grid not a multiple of the shape, or a shape other than the kernel's
/// `.reqnctapercluster`, `CUDA_ERROR_INVALID_CLUSTER_SIZE`); cooperative,
/// programmatic, access policy windows, memory sync domains, programmatic
/// and completion events are `CUDA_ERROR_NOT_SUPPORTED`).
/// `f` may be a `CUkernel`.
///
/// # Safety
/// `config` null or a readable `CUlaunchConfig` whose `attrs` holds
/// `numAttrs` attributes; the parameters as [`cuLaunchKernel`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLaunchKernelEx(
    config: *const LaunchConfig,
    f: CUfunction,
    kernel_params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
    guard("cuLaunchKernelEx", || {
        if config.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: non-null and readable (the caller's contract).
        let c = unsafe { config.read_unaligned() };
        if c.num_attrs > 0 && c.attrs.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let mut cluster = None;
        for i in 0..c.num_attrs as usize {
            // SAFETY: the array holds `num_attrs` attributes.
            let a = unsafe { c.attrs.add(i).read_unaligned() };
            check_attribute(&a)?;
            if a.id == ATTR_CLUSTER_DIMENSION {
                cluster = Some((a.value[0], a.value[1], a.value[2]));
            }
        }
        let [gx, gy, gz] = c.grid;
        let [bx, by, bz] = c.block;
        let shape = ((gx, gy, gz), (bx, by, bz), c.smem);
        // SAFETY: the caller's contract for the parameter arrays.
        unsafe {
            launch(
                raw(f.0),
                shape,
                cluster,
                raw(c.stream.0),
                kernel_params,
                extra,
            )
        }
    })
}
