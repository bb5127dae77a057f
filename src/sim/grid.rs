//! The grid of a launch: its CTAs across worker threads, and the ordered
//! walk that turns their runs into one result, identical for every thread
//! count.
//!
//! 1. Workers (the calling thread and a cached rayon pool of one fewer
//!    threads, which stay awake for a moment after a launch: `linger`)
//!    claim CTAs in linear order (the calling thread claims the first one
//!    before the pool threads start: the walk needs it first) and run each
//!    on the launch's starting memory plus its own writes
//!    (`checks::global`), with the whole budget as its cap (the exact
//!    budget left once every earlier CTA is done). A shared count of
//!    issued instructions stops them once it passes the budget; CTAs after
//!    one with a finding are not started.
//! 2. Meanwhile the calling thread walks the finished runs: when the walk
//!    needs a run it takes a finished one if there is one, else runs the
//!    next unclaimed CTA itself, and waits only when none is left to claim
//!    (with one thread it runs each CTA when the walk needs it). The walk
//!    takes the CTAs in linear order, with `p` the instructions of the
//!    CTAs before: a CTA that conflicts with the earlier CTAs' global
//!    accesses, that would cross the budget (`p` + its count), that was
//!    stopped or never started is re-run alone, capped at the budget left
//!    and with the earlier CTAs' accesses as a watch list, which yields
//!    exactly what a one-CTA-at-a-time run would: the first conflicting
//!    access, the instruction over the budget, its own finding, or
//!    completion. The first CTA with a finding ends the launch.
//! 3. The writes of the CTAs the walk accepted reach global memory in CTA
//!    order (those of a CTA with a finding, up to the finding, included).
//!
//! Entries whose CTAs may communicate ([`Code::inter_cta`]) run their CTAs
//! one after another on live memory instead, each access checked against
//! the earlier CTAs as it happens.
//!
//! The shadows' memory (each worker's CTA table, the compact records the
//! workers hand the walk, the merged accesses, the accepted CTAs) comes
//! from the simulator's `checks::global::Scratch` and goes back to it, so
//! that a launch reuses what the previous ones allocated.
//!
//! [`Code::inter_cta`]: super::code::Code::inter_cta

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};

use super::checks::benign::Warnings;
use super::checks::global::{
    CtaRecs, CtaShadow, Done, Kind, LINE, LaunchShadow, NO_DATA, Scratch, touched,
};
use super::checks::probe::{Probe, Who, bit};
use super::error::SimError;
use super::global_mem::GlobalMem;
use super::interp::{Base, Exec, GlobalView, Kernel, Progress, Stop};

/// One CTA's run.
struct CtaRun {
    lin: u64,
    issued: u64,
    stop: Option<Stop>,
    /// Its accesses and writes, in a buffer of the pool.
    recs: CtaRecs,
    clock: u64,
    /// Its heaviest warp: thread-instructions and index.
    warp: (u64, u32),
    /// Its critical path: clocks and thread (`interp::timing`).
    path: (u64, u32),
}

/// What a successful launch adds up to.
pub(crate) struct GridTotals {
    /// Per instruction: issued count over every CTA.
    pub counts: Vec<u64>,
    pub barriers: u64,
    /// The heaviest CTA's issued instructions (in a clustered launch, the
    /// heaviest cluster's over its CTAs, rounded up); 0 for an empty grid.
    pub heaviest: u64,
    /// The heaviest warp ([`WarpAt`]).
    pub heaviest_warp: WarpAt,
    /// The longest critical path (`interp::timing`), as a [`WarpAt`] of
    /// clocks, CTA and thread; `(0, 0, 0)` without the scoreboard.
    pub critical_path: WarpAt,
    pub clock_reads: u64,
    /// CTAs that completed in lockstep (workers' runs, accepted or not).
    pub lockstep: u64,
    /// `vprintf` output: by block, then by thread, each thread's in its
    /// order (only entries that call `vprintf`, which run on live memory).
    pub printf: Vec<u8>,
    /// Same-value write-write conflicts of the CTAs (`checks::benign`).
    pub same: Warnings,
}

/// A warp's issued instructions (thread-instructions of its lanes), its
/// CTA's linear index and its index in the CTA; `(0, 0, 0)` for none.
pub(crate) type WarpAt = (u64, u64, u32);

