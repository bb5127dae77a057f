//! Both HMM cluster recursions in one launch (`hmm_fwdbwd_cluster<n>_cap<c>`
//! after `hmm_fwdbwd_maxima`, issue 33): on the simulator (sm_90) every
//! output and workspace buffer of the joint launch equals the two cluster
//! launches' bit for bit at `n = 2` and `8` (ragged lengths, a length-0
//! and a length-1 sequence, the fallback, an impossible sequence), and the
//! whole pass equals the host model both where the launch takes the joint
//! kernel and where it falls back to the two launches.

use ptxsmith::Sm;
use ptxsmith::kernels::hmm::{self, host, ptx};
use ptxsmith::runtime::Context;

mod hmm_common;
use hmm_common::recursions::{Recursions, assert_same_outputs, recursion_outputs};
use hmm_common::{assert_same, issue_model, switching_model};

#[test]
fn joint_launch_gives_the_two_launches_bits() {
    let sm = Sm::Sm90;
    let mut ragged = issue_model(3, 4, 64, 7, true);
    ragged.lengths = vec![4, 0, 1];
    ragged.b[70] = f32::NEG_INFINITY;
    let mut fb = switching_model(2, 4, 64, -200.0, 2, 30);
    fb.lengths = vec![4, 3];
    let mut dead = issue_model(2, 4, 64, 11, true);
    let (t, s) = (dead.t, dead.s);
    dead.b[(t + 1) * s..(t + 2) * s].fill(f32::NEG_INFINITY);
    for (m, what) in [
        (ragged, "ragged, lengths 4 0 1"),
        (fb, "fallback"),
        (dead, "impossible"),
    ] {
        for n in [2, 8] {
            let want = recursion_outputs(&m, sm, Recursions::Cluster(n));
            let got = recursion_outputs(&m, sm, Recursions::Joint(n));
            assert_same_outputs(&got, &want, &format!("{what}, n = {n}"));
        }
    }
}

#[test]
fn joint_and_two_launch_paths_equal_the_host_model() {
    let sm = Sm::Sm90;
    let ctx = Context::sim(sm);
    let sms = ctx.multiprocessor_count();
    // S 80 → n 4 (cap 256: 3 resident CTAs an SM): batch 1 (8 CTAs) fits
    // the simulator's 4 SMs in one wave, batch 2 (16) does not.
    for (batch, joint) in [(1, true), (2, false)] {
        let mut m = issue_model(batch, 3, 80, 13, true);
        m.lengths[0] = 2;
        if batch > 1 {
            m.lengths = vec![1, 0];
        }
        let sp = 80;
        let cap = ptx::cap_for(m.s);
        let n = ptx::cluster_for(sm, m.s, sp, cap).unwrap();
        assert_eq!(n, 4);
        assert_eq!(
            ptx::joint_fits(sm, sms, batch, cap, n),
            joint,
            "batch {batch}"
        );
        let want = host::forward_backward(m.shape(), &m.inputs()).unwrap();
        let got = hmm::forward_backward_on(&ctx.default_stream(), m.shape(), &m.inputs()).unwrap();
        assert_same(&got, &want, &format!("batch {batch}, joint {joint}"));
    }
}

#[test]
fn joint_rule() {
    // The H200's 132 SMs at 4 resident CTAs (cap 256, n 8): batch 8
    // (128 CTAs) and 33 (528) in one wave, 34 and 64 not.
    for (batch, fits) in [(8, true), (33, true), (34, false), (64, false)] {
        assert_eq!(
            ptx::joint_fits(Sm::Sm90, 132, batch, 256, 8),
            fits,
            "{batch}"
        );
    }
}
