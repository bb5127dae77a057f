//! The conversions of `ptxsmith::tensor_core` (`cvt.rn.{f16,bf16}{x2}.f32`,
//! `cvt.rna.tf32.f32` and back) against the `half` crate and an f64
//! computation: exhaustive over every f16 and bf16 for the widening
//! direction and the round trip, every rounding boundary (each midpoint
//! between neighbours and the f32 values on either side of it) for the
//! narrowing direction, and random f32 patterns.

use ptxsmith::tensor_core::{
    CANONICAL_NAN, CANONICAL_NAN_F16, CANONICAL_NAN_TF32, bf16_to_f32, cvt_rn_bf16x2_f32,
    cvt_rn_f16x2_f32, f16_to_f32, f32_to_bf16_rn, f32_to_f16_rn, f32_to_tf32_rna, tf32_to_f32,
};

mod common;

use common::Rng;

#[test]
fn f16_to_f32_is_exact_for_every_f16() {
    for h in 0..=u16::MAX {
        let want = half::f16::from_bits(h).to_f32();
        let got = f16_to_f32(h);
        if want.is_nan() {
            assert_eq!(got.to_bits(), CANONICAL_NAN, "{h:04x}");
        } else {
            assert_eq!(got.to_bits(), want.to_bits(), "{h:04x}");
            assert_eq!(f32_to_f16_rn(got), h, "round trip of {h:04x}");
        }
    }
}

#[test]
fn bf16_to_f32_is_exact_for_every_bf16() {
    for h in 0..=u16::MAX {
        let want = half::bf16::from_bits(h).to_f32();
        let got = bf16_to_f32(h);
        if want.is_nan() {
            assert_eq!(got.to_bits(), CANONICAL_NAN, "{h:04x}");
        } else {
            assert_eq!(got.to_bits(), want.to_bits(), "{h:04x}");
            assert_eq!(f32_to_bf16_rn(got), h, "round trip of {h:04x}");
        }
    }
}

fn check_f16(x: f32) {
    let got = f32_to_f16_rn(x);
    if x.is_nan() {
        assert_eq!(got, CANONICAL_NAN_F16, "{:08x}", x.to_bits());
    } else {
        let want = half::f16::from_f32(x).to_bits();
        assert_eq!(got, want, "f16 of {:08x} ({x:e})", x.to_bits());
    }
}

fn check_bf16(x: f32) {
    let got = f32_to_bf16_rn(x);
    if x.is_nan() {
        assert_eq!(got, CANONICAL_NAN_F16, "{:08x}", x.to_bits());
    } else {
        let want = half::bf16::from_f32(x).to_bits();
        assert_eq!(got, want, "bf16 of {:08x} ({x:e})", x.to_bits());
    }
}

/// Each midpoint between neighbouring values of a 16-bit format (as f32,
/// exact), the f32 values on either side of it, and the values themselves.
fn boundaries(to_f32: fn(u16) -> f32) -> Vec<f32> {
    let mut out = Vec::new();
    for h in 0..0x7FFFu16 {
        let (lo, hi) = (to_f32(h), to_f32(h + 1));
        if !lo.is_finite() {
            continue;
        }
        let hi = if hi.is_finite() {
            f64::from(hi)
        } else {
            // the first value past the largest: where overflow starts
            2.0 * f64::from(lo) - f64::from(to_f32(h - 1))
        };
        let mid = ((f64::from(lo) + hi) / 2.0) as f32;
        assert_eq!(f64::from(mid), (f64::from(lo) + hi) / 2.0, "midpoint exact");
        for m in [
            lo,
            mid,
            f32::from_bits(mid.to_bits() - 1),
            f32::from_bits(mid.to_bits() + 1),
        ] {
            out.push(m);
            out.push(-m);
        }
    }
    out
}

#[test]
fn f32_to_f16_rounds_to_nearest_even() {
    for x in boundaries(f16_to_f32) {
        check_f16(x);
    }
    let specials = [
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7F80_0001),
        f32::MAX,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        65504.0,
        65519.99,
        65520.0,
        2f32.powi(-25),
        2f32.powi(-25) * 1.0000001,
        2f32.powi(-26),
    ];
    for x in specials {
        check_f16(x);
    }
    let mut rng = Rng(1);
    for _ in 0..2_000_000 {
        check_f16(f32::from_bits(rng.next() as u32));
    }
}

