//! The kernels of [`super`]: one module per (kernel, precision, block
//! size `B`) and SM from sm_80 (`B` is a compile-time constant, so the
//! MMA chunks of a block unroll). Every kernel runs [`WARPS`] warps per
//! CTA and keeps its f32 accumulator fragments in registers across the
//! whole reduction, so each output element is exactly the contract's chain
//! of `mma.sync` steps. No atomics: every output element has one writer.
//!
//! | kernel | unit of work | reduction (K of the MMA) |
//! |---|---|---|
//! | `block_ell_tc_forward_{p}_b{B}` | a CTA tile of [`tile`]`(p, B).tokens` rows `n` × the `B` outputs of block row `r` ([`tiled`]: `cp.async` staging, `ldmatrix`) | slots `k` ascending (empty ones skipped, CTA-uniform), `j` in chunks |
//! | `block_ell_tc_grad_input_{p}_b{B}` | a CTA tile of rows `n` × the `B` inputs of column block `c` ([`tiled`]) | the transposed index's slots ascending, `i` in chunks |
//! | `block_ell_tc_grad_values_{p}_b{B}` | a warp's 16 `i` × 8 `j` of one slot | rows `n` in chunks within each 256-row N-chunk; partials joined by `add.rn` in ascending order in registers |
//!
//! The forward and grad-input kernels stage their operands in shared
//! memory (see [`tiled`]). Grad-values still loads its fragments element
//! by element with `ld.global` (16-bit elements `ld.global.u16`, packed in
//! pairs low element first; tf32 operands `ld.global.f32` then
//! `cvt.rna.tf32.f32`), by the PTX ISA's fragment tables (see
//! [`crate::dsl::builder`]'s `mma` module); rows `n ≥ N` are read clamped
//! to row `N − 1` and their operands replaced by `+0`, as the host model
//! pads. Staging grad-values the same way is the next speed step.

use crate::dsl::params::Ptr;
use crate::dsl::types::{Bf16x2, F16x2, F32, MmaInput, Pred, Reg, S32, Tf32, U16, U32, U64};
use crate::dsl::{Cmp, FragA, FragB, FragC, GlobalPtr, KernelBuilder, PtxModule, Rounding};
use crate::error::Result;
use crate::kernel_params;
use crate::kernels::block_ell::{Dims, N_CHUNK};
use crate::target::{Feature, Sm};
use crate::tensor_core::InputFormat;

use super::host::{TC_BLOCK_SIZES, TcPrecision};

pub mod tiled;
pub use tiled::{Tile, tile};

/// Warps per CTA.
pub const WARPS: u32 = 4;
/// Threads per CTA.
pub const THREADS: u32 = 32 * WARPS;

kernel_params! {
    /// Arguments of `block_ell_tc_forward_{p}_b{B}` (`x`, `values`: the
    /// inputs' addresses, u16 or f32 elements by precision; `bias` is read
    /// only when `has_bias` is 1).
    pub struct ForwardArgs => ForwardRegs {
        x: Ptr<U32>,
        values: Ptr<U32>,
        col: Ptr<S32>,
        bias: Ptr<F32>,
        y: Ptr<F32>,
        n: U32,
        r: U32,
        c: U32,
        k: U32,
        has_bias: U32,
    }
}

kernel_params! {
    /// Arguments of `block_ell_tc_grad_input_{p}_b{B}` (`offsets [C+1]`,
    /// `slots [nnz]`: the transposed index).
    pub struct GradInputArgs => GradInputRegs {
        gy: Ptr<U32>,
        values: Ptr<U32>,
        offsets: Ptr<U32>,
        slots: Ptr<U32>,
        gx: Ptr<F32>,
        n: U32,
        r: U32,
        c: U32,
        k: U32,
    }
}

kernel_params! {
    /// Arguments of `block_ell_tc_grad_values_{p}_b{B}`.
    pub struct GradValuesArgs => GradValuesRegs {
        x: Ptr<U32>,
        gy: Ptr<U32>,
        col: Ptr<S32>,
        gv: Ptr<F32>,
        n: U32,
        r: U32,
        c: U32,
        k: U32,
    }
}

/// Refuse what no variant exists for: `B` outside [`TC_BLOCK_SIZES`] and
/// SMs below sm_80.
fn check(sm: Sm, b: u32) -> Result<()> {
    // the same checks, with the same errors, as the host model
    let dims = Dims::new(0, 0, 0, b as usize)?;
    super::host::request_sm(sm, &dims)
}

fn builder(name: &str, sm: Sm) -> KernelBuilder {
    let mut b = KernelBuilder::new(name, sm);
    b.maxntid(THREADS, 1, 1);
    b
}

