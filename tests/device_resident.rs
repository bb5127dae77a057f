//! Device-resident data, streams and interop (issue 8): each scenario is
//! one function over a [`Context`], run on the simulator here and on the
//! GPU when one is present (the `gpu_*` tests print SKIP without one).
//!
//! * three batches routed against one resident dictionary: `D` crosses
//!   the bus once, every batch is bit-identical to the host model, the
//!   traffic counters show exactly the expected uploads and downloads;
//! * FP8 quantize → dequantize chained on the device, no download between;
//! * the raw-pointer entry points on memory ptxsmith did not allocate;
//! * bad input: lengths, contexts, alignment, streams.

use ptxsmith::Error;
use ptxsmith::Sm;
use ptxsmith::kernels::dot;
use ptxsmith::kernels::fp8::{self, Format, launch as fp8l, ptx::Codec};
use ptxsmith::kernels::score::{self, Route, ScoreShape, launch as score_l, ptx::ScoreTuning};
use ptxsmith::runtime::{AsDevice, Context, RawStream, Stream, Traffic};
use ptxsmith::testing::{cuda_for_tests, on_emulator, small_shapes};

mod common;
use common::{bits, foreign_alloc, foreign_get, foreign_put};

fn lcg(seed: u32) -> impl FnMut() -> f32 {
    let mut s = seed;
    move || {
        s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (s >> 8) as f32 / (1u32 << 24) as f32 * 2.0 - 1.0
    }
}

// ---------------------------------------------------------------------------
// Resident dictionary
// ---------------------------------------------------------------------------

/// Upload `D` once, route three batches against it, download only the
/// results; check bits and traffic.
fn resident_routing(ctx: &Context, rows: usize, k: usize, p: usize, s: usize) {
    let mut next = lcg(11);
    let d: Vec<f32> = (0..k * p).map(|_| next()).collect();
    // A stream of our own: its counters see only this scenario's work,
    // even when other tests share the device's context.
    let st = ctx.new_stream().unwrap();
    let before = st.traffic();
    let dict = st.upload(&d).unwrap();
    let after_dict = st.traffic().since(&before);
    assert_eq!(after_dict.bytes_uploaded, (k * p * 4) as u64);
    for batch in 0..3 {
        let x: Vec<f32> = (0..rows * p).map(|_| next()).collect();
        let t0 = st.traffic();
        let xb = st.upload(&x).unwrap();
        let top = score_l::route_top_s_dev(
            &st,
            Route {
                shape: ScoreShape { rows, k, p },
                s,
            },
            None,
            &xb,
            &dict,
        )
        .unwrap();
        // Nothing came back yet: the result is on the device.
        assert_eq!(st.traffic().since(&t0).bytes_downloaded, 0);
        let got = top.download(&st).unwrap();
        let t = st.traffic().since(&t0);
        assert_eq!(
            (t.bytes_uploaded, t.uploads, t.bytes_downloaded, t.downloads),
            ((rows * p * 4) as u64, 1, (rows * s * 8) as u64, 1),
            "batch {batch}: only x goes up, only rows·s·8 bytes come down"
        );
        let want = score::host::route_top_s_fast(&x, &d, rows, k, p, s).unwrap();
        assert_eq!(got.atoms, want.atoms, "batch {batch}");
        assert_eq!(bits(&got.scores), bits(&want.scores), "batch {batch}");
    }
    let total = st.traffic().since(&before);
    assert_eq!(
        total.bytes_uploaded,
        ((k * p + 3 * rows * p) * 4) as u64,
        "the dictionary crossed the bus exactly once"
    );
    assert_eq!(total.bytes_downloaded, (3 * rows * s * 8) as u64);
    assert_eq!(total.uploads, 4);
    assert_eq!(total.downloads, 3);
}

#[test]
fn sim_routes_three_batches_against_one_resident_dictionary() {
    // Multi-split (merge) and single-split plans, vec4 and scalar staging.
    resident_routing(&Context::sim(Sm::Sm80), 40, 700, 16, 5);
    resident_routing(&Context::sim(Sm::Sm90), 9, 130, 7, 3);
}

