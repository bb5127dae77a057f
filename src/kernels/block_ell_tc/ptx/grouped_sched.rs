//! The grouped kernels' schedule ([`super::grouped`]): the `G` sorted
//! entry lists of a CTA tile — the forward pass's rows ranked into
//! windows in shared memory, grad-input's column blocks of the transposed
//! index — and the merge step that takes the smallest head (in the
//! cluster kernels run by warp 0 alone, which hands the CTA each step's
//! key: `grouped_mcast::publish`).

use crate::dsl::types::{Pred, Reg, S32, U32};
use crate::dsl::{Cmp, GlobalPtr, KernelBuilder, Var};
use std::cell::RefCell;

use super::common::sptr;
use super::grouped::{NONE, THREADS};

/// The `G` sorted entry lists of a CTA tile.
pub(super) trait Lists {
    /// Set up the lists of output blocks `o0 .. o0+G` (the forward pass
    /// ranks into shared memory; ends with `bar.sync`).
    fn prepare(&self, b: &mut KernelBuilder, o0: Reg<U32>) -> Vec<Reg<U32>>;
    /// The head of list `g` at position `p`: its key (`NONE` past the
    /// end) and global slot.
    fn head(
        &self,
        b: &mut KernelBuilder,
        ctx: &[Reg<U32>],
        g: u32,
        p: Reg<U32>,
    ) -> (Reg<U32>, Reg<U32>);
    /// The first position of list `g`, when not 0.
    fn start(&self, _ctx: &[Reg<U32>], _g: u32) -> Option<Reg<U32>> {
        None
    }
    /// Whether the lists keep windows ([`Lists::pending`],
    /// [`Lists::refill`]).
    fn windowed(&self) -> bool {
        false
    }
    /// After a step moved the `cursors`: set `need` to 1 when a list's
    /// head left its window with entries left.
    fn pending(
        &self,
        _b: &mut KernelBuilder,
        _ctx: &[Reg<U32>],
        _cursors: &[Var<U32>],
        _need: &Var<U32>,
    ) {
    }
    /// Bring the heads that left their windows into shared memory (a
    /// CTA-wide step between two `bar.sync`).
    fn refill(
        &self,
        _b: &mut KernelBuilder,
        _ctx: &[Reg<U32>],
        _o0: Reg<U32>,
        _cursors: &[Var<U32>],
    ) {
    }
    /// The forward's row lists (the union schedule ranks with them,
    /// `grouped_union`).
    fn as_rows(&self) -> Option<&RowLists> {
        None
    }
    /// After list `g` took its head (`took`), its cursor now `p`: lists
    /// that keep their heads in registers load the next one.
    fn took(
        &self,
        _b: &mut KernelBuilder,
        _ctx: &[Reg<U32>],
        _g: u32,
        _took: Reg<Pred>,
        _p: Reg<U32>,
    ) {
    }
}

/// Forward: row `r`'s slots ranked by (`col` as u32, slot) into shared
/// memory, a window of `w` ranked entries a list at a time.
pub(super) struct RowLists {
    pub(super) col: GlobalPtr<S32>,
    pub(super) k: Reg<U32>,
    pub(super) r: Reg<U32>,
    pub(super) g: u32,
    /// shared addresses of the keys and the slots (`G·w` u32 each)
    pub(super) keys: Reg<U32>,
    pub(super) slots: Reg<U32>,
    pub(super) tid: Reg<U32>,
    /// entries a list keeps in shared memory: `min(K, W)`
    pub(super) w: Reg<U32>,
    /// `K − 1`
    pub(super) last: Reg<U32>,
    /// `K > W`: a list's windows are refilled as its head moves on
    pub(super) windowed: Reg<Pred>,
}

impl RowLists {
    /// The key of slot `k` of row `row` (`NONE` for a row past `R`).
    fn key(&self, b: &mut KernelBuilder, row: Reg<U32>, k: Reg<U32>) -> Reg<U32> {
        let v = b.var::<U32>(NONE);
        let inside = b.setp(Cmp::Lt, row, self.r);
        b.if_(inside, |b| {
            let s = b.mad_lo(row, self.k, k);
            let p = b.offset(self.col, s);
            let c = b.ld_global(p, 0);
            let c = b.s32_as_u32(c);
            b.set(&v, c);
        });
        b.get(&v)
    }

