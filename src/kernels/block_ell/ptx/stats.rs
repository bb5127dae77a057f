//! The statistics kernels of [`super`] (the device form of
//! [`super::super::stats`]), one module each for every block size: `B` is a
//! run-time argument here, the loops are short sequential chains.
//!
//! | kernel | thread per | does |
//! |---|---|---|
//! | `block_ell_grad_norms` | slot | `sqrt(fma(g, g, acc)…)` over the slot's `B·B` values, `i` then `j`; `+0.0` for an empty slot |
//! | `block_ell_block_norm_partials` | (chunk, column block) | the chunk's chain over its rows, row `n` adding `j = 0..B` with `fma(v, v, acc)` |
//! | `block_ell_sqrt` | element | `v = sqrt.rn(v)` in place (after the fold of the partials) |
//! | `block_ell_ema` | element | `s = fma(decay, s, mul.rn(sub.rn(1, decay), v))` |

use super::super::host::N_CHUNK;
use super::THREADS;
use crate::dsl::params::Ptr;
use crate::dsl::types::{F32, S32, U32};
use crate::dsl::{Cmp, KernelBuilder, PtxModule, Rounding};
use crate::error::Result;
use crate::kernel_params;
use crate::target::Sm;

kernel_params! {
    /// Arguments of `block_ell_grad_norms`: `out [slots]` from `gv [slots,
    /// bb]` (`bb` = `B·B`).
    pub struct GradNormsArgs => GradNormsRegs {
        gv: Ptr<F32>,
        col: Ptr<S32>,
        out: Ptr<F32>,
        slots: U32,
        bb: U32,
    }
}

kernel_params! {
    /// Arguments of `block_ell_block_norm_partials`: chunks `q0 .. q0 +
    /// groups` of `a [n, blocks·b]` into `part [groups, blocks]`.
    pub struct NormPartialsArgs => NormPartialsRegs {
        a: Ptr<F32>,
        part: Ptr<F32>,
        n: U32,
        blocks: U32,
        b: U32,
        q0: U32,
        groups: U32,
    }
}

kernel_params! {
    /// Arguments of `block_ell_sqrt` (in place over `len`).
    pub struct SqrtArgs => SqrtRegs {
        v: Ptr<F32>,
        len: U32,
    }
}

kernel_params! {
    /// Arguments of `block_ell_ema` (`scores` updated in place).
    pub struct EmaArgs => EmaRegs {
        scores: Ptr<F32>,
        values: Ptr<F32>,
        len: U32,
        decay: F32,
    }
}

fn builder(name: &str, sm: Sm) -> KernelBuilder {
    let mut b = KernelBuilder::new(name, sm);
    b.maxntid(THREADS, 1, 1);
    b
}

/// The Frobenius norm of every slot's block of `gv`.
pub fn generate_grad_norms(sm: Sm) -> Result<PtxModule> {
    let mut b = builder("block_ell_grad_norms", sm);
    let p = b.params::<GradNormsArgs>();
    b.grid_stride(p.slots, |b, s| {
        let cp = b.offset(p.col, s);
        let cb = b.ld_global_nc(cp, 0);
        let used = b.setp(Cmp::Ge, cb, 0i32);
        let acc = b.mov(0.0f32);
        b.if_(used, |b| {
            let first = b.mul_wide_u32(s, p.bb);
            let g0 = b.offset64(p.gv, first);
            b.for_range(0u32, p.bb, 1u32, |b, e| {
                let gp = b.offset(g0, e);
                let g = b.ld_global_nc(gp, 0);
                let next = b.ffma(Rounding::Rn, g, g, acc);
                b.assign(acc, next);
            });
            let r = b.fsqrt(Rounding::Rn, acc);
            b.assign(acc, r);
        });
        let op = b.offset(p.out, s);
        b.st_global(op, 0, acc);
    });
    b.finish()
}

/// Chunk partials of the per-column-block sums of squares.
pub fn generate_norm_partials(sm: Sm) -> Result<PtxModule> {
    let mut b = builder("block_ell_block_norm_partials", sm);
    let p = b.params::<NormPartialsArgs>();
    let total = b.mul_lo(p.blocks, p.groups);
    let width = b.mul_lo(p.blocks, p.b);
    b.grid_stride(total, |b, e| {
        let blk = b.rem(e, p.blocks);
        let g = b.div(e, p.blocks);
        let q = b.add(p.q0, g);
        let start = b.mul_lo(q, N_CHUNK as u32);
        let lim = b.add(start, N_CHUNK as u32);
        let end = b.min(lim, p.n);
        let col0 = b.mul_lo(blk, p.b);
        let col0w = b.u32_to_u64(col0);
        let acc = b.mov(0.0f32);
        b.for_range(start, end, 1u32, |b, row| {
            let first = b.mad_wide_u32(row, width, col0w);
            let r0 = b.offset64(p.a, first);
            b.for_range(0u32, p.b, 1u32, |b, j| {
                let vp = b.offset(r0, j);
                let v = b.ld_global_nc(vp, 0);
                let next = b.ffma(Rounding::Rn, v, v, acc);
                b.assign(acc, next);
            });
        });
        let dp = b.offset(p.part, e);
        b.st_global(dp, 0, acc);
    });
    b.finish()
}

/// `v = sqrt.rn(v)` in place.
pub fn generate_sqrt(sm: Sm) -> Result<PtxModule> {
    let mut b = builder("block_ell_sqrt", sm);
    let p = b.params::<SqrtArgs>();
    b.grid_stride(p.len, |b, e| {
        let vp = b.offset(p.v, e);
        let v = b.ld_global(vp, 0);
        let r = b.fsqrt(Rounding::Rn, v);
        b.st_global(vp, 0, r);
    });
    b.finish()
}

/// The EMA update of block scores.
pub fn generate_ema(sm: Sm) -> Result<PtxModule> {
    let mut b = builder("block_ell_ema", sm);
    let p = b.params::<EmaArgs>();
    let keep = b.fsub(Rounding::Rn, 1.0f32, p.decay);
    b.grid_stride(p.len, |b, e| {
        let sp = b.offset(p.scores, e);
        let vp = b.offset(p.values, e);
        let s = b.ld_global(sp, 0);
        let v = b.ld_global_nc(vp, 0);
        let kv = b.fmul(Rounding::Rn, keep, v);
        let out = b.ffma(Rounding::Rn, p.decay, s, kv);
        b.st_global(sp, 0, out);
    });
    b.finish()
}

/// Every statistics kernel for `sm` (the end of [`super::variants`]).
pub fn kernels(sm: Sm) -> Result<Vec<PtxModule>> {
    Ok(vec![
        generate_grad_norms(sm)?,
        generate_norm_partials(sm)?,
        generate_sqrt(sm)?,
        generate_ema(sm)?,
    ])
}
