//! Launch code for [`super`], one request per operation (an [`Encoding`]:
//! the FP8 [`Format`] and the device [`Codec`]; the slice API on a backend
//! takes the format alone and uses the SM's codec), in three layers that
//! share one launch sequence per operation (written against [`Stream`], so
//! the GPU and the simulator run the same copies and launches):
//!
//! * **device entry points** (`*_dev`): device buffers or foreign views
//!   in and out, queued on a stream, nothing crosses the bus. A quantize
//!   writes its codes and its `[amax, scale, scale_inv]` stats on the
//!   device, and [`dequantize_stats_dev`] reads `scale_inv` from those
//!   stats there, so quantize → dequantize chains without a download;
//! * **raw-pointer twins** (`*_raw`, `unsafe`): thin wrappers viewing
//!   another stack's memory as foreign views, on its stream;
//! * **the slice API**: upload, run, download, on a [`Backend`]
//!   ([`quantize`], [`dequantize`], …; the `_as` forms take the format) or
//!   a stream (`*_on`).
//!
//! Current scaling runs two kernels back to back: the absmax partials (a
//! grid of blocks, one partial maximum each), and the quantize kernel,
//! whose blocks each reduce the partials and derive the scale themselves
//! (block 0 writes the stats). The absmax entry points run the partials
//! and the one-block finalize kernel that writes the stats.
//!
//! The slice API runs the SM's default codec ([`Codec::for_sm`]);
//! `Backend::Sim` simulates [`crate::kernels::dispatch::default_sim_sm`].
//! The device entry points take the codec, so any variant runs on
//! `Context::sim(sm)`.

use super::host::{self, Format, Quantized};
use super::ptx::{
    self, AbsmaxFinalizeArgs, AbsmaxPartialsArgs, Codec, DequantizeArgs, DequantizeStatsArgs,
    Fp8Tuning, QuantizeArgs, QuantizeScaledArgs, STATS_LEN,
};
use crate::dsl::PtxModule;
use crate::dsl::params::{ArgValue, DevPtr, KernelParams};
use crate::dsl::types::{F32, U8};
#[cfg(doc)]
use crate::error::Error;
use crate::error::{ArgError, Result};
use crate::exec::{CUdeviceptr, LaunchConfig};
use crate::kernels::dispatch::dispatch;
use crate::kernels::{check, memo, raw};
use crate::runtime::backend::{Backend, Ran};
use crate::runtime::buffer::{AsDevice, AsDeviceMut, DeviceBuffer};
use crate::runtime::context::{Context, Stream};
use crate::target::Sm;

/// How an FP8 kernel encodes or decodes: the format and the device codec
/// (the sm_89+ `cvt` instructions, or the integer codec every SM has).
/// Both codecs give the same bytes.
///
/// ```
/// use ptxsmith::kernels::fp8::{Codec, Encoding, Format};
/// use ptxsmith::Sm;
/// let e = Encoding::for_sm(Format::E4M3, Sm::Sm90);
/// assert_eq!(e, Encoding { format: Format::E4M3, codec: Codec::Hardware });
/// assert_eq!(Encoding::for_sm(Format::E5M2, Sm::Sm80).codec, Codec::Software);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Encoding {
    /// E4M3 or E5M2.
    pub format: Format,
    /// Hardware `cvt` (sm_89+) or the integer codec.
    pub codec: Codec,
}

impl Encoding {
    /// `format` with `sm`'s default codec ([`Codec::for_sm`]).
    pub fn for_sm(format: Format, sm: Sm) -> Self {
        Self {
            format,
            codec: Codec::for_sm(sm),
        }
    }
}

/// What the two absmax passes did, for tests and diagnostics.
#[derive(Debug, Clone, PartialEq)]
pub struct AbsmaxTrace {
    /// Launch shape of the partials pass.
    pub partials_launch: LaunchConfig,
    /// Launch shape of the finalize pass (always one block).
    pub finalize_launch: LaunchConfig,
    /// The per-block partial maxima, one per block of the first pass.
    pub partials: Vec<f32>,
    /// `[amax, scale, scale_inv]` as the finalize kernel wrote them.
    pub stats: [f32; STATS_LEN],
}

