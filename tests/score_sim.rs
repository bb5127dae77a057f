//! The score kernels on the CPU PTX simulator, bit for bit against the host
//! model: ragged shapes (rows 37, K 1000, P 67, s 5), P = 1, FMA-sensitive
//! near ties (no contraction), duplicate scores, NaN and Inf scores, s = K,
//! the single-split and the K-split (merge) paths, and a small proptest.
//! NaN scores are compared as "both NaN" (PTX leaves NaN bits unspecified).

use proptest::prelude::*;
use ptxsmith::Sm;
use ptxsmith::kernels::score;
use ptxsmith::kernels::score::host::{self, TopS};
use ptxsmith::kernels::score::launch::{self, RoutePlan};
use ptxsmith::kernels::score::ptx::ScoreTuning;
use ptxsmith::runtime::Context;
use ptxsmith::runtime::backend::{Backend, Ran};

/// A small tuning that keeps simulator runs short (32×32 tiles, 64 threads).
const SMALL: ScoreTuning = ScoreTuning {
    bm: 32,
    bn: 32,
    bk: 8,
    tm: 4,
    tn: 4,
    threads: 64,
    vec4: false,
};

/// A fresh simulator context (its traffic counters start at zero).
fn sim() -> Context {
    Context::sim(Sm::Sm80)
}

fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut st = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            st = st
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((st >> 40) as f32) / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

fn same_score(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

#[track_caller]
fn assert_same_scores(got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            same_score(*g, *w),
            "score {i}: got {g:e} ({:#x}), want {w:e} ({:#x})",
            g.to_bits(),
            w.to_bits()
        );
    }
}

#[track_caller]
fn assert_same_top(got: &TopS, want: &TopS) {
    assert_eq!((got.rows, got.s), (want.rows, want.s));
    for r in 0..want.rows {
        let (ga, gs) = got.row(r);
        let (wa, ws) = want.row(r);
        assert_eq!(ga, wa, "row {r} atoms");
        for (g, w) in gs.iter().zip(ws) {
            assert!(same_score(*g, *w), "row {r}: score {g:e} vs {w:e}");
        }
    }
}

/// Route on a fresh simulator with `t` and `splits`; checks the download.
#[allow(clippy::too_many_arguments)]
fn route_sim(
    x: &[f32],
    d: &[f32],
    rows: usize,
    k: usize,
    p: usize,
    s: usize,
    t: ScoreTuning,
    splits: u32,
) -> TopS {
    let ctx = sim();
    let plan = RoutePlan::with_splits(rows, k, &t, splits);
    let got = launch::route_top_s_planned_on(
        &ctx.default_stream(),
        score::Route {
            shape: score::ScoreShape { rows, k, p },
            s,
        },
        t,
        plan,
        x,
        d,
    )
    .unwrap();
    let tr = ctx.traffic();
    assert_eq!(
        tr.bytes_downloaded,
        (rows * s * 8) as u64,
        "only the shortlists are downloaded"
    );
    assert_eq!(tr.launches, if plan.splits > 1 { 2 } else { 1 });
    got
}

#[test]
fn score_block_ragged_default_tuning_is_bit_exact() {
    let (rows, k, p) = (37, 1000, 67);
    let (x, d) = (values(rows * p, 1), values(k * p, 2));
    let ctx = sim();
    let got = launch::score_block_on(
        &ctx.default_stream(),
        score::ScoreShape { rows, k, p },
        None,
        &x,
        &d,
    )
    .unwrap();
    assert_same_scores(&got, &host::score_block(&x, &d, rows, k, p).unwrap());
}

#[test]
fn score_block_small_tiles_and_p1() {
    for (rows, k, p) in [(37, 100, 67), (5, 70, 1), (33, 33, 9), (1, 1, 1)] {
        let (x, d) = (values(rows * p, 3), values(k * p, 4));
        let ctx = sim();
        let got = launch::score_block_on(
            &ctx.default_stream(),
            score::ScoreShape { rows, k, p },
            Some(SMALL),
            &x,
            &d,
        )
        .unwrap();
        assert_same_scores(&got, &host::score_block(&x, &d, rows, k, p).unwrap());
    }
}

