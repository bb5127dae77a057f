//! Scalar codecs of the block-scaled formats: the E2M1 element, the E8M0
//! scale (both scale rules) and the UE4M3 scale of NVFP4. Every function
//! is integer compares, shifts and selects on f32 bit patterns, one step
//! per rule of the [module contract](super), so a PTX software path can
//! repeat it instruction for instruction.

use crate::kernels::fp8;

/// f32 bits of +Inf; magnitude bits above it are NaNs.
const F32_INF_BITS: u32 = 0x7F80_0000;
/// f32 magnitude mask (clears the sign bit, PTX `and.b32`).
const F32_ABS_MASK: u32 = 0x7FFF_FFFF;

/// The E8M0 byte of a NaN scale.
pub const E8M0_NAN: u8 = 0xFF;
/// The largest finite E8M0 byte, 2^127; what saturation gives.
pub const E8M0_MAX: u8 = 0xFE;
/// The UE4M3 (E4M3) byte of a NaN scale.
pub const UE4M3_NAN: u8 = 0x7F;
/// What every E2M1 element of a NaN block holds: the code the saturating
/// E2M1 conversion gives a NaN input, `0x7` = +6.
pub const E2M1_NAN_BLOCK_CODE: u8 = 0x7;

/// `rn(1/6)`, the f32 `0x3E2AAAAB`: the E2M1 reciprocal of the RCeil rule
/// and of the NVFP4 block-scale product.
pub const INV_6: f32 = f32::from_bits(0x3E2A_AAAB);
/// `rn(1/448)`, the f32 `0x3B124925`.
pub const INV_448: f32 = f32::from_bits(0x3B12_4925);
/// `rn(1/57344)`, the f32 `0x37924925`.
pub const INV_57344: f32 = f32::from_bits(0x3792_4925);

/// f32 magnitude bits of the E2M1 decision points, ascending. The code
/// of `|x|` is the number of points it lies above, where a tie counts as
/// "above" exactly when the upper neighbour has the even code
/// (see [`encode_e2m1`]).
const E2M1_POINTS: [(u32, bool); 7] = [
    (0x3E80_0000, false), // 0.25: tie 0 | 0.5 → 0 (even)
    (0x3F40_0000, true),  // 0.75: tie 0.5 | 1 → 1 (code 2, even)
    (0x3FA0_0000, false), // 1.25: tie 1 | 1.5 → 1 (code 2)
    (0x3FE0_0000, true),  // 1.75: tie 1.5 | 2 → 2 (code 4)
    (0x4020_0000, false), // 2.5:  tie 2 | 3 → 2 (code 4)
    (0x4060_0000, true),  // 3.5:  tie 3 | 4 → 4 (code 6)
    (0x40A0_0000, false), // 5:    tie 4 | 6 → 4 (code 6)
];

/// The sixteen E2M1 values by code (bit 3 = sign; `0x8` is −0).
pub const E2M1_VALUES: [f32; 16] = [
    0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0,
];

/// Encodes `x` as E2M1 like `cvt.rn.satfinite.e2m1x2.f32` (one lane):
/// round to nearest, ties to even (decision points 0.25, 0.75, 1.25,
/// 1.75, 2.5, 3.5, 5), `|x| > 5` and ±Inf saturate to ±6, the sign is
/// kept (−0 and negative values that round to zero give `0x8`), and a NaN
/// of either sign gives `0x7` (+6, the satfinite result for NaN). The
/// result is in the low nibble.
///
/// This is the spec, written as seven compares against the decision
/// points; the kernels' software path computes the same codes with
/// [`encode_e2m1_branch_free`].
#[inline]
pub const fn encode_e2m1(x: f32) -> u8 {
    let bits = x.to_bits();
    let abs = bits & F32_ABS_MASK;
    if abs > F32_INF_BITS {
        return E2M1_NAN_BLOCK_CODE;
    }
    let mut code = 0u8;
    let mut i = 0;
    while i < E2M1_POINTS.len() {
        let (point, tie_goes_up) = E2M1_POINTS[i];
        if abs > point || (tie_goes_up && abs == point) {
            code += 1;
        }
        i += 1;
    }
    ((bits >> 28) as u8 & 0x8) | code
}