#[test]
fn gpu_routes_three_batches_against_one_resident_dictionary() {
    let Some(ctx) = cuda_for_tests() else { return };
    // GPU-sized dictionary; a smaller one on the driver emulator, whose
    // kernels run on the simulator.
    if on_emulator(&ctx) {
        resident_routing(&ctx, 40, 4096, 64, 8);
    } else {
        resident_routing(&ctx, 300, 32768, 64, 8);
    }
    resident_routing(&ctx, 9, 130, 7, 3);
}

#[test]
fn score_block_on_resident_buffers_and_sub_slices() {
    let ctx = Context::sim(Sm::Sm80);
    let st = ctx.default_stream();
    let (rows, k, p) = (5, 40, 8);
    let mut next = lcg(3);
    let x: Vec<f32> = (0..2 * rows * p).map(|_| next()).collect();
    let d: Vec<f32> = (0..k * p).map(|_| next()).collect();
    let (xb, db) = (st.upload(&x).unwrap(), st.upload(&d).unwrap());
    let mut out = ctx.alloc_zeroed::<f32>(2 * rows * k).unwrap();
    // The second half of x (offset 40 floats: 16-byte aligned, so the vec4
    // default applies) into the second half of out.
    let second = xb.slice(rows * p..).unwrap();
    let mut tail = out.slice_mut(rows * k..).unwrap();
    score_l::score_block_dev(
        &st,
        ScoreShape { rows, k, p },
        None,
        &second,
        &db,
        &mut tail,
    )
    .unwrap();
    let got = out.to_vec().unwrap();
    let want = score::host::score_block(&x[rows * p..], &d, rows, k, p).unwrap();
    assert!(got[..rows * k].iter().all(|v| v.to_bits() == 0));
    assert_eq!(bits(&got[rows * k..]), bits(&want));
}

// ---------------------------------------------------------------------------
// FP8 chained on the device
// ---------------------------------------------------------------------------

fn fp8_chain(ctx: &Context, n: usize, f: Format, codec: Codec) {
    let mut r = lcg(5 + n as u32);
    let mut xs: Vec<f32> = (0..n).map(|_| r() * 300.0).collect();
    if n > 3 {
        xs[1] = f32::NAN;
        xs[2] = f32::INFINITY;
    }
    let st = ctx.new_stream().unwrap();
    let before = st.traffic();
    let x = st.upload(&xs).unwrap();
    let mut codes = ctx.alloc::<u8>(n).unwrap();
    let mut stats = ctx.alloc::<f32>(3).unwrap();
    let mut y = ctx.alloc::<f32>(n).unwrap();
    fp8l::quantize_dev(
        &st,
        ptxsmith::kernels::fp8::Encoding { format: f, codec },
        &x,
        &mut codes,
        &mut stats,
    )
    .unwrap();
    fp8l::dequantize_stats_dev(
        &st,
        ptxsmith::kernels::fp8::Encoding { format: f, codec },
        &codes,
        &stats,
        &mut y,
    )
    .unwrap();
    let t = st.traffic().since(&before);
    assert_eq!(
        (t.uploads, t.downloads, t.bytes_downloaded),
        (1, 0, 0),
        "nothing comes back between quantize and dequantize"
    );
    let got = st.to_vec(&y).unwrap();
    let q = fp8::host::quantize_as(&xs, f);
    let want = fp8::host::dequantize_as(&q.codes, q.scale_inv, f);
    assert_eq!(bits(&got), bits(&want), "{f:?} {codec:?} n={n}");
    // And the intermediate results, downloaded only now, are the host's.
    assert_eq!(st.to_vec(&codes).unwrap(), q.codes);
    let s = st.to_vec(&stats).unwrap();
    assert_eq!(
        bits(&s),
        bits(&[q.amax, q.scale, q.scale_inv]),
        "{f:?} {codec:?}"
    );
    let t = st.traffic().since(&before);
    assert_eq!(t.bytes_uploaded, (4 * n) as u64);
    assert_eq!(t.bytes_downloaded, (4 * n + n + 12) as u64);
}

#[test]
fn sim_fp8_quantize_feeds_dequantize_on_the_device() {
    for f in [Format::E4M3, Format::E5M2] {
        fp8_chain(&Context::sim(Sm::Sm89), 1031, f, Codec::Hardware);
        fp8_chain(&Context::sim(Sm::Sm80), 1031, f, Codec::Software);
        fp8_chain(&Context::sim(Sm::Sm80), 0, f, Codec::Software);
    }
}

