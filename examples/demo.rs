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

use ptxsmith::runtime::exec::Executor;
use ptxsmith::runtime::{self, Gpu};
use ptxsmith::sim::Sim;
use ptxsmith::{Result, Sm, kernels};

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

fn dot(ex: &mut dyn Executor) -> Result<Outcome> {
    let (rows, n) = (512, 300);
    let mut r = lcg(1);
    let x: Vec<f32> = (0..rows * n).map(|_| r()).collect();
    let y: Vec<f32> = (0..n).map(|_| r()).collect();
    let got = kernels::dot::launch::run_on(ex, &x, &y, rows, n)?;
    let want = kernels::dot::dot_rows_host(&x, &y, rows, n);
    Ok(Outcome {
        elements: rows * n,
        exact: same_bits(&got, &want),
    })
}

fn fp8_quantize(ex: &mut dyn Executor) -> Result<Outcome> {
    use kernels::fp8::{self, Format, ptx::Codec};
    let n = 1 << 18;
    let mut r = lcg(2);
    let mut xs: Vec<f32> = (0..n).map(|_| r() * 300.0).collect();
    xs[1234] = f32::NAN;
    xs[n - 1] = -1000.0;
    let codec = Codec::for_sm(ex.sm());
    let got = fp8::launch::quantize_on(ex, &xs, Format::E4M3, codec)?;
    let want = fp8::quantize(&xs);
    let exact = got.codes == want.codes
        && got.scale.to_bits() == want.scale.to_bits()
        && got.scale_inv.to_bits() == want.scale_inv.to_bits()
        && got.amax.to_bits() == want.amax.to_bits();
    Ok(Outcome { elements: n, exact })
}

fn fp8_dequantize(ex: &mut dyn Executor) -> Result<Outcome> {
    use kernels::fp8::{self, Format, ptx::Codec};
    let codes: Vec<u8> = (0..1 << 18)
        .map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let codec = Codec::for_sm(ex.sm());
    let got = fp8::launch::dequantize_on(ex, &codes, 0.125, Format::E4M3, codec)?;
    let want = fp8::dequantize(&codes, 0.125);
    Ok(Outcome {
        elements: codes.len(),
        exact: same_bits(&got, &want),
    })
}

fn score_block(ex: &mut dyn Executor) -> Result<Outcome> {
    let (rows, k, p) = (67, 1000, 67);
    let mut next = lcg(5);
    let x: Vec<f32> = (0..rows * p).map(|_| next()).collect();
    let d: Vec<f32> = (0..k * p).map(|_| next()).collect();
    let got = kernels::score::launch::score_block_on(ex, &x, &d, rows, k, p, None)?;
    let want = kernels::score::score_block(&x, &d, rows, k, p)?;
    Ok(Outcome {
        elements: rows * k,
        exact: same_bits(&got, &want),
    })
}

fn score_route(ex: &mut dyn Executor) -> Result<Outcome> {
    let (rows, k, p, s) = (64, 4096, 32, 4);
    let mut next = lcg(6);
    let x: Vec<f32> = (0..rows * p).map(|_| next()).collect();
    let d: Vec<f32> = (0..k * p).map(|_| next()).collect();
    let got = kernels::score::launch::route_top_s_on(ex, &x, &d, rows, k, p, s, None)?;
    let want = kernels::score::route_top_s(&x, &d, rows, k, p, s)?;
    let exact = got.atoms == want.atoms && same_bits(&got.scores, &want.scores);
    Ok(Outcome {
        elements: rows * k,
        exact,
    })
}

type Case = (&'static str, fn(&mut dyn Executor) -> Result<Outcome>);

fn cases() -> Vec<Case> {
    vec![
        ("dot_rows_f32", dot),
        ("fp8_e4m3 quantize", fp8_quantize),
        ("fp8_e4m3 dequantize", fp8_dequantize),
        ("score_block_f32", score_block),
        ("score route top-4", score_route),
    ]
}

fn main() -> ExitCode {
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
    let (mut ex, backend): (Box<dyn Executor>, String) = match Gpu::open(0) {
        Ok(gpu) => {
            let name = format!("cuda ({})", gpu.name());
            (Box::new(gpu), name)
        }
        Err(e) => {
            println!("no GPU ({e}); running the exact PTX on the CPU simulator");
            (Box::new(Sim::new(sim_sm)), "sim".to_string())
        }
    };
    let sm = ex.sm();
    println!(
        "ptxsmith demo: target {sm}, backend {backend}, cuda available: {}\n",
        runtime::cuda_available()
    );
    println!(
        "{:<24} {:<7} {:<8} {:>10} {:>10} {:>10}",
        "kernel", "SM", "backend", "elements", "bit-exact", "time"
    );
    let mut all_exact = true;
    for (name, run) in cases() {
        let t = Instant::now();
        match run(&mut *ex) {
            Ok(o) => {
                all_exact &= o.exact;
                let short = backend.split(' ').next().unwrap_or("?");
                println!(
                    "{name:<24} {:<7} {short:<8} {:>10} {:>10} {:>8.1}ms",
                    sm.name(),
                    o.elements,
                    if o.exact { "yes" } else { "NO" },
                    t.elapsed().as_secs_f64() * 1e3
                );
            }
            Err(e) => {
                all_exact = false;
                println!("{name:<24} {:<7} error: {e}", sm.name());
            }
        }
    }
    if all_exact {
        println!("\nevery result equals its host model bit for bit");
        ExitCode::SUCCESS
    } else {
        println!("\nMISMATCH: see the rows above");
        ExitCode::FAILURE
    }
}
