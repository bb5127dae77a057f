//! Unit tests with hand-derived bits. The reference values here come from
//! the format definitions (OCP OFP8 table in the module docs), written
//! independently of the encoder: `sign · 2^(e−bias) · (1 + m/2^mbits)` for
//! normals and `sign · m · 2^(1−bias−mbits)` for subnormals, in f64.

use super::*;

fn f(bits: u32) -> f32 {
    f32::from_bits(bits)
}

fn up(x: f32) -> f32 {
    f32::from_bits(x.to_bits() + 1)
}

fn down(x: f32) -> f32 {
    f32::from_bits(x.to_bits() - 1)
}

/// (mbits, bias) of a format, restated here rather than read from `Spec`.
fn layout(format: Format) -> (u32, i32) {
    match format {
        Format::E4M3 => (3, 7),
        Format::E5M2 => (2, 15),
    }
}

/// Independent value of a finite, non-NaN code (f64, exact).
fn reference_value(format: Format, code: u8) -> f64 {
    let (mbits, bias) = layout(format);
    let sign = if code & 0x80 != 0 { -1.0 } else { 1.0 };
    let e = ((code & 0x7F) >> mbits) as i32;
    let m = (code & ((1 << mbits) - 1)) as f64;
    let frac = (1u32 << mbits) as f64;
    if e == 0 {
        sign * m * 2f64.powi(1 - bias - mbits as i32)
    } else {
        sign * 2f64.powi(e - bias) * (1.0 + m / frac)
    }
}

fn is_nan_code(format: Format, code: u8) -> bool {
    match format {
        Format::E4M3 => code & 0x7F == 0x7F,
        Format::E5M2 => code & 0x7F > 0x7C,
    }
}

fn check(format: Format, x: f32, want: u8) {
    let got = format.encode(x);
    assert_eq!(
        got,
        want,
        "{format:?} encode({x:e} = {:#010x}) = {got:#04x}, want {want:#04x}",
        x.to_bits()
    );
    assert_eq!(
        encode_branch_free(format, x),
        want,
        "branch-free {format:?} {x:e}"
    );
}

// --- E4M3 -------------------------------------------------------------------

#[test]
fn e4m3_landmarks() {
    let e = Format::E4M3;
    // Zeros keep their sign.
    check(e, 0.0, 0x00);
    check(e, -0.0, 0x80);
    // 1.0 = 2^(7−7)·1.0 → E = 7, M = 0.
    check(e, 1.0, 0x38);
    check(e, -1.0, 0xB8);
    // 1.0625 is the tie between 1.0 (M=0) and 1.125 (M=1): even → 1.0.
    check(e, 1.0625, 0x38);
    check(e, up(1.0625), 0x39);
    // 1.1875 is the tie between 1.125 (M=1) and 1.25 (M=2): even → 1.25.
    check(e, 1.1875, 0x3A);
    check(e, down(1.1875), 0x39);
    // Largest finite: 448 = 2^8 · 1.75 → E = 15, M = 6.
    check(e, 448.0, 0x7E);
    check(e, -448.0, 0xFE);
    check(e, down(448.0), 0x7E); // 416 < x < 448, above the 432 midpoint
    check(e, 432.0, 0x7E); // tie 416 (M=5) / 448 (M=6): even → 448
    check(e, down(432.0), 0x7D);
    // 464: tie between 448 and the non-existent 480; even → 448 anyway.
    check(e, 464.0, 0x7E);
    check(e, up(464.0), 0x7E); // would be 480 (NaN slot): satfinite
    check(e, 480.0, 0x7E);
    check(e, -480.0, 0xFE);
    check(e, 1.0e6, 0x7E);
    check(e, f32::MAX, 0x7E);
    check(e, f32::MIN, 0xFE);
    check(e, f32::INFINITY, 0x7E);
    check(e, f32::NEG_INFINITY, 0xFE);
}

