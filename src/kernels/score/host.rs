//! Bit-exact host model of the score GEMM with top-s routing.
//!
//! The readable functions ([`score_block`], [`route_top_s`],
//! [`select_top_s`]) are the specification: plain loops and a full sort.
//! [`TopSState`] is the bounded online selector the tiled paths use, and
//! [`route_top_s_fast`] is the vectorised, atom-tiled CPU path; both are
//! tested against the readable model bit for bit. The contract itself is
//! written out in the [module documentation](super).

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::ops::Range;

use crate::error::{ArgError, Result};
use crate::invalid_arg;

// ---------------------------------------------------------------------------
// Shape and validation
// ---------------------------------------------------------------------------

/// A validated problem shape: `rows × P` inputs, `K × P` dictionary.
///
/// Holding one means: every dimension is at least 1, `K ≤ u32::MAX`, and
/// `rows·P`, `K·P` and `rows·K` all fit in `usize`.
///
/// Built with named fields (`ScoreShape { rows, k, p }`, checked by every
/// entry point with [`ScoreShape::validate`]) or with [`ScoreShape::new`],
/// which checks at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ScoreShape {
    /// Input rows (`x` is `rows × P`).
    pub rows: usize,
    /// Atoms in the dictionary (`D` is `K × P`).
    pub k: usize,
    /// Features per row and atom.
    pub p: usize,
}

/// A routing request: each of `shape.rows` rows keeps its `s` strongest
/// atoms of the `shape.k` (`1 ≤ s ≤ K`).
///
/// ```
/// use ptxsmith::kernels::score::{Route, ScoreShape};
/// let route = Route { shape: ScoreShape { rows: 64, k: 4096, p: 32 }, s: 4 };
/// route.validate()?;
/// assert!(Route { s: 0, ..route }.validate().is_err());
/// # Ok::<(), ptxsmith::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Route {
    /// The problem's sizes.
    pub shape: ScoreShape,
    /// Atoms kept per row.
    pub s: usize,
}

impl Route {
    /// The shape's rules ([`ScoreShape::validate`]) and `1 ≤ s ≤ K`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) naming
    /// the values.
    pub fn validate(&self) -> Result<()> {
        self.shape.validate()?;
        self.shape.check_s(self.s)
    }
}

impl ScoreShape {
    /// The rules of [`ScoreShape::new`] for a shape built with named
    /// fields.
    ///
    /// # Errors
    /// As [`ScoreShape::new`].
    pub fn validate(&self) -> Result<()> {
        Self::new(self.rows, self.k, self.p).map(drop)
    }

    /// Checks the dimensions alone (no data). Errors, in this order:
    /// an empty dimension, `K > u32::MAX`, and any of `rows·P`, `K·P`,
    /// `rows·K` overflowing `usize`.
    pub fn new(rows: usize, k: usize, p: usize) -> Result<Self> {
        if rows == 0 || k == 0 || p == 0 {
            return Err(invalid_arg!(
                "score: empty problem (rows={rows}, K={k}, P={p}); every dimension must be at \
                 least 1"
            ));
        }
        check_atom_count(k)?;
        for (what, a, b) in [("rows·P", rows, p), ("K·P", k, p), ("rows·K", rows, k)] {
            if a.checked_mul(b).is_none() {
                return Err(invalid_arg!("score: {what} = {a}·{b} overflows usize"));
            }
        }
        Ok(Self { rows, k, p })
    }

    /// Checks that `x` holds `rows·P` and `d` holds `K·P` elements. When a
    /// length is a whole number of rows (atoms), the message also names the
    /// `P` that length implies next to the `P` given.
    pub fn check_inputs(&self, x: &[f32], d: &[f32]) -> Result<()> {
        let Self { rows, k, p } = *self;
        let want_x = rows * p;
        if x.len() != want_x {
            let implied = implied_p(x.len(), rows, p, "x", "rows");
            return Err(ArgError::new(
                "x",
                format!("rows·P = {rows}·{p} = {want_x} elements"),
                format!("{} elements", x.len()),
            )
            .with_message(format!(
                "score: x has {} elements, expected rows·P = {rows}·{p} = {want_x}{implied}",
                x.len()
            ))
            .into());
        }
        let want_d = k * p;
        if d.len() != want_d {
            let implied = implied_p(d.len(), k, p, "D", "atoms");
            return Err(ArgError::new(
                "D",
                format!("K·P = {k}·{p} = {want_d} elements"),
                format!("{} elements", d.len()),
            )
            .with_message(format!(
                "score: D has {} elements, expected K·P = {k}·{p} = {want_d}{implied}",
                d.len()
            ))
            .into());
        }
        Ok(())
    }

    /// Checks `1 ≤ s ≤ K`. `s` is never clamped.
    pub fn check_s(&self, s: usize) -> Result<()> {
        check_s(s, self.k)
    }
}

/// Atom indices are `u32`: at most `u32::MAX` atoms.
fn check_atom_count(k: usize) -> Result<()> {
    if u32::try_from(k).is_err() {
        return Err(invalid_arg!(
            "score: K={k} atoms exceeds u32::MAX={} (atom indices are u32)",
            u32::MAX
        ));
    }
    Ok(())
}

