//! Hostile arguments (issue 34): every exported function is called with
//! null pointers, huge sizes, freed, destroyed and foreign handles, made-up
//! handle values and misaligned pointers. The process must survive and
//! each call must return an error code: a `CUresult` of CUDA 12.9 other
//! than `CUDA_SUCCESS` and `CUDA_ERROR_UNKNOWN` (what an internal panic
//! becomes). Each export runs in a process of its own (this test binary,
//! re-run with `HOSTILE_EXPORT` set), so a crash fails the test naming the
//! export and the last call it started.

use std::collections::BTreeSet;
use std::ffi::{c_int, c_void};
use std::io::Write;
use std::ptr::{null, null_mut};

use ptxsmith_cuda_emu::exports as cu;

#[path = "../common/mod.rs"]
mod common;
use common::*;

/// Every `#[no_mangle]` function under `src/exports/`, from the sources:
/// the written ones (`pub unsafe extern "C" fn NAME(`) and the
/// per-thread-default-stream variants `per_thread!` generates (its rows
/// `base => NAME(...)`).
fn exports_in_sources() -> BTreeSet<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/exports");
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = BTreeSet::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
        for part in text.split("pub unsafe extern \"C\" fn ").skip(1) {
            // `$name` is the macro's own definition, not an export.
            if !part.starts_with('$') {
                out.insert(ident(part));
            }
        }
        for line in text.lines() {
            if let Some((base, rest)) = line.trim().split_once(" => ")
                && base.starts_with("cu")
                && base.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                out.insert(ident(rest));
            }
        }
    }
    out
}

fn hv(h: u64) -> *mut c_void {
    std::ptr::without_provenance_mut(h as usize)
}

/// The objects the hostile calls name.
struct Env {
    /// A live allocation of 256 bytes, and a freed one.
    p: u64,
    p_freed: u64,
    /// A second live context (its objects are foreign to the current one)
    /// and a destroyed one.
    other: CUcontext,
    dead_ctx: CUcontext,
    s: CUstream,
    s_dead: CUstream,
    s_foreign: CUstream,
    e: CUevent,
    e_dead: CUevent,
    e_foreign: CUevent,
    m_dead: CUmodule,
    m_foreign: CUmodule,
    f: CUfunction,
    f_dead: CUfunction,
    f_foreign: CUfunction,
    p_foreign: u64,
    /// Made-up handle values: small, a real tag with an unknown serial,
    /// all ones, and a stream handle (the wrong kind for anything else).
    bogus: [u64; 4],
}

const HUGE: usize = 64 << 30;

impl Env {
    /// Set up on the calling thread; the current context is the first one.
    fn new() -> Env {
        init();
        let mut other = CUcontext::default();
        let mut dead_ctx = CUcontext::default();
        let mut cur = CUcontext::default();
        // SAFETY: valid out-pointers; handles from the calls themselves.
        unsafe {
            ok(cu::cuCtxCreate_v2(&mut dead_ctx, 0, 0));
            ok(cu::cuCtxDestroy_v2(dead_ctx));
            ok(cu::cuCtxCreate_v2(&mut other, 0, 0));
        }
        let p_foreign = alloc(256);
        let s_foreign = stream(0);
        let e_foreign = event(0);
        let m_foreign = load(EMU_PTX);
        let f_foreign = function(m_foreign, "fill").unwrap();
        // SAFETY: as above.
        unsafe { ok(cu::cuCtxCreate_v2(&mut cur, 0, 0)) };
        let p = alloc(256);
        let p_freed = alloc(256);
        let s = stream(0);
        let s_dead = stream(0);
        let e = event(0);
        let e_dead = event(0);
        let m_dead = load(EMU_PTX);
        let f = emu_kernel("fill");
        let f_dead = function(m_dead, "fill").unwrap();
        // SAFETY: handles and addresses made above.
        unsafe {
            ok(cu::cuMemFree_v2(p_freed));
            ok(cu::cuStreamDestroy_v2(s_dead));
            ok(cu::cuEventDestroy_v2(e_dead));
            ok(cu::cuModuleUnload(m_dead));
        }
        Env {
            p,
            p_freed,
            other,
            dead_ctx,
            s,
            s_dead,
            s_foreign,
            e,
            e_dead,
            e_foreign,
            m_dead,
            m_foreign,
            f,
            f_dead,
            f_foreign,
            p_foreign,
            bogus: [0x1234, 0x40C7_0000_DEAD_BEEF, u64::MAX, s.0 as u64],
        }
    }

    /// Device addresses no copy may use: freed, another context's, inside
    /// the live allocation but misaligned and running off its end, made up.
    fn bad_ptrs(&self) -> [u64; 5] {
        [
            self.p_freed,
            self.p_foreign,
            self.p + 255,
            0xDEAD_0000,
            u64::MAX - 3,
        ]
    }

    fn bad_streams(&self) -> Vec<CUstream> {
        let mut v = vec![self.s_dead];
        v.extend(self.bogus.iter().take(3).map(|&b| CUstream(hv(b))));
        v.push(CUstream(self.e.0));
        v
    }

    fn bad_events(&self) -> Vec<CUevent> {
        let mut v = vec![self.e_dead, CUevent(self.s.0)];
        v.extend(self.bogus.iter().map(|&b| CUevent(hv(b))));
        v
    }

    fn bad_functions(&self) -> Vec<CUfunction> {
        let mut v = vec![self.f_dead, CUfunction(self.m_foreign.0)];
        v.extend(self.bogus.iter().map(|&b| CUfunction(hv(b))));
        v
    }

