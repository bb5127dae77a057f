//! Conversions between f32 and the tensor cores' operand formats, as the
//! PTX `cvt` forms compute them (PTX ISA §9.7.10.24):
//!
//! * `cvt.rn.f16.f32` / `cvt.rn.f16x2.f32`: round to nearest, ties to even;
//!   overflow gives ±∞; subnormal results are kept.
//! * `cvt.rn.bf16.f32` / `cvt.rn.bf16x2.f32`: the same for bf16.
//! * `cvt.rna.tf32.f32`: round to nearest, ties **away** from zero, to 10
//!   fraction bits; the result is an f32 pattern with the low 13 bits zero.
//! * `cvt.f32.f16`, `cvt.f32.bf16`: exact.
//!
//! PTX promises only "a NaN" for a NaN input. These functions return one
//! canonical NaN per format, the patterns NVIDIA's host code writes:
//! [`CANONICAL_NAN_F16`] (`0x7FFF`, as `cuda_fp16.hpp`), `0x7FFF` for bf16,
//! [`CANONICAL_NAN_TF32`] for tf32, and [`super::CANONICAL_NAN`] for f32.

use super::CANONICAL_NAN;

/// The NaN `f32 → f16` and `f32 → bf16` return (`0x7FFF`).
pub const CANONICAL_NAN_F16: u16 = 0x7FFF;

/// The NaN `f32 → tf32` returns: `0x7FFF_E000` (every tf32 fraction bit
/// set, the 13 unread bits zero).
pub const CANONICAL_NAN_TF32: u32 = 0x7FFF_E000;

/// `mant · 2^-shift` rounded to nearest, ties to even.
fn shift_rne(mant: u64, shift: u32) -> u64 {
    if shift == 0 {
        return mant;
    }
    if shift > 63 {
        return 0; // mant < 2^24 is below half of 2^shift
    }
    let q = mant >> shift;
    let rem = mant & ((1 << shift) - 1);
    let half = 1 << (shift - 1);
    if rem > half || (rem == half && q & 1 == 1) {
        q + 1
    } else {
        q
    }
}

/// `cvt.rn.f16.f32`: f32 to IEEE binary16 bits, round to nearest even.
pub fn f32_to_f16_rn(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let abs = bits & 0x7FFF_FFFF;
    if abs > 0x7F80_0000 {
        return CANONICAL_NAN_F16;
    }
    let biased = (abs >> 23) as i32;
    if biased == 0xFF || biased - 127 > 15 {
        return sign | 0x7C00; // ±∞, or |x| ≥ 2^16
    }
    let (mant, exp) = if biased == 0 {
        (u64::from(abs), -126) // f32 subnormal
    } else {
        (u64::from(abs & 0x7F_FFFF) | (1 << 23), biased - 127)
    };
    if exp >= -14 {
        // normal f16 unless rounding carries: q in [2^10, 2^11]
        let q = shift_rne(mant, 13);
        // adding lets a carry into bit 10 raise the exponent (to ∞ at 31)
        sign | ((((exp + 15) as u32) << 10) + (q as u32 - 0x400)) as u16
    } else {
        // subnormal grid 2^-24: q = mant · 2^(exp − 23 + 24)
        let q = shift_rne(mant, (-1 - exp) as u32);
        sign | q as u16 // q = 2^10 is the smallest normal's pattern
    }
}

/// `cvt.rn.bf16.f32`: f32 to bfloat16 bits, round to nearest even.
pub fn f32_to_bf16_rn(x: f32) -> u16 {
    let bits = x.to_bits();
    if bits & 0x7FFF_FFFF > 0x7F80_0000 {
        return CANONICAL_NAN_F16;
    }
    // ties to even on the low 16 bits; a carry may reach ∞, as it should
    let rounded = bits + 0x7FFF + ((bits >> 16) & 1);
    (rounded >> 16) as u16
}

/// `cvt.rna.tf32.f32`: f32 to tf32 (an f32 pattern with the low 13 bits
/// zero), round to nearest, ties away from zero.
pub fn f32_to_tf32_rna(x: f32) -> u32 {
    let bits = x.to_bits();
    if bits & 0x7FFF_FFFF > 0x7F80_0000 {
        return CANONICAL_NAN_TF32;
    }
    // adding half an ulp to the magnitude rounds ties away; ∞ stays ∞ and
    // the largest values round up to it
    (bits + 0x1000) & 0xFFFF_E000
}

/// `cvt.rn.f16x2.f32 d, a, b`: `a` in the upper half, `b` in the lower.
pub fn cvt_rn_f16x2_f32(a: f32, b: f32) -> u32 {
    (u32::from(f32_to_f16_rn(a)) << 16) | u32::from(f32_to_f16_rn(b))
}

/// `cvt.rn.bf16x2.f32 d, a, b`: `a` in the upper half, `b` in the lower.
pub fn cvt_rn_bf16x2_f32(a: f32, b: f32) -> u32 {
    (u32::from(f32_to_bf16_rn(a)) << 16) | u32::from(f32_to_bf16_rn(b))
}

/// `cvt.f32.f16`: exact; a NaN gives [`CANONICAL_NAN`].
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exp = u32::from((h >> 10) & 0x1F);
    let frac = u32::from(h & 0x3FF);
    let bits = match (exp, frac) {
        (0x1F, 0) => sign | 0x7F80_0000,
        (0x1F, _) => CANONICAL_NAN,
        (0, 0) => sign,
        (0, f) => {
            // subnormal f · 2^-24: normalise (f < 2^10)
            let top = 31 - f.leading_zeros(); // leading bit position, 0..=9
            let e = top as i32 - 24; // value exponent
            sign | (((e + 127) as u32) << 23) | ((f << (23 - top)) & 0x7F_FFFF)
        }
        (e, f) => sign | ((e + 112) << 23) | (f << 13),
    };
    f32::from_bits(bits)
}

/// `cvt.f32.bf16`: exact; a NaN gives [`CANONICAL_NAN`].
pub fn bf16_to_f32(h: u16) -> f32 {
    let bits = u32::from(h) << 16;
    if bits & 0x7FFF_FFFF > 0x7F80_0000 {
        return f32::from_bits(CANONICAL_NAN);
    }
    f32::from_bits(bits)
}

/// The f32 value a tensor core reads from a tf32 operand: the low 13 bits
/// dropped (so a NaN whose payload lies only there reads as ∞); a NaN gives
/// [`CANONICAL_NAN`].
pub fn tf32_to_f32(t: u32) -> f32 {
    let bits = t & 0xFFFF_E000;
    if bits & 0x7FFF_FFFF > 0x7F80_0000 {
        return f32::from_bits(CANONICAL_NAN);
    }
    f32::from_bits(bits)
}