fn check_s(s: usize, k: usize) -> Result<()> {
    if s == 0 || s > k {
        return Err(
            ArgError::new("s", format!("1..=K = 1..={k}"), s.to_string())
                .with_message(format!("score: s={s} must be in 1..=K (K={k})"))
                .into(),
        );
    }
    Ok(())
}

/// The part of a length error that names the `P` a length implies, when it
/// is a whole number of `count` rows of `unit`.
fn implied_p(len: usize, count: usize, p: usize, name: &str, unit: &str) -> String {
    if len > 0 && len.is_multiple_of(count) {
        format!(
            " ({name} holds {count} {unit} of P={} each, but P={p} was given)",
            len / count
        )
    } else {
        String::new()
    }
}

/// Validates a score problem: the dimensions ([`ScoreShape::new`]) and the
/// input lengths ([`ScoreShape::check_inputs`]).
pub fn validate(x: &[f32], d: &[f32], rows: usize, k: usize, p: usize) -> Result<ScoreShape> {
    let shape = ScoreShape::new(rows, k, p)?;
    shape.check_inputs(x, d)?;
    Ok(shape)
}

/// [`validate`] plus the check `1 ≤ s ≤ K`.
pub fn validate_route(
    x: &[f32],
    d: &[f32],
    rows: usize,
    k: usize,
    p: usize,
    s: usize,
) -> Result<ScoreShape> {
    let shape = validate(x, d, rows, k, p)?;
    shape.check_s(s)?;
    Ok(shape)
}

// ---------------------------------------------------------------------------
// Ranking
// ---------------------------------------------------------------------------

/// The routing order on `(atom, score)` pairs: `Less` means `a` ranks
/// before `b`.
///
/// Key `(is_nan ascending, |score| descending, atom ascending)`: every
/// number (±Inf first, ±0 last) ranks above every NaN; equal magnitudes,
/// `−0.0` against `+0.0` included, go to the smaller atom; NaNs among
/// themselves go by atom. For distinct atoms this is a strict total order.
pub fn rank_cmp(a: (u32, f32), b: (u32, f32)) -> Ordering {
    let (a_atom, a_score) = a;
    let (b_atom, b_score) = b;
    match (a_score.is_nan(), b_score.is_nan()) {
        (false, true) => Ordering::Less,
        (true, false) => Ordering::Greater,
        (true, true) => a_atom.cmp(&b_atom),
        (false, false) => {
            let by_magnitude = b_score.abs().partial_cmp(&a_score.abs());
            by_magnitude
                .expect("neither magnitude is NaN")
                .then(a_atom.cmp(&b_atom))
        }
    }
}

/// The same order as [`rank_cmp`] packed into one integer: a larger key
/// ranks first, and distinct atoms never share a key.
///
/// High 32 bits: 0 for NaN, else `|score|.to_bits() + 1` (the bits of a
/// non-negative float grow with its value, and `−0.0`/`+0.0` both map to
/// 1). Low 32 bits: `!atom`, so the smaller atom has the larger key.
#[inline]
pub fn rank_key(atom: u32, score: f32) -> u64 {
    let magnitude = if score.is_nan() {
        0
    } else {
        (score.to_bits() & 0x7fff_ffff) + 1
    };
    (u64::from(magnitude) << 32) | u64::from(!atom)
}

// ---------------------------------------------------------------------------
// Result type
// ---------------------------------------------------------------------------

/// Per-row top-s lists, flat and row-major: row `r` is
/// `atoms[r*s..(r+1)*s]` / `scores[r*s..(r+1)*s]`, best first. This is
/// exactly the `rows × s × (4 + 4)` bytes a device route downloads.
///
/// Equality is bitwise on the scores (`−0.0 != +0.0`, a NaN equals a NaN
/// with the same bits), because that is what bit-exact means here.
#[derive(Debug, Clone)]
pub struct TopS {
    /// Rows routed.
    pub rows: usize,
    /// Entries per row.
    pub s: usize,
    /// `[rows, s]` atom indices, best first.
    pub atoms: Vec<u32>,
    /// `[rows, s]` their scores.
    pub scores: Vec<f32>,
}

impl TopS {
    /// Row `r`'s atoms and scores, best first.
    ///
    /// # Panics
    /// If `r >= self.rows`.
    pub fn row(&self, r: usize) -> (&[u32], &[f32]) {
        let span = r * self.s..(r + 1) * self.s;
        (&self.atoms[span.clone()], &self.scores[span])
    }

    /// Row `r` as `(atom, score)` pairs, best first.
    pub fn row_pairs(&self, r: usize) -> Vec<(u32, f32)> {
        let (atoms, scores) = self.row(r);
        atoms.iter().copied().zip(scores.iter().copied()).collect()
    }

    fn from_rows(rows: usize, s: usize, lists: impl IntoIterator<Item = Vec<(u32, f32)>>) -> Self {
        let mut out = TopS {
            rows,
            s,
            atoms: Vec::with_capacity(rows * s),
            scores: Vec::with_capacity(rows * s),
        };
        for list in lists {
            debug_assert_eq!(list.len(), s);
            for (atom, score) in list {
                out.atoms.push(atom);
                out.scores.push(score);
            }
        }
        debug_assert_eq!(out.atoms.len(), rows * s);
        out
    }
}

