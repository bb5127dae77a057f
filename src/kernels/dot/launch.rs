//! Launch code for [`super`]: the device entry point ([`dot_rows_dev`],
//! buffers in and out, nothing crosses the bus), the raw-pointer entry
//! point ([`dot_rows_raw`]) and the slice API ([`dot_rows`]) on top. All
//! three share one launch, written against [`Stream`], so the GPU and the
//! simulator run the same sequence.

use super::ptx::{BLOCK, DotRowsArgs, generate};
use crate::dsl::params::{DevPtr, KernelParams};
use crate::dsl::types::F32;
use crate::error::{Error, Result};
use crate::kernels::dispatch::dispatch;
use crate::kernels::memo;
use crate::runtime::backend::{Backend, Ran};
use crate::runtime::buffer::{AsDevice, AsDeviceMut};
use crate::runtime::context::{Context, Stream};
use crate::runtime::exec::{CUdeviceptr, LaunchConfig, PointerCheck, RawStream};

/// Check `rows` and `n` against the kernel's limits; returns them as u32.
fn check_dims(rows: usize, n: usize) -> Result<(u32, u32)> {
    rows.checked_mul(n)
        .ok_or_else(|| Error::invalid(format!("rows × n overflows: rows = {rows}, n = {n}")))?;
    // The kernel's grid-stride loop adds the grid size to a u32 row index,
    // so keep rows well below the wrap point.
    let rows32 = u32::try_from(rows)
        .ok()
        .filter(|r| *r <= u32::MAX / 2)
        .ok_or_else(|| Error::invalid(format!("rows = {rows} exceeds {}", u32::MAX / 2)))?;
    let n32 = u32::try_from(n).map_err(|_| Error::invalid(format!("n = {n} exceeds u32")))?;
    Ok((rows32, n32))
}

/// Check the lengths of `x` (`rows × n`), `y` (`n`) and, when given,
/// `out` (`rows`) against the shape; returns `(rows, n)` as u32.
fn check_shape(
    x: usize,
    y: usize,
    out: Option<usize>,
    rows: usize,
    n: usize,
) -> Result<(u32, u32)> {
    let dims = check_dims(rows, n)?;
    let want = rows * n;
    if x != want {
        return Err(Error::invalid(format!(
            "x has {x} elements, expected rows × n = {rows} × {n} = {want}"
        )));
    }
    if y != n {
        return Err(Error::invalid(format!(
            "y has {y} elements, expected n = {n}"
        )));
    }
    if let Some(out) = out
        && out != rows
    {
        return Err(Error::invalid(format!(
            "out has {out} elements, expected rows = {rows}"
        )));
    }
    Ok(dims)
}

/// Check the shapes of a row dot product on host slices; returns
/// `(rows, n)` as u32.
pub fn validate(x: &[f32], y: &[f32], rows: usize, n: usize) -> Result<(u32, u32)> {
    check_shape(x.len(), y.len(), None, rows, n)
}

/// Queue the kernel (nothing for `rows = 0`).
fn launch(stream: &Stream, args: DotRowsArgs, pointers: PointerCheck) -> Result<()> {
    if args.rows == 0 {
        return Ok(());
    }
    let module = memo!(generate, stream.context().sm())?;
    let blocks = args
        .rows
        .div_ceil(BLOCK)
        .min(stream.context().multiprocessor_count().max(1) * 8);
    stream.launch_with(
        module,
        LaunchConfig::linear(blocks, BLOCK),
        &args.args(),
        pointers,
    )
}

/// `out[r] = Σ_c x[r·n + c] · y[c]` (the [module contract](super)) on
/// device buffers, queued on `stream`: nothing is copied to or from the
/// host. `out` is written when the stream reaches the kernel.
///
/// # Errors
/// [`Error::InvalidArgument`] when a length does not match `rows` and `n`
/// (naming both); [`Error::WrongContext`] for a buffer of another context;
/// JIT and launch errors.
pub fn dot_rows_dev(
    stream: &Stream,
    x: &impl AsDevice<f32>,
    y: &impl AsDevice<f32>,
    out: &mut impl AsDeviceMut<f32>,
    rows: usize,
    n: usize,
) -> Result<()> {
    let (rows32, n32) = check_shape(
        x.as_device().len(),
        y.as_device().len(),
        Some(out.as_device().len()),
        rows,
        n,
    )?;
    let args = DotRowsArgs {
        x: stream.arg("x", x)?,
        y: stream.arg("y", y)?,
        out: stream.arg_mut("out", out)?,
        rows: rows32,
        n: n32,
    };
    launch(stream, args, PointerCheck::LiveBuffers)
}

/// [`dot_rows_dev`] on memory another stack allocated: raw device
/// addresses and a raw stream of `ctx`'s device (e.g. cudarc's
/// `CudaSlice::device_ptr()` and `CudaStream::cu_stream()`). The kernel
/// is queued and the call returns; synchronise `stream` before reading
/// `out`.
///
/// # Safety
/// * `x`, `y` and `out` point to device memory valid in `ctx`'s context
///   (the device's primary context on a GPU) holding `rows × n`, `n` and
///   `rows` `f32`s, 4-byte aligned, and stay valid until the kernel has
///   run;
/// * `out` does not overlap `x` or `y`, and nothing else accesses `out`
///   until the kernel has run;
/// * `stream` is a live stream of that context (or [`RawStream::NULL`]).
///
/// Shapes are still checked; the addresses cannot be.
pub unsafe fn dot_rows_raw(
    ctx: &Context,
    stream: RawStream,
    x: CUdeviceptr,
    y: CUdeviceptr,
    out: CUdeviceptr,
    rows: usize,
    n: usize,
) -> Result<()> {
    let (rows32, n32) = check_dims(rows, n)?;
    let args = DotRowsArgs {
        x: DevPtr::<F32>::new(x),
        y: DevPtr::new(y),
        out: DevPtr::new(out),
        rows: rows32,
        n: n32,
    };
    launch(&ctx.borrowed_stream(stream), args, PointerCheck::Caller)
}

/// Upload `x` and `y`, run the kernel on `stream` and download the result.
pub fn run_on(stream: &Stream, x: &[f32], y: &[f32], rows: usize, n: usize) -> Result<Vec<f32>> {
    validate(x, y, rows, n)?;
    let dx = stream.upload(x)?;
    let dy = stream.upload(y)?;
    let mut out = stream.context().alloc::<f32>(rows)?;
    dot_rows_dev(stream, &dx, &dy, &mut out, rows, n)?;
    stream.to_vec(&out)
}

/// `out[r] = Σ_c x[r·n + c] · y[c]` with separate rounding in ascending `c`
/// (see the [module contract](super)) on `backend`; returns the result and
/// which implementation ran. Every backend gives the same bits.
pub fn dot_rows(
    backend: Backend,
    x: &[f32],
    y: &[f32],
    rows: usize,
    n: usize,
) -> Result<(Vec<f32>, Ran)> {
    validate(x, y, rows, n)?;
    dispatch(
        backend,
        || Ok(super::host::dot_rows(x, y, rows, n)),
        |s| run_on(s, x, y, rows, n),
    )
}
