//! Context-independent loading (`cuLibrary*`, `cuKernel*`), `cuModuleLoad`
//! and `cuLaunchKernelEx` through the C ABI, with their documented codes.

use std::ffi::{CStr, c_char, c_void};
use std::ptr::{null, null_mut};

use ptxsmith_cuda_emu::exports as cu;
use ptxsmith_cuda_emu::exports::{LaunchAttribute, LaunchConfig};

mod common;
use common::*;

fn hv(h: u64) -> *mut c_void {
    std::ptr::without_provenance_mut(h as usize)
}

fn load_library(ptx: &str) -> Result<*mut c_void, CUresult> {
    let text = std::ffi::CString::new(ptx).unwrap();
    let mut lib = null_mut();
    // SAFETY: a NUL-terminated image; no options.
    let rc = unsafe {
        cu::cuLibraryLoadData(
            &mut lib,
            text.as_ptr().cast(),
            null_mut(),
            null_mut(),
            0,
            null_mut(),
            null_mut(),
            0,
        )
    };
    if rc == CUDA_SUCCESS { Ok(lib) } else { Err(rc) }
}

fn kernel(lib: *mut c_void, name: &CStr) -> Result<*mut c_void, CUresult> {
    let mut k = null_mut();
    // SAFETY: valid out-pointer and name.
    let rc = unsafe { cu::cuLibraryGetKernel(&mut k, lib, name.as_ptr()) };
    if rc == CUDA_SUCCESS { Ok(k) } else { Err(rc) }
}

fn kernel_function(k: *mut c_void) -> Result<CUfunction, CUresult> {
    let mut f = CUfunction::default();
    // SAFETY: valid out-pointer.
    let rc = unsafe { cu::cuKernelGetFunction(&mut f, k) };
    if rc == CUDA_SUCCESS { Ok(f) } else { Err(rc) }
}

fn fill_and_check(f: CUfunction, value: u32) {
    let p = alloc(64 * 4);
    ok(launch(
        f,
        1,
        64,
        0,
        CUstream::default(),
        &[Arg::U64(p), Arg::U32(64), Arg::U32(value)],
    ));
    assert_eq!(read_u32(p, 64), filled(value));
}

/// What `fill(p, 64, v)` writes: `v + i` at element `i`.
fn filled(v: u32) -> Vec<u32> {
    (0..64).map(|i| v + i).collect()
}

