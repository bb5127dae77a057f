//! Hand-worked cases of the tensor-core model (issue 31), each with the
//! arithmetic in its comment: truncation against round-to-nearest, a
//! product shifted out entirely, cancellation, signed zeros, subnormals,
//! the exponent clamp, overflow, infinities, NaN, and the order of blocks.
//! Where the published models disagree or the hardware has not been asked,
//! the comment says so; `docs/tensor-cores.md` lists those points.

use ptxsmith::Sm;
use ptxsmith::tensor_core::{BlockFma, CANONICAL_NAN, InputFormat, PublishedModel, params};

/// The bf16 bits of `x`, which must be a bf16 value.
fn bf(x: f64) -> u32 {
    let b = half::bf16::from_f64(x);
    assert_eq!(b.to_f64(), x, "{x} is not a bf16 value");
    u32::from(b.to_bits())
}

/// The f16 bits of `x`, which must be an f16 value.
fn hf(x: f64) -> u32 {
    let h = half::f16::from_f64(x);
    assert_eq!(h.to_f64(), x, "{x} is not an f16 value");
    u32::from(h.to_bits())
}

fn p2(n: i32) -> f64 {
    2f64.powi(n)
}

fn a100(fmt: InputFormat) -> BlockFma {
    params(Sm::Sm80, fmt).unwrap()
}

fn h100(fmt: InputFormat) -> BlockFma {
    params(Sm::Sm90, fmt).unwrap()
}

fn rn(fmt: InputFormat) -> BlockFma {
    BlockFma::published(PublishedModel::B200Rn, fmt)
}

fn bits(p: &BlockFma, c: f32, pairs: &[(u32, u32)]) -> u32 {
    p.dot(c, pairs.iter().copied()).to_bits()
}

#[test]
fn final_truncation_differs_from_round_to_nearest() {
    // c = 1 + 2^-23 and the product 2^-24 + 2^-25 = 0.75 ulp of c. Exact
    // sum 1 + 1.75·2^-23: truncated to 1 + 2^-23, to nearest 1 + 2^-22.
    let c = 1.0 + f32::EPSILON;
    let pair = [(bf(1.5), bf(p2(-24)))];
    for p in [a100(InputFormat::Bf16), h100(InputFormat::Bf16)] {
        assert_eq!(bits(&p, c, &pair), c.to_bits(), "{:?}", p.source);
    }
    assert_eq!(
        bits(&rn(InputFormat::Bf16), c, &pair),
        (1.0f32 + 2.0 * f32::EPSILON).to_bits()
    );
    // negative sums truncate toward zero too: −(1 + 1.75·2^-23) → −(1 + 2^-23)
    let neg = [(bf(-1.5), bf(p2(-24)))];
    assert_eq!(bits(&h100(InputFormat::Bf16), -c, &neg), (-c).to_bits());
}

#[test]
fn a_product_below_the_extra_bits_is_shifted_out() {
    // c = 1; sixteen products of 2^-26 on H100 (23 + 2 fraction bits): each
    // aligned product is 2^-26 / 2^-25 < 1 unit → 0. The exact sum
    // 1 + 2^-22 is two ulps above 1; the block gives exactly 1.
    let p = h100(InputFormat::Bf16);
    let pairs = [(bf(p2(-13)), bf(p2(-13))); 16];
    assert_eq!(bits(&p, 1.0, &pairs), 1.0f32.to_bits());
    // One bit more of alignment keeps them: 2^-26 is one unit at 26 bits.
    let wide = BlockFma {
        extra_align_bits: 3,
        ..p
    };
    assert_eq!(
        bits(&wide, 1.0, &pairs),
        (1.0f32 + p2(-22) as f32).to_bits()
    );
    // On A100 (23 + 1 bits) 2^-25 is already below the grid: eight of them
    // leave c = 1 unchanged, where the exact sum is 1 + 2^-22.
    let pairs = [(bf(p2(-12)), bf(p2(-13))); 8];
    assert_eq!(
        bits(&a100(InputFormat::Bf16), 1.0, &pairs),
        1.0f32.to_bits()
    );
}

