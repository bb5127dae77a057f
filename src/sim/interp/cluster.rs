//! Thread-block clusters (sm_90): the CTAs of one cluster run together on
//! one worker, `mapa` and `ld`/`st.shared::cluster` reach another CTA's
//! shared memory, and `barrier.cluster.arrive`/`wait` synchronise them.
//!
//! # Schedule
//! The worker keeps one [`CtaState`] per rank ([`ClusterRun`]); the
//! running one is `Exec::cta`, swapped in by [`Exec::switch_to`]. Each
//! CTA runs (its own `bar.sync`s resolved as usual) until every thread
//! has exited or waits at a `barrier.cluster.wait` whose phase has not
//! completed; when no CTA can go on, the phase completes if every
//! non-exited thread of the cluster has arrived (the waiting threads go
//! on), else the cluster is deadlocked (a [`SimError::Deadlock`]).
//!
//! # Addresses
//! A `.shared::cluster` address is the shared offset with `rank + 1` in
//! bits 24 and up ([`RANK_SHIFT`]; `mapa` makes it, a shared-window
//! offset below 2²⁴ is the CTA's own memory, as on the GPU where a
//! `.shared::cta` address is a valid `.shared::cluster` address of the
//! executing CTA). Shared memory per CTA is far below 16 MiB.
//!
//! # Checks (with checks on)
//! * `mapa` to a rank ≥ `%cluster_nctarank`: [`SimError::ClusterRank`];
//!   an access past the CTA's shared memory: [`SimError::OutOfBounds`]
//!   in `shared::cluster`.
//! * Reads of another CTA's bytes that no thread wrote:
//!   [`SimError::UninitializedShared`] (the owner's tags, where remote
//!   writes count as writes of the CTA's first epoch, which no local
//!   access conflicts with).
//! * Races between CTAs of the cluster on one CTA's shared memory: per
//!   byte the last write and a read of another CTA are tagged with the
//!   thread and its arrive count; an earlier access of another CTA is
//!   ordered before this one when that thread's next release arrive (the
//!   first non-`.relaxed` one from that count) belongs to a phase this
//!   thread has waited for, or by an mbarrier phase (the tags also carry
//!   the thread's mbarrier stamp, `interp::mbar_order`). Otherwise (at
//!   least one write) it is a [`SimError::ClusterRace`] naming both
//!   accesses. Races within one CTA stay the shared-memory check's (which
//!   asks these tags for the mbarrier order).
//! * A CTA exiting while a thread of another CTA may still access its
//!   shared memory (each thread's latest access not ordered before the
//!   exit by a cluster-barrier or mbarrier phase some thread of the
//!   exiting CTA waited for), and any access after it
//!   exited: [`SimError::ClusterExit`] (the PTX ISA requires a CTA's
//!   shared memory to stay until the other CTAs are done with it).
//! * A second `barrier.cluster.arrive` before the thread's wait, and a
//!   wait without an arrive: [`SimError::ClusterBarrier`].
//!
//! # Order within a CTA
//! A phase of the cluster barrier orders the accesses of every thread of
//! a CTA before its arrive with those after its wait (a release arrive
//! and an acquire wait, PTX ISA "barrier.cluster"), as `bar.sync` does:
//! its completion starts a new barrier epoch of the shared-memory check
//! in each CTA where that holds for every access of the interval. A CTA
//! keeps its epoch when one of its threads arrived `.relaxed` (no
//! release), when one has exited (an exit releases nothing), or when one
//! accessed the CTA's shared memory after its arrive and before the
//! phase completed (`CtaState::cl_window`: such an access is not ordered
//! before the other threads' accesses after their waits). Accesses after
//! the completion and before the thread's own wait fall in the new epoch,
//! unordered with the others' there, as they are on the GPU. Global
//! accesses of a CTA's warps stay ordered by `bar.sync` alone
//! (`CtaState::cl_bumps`): the window is watched in shared memory only.
//!
//! Global memory: the cluster is one unit of the launch's global checks
//! (its accesses are checked against earlier clusters'); accesses of two
//! CTAs of one cluster to the same global byte are not compared (they
//! may be ordered by the cluster barrier).

use std::collections::BTreeSet;

use super::super::checks::global::{CtaRecs, CtaShadow, Done};
use super::super::checks::shared_race::Access;
use super::super::cta::{CtaState, TState};
use super::super::error::{AccessKind, SimError, Site};
use super::super::ir::*;
use super::{Exec, Fault, Res, Stop, fault};

