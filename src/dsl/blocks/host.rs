//! Host mirrors of the [building blocks](super): the same operations in
//! the same order, bit for bit (NaN results canonical, `0x7FFFFFFF`, as
//! the GPU and the simulator give them).
//!
//! ```
//! use ptxsmith::dsl::blocks::host;
//! let mut lanes = [0.0f32; 32];
//! lanes[0] = 1.0e8;
//! lanes[16] = -1.0e8;
//! lanes[1] = 1.0;
//! // the butterfly adds lane 0 to lane 16 first: 1e8 + (−1e8) + … + 1 = 1
//! assert_eq!(host::warp_sum_f32(&lanes), 1.0);
//! // a left-to-right sum loses the 1 in 1e8 + 1
//! assert_eq!(lanes.iter().fold(0.0f32, |s, x| s + x), 0.0);
//! ```

use super::ReduceOp;

/// The canonical NaN of f32 results on NVIDIA GPUs and the simulator.
pub const CANONICAL_NAN: f32 = f32::from_bits(0x7FFF_FFFF);

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for u32 {}
    impl Sealed for i32 {}
}

/// Host values the mirrors take: `f32`, `u32`, `i32` (sealed).
pub trait HostElem: Copy + std::fmt::Debug + sealed::Sealed {
    /// The device op: `op(a, b)`, `a` the lane's own value.
    fn combine(op: ReduceOp, a: Self, b: Self) -> Self;
    /// The fill of [`block_reduce`]'s lanes past the last warp (see
    /// [`super::identity`]).
    fn identity(op: ReduceOp) -> Self;
}

/// PTX `add.rn.f32`: IEEE addition, a NaN result canonical.
pub fn add_f32(a: f32, b: f32) -> f32 {
    canon(a + b)
}

fn canon(x: f32) -> f32 {
    if x.is_nan() { CANONICAL_NAN } else { x }
}

/// PTX `max.f32` / `min.f32`: one NaN operand gives the other one, two give
/// the canonical NaN; `−0 < +0`.
pub fn minmax_f32(is_max: bool, a: f32, b: f32) -> f32 {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => return CANONICAL_NAN,
        (true, false) => return b,
        (false, true) => return a,
        _ => {}
    }
    if a == 0.0 && b == 0.0 {
        let neg = if is_max {
            a.is_sign_negative() && b.is_sign_negative()
        } else {
            a.is_sign_negative() || b.is_sign_negative()
        };
        return if neg { -0.0 } else { 0.0 };
    }
    if (a > b) == is_max { a } else { b }
}

impl HostElem for f32 {
    fn combine(op: ReduceOp, a: f32, b: f32) -> f32 {
        match op {
            ReduceOp::Sum => add_f32(a, b),
            ReduceOp::Max => minmax_f32(true, a, b),
            ReduceOp::Min => minmax_f32(false, a, b),
        }
    }
    fn identity(op: ReduceOp) -> f32 {
        match op {
            ReduceOp::Sum => -0.0,
            ReduceOp::Max | ReduceOp::Min => CANONICAL_NAN,
        }
    }
}

macro_rules! int_host {
    ($t:ty) => {
        impl HostElem for $t {
            fn combine(op: ReduceOp, a: $t, b: $t) -> $t {
                match op {
                    ReduceOp::Sum => a.wrapping_add(b),
                    ReduceOp::Max => a.max(b),
                    ReduceOp::Min => a.min(b),
                }
            }
            fn identity(op: ReduceOp) -> $t {
                match op {
                    ReduceOp::Sum => 0,
                    ReduceOp::Max => <$t>::MIN,
                    ReduceOp::Min => <$t>::MAX,
                }
            }
        }
    };
}
int_host!(u32);
int_host!(i32);

/// Mirror of [`super::warp_reduce`]: the butterfly over the 32 lanes
/// (offsets 16, 8, 4, 2, 1; `lane[l] = op(lane[l], lane[l ^ off])`),
/// returning the value every lane ends with.
pub fn warp_reduce<H: HostElem>(op: ReduceOp, lanes: &[H; 32]) -> H {
    let mut v = *lanes;
    for off in [16usize, 8, 4, 2, 1] {
        let old = v;
        for (l, x) in v.iter_mut().enumerate() {
            *x = H::combine(op, old[l], old[l ^ off]);
        }
    }
    v[0]
}

/// [`warp_reduce`] with `Sum` on f32 (`add.rn`, butterfly order).
pub fn warp_sum_f32(lanes: &[f32; 32]) -> f32 {
    warp_reduce(ReduceOp::Sum, lanes)
}

/// [`warp_reduce`] with `Max` on f32 (`max.f32`, butterfly order).
pub fn warp_max_f32(lanes: &[f32; 32]) -> f32 {
    warp_reduce(ReduceOp::Max, lanes)
}

