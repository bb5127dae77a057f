//! Launch code of [`super`]: a topology uploaded once
//! ([`DeviceTopology`]: `col` and its transposed index on the device),
//! device entry points ([`forward_dev`], [`grad_input_dev`],
//! [`grad_values_dev`], [`grad_bias_dev`]: buffers in and out, queued on a
//! stream) and the slice API on every backend ([`forward`],
//! [`grad_input`], [`grad_values`], [`grad_bias`]), written against
//! [`Stream`] so the GPU and the simulator run the same sequence.
//!
//! # Kernel limits
//! The kernels index activations with 64-bit offsets and everything else
//! with 32 bits, so a call is refused with
//! [`Error::InvalidArgument`] naming the values when `N ≥ 2³¹`, `R·B` or
//! `C·B ≥ 2³¹`, or `R·K·B·B > u32::MAX` (a 16 GiB weight).
//!
//! # Scratch
//! Grad-values and grad-bias with `N > 256` (more than one N-chunk)
//! allocate a partials buffer of at most [`SCRATCH_FLOATS`] floats (or one
//! chunk's worth, when a single chunk's partials are larger) and fold the
//! chunks group by group, in ascending chunk order.

pub mod stats;

use super::host::{self, Dims, N_CHUNK, validate_col};
use super::ptx::{
    FoldArgs, ForwardArgs, GradBiasArgs, GradInputArgs, GradValuesArgs, THREADS, generate_fold,
    generate_forward, generate_grad_bias, generate_grad_input, generate_grad_values, rows_per_tile,
};
use super::topology::TransposedIndex;
use crate::dsl::params::{DevPtr, KernelParams};
use crate::dsl::types::F32;
use crate::error::{Error, Result};
use crate::exec::{CUdeviceptr, LaunchConfig};
use crate::kernels::dispatch::dispatch;
use crate::kernels::memo;
use crate::kernels::{check, grid, raw};
use crate::runtime::backend::{Backend, Ran};
use crate::runtime::buffer::{AsDevice, AsDeviceMut, DeviceBuffer};
use crate::runtime::context::Stream;

/// The most floats the chunk partials of one grad-values / grad-bias call
/// occupy (64 MiB), unless one chunk alone needs more.
pub const SCRATCH_FLOATS: usize = 1 << 24;

/// The largest `N`, `R·B` and `C·B` the kernels take (`2³¹ − 1`).
pub const MAX_EXTENT: usize = (1 << 31) - 1;

fn limit(what: &str, value: usize, max: usize) -> Result<()> {
    limit_in("block_ell", what, value, max)
}

/// `value` of `what` at most `max`, else an error of `family`'s kernels
/// (`block_ell`, `block_ell_tc`: the two share their 32-bit limits).
pub(crate) fn limit_in(family: &str, what: &str, value: usize, max: usize) -> Result<()> {
    if value <= max {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "{family}: {what} = {value} exceeds the kernels' limit {max}"
    )))
}

/// The 32-bit limits of the kernels for `dims` and `n` rows.
pub(super) fn check_limits(dims: &Dims, n: usize) -> Result<()> {
    check_limits_in("block_ell", dims, n)
}

/// [`check_limits`] for the kernels of `family`.
pub(crate) fn check_limits_in(family: &str, dims: &Dims, n: usize) -> Result<()> {
    limit_in(family, "N", n, MAX_EXTENT)?;
    limit_in(family, "R·B", dims.out_features(), MAX_EXTENT)?;
    limit_in(family, "C·B", dims.in_features(), MAX_EXTENT)?;
    limit_in(family, "R·K·B·B", dims.values_len(), u32::MAX as usize)
}

/// A block-ELL topology on the device: `col [R, K]` and its
/// [`TransposedIndex`] (`offsets [C+1]`, `slots [nnz]`), validated and
/// built once on the host, uploaded once, reused by every call until the
/// topology changes (re-upload after [`super::retopology`]).
pub struct DeviceTopology {
    dims: Dims,
    nnz: usize,
    col: DeviceBuffer<i32>,
    offsets: DeviceBuffer<u32>,
    slots: DeviceBuffer<u32>,
}

