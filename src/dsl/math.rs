//! f32 `exp`, `log`, `log1p` and `log_add_exp` as DSL routines: each call
//! emits the function inline, branch-free, into the kernel being built.
//!
//! **The contract, the algorithm, the constants and the measured accuracy
//! are documented in [`crate::math`]**, whose host functions are the
//! specification: every routine here emits exactly the same IEEE operations
//! in exactly the same order as its host mirror (`fma.rn.f32`, `add.rn`,
//! `sub.rn`, `mul.rn`, `max.f32`/`min.f32`/`max.NaN.f32`, `abs`/`neg`,
//! integer `add`/`sub`/`and`/`shl`/`shr`/`min`, `mov.b32` for the bit
//! casts, `setp` + `selp` for every `if`), so a kernel returns the host
//! function's result bit for bit (any NaN for a NaN). The one place where
//! the emitted sequence depends on the target is `log_add_exp`'s maximum
//! (below); the value does not.
//! No `.approx`, `ex2`, `lg2`, `.ftz`, division, reciprocal or square root
//! is ever emitted. Keep the two files in lock step: a change to one is a
//! change to the other, and `tests/math_sim.rs` checks them against each
//! other on the simulator.
//!
//! Cost, in SASS instructions per call (pinned ptxas 12.9; the kernel with
//! one call minus the same kernel without, counted by
//! `ptxsmith::report::math_cost` (feature `report`), in the tuning report's
//! "Exact math routines" section (`docs/tuning.md`) and printed by
//! `cargo test --release --features report --test math_sim
//! sass_instructions_per_call -- --nocapture`; for `log_add_exp` the kernel
//! with one call minus the same kernel with an `add.rn` of the two inputs,
//! plus one):
//!
//! | target | `exp` | `log` | `log1p` | `log_add_exp` |
//! | --- | --- | --- | --- | --- |
//! | sm_75 | 30 | 47 | 62 | 47 |
//! | sm_80, sm_86, sm_89, sm_90, sm_100, sm_100a, sm_120, sm_120a | 28 | 47 | 62 | 45 |
//!
//! (sm_70 assembles too; the pinned nvdisasm cannot read its cubins. Until
//! the softplus routine, `log_add_exp` was `exp` followed by `log1p`: 101
//! instructions, 103 on sm_75. On sm_70 and sm_75, which lack `max.NaN`,
//! `log_add_exp` takes its maximum from `max`, `setp.nan` and `selp`.)

use super::builder::KernelBuilder;
use super::ir::{Cmp, Rounding};
use super::types::{F32, Pred, Reg, S32, Src};
use crate::Feature;
use crate::math::{
    EXP_CLAMP_HI, EXP_CLAMP_LO, EXP_POLY, LAE_B, LAE_B_LO, LAE_CLAMP, LAE_KAPPA, LAE_MAGIC,
    LAE_SPLIT, LN2_HI, LN2_HI16, LN2_LO, LN2_LO16, LOG_POLY, LOG2_E, ROUND_MAGIC,
    SOFTPLUS_EXP_POLY, SOFTPLUS_LOG_POLY, TWO_THIRDS_BITS,
};

const RN: Rounding = Rounding::Rn;
const ROUND_MAGIC_BITS: u32 = 0x4b40_0000;

#[track_caller]
fn fma(
    b: &mut KernelBuilder,
    x: impl Into<Src<F32>>,
    y: impl Into<Src<F32>>,
    z: impl Into<Src<F32>>,
) -> Reg<F32> {
    b.ffma(RN, x, y, z)
}

#[track_caller]
fn add(b: &mut KernelBuilder, x: impl Into<Src<F32>>, y: impl Into<Src<F32>>) -> Reg<F32> {
    b.fadd(RN, x, y)
}

#[track_caller]
fn sub(b: &mut KernelBuilder, x: impl Into<Src<F32>>, y: impl Into<Src<F32>>) -> Reg<F32> {
    b.fsub(RN, x, y)
}

#[track_caller]
fn mul(b: &mut KernelBuilder, x: impl Into<Src<F32>>, y: impl Into<Src<F32>>) -> Reg<F32> {
    b.fmul(RN, x, y)
}

