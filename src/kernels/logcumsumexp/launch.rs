//! Launch code of [`super`]: device entry points ([`forward_dev`],
//! [`backward_dev`]: buffers in and out, queued on a stream), raw-pointer
//! entry points on another stack's memory and stream ([`forward_raw`],
//! [`backward_raw`]) and the slice API ([`forward`], [`backward`]) on top,
//! written against [`Stream`] so the GPU and the simulator run the same
//! sequence. [`Path`] picks the row path or the split path (same bits);
//! [`Path::Auto`] follows [`split_rule`].

use super::host::{self, Shape};
use super::ptx::{
    AffArgs, BwdArgs, CHAIN_THREADS, ChainArgs, FwdArgs, SPLIT, THREADS, TotArgs, VEC,
    generate_bwd, generate_bwd_aff, generate_bwd_carry, generate_bwd_tot, generate_bwd_zcarry,
    generate_fwd, generate_fwd_carry, generate_fwd_tot,
};
use crate::dsl::params::{DevPtr, KernelParams};
use crate::dsl::types::F32;
use crate::error::Result;
use crate::kernels::dispatch::dispatch;
use crate::runtime::backend::{Backend, Ran};
use crate::runtime::buffer::{AsDevice, AsDeviceMut};
use crate::runtime::context::{Context, Stream};
use crate::runtime::exec::{CUdeviceptr, LaunchConfig, PointerCheck, RawStream};

/// Which kernels run a call (the results are the same bits either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Path {
    /// [`split_rule`] decides.
    #[default]
    Auto,
    /// One CTA per row walks the row's tiles.
    Row,
    /// One CTA per tile, with the carries from separate kernels (rows of
    /// one tile take the row path: they have no carries).
    Split,
}

/// The rule of [`Path::Auto`]: split when a row has at least two tiles and
/// there are fewer rows than 4 per multiprocessor (one CTA per row would
/// leave most of the device idle while each CTA walks its tiles in turn).
pub fn split_rule(multiprocessors: u32, shape: Shape) -> bool {
    shape.tiles() >= 2 && shape.rows() < 4 * multiprocessors as usize
}

fn use_split(stream: &Stream, shape: Shape, path: Path) -> bool {
    shape.tiles() >= 2
        && match path {
            Path::Row => false,
            Path::Split => true,
            _ => split_rule(stream.context().multiprocessor_count(), shape),
        }
}

/// Grid of a tile kernel for `items` work items (a grid-stride loop over
/// the items covers the rest).
fn tile_grid(stream: &Stream, items: u32) -> LaunchConfig {
    let cap = stream.context().multiprocessor_count().max(1) * 32;
    LaunchConfig::linear(items.clamp(1, cap), THREADS)
}

/// Grid of a chain kernel (one thread per row).
fn chain_grid(stream: &Stream, rows: u32) -> LaunchConfig {
    let cap = stream.context().multiprocessor_count().max(1) * 16;
    LaunchConfig::linear(rows.div_ceil(CHAIN_THREADS).clamp(1, cap), CHAIN_THREADS)
}

/// `VEC` when `t` and every address allow 16-byte tile accesses.
fn vec_flag(t: u32, ptrs: &[u64]) -> u32 {
    if t.is_multiple_of(4) && ptrs.iter().all(|a| a.is_multiple_of(16)) {
        VEC
    } else {
        0
    }
}

