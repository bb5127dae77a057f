//! HMM forward-backward: the host model against an independent f64
//! formulation and brute force (a linear-chain CRF's log-partition), the
//! simulator bit for bit against the host model on ragged shapes and
//! special values, and the GPU when one is present.

use ptxsmith::kernels::hmm::{self, Posteriors, host, launch};
use ptxsmith::runtime::{Backend, Context, Ran, cuda_for_tests, on_emulator};
use ptxsmith::{Error, Sm};

mod common;
use common::{bits, foreign_get, foreign_put};

fn lcg(seed: u32) -> impl FnMut() -> f32 {
    let mut s = seed;
    move || {
        s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (s >> 8) as f32 / (1u32 << 24) as f32
    }
}

struct Model {
    pi: Vec<f32>,
    a: Vec<f32>,
    b: Vec<f32>,
    lengths: Vec<u32>,
    batch: usize,
    t: usize,
    s: usize,
}

/// A normalised HMM (log of row-stochastic matrices) with random
/// emission log-probabilities.
fn model(batch: usize, t: usize, s: usize, seed: u32) -> Model {
    let mut r = lcg(seed);
    let norm_log = |v: Vec<f64>| -> Vec<f32> {
        let z: f64 = v.iter().sum();
        v.iter().map(|x| (x / z).ln() as f32).collect()
    };
    let pi = norm_log((0..s).map(|_| f64::from(r()) + 0.05).collect());
    let mut a = Vec::new();
    for _ in 0..s {
        a.extend(norm_log((0..s).map(|_| f64::from(r()) + 0.05).collect()));
    }
    let b = (0..batch * t * s)
        .map(|_| (r() * 0.95 + 0.05).ln())
        .collect();
    let lengths = (0..batch)
        .map(|i| match i % 4 {
            0 => t as u32,
            1 => (t / 2) as u32,
            2 => t.min(1) as u32,
            _ => (t as u32).saturating_sub(1),
        })
        .collect();
    Model {
        pi,
        a,
        b,
        lengths,
        batch,
        t,
        s,
    }
}

fn host_run(m: &Model) -> Posteriors {
    host::forward_backward(&m.pi, &m.a, &m.b, &m.lengths, m.batch, m.t, m.s).unwrap()
}

fn assert_same(got: &Posteriors, want: &Posteriors, what: &str) {
    assert_eq!(bits(&got.log_alpha), bits(&want.log_alpha), "{what}: alpha");
    assert_eq!(bits(&got.log_beta), bits(&want.log_beta), "{what}: beta");
    assert_eq!(
        bits(&got.log_likelihood),
        bits(&want.log_likelihood),
        "{what}: ll"
    );
    assert_eq!(bits(&got.gamma), bits(&want.gamma), "{what}: gamma");
    assert_eq!(bits(&got.xi), bits(&want.xi), "{what}: xi");
}

fn lse64(v: impl Iterator<Item = f64> + Clone) -> f64 {
    let m = v.clone().fold(f64::NEG_INFINITY, f64::max);
    if m == f64::NEG_INFINITY {
        return m;
    }
    m + v.map(|x| (x - m).exp()).sum::<f64>().ln()
}

