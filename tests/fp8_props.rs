//! Property tests of the FP8 host model.

use proptest::prelude::*;
use ptxsmith::kernels::fp8::{self, Format};

const FORMATS: [Format; 2] = [Format::E4M3, Format::E5M2];

/// Brute force: the finite codes at minimal distance from `x` (in f64,
/// exact for these values), independent of the encoder's bit tricks.
fn nearest_codes(format: Format, x: f32) -> (f64, Vec<u8>) {
    let x = x as f64;
    let mut best = f64::INFINITY;
    let mut codes = Vec::new();
    for b in 0..=255u8 {
        let v = format.decode(b);
        if !v.is_finite() {
            continue;
        }
        let d = (v as f64 - x).abs();
        if d < best {
            best = d;
            codes.clear();
        }
        if d == best {
            codes.push(b);
        }
    }
    (best, codes)
}

/// Finite f32s that exercise every range: uniform around the FP8 range,
/// log-uniform magnitudes across subnormals and normals, and raw bits.
fn finite_f32() -> impl Strategy<Value = f32> {
    prop_oneof![
        -70000.0f32..70000.0,
        -500.0f32..500.0,
        (any::<bool>(), -24i32..20, 0.0f32..1.0).prop_map(|(neg, e, t)| {
            let v = 2f32.powi(e) * (1.0 + t);
            if neg { -v } else { v }
        }),
        any::<u32>()
            .prop_map(f32::from_bits)
            .prop_filter("finite", |x| x.is_finite()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// encode is round-to-nearest over the finite codes (saturation is the
    /// nearest finite value too), ties to the even code, sign kept.
    /// |x| < 2^40 keeps the f64 distances of the near candidates exact
    /// (beyond that f64 can no longer tell 57344 from 53248 apart at
    /// distance 2^67; saturation up there is covered exhaustively).
    #[test]
    fn encode_is_nearest_finite(
        x in finite_f32().prop_filter("|x| < 2^40", |x| x.abs() < 2f32.powi(40)),
    ) {
        for format in FORMATS {
            let code = format.encode(x);
            let y = format.decode(code);
            prop_assert!(y.is_finite());
            let (best, candidates) = nearest_codes(format, x);
            prop_assert_eq!(((y as f64) - x as f64).abs(), best, "{:?} x={:e}", format, x);
            prop_assert!(candidates.contains(&code));
            // A tie between two different values goes to the even code.
            let values: Vec<f32> = candidates.iter().map(|&b| format.decode(b)).collect();
            if values.iter().any(|&v| v != y) {
                prop_assert_eq!(code & 1, 0, "{:?} tie at x={:e}", format, x);
            }
            prop_assert_eq!(code & 0x80 != 0, x.is_sign_negative());
        }
    }

    #[test]
    fn fast_paths_equal_readable(bits in prop::collection::vec(any::<u32>(), 0..300)) {
        let xs: Vec<f32> = bits.iter().map(|&b| f32::from_bits(b)).collect();
        for format in FORMATS {
            let mut codes = vec![0u8; xs.len()];
            fp8::host::encode_slice(format, &xs, &mut codes).unwrap();
            let readable: Vec<u8> = xs.iter().map(|&x| format.encode(x)).collect();
            prop_assert_eq!(&codes, &readable);
            let mut ys = vec![0f32; codes.len()];
            fp8::host::decode_slice(format, &codes, &mut ys).unwrap();
            for (&b, &y) in codes.iter().zip(&ys) {
                prop_assert_eq!(y.to_bits(), format.decode(b).to_bits());
            }
        }
    }

    /// |y − x| ≤ (half-ulp relative bound)·|x| + (half the smallest
    /// subnormal)·scale_inv, plus a few f32 roundings of the two scalings.
    #[test]
    fn quantize_round_trip_bound(
        xs in prop::collection::vec(finite_f32(), 1..64),
        nan_at in prop::option::of(0usize..64),
    ) {
        let mut xs = xs;
        if let Some(i) = nan_at {
            let i = i % xs.len();
            xs[i] = f32::NAN;
        }
        for format in FORMATS {
            let q = fp8::host::quantize_as(&xs, format);
            let expected_amax = xs
                .iter()
                .filter(|x| !x.is_nan())
                .fold(0.0f32, |a, &x| a.max(x.abs()));
            prop_assert_eq!(q.amax, expected_amax);
            prop_assert!(q.scale.is_finite() && q.scale > 0.0);
            prop_assert_eq!(q.scale_inv, 1.0 / q.scale);
            let y = fp8::host::dequantize_as(&q.codes, q.scale_inv, format);
            let (rel, sub_half) = match format {
                Format::E4M3 => (2f64.powi(-4), 2f64.powi(-10)),
                Format::E5M2 => (2f64.powi(-3), 2f64.powi(-17)),
                other => unimplemented!("no bounds for {other:?}"),
            };
            for (&x, &y) in xs.iter().zip(&y) {
                if x.is_nan() {
                    prop_assert!(y.is_nan());
                    continue;
                }
                let tol = (x.abs() as f64) * (rel + 1e-6)
                    + sub_half * (q.scale_inv as f64) * (1.0 + 1e-6);
                let err = (y as f64 - x as f64).abs();
                prop_assert!(err <= tol, "{:?} x={:e} y={:e} err={:e} tol={:e}", format, x, y, err, tol);
                prop_assert!(y == 0.0 || y.is_sign_negative() == x.is_sign_negative());
            }
            // Order independence of the amax reduction.
            let mut rev = xs.clone();
            rev.reverse();
            prop_assert_eq!(fp8::host::absmax(&rev).to_bits(), q.amax.to_bits());
        }
    }

    #[test]
    fn delayed_scaling_matches_elementwise(
        xs in prop::collection::vec(finite_f32(), 0..64),
        scale in 1.0e-30f32..1.0e30,
    ) {
        let codes = fp8::host::quantize_with_scale(&xs, scale).unwrap();
        for (&x, &c) in xs.iter().zip(&codes) {
            prop_assert_eq!(c, fp8::encode_e4m3(x * scale));
        }
    }
}
