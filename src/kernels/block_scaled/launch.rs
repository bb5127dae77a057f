//! Launch code of [`super`]: device entry points on the [`Stream`] /
//! device-buffer API ([`quantize_dev`], [`dequantize_dev`],
//! [`convert_layout_dev`]; under another [`BlockScaledTuning`]:
//! [`quantize_dev_tuned`], [`dequantize_dev_tuned`],
//! [`convert_layout_dev_tuned`]), raw-pointer entry points on another stack's
//! memory and stream ([`quantize_raw`], [`dequantize_raw`]) and the slice
//! API on every [`Backend`]
//! ([`quantize`], [`dequantize`], [`convert_layout`]), one launch sequence
//! each, so the GPU and the simulator run the same copies and launches.
//!
//! * **Quantize**: for a padded layout the scale buffer's first
//!   `layout.len(dims)` bytes are zeroed on the stream first (the kernel
//!   writes only real scales, so the padding ends up 0); NVFP4 first runs
//!   the FP8 family's `fp8_absmax_partials` and
//!   [`NVFP4_GLOBAL`](super::ptx::NVFP4_GLOBAL), which writes `[amax_g,
//!   S_enc, S_dec]` into the caller's 3-float `global` buffer, read by the
//!   quantize kernel on the device (no host round trip).
//! * **Dequantize**: one kernel; NVFP4 reads `S_dec = global[2]`.
//! * **Convert**: one kernel writing every byte of the destination layout
//!   (padding 0).
//!
//! # Buffers, alignment, limits
//! Inputs must be at least as long as the shape needs (`x` exactly
//! `L·M·K`), outputs at least as long as the (padded) layout needs; bytes
//! past that are neither read nor written. A scale buffer in a padded
//! layout (`Blocked128x4`, `Atom6D`) must be 16-byte aligned (what cuBLAS
//! and CUTLASS require of a scale pointer); NVFP4's `x` must be 16-byte
//! aligned (the absmax pass reads four floats at a time). Elsewhere any
//! alignment works: the kernels use vector accesses only when `K % 4 = 0`
//! and the buffers are aligned for them. The kernels index scales with 32
//! bits: `L·M·nkb` and the padded scale size must stay below 2³¹, and `K`
//! too ([`MAX_EXTENT`]).
//!
//! Every check runs before anything is queued: on an error nothing is
//! written.

use super::host::{self, BlockScaled, Format, GlobalScale, Recipe, ScaleMode, Shape, describe};
use super::layout::{ScaleDims, ScaleLayout};
use super::ptx::{
    self, BlockScaledTuning, Codec, ConvertArgs, DequantizeArgs, GLOBAL_LEN, Kernel,
    Nvfp4GlobalArgs, QuantizeArgs,
};
use crate::dsl::PtxModule;
use crate::dsl::params::{DevPtr, KernelParams};
use crate::dsl::types::{F32, U8};
use crate::error::{Error, Result};
use crate::exec::{CUdeviceptr, LaunchConfig};
use crate::kernels::dispatch::dispatch;
use crate::kernels::fp8::ptx::{self as fp8_ptx, AbsmaxPartialsArgs};
use crate::kernels::{check, memo, raw};
use crate::runtime::backend::{Backend, Ran};
use crate::runtime::buffer::{AsDevice, AsDeviceMut, DeviceSlice, DeviceSliceMut};
use crate::runtime::context::Stream;

mod tuned;
pub use tuned::{convert_layout_dev_tuned, dequantize_dev_tuned, quantize_dev_tuned};

/// The largest `K`, `L·M·nkb` and padded scale size the kernels take
/// (`2³¹ − 1`).
pub const MAX_EXTENT: usize = (1 << 31) - 1;

/// Alignment (bytes) of a scale buffer in a padded layout.
pub const SCALE_ALIGN: u64 = 16;

fn limit(what: &str, value: usize) -> Result<()> {
    if value <= MAX_EXTENT {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "block_scaled: {what} = {value} exceeds the kernels' limit {MAX_EXTENT}"
    )))
}

fn check_limits(shape: &Shape) -> Result<()> {
    let dims = shape.scale_dims();
    limit("K", shape.k())?;
    limit("L·M·nkb", dims.count())?;
    limit(
        "the padded scale size",
        ScaleLayout::Blocked128x4.len(&dims),
    )
}

fn check_recipe(recipe: Recipe, shape: &Shape) -> Result<()> {
    if recipe.format() == shape.format() {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "block_scaled: shape was checked for {:?} but the recipe is {:?}",
        shape.format(),
        recipe.format()
    )))
}

