//! Hostile calls: libraries and kernels, `cuModuleLoad`,
//! `cuLaunchKernelEx`.

use super::*;

/// The hostile calls of export `name` among the exports above (none for
/// others).
#[allow(unused_unsafe)]
pub fn cases<'a>(name: &'a str, e: &'a Env) -> Vec<Case<'a>> {
    let mut v: Vec<Case<'a>> = Vec::new();
    let base = Box::leak(Box::new([0u64; 4])).as_mut_ptr() as usize;
    let out = move || base as *mut u64;
    let mis = move || (base + 1) as *mut u64;
    let text = move || EMU_TEXT.as_ptr().cast::<c_void>();
    // A live library and kernel, and an unloaded library with its kernel.
    let lib_of = || {
        let mut l = null_mut();
        // SAFETY: valid out-pointer and image.
        ok(unsafe {
            cu::cuLibraryLoadData(
                &mut l,
                text(),
                null_mut(),
                null_mut(),
                0,
                null_mut(),
                null_mut(),
                0,
            )
        });
        let mut k = null_mut();
        // SAFETY: as above.
        ok(unsafe { cu::cuLibraryGetKernel(&mut k, l, c"fill".as_ptr()) });
        (l as usize, k as usize)
    };
    let needs_lib = name.starts_with("cuLibrary") || name.starts_with("cuKernel");
    let (lib, k, lib_dead, k_dead) = if needs_lib {
        let (l, k) = lib_of();
        let (ld, kd) = lib_of();
        // SAFETY: a handle value.
        ok(unsafe { cu::cuLibraryUnload(hv(ld as u64)) });
        (l, k, ld, kd)
    } else {
        (0, 0, 0, 0)
    };
    let lib = move || hv(lib as u64);
    let k = move || hv(k as u64);
    let mut bad_libs: Vec<*mut c_void> =
        vec![hv(lib_dead as u64), hv(k_dead as u64), e.m_foreign.0];
    bad_libs.extend(e.bogus.iter().map(|&b| hv(b)));
    let mut bad_kernels: Vec<*mut c_void> = vec![hv(k_dead as u64), hv(lib_dead as u64), e.f.0];
    bad_kernels.extend(e.bogus.iter().map(|&b| hv(b)));
    let bad_libs: &'a [*mut c_void] = Box::leak(bad_libs.into_boxed_slice());
    let bad_kernels: &'a [*mut c_void] = Box::leak(bad_kernels.into_boxed_slice());
    match name {
        "cuLibraryLoadData" | "cuLibraryLoadFromFile" => {
            let load = move |l: *mut *mut c_void, img: *const c_void, o: *mut u32, n: u32| {
                if name == "cuLibraryLoadData" {
                    // SAFETY: the hostile call under test.
                    unsafe {
                        cu::cuLibraryLoadData(l, img, o, null_mut(), n, null_mut(), null_mut(), 0)
                    }
                } else {
                    // SAFETY: as above.
                    unsafe {
                        cu::cuLibraryLoadFromFile(
                            l,
                            img.cast(),
                            o,
                            null_mut(),
                            n,
                            null_mut(),
                            null_mut(),
                            0,
                        )
                    }
                }
            };
            case!(
                v,
                "null library",
                load(null_mut(), c"x".as_ptr().cast(), null_mut(), 0)
            );
            case!(v, "null image", load(out().cast(), null(), null_mut(), 0));
            case!(
                v,
                "empty",
                load(mis().cast(), c"".as_ptr().cast(), null_mut(), 0)
            );
            case!(
                v,
                "garbage",
                load(out().cast(), c"\x7fELF\x01".as_ptr().cast(), null_mut(), 0)
            );
            case!(v, "options null", load(out().cast(), text(), null_mut(), 3));
            case!(
                v,
                "no context, garbage",
                without_context(|| load(out().cast(), c"\xff\xfe".as_ptr().cast(), null_mut(), 0))
            );
            let lo = Box::leak(Box::new([9u32; 1])).as_mut_ptr() as usize;
            let lval = Box::leak(Box::new([0usize; 1])).as_mut_ptr() as usize;
            case!(
                v,
                "library option 9",
                cu::cuLibraryLoadData(
                    out().cast(),
                    text(),
                    null_mut(),
                    null_mut(),
                    0,
                    lo as *mut u32,
                    lval as *mut *mut c_void,
                    1
                )
            );
        }
        "cuModuleLoad" => {
            case!(
                v,
                "null module",
                cu::cuModuleLoad(null_mut(), c"/tmp".as_ptr())
            );
            case!(v, "null path", cu::cuModuleLoad(out().cast(), null()));
            case!(
                v,
                "missing",
                cu::cuModuleLoad(out().cast(), c"/nonexistent/x".as_ptr())
            );
            case!(
                v,
                "directory",
                cu::cuModuleLoad(mis().cast(), c"/".as_ptr())
            );
            case!(
                v,
                "not ptx",
                cu::cuModuleLoad(out().cast(), c"/proc/self/cmdline".as_ptr())
            );
            case!(
                v,
                "no context",
                without_context(|| cu::cuModuleLoad(out().cast(), c"/nonexistent/x".as_ptr()))
            );
        }
        "cuLibraryUnload" => {
            for &l in bad_libs {
                case!(v, format!("{l:?}"), cu::cuLibraryUnload(l));
            }
        }
        "cuLibraryGetKernel" => {
            case!(
                v,
                "null kernel",
                cu::cuLibraryGetKernel(null_mut(), lib(), c"fill".as_ptr())
            );
            case!(
                v,
                "null name",
                cu::cuLibraryGetKernel(out().cast(), lib(), null())
            );
            case!(
                v,
                "unknown name",
                cu::cuLibraryGetKernel(mis().cast(), lib(), c"nope".as_ptr())
            );
            for &l in bad_libs {
                case!(
                    v,
                    format!("{l:?}"),
                    cu::cuLibraryGetKernel(out().cast(), l, c"fill".as_ptr())
                );
            }
        }
        "cuLibraryGetModule" => {
            case!(v, "null module", cu::cuLibraryGetModule(null_mut(), lib()));
            case!(
                v,
                "no context",
                without_context(|| cu::cuLibraryGetModule(out().cast(), lib()))
            );
            for &l in bad_libs {
                case!(v, format!("{l:?}"), cu::cuLibraryGetModule(mis().cast(), l));
            }
        }
        "cuLibraryGetGlobal" => {
            case!(
                v,
                "unknown",
                cu::cuLibraryGetGlobal(out().cast(), null_mut(), lib(), c"g".as_ptr())
            );
            case!(
                v,
                "null name",
                cu::cuLibraryGetGlobal(out().cast(), null_mut(), lib(), null())
            );
            for &l in bad_libs {
                case!(
                    v,
                    format!("{l:?}"),
                    cu::cuLibraryGetGlobal(null_mut(), null_mut(), l, c"g".as_ptr())
                );
            }
        }
        "cuKernelGetFunction" => {
            case!(v, "null", cu::cuKernelGetFunction(null_mut(), k()));
            case!(
                v,
                "no context",
                without_context(|| cu::cuKernelGetFunction(out().cast(), k()))
            );
            for &bk in bad_kernels {
                case!(
                    v,
                    format!("{bk:?}"),
                    cu::cuKernelGetFunction(mis().cast(), bk)
                );
            }
        }
        "cuKernelGetAttribute" => {
            case!(v, "null", cu::cuKernelGetAttribute(null_mut(), 0, k(), 0));
            case!(
                v,
                "attribute 999",
                cu::cuKernelGetAttribute(out().cast(), 999, k(), 0)
            );
            case!(
                v,
                "device 99",
                cu::cuKernelGetAttribute(out().cast(), 0, k(), 99)
            );
            case!(
                v,
                "device -1",
                cu::cuKernelGetAttribute(mis().cast(), 0, k(), -1)
            );
            for &bk in bad_kernels {
                case!(
                    v,
                    format!("{bk:?}"),
                    cu::cuKernelGetAttribute(out().cast(), 0, bk, 0)
                );
            }
        }
        "cuKernelSetAttribute" => {
            case!(v, "read-only", cu::cuKernelSetAttribute(0, 1, k(), 0));
            case!(
                v,
                "too much smem",
                cu::cuKernelSetAttribute(8, i32::MAX, k(), 0)
            );
            case!(v, "device 99", cu::cuKernelSetAttribute(8, 0, k(), 99));
            for &bk in bad_kernels {
                case!(v, format!("{bk:?}"), cu::cuKernelSetAttribute(8, 0, bk, 0));
            }
        }
        "cuLibraryGetKernelCount" => {
            case!(v, "null", cu::cuLibraryGetKernelCount(null_mut(), lib()));
            for &l in bad_libs {
                case!(
                    v,
                    format!("{l:?}"),
                    cu::cuLibraryGetKernelCount(mis().cast(), l)
                );
            }
        }
        "cuLibraryEnumerateKernels" => {
            case!(
                v,
                "null",
                cu::cuLibraryEnumerateKernels(null_mut(), 4, lib())
            );
            case!(
                v,
                "zero",
                cu::cuLibraryEnumerateKernels(out().cast(), 0, lib())
            );
            for &l in bad_libs {
                case!(
                    v,
                    format!("{l:?}"),
                    cu::cuLibraryEnumerateKernels(out().cast(), 1, l)
                );
            }
        }
        "cuKernelGetLibrary" => {
            case!(v, "null", cu::cuKernelGetLibrary(null_mut(), k()));
            for &bk in bad_kernels {
                case!(
                    v,
                    format!("{bk:?}"),
                    cu::cuKernelGetLibrary(mis().cast(), bk)
                );
            }
        }
        "cuKernelGetParamInfo" => {
            case!(
                v,
                "index 3",
                cu::cuKernelGetParamInfo(k(), 3, out().cast(), mis().cast())
            );
            case!(
                v,
                "index max",
                cu::cuKernelGetParamInfo(k(), usize::MAX, null_mut(), null_mut())
            );
            for &bk in bad_kernels {
                case!(
                    v,
                    format!("{bk:?}"),
                    cu::cuKernelGetParamInfo(bk, 0, out().cast(), out().cast())
                );
            }
        }
        "cuKernelGetName" => {
            case!(v, "null", cu::cuKernelGetName(null_mut(), k()));
            for &bk in bad_kernels {
                case!(v, format!("{bk:?}"), cu::cuKernelGetName(out().cast(), bk));
            }
        }
        "cuLaunchKernelEx" => {
            use ptxsmith_cuda_emu::exports::{LaunchAttribute, LaunchConfig};
            let attrs = |id: u32, x: u32| {
                let mut value = [0u32; 16];
                value[0] = x;
                value[1] = 1;
                value[2] = 1;
                Box::leak(Box::new([LaunchAttribute {
                    id,
                    pad: [0; 4],
                    value,
                }]))
                .as_mut_ptr() as usize
            };
            let cfg = move |f_grid: u32, s: CUstream, a: usize, n: u32| {
                Box::leak(Box::new(LaunchConfig {
                    grid: [f_grid, 1, 1],
                    block: [1, 1, 1],
                    smem: 0,
                    stream: s,
                    attrs: a as *mut LaunchAttribute,
                    num_attrs: n,
                })) as *const LaunchConfig as usize
            };
            let c = move |u: usize| u as *const LaunchConfig;
            let ok_cfg = cfg(1, e.s, 0, 0);
            case!(
                v,
                "null config",
                cu::cuLaunchKernelEx(null(), e.f, null_mut(), null_mut())
            );
            case!(
                v,
                "null params",
                cu::cuLaunchKernelEx(c(ok_cfg), e.f, null_mut(), null_mut())
            );
            case!(
                v,
                "grid 0",
                cu::cuLaunchKernelEx(c(cfg(0, e.s, 0, 0)), e.f, null_mut(), null_mut())
            );
            case!(
                v,
                "attrs null",
                cu::cuLaunchKernelEx(c(cfg(1, e.s, 0, 3)), e.f, null_mut(), null_mut())
            );
            for (id, x) in [
                (2, 1),
                (4, 2),
                (4, 0),
                (6, 1),
                (1, 0),
                (99, 0),
                (u32::MAX, 0),
            ] {
                case!(
                    v,
                    format!("attribute {id} = {x}"),
                    cu::cuLaunchKernelEx(
                        c(cfg(1, e.s, attrs(id, x), 1)),
                        e.f,
                        null_mut(),
                        null_mut()
                    )
                );
            }
            // A kernel without parameters: the stream is what is refused.
            let t = emu_kernel("trap_now");
            for bs in e.bad_streams() {
                case!(
                    v,
                    format!("stream {bs:?}"),
                    cu::cuLaunchKernelEx(c(cfg(1, bs, 0, 0)), t, null_mut(), null_mut())
                );
            }
            for bf in e.bad_functions() {
                case!(
                    v,
                    format!("{bf:?}"),
                    cu::cuLaunchKernelEx(c(ok_cfg), bf, null_mut(), null_mut())
                );
            }
            case!(
                v,
                "no context",
                without_context(|| cu::cuLaunchKernelEx(c(ok_cfg), e.f, null_mut(), null_mut()))
            );
        }
        n if n.starts_with("cuLink") => link_cases(&mut v, n, e),
        "cuMemAllocPitch_v2" => {
            let pitch = Box::leak(Box::new(0usize)) as *mut usize as usize;
            let pp = move || pitch as *mut usize;
            case!(
                v,
                "null ptr",
                cu::cuMemAllocPitch_v2(null_mut(), pp(), 16, 4, 4)
            );
            case!(
                v,
                "null pitch",
                cu::cuMemAllocPitch_v2(out(), null_mut(), 16, 4, 4)
            );
            case!(
                v,
                "element 3",
                cu::cuMemAllocPitch_v2(out(), pp(), 16, 4, 3)
            );
            case!(v, "width 0", cu::cuMemAllocPitch_v2(mis(), pp(), 0, 4, 4));
            case!(v, "height 0", cu::cuMemAllocPitch_v2(out(), pp(), 16, 0, 4));
            case!(
                v,
                "huge width",
                cu::cuMemAllocPitch_v2(out(), pp(), usize::MAX, 4, 4)
            );
            case!(
                v,
                "huge",
                cu::cuMemAllocPitch_v2(out(), pp(), 1 << 40, 1 << 30, 16)
            );
            case!(
                v,
                "no context",
                without_context(|| cu::cuMemAllocPitch_v2(out(), pp(), 16, 4, 4))
            );
        }
        "cuMemcpy2D_v2" | "cuMemcpy2DUnaligned_v2" | "cuMemcpy2DAsync_v2" => {
            use ptxsmith_cuda_emu::exports::Memcpy2D;
            let host = Box::leak(vec![0u8; 4096].into_boxed_slice()).as_mut_ptr() as usize;
            // A device-to-host copy of 16 × 4 rows out of the 256-byte
            // allocation (pitch 64), the hostile field changed.
            let good = Memcpy2D {
                src_x: 0,
                src_y: 0,
                src_type: 2,
                src_host: null(),
                src_device: e.p,
                src_array: null_mut(),
                src_pitch: 64,
                dst_x: 0,
                dst_y: 0,
                dst_type: 1,
                dst_host: host as *mut c_void,
                dst_device: 0,
                dst_array: null_mut(),
                dst_pitch: 16,
                width: 16,
                height: 4,
            };
            let go = move |c: Memcpy2D, s: CUstream| {
                let c = Box::leak(Box::new(c)) as *const Memcpy2D;
                // SAFETY: the hostile call under test.
                unsafe {
                    match name {
                        "cuMemcpy2D_v2" => cu::cuMemcpy2D_v2(c),
                        "cuMemcpy2DUnaligned_v2" => cu::cuMemcpy2DUnaligned_v2(c),
                        _ => cu::cuMemcpy2DAsync_v2(c, s),
                    }
                }
            };
            case!(v, "null", {
                // SAFETY: a null descriptor.
                match name {
                    "cuMemcpy2D_v2" => cu::cuMemcpy2D_v2(null()),
                    "cuMemcpy2DUnaligned_v2" => cu::cuMemcpy2DUnaligned_v2(null()),
                    _ => cu::cuMemcpy2DAsync_v2(null(), e.s),
                }
            });
            let variants: Vec<(&str, Memcpy2D)> = vec![
                ("height 5", Memcpy2D { height: 5, ..good }),
                (
                    "height max",
                    Memcpy2D {
                        height: usize::MAX,
                        ..good
                    },
                ),
                (
                    "width max",
                    Memcpy2D {
                        width: usize::MAX,
                        ..good
                    },
                ),
                (
                    "src y max",
                    Memcpy2D {
                        src_y: usize::MAX,
                        ..good
                    },
                ),
                (
                    "src x max",
                    Memcpy2D {
                        src_x: usize::MAX,
                        ..good
                    },
                ),
                (
                    "pitch max",
                    Memcpy2D {
                        src_pitch: usize::MAX,
                        ..good
                    },
                ),
                (
                    "pitch < width",
                    Memcpy2D {
                        src_pitch: 8,
                        ..good
                    },
                ),
                (
                    "dst null",
                    Memcpy2D {
                        dst_host: null_mut(),
                        ..good
                    },
                ),
                (
                    "dst in device space",
                    Memcpy2D {
                        dst_host: hv(e.p),
                        ..good
                    },
                ),
                (
                    "dst host wraps",
                    Memcpy2D {
                        dst_host: hv(u64::MAX - 8),
                        ..good
                    },
                ),
                (
                    "array",
                    Memcpy2D {
                        src_type: 3,
                        ..good
                    },
                ),
                (
                    "type 0",
                    Memcpy2D {
                        src_type: 0,
                        ..good
                    },
                ),
                (
                    "type max",
                    Memcpy2D {
                        dst_type: u32::MAX,
                        ..good
                    },
                ),
                (
                    "host to host",
                    Memcpy2D {
                        src_type: 1,
                        src_host: host as *const c_void,
                        ..good
                    },
                ),
                (
                    "freed",
                    Memcpy2D {
                        src_device: e.p_freed,
                        ..good
                    },
                ),
                (
                    "foreign",
                    Memcpy2D {
                        src_device: e.p_foreign,
                        ..good
                    },
                ),
                (
                    "unified made up",
                    Memcpy2D {
                        src_type: 4,
                        src_device: 0xDEAD_0000,
                        ..good
                    },
                ),
                (
                    "device dst misaligned",
                    Memcpy2D {
                        src_type: 1,
                        src_host: host as *const c_void,
                        dst_type: 2,
                        dst_device: e.p + 255,
                        ..good
                    },
                ),
            ];
            for (label, c) in variants {
                case!(v, label, go(c, e.s));
            }
            if name == "cuMemcpy2DAsync_v2" {
                for bs in e.bad_streams() {
                    case!(v, format!("stream {bs:?}"), go(good, bs));
                }
            }
            let gp = Box::leak(Box::new(good)) as *const Memcpy2D as usize;
            case!(
                v,
                "no context",
                without_context(move || {
                    let c = gp as *const Memcpy2D;
                    // SAFETY: the hostile call under test.
                    unsafe {
                        match name {
                            "cuMemcpy2D_v2" => cu::cuMemcpy2D_v2(c),
                            "cuMemcpy2DUnaligned_v2" => cu::cuMemcpy2DUnaligned_v2(c),
                            _ => cu::cuMemcpy2DAsync_v2(c, CUstream::default()),
                        }
                    }
                })
            );
        }
        _ => {}
    }
    v
}

