//! Launch code of [`super`], one request ([`Shape`]) first after the
//! backend or stream for every entry point: the slice API on a [`Backend`]
//! ([`forward`], [`backward`]) or a stream ([`forward_on`],
//! [`backward_on`]), the device entry points ([`forward_dev`],
//! [`backward_dev`]: device buffers or foreign views in and out) and their
//! raw-pointer twins on another stack's memory ([`forward_raw`],
//! [`backward_raw`]), written against [`Stream`] so the GPU and the
//! simulator run the same sequence. Every kernel is a memoised module (one
//! PTX generation per kernel and target in a process). [`Path`] picks the
//! row path or the split path (same bits; the `*_path` variants take it
//! after the shape); [`Path::Auto`] follows [`split_rule`].

use super::host::{self, Shape};
use super::ptx::{
    AffArgs, BwdArgs, CHAIN_THREADS, ChainArgs, FWD_CHAINS, FwdArgs, SPLIT, SplitArgs, THREADS,
    TotArgs, VEC, generate_bwd, generate_bwd_aff, generate_bwd_carry, generate_bwd_tot,
    generate_bwd_zcarry, generate_fwd, generate_fwd_split, scratch_words,
};
use crate::dsl::PtxModule;
use crate::dsl::params::{DevPtr, KernelParams};
use crate::dsl::types::F32;
use crate::error::Result;
use crate::exec::{CUdeviceptr, LaunchConfig};
use crate::kernels::dispatch::dispatch;
use crate::kernels::{grid, memo, raw};
use crate::runtime::backend::{Backend, Ran};
use crate::runtime::buffer::{AsDevice, AsDeviceMut};
use crate::runtime::context::Stream;

/// Which kernels run a call (the results are the same bits either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Path {
    /// [`split_rule`] decides.
    #[default]
    Auto,
    /// One CTA per row walks the row's tiles.
    Row,
    /// One CTA per tile: the forward's carries by a look-back within its
    /// one launch, the backward's from separate kernels (rows of one tile
    /// take the row path: they have no carries).
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

/// Grid of a tile kernel for `items` work items, `per_cta` at a time (a
/// grid-stride loop over the items covers the rest).
fn tile_grid(stream: &Stream, items: u32, per_cta: u32) -> LaunchConfig {
    let mp = stream.context().multiprocessor_count();
    LaunchConfig::linear(grid::ctas(items.into(), per_cta.into(), mp, 32), THREADS)
}

/// Grid of a carry-tree kernel (one CTA per row).
fn chain_grid(stream: &Stream, rows: u32) -> LaunchConfig {
    let mp = stream.context().multiprocessor_count();
    LaunchConfig::linear(grid::ctas(rows.into(), 1, mp, 32), CHAIN_THREADS)
}

/// One launch of a carry-tree kernel (`lcse_bwd_carry`, `lcse_bwd_zcarry`):
/// a CTA per row, `tot` read and `carry` written per tile.
fn chain_launch(
    stream: &Stream,
    kernel: &PtxModule,
    tot: DevPtr<F32>,
    carry: DevPtr<F32>,
    rows: u32,
    ntiles: u32,
) -> Result<()> {
    let a = ChainArgs {
        tot,
        carry,
        rows,
        ntiles,
    };
    stream.launch(kernel, chain_grid(stream, rows), &a.args())
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
    shape: Shape,
    path: Path,
    x: DevPtr<F32>,
    y: DevPtr<F32>,
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
            items: rows,
            t,
            ntiles: n,
            flags,
        };
        return stream.launch(
            memo!(generate_fwd, sm)?,
            tile_grid(stream, rows, FWD_CHAINS),
            &a.args(),
        );
    }
    forward_split(stream, shape, x, y, flags)
}

/// The split path's forward: one launch of `lcse_fwd_split`, a CTA per
/// tile (tickets), the carries by the look-back over published totals in a
/// scratch of [`scratch_words`] 8-byte words, zeroed on the stream.
fn forward_split(
    stream: &Stream,
    shape: Shape,
    x: DevPtr<F32>,
    y: DevPtr<F32>,
    flags: u32,
) -> Result<()> {
    let ctx = stream.context();
    let (rows, t, n) = (shape.rows() as u32, shape.t() as u32, shape.tiles() as u32);
    let mut scratch = ctx.alloc::<u64>(scratch_words(shape.rows(), shape.tiles()))?;
    stream.zero(&mut scratch)?;
    let a = SplitArgs {
        x,
        y,
        scratch: stream.arg_mut("look-back scratch", &mut scratch)?,
        rows,
        t,
        ntiles: n,
        flags,
    };
    stream.launch(
        memo!(generate_fwd_split, ctx.sm())?,
        tile_grid(stream, rows * n, 1),
        &a.args(),
    )
}

