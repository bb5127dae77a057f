//! Issue 31, the grouped grad-input whose values blocks are multicast
//! across a cluster of four CTAs (bf16/f16 `B` 32 and 64, tf32 `B` 32, on
//! sm_90, sm_100, sm_100a, as the forward: adjacent token tiles of one group of column
//! blocks, one `cp.async.bulk.tensor` multicast a values block through the
//! forward's tensor map of the values, landed swizzled into both CTAs and
//! read by `ldmatrix.trans` through the swizzle): the simulator, with its
//! checks on (races, barriers, bulk and tensor-copy findings), equals the
//! host model bit for bit, f32 and bf16 output, for an odd number of token
//! tiles (the last run's tiles past the count have no row inside `N`), `N` not
//! a multiple of the tile, more clusters of work than the simulator's grid
//! holds (grid-stride), a column block without entries, `−1` slots and
//! ±∞/NaN inputs; a values array the tensor map cannot describe is a typed
//! error before anything runs; the kernel has the cluster exactly where
//! [`ptx::grouped::grad_input_cluster`] says 4 (the cluster kernel at `B`
//! 16, built but not enabled, is checked by the unit tests of
//! `ptx::grouped`).

mod common;
#[path = "common/block_ell_tc.rs"]
mod tc_common;

use common::Rng;
use ptxsmith::kernels::block_ell_tc::{
    self as tc, DeviceTopology, Dims, TcOutput, TcPrecision, host, ptx, to_bf16,
};
use ptxsmith::runtime::Context;
use ptxsmith::tensor_map::TensorMapError;
use ptxsmith::{Error, Feature, Sm};
use tc_common::{Encode, assert_bits, specials, values};

/// Row `r`'s slots: blocks by a stride, slot 1 of every third row empty,
/// column block 2 never used (its slots empty).
fn topology(r: usize, c: usize, k: usize) -> Vec<i32> {
    (0..r * k)
        .map(|s| {
            let (row, slot) = (s / k, s % k);
            let cb = (row * 5 + slot * 3) % c;
            if cb == 2 || (slot == 1 && row % 3 == 0) {
                -1
            } else {
                cb as i32
            }
        })
        .collect()
}

/// The grad-input pass of `prec` at `B` = `b` on `sm` for `n` rows and
/// `c` column blocks against the host model, f32 and bf16 output; inputs
/// `±[1, 2)·2^[−6, 6]` with ±∞ and NaN (the values of empty slots NaN,
/// never read).
fn case(sm: Sm, prec: TcPrecision, b: usize, c: usize, n: usize, seed: u64) {
    if prec == TcPrecision::Tf32 {
        case_of::<f32>(sm, prec, b, c, n, seed);
    } else {
        case_of::<u16>(sm, prec, b, c, n, seed);
    }
}

/// [`case`] with the inputs stored as `T` (tf32: f32 whose low 13 bits,
/// which `cvt.rna` rounds away, are not all zero).
fn case_of<T: Encode>(sm: Sm, prec: TcPrecision, b: usize, c: usize, n: usize, seed: u64) {
    let (r, k) = (9, 3);
    let frac = if prec == TcPrecision::Tf32 { 20 } else { 10 };
    let dims = Dims::new(r, c, k, b).unwrap();
    let col = topology(r, c, k);
    let mut rng = Rng(seed);
    let mut vf = values(&mut rng, dims.values_len(), 6, frac);
    specials(&mut vf, None);
    for s in (0..r * k).filter(|&s| col[s] < 0) {
        vf[s * b * b..(s + 1) * b * b].fill(f32::NAN);
    }
    let mut gyf = values(&mut rng, n * dims.out_features(), 6, frac);
    // (a single row with a NaN input would be NaN throughout)
    if n > 8 {
        specials(&mut gyf, None);
    }
    let (gy, v) = (T::encode(prec, &gyf), T::encode(prec, &vf));
    let st = Context::sim(sm).default_stream();
    let topo = DeviceTopology::upload(&st, &dims, &col).unwrap();
    let (dgy, dv) = (st.upload(&gy).unwrap(), st.upload(&v).unwrap());
    let what = format!("{prec:?} B={b} C={c} N={n} on {sm}");
    let want = host::grad_input(sm, prec, &dims, n, &gy, &v, &col).unwrap();
    let fin = dims.in_features();
    // 7.0s: an unwritten element shows
    let mut gx = st.upload(&vec![7.0f32; n * fin]).unwrap();
    tc::grad_input_dev(&st, prec, TcOutput::F32, &topo, n, &dgy, &dv, &mut gx).unwrap();
    let got = st.to_vec(&gx).unwrap();
    assert_bits(&format!("f32 {what}"), &got, &want);
    // column block 2 has no entry: +0.0
    for row in 0..n {
        for f in 2 * b..3 * b {
            assert_eq!(got[row * fin + f].to_bits(), 0, "{what}");
        }
    }
    let mut gx16 = st.upload(&vec![0x7777u16; n * fin]).unwrap();
    tc::grad_input_dev(&st, prec, TcOutput::Bf16, &topo, n, &dgy, &dv, &mut gx16).unwrap();
    let h = host::output::<u16>(TcOutput::Bf16, &want).unwrap();
    assert_eq!(st.to_vec(&gx16).unwrap(), h, "bf16 out {what}");
}

