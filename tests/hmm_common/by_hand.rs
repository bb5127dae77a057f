//! The whole HMM pass launched kernel by kernel on the simulator
//! (`tests/hmm_sim.rs`, `tests/hmm_xi.rs`): prep, forward, backward,
//! posteriors, transitions, a CTA per sequence for the recursions, with
//! the transition counts' task count and grid the caller's, and the
//! simulated instructions of each kernel counted.

use super::Model;
use ptxsmith::Sm;
use ptxsmith::dsl::PtxModule;
use ptxsmith::dsl::params::KernelParams;
use ptxsmith::kernels::hmm::ptx;
use ptxsmith::runtime::{Context, LaunchConfig};

/// The kernels of a pass, in launch order (the two prep kernels are one).
pub const KERNELS: [&str; 5] = ["prep", "forward", "backward", "posteriors", "transitions"];

/// What [`run_by_hand`] gives back.
pub struct ByHand {
    pub gamma: Vec<f32>,
    pub xi: Vec<f32>,
    /// Simulated PTX instructions of each of [`KERNELS`].
    pub instructions: [u64; 5],
}

/// Every kernel of the pass over `m` on a simulated `sm`, one launch each
/// (the transition counts in CTAs of `xi_threads` threads, on `xi_grid`
/// CTAs), synchronised after each launch.
pub fn run_by_hand(m: &Model, sm: Sm, xi_threads: u32, xi_grid: u32) -> ByHand {
    let xi_groups = ptx::transition_groups(m.s, m.s.div_ceil(16) * 16, xi_threads);
    let (batch, t, s) = (m.batch, m.t, m.s);
    let ctx = Context::sim(sm);
    let st = ctx.default_stream();
    let sp = s.div_ceil(16) * 16;
    let up = |v: &[f32]| st.upload(v).unwrap();
    let (pi, a, b) = (up(&m.pi), up(&m.a), up(&m.b));
    let lens = st.upload(&m.lengths).unwrap();
    let f = |n: usize| ctx.alloc::<f32>(n.max(1)).unwrap();
    let n = batch * t * s;
    let (mut alpha, mut beta, mut ll, mut gamma, mut xi) =
        (f(n), f(n), f(batch), f(n), f(batch * s * s));
    let (mut prep, mut a_hat, mut a_til) = (f(ptx::prep_len(sp)), f(sp * sp), f(sp * sp));
    let (mut mb, mut cn, mut dn) = (f(batch * t), f(2 * batch * t), f(2 * batch * t));
    let mut flags = ctx.alloc::<u32>(batch * t).unwrap();
    let (mut bl, mut w, mut rh, mut rl) = (f(n), f(batch * t * sp), f(n), f(n));
    let count = || ctx.with_sim(|x| x.total_instructions()).unwrap();
    let mut instructions = [0u64; 5];
    let (t32, s32, sp32) = (t as u32, s as u32, sp as u32);
    macro_rules! r {
        ($x:expr) => {
            st.arg("in", &$x).unwrap()
        };
    }
    macro_rules! w {
        ($x:expr) => {
            st.arg_mut("out", &mut $x).unwrap()
        };
    }
    let mut run = |k: usize, m: PtxModule, grid: u32, threads: u32, args: Vec<_>| {
        let c0 = count();
        st.launch(&m, LaunchConfig::linear(grid, threads), &args)
            .unwrap();
        st.synchronize().unwrap();
        instructions[k] += count() - c0;
    };
    let pm = ptx::PrepMaxArgs {
        log_a: r!(a),
        prep: w!(prep),
        s: s32,
        sp: sp32,
    };
    run(
        0,
        ptx::generate_prep_max(sm).unwrap(),
        2,
        ptx::THREADS,
        pm.args(),
    );
    let pe = ptx::PrepExpArgs {
        log_a: r!(a),
        prep: w!(prep),
        a_hat: w!(a_hat),
        a_til: w!(a_til),
        s: s32,
        sp: sp32,
    };
    run(
        0,
        ptx::generate_prep_exp(sm).unwrap(),
        64,
        ptx::THREADS,
        pe.args(),
    );
    let cap = ptx::cap_for(s);
    let fa = ptx::ForwardArgs {
        log_pi: r!(pi),
        log_a: r!(a),
        log_b: r!(b),
        lengths: r!(lens),
        prep: w!(prep),
        a_hat: w!(a_hat),
        alpha: w!(alpha),
        alpha_lo: w!(gamma),
        mb: w!(mb),
        cnorm: w!(cn),
        ll: w!(ll),
        t: t32,
        s: s32,
        sp: sp32,
    };
    let seqs = batch as u32;
    run(
        1,
        ptx::generate_forward(sm, cap).unwrap(),
        seqs,
        ptx::THREADS,
        fa.args(),
    );
    let ba = ptx::BackwardArgs {
        log_a: r!(a),
        log_b: r!(b),
        lengths: r!(lens),
        prep: w!(prep),
        a_til: w!(a_til),
        mb: w!(mb),
        beta: w!(beta),
        beta_lo: w!(bl),
        dnorm: w!(dn),
        w: w!(w),
        rh: w!(rh),
        rl: w!(rl),
        flags: w!(flags),
        t: t32,
        s: s32,
        sp: sp32,
    };
    run(
        2,
        ptx::generate_backward(sm, cap).unwrap(),
        seqs,
        ptx::THREADS,
        ba.args(),
    );
    let chunks = t.div_ceil(8).clamp(1, 64);
    let pa = ptx::PosteriorArgs {
        lengths: r!(lens),
        alpha: w!(alpha),
        gamma: w!(gamma),
        beta: w!(beta),
        beta_lo: w!(bl),
        cnorm: w!(cn),
        dnorm: w!(dn),
        w: w!(w),
        tasks: (batch * chunks) as u64,
        chunks: chunks as u32,
        t: t32,
        s: s32,
        sp: sp32,
    };
    run(
        3,
        ptx::generate_posteriors(sm).unwrap(),
        (batch * chunks) as u32,
        ptx::THREADS,
        pa.args(),
    );
    let xa = ptx::TransitionArgs {
        log_a: r!(a),
        prep: w!(prep),
        a_til: w!(a_til),
        lengths: r!(lens),
        gamma: w!(gamma),
        w: w!(w),
        rh: w!(rh),
        rl: w!(rl),
        flags: w!(flags),
        xi: w!(xi),
        tasks: (batch * xi_groups) as u64,
        groups: xi_groups as u32,
        t: t32,
        s: s32,
        sp: sp32,
    };
    run(
        4,
        ptx::generate_transitions(sm).unwrap(),
        xi_grid,
        xi_threads,
        xa.args(),
    );
    ByHand {
        gamma: st.to_vec(&gamma).unwrap(),
        xi: st.to_vec(&xi).unwrap(),
        instructions,
    }
}
