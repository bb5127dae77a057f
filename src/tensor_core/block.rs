//! The block FMA itself: decoding, exact products, truncating alignment,
//! the exact sum and the final rounding. Line numbers cite
//! `models/tools/Generic_BFMA_TC.m` unless another file is named.

use super::{BlockFma, FinalRounding, InputFormat};

/// The NaN every NaN result of the model is: `0x7FFF_FFFF`, the f32 NaN
/// NVIDIA's own host code writes (`docs/tensor-cores.md`). The published
/// model compares values only, so the hardware's NaN bits are not pinned by
/// it; a GPU run settles them.
pub const CANONICAL_NAN: u32 = 0x7FFF_FFFF;

/// One operand or `c`, decoded.
#[derive(Debug, Clone, Copy)]
pub(super) enum Class {
    Zero,
    /// `(-1)^neg · sig · 2^(exp − frac)`, `frac` the format's fraction
    /// bits, `exp = max(⌊log2|x|⌋, emin)` (lines 114–121).
    Finite {
        neg: bool,
        sig: u64,
        exp: i32,
    },
    Inf {
        neg: bool,
    },
    Nan,
}

/// Splits the bits of a binary format with `eb` exponent and `mb` fraction
/// bits (`bits` holds exactly those `1 + eb + mb` bits).
pub(super) fn decode(bits: u32, eb: u32, mb: u32) -> Class {
    let neg = (bits >> (eb + mb)) & 1 == 1;
    let e = (bits >> mb) & ((1 << eb) - 1);
    let f = u64::from(bits & ((1 << mb) - 1));
    let bias = (1i32 << (eb - 1)) - 1;
    if e == (1 << eb) - 1 {
        if f == 0 {
            Class::Inf { neg }
        } else {
            Class::Nan
        }
    } else if e == 0 {
        if f == 0 {
            Class::Zero
        } else {
            // subnormal: the format's minimum exponent, no implicit bit
            // (lines 117–118; for c, 1077–1080)
            Class::Finite {
                neg,
                sig: f,
                exp: 1 - bias,
            }
        }
    } else {
        Class::Finite {
            neg,
            sig: f | (1 << mb),
            exp: e as i32 - bias,
        }
    }
}

/// Decodes an operand of `fmt` (f16/bf16: the low 16 bits; tf32: the top
/// 19 bits of the f32 pattern).
pub(super) fn decode_operand(fmt: InputFormat, bits: u32) -> Class {
    match fmt {
        InputFormat::F16 => decode(bits & 0xFFFF, 5, 10),
        InputFormat::Bf16 => decode(bits & 0xFFFF, 8, 7),
        InputFormat::Tf32 => decode(bits >> 13, 8, 10),
    }
}

impl BlockFma {
    /// `d = c + Σ a_k·b_k` over the `(a_k, b_k)` pairs in order: blocks of
    /// [`BlockFma::width`] pairs, each block's result the next block's `c`
    /// (`GEMM.m` 246–256). Operands are bit patterns of
    /// [`BlockFma::input`]: f16/bf16 in the low 16 bits (the high 16 are
    /// ignored), tf32 as an f32 pattern whose low 13 bits are ignored. With
    /// no pairs the result is `c` itself.
    pub fn dot<I>(&self, c: f32, pairs: I) -> f32
    where
        I: IntoIterator<Item = (u32, u32)>,
    {
        const STACK: usize = 64;
        let width = self.width.max(1);
        let mut acc = c.to_bits();
        if width <= STACK {
            // no allocation for the published widths
            let mut block = [(0u32, 0u32); STACK];
            let mut n = 0;
            for pair in pairs {
                block[n] = pair;
                n += 1;
                if n == width {
                    acc = self.block_pairs(acc, &block[..n]);
                    n = 0;
                }
            }
            if n > 0 {
                acc = self.block_pairs(acc, &block[..n]);
            }
        } else {
            let mut block = Vec::with_capacity(width);
            for pair in pairs {
                block.push(pair);
                if block.len() == width {
                    acc = self.block_bits(acc, &block);
                    block.clear();
                }
            }
            if !block.is_empty() {
                acc = self.block_bits(acc, &block);
            }
        }
        f32::from_bits(acc)
    }

    /// One block FMA over `pairs` (at most [`BlockFma::width`] of them for
    /// the published models; more are summed as one block).
    pub fn block(&self, c: f32, pairs: &[(u32, u32)]) -> f32 {
        f32::from_bits(self.block_pairs(c.to_bits(), pairs))
    }

    /// `c` as a term: a zero c takes no part (1082–1084).
    fn c_term(&self, c: u32) -> Term {
        match decode(c, 8, 23) {
            Class::Nan => Term::Nan,
            Class::Inf { neg } => Term::Inf(neg),
            Class::Zero => Term::None,
            Class::Finite { neg, sig, exp } => Term::Finite(neg, sig << self.extra_align_bits, exp),
        }
    }

