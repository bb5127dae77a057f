//! The HMM recursions across a thread-block cluster (sm_90+, issue 33): the
//! whole pass on the simulator equals the host model bit for bit on sm_90
//! and sm_100 (where the launch takes the cluster kernel, S ≥ 64) on small
//! shapes (ragged lengths, a fallback state, an impossible sequence), and
//! the cluster kernels (forward and backward) for `n = 2, 4, 8` give the
//! one-CTA kernels' bits in every output and workspace buffer
//! (S 16 and 40: ragged, fallback, impossible), each launched after the
//! same prep kernels.

use ptxsmith::Sm;
use ptxsmith::kernels::hmm::{self, host, ptx};
use ptxsmith::runtime::Context;

mod hmm_common;
use hmm_common::recursions::{Recursions, assert_same_outputs, recursion_outputs};
use hmm_common::{Model, Rng, assert_same, issue_model, switching_model};

const SMS: [Sm; 2] = [Sm::Sm90, Sm::Sm100];

fn same_on_cluster_targets(m: &Model, what: &str) {
    let want = host::forward_backward(m.shape(), &m.inputs()).unwrap();
    for sm in SMS {
        let s = m.s;
        let sp = m.s.div_ceil(16) * 16;
        assert!(
            ptx::cluster_for(sm, s, sp, ptx::cap_for(s)).is_some(),
            "{what}: takes the cluster path on {sm}"
        );
        let st = Context::sim(sm).default_stream();
        let got = hmm::forward_backward_on(&st, m.shape(), &m.inputs()).unwrap();
        assert_same(&got, &want, &format!("{what} on {sm}"));
    }
}

#[test]
fn cluster_path_equals_host_on_small_shapes() {
    // S 64 → n 8; S 80 (20 quads) → n 4; ragged lengths.
    for (batch, t, s, seed) in [(2, 4, 64, 1), (2, 3, 80, 2)] {
        let mut m = issue_model(batch, t, s, seed, true);
        same_on_cluster_targets(&m, &format!("{batch}x{t}x{s}"));
        // −inf transition and emission, an empty sequence.
        m.a[1] = f32::NEG_INFINITY;
        m.b[s - 1] = f32::NEG_INFINITY;
        m.lengths[batch - 1] = 0;
        same_on_cluster_targets(&m, &format!("{batch}x{t}x{s} special"));
    }
}

#[test]
fn cluster_path_equals_host_with_padded_states() {
    // S 70 → S16 80 (20 quads, n 4): ten padded states whose weights sit
    // at chain-major slots (`(j mod 4)·S16/4 + j/4`) and stay zero; a
    // chain of 20 steps (five v4 loads); ragged lengths, then the
    // fallback with padding.
    let mut m = issue_model(2, 4, 70, 5, true);
    m.lengths[1] = 3;
    same_on_cluster_targets(&m, "2x4x70 ragged");
    let m = switching_model(2, 4, 70, -200.0, 2, 31);
    let (_, fb) = host::forward_backward_counted(m.shape(), &m.inputs()).unwrap();
    assert!(fb.forward > 0 && fb.backward > 0, "{fb:?}");
    same_on_cluster_targets(&m, "2x4x70 fallback");
}

#[test]
fn cluster_path_equals_host_where_the_fallback_runs_and_when_impossible() {
    // A gap of −200 between the states forces the fallback (s_j < τ).
    let mut m = switching_model(2, 4, 64, -200.0, 2, 30);
    let (_, fb) = host::forward_backward_counted(m.shape(), &m.inputs()).unwrap();
    assert!(fb.forward > 0, "{fb:?}");
    same_on_cluster_targets(&m, "fallback");
    // Every emission −inf at one position of sequence 1: impossible.
    let (t, s) = (m.t, m.s);
    m.b[(t + 1) * s..(t + 2) * s].fill(f32::NEG_INFINITY);
    let want = host::forward_backward(m.shape(), &m.inputs()).unwrap();
    assert_eq!(want.log_likelihood[1], f32::NEG_INFINITY);
    same_on_cluster_targets(&m, "impossible");
}

#[test]
fn cluster_kernels_give_the_one_cta_kernels_bits_forward_and_backward() {
    // Below CLUSTER_MIN_STATES the launch keeps the one-CTA kernel; the
    // cluster kernels still run any S.
    let mut fb = switching_model(2, 4, 16, -200.0, 2, 30);
    fb.lengths = vec![4, 3];
    let mut dead = issue_model(2, 5, 16, 11, true);
    let (t, s) = (dead.t, dead.s);
    dead.b[(t + 1) * s..(t + 2) * s].fill(f32::NEG_INFINITY);
    let mut r = Rng(5);
    let mut ragged = issue_model(2, 5, 40, 9, true);
    let k = r.below(ragged.b.len());
    ragged.b[k] = f32::NEG_INFINITY;
    for (m, what) in [
        (fb, "fallback S 16"),
        (dead, "impossible S 16"),
        (ragged, "ragged S 40"),
    ] {
        for sm in SMS {
            let want = recursion_outputs(&m, sm, Recursions::OneCta);
            for n in [2, 4, 8] {
                if !(m.s.div_ceil(16) * 16 / 4).is_multiple_of(n as usize) {
                    continue;
                }
                let got = recursion_outputs(&m, sm, Recursions::Cluster(n));
                assert_same_outputs(&got, &want, &format!("{what} on {sm}, n = {n}"));
            }
        }
    }
}