impl DeviceTopology {
    /// Validate `col` against `dims`, build its transposed index and upload
    /// both on `stream` (`R·K·4 + (C+1)·4 + nnz·4` bytes).
    ///
    /// ```
    /// use ptxsmith::kernels::block_ell::{DeviceTopology, Dims};
    /// use ptxsmith::runtime::Context;
    ///
    /// // One 8 × 8 block (R = C = K = 1, B = 8).
    /// let dims = Dims::new(1, 1, 1, 8)?;
    /// let st = Context::sim(ptxsmith::Sm::Sm80).default_stream();
    /// let topo = DeviceTopology::upload(&st, &dims, &[0])?;
    /// assert_eq!((topo.dims(), topo.nnz()), (&dims, 1));
    /// # Ok::<(), ptxsmith::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`validate_col`]; [`Error::InvalidArgument`] for sizes past the
    /// [kernel limits](self); allocation and copy errors.
    pub fn upload(stream: &Stream, dims: &Dims, col: &[i32]) -> Result<Self> {
        check_limits(dims, 0)?;
        let index = TransposedIndex::build(dims, col)?;
        Ok(Self {
            dims: *dims,
            nnz: index.slots().len(),
            col: stream.upload(col)?,
            offsets: stream.upload(index.offsets())?,
            slots: stream.upload(index.slots())?,
        })
    }

    /// The layer's sizes.
    pub fn dims(&self) -> &Dims {
        &self.dims
    }
    /// The number of non-empty slots.
    pub fn nnz(&self) -> usize {
        self.nnz
    }
    /// `col [R, K]` on the device.
    pub fn col(&self) -> &DeviceBuffer<i32> {
        &self.col
    }
    /// The transposed index on the device: `(offsets [C+1], slots [nnz])`
    /// (read by the tensor-core grad-input of `block_ell_tc`).
    pub(crate) fn index(&self) -> (&DeviceBuffer<u32>, &DeviceBuffer<u32>) {
        (&self.offsets, &self.slots)
    }
}

/// CTAs for `tiles` tiles: every tile, up to 8 CTAs per SM (the kernels'
/// grid-stride loops cover the rest).
pub(super) fn grid(stream: &Stream, tiles: usize) -> LaunchConfig {
    let mp = stream.context().multiprocessor_count();
    LaunchConfig::linear(grid::ctas(tiles as u64, 1, mp, 8), THREADS)
}

/// `a · b` as the kernels' u32 tile counter, or an error naming both.
fn tiles(what: &str, a: usize, b: usize) -> Result<usize> {
    let t = a.saturating_mul(b);
    limit(what, t, u32::MAX as usize)?;
    Ok(t)
}

/// Check the lengths of `n` rows of `width` floats.
pub(super) fn rows(
    dims: &Dims,
    what: &str,
    got: usize,
    n: usize,
    width: usize,
    shape: &str,
) -> Result<()> {
    rows_in("block_ell", dims, what, got, n, width, shape)
}

/// [`rows`] for the kernels of `family`.
pub(crate) fn rows_in(
    family: &str,
    dims: &Dims,
    what: &str,
    got: usize,
    n: usize,
    width: usize,
    shape: &str,
) -> Result<()> {
    let want = dims.rows_len(shape, n, width)?;
    check::len(family, what, got, want, shape)
}

fn bsize(dims: &Dims) -> u32 {
    dims.b() as u32
}

/// The raw pointers of one call (device entry points take them from
/// buffers, raw entry points from the caller).
#[derive(Clone, Copy)]
struct Ptrs {
    a: DevPtr<F32>,
    b: DevPtr<F32>,
    out: DevPtr<F32>,
}

fn forward_core(
    st: &Stream,
    topo: &DeviceTopology,
    n: usize,
    p: Ptrs,
    bias: Option<DevPtr<F32>>,
) -> Result<()> {
    let d = topo.dims;
    let ntiles = n.div_ceil(rows_per_tile(bsize(&d)) as usize);
    let count = tiles("R × row tiles", d.r(), ntiles)?;
    if count == 0 {
        return Ok(());
    }
    let args = ForwardArgs {
        x: p.a,
        values: p.b,
        col: st.arg("col", &topo.col)?,
        bias: bias.unwrap_or(p.b),
        y: p.out,
        n: n as u32,
        r: d.r() as u32,
        c: d.c() as u32,
        k: d.k() as u32,
        has_bias: u32::from(bias.is_some()),
    };
    let m = memo!(generate_forward, st.context().sm(), bsize(&d))?;
    st.launch(m, grid(st, count), &args.args())
}

