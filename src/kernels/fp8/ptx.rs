//! PTX generators for the FP8 kernels of [`super`].
//!
//! Six kernels, each generated per SM:
//!
//! | kernel | what it does |
//! |---|---|
//! | [`ABSMAX_PARTIALS`] | grid of blocks; each block folds `max.f32` over `\|x\|` (sign bit cleared on the integer bits) with a grid-stride loop, reduces across the block (warp butterfly shuffles, then shared memory) and writes one partial per block |
//! | `fp8_absmax_finalize_<fmt>` | one block reduces the partials and writes `stats = [amax, scale, scale_inv]` (scale rule of [`super::host`], `div.rn`) |
//! | `fp8_quantize_<fmt>` | `codes[i] = encode(x[i] · stats[1])`, the scale read from the device buffer the finalize kernel wrote (no host round trip) |
//! | `fp8_quantize_scaled_<fmt>` | the same with a caller-given `scale` parameter (delayed scaling) |
//! | `fp8_dequantize_<fmt>` | `y[i] = decode(codes[i]) · scale_inv` |
//! | `fp8_dequantize_stats_<fmt>` | the same with `scale_inv = stats[2]` read from the device buffer a quantize wrote (quantize → dequantize without a host round trip) |
//!
//! All element loops are grid-stride loops over groups of four elements
//! with 64-bit indices (`n` is a `u64` parameter): a group is one 16-byte
//! load of four floats and one 32-bit access of four codes (so `x`/`y` must
//! be 16-byte and `codes` 4-byte aligned, which the launch code checks);
//! the last `n mod 4` elements are handled one by one by the first global
//! threads.
//!
//! # Two codecs
//!
//! * [`Codec::Hardware`] (sm_89 and newer): `cvt.rn.satfinite.{e4m3x2,
//!   e5m2x2}.f32` encodes two floats per instruction; decoding goes through
//!   `cvt.rn.f16x2.{e4m3x2,e5m2x2}` and an exact f16 → f32 widening. The PTX
//!   ISA leaves the NaN code of the conversion open, so the encoded word is
//!   canonicalised afterwards: any byte that is a NaN code of the format
//!   becomes `0x7F` (four bytes at once, with integer ops; no finite input
//!   and no infinity can produce a NaN code under `.satfinite`, so only NaN
//!   inputs are affected).
//! * [`Codec::Software`] (every SM; the default below sm_89): the integer
//!   encoder of [`super::host`] step for step (sign split, NaN, saturation,
//!   underflow, subnormal and normal candidates), with the early returns of
//!   the host code turned into `selp`s and the round-to-nearest-even shift
//!   written as `(v + half − 1 + lsb) >> s`; see [`rne_shr_model`] for the
//!   proof that this equals the host's compare form. The decoder assembles
//!   the f32 bits like the host decoder does.
//!
//! Both paths are bit-identical to the host model: checked on the
//! simulator (boundaries, random samples, bit-pattern sweeps around every
//! encoder decision); the device test sweeps all 2³² inputs where a GPU is
//! present.

use super::host::Format;
use crate::dsl::params::Ptr;
use crate::dsl::types::{F32, Pred, Reg, U8, U32, U64};
use crate::dsl::{
    Cmp, Fp8Format, GlobalPtr, KernelBuilder, PtxModule, Rounding, SharedArray, ShflMode,
};
use crate::error::Result;
use crate::kernel_params;
use crate::target::{Feature, Sm};

/// Threads per block of every FP8 kernel (a multiple of 32: the block
/// reduction shuffles full warps), on every SM.
///
/// Why the same on every SM (`docs/tuning.md`): at 256 threads and at most
/// ~40 registers (software codec) or ~18 (hardware cvt), with no shared
/// memory beyond the reduction's few words, every FP8 kernel reaches 100 %
/// theoretical occupancy on every target, limited only by the SM's thread
/// count; the model has nothing to gain from another shape.
pub const BLOCK: u32 = 256;
/// Elements each thread handles per pass when the grid is not capped: the
/// grid is `ceil(n / (BLOCK · ITEMS_PER_THREAD))` blocks, at most
/// [`BLOCKS_PER_SM`] per multiprocessor.
pub const ITEMS_PER_THREAD: u64 = 16;
/// Grid cap per multiprocessor: at least the resident CTAs of every target
/// (4 on sm_75, 6 on sm_86/89/120, 8 elsewhere at 256 threads), so the
/// first wave fills every SM; the grid-stride loops cover the rest.
pub const BLOCKS_PER_SM: u32 = 8;