#[test]
fn gpu_fp8_quantize_feeds_dequantize_on_the_device() {
    let Some(ctx) = cuda_for_tests() else { return };
    let n = if small_shapes(&ctx) { 1 << 16 } else { 1 << 22 };
    for f in [Format::E4M3, Format::E5M2] {
        fp8_chain(&ctx, n + 3, f, Codec::for_sm(ctx.sm()));
        fp8_chain(&ctx, 1031, f, Codec::Software);
    }
}

// ---------------------------------------------------------------------------
// Raw pointers
// ---------------------------------------------------------------------------

#[test]
fn sim_raw_pointer_entry_points_run_on_foreign_memory() {
    raw_pointer_entry_points_on(&Context::sim(Sm::Sm80));
}

/// The same on plain driver allocations of a GPU or the driver emulator,
/// on ptxsmith's default stream (SKIP without one).
#[test]
fn gpu_raw_pointer_entry_points_run_on_foreign_driver_memory() {
    let Some(ctx) = cuda_for_tests() else { return };
    raw_pointer_entry_points_on(&ctx);
}

fn raw_pointer_entry_points_on(ctx: &Context) {
    let stream = ctx.default_stream().raw();
    let mut next = lcg(21);
    // dot
    let (rows, n) = (7, 33);
    let x: Vec<f32> = (0..rows * n).map(|_| next()).collect();
    let y: Vec<f32> = (0..n).map(|_| next()).collect();
    let (px, py, po) = (
        foreign_put(ctx, &x),
        foreign_put(ctx, &y),
        foreign_alloc(ctx, rows * 4),
    );
    // SAFETY: the three allocations hold rows·n, n and rows floats, are
    // disjoint, and live until the end of the test; the stream is the
    // context's default stream.
    unsafe {
        dot::dot_rows_raw(
            &Stream::from_raw(ctx, stream).unwrap(),
            dot::Shape { rows, n },
            px,
            py,
            po,
        )
    }
    .unwrap();
    // The raw entry points only queue: wait before reading the memory
    // (on a GPU or the emulator the read is another stream's work).
    ctx.synchronize().unwrap();
    assert_eq!(
        bits(&foreign_get::<f32>(ctx, po, rows)),
        bits(&dot::host::dot_rows(&x, &y, rows, n))
    );
    // fp8 quantize → dequantize, all in foreign memory
    let xs: Vec<f32> = (0..1000).map(|_| next() * 50.0).collect();
    let (qx, qc, qs, qy) = (
        foreign_put(ctx, &xs),
        foreign_alloc(ctx, xs.len()),
        foreign_alloc(ctx, 12),
        foreign_alloc(ctx, 4 * xs.len()),
    );
    // SAFETY: sizes as the contract says, disjoint outputs, all live.
    unsafe {
        fp8l::quantize_raw(
            &ptxsmith::runtime::Stream::from_raw(ctx, stream).unwrap(),
            ptxsmith::kernels::fp8::Encoding {
                format: Format::E4M3,
                codec: Codec::Software,
            },
            xs.len(),
            qx,
            qc,
            qs,
        )
        .unwrap();
        fp8l::dequantize_stats_raw(
            &ptxsmith::runtime::Stream::from_raw(ctx, stream).unwrap(),
            ptxsmith::kernels::fp8::Encoding {
                format: Format::E4M3,
                codec: Codec::Software,
            },
            xs.len(),
            qc,
            qs,
            qy,
        )
        .unwrap();
    }
    ctx.synchronize().unwrap();
    let q = fp8::host::quantize(&xs);
    assert_eq!(foreign_get::<u8>(ctx, qc, xs.len()), q.codes);
    assert_eq!(
        bits(&foreign_get::<f32>(ctx, qy, xs.len())),
        bits(&fp8::host::dequantize(&q.codes, q.scale_inv))
    );
    // score block and route into foreign memory
    let (rows, k, p, s) = (6, 90, 12, 4);
    let sx: Vec<f32> = (0..rows * p).map(|_| next()).collect();
    let sd: Vec<f32> = (0..k * p).map(|_| next()).collect();
    let (rx, rd, ro, rt) = (
        foreign_put(ctx, &sx),
        foreign_put(ctx, &sd),
        foreign_alloc(ctx, rows * k * 4),
        foreign_alloc(ctx, rows * s * 8),
    );
    // SAFETY: as above.
    unsafe {
        score_l::score_block_raw(
            &Stream::from_raw(ctx, stream).unwrap(),
            ScoreShape { rows, k, p },
            None,
            rx,
            rd,
            ro,
        )
        .unwrap();
        score_l::route_top_s_raw(
            &Stream::from_raw(ctx, stream).unwrap(),
            Route {
                shape: ScoreShape { rows, k, p },
                s,
            },
            None,
            rx,
            rd,
            rt,
        )
        .unwrap();
    }
    ctx.synchronize().unwrap();
    let want = score::host::score_block(&sx, &sd, rows, k, p).unwrap();
    assert_eq!(bits(&foreign_get::<f32>(ctx, ro, rows * k)), bits(&want));
    let pairs = foreign_get::<u32>(ctx, rt, rows * s * 2);
    let top = score::host::route_top_s(&sx, &sd, rows, k, p, s).unwrap();
    let atoms: Vec<u32> = pairs.chunks(2).map(|c| c[0]).collect();
    let scores: Vec<u32> = pairs.chunks(2).map(|c| c[1]).collect();
    assert_eq!(atoms, top.atoms);
    assert_eq!(scores, bits(&top.scores));
    // The route's own workspace was ptxsmith's and is freed again.
    if let Some(live) = ctx.with_sim(|sim| sim.live_allocations()) {
        assert_eq!(live, 11, "only the 11 foreign allocations remain");
    }
}

