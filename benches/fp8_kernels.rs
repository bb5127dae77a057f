//! FP8 kernels: PTX generation time per SM, and (with a CUDA device) the
//! device throughput of each kernel in GB/s next to the card's peak DRAM
//! bandwidth.
//!
//! At 256 Mi elements each of the device's default codec is also printed
//! next to the roofline model's time for the card (`docs/roofline.tsv`).
//!
//! With a device it then times the tuning candidates
//! ([`Fp8Tuning::candidates`]) at 256 Mi elements, checks that their bits
//! equal the default's, and prints each and the winners (`fp8 tuning`
//! lines).
//!
//! `cargo bench --bench fp8_kernels` (under `cargo test` the bench binary
//! runs a short smoke pass instead).

#[path = "common/model.rs"]
mod roofline;
#[path = "common/timing.rs"]
mod timing;

use std::hint::black_box;
use std::time::{Duration, Instant};

use ptxsmith::Sm;
use ptxsmith::dsl::params::KernelParams;
use ptxsmith::kernels::fp8::Format;
use ptxsmith::kernels::fp8::ptx::{
    self, AbsmaxFinalizeArgs, AbsmaxPartialsArgs, BLOCK, Codec, DequantizeArgs,
    DequantizeStatsArgs, Fp8Tuning, Kind, QuantizeArgs, QuantizeScaledArgs,
};
use ptxsmith::runtime::{Context, LaunchConfig, Stream};
use ptxsmith::testing::cuda_for_tests;

/// Median of `reps` timings of `f` (after one warm-up call).
fn median_time(reps: usize, mut f: impl FnMut()) -> Duration {
    f();
    let mut t: Vec<Duration> = (0..reps)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed()
        })
        .collect();
    t.sort();
    t[t.len() / 2]
}

fn bench_ptx_generation(reps: usize) {
    let count = ptx::variants(Sm::Sm80).unwrap().len();
    println!("== PTX generation (all {count} FP8 modules of an SM, median of {reps})");
    for sm in Sm::ALL {
        let d = median_time(reps, || {
            black_box(ptx::variants(black_box(sm)).unwrap());
        });
        let modules = ptx::variants(sm).unwrap();
        let bytes: usize = modules.iter().map(|m| m.ptx.len()).sum();
        let count = modules.len();
        println!(
            "{sm:>7}: {:>8.1} µs for {count} modules ({:.1} µs/module, {bytes} bytes of PTX, codec {:?})",
            d.as_secs_f64() * 1e6,
            d.as_secs_f64() * 1e6 / count as f64,
            Codec::for_sm(sm)
        );
    }
}

