//! The interpreter: execution of one CTA, the interpreter loop of a thread
//! (budget, counters, guards, the run-time checks the static analysis
//! left), and the CTA scheduler that runs each thread to its next
//! synchronisation point. Instruction semantics are in `step` (with `int`,
//! `float` and `convert` helpers), a thread's memory access in `access`
//! (global memory itself is `super::global_mem`), warp collectives and barriers in
//! `warp`, findings in `findings`; the checks' rules live in
//! `super::checks`, the grid of CTAs in `super::grid`.

mod access;
pub(crate) mod async_copy;
mod builtins;
pub(crate) mod bulk;
mod bulk_tensor;
pub(crate) mod cluster;
mod convert;
mod findings;
mod float;
mod int;
mod ldst;
mod lockstep;
pub(crate) mod mbar_order;
mod mma;
mod printf;
mod step;
pub(crate) mod timing;
mod warp;

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::code::{Code, F_BRAUNI, F_CHK, F_CLOCK, F_GCHK, F_GUARD, F_MARK, XInst, dst_writes};
use super::cta::{CtaState, TState};
use super::error::SimError;
use super::ir::*;
use crate::exec::LaunchConfig;

pub(crate) use access::{Base, GlobalView, get_le};

/// An internal fault, turned into a [`SimError`] with its site.
pub(crate) enum Fault {
    Oob(Space, u64, u32),
    Misaligned(Space, u64, u32),
    Race {
        offset: u64,
        this: super::checks::global::Kind,
        other: super::checks::global::Kind,
        other_tid: u32,
    },
    /// A global access conflicting with an earlier CTA's (the other CTA is
    /// named by the grid, which knows the earlier CTAs).
    GlobalRace {
        addr: u64,
        this: super::checks::global::Kind,
        other: super::checks::global::Kind,
    },
    /// A global access conflicting with another warp's of the CTA in the
    /// same barrier interval (`checks::warp_race`).
    WarpRace {
        addr: u64,
        this: super::checks::global::Kind,
        other: super::checks::global::Kind,
        /// `u32::MAX`: several warps.
        other_warp: u32,
    },
    UninitShared(u64, u32),
    /// A shared access (`write`: a store or a `cp.async`) to `offset`,
    /// which the pending `cp.async` at `copy_pc` of thread `copy_tid`
    /// will write (`async_copy`).
    AsyncPending {
        offset: u64,
        write: bool,
        copy_tid: u32,
        copy_pc: u32,
    },
    /// A shared access (`write`: a store) to `offset`, which the pending
    /// bulk copy at `copy_pc` of thread `copy_tid` of rank `copy_rank`
    /// will write (`bulk`).
    BulkPending {
        offset: u64,
        write: bool,
        copy_tid: u32,
        copy_rank: u32,
        copy_pc: u32,
    },
    UninitGlobal(u64, u32),
    UninitReg(u32),
    Trap(&'static str),
    /// `__assertfail` (the builtin behind device `assert`).
    Assert {
        message: String,
        file: String,
        line: u32,
        function: String,
    },
    Warp(String),
    /// A finding built whole (the cluster checks, `cluster`; a blank site
    /// is the faulting thread's).
    Sim(Box<SimError>),
    /// A global access whose value depends on the order of the CTA's
    /// threads, met by the lockstep schedule (`checks::reorder`), which
    /// then runs the CTA again in thread order: never a finding.
    Reorder,
}

/// Faults are rare: boxed, they keep the interpreter's results small.
pub(crate) type Res<T> = Result<T, Box<Fault>>;

#[cold]
#[inline(never)]
pub(crate) fn fault<T>(f: Fault) -> Res<T> {
    Err(Box::new(f))
}

/// What `step` returns: the next instruction, a park at a
/// synchronisation point, an exit, a fault (in `Exec::pending`), or any
/// other value: the instruction to jump to.
pub(crate) const NEXT: u32 = u32::MAX;
pub(crate) const PARK: u32 = u32::MAX - 1;
pub(crate) const EXIT: u32 = u32::MAX - 2;
pub(crate) const FAULT: u32 = u32::MAX - 3;
/// The next instruction was done with this one (an `Op::SetpIBra`'s
/// `bra`, the last of its block): go on after it.
pub(crate) const SKIP: u32 = u32::MAX - 4;

/// Why a CTA stopped before its threads all exited.
#[derive(Debug)]
pub(crate) enum Stop {
    /// A finding (an instruction-budget finding included).
    Finding(SimError),
    /// The launch-wide instruction count passed the budget while the CTA
    /// ran; the launch's outcome is decided by the grid's ordered walk.
    Aborted,
}

/// What every worker of a launch reads.
pub(crate) struct Kernel<'a> {
    pub e: &'a Entry,
    pub code: &'a Code,
    /// The `.const` bank.
    pub consts: &'a [u8],
    pub params: &'a [u8],
    pub cfg: LaunchConfig,
    pub checks: bool,
    /// The launch's instruction budget (`u64::MAX` for none).
    pub limit: u64,
    /// `%clock` value before the launch's first read.
    pub clock_base: u64,
    /// Shared memory bytes per CTA.
    pub smem: usize,
    /// Try the lockstep schedule ([`SimOptions::lockstep`](super::SimOptions::lockstep)).
    pub lockstep: bool,
    /// The emulated device's SM: it selects the tensor-core model of
    /// `mma.sync` (not the module's `.target`).
    pub sm: crate::target::Sm,
    /// The cluster shape and whether the launch named it, for a launch
    /// in clusters (`super::cluster`).
    pub cluster: Option<((u32, u32, u32), bool)>,
    /// Keep the critical-path scoreboard ([`timing`]).
    pub timing: bool,
    /// With the scoreboard, its attribution by instruction ([`timing`]):
    /// the longest path's row so far.
    pub path_lines: Option<timing::PathBest>,
}