#[test]
fn sim_raw_entry_points_still_check_what_they_can() {
    let ctx = Context::sim(Sm::Sm80);
    let stream = ctx.default_stream().raw();
    let x = foreign_alloc(&ctx, 64);
    // Misaligned x for the 16-byte fp8 loads.
    // SAFETY: the call fails before any kernel is queued.
    let e = unsafe {
        fp8l::quantize_raw(
            &ptxsmith::runtime::Stream::from_raw(&ctx, stream).unwrap(),
            ptxsmith::kernels::fp8::Encoding {
                format: Format::E4M3,
                codec: Codec::Software,
            },
            8,
            x + 4,
            x,
            x,
        )
    }
    .unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("16-byte") && m.contains(&format!("{:#x}", x + 4))),
        "{e}"
    );
    // A stream this simulator never handed out.
    // SAFETY: refused before anything runs.
    let e = unsafe { Stream::from_raw(&ctx, RawStream(0xdead)) }.unwrap_err();
    assert!(matches!(e, Error::WrongContext { .. }), "{e}");
    assert!(e.to_string().contains("0xdead"), "{e}");
    // Foreign memory that is too small is a simulator finding, not UB.
    // SAFETY: deliberately broken contract; the simulator checks bounds.
    let e = unsafe {
        dot::dot_rows_raw(
            &Stream::from_raw(&ctx, stream).unwrap(),
            dot::Shape { rows: 100, n: 100 },
            x,
            x,
            x,
        )
    }
    .unwrap_err();
    assert!(matches!(e, Error::Sim(_)), "{e}");
}

#[test]
fn gpu_raw_pointer_entry_points_run_on_driver_allocations() {
    let Some(ctx) = cuda_for_tests() else { return };
    use oxicuda_memory::DeviceBuffer as Foreign;
    ctx.make_current().unwrap();
    let mut next = lcg(31);
    let (rows, n) = (1000, 257);
    let x: Vec<f32> = (0..rows * n).map(|_| next()).collect();
    let y: Vec<f32> = (0..n).map(|_| next()).collect();
    let fx = Foreign::from_host(&x).unwrap();
    let fy = Foreign::from_host(&y).unwrap();
    let fo = Foreign::<f32>::alloc(rows).unwrap();
    // SAFETY: plain driver allocations in the primary context (current on
    // this thread), sized as the contract says, alive until the end; the
    // legacy default stream is synchronised by `ctx.synchronize()`.
    unsafe {
        dot::dot_rows_raw(
            &Stream::from_raw(&ctx, RawStream::NULL).unwrap(),
            dot::Shape { rows, n },
            fx.as_device_ptr(),
            fy.as_device_ptr(),
            fo.as_device_ptr(),
        )
    }
    .unwrap();
    ctx.synchronize().unwrap();
    let mut got = vec![0f32; rows];
    ctx.make_current().unwrap();
    fo.copy_to_host(&mut got).unwrap();
    assert_eq!(bits(&got), bits(&dot::host::dot_rows(&x, &y, rows, n)));
}

