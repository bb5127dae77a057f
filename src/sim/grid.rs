//! The grid of a launch: its CTAs across worker threads, and the ordered
//! walk that turns their runs into one result, identical for every thread
//! count.
//!
//! 1. Workers (a cached rayon pool per thread count) claim CTAs in linear
//!    order and run each on the launch's starting memory plus its own
//!    writes (`checks::global`), with the whole budget as its cap (the
//!    exact budget left once every earlier CTA is done). A shared count of
//!    issued instructions stops them once it passes the budget; CTAs after
//!    one with a finding are not started.
//! 2. Meanwhile the calling thread walks the finished runs (with one
//!    thread, it runs each CTA when the walk needs it). The walk takes the
//!    CTAs in linear order, with `p` the instructions of
//!    the CTAs before: a CTA that conflicts with the earlier CTAs' global
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
//! [`Code::inter_cta`]: super::code::Code::inter_cta

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};

use super::checks::global::{CtaShadow, Kind, LINE, LaunchShadow, NO_DATA, touched};
use super::error::SimError;
use super::exec::{Base, Exec, GlobalView, Kernel, Progress, Stop};
use super::memory::GlobalMem;

/// One CTA's run.
struct CtaRun {
    lin: u64,
    issued: u64,
    stop: Option<Stop>,
    shadow: CtaShadow,
    clock: u64,
}

/// What a successful launch adds up to.
pub(crate) struct GridTotals {
    /// Per instruction: issued count over every CTA.
    pub counts: Vec<u64>,
    pub barriers: u64,
    pub clock_reads: u64,
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

/// Run every CTA of the launch described by `k` on `mem` with up to
/// `threads` workers.
pub(crate) fn run(mem: &mut GlobalMem, k: &Kernel, threads: usize) -> Result<GridTotals, SimError> {
    let (gx, gy, gz) = k.cfg.grid;
    let ncta = gx as u64 * gy as u64 * gz as u64;
    if k.code.inter_cta {
        return run_live(mem, k, ncta);
    }
    let workers = (threads as u64).clamp(1, ncta) as usize;
    let next = AtomicU64::new(0);
    let progress = Progress {
        lowest_finding: AtomicU64::new(u64::MAX),
        ..Default::default()
    };
    let snap: &GlobalMem = mem;
    let (walked, blocks) = match (workers > 1).then(|| pool(workers)).flatten() {
        Some(pool) => {
            // workers send their runs as they finish; this thread walks
            // them in order meanwhile
            let (tx, rx) = mpsc::channel::<CtaRun>();
            let outs = Mutex::new(Vec::with_capacity(workers));
            let mut walked = None;
            pool.in_place_scope(|s| {
                for _ in 0..workers {
                    let tx = tx.clone();
                    let (outs, next, progress) = (&outs, &next, &progress);
                    s.spawn(move |_| {
                        let mut w = Worker::new(snap, k, ncta, next, progress);
                        while let Some(r) = w.next() {
                            if tx.send(r).is_err() {
                                break;
                            }
                        }
                        let t = w.totals();
                        outs.lock().unwrap_or_else(|e| e.into_inner()).push(t);
                    });
                }
                drop(tx);
                walked = Some(walk(snap, k, ncta, &progress, || rx.recv().ok()));
            });
            let outs = outs.into_inner().unwrap_or_else(|e| e.into_inner());
            let mut blocks = vec![0u64; k.code.insts.len()];
            let mut barriers = 0;
            for (c, b) in outs {
                for (a, c) in blocks.iter_mut().zip(&c) {
                    *a += c;
                }
                barriers += b;
            }
            (walked.expect("the walk ran"), (blocks, barriers))
        }
        None => {
            // one thread: the walk runs each CTA when it needs it
            let mut w = Worker::new(snap, k, ncta, &next, &progress);
            let walked = walk(snap, k, ncta, &progress, || w.next());
            (walked, w.totals())
        }
    };
    let (done, outcome, clock_reads) = walked;
    commit(mem, &done, k.checks);
    outcome.map(|()| GridTotals {
        counts: per_instruction(k, &blocks.0),
        barriers: blocks.1,
        clock_reads,
    })
}

/// A worker: claims CTAs in linear order and runs each on the launch's
/// starting memory, until none is left or the launch's outcome is settled.
struct Worker<'a> {
    ex: Exec<'a>,
    k: &'a Kernel<'a>,
    ncta: u64,
    next: &'a AtomicU64,
    progress: &'a Progress,
    /// Lines the previous CTA touched (to size the next shadow).
    size: usize,
}