/// The lane's `(groupID, threadID_in_group)` and the warp's first tile and
/// tile stride.
struct Warp {
    g: Reg<U32>,
    t: Reg<U32>,
    first: Reg<U32>,
    step: Reg<U32>,
}

fn warp(b: &mut KernelBuilder) -> Warp {
    let tid = b.tid_x();
    let lane = b.and(tid, 31u32);
    let w = b.shr(tid, 5u32);
    let g = b.shr(lane, 2u32);
    let t = b.and(lane, 3u32);
    let cta = b.ctaid_x();
    let first = b.mad_lo(cta, WARPS, w);
    let nct = b.nctaid_x();
    let step = b.mul_lo(nct, WARPS);
    Warp { g, t, first, step }
}

/// One operand element as the bits the tensor core reads: `idx` is the
/// element index into `base` (u16 elements for bf16/f16, f32 for tf32);
/// with `valid` false the operand is `+0`.
fn operand(
    b: &mut KernelBuilder,
    fmt: InputFormat,
    base: GlobalPtr<U32>,
    idx: Reg<U64>,
    valid: Option<Reg<Pred>>,
) -> Reg<U32> {
    if fmt == InputFormat::Tf32 {
        let p = b.offset64(base.cast::<F32>(), idx);
        let mut v = b.ld_global(p, 0);
        if let Some(ok) = valid {
            v = b.selp(ok, v, 0.0f32);
        }
        let t = b.cvt_to_tf32(v);
        b.packed_bits(t)
    } else {
        let p = b.offset64(base.cast::<U16>(), idx);
        let mut v = b.ld_global(p, 0);
        if let Some(ok) = valid {
            v = b.selp(ok, v, 0u32);
        }
        v
    }
}

/// The `(row, col)` of each element of a thread's `A` fragment (16×q,
/// row-major), register by register, low half first (one element per
/// register for tf32).
fn a_coords(fmt: InputFormat) -> Vec<Vec<(u32, u32, bool)>> {
    // (row offset added to groupID, col offset, col uses 2·t (true) or t)
    (0..4u32)
        .map(|r| {
            let row = 8 * (r & 1);
            if fmt == InputFormat::Tf32 {
                vec![(row, 4 * (r >> 1), false)]
            } else {
                (0..2).map(|h| (row, h + 8 * (r >> 1), true)).collect()
            }
        })
        .collect()
}

/// The `(k row, n col)` of each element of a thread's `B` fragment (q×8):
/// k row offset (added to `2·t` or `t`), column `groupID`.
fn b_coords(fmt: InputFormat) -> Vec<Vec<(u32, bool)>> {
    (0..2u32)
        .map(|r| {
            if fmt == InputFormat::Tf32 {
                vec![(4 * r, false)]
            } else {
                (0..2).map(|h| (h + 8 * r, true)).collect()
            }
        })
        .collect()
}

/// Build a fragment register from its elements' operand bits.
fn pack<T: MmaInput>(b: &mut KernelBuilder, elems: &[Reg<U32>]) -> Reg<T> {
    let w = match elems {
        [one] => *one,
        [lo, hi] => {
            let h = b.shl(*hi, 16u32);
            b.or(*lo, h)
        }
        _ => unreachable!("one or two elements per register"),
    };
    b.u32_as_packed::<T>(w)
}

/// The thread's `A` fragment: `elem(b, row, col)` gives the operand bits
/// of tile element `(row, col)`.
fn frag_a<T: MmaInput>(
    b: &mut KernelBuilder,
    w: &Warp,
    mut elem: impl FnMut(&mut KernelBuilder, Reg<U32>, Reg<U32>) -> Reg<U32>,
) -> FragA<T> {
    let t2 = b.shl(w.t, 1u32);
    let mut regs = Vec::new();
    for reg in a_coords(T::FORMAT) {
        let mut elems = Vec::new();
        for (ro, co, two) in reg {
            let row = b.add(w.g, ro);
            let col = b.add(if two { t2 } else { w.t }, co);
            elems.push(elem(b, row, col));
        }
        regs.push(pack::<T>(b, &elems));
    }
    FragA {
        regs: [regs[0], regs[1], regs[2], regs[3]],
    }
}

/// The thread's `B` fragment: `elem(b, krow, ncol)`.
fn frag_b<T: MmaInput>(
    b: &mut KernelBuilder,
    w: &Warp,
    mut elem: impl FnMut(&mut KernelBuilder, Reg<U32>, Reg<U32>) -> Reg<U32>,
) -> FragB<T> {
    let t2 = b.shl(w.t, 1u32);
    let mut regs = Vec::new();
    for reg in b_coords(T::FORMAT) {
        let mut elems = Vec::new();
        for (ko, two) in reg {
            let krow = b.add(if two { t2 } else { w.t }, ko);
            elems.push(elem(b, krow, w.g));
        }
        regs.push(pack::<T>(b, &elems));
    }
    FragB {
        regs: [regs[0], regs[1]],
    }
}