fn forward_core(
    stream: &Stream,
    x: DevPtr<F32>,
    y: DevPtr<F32>,
    shape: Shape,
    path: Path,
    check: PointerCheck,
) -> Result<()> {
    if shape.is_empty() {
        return Ok(());
    }
    let ctx = stream.context();
    let sm = ctx.sm();
    let (rows, t, n) = (shape.rows() as u32, shape.t() as u32, shape.tiles() as u32);
    let flags = vec_flag(t, &[x.addr, y.addr]);
    if !use_split(stream, shape, path) {
        let a = FwdArgs {
            x,
            y,
            carry: DevPtr::new(0),
            items: rows,
            t,
            ntiles: n,
            flags,
        };
        return stream.launch_with(
            &generate_fwd(sm)?,
            tile_grid(stream, rows),
            &a.args(),
            check,
        );
    }
    let tiles = shape.rows() * shape.tiles();
    let mut tot = ctx.alloc::<f32>(tiles)?;
    let mut carry = ctx.alloc::<f32>(tiles)?;
    let items = rows * (n - 1);
    let a = TotArgs {
        x,
        tot: stream.arg_mut("tile totals", &mut tot)?,
        items,
        t,
        ntiles: n,
        flags: flags | SPLIT,
    };
    stream.launch_with(
        &generate_fwd_tot(sm)?,
        tile_grid(stream, items),
        &a.args(),
        check,
    )?;
    let a = ChainArgs {
        tot: stream.arg("tile totals", &tot)?,
        carry: stream.arg_mut("tile carries", &mut carry)?,
        rows,
        ntiles: n,
    };
    stream.launch(
        &generate_fwd_carry(sm)?,
        chain_grid(stream, rows),
        &a.args(),
    )?;
    let items = rows * n;
    let a = FwdArgs {
        x,
        y,
        carry: stream.arg("tile carries", &carry)?,
        items,
        t,
        ntiles: n,
        flags: flags | SPLIT,
    };
    stream.launch_with(
        &generate_fwd(sm)?,
        tile_grid(stream, items),
        &a.args(),
        check,
    )
}

/// `y = logcumsumexp(x)` along each row of `[rows, T]` device buffers,
/// queued on `stream` (see the [module contract](super)).
///
/// # Errors
/// [`crate::Error::InvalidArgument`] naming the values for a length that
/// is not `rows × T`; [`crate::Error::WrongContext`]; JIT and launch
/// errors.
pub fn forward_dev(
    stream: &Stream,
    x: &impl AsDevice<f32>,
    y: &mut impl AsDeviceMut<f32>,
    shape: Shape,
) -> Result<()> {
    forward_dev_with(stream, x, y, shape, Path::Auto)
}

/// [`forward_dev`] on the given [`Path`].
///
/// # Errors
/// As [`forward_dev`].
pub fn forward_dev_with(
    stream: &Stream,
    x: &impl AsDevice<f32>,
    y: &mut impl AsDeviceMut<f32>,
    shape: Shape,
    path: Path,
) -> Result<()> {
    shape.expect_len("x", x.as_device().len())?;
    shape.expect_len("y", y.as_device().len())?;
    if shape.is_empty() {
        return Ok(());
    }
    let (xp, yp) = (stream.arg("x", x)?, stream.arg_mut("y", y)?);
    forward_core(stream, xp, yp, shape, path, PointerCheck::LiveBuffers)
}

/// [`forward_dev`] on memory another stack allocated (e.g. a PyTorch
/// tensor): `x` and `y` are raw device addresses of `rows × T` f32s (they
/// may be the same address: every tile is read before it is written), the
/// launches are queued on the foreign `stream`. The split path allocates
/// two small scratch buffers (a float per tile) in `ctx`.
///
/// # Safety
/// * `x` and `y` are device memory of `ctx`'s context holding `rows × T`
///   f32s, 4-byte aligned, valid until the kernels have run; nothing else
///   accesses `y` until then;
/// * `stream` is a live stream of that context (or
///   [`RawStream::NULL`]).
///
/// The shape is still checked; the addresses cannot be.
///
/// # Errors
/// As [`forward_dev`].
pub unsafe fn forward_raw(
    ctx: &Context,
    stream: RawStream,
    x: CUdeviceptr,
    y: CUdeviceptr,
    shape: Shape,
) -> Result<()> {
    let st = ctx.borrowed_stream(stream);
    forward_core(
        &st,
        DevPtr::new(x),
        DevPtr::new(y),
        shape,
        Path::Auto,
        PointerCheck::Caller,
    )
}

/// The caller's buffers of a backward pass.
struct BackwardPtrs {
    x: DevPtr<F32>,
    g: DevPtr<F32>,
    gx: DevPtr<F32>,
}

