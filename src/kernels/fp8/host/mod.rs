//! Bit-exact CPU model of ptxsmith's FP8 codec and per-tensor scaling.
//!
//! This module is the **specification** of the FP8 kernels. A GPU result
//! that differs from it in any byte is a GPU bug (or a bug here, to be
//! fixed in both places together). Two device paths are planned:
//!
//! * sm_89 and newer: the hardware conversion `cvt.rn.satfinite.e4m3x2.f32`
//!   (resp. `.e5m2x2`), which needs PTX 8.1 on sm_89 and PTX 7.8 on sm_90;
//! * below sm_89: an integer software encoder written with the very steps
//!   of [`encode_e4m3`] (shifts, masks, unsigned compares, adds, selects).
//!
//! # Encoding contract
//!
//! Both formats follow the OCP OFP8 layouts (PTX ISA §5.2.3):
//!
//! | | E4M3 (OCP "e4m3fn") | E5M2 |
//! |---|---|---|
//! | layout, bias | `S.EEEE.MMM`, 7 | `S.EEEEE.MM`, 15 |
//! | normal (E ≥ 1) | 2^(E−7) · (1 + M/8) | 2^(E−15) · (1 + M/4) |
//! | subnormal (E = 0) | M · 2⁻⁹ | M · 2⁻¹⁶ |
//! | largest finite | `0x7E` = 448 | `0x7B` = 57344 |
//! | smallest normal | `0x08` = 2⁻⁶ | `0x04` = 2⁻¹⁴ |
//! | infinity | none | `0x7C` / `0xFC` |
//! | NaN | `0x7F`, `0xFF` only | `S.11111.{01,10,11}` |
//!
//! `encode_*(x)` is what `cvt.rn.satfinite.{e4m3,e5m2}x2.f32` produces for
//! one lane:
//!
//! 1. **Round to nearest, ties to even**, on the exact value of `x` (one
//!    rounding; `x` is an f32, so nothing was rounded before).
//! 2. **Subnormals are kept.** E4M3 values below 2⁻⁶ round to a multiple
//!    of 2⁻⁹; `|x| ≤ 2⁻¹⁰` gives ±0 (2⁻¹⁰ itself is a tie between 0 and
//!    2⁻⁹ and goes to the even code 0). A value may round up from the
//!    subnormal range into the smallest normal 2⁻⁶. E5M2 alike with step
//!    2⁻¹⁶ and zero threshold 2⁻¹⁷. f32 subnormal inputs are far below
//!    both thresholds and give ±0.
//! 3. **Saturation (`.satfinite`).** Every finite `|x| ≥ MAX` and ±Inf
//!    encodes to ±MAX: `0x7E`/`0xFE` (E4M3) and `0x7B`/`0xFB` (E5M2). For
//!    E4M3, values in (448, 464] round to 448 anyway (464 is the tie
//!    between 448 = `1.110b·2⁸` and 480, and 448 has the even mantissa);
//!    above 464 the rounded result would be 480, whose code `0x7F` is
//!    NaN, and satfinite clamps it to 448. For E5M2, values in
//!    (57344, 61440) round down to 57344, and from 61440 (a tie whose even
//!    neighbour is 65536 = Inf) up the result is clamped to 57344. So a
//!    single compare `|x| ≥ MAX` implements the rule. Infinity is never
//!    produced, not even by E5M2, which has one.
//! 4. **NaN → `0x7F`**, whatever the sign and payload of the input NaN,
//!    for both formats. PTX says only "NaN → NaN" and leaves the sign and
//!    bits unspecified. NVIDIA's host reference (`__nv_cvt_double_to_fp8`,
//!    which the `float8` crate ports) gives `0x7F` for a positive NaN but
//!    ORs the input sign in (negative NaN → `0xFF`), and for E5M2 also
//!    keeps one payload bit (`0x7E`/`0x7F`/`0xFE`/`0xFF`). We *choose* the
//!    single code `0x7F` for every NaN in both formats: the sign of a NaN
//!    is meaningless, and may already have been lost in a float register
//!    (ptx-semantics §2). The GPU kernels must therefore canonicalise to
//!    `0x7F` explicitly after the hardware `cvt` (an `and`/`selp` on the
//!    NaN test), and the software encoder tests for NaN *before* the
//!    saturation compare: NaN magnitudes compare above 448 as integers,
//!    so the other order would turn NaN into ±MAX.
//! 5. **The sign of zero is kept:** `+0 → 0x00`, `−0 → 0x80`, and a
//!    negative value that underflows gives `0x80`.
//!
//! Decoding (`decode_*`) is exact: every E4M3/E5M2 value is an f32. The
//! NaN codes (E4M3 `0x7F`/`0xFF`; E5M2 `0x7D..=0x7F`, `0xFD..=0xFF`) decode
//! to the f32 NaN [`CANONICAL_NAN`] (`0x7FFF_FFFF`, the bits PTX host code
//! uses for a canonical f32 NaN); only "is NaN" is part of the contract,
//! since the device's NaN bits are undocumented. E5M2 `0x7C`/`0xFC` decode
//! to ±Inf.
//!
//! # Per-tensor scaling (Transformer Engine convention)
//!
//! For a tensor `xs` and format `F` with largest finite value `MAX`
//! (448 for E4M3, 57344 for E5M2):
//!
//! ```text
//! amax      = max |x|                 (absmax: PTX max.f32 fold from +0.0)
//! scale     = MAX / amax              (div.rn.f32), or 1.0 — see below
//! q[i]      = encode_F(x[i] * scale)  (mul.rn.f32, then cvt)
//! scale_inv = 1.0 / scale             (div.rn.f32)
//! y[i]      = decode_F(q[i]) * scale_inv   (dequantize, mul.rn.f32)
//! ```
//!
//! Defined for every input:
//!
//! * `|x|` is the sign bit cleared as an integer (`and.b32 0x7FFFFFFF`), not
//!   a float `abs`.
//! * `amax` is the fold of [`ptx_max_f32`] over `|x[i]|`, starting from
//!   `+0.0`. PTX `max.f32` returns the other operand when one is NaN, so
//!   **NaN elements are ignored by amax** (they still encode to `0x7F`).
//!   Hence `amax = 0` for an empty slice, all-zero data and all-NaN data;
//!   `amax = +Inf` if any element is ±Inf. Since this `max` (NaN treated
//!   as absent, `−0 < +0`) is associative and commutative, **any reduction
//!   order** — a grid of blocks, warp shuffles, atomics on the bit pattern —
//!   gives the same bits, which is what lets a multi-block GPU reduction be
//!   checked bit-exactly against this model.
//! * `scale = MAX / amax` when `amax` is finite and `> 0` and the quotient
//!   is finite; otherwise `scale = 1.0`. This covers `amax = 0` (nothing to
//!   scale), `amax = +Inf` (no finite scale can help; the infinite elements
//!   saturate) and a tiny subnormal `amax` for which `MAX / amax` overflows.
//!   `scale` is therefore always finite and `> 0`, so is `scale_inv`.
//! * `x[i] * scale` is a plain f32 product (`mul.rn.f32`, never fused);
//!   its overflow to ±Inf simply saturates in the encoder.
//!
//! Delayed scaling ([`quantize_with_scale`]) takes the scale from the
//! caller (typically from an amax history) and **rejects** a scale that is
//! NaN, ±Inf, zero (either sign) or negative with
//! [`Error::InvalidArgument`] naming the value; any finite positive scale,
//! subnormal included, is accepted. [`dequantize`] performs no validation:
//! it is the plain product above for any `scale_inv`.
//!
//! # Pitfalls the device paths must not reproduce
//!
//! * A clamp to `[−MAX, MAX]` before the conversion (`min`/`max.f32`)
//!   returns the non-NaN operand for a NaN input, silently turning NaN
//!   into ±MAX. Saturation belongs to the conversion, after the NaN test.
//! * amax must be reduced over the whole tensor (grid-wide), not over the
//!   elements a single block happens to see.
//! * A test oracle must be real E4M3/E5M2 rounding (this module), not a
//!   rounding to a fixed grid such as multiples of 1/8: FP8 spacing
//!   depends on the binade (2⁻⁹ … 32 for E4M3).
//!
//! # Fast paths
//!
//! [`encode_slice`] uses a select-only (branch-free) formulation of the
//! encoder that compilers can vectorise, and [`decode_slice`] uses the
//! 256-entry tables [`DECODE_E4M3`] / [`DECODE_E5M2`]. Both are
//! bit-identical to the readable functions; `tests/fp8_exhaustive.rs`
//! checks the encoder on all 2³² f32 bit patterns.

