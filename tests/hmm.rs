//! HMM forward-backward: the host model against an f64 forward-backward
//! over the same f32 inputs (`hmm_common`) across lengths up to 2^20,
//! state counts and score magnitudes up to 1e30, the exact fallback for
//! underflowing states, a linear-chain CRF's log-partition against brute
//! force; the API and its checks; the raw entry point; the GPU (or the
//! driver emulator) when one is present. The simulator's bit-for-bit
//! sweeps are in `tests/hmm_sim.rs`.
//!
//! `cargo test --release --test hmm -- --nocapture` prints the worst
//! errors in the goals' units.

use ptxsmith::kernels::hmm::{self, Posteriors, Shape, host};
use ptxsmith::runtime::Stream;

mod common;
mod hmm_common;
use hmm_common::{
    Errors, MAGNITUDE_CASES, Model, Rng, at_magnitude, crf_scores, gaps_and_holes, host_run,
    issue_model, switching_model,
};

/// Compare every sequence of `m` with the reference; the worst errors.
fn check(m: &Model, p: &Posteriors, what: &str) -> Errors {
    let (t, s) = (m.t, m.s);
    let mut worst = Errors::default();
    for b in 0..m.batch {
        let len = m.lengths[b] as usize;
        let base = b * t * s;
        if len == 0 {
            assert_eq!(p.log_likelihood[b].to_bits(), 0, "{what}: length 0");
            assert!(
                p.xi[b * s * s..(b + 1) * s * s]
                    .iter()
                    .all(|&x| x.to_bits() == 0)
            );
        } else {
            let r = m.reference(b);
            let e = hmm_common::compare(
                &r,
                p.log_likelihood[b],
                &p.gamma[base..base + len * s],
                &p.xi[b * s * s..(b + 1) * s * s],
                &format!("{what}, sequence {b}"),
            );
            assert!(e.within_goals(), "{what}, sequence {b}: {e:?}");
            worst = worst.max(e);
            // log_alpha / log_beta keep their meaning: within a few ulps of
            // their (possibly large) reference values.
            for k in 0..len * s {
                for (got, want, name) in [
                    (p.log_alpha[base + k], r.log_alpha[k], "log_alpha"),
                    (p.log_beta[base + k], r.log_beta[k], "log_beta"),
                ] {
                    if want == f64::NEG_INFINITY {
                        assert_eq!(got, f32::NEG_INFINITY, "{what}: {name}[{b}, {k}]");
                    } else {
                        let err = (f64::from(got) - want).abs();
                        assert!(
                            err <= 1e-5 * want.abs().max(1.0),
                            "{what}: {name}[{b}, {k}] = {got}, reference {want}"
                        );
                    }
                }
            }
        }
        for k in base + len * s..base + t * s {
            assert_eq!(p.log_alpha[k], f32::NEG_INFINITY);
            assert_eq!(p.log_beta[k], f32::NEG_INFINITY);
            assert_eq!(p.gamma[k].to_bits(), 0);
        }
    }
    worst
}

fn report(what: &str, e: Errors) {
    println!(
        "hmm host vs f64 {what:<44} gamma {:.1e}  xi {:.1e}  ll {:.1e}",
        e.gamma, e.xi, e.ll
    );
}

#[test]
fn host_model_accuracy_does_not_decay_with_length() {
    let mut all = Errors::default();
    for (t, batch) in [(1, 2), (2, 4), (10, 4), (100, 4), (2_000, 4), (20_000, 2)] {
        let m = issue_model(batch, t, 4, t as u64, true);
        let e = check(&m, &host_run(&m), &format!("T = {t}"));
        report(&format!("S = 4, T = {t}"), e);
        all = all.max(e);
    }
    report("S = 4, T = 1 … 20 000", all);
}

#[test]
fn host_model_accuracy_2_pow_20_steps() {
    let m = issue_model(1, 1 << 20, 4, 20, false);
    let e = check(&m, &host_run(&m), "T = 2^20");
    report("S = 4, T = 2^20", e);
}

#[test]
fn host_model_accuracy_over_state_counts() {
    let mut all = Errors::default();
    for (s, t) in [
        (1, 50),
        (2, 300),
        (3, 300),
        (7, 300),
        (16, 300),
        (33, 200),
        (64, 100),
        (256, 40),
        (1024, 8),
        (4096, 3),
    ] {
        let batch = if s > 256 { 1 } else { 3 };
        let m = issue_model(batch, t, s, 100 + s as u64, true);
        let e = check(&m, &host_run(&m), &format!("S = {s}"));
        report(&format!("S = {s}, T = {t}"), e);
        all = all.max(e);
    }
    report("S = 1 … 4096", all);
}

