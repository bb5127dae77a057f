//! The simulator's race checks order accesses through mbarrier phases
//! (`sim::interp::mbar_order`, sm_90): an access made before an arrive
//! (local, or remote with release at cluster scope) happens before an
//! access made after a wait that observed that phase complete.
//!
//! * Between the CTAs of a cluster: rank 0 stores into rank 1's buffer
//!   with `st.shared::cluster` and arrives on rank 1's barrier; rank 1
//!   waits and reads: no finding, the stored values. Without the arrive
//!   and wait, reading before the wait, or with one thread's arrive
//!   standing for all the stores: a race between CTAs naming both
//!   accesses. Two rounds through one buffer, freed by rank 1's remote
//!   arrive on rank 0's barrier: no finding; freed before rank 1's read:
//!   a race (rank 0's overwrite after rank 1's read).
//! * Within one CTA (no `bar.sync` after the initialisation): a producer
//!   warp stores and arrives, a consumer warp waits and reads, and frees
//!   the buffer through a second barrier for a second round: no finding;
//!   without the wait, or waiting on the previous phase's parity in the
//!   second round: a shared-memory race naming both accesses.
//! * The clocks' budget (`MBAR_CLOCK_BUDGET`): a 16 × 1,024 cluster whose
//!   threads all arrive and wait is refused at launch with checks on
//!   (`SimError::MbarClockBudget` naming the threads, one barrier, the
//!   bytes and the budget) and runs with them off; 16 × 256 runs with
//!   them on. A 16 × 510 cluster whose CTAs arrive on 2 barriers each
//!   (32 with clocks, just within the budget) runs, cluster after cluster;
//!   on 3 each it stops at the 33rd barrier's first arrive.

use ptxsmith::dsl::params::Ptr;
use ptxsmith::dsl::types::{Reg, U32};
use ptxsmith::dsl::*;
use ptxsmith::exec::LaunchConfig;
use ptxsmith::sim::{AccessKind, MBAR_CLOCK_BUDGET, Program, Sim, SimError};
use ptxsmith::{Sm, kernel_params};

kernel_params! {
    struct OutArgs => OutRegs {
        out: Ptr<U32>,
    }
}

/// Threads per warp (every role is one warp).
const W: u32 = 32;

/// The value stored into word `t` in round `r`.
fn value(r: u32, t: u32) -> u32 {
    0x1000 * (r + 1) + 3 * t + 7
}

/// How the cluster kernel hands its data over.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Peer {
    /// Every producer thread arrives remotely after its store; rank 1
    /// waits, then reads.
    Handoff,
    /// No arrive, no wait.
    NoSync,
    /// Rank 1 reads, then waits.
    ReadBeforeWait,
    /// Only thread 0 of rank 0 arrives (the barrier counts one arrival).
    OneArrive,
    /// Two rounds; rank 1 frees the buffer (remote arrive on rank 0's
    /// `empty`) after reading it.
    TwoRounds,
    /// Two rounds; rank 1 frees the buffer before reading it.
    FreeBeforeRead,
}

/// Clusters of two CTAs of 32 threads: rank 0's thread `t` stores
/// `value(r, t)` into rank 1's `buf[t]` in round `r`, rank 1's thread `t`
/// reads its `buf[t]` into `out[32r + t]` (see [`Peer`]).
fn peer(kind: Peer) -> PtxModule {
    let mut b = KernelBuilder::new("mbar_peer", Sm::Sm90);
    b.cluster_dims(2, 1, 1);
    let p = b.params::<OutArgs>();
    let full = b.shared_mbarrier("full");
    let empty = b.shared_mbarrier("empty");
    let buf = b.shared_array::<U32>("buf", W, 16);
    let t = b.tid_x();
    let rank = b.cluster_ctarank();
    let count = if kind == Peer::OneArrive { 1 } else { W };
    let first = b.setp(Cmp::Eq, t, 0u32);
    b.mbarrier_init_cluster(first, &[(full, count), (empty, W)]);
    let rounds = if matches!(kind, Peer::TwoRounds | Peer::FreeBeforeRead) {
        2
    } else {
        1
    };
    let producer = b.setp(Cmp::Eq, rank, 0u32);
    let consumer = b.setp(Cmp::Eq, rank, 1u32);
    let mine = b.shared_elem(&buf, t);
    for r in 0..rounds {
        b.if_(producer, |b| {
            if r > 0 {
                b.mbarrier_wait(empty, (r - 1) & 1);
            }
            let q = b.mapa(mine, 1u32);
            let v = stored(b, t, r);
            b.st_cluster(q, 0, v);
            let rb = b.mapa_mbarrier(full, 1u32);
            match kind {
                Peer::NoSync => {}
                Peer::OneArrive => b.if_(first, |b| b.mbarrier_arrive_remote(rb)),
                _ => b.mbarrier_arrive_remote(rb),
            }
        });
        b.if_(consumer, |b| {
            let early = kind == Peer::FreeBeforeRead;
            if early || kind == Peer::ReadBeforeWait {
                if early {
                    b.mbarrier_wait(full, r & 1);
                    let eb = b.mapa_mbarrier(empty, 0u32);
                    b.mbarrier_arrive_remote(eb);
                }
                read_out(b, &p, mine, t, r);
                if !early {
                    b.mbarrier_wait(full, r & 1);
                }
            } else {
                if kind != Peer::NoSync {
                    b.mbarrier_wait(full, r & 1);
                }
                read_out(b, &p, mine, t, r);
                if kind == Peer::TwoRounds {
                    let eb = b.mapa_mbarrier(empty, 0u32);
                    b.mbarrier_arrive_remote(eb);
                }
            }
        });
    }
    b.cluster_sync();
    b.finish().unwrap()
}