impl<'a> Worker<'a> {
    fn new(
        mem: &'a GlobalMem,
        k: &'a Kernel<'a>,
        ncta: u64,
        next: &'a AtomicU64,
        progress: &'a Progress,
    ) -> Self {
        let view = GlobalView::new(Base::Snapshot(mem), k.code.insts.len(), None, k.checks);
        Worker {
            ex: Exec::new(k, view, Some(progress)),
            k,
            ncta,
            next,
            progress,
            size: 0,
        }
    }

    /// Claim and run the next CTA.
    fn next(&mut self) -> Option<CtaRun> {
        let p = self.progress;
        if p.abort.load(Ordering::Relaxed) {
            return None;
        }
        let lin = self.next.fetch_add(1, Ordering::Relaxed);
        if lin >= self.ncta || lin > p.lowest_finding.load(Ordering::Relaxed) {
            return None;
        }
        self.ex.g.shadow = CtaShadow::new(self.size);
        let (issued, stop) = self.ex.run_cta(ctaid_of(self.k, lin), lin, self.k.limit);
        match stop {
            Some(Stop::Finding(_)) => {
                p.lowest_finding.fetch_min(lin, Ordering::Relaxed);
            }
            None => p.completed(lin, issued),
            Some(Stop::Aborted) => {}
        }
        let shadow = std::mem::take(&mut self.ex.g.shadow);
        self.size = shadow.len();
        Some(CtaRun {
            lin,
            issued,
            stop,
            shadow,
            clock: self.ex.clock,
        })
    }

    /// Block entries per block leader, and completed barriers, over the
    /// CTAs this worker ran.
    fn totals(self) -> (Vec<u64>, u64) {
        (self.ex.counts, self.ex.barriers)
    }
}

/// CTA `lin` alone on the launch's starting memory, capped at `cap`
/// instructions, each global access checked against `watch` (the earlier
/// CTAs'). Returns the run and the watch list.
fn rerun(
    mem: &GlobalMem,
    k: &Kernel,
    lin: u64,
    cap: u64,
    watch: LaunchShadow,
) -> (CtaRun, LaunchShadow) {
    let view = GlobalView::new(
        Base::Snapshot(mem),
        k.code.insts.len(),
        k.checks.then_some(watch),
        k.checks,
    );
    let mut ex = Exec::new(k, view, None);
    let (issued, stop) = ex.run_cta(ctaid_of(k, lin), lin, cap);
    let watch = ex.g.watch.take().unwrap_or_default();
    let run = CtaRun {
        lin,
        issued,
        stop,
        shadow: std::mem::take(&mut ex.g.shadow),
        clock: ex.clock,
    };
    (run, watch)
}

/// The accepted CTAs' shadows (in order), the launch's outcome, and the
/// `%clock` reads of the accepted CTAs.
type Walked = (Vec<CtaShadow>, Result<(), SimError>, u64);

