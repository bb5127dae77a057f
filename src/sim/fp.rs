//! Floating-point helpers of the simulator: exact directed rounding for
//! f32 results, f16/bf16 rounding, and FP8/FP4 codecs by nearest-code search.
//!
//! Everything here is written from the PTX semantics reference, not from
//! any host model: directed rounding uses an exact f64 double-word
//! representation of the infinitely precise result (TwoSum / exact f64
//! products / fma residuals), FP8/FP4 encoders search the code tables.

use std::sync::OnceLock;

/// Canonical f32 NaN written by every f32 arithmetic result that is NaN.
pub const F32_NAN: u32 = 0x7FFF_FFFF;
/// Canonical f16 NaN.
pub const F16_NAN: u16 = 0x7FFF;

/// IEEE rounding direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rnd {
    /// to nearest, ties to even
    Rn,
    /// toward zero
    Rz,
    /// toward −∞
    Rm,
    /// toward +∞
    Rp,
}

/// Next f32 toward +∞ (for finite, non-NaN input).
pub fn next_up(x: f32) -> f32 {
    if x.is_nan() || x == f32::INFINITY {
        return x;
    }
    if x == 0.0 {
        return f32::from_bits(1);
    }
    let b = x.to_bits();
    if x > 0.0 {
        f32::from_bits(b + 1)
    } else {
        f32::from_bits(b - 1)
    }
}

/// Next f32 toward −∞.
pub fn next_down(x: f32) -> f32 {
    -next_up(-x)
}

/// Error-free sum: `a + b == s + e` exactly (f64).
pub fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    let e = (a - (s - bb)) + (b - bb);
    (s, e)
}

/// Round the exact value `hi + lo` (|lo| ≤ ½ulp(hi), both finite f64) to
/// f32 with direction `rnd`. `hi` must be finite.
pub fn round_f32(hi: f64, lo: f64, rnd: Rnd) -> f32 {
    let r0 = hi as f32; // round to nearest (f64 -> f32 is correctly rounded)
    if rnd == Rnd::Rn {
        // double rounding: hi may sit exactly on an f32 midpoint with lo != 0
        if lo != 0.0 && r0.is_finite() {
            let up = next_up(r0) as f64;
            let dn = next_down(r0) as f64;
            let r = r0 as f64;
            if hi - r == (up - r) / 2.0 || hi - r == (dn - r) / 2.0 {
                // hi is a midpoint: the exact value lies on lo's side of it
                let other = if hi > r { up } else { dn };
                return if (lo > 0.0) == (other > r) {
                    other as f32
                } else {
                    r0
                };
            }
        }
        return r0;
    }
    if r0.is_infinite() {
        // |hi| >= overflow threshold of RN; directed modes may stay finite
        let pos = r0 > 0.0;
        return match (rnd, pos) {
            (Rnd::Rz, true) | (Rnd::Rm, true) => f32::MAX,
            (Rnd::Rz, false) | (Rnd::Rp, false) => -f32::MAX,
            _ => r0,
        };
    }
    // sign of exact - r0
    let err = (hi - r0 as f64) + lo;
    if err == 0.0 {
        return r0;
    }
    let res = match rnd {
        Rnd::Rz => {
            if r0 > 0.0 && err < 0.0 {
                next_down(r0)
            } else if r0 < 0.0 && err > 0.0 {
                next_up(r0)
            } else {
                r0
            }
        }
        Rnd::Rm => {
            if err < 0.0 {
                next_down(r0)
            } else {
                r0
            }
        }
        Rnd::Rp => {
            if err > 0.0 {
                next_up(r0)
            } else {
                r0
            }
        }
        Rnd::Rn => unreachable!(),
    };
    // a zero reached by stepping keeps the sign of the exact value
    if res == 0.0 {
        if hi < 0.0 || (hi == 0.0 && lo < 0.0) {
            -0.0
        } else {
            0.0
        }
    } else {
        res
    }
}

fn flush32(x: f32) -> f32 {
    if x.is_subnormal() {
        if x.is_sign_negative() { -0.0 } else { 0.0 }
    } else {
        x
    }
}

fn canon32(x: f32) -> u32 {
    if x.is_nan() { F32_NAN } else { x.to_bits() }
}

/// [`f32_op`] with `.rn` and neither `.ftz` nor `.sat` (the interpreter's
/// fast path; the same bits).
#[inline(always)]
pub fn f32_rn(op: FOp, a: u32, b: u32, c: u32) -> u32 {
    let (x, y) = (f32::from_bits(a), f32::from_bits(b));
    canon32(match op {
        FOp::Add => x + y,
        FOp::Sub => x - y,
        FOp::Mul => x * y,
        FOp::Fma => x.mul_add(y, f32::from_bits(c)),
        FOp::Div => x / y,
        FOp::Sqrt => x.sqrt(),
        FOp::Rcp => 1.0 / x,
    })
}

