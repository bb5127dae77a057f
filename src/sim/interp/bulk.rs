//! `mbarrier` objects and `cp.async.bulk` (issue 31; sm_90, PTX 8.0).
//!
//! # The barrier (PTX ISA 8.x "mbarrier": "Contents of the mbarrier
//! object", "Phase completion of the mbarrier object", "expect-tx
//! operation", "complete-tx operation")
//! Each CTA keeps its initialised barriers by shared offset ([`BulkState`];
//! the `.b64` bytes themselves are not used): the expected arrival count
//! (`mbarrier.init`), the pending arrivals of the current phase, the
//! tx-count and the number of completed phases. `mbarrier.arrive` counts
//! one arrival (`.expect_tx` first adds its byte count to the tx-count)
//! and returns the phase number as the opaque state; the phase completes
//! when no arrival is pending and the tx-count is zero, and the next one
//! starts with the expected count. `mbarrier.try_wait.parity p` is true
//! once the phase of parity `p` has completed, i.e. when the current
//! phase's parity differs from `p`.
//!
//! # The bulk copy ("cp.async.bulk")
//! `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes`
//! reads its source when issued (bounds and initialisation checked, in
//! 16-byte pieces) and stays pending in each destination CTA (the CTA of
//! the `.shared::cluster` destination, or with `.multicast::cluster` every
//! CTA whose rank is set in the 16-bit mask, at the same shared offsets
//! for the bytes and the barrier). Its bytes land — and complete-tx its
//! byte count on the destination's barrier — at the latest point the ISA
//! allows: when a thread of that CTA waits on that barrier and the phase
//! cannot complete otherwise (`mbarrier.try_wait` lands the CTA's pending
//! copies on the barrier one at a time, oldest first, until the phase
//! completes). So a program that reads the bytes without a successful
//! wait reads stale bytes, and with checks on that read is a finding
//! ([`SimError::BulkCopy`], like `cp.async`'s read before wait), as is a
//! write to them. The landed bytes count as written by no thread of the
//! CTA (as remote stores do, `interp::cluster`), so that every thread whose
//! own wait succeeded may read them.
//!
//! # Waiting
//! `mbarrier.try_wait` whose phase has not completed parks the thread at
//! it (the ISA lets it wait a system-dependent time; a program's retry
//! loop sees the same results) and the cluster's schedule goes on with the
//! other threads and CTAs. When none can go on, the parked waits run
//! again if an mbarrier event (init, arrive, a copy issued or landed)
//! happened since they last ran; otherwise no waited-for phase can ever
//! complete and the launch stops with a [`SimError::Deadlock`] naming the
//! barriers' states (pending arrivals, tx-count). Kernels with an mbarrier
//! or a bulk copy always run on the cluster schedule (as clusters of one
//! CTA when the launch names none, the GPU's implicit clusters).
//!
//! # Findings ([`SimError::BulkCopy`] unless said)
//! A barrier used before `mbarrier.init`, an init count outside 1..2²⁰−1,
//! an arrive past the expected count, a tx-count past 2²⁰−1; a bulk copy
//! whose size is not a non-zero multiple of 16, whose addresses are not
//! 16-byte aligned ([`SimError::Misaligned`]) or not inside shared memory
//! or the source allocation ([`SimError::OutOfBounds`]), whose mask names
//! no CTA or a rank outside the cluster, whose barrier is not in the
//! destination's CTA (unicast), or whose destination CTA has not
//! initialised the barrier or has exited when it is issued (a missing
//! `fence.mbarrier_init` and cluster barrier); with checks on, two pending
//! copies to one byte and a shared access to a pending copy's bytes by a
//! thread of the destination CTA. Not modelled: `.shared::cluster`
//! accesses of another CTA to a pending copy's bytes; the
//! generic/async proxy ordering `fence.proxy.async` provides (fences are
//! no-ops of the simulator); whether an init is visible to the peers (only
//! that it happened before their copy or arrive). The order an arrive and
//! a successful wait give to other accesses is `interp::mbar_order`'s.
//!
//! `mbarrier.arrive.release.cluster.shared::cluster.b64 _, [a]` arrives
//! on the barrier of the CTA `a` names (from `mapa`).
//!
//! [`SimError::BulkCopy`]: crate::sim::SimError::BulkCopy
//! [`SimError::Deadlock`]: crate::sim::SimError::Deadlock
//! [`SimError::Misaligned`]: crate::sim::SimError::Misaligned
//! [`SimError::OutOfBounds`]: crate::sim::SimError::OutOfBounds