/// `y = x·Wᵀ (+ bias)` for `n` rows, queued on `stream` (see the
/// [module contract](super)); `y` is `[N, R·B]`.
///
/// ```
/// use ptxsmith::kernels::block_ell as be;
///
/// // One 8 × 8 block (R = C = K = 1, B = 8): W = 0.5 · I, its topology
/// // on an sm_80 simulator context (the set-up these examples share).
/// let be::Example { dims, values, ctx, st, topo, .. } = be::example()?;
/// let (x, v, bias) = (st.upload(&[2.0f32; 8])?, st.upload(&values)?, st.upload(&[1.0f32; 8])?);
/// let mut y = ctx.alloc::<f32>(8)?;
/// be::forward_dev(&st, &topo, 1, &x, &v, Some(&bias), &mut y)?;
/// assert_eq!(st.to_vec(&y)?, [2.0; 8]); // 0.5 · 2 + 1
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] naming the values for a length that does
/// not match its shape or sizes past the [kernel limits](self);
/// [`Error::WrongContext`]; JIT and launch errors. Nothing is queued on
/// error.
pub fn forward_dev(
    stream: &Stream,
    topo: &DeviceTopology,
    n: usize,
    x: &impl AsDevice<f32>,
    values: &impl AsDevice<f32>,
    bias: Option<&dyn AsDevice<f32>>,
    y: &mut impl AsDeviceMut<f32>,
) -> Result<()> {
    let d = topo.dims;
    check_limits(&d, n)?;
    rows(&d, "x", x.as_device().len(), n, d.in_features(), "N × C·B")?;
    rows(&d, "y", y.as_device().len(), n, d.out_features(), "N × R·B")?;
    let values_len = values.as_device().len();
    check::len(
        "block_ell",
        "values",
        values_len,
        d.values_len(),
        "R × K × B × B",
    )?;
    let bias = bias.map(|b| b.as_device());
    if let Some(b) = &bias {
        check::len("block_ell", "bias", b.len(), d.out_features(), "R·B")?;
    }
    let bias = bias.map(|b| stream.arg("bias", &b)).transpose()?;
    let p = Ptrs {
        a: stream.arg("x", x)?,
        b: stream.arg("values", values)?,
        out: stream.arg_mut("y", y)?,
    };
    forward_core(stream, topo, n, p, bias)
}

/// [`forward_dev`] on raw device addresses of another stack (e.g.
/// PyTorch or CuPy tensors), queued on `stream` (e.g. made with
/// [`Stream::from_raw`]): a thin wrapper viewing `x` (`N × C·B` f32s),
/// `values` (`R·K·B·B`), `bias` (`R·B`, optional) and `y` (`N × R·B`) as
/// [`ForeignSlice`](crate::runtime::ForeignSlice)s; the topology is ptxsmith's.
///
/// ```
/// use ptxsmith::kernels::block_ell as be;
///
/// // One 8 × 8 block (R = C = K = 1, B = 8): W = 0.5 · I, its topology
/// // on an sm_80 simulator context (the set-up these examples share).
/// let be::Example { dims, values, ctx, st, topo, .. } = be::example()?;
/// let (x, v, y) = (st.upload(&[2.0f32; 8])?, st.upload(&values)?, ctx.alloc::<f32>(8)?);
/// // SAFETY: 8, 64 and 8 f32s of this context; y overlaps no input.
/// unsafe { be::forward_raw(&st, &topo, 1, x.device_ptr(), v.device_ptr(), None, y.device_ptr())? };
/// assert_eq!(y.to_vec()?, [1.0; 8]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Safety
/// * `x`, `values`, `bias` and `y` are device memory of `stream`'s
///   context with at least the lengths above, valid until the kernel has
///   run; `y` overlaps no input and nothing else accesses it until then.
///
/// # Errors
/// As [`forward_dev`], and the checks of [`ForeignSlice::from_raw_parts`](crate::runtime::ForeignSlice::from_raw_parts).
pub unsafe fn forward_raw(
    stream: &Stream,
    topo: &DeviceTopology,
    n: usize,
    x: CUdeviceptr,
    values: CUdeviceptr,
    bias: Option<CUdeviceptr>,
    y: CUdeviceptr,
) -> Result<()> {
    let d = topo.dims;
    check_limits(&d, n)?;
    let rows_of = |width: usize| d.rows_len("N × width", n, width);
    // SAFETY: the caller's contract covers each range (lengths from the
    // checked sizes).
    let (x, values, bias, mut y) = unsafe {
        (
            raw::view::<f32>(stream, x, rows_of(d.in_features())?)?,
            raw::view::<f32>(stream, values, d.values_len())?,
            raw::view_opt::<f32>(stream, bias, d.out_features())?,
            raw::view_mut::<f32>(stream, y, rows_of(d.out_features())?)?,
        )
    };
    let bias = bias.as_ref().map(|b| b as &dyn AsDevice<f32>);
    forward_dev(stream, topo, n, &x, &values, bias, &mut y)
}

