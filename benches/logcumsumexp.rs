//! logcumsumexp forward and backward: the host model always; on a GPU the
//! kernels at `[4096, 4096]` and the forward of one row of `2²⁴` (the
//! split path: `lcse_fwd_split`, the same bytes in one row), in GB/s
//! (`2 · rows · T · 4` bytes for the forward) next to the card's memory
//! bandwidth, and the per-launch time of queued launches
//! (`benches/common/timing.rs`) next to the roofline model's time for the
//! card (`docs/roofline.tsv`), with the one row's time over the many
//! rows' (issue 33's goal: at most 1.3×).
//!
//! ```text
//! cargo bench --bench logcumsumexp
//! ```

#[path = "common/model.rs"]
mod roofline;
#[path = "common/timing.rs"]
mod timing;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ptxsmith::kernels::logcumsumexp::{Shape, backward_dev, forward_dev, host};
use ptxsmith::runtime::Context;
use ptxsmith::testing::{REQUIRED_GPU_MISSING, gpu_required};

fn data(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (s >> 8) as f32 / (1u32 << 24) as f32 * 20.0 - 10.0
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    roofline::check_rows(&[
        ("logcumsumexp", "forward [4096, 4096]"),
        ("logcumsumexp", "forward [1, 2^24] (one row)"),
        ("logcumsumexp", "backward [4096, 4096]"),
    ]);
    let shape = Shape::new(64, 4096).unwrap();
    let x = data(shape.len(), 1);
    let g = data(shape.len(), 2);
    let mut grp = c.benchmark_group("logcumsumexp/host");
    grp.throughput(Throughput::Elements(shape.len() as u64));
    grp.sample_size(10);
    grp.bench_function("forward_64x4096", |b| {
        b.iter(|| host::forward(shape, &x).unwrap())
    });
    grp.bench_function("backward_64x4096", |b| {
        b.iter(|| host::backward(shape, &x, &g).unwrap())
    });
    grp.finish();

    let ctx = match Context::cuda(0) {
        Ok(ctx) => ctx,
        Err(e) if gpu_required() => panic!("{REQUIRED_GPU_MISSING}: {e}"),
        Err(e) => {
            println!("SKIP: no CUDA device ({e}); GPU logcumsumexp not measured");
            return;
        }
    };
    let shape = Shape::new(4096, 4096).unwrap();
    let n = shape.len();
    // The same 2²⁴ elements as one row (the split path).
    let row = Shape::new(1, n).unwrap();
    let st = ctx.default_stream();
    let dx = st.upload(&data(n, 3)).unwrap();
    let dg = st.upload(&data(n, 4)).unwrap();
    let mut dy = ctx.alloc::<f32>(n).unwrap();
    let mut dgx = ctx.alloc::<f32>(n).unwrap();
    forward_dev(&st, shape, &dx, &mut dy).unwrap();
    st.synchronize().unwrap();
    println!(
        "logcumsumexp GPU: {} (bytes moved: 8 an element forward, 12 backward; compare the GB/s with the peak)",
        ctx.info().map_or(String::new(), |i| i.to_string())
    );
    let mut grp = c.benchmark_group("logcumsumexp/gpu");
    grp.sample_size(10);
    grp.throughput(Throughput::Bytes((8 * n) as u64));
    grp.bench_function("forward_4096x4096", |b| {
        b.iter_custom(|iters| {
            timing::iter_queued(&st, iters, || {
                forward_dev(&st, shape, &dx, &mut dy).unwrap()
            })
        })
    });
    grp.bench_function("forward_1x16777216", |b| {
        b.iter_custom(|iters| {
            timing::iter_queued(&st, iters, || forward_dev(&st, row, &dx, &mut dy).unwrap())
        })
    });
    grp.throughput(Throughput::Bytes((12 * n) as u64));
    grp.bench_function("backward_4096x4096", |b| {
        b.iter_custom(|iters| {
            timing::iter_queued(&st, iters, || {
                backward_dev(&st, shape, &dx, &dg, &mut dgx).unwrap()
            })
        })
    });
    grp.finish();
    let dev = ctx.info().map_or(String::new(), |i| i.name.clone());
    let sms = ctx.multiprocessor_count();
    let fwd = timing::time(&st, || forward_dev(&st, shape, &dx, &mut dy).unwrap());
    roofline::compare(
        "logcumsumexp forward 4096x4096",
        (fwd.per_launch_s, fwd.single_s),
        &dev,
        sms,
        "logcumsumexp",
        "forward [4096, 4096]",
        "*",
    );
    let one = timing::time(&st, || forward_dev(&st, row, &dx, &mut dy).unwrap());
    roofline::compare(
        "logcumsumexp forward 1x16777216",
        (one.per_launch_s, one.single_s),
        &dev,
        sms,
        "logcumsumexp",
        "forward [1, 2^24] (one row)",
        "*",
    );
    println!(
        "logcumsumexp forward: one row of 2^24 takes {:.2}x the time of [4096, 4096] (per launch, queued; goal <= 1.3x)",
        one.per_launch_s / fwd.per_launch_s
    );
    let bwd = timing::time(&st, || {
        backward_dev(&st, shape, &dx, &dg, &mut dgx).unwrap()
    });
    roofline::compare(
        "logcumsumexp backward 4096x4096",
        (bwd.per_launch_s, bwd.single_s),
        &dev,
        sms,
        "logcumsumexp",
        "backward [4096, 4096]",
        "*",
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