use std::sync::Arc;

use super::super::checks::shared_race::Access;
use super::super::code::XInst;
use super::super::error::SimError;
use super::super::ir::*;
use super::cluster::{OFFSET_MASK, RANK_SHIFT, blank_site};
use super::step::reg;
use super::{Exec, Fault, Res, fault};

/// The largest arrival count and tx-count (2²⁰ − 1).
const MBAR_MAX: u64 = (1 << 20) - 1;

/// One initialised barrier of a CTA.
#[derive(Debug, Clone)]
struct Mbar {
    /// Shared offset of the object.
    off: u32,
    /// Expected arrivals per phase.
    count: u32,
    /// Arrivals still pending in the current phase.
    pending: u32,
    /// The tx-count (negative while complete-tx runs ahead of expect-tx).
    tx: i64,
    /// Completed phases.
    phase: u32,
    /// The clocks its arrives released, and those at the latest phase
    /// completion (`interp::mbar_order`; empty without clocks).
    acc: Vec<u32>,
    done: Vec<u32>,
}

impl Mbar {
    /// Complete the phase if nothing is pending.
    fn settle(&mut self) {
        if self.pending == 0 && self.tx == 0 {
            self.phase += 1;
            self.pending = self.count;
            self.done.clone_from(&self.acc);
        }
    }
}

/// A bulk copy not yet landed in this CTA.
#[derive(Debug, Clone)]
struct Pending {
    /// Destination and barrier offsets in this CTA's shared memory.
    dst: u32,
    bar: u32,
    /// The bytes (read at issue; one buffer for every destination of a
    /// multicast).
    data: Arc<[u8]>,
    /// The issuing thread, its rank and the instruction.
    tid: u32,
    rank: u32,
    pc: u32,
}

impl Pending {
    fn overlaps(&self, off: usize, len: usize) -> bool {
        let a = self.dst as usize;
        off < a + self.data.len() && a < off + len
    }
}

/// A CTA's barriers and pending bulk copies.
#[derive(Debug, Default)]
pub(crate) struct BulkState {
    bars: Vec<Mbar>,
    copies: Vec<Pending>,
}

impl BulkState {
    /// Forget everything (a CTA starts).
    pub fn reset(&mut self) {
        self.bars.clear();
        self.copies.clear();
    }

    /// The check of a shared access of `len` bytes at `off` against the
    /// pending copies (the shared-memory check calls it).
    #[inline(always)]
    pub fn check(&self, off: usize, len: usize, write: bool) -> Res<()> {
        if self.copies.is_empty() {
            return Ok(());
        }
        self.check_slow(off, len, write)
    }

    #[cold]
    #[inline(never)]
    fn check_slow(&self, off: usize, len: usize, write: bool) -> Res<()> {
        match self.copies.iter().find(|c| c.overlaps(off, len)) {
            Some(c) => fault(Fault::BulkPending {
                offset: off.max(c.dst as usize) as u64,
                write,
                copy_tid: c.tid,
                copy_rank: c.rank,
                copy_pc: c.pc,
            }),
            None => Ok(()),
        }
    }

    fn bar(&mut self, off: u32) -> Option<&mut Mbar> {
        self.bars.iter_mut().find(|b| b.off == off)
    }

    /// The barriers' states, for a deadlock report.
    pub(crate) fn describe(&self) -> String {
        let mut v: Vec<String> = self
            .bars
            .iter()
            .map(|b| {
                format!(
                    "mbarrier at shared offset {:#x}: {} phases completed, {} of {} arrivals \
                     pending, tx-count {}",
                    b.off, b.phase, b.pending, b.count, b.tx
                )
            })
            .collect();
        v.push(format!("{} bulk copies pending", self.copies.len()));
        v.join(", ")
    }
}