use crate::kernels::check;
use crate::{Error, Result};

/// The f32 NaN that every FP8 NaN code decodes to (and that
/// [`ptx_max_f32`] returns for two NaN operands): `0x7FFF_FFFF`.
pub const CANONICAL_NAN: f32 = f32::from_bits(0x7FFF_FFFF);

/// The code both formats use for NaN when encoding (see the module docs).
pub const NAN_CODE: u8 = 0x7F;

/// f32 bit pattern of +Inf; magnitudes above it are NaNs.
const F32_INF_BITS: u32 = 0x7F80_0000;
/// f32 sign bit.
const F32_SIGN: u32 = 0x8000_0000;
/// f32 mantissa field and its implicit leading one.
const F32_MANT_MASK: u32 = 0x007F_FFFF;
const F32_IMPLICIT_ONE: u32 = 0x0080_0000;

/// An FP8 format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// OCP E4M3 ("e4m3fn"): bias 7, no infinity, max 448.
    E4M3,
    /// OCP E5M2: bias 15, with infinities, max 57344.
    E5M2,
}

/// The constants that parameterise the encoder and decoder of one format.
/// Every field is either a format property or derived from two of them
/// (`bias`, `mbits`); the derivations are spelled out so that a PTX
/// generator can emit the same immediates.
struct Spec {
    /// Exponent bias.
    bias: u32,
    /// Mantissa (fraction) bits: 3 for E4M3, 2 for E5M2.
    mbits: u32,
    /// Largest finite code (magnitude byte).
    max_code: u8,
    /// f32 bits of the largest finite value; `|x| ≥` this saturates.
    max_bits: u32,
    /// f32 bits of half the smallest subnormal, 2^(−bias−mbits):
    /// `|x| ≤` this encodes to ±0.
    zero_max_bits: u32,
    /// f32 bits of the smallest normal 2^(1−bias); below it, subnormal path.
    min_normal_bits: u32,
    /// The smallest subnormal 2^(1−bias−mbits), as an f32.
    sub_unit: f32,
    /// Whether the all-ones exponent with zero mantissa is ±Inf (E5M2)
    /// rather than a finite value (E4M3).
    has_inf: bool,
}