/// Equal atoms and equal score bits, except that any NaN equals any NaN:
/// NaN payloads are not part of the contract (PTX returns an unspecified
/// NaN, and even host code may propagate either operand's payload).
impl PartialEq for TopS {
    fn eq(&self, other: &Self) -> bool {
        self.rows == other.rows
            && self.s == other.s
            && self.atoms == other.atoms
            && self.scores.len() == other.scores.len()
            && self
                .scores
                .iter()
                .zip(&other.scores)
                .all(|(a, b)| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()))
    }
}

impl Eq for TopS {}

// ---------------------------------------------------------------------------
// Readable model (the specification)
// ---------------------------------------------------------------------------

/// One score: `acc += x[c] * d[c]` for c ascending from `+0.0`, each
/// product and each sum rounded separately.
fn dot(x: &[f32], d: &[f32]) -> f32 {
    let mut acc = 0.0f32;
    for c in 0..x.len() {
        acc += x[c] * d[c];
    }
    acc
}

/// The full `rows × K` score block, row-major: `scores[r*K + a]`.
pub fn score_block(x: &[f32], d: &[f32], rows: usize, k: usize, p: usize) -> Result<Vec<f32>> {
    block_with(x, d, rows, k, p, dot)
}

/// The score block with `dot` as the per-score evaluation.
fn block_with(
    x: &[f32],
    d: &[f32],
    rows: usize,
    k: usize,
    p: usize,
    dot: fn(&[f32], &[f32]) -> f32,
) -> Result<Vec<f32>> {
    validate(x, d, rows, k, p)?;
    let mut scores = Vec::with_capacity(rows * k);
    for r in 0..rows {
        let xr = &x[r * p..(r + 1) * p];
        for a in 0..k {
            scores.push(dot(xr, &d[a * p..(a + 1) * p]));
        }
    }
    Ok(scores)
}

/// The top `s` of one row of scores (atom `a` has score `scores[a]`),
/// best first: a full sort by [`rank_cmp`], then the first `s`.
///
/// Errors if `s` is not in `1..=scores.len()` or the row has more than
/// `u32::MAX` atoms.
pub fn select_top_s(scores: &[f32], s: usize) -> Result<Vec<(u32, f32)>> {
    check_atom_count(scores.len())?;
    check_s(s, scores.len())?;
    let mut ranked: Vec<(u32, f32)> = scores
        .iter()
        .enumerate()
        .map(|(a, &score)| (a as u32, score))
        .collect();
    ranked.sort_by(|&a, &b| rank_cmp(a, b));
    ranked.truncate(s);
    Ok(ranked)
}

/// Each row's top `s` atoms by the routing order, computed the readable
/// way: all `K` scores of a row with the plain loop, then
/// [`select_top_s`]. Memory: `K` scores at a time.
pub fn route_top_s(
    x: &[f32],
    d: &[f32],
    rows: usize,
    k: usize,
    p: usize,
    s: usize,
) -> Result<TopS> {
    route_with(x, d, rows, k, p, s, dot)
}

/// The readable route with `dot` as the per-score evaluation.
fn route_with(
    x: &[f32],
    d: &[f32],
    rows: usize,
    k: usize,
    p: usize,
    s: usize,
    dot: fn(&[f32], &[f32]) -> f32,
) -> Result<TopS> {
    validate_route(x, d, rows, k, p, s)?;
    let mut lists = Vec::with_capacity(rows);
    for r in 0..rows {
        let xr = &x[r * p..(r + 1) * p];
        let row_scores: Vec<f32> = (0..k).map(|a| dot(xr, &d[a * p..(a + 1) * p])).collect();
        lists.push(select_top_s(&row_scores, s)?);
    }
    Ok(TopS::from_rows(rows, s, lists))
}

// ---------------------------------------------------------------------------
// Online selector
// ---------------------------------------------------------------------------

/// Bounded online top-s of one row: keeps at most `s` candidates, so atom
/// tiles can be scored and folded in any order and any split, and the
/// result ([`TopSState::finish`]) is the same as [`select_top_s`] over all
/// offered atoms.
///
/// Each atom must be offered at most once per row (across all states that
/// are later merged); the state does not deduplicate.
#[derive(Debug, Clone)]
pub struct TopSState {
    s: usize,
    /// Min-heap on [`rank_key`]: the top is the worst candidate kept.
    /// Scores are stored as bits so NaN payloads survive unchanged.
    kept: BinaryHeap<Reverse<(u64, u32)>>,
}

impl TopSState {
    /// An empty state keeping up to `s` candidates (`s = 0` keeps none).
    pub fn new(s: usize) -> Self {
        Self {
            s,
            kept: BinaryHeap::with_capacity(s),
        }
    }

    /// The `s` this state was made with.
    pub fn capacity(&self) -> usize {
        self.s
    }

    /// Number of candidates kept, `≤ s`.
    pub fn len(&self) -> usize {
        self.kept.len()
    }

