//! Viterbi: the host model against brute force over every path, the
//! simulator bit for bit against the host model on ragged shapes and
//! special values, the tie and NaN rules, bad input, and the GPU when one
//! is present.

use ptxsmith::kernels::viterbi::{self, NO_STATE, host, launch};
use ptxsmith::runtime::{Backend, Context, Ran, Stream};
use ptxsmith::testing::{cuda_for_tests, small_shapes};
use ptxsmith::{Error, Sm};

mod common;
#[path = "common/viterbi.rs"]
mod viterbi_model;
use common::{bits, foreign_get, foreign_put};
use viterbi_model::{Model, assert_same};

/// The score of a path, summed left to right like the recursion.
fn path_score(m: &Model, b: usize, path: &[u32]) -> f32 {
    let emit = |t: usize, j: u32| m.b[(b * m.t + t) * m.s + j as usize];
    let mut acc = m.pi[path[0] as usize] + emit(0, path[0]);
    for t in 1..path.len() {
        acc = acc + m.a[path[t - 1] as usize * m.s + path[t] as usize] + emit(t, path[t]);
    }
    acc
}

#[test]
fn host_model_equals_brute_force_over_every_path() {
    for (s, t, seed) in [(1, 5, 1), (2, 6, 2), (3, 5, 3), (4, 6, 4), (4, 1, 5)] {
        let m = Model::new(4, t, s, seed);
        let got = m.host();
        for b in 0..m.batch {
            let len = m.lengths[b] as usize;
            let row = &got.paths[b * t..(b + 1) * t];
            assert!(row[len..].iter().all(|&x| x == NO_STATE));
            if len == 0 {
                assert_eq!(got.scores[b].to_bits(), 0);
                continue;
            }
            // Every path of length `len`, in lexicographic order: the best
            // score, and the first path reaching it.
            let mut best = f32::NEG_INFINITY;
            let mut best_path = Vec::new();
            for code in 0..s.pow(len as u32) {
                let path: Vec<u32> = (0..len)
                    .map(|k| ((code / s.pow((len - 1 - k) as u32)) % s) as u32)
                    .collect();
                let sc = path_score(&m, b, &path);
                if sc > best {
                    best = sc;
                    best_path = path;
                }
            }
            assert_eq!(got.scores[b].to_bits(), best.to_bits(), "S={s} T={t} b={b}");
            // The returned path's own score is the best one (ties among
            // paths are improbable with these inputs; the tie rule is
            // tested separately).
            assert_eq!(
                path_score(&m, b, &row[..len]).to_bits(),
                best.to_bits(),
                "S={s} T={t} b={b}"
            );
            assert_eq!(&row[..len], &best_path[..], "S={s} T={t} b={b}");
        }
    }
}

#[test]
fn ties_go_to_the_lowest_state_and_nan_is_defined() {
    // All scores equal: every step's best predecessor and the final
    // state are state 0.
    let (s, t) = (3, 4);
    let m = Model {
        pi: vec![-1.0; s],
        a: vec![-0.5; s * s],
        b: vec![-0.25; t * s],
        lengths: vec![t as u32],
        batch: 1,
        t,
        s,
    };
    let got = m.host();
    assert_eq!(got.paths, vec![0, 0, 0, 0]);
    assert_eq!(got.scores[0], -1.0 - 0.25 + 3.0 * (-0.5 - 0.25));
    assert_same(&m.sim(Sm::Sm80), &got, "ties");
    // A NaN emission at state 2, t = 1: it wins there and propagates.
    let mut nan = m;
    nan.b[s + 2] = f32::NAN;
    let got = nan.host();
    assert!(got.scores[0].is_nan());
    assert_eq!(got.paths[1], 2, "{:?}", got.paths);
    assert_same(&nan.sim(Sm::Sm80), &got, "nan");
    // Host rule itself.
    assert!(host::better(1.0, 0.0) && !host::better(0.0, 0.0));
    assert!(host::better(f32::NAN, 0.0) && !host::better(f32::NAN, f32::NAN));
    assert!(!host::better(0.0, f32::NAN));
}