/// The targets whose grouped grad-input multicasts across a cluster at
/// `B` = `b` (bf16 or f16), from [`ptx::grouped::grad_input_cluster`]
/// over [`Sm::ALL`], so that a new target that enables the cluster is
/// tested here.
fn multicast_sms(b: u32) -> Vec<Sm> {
    let cluster = |sm, prec| ptx::grouped::grad_input_cluster(sm, prec, b) > 1;
    Sm::ALL
        .into_iter()
        .filter(|&sm| cluster(sm, TcPrecision::Bf16) || cluster(sm, TcPrecision::F16))
        .collect()
}

/// bf16 and f16 at `B` = `b` on every target of [`multicast_sms`] (the
/// precision alternating): an odd number of token tiles (the last run of
/// four: one to three tiles past `N`), `N` ragged; `C` = 2.5 groups (a ragged last
/// group, column block 2 empty), so with 1-2 runs of four tiles a group
/// some clusters take a second run (the simulator's grid holds 2
/// clusters of 4).
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
        let c = 5 * gt.g as usize / 2;
        let tokens = gt.tokens as usize;
        // odd token tiles: 3 (sm_90), 5, 1
        let n = [3, 5, 1][i % 3] * tokens - [5, 37, 3][i % 3];
        case(sm, prec, b, c, n, seed + 10 * i as u64);
    }
}

#[test]
fn multicast_grad_input_b64_matches_the_host_model() {
    multicast_case(64, 302);
}

#[test]
fn multicast_grad_input_b32_matches_the_host_model() {
    multicast_case(32, 402);
}

/// tf32 at `B` 32 (G 8) on every target where its grad-input runs in
/// clusters (the f32 tiles land unrounded by tensor map; the values'
/// rows `k` read by `ld.shared` through the swizzle, the tiles rounded
/// in shared memory): 5, 2 and 1 token tiles, `N` ragged, `C` = 1.5 groups (a
/// ragged last group, column block 2 empty).
#[test]
fn multicast_grad_input_tf32_b32_matches_the_host_model() {
    let prec = TcPrecision::Tf32;
    let sms: Vec<Sm> = Sm::ALL
        .into_iter()
        .filter(|&sm| ptx::grouped::grad_input_cluster(sm, prec, 32) > 1)
        .collect();
    assert_eq!(sms, [Sm::Sm90, Sm::Sm100, Sm::Sm100a]);
    for (i, sm) in sms.into_iter().enumerate() {
        let gt = ptx::group_tile(prec, 32, sm);
        let tokens = gt.tokens as usize;
        let n = [5, 2, 1][i] * tokens - [37, 5, 3][i];
        case(sm, prec, 32, 3 * gt.g as usize / 2, n, 502 + i as u64);
    }
}

/// An even number of token tiles (both CTAs of every cluster inside `N`)
/// and a single row.
#[test]
fn even_tiles_and_one_row() {
    case(Sm::Sm90, TcPrecision::F16, 64, 9, 256, 17);
    case(Sm::Sm100, TcPrecision::Bf16, 64, 9, 1, 18);
    case(Sm::Sm100a, TcPrecision::F16, 32, 9, 1, 19);
    case(Sm::Sm90, TcPrecision::Bf16, 32, 9, 256, 20);
}

