//! Score kernels: PTX generation time, and on a GPU (skipped without one)
//! the score-block kernel and the routed top-s, reported as TFLOP/s
//! (`2·rows·K·P` per call) next to the card's separate-rounding peak.
//!
//! The peak of separate `FMUL` + `FADD` is half the FP32 FMA peak:
//! `SMs × fp32 lanes per SM × 2 × clock / 2`. The driver facts ptxsmith
//! reads do not include the SM clock, so it comes from
//! `PTXSMITH_SM_CLOCK_MHZ`, else from a table of boost clocks by card name;
//! for an unknown card without the variable the peak is not printed. The
//! score block's time is also printed next to the roofline model's for the
//! card (`docs/roofline.tsv`), and so is the resident route's (whose
//! timing also holds the upload of `x` and the download of the lists,
//! which the model leaves out).

#[path = "common/model.rs"]
mod roofline;
#[path = "common/timing.rs"]
mod timing;

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ptxsmith::Sm;
use ptxsmith::dsl::params::{ArgValue, KernelParams};
use ptxsmith::kernels::score::ptx::{self, ScoreBlockArgs, ScoreTuning};
use ptxsmith::kernels::score::{self, route_top_s_dev, route_top_s_on};
use ptxsmith::runtime::{Context, DeviceBuffer, LaunchConfig};
use ptxsmith::testing::{REQUIRED_GPU_MISSING, gpu_required};

fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 40) as f32) / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

fn bench_generate(c: &mut Criterion) {
    let mut group = c.benchmark_group("score_ptx_generate");
    for sm in [Sm::Sm80, Sm::Sm90] {
        group.bench_with_input(BenchmarkId::new("score_block", sm.name()), &sm, |b, &sm| {
            b.iter(|| ptx::generate_score_block(sm, &ScoreTuning::default_for(sm)).unwrap())
        });
        group.bench_with_input(BenchmarkId::new("route", sm.name()), &sm, |b, &sm| {
            b.iter(|| ptx::generate_route(sm, &ScoreTuning::route_default_for(sm)).unwrap())
        });
    }
    group.finish();
}

/// Boost clocks (MHz) of common data-centre cards, by the words of the
/// driver's device name (every word must be a whole word of the name, the
/// first matching entry wins, so the specific forms come first: an
/// `NVIDIA H100 PCIe` is not the SXM part, an `NVIDIA L40S` not the L40).
/// The driver facts ptxsmith reads do not include the SM clock. Sources:
/// NVIDIA's datasheets via TechPowerUp's boost clocks (H100 PCIe 1 755, H100
/// SXM 1 980, H100/H200 NVL 1 785, L40S 2 520, L40 2 490, L4 2 040), the
/// A100 and V100 whitepapers (1 410, 1 530); `src/report/hardware.rs` holds
/// the modeled cards' rows with their sources.
const BOOST_MHZ: [(&[&str], f64); 10] = [
    (&["H100", "PCIe"], 1755.0),
    (&["H100", "NVL"], 1785.0),
    (&["H200", "NVL"], 1785.0),
    (&["H200"], 1980.0),
    (&["H100"], 1980.0),
    (&["A100"], 1410.0),
    (&["L40S"], 2520.0),
    (&["L40"], 2490.0),
    (&["L4"], 2040.0),
    (&["V100"], 1530.0),
];

/// The boost clock of [`BOOST_MHZ`] for the driver's device `name`.
fn boost_mhz(name: &str) -> Option<f64> {
    let words: Vec<&str> = name.split([' ', '-']).collect();
    BOOST_MHZ
        .iter()
        .find(|(ws, _)| {
            ws.iter()
                .all(|w| words.iter().any(|t| t.eq_ignore_ascii_case(w)))
        })
        .map(|(_, m)| *m)
}

/// Separate-rounding peak in TFLOP/s (`SMs × lanes × 2 × clock / 2`), with
/// the clock from `PTXSMITH_SM_CLOCK_MHZ` or [`BOOST_MHZ`].
fn peak_tflops(sms: u32, sm: Sm, name: &str) -> Option<(f64, f64)> {
    let mhz = std::env::var("PTXSMITH_SM_CLOCK_MHZ")
        .ok()
        .and_then(|v| v.parse().ok())
        .or_else(|| boost_mhz(name))?;
    let lanes = f64::from(sm.info().fp32_lanes_per_sm);
    Some((f64::from(sms) * lanes * 2.0 * mhz * 1e6 / 2.0 / 1e12, mhz))
}

