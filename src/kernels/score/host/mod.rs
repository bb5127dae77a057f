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

use crate::error::{ArgError, Error, Result};
use crate::invalid_arg;
use crate::kernels::check;

mod fast;
mod fma;

pub use fast::{FastConfig, LANES, route_top_s_fast, route_top_s_fast_with};
pub use fma::{FmaCase, fma_route_top_s, fma_score, fma_sensitive_case};

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
    /// [`Error::InvalidArgument`] naming
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
            let e = check::len_error(
                "score",
                "x",
                x.len(),
                want_x,
                format_args!("rows·P = {rows}·{p}"),
            );
            return Err(with_implied(e, implied_p(x.len(), rows, p, "x", "rows")));
        }
        let want_d = k * p;
        if d.len() != want_d {
            let e = check::len_error("score", "D", d.len(), want_d, format_args!("K·P = {k}·{p}"));
            return Err(with_implied(e, implied_p(d.len(), k, p, "D", "atoms")));
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
/// `e` with `implied` appended to its message.
fn with_implied(e: ArgError, implied: String) -> Error {
    let message = format!("{}{implied}", e.message());
    e.with_message(message).into()
}

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
}
