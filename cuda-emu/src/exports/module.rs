//! Modules (CUDA Driver API §6.10), function attributes (§6.22) and
//! occupancy (§6.25).

use std::ffi::{CStr, c_char, c_int, c_void};

use oxicuda_driver::ffi::{CUdeviceptr, CUfunction, CUmodule, CUresult};

use super::{guard, handle, put, put_if, raw};
use crate::driver;
use crate::error::*;
use crate::handles::Kind;
use crate::jit::{JitLog, JitRequest};

/// The `CUjit_option`s the emulator reads or writes.
const WALL_TIME: u32 = 2;
const INFO_LOG_BUFFER: u32 = 3;
const INFO_LOG_BUFFER_SIZE_BYTES: u32 = 4;
const ERROR_LOG_BUFFER: u32 = 5;
const ERROR_LOG_BUFFER_SIZE_BYTES: u32 = 6;
const TARGET: u32 = 9;
/// Options up to this value exist (`CU_JIT_NUM_OPTIONS` of CUDA 12.9);
/// the others (optimisation level, register limits, debug info, cache
/// modes, ...) only steer code generation, which the simulator does not do.
const LAST_OPTION: u32 = 35;

/// `CU_COMPUTE_ACCELERATED_TARGET_BASE` and `CU_COMPUTE_FAMILY_TARGET_BASE`
/// of `CUjit_target` (CUDA 12.9): `CU_TARGET_COMPUTE_90A` is `0x10000 + 90`,
/// as Numba passes for an sm_90 device.
const ACCELERATED_TARGET_BASE: u32 = 0x1_0000;
const FAMILY_TARGET_BASE: u32 = 0x2_0000;

/// The compute capability (`major*10+minor`) a `CU_JIT_TARGET` value
/// names: the plain targets are the number itself, the arch-specific
/// (`a`) and family (`f`) ones carry a base the device check ignores (the
/// module's own `.target` suffix is checked against the device).
fn jit_target_cc(v: u32) -> u32 {
    match v & !0xFFFF {
        ACCELERATED_TARGET_BASE | FAMILY_TARGET_BASE => v & 0xFFFF,
        _ => v,
    }
}

/// # Safety
/// `image` is null or points to a NUL-terminated text, or to a binary
/// image with at least 4 bytes.
pub(super) unsafe fn image_bytes(image: *const c_void) -> Res<Vec<u8>> {
    if image.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let p = image.cast::<u8>();
    let mut head = Vec::with_capacity(4);
    while head.len() < 4 {
        // SAFETY: bytes are read one at a time up to the first NUL, which
        // a text image has, and at most 4, which a binary image has.
        let b = unsafe { p.add(head.len()).read() };
        head.push(b);
        if b == 0 {
            break;
        }
    }
    if head.len() == 4 && crate::jit::is_binary(&head) {
        // A cubin or fatbin: its magic is enough to refuse it.
        return Ok(head);
    }
    // SAFETY: a text image is NUL-terminated (the caller's contract).
    Ok(unsafe { CStr::from_ptr(p.cast::<c_char>()) }
        .to_bytes()
        .to_vec())
}

/// Where the logs go and which option slots get sizes written back.
#[derive(Default)]
pub(super) struct LogSlots {
    pub(super) info: (Option<*mut u8>, Option<usize>),
    pub(super) error: (Option<*mut u8>, Option<usize>),
    pub(super) wall_time: Option<usize>,
}

