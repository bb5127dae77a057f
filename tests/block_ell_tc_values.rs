//! Issue 31, grad-values with shared operand tiles: a CTA computes a group
//! of consecutive slots of one block row (`B` ≤ 32: 8 slots, two a warp,
//! or 4, one a warp, where the token tile would be too short; `B` = 64:
//! two slots, two warps each), staging the row's `gy` tile once per token
//! tile and one `x` tile per non-empty slot. The simulator equals the host
//! model bit for bit on sm_80, sm_89, sm_90 and sm_100 for groups of every
//! make-up: full, short (a row's last group when `K` is not a multiple of
//! the group), with empty slots (their `gv` is `+0.0`), with only their
//! last slot live, and wholly empty (a row with every slot `−1`); a column
//! block used by several rows and one by none; ragged `N` (below 16, and
//! past an N-chunk boundary); inputs with ±∞, NaN and values at the
//! format's limits. `gv` starts as a sentinel, so an unwritten element
//! fails.

mod common;
#[path = "common/block_ell_tc.rs"]
mod tc_common;

use common::Rng;
use ptxsmith::Sm;
use ptxsmith::kernels::block_ell_tc::{self as tc, DeviceTopology, Dims, TcPrecision, host};
use ptxsmith::runtime::Context;
use tc_common::Encode;

/// Random values with a wide exponent spread, and ±∞, NaN and the
/// format's largest and smallest values at fixed places.
fn values(rng: &mut Rng, len: usize, prec: TcPrecision) -> Vec<f32> {
    let span = if prec == TcPrecision::F16 { 6 } else { 18 };
    let mut v: Vec<f32> = (0..len)
        .map(|_| {
            let e = rng.below(2 * span + 1) as i32 - span as i32;
            let sign = if rng.chance(50) { -1.0 } else { 1.0 };
            sign * (1.0 + rng.below(1 << 20) as f32 / (1u32 << 20) as f32) * 2f32.powi(e)
        })
        .collect();
    let (max, tiny) = match prec {
        TcPrecision::F16 => (65504.0, 2f32.powi(-24)),
        _ => (f32::from_bits(0x7F7F_0000), f32::from_bits(0x0001_0000)),
    };
    for (at, x) in [
        (3, f32::INFINITY),
        (len / 2, f32::NEG_INFINITY),
        (len / 3, f32::NAN),
        (len / 5, max),
        (len / 7, -max),
        (len / 4, tiny),
        (len - 9, -tiny),
    ] {
        v[at] = x;
    }
    v
}

/// `R` = 4, `C` = 12, `K` = 10 (groups of 8 slots at `B` = 32: a full one
/// and a short one of 2 per row; of 4 at `B` = 16: two full and a short
/// one): row 0's groups have empty slots, its last one a live and an
/// empty slot; row 1 is empty; row 2's first groups have only their last
/// slot live; column blocks 0, 1 and 2 are used by three rows each,
/// column blocks 10 and 11 by none.
const COL: [i32; 40] = [
    0, 1, -1, 3, 2, -1, 5, 7, 9, -1, //
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, //
    -1, -1, -1, -1, -1, -1, -1, 1, 2, 0, //
    1, 0, 2, -1, 3, -1, 4, 6, -1, 8,
];

fn case<T: Encode>(sm: Sm, prec: TcPrecision, b: usize, n: usize, seed: u64) {
    let dims = Dims::new(4, 12, 10, b).unwrap();
    case_with::<T>(sm, prec, &dims, &COL, n, seed);
}

