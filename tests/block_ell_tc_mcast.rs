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
#[path = "common/block_ell_tc_mcast.rs"]
mod mcast;
#[path = "common/block_ell_tc.rs"]
mod tc_common;

use mcast::{Operand, Pass};
use ptxsmith::kernels::block_ell_tc::{Dims, TcPrecision, ptx};
use ptxsmith::{Feature, Sm};

/// The forward of `prec` at `B` = `b` on `sm` for `R` = `r` row blocks
/// (`C` = 7, `K` = 4: row block 2 empty, slot 1 of every third row
/// empty) and `n` rows against the host model, f32 output with a bias
/// and bf16 output without ([`mcast::case`]).
fn case(sm: Sm, prec: TcPrecision, b: usize, r: usize, n: usize, seed: u64) {
    mcast::case(Pass::Forward, sm, prec, b, r, n, seed);
}

/// The targets whose grouped forward multicasts across a cluster at `B`
/// = `b` (bf16 or f16: sm_90, sm_100 and sm_100a today).
fn multicast_sms(b: u32) -> Vec<Sm> {
    Pass::Forward.multicast_sms(b)
}

/// bf16 and f16 at `B` = `b` on every target of [`multicast_sms`]: odd
/// token tiles, `N` ragged, `R` = 2.5 groups ([`mcast::multicast_case`]).
fn multicast_case(b: usize, seed: u64) {
    mcast::multicast_case(Pass::Forward, b, seed);
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
    mcast::tf32_case(Pass::Forward, 302);
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
/// (`TensorMapError::Address`) before anything is queued (the output
/// keeps its 7.0s), at every `B` where the forward runs in clusters.
#[test]
fn misaligned_values_are_a_typed_error() {
    let sm = Sm::Sm90;
    let on = |prec| {
        [16usize, 32, 64]
            .into_iter()
            .filter(move |&b| ptx::grouped::forward_cluster(sm, prec, b as u32) > 1)
    };
    for b in on(TcPrecision::Bf16) {
        let dims = Dims::new(2, 2, 1, b).unwrap();
        let p = TcPrecision::Bf16;
        mcast::misaligned::<u16>(Pass::Forward, sm, p, dims, &[0, 1], 3, &[Operand::Values]);
    }
    // tf32 (f32 storage) where its forward runs in clusters (B 32 at
    // least): a view one f32 in (4 bytes) is refused the same way, the
    // aligned one runs.
    let mut tf32_cases = 0;
    for b in on(TcPrecision::Tf32) {
        let dims = Dims::new(2, 2, 1, b).unwrap();
        let p = TcPrecision::Tf32;
        mcast::misaligned::<f32>(Pass::Forward, sm, p, dims, &[0, 1], 3, &[Operand::Values]);
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
/// map's error (`TensorMapError::Address`) before anything is queued
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
    let (fwd, x) = (Pass::Forward, [Operand::Input]);
    for b in bs {
        let dims = Dims::new(2, 3, 1, b).unwrap();
        mcast::misaligned::<u16>(fwd, sm, TcPrecision::Bf16, dims, &[0, 2], 5, &x);
    }
    // tf32 `B` 32: a map of f32 elements, `x` one f32 in
    assert_eq!(ptx::grouped::forward_cluster(sm, TcPrecision::Tf32, 32), 4);
    let dims = Dims::new(2, 3, 1, 32).unwrap();
    mcast::misaligned::<f32>(fwd, sm, TcPrecision::Tf32, dims, &[0, 2], 5, &x);
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
    mcast::sass_checks(Pass::Forward);
}