/// # Safety
/// `options` and `values` are null (with `n == 0`) or valid for `n`
/// elements, `values` also for writes.
pub(super) unsafe fn read_options(
    n: u32,
    options: *const u32,
    values: *mut *mut c_void,
) -> Res<(JitRequest, LogSlots)> {
    let mut req = JitRequest::default();
    let mut slots = LogSlots::default();
    if n == 0 {
        return Ok((req, slots));
    }
    if options.is_null() || values.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    for i in 0..n as usize {
        // SAFETY: `i < n`, both arrays hold `n` elements.
        let (opt, val) = unsafe {
            (
                options.add(i).read_unaligned(),
                values.add(i).read_unaligned(),
            )
        };
        match opt {
            WALL_TIME => slots.wall_time = Some(i),
            INFO_LOG_BUFFER => slots.info.0 = Some(val.cast::<u8>()),
            INFO_LOG_BUFFER_SIZE_BYTES => slots.info.1 = Some(i),
            ERROR_LOG_BUFFER => slots.error.0 = Some(val.cast::<u8>()),
            ERROR_LOG_BUFFER_SIZE_BYTES => slots.error.1 = Some(i),
            TARGET => req.target = Some(jit_target_cc(val as usize as u32)),
            o if o <= LAST_OPTION => {}
            _ => return Err(CUDA_ERROR_INVALID_VALUE),
        }
    }
    Ok((req, slots))
}

/// Write `text` (truncated, NUL-terminated) into a log buffer whose size
/// is in option slot `size_at`, and the bytes written back into the slot.
///
/// # Safety
/// As `read_options`; the buffer holds the slot's size in bytes.
pub(super) unsafe fn write_log(
    text: &str,
    (buf, size_at): (Option<*mut u8>, Option<usize>),
    values: *mut *mut c_void,
) {
    let (Some(buf), Some(i)) = (buf, size_at) else {
        return;
    };
    // SAFETY: slot `i` is in the array (read_options checked the index).
    let cap = unsafe { values.add(i).read_unaligned() } as usize;
    if buf.is_null() || cap == 0 {
        return;
    }
    let n = text.len().min(cap - 1);
    // SAFETY: the buffer holds `cap` bytes and `n + 1 <= cap` are written;
    // the size slot is writable.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), buf, n);
        buf.add(n).write(0);
        values
            .add(i)
            .write_unaligned(std::ptr::without_provenance_mut(n));
    }
}

/// # Safety
/// As `cuModuleLoadData`: `module` writable, `image` a NUL-terminated PTX
/// text (or a binary image, refused); `options` / `values` arrays of `n`
/// elements, the log buffers as large as their size options say.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleLoadDataEx(
    module: *mut CUmodule,
    image: *const c_void,
    n: u32,
    options: *mut u32,
    values: *mut *mut c_void,
) -> CUresult {
    guard("cuModuleLoadDataEx", || {
        if module.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: the caller's contract for the arrays.
        let (req, slots) = unsafe { read_options(n, options, values)? };
        // SAFETY: the caller's contract for `image`.
        let bytes = unsafe { image_bytes(image)? };
        let t0 = std::time::Instant::now();
        let (r, log): (Res<u64>, JitLog) = driver::with(|d| Ok(d.module_load(&bytes, req)))?;
        // SAFETY: the caller's contract for the buffers and slots.
        unsafe {
            write_log(&log.info, slots.info, values);
            write_log(&log.error, slots.error, values);
            if let Some(i) = slots.wall_time {
                let ms = t0.elapsed().as_secs_f32() * 1e3;
                values.add(i).cast::<f32>().write_unaligned(ms);
            }
        }
        let h = r?;
        // SAFETY: the caller's contract for `module`.
        unsafe { put(module, CUmodule(handle(h))) }
    })
}

/// # Safety
/// As [`cuModuleLoadDataEx`] without options.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleLoadData(module: *mut CUmodule, image: *const c_void) -> CUresult {
    // SAFETY: same contract, no options.
    unsafe { cuModuleLoadDataEx(module, image, 0, std::ptr::null_mut(), std::ptr::null_mut()) }
}

/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleUnload(m: CUmodule) -> CUresult {
    guard("cuModuleUnload", || {
        driver::with(|d| d.module_unload(raw(m.0)))
    })
}

