//! Launch code of the score kernels, one request per operation
//! ([`ScoreShape`] for the score block, [`Route`] for routing, each with an
//! optional [`ScoreTuning`]) in three layers that share one launch
//! sequence (written against [`Stream`], so the GPU and the simulator run
//! the same copies and launches):
//!
//! * **device entry points** ([`score_block_dev`], [`route_top_s_dev`]):
//!   `x` and the dictionary `D` are device buffers or foreign views, so a
//!   dictionary uploaded once is routed against any number of batches; a
//!   route keeps every score on the device and returns a [`DeviceTopS`],
//!   whose [`download`](DeviceTopS::download) moves exactly `rows · s · 8`
//!   bytes;
//! * **raw-pointer twins** ([`score_block_raw`], [`route_top_s_raw`],
//!   `unsafe`): thin wrappers viewing another stack's memory as foreign
//!   views;
//! * **the slice API** ([`score_block`], [`route_top_s`] on a [`Backend`];
//!   [`score_block_on`], [`route_top_s_on`] on a stream): uploads `x` and
//!   `D`, runs, downloads the result.

use super::host::{Route, ScoreShape, TopS};
use super::ptx::{
    MERGE_THREADS, MergeArgs, RouteArgs, ScoreBlockArgs, ScoreTuning, generate_merge,
    generate_route, generate_score_block,
};
use crate::dsl::params::{DevPtr, KernelParams};
use crate::dsl::types::F32;
use crate::error::{Error, Result};
use crate::exec::{CUdeviceptr, LaunchConfig};
use crate::kernels::dispatch::dispatch;
use crate::kernels::{check, memo, raw};
use crate::runtime::backend::{Backend, Ran};
use crate::runtime::buffer::{AsDevice, AsDeviceMut, DeviceBuffer, DeviceSlice};
use crate::runtime::context::{Context, Stream};

/// The `rows × K` score block, row-major (`scores[r·K + a]`), on `backend`
/// (see the [module contract](super)): every score equals the host model's
/// under `to_bits()`. Reports which implementation ran (`Sim` simulates
/// [`default_sim_sm`](crate::kernels::dispatch::default_sim_sm)).
///
/// ```
/// use ptxsmith::kernels::score::{self, ScoreShape};
/// use ptxsmith::runtime::Backend;
///
/// let shape = ScoreShape { rows: 1, k: 2, p: 2 };
/// let (scores, _ran) = score::score_block(Backend::Sim, shape, &[1.0, 2.0], &[3.0, 4.0, -1.0, 0.5])?;
/// assert_eq!(scores, [11.0, 0.0]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] for a bad shape or input length (see
/// [`ScoreShape::validate`]); [`Error::NoDevice`] for [`Backend::Cuda`]
/// without a device; driver, JIT and launch errors.
pub fn score_block(
    backend: Backend,
    shape: ScoreShape,
    x: &[f32],
    d: &[f32],
) -> Result<(Vec<f32>, Ran)> {
    shape.validate()?;
    shape.check_inputs(x, d)?;
    let ScoreShape { rows, k, p } = shape;
    dispatch(
        backend,
        || super::host::score_block(x, d, rows, k, p),
        |st| score_block_on(st, shape, None, x, d),
    )
}

/// Each row's top `s` atoms, best first (see the [module contract](super)),
/// on `backend`. On a device, `x` and `D` are uploaded, no score leaves
/// the device, and exactly `rows · s · 8` bytes are downloaded. To route
/// many batches against one dictionary without re-uploading it, use
/// [`route_top_s_dev`]. `tuning` overrides
/// [`ScoreTuning::route_default_for`] (made
/// [`vectorized_for`](ScoreTuning::vectorized_for) `P`; the host model
/// ignores it). Reports which implementation ran.
///
/// ```
/// use ptxsmith::kernels::score::{self, Route, ScoreShape};
/// use ptxsmith::runtime::Backend;
///
/// let route = Route { shape: ScoreShape { rows: 1, k: 3, p: 1 }, s: 2 };
/// let (top, _ran) = score::route_top_s(Backend::Sim, route, None, &[2.0], &[1.0, -3.0, 0.5])?;
/// assert_eq!(top.atoms, [1, 0]); // |−6| > |2| > |1|
/// assert_eq!(top.scores, [-6.0, 2.0]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`score_block`], plus `s = 0` or `s > K`, and an inconsistent
/// `tuning` ([`TuningError`](super::ptx::TuningError) as
/// [`Error::InvalidArgument`]).
pub fn route_top_s(
    backend: Backend,
    route: Route,
    tuning: Option<ScoreTuning>,
    x: &[f32],
    d: &[f32],
) -> Result<(TopS, Ran)> {
    route.validate()?;
    route.shape.check_inputs(x, d)?;
    if let Some(t) = &tuning {
        t.check_route()?;
    }
    let (ScoreShape { rows, k, p }, s) = (route.shape, route.s);
    dispatch(
        backend,
        || super::host::route_top_s_fast(x, d, rows, k, p, s),
        |st| route_top_s_on(st, route, tuning, x, d),
    )
}

