//! Issue 31, grad-values in clusters of four CTAs sharing the `x` tiles
//! by tensor-map multicast (bf16/f16 `B` 32 and 64, tf32 `B` 32 on sm_90,
//! sm_100, sm_100a): rank `k` of a cluster computes rows `4k .. 4k + 4` of a 16 ×
//! 8 cluster tile as the kernel without a cluster computes a 4 × 8 tile
//! (at `B` 64 two warps a slot, 4 slots a part), its `gy` tiles by
//! `cp.async`, and the `x` tiles of the union of the four ranks' hits
//! land in all four CTAs by one multicast each (tf32: f32 tiles landed
//! unrounded and rounded in shared memory; inputs with 20 fraction bits,
//! so the low 13 bits `cvt.rna` rounds away matter, and values at its tie
//! and just below it). The simulator, with
//! its checks on (races, barriers, initialisation, bulk and tensor-copy
//! findings), equals the host model bit for bit on the problem's parity
//! topology and on irregular ones: a crowded rank needing two parts (its
//! peers idle in the second), a rank without hits in an item, a cluster
//! tile past `R`, `C` not a multiple of 8, `−1` slots, empty rows; ragged
//! `N` (below one MMA chunk, below one token tile, over two and three
//! N-chunks), ±∞, NaN and the format's limits, `−0.0` sums, and more
//! cluster items than the simulator's grid holds. An `x` the tensor map
//! cannot describe is a typed error before anything is queued. `gv`
//! starts as a sentinel, so an unwritten element fails.

mod common;
#[path = "common/block_ell_tc.rs"]
mod tc_common;

use common::Rng;
use ptxsmith::kernels::block_ell_tc::ptx::values_cluster::{self as vc, CLUSTER};
use ptxsmith::kernels::block_ell_tc::{self as tc, DeviceTopology, Dims, TcPrecision, host, ptx};
use ptxsmith::runtime::Context;
use ptxsmith::tensor_map::TensorMapError;
use ptxsmith::{Error, Sm};
use tc_common::Encode;

/// Random values with a wide exponent spread (20 fraction bits), and ±∞,
/// NaN and the format's largest and smallest values at fixed places
/// (tf32: also values whose low 13 bits are the `cvt.rna` tie `0x1000`
/// and `0x0fff` just below it).
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
        TcPrecision::Tf32 => (f32::from_bits(0x7F7F_E000), f32::from_bits(0x0000_2000)),
        TcPrecision::Bf16 => (f32::from_bits(0x7F7F_0000), f32::from_bits(0x0001_0000)),
    };
    if prec == TcPrecision::Tf32 {
        for (i, x) in v.iter_mut().enumerate().skip(11).step_by(37) {
            let low = if i % 2 == 0 { 0x1000 } else { 0x0fff };
            *x = f32::from_bits(x.to_bits() & !0x1fff | low);
        }
    }
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

/// Grad-values of `col` at `dims` on the simulator of `sm` (which must
/// run the cluster kernel) against the host model, bit for bit; empty
/// slots `+0.0`. With `neg_zero` (bf16), feature 0 of every block of `x`
/// is `2⁻⁷⁵` and of `gy` `−2⁻⁷⁵` at the last token of each N-chunk, `+0`
/// at every other token: element (0, 0) of every live slot is `−0.0` per
/// N-chunk, and so is the `add.rn` of the partials (asserted to occur).
fn case(sm: Sm, prec: TcPrecision, dims: &Dims, col: &[i32], n: usize, seed: u64, neg_zero: bool) {
    if prec == TcPrecision::Tf32 {
        case_of::<f32>(sm, prec, dims, col, (n, seed), neg_zero);
    } else {
        case_of::<u16>(sm, prec, dims, col, (n, seed), neg_zero);
    }
}

