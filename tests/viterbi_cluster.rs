//! Viterbi across a thread-block cluster (sm_90 on, `65 ≤ S ≤ 256`; issue
//! 33): the simulator, with its race, barrier and initialisation checks,
//! gives the host model's paths and scores bit for bit on sm_90, sm_100 and
//! sm_120, and the one-CTA kernel's (sm_80) too, on ragged lengths, parts
//! of fewer than 32 predecessors, ties and NaN placed across the warps'
//! parts, infinities; the GPU (or the driver emulator, an sm_90) when one
//! is present.

use ptxsmith::kernels::viterbi::{launch, ptx};
use ptxsmith::testing::{cuda_for_tests, small_shapes};
use ptxsmith::{Feature, Sm};

mod common;
#[path = "common/viterbi.rs"]
mod viterbi_model;
use viterbi_model::{Model, assert_same};

const CLUSTER_SMS: [Sm; 3] = [Sm::Sm90, Sm::Sm100, Sm::Sm120];

/// Host, one-CTA kernel (sm_80) and cluster kernel (every cluster target)
/// agree bit for bit.
fn same_everywhere(m: &Model, what: &str) {
    let want = m.host();
    assert_same(&m.sim(Sm::Sm80), &want, &format!("{what} one CTA"));
    for sm in CLUSTER_SMS {
        assert!(
            ptx::cluster::uses_cluster(sm, m.s),
            "{what}: cluster on {sm}"
        );
        assert_same(&m.sim(sm), &want, &format!("{what} cluster {sm}"));
    }
}

#[test]
fn cluster_kernel_equals_host_and_one_cta_kernel_on_ragged_shapes() {
    // S 65 (a part of one predecessor, a CTA of one column), 100, 128
    // (four whole parts), 200, 256 (eight whole parts, every lane).
    for (batch, t, s, seed) in [
        (5, 4, 65, 1),
        (3, 6, 100, 2),
        (2, 5, 128, 3),
        (2, 4, 200, 4),
        (3, 5, 256, 5),
    ] {
        same_everywhere(&Model::new(batch, t, s, seed), &format!("{batch}x{t}x{s}"));
    }
}

#[test]
fn ties_and_nan_across_the_parts_follow_the_scan_rule() {
    let (t, s) = (3, 256);
    // Flat transitions and emissions: the best predecessor is the best
    // previous score.
    let flat = |pi: Vec<f32>| Model {
        pi,
        a: vec![-0.5; s * s],
        b: vec![-0.25; t * s],
        lengths: vec![t as u32],
        batch: 1,
        t,
        s,
    };
    // A tie between the last predecessor of part 0 and the first of part
    // 1: the lower state wins.
    let mut pi = vec![-5.0; s];
    pi[31] = 0.0;
    pi[32] = 0.0;
    let m = flat(pi);
    assert_eq!(m.host().paths[0], 31);
    same_everywhere(&m, "tie 31/32");
    // A tie between parts 2 and 7, and a lower maximum in part 0.
    let mut pi = vec![-5.0; s];
    pi[0] = -1.0;
    pi[70] = 0.0;
    pi[250] = 0.0;
    let m = flat(pi);
    assert_eq!(m.host().paths[0], 70);
    same_everywhere(&m, "tie 70/250");
    // A NaN in part 5 after a maximum in part 1: the NaN wins (and is
    // kept); a second NaN later does not replace it.
    let mut pi = vec![-5.0; s];
    pi[40] = 0.0;
    pi[170] = f32::NAN;
    pi[200] = f32::NAN;
    same_everywhere(&flat(pi), "NaN after a maximum");
    // A NaN in part 0 (the fold's start) and a larger value later.
    let mut pi = vec![-5.0; s];
    pi[3] = f32::NAN;
    pi[100] = 10.0;
    same_everywhere(&flat(pi), "NaN first");
    // NaN candidates made by the scan itself, from finite-looking parts:
    // +inf + −inf (a +inf score, an impossible transition into column 3;
    // a −inf score, a +inf transition into column 200), after a maximum.
    let mut m = flat(vec![-5.0; s]);
    m.pi[10] = 0.0;
    m.pi[50] = f32::INFINITY;
    m.a[50 * s + 3] = f32::NEG_INFINITY;
    m.pi[140] = f32::NEG_INFINITY;
    m.a[140 * s + 200] = f32::INFINITY;
    let want = m.host();
    assert!(
        want.scores[0].is_nan() || want.paths[1] == 50,
        "{:?}",
        &want.paths
    );
    same_everywhere(&m, "inf - inf candidates");
}

#[test]
fn infinities_empty_and_one_step_sequences() {
    let mut m = Model::new(6, 5, 150, 9);
    m.b[..m.s].fill(f32::NEG_INFINITY);
    m.a[0] = f32::NEG_INFINITY;
    m.a[m.s * m.s - 1] = f32::INFINITY;
    m.b[m.s + 7] = f32::INFINITY;
    m.b[2 * m.s + 130] = f32::NAN;
    m.lengths = vec![5, 0, 1, 2, 5, 3];
    same_everywhere(&m, "specials");
    // Every transition impossible: -inf scores, the lowest states.
    let mut m = Model::new(2, 4, 96, 10);
    m.a.fill(f32::NEG_INFINITY);
    same_everywhere(&m, "impossible");
}

#[test]
fn kernel_choice_per_target_and_states() {
    use ptx::cluster::uses_cluster;
    assert!(!uses_cluster(Sm::Sm80, 256), "no clusters below sm_90");
    assert!(!uses_cluster(Sm::Sm89, 100));
    assert!(uses_cluster(Sm::Sm90, 256) && uses_cluster(Sm::Sm100a, 65));
    assert!(
        !uses_cluster(Sm::Sm90, 64),
        "small S keeps the one-CTA kernel"
    );
    assert!(
        !uses_cluster(Sm::Sm90, 257),
        "above the cluster's 256 columns"
    );
    assert!(!uses_cluster(Sm::Sm90, 4096));
    for sm in Sm::ALL {
        let names: Vec<String> = (ptx::variants(sm).unwrap().iter())
            .map(|m| m.kernel.clone())
            .collect();
        assert_eq!(
            names.contains(&ptx::cluster::kernel_name()),
            sm.supports(Feature::Cluster),
            "{sm}: {names:?}"
        );
    }
}

/// Through the driver (a GPU, or the driver emulator on CI, an sm_90): the
/// host model's bits; on a GPU without clusters the one-CTA kernel runs.
#[test]
fn gpu_viterbi_cluster_matches_the_host_model() {
    let Some(ctx) = cuda_for_tests() else { return };
    let st = ctx.default_stream();
    let shapes: &[(usize, usize, usize)] = if small_shapes(&ctx) {
        &[(2, 4, 100), (1, 3, 256)]
    } else {
        &[(64, 200, 256), (8, 100, 100), (3, 50, 200)]
    };
    for &(batch, t, s) in shapes {
        let m = Model::new(batch, t, s, 77);
        let got = launch::viterbi_on(&st, m.shape(), &m.lengths, &m.pi, &m.a, &m.b).unwrap();
        assert_same(
            &got,
            &m.host(),
            &format!("gpu {batch}x{t}x{s} on {}", ctx.sm()),
        );
    }
}