/// The float arithmetic families that take a rounding modifier (the
/// operation of [`f32_op`] and [`f32_rn`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FOp {
    /// `add`: a + b.
    Add,
    /// `sub`: a − b.
    Sub,
    /// `mul`: a · b.
    Mul,
    /// `fma`, and `mad` with a rounding modifier: a · b + c, rounded once.
    Fma,
    /// `div`: a / b.
    Div,
    /// `sqrt`: √a.
    Sqrt,
    /// `rcp`: 1 / a.
    Rcp,
}

/// Exact f32 arithmetic with rounding `rnd`; `ftz` flushes subnormal inputs
/// and (rounded) results to signed zero; `sat` clamps to [0, 1] with NaN →
/// +0. NaN results are canonical (`0x7FFFFFFF`).
pub fn f32_op(op: FOp, rnd: Rnd, ftz: bool, sat: bool, a: u32, b: u32, c: u32) -> u32 {
    let (mut x, mut y, mut z) = (f32::from_bits(a), f32::from_bits(b), f32::from_bits(c));
    if ftz {
        x = flush32(x);
        y = flush32(y);
        z = flush32(z);
    }
    let r: f32 = match (op, rnd) {
        (FOp::Add, Rnd::Rn) => x + y,
        (FOp::Sub, Rnd::Rn) => x - y,
        (FOp::Mul, Rnd::Rn) => x * y,
        (FOp::Fma, Rnd::Rn) => x.mul_add(y, z),
        (FOp::Div, Rnd::Rn) => x / y,
        (FOp::Sqrt, Rnd::Rn) => x.sqrt(),
        (FOp::Rcp, Rnd::Rn) => 1.0 / x,
        _ => {
            // special values: the RN result is exact (inf/nan/zero cases)
            let rn = match op {
                FOp::Add => x + y,
                FOp::Sub => x - y,
                FOp::Mul => x * y,
                FOp::Fma => x.mul_add(y, z),
                FOp::Div => x / y,
                FOp::Sqrt => x.sqrt(),
                FOp::Rcp => 1.0 / x,
            };
            let (xd, yd, zd) = (x as f64, y as f64, z as f64);
            let exact_pair = match op {
                FOp::Add | FOp::Sub => {
                    let yd = if op == FOp::Sub { -yd } else { yd };
                    if !x.is_finite() || !y.is_finite() {
                        None
                    } else if xd + yd == 0.0 {
                        // exact zero: sign per IEEE (−0 only under Rm, or both −0)
                        let neg = if x == 0.0 && yd == 0.0 {
                            (x.is_sign_negative() && yd.is_sign_negative())
                                || (rnd == Rnd::Rm && x.is_sign_negative() != yd.is_sign_negative())
                        } else {
                            rnd == Rnd::Rm
                        };
                        return if neg { 0x8000_0000 } else { 0 };
                    } else {
                        Some(two_sum(xd, yd))
                    }
                }
                FOp::Mul => {
                    if !x.is_finite() || !y.is_finite() || x == 0.0 || y == 0.0 {
                        None
                    } else {
                        Some((xd * yd, 0.0))
                    }
                }
                FOp::Fma => {
                    if !x.is_finite() || !y.is_finite() || !z.is_finite() {
                        None
                    } else {
                        let p = xd * yd; // exact
                        if p + zd == 0.0 {
                            // exact zero: IEEE sign rules
                            let pneg = x.is_sign_negative() != y.is_sign_negative();
                            let neg = if p == 0.0 && zd == 0.0 && pneg == z.is_sign_negative() {
                                pneg
                            } else {
                                rnd == Rnd::Rm
                            };
                            return if neg { 0x8000_0000 } else { 0 };
                        }
                        Some(two_sum(p, zd))
                    }
                }
                FOp::Div | FOp::Rcp => {
                    let (n, d) = if op == FOp::Rcp {
                        (1.0f64, xd)
                    } else {
                        (xd, yd)
                    };
                    if !n.is_finite() || !d.is_finite() || d == 0.0 || n == 0.0 {
                        None
                    } else {
                        let q = n / d;
                        let r = (-q).mul_add(d, n); // exact residual
                        Some((q, r / d))
                    }
                }
                FOp::Sqrt => {
                    if !x.is_finite() || x <= 0.0 {
                        None
                    } else {
                        let s = xd.sqrt();
                        let r = (-s).mul_add(s, xd);
                        Some((s, r / (2.0 * s)))
                    }
                }
            };
            match exact_pair {
                None => rn,
                Some((hi, lo)) => round_f32(hi, lo, rnd),
            }
        }
    };
    let mut r = if ftz { flush32(r) } else { r };
    if sat {
        if r.is_nan() {
            r = 0.0;
        } else {
            r = r.clamp(0.0, 1.0);
        }
    }
    canon32(r)
}