impl Kernel<'_> {
    /// A CTA's state for this launch, as a block starts it (the
    /// single-CTA worker's and each rank of a cluster's).
    pub fn fresh_cta(&self) -> CtaState {
        CtaState::new(
            self.code,
            self.params,
            self.cfg,
            self.smem,
            self.e.local_bytes,
            self.e.n_brauni,
            self.checks,
        )
    }
}

/// Launch-wide progress of a parallel run.
#[derive(Default)]
pub(crate) struct Progress {
    /// Instructions issued by every worker so far (in chunks).
    pub issued: AtomicU64,
    /// Set once `issued` passed the budget: workers stop.
    pub abort: AtomicBool,
    /// The lowest linear CTA index with a finding: later CTAs cannot change
    /// the outcome and are not started.
    pub lowest_finding: AtomicU64,
    /// The CTAs completed from the first on, in order.
    pub prefix: Mutex<Prefix>,
}

/// The completed CTAs `0..upto` and their instructions: the CTA `upto`
/// knows its exact share of the budget, `limit − sum`, and runs to it
/// instead of stopping with the others when the launch-wide count passes
/// the budget.
#[derive(Default)]
pub(crate) struct Prefix {
    pub upto: u64,
    pub sum: u64,
    /// Completed CTAs beyond `upto` and their instructions.
    pub later: std::collections::BTreeMap<u64, u64>,
}

impl Progress {
    /// Record that CTA `lin` completed after `issued` instructions.
    pub fn completed(&self, lin: u64, issued: u64) {
        let mut p = self.prefix.lock().unwrap_or_else(|e| e.into_inner());
        p.later.insert(lin, issued);
        loop {
            let next = p.upto;
            match p.later.remove(&next) {
                Some(n) => {
                    p.upto += 1;
                    p.sum = p.sum.saturating_add(n);
                }
                None => break,
            }
        }
    }

    /// The instructions of the CTAs before `lin` if they all completed.
    fn before(&self, lin: u64) -> Option<u64> {
        let p = self.prefix.lock().unwrap_or_else(|e| e.into_inner());
        (p.upto == lin).then_some(p.sum)
    }
}

/// Instructions a worker issues between two looks at the launch-wide count.
const CHUNK: u64 = 1 << 16;