/// The values' and `gy`'s tensor maps need 16-byte aligned arrays: a
/// view of the values, or of `gy`, that starts one element in is refused
/// as the map's error ([`TensorMapError::Address`]) before anything is
/// queued (the output keeps its 7.0s), at every `B` where grad-input runs
/// in clusters.
#[test]
fn misaligned_values_are_a_typed_error() {
    let on: Vec<usize> = [16usize, 32, 64]
        .into_iter()
        .filter(|&b| ptx::grouped::grad_input_cluster(Sm::Sm90, TcPrecision::Bf16, b as u32) > 1)
        .collect();
    assert!(!on.is_empty());
    for b in on {
        let sm = Sm::Sm90;
        let dims = Dims::new(2, 2, 1, b).unwrap();
        let st = Context::sim(sm).default_stream();
        let topo = DeviceTopology::upload(&st, &dims, &[0, 1]).unwrap();
        let n = 3;
        let gylen = n * dims.out_features();
        let gy1 = st.upload(&to_bf16(&vec![1.0; gylen + 1])).unwrap();
        let gy = gy1.slice(..gylen).unwrap();
        let v = st
            .upload(&to_bf16(&vec![1.0; dims.values_len() + 1]))
            .unwrap();
        let view = v.slice(1..).unwrap();
        let mut gx = st.upload(&vec![7.0f32; n * dims.in_features()]).unwrap();
        let bf = TcPrecision::Bf16;
        let e =
            tc::grad_input_dev(&st, bf, TcOutput::F32, &topo, n, &gy, &view, &mut gx).unwrap_err();
        assert!(
            matches!(e, Error::TensorMap(TensorMapError::Address { .. })),
            "B {b}: {e:?}"
        );
        assert!(st.to_vec(&gx).unwrap().iter().all(|&v| v == 7.0), "B {b}");
        let gy_off = gy1.slice(1..).unwrap();
        let aligned = v.slice(..dims.values_len()).unwrap();
        let e = tc::grad_input_dev(&st, bf, TcOutput::F32, &topo, n, &gy_off, &aligned, &mut gx)
            .unwrap_err();
        assert!(
            matches!(e, Error::TensorMap(TensorMapError::Address { .. })),
            "B {b} gy: {e:?}"
        );
        assert!(st.to_vec(&gx).unwrap().iter().all(|&v| v == 7.0), "B {b}");
        // the aligned arrays run
        let aligned = v.slice(..dims.values_len()).unwrap();
        tc::grad_input_dev(&st, bf, TcOutput::F32, &topo, n, &gy, &aligned, &mut gx).unwrap();
        let want = b as f32;
        assert!(st.to_vec(&gx).unwrap().iter().all(|&v| v == want), "B {b}");
    }
    // tf32 `B` 32: maps of f32 elements, `gy` one f32 in
    let (sm, tf) = (Sm::Sm90, TcPrecision::Tf32);
    assert_eq!(ptx::grouped::grad_input_cluster(sm, tf, 32), 4);
    let dims = Dims::new(2, 2, 1, 32).unwrap();
    let st = Context::sim(sm).default_stream();
    let topo = DeviceTopology::upload(&st, &dims, &[0, 1]).unwrap();
    let n = 3;
    let gylen = n * dims.out_features();
    let gy1 = st.upload(&vec![1.0f32; gylen + 1]).unwrap();
    let v = st.upload(&vec![1.0f32; dims.values_len()]).unwrap();
    let mut gx = st.upload(&vec![7.0f32; n * dims.in_features()]).unwrap();
    let off = gy1.slice(1..).unwrap();
    let e = tc::grad_input_dev(&st, tf, TcOutput::F32, &topo, n, &off, &v, &mut gx).unwrap_err();
    assert!(
        matches!(e, Error::TensorMap(TensorMapError::Address { .. })),
        "tf32 gy: {e:?}"
    );
    assert!(st.to_vec(&gx).unwrap().iter().all(|&v| v == 7.0), "tf32");
    let gy = gy1.slice(..gylen).unwrap();
    tc::grad_input_dev(&st, tf, TcOutput::F32, &topo, n, &gy, &v, &mut gx).unwrap();
    assert!(st.to_vec(&gx).unwrap().iter().all(|&v| v == 32.0), "tf32");
}