/// Largest grid the kernels are launched with (`%nctaid.x` limit).
const MAX_GRID: u64 = (1 << 31) - 1;
/// Device memory the K-split partial lists may take (both ping-pong
/// halves); more splits than fit are not used.
pub const SPLIT_STATE_BUDGET: u64 = 256 << 20;

fn too_big(what: &str, v: u64, limit: u64) -> Error {
    Error::invalid(format!(
        "score: {what} = {v} exceeds the kernels' limit {limit}"
    ))
}

/// Dimension limits of the kernels (32-bit loop counters that must not
/// wrap when a tile width is added).
fn check_dims(rows: usize, k: usize, p: usize) -> Result<(u32, u32, u32)> {
    let lim = u64::from(u32::MAX / 2);
    for (what, v) in [("rows", rows), ("K", k), ("P", p)] {
        if v as u64 > lim {
            return Err(too_big(what, v as u64, lim));
        }
    }
    Ok((rows as u32, k as u32, p as u32))
}

/// 16-byte staging loads need whole vectors in every row.
fn check_vec4(t: &ScoreTuning, p: usize) -> Result<()> {
    if t.vec4 && !p.is_multiple_of(4) {
        return Err(Error::invalid(format!(
            "score tuning: vec4 needs P % 4 = 0, got P = {p}"
        )));
    }
    Ok(())
}

/// Check the lengths of `x` (`rows × P`) and `D` (`K × P`).
fn check_lens(x: usize, d: usize, rows: usize, k: usize, p: usize) -> Result<()> {
    let want_x = rows
        .checked_mul(p)
        .ok_or_else(|| Error::invalid(format!("score: rows × P overflows ({rows} × {p})")))?;
    let want_d = k
        .checked_mul(p)
        .ok_or_else(|| Error::invalid(format!("score: K × P overflows ({k} × {p})")))?;
    check::len(
        "score",
        "x",
        x,
        want_x,
        format_args!("rows × P = {rows} × {p}"),
    )?;
    check::len("score", "D", d, want_d, format_args!("K × P = {k} × {p}"))
}

/// 16-byte staging loads: `x` and `D` must start on a 16-byte boundary.
fn check_vec4_addr(t: &ScoreTuning, what: &str, addr: u64) -> Result<()> {
    if t.vec4 && !addr.is_multiple_of(16) {
        return Err(Error::invalid(format!(
            "score: {what} at device address {addr:#x} is not 16-byte aligned, which the vec4 tuning's 16-byte loads need (slice at a multiple of 4 floats, or use a tuning without vec4)"
        )));
    }
    Ok(())
}

/// The score block kernel on device addresses (lengths already checked
/// against the views).
fn score_block_core(
    stream: &Stream,
    x: DevPtr<F32>,
    d: DevPtr<F32>,
    out: DevPtr<F32>,
    shape: ScoreShape,
    tuning: Option<ScoreTuning>,
) -> Result<()> {
    let ScoreShape { rows, k, p } = shape;
    let ctx = stream.context();
    let t = tuning.unwrap_or_else(|| ScoreTuning::default_for(ctx.sm()).vectorized_for(p));
    t.check_score()?;
    check_vec4(&t, p)?;
    check_vec4_addr(&t, "x", x.addr)?;
    check_vec4_addr(&t, "D", d.addr)?;
    let (rows32, k32, p32) = check_dims(rows, k, p)?;
    let grid = u64::from(rows32.div_ceil(t.bm)) * u64::from(k32.div_ceil(t.bn));
    if grid > MAX_GRID {
        return Err(too_big("CTA count", grid, MAX_GRID));
    }
    let module = memo!(generate_score_block, ctx.sm(), &t)?;
    let args = ScoreBlockArgs {
        x,
        d,
        out,
        rows: rows32,
        k: k32,
        p: p32,
    };
    stream.launch(
        module,
        LaunchConfig::linear(grid as u32, t.threads),
        &args.args(),
    )
}