#[test]
fn host_model_accuracy_does_not_decay_with_magnitude() {
    let mut all = Errors::default();
    for k in [1e4f32, 1e12, 1e30] {
        let mut per_k = Errors::default();
        for (c, how) in MAGNITUDE_CASES.iter().enumerate() {
            for (s, t) in [(4, 2_000), (16, 300)] {
                let base = issue_model(2, t, s, 7 + c as u64, true);
                let m = at_magnitude(&base, how, k, 11 + c as u64);
                let e = check(&m, &host_run(&m), &format!("{how}, k = {k:e}, S = {s}"));
                per_k = per_k.max(e);
            }
        }
        report(
            &format!("magnitudes {k:e} (9 constructions, S 4/16)"),
            per_k,
        );
        all = all.max(per_k);
    }
    report("magnitudes 1e4 … 1e30", all);
}

#[test]
fn host_model_accuracy_2_pow_20_steps_at_1e30() {
    // Per-step emission shifts of ±1e30 in exactly cancelling pairs (the
    // small emission parts round away at that magnitude), transitions
    // scaled by e^0.25 so that the log-likelihood is about T/4: the 1e30
    // maxima must cancel exactly without rounding the O(1) normalizers.
    // (With normalized transitions the exact log-likelihood would be the
    // sum of 2^20 roundings of the f32 row sums, about 1e-8 each: no f32
    // recursion resolves that to 2e-6.)
    let mut m = issue_model(1, 1 << 20, 4, 21, false);
    m.a.iter_mut().for_each(|x| *x += 0.25);
    let mut r = Rng(22);
    for pair in m.b.chunks_mut(8) {
        let k = 1e30f32 * (1.0 + r.uniform() as f32);
        pair[..4].iter_mut().for_each(|x| *x += k);
        pair[4..].iter_mut().for_each(|x| *x -= k);
    }
    let e = check(&m, &host_run(&m), "T = 2^20, ±1e30");
    report("S = 4, T = 2^20, emissions ±1e30", e);
}

/// Brute force over every label sequence of a linear-chain CRF: every
/// input shifted by its own maximum, path scores and the log-sum in
/// double-f64 (so that ties one f32 ulp apart at 1e30 keep the O(1)
/// differences between paths): `(log Z, marginals [T, S])`.
fn crf_brute_force(start: &[f32], trans: &[f32], unary: &[f32], s: usize) -> (f64, Vec<f64>) {
    use hmm_common::{Dd, dadd, dlse, dsub};
    let t = unary.len() / s;
    let max = |v: &[f32]| v.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
    let (sm, tm) = (max(start), max(trans));
    let um: Vec<f32> = unary.chunks(s).map(max).collect();
    let d = |x: f32, m: f32| dsub(Dd::of(f64::from(x)), Dd::of(f64::from(m)));
    let mut paths = Vec::new();
    let mut scores = Vec::new();
    for code in 0..s.pow(t as u32) {
        let y: Vec<usize> = (0..t)
            .map(|k| (code / s.pow((t - 1 - k) as u32)) % s)
            .collect();
        let mut v = dadd(d(start[y[0]], sm), d(unary[y[0]], um[0]));
        for k in 1..t {
            v = dadd(v, d(trans[y[k - 1] * s + y[k]], tm));
            v = dadd(v, d(unary[k * s + y[k]], um[k]));
        }
        paths.push(y);
        scores.push(v);
    }
    let lz = dlse(&scores);
    let mut shift = Dd::of(f64::from(sm));
    for &u in &um {
        shift = dadd(shift, Dd::of(f64::from(u)));
    }
    for _ in 1..t {
        shift = dadd(shift, Dd::of(f64::from(tm)));
    }
    let mut marg = vec![0f64; t * s];
    for (y, &v) in paths.iter().zip(&scores) {
        let p = dsub(v, lz).value().exp();
        for k in 0..t {
            marg[k * s + y[k]] += p;
        }
    }
    (dadd(shift, lz).value(), marg)
}

