//! PTX generators for the block-scaled kernels of [`super`].
//!
//! | kernel | what it does |
//! |---|---|
//! | `block_scaled_quantize_<fmt>_<mode>` | codes and scale bytes of every block, scales at the layout's offset |
//! | `block_scaled_nvfp4_global` | one CTA: reduces the FP8 family's absmax partials and writes `[amax_g, S_enc, S_dec]` |
//! | `block_scaled_dequantize_<fmt>` | `y = decode(code) · decode(scale)` (NVFP4: `· S_dec` first) |
//! | `block_scaled_convert_scales` | re-lays a scale tensor, padding written 0 |
//!
//! **Mapping.** A block of 32 (MX) or 16 (NVFP4) elements is handled by
//! `block / 16` consecutive lanes of a warp (two for MX, one for NVFP4),
//! [`ELEMS_PER_LANE`] = 16 consecutive elements per lane, so that the
//! index arithmetic, the block's scale and its shuffles are paid once per
//! 16 elements: four 16-byte loads of x (or stores of y), and the codes
//! as one 16-byte (FP8) or 8-byte (FP4) vector when `K` is a multiple of
//! 16 and the code buffer is aligned for it (the `vec` argument's
//! [`WIDE`] bit), a 32-bit (FP8) or 16-bit (FP4) access per four
//! elements when `K` is a multiple of 4 and the buffers are aligned
//! ([`VEC`]); element-wise loads and stores with bounds checks
//! otherwise (odd `K`, partial last blocks, unaligned sub-slices). The
//! block amax is the integer `max.u32` of the magnitude bits, reduced
//! across the block's lanes with `shfl.sync.bfly` (order free: an integer
//! max). Lane 0 of the block writes the scale byte. The element loop is a
//! 64-bit grid-stride loop whose trip count is uniform per warp (the
//! thread count is rounded up to a warp; idle lanes hold +0.0), so every
//! shuffle runs with all 32 lanes.
//!
//! **Layouts.** All three layouts are dot products of the same six digits
//! `(m % 32, (m % 128) / 32, m / 128, kb % 4, kb / 4, l)` with per-layout
//! strides the launch code computes ([`layout_strides`], u32 arithmetic
//! mod 2³²: the real offsets are below 2³¹), so one kernel serves every
//! layout. The conversion kernel runs one thread per byte of the padded
//! 6-D index space (in `Blocked128x4` order) and writes every destination
//! byte, 0 for padding.
//!
//! **Launch shape.** [`BlockScaledTuning`] (threads per CTA, grid cap
//! per SM): the launch code uses the SM's default
//! ([`BlockScaledTuning::default_for`], whose modules are the plain
//! generators'); [`generate_tuned`] builds a [`Kernel`] for another one,
//! with the same bits.
//!
//! **Arithmetic.** Every f32 operation rounds explicitly (`mul.rn`,
//! `div.rn`); no `.approx`, no `.ftz`, no atomics. Codecs: see
//! [`codec`] and [`Codec`] (the FP8 family's type): `Hardware`
//! uses every conversion the SM has (FP8 cvt from sm_89; E2M1 and UE8M0
//! cvt on sm_100a/sm_120a) and needs sm_89; `Software` is integer only.

mod access;
pub mod codec;
mod tuning;

use super::codec::INV_6;
use super::host::{Format, Recipe, ScaleMode};
use super::layout::{ScaleDims, ScaleLayout};
use crate::dsl::blocks;
use crate::dsl::params::Ptr;
use crate::dsl::types::{F32, Reg, U8, U32, U64};
use crate::dsl::{Cmp, KernelBuilder, PtxModule, Rounding, ShflMode};
use crate::error::{Error, Result};
use crate::kernel_params;
use crate::kernels::fp8::Format as Fp8Format;
use crate::kernels::fp8::ptx::{self as fp8_ptx};
use crate::target::{Feature, Sm};
use access::{Access, GROUPS};
pub use access::{VEC, WIDE};
use codec::{
    NAN_BITS, block_scale_hw, e2m1_decode_pair, e2m1_encode_pair, e8m0_decode, e8m0_floor,
    e8m0_inverse, ue4m3_decode, ue4m3_encode, ue8m0_round_up,
};
pub use tuning::{BlockScaledTuning, BlockScaledTuningError};

pub use crate::kernels::fp8::ptx::Codec;

