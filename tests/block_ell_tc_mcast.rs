//! Issue 31, the grouped forward whose values blocks are multicast across a
//! cluster (on sm_90, sm_100, sm_100a; bf16/f16 `B` 32 and 64: 2 adjacent
//! token tiles × 4 consecutive groups, all eight CTAs walking the union
//! schedule of the cluster's rows, each step's input tile multicast to the
//! four groups of its token tile; tf32 `B` 32, with its f32 tiles landed
//! unrounded and rounded in shared memory: 4 adjacent token tiles of one
//! group, each CTA's input tile its own copy): one `cp.async.bulk.tensor`
//! multicast a values block through a tensor map of the values, landed
//! swizzled, into the CTAs of its group; the input tile `x` through a
//! second map, landed swizzled, rows `n ≥ N` zero-filled by the copy): the
//! simulator, with its checks on (races, barriers, bulk and
//! tensor-copy findings), equals the host model bit for bit, for an odd
//! number of token tiles (the last run's tiles past the count have no row
//! inside `N`), `N` not a multiple of the tile, `N` below one tile,
//! `C ≠ R`, more clusters of work than
//! the simulator's grid holds (grid-stride), empty rows, `−1` slots and
//! ±∞/NaN inputs; a values or `x` array the tensor maps cannot describe is
//! a typed error before anything runs; the other targets keep the kernel
//! without a cluster (the cluster kernel at `B` 16, built but not enabled,
//! is checked by the unit tests of `ptx::grouped`).

mod common;
#[path = "common/block_ell_tc.rs"]
mod tc_common;

use common::Rng;
use ptxsmith::kernels::block_ell_tc::{
    self as tc, DeviceTopology, Dims, TcOutput, TcPrecision, ptx, to_bf16,
};
use ptxsmith::runtime::Context;
use ptxsmith::tensor_map::TensorMapError;
use ptxsmith::{Error, Feature, Sm};
use tc_common::{Inputs, forward_case, specials, values};

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
/// host model, f32 output with a bias and bf16 output without; inputs
/// `±[1, 2)·2^[−6, 6]` with ±∞ and NaN.
fn case(sm: Sm, prec: TcPrecision, b: usize, r: usize, n: usize, seed: u64) {
    if prec == TcPrecision::Tf32 {
        case_of::<f32>(sm, prec, b, r, n, seed);
    } else {
        case_of::<u16>(sm, prec, b, r, n, seed);
    }
}

/// [`case`] with the inputs stored as `T` (tf32: f32 whose low 13 bits,
/// which `cvt.rna` rounds away, are not all zero).
fn case_of<T: tc_common::Encode>(
    sm: Sm,
    prec: TcPrecision,
    b: usize,
    r: usize,
    n: usize,
    seed: u64,
) {
    let (c, k) = (7, 4);
    let frac = if prec == TcPrecision::Tf32 { 20 } else { 10 };
    let dims = Dims::new(r, c, k, b).unwrap();
    let mut rng = Rng(seed);
    let mut v = values(&mut rng, dims.values_len(), 6, frac);
    specials(&mut v, None);
    let mut x = values(&mut rng, n * dims.in_features(), 6, frac);
    // (a single row with a NaN input would be NaN throughout)
    if n > 8 {
        specials(&mut x, None);
    }
    let bias = Some(values(&mut rng, dims.out_features(), 6, 10));
    let f = forward_case::<T>(
        &Context::sim(sm),
        prec,
        dims,
        topology(r, c, k),
        n,
        Inputs { values: v, x, bias },
    );
    let what = format!("{prec:?} B={b} R={r} N={n} on {sm}");
    let got = f.check_f32(true, &format!("f32 {what}"));
    // row block 2 has no entry: +0.0 plus its bias
    let (out, bias) = (dims.out_features(), f.bias.as_ref().unwrap());
    for row in 0..n {
        for f in 2 * b..3 * b {
            let want = (0.0f32 + bias[f]).to_bits();
            assert_eq!(got[row * out + f].to_bits(), want, "{what}");
        }
    }
    f.check_bf16(false, &format!("bf16 out {what}"));
}

/// The targets whose grouped forward multicasts across a cluster at `B`
/// = `b` (bf16 or f16: sm_90, sm_100 and sm_100a today), from
/// [`ptx::grouped::forward_cluster`] over [`Sm::ALL`], so that a new
/// target that enables the cluster is tested here.
fn multicast_sms(b: u32) -> Vec<Sm> {
    let cluster = |sm, prec| ptx::grouped::forward_cluster(sm, prec, b) > 1;
    Sm::ALL
        .into_iter()
        .filter(|&sm| cluster(sm, TcPrecision::Bf16) || cluster(sm, TcPrecision::F16))
        .collect()
}