    /// One product of decoded operands as a term, its significand on the grid of
    /// `23 + neab` fraction bits.
    pub(super) fn product(&self, a: Class, b: Class) -> Term {
        let fb = self.input.fraction_bits();
        let grid = 23 + self.extra_align_bits;
        match (a, b) {
            (Class::Nan, _) | (_, Class::Nan) => Term::Nan,
            // ∞·0 is NaN (GEMM.m 227 forms the products in double)
            (Class::Inf { .. }, Class::Zero) | (Class::Zero, Class::Inf { .. }) => Term::Nan,
            (Class::Inf { neg: x }, Class::Inf { neg: y })
            | (Class::Inf { neg: x }, Class::Finite { neg: y, .. })
            | (Class::Finite { neg: x, .. }, Class::Inf { neg: y }) => Term::Inf(x != y),
            // zero products take no part (73–79)
            (Class::Zero, _) | (_, Class::Zero) => Term::None,
            (
                Class::Finite {
                    neg: x,
                    sig: sa,
                    exp: ea,
                },
                Class::Finite {
                    neg: y,
                    sig: sb,
                    exp: eb,
                },
            ) => {
                // exact product, unnormalised in [0, 4) (124–125), written
                // on the grid (2·fb ≤ 20 < 23 fraction bits)
                Term::Finite(x != y, (sa * sb) << (grid - 2 * fb), ea + eb)
            }
        }
    }

    /// One block on the model's general path ([`BlockFma::sum_block`]).
    pub(super) fn block_bits(&self, c: u32, pairs: &[(u32, u32)]) -> u32 {
        let fmt = self.input;
        let products = pairs
            .iter()
            .map(|&(a, b)| self.product(decode_operand(fmt, a), decode_operand(fmt, b)));
        if pairs.len() <= 64 {
            let mut block = [Term::None; 64];
            for (slot, t) in block.iter_mut().zip(products) {
                *slot = t;
            }
            self.sum_block(c, &block[..pairs.len()])
        } else {
            self.sum_block(c, &products.collect::<Vec<_>>())
        }
    }

    /// One block FMA: `c` (f32 bits) plus the product `terms`.
    pub(super) fn sum_block(&self, c: u32, products: &[Term]) -> u32 {
        let grid = 23 + self.extra_align_bits;
        let c = self.c_term(c);
        let terms = || std::iter::once(&c).chain(products);
        // First pass: specials and the largest exponent.
        let (mut nan, mut pos_inf, mut neg_inf) = (false, false, false);
        let mut max_exp: Option<i32> = None;
        for t in terms() {
            match *t {
                Term::Nan => nan = true,
                Term::Inf(true) => neg_inf = true,
                Term::Inf(false) => pos_inf = true,
                Term::None => {}
                Term::Finite(_, _, e) => max_exp = Some(max_exp.map_or(e, |m| m.max(e))),
            }
        }
        // Specials (GEMM.m 229–238): NaN first, then mixed infinities.
        if nan || (pos_inf && neg_inf) {
            return CANONICAL_NAN;
        }
        if pos_inf {
            return 0x7F80_0000;
        }
        if neg_inf {
            return 0xFF80_0000;
        }
        // Block exponent: the largest, at least `min_align_exp`
        // (1098–1105). No terms: the result is +0 (81–86).
        let Some(max_exp) = max_exp else {
            return 0;
        };
        let max_exp = max_exp.max(self.min_align_exp);
        // Second pass: truncating alignment (1106, 1127–1128) and the exact
        // sum (501).
        let sum: i64 = terms()
            .map(|t| match *t {
                Term::Finite(neg, sig, exp) => {
                    let shift = (max_exp - exp) as u32;
                    let mag = if shift >= 64 {
                        0
                    } else {
                        (sig >> shift) as i64
                    };
                    if neg { -mag } else { mag }
                }
                _ => 0,
            })
            .sum();
        if sum == 0 {
            return 0; // an exact zero sum is +0 (504–508)
        }
        // value = sum · 2^(max_exp − grid)
        round_to_f32(
            sum < 0,
            sum.unsigned_abs(),
            max_exp - grid as i32,
            self.rounding,
        )
    }
}

/// One term of a block.
#[derive(Debug, Clone, Copy)]
pub(super) enum Term {
    /// Takes no part (a zero product or a zero `c`).
    None,
    Nan,
    /// An infinity, negative if `true`.
    Inf(bool),
    /// `(negative, significand on the grid, exponent)`.
    Finite(bool, u64, i32),
}

/// `(-1)^neg · mag · 2^scale` (`mag > 0`) as f32 bits: one normalisation
/// (594–614), subnormals kept (277–281), then truncation (the mantissa is
/// read off the first 23 fraction bits, 310–311) or round-to-nearest-even
/// (287–290); a biased exponent of 255 is ±∞ (329–335); a negative value
/// below the smallest subnormal gives −0 (315–317).
pub(super) fn round_to_f32(neg: bool, mag: u64, scale: i32, rounding: FinalRounding) -> u32 {
    let top = 63 - mag.leading_zeros() as i32;
    let exp = scale + top; // exponent of the leading bit
    let ulp = exp.max(-126) - 23;
    let shift = ulp - scale;
    let mag = u128::from(mag);
    let mut q = if shift <= 0 {
        mag << (-shift) as u32
    } else if shift >= 127 {
        0
    } else {
        let q = mag >> shift;
        if rounding == FinalRounding::NearestEven {
            let rem = mag & ((1u128 << shift) - 1);
            let half = 1u128 << (shift - 1);
            if rem > half || (rem == half && q & 1 == 1) {
                q + 1
            } else {
                q
            }
        } else {
            q
        }
    };
    let sign = if neg { 0x8000_0000 } else { 0 };
    let body = if exp < -126 {
        // subnormal (q ≤ 2^23; q = 2^23 is the smallest normal's pattern)
        q as u32
    } else {
        let mut biased = exp + 127;
        if q == 1 << 24 {
            q >>= 1;
            biased += 1;
        }
        if biased >= 255 {
            0x7F80_0000
        } else {
            ((biased as u32) << 23) | (q as u32 & 0x7F_FFFF)
        }
    };
    sign | body
}