/// Launches are asynchronous: every timed region ends by synchronising the
/// stream, so it covers the kernels' execution, not just their queueing.
fn bench_gpu(c: &mut Criterion) {
    roofline::check_rows(&[
        ("score", "score block rows 4096, K 16384, P 256"),
        ("score", "routed top-4, rows 256, K 32768, P 64"),
    ]);
    // The clock table matches whole words, specific forms first.
    for (device, mhz) in [
        ("NVIDIA H100 PCIe", 1755.0),
        ("NVIDIA H100 80GB HBM3", 1980.0),
        ("NVIDIA H100 NVL", 1785.0),
        ("NVIDIA H200", 1980.0),
        ("NVIDIA L40S", 2520.0),
        ("NVIDIA L40", 2490.0),
        ("NVIDIA L4", 2040.0),
    ] {
        assert_eq!(boost_mhz(device), Some(mhz), "{device}");
    }
    if let Some(reason) = ptxsmith::runtime::cuda_unavailable_reason() {
        // Under PTXSMITH_REQUIRE_GPU a missing device fails the bench.
        assert!(
            !gpu_required(),
            "{REQUIRED_GPU_MISSING}: {reason} (score_kernels GPU benches)"
        );
        println!(
            "{} ({reason}): GPU benches skipped",
            ptxsmith::testing::SKIP_NO_DEVICE
        );
        return;
    }
    let ctx = Context::cuda(0).expect("device opens");
    let st = ctx.default_stream();
    let name = ctx
        .info()
        .expect("a CUDA context has device info")
        .name
        .clone();
    let sm = ctx.sm();
    let sms = ctx.multiprocessor_count();
    let peak = peak_tflops(sms, sm, &name);

    // Score block, kernel only (buffers resident).
    let (rows, k, p) = (4096usize, 16384usize, 256usize);
    let x = values(rows * p, 1);
    let d = values(k * p, 2);
    let flops = 2.0 * (rows * k * p) as f64;
    let t = ScoreTuning::default_for(sm).vectorized_for(p);
    let bx = st.upload(&x).unwrap();
    let bd = st.upload(&d).unwrap();
    let mut bo = ctx.alloc::<f32>(rows * k).unwrap();
    let (module, cfg, argv) = score_block_launch(&st, t, (rows, k, p), (&bx, &bd, &mut bo));
    let mut group = c.benchmark_group("score_gpu");
    group.throughput(Throughput::Elements(flops as u64));
    group.bench_function(format!("score_block_rows{rows}_K{k}_P{p}"), |b| {
        b.iter_custom(|iters| {
            timing::iter_queued(&st, iters, || st.launch(&module, cfg, &argv).unwrap())
        })
    });
    let timed = timing::time(&st, || st.launch(&module, cfg, &argv).unwrap());
    let per = timed.per_launch_s;
    let tf = flops / per / 1e12;
    match peak {
        Some((pk, mhz)) => println!(
            "score_block on {name} ({sm}): {tf:.2} TFLOP/s of a {pk:.1} TFLOP/s separate-rounding \
             peak at {mhz} MHz ({:.0} %)",
            100.0 * tf / pk
        ),
        None => println!(
            "score_block on {name} ({sm}): {tf:.2} TFLOP/s (set PTXSMITH_SM_CLOCK_MHZ for the peak)"
        ),
    }
    roofline::compare(
        "score_block rows 4096 K 16384 P 256",
        (timed.per_launch_s, timed.single_s),
        &name,
        sms,
        "score",
        "score block rows 4096, K 16384, P 256",
        "*",
    );
    drop(argv);
    let reference = st.to_vec(&bo).unwrap();
    tune_score_block(
        &st,
        &name,
        sm,
        (rows, k, p),
        (&bx, &bd, &mut bo),
        &reference,
    );
    drop((bx, bd, bo));
    ctx.synchronize().unwrap();

    // Routed top-s, end to end (upload, route, merge, download).
    let (rows, k, p, s) = (256usize, 32768usize, 64usize, 4usize);
    let x = values(rows * p, 3);
    let d = values(k * p, 4);
    let flops = 2.0 * (rows * k * p) as f64;
    let route = score::Route {
        shape: score::ScoreShape { rows, k, p },
        s,
    };
    route_top_s_on(&st, route, None, &x, &d).unwrap();
    group.throughput(Throughput::Elements(flops as u64));
    group.measurement_time(Duration::from_secs(5));
    group.bench_function(format!("route_rows{rows}_K{k}_P{p}_s{s}"), |b| {
        b.iter(|| route_top_s_on(&st, route, None, &x, &d).unwrap())
    });
    // The same route with the dictionary resident: upload `x`, route,
    // download the shortlists.
    let dd = st.upload(&d).unwrap();
    group.bench_function(format!("route_resident_D_rows{rows}_K{k}_P{p}_s{s}"), |b| {
        b.iter(|| {
            let dx = st.upload(&x).unwrap();
            route_top_s_dev(&st, route, None, &dx, &dd)
                .unwrap()
                .download(&st)
                .unwrap()
        })
    });
    group.finish();
    // Upload, route and download: the download waits for the route, so
    // each call is synchronous and both figures are per call.
    let secs = timing::time(&st, || {
        let dx = st.upload(&x).unwrap();
        route_top_s_dev(&st, route, None, &dx, &dd)
            .unwrap()
            .download(&st)
            .unwrap();
    });
    roofline::compare(
        "route resident D rows 256 K 32768 P 64 s 4 (upload and download included)",
        (secs.per_launch_s, secs.single_s),
        &name,
        sms,
        "score",
        "routed top-4, rows 256, K 32768, P 64",
        "*",
    );
}

