//! `ptxsmith::tensor_core` against an independent exact reference (issue
//! 31), with property tests per parameter set. The reference shares no code
//! with the model: it decodes operands with the `half` crate, forms each
//! product exactly as an f64 and splits it into an integer significand and
//! a power of two, aligns every term to the block exponent by an integer
//! shift that truncates the magnitude to `23 + neab` fraction bits, sums in
//! i128, and rounds the (exact, f64-representable) sum to f32 with Rust's
//! conversion, stepped toward zero for truncation.
//!
//! Hand-worked cases are in `tests/tensor_core_cases.rs`.

use proptest::prelude::*;
use ptxsmith::tensor_core::{BlockFma, FinalRounding, InputFormat, PublishedModel, mma_tile};

/// 2^n as an f64 (n in the normal range).
fn pow2(n: i32) -> f64 {
    assert!((-1022..=1023).contains(&n), "2^{n}");
    f64::from_bits(((n + 1023) as u64) << 52)
}

/// `(significand, exponent)` of a finite non-zero f64: |x| = m · 2^e, m an
/// integer.
fn split(x: f64) -> (u128, i32) {
    let bits = x.abs().to_bits();
    let be = (bits >> 52) as i32;
    let frac = u128::from(bits & ((1 << 52) - 1));
    assert!(be > 0, "no f64 subnormals arise here");
    (frac | (1 << 52), be - 1075)
}

/// ⌊log2 |x|⌋ of a finite non-zero f64.
fn ilog2(x: f64) -> i32 {
    ((x.abs().to_bits() >> 52) as i32) - 1023
}

/// The value of an operand, via the `half` crate (tf32: the f32 with its
/// low 13 bits cleared).
fn value(fmt: InputFormat, bits: u32) -> f64 {
    match fmt {
        InputFormat::F16 => half::f16::from_bits(bits as u16).to_f64(),
        InputFormat::Bf16 => half::bf16::from_bits(bits as u16).to_f64(),
        InputFormat::Tf32 => f64::from(f32::from_bits(bits & !0x1FFF)),
    }
}

/// Smallest exponent of the format's normal numbers.
fn emin(fmt: InputFormat) -> i32 {
    match fmt {
        InputFormat::F16 => -14,
        InputFormat::Bf16 | InputFormat::Tf32 => -126,
    }
}

/// The reference: one block.
fn ref_block(p: &BlockFma, c: f32, pairs: &[(u32, u32)]) -> u32 {
    let cv = f64::from(c);
    let prods: Vec<(f64, i32)> = pairs
        .iter()
        .map(|&(a, b)| {
            let (x, y) = (value(p.input, a), value(p.input, b));
            let e = |v: f64| {
                if v == 0.0 || !v.is_finite() {
                    0
                } else {
                    ilog2(v).max(emin(p.input))
                }
            };
            (x * y, e(x) + e(y))
        })
        .collect();
    // specials: NaN (operands, c, ∞·0), then mixed infinities
    let vals = prods.iter().map(|t| t.0).chain([cv]);
    if vals.clone().any(f64::is_nan) {
        return 0x7FFF_FFFF;
    }
    let pos = vals.clone().any(|v| v == f64::INFINITY);
    let neg = vals.clone().any(|v| v == f64::NEG_INFINITY);
    match (pos, neg) {
        (true, true) => return 0x7FFF_FFFF,
        (true, false) => return 0x7F80_0000,
        (false, true) => return 0xFF80_0000,
        _ => {}
    }
    // terms: (value, alignment exponent); zeros take no part
    let mut terms: Vec<(f64, i32)> = prods.into_iter().filter(|t| t.0 != 0.0).collect();
    if cv != 0.0 {
        terms.push((cv, ilog2(cv).max(-126)));
    }
    let Some(top) = terms.iter().map(|t| t.1).max() else {
        return 0;
    };
    let top = top.max(p.min_align_exp);
    let frac = 23 + p.extra_align_bits as i32;
    let lsb = top - frac; // the grid: multiples of 2^lsb
    let sum: i128 = terms
        .iter()
        .map(|&(v, _)| {
            let (m, e) = split(v);
            let s = e - lsb;
            let t = if s >= 0 {
                m << s
            } else if -s >= 128 {
                0
            } else {
                m >> -s
            };
            if v < 0.0 { -(t as i128) } else { t as i128 }
        })
        .sum();
    if sum == 0 {
        return 0;
    }
    assert!(sum.unsigned_abs() < 1 << 53);
    let exact = sum as f64 * pow2(lsb); // exact: |sum| < 2^53, lsb ≥ -1022
    if exact.abs() >= pow2(128) {
        return if exact > 0.0 {
            0x7F80_0000
        } else {
            0xFF80_0000
        };
    }
    let nearest = exact as f32;
    let r = match p.rounding {
        FinalRounding::NearestEven => nearest,
        FinalRounding::TowardZero => {
            if nearest.is_infinite() || f64::from(nearest).abs() > exact.abs() {
                // one step toward zero
                f32::from_bits(nearest.to_bits() - 1)
            } else {
                nearest
            }
        }
    };
    r.to_bits()
}