/// Kernel throughput on the device, timed by `benches/common/timing.rs`
/// (warm-up, then ten queued calls between two CUDA events; one call plus
/// a synchronisation beside it).
///
/// Without a device it prints `SKIP: no CUDA device` and returns; under
/// `PTXSMITH_REQUIRE_GPU=1` [`cuda_for_tests`] panics instead, failing the
/// bench.
fn bench_device(sizes: &[usize]) {
    let Some(ctx) = cuda_for_tests() else {
        return;
    };
    let st = ctx.default_stream();
    let info = ctx.info().expect("a CUDA context has device info").clone();
    let peak = info.peak_bandwidth_gbps();
    let sm = ctx.sm();
    let sms = ctx.multiprocessor_count();
    println!(
        "== device: {} ({sm}, {sms} SMs), peak DRAM bandwidth {}",
        info.name,
        peak.map_or("unknown".to_string(), |p| format!("{p:.0} GB/s"))
    );
    let mut codecs = vec![Codec::for_sm(sm)];
    if codecs[0] == Codec::Hardware {
        codecs.push(Codec::Software);
    }
    let f = Format::E4M3;
    let cfg = |blocks: u32| LaunchConfig::linear(blocks, BLOCK);
    // The model's problems are at 256 Mi elements, the default codec.
    let modeled = |n: usize, codec: Codec, what: &str, problem: &str, d: timing::Timed| {
        if n == 1 << 28 && codec == Codec::for_sm(sm) {
            roofline::compare(
                what,
                (d.per_launch_s, d.single_s),
                &info.name,
                sms,
                "fp8",
                problem,
                "*",
            );
        }
    };
    for &n in sizes {
        let xs: Vec<f32> = (0..n)
            .map(|i| ((i as f32) * 0.618_034).sin() * 300.0)
            .collect();
        let codes_host = vec![0x3Cu8; n];
        let x = st.upload(&xs).unwrap();
        let mut c = st.upload(&codes_host).unwrap();
        let mut y = ctx.alloc::<f32>(n).unwrap();
        let blocks = ptx::grid_blocks(n as u64, sms);
        let mut partials = ctx.alloc::<f32>(blocks as usize).unwrap();
        let mut stats = ctx.alloc::<f32>(ptx::STATS_LEN).unwrap();
        let n64 = n as u64;
        let report = |what: &str, bytes: f64, d: timing::Timed| {
            let gbps = bytes / d.per_launch_s / 1e9;
            let share = peak.map_or(String::new(), |p| {
                format!(" ({:.0}% of peak)", 100.0 * gbps / p)
            });
            println!(
                "n = {n:>10}  {what:<34} {:>9.1} µs  {gbps:>7.1} GB/s{share}  (one launch + sync {:.1} µs)",
                d.per_launch_s * 1e6,
                d.single_s * 1e6
            );
        };

        let m1 = ptx::generate_absmax_partials(sm).unwrap();
        let m2 = ptx::generate_absmax_finalize(sm, f).unwrap();
        let a1 = AbsmaxPartialsArgs {
            x: st.arg("x", &x).unwrap(),
            n: n64,
            partials: st.arg_mut("partials", &mut partials).unwrap(),
        }
        .args();
        let a2 = AbsmaxFinalizeArgs {
            partials: st.arg("partials", &partials).unwrap(),
            count: blocks,
            stats: st.arg_mut("stats", &mut stats).unwrap(),
        }
        .args();
        let d = timing::time(&st, || {
            st.launch(&m1, cfg(blocks), &a1).unwrap();
            st.launch(&m2, cfg(1), &a2).unwrap();
        });
        report("absmax (2 passes, reads 4 B/elem)", 4.0 * n as f64, d);

        for &codec in &codecs {
            let mq = ptx::generate_quantize(sm, f, codec).unwrap();
            let aq = QuantizeArgs {
                x: st.arg("x", &x).unwrap(),
                n: n64,
                partials: st.arg("partials", &partials).unwrap(),
                count: blocks,
                stats: st.arg_mut("stats", &mut stats).unwrap(),
                codes: st.arg_mut("codes", &mut c).unwrap(),
            }
            .args();
            // Current scaling is two launches: the partials, then the
            // quantize kernel whose blocks reduce them.
            let d = timing::time(&st, || {
                st.launch(&m1, cfg(blocks), &a1).unwrap();
                st.launch(&mq, cfg(blocks), &aq).unwrap();
            });
            report(
                &format!("quantize+absmax {codec:?} (9 B/elem)"),
                9.0 * n as f64,
                d,
            );
            modeled(
                n,
                codec,
                "fp8 quantize+absmax",
                "quantize E4M3 (current scaling), 256 Mi elements",
                d,
            );

            let ms = ptx::generate_quantize_scaled(sm, f, codec).unwrap();
            let as_ = QuantizeScaledArgs {
                x: st.arg("x", &x).unwrap(),
                n: n64,
                scale: 0.5,
                codes: st.arg_mut("codes", &mut c).unwrap(),
            }
            .args();
            let d = timing::time(&st, || {
                st.launch(&ms, cfg(blocks), &as_).unwrap();
            });
            report(
                &format!("quantize_with_scale {codec:?} (5 B/elem)"),
                5.0 * n as f64,
                d,
            );
            modeled(
                n,
                codec,
                "fp8 quantize_with_scale",
                "quantize_with_scale E4M3, 256 Mi elements",
                d,
            );

            let md = ptx::generate_dequantize(sm, f, codec).unwrap();
            let ad = DequantizeArgs {
                codes: st.arg("codes", &c).unwrap(),
                n: n64,
                scale_inv: 2.0,
                y: st.arg_mut("y", &mut y).unwrap(),
            }
            .args();
            let d = timing::time(&st, || {
                st.launch(&md, cfg(blocks), &ad).unwrap();
            });
            report(
                &format!("dequantize {codec:?} (5 B/elem)"),
                5.0 * n as f64,
                d,
            );
            modeled(
                n,
                codec,
                "fp8 dequantize",
                "dequantize E4M3, 256 Mi elements",
                d,
            );

            let mds = ptx::generate_dequantize_stats(sm, f, codec).unwrap();
            let ads = DequantizeStatsArgs {
                codes: st.arg("codes", &c).unwrap(),
                n: n64,
                stats: st.arg("stats", &stats).unwrap(),
                y: st.arg_mut("y", &mut y).unwrap(),
            }
            .args();
            let d = timing::time(&st, || {
                st.launch(&mds, cfg(blocks), &ads).unwrap();
            });
            report(
                &format!("dequantize_stats {codec:?} (5 B/elem)"),
                5.0 * n as f64,
                d,
            );
            modeled(
                n,
                codec,
                "fp8 dequantize_stats",
                "dequantize_stats E4M3, 256 Mi elements",
                d,
            );
        }
        // The buffers are dropped here; free their memory before the next
        // size allocates.
        drop((x, c, y, partials, stats));
        ctx.synchronize().unwrap();
    }
}

