//! The union schedule of a [`GRID`](super::grouped_mcast::GRID) cluster
//! (issue 31: the bf16/f16 forward at `B` 32 and 64 in clusters of 2
//! token tiles × 4 groups): all eight CTAs must stage the same input block
//! at every step (its tile is multicast to the four groups of a token
//! tile), so every CTA walks the merge of the cluster's `L = 4·G` rows,
//! not its own `G`. Each CTA ranks all `L` rows' first windows in its own
//! shared memory (the forward's [`RowLists`], `L` lists; deterministic,
//! nothing exchanged, so every loop and barrier is cluster-uniform), and
//! warp 0 runs the merge **one list a lane** (`L ≤ 32`): lane `l` keeps
//! list `l`'s cursor and window start in registers and reads its head
//! from shared memory; the step's key is the minimum over the lanes
//! (`redux.sync.min`); a lane whose head has that key takes it and moves
//! on (so each output block sees its entries in its list's order, and a
//! duplicate block in a row takes a second step); the CTA's own `G`
//! lists' slots (`NONE`: no entry this step, the block's MMAs skipped)
//! come to every lane of warp 0 by `shfl.sync.idx` for the elected lane's
//! copies. A step's cost is the same for 16 or 32 lists, where warp 0's
//! merge of `G` lists in registers grew with `G`.
//!
//! Windows (`K > W`): a lane whose head reached its window's end with
//! entries left asks for a refill (`vote.sync.any`); warp 0 publishes
//! each list's new window start (`NONE`: none) in [`Mc::next`] from word
//! 4, and the CTA ranks those rows again between two `bar.sync`s
//! ([`Union::refill`]).

use crate::dsl::types::{Pred, Reg, U32};
use crate::dsl::{Cmp, KernelBuilder, ReduxOp, ShflMode, Var};

use super::super::common::sptr;
use super::super::grouped_mcast::Mc;
use super::super::grouped_sched::RowLists;
use super::{NONE, THREADS};

/// The union schedule of one CTA (see the module docs).
pub(super) struct Union<'a> {
    /// the `L` rows' lists (`rows.g` = `L`)
    rows: &'a RowLists,
    /// output blocks a group (`G`)
    g: u32,
    lane: Reg<U32>,
    /// lane `< L`: the lane owns a list
    mine: Reg<Pred>,
    /// the lane's list's window base, `min(lane, L − 1)·w`
    base: Reg<U32>,
}

/// A lane's list: its cursor and its window's first rank.
pub(super) struct Heads {
    p: Var<U32>,
    lo: Var<U32>,
}

impl<'a> Union<'a> {
    /// The union of `rows` (`L` lists, `L ≤ 32`) for groups of `g`.
    pub(super) fn new(b: &mut KernelBuilder, rows: &'a RowLists, g: u32, lane: Reg<U32>) -> Self {
        assert!(rows.g <= 32 && rows.g.is_multiple_of(g));
        let mine = b.setp(Cmp::Lt, lane, rows.g);
        let ll = b.min(lane, rows.g - 1);
        let base = b.mul_lo(ll, rows.w);
        Union {
            rows,
            g,
            lane,
            mine,
            base,
        }
    }

    /// Rank the first window of each of the cluster's rows `o0 .. o0+L`
    /// (CTA-wide, between two `bar.sync`s); every cursor at 0.
    pub(super) fn prepare(&self, b: &mut KernelBuilder, o0: Reg<U32>) -> Heads {
        // the previous tile's readers are done
        b.bar_sync();
        let r = self.rows;
        let total = b.mul_lo(r.k, r.g);
        b.for_range(r.tid, total, THREADS, |b, e| {
            let g = b.div(e, r.k);
            let k = b.rem(e, r.k);
            let row = b.add(o0, g);
            r.rank_into(b, (g, row, k), None);
        });
        b.bar_sync();
        Heads {
            p: b.var::<U32>(0u32),
            lo: b.var::<U32>(0u32),
        }
    }