/// Mirror of [`super::warp_argmax_f32`]: the butterfly on (value, index)
/// pairs; a lane takes the other pair when its value is larger, or NaN
/// loses to a number, or on a tie (equal values, `−0 == +0`, or two NaNs)
/// the other index is lower.
pub fn warp_argmax_f32(lanes: &[(f32, u32); 32]) -> (f32, u32) {
    let mut v = *lanes;
    for off in [16usize, 8, 4, 2, 1] {
        let old = v;
        for (l, x) in v.iter_mut().enumerate() {
            let (a, i) = old[l];
            let (w, j) = old[l ^ off];
            let tie = a == w || (a.is_nan() && w.is_nan());
            if w > a || (a.is_nan() && !w.is_nan()) || (tie && j < i) {
                *x = (w, j);
            }
        }
    }
    v[0]
}

/// Mirror of [`super::block_reduce`] / [`super::block_reduce_with_fill`]
/// / [`super::block_reduce_all`] for a block of `values.len()` threads
/// (thread `t` holding `values[t]`; a multiple of 32, at most 1024): each
/// warp's butterfly, then warp 0's butterfly over the partials with `fill`
/// in the lanes past the last warp (`fill` is [`HostElem::identity`] for
/// `block_reduce` and `block_reduce_all`).
///
/// # Panics
/// If `values.len()` is not a multiple of 32 in `32..=1024`.
pub fn block_reduce<H: HostElem>(op: ReduceOp, values: &[H], fill: H) -> H {
    let n = values.len();
    assert!(
        n.is_multiple_of(32) && (32..=1024).contains(&n),
        "block of {n} threads: a multiple of 32 in 32..=1024"
    );
    let mut lanes = [fill; 32];
    for (w, chunk) in values.chunks_exact(32).enumerate() {
        let warp: &[H; 32] = chunk.try_into().expect("32 lanes");
        lanes[w] = warp_reduce(op, warp);
    }
    warp_reduce(op, &lanes)
}

/// [`block_reduce`] with `Sum` on f32 and its identity fill (`−0.0`).
pub fn block_sum_f32(values: &[f32]) -> f32 {
    block_reduce(ReduceOp::Sum, values, -0.0)
}

/// Mirror of [`super::warp_scan_inclusive_sum`] on f32: Hillis–Steele,
/// offsets 1, 2, 4, 8, 16, `lane[l] = lane[l − off] + lane[l]` for
/// `l ≥ off` (`add.rn`).
pub fn warp_scan_inclusive_sum_f32(lanes: &[f32; 32]) -> [f32; 32] {
    scan(lanes, add_f32)
}

/// Mirror of [`super::warp_scan_inclusive_sum`] on u32 (wrapping adds,
/// same order).
pub fn warp_scan_inclusive_sum_u32(lanes: &[u32; 32]) -> [u32; 32] {
    scan(lanes, u32::wrapping_add)
}

/// The generic mirror of [`super::warp_scan_inclusive_sum`]: f32 or u32.
pub fn warp_scan_inclusive_sum<H: HostElem>(lanes: &[H; 32]) -> [H; 32] {
    scan(lanes, |a, b| H::combine(ReduceOp::Sum, a, b))
}

fn scan<H: Copy>(lanes: &[H; 32], add: impl Fn(H, H) -> H) -> [H; 32] {
    let mut v = *lanes;
    for off in [1usize, 2, 4, 8, 16] {
        let old = v;
        for l in off..32 {
            v[l] = add(old[l - off], old[l]);
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minmax_rules() {
        assert_eq!(minmax_f32(true, -0.0, 0.0).to_bits(), 0);
        assert_eq!(minmax_f32(false, 0.0, -0.0).to_bits(), 0x8000_0000);
        assert_eq!(minmax_f32(true, f32::NAN, 1.0), 1.0);
        assert_eq!(minmax_f32(true, f32::NAN, -f32::NAN).to_bits(), 0x7FFF_FFFF);
        assert_eq!(
            add_f32(f32::INFINITY, f32::NEG_INFINITY).to_bits(),
            0x7FFF_FFFF
        );
    }

    #[test]
    fn argmax_ties_go_to_the_lowest_index() {
        let mut l = [(1.0f32, 0u32); 32];
        for (k, x) in l.iter_mut().enumerate() {
            *x = (if k % 3 == 0 { 5.0 } else { f32::NAN }, 31 - k as u32);
        }
        // value 5 at k = 0, 3, …, 30: indices 31, 28, …, 1; lowest is 1
        assert_eq!(warp_argmax_f32(&l), (5.0, 1));
        l[7] = (-0.0, 0);
        l[9] = (0.0, 3);
        for x in l.iter_mut().filter(|x| x.0 == 5.0) {
            *x = (f32::NAN, 9);
        }
        let (v, i) = warp_argmax_f32(&l);
        assert_eq!((v.to_bits(), i), (0x8000_0000, 0));
    }

    #[test]
    fn scan_is_the_tree() {
        let mut l = [0u32; 32];
        for (k, x) in l.iter_mut().enumerate() {
            *x = k as u32;
        }
        let s = warp_scan_inclusive_sum_u32(&l);
        for (k, x) in s.iter().enumerate() {
            assert_eq!(*x as usize, k * (k + 1) / 2);
        }
    }
}