/// Check a delayed-scaling scale: finite and `> 0` (the host model's rule).
///
/// # Errors
/// [`Error::InvalidArgument`] naming the value otherwise.
pub fn validate_scale(scale: f32) -> Result<()> {
    if scale.is_finite() && scale > 0.0 {
        return Ok(());
    }
    Err(ArgError::new(
        "scale",
        "a finite value > 0",
        format!("{scale:?} (bits {:#010x})", scale.to_bits()),
    )
    .with_message(format!(
        "fp8 quantize_with_scale: scale must be finite and > 0, got {scale:?} (bits {:#010x})",
        scale.to_bits()
    ))
    .into())
}

/// The vectorised kernels read four floats as one 16-byte access and four
/// codes as one 4-byte access: a device address must be aligned for them.
fn check_aligned(what: &str, addr: u64, align: u64) -> Result<()> {
    if addr.is_multiple_of(align) {
        return Ok(());
    }
    Err(ArgError::new(
        what,
        format!("a {align}-byte aligned device address"),
        format!("{addr:#x}"),
    )
    .with_message(format!(
        "fp8: {what} at device address {addr:#x} is not {align}-byte aligned (the kernels access {align} bytes at a time; slice at a multiple of {} elements)",
        if what.starts_with("codes") {
            align
        } else {
            align / 4
        }
    ))
    .into())
}

fn stats_len(got: usize) -> Result<()> {
    check::len("fp8", "stats", got, STATS_LEN, "[amax, scale, scale_inv]")
}

/// Where a launch sequence runs.
#[derive(Clone, Copy)]
struct On<'a> {
    stream: &'a Stream,
}

impl On<'_> {
    fn ctx(&self) -> &Context {
        self.stream.context()
    }

    /// The SM's default launch shape ([`Fp8Tuning::default_for`]).
    fn tuning(&self) -> Fp8Tuning {
        Fp8Tuning::default_for(self.ctx().sm())
    }

    fn blocks(&self, n: u64) -> u32 {
        self.tuning()
            .grid_blocks(n, self.ctx().multiprocessor_count())
    }

    fn launch(&self, m: &PtxModule, blocks: u32, args: &[ArgValue]) -> Result<LaunchConfig> {
        let cfg = LaunchConfig::linear(blocks, self.tuning().threads);
        self.stream.launch(m, cfg, args)?;
        Ok(cfg)
    }
}

/// The first absmax pass over the `n` floats at `x`: returns the partials
/// scratch buffer (one float per block; freed when dropped, after the
/// work ran), its launch shape and its device pointer.
fn partials_pass(
    on: On<'_>,
    x: DevPtr<F32>,
    n: u64,
) -> Result<(DeviceBuffer<f32>, LaunchConfig, DevPtr<F32>)> {
    let m1 = memo!(ptx::generate_absmax_partials, on.ctx().sm())?;
    check_aligned("x", x.addr, 16)?;
    let blocks = on.blocks(n);
    let mut partials = on.ctx().alloc::<f32>(blocks as usize)?;
    let a1 = AbsmaxPartialsArgs {
        x,
        n,
        partials: on.stream.arg_mut("partials", &mut partials)?,
    };
    let c1 = on.launch(m1, blocks, &a1.args())?;
    let p = on.stream.arg("partials", &partials)?;
    Ok((partials, c1, p))
}

/// Both absmax passes over the `n` floats at `x`, writing
/// `[amax, scale, scale_inv]` for format `f` to `stats`. Returns the
/// partials scratch buffer (freed when dropped, after the work ran) and
/// the two launch shapes.
fn absmax_passes(
    on: On<'_>,
    x: DevPtr<F32>,
    n: u64,
    f: Format,
    stats: DevPtr<F32>,
) -> Result<(DeviceBuffer<f32>, LaunchConfig, LaunchConfig)> {
    let m2 = memo!(ptx::generate_absmax_finalize, on.ctx().sm(), f)?;
    let (partials, c1, pp) = partials_pass(on, x, n)?;
    let a2 = AbsmaxFinalizeArgs {
        partials: pp,
        count: c1.grid.0,
        stats,
    };
    let c2 = on.launch(m2, 1, &a2.args())?;
    Ok((partials, c1, c2))
}

