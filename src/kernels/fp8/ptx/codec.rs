//! The FP8 codecs as device code: the software codec's format constants
//! ([`SwSpec`]) and Rust model, and the emitters that encode and decode
//! one or four values with the hardware `cvt` or the integer codec.

use super::Codec;
use crate::dsl::types::{F32, Reg, U32};
use crate::dsl::{Cmp, Fp8Format, KernelBuilder, Rounding};
use crate::kernels::fp8::host::Format;

// ---------------------------------------------------------------------------
// Format constants of the software codec
// ---------------------------------------------------------------------------

/// The constants of the integer codec for one format, derived from the
/// exponent bias and the mantissa width exactly as
/// [`fp8::host`](crate::kernels::fp8::host) derives them (the unit tests
/// check them against the host codec).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwSpec {
    /// Exponent bias (7 or 15).
    pub bias: u32,
    /// Mantissa bits (3 or 2).
    pub mbits: u32,
    /// Largest finite magnitude code (`0x7E` or `0x7B`).
    pub max_code: u32,
    /// f32 bits of the largest finite value: `|x| ≥` this saturates.
    pub max_bits: u32,
    /// f32 bits of 2^(−bias−mbits), half the smallest subnormal: `|x| ≤`
    /// this gives ±0.
    pub zero_max_bits: u32,
    /// f32 bits of the smallest normal 2^(1−bias).
    pub min_normal_bits: u32,
    /// f32 bits of the smallest subnormal 2^(1−bias−mbits).
    pub sub_unit_bits: u32,
    /// Whether the all-ones exponent with a zero mantissa is ±Inf (E5M2).
    pub has_inf: bool,
    /// The smallest magnitude code that is a NaN (`0x7F` or `0x7D`).
    pub first_nan_code: u32,
}

impl SwSpec {
    /// The spec of `f`.
    pub const fn of(f: Format) -> SwSpec {
        let (bias, mbits, has_inf) = match f {
            Format::E4M3 => (7, 3, false),
            Format::E5M2 => (15, 2, true),
        };
        let ebits = 7 - mbits;
        let emax = (1 << ebits) - 1;
        let mmask = (1 << mbits) - 1;
        // E4M3: the top binade is finite except S.1111.111; E5M2: the top
        // binade is Inf (m = 0) and NaN.
        let (max_code, first_nan_code) = if has_inf {
            (((emax - 1) << mbits) | mmask, (emax << mbits) | 1)
        } else {
            ((emax << mbits) | (mmask - 1), (emax << mbits) | mmask)
        };
        // Largest finite value: 2^(e_top − bias) · (1 + m_top / 2^mbits).
        let top_e = max_code >> mbits;
        let top_m = max_code & mmask;
        let max_bits = ((top_e + 127 - bias) << 23) | (top_m << (23 - mbits));
        SwSpec {
            bias,
            mbits,
            max_code,
            max_bits,
            zero_max_bits: (127 - bias - mbits) << 23,
            min_normal_bits: (128 - bias) << 23,
            sub_unit_bits: (128 - bias - mbits) << 23,
            has_inf,
            first_nan_code,
        }
    }

    /// Exponent field width.
    pub const fn ebits(&self) -> u32 {
        7 - self.mbits
    }
    /// f32 mantissa bits the encoder drops.
    pub const fn drop_bits(&self) -> u32 {
        23 - self.mbits
    }
    /// `(127 − bias) << 23`: subtracting it from the f32 magnitude bits
    /// rebiases the exponent in place.
    pub const fn rebias(&self) -> u32 {
        (127 - self.bias) << 23
    }
    /// The subnormal shift is `sub_shift_base − e32` (see the host model).
    pub const fn sub_shift_base(&self) -> u32 {
        151 - self.bias - self.mbits
    }
}

