//! The forward's work for one state of a step (and its input maxima),
//! shared by the one-CTA (`hmm_forward_cap<c>`) and the cluster
//! (`hmm_forward_cluster<n>_cap<c>`) kernels.

use super::pair::{DP, Red, assign, cta_fmax, padd, pmax2, pshift};
use super::{
    ForwardRegs, PREP_AMAX, PREP_COLMAX, PREP_DCOL_H, PREP_DCOL_L, ld_pair, ld_prep, st_pair,
    state_log,
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
/// maximum `colmax_j`, the pair `dcol_j` and the emission `log b_t[j]`.
pub(super) struct FwdCol {
    pub colmax: Reg<F32>,
    pub dcol: DP,
    pub e: Reg<F32>,
}

/// Where [`forward_state`] finds its [`FwdCol`] and leaves `X_j`.
pub(super) enum FwdIn<'a> {
    /// In registers (the cluster kernels keep them across steps); `X_j`
    /// is returned only (the exchange normalizes it in registers).
    Held(&'a FwdCol),
    /// Loaded from the prep and `seq_b[row + j]` where they are used, and
    /// `X_j` stored at `row + j` of the `â` pairs (the one-CTA kernel,
    /// whose `normalize_row` reads it back).
    Memory {
        seq_b: GlobalPtr<F32>,
        row: Reg<U32>,
    },
}

/// The forward's state `j` of a step, given its linear sum `sj` (the
/// contract's step `t ≥ 1`): `L_j` (`log sj`, or the exact fallback over
/// the previous pairs and `lc`), `X_j = (L_j + dcol_j) + (e_t[j] ⊖ Mb_t)`,
/// folded into the running maximum `xm` and returned (and stored with
/// [`FwdIn::Memory`]). Shared by the one-CTA and the cluster forward
/// kernels.
pub(super) fn forward_state(
    b: &mut KernelBuilder,
    p: &ForwardRegs,
    c: &FwdStep,
    input: FwdIn<'_>,
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
    let colmax = match &input {
        FwdIn::Held(col) => col.colmax,
        FwdIn::Memory { .. } => ld_prep(b, p.prep, PREP_COLMAX, p.sp, j),
    };
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
    let (dcol, e, store) = match input {
        FwdIn::Held(col) => (col.dcol, col.e, None),
        FwdIn::Memory { seq_b, row } => {
            let dcol = DP {
                h: ld_prep(b, p.prep, PREP_DCOL_H, p.sp, j),
                l: ld_prep(b, p.prep, PREP_DCOL_L, p.sp, j),
            };
            let k = b.add(row, j);
            let ep = b.offset(seq_b, k);
            (dcol, b.ld_global(ep, 0), Some(k))
        }
    };
    let e = pshift(b, e, mbt);
    let x = padd(b, l, dcol);
    let x = padd(b, x, e);
    if let Some(k) = store {
        st_pair(b, seq_ah, seq_al, k, x);
    }
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
/// `X_j = (log π_j − Mπ) + (e_0[j] − Mb_0)`, stored as the pair at `j` of
/// `store` (the one-CTA kernel; the cluster kernels keep it), folded into
/// the running maximum `xm` and returned.
pub(super) fn forward_state0(
    b: &mut KernelBuilder,
    p: &ForwardRegs,
    seq_b: GlobalPtr<F32>,
    store: Option<(GlobalPtr<F32>, GlobalPtr<F32>)>,
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
    if let Some((seq_ah, seq_al)) = store {
        st_pair(b, seq_ah, seq_al, j, x);
    }
    let nm = pmax2(b, xm, x);
    assign(b, xm, nm);
    x
}
