//! Issue 31, the grouped forward whose values blocks are multicast across a
//! cluster of two CTAs (sm_90, sm_100, sm_100a: adjacent token tiles of one
//! group, `cp.async.bulk` multicast into both CTAs): the simulator, with its
//! checks on (races, barriers, bulk-copy findings), equals the host model
//! bit for bit, for an odd number of token tiles (the second tile of the
//! last pair has no row inside `N`), `N` not a multiple of the tile, more
//! clusters of work than the simulator's grid holds (grid-stride), empty
//! rows, `−1` slots and ±∞/NaN inputs; the other targets keep the kernel
//! without a cluster.

mod common;

use common::Rng;
use ptxsmith::Sm;
use ptxsmith::kernels::block_ell_tc::{
    self as tc, DeviceTopology, Dims, TcOutput, TcPrecision, host, ptx, to_bf16, to_f16,
};
use ptxsmith::runtime::Context;

/// Values `±[1, 2)·2^[−6, 6]`; with `specials`, ±∞ and NaN at a few places.
fn values(rng: &mut Rng, len: usize, specials: bool) -> Vec<f32> {
    let mut v: Vec<f32> = (0..len)
        .map(|_| {
            let e = rng.below(13) as i32 - 6;
            let s = if rng.chance(50) { -1.0 } else { 1.0 };
            s * (1.0 + rng.below(1 << 10) as f32 / 1024.0) * 2f32.powi(e)
        })
        .collect();
    if specials && len > 40 {
        v[3] = f32::INFINITY;
        v[len / 2] = f32::NEG_INFINITY;
        v[len / 3] = f32::NAN;
    }
    v
}

fn assert_bits(what: &str, got: &[u32], want: &[u32]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let live = want
        .iter()
        .filter(|&&w| w & 0x7FFF_FFFF != 0 && w & 0x7F80_0000 != 0x7F80_0000)
        .count();
    assert!(4 * live >= want.len(), "{what}: only {live} live");
    for (e, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g, w, "{what}: element {e}: {g:#x} != {w:#x}");
    }
}

/// Row `r`'s slots: blocks by a stride, slot 1 of every third row empty,
/// row 2 all empty; the values of empty slots are NaN (never read).
fn topology(r: usize, c: usize, k: usize) -> Vec<i32> {
    (0..r * k)
        .map(|s| {
            let (row, slot) = (s / k, s % k);
            if row == 2 || (slot == 1 && row % 3 == 0) {
                -1
            } else {
                ((row * 5 + slot * 3) % c) as i32
            }
        })
        .collect()
}

/// The forward pass of `prec` at `B` = `b` on `sm` for `n` rows against the
/// host model, f32 output with a bias and bf16 output without.
fn case(sm: Sm, prec: TcPrecision, b: usize, r: usize, n: usize, seed: u64) {
    let (c, k) = (7, 4);
    let dims = Dims::new(r, c, k, b).unwrap();
    let col = topology(r, c, k);
    let mut rng = Rng(seed);
    let mut vf = values(&mut rng, dims.values_len(), true);
    for s in (0..r * k).filter(|&s| col[s] < 0) {
        vf[s * b * b..(s + 1) * b * b].fill(f32::NAN);
    }
    // (a single row with a NaN input would be NaN throughout)
    let xf = values(&mut rng, n * dims.in_features(), n > 8);
    let enc = |v: &[f32]| match prec {
        TcPrecision::F16 => to_f16(v),
        _ => to_bf16(v),
    };
    let (x, v) = (enc(&xf), enc(&vf));
    let bias = values(&mut rng, dims.out_features(), false);
    let st = Context::sim(sm).default_stream();
    let topo = DeviceTopology::upload(&st, &dims, &col).unwrap();
    let (dx, dv, db) = (
        st.upload(&x).unwrap(),
        st.upload(&v).unwrap(),
        st.upload(&bias).unwrap(),
    );
    let what = format!("{prec:?} B={b} R={r} N={n} on {sm}");
    let mut y = st.upload(&vec![7.0f32; n * dims.out_features()]).unwrap();
    tc::forward_dev(
        &st,
        prec,
        TcOutput::F32,
        &topo,
        n,
        &dx,
        &dv,
        Some(&db),
        &mut y,
    )
    .unwrap();
    let want = host::forward(sm, prec, &dims, n, &x, &v, &col, Some(&bias)).unwrap();
    let got: Vec<u32> = st.to_vec(&y).unwrap().iter().map(|v| v.to_bits()).collect();
    let want32: Vec<u32> = want.iter().map(|v| v.to_bits()).collect();
    assert_bits(&format!("f32 {what}"), &got, &want32);
    // row block 2 has no entry: +0.0 plus its bias
    let out = dims.out_features();
    for row in 0..n {
        for f in 2 * b..3 * b {
            assert_eq!(got[row * out + f], (0.0f32 + bias[f]).to_bits(), "{what}");
        }
    }
    let mut y16 = st.upload(&vec![0x7777u16; n * out]).unwrap();
    tc::forward_dev(
        &st,
        prec,
        TcOutput::Bf16,
        &topo,
        n,
        &dx,
        &dv,
        None,
        &mut y16,
    )
    .unwrap();
    let want = host::forward(sm, prec, &dims, n, &x, &v, &col, None).unwrap();
    let got: Vec<u32> = st
        .to_vec(&y16)
        .unwrap()
        .iter()
        .map(|&h| u32::from(h) << 16)
        .collect();
    let want16: Vec<u32> = host::output::<u16>(TcOutput::Bf16, &want)
        .unwrap()
        .iter()
        .map(|&h| u32::from(h) << 16)
        .collect();
    assert_bits(&format!("bf16 out {what}"), &got, &want16);
}

