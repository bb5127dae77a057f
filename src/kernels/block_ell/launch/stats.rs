//! Device entry points of the per-block statistics ([`super::super::stats`] is
//! the spec): the topology controller's inputs computed where `gv`, `x`
//! and `gy` already live, queued on a [`Stream`].

use super::super::host::Dims;
use super::super::ptx::THREADS;
use super::super::ptx::stats::{
    EmaArgs, GradNormsArgs, NormPartialsArgs, SqrtArgs, generate_ema, generate_grad_norms,
    generate_norm_partials, generate_sqrt,
};
use super::{DeviceTopology, SCRATCH_FLOATS, check_limits, chunk_tree, grid, rows};
use crate::dsl::params::{DevPtr, KernelParams};
use crate::dsl::types::F32;
use crate::error::{Error, Result};
use crate::exec::LaunchConfig;
use crate::kernels::check;
use crate::kernels::memo;
use crate::runtime::buffer::{AsDevice, AsDeviceMut};
use crate::runtime::context::Stream;

fn elementwise(len: usize) -> LaunchConfig {
    LaunchConfig::linear(
        grid::ctas_within(len as u64, THREADS.into(), 1 << 16),
        THREADS,
    )
}

/// [`super::super::host::block_grad_norms`] on the device: `out [R, K]` from `gv [R, K,
/// B, B]`, queued on `stream`.
///
/// ```
/// use ptxsmith::kernels::block_ell as be;
///
/// // One 8 × 8 block (R = C = K = 1, B = 8): W = 0.5 · I, its topology
/// // on an sm_80 simulator context (the set-up these examples share).
/// let be::Example { dims, values, ctx, st, topo, .. } = be::example()?;
/// let gv = st.upload(&vec![0.5f32; 64])?;
/// let mut out = ctx.alloc::<f32>(1)?;
/// be::block_grad_norms_dev(&st, &topo, &gv, &mut out)?;
/// assert_eq!(st.to_vec(&out)?, [4.0]); // sqrt(64 · 0.25)
/// # let _ = values;
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] naming the values for a length that does
/// not match its shape; [`Error::WrongContext`]; JIT and launch errors.
pub fn block_grad_norms_dev(
    stream: &Stream,
    topo: &DeviceTopology,
    gv: &impl AsDevice<f32>,
    out: &mut impl AsDeviceMut<f32>,
) -> Result<()> {
    let d = topo.dims();
    check::len(
        "block_ell",
        "gv",
        gv.as_device().len(),
        d.values_len(),
        "R × K × B × B",
    )?;
    check::len(
        "block_ell",
        "out",
        out.as_device().len(),
        d.slots(),
        "R × K",
    )?;
    if d.slots() == 0 {
        return Ok(());
    }
    let args = GradNormsArgs {
        gv: stream.arg("gv", gv)?,
        col: stream.arg("col", topo.col())?,
        out: stream.arg_mut("out", out)?,
        slots: d.slots() as u32,
        bb: (d.b() * d.b()) as u32,
    };
    let m = memo!(generate_grad_norms, stream.context().sm())?;
    stream.launch(m, elementwise(d.slots()), &args.args())
}

/// The norms of `blocks` column blocks of `a [n, blocks·B]` into `out`.
fn column_block_norms(
    stream: &Stream,
    n: usize,
    blocks: usize,
    b: usize,
    a: DevPtr<F32>,
    out: DevPtr<F32>,
) -> Result<()> {
    let m = memo!(generate_norm_partials, stream.context().sm())?;
    chunk_tree(
        stream,
        SCRATCH_FLOATS,
        n,
        blocks,
        blocks,
        out,
        |part, q0, groups, count| {
            let args = NormPartialsArgs {
                a,
                part,
                n: n as u32,
                blocks: blocks as u32,
                b: b as u32,
                q0,
                groups,
            };
            stream.launch(
                m,
                grid(stream, count.div_ceil(THREADS as usize)),
                &args.args(),
            )
        },
    )?;
    let sq = SqrtArgs {
        v: out,
        len: blocks as u32,
    };
    stream.launch(
        memo!(generate_sqrt, stream.context().sm())?,
        elementwise(blocks),
        &sq.args(),
    )
}

