//! The posteriors kernel of [`super`] (see [`super`] for the table of all
//! kernels) and the CTA task loop it shares with the transition counts.
//!
//! Both kernels loop over CTA tasks with a 64-bit counter (`task = ctaid, ctaid +
//! nctaid, …` below `tasks`), so any batch fits one launch.

use super::pair::{self as pp, DP, FULL, padd, pexp, pmax2, psub};
use super::{WARPS, builder, ld_pair};
use crate::dsl::params::Ptr;
use crate::dsl::types::{F32, Reg, U32, U64};
use crate::dsl::{Cmp, GlobalPtr, KernelBuilder, PtxModule, Rounding, ShflMode};
use crate::error::Result;
use crate::kernel_params;
use crate::target::Sm;

kernel_params! {
    /// Arguments of `hmm_posteriors`: `tasks = batch · chunks` CTA tasks,
    /// each a sequence's positions `t ≡ chunk·8 + warp (mod chunks·8)`.
    pub struct PosteriorArgs => PosteriorRegs {
        lengths: Ptr<U32>,
        alpha: Ptr<F32>,
        gamma: Ptr<F32>,
        beta: Ptr<F32>,
        beta_lo: Ptr<F32>,
        cnorm: Ptr<F32>,
        dnorm: Ptr<F32>,
        w: Ptr<F32>,
        tasks: U64,
        chunks: U32,
        t: U32,
        s: U32,
        sp: U32,
    }
}

/// `for task in ctaid.. step nctaid while task < tasks`, with `(seq,
/// sub) = (task / per, task % per)`.
pub(super) fn cta_tasks(
    b: &mut KernelBuilder,
    tasks: Reg<U64>,
    per: Reg<U32>,
    body: impl FnOnce(&mut KernelBuilder, Reg<U32>, Reg<U32>),
) {
    let cta = b.ctaid_x();
    let nc = b.nctaid_x();
    let task = b.u32_to_u64(cta);
    let step = b.u32_to_u64(nc);
    let per64 = b.u32_to_u64(per);
    b.while_(
        |b| b.setp(Cmp::Lt, task, tasks),
        |b| {
            let seq = b.div(task, per64);
            let sub = b.rem(task, per64);
            let seq = b.u64_to_u32(seq);
            let sub = b.u64_to_u32(sub);
            body(b, seq, sub);
            let next = b.add(task, step);
            b.assign(task, next);
        },
    );
}

/// `gamma`, the final `log_alpha` / `log_beta` in place, and `w` turned
/// into `x = gamma / w` (linear) or `gamma / (−σ)` (fallback, negative).
pub fn generate_posteriors(sm: Sm) -> Result<PtxModule> {
    let mut b = builder("hmm_posteriors", sm);
    let p = b.params::<PosteriorArgs>();
    let tid = b.tid_x();
    let lane = b.and(tid, 31u32);
    let warp = b.shr(tid, 5u32);
    let stride = b.mul_lo(p.chunks, WARPS);
    cta_tasks(&mut b, p.tasks, p.chunks, |b, seq, chunk| {
        let lp = b.offset(p.lengths, seq);
        let len = b.ld_global(lp, 0);
        let start = b.mad_lo(chunk, WARPS, warp);
        let ts = b.mul_lo(p.t, p.s);
        let base = b.mul_wide_u32(seq, ts);
        let ah = b.offset64(p.alpha, base);
        let al = b.offset64(p.gamma, base);
        let bh = b.offset64(p.beta, base);
        let bl = b.offset64(p.beta_lo, base);
        let tsp = b.mul_lo(p.t, p.sp);
        let wbase = b.mul_wide_u32(seq, tsp);
        let wrow0 = b.offset64(p.w, wbase);
        let t2 = b.shl(p.t, 1u32);
        let nbase = b.mul_wide_u32(seq, t2);
        let cn = b.offset64(p.cnorm, nbase);
        let dn = b.offset64(p.dnorm, nbase);
        b.for_range(start, p.t, stride, |b, tt| {
            let row = b.mul_lo(tt, p.s);
            let inside = b.setp(Cmp::Lt, tt, len);
            let r = Row {
                lane,
                tt,
                len,
                row,
                ah,
                al,
                bh,
                bl,
                wrow0,
                cn,
                dn,
            };
            b.if_else(
                inside,
                |b| posterior_row(b, &p, &r),
                |b| {
                    b.for_range(lane, p.s, 32u32, |b, i| {
                        let k = b.add(row, i);
                        for (dst, v) in
                            [(ah, f32::NEG_INFINITY), (bh, f32::NEG_INFINITY), (al, 0.0)]
                        {
                            let q = b.offset(dst, k);
                            b.st_global(q, 0, v);
                        }
                    });
                },
            );
        });
    });
    b.finish()
}