/// The global-scale buffer must be there exactly for NVFP4 and hold
/// `[amax_g, S_enc, S_dec]`.
fn check_global(format: Format, global: Option<usize>) -> Result<()> {
    match (format, global) {
        (Format::Nvfp4, Some(len)) => check::at_least(
            "block_scaled",
            "global",
            len,
            GLOBAL_LEN,
            "the global scale [amax_g, S_enc, S_dec]",
        ),
        (Format::Nvfp4, None) => Err(Error::invalid(
            "block_scaled: NVFP4 needs a global-scale buffer of 3 floats",
        )),
        (_, None) => Ok(()),
        (f, Some(_)) => Err(Error::invalid(format!(
            "block_scaled: a {f:?} tensor has no global scale, but a buffer was given"
        ))),
    }
}

fn check_scale_align(layout: ScaleLayout, what: &str, s: &DeviceSlice<'_, u8>) -> Result<()> {
    if layout.is_padded() {
        s.check_aligned(
            &format!("block_scaled: {what} in layout {layout:?}"),
            SCALE_ALIGN,
        )?;
    }
    Ok(())
}

fn aligned(addr: u64, align: u64) -> bool {
    addr.is_multiple_of(align)
}

/// Code bytes a vector access covers (four elements).
fn code_align(f: Format) -> u64 {
    if f.is_fp4() { 2 } else { 4 }
}

/// The kernels' `vec` argument ([`ptx::VEC`], [`ptx::WIDE`]) for a row
/// length `k`, whether the f32 side (`x` or `y`) is 16-byte aligned, and
/// the codes' address: a lane's 16 codes are one vector of
/// `4 · code_align` bytes.
fn access_flags(f: Format, k: usize, f32_aligned: bool, codes: u64) -> u32 {
    let vec = k.is_multiple_of(4) && f32_aligned && aligned(codes, code_align(f));
    let lane = u64::from(ptx::ELEMS_PER_LANE);
    let wide = vec && (k as u64).is_multiple_of(lane) && aligned(codes, 4 * code_align(f));
    match (vec, wide) {
        (true, true) => ptx::VEC | ptx::WIDE,
        (true, false) => ptx::VEC,
        _ => 0,
    }
}

fn u32_of(v: usize) -> u32 {
    // Only called on values checked against MAX_EXTENT.
    v as u32
}

/// The launch of `threads` threads of work under `t`.
fn grid(stream: &Stream, t: &BlockScaledTuning, threads: u64) -> LaunchConfig {
    let ctx = stream.context();
    LaunchConfig::linear(
        t.grid_blocks(threads, ctx.multiprocessor_count()),
        t.threads,
    )
}

/// The module of `kernel` with `codec` under `t`: for the SM's default
/// tuning the plain generators' (memoized as they always were).
fn module(
    stream: &Stream,
    kernel: Kernel,
    codec: Codec,
    t: &BlockScaledTuning,
) -> Result<&'static PtxModule> {
    let sm = stream.context().sm();
    if *t != BlockScaledTuning::default_for(sm) {
        return memo!(ptx::generate_tuned, sm, kernel, codec, t);
    }
    match kernel {
        Kernel::Quantize(r) => memo!(ptx::generate_quantize, sm, r, codec),
        Kernel::Dequantize(f) => memo!(ptx::generate_dequantize, sm, f, codec),
        Kernel::Nvfp4Global => memo!(ptx::generate_nvfp4_global, sm),
        Kernel::Convert => memo!(ptx::generate_convert, sm),
    }
}

fn lanes(shape: &Shape) -> u64 {
    let tpb = (shape.format().block_size() as u32 / ptx::ELEMS_PER_LANE) as u64;
    // Rounded up to a warp, as the quantize kernel loops.
    (shape.scale_dims().count() as u64 * tpb).next_multiple_of(32)
}

/// What a block-scaled quantization does: the `[L, M, K]` tensor's
/// [`Shape`] (checked for its format), the [`Recipe`] (format and scale
/// mode) and the [`ScaleLayout`] of the scales. The request every
/// quantize and dequantize entry point takes; checked once
/// ([`Quantization::validate`]).
///
/// ```
/// use ptxsmith::kernels::block_scaled::{Format, Quantization, Recipe, ScaleLayout, Shape};
///
/// let q = Quantization {
///     shape: Shape::new(1, 128, 64, Format::Mxfp4)?,
///     recipe: Recipe::default_for(Format::Mxfp4),
///     layout: ScaleLayout::Blocked128x4,
/// };
/// q.validate()?;
/// assert_eq!(q.scales_len(), 128 * 4); // one 128 × 4 tile, padded
/// # Ok::<(), ptxsmith::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Quantization {
    /// The input's `[L, M, K]`, checked for the recipe's format.
    pub shape: Shape,
    /// Format and scale mode.
    pub recipe: Recipe,
    /// Where the scale bytes go.
    pub layout: ScaleLayout,
}