    /// Whether nothing is kept yet.
    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }

    /// Offers atom `atom` with score `score`.
    #[inline]
    pub fn offer(&mut self, atom: u32, score: f32) {
        let entry = Reverse((rank_key(atom, score), score.to_bits()));
        if self.kept.len() < self.s {
            self.kept.push(entry);
        } else if let Some(mut worst) = self.kept.peek_mut()
            && entry < *worst
        {
            *worst = entry;
        }
    }

    /// Folds in the candidates of `other`, which must have the same `s`
    /// and must have seen atoms disjoint from this state's.
    pub fn merge(&mut self, other: &TopSState) -> Result<()> {
        if other.s != self.s {
            return Err(invalid_arg!(
                "TopSState::merge: s differs (this state s={}, other s={})",
                self.s,
                other.s
            ));
        }
        for &Reverse((key, bits)) in other.kept.iter() {
            self.offer(!(key as u32), f32::from_bits(bits));
        }
        Ok(())
    }

    /// The kept candidates, best first (`min(s, atoms offered)` of them).
    pub fn finish(self) -> Vec<(u32, f32)> {
        // Ascending `Reverse` order is descending key: best first.
        self.kept
            .into_sorted_vec()
            .into_iter()
            .map(|Reverse((key, bits))| (!(key as u32), f32::from_bits(bits)))
            .collect()
    }
}

// ---------------------------------------------------------------------------
// Fast CPU path
// ---------------------------------------------------------------------------

/// Atoms scored together by the fast path's inner kernel: one accumulator
/// per atom, all sharing each `x[r][c]`.
pub const LANES: usize = 16;

/// Knobs of [`route_top_s_fast_with`]. They change speed, never results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastConfig {
    /// Worker threads (at least 1); fewer run when there are fewer atom
    /// groups and rows than threads.
    pub threads: usize,
    /// Atoms per packed dictionary tile (at least 1; capped at `K`, then
    /// rounded up to a multiple of [`LANES`]). Working memory is one `atom_tile × P` panel
    /// per thread plus `rows × s` kept candidates per thread; it does not
    /// grow with `K`.
    pub atom_tile: usize,
}

impl Default for FastConfig {
    fn default() -> Self {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self {
            threads,
            atom_tile: 256,
        }
    }
}

/// Below this many multiply-adds [`route_top_s_fast`] uses one thread.
const PARALLEL_MIN_MACS: usize = 1 << 18;

/// [`route_top_s`] computed fast, with [`FastConfig::default`] (one thread
/// for problems under 2^18 multiply-adds). The result is bit-identical to
/// [`route_top_s`].
pub fn route_top_s_fast(
    x: &[f32],
    d: &[f32],
    rows: usize,
    k: usize,
    p: usize,
    s: usize,
) -> Result<TopS> {
    let mut cfg = FastConfig::default();
    if rows.saturating_mul(k).saturating_mul(p) < PARALLEL_MIN_MACS {
        cfg.threads = 1;
    }
    route_top_s_fast_with(x, d, rows, k, p, s, &cfg)
}

/// [`route_top_s`] computed fast: the dictionary is walked in tiles of
/// `atom_tile` atoms packed transposed (`panel[c][lane]`), each group of
/// [`LANES`] atoms is scored with `LANES` independent accumulators that each
/// sum `c` in ascending order with separate roundings (so every score is
/// bit-identical to the plain loop), and each score goes straight into the
/// row's [`TopSState`]. Work is split over threads by atom ranges (or by
/// rows when there are too few atom groups), and the states are merged.
pub fn route_top_s_fast_with(
    x: &[f32],
    d: &[f32],
    rows: usize,
    k: usize,
    p: usize,
    s: usize,
    cfg: &FastConfig,
) -> Result<TopS> {
    validate_route(x, d, rows, k, p, s)?;
    if cfg.threads == 0 || cfg.atom_tile == 0 {
        return Err(invalid_arg!(
            "score: FastConfig needs threads ≥ 1 and atom_tile ≥ 1 (threads={}, atom_tile={})",
            cfg.threads,
            cfg.atom_tile
        ));
    }
    // A tile wider than K only wastes panel memory (and could overflow).
    let atom_tile = cfg.atom_tile.min(k).div_ceil(LANES) * LANES;
    let threads = cfg.threads;

    // Work items: (row range, atom range), each producing one state per row.
    let groups = k.div_ceil(LANES);
    let items: Vec<(Range<usize>, Range<usize>)> = if threads == 1 {
        vec![(0..rows, 0..k)]
    } else if groups >= threads {
        split(groups, threads)
            .into_iter()
            .map(|g| (0..rows, g.start * LANES..(g.end * LANES).min(k)))
            .collect()
    } else {
        split(rows, threads.min(rows))
            .into_iter()
            .map(|r| (r, 0..k))
            .collect()
    };

    let run = |(row_range, atom_range): (Range<usize>, Range<usize>)| {
        let states = route_part(x, d, p, s, row_range.clone(), atom_range, atom_tile);
        (row_range, states)
    };
    let parts: Vec<(Range<usize>, Vec<TopSState>)> = if items.len() == 1 {
        items.into_iter().map(run).collect()
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = items
                .into_iter()
                .map(|item| scope.spawn(move || run(item)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("score worker panicked"))
                .collect()
        })
    };

    let mut per_row: Vec<Option<TopSState>> = vec![None; rows];
    for (row_range, states) in parts {
        for (r, state) in row_range.zip(states) {
            match &mut per_row[r] {
                Some(acc) => acc.merge(&state)?,
                slot @ None => *slot = Some(state),
            }
        }
    }
    let lists = per_row
        .into_iter()
        .map(|st| st.expect("every row was routed").finish());
    Ok(TopS::from_rows(rows, s, lists))
}