/// `y = logcumsumexp(x)` along each row of `[rows, T]` device buffers or
/// foreign views, queued on `stream` (see the [module contract](super)).
/// When the split path runs, a scratch of
/// [`scratch_words`] 8-byte words (two per tile,
/// 128 per row, one) is allocated and zeroed on `stream` for the call.
///
/// ```
/// use ptxsmith::kernels::logcumsumexp::{self, Shape};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let x = st.upload(&[0.0f32, 0.0, f32::NEG_INFINITY])?;
/// let mut y = ctx.alloc::<f32>(3)?;
/// logcumsumexp::forward_dev(&st, Shape::new(1, 3)?, &x, &mut y)?;
/// let y = st.to_vec(&y)?;
/// assert_eq!(y[0], 0.0);
/// assert!((y[1] - 2f32.ln()).abs() < 1e-6 && y[2] == y[1]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument) naming the
/// values for a length that is not `rows × T`;
/// [`Error::WrongContext`](crate::Error::WrongContext); JIT and launch
/// errors. Nothing is queued on error.
pub fn forward_dev(
    stream: &Stream,
    shape: Shape,
    x: &impl AsDevice<f32>,
    y: &mut impl AsDeviceMut<f32>,
) -> Result<()> {
    forward_dev_path(stream, shape, Path::Auto, x, y)
}

/// [`forward_dev`] on the given [`Path`].
///
/// ```
/// use ptxsmith::kernels::logcumsumexp::{self, Path, Shape, TILE};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let shape = Shape::new(1, 2 * TILE)?;
/// let x = st.upload(&vec![-1.0f32; 2 * TILE])?;
/// let (mut row, mut split) = (ctx.alloc::<f32>(2 * TILE)?, ctx.alloc::<f32>(2 * TILE)?);
/// logcumsumexp::forward_dev_path(&st, shape, Path::Row, &x, &mut row)?;
/// logcumsumexp::forward_dev_path(&st, shape, Path::Split, &x, &mut split)?;
/// assert_eq!(st.to_vec(&row)?, st.to_vec(&split)?); // the same bits
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`forward_dev`].
pub fn forward_dev_path(
    stream: &Stream,
    shape: Shape,
    path: Path,
    x: &impl AsDevice<f32>,
    y: &mut impl AsDeviceMut<f32>,
) -> Result<()> {
    shape.expect_len("x", x.as_device().len())?;
    shape.expect_len("y", y.as_device().len())?;
    let (xp, yp) = (stream.arg("x", x)?, stream.arg_mut("y", y)?);
    forward_core(stream, shape, path, xp, yp)
}

/// [`forward_dev`] on raw device addresses of another stack (e.g. a
/// PyTorch tensor), queued on `stream` (e.g. made from the other stack's
/// stream with [`Stream::from_raw`]): a thin wrapper that views `x` and `y`
/// as [`ForeignSlice`](crate::runtime::ForeignSlice) / [`ForeignSliceMut`](crate::runtime::ForeignSliceMut) of `rows × T` f32s, so every
/// check of the views applies. `x` and `y` may be the same address (every
/// tile is read before it is written). The split path's scratch buffers
/// are ptxsmith's.
///
/// ```
/// use ptxsmith::kernels::logcumsumexp::{self, Shape};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// // An address another stack handed over (here, a ptxsmith buffer's own).
/// let xy = st.upload(&[0.0f32, 0.0])?;
/// // SAFETY: 2 live f32s of this context, transformed in place.
/// unsafe { logcumsumexp::forward_raw(&st, Shape::new(1, 2)?, xy.device_ptr(), xy.device_ptr())? };
/// assert_eq!(xy.to_vec()?[1], logcumsumexp::host::forward(Shape::new(1, 2)?, &[0.0, 0.0])?[1]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Safety
/// * `x` and `y` are device memory of `stream`'s context holding
///   `rows × T` f32s, valid until the kernels have run;
/// * nothing else accesses `y` until then (`x` may be `y` itself, but
///   must not overlap it otherwise).
///
/// # Errors
/// As [`forward_dev`], and the checks of [`ForeignSlice::from_raw_parts`](crate::runtime::ForeignSlice::from_raw_parts).
pub unsafe fn forward_raw(
    stream: &Stream,
    shape: Shape,
    x: CUdeviceptr,
    y: CUdeviceptr,
) -> Result<()> {
    // SAFETY: the caller's contract covers each range (lengths from the
    // shape, valid once built).
    let (x, mut y) = unsafe {
        (
            raw::view::<f32>(stream, x, shape.len())?,
            raw::view_mut::<f32>(stream, y, shape.len())?,
        )
    };
    forward_dev(stream, shape, &x, &mut y)
}

