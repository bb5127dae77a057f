//! Double-f32 log-weights (the contract's *pairs*) and the other small
//! primitives of [`super`]'s contract, as host functions; `ptx/pair.rs`
//! emits the same operations in the same order.
//!
//! A pair `(h, l)` stands for `h + l` with `h = fl(h + l)` (so
//! `|l| ≤ ulp(h)/2`). Sums and differences of pairs are exact up to a
//! rounding of the low part (a relative `2^−48` or so of the result), so
//! scores of any magnitude can be combined and compared without losing the
//! `O(1)` differences that decide the posteriors.

use crate::math::exp_f32;

/// A double-f32 value `h + l`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct P {
    pub(crate) h: f32,
    pub(crate) l: f32,
}

impl P {
    pub(crate) const NEG_INF: P = P {
        h: f32::NEG_INFINITY,
        l: 0.0,
    };
    pub(crate) fn of(h: f32) -> P {
        P { h, l: 0.0 }
    }
}

/// Knuth's two-sum: `a + b = s + e` exactly (finite `s`).
pub(crate) fn two_sum(a: f32, b: f32) -> (f32, f32) {
    let s = a + b;
    let z = s - a;
    (s, (a - (s - z)) + (b - z))
}

/// `x + y`: `s = x.h + y.h`; if `s` is infinite or NaN the result is
/// `(s, +0)`; else `lo = e + (x.l + y.l)` with `e` the two-sum error, and
/// `two_sum(s, lo)` renormalizes.
pub(crate) fn padd(x: P, y: P) -> P {
    let (s, e) = two_sum(x.h, y.h);
    let lo = e + (x.l + y.l);
    let (h, l) = two_sum(s, lo);
    if s.abs() < f32::INFINITY {
        P { h, l }
    } else {
        P { h: s, l: 0.0 }
    }
}

/// The shift `x ⊖ m`: `x` when `m.h = −inf`, else `x + (−m)`.
pub(crate) fn psub(x: P, m: P) -> P {
    if m.h == f32::NEG_INFINITY {
        x
    } else {
        padd(x, P { h: -m.h, l: -m.l })
    }
}

/// `x ⊖ m` of two f32s as a pair.
pub(crate) fn pshift(x: f32, m: f32) -> P {
    psub(P::of(x), P::of(m))
}

/// The larger pair: by `h` (a NaN `h` loses to anything), then by `l`;
/// `a` on a tie.
pub(crate) fn pmax2(a: P, b: P) -> P {
    let b_wins = b.h > a.h || a.h.is_nan() || (b.h == a.h && b.l > a.l);
    if b_wins { b } else { a }
}

/// The contract's pair maximum of a set (order-free; NaN when every `h`
/// is NaN), both parts `+ 0`.
pub(crate) fn pmax(v: impl Iterator<Item = P>) -> P {
    let m = v.fold(P::of(f32::NAN), pmax2);
    P {
        h: m.h + 0.0,
        l: m.l + 0.0,
    }
}

/// `exp(h + l)` as `fma(exp(h), l, exp(h))`.
pub(crate) fn pexp(x: P) -> f32 {
    let e = exp_f32(x.h);
    e.mul_add(x.l, e)
}

/// NaN-ignoring maximum with `−0 < +0` (PTX `max.f32`).
pub(crate) fn fmax(a: f32, b: f32) -> f32 {
    if a.is_nan() {
        b
    } else if b.is_nan() || a > b {
        a
    } else if b > a || a.is_sign_negative() {
        // Larger, or equal with `a` a −0.
        b
    } else {
        a
    }
}

/// The contract's `max` of f32s: NaN-ignoring (NaN when all are), then
/// `+ 0`.
pub(crate) fn max_of(v: impl Iterator<Item = f32>) -> f32 {
    v.fold(f32::NAN, fmax) + 0.0
}

