//! DSL mirrors of [`super::super::pair`]: double-f32 pairs, the NaN-ignoring
//! maxima and their CTA-wide reductions, the compensated normalizer sums
//! and the exact pair log-sum, emitting the host functions' operations in
//! the same order (every `if` a `setp` + `selp`).

use crate::dsl::blocks::{self, ReduceOp};
use crate::dsl::math;
use crate::dsl::types::{F32, Pred, Reg, U32};
use crate::dsl::{Cmp, KernelBuilder, Rounding, SharedArray, ShflMode};

const RN: Rounding = Rounding::Rn;
/// Every lane of a warp.
pub(crate) const FULL: u32 = 0xffff_ffff;

/// A double-f32 value in registers.
#[derive(Clone, Copy)]
pub(crate) struct DP {
    pub(crate) h: Reg<F32>,
    pub(crate) l: Reg<F32>,
}

/// `(x, +0)`.
pub(crate) fn of(b: &mut KernelBuilder, x: Reg<F32>) -> DP {
    DP {
        h: x,
        l: b.mov(0f32),
    }
}

/// Fresh registers holding `(h, l)` constants.
pub(crate) fn constant(b: &mut KernelBuilder, h: f32, l: f32) -> DP {
    DP {
        h: b.mov(h),
        l: b.mov(l),
    }
}

/// Copy `x` into the loop-carried registers `d`.
pub(crate) fn assign(b: &mut KernelBuilder, d: DP, x: DP) {
    b.assign(d.h, x.h);
    b.assign(d.l, x.l);
}

/// Mirror of `pair::two_sum`.
pub(crate) fn two_sum(b: &mut KernelBuilder, a: Reg<F32>, c: Reg<F32>) -> (Reg<F32>, Reg<F32>) {
    let s = b.fadd(RN, a, c);
    let z = b.fsub(RN, s, a);
    let t1 = b.fsub(RN, s, z);
    let t2 = b.fsub(RN, a, t1);
    let t3 = b.fsub(RN, c, z);
    (s, b.fadd(RN, t2, t3))
}

/// Mirror of `pair::padd`.
pub(crate) fn padd(b: &mut KernelBuilder, x: DP, y: DP) -> DP {
    let (s, e) = two_sum(b, x.h, y.h);
    let ll = b.fadd(RN, x.l, y.l);
    let lo = b.fadd(RN, e, ll);
    let (h, l) = two_sum(b, s, lo);
    let a = b.fabs(s);
    let fin = b.setp(Cmp::Lt, a, f32::INFINITY);
    DP {
        h: b.selp(fin, h, s),
        l: b.selp(fin, l, 0f32),
    }
}

/// Mirror of `pair::psub` (`x ⊖ m`).
pub(crate) fn psub(b: &mut KernelBuilder, x: DP, m: DP) -> DP {
    let neg = DP {
        h: b.fneg(m.h),
        l: b.fneg(m.l),
    };
    let r = padd(b, x, neg);
    let ninf = b.setp(Cmp::Eq, m.h, f32::NEG_INFINITY);
    DP {
        h: b.selp(ninf, x.h, r.h),
        l: b.selp(ninf, x.l, r.l),
    }
}

/// Mirror of `pair::pshift` (`x ⊖ m` of two f32s).
pub(crate) fn pshift(b: &mut KernelBuilder, x: Reg<F32>, m: Reg<F32>) -> DP {
    let x = of(b, x);
    let m = of(b, m);
    psub(b, x, m)
}

/// Mirror of `pair::pmax2`.
pub(crate) fn pmax2(b: &mut KernelBuilder, a: DP, c: DP) -> DP {
    let gt = b.setp(Cmp::Gt, c.h, a.h);
    let a_nan = b.setp(Cmp::Nan, a.h, a.h);
    let eq = b.setp(Cmp::Eq, c.h, a.h);
    let lgt = b.setp(Cmp::Gt, c.l, a.l);
    let tie = b.pand(eq, lgt);
    let w = b.por(gt, a_nan);
    let w = b.por(w, tie);
    DP {
        h: b.selp(w, c.h, a.h),
        l: b.selp(w, c.l, a.l),
    }
}