fn grad_input_core(st: &Stream, topo: &DeviceTopology, n: usize, p: Ptrs) -> Result<()> {
    let d = topo.dims;
    let ntiles = n.div_ceil(rows_per_tile(bsize(&d)) as usize);
    let count = tiles("C × row tiles", d.c(), ntiles)?;
    if count == 0 {
        return Ok(());
    }
    let args = GradInputArgs {
        gy: p.a,
        values: p.b,
        offsets: st.arg("index offsets", &topo.offsets)?,
        slots: st.arg("index slots", &topo.slots)?,
        gx: p.out,
        n: n as u32,
        r: d.r() as u32,
        c: d.c() as u32,
        k: d.k() as u32,
    };
    let m = memo!(generate_grad_input, st.context().sm(), bsize(&d))?;
    st.launch(m, grid(st, count), &args.args())
}

/// `gx` (`[N, C·B]`), the gradient with respect to `x` given `gy` (`[N,
/// R·B]`), queued on `stream`; reads the topology's transposed index.
///
/// ```
/// use ptxsmith::kernels::block_ell as be;
///
/// // One 8 × 8 block (R = C = K = 1, B = 8): W = 0.5 · I, its topology
/// // on an sm_80 simulator context (the set-up these examples share).
/// let be::Example { dims, values, ctx, st, topo, .. } = be::example()?;
/// let (gy, v) = (st.upload(&[4.0f32; 8])?, st.upload(&values)?);
/// let mut gx = ctx.alloc::<f32>(8)?;
/// be::grad_input_dev(&st, &topo, 1, &gy, &v, &mut gx)?;
/// assert_eq!(st.to_vec(&gx)?, [2.0; 8]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`forward_dev`].
pub fn grad_input_dev(
    stream: &Stream,
    topo: &DeviceTopology,
    n: usize,
    gy: &impl AsDevice<f32>,
    values: &impl AsDevice<f32>,
    gx: &mut impl AsDeviceMut<f32>,
) -> Result<()> {
    let d = topo.dims;
    check_limits(&d, n)?;
    rows(
        &d,
        "gy",
        gy.as_device().len(),
        n,
        d.out_features(),
        "N × R·B",
    )?;
    rows(
        &d,
        "gx",
        gx.as_device().len(),
        n,
        d.in_features(),
        "N × C·B",
    )?;
    let values_len = values.as_device().len();
    check::len(
        "block_ell",
        "values",
        values_len,
        d.values_len(),
        "R × K × B × B",
    )?;
    let p = Ptrs {
        a: stream.arg("gy", gy)?,
        b: stream.arg("values", values)?,
        out: stream.arg_mut("gx", gx)?,
    };
    grad_input_core(stream, topo, n, p)
}

/// [`grad_input_dev`] on another stack's memory: `gy` (`N × R·B`),
/// `values` (`R·K·B·B`) and `gx` (`N × C·B`) are raw device addresses,
/// viewed as [`ForeignSlice`](crate::runtime::ForeignSlice)s.
///
/// ```
/// use ptxsmith::kernels::block_ell as be;
///
/// // One 8 × 8 block (R = C = K = 1, B = 8): W = 0.5 · I, its topology
/// // on an sm_80 simulator context (the set-up these examples share).
/// let be::Example { dims, values, ctx, st, topo, .. } = be::example()?;
/// let (gy, v, gx) = (st.upload(&[4.0f32; 8])?, st.upload(&values)?, ctx.alloc::<f32>(8)?);
/// // SAFETY: 8, 64 and 8 f32s of this context.
/// unsafe { be::grad_input_raw(&st, &topo, 1, gy.device_ptr(), v.device_ptr(), gx.device_ptr())? };
/// assert_eq!(gx.to_vec()?, [2.0; 8]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Safety
/// As [`forward_raw`], for `gy`, `values` (read) and `gx` (written).
///
/// # Errors
/// As [`forward_raw`].
pub unsafe fn grad_input_raw(
    stream: &Stream,
    topo: &DeviceTopology,
    n: usize,
    gy: CUdeviceptr,
    values: CUdeviceptr,
    gx: CUdeviceptr,
) -> Result<()> {
    let d = topo.dims;
    check_limits(&d, n)?;
    let rows_of = |width: usize| d.rows_len("N × width", n, width);
    // SAFETY: the caller's contract covers each range.
    let (gy, values, mut gx) = unsafe {
        (
            raw::view::<f32>(stream, gy, rows_of(d.out_features())?)?,
            raw::view::<f32>(stream, values, d.values_len())?,
            raw::view_mut::<f32>(stream, gx, rows_of(d.in_features())?)?,
        )
    };
    grad_input_dev(stream, topo, n, &gy, &values, &mut gx)
}