/// The steps of the kernels' software E2M1 encoder, equal to
/// [`encode_e2m1`] for every f32 (swept over all 2^32 inputs in
/// `tests/block_scaled_exhaustive.rs`), mostly on the FP32 pipe (three
/// fused roundings, then integer `min`s), where seven compares would take
/// the integer pipe:
/// * on each binade of the E2M1 grid the code is the magnitude `a = |x|`
///   rounded to that binade's spacing, ties to even, plus an offset:
///   `r1 = 2a` (spacing 0.5, codes 0–4 for `a ≤ 2`), `r2 = a + 2` (spacing
///   1, codes 4–6 on `[2, 4]`), `r3 = a/2 + 4` (spacing 2, codes 6–7
///   from 4 on). Each is one `fma.rn` (or `add.rn`) onto `2^23` (where the
///   ulp is 1, so the single rounding is the integer rounding, ties to
///   even; the even offsets keep the parity), and the code is in the low
///   bits of the result;
/// * the lines cross exactly at the binade edges (`2a ≤ a + 2` iff `a ≤
///   2`, `a + 2 ≤ a/2 + 4` iff `a ≤ 4`) and rounding is monotonic, so the
///   code is `min(r1, r2, r3, 7)` on the results' bits (u32: ±Inf, NaNs
///   and huge values are above `2^23 + 7` and saturate to 7);
/// * the sign from bit 31 to bit 3; NaN → `0x7`.
#[inline]
pub fn encode_e2m1_branch_free(x: f32) -> u8 {
    let a = x.abs();
    let r1 = a.mul_add(2.0, 8_388_608.0).to_bits();
    let r2 = (a + 8_388_610.0).to_bits();
    let r3 = a.mul_add(0.5, 8_388_612.0).to_bits();
    let mag = r1.min(r2).min(r3).min(0x4B00_0007) & 0x7;
    let code = mag | ((x.to_bits() >> 28) & 0x8);
    if x.is_nan() {
        E2M1_NAN_BLOCK_CODE
    } else {
        code as u8
    }
}

/// Decodes an E2M1 code (low nibble of `code`; the high nibble is
/// ignored) exactly: [`E2M1_VALUES`].
#[inline]
pub const fn decode_e2m1(code: u8) -> f32 {
    E2M1_VALUES[(code & 0xF) as usize]
}

/// The E8M0 scale of the OCP `Floor` rule (MX v1.0 §6.3): `floor(log2
/// amax) − emax_elem` from the exponent bits of `amax` (never `log2`),
/// clamped to [−127, 127], plus the bias 127. The sign of `amax` is
/// ignored. Specials: NaN → `0xFF`, ±Inf → `0xFE` (our choice, the same
/// byte `RCeil` gives), zero and every f32 subnormal → `0x00` (their
/// exponent is at most −127, so the clamp decides).
///
/// `emax_elem` is the element format's largest binade: 8 (E4M3), 15
/// (E5M2), 2 (E2M1). PTX: `and.b32`, `setp.gt.u32`/`setp.eq.u32` for the
/// specials, `shr.u32 23`, then `max.s32 (e − emax, 0)` on the biased
/// exponent (`e − emax ≤ 254 − emax < 255`, so only the low clamp acts).
#[inline]
pub const fn e8m0_floor(amax: f32, emax_elem: u32) -> u8 {
    let abs = amax.to_bits() & F32_ABS_MASK;
    if abs > F32_INF_BITS {
        return E8M0_NAN;
    }
    if abs == F32_INF_BITS {
        return E8M0_MAX;
    }
    // Biased exponent field; 0 for zero and subnormals, which stand for
    // an unbiased exponent of at most −127 and clamp to byte 0 anyway.
    let biased = abs >> 23;
    biased.saturating_sub(emax_elem) as u8
}

