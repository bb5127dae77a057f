//! The JIT linker (CUDA Driver API §6.10: `cuLinkCreate`,
//! `cuLinkAddData`, `cuLinkAddFile`, `cuLinkComplete`, `cuLinkDestroy`)
//! for PTX inputs: a link of one PTX input completes to that PTX text,
//! which `cuModuleLoadData` then loads. Each input is checked when it is
//! added, as the driver's JIT compiles it then (the codes and error log
//! of `cuModuleLoadDataEx`, the log written to the buffer given to
//! `cuLinkCreate`). A second PTX input is `CUDA_ERROR_NOT_SUPPORTED`
//! (resolving `.extern` symbols across PTX modules is not emulated), and
//! so are cubin, fatbin, object, library and NVVM inputs;
//! `cuLinkComplete` of a link without input is `CUDA_ERROR_INVALID_VALUE`.

use std::collections::HashMap;
use std::ffi::{c_char, c_void};
use std::sync::{Mutex, PoisonError};

use oxicuda_driver::ffi::CUresult;

use super::library::file_bytes;
use super::module::{read_options, write_log};
use super::{guard, handle, put, raw};
use crate::driver;
use crate::error::*;
use crate::handles::Kind;
use crate::jit::JitRequest;

/// `CU_JIT_INPUT_PTX`; the other `CUjitInputType`s go up to
/// `CU_JIT_INPUT_NVVM` (5).
const INPUT_PTX: u32 = 1;
const INPUT_LAST: u32 = 5;

/// One link in progress.
struct LinkState {
    req: JitRequest,
    /// The option arrays given to `cuLinkCreate` (their log buffers get
    /// the logs of each input, as the driver's), as addresses.
    options: (u32, usize, usize),
    /// The one PTX input, NUL-terminated.
    ptx: Option<Vec<u8>>,
    /// `cuLinkComplete` was called: the image handed out.
    completed: bool,
}

static LINKS: Mutex<Option<HashMap<u64, LinkState>>> = Mutex::new(None);

fn with_links<T>(f: impl FnOnce(&mut HashMap<u64, LinkState>) -> Res<T>) -> Res<T> {
    let mut g = LINKS.lock().unwrap_or_else(PoisonError::into_inner);
    f(g.get_or_insert_with(HashMap::new))
}

/// # Safety
/// As `cuLinkCreate`: the option arrays hold `n` elements and stay valid
/// (with their log buffers) until `cuLinkDestroy`; `state` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLinkCreate_v2(
    n: u32,
    options: *mut u32,
    values: *mut *mut c_void,
    state: *mut *mut c_void,
) -> CUresult {
    guard("cuLinkCreate_v2", || {
        if state.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: the caller's contract for the arrays.
        let (req, _) = unsafe { read_options(n, options, values)? };
        let h = driver::with(|d| {
            d.current_ctx()?;
            Ok(d.new_handle(Kind::Link))
        })?;
        with_links(|l| {
            l.insert(
                h,
                LinkState {
                    req,
                    options: (n, options as usize, values as usize),
                    ptx: None,
                    completed: false,
                },
            );
            Ok(())
        })?;
        // SAFETY: the caller's contract for `state`.
        unsafe { put(state, handle(h)) }
    })
}

/// # Safety
/// As [`cuLinkCreate_v2`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLinkCreate(
    n: u32,
    options: *mut u32,
    values: *mut *mut c_void,
    state: *mut *mut c_void,
) -> CUresult {
    // SAFETY: the same contract.
    unsafe { cuLinkCreate_v2(n, options, values, state) }
}