/// Threads per CTA of every kernel in the default tuning
/// ([`BlockScaledTuning::default_for`], which gives the reasons).
pub const THREADS: u32 = fp8_ptx::BLOCK;
/// Elements per lane.
pub const ELEMS_PER_LANE: u32 = 16;
/// Grid cap per multiprocessor of [`grid_blocks`] (the grid-stride loops
/// cover the rest). The launch code caps at each SM's resident CTAs
/// instead ([`BlockScaledTuning::default_for`]).
pub const CTAS_PER_SM: u32 = 8;
/// Entry name of the NVFP4 global-scale kernel.
pub const NVFP4_GLOBAL: &str = "block_scaled_nvfp4_global";
/// Entry name of the scale-layout conversion kernel.
pub const CONVERT_SCALES: &str = "block_scaled_convert_scales";
/// `f32`s of the NVFP4 global-scale buffer: `[amax_g, S_enc, S_dec]`.
pub const GLOBAL_LEN: usize = 3;

fn fmt_name(f: Format) -> &'static str {
    match f {
        Format::Mxfp8E4m3 => "mxfp8_e4m3",
        Format::Mxfp8E5m2 => "mxfp8_e5m2",
        Format::Mxfp4 => "mxfp4",
        Format::Nvfp4 => "nvfp4",
    }
}

/// Entry name of the quantize kernel of `recipe`.
pub fn quantize_name(recipe: Recipe) -> String {
    let f = fmt_name(recipe.format());
    match recipe.mode() {
        ScaleMode::Floor => format!("block_scaled_quantize_{f}_floor"),
        ScaleMode::RCeil => format!("block_scaled_quantize_{f}_rceil"),
        ScaleMode::Nvfp4 => format!("block_scaled_quantize_{f}"),
    }
}

/// Entry name of the dequantize kernel of `f` (the scale mode does not
/// matter when decoding).
pub fn dequantize_name(f: Format) -> String {
    format!("block_scaled_dequantize_{}", fmt_name(f))
}

kernel_params! {
    /// Arguments of `block_scaled_quantize_*`. `global` (`[amax_g, S_enc,
    /// S_dec]`) is read by the NVFP4 kernel only. `s_*` are the layout
    /// strides of [`layout_strides`]; `vec` has [`VEC`] set when `K % 4 =
    /// 0` and `x` is 16-byte, `codes` 4-byte (FP8) or 2-byte (FP4) aligned,
    /// and [`WIDE`] too when also `K % 16 = 0` and `codes` is 16-byte (FP8)
    /// or 8-byte (FP4) aligned; `*_magic`, `*_shift` divide by
    /// `nkb` and `m` ([`div_magic`]).
    pub struct QuantizeArgs => QuantizeRegs {
        x: Ptr<F32>,
        codes: Ptr<U8>,
        scales: Ptr<U8>,
        global: Ptr<F32>,
        m: U32,
        k: U32,
        nkb: U32,
        blocks: U32,
        vec: U32,
        nkb_magic: U32,
        nkb_shift: U32,
        m_magic: U32,
        m_shift: U32,
        s_mm32: U32,
        s_mm4: U32,
        s_mm: U32,
        s_kk4: U32,
        s_kk: U32,
        s_l: U32,
    }
}

kernel_params! {
    /// Arguments of `block_scaled_dequantize_*` (`global` read by NVFP4
    /// only; `vec` as for [`QuantizeArgs`], with `y` 16-byte aligned).
    pub struct DequantizeArgs => DequantizeRegs {
        codes: Ptr<U8>,
        scales: Ptr<U8>,
        global: Ptr<F32>,
        y: Ptr<F32>,
        m: U32,
        k: U32,
        nkb: U32,
        blocks: U32,
        vec: U32,
        nkb_magic: U32,
        nkb_shift: U32,
        m_magic: U32,
        m_shift: U32,
        s_mm32: U32,
        s_mm4: U32,
        s_mm: U32,
        s_kk4: U32,
        s_kk: U32,
        s_l: U32,
    }
}

kernel_params! {
    /// Arguments of [`NVFP4_GLOBAL`]: reduces `count` absmax partials and
    /// writes `global = [amax_g, S_enc, S_dec]`.
    pub struct Nvfp4GlobalArgs => Nvfp4GlobalRegs {
        partials: Ptr<F32>,
        count: U32,
        global: Ptr<F32>,
    }
}

kernel_params! {
    /// Arguments of [`CONVERT_SCALES`]: `count = L·Mt·Kt·512` threads of
    /// work; `dst_padded` 1 when the destination layout has padding (then
    /// every destination byte is written).
    pub struct ConvertArgs => ConvertRegs {
        src: Ptr<U8>,
        dst: Ptr<U8>,
        m: U32,
        nkb: U32,
        m_tiles: U32,
        k_tiles: U32,
        count: U32,
        dst_padded: U32,
        a_mm32: U32,
        a_mm4: U32,
        a_mm: U32,
        a_kk4: U32,
        a_kk: U32,
        a_l: U32,
        b_mm32: U32,
        b_mm4: U32,
        b_mm: U32,
        b_kk4: U32,
        b_kk: U32,
        b_l: U32,
    }
}