/// The caller's buffers of a backward pass.
struct BackwardPtrs {
    x: DevPtr<F32>,
    g: DevPtr<F32>,
    gx: DevPtr<F32>,
}

fn backward_core(stream: &Stream, shape: Shape, path: Path, io: BackwardPtrs) -> Result<()> {
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
        return stream.launch(
            memo!(generate_bwd, sm)?,
            tile_grid(stream, rows, 1),
            &a.args(),
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
    stream.launch(
        memo!(generate_bwd_tot, sm)?,
        tile_grid(stream, items, 1),
        &a.args(),
    )?;
    chain_launch(
        stream,
        memo!(generate_bwd_carry, sm)?,
        stream.arg("pair totals", &tot)?,
        stream.arg_mut("pair carries", &mut fcarry)?,
        rows,
        n,
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
    stream.launch(
        memo!(generate_bwd_aff, sm)?,
        tile_grid(stream, items, 1),
        &a.args(),
    )?;
    chain_launch(
        stream,
        memo!(generate_bwd_zcarry, sm)?,
        stream.arg("tile maps", &aff)?,
        stream.arg_mut("reverse carries", &mut zcarry)?,
        rows,
        n,
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
    stream.launch(
        memo!(generate_bwd, sm)?,
        tile_grid(stream, items, 1),
        &a.args(),
    )
}

/// The gradient `gx` of `Σ g·logcumsumexp(x)` with respect to `x`, given
/// `x` and the upstream gradient `g` (`[rows, T]` device buffers or foreign
/// views), queued on `stream` (see the [module contract](super); the
/// forward output is not needed). Small scratch buffers (a few floats per
/// tile) are allocated for the call.
///
/// ```
/// use ptxsmith::kernels::logcumsumexp::{self, Shape};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let (x, g) = (st.upload(&[0.0f32, 0.0])?, st.upload(&[0.0f32, 1.0])?);
/// let mut gx = ctx.alloc::<f32>(2)?;
/// logcumsumexp::backward_dev(&st, Shape::new(1, 2)?, &x, &g, &mut gx)?;
/// assert_eq!(st.to_vec(&gx)?, [0.5, 0.5]); // y_1 = log(e^x_0 + e^x_1)
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`forward_dev`], for `x`, `g` and `gx`.
pub fn backward_dev(
    stream: &Stream,
    shape: Shape,
    x: &impl AsDevice<f32>,
    g: &impl AsDevice<f32>,
    gx: &mut impl AsDeviceMut<f32>,
) -> Result<()> {
    backward_dev_path(stream, shape, Path::Auto, x, g, gx)
}

/// [`backward_dev`] on the given [`Path`].
///
/// ```
/// use ptxsmith::kernels::logcumsumexp::{self, Path, Shape};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let (x, g) = (st.upload(&[1.0f32, 1.0])?, st.upload(&[1.0f32, 0.0])?);
/// let mut gx = ctx.alloc::<f32>(2)?;
/// logcumsumexp::backward_dev_path(&st, Shape::new(1, 2)?, Path::Row, &x, &g, &mut gx)?;
/// assert_eq!(st.to_vec(&gx)?, [1.0, 0.0]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`backward_dev`].
pub fn backward_dev_path(
    stream: &Stream,
    shape: Shape,
    path: Path,
    x: &impl AsDevice<f32>,
    g: &impl AsDevice<f32>,
    gx: &mut impl AsDeviceMut<f32>,
) -> Result<()> {
    for (what, len) in [
        ("x", x.as_device().len()),
        ("g", g.as_device().len()),
        ("gx", gx.as_device().len()),
    ] {
        shape.expect_len(what, len)?;
    }
    let io = BackwardPtrs {
        x: stream.arg("x", x)?,
        g: stream.arg("g", g)?,
        gx: stream.arg_mut("gx", gx)?,
    };
    backward_core(stream, shape, path, io)
}

/// [`backward_dev`] on raw device addresses of another stack, queued on
/// `stream` (e.g. made with [`Stream::from_raw`]): a thin wrapper that
/// views `x`, `g` (read) and `gx` (written) as [`ForeignSlice`](crate::runtime::ForeignSlice) /
/// [`ForeignSliceMut`](crate::runtime::ForeignSliceMut) of `rows × T` f32s, so every check of the views
/// applies. The scratch buffers are ptxsmith's.
///
/// ```
/// use ptxsmith::kernels::logcumsumexp::{self, Shape};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let (x, g, gx) = (st.upload(&[0.0f32, 0.0])?, st.upload(&[0.0f32, 1.0])?, ctx.alloc::<f32>(2)?);
/// // SAFETY: 2 live f32s of this context each; gx overlaps no input.
/// unsafe {
///     logcumsumexp::backward_raw(&st, Shape::new(1, 2)?, x.device_ptr(), g.device_ptr(), gx.device_ptr())?;
/// }
/// assert_eq!(gx.to_vec()?, [0.5, 0.5]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Safety
/// * `x`, `g` and `gx` are device memory of `stream`'s context holding
///   `rows × T` f32s each, valid until the kernels have run;
/// * `gx` overlaps neither input, and nothing else accesses it until then.
///
/// # Errors
/// As [`backward_dev`], and the checks of [`ForeignSlice::from_raw_parts`](crate::runtime::ForeignSlice::from_raw_parts).
pub unsafe fn backward_raw(
    stream: &Stream,
    shape: Shape,
    x: CUdeviceptr,
    g: CUdeviceptr,
    gx: CUdeviceptr,
) -> Result<()> {
    let n = shape.len();
    // SAFETY: the caller's contract covers each range (lengths from the
    // shape, valid once built).
    let (x, g, mut gx) = unsafe {
        (
            raw::view::<f32>(stream, x, n)?,
            raw::view::<f32>(stream, g, n)?,
            raw::view_mut::<f32>(stream, gx, n)?,
        )
    };
    backward_dev(stream, shape, &x, &g, &mut gx)
}

/// Upload `x`, run [`forward_dev`] on `stream`, download `y`.
///
/// ```
/// use ptxsmith::kernels::logcumsumexp::{self, Shape};
/// use ptxsmith::runtime::Context;
///
/// let st = Context::sim(ptxsmith::Sm::Sm80).default_stream();
/// let y = logcumsumexp::forward_on(&st, Shape::new(2, 1)?, &[-0.0, 3.5])?;
/// assert_eq!(y, [-0.0, 3.5]); // a row's first output is its first input
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`forward_dev`].
pub fn forward_on(stream: &Stream, shape: Shape, x: &[f32]) -> Result<Vec<f32>> {
    forward_on_path(stream, shape, Path::Auto, x)
}

/// [`forward_on`] on the given [`Path`].
///
/// ```
/// use ptxsmith::kernels::logcumsumexp::{self, Path, Shape};
/// use ptxsmith::runtime::Context;
///
/// let st = Context::sim(ptxsmith::Sm::Sm80).default_stream();
/// let y = logcumsumexp::forward_on_path(&st, Shape::new(1, 2)?, Path::Row, &[0.0, f32::NEG_INFINITY])?;
/// assert_eq!(y, [0.0, 0.0]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`forward_dev`].
pub fn forward_on_path(stream: &Stream, shape: Shape, path: Path, x: &[f32]) -> Result<Vec<f32>> {
    shape.expect_len("x", x.len())?;
    let dx = stream.upload(x)?;
    let mut y = stream.context().alloc::<f32>(shape.len())?;
    forward_dev_path(stream, shape, path, &dx, &mut y)?;
    stream.to_vec(&y)
}

/// Upload `x`, `g`, run [`backward_dev`] on `stream`, download `gx`.
///
/// ```
/// use ptxsmith::kernels::logcumsumexp::{self, Shape};
/// use ptxsmith::runtime::Context;
///
/// let st = Context::sim(ptxsmith::Sm::Sm80).default_stream();
/// let gx = logcumsumexp::backward_on(&st, Shape::new(1, 1)?, &[2.0], &[0.25])?;
/// assert_eq!(gx, [0.25]); // T = 1: gx = g
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`backward_dev`].
pub fn backward_on(stream: &Stream, shape: Shape, x: &[f32], g: &[f32]) -> Result<Vec<f32>> {
    backward_on_path(stream, shape, Path::Auto, x, g)
}