/// Add PTX `bytes` (without a NUL) to link `h`: checked by loading it in
/// the current context (then unloaded), the logs written to the buffers
/// given to `cuLinkCreate`.
fn add_ptx(h: u64, ty: u32, bytes: Vec<u8>) -> Res<()> {
    if ty > INPUT_LAST {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let (req, (n, options, values)) = with_links(|l| {
        let s = l.get(&h).ok_or(CUDA_ERROR_INVALID_HANDLE)?;
        if s.completed || s.ptx.is_some() || ty != INPUT_PTX {
            return Err(CUDA_ERROR_NOT_SUPPORTED);
        }
        Ok((s.req, s.options))
    })?;
    let (r, log) = driver::with(|d| {
        let (r, log) = d.module_load(&bytes, req);
        if let Ok(m) = r {
            d.module_unload(m)?;
        }
        Ok((r, log))
    })?;
    let values = values as *mut *mut c_void;
    // SAFETY: the arrays given to cuLinkCreate are still valid (the
    // caller's contract, until cuLinkDestroy); read again for the slots.
    unsafe {
        let (_, slots) = read_options(n, options as *const u32, values)?;
        write_log(&log.info, slots.info, values);
        write_log(&log.error, slots.error, values);
    }
    r?;
    let mut ptx = bytes;
    ptx.push(0);
    with_links(|l| {
        l.get_mut(&h).ok_or(CUDA_ERROR_INVALID_HANDLE)?.ptx = Some(ptx);
        Ok(())
    })
}

/// The link handle `state` names (`CUDA_ERROR_INVALID_HANDLE`).
fn link_handle(state: *mut c_void) -> Res<u64> {
    let h = raw(state);
    if !crate::handles::is(h, Kind::Link) {
        return Err(CUDA_ERROR_INVALID_HANDLE);
    }
    Ok(h)
}

/// # Safety
/// As `cuLinkAddData`: `data` readable for `size` bytes; `name` null or
/// NUL-terminated; the option arrays hold `n` elements.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLinkAddData_v2(
    state: *mut c_void,
    ty: u32,
    data: *mut c_void,
    size: usize,
    _name: *const c_char,
    n: u32,
    options: *mut u32,
    values: *mut *mut c_void,
) -> CUresult {
    guard("cuLinkAddData_v2", || {
        let h = link_handle(state)?;
        if data.is_null() || size == 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: the caller's contract for the arrays (only checked).
        unsafe { read_options(n, options, values)? };
        super::host_range_ok(data as usize, size)?;
        // SAFETY: readable for `size` bytes (the caller's contract).
        let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) };
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(size);
        add_ptx(h, ty, bytes[..end].to_vec())
    })
}

/// # Safety
/// As [`cuLinkAddData_v2`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLinkAddData(
    state: *mut c_void,
    ty: u32,
    data: *mut c_void,
    size: usize,
    name: *const c_char,
    n: u32,
    options: *mut u32,
    values: *mut *mut c_void,
) -> CUresult {
    // SAFETY: the same contract.
    unsafe { cuLinkAddData_v2(state, ty, data, size, name, n, options, values) }
}

/// `cuLinkAddFile`: as `cuLinkAddData` with the file's contents
/// (`CUDA_ERROR_FILE_NOT_FOUND` if it cannot be read).
///
/// # Safety
/// `path` null or NUL-terminated; the option arrays hold `n` elements.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLinkAddFile_v2(
    state: *mut c_void,
    ty: u32,
    path: *const c_char,
    n: u32,
    options: *mut u32,
    values: *mut *mut c_void,
) -> CUresult {
    guard("cuLinkAddFile_v2", || {
        let h = link_handle(state)?;
        if path.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: the caller's contract for the arrays (only checked).
        unsafe { read_options(n, options, values)? };
        // SAFETY: NUL-terminated (the caller's contract).
        let mut bytes = unsafe { file_bytes(path)? };
        if let Some(end) = bytes.iter().position(|&b| b == 0) {
            bytes.truncate(end);
        }
        add_ptx(h, ty, bytes)
    })
}

/// # Safety
/// As [`cuLinkAddFile_v2`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLinkAddFile(
    state: *mut c_void,
    ty: u32,
    path: *const c_char,
    n: u32,
    options: *mut u32,
    values: *mut *mut c_void,
) -> CUresult {
    // SAFETY: the same contract.
    unsafe { cuLinkAddFile_v2(state, ty, path, n, options, values) }
}

/// `cuLinkComplete`: `*image` is the linked image (the PTX text,
/// NUL-terminated, owned by the link until `cuLinkDestroy`), `*size` its
/// bytes.
///
/// # Safety
/// `image` and `size` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLinkComplete(
    state: *mut c_void,
    image: *mut *mut c_void,
    size: *mut usize,
) -> CUresult {
    guard("cuLinkComplete", || {
        let h = link_handle(state)?;
        if image.is_null() || size.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let (p, n) = with_links(|l| {
            let s = l.get_mut(&h).ok_or(CUDA_ERROR_INVALID_HANDLE)?;
            let ptx = s.ptx.as_mut().ok_or(CUDA_ERROR_INVALID_VALUE)?;
            s.completed = true;
            Ok((ptx.as_mut_ptr() as usize, ptx.len()))
        })?;
        // SAFETY: the caller's contract for both out-pointers; the image
        // lives in the link state until cuLinkDestroy (never moved: the
        // state's vector is not touched again but to drop it).
        unsafe {
            put(image, std::ptr::with_exposed_provenance_mut(p))?;
            put(size, n)
        }
    })
}

/// `cuLinkDestroy`: the image `cuLinkComplete` gave is freed.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLinkDestroy(state: *mut c_void) -> CUresult {
    guard("cuLinkDestroy", || {
        let h = link_handle(state)?;
        with_links(|l| l.remove(&h).map(drop).ok_or(CUDA_ERROR_INVALID_HANDLE))
    })
}
