//! The tf32 pieces of the grad-values cluster kernel
//! ([`super::values_cluster`], `B` 32): the tiles rounded once in shared
//! memory, the fragments by 16-byte loads, and the epilogue.
//!
//! # Rounding
//! `x` lands unrounded (f32 elements, by the tensor map), `gy` too (by
//! `cp.async`, as staged for every precision). After a token tile has
//! landed (the thread's `cp.async` group and the buffer's mbarrier) and
//! before the `bar.sync` that precedes the MMAs, every thread rounds in
//! place (`cvt.rna.tf32.f32`, 16 bytes at a time) the `gy` units it copied
//! itself (the rank's rows with a hit in the item) and its unit of each
//! `x` tile of a column this rank uses ([`round_tiles`]). The rounding is
//! per element, so the bits are those of rounding at staging or at the
//! fragment load; each element is rounded once a CTA instead of once a
//! slot that reads it. Columns only a peer uses are left as they landed.
//! The step's `fence.proxy.async` orders these writes before the next
//! tensor copies into the buffer.
//!
//! # Fragments (`m16n8k8`, lane `(g, t)` = `(lane / 4, lane % 4)`)
//! `A[i][k]` = `gy[k][i]`, `B[k][j]` = `x[k][j]`: every fragment register
//! of a lane reads token `t` or `t + 4` of the MMA chunk, so `ldmatrix`
//! (which hands lane `(g, t)` element `t` of row `g`) cannot load them,
//! and an MMA operand's registers (consecutive in SASS) come from two
//! token rows. Which of the block's features an MMA row or column
//! computes is free (each output element is its own chain of `mma.sync`
//! steps over the same tokens), so: fragment `mi`'s rows `g`, `g + 8` are
//! features `i = 16·mi + 2g` and `2g + 1` ([`a_feature`]), so a lane's
//! `A` registers of a token are one 8-byte pair (`ld.shared.v2`, two a
//! fragment: no register moves before the MMA); at the padded pitch the
//! 16 lanes of a half warp hit distinct banks. Fragment `ni`'s column `c`
//! is feature `j = 4·ni + 16·(c / 4) + c mod 4` ([`b_feature`]), one
//! `ld.shared.b32` a register at 8 hoisted lane addresses (tokens `t`, `t
//! + 4` × the 4 `ni`), whose 32 lanes hit 32 distinct banks through the
//! 128-byte swizzle. Per MMA chunk and slot: 4 `v2` and 8 scalar loads
//! for 8 MMAs. The accumulators of lane `(g, t)` (columns `2t`, `2t + 1`
//! of each `ni`) are pairs of adjacent features: one `st.global.v2` each.

use crate::dsl::types::{MmaInput, Pred, Reg, U32};
use crate::dsl::{FragA, FragB, FragC, KernelBuilder};
use crate::tensor_map::Swizzle;

use super::common::{round16_in_place, sptr};
use super::shape::Shape;
use super::values_tiles::{Io, THREADS};

/// The feature of row `r` (`g` or `g + 8`) of `A` fragment `mi` (see
/// the [module docs](self)).
#[cfg(test)]
fn a_feature(mi: u32, r: u32) -> u32 {
    16 * mi + 2 * (r % 8) + r / 8
}

/// The feature of column `c` (`g`, or an accumulator column) of `B`
/// fragment `ni` (see the [module docs](self)).
#[cfg(test)]
fn b_feature(ni: u32, c: u32) -> u32 {
    4 * ni + 16 * (c / 4) + c % 4
}