/// `min.f32` / `max.f32`: one NaN → the other input; both NaN → canonical
/// NaN (or any NaN → canonical NaN with `.NaN`); −0 < +0.
pub fn f32_minmax(is_max: bool, nan_mode: bool, ftz: bool, a: u32, b: u32) -> u32 {
    let (mut x, mut y) = (f32::from_bits(a), f32::from_bits(b));
    if ftz {
        x = flush32(x);
        y = flush32(y);
    }
    match (x.is_nan(), y.is_nan()) {
        (true, true) => return F32_NAN,
        (true, false) => return if nan_mode { F32_NAN } else { y.to_bits() },
        (false, true) => return if nan_mode { F32_NAN } else { x.to_bits() },
        _ => {}
    }
    if x == 0.0 && y == 0.0 {
        let neg = if is_max {
            x.is_sign_negative() && y.is_sign_negative()
        } else {
            x.is_sign_negative() || y.is_sign_negative()
        };
        return if neg { 0x8000_0000 } else { 0 };
    }
    let r = if is_max {
        if x > y { x } else { y }
    } else if x < y {
        x
    } else {
        y
    };
    r.to_bits()
}

/// Same rules for f64 (payload of a single NaN operand is irrelevant:
/// the other operand is returned).
pub fn f64_minmax(is_max: bool, a: u64, b: u64) -> u64 {
    let (x, y) = (f64::from_bits(a), f64::from_bits(b));
    match (x.is_nan(), y.is_nan()) {
        (true, true) => return 0x7FFF_FFFF_FFFF_FFFF,
        (true, false) => return b,
        (false, true) => return a,
        _ => {}
    }
    if x == 0.0 && y == 0.0 {
        let neg = if is_max {
            x.is_sign_negative() && y.is_sign_negative()
        } else {
            x.is_sign_negative() || y.is_sign_negative()
        };
        return if neg { 1 << 63 } else { 0 };
    }
    let r = if is_max {
        if x > y { x } else { y }
    } else if x < y {
        x
    } else {
        y
    };
    r.to_bits()
}

/// Round a finite f64 value `x` (exactly representable in f64) to a binary
/// format with `m` explicit mantissa bits and minimum normal exponent `emin`
/// (no overflow handling). Returns the rounded value as f64.
pub fn round_to_format(x: f64, m: i32, emin: i32, rnd: Rnd) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let e = (x.abs().log2().floor() as i32).max(emin);
    // fix possible off-by-one of log2 near powers of two
    let e = {
        let mut e = e;
        while e > emin && x.abs() < pow2(e) {
            e -= 1;
        }
        while x.abs() >= pow2(e + 1) {
            e += 1;
        }
        e
    };
    let q = pow2(e - m);
    let s = x / q; // exact (power-of-two scaling, no underflow in range used)
    let r = match rnd {
        Rnd::Rn => s.round_ties_even(),
        Rnd::Rz => s.trunc(),
        Rnd::Rm => s.floor(),
        Rnd::Rp => s.ceil(),
    };
    r * q
}

/// 2^e as f64 (|e| < 1000).
pub fn pow2(e: i32) -> f64 {
    if e >= -1022 {
        f64::from_bits(((e + 1023) as u64) << 52)
    } else {
        f64::from_bits(1u64 << (52 + (e + 1022)))
    }
}

/// Exact value of f16 bits.
pub fn f16_to_f64(h: u16) -> f64 {
    let s = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let e = ((h >> 10) & 0x1F) as i32;
    let m = (h & 0x3FF) as f64;
    if e == 0x1F {
        return if m == 0.0 {
            s * f64::INFINITY
        } else {
            f64::NAN
        };
    }
    if e == 0 {
        s * m * pow2(-24)
    } else {
        s * (1.0 + m / 1024.0) * pow2(e - 15)
    }
}

/// f16 bits of an exactly representable value (finite or ±inf).
fn f16_bits_of(v: f64) -> u16 {
    let sign: u16 = if v.is_sign_negative() { 0x8000 } else { 0 };
    let a = v.abs();
    if a == 0.0 {
        return sign;
    }
    if a.is_infinite() {
        return sign | 0x7C00;
    }
    if a < pow2(-14) {
        return sign | (a / pow2(-24)) as u16;
    }
    let mut e = a.log2().floor() as i32;
    while a < pow2(e) {
        e -= 1;
    }
    while a >= pow2(e + 1) {
        e += 1;
    }
    let m = ((a / pow2(e) - 1.0) * 1024.0) as u16;
    sign | (((e + 15) as u16) << 10) | m
}

