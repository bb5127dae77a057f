//! Inputs for property tests of kernels against their host models: the
//! `f32` values where rounding, comparisons and conversions go wrong
//! ([`special_f32s`]) and deterministic vectors that mix them with
//! ordinary and arbitrary values ([`mixed_f32`]). No dependency: a test
//! with proptest can draw a seed and a length and call [`mixed_f32`].
//!
//! ```
//! use ptxsmith::testing::{mixed_f32, special_f32s};
//!
//! let v = mixed_f32(1000, 42);
//! assert_eq!(v.len(), 1000);
//! assert_eq!(v.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
//!            mixed_f32(1000, 42).iter().map(|x| x.to_bits()).collect::<Vec<_>>());
//! assert!(special_f32s().iter().any(|x| x.is_nan()));
//! ```

/// The edge values of `f32`, each with its negation: zeros, the smallest
/// and largest subnormals, the smallest normal, one and the values one ulp
/// on either side of it, the largest finite value and one ulp below it,
/// infinities, and NaNs with several payloads (quiet with the payloads
/// 0, 1 and all ones, and signalling with payloads 1 and all ones).
/// Ordered, 34 values.
pub fn special_f32s() -> Vec<f32> {
    const POSITIVE: [u32; 17] = [
        0x0000_0000, // +0
        0x0000_0001, // smallest subnormal
        0x0000_0002, // second smallest subnormal
        0x007f_ffff, // largest subnormal
        0x0080_0000, // smallest normal
        0x0080_0001, // smallest normal + 1 ulp
        0x3f7f_ffff, // 1 - ulp
        0x3f80_0000, // 1
        0x3f80_0001, // 1 + ulp
        0x3f00_0000, // 0.5
        0x7f7f_fffe, // max finite - ulp
        0x7f7f_ffff, // max finite
        0x7f80_0000, // infinity
        0x7fc0_0000, // quiet NaN (canonical)
        0x7fc0_0001, // quiet NaN, payload 1
        0x7fff_ffff, // quiet NaN, all payload bits
        0x7f80_0001, // signalling NaN, payload 1
    ];
    let mut v: Vec<f32> = POSITIVE.iter().map(|&b| f32::from_bits(b)).collect();
    v.extend(POSITIVE.iter().map(|&b| f32::from_bits(b | 0x8000_0000)));
    v
}

/// The edge values of `f64`, as [`special_f32s`] (34 values).
pub fn special_f64s() -> Vec<f64> {
    const POSITIVE: [u64; 17] = [
        0,
        1,
        2,
        0x000f_ffff_ffff_ffff,
        0x0010_0000_0000_0000,
        0x0010_0000_0000_0001,
        0x3fef_ffff_ffff_ffff,
        0x3ff0_0000_0000_0000,
        0x3ff0_0000_0000_0001,
        0x3fe0_0000_0000_0000,
        0x7fef_ffff_ffff_fffe,
        0x7fef_ffff_ffff_ffff,
        0x7ff0_0000_0000_0000,
        0x7ff8_0000_0000_0000,
        0x7ff8_0000_0000_0001,
        0x7fff_ffff_ffff_ffff,
        0x7ff0_0000_0000_0001,
    ];
    let mut v: Vec<f64> = POSITIVE.iter().map(|&b| f64::from_bits(b)).collect();
    v.extend(POSITIVE.iter().map(|&b| f64::from_bits(b | (1 << 63))));
    v
}

/// A deterministic stream of 64-bit values (SplitMix64).
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A stream starting from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// The next value's high 32 bits.
    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }
}

/// `len` values determined by `seed`, mixing four kinds: an edge value of
/// [`special_f32s`] (1 in 8), a subnormal (1 in 8), an arbitrary bit
/// pattern, NaNs included (1 in 4), and an ordinary value of magnitude
/// 2⁻⁸ .. 2⁸ with either sign (the rest). The same `(len, seed)` gives the
/// same bits on every machine; a longer vector of the same seed starts
/// with the shorter one.
pub fn mixed_f32(len: usize, seed: u64) -> Vec<f32> {
    let specials = special_f32s();
    let mut rng = SplitMix64::new(seed);
    (0..len)
        .map(|_| {
            let r = rng.next_u64();
            let pick = (r & 7) as u32;
            let bits = (r >> 32) as u32;
            match pick {
                0 => specials[(bits as usize) % specials.len()],
                1 => f32::from_bits((bits & 0x8000_0000) | (bits & 0x007f_ffff).max(1)),
                2 | 3 => f32::from_bits(bits),
                _ => {
                    // exponent 2^-8 .. 2^8 (biased 119 ..= 135), any mantissa, any sign
                    let exp = 119 + (bits >> 23) % 17;
                    f32::from_bits((bits & 0x8000_0000) | (exp << 23) | (bits & 0x007f_ffff))
                }
            }
        })
        .collect()
}

/// `len` ordinary values (no NaN, infinity or subnormal) of magnitude
/// 2⁻⁸ .. 2⁸ with either sign, determined by `seed`: data for kernels
/// whose host model is only specified on finite inputs.
pub fn finite_f32(len: usize, seed: u64) -> Vec<f32> {
    let mut rng = SplitMix64::new(seed);
    (0..len)
        .map(|_| {
            let bits = rng.next_u32();
            let exp = 119 + (bits >> 23) % 17;
            f32::from_bits((bits & 0x8000_0000) | (exp << 23) | (bits & 0x007f_ffff))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specials_cover_the_edges() {
        let s = special_f32s();
        assert_eq!(s.len(), 34);
        let has = |b: u32| s.iter().any(|x| x.to_bits() == b);
        for b in [
            0x8000_0000,
            0x0000_0001,
            0x807f_ffff,
            0x7f7f_ffff,
            0xff80_0000,
        ] {
            assert!(has(b), "{b:#x}");
        }
        assert!(has(1.0f32.to_bits() + 1) && has(1.0f32.to_bits() - 1));
        assert!(s.iter().filter(|x| x.is_nan()).count() >= 8);
        assert!(s.iter().any(|x| x.is_subnormal()));
        assert_eq!(special_f64s().len(), 34);
    }

    #[test]
    fn mixed_is_deterministic_prefix_stable_and_mixed() {
        let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
        let a = bits(mixed_f32(4096, 7));
        assert_eq!(a, bits(mixed_f32(4096, 7)));
        assert_eq!(a[..100], bits(mixed_f32(100, 7))[..]);
        assert_ne!(a, bits(mixed_f32(4096, 8)));
        let v = mixed_f32(4096, 7);
        assert!(v.iter().any(|x| x.is_nan()));
        assert!(v.iter().any(|x| x.is_infinite()));
        assert!(v.iter().any(|x| x.is_subnormal()));
        assert!(v.iter().filter(|x| x.is_normal()).count() > 2048);
        assert!(v.iter().any(|x| x.is_sign_negative()));
        assert!(finite_f32(4096, 3).iter().all(|x| x.is_normal()));
    }
}