#[test]
fn cancellation_gives_positive_zero() {
    for p in [a100(InputFormat::F16), h100(InputFormat::Bf16)] {
        let one = if p.input == InputFormat::F16 {
            hf(1.0)
        } else {
            bf(1.0)
        };
        let m_one = one | 0x8000;
        // 1 − 1·1 = +0, and −1 + 1·1 = +0 (an exact zero sum is +0)
        assert_eq!(bits(&p, 1.0, &[(one, m_one)]), 0);
        assert_eq!(bits(&p, -1.0, &[(one, one)]), 0);
        // x·1 + (−x)·1 with c = −0: +0 (IEEE would give +0 here too)
        assert_eq!(bits(&p, -0.0, &[(one, one), (m_one, one)]), 0);
        // all products zero and c = −0: the model gives +0 where IEEE
        // arithmetic gives −0 (Generic_BFMA_TC.m 81–86); not yet confirmed
        // on hardware (the published validation compares values only)
        assert_eq!(bits(&p, -0.0, &[(one | 0x8000, 0)]), 0);
        assert_eq!(bits(&p, -0.0, &[]), 0x8000_0000, "no products: c itself");
    }
}

#[test]
fn negative_sum_below_the_smallest_subnormal_is_negative_zero() {
    // bf16 2^-76 · −2^-76 = −2^-152: the block exponent is clamped to −133
    // (H100), the grid is 2^-158, the product is −64 units, a non-zero sum.
    // Truncated to f32 (grid 2^-149) it is −0: the sign survives (the
    // MATLAB model negates a zero magnitude, Generic_BFMA_TC.m 315–317).
    // The issue notes that MMA-Sim gives the other sign; a GPU settles it.
    let pairs = [(bf(p2(-76)), bf(-p2(-76)))];
    assert_eq!(bits(&h100(InputFormat::Bf16), 0.0, &pairs), 0x8000_0000);
    assert_eq!(bits(&a100(InputFormat::Bf16), 0.0, &pairs), 0x8000_0000);
    // to nearest: 2^-152 is below half of 2^-149 → −0 as well
    assert_eq!(bits(&rn(InputFormat::Bf16), 0.0, &pairs), 0x8000_0000);
    // −1.5·2^-150 rounds to nearest to −2^-149, and truncates to −0
    let pairs = [(bf(-1.5 * p2(-75)), bf(p2(-75)))];
    assert_eq!(bits(&rn(InputFormat::Bf16), 0.0, &pairs), 0x8000_0001);
    assert_eq!(bits(&h100(InputFormat::Bf16), 0.0, &pairs), 0x8000_0000);
    // but a negative product that alignment drops entirely leaves an exact
    // zero sum: +0. bf16 2^-80·−2^-80 = −2^-160 is below the H100 grid 2^-158.
    let pairs = [(bf(p2(-80)), bf(-p2(-80)))];
    assert_eq!(bits(&h100(InputFormat::Bf16), 0.0, &pairs), 0);
}

#[test]
fn subnormal_inputs_and_outputs() {
    // f16 subnormals: 2^-24 · 2^-24 = 2^-48, exact (block exponent −28)
    let tiny = hf(p2(-24));
    assert_eq!(tiny, 1);
    assert_eq!(
        bits(&a100(InputFormat::F16), 0.0, &[(tiny, tiny)]),
        (p2(-48) as f32).to_bits()
    );
    // ... but beside c = 1 it is shifted out entirely
    assert_eq!(
        bits(&a100(InputFormat::F16), 1.0, &[(tiny, tiny)]),
        1.0f32.to_bits()
    );
    // bf16 subnormal 2^-133 times 1: an f32 subnormal, 2^-133 = 2^16 · 2^-149
    assert_eq!(
        bits(&h100(InputFormat::Bf16), 0.0, &[(1, bf(1.0))]),
        0x0001_0000
    );
    // 1.5·2^-149 is not an f32: truncated to 2^-149, to nearest 2^-148
    let pairs = [(bf(1.5 * p2(-75)), bf(p2(-74)))];
    assert_eq!(bits(&h100(InputFormat::Bf16), 0.0, &pairs), 1);
    assert_eq!(bits(&rn(InputFormat::Bf16), 0.0, &pairs), 2);
    // a subnormal c is aligned with exponent −126 and no implicit bit
    let c = f32::from_bits(0x0000_0003); // 3·2^-149
    assert_eq!(bits(&a100(InputFormat::Bf16), c, &pairs), 4);
    // tf32 subnormal operand: 2^-127 · 2 = 2^-126 (the smallest normal)
    let t = 0x0040_0000; // 2^-127
    let two = 2.0f32.to_bits();
    assert_eq!(
        bits(&h100(InputFormat::Tf32), 0.0, &[(t, two)]),
        0x0080_0000
    );
}

