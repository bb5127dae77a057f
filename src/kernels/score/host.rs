//! Temporary stand-in for the host model (the `scorehost` branch owns this
//! file; on merge its version replaces this one). Same contract, same
//! names for what the launch code uses.

use crate::error::Result;
use crate::invalid_arg;

/// A validated problem shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ScoreShape {
    pub rows: usize,
    pub k: usize,
    pub p: usize,
}

/// Validate a score problem.
pub fn validate(x: &[f32], d: &[f32], rows: usize, k: usize, p: usize) -> Result<ScoreShape> {
    if rows == 0 || k == 0 || p == 0 {
        return Err(invalid_arg!(
            "score: empty problem (rows={rows}, K={k}, P={p})"
        ));
    }
    if u32::try_from(k).is_err() {
        return Err(invalid_arg!("score: K={k} exceeds u32::MAX"));
    }
    let (Some(xl), Some(dl)) = (rows.checked_mul(p), k.checked_mul(p)) else {
        return Err(invalid_arg!("score: sizes overflow"));
    };
    if rows.checked_mul(k).is_none() {
        return Err(invalid_arg!("score: rows·K overflows"));
    }
    if x.len() != xl || d.len() != dl {
        return Err(invalid_arg!(
            "score: x has {}, D has {} elements; expected {xl} and {dl}",
            x.len(),
            d.len()
        ));
    }
    Ok(ScoreShape { rows, k, p })
}

/// [`validate`] plus `1 ≤ s ≤ K`.
pub fn validate_route(
    x: &[f32],
    d: &[f32],
    rows: usize,
    k: usize,
    p: usize,
    s: usize,
) -> Result<ScoreShape> {
    let shape = validate(x, d, rows, k, p)?;
    if s == 0 || s > k {
        return Err(invalid_arg!("score: s={s} must be in 1..=K (K={k})"));
    }
    Ok(shape)
}

/// Per-row top-s lists, flat and row-major, best first.
#[derive(Debug, Clone)]
pub struct TopS {
    pub rows: usize,
    pub s: usize,
    pub atoms: Vec<u32>,
    pub scores: Vec<f32>,
}

impl PartialEq for TopS {
    fn eq(&self, o: &Self) -> bool {
        self.rows == o.rows
            && self.s == o.s
            && self.atoms == o.atoms
            && self
                .scores
                .iter()
                .map(|v| v.to_bits())
                .eq(o.scores.iter().map(|v| v.to_bits()))
    }
}

fn dot(x: &[f32], d: &[f32]) -> f32 {
    let mut acc = 0.0f32;
    for c in 0..x.len() {
        acc += x[c] * d[c];
    }
    acc
}

/// The `rows × K` score block.
pub fn score_block(x: &[f32], d: &[f32], rows: usize, k: usize, p: usize) -> Result<Vec<f32>> {
    validate(x, d, rows, k, p)?;
    let mut out = Vec::with_capacity(rows * k);
    for r in 0..rows {
        for a in 0..k {
            out.push(dot(&x[r * p..(r + 1) * p], &d[a * p..(a + 1) * p]));
        }
    }
    Ok(out)
}

/// Ordering key: larger is better.
pub fn rank_key(atom: u32, score: f32) -> u64 {
    let k = if score.is_nan() {
        0
    } else {
        u64::from(score.to_bits() & 0x7fff_ffff) + 1
    };
    (k << 32) | u64::from(!atom)
}

/// Each row's top `s`.
pub fn route_top_s(
    x: &[f32],
    d: &[f32],
    rows: usize,
    k: usize,
    p: usize,
    s: usize,
) -> Result<TopS> {
    validate_route(x, d, rows, k, p, s)?;
    let scores = score_block(x, d, rows, k, p)?;
    let mut out = TopS {
        rows,
        s,
        atoms: Vec::new(),
        scores: Vec::new(),
    };
    for r in 0..rows {
        let mut v: Vec<(u32, f32)> = (0..k).map(|a| (a as u32, scores[r * k + a])).collect();
        v.sort_by_key(|&(a, sc)| std::cmp::Reverse(rank_key(a, sc)));
        for &(a, sc) in &v[..s] {
            out.atoms.push(a);
            out.scores.push(sc);
        }
    }
    Ok(out)
}
