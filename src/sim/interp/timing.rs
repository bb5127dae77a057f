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
        Op::Ldmatrix { .. } | Op::Shfl { .. } | Op::Vote { .. } | Op::Redux { .. } => SHARED_CLOCKS,
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
}

impl Scoreboard {
    /// A scoreboard for `n` threads of `pitch` register slots, at clock 0.
    pub fn new(n: usize, pitch: usize) -> Self {
        Scoreboard {
            clk: vec![0; n],
            ready: vec![0; n * pitch],
            arrive: vec![0; n],
            copies: vec![0; n],
            fence: vec![0; n],
            pitch,
        }
    }

    /// Back to clock 0 (a new CTA).
    pub fn reset(&mut self) {
        self.clk.fill(0);
        self.ready.fill(0);
        self.arrive.fill(0);
        self.copies.fill(0);
        self.fence.fill(0);
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

    /// Thread `t` issues `inst`; `executed` is false for a predicated-off
    /// instruction (one clock once its guard is ready).
    pub fn issue(&mut self, t: usize, inst: &XInst, executed: bool) {
        let mut at = (self.clk[t] + 1).max(self.ready_of(t, inst.guard));
        if !executed {
            self.clk[t] = at;
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

    /// Threads `ts` leave a barrier together: each one's clock becomes
    /// the latest of theirs plus `cost`.
    pub fn join(&mut self, ts: impl Iterator<Item = usize> + Clone, cost: u64) {
        let Some(m) = ts.clone().map(|t| self.clk[t]).max() else {
            return;
        };
        for t in ts {
            self.clk[t] = m + cost;
            self.fence[t] = m + cost;
        }
    }

    /// The members `ts` of a warp collective `inst` completed: they issue
    /// it at the latest member's clock, its results ready its latency
    /// later.
    pub fn collective(&mut self, ts: impl Iterator<Item = usize> + Clone, inst: &XInst) {
        let Some(m) = ts.clone().map(|t| self.clk[t]).max() else {
            return;
        };
        let done = m + latency(&inst.op);
        for t in ts {
            self.clk[t] = m;
            self.fence[t] = self.fence[t].max(m);
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
