//! Accuracy of the host mirror `ptxsmith::math` (and so of the DSL routines,
//! which `tests/math_sim.rs` shows equal to it bit for bit) against the
//! correctly rounded CORE-MATH functions of the `core-math` crate.
//!
//! * `exhaustive_{exp,log,log1p}` (`#[ignore]`, run by CI with
//!   `--include-ignored` in release mode): every one of the 2^32 inputs,
//!   on 2 threads; asserts at most 1 ulp and prints the share of correctly
//!   rounded results. `cargo test --release --test math_exhaustive --
//!   --ignored --nocapture` shows the table quoted in `src/math.rs`.
//! * `sampled_*`: the special values, every power of two and its
//!   neighbours, and every 2039th bit pattern (≈ 2.1 M inputs), fast.
//! * `polynomial_coefficients_rederive`: re-runs the derivation of every
//!   constant of `src/math.rs` and checks it bit for bit.
//!
//! Distance: the bit patterns' distance in the ordered integer encoding
//! (±0 both at 0); a NaN must be answered by a NaN, a zero or infinite
//! result must be exactly the correctly rounded one (so overflow and
//! underflow to zero happen exactly where they should), see [`distance`].

use rayon::prelude::*;
use std::time::Instant;

use ptxsmith::math::{
    self, EXP_POLY, LAE_B, LAE_B_LO, LAE_CLAMP, LAE_KAPPA, LAE_MAGIC, LAE_SPLIT, LN2_HI, LN2_HI16,
    LN2_LO, LN2_LO16, LOG_POLY, LOG2_E, ROUND_MAGIC, SOFTPLUS_EXP_POLY, SOFTPLUS_LOG_POLY,
    TWO_THIRDS_BITS,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Func {
    Exp,
    Log,
    Log1p,
}

impl Func {
    fn name(self) -> &'static str {
        match self {
            Func::Exp => "exp",
            Func::Log => "log",
            Func::Log1p => "log1p",
        }
    }
}

#[inline(always)]
fn ours(f: Func, x: f32) -> f32 {
    match f {
        Func::Exp => math::exp_f32(x),
        Func::Log => math::log_f32(x),
        Func::Log1p => math::log1p_f32(x),
    }
}

fn reference(f: Func, x: f32) -> f32 {
    match f {
        Func::Exp => core_math::expf(x),
        Func::Log => core_math::logf(x),
        Func::Log1p => core_math::log1pf(x),
    }
}

/// Position in the ordered integer encoding (±0 both 0).
fn ordered(b: u32) -> i64 {
    if b & 0x8000_0000 != 0 {
        -i64::from(b & 0x7fff_ffff)
    } else {
        i64::from(b)
    }
}

/// Ulps between `got` and the correctly rounded `want`; `None` for a NaN
/// mismatch, a zero where the correctly rounded result is not that very
/// zero (wrong sign, or underflow to 0 where the result is the smallest
/// subnormal, or the reverse), or an infinity where the correctly rounded
/// result is finite (or the reverse): all contract violations.
fn distance(got: f32, want: f32) -> Option<u64> {
    if got.is_nan() || want.is_nan() {
        return (got.is_nan() && want.is_nan()).then_some(0);
    }
    if (got == 0.0 || want == 0.0) && got.to_bits() != want.to_bits() {
        return None;
    }
    if got.is_infinite() != want.is_infinite() {
        return None;
    }
    Some((ordered(got.to_bits()) - ordered(want.to_bits())).unsigned_abs())
}

#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    inputs: u64,
    exact: u64,
    one: u64,
    /// Inputs with a result worse than 1 ulp (or a NaN / zero-sign miss).
    bad: u64,
    first_bad: Option<u32>,
    /// Inputs whose correctly rounded result is finite, non-zero, not 1 and
    /// not the input itself, and how many of those we round correctly.
    nontrivial: u64,
    nontrivial_exact: u64,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.inputs += o.inputs;
        self.exact += o.exact;
        self.one += o.one;
        self.bad += o.bad;
        self.first_bad = self.first_bad.or(o.first_bad);
        self.nontrivial += o.nontrivial;
        self.nontrivial_exact += o.nontrivial_exact;
    }
}

/// Inputs per chunk of the sweeps: each chunk's results of ours are
/// computed in one loop, the references in another, then compared (the
/// same work as one loop over both, about twice as fast: our inlined
/// routine no longer shares a loop with the reference's call).
const CHUNK: usize = 2048;

/// Fills `buf` from `bits`; how many it took (fewer than `CHUNK` only at
/// the end). A loop over chunks, not a closure per chunk: a closure does
/// not inherit the caller's `target_feature(enable = "fma")`, and without
/// it every `mul_add` of our routines is a library call.
#[inline(always)]
fn fill(buf: &mut [u32; CHUNK], bits: &mut impl Iterator<Item = u32>) -> usize {
    let mut n = 0;
    while n < CHUNK {
        let Some(b) = bits.next() else { break };
        buf[n] = b;
        n += 1;
    }
    n
}

#[inline(always)]
fn tally_range(f: Func, bits: impl Iterator<Item = u32>) -> Tally {
    let mut t = Tally::default();
    let (mut got, mut want) = ([0f32; CHUNK], [0f32; CHUNK]);
    let (mut buf, mut bits) = ([0u32; CHUNK], bits);
    loop {
        let n = fill(&mut buf, &mut bits);
        if n == 0 {
            break;
        }
        let c = &buf[..n];
        for (g, &b) in got.iter_mut().zip(c) {
            *g = ours(f, f32::from_bits(b));
        }
        for (w, &b) in want.iter_mut().zip(c) {
            *w = reference(f, f32::from_bits(b));
        }
        t.inputs += n as u64;
        for ((&b, &got), &want) in c.iter().zip(&got).zip(&want) {
            let x = f32::from_bits(b);
            // equal bits are distance 0 (the common case, no branches of
            // `distance` taken)
            let d = if got.to_bits() == want.to_bits() {
                Some(0)
            } else {
                distance(got, want)
            };
            match d {
                Some(0) => t.exact += 1,
                Some(1) => t.one += 1,
                _ => {
                    t.bad += 1;
                    t.first_bad.get_or_insert(b);
                }
            }
            if want.is_finite() && want != 0.0 && want != 1.0 && want != x {
                t.nontrivial += 1;
                t.nontrivial_exact += u64::from(d == Some(0));
            }
        }
    }
    t
}

/// The same loop compiled with the FMA instructions enabled, so that
/// `f32::mul_add` is one instruction rather than a `fmaf` library call
/// (same result: both are correctly rounded).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
fn tally_block_fma(f: Func, lo: u64, hi: u64) -> Tally {
    tally_range(f, (lo..hi).map(|b| b as u32))
}

fn tally_block(f: Func, lo: u64, hi: u64) -> Tally {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the feature the function was compiled for.
        return unsafe { tally_block_fma(f, lo, hi) };
    }
    tally_range(f, (lo..hi).map(|b| b as u32))
}

