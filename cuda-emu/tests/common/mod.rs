//! Helpers for the emulator's tests: they call the exported C ABI
//! functions directly (the library is also an rlib), each test in a
//! context of its own (`cuCtxCreate`), so a fault in one test poisons only
//! that test's context.
#![allow(dead_code)]

use std::ffi::{CString, c_char, c_void};

pub use oxicuda_driver::ffi::*;
pub use ptxsmith_cuda_emu::error::name;
use ptxsmith_cuda_emu::exports as cu;

/// The kernels of `tests/ptx/emu.ptx` (`.version 7.0`, `.target sm_70`).
pub const EMU_PTX: &str = include_str!("../ptx/emu.ptx");
/// A module with an instruction no PTX ISA has, on line 12.
pub const UNKNOWN_PTX: &str = include_str!("../ptx/unknown.ptx");

/// `EMU_PTX` with another `.version` and `.target`.
pub fn with_header(ptx: &str, version: &str, target: &str) -> String {
    ptx.lines()
        .map(|l| match l.split_whitespace().next() {
            Some(".version") => format!(".version {version}"),
            Some(".target") => format!(".target {target}"),
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Assert success, naming the code otherwise.
#[track_caller]
pub fn ok(code: CUresult) {
    assert_eq!(code, CUDA_SUCCESS, "{}", name(code));
}

/// Assert `code` is `want`, naming both.
#[track_caller]
pub fn is(code: CUresult, want: CUresult) {
    assert_eq!(code, want, "got {}, want {}", name(code), name(want));
}

/// `cuInit(0)`.
pub fn init() {
    // SAFETY: no pointer arguments.
    ok(unsafe { cu::cuInit(0) });
}

/// A context made for one test on device `dev`, current on the calling
/// thread; destroyed on drop.
pub struct TestCtx(pub CUcontext);

impl TestCtx {
    pub fn new() -> TestCtx {
        TestCtx::on(0)
    }

    pub fn on(dev: i32) -> TestCtx {
        init();
        let mut c = CUcontext::default();
        // SAFETY: `c` is a valid out-pointer.
        ok(unsafe { cu::cuCtxCreate_v2(&mut c, 0, dev) });
        TestCtx(c)
    }

    /// Make this context current on the calling thread.
    pub fn bind(&self) {
        // SAFETY: a handle value.
        ok(unsafe { cu::cuCtxSetCurrent(self.0) });
    }
}

impl Drop for TestCtx {
    fn drop(&mut self) {
        // SAFETY: a handle value; the test no longer uses the context.
        unsafe { cu::cuCtxDestroy_v2(self.0) };
    }
}

/// A JIT load with both logs: `Ok(module)` or `Err((code, error log))`;
/// the info log in both cases.
pub fn load_logged(ptx: &str) -> (Result<CUmodule, (CUresult, String)>, String) {
    let text = CString::new(ptx).unwrap();
    let mut info = vec![0u8; 4096];
    let mut error = vec![0u8; 4096];
    let mut opts: [u32; 4] = [3, 4, 5, 6];
    let mut vals: [*mut c_void; 4] = [
        info.as_mut_ptr().cast(),
        std::ptr::without_provenance_mut(info.len()),
        error.as_mut_ptr().cast(),
        std::ptr::without_provenance_mut(error.len()),
    ];
    let mut m = CUmodule::default();
    // SAFETY: the text is NUL-terminated, the arrays hold 4 entries, the
    // log buffers are as large as their size options say.
    let rc = unsafe {
        cu::cuModuleLoadDataEx(
            &mut m,
            text.as_ptr().cast(),
            4,
            opts.as_mut_ptr(),
            vals.as_mut_ptr(),
        )
    };
    let text = |buf: &[u8], n: *mut c_void| {
        let n = (n as usize).min(buf.len());
        String::from_utf8_lossy(&buf[..n]).into_owned()
    };
    let (info, error) = (text(&info, vals[1]), text(&error, vals[3]));
    if rc == CUDA_SUCCESS {
        (Ok(m), info)
    } else {
        (Err((rc, error)), info)
    }
}

/// Load `ptx`, asserting success.
pub fn load(ptx: &str) -> CUmodule {
    match load_logged(ptx).0 {
        Ok(m) => m,
        Err((code, log)) => panic!("{}: {log}", name(code)),
    }
}

/// `cuModuleGetFunction`.
pub fn function(m: CUmodule, entry: &str) -> Result<CUfunction, CUresult> {
    let n = CString::new(entry).unwrap();
    let mut f = CUfunction::default();
    // SAFETY: `f` is an out-pointer, `n` NUL-terminated.
    let rc = unsafe { cu::cuModuleGetFunction(&mut f, m, n.as_ptr()) };
    if rc == CUDA_SUCCESS { Ok(f) } else { Err(rc) }
}

/// An entry of `EMU_PTX`, loaded in the current context.
pub fn emu_kernel(entry: &str) -> CUfunction {
    function(load(EMU_PTX), entry).unwrap()
}

/// `cuMemAlloc`, asserting success.
pub fn alloc(bytes: usize) -> CUdeviceptr {
    let mut p = 0;
    // SAFETY: `p` is an out-pointer.
    ok(unsafe { cu::cuMemAlloc_v2(&mut p, bytes) });
    p
}

/// `cuMemcpyHtoD` of `data`.
pub fn htod<T: bytemuck::Pod>(dst: CUdeviceptr, data: &[T]) -> CUresult {
    let b: &[u8] = bytemuck::cast_slice(data);
    // SAFETY: `b` is readable for its length.
    unsafe { cu::cuMemcpyHtoD_v2(dst, b.as_ptr().cast(), b.len()) }
}

/// `cuMemcpyDtoH` into `out`.
pub fn dtoh<T: bytemuck::Pod>(out: &mut [T], src: CUdeviceptr) -> CUresult {
    let b: &mut [u8] = bytemuck::cast_slice_mut(out);
    // SAFETY: `b` is writable for its length; the copy completes before
    // the call returns.
    unsafe { cu::cuMemcpyDtoH_v2(b.as_mut_ptr().cast(), src, b.len()) }
}

/// `n` u32s read back with `cuMemcpyDtoH` (asserting success).
pub fn read_u32(src: CUdeviceptr, n: usize) -> Vec<u32> {
    let mut v = vec![0u32; n];
    ok(dtoh(&mut v, src));
    v
}

/// A kernel argument.
#[derive(Debug, Clone, Copy)]
pub enum Arg {
    U32(u32),
    U64(u64),
    F32(f32),
}

/// `cuLaunchKernel` with `kernelParams` pointing at `args`.
pub fn launch(
    f: CUfunction,
    grid: u32,
    block: u32,
    smem: u32,
    stream: CUstream,
    args: &[Arg],
) -> CUresult {
    let mut slots: Vec<[u8; 8]> = args
        .iter()
        .map(|a| {
            let mut s = [0u8; 8];
            match *a {
                Arg::U32(v) => s[..4].copy_from_slice(&v.to_le_bytes()),
                Arg::U64(v) => s = v.to_le_bytes(),
                Arg::F32(v) => s[..4].copy_from_slice(&v.to_le_bytes()),
            }
            s
        })
        .collect();
    let mut ptrs: Vec<*mut c_void> = slots.iter_mut().map(|s| s.as_mut_ptr().cast()).collect();
    let params = if ptrs.is_empty() {
        std::ptr::null_mut()
    } else {
        ptrs.as_mut_ptr()
    };
    // SAFETY: one pointer per argument, each to 8 readable bytes (the
    // driver reads the entry's size of each); `slots` outlive the call.
    unsafe {
        cu::cuLaunchKernel(
            f,
            grid,
            1,
            1,
            block,
            1,
            1,
            smem,
            stream,
            params,
            std::ptr::null_mut(),
        )
    }
}

/// `cuStreamCreate`.
pub fn stream(flags: u32) -> CUstream {
    let mut s = CUstream::default();
    // SAFETY: out-pointer.
    ok(unsafe { cu::cuStreamCreate(&mut s, flags) });
    s
}

/// `cuStreamSynchronize`.
pub fn sync(s: CUstream) -> CUresult {
    // SAFETY: a handle value.
    unsafe { cu::cuStreamSynchronize(s) }
}

/// `cuCtxSynchronize`.
pub fn ctx_sync() -> CUresult {
    // SAFETY: no arguments.
    unsafe { cu::cuCtxSynchronize() }
}

/// `cuEventCreate`.
pub fn event(flags: u32) -> CUevent {
    let mut e = CUevent::default();
    // SAFETY: out-pointer.
    ok(unsafe { cu::cuEventCreate(&mut e, flags) });
    e
}

/// The error name of `code` through `cuGetErrorName`.
pub fn error_name(code: CUresult) -> String {
    let mut p: *const c_char = std::ptr::null();
    // SAFETY: out-pointer; the string is static.
    ok(unsafe { cu::cuGetErrorName(code, &mut p) });
    // SAFETY: a NUL-terminated static string.
    unsafe { std::ffi::CStr::from_ptr(p) }
        .to_string_lossy()
        .into_owned()
}

/// For tests that load the emulator the way a program does (`dlopen` of
/// `libcuda.so.1` by oxicuda or cudarc): in the test process itself, run
/// this test binary again with only `test`, with `LD_LIBRARY_PATH` leading
/// to a directory where `libcuda.so.1` and `libcuda.so` are the emulator
/// built next to the test binary, assert that it passed, and return false;
/// in that child process return true (run the test's body).
pub fn in_emulator_process(test: &str) -> bool {
    in_emulator_process_with(test, &[])
}

/// [`in_emulator_process`] with extra environment variables for the child
/// (the emulator's configuration, e.g. `PTXSMITH_EMU_DEVICES`).
pub fn in_emulator_process_with(test: &str, env: &[(&str, &str)]) -> bool {
    if std::env::var_os("PTXSMITH_EMU_CHILD").is_some() {
        return true;
    }
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let lib = [deps.to_path_buf(), deps.parent().unwrap().to_path_buf()]
        .iter()
        .map(|d| d.join("libptxsmith_cuda_emu.so"))
        .find(|p| p.exists())
        .expect("the emulator library (libptxsmith_cuda_emu.so) next to the test binary");
    let dir = std::env::temp_dir().join(format!("ptxsmith-emu-lib-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["libcuda.so.1", "libcuda.so"] {
        let link = dir.join(name);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&lib, &link).unwrap();
    }
    let path = match std::env::var_os("LD_LIBRARY_PATH") {
        Some(old) => {
            let mut p = dir.clone().into_os_string();
            p.push(":");
            p.push(old);
            p
        }
        None => dir.clone().into_os_string(),
    };
    let out = std::process::Command::new(&exe)
        .args([test, "--exact", "--nocapture", "--test-threads", "1"])
        .env("PTXSMITH_EMU_CHILD", "1")
        .env("LD_LIBRARY_PATH", path)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "the test under the emulator failed ({})",
        out.status
    );
    false
}
