//! Libraries and kernels (CUDA Driver API §6.12): context-independent
//! loading, as numba-cuda and cuda.core load code. See `crate::library`.

use std::ffi::{CStr, CString, c_char, c_int, c_void};

use oxicuda_driver::ffi::{CUdevice, CUdeviceptr, CUfunction, CUmodule, CUresult};

use super::module::{image_bytes, read_options, write_log};
use super::{guard, handle, put, put_if, raw};
use crate::driver;
use crate::error::*;
use crate::jit::JitLog;

/// `CUlibraryOption`s: `CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE`
/// (0) and `CU_LIBRARY_BINARY_IS_PRESERVED` (1); both accepted, neither
/// changes anything here (the image is copied at the load).
const LIBRARY_OPTIONS: u32 = 2;

/// # Safety
/// `options` / `values` hold `n` elements (or are null with `n == 0`).
unsafe fn check_library_options(n: u32, options: *const u32, values: *mut *mut c_void) -> Res<()> {
    if n == 0 {
        return Ok(());
    }
    if options.is_null() || values.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    for i in 0..n as usize {
        // SAFETY: `i < n`.
        if unsafe { options.add(i).read_unaligned() } >= LIBRARY_OPTIONS {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
    }
    Ok(())
}

/// Load `bytes` as a library with the JIT options given.
///
/// # Safety
/// As `cuLibraryLoadData` for the option arrays.
unsafe fn load_library(
    library: *mut *mut c_void,
    bytes: impl FnOnce() -> Res<Vec<u8>>,
    jit: (u32, *mut u32, *mut *mut c_void),
    lib: (u32, *mut u32, *mut *mut c_void),
) -> Res<()> {
    if library.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY: the caller's contract for the arrays.
    let (req, slots) = unsafe { read_options(jit.0, jit.1, jit.2)? };
    // SAFETY: as above.
    unsafe { check_library_options(lib.0, lib.1, lib.2)? };
    let bytes = bytes()?;
    let t0 = std::time::Instant::now();
    let (r, log): (Res<u64>, JitLog) = driver::with(|d| Ok(d.library_load(&bytes, req)))?;
    // SAFETY: the caller's contract for the buffers and slots.
    unsafe {
        write_log(&log.info, slots.info, jit.2);
        write_log(&log.error, slots.error, jit.2);
        if let Some(i) = slots.wall_time {
            let ms = t0.elapsed().as_secs_f32() * 1e3;
            jit.2.add(i).cast::<f32>().write_unaligned(ms);
        }
    }
    let h = r?;
    // SAFETY: the caller's contract for `library`.
    unsafe { put(library, handle(h)) }
}

/// `cuLibraryLoadData`: PTX text (a cubin or fatbin is
/// `CUDA_ERROR_NOT_SUPPORTED`), checked as `cuModuleLoadDataEx` checks it
/// (against the current context's device, or device 0 without one).
///
/// # Safety
/// `library` writable; `code` a NUL-terminated PTX text; the option
/// arrays hold their counts (the JIT log buffers as large as their size
/// options say).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryLoadData(
    library: *mut *mut c_void,
    code: *const c_void,
    jit_options: *mut u32,
    jit_values: *mut *mut c_void,
    n_jit: u32,
    lib_options: *mut u32,
    lib_values: *mut *mut c_void,
    n_lib: u32,
) -> CUresult {
    guard("cuLibraryLoadData", || {
        // SAFETY: the caller's contract.
        unsafe {
            load_library(
                library,
                // SAFETY: the caller's contract for `code`.
                || image_bytes(code),
                (n_jit, jit_options, jit_values),
                (n_lib, lib_options, lib_values),
            )
        }
    })
}

/// The bytes of file `path` (`CUDA_ERROR_FILE_NOT_FOUND` if it cannot be
/// read).
///
/// # Safety
/// `path` is null or NUL-terminated.
pub(super) unsafe fn file_bytes(path: *const c_char) -> Res<Vec<u8>> {
    if path.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY: NUL-terminated (the caller's contract).
    let p = unsafe { CStr::from_ptr(path) }
        .to_string_lossy()
        .into_owned();
    std::fs::read(p).map_err(|_| CUDA_ERROR_FILE_NOT_FOUND)
}

/// `cuLibraryLoadFromFile`: as [`cuLibraryLoadData`] with the file's
/// contents; `CUDA_ERROR_FILE_NOT_FOUND` for a file that cannot be read.
///
/// # Safety
/// As [`cuLibraryLoadData`]; `path` NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryLoadFromFile(
    library: *mut *mut c_void,
    path: *const c_char,
    jit_options: *mut u32,
    jit_values: *mut *mut c_void,
    n_jit: u32,
    lib_options: *mut u32,
    lib_values: *mut *mut c_void,
    n_lib: u32,
) -> CUresult {
    guard("cuLibraryLoadFromFile", || {
        // SAFETY: the caller's contract.
        unsafe {
            load_library(
                library,
                // SAFETY: the caller's contract for `path`.
                || file_bytes(path),
                (n_jit, jit_options, jit_values),
                (n_lib, lib_options, lib_values),
            )
        }
    })
}

