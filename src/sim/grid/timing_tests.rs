//! The critical-path scoreboard ([`crate::sim::Sim::set_timing`],
//! `sim::interp::timing`): dependent chains, independent chains, barriers
//! that join a slow warp into the others, and the cluster barrier.

use crate::exec::LaunchConfig;
use crate::sim::interp::timing::{ALU_CLOCKS, BAR_CLOCKS, CLUSTER_BARRIER_CLOCKS};
use crate::sim::{LaunchReport, Sim, SimOptions};

/// A kernel whose threads run `body` after setting up `%f1`–`%f8` (f32)
/// and `%r0` = `%tid.x`, `%r1` = the warp index.
fn kernel(body: &str, cluster: bool) -> String {
    let (target, attr) = if cluster {
        (".version 7.8\n.target sm_90", ".reqnctapercluster 2, 1, 1")
    } else {
        (".version 7.0\n.target sm_80", "")
    };
    format!(
        "{target}\n.address_size 64\n.visible .entry k() {attr}\n{{\n\
         .reg .b32 %r<8>;\n.reg .f32 %f<16>;\n.reg .pred %p<4>;\n\
         mov.u32 %r0, %tid.x;\nshr.u32 %r1, %r0, 5;\n\
         mov.f32 %f1, 0f3F800000;\nmov.f32 %f2, 0f3F800000;\nmov.f32 %f3, 0f3F800000;\n\
         mov.f32 %f4, 0f3F800000;\nmov.f32 %f5, 0f3F800000;\nmov.f32 %f6, 0f3F800000;\n\
         mov.f32 %f7, 0f3F800000;\nmov.f32 %f8, 0f3F800000;\n\
         {body}\nret;\n}}\n"
    )
}

/// Run `ptx` as `grid` blocks of `threads` threads with the scoreboard on,
/// in the schedule `threads_host` / `lockstep` asks for.
fn timed(ptx: &str, grid: u32, threads: u32, host: usize, sm: crate::Sm) -> LaunchReport {
    let mut sim = Sim::new(sm);
    sim.set_options(SimOptions {
        threads: host,
        ..sim.options()
    });
    sim.set_timing(true);
    let prog = sim.program(ptx).unwrap();
    sim.launch_program(&prog, "k", LaunchConfig::linear(grid, threads), &[])
        .unwrap()
}

/// `n` dependent multiply-adds on `%f1`.
fn chain(n: usize) -> String {
    "fma.rn.f32 %f1, %f1, %f2, %f3;\n".repeat(n)
}

/// `n` multiply-adds over four independent accumulators `%f1`, `%f4`,
/// `%f5`, `%f6`, interleaved.
fn four_chains(n: usize) -> String {
    (0..n)
        .map(|i| {
            let a = ["%f1", "%f4", "%f5", "%f6"][i % 4];
            format!("fma.rn.f32 {a}, {a}, %f2, %f3;\n")
        })
        .collect()
}

/// Clusters of 2: rank 0 runs a chain of 200 multiply-adds before the
/// cluster barrier, rank 1 one of 20 after it.
fn cluster_kernel() -> String {
    let body = format!(
        "mov.u32 %r2, %cluster_ctarank;\nsetp.ne.u32 %p0, %r2, 0;\n@%p0 bra $B;\n{}$B:\n\
         barrier.cluster.arrive;\nbarrier.cluster.wait;\n\
         setp.eq.u32 %p1, %r2, 0;\n@%p1 bra $E;\n{}$E:\n",
        chain(200),
        chain(20)
    );
    kernel(&body, true)
}

#[test]
fn a_dependent_chain_takes_its_latency_each() {
    // the prologue: 2 instructions (its `mov`s are free), then the
    // chain; the path ends at the last issue: its first fma, then 109
    // latencies
    let (short, long) = (
        timed(&kernel(&chain(10), false), 1, 32, 1, crate::Sm::Sm80),
        timed(&kernel(&chain(110), false), 1, 32, 1, crate::Sm::Sm80),
    );
    assert_eq!(
        long.critical_path - short.critical_path,
        100 * ALU_CLOCKS,
        "{} {}",
        long.critical_path,
        short.critical_path
    );
    assert!(long.critical_path >= 109 * ALU_CLOCKS);
    assert!(long.critical_path < 110 * ALU_CLOCKS + 20);
}

#[test]
fn independent_chains_overlap() {
    // the same 400 multiply-adds over four chains: a quarter of the
    // clocks (one chain's 100 × 4), not 400 × 4
    let one = timed(&kernel(&chain(400), false), 1, 32, 1, crate::Sm::Sm80);
    let four = timed(&kernel(&four_chains(400), false), 1, 32, 1, crate::Sm::Sm80);
    assert_eq!(one.instructions, four.instructions);
    let (a, b) = (one.critical_path as f64, four.critical_path as f64);
    assert!((b / a - 0.25).abs() < 0.02, "{a} {b}");
}

