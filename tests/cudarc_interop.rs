//! cudarc interop (feature `cudarc`): cudarc's slices and streams with
//! ptxsmith's kernels, on a GPU or the driver emulator; without a driver
//! every test prints `SKIP: no CUDA device (<reason>)` before touching
//! cudarc (whose dynamic loader would panic without a `libcuda`).
#![cfg(feature = "cudarc")]

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream};
use ptxsmith::kernels::{dot, fp8};
use ptxsmith::runtime::{Context, Stream};
use ptxsmith::testing::cuda_for_tests;
use ptxsmith::{Error, FOREIGN_CONTEXT};

mod common;
use common::bits;

/// cudarc's context and a new stream on device 0, and ptxsmith's context
/// and stream over them; `None` (after printing SKIP) without a device.
fn setup() -> Option<(Arc<CudaContext>, Arc<CudaStream>, Context, Stream)> {
    cuda_for_tests()?;
    let cu = CudaContext::new(0).unwrap();
    let cs = cu.new_stream().unwrap();
    let ctx = Context::from_cudarc(&cu).unwrap();
    let st = Stream::from_cudarc(&ctx, &cs).unwrap();
    Some((cu, cs, ctx, st))
}

#[test]
fn device_cudarc_memory_through_two_kernels_and_back() {
    let Some((_cu, cs, ctx, st)) = setup() else {
        return;
    };
    let xs: Vec<f32> = (0..5000)
        .map(|i| ((i * 37) % 101) as f32 * 0.7 - 30.0)
        .collect();
    let x = cs.clone_htod(&xs).unwrap();
    let mut codes = cs.alloc_zeros::<u8>(xs.len()).unwrap();
    let mut stats = cs.alloc_zeros::<f32>(3).unwrap();
    let mut y = cs.alloc_zeros::<f32>(xs.len()).unwrap();
    let enc = fp8::Encoding::for_sm(fp8::Format::E4M3, ctx.sm());
    {
        let vx = st.cudarc_view(&x).unwrap();
        let mut vc = st.cudarc_view_mut(&mut codes).unwrap();
        let mut vs = st.cudarc_view_mut(&mut stats).unwrap();
        fp8::quantize_dev(&st, enc, &vx, &mut vc, &mut vs).unwrap();
    }
    {
        let (vc, vs) = (
            st.cudarc_view(&codes).unwrap(),
            st.cudarc_view(&stats).unwrap(),
        );
        let mut vy = st.cudarc_view_mut(&mut y).unwrap();
        fp8::dequantize_stats_dev(&st, enc, &vc, &vs, &mut vy).unwrap();
    }
    // Back in cudarc: read on its stream, no ptxsmith synchronisation.
    let got = cs.clone_dtoh(&y).unwrap();
    cs.synchronize().unwrap();
    let q = fp8::host::quantize(&xs);
    assert_eq!(cs.clone_dtoh(&codes).unwrap(), q.codes);
    assert_eq!(
        bits(&got),
        bits(&fp8::host::dequantize(&q.codes, q.scale_inv))
    );
    assert_eq!(
        st.traffic().launches,
        3,
        "absmax partials, quantize (it reduces the partials itself), dequantize"
    );
    assert_eq!(
        st.traffic().bytes_downloaded,
        0,
        "nothing went through ptxsmith's host copies"
    );
}

#[test]
fn device_cudarc_slice_of_the_wrong_length_is_refused_without_a_launch() {
    let Some((_cu, cs, _ctx, st)) = setup() else {
        return;
    };
    let x = cs.clone_htod(&[1.0f32; 11]).unwrap();
    let y = cs.clone_htod(&[1.0f32; 3]).unwrap();
    let mut out = cs.alloc_zeros::<f32>(4).unwrap();
    let before = st.traffic();
    let e = {
        let (vx, vy) = (st.cudarc_view(&x).unwrap(), st.cudarc_view(&y).unwrap());
        let mut vo = st.cudarc_view_mut(&mut out).unwrap();
        dot::dot_rows_dev(&st, dot::Shape { rows: 4, n: 3 }, &vx, &vy, &mut vo).unwrap_err()
    };
    match &e {
        Error::InvalidArgument(a) => {
            assert_eq!(
                (a.what.as_str(), a.got.as_str()),
                ("x", "11 elements"),
                "{e}"
            );
        }
        e => panic!("expected InvalidArgument, got {e:?}"),
    }
    assert_eq!(st.traffic(), before, "something was queued");
    // A cudarc sub-view is a view of its own length.
    {
        let part = x.slice(2..9);
        assert_eq!(st.cudarc_view(&part).unwrap().len(), 7);
    }
    let x12 = cs.clone_htod(&[1.0f32; 12]).unwrap();
    {
        let (vx, vy) = (st.cudarc_view(&x12).unwrap(), st.cudarc_view(&y).unwrap());
        let mut vo = st.cudarc_view_mut(&mut out).unwrap();
        dot::dot_rows_dev(&st, dot::Shape { rows: 4, n: 3 }, &vx, &vy, &mut vo).unwrap();
    }
    assert_eq!(cs.clone_dtoh(&out).unwrap(), [3.0; 4]);
}

#[test]
fn device_cudarc_views_need_a_cudarc_stream_and_the_same_context() {
    let Some((cu, cs, ctx, _st)) = setup() else {
        return;
    };
    let x = cs.clone_htod(&[1.0f32; 4]).unwrap();
    // ptxsmith's own stream is not a cudarc stream: the view says how.
    let e = ctx.default_stream().cudarc_view(&x).unwrap_err();
    assert!(e.to_string().contains("Stream::from_cudarc"), "{e}");
    // A second cudarc stream of the same context is fine (cudarc orders
    // the slice's use across its streams with its events).
    let other = cu.new_stream().unwrap();
    let st2 = Stream::from_cudarc(&ctx, &other).unwrap();
    assert_eq!(st2.cudarc_view(&x).unwrap().len(), 4);
    // A simulator context is not cudarc's.
    let sim = Context::sim(ptxsmith::Sm::Sm80);
    let e = Stream::from_cudarc(&sim, &cs).unwrap_err();
    assert!(
        matches!(
            e,
            Error::WrongContext {
                owner: FOREIGN_CONTEXT,
                ..
            }
        ),
        "{e}"
    );
}