/// `cvt.rp.satfinite.ue8m0x2.f32` of one lane: the smallest power of two
/// `≥ s` as an E8M0 byte, `s > 2^127` and +Inf saturate to `0xFE`, NaN →
/// `0xFF`, and `s ≤ 2^-127` (zero and the subnormals up to `0x00400000`)
/// → `0x00`. Defined for `s ≥ +0` (the sign bit is ignored; RCeil never
/// passes a negative `s`).
///
/// Integer form (TE's `float_to_e8m0`): biased exponent `e`, mantissa
/// `f`; normal: `e + (f ≠ 0)` saturated at 254; subnormal: `1` if `f >
/// 0x400000` (`s > 2^-127`) else `0`.
#[inline]
pub const fn ue8m0_round_up(s: f32) -> u8 {
    let abs = s.to_bits() & F32_ABS_MASK;
    if abs > F32_INF_BITS {
        return E8M0_NAN;
    }
    let biased = abs >> 23;
    let mantissa = abs & 0x007F_FFFF;
    if biased == 0 {
        return (mantissa > 0x0040_0000) as u8;
    }
    if biased >= 0xFE {
        // 2^127 exactly stays 0xFE; above it, and Inf, saturate.
        return E8M0_MAX;
    }
    biased as u8 + (mantissa != 0) as u8
}

/// The E8M0 scale of the `RCeil` rule (cuBLAS, Transformer Engine):
/// `ue8m0_round_up(|amax| · inv_max)` with `inv_max = rn(1/max_elem)`
/// ([`INV_448`], [`INV_57344`], [`INV_6`]) and the product one
/// `mul.rn.f32`. NaN → `0xFF`; ±Inf → `0xFE`; zero → `0x00`.
#[inline]
pub fn e8m0_rceil(amax: f32, inv_max: f32) -> u8 {
    let abs = f32::from_bits(amax.to_bits() & F32_ABS_MASK);
    ue8m0_round_up(abs * inv_max)
}

/// The value of an E8M0 byte: `2^(b − 127)`; `0xFF` → NaN
/// ([`fp8::CANONICAL_NAN`]); `0x00` → 2^-127, the f32 subnormal
/// `0x00400000`; `0x01..=0xFE` → the normal `b << 23`.
#[inline]
pub const fn decode_e8m0(b: u8) -> f32 {
    match b {
        E8M0_NAN => fp8::CANONICAL_NAN,
        0 => f32::from_bits(0x0040_0000),
        _ => f32::from_bits((b as u32) << 23),
    }
}

/// The element multiplier of an E8M0 scale, `2^(127 − b)`: `0xFF` → NaN
/// (so every element of a NaN block converts a NaN), `0xFE` → 2^-127,
/// the f32 subnormal `0x00400000` (never 0: that was flashinfer PR
/// #4023's bug), `0x00..=0xFD` → the normal `(254 − b) << 23`.
#[inline]
pub const fn e8m0_inverse(b: u8) -> f32 {
    match b {
        E8M0_NAN => fp8::CANONICAL_NAN,
        E8M0_MAX => f32::from_bits(0x0040_0000),
        _ => f32::from_bits((254 - b as u32) << 23),
    }
}

/// Encodes a UE4M3 scale: the E4M3 encoding of `|x|`
/// ([`fp8::encode_e4m3`], i.e. `cvt.rn.satfinite.e4m3x2.f32` of a
/// non-negative value: PTX has no unsigned E4M3 conversion). RNE with
/// subnormals, saturation to 448 (`0x7E`), NaN → `0x7F`; the sign bit of
/// the result is always 0.
#[inline]
pub const fn encode_ue4m3(x: f32) -> u8 {
    fp8::encode_e4m3(f32::from_bits(x.to_bits() & F32_ABS_MASK))
}

