//! The latency probes (`ptxsmith::testing::calibrate`): on the simulator
//! with the scoreboard on, each probe's clocks a link are the scoreboard's
//! latency plus the link's own issue slots and index arithmetic (so the
//! probe times what it says); on a GPU (or the driver emulator) every
//! probe runs and its figure is printed (`--nocapture`).

use ptxsmith::Sm;
use ptxsmith::runtime::Context;
use ptxsmith::testing::calibrate::{Probe, measure};
use ptxsmith::testing::{cuda_for_tests, on_emulator};

/// What a link adds to the probe's latency on the scoreboard, at most:
/// its issue slot, the loads' index arithmetic (a shift and an add, or a
/// wide multiply-add: 4 clocks each), the loop's test and increment
/// shared by 16 links.
const SLACK: f64 = 10.0;

#[test]
fn the_scoreboard_times_its_own_latencies() {
    for sm in [Sm::Sm80, Sm::Sm90] {
        let ctx = Context::sim(sm);
        ctx.with_sim(|s| s.set_timing(true)).unwrap();
        for probe in Probe::ALL.into_iter().filter(|p| p.runs_on(sm)) {
            let got = measure(&ctx, probe).unwrap();
            let want = probe.model_clocks() as f64;
            println!(
                "{sm} {:<55} {got:7.2} clocks a link (model {want})",
                probe.name()
            );
            assert!(
                want <= got && got <= want + SLACK,
                "{sm} {}: {got} clocks a link, the scoreboard's latency is {want}",
                probe.name()
            );
        }
    }
}

#[test]
fn without_the_scoreboard_the_clock_is_a_counter() {
    // One read a clock tick: the two reads around the chain differ by one
    // whatever the chain, so a link costs nothing.
    let ctx = Context::sim(Sm::Sm90);
    assert_eq!(measure(&ctx, Probe::GlobalLoad).unwrap(), 0.0);
}

#[test]
fn the_cluster_probe_is_refused_without_clusters() {
    let ctx = Context::sim(Sm::Sm80);
    let e = measure(&ctx, Probe::ClusterBarrier).unwrap_err();
    assert!(e.to_string().contains("sm_90"), "{e}");
    assert!(Probe::ClusterBarrier.kernel(Sm::Sm80).is_err());
}

#[test]
fn gpu_latency_probes() {
    let Some(ctx) = cuda_for_tests() else { return };
    let sm = ctx.sm();
    for probe in Probe::ALL.into_iter().filter(|p| p.runs_on(sm)) {
        let got = measure(&ctx, probe).unwrap();
        println!(
            "{sm} {:<55} {got:8.2} clocks a link (the scoreboard: {})",
            probe.name(),
            probe.model_clocks()
        );
        if on_emulator(&ctx) {
            // the emulator's simulator keeps no scoreboard: a counter
            assert_eq!(got, 0.0, "{}", probe.name());
        } else {
            assert!(got > 0.0, "{}: {got}", probe.name());
        }
    }
}

#[test]
fn probes_assemble_on_every_target() {
    let Some(tools) = ptxsmith::nvtools::NvTools::for_tests() else {
        return;
    };
    for sm in Sm::ALL {
        for probe in Probe::ALL.into_iter().filter(|p| p.runs_on(sm)) {
            let m = probe.kernel(sm).unwrap();
            let asm = (tools.assemble(&m.ptx, sm))
                .unwrap_or_else(|e| panic!("{sm} {}: ptxas: {e}", probe.entry()));
            let usage = asm.entry().expect("a resource report");
            assert_eq!(usage.spill_stores_bytes, 0, "{sm} {}", probe.entry());
        }
    }
}