/// The strides of `layout` over the digits `(m % 32, (m % 128) / 32,
/// m / 128, kb % 4, kb / 4, l)`, mod 2³²: `offset(l, m, kb) = Σ digitᵢ ·
/// strideᵢ` ([`ScaleLayout::offset`]) whenever that offset is below 2³².
pub fn layout_strides(layout: ScaleLayout, dims: &ScaleDims) -> [u32; 6] {
    let s = match layout {
        ScaleLayout::RowMajor => {
            let nkb = dims.nkb();
            [
                nkb,
                nkb.wrapping_mul(32),
                nkb.wrapping_mul(128),
                1,
                4,
                nkb.wrapping_mul(dims.m()),
            ]
        }
        ScaleLayout::Blocked128x4 => dims.atom_strides_cutlass(),
        ScaleLayout::Atom6D => dims.atom_strides_row_major(),
    };
    // Truncation is reduction mod 2^32, which the kernels' u32 `mad.lo`
    // chain computes in anyway.
    s.map(|v| v as u32)
}

/// Blocks of a launch of `threads` threads: at least 1, at most
/// `sms · CTAS_PER_SM`.
pub fn grid_blocks(threads: u64, sms: u32) -> u32 {
    let want = threads.div_ceil(u64::from(THREADS)).max(1);
    let cap = u64::from(sms.max(1)) * u64::from(CTAS_PER_SM);
    u32::try_from(want.min(cap)).unwrap_or(u32::MAX)
}

fn check_codec(sm: Sm, codec: Codec) -> Result<()> {
    if codec == Codec::Hardware && !sm.supports(Feature::Fp8Cvt) {
        return Err(Error::UnsupportedFeature {
            feature: Feature::Fp8Cvt,
            sm,
            needs: Feature::Fp8Cvt.requirement(),
        });
    }
    Ok(())
}

/// A builder for a kernel of `t`'s block size, its tuning key the
/// codec's (`"sw"` for a codec other than the SM's default) and `t`'s
/// (when not the SM's default), joined by `_`.
fn builder(sm: Sm, name: &str, codec: Codec, t: &BlockScaledTuning) -> KernelBuilder {
    let mut b = KernelBuilder::new(name, sm);
    b.maxntid(t.threads, 1, 1);
    let ck = if codec == Codec::for_sm(sm) { "" } else { "sw" };
    let tk = t.key_on(sm);
    b.tuning(match (ck.is_empty(), tk.is_empty()) {
        (_, true) => ck.to_string(),
        (true, false) => tk,
        (false, false) => format!("{ck}_{tk}"),
    });
    b
}

fn fp8_format(f: Format) -> Fp8Format {
    match f {
        Format::Mxfp8E5m2 => Fp8Format::E5M2,
        _ => Fp8Format::E4M3,
    }
}

/// `Σ digitᵢ · strideᵢ` (u32, `mad.lo`).
fn dot6(b: &mut KernelBuilder, digits: [Reg<U32>; 6], strides: [Reg<U32>; 6]) -> Reg<U32> {
    let mut acc = b.mul_lo(digits[0], strides[0]);
    for i in 1..6 {
        acc = b.mad_lo(digits[i], strides[i], acc);
    }
    acc
}

/// The six layout digits of (`l`, `m`, `kb`).
fn digits(b: &mut KernelBuilder, l: Reg<U32>, m: Reg<U32>, kb: Reg<U32>) -> [Reg<U32>; 6] {
    let mm32 = b.and(m, 31u32);
    let mm4 = b.bfe(m, 5u32, 2u32);
    let mm = b.shr(m, 7u32);
    let kk4 = b.and(kb, 3u32);
    let kk = b.shr(kb, 2u32);
    [mm32, mm4, mm, kk4, kk, l]
}

/// Where one lane works: its block's row and k-block, its first element
/// in the row, and whether it is a real lane.
struct Lane {
    active: Reg<crate::dsl::types::Pred>,
    lane: Reg<U32>,
    row: Reg<U32>,
    kb: Reg<U32>,
    kin: Reg<U32>,
}

