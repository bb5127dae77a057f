//! Host model of the score route: hand-computed cases, the ranking rules,
//! validation, and property tests of the fast path and the online
//! selector against the readable model.

use proptest::prelude::*;
use ptxsmith::Error;
use ptxsmith::kernels::score::host::{
    FastConfig, TopS, TopSState, fma_route_top_s, fma_score, fma_sensitive_case, route_top_s,
    route_top_s_fast, route_top_s_fast_with, score_block, select_top_s, validate,
};

mod common;
use common::bits;

/// The readable route, checked against the fast path (default and a
/// two-thread, odd-tile configuration) bit for bit.
fn route_checked(x: &[f32], d: &[f32], rows: usize, k: usize, p: usize, s: usize) -> TopS {
    let want = route_top_s(x, d, rows, k, p, s).unwrap();
    assert_eq!(
        route_top_s_fast(x, d, rows, k, p, s).unwrap(),
        want,
        "fast (default)"
    );
    let cfg = FastConfig {
        threads: 2,
        atom_tile: 40,
    };
    assert_eq!(
        route_top_s_fast_with(x, d, rows, k, p, s, &cfg).unwrap(),
        want,
        "fast {cfg:?}"
    );
    want
}

fn err_text(r: ptxsmith::Result<impl std::fmt::Debug>) -> String {
    match r {
        Err(e @ Error::InvalidArgument(_)) => e.to_string(),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

/// Deterministic pseudo-random values in [-1, 1).
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 40) as f32) / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

#[test]
fn hand_computed_scores_and_top_s() {
    // x = [[1, 2], [3, -1]], D = [[1, 0], [0, 1], [1, 1], [-2, 1]]
    let x = [1.0, 2.0, 3.0, -1.0];
    let d = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0, -2.0, 1.0];
    let scores = score_block(&x, &d, 2, 4, 2).unwrap();
    assert_eq!(scores, vec![1.0, 2.0, 3.0, 0.0, 3.0, -1.0, 2.0, -7.0]);

    let top = route_checked(&x, &d, 2, 4, 2, 2);
    assert_eq!((top.rows, top.s), (2, 2));
    assert_eq!(top.row_pairs(0), vec![(2, 3.0), (1, 2.0)]);
    assert_eq!(top.row_pairs(1), vec![(3, -7.0), (0, 3.0)]);
    assert_eq!(top.atoms, vec![2, 1, 3, 0]);
    assert_eq!(top.scores, vec![3.0, 2.0, -7.0, 3.0]);
}

#[test]
fn scores_are_the_plain_loop_in_order() {
    // 1e8 + 1 - 1e8 depends on the order of the sum: ascending c gives
    // (1e8 + 1) = 1e8 (rounded), then 1e8 - 1e8 = 0; any other order of
    // the terms would give 1.
    let x = [1e8f32, 1.0, -1e8];
    let d = [1.0f32, 1.0, 1.0];
    assert_eq!(score_block(&x, &d, 1, 1, 3).unwrap(), vec![0.0]);
    // And the separate product rounding: 16-bit mantissas multiply to a
    // value that must round.
    // a·b = 1 + 2^-11 + 2^-24 exactly, which rounds (to even) to
    // 1 + 2^-11 and then cancels the first term.
    let a = 1.0f32 + 2f32.powi(-12);
    let x = [-1.0, a];
    let d = [1.0 + 2f32.powi(-11), a];
    let separate = score_block(&x, &d, 1, 1, 2).unwrap()[0];
    let fused = fma_score(&x, &d, 1, 1, 2).unwrap()[0];
    assert_eq!(separate, 0.0, "a*b rounds to 1 + 2^-11, cancelling exactly");
    assert_eq!(fused, 2f32.powi(-24), "the fused form keeps the 2^-24 term");
}

#[test]
fn duplicate_scores_go_to_the_smaller_atom() {
    // Every atom scores ±2 or ±1: equal magnitudes rank by atom index.
    let x = [1.0, 1.0];
    let d = [
        1.0, 1.0, -1.0, -1.0, 2.0, 0.0, 0.0, -2.0, 1.0, 0.0, -1.0, 0.0,
    ];
    let top = route_checked(&x, &d, 1, 6, 2, 6);
    assert_eq!(top.atoms, vec![0, 1, 2, 3, 4, 5]);
    assert_eq!(top.scores, vec![2.0, -2.0, 2.0, -2.0, 1.0, -1.0]);
    let top = route_checked(&x, &d, 1, 6, 2, 3);
    assert_eq!(top.atoms, vec![0, 1, 2]);
}

