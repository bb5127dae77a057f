//! HMM forward-backward time per `B · T · S²` (the forward and backward
//! recursions each do `L · S²` multiply-adds, the transition counts two per
//! state pair and step): the host
//! model always; on a GPU the slice API at batch 64, T 1000, S 256
//! (uploads and downloads included), then the device entry point on
//! resident buffers with a kept [`Workspace`] (a warm call allocates
//! nothing), timed by `benches/common/timing.rs`, next to the roofline
//! model's time for the card (`docs/roofline.tsv`), and the same with a
//! workspace allocated per call.
//!
//! ```text
//! cargo bench --bench hmm
//! ```

#[path = "common/model.rs"]
mod roofline;
#[path = "common/seq_model.rs"]
mod seq_model;
#[path = "common/timing.rs"]
mod timing;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ptxsmith::kernels::hmm::{self, DeviceInputs, DeviceOutputs, Inputs, Shape, Workspace, host};
use ptxsmith::runtime::{AsDevice, AsDeviceMut, Context};
use ptxsmith::testing::{REQUIRED_GPU_MISSING, gpu_required};
use seq_model::model;

fn bench(c: &mut Criterion) {
    roofline::check_rows(&[("hmm", "forward-backward, batch 64, T 1000, S 256")]);
    let (batch, t, s) = (4, 100, 32);
    let (pi, a, b, l) = model(batch, t, s);
    let shape = Shape::new(batch, t, s).unwrap();
    let inputs = Inputs {
        log_pi: &pi,
        log_a: &a,
        log_b: &b,
        lengths: &l,
    };
    let mut g = c.benchmark_group("hmm/host");
    g.throughput(Throughput::Elements((batch * t * s * s) as u64));
    g.sample_size(10);
    g.bench_function("forward_backward_4x100x32", |bn| {
        bn.iter(|| host::forward_backward(shape, &inputs).unwrap())
    });
    g.finish();

    let ctx = match Context::cuda(0) {
        Ok(ctx) => ctx,
        Err(e) if gpu_required() => panic!("{REQUIRED_GPU_MISSING}: {e}"),
        Err(e) => {
            println!("SKIP: no CUDA device ({e}); GPU HMM not measured");
            return;
        }
    };
    println!(
        "hmm GPU: {}",
        ctx.info().map_or(String::new(), |i| i.to_string())
    );
    let (batch, t, s) = (64, 1000, 256);
    let (pi, a, b, l) = model(batch, t, s);
    let shape = Shape::new(batch, t, s).unwrap();
    let inputs = Inputs {
        log_pi: &pi,
        log_a: &a,
        log_b: &b,
        lengths: &l,
    };
    let st = ctx.default_stream();
    let mut g = c.benchmark_group("hmm/gpu");
    g.throughput(Throughput::Elements((batch * t * s * s) as u64));
    g.sample_size(10);
    g.bench_function("forward_backward_64x1000x256", |bn| {
        bn.iter(|| hmm::forward_backward_on(&st, shape, &inputs).unwrap())
    });
    g.finish();

    // Kernels only: the model's problem.
    let (pi_d, a_d, b_d) = (
        st.upload(&pi).unwrap(),
        st.upload(&a).unwrap(),
        st.upload(&b).unwrap(),
    );
    let n = batch * t * s;
    let ctx2 = &ctx;
    let (mut alpha, mut beta, mut gamma) = (
        ctx2.alloc::<f32>(n).unwrap(),
        ctx2.alloc::<f32>(n).unwrap(),
        ctx2.alloc::<f32>(n).unwrap(),
    );
    let mut ll = ctx2.alloc::<f32>(batch).unwrap();
    let mut xi = ctx2.alloc::<f32>(batch * s * s).unwrap();
    let mut ws = Workspace::new(&ctx, shape).unwrap();
    println!(
        "hmm workspace: {} bytes ({:.1} MB)",
        ws.bytes(),
        ws.bytes() as f64 / 1e6
    );
    let mut run = |ws: Option<&mut Workspace>| {
        let inp = DeviceInputs {
            log_pi: pi_d.as_device(),
            log_a: a_d.as_device(),
            log_b: b_d.as_device(),
            lengths: &l,
        };
        let out = DeviceOutputs {
            log_alpha: alpha.as_device_mut(),
            log_beta: beta.as_device_mut(),
            log_likelihood: ll.as_device_mut(),
            gamma: gamma.as_device_mut(),
            xi: xi.as_device_mut(),
        };
        match ws {
            Some(ws) => hmm::forward_backward_dev_ws(&st, ws, shape, &inp, out).unwrap(),
            None => hmm::forward_backward_dev(&st, shape, &inp, out).unwrap(),
        }
    };
    let per_call = timing::time(&st, || run(None));
    let secs = timing::time(&st, || run(Some(&mut ws)));
    println!(
        "hmm forward-backward 64x1000x256: kept workspace {}; allocating it per call {}",
        secs.describe(),
        per_call.describe()
    );
    let dev = ctx.info().map_or(String::new(), |i| i.name.clone());
    roofline::compare(
        "hmm forward-backward 64x1000x256 (resident buffers, kept workspace)",
        (secs.per_launch_s, secs.single_s),
        &dev,
        ctx.multiprocessor_count(),
        "hmm",
        "forward-backward, batch 64, T 1000, S 256",
        "*",
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
