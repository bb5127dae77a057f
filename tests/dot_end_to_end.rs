//! The foundation's end-to-end kernel: DSL → PTX → ptxas → simulator,
//! bit for bit against the host model, on every SM; and the GPU when one
//! is present.

use ptxsmith::Sm;
use ptxsmith::kernels::dot::{self, dot_rows};
use ptxsmith::runtime::Context;
use ptxsmith::runtime::backend::{Backend, Ran};
use ptxsmith::testing::cuda_for_tests;
use ptxsmith::{Error, runtime};

mod common;
use common::bits;

fn data(rows: usize, n: usize, seed: u32) -> (Vec<f32>, Vec<f32>) {
    let mut s = seed;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        // Mixed magnitudes and signs, so rounding order matters.
        (s as i32 as f32) * 2f32.powi(-((s % 40) as i32) - 40)
    };
    (
        (0..rows * n).map(|_| next()).collect(),
        (0..n).map(|_| next()).collect(),
    )
}

#[test]
fn sim_matches_host_bit_for_bit_on_every_sm_and_ragged_shapes() {
    for sm in Sm::ALL {
        for (rows, n) in [(1, 1), (37, 67), (130, 5), (3, 0)] {
            let (x, y) = data(rows, n, 7 + rows as u32);
            let got = dot::dot_rows_on(
                &Context::sim(sm).default_stream(),
                dot::Shape { rows, n },
                &x,
                &y,
            )
            .unwrap();
            assert_eq!(
                bits(&got),
                bits(&dot::host::dot_rows(&x, &y, rows, n)),
                "{sm} rows {rows} n {n}"
            );
        }
    }
}

#[test]
fn fma_sensitive_data_proves_separate_rounding_on_sim() {
    // (1 + 2^-23)^2 − (1 + 2^-22): 0 with separate rounding, 2^-46 fused.
    let a = 1.0f32 + f32::EPSILON;
    let (x, y) = (vec![a, 1.0], vec![a, -(1.0 + 2.0 * f32::EPSILON)]);
    let (got, ran) = dot_rows(Backend::Sim, dot::Shape { rows: 1, n: 2 }, &x, &y).unwrap();
    assert_eq!(ran, Ran::Sim);
    assert_eq!(got[0].to_bits(), 0);
}

#[test]
fn nan_and_inf_propagate_like_the_host() {
    let x = vec![f32::INFINITY, 0.0, f32::NAN, 1.0, 1.0, -1.0];
    let y = vec![0.0, 1.0, 2.0];
    let got = dot::dot_rows_on(
        &Context::sim(Sm::Sm80).default_stream(),
        dot::Shape { rows: 2, n: 3 },
        &x,
        &y,
    )
    .unwrap();
    let want = dot::host::dot_rows(&x, &y, 2, 3);
    assert!(got[0].is_nan() && want[0].is_nan());
    assert_eq!(got[1].to_bits(), want[1].to_bits());
}

#[test]
fn shapes_are_validated_with_the_values_named() {
    let e = dot_rows(
        Backend::Host,
        dot::Shape { rows: 3, n: 2 },
        &[1.0; 5],
        &[1.0; 2],
    )
    .unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("5") && m.contains("3 × 2")),
        "{e}"
    );
    let e = dot_rows(
        Backend::Host,
        dot::Shape { rows: 3, n: 2 },
        &[1.0; 6],
        &[1.0; 3],
    )
    .unwrap_err();
    assert!(e.to_string().contains("y has 3"), "{e}");
    let e = dot_rows(
        Backend::Host,
        dot::Shape {
            rows: usize::MAX,
            n: 2,
        },
        &[],
        &[],
    )
    .unwrap_err();
    assert!(e.to_string().contains("overflows"), "{e}");
}

#[test]
fn cuda_backend_fails_loud_without_a_device_and_auto_reports_what_ran() {
    let (x, y) = data(4, 8, 3);
    if runtime::cuda_available() {
        return;
    }
    assert!(matches!(
        dot_rows(Backend::Cuda, dot::Shape { rows: 4, n: 8 }, &x, &y),
        Err(Error::NoDevice(_))
    ));
    let (got, ran) = dot_rows(Backend::Auto, dot::Shape { rows: 4, n: 8 }, &x, &y).unwrap();
    assert_eq!(ran, Ran::Host);
    assert_eq!(bits(&got), bits(&dot::host::dot_rows(&x, &y, 4, 8)));
}

#[test]
fn device_matches_host_bit_for_bit() {
    let Some(ctx) = cuda_for_tests() else {
        return;
    };
    let (x, y) = data(1000, 257, 11);
    let got = dot::dot_rows_on(
        &ctx.default_stream(),
        dot::Shape { rows: 1000, n: 257 },
        &x,
        &y,
    )
    .unwrap();
    assert_eq!(bits(&got), bits(&dot::host::dot_rows(&x, &y, 1000, 257)));
    let (got, ran) = dot_rows(Backend::Cuda, dot::Shape { rows: 1000, n: 257 }, &x, &y).unwrap();
    assert_eq!(ran, Ran::Cuda);
    assert_eq!(bits(&got), bits(&dot::host::dot_rows(&x, &y, 1000, 257)));
}
