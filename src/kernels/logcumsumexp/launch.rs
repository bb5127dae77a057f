//! Launch code of [`super`]: device entry points ([`forward_dev`],
//! [`backward_dev`]: buffers in and out, queued on a stream) and the slice
//! API ([`forward`], [`backward`]) on top, written against [`Stream`] so
//! the GPU and the simulator run the same sequence.

use super::host::{self, CHUNK, expect_len, validate_shape};
use super::ptx::{
    ApplyArgs, CarryArgs, CombineArgs, ScanArgs, THREADS, TermsArgs, generate_apply,
    generate_carry, generate_grad_combine, generate_grad_terms, generate_scan,
};
use crate::dsl::params::{DevPtr, KernelParams};
use crate::dsl::types::F32;
use crate::error::Result;
use crate::kernels::dispatch::dispatch;
use crate::runtime::backend::{Backend, Ran};
use crate::runtime::buffer::{AsDevice, AsDeviceMut};
use crate::runtime::context::Stream;
use crate::runtime::exec::LaunchConfig;

/// Grid for `threads` threads of work (grid-stride loops cover the rest).
fn grid(stream: &Stream, threads: u32) -> LaunchConfig {
    let cap = stream.context().multiprocessor_count().max(1) * 16;
    LaunchConfig::linear(threads.div_ceil(THREADS).clamp(1, cap), THREADS)
}

/// The contract's tree over `src` (read) into `dst` (may be `src`), in
/// forward or reverse order.
fn scan(
    stream: &Stream,
    src: DevPtr<F32>,
    dst: DevPtr<F32>,
    rows: u32,
    t: u32,
    rev: bool,
) -> Result<()> {
    let ctx = stream.context();
    let sm = ctx.sm();
    let nchunks = t.div_ceil(CHUNK as u32);
    let chunks = rows * nchunks;
    let mut tot = ctx.alloc::<f32>(chunks as usize)?;
    let mut carry = ctx.alloc::<f32>(chunks as usize)?;
    let a = ScanArgs {
        x: src,
        y: dst,
        tot: stream.arg_mut("chunk totals", &mut tot)?,
        rows,
        t,
        nchunks,
    };
    stream.launch(&generate_scan(sm, rev)?, grid(stream, chunks), &a.args())?;
    if nchunks > 1 {
        let c = CarryArgs {
            tot: stream.arg("chunk totals", &tot)?,
            carry: stream.arg_mut("carries", &mut carry)?,
            rows,
            nchunks,
        };
        stream.launch(&generate_carry(sm)?, grid(stream, rows), &c.args())?;
        let ap = ApplyArgs {
            y: dst,
            carry: stream.arg("carries", &carry)?,
            rows,
            t,
            nchunks,
        };
        stream.launch(&generate_apply(sm, rev)?, grid(stream, chunks), &ap.args())?;
    }
    Ok(())
}

/// `y = logcumsumexp(x)` along each row of `[rows, T]` device buffers,
/// queued on `stream` (see the [module contract](super)).
///
/// # Errors
/// [`crate::Error::InvalidArgument`] naming the values for a length that
/// is not `rows × T` or sizes above the kernels' limits;
/// [`crate::Error::WrongContext`]; JIT and launch errors.
pub fn forward_dev(
    stream: &Stream,
    x: &impl AsDevice<f32>,
    y: &mut impl AsDeviceMut<f32>,
    rows: usize,
    t: usize,
) -> Result<()> {
    validate_shape(rows, t)?;
    expect_len("x", x.as_device().len(), rows, t)?;
    expect_len("y", y.as_device().len(), rows, t)?;
    if rows == 0 || t == 0 {
        return Ok(());
    }
    let (xp, yp) = (stream.arg("x", x)?, stream.arg_mut("y", y)?);
    scan(stream, xp, yp, rows as u32, t as u32, false)
}