#[test]
fn loads_issue_once_their_address_is_ready() {
    // n loads from shared memory, each used by the next instruction of a
    // dependent sum: hoisted, the sum's chain (4 a step) sets the path,
    // not a load's latency a step (28 + 4)
    let sums = |n: usize| {
        format!(
            ".shared .align 4 .f32 buf[4];\nst.shared.f32 [buf], %f2;\n{}",
            "ld.shared.f32 %f9, [buf];\nadd.rn.f32 %f1, %f1, %f9;\n".repeat(n)
        )
    };
    // (one thread: the others would race on `buf`)
    let short = timed(&kernel(&sums(10), false), 1, 1, 1, crate::Sm::Sm80);
    let long = timed(&kernel(&sums(110), false), 1, 1, 1, crate::Sm::Sm80);
    assert_eq!(
        long.critical_path - short.critical_path,
        100 * ALU_CLOCKS,
        "{} {}",
        long.critical_path,
        short.critical_path
    );
}

#[test]
fn a_barrier_joins_the_slow_warp_into_the_others() {
    // warp 0 runs a chain of 200 before the barrier, warp 1 one of 20
    // after it: warp 1 ends the barrier's cost and its 20 after warp 0's
    // chain; without the join it would end after its own 20 only
    let body = format!(
        "setp.ne.u32 %p0, %r1, 0;\n@%p0 bra $B;\n{}$B:\nbar.sync 0;\n\
         setp.eq.u32 %p1, %r1, 0;\n@%p1 bra $E;\n{}$E:\n",
        chain(200),
        chain(20)
    );
    for host in [1, 2] {
        let r = timed(&kernel(&body, false), 3, 64, host, crate::Sm::Sm80);
        let p = r.critical_path;
        let lo = 220 * ALU_CLOCKS + BAR_CLOCKS;
        assert!(p >= lo && p < lo + 30, "{p} (at least {lo})");
        // a thread of warp 1, in the first block on ties
        assert_eq!(r.critical_path_at, (0, 32), "{p}");
        // a partial barrier (a thread count) joins alike
        let partial = body.replace("bar.sync 0;", "bar.sync 0, 64;");
        let q = timed(&kernel(&partial, false), 1, 64, host, crate::Sm::Sm80);
        assert_eq!(q.critical_path, p);
    }
}

#[test]
fn the_cluster_barrier_joins_the_cluster() {
    let r = timed(&cluster_kernel(), 4, 32, 1, crate::Sm::Sm90);
    let p = r.critical_path;
    // (the chains' first multiply-adds issue at once: 219 latencies)
    let lo = 219 * ALU_CLOCKS + CLUSTER_BARRIER_CLOCKS;
    assert!(p >= lo && p < lo + 30, "{p} (at least {lo})");
    // rank 1 of the first cluster, thread 0
    assert_eq!(r.critical_path_at, (1, 0), "{p}");
}

#[test]
fn the_scoreboard_is_off_by_default_and_changes_no_result() {
    let ptx = kernel(&chain(50), false);
    let mut sim = Sim::new(crate::Sm::Sm80);
    assert!(!sim.timing());
    let prog = sim.program(&ptx).unwrap();
    let off = sim
        .launch_program(&prog, "k", LaunchConfig::linear(2, 64), &[])
        .unwrap();
    assert_eq!((off.critical_path, off.critical_path_at), (0, (0, 0)));
    let on = timed(&ptx, 2, 64, 1, crate::Sm::Sm80);
    assert!(on.critical_path > 0);
    assert_eq!(on.instructions, off.instructions);
    assert_eq!(on.heaviest_warp, off.heaviest_warp);
}

/// `body` (one instruction a line, from line 10) as a kernel, run as one
/// block of `threads` with the scoreboard attributed by line.
fn by_line(body: &[&str], threads: u32) -> LaunchReport {
    let ptx = format!(
        ".version 7.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{{\n\
         .reg .b32 %r<4>;\n.reg .f32 %f<4>;\n.reg .pred %p<2>;\n\
         .shared .align 4 .f32 buf[1];\n{}\n}}\n",
        body.join("\n")
    );
    let mut sim = Sim::new(crate::Sm::Sm80);
    sim.set_timing_by_line(true);
    assert!(sim.timing());
    let prog = sim.program(&ptx).unwrap();
    sim.launch_program(&prog, "k", LaunchConfig::linear(1, threads), &[])
        .unwrap()
}

