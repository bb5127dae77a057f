//! The critical-path scoreboard ([`crate::sim::Sim::set_timing`], off by
//! default): per thread a clock and a ready-clock per register slot.
//!
//! An executed instruction issues at `max(thread clock + 1, ready of its
//! source registers and guard)`; its destination registers become ready
//! at issue + [`latency`] of its class. A predicated-off instruction costs
//! one clock (after its guard is ready). Loads are the exception: a load
//! issues once its address (and guard) is ready and after the thread's
//! last store, atomic or barrier release, taking one issue slot, not
//! after the instructions before it in PTX order — ptxas schedules the
//! loads of an unrolled loop ahead of their uses, which PTX order does
//! not show (in PTX order a load used by the next instruction would stall
//! the thread for its whole latency each time). This is the optimistic
//! side: no limit on the loads in flight, and hoisting across loop
//! iterations as if every loop were unrolled. Barriers join: at a `bar.sync`
//! release every participating thread's clock becomes the latest of theirs
//! plus [`BAR_CLOCKS`]; at a `barrier.cluster.wait` release, a waiter's
//! clock is at least the latest arrival of the cluster's threads plus
//! [`CLUSTER_BARRIER_CLOCKS`]. Warp collectives (`shfl`, `vote`, `redux`,
//! `mma.sync`, `ldmatrix`, `bar.warp.sync`) join their members: each issues
//! at the latest member's clock. `cp.async.wait_group` waits for the
//! thread's last `cp.async` (any group: an overcount for a wait that
//! leaves groups pending) to complete at [`L2_HIT_CLOCKS`].
//!
//! An unguarded `mov` is free: no issue slot, its destination ready when
//! its source is (ptxas propagates register copies, the loop-carried
//! `mov`s of the DSL's `assign` included, and folds symbol addresses and
//! immediates into their users; a `mov` from a special register, an
//! `S2R` of about 20 clocks on the GPU, is undercounted).
//!
//! It models one thread's dependent chain and the joins between threads,
//! not issue bandwidth: a thread issues at most one instruction a clock
//! and never waits for a pipe another thread occupies. The CTA's critical
//! path is its latest thread clock at exit
//! ([`crate::sim::LaunchReport::critical_path`]).

use super::super::code::XInst;
use super::super::ir::*;

/// Clocks from the last arrival at a `bar.sync` to its release: an
/// estimate (about a dependent shared-memory round trip; not measured).
pub(crate) const BAR_CLOCKS: u64 = 24;

/// Clocks from the last arrival at a cluster barrier to its release: an
/// estimate, one SM-to-SM round trip (Luo et al., "Benchmarking and
/// Dissecting the Nvidia Hopper GPU Architecture", 2024, measure
/// distributed shared memory accesses at about 180–210 clocks); no
/// measured figure of `barrier.cluster` itself was found.
pub(crate) const CLUSTER_BARRIER_CLOCKS: u64 = 200;

/// A global load that hits L2 on Hopper: about 260 clocks (Luo et al.
/// 2024 above, 200–270 clocks for L2 hits; Chips and Cheese, "Nvidia's
/// H100: Funny L2, and Tons of Bandwidth", 2023, for the near/far
/// partition spread). DRAM misses are the memory term's, not the chain's.
pub(crate) const L2_HIT_CLOCKS: u64 = 260;

/// A distributed shared memory access (`ld.shared::cluster`, Luo et al.
/// 2024: about 180–210 clocks).
pub(crate) const DSMEM_CLOCKS: u64 = 190;

/// A shared-memory load or a shuffle: about 28 clocks (Hopper 23–33,
/// Luo et al. 2024; the figure `report::roofline::speed::dependent_latency`
/// takes for its load/store pipe).
pub(crate) const SHARED_CLOCKS: u64 = 28;

/// FP32, integer and `IMAD` dependent-issue latency: 4 clocks on Volta
/// through Hopper (Jia et al., "Dissecting the NVIDIA Volta GPU
/// Architecture via Microbenchmarking", 2018, and the Turing sequel,
/// 2019; Luo et al. 2024).
pub(crate) const ALU_CLOCKS: u64 = 4;

/// `MUFU` and conversions involving a float: about 18 clocks (the same
/// papers).
pub(crate) const XU_CLOCKS: u64 = 18;

/// FP64 (`DFMA`): 8 clocks on the FP64-rich parts (the same papers).
pub(crate) const FP64_CLOCKS: u64 = 8;

/// `mma.sync` (`HMMA`): 16 clocks (the same papers; the speed model's
/// tensor latency).
pub(crate) const MMA_CLOCKS: u64 = 16;