/// The heavier of `best` and `w`: more instructions, else the lower CTA
/// and warp (so that the result does not depend on the order CTAs ran).
pub(crate) fn heavier(best: WarpAt, w: WarpAt) -> WarpAt {
    if w.0 > best.0 || (w.0 == best.0 && w.0 > 0 && (w.1, w.2) < (best.1, best.2)) {
        w
    } else {
        best
    }
}

/// The block index of linear CTA `lin` (x fastest).
fn ctaid_of(k: &Kernel, lin: u64) -> (u32, u32, u32) {
    let (gx, gy, _) = k.cfg.grid;
    let (gx, gy) = (gx as u64, gy as u64);
    (
        (lin % gx) as u32,
        (lin / gx % gy) as u32,
        (lin / (gx * gy)) as u32,
    )
}

/// The compact-records buffers not in use, shared by the workers (which
/// fill them) and the walk (which empties them).
type Pool = Mutex<Vec<CtaRecs>>;

/// A buffer from `pool` (empty).
fn pooled(pool: &Pool) -> CtaRecs {
    let mut p = pool.lock().unwrap_or_else(|e| e.into_inner());
    p.pop().unwrap_or_default()
}

/// Give `recs` back to `pool`.
fn unpool(pool: &Pool, recs: CtaRecs) {
    let mut p = pool.lock().unwrap_or_else(|e| e.into_inner());
    p.push(recs);
}

/// Run every CTA of the launch described by `k` on `mem` with up to
/// `threads` workers, with the shadows' memory of `scratch` (kept between
/// launches).
pub(crate) fn run(
    mem: &mut GlobalMem,
    k: &Kernel,
    threads: usize,
    scratch: &mut Scratch,
) -> Result<GridTotals, SimError> {
    if k.cluster.is_some() {
        return super::cluster::run(mem, k, scratch);
    }
    let (gx, gy, gz) = k.cfg.grid;
    let ncta = gx as u64 * gy as u64 * gz as u64;
    if k.code.inter_cta {
        scratch.prepare(1);
        let r = run_live(mem, k, ncta, scratch);
        scratch.settle(1);
        return r;
    }
    let workers = (threads as u64).clamp(1, ncta) as usize;
    scratch.prepare(workers);
    let mut tables = std::mem::take(&mut scratch.tables);
    let pool: Pool = Mutex::new(std::mem::take(&mut scratch.pool));
    let next = AtomicU64::new(0);
    let progress = Progress {
        lowest_finding: AtomicU64::new(u64::MAX),
        ..Default::default()
    };
    let snap: &GlobalMem = mem;
    let (walked, blocks) = match (workers > 1).then(|| pool_of(workers - 1)).flatten() {
        Some(Workers { threads, waiting }) => {
            // ends the pool threads' lingering (see `linger`) as the jobs
            // arrive, so that they find them awake
            waiting.fetch_add(workers - 1, Ordering::AcqRel);
            // `workers − 1` threads of the pool send their runs as they
            // finish; this thread is a worker too, and walks in order
            // between its own CTAs: it takes a finished run when there is
            // one, else runs the next CTA itself, and waits only when none
            // is left to claim (a walk that slept until each run arrived
            // paid a wake-up per CTA)
            let (tx, rx) = mpsc::channel::<CtaRun>();
            // the walk needs the first CTA first: this thread claims it
            // before the pool threads can
            let first = next.fetch_add(1, Ordering::Relaxed);
            let outs = Mutex::new(Vec::with_capacity(workers));
            let mut walked = None;
            let (mine, others) = tables.split_last_mut().expect("a table per worker");
            threads.in_place_scope(|s| {
                for table in others.iter_mut().take(workers - 1) {
                    let tx = tx.clone();
                    let (outs, next, progress, pool) = (&outs, &next, &progress, &pool);
                    let (threads, waiting) = (&threads, &waiting);
                    s.spawn(move |_| {
                        waiting.fetch_sub(1, Ordering::AcqRel);
                        let mut w = Worker::new(snap, k, ncta, next, progress, table, pool);
                        while let Some(r) = w.next() {
                            if tx.send(r).is_err() {
                                break;
                            }
                        }
                        let t = w.totals();
                        outs.lock().unwrap_or_else(|e| e.into_inner()).push(t);
                        // after this job, on this thread (its own deque)
                        let waiting = Arc::clone(waiting);
                        threads.spawn(move || linger(&waiting, LINGER));
                    });
                }
                drop(tx);
                let mut me = Worker::new(snap, k, ncta, &next, &progress, mine, &pool);
                me.claimed = Some(first);
                let mut claiming = true;
                let next_run = || {
                    if let Ok(r) = rx.try_recv() {
                        return Some(r);
                    }
                    if claiming {
                        match me.next() {
                            Some(r) => return Some(r),
                            None => claiming = false,
                        }
                    }
                    await_run(&rx)
                };
                walked = Some(walk(snap, k, ncta, &progress, scratch, &pool, next_run));
                let t = me.totals();
                outs.lock().unwrap_or_else(|e| e.into_inner()).push(t);
            });
            let outs = outs.into_inner().unwrap_or_else(|e| e.into_inner());
            let mut blocks = vec![0u64; k.code.insts.len()];
            let (mut barriers, mut lockstep) = (0, 0);
            for (c, b, l) in outs {
                for (a, c) in blocks.iter_mut().zip(&c) {
                    *a += c;
                }
                barriers += b;
                lockstep += l;
            }
            (walked.expect("the walk ran"), (blocks, barriers, lockstep))
        }
        None => {
            // one thread: the walk runs each CTA when it needs it
            let mut w = Worker::new(snap, k, ncta, &next, &progress, &mut tables[0], &pool);
            let walked = walk(snap, k, ncta, &progress, scratch, &pool, || w.next());
            (walked, w.totals())
        }
    };
    let (outcome, clock_reads, same, heaviest, heaviest_warp, critical_path) = walked;
    commit(mem, &scratch.done, k.checks);
    scratch.tables = tables;
    scratch.pool = pool.into_inner().unwrap_or_else(|e| e.into_inner());
    scratch.settle(workers);
    outcome.map(|()| GridTotals {
        counts: per_instruction(k, &blocks.0),
        barriers: blocks.1,
        heaviest,
        heaviest_warp,
        critical_path,
        clock_reads,
        lockstep: blocks.2,
        printf: Vec::new(),
        same,
    })
}

