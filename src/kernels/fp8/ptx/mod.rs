//! PTX generators for the FP8 kernels of [`super`].
//!
//! Six kernels, each generated per SM:
//!
//! | kernel | what it does |
//! |---|---|
//! | [`ABSMAX_PARTIALS`] | grid of blocks; each block folds `max.f32` over `\|x\|` (sign bit cleared on the integer bits) with a grid-stride loop, reduces across the block (warp butterfly shuffles, then shared memory) and writes one partial per block |
//! | `fp8_absmax_finalize_<fmt>` | one block reduces the partials and writes `stats = [amax, scale, scale_inv]` (scale rule of [`super::host`], `div.rn`); run by the absmax entry points |
//! | `fp8_quantize_<fmt>` | current scaling: every block reduces the partials itself and derives the scale (the finalize kernel's loop, reduction and rule), block 0 writes `stats`; then `codes[i] = encode(x[i] · scale)` (two launches in all, no host round trip) |
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
use crate::dsl::blocks::{self, ReduceOp, grid_stride_vec4};
use crate::dsl::params::Ptr;
use crate::dsl::types::{F32, Reg, U8, U32, U64};
use crate::dsl::{Cmp, GlobalPtr, KernelBuilder, PtxModule, Rounding, SharedArray};
use crate::error::Result;
use crate::kernel_params;
use crate::target::{Feature, Sm};

mod codec;
mod tuning;

pub use codec::{SwSpec, rne_shr_model, sw_encode_model};
pub(crate) use codec::{decode1, decode4, encode1, encode4};
pub use tuning::{Fp8Tuning, Fp8TuningError};

/// Threads per block of every FP8 kernel in the default tuning
/// ([`Fp8Tuning::default_for`], which gives the reasons), on every SM.
pub const BLOCK: u32 = 256;
/// Elements each thread handles per pass when the grid is not capped: the
/// grid is `ceil(n / (BLOCK · ITEMS_PER_THREAD))` blocks, at most
/// [`BLOCKS_PER_SM`] per multiprocessor.
pub const ITEMS_PER_THREAD: u64 = 16;
/// Grid cap per multiprocessor of [`grid_blocks`]: at least the resident
/// CTAs of every target (4 on sm_75, 6 on sm_86/89/120, 8 elsewhere at
/// 256 threads). The FP8 launch code caps at each SM's resident CTAs
/// instead ([`Fp8Tuning::default_for`]); the NVFP4 absmax pass uses this.
pub const BLOCKS_PER_SM: u32 = 8;

/// Grid-stride trips a dequantize thread runs at a time in the default
/// tuning (their loads issued together).
pub(crate) const DEQUANTIZE_UNROLL: u64 = 4;

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
    /// Arguments of `fp8_quantize_<fmt>` (current scaling): every block
    /// reduces the `count` absmax `partials` of [`ABSMAX_PARTIALS`] itself
    /// and derives the scale (the finalize kernel's rule); block 0 also
    /// writes `stats = [amax, scale, scale_inv]`.
    pub struct QuantizeArgs => QuantizeRegs {
        x: Ptr<F32>,
        n: U64,
        partials: Ptr<F32>,
        count: U32,
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
    let per_block = u64::from(BLOCK) * ITEMS_PER_THREAD;
    crate::kernels::grid::ctas(n, per_block, sms, BLOCKS_PER_SM)
}

// ---------------------------------------------------------------------------
// Loops and reductions
// ---------------------------------------------------------------------------

/// `acc = max(acc, |bits|)`: the sign bit cleared on the integer bits,
/// then `max.f32`, which ignores a NaN operand.
pub(crate) fn fold_abs(b: &mut KernelBuilder, acc: Reg<F32>, bits: Reg<U32>) {
    let m = b.and(bits, 0x7FFF_FFFFu32);
    let a = b.f32_from_bits(m);
    let next = b.fmax(acc, a);
    b.assign(acc, next);
}

/// `max.f32` across the block ([`blocks::block_reduce_with_fill`] with
/// the fill `0.0`: every value folded here is `|x| ≥ +0`). The result is
/// valid in thread 0 (and in all of warp 0).
pub(crate) fn block_max(
    b: &mut KernelBuilder,
    v: Reg<F32>,
    scratch: &SharedArray<F32>,
) -> Reg<F32> {
    blocks::block_reduce_with_fill(b, ReduceOp::Max, v, scratch, 0.0f32)
}

// ---------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------

/// A builder for a kernel of `t`'s block size, its tuning key `codec`'s
/// (`"sw"` for the software codec where the SM has the hardware one) and
/// `t`'s (when not the SM's default), joined by `_`.
fn tuned_builder(sm: Sm, name: &str, codec_key: &str, t: &Fp8Tuning) -> KernelBuilder {
    let mut b = KernelBuilder::new(name, sm);
    b.maxntid(t.threads, 1, 1);
    let tk = t.key_on(sm);
    let key = match (codec_key.is_empty(), tk.is_empty()) {
        (_, true) => codec_key.to_string(),
        (true, false) => tk,
        (false, false) => format!("{codec_key}_{tk}"),
    };
    b.tuning(key);
    b
}