#[test]
fn nan_from_x_ranks_below_everything_by_atom() {
    // Row 0 has a NaN: all its scores are NaN, so its top-s is atoms 0..s.
    // Row 1 is ordinary.
    let x = [1.0, f32::NAN, 1.0, 0.0];
    let d = [0.0, 1.0, 5.0, 0.0, -7.0, 3.0];
    let top = route_checked(&x, &d, 2, 3, 2, 2);
    assert_eq!(top.atoms[..2], [0, 1]);
    assert!(top.scores[..2].iter().all(|v| v.is_nan()));
    assert_eq!(top.row_pairs(1), vec![(2, -7.0), (1, 5.0)]);
}

#[test]
fn nan_from_inf_times_zero_ranks_below_zero() {
    // Atom 1 = [inf, 0] against x = [0, 1]: 0·inf = NaN. Atom 0 scores
    // 0 (|0| still beats NaN), atom 2 scores 1.
    let x = [0.0, 1.0];
    let d = [0.0, 0.0, f32::INFINITY, 0.0, 0.0, 1.0];
    let scores = score_block(&x, &d, 1, 3, 2).unwrap();
    assert!(scores[1].is_nan());
    let top = route_checked(&x, &d, 1, 3, 2, 3);
    assert_eq!(top.atoms, vec![2, 0, 1]);
    assert_eq!(bits(&top.scores[..2]), bits(&[1.0, 0.0]));
    assert!(top.scores[2].is_nan());
    // With s = 2 the NaN atom 1 is dropped although atom 0 scores only 0.
    assert_eq!(route_checked(&x, &d, 1, 3, 2, 2).atoms, vec![2, 0]);
    assert_eq!(route_checked(&x, &d, 1, 3, 2, 1).atoms, vec![2]);
}

#[test]
fn infinities_rank_highest_and_keep_their_sign() {
    let x = [1.0, 1.0];
    let d = [
        1e30,
        1e30,
        3e38,
        3e38,
        -3e38,
        -3e38,
        f32::NEG_INFINITY,
        0.0,
        2.0,
        2.0,
    ];
    // atom 1 and 2 overflow to ±inf, atom 3 is -inf, atom 0 is 2e30.
    let top = route_checked(&x, &d, 1, 5, 2, 5);
    assert_eq!(top.atoms, vec![1, 2, 3, 0, 4]);
    assert_eq!(
        top.scores[..3],
        [f32::INFINITY, f32::NEG_INFINITY, f32::NEG_INFINITY]
    );
    // inf + (-inf) = NaN: that atom falls to the bottom.
    let d = [f32::INFINITY, f32::NEG_INFINITY, 1.0, 1.0];
    let top = route_checked(&x, &d, 1, 2, 2, 2);
    assert_eq!(top.atoms, vec![1, 0]);
    assert!(top.scores[1].is_nan());
}

#[test]
fn signed_zero_scores_tie_by_atom() {
    // A computed score is never -0.0: the sum starts at +0.0 and
    // +0.0 + -0.0 = +0.0 under round-to-nearest. An implementation that
    // starts from the first product instead would return -0.0 here.
    let x = [-1.0];
    let d = [0.0, -0.0, 0.0];
    let scores = score_block(&x, &d, 1, 3, 1).unwrap();
    assert_eq!(bits(&scores), vec![0, 0, 0]);
    let top = route_checked(&x, &d, 1, 3, 1, 3);
    assert_eq!(top.atoms, vec![0, 1, 2]);
    assert_eq!(bits(&top.scores), vec![0, 0, 0]);
    // Selection itself treats |-0.0| == |+0.0| and keeps the sign.
    let sel = select_top_s(&[-0.0, 0.0, -0.0], 3).unwrap();
    let got: Vec<(u32, u32)> = sel.iter().map(|&(a, v)| (a, v.to_bits())).collect();
    assert_eq!(got, vec![(0, 0x8000_0000), (1, 0), (2, 0x8000_0000)]);
    let mut st = TopSState::new(2);
    for a in [2u32, 1, 0] {
        st.offer(a, if a == 1 { 0.0 } else { -0.0 });
    }
    let got: Vec<(u32, u32)> = st.finish().iter().map(|&(a, v)| (a, v.to_bits())).collect();
    assert_eq!(got, vec![(0, 0x8000_0000), (1, 0)]);
}

