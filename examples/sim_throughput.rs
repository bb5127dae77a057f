//! One timed run of each simulator benchmark kernel (the cases of
//! `benches/sim.rs`), for profilers: criterion's repeated sampling makes
//! callgrind and `perf` output hard to compare, this runs each case a fixed
//! number of times and prints simulated instructions, seconds and
//! instructions per second.
//!
//! ```text
//! cargo run --release --example sim_throughput -- [--case NAME] [--reps N] [--rows R] [--no-checks] [--split] [--thread-order]
//! valgrind --tool=callgrind target/release/examples/sim_throughput --case dot --reps 1
//! ```
//!
//! Each line gives the wall time and, on Linux, the CPU time of the process
//! (all its threads, from `/proc/self/task/*/schedstat`), which the other
//! processes of a loaded machine do not inflate: instructions per CPU
//! second is the per-core throughput.
//!
//! Cases: `dot`, `saxpy`, `block_sum` (hand-written PTX in `tests/ptx/`) and
//! `library_dot`, `library_fp8`, `library_score` (DSL kernels through the
//! `Context` path). Without `--case` every case runs. `--thread-order`
//! turns the lockstep schedule off ([`SimOptions::lockstep`]): each block's
//! threads one after another, the order whose results lockstep keeps.
//! `--rows` sets `library_dot`'s rows (default 256, i.e. two blocks of 128
//! rows; the other cases keep their shapes).
//!
//! [`SimOptions::lockstep`]: ptxsmith::sim::SimOptions::lockstep

use std::time::Instant;

/// CPU time of each thread of this process so far, in seconds, by thread
/// id (Linux; `None` elsewhere).
fn thread_cpu() -> Option<std::collections::BTreeMap<String, f64>> {
    let mut m = std::collections::BTreeMap::new();
    for t in std::fs::read_dir("/proc/self/task").ok()? {
        let path = t.ok()?.path();
        let s = std::fs::read_to_string(path.join("schedstat")).ok()?;
        let ns = s.split_whitespace().next()?.parse::<u64>().ok()?;
        m.insert(
            path.file_name()?.to_string_lossy().into_owned(),
            ns as f64 * 1e-9,
        );
    }
    Some(m)
}

/// CPU time of this process so far, in seconds (Linux; `None` elsewhere).
fn cpu_seconds() -> Option<f64> {
    Some(thread_cpu()?.values().sum())
}

/// The CPU time each thread spent since `before`: (the calling thread's,
/// the busiest other thread's). On an idle machine with a core per thread
/// the wall time is about their sum: the caller's serial part (setup, the
/// ordered walk) plus the slowest worker.
fn split_cpu(before: &std::collections::BTreeMap<String, f64>) -> Option<(f64, f64)> {
    let now = thread_cpu()?;
    let me = std::fs::read_link("/proc/thread-self").ok()?;
    let me = me.file_name()?.to_string_lossy().into_owned();
    let mut main = 0.0;
    let mut busiest: f64 = 0.0;
    for (tid, c) in now {
        let d = c - before.get(&tid).copied().unwrap_or(0.0);
        if tid == me {
            main = d;
        } else {
            busiest = busiest.max(d);
        }
    }
    Some((main, busiest))
}

use ptxsmith::Sm;
use ptxsmith::dsl::params::ArgValue;
use ptxsmith::kernels::{dot, fp8, score};
use ptxsmith::runtime::Context;
use ptxsmith::runtime::exec::LaunchConfig;
use ptxsmith::sim::{Program, Sim};

/// Whether to use the lockstep schedule (not with `--thread-order`).
fn lockstep() -> bool {
    !std::env::args().any(|a| a == "--thread-order")
}

/// With `--split`, print the caller's and the busiest worker's CPU time.
fn report_split(before: Option<std::collections::BTreeMap<String, f64>>) {
    if std::env::args().any(|a| a == "--split")
        && let Some((main, worker)) = before.as_ref().and_then(split_cpu)
    {
        print!("[caller {main:.3} s + busiest worker {worker:.3} s CPU] ");
    }
}