/// bf16 and f16 at `B` = `b` on every target of [`multicast_sms`] (the
/// precision alternating): an odd number of token tiles (the last run of
/// four: one to three tiles past `N`), `N` ragged; `R` = 2.5 groups (a ragged last
/// group), so with 1-2 runs of four tiles a group some clusters take a
/// second run (the simulator's grid holds 2 clusters of 4).
fn multicast_case(b: usize, seed: u64) {
    let sms = multicast_sms(b as u32);
    assert!(!sms.is_empty(), "B {b}");
    for (i, sm) in sms.into_iter().enumerate() {
        let prec = if i % 2 == 0 {
            TcPrecision::Bf16
        } else {
            TcPrecision::F16
        };
        let gt = ptx::group_tile(prec, b as u32, sm);
        let r = 5 * gt.g as usize / 2;
        let tokens = gt.tokens as usize;
        // odd token tiles: 3 (sm_90), 5, 1
        let n = [3, 5, 1][i % 3] * tokens - [5, 37, 3][i % 3];
        case(sm, prec, b, r, n, seed + 10 * i as u64);
    }
}

#[test]
fn multicast_forward_b64_matches_the_host_model() {
    multicast_case(64, 102);
}

#[test]
fn multicast_forward_b32_matches_the_host_model() {
    multicast_case(32, 202);
}

/// tf32 at `B` 32 (G 8) on every target where its forward runs in
/// clusters (the f32 tiles land unrounded by tensor map and are rounded
/// in shared memory): 5, 2 and 1 token tiles (the unit test of
/// `ptx::grouped` takes 3), `N` ragged, `R` = 1.5 groups (a ragged last
/// group).
#[test]
fn multicast_forward_tf32_b32_matches_the_host_model() {
    let prec = TcPrecision::Tf32;
    let sms: Vec<Sm> = Sm::ALL
        .into_iter()
        .filter(|&sm| ptx::grouped::forward_cluster(sm, prec, 32) > 1)
        .collect();
    assert_eq!(sms, [Sm::Sm90, Sm::Sm100, Sm::Sm100a]);
    for (i, sm) in sms.into_iter().enumerate() {
        let gt = ptx::group_tile(prec, 32, sm);
        let tokens = gt.tokens as usize;
        let n = [5, 2, 1][i] * tokens - [37, 5, 3][i];
        case(sm, prec, 32, 3 * gt.g as usize / 2, n, 302 + i as u64);
    }
}

/// An even number of token tiles (both CTAs of every cluster inside `N`),
/// a single row, and `N` below one token tile (the first CTA's input
/// tiles partly, the second's wholly, filled by the tensor copy); `C` = 7
/// is more than `R` (3) in some cases and less (9) in others.
#[test]
fn even_tiles_and_one_row() {
    case(Sm::Sm90, TcPrecision::Bf16, 64, 9, 256, 7);
    case(Sm::Sm100, TcPrecision::F16, 64, 9, 1, 8);
    case(Sm::Sm100a, TcPrecision::Bf16, 64, 9, 1, 10);
    case(Sm::Sm90, TcPrecision::F16, 32, 9, 256, 11);
    case(Sm::Sm100, TcPrecision::Bf16, 32, 9, 1, 12);
    for (sm, prec, b, seed) in [
        (Sm::Sm90, TcPrecision::Bf16, 32, 13),
        (Sm::Sm100a, TcPrecision::F16, 64, 14),
    ] {
        let tokens = ptx::group_tile(prec, b as u32, sm).tokens as usize;
        case(sm, prec, b, 3, tokens - 29, seed);
    }
}