    /// Rank slot `k` of list `g` (row `row`) against the row's other
    /// slots and, when its rank falls in the window `[lo, lo + w)`, store
    /// its key and slot at position `rank − lo` of the list's window.
    pub(super) fn rank_into(
        &self,
        b: &mut KernelBuilder,
        (g, row, k): (Reg<U32>, Reg<U32>, Reg<U32>),
        lo: Option<Reg<U32>>,
    ) {
        let key = self.key(b, row, k);
        let rank = b.var::<U32>(0u32);
        b.for_range(0u32, self.k, 1u32, |b, k2| {
            let key2 = self.key(b, row, k2);
            let lt = b.setp(Cmp::Lt, key2, key);
            let eq = b.setp(Cmp::Eq, key2, key);
            let before = b.setp(Cmp::Lt, k2, k);
            let tie = b.pand(eq, before);
            let less = b.por(lt, tie);
            let one = b.selp(less, 1u32, 0u32);
            let r0 = b.get(&rank);
            let r1 = b.add(r0, one);
            b.set(&rank, r1);
        });
        let r = b.get(&rank);
        // position in the window (unsigned: a rank below `lo` wraps past
        // `w` and is not stored)
        let i = match lo {
            Some(lo) => b.sub(r, lo),
            None => r,
        };
        let inside = b.setp(Cmp::Lt, i, self.w);
        b.if_(inside, |b| {
            let at = b.mad_lo(g, self.w, i);
            let kp = b.mad_lo(at, 4u32, self.keys);
            b.st_shared(sptr::<U32>(kp), 0, key);
            let s = b.mad_lo(row, self.k, k);
            let sp = b.mad_lo(at, 4u32, self.slots);
            b.st_shared(sptr::<U32>(sp), 0, s);
        });
    }
}

impl Lists for RowLists {
    fn as_rows(&self) -> Option<&RowLists> {
        Some(self)
    }
    /// Ranks every list's first window; the context is, per list, the
    /// offset `g·w − lo` from a head position to its window position
    /// (`lo` the rank of the window's first entry, 0 here).
    fn prepare(&self, b: &mut KernelBuilder, o0: Reg<U32>) -> Vec<Reg<U32>> {
        // the previous tile's readers are done
        b.bar_sync();
        let total = b.mul_lo(self.k, self.g);
        b.for_range(self.tid, total, THREADS, |b, e| {
            let g = b.div(e, self.k);
            let k = b.rem(e, self.k);
            let row = b.add(o0, g);
            self.rank_into(b, (g, row, k), None);
        });
        b.bar_sync();
        (0..self.g)
            .map(|g| {
                let off = b.mul_lo(self.w, g);
                b.var::<U32>(off).reg()
            })
            .collect()
    }
    fn head(
        &self,
        b: &mut KernelBuilder,
        ctx: &[Reg<U32>],
        g: u32,
        p: Reg<U32>,
    ) -> (Reg<U32>, Reg<U32>) {
        // the window position, clamped to the row (a position past it
        // reads the row's last entry, in the last window, whose key is
        // then replaced by NONE)
        let pc = b.min(p, self.last);
        let at = b.add(pc, ctx[g as usize]);
        let kp = b.mad_lo(at, 4u32, self.keys);
        let key = b.ld_shared(sptr::<U32>(kp), 0);
        let sp = b.mad_lo(at, 4u32, self.slots);
        let slot = b.ld_shared(sptr::<U32>(sp), 0);
        let inside = b.setp(Cmp::Lt, p, self.k);
        (b.selp(inside, key, NONE), slot)
    }
    fn windowed(&self) -> bool {
        true
    }
    /// Nothing runs unless `K > W` (a CTA-uniform branch: so are the
    /// cursors).
    fn pending(
        &self,
        b: &mut KernelBuilder,
        ctx: &[Reg<U32>],
        cursors: &[Var<U32>],
        need: &Var<U32>,
    ) {
        b.if_(self.windowed, |b| {
            let needs = self.needs(b, ctx, cursors);
            let mut any = needs[0];
            for &n in &needs[1..] {
                any = b.por(any, n);
            }
            let v = b.selp(any, 1u32, 0u32);
            b.set(need, v);
        });
    }
    /// A list whose head reached its window's end with entries left gets
    /// its next window: the CTA ranks the row's slots again and keeps the
    /// ranks `[p, p + w)` (`p` the head).
    fn refill(&self, b: &mut KernelBuilder, ctx: &[Reg<U32>], o0: Reg<U32>, cursors: &[Var<U32>]) {
        let needs = self.needs(b, ctx, cursors);
        // every thread has read the old windows
        b.bar_sync();
        for (g, (&need, c)) in needs.iter().zip(cursors).enumerate() {
            b.if_(need, |b| {
                let lo = b.get(c);
                let gr = b.mov(g as u32);
                let row = b.add(o0, g as u32);
                b.for_range(self.tid, self.k, THREADS, |b, k| {
                    self.rank_into(b, (gr, row, k), Some(lo));
                });
                let gw = b.mul_lo(self.w, g as u32);
                let off = b.sub(gw, lo);
                b.assign(ctx[g], off);
            });
        }
        b.bar_sync();
    }
}