fn exhaustive(f: Func) {
    const BLOCKS: u64 = 256;
    let t0 = Instant::now();
    // Blocks on every core, folded in block order (`first_bad` is the
    // lowest failing input).
    let total = (0..BLOCKS)
        .into_par_iter()
        .map(|blk| tally_block(f, (blk << 32) / BLOCKS, ((blk + 1) << 32) / BLOCKS))
        .reduce(Tally::default, |mut a, b| {
            a.add(&b);
            a
        });
    let secs = t0.elapsed().as_secs_f64();
    assert_eq!(total.inputs, 1 << 32);
    let max = if total.bad > 0 {
        ">1"
    } else if total.one > 0 {
        "1"
    } else {
        "0"
    };
    println!(
        "{:>5}: max error {max} ulp; {} of 2^32 inputs ({:.4} %) correctly rounded, {} at 1 ulp, \
         {} worse; over the {} inputs with a nontrivial result {:.4} % correctly rounded \
         [{secs:.1} s]",
        f.name(),
        total.exact,
        100.0 * total.exact as f64 / total.inputs as f64,
        total.one,
        total.bad,
        total.nontrivial,
        100.0 * total.nontrivial_exact as f64 / total.nontrivial as f64,
    );
    assert_eq!(
        total.bad,
        0,
        "{}: {} inputs beyond 1 ulp, e.g. bits {:#010x}",
        f.name(),
        total.bad,
        total.first_bad.unwrap_or(0)
    );
}

#[test]
#[ignore = "exhaustive: all 2^32 inputs (about a minute in release mode)"]
fn exhaustive_exp() {
    exhaustive(Func::Exp);
}

#[test]
#[ignore = "exhaustive: all 2^32 inputs (about a minute in release mode)"]
fn exhaustive_log() {
    exhaustive(Func::Log);
}

#[test]
#[ignore = "exhaustive: all 2^32 inputs (about a minute in release mode)"]
fn exhaustive_log1p() {
    exhaustive(Func::Log1p);
}

// ---------------------------------------------------------------------------
// Fast: special values and a sample
// ---------------------------------------------------------------------------

/// Special values, every power of two with its two neighbours (both signs),
/// and the thresholds of the three functions with their neighbours.
fn interesting_inputs() -> Vec<u32> {
    let mut v = vec![
        0,
        0x8000_0000,
        0x7f80_0000,
        0xff80_0000,
        0x7fc0_0000,
        0xffc0_0000,
        0x7f80_0001,
        0x7fff_ffff,
        0x0000_0001,
        0x007f_ffff,
        0x7f7f_ffff,
        0xff7f_ffff,
        0x8000_0001,
        0x807f_ffff,
    ];
    for e in 0..=255u32 {
        for s in [0, 0x8000_0000] {
            let p = s | (e << 23);
            v.extend([p.wrapping_sub(1), p, p + 1]);
        }
    }
    for t in [
        88.722_83_f32,
        88.722_84,
        89.0,
        -87.336_54,
        -103.972_08,
        -103.972_07,
        -110.0,
        1.0,
        -1.0,
        1.0 / 3.0,
        -1.0 / 3.0,
        2.0 / 3.0,
        4.0 / 3.0,
        core::f32::consts::LN_2,
    ] {
        let b = t.to_bits();
        for d in 0..8 {
            v.extend([b.wrapping_sub(d), b + d]);
        }
    }
    v
}

fn sampled(f: Func) {
    let t = tally_range(f, interesting_inputs().into_iter());
    assert_eq!(
        t.bad,
        0,
        "{}: special input {:#010x}",
        f.name(),
        t.first_bad.unwrap_or(0)
    );
    let t = tally_range(f, (0..u32::MAX).step_by(2039));
    assert_eq!(
        t.bad,
        0,
        "{}: sampled input {:#010x}",
        f.name(),
        t.first_bad.unwrap_or(0)
    );
    println!(
        "{}: {} sampled inputs, {:.3} % correctly rounded, the rest within 1 ulp",
        f.name(),
        t.inputs,
        100.0 * t.exact as f64 / t.inputs as f64
    );
}

#[test]
fn sampled_exp() {
    sampled(Func::Exp);
}

#[test]
fn sampled_log() {
    sampled(Func::Log);
}

#[test]
fn sampled_log1p() {
    sampled(Func::Log1p);
}

fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

#[test]
fn special_values_are_exact() {
    use math::{exp_f32 as exp, log_f32 as log, log1p_f32 as log1p};
    let (inf, nan) = (f32::INFINITY, f32::NAN);
    let cases: [(f32, f32); 30] = [
        (exp(0.0), 1.0),
        (exp(-0.0), 1.0),
        (exp(-inf), 0.0),
        (exp(inf), inf),
        (exp(nan), nan),
        (exp(88.722_84), inf),
        (exp(f32::MAX), inf),
        (exp(-200.0), 0.0),
        (exp(f32::from_bits(1)), 1.0),
        (exp(-f32::from_bits(1)), 1.0),
        (log(1.0), 0.0),
        (log(0.0), -inf),
        (log(-0.0), -inf),
        (log(-1.0), nan),
        (log(-f32::from_bits(1)), nan),
        (log(-inf), nan),
        (log(inf), inf),
        (log(nan), nan),
        (log1p(-1.0), -inf),
        (log1p(-1.0 - f32::EPSILON), nan),
        (log1p(-inf), nan),
        (log1p(inf), inf),
        (log1p(0.0), 0.0),
        (log1p(-0.0), -0.0),
        (log1p(nan), nan),
        (log1p(f32::from_bits(1)), f32::from_bits(1)),
        (log1p(-f32::from_bits(1)), -f32::from_bits(1)),
        (log1p(f32::MAX), core_math::log1pf(f32::MAX)),
        (log(f32::from_bits(1)), core_math::logf(f32::from_bits(1))),
        (
            exp(f32::from_bits(0xc2ce_8ed0)),
            core_math::expf(f32::from_bits(0xc2ce_8ed0)),
        ),
    ];
    for (i, (got, want)) in cases.into_iter().enumerate() {
        assert!(
            same(got, want),
            "case {i}: got {got:e} ({:#010x}), want {want:e}",
            got.to_bits()
        );
    }
}