/// `0..n` cut into `parts` contiguous, near-equal, non-empty ranges
/// (`1 ≤ parts ≤ n`).
fn split(n: usize, parts: usize) -> Vec<Range<usize>> {
    (0..parts)
        .map(|i| n * i / parts..n * (i + 1) / parts)
        .collect()
}

/// Routes rows `row_range` against atoms `atom_range` (whose start is a
/// multiple of [`LANES`] or equal to `0`), returning one state per row.
///
/// On x86-64 CPUs with AVX the same code is compiled with 256-bit vectors:
/// the same IEEE `mul`/`add` per lane, so the same bits. Only `avx` is
/// enabled, not `fma`, and Rust never contracts `a * b + c` by itself.
fn route_part(
    x: &[f32],
    d: &[f32],
    p: usize,
    s: usize,
    row_range: Range<usize>,
    atom_range: Range<usize>,
    atom_tile: usize,
) -> Vec<TopSState> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: the CPU supports AVX, checked just above.
        return unsafe { route_part_avx(x, d, p, s, row_range, atom_range, atom_tile) };
    }
    route_part_body(x, d, p, s, row_range, atom_range, atom_tile)
}

/// [`route_part_body`] compiled for AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
fn route_part_avx(
    x: &[f32],
    d: &[f32],
    p: usize,
    s: usize,
    row_range: Range<usize>,
    atom_range: Range<usize>,
    atom_tile: usize,
) -> Vec<TopSState> {
    route_part_body(x, d, p, s, row_range, atom_range, atom_tile)
}

#[inline(always)]
fn route_part_body(
    x: &[f32],
    d: &[f32],
    p: usize,
    s: usize,
    row_range: Range<usize>,
    atom_range: Range<usize>,
    atom_tile: usize,
) -> Vec<TopSState> {
    let mut states: Vec<TopSState> = row_range.clone().map(|_| TopSState::new(s)).collect();
    let mut panel = vec![0.0f32; atom_tile * p];
    let mut tile_start = atom_range.start;
    while tile_start < atom_range.end {
        let tile_end = (tile_start + atom_tile).min(atom_range.end);
        let n_groups = (tile_end - tile_start).div_ceil(LANES);
        let used = &mut panel[..n_groups * LANES * p];
        pack_panel(d, p, tile_start..tile_end, used);
        let tile = Tile {
            panel: used,
            start: tile_start,
            end: tile_end,
        };
        // Rows in blocks of ROW_BLOCK so each panel load feeds several
        // rows' accumulators; the leftover rows one at a time.
        let mut blocks = states.chunks_exact_mut(ROW_BLOCK);
        let mut r = row_range.start;
        for block in &mut blocks {
            let block: &mut [TopSState; ROW_BLOCK] = block.try_into().expect("exact chunk");
            score_rows(x, p, r, block, &tile);
            r += ROW_BLOCK;
        }
        for state in blocks.into_remainder() {
            score_rows::<1>(x, p, r, std::array::from_mut(state), &tile);
            r += 1;
        }
        tile_start = tile_end;
    }
    states
}

/// Rows scored together by the fast path's inner kernel.
const ROW_BLOCK: usize = 4;

/// One packed dictionary tile: atoms `start..end`, `panel` as written by
/// [`pack_panel`].
struct Tile<'a> {
    panel: &'a [f32],
    start: usize,
    end: usize,
}

/// Scores rows `r0..r0+R` against every atom of `tile` and offers the
/// scores to those rows' states.
#[inline(always)]
fn score_rows<const R: usize>(
    x: &[f32],
    p: usize,
    r0: usize,
    states: &mut [TopSState; R],
    tile: &Tile<'_>,
) {
    let xs: [&[f32]; R] = std::array::from_fn(|i| &x[(r0 + i) * p..(r0 + i + 1) * p]);
    for (g, group_panel) in tile.panel.chunks_exact(LANES * p).enumerate() {
        let a0 = tile.start + g * LANES;
        let valid = (tile.end - a0).min(LANES);
        let accs = dot_lanes_rows(xs, group_panel);
        for (state, acc) in states.iter_mut().zip(&accs) {
            for (j, &score) in acc[..valid].iter().enumerate() {
                state.offer((a0 + j) as u32, score);
            }
        }
    }
}

/// Packs atoms `atoms` of `d` group by group, transposed within a group:
/// `panel[g*LANES*p + c*LANES + j] = d[atoms.start + g*LANES + j][c]`,
/// with `0.0` in lanes past the last atom (their scores are never offered).
fn pack_panel(d: &[f32], p: usize, atoms: Range<usize>, panel: &mut [f32]) {
    for (g, group) in panel.chunks_exact_mut(LANES * p).enumerate() {
        for j in 0..LANES {
            let a = atoms.start + g * LANES + j;
            if a < atoms.end {
                let row = &d[a * p..(a + 1) * p];
                for (c, &v) in row.iter().enumerate() {
                    group[c * LANES + j] = v;
                }
            } else {
                for c in 0..p {
                    group[c * LANES + j] = 0.0;
                }
            }
        }
    }
}

