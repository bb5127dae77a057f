//! The device entry points under a chosen [`BlockScaledTuning`] (threads
//! per CTA, the grid cap; e.g. a device sweep's candidates):
//! [`quantize_dev_tuned`], [`dequantize_dev_tuned`],
//! [`convert_layout_dev_tuned`]. The `_dev` functions are these under
//! [`BlockScaledTuning::default_for`] the stream's SM. The bits never
//! depend on the tuning.

use super::*;

/// [`quantize_dev`] under the tuning `t` (its modules from
/// [`ptx::generate_tuned`], their block size and grid cap `t`'s).
///
/// # Errors
/// As [`quantize_dev`]; an invalid `t`
/// ([`BlockScaledTuningError`](ptx::BlockScaledTuningError), as
/// [`Error::InvalidArgument`] naming the value). Nothing is queued on
/// error.
#[allow(clippy::too_many_arguments)]
pub fn quantize_dev_tuned(
    stream: &Stream,
    q: Quantization,
    codec: Codec,
    x: &impl AsDevice<f32>,
    codes: &mut impl AsDeviceMut<u8>,
    scales: &mut impl AsDeviceMut<u8>,
    global: Option<DeviceSliceMut<'_, f32>>,
    t: &BlockScaledTuning,
) -> Result<()> {
    t.check()?;
    q.validate()?;
    let Quantization {
        shape,
        recipe,
        layout,
    } = q;
    let f = recipe.format();
    let (xs, cs, ss) = (x.as_device(), codes.as_device(), scales.as_device());
    check::len(
        "block_scaled",
        "x",
        xs.len(),
        shape.len(),
        format_args!("L·M·K for {}", describe(&shape)),
    )?;
    check::at_least(
        "block_scaled",
        "codes",
        cs.len(),
        shape.codes_len(),
        describe(&shape),
    )?;
    let scale_len = q.scales_len();
    check::at_least(
        "block_scaled",
        "scales",
        ss.len(),
        scale_len,
        format!("layout {layout:?} of {}", describe(&shape)),
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
    let kernels = QuantizeKernels::new(stream, recipe, codec, t)?;
    quantize_core(stream, &kernels, io, shape, layout, zero_padding)
}

/// [`dequantize_dev`] under the tuning `t`.
///
/// # Errors
/// As [`dequantize_dev`]; an invalid `t` as in [`quantize_dev_tuned`].
#[allow(clippy::too_many_arguments)]
pub fn dequantize_dev_tuned(
    stream: &Stream,
    q: Quantization,
    codec: Codec,
    codes: &impl AsDevice<u8>,
    scales: &impl AsDevice<u8>,
    global: Option<DeviceSlice<'_, f32>>,
    y: &mut impl AsDeviceMut<f32>,
    t: &BlockScaledTuning,
) -> Result<()> {
    t.check()?;
    q.validate()?;
    let Quantization { shape, layout, .. } = q;
    let f = shape.format();
    let (cs, ss, ys) = (codes.as_device(), scales.as_device(), y.as_device());
    check::at_least(
        "block_scaled",
        "codes",
        cs.len(),
        shape.codes_len(),
        describe(&shape),
    )?;
    check::at_least(
        "block_scaled",
        "scales",
        ss.len(),
        q.scales_len(),
        format!("layout {layout:?} of {}", describe(&shape)),
    )?;
    check::at_least("block_scaled", "y", ys.len(), shape.len(), describe(&shape))?;
    check_global(f, global.as_ref().map(|g| g.len()))?;
    check_scale_align(layout, "scales", &ss)?;
    let m = module(stream, Kernel::Dequantize(f), codec, t)?;
    let io = DequantizeIo {
        codes: stream.arg("codes", codes)?,
        scales: stream.arg("scales", scales)?,
        global: match &global {
            Some(g) => Some(stream.arg("global", g)?),
            None => None,
        },
        y: stream.arg_mut("y", y)?,
    };
    dequantize_core(stream, t, m, io, shape, layout)
}

/// [`convert_layout_dev`] under the tuning `t`.
///
/// # Errors
/// As [`convert_layout_dev`]; an invalid `t` as in [`quantize_dev_tuned`].
pub fn convert_layout_dev_tuned(
    stream: &Stream,
    r: Relayout,
    src: &impl AsDevice<u8>,
    dst: &mut impl AsDeviceMut<u8>,
    t: &BlockScaledTuning,
) -> Result<()> {
    t.check()?;
    let Relayout { dims, from, to } = r;
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
    check::at_least("block_scaled", "src", ss.len(), from.len(&dims), of(from))?;
    check::at_least("block_scaled", "dst", ds.len(), to.len(&dims), of(to))?;
    check_scale_align(from, "src", &ss)?;
    check_scale_align(to, "dst", &ds)?;
    let m = module(
        stream,
        Kernel::Convert,
        Codec::for_sm(stream.context().sm()),
        t,
    )?;
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
    stream.launch(m, grid(stream, t, count as u64), &args.args())
}
