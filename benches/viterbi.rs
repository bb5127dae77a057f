//! Viterbi decoding time per `B · T · S²` (each step scans `S` previous
//! states for each of `S` states): the host model always; on a GPU the
//! device entry point on resident buffers at batch 64, T 1000, S 256 and
//! S 4096, next to the roofline model's time for the card
//! (`docs/roofline.tsv`: the rows `batch 64, T 1000, S 256` and `S 4096`).
//! Each call includes what `viterbi_dev` does per call: the upload of the
//! lengths and the allocation of the `[batch, T, S]` backpointer workspace
//! (1 GiB at S 4096).
//!
//! S 256 is timed by `benches/common/timing.rs`; S 4096 (about a second a
//! call) by one warm-up call and the median of three calls, each a launch
//! plus a synchronisation.
//!
//! ```text
//! cargo bench --bench viterbi
//! ```

#[path = "common/model.rs"]
mod roofline;
#[path = "common/seq_model.rs"]
mod seq_model;
#[path = "common/timing.rs"]
mod timing;

use std::time::Instant;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ptxsmith::kernels::viterbi::{self, DeviceOutputs, Shape, host};
use ptxsmith::runtime::Context;
use ptxsmith::testing::{REQUIRED_GPU_MISSING, gpu_required};
use seq_model::model;

const ROWS: [&str; 2] = ["batch 64, T 1000, S 256", "batch 64, T 1000, S 4096"];

fn bench(c: &mut Criterion) {
    roofline::check_rows(&[("viterbi", ROWS[0]), ("viterbi", ROWS[1])]);
    let (batch, t, s) = (4, 100, 32);
    let (pi, a, b, l) = model(batch, t, s);
    let mut g = c.benchmark_group("viterbi/host");
    g.throughput(Throughput::Elements((batch * t * s * s) as u64));
    g.sample_size(10);
    g.bench_function("viterbi_4x100x32", |bn| {
        bn.iter(|| host::viterbi(&pi, &a, &b, &l, batch, t, s).unwrap())
    });
    g.finish();

    let ctx = match Context::cuda(0) {
        Ok(ctx) => ctx,
        Err(e) if gpu_required() => panic!("{REQUIRED_GPU_MISSING}: {e}"),
        Err(e) => {
            println!("SKIP: no CUDA device ({e}); GPU Viterbi not measured");
            return;
        }
    };
    println!(
        "viterbi GPU: {}",
        ctx.info().map_or(String::new(), |i| i.to_string())
    );
    let dev = ctx.info().map_or(String::new(), |i| i.name.clone());
    let st = ctx.default_stream();
    let sync = || st.synchronize().unwrap();
    for (s, row) in [(256, ROWS[0]), (4096, ROWS[1])] {
        let (batch, t) = (64, 1000);
        let (pi, a, b, l) = model(batch, t, s);
        let shape = Shape { batch, t, s };
        let (pi_d, a_d, b_d) = (
            st.upload(&pi).unwrap(),
            st.upload(&a).unwrap(),
            st.upload(&b).unwrap(),
        );
        let mut paths = ctx.alloc::<u32>(batch * t).unwrap();
        let mut scores = ctx.alloc::<f32>(batch).unwrap();
        let mut run = || {
            let out = DeviceOutputs {
                paths: &mut paths,
                scores: &mut scores,
            };
            viterbi::viterbi_dev(&st, shape, &l, &pi_d, &a_d, &b_d, out).unwrap()
        };
        let label = format!("viterbi {batch}x{t}x{s} (resident buffers)");
        let measured = if s <= 256 {
            let tm = timing::time(&st, &mut run);
            println!("{label}: {}", tm.describe());
            (tm.per_launch_s, tm.single_s)
        } else {
            // Seconds a call: the queued rule (130 launches) would take
            // minutes; launch latency is nothing next to the kernel here.
            run();
            sync();
            let mut v: Vec<f64> = (0..3)
                .map(|_| {
                    let t0 = Instant::now();
                    run();
                    sync();
                    t0.elapsed().as_secs_f64()
                })
                .collect();
            v.sort_by(f64::total_cmp);
            println!(
                "{label}: {:.2} ms a call (median of 3, launch + sync)",
                v[1] * 1e3
            );
            (v[1], v[1])
        };
        println!(
            "{label}: {:.1} G B·T·S² terms/s",
            (batch * t * s * s) as f64 / measured.0 / 1e9
        );
        roofline::compare(
            &label,
            measured,
            &dev,
            ctx.multiprocessor_count(),
            "viterbi",
            row,
            "*",
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