    fn bad_modules(&self) -> Vec<CUmodule> {
        let mut v = vec![self.m_dead, CUmodule(self.f.0)];
        v.extend(self.bogus.iter().map(|&b| CUmodule(hv(b))));
        v
    }

    fn bad_contexts(&self) -> Vec<CUcontext> {
        let mut v = vec![self.dead_ctx, CUcontext(self.s.0)];
        v.extend(self.bogus.iter().map(|&b| CUcontext(hv(b))));
        v
    }
}

/// Run `f` on a thread with no current context.
fn without_context(f: impl FnOnce() -> CUresult + Send) -> CUresult {
    std::thread::scope(|s| s.spawn(f).join().unwrap())
}

type Case<'a> = (String, Box<dyn Fn() -> CUresult + 'a>);

macro_rules! case {
    ($v:ident, $label:expr, $call:expr) => {{
        // SAFETY: every pointer passed is null, a live buffer of the size
        // the call reads or writes, or refused before it is touched (that
        // is what is tested: a crash fails the test).
        $v.push(($label.to_string(), Box::new(move || unsafe { $call })));
    }};
}

mod contexts;
mod graphs;
mod launches;
mod memory;
mod newer;
mod tensor_map;

/// The hostile calls of export `name`. A `_ptsz`/`_ptds` variant (its
/// base under `with_per_thread_default`, nothing else) gets its base's
/// calls, run as the variant runs them.
fn cases<'a>(name: &'a str, e: &'a Env) -> Vec<Case<'a>> {
    if let Some(base) = name
        .strip_suffix("_ptsz")
        .or_else(|| name.strip_suffix("_ptds"))
    {
        return cases(base, e)
            .into_iter()
            .map(|(label, call)| {
                let wrapped: Box<dyn Fn() -> CUresult + 'a> =
                    Box::new(move || ptxsmith_cuda_emu::driver::with_per_thread_default(&call));
                (format!("per-thread default stream: {label}"), wrapped)
            })
            .collect();
    }
    let mut v = contexts::cases(name, e);
    v.extend(memory::cases(name, e));
    v.extend(launches::cases(name, e));
    v.extend(newer::cases(name, e));
    v.extend(graphs::cases(name, e));
    v.extend(tensor_map::cases(name, e));
    v
}

/// Host functions the hostile calls name (every such call is refused).
unsafe extern "C" fn never_called(_: *mut c_void, _: CUresult, _: *mut c_void) {
    std::process::abort();
}
unsafe extern "C" fn never_called_fn(_: *mut c_void) {
    std::process::abort();
}

/// A code the driver could return for a refused call.
fn is_error_code(rc: CUresult) -> bool {
    let mut n: *const std::ffi::c_char = null();
    // SAFETY: a valid out-pointer.
    let known = unsafe { cu::cuGetErrorName(rc, &mut n) } == CUDA_SUCCESS;
    known && rc != CUDA_SUCCESS && rc != CUDA_ERROR_UNKNOWN
}

/// The child: run the hostile calls of `HOSTILE_EXPORT`, printing each
/// before it starts (the parent names the last one if the process dies).
#[test]
fn hostile_child() {
    let Some(name) = std::env::var_os("HOSTILE_EXPORT") else {
        return;
    };
    let name = name.to_string_lossy().into_owned();
    let env = Env::new();
    let cases = cases(&name, &env);
    assert!(!cases.is_empty(), "no hostile calls written for {name}");
    let mut bad = Vec::new();
    for (label, call) in &cases {
        println!("calling {name}: {label}");
        let _ = std::io::stdout().flush();
        let rc = call();
        println!("  -> {}", ptxsmith_cuda_emu::error::name(rc));
        if !is_error_code(rc) {
            bad.push(format!(
                "{name}({label}) returned {}",
                ptxsmith_cuda_emu::error::name(rc)
            ));
        }
    }
    // The driver still answers after all of it.
    let mut v = 0;
    // SAFETY: a valid out-pointer.
    ok(unsafe { cu::cuDriverGetVersion(&mut v) });
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    println!("HOSTILE-OK {name} ({} calls)", cases.len());
}

#[test]
fn every_export_survives_hostile_arguments() {
    if std::env::var_os("HOSTILE_EXPORT").is_some() {
        return;
    }
    let exports = exports_in_sources();
    let listed: BTreeSet<String> = cu::symbols().iter().map(|s| s.name.to_string()).collect();
    assert_eq!(
        exports, listed,
        "cuGetProcAddress's table and the exports differ"
    );
    let exe = std::env::current_exe().unwrap();
    let mut failures = Vec::new();
    let mut calls = 0;
    for name in &exports {
        let out = std::process::Command::new(&exe)
            .args([
                "hostile_child",
                "--exact",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env("HOSTILE_EXPORT", name)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let ok_line = stdout.lines().find(|l| l.starts_with("HOSTILE-OK "));
        match ok_line {
            Some(l) if out.status.success() => {
                calls += l
                    .split('(')
                    .nth(1)
                    .and_then(|x| x.split(' ').next())
                    .and_then(|n| n.parse::<usize>().ok())
                    .unwrap_or(0);
            }
            _ => {
                let last = stdout
                    .lines()
                    .rfind(|l| l.starts_with("calling "))
                    .unwrap_or("(before the first call)");
                let stderr = String::from_utf8_lossy(&out.stderr);
                let tail: String = stderr
                    .lines()
                    .rev()
                    .take(15)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect::<Vec<_>>()
                    .join("\n");
                failures.push(format!(
                    "{name}: {} — last call started: {last}\n{tail}",
                    out.status
                ));
            }
        }
    }
    println!("{} exports, {calls} hostile calls", exports.len());
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(calls > 300, "{calls} calls");
}