impl RowLists {
    /// Per list: its head is at its window's end with entries left.
    fn needs(
        &self,
        b: &mut KernelBuilder,
        ctx: &[Reg<U32>],
        cursors: &[Var<U32>],
    ) -> Vec<Reg<Pred>> {
        cursors
            .iter()
            .enumerate()
            .map(|(g, c)| {
                let p = b.get(c);
                let at = b.add(p, ctx[g]);
                let end = b.mul_lo(self.w, g as u32 + 1);
                let full = b.setp(Cmp::Eq, at, end);
                let left = b.setp(Cmp::Lt, p, self.k);
                b.pand(full, left)
            })
            .collect()
    }
}

/// Grad-input: column block `c`'s entries of the transposed index (slots
/// ascending), key `s / K`.
pub(super) struct ColLists {
    pub(super) offsets: GlobalPtr<U32>,
    pub(super) slots: GlobalPtr<U32>,
    pub(super) k: Reg<U32>,
    pub(super) c: Reg<U32>,
    pub(super) g: u32,
    /// `⌊(2³² − 1) / K⌋`, computed once, where the key is taken by a
    /// multiply ([`div_by_k`]; the cluster kernel), else none (`div`)
    pub(super) rcp: Option<Reg<U32>>,
    /// the cluster kernel keeps each list's head (key, slot) in registers
    /// from one step to the next, loading a new one only when the list
    /// took its head ([`Lists::took`]); `None`: every step loads them all
    pub(super) cache: Option<RefCell<Vec<Head>>>,
}

/// A list's head kept in registers: its key and slot.
pub(super) type Head = (Var<U32>, Var<U32>);

impl ColLists {
    /// The entry at index position `i` (`NONE` from `hi` on) into the
    /// head `kv` (key, slot), its key by [`div_by_k`].
    fn load_into(
        &self,
        b: &mut KernelBuilder,
        i: Reg<U32>,
        hi: Reg<U32>,
        kv: &(Var<U32>, Var<U32>),
    ) {
        let m = self
            .rcp
            .expect("the cached lists take their keys by a multiply");
        b.set(&kv.0, NONE);
        b.set(&kv.1, NONE);
        let inside = b.setp(Cmp::Lt, i, hi);
        b.if_(inside, |b| {
            let sp = b.offset(self.slots, i);
            let s = b.ld_global(sp, 0);
            let r = div_by_k(b, s, self.k, m);
            b.set(&kv.0, r);
            b.set(&kv.1, s);
        });
    }
}

/// `⌊s / K⌋` for `s < 2²⁴` (the launch's `R·K·B·B ≤ u32::MAX` with `B ≥
/// 16`) from `m = ⌊(2³² − 1) / K⌋`: `q = ⌊s·m / 2³²⌋` is `⌊s / K⌋` or one
/// less (`m > 2³²/K − 1 − 1/K`, so `s·m / 2³²` falls short of `s / K` by
/// less than `s·(1 + 1/K) / 2³² < 1`), and one step fixes it: `q + 1` when
/// `s − q·K ≥ K`. Exact for every such `s`; four instructions instead of
/// a division.
pub(super) fn div_by_k(b: &mut KernelBuilder, s: Reg<U32>, k: Reg<U32>, m: Reg<U32>) -> Reg<U32> {
    let q = b.mul_hi(s, m);
    let qk = b.mul_lo(q, k);
    let r = b.sub(s, qk);
    let short = b.setp(Cmp::Ge, r, k);
    let up = b.add(q, 1u32);
    b.selp(short, up, q)
}

