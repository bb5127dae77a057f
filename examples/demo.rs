//! The main job: build every kernel for this machine's GPU (sm_80 when
//! there is none), run it on the GPU when present and otherwise on the CPU
//! PTX simulator, check every result bit for bit against the host model,
//! and print a table.
//!
//! ```text
//! cargo run --release --example demo [-- --sm sm_90]
//! ```
//! `--sm` picks the simulated target when no GPU is present.

use std::process::ExitCode;
use std::time::Instant;

use ptxsmith::runtime::{self, Context, Stream};
use ptxsmith::{Result, Sm, kernels, testing};

/// One demo run: what ran and whether it matched the host model.
struct Outcome {
    elements: usize,
    exact: bool,
}

fn lcg(seed: u32) -> impl FnMut() -> f32 {
    let mut s = seed;
    move || {
        s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (s >> 8) as f32 / (1u32 << 24) as f32 * 2.0 - 1.0
    }
}

fn same_bits(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

fn dot(st: &Stream) -> Result<Outcome> {
    let (rows, n) = (512, 300);
    let mut r = lcg(1);
    let x: Vec<f32> = (0..rows * n).map(|_| r()).collect();
    let y: Vec<f32> = (0..n).map(|_| r()).collect();
    let got = kernels::dot::dot_rows_on(st, kernels::dot::Shape { rows, n }, &x, &y)?;
    let want = kernels::dot::host::dot_rows(&x, &y, rows, n);
    Ok(Outcome {
        elements: rows * n,
        exact: same_bits(&got, &want),
    })
}

fn fp8_quantize(st: &Stream) -> Result<Outcome> {
    use kernels::fp8::{self, Format, ptx::Codec};
    let n = 1 << 18;
    let mut r = lcg(2);
    let mut xs: Vec<f32> = (0..n).map(|_| r() * 300.0).collect();
    xs[1234] = f32::NAN;
    xs[n - 1] = -1000.0;
    let codec = Codec::for_sm(st.context().sm());
    let got = fp8::launch::quantize_on(
        st,
        ptxsmith::kernels::fp8::Encoding {
            format: Format::E4M3,
            codec,
        },
        &xs,
    )?;
    let want = fp8::host::quantize(&xs);
    let exact = got.codes == want.codes
        && got.scale.to_bits() == want.scale.to_bits()
        && got.scale_inv.to_bits() == want.scale_inv.to_bits()
        && got.amax.to_bits() == want.amax.to_bits();
    Ok(Outcome { elements: n, exact })
}

fn fp8_dequantize(st: &Stream) -> Result<Outcome> {
    use kernels::fp8::{self, Format, ptx::Codec};
    let codes: Vec<u8> = (0..1 << 18)
        .map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let codec = Codec::for_sm(st.context().sm());
    let got = fp8::launch::dequantize_on(
        st,
        ptxsmith::kernels::fp8::Encoding {
            format: Format::E4M3,
            codec,
        },
        0.125,
        &codes,
    )?;
    let want = fp8::host::dequantize(&codes, 0.125);
    Ok(Outcome {
        elements: codes.len(),
        exact: same_bits(&got, &want),
    })
}

fn score_block(st: &Stream) -> Result<Outcome> {
    let (rows, k, p) = (67, 1000, 67);
    let mut next = lcg(5);
    let x: Vec<f32> = (0..rows * p).map(|_| next()).collect();
    let d: Vec<f32> = (0..k * p).map(|_| next()).collect();
    let got = kernels::score::launch::score_block_on(
        st,
        kernels::score::ScoreShape { rows, k, p },
        None,
        &x,
        &d,
    )?;
    let want = kernels::score::host::score_block(&x, &d, rows, k, p)?;
    Ok(Outcome {
        elements: rows * k,
        exact: same_bits(&got, &want),
    })
}

fn score_route(st: &Stream) -> Result<Outcome> {
    let (rows, k, p, s) = (64, 4096, 32, 4);
    let mut next = lcg(6);
    let x: Vec<f32> = (0..rows * p).map(|_| next()).collect();
    let d: Vec<f32> = (0..k * p).map(|_| next()).collect();
    let got = kernels::score::launch::route_top_s_on(
        st,
        kernels::score::Route {
            shape: kernels::score::ScoreShape { rows, k, p },
            s,
        },
        None,
        &x,
        &d,
    )?;
    let want = kernels::score::host::route_top_s(&x, &d, rows, k, p, s)?;
    let exact = got.atoms == want.atoms && same_bits(&got.scores, &want.scores);
    Ok(Outcome {
        elements: rows * k,
        exact,
    })
}

/// Three batches routed against one resident dictionary: `D` crosses the
/// bus once, each batch uploads its `x` and downloads `rows · s · 8` bytes.
fn score_route_resident(st: &Stream) -> Result<Outcome> {
    let (rows, k, p, s) = (64, 4096, 32, 4);
    let mut next = lcg(7);
    let d: Vec<f32> = (0..k * p).map(|_| next()).collect();
    let ctx = st.context();
    let before = ctx.traffic();
    let dict = st.upload(&d)?;
    let mut exact = true;
    for _ in 0..3 {
        let x: Vec<f32> = (0..rows * p).map(|_| next()).collect();
        let xb = st.upload(&x)?;
        let got = kernels::score::launch::route_top_s_dev(
            st,
            kernels::score::Route {
                shape: kernels::score::ScoreShape { rows, k, p },
                s,
            },
            None,
            &xb,
            &dict,
        )?
        .download(st)?;
        let want = kernels::score::host::route_top_s(&x, &d, rows, k, p, s)?;
        exact &= got.atoms == want.atoms && same_bits(&got.scores, &want.scores);
    }
    let t = ctx.traffic().since(&before);
    exact &= t.bytes_uploaded == 4 * (k * p + 3 * rows * p) as u64
        && t.bytes_downloaded == 3 * (rows * s * 8) as u64;
    Ok(Outcome {
        elements: 3 * rows * k,
        exact,
    })
}

/// Quantize → dequantize chained on the device: the codes and the scale
/// never leave it; only the dequantized result is downloaded.
fn fp8_chain(st: &Stream) -> Result<Outcome> {
    use kernels::fp8::{self, Format, launch, ptx::Codec};
    let n = 1 << 16;
    let mut r = lcg(8);
    let xs: Vec<f32> = (0..n).map(|_| r() * 40.0).collect();
    let ctx = st.context();
    let codec = Codec::for_sm(ctx.sm());
    let before = ctx.traffic();
    let x = st.upload(&xs)?;
    let mut codes = ctx.alloc::<u8>(n)?;
    let mut stats = ctx.alloc::<f32>(3)?;
    let mut y = ctx.alloc::<f32>(n)?;
    launch::quantize_dev(
        st,
        ptxsmith::kernels::fp8::Encoding {
            format: Format::E4M3,
            codec,
        },
        &x,
        &mut codes,
        &mut stats,
    )?;
    launch::dequantize_stats_dev(
        st,
        ptxsmith::kernels::fp8::Encoding {
            format: Format::E4M3,
            codec,
        },
        &codes,
        &stats,
        &mut y,
    )?;
    let got = st.to_vec(&y)?;
    let q = fp8::host::quantize(&xs);
    let want = fp8::host::dequantize(&q.codes, q.scale_inv);
    let t = ctx.traffic().since(&before);
    let exact = same_bits(&got, &want)
        && t.bytes_uploaded == 4 * n as u64
        && t.bytes_downloaded == 4 * n as u64;
    Ok(Outcome { elements: n, exact })
}

/// Viterbi: 32 sequences of up to 120 steps over 48 states.
fn viterbi(st: &Stream) -> Result<Outcome> {
    let (batch, t, s) = (32, 120, 48);
    let mut r = lcg(9);
    let mut lp = move || r() * 4.0 - 4.0;
    let pi: Vec<f32> = (0..s).map(|_| lp()).collect();
    let a: Vec<f32> = (0..s * s).map(|_| lp()).collect();
    let b: Vec<f32> = (0..batch * t * s).map(|_| lp()).collect();
    let lengths: Vec<u32> = (0..batch as u32).map(|i| 120 - (i * 7) % 100).collect();
    let got = kernels::viterbi::viterbi_on(
        st,
        kernels::viterbi::Shape { batch, t, s },
        &lengths,
        &pi,
        &a,
        &b,
    )?;
    let want = kernels::viterbi::host::viterbi(&pi, &a, &b, &lengths, batch, t, s)?;
    let exact = got.paths == want.paths && same_bits(&got.scores, &want.scores);
    Ok(Outcome {
        elements: batch * t * s,
        exact,
    })
}

/// Viterbi at 100 states: 8 sequences of up to 40 steps; on sm_90 and
/// later the cluster kernel (the matrix on chip across 8 CTAs), elsewhere
/// the one-CTA kernel, the same bits either way.
fn viterbi_cluster(st: &Stream) -> Result<Outcome> {
    let (batch, t, s) = (8, 40, 100);
    let mut r = lcg(19);
    let mut lp = move || r() * 4.0 - 4.0;
    let pi: Vec<f32> = (0..s).map(|_| lp()).collect();
    let a: Vec<f32> = (0..s * s).map(|_| lp()).collect();
    let b: Vec<f32> = (0..batch * t * s).map(|_| lp()).collect();
    let lengths: Vec<u32> = (0..batch as u32).map(|i| 40 - (i * 5) % 37).collect();
    let shape = kernels::viterbi::Shape { batch, t, s };
    let got = kernels::viterbi::viterbi_on(st, shape, &lengths, &pi, &a, &b)?;
    let want = kernels::viterbi::host::viterbi(&pi, &a, &b, &lengths, batch, t, s)?;
    Ok(Outcome {
        elements: batch * t * s,
        exact: got.paths == want.paths && same_bits(&got.scores, &want.scores),
    })
}

/// logcumsumexp forward and backward over 8 rows of 1000.
fn logcumsumexp(st: &Stream) -> Result<Outcome> {
    use kernels::logcumsumexp::{self as lcse, Shape, host};
    let shape = Shape::new(8, 1000)?;
    let mut r = lcg(10);
    let x: Vec<f32> = (0..shape.len()).map(|_| r() * 10.0).collect();
    let g: Vec<f32> = (0..shape.len()).map(|_| r()).collect();
    let y = lcse::forward_on(st, shape, &x)?;
    let want_y = host::forward(shape, &x)?;
    let gx = lcse::backward_on(st, shape, &x, &g)?;
    let want_gx = host::backward(shape, &x, &g)?;
    Ok(Outcome {
        elements: shape.len(),
        exact: same_bits(&y, &want_y) && same_bits(&gx, &want_gx),
    })
}

/// HMM forward-backward (alpha, beta, likelihood, posteriors, transition
/// counts) over 8 sequences of up to 60 steps and 24 states.
fn hmm(st: &Stream) -> Result<Outcome> {
    use kernels::hmm::{self as fb, Inputs, Shape, host};
    let (batch, t, s) = (8, 60, 24);
    let mut r = lcg(11);
    let mut lp = move || (r() * 0.45 + 0.55).ln();
    let pi: Vec<f32> = (0..s).map(|_| lp()).collect();
    let a: Vec<f32> = (0..s * s).map(|_| lp()).collect();
    let b: Vec<f32> = (0..batch * t * s).map(|_| lp()).collect();
    let lengths: Vec<u32> = (0..batch as u32).map(|i| 60 - i * 5).collect();
    let shape = Shape::new(batch, t, s)?;
    let inputs = Inputs {
        log_pi: &pi,
        log_a: &a,
        log_b: &b,
        lengths: &lengths,
    };
    let got = fb::forward_backward_on(st, shape, &inputs)?;
    let want = host::forward_backward(shape, &inputs)?;
    let exact = same_bits(&got.log_alpha, &want.log_alpha)
        && same_bits(&got.log_beta, &want.log_beta)
        && same_bits(&got.log_likelihood, &want.log_likelihood)
        && same_bits(&got.gamma, &want.gamma)
        && same_bits(&got.xi, &want.xi);
    Ok(Outcome {
        elements: batch * t * s,
        exact,
    })
}

/// A block-ELL layer at 50 % density (8 × 8 blocks of 16, 4 slots a row,
/// one slot of each row empty in two rows): forward with bias, grad-input,
/// grad-values and grad-bias over 300 rows (two N-chunks), the topology
/// uploaded once.
fn block_ell(st: &Stream) -> Result<Outcome> {
    use kernels::block_ell::{self as be, DeviceTopology, Dims};
    let (r, c, k, b, n) = (8, 8, 4, 16, 300);
    let dims = Dims::new(r, c, k, b)?;
    let col: Vec<i32> = (0..r * k)
        .map(|s| {
            let (row, slot) = (s / k, s % k);
            if row % 4 == 1 && slot == 2 {
                -1
            } else {
                ((row + 2 * slot) % c) as i32
            }
        })
        .collect();
    let mut rnd = lcg(12);
    let mut v = |len: usize| -> Vec<f32> { (0..len).map(|_| rnd()).collect() };
    let (x, gy) = (v(n * dims.in_features()), v(n * dims.out_features()));
    let (values, bias) = (v(dims.values_len()), v(dims.out_features()));
    let ctx = st.context();
    let topo = DeviceTopology::upload(st, &dims, &col)?;
    let (dx, dgy) = (st.upload(&x)?, st.upload(&gy)?);
    let (dv, db) = (st.upload(&values)?, st.upload(&bias)?);
    let mut y = ctx.alloc::<f32>(n * dims.out_features())?;
    let mut gx = ctx.alloc::<f32>(n * dims.in_features())?;
    let mut gv = ctx.alloc::<f32>(dims.values_len())?;
    let mut gb = ctx.alloc::<f32>(dims.out_features())?;
    be::forward_dev(st, &topo, n, &dx, &dv, Some(&db), &mut y)?;
    be::grad_input_dev(st, &topo, n, &dgy, &dv, &mut gx)?;
    be::grad_values_dev(st, &topo, n, &dx, &dgy, &mut gv)?;
    be::grad_bias_dev(st, &dims, n, &dgy, &mut gb)?;
    let exact = same_bits(
        &st.to_vec(&y)?,
        &be::host::forward(&dims, n, &x, &values, &col, Some(&bias))?,
    ) && same_bits(
        &st.to_vec(&gx)?,
        &be::host::grad_input(&dims, n, &gy, &values, &col)?,
    ) && same_bits(
        &st.to_vec(&gv)?,
        &be::host::grad_values(&dims, n, &x, &gy, &col)?,
    ) && same_bits(&st.to_vec(&gb)?, &be::host::grad_bias(&dims, n, &gy)?);
    Ok(Outcome {
        elements: n * (dims.in_features() + dims.out_features()),
        exact,
    })
}

/// The same layer on the tensor cores in bf16 (`u16` bits, fp32
/// accumulation): forward with bias, grad-input and grad-values, checked
/// against the host model of the device's SM. Below sm_80 the request must
/// be refused with `UnsupportedFeature` (no elements run).
fn block_ell_tc(st: &Stream) -> Result<Outcome> {
    use kernels::block_ell_tc::{self as tc, DeviceTopology, Dims, TcOutput, TcPrecision, host};
    let (r, c, k, b, n) = (8, 8, 4, 16, 300);
    let dims = Dims::new(r, c, k, b)?;
    let col: Vec<i32> = (0..r * k)
        .map(|s| {
            let (row, slot) = (s / k, s % k);
            if row % 4 == 1 && slot == 2 {
                -1
            } else {
                ((row + 2 * slot) % c) as i32
            }
        })
        .collect();
    let mut rnd = lcg(13);
    let mut v =
        |len: usize| -> Vec<u16> { tc::to_bf16(&(0..len).map(|_| rnd()).collect::<Vec<_>>()) };
    let (x, gy, values) = (
        v(n * dims.in_features()),
        v(n * dims.out_features()),
        v(dims.values_len()),
    );
    let bias: Vec<f32> = (0..dims.out_features()).map(|i| i as f32 / 64.0).collect();
    let (ctx, sm, p) = (st.context(), st.context().sm(), TcPrecision::Bf16);
    let topo = DeviceTopology::upload(st, &dims, &col)?;
    let (dx, dgy, dv, db) = (
        st.upload(&x)?,
        st.upload(&gy)?,
        st.upload(&values)?,
        st.upload(&bias)?,
    );
    let mut y = ctx.alloc::<f32>(n * dims.out_features())?;
    if !sm.supports(ptxsmith::Feature::MmaSync) {
        let refused = matches!(
            tc::forward_dev(st, p, TcOutput::F32, &topo, n, &dx, &dv, Some(&db), &mut y),
            Err(ptxsmith::Error::UnsupportedFeature { .. })
        );
        return Ok(Outcome {
            elements: 0,
            exact: refused,
        });
    }
    let mut gx = ctx.alloc::<f32>(n * dims.in_features())?;
    let mut gv = ctx.alloc::<f32>(dims.values_len())?;
    tc::forward_dev(st, p, TcOutput::F32, &topo, n, &dx, &dv, Some(&db), &mut y)?;
    tc::grad_input_dev(st, p, TcOutput::F32, &topo, n, &dgy, &dv, &mut gx)?;
    tc::grad_values_dev(st, p, &topo, n, &dx, &dgy, &mut gv)?;
    let exact = same_bits(
        &st.to_vec(&y)?,
        &host::forward(sm, p, &dims, n, &x, &values, &col, Some(&bias))?,
    ) && same_bits(
        &st.to_vec(&gx)?,
        &host::grad_input(sm, p, &dims, n, &gy, &values, &col)?,
    ) && same_bits(
        &st.to_vec(&gv)?,
        &host::grad_values(sm, p, &dims, n, &x, &gy, &col)?,
    );
    Ok(Outcome {
        elements: n * (dims.in_features() + dims.out_features()),
        exact,
    })
}

/// Block-scaled quantization of a `[2, 300, 200]` tensor (partial last
/// blocks) to `format` with its default recipe, scales in the cuBLAS /
/// CUTLASS `Blocked128x4` layout, then dequantization; codes, scales (with
/// zero padding), the NVFP4 global scale and the dequantized values
/// checked against the host model. The device's default codec (hardware
/// E2M1/UE8M0 cvt on sm_100a/sm_120a, FP8 cvt from sm_89).
fn block_scaled_roundtrip(st: &Stream, format: kernels::block_scaled::Format) -> Result<Outcome> {
    use kernels::block_scaled::{self as bs, Recipe, ScaleLayout, Shape, launch, ptx::Codec};
    let shape = Shape::new(2, 300, 200, format)?;
    let mut r = lcg(13);
    let xs: Vec<f32> = (0..shape.len())
        .map(|i| r() * (1 << (i / 32 % 12)) as f32)
        .collect();
    let recipe = Recipe::default_for(format);
    let layout = ScaleLayout::Blocked128x4;
    let codec = Codec::for_sm(st.context().sm());
    let got = launch::quantize_on(
        st,
        ptxsmith::kernels::block_scaled::Quantization {
            shape,
            recipe,
            layout,
        },
        codec,
        &xs,
    )?;
    let want = bs::host::quantize(&xs, shape, recipe, layout)?;
    let y = launch::dequantize_on(st, codec, &got)?;
    Ok(Outcome {
        elements: shape.len(),
        exact: got == want && same_bits(&y, &bs::host::dequantize(&want)?),
    })
}

fn mxfp8(st: &Stream) -> Result<Outcome> {
    block_scaled_roundtrip(st, kernels::block_scaled::Format::Mxfp8E4m3)
}

fn mxfp4(st: &Stream) -> Result<Outcome> {
    block_scaled_roundtrip(st, kernels::block_scaled::Format::Mxfp4)
}

fn nvfp4(st: &Stream) -> Result<Outcome> {
    block_scaled_roundtrip(st, kernels::block_scaled::Format::Nvfp4)
}

type Case = (&'static str, fn(&Stream) -> Result<Outcome>);

fn cases() -> Vec<Case> {
    vec![
        ("dot_rows_f32", dot),
        ("fp8_e4m3 quantize", fp8_quantize),
        ("fp8_e4m3 dequantize", fp8_dequantize),
        ("score_block_f32", score_block),
        ("score route top-4", score_route),
        ("route, resident D, 3x", score_route_resident),
        ("fp8 quant->dequant chain", fp8_chain),
        ("viterbi_f32", viterbi),
        ("viterbi S 100 (cluster 90+)", viterbi_cluster),
        ("logcumsumexp fwd+bwd", logcumsumexp),
        ("hmm forward-backward", hmm),
        ("block-ELL 50% fwd+grads", block_ell),
        ("block-ELL TC bf16 fwd+grad", block_ell_tc),
        ("MXFP8 E4M3 quant+dequant", mxfp8),
        ("MXFP4 quant+dequant", mxfp4),
        ("NVFP4 quant+dequant", nvfp4),
    ]
}

/// Print ptxsmith's tracing events on stderr, filtered by `RUST_LOG`
/// (e.g. `RUST_LOG=ptxsmith=debug`: JIT compiles, cache hits and misses,
/// launches); nothing without it.
fn init_tracing() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
}

fn main() -> ExitCode {
    init_tracing();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sim_sm = match args
        .iter()
        .position(|a| a == "--sm")
        .and_then(|i| args.get(i + 1))
    {
        Some(s) => match Sm::parse(s) {
            Ok(sm) => sm,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(2);
            }
        },
        None => Sm::Sm80,
    };
    let (ctx, backend) = match Context::cuda(0) {
        Ok(ctx) => {
            let name = format!("cuda ({})", ctx.info().map_or("?", |i| i.name.as_str()));
            (ctx, name)
        }
        Err(e) if testing::gpu_required() => {
            eprintln!("PTXSMITH_REQUIRE_GPU is set but there is no usable CUDA device: {e}");
            return ExitCode::FAILURE;
        }
        Err(e) => {
            println!("no GPU ({e}); running the exact PTX on the CPU simulator");
            (Context::sim(sim_sm), "sim".to_string())
        }
    };
    let st = ctx.default_stream();
    let sm = ctx.sm();
    println!(
        "ptxsmith demo: target {sm}, backend {backend}, cuda available: {}\n",
        runtime::cuda_available()
    );
    println!(
        "{:<26} {:<7} {:<8} {:>10} {:>10} {:>10}",
        "kernel", "SM", "backend", "elements", "bit-exact", "time"
    );
    let mut all_exact = true;
    let cases = cases();
    // A progress bar on stderr when it is a terminal (the simulator takes
    // seconds); hidden otherwise, and the table goes to stdout either way.
    let bar = indicatif::ProgressBar::new(cases.len() as u64).with_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg} ({elapsed})")
            .expect("a valid template"),
    );
    for (name, run) in cases {
        bar.set_message(name);
        let t = Instant::now();
        let line = match run(&st) {
            Ok(o) => {
                all_exact &= o.exact;
                let short = backend.split(' ').next().unwrap_or("?");
                format!(
                    "{name:<26} {:<7} {short:<8} {:>10} {:>10} {:>8.1}ms",
                    sm.name(),
                    o.elements,
                    if o.exact { "yes" } else { "NO" },
                    t.elapsed().as_secs_f64() * 1e3
                )
            }
            Err(e) => {
                all_exact = false;
                format!("{name:<26} {:<7} error: {e}", sm.name())
            }
        };
        bar.suspend(|| println!("{line}"));
        bar.inc(1);
    }
    bar.finish_and_clear();
    if all_exact {
        println!("\nevery result equals its host model bit for bit");
        ExitCode::SUCCESS
    } else {
        println!("\nMISMATCH: see the rows above");
        ExitCode::FAILURE
    }
}
