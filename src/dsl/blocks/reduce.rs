//! Warp and block reductions with a fixed butterfly order.

use crate::dsl::types::{CmpType, Elem, F32, Pred, Reg, RegType, S32, Src, U32};
use crate::dsl::{Cmp, KernelBuilder, Rounding, SharedArray, ShflMode};

/// The full warp mask every block shuffles with.
pub const FULL_MASK: u32 = 0xffff_ffff;

/// The combining operation of a reduction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReduceOp {
    /// `add.rn.f32` for `F32` (canonical NaN `0x7FFFFFFF` on a NaN result);
    /// wrapping `add` for the integers.
    Sum,
    /// `max.f32` (a NaN operand gives the other one, two NaNs the
    /// canonical NaN; `−0 < +0`); `max.u32` / `max.s32`.
    Max,
    /// `min.f32` (NaN rule as [`ReduceOp::Max`]; `−0 < +0`); `min.u32` /
    /// `min.s32`.
    Min,
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::dsl::types::F32 {}
    impl Sealed for crate::dsl::types::U32 {}
    impl Sealed for crate::dsl::types::S32 {}
}

/// The element types the reductions take: `F32`, `U32`, `S32` (sealed).
pub trait ReduceElem: RegType + CmpType + Elem<Reg = Self> + sealed::Sealed {
    /// The host type of a value (`f32`, `u32`, `i32`).
    type Host: super::host::HostElem + Into<Src<Self>>;
    /// `op(a, b)` with `a` the lane's own value and `b` the shuffled one.
    fn combine(b: &mut KernelBuilder, op: ReduceOp, a: Reg<Self>, c: Reg<Self>) -> Reg<Self>;
}

impl ReduceElem for F32 {
    type Host = f32;
    #[track_caller]
    fn combine(b: &mut KernelBuilder, op: ReduceOp, a: Reg<F32>, c: Reg<F32>) -> Reg<F32> {
        match op {
            ReduceOp::Sum => b.fadd(Rounding::Rn, a, c),
            ReduceOp::Max => b.fmax(a, c),
            ReduceOp::Min => b.fmin(a, c),
        }
    }
}

macro_rules! int_elem {
    ($t:ident, $h:ty) => {
        impl ReduceElem for $t {
            type Host = $h;
            #[track_caller]
            fn combine(b: &mut KernelBuilder, op: ReduceOp, a: Reg<$t>, c: Reg<$t>) -> Reg<$t> {
                match op {
                    ReduceOp::Sum => b.add(a, c),
                    ReduceOp::Max => b.max(a, c),
                    ReduceOp::Min => b.min(a, c),
                }
            }
        }
    };
}
int_elem!(U32, u32);
int_elem!(S32, i32);

/// `op` across the 32 lanes of each warp.
///
/// Order (butterfly): for `off` in 16, 8, 4, 2, 1: `other =
/// shfl.sync.bfly(v, off)`, `v = op(v, other)` (the lane's own value
/// first). Every lane ends with the same value (each op is commutative bit
/// for bit, NaN results included). Host mirror:
/// [`host::warp_reduce`](super::host::warp_reduce). All 32 lanes must be
/// active.
#[track_caller]
pub fn warp_reduce<T: ReduceElem>(b: &mut KernelBuilder, op: ReduceOp, v: Reg<T>) -> Reg<T> {
    let mut v = v;
    for off in [16u32, 8, 4, 2, 1] {
        let other = b.shfl(ShflMode::Bfly, v, off, 0x1f, FULL_MASK);
        v = T::combine(b, op, v, other);
    }
    v
}

/// The (value, index) pair of the warp's largest value.
///
/// Order: the butterfly of [`warp_reduce`] (offsets 16, 8, 4, 2, 1) on
/// pairs; at each step the lane takes the other pair when its value is
/// larger, or when the values tie and its index is lower. Values compare as
/// IEEE numbers (`−0 == +0`, a tie) and NaN is smaller than every number
/// (two NaNs tie). So the result is the largest non-NaN value (all NaN:
/// a NaN) with the lowest index among the lanes holding it (`−0` and `+0`
/// counting as equal); the value's bits are moved, never recomputed, and
/// every lane ends with the same pair. Host mirror:
/// [`host::warp_argmax_f32`](super::host::warp_argmax_f32).
#[track_caller]
pub fn warp_argmax_f32(b: &mut KernelBuilder, v: Reg<F32>, i: Reg<U32>) -> (Reg<F32>, Reg<U32>) {
    let (mut v, mut i) = (v, i);
    for off in [16u32, 8, 4, 2, 1] {
        let w = b.shfl(ShflMode::Bfly, v, off, 0x1f, FULL_MASK);
        let j = b.shfl(ShflMode::Bfly, i, off, 0x1f, FULL_MASK);
        let take = argmax_takes(b, v, i, w, j);
        v = b.selp(take, w, v);
        i = b.selp(take, j, i);
    }
    (v, i)
}