/// The report's attribution as (line, issue, wait, join), PTX order; its
/// clocks sum to the critical path.
fn rows(r: &LaunchReport) -> Vec<(u32, u64, u64, u64)> {
    let v: Vec<_> = (r.critical_path_lines.iter())
        .map(|l| (l.line, l.issue, l.wait, l.join))
        .collect();
    let sum: u64 = r.critical_path_lines.iter().map(|l| l.clocks()).sum();
    assert_eq!(sum, r.critical_path, "{v:?}");
    v
}

#[test]
fn attribution_charges_a_stall_to_the_producer() {
    // one thread, clocks by hand (ALU 4, shared load 28):
    // 10 mov    free (an unguarded copy): %f1 ready at 0, no row
    // 11 st     issues at 1
    // 12 ld     hoisted to the store (1), ready at 29; its slot: clock 2
    // 13 add    waits for %f2: issues at 29 (26 stalled, charged to 12)
    // 14 add    waits for %f3: issues at 33 (3 stalled, charged to 13)
    // 15 ret    issues at 34
    let r = by_line(
        &[
            "mov.f32 %f1, 0f3F800000;",
            "st.shared.f32 [buf], %f1;",
            "ld.shared.f32 %f2, [buf];",
            "add.rn.f32 %f3, %f2, %f1;",
            "add.rn.f32 %f3, %f3, %f3;",
            "ret;",
        ],
        1,
    );
    assert_eq!(r.critical_path, 34);
    let want = vec![
        (11, 1, 0, 0),
        (12, 1, 26, 0),
        (13, 1, 3, 0),
        (14, 1, 0, 0),
        (15, 1, 0, 0),
    ];
    assert_eq!(rows(&r), want);
    let top = r.critical_path_by_line();
    assert_eq!((top[0].line, top[0].clocks()), (12, 27));
    assert_eq!(top[0].text, "ld.shared.f32 %f2, [buf];");
}

#[test]
fn attribution_follows_the_slow_warp_through_a_barrier() {
    // two warps; warp 1 runs three multiply-adds before the barrier, so
    // the barrier releases everyone at its clock (19) plus 24: thread 0
    // ends at 44 with warp 1's row (clocks by hand; the `mov`s are free):
    // 11 shr    1, %r1 ready 5
    // 12 setp   5 (3 stalled on 11), ready 9 (not next to its branch,
    //           which the simulator would fuse with it)
    // 14 bra    9 (3 stalled on 12; warp 1 predicated off)
    // 15 fma    10, ready 14
    // 16 fma    14 (3 stalled on 15), ready 18
    // 17 fma    18 (3 stalled on 16)
    // 19 bar    19, released at 43 (24 joined)
    // 20 ret    44
    let r = by_line(
        &[
            "mov.u32 %r0, %tid.x;",
            "shr.u32 %r1, %r0, 5;",
            "setp.eq.u32 %p0, %r1, 0;",
            "mov.f32 %f1, 0f3F800000;",
            "@%p0 bra $B;",
            "fma.rn.f32 %f1, %f1, %f1, %f1;",
            "fma.rn.f32 %f1, %f1, %f1, %f1;",
            "fma.rn.f32 %f1, %f1, %f1, %f1;",
            "$B:",
            "bar.sync 0;",
            "ret;",
        ],
        64,
    );
    assert_eq!((r.critical_path, r.critical_path_at), (44, (0, 0)));
    let want = vec![
        (11, 1, 3, 0),
        (12, 1, 3, 0),
        (14, 1, 0, 0),
        (15, 1, 3, 0),
        (16, 1, 3, 0),
        (17, 1, 0, 0),
        (19, 1, 0, BAR_CLOCKS),
        (20, 1, 0, 0),
    ];
    assert_eq!(rows(&r), want);
}

#[test]
fn attribution_charges_a_cluster_wait_to_the_wait() {
    // rank 1's path is its own instructions, the barrier's wait (rank
    // 0's chain and the release, charged to its `barrier.cluster.wait`)
    // and its 20 multiply-adds
    let mut sim = Sim::new(crate::Sm::Sm90);
    sim.set_timing_by_line(true);
    let prog = sim.program(&cluster_kernel()).unwrap();
    let r = sim
        .launch_program(&prog, "k", LaunchConfig::linear(4, 32), &[])
        .unwrap();
    assert_eq!(r.critical_path_at, (1, 0));
    rows(&r); // (its clocks sum to the critical path)
    let top = r.critical_path_by_line();
    assert_eq!(top[0].text, "barrier.cluster.wait;");
    assert!(top[0].join >= 199 * ALU_CLOCKS + CLUSTER_BARRIER_CLOCKS - 20);
    assert_eq!((top[0].issue, top[0].wait), (1, 0));
    // the plain scoreboard gives the same path
    let plain = timed(&cluster_kernel(), 4, 32, 1, crate::Sm::Sm90);
    assert_eq!(plain.critical_path, r.critical_path);
    assert!(plain.critical_path_lines.is_empty());
}