/// `(magic, shift)` such that `n / d = (n · magic) >> shift` (a 64-bit
/// product) for every `n < 2³¹`: `s = ⌈log2 d⌉`, `magic = ⌈2^(31+s) / d⌉`
/// (below 2³² for every `d` in `1..2³¹`), `shift = 31 + s`. Exact because
/// `magic · d − 2^(31+s) < d ≤ 2^s`, so `n` times that error stays below
/// `2^(31+s)`. The kernels divide block and row indices (all below 2³¹,
/// checked by the launch code) this way instead of a `div.u32` (a long
/// SASS sequence).
///
/// # Panics
/// Never for `d` in `1..2³¹`; `d = 0` or `d ≥ 2³¹` is a caller bug
/// (asserted in debug builds; the launch code never passes one).
pub fn div_magic(d: u32) -> (u32, u32) {
    debug_assert!((1..1 << 31).contains(&d), "div_magic({d})");
    let d = d.max(1);
    let s = 32 - (d - 1).leading_zeros(); // ⌈log2 d⌉, 0 for d = 1
    let magic = (1u64 << (31 + s)).div_ceil(u64::from(d));
    (magic as u32, 31 + s)
}

/// A run-time divisor with its [`div_magic`] constants.
#[derive(Clone, Copy)]
struct Divisor {
    d: Reg<U32>,
    magic: Reg<U32>,
    shift: Reg<U32>,
}

impl Divisor {
    /// `n / d` for `n < 2³¹`: `mul.wide.u32`, `shr.b64`.
    fn divide(self, b: &mut KernelBuilder, n: Reg<U32>) -> Reg<U32> {
        let w = b.mul_wide_u32(n, self.magic);
        let q = b.shr(w, self.shift);
        b.u64_to_u32(q)
    }
}

/// Decompose the 64-bit thread index `t` of a block-per-`tpb`-lanes
/// mapping over `blocks` blocks of `bs` elements (`nkb` per row).
fn lane_of(
    b: &mut KernelBuilder,
    t: Reg<U64>,
    total: Reg<U64>,
    tpb: u32,
    bs: u32,
    blocks: Reg<U32>,
    nkb: Divisor,
) -> Lane {
    let active = b.setp(Cmp::Lt, t, total);
    let g = b.shr(t, tpb.trailing_zeros());
    let g = b.u64_to_u32(g);
    // Idle lanes (past the last block) compute on the last block.
    let last = b.sub(blocks, 1u32);
    let g = b.min(g, last);
    let t32 = b.u64_to_u32(t);
    let lane = b.and(t32, tpb - 1);
    let row = nkb.divide(b, g);
    let kb = b.mul_lo(row, nkb.d);
    let kb = b.sub(g, kb);
    let kin = b.mul_lo(kb, bs);
    let kin = b.mad_lo(lane, ELEMS_PER_LANE, kin);
    Lane {
        active,
        lane,
        row,
        kb,
        kin,
    }
}

/// The scale byte offset of a lane's block.
fn scale_offset(
    b: &mut KernelBuilder,
    ln: &Lane,
    m: Divisor,
    kb: Reg<U32>,
    strides: [Reg<U32>; 6],
) -> Reg<U32> {
    let l = m.divide(b, ln.row);
    let mrow = b.mul_lo(l, m.d);
    let mrow = b.sub(ln.row, mrow);
    let d = digits(b, l, mrow, kb);
    dot6(b, d, strides)
}

/// How a quantize kernel turns a block amax into a scale byte and an
/// element multiplier.
fn scale_rule(
    b: &mut KernelBuilder,
    recipe: Recipe,
    codec: Codec,
    amax_bits: Reg<U32>,
    nvfp4: Option<(Reg<F32>, Reg<F32>)>,
) -> (Reg<U32>, Reg<F32>) {
    let format = recipe.format();
    let hw = block_scale_hw(b, codec);
    let nan = b.setp(Cmp::Gt, amax_bits, 0x7F80_0000u32);
    match (recipe.mode(), nvfp4) {
        (ScaleMode::Floor, _) => {
            let byte = e8m0_floor(b, amax_bits, format.element_emax());
            (byte, e8m0_inverse(b, byte))
        }
        (ScaleMode::RCeil, _) => {
            let amax = b.f32_from_bits(amax_bits);
            let s = b.fmul(Rounding::Rn, amax, format.element_max_reciprocal());
            let byte = ue8m0_round_up(b, hw, s);
            let byte = b.selp(nan, 0xFFu32, byte);
            (byte, e8m0_inverse(b, byte))
        }
        (ScaleMode::Nvfp4, Some((factor, s_dec))) => {
            let amax = b.f32_from_bits(amax_bits);
            let v = b.fmul(Rounding::Rn, amax, factor);
            let sb = ue4m3_encode(b, codec, v);
            let sbf = ue4m3_decode(b, codec, sb);
            let d = b.fmul(Rounding::Rn, sbf, s_dec);
            let enc = b.fdiv(Rounding::Rn, 1.0f32, d);
            let enc = b.fmin(enc, f32::MAX);
            let sb = b.selp(nan, 0x7Fu32, sb);
            let nan_f = b.mov(f32::from_bits(NAN_BITS));
            let enc = b.selp(nan, nan_f, enc);
            (sb, enc)
        }
        (ScaleMode::Nvfp4, None) => unreachable!("NVFP4 kernels load the global scale"),
    }
}