/// `if p { x } else { y }` on floats.
#[track_caller]
fn sel(
    b: &mut KernelBuilder,
    p: Reg<Pred>,
    x: impl Into<Src<F32>>,
    y: impl Into<Src<F32>>,
) -> Reg<F32> {
    b.selp(p, x, y)
}

/// Mirror of [`crate::math::exp_f32`].
#[track_caller]
pub fn exp(b: &mut KernelBuilder, x: Reg<F32>) -> Reg<F32> {
    b.comment("exp_f32 (see ptxsmith::math)");
    exp_from(b, x, true)
}

/// [`exp`] without its upper clamp: [`crate::math::exp_f32`] bit for bit
/// for `x ≤ EXP_CLAMP_HI` (89) and for NaN, where that clamp does nothing;
/// any value (a NaN, a wrong number) above. One instruction fewer (a
/// `FMNMX`: `lcse_fwd`'s log-sum loop on sm_90 takes 28.25 SASS an element
/// instead of 29.25), for callers whose argument cannot exceed the clamp
/// (an `x − max` of a log-sum) or which discard the result when it does.
#[track_caller]
pub fn exp_bounded(b: &mut KernelBuilder, x: Reg<F32>) -> Reg<F32> {
    b.comment("exp_f32 for x <= 89 (see ptxsmith::math)");
    exp_from(b, x, false)
}

#[track_caller]
fn exp_from(b: &mut KernelBuilder, x: Reg<F32>, upper: bool) -> Reg<F32> {
    // 1. clamp
    let x = if upper {
        let p = b.setp(Cmp::Gt, x, EXP_CLAMP_HI);
        sel(b, p, EXP_CLAMP_HI, x)
    } else {
        x
    };
    let p = b.setp(Cmp::Lt, x, EXP_CLAMP_LO);
    let x = sel(b, p, EXP_CLAMP_LO, x);
    // 2. k
    let t = fma(b, x, LOG2_E, ROUND_MAGIC);
    let kf = sub(b, t, ROUND_MAGIC);
    let tb = b.f32_bits(t);
    let k = b.sub(tb, ROUND_MAGIC_BITS);
    let k = b.u32_as_s32(k);
    // 3. reduction
    let rh = fma(b, kf, -LN2_HI, x);
    let r = fma(b, kf, -LN2_LO, rh);
    // 4. 1 + rh
    let hi = add(b, 1.0f32, rh);
    let hd = sub(b, 1.0f32, hi);
    let hi_err = add(b, hd, rh);
    // 5. polynomial and tail
    let mut p = fma(b, r, EXP_POLY[5], EXP_POLY[4]);
    for c in EXP_POLY[..4].iter().rev() {
        p = fma(b, p, r, *c);
    }
    let r2 = mul(b, r, r);
    let tail = fma(b, kf, -LN2_LO, hi_err);
    let tail = fma(b, r2, p, tail);
    let pre = add(b, hi, tail);
    // 6. scale by 2^k1 (exact) then 2^k2 (rounds)
    let k1 = b.shr(k, 1u32);
    let k2 = b.sub(k, k1);
    let s1 = pow2(b, k1);
    let s2 = pow2(b, k2);
    let y = mul(b, pre, s1);
    mul(b, y, s2)
}

/// `from_bits((k + 127) << 23)`.
#[track_caller]
fn pow2(b: &mut KernelBuilder, k: Reg<S32>) -> Reg<F32> {
    let e = b.add(k, 127i32);
    let e = b.s32_as_u32(e);
    let e = b.shl(e, 23u32);
    b.f32_from_bits(e)
}

/// `x = 2^e·m`, `m ∈ [2/3, 4/3)`: returns `(e, m)` (before any subnormal
/// correction of `e`).
#[track_caller]
fn split(b: &mut KernelBuilder, x: Reg<F32>) -> (Reg<S32>, Reg<F32>) {
    let xb = b.f32_bits(x);
    let t = b.sub(xb, TWO_THIRDS_BITS);
    let ts = b.u32_as_s32(t);
    let e = b.shr(ts, 23u32);
    let mb = b.and(t, 0x007f_ffffu32);
    let mb = b.add(mb, TWO_THIRDS_BITS);
    (e, b.f32_from_bits(mb))
}