impl Spec {
    /// Exponent field width.
    const fn ebits(&self) -> u32 {
        7 - self.mbits
    }
    /// f32 mantissa bits dropped by the conversion: 23 − mbits.
    const fn drop_bits(&self) -> u32 {
        23 - self.mbits
    }
    /// What the normal path subtracts from the f32 magnitude bits to turn
    /// the f32 biased exponent (bias 127) into an FP8 biased exponent:
    /// `(127 − bias) << 23`.
    const fn rebias(&self) -> u32 {
        (127 - self.bias) << 23
    }
    /// For an f32 with biased exponent `e32` in the subnormal range, the
    /// 24-bit significand (implicit one included) is `|x|` in units of
    /// 2^(e32−150); the subnormal code counts units of 2^(1−bias−mbits),
    /// so it is the significand shifted right by
    /// `(1 − bias − mbits) − (e32 − 150) = sub_shift_base − e32` with
    /// `sub_shift_base = 151 − bias − mbits`.
    const fn sub_shift_base(&self) -> u32 {
        151 - self.bias - self.mbits
    }
}

const E4M3_SPEC: Spec = Spec {
    bias: 7,
    mbits: 3,
    max_code: 0x7E,
    max_bits: 0x43E0_0000,        // 448 = 1.75 · 2^8
    zero_max_bits: 0x3A80_0000,   // 2^-10
    min_normal_bits: 0x3C80_0000, // 2^-6
    sub_unit: 1.0 / 512.0,        // 2^-9
    has_inf: false,
};