#[test]
fn nan_payload_passes_through() {
    let payload = f32::from_bits(0x7fc0_0abc);
    let sel = select_top_s(&[payload, 1.0], 2).unwrap();
    assert_eq!(sel[1].0, 0);
    assert_eq!(sel[1].1.to_bits(), 0x7fc0_0abc);
}

#[test]
fn s_equals_k_and_s_one() {
    let (rows, k, p) = (3, 20, 5);
    let x = values(rows * p, 3);
    let d = values(k * p, 4);
    let block = score_block(&x, &d, rows, k, p).unwrap();
    let all = route_checked(&x, &d, rows, k, p, k);
    let one = route_checked(&x, &d, rows, k, p, 1);
    for r in 0..rows {
        let row = &block[r * k..(r + 1) * k];
        let (atoms, scores) = all.row(r);
        // s = K: a permutation of all atoms, non-increasing magnitude.
        let mut sorted = atoms.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..k as u32).collect::<Vec<_>>());
        assert!(scores.windows(2).all(|w| w[0].abs() >= w[1].abs()));
        for (&a, &v) in atoms.iter().zip(scores) {
            assert_eq!(v.to_bits(), row[a as usize].to_bits());
        }
        // s = 1: the head of the full list.
        assert_eq!(one.row_pairs(r), all.row_pairs(r)[..1].to_vec());
    }
}

#[test]
fn ragged_shapes_fast_matches_readable() {
    for (rows, k, p, s) in [
        (37, 1000, 67, 5),
        (37, 1000, 1, 5),
        (1, 1, 1, 1),
        (5, 17, 1, 17),
    ] {
        let x = values(rows * p, rows as u64);
        let d = values(k * p, k as u64);
        let top = route_checked(&x, &d, rows, k, p, s);
        assert_eq!(
            (top.rows, top.s, top.atoms.len(), top.scores.len()),
            (rows, s, rows * s, rows * s)
        );
        // And the readable route agrees with selecting from score_block.
        let block = score_block(&x, &d, rows, k, p).unwrap();
        for r in 0..rows {
            let sel = select_top_s(&block[r * k..(r + 1) * k], s).unwrap();
            assert_eq!(sel.iter().map(|p| p.0).collect::<Vec<_>>(), top.row(r).0);
            assert_eq!(
                bits(&sel.iter().map(|p| p.1).collect::<Vec<_>>()),
                bits(top.row(r).1)
            );
        }
    }
}

#[test]
fn validation_errors_name_the_values() {
    let x = [0.0f32; 6];
    let d = [0.0f32; 12];
    assert!(validate(&x, &d, 2, 4, 3).is_ok());

    // Empty dimensions.
    for (rows, k, p) in [(0, 4, 3), (2, 0, 3), (2, 4, 0)] {
        let m = err_text(validate(&[], &[], rows, k, p));
        assert!(m.contains(&format!("rows={rows}, K={k}, P={p}")), "{m}");
    }
    // Input lengths, and a P mismatch between x and D.
    let m = err_text(validate(&x[..5], &d, 2, 4, 3));
    assert!(
        m.contains("x has 5 elements") && m.contains("2·3 = 6"),
        "{m}"
    );
    let m = err_text(validate(&x, &d[..8], 2, 4, 3));
    assert!(
        m.contains("D has 8 elements") && m.contains("4·3 = 12"),
        "{m}"
    );
    assert!(m.contains("4 atoms of P=2 each, but P=3"), "{m}");
    let m = err_text(validate(&[0.0; 8], &d, 2, 4, 3));
    assert!(m.contains("2 rows of P=4 each, but P=3"), "{m}");

    // s out of 1..=K, on every route entry point.
    for s in [0usize, 5] {
        let routes = [
            route_top_s(&x, &d, 2, 4, 3, s),
            route_top_s_fast(&x, &d, 2, 4, 3, s),
            route_top_s_fast_with(&x, &d, 2, 4, 3, s, &FastConfig::default()),
            fma_route_top_s(&x, &d, 2, 4, 3, s),
        ];
        for r in routes {
            let m = err_text(r);
            assert!(m.contains(&format!("s={s}")) && m.contains("K=4"), "{m}");
        }
        let m = err_text(select_top_s(&[1.0; 4], s));
        assert!(m.contains(&format!("s={s}")) && m.contains("K=4"), "{m}");
    }
    // Bad shapes reach score_block and fma_score too.
    assert!(err_text(score_block(&x, &d, 2, 4, 2)).contains("2·2 = 4"));
    assert!(err_text(fma_score(&x, &d, 3, 4, 3)).contains("3·3 = 9"));

    // fma_sensitive_case needs two atoms and two columns.
    for (k, p) in [(1, 4), (4, 1)] {
        let m = err_text(fma_sensitive_case(1, k, p, 0));
        assert!(m.contains(&format!("K={k}, P={p}")), "{m}");
    }
}