    /// Warp 0, every lane: one step of the merge. The step's key `m` and
    /// the slots group `q`'s `G` lists take (`NONE`: none), in every
    /// lane; with windows (`need`), `need` is set to 1 when a lane's
    /// head left its window with entries left.
    pub(super) fn advance(
        &self,
        b: &mut KernelBuilder,
        h: &Heads,
        q: Reg<U32>,
        need: Option<&Var<U32>>,
    ) -> (Reg<U32>, Vec<Reg<U32>>) {
        let r = self.rows;
        let p = b.get(&h.p);
        let lo = b.get(&h.lo);
        // (a finished list reads its last entry, then taken as NONE)
        let pc = b.min(p, r.last);
        let i = b.sub(pc, lo);
        let at = b.add(self.base, i);
        let kp = b.mad_lo(at, 4u32, r.keys);
        let key = b.ld_shared(sptr::<U32>(kp), 0);
        let sp = b.mad_lo(at, 4u32, r.slots);
        let slot = b.ld_shared(sptr::<U32>(sp), 0);
        let inside = b.setp(Cmp::Lt, p, r.k);
        let inside = b.pand(inside, self.mine);
        let key = b.selp(inside, key, NONE);
        let m = b.redux(ReduxOp::Min, key, u32::MAX);
        let take = b.setp(Cmp::Eq, key, m);
        let live = b.setp(Cmp::Ne, key, NONE);
        let take = b.pand(take, live);
        let one = b.selp(take, 1u32, 0u32);
        let p1 = b.add(p, one);
        b.set(&h.p, p1);
        let out = b.selp(take, slot, NONE);
        let qg = b.mul_lo(q, self.g);
        let taken = (0..self.g)
            .map(|j| {
                let src = b.add(qg, j);
                b.shfl(ShflMode::Idx, out, src, 0x1f, u32::MAX)
            })
            .collect();
        if let Some(need) = need {
            // (nothing unless `K > W`: a cluster-uniform branch)
            b.if_(r.windowed, |b| {
                let due = self.due(b, h);
                let any = b.vote(false, due, u32::MAX);
                let v = b.selp(any, 1u32, 0u32);
                b.set(need, v);
            });
        }
        (m, taken)
    }

    /// The lane's list needs its next window: its head is at the window's
    /// end with entries left.
    fn due(&self, b: &mut KernelBuilder, h: &Heads) -> Reg<Pred> {
        let r = self.rows;
        let p = b.get(&h.p);
        let lo = b.get(&h.lo);
        let d = b.sub(p, lo);
        let full = b.setp(Cmp::Eq, d, r.w);
        let left = b.setp(Cmp::Lt, p, r.k);
        let due = b.pand(full, left);
        b.pand(due, self.mine)
    }

    /// Warp 0, after [`Union::advance`] of the step staged into buffer
    /// `buf`: hand the CTA the key `m` and (windows) whether a refill is
    /// due, with each list's new window start when one is (words `4 + l`,
    /// `NONE` for a list that keeps its window); read after the step's
    /// `bar.sync` (`grouped_mcast::fetch`, [`Union::refill`]).
    pub(super) fn publish(
        &self,
        b: &mut KernelBuilder,
        mc: &Mc,
        buf: Reg<U32>,
        m: Reg<U32>,
        need: Option<&Var<U32>>,
        h: &Heads,
    ) {
        let at = b.mad_lo(buf, 4u32, mc.next);
        b.st_shared(sptr::<U32>(at), 0, m);
        let Some(need) = need else {
            return;
        };
        let n = b.get(need);
        b.st_shared(sptr::<U32>(at), 2, n);
        let due = b.setp(Cmp::Ne, n, 0u32);
        b.if_(due, |b| {
            let d = self.due(b, h);
            let p = b.get(&h.p);
            let v = b.selp(d, p, NONE);
            b.if_(self.mine, |b| {
                let a = b.mad_lo(self.lane, 4u32, mc.next);
                b.st_shared(sptr::<U32>(a), 4, v);
            });
        });
    }

    /// Every thread, when a refill is due: rank the rows whose lists
    /// asked (their window from the published start), then warp 0's lanes
    /// take their new window starts.
    pub(super) fn refill(&self, b: &mut KernelBuilder, mc: &Mc, o0: Reg<U32>, h: &Heads) {
        let r = self.rows;
        // every thread has read the old windows and the published starts
        // are visible
        b.bar_sync();
        b.for_range(0u32, r.g, 1u32, |b, l| {
            let a = b.mad_lo(l, 4u32, mc.next);
            let lo = b.ld_shared(sptr::<U32>(a), 4);
            let go = b.setp(Cmp::Ne, lo, NONE);
            b.if_(go, |b| {
                let row = b.add(o0, l);
                b.for_range(r.tid, r.k, THREADS, |b, k| {
                    r.rank_into(b, (l, row, k), Some(lo));
                });
            });
        });
        b.bar_sync();
        // (each lane its own word, which only it writes next)
        let own = b.pand(mc.warp0, self.mine);
        b.if_(own, |b| {
            let a = b.mad_lo(self.lane, 4u32, mc.next);
            let lo = b.ld_shared(sptr::<U32>(a), 4);
            let go = b.setp(Cmp::Ne, lo, NONE);
            b.if_(go, |b| b.set(&h.lo, lo));
        });
    }
}