#[test]
fn route_ragged_default_tuning_split_and_merged() {
    let (rows, k, p, s) = (37, 1000, 67, 5);
    let (x, d) = (values(rows * p, 5), values(k * p, 6));
    let want = host::route_top_s(&x, &d, rows, k, p, s).unwrap();
    let t = ScoreTuning::route_default_for(Sm::Sm80);
    // The default plan on the simulator's 4 SMs splits K (merge path).
    let plan = RoutePlan::new(rows, k, s, &t, sim().multiprocessor_count());
    assert!(plan.splits > 1, "{plan:?}");
    assert_same_top(&route_sim(&x, &d, rows, k, p, s, t, plan.splits), &want);
    // One split: no merge.
    assert_same_top(&route_sim(&x, &d, rows, k, p, s, t, 1), &want);
}

/// The default route tuning with one-column staging, whose whole `P`
/// chunks run unguarded and whose last, partial chunk is peeled off: `P` a
/// multiple of `bk` (no partial chunk), below `bk` (only the partial
/// chunk), and both, with an infinity in the last column (the padding must
/// stay `+0.0` in both operands).
#[test]
fn route_default_one_column_staging_whole_and_partial_chunks() {
    let t = ScoreTuning::route_default_for(Sm::Sm80);
    assert!(!t.vec4);
    for (rows, k, p, s) in [(9, 300, 32, 6), (9, 150, 7, 4), (5, 200, 37, 3)] {
        let (mut x, d) = (values(rows * p, 21), values(k * p, 22));
        x[p - 1] = f32::INFINITY;
        let want = host::route_top_s(&x, &d, rows, k, p, s).unwrap();
        assert_same_top(&route_sim(&x, &d, rows, k, p, s, t, 1), &want);
    }
}

/// Many atom tiles per split, the default plan (K split over the
/// simulator's 4 SMs, then merged), with `s` below and above the 32 of the
/// warp pre-filter.
#[test]
fn route_many_tiles_default_plan() {
    for (rows, s) in [(40, 4), (9, 40)] {
        let (k, p) = (2048, 5);
        let (x, d) = (values(rows * p, 13), values(k * p, 14));
        let want = host::route_top_s(&x, &d, rows, k, p, s).unwrap();
        let ctx = sim();
        let got = launch::route_top_s_on(
            &ctx.default_stream(),
            score::Route {
                shape: score::ScoreShape { rows, k, p },
                s,
            },
            None,
            &x,
            &d,
        )
        .unwrap();
        assert_eq!(ctx.traffic().bytes_downloaded, (rows * s * 8) as u64);
        assert_eq!(ctx.traffic().launches, 2, "split and merged");
        assert_same_top(&got, &want);
    }
}

/// 16-byte staging loads (`vec4`, chosen by default when `P % 4 = 0`):
/// ragged rows and atoms, `P` a multiple of 4 but not of `bk`, `P = 4`.
#[test]
fn vec4_staging_is_bit_exact() {
    let (rows, k, p, s) = (37, 1000, 68, 5);
    let (x, d) = (values(rows * p, 17), values(k * p, 18));
    let ctx = sim();
    let got = launch::score_block_on(
        &ctx.default_stream(),
        score::ScoreShape { rows, k, p },
        None,
        &x,
        &d,
    )
    .unwrap();
    assert_same_scores(&got, &host::score_block(&x, &d, rows, k, p).unwrap());
    let got = launch::route_top_s_on(
        &ctx.default_stream(),
        score::Route {
            shape: score::ScoreShape { rows, k, p },
            s,
        },
        None,
        &x,
        &d,
    )
    .unwrap();
    assert_same_top(&got, &host::route_top_s(&x, &d, rows, k, p, s).unwrap());
    let small4 = ScoreTuning {
        vec4: true,
        ..SMALL
    };
    for (rows, k, p, s) in [(9, 70, 4, 3), (33, 65, 12, 7), (5, 40, 36, 40)] {
        let (x, d) = (values(rows * p, 19), values(k * p, 20));
        let ctx = sim();
        let got = launch::score_block_on(
            &ctx.default_stream(),
            score::ScoreShape { rows, k, p },
            Some(small4),
            &x,
            &d,
        )
        .unwrap();
        assert_same_scores(&got, &host::score_block(&x, &d, rows, k, p).unwrap());
        let want = host::route_top_s(&x, &d, rows, k, p, s).unwrap();
        for splits in [1, 2] {
            assert_same_top(&route_sim(&x, &d, rows, k, p, s, small4, splits), &want);
        }
    }
    // P not a multiple of 4 with vec4 asked for: refused.
    let (x, d) = (values(3 * 6, 21), values(10 * 6, 22));
    let e = launch::score_block_on(
        &sim().default_stream(),
        score::ScoreShape {
            rows: 3,
            k: 10,
            p: 6,
        },
        Some(small4),
        &x,
        &d,
    )
    .unwrap_err();
    assert!(e.to_string().contains("vec4"), "{e}");
}