/// Grad-values of `col` at `dims` on the simulator of `sm` against the
/// host model, bit for bit; empty slots `+0.0`.
fn case_with<T: Encode>(sm: Sm, prec: TcPrecision, dims: &Dims, col: &[i32], n: usize, seed: u64) {
    let b = dims.b();
    let mut rng = Rng(seed);
    let x = T::encode(prec, &values(&mut rng, n * dims.in_features(), prec));
    let gy = T::encode(prec, &values(&mut rng, n * dims.out_features(), prec));
    let st = Context::sim(sm).default_stream();
    let topo = DeviceTopology::upload(&st, dims, col).unwrap();
    let (dx, dgy) = (st.upload(&x).unwrap(), st.upload(&gy).unwrap());
    let mut gv = st.upload(&vec![7.0f32; dims.values_len()]).unwrap();
    tc::grad_values_dev(&st, prec, &topo, n, &dx, &dgy, &mut gv).unwrap();
    let got = st.to_vec(&gv).unwrap();
    let want = host::grad_values(sm, prec, dims, n, &x, &gy, col).unwrap();
    let what = format!("grad_values {prec} B={b} N={n} on {sm}");
    let bb = b * b;
    for (s, &c) in col.iter().enumerate() {
        let (g, w) = (&got[s * bb..(s + 1) * bb], &want[s * bb..(s + 1) * bb]);
        if c < 0 {
            assert!(g.iter().all(|v| v.to_bits() == 0), "{what}: empty slot {s}");
            continue;
        }
        // a meaningful comparison: most of a live slot's results are finite
        let finite = w.iter().filter(|v| v.is_finite() && **v != 0.0).count();
        assert!(2 * finite >= bb, "{what}: slot {s}: {finite} finite");
        for (e, (g, w)) in g.iter().zip(w).enumerate() {
            assert_eq!(
                g.to_bits(),
                w.to_bits(),
                "{what}: slot {s} element {e}: {g:e} != {w:e}"
            );
        }
    }
}

/// `B` = 32 (groups of 8 slots, two a warp) per SM and precision; `N`
/// past the first N-chunk and not a multiple of the token tile, and `N`
/// below one MMA chunk.
#[test]
fn b32_groups_per_sm() {
    // the grouping these cases are made for
    let slots = |p, b| tc::ptx::values_tile(p, b).slots;
    assert_eq!(slots(TcPrecision::Bf16, 32), 8);
    assert_eq!(slots(TcPrecision::Tf32, 32), 8);
    assert_eq!(slots(TcPrecision::Bf16, 16), 4);
    assert_eq!(slots(TcPrecision::Tf32, 16), 4);
    assert_eq!(slots(TcPrecision::F16, 64), 2);
    case::<u16>(Sm::Sm80, TcPrecision::Bf16, 32, 300, 1);
    case::<u16>(Sm::Sm89, TcPrecision::F16, 32, 13, 2);
    case::<f32>(Sm::Sm90, TcPrecision::Tf32, 32, 45, 3);
    case::<u16>(Sm::Sm100, TcPrecision::Bf16, 32, 7, 4);
}

/// `B` = 16 (groups of 4 slots, one a warp) and `B` = 64 (groups of 2
/// slots, two warp tiles each).
#[test]
fn b16_and_b64_groups() {
    case::<u16>(Sm::Sm90, TcPrecision::Bf16, 16, 270, 5);
    case::<f32>(Sm::Sm80, TcPrecision::Tf32, 16, 9, 6);
    case::<u16>(Sm::Sm89, TcPrecision::F16, 64, 70, 7);
    case::<f32>(Sm::Sm100, TcPrecision::Tf32, 64, 20, 8);
}

/// More groups than the simulator's grid holds (4 SMs × 8 CTAs): a CTA
/// takes a second group after its first (grid-stride), its partials and
/// sums starting again from `+0.0`. `R` = 20, `K` = 12: 60 groups of 4 at
/// `B` = 16, 40 of 8 at `B` = 32; every fifth slot empty.
#[test]
fn grid_stride_over_groups() {
    let (r, k) = (20, 12);
    let col: Vec<i32> = (0..r * k)
        .map(|s| {
            let (row, slot) = (s / k, s % k);
            if (row + slot) % 5 == 0 {
                -1
            } else {
                ((row + slot) % k) as i32
            }
        })
        .collect();
    for (sm, prec, b, n) in [
        (Sm::Sm90, TcPrecision::Bf16, 16, 40),
        (Sm::Sm80, TcPrecision::F16, 32, 20),
    ] {
        let dims = Dims::new(r, k, k, b).unwrap();
        case_with::<u16>(sm, prec, &dims, &col, n, 9);
    }
}
