//! Launch code of [`super`]: device entry points ([`forward_dev`],
//! [`backward_dev`]: buffers in and out, queued on a stream), raw-pointer
//! entry points on another stack's memory and stream ([`forward_raw`],
//! [`backward_raw`]) and the slice API ([`forward`], [`backward`]) on top,
//! written against [`Stream`] so the GPU and the simulator run the same
//! sequence.

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
use crate::runtime::context::{Context, Stream};
use crate::runtime::exec::{CUdeviceptr, LaunchConfig, PointerCheck, RawStream};

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
    check: PointerCheck,
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
    stream.launch_with(
        &generate_scan(sm, rev)?,
        grid(stream, chunks),
        &a.args(),
        check,
    )?;
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
        stream.launch_with(
            &generate_apply(sm, rev)?,
            grid(stream, chunks),
            &ap.args(),
            check,
        )?;
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
    scan(
        stream,
        xp,
        yp,
        rows as u32,
        t as u32,
        false,
        PointerCheck::LiveBuffers,
    )
}

/// [`forward_dev`] on memory another stack allocated (e.g. a PyTorch
/// tensor): `x` and `y` are raw device addresses of `rows × T` f32s (they
/// may be the same address: the scan reads each element before writing
/// it), the launches are queued on the foreign `stream`.
///
/// # Safety
/// * `x` and `y` are device memory of `ctx`'s context holding `rows × T`
///   f32s, 4-byte aligned, valid until the kernels have run; nothing else
///   accesses `y` until then;
/// * `stream` is a live stream of that context (or
///   [`RawStream::NULL`]).
///
/// Shapes are still checked; the addresses cannot be.
///
/// # Errors
/// As [`forward_dev`].
pub unsafe fn forward_raw(
    ctx: &Context,
    stream: RawStream,
    x: CUdeviceptr,
    y: CUdeviceptr,
    rows: usize,
    t: usize,
) -> Result<()> {
    validate_shape(rows, t)?;
    if rows == 0 || t == 0 {
        return Ok(());
    }
    let st = ctx.borrowed_stream(stream);
    let (xp, yp) = (DevPtr::new(x), DevPtr::new(y));
    scan(
        &st,
        xp,
        yp,
        rows as u32,
        t as u32,
        false,
        PointerCheck::Caller,
    )
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
    let io = BackwardPtrs {
        x: stream.arg("x", x)?,
        y: stream.arg("y", y)?,
        g: stream.arg("g", g)?,
        gx: stream.arg_mut("gx", gx)?,
    };
    backward_core(stream, io, rows, t, PointerCheck::LiveBuffers)
}

/// The caller's buffers of a backward pass.
struct BackwardPtrs {
    x: DevPtr<F32>,
    y: DevPtr<F32>,
    g: DevPtr<F32>,
    gx: DevPtr<F32>,
}

fn backward_core(
    stream: &Stream,
    io: BackwardPtrs,
    rows: usize,
    t: usize,
    check: PointerCheck,
) -> Result<()> {
    let ctx = stream.context();
    let sm = ctx.sm();
    let (rows32, t32) = (rows as u32, t as u32);
    let nchunks = t32.div_ceil(CHUNK as u32);
    let mut a = ctx.alloc::<f32>(rows * t)?;
    let mut b = ctx.alloc::<f32>(rows * t)?;
    let terms = TermsArgs {
        g: io.g,
        y: io.y,
        a: stream.arg_mut("positive terms", &mut a)?,
        b: stream.arg_mut("negative terms", &mut b)?,
        rows: rows32,
        t: t32,
        nchunks,
    };
    stream.launch_with(
        &generate_grad_terms(sm)?,
        grid(stream, rows32 * nchunks),
        &terms.args(),
        check,
    )?;
    // In place: a → P, b → N.
    let ap = stream.arg_mut("positive terms", &mut a)?;
    scan(stream, ap, ap, rows32, t32, true, PointerCheck::LiveBuffers)?;
    let bp = stream.arg_mut("negative terms", &mut b)?;
    scan(stream, bp, bp, rows32, t32, true, PointerCheck::LiveBuffers)?;
    let comb = CombineArgs {
        x: io.x,
        p: stream.arg("P", &a)?,
        n: stream.arg("N", &b)?,
        gx: io.gx,
        rows: rows32,
        t: t32,
        nchunks,
    };
    stream.launch_with(
        &generate_grad_combine(sm)?,
        grid(stream, rows32 * nchunks),
        &comb.args(),
        check,
    )
}

/// [`backward_dev`] on foreign memory: `x`, `y`, `g` (read) and `gx`
/// (written) are raw device addresses of `rows × T` f32s; the two scratch
/// buffers are allocated by ptxsmith in `ctx`.
///
/// # Safety
/// As [`forward_raw`], for `x`, `y`, `g` and `gx` (`gx` overlapping no
/// input).
///
/// # Errors
/// As [`forward_dev`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn backward_raw(
    ctx: &Context,
    stream: RawStream,
    x: CUdeviceptr,
    y: CUdeviceptr,
    g: CUdeviceptr,
    gx: CUdeviceptr,
    rows: usize,
    t: usize,
) -> Result<()> {
    validate_shape(rows, t)?;
    if rows == 0 || t == 0 {
        return Ok(());
    }
    let io = BackwardPtrs {
        x: DevPtr::new(x),
        y: DevPtr::new(y),
        g: DevPtr::new(g),
        gx: DevPtr::new(gx),
    };
    backward_core(
        &ctx.borrowed_stream(stream),
        io,
        rows,
        t,
        PointerCheck::Caller,
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