/// Current scaling: the absmax partials pass, then the quantize kernel,
/// whose blocks reduce the partials themselves (block 0 writes `stats`).
fn quantize_core(
    on: On<'_>,
    x: DevPtr<F32>,
    n: u64,
    f: Format,
    codec: Codec,
    codes: DevPtr<U8>,
    stats: DevPtr<F32>,
) -> Result<()> {
    check_aligned("codes", codes.addr, 4)?;
    let m = memo!(ptx::generate_quantize, on.ctx().sm(), f, codec)?;
    let (_partials, c1, partials) = partials_pass(on, x, n)?;
    let args = QuantizeArgs {
        x,
        n,
        partials,
        count: c1.grid.0,
        stats,
        codes,
    };
    on.launch(m, on.blocks(n), &args.args())?;
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn quantize_scaled_core(
    on: On<'_>,
    x: DevPtr<F32>,
    n: u64,
    scale: f32,
    f: Format,
    codec: Codec,
    codes: DevPtr<U8>,
) -> Result<()> {
    validate_scale(scale)?;
    check_aligned("x", x.addr, 16)?;
    check_aligned("codes", codes.addr, 4)?;
    let m = memo!(ptx::generate_quantize_scaled, on.ctx().sm(), f, codec)?;
    let args = QuantizeScaledArgs { x, n, scale, codes };
    on.launch(m, on.blocks(n), &args.args())?;
    Ok(())
}

/// The scale a dequantize multiplies by: a value, or `stats[2]` on the
/// device.
#[derive(Clone, Copy)]
enum ScaleInv {
    Value(f32),
    Stats(DevPtr<F32>),
}

fn dequantize_core(
    on: On<'_>,
    codes: DevPtr<U8>,
    n: u64,
    scale_inv: ScaleInv,
    f: Format,
    codec: Codec,
    y: DevPtr<F32>,
) -> Result<()> {
    check_aligned("codes", codes.addr, 4)?;
    check_aligned("y", y.addr, 16)?;
    let sm = on.ctx().sm();
    match scale_inv {
        ScaleInv::Value(scale_inv) => {
            let m = memo!(ptx::generate_dequantize, sm, f, codec)?;
            let args = DequantizeArgs {
                codes,
                n,
                scale_inv,
                y,
            };
            on.launch(m, on.blocks(n), &args.args())?;
        }
        ScaleInv::Stats(stats) => {
            let m = memo!(ptx::generate_dequantize_stats, sm, f, codec)?;
            let args = DequantizeStatsArgs { codes, n, stats, y };
            on.launch(m, on.blocks(n), &args.args())?;
        }
    }
    Ok(())
}

fn len_u64(n: usize) -> u64 {
    // usize is at most 64 bits on every supported host.
    n as u64
}

// ---- device entry points ----------------------------------------------------

/// Both absmax passes over `x` on `stream`, writing `[amax, scale,
/// scale_inv]` for `format` into `stats` (3 elements) on the device.
///
/// ```
/// use ptxsmith::kernels::fp8::{self, Format};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let (x, mut stats) = (st.upload(&[1.0f32, -7.0, f32::NAN, 2.0])?, ctx.alloc::<f32>(3)?);
/// fp8::absmax_dev(&st, Format::E4M3, &x, &mut stats)?;
/// assert_eq!(st.to_vec(&stats)?, [7.0, 64.0, 0.015625]); // amax, 448 / 7, 7 / 448
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] for a `stats` buffer that is not 3 elements
/// or an `x` not 16-byte aligned (a sub-slice at an offset that is not a
/// multiple of 4 elements); [`Error::WrongContext`]; JIT/launch errors.
pub fn absmax_dev(
    stream: &Stream,
    format: Format,
    x: &impl AsDevice<f32>,
    stats: &mut impl AsDeviceMut<f32>,
) -> Result<()> {
    stats_len(stats.as_device().len())?;
    let on = checked_on(stream);
    let n = len_u64(x.as_device().len());
    let (xp, sp) = (stream.arg("x", x)?, stream.arg_mut("stats", stats)?);
    absmax_passes(on, xp, n, format, sp).map(drop)
}