/// The most instructions a lockstep attempt of a CTA capped at `cap` may
/// issue: a sixteenth of the cap, but at least [`LOCKSTEP_FLOOR`]. A CTA
/// that reaches its cap (a spinning kernel) is run again in thread order
/// for the exact stop; an attempt allowed the whole cap doubled the time a
/// runaway launch takes to fail (the default-budget spin of
/// `tests/sim_budget.rs`: 7 s, now 3.2 s). A CTA that needs more than this
/// runs in thread order (about 1.3× slower); the largest launch of this
/// repository's tests and demo, 8.8·10⁷ instructions over 8 blocks, issues
/// about a sixth of the default budget's sixteenth per block.
pub(crate) fn lockstep_cap(cap: u64) -> u64 {
    cap.min((cap / 16).max(LOCKSTEP_FLOOR))
}

/// The smallest lockstep cap (2²⁰ instructions, a few milliseconds): small
/// explicit budgets keep the lockstep schedule for their CTAs.
const LOCKSTEP_FLOOR: u64 = 1 << 20;

/// A worker's interpreter: one CTA at a time.
pub(crate) struct Exec<'a> {
    pub k: &'a Kernel<'a>,
    pub cta: CtaState,
    pub g: GlobalView<'a>,
    /// Per block leader: entries into the block over the CTAs this worker
    /// ran (see [`XInst::blen`]).
    pub counts: Vec<u64>,
    pub ctaid: (u32, u32, u32),
    /// Linear index of the running CTA.
    lin: u64,
    /// Completed CTA barriers over the CTAs this worker ran.
    pub barriers: u64,
    /// `%clock` reads of the running CTA.
    pub clock: u64,
    /// What is left of the current budget chunk.
    budget: u64,
    chunk: u64,
    /// The current chunk ends at the CTA's cap: blocks are charged
    /// instruction by instruction.
    exact: bool,
    /// Instructions the running CTA issued before the current chunk.
    issued: u64,
    /// The most instructions the running CTA may issue.
    cap: u64,
    progress: Option<&'a Progress>,
    /// The fault of the instruction that returned [`FAULT`].
    pending: Option<Box<Fault>>,
    /// Per block leader: the lockstep attempt's block entries, added to
    /// `counts` when it succeeds.
    lcounts: Vec<u64>,
    /// The lockstep schedule's group and a part of it (their buffers).
    group: Vec<u32>,
    sub: Vec<u32>,
    /// CTAs this worker completed in lockstep.
    pub lockstep_ctas: u64,
    /// The running CTA's `vprintf` output: (thread, text), in execution
    /// order.
    pub printf: Vec<(u32, Vec<u8>)>,
    /// The cluster being run, for entries launched in clusters
    /// (`cluster`).
    pub cl: Option<Box<cluster::ClusterRun>>,
}

/// The largest of per-warp counts `w` and its index (the first on ties;
/// `(0, 0)` when empty).
pub(crate) fn heaviest_of(w: &[u64]) -> (u64, u32) {
    w.iter()
        .enumerate()
        .fold((0, 0), |b, (i, &c)| if c > b.0 { (c, i as u32) } else { b })
}

#[inline(always)]
pub(crate) fn mask(w: u8) -> u64 {
    // w is 1..=64 (operation widths)
    u64::MAX >> (64 - w as u32).min(63)
}

#[inline(always)]
pub(crate) fn sext(v: u64, w: u8) -> i64 {
    if w >= 64 {
        v as i64
    } else {
        let sh = 64 - w as u32;
        ((v << sh) as i64) >> sh
    }
}

impl<'a> Exec<'a> {
    pub fn new(k: &'a Kernel<'a>, g: GlobalView<'a>, progress: Option<&'a Progress>) -> Self {
        Exec {
            k,
            cta: k.fresh_cta(),
            g,
            counts: vec![0; k.code.insts.len()],
            ctaid: (0, 0, 0),
            lin: 0,
            barriers: 0,
            clock: 0,
            budget: 0,
            chunk: 0,
            exact: false,
            issued: 0,
            cap: 0,
            progress,
            pending: None,
            lcounts: vec![0; k.code.insts.len()],
            group: Vec::new(),
            sub: Vec::new(),
            lockstep_ctas: 0,
            printf: Vec::new(),
            cl: None,
        }
    }