#[test]
fn crf_log_partition_matches_brute_force_at_any_magnitude() {
    let (s, t) = (3, 5);
    let mut worst = (0f64, 0f64);
    for (c, k) in [0.0f32, 1e4, 1e12, 1e30].into_iter().enumerate() {
        for seed in 0..4 {
            let (start, trans, unary) = crf_scores(s, t, k, 40 + 4 * c as u64 + seed);
            let shape = Shape::new(1, t, s).unwrap();
            let inputs = hmm::Inputs {
                log_pi: &start,
                log_a: &trans,
                log_b: &unary,
                lengths: &[t as u32],
            };
            let p = host::forward_backward(shape, &inputs).unwrap();
            let (log_z, marg) = crf_brute_force(&start, &trans, &unary, s);
            let got = f64::from(p.log_likelihood[0]);
            let e = (got - log_z).abs() / log_z.abs().max(1.0);
            assert!(e <= 2e-6, "k = {k:e}: log Z {got} vs brute force {log_z}");
            for (g, m) in p.gamma.iter().zip(&marg) {
                let eg = (f64::from(*g) - m).abs();
                assert!(eg <= 1e-5, "k = {k:e}: marginal {g} vs {m}");
                worst.1 = worst.1.max(eg);
            }
            worst.0 = worst.0.max(e);
        }
    }
    println!(
        "hmm CRF vs brute force (S 3, T 5, scores 1 … 1e30): log Z {:.1e} relative, marginals {:.1e}",
        worst.0, worst.1
    );
}

#[test]
fn fallback_takes_over_where_the_linear_sum_underflows() {
    let mut lines = Vec::new();
    for gap in [-200f32, -1e30] {
        let m = switching_model(3, 300, 4, gap, 10, 50);
        let (p, fb) = host::forward_backward_counted(m.shape(), &m.inputs()).unwrap();
        // Every switch (29 per full sequence) is a fallback, forwards and
        // backwards; the states the emissions rule out are too (their
        // linear sum is 0 as well).
        assert!(fb.forward >= 29 && fb.backward >= 29, "{gap}: {fb:?}");
        let e = check(&m, &p, &format!("ring with gap {gap:e}"));
        // The path is forced: every posterior is 0 or 1.
        assert!(p.gamma.iter().all(|&g| g == 0.0 || (g - 1.0).abs() < 1e-6));
        lines.push(format!("gap {gap:e}: {fb:?}, {e:?}"));
    }
    // Gaps mixed into a dense random model, emissions with holes.
    for (gap, holes) in [(-200f32, 0), (-1e30, 0), (-200.0, 30), (-1e30, 30)] {
        let mut m = issue_model(3, 400, 6, 60, true);
        gaps_and_holes(&mut m, gap, holes, &mut Rng(61));
        let (p, fb) = host::forward_backward_counted(m.shape(), &m.inputs()).unwrap();
        let e = check(&m, &p, &format!("dense, gap {gap:e}, {holes} % holes"));
        lines.push(format!(
            "dense gap {gap:e}, {holes} % −inf emissions: {fb:?}, {e:?}"
        ));
    }
    for l in lines {
        println!("hmm fallback: {l}");
    }
}

#[test]
fn unreachable_states_and_dead_ends_stay_finite() {
    let mut m = issue_model(3, 200, 5, 70, true);
    let s = m.s;
    // State 2: nothing leads to it and it cannot start. State 4: nothing
    // leaves it (it can only be the last state).
    for i in 0..s {
        m.a[i * s + 2] = f32::NEG_INFINITY;
        m.a[4 * s + i] = f32::NEG_INFINITY;
    }
    m.pi[2] = f32::NEG_INFINITY;
    let (p, fb) = host::forward_backward_counted(m.shape(), &m.inputs()).unwrap();
    let e = check(&m, &p, "unreachable state and dead end");
    for b in 0..m.batch {
        let len = m.lengths[b] as usize;
        for tt in 0..len {
            let g = &p.gamma[(b * m.t + tt) * s..][..s];
            assert_eq!(g[2], 0.0, "unreachable state has posterior {}", g[2]);
            if tt + 1 < len {
                assert_eq!(g[4], 0.0, "dead end before the last step");
            }
        }
    }
    println!("hmm unreachable state, dead end: {fb:?}, {e:?}");
    // The normalized issue model needs no fallback at all.
    let m = issue_model(2, 2_000, 4, 71, false);
    let (_, fb) = host::forward_backward_counted(m.shape(), &m.inputs()).unwrap();
    assert_eq!(fb, hmm::Fallbacks::default());
}