#[test]
fn route_backend_sim_reports_sim() {
    let (rows, k, p, s) = (9, 70, 5, 3);
    let (x, d) = (values(rows * p, 7), values(k * p, 8));
    let (top, ran) = launch::route_top_s(
        Backend::Sim,
        score::Route {
            shape: score::ScoreShape { rows, k, p },
            s,
        },
        Some(SMALL),
        &x,
        &d,
    )
    .unwrap();
    assert_eq!(ran, Ran::Sim);
    assert_same_top(&top, &host::route_top_s(&x, &d, rows, k, p, s).unwrap());
    let (sc, ran) =
        launch::score_block(Backend::Sim, score::ScoreShape { rows, k, p }, &x, &d).unwrap();
    assert_eq!(ran, Ran::Sim);
    assert_same_scores(&sc, &host::score_block(&x, &d, rows, k, p).unwrap());
}

#[test]
fn route_p1_and_s_equal_k() {
    let (rows, k, p) = (7, 70, 1);
    let (x, d) = (values(rows * p, 9), values(k * p, 10));
    for s in [1, 4, 33, 70] {
        let want = host::route_top_s(&x, &d, rows, k, p, s).unwrap();
        for splits in [1, 3] {
            assert_same_top(&route_sim(&x, &d, rows, k, p, s, SMALL, splits), &want);
        }
    }
}

/// Large s: the route state grows over many tiles while not full, and the
/// merge folds each split's list in several chunks of 128.
#[test]
fn route_large_s_over_merge_chunks() {
    let (rows, k, p, s) = (3, 600, 4, 300);
    let (x, d) = (values(rows * p, 15), values(k * p, 16));
    let want = host::route_top_s(&x, &d, rows, k, p, s).unwrap();
    for splits in [1, 2] {
        assert_same_top(&route_sim(&x, &d, rows, k, p, s, SMALL, splits), &want);
    }
}

#[test]
fn near_ties_route_like_separate_rounding_not_fma() {
    let (rows, k, p) = (6, 40, 8);
    for seed in [1, 2] {
        let case = host::fma_sensitive_case(rows, k, p, seed).unwrap();
        let want = host::route_top_s(&case.x, &case.d, rows, k, p, case.s).unwrap();
        let fused = host::fma_route_top_s(&case.x, &case.d, rows, k, p, case.s).unwrap();
        assert_ne!(want.row(case.row).0, fused.row(case.row).0);
        let got = route_sim(&case.x, &case.d, rows, k, p, case.s, SMALL, 2);
        assert_same_top(&got, &want);
        let ctx = sim();
        let sc = launch::score_block_on(
            &ctx.default_stream(),
            score::ScoreShape { rows, k, p },
            Some(SMALL),
            &case.x,
            &case.d,
        )
        .unwrap();
        assert_same_scores(
            &sc,
            &host::score_block(&case.x, &case.d, rows, k, p).unwrap(),
        );
    }
}