const E5M2_SPEC: Spec = Spec {
    bias: 15,
    mbits: 2,
    max_code: 0x7B,
    max_bits: 0x4760_0000,        // 57344 = 1.75 · 2^15
    zero_max_bits: 0x3700_0000,   // 2^-17
    min_normal_bits: 0x3880_0000, // 2^-14
    sub_unit: 1.0 / 65536.0,      // 2^-16
    has_inf: true,
};

impl Format {
    const fn spec(self) -> &'static Spec {
        match self {
            Format::E4M3 => &E4M3_SPEC,
            Format::E5M2 => &E5M2_SPEC,
        }
    }

    /// Largest finite value: 448 (E4M3) or 57344 (E5M2).
    pub const fn max_finite(self) -> f32 {
        f32::from_bits(self.spec().max_bits)
    }

    /// Code of the largest finite positive value: `0x7E` or `0x7B`.
    pub const fn max_code(self) -> u8 {
        self.spec().max_code
    }

    /// Encodes one f32 ([`encode_e4m3`] / [`encode_e5m2`]).
    #[inline]
    pub const fn encode(self, x: f32) -> u8 {
        encode_spec(x, self.spec())
    }

    /// Decodes one code ([`decode_e4m3`] / [`decode_e5m2`]).
    #[inline]
    pub const fn decode(self, b: u8) -> f32 {
        decode_spec(b, self.spec())
    }

    /// The 256-entry decode table of this format.
    pub const fn decode_table(self) -> &'static [f32; 256] {
        match self {
            Format::E4M3 => &DECODE_E4M3,
            Format::E5M2 => &DECODE_E5M2,
        }
    }
}

// ---------------------------------------------------------------------------
// Scalar codec
// ---------------------------------------------------------------------------

/// Encodes `x` as OCP E4M3 exactly like `cvt.rn.satfinite.e4m3x2.f32`:
/// RNE, subnormals kept, ±448 saturation (±Inf included), NaN → `0x7F`,
/// signed zero kept. See the module docs for the full contract.
#[inline]
pub const fn encode_e4m3(x: f32) -> u8 {
    encode_spec(x, &E4M3_SPEC)
}

/// Encodes `x` as OCP E5M2 exactly like `cvt.rn.satfinite.e5m2x2.f32`:
/// RNE, subnormals kept, ±57344 saturation (±Inf included, Inf is never
/// produced), NaN → `0x7F` (our choice), signed zero kept.
#[inline]
pub const fn encode_e5m2(x: f32) -> u8 {
    encode_spec(x, &E5M2_SPEC)
}

/// Decodes an E4M3 code exactly; `0x7F`/`0xFF` give [`CANONICAL_NAN`].
#[inline]
pub const fn decode_e4m3(b: u8) -> f32 {
    decode_spec(b, &E4M3_SPEC)
}

/// Decodes an E5M2 code exactly; `0x7C`/`0xFC` give ±Inf, the other
/// all-ones-exponent codes give [`CANONICAL_NAN`].
#[inline]
pub const fn decode_e5m2(b: u8) -> f32 {
    decode_spec(b, &E5M2_SPEC)
}

/// `v >> shift`, rounded to nearest with ties to even on the `shift`
/// dropped bits (`1 ≤ shift ≤ 31`). In PTX: `shr`, `and`, two `setp`,
/// `and.pred`/`or.pred` (or `selp`) and an `add`.
#[inline(always)]
const fn shr_round_nearest_even(v: u32, shift: u32) -> u32 {
    let kept = v >> shift;
    let dropped = v & ((1 << shift) - 1);
    let half = 1 << (shift - 1);
    let round_up = dropped > half || (dropped == half && (kept & 1) == 1);
    kept + round_up as u32
}