#[test]
fn a_library_loaded_without_a_context_runs_in_every_context() {
    init();
    // No context is current on this test's thread: the library is checked
    // against device 0 and belongs to no context.
    let lib = std::thread::spawn(|| load_library(EMU_PTX).map(|l| l as usize))
        .join()
        .unwrap()
        .unwrap() as *mut c_void;
    let k = kernel(lib, c"fill").unwrap();
    assert_eq!(
        kernel(lib, c"fill").unwrap(),
        k,
        "same handle for same name"
    );
    is(
        kernel(lib, c"no_such_entry").unwrap_err(),
        CUDA_ERROR_NOT_FOUND,
    );
    // Without a current context the kernel has no function.
    let ku = k as usize;
    let rc = std::thread::spawn(move || kernel_function(hv(ku as u64)).unwrap_err())
        .join()
        .unwrap();
    is(rc, CUDA_ERROR_INVALID_CONTEXT);

    let a = TestCtx::new();
    let fa = kernel_function(k).unwrap();
    assert_eq!(kernel_function(k).unwrap(), fa);
    fill_and_check(fa, 7);
    let mut m = CUmodule::default();
    // SAFETY: valid out-pointer.
    ok(unsafe { cu::cuLibraryGetModule(&mut m, lib) });
    assert_eq!(function(m, "fill").unwrap(), fa, "the library's module");

    let b = TestCtx::new();
    let fb = kernel_function(k).unwrap();
    assert_ne!(fa, fb, "a function of each context");
    fill_and_check(fb, 9);
    // A kernel handle cast to CUfunction launches too.
    fill_and_check(CUfunction(k), 11);
    let mut v = 0;
    // SAFETY: valid out-pointer.
    ok(unsafe { cu::cuKernelGetAttribute(&mut v, 0, k, 0) });
    assert_eq!(v, 1024, "MAX_THREADS_PER_BLOCK");
    // SAFETY: as above.
    is(
        unsafe { cu::cuKernelGetAttribute(&mut v, 0, k, 7) },
        CUDA_ERROR_INVALID_DEVICE,
    );
    // SAFETY: as above.
    is(
        unsafe { cu::cuKernelGetAttribute(&mut v, 999, k, 0) },
        CUDA_ERROR_INVALID_VALUE,
    );
    // SAFETY: no pointers.
    ok(unsafe { cu::cuKernelSetAttribute(8, 1024, k, 0) });
    // SAFETY: valid out-pointer.
    ok(unsafe { cu::cuFuncGetAttribute(&mut v, 8, fb) });
    assert_eq!(v, 1024, "set through the kernel");
    let mut name: *const c_char = null();
    // SAFETY: valid out-pointer.
    ok(unsafe { cu::cuKernelGetName(&mut name, k) });
    // SAFETY: the driver's string lives for the process.
    assert_eq!(unsafe { CStr::from_ptr(name) }, c"fill");
    // Enumeration, the kernel's library and its parameter layout
    // (fill(u64 p, u32 n, u32 v): offsets 0, 8, 12).
    let mut count = 0u32;
    // SAFETY: valid out-pointers.
    ok(unsafe { cu::cuLibraryGetKernelCount(&mut count, lib) });
    assert_eq!(count, 10, "the entries of emu.ptx");
    let mut ks = vec![null_mut(); count as usize];
    // SAFETY: `count` writable slots.
    ok(unsafe { cu::cuLibraryEnumerateKernels(ks.as_mut_ptr(), count, lib) });
    assert_eq!(ks[0], k, "fill is the first entry");
    let mut owner = null_mut();
    // SAFETY: valid out-pointer.
    ok(unsafe { cu::cuKernelGetLibrary(&mut owner, k) });
    assert_eq!(owner, lib);
    let (mut off, mut size) = (0usize, 0usize);
    for (i, want) in [(0, (0, 8)), (1, (8, 4)), (2, (12, 4))] {
        // SAFETY: valid out-pointers.
        ok(unsafe { cu::cuKernelGetParamInfo(k, i, &mut off, &mut size) });
        assert_eq!((off, size), want, "parameter {i}");
    }
    // SAFETY: as above.
    is(
        unsafe { cu::cuKernelGetParamInfo(k, 3, &mut off, &mut size) },
        CUDA_ERROR_INVALID_VALUE,
    );
    // SAFETY: null array / zero count.
    is(
        unsafe { cu::cuLibraryEnumerateKernels(ks.as_mut_ptr(), 0, lib) },
        CUDA_ERROR_INVALID_VALUE,
    );
    let (mut dptr, mut bytes) = (0u64, 0usize);
    // SAFETY: valid out-pointers.
    is(
        unsafe { cu::cuLibraryGetGlobal(&mut dptr, &mut bytes, lib, c"g".as_ptr()) },
        CUDA_ERROR_NOT_FOUND,
    );

    // SAFETY: a handle value.
    ok(unsafe { cu::cuLibraryUnload(lib) });
    is(kernel_function(k).unwrap_err(), CUDA_ERROR_INVALID_HANDLE);
    is(kernel(lib, c"fill").unwrap_err(), CUDA_ERROR_INVALID_HANDLE);
    is(
        launch(
            fb,
            1,
            1,
            0,
            CUstream::default(),
            &[Arg::U64(0), Arg::U32(0), Arg::U32(0)],
        ),
        CUDA_ERROR_INVALID_HANDLE,
    );
    // SAFETY: a handle value.
    is(
        unsafe { cu::cuLibraryUnload(lib) },
        CUDA_ERROR_INVALID_HANDLE,
    );
    // SAFETY: a handle value.
    is(unsafe { cu::cuModuleUnload(m) }, CUDA_ERROR_INVALID_HANDLE);
    drop((a, b));
}

