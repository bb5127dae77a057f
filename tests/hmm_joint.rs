//! Both HMM cluster recursions in one launch (`hmm_fwdbwd_cluster<n>_cap<c>`
//! after `hmm_fwdbwd_maxima`, issue 33): on the simulator (sm_90) every
//! output and workspace buffer of the joint launch equals the two cluster
//! launches' bit for bit at `n = 2` and `8` (ragged lengths, a length-0
//! and a length-1 sequence, the fallback, an impossible sequence), and the
//! whole pass equals the host model both where the launch takes the joint
//! kernel and where it falls back to the two launches.

use ptxsmith::Sm;
use ptxsmith::dsl::params::KernelParams;
use ptxsmith::exec::LaunchConfig;
use ptxsmith::kernels::hmm::{self, host, ptx};
use ptxsmith::runtime::Context;

mod hmm_common;
use hmm_common::{Model, assert_same, issue_model, nan_bits, switching_model};

const NAMES: [&str; 12] = [
    "alpha", "alpha_lo", "mb", "cnorm", "ll", "beta", "beta_lo", "dnorm", "w", "rh", "rl", "flags",
];

/// The recursions' outputs (forward: `alpha`, `alpha_lo`, `mb`, `cnorm`,
/// `ll`; backward: `beta`, `beta_lo`, `dnorm`, `w`, `rh`, `rl`, `flags`)
/// of the one-CTA kernels (`n = None`) or the cluster kernels over `n`
/// CTAs, on a simulated `sm`, after the two prep kernels.
fn recursion_outputs(m: &Model, sm: Sm, n: u32, joint: bool) -> Vec<Vec<u32>> {
    let ctx = Context::sim(sm);
    let st = ctx.default_stream();
    let (batch, t, s) = (m.batch, m.t, m.s);
    let sp = m.s.div_ceil(16) * 16;
    let cap = ptx::cap_for(s);
    let pi = st.upload(&m.pi).unwrap();
    let a = st.upload(&m.a).unwrap();
    let lb = st.upload(&m.b).unwrap();
    let lens = st.upload(&m.lengths).unwrap();
    let zeros = |k: usize| st.upload(&vec![0f32; k.max(1)]).unwrap();
    let mut prep = zeros(ptx::prep_len(sp));
    let (mut a_hat, mut a_til) = (zeros(sp * sp), zeros(sp * sp));
    let n_el = batch * t * s;
    let (mut alpha, mut alpha_lo) = (zeros(n_el), zeros(n_el));
    let (mut mb, mut cnorm, mut ll) = (zeros(batch * t), zeros(2 * batch * t), zeros(batch));
    let threads = ptx::THREADS;
    let pm = ptx::PrepMaxArgs {
        log_a: st.arg("a", &a).unwrap(),
        prep: st.arg_mut("prep", &mut prep).unwrap(),
        s: s as u32,
        sp: sp as u32,
    };
    let grid = LaunchConfig::linear((2 * s).div_ceil(threads as usize) as u32, threads);
    st.launch(&ptx::generate_prep_max(sm).unwrap(), grid, &pm.args())
        .unwrap();
    let pe = ptx::PrepExpArgs {
        log_a: st.arg("a", &a).unwrap(),
        prep: st.arg_mut("prep", &mut prep).unwrap(),
        a_hat: st.arg_mut("a_hat", &mut a_hat).unwrap(),
        a_til: st.arg_mut("a_til", &mut a_til).unwrap(),
        s: s as u32,
        sp: sp as u32,
    };
    let grid = LaunchConfig::linear(sp as u32, threads);
    st.launch(&ptx::generate_prep_exp(sm).unwrap(), grid, &pe.args())
        .unwrap();
    let fwd = ptx::ForwardArgs {
        log_pi: st.arg("pi", &pi).unwrap(),
        log_a: st.arg("a", &a).unwrap(),
        log_b: st.arg("b", &lb).unwrap(),
        lengths: st.arg("lengths", &lens).unwrap(),
        prep: st.arg_mut("prep", &mut prep).unwrap(),
        a_hat: st.arg_mut("a_hat", &mut a_hat).unwrap(),
        alpha: st.arg_mut("alpha", &mut alpha).unwrap(),
        alpha_lo: st.arg_mut("alpha_lo", &mut alpha_lo).unwrap(),
        mb: st.arg_mut("mb", &mut mb).unwrap(),
        cnorm: st.arg_mut("cnorm", &mut cnorm).unwrap(),
        ll: st.arg_mut("ll", &mut ll).unwrap(),
        t: t as u32,
        s: s as u32,
        sp: sp as u32,
    };
    let mut beta = zeros(n_el);
    let (mut beta_lo, mut rh, mut rl) = (zeros(n_el), zeros(n_el), zeros(n_el));
    let (mut dnorm, mut w) = (zeros(2 * batch * t), zeros(batch * t * sp));
    let mut flags = st.upload(&vec![0u32; (batch * t).max(1)]).unwrap();
    let bwd = ptx::BackwardArgs {
        log_a: st.arg("a", &a).unwrap(),
        log_b: st.arg("b", &lb).unwrap(),
        lengths: st.arg("lengths", &lens).unwrap(),
        prep: fwd.prep,
        a_til: st.arg_mut("a_til", &mut a_til).unwrap(),
        mb: fwd.mb,
        beta: st.arg_mut("beta", &mut beta).unwrap(),
        beta_lo: st.arg_mut("beta_lo", &mut beta_lo).unwrap(),
        dnorm: st.arg_mut("dnorm", &mut dnorm).unwrap(),
        w: st.arg_mut("w", &mut w).unwrap(),
        rh: st.arg_mut("rh", &mut rh).unwrap(),
        rl: st.arg_mut("rl", &mut rl).unwrap(),
        flags: st.arg_mut("flags", &mut flags).unwrap(),
        t: t as u32,
        s: s as u32,
        sp: sp as u32,
    };
    let mut cfg = LaunchConfig::linear(batch as u32 * n, threads);
    cfg.dynamic_smem_bytes = ptx::cluster_smem_bytes(sp, n) as u32;
    if joint {
        let mx = ptx::MaximaArgs {
            log_b: fwd.log_b,
            lengths: fwd.lengths,
            mb: fwd.mb,
            batch: batch as u32,
            t: t as u32,
            s: s as u32,
        };
        let grid = LaunchConfig::linear(ptx::maxima_ctas((batch * t) as u64), threads);
        st.launch(&ptx::generate_maxima(sm).unwrap(), grid, &mx.args())
            .unwrap();
        let j = ptx::JointArgs {
            log_pi: fwd.log_pi,
            log_a: fwd.log_a,
            log_b: fwd.log_b,
            lengths: fwd.lengths,
            prep: fwd.prep,
            a_hat: fwd.a_hat,
            a_til: bwd.a_til,
            alpha: fwd.alpha,
            alpha_lo: fwd.alpha_lo,
            mb: fwd.mb,
            cnorm: fwd.cnorm,
            ll: fwd.ll,
            beta: bwd.beta,
            beta_lo: bwd.beta_lo,
            dnorm: bwd.dnorm,
            w: bwd.w,
            rh: bwd.rh,
            rl: bwd.rl,
            flags: bwd.flags,
            batch: batch as u32,
            t: t as u32,
            s: s as u32,
            sp: sp as u32,
        };
        cfg.grid.0 *= 2;
        let k = ptx::generate_fwdbwd_cluster(sm, cap, n).unwrap();
        st.launch(&k, cfg, &j.args()).unwrap();
    } else {
        let k = ptx::generate_forward_cluster(sm, cap, n).unwrap();
        st.launch(&k, cfg, &fwd.args()).unwrap();
        let k = ptx::generate_backward_cluster(sm, cap, n).unwrap();
        st.launch(&k, cfg, &bwd.args()).unwrap();
    }
    let mut out: Vec<Vec<u32>> = [
        &alpha, &alpha_lo, &mb, &cnorm, &ll, &beta, &beta_lo, &dnorm, &w, &rh, &rl,
    ]
    .into_iter()
    .map(|b| nan_bits(&st.to_vec(b).unwrap()))
    .collect();
    out.push(st.to_vec(&flags).unwrap());
    out
}

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
            let want = recursion_outputs(&m, sm, n, false);
            let got = recursion_outputs(&m, sm, n, true);
            for ((g, w), name) in got.iter().zip(&want).zip(NAMES) {
                assert_eq!(g, w, "{what}, n = {n}: {name}");
            }
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
