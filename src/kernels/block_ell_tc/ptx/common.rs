//! Fragment and addressing helpers the tensor-core kernels share
//! ([`super::grouped`], [`super::tiled_values`], [`super::values_tiles`]),
//! and the grad-values kernels' N-chunk fold.
//!
//! tf32 operands are loaded as raw f32 bits (an 8×8 `.b16` matrix of
//! `ldmatrix` is an 8 × 4 `f32` matrix, exactly the tf32 fragment layout)
//! and converted with `cvt.rna.tf32.f32`.

use crate::dsl::types::{B32, F32, MmaInput, Pred, Reg, U32, U64};
use crate::dsl::{Cmp, FragC, GlobalPtr, KernelBuilder, Rounding, SharedPtr};
use crate::tensor_core::InputFormat;

pub(super) fn log2(v: u32) -> u32 {
    v.trailing_zeros()
}

pub(super) fn gptr(r: Reg<U64>) -> GlobalPtr<U32> {
    GlobalPtr::from_reg(r)
}

pub(super) fn sptr<E>(r: Reg<U32>) -> SharedPtr<E> {
    SharedPtr::from_reg(r)
}

/// A raw f32 register (as loaded) as a tf32 operand of type `T`.
pub(super) fn tf32_operand<T: MmaInput>(b: &mut KernelBuilder, bits: Reg<U32>) -> Reg<T> {
    let f = b.f32_from_bits(bits);
    let t = b.cvt_to_tf32(f);
    let w = b.packed_bits(t);
    b.u32_as_packed::<T>(w)
}

/// f32 bits rounded to tf32 (`cvt.rna.tf32.f32`), as bits.
pub(super) fn tf32_round_bits(b: &mut KernelBuilder, bits: Reg<U32>) -> Reg<U32> {
    let f = b.f32_from_bits(bits);
    let t = b.cvt_to_tf32(f);
    b.packed_bits(t)
}

/// The 16 bytes at `p + 4·k` (four f32) rounded to tf32 in place in
/// shared memory (`ld.shared.v4`, [`tf32_round_bits`], `st.shared.v4`).
pub(super) fn round16_in_place(b: &mut KernelBuilder, p: Reg<U32>, k: i32) {
    let v = b.ld_shared_v4::<U32>(sptr::<U32>(p), k);
    let r = v.map(|u| tf32_round_bits(b, u));
    b.st_shared_v4(sptr::<U32>(p), k, r);
}

/// [`ldsm4`], or where the tf32 operands were rounded in shared memory
/// (`rounded`) the raw registers taken as they are.
pub(super) fn ldsm4_in<T: MmaInput>(
    b: &mut KernelBuilder,
    p: Reg<U32>,
    trans: bool,
    rounded: bool,
) -> [Reg<T>; 4] {
    if rounded && T::FORMAT == InputFormat::Tf32 {
        let raw = b.ldmatrix_x4::<B32, U32>(sptr(p), trans);
        raw.map(|r| {
            let u = b.b32_as_u32(r);
            b.u32_as_packed::<T>(u)
        })
    } else {
        ldsm4::<T>(b, p, trans)
    }
}

/// `ldmatrix.x4` (no `.trans` unless `trans`) into four operand registers
/// of `T` (tf32: raw bits converted with `cvt.rna.tf32.f32`).
pub(super) fn ldsm4<T: MmaInput>(b: &mut KernelBuilder, p: Reg<U32>, trans: bool) -> [Reg<T>; 4] {
    if T::FORMAT == InputFormat::Tf32 {
        let raw = b.ldmatrix_x4::<B32, U32>(sptr(p), trans);
        raw.map(|r| {
            let u = b.b32_as_u32(r);
            tf32_operand::<T>(b, u)
        })
    } else {
        b.ldmatrix_x4::<T, U32>(sptr(p), trans)
    }
}

/// After token tile `ti` of `ntiles` (`next` = `ti + 1`) of a grad-values
/// kernel, when it ends an N-chunk (`per_chunk` tiles) or the reduction:
/// `body(b, first, last)`, `first` when the tile is in the first
/// N-chunk, `last` at the reduction's end.
pub(super) fn at_chunk_end(
    b: &mut KernelBuilder,
    (ti, next, ntiles): (Reg<U32>, Reg<U32>, Reg<U32>),
    per_chunk: u32,
    body: impl FnOnce(&mut KernelBuilder, Reg<Pred>, Reg<Pred>),
) {
    let pos = b.rem(next, per_chunk);
    let end_chunk = b.setp(Cmp::Eq, pos, 0u32);
    let end_all = b.setp(Cmp::Eq, next, ntiles);
    let fold = b.por(end_chunk, end_all);
    b.if_(fold, |b| {
        let first = b.setp(Cmp::Lt, ti, per_chunk);
        body(b, first, end_all);
    });
}