fn backward_core(
    stream: &Stream,
    io: BackwardPtrs,
    shape: Shape,
    path: Path,
    check: PointerCheck,
) -> Result<()> {
    if shape.is_empty() {
        return Ok(());
    }
    let ctx = stream.context();
    let sm = ctx.sm();
    let (rows, t, n) = (shape.rows() as u32, shape.t() as u32, shape.tiles() as u32);
    let flags = vec_flag(t, &[io.x.addr, io.g.addr, io.gx.addr]);
    let tiles = shape.rows() * shape.tiles();
    if !use_split(stream, shape, path) {
        // Pass 1 writes the pair carries of tiles 1..n here.
        let mut fcarry = ctx.alloc::<f32>(if n > 1 { 2 * tiles } else { 1 })?;
        let a = BwdArgs {
            x: io.x,
            g: io.g,
            gx: io.gx,
            fcarry: stream.arg_mut("pair carries", &mut fcarry)?,
            zcarry: DevPtr::new(0),
            items: rows,
            t,
            ntiles: n,
            flags,
        };
        return stream.launch_with(
            &generate_bwd(sm)?,
            tile_grid(stream, rows),
            &a.args(),
            check,
        );
    }
    let mut tot = ctx.alloc::<f32>(2 * tiles)?;
    let mut fcarry = ctx.alloc::<f32>(2 * tiles)?;
    let mut aff = ctx.alloc::<f32>(2 * tiles)?;
    let mut zcarry = ctx.alloc::<f32>(tiles)?;
    let items = rows * (n - 1);
    let a = TotArgs {
        x: io.x,
        tot: stream.arg_mut("pair totals", &mut tot)?,
        items,
        t,
        ntiles: n,
        flags: flags | SPLIT,
    };
    stream.launch_with(
        &generate_bwd_tot(sm)?,
        tile_grid(stream, items),
        &a.args(),
        check,
    )?;
    let a = ChainArgs {
        tot: stream.arg("pair totals", &tot)?,
        carry: stream.arg_mut("pair carries", &mut fcarry)?,
        rows,
        ntiles: n,
    };
    stream.launch(
        &generate_bwd_carry(sm)?,
        chain_grid(stream, rows),
        &a.args(),
    )?;
    let a = AffArgs {
        x: io.x,
        g: io.g,
        fcarry: stream.arg("pair carries", &fcarry)?,
        aff: stream.arg_mut("tile maps", &mut aff)?,
        items,
        t,
        ntiles: n,
        flags: flags | SPLIT,
    };
    stream.launch_with(
        &generate_bwd_aff(sm)?,
        tile_grid(stream, items),
        &a.args(),
        check,
    )?;
    let a = ChainArgs {
        tot: stream.arg("tile maps", &aff)?,
        carry: stream.arg_mut("reverse carries", &mut zcarry)?,
        rows,
        ntiles: n,
    };
    stream.launch(
        &generate_bwd_zcarry(sm)?,
        chain_grid(stream, rows),
        &a.args(),
    )?;
    let items = rows * n;
    let a = BwdArgs {
        x: io.x,
        g: io.g,
        gx: io.gx,
        fcarry: stream.arg("pair carries", &fcarry)?,
        zcarry: stream.arg("reverse carries", &zcarry)?,
        items,
        t,
        ntiles: n,
        flags: flags | SPLIT,
    };
    stream.launch_with(
        &generate_bwd(sm)?,
        tile_grid(stream, items),
        &a.args(),
        check,
    )
}

/// The gradient `gx` of `Σ g·logcumsumexp(x)` with respect to `x`, given
/// `x` and the upstream gradient `g` (device buffers, `[rows, T]`), queued
/// on `stream` (see the [module contract](super); the forward output is
/// not needed). Small scratch buffers (a few floats per tile) are
/// allocated for the call.
///
/// # Errors
/// As [`forward_dev`].
pub fn backward_dev(
    stream: &Stream,
    x: &impl AsDevice<f32>,
    g: &impl AsDevice<f32>,
    gx: &mut impl AsDeviceMut<f32>,
    shape: Shape,
) -> Result<()> {
    backward_dev_with(stream, x, g, gx, shape, Path::Auto)
}

/// [`backward_dev`] on the given [`Path`].
///
/// # Errors
/// As [`forward_dev`].
pub fn backward_dev_with(
    stream: &Stream,
    x: &impl AsDevice<f32>,
    g: &impl AsDevice<f32>,
    gx: &mut impl AsDeviceMut<f32>,
    shape: Shape,
    path: Path,
) -> Result<()> {
    for (what, len) in [
        ("x", x.as_device().len()),
        ("g", g.as_device().len()),
        ("gx", gx.as_device().len()),
    ] {
        shape.expect_len(what, len)?;
    }
    if shape.is_empty() {
        return Ok(());
    }
    let io = BackwardPtrs {
        x: stream.arg("x", x)?,
        g: stream.arg("g", g)?,
        gx: stream.arg_mut("gx", gx)?,
    };
    backward_core(stream, io, shape, path, PointerCheck::LiveBuffers)
}