#[test]
fn log_add_exp_contract() {
    use math::log_add_exp as lae;
    let (inf, nan) = (f32::INFINITY, f32::NAN);
    for v in [0.0, -0.0, -3.5, 1e30, -1e30, f32::MAX, -inf, inf, nan] {
        assert!(lae(nan, v).is_nan() && lae(v, nan).is_nan(), "{v}");
        if !v.is_nan() {
            assert_eq!(lae(inf, v), inf, "{v}");
            assert_eq!(lae(v, inf), inf, "{v}");
        }
    }
    assert_eq!(lae(-inf, -inf), -inf);
    assert_eq!(lae(-inf, 2.5), 2.5);
    assert_eq!(lae(2.5, -inf), 2.5);
    assert_eq!(lae(f32::MAX, f32::MAX), f32::MAX);
    assert_eq!(lae(f32::MIN, -inf), f32::MIN);
    // signed zeros: log(1) is +0, log 2 is f32(ln 2) for every zero pair
    assert_eq!(lae(-0.0, -inf).to_bits(), 0);
    assert_eq!(lae(-inf, -0.0).to_bits(), 0);
    assert_eq!(lae(0.0, -inf).to_bits(), 0);
    for (a, b) in [(0.0, 0.0), (-0.0, 0.0), (0.0, -0.0), (-0.0, -0.0)] {
        assert_eq!(lae(a, b), core::f32::consts::LN_2, "{a} {b}");
    }
    // symmetric, and never below the larger argument
    let mut s = 0x1234_5678u32;
    for _ in 0..200_000 {
        s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let a = f32::from_bits(s);
        s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let b = if s.is_multiple_of(3) {
            a - (s >> 8) as f32 * 1e-6
        } else {
            f32::from_bits(s) % 200.0
        };
        let (x, y) = (lae(a, b), lae(b, a));
        assert!(same(x, y), "{a} {b}: {x} {y}");
        if !x.is_nan() {
            assert!(x >= a.max(b), "{a} {b}: {x}");
        }
    }
}

// ---------------------------------------------------------------------------
// The derivation of the constants
// ---------------------------------------------------------------------------

/// Solve `a·x = b` by Gaussian elimination with partial pivoting.
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Vec<f64> {
    let n = b.len();
    for c in 0..n {
        let p = (c..n)
            .max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))
            .unwrap();
        a.swap(c, p);
        b.swap(c, p);
        for r in c + 1..n {
            let m = a[r][c] / a[c][c];
            let (upper, lower) = a.split_at_mut(r);
            for (v, p) in lower[0][c..].iter_mut().zip(&upper[c][c..]) {
                *v -= m * p;
            }
            b[r] -= m * b[c];
        }
    }
    let mut x = vec![0.0; n];
    for r in (0..n).rev() {
        let mut s = b[r];
        for k in r + 1..n {
            s -= a[r][k] * x[k];
        }
        x[r] = s / a[r][r];
    }
    x
}

/// Monomial coefficients of the degree-`n` polynomial interpolating `g` at
/// the `n + 1` Chebyshev nodes of `[lo, hi]`.
fn chebyshev_fit(g: impl Fn(f64) -> f64, lo: f64, hi: f64, n: usize) -> Vec<f64> {
    let m = n + 1;
    let (mid, half) = ((lo + hi) / 2.0, (hi - lo) / 2.0);
    let mut a = Vec::new();
    let mut b = Vec::new();
    for i in 0..m {
        let x = mid + half * (std::f64::consts::PI * (i as f64 + 0.5) / m as f64).cos();
        a.push((0..m).map(|j| x.powi(j as i32)).collect());
        b.push(g(x));
    }
    solve(a, b)
}

/// `(e^r − 1 − r)/r²` by its power series.
fn exp_p(r: f64) -> f64 {
    let (mut term, mut s, mut n) = (0.5, 0.0, 2.0);
    for _ in 0..30 {
        s += term;
        n += 1.0;
        term *= r / n;
    }
    s
}

/// `2·(log1p(f) − f + f²/2)/f³` by its power series.
fn log_q(f: f64) -> f64 {
    let (mut s, mut pw) = (0.0, 1.0);
    for n in 3..80 {
        let sign = if n % 2 == 1 { 1.0 } else { -1.0 };
        s += sign * pw / n as f64;
        pw *= f;
    }
    2.0 * s
}

fn f32_bits(v: &[f64]) -> Vec<u32> {
    v.iter().map(|&c| (c as f32).to_bits()).collect()
}

#[test]
fn polynomial_coefficients_rederive() {
    let exp_fit = chebyshev_fit(exp_p, -0.3467, 0.3467, 5);
    let log_fit = chebyshev_fit(log_q, -0.3334, 0.3334, 9);
    let bits = |c: &[f32]| c.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(f32_bits(&exp_fit), bits(&EXP_POLY));
    assert_eq!(f32_bits(&log_fit), bits(&LOG_POLY));

    // ln 2 = LN_2 + LN_2_TAIL to about 2^-106
    const LN_2_TAIL: f64 = 2.319_046_813_846_299_6e-17;
    let ln2 = std::f64::consts::LN_2;
    assert_eq!(LN2_HI, ln2 as f32);
    assert_eq!(LN2_LO, ((ln2 - f64::from(LN2_HI)) + LN_2_TAIL) as f32);
    assert_eq!(LN2_HI16.to_bits(), LN2_HI.to_bits() & 0xffff_ff00);
    assert_eq!(LN2_LO16, ((ln2 - f64::from(LN2_HI16)) + LN_2_TAIL) as f32);
    assert_eq!(LOG2_E, std::f64::consts::LOG2_E as f32);
    assert_eq!(TWO_THIRDS_BITS, ((2.0f64 / 3.0) as f32).to_bits());

    // The approximation error of the rounded polynomials, weighted as it
    // enters the result: r²·(P − exact) and (f³/2)·(Q − exact).
    let worst = |poly: &[f32], g: fn(f64) -> f64, lim: f64, w: fn(f64) -> f64| {
        (0..=20_000)
            .map(|i| {
                let x = -lim + 2.0 * lim * i as f64 / 20_000.0;
                let p = poly
                    .iter()
                    .rev()
                    .fold(0.0, |acc, &c| acc * x + f64::from(c));
                ((p - g(x)) * w(x)).abs()
            })
            .fold(0.0, f64::max)
    };
    let e = worst(&EXP_POLY, exp_p, 0.3467, |r| r * r);
    let l = worst(&LOG_POLY, log_q, 0.3334, |f| f * f * f / 2.0);
    println!("weighted approximation error: exp {e:.2e}, log {l:.2e}");
    assert!(e < 6e-10 && l < 7e-10, "{e} {l}");
}
// ---------------------------------------------------------------------------
// log_add_exp: the weighted minimax fits of its two polynomials
// ---------------------------------------------------------------------------

/// Least squares `min |a·x − b|` by Householder QR (`a` is `m × n`, rows).
fn lstsq(a: &[Vec<f64>], b: &[f64]) -> Vec<f64> {
    let (m, n) = (a.len(), a[0].len());
    let mut cols: Vec<Vec<f64>> = (0..n).map(|j| a.iter().map(|r| r[j]).collect()).collect();
    let mut rhs = b.to_vec();
    for j in 0..n {
        let norm = cols[j][j..].iter().map(|v| v * v).sum::<f64>().sqrt();
        let alpha = if cols[j][j] > 0.0 { -norm } else { norm };
        let mut v: Vec<f64> = cols[j][j..].to_vec();
        v[0] -= alpha;
        let vv = v.iter().map(|x| x * x).sum::<f64>();
        if vv == 0.0 {
            continue;
        }
        let reflect = |col: &mut [f64]| {
            let dot = col.iter().zip(&v).map(|(c, v)| c * v).sum::<f64>();
            let f = 2.0 * dot / vv;
            for (c, v) in col.iter_mut().zip(&v) {
                *c -= f * v;
            }
        };
        for col in cols[j..].iter_mut() {
            reflect(&mut col[j..]);
        }
        reflect(&mut rhs[j..]);
    }
    let _ = m;
    let mut x = vec![0.0; n];
    for r in (0..n).rev() {
        let mut s = rhs[r];
        for k in r + 1..n {
            s -= cols[k][r] * x[k];
        }
        x[r] = s / cols[r][r];
    }
    x
}

