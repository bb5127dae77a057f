//! FP8 kernels: PTX generation time per SM, and (with a CUDA device) the
//! device throughput of each kernel in GB/s next to the card's peak DRAM
//! bandwidth.
//!
//! `cargo bench --bench fp8_kernels` (under `cargo test` the bench binary
//! runs a short smoke pass instead).

use std::hint::black_box;
use std::time::{Duration, Instant};

use ptxsmith::Sm;
use ptxsmith::dsl::params::KernelParams;
use ptxsmith::kernels::fp8::Format;
use ptxsmith::kernels::fp8::ptx::{
    self, AbsmaxFinalizeArgs, AbsmaxPartialsArgs, BLOCK, Codec, DequantizeArgs, QuantizeArgs,
    QuantizeScaledArgs,
};
use ptxsmith::runtime::exec::{Executor, LaunchConfig, upload_new};

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
    println!("== PTX generation (all 9 FP8 modules of an SM, median of {reps})");
    for sm in Sm::ALL {
        let d = median_time(reps, || {
            black_box(ptx::default_variants(black_box(sm)).unwrap());
        });
        let bytes: usize = ptx::default_variants(sm)
            .unwrap()
            .iter()
            .map(|m| m.ptx.len())
            .sum();
        println!(
            "{sm:>7}: {:>8.1} µs for 9 modules ({:.1} µs/module, {bytes} bytes of PTX, codec {:?})",
            d.as_secs_f64() * 1e6,
            d.as_secs_f64() * 1e6 / 9.0,
            Codec::for_sm(sm)
        );
    }
}

fn bench_device(sizes: &[usize], reps: usize) {
    let Some(mut gpu) = ptxsmith::runtime::gpu_for_tests() else {
        return;
    };
    let info = gpu.info().clone();
    let peak = info.peak_bandwidth_gbps();
    let sm = gpu.sm();
    let sms = gpu.multiprocessor_count();
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
    for &n in sizes {
        let xs: Vec<f32> = (0..n)
            .map(|i| ((i as f32) * 0.618_034).sin() * 300.0)
            .collect();
        let codes_host = vec![0x3Cu8; n];
        let x = upload_new(&mut gpu, &xs).unwrap();
        let c = upload_new(&mut gpu, &codes_host).unwrap();
        let y = gpu.alloc(n * 4).unwrap();
        let blocks = ptx::grid_blocks(n as u64, sms);
        let partials = gpu.alloc(blocks as usize * 4).unwrap();
        let stats = gpu.alloc(12).unwrap();
        let n64 = n as u64;
        let report = |what: &str, bytes: f64, d: Duration| {
            let gbps = bytes / d.as_secs_f64() / 1e9;
            let share = peak.map_or(String::new(), |p| {
                format!(" ({:.0}% of peak)", 100.0 * gbps / p)
            });
            println!(
                "n = {n:>10}  {what:<34} {:>9.1} µs  {gbps:>7.1} GB/s{share}",
                d.as_secs_f64() * 1e6
            );
        };

        let m1 = ptx::generate_absmax_partials(sm).unwrap();
        let m2 = ptx::generate_absmax_finalize(sm, f).unwrap();
        let a1 = AbsmaxPartialsArgs {
            x: x.into(),
            n: n64,
            partials: partials.into(),
        }
        .args();
        let a2 = AbsmaxFinalizeArgs {
            partials: partials.into(),
            count: blocks,
            stats: stats.into(),
        }
        .args();
        let d = median_time(reps, || {
            gpu.launch(&m1, LaunchConfig::linear(blocks, BLOCK), &a1)
                .unwrap();
            gpu.launch(&m2, LaunchConfig::linear(1, BLOCK), &a2)
                .unwrap();
        });
        report("absmax (2 passes, reads 4 B/elem)", 4.0 * n as f64, d);

        for &codec in &codecs {
            let mq = ptx::generate_quantize(sm, f, codec).unwrap();
            let aq = QuantizeArgs {
                x: x.into(),
                n: n64,
                stats: stats.into(),
                codes: c.into(),
            }
            .args();
            let d = median_time(reps, || {
                gpu.launch(&m1, LaunchConfig::linear(blocks, BLOCK), &a1)
                    .unwrap();
                gpu.launch(&m2, LaunchConfig::linear(1, BLOCK), &a2)
                    .unwrap();
                gpu.launch(&mq, LaunchConfig::linear(blocks, BLOCK), &aq)
                    .unwrap();
            });
            report(
                &format!("quantize+absmax {codec:?} (9 B/elem)"),
                9.0 * n as f64,
                d,
            );

            let ms = ptx::generate_quantize_scaled(sm, f, codec).unwrap();
            let as_ = QuantizeScaledArgs {
                x: x.into(),
                n: n64,
                scale: 0.5,
                codes: c.into(),
            }
            .args();
            let d = median_time(reps, || {
                gpu.launch(&ms, LaunchConfig::linear(blocks, BLOCK), &as_)
                    .unwrap()
            });
            report(
                &format!("quantize_with_scale {codec:?} (5 B/elem)"),
                5.0 * n as f64,
                d,
            );

            let md = ptx::generate_dequantize(sm, f, codec).unwrap();
            let ad = DequantizeArgs {
                codes: c.into(),
                n: n64,
                scale_inv: 2.0,
                y: y.into(),
            }
            .args();
            let d = median_time(reps, || {
                gpu.launch(&md, LaunchConfig::linear(blocks, BLOCK), &ad)
                    .unwrap()
            });
            report(
                &format!("dequantize {codec:?} (5 B/elem)"),
                5.0 * n as f64,
                d,
            );
        }
        for b in [x, c, y, partials, stats] {
            gpu.free(b).unwrap();
        }
    }
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test` runs this binary without
    // it, where a smoke pass is enough.
    let full = std::env::args().any(|a| a == "--bench");
    if full {
        bench_ptx_generation(200);
        bench_device(&[1 << 20, 1 << 24, 1 << 28], 20);
    } else {
        bench_ptx_generation(3);
        bench_device(&[1 << 20], 2);
    }
}