/// `.shared::cluster` addresses carry `rank + 1` from this bit on.
pub(crate) const RANK_SHIFT: u32 = 24;
pub(crate) const OFFSET_MASK: u64 = (1 << RANK_SHIFT) - 1;
/// The most CTAs of a cluster the simulator runs (the GPU's non-portable
/// maximum; 8 is the portable one).
pub(crate) const MAX_CLUSTER: u32 = 16;
/// The thread field of remote writes in the owner's shared tags.
pub(crate) const REMOTE_T: usize = 1023;
const NONE: usize = usize::MAX;

/// A CTA of the cluster while another runs.
struct Slot {
    cta: CtaState,
    shadow: CtaShadow,
    printf: Vec<(u32, Vec<u8>)>,
}

/// The cluster a worker runs (see the module docs).
pub(crate) struct ClusterRun {
    pub dims: (u32, u32, u32),
    pub size: usize,
    pub explicit: bool,
    /// Threads per CTA.
    pub(super) n: usize,
    pub(super) cur: usize,
    slots: Vec<Slot>,
    pub ctaids: Vec<(u32, u32, u32)>,
    pub lins: Vec<u64>,
    /// Per rank: every thread exited.
    pub done: Vec<bool>,
    /// Completed phases of the cluster barrier.
    phase: u32,
    /// Per thread (`rank · n + t`): arrives and completed waits.
    arrive: Vec<u32>,
    pub(super) wait: Vec<u32>,
    /// (thread, arrive number) of the `.relaxed` arrives.
    relaxed: BTreeSet<(u32, u32)>,
    /// Per rank, per shared byte: the last write's and a read's tag.
    pub(super) tags: Vec<Vec<[u64; 2]>>,
    /// Per rank, per thread of the cluster: the thread's latest access to
    /// the rank's memory from another CTA (tag, mbarrier stamp, kind).
    remote: Vec<Vec<Option<(u64, u32, AccessKind)>>>,
    /// The mbarrier clocks (`interp::mbar_order`; empty without checks or
    /// in a kernel that arrives on no mbarrier): per thread its arrives
    /// and its clock (empty until its first acquire), per rank and shared
    /// byte the stamps of the `tags`' accesses.
    pub(super) mrel: Vec<u32>,
    pub(super) vc: Vec<Vec<u32>>,
    pub(super) mtags: Vec<Vec<[u32; 2]>>,
    /// Barriers of the cluster whose arrives released clocks (what
    /// `MBAR_CLOCK_BUDGET` counts, `interp::mbar_order`).
    pub(super) mbar_clocked: u64,
    /// mbarrier events (init, arrive, bulk copy issued or landed) so far,
    /// and their count when the threads parked at `mbarrier.try_wait` were
    /// last woken (`interp::bulk`).
    pub(crate) mbar_events: u64,
    mbar_seen: u64,
}

fn pack(rank: usize, t: usize, pc: usize, a: u32) -> u64 {
    1 << 63
        | (rank as u64) << 58
        | (t as u64) << 48
        | ((pc as u64) & 0x3F_FFFF) << 26
        | (a as u64 & 0x3FF_FFFF)
}

/// (rank, thread, pc, arrive count) of a tag.
fn unpack(tag: u64) -> (usize, usize, usize, u32) {
    (
        ((tag >> 58) & 0xF) as usize,
        ((tag >> 48) & 0x3FF) as usize,
        ((tag >> 26) & 0x3F_FFFF) as usize,
        (tag & 0x3FF_FFFF) as u32,
    )
}

impl ClusterRun {
    /// Whether the access of `tag` (with mbarrier stamp `c`) is ordered
    /// before the next access of thread `i` (cluster index), which
    /// completed `waits` cluster-barrier waits: by a phase of the cluster
    /// barrier or of an mbarrier (`interp::mbar_order`).
    pub(super) fn ordered(&self, tag: u64, c: u32, i: usize, waits: u32) -> bool {
        self.cluster_ordered(tag, waits) || {
            let (rank, t, _, _) = unpack(tag);
            self.mbar_ordered(rank * self.n + t, c, i)
        }
    }

    /// Whether the access of `tag` is ordered before an access by a
    /// thread that completed `waits` cluster-barrier waits.
    fn cluster_ordered(&self, tag: u64, waits: u32) -> bool {
        let (rank, t, _, a) = unpack(tag);
        let idx = (rank * self.n + t) as u32;
        let mut m = a;
        while self.relaxed.contains(&(idx, m)) {
            m += 1;
        }
        self.arrive[idx as usize] > m && m < waits
    }