/// On every target: the grad-input kernel has the cluster of 4 and the
/// tensor-map multicast exactly where
/// [`ptx::grouped::grad_input_cluster`] says 4, and that only for
/// bf16/f16 at `B` 32 and 64 and tf32 at `B` 32 on targets with clusters and tensor copies
/// (some target does).
#[test]
fn cluster_only_where_it_multicasts() {
    assert!(!multicast_sms(64).is_empty() && !multicast_sms(32).is_empty());
    for sm in Sm::ALL.into_iter().filter(|s| s.supports(Feature::MmaSync)) {
        for (prec, b) in [TcPrecision::Bf16, TcPrecision::F16, TcPrecision::Tf32]
            .into_iter()
            .flat_map(|p| [(p, 16), (p, 32), (p, 64)])
        {
            let what = format!("{sm} {prec:?} B {b}");
            let cluster = ptx::grouped::grad_input_cluster(sm, prec, b);
            assert!(cluster == 1 || cluster == 4, "{what}");
            let on = cluster == 4;
            if on {
                // tf32 only at `B` 32 (`B` 64's group of 2 is no
                // multiple of the cluster)
                assert!(b >= 32, "{what}");
                assert!(prec != TcPrecision::Tf32 || b == 32, "{what}");
                for f in [Feature::Cluster, Feature::TensorCopy] {
                    assert!(sm.supports(f), "{what}: {f}");
                }
            }
            let t = ptx::generate_grad_input(sm, prec, b).unwrap().ptx;
            assert_eq!(t.contains(".reqnctapercluster 4, 1, 1"), on, "{what}");
            assert_eq!(t.contains(".multicast::cluster"), on, "{what}");
            assert_eq!(t.contains("cp.async.bulk.tensor.2d"), on, "{what}");
            // the values' `ldmatrix` stays transposed (tf32: `ld.shared`)
            let trans = t.contains("ldmatrix.sync.aligned.m8n8.x4.trans");
            assert_eq!(trans, prec != TcPrecision::Tf32, "{what}");
        }
    }
}

/// The pinned ptxas assembles the cluster grad-input's values and `gy`
/// copies into tensor-map copies (`UTMALDG`: multicast and not), with no
/// bulk copy (`UBLKCP`), no `cp.async` (`LDGSTS`: `gy`'s per-thread
/// copies before it came by tensor map) and no loop over the active
/// lanes around them (`BRA.U.ANY`: the copies are issued under
/// `elect.sync`), on every target of [`multicast_sms`]. SKIP without the
/// tools.
#[test]
fn sass_has_tensor_copies_and_no_lane_loop() {
    let Some(tools) = ptxsmith::nvtools::NvTools::for_tests() else {
        return;
    };
    for b in [32u32, 64] {
        for sm in multicast_sms(b) {
            // (tf32 where it runs in clusters: `B` 32)
            for prec in [TcPrecision::Bf16, TcPrecision::F16, TcPrecision::Tf32]
                .into_iter()
                .filter(|&p| ptx::grouped::grad_input_cluster(sm, p, b) > 1)
            {
                let m = ptx::generate_grad_input(sm, prec, b).unwrap();
                let asm = tools
                    .assemble(&m.ptx, sm)
                    .unwrap_or_else(|e| panic!("{sm} {prec:?} B {b}: ptxas: {e}"));
                let sass = tools.disassemble(&asm).unwrap();
                let what = format!("{sm} {prec:?} B {b}: {:?}", sass.opcode_histogram());
                assert!(sass.count("UTMALDG.2D.MULTICAST") >= 1, "{what}");
                assert!(sass.count("UTMALDG.2D") >= 1, "{what}");
                assert_eq!(sass.count("UBLKCP"), 0, "{what}");
                assert_eq!(sass.count("LDGSTS"), 0, "{what}");
                assert_eq!(sass.count("BRA.U.ANY"), 0, "{what}");
            }
        }
    }
}