/// The accumulators of a warp's slots (slot, `mi`, `ni`).
pub(super) type Accs = [Vec<Vec<FragC>>];

/// The double-buffered token loop of a grad-values kernel, once its
/// prologue has staged tile 0 into buffer 0 and committed the group: per
/// tile `ti` (buffer `cur`), `stage(b, more, next, nbuf)` queues tile
/// `next` = `ti + 1` (where `more`: `next < ntiles`) into buffer `nbuf`;
/// the group is committed and all but it waited for; `ready(b, cur)`
/// makes the tile visible to the CTA (its `bar.sync`); `compute(b, ti,
/// cur)` runs its MMAs into `part`; a `bar.sync` before the buffer is
/// staged again; at an N-chunk's end the partials fold into `sum`
/// ([`at_chunk_end`], [`fold_regs`]).
pub(super) fn token_loop(
    b: &mut KernelBuilder,
    (ntiles, per_chunk): (Reg<U32>, u32),
    (part, sum): (&Accs, &Accs),
    stage: impl FnOnce(&mut KernelBuilder, Reg<Pred>, Reg<U32>, Reg<U32>),
    ready: impl FnOnce(&mut KernelBuilder, Reg<U32>),
    compute: impl FnOnce(&mut KernelBuilder, Reg<U32>, Reg<U32>),
) {
    let buf = b.var::<U32>(0u32);
    b.for_range(0u32, ntiles, 1u32, |b, ti| {
        let cur = b.get(&buf);
        let nbuf = b.xor(cur, 1u32);
        let next = b.add(ti, 1u32);
        let more = b.setp(Cmp::Lt, next, ntiles);
        stage(b, more, next, nbuf);
        b.cp_async_commit_group();
        b.cp_async_wait_group(1);
        ready(b, cur);
        compute(b, ti, cur);
        b.bar_sync();
        b.set(&buf, nbuf);
        // the end of an N-chunk: fold the partial into the sum
        at_chunk_end(b, (ti, next, ntiles), per_chunk, |b, first, _| {
            fold_regs(b, part, sum, first)
        });
    });
}

/// The epilogue of one `B × B` block of `gv` (`bs` = `B`) at element
/// `sb·B`: lane `(g, t)` holds rows `i0 + 16·mi` and `+ 8` of each
/// 16-row fragment `mi` of `sum` (`i0` = `g`, plus the warp's first row),
/// columns `j0`, `j0 + 1` of each 8-column fragment (`j0` = `2t`, plus
/// the warp's first column): one `st.global.v2` a register pair.
pub(super) fn store_block(
    b: &mut KernelBuilder,
    (gv, bs): (GlobalPtr<F32>, u32),
    sum: &[Vec<FragC>],
    sb: Reg<U32>,
    (i0, j0): (Reg<U32>, Reg<U32>),
) {
    for (mi, frags) in sum.iter().enumerate() {
        for h in 0..2u32 {
            let i = b.add(i0, mi as u32 * 16 + 8 * h);
            let row = b.add(sb, i);
            let e = b.mad_lo(row, bs, j0);
            let gp = b.offset(gv, e);
            for (ni, fc) in frags.iter().enumerate() {
                let v = [fc.regs[2 * h as usize], fc.regs[2 * h as usize + 1]];
                b.st_global_v2(gp, (ni * 8) as i32, v);
            }
        }
    }
}

/// The N-chunk fold with the running sums in registers: each element of
/// `sum` becomes the partial (`first` N-chunk) or `add.rn(sum, partial)`,
/// and the partial restarts at `+0.0`.
pub(super) fn fold_regs(
    b: &mut KernelBuilder,
    part: &[Vec<Vec<FragC>>],
    sum: &[Vec<Vec<FragC>>],
    first: Reg<Pred>,
) {
    for (ps, ss) in part.iter().flatten().zip(sum.iter().flatten()) {
        for (pf, sf) in ps.iter().zip(ss) {
            for (&pr, &sr) in pf.regs.iter().zip(&sf.regs) {
                let added = b.fadd(Rounding::Rn, sr, pr);
                let v = b.selp(first, pr, added);
                b.assign(sr, v);
                b.assign(pr, 0.0f32);
            }
        }
    }
}
