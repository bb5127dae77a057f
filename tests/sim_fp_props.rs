//! Property tests of the directed-rounding f32 arithmetic against bracket
//! conditions checked in exact f64 arithmetic (independent of the TwoSum /
//! residual method the simulator uses).

use proptest::prelude::*;
use ptxsmith::sim::fp::{FOp, MiniFmt, Rnd, f32_op, next_down, next_up};

fn finite() -> impl Strategy<Value = f32> {
    prop_oneof![
        any::<u32>().prop_map(f32::from_bits),
        (0u32..0x0100_0000).prop_map(f32::from_bits), // subnormals and tiny normals
        (-64.0f32..64.0),
    ]
    .prop_filter("finite", |x| x.is_finite())
}

/// `r` is the correct rounding of an exact value `e` (given by the sign of
/// `cmp(v) = sign(v - e)` for candidate values v) in direction `rnd`.
fn check_bracket(r: f32, rnd: Rnd, cmp: impl Fn(f32) -> std::cmp::Ordering) -> bool {
    use std::cmp::Ordering::*;
    if r.is_infinite() {
        return true; // overflow cases are covered by unit tests
    }
    match rnd {
        // r <= e < next_up(r)
        Rnd::Rm => cmp(r) != Greater && (next_up(r).is_infinite() || cmp(next_up(r)) == Greater),
        // next_down(r) < e <= r
        Rnd::Rp => cmp(r) != Less && (next_down(r).is_infinite() || cmp(next_down(r)) == Less),
        Rnd::Rz => {
            if r > 0.0 || (r == 0.0 && cmp(0.0) != Greater) {
                cmp(r) != Greater && (next_up(r).is_infinite() || cmp(next_up(r)) == Greater)
            } else {
                cmp(r) != Less && (next_down(r).is_infinite() || cmp(next_down(r)) == Less)
            }
        }
        Rnd::Rn => true,
    }
}

const DIRS: [Rnd; 3] = [Rnd::Rz, Rnd::Rm, Rnd::Rp];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn mul_directed(a in finite(), b in finite()) {
        let e = a as f64 * b as f64; // exact
        for rnd in DIRS {
            let r = f32::from_bits(f32_op(FOp::Mul, rnd, false, false, a.to_bits(), b.to_bits(), 0));
            prop_assert!(check_bracket(r, rnd, |v| (v as f64).partial_cmp(&e).unwrap()), "{a:e}*{b:e} {rnd:?} -> {r:e}");
        }
    }

    #[test]
    fn div_directed(a in finite(), b in finite()) {
        prop_assume!(b != 0.0 && a != 0.0);
        // sign(v - a/b) = sign(v*b - a) * sign(b); v*b exact in f64
        let s = if b > 0.0 { 1.0 } else { -1.0 };
        for rnd in DIRS {
            let r = f32::from_bits(f32_op(FOp::Div, rnd, false, false, a.to_bits(), b.to_bits(), 0));
            prop_assert!(check_bracket(r, rnd, |v| ((v as f64 * b as f64 - a as f64) * s).partial_cmp(&0.0).unwrap()), "{a:e}/{b:e} {rnd:?} -> {r:e}");
        }
    }

    #[test]
    fn sqrt_directed(a in finite()) {
        let a = a.abs();
        for rnd in DIRS {
            let r = f32::from_bits(f32_op(FOp::Sqrt, rnd, false, false, a.to_bits(), 0, 0));
            // sign(v - sqrt(a)) = sign(v*v - a) for v >= 0; v*v exact in f64
            prop_assert!(check_bracket(r, rnd, |v| if v < 0.0 { std::cmp::Ordering::Less } else { (v as f64 * v as f64).partial_cmp(&(a as f64)).unwrap() }), "sqrt({a:e}) {rnd:?} -> {r:e}");
        }
    }

    #[test]
    fn add_directed(
        ma in 0u32..(1 << 24), mb in 0u32..(1 << 24),
        ea in -40i32..40, eb in -40i32..40,
        sa in any::<bool>(), sb in any::<bool>(), tiny in any::<bool>(),
    ) {
        // a = ±ma·2^ea, b = ±mb·2^eb exactly (or subnormal-range values with
        // exponent -149); the exact sum is an integer multiple of 2^q
        let (ea, eb, q) = if tiny { (-149, -149 + eb.rem_euclid(8), -149) } else { (ea - 23, eb - 23, -63) };
        let mk = |m: u32, e: i32, s: bool| ((m as f64) * 2f64.powi(e) * if s { -1.0 } else { 1.0 }) as f32;
        let (a, b) = (mk(ma, ea, sa), mk(mb, eb, sb));
        let grid = |x: f64| -> i128 { (x / 2f64.powi(q)) as i128 };
        let e = grid(a as f64) + grid(b as f64);
        for rnd in DIRS {
            let r = f32::from_bits(f32_op(FOp::Add, rnd, false, false, a.to_bits(), b.to_bits(), 0));
            let cmp = |v: f32| {
                // v/2^q is exact in f64; compare its floor, then its fraction
                let sv = v as f64 / 2f64.powi(q);
                (sv.floor() as i128).cmp(&e).then(if sv - sv.floor() > 0.0 { std::cmp::Ordering::Greater } else { std::cmp::Ordering::Equal })
            };
            prop_assert!(check_bracket(r, rnd, cmp), "{a:e}+{b:e} {rnd:?} -> {r:e}");
            if e == 0 {
                prop_assert_eq!(r.is_sign_negative(), rnd == Rnd::Rm || (a.is_sign_negative() && b.is_sign_negative()));
            }
        }
    }

    #[test]
    fn fp8_encode_is_nearest(x in finite()) {
        for fmt in [MiniFmt::E4M3, MiniFmt::E5M2, MiniFmt::E2M1] {
            let c = fmt.encode_satfinite(x);
            let v = fmt.decode(c);
            // no finite code is strictly nearer (saturation aside)
            let max = (0u8..=255).map(|k| fmt.decode(k)).filter(|v| v.is_finite()).fold(0f64, f64::max);
            if (x as f64).abs() <= max {
                let d = (v - x as f64).abs();
                for k in 0u8..=255 {
                    let w = fmt.decode(k);
                    if w.is_finite() {
                        prop_assert!((w - x as f64).abs() >= d, "{fmt:?} {x:e}: {c:#x} ({v}) but {k:#x} ({w}) is nearer");
                    }
                }
            } else {
                prop_assert_eq!(v.abs(), max);
            }
        }
    }
}