/// The `rows × K` score block of device buffers or foreign views, queued
/// on `stream` (`out[r·K + a]`, nothing crosses the bus). `tuning`
/// overrides [`ScoreTuning::default_for`] (made
/// [`vectorized_for`](ScoreTuning::vectorized_for) `P`).
///
/// ```
/// use ptxsmith::kernels::score::{self, ScoreShape};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let shape = ScoreShape { rows: 2, k: 1, p: 2 };
/// let (x, d) = (st.upload(&[1.0f32, 2.0, 3.0, 4.0])?, st.upload(&[0.5f32, 0.25])?);
/// let mut out = ctx.alloc::<f32>(2)?;
/// score::score_block_dev(&st, shape, None, &x, &d, &mut out)?;
/// assert_eq!(st.to_vec(&out)?, [1.0, 2.5]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] for a bad shape, a length that does not
/// match it (`x`: rows × P, `D`: K × P, `out`: rows × K), a bad tuning, or
/// a vec4 tuning meeting a buffer that is not 16-byte aligned;
/// [`Error::WrongContext`]; JIT and launch errors. Nothing is queued on
/// error.
pub fn score_block_dev(
    stream: &Stream,
    shape: ScoreShape,
    tuning: Option<ScoreTuning>,
    x: &impl AsDevice<f32>,
    d: &impl AsDevice<f32>,
    out: &mut impl AsDeviceMut<f32>,
) -> Result<()> {
    shape.validate()?;
    let ScoreShape { rows, k, p } = shape;
    check_lens(x.as_device().len(), d.as_device().len(), rows, k, p)?;
    let want = rows * k;
    let got = out.as_device().len();
    check::len(
        "score",
        "out",
        got,
        want,
        format_args!("rows × K = {rows} × {k}"),
    )?;
    let (xp, dp, op) = (
        stream.arg("x", x)?,
        stream.arg("D", d)?,
        stream.arg_mut("out", out)?,
    );
    score_block_core(stream, xp, dp, op, shape, tuning)
}

/// [`score_block_dev`] on raw device addresses of another stack, queued on
/// `stream` (e.g. made with [`Stream::from_raw`]): a thin wrapper viewing
/// `x` (`rows × P` f32s), `d` (`K × P`) and `out` (`rows × K`) as
/// [`ForeignSlice`](crate::runtime::ForeignSlice)s. Synchronise `stream` before reading `out`.
///
/// ```
/// use ptxsmith::kernels::score::{self, ScoreShape};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let (x, d, out) = (st.upload(&[2.0f32])?, st.upload(&[3.0f32, -1.0])?, ctx.alloc::<f32>(2)?);
/// // SAFETY: 1, 2 and 2 live f32s of this context.
/// unsafe {
///     score::score_block_raw(&st, ScoreShape { rows: 1, k: 2, p: 1 }, None, x.device_ptr(), d.device_ptr(), out.device_ptr())?;
/// }
/// assert_eq!(out.to_vec()?, [6.0, -2.0]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Safety
/// * `x`, `d` and `out` are device memory of `stream`'s context with at
///   least those lengths, valid until the kernel has run;
/// * `out` overlaps neither input, and nothing else accesses it until the
///   kernel has run.
///
/// # Errors
/// As [`score_block_dev`], and the checks of
/// [`ForeignSlice::from_raw_parts`](crate::runtime::ForeignSlice::from_raw_parts).
pub unsafe fn score_block_raw(
    stream: &Stream,
    shape: ScoreShape,
    tuning: Option<ScoreTuning>,
    x: CUdeviceptr,
    d: CUdeviceptr,
    out: CUdeviceptr,
) -> Result<()> {
    shape.validate()?;
    let ScoreShape { rows, k, p } = shape;
    // SAFETY: the caller's contract covers each range (lengths from the
    // validated shape).
    let (x, d, mut out) = unsafe {
        (
            raw::view::<f32>(stream, x, rows * p)?,
            raw::view::<f32>(stream, d, k * p)?,
            raw::view_mut::<f32>(stream, out, rows * k)?,
        )
    };
    score_block_dev(stream, shape, tuning, &x, &d, &mut out)
}