/// `R × LANES` scores at once: lane `j` of row `i` is `dot(xs[i], atom j)`
/// of the group, with its own accumulator summing `c` ascending, separate
/// roundings (no `mul_add`), so each lane equals the readable `dot` bit for
/// bit. Each panel load is shared by the `R` rows.
#[inline(always)]
fn dot_lanes_rows<const R: usize>(xs: [&[f32]; R], group_panel: &[f32]) -> [[f32; LANES]; R] {
    let mut acc = [[0.0f32; LANES]; R];
    for (c, dc) in group_panel.chunks_exact(LANES).enumerate() {
        for i in 0..R {
            let xc = xs[i][c];
            for j in 0..LANES {
                acc[i][j] += xc * dc[j];
            }
        }
    }
    acc
}

// ---------------------------------------------------------------------------
// Fused evaluation and FMA-sensitive data (for tests)
// ---------------------------------------------------------------------------

/// The score block as an FMA-contracting compiler would compute it:
/// `acc = mul_add(x[r][c], d[a][c], acc)`, one rounding per step. This is
/// **not** the contract; it exists so tests can show that an
/// implementation does not contract (see [`fma_sensitive_case`]).
pub fn fma_score(x: &[f32], d: &[f32], rows: usize, k: usize, p: usize) -> Result<Vec<f32>> {
    block_with(x, d, rows, k, p, fused_dot)
}

/// [`route_top_s`] on the fused scores of [`fma_score`] (for tests).
pub fn fma_route_top_s(
    x: &[f32],
    d: &[f32],
    rows: usize,
    k: usize,
    p: usize,
    s: usize,
) -> Result<TopS> {
    route_with(x, d, rows, k, p, s, fused_dot)
}

/// `acc = mul_add(x[c], d[c], acc)` for c ascending from `+0.0`.
fn fused_dot(x: &[f32], d: &[f32]) -> f32 {
    let mut acc = 0.0f32;
    for c in 0..x.len() {
        acc = x[c].mul_add(d[c], acc);
    }
    acc
}

/// A routing problem whose separate-rounding top-s (the contract) differs
/// from the fused one: an implementation that contracts `mul`+`add` into
/// `fma` routes row `row` differently.
#[derive(Debug, Clone)]
pub struct FmaCase {
    /// Input rows.
    pub rows: usize,
    /// Atoms.
    pub k: usize,
    /// Features.
    pub p: usize,
    /// Atoms kept per row.
    pub s: usize,
    /// `[rows, P]` inputs.
    pub x: Vec<f32>,
    /// `[K, P]` dictionary.
    pub d: Vec<f32>,
    /// The row holding the planted near-tie; its top-s differs (other
    /// rows may differ too).
    pub row: usize,
    /// The two planted atoms (`x[row]·a == x[row]·b` in exact arithmetic).
    pub pair: (u32, u32),
}

/// Searches for an FMA-sensitive routing problem of shape `rows × K × P`
/// (`K ≥ 2`, `P ≥ 2`) with `s = 1`, deterministically from `seed`.
///
/// Each attempt draws binary fractions `m / 2^16` with 16-bit integer `m`
/// (so a product has up to 32 significant bits and must round) for every
/// `x`, and small fillers `m / 2^24` for every atom. Then it picks one row
/// `r`, two atoms `a ≠ b` and two columns `c1 ≠ c2`, gives atom `a` a full
/// random row and sets atom `b = a + t·(x[r][c2]·e_c1 − x[r][c1]·e_c2)` for
/// a small integer `t`: in exact arithmetic `x[r]·a == x[r]·b`, so the two
/// computed scores differ only by rounding, and the separate and the fused
/// roundings often order them differently. The first attempt where
/// [`route_top_s`] and [`fma_route_top_s`] pick different atoms for row `r`
/// is returned (typically within a few attempts).
pub fn fma_sensitive_case(rows: usize, k: usize, p: usize, seed: u64) -> Result<FmaCase> {
    const ATTEMPTS: usize = 10_000;
    ScoreShape::new(rows, k, p)?;
    if k < 2 || p < 2 {
        return Err(invalid_arg!(
            "fma_sensitive_case needs K ≥ 2 and P ≥ 2 (K={k}, P={p})"
        ));
    }
    let mut rng = SplitMix64(seed);
    for _ in 0..ATTEMPTS {
        let case = fma_candidate(rows, k, p, &mut rng);
        let separate = route_top_s(&case.x, &case.d, rows, k, p, case.s)?;
        let fused = fma_route_top_s(&case.x, &case.d, rows, k, p, case.s)?;
        if separate.row(case.row).0 != fused.row(case.row).0 {
            return Ok(case);
        }
    }
    Err(invalid_arg!(
        "fma_sensitive_case: no case found for rows={rows}, K={k}, P={p}, seed={seed} in \
         {ATTEMPTS} attempts"
    ))
}