/// Mirror of `log_core` in [`crate::math`]: `e·ln 2 + log1p(f) + d`.
#[track_caller]
fn log_core(b: &mut KernelBuilder, e: Reg<S32>, f: Reg<F32>, d: impl Into<Src<F32>>) -> Reg<F32> {
    let eu = b.s32_as_u32(e);
    let eb = b.add(eu, ROUND_MAGIC_BITS);
    let ebf = b.f32_from_bits(eb);
    let ef = sub(b, ebf, ROUND_MAGIC);
    // e·ln2_hi + f = s1 + e1
    let a = mul(b, ef, LN2_HI16);
    let s1 = add(b, a, f);
    let z1 = sub(b, s1, a);
    let e1 = sub(b, f, z1);
    // −f²/2 = −hsq + nres
    let hf = mul(b, f, 0.5f32);
    let nhf = mul(b, f, -0.5f32);
    let hsq = mul(b, hf, f);
    let nres = fma(b, nhf, f, hsq);
    // s1 − hsq = s2 + e2
    let s2 = sub(b, s1, hsq);
    let z2 = sub(b, s1, s2);
    let e2 = sub(b, z2, hsq);
    // (f³/2)·Q(f)
    let mut q = fma(b, f, LOG_POLY[9], LOG_POLY[8]);
    for c in LOG_POLY[..8].iter().rev() {
        q = fma(b, q, f, *c);
    }
    let f3 = mul(b, hsq, f);
    let tail = fma(b, ef, LN2_LO16, d);
    let tail = add(b, tail, nres);
    let tail = add(b, tail, e1);
    let tail = add(b, tail, e2);
    let tail = fma(b, f3, q, tail);
    add(b, s2, tail)
}

/// Mirror of [`crate::math::log_f32`].
#[track_caller]
pub fn log(b: &mut KernelBuilder, x: Reg<F32>) -> Reg<F32> {
    b.comment("log_f32 (see ptxsmith::math)");
    // 1. subnormals
    let sub_p = b.setp(Cmp::Lt, x, f32::from_bits(0x0080_0000));
    let scale = sel(b, sub_p, 8_388_608.0f32, 1.0f32);
    let adj: Reg<S32> = b.selp(sub_p, -23i32, 0i32);
    let xs = mul(b, x, scale);
    // 2. split
    let (e0, m) = split(b, xs);
    let e = b.add(e0, adj);
    let f = sub(b, m, 1.0f32);
    // 3. core
    let y = log_core(b, e, f, 0.0f32);
    // 4. specials
    let bits = b.f32_bits(x);
    let p = b.setp(Cmp::Ge, bits, 0x7f80_0000u32);
    let y = sel(b, p, f32::NAN, y);
    let p = b.setp(Cmp::Eq, bits, 0x7f80_0000u32);
    let y = sel(b, p, f32::INFINITY, y);
    let p = b.setp(Cmp::Eq, x, 0.0f32);
    sel(b, p, f32::NEG_INFINITY, y)
}

/// Mirror of [`crate::math::log1p_f32`].
#[track_caller]
pub fn log1p(b: &mut KernelBuilder, x: Reg<F32>) -> Reg<F32> {
    b.comment("log1p_f32 (see ptxsmith::math)");
    // 1. 1 + x = u + c
    let u = add(b, 1.0f32, x);
    let bv = sub(b, u, x);
    let av = sub(b, u, bv);
    let c1 = sub(b, 1.0f32, bv);
    let c2 = sub(b, x, av);
    let c = add(b, c1, c2);
    // 2. split u
    let (e, m) = split(b, u);
    let fu = sub(b, m, 1.0f32);
    // 3. du ≈ c/u
    let omf = sub(b, 1.0f32, fu);
    let y0 = fma(b, fu, fu, omf);
    let nm = sub(b, -1.0f32, fu);
    let er = fma(b, nm, y0, 1.0f32);
    let y1 = fma(b, y0, er, y0);
    let es = b.min(e, 126i32);
    let sh = b.sub(127i32, es);
    let sh = b.s32_as_u32(sh);
    let sh = b.shl(sh, 23u32);
    let sc = b.f32_from_bits(sh);
    let du = mul(b, c, y1);
    let du = mul(b, du, sc);
    // 4. direct polynomial near 0
    let direct = b.setp(Cmp::Eq, e, 0i32);
    let f = sel(b, direct, x, fu);
    let d = sel(b, direct, 0.0f32, du);
    let y = log_core(b, e, f, d);
    // 5. specials
    let p = b.setp(Cmp::Eq, x, 0.0f32);
    let y = sel(b, p, x, y);
    let p = b.setp(Cmp::Eq, x, -1.0f32);
    let y = sel(b, p, f32::NEG_INFINITY, y);
    let p = b.setp(Cmp::Ltu, x, -1.0f32);
    let y = sel(b, p, f32::NAN, y);
    let p = b.setp(Cmp::Eq, x, f32::INFINITY);
    sel(b, p, f32::INFINITY, y)
}