/// Entry name of the first absmax pass (format-independent).
pub const ABSMAX_PARTIALS: &str = "fp8_absmax_partials";

/// Number of `f32`s in the stats buffer: `[amax, scale, scale_inv]`.
pub const STATS_LEN: usize = 3;

/// The encoder/decoder a kernel uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Codec {
    /// The sm_89+ FP8 `cvt` instructions.
    Hardware,
    /// Integer shifts, masks, compares and selects (every SM).
    Software,
}

impl Codec {
    /// The default codec on `sm`: hardware where the SM has the FP8 `cvt`.
    pub fn for_sm(sm: Sm) -> Codec {
        if sm.supports(Feature::Fp8Cvt) {
            Codec::Hardware
        } else {
            Codec::Software
        }
    }

    /// The tuning key of a variant: empty for the SM's default codec,
    /// `"sw"` for the software codec forced on an SM with the hardware one.
    /// (The hardware codec cannot be asked for where it does not exist.)
    fn tuning(self, sm: Sm) -> &'static str {
        if self == Codec::for_sm(sm) { "" } else { "sw" }
    }
}

/// Which elementwise kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// First absmax pass (format-independent).
    AbsmaxPartials,
    /// Second absmax pass: amax, scale, scale_inv.
    AbsmaxFinalize,
    /// Quantize with the scale from the stats buffer.
    Quantize,
    /// Quantize with a scale parameter.
    QuantizeScaled,
    /// Dequantize with a `scale_inv` parameter.
    Dequantize,
    /// Dequantize with `scale_inv` read from the stats buffer (`stats[2]`),
    /// so a quantize feeds it without a host round trip.
    DequantizeStats,
}

impl Kind {
    /// Every kernel kind.
    pub const ALL: [Kind; 6] = [
        Kind::AbsmaxPartials,
        Kind::AbsmaxFinalize,
        Kind::Quantize,
        Kind::QuantizeScaled,
        Kind::Dequantize,
        Kind::DequantizeStats,
    ];

    /// Whether the kernel encodes or decodes (and so depends on the codec).
    pub fn uses_codec(self) -> bool {
        matches!(
            self,
            Kind::Quantize | Kind::QuantizeScaled | Kind::Dequantize | Kind::DequantizeStats
        )
    }
}

fn fmt_name(f: Format) -> &'static str {
    match f {
        Format::E4M3 => "e4m3",
        Format::E5M2 => "e5m2",
    }
}

/// The entry name of `kind` for format `f`.
pub fn kernel_name(kind: Kind, f: Format) -> String {
    match kind {
        Kind::AbsmaxPartials => ABSMAX_PARTIALS.to_string(),
        Kind::AbsmaxFinalize => format!("fp8_absmax_finalize_{}", fmt_name(f)),
        Kind::Quantize => format!("fp8_quantize_{}", fmt_name(f)),
        Kind::QuantizeScaled => format!("fp8_quantize_scaled_{}", fmt_name(f)),
        Kind::Dequantize => format!("fp8_dequantize_{}", fmt_name(f)),
        Kind::DequantizeStats => format!("fp8_dequantize_stats_{}", fmt_name(f)),
    }
}

kernel_params! {
    /// Arguments of [`ABSMAX_PARTIALS`]: `partials[block] = max |x[i]|`
    /// over the elements the block visited.
    pub struct AbsmaxPartialsArgs => AbsmaxPartialsRegs {
        x: Ptr<F32>,
        n: U64,
        partials: Ptr<F32>,
    }
}

kernel_params! {
    /// Arguments of `fp8_absmax_finalize_<fmt>`: reduces `count` partials
    /// and writes `stats = [amax, scale, scale_inv]`.
    pub struct AbsmaxFinalizeArgs => AbsmaxFinalizeRegs {
        partials: Ptr<F32>,
        count: U32,
        stats: Ptr<F32>,
    }
}

kernel_params! {
    /// Arguments of `fp8_quantize_<fmt>`: the scale is `stats[1]`.
    pub struct QuantizeArgs => QuantizeRegs {
        x: Ptr<F32>,
        n: U64,
        stats: Ptr<F32>,
        codes: Ptr<U8>,
    }
}