/// Encode four scaled values: the FP8 codes as one little-endian word, or
/// the two FP4 bytes in bits 15:0 (element 2i in the low nibble).
fn encode_lane(b: &mut KernelBuilder, f: Format, codec: Codec, y: [Reg<F32>; 4]) -> Reg<U32> {
    if f.is_fp4() {
        let hw = block_scale_hw(b, codec);
        let lo = e2m1_encode_pair(b, hw, y[1], y[0]);
        let hi = e2m1_encode_pair(b, hw, y[3], y[2]);
        let hi = b.shl(hi, 8u32);
        b.or(lo, hi)
    } else {
        fp8_ptx::encode4(b, fp8_format(f), codec, y)
    }
}

/// Quantize kernel of `recipe` with `codec`.
///
/// # Errors
/// [`Error::UnsupportedFeature`] for [`Codec::Hardware`] below sm_89.
pub fn generate_quantize(sm: Sm, recipe: Recipe, codec: Codec) -> Result<PtxModule> {
    quantize_with(sm, recipe, codec, &BlockScaledTuning::default_for(sm))
}

fn quantize_with(sm: Sm, recipe: Recipe, codec: Codec, t: &BlockScaledTuning) -> Result<PtxModule> {
    t.check()?;
    check_codec(sm, codec)?;
    let f = recipe.format();
    let bs = f.block_size() as u32;
    let tpb = bs / ELEMS_PER_LANE;
    let mut b = builder(sm, &quantize_name(recipe), codec, t);
    let p = b.params::<QuantizeArgs>();
    let strides = [p.s_mm32, p.s_mm4, p.s_mm, p.s_kk4, p.s_kk, p.s_l];
    let nkb_div = Divisor {
        d: p.nkb,
        magic: p.nkb_magic,
        shift: p.nkb_shift,
    };
    let m_div = Divisor {
        d: p.m,
        magic: p.m_magic,
        shift: p.m_shift,
    };
    let nvfp4 = (recipe.mode() == ScaleMode::Nvfp4).then(|| {
        let s_enc = b.ld_global(p.global, 1);
        let s_dec = b.ld_global(p.global, 2);
        // S_enc · rn(1/6): once per tensor, before amax_b (the host's order).
        (b.fmul(Rounding::Rn, s_enc, INV_6), s_dec)
    });
    let acc = Access::of(&mut b, p.vec);
    let total = b.mul_wide_u32(p.blocks, tpb);
    // Round up to a warp, so all 32 lanes run every shuffle.
    let total32 = b.add(total, 31u64);
    let total32 = b.and(total32, !31u64);
    b.grid_stride_u64(total32, |b, t| {
        let ln = lane_of(b, t, total, tpb, bs, p.blocks, nkb_div);
        let xs = access::load_lane(b, p.x, &ln, p.k, acc);
        // Block amax: max.u32 of the magnitude bits over the lane's
        // elements, then across the block's lanes.
        let mut a = b.mov(0u32);
        for &x in &xs {
            let bits = b.f32_bits(x);
            let m = b.and(bits, 0x7FFF_FFFFu32);
            a = b.max(a, m);
        }
        let mut off = 1;
        while off < tpb {
            let other = b.shfl(ShflMode::Bfly, a, off, 0x1f, 0xffff_ffff);
            a = b.max(a, other);
            off *= 2;
        }
        let (byte, mult) = scale_rule(b, recipe, codec, a, nvfp4);
        let y = xs.map(|x| b.fmul(Rounding::Rn, x, mult));
        let w: [Reg<U32>; GROUPS] = std::array::from_fn(|g| {
            let yg = [y[4 * g], y[4 * g + 1], y[4 * g + 2], y[4 * g + 3]];
            encode_lane(b, f, codec, yg)
        });
        b.if_(ln.active, |b| {
            let lane0 = b.setp(Cmp::Eq, ln.lane, 0u32);
            b.if_(lane0, |b| {
                let off = scale_offset(b, &ln, m_div, ln.kb, strides);
                let sp = b.offset(p.scales, off);
                b.st_global(sp, 0, byte);
            });
            access::store_codes(b, f, &ln, p.k, acc, p.codes, w);
        });
    });
    b.finish()
}

/// Dequantize kernel of format `f` with `codec`.
///
/// # Errors
/// [`Error::UnsupportedFeature`] for [`Codec::Hardware`] below sm_89.
pub fn generate_dequantize(sm: Sm, f: Format, codec: Codec) -> Result<PtxModule> {
    dequantize_with(sm, f, codec, &BlockScaledTuning::default_for(sm))
}