/// [`super::super::host::input_block_norms`] on the device: `out [C]` from `x [N,
/// C·B]`, queued on `stream`.
///
/// ```
/// use ptxsmith::kernels::block_ell as be;
///
/// // One 8 × 8 block (R = C = K = 1, B = 8): W = 0.5 · I, its topology
/// // on an sm_80 simulator context (the set-up these examples share).
/// let be::Example { dims, values, ctx, st, topo, .. } = be::example()?;
/// let x = st.upload(&[2.0f32; 8])?;
/// let mut out = ctx.alloc::<f32>(1)?;
/// be::input_block_norms_dev(&st, &dims, 1, &x, &mut out)?;
/// assert_eq!(st.to_vec(&out)?, [32f32.sqrt()]);
/// # let _ = (values, topo);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`block_grad_norms_dev`], and the [kernel limits](super).
pub fn input_block_norms_dev(
    stream: &Stream,
    dims: &Dims,
    n: usize,
    x: &impl AsDevice<f32>,
    out: &mut impl AsDeviceMut<f32>,
) -> Result<()> {
    check_limits(dims, n)?;
    rows(
        dims,
        "x",
        x.as_device().len(),
        n,
        dims.in_features(),
        "N × C·B",
    )?;
    check::len("block_ell", "out", out.as_device().len(), dims.c(), "C")?;
    if dims.c() == 0 {
        return Ok(());
    }
    if n == 0 {
        return stream.zero(out);
    }
    let (xp, op) = (stream.arg("x", x)?, stream.arg_mut("out", out)?);
    column_block_norms(stream, n, dims.c(), dims.b(), xp, op)
}

/// [`super::super::host::output_block_norms`] on the device: `out [R]` from `gy [N,
/// R·B]`, queued on `stream`.
///
/// ```
/// use ptxsmith::kernels::block_ell as be;
///
/// // One 8 × 8 block (R = C = K = 1, B = 8): W = 0.5 · I, its topology
/// // on an sm_80 simulator context (the set-up these examples share).
/// let be::Example { dims, values, ctx, st, topo, .. } = be::example()?;
/// let gy = st.upload(&[1.0f32; 16])?;
/// let mut out = ctx.alloc::<f32>(1)?;
/// be::output_block_norms_dev(&st, &dims, 2, &gy, &mut out)?;
/// assert_eq!(st.to_vec(&out)?, [4.0]);
/// # let _ = (values, topo);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`input_block_norms_dev`].
pub fn output_block_norms_dev(
    stream: &Stream,
    dims: &Dims,
    n: usize,
    gy: &impl AsDevice<f32>,
    out: &mut impl AsDeviceMut<f32>,
) -> Result<()> {
    check_limits(dims, n)?;
    rows(
        dims,
        "gy",
        gy.as_device().len(),
        n,
        dims.out_features(),
        "N × R·B",
    )?;
    check::len("block_ell", "out", out.as_device().len(), dims.r(), "R")?;
    if dims.r() == 0 {
        return Ok(());
    }
    if n == 0 {
        return stream.zero(out);
    }
    let (gp, op) = (stream.arg("gy", gy)?, stream.arg_mut("out", out)?);
    column_block_norms(stream, n, dims.r(), dims.b(), gp, op)
}

/// [`super::super::host::ema_update`] on the device, `scores` in place, queued on
/// `stream`.
///
/// ```
/// use ptxsmith::kernels::block_ell as be;
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let (mut scores, v) = (st.upload(&[1.0f32, 0.0])?, st.upload(&[3.0f32, 2.0])?);
/// be::ema_update_dev(&st, &mut scores, &v, 0.5)?;
/// assert_eq!(st.to_vec(&scores)?, [2.0, 1.0]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] naming the values: `decay` not in `[0, 1]`,
/// lengths that differ or exceed `u32::MAX`; [`Error::WrongContext`]; JIT
/// and launch errors.
pub fn ema_update_dev(
    stream: &Stream,
    scores: &mut impl AsDeviceMut<f32>,
    values: &impl AsDevice<f32>,
    decay: f32,
) -> Result<()> {
    if !(0.0..=1.0).contains(&decay) {
        return Err(Error::invalid(format!(
            "block_ell: EMA decay = {decay} is outside [0, 1]"
        )));
    }
    let len = scores.as_device().len();
    check::len(
        "block_ell",
        "values",
        values.as_device().len(),
        len,
        "scores.len()",
    )?;
    if u32::try_from(len).is_err() {
        return Err(Error::invalid(format!(
            "block_ell: {len} scores exceed the kernel's limit {}",
            u32::MAX
        )));
    }
    if len == 0 {
        return Ok(());
    }
    let args = EmaArgs {
        values: stream.arg("values", values)?,
        scores: stream.arg_mut("scores", scores)?,
        len: len as u32,
        decay,
    };
    stream.launch(
        memo!(generate_ema, stream.context().sm())?,
        elementwise(len),
        &args.args(),
    )
}
