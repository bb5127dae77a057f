//! The MMAs of one step of the grouped kernels ([`super`]): each warp's
//! sub-tiles, its `A` and `B` fragment addresses (padded rows, or the
//! swizzled rows of a tensor-map copy), and the fragments' MMAs.

use crate::dsl::types::{MmaInput, Pred, Reg, U32};
use crate::dsl::{FragA, FragB, FragC, KernelBuilder};
use crate::tensor_core::InputFormat;

use super::super::common::{ldsm4_in, sptr, tf32_operand};
use super::super::mma_into;
use super::super::shape::Shape;
use super::GroupTile;

/// A warp's sub-tiles: per output block it touches, the block's index in
/// the group (runtime) and the fragment columns it owns.
pub(super) struct Sub {
    pub(super) g: Reg<U32>,
    pub(super) nts: std::ops::Range<usize>,
}

/// The lane's `B` operand address in buffer 0, block 0.
pub(super) enum BLane {
    /// in the padded rows (chunk `kc` at `+ 32·kc`)
    Padded(Reg<U32>),
    /// in the swizzled rows of a tensor-map copy, one a chunk `kc`
    /// (`grouped_mcast::b_lanes`)
    Swizzled(Vec<Reg<U32>>),
}

/// The lane's `A` operand address in buffer 0.
pub(super) enum ALane {
    /// in the padded rows (chunk `kc` at `+ 32·kc`)
    Padded(Reg<U32>),
    /// in the swizzled rows of a tensor-map copy, one a chunk `kc`
    /// (`grouped_mcast::a_lanes`)
    Swizzled(Vec<Reg<U32>>),
}

/// The MMAs of one step from buffer `buf`: sub-tile `h` runs when its
/// output block took an entry (`live[h]`).
#[allow(clippy::too_many_arguments)]
pub(super) fn compute<T: MmaInput>(
    b: &mut KernelBuilder,
    sh: &Shape,
    gt: &GroupTile,
    a_lane: &ALane,
    b_lane: &BLane,
    subs: &[Sub],
    live: &[Reg<Pred>],
    acc: &[Vec<FragC>],
    buf: Reg<U32>,
) {
    let xoff = b.mul_lo(buf, sh.buf());
    let abase = match a_lane {
        ALane::Padded(l) => b.add(*l, xoff),
        ALane::Swizzled(_) => xoff,
    };
    let voff = b.mul_lo(buf, gt.g * sh.vbuf());
    let bset = match b_lane {
        BLane::Padded(l) => b.add(*l, voff),
        BLane::Swizzled(_) => voff,
    };
    let bbases: Vec<Reg<U32>> = subs
        .iter()
        .map(|s| b.mad_lo(s.g, sh.vbuf(), bset))
        .collect();
    for kc in 0..sh.chunks() {
        // the chunk's row `wt0 + lane % 16` (+ 16·mi: whole repeats on)
        let (abase, at) = match a_lane {
            ALane::Padded(_) => (abase, kc * 32),
            ALane::Swizzled(lanes) => (b.add(abase, lanes[kc as usize]), 0),
        };
        let frag_a: Vec<FragA<T>> = (0..sh.mt)
            .map(|mi| {
                let p = b.add(abase, mi * 16 * sh.xpitch + at);
                FragA {
                    regs: ldsm4_in::<T>(b, p, false, sh.rounded),
                }
            })
            .collect();
        for ((sub, &bb), &lv) in subs.iter().zip(&bbases).zip(live) {
            b.if_(lv, |b| {
                let mut frag_b: Vec<FragB<T>> = Vec::new();
                if sh.trans && sh.fmt == InputFormat::Tf32 {
                    // tf32 grad-input: `ldmatrix` cannot transpose 32-bit
                    // elements; lane (g, t) loads `B[t][g]` and `B[t+4][g]`
                    // of each 8 × 8 fragment (rows `k`, features `f`)
                    // and converts them (in the swizzled rows of a
                    // cluster: at the lane's addresses, rows `kc·8 ..`
                    // whole repeats on)
                    let nn = sub.nts.len() as u32;
                    for ni in 0..nn {
                        let regs = [0u32, 4].map(|dk| {
                            let (p, off) = match b_lane {
                                BLane::Padded(_) => (bb, (kc * 8 + dk) * sh.pitch + ni * 32),
                                BLane::Swizzled(l) => {
                                    let at = l[(dk / 4 * nn + ni) as usize];
                                    (b.add(bb, at), kc * 8 * sh.vpitch)
                                }
                            };
                            let u = b.ld_shared(sptr::<U32>(p), (off / 4) as i32);
                            if sh.rounded {
                                b.u32_as_packed::<T>(u)
                            } else {
                                tf32_operand::<T>(b, u)
                            }
                        });
                        frag_b.push(FragB { regs });
                    }
                } else if let (BLane::Swizzled(lanes), true) = (b_lane, sh.trans) {
                    // grad-input: rows `kc·16 ..` (whole repeats), the
                    // lane's chunk of each fragment pair `np`
                    let q = b.add(bb, kc * 16 * sh.vpitch);
                    for &l in lanes {
                        let p = b.add(q, l);
                        let [r0, r1, r2, r3] = ldsm4_in::<T>(b, p, true, sh.rounded);
                        frag_b.push(FragB { regs: [r0, r1] });
                        frag_b.push(FragB { regs: [r2, r3] });
                    }
                } else if let BLane::Swizzled(lanes) = b_lane {
                    // rows `np·16 ..` of chunk `kc`: a whole repeat on
                    let q = b.add(bb, lanes[kc as usize]);
                    for np in 0..sub.nts.len() as u32 / 2 {
                        let p = b.add(q, np * 16 * sh.vpitch);
                        let [r0, r1, r2, r3] = ldsm4_in::<T>(b, p, false, sh.rounded);
                        frag_b.push(FragB { regs: [r0, r1] });
                        frag_b.push(FragB { regs: [r2, r3] });
                    }
                } else {
                    for np in 0..sub.nts.len() as u32 / 2 {
                        let off = if sh.trans {
                            kc * 16 * sh.pitch + np * 16 * sh.e
                        } else {
                            np * 16 * sh.pitch + kc * 32
                        };
                        let p = b.add(bb, off);
                        let [r0, r1, r2, r3] = ldsm4_in::<T>(b, p, sh.trans, sh.rounded);
                        frag_b.push(FragB { regs: [r0, r1] });
                        frag_b.push(FragB { regs: [r2, r3] });
                    }
                }
                for (mi, a) in frag_a.iter().enumerate() {
                    for (bf, ni) in frag_b.iter().zip(sub.nts.clone()) {
                        mma_into(b, *a, *bf, acc[mi][ni]);
                    }
                }
            });
        }
    }
}
