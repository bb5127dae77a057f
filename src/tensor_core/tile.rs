//! The fast path of [`BlockFma`], the simulator's and the host models' hot
//! path: every block whose operands and `c` are all finite (zeros
//! included) summed on flat arrays of exact products, and a whole MMA tile
//! with each operand decoded once. A block with an infinity or a NaN anywhere takes
//! [`BlockFma::sum_block`], the model's general path. Both give the bits of
//! [`BlockFma::dot`] over the element's row and column (property test
//! `tile_equals_reference_per_element` in `tests/tensor_core_model.rs`).

use super::BlockFma;
use super::block::{Class, Term, decode, decode_operand, round_to_f32};

/// The exponent a zero operand takes on the fast path: far below any
/// finite exponent (−149 at the least) and the clamp, so neither it nor a
/// product with it moves a block's exponent; its significand is 0, so it
/// adds nothing. A block of zeros then sums to 0, which the model returns
/// as +0 whether or not any term took part (`sum_block`).
const ZERO_EXP: i32 = -(1 << 20);

/// An operand (or `c`) decoded for the fast path.
#[derive(Debug, Clone, Copy, Default)]
struct Fast {
    neg: bool,
    sig: u64,
    exp: i32,
    /// An infinity or a NaN: the block takes the general path.
    special: bool,
}

fn fast(c: Class) -> Fast {
    match c {
        Class::Zero => Fast {
            exp: ZERO_EXP,
            ..Fast::default()
        },
        Class::Finite { neg, sig, exp } => Fast {
            neg,
            sig,
            exp,
            special: false,
        },
        Class::Inf { .. } | Class::Nan => Fast {
            special: true,
            ..Fast::default()
        },
    }
}

impl BlockFma {
    /// `D = A·B + C` on one `m × n` tile with inner dimension `k`, every
    /// element by [`BlockFma::dot`] over its row of `A` and column of `B`
    /// (the same bits). The caller checked the slices' lengths.
    pub(super) fn tile(
        &self,
        (m, n, k): (usize, usize, usize),
        a: &[u32],
        b: &[u32],
        c: &[f32],
    ) -> Vec<f32> {
        let fmt = self.input;
        let fa: Vec<Fast> = a.iter().map(|&x| fast(decode_operand(fmt, x))).collect();
        let fb: Vec<Fast> = b.iter().map(|&x| fast(decode_operand(fmt, x))).collect();
        let width = self.width.max(1);
        let mut d = Vec::with_capacity(m * n);
        for i in 0..m {
            for j in 0..n {
                let mut acc = c[i * n + j].to_bits();
                let mut k0 = 0;
                while k0 < k {
                    let k1 = (k0 + width).min(k);
                    let row = i * k;
                    acc = self
                        .fast_block(acc, (k0..k1).map(|kk| (fa[row + kk], fb[kk * n + j])))
                        .unwrap_or_else(|| {
                            let terms: Vec<Term> = (k0..k1)
                                .map(|kk| {
                                    self.product(
                                        decode_operand(fmt, a[row + kk]),
                                        decode_operand(fmt, b[kk * n + j]),
                                    )
                                })
                                .collect();
                            self.sum_block(acc, &terms)
                        });
                    k0 = k1;
                }
                d.push(f32::from_bits(acc));
            }
        }
        d
    }

    /// One block FMA over operand bit `pairs`: the fast path, or the
    /// general one where it declines.
    pub(super) fn block_pairs(&self, c: u32, pairs: &[(u32, u32)]) -> u32 {
        let fmt = self.input;
        let fast_pairs = (pairs.iter())
            .map(|&(a, b)| (fast(decode_operand(fmt, a)), fast(decode_operand(fmt, b))));
        self.fast_block(c, fast_pairs)
            .unwrap_or_else(|| self.block_bits(c, pairs))
    }

    /// One block on the fast path: `c` (f32 bits) plus the products of the
    /// `pairs`; `None` when `c` or an operand is an infinity or a NaN.
    /// The same sum as [`BlockFma::sum_block`]: exact products on the grid
    /// of `23 + neab` fraction bits, the block exponent the largest at
    /// least the clamp, each term's magnitude truncated to it, an exact
    /// sum, one rounding.
    fn fast_block(&self, c: u32, pairs: impl Iterator<Item = (Fast, Fast)>) -> Option<u32> {
        // The published blocks hold at most 16 products; a longer one (a
        // caller's own `BlockFma`) takes the general path.
        const MAX: usize = 16;
        let grid = 23 + self.extra_align_bits;
        let to_grid = grid - 2 * self.input.fraction_bits();
        let c = fast(decode(c, 8, 23));
        let (mut negs, mut mags, mut exps) = ([false; MAX], [0u64; MAX], [0i32; MAX]);
        let mut special = c.special;
        let mut max_exp = c.exp;
        let mut n = 0;
        for (x, y) in pairs {
            if n == MAX {
                return None;
            }
            special |= x.special | y.special;
            negs[n] = x.neg != y.neg;
            mags[n] = (x.sig * y.sig) << to_grid;
            exps[n] = x.exp + y.exp;
            max_exp = max_exp.max(exps[n]);
            n += 1;
        }
        if special {
            return None;
        }
        let max_exp = max_exp.max(self.min_align_exp);
        let term = |neg: bool, mag: u64, exp: i32| -> i64 {
            let mag = mag.checked_shr((max_exp - exp) as u32).unwrap_or(0) as i64;
            if neg { -mag } else { mag }
        };
        let mut sum = term(c.neg, c.sig << self.extra_align_bits, c.exp);
        for t in 0..n {
            sum += term(negs[t], mags[t], exps[t]);
        }
        if sum == 0 {
            return Some(0);
        }
        Some(round_to_f32(
            sum < 0,
            sum.unsigned_abs(),
            max_exp - grid as i32,
            self.rounding,
        ))
    }
}