/// The values' tensor map needs a 16-byte aligned array: a view of the
/// values that starts one element in is refused as the map's error
/// ([`TensorMapError::Address`]) before anything is queued (the output
/// keeps its 7.0s), at every `B` where the forward runs in clusters.
#[test]
fn misaligned_values_are_a_typed_error() {
    for b in [16usize, 32, 64]
        .into_iter()
        .filter(|&b| ptx::grouped::forward_cluster(Sm::Sm90, TcPrecision::Bf16, b as u32) > 1)
    {
        let sm = Sm::Sm90;
        let dims = Dims::new(2, 2, 1, b).unwrap();
        let st = Context::sim(sm).default_stream();
        let topo = DeviceTopology::upload(&st, &dims, &[0, 1]).unwrap();
        let n = 3;
        let x = st
            .upload(&to_bf16(&vec![1.0; n * dims.in_features()]))
            .unwrap();
        let v = st
            .upload(&to_bf16(&vec![1.0; dims.values_len() + 1]))
            .unwrap();
        let view = v.slice(1..).unwrap();
        let mut y = st.upload(&vec![7.0f32; n * dims.out_features()]).unwrap();
        let e = tc::forward_dev(
            &st,
            TcPrecision::Bf16,
            TcOutput::F32,
            &topo,
            n,
            &x,
            &view,
            None,
            &mut y,
        )
        .unwrap_err();
        assert!(
            matches!(e, Error::TensorMap(TensorMapError::Address { .. })),
            "B {b}: {e:?}"
        );
        assert!(st.to_vec(&y).unwrap().iter().all(|&v| v == 7.0), "B {b}");
        // the aligned array runs
        tc::forward_dev(
            &st,
            TcPrecision::Bf16,
            TcOutput::F32,
            &topo,
            n,
            &x,
            &v.slice(..dims.values_len()).unwrap(),
            None,
            &mut y,
        )
        .unwrap();
        let want = b as f32;
        assert!(st.to_vec(&y).unwrap().iter().all(|&v| v == want), "B {b}");
    }
    // tf32 (f32 storage) where its forward runs in clusters (B 32 at
    // least): a view one f32 in (4 bytes) is refused the same way, the
    // aligned one runs.
    let mut tf32_cases = 0;
    for b in [16usize, 32, 64]
        .into_iter()
        .filter(|&b| ptx::grouped::forward_cluster(Sm::Sm90, TcPrecision::Tf32, b as u32) > 1)
    {
        let st = Context::sim(Sm::Sm90).default_stream();
        let dims = Dims::new(2, 2, 1, b).unwrap();
        let topo = DeviceTopology::upload(&st, &dims, &[0, 1]).unwrap();
        let n = 3;
        let x = st.upload(&vec![1.0f32; n * dims.in_features()]).unwrap();
        let v = st.upload(&vec![1.0f32; dims.values_len() + 1]).unwrap();
        let mut y = st.upload(&vec![7.0f32; n * dims.out_features()]).unwrap();
        let view = v.slice(1..).unwrap();
        let (p, o) = (TcPrecision::Tf32, TcOutput::F32);
        let e = tc::forward_dev(&st, p, o, &topo, n, &x, &view, None, &mut y).unwrap_err();
        assert!(
            matches!(e, Error::TensorMap(TensorMapError::Address { .. })),
            "tf32 B {b}: {e:?}"
        );
        assert!(
            st.to_vec(&y).unwrap().iter().all(|&v| v == 7.0),
            "tf32 B {b}"
        );
        let aligned = v.slice(..dims.values_len()).unwrap();
        tc::forward_dev(&st, p, o, &topo, n, &x, &aligned, None, &mut y).unwrap();
        let want = b as f32;
        assert!(
            st.to_vec(&y).unwrap().iter().all(|&v| v == want),
            "tf32 B {b}"
        );
        tf32_cases += 1;
    }
    assert!(
        tf32_cases > 0,
        "no tf32 block size runs in clusters on sm_90"
    );
}

