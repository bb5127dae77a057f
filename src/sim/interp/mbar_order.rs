//! Happens-before through mbarrier phases, for the race checks (with
//! checks on, in kernels that arrive on an mbarrier).
//!
//! # The rule (PTX ISA 8.x, "Memory consistency model" and "mbarrier")
//! `mbarrier.arrive` (local, or `.release.cluster` on a peer's barrier:
//! both release; the simulator decodes no `.relaxed` arrive) is a release
//! of the arriving thread; an `mbarrier.try_wait` that observes the phase
//! complete is an acquire. Every access a thread made before its arrive
//! happens before every access a thread makes after a wait that observed
//! the completion of that arrive's phase or a later one (the arrives on
//! one barrier are read-modify-writes of one object, so a phase's
//! completion carries the earlier phases' arrives). Arrives on a phase
//! that has not completed order nothing yet: a wait on the previous
//! phase's parity does not see them.
//!
//! # The clocks (the vector clocks of a data-race detector such as
//! Miri's, over the cluster's threads)
//! Each thread `u` (index `rank · n + t`) counts its arrives (`mrel[u]`);
//! an access is stamped with that count. Each thread that has acquired
//! keeps a clock (`vc[t]`, one entry per thread of the cluster, allocated
//! at its first acquire): `vc[t][u] = k` says the accesses of `u` made
//! before its `k`-th arrive happen before `t`'s next accesses. Each
//! barrier accumulates the clocks of the threads arriving on it (the
//! arriver's own entry its new count; `Mbar::acc`) and keeps the
//! accumulation at its latest phase completion (`Mbar::done`); a wait that
//! observes the phase complete joins `done` into the waiter's clock. So
//! `u`'s access stamped `c` happens before `t`'s access when
//! `vc[t][u] > c`, or by the cluster barrier (`interp::cluster`).
//!
//! # Where it is used
//! * Between CTAs of a cluster (`ClusterRun::ordered`): the per-byte tags
//!   of the distributed shared-memory check carry the stamp (`mtags`), and
//!   the exit check asks it of each thread's latest remote access.
//! * Within a CTA: the shared-memory check's epochs see `bar.sync`,
//!   `bar.warp.sync` and the cluster barrier's phases (`interp::cluster`,
//!   *Order within a CTA*), not mbarrier phases. A race it reports with a single other thread is
//!   asked again ([`Exec::shared_race_hb`]) with the ordering of the
//!   cluster tags' last write or read of the byte, when that is the other
//!   thread's (the tags of this CTA's own accesses, kept as for a peer's).
//!   A write over a byte that several threads read in the barrier interval
//!   stays a race (the shared check keeps no reader list), as does an
//!   access ordered only by a cluster-barrier phase chained into an
//!   mbarrier phase through a third thread that waited for neither.
//!
//! Bulk copies land as writes of no thread (`interp::bulk`): they are
//! ordered by the wait that lands them, not by these clocks.
//!
//! # The budget
//! A clock is 4 bytes per thread of the cluster, and every thread and
//! every barrier an arrive reached may hold one (a barrier two), so the
//! clocks grow as the square of the threads per cluster: 1 GiB for the
//! threads of a 16 × 1,024 cluster alone. They may take at most
//! [`MBAR_CLOCK_BUDGET`] bytes per running cluster, counted as
//! [`clock_bytes`] with every thread's clock: a launch over it with one
//! barrier is refused before any thread runs, and an arrive that would
//! give one barrier too many clocks stops the launch
//! ([`SimError::MbarClockBudget`] for both, naming the threads, the
//! barriers, the bytes and the budget).

use super::super::checks::global::Kind;
use super::super::checks::probe::Probe;
use super::super::checks::shared_race::Access;
use super::super::code::Code;
use super::super::error::{AccessKind, SimError, Site};
use super::super::ir::Op;
use super::cluster::ClusterRun;
use super::{Exec, Fault, Res, fault};

/// The most bytes the mbarrier clocks of the race checks may take in one
/// running cluster (module `interp::mbar_order`; each simulator worker
/// runs one cluster at a time): 256 MiB, the threads' clocks of an 8 ×
/// 1,024 cluster. A launch whose clocks would take more is refused with
/// [`SimError::MbarClockBudget`]; with the checks off it runs.
pub const MBAR_CLOCK_BUDGET: u64 = 256 << 20;

