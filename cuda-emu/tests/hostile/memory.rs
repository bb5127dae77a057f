//! Hostile calls: memory and copies.

use super::*;

/// The hostile calls of export `name` among memory and copies (none for others).
#[allow(unused_unsafe)]
pub fn cases<'a>(name: &'a str, e: &'a Env) -> Vec<Case<'a>> {
    let mut v: Vec<Case<'a>> = Vec::new();
    // A writable 32-byte buffer for out-pointers (leaked, as every buffer
    // below: the calls run after this function returned).
    let base = Box::leak(Box::new([0u64; 4])).as_mut_ptr() as usize;
    let out = move || base as *mut u64;
    // Misaligned: one byte into it.
    let mis = move || (base + 1) as *mut u64;
    let host = vec![0u8; 256].leak();
    let hp = host.as_mut_ptr().cast::<c_void>();
    let (s, p) = (e.s, e.p);
    match name {
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
        _ => {}
    }
    v
}