/// `value(r, t)` in a register.
fn stored(b: &mut KernelBuilder, t: Reg<U32>, r: u32) -> Reg<U32> {
    let x = b.mul_lo(t, 3u32);
    b.add(x, 0x1000 * (r + 1) + 7)
}

/// `out[32r + t] = buf[t]` (the shared pointer `mine`).
fn read_out(b: &mut KernelBuilder, p: &OutRegs, mine: SharedPtr<U32>, t: Reg<U32>, r: u32) {
    let y = b.ld_shared(mine, 0);
    let i = b.add(t, W * r);
    let o = b.offset(p.out, i);
    b.st_global(o, 0, y);
}

/// How the one-CTA kernel hands its data over.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Local {
    /// Two rounds; the consumer waits on `full`'s phase of the round and
    /// frees the buffer through `empty`.
    Pipeline,
    /// One round; the consumer reads without waiting.
    NoWait,
    /// The second round's wait names the first phase's parity (0).
    StaleParity,
}

/// One CTA of 64 threads: warp 0 stores `value(r, lane)` into
/// `buf[lane]` and arrives on `full`; warp 1 waits on `full`, reads
/// `buf[lane]` into `out[32r + lane]` and (but in the last round) arrives
/// on `empty`, which warp 0 waits on before the next round. No `bar.sync` after the
/// initialisation.
fn local(kind: Local) -> PtxModule {
    let mut b = KernelBuilder::new("mbar_local", Sm::Sm90);
    let p = b.params::<OutArgs>();
    let full = b.shared_mbarrier("full");
    let empty = b.shared_mbarrier("empty");
    let buf = b.shared_array::<U32>("buf", W, 16);
    let t = b.tid_x();
    let lane = b.and(t, W - 1);
    let first = b.setp(Cmp::Eq, t, 0u32);
    b.if_(first, |b| {
        b.mbarrier_init(full, W);
        b.mbarrier_init(empty, W);
    });
    let mine = b.shared_elem(&buf, lane);
    let producer = b.setp(Cmp::Lt, t, W);
    // the buffer starts written (before the barrier), so that a read
    // before the producer's store is not an uninitialised one
    b.if_(producer, |b| b.st_shared(mine, 0, 0u32));
    b.bar_sync();
    let consumer = b.setp(Cmp::Ge, t, W);
    let rounds = if kind == Local::NoWait { 1 } else { 2 };
    for r in 0..rounds {
        b.if_(producer, |b| {
            if r > 0 {
                b.mbarrier_wait(empty, (r - 1) & 1);
            }
            let v = stored(b, lane, r);
            b.st_shared(mine, 0, v);
            b.mbarrier_arrive(full);
        });
        b.if_(consumer, |b| {
            match kind {
                Local::NoWait => {}
                Local::StaleParity => b.mbarrier_wait(full, 0u32),
                Local::Pipeline => b.mbarrier_wait(full, r & 1),
            }
            read_out(b, &p, mine, lane, r);
            // (an arrive past the last round would let the consumer run a
            // phase ahead of the producer's wait on `empty`)
            if r + 1 < rounds {
                b.mbarrier_arrive(empty);
            }
        });
    }
    b.finish().unwrap()
}

/// Run `m` on a simulated sm_90 over `blocks` CTAs of `threads`; the 64
/// output words.
fn run(m: &PtxModule, blocks: u32, threads: u32) -> Result<Vec<u32>, SimError> {
    let prog = Program::parse(&m.ptx)?;
    let mut sim = Sim::new(Sm::Sm90);
    let d = sim.alloc(2 * W as usize * 4).unwrap();
    sim.write(d, &[0; 2 * W as usize * 4]).unwrap();
    let params = d.to_le_bytes().to_vec();
    sim.launch_program_bytes(
        &prog,
        &m.kernel,
        LaunchConfig::linear(blocks, threads),
        &params,
    )?;
    let mut raw = vec![0u8; 2 * W as usize * 4];
    sim.read(d, &mut raw).unwrap();
    Ok(raw
        .chunks(4)
        .map(|x| u32::from_le_bytes([x[0], x[1], x[2], x[3]]))
        .collect())
}