impl Quantization {
    /// The request of a quantized tensor (to dequantize it).
    pub fn of(q: &BlockScaled) -> Self {
        Self {
            shape: q.shape,
            recipe: q.recipe,
            layout: q.layout,
        }
    }

    /// Check that the shape was checked for the recipe's format and the
    /// sizes are within the kernels' limits ([`MAX_EXTENT`]).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the values.
    pub fn validate(&self) -> Result<()> {
        check_recipe(self.recipe, &self.shape)?;
        check_limits(&self.shape)
    }

    /// Bytes of the scale buffer in the layout (padding included).
    pub fn scales_len(&self) -> usize {
        self.layout.len(&self.shape.scale_dims())
    }
}

/// Quantizes `x` (row-major `[L, M, K]` f32, exactly `L·M·K` long) as `q`
/// says on `stream`: element codes into `codes` (at least
/// [`Shape::codes_len`] bytes), scale bytes into `scales` in the layout
/// (at least [`Quantization::scales_len`] bytes; padding written 0), and
/// for NVFP4 `[amax_g, S_enc, S_dec]` into `global` (3 floats; `None` for
/// MX formats). Buffers or foreign views. Bit-identical to
/// [`host::quantize`] with either codec.
///
/// ```
/// use ptxsmith::kernels::block_scaled::{self as bs, Codec, Format, Quantization, Recipe, ScaleLayout, Shape};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let shape = Shape::new(1, 2, 32, Format::Mxfp8E4m3)?;
/// let q = Quantization { shape, recipe: Recipe::default_for(Format::Mxfp8E4m3), layout: ScaleLayout::RowMajor };
/// let xs: Vec<f32> = (0..64).map(|i| i as f32 - 30.0).collect();
/// let x = st.upload(&xs)?;
/// let (mut codes, mut scales) = (ctx.alloc::<u8>(shape.codes_len())?, ctx.alloc::<u8>(q.scales_len())?);
/// bs::quantize_dev(&st, q, Codec::for_sm(ctx.sm()), &x, &mut codes, &mut scales, None)?;
/// let want = bs::host::quantize(&xs, shape, q.recipe, q.layout)?;
/// assert_eq!(st.to_vec(&codes)?, want.codes);
/// assert_eq!(st.to_vec(&scales)?, want.scales);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] naming the values: a shape checked for
/// another format, wrong or too small buffers, a missing or superfluous
/// global buffer, a padded layout's scale buffer not 16-byte aligned, an
/// NVFP4 `x` not 16-byte aligned, sizes past [`MAX_EXTENT`];
/// [`Error::UnsupportedFeature`] for [`Codec::Hardware`] below sm_89;
/// [`Error::WrongContext`]; launch errors. Nothing is queued on error.
pub fn quantize_dev(
    stream: &Stream,
    q: Quantization,
    codec: Codec,
    x: &impl AsDevice<f32>,
    codes: &mut impl AsDeviceMut<u8>,
    scales: &mut impl AsDeviceMut<u8>,
    global: Option<DeviceSliceMut<'_, f32>>,
) -> Result<()> {
    let t = BlockScaledTuning::default_for(stream.context().sm());
    quantize_dev_tuned(stream, q, codec, x, codes, scales, global, &t)
}

/// The device memory of one quantize call.
struct QuantizeIo {
    x: DevPtr<F32>,
    codes: DevPtr<U8>,
    scales: DevPtr<U8>,
    global: Option<DevPtr<F32>>,
}

/// Every module a quantize call launches, generated before anything is
/// queued.
struct QuantizeKernels {
    tuning: BlockScaledTuning,
    quant: &'static crate::dsl::PtxModule,
    nvfp4: Option<(
        &'static crate::dsl::PtxModule,
        &'static crate::dsl::PtxModule,
    )>,
}

impl QuantizeKernels {
    fn new(stream: &Stream, recipe: Recipe, codec: Codec, t: &BlockScaledTuning) -> Result<Self> {
        let sm = stream.context().sm();
        let nvfp4 = if recipe.format() == Format::Nvfp4 {
            Some((
                memo!(fp8_ptx::generate_absmax_partials, sm)?,
                module(stream, Kernel::Nvfp4Global, codec, t)?,
            ))
        } else {
            None
        };
        Ok(Self {
            tuning: *t,
            quant: module(stream, Kernel::Quantize(recipe), codec, t)?,
            nvfp4,
        })
    }
}