// ---------------------------------------------------------------------------
// Bad input
// ---------------------------------------------------------------------------

#[test]
fn lengths_contexts_and_alignment_are_typed_errors() {
    let a = Context::sim(Sm::Sm80);
    let b = Context::sim(Sm::Sm80);
    let sa = a.default_stream();
    let x = sa.upload(&[1f32; 12]).unwrap();
    let y = sa.upload(&[1f32; 4]).unwrap();
    let mut out = a.alloc::<f32>(3).unwrap();
    // Length mismatch, naming the values.
    let e = dot::dot_rows_dev(&sa, dot::Shape { rows: 5, n: 4 }, &x, &y, &mut out).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("12") && m.contains("5 × 4")),
        "{e}"
    );
    let mut short = a.alloc::<f32>(2).unwrap();
    let e = dot::dot_rows_dev(&sa, dot::Shape { rows: 3, n: 4 }, &x, &y, &mut short).unwrap_err();
    assert!(e.to_string().contains("out has 2"), "{e}");
    // A buffer of another context.
    let foreign = b.upload(&[1f32; 4]).unwrap();
    let e =
        dot::dot_rows_dev(&sa, dot::Shape { rows: 3, n: 4 }, &x, &foreign, &mut out).unwrap_err();
    assert!(
        matches!(&e, Error::WrongContext { owner, used, .. } if *owner == b.id() && *used == a.id()),
        "{e}"
    );
    let e = sa.to_vec(&foreign).unwrap_err();
    assert!(matches!(e, Error::WrongContext { .. }), "{e}");
    let e = sa.wait_for(&b.default_stream()).unwrap_err();
    assert!(matches!(e, Error::WrongContext { .. }), "{e}");
    // Nothing was written on error.
    assert_eq!(a.traffic().launches, 0);
    // Host copies must match in length.
    let mut h = [0f32; 5];
    let e = sa.copy_to_host(&x.slice(..4).unwrap(), &mut h).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("4") && m.contains("5")),
        "{e}"
    );
    // Out-of-range sub-slices.
    assert!(x.slice(5..13).is_err());
    // Misaligned sub-slices for vectorised kernels.
    let xs = sa.upload(&[1f32; 16]).unwrap();
    let off = xs.slice(1..9).unwrap();
    let mut codes = a.alloc::<u8>(8).unwrap();
    let mut stats = a.alloc::<f32>(3).unwrap();
    let e = fp8l::quantize_dev(
        &sa,
        ptxsmith::kernels::fp8::Encoding {
            format: Format::E4M3,
            codec: Codec::Software,
        },
        &off,
        &mut codes,
        &mut stats,
    )
    .unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("16-byte")),
        "{e}"
    );
    let mut codes9 = a.alloc::<u8>(9).unwrap();
    let mut c = codes9.slice_mut(1..).unwrap();
    let e = fp8l::quantize_with_scale_dev(
        &sa,
        ptxsmith::kernels::fp8::Encoding {
            format: Format::E4M3,
            codec: Codec::Software,
        },
        1.0,
        &xs.slice(..8).unwrap(),
        &mut c,
    )
    .unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("4-byte")),
        "{e}"
    );
    let mut bad_stats = a.alloc::<f32>(2).unwrap();
    let e = fp8l::quantize_dev(
        &sa,
        ptxsmith::kernels::fp8::Encoding {
            format: Format::E4M3,
            codec: Codec::Software,
        },
        &xs.slice(..8).unwrap(),
        &mut codes,
        &mut bad_stats,
    )
    .unwrap_err();
    assert!(e.to_string().contains("stats"), "{e}");
    // A vec4 score tuning on an unaligned sub-slice.
    let d = sa.upload(&[1f32; 4 * 4]).unwrap();
    let xo = sa.upload(&[1f32; 9]).unwrap();
    let mut so = a.alloc::<f32>(8).unwrap();
    let t = ScoreTuning::default_for(Sm::Sm80).vectorized_for(4);
    assert!(t.vec4);
    let e = score_l::score_block_dev(
        &sa,
        ScoreShape {
            rows: 2,
            k: 4,
            p: 4,
        },
        Some(t),
        &xo.slice(1..9).unwrap(),
        &d,
        &mut so,
    )
    .unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("vec4")),
        "{e}"
    );
    // s outside 1..=K is a typed error before any planning (K = 0 used to
    // divide by zero in the route plan).
    let empty_d = a.alloc::<f32>(0).unwrap();
    let xr = sa.upload(&[1f32; 4]).unwrap();
    let e = score_l::route_top_s_dev(
        &sa,
        Route {
            shape: ScoreShape {
                rows: 1,
                k: 0,
                p: 4,
            },
            s: 1,
        },
        None,
        &xr,
        &empty_d,
    )
    .unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("empty problem") && m.contains("K=0")),
        "{e}"
    );
    let e = score_l::route_top_s_dev(
        &sa,
        Route {
            shape: ScoreShape {
                rows: 1,
                k: 4,
                p: 4,
            },
            s: 5,
        },
        None,
        &xr,
        &d,
    )
    .unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(a) if a.what == "s" && a.contains("s=5")),
        "{e}"
    );
    // SAFETY: refused before anything runs or is read.
    let e = unsafe {
        score_l::route_top_s_raw(
            &Stream::from_raw(&a, sa.raw()).unwrap(),
            Route {
                shape: ScoreShape {
                    rows: 1,
                    k: 0,
                    p: 4,
                },
                s: 1,
            },
            None,
            xr.device_ptr(),
            empty_d.device_ptr(),
            0,
        )
    }
    .unwrap_err();
    assert!(e.to_string().contains("K=0"), "{e}");
    // The same data, aligned, works.
    score_l::score_block_dev(
        &sa,
        ScoreShape {
            rows: 2,
            k: 4,
            p: 4,
        },
        Some(t),
        &xo.slice(..8).unwrap(),
        &d,
        &mut so,
    )
    .unwrap();
}