kernel_params! {
    /// Arguments of `fp8_quantize_scaled_<fmt>` (delayed scaling).
    pub struct QuantizeScaledArgs => QuantizeScaledRegs {
        x: Ptr<F32>,
        n: U64,
        scale: F32,
        codes: Ptr<U8>,
    }
}

kernel_params! {
    /// Arguments of `fp8_dequantize_<fmt>`.
    pub struct DequantizeArgs => DequantizeRegs {
        codes: Ptr<U8>,
        n: U64,
        scale_inv: F32,
        y: Ptr<F32>,
    }
}

kernel_params! {
    /// Arguments of `fp8_dequantize_stats_<fmt>`: `scale_inv` is `stats[2]`
    /// (as the finalize kernel wrote it).
    pub struct DequantizeStatsArgs => DequantizeStatsRegs {
        codes: Ptr<U8>,
        n: U64,
        stats: Ptr<F32>,
        y: Ptr<F32>,
    }
}

/// Blocks of a launch over `n` elements on a device with `sms`
/// multiprocessors: `ceil(n / (BLOCK · ITEMS_PER_THREAD))`, at least 1, at
/// most `sms · BLOCKS_PER_SM` (the grid-stride loops cover the rest).
pub fn grid_blocks(n: u64, sms: u32) -> u32 {
    let want = n.div_ceil(u64::from(BLOCK) * ITEMS_PER_THREAD).max(1);
    let cap = u64::from(sms.max(1)) * u64::from(BLOCKS_PER_SM);
    // `cap` fits in u32 (sms ≤ u32::MAX / 8 in practice); saturate anyway.
    u32::try_from(want.min(cap)).unwrap_or(u32::MAX)
}

// ---------------------------------------------------------------------------
// Format constants of the software codec
// ---------------------------------------------------------------------------

/// The constants of the integer codec for one format, derived from the
/// exponent bias and the mantissa width exactly as [`super::host`] derives
/// them (the unit tests check them against the host codec).
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

// ---------------------------------------------------------------------------
// Loops and reductions
// ---------------------------------------------------------------------------

/// A grid-stride loop over the `n / 4` groups of four elements (64-bit
/// group index `g`, passed to `group`), then the `n mod 4` tail elements,
/// one each for global threads `0..n mod 4` (64-bit element index, passed
/// to `tail`).
fn grid_stride_groups(
    b: &mut KernelBuilder,
    n: Reg<U64>,
    group: impl FnOnce(&mut KernelBuilder, Reg<U64>),
    tail: impl FnOnce(&mut KernelBuilder, Reg<U64>),
) {
    let groups = b.shr(n, 2u32);
    let gid = b.global_id_x_u64();
    let (ntid, nctaid) = (b.ntid_x(), b.nctaid_x());
    let stride = b.mul_wide_u32(ntid, nctaid);
    let g = b.mov(gid);
    b.while_(
        |b| b.setp(Cmp::Lt, g, groups),
        |b| {
            group(b, g);
            let next = b.add(g, stride);
            b.assign(g, next);
        },
    );
    let first = b.shl(groups, 2u32);
    let left = b.sub(n, first);
    let mine = b.setp(Cmp::Lt, gid, left);
    b.if_(mine, |b| {
        let e = b.add(first, gid);
        tail(b, e);
    });
}

/// `acc = max(acc, |bits|)`: the sign bit cleared on the integer bits,
/// then `max.f32`, which ignores a NaN operand.
pub(crate) fn fold_abs(b: &mut KernelBuilder, acc: Reg<F32>, bits: Reg<U32>) {
    let m = b.and(bits, 0x7FFF_FFFFu32);
    let a = b.f32_from_bits(m);
    let next = b.fmax(acc, a);
    b.assign(acc, next);
}

/// `max.f32` across the 32 lanes of each warp (butterfly shuffles: every
/// lane ends with the warp's maximum).
pub(crate) fn warp_max(b: &mut KernelBuilder, v: Reg<F32>) -> Reg<F32> {
    let mut v = v;
    for off in [16u32, 8, 4, 2, 1] {
        let other = b.shfl(ShflMode::Bfly, v, off, 0x1f, 0xffff_ffff);
        v = b.fmax(v, other);
    }
    v
}