/// Run the N-chunk tree of `len` outputs into `out`: `pass(part, q0,
/// groups)` queues the partials of chunks `q0 .. q0 + groups` into `part`
/// (`[groups, len]`); with one chunk it writes `out` directly.
#[allow(clippy::too_many_arguments)]
pub(super) fn chunk_tree(
    stream: &Stream,
    budget: usize,
    n: usize,
    len: usize,
    per_chunk_tiles: usize,
    out: DevPtr<F32>,
    mut pass: impl FnMut(DevPtr<F32>, u32, u32, usize) -> Result<()>,
) -> Result<()> {
    let nchunks = n.div_ceil(N_CHUNK);
    if nchunks == 1 {
        return pass(out, 0, 1, per_chunk_tiles);
    }
    let cap = (u32::MAX as usize / per_chunk_tiles.max(1)).max(1);
    let group = (budget / len.max(1)).clamp(1, nchunks).min(cap);
    let ctx = stream.context();
    let mut part = ctx.alloc::<f32>(group * len)?;
    let fold = memo!(generate_fold, ctx.sm())?;
    let mut q0 = 0;
    while q0 < nchunks {
        let g = group.min(nchunks - q0);
        let pp = stream.arg_mut("chunk partials", &mut part)?;
        pass(pp, q0 as u32, g as u32, per_chunk_tiles * g)?;
        let args = FoldArgs {
            part: pp,
            out,
            len: len as u32,
            groups: g as u32,
            first: u32::from(q0 == 0),
        };
        let cfg = LaunchConfig::linear(
            grid::ctas_within(len as u64, THREADS.into(), 1 << 16),
            THREADS,
        );
        stream.launch(fold, cfg, &args.args())?;
        q0 += g;
    }
    Ok(())
}

fn grad_values_core(
    st: &Stream,
    topo: &DeviceTopology,
    n: usize,
    p: Ptrs,
    scratch_floats: usize,
) -> Result<()> {
    let d = topo.dims;
    if d.values_len() == 0 {
        return Ok(());
    }
    let colp = st.arg("col", &topo.col)?;
    let m = memo!(generate_grad_values, st.context().sm(), bsize(&d))?;
    let slots = d.slots();
    let (len, out) = (d.values_len(), p.out);
    chunk_tree(
        st,
        scratch_floats,
        n,
        len,
        slots,
        out,
        |part, q0, groups, count| {
            let args = GradValuesArgs {
                x: p.a,
                gy: p.b,
                col: colp,
                part,
                n: n as u32,
                r: d.r() as u32,
                c: d.c() as u32,
                k: d.k() as u32,
                q0,
                groups,
            };
            st.launch(m, grid(st, count), &args.args())
        },
    )
}

/// `gv` (`[R, K, B, B]`), the gradient with respect to `values`, by the
/// N-chunk tree, queued on `stream`; empty slots get `+0.0`.
///
/// ```
/// use ptxsmith::kernels::block_ell as be;
///
/// // One 8 × 8 block (R = C = K = 1, B = 8): W = 0.5 · I, its topology
/// // on an sm_80 simulator context (the set-up these examples share).
/// let be::Example { dims, values, ctx, st, topo, .. } = be::example()?;
/// let (x, gy) = (st.upload(&[1.0f32; 8])?, st.upload(&[3.0f32; 8])?);
/// let mut gv = ctx.alloc::<f32>(64)?;
/// be::grad_values_dev(&st, &topo, 1, &x, &gy, &mut gv)?;
/// assert_eq!(st.to_vec(&gv)?, vec![3.0; 64]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`forward_dev`].
pub fn grad_values_dev(
    stream: &Stream,
    topo: &DeviceTopology,
    n: usize,
    x: &impl AsDevice<f32>,
    gy: &impl AsDevice<f32>,
    gv: &mut impl AsDeviceMut<f32>,
) -> Result<()> {
    grad_values_dev_budget(stream, topo, n, x, gy, gv, SCRATCH_FLOATS)
}