/// The launches of a quantize call whose arguments have been checked.
fn quantize_core(
    stream: &Stream,
    kernels: &QuantizeKernels,
    io: QuantizeIo,
    shape: Shape,
    layout: ScaleLayout,
    zero_padding: impl FnOnce(&Stream) -> Result<()>,
) -> Result<()> {
    let f = shape.format();
    let dims = shape.scale_dims();
    let vec = access_flags(f, shape.k(), aligned(io.x.addr, 16), io.codes.addr);
    // The padding bytes are zeroed first; without padding (`M % 128 = 0`,
    // `nkb % 4 = 0`) the kernel writes every byte and there is no memset.
    if layout.len(&dims) != dims.count() {
        zero_padding(stream)?;
    }
    if let (Some((m1, m2)), Some(gp)) = (&kernels.nvfp4, io.global) {
        let n = shape.len() as u64;
        let blocks = fp8_ptx::grid_blocks(n, stream.context().multiprocessor_count());
        let mut partials = stream.context().alloc::<f32>(blocks as usize)?;
        let a1 = AbsmaxPartialsArgs {
            x: io.x,
            n,
            partials: stream.arg_mut("partials", &mut partials)?,
        };
        let cfg = LaunchConfig::linear(blocks, fp8_ptx::BLOCK);
        stream.launch(m1, cfg, &a1.args())?;
        let a2 = Nvfp4GlobalArgs {
            partials: stream.arg("partials", &partials)?,
            count: blocks,
            global: gp,
        };
        let one = LaunchConfig::linear(1, kernels.tuning.threads);
        stream.launch(m2, one, &a2.args())?;
    }
    let s = ptx::layout_strides(layout, &dims);
    let nkb_div = ptx::div_magic(u32_of(dims.nkb()));
    let m_div = ptx::div_magic(u32_of(shape.m()));
    let args = QuantizeArgs {
        x: io.x,
        codes: io.codes,
        scales: io.scales,
        global: io.global.unwrap_or(DevPtr::<F32>::new(io.x.addr)),
        m: u32_of(shape.m()),
        k: u32_of(shape.k()),
        nkb: u32_of(dims.nkb()),
        blocks: u32_of(dims.count()),
        vec,
        nkb_magic: nkb_div.0,
        nkb_shift: nkb_div.1,
        m_magic: m_div.0,
        m_shift: m_div.1,
        s_mm32: s[0],
        s_mm4: s[1],
        s_mm: s[2],
        s_kk4: s[3],
        s_kk: s[4],
        s_l: s[5],
    };
    let cfg = grid(stream, &kernels.tuning, lanes(&shape));
    stream.launch(kernels.quant, cfg, &args.args())
}

/// [`quantize_dev`] on raw device addresses of another stack (e.g. a
/// PyTorch tensor and its scale buffer), queued on `stream` (e.g. made
/// with [`Stream::from_raw`]): a thin wrapper viewing `x` (`L·M·K` f32s),
/// `codes` ([`Shape::codes_len`] bytes), `scales`
/// ([`Quantization::scales_len`] bytes) and, for NVFP4, `global` (3 f32s)
/// as [`ForeignSlice`](crate::runtime::ForeignSlice)s.
///
/// ```
/// use ptxsmith::kernels::block_scaled::{self as bs, Codec, Format, Quantization, Recipe, ScaleLayout, Shape};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let shape = Shape::new(1, 1, 32, Format::Mxfp4)?;
/// let q = Quantization { shape, recipe: Recipe::default_for(Format::Mxfp4), layout: ScaleLayout::RowMajor };
/// let codec = Codec::for_sm(ctx.sm());
/// let xs: Vec<f32> = (0..32).map(|i| i as f32 / 4.0).collect();
/// let x = st.upload(&xs)?;
/// let (codes, scales) = (ctx.alloc::<u8>(shape.codes_len())?, ctx.alloc::<u8>(q.scales_len())?);
/// // SAFETY: x, codes and scales are live memory of this context of the
/// // lengths the request gives, disjoint.
/// unsafe { bs::quantize_raw(&st, q, codec, x.device_ptr(), codes.device_ptr(), scales.device_ptr(), None)? };
/// assert_eq!(codes.to_vec()?, bs::host::quantize(&xs, shape, q.recipe, q.layout)?.codes);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Safety
/// * every address is device memory of `stream`'s context with at least
///   the length above, valid until the kernels have run; the outputs
///   overlap no input and each other, and nothing else accesses them
///   until then.
///
/// # Errors
/// As [`quantize_dev`], and the checks of [`ForeignSlice::from_raw_parts`](crate::runtime::ForeignSlice::from_raw_parts).
pub unsafe fn quantize_raw(
    stream: &Stream,
    q: Quantization,
    codec: Codec,
    x: CUdeviceptr,
    codes: CUdeviceptr,
    scales: CUdeviceptr,
    global: Option<CUdeviceptr>,
) -> Result<()> {
    q.validate()?;
    check_global(q.recipe.format(), global.map(|_| GLOBAL_LEN))?;
    let shape = q.shape;
    // SAFETY: the caller's contract covers each range (lengths from the
    // validated request).
    let (x, mut codes, mut scales, mut global) = unsafe {
        (
            raw::view::<f32>(stream, x, shape.len())?,
            raw::view_mut::<u8>(stream, codes, shape.codes_len())?,
            raw::view_mut::<u8>(stream, scales, q.scales_len())?,
            global
                .map(|g| raw::view_mut::<f32>(stream, g, GLOBAL_LEN))
                .transpose()?,
        )
    };
    let global = global.as_mut().map(|g| g.as_device_mut());
    quantize_dev(stream, q, codec, &x, &mut codes, &mut scales, global)
}

