//! logcumsumexp forward and backward: the host model always; on a GPU the
//! kernels at `[4096, 4096]` (one tile a row: the row path), in GB/s
//! (8 bytes an element for the forward, 12 for the backward), printed next
//! to the modeled time of `docs/perf.md` (bytes and SASS instructions per
//! element, the card's multiprocessors and memory bandwidth).
//!
//! ```text
//! cargo bench --bench logcumsumexp
//! ```

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ptxsmith::kernels::logcumsumexp::{Shape, backward_dev, forward_dev, host};
use ptxsmith::runtime::Context;
use ptxsmith::runtime::device_tests_support::{REQUIRED_GPU_MISSING, gpu_required};

/// SASS instructions issued per element on sm_90 at `[4096, 4096]` (hot
/// loops × trips plus the rest, counted from `docs/tuning.md`; see
/// `docs/perf.md`) and bytes moved per element, forward and backward.
const FWD_SASS: f64 = 160.0;
const BWD_SASS: f64 = 122.0;
const FWD_BYTES: f64 = 8.0;
const BWD_BYTES: f64 = 12.0;
/// Issue rate per multiprocessor and clock (4 schedulers × 32 lanes) and
/// the clock the model assumes (H100 SXM boost, 1.98 GHz).
const LANES_PER_SM: f64 = 128.0;
const CLOCK_HZ: f64 = 1.98e9;
/// H100 SXM memory bandwidth, when the driver reports none.
const DEFAULT_BW: f64 = 3.35e12;

fn data(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (s >> 8) as f32 / (1u32 << 24) as f32 * 20.0 - 10.0
        })
        .collect()
}

/// Modeled time in µs: `max(bytes / bandwidth, instructions / issue rate)`.
fn model_us(elements: f64, bytes: f64, sass: f64, sms: f64, bw: f64) -> (f64, f64) {
    let mem = elements * bytes / bw;
    let issue = elements * sass / (sms * LANES_PER_SM * CLOCK_HZ);
    (mem.max(issue) * 1e6, mem / mem.max(issue))
}

fn bench(c: &mut Criterion) {
    let shape = Shape::new(64, 4096).unwrap();
    let x = data(shape.len(), 1);
    let g = data(shape.len(), 2);
    let mut grp = c.benchmark_group("logcumsumexp/host");
    grp.throughput(Throughput::Elements(shape.len() as u64));
    grp.sample_size(10);
    grp.bench_function("forward_64x4096", |b| {
        b.iter(|| host::forward(&x, shape).unwrap())
    });
    grp.bench_function("backward_64x4096", |b| {
        b.iter(|| host::backward(&x, &g, shape).unwrap())
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
    let st = ctx.default_stream();
    let dx = st.upload(&data(n, 3)).unwrap();
    let dg = st.upload(&data(n, 4)).unwrap();
    let mut dy = ctx.alloc::<f32>(n).unwrap();
    let mut dgx = ctx.alloc::<f32>(n).unwrap();
    forward_dev(&st, &dx, &mut dy, shape).unwrap();
    st.synchronize().unwrap();
    let sms = f64::from(ctx.multiprocessor_count());
    let bw = ctx
        .info()
        .and_then(|i| i.peak_bandwidth_gbps())
        .map_or(DEFAULT_BW, |g| g * 1e9);
    println!(
        "logcumsumexp GPU: {} (bytes moved: 8 an element forward, 12 backward; compare the GB/s with the peak)",
        ctx.info().map_or(String::new(), |i| i.to_string())
    );
    for (what, bytes, sass) in [
        ("forward", FWD_BYTES, FWD_SASS),
        ("backward", BWD_BYTES, BWD_SASS),
    ] {
        let (us, share) = model_us(n as f64, bytes, sass, sms, bw);
        println!(
            "logcumsumexp {what} [4096, 4096] modeled: {us:.1} µs ({:.0} GB/s, {:.0} % of {:.0} GB/s; {sass} SASS and {bytes} B an element, {sms} SMs at {:.2} GHz)",
            n as f64 * bytes / us / 1e3,
            share * 100.0,
            bw / 1e9,
            CLOCK_HZ / 1e9
        );
    }
    let mut grp = c.benchmark_group("logcumsumexp/gpu");
    grp.sample_size(10);
    grp.throughput(Throughput::Bytes((FWD_BYTES as usize * n) as u64));
    grp.bench_function("forward_4096x4096", |b| {
        b.iter(|| {
            forward_dev(&st, &dx, &mut dy, shape).unwrap();
            st.synchronize().unwrap();
        })
    });
    grp.throughput(Throughput::Bytes((BWD_BYTES as usize * n) as u64));
    grp.bench_function("backward_4096x4096", |b| {
        b.iter(|| {
            backward_dev(&st, &dx, &dg, &mut dgx, shape).unwrap();
            st.synchronize().unwrap();
        })
    });
    grp.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
