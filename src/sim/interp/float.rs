//! Float helpers: `setp` comparisons and the approximate f32 functions.

use super::super::fp::F32_NAN;
use super::super::ir::{ApproxFn, Cmp};

pub(crate) fn fcmp(c: Cmp, x: f64, y: f64) -> bool {
    let nan = x.is_nan() || y.is_nan();
    match c {
        Cmp::Eq => !nan && x == y,
        Cmp::Ne => !nan && x != y,
        Cmp::Lt => !nan && x < y,
        Cmp::Le => !nan && x <= y,
        Cmp::Gt => !nan && x > y,
        Cmp::Ge => !nan && x >= y,
        Cmp::Equ => nan || x == y,
        Cmp::Neu => nan || x != y,
        Cmp::Ltu => nan || x < y,
        Cmp::Leu => nan || x <= y,
        Cmp::Gtu => nan || x > y,
        Cmp::Geu => nan || x >= y,
        Cmp::Num => !nan,
        Cmp::Nan => nan,
    }
}

/// Correctly rounded value of an approximate f32 function (specials per
/// PTX ISA §9.7.3: `ex2(−∞) = +0`, `lg2(±0) = −∞`, `lg2(x<0) = NaN`,
/// `rsqrt(±0) = ±∞`, `rcp(±0) = ±∞`, …; NaN results canonical).
pub fn approx(f: ApproxFn, ftz: bool, a: u32, b: u32) -> u32 {
    let flush = |x: f32| {
        if ftz && x.is_subnormal() {
            0.0f32.copysign(x)
        } else {
            x
        }
    };
    let (x, y) = (
        flush(f32::from_bits(a)) as f64,
        flush(f32::from_bits(b)) as f64,
    );
    let r: f64 = match f {
        ApproxFn::Ex2 => x.exp2(),
        ApproxFn::Lg2 => {
            if x == 0.0 {
                f64::NEG_INFINITY
            } else {
                x.log2()
            }
        }
        ApproxFn::Rsqrt => {
            if x == 0.0 {
                f64::INFINITY.copysign(x)
            } else {
                1.0 / x.sqrt()
            }
        }
        ApproxFn::Sqrt => x.sqrt(),
        ApproxFn::Rcp => 1.0 / x,
        ApproxFn::Div => x / y,
        ApproxFn::Sin => x.sin(),
        ApproxFn::Cos => x.cos(),
        ApproxFn::Tanh => x.tanh(),
    };
    let r = flush(r as f32);
    if r.is_nan() { F32_NAN } else { r.to_bits() }
}