/// `cuModuleLoad`: a module from a PTX file (`CUDA_ERROR_FILE_NOT_FOUND`
/// for a file that cannot be read).
///
/// # Safety
/// `module` writable; `path` NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleLoad(module: *mut CUmodule, path: *const c_char) -> CUresult {
    guard("cuModuleLoad", || {
        if module.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        driver::with(|d| d.current_ctx().map(drop))?;
        // SAFETY: the caller's contract for `path`.
        let mut bytes = unsafe { file_bytes(path)? };
        bytes.retain(|&b| b != 0);
        let (r, _) = driver::with(|d| Ok(d.module_load(&bytes, Default::default())))?;
        // SAFETY: the caller's contract for `module`.
        unsafe { put(module, CUmodule(handle(r?))) }
    })
}

/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryUnload(library: *mut c_void) -> CUresult {
    guard("cuLibraryUnload", || {
        driver::with(|d| d.library_unload(raw(library)))
    })
}

/// Read a NUL-terminated name (`CUDA_ERROR_INVALID_VALUE` when null).
///
/// # Safety
/// `name` is null or NUL-terminated.
unsafe fn name_of(name: *const c_char) -> Res<String> {
    if name.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY: NUL-terminated (the caller's contract).
    Ok(unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned())
}

/// `cuLibraryGetKernel`: `CUDA_ERROR_NOT_FOUND` for a name that is not an
/// entry of the library.
///
/// # Safety
/// `kernel` null or writable; `name` null or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryGetKernel(
    kernel: *mut *mut c_void,
    library: *mut c_void,
    name: *const c_char,
) -> CUresult {
    guard("cuLibraryGetKernel", || {
        if kernel.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: the caller's contract.
        let name = unsafe { name_of(name)? };
        let k = driver::with(|d| d.library_get_kernel(raw(library), &name))?;
        // SAFETY: the caller's contract for `kernel`.
        unsafe { put(kernel, handle(k)) }
    })
}

/// `cuLibraryGetModule`: the library's module in the current context
/// (loaded there now if it is not yet).
///
/// # Safety
/// `module` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryGetModule(
    module: *mut CUmodule,
    library: *mut c_void,
) -> CUresult {
    guard("cuLibraryGetModule", || {
        if module.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let m = driver::with(|d| d.library_module(raw(library)))?;
        // SAFETY: the caller's contract for `module`.
        unsafe { put(module, CUmodule(handle(m))) }
    })
}

/// `cuKernelGetFunction`: the kernel as a function of the current context.
///
/// # Safety
/// `func` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuKernelGetFunction(
    func: *mut CUfunction,
    kernel: *mut c_void,
) -> CUresult {
    guard("cuKernelGetFunction", || {
        if func.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let f = driver::with(|d| d.kernel_function(raw(kernel)))?;
        // SAFETY: the caller's contract for `func`.
        unsafe { put(func, CUfunction(handle(f))) }
    })
}

/// `cuKernelGetAttribute`: what `cuFuncGetAttribute` answers for the
/// kernel's function in the current context, which must be on `dev`.
///
/// # Safety
/// `pi` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuKernelGetAttribute(
    pi: *mut c_int,
    attrib: c_int,
    kernel: *mut c_void,
    dev: CUdevice,
) -> CUresult {
    guard("cuKernelGetAttribute", || {
        if pi.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let v = driver::with(|d| {
            let f = d.kernel_function_on(raw(kernel), dev)?;
            d.func_attribute(f, attrib)
        })?;
        // SAFETY: the caller's contract for `pi`.
        unsafe { put(pi, v) }
    })
}

/// `cuKernelSetAttribute`: as `cuFuncSetAttribute` on the kernel's
/// function in the current context, which must be on `dev`.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuKernelSetAttribute(
    attrib: c_int,
    value: c_int,
    kernel: *mut c_void,
    dev: CUdevice,
) -> CUresult {
    guard("cuKernelSetAttribute", || {
        driver::with(|d| {
            let f = d.kernel_function_on(raw(kernel), dev)?;
            d.func_set_attribute(f, attrib, value)
        })
    })
}