#[test]
fn the_exponent_clamp_truncates_tiny_products() {
    // Eight bf16 products, all far below the f32 range: seven of
    // 135·2^-159 (27·2^-80 · 5·2^-79) and one of 159·2^-160
    // (53·2^-84 · 3·2^-76). Exact sum 2049·2^-160 = 2^-149 + 2^-160, which
    // truncates to the smallest subnormal. On A100 the block exponent is
    // raised from −153 to the clamp −132, so the grid is 2^-156: the terms
    // are 16.875 → 16 and 9.9375 → 9 units, 7·16 + 9 = 121 < 128 units
    // = 2^-149, and the result is +0. Without the clamp nothing is lost.
    let mut pairs = vec![(bf(27.0 * p2(-80)), bf(5.0 * p2(-79))); 7];
    pairs.push((bf(53.0 * p2(-84)), bf(3.0 * p2(-76))));
    let p = a100(InputFormat::Bf16);
    assert_eq!(p.min_align_exp, -132);
    assert_eq!(bits(&p, 0.0, &pairs), 0);
    let unclamped = BlockFma {
        min_align_exp: -1000,
        ..p
    };
    assert_eq!(bits(&unclamped, 0.0, &pairs), 1);
}

#[test]
fn overflow_gives_infinity_even_when_truncating() {
    // c = 2^127 and 2^127·1: the sum 2^128 has biased exponent 255 → +∞
    // (Generic_BFMA_TC.m 329–335; ExceptionalCasesTest.m test 1). IEEE
    // round-toward-zero would give the largest finite value instead; the
    // hardware's choice is not yet confirmed for mma.sync.
    let c = p2(127) as f32;
    for p in [a100(InputFormat::Bf16), h100(InputFormat::Bf16)] {
        assert_eq!(bits(&p, c, &[(bf(p2(127)), bf(1.0))]), 0x7F80_0000);
        assert_eq!(bits(&p, -c, &[(bf(-p2(127)), bf(1.0))]), 0xFF80_0000);
    }
    // f32::MAX plus less than an ulp stays f32::MAX (truncation)
    let p = h100(InputFormat::Bf16);
    assert_eq!(
        bits(&p, f32::MAX, &[(bf(p2(100)), bf(1.0))]),
        f32::MAX.to_bits()
    );
    // products beyond f32's range are not clamped (prd_limit = 0): 2^254 is
    // +∞ alone, but 2^254 − 2^254 cancels to +0 rather than ∞ − ∞ = NaN
    let big = bf(p2(127));
    assert_eq!(bits(&p, 0.0, &[(big, big)]), 0x7F80_0000);
    assert_eq!(bits(&p, 0.0, &[(big, big), (big | 0x8000, big)]), 0);
    // and a small term beside them is below the 2^229 grid: still +0
    let pairs = [(big, big), (big | 0x8000, big), (bf(p2(-100)), bf(1.0))];
    assert_eq!(bits(&p, 0.0, &pairs), 0);
}

#[test]
fn infinities() {
    let p = h100(InputFormat::Bf16);
    let (inf, ninf, one, zero) = (0x7F80, 0xFF80, bf(1.0), 0);
    // ∞·0 → NaN
    assert_eq!(bits(&p, 1.0, &[(inf, zero)]), CANONICAL_NAN);
    assert_eq!(bits(&p, 1.0, &[(0x8000, ninf)]), CANONICAL_NAN);
    // +∞ + −∞ → NaN, from products or from c
    assert_eq!(bits(&p, 0.0, &[(inf, one), (ninf, one)]), CANONICAL_NAN);
    assert_eq!(bits(&p, f32::NEG_INFINITY, &[(inf, one)]), CANONICAL_NAN);
    // (+∞)·(−∞) → −∞ (ExceptionalCasesTest.m test 2)
    assert_eq!(bits(&p, 0.0, &[(inf, ninf)]), 0xFF80_0000);
    // ∞ with finite terms → ∞; c = −∞ alone → −∞
    assert_eq!(bits(&p, 5.0, &[(inf, one), (one, one)]), 0x7F80_0000);
    assert_eq!(bits(&p, f32::NEG_INFINITY, &[(one, one)]), 0xFF80_0000);
    // f16 and tf32 infinities
    let q = a100(InputFormat::F16);
    assert_eq!(bits(&q, 0.0, &[(0x7C00, hf(2.0))]), 0x7F80_0000);
    let t = a100(InputFormat::Tf32);
    assert_eq!(bits(&t, 0.0, &[(0xFF80_0000, 0)]), CANONICAL_NAN);
    // a tf32 NaN whose payload is only in the 13 unread bits reads as ∞
    assert_eq!(
        bits(&t, 0.0, &[(0x7F80_0001, 1.0f32.to_bits())]),
        0x7F80_0000
    );
}

