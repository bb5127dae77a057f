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
#[path = "common/block_ell_tc_mcast.rs"]
mod mcast;
#[path = "common/block_ell_tc.rs"]
mod tc_common;

use mcast::{Operand, Pass};
use ptxsmith::kernels::block_ell_tc::{Dims, TcPrecision, ptx};
use ptxsmith::{Feature, Sm};

/// The grad-input pass of `prec` at `B` = `b` on `sm` for `n` rows and
/// `c` column blocks (`R` = 9, `K` = 3: column block 2 never used, slot
/// 1 of every third row empty) against the host model, f32 and bf16
/// output ([`mcast::case`]).
fn case(sm: Sm, prec: TcPrecision, b: usize, c: usize, n: usize, seed: u64) {
    mcast::case(Pass::GradInput, sm, prec, b, c, n, seed);
}

/// The targets whose grouped grad-input multicasts across a cluster at
/// `B` = `b` (bf16 or f16).
fn multicast_sms(b: u32) -> Vec<Sm> {
    Pass::GradInput.multicast_sms(b)
}

/// bf16 and f16 at `B` = `b` on every target of [`multicast_sms`]: odd
/// token tiles, `N` ragged, `C` = 2.5 groups (column block 2 empty;
/// [`mcast::multicast_case`]).
fn multicast_case(b: usize, seed: u64) {
    mcast::multicast_case(Pass::GradInput, b, seed);
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
    mcast::tf32_case(Pass::GradInput, 502);
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
/// as the map's error (`TensorMapError::Address`) before anything is
/// queued (the output keeps its 7.0s), at every `B` where grad-input runs
/// in clusters.
#[test]
fn misaligned_values_are_a_typed_error() {
    let sm = Sm::Sm90;
    let on: Vec<usize> = [16usize, 32, 64]
        .into_iter()
        .filter(|&b| ptx::grouped::grad_input_cluster(sm, TcPrecision::Bf16, b as u32) > 1)
        .collect();
    assert!(!on.is_empty());
    let gi = Pass::GradInput;
    for b in on {
        let dims = Dims::new(2, 2, 1, b).unwrap();
        let both = [Operand::Values, Operand::Input];
        mcast::misaligned::<u16>(gi, sm, TcPrecision::Bf16, dims, &[0, 1], 3, &both);
    }
    // tf32 `B` 32: maps of f32 elements, `gy` one f32 in
    let tf = TcPrecision::Tf32;
    assert_eq!(ptx::grouped::grad_input_cluster(sm, tf, 32), 4);
    let dims = Dims::new(2, 2, 1, 32).unwrap();
    mcast::misaligned::<f32>(gi, sm, tf, dims, &[0, 1], 3, &[Operand::Input]);
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
    mcast::sass_checks(Pass::GradInput);
}
