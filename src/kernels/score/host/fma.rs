//! Fused evaluation and FMA-sensitive test data: what an FMA-contracting
//! implementation would compute, and a generator of problems whose routing
//! it changes. Separate from the model because it is not the contract, only
//! a tool for tests to detect contraction.

use super::{ScoreShape, TopS, block_with, route_top_s, route_with};
use crate::error::Result;
use crate::invalid_arg;

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
