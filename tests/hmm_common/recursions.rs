//! The HMM recursions launched by hand on the simulator (`tests/hmm_cluster.rs`,
//! `tests/hmm_joint.rs`): the two prep kernels, then the forward and
//! backward recursions as one-CTA kernels, cluster kernels, or the joint
//! cluster kernel after `hmm_fwdbwd_maxima`; every output and workspace
//! buffer read back as bits.

use super::{Model, nan_bits};
use ptxsmith::Sm;
use ptxsmith::dsl::params::KernelParams;
use ptxsmith::exec::LaunchConfig;
use ptxsmith::kernels::hmm::ptx;
use ptxsmith::runtime::Context;

/// The buffers [`recursion_outputs`] returns, in order.
pub const NAMES: [&str; 12] = [
    "alpha", "alpha_lo", "mb", "cnorm", "ll", "beta", "beta_lo", "dnorm", "w", "rh", "rl", "flags",
];

/// Which kernels run the recursions.
#[derive(Clone, Copy, Debug)]
pub enum Recursions {
    /// `hmm_forward` and `hmm_backward`, a CTA per sequence.
    OneCta,
    /// The forward and backward cluster kernels over `n` CTAs, two launches.
    Cluster(u32),
    /// `hmm_fwdbwd_maxima`, then both cluster recursions over `n` CTAs in
    /// one launch (`hmm_fwdbwd_cluster<n>_cap<c>`).
    Joint(u32),
}

/// The recursions' outputs ([`NAMES`]: forward `alpha`, `alpha_lo`, `mb`,
/// `cnorm`, `ll`; backward `beta`, `beta_lo`, `dnorm`, `w`, `rh`, `rl`,
/// `flags`) of the kernels `how` names, on a simulated `sm`, after the two
/// prep kernels.
pub fn recursion_outputs(m: &Model, sm: Sm, how: Recursions) -> Vec<Vec<u32>> {
    recursion_outputs_in(&Context::sim(sm), m, sm, how)
}

/// [`recursion_outputs`] in `ctx` (a simulator of `sm` whose settings the
/// caller chose, its scoreboard for one).
pub fn recursion_outputs_in(ctx: &Context, m: &Model, sm: Sm, how: Recursions) -> Vec<Vec<u32>> {
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
    let cluster = |n: u32| {
        let mut cfg = LaunchConfig::linear(batch as u32 * n, threads);
        cfg.dynamic_smem_bytes = ptx::cluster_smem_bytes(sp, n) as u32;
        cfg
    };
    match how {
        Recursions::OneCta => {
            let cfg = LaunchConfig::linear(batch as u32, threads);
            let k = ptx::generate_forward(sm, cap).unwrap();
            st.launch(&k, cfg, &fwd.args()).unwrap();
            let k = ptx::generate_backward(sm, cap).unwrap();
            st.launch(&k, cfg, &bwd.args()).unwrap();
        }
        Recursions::Cluster(n) => {
            let cfg = cluster(n);
            let k = ptx::generate_forward_cluster(sm, cap, n).unwrap();
            st.launch(&k, cfg, &fwd.args()).unwrap();
            let k = ptx::generate_backward_cluster(sm, cap, n).unwrap();
            st.launch(&k, cfg, &bwd.args()).unwrap();
        }
        Recursions::Joint(n) => {
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
            let mut cfg = cluster(n);
            cfg.grid.0 *= 2;
            let k = ptx::generate_fwdbwd_cluster(sm, cap, n).unwrap();
            st.launch(&k, cfg, &j.args()).unwrap();
        }
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

/// Every buffer of `got` equals `want`'s bit for bit (the message names
/// `what` and the buffer).
pub fn assert_same_outputs(got: &[Vec<u32>], want: &[Vec<u32>], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: buffer count");
    for ((g, w), name) in got.iter().zip(want).zip(NAMES) {
        assert_eq!(g, w, "{what}: {name}");
    }
}