/// Dequantizes on `stream` what [`quantize_dev`] wrote for `q`: `y =
/// decode(code) · decode_e8m0(scale)` (MX) or `· (decode_ue4m3(sb) ·
/// S_dec)` with `S_dec = global[2]` (NVFP4), row-major `[L, M, K]` into `y`
/// (at least `L·M·K` floats). Bit-identical to [`host::dequantize`] (NaN
/// bits aside: only "is NaN" is specified).
///
/// ```
/// use ptxsmith::kernels::block_scaled::{self as bs, Codec, Format, Quantization, Recipe, ScaleLayout, Shape};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let shape = Shape::new(1, 1, 32, Format::Mxfp4)?;
/// let q = Quantization { shape, recipe: Recipe::default_for(Format::Mxfp4), layout: ScaleLayout::RowMajor };
/// let codec = Codec::for_sm(ctx.sm());
/// let xs: Vec<f32> = (0..32).map(|i| i as f32 / 4.0).collect();
/// let packed = bs::host::quantize(&xs, shape, q.recipe, q.layout)?;
/// let (codes, scales) = (st.upload(&packed.codes)?, st.upload(&packed.scales)?);
/// let mut y = ctx.alloc::<f32>(32)?;
/// bs::dequantize_dev(&st, q, codec, &codes, &scales, None, &mut y)?;
/// assert_eq!(st.to_vec(&y)?, bs::host::dequantize(&packed)?);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`quantize_dev`] (inputs too short for the shape and layout, `y`
/// too small, a missing or superfluous global buffer, scale alignment).
pub fn dequantize_dev(
    stream: &Stream,
    q: Quantization,
    codec: Codec,
    codes: &impl AsDevice<u8>,
    scales: &impl AsDevice<u8>,
    global: Option<DeviceSlice<'_, f32>>,
    y: &mut impl AsDeviceMut<f32>,
) -> Result<()> {
    let t = BlockScaledTuning::default_for(stream.context().sm());
    dequantize_dev_tuned(stream, q, codec, codes, scales, global, y, &t)
}

/// The device memory of one dequantize call.
struct DequantizeIo {
    codes: DevPtr<U8>,
    scales: DevPtr<U8>,
    global: Option<DevPtr<F32>>,
    y: DevPtr<F32>,
}

/// The launch of a dequantize call whose arguments have been checked.
fn dequantize_core(
    stream: &Stream,
    t: &BlockScaledTuning,
    m: &crate::dsl::PtxModule,
    io: DequantizeIo,
    shape: Shape,
    layout: ScaleLayout,
) -> Result<()> {
    let DequantizeIo {
        codes,
        scales,
        global,
        y,
    } = io;
    let f = shape.format();
    let dims = shape.scale_dims();
    let vec = access_flags(f, shape.k(), aligned(y.addr, 16), codes.addr);
    let s = ptx::layout_strides(layout, &dims);
    let nkb_div = ptx::div_magic(u32_of(dims.nkb()));
    let m_div = ptx::div_magic(u32_of(shape.m()));
    let tpb = (f.block_size() as u32 / ptx::ELEMS_PER_LANE) as u64;
    let args = DequantizeArgs {
        codes,
        scales,
        global: global.unwrap_or(DevPtr::new(scales.addr)),
        y,
        m: u32_of(shape.m()),
        k: u32_of(shape.k()),
        nkb: u32_of(dims.nkb()),
        blocks: u32_of(dims.count()),
        vec,
        nkb_magic: nkb_div.0,
        nkb_shift: nkb_div.1,
        m_magic: m_div.0,
        m_shift: m_div.1,
        s_mm32: s[0],
        s_mm4: s[1],
        s_mm: s[2],
        s_kk4: s[3],
        s_kk: s[4],
        s_l: s[5],
    };
    let cfg = grid(stream, t, dims.count() as u64 * tpb);
    stream.launch(m, cfg, &args.args())
}