/// `max.f32` across the block (every thread must call it; `BLOCK` is a
/// multiple of 32). The result is valid in thread 0 (and in all of warp 0).
pub(crate) fn block_max(
    b: &mut KernelBuilder,
    v: Reg<F32>,
    scratch: &SharedArray<F32>,
) -> Reg<F32> {
    let w = warp_max(b, v);
    let tid = b.tid_x();
    let lane = b.and(tid, 31u32);
    let warp = b.shr(tid, 5u32);
    let lane0 = b.setp(Cmp::Eq, lane, 0u32);
    b.if_(lane0, |b| {
        let p = b.shared_elem(scratch, warp);
        b.st_shared(p, 0, w);
    });
    b.bar_sync();
    let r = b.mov(0.0f32);
    let have = b.setp(Cmp::Lt, lane, BLOCK / 32);
    b.if_(have, |b| {
        let p = b.shared_elem(scratch, lane);
        let x = b.ld_shared(p, 0);
        b.assign(r, x);
    });
    warp_max(b, r)
}

pub(crate) fn is_thread0(b: &mut KernelBuilder) -> Reg<Pred> {
    let tid = b.tid_x();
    b.setp(Cmp::Eq, tid, 0u32)
}

// ---------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------

/// First absmax pass.
pub fn generate_absmax_partials(sm: Sm) -> Result<PtxModule> {
    let mut b = KernelBuilder::new(ABSMAX_PARTIALS, sm);
    b.maxntid(BLOCK, 1, 1);
    let p = b.params::<AbsmaxPartialsArgs>();
    let scratch = b.shared_array::<F32>("warp_max", BLOCK / 32, 4);
    let words: GlobalPtr<U32> = p.x.cast();
    let acc = b.mov(0.0f32);
    grid_stride_groups(
        &mut b,
        p.n,
        |b, g| {
            let e = b.shl(g, 2u32);
            let xp = b.offset64(words, e);
            let v = b.ld_global_nc_v4(xp, 0);
            for bits in v {
                fold_abs(b, acc, bits);
            }
        },
        |b, e| {
            let xp = b.offset64(words, e);
            let bits = b.ld_global_nc(xp, 0);
            fold_abs(b, acc, bits);
        },
    );
    let m = block_max(&mut b, acc, &scratch);
    let t0 = is_thread0(&mut b);
    b.if_(t0, |b| {
        let block = b.ctaid_x();
        let out = b.offset(p.partials, block);
        b.st_global(out, 0, m);
    });
    b.finish()
}

/// Second absmax pass for format `f`: one block of [`BLOCK`] threads.
pub fn generate_absmax_finalize(sm: Sm, f: Format) -> Result<PtxModule> {
    let mut b = KernelBuilder::new(&kernel_name(Kind::AbsmaxFinalize, f), sm);
    b.maxntid(BLOCK, 1, 1);
    let p = b.params::<AbsmaxFinalizeArgs>();
    let scratch = b.shared_array::<F32>("warp_max", BLOCK / 32, 4);
    let acc = b.mov(0.0f32);
    let tid = b.tid_x();
    let ntid = b.ntid_x();
    b.for_range(tid, p.count, ntid, |b, i| {
        let q = b.offset(p.partials, i);
        let v = b.ld_global(q, 0);
        let next = b.fmax(acc, v);
        b.assign(acc, next);
    });
    let amax = block_max(&mut b, acc, &scratch);
    let t0 = is_thread0(&mut b);
    b.if_(t0, |b| {
        // scale = MAX / amax when 0 < amax < Inf and the quotient is
        // finite, else 1 (amax ≥ +0 and never NaN here, so the bits order
        // like the values).
        let abits = b.f32_bits(amax);
        let am1 = b.sub(abits, 1u32);
        let finite_pos = b.setp(Cmp::Lt, am1, 0x7F7F_FFFFu32);
        let max = b.mov(f.max_finite());
        let q = b.fdiv(Rounding::Rn, max, amax);
        let qbits = b.f32_bits(q);
        let q_finite = b.setp(Cmp::Lt, qbits, 0x7F80_0000u32);
        let ok = b.pand(finite_pos, q_finite);
        let scale = b.selp(ok, q, 1.0f32);
        let one = b.mov(1.0f32);
        let scale_inv = b.fdiv(Rounding::Rn, one, scale);
        b.st_global(p.stats, 0, amax);
        b.st_global(p.stats, 1, scale);
        b.st_global(p.stats, 2, scale_inv);
    });
    b.finish()
}