/// `v >> s` rounded to nearest, ties to even, in the form the software
/// codec emits: `(v + (2^(s−1) − 1) + ((v >> s) & 1)) >> s`, for
/// `1 ≤ s ≤ 31` and `v + 2^(s−1) < 2^32`.
///
/// Equal to the host's compare form (`kept + (dropped > half || dropped ==
/// half && kept odd)`): write `v = kept · 2^s + dropped`. Adding
/// `half − 1 + lsb` to `dropped < 2^s` carries into `kept` exactly when
/// `dropped + half − 1 + lsb ≥ 2^s = 2 · half`, i.e. when `dropped > half`,
/// or `dropped = half` and `lsb = 1`; and it can carry at most once.
pub const fn rne_shr_model(v: u32, s: u32) -> u32 {
    let half = 1u32 << (s - 1);
    (v + (half - 1) + ((v >> s) & 1)) >> s
}

/// A Rust model of the emitted software encoder, instruction for
/// instruction (selects evaluated eagerly, shifts clamped like PTX), for
/// testing the algorithm without running PTX.
pub fn sw_encode_model(f: Format, x: f32) -> u8 {
    let s = SwSpec::of(f);
    let shr = |v: u32, n: u32| if n >= 32 { 0 } else { v >> n };
    let shl = |v: u32, n: u32| if n >= 32 { 0 } else { v << n };
    let rne_var = |v: u32, n: u32| {
        let half = shl(1, n.wrapping_sub(1));
        // bfe: the position is taken mod 256; past bit 31 it reads 0.
        let lsb = shr(v, n & 0xff) & 1;
        shr(v.wrapping_add(half.wrapping_sub(1)).wrapping_add(lsb), n)
    };
    let bits = x.to_bits();
    let sign = (bits >> 24) & 0x80;
    let abs = bits & 0x7FFF_FFFF;
    let normal = rne_var(abs.wrapping_sub(s.rebias()), s.drop_bits());
    let sig = (abs & 0x007F_FFFF) | 0x0080_0000;
    let sh = s.sub_shift_base().wrapping_sub(abs >> 23);
    let sub = rne_var(sig, sh);
    let mut mag = if abs < s.min_normal_bits { sub } else { normal };
    if abs <= s.zero_max_bits {
        mag = 0;
    }
    if abs >= s.max_bits {
        mag = s.max_code;
    }
    let code = sign | mag;
    (if abs > 0x7F80_0000 { 0x7F } else { code }) as u8
}

fn hw_format(f: Format) -> Fp8Format {
    match f {
        Format::E4M3 => Fp8Format::E4M3,
        Format::E5M2 => Fp8Format::E5M2,
    }
}

// ---------------------------------------------------------------------------
// Codec emitters
// ---------------------------------------------------------------------------

/// Emit the RNE shift by a constant `s` (see [`rne_shr_model`]).
fn rne_shr_const(b: &mut KernelBuilder, v: Reg<U32>, s: u32) -> Reg<U32> {
    let lsb = b.bfe(v, s, 1u32);
    let t = b.add(v, (1u32 << (s - 1)) - 1);
    let t = b.add(t, lsb);
    b.shr(t, s)
}

/// Emit the RNE shift by a register amount `s` (see [`rne_shr_model`]);
/// for amounts outside `1..=31` the result is meaningless but harmless
/// (PTX shifts clamp), and the callers discard it.
fn rne_shr_var(b: &mut KernelBuilder, v: Reg<U32>, s: Reg<U32>) -> Reg<U32> {
    let one = b.mov(1u32);
    let s_m1 = b.sub(s, 1u32);
    let half = b.shl(one, s_m1);
    let half_m1 = b.sub(half, 1u32);
    let lsb = b.bfe(v, s, 1u32);
    let t = b.add(v, half_m1);
    let t = b.add(t, lsb);
    b.shr(t, s)
}