#[test]
#[allow(clippy::needless_range_loop)]
fn host_model_is_close_to_an_f64_formulation() {
    let m = model(4, 40, 6, 1);
    let got = host_run(&m);
    let (t, s) = (m.t, m.s);
    let mut worst = (0f64, 0f64);
    for b in 0..m.batch {
        let len = m.lengths[b] as usize;
        let lb = |tt: usize, j: usize| f64::from(m.b[(b * t + tt) * s + j]);
        let la = |i: usize, j: usize| f64::from(m.a[i * s + j]);
        if len == 0 {
            assert_eq!(got.log_likelihood[b].to_bits(), 0);
            continue;
        }
        let mut alpha = vec![vec![0f64; s]; len];
        for j in 0..s {
            alpha[0][j] = f64::from(m.pi[j]) + lb(0, j);
        }
        for tt in 1..len {
            for j in 0..s {
                alpha[tt][j] = lse64((0..s).map(|i| alpha[tt - 1][i] + la(i, j))) + lb(tt, j);
            }
        }
        let ll = lse64(alpha[len - 1].iter().copied());
        let mut beta = vec![vec![0f64; s]; len];
        for tt in (0..len - 1).rev() {
            for i in 0..s {
                beta[tt][i] = lse64((0..s).map(|j| la(i, j) + lb(tt + 1, j) + beta[tt + 1][j]));
            }
        }
        let e = (f64::from(got.log_likelihood[b]) - ll).abs() / ll.abs().max(1.0);
        worst.0 = worst.0.max(e);
        assert!(e < 1e-5, "ll {b}: {} vs {ll}", got.log_likelihood[b]);
        for tt in 0..len {
            let mut gsum = 0f64;
            for i in 0..s {
                let k = (b * t + tt) * s + i;
                let ga = (alpha[tt][i] + beta[tt][i] - ll).exp();
                let eg = (f64::from(got.gamma[k]) - ga).abs();
                worst.1 = worst.1.max(eg);
                assert!(eg < 1e-5, "gamma {b} {tt} {i}: {} vs {ga}", got.gamma[k]);
                gsum += f64::from(got.gamma[k]);
                let ea = (f64::from(got.log_alpha[k]) - alpha[tt][i]).abs();
                assert!(
                    ea < 1e-5 * alpha[tt][i].abs().max(1.0),
                    "alpha {b} {tt} {i}"
                );
            }
            assert!(
                (gsum - 1.0).abs() < 1e-5,
                "gamma row {b} {tt} sums to {gsum}"
            );
        }
        let xsum: f64 = got.xi[b * s * s..(b + 1) * s * s]
            .iter()
            .map(|&v| f64::from(v))
            .sum();
        assert!(
            (xsum - (len - 1) as f64).abs() < 1e-4 * len as f64,
            "xi {b}: {xsum}"
        );
        // Past the length: -inf alpha/beta, zero gamma.
        for k in (b * t + len) * s..(b + 1) * t * s {
            assert_eq!(got.log_alpha[k], f32::NEG_INFINITY);
            assert_eq!(got.log_beta[k], f32::NEG_INFINITY);
            assert_eq!(got.gamma[k].to_bits(), 0);
        }
    }
    println!(
        "hmm host vs f64: worst relative log-likelihood error {:.2e}, worst gamma error {:.2e}",
        worst.0, worst.1
    );
}

#[test]
fn crf_log_partition_is_the_forward_pass_on_unnormalised_scores() {
    // Arbitrary real scores, not log-probabilities.
    let (s, t) = (3, 5);
    let mut r = lcg(7);
    let mut sc = move || r() * 6.0 - 3.0;
    let start: Vec<f32> = (0..s).map(|_| sc()).collect();
    let trans: Vec<f32> = (0..s * s).map(|_| sc()).collect();
    let unary: Vec<f32> = (0..t * s).map(|_| sc()).collect();
    let p = host::forward_backward(&start, &trans, &unary, &[t as u32], 1, t, s).unwrap();
    // log Z by brute force over all s^t label sequences.
    let mut scores = Vec::new();
    for code in 0..s.pow(t as u32) {
        let y: Vec<usize> = (0..t)
            .map(|k| (code / s.pow((t - 1 - k) as u32)) % s)
            .collect();
        let mut v = f64::from(start[y[0]]) + f64::from(unary[y[0]]);
        for k in 1..t {
            v += f64::from(trans[y[k - 1] * s + y[k]]) + f64::from(unary[k * s + y[k]]);
        }
        scores.push(v);
    }
    let log_z = lse64(scores.iter().copied());
    let got = f64::from(p.log_likelihood[0]);
    assert!(
        (got - log_z).abs() < 1e-5 * log_z.abs().max(1.0),
        "{got} vs {log_z}"
    );
    // And the simulator gives the host's bits for the CRF too.
    let sim = launch::run_on(
        &Context::sim(Sm::Sm80).default_stream(),
        &start,
        &trans,
        &unary,
        &[t as u32],
        1,
        t,
        s,
    )
    .unwrap();
    assert_same(&sim, &p, "crf");
}

