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

mod common;
use common::*;

/// Every `#[no_mangle]` function under `src/exports/`, from the sources.
fn exports_in_sources() -> BTreeSet<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/exports");
    let mut out = BTreeSet::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
        for part in text.split("pub unsafe extern \"C\" fn ").skip(1) {
            let name: String = part
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            out.insert(name);
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

/// The hostile calls of export `name`.
#[allow(unused_unsafe)]
fn cases<'a>(name: &'a str, e: &'a Env) -> Vec<Case<'a>> {
    let mut v: Vec<Case<'a>> = Vec::new();
    // A writable 32-byte buffer for out-pointers (leaked, as every buffer
    // below: the calls run after this function returned).
    let base = Box::leak(Box::new([0u64; 4])).as_mut_ptr() as usize;
    let out = move || base as *mut u64;
    // Misaligned: one byte into it.
    let mis = move || (base + 1) as *mut u64;
    let host = vec![0u8; 256].leak();
    let hp = host.as_mut_ptr().cast::<c_void>();
    let (s, p, f) = (e.s, e.p, e.f);
    match name {
        "cuInit" => {
            case!(v, "flags 1", cu::cuInit(1));
            case!(v, "flags all", cu::cuInit(u32::MAX));
        }
        "cuDriverGetVersion" => case!(v, "null", cu::cuDriverGetVersion(null_mut())),
        "cuGetErrorName" => {
            case!(v, "unknown code", cu::cuGetErrorName(12345, out().cast()));
            case!(v, "null", cu::cuGetErrorName(0, null_mut()));
        }
        "cuGetErrorString" => {
            case!(
                v,
                "unknown code",
                cu::cuGetErrorString(u32::MAX, out().cast())
            );
            case!(v, "null", cu::cuGetErrorString(1, null_mut()));
        }
        "cuGetProcAddress" => {
            case!(
                v,
                "null symbol",
                cu::cuGetProcAddress(null(), out().cast(), 12090, 0)
            );
            case!(
                v,
                "null pfn",
                cu::cuGetProcAddress(c"cuInit".as_ptr(), null_mut(), 12090, 0)
            );
            case!(
                v,
                "bad flags",
                cu::cuGetProcAddress(c"cuInit".as_ptr(), mis().cast(), 12090, !0)
            );
            case!(
                v,
                "old version",
                cu::cuGetProcAddress(c"cuInit".as_ptr(), out().cast(), -1, 0)
            );
        }
        "cuGetProcAddress_v2" => {
            case!(
                v,
                "null symbol",
                cu::cuGetProcAddress_v2(null(), out().cast(), 12090, 0, null_mut())
            );
            case!(
                v,
                "unknown",
                cu::cuGetProcAddress_v2(c"cuX".as_ptr(), out().cast(), 12090, 0, mis().cast())
            );
        }
        "cuGetExportTable" => {
            case!(v, "null table", cu::cuGetExportTable(null_mut(), hp));
            case!(v, "null id", cu::cuGetExportTable(out().cast(), null()));
            case!(v, "unknown", cu::cuGetExportTable(mis().cast(), hp));
        }
        "cuDeviceGet" => {
            case!(v, "null", cu::cuDeviceGet(null_mut(), 0));
            for d in [-1, 99, c_int::MIN] {
                case!(v, format!("ordinal {d}"), cu::cuDeviceGet(out().cast(), d));
            }
        }
        "cuDeviceGetCount" => case!(v, "null", cu::cuDeviceGetCount(null_mut())),
        "cuDeviceGetName" => {
            case!(v, "null", cu::cuDeviceGetName(null_mut(), 64, 0));
            case!(v, "length 0", cu::cuDeviceGetName(out().cast(), 0, 0));
            case!(v, "length -1", cu::cuDeviceGetName(out().cast(), -1, 0));
            case!(v, "device 99", cu::cuDeviceGetName(out().cast(), 32, 99));
        }
        "cuDeviceGetUuid" | "cuDeviceGetUuid_v2" => {
            let g = if name == "cuDeviceGetUuid" {
                cu::cuDeviceGetUuid
            } else {
                cu::cuDeviceGetUuid_v2
            };
            case!(v, "null", g(null_mut(), 0));
            case!(v, "device -1", g(out().cast(), -1));
        }
        "cuDeviceTotalMem_v2" => {
            case!(v, "null", cu::cuDeviceTotalMem_v2(null_mut(), 0));
            case!(v, "device 7", cu::cuDeviceTotalMem_v2(out().cast(), 7));
        }
        "cuDeviceGetAttribute" => {
            case!(v, "null", cu::cuDeviceGetAttribute(null_mut(), 1, 0));
            for a in [0, -1, 100_000] {
                case!(
                    v,
                    format!("attribute {a}"),
                    cu::cuDeviceGetAttribute(mis().cast(), a, 0)
                );
            }
            case!(v, "device 5", cu::cuDeviceGetAttribute(out().cast(), 1, 5));
        }
        "cuDeviceComputeCapability" => {
            case!(
                v,
                "null",
                cu::cuDeviceComputeCapability(null_mut(), out().cast(), 0)
            );
            case!(
                v,
                "device -3",
                cu::cuDeviceComputeCapability(
                    out().cast(),
                    out().cast::<c_int>().wrapping_add(1),
                    -3
                )
            );
        }
        "cuDeviceCanAccessPeer" => {
            case!(v, "null", cu::cuDeviceCanAccessPeer(null_mut(), 0, 0));
            case!(v, "peer 9", cu::cuDeviceCanAccessPeer(out().cast(), 0, 9));
        }
        "cuDevicePrimaryCtxRetain" => {
            case!(v, "null", cu::cuDevicePrimaryCtxRetain(null_mut(), 0));
            case!(v, "device 9", cu::cuDevicePrimaryCtxRetain(out().cast(), 9));
        }
        "cuDevicePrimaryCtxRelease_v2" => {
            case!(v, "device -1", cu::cuDevicePrimaryCtxRelease_v2(-1));
            case!(v, "never retained", cu::cuDevicePrimaryCtxRelease_v2(0));
        }
        "cuDevicePrimaryCtxReset_v2" => case!(v, "device 42", cu::cuDevicePrimaryCtxReset_v2(42)),
        "cuDevicePrimaryCtxSetFlags_v2" => {
            case!(v, "device 42", cu::cuDevicePrimaryCtxSetFlags_v2(42, 0));
            case!(v, "flags", cu::cuDevicePrimaryCtxSetFlags_v2(0, u32::MAX));
        }
        "cuDevicePrimaryCtxGetState" => {
            case!(
                v,
                "null",
                cu::cuDevicePrimaryCtxGetState(0, null_mut(), null_mut())
            );
            case!(
                v,
                "device 42",
                cu::cuDevicePrimaryCtxGetState(42, out().cast(), out().cast())
            );
        }
        "cuCtxCreate_v2" => {
            case!(v, "null", cu::cuCtxCreate_v2(null_mut(), 0, 0));
            case!(v, "flags", cu::cuCtxCreate_v2(out().cast(), u32::MAX, 0));
            case!(v, "device 9", cu::cuCtxCreate_v2(mis().cast(), 0, 9));
        }
        "cuCtxCreate_v3" => {
            case!(
                v,
                "null",
                cu::cuCtxCreate_v3(null_mut(), null_mut(), 0, 0, 0)
            );
            case!(v, "affinity", cu::cuCtxCreate_v3(out().cast(), hp, 1, 0, 0));
            case!(
                v,
                "count -5",
                cu::cuCtxCreate_v3(out().cast(), hp, -5, 0, 0)
            );
            case!(
                v,
                "huge count, null",
                cu::cuCtxCreate_v3(out().cast(), null_mut(), c_int::MAX, 0, 0)
            );
        }
        "cuCtxCreate_v4" => {
            case!(v, "null", cu::cuCtxCreate_v4(null_mut(), null_mut(), 0, 0));
            case!(
                v,
                "device -1",
                cu::cuCtxCreate_v4(out().cast(), null_mut(), 0, -1)
            );
            case!(
                v,
                "flags",
                cu::cuCtxCreate_v4(out().cast(), null_mut(), 0x1000, 0)
            );
        }
        "cuCtxDestroy_v2" => {
            for c in e.bad_contexts() {
                case!(v, format!("{:?}", c), cu::cuCtxDestroy_v2(c));
            }
        }
        "cuCtxSetCurrent" => {
            for c in e.bad_contexts() {
                case!(v, format!("{:?}", c), cu::cuCtxSetCurrent(c));
            }
        }
        "cuCtxPushCurrent_v2" => {
            for c in e.bad_contexts() {
                case!(v, format!("{:?}", c), cu::cuCtxPushCurrent_v2(c));
            }
        }
        "cuCtxGetCurrent" => case!(v, "null", cu::cuCtxGetCurrent(null_mut())),
        "cuCtxPopCurrent_v2" => {
            case!(
                v,
                "empty stack",
                without_context(|| cu::cuCtxPopCurrent_v2(null_mut()))
            );
        }
        "cuCtxSynchronize" => case!(v, "no context", without_context(|| cu::cuCtxSynchronize())),
        "cuCtxGetDevice" => {
            case!(v, "null", cu::cuCtxGetDevice(null_mut()));
            case!(
                v,
                "no context",
                without_context(|| cu::cuCtxGetDevice(mis().cast()))
            );
        }
        "cuCtxGetFlags" => {
            case!(v, "null", cu::cuCtxGetFlags(null_mut()));
            case!(
                v,
                "no context",
                without_context(|| cu::cuCtxGetFlags(out().cast()))
            );
        }
        "cuCtxGetApiVersion" => {
            case!(
                v,
                "null",
                cu::cuCtxGetApiVersion(CUcontext::default(), null_mut())
            );
            for c in e.bad_contexts() {
                case!(
                    v,
                    format!("{:?}", c),
                    cu::cuCtxGetApiVersion(c, out().cast())
                );
            }
        }
        "cuCtxGetStreamPriorityRange" => {
            case!(
                v,
                "no context",
                without_context(|| cu::cuCtxGetStreamPriorityRange(null_mut(), null_mut()))
            );
        }
        "cuCtxGetLimit" => {
            case!(v, "null", cu::cuCtxGetLimit(null_mut(), 0));
            case!(v, "limit 999", cu::cuCtxGetLimit(mis().cast(), 999));
        }
        "cuCtxSetLimit" => {
            case!(v, "limit 999", cu::cuCtxSetLimit(999, 1));
            case!(
                v,
                "no context",
                without_context(|| cu::cuCtxSetLimit(0, HUGE))
            );
        }
        "cuCtxGetCacheConfig" => case!(v, "null", cu::cuCtxGetCacheConfig(null_mut())),
        "cuCtxSetCacheConfig" => case!(v, "config 99", cu::cuCtxSetCacheConfig(99)),
        "cuCtxGetSharedMemConfig" => case!(v, "null", cu::cuCtxGetSharedMemConfig(null_mut())),
        "cuCtxSetSharedMemConfig" => case!(v, "config 99", cu::cuCtxSetSharedMemConfig(99)),
        "cuCtxEnablePeerAccess" => {
            for c in e.bad_contexts() {
                case!(v, format!("{:?}", c), cu::cuCtxEnablePeerAccess(c, 0));
            }
            case!(v, "flags", cu::cuCtxEnablePeerAccess(e.other, 7));
        }
        "cuCtxDisablePeerAccess" => {
            for c in e.bad_contexts() {
                case!(v, format!("{:?}", c), cu::cuCtxDisablePeerAccess(c));
            }
            case!(v, "never enabled", cu::cuCtxDisablePeerAccess(e.other));
        }
        "cuMemAlloc_v2" => {
            case!(v, "null", cu::cuMemAlloc_v2(null_mut(), 16));
            for n in [0, HUGE, usize::MAX] {
                case!(v, format!("{n} bytes"), cu::cuMemAlloc_v2(mis().cast(), n));
            }
        }
        "cuMemAllocAsync" => {
            case!(v, "null", cu::cuMemAllocAsync(null_mut(), 16, s));
            for n in [HUGE, usize::MAX] {
                case!(
                    v,
                    format!("{n} bytes"),
                    cu::cuMemAllocAsync(mis().cast(), n, s)
                );
            }
            for bs in e.bad_streams() {
                case!(
                    v,
                    format!("{bs:?}"),
                    cu::cuMemAllocAsync(out().cast(), 16, bs)
                );
            }
        }
        "cuMemFreeAsync" => {
            for a in e.bad_ptrs() {
                case!(v, format!("{a:#x}"), cu::cuMemFreeAsync(a, s));
            }
            for bs in e.bad_streams() {
                case!(v, format!("{bs:?}"), cu::cuMemFreeAsync(p, bs));
            }
        }
        "cuMemFree_v2" => {
            for a in e.bad_ptrs() {
                case!(v, format!("{a:#x}"), cu::cuMemFree_v2(a));
            }
            case!(v, "not the base", cu::cuMemFree_v2(p + 1));
        }
        "cuMemGetInfo_v2" => {
            case!(v, "null", cu::cuMemGetInfo_v2(null_mut(), null_mut()));
            case!(
                v,
                "no context",
                without_context(|| cu::cuMemGetInfo_v2(out().cast(), out().cast()))
            );
        }
        "cuMemGetAddressRange_v2" => {
            for a in [e.p_freed, e.p_foreign, 0, u64::MAX] {
                case!(
                    v,
                    format!("{a:#x}"),
                    cu::cuMemGetAddressRange_v2(mis().cast(), null_mut(), a)
                );
            }
        }
        "cuMemcpyHtoD_v2" | "cuMemcpyHtoDAsync_v2" => {
            let g = move |d: u64, h: *const c_void, n: usize| {
                // SAFETY: as for every case (see `case!`).
                unsafe {
                    {
                        if name == "cuMemcpyHtoD_v2" {
                            cu::cuMemcpyHtoD_v2(d, h, n)
                        } else {
                            cu::cuMemcpyHtoDAsync_v2(d, h, n, s)
                        }
                    }
                }
            };
            case!(v, "null host", g(p, null(), 16));
            case!(v, "device as host", g(p, p as usize as *const c_void, 16));
            for n in [257, HUGE, usize::MAX] {
                case!(v, format!("{n} bytes"), g(p, hp, n));
            }
            for a in e.bad_ptrs() {
                case!(v, format!("to {a:#x}"), g(a, hp, 8));
            }
            if name != "cuMemcpyHtoD_v2" {
                for bs in e.bad_streams() {
                    case!(v, format!("{bs:?}"), cu::cuMemcpyHtoDAsync_v2(p, hp, 8, bs));
                }
                case!(
                    v,
                    "foreign stream",
                    cu::cuMemcpyHtoDAsync_v2(p, hp, 8, e.s_foreign)
                );
            }
        }
        "cuMemcpyDtoH_v2" | "cuMemcpyDtoHAsync_v2" => {
            let g = move |h: *mut c_void, d: u64, n: usize| {
                // SAFETY: as for every case (see `case!`).
                unsafe {
                    {
                        if name == "cuMemcpyDtoH_v2" {
                            cu::cuMemcpyDtoH_v2(h, d, n)
                        } else {
                            cu::cuMemcpyDtoHAsync_v2(h, d, n, s)
                        }
                    }
                }
            };
            case!(v, "null host", g(null_mut(), p, 16));
            case!(v, "device as host", g(p as usize as *mut c_void, p, 16));
            for n in [257, HUGE, usize::MAX] {
                case!(v, format!("{n} bytes"), g(hp, p, n));
            }
            for a in e.bad_ptrs() {
                case!(v, format!("from {a:#x}"), g(hp, a, 8));
            }
            if name != "cuMemcpyDtoH_v2" {
                for bs in e.bad_streams() {
                    case!(v, format!("{bs:?}"), cu::cuMemcpyDtoHAsync_v2(hp, p, 8, bs));
                }
            }
        }
        "cuMemcpyDtoD_v2" | "cuMemcpyDtoDAsync_v2" | "cuMemcpy" | "cuMemcpyAsync" => {
            let g = move |d: u64, sr: u64, n: usize| {
                // SAFETY: as for every case (see `case!`).
                unsafe {
                    match name {
                        "cuMemcpyDtoD_v2" => cu::cuMemcpyDtoD_v2(d, sr, n),
                        "cuMemcpyDtoDAsync_v2" => cu::cuMemcpyDtoDAsync_v2(d, sr, n, s),
                        "cuMemcpy" => cu::cuMemcpy(d, sr, n),
                        _ => cu::cuMemcpyAsync(d, sr, n, s),
                    }
                }
            };
            for n in [257, HUGE, usize::MAX] {
                case!(v, format!("{n} bytes"), g(p, p, n));
            }
            // (For the unified copies an address outside the device address
            // space is a host pointer: a made-up one would be dereferenced,
            // as by the driver.)
            let unified = !name.contains("DtoD");
            for a in e
                .bad_ptrs()
                .into_iter()
                .filter(|&a| !unified || a != 0xDEAD_0000)
            {
                case!(v, format!("to {a:#x}"), g(a, p, 8));
                case!(v, format!("from {a:#x}"), g(p, a, 8));
            }
            if name.starts_with("cuMemcpy") && !name.contains("DtoD") {
                case!(v, "host null", g(p, 0, 8));
                case!(v, "host huge", g(p, hp as u64, HUGE));
                case!(v, "to host huge", g(hp as u64, p, HUGE));
            }
            if name.contains("Async") {
                for bs in e.bad_streams() {
                    let st = bs;
                    case!(
                        v,
                        format!("{st:?}"),
                        if name == "cuMemcpyAsync" {
                            cu::cuMemcpyAsync(p, p, 8, st)
                        } else {
                            cu::cuMemcpyDtoDAsync_v2(p, p, 8, st)
                        }
                    );
                }
            }
        }
        "cuMemsetD8_v2" | "cuMemsetD16_v2" | "cuMemsetD32_v2" | "cuMemsetD8Async"
        | "cuMemsetD16Async" | "cuMemsetD32Async" => {
            let g = move |d: u64, n: usize, st: CUstream| {
                // SAFETY: as for every case (see `case!`).
                unsafe {
                    match name {
                        "cuMemsetD8_v2" => cu::cuMemsetD8_v2(d, 1, n),
                        "cuMemsetD16_v2" => cu::cuMemsetD16_v2(d, 1, n),
                        "cuMemsetD32_v2" => cu::cuMemsetD32_v2(d, 1, n),
                        "cuMemsetD8Async" => cu::cuMemsetD8Async(d, 1, n, st),
                        "cuMemsetD16Async" => cu::cuMemsetD16Async(d, 1, n, st),
                        _ => cu::cuMemsetD32Async(d, 1, n, st),
                    }
                }
            };
            for n in [257, HUGE, usize::MAX] {
                case!(v, format!("{n} elements"), g(p, n, s));
            }
            for a in e.bad_ptrs() {
                case!(v, format!("at {a:#x}"), g(a, 8, s));
            }
            if !name.contains("D8") {
                case!(v, "misaligned", g(p + 1, 1, s));
            }
            if name.contains("Async") {
                for bs in e.bad_streams() {
                    case!(v, format!("{bs:?}"), g(p, 1, bs));
                }
            }
        }
        "cuMemAllocHost_v2" => {
            case!(v, "null", cu::cuMemAllocHost_v2(null_mut(), 16));
            case!(v, "0 bytes", cu::cuMemAllocHost_v2(out().cast(), 0));
            case!(
                v,
                "usize::MAX",
                cu::cuMemAllocHost_v2(mis().cast(), usize::MAX)
            );
        }
        "cuMemHostAlloc" => {
            case!(v, "null", cu::cuMemHostAlloc(null_mut(), 16, 0));
            case!(v, "flags", cu::cuMemHostAlloc(out().cast(), 16, 0x100));
            case!(
                v,
                "usize::MAX",
                cu::cuMemHostAlloc(out().cast(), usize::MAX, 0)
            );
        }
        "cuMemFreeHost" => {
            case!(v, "null", cu::cuMemFreeHost(null_mut()));
            case!(v, "pageable", cu::cuMemFreeHost(hp));
            case!(v, "device", cu::cuMemFreeHost(p as usize as *mut c_void));
        }
        "cuMemHostRegister_v2" => {
            case!(v, "null", cu::cuMemHostRegister_v2(null_mut(), 16, 0));
            case!(v, "0 bytes", cu::cuMemHostRegister_v2(hp, 0, 0));
            case!(v, "wraps", cu::cuMemHostRegister_v2(hp, usize::MAX, 0));
            case!(v, "flags", cu::cuMemHostRegister_v2(hp, 16, 0x100));
            case!(
                v,
                "device",
                cu::cuMemHostRegister_v2(p as usize as *mut c_void, 16, 0)
            );
        }
        "cuMemHostUnregister" => {
            case!(v, "null", cu::cuMemHostUnregister(null_mut()));
            case!(v, "never registered", cu::cuMemHostUnregister(hp));
        }
        "cuMemHostGetDevicePointer_v2" => {
            case!(
                v,
                "null",
                cu::cuMemHostGetDevicePointer_v2(null_mut(), hp, 0)
            );
            case!(
                v,
                "pageable",
                cu::cuMemHostGetDevicePointer_v2(out().cast(), hp, 0)
            );
        }
        "cuPointerGetAttribute" => {
            case!(v, "null", cu::cuPointerGetAttribute(null_mut(), 1, p));
            case!(
                v,
                "attribute 999",
                cu::cuPointerGetAttribute(out().cast(), 999, p)
            );
            for a in [e.p_freed, 0, u64::MAX] {
                case!(
                    v,
                    format!("{a:#x}"),
                    cu::cuPointerGetAttribute(mis().cast(), 1, a)
                );
            }
        }
        "cuPointerGetAttributes" => {
            let attrs = Box::leak(Box::new([2u32, 999]));
            let slots: &mut [*mut c_void; 2] = Box::leak(Box::new([out().cast(), out().cast()]));
            let (a, sl) = (attrs.as_ptr() as usize, slots.as_mut_ptr() as usize);
            case!(
                v,
                "null arrays",
                cu::cuPointerGetAttributes(1, null(), null_mut(), p)
            );
            case!(
                v,
                "zero count",
                cu::cuPointerGetAttributes(0, a as *const u32, sl as *mut _, p)
            );
            case!(
                v,
                "attribute 999",
                cu::cuPointerGetAttributes(2, a as *const u32, sl as *mut _, p)
            );
        }
        "cuMemAllocManaged" => case!(v, "huge", cu::cuMemAllocManaged(null_mut(), HUGE, 0)),
        "cuMemAdvise" => case!(v, "freed", cu::cuMemAdvise(e.p_freed, HUGE, 99, -1)),
        "cuMemPrefetchAsync" => {
            case!(
                v,
                "freed",
                cu::cuMemPrefetchAsync(e.p_freed, HUGE, -1, e.s_dead)
            )
        }
        "cuMemcpyPeer" | "cuMemcpyPeerAsync" => {
            let g = move |d: u64, dc: CUcontext, sr: u64, sc: CUcontext, n: usize, st: CUstream| {
                // SAFETY: as for every case (see `case!`).
                unsafe {
                    {
                        if name == "cuMemcpyPeer" {
                            cu::cuMemcpyPeer(d, dc, sr, sc, n)
                        } else {
                            cu::cuMemcpyPeerAsync(d, dc, sr, sc, n, st)
                        }
                    }
                }
            };
            let mut cur = CUcontext::default();
            // SAFETY: a valid out-pointer.
            ok(unsafe { cu::cuCtxGetCurrent(&mut cur) });
            let (o, pf) = (e.other, e.p_foreign);
            for n in [257, HUGE, usize::MAX] {
                case!(v, format!("{n} bytes"), g(p, cur, pf, o, n, s));
            }
            for c in e.bad_contexts() {
                case!(v, format!("dst {c:?}"), g(p, c, pf, o, 8, s));
                case!(v, format!("src {c:?}"), g(p, cur, pf, c, 8, s));
            }
            case!(v, "swapped contexts", g(p, o, pf, cur, 8, s));
            if name != "cuMemcpyPeer" {
                for bs in e.bad_streams() {
                    case!(v, format!("{bs:?}"), g(p, cur, pf, o, 8, bs));
                }
            }
        }
        "cuModuleLoadData" => {
            case!(
                v,
                "null module",
                cu::cuModuleLoadData(null_mut(), c"x".as_ptr().cast())
            );
            case!(v, "null image", cu::cuModuleLoadData(out().cast(), null()));
            case!(
                v,
                "empty",
                cu::cuModuleLoadData(out().cast(), c"".as_ptr().cast())
            );
            case!(
                v,
                "garbage",
                cu::cuModuleLoadData(mis().cast(), c"\x7fELF\x01".as_ptr().cast())
            );
            case!(
                v,
                "not utf-8",
                cu::cuModuleLoadData(out().cast(), c"\xff\xfe.version".as_ptr().cast())
            );
        }
        "cuModuleLoadDataEx" => {
            let text = c".version 7.0\n.target sm_70\n.address_size 64\n"
                .as_ptr()
                .cast();
            case!(
                v,
                "null module",
                cu::cuModuleLoadDataEx(null_mut(), text, 0, null_mut(), null_mut())
            );
            case!(
                v,
                "options null",
                cu::cuModuleLoadDataEx(
                    out().cast(),
                    c"bad".as_ptr().cast(),
                    3,
                    null_mut(),
                    null_mut()
                )
            );
            let opts = Box::leak(Box::new([999u32; 1]));
            let vals: &mut [*mut c_void; 1] = Box::leak(Box::new([null_mut(); 1]));
            let (o, va) = (opts.as_mut_ptr(), vals.as_mut_ptr());
            case!(
                v,
                "unknown option",
                cu::cuModuleLoadDataEx(out().cast(), text, 1, o, va)
            );
        }
        "cuModuleUnload" => {
            for m in e.bad_modules() {
                case!(v, format!("{m:?}"), cu::cuModuleUnload(m));
            }
            case!(
                v,
                "foreign, from no context",
                without_context(|| cu::cuModuleUnload(e.m_dead))
            );
        }
        "cuModuleGetFunction" => {
            case!(
                v,
                "null out",
                cu::cuModuleGetFunction(null_mut(), e.m_foreign, c"fill".as_ptr())
            );
            case!(
                v,
                "null name",
                cu::cuModuleGetFunction(out().cast(), e.m_foreign, null())
            );
            case!(
                v,
                "unknown name",
                cu::cuModuleGetFunction(out().cast(), e.m_foreign, c"nope".as_ptr())
            );
            for m in e.bad_modules() {
                case!(
                    v,
                    format!("{m:?}"),
                    cu::cuModuleGetFunction(mis().cast(), m, c"fill".as_ptr())
                );
            }
        }
        "cuModuleGetGlobal_v2" => {
            case!(
                v,
                "unknown",
                cu::cuModuleGetGlobal_v2(out().cast(), null_mut(), e.m_foreign, c"g".as_ptr())
            );
            for m in e.bad_modules() {
                case!(
                    v,
                    format!("{m:?}"),
                    cu::cuModuleGetGlobal_v2(null_mut(), null_mut(), m, null())
                );
            }
        }
        "cuFuncGetAttribute" => {
            case!(v, "null", cu::cuFuncGetAttribute(null_mut(), 0, f));
            case!(
                v,
                "attribute 999",
                cu::cuFuncGetAttribute(out().cast(), 999, f)
            );
            for bf in e.bad_functions() {
                case!(
                    v,
                    format!("{bf:?}"),
                    cu::cuFuncGetAttribute(mis().cast(), 0, bf)
                );
            }
        }
        "cuFuncSetAttribute" => {
            case!(v, "read-only", cu::cuFuncSetAttribute(f, 0, 1));
            case!(v, "too much smem", cu::cuFuncSetAttribute(f, 8, c_int::MAX));
            case!(v, "negative smem", cu::cuFuncSetAttribute(f, 8, -1));
            for bf in e.bad_functions() {
                case!(v, format!("{bf:?}"), cu::cuFuncSetAttribute(bf, 8, 0));
            }
        }
        "cuFuncSetCacheConfig" | "cuFuncSetSharedMemConfig" => {
            let g = move |bf: CUfunction, c: u32| {
                // SAFETY: as for every case (see `case!`).
                unsafe {
                    {
                        if name == "cuFuncSetCacheConfig" {
                            cu::cuFuncSetCacheConfig(bf, c)
                        } else {
                            cu::cuFuncSetSharedMemConfig(bf, c)
                        }
                    }
                }
            };
            case!(v, "config 99", g(f, 99));
            for bf in e.bad_functions() {
                case!(v, format!("{bf:?}"), g(bf, 0));
            }
        }
        "cuOccupancyMaxActiveBlocksPerMultiprocessor"
        | "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags" => {
            let g = move |n: *mut c_int, bf: CUfunction, b: c_int, sm: usize| {
                // SAFETY: as for every case (see `case!`).
                unsafe {
                    {
                        if name == "cuOccupancyMaxActiveBlocksPerMultiprocessor" {
                            cu::cuOccupancyMaxActiveBlocksPerMultiprocessor(n, bf, b, sm)
                        } else {
                            cu::cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
                                n, bf, b, sm, 0,
                            )
                        }
                    }
                }
            };
            case!(v, "null", g(null_mut(), f, 32, 0));
            for b in [0, -1, 4096, c_int::MAX] {
                case!(v, format!("block {b}"), g(out().cast(), f, b, usize::MAX));
            }
            for bf in e.bad_functions() {
                case!(v, format!("{bf:?}"), g(mis().cast(), bf, 32, 0));
            }
            if name.ends_with("WithFlags") {
                case!(
                    v,
                    "flags",
                    cu::cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
                        out().cast(),
                        f,
                        32,
                        0,
                        9
                    )
                );
            }
        }
        "cuOccupancyMaxPotentialBlockSize" => {
            case!(
                v,
                "null",
                cu::cuOccupancyMaxPotentialBlockSize(null_mut(), null_mut(), f, None, 0, 0)
            );
            case!(
                v,
                "huge smem",
                cu::cuOccupancyMaxPotentialBlockSize(
                    out().cast(),
                    mis().cast(),
                    f,
                    None,
                    usize::MAX,
                    0
                )
            );
            for bf in e.bad_functions() {
                case!(
                    v,
                    format!("{bf:?}"),
                    cu::cuOccupancyMaxPotentialBlockSize(
                        out().cast(),
                        out().cast(),
                        bf,
                        None,
                        0,
                        0
                    )
                );
            }
        }
        "cuLaunchKernel" | "cuLaunchCooperativeKernel" => {
            let slot = Box::leak(Box::new([0u64; 1]));
            let params = Box::leak(Box::new([slot.as_mut_ptr().cast::<c_void>(); 3]));
            let pp = params.as_mut_ptr();
            let g = move |bf: CUfunction,
                          grid: u32,
                          block: u32,
                          st: CUstream,
                          kp: *mut *mut c_void| {
                // SAFETY: as for every case (see `case!`).
                unsafe {
                    {
                        if name == "cuLaunchKernel" {
                            cu::cuLaunchKernel(bf, grid, 1, 1, block, 1, 1, 0, st, kp, null_mut())
                        } else {
                            cu::cuLaunchCooperativeKernel(bf, grid, 1, 1, block, 1, 1, 0, st, kp)
                        }
                    }
                }
            };
            case!(v, "null params", g(f, 1, 32, s, null_mut()));
            for (gx, bx) in [(0, 32), (1, 0), (u32::MAX, 32), (1, 4096)] {
                case!(v, format!("grid {gx} block {bx}"), g(f, gx, bx, s, pp));
            }
            for bf in e.bad_functions() {
                case!(v, format!("{bf:?}"), g(bf, 1, 32, s, pp));
            }
            for bs in e.bad_streams() {
                case!(v, format!("{bs:?}"), g(f, 1, 32, bs, pp));
            }
            case!(v, "foreign function", g(e.f_foreign, 1, 32, s, pp));
        }
        "cuLaunchCooperativeKernelMultiDevice" => {
            case!(
                v,
                "null",
                cu::cuLaunchCooperativeKernelMultiDevice(null_mut(), u32::MAX, 0)
            )
        }
        "cuStreamAddCallback" => {
            case!(
                v,
                "null callback",
                cu::cuStreamAddCallback(s, None, null_mut(), 0)
            );
            case!(
                v,
                "flags",
                cu::cuStreamAddCallback(s, Some(never_called), null_mut(), 1)
            );
            for bs in e.bad_streams() {
                case!(
                    v,
                    format!("{bs:?}"),
                    cu::cuStreamAddCallback(bs, Some(never_called), null_mut(), 0)
                );
            }
        }
        "cuLaunchHostFunc" => {
            case!(
                v,
                "null function",
                cu::cuLaunchHostFunc(s, None, null_mut())
            );
            for bs in e.bad_streams() {
                case!(
                    v,
                    format!("{bs:?}"),
                    cu::cuLaunchHostFunc(bs, Some(never_called_fn), null_mut())
                );
            }
        }
        "cuStreamCreate" | "cuStreamCreateWithPriority" => {
            let g = move |o: *mut CUstream, fl: u32| {
                // SAFETY: as for every case (see `case!`).
                unsafe {
                    {
                        if name == "cuStreamCreate" {
                            cu::cuStreamCreate(o, fl)
                        } else {
                            cu::cuStreamCreateWithPriority(o, fl, c_int::MIN)
                        }
                    }
                }
            };
            case!(v, "null", g(null_mut(), 0));
            case!(v, "flags", g(mis().cast(), 0xFF));
            case!(v, "no context", without_context(|| g(out().cast(), 0)));
        }
        "cuStreamDestroy_v2" | "cuStreamSynchronize" | "cuStreamQuery" => {
            let g = move |bs: CUstream| {
                // SAFETY: as for every case (see `case!`).
                unsafe {
                    match name {
                        "cuStreamDestroy_v2" => cu::cuStreamDestroy_v2(bs),
                        "cuStreamSynchronize" => cu::cuStreamSynchronize(bs),
                        _ => cu::cuStreamQuery(bs),
                    }
                }
            };
            for bs in e.bad_streams() {
                case!(v, format!("{bs:?}"), g(bs));
            }
            case!(
                v,
                "legacy, no context",
                without_context(|| g(CUstream::default()))
            );
        }
        "cuStreamWaitEvent" => {
            for bs in e.bad_streams() {
                case!(v, format!("{bs:?}"), cu::cuStreamWaitEvent(bs, e.e, 0));
            }
            for be in e.bad_events() {
                case!(v, format!("{be:?}"), cu::cuStreamWaitEvent(s, be, 0));
            }
            case!(v, "flags", cu::cuStreamWaitEvent(s, e.e, 0xFF));
        }
        "cuStreamGetPriority" | "cuStreamGetFlags" | "cuStreamGetCtx" | "cuStreamIsCapturing" => {
            let g = move |bs: CUstream, o: *mut u64| {
                // SAFETY: as for every case (see `case!`).
                unsafe {
                    match name {
                        "cuStreamGetPriority" => cu::cuStreamGetPriority(bs, o.cast()),
                        "cuStreamGetFlags" => cu::cuStreamGetFlags(bs, o.cast()),
                        "cuStreamGetCtx" => cu::cuStreamGetCtx(bs, o.cast()),
                        _ => cu::cuStreamIsCapturing(bs, o.cast()),
                    }
                }
            };
            case!(v, "null", g(s, null_mut()));
            for bs in e.bad_streams() {
                case!(v, format!("{bs:?}"), g(bs, mis()));
            }
        }
        "cuStreamBeginCapture_v2" => {
            for bs in e.bad_streams() {
                case!(v, format!("{bs:?}"), cu::cuStreamBeginCapture_v2(bs, 99));
            }
        }
        "cuEventCreate" => {
            case!(v, "null", cu::cuEventCreate(null_mut(), 0));
            case!(v, "flags", cu::cuEventCreate(out().cast(), 0xF0));
            case!(
                v,
                "interprocess with timing",
                cu::cuEventCreate(mis().cast(), 0x4)
            );
        }
        "cuEventDestroy_v2" | "cuEventQuery" | "cuEventSynchronize" => {
            let g = move |be: CUevent| {
                // SAFETY: as for every case (see `case!`).
                unsafe {
                    match name {
                        "cuEventDestroy_v2" => cu::cuEventDestroy_v2(be),
                        "cuEventQuery" => cu::cuEventQuery(be),
                        _ => cu::cuEventSynchronize(be),
                    }
                }
            };
            for be in e.bad_events() {
                case!(v, format!("{be:?}"), g(be));
            }
        }
        "cuEventRecord" | "cuEventRecordWithFlags" => {
            let g = move |be: CUevent, bs: CUstream| {
                // SAFETY: as for every case (see `case!`).
                unsafe {
                    {
                        if name == "cuEventRecord" {
                            cu::cuEventRecord(be, bs)
                        } else {
                            cu::cuEventRecordWithFlags(be, bs, 0)
                        }
                    }
                }
            };
            for be in e.bad_events() {
                case!(v, format!("{be:?}"), g(be, s));
            }
            for bs in e.bad_streams() {
                case!(v, format!("{bs:?}"), g(e.e, bs));
            }
            case!(v, "stream of another context", g(e.e, e.s_foreign));
            case!(v, "event of another context", g(e.e_foreign, s));
        }
        "cuEventElapsedTime" => {
            case!(v, "null", cu::cuEventElapsedTime(null_mut(), e.e, e.e));
            case!(
                v,
                "unrecorded",
                cu::cuEventElapsedTime(out().cast(), e.e, e.e)
            );
            for be in e.bad_events() {
                case!(
                    v,
                    format!("{be:?}"),
                    cu::cuEventElapsedTime(mis().cast(), be, e.e)
                );
            }
        }
        "cuProfilerStart" => case!(v, "no context", without_context(|| cu::cuProfilerStart())),
        "cuProfilerStop" => case!(v, "no context", without_context(|| cu::cuProfilerStop())),
        _ => {}
    }
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
                    .filter(|l| l.starts_with("calling "))
                    .last()
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