/// The software encoder of one (already scaled) value: the code in the
/// low byte of the result. Mirrors `encode_spec` of the host model.
pub(crate) fn sw_encode(b: &mut KernelBuilder, f: Format, y: Reg<F32>) -> Reg<U32> {
    let s = SwSpec::of(f);
    // Step 1: sign to bit 7, magnitude bits.
    let bits = b.f32_bits(y);
    let sign = b.shr(bits, 24u32);
    let sign = b.and(sign, 0x80u32);
    let abs = b.and(bits, 0x7FFF_FFFFu32);
    // Normal candidate (step 6): rebias in place, drop mantissa bits (RNE).
    let rebased = b.sub(abs, s.rebias());
    let normal = rne_shr_const(b, rebased, s.drop_bits());
    // Subnormal candidate (step 5): the 24-bit significand shifted so one
    // unit is the smallest subnormal, RNE.
    let mant = b.and(abs, 0x007F_FFFFu32);
    let sig = b.or(mant, 0x0080_0000u32);
    let e32 = b.shr(abs, 23u32);
    let base = b.mov(s.sub_shift_base());
    let sh = b.sub(base, e32);
    let sub = rne_shr_var(b, sig, sh);
    let is_sub = b.setp(Cmp::Lt, abs, s.min_normal_bits);
    let mag = b.selp(is_sub, sub, normal);
    // Step 4: underflow to ±0.
    let is_zero = b.setp(Cmp::Le, abs, s.zero_max_bits);
    let mag = b.selp(is_zero, 0u32, mag);
    // Step 3: satfinite (Inf included).
    let is_sat = b.setp(Cmp::Ge, abs, s.max_bits);
    let mag = b.selp(is_sat, s.max_code, mag);
    let code = b.or(sign, mag);
    // Step 2: NaN → 0x7F, sign and payload dropped.
    let is_nan = b.setp(Cmp::Gt, abs, 0x7F80_0000u32);
    b.selp(is_nan, 0x7Fu32, code)
}

/// The software decoder of the code in the low byte of `code`. Mirrors
/// `decode_spec` of the host model (NaN codes give `0x7FFF_FFFF`).
pub(crate) fn sw_decode(b: &mut KernelBuilder, f: Format, code: Reg<U32>) -> Reg<F32> {
    let s = SwSpec::of(f);
    let emax = (1u32 << s.ebits()) - 1;
    let mmask = (1u32 << s.mbits) - 1;
    let sign = b.and(code, 0x80u32);
    let sign = b.shl(sign, 24u32);
    let e = b.bfe(code, s.mbits, s.ebits());
    let m = b.and(code, mmask);
    // Normal: rebias the exponent, move the mantissa to the top.
    let eb = b.add(e, 127 - s.bias);
    let eb = b.shl(eb, 23u32);
    let mb = b.shl(m, s.drop_bits());
    let normal = b.or(eb, mb);
    // Subnormal: m · unit, an exact f32 product.
    let mf = b.u32_to_f32(Rounding::Rn, m);
    let unit = b.mov(f32::from_bits(s.sub_unit_bits));
    let sf = b.fmul(Rounding::Rn, mf, unit);
    let sub = b.f32_bits(sf);
    let is_sub = b.setp(Cmp::Eq, e, 0u32);
    let mag = b.selp(is_sub, sub, normal);
    let bits = b.or(mag, sign);
    let is_top = b.setp(Cmp::Eq, e, emax);
    let bits = if s.has_inf {
        // E5M2: the top binade is ±Inf (m = 0) or NaN.
        let inf = b.or(sign, 0x7F80_0000u32);
        let m_zero = b.setp(Cmp::Eq, m, 0u32);
        let special = b.selp(m_zero, inf, 0x7FFF_FFFFu32);
        b.selp(is_top, special, bits)
    } else {
        // E4M3: only S.1111.111 is NaN.
        let m_all = b.setp(Cmp::Eq, m, mmask);
        let nan = b.pand(is_top, m_all);
        b.selp(nan, 0x7FFF_FFFFu32, bits)
    };
    b.f32_from_bits(bits)
}