/// The hostile calls of the `cuLink*` exports.
#[allow(unused_unsafe)]
fn link_cases<'a>(v: &mut Vec<Case<'a>>, name: &'a str, e: &'a Env) {
    let base = Box::leak(Box::new([0u64; 4])).as_mut_ptr() as usize;
    let out = move || base as *mut u64;
    let mis = move || (base + 1) as *mut u64;
    let make = || {
        let mut st = null_mut();
        // SAFETY: a valid out-pointer.
        ok(unsafe { cu::cuLinkCreate_v2(0, null_mut(), null_mut(), &mut st) });
        st as usize
    };
    let (live, dead) = (make(), make());
    // SAFETY: a handle value.
    ok(unsafe { cu::cuLinkDestroy(hv(dead as u64)) });
    let live = move || hv(live as u64);
    let mut bad: Vec<usize> = vec![0, dead, e.f.0 as usize, e.s.0 as usize];
    bad.extend(e.bogus.iter().map(|&b| b as usize));
    let bad: &'a [usize] = Box::leak(bad.into_boxed_slice());
    let text = move || EMU_TEXT.as_ptr().cast_mut().cast::<c_void>();
    let len = EMU_TEXT.as_bytes().len();
    match name {
        "cuLinkCreate" | "cuLinkCreate_v2" => {
            let create = move |n: u32, o: *mut u32, st: *mut *mut c_void| {
                // SAFETY: the hostile call under test.
                unsafe {
                    if name == "cuLinkCreate" {
                        cu::cuLinkCreate(n, o, null_mut(), st)
                    } else {
                        cu::cuLinkCreate_v2(n, o, null_mut(), st)
                    }
                }
            };
            case!(v, "null state", create(0, null_mut(), null_mut()));
            case!(v, "options null", create(3, null_mut(), out().cast()));
            case!(
                v,
                "no context",
                without_context(|| create(0, null_mut(), mis().cast()))
            );
        }
        "cuLinkAddData" | "cuLinkAddData_v2" => {
            let add = move |st: *mut c_void, ty: u32, d: *mut c_void, n: usize| {
                // SAFETY: the hostile call under test.
                unsafe {
                    if name == "cuLinkAddData" {
                        cu::cuLinkAddData(st, ty, d, n, null(), 0, null_mut(), null_mut())
                    } else {
                        cu::cuLinkAddData_v2(st, ty, d, n, null(), 0, null_mut(), null_mut())
                    }
                }
            };
            case!(v, "null data", add(live(), 1, null_mut(), 10));
            case!(v, "size 0", add(live(), 1, text(), 0));
            case!(v, "type 99", add(live(), 99, text(), len));
            case!(v, "cubin", add(live(), 0, text(), len));
            case!(
                v,
                "garbage",
                add(live(), 1, c"\xff\xfe".as_ptr().cast_mut().cast(), 2)
            );
            case!(v, "device address", add(live(), 1, hv(e.p), 256));
            case!(v, "huge", add(live(), 1, hv(e.p), usize::MAX));
            for &b in bad {
                case!(v, format!("{b:#x}"), add(hv(b as u64), 1, text(), len));
            }
        }
        "cuLinkAddFile" | "cuLinkAddFile_v2" => {
            let add = move |st: *mut c_void, ty: u32, p: *const std::ffi::c_char| {
                // SAFETY: the hostile call under test.
                unsafe {
                    if name == "cuLinkAddFile" {
                        cu::cuLinkAddFile(st, ty, p, 0, null_mut(), null_mut())
                    } else {
                        cu::cuLinkAddFile_v2(st, ty, p, 0, null_mut(), null_mut())
                    }
                }
            };
            case!(v, "null path", add(live(), 1, null()));
            case!(v, "missing", add(live(), 1, c"/nonexistent/x".as_ptr()));
            case!(v, "directory", add(live(), 1, c"/".as_ptr()));
            case!(v, "not ptx", add(live(), 1, c"/proc/self/cmdline".as_ptr()));
            for &b in bad {
                case!(v, format!("{b:#x}"), add(hv(b as u64), 1, c"/".as_ptr()));
            }
        }
        "cuLinkComplete" => {
            case!(
                v,
                "nothing added",
                cu::cuLinkComplete(live(), out().cast(), mis().cast())
            );
            case!(
                v,
                "null image",
                cu::cuLinkComplete(live(), null_mut(), out().cast())
            );
            case!(
                v,
                "null size",
                cu::cuLinkComplete(live(), out().cast(), null_mut())
            );
            for &b in bad {
                case!(
                    v,
                    format!("{b:#x}"),
                    cu::cuLinkComplete(hv(b as u64), out().cast(), mis().cast())
                );
            }
        }
        "cuLinkDestroy" => {
            for &b in bad {
                case!(v, format!("{b:#x}"), cu::cuLinkDestroy(hv(b as u64)));
            }
        }
        _ => {}
    }
}

/// `EMU_PTX`, NUL-terminated.
static EMU_TEXT: std::sync::LazyLock<std::ffi::CString> =
    std::sync::LazyLock::new(|| std::ffi::CString::new(EMU_PTX).unwrap());