/// `cvt.{rn,rz,rm,rp}{.satfinite}.f16.f32`.
pub fn f32_to_f16(x: f32, rnd: Rnd, satfinite: bool) -> u16 {
    if x.is_nan() {
        return F16_NAN;
    }
    let max = 65504.0f64;
    let v = x as f64;
    if v.is_infinite() {
        if satfinite {
            return f16_bits_of(max.copysign(v));
        }
        return f16_bits_of(v);
    }
    let r = round_to_format(v, 10, -14, rnd);
    if r.abs() > max {
        // overflow: RN/directed-away → inf, directed-toward → max
        let to_inf = match rnd {
            Rnd::Rn => true,
            Rnd::Rz => false,
            Rnd::Rm => r < 0.0,
            Rnd::Rp => r > 0.0,
        };
        if satfinite || !to_inf {
            return f16_bits_of(max.copysign(v));
        }
        return f16_bits_of(f64::INFINITY.copysign(v));
    }
    f16_bits_of(if r == 0.0 { 0.0f64.copysign(v) } else { r })
}

/// `cvt.f32.f16`: exact; NaN → canonical f32 NaN.
pub fn f16_to_f32(h: u16) -> u32 {
    let v = f16_to_f64(h);
    if v.is_nan() {
        F32_NAN
    } else {
        (v as f32).to_bits()
    }
}

/// `cvt.rn.bf16.f32` (RNE, overflow → inf, NaN → 0x7FFF).
pub fn f32_to_bf16(x: f32, rnd: Rnd) -> u16 {
    if x.is_nan() {
        return 0x7FFF;
    }
    if x.is_infinite() {
        return (x.to_bits() >> 16) as u16;
    }
    let r = round_to_format(x as f64, 7, -126, rnd);
    let maxbf = f32::from_bits(0x7F7F_0000) as f64;
    let rf = if r.abs() > maxbf {
        let to_inf = match rnd {
            Rnd::Rn => true,
            Rnd::Rz => false,
            Rnd::Rm => r < 0.0,
            Rnd::Rp => r > 0.0,
        };
        if to_inf {
            f32::INFINITY.copysign(x)
        } else {
            (maxbf as f32).copysign(x)
        }
    } else if r == 0.0 {
        0.0f32.copysign(x)
    } else {
        r as f32
    };
    (rf.to_bits() >> 16) as u16
}

/// `cvt.{rz,rp}.satfinite.ue8m0x2.f32` of one f32: a UE8M0 byte `b`
/// (value 2^(b−127), `b` in 0..=254; `0xFF` is NaN; no zero, no sign).
///
/// * `.rz` gives the largest power of two ≤ |x|, `.rp` the smallest ≥ |x|
///   (`rnd` is [`Rnd::Rz`] or [`Rnd::Rp`]; the decoder admits no other; any
///   other value is treated as `.rz`).
/// * `.satfinite`: NaN → `0xFF`; results above 2^127 (|x| > 2^127 under
///   `.rp`, and ±Inf) → `0xFE`.
/// * Results below 2^-127 (|x| < 2^-127 under `.rz`, ±0 under both) →
///   `0x00`, the smallest scale (*Interp*: the ISA text we have does not
///   spell out underflow; 2^-127 is the nearest representable value in the
///   rounding direction for `.rp`, and the clamp mirrors `.satfinite` for
///   `.rz`).
/// * The sign is ignored: UE8M0 has none, so the byte encodes |x|
///   (*Interp*, unverified on hardware; the library only converts
///   non-negative amax-derived values).
///
/// UE8M0 shares f32's exponent bias (127), so for a normal f32 the `.rz`
/// result is its biased exponent field, and `.rp` adds one when the
/// significand is not exactly 1.
pub fn ue8m0_satfinite(x: f32, rnd: Rnd) -> u8 {
    if x.is_nan() {
        return 0xFF;
    }
    let bits = x.to_bits() & 0x7FFF_FFFF;
    let (e, m) = (bits >> 23, bits & 0x7F_FFFF);
    if e == 0xFF {
        return 0xFE; // ±Inf
    }
    let up = rnd == Rnd::Rp;
    if e == 0 {
        // ±0 or subnormal m·2^-149; 2^-127 is m = 0x40_0000
        return u8::from(up && m > 0x40_0000);
    }
    let b = e + u32::from(up && m != 0);
    b.min(0xFE) as u8
}