/// [`dequantize_dev`] on raw device addresses of another stack: `codes`,
/// `scales` (in the layout) and, for NVFP4, `global` (`[amax_g, S_enc,
/// S_dec]`) are read, `y` (`L·M·K` f32s) written; viewed as
/// [`ForeignSlice`](crate::runtime::ForeignSlice)s, queued on `stream`.
///
/// ```
/// use ptxsmith::kernels::block_scaled::{self as bs, Codec, Format, Quantization, Recipe, ScaleLayout, Shape};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let shape = Shape::new(1, 1, 32, Format::Mxfp4)?;
/// let q = Quantization { shape, recipe: Recipe::default_for(Format::Mxfp4), layout: ScaleLayout::RowMajor };
/// let codec = Codec::for_sm(ctx.sm());
/// let xs: Vec<f32> = (0..32).map(|i| i as f32 / 4.0).collect();
/// let packed = bs::host::quantize(&xs, shape, q.recipe, q.layout)?;
/// let (codes, scales, y) = (st.upload(&packed.codes)?, st.upload(&packed.scales)?, ctx.alloc::<f32>(32)?);
/// // SAFETY: live memory of this context of the lengths the request gives.
/// unsafe { bs::dequantize_raw(&st, q, codec, codes.device_ptr(), scales.device_ptr(), None, y.device_ptr())? };
/// assert_eq!(y.to_vec()?, bs::host::dequantize(&packed)?);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Safety
/// As [`quantize_raw`], with `y` the output.
///
/// # Errors
/// As [`dequantize_dev`], and the checks of
/// [`ForeignSlice::from_raw_parts`](crate::runtime::ForeignSlice::from_raw_parts).
pub unsafe fn dequantize_raw(
    stream: &Stream,
    q: Quantization,
    codec: Codec,
    codes: CUdeviceptr,
    scales: CUdeviceptr,
    global: Option<CUdeviceptr>,
    y: CUdeviceptr,
) -> Result<()> {
    q.validate()?;
    check_global(q.shape.format(), global.map(|_| GLOBAL_LEN))?;
    let shape = q.shape;
    // SAFETY: the caller's contract covers each range.
    let (codes, scales, global, mut y) = unsafe {
        (
            raw::view::<u8>(stream, codes, shape.codes_len())?,
            raw::view::<u8>(stream, scales, q.scales_len())?,
            raw::view_opt::<f32>(stream, global, GLOBAL_LEN)?,
            raw::view_mut::<f32>(stream, y, shape.len())?,
        )
    };
    let global = global.as_ref().map(|g| g.as_device());
    dequantize_dev(stream, q, codec, &codes, &scales, global, &mut y)
}

/// A scale-layout conversion: a scale tensor of extent `dims`, from one
/// layout to another.
///
/// ```
/// use ptxsmith::kernels::block_scaled::{Relayout, ScaleDims, ScaleLayout};
/// let r = Relayout { dims: ScaleDims::new(1, 3, 2)?, from: ScaleLayout::RowMajor, to: ScaleLayout::Blocked128x4 };
/// assert_eq!(r.dims.count(), 6);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Relayout {
    /// `[L, M, nkb]`.
    pub dims: ScaleDims,
    /// The source layout.
    pub from: ScaleLayout,
    /// The destination layout.
    pub to: ScaleLayout,
}

/// Re-lays a scale tensor as `r` says, from `src` (at least
/// `r.from.len(dims)` bytes) into `dst` (at least `r.to.len(dims)` bytes;
/// every padding byte written 0), on `stream`. Equal to
/// [`super::convert`].
///
/// ```
/// use ptxsmith::kernels::block_scaled::{self as bs, Relayout, ScaleDims, ScaleLayout};
///
/// let dims = ScaleDims::new(1, 2, 3)?; // [L, M, nkb]
/// let r = Relayout { dims, from: ScaleLayout::RowMajor, to: ScaleLayout::Blocked128x4 };
/// let scales: Vec<u8> = (1..=6).collect();
/// let ctx = ptxsmith::runtime::Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let src = st.upload(&scales)?;
/// let mut dst = ctx.alloc::<u8>(r.to.len(&dims))?;
/// bs::convert_layout_dev(&st, r, &src, &mut dst)?;
/// assert_eq!(st.to_vec(&dst)?, bs::convert(&scales, &dims, r.from, r.to)?);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] for buffers too short, a padded layout's
/// buffer not 16-byte aligned or a padded size past [`MAX_EXTENT`];
/// [`Error::WrongContext`]; launch errors.
pub fn convert_layout_dev(
    stream: &Stream,
    r: Relayout,
    src: &impl AsDevice<u8>,
    dst: &mut impl AsDeviceMut<u8>,
) -> Result<()> {
    let t = BlockScaledTuning::default_for(stream.context().sm());
    convert_layout_dev_tuned(stream, r, src, dst, &t)
}

// ---- slice API -------------------------------------------------------------

