//! logcumsumexp's carry tree on long rows (more than 64 tiles, where it
//! differs from a plain chain of tile carries): the simulator against the
//! host model bit for bit on both kernel paths, forward and backward, with
//! special values; the host model's tree against the chain up to the
//! contract's bound; the host model against an f64 reference at 2²⁰
//! (2²² with `PTXSMITH_LCSE_LONG=1`, slow).
//! `cargo test --release --test logcumsumexp_runs -- --nocapture` prints
//! the measured errors.

use ptxsmith::Sm;
use ptxsmith::kernels::logcumsumexp::{Shape, TILE, host, launch};
use ptxsmith::math::log_add_exp;
use ptxsmith::runtime::Context;

mod common;
use common::bits;
use launch::Path;

fn lcg(seed: u32) -> impl FnMut() -> f32 {
    let mut s = seed;
    move || {
        s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (s >> 8) as f32 / (1u32 << 24) as f32 * 2.0 - 1.0
    }
}

fn data(n: usize, seed: u32, scale: f32) -> Vec<f32> {
    let mut r = lcg(seed);
    (0..n).map(|_| r() * scale).collect()
}

/// `rows` rows of `t`: the first with a half tile of `−∞` at the start
/// and a tile of `−∞` in the middle; a second (when `rows = 2`) with a
/// `+∞` near its end and, when `nan`, a NaN in `x` and one in `g`.
fn inputs(rows: usize, t: usize, seed: u32, nan: bool) -> (Vec<f32>, Vec<f32>) {
    let mut x = data(rows * t, seed, 5.0);
    let mut g = data(rows * t, seed + 1, 1.0);
    x[..(TILE / 2).min(t)].fill(f32::NEG_INFINITY);
    let k = (t / TILE / 2) * TILE;
    x[k..(k + TILE).min(t)].fill(f32::NEG_INFINITY);
    if rows == 2 {
        x[t + t - t / 3] = f32::INFINITY;
        if nan {
            x[t + t - 2] = f32::NAN;
            g[t + t / 2] = f32::NAN;
        }
    }
    (x, g)
}

/// `rows` rows of `tiles · TILE + extra` on the simulator, both paths, both
/// directions, against the host model.
fn check(rows: usize, tiles: usize, extra: usize, seed: u32, nan: bool) {
    check_paths(rows, tiles, extra, seed, nan, &[Path::Row, Path::Split]);
}

fn check_paths(rows: usize, tiles: usize, extra: usize, seed: u32, nan: bool, paths: &[Path]) {
    let t = tiles * TILE + extra;
    let s = Shape::new(rows, t).unwrap();
    let (x, g) = inputs(rows, t, seed, nan);
    let y = host::forward(s, &x).unwrap();
    let gx = host::backward(s, &x, &g).unwrap();
    let ctx = Context::sim(Sm::Sm80);
    let st = ctx.default_stream();
    for &path in paths {
        let got = launch::forward_on_path(&st, s, path, &x).unwrap();
        assert_eq!(bits(&got), bits(&y), "forward {rows} × {t} {path:?}");
        let got = launch::backward_on_path(&st, s, path, &x, &g).unwrap();
        assert_eq!(bits(&got), bits(&gx), "backward {rows} × {t} {path:?}");
    }
}

#[test]
fn sim_equals_host_on_rows_of_1_and_2_tiles_with_special_values() {
    check(2, 1, 0, 1, false);
    check(2, 1, 9, 2, true);
    check(2, 2, 0, 3, true);
}

/// Two runs of 32 tiles: the tree's carries are the chain's.
#[test]
fn sim_equals_host_on_a_row_of_64_tiles() {
    check(1, 64, 0, 4, false);
}

/// Three runs (the third of one tile, then of three).
#[test]
fn sim_equals_host_on_rows_of_65_and_67_tiles() {
    check(1, 64, 5, 5, false);
    check(1, 67, 0, 6, false);
}

/// Longer rows, slow on the simulator: `PTXSMITH_LCSE_LONG=1`. 1 100 tiles
/// (35 runs of 32: the tree over the runs spans two warps) on both paths;
/// 4 129 tiles (`L = max(32, ⌈n/128⌉)` = 33: 126 runs, all four warps) on
/// the split path only (the row path's one CTA walking 17 M elements
/// exceeds the simulator's per-launch instruction budget).
#[test]
fn sim_equals_host_on_rows_over_1024_and_4096_tiles_when_asked() {
    if std::env::var_os("PTXSMITH_LCSE_LONG").is_none() {
        return;
    }
    check(1, 1100, 7, 7, false);
    check_paths(1, 4096 + 33, 11, 8, false, &[Path::Split]);
}

/// Up to 64 tiles the tree's carries are the chain's `C_{τ+1} = C_τ ⊗ T_τ`
/// bit for bit (one run, or two: `P_1 = G_0 = C_32`); at 65 tiles the
/// third run's prefix `G_0 ⊗ G_1` differs from the chain.
#[test]
fn host_tree_equals_the_chain_up_to_64_tiles() {
    let chain = |tot: &[f32], n: usize| {
        let mut c: Vec<Option<f32>> = vec![None; n];
        for tau in 1..n {
            c[tau] = Some(match c[tau - 1] {
                None => tot[0],
                Some(p) => log_add_exp(p, tot[tau - 1]),
            });
        }
        c
    };
    let b =
        |v: &[Option<f32>]| -> Vec<Option<u32>> { v.iter().map(|c| c.map(f32::to_bits)).collect() };
    let tot = data(200, 9, 8.0);
    for n in 1..=64 {
        assert_eq!(
            b(&host::tile_carries(n, &tot, log_add_exp)),
            b(&chain(&tot, n)),
            "n {n}"
        );
    }
    let differs =
        (65..=200).filter(|&n| b(&host::tile_carries(n, &tot, log_add_exp)) != b(&chain(&tot, n)));
    assert!(
        differs.count() > 100,
        "the tree should differ from the chain past 64 tiles"
    );
}

/// `log Σ exp` of each prefix in f64, max-shifted.
fn reference(x: &[f32]) -> Vec<f64> {
    let (mut m, mut s) = (f64::NEG_INFINITY, 0f64);
    x.iter()
        .map(|&v| {
            let v = f64::from(v);
            if v > m {
                s = s * (m - v).exp() + 1.0;
                m = v;
            } else {
                s += (v - m).exp();
            }
            m + s.ln()
        })
        .collect()
}

/// The contract's forward accuracy bound (in `2⁻²³·max(1, |y|)`).
const BOUND: f64 = 16.0;

fn forward_error(t: usize, scale: f32, seed: u32) -> f64 {
    let x = data(t, seed, scale);
    let y = host::forward(Shape::new(1, t).unwrap(), &x).unwrap();
    let mut worst = 0f64;
    for (k, (got, want)) in y.iter().zip(reference(&x)).enumerate() {
        let err = (f64::from(*got) - want).abs() / (want.abs().max(1.0) * 2f64.powi(-23));
        assert!(err <= BOUND, "T {t} k {k}: {got} vs {want} ({err:.2})");
        worst = worst.max(err);
    }
    println!("  forward T {t}, x ∈ ±{scale}: worst {worst:.2} × 2^-23·max(1,|y|)");
    worst
}

#[test]
fn host_forward_on_long_rows_is_close_to_the_f64_reference() {
    forward_error(1 << 20, 0.01, 11);
    forward_error(1 << 20, 5.0, 12);
    if std::env::var_os("PTXSMITH_LCSE_LONG").is_some() {
        forward_error(1 << 22, 0.01, 13);
    }
}
