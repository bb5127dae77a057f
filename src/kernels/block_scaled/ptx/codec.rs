//! Device routines (DSL) of the block-scaled codecs, each the PTX twin of a
//! function of [`super::super::codec`]: the same integer compares, shifts and
//! selects on f32 bit patterns (software path, every SM), or the hardware
//! conversion of `sm_100a`/`sm_120a` where one exists
//! ([`Feature::BlockScaleCvt`]). The FP8
//! element and UE4M3 codecs are the FP8 family's
//! ([`crate::kernels::fp8::ptx`]).
//!
//! | routine | host twin | hardware form |
//! |---|---|---|
//! | [`e2m1_encode_pair`] | [`encode_e2m1`](super::super::encode_e2m1) ×2 | `cvt.rn.satfinite.e2m1x2.f32` |
//! | [`e2m1_decode_pair`] | [`decode_e2m1`](super::super::decode_e2m1) ×2 | `cvt.rn.f16x2.e2m1x2` |
//! | [`e8m0_floor`] | [`e8m0_floor`](super::super::e8m0_floor) | (integer on every SM) |
//! | [`ue8m0_round_up`] | [`ue8m0_round_up`](super::super::ue8m0_round_up) | `cvt.rp.satfinite.ue8m0x2.f32` |
//! | [`e8m0_inverse`] | [`e8m0_inverse`](super::super::e8m0_inverse) | (integer) |
//! | [`e8m0_decode`] | [`decode_e8m0`](super::super::decode_e8m0) | (integer) |
//! | [`ue4m3_encode`] / [`ue4m3_decode`] | [`encode_ue4m3`](super::super::encode_ue4m3) / [`decode_ue4m3`](super::super::decode_ue4m3) | the FP8 E4M3 cvts (sm_89+) |

use super::super::codec::{E2M1_NAN_BLOCK_CODE, E8M0_MAX, E8M0_NAN};
use crate::dsl::ir::Ue8m0Rounding;
use crate::dsl::types::{F32, Reg, U32};
use crate::dsl::{Cmp, KernelBuilder, Rounding};
use crate::kernels::fp8::Format as Fp8Format;
use crate::kernels::fp8::ptx::{self as fp8_ptx, Codec};
use crate::target::Feature;

/// f32 bits of +Inf; magnitude bits above it are NaNs.
const F32_INF_BITS: u32 = 0x7F80_0000;
/// The f32 bits a device NaN is built from (`fp8::CANONICAL_NAN`).
pub const NAN_BITS: u32 = 0x7FFF_FFFF;
/// f32 bits of 2^-127, the subnormal value of E8M0 byte 0 and the inverse
/// of byte `0xFE`.
const TWO_POW_M127_BITS: u32 = 0x0040_0000;

/// Whether `codec` uses the block-scale conversions on the builder's SM.
pub fn block_scale_hw(b: &KernelBuilder, codec: Codec) -> bool {
    codec == Codec::Hardware && b.sm().supports(Feature::BlockScaleCvt)
}

/// Software E2M1 encode of one value: the code in the low nibble of the
/// result, the steps of
/// [`encode_e2m1_branch_free`](super::super::codec::encode_e2m1_branch_free)
/// (`a = |y|`; `fma.rn(a, 2, 2^23)`, `add.rn(a, 2^23 + 2)`, `fma.rn(a,
/// 0.5, 2^23 + 4)` on the FP32 pipe; the `min.u32` of their bits and of
/// `2^23 + 7`; the sign from bit 31; NaN → `0x7`).
pub fn e2m1_encode_sw(b: &mut KernelBuilder, y: Reg<F32>) -> Reg<U32> {
    let a = b.fabs(y);
    let r1 = b.ffma(Rounding::Rn, a, 2.0f32, 8_388_608.0f32);
    let r2 = b.fadd(Rounding::Rn, a, 8_388_610.0f32);
    let r3 = b.ffma(Rounding::Rn, a, 0.5f32, 8_388_612.0f32);
    let r1 = b.f32_bits(r1);
    let r2 = b.f32_bits(r2);
    let r3 = b.f32_bits(r3);
    let m = b.min(r1, r2);
    let m = b.min(m, r3);
    let m = b.min(m, 0x4B00_0007u32);
    let mag = b.and(m, 0x7u32);
    let bits = b.f32_bits(y);
    let sign = b.shr(bits, 28u32);
    let sign = b.and(sign, 0x8u32);
    let code = b.or(mag, sign);
    let nan = b.setp(Cmp::Nan, y, y);
    b.selp(nan, u32::from(E2M1_NAN_BLOCK_CODE), code)
}