/// [`backward_dev`] on foreign memory: `x`, `g` (read) and `gx`
/// (written) are raw device addresses of `rows × T` f32s; the scratch
/// buffers are allocated by ptxsmith in `ctx`.
///
/// # Safety
/// As [`forward_raw`], for `x`, `g` and `gx` (`gx` overlapping no input).
///
/// # Errors
/// As [`forward_dev`].
pub unsafe fn backward_raw(
    ctx: &Context,
    stream: RawStream,
    x: CUdeviceptr,
    g: CUdeviceptr,
    gx: CUdeviceptr,
    shape: Shape,
) -> Result<()> {
    let io = BackwardPtrs {
        x: DevPtr::new(x),
        g: DevPtr::new(g),
        gx: DevPtr::new(gx),
    };
    backward_core(
        &ctx.borrowed_stream(stream),
        io,
        shape,
        Path::Auto,
        PointerCheck::Caller,
    )
}

/// Upload `x`, run [`forward_dev`] on `stream`, download `y`.
///
/// # Errors
/// As [`forward_dev`].
pub fn forward_on(stream: &Stream, x: &[f32], shape: Shape) -> Result<Vec<f32>> {
    forward_on_path(stream, x, shape, Path::Auto)
}

/// [`forward_on`] on the given [`Path`].
///
/// # Errors
/// As [`forward_dev`].
pub fn forward_on_path(stream: &Stream, x: &[f32], shape: Shape, path: Path) -> Result<Vec<f32>> {
    shape.expect_len("x", x.len())?;
    let dx = stream.upload(x)?;
    let mut y = stream.context().alloc::<f32>(shape.len())?;
    forward_dev_with(stream, &dx, &mut y, shape, path)?;
    stream.to_vec(&y)
}

/// Upload `x`, `g`, run [`backward_dev`] on `stream`, download `gx`.
///
/// # Errors
/// As [`forward_dev`].
pub fn backward_on(stream: &Stream, x: &[f32], g: &[f32], shape: Shape) -> Result<Vec<f32>> {
    backward_on_path(stream, x, g, shape, Path::Auto)
}

/// [`backward_on`] on the given [`Path`].
///
/// # Errors
/// As [`forward_dev`].
pub fn backward_on_path(
    stream: &Stream,
    x: &[f32],
    g: &[f32],
    shape: Shape,
    path: Path,
) -> Result<Vec<f32>> {
    shape.expect_len("x", x.len())?;
    shape.expect_len("g", g.len())?;
    let (dx, dg) = (stream.upload(x)?, stream.upload(g)?);
    let mut gx = stream.context().alloc::<f32>(shape.len())?;
    backward_dev_with(stream, &dx, &dg, &mut gx, shape, path)?;
    stream.to_vec(&gx)
}

/// `logcumsumexp` of each row on `backend` (see the
/// [module contract](super)); every backend gives the same bits.
///
/// # Errors
/// As [`forward_dev`]; [`crate::Error::NoDevice`] for `Backend::Cuda`
/// without a GPU.
pub fn forward(backend: Backend, x: &[f32], shape: Shape) -> Result<(Vec<f32>, Ran)> {
    shape.expect_len("x", x.len())?;
    dispatch(
        backend,
        || host::forward(x, shape),
        |s| forward_on(s, x, shape),
    )
}

/// The gradient of `Σ g·logcumsumexp(x)` with respect to `x` on `backend`
/// (the forward output is not needed).
///
/// # Errors
/// As [`forward`].
pub fn backward(backend: Backend, x: &[f32], g: &[f32], shape: Shape) -> Result<(Vec<f32>, Ran)> {
    shape.expect_len("x", x.len())?;
    shape.expect_len("g", g.len())?;
    dispatch(
        backend,
        || host::backward(x, g, shape),
        |s| backward_on(s, x, g, shape),
    )
}
