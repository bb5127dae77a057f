//! The roofline model's extrapolation: each problem's basis, fitted on its
//! sample shapes, predicts the simulator's dynamic counts on a further
//! shape (`Problem::check`) it was not fitted on (the PTX and FP32 counts,
//! the heaviest CTA's count times the CTAs, whose ratio to the PTX count
//! is the speed model's skew, and the heaviest warp's count times the
//! warps, a diagnostic of the chain kernels' latency); and its full-size launch
//! sequence (a dry run through the family's launch code) matches the
//! kernels its traffic list names. No NVIDIA tools needed.

use std::fmt::Write as _;

use ptxsmith::Sm;
use ptxsmith::report::hardware::H100_SXM;
use ptxsmith::report::roofline::{problems, speed};
use rayon::prelude::*;

/// Relative error allowed. Most kernels' counts are exactly linear in their
/// basis (0.00 %); the routed top-s merge depends on the data (how many
/// candidates each split contributes), about 4 % off on the check shape.
const TOLERANCE: f64 = 0.05;

/// `(problem prefix, kernel, why)`: kernels whose heaviest CTA the
/// extrapolation does not predict on the check shape, and why the full
/// size's skew is still what the model needs (or does not matter there).
const SKEW_UNCHECKED: &[(&str, &str, &str)] = &[
    (
        "routed top-4",
        "score_route_merge_f32",
        "data-dependent: how many candidates each split contributes (its PTX \
         count is 4 % off too)",
    ),
    (
        "forward [1, 2^24]",
        "lcse_fwd_split",
        "tiles taken by ticket: the simulator runs the CTAs in order, so its \
         first CTA takes every ticket (skew = the CTA count); the model takes \
         the skew as 1 (`speed::TICKET_KERNELS`), what the tickets give on a GPU",
    ),
    (
        "tensor-core grad-values bf16, 2048 → 2048, B 32",
        "block_ell_tc_grad_values_bf16_b32",
        "data-dependent: a CTA's work items are tile parts of the topology with \
         different numbers of filled slots; at the full size its CTAs are \
         L2-bound, the issue term (the one the skew enters) well below",
    ),
];

/// `(problem prefix, kernel, why)`: chain kernels whose heaviest warp the
/// extrapolation does not predict on the check shape, and why the full
/// size's is still what the model needs (or does not matter there). Only
/// the chain kernels (`speed::is_chain`) are checked: the heaviest warp is
/// a diagnostic of their latency (it does not enter the model), and some other kernels' warps take
/// data-dependent work (the routed merge's candidates, the block-ELL
/// tensor-core kernels' filled slots per warp), which no basis predicts.
const WARP_UNCHECKED: &[(&str, &str, &str)] = &[(
    "forward [1, 2^24]",
    "lcse_fwd_split",
    "tiles taken by ticket: the simulated first CTA takes every ticket, so \
     its heaviest warp is a share of the whole launch (10 % off on the \
     check shape, as its CTA skew); the heaviest warp over that CTA's \
     mean warp is the work's shape within a CTA, which the tickets do not \
     change",
)];

/// `(problem prefix, kernel, why)`: chain kernels whose critical path
/// (CTAs × its clocks, `Fit::critical_path`) the extrapolation does not
/// predict on the check shape, and why.
const PATH_UNCHECKED: &[(&str, &str, &str)] = &[(
    "forward [1, 2^24]",
    "lcse_fwd_split",
    "tiles taken by ticket: the simulated first CTA takes every ticket, so \
     its critical path is the whole launch's work in one CTA (10 % off on \
     the check shape, as its CTA skew); the model takes its path over its \
     CTA skew (`speed::ticket_skew`)",
)];