/// The quantize body shared by both scale sources.
fn quantize_body(
    b: &mut KernelBuilder,
    f: Format,
    codec: Codec,
    x: GlobalPtr<F32>,
    n: Reg<U64>,
    scale: Reg<F32>,
    codes: GlobalPtr<U8>,
) {
    let words: GlobalPtr<U32> = codes.cast();
    grid_stride_groups(
        b,
        n,
        |b, g| {
            let e = b.shl(g, 2u32);
            let xp = b.offset64(x, e);
            let v = b.ld_global_nc_v4(xp, 0);
            let y = v.map(|xi| b.fmul(Rounding::Rn, xi, scale));
            let w = encode4(b, f, codec, y);
            let cp = b.offset64(words, g);
            b.st_global(cp, 0, w);
        },
        |b, e| {
            let xp = b.offset64(x, e);
            let xv = b.ld_global_nc(xp, 0);
            let y = b.fmul(Rounding::Rn, xv, scale);
            let c = encode1(b, f, codec, y);
            let cp = b.offset64(codes, e);
            b.st_global(cp, 0, c);
        },
    );
}

fn builder_for(sm: Sm, kind: Kind, f: Format, codec: Codec) -> KernelBuilder {
    let mut b = KernelBuilder::new(&kernel_name(kind, f), sm);
    b.maxntid(BLOCK, 1, 1);
    b.tuning(codec.tuning(sm));
    b
}

/// Quantize with the scale read from `stats[1]` (written by the finalize
/// kernel).
pub fn generate_quantize(sm: Sm, f: Format, codec: Codec) -> Result<PtxModule> {
    let mut b = builder_for(sm, Kind::Quantize, f, codec);
    let p = b.params::<QuantizeArgs>();
    let scale = b.ld_global(p.stats, 1);
    quantize_body(&mut b, f, codec, p.x, p.n, scale, p.codes);
    b.finish()
}

/// Quantize with a caller-given scale (delayed scaling).
pub fn generate_quantize_scaled(sm: Sm, f: Format, codec: Codec) -> Result<PtxModule> {
    let mut b = builder_for(sm, Kind::QuantizeScaled, f, codec);
    let p = b.params::<QuantizeScaledArgs>();
    quantize_body(&mut b, f, codec, p.x, p.n, p.scale, p.codes);
    b.finish()
}

/// The dequantize loop: `y[i] = decode(codes[i]) · scale_inv` (`mul.rn`).
fn dequantize_body(
    b: &mut KernelBuilder,
    f: Format,
    codec: Codec,
    codes: GlobalPtr<U8>,
    n: Reg<U64>,
    scale_inv: Reg<F32>,
    y: GlobalPtr<F32>,
) {
    let words: GlobalPtr<U32> = codes.cast();
    grid_stride_groups(
        b,
        n,
        |b, g| {
            let cp = b.offset64(words, g);
            let w = b.ld_global_nc(cp, 0);
            let v = decode4(b, f, codec, w);
            let yv = v.map(|vi| b.fmul(Rounding::Rn, vi, scale_inv));
            let e = b.shl(g, 2u32);
            let yp = b.offset64(y, e);
            b.st_global_v4(yp, 0, yv);
        },
        |b, e| {
            let cp = b.offset64(codes, e);
            let c = b.ld_global_nc(cp, 0);
            let v = decode1(b, f, codec, c);
            let yv = b.fmul(Rounding::Rn, v, scale_inv);
            let yp = b.offset64(y, e);
            b.st_global(yp, 0, yv);
        },
    );
}

/// Dequantize: `y[i] = decode(codes[i]) · scale_inv` (`mul.rn`).
pub fn generate_dequantize(sm: Sm, f: Format, codec: Codec) -> Result<PtxModule> {
    let mut b = builder_for(sm, Kind::Dequantize, f, codec);
    let p = b.params::<DequantizeArgs>();
    dequantize_body(&mut b, f, codec, p.codes, p.n, p.scale_inv, p.y);
    b.finish()
}