/// Weighted minimax polynomial of degree `fixed.len() − 1` by Lawson's
/// iteratively reweighted least squares: minimises `max |w·(p − f)|` over
/// the grid with the coefficients that are `Some` in `fixed` held. Returns
/// the coefficients of the best iterate and its weighted error.
fn lawson(xs: &[f64], fx: &[f64], wx: &[f64], fixed: &[Option<f64>]) -> (Vec<f64>, f64) {
    let n = fixed.len();
    let free: Vec<usize> = (0..n).filter(|&i| fixed[i].is_none()).collect();
    let powers: Vec<Vec<f64>> = xs
        .iter()
        .map(|&x| {
            let mut p = vec![1.0; n];
            for i in 1..n {
                p[i] = p[i - 1] * x;
            }
            p
        })
        .collect();
    let target: Vec<f64> = (0..xs.len())
        .map(|i| {
            let held: f64 = (0..n)
                .filter_map(|j| fixed[j].map(|c| c * powers[i][j]))
                .sum();
            fx[i] - held
        })
        .collect();
    let mut lw = vec![1.0 / xs.len() as f64; xs.len()];
    let mut best: Option<(f64, Vec<f64>)> = None;
    for _ in 0..LAWSON_ITERATIONS {
        let rows: Vec<Vec<f64>> = (0..xs.len())
            .map(|i| {
                let s = lw[i].sqrt() * wx[i];
                free.iter().map(|&j| s * powers[i][j]).collect()
            })
            .collect();
        let rhs: Vec<f64> = (0..xs.len())
            .map(|i| lw[i].sqrt() * wx[i] * target[i])
            .collect();
        let c = lstsq(&rows, &rhs);
        let err: Vec<f64> = (0..xs.len())
            .map(|i| {
                let p: f64 = free.iter().zip(&c).map(|(&j, c)| c * powers[i][j]).sum();
                (wx[i] * (p - target[i])).abs()
            })
            .collect();
        let m = err.iter().copied().fold(0.0, f64::max);
        if best.as_ref().is_none_or(|(b, _)| m < *b) {
            best = Some((m, c));
        }
        let mut total = 0.0;
        for (l, e) in lw.iter_mut().zip(&err) {
            *l *= e;
            total += *l;
        }
        if total == 0.0 {
            break;
        }
        for l in lw.iter_mut() {
            *l /= total;
        }
    }
    let (m, c) = best.unwrap();
    let mut coef: Vec<f64> = fixed.iter().map(|c| c.unwrap_or(0.0)).collect();
    for (&j, c) in free.iter().zip(c) {
        coef[j] = c;
    }
    (coef, m)
}

const LAWSON_ITERATIONS: usize = 200;
const FIT_POINTS: usize = 2000;

/// Weighted minimax fit of degree `degree` with f32 coefficients: fit,
/// round the coefficient of `x^0` to f32 and refit the others, then `x^1`,
/// and so on. Returns the f32 coefficients and their weighted error.
fn fit_f32(
    lo: f64,
    hi: f64,
    degree: usize,
    f: impl Fn(f64) -> f64,
    w: impl Fn(f64) -> f64,
) -> (Vec<f32>, f64) {
    let xs: Vec<f64> = (0..=FIT_POINTS)
        .map(|i| lo + (hi - lo) * i as f64 / FIT_POINTS as f64)
        .collect();
    let fx: Vec<f64> = xs.iter().map(|&x| f(x)).collect();
    let wx: Vec<f64> = xs.iter().map(|&x| w(x)).collect();
    let mut fixed = vec![None; degree + 1];
    for i in 0..=degree {
        let (c, _) = lawson(&xs, &fx, &wx, &fixed);
        fixed[i] = Some(f64::from(c[i] as f32));
    }
    let coef: Vec<f32> = fixed.iter().map(|c| c.unwrap() as f32).collect();
    let err = weighted_error(&coef, &xs, &fx, &wx);
    (coef, err)
}

fn weighted_error(coef: &[f32], xs: &[f64], fx: &[f64], wx: &[f64]) -> f64 {
    xs.iter()
        .zip(fx)
        .zip(wx)
        .map(|((&x, &f), &w)| {
            let p = coef
                .iter()
                .rev()
                .fold(0.0, |acc, &c| acc * x + f64::from(c));
            (w * (p - f)).abs()
        })
        .fold(0.0, f64::max)
}

/// `(e^r − 1 − 2B·r) / (2r)` by its power series (`B` = `LAE_B`).
fn softplus_r(r: f64) -> f64 {
    let b = f64::from(LAE_B);
    let (mut term, mut s) = (r / 4.0, 0.5 - b);
    for n in 3..40 {
        s += term;
        term *= r / n as f64;
    }
    s + term
}

/// `(log1p(z) − z) / z²` by its power series (`|z| ≤ 0.51`).
fn softplus_q(z: f64) -> f64 {
    let (mut s, mut pw) = (0.0, 1.0);
    for n in 2..100 {
        let sign = if n % 2 == 0 { -1.0 } else { 1.0 };
        s += sign * pw / n as f64;
        pw *= z;
    }
    s
}

/// `log1p(z)` by its power series (`|z| ≤ 0.51`), for the weights only.
fn log1p_series(z: f64) -> f64 {
    z + z * z * softplus_q(z)
}

/// The f32 ulp of the binade of `x > 0`.
fn ulp_of(x: f64) -> f64 {
    let e = ((x as f32).to_bits() >> 23) as i32 - 127;
    2f64.powi(e.max(-126) - 23)
}

/// The weight of `R`'s error: it enters the result as `r·(R − exact)` in
/// units whose ulp is `2^−25` below 0 (the result is below 1/2 there, in
/// either form) and `2^−24` above.
fn softplus_r_weight(r: f64) -> f64 {
    r.abs()
        * if r < 0.0 {
            2f64.powi(25)
        } else {
            2f64.powi(24)
        }
}

/// The weight of `Q`'s error, in ulps of the result: `z²/ulp(f)` near 0
/// (`z < 0`, `f = ln 2 + log1p(z)`); for `z = e^d ≥ 0` the larger of
/// `z²/ulp(f)` (`k = −1`, unit scale) and `z·2^24` (`k ≤ −2`, where the
/// correction is `z·v·Q` on a result `≈ v`).
fn softplus_q_weight(z: f64) -> f64 {
    if z < 0.0 {
        z * z / ulp_of(std::f64::consts::LN_2 + log1p_series(z))
    } else if z == 0.0 {
        0.0
    } else {
        (z * z / ulp_of(log1p_series(z))).max(z * 2f64.powi(24))
    }
}