impl Lists for ColLists {
    /// The position is the index's: list `g` starts at its `lo`.
    fn start(&self, ctx: &[Reg<U32>], g: u32) -> Option<Reg<U32>> {
        Some(ctx[2 * g as usize])
    }
    /// `[lo_g, hi_g)` per column block (empty past `C`).
    fn prepare(&self, b: &mut KernelBuilder, o0: Reg<U32>) -> Vec<Reg<U32>> {
        let mut ctx = Vec::new();
        for g in 0..self.g {
            let o = b.add(o0, g);
            let inside = b.setp(Cmp::Lt, o, self.c);
            let lo = b.var::<U32>(0u32);
            let hi = b.var::<U32>(0u32);
            b.if_(inside, |b| {
                let p = b.offset(self.offsets, o);
                let l = b.ld_global(p, 0);
                let h = b.ld_global(p, 1);
                b.set(&lo, l);
                b.set(&hi, h);
            });
            ctx.push(b.get(&lo));
            ctx.push(b.get(&hi));
        }
        if let Some(cache) = &self.cache {
            // the first heads
            let heads: Vec<_> = (0..self.g as usize)
                .map(|g| {
                    let kv = (b.var::<U32>(NONE), b.var::<U32>(NONE));
                    self.load_into(b, ctx[2 * g], ctx[2 * g + 1], &kv);
                    kv
                })
                .collect();
            *cache.borrow_mut() = heads;
        }
        ctx
    }
    fn took(&self, b: &mut KernelBuilder, ctx: &[Reg<U32>], g: u32, took: Reg<Pred>, p: Reg<U32>) {
        let Some(cache) = &self.cache else {
            return;
        };
        let cache = cache.borrow();
        let kv = &cache[g as usize];
        b.if_(took, |b| self.load_into(b, p, ctx[2 * g as usize + 1], kv));
    }
    fn head(
        &self,
        b: &mut KernelBuilder,
        ctx: &[Reg<U32>],
        g: u32,
        p: Reg<U32>,
    ) -> (Reg<U32>, Reg<U32>) {
        if let Some(cache) = &self.cache {
            let cache = cache.borrow();
            let (kv, sv) = &cache[g as usize];
            return (b.get(kv), b.get(sv));
        }
        // the position is the index entry's (it starts at `lo`)
        let (i, hi) = (p, ctx[2 * g as usize + 1]);
        let inside = b.setp(Cmp::Lt, i, hi);
        let key = b.var::<U32>(NONE);
        let slot = b.var::<U32>(NONE);
        b.if_(inside, |b| {
            let sp = b.offset(self.slots, i);
            let s = b.ld_global(sp, 0);
            let r = match self.rcp {
                Some(m) => div_by_k(b, s, self.k, m),
                None => b.div(s, self.k),
            };
            b.set(&key, r);
            b.set(&slot, s);
        });
        (b.get(&key), b.get(&slot))
    }
}

/// One step of the merge: the smallest head key and, per list, the slot
/// it takes (`NONE` when it waits); advances the cursors.
pub(super) fn advance(
    b: &mut KernelBuilder,
    lists: &dyn Lists,
    ctx: &[Reg<U32>],
    cursors: &[Var<U32>],
) -> (Reg<U32>, Vec<Reg<U32>>) {
    let heads: Vec<(Reg<U32>, Reg<U32>)> = cursors
        .iter()
        .enumerate()
        .map(|(g, c)| {
            let p = b.get(c);
            lists.head(b, ctx, g as u32, p)
        })
        .collect();
    let mut m = heads[0].0;
    for h in &heads[1..] {
        m = b.min(m, h.0);
    }
    let mut taken = Vec::new();
    for (g, ((key, slot), c)) in heads.iter().zip(cursors).enumerate() {
        let take = b.setp(Cmp::Eq, *key, m);
        let live = b.setp(Cmp::Ne, *key, NONE);
        let take = b.pand(take, live);
        taken.push(b.selp(take, *slot, NONE));
        let one = b.selp(take, 1u32, 0u32);
        let p = b.get(c);
        let p = b.add(p, one);
        b.set(c, p);
        lists.took(b, ctx, g as u32, take, p);
    }
    (m, taken)
}