#[test]
fn e4m3_subnormal_boundaries() {
    let e = Format::E4M3;
    let two_m10 = f(0x3A80_0000); // 2^-10
    let two_m9 = f(0x3B00_0000); // 2^-9, smallest subnormal, code 0x01
    let two_m6 = f(0x3C80_0000); // 2^-6, smallest normal, code 0x08
    assert_eq!(two_m10, 2f32.powi(-10));
    assert_eq!(two_m6, 2f32.powi(-6));
    // 2^-10 is the tie between 0 and 2^-9: even → 0; just above → 0x01.
    check(e, two_m10, 0x00);
    check(e, -two_m10, 0x80);
    check(e, up(two_m10), 0x01);
    check(e, -up(two_m10), 0x81);
    check(e, down(two_m10), 0x00);
    check(e, two_m9, 0x01);
    // 1.5·2^-9 ties between 0x01 and 0x02: even → 0x02.
    check(e, 1.5 * two_m9, 0x02);
    check(e, down(1.5 * two_m9), 0x01);
    // 2.5·2^-9 ties between 0x02 and 0x03: even → 0x02.
    check(e, 2.5 * two_m9, 0x02);
    check(e, up(2.5 * two_m9), 0x03);
    // Largest subnormal 7·2^-9 = 0x07; 7.5·2^-9 ties 0x07 / 0x08 → 0x08.
    check(e, 7.0 * two_m9, 0x07);
    check(e, 7.5 * two_m9, 0x08);
    check(e, down(7.5 * two_m9), 0x07);
    // The normal boundary and its neighbours all give 0x08.
    check(e, two_m6, 0x08);
    check(e, down(two_m6), 0x08);
    check(e, up(two_m6), 0x08);
    check(e, -two_m6, 0x88);
    // f32 subnormals are far below 2^-10.
    check(e, f(0x0000_0001), 0x00);
    check(e, f(0x8000_0001), 0x80);
    check(e, f(0x007F_FFFF), 0x00);
    check(e, f32::MIN_POSITIVE, 0x00);
}

#[test]
fn nans_encode_to_7f() {
    let nans = [
        f32::NAN,
        f(0x7FC0_0000), // quiet, no payload
        f(0x7FC0_0001), // quiet with payload
        f(0x7F80_0001), // signalling, smallest payload
        f(0x7FBF_FFFF), // signalling, largest payload
        f(0x7FFF_FFFF),
        f(0xFFC0_0000), // negative quiet
        f(0xFF80_0001), // negative signalling
        f(0xFFFF_FFFF),
    ];
    for &x in &nans {
        assert!(x.is_nan());
        check(Format::E4M3, x, 0x7F);
        check(Format::E5M2, x, 0x7F);
    }
}

/// Every midpoint between consecutive codes (normal and subnormal, both
/// signs) and its two f32 neighbours. The midpoint goes to the code with
/// the even mantissa, which is the even code since the code's low bit is
/// the mantissa's low bit.
#[test]
fn every_midpoint_and_neighbours() {
    for format in [Format::E4M3, Format::E5M2] {
        let max = format.max_code();
        let mut count = 0;
        for c in 0..max {
            let lo = reference_value(format, c);
            let hi = reference_value(format, c + 1);
            let mid64 = (lo + hi) / 2.0;
            let mid = mid64 as f32;
            assert_eq!(mid as f64, mid64, "midpoint must be exact in f32");
            let even = if c % 2 == 0 { c } else { c + 1 };
            for sign in [0u8, 0x80] {
                let s = if sign == 0 { 1.0 } else { -1.0 };
                check(format, s * mid, even | sign);
                check(format, s * down(mid), c | sign);
                check(format, s * up(mid), (c + 1) | sign);
                // The codes themselves round-trip.
                check(format, s * lo as f32, c | sign);
            }
            count += 1;
        }
        assert_eq!(count as u8, max);
    }
}