#[test]
fn duplicate_zero_nan_and_inf_scores() {
    let (rows, k, p, s) = (5, 67, 3, 9);
    let mut x = values(rows * p, 11);
    let mut d = values(k * p, 12);
    // Duplicate atoms (equal scores: ties go to the smaller atom).
    for a in [10, 20, 30, 60] {
        let src: Vec<f32> = d[5 * p..6 * p].to_vec();
        d[a * p..(a + 1) * p].copy_from_slice(&src);
    }
    // Negated duplicates (equal |score|, opposite sign).
    let neg: Vec<f32> = d[7 * p..8 * p].iter().map(|v| -v).collect();
    d[40 * p..41 * p].copy_from_slice(&neg);
    // Zero atoms (±0 scores), an Inf atom, NaN atoms.
    d[41 * p..42 * p].fill(0.0);
    d[42 * p..43 * p].fill(-0.0);
    d[50 * p] = f32::INFINITY;
    d[51 * p] = f32::NAN;
    d[52 * p + 1] = f32::NAN;
    // Row 1 is all zeros: every score is ±0 or NaN (Inf·0).
    x[p..2 * p].fill(0.0);
    // Row 2 holds an Inf: many Infs and NaNs.
    x[2 * p] = f32::NEG_INFINITY;
    let want = host::route_top_s(&x, &d, rows, k, p, s).unwrap();
    for splits in [1, 2, 3] {
        assert_same_top(&route_sim(&x, &d, rows, k, p, s, SMALL, splits), &want);
    }
    let want_all = host::route_top_s(&x, &d, rows, k, p, k).unwrap();
    assert_same_top(&route_sim(&x, &d, rows, k, p, k, SMALL, 2), &want_all);
    let ctx = sim();
    let sc = launch::score_block_on(
        &ctx.default_stream(),
        score::ScoreShape { rows, k, p },
        Some(SMALL),
        &x,
        &d,
    )
    .unwrap();
    assert_same_scores(&sc, &host::score_block(&x, &d, rows, k, p).unwrap());
}

/// The device entry points on the simulator: a dictionary uploaded once is
/// routed against several batches (per batch only `x` goes up and exactly
/// the `rows · s · 8` bytes of pairs come down), and the score block of
/// device buffers; both equal the host model. Shape, alignment and
/// context mistakes are refused as typed errors before anything runs.
#[test]
fn device_entry_points_keep_the_dictionary_resident() {
    let (rows, k, p, s) = (9, 300, 4, 4);
    let ctx = sim();
    let st = ctx.default_stream();
    let d = values(k * p, 23);
    let start = ctx.traffic();
    let dd = st.upload(&d).unwrap();
    let batches = 3u64;
    for batch in 0..batches {
        let x = values(rows * p, 24 + batch);
        let t0 = ctx.traffic();
        let dx = st.upload(&x).unwrap();
        let top = launch::route_top_s_dev(
            &st,
            score::Route {
                shape: score::ScoreShape { rows, k, p },
                s,
            },
            Some(SMALL),
            &dx,
            &dd,
        )
        .unwrap();
        assert_eq!((top.rows(), top.s()), (rows, s));
        assert_eq!(top.pairs().len(), 2 * rows * s);
        let got = top.download(&st).unwrap();
        let moved = ctx.traffic().since(&t0);
        assert_eq!(moved.bytes_uploaded, (rows * p * 4) as u64, "batch {batch}");
        assert_eq!(moved.uploads, 1, "batch {batch}: only x goes up");
        assert_eq!(
            moved.bytes_downloaded,
            (rows * s * 8) as u64,
            "batch {batch}"
        );
        assert_eq!(moved.downloads, 1, "batch {batch}");
        assert_same_top(&got, &host::route_top_s(&x, &d, rows, k, p, s).unwrap());
    }
    let total = ctx.traffic().since(&start);
    assert_eq!(
        total.bytes_uploaded,
        (k * p * 4) as u64 + batches * (rows * p * 4) as u64,
        "D uploaded once"
    );

    // The score block of resident buffers, downloaded separately.
    let x = values(rows * p, 30);
    let dx = st.upload(&x).unwrap();
    let mut out = ctx.alloc::<f32>(rows * k).unwrap();
    launch::score_block_dev(
        &st,
        score::ScoreShape { rows, k, p },
        Some(SMALL),
        &dx,
        &dd,
        &mut out,
    )
    .unwrap();
    assert_same_scores(
        &st.to_vec(&out).unwrap(),
        &host::score_block(&x, &d, rows, k, p).unwrap(),
    );

    // An output of the wrong length.
    let mut short = ctx.alloc::<f32>(rows * k - 1).unwrap();
    let e = launch::score_block_dev(
        &st,
        score::ScoreShape { rows, k, p },
        Some(SMALL),
        &dx,
        &dd,
        &mut short,
    )
    .unwrap_err();
    assert!(
        matches!(&e, ptxsmith::Error::InvalidArgument(m) if m.contains("out has")),
        "{e}"
    );
    // A vec4 tuning on an `x` that starts 4 bytes into its allocation.
    let small4 = ScoreTuning {
        vec4: true,
        ..SMALL
    };
    let mut padded = vec![0.0f32];
    padded.extend_from_slice(&x);
    let dpad = st.upload(&padded).unwrap();
    let xs = dpad.slice(1..).unwrap();
    let e = launch::score_block_dev(
        &st,
        score::ScoreShape { rows, k, p },
        Some(small4),
        &xs,
        &dd,
        &mut out,
    )
    .unwrap_err();
    assert!(
        matches!(&e, ptxsmith::Error::InvalidArgument(m) if m.contains("16-byte aligned")),
        "{e}"
    );
    let e = launch::route_top_s_dev(
        &st,
        score::Route {
            shape: score::ScoreShape { rows, k, p },
            s,
        },
        Some(small4),
        &xs,
        &dd,
    )
    .unwrap_err();
    assert!(
        matches!(&e, ptxsmith::Error::InvalidArgument(m) if m.contains("16-byte aligned")),
        "{e}"
    );
    // The same misaligned slice without vec4 is fine.
    let top = launch::route_top_s_dev(
        &st,
        score::Route {
            shape: score::ScoreShape { rows, k, p },
            s,
        },
        Some(SMALL),
        &xs,
        &dd,
    )
    .unwrap();
    assert_same_top(
        &top.download(&st).unwrap(),
        &host::route_top_s(&x, &d, rows, k, p, s).unwrap(),
    );
    // A buffer of another context.
    let other = sim();
    let foreign = other.upload(&x).unwrap();
    let e = launch::route_top_s_dev(
        &st,
        score::Route {
            shape: score::ScoreShape { rows, k, p },
            s,
        },
        Some(SMALL),
        &foreign,
        &dd,
    )
    .unwrap_err();
    assert!(matches!(e, ptxsmith::Error::WrongContext { .. }), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]
    #[test]
    fn small_shapes_route_like_the_host(
        rows in 1usize..12,
        k in 1usize..90,
        p in 1usize..10,
        s_frac in 0.0f64..1.0,
        splits in 1u32..4,
        seed in any::<u64>(),
    ) {
        let s = 1 + ((k - 1) as f64 * s_frac) as usize;
        let (x, d) = (values(rows * p, seed), values(k * p, seed ^ 0x55));
        let want = host::route_top_s(&x, &d, rows, k, p, s).unwrap();
        assert_same_top(&route_sim(&x, &d, rows, k, p, s, SMALL, splits), &want);
    }
}