/// Whether `code` arrives on an mbarrier: with checks on, a cluster launch
/// of it keeps the clocks.
pub(crate) fn arrives(code: &Code) -> bool {
    code.insts
        .iter()
        .any(|i| matches!(i.op, Op::MbarArrive { .. }))
}

/// The bytes the clocks of a cluster of `threads` threads take at most
/// with `bars` barriers holding clocks: one clock of `threads` 4-byte
/// entries per thread, two per barrier.
pub(crate) fn clock_bytes(threads: u64, bars: u64) -> u64 {
    threads
        .saturating_mul(4)
        .saturating_mul(threads.saturating_add(bars.saturating_mul(2)))
}

/// [`SimError::MbarClockBudget`] when the clocks of a cluster of `threads`
/// threads with `bars` barriers holding clocks exceed
/// [`MBAR_CLOCK_BUDGET`].
pub(crate) fn check_budget(kernel: &str, threads: u64, bars: u64) -> Result<(), SimError> {
    let bytes = clock_bytes(threads, bars);
    if bytes <= MBAR_CLOCK_BUDGET {
        return Ok(());
    }
    Err(SimError::MbarClockBudget {
        kernel: kernel.to_string(),
        threads,
        mbarriers: bars,
        bytes,
        budget: MBAR_CLOCK_BUDGET,
    })
}

/// `acc` joined with `other` (element-wise maximum; an empty `acc` takes
/// `other`).
pub(crate) fn join(acc: &mut Vec<u32>, other: &[u32]) {
    if acc.is_empty() {
        acc.extend_from_slice(other);
        return;
    }
    for (a, &o) in acc.iter_mut().zip(other) {
        *a = (*a).max(o);
    }
}

impl ClusterRun {
    /// Whether the clocks are kept (checks on, the kernel arrives on an
    /// mbarrier).
    pub(crate) fn clocks(&self) -> bool {
        !self.mtags.is_empty()
    }

    /// Whether the access of thread `u` (cluster index) stamped `c`
    /// happens before the next access of thread `i` by an mbarrier phase.
    pub(crate) fn mbar_ordered(&self, u: usize, c: u32, i: usize) -> bool {
        self.vc
            .get(i)
            .and_then(|v| v.get(u))
            .is_some_and(|&k| k > c)
    }

    /// An arrive of thread `t` of the running CTA: its count goes up; the
    /// clock it releases (`None` without clocks).
    pub(crate) fn release(&mut self, t: usize) -> Option<Vec<u32>> {
        if !self.clocks() {
            return None;
        }
        let i = self.cur * self.n + t;
        self.mrel[i] += 1;
        let mut v = if self.vc[i].is_empty() {
            vec![0; self.size * self.n]
        } else {
            self.vc[i].clone()
        };
        v[i] = self.mrel[i];
        Some(v)
    }

    /// A wait of thread `t` of the running CTA observed a phase complete
    /// whose barrier had released `done` by then.
    pub(crate) fn acquire(&mut self, t: usize, done: &[u32]) {
        if !self.clocks() || done.is_empty() {
            return;
        }
        let i = self.cur * self.n + t;
        join(&mut self.vc[i], done);
    }

    /// The stamp of thread `t` of the running CTA now.
    pub(crate) fn stamp(&self, t: usize) -> u32 {
        self.mrel.get(self.cur * self.n + t).copied().unwrap_or(0)
    }

    /// Whether the access the cluster tags of byte `b` of the running CTA
    /// record (its last write when `wtag`, else its read) is thread `ot`'s
    /// of this CTA and happens before the next access of thread `i` (which
    /// completed `waits` cluster-barrier waits).
    pub(crate) fn hb_local(&self, b: usize, ot: u64, wtag: bool, i: usize, waits: u32) -> bool {
        if !self.clocks() {
            return false;
        }
        let k = usize::from(!wtag);
        let tag = self.tags[self.cur][b][k];
        tag != 0
            && self.tag_thread(tag) == (self.cur, ot as usize)
            && self.ordered(tag, self.mtags[self.cur][b][k], i, waits)
    }
}

