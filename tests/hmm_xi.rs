//! `hmm_transitions`' tiling on the simulator, bit for bit against the host
//! model: a CTA task is 32 states `j` against 4 row blocks of 32 states
//! `i` (fewer where `⌈S16 / 32⌉` is not a multiple of 4, a short 16-row
//! block where `S16 % 32 = 16`), the steps in blocks of 32 through a
//! shared tile of `Q`, two steps an iteration with an odd last one, a
//! flag-free block's loop apart from a flagged one's; and one CTA looping
//! over several tasks (the tile reused across them).

use ptxsmith::Sm;
use ptxsmith::dsl::params::KernelParams;
use ptxsmith::kernels::hmm::{self, Posteriors, host, ptx};
use ptxsmith::runtime::{Context, LaunchConfig};

mod hmm_common;
use hmm_common::{Model, Rng, assert_same, issue_model, nan_bits, switching_model};

fn host_run(m: &Model) -> Posteriors {
    host::forward_backward(m.shape(), &m.inputs()).unwrap()
}

fn same_on(m: &Model, sm: Sm, what: &str) {
    let got = hmm::forward_backward_on(&Context::sim(sm).default_stream(), m.shape(), &m.inputs())
        .unwrap();
    assert_same(&got, &host_run(m), &format!("{what} on {sm}"));
}

/// Row-block groups with idle warps and short blocks, step counts of one
/// and two whole blocks, a partial odd block and none (lengths `t`, `t/2`,
/// `1`, `t − 1` by sequence).
#[test]
fn sim_equals_host_over_the_tiles() {
    // S 100: S16 112, 4 row blocks, the last one short; 4 state blocks j,
    // the last with 28 lanes past S. T 66: 65 steps (two blocks and an
    // odd one), 33 → 32 steps (one block), 1 → none, 65 → 64 (two).
    same_on(&issue_model(4, 66, 100, 5, true), Sm::Sm80, "S 100, T 66");
    // S 200: S16 208, 7 row blocks (a group of 4 and one of 3 with an idle
    // warp, the last block short). T 36: 35 steps, 18 → 17, 1, 35 → 34.
    same_on(&issue_model(4, 36, 200, 6, true), Sm::Sm90, "S 200, T 36");
    // S 16: one short row block, three idle warps, 16 lanes past S.
    same_on(&issue_model(3, 40, 16, 7, true), Sm::Sm80, "S 16, T 40");
}

/// The fallback: in the ring every step is flagged (the flagged blocks'
/// loop throughout, full and short row blocks); in the dense model with
/// transitions of `gap` and a few `−inf` emissions only some steps are,
/// so blocks mix flagged steps with plain ones (the ballot's bits).
#[test]
fn sim_equals_host_with_flagged_steps() {
    for (s, dwell, gap) in [(40, 45, -200f32), (48, 20, -1e30)] {
        let m = switching_model(2, 100, s, gap, dwell, 11);
        let (_, fb) = host::forward_backward_counted(m.shape(), &m.inputs()).unwrap();
        assert!(fb.backward > 0, "S {s}: no fallback");
        same_on(&m, Sm::Sm80, &format!("ring S {s}, dwell {dwell}"));
    }
    for (s, dwell, gap) in [(8, 13, -200f32), (40, 7, -1e30)] {
        let m = sparse_switches(s, dwell, gap);
        let (_, fb) = host::forward_backward_counted(m.shape(), &m.inputs()).unwrap();
        assert!(fb.backward > 0, "S {s}: no fallback");
        same_on(
            &m,
            Sm::Sm80,
            &format!("sparse switches S {s}, dwell {dwell}"),
        );
    }
}

/// The ring of [`switching_model`] whose emissions allow every state but
/// around the switches: the last step of each dwell allows only the
/// current state and the next step only the next one, so the path must
/// take the `gap` transition there (a fallback state with an `O(1)`
/// posterior) while the steps between have no fallback state (every `Q`
/// positive, every state able to stay): flagged steps every `dwell`
/// steps, at varying bits of the blocks.
fn sparse_switches(s: usize, dwell: usize, gap: f32) -> Model {
    let (batch, t) = (2, 100);
    let mut m = switching_model(batch, t, s, gap, dwell, 14);
    let mut r = Rng(15);
    for seq in 0..batch {
        for tt in 0..t {
            let c = (tt / dwell) % s;
            let row = &mut m.b[(seq * t + tt) * s..][..s];
            let pinned = tt % dwell == dwell - 1 || (tt > 0 && tt % dwell == 0);
            for (j, x) in row.iter_mut().enumerate() {
                *x = if !pinned || j == c {
                    r.normal() as f32
                } else {
                    f32::NEG_INFINITY
                };
            }
        }
    }
    m
}

/// One CTA (then two) runs every task of a batch, so each CTA reuses the
/// `Q` tile across tasks and sequences of other lengths: the kernels
/// launched by hand with the transition counts' grid cut down.
#[test]
fn transitions_with_fewer_ctas_than_tasks() {
    let m = issue_model(3, 40, 72, 21, true);
    let want = host_run(&m);
    for grid in [1u32, 2] {
        let xi = run_cut(&m, grid);
        assert_eq!(nan_bits(&xi), nan_bits(&want.xi), "grid {grid}");
    }
}

/// Every kernel of the pass on the simulator (sm_80 PTX), the transition
/// counts on `grid` CTAs; returns `xi`.
fn run_cut(m: &Model, grid: u32) -> Vec<f32> {
    let (batch, t, s) = (m.batch, m.t, m.s);
    let sm = Sm::Sm80;
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
    let run = |m: ptxsmith::dsl::PtxModule, grid: u32, threads: u32, args: Vec<_>| {
        st.launch(&m, LaunchConfig::linear(grid, threads), &args)
            .unwrap();
    };
    let pm = ptx::PrepMaxArgs {
        log_a: r!(a),
        prep: w!(prep),
        s: s32,
        sp: sp32,
    };
    run(
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
    let pgrid = (batch * chunks) as u32;
    run(
        ptx::generate_posteriors(sm).unwrap(),
        pgrid,
        ptx::THREADS,
        pa.args(),
    );
    let groups = ptx::transition_groups(s, sp);
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
        tasks: (batch * groups) as u64,
        groups: groups as u32,
        t: t32,
        s: s32,
        sp: sp32,
    };
    assert!(batch * groups > 2 * grid as usize);
    run(
        ptx::generate_transitions(sm).unwrap(),
        grid,
        ptx::XI_THREADS,
        xa.args(),
    );
    st.synchronize().unwrap();
    st.to_vec(&xi).unwrap()
}