/// E2M1 encode of two values into one byte (`lo` in bits 3:0, `hi` in
/// bits 7:4), zero-extended into a u32: the hardware
/// `cvt.rn.satfinite.e2m1x2.f32` when `hw`, else [`e2m1_encode_sw`] twice.
pub fn e2m1_encode_pair(b: &mut KernelBuilder, hw: bool, hi: Reg<F32>, lo: Reg<F32>) -> Reg<U32> {
    if hw {
        let c = b.cvt_to_e2m1x2(hi, lo);
        b.b8_to_u32(c)
    } else {
        let l = e2m1_encode_sw(b, lo);
        let h = e2m1_encode_sw(b, hi);
        let h = b.shl(h, 4u32);
        b.or(h, l)
    }
}

/// Software E2M1 decode of the nibble in bits 3:0 of `c` (higher bits
/// ignored): magnitude codes 2..7 are `((m >> 1) + 126) << 23 | (m & 1) <<
/// 22` (1, 1.5, 2, 3, 4, 6), code 1 is 0.5, code 0 is 0; bit 3 the sign.
pub fn e2m1_decode_sw(b: &mut KernelBuilder, c: Reg<U32>) -> Reg<F32> {
    let m = b.and(c, 0x7u32);
    let e = b.shr(m, 1u32);
    let e = b.add(e, 126u32);
    let e = b.shl(e, 23u32);
    let f = b.and(m, 1u32);
    let f = b.shl(f, 22u32);
    let normal = b.or(e, f);
    let is_half = b.setp(Cmp::Eq, m, 1u32);
    let mag = b.selp(is_half, 0x3F00_0000u32, normal);
    let is_zero = b.setp(Cmp::Eq, m, 0u32);
    let mag = b.selp(is_zero, 0u32, mag);
    let sign = b.and(c, 0x8u32);
    let sign = b.shl(sign, 28u32);
    let bits = b.or(mag, sign);
    b.f32_from_bits(bits)
}

/// Decode the two codes of the byte in bits 7:0 of `byte`: `[lo, hi]`
/// (bits 3:0, bits 7:4). Hardware: `cvt.rn.f16x2.e2m1x2` and two exact
/// f16 → f32 widenings.
pub fn e2m1_decode_pair(b: &mut KernelBuilder, hw: bool, byte: Reg<U32>) -> [Reg<F32>; 2] {
    if hw {
        let c = b.u32_to_b8(byte);
        let h2 = b.cvt_from_e2m1x2(c);
        let (l, h) = b.unpack_2x16(h2);
        [b.f16_to_f32(l), b.f16_to_f32(h)]
    } else {
        let hi = b.shr(byte, 4u32);
        [e2m1_decode_sw(b, byte), e2m1_decode_sw(b, hi)]
    }
}

/// The OCP `Floor` E8M0 byte of a block whose amax magnitude bits are
/// `amax_bits` (`e8m0_floor`): `max(e − emax, 0)` of the biased exponent
/// `e`, `0xFE` for +Inf, `0xFF` for NaN.
pub fn e8m0_floor(b: &mut KernelBuilder, amax_bits: Reg<U32>, emax: u32) -> Reg<U32> {
    let e = b.shr(amax_bits, 23u32);
    let e = b.max(e, emax);
    let byte = b.sub(e, emax);
    let inf = b.setp(Cmp::Eq, amax_bits, F32_INF_BITS);
    let byte = b.selp(inf, u32::from(E8M0_MAX), byte);
    let nan = b.setp(Cmp::Gt, amax_bits, F32_INF_BITS);
    b.selp(nan, u32::from(E8M0_NAN), byte)
}

