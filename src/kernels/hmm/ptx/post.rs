//! The posteriors and transition-count kernels of [`super`] (see
//! [`super`] for the table of all kernels).
//!
//! Both loop over CTA tasks with a 64-bit counter (`task = ctaid, ctaid +
//! nctaid, …` below `tasks`), so any batch fits one launch.

use super::pair::{self as pp, DP, FULL, padd, pexp, pmax2, pshift, psub};
use super::{PREP_ROWMAX, WARPS, builder, ld_pair, ld_prep};
use crate::dsl::params::Ptr;
use crate::dsl::types::{F32, Reg, U32, U64};
use crate::dsl::{Cmp, GlobalPtr, KernelBuilder, PtxModule, Rounding, ShflMode};
use crate::error::Result;
use crate::kernel_params;
use crate::target::Sm;

/// States `i` per thread of the transition counts (a warp's task is
/// `XI_ROWS` states `i` × 32 states `j`). The padded count `S16` is a
/// multiple of 16 only, so a sequence's last row block may hold 16 states
/// `i` (that task runs a 16-row copy of the loop, which reads no `Ã` quad
/// or weight past the padded buffers).
pub const XI_ROWS: u32 = 32;

/// Threads per CTA of the transition counts: 4 warps, so that at small
/// batches (8 sequences × 64 warp tasks at S 256) the CTAs spread over
/// more SMs; at ~204 registers a thread two such CTAs fit an SM, the same
/// 8 warps as one CTA of 256.
pub const XI_THREADS: u32 = 128;

/// Warps per CTA of the transition counts (a group of warp tasks).
const XI_WARPS: u32 = XI_THREADS / 32;

/// States `i` of the short last row block where `S16 % XI_ROWS = 16`.
const XI_HALF: u32 = XI_ROWS / 2;

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

kernel_params! {
    /// Arguments of `hmm_transitions`: `tasks = batch · groups` CTA tasks
    /// of [`XI_THREADS`] threads, a group being 4 warp tasks of (32 states `i`, or 16 in a last
    /// short row block, × 32 states `j`).
    pub struct TransitionArgs => TransitionRegs {
        log_a: Ptr<F32>,
        prep: Ptr<F32>,
        a_til: Ptr<F32>,
        lengths: Ptr<U32>,
        gamma: Ptr<F32>,
        w: Ptr<F32>,
        rh: Ptr<F32>,
        rl: Ptr<F32>,
        flags: Ptr<U32>,
        xi: Ptr<F32>,
        tasks: U64,
        groups: U32,
        t: U32,
        s: U32,
        sp: U32,
    }
}