#[test]
fn decode_all_256_e4m3() {
    for b in 0..=255u8 {
        let got = decode_e4m3(b);
        assert_eq!(got.to_bits(), DECODE_E4M3[b as usize].to_bits());
        if b & 0x7F == 0x7F {
            assert!(got.is_nan(), "{b:#04x}");
            assert_eq!(got.to_bits(), CANONICAL_NAN.to_bits());
            continue;
        }
        let want = reference_value(Format::E4M3, b);
        assert_eq!(got as f64, want, "decode_e4m3({b:#04x})");
        // Signed zero is kept.
        assert_eq!(got.is_sign_negative(), b & 0x80 != 0, "{b:#04x}");
        // Finite non-NaN codes round-trip through the encoder.
        assert_eq!(encode_e4m3(got), b);
    }
    assert_eq!(decode_e4m3(0x7E), 448.0);
    assert_eq!(decode_e4m3(0xFE), -448.0);
    assert_eq!(decode_e4m3(0x08), 2f32.powi(-6));
    assert_eq!(decode_e4m3(0x01), 2f32.powi(-9));
    assert_eq!(decode_e4m3(0x07), 7.0 * 2f32.powi(-9));
    assert_eq!(decode_e4m3(0x78), 256.0); // E = 15 is finite in E4M3
    assert_eq!(decode_e4m3(0x80).to_bits(), 0x8000_0000);
}

// --- E5M2 -------------------------------------------------------------------

#[test]
fn e5m2_landmarks() {
    let e = Format::E5M2;
    check(e, 0.0, 0x00);
    check(e, -0.0, 0x80);
    check(e, 1.0, 0x3C); // E = 15, M = 0
    check(e, 1.125, 0x3C); // tie 1.0 / 1.25 → even
    check(e, 1.375, 0x3E); // tie 1.25 (M=1) / 1.5 (M=2) → even
    check(e, 57344.0, 0x7B);
    check(e, -57344.0, 0xFB);
    check(e, 61440.0, 0x7B); // tie 57344 / 65536 (Inf): satfinite
    check(e, down(61440.0), 0x7B);
    check(e, 65536.0, 0x7B);
    check(e, f32::MAX, 0x7B);
    check(e, f32::INFINITY, 0x7B);
    check(e, f32::NEG_INFINITY, 0xFB);
    // Subnormal step 2^-16; 2^-17 ties to 0.
    let two_m17 = 2f32.powi(-17);
    check(e, two_m17, 0x00);
    check(e, -two_m17, 0x80);
    check(e, up(two_m17), 0x01);
    check(e, 2f32.powi(-16), 0x01);
    check(e, 3.5 * 2f32.powi(-16), 0x04); // tie 0x03 / 0x04 (min normal)
    check(e, 2f32.powi(-14), 0x04);
    check(e, down(2f32.powi(-14)), 0x04);
}

#[test]
fn decode_all_256_e5m2() {
    for b in 0..=255u8 {
        let got = decode_e5m2(b);
        assert_eq!(got.to_bits(), DECODE_E5M2[b as usize].to_bits());
        match b & 0x7F {
            0x7C => {
                assert!(got.is_infinite());
                assert_eq!(got.is_sign_negative(), b & 0x80 != 0);
            }
            0x7D..=0x7F => {
                assert!(is_nan_code(Format::E5M2, b));
                assert_eq!(got.to_bits(), CANONICAL_NAN.to_bits());
            }
            _ => {
                assert_eq!(got as f64, reference_value(Format::E5M2, b), "{b:#04x}");
                assert_eq!(got.is_sign_negative(), b & 0x80 != 0);
                assert_eq!(encode_e5m2(got), b);
            }
        }
    }
    assert_eq!(decode_e5m2(0x7B), 57344.0);
    assert_eq!(decode_e5m2(0x01), 2f32.powi(-16));
}

// --- Fast paths -------------------------------------------------------------

