//! logcumsumexp, forward and backward: the host model against f64
//! references (the forward's sequential log-sum, the backward's
//! shift-invariant sum, finite differences), shifted rows, the special
//! values of the contract, the simulator bit for bit against the host
//! model on both kernel paths and every target, long rows (the carry
//! tree: rows of 64, 65 and 67 tiles, and with `PTXSMITH_LCSE_LONG=1` over
//! 1 024 and 4 096 tiles; the host model at `T = 2²⁰`, `2²²` with the
//! variable), and the GPU when one is present. `cargo test --release --test logcumsumexp -- --nocapture`
//! prints the measured worst errors.

use ptxsmith::kernels::logcumsumexp::{self as lcse, SEG, Shape, TILE, host, launch};
use ptxsmith::math::log_add_exp;
use ptxsmith::runtime::{Backend, Context, Ran, Stream};
use ptxsmith::testing::cuda_for_tests;
use ptxsmith::{Error, Sm};

mod common;
use common::{bits, foreign_get, foreign_put, lcg};
use launch::Path;

/// `n` values uniform in `[−scale, scale)`.
fn data(n: usize, seed: u32, scale: f32) -> Vec<f32> {
    let mut r = lcg(seed);
    (0..n).map(|_| r() * scale).collect()
}

fn shape(rows: usize, t: usize) -> Shape {
    Shape::new(rows, t).unwrap()
}

/// `log Σ exp` of each prefix in f64, max-shifted.
fn reference(x: &[f32]) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    let (mut m, mut s) = (f64::NEG_INFINITY, 0f64);
    for &v in x {
        let v = f64::from(v);
        if v > m {
            s = s * (m - v).exp() + 1.0;
            m = v;
        } else {
            s += (v - m).exp();
        }
        out.push(m + s.ln());
    }
    out
}

/// The gradient `Σ_{t≥i} g_t·exp(x_i − y_t)` of one row and its scale
/// `Σ_{t≥i} |g_t|·exp(x_i − y_t)`, in f64 in the shift-invariant form:
/// running maximum `m_t`, `S_t = Σ_{j≤t} exp(x_j − m_t)`, and the reverse
/// recurrence `U_t = g_t/S_t + exp(m_t − m_{t+1})·U_{t+1}`, so every
/// exponent is a difference of two inputs (exact in f64 for f32 inputs of
/// any magnitude). Finite inputs only.
fn reference_grad(x: &[f32], g: &[f32]) -> (Vec<f64>, Vec<f64>) {
    let t = x.len();
    let (mut m, mut s) = (vec![0f64; t], vec![0f64; t]);
    let (mut mm, mut ss) = (f64::NEG_INFINITY, 0f64);
    for (i, &v) in x.iter().enumerate() {
        let v = f64::from(v);
        if v > mm {
            ss = ss * (mm - v).exp() + 1.0;
            mm = v;
        } else {
            ss += (v - mm).exp();
        }
        (m[i], s[i]) = (mm, ss);
    }
    let (mut gx, mut scale) = (vec![0f64; t], vec![0f64; t]);
    let (mut u, mut ua) = (0f64, 0f64);
    for i in (0..t).rev() {
        let w = if i + 1 < t {
            (m[i] - m[i + 1]).exp()
        } else {
            0.0
        };
        let gi = f64::from(g[i]);
        u = gi / s[i] + w * u;
        ua = gi.abs() / s[i] + w * ua;
        let f = (f64::from(x[i]) - m[i]).exp();
        gx[i] = f * u;
        scale[i] = f * ua;
    }
    (gx, scale)
}

// ---------------------------------------------------------------------------
// Forward: host model
// ---------------------------------------------------------------------------

#[test]
fn host_equals_the_plain_sequential_scan_within_a_segment() {
    for t in [1, 2, 17, SEG - 1, SEG] {
        let mut x = data(t, t as u32, 10.0);
        x[0] = -0.0;
        let y = host::forward(shape(1, t), &x).unwrap();
        let mut acc = x[0];
        let mut want = vec![acc];
        for &v in &x[1..] {
            acc = log_add_exp(acc, v);
            want.push(acc);
        }
        assert_eq!(bits(&y), bits(&want), "T = {t}");
        assert_eq!(
            y[0].to_bits(),
            (-0f32).to_bits(),
            "the first element is copied"
        );
    }
}

/// The forward stays within `BOUND · 2^-23 · max(1, |ref|)` of the f64
/// reference.
const BOUND: f64 = 16.0;

