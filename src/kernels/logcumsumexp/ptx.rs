//! The kernels of [`super`]. Every kernel but the carry pass runs one
//! thread per (row, chunk) in a grid-stride loop, walking the chunk's
//! elements in scan order; the carry pass runs one thread per row over its
//! chunks. `rev` variants walk a row from its end (the backward pass's
//! reverse scans).
//!
//! | kernel | does |
//! |---|---|
//! | `lcse_scan[_rev]` | local scan of each chunk into `y`; chunk total into `tot` |
//! | `lcse_carry` | `carry[c] = tot[0]` for `c = 1`, `log_add_exp(carry[c−1], tot[c−1])` after |
//! | `lcse_apply[_rev]` | `y = log_add_exp(carry[c], y)` for chunks `c ≥ 1` |
//! | `lcse_grad_terms` | `a = log(g) − y` (`g > 0`), `b = log(−g) − y` (`g < 0`), else `−inf`; NaN for NaN `g` |
//! | `lcse_grad_combine` | `gx = exp(x + P) − exp(x + N)` |

use super::host::CHUNK;
use crate::dsl::math;
use crate::dsl::params::Ptr;
use crate::dsl::types::{F32, Reg, U32, U64};
use crate::dsl::{Cmp, KernelBuilder, PtxModule, Rounding};
use crate::error::Result;
use crate::kernel_params;
use crate::target::Sm;

/// Threads per CTA of every kernel.
pub const THREADS: u32 = 256;

kernel_params! {
    /// Arguments of `lcse_scan[_rev]` (`x` and `y` may be the same buffer).
    pub struct ScanArgs => ScanRegs {
        x: Ptr<F32>,
        y: Ptr<F32>,
        tot: Ptr<F32>,
        rows: U32,
        t: U32,
        nchunks: U32,
    }
}

kernel_params! {
    /// Arguments of `lcse_carry`.
    pub struct CarryArgs => CarryRegs {
        tot: Ptr<F32>,
        carry: Ptr<F32>,
        rows: U32,
        nchunks: U32,
    }
}

kernel_params! {
    /// Arguments of `lcse_apply[_rev]`.
    pub struct ApplyArgs => ApplyRegs {
        y: Ptr<F32>,
        carry: Ptr<F32>,
        rows: U32,
        t: U32,
        nchunks: U32,
    }
}

kernel_params! {
    /// Arguments of `lcse_grad_terms` (`a`, `b` written).
    pub struct TermsArgs => TermsRegs {
        g: Ptr<F32>,
        y: Ptr<F32>,
        a: Ptr<F32>,
        b: Ptr<F32>,
        rows: U32,
        t: U32,
        nchunks: U32,
    }
}

kernel_params! {
    /// Arguments of `lcse_grad_combine`.
    pub struct CombineArgs => CombineRegs {
        x: Ptr<F32>,
        p: Ptr<F32>,
        n: Ptr<F32>,
        gx: Ptr<F32>,
        rows: U32,
        t: U32,
        nchunks: U32,
    }
}

fn builder(name: &str, sm: Sm) -> KernelBuilder {
    let mut b = KernelBuilder::new(name, sm);
    b.maxntid(THREADS, 1, 1);
    b
}

/// The element positions of chunk `gid` of a `rows × t` matrix with
/// `nchunks` chunks a row: calls `body(b, c, pos)` for each element in
/// scan order (`pos` is the flat u64 element index), with `c` the chunk
/// index within its row.
fn for_chunk(
    b: &mut KernelBuilder,
    gid: Reg<U32>,
    t: Reg<U32>,
    nchunks: Reg<U32>,
    rev: bool,
    body: impl Fn(&mut KernelBuilder, Reg<U32>, Reg<U32>, Reg<U64>),
) {
    let row = b.div(gid, nchunks);
    let c = b.rem(gid, nchunks);
    let start = b.mul_lo(c, CHUNK as u32);
    let lim = b.add(start, CHUNK as u32);
    let end = b.min(lim, t);
    let base = b.mul_wide_u32(row, t);
    let last = b.sub(t, 1u32);
    b.for_range(start, end, 1u32, |b, k| {
        let idx = if rev { b.sub(last, k) } else { k };
        let wide = b.u32_to_u64(idx);
        let pos = b.add(base, wide);
        body(b, c, k, pos);
    });
}

fn scan_name(rev: bool) -> &'static str {
    if rev { "lcse_scan_rev" } else { "lcse_scan" }
}

fn apply_name(rev: bool) -> &'static str {
    if rev { "lcse_apply_rev" } else { "lcse_apply" }
}

/// Local scan of every chunk (forward or reverse order).
pub fn generate_scan(sm: Sm, rev: bool) -> Result<PtxModule> {
    let mut b = builder(scan_name(rev), sm);
    let p = b.params::<ScanArgs>();
    let total = b.mul_lo(p.rows, p.nchunks);
    b.grid_stride(total, |b, gid| {
        let acc = b.mov(f32::NEG_INFINITY);
        for_chunk(b, gid, p.t, p.nchunks, rev, |b, _c, k, pos| {
            let xp = b.offset64(p.x, pos);
            let v = b.ld_global(xp, 0);
            let row_start = b.rem(k, CHUNK as u32);
            let first = b.setp(Cmp::Eq, row_start, 0u32);
            let merged = math::log_add_exp(b, acc, v);
            let nv = b.selp(first, v, merged);
            b.assign(acc, nv);
            let yp = b.offset64(p.y, pos);
            b.st_global(yp, 0, acc);
        });
        let tp = b.offset(p.tot, gid);
        b.st_global(tp, 0, acc);
    });
    b.finish()
}