/// [`grad_values_dev`] with the partials capped at `scratch_floats` floats
/// instead of [`SCRATCH_FLOATS`] (at least one chunk's worth is always
/// used). The result does not depend on the budget: only the number of
/// launches does.
///
/// ```
/// use ptxsmith::kernels::block_ell as be;
///
/// // One 8 × 8 block (R = C = K = 1, B = 8): W = 0.5 · I, its topology
/// // on an sm_80 simulator context (the set-up these examples share).
/// let be::Example { dims, values, ctx, st, topo, .. } = be::example()?;
/// // 600 rows: three N-chunks, folded with room for one chunk's partials.
/// let (x, gy) = (st.upload(&vec![1.0f32; 600 * 8])?, st.upload(&vec![0.5f32; 600 * 8])?);
/// let (mut a, mut b) = (ctx.alloc::<f32>(64)?, ctx.alloc::<f32>(64)?);
/// be::grad_values_dev_budget(&st, &topo, 600, &x, &gy, &mut a, 64)?;
/// be::grad_values_dev(&st, &topo, 600, &x, &gy, &mut b)?;
/// assert_eq!(st.to_vec(&a)?, st.to_vec(&b)?); // the budget changes launches, not bits
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`forward_dev`].
pub fn grad_values_dev_budget(
    stream: &Stream,
    topo: &DeviceTopology,
    n: usize,
    x: &impl AsDevice<f32>,
    gy: &impl AsDevice<f32>,
    gv: &mut impl AsDeviceMut<f32>,
    scratch_floats: usize,
) -> Result<()> {
    let d = topo.dims;
    check_limits(&d, n)?;
    rows(&d, "x", x.as_device().len(), n, d.in_features(), "N × C·B")?;
    rows(
        &d,
        "gy",
        gy.as_device().len(),
        n,
        d.out_features(),
        "N × R·B",
    )?;
    check::len(
        "block_ell",
        "gv",
        gv.as_device().len(),
        d.values_len(),
        "R × K × B × B",
    )?;
    if n == 0 {
        return stream.zero(gv);
    }
    let p = Ptrs {
        a: stream.arg("x", x)?,
        b: stream.arg("gy", gy)?,
        out: stream.arg_mut("gv", gv)?,
    };
    grad_values_core(stream, topo, n, p, scratch_floats)
}

/// [`grad_values_dev`] on another stack's memory: `x` (`N × C·B`), `gy`
/// (`N × R·B`) and `gv` (`R·K·B·B`) are raw device addresses, viewed as
/// [`ForeignSlice`](crate::runtime::ForeignSlice)s; the chunk partials (when `N > 256`) are ptxsmith's.
///
/// ```
/// use ptxsmith::kernels::block_ell as be;
///
/// // One 8 × 8 block (R = C = K = 1, B = 8): W = 0.5 · I, its topology
/// // on an sm_80 simulator context (the set-up these examples share).
/// let be::Example { dims, values, ctx, st, topo, .. } = be::example()?;
/// let (x, gy, gv) = (st.upload(&[1.0f32; 8])?, st.upload(&[3.0f32; 8])?, ctx.alloc::<f32>(64)?);
/// // SAFETY: 8, 8 and 64 f32s of this context.
/// unsafe { be::grad_values_raw(&st, &topo, 1, x.device_ptr(), gy.device_ptr(), gv.device_ptr())? };
/// assert_eq!(gv.to_vec()?, vec![3.0; 64]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Safety
/// As [`forward_raw`], for `x`, `gy` (read) and `gv` (written).
///
/// # Errors
/// As [`forward_raw`].
pub unsafe fn grad_values_raw(
    stream: &Stream,
    topo: &DeviceTopology,
    n: usize,
    x: CUdeviceptr,
    gy: CUdeviceptr,
    gv: CUdeviceptr,
) -> Result<()> {
    let d = topo.dims;
    check_limits(&d, n)?;
    let rows_of = |width: usize| d.rows_len("N × width", n, width);
    // SAFETY: the caller's contract covers each range.
    let (x, gy, mut gv) = unsafe {
        (
            raw::view::<f32>(stream, x, rows_of(d.in_features())?)?,
            raw::view::<f32>(stream, gy, rows_of(d.out_features())?)?,
            raw::view_mut::<f32>(stream, gv, d.values_len())?,
        )
    };
    grad_values_dev(stream, topo, n, &x, &gy, &mut gv)
}

/// `gb` (`[R·B]`), the gradient with respect to `bias`, by the N-chunk
/// tree over `gy` (`[N, R·B]`), queued on `stream`.
///
/// ```
/// use ptxsmith::kernels::block_ell as be;
///
/// // One 8 × 8 block (R = C = K = 1, B = 8): W = 0.5 · I, its topology
/// // on an sm_80 simulator context (the set-up these examples share).
/// let be::Example { dims, values, ctx, st, topo, .. } = be::example()?;
/// let gy = st.upload(&[1.0f32; 3 * 8])?;
/// let mut gb = ctx.alloc::<f32>(8)?;
/// be::grad_bias_dev(&st, &dims, 3, &gy, &mut gb)?;
/// assert_eq!(st.to_vec(&gb)?, [3.0; 8]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`forward_dev`].
pub fn grad_bias_dev(
    stream: &Stream,
    dims: &Dims,
    n: usize,
    gy: &impl AsDevice<f32>,
    gb: &mut impl AsDeviceMut<f32>,
) -> Result<()> {
    grad_bias_dev_budget(stream, dims, n, gy, gb, SCRATCH_FLOATS)
}

