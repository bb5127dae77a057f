//! The per-row top-s state of the [`ROUTE`](super::ROUTE) and
//! [`MERGE`](super::MERGE) kernels: the ordering key, list entries and the
//! warp fold ([`Folder`]). Separate from the score tile because it is the
//! other half of the route, shared with the merge kernel.

use crate::dsl::types::{Pred, Reg, U32, U64};
use crate::dsl::{Cmp, GlobalPtr, KernelBuilder, SharedArray, SharedPtr, ShflMode, Special};

const FULL: u32 = 0xffff_ffff;

/// Emit the ordering key of `(score bits, atom)`: `(k << 32) | !atom` with
/// `k = 0` for NaN, else `(bits & 0x7FFF_FFFF) + 1`. Larger is better.
pub(crate) fn emit_key(b: &mut KernelBuilder, bits: Reg<U32>, atom: Reg<U32>) -> Reg<U64> {
    let (hi, lo) = emit_key_parts(b, bits, atom);
    join_key(b, hi, lo)
}

/// The two halves of [`emit_key`]: `(k, !atom)`.
fn emit_key_parts(b: &mut KernelBuilder, bits: Reg<U32>, atom: Reg<U32>) -> (Reg<U32>, Reg<U32>) {
    let mag = b.and(bits, 0x7fff_ffffu32);
    let is_num = b.setp(Cmp::Le, mag, 0x7f80_0000u32);
    let k1 = b.add(mag, 1u32);
    let k = b.selp(is_num, k1, 0u32);
    (k, b.not(atom))
}

/// `(hi << 32) | lo`.
fn join_key(b: &mut KernelBuilder, hi: Reg<U32>, lo: Reg<U32>) -> Reg<U64> {
    let hi = b.u32_to_u64(hi);
    let hi = b.shl(hi, 32u32);
    let lo = b.u32_to_u64(lo);
    b.or(hi, lo)
}

/// Entry `j` of a top-s list: `(atom, score bits)`.
pub(super) fn load_entry(
    b: &mut KernelBuilder,
    list: GlobalPtr<U32>,
    j: Reg<U32>,
) -> (Reg<U32>, Reg<U32>) {
    let j2 = b.shl(j, 1u32);
    let q = b.offset(list, j2);
    (b.ld_global(q, 0), b.ld_global(q, 1))
}

fn store_entry(
    b: &mut KernelBuilder,
    list: GlobalPtr<U32>,
    j: Reg<U32>,
    atom: Reg<U32>,
    bits: Reg<U32>,
) {
    let j2 = b.shl(j, 1u32);
    let q = b.offset(list, j2);
    b.st_global(q, 0, atom);
    b.st_global(q, 1, bits);
}

/// Emits the load of candidate `n` of a fold step: `(score bits, atom)`.
type CandFn<'a> = &'a dyn Fn(&mut KernelBuilder, Reg<U32>) -> (Reg<U32>, Reg<U32>);

/// A warp's fold resources.
pub(super) struct Folder {
    lane: Reg<U32>,
    lt_mask: Reg<U32>,
    /// This warp's accepted list: atoms at `acc_a[i]`, score bits at `acc_s[i]`.
    acc_a: SharedPtr<U32>,
    acc_s: SharedPtr<U32>,
    s: Reg<U32>,
    /// Most candidates one fold step gets (the accepted list's capacity).
    cap: u32,
}

impl Folder {
    pub(super) fn new(
        b: &mut KernelBuilder,
        list: &SharedArray<U32>,
        warp: Reg<U32>,
        cap: u32,
        s: Reg<U32>,
    ) -> Self {
        let lane = b.special(Special::LaneId);
        let one = b.shl(1u32, lane);
        let lt_mask = b.sub(one, 1u32);
        let base = b.mul_lo(warp, 2 * cap);
        let acc_a = b.shared_elem(list, base);
        let acc_s = b.shared_offset(acc_a, cap);
        Self {
            lane,
            lt_mask,
            acc_a,
            acc_s,
            s,
            cap,
        }
    }

    fn acc_entry(&self, b: &mut KernelBuilder, i: Reg<U32>) -> (Reg<U32>, Reg<U32>) {
        let pa = b.shared_offset(self.acc_a, i);
        let ps = b.shared_offset(self.acc_s, i);
        (b.ld_shared(pa, 0), b.ld_shared(ps, 0))
    }