/// The registers of one position of a sequence.
#[derive(Clone, Copy)]
struct Row {
    lane: Reg<U32>,
    tt: Reg<U32>,
    len: Reg<U32>,
    /// `tt · S`.
    row: Reg<U32>,
    ah: GlobalPtr<F32>,
    al: GlobalPtr<F32>,
    bh: GlobalPtr<F32>,
    bl: GlobalPtr<F32>,
    wrow0: GlobalPtr<F32>,
    cn: GlobalPtr<F32>,
    dn: GlobalPtr<F32>,
}

/// One position `tt < len` of a sequence, by one warp.
fn posterior_row(b: &mut KernelBuilder, p: &PosteriorRegs, r: &Row) {
    let Row {
        lane,
        tt,
        len,
        row,
        ah,
        al,
        bh,
        bl,
        wrow0,
        cn,
        dn,
    } = *r;
    let w_of = |b: &mut KernelBuilder, i: Reg<U32>| {
        let k = b.add(row, i);
        let a = ld_pair(b, ah, al, k);
        let be = ld_pair(b, bh, bl, k);
        padd(b, a, be)
    };
    // m = pmax over the row (lanes, then the warp).
    let m = pp::constant(b, f32::NAN, 0.0);
    b.for_range(lane, p.s, 32u32, |b, i| {
        let w = w_of(b, i);
        let nm = pmax2(b, m, w);
        pp::assign(b, m, nm);
    });
    let mut m = DP { h: m.h, l: m.l };
    for off in [16u32, 8, 4, 2, 1] {
        let h = b.shfl(ShflMode::Bfly, m.h, off, 0x1f, FULL);
        let l = b.shfl(ShflMode::Bfly, m.l, off, 0x1f, FULL);
        m = pmax2(b, m, DP { h, l });
    }
    let m = pp::canon(b, m);
    // Pass 2: g = pexp(w ⊖ m) into the gamma buffer (its low part of
    // â is read first), the final log_alpha / log_beta, and the lane sums
    // of g; then the halving tree (lane 0 holds z).
    let t2 = b.shl(tt, 1u32);
    let cp = b.offset(cn, t2);
    let c = DP {
        h: b.ld_global(cp, 0),
        l: b.ld_global(cp, 1),
    };
    let dp = b.offset(dn, t2);
    let d = DP {
        h: b.ld_global(dp, 0),
        l: b.ld_global(dp, 1),
    };
    let z = b.mov(0f32);
    b.for_range(lane, p.s, 32u32, |b, i| {
        let k = b.add(row, i);
        let a = ld_pair(b, ah, al, k);
        let be = ld_pair(b, bh, bl, k);
        let w = padd(b, a, be);
        let dd = psub(b, w, m);
        let g = pexp(b, dd);
        let q = b.offset(al, k);
        b.st_global(q, 0, g);
        for (src, shift, dst) in [(a, c, ah), (be, d, bh)] {
            let x = b.fadd(Rounding::Rn, src.h, shift.h);
            let y = b.fadd(Rounding::Rn, src.l, shift.l);
            let v = b.fadd(Rounding::Rn, x, y);
            let q = b.offset(dst, k);
            b.st_global(q, 0, v);
        }
        let nz = b.fadd(Rounding::Rn, z, g);
        b.assign(z, nz);
    });
    let mut z = z;
    for off in [16u32, 8, 4, 2, 1] {
        let o = b.shfl(ShflMode::Down, z, off, 0x1f, FULL);
        z = b.fadd(Rounding::Rn, z, o);
    }
    let z = b.shfl(ShflMode::Idx, z, 0u32, 0x1f, FULL);
    // Pass 3: gamma = g / z, and x = gamma / w for the transition counts.
    let t1 = b.add(tt, 1u32);
    let has_pair = b.setp(Cmp::Lt, t1, len);
    let wrow = b.mul_lo(tt, p.sp);
    b.for_range(lane, p.s, 32u32, |b, i| {
        let k = b.add(row, i);
        let q = b.offset(al, k);
        let g = b.ld_global(q, 0);
        let gamma = b.fdiv(Rounding::Rn, g, z);
        b.st_global(q, 0, gamma);
        b.if_(has_pair, |b| {
            let kw = b.add(wrow, i);
            let wp = b.offset(wrow0, kw);
            let wv = b.ld_global(wp, 0);
            let x = b.fdiv(Rounding::Rn, gamma, wv);
            b.st_global(wp, 0, x);
        });
    });
}