/// Clocks before a result of `op` can be used by a dependent instruction.
/// Multi-SASS operations take the chain of their SASS where it is known:
/// `div.rn.f32` ≈ `MUFU.RCP` then 4 dependent `FFMA` (18 + 16, its slow
/// path for huge or tiny quotients undercounted), `sqrt.rn.f32` and
/// `rcp.rn.f32` alike; FP64 division, square root and reciprocal ≈ a
/// `MUFU` seed and 8 dependent `DFMA` (18 + 64); integer division and
/// remainder ≈ 60 (an estimate: a reciprocal seed and about ten dependent
/// integer operations). Operations without a destination (stores, barrier
/// arrivals, branches) have none to make ready: their latency is unused.
pub(crate) fn latency(op: &Op) -> u64 {
    use super::super::fp::FOp;
    match *op {
        Op::Ld { sp, .. } | Op::Atom { sp, .. } => match sp {
            Space::Shared | Space::Local => SHARED_CLOCKS,
            Space::SharedCluster => DSMEM_CLOCKS,
            // generic addresses are taken as global (the HMM's are
            // shared windows resolved at run time: an overcount there)
            Space::Global | Space::Generic => L2_HIT_CLOCKS,
            Space::Param | Space::Const => SHARED_CLOCKS,
        },
        Op::Ldmatrix { .. } | Op::Shfl { .. } | Op::Vote { .. } | Op::Elect | Op::Redux { .. } => {
            SHARED_CLOCKS
        }
        Op::Mma { .. } => MMA_CLOCKS,
        Op::F32 {
            op: FOp::Div | FOp::Sqrt | FOp::Rcp,
            ..
        } => XU_CLOCKS + 4 * ALU_CLOCKS,
        Op::F64 {
            op: FOp::Div | FOp::Sqrt | FOp::Rcp,
        } => XU_CLOCKS + 8 * FP64_CLOCKS,
        Op::F64 { .. } => FP64_CLOCKS,
        Op::F64MinMax { .. } | Op::F64Abs | Op::F64Neg => FP64_CLOCKS,
        Op::Div { .. } | Op::Rem { .. } => 60,
        Op::Cvt { d, s, .. } => {
            let float = |t: CvtTy| matches!(t, CvtTy::F16 | CvtTy::Bf16 | CvtTy::F32 | CvtTy::F64);
            if float(d) || float(s) {
                XU_CLOCKS
            } else {
                ALU_CLOCKS
            }
        }
        Op::CvtMiniEnc { .. }
        | Op::CvtMiniDec { .. }
        | Op::CvtUe8m0Enc { .. }
        | Op::CvtUe8m0Dec
        | Op::CvtBf16x2 { .. }
        | Op::CvtTf32
        | Op::CvtF16x2 { .. }
        | Op::Approx { .. } => XU_CLOCKS,
        _ => ALU_CLOCKS,
    }
}

/// One CTA's scoreboard (module docs).
#[derive(Debug, Clone, Default)]
pub(crate) struct Scoreboard {
    /// Per thread: the clock its last instruction issued at.
    pub clk: Vec<u64>,
    /// Per thread and register slot (`t * pitch + slot`): the clock its
    /// value is ready at.
    pub ready: Vec<u64>,
    /// Per thread: the clock of its last cluster barrier arrival.
    pub arrive: Vec<u64>,
    /// Per thread: the clock its last `cp.async` completes at.
    pub copies: Vec<u64>,
    /// Per thread: the earliest clock a load may issue at (its last
    /// store, atomic or barrier release: [`Scoreboard::issue`]).
    pub fence: Vec<u64>,
    pitch: usize,
    /// Instructions per attribution row; 0 without attribution.
    lines: usize,
    /// Per thread, instruction and bucket ([`ISSUE`], [`WAIT`],
    /// [`JOIN`]): the clocks charged (module docs).
    cost: Vec<u64>,
    /// Per thread and register slot: the instruction that last wrote it.
    from: Vec<u32>,
}

/// Attribution bucket: the instruction's own issue slots.
pub(crate) const ISSUE: usize = 0;
/// Attribution bucket: clocks threads stalled for the instruction's
/// result.
pub(crate) const WAIT: usize = 1;
/// Attribution bucket: clocks threads waited at the instruction as a
/// barrier (its release cost included).
pub(crate) const JOIN: usize = 2;

/// One thread's attribution row: per instruction with a charge, its index
/// and its clocks per bucket.
pub(crate) type Row = Vec<(u32, [u64; 3])>;

impl Scoreboard {
    /// A scoreboard for `n` threads of `pitch` register slots, at clock 0,
    /// with attribution rows of `lines` instructions (0: none).
    pub fn new(n: usize, pitch: usize, lines: usize) -> Self {
        Scoreboard {
            clk: vec![0; n],
            ready: vec![0; n * pitch],
            arrive: vec![0; n],
            copies: vec![0; n],
            fence: vec![0; n],
            pitch,
            lines,
            cost: vec![0; n * lines * 3],
            from: vec![u32::MAX; if lines > 0 { n * pitch } else { 0 }],
        }
    }