/// [`case`] with the inputs stored as `T` (tf32: f32).
fn case_of<T: Encode>(
    sm: Sm,
    prec: TcPrecision,
    dims: &Dims,
    col: &[i32],
    (n, seed): (usize, u64),
    neg_zero: bool,
) {
    assert!(vc::enabled(sm, prec, dims.b() as u32), "{sm} {prec:?}");
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
    let what = format!("grad_values {prec} B={b} R={} N={n} on {sm}", dims.r());
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

/// The roofline problems' topology: row `r`'s `filled` slots use the
/// column blocks `r + slot · C / filled` (mod `C`): at `C / filled` = 2
/// the column blocks of `r`'s parity.
fn parity(r: usize, c: usize, k: usize, filled: usize) -> Vec<i32> {
    (0..r * k)
        .map(|s| {
            let (row, slot) = (s / k, s % k);
            if slot < filled {
                ((row + slot * (c / filled)) % c) as i32
            } else {
                -1
            }
        })
        .collect()
}

/// `R` = 22, `C` = 13, `K` = 10. Cluster tile 0 (rows 0–15): rank 0
/// (rows 0–3) fills every slot of column blocks 0–7 (32 hits, four slot
/// orders: two parts, so its peers run part 1 without hits of their own
/// but take part in the multicast), and uses blocks 8, 9, 12 besides;
/// rank 1 (rows 4–7) has `−1` slots, an empty row (5) and blocks 0, 3,
/// 5, 7, 10; rank 2 (rows 8–11) no block below 8; rank 3 (rows 12–15)
/// blocks 0, 2, 6, 12. Cluster tile 1 (rows 16–21) is past `R` for ranks
/// 2 and 3 and holds an empty row (19). Column group 1 is blocks 8–12
/// (`C` not a multiple of 8).
fn irregular(b: usize) -> (Dims, Vec<i32>) {
    let k = 10;
    let rows: [&[i32]; 22] = [
        &[0, 1, 2, 3, 4, 5, 6, 7, 12],
        &[7, 6, 5, 4, 3, 2, 1, 0, 9],
        &[1, 0, 3, 2, 5, 4, 7, 6, -1, 8],
        &[4, 5, 6, 7, 0, 1, 2, 3, 8],
        &[0, -1, 3],
        &[],
        &[10, 5, -1, 7],
        &[7],
        &[8, 12],
        &[],
        &[-1, 11],
        &[],
        &[2],
        &[2, 6],
        &[-1, -1],
        &[0, 12],
        &[1, 9],
        &[-1],
        &[3, 4, 5],
        &[],
        &[12, 0],
        &[6],
    ];
    let mut col = vec![-1; rows.len() * k];
    for (r, s) in rows.iter().enumerate() {
        col[r * k..r * k + s.len()].copy_from_slice(s);
    }
    (Dims::new(rows.len(), 13, k, b).unwrap(), col)
}

/// The tiling and the work the roofline model counts: per rank 4 × 8 of
/// 16 slots (a crowded rank is two parts); on the parity topology of 32
/// rows × 16 column blocks, 8 slots a row, every cluster tile's part 0
/// holds 16 hits a rank and stages 4 `gy` tiles a rank and all 8 `x`
/// tiles once for the cluster: half the tiles the kernel without a
/// cluster stages (4 + 8 a CTA).
#[test]
fn tiling_and_work() {
    for prec in TcPrecision::ALL {
        let t = vc::cluster_tiles(prec, 32);
        assert_eq!((t.rows, t.cols, t.slots(), t.parts()), (4, 8, 16, 2));
        // one 16-byte gy copy a thread a row (tf32: two)
        let want = 64;
        assert_eq!(t.tokens, want);
    }
    let col = parity(32, 16, 8, 8);
    let t = vc::cluster_tiles(TcPrecision::Bf16, 32);
    let w = vc::cluster_work(&t, 32, 16, 8, &col);
    // 2 × 2 cluster tiles × 2 parts, 4 CTAs each; part 1 idle
    assert_eq!(w.items, 4 * 2 * 2 * 2);
    assert_eq!(w.row_groups, 4 * 2);
    assert_eq!(w.busy, 4 * 4);
    assert_eq!(w.hits, 32 * 8);
    assert_eq!(w.gy, 4 * 4 * 4);
    assert_eq!(w.x, 4 * 8);
    let plain = ptx::values_tiles(TcPrecision::Bf16, 32, Sm::Sm90).unwrap();
    let p = plain.work(32, 16, 8, &col);
    assert_eq!((p.busy, p.hits, p.staged), (16, 256, 16 * (4 + 8)));
    assert_eq!(2 * (w.gy + w.x), p.staged);
    // irregular: cluster tile 0 part 0: rank 0's first 16 hits (rows 0–1,
    // all 8 columns), rank 1 rows 4, 6, 7 (blocks 0, 3, 5, 7), rank 3 rows
    // 12, 13, 15; part 1: rank 0's rows 2–3 (8 columns); cluster tile 0,
    // columns 8–12: rank 0 rows 0, 1, 2, 3 (8, 9, 12), rank 1 row 6 (10),
    // rank 2 rows 8, 10 (8, 12, 11), rank 3 row 15 (12); cluster tile 1:
    // rows 16, 18, 20, 21 (blocks 0, 1, 3, 4, 5, 6) and rows 16, 20 (9, 12)
    let (d, col) = irregular(32);
    let w = vc::cluster_work(&t, d.r(), d.c(), d.k(), &col);
    assert_eq!(w.items, 4 * 2 * 2 * 2);
    assert_eq!(w.busy, 4 * 5);
    assert_eq!(w.hits, col.iter().filter(|&&c| c >= 0).count());
    assert_eq!(w.gy, (2 + 3 + 3) + 2 + (4 + 1 + 2 + 1) + 4 + 2);
    assert_eq!(w.x, 8 + 8 + 5 + 6 + 2);
    // B 64: two warps a slot, 4 slots a CTA, so a rank's 4 × 8 entries
    // are 8 parts; on the problem's parity topology (32 rows × 32 column
    // blocks, 16 slots a row) part q of every rank is its row q's 4 hits
    // (one gy tile) of the 4 column blocks of q's parity (one x tile a
    // CTA): 2 tiles a 4 slots, against 3 a 2-slot group of the kernel
    // without a cluster (a third of its tiles)
    for prec in [TcPrecision::Bf16, TcPrecision::F16] {
        let t = vc::cluster_tiles(prec, 64);
        assert_eq!((t.rows, t.cols, t.slots(), t.parts()), (4, 8, 4, 8));
        assert_eq!((t.spw, t.wps, t.tokens), (1, 2, 32));
    }
    let t = vc::cluster_tiles(TcPrecision::Bf16, 64);
    let col = parity(32, 32, 16, 16);
    let w = vc::cluster_work(&t, 32, 32, 16, &col);
    // 2 × 4 cluster tiles × 8 parts, 4 CTAs each; parts 4–7 idle
    assert_eq!(w.items, 4 * 2 * 4 * 8);
    assert_eq!(w.row_groups, 4 * 2);
    assert_eq!(w.busy, 4 * 2 * 4 * 4);
    assert_eq!(w.hits, 32 * 16);
    assert_eq!((w.gy, w.x), (w.busy, w.busy));
    let g = ptx::values_tile(TcPrecision::Bf16, 64).slots as usize;
    assert_eq!(3 * 32 * 16 / g, 3 * (w.gy + w.x));
    // the cluster kernel exactly where it is enabled: bf16/f16 B 32 and
    // 64, tf32 B 32 on sm_90, sm_100, sm_100a
    for sm in Sm::ALL {
        for prec in TcPrecision::ALL {
            for b in [16, 32, 64] {
                let on = vc::enabled(sm, prec, b);
                let want = matches!(sm, Sm::Sm90 | Sm::Sm100 | Sm::Sm100a)
                    && (b == 32 || (b == 64 && prec != TcPrecision::Tf32));
                assert_eq!(on, want, "{sm} {prec:?} B {b}");
                let Ok(m) = ptx::generate_grad_values(sm, prec, b) else {
                    assert!(!on);
                    continue;
                };
                let t = &m.ptx;
                let cl = format!(".reqnctapercluster {CLUSTER}, 1, 1");
                assert_eq!(t.contains(&cl), on, "{sm} {prec:?} B {b}");
                assert_eq!(t.contains(".multicast::cluster"), on, "{sm} {prec:?} B {b}");
                assert_eq!(t.contains("cp.async.bulk.tensor.2d"), on, "{sm} {prec:?}");
            }
        }
    }
}

/// The problem's parity topology (every rank's part 0 holds 16 hits of
/// 4 columns; the cluster stages all 8 `x` tiles), `N` over two N-chunks
/// with a ragged last token tile, bf16 and tf32.
#[test]
fn parity_topology() {
    let dims = Dims::new(32, 16, 8, 32).unwrap();
    let col = parity(32, 16, 8, 8);
    case(Sm::Sm90, TcPrecision::Bf16, &dims, &col, 300, 1, false);
    case(Sm::Sm100, TcPrecision::Tf32, &dims, &col, 300, 2, false);
}

/// The irregular topology ([`irregular`]) on sm_90, sm_100 and sm_100a,
/// bf16, f16 and tf32: `N` over three N-chunks with `−0.0` sums, `N`
/// below one MMA chunk, tf32 over three token tiles ragged, `N` over two
/// N-chunks ragged. At `B` 64 (a rank's 32
/// entries are 8 parts, so rank 0's full rows are 8 items, and the 2 × 2
/// cluster tiles' 32 items outnumber the simulator's 8 clusters: grid
/// stride) `N` over one N-chunk with `−0.0` sums and a ragged last token
/// tile, and below one MMA chunk.
#[test]
fn irregular_topology() {
    let (dims, col) = irregular(32);
    case(Sm::Sm90, TcPrecision::Bf16, &dims, &col, 528, 3, true);
    case(Sm::Sm100, TcPrecision::F16, &dims, &col, 5, 4, false);
    case(Sm::Sm100a, TcPrecision::Tf32, &dims, &col, 70, 5, false);
    case(Sm::Sm90, TcPrecision::F16, &dims, &col, 270, 6, false);
    let (dims, col) = irregular(64);
    case(Sm::Sm90, TcPrecision::Bf16, &dims, &col, 270, 13, true);
    case(Sm::Sm100, TcPrecision::F16, &dims, &col, 5, 14, false);
    case(Sm::Sm100a, TcPrecision::Bf16, &dims, &col, 5, 15, false);
}

/// More cluster items than the simulator's grid holds (4 SMs: 8
/// clusters): `R` = 40, `C` = 24, `K` = 8: 3 × 3 cluster tiles × 2
/// parts; every fifth slot empty; tf32, `N` below one token tile and the
/// last MMA chunk ragged.
#[test]
fn grid_stride_over_cluster_items() {
    let (r, c, k) = (40, 24, 8);
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
    let dims = Dims::new(r, c, k, 32).unwrap();
    case(Sm::Sm90, TcPrecision::Tf32, &dims, &col, 20, 9, false);
}

/// `x`'s tensor map needs a 16-byte aligned array: a view of `x` that
/// starts one element in (bf16 `B` 32 and 64, tf32 `B` 32: one f32) is
/// refused as the map's error ([`TensorMapError::Address`]) before
/// anything is queued (`gv` keeps its 7.0s); the aligned array runs.
#[test]
fn misaligned_x_is_a_typed_error() {
    for b in [32, 64] {
        misaligned_x::<u16>(TcPrecision::Bf16, b);
    }
    misaligned_x::<f32>(TcPrecision::Tf32, 32);
}

fn misaligned_x<T: Encode>(prec: TcPrecision, b: usize) {
    let sm = Sm::Sm90;
    assert!(vc::enabled(sm, prec, b as u32), "{prec:?} B {b}");
    let dims = Dims::new(2, 2, 1, b).unwrap();
    let st = Context::sim(sm).default_stream();
    let topo = DeviceTopology::upload(&st, &dims, &[0, 1]).unwrap();
    let n = 3;
    let len = n * dims.in_features();
    let x = st.upload(&T::encode(prec, &vec![1.0; len + 1])).unwrap();
    let gy = st
        .upload(&T::encode(prec, &vec![1.0; n * dims.out_features()]))
        .unwrap();
    let mut gv = st.upload(&vec![7.0f32; dims.values_len()]).unwrap();
    let view = x.slice(1..).unwrap();
    let e = tc::grad_values_dev(&st, prec, &topo, n, &view, &gy, &mut gv).unwrap_err();
    assert!(
        matches!(e, Error::TensorMap(TensorMapError::Address { .. })),
        "{e:?}"
    );
    assert!(st.to_vec(&gv).unwrap().iter().all(|&v| v == 7.0));
    let aligned = x.slice(..len).unwrap();
    tc::grad_values_dev(&st, prec, &topo, n, &aligned, &gy, &mut gv).unwrap();
    assert!(st.to_vec(&gv).unwrap().iter().all(|&v| v == n as f32));
}

/// The pinned ptxas assembles the `x` copies into tensor-map copies
/// (`UTMALDG`) issued once under `elect.sync` (no `BRA.U.ANY` loop over
/// the active lanes), with no spill, on every target where the cluster
/// kernel runs (bf16 and f16 at `B` 32, bf16 at `B` 64, tf32 at `B` 32). SKIP without the
/// tools.
#[test]
fn sass_has_tensor_copies_and_no_lane_loop() {
    let Some(tools) = ptxsmith::nvtools::NvTools::for_tests() else {
        return;
    };
    for sm in [Sm::Sm90, Sm::Sm100, Sm::Sm100a] {
        for (prec, b) in [
            (TcPrecision::Bf16, 32),
            (TcPrecision::F16, 32),
            (TcPrecision::Bf16, 64),
            (TcPrecision::Tf32, 32),
        ] {
            let m = ptx::generate_grad_values(sm, prec, b).unwrap();
            let asm = tools
                .assemble(&m.ptx, sm)
                .unwrap_or_else(|e| panic!("{sm} {prec:?} B {b}: ptxas: {e}"));
            let sass = tools.disassemble(&asm).unwrap();
            let what = format!("{sm} {prec:?} B {b}: {:?}", sass.opcode_histogram());
            assert!(sass.count("UTMALDG") >= 1, "{what}");
            assert_eq!(sass.count("BRA.U.ANY"), 0, "{what}");
            assert_eq!(sass.count("STL"), 0, "{what}");
        }
    }
}

/// `N` = 0 in clusters: no token tile, no copy (the map still encodes, its
/// rows taken as 1); every slot `+0.0` (the empty N-chunk tree), over
/// whatever `gv` held.
#[test]
fn zero_rows_store_zeros() {
    for b in [32, 64] {
        let dims = Dims::new(5, 9, 2, b).unwrap();
        let col = [1, -1, 0, 8, -1, -1, 3, 4, 2, 7];
        let st = Context::sim(Sm::Sm90).default_stream();
        let topo = DeviceTopology::upload(&st, &dims, &col).unwrap();
        let empty = st.context().alloc::<u16>(0).unwrap();
        let mut gv = st.upload(&vec![5.0f32; dims.values_len()]).unwrap();
        let prec = TcPrecision::Bf16;
        tc::grad_values_dev(&st, prec, &topo, 0, &empty, &empty, &mut gv).unwrap();
        assert!(
            st.to_vec(&gv).unwrap().iter().all(|v| v.to_bits() == 0),
            "B {b}"
        );
    }
}