#[test]
fn slices_match_scalar_and_check_lengths() {
    let xs: Vec<f32> = (0..4096u32)
        .map(|i| f32::from_bits(i.wrapping_mul(0x9E37_79B9)))
        .collect();
    for format in [Format::E4M3, Format::E5M2] {
        let mut codes = vec![0u8; xs.len()];
        encode_slice(format, &xs, &mut codes).unwrap();
        for (&x, &c) in xs.iter().zip(&codes) {
            assert_eq!(c, format.encode(x));
        }
        let all: Vec<u8> = (0..=255).collect();
        let mut ys = vec![0f32; 256];
        decode_slice(format, &all, &mut ys).unwrap();
        for (&b, &y) in all.iter().zip(&ys) {
            assert_eq!(y.to_bits(), format.decode(b).to_bits());
        }
        let err = encode_slice(format, &xs, &mut codes[..3]).unwrap_err();
        assert!(
            matches!(err, Error::InvalidArgument(ref m) if m.contains("4096") && m.contains('3'))
        );
        assert!(decode_slice(format, &all, &mut ys[..1]).is_err());
    }
}

// --- Scaling ----------------------------------------------------------------

#[test]
fn ptx_max_rules() {
    assert_eq!(ptx_max_f32(f32::NAN, 1.0), 1.0);
    assert_eq!(ptx_max_f32(1.0, f32::NAN), 1.0);
    assert_eq!(ptx_max_f32(f32::NAN, -0.0).to_bits(), 0x8000_0000);
    assert!(ptx_max_f32(f32::NAN, f(0xFFC0_0000)).is_nan());
    assert_eq!(ptx_max_f32(-0.0, 0.0).to_bits(), 0);
    assert_eq!(ptx_max_f32(0.0, -0.0).to_bits(), 0);
    assert_eq!(ptx_max_f32(-0.0, -0.0).to_bits(), 0x8000_0000);
    assert_eq!(ptx_max_f32(-1.0, -2.0), -1.0);
    assert_eq!(ptx_max_f32(f32::INFINITY, 3.0), f32::INFINITY);
}

#[test]
fn scaling_empty_zero_nan() {
    for xs in [
        &[][..],
        &[0.0, -0.0, 0.0][..],
        &[f32::NAN, f(0xFFC0_0001), f(0x7F80_0001)][..],
    ] {
        let a = absmax(xs);
        assert_eq!(a.to_bits(), 0, "{xs:?}");
        let q = quantize(xs);
        assert_eq!((q.scale, q.scale_inv, q.amax.to_bits()), (1.0, 1.0, 0));
        assert_eq!(q.codes.len(), xs.len());
        for (&x, &c) in xs.iter().zip(&q.codes) {
            assert_eq!(c, encode_e4m3(x)); // zeros keep sign, NaN → 0x7F
        }
    }
    assert_eq!(quantize(&[-0.0]).codes, vec![0x80]);
    assert_eq!(quantize(&[f32::NAN]).codes, vec![0x7F]);
}

#[test]
fn scaling_ignores_nan_and_handles_inf() {
    let q = quantize(&[f32::NAN, 2.0, -1.0]);
    assert_eq!(q.amax, 2.0);
    assert_eq!(q.scale, 224.0);
    assert_eq!(q.scale_inv, 1.0 / 224.0);
    assert_eq!(q.codes, vec![0x7F, 0x7E, encode_e4m3(-224.0)]);
    assert_eq!(decode_e4m3(q.codes[2]), -224.0);

    let q = quantize(&[1.0, f32::INFINITY, -3.0, f32::NEG_INFINITY]);
    assert_eq!(q.amax, f32::INFINITY);
    assert_eq!((q.scale, q.scale_inv), (1.0, 1.0));
    assert_eq!(q.codes, vec![0x38, 0x7E, encode_e4m3(-3.0), 0xFE]);
    assert_eq!(absmax(&[f32::NEG_INFINITY]), f32::INFINITY);
}