#[test]
fn streams_buffers_and_frees_on_the_simulator() {
    let ctx = Context::sim(Sm::Sm80);
    let live = |c: &Context| c.with_sim(|s| s.live_allocations()).unwrap();
    let s1 = ctx.new_stream().unwrap();
    let s2 = ctx.new_stream().unwrap();
    assert_ne!(s1.raw(), s2.raw());
    let x = s1.upload(&[2f32; 8]).unwrap();
    let y = s1.upload(&[3f32; 8]).unwrap();
    let mut out = ctx.alloc::<f32>(1).unwrap();
    dot::dot_rows_dev(&s1, dot::Shape { rows: 1, n: 8 }, &x, &y, &mut out).unwrap();
    s2.wait_for(&s1).unwrap();
    assert_eq!(s2.to_vec(&out).unwrap(), vec![48.0]);
    // Device copy and zero on a second stream.
    let mut z = ctx.alloc::<f32>(8).unwrap();
    s2.copy(&mut z, &x).unwrap();
    s2.zero(&mut z.slice_mut(2..5).unwrap()).unwrap();
    assert_eq!(z.to_vec().unwrap(), vec![2., 2., 0., 0., 0., 2., 2., 2.]);
    assert_eq!(ctx.traffic().bytes_copied_on_device, 32);
    // Per-stream counters see only their own stream's work.
    let (t1, t2) = (s1.traffic(), s2.traffic());
    assert_eq!((t1.uploads, t1.launches, t1.downloads), (2, 1, 0));
    assert_eq!((t2.uploads, t2.launches, t2.downloads), (0, 0, 1));
    assert_eq!(
        (t1.bytes_copied_on_device, t2.bytes_copied_on_device),
        (0, 32)
    );
    // Zeroed allocations read as zero; uninitialised ones are flagged when
    // a kernel reads them.
    let zeroed = ctx.alloc_zeroed::<u32>(5).unwrap();
    assert_eq!(zeroed.to_vec().unwrap(), vec![0; 5]);
    let uninit = ctx.alloc::<f32>(8).unwrap();
    let e =
        dot::dot_rows_dev(&s1, dot::Shape { rows: 1, n: 8 }, &uninit, &y, &mut out).unwrap_err();
    assert!(matches!(e, Error::Sim(_)), "{e}");
    // Dropping buffers frees them (the simulator has no queued work).
    let before = live(&ctx);
    drop((x, y, z, zeroed, uninit));
    assert_eq!(live(&ctx), before - 5);
    assert_eq!(ctx.deferred_frees(), 0);
    drop((s1, s2));
    // Empty buffers are valid.
    let empty = ctx.upload::<f32>(&[]).unwrap();
    assert!(empty.is_empty() && empty.to_vec().unwrap().is_empty());
    let t: Traffic = ctx.traffic();
    assert_eq!(t.allocations, 7, "x, y, out, z, zeroed, uninit, empty");
}