#[test]
fn host_forward_is_close_to_the_f64_reference() {
    let mut worst = 0f64;
    let mut cases = vec![
        (100, 3.0, 1, 0.0),
        (1000, 10.0, 2, 0.0),
        (5000, 1.0, 3, 0.0),
        (3000, 30.0, 4, 0.0),
        (TILE * 3 + 17, 5.0, 5, 0.0),
        (1 << 16, 2.0, 6, 0.0),
        (1 << 16, 0.01, 7, 0.0),
    ];
    for shift in [1e4f32, -1e4, 1e12, -1e30] {
        cases.push((20_000, 5.0, 8, shift));
    }
    for (t, scale, seed, shift) in cases {
        let x: Vec<f32> = data(t, seed, scale).iter().map(|v| v + shift).collect();
        let y = host::forward(shape(1, t), &x).unwrap();
        let mut case = 0f64;
        for (k, (got, want)) in y.iter().zip(reference(&x)).enumerate() {
            let err = (f64::from(*got) - want).abs() / (want.abs().max(1.0) * 2f64.powi(-23));
            case = case.max(err);
            assert!(
                err <= BOUND,
                "T {t} shift {shift} k {k}: {got} vs {want} ({err:.2} units)"
            );
        }
        println!("  forward T {t:>6}, x ∈ {shift} ± {scale}: worst {case:.2}");
        worst = worst.max(case);
    }
    println!(
        "logcumsumexp forward, host vs f64: worst {worst:.2} × 2^-23·max(1,|y|) (bound {BOUND}; T ≤ 2^16, rows near 0 and shifted by ±1e4, 1e12, -1e30)"
    );
}

// ---------------------------------------------------------------------------
// Backward: host model
// ---------------------------------------------------------------------------

/// The backward bound: `|gx − ref| ≤ GRAD_BOUND · (1 + scale)`.
const GRAD_BOUND: f64 = 1e-5;

/// The worst `|gx − ref| / (1 + scale)` of one row (asserting the bound).
fn grad_error(x: &[f32], g: &[f32], gx: &[f32], what: &str) -> f64 {
    let (want, scale) = reference_grad(x, g);
    let mut worst = 0f64;
    for i in 0..x.len() {
        let err = (f64::from(gx[i]) - want[i]).abs() / (1.0 + scale[i]);
        assert!(
            err <= GRAD_BOUND,
            "{what} i {i}: {} vs {} (scale {}, error {err:.3e})",
            gx[i],
            want[i],
            scale[i]
        );
        worst = worst.max(err);
    }
    worst
}

/// Base rows near 0: `(name, values)` of length `t`.
fn base_rows(t: usize, seed: u32) -> Vec<(&'static str, Vec<f32>)> {
    let mut r = lcg(seed);
    let uniform: Vec<f32> = (0..t).map(|_| r() * 8.0).collect();
    let narrow: Vec<f32> = (0..t).map(|_| r() * 0.05).collect();
    // Slowly rising (a new maximum at almost every step): the longest
    // chains of rescalings.
    let rising: Vec<f32> = (0..t).map(|i| i as f32 * 1e-3 + r() * 1e-4).collect();
    let falling: Vec<f32> = (0..t).map(|i| -(i as f32) * 1e-3 + r() * 1e-4).collect();
    let wide: Vec<f32> = (0..t).map(|_| r() * 60.0).collect();
    vec![
        ("uniform ±8", uniform),
        ("narrow ±0.05", narrow),
        ("rising", rising),
        ("falling", falling),
        ("wide ±60", wide),
    ]
}

/// Upstream gradients: mixed signs, some zeros, and all-positive rows.
fn grads(n: usize, seed: u32) -> Vec<f32> {
    let mut g = data(n, seed, 1.0);
    for (i, v) in g.iter_mut().enumerate() {
        if i % 7 == 0 {
            *v = 0.0;
        }
    }
    g
}

/// The sweep of `T`: 1, 2, SEG ± 1, TILE ± 1, several tiles, 2^16.
const SWEEP_T: [usize; 10] = [
    1,
    2,
    SEG - 1,
    SEG + 1,
    TILE - 1,
    TILE,
    TILE + 1,
    3 * TILE + 77,
    7 * TILE,
    1 << 16,
];

#[test]
fn host_backward_is_close_to_the_f64_shift_invariant_reference() {
    let mut worst = 0f64;
    let mut worst_at = String::new();
    for (k, &t) in SWEEP_T.iter().enumerate() {
        let mut line = format!("  backward T {t:>6}:");
        for (name, x) in base_rows(t, 100 + k as u32) {
            let mut case = 0f64;
            for (gname, g) in [
                ("mixed g", grads(t, 7 + k as u32)),
                ("g = 1", vec![1f32; t]),
            ] {
                let gx = host::backward(shape(1, t), &x, &g).unwrap();
                let e = grad_error(&x, &g, &gx, &format!("T {t} {name} {gname}"));
                case = case.max(e);
                if e > worst {
                    worst = e;
                    worst_at = format!("T {t}, {name}, {gname}");
                }
            }
            line += &format!(" {name} {case:.1e};");
        }
        println!("{line}");
    }
    println!(
        "logcumsumexp backward, host vs f64: worst {worst:.3e} × (1 + Σ|g|·exp(x−y)) (bound {GRAD_BOUND:.0e}; at {worst_at}; T 1..2^16)"
    );
}