fn fma_candidate(rows: usize, k: usize, p: usize, rng: &mut SplitMix64) -> FmaCase {
    // ±(2^15 .. 2^16) / 2^16: full 16-bit mantissas in (−1, −0.5] ∪ [0.5, 1).
    let big = |rng: &mut SplitMix64| {
        let m = (1u64 << 15) + rng.below(1 << 15);
        let v = m as f32 / 65536.0;
        if rng.below(2) == 0 { v } else { -v }
    };
    // Fillers far below the planted pair's scores.
    let small = |rng: &mut SplitMix64| (rng.below(1 << 16) as f32 - 32768.0) / 16_777_216.0;

    let x: Vec<f32> = (0..rows * p).map(|_| big(rng)).collect();
    let mut d: Vec<f32> = (0..k * p).map(|_| small(rng)).collect();
    let row = rng.below(rows as u64) as usize;
    let a = rng.below(k as u64) as usize;
    let b = (a + 1 + rng.below(k as u64 - 1) as usize) % k;
    let c1 = rng.below(p as u64) as usize;
    let c2 = (c1 + 1 + rng.below(p as u64 - 1) as usize) % p;
    let t = (1 + rng.below(3)) as f32;
    for c in 0..p {
        d[a * p + c] = big(rng);
    }
    let xr = &x[row * p..(row + 1) * p];
    for c in 0..p {
        // On the 2^-16 grid and below 4 in magnitude: at most 18
        // significant bits, exact in f32.
        let shift = if c == c1 {
            t * xr[c2]
        } else if c == c2 {
            -t * xr[c1]
        } else {
            0.0
        };
        d[b * p + c] = d[a * p + c] + shift;
    }
    FmaCase {
        rows,
        k,
        p,
        s: 1,
        x,
        d,
        row,
        pair: (a as u32, b as u32),
    }
}