/// Dequantize with `scale_inv = stats[2]`, loaded once per thread from the
/// stats buffer a quantize wrote (no host round trip).
pub fn generate_dequantize_stats(sm: Sm, f: Format, codec: Codec) -> Result<PtxModule> {
    let mut b = builder_for(sm, Kind::DequantizeStats, f, codec);
    let p = b.params::<DequantizeStatsArgs>();
    let scale_inv = b.ld_global(p.stats, 2);
    dequantize_body(&mut b, f, codec, p.codes, p.n, scale_inv, p.y);
    b.finish()
}

/// Generate `kind` for `sm`, format `f`, with `codec` (ignored by the
/// absmax kernels). Asking for [`Codec::Hardware`] below sm_89 is an
/// [`crate::Error::UnsupportedFeature`].
pub fn generate(sm: Sm, kind: Kind, f: Format, codec: Codec) -> Result<PtxModule> {
    match kind {
        Kind::AbsmaxPartials => generate_absmax_partials(sm),
        Kind::AbsmaxFinalize => generate_absmax_finalize(sm, f),
        Kind::Quantize => generate_quantize(sm, f, codec),
        Kind::QuantizeScaled => generate_quantize_scaled(sm, f, codec),
        Kind::Dequantize => generate_dequantize(sm, f, codec),
        Kind::DequantizeStats => generate_dequantize_stats(sm, f, codec),
    }
}