/// Two streams of a GPU's context (or the driver emulator's): work on one
/// is ordered after the other's only through `wait_for`. On the emulator,
/// which runs queued work only when something synchronises, the missing
/// wait deterministically reads the bytes from before the kernel; on a GPU
/// that read is a race, so only the ordered path is asserted there.
#[test]
fn gpu_streams_are_ordered_only_by_wait_for() {
    let Some(ctx) = cuda_for_tests() else { return };
    let (s1, s2) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
    let x = s1.upload(&[2f32; 64]).unwrap();
    let y = s1.upload(&[3f32; 64]).unwrap();
    for ordered in [false, true] {
        let mut out = ctx.alloc_zeroed::<f32>(1).unwrap();
        dot::dot_rows_dev(&s1, dot::Shape { rows: 1, n: 64 }, &x, &y, &mut out).unwrap();
        if ordered {
            s2.wait_for(&s1).unwrap();
            assert_eq!(s2.to_vec(&out).unwrap(), vec![384.0]);
        } else if on_emulator(&ctx) {
            assert_eq!(s2.to_vec(&out).unwrap(), vec![0.0], "read before s1 ran");
        }
        s1.synchronize().unwrap();
        assert_eq!(s1.to_vec(&out).unwrap(), vec![384.0]);
    }
    // Device copies and fills are queued on their stream too.
    let mut z = ctx.alloc::<f32>(64).unwrap();
    s2.wait_for(&s1).unwrap();
    s2.copy(&mut z, &x).unwrap();
    s2.zero(&mut z.slice_mut(2..5).unwrap()).unwrap();
    let got = s2.to_vec(&z).unwrap();
    assert_eq!(&got[..6], &[2., 2., 0., 0., 0., 2.]);
    assert_eq!(s2.traffic().bytes_copied_on_device, 256);
    ctx.synchronize().unwrap();
}

#[test]
fn the_slice_api_moves_the_same_bytes_as_before() {
    // Slice API on Sim: x and D up once, rows·s·8 down.
    let ctx = Context::sim(Sm::Sm80);
    let st = ctx.default_stream();
    let (rows, k, p, s) = (20, 300, 8, 3);
    let mut next = lcg(9);
    let x: Vec<f32> = (0..rows * p).map(|_| next()).collect();
    let d: Vec<f32> = (0..k * p).map(|_| next()).collect();
    let got = score_l::route_top_s_on(
        &st,
        Route {
            shape: ScoreShape { rows, k, p },
            s,
        },
        None,
        &x,
        &d,
    )
    .unwrap();
    let t = ctx.traffic();
    assert_eq!(t.bytes_uploaded, ((rows + k) * p * 4) as u64);
    assert_eq!(t.bytes_downloaded, (rows * s * 8) as u64);
    let want = score::host::route_top_s(&x, &d, rows, k, p, s).unwrap();
    assert_eq!(got.atoms, want.atoms);
    // Every buffer of the call is gone.
    assert_eq!(ctx.with_sim(|s| s.live_allocations()), Some(0));
    let view = AsDevice::<f32>::as_device(&st.upload(&x).unwrap()).len();
    assert_eq!(view, rows * p);
}