/// A row on a grid of multiples of `q` (`k_j·q`, `|k_j| ≤ kmax`) and the
/// same row shifted by `c` (exact: every `c + k_j·q` is an f32).
fn grid_row(t: usize, seed: u32, q: f32, kmax: i32, c: f32) -> (Vec<f32>, Vec<f32>) {
    let mut r = lcg(seed);
    let base: Vec<f32> = (0..t)
        .map(|_| ((r() * (kmax as f32 + 0.999)) as i32) as f32 * q)
        .collect();
    let shifted: Vec<f32> = base.iter().map(|v| v + c).collect();
    for (b, s) in base.iter().zip(&shifted) {
        assert_eq!(f64::from(*s), f64::from(*b) + f64::from(c), "inexact shift");
    }
    (base, shifted)
}

/// The spacing of f32 values around `c`.
fn ulp(c: f32) -> f32 {
    let a = c.abs();
    f32::from_bits(a.to_bits() + 1) - a
}

#[test]
fn shifted_rows_give_the_same_gradient_bits() {
    // Near ±1e4 the grid is 2^-10: values across ±8 (rich gradients); near
    // 1e12 and 1e30 the grid is 2^16 and 2^76, so only ties share mass.
    let mut worst = 0f64;
    let mut count = 0;
    for &c in &[1e4f32, -1e4, 1e12, -1e12, 1e30, -1e30] {
        let q = ulp(c);
        let kmax = if c.abs() < 1e5 { 8 * 1024 } else { 3 };
        for (k, &t) in SWEEP_T.iter().enumerate() {
            let (base, shifted) = grid_row(t, 300 + k as u32, q, kmax, c);
            let g = grads(t, 50 + k as u32);
            let s = shape(1, t);
            let gb = host::backward(s, &base, &g).unwrap();
            let gs = host::backward(s, &shifted, &g).unwrap();
            assert_eq!(bits(&gs), bits(&gb), "T {t}, shift {c}");
            worst = worst.max(grad_error(&shifted, &g, &gs, &format!("T {t} shift {c}")));
            count += 1;
        }
    }
    println!(
        "logcumsumexp backward, rows shifted by ±1e4/±1e12/±1e30: the unshifted rows' bits in {count} cases, worst {worst:.3e} × (1 + Σ|g|·exp(x−y))"
    );
}

/// `L(x) = Σ g_t y_t(x)` in f64.
fn loss(x: &[f64], g: &[f32]) -> f64 {
    let (mut m, mut s, mut l) = (f64::NEG_INFINITY, 0f64, 0f64);
    for (&v, &gt) in x.iter().zip(g) {
        if v > m {
            s = s * (m - v).exp() + 1.0;
            m = v;
        } else {
            s += (v - m).exp();
        }
        l += f64::from(gt) * (m + s.ln());
    }
    l
}

