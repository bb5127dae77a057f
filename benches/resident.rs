//! Routing with a resident dictionary against the per-call upload path.
//!
//! * `per_call`: the slice API ([`route_top_s_on`]): `x` and `D` uploaded,
//!   routed, results downloaded, every call.
//! * `resident`: `D` uploaded once outside the timed loop; each call
//!   uploads only `x` and downloads `rows · s · 8` bytes
//!   ([`route_top_s_dev`]).
//!
//! Both print the bytes they move per call (from the context's traffic
//! counters) before timing. On a GPU the shape is the issue's K = 32768,
//! P = 2048 (a 268 MB dictionary); on the simulator a small one.
//!
//! ```text
//! cargo bench --bench resident
//! ```

use criterion::{Criterion, criterion_group, criterion_main};
use ptxsmith::Sm;
use ptxsmith::kernels::score::{self, route_top_s_dev, route_top_s_on};
use ptxsmith::runtime::{Context, Stream};
use ptxsmith::testing::{REQUIRED_GPU_MISSING, gpu_required};

fn data(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (s >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let (ctx, (rows, k, p, s)) = match Context::cuda(0) {
        Ok(ctx) => (ctx, (256usize, 32768usize, 2048usize, 8usize)),
        Err(e) => {
            // Under PTXSMITH_REQUIRE_GPU no simulator fallback: fail.
            assert!(
                !gpu_required(),
                "{REQUIRED_GPU_MISSING}: {e} (resident bench)"
            );
            println!("resident bench: no GPU ({e}); simulator, small shape");
            (Context::sim(Sm::Sm80), (16, 512, 32, 4))
        }
    };
    let st: Stream = ctx.default_stream();
    let x = data(rows * p, 1);
    let d = data(k * p, 2);
    let label = format!("{:?} rows={rows} K={k} P={p} s={s}", ctx.kind());
    let route = score::Route {
        shape: score::ScoreShape { rows, k, p },
        s,
    };

    // Bytes per call, measured once.
    let t0 = ctx.traffic();
    route_top_s_on(&st, route, None, &x, &d).unwrap();
    let per_call = ctx.traffic().since(&t0);
    let dict = st.upload(&d).unwrap();
    let t1 = ctx.traffic();
    let xb = st.upload(&x).unwrap();
    route_top_s_dev(&st, route, None, &xb, &dict)
        .unwrap()
        .download(&st)
        .unwrap();
    let resident = ctx.traffic().since(&t1);
    println!(
        "resident bench [{label}]: per-call path moves {} B up / {} B down per call; resident path {} B up / {} B down per call (dictionary {} B uploaded once)",
        per_call.bytes_uploaded,
        per_call.bytes_downloaded,
        resident.bytes_uploaded,
        resident.bytes_downloaded,
        d.len() * 4
    );

    let mut g = c.benchmark_group(format!("route/{label}"));
    g.sample_size(10);
    g.bench_function("per_call_upload", |b| {
        b.iter(|| route_top_s_on(&st, route, None, &x, &d).unwrap())
    });
    g.bench_function("resident_dictionary", |b| {
        b.iter(|| {
            let xb = st.upload(&x).unwrap();
            route_top_s_dev(&st, route, None, &xb, &dict)
                .unwrap()
                .download(&st)
                .unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