/// [`backward_on`] on the given [`Path`].
///
/// ```
/// use ptxsmith::kernels::logcumsumexp::{self, Path, Shape};
/// use ptxsmith::runtime::Context;
///
/// let st = Context::sim(ptxsmith::Sm::Sm80).default_stream();
/// let gx = logcumsumexp::backward_on_path(&st, Shape::new(1, 1)?, Path::Split, &[2.0], &[0.25])?;
/// assert_eq!(gx, [0.25]); // one tile: the row path runs
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`backward_dev`].
pub fn backward_on_path(
    stream: &Stream,
    shape: Shape,
    path: Path,
    x: &[f32],
    g: &[f32],
) -> Result<Vec<f32>> {
    shape.expect_len("x", x.len())?;
    shape.expect_len("g", g.len())?;
    let (dx, dg) = (stream.upload(x)?, stream.upload(g)?);
    let mut gx = stream.context().alloc::<f32>(shape.len())?;
    backward_dev_path(stream, shape, path, &dx, &dg, &mut gx)?;
    stream.to_vec(&gx)
}

/// `logcumsumexp` of each row on `backend` (see the
/// [module contract](super)); every backend gives the same bits.
///
/// ```
/// use ptxsmith::kernels::logcumsumexp::{self, Shape};
/// use ptxsmith::runtime::Backend;
///
/// let x = [0.0, 0.0, 0.0, 0.0];
/// let (y, _ran) = logcumsumexp::forward(Backend::Sim, Shape::new(1, 4)?, &x)?;
/// let (want, _) = logcumsumexp::forward(Backend::Host, Shape::new(1, 4)?, &x)?;
/// assert_eq!(y, want);
/// assert!((y[3] - 4f32.ln()).abs() < 1e-6);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`forward_dev`], checked before anything runs;
/// [`Error::NoDevice`](crate::Error::NoDevice) for `Backend::Cuda` without
/// a GPU.
pub fn forward(backend: Backend, shape: Shape, x: &[f32]) -> Result<(Vec<f32>, Ran)> {
    shape.expect_len("x", x.len())?;
    dispatch(
        backend,
        || host::forward(shape, x),
        |s| forward_on(s, shape, x),
    )
}