#[cfg(target_pointer_width = "64")]
#[test]
fn validation_of_huge_shapes() {
    // K beyond u32 atom indices (checked before any length).
    let k = u32::MAX as usize + 1;
    let m = err_text(validate(&[], &[], 1, k, 1));
    assert!(
        m.contains("K=4294967296") && m.contains("u32::MAX=4294967295"),
        "{m}"
    );
    // The three products, each overflowing alone.
    let half = usize::MAX / 2 + 1;
    let m = err_text(validate(&[], &[], half, 1, 2));
    assert!(m.contains(&format!("rows·P = {half}·2 overflows")), "{m}");
    let m = err_text(validate(&[], &[], 1, 3, half));
    assert!(m.contains(&format!("K·P = 3·{half} overflows")), "{m}");
    let m = err_text(validate(&[], &[], half, 2, 1));
    assert!(m.contains(&format!("rows·K = {half}·2 overflows")), "{m}");
}

#[test]
fn fma_sensitive_cases_route_differently_when_fused() {
    for (rows, k, p, seed) in [
        (1, 2, 2, 0),
        (1, 2, 8, 1),
        (4, 64, 64, 2),
        (37, 1000, 67, 3),
    ] {
        let case = fma_sensitive_case(rows, k, p, seed).unwrap();
        assert_eq!((case.rows, case.k, case.p, case.s), (rows, k, p, 1));
        assert_eq!((case.x.len(), case.d.len()), (rows * p, k * p));
        let separate = route_checked(&case.x, &case.d, rows, k, p, case.s);
        let fused = fma_route_top_s(&case.x, &case.d, rows, k, p, case.s).unwrap();
        let (sep, fus) = (separate.row(case.row).0[0], fused.row(case.row).0[0]);
        assert_ne!(sep, fus, "row {} must flip", case.row);
        // The flip is between the planted pair, whose separate scores tie
        // or sit within a few ulps.
        let (a, b) = case.pair;
        let mut flipped = [sep, fus];
        flipped.sort_unstable();
        let mut pair = [a, b];
        pair.sort_unstable();
        assert_eq!(flipped, pair);
        let block = score_block(&case.x, &case.d, rows, k, p).unwrap();
        let (sa, sb) = (
            block[case.row * k + a as usize],
            block[case.row * k + b as usize],
        );
        let ulps = (sa.abs().to_bits() as i64 - sb.abs().to_bits() as i64).abs();
        assert!(ulps <= 4, "pair scores {sa} and {sb} are {ulps} ulps apart");
        // Deterministic in the seed.
        let again = fma_sensitive_case(rows, k, p, seed).unwrap();
        assert_eq!(
            (bits(&again.x), bits(&again.d)),
            (bits(&case.x), bits(&case.d))
        );
    }
}

// ---------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------

const SPECIALS: [f32; 6] = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, 1e-45];

/// Element values: small integers (many exact ties) or random floats.
fn elements(n: usize, integers: bool) -> BoxedStrategy<Vec<f32>> {
    if integers {
        prop::collection::vec((-3i8..=3).prop_map(f32::from), n).boxed()
    } else {
        prop::collection::vec(-2.0f32..2.0, n).boxed()
    }
}