/// The readable encoder, one step per contract rule. All compares are
/// unsigned compares of f32 magnitude bits, which order like the values.
#[inline(always)]
const fn encode_spec(x: f32, s: &Spec) -> u8 {
    let bits = x.to_bits();
    // Step 1: split sign and magnitude. f32 bit 31 becomes FP8 bit 7.
    let sign = ((bits >> 24) & 0x80) as u8;
    let abs = bits & !F32_SIGN;

    // Step 2: NaN (exponent all ones, mantissa non-zero) → 0x7F, sign and
    // payload dropped.
    if abs > F32_INF_BITS {
        return NAN_CODE;
    }

    // Step 3: satfinite. Every |x| ≥ MAX (Inf included) gives ±MAX; see
    // the module docs for why one compare is exact under RNE.
    if abs >= s.max_bits {
        return sign | s.max_code;
    }

    // Step 4: underflow. |x| ≤ half the smallest subnormal → ±0 (the tie
    // at exactly half goes to the even code 0). Also catches ±0 and every
    // f32 subnormal.
    if abs <= s.zero_max_bits {
        return sign;
    }

    let magnitude = if abs < s.min_normal_bits {
        // Step 5: FP8 subnormal range. Restore the implicit one and shift
        // the 24-bit significand right so that one unit is the smallest
        // subnormal; RNE on the dropped bits. The shift is in
        // [drop_bits + 1, 24] here, and a round-up to 2^mbits yields the
        // code of the smallest normal, which is the right answer.
        let significand = (abs & F32_MANT_MASK) | F32_IMPLICIT_ONE;
        let e32 = abs >> 23;
        shr_round_nearest_even(significand, s.sub_shift_base() - e32)
    } else {
        // Step 6: normal range. Rebias the exponent in place (the exponent
        // field sits right above the mantissa, as in FP8), then drop
        // 23 − mbits mantissa bits with RNE. A mantissa carry propagates
        // into the exponent, which is the correct next binade; it cannot
        // reach the NaN/Inf codes because |x| < MAX here.
        shr_round_nearest_even(abs - s.rebias(), s.drop_bits())
    };
    sign | magnitude as u8
}

/// The readable decoder. Normal values are assembled as f32 bits; the
/// subnormal value `M · unit` is an exact f32 product (`cvt.rn.f32.u32`
/// then `mul.rn.f32` on the device, both exact here).
#[inline(always)]
const fn decode_spec(b: u8, s: &Spec) -> f32 {
    let b = b as u32;
    let sign = (b & 0x80) << 24;
    let emax = (1 << s.ebits()) - 1;
    let mmask = (1 << s.mbits) - 1;
    let e = (b >> s.mbits) & emax;
    let m = b & mmask;

    if e == emax {
        if s.has_inf {
            // E5M2: all-ones exponent is Inf (m = 0) or NaN.
            if m == 0 {
                return f32::from_bits(sign | F32_INF_BITS);
            }
            return CANONICAL_NAN;
        }
        // E4M3: only S.1111.111 is NaN; S.1111.000–110 are 256..448.
        if m == mmask {
            return CANONICAL_NAN;
        }
    }
    if e == 0 {
        let magnitude = (m as f32) * s.sub_unit;
        return f32::from_bits(sign | magnitude.to_bits());
    }
    f32::from_bits(sign | ((e + 127 - s.bias) << 23) | (m << s.drop_bits()))
}

// ---------------------------------------------------------------------------
// Fast slice paths
// ---------------------------------------------------------------------------

const fn build_decode_table(s: &Spec) -> [f32; 256] {
    let mut table = [0.0f32; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = decode_spec(i as u8, s);
        i += 1;
    }
    table
}

/// `DECODE_E4M3[b] == decode_e4m3(b)` bit for bit.
pub static DECODE_E4M3: [f32; 256] = build_decode_table(&E4M3_SPEC);
/// `DECODE_E5M2[b] == decode_e5m2(b)` bit for bit.
pub static DECODE_E5M2: [f32; 256] = build_decode_table(&E5M2_SPEC);