#[test]
fn an_impossible_sequence_has_minus_inf_likelihood_and_nan_posteriors() {
    let mut m = issue_model(2, 6, 4, 17, true);
    // Sequence 1 (length 3), position 1: every emission impossible.
    let (t, s) = (m.t, m.s);
    m.b[(t + 1) * s..(t + 2) * s].fill(f32::NEG_INFINITY);
    let want = host_run(&m);
    assert_eq!(want.log_likelihood[1], f32::NEG_INFINITY);
    let live = m.lengths[1] as usize * s;
    assert!(want.gamma[t * s..t * s + live].iter().all(|g| g.is_nan()));
    assert!(want.xi[s * s..].iter().all(|g| g.is_nan()));
    // The other sequence is unaffected.
    let one = Model {
        b: m.b[..t * s].to_vec(),
        lengths: vec![m.lengths[0]],
        batch: 1,
        ..m
    };
    let alone = host_run(&one);
    assert_eq!(alone.log_likelihood[0], want.log_likelihood[0]);
    assert_eq!(alone.gamma[..], want.gamma[..t * s]);
    check(&one, &alone, "the possible sequence");
}

#[test]
fn nan_and_plus_inf_inputs_make_the_likelihood_nan() {
    for (what, k) in [
        ("log_b NaN", 0),
        ("log_b +inf", 1),
        ("log_a NaN", 2),
        ("log_pi +inf", 3),
    ] {
        let mut m = issue_model(2, 8, 3, 80, false);
        match k {
            0 => m.b[5] = f32::NAN,
            1 => m.b[7] = f32::INFINITY,
            2 => m.a[4] = f32::NAN,
            _ => m.pi[1] = f32::INFINITY,
        }
        let p = host_run(&m);
        assert!(
            p.log_likelihood[0].is_nan(),
            "{what}: {}",
            p.log_likelihood[0]
        );
        assert_eq!(k >= 2, p.log_likelihood[1].is_nan(), "{what}");
    }
}

#[test]
fn log_sum_special_values() {
    let ls = |v: &[f32]| hmm::log_sum(v.iter().copied());
    assert_eq!(ls(&[f32::NEG_INFINITY; 3]), f32::NEG_INFINITY);
    assert_eq!(ls(&[0.0, f32::INFINITY, 1.0]), f32::INFINITY);
    assert!(ls(&[0.0, f32::NAN, f32::INFINITY]).is_nan());
    assert_eq!(ls(&[0.0]), 0.0);
    assert_eq!(ls(&[f32::NEG_INFINITY, 2.5]), 2.5);
}

#[test]
fn slice_api_and_bad_input() {
    use ptxsmith::Error;
    use ptxsmith::runtime::{Backend, Ran};
    let m = issue_model(3, 5, 4, 21, true);
    let (got, ran) = hmm::forward_backward(Backend::Host, m.shape(), &m.inputs()).unwrap();
    assert_eq!(ran, Ran::Host);
    hmm_common::assert_same(&got, &host_run(&m), "slice API");
    let e = Shape::new(1, 1, 0).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(msg) if msg.contains("S = 0")),
        "{e}"
    );
    let e = Shape::new(usize::MAX, 2, 2).unwrap_err();
    assert!(e.to_string().contains("overflow"), "{e}");
    let e = Shape::new(1, 1 << 27, 17).unwrap_err();
    assert!(e.to_string().contains("32-bit"), "{e}");
    let run = |pi: &[f32], a: &[f32], b: &[f32], l: &[u32]| {
        let inp = hmm::Inputs {
            log_pi: pi,
            log_a: a,
            log_b: b,
            lengths: l,
        };
        host::forward_backward(m.shape(), &inp).unwrap_err()
    };
    let e = run(&m.pi, &m.a, &m.b, &[1, 9, 1]);
    assert!(e.to_string().contains("lengths[1] = 9"), "{e}");
    let e = run(&m.pi, &m.a[1..], &m.b, &m.lengths);
    assert!(e.to_string().contains("log_a has 15"), "{e}");
    let e = run(&m.pi[1..], &m.a, &m.b, &m.lengths);
    assert!(e.to_string().contains("log_pi has 3"), "{e}");
    let e = run(&m.pi, &m.a, &m.b, &m.lengths[1..]);
    assert!(e.to_string().contains("lengths has 2"), "{e}");
    // The same checks before anything runs on a device backend.
    let inp = hmm::Inputs {
        log_pi: &m.pi,
        log_a: &m.a,
        log_b: &m.b[1..],
        lengths: &m.lengths,
    };
    let e = hmm::forward_backward(Backend::Sim, m.shape(), &inp).unwrap_err();
    assert!(e.to_string().contains("log_b has 59"), "{e}");
}