/// The default variants for `sm` (the SM's default codec), both formats:
/// one absmax-partials module and five modules per format.
pub fn default_variants(sm: Sm) -> Result<Vec<PtxModule>> {
    let codec = Codec::for_sm(sm);
    let mut out = vec![generate_absmax_partials(sm)?];
    for f in [Format::E4M3, Format::E5M2] {
        for kind in &Kind::ALL[1..] {
            out.push(generate(sm, *kind, f, codec)?);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::host::{self, Format};
    use super::*;

    #[test]
    fn sw_spec_matches_the_host_codec() {
        for f in [Format::E4M3, Format::E5M2] {
            let s = SwSpec::of(f);
            assert_eq!(s.max_bits, f.max_finite().to_bits(), "{f:?}");
            assert_eq!(s.max_code, u32::from(f.max_code()), "{f:?}");
            let z = f32::from_bits(s.zero_max_bits);
            assert_eq!(
                f.encode(z),
                0,
                "{f:?}: half the smallest subnormal rounds to 0"
            );
            assert_eq!(f.encode(f32::from_bits(s.zero_max_bits + 1)), 1, "{f:?}");
            assert_eq!(f.decode(1).to_bits(), s.sub_unit_bits, "{f:?}");
            assert_eq!(f.decode(1 << s.mbits).to_bits(), s.min_normal_bits, "{f:?}");
            for c in 0..=0x7Fu8 {
                assert_eq!(
                    f.decode(c).is_nan(),
                    u32::from(c) >= s.first_nan_code,
                    "{f:?} {c:#x}"
                );
            }
        }
        assert_eq!(SwSpec::of(Format::E4M3).first_nan_code, 0x7F);
        assert_eq!(SwSpec::of(Format::E5M2).first_nan_code, 0x7D);
    }

    #[test]
    fn rne_shift_equals_the_compare_form() {
        let cmp_form = |v: u32, s: u32| {
            let kept = v >> s;
            let dropped = v & ((1 << s) - 1);
            let half = 1 << (s - 1);
            kept + u32::from(dropped > half || (dropped == half && kept & 1 == 1))
        };
        for s in 1..=24 {
            for v in (0u32..1 << 25)
                .step_by(97)
                .chain([(1 << 25) - 1, 3 << (s - 1), 1 << (s - 1)])
            {
                assert_eq!(rne_shr_model(v, s), cmp_form(v, s), "v={v:#x} s={s}");
            }
        }
    }

    /// The emitted algorithm (modelled in Rust) equals the host encoder on
    /// a stride through all 2³² bit patterns plus every boundary region.
    #[test]
    fn sw_encoder_model_equals_host() {
        for f in [Format::E4M3, Format::E5M2] {
            let mut bits = 0u64;
            while bits < 1 << 32 {
                let x = f32::from_bits(bits as u32);
                assert_eq!(sw_encode_model(f, x), f.encode(x), "{f:?} {:#010x}", bits);
                bits += 4099;
            }
            // Every FP8 value, its midpoints and their f32 neighbours.
            for c in 0..=0xFFu8 {
                let v = f.decode(c);
                if !v.is_finite() {
                    continue;
                }
                let next = f.decode(c.wrapping_add(1));
                let mut probes = vec![v];
                if next.is_finite() && (next.abs() > v.abs()) {
                    probes.push((v + next) / 2.0);
                }
                for p in probes.clone() {
                    probes.push(f32::from_bits(p.to_bits().wrapping_add(1)));
                    probes.push(f32::from_bits(p.to_bits().wrapping_sub(1)));
                }
                for p in probes {
                    assert_eq!(sw_encode_model(f, p), f.encode(p), "{f:?} {p:e}");
                }
            }
        }
        assert_eq!(sw_encode_model(Format::E4M3, f32::NAN), host::NAN_CODE);
    }

    crate::kernel_params! {
        struct CanonArgs => CanonRegs {
            w: Ptr<U32>,
            n: U32,
            out: Ptr<U32>,
        }
    }

    /// The simulator's FP8 cvt always writes `0x7F` for NaN, so the
    /// hardware path's NaN canonicalisation is checked on its own: every
    /// byte value in every position, next to other bytes.
    #[test]
    fn nan_code_canonicalisation_on_the_simulator() {
        use crate::dsl::params::KernelParams;
        use crate::runtime::{Context, LaunchConfig};
        for f in [Format::E4M3, Format::E5M2] {
            let mut b = KernelBuilder::new("nan_canon", Sm::Sm80);
            let p = b.params::<CanonArgs>();
            let i = b.global_id_x();
            let ok = b.setp(Cmp::Lt, i, p.n);
            b.if_(ok, |b| {
                let src = b.offset(p.w, i);
                let w = b.ld_global(src, 0);
                let c = canonicalize_nan_codes(b, f, w);
                let dst = b.offset(p.out, i);
                b.st_global(dst, 0, c);
            });
            let m = b.finish().unwrap();
            let mut words = Vec::new();
            for v in 0..=255u32 {
                for k in 0..4 {
                    let others = [0x00u32, 0xFF, 0x7F, 0x12, 0xFE][(v as usize + k) % 5];
                    let w = (others * 0x0101_0101) & !(0xFF << (8 * k)) | (v << (8 * k));
                    words.push(w);
                }
            }
            let ctx = Context::sim(Sm::Sm80);
            let st = ctx.default_stream();
            let wb = st.upload(&words).unwrap();
            let mut ob = ctx.alloc::<u32>(words.len()).unwrap();
            let n = words.len() as u32;
            let args = CanonArgs {
                w: st.arg("w", &wb).unwrap(),
                n,
                out: st.arg_mut("out", &mut ob).unwrap(),
            };
            st.launch(&m, LaunchConfig::linear(n.div_ceil(128), 128), &args.args())
                .unwrap();
            let got: Vec<u32> = ob.to_vec().unwrap();
            let nan_code = |c: u32| f.decode(c as u8).is_nan();
            for (w, g) in words.iter().zip(got) {
                let want = (0..4).fold(0u32, |acc, k| {
                    let c = (w >> (8 * k)) & 0xFF;
                    acc | (if nan_code(c) { 0x7F } else { c }) << (8 * k)
                });
                assert_eq!(g, want, "{f:?} {w:#010x}");
            }
        }
    }

    #[test]
    fn grid_is_capped_and_at_least_one() {
        assert_eq!(grid_blocks(0, 132), 1);
        assert_eq!(grid_blocks(1, 132), 1);
        assert_eq!(grid_blocks(4096, 132), 1);
        assert_eq!(grid_blocks(4097, 132), 2);
        assert_eq!(grid_blocks(1 << 40, 132), 132 * 8);
        assert_eq!(grid_blocks(1 << 20, 4), 32);
    }

    #[test]
    fn every_default_variant_builds_on_every_sm() {
        for sm in Sm::ALL {
            let v = default_variants(sm).unwrap();
            // absmax partials + 5 kinds × 2 formats
            assert_eq!(v.len(), 11);
            let names: std::collections::BTreeSet<_> =
                v.iter().map(|m| m.kernel.as_str()).collect();
            assert_eq!(names.len(), 11, "{names:?}");
            assert!(names.contains("fp8_dequantize_stats_e5m2"));
        }
    }
}