/// `cuKernelGetName`: the entry's name (a string that lives as long as
/// the process).
///
/// # Safety
/// `name` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuKernelGetName(
    name: *mut *const c_char,
    kernel: *mut c_void,
) -> CUresult {
    guard("cuKernelGetName", || {
        if name.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let (_, n) = driver::with(|d| d.kernel(raw(kernel)))?;
        let s = CString::new(n).map_err(|_| CUDA_ERROR_INVALID_VALUE)?;
        // Interned: one allocation per kernel name, kept for the process.
        let p = intern(s);
        // SAFETY: the caller's contract for `name`.
        unsafe { put(name, p) }
    })
}

/// A pointer to `s` that stays valid for the process (one copy per text).
fn intern(s: CString) -> *const c_char {
    use std::collections::HashSet;
    use std::sync::Mutex;
    static NAMES: Mutex<Option<HashSet<&'static CStr>>> = Mutex::new(None);
    let mut g = NAMES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let set = g.get_or_insert_with(HashSet::new);
    if let Some(&k) = set.get(s.as_c_str()) {
        return k.as_ptr();
    }
    let leaked: &'static CStr = Box::leak(s.into_boxed_c_str());
    set.insert(leaked);
    leaked.as_ptr()
}

/// `cuLibraryGetGlobal`: the device address and size of the library's
/// module-scope `.global` variable `name` in the current context (the
/// library is loaded there first if need be), as `cuModuleGetGlobal`:
/// `CUDA_ERROR_NOT_FOUND` for another name; either out-pointer may be null.
///
/// # Safety
/// `dptr` and `bytes` null or writable; `name` null or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryGetGlobal(
    dptr: *mut CUdeviceptr,
    bytes: *mut usize,
    library: *mut c_void,
    name: *const c_char,
) -> CUresult {
    guard("cuLibraryGetGlobal", || {
        // SAFETY: the caller's contract.
        let name = unsafe { name_of(name)? };
        let (addr, size) = driver::with(|d| d.library_get_global(raw(library), &name))?;
        // SAFETY: the caller's contract for both (null ones are skipped).
        unsafe { super::module::put_global(dptr, bytes, addr, size) }
    })
}

/// `cuLibraryGetKernelCount`.
///
/// # Safety
/// `count` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryGetKernelCount(
    count: *mut u32,
    library: *mut c_void,
) -> CUresult {
    guard("cuLibraryGetKernelCount", || {
        if count.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let n = driver::with(|d| d.library_kernel_count(raw(library)))?;
        // SAFETY: the caller's contract for `count`.
        unsafe { put(count, u32::try_from(n).unwrap_or(u32::MAX)) }
    })
}

/// `cuLibraryEnumerateKernels`: the kernels of the library's first `n`
/// entries, in PTX order (fewer when it has fewer); `n == 0` is
/// `CUDA_ERROR_INVALID_VALUE`.
///
/// # Safety
/// `kernels` null or writable for `n` handles.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryEnumerateKernels(
    kernels: *mut *mut c_void,
    n: u32,
    library: *mut c_void,
) -> CUresult {
    guard("cuLibraryEnumerateKernels", || {
        if kernels.is_null() || n == 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let ks = driver::with(|d| d.library_kernels(raw(library), n as usize))?;
        for (i, k) in ks.into_iter().enumerate() {
            // SAFETY: `i < n` slots are writable (the caller's contract).
            unsafe { put(kernels.add(i), handle(k))? };
        }
        Ok(())
    })
}

/// `cuKernelGetLibrary`.
///
/// # Safety
/// `library` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuKernelGetLibrary(
    library: *mut *mut c_void,
    kernel: *mut c_void,
) -> CUresult {
    guard("cuKernelGetLibrary", || {
        if library.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let (l, _) = driver::with(|d| d.kernel(raw(kernel)))?;
        // SAFETY: the caller's contract for `library`.
        unsafe { put(library, handle(l)) }
    })
}

/// `cuKernelGetParamInfo`: the offset and size of parameter `index` in
/// the kernel's parameter buffer (`CUDA_ERROR_INVALID_VALUE` past the
/// last parameter); no context needed.
///
/// # Safety
/// `offset` and `size` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuKernelGetParamInfo(
    kernel: *mut c_void,
    index: usize,
    offset: *mut usize,
    size: *mut usize,
) -> CUresult {
    guard("cuKernelGetParamInfo", || {
        let (o, s) = driver::with(|d| d.kernel_param_info(raw(kernel), index))?;
        // SAFETY: the caller's contract for both out-pointers (each may be
        // null: not written).
        unsafe {
            put_if(offset, o as usize)?;
            put_if(size, s as usize)
        }
    })
}