/// The output of `rounds` rounds handed over completely.
fn want(rounds: u32) -> Vec<u32> {
    (0..2 * W)
        .map(|i| {
            if i / W < rounds {
                value(i / W, i % W)
            } else {
                0
            }
        })
        .collect()
}

/// The race between CTAs `e` must be: `this` by rank `this_rank` (an
/// `this_instr` instruction) against `other` by rank `other_rank` (an
/// `other_instr` one), both named.
#[track_caller]
fn cluster_race(
    e: &SimError,
    this: (AccessKind, u32, &str),
    other: (AccessKind, u32, &str),
) -> (u32, u32) {
    let SimError::ClusterRace {
        site,
        this: k,
        other: ok,
        other_site,
        ..
    } = e
    else {
        panic!("not a race between CTAs: {e:?}");
    };
    assert_eq!((*k, *ok), (this.0, other.0), "{e}");
    assert_eq!((site.ctaid.0, other_site.ctaid.0), (this.1, other.1), "{e}");
    assert!(site.instr.starts_with(this.2), "{e}");
    assert!(other_site.instr.starts_with(other.2), "{e}");
    assert!(site.kernel == "mbar_peer" && site.line > 0 && other_site.line > 0);
    (site.tid.0, other_site.tid.0)
}

/// `kind` run on two CTAs fails with a race between rank 1's
/// `ld.shared` and rank 0's `st.shared::cluster` (the read the later
/// access if `read_last`), by the threads `(later, earlier)`.
#[track_caller]
fn assert_peer_race(kind: Peer, read_last: bool, threads: (u32, u32)) {
    let e = run(&peer(kind), 2, W).unwrap_err();
    let ld = (AccessKind::Read, 1, "ld.shared.u32");
    let st = (AccessKind::Write, 0, "st.shared::cluster.u32");
    let (this, other) = if read_last { (ld, st) } else { (st, ld) };
    assert_eq!(cluster_race(&e, this, other), threads, "{kind:?}: {e}");
}

#[test]
fn a_remote_arrive_orders_the_stores_before_the_peers_reads() {
    let m = peer(Peer::Handoff);
    assert_eq!(run(&m, 2, W).unwrap(), want(1));
}

#[test]
fn without_arrive_and_wait_the_peers_read_is_a_race() {
    for kind in [Peer::NoSync, Peer::ReadBeforeWait] {
        assert_peer_race(kind, true, (0, 0));
    }
}

#[test]
fn one_threads_arrive_does_not_order_another_threads_store() {
    // thread 0's store is ordered by its arrive; thread 1's is not
    assert_peer_race(Peer::OneArrive, true, (1, 1));
}

#[test]
fn a_remote_arrive_frees_the_buffer_for_the_next_round() {
    assert_eq!(run(&peer(Peer::TwoRounds), 2, W).unwrap(), want(2));
    // freed before it was read: rank 0's second store races rank 1's read
    assert_peer_race(Peer::FreeBeforeRead, false, (0, 0));
}

/// The shared-memory race `e` must name both accesses: a store by a
/// producer thread and a load by a consumer thread of the same lane.
#[track_caller]
fn local_race(e: &SimError) {
    let SimError::SharedRace {
        site,
        this,
        other,
        other_tid,
        other_site,
        ..
    } = e
    else {
        panic!("not a shared-memory race: {e:?}");
    };
    let other_site = other_site.as_ref().expect("the earlier access is named");
    assert_eq!(other_site.tid, *other_tid, "{e}");
    let (st, ld) = match (this, other) {
        (AccessKind::Write, AccessKind::Read) => (site, other_site),
        (AccessKind::Read, AccessKind::Write) => (other_site, site),
        _ => panic!("{e}"),
    };
    assert!(st.instr.starts_with("st.shared.u32"), "{e}");
    assert!(ld.instr.starts_with("ld.shared.u32"), "{e}");
    assert!(st.tid.0 < W && ld.tid.0 == st.tid.0 + W, "{e}");
    assert!(site.kernel == "mbar_local" && site.line != other_site.line);
}

#[test]
fn within_a_cta_an_mbarrier_phase_orders_producer_and_consumer_warps() {
    let m = local(Local::Pipeline);
    // the only CTA barrier is the one after the initialisation
    assert_eq!(m.ptx.matches("bar.sync").count(), 1, "{}", m.ptx);
    assert_eq!(run(&m, 1, 2 * W).unwrap(), want(2));
}