#[test]
fn f32_to_bf16_rounds_to_nearest_even() {
    for x in boundaries(bf16_to_f32) {
        check_bf16(x);
    }
    for x in [
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::MAX,
        f32::from_bits(1),
    ] {
        check_bf16(x);
    }
    // a NaN whose payload is only in the low 16 bits stays a NaN
    assert_eq!(
        f32_to_bf16_rn(f32::from_bits(0x7F80_0001)),
        CANONICAL_NAN_F16
    );
    let mut rng = Rng(2);
    for _ in 0..2_000_000 {
        check_bf16(f32::from_bits(rng.next() as u32));
    }
}

/// `cvt.rna.tf32.f32` computed in f64: the nearer of the two tf32 values
/// around x, ties away from zero.
fn tf32_reference(x: f32) -> u32 {
    if x.is_nan() {
        return CANONICAL_NAN_TF32;
    }
    if x.is_infinite() {
        return x.to_bits();
    }
    let down = x.to_bits() & 0xFFFF_E000; // toward zero
    let up = down + 0x2000; // away from zero (may be ∞)
    let (xd, dd, du) = (
        f64::from(x).abs(),
        f64::from(f32::from_bits(down)).abs(),
        // the value past the largest tf32 is 2^128 (bits of ∞)
        if up & 0x7FFF_FFFF == 0x7F80_0000 {
            2f64.powi(128)
        } else {
            f64::from(f32::from_bits(up)).abs()
        },
    );
    if xd - dd >= du - xd { up } else { down }
}

#[test]
fn f32_to_tf32_rounds_to_nearest_ties_away() {
    let mut xs = vec![
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::from_bits(0x7F80_0001),
        f32::MAX,
        f32::from_bits(0x7F7F_E000),
        f32::from_bits(0x7F7F_EFFF),
        f32::from_bits(0x7F7F_F000),
        f32::from_bits(1),
        f32::from_bits(0x1000),
        f32::from_bits(0x0FFF),
        1.0 + 2f32.powi(-11),
        1.0 + 2f32.powi(-11) + 2f32.powi(-23),
        1.0 + 3.0 * 2f32.powi(-11),
    ];
    let mut rng = Rng(3);
    for _ in 0..2_000_000 {
        xs.push(f32::from_bits(rng.next() as u32));
    }
    for x in xs {
        for x in [x, -x] {
            let got = f32_to_tf32_rna(x);
            assert_eq!(got, tf32_reference(x), "tf32 of {:08x}", x.to_bits());
            assert_eq!(got & 0x1FFF, 0, "low bits of {:08x}", x.to_bits());
            let back = tf32_to_f32(got);
            if x.is_nan() {
                assert_eq!(back.to_bits(), CANONICAL_NAN);
            } else {
                assert_eq!(back.to_bits(), got);
            }
        }
    }
    // ties away: 1 + 2^-11 is halfway between 1 and 1 + 2^-10
    assert_eq!(
        f32_to_tf32_rna(1.0 + 2f32.powi(-11)),
        (1.0 + 2f32.powi(-10)).to_bits()
    );
    assert_eq!(
        f32_to_tf32_rna(-(1.0 + 2f32.powi(-11))),
        (-(1.0 + 2f32.powi(-10))).to_bits()
    );
    // tf32_to_f32 reads what the tensor core reads
    assert_eq!(tf32_to_f32(0x3F80_1FFF).to_bits(), 0x3F80_0000);
    assert_eq!(tf32_to_f32(0x7F80_0001), f32::INFINITY);
}

#[test]
fn packed_forms_put_a_in_the_upper_half() {
    assert_eq!(cvt_rn_f16x2_f32(1.0, 2.0), 0x3C00_4000);
    assert_eq!(cvt_rn_bf16x2_f32(1.0, -2.0), 0x3F80_C000);
    assert_eq!(cvt_rn_bf16x2_f32(f32::NAN, 0.0), 0x7FFF_0000);
}