/// Current scaling on the device: absmax, scale and codes, queued on
/// `stream`. Writes `codes` (one per element of `x`) and `stats` =
/// `[amax, scale, scale_inv]`; feed both to [`dequantize_stats_dev`] (or
/// download them) without a round trip. Equal, bit for bit, to
/// [`host::quantize_as`].
///
/// ```
/// use ptxsmith::kernels::fp8::{self, Encoding, Format};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let enc = Encoding::for_sm(Format::E4M3, ctx.sm());
/// let x = st.upload(&[1.0f32, -2.0, 448.0, 0.5])?;
/// let (mut codes, mut stats, mut y) = (ctx.alloc::<u8>(4)?, ctx.alloc::<f32>(3)?, ctx.alloc::<f32>(4)?);
/// fp8::quantize_dev(&st, enc, &x, &mut codes, &mut stats)?;
/// fp8::dequantize_stats_dev(&st, enc, &codes, &stats, &mut y)?; // no round trip
/// assert_eq!(st.to_vec(&stats)?[0], 448.0); // amax
/// assert_eq!(st.to_vec(&y)?, [1.0, -2.0, 448.0, 0.5]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] when `codes` and `x` differ in length,
/// `stats` is not 3 elements, `x` is not 16-byte or `codes` not 4-byte
/// aligned (the kernels' vector accesses); [`Error::WrongContext`];
/// [`Error::UnsupportedFeature`] for
/// [`Codec::Hardware`] below sm_89. Nothing is queued on error.
pub fn quantize_dev(
    stream: &Stream,
    enc: Encoding,
    x: &impl AsDevice<f32>,
    codes: &mut impl AsDeviceMut<u8>,
    stats: &mut impl AsDeviceMut<f32>,
) -> Result<()> {
    let n = x.as_device().len();
    check::same_len("fp8", "codes", codes.as_device().len(), n, "x")?;
    stats_len(stats.as_device().len())?;
    let on = checked_on(stream);
    let (xp, cp, sp) = (
        stream.arg("x", x)?,
        stream.arg_mut("codes", codes)?,
        stream.arg_mut("stats", stats)?,
    );
    quantize_core(on, xp, len_u64(n), enc.format, enc.codec, cp, sp)
}

/// Delayed scaling on the device: `codes[i] = encode(x[i] · scale)`.
///
/// ```
/// use ptxsmith::kernels::fp8::{self, Encoding, Format};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let enc = Encoding::for_sm(Format::E4M3, ctx.sm());
/// let x = st.upload(&[1.0f32, 0.5])?;
/// let mut codes = ctx.alloc::<u8>(2)?;
/// fp8::quantize_with_scale_dev(&st, enc, 2.0, &x, &mut codes)?;
/// assert_eq!(st.to_vec(&codes)?, [fp8::encode_e4m3(2.0), fp8::encode_e4m3(1.0)]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`quantize_dev`], plus a `scale` that is not finite and `> 0`.
pub fn quantize_with_scale_dev(
    stream: &Stream,
    enc: Encoding,
    scale: f32,
    x: &impl AsDevice<f32>,
    codes: &mut impl AsDeviceMut<u8>,
) -> Result<()> {
    let n = x.as_device().len();
    check::same_len("fp8", "codes", codes.as_device().len(), n, "x")?;
    let on = checked_on(stream);
    let (xp, cp) = (stream.arg("x", x)?, stream.arg_mut("codes", codes)?);
    quantize_scaled_core(on, xp, len_u64(n), scale, enc.format, enc.codec, cp)
}

/// Dequantization on the device: `y[i] = decode(codes[i]) · scale_inv`.
///
/// ```
/// use ptxsmith::kernels::fp8::{self, Encoding, Format};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let enc = Encoding::for_sm(Format::E4M3, ctx.sm());
/// let codes = st.upload(&[fp8::encode_e4m3(3.0), fp8::encode_e4m3(-0.5)])?;
/// let mut y = ctx.alloc::<f32>(2)?;
/// fp8::dequantize_dev(&st, enc, 0.25, &codes, &mut y)?;
/// assert_eq!(st.to_vec(&y)?, [0.75, -0.125]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] when `y` and `codes` differ in length, or
/// `codes` is not 4-byte / `y` not 16-byte aligned; [`Error::WrongContext`].
pub fn dequantize_dev(
    stream: &Stream,
    enc: Encoding,
    scale_inv: f32,
    codes: &impl AsDevice<u8>,
    y: &mut impl AsDeviceMut<f32>,
) -> Result<()> {
    let n = codes.as_device().len();
    check::same_len("fp8", "y", y.as_device().len(), n, "codes")?;
    let on = checked_on(stream);
    let (cp, yp) = (stream.arg("codes", codes)?, stream.arg_mut("y", y)?);
    let scale = ScaleInv::Value(scale_inv);
    dequantize_core(on, cp, len_u64(n), scale, enc.format, enc.codec, yp)
}