#[test]
fn ties_inside_a_group_of_predecessors_go_to_the_lowest_state() {
    // The kernel loads predecessors in groups of four (1-4, 5-8, then one
    // at a time): states 2 and 3 tie at the start (one group), 6 and 7
    // too where S 9 has them; the lowest wins, as on the host.
    for s in [5, 9] {
        let t = 4;
        let mut pi = vec![-5.0; s];
        pi[2] = 0.0;
        pi[3] = 0.0;
        let m = Model {
            pi,
            a: vec![-0.5; s * s],
            b: vec![-0.25; t * s],
            lengths: vec![t as u32],
            batch: 1,
            t,
            s,
        };
        let got = m.host();
        assert_eq!(got.paths, vec![2, 0, 0, 0], "S {s}");
        for sm in [Sm::Sm80, Sm::Sm90] {
            assert_same(&m.sim(sm), &got, &format!("ties S {s} {sm}"));
        }
        let mut late = m;
        late.pi = vec![-5.0; s];
        late.pi[s - 2] = 0.0;
        late.pi[s - 1] = 0.0;
        let got = late.host();
        assert_eq!(got.paths[0], s as u32 - 2, "S {s}");
        assert_same(&late.sim(Sm::Sm90), &got, &format!("late ties S {s}"));
    }
}

#[test]
fn sim_equals_host_on_ragged_shapes_and_special_values() {
    for (batch, t, s, seed) in [
        (5, 1, 1, 10),
        (5, 7, 1, 11),
        (6, 9, 3, 12),
        (4, 6, 33, 13),
        (3, 5, 70, 14),
        (2, 3, 300, 15),
    ] {
        let mut m = Model::new(batch, t, s, seed);
        let plain = m.host();
        assert_same(&m.sim(Sm::Sm80), &plain, &format!("{batch}x{t}x{s}"));
        // A -inf emission row, an impossible transition, +inf and NaN
        // inside, a length-0 sequence.
        m.b[..s].fill(f32::NEG_INFINITY);
        m.a[0] = f32::NEG_INFINITY;
        if m.b.len() > 2 * s {
            m.b[s + s / 2] = f32::INFINITY;
        }
        if batch > 1 && t > 1 {
            m.b[(t + 1) * s - 1] = f32::NAN;
            m.lengths[batch - 1] = 0;
        }
        let special = m.host();
        for sm in [Sm::Sm70, Sm::Sm90] {
            assert_same(
                &m.sim(sm),
                &special,
                &format!("{batch}x{t}x{s} special {sm}"),
            );
        }
    }
}

#[test]
fn device_entry_point_writes_paths_and_scores_on_the_device() {
    let m = Model::new(3, 6, 5, 21);
    let ctx = Context::sim(Sm::Sm80);
    let st = ctx.default_stream();
    let (pi, a, b) = (
        st.upload(&m.pi).unwrap(),
        st.upload(&m.a).unwrap(),
        st.upload(&m.b).unwrap(),
    );
    let mut paths = ctx.alloc::<u32>(m.batch * m.t).unwrap();
    let mut scores = ctx.alloc::<f32>(m.batch).unwrap();
    let before = st.traffic();
    launch::viterbi_dev(
        &st,
        m.shape(),
        &m.lengths,
        &pi,
        &a,
        &b,
        launch::DeviceOutputs {
            paths: &mut paths,
            scores: &mut scores,
        },
    )
    .unwrap();
    let t = st.traffic().since(&before);
    assert_eq!(
        (t.uploads, t.downloads, t.launches),
        (1, 0, 1),
        "only the lengths go up"
    );
    let want = m.host();
    assert_eq!(paths.to_vec().unwrap(), want.paths);
    assert_eq!(bits(&scores.to_vec().unwrap()), bits(&want.scores));
    // Slice API on every backend but Cuda.
    for backend in [Backend::Host, Backend::Sim] {
        let (got, ran) =
            viterbi::viterbi(backend, m.shape(), &m.lengths, &m.pi, &m.a, &m.b).unwrap();
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
}

#[test]
fn bad_input_is_a_typed_error_naming_the_values() {
    let m = Model::new(2, 4, 3, 31);
    let run = |pi: &[f32], a: &[f32], b: &[f32], l: &[u32], batch, t, s| {
        host::viterbi(pi, a, b, l, batch, t, s).unwrap_err()
    };
    let e = run(&[], &[], &[], &[], 1, 1, 0);
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("S = 0")),
        "{e}"
    );
    let e = run(&m.pi, &m.a, &m.b, &[5, 1], 2, 4, 3);
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("lengths[0] = 5") && m.contains("T = 4")),
        "{e}"
    );
    let e = run(&m.pi, &m.a[1..], &m.b, &m.lengths, 2, 4, 3);
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("log_a has 8")),
        "{e}"
    );
    let e = run(&m.pi, &m.a, &m.b, &m.lengths, 2, 5, 3);
    assert!(e.to_string().contains("log_b"), "{e}");
    let e = run(&[], &[], &[], &[], usize::MAX, 2, 2);
    assert!(e.to_string().contains("overflows"), "{e}");
    let e = run(&[], &[], &[], &[], 1, 1, host::MAX_STATES + 1);
    assert!(e.to_string().contains("4097"), "{e}");
    // The device entry point checks its buffers too, before any launch.
    let ctx = Context::sim(Sm::Sm80);
    let st = ctx.default_stream();
    let (pi, a, b) = (
        st.upload(&m.pi).unwrap(),
        st.upload(&m.a).unwrap(),
        st.upload(&m.b).unwrap(),
    );
    let mut paths = ctx.alloc::<u32>(7).unwrap();
    let mut scores = ctx.alloc::<f32>(2).unwrap();
    let e = launch::viterbi_dev(
        &st,
        viterbi::Shape {
            batch: 2,
            t: 4,
            s: 3,
        },
        &m.lengths,
        &pi,
        &a,
        &b,
        launch::DeviceOutputs {
            paths: &mut paths,
            scores: &mut scores,
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("paths has 7"), "{e}");
    assert_eq!(st.traffic().launches, 0);
}

