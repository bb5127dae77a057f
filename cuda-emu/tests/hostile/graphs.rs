//! Hostile calls: stream capture and graphs.

use super::*;

/// The hostile calls of export `name` among the capture and graph exports
/// (none for others).
#[allow(unused_unsafe)]
pub fn cases<'a>(name: &'a str, e: &'a Env) -> Vec<Case<'a>> {
    let mut v: Vec<Case<'a>> = Vec::new();
    if !(name.starts_with("cuGraph") || name.contains("Capture")) {
        return v;
    }
    let base = Box::leak(Box::new([0u64; 8])).as_mut_ptr() as usize;
    let out = move || base as *mut u64;
    let mis = move || (base + 1) as *mut u64;
    // A graph and its executable graph, and destroyed ones.
    let make = || {
        let s = stream(0);
        let mut g = null_mut();
        let mut x = null_mut();
        // SAFETY: handle values and valid out-pointers.
        unsafe {
            ok(cu::cuStreamBeginCapture_v2(s, 0));
            ok(cu::cuMemsetD8Async(e.p, 1, 16, s));
            ok(cu::cuStreamEndCapture(s, &mut g));
            ok(cu::cuGraphInstantiateWithFlags(&mut x, g, 0));
        }
        (g as usize, x as usize)
    };
    let (g, x) = make();
    let (g_dead, x_dead) = make();
    // SAFETY: handle values.
    unsafe {
        ok(cu::cuGraphExecDestroy(hv(x_dead as u64)));
        ok(cu::cuGraphDestroy(hv(g_dead as u64)));
    }
    let (g, x) = (hv(g as u64), hv(x as u64));
    let mut bad_graphs: Vec<*mut c_void> = vec![null_mut(), hv(g_dead as u64), x, e.m_foreign.0];
    bad_graphs.extend(e.bogus.iter().map(|&b| hv(b)));
    let mut bad_execs: Vec<*mut c_void> = vec![null_mut(), hv(x_dead as u64), g, e.f.0];
    bad_execs.extend(e.bogus.iter().map(|&b| hv(b)));
    let bad_graphs: &'a [*mut c_void] = Box::leak(bad_graphs.into_boxed_slice());
    let bad_execs: &'a [*mut c_void] = Box::leak(bad_execs.into_boxed_slice());
    // A stream that is not capturing, and one of another context.
    let idle = e.s;
    match name {
        "cuStreamBeginCapture_v2" | "cuStreamBeginCapture" => {
            let begin = move |s: CUstream, mode: u32| {
                // SAFETY: the hostile call under test.
                unsafe {
                    if name == "cuStreamBeginCapture" {
                        cu::cuStreamBeginCapture(s)
                    } else {
                        cu::cuStreamBeginCapture_v2(s, mode)
                    }
                }
            };
            if name == "cuStreamBeginCapture_v2" {
                case!(v, "mode 99", begin(idle, 99));
            }
            case!(v, "legacy", begin(CUstream(hv(1)), 0));
            case!(
                v,
                "no context",
                without_context(|| begin(CUstream::default(), 0))
            );
            for bs in e.bad_streams() {
                case!(v, format!("{bs:?}"), begin(bs, 0));
            }
            // Twice: the second is refused (this one leaves `capturing`
            // in capture; nothing else in this process uses it).
            let capturing = stream(0);
            case!(v, "twice", {
                begin(capturing, 0);
                begin(capturing, 0)
            });
        }
        "cuStreamEndCapture" => {
            case!(v, "null graph", cu::cuStreamEndCapture(idle, null_mut()));
            case!(
                v,
                "not capturing",
                cu::cuStreamEndCapture(idle, out().cast())
            );
            case!(
                v,
                "legacy",
                cu::cuStreamEndCapture(CUstream::default(), mis().cast())
            );
            for bs in e.bad_streams() {
                case!(
                    v,
                    format!("{bs:?}"),
                    cu::cuStreamEndCapture(bs, out().cast())
                );
            }
            case!(
                v,
                "no context",
                without_context(|| cu::cuStreamEndCapture(CUstream::default(), out().cast()))
            );
        }
        "cuStreamGetCaptureInfo" | "cuStreamGetCaptureInfo_v2" | "cuStreamGetCaptureInfo_v3" => {
            let info = move |s: CUstream, st: *mut u32| {
                let o = mis();
                // SAFETY: the hostile call under test.
                unsafe {
                    match name {
                        "cuStreamGetCaptureInfo" => cu::cuStreamGetCaptureInfo(s, st, o),
                        "cuStreamGetCaptureInfo_v2" => {
                            cu::cuStreamGetCaptureInfo_v2(s, st, o, o.cast(), o.cast(), o.cast())
                        }
                        _ => cu::cuStreamGetCaptureInfo_v3(
                            s,
                            st,
                            o,
                            o.cast(),
                            o.cast(),
                            o.cast(),
                            o.cast(),
                        ),
                    }
                }
            };
            case!(v, "null status", info(idle, null_mut()));
            for bs in e.bad_streams() {
                case!(v, format!("{bs:?}"), info(bs, out().cast()));
            }
            case!(
                v,
                "no context",
                without_context(|| info(CUstream::default(), out().cast()))
            );
        }
        "cuGraphInstantiateWithFlags" => {
            case!(
                v,
                "null exec",
                cu::cuGraphInstantiateWithFlags(null_mut(), g, 0)
            );
            case!(
                v,
                "flags 16",
                cu::cuGraphInstantiateWithFlags(out().cast(), g, 16)
            );
            case!(
                v,
                "flags all ones",
                cu::cuGraphInstantiateWithFlags(mis().cast(), g, u64::MAX)
            );
            case!(
                v,
                "device launch",
                cu::cuGraphInstantiateWithFlags(out().cast(), g, 4)
            );
            case!(
                v,
                "device launch + auto free",
                cu::cuGraphInstantiateWithFlags(out().cast(), g, 5)
            );
            for &bg in bad_graphs {
                case!(
                    v,
                    format!("{bg:?}"),
                    cu::cuGraphInstantiateWithFlags(out().cast(), bg, 0)
                );
            }
        }
        "cuGraphLaunch" | "cuGraphUpload" => {
            let go = move |x: *mut c_void, s: CUstream| {
                // SAFETY: the hostile call under test.
                unsafe {
                    if name == "cuGraphLaunch" {
                        cu::cuGraphLaunch(x, s)
                    } else {
                        cu::cuGraphUpload(x, s)
                    }
                }
            };
            for &bx in bad_execs {
                case!(v, format!("{bx:?}"), go(bx, idle));
            }
            for bs in e.bad_streams() {
                case!(v, format!("stream {bs:?}"), go(x, bs));
            }
            case!(v, "foreign stream", go(x, e.s_foreign));
            let xu = x as usize;
            case!(
                v,
                "no context",
                without_context(move || go(hv(xu as u64), CUstream::default()))
            );
        }
        "cuGraphExecDestroy" => {
            for &bx in bad_execs {
                case!(v, format!("{bx:?}"), cu::cuGraphExecDestroy(bx));
            }
        }
        "cuGraphDestroy" => {
            for &bg in bad_graphs {
                case!(v, format!("{bg:?}"), cu::cuGraphDestroy(bg));
            }
            // A graph still being captured into.
            let s = stream(0);
            let mut st = 0u32;
            let mut gp = null_mut();
            // SAFETY: handle values and valid out-pointers.
            unsafe {
                ok(cu::cuStreamBeginCapture_v2(s, 2));
                ok(cu::cuStreamGetCaptureInfo_v2(
                    s,
                    &mut st,
                    null_mut(),
                    &mut gp,
                    null_mut(),
                    null_mut(),
                ));
            }
            let gp = gp as usize;
            case!(v, "being captured", cu::cuGraphDestroy(hv(gp as u64)));
        }
        _ => {}
    }
    v
}