    /// Charge `c` clocks of thread `t` to instruction `pc`, bucket `k`.
    #[inline]
    fn charge(&mut self, t: usize, pc: usize, k: usize, c: u64) {
        if c > 0 && pc < self.lines {
            self.cost[(t * self.lines + pc) * 3 + k] += c;
        }
    }

    /// With attribution: charge thread `t`'s issue of `pc` at `at` (its
    /// earliest slot `base`): one clock to `pc`, the stall to the writer
    /// of the guard or source that was ready last (`pc` itself if none).
    fn account(&mut self, t: usize, pc: usize, inst: &XInst, executed: bool, base: u64, at: u64) {
        self.charge(t, pc, ISSUE, 1);
        if at <= base {
            return;
        }
        let srcs: &[u32] = if executed { &inst.s } else { &[] };
        let who = std::iter::once(&inst.guard)
            .chain(srcs)
            .find(|&&s| (s as usize) < self.pitch && self.ready_of(t, s) == at)
            .map(|&s| self.from[t * self.pitch + s as usize])
            .filter(|&w| w != u32::MAX)
            .map_or(pc, |w| w as usize);
        self.charge(t, who, WAIT, at - base);
    }

    /// With attribution: thread `t`'s destinations of `inst` were written
    /// by `pc`.
    fn wrote(&mut self, t: usize, pc: usize, inst: &XInst) {
        for &k in super::super::code::dst_writes(&inst.op) {
            let d = inst.d[k] as usize;
            if d < self.pitch {
                self.from[t * self.pitch + d] = pc as u32;
            }
        }
    }

    /// Thread `t` takes thread `w`'s attribution row.
    fn take_row(&mut self, t: usize, w: usize) {
        if t != w && self.lines > 0 {
            let l = self.lines * 3;
            self.cost.copy_within(w * l..(w + 1) * l, t * l);
        }
    }

    /// Thread `t`'s attribution row (empty without attribution).
    pub fn row(&self, t: usize) -> Row {
        if self.lines == 0 {
            return Vec::new();
        }
        let l = self.lines * 3;
        self.cost[t * l..(t + 1) * l]
            .chunks_exact(3)
            .enumerate()
            .filter(|(_, c)| c.iter().any(|&x| x > 0))
            .map(|(pc, c)| (pc as u32, [c[0], c[1], c[2]]))
            .collect()
    }

    /// A cluster barrier released thread `t`, waiting at `pc`, at `done`
    /// (its latest arrival plus the barrier's cost).
    pub fn release(&mut self, t: usize, done: u64, pc: usize) {
        if done > self.clk[t] {
            let c = done - self.clk[t];
            self.charge(t, pc, JOIN, c);
            self.clk[t] = done;
        }
        self.fence[t] = self.clk[t];
    }

    /// Back to clock 0 (a new CTA).
    pub fn reset(&mut self) {
        self.clk.fill(0);
        self.ready.fill(0);
        self.arrive.fill(0);
        self.copies.fill(0);
        self.fence.fill(0);
        self.cost.fill(0);
        self.from.fill(u32::MAX);
    }

    /// The clock register `s` of thread `t` is ready at (0 for an absent
    /// one).
    #[inline]
    fn ready_of(&self, t: usize, s: u32) -> u64 {
        if (s as usize) < self.pitch {
            self.ready[t * self.pitch + s as usize]
        } else {
            0
        }
    }