/// `cvt.rn.bf16x2.ue8m0x2` of one UE8M0 byte to bf16 bits (exact):
/// 2^(b−127) for `b` in 1..=254 is the bf16 with exponent field `b`;
/// `0x00` (2^-127) is the bf16 subnormal `0x0040`; `0xFF` (NaN) → `0x7FFF`
/// (*Interp*: the canonical NaN this simulator uses for bf16).
pub fn ue8m0_to_bf16(b: u8) -> u16 {
    match b {
        0xFF => 0x7FFF,
        0 => 0x0040,
        b => u16::from(b) << 7,
    }
}

/// The mini-float formats of `cvt` (FP8 and FP4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MiniFmt {
    /// FP8 `e4m3`: 4 exponent bits (bias 7), 3 mantissa bits, no
    /// infinities; NaN is `0x7F`/`0xFF`.
    E4M3,
    /// FP8 `e5m2`: 5 exponent bits (bias 15), 2 mantissa bits, with
    /// infinities and NaNs as in IEEE.
    E5M2,
    /// FP4 `e2m1`: 2 exponent bits (bias 1), 1 mantissa bit, no infinities
    /// or NaNs (largest magnitude 6.0).
    E2M1,
}

impl MiniFmt {
    fn bits(self) -> u32 {
        match self {
            MiniFmt::E2M1 => 4,
            _ => 8,
        }
    }

    /// Exact value of `code` (sign included); NaN for NaN codes, ±inf for
    /// e5m2 infinities.
    pub fn decode(self, code: u8) -> f64 {
        let (ebits, mbits, bias) = match self {
            MiniFmt::E4M3 => (4, 3, 7),
            MiniFmt::E5M2 => (5, 2, 15),
            MiniFmt::E2M1 => (2, 1, 1),
        };
        let nb = self.bits();
        let code = code as u32 & ((1 << nb) - 1);
        let sign = if code >> (nb - 1) & 1 == 1 { -1.0 } else { 1.0 };
        let e = (code >> mbits) & ((1 << ebits) - 1);
        let m = code & ((1 << mbits) - 1);
        match self {
            MiniFmt::E4M3 if e == 15 && m == 7 => return f64::NAN,
            MiniFmt::E5M2 if e == 31 => {
                return if m == 0 {
                    sign * f64::INFINITY
                } else {
                    f64::NAN
                };
            }
            _ => {}
        }
        let mf = m as f64 / (1u32 << mbits) as f64;
        if e == 0 {
            sign * mf * pow2(1 - bias)
        } else {
            sign * (1.0 + mf) * pow2(e as i32 - bias)
        }
    }