/// The input's tensor map needs a 16-byte aligned `x` (its rows, `C·B`
/// elements, are multiples of 16 bytes at every `B` of the cluster
/// kernel): a view of `x` that starts one element in is refused as the
/// map's error ([`TensorMapError::Address`]) before anything is queued
/// (the output keeps its 7.0s), at every `B` where the forward runs in
/// clusters; the aligned view of the same buffer runs. (Without a cluster
/// the kernel copies `x` by 16-byte `cp.async`, which needs the same
/// alignment.)
#[test]
fn misaligned_x_is_a_typed_error() {
    let sm = Sm::Sm90;
    let bs: Vec<usize> = [16usize, 32, 64]
        .into_iter()
        .filter(|&b| ptx::grouped::forward_cluster(sm, TcPrecision::Bf16, b as u32) > 1)
        .collect();
    assert_eq!(bs, [32, 64]);
    for b in bs {
        let dims = Dims::new(2, 3, 1, b).unwrap();
        let st = Context::sim(sm).default_stream();
        let topo = DeviceTopology::upload(&st, &dims, &[0, 2]).unwrap();
        let n = 5;
        let len = n * dims.in_features();
        let x = st.upload(&to_bf16(&vec![1.0; len + 1])).unwrap();
        let v = st.upload(&to_bf16(&vec![1.0; dims.values_len()])).unwrap();
        let mut y = st.upload(&vec![7.0f32; n * dims.out_features()]).unwrap();
        let fwd = |x: &ptxsmith::runtime::DeviceSlice<'_, u16>, y: &mut _| {
            tc::forward_dev(
                &st,
                TcPrecision::Bf16,
                TcOutput::F32,
                &topo,
                n,
                x,
                &v,
                None,
                y,
            )
        };
        let e = fwd(&x.slice(1..).unwrap(), &mut y).unwrap_err();
        assert!(
            matches!(e, Error::TensorMap(TensorMapError::Address { .. })),
            "B {b}: {e:?}"
        );
        assert!(st.to_vec(&y).unwrap().iter().all(|&v| v == 7.0), "B {b}");
        fwd(&x.slice(..len).unwrap(), &mut y).unwrap();
        let want = b as f32;
        assert!(st.to_vec(&y).unwrap().iter().all(|&v| v == want), "B {b}");
    }
    // tf32 `B` 32: a map of f32 elements, `x` one f32 in
    assert_eq!(ptx::grouped::forward_cluster(sm, TcPrecision::Tf32, 32), 4);
    let dims = Dims::new(2, 3, 1, 32).unwrap();
    let st = Context::sim(sm).default_stream();
    let topo = DeviceTopology::upload(&st, &dims, &[0, 2]).unwrap();
    let n = 5;
    let len = n * dims.in_features();
    let x = st.upload(&vec![1.0f32; len + 1]).unwrap();
    let v = st.upload(&vec![1.0f32; dims.values_len()]).unwrap();
    let mut y = st.upload(&vec![7.0f32; n * dims.out_features()]).unwrap();
    let fwd = |x: &ptxsmith::runtime::DeviceSlice<'_, f32>, y: &mut _| {
        let p = TcPrecision::Tf32;
        tc::forward_dev(&st, p, TcOutput::F32, &topo, n, x, &v, None, y)
    };
    let e = fwd(&x.slice(1..).unwrap(), &mut y).unwrap_err();
    assert!(
        matches!(e, Error::TensorMap(TensorMapError::Address { .. })),
        "tf32: {e:?}"
    );
    assert!(st.to_vec(&y).unwrap().iter().all(|&v| v == 7.0), "tf32");
    fwd(&x.slice(..len).unwrap(), &mut y).unwrap();
    assert!(st.to_vec(&y).unwrap().iter().all(|&v| v == 32.0), "tf32");
}

/// On every target: the forward kernel has the cluster of 2 and the
/// tensor-map multicast (and no per-row bulk copy) exactly where
/// [`ptx::grouped::forward_cluster`] says 4, and that only for bf16/f16
/// at `B` 32 and 64 and tf32 at `B` 32 on targets with clusters and tensor copies (some
/// target does: [`multicast_sms`] is not empty); grad-input has its
/// cluster where [`ptx::grouped::grad_input_cluster`] says 2; the targets
/// without tensor cores refuse both.
#[test]
fn cluster_only_where_it_multicasts() {
    assert!(!multicast_sms(64).is_empty() && !multicast_sms(32).is_empty());
    for sm in Sm::ALL {
        for (prec, b) in [TcPrecision::Bf16, TcPrecision::F16, TcPrecision::Tf32]
            .into_iter()
            .flat_map(|p| [(p, 16), (p, 32), (p, 64)])
        {
            let cluster = ptx::grouped::forward_cluster(sm, prec, b);
            // bf16/f16: 2 token tiles × 4 groups (GRID, `x` multicast
            // too); tf32: 4 token tiles of one group
            let grid = cluster == 8;
            assert!(cluster == 1 || cluster == 4 || grid, "{sm} {prec:?} B {b}");
            assert_eq!(
                grid,
                cluster > 1 && prec != TcPrecision::Tf32,
                "{sm} {prec:?} B {b}"
            );
            let (tok, grps) = ptx::grouped::forward_cluster_shape(sm, prec, b);
            assert_eq!(tok * grps, cluster, "{sm} {prec:?} B {b}");
            let on = cluster > 1;
            if on {
                // tf32 only at `B` 32 (`B` 64's group of 2 is no multiple
                // of the cluster, and its 256-byte rows no swizzle span)
                assert!(b >= 32, "{sm} {prec:?} B {b}");
                assert!(prec != TcPrecision::Tf32 || b == 32, "{sm} {prec:?} B {b}");
                for f in [Feature::Cluster, Feature::TensorCopy] {
                    assert!(sm.supports(f), "{sm} {prec:?} B {b}: {f}");
                }
            }
            let Ok(fwd) = ptx::generate_forward(sm, prec, b) else {
                assert!(!sm.supports(Feature::MmaSync) && !on, "{sm} {prec:?}");
                assert!(ptx::generate_grad_input(sm, prec, b).is_err());
                continue;
            };
            let t = fwd.ptx;
            assert_eq!(
                t.contains(&format!(".reqnctapercluster {cluster}, 1, 1")),
                on,
                "{sm} {prec:?} B {b}"
            );
            assert_eq!(t.contains(".multicast::cluster"), on, "{sm} {prec:?} B {b}");
            assert_eq!(
                t.contains("cp.async.bulk.tensor.2d"),
                on,
                "{sm} {prec:?} B {b}"
            );
            assert!(
                !t.contains("cp.async.bulk.shared::cluster.global"),
                "{sm} {prec:?} B {b}"
            );
            // the cluster kernel's `x` by a tensor copy, without multicast
            // in a cluster of one group, multicast to the token tile's
            // four groups in a GRID (and no `cp.async` left); the other
            // kernel's by `cp.async`
            let copies = |multicast: bool| {
                t.lines()
                    .filter(|l| {
                        l.contains("cp.async.bulk.tensor") && l.contains(".multicast") == multicast
                    })
                    .count()
            };
            assert_eq!(copies(false) > 0, on && !grid, "{sm} {prec:?} B {b}");
            // (GRID: the values' copies per `tok` blocks and `x`'s)
            let want = if grid { 2 } else { 1 };
            assert_eq!(copies(true) >= want, on, "{sm} {prec:?} B {b}");
            assert_eq!(t.contains("cp.async.cg"), !on, "{sm} {prec:?} B {b}");
            // grad-input has its cluster by its own rule
            // (tests/block_ell_tc_gi_mcast.rs)
            let g = ptx::generate_grad_input(sm, prec, b).unwrap().ptx;
            let gi = ptx::grouped::grad_input_cluster(sm, prec, b) > 1;
            assert_eq!(g.contains("reqnctapercluster"), gi, "{sm} {prec:?} B {b}");
        }
    }
}

