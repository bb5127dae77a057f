//! The carry tree of [`super`] (see the contract): the split path's
//! carry kernels (a CTA per row, a thread per run) and the pieces the row
//! path's kernels use to compute the run prefixes as they walk a row.

use super::super::host::{RUN, RUNS, SEG};
use super::tile::*;
use super::{ChainArgs, chain_builder};
use crate::dsl::types::{F32, Pred, Reg, U32};
use crate::dsl::{Cmp, GlobalPtr, KernelBuilder, PtxModule, SharedArray, SharedPtr};
use crate::error::Result;
use crate::target::Sm;

/// The run length `L = max(RUN, ⌈n / RUNS⌉)` of a row of `n` tiles.
pub(super) fn run_len(b: &mut KernelBuilder, n: Reg<U32>) -> Reg<U32> {
    let n1 = b.add(n, RUNS as u32 - 1);
    let q = b.div(n1, RUNS as u32);
    let short = b.setp(Cmp::Lt, q, RUN as u32);
    b.selp(short, RUN as u32, q)
}

/// The carry tree's run prefixes: thread `j` holding run `j`'s aggregate
/// `g` gets `P_j` (garbage for `j = 0`, which has none). Ends with the
/// tile tree's barrier: `wt` and `qs` may be reused after another one.
pub(super) fn run_prefix<const N: usize>(
    b: &mut KernelBuilder,
    c: Cta,
    g: Val<N>,
    wt: &SharedArray<F32>,
    qs: &SharedArray<F32>,
    op: Op<'_, N>,
) -> Val<N> {
    let inc = kogge_stone(b, c, g, false, op);
    warp_chain(b, c, inc, false, wt, Some(qs), op, |_, _| {});
    exclusive(b, c, inc, false, qs, op)
}

/// Word of a segment's padding in a staged tile (the copies never touch
/// words 32..36 of a segment) where the row path keeps run `σ`'s aggregate
/// of the carry tree (a value of up to two floats from here).
pub(super) const RUN_AGG: i32 = SEG as i32;
/// The backward's reverse runs' aggregates: the next two words.
pub(super) const RUN_AGG_REV: i32 = RUN_AGG + 2;

/// Run `j`'s aggregate slot in `buf` (word `word` of segment `j`).
pub(super) fn run_agg_slot(
    b: &mut KernelBuilder,
    buf: &SharedArray<F32>,
    j: Reg<U32>,
    word: i32,
) -> SharedPtr<F32> {
    let w = b.mul_lo(j, STRIDE);
    let w = b.add(w, word as u32);
    b.shared_elem(buf, w)
}

/// A tile's place in the carry tree's runs (step `k` of a row of runs of
/// `l` tiles): its run `j`, whether it is a run's first (`first`) and
/// whether it starts a run after the first (`start`: its carry is `P_j`).
pub(super) struct RunPos {
    pub(super) j: Reg<U32>,
    first: Reg<Pred>,
    pub(super) start: Reg<Pred>,
}

impl RunPos {
    pub(super) fn new(b: &mut KernelBuilder, k: Reg<U32>, l: Reg<U32>) -> RunPos {
        let j = b.div(k, l);
        let pos = b.rem(k, l);
        let first = b.setp(Cmp::Eq, pos, 0u32);
        let later = b.setp(Cmp::Ne, k, 0u32);
        let start = b.pand(first, later);
        RunPos { j, first, start }
    }

    /// At a run's first tile (all threads): thread `σ`'s run prefix over
    /// the finished runs' aggregates (`load(b, i)` reads value `i` of
    /// thread `σ`'s own, only for `σ < j`; the others' are not read by the
    /// prefix that is used, run `j`'s).
    pub(super) fn prefix<const N: usize>(
        &self,
        b: &mut KernelBuilder,
        c: Cta,
        load: impl Fn(&mut KernelBuilder, usize) -> Reg<F32>,
        wt: &SharedArray<F32>,
        qs: &SharedArray<F32>,
        op: Op<'_, N>,
    ) -> Val<N> {
        let g: Val<N> = std::array::from_fn(|_| b.mov(0f32));
        let before = b.setp(Cmp::Lt, c.tid, self.j);
        b.if_(before, |b| {
            for (i, r) in g.iter().enumerate() {
                let v = load(b, i);
                b.assign(*r, v);
            }
        });
        run_prefix(b, c, g, wt, qs, op)
    }

    /// `G_j ← total` at a run's first tile, else `G_j ← op(G_j, total)`
    /// (slots `gp`, one per value).
    pub(super) fn accumulate<const N: usize, const M: usize>(
        &self,
        b: &mut KernelBuilder,
        gp: [SharedPtr<F32>; M],
        total: Val<N>,
        op: Op<'_, N>,
    ) {
        let g = mov(b, total);
        let more = b.pnot(self.first);
        b.if_(more, |b| {
            let old: Val<N> = std::array::from_fn(|i| {
                if M == N {
                    b.ld_shared(gp[i], 0)
                } else {
                    b.ld_shared(gp[0], i as i32)
                }
            });
            let ng = op(b, old, total);
            assign(b, g, ng);
        });
        for (i, r) in g.iter().enumerate() {
            if M == N {
                b.st_shared(gp[i], 0, *r);
            } else {
                b.st_shared(gp[0], i as i32, *r);
            }
        }
    }
}