/// Writes a few special values (NaN, ±Inf, ±0, a subnormal) into `v`.
fn inject(v: &mut [f32], spots: &[(prop::sample::Index, usize)]) {
    for (at, which) in spots {
        v[at.index(v.len())] = SPECIALS[which % SPECIALS.len()];
    }
}

#[derive(Debug, Clone)]
struct Case {
    rows: usize,
    k: usize,
    p: usize,
    s: usize,
    x: Vec<f32>,
    d: Vec<f32>,
    cfg: FastConfig,
}

fn cases() -> impl Strategy<Value = Case> {
    (1usize..20, 1usize..300, 1usize..40, any::<bool>())
        .prop_flat_map(|(rows, k, p, integers)| {
            let spots = prop::collection::vec((any::<prop::sample::Index>(), 0usize..6), 0..4);
            (
                Just((rows, k, p)),
                1..=k,
                elements(rows * p, integers),
                elements(k * p, integers),
                spots.clone(),
                spots,
                1usize..5,
                1usize..80,
            )
        })
        .prop_map(
            |((rows, k, p), s, mut x, mut d, x_spots, d_spots, threads, atom_tile)| {
                inject(&mut x, &x_spots);
                inject(&mut d, &d_spots);
                Case {
                    rows,
                    k,
                    p,
                    s,
                    x,
                    d,
                    cfg: FastConfig { threads, atom_tile },
                }
            },
        )
}

/// A row of scores with many duplicates and specials, an offer order, tile
/// cuts and a merge order.
fn selections() -> impl Strategy<Value = (Vec<f32>, usize, Vec<u32>, Vec<usize>, Vec<usize>)> {
    let value = prop_oneof![
        6 => (-4i8..=4).prop_map(|v| f32::from(v) * 0.5),
        3 => -1e3f32..1e3,
        1 => prop::sample::select(SPECIALS.to_vec()),
        1 => Just(f32::from_bits(0xffc0_0001)),
    ];
    prop::collection::vec(value, 1..300).prop_flat_map(|scores| {
        let k = scores.len();
        let order: Vec<u32> = (0..k as u32).collect();
        (
            Just(scores),
            1..=k,
            Just(order).prop_shuffle(),
            prop::collection::vec(0..=k, 0..8),
            Just((0..9).collect::<Vec<usize>>()).prop_shuffle(),
        )
    })
}

proptest! {
    #[test]
    fn fast_path_equals_readable(case in cases()) {
        let Case { rows, k, p, s, x, d, cfg } = case;
        let want = route_top_s(&x, &d, rows, k, p, s).unwrap();
        let got = route_top_s_fast_with(&x, &d, rows, k, p, s, &cfg).unwrap();
        prop_assert_eq!(&got.atoms, &want.atoms);
        prop_assert_eq!(bits(&got.scores), bits(&want.scores));
        let got = route_top_s_fast(&x, &d, rows, k, p, s).unwrap();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn online_selector_equals_readable((scores, s, order, mut cuts, merge_order) in selections()) {
        let want = select_top_s(&scores, s).unwrap();
        // Offer atoms in `order`, cut into tiles at `cuts`, one state per
        // tile, then merge the tiles in a shuffled order.
        cuts.push(0);
        cuts.push(scores.len());
        cuts.sort_unstable();
        let mut tiles: Vec<TopSState> = cuts
            .windows(2)
            .map(|w| {
                let mut st = TopSState::new(s);
                for &a in &order[w[0]..w[1]] {
                    st.offer(a, scores[a as usize]);
                }
                prop_assert!(st.len() <= s);
                Ok(st)
            })
            .collect::<Result<_, TestCaseError>>()?;
        let mut merged = TopSState::new(s);
        for &i in merge_order.iter().filter(|&&i| i < tiles.len()) {
            merged.merge(&tiles[i]).unwrap();
        }
        for (i, tile) in tiles.drain(..).enumerate() {
            if !merge_order.contains(&i) {
                merged.merge(&tile).unwrap();
            }
        }
        let got = merged.finish();
        prop_assert_eq!(got.len(), s);
        let as_bits = |v: &[(u32, f32)]| v.iter().map(|&(a, f)| (a, f.to_bits())).collect::<Vec<_>>();
        prop_assert_eq!(as_bits(&got), as_bits(&want));
    }
}