#[test]
fn every_problem_basis_predicts_its_check_shape() {
    // (problem, SM count) jobs on every core (rayon) (the simulator runs a
    // launch's CTAs in parallel, but the small check shapes leave a core
    // idle); the lines are printed in job order.
    let all = problems::all();
    let mut jobs = Vec::new();
    for (i, p) in all.iter().enumerate() {
        // Problems with a per-thread term are also checked with grids
        // capped by a small SM count (2 SMs).
        jobs.push((i, H100_SXM.sms));
        if p.capped.is_some() {
            jobs.push((i, 2));
        }
    }
    let done: Vec<Checked> = (jobs.par_iter()).map(|&(i, n)| check(&all[i], n)).collect();
    let mut worst = 0f64;
    let mut failures = Vec::new();
    for c in done {
        print!("{}", c.lines);
        worst = worst.max(c.worst);
        failures.extend(c.failures);
    }
    println!("worst relative error {:.3} %", 100.0 * worst);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The dry full-size run of every problem on every card launches exactly
/// the kernels its traffic list names (what `generate` relies on).
#[test]
fn full_size_launches_match_the_traffic_lists() {
    for g in ptxsmith::report::hardware::GPUS {
        for p in problems::all() {
            if !p.runs_on(g.sm) {
                // The tensor-core problems below sm_80: the request is
                // refused (and the report's row left empty).
                assert!(
                    ptxsmith::report::roofline::check_traffic(&p, g.sm, g.sms).is_err(),
                    "{} on {}",
                    p.name,
                    g.name
                );
                continue;
            }
            ptxsmith::report::roofline::check_traffic(&p, g.sm, g.sms)
                .unwrap_or_else(|e| panic!("{} on {}: {e}", p.name, g.name));
        }
    }
}

/// What [`check`] found for one problem at one SM count.
#[derive(Default)]
struct Checked {
    /// The table lines it prints.
    lines: String,
    /// Its largest relative error of the PTX count.
    worst: f64,
    failures: Vec<String>,
}

fn check(p: &problems::Problem, sms: u32) -> Checked {
    let mut c = Checked::default();
    let (worst, failures) = (&mut c.worst, &mut c.failures);
    let rows = ptxsmith::report::roofline::check_fit(p, Sm::Sm90, sms, &p.check)
        .unwrap_or_else(|e| panic!("{}: {e}", p.name));
    assert!(!rows.is_empty(), "{}: nothing launched", p.name);
    for r in rows {
        let (k, (ptx, fp32), (ptx_sim, fp32_sim)) = (r.kernel, r.predicted, r.simulated);
        let (heavy, heavy_sim) = r.heaviest;
        let (warp, warp_sim) = r.heaviest_warp;
        let rel = (ptx - ptx_sim).abs() / ptx_sim.max(1.0);
        *worst = worst.max(rel);
        let _ = writeln!(
            c.lines,
            "{:<60} {sms:>3} SMs {k:<40} PTX predicted {ptx:>12.0} simulated {ptx_sim:>12.0} ({:+.2} %), \
             skew predicted {:.4} simulated {:.4}, warp skew predicted {:.4} simulated {:.4}",
            p.name,
            100.0 * (ptx - ptx_sim) / ptx_sim.max(1.0),
            heavy / ptx.max(1.0),
            heavy_sim / ptx_sim.max(1.0),
            warp / ptx.max(1.0),
            warp_sim / ptx_sim.max(1.0),
        );
        // The heaviest CTA (CTAs × its count, `Fit::heaviest`): the skew
        // the speed model takes from it.
        let unchecked = SKEW_UNCHECKED
            .iter()
            .any(|(pp, kk, _)| p.name.starts_with(pp) && *kk == k);
        if !unchecked && (heavy - heavy_sim).abs() >= TOLERANCE * heavy_sim.max(1.0) {
            failures.push(format!(
                "{} / {k} ({sms} SMs): predicted {heavy} for CTAs × the heaviest CTA at {:?}, \
                 the simulator ran {heavy_sim}",
                p.name, p.check
            ));
        }
        // The heaviest warp (warps × its count, `Fit::heaviest_warp`): a
        // diagnostic of the chain kernels' latency.
        let unchecked = !speed::is_chain(&k)
            || WARP_UNCHECKED
                .iter()
                .any(|(pp, kk, _)| p.name.starts_with(pp) && *kk == k);
        if !unchecked && (warp - warp_sim).abs() >= TOLERANCE * warp_sim.max(1.0) {
            failures.push(format!(
                "{} / {k} ({sms} SMs): predicted {warp} for warps × the heaviest warp at {:?}, \
                 the simulator ran {warp_sim}",
                p.name, p.check
            ));
        }
        // The critical path (CTAs × its clocks, `Fit::critical_path`): the
        // chain kernels' latency term.
        let (path, path_sim) = r.critical_path;
        let unchecked = !speed::is_chain(&k)
            || PATH_UNCHECKED
                .iter()
                .any(|(pp, kk, _)| p.name.starts_with(pp) && *kk == k);
        if speed::is_chain(&k) {
            let _ = writeln!(
                c.lines,
                "    critical path × CTAs predicted {path:.0} simulated {path_sim:.0} ({:+.2} %)",
                100.0 * (path - path_sim) / path_sim.max(1.0)
            );
        }
        if !unchecked && (path - path_sim).abs() >= TOLERANCE * path_sim.max(1.0) {
            failures.push(format!(
                "{} / {k} ({sms} SMs): predicted {path} for CTAs × the critical path at {:?}, \
                 the simulator ran {path_sim}",
                p.name, p.check
            ));
        }
        if rel >= TOLERANCE {
            failures.push(format!(
                    "{} / {k} ({sms} SMs): predicted {ptx} PTX instructions at {:?}, the simulator ran {ptx_sim}",
                    p.name, p.check
                ));
        }
        if (fp32 - fp32_sim).abs() > TOLERANCE * fp32_sim + 64.0 {
            failures.push(format!(
                    "{} / {k} ({sms} SMs): predicted {fp32} FP32 instructions at {:?}, the simulator ran {fp32_sim}",
                    p.name, p.check
                ));
        }
    }
    c
}