/// Branch-free encoder: both the normal and the subnormal candidate are
/// computed and the result chosen by selects, which lets the compiler
/// vectorise a slice loop. The subnormal candidate rounds with the f32
/// adder: for `0 ≤ t < 2^23`, `t + 2^23` is correctly rounded (RNE) to an
/// integer whose value sits in the low mantissa bits; `t = |x| / unit` is
/// exact (a power-of-two scaling with no overflow or underflow for
/// `|x| < 2^(1−bias)`). Bit-identical to [`encode_spec`]; checked
/// exhaustively in `tests/fp8_exhaustive.rs`.
#[inline(always)]
fn encode_select(x: f32, s: &Spec) -> u8 {
    const TWO_POW_23: f32 = 8_388_608.0;
    let bits = x.to_bits();
    let sign = (bits >> 24) & 0x80;
    let abs = bits & !F32_SIGN;

    let normal = shr_round_nearest_even(abs.wrapping_sub(s.rebias()), s.drop_bits());
    let t = f32::from_bits(abs) * (1.0 / s.sub_unit);
    let subnormal = (t + TWO_POW_23)
        .to_bits()
        .wrapping_sub(TWO_POW_23.to_bits());

    let magnitude = if abs < s.min_normal_bits {
        subnormal
    } else {
        normal
    };
    let magnitude = if abs >= s.max_bits {
        s.max_code as u32
    } else {
        magnitude
    };
    let code = sign | (magnitude & 0x7F);
    (if abs > F32_INF_BITS {
        NAN_CODE as u32
    } else {
        code
    }) as u8
}

/// Encodes `xs` into `out` (same length), bit-identical to calling
/// [`Format::encode`] on each element, with no scaling.
///
/// # Errors
/// [`Error::InvalidArgument`] if the lengths differ.
pub fn encode_slice(format: Format, xs: &[f32], out: &mut [u8]) -> Result<()> {
    check::same_len("fp8 encode_slice", "out", out.len(), xs.len(), "xs")?;
    match format {
        // Separate loops so each is monomorphic in its constants.
        Format::E4M3 => {
            for (o, &x) in out.iter_mut().zip(xs) {
                *o = encode_select(x, &E4M3_SPEC);
            }
        }
        Format::E5M2 => {
            for (o, &x) in out.iter_mut().zip(xs) {
                *o = encode_select(x, &E5M2_SPEC);
            }
        }
    }
    Ok(())
}

/// Decodes `codes` into `out` (same length) through the 256-entry table,
/// bit-identical to [`Format::decode`], with no scaling.
///
/// # Errors
/// [`Error::InvalidArgument`] if the lengths differ.
pub fn decode_slice(format: Format, codes: &[u8], out: &mut [f32]) -> Result<()> {
    check::same_len("fp8 decode_slice", "out", out.len(), codes.len(), "codes")?;
    let table = format.decode_table();
    for (o, &b) in out.iter_mut().zip(codes) {
        *o = table[b as usize];
    }
    Ok(())
}

/// The branch-free scalar encoder behind [`encode_slice`], exposed for
/// the exhaustive equivalence test. Always equal to [`Format::encode`].
#[doc(hidden)]
pub fn encode_branch_free(format: Format, x: f32) -> u8 {
    match format {
        Format::E4M3 => encode_select(x, &E4M3_SPEC),
        Format::E5M2 => encode_select(x, &E5M2_SPEC),
    }
}

// ---------------------------------------------------------------------------
// Per-tensor scaling
// ---------------------------------------------------------------------------

/// PTX `max.f32` (no `.NaN`, no `.ftz`): one NaN operand → the other
/// operand; two NaNs → [`CANONICAL_NAN`]; `−0 < +0`, so
/// `max(−0, +0) = +0` in either order.
#[inline]
pub fn ptx_max_f32(a: f32, b: f32) -> f32 {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => CANONICAL_NAN,
        (true, false) => b,
        (false, true) => a,
        (false, false) => {
            if a > b {
                a
            } else if b > a {
                b
            } else if a.is_sign_negative() {
                // Equal: either identical bits, or {−0, +0} → +0.
                b
            } else {
                a
            }
        }
    }
}

/// `amax = max |x|` as a fold of [`ptx_max_f32`] from `+0.0`, with `|x|`
/// the integer sign clear. NaN elements are ignored; empty, all-zero and
/// all-NaN input give `+0.0`; any ±Inf gives `+Inf`. Order-independent.
pub fn absmax(xs: &[f32]) -> f32 {
    xs.iter().fold(0.0f32, |acc, &x| {
        ptx_max_f32(acc, f32::from_bits(x.to_bits() & !F32_SIGN))
    })
}