/// The gradient of `Σ g·logcumsumexp(x)` with respect to `x` on `backend`
/// (the forward output is not needed); every backend gives the same bits.
///
/// ```
/// use ptxsmith::kernels::logcumsumexp::{self, Shape};
/// use ptxsmith::runtime::Backend;
///
/// let (gx, _ran) = logcumsumexp::backward(Backend::Sim, Shape::new(1, 2)?, &[0.0, 0.0], &[1.0, 1.0])?;
/// assert_eq!(gx, [1.5, 0.5]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`forward`], for `x` and `g`.
pub fn backward(backend: Backend, shape: Shape, x: &[f32], g: &[f32]) -> Result<(Vec<f32>, Ran)> {
    shape.expect_len("x", x.len())?;
    shape.expect_len("g", g.len())?;
    dispatch(
        backend,
        || host::backward(shape, x, g),
        |s| backward_on(s, shape, x, g),
    )
}

#[cfg(test)]
mod tests {
    //! The backward's carry-tree kernels alone on synthetic tile totals:
    //! rows of thousands of tiles (runs longer than `RUN`, all four warps
    //! of the tree) at the cost of a few thousand values; the split
    //! forward's deepest look-back.
    use super::*;
    use crate::kernels::logcumsumexp::host::{pair_op, reverse_carries, tile_carries};
    use crate::kernels::logcumsumexp::ptx::DEEP;
    use crate::runtime::Context;
    use crate::target::Sm;

    fn lcg(seed: u32) -> impl FnMut() -> f32 {
        let mut s = seed;
        move || {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (s >> 8) as f32 / (1u32 << 24) as f32 * 2.0 - 1.0
        }
    }

