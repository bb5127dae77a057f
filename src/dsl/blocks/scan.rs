//! A warp inclusive scan with a fixed order.

use super::reduce::FULL_MASK;
use crate::dsl::types::{F32, Reg, RegType, U32};
use crate::dsl::{Cmp, KernelBuilder, Rounding, ShflMode, Special};

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::dsl::types::F32 {}
    impl Sealed for crate::dsl::types::U32 {}
}

/// The element types of [`warp_scan_inclusive_sum`]: `F32` (`add.rn`) and
/// `U32` (wrapping `add`) (sealed).
pub trait ScanElem: RegType + sealed::Sealed {
    /// `a + c` (`add.rn.f32` or `add.u32`).
    fn add(b: &mut KernelBuilder, a: Reg<Self>, c: Reg<Self>) -> Reg<Self>;
}

impl ScanElem for F32 {
    #[track_caller]
    fn add(b: &mut KernelBuilder, a: Reg<F32>, c: Reg<F32>) -> Reg<F32> {
        b.fadd(Rounding::Rn, a, c)
    }
}

impl ScanElem for U32 {
    #[track_caller]
    fn add(b: &mut KernelBuilder, a: Reg<U32>, c: Reg<U32>) -> Reg<U32> {
        b.add(a, c)
    }
}

/// Inclusive prefix sum across the 32 lanes of a warp: lane `l` ends with
/// `v[0] + … + v[l]` in this order (Hillis–Steele):
///
/// for `off` in 1, 2, 4, 8, 16: `up = shfl.sync.up(v, off)`; lanes
/// `l ≥ off` (`%laneid`) set `v = up + v` (the lower lanes' partial
/// first), the others keep `v`.
///
/// So lane 3's f32 result is `(v0 + v1) + (v2 + v3)`, not a left-to-right
/// sum. Host mirror:
/// [`host::warp_scan_inclusive_sum`](super::host::warp_scan_inclusive_sum).
/// All 32 lanes must be active.
#[track_caller]
pub fn warp_scan_inclusive_sum<T: ScanElem>(b: &mut KernelBuilder, v: Reg<T>) -> Reg<T> {
    let lane = b.special(Special::LaneId);
    let mut v = v;
    for off in [1u32, 2, 4, 8, 16] {
        let up = b.shfl(ShflMode::Up, v, off, 0, FULL_MASK);
        let s = T::add(b, up, v);
        let take = b.setp(Cmp::Ge, lane, off);
        v = b.selp(take, s, v);
    }
    v
}