#[test]
fn within_a_cta_a_read_without_the_wait_is_a_race() {
    local_race(&run(&local(Local::NoWait), 1, 2 * W).unwrap_err());
}

#[test]
fn waiting_on_the_previous_phases_parity_orders_nothing_new() {
    local_race(&run(&local(Local::StaleParity), 1, 2 * W).unwrap_err());
}

/// Clusters of 16 CTAs whose threads all arrive on one barrier (count:
/// the CTA's threads) and wait for its phase.
fn all_wait(threads: u32) -> PtxModule {
    let mut b = KernelBuilder::new("mbar_all", Sm::Sm90);
    b.cluster_dims(16, 1, 1);
    let _ = b.params::<OutArgs>();
    let full = b.shared_mbarrier("full");
    let t = b.tid_x();
    let first = b.setp(Cmp::Eq, t, 0u32);
    b.if_(first, |b| b.mbarrier_init(full, threads));
    b.bar_sync();
    b.mbarrier_arrive(full);
    b.mbarrier_wait(full, 0u32);
    b.cluster_sync();
    b.finish().unwrap()
}

/// Clusters of 16 CTAs whose thread 0 initialises `bars` barriers (count
/// 1), arrives on each and waits for its phase.
fn many_bars(bars: u32) -> PtxModule {
    let mut b = KernelBuilder::new("mbar_many", Sm::Sm90);
    b.cluster_dims(16, 1, 1);
    let _ = b.params::<OutArgs>();
    let bs: Vec<_> = (0..bars)
        .map(|i| b.shared_mbarrier(&format!("bar{i}")))
        .collect();
    let t = b.tid_x();
    let first = b.setp(Cmp::Eq, t, 0u32);
    b.if_(first, |b| {
        for &bar in &bs {
            b.mbarrier_init(bar, 1u32);
            b.mbarrier_arrive(bar);
            b.mbarrier_wait(bar, 0u32);
        }
    });
    b.cluster_sync();
    b.finish().unwrap()
}

/// Launch `m` over `blocks` CTAs of `threads` with the checks `checks`.
fn launch(m: &PtxModule, blocks: u32, threads: u32, checks: bool) -> Result<(), SimError> {
    let prog = Program::parse(&m.ptx)?;
    let mut sim = Sim::new(Sm::Sm90);
    sim.set_checks(checks);
    let d = sim.alloc(4).unwrap();
    let params = d.to_le_bytes().to_vec();
    let cfg = LaunchConfig::linear(blocks, threads);
    sim.launch_program_bytes(&prog, &m.kernel, cfg, &params)
        .map(|_| ())
}

#[test]
fn the_clocks_of_a_16_by_1024_cluster_are_refused_with_checks_on() {
    let m = all_wait(1024);
    let e = launch(&m, 16, 1024, true).unwrap_err();
    let threads = 16 * 1024u64;
    assert_eq!(
        e,
        SimError::MbarClockBudget {
            kernel: "mbar_all".into(),
            threads,
            mbarriers: 1,
            bytes: 4 * threads * (threads + 2),
            budget: MBAR_CLOCK_BUDGET,
        }
    );
    let text = e.to_string();
    for part in [
        "16384 threads",
        "1 mbarrier",
        "268435456",
        "without race checks",
    ] {
        assert!(text.contains(part), "{text}");
    }
    assert_eq!(MBAR_CLOCK_BUDGET, 256 << 20);
    // with the checks off it runs; a smaller cluster runs with them on
    launch(&m, 16, 1024, false).unwrap();
    launch(&all_wait(256), 32, 256, true).unwrap();
}

#[test]
fn the_barriers_clocks_count_against_the_budget() {
    // 16 × 510 threads: the threads' clocks and 32 barriers' fit in
    // 256 MiB, a 33rd barrier's do not
    let threads = 16 * 510u64;
    assert!(4 * threads * (threads + 2 * 32) <= MBAR_CLOCK_BUDGET);
    assert!(4 * threads * (threads + 2 * 33) > MBAR_CLOCK_BUDGET);
    // two clusters: the count starts again at each
    launch(&many_bars(2), 32, 510, true).unwrap();
    let e = launch(&many_bars(3), 16, 510, true).unwrap_err();
    assert_eq!(
        e,
        SimError::MbarClockBudget {
            kernel: "mbar_many".into(),
            threads,
            mbarriers: 33,
            bytes: 4 * threads * (threads + 66),
            budget: MBAR_CLOCK_BUDGET,
        }
    );
    launch(&many_bars(3), 16, 510, false).unwrap();
}
