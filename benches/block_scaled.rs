//! Block-scaled quantization (MXFP8 E4M3, MXFP4, NVFP4; `Blocked128x4`
//! scales): the host model always; on a GPU the device entry points on a
//! resident `[1, 16384, 8192]` tensor (512 MiB of f32), in GB/s of bytes
//! moved (`x` + codes + scales, plus NVFP4's absmax pass over `x`) next to
//! the card's peak memory bandwidth. The device's default codec. After the
//! criterion group, each is timed again (median of 10) next to the
//! roofline model's time for the card (`docs/roofline.tsv`).
//!
//! With `--bench` and a device it then times the tuning candidates
//! ([`BlockScaledTuning::candidates`]) of each format's quantize and
//! dequantize on the same tensor, checks that their bits (codes, scales,
//! NVFP4 global scale, dequantized values, converted scales) equal the
//! default's, and prints each and the winners (`block_scaled tuning`
//! lines). On the driver emulator (or with `PTXSMITH_DEVICE_TESTS_SMALL`)
//! the sweep uses a `[1, 256, 512]` tensor; under `cargo test` (no
//! `--bench`) it is skipped.
//!
//! ```text
//! cargo bench --bench block_scaled
//! ```

#[path = "common/model.rs"]
mod roofline;
#[path = "common/timing.rs"]
mod timing;
#[path = "../tests/block_scaled_tuning/tuned.rs"]
mod tuned;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ptxsmith::kernels::block_scaled::ptx::BlockScaledTuning;
use ptxsmith::kernels::block_scaled::{
    self as bs, Format, Recipe, ScaleLayout, Shape, launch, ptx::Codec,
};
use ptxsmith::runtime::{AsDevice, AsDeviceMut, Context};
use ptxsmith::testing::{REQUIRED_GPU_MISSING, gpu_required, small_shapes};

fn data(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|i| {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            ((s >> 8) as f32 / (1u32 << 24) as f32 - 0.5) * (1 << (i / 32 % 16)) as f32
        })
        .collect()
}

const FORMATS: [(Format, &str); 3] = [
    (Format::Mxfp8E4m3, "mxfp8_e4m3"),
    (Format::Mxfp4, "mxfp4"),
    (Format::Nvfp4, "nvfp4"),
];

/// The format's name in the roofline model's problems.
fn model_label(f: Format) -> &'static str {
    match f {
        Format::Mxfp8E4m3 => "MXFP8 E4M3",
        Format::Mxfp4 => "MXFP4",
        _ => "NVFP4",
    }
}

/// Bytes a quantize moves: `x` read (twice for NVFP4), codes and scales
/// written. A dequantize moves the same minus the absmax pass.
fn bytes(shape: &Shape, layout: ScaleLayout, absmax_pass: bool) -> u64 {
    let x = shape.len() as u64 * 4;
    let extra = if absmax_pass { x } else { 0 };
    x + extra + shape.codes_len() as u64 + layout.len(&shape.scale_dims()) as u64
}