/// Dequantization with `scale_inv = stats[2]` read on the device from the
/// stats a [`quantize_dev`] wrote: `y[i] = decode(codes[i]) · stats[2]`.
///
/// ```
/// use ptxsmith::kernels::fp8::{self, Encoding, Format};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let enc = Encoding::for_sm(Format::E4M3, ctx.sm());
/// let x = st.upload(&[4.0f32, -1.0])?;
/// let (mut codes, mut stats, mut y) = (ctx.alloc::<u8>(2)?, ctx.alloc::<f32>(3)?, ctx.alloc::<f32>(2)?);
/// fp8::quantize_dev(&st, enc, &x, &mut codes, &mut stats)?;
/// fp8::dequantize_stats_dev(&st, enc, &codes, &stats, &mut y)?; // scale_inv read on the device
/// assert_eq!(st.to_vec(&y)?, [4.0, -1.0]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`dequantize_dev`], plus a `stats` buffer that is not 3 elements.
pub fn dequantize_stats_dev(
    stream: &Stream,
    enc: Encoding,
    codes: &impl AsDevice<u8>,
    stats: &impl AsDevice<f32>,
    y: &mut impl AsDeviceMut<f32>,
) -> Result<()> {
    let n = codes.as_device().len();
    check::same_len("fp8", "y", y.as_device().len(), n, "codes")?;
    stats_len(stats.as_device().len())?;
    let on = checked_on(stream);
    let (cp, sp, yp) = (
        stream.arg("codes", codes)?,
        stream.arg("stats", stats)?,
        stream.arg_mut("y", y)?,
    );
    let scale = ScaleInv::Stats(sp);
    dequantize_core(on, cp, len_u64(n), scale, enc.format, enc.codec, yp)
}

// ---- raw-pointer twins ---------------------------------------------------------

/// [`quantize_dev`] on raw device addresses of another stack, queued on
/// `stream` (e.g. made with [`Stream::from_raw`]): a thin wrapper viewing
/// `x` (`n` f32s), `codes` (`n` bytes) and `stats` (3 f32s) as
/// [`ForeignSlice`](crate::runtime::ForeignSlice)s. Synchronise the stream before reading the outputs.
///
/// ```
/// use ptxsmith::kernels::fp8::{self, Encoding, Format};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let enc = Encoding::for_sm(Format::E4M3, ctx.sm());
/// let x = st.upload(&[4.0f32, -1.0])?;
/// let (codes, stats) = (ctx.alloc::<u8>(2)?, ctx.alloc::<f32>(3)?);
/// // SAFETY: 2 f32s, 2 bytes and 3 f32s of this context, disjoint.
/// unsafe { fp8::quantize_raw(&st, enc, 2, x.device_ptr(), codes.device_ptr(), stats.device_ptr())? };
/// assert_eq!(stats.to_vec()?[0], 4.0);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Safety
/// * `x`, `codes` and `stats` are device memory of `stream`'s context of
///   those lengths, valid until the kernels have run;
/// * `codes` and `stats` overlap nothing else the kernels access, and
///   nothing else accesses them until the kernels have run.
///
/// # Errors
/// As [`quantize_dev`], and the checks of [`ForeignSlice::from_raw_parts`](crate::runtime::ForeignSlice::from_raw_parts).
pub unsafe fn quantize_raw(
    stream: &Stream,
    enc: Encoding,
    n: usize,
    x: CUdeviceptr,
    codes: CUdeviceptr,
    stats: CUdeviceptr,
) -> Result<()> {
    // SAFETY: the caller's contract covers each range.
    let (x, mut codes, mut stats) = unsafe {
        (
            raw::view::<f32>(stream, x, n)?,
            raw::view_mut::<u8>(stream, codes, n)?,
            raw::view_mut::<f32>(stream, stats, STATS_LEN)?,
        )
    };
    quantize_dev(stream, enc, &x, &mut codes, &mut stats)
}

/// [`quantize_with_scale_dev`] on another stack's memory.
///
/// ```
/// use ptxsmith::kernels::fp8::{self, Encoding, Format};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let enc = Encoding::for_sm(Format::E4M3, ctx.sm());
/// let x = st.upload(&[1.0f32, 0.5])?;
/// let codes = ctx.alloc::<u8>(2)?;
/// // SAFETY: 2 f32s and 2 bytes of this context.
/// unsafe { fp8::quantize_with_scale_raw(&st, enc, 4.0, 2, x.device_ptr(), codes.device_ptr())? };
/// assert_eq!(codes.to_vec()?, [fp8::encode_e4m3(4.0), fp8::encode_e4m3(2.0)]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Safety
/// As [`quantize_raw`], without the stats buffer.
///
/// # Errors
/// As [`quantize_with_scale_dev`].
pub unsafe fn quantize_with_scale_raw(
    stream: &Stream,
    enc: Encoding,
    scale: f32,
    n: usize,
    x: CUdeviceptr,
    codes: CUdeviceptr,
) -> Result<()> {
    // SAFETY: the caller's contract covers each range.
    let (x, mut codes) = unsafe {
        (
            raw::view::<f32>(stream, x, n)?,
            raw::view_mut::<u8>(stream, codes, n)?,
        )
    };
    quantize_with_scale_dev(stream, enc, scale, &x, &mut codes)
}