/// How long the walk polls for a pool thread's run before it sleeps: a
/// sleeping thread takes tens of microseconds to wake on a virtual machine
/// (measured 20–40 µs on the 2-core build machine), a noticeable part of a
/// launch of a millisecond, while the run it waits for usually arrives
/// within one CTA's time.
const POLL: std::time::Duration = std::time::Duration::from_micros(250);

/// The next run a pool thread sends (`None` once every one has stopped):
/// polled for up to [`POLL`], then waited for.
fn await_run(rx: &mpsc::Receiver<CtaRun>) -> Option<CtaRun> {
    let t = std::time::Instant::now();
    loop {
        match rx.try_recv() {
            Ok(r) => return Some(r),
            Err(mpsc::TryRecvError::Disconnected) => return None,
            Err(mpsc::TryRecvError::Empty) if t.elapsed() < POLL => {
                for _ in 0..32 {
                    std::hint::spin_loop();
                }
            }
            Err(mpsc::TryRecvError::Empty) => return rx.recv().ok(),
        }
    }
}

/// A worker: claims CTAs in linear order and runs each on the launch's
/// starting memory, until none is left or the launch's outcome is settled.
/// Its CTA shadow is one of the scratch's tables, emptied after each CTA
/// into a buffer of the pool.
struct Worker<'a> {
    ex: Exec<'a>,
    k: &'a Kernel<'a>,
    ncta: u64,
    next: &'a AtomicU64,
    progress: &'a Progress,
    table: &'a mut CtaShadow,
    pool: &'a Pool,
    /// A CTA claimed for this worker before it started, run first.
    claimed: Option<u64>,
}

impl<'a> Worker<'a> {
    fn new(
        mem: &'a GlobalMem,
        k: &'a Kernel<'a>,
        ncta: u64,
        next: &'a AtomicU64,
        progress: &'a Progress,
        table: &'a mut CtaShadow,
        pool: &'a Pool,
    ) -> Self {
        let view = GlobalView::new(Base::Snapshot(mem), k.code.insts.len(), None, k.checks);
        let mut ex = Exec::new(k, view, Some(progress));
        std::mem::swap(&mut ex.g.shadow, table);
        Worker {
            ex,
            k,
            ncta,
            next,
            progress,
            table,
            pool,
            claimed: None,
        }
    }