/// The fit intervals: `r` of both forms (`d ∈ (−ln 2, 0]` near 0,
/// `|r| ≤ ln 2 / 2` below, each with a little room for rounding) and `z` of
/// both forms.
#[allow(clippy::approx_constant)] // a bound just beyond −ln 2, not ln 2
const SOFTPLUS_R_RANGE: (f64, f64) = (-0.69315, 0.34658);
const SOFTPLUS_Q_RANGE: (f64, f64) = (-0.2501, 0.5001);

#[test]
fn log_add_exp_constants_rederive() {
    let (r, r_err) = fit_f32(
        SOFTPLUS_R_RANGE.0,
        SOFTPLUS_R_RANGE.1,
        6,
        softplus_r,
        softplus_r_weight,
    );
    let (q, q_err) = fit_f32(
        SOFTPLUS_Q_RANGE.0,
        SOFTPLUS_Q_RANGE.1,
        9,
        softplus_q,
        softplus_q_weight,
    );
    let bits = |c: &[f32]| c.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&r), bits(&SOFTPLUS_EXP_POLY), "R re-derived");
    assert_eq!(bits(&q), bits(&SOFTPLUS_LOG_POLY), "Q re-derived");
    println!("log_add_exp fits: R weighted error {r_err:.4} ulp, Q {q_err:.4} ulp");

    // An independent check of the committed coefficients: their weighted
    // error on a grid 7 times finer than the fit's, the polynomial in f64.
    let check = |c: &[f32], (lo, hi): (f64, f64), f: fn(f64) -> f64, w: fn(f64) -> f64| {
        let n = 7 * FIT_POINTS + 3;
        let xs: Vec<f64> = (0..=n)
            .map(|i| lo + (hi - lo) * i as f64 / n as f64)
            .collect();
        let fx: Vec<f64> = xs.iter().map(|&x| f(x)).collect();
        let wx: Vec<f64> = xs.iter().map(|&x| w(x)).collect();
        weighted_error(c, &xs, &fx, &wx)
    };
    let re = check(
        &SOFTPLUS_EXP_POLY,
        SOFTPLUS_R_RANGE,
        softplus_r,
        softplus_r_weight,
    );
    let qe = check(
        &SOFTPLUS_LOG_POLY,
        SOFTPLUS_Q_RANGE,
        softplus_q,
        softplus_q_weight,
    );
    println!("on a finer grid: R {re:.4} ulp, Q {qe:.4} ulp");
    assert!(re < 0.015 && qe < 0.008, "{re} {qe}");
    // the series against two values known to more digits
    assert!((softplus_q(0.5) - (1.5f64.ln() - 0.5) / 0.25).abs() < 1e-15);
    assert!((softplus_r(-0.5) - ((-0.5f64).exp() - 1.0 + 0.4375) / -1.0).abs() < 1e-15);

    // the scalar constants
    const LN_2_TAIL: f64 = 2.319_046_813_846_299_6e-17;
    let ln2_lo = (std::f64::consts::LN_2 - f64::from(LN2_HI)) + LN_2_TAIL;
    assert_eq!(LAE_MAGIC, ROUND_MAGIC + 191.0);
    assert_eq!(LAE_B, 7.0 / 16.0);
    assert_eq!(LAE_B_LO, (f64::from(LAE_B) * f64::from(LN2_LO)) as f32);
    assert_eq!(LAE_KAPPA, (-ln2_lo / f64::from(LAE_B_LO)) as f32);
    assert_eq!(LAE_SPLIT, -LN2_HI);
    assert_eq!(LAE_CLAMP, -110.0);
    // the magic sum's low 9 bits shifted into the exponent are 2^(k+64)
    for k in -159..=0i32 {
        let t = (k as f32).mul_add(1.0, LAE_MAGIC);
        assert_eq!(
            f32::from_bits(t.to_bits() << 23),
            2f32.powi(k + 64),
            "k = {k}"
        );
    }
}

// ---------------------------------------------------------------------------
// log_add_exp: accuracy against log(e^a + e^b)
// ---------------------------------------------------------------------------

/// The f64 value `v` of a reference, its f32 rounding and whether that
/// rounding is certain: `v` is within `err` (absolute) of the exact value,
/// and when an f32 rounding boundary lies within `err` of `v` the correctly
/// rounded result is one of two neighbours and we do not guess which.
#[derive(Debug, Clone, Copy)]
struct Reference {
    v: f64,
    cr: f32,
    /// The other candidate when the rounding is ambiguous.
    other: Option<f32>,
}

impl Reference {
    fn exact(cr: f32) -> Self {
        Reference {
            v: f64::from(cr),
            cr,
            other: None,
        }
    }

    fn new(v: f64, err: f64) -> Self {
        let cr = v as f32;
        let toward = |c: f32, up: bool| {
            let b = c.to_bits();
            // next f32 away from zero (up in magnitude) or toward zero
            let nb = if (up) == (c >= 0.0) { b + 1 } else { b - 1 };
            f32::from_bits(if c == 0.0 {
                if up { 1 } else { 0x8000_0001 }
            } else {
                nb
            })
        };
        let other = if !cr.is_finite() || f64::from(cr) == v {
            None
        } else {
            let n = toward(cr, v > f64::from(cr));
            let mid = (f64::from(cr) + f64::from(n)) / 2.0;
            ((v - mid).abs() <= err).then_some(n)
        };
        Reference { v, cr, other }
    }
}

/// `log(1 + e^d)` (`= log_add_exp(0, d)`) in f64 with its error bound.
///
/// * `d ≥ 25`: the result is `d + log1p(e^−d)` with `e^−d < 2^−36`, far
///   below half an ulp of `d` (`≥ 2^−20`): exactly `d` after rounding.
/// * `d ≤ −104`: the result is below `e^−104 < 2^−150`, half the smallest
///   subnormal: `+0`.
/// * `|d| < 2^−10`: `ln 2 + d/2 + d²/8 − d⁴/192 + d⁶/2880` (the omitted
///   terms are below `d⁸/37000 < 2^−95`), in f64.
/// * otherwise CORE-MATH's correctly rounded f64 `exp` and `log1p`:
///   `log1p(exp(d))`, or `d + log1p(exp(−d))` for `d > 0`. `exp` is within
///   half an f64 ulp (`2^−53` relative), which moves `log1p(E)` by at most
///   `2^−53·E/(1+E) ≤ 2^−53·log1p(E)`; with `log1p`'s own rounding and the
///   final addition the f64 value is within `2^−51` (relative) of the
///   exact result.
///
/// The bound used for ambiguity is `2^−49·|v|`, four times that.
fn softplus_reference(d: f32) -> Reference {
    if d.is_nan() {
        return Reference::exact(f32::NAN);
    }
    if d >= 25.0 {
        return Reference::exact(d);
    }
    if d <= -104.0 {
        return Reference::exact(0.0);
    }
    let x = f64::from(d);
    let v = if x.abs() < 2f64.powi(-10) {
        let x2 = x * x;
        std::f64::consts::LN_2 + x / 2.0 + x2 * (0.125 + x2 * (-1.0 / 192.0 + x2 / 2880.0))
    } else if x < 0.0 {
        core_math::log1p(core_math::exp(x))
    } else {
        x + core_math::log1p(core_math::exp(-x))
    };
    Reference::new(v, v.abs() * 2f64.powi(-49))
}