/// bf16 and f16 at `B` 64 (where the cluster multicasts; the kernels
/// without a cluster at `B` 16/32 are `tests/block_ell_tc*.rs`'s) on
/// sm_90, sm_100 and sm_100a: an odd number of token tiles (the last
/// pair's second tile past `N`), `N` ragged; `R` gives 2-3 groups, so with
/// 2-4 pairs of tiles a group some clusters take a second pair (the
/// simulator's grid holds 4 clusters).
#[test]
fn multicast_forward_matches_the_host_model() {
    for (i, sm) in [Sm::Sm90, Sm::Sm100, Sm::Sm100a].into_iter().enumerate() {
        {
            let (b, r) = (64usize, 10usize);
            let prec = if i % 2 == 0 {
                TcPrecision::Bf16
            } else {
                TcPrecision::F16
            };
            let tokens = ptx::group_tile(prec, b as u32, sm).tokens as usize;
            // odd token tiles: 3 (sm_90), 5, 1
            let n = [3, 5, 1][i] * tokens - [5, 37, 3][i];
            case(sm, prec, b, r, n, 102 + 10 * i as u64);
        }
    }
}

/// An even number of token tiles (both CTAs of every cluster inside `N`)
/// and a single row.
#[test]
fn even_tiles_and_one_row() {
    case(Sm::Sm90, TcPrecision::Bf16, 64, 9, 256, 7);
    case(Sm::Sm100, TcPrecision::F16, 64, 9, 1, 8);
}

/// The cluster and the multicast are in the bf16/f16 `B` 64 kernels of
/// sm_90, sm_100 and sm_100a only.
#[test]
fn cluster_only_where_it_multicasts() {
    for sm in [
        Sm::Sm80,
        Sm::Sm86,
        Sm::Sm89,
        Sm::Sm90,
        Sm::Sm100,
        Sm::Sm100a,
        Sm::Sm120,
    ] {
        for (prec, b) in [TcPrecision::Bf16, TcPrecision::F16, TcPrecision::Tf32]
            .into_iter()
            .flat_map(|p| [(p, 16), (p, 32), (p, 64)])
        {
            let on = matches!(sm, Sm::Sm90 | Sm::Sm100 | Sm::Sm100a)
                && prec != TcPrecision::Tf32
                && b == 64;
            assert_eq!(
                ptx::grouped::forward_cluster(sm, prec, b),
                if on { 2 } else { 1 }
            );
            let t = ptx::generate_forward(sm, prec, b).unwrap().ptx;
            assert_eq!(
                t.contains(".reqnctapercluster 2, 1, 1"),
                on,
                "{sm} {prec:?}"
            );
            assert_eq!(t.contains(".multicast::cluster"), on, "{sm} {prec:?}");
            // grad-input keeps its kernel
            let g = ptx::generate_grad_input(sm, prec, b).unwrap().ptx;
            assert!(!g.contains("reqnctapercluster"), "{sm} {prec:?}");
        }
    }
}