/// Time the FP8 tuning candidates ([`Fp8Tuning::candidates`]) on the live
/// device at `n` elements: current-scaling quantize (the partials, then
/// the quantize kernel) and dequantize, each candidate's codes, stats and
/// output compared bit for bit with the default's (a difference panics:
/// the bits never depend on the tuning), then the winner of each
/// (`fp8 tuning ...` lines; `docs/perf.md` records them and the winners
/// become `Fp8Tuning::default_for`). Skipped without a device.
fn tune_device(n: usize) {
    let Some(ctx) = cuda_for_tests() else {
        return;
    };
    let st = ctx.default_stream();
    let name = ctx.info().map_or("?".into(), |i| i.name.clone());
    let (sm, sms) = (ctx.sm(), ctx.multiprocessor_count());
    let xs: Vec<f32> = (0..n)
        .map(|i| ((i as f32) * 0.618_034).sin() * 300.0)
        .collect();
    let x = st.upload(&xs).unwrap();
    drop(xs);
    let mut best_q: Option<(f64, Fp8Tuning)> = None;
    let mut best_d: Option<(f64, Fp8Tuning)> = None;
    let mut reference: Option<(Vec<u8>, Vec<f32>, Vec<u32>)> = None;
    for t in Fp8Tuning::candidates(sm) {
        let (q, d, out) = time_tuning(&ctx, &st, &x, n, &t);
        let (codes, stats, y) = out;
        let ybits: Vec<u32> = y.iter().map(|v| v.to_bits()).collect();
        match &reference {
            None => reference = Some((codes, stats, ybits)),
            Some((c0, s0, y0)) => {
                let same_stats = stats
                    .iter()
                    .zip(s0)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(
                    &codes == c0 && same_stats && &ybits == y0,
                    "fp8 tuning {} changed the bits on {name}",
                    t.key()
                );
            }
        }
        let gbps = |bytes: f64, s: f64| bytes / s / 1e9;
        println!(
            "fp8 tuning {} ({} threads, {} CTAs/SM, unroll {}) on {name} ({sm}, {sms} SMs): \
             quantize {:.1} µs ({:.0} GB/s), dequantize {:.1} µs ({:.0} GB/s), bits equal to the default's",
            t.key(),
            t.threads,
            t.ctas_per_sm,
            t.unroll,
            q * 1e6,
            gbps(9.0 * n as f64, q),
            d * 1e6,
            gbps(5.0 * n as f64, d)
        );
        if best_q.is_none_or(|(b, _)| q < b) {
            best_q = Some((q, t));
        }
        if best_d.is_none_or(|(b, _)| d < b) {
            best_d = Some((d, t));
        }
    }
    for (what, best) in [("quantize", best_q), ("dequantize", best_d)] {
        if let Some((s, t)) = best {
            println!(
                "fp8 tuning winner ({what}) on {name} ({sm}): {} ({:.1} µs; default {})",
                t.key(),
                s * 1e6,
                Fp8Tuning::default_for(sm).key()
            );
        }
    }
}