#[test]
fn an_impossible_sequence_has_minus_inf_likelihood_and_nan_posteriors() {
    let mut m = model(2, 6, 4, 17);
    // Sequence 1 (length 3), position 1: every emission impossible.
    let (t, s) = (m.t, m.s);
    m.b[(t + 1) * s..(t + 2) * s].fill(f32::NEG_INFINITY);
    let want = host_run(&m);
    assert_eq!(want.log_likelihood[1], f32::NEG_INFINITY);
    let live = m.lengths[1] as usize * s;
    assert!(want.gamma[t * s..t * s + live].iter().all(|g| g.is_nan()));
    assert!(want.log_likelihood[0].is_finite());
    assert!(
        want.gamma[..m.lengths[0] as usize * s]
            .iter()
            .all(|g| g.is_finite())
    );
    let got = launch::run_on(
        &Context::sim(Sm::Sm80).default_stream(),
        &m.pi,
        &m.a,
        &m.b,
        &m.lengths,
        m.batch,
        m.t,
        m.s,
    )
    .unwrap();
    assert_same(&got, &want, "impossible sequence");
}

#[test]
fn log_sum_special_values() {
    let ls = |v: &[f32]| host::log_sum(v.iter().copied());
    assert_eq!(ls(&[f32::NEG_INFINITY; 3]), f32::NEG_INFINITY);
    assert_eq!(ls(&[0.0, f32::INFINITY, 1.0]), f32::INFINITY);
    assert!(ls(&[0.0, f32::NAN, f32::INFINITY]).is_nan());
    assert_eq!(ls(&[0.0]), 0.0);
    assert_eq!(ls(&[f32::NEG_INFINITY, 2.5]), 2.5);
}

#[test]
fn sim_equals_host_on_ragged_shapes_and_special_values() {
    for (batch, t, s, seed) in [
        (4, 1, 1, 10),
        (4, 9, 1, 11),
        (5, 7, 3, 12),
        (4, 6, 33, 13),
        (2, 4, 70, 14),
    ] {
        let mut m = model(batch, t, s, seed);
        let plain = host_run(&m);
        assert_same(
            &launch::run_on(
                &Context::sim(Sm::Sm80).default_stream(),
                &m.pi,
                &m.a,
                &m.b,
                &m.lengths,
                m.batch,
                m.t,
                m.s,
            )
            .unwrap(),
            &plain,
            &format!("{batch}x{t}x{s}"),
        );
        // An impossible transition, a -inf emission, +inf and NaN inside,
        // an empty sequence.
        m.a[0] = f32::NEG_INFINITY;
        m.b[s - 1] = f32::NEG_INFINITY;
        if t > 2 {
            m.b[s + s / 2] = f32::INFINITY;
            m.b[(t + 1) * s] = f32::NAN;
        }
        m.lengths[batch - 1] = 0;
        let special = host_run(&m);
        for sm in [Sm::Sm70, Sm::Sm90] {
            let got = launch::run_on(
                &Context::sim(sm).default_stream(),
                &m.pi,
                &m.a,
                &m.b,
                &m.lengths,
                m.batch,
                m.t,
                m.s,
            )
            .unwrap();
            assert_same(&got, &special, &format!("{batch}x{t}x{s} special {sm}"));
        }
        let last = batch - 1;
        assert_eq!(special.log_likelihood[last].to_bits(), 0, "length 0");
    }
}

#[test]
fn slice_api_and_bad_input() {
    let m = model(3, 5, 4, 21);
    let want = host_run(&m);
    for backend in [Backend::Host, Backend::Sim] {
        let (got, ran) =
            hmm::forward_backward(backend, &m.pi, &m.a, &m.b, &m.lengths, m.batch, m.t, m.s)
                .unwrap();
        assert_eq!(
            ran,
            if backend == Backend::Host {
                Ran::Host
            } else {
                Ran::Sim
            }
        );
        assert_same(&got, &want, "slice API");
    }
    let run = |pi: &[f32], a: &[f32], b: &[f32], l: &[u32], batch, t, s| {
        host::forward_backward(pi, a, b, l, batch, t, s).unwrap_err()
    };
    let e = run(&[], &[], &[], &[], 1, 1, 0);
    assert!(
        matches!(&e, Error::InvalidArgument(msg) if msg.contains("S = 0")),
        "{e}"
    );
    let e = run(&m.pi, &m.a, &m.b, &[1, 9, 1], 3, 5, 4);
    assert!(e.to_string().contains("lengths[1] = 9"), "{e}");
    let e = run(&m.pi, &m.a[1..], &m.b, &m.lengths, 3, 5, 4);
    assert!(e.to_string().contains("log_a has 15"), "{e}");
    let e = run(&[], &[], &[], &[], usize::MAX, 2, 2);
    assert!(e.to_string().contains("overflow"), "{e}");
}

