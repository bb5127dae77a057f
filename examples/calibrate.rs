//! Time the latencies the simulator's critical-path scoreboard assumes
//! (`ptxsmith::testing::calibrate`): each probe on the simulator with the
//! scoreboard on and, when a CUDA device is present, on the GPU, side by
//! side in clocks a link. The device suite runs it on a lent GPU;
//! `docs/perf.md` ("Calibrating the scoreboard") says what each figure
//! would change.
//!
//! ```text
//! cargo run --release --example calibrate
//! ```

use std::process::ExitCode;

use ptxsmith::Sm;
use ptxsmith::runtime::Context;
use ptxsmith::testing::calibrate::{Probe, measure};

fn main() -> ExitCode {
    let gpu = Context::cuda(0).ok();
    let sm = gpu.as_ref().map_or(Sm::Sm90, Context::sm);
    let sim = Context::sim(sm);
    sim.with_sim(|s| s.set_timing(true));
    match gpu.as_ref().and_then(Context::info) {
        Some(i) => println!("GPU: {} ({sm})", i.name),
        None => println!("no CUDA device: the simulator's figures alone ({sm})"),
    }
    println!("| probe | scoreboard latency | simulator, clocks a link | GPU, clocks a link |");
    println!("|---|---:|---:|---:|");
    let mut failed = false;
    for probe in Probe::ALL.into_iter().filter(|p| p.runs_on(sm)) {
        let cell = |ctx: &Context| match measure(ctx, probe) {
            Ok(c) => format!("{c:.1}"),
            Err(e) => {
                eprintln!("{}: {e}", probe.name());
                "failed".to_string()
            }
        };
        let s = cell(&sim);
        let g = gpu.as_ref().map_or("–".to_string(), cell);
        failed |= s == "failed" || g == "failed";
        println!(
            "| {} | {} | {s} | {g} |",
            probe.name(),
            probe.model_clocks()
        );
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