/// Mirror of [`crate::math::log_add_exp`]: `max + log1p(e^(min − max))`
/// as one routine, with the NaN/∞ rules (see [`crate::math`]).
///
/// `max.NaN` needs sm_80; on sm_70/sm_75 the same value comes from
/// `max` and a `setp.nan`/`selp` pair (any NaN for a NaN, as everywhere).
#[track_caller]
pub fn log_add_exp(b: &mut KernelBuilder, x: Reg<F32>, y: Reg<F32>) -> Reg<F32> {
    b.comment("log_add_exp (see ptxsmith::math)");
    // 1. max (NaN if either is NaN) and d = min − max, clamped
    let mx = if b.sm().supports(Feature::MinMaxNaN) {
        b.fmax_nan(x, y)
    } else {
        let m = b.fmax(x, y);
        let p = b.setp(Cmp::Nan, x, y);
        sel(b, p, f32::NAN, m)
    };
    let dd = sub(b, x, y);
    let ad = b.fabs(dd);
    let nd = b.fneg(ad);
    let d = b.fmax(nd, LAE_CLAMP);
    // 2. k = round(d·log2 e); the first form takes k = 0
    let t = fma(b, d, LOG2_E, LAE_MAGIC);
    let kf = sub(b, t, LAE_MAGIC);
    let near = b.setp(Cmp::Gt, d, LAE_SPLIT);
    let ke = sel(b, near, 0.0f32, kf);
    let rh = fma(b, ke, -LN2_HI, d);
    let r = fma(b, ke, -LN2_LO, rh);
    // 3. the leading term h = A + B·rh and its exact error
    let c = sel(b, near, LN2_HI, 0.0f32);
    let a0 = b.fmax(c, 0.5f32);
    let h = fma(b, rh, LAE_B, a0);
    let hd = sub(b, a0, h);
    let he = fma(b, rh, LAE_B, hd);
    // 4. the tail of (e^r)/2 beyond h
    let kl = sel(b, near, LAE_KAPPA, kf);
    let t0 = fma(b, kl, -LAE_B_LO, he);
    let p = &SOFTPLUS_EXP_POLY;
    let mut q = fma(b, p[6], r, p[5]);
    for c in p[..5].iter().rev() {
        q = fma(b, q, r, *c);
    }
    let tl = fma(b, q, r, t0);
    // 5. the scale 2^(k+1) (1 near 0)
    let tb = b.f32_bits(t);
    let sb = b.shl(tb, 23u32);
    let sb = b.f32_from_bits(sb);
    let sb = mul(b, sb, f32::from_bits(0x2000_0000));
    let s = b.fmin(sb, 1.0f32);
    // 6. z and w
    let hc = sub(b, h, c);
    let v = add(b, hc, tl);
    let z = mul(b, v, s);
    let w = mul(b, z, v);
    // 7. the log1p correction, one rounding, the scale
    let q2 = &SOFTPLUS_LOG_POLY;
    let mut u = fma(b, q2[9], z, q2[8]);
    for c in q2[..8].iter().rev() {
        u = fma(b, u, z, *c);
    }
    let tt = fma(b, w, u, tl);
    let g = add(b, h, tt);
    fma(b, g, s, mx)
}