fn bench(c: &mut Criterion) {
    for (f, _) in FORMATS {
        let l = model_label(f);
        let q = format!("quantize {l} [1, 16384, 8192], Blocked128x4");
        let d = format!("dequantize {l} [1, 16384, 8192], Blocked128x4");
        roofline::check_rows(&[("block_scaled", q.as_str()), ("block_scaled", d.as_str())]);
    }
    let layout = ScaleLayout::Blocked128x4;
    let mut g = c.benchmark_group("block_scaled/host");
    g.sample_size(10);
    for (f, name) in FORMATS {
        let shape = Shape::new(1, 256, 4096, f).unwrap();
        let xs = data(shape.len(), 1);
        let r = Recipe::default_for(f);
        let q = bs::host::quantize(&xs, shape, r, layout).unwrap();
        g.throughput(Throughput::Bytes(bytes(&shape, layout, false)));
        g.bench_function(format!("quantize_{name}_256x4096"), |b| {
            b.iter(|| bs::host::quantize(&xs, shape, r, layout).unwrap())
        });
        g.bench_function(format!("dequantize_{name}_256x4096"), |b| {
            b.iter(|| bs::host::dequantize(&q).unwrap())
        });
    }
    g.finish();

    let ctx = match Context::cuda(0) {
        Ok(ctx) => ctx,
        Err(e) if gpu_required() => panic!("{REQUIRED_GPU_MISSING}: {e}"),
        Err(e) => {
            println!("SKIP: no CUDA device ({e}); GPU block-scaled kernels not measured");
            return;
        }
    };
    let peak = ctx
        .info()
        .and_then(|i| i.peak_bandwidth_gbps())
        .map_or("unknown".to_string(), |p| format!("{p:.0} GB/s"));
    println!(
        "block_scaled GPU: {} (peak DRAM bandwidth {peak}; goal ≥ 85 % of it)",
        ctx.info().map_or(String::new(), |i| i.to_string())
    );
    let st = ctx.default_stream();
    let codec = Codec::for_sm(ctx.sm());
    let (m, k) = (16384, 8192);
    let x = st.upload(&data(m * k, 2)).unwrap();
    let mut y = ctx.alloc::<f32>(m * k).unwrap();
    let mut grp = c.benchmark_group("block_scaled/gpu");
    grp.sample_size(10);
    let mut timed = Vec::new();
    for (f, name) in FORMATS {
        let shape = Shape::new(1, m, k, f).unwrap();
        let r = Recipe::default_for(f);
        let mut codes = ctx.alloc::<u8>(shape.codes_len()).unwrap();
        let mut scales = ctx.alloc::<u8>(layout.len(&shape.scale_dims())).unwrap();
        let mut global = ctx.alloc::<f32>(3).unwrap();
        let nv = f == Format::Nvfp4;
        let mut quantize = |codes: &mut _, scales: &mut _| {
            let gv = nv.then(|| global.as_device_mut());
            launch::quantize_dev(
                &st,
                ptxsmith::kernels::block_scaled::Quantization {
                    shape,
                    recipe: r,
                    layout,
                },
                codec,
                &x,
                codes,
                scales,
                gv,
            )
            .unwrap();
        };
        quantize(&mut codes, &mut scales);
        st.synchronize().unwrap();
        grp.throughput(Throughput::Bytes(bytes(&shape, layout, nv)));
        grp.bench_function(format!("quantize_{name}_{m}x{k}"), |b| {
            b.iter_custom(|iters| {
                timing::iter_queued(&st, iters, || quantize(&mut codes, &mut scales))
            })
        });
        let q = timing::time(&st, || quantize(&mut codes, &mut scales));
        let gd = nv.then(|| global.as_device());
        grp.throughput(Throughput::Bytes(bytes(&shape, layout, false)));
        grp.bench_function(format!("dequantize_{name}_{m}x{k}"), |b| {
            b.iter_custom(|iters| {
                timing::iter_queued(&st, iters, || {
                    launch::dequantize_dev(
                        &st,
                        ptxsmith::kernels::block_scaled::Quantization {
                            shape,
                            recipe: ptxsmith::kernels::block_scaled::Recipe::default_for(
                                (shape).format(),
                            ),
                            layout,
                        },
                        codec,
                        &codes,
                        &scales,
                        gd,
                        &mut y,
                    )
                    .unwrap();
                })
            })
        });
        let d = timing::time(&st, || {
            let q = ptxsmith::kernels::block_scaled::Quantization {
                shape,
                recipe: r,
                layout,
            };
            launch::dequantize_dev(&st, q, codec, &codes, &scales, gd, &mut y).unwrap();
        });
        timed.push((f, q, d));
    }
    grp.finish();
    let dev = ctx.info().map_or(String::new(), |i| i.name.clone());
    let sms = ctx.multiprocessor_count();
    for (f, q, d) in timed {
        let l = model_label(f);
        for (what, secs) in [("quantize", q), ("dequantize", d)] {
            roofline::compare(
                &format!("block_scaled {what} {l} {m}x{k}"),
                (secs.per_launch_s, secs.single_s),
                &dev,
                sms,
                "block_scaled",
                &format!("{what} {l} [1, 16384, 8192], Blocked128x4"),
                "*",
            );
        }
    }
    drop((x, y));
    if std::env::args().any(|a| a == "--bench") {
        tune_device(&ctx);
    } else {
        println!("block_scaled tuning: sweep skipped (run with --bench)");
    }
}

/// Time the tuning candidates ([`BlockScaledTuning::candidates`]) of each
/// format's quantize (NVFP4: with its absmax and global-scale passes) and
/// dequantize on the device, `Blocked128x4` scales, each candidate's
/// outputs compared bit for bit with the default's (a difference panics:
/// the bits never depend on the tuning), then the winners (`block_scaled
/// tuning ...` lines; `docs/perf.md` records them and the winners become
/// `BlockScaledTuning::default_for`). `[1, 16384, 8192]` on a GPU,
/// `[1, 256, 512]` on the emulator.
fn tune_device(ctx: &Context) {
    let st = ctx.default_stream();
    let name = ctx.info().map_or("?".into(), |i| i.name.clone());
    let (sm, sms) = (ctx.sm(), ctx.multiprocessor_count());
    let codec = Codec::for_sm(sm);
    let (m, k) = if small_shapes(ctx) {
        (256, 512)
    } else {
        (16384, 8192)
    };
    let layout = ScaleLayout::Blocked128x4;
    let x = st.upload(&data(m * k, 3)).unwrap();
    let default = BlockScaledTuning::default_for(sm);
    for (f, fname) in FORMATS {
        let shape = Shape::new(1, m, k, f).unwrap();
        let r = Recipe::default_for(f);
        let nv = f == Format::Nvfp4;
        let mut reference = None;
        let (mut best_q, mut best_d): (Option<(f64, BlockScaledTuning)>, _) = (None, None);
        for t in BlockScaledTuning::candidates(sm) {
            let run =
                tuned::Tuned::new(&st, &x, shape, r, layout, ScaleLayout::RowMajor, codec, &t);
            let q = timing::time(&st, || run.run_quantize(&st)).per_launch_s;
            let d = timing::time(&st, || run.run_dequantize(&st)).per_launch_s;
            run.run_convert(&st);
            let out = run.outputs(&st, nv);
            match &reference {
                None => reference = Some(out),
                Some(r0) => assert!(
                    &out == r0,
                    "block_scaled tuning {} changed the bits of {fname} on {name}",
                    t.key()
                ),
            }
            let gbps = |b: u64, s: f64| b as f64 / s / 1e9;
            println!(
                "block_scaled tuning {fname} {} ({} threads, {} CTAs/SM) on {name} ({sm}, {sms} SMs), \
                 [1, {m}, {k}]: quantize {:.1} µs ({:.0} GB/s), dequantize {:.1} µs ({:.0} GB/s), \
                 bits equal to the default's",
                t.key(),
                t.threads,
                t.ctas_per_sm,
                q * 1e6,
                gbps(bytes(&shape, layout, nv), q),
                d * 1e6,
                gbps(bytes(&shape, layout, false), d),
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
                    "block_scaled tuning winner ({what} {fname}) on {name} ({sm}): {} ({:.1} µs; default {})",
                    t.key(),
                    s * 1e6,
                    default.key()
                );
            }
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