fn dequantize_with(sm: Sm, f: Format, codec: Codec, t: &BlockScaledTuning) -> Result<PtxModule> {
    t.check()?;
    check_codec(sm, codec)?;
    let bs = f.block_size() as u32;
    let tpb = bs / ELEMS_PER_LANE;
    let mut b = builder(sm, &dequantize_name(f), codec, t);
    let p = b.params::<DequantizeArgs>();
    let strides = [p.s_mm32, p.s_mm4, p.s_mm, p.s_kk4, p.s_kk, p.s_l];
    let nkb_div = Divisor {
        d: p.nkb,
        magic: p.nkb_magic,
        shift: p.nkb_shift,
    };
    let m_div = Divisor {
        d: p.m,
        magic: p.m_magic,
        shift: p.m_shift,
    };
    let s_dec = (f == Format::Nvfp4).then(|| b.ld_global(p.global, 2));
    let acc = Access::of(&mut b, p.vec);
    let total = b.mul_wide_u32(p.blocks, tpb);
    b.grid_stride_u64(total, |b, t| {
        let ln = lane_of(b, t, total, tpb, bs, p.blocks, nkb_div);
        let off = scale_offset(b, &ln, m_div, ln.kb, strides);
        let sp = b.offset(p.scales, off);
        let byte = b.ld_global_nc(sp, 0);
        let d = match s_dec {
            Some(s_dec) => {
                let sb = ue4m3_decode(b, codec, byte);
                b.fmul(Rounding::Rn, sb, s_dec)
            }
            None => e8m0_decode(b, byte),
        };
        let w = access::load_codes(b, f, &ln, p.k, acc, p.codes);
        let mut y = Vec::with_capacity(ELEMS_PER_LANE as usize);
        for wg in w {
            let v = if f.is_fp4() {
                let hw = block_scale_hw(b, codec);
                let b0 = b.and(wg, 0xFFu32);
                let b1 = b.shr(wg, 8u32);
                let [v0, v1] = e2m1_decode_pair(b, hw, b0);
                let [v2, v3] = e2m1_decode_pair(b, hw, b1);
                [v0, v1, v2, v3]
            } else {
                fp8_ptx::decode4(b, fp8_format(f), codec, wg)
            };
            y.extend(v.map(|vi| b.fmul(Rounding::Rn, vi, d)));
        }
        let y: [Reg<F32>; ELEMS_PER_LANE as usize] = std::array::from_fn(|i| y[i]);
        access::store_lane(b, p.y, &ln, p.k, acc, y);
    });
    b.finish()
}

/// The NVFP4 global-scale kernel (one CTA of [`THREADS`] by default): `amax_g =
/// max.f32` of the FP8 family's absmax partials, `S_enc = min(2688 /
/// amax_g, FLT_MAX)` (`div.rn`, `min.f32`), 1 when `amax_g = 0` or the
/// quotient is 0, `S_dec = 1 / S_enc` (`div.rn`): [`super::GlobalScale`].
pub fn generate_nvfp4_global(sm: Sm) -> Result<PtxModule> {
    nvfp4_global_with(sm, &BlockScaledTuning::default_for(sm))
}

fn nvfp4_global_with(sm: Sm, t: &BlockScaledTuning) -> Result<PtxModule> {
    t.check()?;
    let mut b = builder(sm, NVFP4_GLOBAL, Codec::for_sm(sm), t);
    let p = b.params::<Nvfp4GlobalArgs>();
    let scratch = b.shared_array::<F32>("warp_max", t.threads / 32, 4);
    let acc = b.mov(0.0f32);
    let tid = b.tid_x();
    let ntid = b.ntid_x();
    b.for_range(tid, p.count, ntid, |b, i| {
        let q = b.offset(p.partials, i);
        let v = b.ld_global(q, 0);
        let next = b.fmax(acc, v);
        b.assign(acc, next);
    });
    let amax = fp8_ptx::block_max(&mut b, acc, &scratch);
    let t0 = blocks::is_thread0(&mut b);
    b.if_(t0, |b| {
        let q = b.fdiv(Rounding::Rn, super::host::NVFP4_GLOBAL_NUMERATOR, amax);
        let q = b.fmin(q, f32::MAX);
        let zero_amax = b.setp(Cmp::Eq, amax, 0.0f32);
        let zero_q = b.setp(Cmp::Eq, q, 0.0f32);
        let one = b.por(zero_amax, zero_q);
        let enc = b.selp(one, 1.0f32, q);
        let dec = b.fdiv(Rounding::Rn, 1.0f32, enc);
        b.st_global(p.global, 0, amax);
        b.st_global(p.global, 1, enc);
        b.st_global(p.global, 2, dec);
    });
    b.finish()
}