/// `for task in ctaid.. step nctaid while task < tasks`, with `(seq,
/// sub) = (task / per, task % per)`.
fn cta_tasks(
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

/// Expected transition counts: a warp per ([`XI_ROWS`] states `i`, 32
/// states `j`) of a sequence (16 states `i` in the last row block when
/// `S16 % 32 = 16`), the block sums and their Kahan sums in registers.
/// Each `pexp(r_j)` of a step is shared by the warp's [`XI_ROWS`] states.
pub fn generate_transitions(sm: Sm) -> Result<PtxModule> {
    let mut b = builder("hmm_transitions", sm);
    b.maxntid(XI_THREADS, 1, 1);
    let p = b.params::<TransitionArgs>();
    let tid = b.tid_x();
    let lane = b.and(tid, 31u32);
    let warp = b.shr(tid, 5u32);
    // Row blocks: ⌈S16 / 32⌉ (S16 is a multiple of 16).
    let sp16 = b.add(p.sp, XI_HALF);
    let nib = b.shr(sp16, XI_ROWS.trailing_zeros());
    let s31 = b.add(p.s, 31u32);
    let njw = b.shr(s31, 5u32);
    let per_seq = b.mul_lo(nib, njw);
    cta_tasks(&mut b, p.tasks, p.groups, |b, seq, group| {
        let wt = b.mad_lo(group, XI_WARPS, warp);
        let in_seq = b.setp(Cmp::Lt, wt, per_seq);
        let ib = b.div(wt, njw);
        let jw = b.rem(wt, njw);
        let j = b.mad_lo(jw, 32u32, lane);
        let jin = b.setp(Cmp::Lt, j, p.s);
        let active = b.pand(in_seq, jin);
        b.if_(active, |b| {
            let i0 = b.mul_lo(ib, XI_ROWS);
            let iend = b.add(i0, XI_ROWS);
            let full = b.setp(Cmp::Le, iend, p.sp);
            b.if_else(
                full,
                |b| transitions_task(b, &p, seq, i0, j, XI_ROWS),
                |b| transitions_task(b, &p, seq, i0, j, XI_HALF),
            );
        });
    });
    b.finish()
}

/// One warp task: the `rows` states `i0..i0 + rows` (a multiple of 4,
/// `i0 + rows ≤ S16`) against the lane's state `j`.
fn transitions_task(
    b: &mut KernelBuilder,
    p: &TransitionRegs,
    seq: Reg<U32>,
    i0: Reg<U32>,
    j: Reg<U32>,
    rows: u32,
) {
    let n = rows as usize;
    let lp = b.offset(p.lengths, seq);
    let len = b.ld_global(lp, 0);
    let steps = b.max(len, 1u32);
    let steps = b.sub(steps, 1u32);
    // Ã[i][j] for the `rows` states i: in the packed-quad layout, quad
    // ⌊i/4⌋ at row j, `((⌊i/4⌋·sp + j)·4`.
    let ib4 = b.shr(i0, 2u32);
    let mut at = Vec::with_capacity(n);
    for q in 0..n / 4 {
        let qq = b.add(ib4, q as u32);
        let e = b.mad_lo(qq, p.sp, j);
        let e = b.shl(e, 2u32);
        let ap = b.offset(p.a_til, e);
        at.extend(b.ld_global_nc_v4(ap, 0));
    }
    let blk: Vec<Reg<F32>> = (0..n).map(|_| b.mov(0f32)).collect();
    let sum: Vec<Reg<F32>> = (0..n).map(|_| b.mov(0f32)).collect();
    let comp: Vec<Reg<F32>> = (0..n).map(|_| b.mov(0f32)).collect();
    let ts = b.mul_lo(p.t, p.s);
    let base = b.mul_wide_u32(seq, ts);
    let rh = b.offset64(p.rh, base);
    let rl = b.offset64(p.rl, base);
    let tsp = b.mul_lo(p.t, p.sp);
    let wbase = b.mul_wide_u32(seq, tsp);
    let wseq = b.offset64(p.w, wbase);
    let sbase = b.mul_wide_u32(seq, p.t);
    let flags = b.offset64(p.flags, sbase);
    b.for_range(0u32, steps, 1u32, |b, tt| {
        let row = b.mul_lo(tt, p.s);
        let kj = b.add(row, j);
        let r = ld_pair(b, rh, rl, kj);
        let q = pexp(b, r);
        let wrow = b.mad_lo(tt, p.sp, i0);
        let wp = b.offset(wseq, wrow);
        let mut x = Vec::with_capacity(n);
        for k in 0..n / 4 {
            x.extend(b.ld_global_nc_v4(wp, (4 * k) as i32));
        }
        let fp = b.offset(flags, tt);
        let f = b.ld_global(fp, 0);
        let fast = b.setp(Cmp::Eq, f, 0u32);
        b.if_else(
            fast,
            |b| {
                for k in 0..n {
                    let y = b.fmul(Rounding::Rn, at[k], q);
                    let v = b.ffma(Rounding::Rn, x[k], y, blk[k]);
                    b.assign(blk[k], v);
                }
            },
            |b| {
                for k in 0..n {
                    let bits = b.f32_bits(x[k]);
                    let neg = b.setp(Cmp::Ge, bits, 0x8000_0000u32);
                    b.if_else(
                        neg,
                        |b| {
                            let xv = b.fneg(x[k]);
                            let y = b.mov(0f32);
                            let nz = b.setp(Cmp::Ne, xv, 0f32);
                            b.if_(nz, |b| {
                                let i = b.add(i0, k as u32);
                                let yv = fallback_y(b, p, i, j, row, rh, rl);
                                b.assign(y, yv);
                            });
                            let v = b.ffma(Rounding::Rn, xv, y, blk[k]);
                            b.assign(blk[k], v);
                        },
                        |b| {
                            let y = b.fmul(Rounding::Rn, at[k], q);
                            let v = b.ffma(Rounding::Rn, x[k], y, blk[k]);
                            b.assign(blk[k], v);
                        },
                    );
                }
            },
        );
        // Block end: Kahan-add the block sums.
        let t1 = b.add(tt, 1u32);
        let m = b.and(t1, 31u32);
        let at_end = b.setp(Cmp::Eq, m, 0u32);
        let last = b.setp(Cmp::Eq, t1, steps);
        let fold = b.por(at_end, last);
        b.if_(fold, |b| {
            for k in 0..n {
                let y = b.fsub(Rounding::Rn, blk[k], comp[k]);
                let t = b.fadd(Rounding::Rn, sum[k], y);
                let d = b.fsub(Rounding::Rn, t, sum[k]);
                let c = b.fsub(Rounding::Rn, d, y);
                b.assign(comp[k], c);
                b.assign(sum[k], t);
                b.assign(blk[k], 0f32);
            }
        });
    });
    let ss = b.mul_lo(p.s, p.s);
    let obase = b.mul_wide_u32(seq, ss);
    let out = b.offset64(p.xi, obase);
    for (k, v) in sum.iter().enumerate() {
        let i = b.add(i0, k as u32);
        let inside = b.setp(Cmp::Lt, i, p.s);
        b.if_(inside, |b| {
            let idx = b.mad_lo(i, p.s, j);
            let q = b.offset(out, idx);
            b.st_global(q, 0, *v);
        });
    }
}

/// The fallback state `i`'s term `y = pexp(v_j ⊖ pmax_k v_k)` with
/// `v_k = lr[i][k] + R[k]` (`R` row at `row` of `rh`/`rl`).
fn fallback_y(
    b: &mut KernelBuilder,
    p: &TransitionRegs,
    i: Reg<U32>,
    j: Reg<U32>,
    row: Reg<U32>,
    rh: GlobalPtr<F32>,
    rl: GlobalPtr<F32>,
) -> Reg<F32> {
    let rowmax = ld_prep(b, p.prep, PREP_ROWMAX, p.sp, i);
    let arow = b.mul_lo(i, p.s);
    let v_of = |b: &mut KernelBuilder, k: Reg<U32>| {
        let ai = b.add(arow, k);
        let ap = b.offset(p.log_a, ai);
        let la = b.ld_global(ap, 0);
        let lr = pshift(b, la, rowmax);
        let kr = b.add(row, k);
        let r = ld_pair(b, rh, rl, kr);
        padd(b, lr, r)
    };
    let m = pp::constant(b, f32::NAN, 0.0);
    b.for_range(0u32, p.s, 1u32, |b, k| {
        let v = v_of(b, k);
        let nm = pmax2(b, m, v);
        pp::assign(b, m, nm);
    });
    let m = pp::canon(b, m);
    let v = v_of(b, j);
    let d = psub(b, v, m);
    pexp(b, d)
}
