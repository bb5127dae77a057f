//! Hostile calls: modules, functions, launches, streams and events.

use super::*;

/// The hostile calls of export `name` among modules, functions, launches, streams and events (none for others).
#[allow(unused_unsafe)]
pub fn cases<'a>(name: &'a str, e: &'a Env) -> Vec<Case<'a>> {
    let mut v: Vec<Case<'a>> = Vec::new();
    // A writable 32-byte buffer for out-pointers (leaked, as every buffer
    // below: the calls run after this function returned).
    let base = Box::leak(Box::new([0u64; 4])).as_mut_ptr() as usize;
    let out = move || base as *mut u64;
    // Misaligned: one byte into it.
    let mis = move || (base + 1) as *mut u64;
    let (s, f) = (e.s, e.f);
    match name {
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
        "cuFuncGetParamInfo" => {
            case!(
                v,
                "index 3",
                cu::cuFuncGetParamInfo(f, 3, out().cast(), mis().cast())
            );
            case!(
                v,
                "index max",
                cu::cuFuncGetParamInfo(f, usize::MAX, null_mut(), null_mut())
            );
            for bf in e.bad_functions() {
                case!(
                    v,
                    format!("{bf:?}"),
                    cu::cuFuncGetParamInfo(bf, 0, out().cast(), null_mut())
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