/// [`dequantize_stats_dev`] on another stack's memory (`stats` as a
/// [`quantize_raw`] wrote it).
///
/// ```
/// use ptxsmith::kernels::fp8::{self, Encoding, Format};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let enc = Encoding::for_sm(Format::E4M3, ctx.sm());
/// let codes = st.upload(&[fp8::encode_e4m3(2.0)])?;
/// let stats = st.upload(&[8.0f32, 56.0, 0.5])?; // [amax, scale, scale_inv]
/// let y = ctx.alloc::<f32>(1)?;
/// // SAFETY: 1 byte, 3 f32s and 1 f32 of this context.
/// unsafe { fp8::dequantize_stats_raw(&st, enc, 1, codes.device_ptr(), stats.device_ptr(), y.device_ptr())? };
/// assert_eq!(y.to_vec()?, [1.0]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Safety
/// * `codes` (`n` bytes), `stats` (3 f32s) and `y` (`n` f32s) are device
///   memory of `stream`'s context valid until the kernel has run; `y`
///   overlaps neither input and nothing else accesses it until then.
///
/// # Errors
/// As [`dequantize_stats_dev`].
pub unsafe fn dequantize_stats_raw(
    stream: &Stream,
    enc: Encoding,
    n: usize,
    codes: CUdeviceptr,
    stats: CUdeviceptr,
    y: CUdeviceptr,
) -> Result<()> {
    // SAFETY: the caller's contract covers each range.
    let (codes, stats, mut y) = unsafe {
        (
            raw::view::<u8>(stream, codes, n)?,
            raw::view::<f32>(stream, stats, STATS_LEN)?,
            raw::view_mut::<f32>(stream, y, n)?,
        )
    };
    dequantize_stats_dev(stream, enc, &codes, &stats, &mut y)
}

/// [`dequantize_dev`] on another stack's memory.
///
/// ```
/// use ptxsmith::kernels::fp8::{self, Encoding, Format};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let enc = Encoding::for_sm(Format::E4M3, ctx.sm());
/// let codes = st.upload(&[fp8::encode_e4m3(2.0)])?;
/// let y = ctx.alloc::<f32>(1)?;
/// // SAFETY: 1 byte and 1 f32 of this context.
/// unsafe { fp8::dequantize_raw(&st, enc, 0.5, 1, codes.device_ptr(), y.device_ptr())? };
/// assert_eq!(y.to_vec()?, [1.0]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Safety
/// As [`dequantize_stats_raw`], without the stats buffer.
///
/// # Errors
/// As [`dequantize_dev`].
pub unsafe fn dequantize_raw(
    stream: &Stream,
    enc: Encoding,
    scale_inv: f32,
    n: usize,
    codes: CUdeviceptr,
    y: CUdeviceptr,
) -> Result<()> {
    // SAFETY: the caller's contract covers each range.
    let (codes, mut y) = unsafe {
        (
            raw::view::<u8>(stream, codes, n)?,
            raw::view_mut::<f32>(stream, y, n)?,
        )
    };
    dequantize_dev(stream, enc, scale_inv, &codes, &mut y)
}

// ---- slice API ----------------------------------------------------------------

fn checked_on(stream: &Stream) -> On<'_> {
    On { stream }
}

/// Run both absmax passes on `stream` and download the partials and stats.
///
/// ```
/// use ptxsmith::kernels::fp8::{self, Format};
/// use ptxsmith::runtime::Context;
///
/// let st = Context::sim(ptxsmith::Sm::Sm80).default_stream();
/// let trace = fp8::absmax_on(&st, Format::E5M2, &[0.5, -3.0])?;
/// assert_eq!(trace.stats[0], 3.0);
/// assert_eq!(trace.partials.len() as u32, trace.partials_launch.grid.0);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`absmax_dev`].
pub fn absmax_on(stream: &Stream, format: Format, xs: &[f32]) -> Result<AbsmaxTrace> {
    let x = stream.upload(xs)?;
    let mut stats = stream.context().alloc::<f32>(STATS_LEN)?;
    let (partials, c1, c2) = absmax_passes(
        checked_on(stream),
        stream.arg("x", &x)?,
        len_u64(xs.len()),
        format,
        stream.arg_mut("stats", &mut stats)?,
    )?;
    let p = stream.to_vec(&partials)?;
    let s = stream.to_vec(&stats)?;
    Ok(AbsmaxTrace {
        partials_launch: c1,
        finalize_launch: c2,
        partials: p,
        stats: [s[0], s[1], s[2]],
    })
}

