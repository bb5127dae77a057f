//! Issue 31, grad-values sharing both operands: at `B` ≤ 32 a CTA computes
//! the filled slots of a tile of 4 block rows × 8 column blocks (4 on
//! SMs whose blocks opt in to less shared memory: sm_89), staging each
//! row's `gy` tile and each column's `x` tile once; a crowded tile (more
//! hits than a CTA's 16 slots at `B` = 32) is split into parts. `B` = 64
//! keeps one CTA a group of a row's slots (but bf16/f16 on sm_90/sm_100,
//! which run in clusters: `block_ell_tc_values_cluster.rs`, as `B` = 32
//! there, tf32 too). The simulator equals the host
//! model bit for bit on sm_80, sm_89, sm_90 and sm_100 at `B` = 16, 32
//! and 64 with: a crowded tile (all 32 of its slots filled, blocks in any
//! slot order), edge tiles (`R`, `C` not multiples of the tile), empty
//! slots and an empty row (`+0.0`), a column block used by five rows and
//! one by none, ragged `N` (below one MMA chunk, past an N-chunk), ±∞,
//! NaN and the format's limits, and more work items than the grid
//! (grid-stride). `gv` starts as a sentinel, so an unwritten element
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

/// `R` = 6, `C` = 12, `K` = 10: rows 0–3 fill every slot of the tile of
/// column blocks 0–7 (32 hits, in four slot orders) and use blocks 8, 9,
/// 11 besides; row 4 has empty slots and blocks 0, 9, 11; row 5 is
/// empty. Column block 0 is used by five rows, block 10 by none. The
/// tiles at `B` = 32 on sm_90: rows 0–3 × columns 0–7 (two parts of 16
/// hits), rows 0–3 × columns 8–11 (an edge tile), and the edge row group
/// 4–5.
const COL: [i32; 60] = [
    0, 1, 2, 3, 4, 5, 6, 7, 8, 11, //
    7, 6, 5, 4, 3, 2, 1, 0, -1, 9, //
    1, 0, 3, 2, 5, 4, 7, 6, 11, -1, //
    4, 5, 6, 7, 0, 1, 2, 3, -1, -1, //
    -1, 0, -1, 9, -1, -1, -1, -1, -1, 11, //
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
];

fn case<T: Encode>(sm: Sm, prec: TcPrecision, b: usize, n: usize, seed: u64) {
    let dims = Dims::new(6, 12, 10, b).unwrap();
    case_with::<T>(sm, prec, &dims, &COL, n, seed);
}

/// Grad-values of `col` at `dims` on the simulator of `sm` against the
/// host model, bit for bit; empty slots `+0.0`.
fn case_with<T: Encode>(sm: Sm, prec: TcPrecision, dims: &Dims, col: &[i32], n: usize, seed: u64) {
    case_signs::<T>(sm, prec, dims, col, n, seed, false);
}

