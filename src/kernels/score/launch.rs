//! Launch code of the score kernels, written once against [`Executor`] so
//! the GPU and the simulator run the same sequence of allocations,
//! uploads, launches and downloads.
//!
//! The routed path uploads `x` and `D` once, keeps every score on the
//! device, and downloads only the final `rows × s` `(atom u32, score f32)`
//! pairs: `rows · s · 8` bytes.

use super::host::{TopS, validate, validate_route};
use super::ptx::{
    MERGE_THREADS, MergeArgs, RouteArgs, ScoreBlockArgs, ScoreTuning, generate_merge,
    generate_route, generate_score_block,
};
use crate::dsl::params::KernelParams;
use crate::error::{Error, Result};
use crate::kernels::dispatch::dispatch;
use crate::runtime::backend::{Backend, Ran};
use crate::runtime::exec::{BufferId, Executor, LaunchConfig, download_vec, upload_new};

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
        |ex| score_block_on(ex, x, d, rows, k, p, None),
    )
}

/// Each row's top `s` atoms, best first (see the [module contract](super)),
/// on `backend`. On a device, `x` and `D` are uploaded once, no score
/// leaves the device, and exactly `rows · s · 8` bytes are downloaded.
/// `tuning` overrides [`ScoreTuning::route_default_for`] (made
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
        |ex| route_top_s_on(ex, x, d, rows, k, p, s, tuning),
    )
}

/// Largest grid the kernels are launched with (`%nctaid.x` limit).
const MAX_GRID: u64 = (1 << 31) - 1;
/// Device memory the K-split partial lists may take (both ping-pong
/// halves); more splits than fit are not used.
pub const SPLIT_STATE_BUDGET: u64 = 256 << 20;

fn too_big(what: &str, v: u64, limit: u64) -> Error {
    Error::InvalidArgument(format!(
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
        return Err(Error::InvalidArgument(format!(
            "score tuning: vec4 needs P % 4 = 0, got P = {p}"
        )));
    }
    Ok(())
}

/// Free `bufs`, keeping the first error of `result` or of the frees.
fn finish<T>(ex: &mut dyn Executor, bufs: &[BufferId], result: Result<T>) -> Result<T> {
    let mut freed = Ok(());
    for b in bufs {
        if let Err(e) = ex.free(*b)
            && freed.is_ok()
        {
            freed = Err(e);
        }
    }
    let v = result?;
    freed?;
    Ok(v)
}

/// The `rows × K` score block (row-major `scores[r·K + a]`) on `ex`.
pub fn score_block_on(
    ex: &mut dyn Executor,
    x: &[f32],
    d: &[f32],
    rows: usize,
    k: usize,
    p: usize,
    tuning: Option<ScoreTuning>,
) -> Result<Vec<f32>> {
    validate(x, d, rows, k, p)?;
    let t = tuning.unwrap_or_else(|| ScoreTuning::default_for(ex.sm()).vectorized_for(p));
    t.check_score()?;
    check_vec4(&t, p)?;
    let (rows32, k32, p32) = check_dims(rows, k, p)?;
    let grid = u64::from(rows32.div_ceil(t.bm)) * u64::from(k32.div_ceil(t.bn));
    if grid > MAX_GRID {
        return Err(too_big("CTA count", grid, MAX_GRID));
    }
    let module = generate_score_block(ex.sm(), &t)?;
    let bx = upload_new(ex, x)?;
    let bd = match upload_new(ex, d) {
        Ok(b) => b,
        Err(e) => return finish(ex, &[bx], Err(e)),
    };
    let bo = match ex.alloc(rows * k * 4) {
        Ok(b) => b,
        Err(e) => return finish(ex, &[bx, bd], Err(e)),
    };
    let args = ScoreBlockArgs {
        x: bx.into(),
        d: bd.into(),
        out: bo.into(),
        rows: rows32,
        k: k32,
        p: p32,
    };
    let result = ex
        .launch(
            &module,
            LaunchConfig::linear(grid as u32, t.threads),
            &args.args(),
        )
        .and_then(|()| download_vec::<f32>(ex, bo, rows * k));
    finish(ex, &[bx, bd, bo], result)
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

/// Each row's top `s` atoms on `ex`, with the default plan for its SM count.
#[allow(clippy::too_many_arguments)]
pub fn route_top_s_on(
    ex: &mut dyn Executor,
    x: &[f32],
    d: &[f32],
    rows: usize,
    k: usize,
    p: usize,
    s: usize,
    tuning: Option<ScoreTuning>,
) -> Result<TopS> {
    let t = tuning.unwrap_or_else(|| ScoreTuning::route_default_for(ex.sm()).vectorized_for(p));
    let plan = RoutePlan::new(rows, k, s, &t, ex.multiprocessor_count());
    route_top_s_planned(ex, x, d, rows, k, p, s, t, plan)
}

/// [`route_top_s_on`] with an explicit tuning and plan.
#[allow(clippy::too_many_arguments)]
pub fn route_top_s_planned(
    ex: &mut dyn Executor,
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
    t.check_route()?;
    check_vec4(&t, p)?;
    let (rows32, k32, p32) = check_dims(rows, k, p)?;
    let s32 = s as u32; // s ≤ K
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
        return Err(Error::InvalidArgument(format!(
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
    let route = generate_route(ex.sm(), &t)?;
    let merge = if splits > 1 {
        Some(generate_merge(ex.sm())?)
    } else {
        None
    };

    let bx = upload_new(ex, x)?;
    let bd = match upload_new(ex, d) {
        Ok(b) => b,
        Err(e) => return finish(ex, &[bx], Err(e)),
    };
    let state = match ex.alloc((entries * 16) as usize) {
        Ok(b) => b,
        Err(e) => return finish(ex, &[bx, bd], Err(e)),
    };
    let mut bufs = vec![bx, bd, state];
    let args = RouteArgs {
        x: bx.into(),
        d: bd.into(),
        state: state.into(),
        half: entries * 2,
        rows: rows32,
        k: k32,
        p: p32,
        s: s32,
        row_tiles,
        atoms_per_split,
    };
    let mut result = ex.launch(
        &route,
        LaunchConfig::linear(grid as u32, t.threads),
        &args.args(),
    );
    let mut final_buf = state;
    if let (Ok(()), Some(merge)) = (&result, &merge) {
        let out_entries = rows as u64 * s as u64;
        result = ex.alloc((out_entries * 16) as usize).and_then(|out| {
            bufs.push(out);
            final_buf = out;
            let margs = MergeArgs {
                parts: state.into(),
                out: out.into(),
                half: out_entries * 2,
                rows: rows32,
                k: k32,
                s: s32,
                splits,
                atoms_per_split,
            };
            let warps = MERGE_THREADS / 32;
            ex.launch(
                merge,
                LaunchConfig::linear(rows32.div_ceil(warps), MERGE_THREADS),
                &margs.args(),
            )
        });
    }
    let result = result.and_then(|()| download_vec::<u32>(ex, final_buf, rows * s * 2));
    let pairs = finish(ex, &bufs, result)?;
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
    Ok(top)
}