/// The ordered walk (module docs, step 2) over the runs `next_run` hands
/// out in any order (`None` once every worker stopped).
fn walk(
    mem: &GlobalMem,
    k: &Kernel,
    ncta: u64,
    progress: &Progress,
    mut next_run: impl FnMut() -> Option<CtaRun>,
) -> Walked {
    let mut launch = LaunchShadow::default();
    let mut done: Vec<CtaShadow> = Vec::new();
    let mut waiting: BTreeMap<u64, CtaRun> = BTreeMap::new();
    let mut more = true;
    let mut p = 0u64;
    let mut clock_reads = 0;
    let mut outcome = Ok(());
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
                let conflict = k.checks && launch.conflicts_with(&r.shadow);
                if over || conflict {
                    let (r, w) = rerun(mem, k, lin, left, std::mem::take(&mut launch));
                    launch = w;
                    r
                } else {
                    r
                }
            }
            // stopped by the budget, or never started
            _ => {
                let (r, w) = rerun(mem, k, lin, left, std::mem::take(&mut launch));
                launch = w;
                r
            }
        };
        match run.stop {
            None => {
                if k.checks {
                    launch.merge(&run.shadow);
                }
                p += run.issued;
                clock_reads += run.clock;
                done.push(run.shadow);
            }
            Some(Stop::Finding(mut e)) => {
                // the outcome is settled: the workers stop
                progress.lowest_finding.fetch_min(lin, Ordering::Relaxed);
                progress.abort.store(true, Ordering::Relaxed);
                name_other_block(&mut e, k, &done);
                done.push(run.shadow);
                outcome = Err(e);
                break;
            }
            Some(Stop::Aborted) => unreachable!("re-runs are not aborted"),
        }
    }
    (done, outcome, clock_reads)
}

/// CTAs one after another on live memory (entries whose CTAs may
/// communicate).
fn run_live(mem: &mut GlobalMem, k: &Kernel, ncta: u64) -> Result<GridTotals, SimError> {
    let ninst = k.code.insts.len();
    let view = GlobalView::new(
        Base::Live(mem),
        ninst,
        k.checks.then(LaunchShadow::default),
        k.checks,
    );
    let mut ex = Exec::new(k, view, None);
    let mut done: Vec<CtaShadow> = Vec::new();
    let mut p = 0u64;
    let mut clock_reads = 0;
    for lin in 0..ncta {
        ex.g.shadow = CtaShadow::new(0);
        let (issued, stop) = ex.run_cta(ctaid_of(k, lin), lin, k.limit.saturating_sub(p));
        let shadow = std::mem::take(&mut ex.g.shadow);
        if let Some(Stop::Finding(mut e)) = stop {
            name_other_block(&mut e, k, &done);
            return Err(e);
        }
        if let Some(w) = ex.g.watch.as_mut() {
            w.merge(&shadow);
            done.push(shadow);
        }
        p += issued;
        clock_reads += ex.clock;
    }
    Ok(GridTotals {
        counts: per_instruction(k, &ex.counts),
        barriers: ex.barriers,
        clock_reads,
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
/// CTAs before it, in order) whose access it conflicts with.
fn name_other_block(e: &mut SimError, k: &Kernel, done: &[CtaShadow]) {
    if let SimError::GlobalRace {
        addr,
        other,
        other_ctaid,
        ..
    } = e
    {
        let kind = match *other {
            "write" => Kind::Write,
            "atomic" => Kind::Atomic,
            _ => Kind::Read,
        };
        if let Some(j) = done.iter().position(|s| touched(s, *addr, kind)) {
            *other_ctaid = ctaid_of(k, j as u64);
        }
    }
}

/// Apply the writes of `done` (in CTA order) to global memory.
fn commit(mem: &mut GlobalMem, done: &[CtaShadow], checks: bool) {
    let mut last = 0;
    for s in done {
        for rec in s.recs() {
            if rec.data == NO_DATA || rec.w == 0 {
                continue;
            }
            let first = rec.line * LINE + rec.w.trailing_zeros() as u64;
            let Some((i, o)) = mem.find_at(&mut last, first, 1) else {
                continue;
            };
            let a = &mut mem.allocs[i];
            let line_off = o - (first % LINE) as usize;
            let data = &s.data[rec.data as usize];
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
}

/// The worker pool for `n` threads, built once per process (`None` if the
/// threads cannot be started: the caller then runs alone).
fn pool(n: usize) -> Option<Arc<rayon::ThreadPool>> {
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<rayon::ThreadPool>>>> = OnceLock::new();
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
    let p = Arc::new(p);
    pools.insert(n, p.clone());
    Some(p)
}