/// Replace every byte of `w` that is a NaN code of `f` by `0x7F`. A byte's
/// magnitude `m = byte & 0x7F` is a NaN code iff `m ≥ first_nan_code`,
/// i.e. iff `m + (0x80 − first_nan_code)` has bit 7 set (no carry leaves
/// the byte: `m + 3 ≤ 0x82`).
fn canonicalize_nan_codes(b: &mut KernelBuilder, f: Format, w: Reg<U32>) -> Reg<U32> {
    let k = 0x80 - SwSpec::of(f).first_nan_code;
    let m = b.and(w, 0x7F7F_7F7Fu32);
    let t = b.add(m, k * 0x0101_0101);
    let top = b.and(t, 0x8080_8080u32);
    let ones = b.shr(top, 7u32);
    let full = b.mul_lo(ones, 0xFFu32); // 0xFF in each NaN byte
    // w ^ ((w ^ 0x7F..) & full): NaN bytes become 0x7F, others unchanged.
    let diff = b.xor(w, 0x7F7F_7F7Fu32);
    let diff = b.and(diff, full);
    b.xor(w, diff)
}

/// Encode four scaled values into one little-endian word (`y[0]` in the
/// low byte).
pub(crate) fn encode4(
    b: &mut KernelBuilder,
    f: Format,
    codec: Codec,
    y: [Reg<F32>; 4],
) -> Reg<U32> {
    match codec {
        Codec::Hardware => {
            // The first operand lands in bits 15:8.
            let p01 = b.cvt_to_fp8x2(hw_format(f), y[1], y[0]);
            let p23 = b.cvt_to_fp8x2(hw_format(f), y[3], y[2]);
            let w = b.pack_2x16(p01, p23);
            let w = b.b32_as_u32(w);
            canonicalize_nan_codes(b, f, w)
        }
        Codec::Software => {
            let c: Vec<Reg<U32>> = y.iter().map(|&v| sw_encode(b, f, v)).collect();
            // Byte 0 of each code into bytes 0..3 of the word.
            let lo = b.prmt(c[0], c[1], 0x0040u32);
            let hi = b.prmt(c[2], c[3], 0x0040u32);
            b.prmt(lo, hi, 0x5410u32)
        }
    }
}

/// Encode one scaled value; the code is the low byte of the result.
pub(crate) fn encode1(b: &mut KernelBuilder, f: Format, codec: Codec, y: Reg<F32>) -> Reg<U32> {
    match codec {
        Codec::Hardware => {
            let zero = b.mov(0.0f32);
            let p = b.cvt_to_fp8x2(hw_format(f), zero, y);
            let w = b.b16_to_u32(p);
            canonicalize_nan_codes(b, f, w)
        }
        Codec::Software => sw_encode(b, f, y),
    }
}

/// Decode the four codes of a little-endian word (byte 0 first).
pub(crate) fn decode4(
    b: &mut KernelBuilder,
    f: Format,
    codec: Codec,
    w: Reg<U32>,
) -> [Reg<F32>; 4] {
    match codec {
        Codec::Hardware => {
            let lo16 = b.u32_to_b16(w);
            let hi = b.shr(w, 16u32);
            let hi16 = b.u32_to_b16(hi);
            let mut out = Vec::with_capacity(4);
            for pair in [lo16, hi16] {
                // Bits 15:8 of the pair become the high f16.
                let h2 = b.cvt_from_fp8x2(hw_format(f), pair);
                let (l, h) = b.unpack_2x16(h2);
                out.push(b.f16_to_f32(l));
                out.push(b.f16_to_f32(h));
            }
            [out[0], out[1], out[2], out[3]]
        }
        Codec::Software => std::array::from_fn(|k| {
            let byte = b.bfe(w, 8 * k as u32, 8u32);
            sw_decode(b, f, byte)
        }),
    }
}

/// Decode the code in the low byte of `c`.
pub(crate) fn decode1(b: &mut KernelBuilder, f: Format, codec: Codec, c: Reg<U32>) -> Reg<F32> {
    match codec {
        Codec::Hardware => {
            let pair = b.u32_to_b16(c);
            let h2 = b.cvt_from_fp8x2(hw_format(f), pair);
            let (l, _h) = b.unpack_2x16(h2);
            b.f16_to_f32(l)
        }
        Codec::Software => sw_decode(b, f, c),
    }
}

#[cfg(test)]
mod tests;