#[test]
fn nan_propagates_as_the_canonical_nan() {
    // Any NaN (operand or c, either sign, any payload) gives 0x7FFFFFFF,
    // the f32 NaN NVIDIA's host code writes. The published model compares
    // values only, so the hardware's NaN bits are not yet confirmed.
    let p = a100(InputFormat::Bf16);
    let one = bf(1.0);
    assert_eq!(bits(&p, 0.0, &[(0xFFC1, one)]), CANONICAL_NAN);
    assert_eq!(bits(&p, 0.0, &[(one, 0x7F81)]), CANONICAL_NAN);
    assert_eq!(
        bits(&p, f32::from_bits(0xFFC0_0001), &[(one, one)]),
        CANONICAL_NAN
    );
    // NaN beats infinities
    assert_eq!(bits(&p, f32::INFINITY, &[(0x7FC0, one)]), CANONICAL_NAN);
    // a NaN in the second block of a chain: the first block's finite result
    // meets it as c's partner and the result is NaN
    let mut pairs = vec![(one, one); 8];
    pairs.push((0x7FC0, one));
    assert_eq!(bits(&p, 0.0, &pairs), CANONICAL_NAN);
    // and NaN as c of later blocks stays NaN
    let mut pairs = vec![(0x7FC0, one)];
    pairs.extend(vec![(one, one); 16]);
    assert_eq!(bits(&p, 0.0, &pairs), CANONICAL_NAN);
}

#[test]
fn blocks_run_in_ascending_k() {
    // A100 bf16, width 8, a k16 dot: k 0–7 first, then k 8–15.
    // First block: eight products of 2^-25 with c = 0 → 2^-22 exactly.
    // Second block: c = 2^-22 with the product 1: 2^-22 is 4 units of the
    // 2^-24 grid → 1 + 2^-22. In the other order, 1 comes first and the
    // eight 2^-25 are each below the grid beside it → 1.
    let p = a100(InputFormat::Bf16);
    let small = (bf(p2(-12)), bf(p2(-13)));
    let big = (bf(1.0), bf(1.0));
    let zero = (0, 0);
    let mut pairs = vec![small; 8];
    pairs.push(big);
    pairs.extend([zero; 7]);
    let d = p.dot(0.0, pairs.iter().copied());
    assert_eq!(d.to_bits(), (1.0 + p2(-22) as f32).to_bits());
    let ascending = p.block(p.block(0.0, &pairs[..8]), &pairs[8..]);
    let descending = p.block(p.block(0.0, &pairs[8..]), &pairs[..8]);
    assert_eq!(d.to_bits(), ascending.to_bits());
    assert_eq!(descending, 1.0);
    // On H100 (width 16) the same sixteen products are one block: the
    // eight 2^-25 are aligned beside 1 on the 2^-25 grid and kept → also
    // 1 + 2^-22, while the A100's other order would lose them.
    assert_eq!(
        h100(InputFormat::Bf16)
            .dot(0.0, pairs.iter().copied())
            .to_bits(),
        (1.0 + p2(-22) as f32).to_bits()
    );
}

#[test]
fn tf32_operands_ignore_their_low_13_bits() {
    let p = h100(InputFormat::Tf32);
    let a = 1.5f32.to_bits();
    let b = 3.0f32.to_bits();
    let d = bits(&p, 0.25, &[(a | 0x1FFF, b | 0x1000)]);
    assert_eq!(d, 4.75f32.to_bits());
}