/// [`grad_bias_dev`] with the partials capped at `scratch_floats` floats
/// (see [`grad_values_dev_budget`]).
///
/// ```
/// use ptxsmith::kernels::block_ell as be;
///
/// // One 8 × 8 block (R = C = K = 1, B = 8): W = 0.5 · I, its topology
/// // on an sm_80 simulator context (the set-up these examples share).
/// let be::Example { dims, values, ctx, st, topo, .. } = be::example()?;
/// let gy = st.upload(&vec![1.0f32; 300 * 8])?;
/// let mut gb = ctx.alloc::<f32>(8)?;
/// be::grad_bias_dev_budget(&st, &dims, 300, &gy, &mut gb, 8)?;
/// assert_eq!(st.to_vec(&gb)?, [300.0; 8]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`forward_dev`].
pub fn grad_bias_dev_budget(
    stream: &Stream,
    dims: &Dims,
    n: usize,
    gy: &impl AsDevice<f32>,
    gb: &mut impl AsDeviceMut<f32>,
    scratch_floats: usize,
) -> Result<()> {
    check_limits(dims, n)?;
    let width = dims.out_features();
    rows(dims, "gy", gy.as_device().len(), n, width, "N × R·B")?;
    check::len("block_ell", "gb", gb.as_device().len(), width, "R·B")?;
    if width == 0 {
        return Ok(());
    }
    if n == 0 {
        return stream.zero(gb);
    }
    let gyp = stream.arg("gy", gy)?;
    let out = stream.arg_mut("gb", gb)?;
    let m = memo!(generate_grad_bias, stream.context().sm())?;
    let per_chunk = width.div_ceil(THREADS as usize);
    chunk_tree(
        stream,
        scratch_floats,
        n,
        width,
        width,
        out,
        |part, q0, groups, _| {
            let args = GradBiasArgs {
                gy: gyp,
                part,
                n: n as u32,
                width: width as u32,
                q0,
                groups,
            };
            let cfg = grid(stream, per_chunk * groups as usize);
            stream.launch(m, cfg, &args.args())
        },
    )
}

fn check_forward(
    dims: &Dims,
    n: usize,
    x: &[f32],
    values: &[f32],
    col: &[i32],
    bias: Option<&[f32]>,
) -> Result<()> {
    check_limits(dims, n)?;
    rows(dims, "x", x.len(), n, dims.in_features(), "N × C·B")?;
    dims.rows_len("N × R·B", n, dims.out_features())?;
    check::len(
        "block_ell",
        "values",
        values.len(),
        dims.values_len(),
        "R × K × B × B",
    )?;
    validate_col(dims, col)?;
    if let Some(b) = bias {
        check::len("block_ell", "bias", b.len(), dims.out_features(), "R·B")?;
    }
    Ok(())
}

/// [`host::forward`] on `backend`; every backend gives the same bits.
///
/// ```
/// use ptxsmith::kernels::block_ell as be;
/// use ptxsmith::runtime::Backend;
///
/// // One 8 × 8 block (R = C = K = 1, B = 8): W = 0.5 · I.
/// let be::Example { dims, values, .. } = be::example()?;
/// let (y, _ran) = be::forward(Backend::Sim, &dims, 1, &[2.0; 8], &values, &[0], None)?;
/// assert_eq!(y, [1.0; 8]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`host::forward`] and [`forward_dev`]; checked before anything runs.
pub fn forward(
    backend: Backend,
    dims: &Dims,
    n: usize,
    x: &[f32],
    values: &[f32],
    col: &[i32],
    bias: Option<&[f32]>,
) -> Result<(Vec<f32>, Ran)> {
    check_forward(dims, n, x, values, col, bias)?;
    dispatch(
        backend,
        || host::forward(dims, n, x, values, col, bias),
        |s| {
            let topo = DeviceTopology::upload(s, dims, col)?;
            let (dx, dv) = (s.upload(x)?, s.upload(values)?);
            let db = bias.map(|b| s.upload(b)).transpose()?;
            let mut y = s.context().alloc::<f32>(n * dims.out_features())?;
            let bias_dyn = db.as_ref().map(|b| b as &dyn AsDevice<f32>);
            forward_dev(s, &topo, n, &dx, &dv, bias_dyn, &mut y)?;
            s.to_vec(&y)
        },
    )
}