#[test]
fn ptx_has_no_approximate_instruction_or_atomic_on_any_sm() {
    use ptxsmith::Sm;
    for sm in Sm::ALL {
        for m in hmm::ptx::variants(sm).unwrap() {
            // `div.rn.f32` (the posteriors' `gamma = g / z` and `x = gamma
            // / s`) is IEEE division, correctly rounded; the approximate
            // forms are not allowed.
            for bad in [
                ".approx", "ex2.", "lg2.", ".ftz", "rcp.", "div.full", "sqrt.",
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
                if ins.starts_with("div.") && ins.contains(".f32") {
                    assert!(ins.starts_with("div.rn.f32"), "{line}");
                }
            }
        }
    }
}

#[test]
fn gpu_hmm_matches_the_host_model() {
    use ptxsmith::runtime::{Backend, Ran};
    use ptxsmith::testing::{cuda_for_tests, small_shapes};
    let Some(ctx) = cuda_for_tests() else { return };
    let st = ctx.default_stream();
    // Shorter sequences on the driver emulator (kernels on the simulator),
    // the same kernel variants (S 32: cap 256; 1024: the split 1024
    // variant; 1030 on a GPU: the 4096 variant).
    let shapes: &[(usize, usize, usize)] = if small_shapes(&ctx) {
        &[(16, 30, 32), (1, 6, 1024)]
    } else {
        &[(64, 100, 32), (2, 300, 1024), (2, 50, 1030), (2, 20_000, 4)]
    };
    for &(batch, t, s) in shapes {
        let m = issue_model(batch, t, s, 31, true);
        let got = hmm::forward_backward_on(&st, m.shape(), &m.inputs()).unwrap();
        hmm_common::assert_same(&got, &host_run(&m), &format!("gpu {batch}x{t}x{s}"));
    }
    // The fallback and large magnitudes.
    let m = switching_model(3, 40, 4, -1e30, 7, 33);
    let got = hmm::forward_backward_on(&st, m.shape(), &m.inputs()).unwrap();
    hmm_common::assert_same(&got, &host_run(&m), "gpu fallback");
    let base = issue_model(2, 20, 5, 34, true);
    let m = at_magnitude(&base, "everything ±k", 1e30, 35);
    let got = hmm::forward_backward_on(&st, m.shape(), &m.inputs()).unwrap();
    hmm_common::assert_same(&got, &host_run(&m), "gpu magnitude 1e30");
    // The slice API on the device.
    let m = issue_model(5, 9, 40, 33, true);
    let (got, ran) = hmm::forward_backward(Backend::Cuda, m.shape(), &m.inputs()).unwrap();
    assert_eq!(ran, Ran::Cuda);
    hmm_common::assert_same(&got, &host_run(&m), "slice API, Backend::Cuda");
}

#[test]
fn raw_entry_point_runs_on_foreign_memory() {
    raw_entry_point_on(&ptxsmith::runtime::Context::sim(ptxsmith::Sm::Sm80));
}

/// The same on plain driver allocations of a GPU or the driver emulator
/// (SKIP without one).
#[test]
fn gpu_raw_entry_point_runs_on_driver_allocations() {
    let Some(ctx) = ptxsmith::testing::cuda_for_tests() else {
        return;
    };
    raw_entry_point_on(&ctx);
}

fn raw_entry_point_on(ctx: &ptxsmith::runtime::Context) {
    use common::{foreign_get, foreign_put};
    let m = issue_model(5, 21, 9, 13, true);
    // The stream as another stack would hand it over.
    // SAFETY: this context's own default stream, alive throughout.
    let st = unsafe { Stream::from_raw(ctx, ctx.default_stream().raw()) }.unwrap();
    let n = m.batch * m.t * m.s;
    let inp = hmm::RawInputs {
        log_pi: foreign_put(ctx, &m.pi),
        log_a: foreign_put(ctx, &m.a),
        log_b: foreign_put(ctx, &m.b),
        lengths: &m.lengths,
    };
    let out = hmm::RawOutputs {
        log_alpha: foreign_put(ctx, &vec![0f32; n]),
        log_beta: foreign_put(ctx, &vec![0f32; n]),
        log_likelihood: foreign_put(ctx, &vec![0f32; m.batch]),
        gamma: foreign_put(ctx, &vec![0f32; n]),
        xi: foreign_put(ctx, &vec![0f32; m.batch * m.s * m.s]),
    };
    // SAFETY: live allocations of the stated lengths; outputs overlap
    // nothing; `st` is this context's stream.
    unsafe { hmm::forward_backward_raw(&st, m.shape(), inp, out) }.unwrap();
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
    hmm_common::assert_same(&got, &host_run(&m), "forward_backward_raw");
}