/// The lane's fragment addresses: `A` (buffer 0 of row 0's `gy` tile at
/// `gs0`: token `t`, features `2g`, `2g + 1`) and `B` (buffer 0 of column
/// 0's `x` tile at `xs0`: tokens `t` and `t + 4`, then fragment `ni`'s
/// feature `4·ni + 16·(g / 4) + g mod 4` through the swizzle, `t`'s 4
/// first). Tokens `8·kc` further on are whole repeats of the swizzle.
pub(super) fn lanes(
    b: &mut KernelBuilder,
    sh: &Shape,
    sw: Swizzle,
    (gs0, xs0): (Reg<U32>, Reg<U32>),
    lane: Reg<U32>,
) -> (Reg<U32>, Vec<Reg<U32>>) {
    assert!((8 * sh.rowb).is_multiple_of(sw.pattern_bytes()));
    let g = b.shr(lane, 2u32);
    let t = b.and(lane, 3u32);
    let a = b.mad_lo(t, sh.pitch, gs0);
    let a = b.mad_lo(g, 8u32, a);
    // chunk ni + 4·(g / 4), word g mod 4
    let hi = b.shr(g, 2u32);
    let c0 = b.shl(hi, 2u32);
    let w = b.and(g, 3u32);
    let w = b.shl(w, 2u32);
    let t4 = b.add(t, 4u32);
    let mut bs = Vec::new();
    for row in [t, t4] {
        for ni in 0..sh.nt {
            let c = b.add(c0, ni);
            let p = b.swizzled_chunk(sptr::<U32>(xs0), sw, sh.rowb, row, c).reg;
            bs.push(b.add(p, w));
        }
    }
    (a, bs)
}

/// The fragments of MMA chunk `kc` of one slot: `A` from `ab` (the
/// slot's `gy` tile, buffer and lane added), `B` from `bb` (its `x`
/// tile's lane addresses, [`lanes`]), rounded in shared memory already.
pub(super) fn frags<T: MmaInput>(
    b: &mut KernelBuilder,
    sh: &Shape,
    ab: Reg<U32>,
    bb: &[Reg<U32>],
    kc: u32,
) -> (Vec<FragA<T>>, Vec<FragB<T>>) {
    let op = |b: &mut KernelBuilder, u: Reg<U32>| b.u32_as_packed::<T>(u);
    let fa = (0..sh.mt)
        .map(|mi| {
            // tokens t, t + 4: features 16·mi + 2g, + 1
            let [r0, r4] = [0u32, 4].map(|dk| {
                let k = ((kc * 8 + dk) * sh.pitch + 64 * mi) / 4;
                b.ld_shared_v2::<U32>(sptr::<U32>(ab), k as i32)
            });
            FragA {
                regs: [r0[0], r0[1], r4[0], r4[1]].map(|u| op(b, u)),
            }
        })
        .collect();
    let k = (kc * 8 * sh.rowb / 4) as i32;
    let nt = sh.nt as usize;
    let fb = (0..nt)
        .map(|ni| FragB {
            regs: [bb[ni], bb[nt + ni]].map(|p| {
                let u = b.ld_shared(sptr::<U32>(p), k);
                op(b, u)
            }),
        })
        .collect();
    (fa, fb)
}

/// One thread's rounding of token-tile buffer `buf` in place (see the
/// [module docs](self)): the `gy` units it copied (`dst`: its unit of
/// row 0's tile, buffer 0; `live`: the rank's rows staged in the item)
/// and, of each `x` tile whose column `xcol` says this rank uses, unit
/// `tid` (`xs0`: column 0's tile, buffer 0; tiles `xtile` apart).
#[allow(clippy::too_many_arguments)]
pub(super) fn round_tiles(
    b: &mut KernelBuilder,
    sh: &Shape,
    (dst, live): (Reg<U32>, &[Reg<Pred>]),
    (xs0, xcol, xtile): (Reg<U32>, &[Reg<Pred>], u32),
    tid: Reg<U32>,
    buf: Reg<U32>,
) {
    let rstep = THREADS / sh.cpr;
    let copies = sh.tokens * sh.cpr / THREADS;
    let tile = 2 * sh.buf();
    let g = b.mad_lo(buf, sh.buf(), dst);
    for (u, &on) in live.iter().enumerate() {
        b.if_(on, |b| {
            for j in 0..copies {
                round16_in_place(b, g, ((u as u32 * tile + j * rstep * sh.pitch) / 4) as i32);
            }
        });
    }
    let xbuf = sh.tokens * sh.rowb;
    let units = xbuf / 16;
    assert!(units.is_multiple_of(THREADS));
    let x = b.mad_lo(buf, xbuf, xs0);
    let t16 = b.shl(tid, 4u32);
    let x = b.add(x, t16);
    for (ci, &on) in xcol.iter().enumerate() {
        b.if_(on, |b| {
            for j in 0..units / THREADS {
                round16_in_place(b, x, ((ci as u32 * xtile + j * THREADS * 16) / 4) as i32);
            }
        });
    }
}