/// Whether (w, j) beats (v, i): `w > v`, or `v` NaN and `w` not, or a tie
/// (equal, or both NaN) with `j < i`.
fn argmax_takes(
    b: &mut KernelBuilder,
    v: Reg<F32>,
    i: Reg<U32>,
    w: Reg<F32>,
    j: Reg<U32>,
) -> Reg<Pred> {
    let gt = b.setp(Cmp::Gt, w, v);
    let v_nan = b.setp(Cmp::Nan, v, v);
    let w_num = b.setp(Cmp::Num, w, w);
    let nan_loses = b.pand(v_nan, w_num);
    let eq = b.setp(Cmp::Eq, w, v);
    let w_nan = b.pnot(w_num);
    let both_nan = b.pand(v_nan, w_nan);
    let tie = b.por(eq, both_nan);
    let lower = b.setp(Cmp::Lt, j, i);
    let tie_lower = b.pand(tie, lower);
    let better = b.por(gt, nan_loses);
    b.por(better, tie_lower)
}

/// The value lanes of warp 0 past the last warp start from in
/// [`block_reduce`]: the identity of `op` (`Sum`: `−0.0` / `0`; `Max`,
/// `Min` on `F32`: the canonical NaN `0x7FFFFFFF`, which `max.f32` /
/// `min.f32` ignore; integers: their minimum / maximum).
pub fn identity<T: ReduceElem>(op: ReduceOp) -> T::Host {
    <T::Host as super::host::HostElem>::identity(op)
}

/// `op` across the block, the result valid in warp 0 (all its lanes),
/// with `op`'s [identity] as the fill: see [`block_reduce_with_fill`].
#[track_caller]
pub fn block_reduce<T: ReduceElem>(
    b: &mut KernelBuilder,
    op: ReduceOp,
    v: Reg<T>,
    scratch: &SharedArray<T>,
) -> Reg<T> {
    block_reduce_with_fill(b, op, v, scratch, identity::<T>(op))
}

/// `op` across the block; the result is valid in warp 0 (every lane of
/// it), not in the other warps (see [`block_reduce_all`]).
///
/// `scratch` holds one slot per warp: its length must be the number of
/// warps of the block (`%ntid.x / 32`, at most 32), and every thread of
/// the block must call this. Order (the fixed tree):
/// 1. each warp reduces its 32 values with [`warp_reduce`] (butterfly
///    16, 8, 4, 2, 1);
/// 2. lane 0 of warp `w` stores the warp's value in `scratch[w]`;
///    `bar.sync 0`;
/// 3. in every warp, lane `l < scratch.len()` loads `scratch[l]`, the
///    other lanes take `fill`; [`warp_reduce`] again (only warp 0's result
///    is meant to be used).
///
/// `scratch` is read after the barrier and not synchronised again: a
/// second use of the same array needs a [`KernelBuilder::bar_sync`] first.
/// Host mirror: [`host::block_reduce`](super::host::block_reduce).
#[track_caller]
pub fn block_reduce_with_fill<T: ReduceElem>(
    b: &mut KernelBuilder,
    op: ReduceOp,
    v: Reg<T>,
    scratch: &SharedArray<T>,
    fill: T::Host,
) -> Reg<T> {
    let w = warp_reduce(b, op, v);
    let tid = b.tid_x();
    let lane = b.and(tid, 31u32);
    let warp = b.shr(tid, 5u32);
    let lane0 = b.setp(Cmp::Eq, lane, 0u32);
    b.if_(lane0, |b| {
        let p = b.shared_elem(scratch, warp);
        b.st_shared(p, 0, w);
    });
    b.bar_sync();
    let r = b.mov(fill);
    let have = b.setp(Cmp::Lt, lane, scratch.len());
    b.if_(have, |b| {
        let p = b.shared_elem(scratch, lane);
        let x = b.ld_shared(p, 0);
        b.assign(r, x);
    });
    warp_reduce(b, op, r)
}

/// [`block_reduce`] broadcast to every thread of the block: after it,
/// `bar.sync 0`, thread 0 stores the result in `scratch[0]`, `bar.sync 0`,
/// every thread loads `scratch[0]`. Same order and host mirror as
/// [`block_reduce`]; a later use of `scratch` needs a
/// [`KernelBuilder::bar_sync`] first.
#[track_caller]
pub fn block_reduce_all<T: ReduceElem>(
    b: &mut KernelBuilder,
    op: ReduceOp,
    v: Reg<T>,
    scratch: &SharedArray<T>,
) -> Reg<T> {
    let r = block_reduce(b, op, v, scratch);
    b.bar_sync();
    super::if_thread0(b, |b| {
        let p = b.shared_elem(scratch, 0u32);
        b.st_shared(p, 0, r);
    });
    b.bar_sync();
    let p = b.shared_elem(scratch, 0u32);
    b.ld_shared(p, 0)
}
