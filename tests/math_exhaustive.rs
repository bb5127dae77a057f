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

use std::time::Instant;

use ptxsmith::math::{
    self, EXP_POLY, LN2_HI, LN2_HI16, LN2_LO, LN2_LO16, LOG_POLY, LOG2_E, TWO_THIRDS_BITS,
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

#[inline(always)]
fn tally_range(f: Func, bits: impl Iterator<Item = u32>) -> Tally {
    let mut t = Tally::default();
    for b in bits {
        let x = f32::from_bits(b);
        let (got, want) = (ours(f, x), reference(f, x));
        t.inputs += 1;
        let d = distance(got, want);
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
    const THREADS: u64 = 2;
    const BLOCKS: u64 = 256;
    let t0 = Instant::now();
    let total = std::thread::scope(|s| {
        let workers: Vec<_> = (0..THREADS)
            .map(|w| {
                s.spawn(move || {
                    let mut t = Tally::default();
                    for blk in (w..BLOCKS).step_by(THREADS as usize) {
                        let lo = (blk << 32) / BLOCKS;
                        let hi = ((blk + 1) << 32) / BLOCKS;
                        t.add(&tally_block(f, lo, hi));
                    }
                    t
                })
            })
            .collect();
        let mut t = Tally::default();
        for w in workers {
            t.add(&w.join().unwrap());
        }
        t
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
    for v in [0.0, -3.5, 1e30, -inf, inf, nan] {
        assert!(lae(nan, v).is_nan() && lae(v, nan).is_nan(), "{v}");
        if !v.is_nan() {
            assert_eq!(lae(inf, v), inf, "{v}");
            assert_eq!(lae(v, inf), inf, "{v}");
        }
    }
    assert_eq!(lae(-inf, -inf), -inf);
    assert_eq!(lae(-inf, 2.5), 2.5);
    assert_eq!(lae(2.5, -inf), 2.5);
    // the formula, in its order, on ordinary pairs
    let mut s = 0x1234_5678u32;
    for _ in 0..100_000 {
        s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let a = f32::from_bits(s) % 200.0;
        s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let b = f32::from_bits(s) % 200.0;
        if a.is_nan() || b.is_nan() || a.is_infinite() || b.is_infinite() {
            continue;
        }
        let (mx, mn) = if a > b { (a, b) } else { (b, a) };
        let want = mx + math::log1p_f32(math::exp_f32(mn - mx));
        assert!(same(lae(a, b), want), "{a} {b}");
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
