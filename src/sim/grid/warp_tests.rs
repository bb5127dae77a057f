//! The per-warp counts of a launch ([`crate::sim::LaunchReport::heaviest_warp`]):
//! one warp a CTA runs a loop about ten times longer than the others, in
//! every schedule (workers, thread order and lockstep, clusters).

use crate::exec::LaunchConfig;
use crate::sim::{Sim, SimOptions};

/// Warp 0 of CTA `c` loops `10 + c` times, the other warps once; reads
/// `%cluster_ctarank` (so that a launch in clusters runs cluster by
/// cluster) when `cluster`.
fn uneven_warps(cluster: bool) -> String {
    let (target, attr, rank) = if cluster {
        (
            ".version 7.8\n.target sm_90",
            ".reqnctapercluster 2, 1, 1",
            "mov.u32 %r4, %cluster_ctarank;",
        )
    } else {
        (".version 7.0\n.target sm_80", "", "")
    };
    format!(
        "{target}\n.address_size 64\n.visible .entry warps() {attr}\n{{\n\
         .reg .b32 %r<5>;\n.reg .pred %p<2>;\n{rank}\n\
         mov.u32 %r0, %tid.x;\nshr.u32 %r0, %r0, 5;\nmov.u32 %r2, 1;\n\
         setp.ne.u32 %p0, %r0, 0;\n@%p0 bra $GO;\n\
         mov.u32 %r3, %ctaid.x;\nadd.u32 %r2, %r3, 10;\n\
         $GO:\nmov.u32 %r1, 0;\n\
         $LOOP:\nadd.u32 %r1, %r1, 1;\nsetp.lt.u32 %p1, %r1, %r2;\n@%p1 bra $LOOP;\n\
         ret;\n}}\n"
    )
}

#[test]
fn the_report_names_the_heaviest_warp() {
    for cluster in [false, true] {
        let ptx = uneven_warps(cluster);
        let rank = u64::from(cluster);
        // a light warp's thread: 5 + 1 + 3 + 1 instructions (and the
        // rank's `mov`); warp 0 of CTA c: 2 more and 3 (9 + c) more
        let light = 10 + rank;
        let heavy = |c: u64| light + 2 + 3 * (9 + c);
        for (threads, lockstep, checks) in [
            (1, false, true),
            (1, true, true),
            (3, true, true),
            (2, false, false),
        ] {
            let mut sim = Sim::new(if cluster {
                crate::Sm::Sm90
            } else {
                crate::Sm::Sm80
            });
            sim.set_options(SimOptions {
                threads,
                lockstep,
                checks,
                ..sim.options()
            });
            let prog = sim.program(&ptx).unwrap();
            let g = 6u64;
            // 4 warps a CTA, the last one partial (8 threads)
            let r = sim
                .launch_program(&prog, "warps", LaunchConfig::linear(g as u32, 104), &[])
                .unwrap();
            let at = format!("cluster {cluster}, {threads} threads, lockstep {lockstep}");
            let total: u64 = (0..g).map(|c| 32 * heavy(c) + 72 * light).sum();
            assert_eq!(r.instructions, total, "{at}");
            assert_eq!(r.heaviest_warp, 32 * heavy(g - 1), "{at}");
            assert_eq!(r.heaviest_warp_at, (g - 1, 0), "{at}");
            assert_eq!(sim.last_launch_heaviest_warp(), r.heaviest_warp);
            // its loop 15 times a light one's: above 4 times its count
            assert!(r.heaviest_warp > 4 * 32 * light, "{at}");
            // two CTAs of two warps: the second CTA's warp 0
            let one = sim
                .launch_program(&prog, "warps", LaunchConfig::linear(2, 64), &[])
                .unwrap();
            assert_eq!(one.heaviest_warp, 32 * heavy(1), "{at}");
            assert_eq!(one.heaviest_warp_at, (1, 0), "{at}");
        }
    }
}

#[test]
fn ties_name_the_first_warp() {
    let mut sim = Sim::new(crate::Sm::Sm80);
    let prog = sim
        .program(
            ".version 7.0\n.target sm_80\n.address_size 64\n\
             .visible .entry nop()\n{\nret;\n}\n",
        )
        .unwrap();
    let r = sim
        .launch_program(&prog, "nop", LaunchConfig::linear(5, 96), &[])
        .unwrap();
    assert_eq!((r.heaviest_warp, r.heaviest_warp_at), (32, (0, 0)));
    assert_eq!(r.heaviest_block, 96);
}
