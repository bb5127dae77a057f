//! The forward's work for one state of a step (and its input maxima),
//! shared by the one-CTA (`hmm_forward_cap<c>`) and the cluster
//! (`hmm_forward_cluster<n>_cap<c>`) kernels.

use super::pair::{DP, Red, assign, cta_fmax, padd, pmax2, pshift};
use super::{
    ForwardRegs, PREP_AMAX, PREP_COLMAX, PREP_DCOL_H, PREP_DCOL_L, ld_pair, ld_prep, state_log,
};
use crate::dsl::types::{F32, Reg, U32};
use crate::dsl::{GlobalPtr, KernelBuilder};

/// Where one forward step reads: the sequence's `â` pairs
/// (`seq_ah`/`seq_al`, the fallback's previous row `prow`, `t·S − S`) and
/// the emission maximum `mbt`.
pub(super) struct FwdStep {
    pub seq_ah: GlobalPtr<F32>,
    pub seq_al: GlobalPtr<F32>,
    pub prow: Reg<U32>,
    pub mbt: Reg<F32>,
}

/// What the forward's state `j` takes from outside the step: the column
/// maximum `colmax_j`, the pair `dcol_j` and the emission `log b_t[j]`
/// (the cluster kernels keep them in registers across steps, the one-CTA
/// kernel loads them per step: [`FwdCol::load`]).
pub(super) struct FwdCol {
    pub colmax: Reg<F32>,
    pub dcol: DP,
    pub e: Reg<F32>,
}

impl FwdCol {
    /// `colmax_j`, `dcol_j` from the prep and the emission at `row + j`
    /// of `seq_b`.
    pub(super) fn load(
        b: &mut KernelBuilder,
        p: &ForwardRegs,
        seq_b: GlobalPtr<F32>,
        row: Reg<U32>,
        j: Reg<U32>,
    ) -> FwdCol {
        let colmax = ld_prep(b, p.prep, PREP_COLMAX, p.sp, j);
        let dcol = DP {
            h: ld_prep(b, p.prep, PREP_DCOL_H, p.sp, j),
            l: ld_prep(b, p.prep, PREP_DCOL_L, p.sp, j),
        };
        let k = b.add(row, j);
        let ep = b.offset(seq_b, k);
        let e = b.ld_global(ep, 0);
        FwdCol { colmax, dcol, e }
    }
}

/// The forward's state `j` of a step, given its linear sum `sj` (the
/// contract's step `t ≥ 1`): `L_j` (`log sj`, or the exact fallback over
/// the previous pairs and `lc`), `X_j = (L_j + dcol_j) + (e_t[j] ⊖ Mb_t)`,
/// folded into the running maximum `xm` and returned (the caller stores
/// it or keeps it for the normalization). Shared by the one-CTA and the
/// cluster forward kernels.
pub(super) fn forward_state(
    b: &mut KernelBuilder,
    p: &ForwardRegs,
    c: &FwdStep,
    col: &FwdCol,
    sj: Reg<F32>,
    j: Reg<U32>,
    xm: DP,
) -> DP {
    let FwdStep {
        seq_ah,
        seq_al,
        prow,
        mbt,
    } = *c;
    let colmax = col.colmax;
    let term = |b: &mut KernelBuilder, i: Reg<U32>| {
        let k = b.add(prow, i);
        let a = ld_pair(b, seq_ah, seq_al, k);
        let idx = b.mad_lo(i, p.s, j);
        let ap = b.offset(p.log_a, idx);
        let la = b.ld_global(ap, 0);
        let lc = pshift(b, la, colmax);
        padd(b, a, lc)
    };
    let (l, _, _) = state_log(b, sj, p.s, &term);
    let e = pshift(b, col.e, mbt);
    let x = padd(b, l, col.dcol);
    let x = padd(b, x, e);
    let nm = pmax2(b, xm, x);
    assign(b, xm, nm);
    x
}

/// The forward's input maxima: `Mπ = max_j log π_j` across the CTA
/// (`fmax` from NaN, so NaN entries drop out) and the prep's `amax`.
pub(super) fn input_maxima(
    b: &mut KernelBuilder,
    p: &ForwardRegs,
    tid: Reg<U32>,
    nt: Reg<U32>,
    red0: &Red,
) -> (Reg<F32>, Reg<F32>) {
    let v = b.mov(f32::NAN);
    b.for_range(tid, p.s, nt, |b, j| {
        let pp_ = b.offset(p.log_pi, j);
        let x = b.ld_global(pp_, 0);
        let nv = b.fmax(v, x);
        b.assign(v, nv);
    });
    let mpi = cta_fmax(b, v, red0);
    let amax_at = b.mul_lo(p.sp, PREP_AMAX);
    let amax_p = b.offset(p.prep, amax_at);
    let amax = b.ld_global(amax_p, 0);
    (mpi, amax)
}

/// The forward's state `j` of step 0 (the sequence's emissions `seq_b`,
/// the maxima `(Mπ, Mb_0)`):
/// `X_j = (log π_j − Mπ) + (e_0[j] − Mb_0)`, folded into the running
/// maximum `xm` and returned (the caller stores it at `j` or keeps it).
pub(super) fn forward_state0(
    b: &mut KernelBuilder,
    p: &ForwardRegs,
    seq_b: GlobalPtr<F32>,
    maxima: (Reg<F32>, Reg<F32>),
    j: Reg<U32>,
    xm: DP,
) -> DP {
    let (mpi, mb0) = maxima;
    let pip = b.offset(p.log_pi, j);
    let pi = b.ld_global(pip, 0);
    let ep = b.offset(seq_b, j);
    let e = b.ld_global(ep, 0);
    let a = pshift(b, pi, mpi);
    let e = pshift(b, e, mb0);
    let x = padd(b, a, e);
    let nm = pmax2(b, xm, x);
    assign(b, xm, nm);
    x
}