/// The reference over any K: blocks of `width`, ascending, chained.
fn ref_dot(p: &BlockFma, c: f32, pairs: &[(u32, u32)]) -> u32 {
    let mut acc = c;
    for chunk in pairs.chunks(p.width) {
        acc = f32::from_bits(ref_block(p, acc, chunk));
    }
    acc.to_bits()
}

/// Every parameter set: the four published models plus B200 RN, each with
/// the three operand formats.
fn all_sets() -> Vec<BlockFma> {
    let models = [
        PublishedModel::A100,
        PublishedModel::Ada,
        PublishedModel::H100,
        PublishedModel::B200,
        PublishedModel::B200Rn,
    ];
    let fmts = [InputFormat::F16, InputFormat::Bf16, InputFormat::Tf32];
    models
        .iter()
        .flat_map(|&m| fmts.iter().map(move |&f| BlockFma::published(m, f)))
        .collect()
}

/// `c` and the `(a_k, b_k)` pairs of one dot product.
type Inputs = (f32, Vec<(u32, u32)>);

/// Bits of any operand of `fmt` (every exponent, subnormals, ∞, NaN).
fn any_operand(fmt: InputFormat) -> BoxedStrategy<u32> {
    match fmt {
        InputFormat::F16 | InputFormat::Bf16 => any::<u16>().prop_map(u32::from).boxed(),
        InputFormat::Tf32 => any::<u32>().boxed(),
    }
}

/// A finite operand of `fmt` with its biased exponent in `lo..=hi`
/// (clamped to the format), random sign and fraction.
fn operand_near(fmt: InputFormat, lo: i32, hi: i32) -> BoxedStrategy<u32> {
    let (eb, mb) = match fmt {
        InputFormat::F16 => (5u32, 10u32),
        InputFormat::Bf16 => (8, 7),
        InputFormat::Tf32 => (8, 23),
    };
    let emax = (1i32 << eb) - 2;
    let (lo, hi) = (lo.clamp(0, emax), hi.clamp(0, emax));
    (any::<bool>(), lo..=hi.max(lo), any::<u32>())
        .prop_map(move |(s, e, f)| {
            let f = f & ((1 << mb) - 1);
            (u32::from(s) << (eb + mb)) | ((e as u32) << mb) | f
        })
        .boxed()
}

/// f32 bits with the biased exponent in `lo..=hi`.
fn f32_near(lo: i32, hi: i32) -> BoxedStrategy<f32> {
    (
        any::<bool>(),
        lo.clamp(0, 254)..=hi.clamp(0, 254),
        any::<u32>(),
    )
        .prop_map(|(s, e, f)| {
            f32::from_bits((u32::from(s) << 31) | ((e as u32) << 23) | (f & 0x7F_FFFF))
        })
        .boxed()
}

/// Inputs with exponents near one random centre, so that terms overlap,
/// cancel and get truncated; the centre ranges over the whole format,
/// subnormals and the clamp included. `c` is sometimes zero.
fn clustered(p: BlockFma) -> BoxedStrategy<Inputs> {
    let fmt = p.input;
    let bias = if fmt == InputFormat::F16 { 15 } else { 127 };
    let max_k = 3 * p.width + 1;
    (0..=2 * bias, 0..6i32, 0..=max_k)
        .prop_flat_map(move |(centre, spread, k)| {
            let ops = operand_near(fmt, centre - spread, centre + spread);
            let pair = (ops.clone(), ops);
            // c near the products' scale: the product exponent is about
            // 2·(centre − bias), in f32 biased terms 2·centre − 2·bias + 127
            let ce = 2 * centre - 2 * bias + 127;
            let c = prop_oneof![
                Just(0.0f32),
                f32_near(ce - 3 * spread - 2, ce + 3 * spread + 2),
                f32_near(0, 254),
            ];
            (c, proptest::collection::vec(pair, k))
        })
        .boxed()
}

/// Inputs drawn from all bit patterns (specials included).
fn anything(p: BlockFma) -> BoxedStrategy<Inputs> {
    let ops = any_operand(p.input);
    (
        any::<u32>().prop_map(f32::from_bits),
        proptest::collection::vec((ops.clone(), ops), 0..=2 * p.width + 1),
    )
        .boxed()
}