/// What a tuning produced: codes, stats, dequantized values.
type Outputs = (Vec<u8>, Vec<f32>, Vec<f32>);

/// Queued per-launch times of current-scaling quantize and dequantize
/// under `t`, and the outputs.
fn time_tuning(
    ctx: &Context,
    st: &Stream,
    x: &ptxsmith::runtime::DeviceBuffer<f32>,
    n: usize,
    t: &Fp8Tuning,
) -> (f64, f64, Outputs) {
    let (sm, f) = (ctx.sm(), Format::E4M3);
    let codec = Codec::for_sm(sm);
    let m = |kind| ptx::generate_tuned(sm, kind, f, codec, t).unwrap();
    let (m1, mq, md) = (
        m(Kind::AbsmaxPartials),
        m(Kind::Quantize),
        m(Kind::Dequantize),
    );
    let n64 = n as u64;
    let blocks = t.grid_blocks(n64, ctx.multiprocessor_count());
    let cfg = LaunchConfig::linear(blocks, t.threads);
    let mut partials = ctx.alloc::<f32>(blocks as usize).unwrap();
    let mut stats = ctx.alloc::<f32>(ptx::STATS_LEN).unwrap();
    let mut codes = ctx.alloc::<u8>(n).unwrap();
    let mut y = ctx.alloc::<f32>(n).unwrap();
    let a1 = AbsmaxPartialsArgs {
        x: st.arg("x", x).unwrap(),
        n: n64,
        partials: st.arg_mut("partials", &mut partials).unwrap(),
    }
    .args();
    let aq = QuantizeArgs {
        x: st.arg("x", x).unwrap(),
        n: n64,
        partials: st.arg("partials", &partials).unwrap(),
        count: blocks,
        stats: st.arg_mut("stats", &mut stats).unwrap(),
        codes: st.arg_mut("codes", &mut codes).unwrap(),
    }
    .args();
    let q = timing::time(st, || {
        st.launch(&m1, cfg, &a1).unwrap();
        st.launch(&mq, cfg, &aq).unwrap();
    })
    .per_launch_s;
    let ad = DequantizeArgs {
        codes: st.arg("codes", &codes).unwrap(),
        n: n64,
        scale_inv: 0.5,
        y: st.arg_mut("y", &mut y).unwrap(),
    }
    .args();
    let d = timing::time(st, || st.launch(&md, cfg, &ad).unwrap()).per_launch_s;
    let out = (
        st.to_vec(&codes).unwrap(),
        st.to_vec(&stats).unwrap(),
        st.to_vec(&y).unwrap(),
    );
    (q, d, out)
}

fn main() {
    roofline::check_rows(&[
        ("fp8", "quantize E4M3 (current scaling), 256 Mi elements"),
        ("fp8", "quantize_with_scale E4M3, 256 Mi elements"),
        ("fp8", "dequantize E4M3, 256 Mi elements"),
        ("fp8", "dequantize_stats E4M3, 256 Mi elements"),
    ]);
    // `cargo bench` passes `--bench`; `cargo test` runs this binary without
    // it, where a smoke pass is enough.
    let full = std::env::args().any(|a| a == "--bench");
    if full {
        bench_ptx_generation(200);
        bench_device(&[1 << 20, 1 << 24, 1 << 28]);
        tune_device(1 << 28);
    } else {
        bench_ptx_generation(3);
        bench_device(&[1 << 20]);
        tune_device(1 << 20);
    }
}
