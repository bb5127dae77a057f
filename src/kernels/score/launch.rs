//! Launch code of the score kernels, in three layers that share one
//! launch sequence (written against [`Stream`], so the GPU and the
//! simulator run the same copies and launches):
//!
//! * **device entry points** ([`score_block_dev`], [`route_top_s_dev`]):
//!   `x` and the dictionary `D` are device buffers, so a dictionary
//!   uploaded once is routed against any number of batches; a route keeps
//!   every score on the device and returns a [`DeviceTopS`], whose
//!   [`download`](DeviceTopS::download) moves exactly `rows · s · 8` bytes;
//! * **raw-pointer entry points** ([`score_block_raw`],
//!   [`route_top_s_raw`], `unsafe`) on memory another stack allocated;
//! * **the slice API** ([`score_block`], [`route_top_s`]) on a
//!   [`Backend`]: uploads `x` and `D`, runs, downloads the result.

use super::host::{TopS, validate, validate_route};
use super::ptx::{
    MERGE_THREADS, MergeArgs, RouteArgs, ScoreBlockArgs, ScoreTuning, generate_merge,
    generate_route, generate_score_block,
};
use crate::dsl::params::{DevPtr, KernelParams};
use crate::dsl::types::F32;
use crate::error::{Error, Result};
use crate::kernels::dispatch::dispatch;
use crate::kernels::memo;
use crate::runtime::backend::{Backend, Ran};
use crate::runtime::buffer::{AsDevice, AsDeviceMut, DeviceBuffer, DeviceSlice};
use crate::runtime::context::{Context, Stream};
use crate::runtime::exec::{CUdeviceptr, LaunchConfig, PointerCheck, RawStream};