    /// Keep `f` for the interpreter loop; the code `step` returns.
    #[cold]
    #[inline(never)]
    pub(crate) fn raise(&mut self, f: Box<Fault>) -> u32 {
        self.pending = Some(f);
        FAULT
    }

    /// Run CTA `ctaid` (linear index `lin`) to completion, issuing at most
    /// `cap` instructions. Returns the instructions issued, with the reason
    /// if it stopped early. The CTA's global accesses are in `self.g`.
    pub fn run_cta(&mut self, ctaid: (u32, u32, u32), lin: u64, cap: u64) -> (u64, Option<Stop>) {
        if self.lockstep_allowed()
            && let Some(issued) = self.try_lockstep(ctaid, lin, cap)
        {
            return (issued, None);
        }
        self.start(ctaid, lin, cap);
        let stop = self.schedule().err();
        let issued = self.issued + (self.chunk - self.budget);
        if let Some(p) = self.progress {
            p.issued
                .fetch_add(self.chunk - self.budget, Ordering::Relaxed);
        }
        (issued, stop)
    }

    /// Set up CTA `ctaid` (linear index `lin`) with a cap of `cap`
    /// instructions.
    fn start(&mut self, ctaid: (u32, u32, u32), lin: u64, cap: u64) {
        self.ctaid = ctaid;
        self.lin = lin;
        self.cta.reset(self.k.code, ctaid, lin, self.k.checks);
        self.cta.asyncs.reset();
        self.reset_time();
        self.printf.clear();
        self.clock = 0;
        self.issued = 0;
        self.cap = cap;
        self.chunk = 0;
        self.budget = 0;
        self.exact = false;
    }

    /// Whether the running launch may try the lockstep schedule: the
    /// entry's results do not depend on the threads' order
    /// ([`Code::lockstep_ok`]), checks are on (shared-memory conflicts are
    /// findings), and the CTA runs on a snapshot without a watch list (so
    /// that it can start again: its writes are private and its accesses
    /// are checked when the walk takes it).
    fn lockstep_allowed(&self) -> bool {
        self.k.lockstep
            && !self.k.timing
            && self.k.checks
            && self.g.shadow.probe.is_none()
            && self.cta.probe.is_none()
            && self.k.code.lockstep_ok
            && self.g.watch.is_none()
            && matches!(self.g.base, Base::Snapshot(_))
    }

    /// Run CTA `ctaid` in lockstep (`lockstep`): its instruction count if
    /// it completed; `None` if the attempt ended early, with everything it
    /// did undone (the CTA then runs in thread order).
    fn try_lockstep(&mut self, ctaid: (u32, u32, u32), lin: u64, cap: u64) -> Option<u64> {
        let barriers = self.barriers;
        self.start(ctaid, lin, lockstep_cap(cap));
        self.g.lockstep = true;
        let ok = self.schedule().is_ok();
        self.g.lockstep = false;
        if ok {
            for (c, &l) in self.counts.iter_mut().zip(&self.lcounts) {
                *c += l;
            }
            let issued = self.issued + (self.chunk - self.budget);
            if let Some(p) = self.progress {
                p.issued.fetch_add(issued, Ordering::Relaxed);
            }
            self.lcounts.fill(0);
            self.lockstep_ctas += 1;
            return Some(issued);
        }
        self.lcounts.fill(0);
        self.barriers = barriers;
        self.pending = None;
        self.g.shadow.clear();
        None
    }

