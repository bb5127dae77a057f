//! Block-scaled quantization (MXFP8 E4M3, MXFP4, NVFP4; `Blocked128x4`
//! scales): the host model always; on a GPU the device entry points on a
//! resident `[1, 16384, 8192]` tensor (512 MiB of f32), in GB/s of bytes
//! moved (`x` + codes + scales, plus NVFP4's absmax pass over `x`) next to
//! the card's peak memory bandwidth. The device's default codec. After the
//! criterion group, each is timed again (median of 10) next to the
//! roofline model's time for the card (`docs/roofline.tsv`).
//!
//! ```text
//! cargo bench --bench block_scaled
//! ```

#[path = "common/model.rs"]
mod roofline;
#[path = "common/timing.rs"]
mod timing;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ptxsmith::kernels::block_scaled::{
    self as bs, Format, Recipe, ScaleLayout, Shape, launch, ptx::Codec,
};
use ptxsmith::runtime::{AsDevice, AsDeviceMut, Context};
use ptxsmith::testing::{REQUIRED_GPU_MISSING, gpu_required};

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
}

criterion_group!(benches, bench);
criterion_main!(benches);