/// The `rows × K` score block, row-major (`scores[r·K + a]`), on `backend`
/// (see the [module contract](super)): every score equals the host model's
/// under `to_bits()`. Reports which implementation ran (`Sim` simulates
/// [`default_sim_sm`](crate::kernels::dispatch::default_sim_sm)).
///
/// # Errors
/// [`Error::InvalidArgument`] for a bad shape (see
/// [`validate`]); [`Error::NoDevice`] for
/// [`Backend::Cuda`] without a device; driver, JIT and launch errors.
pub fn score_block(
    backend: Backend,
    x: &[f32],
    d: &[f32],
    rows: usize,
    k: usize,
    p: usize,
) -> Result<(Vec<f32>, Ran)> {
    validate(x, d, rows, k, p)?;
    dispatch(
        backend,
        || super::host::score_block(x, d, rows, k, p),
        |st| score_block_on(st, x, d, rows, k, p, None),
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
/// # Errors
/// As [`score_block`], plus `s = 0` or `s > K`, and an inconsistent
/// `tuning` ([`TuningError`](super::ptx::TuningError) as
/// [`Error::InvalidArgument`]).
#[allow(clippy::too_many_arguments)]
pub fn route_top_s(
    backend: Backend,
    x: &[f32],
    d: &[f32],
    rows: usize,
    k: usize,
    p: usize,
    s: usize,
    tuning: Option<ScoreTuning>,
) -> Result<(TopS, Ran)> {
    validate_route(x, d, rows, k, p, s)?;
    if let Some(t) = &tuning {
        t.check_route()?;
    }
    dispatch(
        backend,
        || super::host::route_top_s_fast(x, d, rows, k, p, s),
        |st| route_top_s_on(st, x, d, rows, k, p, s, tuning),
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
    if x != want_x {
        return Err(Error::invalid(format!(
            "score: x has {x} elements, expected rows × P = {rows} × {p} = {want_x}"
        )));
    }
    if d != want_d {
        return Err(Error::invalid(format!(
            "score: D has {d} elements, expected K × P = {k} × {p} = {want_d}"
        )));
    }
    Ok(())
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

/// The score block kernel on device addresses (shapes already checked
/// against the buffers, if any).
#[allow(clippy::too_many_arguments)]
fn score_block_core(
    stream: &Stream,
    x: DevPtr<F32>,
    d: DevPtr<F32>,
    out: DevPtr<F32>,
    rows: usize,
    k: usize,
    p: usize,
    tuning: Option<ScoreTuning>,
    pointers: PointerCheck,
) -> Result<()> {
    let ctx = stream.context();
    let t = tuning.unwrap_or_else(|| ScoreTuning::default_for(ctx.sm()).vectorized_for(p));
    t.check_score()?;
    check_vec4(&t, p)?;
    check_vec4_addr(&t, "x", x.addr)?;
    check_vec4_addr(&t, "D", d.addr)?;
    let (rows32, k32, p32) = check_dims(rows, k, p)?;
    if rows == 0 || k == 0 {
        return Ok(());
    }
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
    stream.launch_with(
        module,
        LaunchConfig::linear(grid as u32, t.threads),
        &args.args(),
        pointers,
    )
}

/// The `rows × K` score block of device buffers, queued on `stream`
/// (`out[r·K + a]`, nothing crosses the bus).
///
/// # Errors
/// [`Error::InvalidArgument`] when a length does not match the shape
/// (`x`: rows × P, `D`: K × P, `out`: rows × K), for a bad tuning, or when
/// a vec4 tuning meets a buffer that is not 16-byte aligned;
/// [`Error::WrongContext`]; JIT and launch errors.
#[allow(clippy::too_many_arguments)]
pub fn score_block_dev(
    stream: &Stream,
    x: &impl AsDevice<f32>,
    d: &impl AsDevice<f32>,
    out: &mut impl AsDeviceMut<f32>,
    rows: usize,
    k: usize,
    p: usize,
    tuning: Option<ScoreTuning>,
) -> Result<()> {
    check_lens(x.as_device().len(), d.as_device().len(), rows, k, p)?;
    let want = rows
        .checked_mul(k)
        .ok_or_else(|| Error::invalid(format!("score: rows × K overflows ({rows} × {k})")))?;
    let got = out.as_device().len();
    if got != want {
        return Err(Error::invalid(format!(
            "score: out has {got} elements, expected rows × K = {rows} × {k} = {want}"
        )));
    }
    let (xp, dp, op) = (
        stream.arg("x", x)?,
        stream.arg("D", d)?,
        stream.arg_mut("out", out)?,
    );
    score_block_core(
        stream,
        xp,
        dp,
        op,
        rows,
        k,
        p,
        tuning,
        PointerCheck::LiveBuffers,
    )
}

/// [`score_block_dev`] on memory another stack allocated; synchronise
/// `stream` before reading `out`.
///
/// # Safety
/// * `x` (`rows × P` `f32`s), `d` (`K × P`) and `out` (`rows × K`) are
///   device memory valid in `ctx`'s context (the device's primary context
///   on a GPU) until the kernel has run, 4-byte aligned (16 with a vec4
///   tuning, which is checked);
/// * `out` overlaps neither input, and nothing else accesses it until the
///   kernel has run;
/// * `stream` is a live stream of that context (or [`RawStream::NULL`]).
#[allow(clippy::too_many_arguments)]
pub unsafe fn score_block_raw(
    ctx: &Context,
    stream: RawStream,
    x: CUdeviceptr,
    d: CUdeviceptr,
    out: CUdeviceptr,
    rows: usize,
    k: usize,
    p: usize,
    tuning: Option<ScoreTuning>,
) -> Result<()> {
    score_block_core(
        &ctx.borrowed_stream(stream),
        DevPtr::new(x),
        DevPtr::new(d),
        DevPtr::new(out),
        rows,
        k,
        p,
        tuning,
        PointerCheck::Caller,
    )
}

/// Upload `x` and `D`, compute the score block on `stream`, download it.
pub fn score_block_on(
    stream: &Stream,
    x: &[f32],
    d: &[f32],
    rows: usize,
    k: usize,
    p: usize,
    tuning: Option<ScoreTuning>,
) -> Result<Vec<f32>> {
    validate(x, d, rows, k, p)?;
    let (dx, dd) = (stream.upload(x)?, stream.upload(d)?);
    let mut out = stream.context().alloc::<f32>(rows * k)?;
    score_block_dev(stream, &dx, &dd, &mut out, rows, k, p, tuning)?;
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

/// Each row's top `s` atoms of device buffers `x` (`rows × P`) and `D`
/// (`K × P`), with the default tuning and plan for the context, queued on
/// `stream`; the result stays on the device. Route many batches against
/// one resident `D` by calling this once per batch.
///
/// # Errors
/// As [`route_top_s`], plus length mismatches between the buffers and the
/// shape, [`Error::WrongContext`], and unaligned buffers for a vec4 tuning.
#[allow(clippy::too_many_arguments)]
pub fn route_top_s_dev(
    stream: &Stream,
    x: &impl AsDevice<f32>,
    d: &impl AsDevice<f32>,
    rows: usize,
    k: usize,
    p: usize,
    s: usize,
    tuning: Option<ScoreTuning>,
) -> Result<DeviceTopS> {
    let (t, plan) = default_route(stream.context(), rows, k, p, s, tuning)?;
    route_top_s_planned_dev(stream, x, d, rows, k, p, s, t, plan)
}

/// `tuning`, or the context's default route tuning made
/// [`vectorized_for`](ScoreTuning::vectorized_for) `P`, and the default
/// plan for the context's SM count.
///
/// # Errors
/// [`Error::InvalidArgument`] for `s` outside `1..=K` (checked before
/// planning, which divides by the atoms per split).
fn default_route(
    ctx: &Context,
    rows: usize,
    k: usize,
    p: usize,
    s: usize,
    tuning: Option<ScoreTuning>,
) -> Result<(ScoreTuning, RoutePlan)> {
    check_s(s, k)?;
    let t = tuning.unwrap_or_else(|| ScoreTuning::route_default_for(ctx.sm()).vectorized_for(p));
    let plan = RoutePlan::new(rows, k, s, &t, ctx.multiprocessor_count());
    Ok((t, plan))
}

/// `1 ≤ s ≤ K`.
fn check_s(s: usize, k: usize) -> Result<()> {
    if s == 0 || s > k {
        return Err(Error::invalid(format!(
            "score route: s = {s} must be in 1..=K (K = {k})"
        )));
    }
    Ok(())
}

/// [`route_top_s_dev`] with an explicit tuning and plan.
#[allow(clippy::too_many_arguments)]
pub fn route_top_s_planned_dev(
    stream: &Stream,
    x: &impl AsDevice<f32>,
    d: &impl AsDevice<f32>,
    rows: usize,
    k: usize,
    p: usize,
    s: usize,
    t: ScoreTuning,
    plan: RoutePlan,
) -> Result<DeviceTopS> {
    check_lens(x.as_device().len(), d.as_device().len(), rows, k, p)?;
    let (xp, dp) = (stream.arg("x", x)?, stream.arg("D", d)?);
    route_core(
        stream,
        xp,
        dp,
        rows,
        k,
        p,
        s,
        t,
        plan,
        PointerCheck::LiveBuffers,
    )
}

/// [`route_top_s_dev`] on memory another stack allocated: `x`, `d` as in
/// [`score_block_raw`], and the `rows × s` result pairs (`[atom u32,
/// score f32 bits]`, `rows · s · 8` bytes) copied into `out` on `stream`.
/// The route's workspace is allocated by ptxsmith in `ctx`.
///
/// # Safety
/// * `x` (`rows × P` `f32`s) and `d` (`K × P`) are device memory valid in
///   `ctx`'s context until the kernels have run, 4-byte aligned (16 with
///   a vec4 tuning, which is checked);
/// * `out` is `rows · s · 8` bytes of device memory valid in that context,
///   overlapping neither input, not accessed by anything else until the
///   copy has run;
/// * `stream` is a live stream of that context (or [`RawStream::NULL`]).
#[allow(clippy::too_many_arguments)]
pub unsafe fn route_top_s_raw(
    ctx: &Context,
    stream: RawStream,
    x: CUdeviceptr,
    d: CUdeviceptr,
    rows: usize,
    k: usize,
    p: usize,
    s: usize,
    tuning: Option<ScoreTuning>,
    out: CUdeviceptr,
) -> Result<()> {
    let st = ctx.borrowed_stream(stream);
    let (t, plan) = default_route(ctx, rows, k, p, s, tuning)?;
    let top = route_core(
        &st,
        DevPtr::new(x),
        DevPtr::new(d),
        rows,
        k,
        p,
        s,
        t,
        plan,
        PointerCheck::Caller,
    )?;
    st.copy_to_foreign(out, &top.pairs())
}

/// Each row's top `s` atoms on `stream`, from host slices: uploads `x` and
/// `D`, routes, downloads `rows · s · 8` bytes.
#[allow(clippy::too_many_arguments)]
pub fn route_top_s_on(
    stream: &Stream,
    x: &[f32],
    d: &[f32],
    rows: usize,
    k: usize,
    p: usize,
    s: usize,
    tuning: Option<ScoreTuning>,
) -> Result<TopS> {
    validate_route(x, d, rows, k, p, s)?;
    let (t, plan) = default_route(stream.context(), rows, k, p, s, tuning)?;
    route_top_s_planned(stream, x, d, rows, k, p, s, t, plan)
}

/// [`route_top_s_on`] with an explicit tuning and plan.
#[allow(clippy::too_many_arguments)]
pub fn route_top_s_planned(
    stream: &Stream,
    x: &[f32],
    d: &[f32],
    rows: usize,
    k: usize,
    p: usize,
    s: usize,
    t: ScoreTuning,
    plan: RoutePlan,
) -> Result<TopS> {
    validate_route(x, d, rows, k, p, s)?;
    let (dx, dd) = (stream.upload(x)?, stream.upload(d)?);
    route_top_s_planned_dev(stream, &dx, &dd, rows, k, p, s, t, plan)?.download(stream)
}

/// The route (and merge) kernels on device addresses.
#[allow(clippy::too_many_arguments)]
fn route_core(
    stream: &Stream,
    x: DevPtr<F32>,
    d: DevPtr<F32>,
    rows: usize,
    k: usize,
    p: usize,
    s: usize,
    t: ScoreTuning,
    plan: RoutePlan,
    pointers: PointerCheck,
) -> Result<DeviceTopS> {
    check_s(s, k)?;
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
    let route = memo!(generate_route, ctx.sm(), &t)?;
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
    stream.launch_with(
        route,
        LaunchConfig::linear(grid as u32, t.threads),
        &args.args(),
        pointers,
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
