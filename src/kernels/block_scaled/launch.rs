//! Launch code of [`super`]: device entry points on the [`Stream`] /
//! device-buffer API ([`quantize_dev`], [`dequantize_dev`],
//! [`convert_layout_dev`]), raw-pointer entry points on another stack's
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

use super::host::{self, BlockScaled, Format, GlobalScale, Recipe, ScaleMode, Shape};
use super::layout::{ScaleDims, ScaleLayout};
use super::ptx::{
    self, Codec, ConvertArgs, DequantizeArgs, GLOBAL_LEN, Nvfp4GlobalArgs, QuantizeArgs, THREADS,
};
use crate::dsl::params::{DevPtr, KernelParams};
use crate::dsl::types::{F32, U8};
use crate::error::{Error, Result};
use crate::kernels::dispatch::dispatch;
use crate::kernels::fp8::ptx::{self as fp8_ptx, AbsmaxPartialsArgs};
use crate::kernels::memo;
use crate::runtime::backend::{Backend, Ran};
use crate::runtime::buffer::{AsDevice, AsDeviceMut, DeviceSlice, DeviceSliceMut};
use crate::runtime::context::{Context, Stream};
use crate::runtime::exec::{CUdeviceptr, LaunchConfig, PointerCheck, RawStream};

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

fn at_least(what: &str, got: usize, want: usize, of: &str) -> Result<()> {
    if got >= want {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "block_scaled: {what} has {got} elements, {of} needs at least {want}"
    )))
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

fn describe(shape: &Shape) -> String {
    format!(
        "[L, M, K] = [{}, {}, {}] as {:?}",
        shape.l(),
        shape.m(),
        shape.k(),
        shape.format()
    )
}