/// Current scaling on `stream`: upload `xs`, absmax, scale and codes on the
/// device, download the codes and the 12 bytes of stats.
///
/// ```
/// use ptxsmith::kernels::fp8::{self, Encoding, Format};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let q = fp8::quantize_on(&ctx.default_stream(), Encoding::for_sm(Format::E4M3, ctx.sm()), &[1.0, -2.0])?;
/// assert_eq!(q, fp8::host::quantize(&[1.0, -2.0]));
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`quantize_dev`].
pub fn quantize_on(stream: &Stream, enc: Encoding, xs: &[f32]) -> Result<Quantized> {
    let ctx = stream.context();
    let x = stream.upload(xs)?;
    let mut codes = ctx.alloc::<u8>(xs.len())?;
    let mut stats = ctx.alloc::<f32>(STATS_LEN)?;
    quantize_dev(stream, enc, &x, &mut codes, &mut stats)?;
    let s = stream.to_vec(&stats)?;
    Ok(Quantized {
        codes: stream.to_vec(&codes)?,
        scale: s[1],
        scale_inv: s[2],
        amax: s[0],
    })
}

/// Delayed scaling on `stream`: `codes[i] = encode(x[i] · scale)`.
///
/// ```
/// use ptxsmith::kernels::fp8::{self, Encoding, Format};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let enc = Encoding::for_sm(Format::E4M3, ctx.sm());
/// let codes = fp8::quantize_with_scale_on(&ctx.default_stream(), enc, 2.0, &[1.0, 1e6])?;
/// assert_eq!(codes, [fp8::encode_e4m3(2.0), 0x7E]); // saturates to 448
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] for a scale that is not finite and `> 0`.
pub fn quantize_with_scale_on(
    stream: &Stream,
    enc: Encoding,
    scale: f32,
    xs: &[f32],
) -> Result<Vec<u8>> {
    validate_scale(scale)?;
    let x = stream.upload(xs)?;
    let mut codes = stream.context().alloc::<u8>(xs.len())?;
    quantize_with_scale_dev(stream, enc, scale, &x, &mut codes)?;
    stream.to_vec(&codes)
}

/// Dequantization on `stream`: `y[i] = decode(codes[i]) · scale_inv` (no
/// validation of `scale_inv`, as in the host model).
///
/// ```
/// use ptxsmith::kernels::fp8::{self, Encoding, Format};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let enc = Encoding::for_sm(Format::E4M3, ctx.sm());
/// let y = fp8::dequantize_on(&ctx.default_stream(), enc, 2.0, &[fp8::encode_e4m3(1.5)])?;
/// assert_eq!(y, [3.0]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`dequantize_dev`].
pub fn dequantize_on(
    stream: &Stream,
    enc: Encoding,
    scale_inv: f32,
    codes: &[u8],
) -> Result<Vec<f32>> {
    let c = stream.upload(codes)?;
    let mut y = stream.context().alloc::<f32>(codes.len())?;
    dequantize_dev(stream, enc, scale_inv, &c, &mut y)?;
    stream.to_vec(&y)
}

/// Current scaling to E4M3 (see [`quantize_as`]).
///
/// ```
/// use ptxsmith::kernels::fp8;
/// use ptxsmith::runtime::{Backend, Ran};
///
/// let (q, ran) = fp8::quantize(Backend::Host, &[448.0, -1.0])?;
/// assert_eq!((q.amax, q.scale, ran), (448.0, 1.0, Ran::Host));
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`quantize_as`].
pub fn quantize(backend: Backend, xs: &[f32]) -> Result<(Quantized, Ran)> {
    quantize_as(backend, Format::E4M3, xs)
}