/// Every tuning that is some SM's default (the per-SM choices of
/// `ScoreTuning::default_for` / `route_default_for`, each with and without
/// vec4 staging) runs on the simulator and equals the host model: results
/// never depend on the tuning.
#[test]
fn every_per_sm_default_tuning_matches_the_host_model() {
    let mut tunings: Vec<ScoreTuning> = Vec::new();
    for sm in ptxsmith::Sm::ALL {
        for t in [
            ScoreTuning::default_for(sm),
            ScoreTuning::route_default_for(sm),
        ] {
            for t in [t, ScoreTuning { vec4: true, ..t }] {
                if !tunings.contains(&t) {
                    tunings.push(t);
                }
            }
        }
    }
    // The sm_75 route tile is one of them, and differs from the others.
    assert!(tunings.contains(&ScoreTuning::route_default_for(ptxsmith::Sm::Sm75)));
    assert!(tunings.len() >= 6, "{tunings:?}");
    let (rows, k, p, s) = (37, 300, 12, 5);
    let (x, d) = (values(rows * p, 41), values(k * p, 42));
    let want = host::route_top_s_fast(&x, &d, rows, k, p, s).unwrap();
    let block = host::score_block(&x, &d, rows, k, p).unwrap();
    for t in tunings {
        let ctx = sim();
        let st = ctx.default_stream();
        if t.check_route().is_ok() {
            let got = launch::route_top_s_on(
                &st,
                score::Route {
                    shape: score::ScoreShape { rows, k, p },
                    s,
                },
                Some(t),
                &x,
                &d,
            )
            .unwrap();
            assert_eq!(got, want, "route {t:?}");
        }
        if t.check_score().is_ok() {
            let got =
                launch::score_block_on(&st, score::ScoreShape { rows, k, p }, Some(t), &x, &d)
                    .unwrap();
            assert_same_scores(&got, &block);
        }
    }
}