/// [`quantize_dev`] from and to host memory on `stream` with `codec`.
///
/// ```
/// use ptxsmith::kernels::block_scaled::{self as bs, Codec, Format, Quantization, Recipe, ScaleLayout, Shape};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let shape = Shape::new(1, 1, 32, Format::Mxfp4)?;
/// let q = Quantization { shape, recipe: Recipe::default_for(Format::Mxfp4), layout: ScaleLayout::RowMajor };
/// let codec = Codec::for_sm(ctx.sm());
/// let xs: Vec<f32> = (0..32).map(|i| i as f32 / 4.0).collect();
/// let got = bs::quantize_on(&st, q, codec, &xs)?;
/// assert_eq!(got, bs::host::quantize(&xs, shape, q.recipe, q.layout)?);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`quantize_dev`].
pub fn quantize_on(
    stream: &Stream,
    q: Quantization,
    codec: Codec,
    xs: &[f32],
) -> Result<BlockScaled> {
    q.validate()?;
    let Quantization {
        shape,
        recipe,
        layout,
    } = q;
    let ctx = stream.context();
    let x = stream.upload(xs)?;
    let mut codes = ctx.alloc::<u8>(shape.codes_len())?;
    let mut scales = ctx.alloc::<u8>(q.scales_len())?;
    let nvfp4 = recipe.mode() == ScaleMode::Nvfp4;
    let mut global = ctx.alloc::<f32>(GLOBAL_LEN)?;
    let g = nvfp4.then(|| global.as_device_mut());
    quantize_dev(stream, q, codec, &x, &mut codes, &mut scales, g)?;
    let global = if nvfp4 {
        let g = stream.to_vec(&global)?;
        Some(GlobalScale {
            amax: g[0],
            encode: g[1],
            decode: g[2],
        })
    } else {
        None
    };
    Ok(BlockScaled {
        recipe,
        shape,
        layout,
        codes: stream.to_vec(&codes)?,
        scales: stream.to_vec(&scales)?,
        global,
    })
}

/// [`dequantize_dev`] of a host [`BlockScaled`] on `stream` with `codec`.
///
/// ```
/// use ptxsmith::kernels::block_scaled::{self as bs, Codec, Format, Quantization, Recipe, ScaleLayout, Shape};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let shape = Shape::new(1, 1, 32, Format::Mxfp4)?;
/// let q = Quantization { shape, recipe: Recipe::default_for(Format::Mxfp4), layout: ScaleLayout::RowMajor };
/// let codec = Codec::for_sm(ctx.sm());
/// let xs: Vec<f32> = (0..32).map(|i| i as f32 / 4.0).collect();
/// let packed = bs::host::quantize(&xs, shape, q.recipe, q.layout)?;
/// assert_eq!(bs::dequantize_on(&st, codec, &packed)?, bs::host::dequantize(&packed)?);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`host::dequantize`] and [`dequantize_dev`].
pub fn dequantize_on(stream: &Stream, codec: Codec, q: &BlockScaled) -> Result<Vec<f32>> {
    check_block_scaled(q)?;
    let ctx = stream.context();
    let codes = stream.upload(&q.codes)?;
    let scales = stream.upload(&q.scales)?;
    let g = q.global.map(|g| [g.amax, g.encode, g.decode]);
    let global = g.map(|g| stream.upload(&g)).transpose()?;
    let mut y = ctx.alloc::<f32>(q.shape.len())?;
    let gv = global.as_ref().map(|g| g.as_device());
    dequantize_dev(
        stream,
        Quantization::of(q),
        codec,
        &codes,
        &scales,
        gv,
        &mut y,
    )?;
    stream.to_vec(&y)
}

/// [`convert_layout_dev`] from and to host memory on `stream`.
///
/// ```
/// use ptxsmith::kernels::block_scaled::{self as bs, Relayout, ScaleDims, ScaleLayout};
///
/// let dims = ScaleDims::new(1, 2, 3)?; // [L, M, nkb]
/// let r = Relayout { dims, from: ScaleLayout::RowMajor, to: ScaleLayout::Blocked128x4 };
/// let scales: Vec<u8> = (1..=6).collect();
/// let st = ptxsmith::runtime::Context::sim(ptxsmith::Sm::Sm80).default_stream();
/// assert_eq!(bs::convert_layout_on(&st, r, &scales)?, bs::convert(&scales, &dims, r.from, r.to)?);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`super::convert`] and [`convert_layout_dev`].
pub fn convert_layout_on(stream: &Stream, r: Relayout, scales: &[u8]) -> Result<Vec<u8>> {
    exact_scales(scales.len(), &r.dims, r.from)?;
    let src = stream.upload(scales)?;
    let mut dst = stream.context().alloc::<u8>(r.to.len(&r.dims))?;
    convert_layout_dev(stream, r, &src, &mut dst)?;
    stream.to_vec(&dst)
}