#[test]
fn gpu_raw_block_ell_and_logcumsumexp_run_on_driver_allocations() {
    use ptxsmith::kernels::block_ell::{self, DeviceTopology, Dims, launch as bel};
    use ptxsmith::kernels::logcumsumexp::{self as lcse, host as lh};
    let Some(ctx) = cuda_for_tests() else { return };
    use oxicuda_memory::DeviceBuffer as Foreign;
    ctx.make_current().unwrap();
    let mut next = lcg(33);
    // Block-ELL forward and grad-values (two N-chunks) on driver memory.
    let dims = Dims::new(6, 5, 3, 16).unwrap();
    // Six block rows of three slots: empty slots anywhere, one empty row.
    let col: Vec<i32> = vec![0, 2, -1, 1, -1, 4, -1, -1, -1, 3, 0, 2, 4, 1, -1, 2, 3, 0];
    let n = 300;
    let x: Vec<f32> = (0..n * dims.in_features()).map(|_| next()).collect();
    let gy: Vec<f32> = (0..n * dims.out_features()).map(|_| next()).collect();
    let values: Vec<f32> = (0..dims.values_len()).map(|_| next()).collect();
    let topo = DeviceTopology::upload(&ctx.default_stream(), &dims, &col).unwrap();
    ctx.make_current().unwrap();
    let (fx, fgy, fv) = (
        Foreign::from_host(&x).unwrap(),
        Foreign::from_host(&gy).unwrap(),
        Foreign::from_host(&values).unwrap(),
    );
    let fy = Foreign::<f32>::alloc(n * dims.out_features()).unwrap();
    let fgv = Foreign::<f32>::alloc(dims.values_len()).unwrap();
    // SAFETY: plain driver allocations in the primary context, sized as
    // the contracts say, alive until the end; the legacy default stream is
    // synchronised by `ctx.synchronize()`.
    unsafe {
        let s = RawStream::NULL;
        let (px, pgy, pv) = (fx.as_device_ptr(), fgy.as_device_ptr(), fv.as_device_ptr());
        bel::forward_raw(
            &Stream::from_raw(&ctx, s).unwrap(),
            &topo,
            n,
            px,
            pv,
            None,
            fy.as_device_ptr(),
        )
        .unwrap();
        bel::grad_values_raw(
            &Stream::from_raw(&ctx, s).unwrap(),
            &topo,
            n,
            px,
            pgy,
            fgv.as_device_ptr(),
        )
        .unwrap();
    }
    ctx.synchronize().unwrap();
    ctx.make_current().unwrap();
    let mut y = vec![0f32; n * dims.out_features()];
    fy.copy_to_host(&mut y).unwrap();
    let want = block_ell::host::forward(&dims, n, &x, &values, &col, None).unwrap();
    assert_eq!(bits(&y), bits(&want), "block_ell forward_raw");
    let mut gv = vec![0f32; dims.values_len()];
    fgv.copy_to_host(&mut gv).unwrap();
    let want = block_ell::host::grad_values(&dims, n, &x, &gy, &col).unwrap();
    assert_eq!(bits(&gv), bits(&want), "block_ell grad_values_raw");
    // logcumsumexp in place on driver memory.
    let (rows, t) = (4, 1000);
    let shape = lh::Shape::new(rows, t).unwrap();
    let xs: Vec<f32> = (0..rows * t).map(|_| next() * 10.0).collect();
    let fxs = Foreign::from_host(&xs).unwrap();
    // SAFETY: as above; the forward scan may run in place.
    unsafe {
        let p = fxs.as_device_ptr();
        lcse::forward_raw(
            &Stream::from_raw(&ctx, RawStream::NULL).unwrap(),
            shape,
            p,
            p,
        )
        .unwrap();
    }
    ctx.synchronize().unwrap();
    ctx.make_current().unwrap();
    let mut ys = vec![0f32; rows * t];
    fxs.copy_to_host(&mut ys).unwrap();
    assert_eq!(
        bits(&ys),
        bits(&lh::forward(shape, &xs).unwrap()),
        "lcse forward_raw"
    );
}

#[test]
fn gpu_out_of_memory_is_matched_by_its_driver_code() {
    let Some(ctx) = cuda_for_tests() else { return };
    let total = ctx.info().expect("a GPU").total_memory_bytes;
    let too_much = usize::try_from(total + (1 << 30)).unwrap();
    let e = ctx.alloc::<u8>(too_much).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Driver {
                code: ptxsmith::DriverCode::OUT_OF_MEMORY,
                call: "cuMemAlloc",
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(e.driver_code(), Some(ptxsmith::DriverCode::OUT_OF_MEMORY));
    // The context is still usable.
    assert_eq!(ctx.upload(&[1u32, 2]).unwrap().to_vec().unwrap(), [1, 2]);
}
