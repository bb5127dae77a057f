//! A cluster kernel thread's columns held in registers across the step
//! loop (issue 33): the cluster kernels require `THREADS` threads a CTA
//! (`.reqntid`), so a thread's columns of the CTA's `ncol = S16/n` are
//! fixed, `jl = tid + c·THREADS` for `c < ⌈(cap/n)/THREADS⌉` (one at
//! every cap but 1024 over two CTAs, two there; the shapes
//! [`super::cluster_for`] picks keep `S16/n` at 116 at most, so the second
//! is never live today), a compile-time bound. Their
//! loop-invariant prep values, the emissions prefetched a step ahead and
//! the pairs a step stores and would read back live in arrays of
//! registers indexed by `c`; no thread owns more columns than the bound,
//! so no read-back is kept.

use super::cluster::{Ex, resident_ctas};
use super::pair::{self as pp, DP};
use super::{PREP_COLMAX, PREP_DCOL_H, PREP_DCOL_L, THREADS, ld_prep};
use crate::dsl::types::{F32, Reg, U32};
use crate::dsl::{Cmp, GlobalPtr, KernelBuilder};
use crate::target::Sm;

/// The builder of a cluster kernel (`cap`, `n`): exactly [`THREADS`]
/// threads a CTA (`.reqntid`, which [`fixed_columns`] relies on), the
/// resident CTAs of [`resident_ctas`] and `.reqnctapercluster n`.
pub(super) fn cluster_builder(name: &str, sm: Sm, cap: u32, n: u32) -> KernelBuilder {
    let mut b = KernelBuilder::new(name, sm);
    b.reqntid(THREADS, 1, 1);
    b.min_ctas_per_sm(resident_ctas(sm, cap, n));
    b.cluster_dims(n, 1, 1);
    b
}

/// The most columns a thread of a cluster kernel (`cap`, `n`) owns.
pub(super) fn per_thread(cap: u32, n: u32) -> usize {
    (cap / n).div_ceil(THREADS) as usize
}

/// `f(b, c, jl, j)` for this thread's `c`-th column `jl = tid + c·THREADS`
/// of the CTA (`j = c0 + jl`), for those below `ncol` and, with `s`,
/// below `S`: the columns of [`super::cluster::own_columns`] (with
/// `s`) or of the backward's rows (without), in the same order.
pub(super) fn fixed_columns(
    b: &mut KernelBuilder,
    ex: &Ex,
    s: Option<Reg<U32>>,
    mut f: impl FnMut(&mut KernelBuilder, usize, Reg<U32>, Reg<U32>),
) {
    let tid = b.tid_x();
    for c in 0..ex.per {
        let jl = if c == 0 {
            tid
        } else {
            b.add(tid, c as u32 * THREADS)
        };
        let held = b.setp(Cmp::Lt, jl, ex.ncol);
        b.if_(held, |b| {
            let j = b.add(ex.c0, jl);
            match s {
                Some(s) => {
                    let inside = b.setp(Cmp::Lt, j, s);
                    b.if_(inside, |b| f(b, c, jl, j));
                }
                None => f(b, c, jl, j),
            }
        });
    }
}

/// `per` fresh registers (zero).
pub(super) fn regs(b: &mut KernelBuilder, per: usize) -> Vec<Reg<F32>> {
    (0..per).map(|_| b.mov(0f32)).collect()
}

/// `per` fresh pairs (zero).
pub(super) fn pairs(b: &mut KernelBuilder, per: usize) -> Vec<DP> {
    (0..per).map(|_| pp::constant(b, 0.0, 0.0)).collect()
}

/// `prep[section·sp + j]` of this thread's columns below `S` into fresh
/// registers (loaded once, before the step loop).
pub(super) fn prep_cols(
    b: &mut KernelBuilder,
    ex: &Ex,
    prep: GlobalPtr<F32>,
    (s, sp): (Reg<U32>, Reg<U32>),
    section: u32,
) -> Vec<Reg<F32>> {
    let v = regs(b, ex.per);
    fixed_columns(b, ex, Some(s), |b, c, _, j| {
        let x = ld_prep(b, prep, section, sp, j);
        b.assign(v[c], x);
    });
    v
}

/// The forward's per-column prep: `colmax` and the `dcol` pairs.
pub(super) fn forward_prep(
    b: &mut KernelBuilder,
    ex: &Ex,
    prep: GlobalPtr<F32>,
    s_sp: (Reg<U32>, Reg<U32>),
) -> (Vec<Reg<F32>>, Vec<DP>) {
    let colmax = prep_cols(b, ex, prep, s_sp, PREP_COLMAX);
    let h = prep_cols(b, ex, prep, s_sp, PREP_DCOL_H);
    let l = prep_cols(b, ex, prep, s_sp, PREP_DCOL_L);
    let dcol = h.into_iter().zip(l).map(|(h, l)| DP { h, l }).collect();
    (colmax, dcol)
}

/// The emissions `seq_b[row + j]` of this thread's columns below `S` into
/// `e`, when `when` holds (the prefetch of a step ahead: `row` is that
/// step's, in bounds where `when` holds).
pub(super) fn prefetch_emissions(
    b: &mut KernelBuilder,
    ex: &Ex,
    (seq_b, row, s): (GlobalPtr<F32>, Reg<U32>, Reg<U32>),
    when: Reg<crate::dsl::types::Pred>,
    e: &[Reg<F32>],
) {
    b.if_(when, |b| {
        fixed_columns(b, ex, Some(s), |b, c, _, j| {
            let k = b.add(row, j);
            let ep = b.offset(seq_b, k);
            let x = b.ld_global(ep, 0);
            b.assign(e[c], x);
        });
    });
}