    /// (rank, thread) of a tag.
    pub(super) fn tag_thread(&self, tag: u64) -> (usize, usize) {
        let (rank, t, _, _) = unpack(tag);
        (rank, t)
    }
}

impl Exec<'_> {
    /// Prepare a cluster of `dims` (`size` CTAs) for this launch.
    pub(crate) fn cluster_prepare(&mut self, dims: (u32, u32, u32), explicit: bool) {
        let k = self.k;
        let size = (dims.0 * dims.1 * dims.2) as usize;
        let slots = (0..size)
            .map(|_| Slot {
                cta: k.fresh_cta(),
                shadow: CtaShadow::default(),
                printf: Vec::new(),
            })
            .collect();
        self.cl = Some(Box::new(ClusterRun {
            dims,
            size,
            explicit,
            n: self.cta.n,
            cur: NONE,
            slots,
            ctaids: vec![(0, 0, 0); size],
            lins: vec![0; size],
            done: vec![false; size],
            phase: 0,
            arrive: Vec::new(),
            wait: Vec::new(),
            relaxed: BTreeSet::new(),
            tags: if k.checks {
                vec![vec![[0; 2]; k.smem]; size]
            } else {
                Vec::new()
            },
            remote: vec![vec![None; size * self.cta.n]; size],
            mrel: Vec::new(),
            vc: Vec::new(),
            mtags: if k.checks && super::mbar_order::arrives(k.code) {
                vec![vec![[0; 2]; k.smem]; size]
            } else {
                Vec::new()
            },
            mbar_clocked: 0,
            mbar_events: 0,
            mbar_seen: 0,
        }));
    }

    /// Put the running CTA back in its slot (none runs after).
    fn park_running(&mut self) {
        let cl = self.cl.as_mut().expect("a cluster launch");
        if cl.cur != NONE {
            let s = &mut cl.slots[cl.cur];
            std::mem::swap(&mut self.cta, &mut s.cta);
            std::mem::swap(&mut self.g.shadow, &mut s.shadow);
            std::mem::swap(&mut self.printf, &mut s.printf);
            cl.cur = NONE;
        }
    }

    /// Make rank `r` the running CTA.
    fn switch_to(&mut self, r: usize) {
        self.park_running();
        let cl = self.cl.as_mut().expect("a cluster launch");
        let s = &mut cl.slots[r];
        std::mem::swap(&mut self.cta, &mut s.cta);
        std::mem::swap(&mut self.g.shadow, &mut s.shadow);
        std::mem::swap(&mut self.printf, &mut s.printf);
        cl.cur = r;
        self.ctaid = cl.ctaids[r];
        self.lin = cl.lins[r];
    }

    /// Run the cluster whose CTAs are `ctaids` (linear indices `lins`, in
    /// rank order) with a cap of `cap` instructions. Returns the
    /// instructions issued and the reason if it stopped early; the CTAs'
    /// global accesses are in the slots' shadows, their `vprintf` output
    /// in rank order in `self.printf`.
    pub(crate) fn run_cluster(
        &mut self,
        ctaids: &[(u32, u32, u32)],
        lins: &[u64],
        cap: u64,
    ) -> (u64, Option<Stop>) {
        self.start(ctaids[0], lins[0], cap);
        {
            let cl = self.cl.as_mut().expect("a cluster launch");
            cl.ctaids.copy_from_slice(ctaids);
            cl.lins.copy_from_slice(lins);
            cl.done.fill(false);
            cl.phase = 0;
            let nt = cl.size * cl.n;
            cl.arrive.clear();
            cl.arrive.resize(nt, 0);
            cl.wait.clear();
            cl.wait.resize(nt, 0);
            cl.relaxed.clear();
            for t in cl.tags.iter_mut() {
                t.fill([0; 2]);
            }
            for r in cl.remote.iter_mut() {
                r.fill(None);
            }
            if cl.clocks() {
                cl.mrel.clear();
                cl.mrel.resize(nt, 0);
                cl.vc.clear();
                cl.vc.resize(nt, Vec::new());
                for t in cl.mtags.iter_mut() {
                    t.fill([0; 2]);
                }
                cl.mbar_clocked = 0;
            }
            cl.mbar_events = 0;
            cl.mbar_seen = 0;
        }
        let size = self.cl.as_ref().map_or(0, |c| c.size);
        for r in 0..size {
            self.switch_to(r);
            self.cta
                .reset(self.k.code, ctaids[r], lins[r], self.k.checks);
            self.cta.asyncs.reset();
            self.reset_time();
            self.printf.clear();
            self.g.shadow.clear();
            self.set_cluster_sregs(r);
            // remote writes are tagged with the first epoch, which no
            // access of the CTA itself has (see the module docs)
            self.cta.epoch += 1;
        }
        let stop = self.cluster_schedule().err();
        self.park_running();
        let issued = self.issued + (self.chunk - self.budget);
        (issued, stop)
    }

    /// After a cluster ran: its critical path ([`super::timing`]), its
    /// CTA's linear index and the thread (the first in rank order on
    /// ties); `(0, 0, 0)` without the scoreboard.
    pub(crate) fn cluster_critical_path(&self) -> (u64, u64, u32) {
        let cl = self.cl.as_ref().expect("a cluster launch");
        (0..cl.size).fold((0, 0, 0), |b, r| match cl.slots[r].cta.time.as_ref() {
            Some(s) => {
                if let Some(best) = &self.k.path_lines {
                    super::timing::offer(best, s, cl.lins[r]);
                }
                let (c, t) = s.latest();
                if c > b.0 {
                    (c, cl.lins[r], t as u32)
                } else {
                    b
                }
            }
            None => b,
        })
    }

    /// After a cluster ran: its heaviest warp, as the thread-instructions
    /// its lanes issued, its CTA's linear index and its index in the CTA
    /// (the first in rank order on ties).
    pub(crate) fn cluster_heaviest_warp(&self) -> (u64, u64, u32) {
        let cl = self.cl.as_ref().expect("a cluster launch");
        (0..cl.size).fold((0, 0, 0), |b, r| {
            let (c, w) = super::heaviest_of(&cl.slots[r].cta.warp_issued);
            if c > b.0 { (c, cl.lins[r], w) } else { b }
        })
    }

    /// After a cluster ran: its `vprintf` output (rank by rank, each
    /// CTA's by thread) to `printf`, and, if `accept`, its global
    /// accesses into the watch list, `done` and `order` (rank by rank).
    pub(crate) fn cluster_collect(
        &mut self,
        recs: &mut CtaRecs,
        done: &mut Done,
        order: &mut Vec<(u32, u32, u32)>,
        printf: &mut Vec<u8>,
        accept: bool,
    ) {
        let cl = self.cl.as_mut().expect("a cluster launch");
        for r in 0..cl.size {
            let s = &mut cl.slots[r];
            // a stable sort: each thread's lines keep their order
            s.printf.sort_by_key(|l| l.0);
            for (_, text) in s.printf.drain(..) {
                printf.extend(text);
            }
            s.shadow.drain_into(recs);
            if accept && let Some(w) = self.g.watch.as_mut() {
                w.merge(&recs.recs);
                done.push(recs);
                order.push(cl.ctaids[r]);
            }
        }
    }

    /// The cluster special registers of rank `r`'s threads.
    fn set_cluster_sregs(&mut self, r: usize) {
        let cl = self.cl.as_ref().expect("a cluster launch");
        let (dx, dy, dz) = cl.dims;
        let (gx, gy, gz) = self.k.cfg.grid;
        let c = cl.ctaids[r];
        let vals: [(u32, u64); 15] = [
            (sreg::CLUSTER_CTARANK, r as u64),
            (sreg::CLUSTER_NCTARANK, cl.size as u64),
            (sreg::CLUSTERID_X, (c.0 / dx) as u64),
            (sreg::CLUSTERID_X + 1, (c.1 / dy) as u64),
            (sreg::CLUSTERID_X + 2, (c.2 / dz) as u64),
            (sreg::NCLUSTERID_X, (gx / dx) as u64),
            (sreg::NCLUSTERID_X + 1, (gy / dy) as u64),
            (sreg::NCLUSTERID_X + 2, (gz / dz) as u64),
            (sreg::CLUSTER_CTAID_X, (c.0 % dx) as u64),
            (sreg::CLUSTER_CTAID_X + 1, (c.1 % dy) as u64),
            (sreg::CLUSTER_CTAID_X + 2, (c.2 % dz) as u64),
            (sreg::CLUSTER_NCTAID_X, dx as u64),
            (sreg::CLUSTER_NCTAID_X + 1, dy as u64),
            (sreg::CLUSTER_NCTAID_X + 2, dz as u64),
            (sreg::IS_EXPLICIT_CLUSTER, cl.explicit as u64),
        ];
        for t in 0..self.cta.n {
            let b = t * self.cta.pitch;
            for &(s, v) in &vals {
                self.cta.regs[b + s as usize] = v;
            }
        }
    }

    /// Run the cluster's CTAs until all exited (see the module docs).
    fn cluster_schedule(&mut self) -> Result<(), Stop> {
        let size = self.cl.as_ref().map_or(0, |c| c.size);
        loop {
            for r in 0..size {
                if self.cl.as_ref().is_some_and(|c| c.done[r]) {
                    continue;
                }
                self.switch_to(r);
                self.schedule()?;
                if self.cta.state.iter().all(|&s| s == TState::Exit) {
                    self.cta_exited(r)?;
                }
            }
            if self.cl.as_ref().is_some_and(|c| c.done.iter().all(|&d| d)) {
                return Ok(());
            }
            self.park_running();
            if !self.complete_phase() && !self.mbar_wake() {
                return Err(Stop::Finding(self.cluster_deadlock()));
            }
        }
    }

    /// Complete the barrier's phase if every non-exited thread arrived,
    /// and let its waiting threads go on. Whether any thread can go on.
    fn complete_phase(&mut self) -> bool {
        let cl = self.cl.as_mut().expect("a cluster launch");
        let n = cl.n;
        let phase = cl.phase;
        let all = (0..cl.size).all(|r| {
            (0..n).all(|t| cl.slots[r].cta.state[t] == TState::Exit || cl.arrive[r * n + t] > phase)
        });
        if !all {
            return false;
        }
        cl.phase += 1;
        // the order within each CTA (module docs, *Order within a CTA*)
        for r in 0..cl.size {
            let base = (r * n) as u32;
            let c = &mut cl.slots[r].cta;
            let orders = !c.cl_window
                && c.state.iter().all(|&s| s != TState::Exit)
                && !(0..n as u32).any(|t| cl.relaxed.contains(&(base + t, phase)));
            c.cl_arrived.fill(false);
            c.cl_pending = 0;
            c.cl_window = false;
            if orders {
                c.epoch += 1;
                c.cl_bumps += 1;
            }
        }
        // the scoreboard (`timing`): the barrier completes its latency
        // after the phase's last arrival
        let done = (0..cl.size)
            .flat_map(|r| (0..n).map(move |t| (r, t)))
            .filter(|&(r, t)| cl.slots[r].cta.state[t] != TState::Exit)
            .filter_map(|(r, t)| cl.slots[r].cta.time.as_ref().map(|s| s.arrive[t]))
            .max()
            .map(|a| a + super::timing::CLUSTER_BARRIER_CLOCKS);
        let mut released = false;
        for r in 0..cl.size {
            for t in 0..n {
                let c = &mut cl.slots[r].cta;
                if c.state[t] == TState::Park
                    && matches!(self.k.code.insts[c.pc[t] as usize].op, Op::ClusterWait)
                    && cl.arrive[r * n + t] <= cl.phase
                {
                    c.state[t] = TState::Run;
                    c.pc[t] += 1;
                    if let (Some(s), Some(done)) = (c.time.as_mut(), done) {
                        s.release(t, done, c.pc[t] as usize - 1);
                    }
                    cl.wait[r * n + t] = cl.arrive[r * n + t];
                    released = true;
                }
            }
        }
        released
    }

    /// Wake the threads parked at `mbarrier.try_wait` if an mbarrier
    /// event happened since they were last woken (they run the
    /// `try_wait` again); whether any was woken. Without an event no
    /// waited-for phase can have completed: the caller reports a deadlock.
    fn mbar_wake(&mut self) -> bool {
        let code = self.k.code;
        let cl = self.cl.as_mut().expect("a cluster launch");
        if cl.mbar_events == cl.mbar_seen {
            return false;
        }
        cl.mbar_seen = cl.mbar_events;
        let mut woke = false;
        for r in 0..cl.size {
            let c = &mut cl.slots[r].cta;
            for t in 0..cl.n {
                if c.state[t] == TState::Park
                    && matches!(code.insts[c.pc[t] as usize].op, Op::MbarTryWait)
                {
                    c.state[t] = TState::Run;
                    woke = true;
                }
            }
        }
        woke
    }

    /// The CTAs of the running cluster and the running rank (`(1, 0)`
    /// outside a cluster).
    pub(crate) fn cluster_ranks(&self) -> (usize, usize) {
        self.cl.as_ref().map_or((1, 0), |c| (c.size, c.cur))
    }

    /// Whether rank `r` of the running cluster has exited.
    pub(crate) fn rank_exited(&self, r: usize) -> bool {
        self.cl.as_ref().is_some_and(|c| c.done[r])
    }

    /// Rank `r`'s CTA state (the running CTA's is `self.cta`).
    pub(crate) fn cta_of(&mut self, r: usize) -> &mut CtaState {
        let other = self.cl.as_ref().is_some_and(|c| c.cur != r);
        if other {
            &mut self.cl.as_mut().expect("a cluster launch").slots[r].cta
        } else {
            &mut self.cta
        }
    }

    /// Count an mbarrier event (see [`Exec::mbar_wake`]).
    pub(crate) fn mbar_event(&mut self) {
        if let Some(c) = self.cl.as_mut() {
            c.mbar_events += 1;
        }
    }

    /// The deadlock finding of a cluster no thread of which can go on.
    #[cold]
    fn cluster_deadlock(&mut self) -> SimError {
        let cl = self.cl.as_ref().expect("a cluster launch");
        let code = self.k.code;
        let mut parked = Vec::new();
        let mut any_mbar = false;
        for r in 0..cl.size {
            let c = &cl.slots[r].cta;
            let (mut at_wait, mut elsewhere, mut arrived) = (0, 0, 0);
            let mut at_mbar = Vec::new();
            for t in 0..cl.n {
                if c.state[t] == TState::Park {
                    if matches!(code.insts[c.pc[t] as usize].op, Op::ClusterWait) {
                        at_wait += 1;
                    } else if matches!(code.insts[c.pc[t] as usize].op, Op::MbarTryWait) {
                        at_mbar.push(t);
                    } else {
                        elsewhere += 1;
                    }
                }
                if cl.arrive[r * cl.n + t] > cl.phase {
                    arrived += 1;
                }
            }
            let b = cl.ctaids[r];
            any_mbar |= !at_mbar.is_empty();
            let mbar = if at_mbar.is_empty() {
                String::new()
            } else {
                format!(
                    ", {} threads at an mbarrier.try_wait whose phase can never complete ({})",
                    at_mbar.len(),
                    c.bulk.describe()
                )
            };
            parked.push(format!(
                "block ({},{},{}) (rank {r}): {at_wait} threads at barrier.cluster.wait, \
                 {elsewhere} parked elsewhere, {arrived} of {} arrived at phase {}{mbar}",
                b.0, b.1, b.2, cl.n, cl.phase
            ));
        }
        SimError::Deadlock {
            kernel: self.k.e.name.clone(),
            ctaid: cl.ctaids[0],
            parked: format!(
                "{} cannot complete: {}",
                if any_mbar {
                    "an mbarrier phase"
                } else {
                    "the cluster barrier"
                },
                parked.join("; ")
            ),
        }
    }

    /// Rank `r` exited: every access to its shared memory by another CTA
    /// must be ordered before (module docs).
    fn cta_exited(&mut self, r: usize) -> Result<(), Stop> {
        let cl = self.cl.as_mut().expect("a cluster launch");
        cl.done[r] = true;
        if !self.k.checks {
            return Ok(());
        }
        let n = cl.n;
        let waits = (0..n).map(|t| cl.wait[r * n + t]).max().unwrap_or(0);
        // each thread's latest access is ordered before the exit by the
        // cluster barrier or an mbarrier phase some thread of `r` waited for
        let unordered = cl.remote[r].iter().flatten().find(|&&(tag, c, _)| {
            !cl.cluster_ordered(tag, waits) && {
                let (rank, t) = cl.tag_thread(tag);
                !(0..n).any(|x| cl.mbar_ordered(rank * n + t, c, r * n + x))
            }
        });
        if let Some(&(tag, _, kind)) = unordered {
            let exited_ctaid = cl.ctaids[r];
            return Err(Stop::Finding(SimError::ClusterExit {
                site: self.tag_site(tag),
                this: kind,
                exited_ctaid,
            }));
        }
        Ok(())
    }

    /// The site of the access of `tag`.
    pub(super) fn tag_site(&self, tag: u64) -> Box<Site> {
        let cl = self.cl.as_ref().expect("a cluster launch");
        let (rank, t, pc, _) = unpack(tag);
        let mut s = self.site(t, pc);
        s.ctaid = cl.ctaids[rank];
        s
    }

    /// `mapa`: the `.shared::cluster` address of shared address `a` in
    /// the CTA of rank `rank`.
    pub(crate) fn mapa(&mut self, a: u64, rank: u64) -> Res<u64> {
        let size = self.cl.as_ref().map_or(1, |c| c.size) as u64;
        let rank = rank & 0xFFFF_FFFF;
        if rank >= size {
            return fault(Fault::Sim(Box::new(SimError::ClusterRank {
                site: blank_site(),
                rank,
                size,
            })));
        }
        Ok((((rank + 1) << RANK_SHIFT) | (a & OFFSET_MASK)) & 0xFFFF_FFFF)
    }

    /// `barrier.cluster.arrive` by thread `t`.
    pub(crate) fn cluster_arrive(&mut self, t: usize, relaxed: bool) -> Res<()> {
        let Some(cl) = self.cl.as_mut() else {
            return Ok(());
        };
        let i = cl.cur * cl.n + t;
        if cl.arrive[i] > cl.wait[i] {
            return fault(Fault::Sim(Box::new(SimError::ClusterBarrier {
                site: blank_site(),
                message: "a second barrier.cluster.arrive before the thread's \
                          barrier.cluster.wait (each arrive must be followed by a wait)"
                    .into(),
            })));
        }
        if relaxed {
            cl.relaxed.insert((i as u32, cl.arrive[i]));
        }
        cl.arrive[i] += 1;
        if !self.cta.cl_arrived[t] {
            self.cta.cl_arrived[t] = true;
            self.cta.cl_pending += 1;
        }
        Ok(())
    }

    /// `barrier.cluster.wait` by thread `t`: whether it goes on (the
    /// phase of its arrive completed) rather than parks.
    pub(crate) fn cluster_wait(&mut self, t: usize) -> Res<bool> {
        let Some(cl) = self.cl.as_mut() else {
            return Ok(true);
        };
        let i = cl.cur * cl.n + t;
        if cl.arrive[i] == cl.wait[i] {
            return fault(Fault::Sim(Box::new(SimError::ClusterBarrier {
                site: blank_site(),
                message: "barrier.cluster.wait without a barrier.cluster.arrive of the \
                          thread since its last wait"
                    .into(),
            })));
        }
        if cl.phase >= cl.arrive[i] {
            cl.wait[i] = cl.arrive[i];
            return Ok(true);
        }
        Ok(false)
    }

    /// The `len` bytes at `.shared::cluster` address `addr` accessed by
    /// thread `t` at `pc` (checked, see the module docs).
    pub(crate) fn cluster_bytes(
        &mut self,
        t: usize,
        pc: usize,
        addr: u64,
        len: u32,
        write: bool,
    ) -> Res<&mut [u8]> {
        let Some(cl) = self.cl.as_deref() else {
            return fault(Fault::Oob(Space::SharedCluster, addr, len));
        };
        let cur = cl.cur;
        let (rank, off) = match addr >> RANK_SHIFT {
            0 => (cur, addr),
            h => ((h - 1) as usize, addr & OFFSET_MASK),
        };
        if rank >= cl.size || off + len as u64 > self.k.smem as u64 {
            return fault(Fault::Oob(Space::SharedCluster, addr, len));
        }
        let (o, l) = (off as usize, len as usize);
        if rank == cur {
            if self.k.checks {
                if let Err(f) = self.cta.shared_check_at(t, pc, o, l, write, false) {
                    let a = self.cta.access(t, o, l, write, false);
                    self.shared_race_hb(pc, &a, f)?;
                }
                self.cluster_note(t, pc, rank, o, l, write)?;
            }
            return Ok(&mut self.cta.shared[o..o + l]);
        }
        if self.k.checks {
            self.remote_check(t, pc, rank, o, l, write)?;
            self.cluster_note(t, pc, rank, o, l, write)?;
        }
        let cl = self.cl.as_mut().expect("a cluster launch");
        Ok(&mut cl.slots[rank].cta.shared[o..o + l])
    }

    /// The checks of a remote access only: the owner exited, the owner's
    /// initialisation tags (and a remote write's mark there), the access
    /// for the owner's exit check.
    fn remote_check(
        &mut self,
        t: usize,
        pc: usize,
        rank: usize,
        off: usize,
        len: usize,
        write: bool,
    ) -> Res<()> {
        if let Some(cl) = self.cl.as_deref()
            && cl.done[rank]
        {
            return fault(Fault::Sim(Box::new(SimError::ClusterExit {
                site: self.site(t, pc),
                this: AccessKind::of(write, false),
                exited_ctaid: cl.ctaids[rank],
            })));
        }
        let cl = self.cl.as_mut().expect("a cluster launch");
        let cur = cl.cur;
        let owner = &mut cl.slots[rank].cta;
        let e0 = owner.epoch0;
        // remote stores are never graded same-value (every conflict
        // between CTAs of a cluster is a race)
        owner.sh.check(&Access::remote(off, len, write, e0))?;
        let i = cur * cl.n + t;
        let tag = pack(cur, t, pc, cl.arrive[i]);
        cl.remote[rank][i] = Some((tag, cl.stamp(t), AccessKind::of(write, false)));
        Ok(())
    }

    /// [`Exec::cluster_note`] of a `.shared` access of the running CTA to
    /// its own memory.
    #[cold]
    #[inline(never)]
    pub(crate) fn cluster_local(
        &mut self,
        t: usize,
        pc: usize,
        off: usize,
        len: usize,
        write: bool,
    ) -> Res<()> {
        let cur = self.cl.as_ref().map_or(0, |c| c.cur);
        self.cluster_note(t, pc, cur, off, len, write)
    }

    /// The race check between CTAs of an access by thread `t` of the
    /// running CTA to `len` bytes at `off` of rank `rank`'s shared memory.
    pub(crate) fn cluster_note(
        &mut self,
        t: usize,
        pc: usize,
        rank: usize,
        off: usize,
        len: usize,
        write: bool,
    ) -> Res<()> {
        let Some(cl) = self.cl.as_deref_mut() else {
            return Ok(());
        };
        if cl.tags.is_empty() {
            return Ok(());
        }
        let cur = cl.cur;
        let i = cur * cl.n + t;
        let (a, waits) = (cl.arrive[i], cl.wait[i]);
        let me = pack(cur, t, pc, a);
        let stamp = cl.stamp(t);
        for b in off..off + len {
            let [wt, rt] = cl.tags[rank][b];
            let [wc, rc] = cl.mtags.get(rank).map_or([0; 2], |m| m[b]);
            let foreign = |tag: u64| tag != 0 && unpack(tag).0 != cur;
            let other = if foreign(wt) && !cl.ordered(wt, wc, i, waits) {
                Some((wt, AccessKind::Write))
            } else if write && foreign(rt) && !cl.ordered(rt, rc, i, waits) {
                Some((rt, AccessKind::Read))
            } else {
                None
            };
            if let Some((tag, kind)) = other {
                let other_site = self.tag_site(tag);
                let site = self.site(t, pc);
                let cl = self.cl.as_ref().expect("a cluster launch");
                return fault(Fault::Sim(Box::new(SimError::ClusterRace {
                    site,
                    rank: rank as u32,
                    owner_ctaid: cl.ctaids[rank],
                    offset: b as u64,
                    this: AccessKind::of(write, false),
                    other: kind,
                    other_site,
                })));
            }
            // a read keeps the tag of a read of another CTA this one is
            // not ordered after
            let keep = !write && foreign(rt) && !cl.ordered(rt, rc, i, waits);
            let k = if write {
                0
            } else if !keep {
                1
            } else {
                continue;
            };
            cl.tags[rank][b][k] = me;
            if let Some(m) = cl.mtags.get_mut(rank) {
                m[b][k] = stamp;
            }
        }
        Ok(())
    }
}

/// `e` with `site` in place of a [`blank_site`].
pub(crate) fn with_site(mut e: SimError, at: Box<Site>) -> SimError {
    match &mut e {
        SimError::ClusterRank { site, .. }
        | SimError::ClusterBarrier { site, .. }
        | SimError::BulkCopy { site, .. }
            if site.kernel.is_empty() =>
        {
            *site = at;
        }
        _ => {}
    }
    e
}

/// A placeholder site: [`Exec::to_err`] fills in the faulting thread's.
pub(crate) fn blank_site() -> Box<Site> {
    Box::new(Site {
        kernel: String::new(),
        ctaid: (0, 0, 0),
        tid: (0, 0, 0),
        line: 0,
        instr: String::new(),
    })
}