    /// Run every thread of the CTA to completion.
    fn schedule(&mut self) -> Result<(), Stop> {
        let n = self.cta.n;
        let code: &'a Code = self.k.code;
        loop {
            // run what can run, counting where the threads stop
            let (mut exited, mut at_bar, mut at_warp, mut at_cluster) = (0, 0, 0, 0);
            let mut bar_pc = u32::MAX;
            let mut one_bar = true;
            // (barriers change the epoch only between rounds; the global
            // check's is the `bar.sync` epochs', `CtaState::cl_bumps`)
            self.g.shadow.epoch = self.cta.epoch - self.cta.cl_bumps;
            let mut regs = std::mem::take(&mut self.cta.regs);
            let ran = if self.g.lockstep {
                let mut counts = std::mem::take(&mut self.lcounts);
                let ran = self.run_lockstep(&mut regs, &mut counts);
                self.lcounts = counts;
                ran
            } else {
                let mut counts = std::mem::take(&mut self.counts);
                let ran = self.run_threads(&mut regs, &mut counts);
                self.counts = counts;
                ran
            };
            self.cta.regs = regs;
            ran?;
            for t in 0..n {
                match self.cta.state[t] {
                    TState::Exit => exited += 1,
                    TState::Park => {
                        let pc = self.cta.pc[t];
                        if matches!(code.insts[pc as usize].op, Op::Bar { .. }) {
                            at_bar += 1;
                            one_bar &= bar_pc == u32::MAX || bar_pc == pc;
                            bar_pc = pc;
                        } else if matches!(
                            code.insts[pc as usize].op,
                            Op::ClusterWait | Op::MbarTryWait
                        ) {
                            at_cluster += 1;
                        } else {
                            at_warp += 1;
                        }
                    }
                    TState::Run => {}
                }
            }
            if exited == n {
                return Ok(());
            }
            if at_warp > 0 && self.resolve_warps().map_err(Stop::Finding)? {
                continue;
            }
            // threads wait for the cluster barrier: the cluster's schedule
            // goes on with the other CTAs (`cluster`)
            if at_cluster > 0 {
                return Ok(());
            }
            // the common barrier: every thread at one `bar.sync` without a
            // thread count
            if at_bar == n && one_bar && code.insts[bar_pc as usize].s[1] == NO_REG {
                if let Some(s) = self.cta.time.as_mut() {
                    s.join(0..n, timing::BAR_CLOCKS, bar_pc as usize);
                }
                self.cta.state.fill(TState::Run);
                self.cta.pc.fill(bar_pc + 1);
                self.cta.epoch += 1;
                self.barriers += 1;
                continue;
            }
            self.resolve_barrier().map_err(Stop::Finding)?;
        }
    }

    /// The current budget chunk cannot pay for a block of `need`
    /// instructions that thread `t` is about to start at `pc`: account for
    /// what was used, stop if the launch's budget is passed (parallel runs)
    /// or the CTA's cap is reached, else start a chunk — one that ends at
    /// the cap puts the interpreter in exact mode.
    #[cold]
    #[inline(never)]
    fn refill(&mut self, t: usize, pc: usize, need: u64) -> Result<(), Stop> {
        let used = self.chunk - self.budget;
        self.issued += used;
        self.chunk = 0;
        self.budget = 0;
        if let Some(p) = self.progress {
            let total = p.issued.fetch_add(used, Ordering::Relaxed) + used;
            if let Some(before) = p.before(self.lin) {
                // every earlier CTA is done: this one's cap is exact
                self.cap = self.cap.min(self.k.limit.saturating_sub(before));
            } else if total > self.k.limit || p.abort.load(Ordering::Relaxed) {
                p.abort.store(true, Ordering::Relaxed);
                return Err(Stop::Aborted);
            }
        }
        let left = self.cap.saturating_sub(self.issued);
        if left == 0 {
            return Err(Stop::Finding(self.budget_exhausted(t, pc)));
        }
        self.chunk = left.min(CHUNK.max(need));
        self.budget = self.chunk;
        self.exact = self.chunk < need;
        Ok(())
    }

    /// Run every runnable thread until it parks at a synchronisation point
    /// or exits. The register files and block counters are out of `self`
    /// meanwhile, so that the interpreter indexes plain slices.
    fn run_threads(&mut self, regs: &mut [u64], counts: &mut [u64]) -> Result<(), Stop> {
        let (ns, pitch) = (self.cta.stride, self.cta.pitch);
        for t in 0..self.cta.n {
            if self.cta.state[t] == TState::Run {
                let before = self.cta_issued();
                let r = self.interpret(t, &mut regs[t * pitch..][..ns], counts);
                self.cta.warp_issued[t / 32] += self.cta_issued() - before;
                r?;
            }
        }
        Ok(())
    }