#[test]
fn amax_position_does_not_matter() {
    let base = [0.5f32, -0.25, 0.125, 0.75, -0.5];
    for pos in [0, 2, 5] {
        let mut xs = base.to_vec();
        xs.insert(pos, -3.5);
        let q = quantize(&xs);
        assert_eq!(q.amax, 3.5);
        assert_eq!(q.scale, 128.0);
        assert_eq!(
            q.codes[pos], 0xFE,
            "amax element at {pos} saturates to -448"
        );
        let y = dequantize(&q.codes, q.scale_inv);
        assert_eq!(y[pos], -3.5);
        // Reversing the input gives the same amax bits (order independent).
        let mut rev = xs.clone();
        rev.reverse();
        assert_eq!(absmax(&rev).to_bits(), q.amax.to_bits());
    }
}

#[test]
fn scale_rules() {
    assert_eq!(scale_for_amax(448.0), 1.0);
    assert_eq!(scale_for_amax(1.0), 448.0);
    assert_eq!(scale_for_amax_as(1.0, Format::E5M2), 57344.0);
    assert_eq!(scale_for_amax(3.0), 448.0f32 / 3.0);
    assert_eq!(scale_for_amax(0.0), 1.0);
    assert_eq!(scale_for_amax(-0.0), 1.0);
    assert_eq!(scale_for_amax(-2.0), 1.0);
    assert_eq!(scale_for_amax(f32::NAN), 1.0);
    assert_eq!(scale_for_amax(f32::INFINITY), 1.0);
    // Subnormal amax: 448 / amax overflows → 1.0.
    assert_eq!(scale_for_amax(f(1)), 1.0);
    assert_eq!(scale_for_amax(1.0e-40), 1.0);
    assert_eq!(scale_for_amax(f32::MIN_POSITIVE), 1.0);
    // Tiny normal amax whose quotient stays finite is used as is.
    let s = scale_for_amax(2.0e-36);
    assert!(s.is_finite() && s == 448.0f32 / 2.0e-36);
    // The largest finite amax.
    assert_eq!(scale_for_amax(f32::MAX), 448.0 / f32::MAX);
    // Data with a subnormal amax: scale 1, everything flushes to ±0.
    let q = quantize(&[1.0e-40, -1.0e-41]);
    assert_eq!((q.amax, q.scale), (1.0e-40, 1.0));
    assert_eq!(q.codes, vec![0x00, 0x80]);
}

#[test]
fn quantize_with_scale_validation() {
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, -1.0] {
        match quantize_with_scale(&[1.0], bad) {
            Err(Error::InvalidArgument(msg)) => {
                assert!(msg.contains(&format!("{bad:?}")), "{msg}");
            }
            other => panic!("scale {bad:?} accepted: {other:?}"),
        }
    }
    assert_eq!(
        quantize_with_scale(&[1.0, -2.0], 2.0).unwrap(),
        vec![0x40, 0xC8]
    );
    // A subnormal scale is accepted (everything underflows to signed zero).
    assert_eq!(
        quantize_with_scale(&[1.0, -1.0], 1.0e-40).unwrap(),
        vec![0x00, 0x80]
    );
    // Overflow of x * scale saturates.
    assert_eq!(quantize_with_scale(&[3.0e38], 10.0).unwrap(), vec![0x7E]);
    assert_eq!(
        quantize_with_scale_as(&[3.0e38, f32::NAN], 10.0, Format::E5M2).unwrap(),
        vec![0x7B, 0x7F]
    );
}

#[test]
fn e5m2_quantize_round_trip() {
    let xs = [0.0f32, 1.0, -2.0, 4.0, f32::NAN];
    let q = quantize_e5m2(&xs);
    assert_eq!(q.amax, 4.0);
    assert_eq!(q.scale, 14336.0);
    let y = dequantize_e5m2(&q.codes, q.scale_inv);
    assert_eq!(&y[..4], &[0.0, 1.0, -2.0, 4.0]);
    assert!(y[4].is_nan());
}