impl Exec<'_> {
    /// The earlier access of a shared-memory race (a `kind` access of
    /// thread `other_tid`, `u32::MAX` for several) at byte `offset` of the
    /// running CTA of a cluster launch, from the cluster tags when they
    /// hold that thread's: the launch's re-run with a probe names it for
    /// other launches, and a cluster on live memory cannot run again.
    pub(crate) fn cluster_earlier(
        &self,
        offset: u64,
        kind: AccessKind,
        other_tid: u32,
    ) -> Option<Box<Site>> {
        let cl = self.cl.as_deref()?;
        if cl.tags.is_empty() || cl.cur >= cl.size || other_tid == u32::MAX {
            return None;
        }
        let k = usize::from(kind == AccessKind::Read);
        let tag = cl.tags[cl.cur].get(offset as usize)?[k];
        (tag != 0 && cl.tag_thread(tag) == (cl.cur, other_tid as usize)).then(|| self.tag_site(tag))
    }

    /// The shared-memory check of a plain store of `new` at `off` by
    /// thread `t` at `pc` of the running CTA, with the mbarrier order: a
    /// conflict it orders is none; a write over another thread's write of
    /// the same bytes that it does not order is the same-value warning
    /// (`checks::benign`).
    #[inline(never)]
    pub(crate) fn shared_store_hb(
        &mut self,
        t: usize,
        pc: usize,
        off: usize,
        new: &[u8],
    ) -> Res<()> {
        let l = new.len();
        let Err(f) = self.cta.shared_check_at(t, pc, off, l, true, false) else {
            return Ok(());
        };
        let a = self.cta.access(t, off, l, true, false);
        match self.shared_race_hb(pc, &a, f) {
            Err(f) if matches!(*f, Fault::Race { .. }) => {
                let cl = self.cl.as_deref().expect("a cluster launch");
                let i = cl.cur * cl.n + t;
                let waits = cl.wait[i];
                self.cta.shared_same_write(t, pc, off, new, f, &|b, ot, w| {
                    cl.hb_local(b, ot, w, i, waits)
                })
            }
            r => r,
        }
    }

    /// The shared-memory check's finding `f` for the access `a` (built by
    /// `CtaState::access`) by instruction `pc` of the running CTA: a race
    /// is checked again with the mbarrier order (module docs); the finding
    /// stays if that does not order it.
    #[cold]
    #[inline(never)]
    pub(crate) fn shared_race_hb(&mut self, pc: usize, a: &Access, f: Box<Fault>) -> Res<()> {
        let Some(cl) = self.cl.as_deref() else {
            return Err(f);
        };
        if !matches!(*f, Fault::Race { .. }) || !cl.clocks() {
            return Err(f);
        }
        let i = cl.cur * cl.n + a.t;
        let waits = cl.wait[i];
        // the bytes before the race already carry this access's tags:
        // stepping them again changes nothing
        self.cta
            .sh
            .check_hb(a, &|b, ot, w| cl.hb_local(b, ot, w, i, waits))?;
        if let Some(p) = &mut self.cta.probe {
            let kind = Kind::of(a.write, a.atomic);
            Probe::note(p, a.off as u64, a.len, a.t, pc, kind);
        }
        Ok(())
    }

    /// One more barrier of the running cluster takes clocks (its first
    /// arrive with clocks): [`SimError::MbarClockBudget`] when that would
    /// take the clocks past [`MBAR_CLOCK_BUDGET`] (module docs).
    pub(crate) fn clock_barrier(&mut self) -> Res<()> {
        let kernel = &self.k.e.name;
        let Some(cl) = self.cl.as_deref_mut() else {
            return Ok(());
        };
        let threads = (cl.size * cl.n) as u64;
        if let Err(e) = check_budget(kernel, threads, cl.mbar_clocked + 1) {
            return fault(Fault::Sim(Box::new(e)));
        }
        cl.mbar_clocked += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_counts_a_clock_per_thread_and_two_per_barrier() {
        assert_eq!(clock_bytes(3, 0), 36);
        assert_eq!(clock_bytes(3, 2), 4 * 3 * 7);
        assert_eq!(clock_bytes(u64::MAX, 1), u64::MAX);
        // 8 × 1,024 threads fill it alone; one barrier more is refused
        assert!(check_budget("k", 8192, 0).is_ok());
        let e = check_budget("k", 8192, 1).unwrap_err();
        assert_eq!(
            e,
            SimError::MbarClockBudget {
                kernel: "k".into(),
                threads: 8192,
                mbarriers: 1,
                bytes: 4 * 8192 * 8194,
                budget: MBAR_CLOCK_BUDGET,
            }
        );
    }

    #[test]
    fn an_access_kind_is_atomic_then_write_then_read() {
        assert_eq!(Kind::of(false, false), Kind::Read);
        assert_eq!(Kind::of(true, false), Kind::Write);
        assert_eq!(Kind::of(true, true), Kind::Atomic);
        assert_eq!(Kind::of(false, true), Kind::Atomic);
    }
}