/// The scale-layout conversion kernel: one thread per byte of the padded
/// index space `[L, Mt, Kt, 32, 4, 4]` (the `Blocked128x4` order); a real
/// scale is copied from `src` (strides `a_*`) to `dst` (strides `b_*`), a
/// padding position writes 0 when `dst_padded`.
pub fn generate_convert(sm: Sm) -> Result<PtxModule> {
    convert_with(sm, &BlockScaledTuning::default_for(sm))
}

fn convert_with(sm: Sm, t: &BlockScaledTuning) -> Result<PtxModule> {
    t.check()?;
    let mut b = builder(sm, CONVERT_SCALES, Codec::for_sm(sm), t);
    let p = b.params::<ConvertArgs>();
    let from = [p.a_mm32, p.a_mm4, p.a_mm, p.a_kk4, p.a_kk, p.a_l];
    let to = [p.b_mm32, p.b_mm4, p.b_mm, p.b_kk4, p.b_kk, p.b_l];
    let padded = b.setp(Cmp::Ne, p.dst_padded, 0u32);
    let gid = b.global_id_x();
    let ntid = b.ntid_x();
    let nctaid = b.nctaid_x();
    let stride = b.mul_lo(ntid, nctaid);
    b.for_range(gid, p.count, stride, |b, t| {
        let kk4 = b.and(t, 3u32);
        let mm4 = b.bfe(t, 2u32, 2u32);
        let mm32 = b.bfe(t, 4u32, 5u32);
        let tile = b.shr(t, 9u32);
        let q = b.div(tile, p.k_tiles);
        let kk = b.mul_lo(q, p.k_tiles);
        let kk = b.sub(tile, kk);
        let l = b.div(q, p.m_tiles);
        let mm = b.mul_lo(l, p.m_tiles);
        let mm = b.sub(q, mm);
        let digits = [mm32, mm4, mm, kk4, kk, l];
        let m = b.shl(mm, 7u32);
        let m = b.mad_lo(mm4, 32u32, m);
        let m = b.add(m, mm32);
        let kb = b.shl(kk, 2u32);
        let kb = b.add(kb, kk4);
        let m_ok = b.setp(Cmp::Lt, m, p.m);
        let kb_ok = b.setp(Cmp::Lt, kb, p.nkb);
        let real = b.pand(m_ok, kb_ok);
        let v = b.mov(0u32);
        b.if_(real, |b| {
            let so = dot6(b, digits, from);
            let sp = b.offset(p.src, so);
            let x = b.ld_global_nc(sp, 0);
            b.assign(v, x);
        });
        let write = b.por(real, padded);
        b.if_(write, |b| {
            let d_off = dot6(b, digits, to);
            let dp = b.offset(p.dst, d_off);
            b.st_global(dp, 0, v);
        });
    });
    b.finish()
}

/// One of the block-scaled kernels, for [`generate_tuned`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// [`generate_quantize`] of the recipe.
    Quantize(Recipe),
    /// [`generate_dequantize`] of the format.
    Dequantize(Format),
    /// [`generate_nvfp4_global`] (one CTA; the codec does not matter).
    Nvfp4Global,
    /// [`generate_convert`] (the codec does not matter).
    Convert,
}

/// The generator of `kernel` with the launch shape `t` (its `threads`
/// bound the block): launch it with `t.threads` threads per block and
/// [`BlockScaledTuning::grid_blocks`] blocks (the NVFP4 global-scale
/// kernel: one block). `t` equal to [`BlockScaledTuning::default_for`]`(sm)`
/// gives the plain generator's module, text and name; the bits are the
/// same for every tuning.
///
/// # Errors
/// [`Error::InvalidArgument`] for a tuning that fails
/// [`BlockScaledTuning::check`]; [`Error::UnsupportedFeature`] for
/// [`Codec::Hardware`] below sm_89 (quantize, dequantize).
pub fn generate_tuned(
    sm: Sm,
    kernel: Kernel,
    codec: Codec,
    t: &BlockScaledTuning,
) -> Result<PtxModule> {
    match kernel {
        Kernel::Quantize(r) => quantize_with(sm, r, codec, t),
        Kernel::Dequantize(f) => dequantize_with(sm, f, codec, t),
        Kernel::Nvfp4Global => nvfp4_global_with(sm, t),
        Kernel::Convert => convert_with(sm, t),
    }
}

