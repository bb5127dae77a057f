//! The host model of [`super`]: the contract's tiles, segments and trees
//! in plain Rust with [`crate::math`]'s routines (the mirrors of the device
//! ones), so the bits equal the kernels' on every input.

use crate::error::{Error, Result};
use crate::kernels::check;
use crate::math::{exp_f32, log_add_exp, log_f32};

/// Elements per segment (one thread's share of a tile).
pub const SEG: usize = 32;
/// Segments per tile (the threads of a CTA).
pub const NSEG: usize = 128;
/// Elements per tile.
pub const TILE: usize = SEG * NSEG;
/// Lanes per warp.
pub(crate) const WARP: usize = 32;
/// Warps per tile.
pub const WARPS: usize = NSEG / WARP;
/// The Kogge–Stone distances of the tile tree's first level.
pub const KS_STEPS: [usize; 5] = [1, 2, 4, 8, 16];
/// Largest `rows · ⌈T / TILE⌉` (the tile counters and scratch indices
/// of the kernels are 32-bit).
pub const MAX_ROW_TILES: usize = 1 << 30;

/// The shape of a `[rows, T]` problem, valid once built (see
/// [`Shape::new`]): the products the kernels form never overflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shape {
    rows: usize,
    t: usize,
}

impl Shape {
    /// Check and build a shape of `rows` rows of `t` elements.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the values: `rows × T`
    /// overflowing, `rows` or `T` at or above 2³¹, or more than
    /// [`MAX_ROW_TILES`] tiles in all.
    pub fn new(rows: usize, t: usize) -> Result<Shape> {
        let n = rows.checked_mul(t).ok_or_else(|| {
            Error::invalid(format!("logcumsumexp: rows × T overflows ({rows} × {t})"))
        })?;
        if t > i32::MAX as usize || rows > i32::MAX as usize {
            return Err(Error::invalid(format!(
                "logcumsumexp: rows = {rows}, T = {t}: each must stay below 2^31"
            )));
        }
        let tiles = rows.saturating_mul(t.div_ceil(TILE));
        if tiles > MAX_ROW_TILES || (n as u64).checked_mul(4).is_none() {
            return Err(Error::invalid(format!(
                "logcumsumexp: {rows} rows of {t} make {tiles} tiles of {TILE}, above 2^30"
            )));
        }
        Ok(Shape { rows, t })
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Elements per row (`T`).
    pub fn t(&self) -> usize {
        self.t
    }

    /// `rows × T`, the length of every buffer.
    pub fn len(&self) -> usize {
        self.rows * self.t
    }

    /// Whether there is no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Tiles per row, `⌈T / TILE⌉`.
    pub fn tiles(&self) -> usize {
        self.t.div_ceil(TILE)
    }

    /// `len` must be `rows × T`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming `what` and the lengths.
    pub fn expect_len(&self, what: &str, len: usize) -> Result<()> {
        let (rows, t) = (self.rows, self.t);
        check::len(
            "logcumsumexp",
            what,
            len,
            self.len(),
            format_args!("rows × T = {rows} × {t}"),
        )
    }
}

/// The tile tree of the contract over the `NSEG` segment aggregates `agg`
/// with `op(earlier, later)`: each segment's exclusive prefix (`None` for
/// none) and the tile total.
pub fn tile_tree<V: Clone>(agg: &[V], op: impl Fn(V, V) -> V) -> (Vec<Option<V>>, V) {
    assert_eq!(agg.len(), NSEG, "tile_tree takes NSEG aggregates");
    let mut inc = agg.to_vec();
    for d in KS_STEPS {
        let old = inc.clone();
        for (s, v) in inc.iter_mut().enumerate() {
            if s % WARP >= d {
                *v = op(old[s - d].clone(), old[s].clone());
            }
        }
    }
    let mut q: Vec<Option<V>> = vec![None; WARPS + 1];
    for w in 0..WARPS {
        let total = inc[w * WARP + WARP - 1].clone();
        q[w + 1] = combine(q[w].clone(), Some(total), &op);
    }
    let excl = (0..NSEG)
        .map(|s| {
            let (w, l) = (s / WARP, s % WARP);
            if l == 0 {
                q[w].clone()
            } else {
                combine(q[w].clone(), Some(inc[s - 1].clone()), &op)
            }
        })
        .collect();
    let total = q[WARPS].clone().expect("WARPS ≥ 1");
    (excl, total)
}

/// `c ⊗ e`, or whichever is not none.
pub fn combine<V>(c: Option<V>, e: Option<V>, op: impl Fn(V, V) -> V) -> Option<V> {
    match (c, e) {
        (Some(c), Some(e)) => Some(op(c, e)),
        (c, None) => c,
        (None, e) => e,
    }
}

/// The forward's segment aggregate (see the contract): `m' + log(Σ
/// exp(x − m'))` with `m'` the non-NaN maximum when finite, else `+0`.
pub fn segment_log_sum(v: &[f32]) -> f32 {
    let mut m = f32::NEG_INFINITY;
    for &x in v {
        if x > m {
            m = x;
        }
    }
    let mp = if m.abs() < f32::INFINITY { m } else { 0.0 };
    let mut s = exp_f32(v[0] - mp);
    for &x in &v[1..] {
        s += exp_f32(x - mp);
    }
    mp + log_f32(s)
}

/// Runs per row of the carry tree (one per thread of a CTA).
pub const RUNS: usize = NSEG;
/// The shortest run of the carry tree, in tiles.
pub const RUN: usize = 32;

/// The run length of a row of `n` tiles: `max(RUN, ⌈n / RUNS⌉)`.
pub fn run_len(n: usize) -> usize {
    RUN.max(n.div_ceil(RUNS))
}

/// The carry tree's run prefixes of a row of `n` tiles with totals `tot`
/// (at least `n − 1`; a later one is never read): runs of `L = run_len(n)`
/// tiles, run `j`'s aggregate `G_j = T_{jL} ⊗ … ⊗ T_{jL+L−1}` left to
/// right, and `P_j` the tile tree's exclusive prefix over `G_0 … G_{RUNS−1}`
/// (the aggregates of runs not wholly before the last tile take any value:
/// no prefix that is used reads them). Returns `L` and `P_0 … P_{RUNS−1}`
/// (`P_0` none).
pub fn run_prefixes<V: Clone>(
    n: usize,
    tot: &[V],
    op: impl Fn(V, V) -> V,
) -> (usize, Vec<Option<V>>) {
    let l = run_len(n);
    let runs = n.div_ceil(l);
    if runs <= 1 {
        return (l, vec![None; RUNS]);
    }
    let agg: Vec<V> = (0..RUNS)
        .map(|j| {
            let j = if j + 1 < runs { j } else { 0 };
            let run = &tot[j * l..(j + 1) * l];
            run[1..]
                .iter()
                .fold(run[0].clone(), |a, t| op(a, t.clone()))
        })
        .collect();
    (l, tile_tree(&agg, op).0)
}

/// The tile carries `C_0 … C_{n−1}` of a row of `n` tiles by the carry
/// tree ([`run_prefixes`]): `C_{jL} = P_j`, `C_{τ+1} = C_τ ⊗ T_τ` within
/// a run. A row of at most `L` tiles is one run: the plain chain.
pub fn tile_carries<V: Clone>(n: usize, tot: &[V], op: impl Fn(V, V) -> V) -> Vec<Option<V>> {
    let (l, prefix) = run_prefixes(n, tot, &op);
    let mut out: Vec<Option<V>> = vec![None; n];
    for tau in 0..n {
        out[tau] = if tau % l == 0 {
            prefix[tau / l].clone()
        } else {
            combine(out[tau - 1].clone(), Some(tot[tau - 1].clone()), &op)
        };
    }
    out
}

/// One tile of `row` starting at `start`, padded with `pad` past the end.
fn stage(row: &[f32], start: usize, pad: f32) -> Vec<f32> {
    (start..start + TILE)
        .map(|p| row.get(p).copied().unwrap_or(pad))
        .collect()
}

fn forward_row(x: &[f32], y: &mut [f32]) {
    let t = x.len();
    let nt = t.div_ceil(TILE);
    let tiles: Vec<(Vec<f32>, Vec<Option<f32>>, f32)> = (0..nt)
        .map(|tau| {
            let tile = stage(x, tau * TILE, f32::NEG_INFINITY);
            let agg: Vec<f32> = tile.chunks_exact(SEG).map(segment_log_sum).collect();
            let (excl, total) = tile_tree(&agg, log_add_exp);
            (tile, excl, total)
        })
        .collect();
    let totals: Vec<f32> = tiles.iter().map(|t| t.2).collect();
    let carries = tile_carries(nt, &totals, log_add_exp);
    for (tau, (tile, excl, _)) in tiles.iter().enumerate() {
        let start = tau * TILE;
        let carry = carries[tau];
        for (s, seg) in tile.chunks_exact(SEG).enumerate() {
            let base = start + s * SEG;
            if base >= t {
                break;
            }
            let mut acc = match combine(carry, excl[s], log_add_exp) {
                None => seg[0],
                Some(k) => log_add_exp(k, seg[0]),
            };
            y[base] = acc;
            for (k, &v) in seg.iter().enumerate().skip(1).take(t - base - 1) {
                acc = log_add_exp(acc, v);
                y[base + k] = acc;
            }
        }
    }
}

/// Forward: `y[r][t] = log Σ_{k ≤ t} exp(x[r][k])` by the contract's tree.
///
/// # Errors
/// [`Error::InvalidArgument`] when `x` is not `rows × T` long.
pub fn forward(shape: Shape, x: &[f32]) -> Result<Vec<f32>> {
    shape.expect_len("x", x.len())?;
    let mut y = vec![0f32; shape.len()];
    if shape.t > 0 {
        for (xr, yr) in x.chunks_exact(shape.t).zip(y.chunks_exact_mut(shape.t)) {
            forward_row(xr, yr);
        }
    }
    Ok(y)
}

/// A forward pair `(m, S)`: running maximum and `Σ exp(x − m)`.
pub type Pair = (f32, f32);
/// An affine map `Z ↦ a + b·Z` as `(a, b)`.
pub type Affine = (f32, f32);

/// The identity of [`pair_op`]: `(−f32::MAX, +0)`.
pub const PAIR_IDENTITY: Pair = (-f32::MAX, 0.0);

/// `p ⊕ q` with its `e` and "`q` sets a new maximum" (see the contract).
pub fn pair_step(p: Pair, q: Pair) -> (Pair, f32, bool) {
    let ((m1, s1), (m2, s2)) = (p, q);
    let d = if m2 == m1 { 0.0 } else { m2 - m1 };
    let e = exp_f32(-d.abs());
    let n = m2 > m1;
    let out = if n {
        (m2, s1.mul_add(e, s2))
    } else {
        (m1, s2.mul_add(e, s1))
    };
    (out, e, n)
}

/// `p ⊕ q` (see the contract).
pub fn pair_op(p: Pair, q: Pair) -> Pair {
    pair_step(p, q).0
}

/// The reverse tree's `E ⊗ L = L ∘ E` (`earlier` = the block to the right).
pub fn affine_op(earlier: Affine, later: Affine) -> Affine {
    let ((ae, be), (al, bl)) = (earlier, later);
    (bl.mul_add(ae, al), bl * be)
}

/// A segment's pair aggregate `𝟙 ⊕ (x_0, 1) ⊕ … ⊕ (x_31, 1)`.
pub fn segment_pair(v: &[f32]) -> Pair {
    v.iter().fold(PAIR_IDENTITY, |p, &x| pair_op(p, (x, 1.0)))
}

/// The pair aggregates of a staged tile and their tile tree.
fn pair_tree(tile: &[f32]) -> (Vec<Option<Pair>>, Pair) {
    let agg: Vec<Pair> = tile.chunks_exact(SEG).map(segment_pair).collect();
    tile_tree(&agg, pair_op)
}

/// The new-maximum flag travels as the sign of the stored `e` (`e ≥ +0`
/// or NaN; a NaN `e` comes with a NaN `S`, so its flag does not matter).
fn encode(e: f32, n: bool) -> f32 {
    if n { -e } else { e }
}

fn decode(v: f32) -> (f32, bool) {
    let b = v.to_bits();
    (f32::from_bits(b & 0x7fff_ffff), b >> 31 == 1)
}

/// One tile's forward half of the backward from its carry: the encoded
/// `(e, n)`, the `r` values and the reverse tree (`excl_r`, tile map).
struct BwdTile {
    enc: Vec<f32>,
    r: Vec<f32>,
    excl_r: Vec<Option<Affine>>,
    map: Affine,
}

fn bwd_tile(xs: &[f32], gs: &[f32], carry: Option<Pair>) -> BwdTile {
    let (excl, _) = pair_tree(xs);
    let mut enc = vec![0f32; TILE];
    let mut r = vec![0f32; TILE];
    let mut aff: Vec<Affine> = Vec::with_capacity(NSEG);
    for (s, e_s) in excl.iter().enumerate() {
        let mut p = combine(carry, *e_s, pair_op).unwrap_or(PAIR_IDENTITY);
        let (mut a, mut b) = (0f32, 1f32);
        for i in s * SEG..(s + 1) * SEG {
            let (np, e, n) = pair_step(p, (xs[i], 1.0));
            p = np;
            let rv = if p.1 == 0.0 { 0.0 } else { gs[i] / p.1 };
            enc[i] = encode(e, n);
            r[i] = rv;
            if n {
                b *= e;
            }
            a = b.mul_add(rv, a);
        }
        aff.push((a, b));
    }
    aff.reverse();
    let (excl_r, map) = tile_tree(&aff, affine_op);
    BwdTile {
        enc,
        r,
        excl_r,
        map,
    }
}

/// The reverse carries `Zc` of a row of `n` tiles in reverse order
/// (`zr[ρ] = Zc_{n−1−ρ}`) from the tile maps in reverse order (`maps[ρ]`
/// the map of tile `n − 1 − ρ`; at least `n − 1`): the carry tree over
/// the maps ([`run_prefixes`] with [`affine_op`]), `zr[0] = +0`, a run's
/// first `zr[jL] = fma(b_P, +0, a_P)` from its prefix `P_j`, then
/// `zr[ρ+1] = fma(b_ρ, zr[ρ], a_ρ)`.
pub fn reverse_carries(n: usize, maps: &[Affine]) -> Vec<f32> {
    let (l, prefix) = run_prefixes(n, maps, affine_op);
    let mut zr = vec![0f32; n];
    for rho in 0..n {
        zr[rho] = if rho % l == 0 {
            prefix[rho / l].map_or(0.0, |(a, b)| b.mul_add(0.0, a))
        } else {
            let (a, b) = maps[rho - 1];
            b.mul_add(zr[rho - 1], a)
        };
    }
    zr
}

fn backward_row(x: &[f32], g: &[f32], gx: &mut [f32]) {
    let t = x.len();
    let nt = t.div_ceil(TILE);
    // Pass 1: the tile carries C_τ (pairs) by the carry tree.
    let totals: Vec<Pair> = (0..nt.saturating_sub(1))
        .map(|tau| pair_tree(&stage(x, tau * TILE, f32::NEG_INFINITY)).1)
        .collect();
    let carries = tile_carries(nt, &totals, pair_op);
    // Pass 2: each tile's walk and map; the reverse carries by the carry
    // tree over the maps in reverse order (ρ = n_τ − 1 − τ).
    let tiles: Vec<BwdTile> = (0..nt)
        .map(|tau| {
            let start = tau * TILE;
            let xs = stage(x, start, f32::NEG_INFINITY);
            let gs = stage(g, start, 0.0);
            bwd_tile(&xs, &gs, carries[tau])
        })
        .collect();
    let maps: Vec<Affine> = tiles.iter().rev().map(|t| t.map).collect();
    let zr = reverse_carries(nt, &maps);
    for (tau, tile) in tiles.iter().enumerate() {
        let start = tau * TILE;
        let zc = zr[nt - 1 - tau];
        for s in 0..NSEG {
            let mut z = match tile.excl_r[NSEG - 1 - s] {
                None => zc,
                Some((a, b)) => b.mul_add(zc, a),
            };
            for i in (s * SEG..(s + 1) * SEG).rev() {
                let u = tile.r[i] + z;
                let (e, n) = decode(tile.enc[i]);
                let p = e * u;
                if start + i < t {
                    gx[start + i] = if n { u } else { p };
                }
                z = if n { p } else { u };
            }
        }
    }
}

/// Backward: the gradient `gx` of `Σ g·logcumsumexp(x)` with respect to
/// `x`, by the contract's shift-invariant evaluation (the forward output is
/// not needed).
///
/// # Errors
/// [`Error::InvalidArgument`] when `x` or `g` is not `rows × T` long.
pub fn backward(shape: Shape, x: &[f32], g: &[f32]) -> Result<Vec<f32>> {
    shape.expect_len("x", x.len())?;
    shape.expect_len("g", g.len())?;
    let mut gx = vec![0f32; shape.len()];
    if shape.t > 0 {
        for ((xr, gr), out) in x
            .chunks_exact(shape.t)
            .zip(g.chunks_exact(shape.t))
            .zip(gx.chunks_exact_mut(shape.t))
        {
            backward_row(xr, gr, out);
        }
    }
    Ok(gx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_identity_is_exact_on_both_sides() {
        for v in [
            (0.0, 1.0),
            (-0.0, 0.5),
            (3.5, 7.0),
            (-f32::MAX, 2.0),
            (f32::MAX, 1.0),
            (f32::INFINITY, 3.0),
            (-5.0, 0.0),
        ] {
            assert_eq!(pair_op(PAIR_IDENTITY, v), v, "𝟙 ⊕ {v:?}");
            assert_eq!(pair_op(v, PAIR_IDENTITY), v, "{v:?} ⊕ 𝟙");
        }
    }

    #[test]
    fn tile_tree_of_sums_is_exact_prefix() {
        // Integers below 2^24 add exactly: the tree must give the plain
        // exclusive prefix sums whatever its shape.
        let agg: Vec<f32> = (0..NSEG).map(|i| (i % 7 + 1) as f32).collect();
        let (excl, total) = tile_tree(&agg, |a, b| a + b);
        let mut acc = 0f32;
        for (s, e) in excl.iter().enumerate() {
            assert_eq!(*e, if s == 0 { None } else { Some(acc) }, "segment {s}");
            acc += agg[s];
        }
        assert_eq!(total, acc);
        // Strings show the exact association.
        let agg: Vec<String> = (0..NSEG).map(|i| i.to_string()).collect();
        let (excl, total) = tile_tree(&agg, |a: String, b: String| format!("({a} {b})"));
        let e = |s: usize| excl[s].clone().unwrap();
        assert_eq!(excl[0], None);
        assert_eq!(e(1), "0");
        assert_eq!(e(2), "(0 1)");
        assert_eq!(e(3), "(0 (1 2))");
        assert_eq!(e(4), "((0 1) (2 3))");
        assert_eq!(e(6), "((0 1) ((2 3) (4 5)))");
        // Lane 31's Kogge–Stone value is the balanced tree of its warp;
        // lane 0 of warp 1 gets Q_1 = W_0, lane 1 gets Q_1 ⊗ I_32; Q_2 =
        // Q_1 ⊗ W_1; the tile total Q_4 = Q_3 ⊗ W_3.
        fn balanced(lo: usize, hi: usize) -> String {
            if hi - lo == 1 {
                return lo.to_string();
            }
            let mid = (lo + hi) / 2;
            format!("({} {})", balanced(lo, mid), balanced(mid, hi))
        }
        let w0 = e(32);
        assert_eq!(w0, balanced(0, 32));
        assert_eq!(e(33), format!("({w0} 32)"));
        assert_eq!(e(64), format!("({w0} {})", balanced(32, 64)));
        assert_eq!(total, format!("({} {})", e(96), balanced(96, 128)));
    }
}