    /// Runs a carry kernel over `rows` rows of `n` tiles with values `tot`
    /// (`N` floats a tile), returning the carries buffer.
    fn run(
        generate: fn(Sm) -> Result<crate::dsl::PtxModule>,
        rows: usize,
        n: usize,
        tot: &[f32],
        init: f32,
    ) -> Vec<f32> {
        let ctx = Context::sim(Sm::Sm80);
        let st = ctx.default_stream();
        let t = st.upload(tot).unwrap();
        let mut c = st.upload(&vec![init; tot.len()]).unwrap();
        let a = ChainArgs {
            tot: st.arg("totals", &t).unwrap(),
            carry: st.arg_mut("carries", &mut c).unwrap(),
            rows: rows as u32,
            ntiles: n as u32,
        };
        st.launch(
            &generate(ctx.sm()).unwrap(),
            chain_grid(&st, rows as u32),
            &a.args(),
        )
        .unwrap();
        st.to_vec(&c).unwrap()
    }

    /// The bits, any NaN as the canonical one (as `tests/common` compares).
    fn b(v: f32) -> u32 {
        if v.is_nan() { 0x7fc0_0000 } else { v.to_bits() }
    }

    const SIZES: [usize; 8] = [2, 33, 64, 65, 67, 1100, 4096, 5000];

    /// `lcse_fwd_split` with only run-first tiles publishing their
    /// inclusive carry ([`DEEP`]): every other tile looks back to its run's
    /// first and folds the totals in between, which the simulator's
    /// in-order CTAs never need otherwise. The same bits as the host model
    /// (3 rows of 33 tiles; a row of 67: three runs, the last ragged).
    #[test]
    fn split_forward_with_the_deepest_look_back_equals_the_host_model() {
        let ctx = Context::sim(Sm::Sm80);
        let st = ctx.default_stream();
        for (rows, t) in [
            (3, 33 * host::TILE - 5),
            (1, 67 * host::TILE - 1000),
            (1, 34 * host::TILE),
        ] {
            let shape = Shape::new(rows, t).unwrap();
            let mut r = lcg(t as u32);
            let mut x: Vec<f32> = (0..rows * t).map(|_| 6.0 * r()).collect();
            x[..host::TILE + 3].fill(f32::NEG_INFINITY);
            let want = host::forward(shape, &x).unwrap();
            let dx = st.upload(&x).unwrap();
            let mut y = ctx.alloc::<f32>(rows * t).unwrap();
            let (xp, yp) = (st.arg("x", &dx).unwrap(), st.arg_mut("y", &mut y).unwrap());
            let flags = vec_flag(t as u32, &[xp.addr, yp.addr]) | DEEP;
            forward_split(&st, shape, xp, yp, flags).unwrap();
            let got = st.to_vec(&y).unwrap();
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(b(*g), b(*w), "{rows} × {t}, element {i}");
            }
        }
    }

    #[test]
    fn backward_carry_kernels_equal_the_host_tree() {
        for n in SIZES {
            let mut r = lcg(7 * n as u32);
            let pairs: Vec<f32> = (0..n).flat_map(|_| [4.0 * r(), 1.0 + r().abs()]).collect();
            let got = run(generate_bwd_carry, 1, n, &pairs, 7.0);
            let tot: Vec<(f32, f32)> = pairs.chunks(2).map(|p| (p[0], p[1])).collect();
            let want = tile_carries(n, &tot[..n - 1], pair_op);
            for (tau, w) in want.iter().enumerate().skip(1) {
                let (m, s) = w.expect("carries after the first");
                let g = (got[2 * tau], got[2 * tau + 1]);
                assert_eq!((b(g.0), b(g.1)), (b(m), b(s)), "n {n} τ {tau}");
            }
            // Affine maps of tiles 1..n (b in [0, 1]); Zc of every tile.
            let maps: Vec<f32> = (0..n).flat_map(|_| [r(), r().abs()]).collect();
            let got = run(generate_bwd_zcarry, 1, n, &maps, 7.0);
            let rev: Vec<(f32, f32)> = (1..n)
                .rev()
                .map(|t| (maps[2 * t], maps[2 * t + 1]))
                .collect();
            let zr = reverse_carries(n, &rev);
            for (rho, z) in zr.iter().enumerate() {
                let tau = n - 1 - rho;
                assert_eq!(b(got[tau]), b(*z), "n {n} τ {tau}");
            }
        }
    }
}
