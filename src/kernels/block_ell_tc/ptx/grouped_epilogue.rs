//! The grouped kernels' epilogue (a child of [`super`], split out for
//! its size): the warp's accumulators, plus the bias, stored as f32 or
//! bf16.

use crate::dsl::types::{F32, Pred, Reg, U32};
use crate::dsl::{Cmp, FragC, GlobalPtr, KernelBuilder, Rounding};

use super::super::shape::Shape;
use super::{Bias, GroupTile, Io};

/// Store the warp's accumulators: lane `(g, t)` holds rows `g` and `g + 8`
/// of each 16-row tile, features `2t`, `2t + 1` of each 8-feature tile;
/// output features past the last block are not stored.
#[allow(clippy::too_many_arguments)]
pub(super) fn epilogue(
    b: &mut KernelBuilder,
    sh: &Shape,
    gt: &GroupTile,
    io: &Io,
    bias: Option<&Bias>,
    acc: &[Vec<FragC>],
    (n0, o0): (Reg<U32>, Reg<U32>),
    (wt0, wf0): (Reg<U32>, Reg<U32>),
    (g, t): (Reg<U32>, Reg<U32>),
) {
    let _ = gt;
    let obase = b.mul_lo(o0, sh.bs);
    let f0 = b.add(obase, wf0);
    let t2 = b.shl(t, 1u32);
    let f0 = b.add(f0, t2);
    // per fragment column: the feature is inside the layer
    let fin: Vec<Reg<Pred>> = (0..sh.nt)
        .map(|ni| {
            let f = b.add(f0, ni * 8);
            b.setp(Cmp::Lt, f, io.out_width)
        })
        .collect();
    let biases = bias.map(|bi| {
        let on = b.setp(Cmp::Ne, bi.on, 0u32);
        let vars: Vec<[_; 2]> = (0..sh.nt)
            .map(|_| [b.var::<F32>(0.0f32), b.var::<F32>(0.0f32)])
            .collect();
        b.if_(on, |b| {
            let bp = b.offset(bi.ptr, f0);
            for (ni, v) in vars.iter().enumerate() {
                b.if_(fin[ni], |b| {
                    let [lo, hi] = b.ld_global_v2(bp, (ni * 8) as i32);
                    b.set(&v[0], lo);
                    b.set(&v[1], hi);
                });
            }
        });
        let regs: Vec<[Reg<F32>; 2]> = vars.iter().map(|v| [b.get(&v[0]), b.get(&v[1])]).collect();
        (on, regs)
    });
    let rbase = b.add(n0, wt0);
    let rbase = b.add(rbase, g);
    let mut rows = Vec::new();
    for (mi, frags) in acc.iter().enumerate() {
        for h in 0..2u32 {
            let row = b.add(rbase, mi as u32 * 16 + 8 * h);
            let inside = b.setp(Cmp::Lt, row, io.n);
            let el = b.mul_wide_u32(row, io.out_width);
            let f = b.u32_to_u64(f0);
            let el = b.add(el, f);
            let vals: Vec<[Reg<F32>; 2]> = frags
                .iter()
                .enumerate()
                .map(|(ni, fc)| {
                    let v = [fc.regs[2 * h as usize], fc.regs[2 * h as usize + 1]];
                    match &biases {
                        Some((on, bv)) => [0, 1].map(|q| {
                            let s = b.fadd(Rounding::Rn, v[q], bv[ni][q]);
                            b.selp(*on, s, v[q])
                        }),
                        None => v,
                    }
                })
                .collect();
            let oks: Vec<Reg<Pred>> = fin.iter().map(|&p| b.pand(inside, p)).collect();
            rows.push((oks, el, vals));
        }
    }
    let bf16 = b.setp(Cmp::Ne, io.out_bf16, 0u32);
    b.if_else(
        bf16,
        |b| {
            for (oks, el, vals) in &rows {
                let by = b.shl(*el, 1u32);
                let p = b.add(by, io.out);
                let yp = GlobalPtr::<U32>::from_reg(p);
                for (ni, v) in vals.iter().enumerate() {
                    let h2 = b.cvt_to_bf16x2(v[1], v[0]);
                    let w = b.packed_bits(h2);
                    b.guarded(oks[ni], |b| b.st_global(yp, (ni * 4) as i32, w));
                }
            }
        },
        |b| {
            for (oks, el, vals) in &rows {
                let by = b.shl(*el, 2u32);
                let p = b.add(by, io.out);
                let yp = GlobalPtr::<F32>::from_reg(p);
                for (ni, v) in vals.iter().enumerate() {
                    b.guarded(oks[ni], |b| b.st_global_v2(yp, (ni * 8) as i32, *v));
                }
            }
        },
    );
}