/// The carry tree of both directions, a CTA of [`CHAIN_THREADS`] = `RUNS`
/// threads per row, thread `j` on run `j` (tiles `jL..min(jL + L, n)`;
/// in the reverse order `ρ = n − 1 − τ` when `rev`): the run's aggregate
/// from `tot` (runs wholly before the last tile only: the others' are never
/// read), the run prefixes [`run_prefix`], then the run's chain of carries
/// into `carry`. Forward (`C_τ` for `τ ≥ 1`, values of `N` floats): run 0
/// starts `C_1 = T_0`, run `j ≥ 1` `C_{jL} = P_j`, then
/// `C_{τ+1} = op(C_τ, T_τ)`. Reverse (affine maps of tiles `τ ≥ 1` in
/// `tot`, `Zc_τ` for every tile): `Zc_{n−1} = +0`, run `j ≥ 1` starts from
/// `fma(b_P, +0, a_P)`, then `Zc_{τ−1} = fma(b_τ, Zc_τ, a_τ)`.
pub(super) fn generate_carry<const N: usize>(
    name: &str,
    sm: Sm,
    op: Op<'_, N>,
    rev: bool,
) -> Result<PtxModule> {
    let mut b = chain_builder(name, sm);
    let p = b.params::<ChainArgs>();
    let al = 4 * N as u32;
    let wt = b.shared_array::<F32>("wt", W * N as u32, al);
    let qs = b.shared_array::<F32>("qs", (W + 1) * N as u32, al);
    let flags = b.mov(0u32);
    let c = cta(&mut b, flags);
    let l = run_len(&mut b, p.ntiles);
    let r0 = b.mul_lo(c.tid, l);
    let r0l = b.add(r0, l);
    let short = b.setp(Cmp::Lt, r0l, p.ntiles);
    let r1 = b.selp(short, r0l, p.ntiles);
    let last = b.sub(p.ntiles, 1u32);
    let first_run = b.setp(Cmp::Eq, c.tid, 0u32);
    let ctaid = b.ctaid_x();
    let nct = b.nctaid_x();
    b.for_range(ctaid, p.rows, nct, |b, row| {
        let base = b.mul_lo(row, p.ntiles);
        // Step k of the run's order: its value's index in `tot`.
        let at = |b: &mut KernelBuilder, k: Reg<U32>| {
            let t = if rev { b.sub(last, k) } else { k };
            b.add(base, t)
        };
        let g: Val<N> = std::array::from_fn(|_| b.mov(0f32));
        b.if_(short, |b| {
            let i = at(b, r0);
            let v = ld_carry::<N>(b, p.tot, i);
            assign(b, g, v);
            let k1 = b.add(r0, 1u32);
            b.for_range(k1, r0l, 1u32, |b, k| {
                let i = at(b, k);
                let v = ld_carry::<N>(b, p.tot, i);
                let ng = op(b, g, v);
                assign(b, g, ng);
            });
        });
        let e = run_prefix(b, c, g, &wt, &qs, op);
        let inrun = b.setp(Cmp::Lt, r0, p.ntiles);
        b.if_(inrun, |b| {
            if rev {
                let zero = b.mov(0f32);
                let ez = b.ffma(RN, e[1], zero, e[0]);
                let z = b.selp(first_run, 0f32, ez);
                let i = at(b, r0);
                let zp = b.offset(p.carry, i);
                b.st_global(zp, 0, z);
                let end = b.sub(r1, 1u32);
                b.for_range(r0, end, 1u32, |b, k| {
                    let i = at(b, k);
                    let [a, m] = ld_val_global::<2>(b, p.tot, i);
                    let nz = b.ffma(RN, m, z, a);
                    b.assign(z, nz);
                    let j = b.sub(i, 1u32);
                    let zp = b.offset(p.carry, j);
                    b.st_global(zp, 0, z);
                });
            } else {
                // Run 0 has no prefix: it starts at C_1 = T_0.
                let t0 = ld_carry::<N>(b, p.tot, base);
                let carry = sel(b, first_run, t0, e);
                let carry = mov(b, carry);
                let one = b.mov(1u32);
                let from = b.selp(first_run, one, r0);
                let i = b.add(base, from);
                st_val_global(b, p.carry, i, carry);
                let end = b.sub(r1, 1u32);
                b.for_range(from, end, 1u32, |b, k| {
                    let i = b.add(base, k);
                    let v = ld_carry::<N>(b, p.tot, i);
                    let nc = op(b, carry, v);
                    assign(b, carry, nc);
                    let j = b.add(i, 1u32);
                    st_val_global(b, p.carry, j, carry);
                });
            }
        });
        // The next row's tree reuses wt and qs.
        b.bar_sync();
    });
    b.finish()
}

/// Value `k` of `N` floats at `p` (`p + k` for one float, no multiply).
fn carry_ptr<const N: usize>(
    b: &mut KernelBuilder,
    p: GlobalPtr<F32>,
    k: Reg<U32>,
) -> GlobalPtr<F32> {
    if N == 1 {
        b.offset(p, k)
    } else {
        let i = b.mul_lo(k, N as u32);
        b.offset(p, i)
    }
}

pub(super) fn ld_carry<const N: usize>(
    b: &mut KernelBuilder,
    p: GlobalPtr<F32>,
    k: Reg<U32>,
) -> Val<N> {
    let q = carry_ptr::<N>(b, p, k);
    let v: Vec<Reg<F32>> = (0..N as i32).map(|j| b.ld_global(q, j)).collect();
    std::array::from_fn(|i| v[i])
}