/// Decodes a UE4M3 scale: the E4M3 value of `b & 0x7F` (the sign bit is
/// ignored); `0x7F` → NaN.
#[inline]
pub const fn decode_ue4m3(b: u8) -> f32 {
    fp8::decode_e4m3(b & 0x7F)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::fp::MiniFmt;

    #[test]
    fn reciprocal_constants_are_rounded_divisions() {
        assert_eq!(INV_6.to_bits(), (1.0f32 / 6.0).to_bits());
        assert_eq!(INV_448.to_bits(), (1.0f32 / 448.0).to_bits());
        assert_eq!(INV_57344.to_bits(), (1.0f32 / 57344.0).to_bits());
    }

    #[test]
    fn e2m1_decision_points_and_codes() {
        let cases: [(f32, u8); 15] = [
            (0.0, 0),
            (0.25, 0),
            (0.5, 1),
            (0.75, 2),
            (1.0, 2),
            (1.25, 2),
            (1.5, 3),
            (1.75, 4),
            (2.5, 4),
            (3.0, 5),
            (3.5, 6),
            (5.0, 6),
            (6.0, 7),
            (1e30, 7),
            (f32::INFINITY, 7),
        ];
        for (x, code) in cases {
            assert_eq!(encode_e2m1(x), code, "{x}");
            assert_eq!(encode_e2m1(-x), code | 8, "-{x}");
        }
        assert_eq!(encode_e2m1(f32::NAN), 0x7);
        assert_eq!(encode_e2m1(-f32::NAN), 0x7);
        for code in 0..16u8 {
            assert_eq!(encode_e2m1(decode_e2m1(code)), code);
        }
    }

    /// The simulator's independent table-search converter agrees on a
    /// dense sample around every decision point and a stride over all f32.
    #[test]
    fn e2m1_matches_simulator_converter() {
        let mut inputs: Vec<u32> = (0..=u32::MAX).step_by(65_521).collect();
        for (point, _) in E2M1_POINTS {
            inputs.extend(point - 64..=point + 64);
        }
        for bits in inputs {
            for b in [bits, bits | 0x8000_0000] {
                let x = f32::from_bits(b);
                assert_eq!(
                    encode_e2m1(x),
                    MiniFmt::E2M1.encode_satfinite(x),
                    "{b:#010x}"
                );
            }
        }
    }

    #[test]
    fn e8m0_special_bytes() {
        assert!(decode_e8m0(0xFF).is_nan());
        assert_eq!(decode_e8m0(0).to_bits(), 0x0040_0000);
        assert_eq!(decode_e8m0(127), 1.0);
        assert_eq!(decode_e8m0(0xFE), 2f32.powi(127));
        assert_eq!(e8m0_inverse(0xFE).to_bits(), 0x0040_0000);
        assert_eq!(e8m0_inverse(0), 2f32.powi(127));
        assert_eq!(e8m0_inverse(127), 1.0);
        assert!(e8m0_inverse(0xFF).is_nan());
        for b in 0..=0xFEu8 {
            // The product of a scale and its inverse is exactly 1.
            assert_eq!(decode_e8m0(b) as f64 * e8m0_inverse(b) as f64, 1.0, "{b}");
        }
    }

    #[test]
    fn ue8m0_round_up_edges() {
        assert_eq!(ue8m0_round_up(0.0), 0);
        assert_eq!(ue8m0_round_up(f32::from_bits(1)), 0);
        assert_eq!(ue8m0_round_up(f32::from_bits(0x0040_0000)), 0);
        assert_eq!(ue8m0_round_up(f32::from_bits(0x0040_0001)), 1);
        assert_eq!(ue8m0_round_up(f32::from_bits(0x0080_0000)), 1);
        assert_eq!(ue8m0_round_up(1.0), 127);
        assert_eq!(ue8m0_round_up(1.0000001), 128);
        assert_eq!(ue8m0_round_up(2f32.powi(127)), 0xFE);
        assert_eq!(ue8m0_round_up(f32::MAX), 0xFE);
        assert_eq!(ue8m0_round_up(f32::INFINITY), 0xFE);
        assert_eq!(ue8m0_round_up(f32::NAN), 0xFF);
    }

    #[test]
    fn floor_specials() {
        assert_eq!(e8m0_floor(0.0, 8), 0);
        assert_eq!(e8m0_floor(f32::from_bits(1), 2), 0);
        assert_eq!(e8m0_floor(448.0, 8), 127);
        assert_eq!(e8m0_floor(-448.0, 8), 127);
        assert_eq!(e8m0_floor(f32::MAX, 2), 252);
        assert_eq!(e8m0_floor(f32::INFINITY, 8), 0xFE);
        assert_eq!(e8m0_floor(f32::NAN, 8), 0xFF);
    }

    #[test]
    fn ue4m3_is_e4m3_of_the_magnitude() {
        assert_eq!(encode_ue4m3(448.0), 0x7E);
        assert_eq!(encode_ue4m3(-448.0), 0x7E);
        assert_eq!(encode_ue4m3(1e9), 0x7E);
        assert_eq!(encode_ue4m3(f32::NAN), 0x7F);
        assert_eq!(encode_ue4m3(2f32.powi(-10)), 0);
        assert_eq!(encode_ue4m3(2f32.powi(-9)), 1);
        assert_eq!(decode_ue4m3(0x80 | 0x38), 1.0);
        assert!(decode_ue4m3(0x7F).is_nan());
    }
}