pub(super) fn misuse<T>(message: String) -> Res<T> {
    fault(Fault::Sim(Box::new(SimError::BulkCopy {
        site: blank_site(),
        message,
    })))
}

fn uninit<T>(off: u32) -> Res<T> {
    misuse(format!(
        "the mbarrier at shared offset {off:#x} is used before mbarrier.init"
    ))
}

impl Exec<'_> {
    /// The shared offset of an mbarrier operand (`s0 + off`).
    fn mbar_off(&self, rf: &[u64], i: &XInst) -> Res<u32> {
        let a = reg(rf, i.s[0]).wrapping_add(i.off as u64);
        if !a.is_multiple_of(8) {
            return fault(Fault::Misaligned(Space::Shared, a, 8));
        }
        Ok(self.shared_at(a, 8)? as u32)
    }

    /// `mbarrier.init [s0+off], s1`.
    pub(crate) fn exec_mbar_init(&mut self, rf: &[u64], i: &XInst) -> Res<()> {
        let o = self.mbar_off(rf, i)?;
        let count = reg(rf, i.s[1]) & 0xFFFF_FFFF;
        if count == 0 || count > MBAR_MAX {
            return misuse(format!(
                "mbarrier.init of the barrier at shared offset {o:#x} with count {count} \
                 (1 to {MBAR_MAX})"
            ));
        }
        let b = Mbar {
            off: o,
            count: count as u32,
            pending: count as u32,
            tx: 0,
            phase: 0,
            acc: Vec::new(),
            done: Vec::new(),
        };
        match self.cta.bulk.bar(o) {
            Some(x) => {
                // a barrier initialised again drops its clocks
                if !x.acc.is_empty()
                    && let Some(cl) = self.cl.as_deref_mut()
                {
                    cl.mbar_clocked = cl.mbar_clocked.saturating_sub(1);
                }
                *x = b;
            }
            None => self.cta.bulk.bars.push(b),
        }
        self.mbar_event();
        Ok(())
    }

    /// `mbarrier.arrive{.expect_tx} d, [s0+off]{, s1}` by thread `t`: the
    /// state (the phase number before the arrive); `remote`: the barrier
    /// is a `.shared::cluster` address of any CTA of the cluster. A
    /// release (`interp::mbar_order`).
    pub(crate) fn exec_mbar_arrive(
        &mut self,
        t: usize,
        rf: &[u64],
        i: &XInst,
        tx: bool,
        remote: bool,
    ) -> Res<u64> {
        let (rank, o) = if remote {
            let a = reg(rf, i.s[0]).wrapping_add(i.off as u64) & 0xFFFF_FFFF;
            let (n, cur) = self.cluster_ranks();
            let rank = match a >> RANK_SHIFT {
                0 => cur,
                h => (h - 1) as usize,
            };
            let o = a & OFFSET_MASK;
            if !a.is_multiple_of(8) {
                return fault(Fault::Misaligned(Space::SharedCluster, a, 8));
            }
            if rank >= n || o + 8 > self.k.smem as u64 {
                return fault(Fault::Oob(Space::SharedCluster, a, 8));
            }
            if self.rank_exited(rank) {
                return misuse(format!(
                    "a remote mbarrier.arrive on rank {rank}, which has exited"
                ));
            }
            (rank, o as u32)
        } else {
            (self.cluster_ranks().1, self.mbar_off(rf, i)?)
        };
        let n = if tx { reg(rf, i.s[1]) & 0xFFFF_FFFF } else { 0 };
        let clock = self.cl.as_deref_mut().and_then(|c| c.release(t));
        if clock.is_some()
            && (self.cta_of(rank).bulk.bar(o)).is_some_and(|b| b.acc.is_empty() && b.pending > 0)
        {
            // the barrier's first clocks: within the budget?
            self.clock_barrier()?;
        }
        let Some(b) = self.cta_of(rank).bulk.bar(o) else {
            return uninit(o);
        };
        if b.pending == 0 {
            return misuse(format!(
                "an arrive on the mbarrier at shared offset {o:#x} past its {} expected \
                 arrivals (phase {}, tx-count {} still to complete)",
                b.count, b.phase, b.tx
            ));
        }
        b.tx += n as i64;
        if b.tx > MBAR_MAX as i64 {
            return misuse(format!(
                "expect_tx raises the tx-count of the mbarrier at shared offset {o:#x} to {} \
                 (at most {MBAR_MAX})",
                b.tx
            ));
        }
        let state = u64::from(b.phase);
        if let Some(c) = &clock {
            super::mbar_order::join(&mut b.acc, c);
        }
        b.pending -= 1;
        b.settle();
        self.mbar_event();
        Ok(state)
    }

    /// `mbarrier.try_wait.parity d, [s0+off], s1` by thread `t`:
    /// `Some(true)` when the phase of parity `s1 & 1` has completed (after
    /// landing this CTA's pending copies on the barrier, oldest first, as
    /// far as needed; an acquire of what that completion released,
    /// `interp::mbar_order`); `None` to park the thread.
    pub(crate) fn exec_mbar_try_wait(
        &mut self,
        t: usize,
        rf: &[u64],
        i: &XInst,
    ) -> Res<Option<bool>> {
        let o = self.mbar_off(rf, i)?;
        let parity = (reg(rf, i.s[1]) & 1) as u32;
        loop {
            let Some(b) = self.cta.bulk.bar(o) else {
                return uninit(o);
            };
            if b.phase & 1 != parity {
                if let Some(c) = self.cl.as_deref_mut() {
                    c.acquire(t, &b.done);
                }
                return Ok(Some(true));
            }
            let Some(k) = self.cta.bulk.copies.iter().position(|c| c.bar == o) else {
                return Ok(None);
            };
            let c = self.cta.bulk.copies.remove(k);
            self.land(&c)?;
            let b = self.cta.bulk.bar(o).expect("the barrier was found above");
            b.tx -= c.data.len() as i64;
            b.settle();
            self.mbar_event();
        }
    }

    /// Write a landed copy's bytes into the running CTA's shared memory
    /// (with checks: as a write of no thread of the CTA, module docs).
    fn land(&mut self, c: &Pending) -> Res<()> {
        let (o, l) = (c.dst as usize, c.data.len());
        if self.k.checks {
            let e0 = self.cta.epoch0;
            self.cta.sh.check(&Access::remote(o, l, true, e0))?;
        }
        self.cta.shared[o..o + l].copy_from_slice(&c.data);
        Ok(())
    }

    /// `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes
    /// {.multicast::cluster} [s0+off], [s1], s2, [s3]{, s4}` by thread `t`
    /// at `pc`: check, read the source, leave the copy pending in each
    /// destination CTA.
    pub(crate) fn exec_cp_async_bulk(
        &mut self,
        t: usize,
        pc: usize,
        rf: &[u64],
        i: &XInst,
        multicast: bool,
    ) -> Res<()> {
        let dst = reg(rf, i.s[0]).wrapping_add(i.off as u64) & 0xFFFF_FFFF;
        let src = reg(rf, i.s[1]);
        let size = reg(rf, i.s[2]) & 0xFFFF_FFFF;
        let bar = reg(rf, i.s[3]) & 0xFFFF_FFFF;
        if size == 0 || !size.is_multiple_of(16) {
            return misuse(format!(
                "cp.async.bulk of {size} bytes (a non-zero multiple of 16)"
            ));
        }
        if !dst.is_multiple_of(16) {
            return fault(Fault::Misaligned(Space::SharedCluster, dst, 16));
        }
        if !src.is_multiple_of(16) {
            return fault(Fault::Misaligned(Space::Global, src, 16));
        }
        if !bar.is_multiple_of(8) {
            return fault(Fault::Misaligned(Space::SharedCluster, bar, 8));
        }
        let mask = multicast.then(|| reg(rf, i.s[4]) & 0xFFFF);
        let (ranks, doff, boff) = self.bulk_targets("cp.async.bulk", mask, dst, bar, size)?;
        let mut data = Vec::with_capacity(size as usize);
        for k in (0..size).step_by(16) {
            data.extend_from_slice(self.g.load(t, pc, src + k, 16)?);
        }
        self.bulk_pending(t, pc, &ranks, doff, boff, data.into());
        Ok(())
    }

    /// The destination CTAs of a bulk copy (`what`) of `size` bytes to
    /// `.shared::cluster` address `dst` completing on `bar`, with the
    /// multicast `mask` if any, and the shared offsets of the bytes and the
    /// barrier in each, after the checks (module docs).
    pub(super) fn bulk_targets(
        &mut self,
        what: &str,
        mask: Option<u64>,
        dst: u64,
        bar: u64,
        size: u64,
    ) -> Res<(Vec<usize>, u64, u64)> {
        let (n, cur) = self.cluster_ranks();
        let rank_of = |a: u64| match a >> RANK_SHIFT {
            0 => cur,
            h => (h - 1) as usize,
        };
        let (doff, boff) = (dst & OFFSET_MASK, bar & OFFSET_MASK);
        let ranks: Vec<usize> = if let Some(mask) = mask {
            if mask == 0 {
                return misuse(format!("{what} multicast mask 0 names no CTA"));
            }
            if let Some(r) = (n..16).find(|r| mask >> r & 1 == 1) {
                return misuse(format!(
                    "{what} multicast mask {mask:#06x} names rank {r}; the cluster \
                     has {n} CTAs"
                ));
            }
            (0..n).filter(|r| mask >> r & 1 == 1).collect()
        } else {
            let (dr, br) = (rank_of(dst), rank_of(bar));
            if dr >= n {
                return fault(Fault::Oob(Space::SharedCluster, dst, size as u32));
            }
            if br != dr {
                return misuse(format!(
                    "{what} to rank {dr} completes on a barrier of rank {br} (the \
                     barrier must be in the destination's CTA)"
                ));
            }
            vec![dr]
        };
        let smem = self.k.smem as u64;
        if doff + size > smem {
            return fault(Fault::Oob(Space::SharedCluster, dst, size as u32));
        }
        if boff + 8 > smem {
            return fault(Fault::Oob(Space::SharedCluster, bar, 8));
        }
        let checks = self.k.checks;
        let lines = &self.k.e.lines;
        for &r in &ranks {
            if self.rank_exited(r) {
                return misuse(format!("{what} into rank {r}, which has exited"));
            }
            let st = &self.cta_of(r).bulk;
            if !st.bars.iter().any(|b| u64::from(b.off) == boff) {
                return misuse(format!(
                    "{what} completes on the mbarrier at shared offset {boff:#x} of \
                     rank {r}, which that CTA has not initialised when the copy is issued \
                     (mbarrier.init, fence.mbarrier_init.release.cluster and a cluster \
                     barrier come first)"
                ));
            }
            if checks
                && let Some(c) = st
                    .copies
                    .iter()
                    .find(|c| c.overlaps(doff as usize, size as usize))
            {
                let line = lines.get(c.pc as usize).copied().unwrap_or(0);
                return misuse(format!(
                    "{what} writes shared offset {:#x} of rank {r}, which the pending \
                     bulk copy at line {line} also writes (two pending copies to one byte \
                     are unordered)",
                    doff.max(u64::from(c.dst))
                ));
            }
        }
        Ok((ranks, doff, boff))
    }

    /// Leave `data` pending in each of `ranks` (issued by thread `t` at
    /// `pc`), to land at `doff` and complete on the barrier at `boff`.
    pub(super) fn bulk_pending(
        &mut self,
        t: usize,
        pc: usize,
        ranks: &[usize],
        doff: u64,
        boff: u64,
        data: Arc<[u8]>,
    ) {
        let cur = self.cluster_ranks().1;
        for &r in ranks {
            let p = Pending {
                dst: doff as u32,
                bar: boff as u32,
                data: Arc::clone(&data),
                tid: t as u32,
                rank: cur as u32,
                pc: pc as u32,
            };
            self.cta_of(r).bulk.copies.push(p);
        }
        self.mbar_event();
    }
}