criterion_group!(benches, bench_generate, bench_gpu);
criterion_main!(benches);

/// Time the score block's tuning candidates on the live device at the
/// bench's shape and print each one and the winner (`score tuning ...`
/// lines; `docs/perf.md` records them). The contract makes the bits
/// independent of the tuning: every candidate's output is compared with
/// the default's, bit for bit, and a difference panics.
fn tune_score_block(
    st: &ptxsmith::runtime::Stream,
    name: &str,
    sm: Sm,
    (rows, k, p): (usize, usize, usize),
    (bx, bd, bo): (
        &DeviceBuffer<f32>,
        &DeviceBuffer<f32>,
        &mut DeviceBuffer<f32>,
    ),
    reference: &[f32],
) {
    let flops = 2.0 * (rows * k * p) as f64;
    // The default first, then tiles and micro-tiles around 128×128 that
    // the occupancy model cannot rank, as (bm, bn, bk, tm, tn).
    let shapes = [
        (128, 128, 16, 8, 8),
        (128, 128, 8, 8, 8),
        (128, 128, 32, 8, 8),
        (128, 64, 16, 8, 8),
        (64, 128, 16, 8, 8),
        (64, 64, 16, 8, 8),
        (64, 64, 16, 4, 4),
        (128, 128, 16, 8, 4),
        (128, 128, 16, 4, 8),
    ];
    let default = ScoreTuning::default_for(sm);
    let others = shapes.into_iter().map(|(bm, bn, bk, tm, tn)| ScoreTuning {
        bm,
        bn,
        bk,
        tm,
        tn,
        threads: (bm / tm) * (bn / tn),
        vec4: false,
    });
    let candidates = std::iter::once(default).chain(others.filter(|t| *t != default));
    let mut best: Option<(f64, ScoreTuning)> = None;
    for t in candidates {
        let t = t.vectorized_for(p);
        let ScoreTuning {
            bm, bn, bk, tm, tn, ..
        } = t;
        if let Err(e) = t.check_score() {
            println!("score tuning {bm}x{bn} bk {bk} micro {tm}x{tn}: not valid ({e})");
            continue;
        }
        let (module, cfg, argv) = score_block_launch(st, t, (rows, k, p), (bx, bd, &mut *bo));
        let per = timing::time(st, || st.launch(&module, cfg, &argv).unwrap()).per_launch_s;
        let out = st.to_vec(&*bo);
        let same = out.as_ref().is_ok_and(|o| {
            o.iter()
                .zip(reference)
                .all(|(a, b)| a.to_bits() == b.to_bits())
        });
        assert!(
            same,
            "score tuning {t:?} changed the output bits on {name} ({out:?})",
            out = out.err()
        );
        println!(
            "score tuning {bm}x{bn} bk {bk} micro {tm}x{tn} ({} threads, vec4 {}) on {name} ({sm}): \
             {:.3} ms, {:.2} TFLOP/s, bits equal to the default's",
            t.threads,
            t.vec4,
            per * 1e3,
            flops / per / 1e12
        );
        if best.is_none_or(|(b, _)| per < b) {
            best = Some((per, t));
        }
    }
    if let Some((per, t)) = best {
        println!(
            "score tuning winner on {name} ({sm}): {}x{} bk {} micro {}x{} ({} threads): {:.3} ms",
            t.bm,
            t.bn,
            t.bk,
            t.tm,
            t.tn,
            t.threads,
            per * 1e3
        );
    }
}

/// The score block of tuning `t` over the bench's buffers: its module,
/// launch shape and arguments, JIT-loaded and launched once (outside any
/// timing).
fn score_block_launch(
    st: &ptxsmith::runtime::Stream,
    t: ScoreTuning,
    (rows, k, p): (usize, usize, usize),
    (bx, bd, bo): (
        &DeviceBuffer<f32>,
        &DeviceBuffer<f32>,
        &mut DeviceBuffer<f32>,
    ),
) -> (ptxsmith::dsl::PtxModule, LaunchConfig, Vec<ArgValue>) {
    let module = ptx::generate_score_block(st.context().sm(), &t).unwrap();
    let grid = (rows as u32).div_ceil(t.bm) * (k as u32).div_ceil(t.bn);
    let cfg = LaunchConfig::linear(grid, t.threads);
    let args = ScoreBlockArgs {
        x: st.arg("x", bx).unwrap(),
        d: st.arg("D", bd).unwrap(),
        out: st.arg_mut("out", bo).unwrap(),
        rows: rows as u32,
        k: k as u32,
        p: p as u32,
    };
    let argv = args.args();
    st.context().load(&module).unwrap();
    st.launch(&module, cfg, &argv).unwrap();
    st.synchronize().unwrap();
    (module, cfg, argv)
}
