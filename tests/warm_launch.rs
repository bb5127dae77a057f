//! A warm launch generates no PTX and hashes no module text: the kernel
//! families launch memoised modules (`ptxsmith::dsl::memo`), and the JIT
//! cache finds their fingerprints without reading the text.
//!
//! One test only: the generation counter is process-wide, and a second
//! test running beside it would generate its own modules.

use ptxsmith::Sm;
use ptxsmith::dsl::memo;
use ptxsmith::kernels::dot;
use ptxsmith::runtime::{Context, cuda_for_tests};

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

#[test]
fn device_and_sim_warm_launches_generate_and_hash_nothing() {
    let sim = Context::sim(Sm::Sm80);
    launch(&sim, 1);
    let (generated, printed) = (memo::generations(), memo::modules_printed());
    launch(&sim, 200);
    // Another context of the same target shares the memoised module.
    launch(&Context::sim(Sm::Sm80), 3);
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

    let Some(ctx) = cuda_for_tests() else { return };
    launch(&ctx, 1);
    let before = ctx
        .module_cache_stats()
        .expect("a GPU context has a JIT cache");
    let (generated, printed) = (memo::generations(), memo::modules_printed());
    launch(&ctx, 200);
    let after = ctx.module_cache_stats().unwrap();
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
    assert_eq!(after.loads, before.loads, "a warm launch compiled");
    assert_eq!(
        after.text_hashes, before.text_hashes,
        "a warm launch hashed the text"
    );
    assert_eq!(after.hits - before.hits, 200);
    println!("JIT cache after 201 launches: {after:?}");
}