fn ptx_case(name: &str, checks: bool, reps: u32) -> Option<(u64, f64, Option<f64>)> {
    let n: u32 = 1 << 18;
    let (ptx, entry, cfg) = match name {
        "dot" => (
            include_str!("../tests/ptx/dot.ptx"),
            "dot",
            LaunchConfig::linear(32, 256),
        ),
        "saxpy" => (
            include_str!("../tests/ptx/saxpy.ptx"),
            "saxpy",
            LaunchConfig::linear(n / 256, 256),
        ),
        "block_sum" => (
            include_str!("../tests/ptx/reduce.ptx"),
            "block_sum",
            LaunchConfig::linear(n / 256, 256),
        ),
        _ => return None,
    };
    let prog = Program::parse(ptx).unwrap();
    let mut s = Sim::new(Sm::Sm80);
    s.set_checks(checks);
    s.set_options(ptxsmith::sim::SimOptions {
        lockstep: lockstep(),
        ..s.options()
    });
    let args = match name {
        "dot" => {
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
        }
        "saxpy" => {
            let x = s.alloc_zeroed(4 * n as usize).unwrap();
            let y = s.alloc_zeroed(4 * n as usize).unwrap();
            vec![
                ArgValue::Ptr(x),
                ArgValue::Ptr(y),
                ArgValue::F32(2.0),
                ArgValue::U32(n),
            ]
        }
        _ => {
            let x = s.alloc_zeroed(4 * n as usize).unwrap();
            let o = s.alloc(4 * (n / 256) as usize).unwrap();
            vec![ArgValue::Ptr(x), ArgValue::Ptr(o)]
        }
    };
    let (t0, c0, before) = (Instant::now(), cpu_seconds(), thread_cpu());
    let mut instructions = 0;
    for _ in 0..reps {
        instructions += s
            .launch_program(&prog, entry, cfg, &args)
            .unwrap()
            .instructions;
    }
    let cpu = c0.and_then(|c| Some(cpu_seconds()? - c));
    report_split(before);
    Some((instructions, t0.elapsed().as_secs_f64(), cpu))
}

fn library_case(name: &str, reps: u32, dot_rows: usize) -> Option<(u64, f64, Option<f64>)> {
    let (rows, n) = (256usize, 256usize);
    let x: Vec<f32> = (0..dot_rows.max(rows) * n)
        .map(|i| ((i * 7919) % 1000) as f32 * 1e-3 - 0.5)
        .collect();
    let xs: Vec<f32> = x[..rows * n].iter().map(|v| v * 900.0).collect();
    let y: Vec<f32> = x[..n].to_vec();
    let (sr, sk, sp) = (64usize, 512usize, 64usize);
    let sx: Vec<f32> = x[..sr * sp].to_vec();
    let sd: Vec<f32> = x[..sk * sp].to_vec();
    let ctx = Context::sim(Sm::Sm80);
    ctx.with_sim(|s| {
        s.set_options(ptxsmith::sim::SimOptions {
            lockstep: lockstep(),
            ..s.options()
        })
    })
    .unwrap();
    let st = ctx.default_stream();
    let run = || match name {
        "library_dot" => {
            let shape = dot::Shape { rows: dot_rows, n };
            dot::dot_rows_on(&st, shape, &x[..dot_rows * n], &y).unwrap();
        }
        "library_fp8" => {
            let enc = fp8::Encoding {
                format: fp8::Format::E4M3,
                codec: fp8::Codec::Software,
            };
            fp8::quantize_on(&st, enc, &xs).unwrap();
        }
        _ => {
            let shape = score::ScoreShape {
                rows: sr,
                k: sk,
                p: sp,
            };
            score::score_block_on(&st, shape, None, &sx, &sd).unwrap();
        }
    };
    if !matches!(name, "library_dot" | "library_fp8" | "library_score") {
        return None;
    }
    let (t0, c0, before) = (Instant::now(), cpu_seconds(), thread_cpu());
    for _ in 0..reps {
        run();
    }
    let secs = t0.elapsed().as_secs_f64();
    let cpu = c0.and_then(|c| Some(cpu_seconds()? - c));
    report_split(before);
    Some((
        ctx.with_sim(|s| s.total_instructions()).unwrap_or(0),
        secs,
        cpu,
    ))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut case: Option<String> = None;
    let mut reps = 3u32;
    let mut rows = 256usize;
    let mut checks = true;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--case" => {
                i += 1;
                case = args.get(i).cloned();
            }
            "--reps" => {
                i += 1;
                reps = args.get(i).and_then(|v| v.parse().ok()).unwrap_or(reps);
            }
            "--rows" => {
                i += 1;
                rows = args.get(i).and_then(|v| v.parse().ok()).unwrap_or(rows);
            }
            "--no-checks" => checks = false,
            "--split" | "--thread-order" => {}
            other => {
                eprintln!("unknown argument `{other}`");
                std::process::exit(2);
            }
        }
        i += 1;
    }
    let all = [
        "dot",
        "saxpy",
        "block_sum",
        "library_dot",
        "library_fp8",
        "library_score",
    ];
    let names: Vec<&str> = match &case {
        Some(c) => vec![c.as_str()],
        None => all.to_vec(),
    };
    for name in names {
        let Some((instr, secs, cpu)) =
            ptx_case(name, checks, reps).or_else(|| library_case(name, reps, rows))
        else {
            eprintln!("unknown case `{name}` (cases: {all:?})");
            std::process::exit(2);
        };
        let per_cpu = cpu.map_or(String::from("-"), |c| {
            format!(
                "{c:7.3} s CPU {:7.1} M/s per CPU-second",
                instr as f64 / c / 1e6
            )
        });
        println!(
            "{name:14} {instr:>11} instructions {secs:7.3} s wall {:7.1} M/s, {per_cpu}",
            instr as f64 / secs / 1e6
        );
    }
}