/// `log(e^a + e^b)` in f64 as `max + log1p(exp(min − max))`, with its
/// error bound: the difference is exact in f64 unless the exponents of
/// `a` and `b` are more than 29 apart (then its relative error `2^−53`
/// moves the result by at most `2^−53·|d|·σ(d) ≤ 2^−53·|d|·f`); `exp`,
/// `log1p` and the final addition each add a relative `2^−53` of their
/// result. Bound used: `2^−50·(|max| + f·(1 + |d|))`. Returns also `f`,
/// `σ = e^d/(1+e^d)` and the exact `min − max` (for the classification).
fn lae_reference(a: f32, b: f32) -> (Reference, f64, f64, f64) {
    if a.is_nan() || b.is_nan() {
        return (Reference::exact(f32::NAN), 0.0, 0.0, 0.0);
    }
    let (mx, mn) = if a > b { (a, b) } else { (b, a) };
    if mx == f32::INFINITY || mn == f32::NEG_INFINITY {
        return (Reference::exact(mx), 0.0, 0.0, f64::NEG_INFINITY);
    }
    let (x, y) = (f64::from(mx), f64::from(mn));
    let d = y - x;
    let e = core_math::exp(d);
    let f = core_math::log1p(e);
    let v = x + f;
    let err = 2f64.powi(-50) * (x.abs() + f * (1.0 + d.abs()));
    (Reference::new(v, err), f, e / (1.0 + e), d)
}

/// The f32 ulp at `x` (the spacing above `|x|` in its binade; `2^−149`
/// for zero and subnormals).
fn ulp32(x: f32) -> f64 {
    let a = x.abs();
    if a < f32::MIN_POSITIVE {
        return f64::from(f32::from_bits(1));
    }
    let e = (a.to_bits() >> 23) as i32 - 127;
    2f64.powi(e - 23)
}

