//! The grouped kernels' per-thread values copies where they are staged
//! by `cp.async` (a child of [`super`], split out for its size; the
//! cluster kernels land their blocks by tensor map instead).

use crate::dsl::KernelBuilder;
use crate::dsl::types::{Reg, U32, U64};

use super::super::common::log2;
use super::super::shape::Shape;
use super::{GroupTile, THREADS};

/// One of a thread's 16-byte copies of the values blocks, the same every
/// step: unit `u = tid + j·THREADS` of the `G·B·cpr` units of a step,
/// block `g = u / (B·cpr)`.
#[derive(Clone)]
pub(super) struct VCopy {
    /// the blocks the copy may belong to (one, or `THREADS / (B·cpr)`
    /// consecutive ones, picked by `gi`)
    pub(super) cands: std::ops::Range<usize>,
    pub(super) gi: Option<Reg<U32>>,
    /// byte offset in a values block (source), and in a values buffer
    /// (destination, block `g` included)
    pub(super) w16: Reg<U64>,
    pub(super) doff: Reg<U32>,
}

/// The thread's [`VCopy`]s (every layout has `G·B·cpr` a multiple of
/// [`THREADS`]).
pub(super) fn vcopies(
    b: &mut KernelBuilder,
    sh: &Shape,
    gt: &GroupTile,
    tid: Reg<U32>,
) -> Vec<VCopy> {
    let upb = sh.bs * sh.cpr;
    let total = gt.g * upb;
    assert!(total.is_multiple_of(THREADS) && THREADS.is_power_of_two());
    let dest = |b: &mut KernelBuilder, g: Reg<U32>, within: Reg<U32>| {
        let row = b.shr(within, log2(sh.cpr));
        let ch = b.and(within, sh.cpr - 1);
        let d = b.mul_lo(g, sh.vbuf());
        let d = b.mad_lo(row, sh.pitch, d);
        let d = b.mad_lo(ch, 16u32, d);
        let w16 = b.shl(within, 4u32);
        (b.u32_to_u64(w16), d)
    };
    (0..total / THREADS)
        .map(|j| {
            if upb >= THREADS {
                let g = (j * THREADS / upb) as usize;
                let within = b.add(tid, j * THREADS % upb);
                let gr = b.mov(g as u32);
                let (w16, doff) = dest(b, gr, within);
                VCopy {
                    cands: g..g + 1,
                    gi: None,
                    w16,
                    doff,
                }
            } else {
                let m = THREADS / upb;
                let gi = b.shr(tid, log2(upb));
                let within = b.and(tid, upb - 1);
                let g = b.add(gi, j * m);
                let (w16, doff) = dest(b, g, within);
                let c0 = (j * m) as usize;
                VCopy {
                    cands: c0..c0 + m as usize,
                    gi: Some(gi),
                    w16,
                    doff,
                }
            }
        })
        .collect()
}