    /// The non-negative finite codes with their values, ascending.
    fn table(self) -> &'static [(u8, f64)] {
        static T: [OnceLock<Vec<(u8, f64)>>; 3] =
            [OnceLock::new(), OnceLock::new(), OnceLock::new()];
        let idx = self as usize;
        T[idx].get_or_init(|| {
            let half = 1u32 << (self.bits() - 1);
            let mut v: Vec<(u8, f64)> = (0..half)
                .map(|c| (c as u8, self.decode(c as u8)))
                .filter(|(_, x)| x.is_finite())
                .collect();
            v.sort_by(|a, b| a.1.partial_cmp(&b.1).unwrap());
            v
        })
    }

    /// `cvt.rn.satfinite` of one f32: nearest code (ties → even mantissa
    /// LSB), |x| > max-normal and ±inf → ±max-normal, −0 (and negative
    /// values that round to zero) → sign-only code (`0x80`, e2m1 `0x8`;
    /// *Interp* for e2m1: undocumented, libraries disagree).
    /// NaN → `0x7F` for e4m3 and e5m2 (Interp: e5m2 canonical NaN chosen
    /// as 0x7F, matching NVIDIA's host `__nv_cvt_float_to_fp8`), +6.0
    /// (`0x7`) for e2m1 (PTX ISA: `.satfinite` turns NaN into positive
    /// MAX_NORM for formats without NaN; `cuda_fp4.h` says the same).
    pub fn encode_satfinite(self, x: f32) -> u8 {
        let nb = self.bits();
        let sign_bit: u8 = 1 << (nb - 1);
        if x.is_nan() {
            return match self {
                MiniFmt::E2M1 => 0x7,
                _ => 0x7F,
            };
        }
        let s = if x.is_sign_negative() { sign_bit } else { 0 };
        let a = (x as f64).abs();
        let t = self.table();
        let (max_code, max_val) = *t.last().unwrap();
        if a >= max_val {
            return s | max_code;
        }
        // first entry >= a
        let i = t.partition_point(|&(_, v)| v < a);
        let (hc, hv) = t[i];
        if hv == a || i == 0 {
            return s | hc;
        }
        let (lc, lv) = t[i - 1];
        let dl = a - lv;
        let dh = hv - a;
        let c = if dl < dh {
            lc
        } else if dh < dl {
            hc
        } else if lc & 1 == 0 {
            lc
        } else {
            hc
        };
        s | c
    }

    /// Decode a code to f16 bits (exact; NaN → 0x7FFF).
    pub fn to_f16(self, code: u8) -> u16 {
        let v = self.decode(code);
        if v.is_nan() {
            return F16_NAN;
        }
        f16_bits_of(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(b: u32) -> f32 {
        f32::from_bits(b)
    }

    #[test]
    fn directed_add() {
        let one = 1.0f32.to_bits();
        let tiny = f32::from_bits(1).to_bits(); // smallest subnormal
        assert_eq!(f32_op(FOp::Add, Rnd::Rn, false, false, one, tiny, 0), one);
        assert_eq!(f32_op(FOp::Add, Rnd::Rz, false, false, one, tiny, 0), one);
        assert_eq!(f32_op(FOp::Add, Rnd::Rm, false, false, one, tiny, 0), one);
        assert_eq!(
            f32_op(FOp::Add, Rnd::Rp, false, false, one, tiny, 0),
            0x3F80_0001
        );
        let mone = (-1.0f32).to_bits();
        assert_eq!(
            f32_op(FOp::Add, Rnd::Rz, false, false, mone, tiny, 0),
            0xBF7F_FFFF
        );
        assert_eq!(f32_op(FOp::Add, Rnd::Rm, false, false, mone, tiny, 0), mone);
        // x + (-x) = -0 under rm, +0 otherwise
        assert_eq!(
            f32_op(FOp::Add, Rnd::Rm, false, false, one, mone, 0),
            0x8000_0000
        );
        assert_eq!(f32_op(FOp::Add, Rnd::Rp, false, false, one, mone, 0), 0);
        // overflow
        let max = f32::MAX.to_bits();
        assert_eq!(f32_op(FOp::Add, Rnd::Rz, false, false, max, max, 0), max);
        assert_eq!(
            f32_op(FOp::Add, Rnd::Rp, false, false, max, max, 0),
            0x7F80_0000
        );
        assert_eq!(
            f32_op(FOp::Add, Rnd::Rn, false, false, max, max, 0),
            0x7F80_0000
        );
        assert_eq!(f32_op(FOp::Add, Rnd::Rm, false, false, max, max, 0), max);
    }

    #[test]
    fn directed_mul_div_sqrt_fma() {
        // 1/3: rn rounds down (0x3EAAAAAB is rn), check rz/rm = 0x3EAAAAAA, rp = ...AB
        let one = 1.0f32.to_bits();
        let three = 3.0f32.to_bits();
        assert_eq!(
            f32_op(FOp::Div, Rnd::Rn, false, false, one, three, 0),
            0x3EAA_AAAB
        );
        assert_eq!(
            f32_op(FOp::Div, Rnd::Rz, false, false, one, three, 0),
            0x3EAA_AAAA
        );
        assert_eq!(
            f32_op(FOp::Div, Rnd::Rm, false, false, one, three, 0),
            0x3EAA_AAAA
        );
        assert_eq!(
            f32_op(FOp::Div, Rnd::Rp, false, false, one, three, 0),
            0x3EAA_AAAB
        );
        assert_eq!(
            f32_op(FOp::Rcp, Rnd::Rz, false, false, three, 0, 0),
            0x3EAA_AAAA
        );
        // sqrt(2) = 1.41421356237..., rn = 0x3FB504F3 (rounded up), rz = ...F3? check
        let two = 2.0f32.to_bits();
        let rn = f32_op(FOp::Sqrt, Rnd::Rn, false, false, two, 0, 0);
        let rz = f32_op(FOp::Sqrt, Rnd::Rz, false, false, two, 0, 0);
        let rp = f32_op(FOp::Sqrt, Rnd::Rp, false, false, two, 0, 0);
        assert_eq!(rn, 2f32.sqrt().to_bits());
        assert_eq!(rp, rz + 1);
        assert!((f(rz) as f64) < 2f64.sqrt() && (f(rp) as f64) > 2f64.sqrt());
        // exact results are not moved
        let four = 4.0f32.to_bits();
        assert_eq!(f32_op(FOp::Sqrt, Rnd::Rp, false, false, four, 0, 0), two);
        // mul: (1+2^-23)^2 = 1 + 2^-22 + 2^-46 -> rz drops 2^-46, rp adds an ulp
        let a = 0x3F80_0001;
        assert_eq!(
            f32_op(FOp::Mul, Rnd::Rz, false, false, a, a, 0),
            0x3F80_0002
        );
        assert_eq!(
            f32_op(FOp::Mul, Rnd::Rp, false, false, a, a, 0),
            0x3F80_0003
        );
        // fma: a*a - (1+2^-22) = 2^-46 exactly
        assert_eq!(
            f32_op(FOp::Fma, Rnd::Rz, false, false, a, a, 0xBF80_0002),
            (2f32).powi(-46).to_bits()
        );
        // NaN canonical
        assert_eq!(
            f32_op(FOp::Sqrt, Rnd::Rn, false, false, (-1.0f32).to_bits(), 0, 0),
            F32_NAN
        );
        assert_eq!(
            f32_op(FOp::Add, Rnd::Rz, false, false, 0x7FC0_0001, one, 0),
            F32_NAN
        );
        // ftz flushes subnormal input and result
        assert_eq!(f32_op(FOp::Add, Rnd::Rn, true, false, 1, 1, 0), 0);
        assert_eq!(f32_op(FOp::Add, Rnd::Rn, false, false, 1, 1, 0), 2);
        // sat
        assert_eq!(f32_op(FOp::Add, Rnd::Rn, false, true, one, one, 0), one);
        assert_eq!(f32_op(FOp::Mul, Rnd::Rn, false, true, 0x7F80_0000, 0, 0), 0);
    }

    #[test]
    fn double_rounding_rn() {
        // 1 + 2^-24 + 2^-80 must round up to 1+2^-23 in RN
        let r = round_f32(1.0 + 2f64.powi(-24), 2f64.powi(-80), Rnd::Rn);
        assert_eq!(r.to_bits(), 0x3F80_0001);
        let r = round_f32(1.0 + 2f64.powi(-24), -2f64.powi(-80), Rnd::Rn);
        assert_eq!(r.to_bits(), 0x3F80_0000);
    }

    #[test]
    fn minmax() {
        let nan = 0x7FC0_0000;
        let snan = 0x7F80_0001;
        let one = 1.0f32.to_bits();
        assert_eq!(f32_minmax(false, false, false, nan, one), one);
        assert_eq!(f32_minmax(true, false, false, one, snan), one);
        assert_eq!(f32_minmax(true, false, false, nan, snan), F32_NAN);
        assert_eq!(f32_minmax(true, true, false, nan, one), F32_NAN);
        assert_eq!(f32_minmax(false, false, false, 0, 0x8000_0000), 0x8000_0000);
        assert_eq!(f32_minmax(true, false, false, 0x8000_0000, 0), 0);
    }

    #[test]
    fn f16_conversions() {
        assert_eq!(f32_to_f16(1.0, Rnd::Rn, false), 0x3C00);
        assert_eq!(f32_to_f16(65520.0, Rnd::Rn, false), 0x7C00);
        assert_eq!(f32_to_f16(65520.0, Rnd::Rz, false), 0x7BFF);
        assert_eq!(f32_to_f16(f32::INFINITY, Rnd::Rn, true), 0x7BFF);
        assert_eq!(f32_to_f16(f32::NAN, Rnd::Rn, false), F16_NAN);
        assert_eq!(f32_to_f16(-0.0, Rnd::Rn, false), 0x8000);
        assert_eq!(f32_to_f16(2f32.powi(-24), Rnd::Rn, false), 0x0001);
        assert_eq!(f32_to_f16(2f32.powi(-25), Rnd::Rn, false), 0x0000); // tie -> even 0
        assert_eq!(f32_to_f16(1.5 * 2f32.powi(-25), Rnd::Rn, false), 0x0001);
        assert_eq!(f16_to_f32(0x3C00), 1.0f32.to_bits());
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24).to_bits());
        assert_eq!(f16_to_f32(0xFC00), f32::NEG_INFINITY.to_bits());
        assert_eq!(f16_to_f32(0x7E01), F32_NAN);
        assert_eq!(f32_to_bf16(1.0, Rnd::Rn), 0x3F80);
        assert_eq!(f32_to_bf16(f32::from_bits(0x3F80_8000), Rnd::Rn), 0x3F80); // tie to even
        assert_eq!(f32_to_bf16(f32::from_bits(0x3F81_8000), Rnd::Rn), 0x3F82);
    }

    #[test]
    fn e4m3_encode_boundaries() {
        let e = |x: f32| MiniFmt::E4M3.encode_satfinite(x);
        assert_eq!(e(448.0), 0x7E);
        assert_eq!(e(464.0), 0x7E); // tie between 448 (0x7E) and 480 (n/a): saturate anyway
        assert_eq!(e(480.0), 0x7E);
        assert_eq!(e(f32::MAX), 0x7E);
        assert_eq!(e(f32::INFINITY), 0x7E);
        assert_eq!(e(f32::NEG_INFINITY), 0xFE);
        assert_eq!(e(-448.0), 0xFE);
        assert_eq!(e(f32::NAN), 0x7F);
        assert_eq!(e(0.0), 0x00);
        assert_eq!(e(-0.0), 0x80);
        assert_eq!(e(2f32.powi(-6)), 0x08); // min normal
        assert_eq!(e(2f32.powi(-9)), 0x01); // min subnormal
        assert_eq!(e(2f32.powi(-10)), 0x00); // tie -> even 0
        assert_eq!(e(-(2f32.powi(-10))), 0x80);
        assert_eq!(e(1.5 * 2f32.powi(-10)), 0x01);
        assert_eq!(e(7.5 * 2f32.powi(-9)), 0x08); // 7.5 * 2^-9: tie between 7 (odd) and 8 (=2^-6, even)
        assert_eq!(e(416.0), 0x7D); // exact code 1111.101
        assert_eq!(e(400.0), 0x7C); // midpoint of 384 (0x7C) and 416 (0x7D) -> even
    }

    #[test]
    fn e4m3_all_midpoints() {
        // every midpoint between adjacent positive codes goes to the even code
        let t = MiniFmt::E4M3.table();
        for w in t.windows(2) {
            let (lc, lv) = w[0];
            let (hc, hv) = w[1];
            let mid = ((lv + hv) / 2.0) as f32;
            assert_eq!(mid as f64, (lv + hv) / 2.0);
            let want = if lc & 1 == 0 { lc } else { hc };
            assert_eq!(MiniFmt::E4M3.encode_satfinite(mid), want, "mid {mid}");
            assert_eq!(MiniFmt::E4M3.encode_satfinite(-mid), want | 0x80);
            // just above / below the midpoint
            assert_eq!(MiniFmt::E4M3.encode_satfinite(next_up(mid)), hc);
            assert_eq!(MiniFmt::E4M3.encode_satfinite(next_down(mid)), lc);
        }
    }

    #[test]
    fn e5m2_and_e2m1() {
        let e = |x: f32| MiniFmt::E5M2.encode_satfinite(x);
        assert_eq!(e(57344.0), 0x7B);
        assert_eq!(e(f32::INFINITY), 0x7B);
        assert_eq!(e(f32::NEG_INFINITY), 0xFB);
        assert_eq!(e(61440.0), 0x7B);
        assert_eq!(e(1.0), 0x3C);
        assert_eq!(e(f32::NAN), 0x7F);
        assert_eq!(e(2f32.powi(-16)), 0x01);
        assert_eq!(e(2f32.powi(-17)), 0x00);
        let f4 = |x: f32| MiniFmt::E2M1.encode_satfinite(x);
        assert_eq!(f4(f32::NAN), 0x7);
        assert_eq!(f4(100.0), 0x7);
        assert_eq!(f4(-100.0), 0xF);
        assert_eq!(f4(5.0), 0x6); // tie 4 (0x6, even) vs 6 (0x7)
        assert_eq!(f4(2.5), 0x4); // tie 2 (0x4) vs 3 (0x5)
        assert_eq!(f4(0.25), 0x0); // tie 0 vs 0.5 -> 0
        assert_eq!(f4(0.75), 0x2); // tie 0.5 (0x1) vs 1 (0x2)
        assert_eq!(f4(-0.0), 0x8);
    }

    #[test]
    fn all_256_decodes() {
        for c in 0u16..256 {
            let c8 = c as u8;
            let s = c8 & 0x80 != 0;
            // e4m3
            let h = MiniFmt::E4M3.to_f16(c8);
            let e = (c8 >> 3) & 0xF;
            let m = c8 & 7;
            if e == 15 && m == 7 {
                assert_eq!(h, F16_NAN);
            } else {
                let v = if e == 0 {
                    m as f64 * 2f64.powi(-9)
                } else {
                    (1.0 + m as f64 / 8.0) * 2f64.powi(e as i32 - 7)
                };
                let v = if s { -v } else { v };
                assert_eq!(f16_to_f64(h), v, "e4m3 {c8:#x}");
                assert_eq!(h & 0x8000 != 0, s);
            }
            // e5m2: exactly the upper byte of an f16 (except NaN canonical)
            let h = MiniFmt::E5M2.to_f16(c8);
            if (c8 & 0x7F) > 0x7C {
                assert_eq!(h, F16_NAN);
            } else {
                assert_eq!(h, (c8 as u16) << 8, "e5m2 {c8:#x}");
            }
        }
        let vals = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
        for c in 0u8..16 {
            let v = vals[(c & 7) as usize] * if c & 8 != 0 { -1.0 } else { 1.0 };
            let h = MiniFmt::E2M1.to_f16(c);
            assert_eq!(f16_to_f64(h), v);
            assert_eq!(h & 0x8000 != 0, c & 8 != 0);
        }
    }
}