/// E4M3 scale for a given amax: `448 / amax` if `amax` is finite and
/// `> 0` and the quotient is finite, else `1.0`.
pub fn scale_for_amax(amax: f32) -> f32 {
    scale_for_amax_as(amax, Format::E4M3)
}

/// [`scale_for_amax`] for any format: `MAX / amax` (MAX = 448 or 57344)
/// if `amax` is finite and `> 0` and the quotient is finite, else `1.0`.
/// The result is always finite and `> 0`.
pub fn scale_for_amax_as(amax: f32, format: Format) -> f32 {
    if amax.is_finite() && amax > 0.0 {
        let scale = format.max_finite() / amax;
        if scale.is_finite() {
            return scale;
        }
    }
    1.0
}

/// A per-tensor quantized tensor: `codes[i] = encode(x[i] * scale)`, and
/// `x[i] ≈ decode(codes[i]) * scale_inv`.
#[derive(Clone, Debug, PartialEq)]
pub struct Quantized {
    /// One FP8 code per input element.
    pub codes: Vec<u8>,
    /// The factor applied before encoding.
    pub scale: f32,
    /// `1.0 / scale`, for [`dequantize`].
    pub scale_inv: f32,
    /// `absmax` of the input (NaNs ignored).
    pub amax: f32,
}

/// Quantizes to E4M3 with the current-scaling recipe of the module docs.
pub fn quantize(xs: &[f32]) -> Quantized {
    quantize_as(xs, Format::E4M3)
}

/// Quantizes to E5M2 (`scale = 57344 / amax`).
pub fn quantize_e5m2(xs: &[f32]) -> Quantized {
    quantize_as(xs, Format::E5M2)
}

/// Quantizes to `format` with `scale = scale_for_amax_as(absmax(xs))`.
pub fn quantize_as(xs: &[f32], format: Format) -> Quantized {
    let amax = absmax(xs);
    let scale = scale_for_amax_as(amax, format);
    Quantized {
        codes: encode_scaled(xs, scale, format),
        scale,
        scale_inv: 1.0 / scale,
        amax,
    }
}

fn encode_scaled(xs: &[f32], scale: f32, format: Format) -> Vec<u8> {
    xs.iter().map(|&x| format.encode(x * scale)).collect()
}

/// Delayed scaling to E4M3: `codes[i] = encode_e4m3(x[i] * scale)` with a
/// caller-given scale.
///
/// # Errors
/// [`Error::InvalidArgument`] if `scale` is NaN, infinite, zero or
/// negative.
pub fn quantize_with_scale(xs: &[f32], scale: f32) -> Result<Vec<u8>> {
    quantize_with_scale_as(xs, scale, Format::E4M3)
}

/// [`quantize_with_scale`] for any format.
///
/// # Errors
/// [`Error::InvalidArgument`] if `scale` is NaN, infinite, zero or
/// negative.
pub fn quantize_with_scale_as(xs: &[f32], scale: f32, format: Format) -> Result<Vec<u8>> {
    if !(scale.is_finite() && scale > 0.0) {
        return Err(Error::invalid(format!(
            "fp8 quantize_with_scale: scale must be finite and > 0, got {scale:?} \
             (bits {:#010x})",
            scale.to_bits()
        )));
    }
    Ok(encode_scaled(xs, scale, format))
}

/// E4M3 dequantization: `y[i] = decode_e4m3(codes[i]) * scale_inv`. No
/// validation: any `scale_inv` is the plain f32 product.
pub fn dequantize(codes: &[u8], scale_inv: f32) -> Vec<f32> {
    dequantize_as(codes, scale_inv, Format::E4M3)
}

/// E5M2 dequantization: `y[i] = decode_e5m2(codes[i]) * scale_inv`.
pub fn dequantize_e5m2(codes: &[u8], scale_inv: f32) -> Vec<f32> {
    dequantize_as(codes, scale_inv, Format::E5M2)
}

/// Dequantization for any format (through the decode table, which equals
/// the readable decoder).
pub fn dequantize_as(codes: &[u8], scale_inv: f32, format: Format) -> Vec<f32> {
    let table = format.decode_table();
    codes
        .iter()
        .map(|&b| table[b as usize] * scale_inv)
        .collect()
}

#[cfg(test)]
mod tests;