    /// Claim and run the next CTA.
    fn next(&mut self) -> Option<CtaRun> {
        let p = self.progress;
        if p.abort.load(Ordering::Relaxed) {
            return None;
        }
        let lin = match self.claimed.take() {
            Some(lin) => lin,
            None => self.next.fetch_add(1, Ordering::Relaxed),
        };
        if lin >= self.ncta || lin > p.lowest_finding.load(Ordering::Relaxed) {
            return None;
        }
        let (issued, stop) = self.ex.run_cta(ctaid_of(self.k, lin), lin, self.k.limit);
        match stop {
            Some(Stop::Finding(_)) => {
                p.lowest_finding.fetch_min(lin, Ordering::Relaxed);
            }
            None => p.completed(lin, issued),
            Some(Stop::Aborted) => {}
        }
        let mut recs = pooled(self.pool);
        let same = self.ex.take_same_writes();
        self.ex.g.shadow.drain_into(&mut recs);
        recs.same = same;
        Some(CtaRun {
            lin,
            issued,
            stop,
            recs,
            clock: self.ex.clock,
            warp: self.ex.heaviest_warp(),
            path: self.ex.critical_path(),
        })
    }

    /// Block entries per block leader, completed barriers and CTAs run in
    /// lockstep, over the CTAs this worker ran (the table goes back to the
    /// scratch).
    fn totals(mut self) -> (Vec<u64>, u64, u64) {
        std::mem::swap(&mut self.ex.g.shadow, self.table);
        (self.ex.counts, self.ex.barriers, self.ex.lockstep_ctas)
    }
}

/// CTA `lin` alone on the launch's starting memory, capped at `cap`
/// instructions, each global access checked against `watch` (the earlier
/// CTAs', lent to the run and given back).
fn rerun(
    mem: &GlobalMem,
    k: &Kernel,
    lin: u64,
    cap: u64,
    watch: &mut LaunchShadow,
    pool: &Pool,
) -> CtaRun {
    let w = k.checks.then(|| std::mem::take(watch));
    let view = GlobalView::new(Base::Snapshot(mem), k.code.insts.len(), w, k.checks);
    let mut ex = Exec::new(k, view, None);
    let (issued, stop) = ex.run_cta(ctaid_of(k, lin), lin, cap);
    if let Some(w) = ex.g.watch.take() {
        *watch = w;
    }
    let mut recs = pooled(pool);
    let same = ex.take_same_writes();
    ex.g.shadow.drain_into(&mut recs);
    recs.same = same;
    CtaRun {
        lin,
        issued,
        stop,
        recs,
        clock: ex.clock,
        warp: ex.heaviest_warp(),
        path: ex.critical_path(),
    }
}

/// The launch's outcome, the `%clock` reads of the accepted CTAs (which
/// are in the scratch's `done`), their same-value write-write conflicts,
/// the most instructions one of them issued, their heaviest warp and
/// their longest critical path.
type Walked = (Result<(), SimError>, u64, Warnings, u64, WarpAt, WarpAt);