/// [`case_with`]; with `neg_zero` (bf16, tf32; `N − 1` a multiple of 16
/// less one), feature 0 of every block of `x` is `2⁻⁷⁵` and of `gy`
/// `−2⁻⁷⁵` at the last token of each N-chunk, `+0` at every other token,
/// so element (0, 0) of every live slot is, per N-chunk, a product too
/// small for f32 with a negative sign in the chunk's last block (`−0.0`,
/// rounded toward zero, after blocks of zero products that keep `+0`):
/// the N-chunk partials are `−0.0` and so is their `add.rn` sum (asserted
/// to occur in the model).
fn case_signs<T: Encode>(
    sm: Sm,
    prec: TcPrecision,
    dims: &Dims,
    col: &[i32],
    n: usize,
    seed: u64,
    neg_zero: bool,
) {
    let b = dims.b();
    let mut rng = Rng(seed);
    let mut xf = values(&mut rng, n * dims.in_features(), prec);
    let mut gyf = values(&mut rng, n * dims.out_features(), prec);
    if neg_zero {
        let tiny = 2f32.powi(-75);
        for (v, sign) in [(&mut xf, 1.0), (&mut gyf, -1.0)] {
            let width = v.len() / n;
            for e in (0..v.len()).step_by(b) {
                let t = e / width;
                let last = t % 256 == 255 || t == n - 1;
                v[e] = if last { sign * tiny } else { 0.0 };
            }
        }
    }
    let x = T::encode(prec, &xf);
    let gy = T::encode(prec, &gyf);
    let st = Context::sim(sm).default_stream();
    let topo = DeviceTopology::upload(&st, dims, col).unwrap();
    let (dx, dgy) = (st.upload(&x).unwrap(), st.upload(&gy).unwrap());
    let mut gv = st.upload(&vec![7.0f32; dims.values_len()]).unwrap();
    tc::grad_values_dev(&st, prec, &topo, n, &dx, &dgy, &mut gv).unwrap();
    let got = st.to_vec(&gv).unwrap();
    let want = host::grad_values(sm, prec, dims, n, &x, &gy, col).unwrap();
    let what = format!("grad_values {prec} B={b} N={n} on {sm}");
    let bb = b * b;
    if neg_zero {
        let nz = want.iter().filter(|v| v.to_bits() == 0x8000_0000).count();
        assert!(nz > 0, "{what}: no -0.0 result");
    }
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

/// The schedule these cases are made for: at `B` = 32, 4 × 8 tiles
/// (4 × 4 on sm_89) of 16 slots a CTA on sm_80, so the crowded tile is
/// two parts and the parts and staged tiles are as counted (the same on
/// sm_90); at `B` = 16, 32 slots a CTA (one part of a 4 × 8 tile, two of
/// an 8 × 8 tile on sm_90 and sm_100, the sums in registers); `B` = 64 has
/// no tiles.
#[test]
fn schedule_on_the_topology() {
    let t = tc::ptx::values_tiles(TcPrecision::Bf16, 32, Sm::Sm80).unwrap();
    assert_eq!((t.rows, t.cols, t.slots(), t.parts()), (4, 8, 16, 2));
    let w = t.work(6, 12, 10, &COL);
    // tiles: (rows 0-3, cols 0-7): 2 parts of 16 (rows 0-1 and 2-3, all
    // 8 columns each); (rows 0-3, cols 8-11): hits 8, 11 / 9 / 11 → rows
    // 0, 1, 2 and columns 8, 9, 11; (rows 4-5, cols 0-7): 0; (rows 4-5,
    // cols 8-11): 9, 11
    assert_eq!(w.items, 2 * 2 * 2);
    assert_eq!(w.busy, 2 + 1 + 1 + 1);
    assert_eq!(w.hits, 32 + 4 + 1 + 2);
    assert_eq!(w.staged, (2 + 8) * 2 + (3 + 3) + (1 + 1) + (1 + 2));
    let t89 = tc::ptx::values_tiles(TcPrecision::F16, 32, Sm::Sm89).unwrap();
    assert_eq!((t89.rows, t89.cols, t89.parts()), (4, 4, 1));
    for prec in TcPrecision::ALL {
        let t90 = tc::ptx::values_tiles(prec, 32, Sm::Sm90).unwrap();
        assert_eq!((t90.rows, t90.cols, t90.parts()), (4, 8, 2));
    }
    // B 16 on sm_90: one row group × two column groups; (rows 0-5, cols
    // 0-7): part 0 the 32 hits of rows 0-3, part 1 row 4's block 0; (rows
    // 0-5, cols 8-11): 8, 11 / 9 / 11 / 9, 11 → rows 0, 1, 2, 4, columns
    // 8, 9, 11
    let t = tc::ptx::values_tiles(TcPrecision::Bf16, 16, Sm::Sm90).unwrap();
    let w = t.work(6, 12, 10, &COL);
    assert_eq!((w.items, w.busy, w.hits), (4, 3, 39));
    assert_eq!(w.staged, (4 + 8) + (1 + 1) + (4 + 3));
    let t16 = tc::ptx::values_tiles(TcPrecision::Tf32, 16, Sm::Sm80).unwrap();
    assert_eq!((t16.slots(), t16.parts()), (32, 1));
    let t16 = tc::ptx::values_tiles(TcPrecision::Tf32, 16, Sm::Sm100).unwrap();
    assert_eq!(
        (t16.rows, t16.cols, t16.slots(), t16.parts()),
        (8, 8, 32, 2)
    );
    assert!(tc::ptx::values_tiles(TcPrecision::Bf16, 64, Sm::Sm90).is_none());
}

/// `B` = 32 per SM and precision: the crowded tile in two parts (one
/// part of a 4 × 4 tile on sm_89); `N` past the first N-chunk and not a
/// multiple of the token tile, and `N` below one MMA chunk. (tf32 on
/// sm_80: on sm_90 and sm_100 it runs in clusters, as bf16/f16 do.)
#[test]
fn b32_tiles_per_sm() {
    case::<u16>(Sm::Sm80, TcPrecision::Bf16, 32, 300, 1);
    case::<u16>(Sm::Sm89, TcPrecision::F16, 32, 13, 2);
    case::<f32>(Sm::Sm80, TcPrecision::Tf32, 32, 45, 3);
    case::<u16>(Sm::Sm100, TcPrecision::Bf16, 32, 7, 4);
}

/// `B` = 16 (the crowded tile in one part of 32 slots) and `B` = 64 (one
/// row's slots a CTA).
#[test]
fn b16_and_b64() {
    case::<u16>(Sm::Sm90, TcPrecision::F16, 16, 270, 5);
    case::<f32>(Sm::Sm80, TcPrecision::Tf32, 16, 9, 6);
    case::<u16>(Sm::Sm89, TcPrecision::Bf16, 16, 70, 7);
    case::<u16>(Sm::Sm100, TcPrecision::Bf16, 64, 20, 8);
}

/// More work items than the simulator's grid holds (4 SMs × 8 CTAs): a
/// CTA takes a second item after its first, its table, partials and
/// sums starting again. `R` = 20, `C` = 40, `K` = 8: 50 items at `B` =
/// 32 (5 × 5 tiles × 2 parts); every fifth slot empty.
#[test]
fn grid_stride_over_items() {
    let (r, c, k) = (20, 40, 8);
    let col: Vec<i32> = (0..r * k)
        .map(|s| {
            let (row, slot) = (s / k, s % k);
            if (row + slot) % 5 == 0 {
                -1
            } else {
                ((row * 3 + slot * 5) % c) as i32
            }
        })
        .collect();
    for (sm, prec, b, n) in [
        (Sm::Sm90, TcPrecision::Bf16, 32, 20),
        (Sm::Sm80, TcPrecision::F16, 16, 40),
    ] {
        let dims = Dims::new(r, c, k, b).unwrap();
        case_with::<u16>(sm, prec, &dims, &col, n, 9);
    }
}

/// `R` = 9, `C` = 10, `K` = 9: rows 0–7 fill every slot of the 8 × 8
/// tile of column blocks 0–7 (64 hits: two full parts of 32 slots on
/// sm_90 and sm_100, four of 16 on sm_80; each row in its own slot
/// order), rows 0 and 5 use block 8 besides; row 8 has empty slots and
/// blocks 0 and 8. Column block 0 is used by all nine rows, block 9 by
/// none.
fn crowded_col() -> Vec<i32> {
    let k = 9;
    (0..9 * k)
        .map(|s| {
            let (row, slot) = (s / k, s % k);
            match (row, slot) {
                (0..8, 0..8) => (slot * 3 + row * 5) % 8,
                (0 | 5, 8) => 8,
                (8, 1) => 0,
                (8, 4) => 8,
                _ => -1,
            }
        })
        .collect()
}

/// A crowded tile (every slot of 8 rows × 8 column blocks filled: two
/// parts of the 8 × 8 tiles at `B` = 16 on sm_90 and sm_100, four of the
/// 4 × 8 tiles at `B` = 32), `N` over three N-chunks with a ragged last
/// token tile and over two, `N` below one MMA chunk, `−0.0` sums (the
/// N-chunk partials' `add.rn`), ±∞, NaN and the format's limits, on
/// sm_80, sm_89, sm_90 and sm_100 at `B` = 16, 32 and 64.
#[test]
fn crowded_tiles_and_signed_zeros() {
    let col = crowded_col();
    let dims = |b| Dims::new(9, 10, 9, b).unwrap();
    case_signs::<u16>(Sm::Sm90, TcPrecision::Bf16, &dims(32), &col, 528, 11, true);
    case_signs::<f32>(Sm::Sm100, TcPrecision::Tf32, &dims(32), &col, 272, 12, true);
    case_with::<u16>(Sm::Sm100, TcPrecision::F16, &dims(32), &col, 40, 13);
    case_with::<u16>(Sm::Sm90, TcPrecision::F16, &dims(32), &col, 5, 14);
    case_signs::<u16>(Sm::Sm80, TcPrecision::Bf16, &dims(32), &col, 32, 15, true);
    case_with::<u16>(Sm::Sm89, TcPrecision::F16, &dims(32), &col, 20, 16);
    case_signs::<u16>(Sm::Sm90, TcPrecision::Bf16, &dims(16), &col, 272, 17, true);
    case_with::<f32>(Sm::Sm100, TcPrecision::Tf32, &dims(16), &col, 33, 18);
    case_signs::<u16>(Sm::Sm90, TcPrecision::Bf16, &dims(64), &col, 16, 19, true);
}