#[test]
fn gradient_matches_f64_finite_differences() {
    for (t, seed) in [(40, 1), (300, 2), (TILE + 600, 3)] {
        let x = data(t, seed, 4.0);
        let g = grads(t, seed + 10);
        let gx = host::backward(shape(1, t), &x, &g).unwrap();
        let xd: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
        let h = 1e-6;
        for i in (0..t).step_by(t / 20 + 1) {
            let (mut up, mut dn) = (xd.clone(), xd.clone());
            up[i] += h;
            dn[i] -= h;
            let fd = (loss(&up, &g) - loss(&dn, &g)) / (2.0 * h);
            let err = (f64::from(gx[i]) - fd).abs();
            assert!(
                err <= 1e-5 * (1.0 + fd.abs()),
                "T {t} i {i}: {} vs {fd}",
                gx[i]
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Special values
// ---------------------------------------------------------------------------

#[test]
fn forward_special_values() {
    let (ni, pi) = (f32::NEG_INFINITY, f32::INFINITY);
    for t in [5, SEG + 3, TILE + 40] {
        let s = shape(1, t);
        // All −inf: −inf everywhere.
        let y = host::forward(s, &vec![ni; t]).unwrap();
        assert!(y.iter().all(|v| *v == ni));
        // A −inf run first: −inf until the first finite value.
        let mut x = data(t, 3, 5.0);
        x[..t / 2].fill(ni);
        let y = host::forward(s, &x).unwrap();
        assert!(y[..t / 2].iter().all(|v| *v == ni));
        assert!(y[t / 2..].iter().all(|v| v.is_finite()));
        // +inf: every later output +inf; NaN: every later output NaN.
        let mut x = data(t, 4, 5.0);
        x[t / 2] = pi;
        let y = host::forward(s, &x).unwrap();
        assert!(y[..t / 2].iter().all(|v| v.is_finite()));
        assert!(y[t / 2..].iter().all(|v| *v == pi));
        x[t - 2] = f32::NAN;
        let y = host::forward(s, &x).unwrap();
        assert!(y[t - 2..].iter().all(|v| v.is_nan()));
        assert!(y[t / 2..t - 2].iter().all(|v| *v == pi));
    }
}

#[test]
fn backward_special_values() {
    let (ni, pi, nan) = (f32::NEG_INFINITY, f32::INFINITY, f32::NAN);
    // T = 0 and T = 1.
    assert!(host::backward(shape(3, 0), &[], &[]).unwrap().is_empty());
    for v in [0.0f32, -3.5, 1e30] {
        let gx = host::backward(shape(1, 1), &[v], &[0.25]).unwrap();
        assert_eq!(gx, [0.25], "T = 1, x = {v}");
    }
    for t in [7, SEG + 5, TILE + 33] {
        let s = shape(1, t);
        let x = data(t, 9, 5.0);
        let g = grads(t, 10);
        // NaN anywhere in x: the whole row NaN.
        let mut xn = x.clone();
        xn[t - 1] = nan;
        let gx = host::backward(s, &xn, &g).unwrap();
        assert!(gx.iter().all(|v| v.is_nan()), "NaN x, T {t}");
        // NaN in g at k: NaN for i ≤ k, the NaN-free result after.
        let k = t / 2;
        let mut gn = vec![1f32; t];
        gn[k] = nan;
        let gx = host::backward(s, &x, &gn).unwrap();
        let mut g1 = vec![1f32; t];
        g1[k] = 0.0;
        let clean = host::backward(s, &x, &g1).unwrap();
        assert!(gx[..=k].iter().all(|v| v.is_nan()), "NaN g, T {t}");
        assert_eq!(bits(&gx[k + 1..]), bits(&clean[k + 1..]));
        // g = 0: zero gradient.
        let gx = host::backward(s, &x, &vec![0f32; t]).unwrap();
        assert!(gx.iter().all(|v| *v == 0.0));
        // −inf entries: gradient 0; an all −inf prefix contributes 0 and
        // its upstream gradient (even NaN) is ignored.
        let mut xi = x.clone();
        xi[..k].fill(ni);
        xi[t - 1] = ni;
        let mut gi = g.clone();
        gi[0] = nan;
        gi[1] = pi;
        let gx = host::backward(s, &xi, &gi).unwrap();
        assert!(gx[..k].iter().all(|v| *v == 0.0), "{:?}", &gx[..k.min(6)]);
        assert_eq!(gx[t - 1], 0.0);
        let mut gz = gi.clone();
        gz[..k].fill(0.0);
        let rest = host::backward(s, &xi, &gz).unwrap();
        assert_eq!(bits(&gx), bits(&rest));
        // The rest is the gradient of the row without its −inf prefix (the
        // reference handles the last −inf: exp(−inf − m) = 0).
        let (want, scale) = reference_grad(&xi[k..], &gz[k..]);
        for i in k..t {
            let err = (f64::from(gx[i]) - want[i - k]).abs() / (1.0 + scale[i - k]);
            assert!(err <= GRAD_BOUND, "after a −inf prefix, i {i}");
        }
        // An all −inf row: zero gradient, never NaN.
        let gx = host::backward(s, &vec![ni; t], &g).unwrap();
        assert!(gx.iter().all(|v| *v == 0.0));
    }
    // +inf: the limit of equal values growing together.
    let x = [1.0, pi, 2.0, pi, 3.0, -1.0];
    let g = [0.5f32, 0.25, 2.0, 4.0, 8.0, 16.0];
    let gx = host::backward(shape(1, 6), &x, &g).unwrap();
    let want = [
        0.5,
        0.25 + 2.0 + 2.0 + 4.0 + 8.0,
        0.0,
        2.0 + 4.0 + 8.0,
        0.0,
        0.0,
    ];
    for (i, (got, w)) in gx.iter().zip(want).enumerate() {
        assert!((got - w).abs() <= 1e-6 * w, "+inf row, i {i}: {got} vs {w}");
    }
    // Finite entries before the first +inf keep only the outputs before it.
    let x = [0.0f32, 0.0, pi];
    let gx = host::backward(shape(1, 3), &x, &[1.0, 1.0, 1.0]).unwrap();
    assert!((gx[0] - 1.5).abs() < 1e-6 && (gx[1] - 0.5).abs() < 1e-6 && gx[2] == 1.0);
}

// ---------------------------------------------------------------------------
// Simulator and GPU against the host model
// ---------------------------------------------------------------------------

/// Rows with special values: all −inf, a −inf run first, +inf inside, NaN
/// inside (x), and a `−0` first element.
fn specials(rows: usize, t: usize, seed: u32) -> Vec<f32> {
    let mut x = data(rows * t, seed, 5.0);
    if rows >= 5 {
        x[..t].fill(f32::NEG_INFINITY);
        x[t..t + t / 2].fill(f32::NEG_INFINITY);
        x[2 * t + t / 2] = f32::INFINITY;
        x[3 * t + t / 3] = f32::NAN;
        x[4 * t] = -0.0;
    }
    x
}

/// Upstream gradients with a NaN, an infinity and zeros.
fn special_grads(n: usize, t: usize, seed: u32) -> Vec<f32> {
    let mut g = grads(n, seed);
    if n >= 6 * t {
        g[5 * t + t / 2] = f32::NAN;
        g[5 * t + t / 4] = f32::INFINITY;
    }
    g
}

/// Both paths of both passes on `ctx` against the host model.
fn check_sim(ctx: &Context, rows: usize, t: usize, seed: u32) {
    let s = shape(rows, t);
    let x = specials(rows, t, seed);
    let g = special_grads(rows * t, t, seed + 1);
    let y = host::forward(s, &x).unwrap();
    let gx = host::backward(s, &x, &g).unwrap();
    let st = ctx.default_stream();
    for path in [Path::Row, Path::Split] {
        let sm = ctx.sm();
        let got = launch::forward_on_path(&st, s, path, &x).unwrap();
        assert_eq!(bits(&got), bits(&y), "forward {rows}×{t} {path:?} {sm}");
        let got = launch::backward_on_path(&st, s, path, &x, &g).unwrap();
        assert_eq!(bits(&got), bits(&gx), "backward {rows}×{t} {path:?} {sm}");
    }
}

#[test]
fn sim_equals_host_on_both_paths_ragged_shapes_and_special_values() {
    let ctx = Context::sim(Sm::Sm80);
    for (rows, t) in [
        (6, 1),
        (6, 2),
        (6, SEG - 1),
        (6, SEG + 1),
        (6, 1000),
        (6, TILE - 1),
        (6, TILE),
        (6, TILE + 1),
        (6, 2 * TILE + 3),
        (1, 3 * TILE + 77),
        // Odd item counts on both paths (3 rows, 9 tiles): lcse_fwd takes
        // FWD_CHAINS items a CTA, the last CTA's second slot empty.
        (3, 2 * TILE + 5),
    ] {
        check_sim(&ctx, rows, t, t as u32);
    }
}

/// Segment 5 of each row set to a mix of `±∞`, NaN and values above
/// `exp`'s clamp (89): the segment aggregate's `+∞` and NaN cases (seen in
/// the later segments' outputs, through the carries), on both paths, on
/// targets with and without `max.NaN`.
#[test]
fn sim_equals_host_on_segments_mixing_infinities_nan_and_large_values() {
    let (ni, pi, nan) = (f32::NEG_INFINITY, f32::INFINITY, f32::NAN);
    let neg_nan = f32::from_bits(0xffc0_0000);
    let patterns: [&[(usize, f32)]; 9] = [
        &[(3, pi), (10, 100.0), (11, 1e30), (12, 89.5), (13, f32::MAX)],
        &[(3, pi), (20, nan), (21, 1e30)],
        &[(0, nan), (1, 1e30), (2, 200.0), (3, ni), (4, pi)],
        &[(0, neg_nan), (5, 95.0)],
        &[(30, f32::MAX), (31, pi)],
        &[(0, 1e30), (1, -1e30), (7, ni), (9, 3e38)],
        &[],
        &[(31, pi)],
        &[(0, nan)],
    ];
    let rows = patterns.len() + 2;
    for t in [TILE, TILE + 40] {
        let s = shape(rows, t);
        let mut x = data(s.len(), 41, 5.0);
        for (r, p) in patterns.iter().enumerate() {
            let seg = &mut x[r * t + 5 * SEG..r * t + 6 * SEG];
            if r == 6 || r == 7 {
                seg.fill(ni);
            }
            for &(k, v) in p.iter() {
                seg[k] = v;
            }
        }
        // Two whole segments of NaN and of +∞.
        x[9 * t + 5 * SEG..9 * t + 6 * SEG].fill(nan);
        x[10 * t + 5 * SEG..10 * t + 6 * SEG].fill(pi);
        let y = host::forward(s, &x).unwrap();
        for sm in [Sm::Sm75, Sm::Sm80, Sm::Sm90] {
            let ctx = Context::sim(sm);
            let st = ctx.default_stream();
            for path in [Path::Row, Path::Split] {
                let got = launch::forward_on_path(&st, s, path, &x).unwrap();
                assert_eq!(bits(&got), bits(&y), "T {t} {path:?} {sm}");
            }
        }
    }
}

#[test]
fn sim_equals_host_on_every_target() {
    for sm in Sm::ALL {
        check_sim(&Context::sim(sm), 6, TILE + 36, 5);
    }
}

#[test]
fn sim_equals_host_on_long_rows_and_shifted_rows() {
    let ctx = Context::sim(Sm::Sm90);
    let st = ctx.default_stream();
    let t = 1 << 16;
    let (base, shifted) = grid_row(t, 77, ulp(1e4), 8 * 1024, 1e4);
    let x: Vec<f32> = [base, shifted, data(t, 78, 30.0)].concat();
    let g = grads(3 * t, 79);
    let s = shape(3, t);
    let y = host::forward(s, &x).unwrap();
    let gx = host::backward(s, &x, &g).unwrap();
    for path in [Path::Row, Path::Split] {
        assert_eq!(
            bits(&launch::forward_on_path(&st, s, path, &x).unwrap()),
            bits(&y)
        );
        assert_eq!(
            bits(&launch::backward_on_path(&st, s, path, &x, &g).unwrap()),
            bits(&gx)
        );
    }
}

#[test]
fn split_rule_and_auto_path() {
    let s = shape(3, 2 * TILE);
    assert!(launch::split_rule(132, s));
    assert!(!launch::split_rule(132, shape(528, 2 * TILE)));
    assert!(!launch::split_rule(132, shape(1, TILE)));
    // The simulator has 4 multiprocessors: 3 rows of two tiles split (one
    // launch, with its look-back scratch: one more allocation), 16 rows do
    // not; both give the host model's bits.
    let ctx = Context::sim(Sm::Sm80);
    let st = ctx.default_stream();
    let mut allocs = Vec::new();
    for rows in [3, 16] {
        let s = shape(rows, 2 * TILE);
        let x = data(s.len(), 3, 4.0);
        let (before, allocs0) = (st.traffic(), ctx.traffic().allocations);
        let y = launch::forward_on(&st, s, &x).unwrap();
        let after = st.traffic();
        assert_eq!(after.launches - before.launches, 1, "rows {rows}");
        allocs.push(ctx.traffic().allocations - allocs0);
        assert_eq!(bits(&y), bits(&host::forward(s, &x).unwrap()));
    }
    assert_eq!(allocs[0], allocs[1] + 1, "{allocs:?}");
}

#[test]
fn slice_api_on_every_backend_but_cuda_and_device_entry_points() {
    let s = shape(3, 600);
    let x = data(s.len(), 5, 6.0);
    let g = grads(s.len(), 6);
    let want = host::forward(s, &x).unwrap();
    let want_gx = host::backward(s, &x, &g).unwrap();
    for backend in [Backend::Host, Backend::Sim] {
        let (y, ran) = lcse::forward(backend, s, &x).unwrap();
        let expect = if backend == Backend::Host {
            Ran::Host
        } else {
            Ran::Sim
        };
        assert_eq!(ran, expect);
        assert_eq!(bits(&y), bits(&want));
        let (gx, ran) = lcse::backward(backend, s, &x, &g).unwrap();
        assert_eq!(ran, expect);
        assert_eq!(bits(&gx), bits(&want_gx));
    }
    // Device buffers: forward and backward without a download.
    let ctx = Context::sim(Sm::Sm80);
    let st = ctx.default_stream();
    let (dx, dg) = (st.upload(&x).unwrap(), st.upload(&g).unwrap());
    let mut dy = ctx.alloc::<f32>(s.len()).unwrap();
    let mut dgx = ctx.alloc::<f32>(s.len()).unwrap();
    let before = st.traffic();
    lcse::forward_dev(&st, s, &dx, &mut dy).unwrap();
    lcse::backward_dev(&st, s, &dx, &dg, &mut dgx).unwrap();
    assert_eq!(st.traffic().since(&before).downloads, 0);
    assert_eq!(bits(&dy.to_vec().unwrap()), bits(&want));
    assert_eq!(bits(&dgx.to_vec().unwrap()), bits(&want_gx));
}

#[test]
fn bad_input_is_a_typed_error() {
    let e = host::forward(shape(2, 3), &[1.0; 5]).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("5") && m.contains("2 × 3")),
        "{e}"
    );
    let e = Shape::new(usize::MAX, 3).unwrap_err();
    assert!(e.to_string().contains("overflows"), "{e}");
    let e = Shape::new(1, 1 << 31).unwrap_err();
    assert!(e.to_string().contains("2^31"), "{e}");
    let e = Shape::new(1 << 30, 2 * TILE).unwrap_err();
    assert!(e.to_string().contains("tiles"), "{e}");
    let e = host::backward(shape(2, 3), &[1.0; 6], &[1.0; 5]).unwrap_err();
    assert!(e.to_string().contains("g has 5"), "{e}");
    let ctx = Context::sim(Sm::Sm80);
    let st = ctx.default_stream();
    let x = st.upload(&[1f32; 6]).unwrap();
    let mut y = ctx.alloc::<f32>(5).unwrap();
    let e = lcse::forward_dev(&st, shape(2, 3), &x, &mut y).unwrap_err();
    assert!(e.to_string().contains("y has 5"), "{e}");
    let mut gx = ctx.alloc::<f32>(6).unwrap();
    let e = lcse::backward_dev(&st, shape(2, 3), &x, &y, &mut gx).unwrap_err();
    assert!(e.to_string().contains("g has 5"), "{e}");
    // Empty shapes are fine and launch nothing.
    assert!(host::forward(shape(0, 7), &[]).unwrap().is_empty());
    assert!(host::forward(shape(3, 0), &[]).unwrap().is_empty());
    assert_eq!(launch::forward_on(&st, shape(3, 0), &[]).unwrap().len(), 0);
    assert_eq!(
        launch::backward_on(&st, shape(0, 9), &[], &[])
            .unwrap()
            .len(),
        0
    );
    assert_eq!(st.traffic().launches, 0);
}

#[test]
fn ptx_has_no_approximate_instruction_or_float_atomic_on_any_sm() {
    for sm in Sm::ALL {
        for m in lcse::ptx::variants(sm).unwrap() {
            for bad in [".approx", "ex2.", "lg2.", ".ftz", "rcp.", "sqrt."] {
                assert!(
                    !m.ptx.contains(bad),
                    "{} on {sm} contains `{bad}`",
                    m.kernel
                );
            }
            for line in m.ptx.lines() {
                let ins = line.trim_start().trim_start_matches(['@', '!']);
                // The split path's look-back hands tickets and published
                // words between CTAs by integer atomics (no float atomic,
                // no `red`); no other kernel has one.
                let integer_atomic = [
                    "atom.global.add.u32",
                    "atom.global.add.u64",
                    "atom.global.exch.b64",
                ]
                .iter()
                .any(|a| ins.starts_with(a));
                let allowed = m.kernel == lcse::ptx::FWD_SPLIT && integer_atomic;
                assert!(
                    allowed || (!ins.starts_with("atom.") && !ins.starts_with("red.")),
                    "{} on {sm}: {line}",
                    m.kernel
                );
                // The one division is the backward's g / S, rounded to
                // nearest.
                if ins.contains("div.") && ins.contains(".f32") {
                    assert!(ins.starts_with("div.rn.f32"), "{line}");
                }
            }
        }
    }
}

#[test]
fn gpu_logcumsumexp_matches_the_host_model() {
    let Some(ctx) = cuda_for_tests() else { return };
    let st = ctx.default_stream();
    // Many tiles per row (both paths), single-tile rows, many short rows;
    // smaller on the driver emulator (kernels on the simulator).
    let shapes: &[(usize, usize)] = if ptxsmith::testing::small_shapes(&ctx) {
        &[(5, 4096), (3, 2 * TILE + 5), (256, 33)]
    } else {
        &[(64, 4096), (2, 1 << 20), (300, 3 * TILE + 5), (4096, 33)]
    };
    for &(rows, t) in shapes {
        let s = shape(rows, t);
        let x = specials(rows, t, 9);
        let g = special_grads(rows * t, t, 10);
        let y = host::forward(s, &x).unwrap();
        let gx = host::backward(s, &x, &g).unwrap();
        for path in [Path::Row, Path::Split] {
            assert_eq!(
                bits(&launch::forward_on_path(&st, s, path, &x).unwrap()),
                bits(&y),
                "forward {rows}×{t} {path:?}"
            );
            assert_eq!(
                bits(&launch::backward_on_path(&st, s, path, &x, &g).unwrap()),
                bits(&gx),
                "backward {rows}×{t} {path:?}"
            );
        }
    }
    // The slice API on the device.
    let s = shape(3, 700);
    let (x, g) = (specials(3, 700, 11), grads(s.len(), 12));
    let (got, ran) = launch::forward(Backend::Cuda, s, &x).unwrap();
    assert_eq!(ran, Ran::Cuda);
    assert_eq!(bits(&got), bits(&host::forward(s, &x).unwrap()));
    let (got, ran) = launch::backward(Backend::Cuda, s, &x, &g).unwrap();
    assert_eq!(ran, Ran::Cuda);
    assert_eq!(bits(&got), bits(&host::backward(s, &x, &g).unwrap()));
}

#[test]
fn raw_entry_points_run_on_foreign_memory() {
    raw_entry_points_on(&Context::sim(Sm::Sm80));
}

/// The same on plain driver allocations of a GPU or the driver emulator
/// (SKIP without one).
#[test]
fn gpu_raw_entry_points_run_on_driver_allocations() {
    let Some(ctx) = cuda_for_tests() else { return };
    raw_entry_points_on(&ctx);
}

fn raw_entry_points_on(ctx: &Context) {
    // The stream as another stack would hand it over.
    // SAFETY: this context's own default stream, alive throughout.
    let st = unsafe { Stream::from_raw(ctx, ctx.default_stream().raw()) }.unwrap();
    let put = |data: &[f32]| foreign_put(ctx, data);
    let get = |addr: u64, n: usize| foreign_get::<f32>(ctx, addr, n);
    // 3 rows of two tiles: the split path on the simulator (4
    // multiprocessors), the row path on a large GPU.
    let s = shape(3, 2 * TILE + 8);
    let x = data(s.len(), 41, 8.0);
    let g = data(s.len(), 42, 1.0);
    let y = host::forward(s, &x).unwrap();
    let gx = host::backward(s, &x, &g).unwrap();
    let (px, pg, py) = (put(&x), put(&g), put(&vec![0.0; s.len()]));
    let pgx = put(&vec![0.0; s.len()]);
    // SAFETY: live allocations of rows × T f32s; outputs overlap no input;
    // `st` is this context's stream.
    unsafe {
        lcse::forward_raw(&st, s, px, py).unwrap();
        lcse::backward_raw(&st, s, px, pg, pgx).unwrap();
    }
    ctx.synchronize().unwrap();
    assert_eq!(bits(&get(py, s.len())), bits(&y));
    assert_eq!(bits(&get(pgx, s.len())), bits(&gx));
    // In place (x and y the same address), and 4-byte aligned addresses
    // (the scalar tile path although T is a multiple of 4).
    let pin = put(&[vec![0.0], x.clone()].concat());
    // SAFETY: as above; the forward may run in place; `pin + 4` holds the
    // rows × T values.
    unsafe { lcse::forward_raw(&st, s, pin + 4, pin + 4) }.unwrap();
    ctx.synchronize().unwrap();
    assert_eq!(bits(&get(pin, s.len() + 1)[1..]), bits(&y));
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Rows on a grid shifted by a power of two times a large constant
        /// give the unshifted rows' gradient bits, and both stay within the
        /// bound of the f64 reference; the forward stays within its bound.
        #[test]
        fn host_model_is_shift_invariant_and_within_bounds(
            t in 1usize..300,
            seed in any::<u32>(),
            kmax in 1i32..2000,
            shift_exp in 0i32..100,
            negative in any::<bool>(),
        ) {
            let c = 2f32.powi(shift_exp) * if negative { -1.5 } else { 1.5 };
            let q = ulp(c).max(1.0 / 1024.0);
            let (base, shifted) = grid_row(t, seed, q, kmax, c);
            let g = grads(t, seed ^ 0x5555);
            let s = shape(1, t);
            let gb = host::backward(s, &base, &g).unwrap();
            let gs = host::backward(s, &shifted, &g).unwrap();
            prop_assert_eq!(bits(&gs), bits(&gb));
            grad_error(&shifted, &g, &gs, "proptest");
            let y = host::forward(s, &base).unwrap();
            for (got, want) in y.iter().zip(reference(&base)) {
                let err = (f64::from(*got) - want).abs() / (want.abs().max(1.0) * 2f64.powi(-23));
                prop_assert!(err <= BOUND, "{got} vs {want}");
            }
        }

        /// `Shape::new` accepts exactly the documented limits.
        #[test]
        fn shape_limits(rows in 0usize..1 << 32, t in 0usize..1 << 32) {
            let ok = rows.checked_mul(t).is_some()
                && rows < 1 << 31
                && t < 1 << 31
                && rows * t.div_ceil(TILE) <= host::MAX_ROW_TILES;
            prop_assert_eq!(Shape::new(rows, t).is_ok(), ok, "{} × {}", rows, t);
        }
    }
}

// ---------------------------------------------------------------------------
// Long rows: the carry tree (more than 64 tiles, where it differs from a
// chain of tile carries)
// ---------------------------------------------------------------------------

/// `rows` rows of `t`: the first with a half tile of `−∞` at the start
/// and a tile of `−∞` in the middle; a second (when `rows = 2`) with a
/// `+∞` near its end and, when `nan`, a NaN in `x` and one in `g`.
fn run_inputs(rows: usize, t: usize, seed: u32, nan: bool) -> (Vec<f32>, Vec<f32>) {
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
fn check_runs(rows: usize, tiles: usize, extra: usize, seed: u32, nan: bool) {
    check_run_paths(rows, tiles, extra, seed, nan, &[Path::Row, Path::Split]);
}

fn check_run_paths(rows: usize, tiles: usize, extra: usize, seed: u32, nan: bool, paths: &[Path]) {
    let t = tiles * TILE + extra;
    let s = Shape::new(rows, t).unwrap();
    let (x, g) = run_inputs(rows, t, seed, nan);
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
    check_runs(2, 1, 0, 1, false);
    check_runs(2, 1, 9, 2, true);
    check_runs(2, 2, 0, 3, true);
}

/// Two runs of 32 tiles: the tree's carries are the chain's.
#[test]
fn sim_equals_host_on_a_row_of_64_tiles() {
    check_runs(1, 64, 0, 4, false);
}

/// Three runs (the third of one tile, then of three).
#[test]
fn sim_equals_host_on_rows_of_65_and_67_tiles() {
    check_runs(1, 64, 5, 5, false);
    check_runs(1, 67, 0, 6, false);
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
    check_runs(1, 1100, 7, 7, false);
    check_run_paths(1, 4096 + 33, 11, 8, false, &[Path::Split]);
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