/// The carries of every row's chunks.
pub fn generate_carry(sm: Sm) -> Result<PtxModule> {
    let mut b = builder("lcse_carry", sm);
    let p = b.params::<CarryArgs>();
    b.grid_stride(p.rows, |b, row| {
        let base = b.mul_lo(row, p.nchunks);
        let t0 = b.offset(p.tot, base);
        let first = b.ld_global(t0, 0);
        let carry = b.mov(first);
        b.for_range(1u32, p.nchunks, 1u32, |b, c| {
            let i = b.add(base, c);
            let cp = b.offset(p.carry, i);
            b.st_global(cp, 0, carry);
            let tp = b.offset(p.tot, i);
            let tot = b.ld_global(tp, 0);
            let next = math::log_add_exp(b, carry, tot);
            b.assign(carry, next);
        });
    });
    b.finish()
}

/// Apply the carries to chunks `c ≥ 1`.
pub fn generate_apply(sm: Sm, rev: bool) -> Result<PtxModule> {
    let mut b = builder(apply_name(rev), sm);
    let p = b.params::<ApplyArgs>();
    let total = b.mul_lo(p.rows, p.nchunks);
    b.grid_stride(total, |b, gid| {
        let c = b.rem(gid, p.nchunks);
        let later = b.setp(Cmp::Ne, c, 0u32);
        b.if_(later, |b| {
            let cp = b.offset(p.carry, gid);
            let carry = b.ld_global(cp, 0);
            for_chunk(b, gid, p.t, p.nchunks, rev, |b, _c, _k, pos| {
                let yp = b.offset64(p.y, pos);
                let v = b.ld_global(yp, 0);
                let out = math::log_add_exp(b, carry, v);
                b.st_global(yp, 0, out);
            });
        });
    });
    b.finish()
}

/// `log(s·g) − y` where `s·g > 0` and `y ≠ −inf`, else `−inf`; NaN `g`
/// gives NaN.
fn term(b: &mut KernelBuilder, sg: Reg<F32>, g: Reg<F32>, y: Reg<F32>) -> Reg<F32> {
    let lg = math::log(b, sg);
    let t = b.fsub(Rounding::Rn, lg, y);
    let pos = b.setp(Cmp::Gt, sg, 0f32);
    // Unordered "not equal", as Rust's `!=`: a NaN `y` passes (and makes
    // the term NaN).
    let finite_y = b.setp(Cmp::Neu, y, f32::NEG_INFINITY);
    let take = b.pand(pos, finite_y);
    let v = b.selp(take, t, f32::NEG_INFINITY);
    let nan = b.setp(Cmp::Nan, g, g);
    b.selp(nan, g, v)
}

/// The backward pass's log-space terms of the positive and negative parts
/// of `g`.
pub fn generate_grad_terms(sm: Sm) -> Result<PtxModule> {
    let mut b = builder("lcse_grad_terms", sm);
    let p = b.params::<TermsArgs>();
    let total = b.mul_lo(p.rows, p.nchunks);
    b.grid_stride(total, |b, gid| {
        for_chunk(b, gid, p.t, p.nchunks, false, |b, _c, _k, pos| {
            let gp = b.offset64(p.g, pos);
            let g = b.ld_global(gp, 0);
            let yp = b.offset64(p.y, pos);
            let y = b.ld_global(yp, 0);
            let a = term(b, g, g, y);
            let ng = b.fneg(g);
            let bb = term(b, ng, g, y);
            let ap = b.offset64(p.a, pos);
            b.st_global(ap, 0, a);
            let bp = b.offset64(p.b, pos);
            b.st_global(bp, 0, bb);
        });
    });
    b.finish()
}

/// `gx = exp(x + P) − exp(x + N)`.
pub fn generate_grad_combine(sm: Sm) -> Result<PtxModule> {
    let mut b = builder("lcse_grad_combine", sm);
    let p = b.params::<CombineArgs>();
    let total = b.mul_lo(p.rows, p.nchunks);
    b.grid_stride(total, |b, gid| {
        for_chunk(b, gid, p.t, p.nchunks, false, |b, _c, _k, pos| {
            let xp = b.offset64(p.x, pos);
            let x = b.ld_global(xp, 0);
            let pp = b.offset64(p.p, pos);
            let pv = b.ld_global(pp, 0);
            let np = b.offset64(p.n, pos);
            let nv = b.ld_global(np, 0);
            let sp = b.fadd(Rounding::Rn, x, pv);
            let sn = b.fadd(Rounding::Rn, x, nv);
            let ep = math::exp(b, sp);
            let en = math::exp(b, sn);
            let gx = b.fsub(Rounding::Rn, ep, en);
            let gp = b.offset64(p.gx, pos);
            b.st_global(gp, 0, gx);
        });
    });
    b.finish()
}

/// Every kernel of the family for `sm`.
pub fn variants(sm: Sm) -> Result<Vec<PtxModule>> {
    Ok(vec![
        generate_scan(sm, false)?,
        generate_scan(sm, true)?,
        generate_carry(sm)?,
        generate_apply(sm, false)?,
        generate_apply(sm, true)?,
        generate_grad_terms(sm)?,
        generate_grad_combine(sm)?,
    ])
}