/// The `(row, col)` in the 16×8 tile of accumulator register `i`.
fn c_coord(b: &mut KernelBuilder, w: &Warp, i: u32) -> (Reg<U32>, Reg<U32>) {
    let row = b.add(w.g, 8 * (i >> 1));
    let t2 = b.shl(w.t, 1u32);
    let col = b.add(t2, i & 1);
    (row, col)
}

fn mma_into<T: MmaInput>(b: &mut KernelBuilder, a: FragA<T>, bf: FragB<T>, acc: FragC) {
    let d = b.mma_sync(a, bf, acc);
    for (dst, src) in acc.regs.into_iter().zip(d.regs) {
        b.assign(dst, src);
    }
}

/// `row · width + col` as a 64-bit element index.
fn index2(b: &mut KernelBuilder, row: Reg<U32>, width: Reg<U32>, col: Reg<U32>) -> Reg<U64> {
    let col = b.u32_to_u64(col);
    b.mad_wide_u32(row, width, col)
}

fn log2(v: u32) -> u32 {
    v.trailing_zeros()
}

fn name(kernel: &str, prec: TcPrecision, bs: u32) -> String {
    format!("block_ell_tc_{kernel}_{prec}_b{bs}")
}

/// `block_ell_tc_forward_{p}_b{B}` for `sm`.
///
/// # Errors
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for `B` not in
/// [`TC_BLOCK_SIZES`]; [`Error::UnsupportedFeature`](crate::Error::UnsupportedFeature)
/// ([`Feature::MmaSync`]) below sm_80.
pub fn generate_forward(sm: Sm, prec: TcPrecision, bs: u32) -> Result<PtxModule> {
    check(sm, bs)?;
    match prec {
        TcPrecision::Bf16 => tiled::forward::<Bf16x2>(sm, prec, bs),
        TcPrecision::F16 => tiled::forward::<F16x2>(sm, prec, bs),
        TcPrecision::Tf32 => tiled::forward::<Tf32>(sm, prec, bs),
    }
}

/// `block_ell_tc_grad_input_{p}_b{B}` for `sm`.
///
/// # Errors
/// As [`generate_forward`].
pub fn generate_grad_input(sm: Sm, prec: TcPrecision, bs: u32) -> Result<PtxModule> {
    check(sm, bs)?;
    match prec {
        TcPrecision::Bf16 => tiled::grad_input::<Bf16x2>(sm, prec, bs),
        TcPrecision::F16 => tiled::grad_input::<F16x2>(sm, prec, bs),
        TcPrecision::Tf32 => tiled::grad_input::<Tf32>(sm, prec, bs),
    }
}

/// `block_ell_tc_grad_values_{p}_b{B}` for `sm`.
///
/// # Errors
/// As [`generate_forward`].
pub fn generate_grad_values(sm: Sm, prec: TcPrecision, bs: u32) -> Result<PtxModule> {
    check(sm, bs)?;
    match prec {
        TcPrecision::Bf16 => grad_values::<Bf16x2>(sm, prec, bs),
        TcPrecision::F16 => grad_values::<F16x2>(sm, prec, bs),
        TcPrecision::Tf32 => grad_values::<Tf32>(sm, prec, bs),
    }
}