fn check(p: &BlockFma, c: f32, pairs: &[(u32, u32)]) -> Result<(), TestCaseError> {
    let got = p.dot(c, pairs.iter().copied()).to_bits();
    let want = ref_dot(p, c, pairs);
    prop_assert_eq!(
        got,
        want,
        "{:?} {:?} c = {:08x}, pairs = {:x?}",
        p.source,
        p.input,
        c.to_bits(),
        pairs
    );
    Ok(())
}

/// One of [`all_sets`] with inputs from `inputs`.
fn with_set(
    inputs: fn(BlockFma) -> BoxedStrategy<Inputs>,
) -> impl Strategy<Value = (BlockFma, f32, Vec<(u32, u32)>)> {
    (0..all_sets().len()).prop_flat_map(move |i| {
        let p = all_sets()[i];
        inputs(p).prop_map(move |(c, pairs)| (p, c, pairs))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    /// Exponents clustered around a random centre anywhere in the range.
    #[test]
    fn model_equals_reference_clustered((p, c, pairs) in with_set(clustered)) {
        check(&p, c, &pairs)?;
    }

    /// Any bit patterns: every exponent, subnormals, infinities, NaN.
    #[test]
    fn model_equals_reference_any_bits((p, c, pairs) in with_set(anything)) {
        check(&p, c, &pairs)?;
    }
}

/// `(m, n, k, A, B, C)` of one tile.
type Tile = (usize, usize, usize, Vec<u32>, Vec<u32>, Vec<f32>);

/// A tile (`m × k` by `k × n`) of operands drawn from all bit patterns.
fn tile_inputs(p: BlockFma) -> BoxedStrategy<Tile> {
    let fmt = p.input;
    (1..=3usize, 1..=3usize, 0..=2 * p.width + 1)
        .prop_flat_map(move |(m, n, k)| {
            (
                Just((m, n, k)),
                proptest::collection::vec(any_operand(fmt), m * k),
                proptest::collection::vec(any_operand(fmt), k * n),
                proptest::collection::vec(any::<u32>().prop_map(f32::from_bits), m * n),
            )
        })
        .prop_map(|((m, n, k), a, b, c)| (m, n, k, a, b, c))
        .boxed()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// `mma_tile` (each operand decoded once for the tile) gives every
    /// element the reference's bits over its row of `A` and column of `B`.
    #[test]
    fn tile_equals_reference_per_element(
        (p, (m, n, k, a, b, c)) in (0..all_sets().len()).prop_flat_map(|i| {
            let p = all_sets()[i];
            tile_inputs(p).prop_map(move |t| (p, t))
        })
    ) {
        let d = mma_tile(&p, (m, n, k), &a, &b, &c).unwrap();
        for i in 0..m {
            for j in 0..n {
                let pairs: Vec<(u32, u32)> = (0..k).map(|kk| (a[i * k + kk], b[kk * n + j])).collect();
                prop_assert_eq!(d[i * n + j].to_bits(), ref_dot(&p, c[i * n + j], &pairs),
                    "{:?} {:?} ({}, {}) of {}×{}×{}", p.source, p.input, i, j, m, n, k);
            }
        }
    }
}

/// The reference is not the model by accident: on the same inputs, a
/// reference that rounds to nearest, drops the truncation, or ignores the
/// clamp disagrees with the model somewhere (so the property tests above
/// could fail).
#[test]
fn reference_is_sensitive_to_each_rule() {
    use proptest::test_runner::{Config, TestRunner};
    for p in all_sets() {
        let mut runner = TestRunner::new(Config::default());
        let strat = clustered(p);
        let variants = [
            (
                "rounding",
                BlockFma {
                    rounding: match p.rounding {
                        FinalRounding::TowardZero => FinalRounding::NearestEven,
                        FinalRounding::NearestEven => FinalRounding::TowardZero,
                    },
                    ..p
                },
            ),
            (
                "more alignment bits",
                BlockFma {
                    extra_align_bits: p.extra_align_bits + 20,
                    ..p
                },
            ),
            (
                "no clamp",
                BlockFma {
                    min_align_exp: -1000,
                    ..p
                },
            ),
        ];
        for (what, v) in variants {
            if what == "no clamp" && p.input == InputFormat::F16 {
                // f16 products are at least 2^-48 and c's exponent at least
                // -126: the block exponent never falls to the clamp
                continue;
            }
            let mut differ = 0;
            for _ in 0..3000 {
                let (c, pairs) = strat.new_tree(&mut runner).unwrap().current();
                if p.dot(c, pairs.iter().copied()).to_bits() != ref_dot(&v, c, &pairs) {
                    differ += 1;
                }
            }
            assert!(
                differ > 0,
                "{:?} {:?}: the reference with {what} changed agrees everywhere",
                p.source,
                p.input
            );
        }
    }
}
