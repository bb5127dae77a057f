//! A warm launch generates no PTX and hashes no module text: the kernel
//! families launch memoised modules (`ptxsmith::dsl::memo`), and the JIT
//! cache finds their fingerprints without reading the text.
//!
//! Covered: the row dot product, every logcumsumexp kernel (forward and
//! backward, row and split paths) and every HMM forward-backward kernel.
//!
//! One test only: the generation counter is process-wide, and a second
//! test running beside it would generate its own modules.

use ptxsmith::Sm;
use ptxsmith::dsl::memo;
use ptxsmith::kernels::logcumsumexp::{self as lcse, Path};
use ptxsmith::kernels::{dot, hmm};
use ptxsmith::runtime::{AsDevice, AsDeviceMut, Context};
use ptxsmith::testing::cuda_for_tests;

/// `times` row dot products of 64 × 100 on `ctx`'s default stream.
fn launch(ctx: &Context, times: usize) {
    let (rows, n) = (64, 100);
    let st = ctx.default_stream();
    let x = st.upload(&vec![0.5f32; rows * n]).unwrap();
    let y = st.upload(&vec![2.0f32; n]).unwrap();
    let mut out = ctx.alloc::<f32>(rows).unwrap();
    for _ in 0..times {
        dot::dot_rows_dev(&st, dot::Shape { rows, n }, &x, &y, &mut out).unwrap();
    }
    assert_eq!(st.to_vec(&out).unwrap(), vec![100.0; rows]);
}

/// Kernel launches of one [`sequences`] round: logcumsumexp's forward on
/// the row path (1) and the split path (1: `lcse_fwd_split`), its backward on both (1 + 5),
/// HMM forward-backward (6).
const SEQUENCE_LAUNCHES: u64 = 14;

/// `times` rounds of every logcumsumexp and HMM kernel on `ctx`'s default
/// stream, on device buffers, checked against the host models.
fn sequences(ctx: &Context, times: usize) {
    let st = ctx.default_stream();
    // Two tiles a row, so either path can be forced.
    let shape = lcse::Shape::new(2, lcse::TILE + 40).unwrap();
    let xs: Vec<f32> = (0..shape.len())
        .map(|i| (i % 37) as f32 * 0.25 - 4.0)
        .collect();
    let gs: Vec<f32> = (0..shape.len()).map(|i| (i % 5) as f32 - 2.0).collect();
    let (x, g) = (st.upload(&xs).unwrap(), st.upload(&gs).unwrap());
    let mut y = ctx.alloc::<f32>(shape.len()).unwrap();
    let mut gx = ctx.alloc::<f32>(shape.len()).unwrap();
    let hs = hmm::Shape::new(2, 5, 3).unwrap();
    let pi = st.upload(&[-1.0f32, -0.5, -2.0]).unwrap();
    let a = st
        .upload(&[-0.2f32, -1.0, -3.0, -1.5, -0.3, -2.0, -0.7, -0.7, -0.7])
        .unwrap();
    let bs: Vec<f32> = (0..hs.elements())
        .map(|i| -((i % 7) as f32) * 0.3)
        .collect();
    let b = st.upload(&bs).unwrap();
    let lengths = [5, 3];
    let (n, batch) = (hs.elements(), hs.batch());
    let mut outs: Vec<_> = [n, n, batch, n, hs.xi_len()]
        .into_iter()
        .map(|len| ctx.alloc::<f32>(len).unwrap())
        .collect();
    for _ in 0..times {
        for path in [Path::Row, Path::Split] {
            lcse::forward_dev_path(&st, shape, path, &x, &mut y).unwrap();
            lcse::backward_dev_path(&st, shape, path, &x, &g, &mut gx).unwrap();
        }
        let inputs = hmm::DeviceInputs {
            log_pi: pi.as_device(),
            log_a: a.as_device(),
            log_b: b.as_device(),
            lengths: &lengths,
        };
        let [alpha, beta, ll, gamma, xi] = &mut outs[..] else {
            unreachable!()
        };
        let out = hmm::DeviceOutputs {
            log_alpha: alpha.as_device_mut(),
            log_beta: beta.as_device_mut(),
            log_likelihood: ll.as_device_mut(),
            gamma: gamma.as_device_mut(),
            xi: xi.as_device_mut(),
        };
        hmm::forward_backward_dev(&st, hs, &inputs, out).unwrap();
    }
    let bits = |v: Vec<f32>| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    assert_eq!(
        bits(st.to_vec(&y).unwrap()),
        bits(lcse::host::forward(shape, &xs).unwrap())
    );
    assert_eq!(
        bits(st.to_vec(&gx).unwrap()),
        bits(lcse::host::backward(shape, &xs, &gs).unwrap())
    );
    let host = hmm::host::forward_backward(
        hs,
        &hmm::Inputs {
            log_pi: &[-1.0, -0.5, -2.0],
            log_a: &[-0.2, -1.0, -3.0, -1.5, -0.3, -2.0, -0.7, -0.7, -0.7],
            log_b: &bs,
            lengths: &lengths,
        },
    )
    .unwrap();
    assert_eq!(bits(st.to_vec(&outs[3]).unwrap()), bits(host.gamma));
    assert_eq!(bits(st.to_vec(&outs[4]).unwrap()), bits(host.xi));
}

/// PTX generations and printed modules so far (process-wide).
fn ptx_counts() -> (u64, u64) {
    (memo::generations(), memo::modules_printed())
}

/// No PTX generated or printed since `counts` ([`ptx_counts`]).
fn assert_no_ptx_since(counts: (u64, u64)) {
    let (generated, printed) = counts;
    assert_eq!(
        memo::generations(),
        generated,
        "a warm launch generated PTX"
    );
    assert_eq!(
        memo::modules_printed(),
        printed,
        "a warm launch printed PTX"
    );
}

#[test]
fn device_and_sim_warm_launches_generate_and_hash_nothing() {
    let sim = Context::sim(Sm::Sm80);
    launch(&sim, 1);
    sequences(&sim, 1);
    let counts = ptx_counts();
    launch(&sim, 200);
    sequences(&sim, 2);
    // Another context of the same target shares the memoised modules.
    launch(&Context::sim(Sm::Sm80), 3);
    sequences(&Context::sim(Sm::Sm80), 1);
    assert_no_ptx_since(counts);

    let Some(ctx) = cuda_for_tests() else { return };
    launch(&ctx, 1);
    sequences(&ctx, 1);
    let before = ctx
        .module_cache_stats()
        .expect("a GPU context has a JIT cache");
    let counts = ptx_counts();
    launch(&ctx, 200);
    sequences(&ctx, 2);
    let after = ctx.module_cache_stats().unwrap();
    assert_no_ptx_since(counts);
    assert_eq!(after.loads, before.loads, "a warm launch compiled");
    assert_eq!(
        after.text_hashes, before.text_hashes,
        "a warm launch hashed the text"
    );
    assert_eq!(after.hits - before.hits, 200 + 2 * SEQUENCE_LAUNCHES);
    println!(
        "JIT cache after {} launches: {after:?}",
        201 + 3 * SEQUENCE_LAUNCHES
    );
}