/// `cvt.rp.satfinite.ue8m0x2.f32` of one value `s ≥ +0`
/// (`ue8m0_round_up`), as a byte in a u32. Software: `min(e + (f ≠ 0),
/// 254)` for a normal `s`, `f > 0x400000` for a subnormal, `0xFF` for NaN.
pub fn ue8m0_round_up(b: &mut KernelBuilder, hw: bool, s: Reg<F32>) -> Reg<U32> {
    if hw {
        let pair = b.cvt_to_ue8m0x2(Ue8m0Rounding::Rp, 0.0f32, s);
        let w = b.b16_to_u32(pair);
        return b.and(w, 0xFFu32);
    }
    let bits = b.f32_bits(s);
    let abs = b.and(bits, 0x7FFF_FFFFu32);
    let e = b.shr(abs, 23u32);
    let f = b.and(abs, 0x007F_FFFFu32);
    let has_f = b.setp(Cmp::Ne, f, 0u32);
    let up = b.selp(has_f, 1u32, 0u32);
    let normal = b.add(e, up);
    let normal = b.min(normal, u32::from(E8M0_MAX));
    let above_half = b.setp(Cmp::Gt, f, TWO_POW_M127_BITS);
    let sub = b.selp(above_half, 1u32, 0u32);
    let is_sub = b.setp(Cmp::Eq, e, 0u32);
    let byte = b.selp(is_sub, sub, normal);
    let nan = b.setp(Cmp::Gt, abs, F32_INF_BITS);
    b.selp(nan, u32::from(E8M0_NAN), byte)
}

/// The element multiplier `2^(127 − byte)` of an E8M0 byte
/// (`e8m0_inverse`): `(254 − byte) << 23`, 2^-127 (the subnormal
/// `0x00400000`) for `0xFE`, NaN for `0xFF`.
pub fn e8m0_inverse(b: &mut KernelBuilder, byte: Reg<U32>) -> Reg<F32> {
    let t = b.mov(254u32);
    let t = b.sub(t, byte);
    let bits = b.shl(t, 23u32);
    let is_max = b.setp(Cmp::Eq, byte, u32::from(E8M0_MAX));
    let bits = b.selp(is_max, TWO_POW_M127_BITS, bits);
    let is_nan = b.setp(Cmp::Eq, byte, u32::from(E8M0_NAN));
    let bits = b.selp(is_nan, NAN_BITS, bits);
    b.f32_from_bits(bits)
}

/// The value `2^(byte − 127)` of an E8M0 byte (`decode_e8m0`): `byte <<
/// 23`, 2^-127 for `0x00`, NaN for `0xFF`.
pub fn e8m0_decode(b: &mut KernelBuilder, byte: Reg<U32>) -> Reg<F32> {
    let bits = b.shl(byte, 23u32);
    let is_zero = b.setp(Cmp::Eq, byte, 0u32);
    let bits = b.selp(is_zero, TWO_POW_M127_BITS, bits);
    let is_nan = b.setp(Cmp::Eq, byte, u32::from(E8M0_NAN));
    let bits = b.selp(is_nan, NAN_BITS, bits);
    b.f32_from_bits(bits)
}

/// The UE4M3 byte of `s` (`encode_ue4m3`): the E4M3 encoding of `|s|`,
/// by the FP8 family's encoder (`cvt.rn.satfinite.e4m3x2.f32` with its
/// NaN canonicalisation, or the integer encoder).
pub fn ue4m3_encode(b: &mut KernelBuilder, codec: Codec, s: Reg<F32>) -> Reg<U32> {
    let bits = b.f32_bits(s);
    let abs = b.and(bits, 0x7FFF_FFFFu32);
    let a = b.f32_from_bits(abs);
    let w = fp8_ptx::encode1(b, Fp8Format::E4M3, codec, a);
    b.and(w, 0xFFu32)
}

/// The value of a UE4M3 byte (`decode_ue4m3`): E4M3 of `byte & 0x7F`.
pub fn ue4m3_decode(b: &mut KernelBuilder, codec: Codec, byte: Reg<U32>) -> Reg<F32> {
    let m = b.and(byte, 0x7Fu32);
    fp8_ptx::decode1(b, Fp8Format::E4M3, codec, m)
}