/// Distance in ulps (ordered encoding) of `got` from the reference, the
/// larger of the two when the rounding is ambiguous; `None` for a contract
/// violation as in [`distance`].
fn ref_distance(got: f32, r: &Reference) -> Option<u64> {
    let a = distance(got, r.cr)?;
    match r.other {
        None => Some(a),
        Some(o) => Some(a.max(distance(got, o)?)),
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct LaeTally {
    inputs: u64,
    exact: u64,
    one: u64,
    bad: u64,
    first_bad: Option<u32>,
    ambiguous: u64,
    /// Finite, non-zero results other than `d` itself (`d > 0` large) and
    /// other than `f32(ln 2)` (`|d|` tiny), and how many are exact.
    nontrivial: u64,
    nontrivial_exact: u64,
    /// Largest `|y − v| / ulp(cr)` over finite non-zero references, for
    /// `d ≤ 0` (the error of `f(d)` itself) and `d > 0` (`d + f(−d)`,
    /// which adds the rounding of `f` to that of the sum).
    max_err: [f64; 2],
    max_err_at: [u32; 2],
    /// Nontrivial results for `d > 0`, and how many are exact.
    positive: u64,
    positive_exact: u64,
}

impl LaeTally {
    fn add(&mut self, o: &LaeTally) {
        self.inputs += o.inputs;
        self.exact += o.exact;
        self.one += o.one;
        self.bad += o.bad;
        self.first_bad = self.first_bad.or(o.first_bad);
        self.ambiguous += o.ambiguous;
        self.nontrivial += o.nontrivial;
        self.nontrivial_exact += o.nontrivial_exact;
        self.positive += o.positive;
        self.positive_exact += o.positive_exact;
        for i in 0..2 {
            if o.max_err[i] > self.max_err[i] {
                self.max_err[i] = o.max_err[i];
                self.max_err_at[i] = o.max_err_at[i];
            }
        }
    }
}

#[inline(always)]
fn lae_tally(bits: impl Iterator<Item = u32>) -> LaeTally {
    let mut t = LaeTally::default();
    let mut ys = [0f32; CHUNK];
    let (mut buf, mut bits) = ([0u32; CHUNK], bits);
    loop {
        let n = fill(&mut buf, &mut bits);
        if n == 0 {
            break;
        }
        let c = &buf[..n];
        // ours first, in a loop of its own (see `CHUNK`)
        for (y, &b) in ys.iter_mut().zip(c) {
            *y = math::log_add_exp(0.0, f32::from_bits(b));
        }
        for (&b, &got) in c.iter().zip(&ys) {
            let d = f32::from_bits(b);
            let r = softplus_reference(d);
            t.inputs += 1;
            t.ambiguous += u64::from(r.other.is_some());
            let dist = ref_distance(got, &r);
            let exact = r.other.is_none() && dist == Some(0);
            match dist {
                Some(0) => t.exact += 1,
                Some(1) => t.one += 1,
                _ => {
                    t.bad += 1;
                    t.first_bad.get_or_insert(b);
                }
            }
            if r.cr.is_finite() && r.cr != 0.0 {
                let e = (f64::from(got) - r.v).abs() / ulp32(r.cr);
                let side = usize::from(d > 0.0);
                if e > t.max_err[side] {
                    t.max_err[side] = e;
                    t.max_err_at[side] = b;
                }
                if r.cr != d && r.cr != LN2_HI {
                    t.nontrivial += 1;
                    t.nontrivial_exact += u64::from(exact);
                    if d > 0.0 {
                        t.positive += 1;
                        t.positive_exact += u64::from(exact);
                    }
                }
            }
        }
    }
    t
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
fn lae_block_fma(lo: u64, hi: u64) -> LaeTally {
    lae_tally((lo..hi).map(|b| b as u32))
}

fn lae_block(lo: u64, hi: u64) -> LaeTally {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the feature the function was compiled for.
        return unsafe { lae_block_fma(lo, hi) };
    }
    lae_tally((lo..hi).map(|b| b as u32))
}

/// `d` worth checking one by one on the `max = 0` line: the special
/// values and powers of two of [`interesting_inputs`], and each threshold
/// of `log_add_exp` with its 8 neighbours on both sides: the split at
/// `−LN2_HI`, every change of `k` (`d = −(j + ½)·ln 2`), the clamp, the
/// last `d` with a non-zero result, the subnormal range's top, tiny `d`.
fn lae_interesting_inputs() -> Vec<u32> {
    let mut v = interesting_inputs();
    let mut ts = vec![LAE_SPLIT, LAE_CLAMP, -103.972_08, -87.336_54, 25.0, -104.0];
    for j in 0..160 {
        ts.push(-(j as f32 + 0.5) * core::f32::consts::LN_2);
    }
    for t in ts {
        for u in [t, -t] {
            let b = u.to_bits();
            for d in 0..=8 {
                v.extend([b.wrapping_sub(d), b + d]);
            }
        }
    }
    v
}

#[test]
fn sampled_log_add_exp() {
    let t = lae_tally(lae_interesting_inputs().into_iter());
    assert_eq!(t.bad, 0, "special d {:#010x}", t.first_bad.unwrap_or(0));
    assert!(t.max_err[0] < LAE_MAX_ERR, "{:?}", t.max_err);
    let t = lae_tally((0..u32::MAX).step_by(2039));
    assert_eq!(t.bad, 0, "sampled d {:#010x}", t.first_bad.unwrap_or(0));
    assert!(t.max_err[0] < LAE_MAX_ERR, "{:?}", t.max_err);
    println!(
        "log_add_exp(0, d): {} sampled d, {:.3} % correctly rounded ({:.3} % of the nontrivial), \
         the rest within 1 ulp; largest real error {:.3} ulp (d ≤ 0), {:.3} ulp (d > 0)",
        t.inputs,
        100.0 * t.exact as f64 / t.inputs as f64,
        100.0 * t.nontrivial_exact as f64 / t.nontrivial as f64,
        t.max_err[0],
        t.max_err[1],
    );
}

/// The bound on the real error of `f(d) = log1p(e^d)` for `d ≤ 0` (in
/// ulps of the correctly rounded result) that the contract of
/// `ptxsmith::math` quotes and uses for other pairs; the sweep checks it
/// (measured: 1.0075 ulp, at `d = −0.7617`).
const LAE_MAX_ERR: f64 = 1.01;

#[test]
#[ignore = "exhaustive: all 2^32 d (about a minute in release mode)"]
fn exhaustive_log_add_exp() {
    const BLOCKS: u64 = 256;
    let t0 = Instant::now();
    let total = (0..BLOCKS)
        .into_par_iter()
        .map(|blk| lae_block((blk << 32) / BLOCKS, ((blk + 1) << 32) / BLOCKS))
        .reduce(LaeTally::default, |mut a, b| {
            a.add(&b);
            a
        });
    let secs = t0.elapsed().as_secs_f64();
    assert_eq!(total.inputs, 1 << 32);
    let neg = total.nontrivial - total.positive;
    println!(
        "log_add_exp(0, d), all 2^32 d: max error {} ulp; {} ({:.4} %) correctly rounded, {} at 1 \
         ulp, {} worse, {} with an ambiguous reference (within 1 ulp of both candidates)",
        if total.bad > 0 {
            ">1"
        } else if total.one > 0 {
            "1"
        } else {
            "0"
        },
        total.exact,
        100.0 * total.exact as f64 / total.inputs as f64,
        total.one,
        total.bad,
        total.ambiguous,
    );
    println!(
        "  nontrivial results: {} ({:.4} % correctly rounded); d < 0: {} ({:.4} %), d > 0: {} \
         ({:.4} %)",
        total.nontrivial,
        100.0 * total.nontrivial_exact as f64 / total.nontrivial as f64,
        neg,
        100.0 * (total.nontrivial_exact - total.positive_exact) as f64 / neg as f64,
        total.positive,
        100.0 * total.positive_exact as f64 / total.positive as f64,
    );
    println!(
        "  largest real error: {:.4} ulp for d ≤ 0 (d = {:e}), {:.4} ulp for d > 0 (d = {:e}) \
         [{secs:.1} s]",
        total.max_err[0],
        f32::from_bits(total.max_err_at[0]),
        total.max_err[1],
        f32::from_bits(total.max_err_at[1]),
    );
    assert_eq!(
        total.bad,
        0,
        "{} d beyond 1 ulp, e.g. bits {:#010x}",
        total.bad,
        total.first_bad.unwrap_or(0)
    );
    assert!(total.max_err[0] < LAE_MAX_ERR, "{:?}", total.max_err);
}

// ---------------------------------------------------------------------------
// log_add_exp on pairs
// ---------------------------------------------------------------------------

/// Counts for one class of pairs.
#[derive(Debug, Default, Clone, Copy)]
struct PairClass {
    n: u64,
    exact: u64,
    one: u64,
    worse: u64,
    ambiguous: u64,
    /// Largest real error in ulps of the correctly rounded result.
    max_err: f64,
    /// Largest absolute error in units of 2^−24.
    max_abs: f64,
    worst: (f32, f32),
}

impl PairClass {
    fn add(&mut self, o: &PairClass) {
        self.n += o.n;
        self.exact += o.exact;
        self.one += o.one;
        self.worse += o.worse;
        self.ambiguous += o.ambiguous;
        if o.max_err > self.max_err {
            self.max_err = o.max_err;
            self.worst = o.worst;
        }
        self.max_abs = self.max_abs.max(o.max_abs);
    }

    fn line(&self, name: &str) -> String {
        format!(
            "{name}: {} pairs, {:.4} % correctly rounded, {} at 1 ulp, {} beyond, {} ambiguous; \
             largest error {:.3} ulp at ({:e}, {:e}), {:.3}·2^-24 absolute",
            self.n,
            100.0 * self.exact as f64 / self.n.max(1) as f64,
            self.one,
            self.worse,
            self.ambiguous,
            self.max_err,
            self.worst.0,
            self.worst.1,
            self.max_abs,
        )
    }
}

/// The classes of the contract. With the f32 difference exact: `far`,
/// `|y| ≥ 2·f(d)`, where the bound makes 1 ulp certain; `near`,
/// `f(d) ≤ |y| < 2·f(d)`, where it allows a real error up to 1.51 ulp;
/// `cancel`, the cancellation region `C` (`max < 0` and `|y| < f(d)`).
/// `rounded`: the difference `min − max` rounds in f32 (outside `C`).
#[derive(Debug, Default, Clone, Copy)]
struct PairTally {
    far: PairClass,
    near: PairClass,
    rounded: PairClass,
    cancel: PairClass,
    /// Pairs whose error exceeds the contract's bound, and the first one.
    violations: u64,
    first_violation: Option<(f32, f32)>,
}

impl PairTally {
    fn add(&mut self, o: &PairTally) {
        self.far.add(&o.far);
        self.near.add(&o.near);
        self.rounded.add(&o.rounded);
        self.cancel.add(&o.cancel);
        self.violations += o.violations;
        self.first_violation = self.first_violation.or(o.first_violation);
    }
}

/// The contract's bound on `|y − log(e^a + e^b)|` for finite results:
/// `ulp(y)/2 + LAE_MAX_ERR·ulp(f) + σ·|d − d̂|` where `d̂ = −|a − b|` is the
/// f32 difference, `f = f(d)`, `σ = e^d/(1 + e^d)` (plus the reference's
/// own error bound and a relative 2^−20 of slack on the last term).
fn lae_bound(y: f32, f: f64, sigma: f64, dd: f64, ref_err: f64) -> f64 {
    let uf = ulp32((f * (1.0 + 1e-5)) as f32);
    ulp32(y) / 2.0 + LAE_MAX_ERR * uf + sigma * dd * (1.0 + 2f64.powi(-20)) + ref_err
}

#[inline(always)]
fn pair_tally(pairs: &[(f32, f32)]) -> PairTally {
    let mut t = PairTally::default();
    // ours first, in a loop of its own (see `CHUNK`)
    let ys: Vec<f32> = pairs
        .iter()
        .map(|&(a, b)| math::log_add_exp(a, b))
        .collect();
    for (&(a, b), &y) in pairs.iter().zip(&ys) {
        let (r, f, sigma, d) = lae_reference(a, b);
        let dh = -(a - b).abs();
        let special = !r.v.is_finite() || d == f64::NEG_INFINITY;
        let (mx, mn) = if a > b { (a, b) } else { (b, a) };
        let cancel = !special && mx < 0.0 && r.v.abs() < f;
        let exact_d = special || d == f64::from(dh);
        let class = if cancel {
            &mut t.cancel
        } else if !exact_d {
            &mut t.rounded
        } else if special || r.v.abs() >= 2.0 * f {
            &mut t.far
        } else {
            &mut t.near
        };
        class.n += 1;
        class.ambiguous += u64::from(r.other.is_some());
        match ref_distance(y, &r) {
            Some(0) if r.other.is_none() => class.exact += 1,
            Some(0) | Some(1) => class.one += 1,
            _ => class.worse += 1,
        }
        if special {
            if ref_distance(y, &r) != Some(0) {
                t.violations += 1;
                t.first_violation.get_or_insert((a, b));
            }
            continue;
        }
        let abs = (f64::from(y) - r.v).abs();
        let err = abs / ulp32(r.cr);
        if err > class.max_err {
            class.max_err = err;
            class.worst = (a, b);
        }
        class.max_abs = class.max_abs.max(abs * 2f64.powi(24));
        let ref_err = 2f64.powi(-50)
            * (f64::from(mx).abs() + f * (1.0 + (f64::from(mn) - f64::from(mx)).abs()));
        if abs > lae_bound(y, f, sigma, (d - f64::from(dh)).abs(), ref_err) {
            t.violations += 1;
            t.first_violation.get_or_insert((a, b));
        }
    }
    t
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
fn pair_block_fma(pairs: &[(f32, f32)]) -> PairTally {
    pair_tally(pairs)
}

fn pair_block(pairs: &[(f32, f32)]) -> PairTally {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the feature the function was compiled for.
        return unsafe { pair_block_fma(pairs) };
    }
    pair_tally(pairs)
}

/// A 64-bit LCG (Knuth's MMIX constants); the high 32 bits as output.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 32) as u32
    }
    /// Uniform in `[lo, hi)` on a grid of 2^−24 of the width.
    fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * ((self.next() >> 8) as f32 / (1u32 << 24) as f32)
    }
    /// A random finite f32 (uniform over finite bit patterns).
    fn finite(&mut self) -> f32 {
        loop {
            let x = f32::from_bits(self.next());
            if x.is_finite() {
                return x;
            }
        }
    }
}