/// Upload `x` and `D`, compute the score block on `stream`, download it.
///
/// ```
/// use ptxsmith::kernels::score::{self, ScoreShape};
/// use ptxsmith::runtime::Context;
///
/// let st = Context::sim(ptxsmith::Sm::Sm80).default_stream();
/// let scores = score::score_block_on(&st, ScoreShape { rows: 1, k: 2, p: 1 }, None, &[2.0], &[3.0, -1.0])?;
/// assert_eq!(scores, [6.0, -2.0]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`score_block_dev`].
pub fn score_block_on(
    stream: &Stream,
    shape: ScoreShape,
    tuning: Option<ScoreTuning>,
    x: &[f32],
    d: &[f32],
) -> Result<Vec<f32>> {
    shape.validate()?;
    shape.check_inputs(x, d)?;
    let (dx, dd) = (stream.upload(x)?, stream.upload(d)?);
    let mut out = stream.context().alloc::<f32>(shape.rows * shape.k)?;
    score_block_dev(stream, shape, tuning, &dx, &dd, &mut out)?;
    stream.to_vec(&out)
}

/// How a routed call splits the dictionary across CTAs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoutePlan {
    /// Row tiles (`ceil(rows / bm)`).
    pub row_tiles: u32,
    /// K-splits: each row tile's atoms are cut into this many ranges, one
    /// CTA each, and their partial lists merged by a second kernel.
    pub splits: u32,
    /// Atoms per split (a multiple of `bn`; the last split may be short).
    pub atoms_per_split: u32,
}

impl RoutePlan {
    /// Plan for `multiprocessors` SMs: enough splits for about two CTAs per
    /// SM, but no split shorter than `4·s` atoms, and the partial lists
    /// within [`SPLIT_STATE_BUDGET`] (so device memory stays bounded
    /// independently of K).
    pub fn new(rows: usize, k: usize, s: usize, t: &ScoreTuning, multiprocessors: u32) -> Self {
        let row_tiles = rows.div_ceil(t.bm as usize) as u64;
        let atom_tiles = k.div_ceil(t.bn as usize) as u64;
        let want = (2 * u64::from(multiprocessors.max(1))).div_ceil(row_tiles.max(1));
        let by_s = (k as u64 / (4 * s as u64).max(1)).max(1);
        let per_split = (rows as u64)
            .saturating_mul(s as u64)
            .saturating_mul(16)
            .max(1);
        let by_mem = (SPLIT_STATE_BUDGET / per_split).max(1);
        let splits = want.min(by_s).min(by_mem).min(atom_tiles).max(1);
        Self::with_splits(rows, k, t, splits as u32)
    }

    /// A plan with (at most) `splits` K-splits (tests use it to force the
    /// merge path on small problems).
    pub fn with_splits(rows: usize, k: usize, t: &ScoreTuning, splits: u32) -> Self {
        let row_tiles = rows.div_ceil(t.bm as usize) as u32;
        let atom_tiles = k.div_ceil(t.bn as usize) as u32;
        let per = atom_tiles.div_ceil(splits.clamp(1, atom_tiles.max(1)));
        let atoms_per_split = per * t.bn;
        let splits = (k as u32).div_ceil(atoms_per_split);
        Self {
            row_tiles,
            splits,
            atoms_per_split,
        }
    }
}

/// A routed top-s result resident on the device: for each row, `s`
/// `(atom u32, score f32 bits)` pairs, best first (the
/// [module contract](super)'s order).
#[derive(Debug)]
pub struct DeviceTopS {
    rows: usize,
    s: usize,
    /// The pairs are the first `2·rows·s` words; the rest is the kernels'
    /// ping-pong workspace.
    buf: DeviceBuffer<u32>,
}

impl DeviceTopS {
    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Entries per row.
    pub fn s(&self) -> usize {
        self.s
    }

