//! Grid-stride loops and "thread 0 of the block".

use crate::dsl::Cmp;
use crate::dsl::KernelBuilder;
use crate::dsl::types::{Pred, Reg, U64};

/// A grid-stride loop over the `n / 4` groups of four elements, then the
/// `n mod 4` tail elements.
///
/// Order: global thread `t` (64-bit `%ctaid.x · %ntid.x + %tid.x`) runs
/// `body_vec(b, g)` for the group indices `g = t, t + S, t + 2S, …` below
/// `n / 4` (`S = %ntid.x · %nctaid.x`, the threads of the grid; a group is
/// elements `4g .. 4g + 4`, e.g. one 16-byte `ld.global.v4`); after its
/// loop, global threads `0 .. n mod 4` run `body_scalar(b, e)` for the
/// element `e = 4·(n / 4) + t`, one each. Indices are 64-bit (`n` is a
/// `u64`). Loop-carried values of the bodies go through a
/// [`Var`](crate::dsl::Var) (or [`KernelBuilder::assign`]) declared before
/// the call; see the [register model](crate::dsl#the-register-model).
///
/// ```
/// use ptxsmith::dsl::{KernelBuilder, blocks};
/// use ptxsmith::dsl::types::U64;
/// let mut b = KernelBuilder::new("k", ptxsmith::Sm::Sm80);
/// let n = b.mov(1000u64);
/// blocks::grid_stride_vec4(&mut b, n, |_b, _g| { /* 4·g .. 4·g+4 */ }, |_b, _e| { /* e */ });
/// # b.finish().unwrap();
/// ```
#[track_caller]
pub fn grid_stride_vec4(
    b: &mut KernelBuilder,
    n: Reg<U64>,
    body_vec: impl FnOnce(&mut KernelBuilder, Reg<U64>),
    body_scalar: impl FnOnce(&mut KernelBuilder, Reg<U64>),
) {
    let groups = b.shr(n, 2u32);
    let gid = b.global_id_x_u64();
    b.grid_stride_u64_from(gid, groups, body_vec);
    let first = b.shl(groups, 2u32);
    let left = b.sub(n, first);
    let mine = b.setp(Cmp::Lt, gid, left);
    b.if_(mine, |b| {
        let e = b.add(first, gid);
        body_scalar(b, e);
    });
}

/// `%tid.x == 0`: the predicate of thread 0 of the block (one-dimensional
/// blocks; the other dimensions are not looked at).
#[track_caller]
pub fn is_thread0(b: &mut KernelBuilder) -> Reg<Pred> {
    let tid = b.tid_x();
    b.setp(Cmp::Eq, tid, 0u32)
}

/// Run `body` in thread 0 of the block only ([`is_thread0`], then
/// [`KernelBuilder::if_`]): e.g. storing a block's result.
#[track_caller]
pub fn if_thread0(b: &mut KernelBuilder, body: impl FnOnce(&mut KernelBuilder)) {
    let t0 = is_thread0(b);
    b.if_(t0, body);
}