#[test]
fn ptx_has_no_approximate_instruction_or_atomic_on_any_sm() {
    for sm in Sm::ALL {
        for m in hmm::ptx::variants(sm).unwrap() {
            for bad in [
                ".approx",
                "ex2.",
                "lg2.",
                ".ftz",
                "rcp.",
                "div.rn.f32",
                "sqrt.",
            ] {
                assert!(
                    !m.ptx.contains(bad),
                    "{} on {sm} contains `{bad}`",
                    m.kernel
                );
            }
            for line in m.ptx.lines() {
                let ins = line.trim_start().trim_start_matches(['@', '!']);
                assert!(
                    !ins.starts_with("atom.") && !ins.starts_with("red."),
                    "{line}"
                );
            }
        }
    }
}

#[test]
fn gpu_hmm_matches_the_host_model() {
    let Some(ctx) = cuda_for_tests() else { return };
    let st = ctx.default_stream();
    // Shorter sequences on the driver emulator (kernels on the simulator),
    // the same kernel variants.
    let shapes = if on_emulator(&ctx) {
        [(16, 30, 32), (1, 6, 1024)]
    } else {
        [(64, 100, 32), (2, 300, 1024)]
    };
    for (batch, t, s) in shapes {
        let m = model(batch, t, s, 31);
        let got = launch::run_on(&st, &m.pi, &m.a, &m.b, &m.lengths, m.batch, m.t, m.s).unwrap();
        assert_same(&got, &host_run(&m), &format!("gpu {batch}x{t}x{s}"));
    }
    // The slice API on the device.
    let m = model(5, 9, 40, 33);
    let (got, ran) = launch::forward_backward(
        Backend::Cuda,
        &m.pi,
        &m.a,
        &m.b,
        &m.lengths,
        m.batch,
        m.t,
        m.s,
    )
    .unwrap();
    assert_eq!(ran, Ran::Cuda);
    assert_same(&got, &host_run(&m), "slice API, Backend::Cuda");
}

#[test]
fn raw_entry_point_runs_on_foreign_memory() {
    raw_entry_point_on(&Context::sim(Sm::Sm80));
}

/// The same on plain driver allocations of a GPU or the driver emulator
/// (SKIP without one).
#[test]
fn gpu_raw_entry_point_runs_on_driver_allocations() {
    let Some(ctx) = cuda_for_tests() else { return };
    raw_entry_point_on(&ctx);
}

fn raw_entry_point_on(ctx: &Context) {
    let m = model(5, 21, 9, 13);
    let raw = ctx.default_stream().raw();
    let n = m.batch * m.t * m.s;
    let (pi, a, b) = (
        foreign_put(ctx, &m.pi),
        foreign_put(ctx, &m.a),
        foreign_put(ctx, &m.b),
    );
    let out = launch::RawOutputs {
        log_alpha: foreign_put(ctx, &vec![0f32; n]),
        log_beta: foreign_put(ctx, &vec![0f32; n]),
        log_likelihood: foreign_put(ctx, &vec![0f32; m.batch]),
        gamma: foreign_put(ctx, &vec![0f32; n]),
        xi: foreign_put(ctx, &vec![0f32; m.batch * m.s * m.s]),
    };
    // SAFETY: live simulator allocations of the stated lengths; outputs
    // overlap nothing; `raw` is this context's stream.
    unsafe { launch::forward_backward_raw(ctx, raw, pi, a, b, &m.lengths, m.batch, m.t, m.s, out) }
        .unwrap();
    ctx.synchronize().unwrap();
    let got = Posteriors {
        batch: m.batch,
        t: m.t,
        s: m.s,
        log_alpha: foreign_get(ctx, out.log_alpha, n),
        log_beta: foreign_get(ctx, out.log_beta, n),
        log_likelihood: foreign_get(ctx, out.log_likelihood, m.batch),
        gamma: foreign_get(ctx, out.gamma, n),
        xi: foreign_get(ctx, out.xi, m.batch * m.s * m.s),
    };
    assert_same(&got, &host_run(&m), "forward_backward_raw");
}