    /// The `2·rows·s` words of pairs: `[atom, score bits]` for entry `j` of
    /// row `r` at `2·(r·s + j)`.
    pub fn pairs(&self) -> DeviceSlice<'_, u32> {
        self.buf
            .slice(..2 * self.rows * self.s)
            .expect("the buffer holds at least 2·rows·s words")
    }

    /// Download the pairs (exactly `rows · s · 8` bytes) on `stream`.
    pub fn download(&self, stream: &Stream) -> Result<TopS> {
        let pairs = stream.to_vec(&self.pairs())?;
        Ok(top_s_from_pairs(&pairs, self.rows, self.s))
    }
}

fn top_s_from_pairs(pairs: &[u32], rows: usize, s: usize) -> TopS {
    let mut top = TopS {
        rows,
        s,
        atoms: Vec::with_capacity(rows * s),
        scores: Vec::with_capacity(rows * s),
    };
    for pair in pairs.chunks_exact(2) {
        top.atoms.push(pair[0]);
        top.scores.push(f32::from_bits(pair[1]));
    }
    top
}

/// Each row's top `s` atoms of device buffers or foreign views `x` (`rows
/// × P`) and `D` (`K × P`), with `tuning` (or the context's default) and
/// the default plan for the context, queued on `stream`; the result stays
/// on the device. Route many batches against one resident `D` by calling
/// this once per batch.
///
/// ```
/// use ptxsmith::kernels::score::{self, Route, ScoreShape};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let dict = st.upload(&[1.0f32, -3.0, 0.5])?; // K = 3 atoms of P = 1, uploaded once
/// let route = Route { shape: ScoreShape { rows: 1, k: 3, p: 1 }, s: 1 };
/// for x in [[2.0f32], [-1.0]] {
///     let xb = st.upload(&x)?;
///     let top = score::route_top_s_dev(&st, route, None, &xb, &dict)?.download(&st)?;
///     assert_eq!(top.atoms, [1]);
/// }
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`route_top_s`], plus length mismatches between the buffers and the
/// shape, [`Error::WrongContext`], and unaligned buffers for a vec4 tuning.
pub fn route_top_s_dev(
    stream: &Stream,
    route: Route,
    tuning: Option<ScoreTuning>,
    x: &impl AsDevice<f32>,
    d: &impl AsDevice<f32>,
) -> Result<DeviceTopS> {
    let (t, plan) = default_route(stream.context(), route, tuning)?;
    route_top_s_planned_dev(stream, route, t, plan, x, d)
}

/// `tuning`, or the context's default route tuning made
/// [`vectorized_for`](ScoreTuning::vectorized_for) `P`, and the default
/// plan for the context's SM count.
///
/// # Errors
/// [`Error::InvalidArgument`] for a bad route (checked before planning,
/// which divides by the atoms per split).
fn default_route(
    ctx: &Context,
    route: Route,
    tuning: Option<ScoreTuning>,
) -> Result<(ScoreTuning, RoutePlan)> {
    route.validate()?;
    let ScoreShape { rows, k, p } = route.shape;
    let t = tuning.unwrap_or_else(|| ScoreTuning::route_default_for(ctx.sm()).vectorized_for(p));
    let plan = RoutePlan::new(rows, k, route.s, &t, ctx.multiprocessor_count());
    Ok((t, plan))
}

/// [`route_top_s_dev`] with an explicit tuning and plan.
///
/// ```
/// use ptxsmith::kernels::score::{self, Route, RoutePlan, ScoreShape, ScoreTuning};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let (k, p) = (300, 4);
/// let d: Vec<f32> = (0..k * p).map(|i| (i as f32 * 0.37).sin()).collect();
/// let (x, dict) = (st.upload(&[1.0f32, 0.5, -0.25, 2.0])?, st.upload(&d)?);
/// let route = Route { shape: ScoreShape { rows: 1, k, p }, s: 3 };
/// let t = ScoreTuning::route_default_for(ctx.sm());
/// // Force two K-splits and the merge kernel.
/// let plan = RoutePlan::with_splits(1, k, &t, 2);
/// let top = score::route_top_s_planned_dev(&st, route, t, plan, &x, &dict)?.download(&st)?;
/// assert_eq!(top, score::route_top_s_on(&st, route, None, &[1.0, 0.5, -0.25, 2.0], &d)?);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`route_top_s_dev`], plus a plan inconsistent with the shape and
/// tuning.
pub fn route_top_s_planned_dev(
    stream: &Stream,
    route: Route,
    tuning: ScoreTuning,
    plan: RoutePlan,
    x: &impl AsDevice<f32>,
    d: &impl AsDevice<f32>,
) -> Result<DeviceTopS> {
    route.validate()?;
    let ScoreShape { rows, k, p } = route.shape;
    check_lens(x.as_device().len(), d.as_device().len(), rows, k, p)?;
    let (xp, dp) = (stream.arg("x", x)?, stream.arg("D", d)?);
    route_core(stream, xp, dp, route, tuning, plan)
}