/// The contract's exact log-sum of pair terms: `M = pmax(terms)`;
/// `(−inf, +0)` and `σ = 1` if `M.h = −inf`; else `σ = Σ pexp(term ⊖ M)`
/// (ascending, from `+0`) and the value `M + (log σ, +0)`. Returns
/// `(value, M, σ)`.
pub(crate) fn plse(terms: &[P]) -> (P, P, f32) {
    let m = pmax(terms.iter().copied());
    if m.h == f32::NEG_INFINITY {
        return (P::NEG_INF, m, 1.0);
    }
    let mut sigma = 0f32;
    for &t in terms {
        sigma += pexp(psub(t, m));
    }
    (padd(m, P::of(crate::math::log_f32(sigma))), m, sigma)
}

/// The contract's compensated sum `Σ̃`: a double-f32 running sum.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Comp {
    pub(crate) h: f32,
    pub(crate) l: f32,
}

impl Comp {
    pub(crate) fn add(&mut self, x: f32) {
        let p = padd(self.pair(), P::of(x));
        self.h = p.h;
        self.l = p.l;
    }
    pub(crate) fn pair(&self) -> P {
        P {
            h: self.h,
            l: self.l,
        }
    }
}

/// The normalizer sums of one pass: the emission maxima (and `Mpi`), the
/// transition maximum `Amax` once per step, and the pairs the recursion
/// normalizes by, each in its own [`Comp`] so that the large maxima of a
/// CRF cancel exactly without rounding the small normalizers.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Norm {
    pub(crate) maxima: Comp,
    pub(crate) amax: Comp,
    pub(crate) steps: Comp,
}

impl Norm {
    /// `(maxima + amax) + steps` as a pair.
    pub(crate) fn value(&self) -> P {
        padd(
            padd(self.maxima.pair(), self.amax.pair()),
            self.steps.pair(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_keep_small_differences_of_large_numbers() {
        // (−65536.3 + 0.2) − (−65536.1 + 0.2): the f32 sums round at
        // 2^−7, the pair is exact.
        let a = padd(P::of(-65536.3), P::of(0.2));
        let b = padd(P::of(-65536.1), P::of(0.2));
        let d = psub(a, b);
        let exact = (f64::from(-65536.3f32) - f64::from(-65536.1f32)) as f32;
        assert_eq!(d.h, exact);
        // A constant of 1e30 and back.
        let x = padd(padd(P::of(1e30), P::of(1.5)), P::of(-1e30));
        assert_eq!((x.h, x.l), (1.5, 0.0));
        // −inf and NaN.
        assert_eq!(padd(P::of(f32::NEG_INFINITY), P::of(3.0)), P::NEG_INF);
        assert!(
            padd(P::of(f32::NEG_INFINITY), P::of(f32::INFINITY))
                .h
                .is_nan()
        );
        assert_eq!(psub(P::of(2.0), P::NEG_INF), P::of(2.0));
    }

    #[test]
    fn pmax_ignores_nan_and_orders_zeros() {
        let v = [
            P::of(f32::NAN),
            P::of(-0.0),
            P::of(0.0),
            P { h: 0.0, l: -1e-9 },
        ];
        let m = pmax(v.iter().copied());
        assert_eq!((m.h.to_bits(), m.l.to_bits()), (0, 0));
        let r = pmax(v.iter().rev().copied());
        assert_eq!((r.h.to_bits(), r.l.to_bits()), (0, 0));
        assert!(pmax([P::of(f32::NAN)].into_iter()).h.is_nan());
        assert!(max_of([f32::NAN, f32::NAN].into_iter()).is_nan());
        assert_eq!(max_of([-0.0f32, 0.0].into_iter()).to_bits(), 0);
        assert_eq!(max_of([0.0f32, -0.0].into_iter()).to_bits(), 0);
        assert_eq!(max_of([f32::NAN, 1.0].into_iter()), 1.0);
    }

    #[test]
    fn compensated_sum_of_two_million_terms() {
        let mut c = Comp::default();
        let mut exact = 0f64;
        for k in 0..(1 << 21) {
            let x = 0.1f32 + (k % 7) as f32 * 0.01;
            c.add(x);
            exact += f64::from(x);
        }
        assert!((f64::from(c.h) - exact).abs() <= f64::from(c.h) * 2f64.powi(-24));
    }
}