/// [`host::grad_input`] on `backend`.
///
/// ```
/// use ptxsmith::kernels::block_ell as be;
/// use ptxsmith::runtime::Backend;
///
/// // One 8 × 8 block (R = C = K = 1, B = 8): W = 0.5 · I.
/// let be::Example { dims, values, .. } = be::example()?;
/// let (gx, _ran) = be::grad_input(Backend::Sim, &dims, 1, &[4.0; 8], &values, &[0])?;
/// assert_eq!(gx, [2.0; 8]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`host::grad_input`] and [`grad_input_dev`].
pub fn grad_input(
    backend: Backend,
    dims: &Dims,
    n: usize,
    gy: &[f32],
    values: &[f32],
    col: &[i32],
) -> Result<(Vec<f32>, Ran)> {
    check_limits(dims, n)?;
    rows(dims, "gy", gy.len(), n, dims.out_features(), "N × R·B")?;
    dims.rows_len("N × C·B", n, dims.in_features())?;
    check::len(
        "block_ell",
        "values",
        values.len(),
        dims.values_len(),
        "R × K × B × B",
    )?;
    validate_col(dims, col)?;
    dispatch(
        backend,
        || host::grad_input(dims, n, gy, values, col),
        |s| {
            let topo = DeviceTopology::upload(s, dims, col)?;
            let (dg, dv) = (s.upload(gy)?, s.upload(values)?);
            let mut gx = s.context().alloc::<f32>(n * dims.in_features())?;
            grad_input_dev(s, &topo, n, &dg, &dv, &mut gx)?;
            s.to_vec(&gx)
        },
    )
}

/// [`host::grad_values`] on `backend`.
///
/// ```
/// use ptxsmith::kernels::block_ell as be;
/// use ptxsmith::runtime::Backend;
///
/// // One 8 × 8 block (R = C = K = 1, B = 8): W = 0.5 · I.
/// let be::Example { dims, values, .. } = be::example()?;
/// let (gv, _ran) = be::grad_values(Backend::Sim, &dims, 1, &[1.0; 8], &[3.0; 8], &[0])?;
/// assert_eq!(gv, vec![3.0; 64]);
/// # let _ = values;
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`host::grad_values`] and [`grad_values_dev`].
pub fn grad_values(
    backend: Backend,
    dims: &Dims,
    n: usize,
    x: &[f32],
    gy: &[f32],
    col: &[i32],
) -> Result<(Vec<f32>, Ran)> {
    check_limits(dims, n)?;
    rows(dims, "x", x.len(), n, dims.in_features(), "N × C·B")?;
    rows(dims, "gy", gy.len(), n, dims.out_features(), "N × R·B")?;
    validate_col(dims, col)?;
    dispatch(
        backend,
        || host::grad_values(dims, n, x, gy, col),
        |s| {
            let topo = DeviceTopology::upload(s, dims, col)?;
            let (dx, dg) = (s.upload(x)?, s.upload(gy)?);
            let mut gv = s.context().alloc::<f32>(dims.values_len())?;
            grad_values_dev(s, &topo, n, &dx, &dg, &mut gv)?;
            s.to_vec(&gv)
        },
    )
}

/// [`host::grad_bias`] on `backend`.
///
/// ```
/// use ptxsmith::kernels::block_ell as be;
/// use ptxsmith::runtime::Backend;
///
/// // One 8 × 8 block (R = C = K = 1, B = 8): W = 0.5 · I.
/// let be::Example { dims, values, .. } = be::example()?;
/// let (gb, _ran) = be::grad_bias(Backend::Sim, &dims, 2, &[1.0; 16])?;
/// assert_eq!(gb, [2.0; 8]);
/// # let _ = values;
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`host::grad_bias`] and [`grad_bias_dev`].
pub fn grad_bias(backend: Backend, dims: &Dims, n: usize, gy: &[f32]) -> Result<(Vec<f32>, Ran)> {
    check_limits(dims, n)?;
    rows(dims, "gy", gy.len(), n, dims.out_features(), "N × R·B")?;
    dispatch(
        backend,
        || host::grad_bias(dims, n, gy),
        |s| {
            let dg = s.upload(gy)?;
            let mut gb = s.context().alloc::<f32>(dims.out_features())?;
            grad_bias_dev(s, dims, n, &dg, &mut gb)?;
            s.to_vec(&gb)
        },
    )
}