/// [`route_top_s_dev`] on raw device addresses of another stack, queued on
/// `stream` (e.g. made with [`Stream::from_raw`]): `x`, `d` as in
/// [`score_block_raw`], and the `rows × s` result pairs (`[atom u32,
/// score f32 bits]`, `rows · s · 8` bytes) copied into `out` on `stream`.
/// A thin wrapper over [`ForeignSlice`](crate::runtime::ForeignSlice)s; the route's workspace is
/// ptxsmith's.
///
/// ```
/// use ptxsmith::kernels::score::{self, Route, ScoreShape};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let (x, d) = (st.upload(&[1.0f32])?, st.upload(&[0.5f32, 2.0, -4.0])?);
/// let out = ctx.alloc::<u32>(2)?; // one (atom, score bits) pair
/// let route = Route { shape: ScoreShape { rows: 1, k: 3, p: 1 }, s: 1 };
/// // SAFETY: live memory of this context of the lengths the route gives.
/// unsafe { score::route_top_s_raw(&st, route, None, x.device_ptr(), d.device_ptr(), out.device_ptr())? };
/// assert_eq!(out.to_vec()?, [2, (-4.0f32).to_bits()]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Safety
/// * `x` (`rows × P` `f32`s) and `d` (`K × P`) are device memory of
///   `stream`'s context valid until the kernels have run;
/// * `out` is `rows · s · 8` bytes of device memory of that context,
///   overlapping neither input, not accessed by anything else until the
///   copy has run.
///
/// # Errors
/// As [`route_top_s_dev`], and the checks of
/// [`ForeignSlice::from_raw_parts`](crate::runtime::ForeignSlice::from_raw_parts).
pub unsafe fn route_top_s_raw(
    stream: &Stream,
    route: Route,
    tuning: Option<ScoreTuning>,
    x: CUdeviceptr,
    d: CUdeviceptr,
    out: CUdeviceptr,
) -> Result<()> {
    route.validate()?;
    let (ScoreShape { rows, k, p }, s) = (route.shape, route.s);
    // SAFETY: the caller's contract covers each range (lengths from the
    // validated route).
    let (x, d, mut out) = unsafe {
        (
            raw::view::<f32>(stream, x, rows * p)?,
            raw::view::<f32>(stream, d, k * p)?,
            raw::view_mut::<u32>(stream, out, 2 * rows * s)?,
        )
    };
    let top = route_top_s_dev(stream, route, tuning, &x, &d)?;
    stream.copy(&mut out, &top.pairs())
}

/// Each row's top `s` atoms on `stream`, from host slices: uploads `x` and
/// `D`, routes, downloads `rows · s · 8` bytes.
///
/// ```
/// use ptxsmith::kernels::score::{self, Route, ScoreShape};
/// use ptxsmith::runtime::Context;
///
/// let st = Context::sim(ptxsmith::Sm::Sm80).default_stream();
/// let route = Route { shape: ScoreShape { rows: 2, k: 3, p: 1 }, s: 1 };
/// let top = score::route_top_s_on(&st, route, None, &[1.0, -1.0], &[0.5, 2.0, -4.0])?;
/// assert_eq!(top.atoms, [2, 2]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`route_top_s`].
pub fn route_top_s_on(
    stream: &Stream,
    route: Route,
    tuning: Option<ScoreTuning>,
    x: &[f32],
    d: &[f32],
) -> Result<TopS> {
    let (t, plan) = default_route(stream.context(), route, tuning)?;
    route_top_s_planned_on(stream, route, t, plan, x, d)
}