/// First absmax pass.
pub fn generate_absmax_partials(sm: Sm) -> Result<PtxModule> {
    absmax_partials_with(sm, &Fp8Tuning::default_for(sm))
}

fn absmax_partials_with(sm: Sm, t: &Fp8Tuning) -> Result<PtxModule> {
    t.check()?;
    let mut b = tuned_builder(sm, ABSMAX_PARTIALS, "", t);
    let p = b.params::<AbsmaxPartialsArgs>();
    let scratch = b.shared_array::<F32>("warp_max", t.threads / 32, 4);
    let words: GlobalPtr<U32> = p.x.cast();
    let acc = b.mov(0.0f32);
    grid_stride_vec4(
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
    let t0 = blocks::is_thread0(&mut b);
    b.if_(t0, |b| {
        let block = b.ctaid_x();
        let out = b.offset(p.partials, block);
        b.st_global(out, 0, m);
    });
    b.finish()
}

/// `acc = max(acc, partials[i])` for the `i = %tid.x, %tid.x + %ntid.x,
/// … < count` of this thread (`max.f32`; the partials are `≥ +0`, never
/// NaN).
fn fold_partials(b: &mut KernelBuilder, acc: Reg<F32>, partials: GlobalPtr<F32>, count: Reg<U32>) {
    let tid = b.tid_x();
    let ntid = b.ntid_x();
    b.for_range(tid, count, ntid, |b, i| {
        let q = b.offset(partials, i);
        let v = b.ld_global(q, 0);
        let next = b.fmax(acc, v);
        b.assign(acc, next);
    });
}

/// `(scale, scale_inv)` of `amax` for format `f` (the host's rule):
/// `scale = MAX / amax` (`div.rn`) when `0 < amax < Inf` and the quotient
/// is finite, else 1; `scale_inv = 1 / scale` (`div.rn`).
fn scale_of(b: &mut KernelBuilder, f: Format, amax: Reg<F32>) -> (Reg<F32>, Reg<F32>) {
    // amax ≥ +0 and never NaN here, so the bits order like the values.
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
    (scale, scale_inv)
}

/// `stats = [amax, scale, scale_inv]`.
fn store_stats(
    b: &mut KernelBuilder,
    stats: GlobalPtr<F32>,
    amax: Reg<F32>,
    scale: Reg<F32>,
    scale_inv: Reg<F32>,
) {
    b.st_global(stats, 0, amax);
    b.st_global(stats, 1, scale);
    b.st_global(stats, 2, scale_inv);
}

/// Second absmax pass for format `f`: one block of [`BLOCK`] threads.
pub fn generate_absmax_finalize(sm: Sm, f: Format) -> Result<PtxModule> {
    absmax_finalize_with(sm, f, &Fp8Tuning::default_for(sm))
}

fn absmax_finalize_with(sm: Sm, f: Format, t: &Fp8Tuning) -> Result<PtxModule> {
    t.check()?;
    let mut b = tuned_builder(sm, &kernel_name(Kind::AbsmaxFinalize, f), "", t);
    let p = b.params::<AbsmaxFinalizeArgs>();
    let scratch = b.shared_array::<F32>("warp_max", t.threads / 32, 4);
    let acc = b.mov(0.0f32);
    fold_partials(&mut b, acc, p.partials, p.count);
    let amax = block_max(&mut b, acc, &scratch);
    let t0 = blocks::is_thread0(&mut b);
    b.if_(t0, |b| {
        let (scale, scale_inv) = scale_of(b, f, amax);
        store_stats(b, p.stats, amax, scale, scale_inv);
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
    grid_stride_vec4(
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

fn builder_for(sm: Sm, kind: Kind, f: Format, codec: Codec, t: &Fp8Tuning) -> KernelBuilder {
    tuned_builder(sm, &kernel_name(kind, f), codec.tuning(sm), t)
}

/// Quantize with current scaling, the finalize pass folded in: every
/// block first reduces the `count` absmax partials (the finalize kernel's
/// loop and block reduction; the amax is a `max`, so the same bits in
/// every block), thread 0 derives the scale by the finalize kernel's rule
/// and hands it to the block through shared memory, and thread 0 of
/// block 0 writes `stats`. No block reads what another writes in this
/// launch: the partials come from the previous launch, and only block 0
/// touches `stats`.
pub fn generate_quantize(sm: Sm, f: Format, codec: Codec) -> Result<PtxModule> {
    quantize_with(sm, f, codec, &Fp8Tuning::default_for(sm))
}

fn quantize_with(sm: Sm, f: Format, codec: Codec, t: &Fp8Tuning) -> Result<PtxModule> {
    t.check()?;
    let mut b = builder_for(sm, Kind::Quantize, f, codec, t);
    let p = b.params::<QuantizeArgs>();
    let scratch = b.shared_array::<F32>("warp_max", t.threads / 32, 4);
    let acc = b.mov(0.0f32);
    fold_partials(&mut b, acc, p.partials, p.count);
    let amax = block_max(&mut b, acc, &scratch);
    // `block_max` read `scratch` after its barrier: another barrier before
    // thread 0 reuses slot 0 for the scale.
    b.bar_sync();
    let t0 = blocks::is_thread0(&mut b);
    b.if_(t0, |b| {
        let (scale, scale_inv) = scale_of(b, f, amax);
        let slot = b.shared_elem(&scratch, 0u32);
        b.st_shared(slot, 0, scale);
        let block = b.ctaid_x();
        let first = b.setp(Cmp::Eq, block, 0u32);
        b.if_(first, |b| store_stats(b, p.stats, amax, scale, scale_inv));
    });
    b.bar_sync();
    let slot = b.shared_elem(&scratch, 0u32);
    let scale = b.ld_shared(slot, 0);
    quantize_body(&mut b, f, codec, p.x, p.n, scale, p.codes);
    b.finish()
}

/// Quantize with a caller-given scale (delayed scaling).
pub fn generate_quantize_scaled(sm: Sm, f: Format, codec: Codec) -> Result<PtxModule> {
    quantize_scaled_with(sm, f, codec, &Fp8Tuning::default_for(sm))
}

fn quantize_scaled_with(sm: Sm, f: Format, codec: Codec, t: &Fp8Tuning) -> Result<PtxModule> {
    t.check()?;
    let mut b = builder_for(sm, Kind::QuantizeScaled, f, codec, t);
    let p = b.params::<QuantizeScaledArgs>();
    quantize_body(&mut b, f, codec, p.x, p.n, p.scale, p.codes);
    b.finish()
}

/// The dequantize loop: `y[i] = decode(codes[i]) · scale_inv` (`mul.rn`),
/// `unroll` grid-stride trips at a time.
#[allow(clippy::too_many_arguments)]
fn dequantize_body(
    b: &mut KernelBuilder,
    f: Format,
    codec: Codec,
    unroll: u64,
    codes: GlobalPtr<U8>,
    n: Reg<U64>,
    scale_inv: Reg<F32>,
    y: GlobalPtr<F32>,
) {
    let words: GlobalPtr<U32> = codes.cast();
    // One group: four codes (one 32-bit load) → four f32 (one 16-byte store).
    let group = |b: &mut KernelBuilder, w: Reg<U32>, g: Reg<U64>| {
        let v = decode4(b, f, codec, w);
        let yv = v.map(|vi| b.fmul(Rounding::Rn, vi, scale_inv));
        let e = b.shl(g, 2u32);
        let yp = b.offset64(y, e);
        b.st_global_v4(yp, 0, yv);
    };
    let load = |b: &mut KernelBuilder, g: Reg<U64>| {
        let cp = b.offset64(words, g);
        b.ld_global_nc(cp, 0)
    };
    // The grid-stride loop of `grid_stride_vec4` (the same groups for the
    // same threads), `unroll` trips at a time while they are all in range
    // ([`DEQUANTIZE_UNROLL`] by default): their code loads (4 bytes a
    // lane) are issued together, so a thread has `unroll` in flight
    // instead of one, every access still coalesced across the warp.
    let groups = b.shr(n, 2u32);
    let gid = b.global_id_x_u64();
    let (ntid, nctaid) = (b.ntid_x(), b.nctaid_x());
    let stride = b.mul_wide_u32(ntid, nctaid);
    let last = b.mul_lo(stride, unroll - 1);
    let step = b.mul_lo(stride, unroll);
    let g = b.mov(gid);
    b.while_(
        |b| {
            let end = b.add(g, last);
            b.setp(Cmp::Lt, end, groups)
        },
        |b| {
            let mut gs = vec![g];
            for _ in 1..unroll {
                let prev = gs[gs.len() - 1];
                gs.push(b.add(prev, stride));
            }
            let ws: Vec<Reg<U32>> = gs.iter().map(|&gi| load(b, gi)).collect();
            for (&w, &gi) in ws.iter().zip(&gs) {
                group(b, w, gi);
            }
            let next = b.add(g, step);
            b.assign(g, next);
        },
    );
    b.while_(
        |b| b.setp(Cmp::Lt, g, groups),
        |b| {
            let w = load(b, g);
            group(b, w, g);
            let next = b.add(g, stride);
            b.assign(g, next);
        },
    );
    // The `n mod 4` tail elements, one a thread.
    let first = b.shl(groups, 2u32);
    let left = b.sub(n, first);
    let mine = b.setp(Cmp::Lt, gid, left);
    b.if_(mine, |b| {
        let e = b.add(first, gid);
        let cp = b.offset64(codes, e);
        let c = b.ld_global_nc(cp, 0);
        let v = decode1(b, f, codec, c);
        let yv = b.fmul(Rounding::Rn, v, scale_inv);
        let yp = b.offset64(y, e);
        b.st_global(yp, 0, yv);
    });
}

/// Dequantize: `y[i] = decode(codes[i]) · scale_inv` (`mul.rn`).
pub fn generate_dequantize(sm: Sm, f: Format, codec: Codec) -> Result<PtxModule> {
    dequantize_with(sm, f, codec, &Fp8Tuning::default_for(sm))
}

fn dequantize_with(sm: Sm, f: Format, codec: Codec, t: &Fp8Tuning) -> Result<PtxModule> {
    t.check()?;
    let mut b = builder_for(sm, Kind::Dequantize, f, codec, t);
    let p = b.params::<DequantizeArgs>();
    let u = u64::from(t.unroll);
    dequantize_body(&mut b, f, codec, u, p.codes, p.n, p.scale_inv, p.y);
    b.finish()
}

/// Dequantize with `scale_inv = stats[2]`, loaded once per thread from the
/// stats buffer a quantize wrote (no host round trip).
pub fn generate_dequantize_stats(sm: Sm, f: Format, codec: Codec) -> Result<PtxModule> {
    dequantize_stats_with(sm, f, codec, &Fp8Tuning::default_for(sm))
}

fn dequantize_stats_with(sm: Sm, f: Format, codec: Codec, t: &Fp8Tuning) -> Result<PtxModule> {
    t.check()?;
    let mut b = builder_for(sm, Kind::DequantizeStats, f, codec, t);
    let p = b.params::<DequantizeStatsArgs>();
    let scale_inv = b.ld_global(p.stats, 2);
    let u = u64::from(t.unroll);
    dequantize_body(&mut b, f, codec, u, p.codes, p.n, scale_inv, p.y);
    b.finish()
}

/// Generate `kind` for `sm`, format `f`, with `codec` (ignored by the
/// absmax kernels). Asking for [`Codec::Hardware`] below sm_89 is an
/// [`crate::Error::UnsupportedFeature`].
pub fn generate(sm: Sm, kind: Kind, f: Format, codec: Codec) -> Result<PtxModule> {
    generate_tuned(sm, kind, f, codec, &Fp8Tuning::default_for(sm))
}

/// [`generate`] with the launch shape `t` (its `threads` bound the block,
/// its `unroll` the dequantize loops): launch it with `t.threads` threads
/// per block and [`Fp8Tuning::grid_blocks`] blocks (the finalize kernel:
/// one block). `t` equal to [`Fp8Tuning::default_for`]`(sm)` gives
/// [`generate`]'s module, text and name; the bits are the same for every
/// tuning.
///
/// # Errors
/// [`crate::Error::InvalidArgument`] for a tuning that fails
/// [`Fp8Tuning::check`]; as [`generate`] otherwise.
pub fn generate_tuned(
    sm: Sm,
    kind: Kind,
    f: Format,
    codec: Codec,
    t: &Fp8Tuning,
) -> Result<PtxModule> {
    match kind {
        Kind::AbsmaxPartials => absmax_partials_with(sm, t),
        Kind::AbsmaxFinalize => absmax_finalize_with(sm, f, t),
        Kind::Quantize => quantize_with(sm, f, codec, t),
        Kind::QuantizeScaled => quantize_scaled_with(sm, f, codec, t),
        Kind::Dequantize => dequantize_with(sm, f, codec, t),
        Kind::DequantizeStats => dequantize_stats_with(sm, f, codec, t),
    }
}

/// The old name of [`variants`].
#[deprecated(note = "use `fp8::ptx::variants`, the name every family uses")]
pub fn default_variants(sm: Sm) -> Result<Vec<PtxModule>> {
    variants(sm)
}

/// The default variants for `sm` (the SM's default codec), both formats:
/// one absmax-partials module and five modules per format.
pub fn variants(sm: Sm) -> Result<Vec<PtxModule>> {
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
    use super::*;

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
            let v = variants(sm).unwrap();
            // absmax partials + 5 kinds × 2 formats
            assert_eq!(v.len(), 11);
            let names: std::collections::BTreeSet<_> =
                v.iter().map(|m| m.kernel.as_str()).collect();
            assert_eq!(names.len(), 11, "{names:?}");
            assert!(names.contains("fp8_dequantize_stats_e5m2"));
        }
    }
}