/// # Safety
/// `hfunc` is null or writable; `name` null or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleGetFunction(
    hfunc: *mut CUfunction,
    m: CUmodule,
    name: *const c_char,
) -> CUresult {
    guard("cuModuleGetFunction", || {
        if hfunc.is_null() || name.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: non-null and NUL-terminated (the caller's contract).
        let name = unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned();
        let f = driver::with(|d| d.module_get_function(raw(m.0), &name))?;
        // SAFETY: the caller's contract for `hfunc`.
        unsafe { put(hfunc, CUfunction(handle(f))) }
    })
}

/// `cuFuncGetParamInfo`: the offset and size of parameter `index` in the
/// function's parameter buffer, as the entry's `.param` list lays it out
/// (`CUDA_ERROR_INVALID_VALUE` past the last parameter). Either
/// out-pointer may be null.
///
/// # Safety
/// `offset` and `size` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFuncGetParamInfo(
    f: CUfunction,
    index: usize,
    offset: *mut usize,
    size: *mut usize,
) -> CUresult {
    guard("cuFuncGetParamInfo", || {
        let (o, s) = driver::with(|d| d.func_param_info(raw(f.0), index))?;
        // SAFETY: the caller's contract for both out-pointers (each may be
        // null: not written).
        unsafe {
            put_if(offset, o as usize)?;
            put_if(size, s as usize)
        }
    })
}

/// # Safety
/// `pi` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFuncGetAttribute(
    pi: *mut c_int,
    attrib: c_int,
    f: CUfunction,
) -> CUresult {
    guard("cuFuncGetAttribute", || {
        let v = driver::with(|d| d.func_attribute(raw(f.0), attrib))?;
        // SAFETY: the caller's contract for `pi`.
        unsafe { put(pi, v) }
    })
}

/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFuncSetAttribute(
    f: CUfunction,
    attrib: c_int,
    value: c_int,
) -> CUresult {
    guard("cuFuncSetAttribute", || {
        driver::with(|d| d.func_set_attribute(raw(f.0), attrib, value))
    })
}

/// Accepted (`CU_FUNC_CACHE_PREFER_*`, 0..=3) and ignored.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFuncSetCacheConfig(f: CUfunction, config: u32) -> CUresult {
    guard("cuFuncSetCacheConfig", || {
        driver::with(|d| d.function(raw(f.0)).map(drop))?;
        if config > 3 {
            Err(CUDA_ERROR_INVALID_VALUE)
        } else {
            Ok(())
        }
    })
}

/// Accepted (`CUsharedconfig`, 0..=2) and ignored.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFuncSetSharedMemConfig(f: CUfunction, config: u32) -> CUresult {
    guard("cuFuncSetSharedMemConfig", || {
        driver::with(|d| d.function(raw(f.0)).map(drop))?;
        if config > 2 {
            Err(CUDA_ERROR_INVALID_VALUE)
        } else {
            Ok(())
        }
    })
}

fn occupancy(f: CUfunction, block: c_int, smem: usize) -> Res<c_int> {
    driver::with(|d| {
        let (ctx, func) = d.function(raw(f.0))?;
        let spec = &d.devices[d.contexts[&ctx].device].spec;
        crate::device::max_active_blocks(spec, func, block, smem)
    })
}

/// # Safety
/// `n` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuOccupancyMaxActiveBlocksPerMultiprocessor(
    n: *mut c_int,
    f: CUfunction,
    block: c_int,
    smem: usize,
) -> CUresult {
    guard("cuOccupancyMaxActiveBlocksPerMultiprocessor", || {
        let v = occupancy(f, block, smem)?;
        // SAFETY: the caller's contract for `n`.
        unsafe { put(n, v) }
    })
}

/// # Safety
/// `n` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    n: *mut c_int,
    f: CUfunction,
    block: c_int,
    smem: usize,
    flags: u32,
) -> CUresult {
    guard(
        "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
        || {
            if flags > 1 {
                return Err(CUDA_ERROR_INVALID_VALUE);
            }
            let v = occupancy(f, block, smem)?;
            // SAFETY: the caller's contract for `n`.
            unsafe { put(n, v) }
        },
    )
}

