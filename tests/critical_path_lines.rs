//! The critical path attributed by PTX line (`Sim::set_timing_by_line`) on
//! the HMM cluster recursions (two launches, and the joint launch) and the
//! Viterbi kernel at S 256 on sm_90:
//! every kernel's lines add up to its critical path, and the lines that
//! carry a step (the difference between `T 8` and `T 4`, a quarter of it
//! a step) are printed (`--nocapture`) for `docs/perf.md` ("Where the
//! critical path goes").

use std::collections::BTreeMap;

use ptxsmith::Sm;
use ptxsmith::kernels::viterbi;
use ptxsmith::runtime::Context;
use ptxsmith::sim::PathLine;

mod hmm_common;
use hmm_common::issue_model;
use hmm_common::recursions::{Recursions, recursion_outputs_in};

/// Per kernel: its critical path and lines, after `run` in a simulator of
/// sm_90 with attribution on; each kernel's lines sum to its path.
fn attributed(run: impl FnOnce(&Context)) -> BTreeMap<String, (u64, Vec<PathLine>)> {
    let ctx = Context::sim(Sm::Sm90);
    ctx.with_sim(|s| s.set_timing_by_line(true)).unwrap();
    run(&ctx);
    let got = ctx
        .with_sim(|s| {
            s.critical_path_lines_by_kernel()
                .map(|(k, c, v)| (k.to_string(), (c, v.to_vec())))
                .collect::<BTreeMap<_, _>>()
        })
        .unwrap();
    for (k, (c, v)) in &got {
        let sum: u64 = v.iter().map(PathLine::clocks).sum();
        assert_eq!(sum, *c, "{k}");
    }
    got
}

/// Prints `kernel`'s clocks a step (T 8 less T 4, over 4) and its lines
/// that carry the most of them.
fn per_step(kernel: &str, short: &(u64, Vec<PathLine>), long: &(u64, Vec<PathLine>)) {
    let (steps, top) = (4.0, 14);
    let step = (long.0 as f64 - short.0 as f64) / steps;
    eprintln!(
        "{kernel}: {} clocks at T 4, {} at T 8: {step:.0} a step",
        short.0, long.0
    );
    let mut d: BTreeMap<u32, (String, [i64; 3])> = BTreeMap::new();
    for (sign, v) in [(1i64, &long.1), (-1, &short.1)] {
        for l in v {
            let e = d.entry(l.line).or_insert((l.text.clone(), [0; 3]));
            e.1[0] += sign * l.issue as i64;
            e.1[1] += sign * l.wait as i64;
            e.1[2] += sign * l.join as i64;
        }
    }
    // by opcode (issue, wait, join a step)
    let mut ops: BTreeMap<String, [i64; 3]> = BTreeMap::new();
    for (text, c) in d.values() {
        let op = text.split_whitespace().next().unwrap_or("");
        let op = if op.starts_with('@') {
            text.split_whitespace().nth(1).unwrap_or("")
        } else {
            op
        };
        let key: Vec<&str> = op.split('.').take(2).collect();
        let e = ops.entry(key.join(".")).or_default();
        for k in 0..3 {
            e[k] += c[k];
        }
    }
    let mut o: Vec<_> = ops.into_iter().collect();
    o.sort_by_key(|(_, c)| -(c.iter().sum::<i64>()));
    let o: Vec<String> = (o.iter().take(10))
        .map(|(k, c)| {
            format!(
                "{k} {:.0}/{:.0}/{:.0}",
                c[0] as f64 / steps,
                c[1] as f64 / steps,
                c[2] as f64 / steps
            )
        })
        .collect();
    eprintln!("  by opcode (issue/wait/join a step): {}", o.join(", "));
    let mut v: Vec<_> = d.into_iter().collect();
    v.sort_by_key(|(_, (_, c))| -(c.iter().sum::<i64>()));
    for (line, (text, c)) in v.iter().take(top) {
        let f = |x: i64| x as f64 / steps;
        let all = f(c.iter().sum());
        eprintln!(
            "  {all:7.1} ({:5.1} issue {:7.1} wait {:6.1} join)  line {line}: {text}",
            f(c[0]),
            f(c[1]),
            f(c[2])
        );
    }
}

#[test]
fn hmm_cluster_recursions_by_line() {
    let runs: Vec<_> = [4, 8]
        .map(|t| {
            let m = issue_model(1, t, 256, 7, false);
            attributed(|ctx| {
                recursion_outputs_in(ctx, &m, Sm::Sm90, Recursions::Cluster(8));
            })
        })
        .into_iter()
        .collect();
    for k in [
        "hmm_forward_cluster8_cap256",
        "hmm_backward_cluster8_cap256",
    ] {
        let (a, b) = (&runs[0][k], &runs[1][k]);
        assert!(b.0 > a.0, "{k}: {} {}", a.0, b.0);
        per_step(k, a, b);
    }
}

/// The joint launch (`hmm_fwdbwd_cluster8_cap256`, one sequence: the
/// forward in one cluster, the backward in the other, so its path is the
/// longer half's) at S 256 on sm_90.
#[test]
fn hmm_joint_recursion_by_line() {
    let runs: Vec<_> = [4, 8]
        .map(|t| {
            let m = issue_model(1, t, 256, 7, false);
            attributed(|ctx| {
                recursion_outputs_in(ctx, &m, Sm::Sm90, Recursions::Joint(8));
            })
        })
        .into_iter()
        .collect();
    let k = "hmm_fwdbwd_cluster8_cap256";
    let (a, b) = (&runs[0][k], &runs[1][k]);
    assert!(b.0 > a.0, "{k}: {} {}", a.0, b.0);
    per_step(k, a, b);
}

#[test]
fn viterbi_by_line() {
    let runs: Vec<_> = [4, 8]
        .map(|t| {
            let m = issue_model(1, t, 256, 9, false);
            attributed(|ctx| {
                let st = ctx.default_stream();
                let shape = viterbi::Shape {
                    batch: 1,
                    t,
                    s: 256,
                };
                viterbi::viterbi_on(&st, shape, &m.lengths, &m.pi, &m.a, &m.b).unwrap();
            })
        })
        .into_iter()
        .collect();
    let names: Vec<&String> = runs[1].keys().collect();
    assert!(!names.is_empty());
    for k in names {
        if let (Some(a), Some(b)) = (runs[0].get(k), runs[1].get(k)) {
            per_step(k, a, b);
        }
    }
}