/// The sampled distributions of pairs.
#[derive(Debug, Clone, Copy)]
enum Pairs {
    /// `a`, `b` uniform in `[−30, 30]`.
    Uniform,
    /// `a`, `b` uniform over the finite f32 bit patterns.
    Bits,
    /// `a` uniform in `[−3, 1]`, `b = a − u`, `u` uniform in `[0, 4]`:
    /// small differences near 0, where the cancellation region lies.
    Close,
}

impl Pairs {
    fn draw(self, r: &mut Rng) -> (f32, f32) {
        match self {
            Pairs::Uniform => (r.uniform(-30.0, 30.0), r.uniform(-30.0, 30.0)),
            Pairs::Bits => (r.finite(), r.finite()),
            Pairs::Close => {
                let a = r.uniform(-3.0, 1.0);
                (a, a - r.uniform(0.0, 4.0))
            }
        }
    }
}

/// `n` pairs of `dist` (seeded per thread), on 2 threads; prints the
/// classes and asserts the contract: within 1 ulp when the difference is
/// exact and `|y| ≥ 2·f(d)`, and the error bound of [`lae_bound`]
/// everywhere.
fn sampled_pairs(dist: Pairs, n: u64, seed: u64) -> PairTally {
    const THREADS: u64 = 2;
    const CHUNK: usize = 1 << 16;
    let t0 = Instant::now();
    let total = std::thread::scope(|s| {
        let workers: Vec<_> = (0..THREADS)
            .map(|w| {
                s.spawn(move || {
                    let mut rng = Rng(seed ^ (w + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                    let mut t = PairTally::default();
                    let mut left = n / THREADS + u64::from(w < n % THREADS);
                    let mut buf = Vec::with_capacity(CHUNK);
                    while left > 0 {
                        let m = (left as usize).min(CHUNK);
                        buf.clear();
                        buf.extend((0..m).map(|_| dist.draw(&mut rng)));
                        t.add(&pair_block(&buf));
                        left -= m as u64;
                    }
                    t
                })
            })
            .collect();
        let mut t = PairTally::default();
        for w in workers {
            t.add(&w.join().unwrap());
        }
        t
    });
    println!(
        "log_add_exp, {n} pairs {dist:?} (seed {seed:#x}) [{:.1} s]",
        t0.elapsed().as_secs_f64()
    );
    println!("  {}", total.far.line("exact difference, |y| ≥ 2f"));
    println!("  {}", total.near.line("exact difference, f ≤ |y| < 2f"));
    println!("  {}", total.rounded.line("rounded difference, outside C"));
    println!("  {}", total.cancel.line("cancellation region C"));
    assert_eq!(
        total.violations, 0,
        "{dist:?}: {} pairs beyond the bound, e.g. {:?}",
        total.violations, total.first_violation
    );
    assert_eq!(
        total.far.worse, 0,
        "{dist:?}: beyond 1 ulp with an exact difference and |y| ≥ 2f"
    );
    total
}

#[test]
#[ignore = "4·10^8 pairs (about a minute in release mode)"]
fn sampled_pairs_log_add_exp() {
    sampled_pairs(Pairs::Uniform, 200_000_000, 0x5eed_0001);
    sampled_pairs(Pairs::Bits, 100_000_000, 0x5eed_0002);
    sampled_pairs(Pairs::Close, 100_000_000, 0x5eed_0003);
}

#[test]
fn sampled_pairs_log_add_exp_fast() {
    sampled_pairs(Pairs::Uniform, 300_000, 1);
    sampled_pairs(Pairs::Bits, 300_000, 2);
    sampled_pairs(Pairs::Close, 300_000, 3);
}