fn exact_scales(got: usize, dims: &ScaleDims, layout: ScaleLayout) -> Result<()> {
    check::len(
        "block_scaled",
        "scales",
        got,
        layout.len(dims),
        format_args!(
            "{layout:?} scales of L = {}, M = {}, nkb = {}",
            dims.l(),
            dims.m(),
            dims.nkb()
        ),
    )
}

/// The host model's checks of a [`BlockScaled`] (exact lengths, global
/// scale present exactly for NVFP4, shape and recipe agreeing).
fn check_block_scaled(q: &BlockScaled) -> Result<()> {
    check_recipe(q.recipe, &q.shape)?;
    check_limits(&q.shape)?;
    let shape = &q.shape;
    check::len(
        "block_scaled",
        "codes",
        q.codes.len(),
        shape.codes_len(),
        format_args!("the codes of {}", describe(shape)),
    )?;
    exact_scales(q.scales.len(), &shape.scale_dims(), q.layout)?;
    check_global(shape.format(), q.global.map(|_| GLOBAL_LEN))
}

/// [`host::quantize`] on `backend` with the SM's default codec
/// ([`Codec::for_sm`]); every backend gives the same bytes.
///
/// ```
/// use ptxsmith::kernels::block_scaled::{self as bs, Format, Quantization, Recipe, ScaleLayout, Shape};
/// use ptxsmith::runtime::Backend;
///
/// let shape = Shape::new(1, 4, 40, Format::Nvfp4)?; // a partial last block
/// let q = Quantization { shape, recipe: Recipe::default_for(Format::Nvfp4), layout: ScaleLayout::Blocked128x4 };
/// let xs: Vec<f32> = (0..shape.len()).map(|i| (i as f32 * 0.37).sin() * 8.0).collect();
/// let (got, _ran) = bs::quantize(Backend::Sim, q, &xs)?;
/// assert_eq!(got, bs::host::quantize(&xs, shape, q.recipe, q.layout)?);
/// let (y, _ran) = bs::dequantize(Backend::Sim, &got)?;
/// assert_eq!(y.len(), xs.len());
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`host::quantize`] and [`quantize_dev`]; checked before anything
/// runs.
pub fn quantize(backend: Backend, q: Quantization, xs: &[f32]) -> Result<(BlockScaled, Ran)> {
    q.validate()?;
    let shape = q.shape;
    check::len(
        "block_scaled",
        "xs",
        xs.len(),
        shape.len(),
        format_args!("L·M·K for {}", describe(&shape)),
    )?;
    dispatch(
        backend,
        || host::quantize(xs, shape, q.recipe, q.layout),
        |s| quantize_on(s, q, Codec::for_sm(s.context().sm()), xs),
    )
}

/// [`host::dequantize`] on `backend` (the SM's default codec).
///
/// ```
/// use ptxsmith::kernels::block_scaled::{self as bs, Format, Recipe, ScaleLayout, Shape};
/// use ptxsmith::runtime::Backend;
///
/// let shape = Shape::new(1, 1, 16, Format::Nvfp4)?;
/// let xs = [1.5f32; 16];
/// let packed = bs::host::quantize(&xs, shape, Recipe::default_for(Format::Nvfp4), ScaleLayout::RowMajor)?;
/// let (y, _ran) = bs::dequantize(Backend::Sim, &packed)?;
/// assert_eq!(y, [1.5; 16]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`host::dequantize`] and [`dequantize_dev`].
pub fn dequantize(backend: Backend, q: &BlockScaled) -> Result<(Vec<f32>, Ran)> {
    check_block_scaled(q)?;
    dispatch(
        backend,
        || host::dequantize(q),
        |s| dequantize_on(s, Codec::for_sm(s.context().sm()), q),
    )
}

/// [`super::convert`] of scale bytes on `backend`.
///
/// ```
/// use ptxsmith::kernels::block_scaled::{self as bs, Relayout, ScaleDims, ScaleLayout};
///
/// let dims = ScaleDims::new(1, 2, 3)?; // [L, M, nkb]
/// let r = Relayout { dims, from: ScaleLayout::RowMajor, to: ScaleLayout::Blocked128x4 };
/// let scales: Vec<u8> = (1..=6).collect();
/// let (got, _ran) = bs::convert_layout(ptxsmith::runtime::Backend::Sim, r, &scales)?;
/// assert_eq!(got, bs::convert(&scales, &dims, r.from, r.to)?);
/// assert_eq!(got.len(), 128 * 4); // one padded tile
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`super::convert`] and [`convert_layout_dev`].
pub fn convert_layout(backend: Backend, r: Relayout, scales: &[u8]) -> Result<(Vec<u8>, Ran)> {
    exact_scales(scales.len(), &r.dims, r.from)?;
    dispatch(
        backend,
        || super::convert(scales, &r.dims, r.from, r.to),
        |s| convert_layout_on(s, r, scales),
    )
}