/// The ordered walk (module docs, step 2) over the runs `next_run` hands
/// out in any order (`None` once every worker stopped), with the merged
/// accesses and the accepted CTAs in `scratch`.
fn walk(
    mem: &GlobalMem,
    k: &Kernel,
    ncta: u64,
    progress: &Progress,
    scratch: &mut Scratch,
    pool: &Pool,
    mut next_run: impl FnMut() -> Option<CtaRun>,
) -> Walked {
    let Scratch {
        launch,
        done,
        cta_peak,
        ..
    } = scratch;
    let mut waiting: BTreeMap<u64, CtaRun> = BTreeMap::new();
    let mut more = true;
    let mut p = 0u64;
    let mut clock_reads = 0;
    let mut heaviest = 0u64;
    let mut heaviest_warp: WarpAt = (0, 0, 0);
    let mut critical_path: WarpAt = (0, 0, 0);
    let mut outcome = Ok(());
    let mut same = Warnings::default();
    for lin in 0..ncta {
        let run = loop {
            if let Some(r) = waiting.remove(&lin) {
                break Some(r);
            }
            if !more {
                break None;
            }
            match next_run() {
                Some(r) => {
                    waiting.insert(r.lin, r);
                }
                None => more = false,
            }
        };
        let left = k.limit.saturating_sub(p);
        let run = match run {
            Some(r) if !matches!(r.stop, Some(Stop::Aborted)) => {
                let limit_hit = matches!(
                    r.stop,
                    Some(Stop::Finding(SimError::InstructionLimit { .. }))
                );
                // a budget finding is exact when the CTA ran to what the
                // earlier CTAs left it
                let over = r.issued > left || (limit_hit && r.issued != left);
                let conflict = k.checks && launch.conflicts_with(&r.recs.recs);
                if over || conflict {
                    unpool(pool, r.recs);
                    rerun(mem, k, lin, left, launch, pool)
                } else {
                    r
                }
            }
            // stopped by the budget, or never started
            r => {
                if let Some(r) = r {
                    unpool(pool, r.recs);
                }
                rerun(mem, k, lin, left, launch, pool)
            }
        };
        cta_peak.0 = cta_peak.0.max(run.recs.recs.len());
        cta_peak.1 = cta_peak.1.max(run.recs.data.len());
        match run.stop {
            None => {
                // (nothing checks against the last CTA's accesses)
                if k.checks && lin + 1 < ncta {
                    launch.merge(&run.recs.recs);
                }
                p += run.issued;
                heaviest = heaviest.max(run.issued);
                heaviest_warp = heavier(heaviest_warp, (run.warp.0, lin, run.warp.1));
                critical_path = heavier(critical_path, (run.path.0, lin, run.path.1));
                clock_reads += run.clock;
                same.add(&run.recs.same);
                done.push(&run.recs);
                unpool(pool, run.recs);
            }
            Some(Stop::Finding(mut e)) => {
                // the outcome is settled: the workers stop
                progress.lowest_finding.fetch_min(lin, Ordering::Relaxed);
                progress.abort.store(true, Ordering::Relaxed);
                name_other_block(&mut e, done, |j| ctaid_of(k, j as u64));
                name_earlier(&mut e, mem, k, lin, left, launch);
                done.push(&run.recs);
                unpool(pool, run.recs);
                outcome = Err(e);
                break;
            }
            Some(Stop::Aborted) => unreachable!("re-runs are not aborted"),
        }
    }
    (
        outcome,
        clock_reads,
        same,
        heaviest,
        heaviest_warp,
        critical_path,
    )
}

/// CTAs one after another on live memory (entries whose CTAs may
/// communicate), with the scratch's merged table as the watch list and
/// its first table as the CTA shadow.
fn run_live(
    mem: &mut GlobalMem,
    k: &Kernel,
    ncta: u64,
    scratch: &mut Scratch,
) -> Result<GridTotals, SimError> {
    let ninst = k.code.insts.len();
    let watch = k.checks.then(|| std::mem::take(&mut scratch.launch));
    let view = GlobalView::new(Base::Live(mem), ninst, watch, k.checks);
    let mut ex = Exec::new(k, view, None);
    std::mem::swap(&mut ex.g.shadow, &mut scratch.tables[0]);
    let mut recs = scratch.pool.pop().unwrap_or_default();
    let mut p = 0u64;
    let mut clock_reads = 0;
    let mut heaviest = 0u64;
    let mut heaviest_warp: WarpAt = (0, 0, 0);
    let mut critical_path: WarpAt = (0, 0, 0);
    let mut outcome = Ok(());
    let mut printf = Vec::new();
    let mut same = Warnings::default();
    for lin in 0..ncta {
        let (issued, stop) = ex.run_cta(ctaid_of(k, lin), lin, k.limit.saturating_sub(p));
        // a stable sort: each thread's lines keep their order
        ex.printf.sort_by_key(|l| l.0);
        for (_, text) in ex.printf.drain(..) {
            printf.extend(text);
        }
        let warned = ex.take_same_writes();
        ex.g.shadow.drain_into(&mut recs);
        let peak = &mut scratch.cta_peak;
        peak.0 = peak.0.max(recs.recs.len());
        if let Some(Stop::Finding(mut e)) = stop {
            name_other_block(&mut e, &scratch.done, |j| ctaid_of(k, j as u64));
            outcome = Err(e);
            break;
        }
        if let Some(w) = ex.g.watch.as_mut() {
            w.merge(&recs.recs);
            scratch.done.push(&recs);
        }
        p += issued;
        heaviest = heaviest.max(issued);
        let (c, w) = ex.heaviest_warp();
        heaviest_warp = heavier(heaviest_warp, (c, lin, w));
        let (c, t) = ex.critical_path();
        critical_path = heavier(critical_path, (c, lin, t));
        clock_reads += ex.clock;
        same.add(&warned);
    }
    std::mem::swap(&mut ex.g.shadow, &mut scratch.tables[0]);
    if let Some(w) = ex.g.watch.take() {
        scratch.launch = w;
    }
    scratch.pool.push(recs);
    outcome.map(|()| GridTotals {
        counts: per_instruction(k, &ex.counts),
        barriers: ex.barriers,
        heaviest,
        heaviest_warp,
        critical_path,
        clock_reads,
        lockstep: 0,
        printf,
        same,
    })
}