/// SplitMix64: a tiny deterministic generator for test data.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform-ish in `0..n` (`n ≥ 1`; the modulo bias is irrelevant here).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECIALS: [f32; 9] = [
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        1.0,
        -1.0,
        1e-45,
    ];

    #[test]
    fn rank_key_orders_like_rank_cmp() {
        let mut pairs = Vec::new();
        for (i, &v) in SPECIALS.iter().enumerate() {
            for atom in [0u32, 1, 7, u32::MAX - 1] {
                pairs.push((atom.wrapping_add(i as u32 * 10), v));
            }
        }
        for &a in &pairs {
            for &b in &pairs {
                let by_key = rank_key(b.0, b.1).cmp(&rank_key(a.0, a.1));
                if a.0 == b.0 && (a.1.is_nan() == b.1.is_nan()) && (a.1.abs() == b.1.abs()) {
                    assert_eq!(by_key, Ordering::Equal);
                } else if a.0 != b.0 {
                    assert_eq!(by_key, rank_cmp(a, b), "{a:?} vs {b:?}");
                }
            }
        }
    }

    #[test]
    fn rank_cmp_spelled_out() {
        use Ordering::*;
        assert_eq!(rank_cmp((5, f32::INFINITY), (0, 1e38)), Less);
        assert_eq!(
            rank_cmp((1, f32::NEG_INFINITY), (0, f32::INFINITY)),
            Greater
        );
        assert_eq!(rank_cmp((0, -0.0), (1, 0.0)), Less);
        assert_eq!(rank_cmp((1, -0.0), (0, 0.0)), Greater);
        assert_eq!(rank_cmp((9, 0.0), (0, f32::NAN)), Less);
        assert_eq!(rank_cmp((0, f32::NAN), (1, -f32::NAN)), Less);
        assert_eq!(rank_cmp((0, -3.0), (1, 2.0)), Less);
    }

    #[test]
    fn dot_lanes_rows_matches_dot_per_lane() {
        let p = 7;
        let d: Vec<f32> = (0..20 * p).map(|i| (i as f32 * 0.37).sin() * 3.0).collect();
        let x: Vec<f32> = (0..2 * p).map(|i| (i as f32 * 0.91).cos()).collect();
        let mut panel = vec![f32::NAN; 2 * LANES * p];
        pack_panel(&d, p, 0..20, &mut panel);
        let (x0, x1) = (&x[..p], &x[p..]);
        for g in 0..2 {
            let accs = dot_lanes_rows([x0, x1], &panel[g * LANES * p..(g + 1) * LANES * p]);
            for (acc, xr) in accs.iter().zip([x0, x1]) {
                for (j, got) in acc.iter().enumerate() {
                    let a = g * LANES + j;
                    let want = if a < 20 {
                        dot(xr, &d[a * p..(a + 1) * p])
                    } else {
                        0.0
                    };
                    assert_eq!(got.to_bits(), want.to_bits(), "atom {a}");
                }
            }
        }
    }

    #[test]
    fn split_covers_in_order() {
        for n in 1..40 {
            for parts in 1..=n {
                let ranges = split(n, parts);
                assert_eq!(ranges.len(), parts);
                assert_eq!(ranges[0].start, 0);
                assert_eq!(ranges[parts - 1].end, n);
                for w in ranges.windows(2) {
                    assert_eq!(w[0].end, w[1].start);
                }
                assert!(ranges.iter().all(|r| !r.is_empty()));
            }
        }
    }

    #[test]
    fn state_keeps_bits_and_capacity() {
        let mut st = TopSState::new(3);
        assert!(st.is_empty());
        let odd_nan = f32::from_bits(0x7fc0_1234);
        for (a, &v) in [odd_nan, -0.0, 2.0, -5.0, 0.0].iter().enumerate() {
            st.offer(a as u32, v);
        }
        assert_eq!(st.len(), 3);
        assert_eq!(st.capacity(), 3);
        let got: Vec<(u32, u32)> = st
            .finish()
            .into_iter()
            .map(|(a, v)| (a, v.to_bits()))
            .collect();
        assert_eq!(
            got,
            vec![
                (3, (-5.0f32).to_bits()),
                (2, 2.0f32.to_bits()),
                (1, (-0.0f32).to_bits())
            ]
        );

        let mut nan_only = TopSState::new(2);
        nan_only.offer(4, odd_nan);
        nan_only.offer(2, f32::NAN);
        let got = nan_only.finish();
        assert_eq!(got[0].0, 2);
        assert_eq!(got[1].0, 4);
        assert_eq!(got[1].1.to_bits(), 0x7fc0_1234);

        let mut none = TopSState::new(0);
        none.offer(0, 1.0);
        assert!(none.finish().is_empty());
    }

    #[test]
    fn merge_rejects_different_s() {
        let mut a = TopSState::new(2);
        let b = TopSState::new(3);
        let msg = a.merge(&b).unwrap_err().to_string();
        assert!(msg.contains("s=2") && msg.contains("s=3"), "{msg}");
    }

    #[test]
    fn fast_config_rejects_zero_knobs() {
        let x = [1.0f32];
        let d = [1.0f32];
        for cfg in [
            FastConfig {
                threads: 0,
                atom_tile: 8,
            },
            FastConfig {
                threads: 1,
                atom_tile: 0,
            },
        ] {
            let msg = route_top_s_fast_with(&x, &d, 1, 1, 1, 1, &cfg)
                .unwrap_err()
                .to_string();
            assert!(
                msg.contains(&format!("threads={}", cfg.threads))
                    && msg.contains(&format!("atom_tile={}", cfg.atom_tile)),
                "{msg}"
            );
        }
    }

    #[test]
    fn fast_splits_by_atoms_and_by_rows() {
        // Atom split (many groups) and row split (one group, many rows),
        // with tiles that do not divide K.
        for (rows, k, p, s) in [(5, 203, 9, 4), (50, 16, 3, 16), (3, 17, 2, 17)] {
            let x: Vec<f32> = (0..rows * p).map(|i| ((i * 7 % 11) as f32) - 5.0).collect();
            let d: Vec<f32> = (0..k * p).map(|i| ((i * 5 % 13) as f32) - 6.0).collect();
            let want = route_top_s(&x, &d, rows, k, p, s).unwrap();
            for threads in 1..=5 {
                for atom_tile in [1, 16, 33, 1000, usize::MAX] {
                    let cfg = FastConfig { threads, atom_tile };
                    let got = route_top_s_fast_with(&x, &d, rows, k, p, s, &cfg).unwrap();
                    assert_eq!(got, want, "rows={rows} K={k} P={p} s={s} {cfg:?}");
                }
            }
        }
    }

    #[test]
    fn baseline_and_dispatched_kernels_agree() {
        // On an AVX machine `route_part` runs the AVX build; the baseline
        // body must give the same bits (elsewhere both are the baseline).
        let finish = |states: Vec<TopSState>| -> Vec<(u32, u32)> {
            states
                .into_iter()
                .flat_map(|st| st.finish())
                .map(|(a, v)| (a, v.to_bits()))
                .collect()
        };
        for (rows, k, p, s) in [(7, 100, 13, 100), (4, 33, 64, 3), (1, 5, 1, 2)] {
            let x: Vec<f32> = (0..rows * p).map(|i| (i as f32 * 0.77).sin()).collect();
            let mut d: Vec<f32> = (0..k * p).map(|i| (i as f32 * 0.31).cos() * 1e3).collect();
            d[0] = f32::INFINITY;
            d[k * p - 1] = f32::NAN;
            for atom_tile in [16, 48] {
                let dispatched = route_part(&x, &d, p, s, 0..rows, 0..k, atom_tile);
                let baseline = route_part_body(&x, &d, p, s, 0..rows, 0..k, atom_tile);
                assert_eq!(
                    finish(dispatched),
                    finish(baseline),
                    "rows={rows} K={k} P={p}"
                );
            }
        }
    }

    #[test]
    fn fma_candidate_plants_an_exact_tie() {
        // In exact arithmetic the planted pair scores equal for the chosen
        // row: check with f64, where the 16-bit products are exact and the
        // short sums are too.
        let mut rng = SplitMix64(42);
        for _ in 0..50 {
            let c = fma_candidate(3, 5, 6, &mut rng);
            let (a, b) = (c.pair.0 as usize, c.pair.1 as usize);
            assert_ne!(a, b);
            let exact = |atom: usize, row: usize| -> f64 {
                (0..c.p)
                    .map(|j| f64::from(c.x[row * c.p + j]) * f64::from(c.d[atom * c.p + j]))
                    .sum()
            };
            assert_eq!(exact(a, c.row), exact(b, c.row));
        }
    }
}