/// [`route_top_s_on`] with an explicit tuning and plan.
///
/// ```
/// use ptxsmith::kernels::score::{self, Route, RoutePlan, ScoreShape, ScoreTuning};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let route = Route { shape: ScoreShape { rows: 1, k: 2, p: 1 }, s: 2 };
/// let t = ScoreTuning::route_default_for(ctx.sm());
/// let plan = RoutePlan::new(1, 2, 2, &t, ctx.multiprocessor_count());
/// let top = score::route_top_s_planned_on(&ctx.default_stream(), route, t, plan, &[1.0], &[-3.0, 2.0])?;
/// assert_eq!(top.atoms, [0, 1]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`route_top_s_planned_dev`].
pub fn route_top_s_planned_on(
    stream: &Stream,
    route: Route,
    tuning: ScoreTuning,
    plan: RoutePlan,
    x: &[f32],
    d: &[f32],
) -> Result<TopS> {
    route.validate()?;
    route.shape.check_inputs(x, d)?;
    let (dx, dd) = (stream.upload(x)?, stream.upload(d)?);
    route_top_s_planned_dev(stream, route, tuning, plan, &dx, &dd)?.download(stream)
}

/// The route (and merge) kernels on device addresses.
fn route_core(
    stream: &Stream,
    x: DevPtr<F32>,
    d: DevPtr<F32>,
    route: Route,
    t: ScoreTuning,
    plan: RoutePlan,
) -> Result<DeviceTopS> {
    let (ScoreShape { rows, k, p }, s) = (route.shape, route.s);
    t.check_route()?;
    check_vec4(&t, p)?;
    check_vec4_addr(&t, "x", x.addr)?;
    check_vec4_addr(&t, "D", d.addr)?;
    let (rows32, k32, p32) = check_dims(rows, k, p)?;
    let s32 = s as u32; // s ≤ K
    let ctx = stream.context();
    if rows == 0 {
        return Ok(DeviceTopS {
            rows,
            s,
            buf: ctx.alloc(0)?,
        });
    }
    let RoutePlan {
        row_tiles,
        splits,
        atoms_per_split,
    } = plan;
    if splits == 0
        || atoms_per_split == 0
        || atoms_per_split % t.bn != 0
        || u64::from(splits) * u64::from(atoms_per_split) < k as u64
        || u64::from(splits - 1) * u64::from(atoms_per_split) >= k as u64
        || row_tiles != rows32.div_ceil(t.bm)
    {
        return Err(Error::invalid(format!(
            "score: inconsistent route plan {plan:?} for rows={rows}, K={k}"
        )));
    }
    let grid = u64::from(row_tiles) * u64::from(splits);
    if grid > MAX_GRID {
        return Err(too_big("CTA count", grid, MAX_GRID));
    }
    if u64::from(splits) * rows as u64 > u64::from(u32::MAX) {
        return Err(too_big(
            "splits·rows",
            u64::from(splits) * rows as u64,
            u64::from(u32::MAX),
        ));
    }
    let entries = u64::from(splits) * rows as u64 * s as u64;
    let route_kernel = memo!(generate_route, ctx.sm(), &t)?;
    let mut state = ctx.alloc::<u32>((entries * 4) as usize)?;
    let args = RouteArgs {
        x,
        d,
        state: stream.arg_mut("route state", &mut state)?,
        half: entries * 2,
        rows: rows32,
        k: k32,
        p: p32,
        s: s32,
        row_tiles,
        atoms_per_split,
    };
    stream.launch(
        route_kernel,
        LaunchConfig::linear(grid as u32, t.threads),
        &args.args(),
    )?;
    if splits == 1 {
        return Ok(DeviceTopS {
            rows,
            s,
            buf: state,
        });
    }
    let merge = memo!(generate_merge, ctx.sm())?;
    let out_entries = rows as u64 * s as u64;
    let mut out = ctx.alloc::<u32>((out_entries * 4) as usize)?;
    let margs = MergeArgs {
        parts: stream.arg("route state", &state)?,
        out: stream.arg_mut("route result", &mut out)?,
        half: out_entries * 2,
        rows: rows32,
        k: k32,
        s: s32,
        splits,
        atoms_per_split,
    };
    let warps = MERGE_THREADS / 32;
    // Both buffers are ptxsmith's own: the merge is checked.
    stream.launch(
        merge,
        LaunchConfig::linear(rows32.div_ceil(warps), MERGE_THREADS),
        &margs.args(),
    )?;
    Ok(DeviceTopS { rows, s, buf: out })
}