/// Issued instructions per instruction from block entries per block (an
/// instruction is issued once per entry into its block).
fn per_instruction(k: &Kernel, blocks: &[u64]) -> Vec<u64> {
    k.code
        .leader_of
        .iter()
        .map(|&l| blocks[l as usize])
        .collect()
}

/// A [`SimError::GlobalRace`] names the earliest CTA among `done` (the
/// CTAs before it, in order; the `j`-th is `ctaid(j)`) whose access it
/// conflicts with. Also the cluster scheduler's (`super::cluster`).
pub(super) fn name_other_block(
    e: &mut SimError,
    done: &Done,
    ctaid: impl Fn(usize) -> (u32, u32, u32),
) {
    if let SimError::GlobalRace {
        addr,
        other,
        other_ctaid,
        ..
    } = e
    {
        let kind = *other;
        if let Some(j) = (0..done.len()).position(|j| touched(done.cta(j), *addr, kind)) {
            *other_ctaid = ctaid(j);
        }
    }
}

/// Name the earlier access of race finding `e` of CTA `lin` (run with a
/// cap of `cap` and the earlier CTAs' accesses `watch`) by a re-run with a
/// probe (`checks::probe`): of CTA `lin` itself for a race within it (the
/// re-run stops at the same finding), of the earlier CTA for a race
/// between CTAs (it runs to completion). Only for CTAs on the launch's
/// starting memory: on live memory a CTA cannot run again.
fn name_earlier(
    e: &mut SimError,
    mem: &GlobalMem,
    k: &Kernel,
    lin: u64,
    cap: u64,
    watch: &mut LaunchShadow,
) {
    let (bx, by, _) = k.cfg.block;
    let linear = |(x, y, z): (u32, u32, u32)| (x + y * bx + z * bx * by) as usize;
    let (probe, shared, of) = match &*e {
        SimError::SharedRace {
            site,
            offset,
            other,
            other_tid,
            ..
        } => {
            let (kinds, who) = match other {
                Kind::Read if other_tid.0 == u32::MAX => {
                    (bit(Kind::Read), Who::Others(linear(site.tid)))
                }
                Kind::Read => (bit(Kind::Read), Who::Thread(linear(*other_tid))),
                _ => (bit(Kind::Write) | bit(Kind::Atomic), Who::Any),
            };
            (Probe::new(*offset, kinds, who, false), true, None)
        }
        SimError::WarpGlobalRace {
            site,
            addr,
            other,
            other_warp,
            ..
        } => {
            let who = match *other_warp {
                u32::MAX => Who::NotWarp(linear(site.tid) / 32),
                w => Who::Warp(w as usize),
            };
            (Probe::new(*addr, bit(*other), who, false), false, None)
        }
        SimError::GlobalRace {
            addr,
            other,
            other_ctaid,
            ..
        } if other_ctaid.0 != u32::MAX => {
            let (gx, gy, _) = k.cfg.grid;
            let (x, y, z) = (
                other_ctaid.0 as u64,
                other_ctaid.1 as u64,
                other_ctaid.2 as u64,
            );
            let j = x + y * gx as u64 + z * gx as u64 * gy as u64;
            (
                Probe::new(*addr, bit(*other), Who::Any, true),
                false,
                Some(j),
            )
        }
        _ => return,
    };
    let (run, cap, w) = match of {
        Some(j) => (j, k.limit, None),
        None => (lin, cap, k.checks.then(|| std::mem::take(watch))),
    };
    let view = GlobalView::new(Base::Snapshot(mem), k.code.insts.len(), w, k.checks);
    let mut ex = Exec::new(k, view, None);
    if shared {
        ex.cta.probe = Some(probe);
    } else {
        ex.g.shadow.probe = Some(probe);
    }
    let (_, stop) = ex.run_cta(ctaid_of(k, run), run, cap);
    if let Some(w) = ex.g.watch.take() {
        *watch = w;
    }
    // the same run as the one that found the race (or, for the earlier
    // CTA, as the one the walk accepted)
    let same = match &stop {
        None => of.is_some(),
        Some(Stop::Finding(f)) => of.is_none() && f == e,
        Some(Stop::Aborted) => false,
    };
    let probe = if shared {
        ex.cta.probe.take()
    } else {
        ex.g.shadow.probe.take()
    };
    let Some((t, pc)) = probe.and_then(|p| p.result()).filter(|_| same) else {
        return;
    };
    let found = ex.site(t, pc);
    match e {
        SimError::SharedRace { other_site, .. }
        | SimError::WarpGlobalRace { other_site, .. }
        | SimError::GlobalRace { other_site, .. } => *other_site = Some(found),
        _ => {}
    }
}