/// Both parts `+ 0` (the canonical zero of a maximum).
pub(crate) fn canon(b: &mut KernelBuilder, x: DP) -> DP {
    DP {
        h: b.fadd(RN, x.h, 0f32),
        l: b.fadd(RN, x.l, 0f32),
    }
}

/// Mirror of `pair::pexp`: `fma(exp(h), l, exp(h))`.
pub(crate) fn pexp(b: &mut KernelBuilder, x: DP) -> Reg<F32> {
    let e = math::exp(b, x.h);
    b.ffma(RN, e, x.l, e)
}

/// The pair maximum over a warp (any tree: the maximum is order-free).
pub(crate) fn warp_pmax(b: &mut KernelBuilder, x: DP) -> DP {
    let mut x = x;
    for off in [16u32, 8, 4, 2, 1] {
        let h = b.shfl(ShflMode::Bfly, x.h, off, 0x1f, FULL);
        let l = b.shfl(ShflMode::Bfly, x.l, off, 0x1f, FULL);
        x = pmax2(b, x, DP { h, l });
    }
    x
}

/// The NaN-ignoring f32 maximum over a warp: the public
/// [`blocks::warp_reduce`] with `max.f32` (butterfly 16, 8, 4, 2, 1).
pub(crate) fn warp_fmax(b: &mut KernelBuilder, v: Reg<F32>) -> Reg<F32> {
    blocks::warp_reduce(b, ReduceOp::Max, v)
}

/// Shared scratch of the CTA-wide reductions: one slot per warp.
pub(crate) struct Red {
    pub(crate) h: SharedArray<F32>,
    pub(crate) l: SharedArray<F32>,
    pub(crate) f: SharedArray<U32>,
    warps: u32,
}

impl Red {
    pub(crate) fn new(b: &mut KernelBuilder, name: &str, warps: u32) -> Red {
        Red {
            h: b.shared_array::<F32>(&format!("{name}_h"), warps, 4),
            l: b.shared_array::<F32>(&format!("{name}_l"), warps, 4),
            f: b.shared_array::<U32>(&format!("{name}_f"), warps, 4),
            warps,
        }
    }
}

/// The contract's `max` over the CTA (every thread must call it; its
/// barrier orders the slots): NaN-ignoring, `+ 0`.
pub(crate) fn cta_fmax(b: &mut KernelBuilder, v: Reg<F32>, red: &Red) -> Reg<F32> {
    let v = warp_fmax(b, v);
    let tid = b.tid_x();
    let lane = b.and(tid, 31u32);
    let warp = b.shr(tid, 5u32);
    let lead = b.setp(Cmp::Eq, lane, 0u32);
    b.if_(lead, |b| {
        let p = b.shared_elem(&red.h, warp);
        b.st_shared(p, 0, v);
    });
    b.bar_sync();
    let mut m = b.ld_shared_at(&red.h, 0);
    for w in 1..red.warps {
        let x = b.ld_shared_at(&red.h, w);
        m = b.fmax(m, x);
    }
    b.fadd(RN, m, 0f32)
}

/// The contract's `pmax` over the CTA, and whether `flag` holds on any
/// thread.
pub(crate) fn cta_pmax(
    b: &mut KernelBuilder,
    x: DP,
    flag: Option<Reg<Pred>>,
    red: &Red,
) -> (DP, Option<Reg<Pred>>) {
    let x = warp_pmax(b, x);
    let any = flag.map(|f| b.vote(false, f, FULL));
    let tid = b.tid_x();
    let lane = b.and(tid, 31u32);
    let warp = b.shr(tid, 5u32);
    let lead = b.setp(Cmp::Eq, lane, 0u32);
    b.if_(lead, |b| {
        let p = b.shared_elem(&red.h, warp);
        b.st_shared(p, 0, x.h);
        let p = b.shared_elem(&red.l, warp);
        b.st_shared(p, 0, x.l);
        if let Some(a) = any {
            let v: Reg<U32> = b.selp(a, 1u32, 0u32);
            let p = b.shared_elem(&red.f, warp);
            b.st_shared(p, 0, v);
        }
    });
    b.bar_sync();
    let mut m = DP {
        h: b.ld_shared_at(&red.h, 0),
        l: b.ld_shared_at(&red.l, 0),
    };
    let mut f = any.map(|_| b.ld_shared_at(&red.f, 0));
    for w in 1..red.warps {
        let o = DP {
            h: b.ld_shared_at(&red.h, w),
            l: b.ld_shared_at(&red.l, w),
        };
        m = pmax2(b, m, o);
        if let Some(fv) = f {
            let o = b.ld_shared_at(&red.f, w);
            f = Some(b.or(fv, o));
        }
    }
    let flag = f.map(|fv| b.setp(Cmp::Ne, fv, 0u32));
    (canon(b, m), flag)
}