#[test]
fn library_loads_are_checked_as_module_loads() {
    let _c = TestCtx::new();
    is(
        load_library(UNKNOWN_PTX).unwrap_err(),
        CUDA_ERROR_INVALID_PTX,
    );
    let future = with_header(EMU_PTX, "9.9", "sm_90");
    is(
        load_library(&future).unwrap_err(),
        CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
    );
    let mut lib = null_mut();
    // SAFETY: null image / null out-pointer are refused.
    unsafe {
        is(
            cu::cuLibraryLoadData(
                &mut lib,
                null(),
                null_mut(),
                null_mut(),
                0,
                null_mut(),
                null_mut(),
                0,
            ),
            CUDA_ERROR_INVALID_VALUE,
        );
        let text = std::ffi::CString::new(EMU_PTX).unwrap();
        let mut opt = 7u32;
        let mut val = null_mut();
        is(
            cu::cuLibraryLoadData(
                &mut lib,
                text.as_ptr().cast(),
                null_mut(),
                null_mut(),
                0,
                &mut opt,
                &mut val,
                1,
            ),
            CUDA_ERROR_INVALID_VALUE,
        );
        is(
            cu::cuLibraryLoadFromFile(
                &mut lib,
                c"/nonexistent/x.ptx".as_ptr(),
                null_mut(),
                null_mut(),
                0,
                null_mut(),
                null_mut(),
                0,
            ),
            CUDA_ERROR_FILE_NOT_FOUND,
        );
    }
    // Without a context, the detached checks refuse the same.
    let rc = std::thread::spawn(move || load_library(&future).unwrap_err())
        .join()
        .unwrap();
    is(rc, CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
    let rc = std::thread::spawn(|| load_library(UNKNOWN_PTX).unwrap_err())
        .join()
        .unwrap();
    is(rc, CUDA_ERROR_INVALID_PTX);
    is(
        kernel(hv(0x1234), c"fill").unwrap_err(),
        CUDA_ERROR_INVALID_HANDLE,
    );
}

const CUDA_ERROR_FILE_NOT_FOUND: CUresult = 301;

#[test]
fn module_load_reads_a_ptx_file() {
    let _c = TestCtx::new();
    let path = std::env::temp_dir().join(format!("ptxsmith-emu-{}.ptx", std::process::id()));
    std::fs::write(&path, EMU_PTX).unwrap();
    let cpath = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    let mut m = CUmodule::default();
    // SAFETY: valid out-pointer and path.
    ok(unsafe { cu::cuModuleLoad(&mut m, cpath.as_ptr()) });
    fill_and_check(function(m, "fill").unwrap(), 5);
    let mut lib = null_mut();
    // SAFETY: as above.
    ok(unsafe {
        cu::cuLibraryLoadFromFile(
            &mut lib,
            cpath.as_ptr(),
            null_mut(),
            null_mut(),
            0,
            null_mut(),
            null_mut(),
            0,
        )
    });
    std::fs::remove_file(&path).unwrap();
    // SAFETY: as above.
    is(
        unsafe { cu::cuModuleLoad(&mut m, cpath.as_ptr()) },
        CUDA_ERROR_FILE_NOT_FOUND,
    );
    // SAFETY: null arguments are refused.
    is(
        unsafe { cu::cuModuleLoad(&mut m, null()) },
        CUDA_ERROR_INVALID_VALUE,
    );
}

fn attr(id: u32, v: [u32; 3]) -> LaunchAttribute {
    let mut value = [0u32; 16];
    value[..3].copy_from_slice(&v);
    LaunchAttribute {
        id,
        pad: [0; 4],
        value,
    }
}

fn launch_ex(f: CUfunction, p: u64, value: u32, attrs: &mut [LaunchAttribute]) -> CUresult {
    let (mut a0, mut a1, mut a2) = (p, 64u32, value);
    let mut params: [*mut c_void; 3] = [
        (&raw mut a0).cast(),
        (&raw mut a1).cast(),
        (&raw mut a2).cast(),
    ];
    let cfg = LaunchConfig {
        grid: [1, 1, 1],
        block: [64, 1, 1],
        smem: 0,
        stream: CUstream::default(),
        attrs: attrs.as_mut_ptr(),
        num_attrs: attrs.len() as u32,
    };
    // SAFETY: a valid config and one pointer per parameter.
    unsafe { cu::cuLaunchKernelEx(&cfg, f, params.as_mut_ptr(), null_mut()) }
}

#[test]
fn launch_kernel_ex_runs_supported_attributes_and_refuses_others() {
    let _c = TestCtx::new();
    let f = emu_kernel("fill");
    let p = alloc(64 * 4);
    ok(launch_ex(f, p, 3, &mut []));
    assert_eq!(read_u32(p, 64), filled(3));
    let mut fine = [
        attr(0, [0; 3]),
        attr(2, [0; 3]),
        attr(4, [1, 1, 1]),
        attr(6, [0; 3]),
        attr(8, [5, 0, 0]),
    ];
    ok(launch_ex(f, p, 4, &mut fine));
    assert_eq!(read_u32(p, 64), filled(4));
    for (a, want) in [
        (attr(2, [1, 0, 0]), CUDA_ERROR_NOT_SUPPORTED),
        // a grid of one CTA is no multiple of a cluster of two
        (attr(4, [2, 1, 1]), 912),
        (attr(4, [0, 1, 1]), CUDA_ERROR_INVALID_VALUE),
        (attr(6, [1, 0, 0]), CUDA_ERROR_NOT_SUPPORTED),
        (attr(1, [0; 3]), CUDA_ERROR_NOT_SUPPORTED),
        (attr(7, [0; 3]), CUDA_ERROR_NOT_SUPPORTED),
        (attr(99, [0; 3]), CUDA_ERROR_INVALID_VALUE),
    ] {
        is(launch_ex(f, p, 5, &mut [a]), want);
    }
    assert_eq!(read_u32(p, 64), filled(4), "refused launches ran nothing");
    // SAFETY: null config.
    is(
        unsafe { cu::cuLaunchKernelEx(null(), f, null_mut(), null_mut()) },
        CUDA_ERROR_INVALID_VALUE,
    );
    let cfg = LaunchConfig {
        grid: [1, 1, 1],
        block: [1, 1, 1],
        smem: 0,
        stream: CUstream::default(),
        attrs: null_mut(),
        num_attrs: 1,
    };
    // SAFETY: attrs null with a count: refused.
    is(
        unsafe { cu::cuLaunchKernelEx(&cfg, f, null_mut(), null_mut()) },
        CUDA_ERROR_INVALID_VALUE,
    );
}

#[test]
fn launch_kernel_ex_refuses_a_bad_stream() {
    let _c = TestCtx::new();
    let t = emu_kernel("trap_now");
    let mut cfg = LaunchConfig {
        grid: [1, 1, 1],
        block: [1, 1, 1],
        smem: 0,
        stream: CUstream(hv(0x1234)),
        attrs: null_mut(),
        num_attrs: 0,
    };
    // SAFETY: a valid config; no parameters.
    is(
        unsafe { cu::cuLaunchKernelEx(&cfg, t, null_mut(), null_mut()) },
        CUDA_ERROR_INVALID_HANDLE,
    );
    cfg.stream = stream(0);
    // SAFETY: as above.
    ok(unsafe { cu::cuLaunchKernelEx(&cfg, t, null_mut(), null_mut()) });
    is(sync(cfg.stream), CUDA_ERROR_LAUNCH_FAILED);
}