/// The epilogue of one slot (`gv` block at element `sb·B`): lane `(g,
/// t)`'s accumulators `sum[mi][ni]` are rows `16·mi + 2g + h` (register
/// pair `h`) and columns `4·ni + 16·(t / 2) + 2·(t mod 2)` and the next
/// (the pair's two registers): one 8-byte store a pair.
pub(super) fn store(
    b: &mut KernelBuilder,
    sh: &Shape,
    io: &Io,
    sum: &[Vec<FragC>],
    sb: Reg<U32>,
    lane: Reg<U32>,
) {
    let g = b.shr(lane, 2u32);
    let t = b.and(lane, 3u32);
    let i0 = b.mad_lo(g, 2u32, sb);
    let th = b.shr(t, 1u32);
    let tl = b.and(t, 1u32);
    let tl = b.shl(tl, 1u32);
    let j0 = b.mad_lo(th, 16u32, tl);
    for (mi, frags) in sum.iter().enumerate() {
        for h in 0..2usize {
            let row = b.add(i0, (16 * mi + h) as u32);
            let e = b.mad_lo(row, sh.bs, j0);
            let gp = b.offset(io.p.gv, e);
            for (ni, fc) in frags.iter().enumerate() {
                let v = [fc.regs[2 * h], fc.regs[2 * h + 1]];
                b.st_global_v2(gp, 4 * ni as i32, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The feature maps are permutations of the block's 32 rows and 32
    /// columns; a lane's `A` registers of a token (rows `g`, `g + 8`) are
    /// adjacent features, and so are its accumulator columns `2t`, `2t +
    /// 1` of each `ni` (the stores' pairs); the 16 lanes of a half warp
    /// load their `A` pairs from distinct banks at the 160-byte pitch, and
    /// the 32 lanes their `B` words from distinct banks through the
    /// 128-byte swizzle (chunk XOR row mod 8), for each `ni` and both
    /// tokens.
    #[test]
    fn feature_maps_are_permutations_and_conflict_free() {
        let (mut rows, mut cols) = ([false; 32], [false; 32]);
        for mi in 0..2 {
            for r in 0..16 {
                let i = a_feature(mi, r) as usize;
                assert!(!rows[i]);
                rows[i] = true;
            }
            for g in 0..8 {
                assert_eq!(a_feature(mi, g + 8), a_feature(mi, g) + 1);
                assert_eq!(a_feature(mi, g), 16 * mi + 2 * g);
            }
        }
        for ni in 0..4 {
            for c in 0..8 {
                let j = b_feature(ni, c) as usize;
                assert!(!cols[j]);
                cols[j] = true;
            }
            for t in 0..4 {
                assert_eq!(b_feature(ni, 2 * t + 1), b_feature(ni, 2 * t) + 1);
                assert_eq!(b_feature(ni, 2 * t), 4 * ni + 16 * (t / 2) + 2 * (t % 2));
            }
        }
        assert!(rows.iter().all(|&r| r) && cols.iter().all(|&c| c));
        let lanes = |range: std::ops::Range<u32>| range.map(|l| (l / 4, l % 4));
        for half in 0..2 {
            for mi in 0..2 {
                let mut banks = std::collections::HashSet::new();
                for (g, t) in lanes(16 * half..16 * half + 16) {
                    let w = (t * 160 + 4 * a_feature(mi, g)) / 4;
                    assert!(banks.insert(w % 32) && banks.insert((w + 1) % 32));
                }
            }
        }
        for ni in 0..4 {
            for dk in [0, 4] {
                let mut banks = std::collections::HashSet::new();
                for (g, t) in lanes(0..32) {
                    let (row, j) = (t + dk, b_feature(ni, g));
                    let chunk = (j / 4) ^ (row % 8);
                    assert!(banks.insert(4 * chunk + j % 4));
                }
            }
        }
    }
}