/// A compensated sum (`pair::Comp`) in loop-carried registers.
#[derive(Clone, Copy)]
pub(crate) struct DComp(pub(crate) DP);

impl DComp {
    pub(crate) fn new(b: &mut KernelBuilder) -> DComp {
        DComp(constant(b, 0.0, 0.0))
    }
    pub(crate) fn add(self, b: &mut KernelBuilder, x: Reg<F32>) {
        let x = of(b, x);
        let s = padd(b, self.0, x);
        assign(b, self.0, s);
    }
}

/// The three normalizer sums (`pair::Norm`).
#[derive(Clone, Copy)]
pub(crate) struct DNorm {
    pub(crate) maxima: DComp,
    pub(crate) amax: DComp,
    pub(crate) steps: DComp,
}

impl DNorm {
    pub(crate) fn new(b: &mut KernelBuilder) -> DNorm {
        DNorm {
            maxima: DComp::new(b),
            amax: DComp::new(b),
            steps: DComp::new(b),
        }
    }
    /// One step's terms added (each of `maxima`, then `amax` if any, then
    /// each of `steps`); the new [`value`](Self::value).
    pub(crate) fn add_step(
        self,
        b: &mut KernelBuilder,
        maxima: &[Reg<F32>],
        amax: Option<Reg<F32>>,
        steps: &[Reg<F32>],
    ) -> DP {
        for &x in maxima {
            self.maxima.add(b, x);
        }
        if let Some(x) = amax {
            self.amax.add(b, x);
        }
        for &x in steps {
            self.steps.add(b, x);
        }
        self.value(b)
    }
    /// `(maxima + amax) + steps`.
    pub(crate) fn value(self, b: &mut KernelBuilder) -> DP {
        let ab = padd(b, self.maxima.0, self.amax.0);
        padd(b, ab, self.steps.0)
    }
}

/// Mirror of `pair::plse` over `term(k)`, `k = 0 … n−1` (evaluated twice
/// per `k`, giving the same values): `(value, M, σ)`.
pub(crate) fn plse(
    b: &mut KernelBuilder,
    n: Reg<U32>,
    term: &dyn Fn(&mut KernelBuilder, Reg<U32>) -> DP,
) -> (DP, DP, Reg<F32>) {
    let m = constant(b, f32::NAN, 0.0);
    b.for_range(0u32, n, 1u32, |b, k| {
        let v = term(b, k);
        let nm = pmax2(b, m, v);
        assign(b, m, nm);
    });
    let m = canon(b, m);
    let sigma = b.mov(0f32);
    b.for_range(0u32, n, 1u32, |b, k| {
        let v = term(b, k);
        let d = psub(b, v, m);
        let e = pexp(b, d);
        let ns = b.fadd(RN, sigma, e);
        b.assign(sigma, ns);
    });
    let lg = math::log(b, sigma);
    let lg = of(b, lg);
    let v = padd(b, m, lg);
    let ninf = b.setp(Cmp::Eq, m.h, f32::NEG_INFINITY);
    let value = DP {
        h: b.selp(ninf, f32::NEG_INFINITY, v.h),
        l: b.selp(ninf, 0f32, v.l),
    };
    let sigma = b.selp(ninf, 1f32, sigma);
    (value, m, sigma)
}