/// Apply the writes of `done` (in CTA order) to global memory.
fn commit(mem: &mut GlobalMem, done: &Done, checks: bool) {
    let mut last = 0;
    for rec in &done.recs {
        if rec.data == NO_DATA || rec.w == 0 {
            continue;
        }
        let first = rec.line * LINE + rec.w.trailing_zeros() as u64;
        let Some((i, o)) = mem.find_at(&mut last, first, 1) else {
            continue;
        };
        let a = &mut mem.allocs[i];
        let line_off = o - (first % LINE) as usize;
        let data = &done.data[rec.data as usize];
        // runs of written bytes
        let mut w = rec.w;
        while w != 0 {
            let b = w.trailing_zeros() as usize;
            let n = (!(w >> b)).trailing_zeros() as usize;
            a.data[line_off + b..line_off + b + n].copy_from_slice(&data[b..b + n]);
            if checks {
                a.set_init(line_off + b, n);
            }
            w &= !((u64::MAX >> (64 - n)) << b);
        }
    }
}

/// How long a pool thread stays awake after its part of a launch, waiting
/// for the next one. Waking a sleeping thread cost the calling thread
/// 10–30 µs and the woken one started 30–45 µs after the call on the
/// 2-core build machine (a virtual machine), about 5 % of a library call
/// of a millisecond; back-to-back calls post their next launch well within
/// this. A lingering thread yields its CPU to any other runnable thread.
const LINGER: std::time::Duration = std::time::Duration::from_micros(200);

/// Stay awake until a job is `waiting` for the pool, or for at most
/// `limit`. Runs as a job of its own on a pool thread, so that the next
/// launch's jobs find the thread awake: posting to a pool whose threads
/// are all awake makes no system call.
fn linger(waiting: &AtomicUsize, limit: std::time::Duration) {
    let t = std::time::Instant::now();
    while waiting.load(Ordering::Acquire) == 0 && t.elapsed() < limit {
        std::thread::yield_now();
    }
}

/// A worker pool and the count of jobs posted to it and not yet started
/// (every launch on the pool counts its jobs there, which ends the
/// threads' lingering).
#[derive(Clone)]
struct Workers {
    threads: Arc<rayon::ThreadPool>,
    waiting: Arc<AtomicUsize>,
}

/// The worker pool for `n` threads, built once per process (`None` if the
/// threads cannot be started: the caller then runs alone).
fn pool_of(n: usize) -> Option<Workers> {
    static POOLS: OnceLock<Mutex<HashMap<usize, Workers>>> = OnceLock::new();
    let mut pools = POOLS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(p) = pools.get(&n) {
        return Some(p.clone());
    }
    let p = rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(|i| format!("ptxsmith-sim-{i}"))
        .build()
        .ok()?;
    let p = Workers {
        threads: Arc::new(p),
        waiting: Arc::default(),
    };
    pools.insert(n, p.clone());
    Some(p)
}