/// Sequences of 3, 1, 1 and 2 positions (the issue model's ragged
/// lengths at T 3): the cluster kernels load a step's emissions and `Mb`
/// a step ahead only while that step exists (forward `t + 1 < len`,
/// backward `t − 1 > 0`), so a sequence of one or two positions takes
/// none or one, the last batch entry's loads stay inside the buffers
/// (the simulator's bounds checks), and the bits are the one-CTA
/// kernels', on two launches and the joint one.
#[test]
fn cluster_kernels_at_lengths_one_to_three_give_the_one_cta_bits() {
    let m = issue_model(4, 3, 64, 13, true);
    assert_eq!(m.lengths, [3, 1, 1, 2]);
    let sm = Sm::Sm90;
    let want = recursion_outputs(&m, sm, Recursions::OneCta);
    for n in [2, 4, 8] {
        let got = recursion_outputs(&m, sm, Recursions::Cluster(n));
        assert_same_outputs(&got, &want, &format!("lengths 3, 1, 1, 2, n = {n}"));
    }
    let got = recursion_outputs(&m, sm, Recursions::Joint(8));
    assert_same_outputs(&got, &want, "lengths 3, 1, 1, 2, joint");
}

/// More columns a CTA than a warp (S 144: 72 columns a CTA at n = 2,
/// 36 at n = 4), so the cluster maxima and the fallback flag go through
/// the CTA's warp slots before the peers' (`cluster_pmax`'s several-warp
/// path): the one-CTA kernels' bits, ragged and where the fallback runs.
#[test]
fn cluster_kernels_with_several_warps_of_columns_give_the_one_cta_bits() {
    let mut fb = switching_model(2, 4, 144, -200.0, 2, 30);
    fb.lengths = vec![4, 3];
    let mut ragged = issue_model(2, 4, 144, 21, true);
    ragged.b[100] = f32::NEG_INFINITY;
    for (m, what) in [(fb, "fallback S 144"), (ragged, "ragged S 144")] {
        let sm = Sm::Sm90;
        let want = recursion_outputs(&m, sm, Recursions::OneCta);
        for n in [2, 4] {
            let got = recursion_outputs(&m, sm, Recursions::Cluster(n));
            assert_same_outputs(&got, &want, &format!("{what} on {sm}, n = {n}"));
        }
    }
}

#[test]
fn cluster_choice_per_target_and_shape() {
    let pick = |sm: Sm, s: usize| {
        let sp = s.div_ceil(16) * 16;
        ptx::cluster_for(sm, s, sp, ptx::cap_for(s))
    };
    assert_eq!(pick(Sm::Sm80, 256), None, "no clusters below sm_90");
    assert_eq!(pick(Sm::Sm89, 64), None);
    assert_eq!(pick(Sm::Sm90, 256), Some(8));
    assert_eq!(pick(Sm::Sm100, 256), Some(8));
    assert_eq!(pick(Sm::Sm90, 64), Some(8));
    assert_eq!(pick(Sm::Sm90, 80), Some(4), "20 quads");
    assert_eq!(pick(Sm::Sm90, 48), None, "below CLUSTER_MIN_STATES");
    // 672 states: a 220.5 KiB slice at n = 8 fits the 227 KiB opt-in;
    // 688 (172 quads) only splits by 4, 462 KiB a CTA: the one-CTA kernel.
    assert_eq!(pick(Sm::Sm90, 672), Some(8));
    assert_eq!(pick(Sm::Sm90, 688), None);
    assert_eq!(pick(Sm::Sm90, 4096), None, "the 4096 variant");
}

/// The cluster path through the driver (a GPU of sm_90+, or the driver
/// emulator, whose default device is an sm_90): the same bits as the
/// host model; on an older GPU the one-CTA kernel runs the same shapes.
#[test]
fn gpu_cluster_path_matches_the_host_model() {
    use ptxsmith::testing::{cuda_for_tests, small_shapes};
    let Some(ctx) = cuda_for_tests() else { return };
    let st = ctx.default_stream();
    let shapes: &[(usize, usize, usize)] = if small_shapes(&ctx) {
        // S 320 at n = 8: a 50 KiB slice, above the 48 KiB a launch gets
        // without opting in (`cuFuncSetAttribute`).
        &[(2, 4, 64), (1, 3, 80), (1, 3, 320)]
    } else {
        &[(8, 200, 256), (3, 50, 80), (2, 30, 640)]
    };
    for &(batch, t, s) in shapes {
        let m = issue_model(batch, t, s, 41, true);
        let sp = s.div_ceil(16) * 16;
        let n = ptx::cluster_for(ctx.sm(), s, sp, ptx::cap_for(s));
        assert_eq!(
            n.is_some(),
            ctx.sm().supports(ptxsmith::Feature::Cluster),
            "{s} states on {}",
            ctx.sm()
        );
        let got = hmm::forward_backward_on(&st, m.shape(), &m.inputs()).unwrap();
        let want = host::forward_backward(m.shape(), &m.inputs()).unwrap();
        assert_same(&got, &want, &format!("gpu {batch}x{t}x{s}, cluster {n:?}"));
    }
    let m = switching_model(2, 4, 64, -200.0, 2, 42);
    let got = hmm::forward_backward_on(&st, m.shape(), &m.inputs()).unwrap();
    let want = host::forward_backward(m.shape(), &m.inputs()).unwrap();
    assert_same(&got, &want, "gpu fallback S 64");
}