/// Every recipe with a kernel: three MX formats × {Floor, RCeil}, NVFP4.
pub fn recipes() -> Vec<Recipe> {
    let mut out = Vec::new();
    for f in [Format::Mxfp8E4m3, Format::Mxfp8E5m2, Format::Mxfp4] {
        for mode in [ScaleMode::Floor, ScaleMode::RCeil] {
            out.extend(Recipe::new(f, mode));
        }
    }
    out.push(Recipe::default_for(Format::Nvfp4));
    out
}

/// The default variants for `sm` (the SM's default codec): seven quantize
/// kernels, four dequantize kernels, the NVFP4 global-scale kernel and the
/// layout conversion (the NVFP4 absmax partials are the FP8 family's
/// `fp8_absmax_partials`).
pub fn variants(sm: Sm) -> Result<Vec<PtxModule>> {
    let codec = Codec::for_sm(sm);
    let mut out = Vec::new();
    for r in recipes() {
        out.push(generate_quantize(sm, r, codec)?);
    }
    for f in Format::ALL {
        out.push(generate_dequantize(sm, f, codec)?);
    }
    out.push(generate_nvfp4_global(sm)?);
    out.push(generate_convert(sm)?);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_division_is_exact_below_2_pow_31() {
        let mut ds: Vec<u32> = (1..=4096).collect();
        for k in 1..31 {
            let p = 1u32 << k;
            ds.extend([p - 1, p, p + 1]);
        }
        ds.extend([
            (1 << 31) - 1,
            0x7FFF_FFFE,
            641,
            6_700_417,
            1_000_003,
            0x5555_5555,
        ]);
        let mut seed = 0x9E37_79B9u32;
        for &d in ds.iter().filter(|&&d| d < 1 << 31) {
            let (magic, shift) = div_magic(d);
            let div = |n: u32| ((u64::from(n) * u64::from(magic)) >> shift) as u32;
            let mut ns = vec![0, 1, d - 1, d, d.saturating_add(1), (1 << 31) - 1];
            let top = ((1u32 << 31) - 1) / d;
            for q in [1, 2, top.saturating_sub(1), top] {
                let base = q.saturating_mul(d);
                ns.extend([base.saturating_sub(1), base, base.saturating_add(1)]);
            }
            for _ in 0..64 {
                seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                ns.push(seed >> 1);
            }
            for n in ns.into_iter().filter(|&n| n < 1 << 31) {
                assert_eq!(div(n), n / d, "{n} / {d} (magic {magic}, shift {shift})");
            }
        }
        // Every n below 2^20 for small divisors.
        for d in 1..=64u32 {
            let (magic, shift) = div_magic(d);
            for n in 0..1u32 << 20 {
                assert_eq!(((u64::from(n) * u64::from(magic)) >> shift) as u32, n / d);
            }
        }
    }

    #[test]
    fn strides_reproduce_every_layout_offset() {
        for (l, m, nkb) in [(1, 1, 1), (2, 129, 5), (3, 300, 9), (1, 127, 4)] {
            let dims = ScaleDims::new(l, m, nkb).unwrap();
            for layout in ScaleLayout::ALL {
                let s = layout_strides(layout, &dims);
                for li in 0..l {
                    for mi in 0..m {
                        for kb in 0..nkb {
                            let d = [mi % 32, (mi % 128) / 32, mi / 128, kb % 4, kb / 4, li];
                            let got: u32 = d.iter().zip(s).fold(0u32, |a, (&d, s)| {
                                a.wrapping_add((d as u32).wrapping_mul(s))
                            });
                            let want = layout.offset(&dims, li, mi, kb).unwrap();
                            assert_eq!(got as usize, want, "{layout:?} {li} {mi} {kb}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn every_variant_builds_on_every_sm() {
        for sm in Sm::ALL {
            let v = variants(sm).unwrap();
            assert_eq!(v.len(), 13, "{sm}");
            let names: std::collections::BTreeSet<_> = v.iter().map(|m| m.kernel.clone()).collect();
            assert_eq!(names.len(), 13);
            let hw = v
                .iter()
                .any(|m| m.ptx.contains("e2m1x2") || m.ptx.contains("ue8m0x2"));
            assert_eq!(hw, sm.supports(Feature::BlockScaleCvt), "{sm}");
        }
    }

    #[test]
    fn hardware_codec_needs_sm89() {
        let r = Recipe::default_for(Format::Mxfp4);
        assert!(matches!(
            generate_quantize(Sm::Sm80, r, Codec::Hardware),
            Err(Error::UnsupportedFeature { .. })
        ));
        assert!(generate_quantize(Sm::Sm80, r, Codec::Software).is_ok());
        assert!(generate_dequantize(Sm::Sm100a, Format::Nvfp4, Codec::Software).is_ok());
    }
}
