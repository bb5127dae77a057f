//! Scalar `cvt`: integer widths, int↔float with every rounding, float
//! narrowing and widening, f16/bf16.

use super::super::fp::{self, F32_NAN, Rnd};
use super::super::ir::CvtTy;
use super::{mask, sext};

pub(crate) fn f64_next_up(x: f64) -> f64 {
    if x.is_nan() || x == f64::INFINITY {
        return x;
    }
    if x == 0.0 {
        return f64::from_bits(1);
    }
    let b = x.to_bits();
    if x > 0.0 {
        f64::from_bits(b + 1)
    } else {
        f64::from_bits(b - 1)
    }
}

pub(crate) fn round_int_f64(x: f64, r: Rnd) -> f64 {
    match r {
        Rnd::Rn => x.round_ties_even(),
        Rnd::Rz => x.trunc(),
        Rnd::Rm => x.floor(),
        Rnd::Rp => x.ceil(),
    }
}

/// Scalar `cvt` (see the module docs for the rules).
pub fn cvt(
    d: CvtTy,
    s: CvtTy,
    rnd: Option<Rnd>,
    irnd: Option<Rnd>,
    sat: bool,
    ftz: bool,
    v: u64,
) -> u64 {
    let db = d.bits() as u8;
    let fin = |x: u64| {
        if d.signed() {
            sext(x, db) as u64
        } else {
            x & mask(db)
        }
    };
    // source value
    if s.is_int() && d.is_int() {
        let x: i128 = if s.signed() {
            sext(v, s.bits() as u8) as i128
        } else {
            (v & mask(s.bits() as u8)) as i128
        };
        let x = if sat {
            let (lo, hi) = int_range(d);
            x.clamp(lo, hi)
        } else {
            x
        };
        return fin(x as u64);
    }
    let srcf = |v: u64| -> f64 {
        match s {
            CvtTy::F32 => {
                let f = f32::from_bits(v as u32);
                (if ftz && f.is_subnormal() {
                    0.0f32.copysign(f)
                } else {
                    f
                }) as f64
            }
            CvtTy::F64 => f64::from_bits(v),
            CvtTy::F16 => fp::f16_to_f64(v as u16),
            CvtTy::Bf16 => f32::from_bits((v as u32 & 0xFFFF) << 16) as f64,
            _ => unreachable!(),
        }
    };
    if d.is_int() {
        let x = srcf(v);
        if x.is_nan() {
            return if s == CvtTy::F64 || db == 64 {
                fin(1u64 << (db - 1))
            } else {
                0
            };
        }
        let r = round_int_f64(x, irnd.unwrap_or(Rnd::Rz));
        let (lo, hi) = int_range(d);
        let val: i128 = if r <= lo as f64 {
            lo
        } else if r >= hi as f64 {
            hi
        } else {
            r as i128
        };
        return fin(val as u64);
    }
    // float destination
    let out_f32 = |f: f32| -> u64 {
        let f = if ftz && f.is_subnormal() {
            0.0f32.copysign(f)
        } else {
            f
        };
        let f = if sat {
            if f.is_nan() { 0.0 } else { f.clamp(0.0, 1.0) }
        } else {
            f
        };
        if f.is_nan() {
            F32_NAN as u64
        } else {
            f.to_bits() as u64
        }
    };
    if s.is_int() {
        let x: i128 = if s.signed() {
            sext(v, s.bits() as u8) as i128
        } else {
            (v & mask(s.bits() as u8)) as i128
        };
        let hi = x as f64;
        let lo = (x - hi as i128) as f64;
        let r = rnd.unwrap_or(Rnd::Rn);
        return match d {
            CvtTy::F32 => out_f32(fp::round_f32(hi, lo, r)),
            CvtTy::F64 => {
                let mut h = hi;
                let err = x - hi as i128;
                match r {
                    Rnd::Rn => {}
                    Rnd::Rz => {
                        if (err < 0 && h > 0.0) || (err > 0 && h < 0.0) {
                            h = if h > 0.0 {
                                -f64_next_up(-h)
                            } else {
                                f64_next_up(h)
                            };
                        }
                    }
                    Rnd::Rm => {
                        if err < 0 {
                            h = -f64_next_up(-h);
                        }
                    }
                    Rnd::Rp => {
                        if err > 0 {
                            h = f64_next_up(h);
                        }
                    }
                }
                let h = if sat { h.clamp(0.0, 1.0) } else { h };
                h.to_bits()
            }
            _ => unreachable!(),
        };
    }
    let x = srcf(v);
    match (d, s) {
        (CvtTy::F32, CvtTy::F32) | (CvtTy::F64, CvtTy::F64) => {
            let r = match irnd {
                Some(r) => round_int_f64(x, r),
                None => x,
            };
            if d == CvtTy::F32 {
                out_f32(r as f32)
            } else {
                let r = if sat {
                    if r.is_nan() { 0.0 } else { r.clamp(0.0, 1.0) }
                } else {
                    r
                };
                r.to_bits()
            }
        }
        (CvtTy::F32, CvtTy::F64) => {
            if x.is_nan() {
                return F32_NAN as u64;
            }
            let r = match (irnd, rnd.unwrap_or(Rnd::Rn)) {
                (Some(ir), _) => round_int_f64(x, ir) as f32,
                (None, Rnd::Rn) => x as f32,
                (None, r) => {
                    if x.is_infinite() || x == 0.0 {
                        x as f32
                    } else {
                        fp::round_f32(x, 0.0, r)
                    }
                }
            };
            out_f32(r)
        }
        (CvtTy::F32, CvtTy::F16) | (CvtTy::F32, CvtTy::Bf16) => out_f32(x as f32),
        (CvtTy::F64, _) => {
            if x.is_nan() {
                0x7FF8_0000_0000_0000 // canonical quiet NaN from a narrower NaN
            } else {
                x.to_bits()
            }
        }
        (CvtTy::F16, CvtTy::F32) => fp::f32_to_f16(x as f32, rnd.unwrap_or(Rnd::Rn), sat) as u64,
        (CvtTy::Bf16, CvtTy::F32) => fp::f32_to_bf16(x as f32, rnd.unwrap_or(Rnd::Rn)) as u64,
        _ => unreachable!("cvt {d:?} <- {s:?} is refused by the parser"),
    }
}

pub(crate) fn int_range(d: CvtTy) -> (i128, i128) {
    let b = d.bits();
    if d.signed() {
        (-(1i128 << (b - 1)), (1i128 << (b - 1)) - 1)
    } else {
        (0, (1i128 << b) - 1)
    }
}