/// The callback `smem_of` runs without the driver's lock held (it may call
/// the driver): the candidate block sizes are taken under the lock, the
/// callback is asked about each, and the answers are used under the lock
/// again.
///
/// # Safety
/// `min_grid` and `block` are null or writable; `smem_of`, if given, is a
/// function safe to call with any block size.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuOccupancyMaxPotentialBlockSize(
    min_grid: *mut c_int,
    block: *mut c_int,
    f: CUfunction,
    smem_of: Option<unsafe extern "C" fn(c_int) -> usize>,
    smem: usize,
    limit: c_int,
) -> CUresult {
    guard("cuOccupancyMaxPotentialBlockSize", || {
        if min_grid.is_null() || block.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let sizes = driver::with(|d| {
            let (_, func) = d.function(raw(f.0))?;
            Ok(crate::device::candidate_block_sizes(func, limit))
        })?;
        // Outside the lock: the callback may call the driver.
        let answers: Vec<(c_int, usize)> = sizes
            .into_iter()
            .map(|b| match smem_of {
                // SAFETY: the caller's contract for the callback.
                Some(cb) => (b, unsafe { cb(b) }),
                None => (b, smem),
            })
            .collect();
        let per_block = |b: c_int| {
            answers
                .iter()
                .find(|&&(k, _)| k == b)
                .map_or(smem, |&(_, s)| s)
        };
        let (g, b) = driver::with(|d| {
            let (ctx, func) = d.function(raw(f.0))?;
            let spec = &d.devices[d.contexts[&ctx].device].spec;
            crate::device::max_potential_block_size(spec, func, per_block, limit)
        })?;
        // SAFETY: the caller's contract for both.
        unsafe {
            put(min_grid, g)?;
            put(block, b)
        }
    })
}

/// `cuModuleGetGlobal`: the device address and size of the module-scope
/// `.global` variable `name` (`CUDA_ERROR_NOT_FOUND` for another name,
/// `.const` variables included). Either out-pointer may be null (that
/// value is not returned), as with the driver; a null `name` is
/// `CUDA_ERROR_INVALID_VALUE`.
///
/// # Safety
/// `dptr` and `bytes` null or writable; `name` null or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleGetGlobal_v2(
    dptr: *mut CUdeviceptr,
    bytes: *mut usize,
    m: CUmodule,
    name: *const c_char,
) -> CUresult {
    guard("cuModuleGetGlobal_v2", || {
        if name.is_null() {
            module_ok(m)?;
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: non-null and NUL-terminated (the caller's contract).
        let name = unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned();
        let (addr, size) = driver::with(|d| d.module_get_global(raw(m.0), &name))?;
        // SAFETY: the caller's contract for both (null ones are skipped).
        unsafe { put_global(dptr, bytes, addr, size) }
    })
}

/// Write a variable's address and size to the out-pointers that are not
/// null (`cuModuleGetGlobal`, `cuLibraryGetGlobal`).
///
/// # Safety
/// `dptr` and `bytes` null or writable.
pub(crate) unsafe fn put_global(
    dptr: *mut CUdeviceptr,
    bytes: *mut usize,
    addr: u64,
    size: usize,
) -> Res<()> {
    // SAFETY: each null or writable (the caller's contract).
    unsafe {
        put_if(dptr, addr as CUdeviceptr)?;
        put_if(bytes, size)
    }
}

/// The kind check for a module handle (used by `cuModuleGetGlobal`).
pub(crate) fn module_ok(m: CUmodule) -> Res<()> {
    driver::with(|d| d.owner(raw(m.0), Kind::Module).map(drop))
}

#[cfg(test)]
mod tests {
    use super::jit_target_cc;

    #[test]
    fn jit_targets_with_a_suffix_base_name_their_compute_capability() {
        // CU_TARGET_COMPUTE_90 and _90A (what Numba passes on an sm_90
        // device), _100F; anything else stays as given (and fails the
        // device check)
        assert_eq!(jit_target_cc(90), 90);
        assert_eq!(jit_target_cc(0x1_0000 + 90), 90);
        assert_eq!(jit_target_cc(0x2_0000 + 100), 100);
        assert_eq!(jit_target_cc(0x4_0000 + 90), 0x4_0000 + 90);
    }
}