    /// `#(accepted keys > key)` over the first `na` accepted entries.
    /// Warp-uniform `na`; every lane calls it. Lane `l` reads entry `c0 +
    /// l` of each 32-entry chunk from shared memory once and the chunk is
    /// broadcast with `shfl` (no two lanes read the same shared word).
    fn count_better(&self, b: &mut KernelBuilder, na: Reg<U32>, key: Reg<U64>) -> Reg<U32> {
        let cnt = b.mov(0u32);
        b.for_range(0u32, na, 32u32, |b, c0| {
            let e = b.add(c0, self.lane);
            let valid = b.setp(Cmp::Lt, e, na);
            let hi = b.mov(0u32);
            let lo = b.mov(0u32);
            b.if_(valid, |b| {
                let (a, sc) = self.acc_entry(b, e);
                let (h, l) = emit_key_parts(b, sc, a);
                b.assign(hi, h);
                b.assign(lo, l);
            });
            let left = b.sub(na, c0);
            let here = b.min(left, 32u32);
            b.for_range(0u32, here, 1u32, |b, jj| {
                let hj = b.shfl(ShflMode::Idx, hi, jj, 0x1f, FULL);
                let lj = b.shfl(ShflMode::Idx, lo, jj, 0x1f, FULL);
                let kj = join_key(b, hj, lj);
                let gt = b.setp(Cmp::Gt, kj, key);
                let inc = b.selp(gt, 1u32, 0u32);
                let next = b.add(cnt, inc);
                b.assign(cnt, next);
            });
        });
        cnt
    }

    /// The `s`-th best key among the `nv` candidates when `s ≤ 32` and
    /// `nv > s`, else 0 (every real key is at least 1: `!atom ≥ 1` because
    /// `atom < K ≤ u32::MAX`). A candidate below it has `s` better
    /// candidates, so it cannot reach the row's top `s`; filtering on it
    /// keeps a fold step to at most `s` accepted candidates even while the
    /// state is not full (the first tile of a row, or of a K-split), where
    /// ranking all `nv` would cost `O(nv²/32)` per lane. Warp-uniform `nv`.
    ///
    /// Each lane holds the keys of candidates `lane + 32·i`; `s` rounds of
    /// a warp-wide maximum (butterfly `shfl` of both halves) each retire
    /// the current best (keys are unique, so exactly one lane owns it).
    fn candidate_threshold(
        &self,
        b: &mut KernelBuilder,
        nv: Reg<U32>,
        cand: CandFn<'_>,
    ) -> Reg<U64> {
        let s = self.s;
        let result = b.mov(0u64);
        let small_s = b.setp(Cmp::Le, s, 32u32);
        let more = b.setp(Cmp::Gt, nv, s);
        let go = b.pand(small_s, more);
        b.if_(go, |b| {
            b.comment("fold: s-th best candidate key (warp top-s)");
            let keys: Vec<Reg<U64>> = (0..self.cap.div_ceil(32))
                .map(|i| {
                    let n = b.add(self.lane, 32 * i);
                    let valid = b.setp(Cmp::Lt, n, nv);
                    let key = b.mov(0u64);
                    b.if_(valid, |b| {
                        let (sc, a) = cand(b, n);
                        let k = emit_key(b, sc, a);
                        b.assign(key, k);
                    });
                    key
                })
                .collect();
            b.for_range(0u32, s, 1u32, |b, _round| {
                let best = b.mov(keys[0]);
                for k in &keys[1..] {
                    let gt = b.setp(Cmp::Gt, *k, best);
                    let nb = b.selp(gt, *k, best);
                    b.assign(best, nb);
                }
                for off in [16u32, 8, 4, 2, 1] {
                    let lo = b.u64_to_u32(best);
                    let hi64 = b.shr(best, 32u32);
                    let hi = b.u64_to_u32(hi64);
                    let olo = b.shfl(ShflMode::Bfly, lo, off, 0x1f, FULL);
                    let ohi = b.shfl(ShflMode::Bfly, hi, off, 0x1f, FULL);
                    let other = join_key(b, ohi, olo);
                    let gt = b.setp(Cmp::Gt, other, best);
                    let nb = b.selp(gt, other, best);
                    b.assign(best, nb);
                }
                for k in &keys {
                    let mine = b.setp(Cmp::Eq, *k, best);
                    let nk = b.selp(mine, 0u64, *k);
                    b.assign(*k, nk);
                }
                b.assign(result, best);
            });
        });
        result
    }