/// The gradient `gx` of `Σ g·y` with respect to `x`, given `x`, the
/// forward output `y` and the upstream gradient `g` (device buffers,
/// `[rows, T]`), queued on `stream`. Two `[rows, T]` scratch buffers are
/// allocated for the call.
///
/// # Errors
/// As [`forward_dev`].
pub fn backward_dev(
    stream: &Stream,
    x: &impl AsDevice<f32>,
    y: &impl AsDevice<f32>,
    g: &impl AsDevice<f32>,
    gx: &mut impl AsDeviceMut<f32>,
    rows: usize,
    t: usize,
) -> Result<()> {
    validate_shape(rows, t)?;
    for (what, len) in [
        ("x", x.as_device().len()),
        ("y", y.as_device().len()),
        ("g", g.as_device().len()),
        ("gx", gx.as_device().len()),
    ] {
        expect_len(what, len, rows, t)?;
    }
    if rows == 0 || t == 0 {
        return Ok(());
    }
    let ctx = stream.context();
    let sm = ctx.sm();
    let (rows32, t32) = (rows as u32, t as u32);
    let nchunks = t32.div_ceil(CHUNK as u32);
    let mut a = ctx.alloc::<f32>(rows * t)?;
    let mut b = ctx.alloc::<f32>(rows * t)?;
    let terms = TermsArgs {
        g: stream.arg("g", g)?,
        y: stream.arg("y", y)?,
        a: stream.arg_mut("positive terms", &mut a)?,
        b: stream.arg_mut("negative terms", &mut b)?,
        rows: rows32,
        t: t32,
        nchunks,
    };
    stream.launch(
        &generate_grad_terms(sm)?,
        grid(stream, rows32 * nchunks),
        &terms.args(),
    )?;
    // In place: a → P, b → N.
    let ap = stream.arg_mut("positive terms", &mut a)?;
    scan(stream, ap, ap, rows32, t32, true)?;
    let bp = stream.arg_mut("negative terms", &mut b)?;
    scan(stream, bp, bp, rows32, t32, true)?;
    let comb = CombineArgs {
        x: stream.arg("x", x)?,
        p: stream.arg("P", &a)?,
        n: stream.arg("N", &b)?,
        gx: stream.arg_mut("gx", gx)?,
        rows: rows32,
        t: t32,
        nchunks,
    };
    stream.launch(
        &generate_grad_combine(sm)?,
        grid(stream, rows32 * nchunks),
        &comb.args(),
    )
}

/// Upload `x`, run [`forward_dev`] on `stream`, download `y`.
pub fn forward_on(stream: &Stream, x: &[f32], rows: usize, t: usize) -> Result<Vec<f32>> {
    validate_shape(rows, t)?;
    expect_len("x", x.len(), rows, t)?;
    let dx = stream.upload(x)?;
    let mut y = stream.context().alloc::<f32>(rows * t)?;
    forward_dev(stream, &dx, &mut y, rows, t)?;
    stream.to_vec(&y)
}

/// Upload `x`, `y`, `g`, run [`backward_dev`] on `stream`, download `gx`.
pub fn backward_on(
    stream: &Stream,
    x: &[f32],
    y: &[f32],
    g: &[f32],
    rows: usize,
    t: usize,
) -> Result<Vec<f32>> {
    validate_shape(rows, t)?;
    for (what, v) in [("x", x), ("y", y), ("g", g)] {
        expect_len(what, v.len(), rows, t)?;
    }
    let (dx, dy, dg) = (stream.upload(x)?, stream.upload(y)?, stream.upload(g)?);
    let mut gx = stream.context().alloc::<f32>(rows * t)?;
    backward_dev(stream, &dx, &dy, &dg, &mut gx, rows, t)?;
    stream.to_vec(&gx)
}

/// `logcumsumexp` of each row on `backend` (see the
/// [module contract](super)); every backend gives the same bits.
pub fn forward(backend: Backend, x: &[f32], rows: usize, t: usize) -> Result<(Vec<f32>, Ran)> {
    validate_shape(rows, t)?;
    expect_len("x", x.len(), rows, t)?;
    dispatch(
        backend,
        || host::forward(x, rows, t),
        |s| forward_on(s, x, rows, t),
    )
}

/// The gradient of `Σ g·logcumsumexp(x)` on `backend`, given the forward
/// output `y`.
pub fn backward(
    backend: Backend,
    x: &[f32],
    y: &[f32],
    g: &[f32],
    rows: usize,
    t: usize,
) -> Result<(Vec<f32>, Ran)> {
    validate_shape(rows, t)?;
    for (what, v) in [("x", x), ("y", y), ("g", g)] {
        expect_len(what, v.len(), rows, t)?;
    }
    dispatch(
        backend,
        || host::backward(x, y, g, rows, t),
        |s| backward_on(s, x, y, g, rows, t),
    )
}
