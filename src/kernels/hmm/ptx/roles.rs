//! The warps' roles in a step of the cluster recursions (issue 33): which
//! warps hold columns (the *busy* warps: `tid < min(ncol, THREADS)`), the
//! CTA barrier the two roles meet at, and the loops over a thread's
//! columns.
//!
//! Where a CTA's columns fit one warp (`cap / n ≤ 32`: the batch-64
//! kernels at S 256, `hmm_*_cluster8_cap256`), the roles are known when the
//! kernel is generated: warp 0 is the only busy warp (`ncol = S16/n ≥ 2`;
//! the launch takes a cluster from `S16 = 64`), the idle test is `warp ≠ 0`
//! and no CTA reduction across warps is ever taken; the step tests none of
//! it ([`Ex::one_warp`]). Otherwise the tests read `ncol` each step (held
//! across the step loop they cost registers: a spill at `n = 4`, cap 256).
//! Where a thread owns at most one column (`cap / n ≤ THREADS`), a loop
//! over its columns is a test ([`own_col`]).

use super::cluster::Ex;
use crate::dsl::Cmp;
use crate::dsl::KernelBuilder;
use crate::dsl::types::{Pred, Reg, U32};

/// Whether the CTA's columns of a cluster kernel (`cap`, `n`) fit one
/// warp, so warp 0 is the only one that holds columns ([`Ex::one_warp`]).
pub(super) fn one_warp(cap: u32, n: u32) -> bool {
    cap / n <= 32
}

/// The CTA barrier of a step: `barrier.sync` where the warps take
/// different paths to it ([`Ex::split`]), else `bar.sync`.
pub(super) fn cta_barrier(b: &mut KernelBuilder, ex: &Ex) {
    if ex.split {
        b.barrier_sync_unaligned();
    } else {
        b.bar_sync();
    }
}

/// Whether this thread's warp holds no column (`warp ≥`
/// [`active_warps`]; `warp ≠ 0` where [`Ex::one_warp`]), computed where
/// it is used: kept across the step loop it cost registers (a spill at
/// `n = 4`, cap 256).
pub(super) fn idle_warp(b: &mut KernelBuilder, ex: &Ex) -> Reg<Pred> {
    let tid = b.tid_x();
    let warp = b.shr(tid, 5u32);
    if ex.one_warp {
        // As a test of the warp index: ptxas then knows it warp-uniform
        // (as `tid ≥ 32` it added a divergent path to every later
        // barrier, shuffle and vote).
        return b.setp(Cmp::Ne, warp, 0u32);
    }
    let nact = active_warps(b, ex);
    b.setp(Cmp::Ge, warp, nact)
}

/// Whether more than one warp holds columns (so
/// [`super::cluster::cluster_pmax`] reduces across warps through a CTA
/// barrier); `None` where that is never so ([`Ex::one_warp`]).
pub(super) fn multi_warp(b: &mut KernelBuilder, ex: &Ex) -> Option<Reg<Pred>> {
    if ex.one_warp {
        return None;
    }
    let nact = active_warps(b, ex);
    Some(b.setp(Cmp::Gt, nact, 1u32))
}

/// The warps that hold columns (those of
/// [`super::cluster::own_columns`]: `tid < min(ncol, ntid)`), as a count:
/// warps `0 .. nact` of the CTA.
pub(super) fn active_warps(b: &mut KernelBuilder, ex: &Ex) -> Reg<U32> {
    let nt = b.ntid_x();
    let held = b.min(ex.ncol, nt);
    let held31 = b.add(held, 31u32);
    b.shr(held31, 5u32)
}

/// `f(b, w)` for `w = tid, tid + THREADS, …` below `ncol` (one thread per
/// column, or per (chain, quad) of [`super::cluster::lin_slice`]): a test
/// where no thread has a second (`ex.per == 1`, `ncol ≤ THREADS`), else
/// the loop.
pub(super) fn own_col(
    b: &mut KernelBuilder,
    ex: &Ex,
    f: impl FnOnce(&mut KernelBuilder, Reg<U32>),
) {
    let tid = b.tid_x();
    if ex.per == 1 {
        let held = b.setp(Cmp::Lt, tid, ex.ncol);
        b.if_(held, |b| f(b, tid));
    } else {
        let nt = b.ntid_x();
        b.for_range(tid, ex.ncol, nt, f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_warp_where_a_ctas_columns_fit_a_warp() {
        assert!(one_warp(256, 8));
        assert!(one_warp(128, 4));
        assert!(!one_warp(256, 4));
        assert!(!one_warp(512, 8));
        assert!(!one_warp(1024, 2));
    }
}