    /// Fold `nv` candidates (`cand(n)` = `(score bits, atom)` for `n < nv`)
    /// into the `m`-entry list `cur`, writing the merged list to `nxt`.
    /// Warp-uniform `m`, `nv`; every lane calls it. Returns whether `nxt`
    /// was written (otherwise `cur` is still the state).
    pub(super) fn fold(
        &self,
        b: &mut KernelBuilder,
        cur: GlobalPtr<U32>,
        nxt: GlobalPtr<U32>,
        m: Reg<U32>,
        nv: Reg<U32>,
        cand: CandFn<'_>,
    ) -> Reg<Pred> {
        let s = self.s;
        let full = b.setp(Cmp::Ge, m, s);
        let not_full = b.pnot(full);
        let threshold = b.mov(0u64);
        b.if_(full, |b| {
            let last = b.sub(s, 1u32);
            let (a, sc) = load_entry(b, cur, last);
            let k = emit_key(b, sc, a);
            b.assign(threshold, k);
        });
        let cand_threshold = self.candidate_threshold(b, nv, cand);
        b.comment("fold: compact the candidates that beat the s-th key");
        let na = b.mov(0u32);
        b.for_range(0u32, nv, 32u32, |b, n0| {
            let n = b.add(n0, self.lane);
            let valid = b.setp(Cmp::Lt, n, nv);
            let bits = b.mov(0u32);
            let atom = b.mov(0u32);
            b.if_(valid, |b| {
                let (sc, a) = cand(b, n);
                b.assign(bits, sc);
                b.assign(atom, a);
            });
            let key = emit_key(b, bits, atom);
            let beats = b.setp(Cmp::Gt, key, threshold);
            let wanted = b.por(not_full, beats);
            let top_cand = b.setp(Cmp::Ge, key, cand_threshold);
            let wanted = b.pand(wanted, top_cand);
            let ok = b.pand(valid, wanted);
            let mask = b.vote_ballot(ok, FULL);
            b.if_(ok, |b| {
                let below = b.and(mask, self.lt_mask);
                let before = b.popc(below);
                let pos = b.add(na, before);
                let pa = b.shared_offset(self.acc_a, pos);
                b.st_shared(pa, 0, atom);
                let ps = b.shared_offset(self.acc_s, pos);
                b.st_shared(ps, 0, bits);
            });
            let cnt = b.popc(mask);
            let next = b.add(na, cnt);
            b.assign(na, next);
        });
        b.bar_warp_sync(FULL);
        let changed = b.setp(Cmp::Ne, na, 0u32);
        b.if_(changed, |b| {
            b.comment("fold: place the accepted candidates");
            // Lane `l` handles accepted entries `l + 32·c`; it keeps each
            // one's rank among the accepted and its insertion point in the
            // state (`#(state keys better)`) for the state move below.
            let chunks = self.cap.div_ceil(32);
            let mut held = Vec::new();
            for c in 0..chunks {
                let rank = b.mov(0u32);
                let ins = b.mov(0u32);
                let i = b.add(self.lane, 32 * c);
                let in_range = b.setp(Cmp::Lt, i, na);
                let live = b.setp(Cmp::Lt, 32 * c, na);
                b.if_(live, |b| {
                    let ai = b.mov(0u32);
                    let si = b.mov(0u32);
                    b.if_(in_range, |b| {
                        let (a, sc) = self.acc_entry(b, i);
                        b.assign(ai, a);
                        b.assign(si, sc);
                    });
                    let ki = emit_key(b, si, ai);
                    let better = self.count_better(b, na, ki);
                    b.assign(rank, better);
                    b.if_(in_range, |b| {
                        // binary search: #(state entries with a larger key)
                        let lo = b.mov(0u32);
                        let hi = b.mov(m);
                        b.while_(
                            |b| b.setp(Cmp::Lt, lo, hi),
                            |b| {
                                let sum = b.add(lo, hi);
                                let mid = b.shr(sum, 1u32);
                                let (am, sm) = load_entry(b, cur, mid);
                                let km = emit_key(b, sm, am);
                                let gt = b.setp(Cmp::Gt, km, ki);
                                let mid1 = b.add(mid, 1u32);
                                let nlo = b.selp(gt, mid1, lo);
                                let nhi = b.selp(gt, hi, mid);
                                b.assign(lo, nlo);
                                b.assign(hi, nhi);
                            },
                        );
                        b.assign(ins, lo);
                        let pos = b.add(better, lo);
                        let keep = b.setp(Cmp::Lt, pos, s);
                        b.if_(keep, |b| store_entry(b, nxt, pos, ai, si));
                    });
                });
                held.push((rank, ins, in_range));
            }
            // The insertion points in rank order, `ins_by_rank[r]`, are
            // non-decreasing (a better candidate inserts no later). Scatter
            // them through the (now unused) accepted list and gather them
            // back with lane `l` holding ranks `l + 32·c`.
            b.bar_warp_sync(FULL);
            for (rank, ins, in_range) in &held {
                b.if_(*in_range, |b| {
                    let q = b.shared_offset(self.acc_a, *rank);
                    b.st_shared(q, 0, *ins);
                });
            }
            b.bar_warp_sync(FULL);
            let by_rank: Vec<Reg<U32>> = (0u32..)
                .zip(&held)
                .map(|(c, (_, _, in_range))| {
                    let v = b.mov(0u32);
                    b.if_(*in_range, |b| {
                        let r = b.add(self.lane, 32 * c);
                        let q = b.shared_offset(self.acc_a, r);
                        let x = b.ld_shared(q, 0);
                        b.assign(v, x);
                    });
                    v
                })
                .collect();
            b.comment("fold: move the surviving state entries");
            // Entry `j` moves to `j + #(ranks r with ins_by_rank[r] ≤ j)`
            // (an accepted candidate is better than entry `j` exactly when
            // it inserts at or before `j`): an upper-bound search over the
            // warp-held array, a fixed number of uniform steps with `shfl`.
            let steps = 32 - (self.cap).leading_zeros();
            b.for_range(0u32, m, 32u32, |b, j0| {
                let j = b.add(j0, self.lane);
                let in_range = b.setp(Cmp::Lt, j, m);
                let lo = b.mov(0u32);
                let hi = b.mov(na);
                for _ in 0..steps {
                    let open = b.setp(Cmp::Lt, lo, hi);
                    let sum = b.add(lo, hi);
                    let mid = b.shr(sum, 1u32);
                    let src = b.and(mid, 31u32);
                    let which = b.shr(mid, 5u32);
                    let val = b.mov(0u32);
                    for (c, reg) in by_rank.iter().enumerate() {
                        let got = b.shfl(ShflMode::Idx, *reg, src, 0x1f, FULL);
                        let this = b.setp(Cmp::Eq, which, c as u32);
                        let pick = b.selp(this, got, val);
                        b.assign(val, pick);
                    }
                    let le = b.setp(Cmp::Le, val, j);
                    let up = b.pand(open, le);
                    let not_le = b.pnot(le);
                    let down = b.pand(open, not_le);
                    let mid1 = b.add(mid, 1u32);
                    let nlo = b.selp(up, mid1, lo);
                    let nhi = b.selp(down, mid, hi);
                    b.assign(lo, nlo);
                    b.assign(hi, nhi);
                }
                b.if_(in_range, |b| {
                    let pos = b.add(j, lo);
                    let keep = b.setp(Cmp::Lt, pos, s);
                    b.if_(keep, |b| {
                        let (aj, sj) = load_entry(b, cur, j);
                        store_entry(b, nxt, pos, aj, sj);
                    });
                });
            });
            b.bar_warp_sync(FULL);
        });
        changed
    }

    /// Copy the first `m` entries of `from` to `to` (lanes strided), then
    /// synchronise the warp.
    pub(super) fn copy(
        &self,
        b: &mut KernelBuilder,
        from: GlobalPtr<U32>,
        to: GlobalPtr<U32>,
        m: Reg<U32>,
    ) {
        b.for_range(0u32, m, 32u32, |b, j0| {
            let j = b.add(j0, self.lane);
            let in_range = b.setp(Cmp::Lt, j, m);
            b.if_(in_range, |b| {
                let (a, sc) = load_entry(b, from, j);
                store_entry(b, to, j, a, sc);
            });
        });
        b.bar_warp_sync(FULL);
    }
}

/// `base + (parity ? half : 0)` u32 elements.
pub(super) fn half_ptr(
    b: &mut KernelBuilder,
    base: GlobalPtr<U32>,
    half: Reg<U64>,
    parity: Reg<Pred>,
) -> GlobalPtr<U32> {
    let off = b.selp(parity, half, 0u64);
    b.offset64(base, off)
}