fn grad_values<T: MmaInput>(sm: Sm, prec: TcPrecision, bs: u32) -> Result<PtxModule> {
    let fmt = T::FORMAT;
    let q = prec.chunk() as u32;
    let mut b = builder(&name("grad_values", prec, bs), sm);
    let p = b.params::<GradValuesArgs>();
    let w = warp(&mut b);
    let (mt, nt) = (bs / 16, bs / 8);
    let slots = b.mul_lo(p.r, p.k);
    let per_s = mt * nt;
    let total = b.mul_lo(slots, per_s);
    let last = b.sub(p.n, 1u32);
    let fin = b.shl(p.c, log2(bs));
    let fout = b.shl(p.r, log2(bs));
    let chunk = N_CHUNK as u32;
    let nc = b.add(p.n, chunk - 1);
    let nq = b.shr(nc, log2(chunk));
    b.for_range(w.first, total, w.step, |b, tile| {
        let jt = b.and(tile, nt - 1);
        let rest = b.shr(tile, log2(nt));
        let it = b.and(rest, mt - 1);
        let s = b.shr(rest, log2(mt));
        let i0 = b.shl(it, 4u32);
        let j0 = b.shl(jt, 3u32);
        let sum = b.frag_c_zero();
        let cp = b.offset(p.col, s);
        let cs = b.ld_global(cp, 0);
        let live = b.setp(Cmp::Ge, cs, 0i32);
        b.if_(live, |b| {
            let c = b.s32_as_u32(cs);
            let r = b.div(s, p.k);
            let rb = b.shl(r, log2(bs));
            let gyc0 = b.add(rb, i0);
            let cb = b.shl(c, log2(bs));
            let xc0 = b.add(cb, j0);
            b.for_range(0u32, nq, 1u32, |b, qi| {
                let part = b.frag_c_zero();
                let start = b.shl(qi, log2(chunk));
                let end = b.add(start, chunk);
                let end = b.min(end, p.n);
                b.for_range(start, end, q, |b, n0| {
                    // A[i][e] = gy[n0 + e][r·B + i0 + i]
                    let a = frag_a::<T>(b, &w, |b, row, col| {
                        let nn = b.add(n0, col);
                        let ok = b.setp(Cmp::Lt, nn, p.n);
                        let nn = b.min(nn, last);
                        let gc = b.add(gyc0, row);
                        let e = index2(b, nn, fout, gc);
                        operand(b, fmt, p.gy, e, Some(ok))
                    });
                    // B[e][j] = x[n0 + e][c·B + j0 + j]
                    let bf = frag_b::<T>(b, &w, |b, krow, ncol| {
                        let nn = b.add(n0, krow);
                        let ok = b.setp(Cmp::Lt, nn, p.n);
                        let nn = b.min(nn, last);
                        let xc = b.add(xc0, ncol);
                        let e = index2(b, nn, fin, xc);
                        operand(b, fmt, p.x, e, Some(ok))
                    });
                    mma_into(b, a, bf, part);
                });
                // the tree: the first partial, then add.rn in order
                let first = b.setp(Cmp::Eq, qi, 0u32);
                for (dst, src) in sum.regs.into_iter().zip(part.regs) {
                    let added = b.fadd(Rounding::Rn, dst, src);
                    let v = b.selp(first, src, added);
                    b.assign(dst, v);
                }
            });
        });
        let sb = b.shl(s, log2(bs));
        let si = b.add(sb, i0);
        for (i, &v) in sum.regs.iter().enumerate() {
            let (row, col) = c_coord(b, &w, i as u32);
            let srow = b.add(si, row);
            let e = b.shl(srow, log2(bs));
            let e = b.add(e, j0);
            let e = b.add(e, col);
            let gp = b.offset(p.gv, e);
            b.st_global(gp, 0, v);
        }
    });
    b.finish()
}

/// Every tensor-core block-ELL kernel for `sm`: forward, grad-input and
/// grad-values × {bf16, f16, tf32} × `B` ∈ {16, 32, 64} (27 modules) from
/// sm_80; none below ([`Feature::MmaSync`]).
pub fn variants(sm: Sm) -> Result<Vec<PtxModule>> {
    if !sm.supports(Feature::MmaSync) {
        return Ok(Vec::new());
    }
    let mut all = Vec::new();
    for prec in TcPrecision::ALL {
        for &bs in &TC_BLOCK_SIZES {
            let bs = bs as u32;
            all.push(generate_forward(sm, prec, bs)?);
            all.push(generate_grad_input(sm, prec, bs)?);
            all.push(generate_grad_values(sm, prec, bs)?);
        }
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_from_sm_80_only() {
        for sm in Sm::ALL {
            let all = variants(sm).unwrap();
            if sm.supports(Feature::MmaSync) {
                assert_eq!(all.len(), 27, "{sm}");
                for m in &all {
                    // mma in every kernel; no atomics or reductions to memory
                    let ops: Vec<&str> = m
                        .ptx
                        .lines()
                        .map(|l| {
                            let t = l.trim_start();
                            match t.strip_prefix('@') {
                                Some(rest) => rest.split_once(' ').map_or("", |(_, op)| op),
                                None => t,
                            }
                        })
                        .collect();
                    assert!(ops.iter().any(|op| op.starts_with("mma")), "{}", m.kernel);
                    for op in ops {
                        assert!(
                            !op.starts_with("atom") && !op.starts_with("red"),
                            "{}: {op}",
                            m.kernel
                        );
                    }
                }
            } else {
                assert!(all.is_empty(), "{sm}");
                let e = generate_forward(sm, TcPrecision::Bf16, 32).unwrap_err();
                assert!(
                    matches!(
                        e,
                        crate::Error::UnsupportedFeature {
                            feature: Feature::MmaSync,
                            ..
                        }
                    ),
                    "{e:?}"
                );
            }
        }
    }

    #[test]
    fn block_8_is_refused() {
        let e = generate_forward(Sm::Sm80, TcPrecision::F16, 8).unwrap_err();
        assert!(e.to_string().contains("B = 8"), "{e}");
    }
}