/// The global-scale buffer must be there exactly for NVFP4 and hold
/// `[amax_g, S_enc, S_dec]`.
fn check_global(format: Format, global: Option<usize>) -> Result<()> {
    match (format, global) {
        (Format::Nvfp4, Some(len)) => at_least(
            "the global-scale buffer",
            len,
            GLOBAL_LEN,
            "[amax_g, S_enc, S_dec]",
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

fn u32_of(v: usize) -> u32 {
    // Only called on values checked against MAX_EXTENT.
    v as u32
}

fn grid(stream: &Stream, threads: u64) -> LaunchConfig {
    let sms = stream.context().multiprocessor_count();
    LaunchConfig::linear(ptx::grid_blocks(threads, sms), THREADS)
}

fn lanes(shape: &Shape) -> u64 {
    let tpb = (shape.format().block_size() as u32 / ptx::ELEMS_PER_LANE) as u64;
    // Rounded up to a warp, as the quantize kernel loops.
    (shape.scale_dims().count() as u64 * tpb).next_multiple_of(32)
}

/// Quantizes `x` (row-major `[L, M, K]` f32, exactly `L·M·K` long) with
/// `recipe` on `stream`: element codes into `codes` (at least
/// [`Shape::codes_len`] bytes), scale bytes into `scales` in `layout` (at
/// least `layout.len(dims)` bytes; padding written 0), and for NVFP4
/// `[amax_g, S_enc, S_dec]` into `global` (3 floats; `None` for MX
/// formats). Bit-identical to [`host::quantize`] with either codec.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the values: a shape checked for
/// another format, wrong or too small buffers, a missing or superfluous
/// global buffer, a padded layout's scale buffer not 16-byte aligned, an
/// NVFP4 `x` not 16-byte aligned, sizes past [`MAX_EXTENT`];
/// [`Error::UnsupportedFeature`] for [`Codec::Hardware`] below sm_89;
/// [`Error::WrongContext`]; launch errors. Nothing is queued on error.
#[allow(clippy::too_many_arguments)]
pub fn quantize_dev(
    stream: &Stream,
    x: &impl AsDevice<f32>,
    shape: Shape,
    recipe: Recipe,
    layout: ScaleLayout,
    codec: Codec,
    codes: &mut impl AsDeviceMut<u8>,
    scales: &mut impl AsDeviceMut<u8>,
    global: Option<DeviceSliceMut<'_, f32>>,
) -> Result<()> {
    check_recipe(recipe, &shape)?;
    check_limits(&shape)?;
    let f = recipe.format();
    let dims = shape.scale_dims();
    let (xs, cs, ss) = (x.as_device(), codes.as_device(), scales.as_device());
    if xs.len() != shape.len() {
        return Err(Error::invalid(format!(
            "block_scaled: x has {} elements, expected {} for {}",
            xs.len(),
            shape.len(),
            describe(&shape)
        )));
    }
    at_least("codes", cs.len(), shape.codes_len(), &describe(&shape))?;
    let scale_len = layout.len(&dims);
    at_least(
        "scales",
        ss.len(),
        scale_len,
        &format!("layout {layout:?} of {}", describe(&shape)),
    )?;
    check_global(f, global.as_ref().map(|g| g.len()))?;
    check_scale_align(layout, "scales", &ss)?;
    if f == Format::Nvfp4 {
        xs.check_aligned("block_scaled: NVFP4 x (absmax pass)", 16)?;
    }
    let xp = stream.arg("x", x)?;
    let cp = stream.arg_mut("codes", codes)?;
    // Checked before anything is queued: the global buffer's context.
    let mut global = global;
    let gp = match global.as_mut() {
        Some(g) => Some(stream.arg_mut("global", g)?),
        None => None,
    };
    let sp = stream.arg_mut("scales", scales)?;
    let io = QuantizeIo {
        x: xp,
        codes: cp,
        scales: sp,
        global: gp,
    };
    let zero_padding = |st: &Stream| -> Result<()> {
        let mut all = scales.as_device_mut();
        let mut head = all.slice_mut(..scale_len)?;
        st.zero(&mut head)
    };
    let kernels = QuantizeKernels::new(stream, recipe, codec)?;
    quantize_core(
        stream,
        &kernels,
        io,
        shape,
        layout,
        zero_padding,
        PointerCheck::LiveBuffers,
    )
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
    quant: &'static crate::dsl::PtxModule,
    nvfp4: Option<(
        &'static crate::dsl::PtxModule,
        &'static crate::dsl::PtxModule,
    )>,
}

impl QuantizeKernels {
    fn new(stream: &Stream, recipe: Recipe, codec: Codec) -> Result<Self> {
        let sm = stream.context().sm();
        let nvfp4 = if recipe.format() == Format::Nvfp4 {
            Some((
                memo!(fp8_ptx::generate_absmax_partials, sm)?,
                memo!(ptx::generate_nvfp4_global, sm)?,
            ))
        } else {
            None
        };
        Ok(Self {
            quant: memo!(ptx::generate_quantize, sm, recipe, codec)?,
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
    check: PointerCheck,
) -> Result<()> {
    let f = shape.format();
    let dims = shape.scale_dims();
    let vec = shape.k().is_multiple_of(4)
        && aligned(io.x.addr, 16)
        && aligned(io.codes.addr, code_align(f));
    if layout.is_padded() {
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
        stream.launch_with(m1, cfg, &a1.args(), check)?;
        let a2 = Nvfp4GlobalArgs {
            partials: stream.arg("partials", &partials)?,
            count: blocks,
            global: gp,
        };
        stream.launch_with(m2, LaunchConfig::linear(1, THREADS), &a2.args(), check)?;
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
        vec: u32::from(vec),
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
    let cfg = grid(stream, lanes(&shape));
    stream.launch_with(kernels.quant, cfg, &args.args(), check)
}

/// Check a raw address's alignment, naming it.
fn check_raw_align(what: &str, addr: CUdeviceptr, align: u64) -> Result<()> {
    if aligned(addr, align) {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "block_scaled: {what} at {addr:#x} is not {align}-byte aligned"
    )))
}

/// [`quantize_dev`] on memory another stack allocated (e.g. a PyTorch
/// tensor and its scale buffer): `x` (`L·M·K` f32s) is read; `codes`
/// ([`Shape::codes_len`] bytes), `scales` (`layout.len(dims)` bytes,
/// padding written 0) and, for NVFP4, `global` (3 f32s) are written; all
/// raw device addresses, the launches queued on the foreign `stream`.
///
/// # Safety
/// * every address is device memory of `ctx`'s context with at least the
///   length above, valid until the kernels have run; the outputs overlap
///   no input and each other, and nothing else accesses them until then;
/// * `stream` is a live stream of that context (or [`RawStream::NULL`]).
///
/// Shapes, the recipe, the global buffer's presence and the alignments
/// the layout needs (16 bytes for a padded layout's scales and NVFP4's
/// `x`, 4 for `x` otherwise) are still checked; the extents cannot be.
///
/// # Errors
/// As [`quantize_dev`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn quantize_raw(
    ctx: &Context,
    stream: RawStream,
    x: CUdeviceptr,
    shape: Shape,
    recipe: Recipe,
    layout: ScaleLayout,
    codec: Codec,
    codes: CUdeviceptr,
    scales: CUdeviceptr,
    global: Option<CUdeviceptr>,
) -> Result<()> {
    check_recipe(recipe, &shape)?;
    check_limits(&shape)?;
    let f = recipe.format();
    check_global(f, global.map(|_| GLOBAL_LEN))?;
    check_raw_align("x", x, if f == Format::Nvfp4 { 16 } else { 4 })?;
    if layout.is_padded() {
        check_raw_align("scales", scales, SCALE_ALIGN)?;
    }
    if let Some(g) = global {
        check_raw_align("global", g, 4)?;
    }
    let st = ctx.borrowed_stream(stream);
    let kernels = QuantizeKernels::new(&st, recipe, codec)?;
    let scale_len = layout.len(&shape.scale_dims());
    let zero_padding = |st: &Stream| -> Result<()> {
        let zeros = st.context().alloc_zeroed::<u8>(scale_len)?;
        st.copy_to_foreign(scales, &zeros)
    };
    let io = QuantizeIo {
        x: DevPtr::new(x),
        codes: DevPtr::new(codes),
        scales: DevPtr::new(scales),
        global: global.map(DevPtr::new),
    };
    quantize_core(
        &st,
        &kernels,
        io,
        shape,
        layout,
        zero_padding,
        PointerCheck::Caller,
    )
}

/// Dequantizes on `stream`: `y = decode(code) · decode_e8m0(scale)` (MX)
/// or `· (decode_ue4m3(sb) · S_dec)` with `S_dec = global[2]` (NVFP4),
/// row-major `[L, M, K]` into `y` (at least `L·M·K` floats). `codes` and
/// `scales` (in `layout`) as [`quantize_dev`] wrote them. Bit-identical to
/// [`host::dequantize`] (NaN bits aside: only "is NaN" is specified).
///
/// # Errors
/// As [`quantize_dev`] (inputs too short for the shape and layout, `y`
/// too small, a missing or superfluous global buffer, scale alignment).
#[allow(clippy::too_many_arguments)]
pub fn dequantize_dev(
    stream: &Stream,
    codes: &impl AsDevice<u8>,
    scales: &impl AsDevice<u8>,
    global: Option<DeviceSlice<'_, f32>>,
    shape: Shape,
    layout: ScaleLayout,
    codec: Codec,
    y: &mut impl AsDeviceMut<f32>,
) -> Result<()> {
    check_limits(&shape)?;
    let f = shape.format();
    let dims = shape.scale_dims();
    let (cs, ss, ys) = (codes.as_device(), scales.as_device(), y.as_device());
    at_least("codes", cs.len(), shape.codes_len(), &describe(&shape))?;
    at_least(
        "scales",
        ss.len(),
        layout.len(&dims),
        &format!("layout {layout:?} of {}", describe(&shape)),
    )?;
    at_least("y", ys.len(), shape.len(), &describe(&shape))?;
    check_global(f, global.as_ref().map(|g| g.len()))?;
    check_scale_align(layout, "scales", &ss)?;
    let m = memo!(ptx::generate_dequantize, stream.context().sm(), f, codec)?;
    let cp = stream.arg("codes", codes)?;
    let sp = stream.arg("scales", scales)?;
    let gp = match &global {
        Some(g) => Some(stream.arg("global", g)?),
        None => None,
    };
    let yp = stream.arg_mut("y", y)?;
    dequantize_core(
        stream,
        m,
        cp,
        sp,
        gp,
        yp,
        shape,
        layout,
        PointerCheck::LiveBuffers,
    )
}

/// The launch of a dequantize call whose arguments have been checked.
#[allow(clippy::too_many_arguments)]
fn dequantize_core(
    stream: &Stream,
    m: &crate::dsl::PtxModule,
    codes: DevPtr<U8>,
    scales: DevPtr<U8>,
    global: Option<DevPtr<F32>>,
    y: DevPtr<F32>,
    shape: Shape,
    layout: ScaleLayout,
    check: PointerCheck,
) -> Result<()> {
    let f = shape.format();
    let dims = shape.scale_dims();
    let vec =
        shape.k().is_multiple_of(4) && aligned(codes.addr, code_align(f)) && aligned(y.addr, 16);
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
        vec: u32::from(vec),
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
    let cfg = grid(stream, dims.count() as u64 * tpb);
    stream.launch_with(m, cfg, &args.args(), check)
}

/// [`dequantize_dev`] on foreign memory: `codes`, `scales` (in `layout`)
/// and, for NVFP4, `global` (`[amax_g, S_enc, S_dec]`) are read, `y`
/// (`L·M·K` f32s) written; all raw device addresses, the launch queued on
/// the foreign `stream`.
///
/// # Safety
/// As [`quantize_raw`], with `y` the output.
///
/// # Errors
/// As [`dequantize_dev`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn dequantize_raw(
    ctx: &Context,
    stream: RawStream,
    codes: CUdeviceptr,
    scales: CUdeviceptr,
    global: Option<CUdeviceptr>,
    shape: Shape,
    layout: ScaleLayout,
    codec: Codec,
    y: CUdeviceptr,
) -> Result<()> {
    check_limits(&shape)?;
    let f = shape.format();
    check_global(f, global.map(|_| GLOBAL_LEN))?;
    if layout.is_padded() {
        check_raw_align("scales", scales, SCALE_ALIGN)?;
    }
    check_raw_align("y", y, 4)?;
    if let Some(g) = global {
        check_raw_align("global", g, 4)?;
    }
    let st = ctx.borrowed_stream(stream);
    let m = memo!(ptx::generate_dequantize, ctx.sm(), f, codec)?;
    let (cp, sp, yp) = (DevPtr::new(codes), DevPtr::new(scales), DevPtr::new(y));
    let gp = global.map(DevPtr::new);
    dequantize_core(&st, m, cp, sp, gp, yp, shape, layout, PointerCheck::Caller)
}

/// Re-lays a scale tensor of extent `dims` from layout `from` (`src`, at
/// least `from.len(dims)` bytes) to `to` (`dst`, at least `to.len(dims)`
/// bytes; every padding byte written 0), on `stream`. Equal to
/// [`super::convert`].
///
/// # Errors
/// [`Error::InvalidArgument`] for buffers too short, a padded layout's
/// buffer not 16-byte aligned or a padded size past [`MAX_EXTENT`];
/// [`Error::WrongContext`]; launch errors.
pub fn convert_layout_dev(
    stream: &Stream,
    src: &impl AsDevice<u8>,
    dims: ScaleDims,
    from: ScaleLayout,
    to: ScaleLayout,
    dst: &mut impl AsDeviceMut<u8>,
) -> Result<()> {
    let count = ScaleLayout::Blocked128x4.len(&dims);
    limit("the padded scale size", count)?;
    let (ss, ds) = (src.as_device(), dst.as_device());
    let of = |l: ScaleLayout| {
        format!(
            "layout {l:?} of L = {}, M = {}, nkb = {}",
            dims.l(),
            dims.m(),
            dims.nkb()
        )
    };
    at_least("src", ss.len(), from.len(&dims), &of(from))?;
    at_least("dst", ds.len(), to.len(&dims), &of(to))?;
    check_scale_align(from, "src", &ss)?;
    check_scale_align(to, "dst", &ds)?;
    let m = memo!(ptx::generate_convert, stream.context().sm())?;
    let (a, b) = (
        ptx::layout_strides(from, &dims),
        ptx::layout_strides(to, &dims),
    );
    let args = ConvertArgs {
        src: stream.arg("src", src)?,
        dst: stream.arg_mut("dst", dst)?,
        m: u32_of(dims.m()),
        nkb: u32_of(dims.nkb()),
        m_tiles: u32_of(dims.m_tiles()),
        k_tiles: u32_of(dims.k_tiles()),
        count: u32_of(count),
        dst_padded: u32::from(to.is_padded()),
        a_mm32: a[0],
        a_mm4: a[1],
        a_mm: a[2],
        a_kk4: a[3],
        a_kk: a[4],
        a_l: a[5],
        b_mm32: b[0],
        b_mm4: b[1],
        b_mm: b[2],
        b_kk4: b[3],
        b_kk: b[4],
        b_l: b[5],
    };
    stream.launch(m, grid(stream, count as u64), &args.args())
}

// ---- slice API -------------------------------------------------------------

/// [`quantize_dev`] from and to host memory on `stream` with `codec`.
///
/// # Errors
/// As [`quantize_dev`].
pub fn quantize_on(
    stream: &Stream,
    xs: &[f32],
    shape: Shape,
    recipe: Recipe,
    layout: ScaleLayout,
    codec: Codec,
) -> Result<BlockScaled> {
    check_recipe(recipe, &shape)?;
    check_limits(&shape)?;
    let ctx = stream.context();
    let x = stream.upload(xs)?;
    let mut codes = ctx.alloc::<u8>(shape.codes_len())?;
    let mut scales = ctx.alloc::<u8>(layout.len(&shape.scale_dims()))?;
    let nvfp4 = recipe.mode() == ScaleMode::Nvfp4;
    let mut global = ctx.alloc::<f32>(GLOBAL_LEN)?;
    let g = nvfp4.then(|| global.as_device_mut());
    quantize_dev(
        stream,
        &x,
        shape,
        recipe,
        layout,
        codec,
        &mut codes,
        &mut scales,
        g,
    )?;
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
/// # Errors
/// As [`host::dequantize`] and [`dequantize_dev`].
pub fn dequantize_on(stream: &Stream, q: &BlockScaled, codec: Codec) -> Result<Vec<f32>> {
    check_block_scaled(q)?;
    let ctx = stream.context();
    let codes = stream.upload(&q.codes)?;
    let scales = stream.upload(&q.scales)?;
    let g = q.global.map(|g| [g.amax, g.encode, g.decode]);
    let global = g.map(|g| stream.upload(&g)).transpose()?;
    let mut y = ctx.alloc::<f32>(q.shape.len())?;
    dequantize_dev(
        stream,
        &codes,
        &scales,
        global.as_ref().map(|g| g.as_device()),
        q.shape,
        q.layout,
        codec,
        &mut y,
    )?;
    stream.to_vec(&y)
}

/// [`convert_layout_dev`] from and to host memory on `stream`.
///
/// # Errors
/// As [`super::convert`] and [`convert_layout_dev`].
pub fn convert_layout_on(
    stream: &Stream,
    scales: &[u8],
    dims: ScaleDims,
    from: ScaleLayout,
    to: ScaleLayout,
) -> Result<Vec<u8>> {
    exact_scales(scales.len(), &dims, from)?;
    let src = stream.upload(scales)?;
    let mut dst = stream.context().alloc::<u8>(to.len(&dims))?;
    convert_layout_dev(stream, &src, dims, from, to, &mut dst)?;
    stream.to_vec(&dst)
}

fn exact_scales(got: usize, dims: &ScaleDims, layout: ScaleLayout) -> Result<()> {
    let want = layout.len(dims);
    if got == want {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "block_scaled: {layout:?} scale buffer has {got} bytes, expected {want} for L = {}, \
         M = {}, nkb = {}",
        dims.l(),
        dims.m(),
        dims.nkb()
    )))
}

/// The host model's checks of a [`BlockScaled`] (exact lengths, global
/// scale present exactly for NVFP4, shape and recipe agreeing).
fn check_block_scaled(q: &BlockScaled) -> Result<()> {
    check_recipe(q.recipe, &q.shape)?;
    check_limits(&q.shape)?;
    let shape = &q.shape;
    if q.codes.len() != shape.codes_len() {
        return Err(Error::invalid(format!(
            "block_scaled: codes has {} bytes, expected {} for {}",
            q.codes.len(),
            shape.codes_len(),
            describe(shape)
        )));
    }
    exact_scales(q.scales.len(), &shape.scale_dims(), q.layout)?;
    check_global(shape.format(), q.global.map(|_| GLOBAL_LEN))
}

/// [`host::quantize`] on `backend` with the SM's default codec
/// ([`Codec::for_sm`]); every backend gives the same bytes.
///
/// # Errors
/// As [`host::quantize`] and [`quantize_dev`]; checked before anything
/// runs.
pub fn quantize(
    backend: Backend,
    xs: &[f32],
    shape: Shape,
    recipe: Recipe,
    layout: ScaleLayout,
) -> Result<(BlockScaled, Ran)> {
    check_recipe(recipe, &shape)?;
    check_limits(&shape)?;
    if xs.len() != shape.len() {
        return Err(Error::invalid(format!(
            "block_scaled: input has {} elements, expected {} for {}",
            xs.len(),
            shape.len(),
            describe(&shape)
        )));
    }
    dispatch(
        backend,
        || host::quantize(xs, shape, recipe, layout),
        |s| {
            let codec = Codec::for_sm(s.context().sm());
            quantize_on(s, xs, shape, recipe, layout, codec)
        },
    )
}

/// [`host::dequantize`] on `backend` (the SM's default codec).
///
/// # Errors
/// As [`host::dequantize`] and [`dequantize_dev`].
pub fn dequantize(backend: Backend, q: &BlockScaled) -> Result<(Vec<f32>, Ran)> {
    check_block_scaled(q)?;
    dispatch(
        backend,
        || host::dequantize(q),
        |s| dequantize_on(s, q, Codec::for_sm(s.context().sm())),
    )
}

/// [`super::convert`] of scale bytes on `backend`.
///
/// # Errors
/// As [`super::convert`] and [`convert_layout_dev`].
pub fn convert_layout(
    backend: Backend,
    scales: &[u8],
    dims: ScaleDims,
    from: ScaleLayout,
    to: ScaleLayout,
) -> Result<(Vec<u8>, Ran)> {
    exact_scales(scales.len(), &dims, from)?;
    dispatch(
        backend,
        || super::convert(scales, &dims, from, to),
        |s| convert_layout_on(s, scales, dims, from, to),
    )
}