#[cfg(test)]
mod timing_tests;
#[cfg(test)]
mod warp_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Runs `f` on a thread of its own: the receiver gets `()` once it
    /// returns.
    fn spawned(f: impl FnOnce() + Send + 'static) -> mpsc::Receiver<()> {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            f();
            let _ = tx.send(());
        });
        rx
    }

    /// Whether the thread of `rx` returned within a minute (a lingering
    /// thread that never ends is the failure).
    fn returns(rx: mpsc::Receiver<()>) -> bool {
        rx.recv_timeout(Duration::from_secs(60)).is_ok()
    }

    #[test]
    fn lingering_ends_once_a_job_waits() {
        let waiting = Arc::new(AtomicUsize::new(0));
        let w = Arc::clone(&waiting);
        let lingering = spawned(move || linger(&w, Duration::from_secs(3600)));
        // (so that it most likely lingers already; either way it must end)
        std::thread::sleep(Duration::from_millis(20));
        waiting.store(1, Ordering::Release);
        assert!(returns(lingering));
        // a thread that starts lingering while a job waits does not wait
        let w = Arc::clone(&waiting);
        assert!(returns(spawned(move || {
            linger(&w, Duration::from_secs(3600))
        })));
    }

    #[test]
    fn lingering_ends_at_its_limit() {
        let idle = Arc::new(AtomicUsize::new(0));
        assert!(returns(spawned(move || {
            linger(&idle, Duration::from_millis(1))
        })));
    }

    #[test]
    fn a_pool_counts_no_job_waiting_between_launches() {
        // every launch's jobs are counted out as they start: a count left
        // over from a launch long gone would end every linger at once
        // (a pool size no other test uses: its count is this test's alone)
        let Some(Workers { waiting, .. }) = pool_of(12) else {
            return;
        };
        let prog = crate::sim::Program::parse(
            ".version 7.0\n.target sm_80\n.address_size 64\n\
             .visible .entry nop()\n{\nret;\n}\n",
        )
        .unwrap();
        let mut s = crate::sim::Sim::new(crate::Sm::Sm80);
        s.set_options(crate::sim::SimOptions {
            threads: 13,
            ..s.options()
        });
        // 16 CTAs: 13 workers, the pool of 12
        for _ in 0..10 {
            s.launch_program(&prog, "nop", crate::exec::LaunchConfig::linear(16, 32), &[])
                .unwrap();
        }
        assert_eq!(waiting.load(Ordering::Acquire), 0);
    }

    /// CTA `c` of `uneven` loops `c + 1` times: its 32 threads issue
    /// `32 · (a + 3c)` instructions, `a` the count of CTA 0.
    const UNEVEN: &str = "
.version 7.0
.target sm_80
.address_size 64
.visible .entry uneven()
{
.reg .b32 %r<3>;
.reg .pred %p<2>;
mov.u32 %r0, %ctaid.x;
mov.u32 %r1, 0;
$LOOP:
add.u32 %r1, %r1, 1;
setp.le.u32 %p0, %r1, %r0;
@%p0 bra $LOOP;
ret;
}
";

    /// The report's heaviest block on every worker count: the last CTA
    /// of an uneven launch, the mean of an even one.
    #[test]
    fn the_report_names_the_heaviest_block() {
        use crate::exec::LaunchConfig;
        use crate::sim::{Sim, SimOptions};
        for threads in [1, 2, 3] {
            let mut sim = Sim::new(crate::Sm::Sm80);
            sim.set_options(SimOptions {
                threads,
                ..sim.options()
            });
            let prog = sim.program(UNEVEN).unwrap();
            let one = sim
                .launch_program(&prog, "uneven", LaunchConfig::linear(1, 32), &[])
                .unwrap();
            assert_eq!(one.heaviest_block, one.instructions);
            assert_eq!(sim.last_launch_heaviest_block(), one.instructions);
            let a = one.instructions;
            let g = 9u64;
            let r = sim
                .launch_program(&prog, "uneven", LaunchConfig::linear(g as u32, 32), &[])
                .unwrap();
            assert_eq!(r.instructions, g * a + 32 * 3 * g * (g - 1) / 2);
            assert_eq!(r.heaviest_block, a + 32 * 3 * (g - 1), "{threads} threads");
            assert_eq!(sim.last_launch_heaviest_block(), r.heaviest_block);
            // an even launch: every block the mean
            let prog = sim
                .program(&UNEVEN.replace("%ctaid.x", "%nctaid.y"))
                .unwrap();
            let r = sim
                .launch_program(&prog, "uneven", LaunchConfig::linear(g as u32, 32), &[])
                .unwrap();
            assert_eq!(r.heaviest_block * r.blocks, r.instructions);
        }
    }
}