#[test]
fn gpu_viterbi_matches_the_host_model() {
    let Some(ctx) = cuda_for_tests() else { return };
    let st = ctx.default_stream();
    // The same kernel variants (one thread per state; the 1024 and 4096
    // caps) with shorter sequences on the driver emulator, where the
    // kernels run on the simulator (S² work per step).
    let shapes = if small_shapes(&ctx) {
        [(64, 20, 48), (2, 8, 1024), (1, 2, 4096)]
    } else {
        [(64, 200, 48), (4, 1000, 1024), (1, 50, 4096)]
    };
    for (batch, t, s) in shapes {
        let m = Model::new(batch, t, s, 41);
        let got = launch::viterbi_on(&st, m.shape(), &m.lengths, &m.pi, &m.a, &m.b).unwrap();
        assert_same(&got, &m.host(), &format!("gpu {batch}x{t}x{s}"));
    }
    // The slice API on the device.
    let m = Model::new(5, 9, 40, 43);
    let (got, ran) =
        launch::viterbi(Backend::Cuda, m.shape(), &m.lengths, &m.pi, &m.a, &m.b).unwrap();
    assert_eq!(ran, Ran::Cuda);
    assert_same(&got, &m.host(), "slice API, Backend::Cuda");
}

#[test]
fn ptx_has_no_approximate_or_flushing_instruction_on_any_sm() {
    for sm in Sm::ALL {
        for m in viterbi::ptx::variants(sm).unwrap() {
            for bad in [".approx", "ex2.", "lg2.", ".ftz"] {
                assert!(
                    !m.ptx.contains(bad),
                    "{} on {sm} contains `{bad}`",
                    m.kernel
                );
            }
            // No atomics of any kind (instruction mnemonics, after an
            // optional predicate guard).
            for line in m.ptx.lines() {
                let ins = line.trim_start();
                let ins = if ins.starts_with('@') {
                    ins.split_once(' ').map_or("", |(_, r)| r.trim_start())
                } else {
                    ins
                };
                assert!(
                    !ins.starts_with("atom.") && !ins.starts_with("red."),
                    "{} on {sm}: `{line}`",
                    m.kernel
                );
            }
            assert!(m.ptx.contains("add.rn.f32"), "{} on {sm}", m.kernel);
        }
    }
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
    let m = Model::new(6, 33, 37, 9);
    let raw = ctx.default_stream().raw();
    let (pi, a, b) = (
        foreign_put(ctx, &m.pi),
        foreign_put(ctx, &m.a),
        foreign_put(ctx, &m.b),
    );
    let paths = foreign_put(ctx, &vec![0u32; m.batch * m.t]);
    let scores = foreign_put(ctx, &vec![0f32; m.batch]);
    // SAFETY: live simulator allocations of the stated lengths; outputs
    // overlap no input; `raw` is this context's stream.
    unsafe {
        launch::viterbi_raw(
            &Stream::from_raw(ctx, raw).unwrap(),
            m.shape(),
            &m.lengths,
            pi,
            a,
            b,
            launch::RawOutputs { paths, scores },
        )
    }
    .unwrap();
    ctx.synchronize().unwrap();
    let got = viterbi::Viterbi {
        batch: m.batch,
        t: m.t,
        paths: foreign_get(ctx, paths, m.batch * m.t),
        scores: foreign_get(ctx, scores, m.batch),
    };
    assert_same(&got, &m.host(), "viterbi_raw");
    // Lengths are still checked.
    let mut bad = m.lengths.clone();
    bad[0] = 34;
    // SAFETY: refused before anything is queued.
    let e = unsafe {
        launch::viterbi_raw(
            &Stream::from_raw(ctx, raw).unwrap(),
            m.shape(),
            &bad,
            pi,
            a,
            b,
            launch::RawOutputs { paths, scores },
        )
    }
    .unwrap_err();
    assert!(e.to_string().contains("34"), "{e}");
}