    /// Instructions the running CTA (in a cluster, the cluster) issued so
    /// far: what the finished chunks used and the current one's use.
    #[inline(always)]
    pub(crate) fn cta_issued(&self) -> u64 {
        self.issued + (self.chunk - self.budget)
    }

    /// The running CTA's heaviest warp: the thread-instructions its lanes
    /// issued and its index in the CTA (the first such warp on ties).
    pub(crate) fn heaviest_warp(&self) -> (u64, u32) {
        heaviest_of(&self.cta.warp_issued)
    }

    /// The running CTA's critical path ([`timing`]): its latest thread
    /// clock and that thread; `(0, 0)` without the scoreboard.
    pub(crate) fn critical_path(&self) -> (u64, u32) {
        self.cta.time.as_ref().map_or((0, 0), |s| {
            if let Some(best) = &self.k.path_lines {
                timing::offer(best, s, self.lin);
            }
            let (c, t) = s.latest();
            (c, t as u32)
        })
    }

    /// A scoreboard at clock 0 for the running CTA when the launch keeps
    /// one ([`timing`]).
    pub(crate) fn reset_time(&mut self) {
        if self.k.timing {
            let (n, pitch) = (self.cta.n, self.cta.pitch);
            let lines = self
                .k
                .path_lines
                .as_ref()
                .map_or(0, |_| self.k.code.insts.len());
            self.cta
                .time
                .get_or_insert_with(|| Box::new(timing::Scoreboard::new(n, pitch, lines)))
                .reset();
        }
    }

    /// Thread `t` issues `inst` on the scoreboard (`executed`: false for a
    /// predicated-off instruction).
    #[cold]
    #[inline(never)]
    fn time(&mut self, t: usize, pc: usize, inst: &XInst, executed: bool) {
        if let Some(s) = self.cta.time.as_mut() {
            s.issue(t, pc, inst, executed);
        }
    }