/// The pinned ptxas assembles the cluster forward's copies into
/// tensor-map copies of two kinds: the values' multicast
/// (`UTMALDG.2D.MULTICAST`) and the input tile's (`UTMALDG.2D`; in a GRID
/// cluster a multicast too), its MMAs into `HMMA`, with no
/// bulk copy (`UBLKCP`: the per-row copies whose per-lane loop the
/// tensor map replaced) and no `cp.async` (`LDGSTS`: the input tile's
/// per-thread copies before), on every target of [`multicast_sms`]. SKIP
/// without the tools.
#[test]
fn sass_has_tensor_copies_and_no_row_copies() {
    let Some(tools) = ptxsmith::nvtools::NvTools::for_tests() else {
        return;
    };
    for b in [32u32, 64] {
        for sm in multicast_sms(b) {
            // (tf32 where it runs in clusters: `B` 32)
            for prec in [TcPrecision::Bf16, TcPrecision::F16, TcPrecision::Tf32]
                .into_iter()
                .filter(|&p| ptx::grouped::forward_cluster(sm, p, b) > 1)
            {
                let m = ptx::generate_forward(sm, prec, b).unwrap();
                let asm = tools
                    .assemble(&m.ptx, sm)
                    .unwrap_or_else(|e| panic!("{sm} {prec:?} B {b}: ptxas: {e}"));
                let sass = tools.disassemble(&asm).unwrap();
                let what = format!("{sm} {prec:?} B {b}: {:?}", sass.opcode_histogram());
                assert!(sass.count("UTMALDG.2D.MULTICAST") >= 1, "{what}");
                // (`x` multicast in a GRID, the values' and its: two
                // copies at least; by a plain copy in a cluster of one
                // group)
                let grid = ptx::grouped::forward_cluster_shape(sm, prec, b).1 > 1;
                let want = 1 + usize::from(grid);
                assert!(sass.count("UTMALDG.2D.MULTICAST") >= want, "{what}");
                assert_eq!(sass.count("UTMALDG.2D") >= 1, !grid, "{what}");
                assert!(sass.count("HMMA") >= 1, "{what}");
                assert_eq!(sass.count("UBLKCP"), 0, "{what}");
                assert_eq!(sass.count("LDGSTS"), 0, "{what}");
                // issued under `elect.sync`: no loop over the active lanes
                // around the copies (`ELECT` … `BRA.U.ANY`)
                assert_eq!(sass.count("BRA.U.ANY"), 0, "{what}");
            }
        }
    }
}