/// Current scaling to `format`: `amax`, `scale`, `scale_inv` and the
/// codes, equal to [`host::quantize_as`] on every backend (the SM's
/// default codec on a device).
///
/// ```
/// use ptxsmith::kernels::fp8::{self, Format};
/// use ptxsmith::runtime::Backend;
///
/// let (q, _ran) = fp8::quantize_as(Backend::Sim, Format::E5M2, &[1.0, -8.0, 0.25])?;
/// assert_eq!(q.amax, 8.0);
/// assert_eq!(q, fp8::host::quantize_as(&[1.0, -8.0, 0.25], Format::E5M2));
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// Driver, JIT and launch errors; [`Error::NoDevice`]
/// for [`Backend::Cuda`] without a device.
pub fn quantize_as(backend: Backend, format: Format, xs: &[f32]) -> Result<(Quantized, Ran)> {
    dispatch(
        backend,
        || Ok(host::quantize_as(xs, format)),
        |s| quantize_on(s, Encoding::for_sm(format, s.context().sm()), xs),
    )
}

/// Delayed scaling to E4M3 (see [`quantize_with_scale_as`]).
///
/// ```
/// use ptxsmith::kernels::fp8;
/// use ptxsmith::runtime::Backend;
///
/// let (codes, _ran) = fp8::quantize_with_scale(Backend::Sim, 0.5, &[4.0])?;
/// assert_eq!(codes, [fp8::encode_e4m3(2.0)]);
/// assert!(fp8::quantize_with_scale(Backend::Sim, 0.0, &[4.0]).is_err()); // scale must be > 0
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`quantize_with_scale_as`].
pub fn quantize_with_scale(backend: Backend, scale: f32, xs: &[f32]) -> Result<(Vec<u8>, Ran)> {
    quantize_with_scale_as(backend, Format::E4M3, scale, xs)
}

/// Delayed scaling to `format` with a caller-given scale.
///
/// ```
/// use ptxsmith::kernels::fp8::{self, Format};
/// use ptxsmith::runtime::Backend;
///
/// let (codes, _ran) = fp8::quantize_with_scale_as(Backend::Sim, Format::E5M2, 2.0, &[3.0])?;
/// assert_eq!(codes, [fp8::encode_e5m2(6.0)]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] for a scale that is NaN, infinite, zero or
/// negative (checked before any backend is touched).
pub fn quantize_with_scale_as(
    backend: Backend,
    format: Format,
    scale: f32,
    xs: &[f32],
) -> Result<(Vec<u8>, Ran)> {
    validate_scale(scale)?;
    dispatch(
        backend,
        || host::quantize_with_scale_as(xs, scale, format),
        |s| {
            let enc = Encoding::for_sm(format, s.context().sm());
            quantize_with_scale_on(s, enc, scale, xs)
        },
    )
}

/// E4M3 dequantization (see [`dequantize_as`]).
///
/// ```
/// use ptxsmith::kernels::fp8;
/// use ptxsmith::runtime::Backend;
///
/// let (y, _ran) = fp8::dequantize(Backend::Sim, 0.5, &[fp8::encode_e4m3(3.0)])?;
/// assert_eq!(y, [1.5]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`dequantize_as`].
pub fn dequantize(backend: Backend, scale_inv: f32, codes: &[u8]) -> Result<(Vec<f32>, Ran)> {
    dequantize_as(backend, Format::E4M3, scale_inv, codes)
}

/// Dequantization from `format`: `y[i] = decode(codes[i]) · scale_inv`.
///
/// ```
/// use ptxsmith::kernels::fp8::{self, Format};
/// use ptxsmith::runtime::Backend;
///
/// let (y, _ran) = fp8::dequantize_as(Backend::Sim, Format::E5M2, 1.0, &[fp8::encode_e5m2(-0.25)])?;
/// assert_eq!(y, [-0.25]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// Driver, JIT and launch errors.
pub fn dequantize_as(
    backend: Backend,
    format: Format,
    scale_inv: f32,
    codes: &[u8],
) -> Result<(Vec<f32>, Ran)> {
    dispatch(
        backend,
        || Ok(host::dequantize_as(codes, scale_inv, format)),
        |s| {
            let enc = Encoding::for_sm(format, s.context().sm());
            dequantize_on(s, enc, scale_inv, codes)
        },
    )
}

/// `max |x|` with NaNs ignored (the two absmax passes on a device).
///
/// ```
/// use ptxsmith::kernels::fp8;
/// use ptxsmith::runtime::Backend;
///
/// let (amax, _ran) = fp8::absmax(Backend::Sim, &[1.0, f32::NAN, -9.5])?;
/// assert_eq!(amax, 9.5); // NaN ignored
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// Driver, JIT and launch errors.
pub fn absmax(backend: Backend, xs: &[f32]) -> Result<(f32, Ran)> {
    dispatch(
        backend,
        || Ok(host::absmax(xs)),
        |s| Ok(absmax_on(s, Format::E4M3, xs)?.stats[0]),
    )
}