    fn interpret(&mut self, t: usize, rf: &mut [u64], counts: &mut [u64]) -> Result<(), Stop> {
        // the register file's length is a power of two ([`Code::stride`]):
        // `step` indexes it with a mask, which needs no bounds check
        assert!(rf.len().is_power_of_two());
        let code: &'a Code = self.k.code;
        let insts = &code.insts[..];
        let mut pc = self.cta.pc[t] as usize;
        // the budget left in the chunk, kept in a local (written back on
        // every way out); 0 in exact mode, so that every block takes the
        // slow path
        let mut budget = if self.exact { 0 } else { self.budget };
        'blocks: loop {
            // `pc` starts a block
            let Some(first) = insts.get(pc) else {
                // falling off the end of the entry is an implicit `ret`
                self.cta.state[t] = TState::Exit;
                self.sync_budget(budget);
                return Ok(());
            };
            let len = first.blen as u64;
            if budget < len {
                self.sync_budget(budget);
                if !self.exact {
                    self.refill(t, pc, len)?;
                }
                if self.exact {
                    return self.interpret_exact(t, pc, rf, counts);
                }
                budget = self.budget;
            }
            budget -= len;
            counts[pc] += 1;
            let start = pc;
            for (k, inst) in insts[start..start + len as usize].iter().enumerate() {
                let at = start + k;
                if inst.flags != 0 {
                    match self.pre_step(t, at, rf, inst) {
                        Ok(true) => {}
                        Ok(false) => {
                            if self.k.timing {
                                self.time(t, at, inst, false);
                            }
                            continue;
                        }
                        Err(e) => {
                            self.sync_budget(budget);
                            return Err(e);
                        }
                    }
                }
                if self.k.timing {
                    self.time(t, at, inst, true);
                }
                let r = self.step(t, at, rf, inst);
                if r != NEXT {
                    match r {
                        PARK | EXIT => {
                            self.cta.pc[t] = at as u32;
                            self.cta.state[t] = if r == PARK {
                                TState::Park
                            } else {
                                TState::Exit
                            };
                            self.sync_budget(budget);
                            return Ok(());
                        }
                        FAULT => {
                            self.sync_budget(budget);
                            return Err(self.pending_finding(t, at));
                        }
                        SKIP => {
                            pc = at + 2;
                            continue 'blocks;
                        }
                        target => {
                            pc = target as usize;
                            continue 'blocks;
                        }
                    }
                }
            }
            pc = start + len as usize;
        }
    }

    /// Write the interpreter loop's budget back (outside exact mode, where
    /// `interpret_exact` keeps `self.budget` itself).
    #[inline(always)]
    fn sync_budget(&mut self, budget: u64) {
        if !self.exact {
            self.budget = budget;
        }
    }

    /// The finding of the fault `step` raised at thread `t`, `pc`.
    #[cold]
    #[inline(never)]
    fn pending_finding(&mut self, t: usize, pc: usize) -> Stop {
        let f = self.pending.take().expect("a raised fault");
        self.finding(*f, t, pc)
    }

    /// The work before instruction `pc` of thread `t` executes when it has
    /// flags: the guard (whether it executes: `false` skips it), `bra.uni`
    /// uniformity, the run-time initialisation checks, `%clock`, and the
    /// initialisation record of its destinations.
    #[inline(always)]
    fn pre_step(
        &mut self,
        t: usize,
        pc: usize,
        rf: &mut [u64],
        inst: &XInst,
    ) -> Result<bool, Stop> {
        if inst.flags & F_GUARD != 0 {
            let checks = self.k.checks;
            if inst.flags & F_GCHK != 0
                && checks
                && !self.cta.init[t * self.cta.pitch + inst.guard as usize]
            {
                return Err(self.finding(Fault::UninitReg(inst.guard), t, pc));
            }
            if (rf[inst.guard as usize & (rf.len() - 1)] != 0) == inst.guard_neg {
                if inst.flags & F_BRAUNI != 0 && checks {
                    self.uniform(t, pc, inst, false)?;
                }
                return Ok(false);
            }
        }
        if inst.flags & (F_CHK | F_CLOCK | F_BRAUNI | F_MARK) != 0 {
            self.pre_exec(t, pc, rf, inst)?;
        }
        Ok(true)
    }

    /// The interpreter for the rest of a CTA whose cap falls inside the
    /// block at `pc`: instructions are charged one by one, and the one past
    /// the cap is the budget finding.
    #[cold]
    #[inline(never)]
    fn interpret_exact(
        &mut self,
        t: usize,
        mut pc: usize,
        rf: &mut [u64],
        counts: &mut [u64],
    ) -> Result<(), Stop> {
        let code: &'a Code = self.k.code;
        loop {
            let Some(inst) = code.insts.get(pc) else {
                self.cta.state[t] = TState::Exit;
                return Ok(());
            };
            if self.budget == 0 {
                return Err(Stop::Finding(self.budget_exhausted(t, pc)));
            }
            self.budget -= 1;
            if inst.blen != 0 {
                counts[pc] += 1;
            }
            if inst.flags != 0 && !self.pre_step(t, pc, rf, inst)? {
                if self.k.timing {
                    self.time(t, pc, inst, false);
                }
                pc += 1;
                continue;
            }
            if self.k.timing {
                self.time(t, pc, inst, true);
            }
            // one instruction at a time: a `setp` fused with its `bra`
            // runs alone, its `bra` next
            let r = if let Op::SetpIBra { .. } = inst.op {
                step::setp_part(rf, inst);
                NEXT
            } else {
                self.step(t, pc, rf, inst)
            };
            match r {
                NEXT => pc += 1,
                r @ (PARK | EXIT) => {
                    self.cta.pc[t] = pc as u32;
                    self.cta.state[t] = if r == PARK {
                        TState::Park
                    } else {
                        TState::Exit
                    };
                    return Ok(());
                }
                FAULT => return Err(self.pending_finding(t, pc)),
                target => pc = target as usize,
            }
        }
    }

    /// The rarer work before an instruction executes: `bra.uni`
    /// uniformity, run-time initialisation checks, `%clock`.
    #[cold]
    #[inline(never)]
    fn pre_exec(&mut self, t: usize, pc: usize, rf: &mut [u64], inst: &XInst) -> Result<(), Stop> {
        let checks = self.k.checks;
        let base = t * self.cta.pitch;
        if inst.flags & F_BRAUNI != 0 && checks {
            self.uniform(t, pc, inst, true)?;
        }
        if inst.flags & F_CHK != 0 && checks && !inst.op.is_sync() {
            let code = self.k.code;
            let list = code.checked(pc);
            let unset = |c: &CtaState, r: u32| !c.init[base + r as usize];
            if let Op::Selp { .. } = inst.op {
                // the predicate, then only the selected value is read
                let c = inst.s[2];
                if list.contains(&c) && unset(&self.cta, c) {
                    return Err(self.finding(Fault::UninitReg(c), t, pc));
                }
                let take_a = (rf[c as usize] != 0) != inst.neg;
                let v = inst.s[if take_a { 0 } else { 1 }];
                if list.contains(&v) && unset(&self.cta, v) {
                    return Err(self.finding(Fault::UninitReg(v), t, pc));
                }
            } else if let Some(&r) = list.iter().find(|&&r| unset(&self.cta, r)) {
                return Err(self.finding(Fault::UninitReg(r), t, pc));
            }
        }
        if inst.flags & F_MARK != 0 {
            self.mark(base, inst);
        }
        if inst.flags & F_CLOCK != 0 {
            self.clock += 1;
            // With the scoreboard: the thread's clock (the issue slot after
            // its last instruction's), so two reads time what lies between.
            let v = match self.cta.time.as_deref() {
                Some(s) if self.k.timing => s.clk[t] + 1,
                _ => self.k.clock_base.wrapping_add(self.clock),
            };
            let code = self.k.code;
            rf[code.clock32 as usize] = v & 0xFFFF_FFFF;
            rf[code.clock64 as usize] = v;
        }
        Ok(())
    }

    fn uniform(&mut self, t: usize, pc: usize, inst: &XInst, taken: bool) -> Result<(), Stop> {
        let Op::BraUni { idx, .. } = inst.op else {
            return Ok(());
        };
        let nb = self.k.e.n_brauni as usize;
        self.cta
            .brauni(nb, t, idx, taken)
            .map_err(|f| self.finding(*f, t, pc))
    }

    /// Record the initialisation of `inst`'s destinations.
    #[cold]
    pub(super) fn mark(&mut self, base: usize, inst: &XInst) {
        for &k in dst_writes(&inst.op) {
            let d = inst.d[k];
            if d != NO_REG {
                self.cta.init[base + d as usize] = true;
            }
        }
    }

    /// The value of slot `s` of the thread whose registers start at `base`.
    #[inline(always)]
    pub(crate) fn r(&self, base: usize, s: u32) -> u64 {
        self.cta.regs[base + s as usize]
    }

    /// A read of slot `s` by thread `t` at `pc` outside the interpreter loop
    /// (warp collectives, barriers), checked when the analysis asks for it.
    pub(crate) fn r_checked(&self, t: usize, pc: usize, s: u32) -> Res<u64> {
        let base = t * self.cta.pitch;
        let code = self.k.code;
        // `F_CHK` clear: no read of this instruction is checked
        if self.k.checks
            && code.insts[pc].flags & F_CHK != 0
            && code.is_checked(pc, s)
            && !self.cta.init[base + s as usize]
        {
            return fault(Fault::UninitReg(s));
        }
        Ok(self.r(base, s))
    }

    /// A write by a warp collective (which records initialisation itself).
    pub(crate) fn w_collective(&mut self, t: usize, d: u32, v: u64) {
        if d != NO_REG {
            let i = t * self.cta.pitch + d as usize;
            self.cta.regs[i] = v;
            self.cta.init[i] = true;
        }
    }
}