    /// Thread `t` issues `inst`, instruction `pc`; `executed` is false for
    /// a predicated-off instruction (one clock once its guard is ready).
    pub fn issue(&mut self, t: usize, pc: usize, inst: &XInst, executed: bool) {
        if let Op::Mov { .. } = inst.op
            && inst.guard == NO_REG
        {
            // an unguarded copy is free: its destination is ready with its
            // source (module docs)
            let (d, s0) = (inst.d[0] as usize, inst.s[0]);
            if d < self.pitch {
                self.ready[t * self.pitch + d] = self.ready_of(t, s0);
                if self.lines > 0 {
                    let w = if (s0 as usize) < self.pitch {
                        self.from[t * self.pitch + s0 as usize]
                    } else {
                        u32::MAX
                    };
                    self.from[t * self.pitch + d] = w;
                }
            }
            return;
        }
        let base = self.clk[t] + 1;
        let mut at = base.max(self.ready_of(t, inst.guard));
        if !executed {
            self.clk[t] = at;
            if self.lines > 0 {
                self.account(t, pc, inst, false, base, at);
            }
            return;
        }
        for &s in &inst.s {
            at = at.max(self.ready_of(t, s));
        }
        if let Op::CpAsyncWait { .. } = inst.op {
            at = at.max(self.copies[t]);
        }
        if let Op::Ld { .. } = inst.op {
            // hoisted: a load issues once its address is ready (and after
            // the thread's last store or barrier), not after the
            // instructions before it in PTX order, as ptxas schedules the
            // loads of an unrolled loop ahead of their uses; it takes the
            // thread's next issue slot
            let mut early = self.fence[t].max(self.ready_of(t, inst.guard));
            for &s in &inst.s {
                early = early.max(self.ready_of(t, s));
            }
            self.clk[t] += 1;
            if self.lines > 0 {
                self.charge(t, pc, ISSUE, 1);
                self.wrote(t, pc, inst);
            }
            let done = early + latency(&inst.op);
            for &k in super::super::code::dst_writes(&inst.op) {
                let d = inst.d[k] as usize;
                if d < self.pitch {
                    self.ready[t * self.pitch + d] = done;
                }
            }
            return;
        }
        self.clk[t] = at;
        if self.lines > 0 {
            self.account(t, pc, inst, true, base, at);
            self.wrote(t, pc, inst);
        }
        if matches!(inst.op, Op::St { .. } | Op::Atom { .. }) {
            self.fence[t] = at;
        }
        match inst.op {
            Op::ClusterArrive { .. } => self.arrive[t] = at,
            Op::CpAsync { .. } => self.copies[t] = self.copies[t].max(at + L2_HIT_CLOCKS),
            _ => {}
        }
        let done = at + latency(&inst.op);
        for &k in super::super::code::dst_writes(&inst.op) {
            let d = inst.d[k] as usize;
            if d < self.pitch {
                self.ready[t * self.pitch + d] = done;
            }
        }
    }

    /// Threads `ts` leave a barrier, instruction `pc`, together: each
    /// one's clock becomes the latest of theirs plus `cost` (with
    /// attribution, the latest one's row plus `cost` charged to `pc`).
    pub fn join(&mut self, ts: impl Iterator<Item = usize> + Clone, cost: u64, pc: usize) {
        let Some((m, w)) = self.latest_of(ts.clone()) else {
            return;
        };
        for t in ts.clone() {
            self.clk[t] = m + cost;
            self.fence[t] = m + cost;
            self.take_row(t, w);
        }
        if self.lines > 0 {
            for t in ts {
                self.charge(t, pc, JOIN, cost);
            }
        }
    }

    /// The latest clock of threads `ts` and the first thread at it.
    fn latest_of(&self, ts: impl Iterator<Item = usize>) -> Option<(u64, usize)> {
        ts.fold(None, |b, t| match b {
            Some((m, _)) if m >= self.clk[t] => b,
            _ => Some((self.clk[t], t)),
        })
    }

    /// The members `ts` of a warp collective `inst`, instruction `pc`,
    /// completed: they issue it at the latest member's clock (with
    /// attribution, taking its row), its results ready its latency later.
    pub fn collective(&mut self, ts: impl Iterator<Item = usize> + Clone, inst: &XInst, pc: usize) {
        let Some((m, w)) = self.latest_of(ts.clone()) else {
            return;
        };
        let done = m + latency(&inst.op);
        for t in ts {
            self.clk[t] = m;
            self.fence[t] = self.fence[t].max(m);
            if self.lines > 0 {
                self.take_row(t, w);
                self.wrote(t, pc, inst);
            }
            for &k in super::super::code::dst_writes(&inst.op) {
                let d = inst.d[k] as usize;
                if d < self.pitch {
                    self.ready[t * self.pitch + d] = done;
                }
            }
        }
    }

    /// The latest thread clock (the CTA's critical path once it exited)
    /// and that thread (the first on ties).
    pub fn latest(&self) -> (u64, usize) {
        self.clk
            .iter()
            .enumerate()
            .fold((0, 0), |b, (t, &c)| if c > b.0 { (c, t) } else { b })
    }
}

/// A launch's longest critical path so far (clocks, CTA, thread, as
/// `grid::WarpAt`) with its thread's attribution row.
pub(crate) type PathBest = std::sync::Mutex<Option<((u64, u64, u32), Row)>>;

/// A CTA (linear index `lin`) ended with scoreboard `s`: its latest
/// thread's row replaces `best`'s when its path is longer (the lower CTA,
/// then thread, on ties, as `grid::heavier`, so that the result does not
/// depend on the order the CTAs ran).
pub(crate) fn offer(best: &PathBest, s: &Scoreboard, lin: u64) {
    let (c, t) = s.latest();
    let key = (c, lin, t as u32);
    let mut b = best.lock().unwrap_or_else(|e| e.into_inner());
    let better = match &*b {
        None => true,
        Some((k, _)) => super::super::grid::heavier(*k, key) != *k,
    };
    if better {
        *b = Some((key, s.row(t)));
    }
}
