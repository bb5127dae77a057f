//! Simulator throughput in simulated instructions per second
//! (`Throughput::Elements(instructions per launch)`): with checks on (the
//! default) on one worker thread (`checks_on`) and on every core
//! (`checks_on_all_cores`), and with checks off on one thread.
//!
//! `cargo bench --bench sim`

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ptxsmith::Sm;
use ptxsmith::dsl::params::ArgValue;
use ptxsmith::runtime::exec::LaunchConfig;
use ptxsmith::sim::{Program, Sim, SimOptions};

type ArgsFn = Box<dyn Fn(&mut Sim) -> Vec<ArgValue>>;

struct Case {
    name: &'static str,
    ptx: &'static str,
    entry: &'static str,
    cfg: LaunchConfig,
    args: ArgsFn,
}

fn cases() -> Vec<Case> {
    let n: u32 = 1 << 18;
    vec![
        Case {
            name: "dot",
            ptx: include_str!("../tests/ptx/dot.ptx"),
            entry: "dot",
            cfg: LaunchConfig::linear(32, 256),
            args: Box::new(move |s: &mut Sim| {
                let x = s.alloc(4 * n as usize).unwrap();
                let y = s.alloc(4 * n as usize).unwrap();
                let p = s.alloc(4 * 32).unwrap();
                let v: Vec<u8> = (0..n)
                    .flat_map(|i| (i as f32 * 1e-3).to_le_bytes())
                    .collect();
                s.write(x, &v).unwrap();
                s.write(y, &v).unwrap();
                vec![
                    ArgValue::Ptr(x),
                    ArgValue::Ptr(y),
                    ArgValue::Ptr(p),
                    ArgValue::U32(n),
                ]
            }),
        },
        Case {
            name: "saxpy",
            ptx: include_str!("../tests/ptx/saxpy.ptx"),
            entry: "saxpy",
            cfg: LaunchConfig::linear(n / 256, 256),
            args: Box::new(move |s: &mut Sim| {
                let x = s.alloc_zeroed(4 * n as usize).unwrap();
                let y = s.alloc_zeroed(4 * n as usize).unwrap();
                vec![
                    ArgValue::Ptr(x),
                    ArgValue::Ptr(y),
                    ArgValue::F32(2.0),
                    ArgValue::U32(n),
                ]
            }),
        },
        Case {
            name: "block_sum",
            ptx: include_str!("../tests/ptx/reduce.ptx"),
            entry: "block_sum",
            cfg: LaunchConfig::linear(n / 256, 256),
            args: Box::new(move |s: &mut Sim| {
                let x = s.alloc_zeroed(4 * n as usize).unwrap();
                let o = s.alloc(4 * (n / 256) as usize).unwrap();
                vec![ArgValue::Ptr(x), ArgValue::Ptr(o)]
            }),
        },
    ]
}

fn bench(c: &mut Criterion) {
    for case in cases() {
        let prog = Program::parse(case.ptx).unwrap();
        for (name, checks, threads) in [
            ("checks_on", true, 1),
            ("checks_on_all_cores", true, 0),
            ("checks_off", false, 1),
        ] {
            let mut sim = Sim::new(Sm::Sm80);
            sim.set_options(SimOptions {
                checks,
                threads,
                ..Default::default()
            });
            let args = (case.args)(&mut sim);
            let instructions = sim
                .launch_program(&prog, case.entry, case.cfg, &args)
                .unwrap()
                .instructions;
            let mut g = c.benchmark_group(format!("sim/{}", case.name));
            g.throughput(Throughput::Elements(instructions));
            g.sample_size(10);
            g.bench_function(name, |b| {
                b.iter(|| {
                    sim.launch_program(&prog, case.entry, case.cfg, &args)
                        .unwrap()
                })
            });
            g.finish();
        }
    }
}

/// The library's own DSL-generated kernels through the `Context` path
/// (uploads, launches and downloads included), checks on, on one worker
/// thread and on every core; throughput is the simulated instruction count
/// of one run.
fn bench_library(c: &mut Criterion) {
    use ptxsmith::kernels::{dot, fp8, score};
    use ptxsmith::runtime::{Context, Stream};
    type Run = Box<dyn Fn(&Stream)>;
    let (rows, n) = (256usize, 256usize);
    let x: Vec<f32> = (0..rows * n)
        .map(|i| ((i * 7919) % 1000) as f32 * 1e-3 - 0.5)
        .collect();
    let y: Vec<f32> = x[..n].to_vec();
    let xs: Vec<f32> = x.iter().map(|v| v * 900.0).collect();
    let (sr, sk, sp) = (64usize, 512usize, 64usize);
    let sx: Vec<f32> = x[..sr * sp].to_vec();
    let sd: Vec<f32> = x[..sk * sp].to_vec();
    let runs: Vec<(&str, Run)> = vec![
        (
            "dot_rows_f32",
            Box::new(move |s: &Stream| {
                dot::dot_rows_on(s, dot::Shape { rows, n }, &x, &y).unwrap();
            }),
        ),
        (
            "fp8_quantize_sw_sm80",
            Box::new(move |s: &Stream| {
                fp8::launch::quantize_on(
                    s,
                    ptxsmith::kernels::fp8::Encoding {
                        format: fp8::Format::E4M3,
                        codec: fp8::ptx::Codec::Software,
                    },
                    &xs,
                )
                .unwrap();
            }),
        ),
        (
            "score_block_f32",
            Box::new(move |s: &Stream| {
                score::launch::score_block_on(
                    s,
                    score::ScoreShape {
                        rows: sr,
                        k: sk,
                        p: sp,
                    },
                    None,
                    &sx,
                    &sd,
                )
                .unwrap();
            }),
        ),
    ];
    for (name, run) in runs {
        let mut g = c.benchmark_group(format!("sim/library/{name}"));
        g.sample_size(10);
        for (label, threads) in [("checks_on", 1), ("checks_on_all_cores", 0)] {
            let ctx = Context::sim(Sm::Sm80);
            ctx.with_sim(|s| {
                s.set_options(SimOptions {
                    threads,
                    ..s.options()
                })
            });
            let st = ctx.default_stream();
            run(&st);
            let instructions = ctx.with_sim(|s| s.total_instructions()).unwrap_or(0);
            g.throughput(Throughput::Elements(instructions));
            g.bench_function(label, |b| b.iter(|| run(&st)));
        }
        g.finish();
    }
}

criterion_group!(benches, bench, bench_library);
criterion_main!(benches);
