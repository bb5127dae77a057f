//! Host-model throughput of the score route: the readable model and the
//! fast CPU path, reported as FLOP/s (2·rows·K·P per route).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ptxsmith::kernels::score::host::{
    FastConfig, route_top_s, route_top_s_fast, route_top_s_fast_with,
};

/// Deterministic values in [-1, 1) (a 64-bit LCG; the high bits only).
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 40) as f32) / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

fn bench_route(c: &mut Criterion) {
    let (rows, k, p, s) = (64usize, 4096usize, 64usize, 4usize);
    let x = values(rows * p, 1);
    let d = values(k * p, 2);
    let flops = 2 * rows * k * p;

    let mut group = c.benchmark_group("score_route");
    group.throughput(Throughput::Elements(flops as u64));
    let shape = format!("rows{rows}_K{k}_P{p}_s{s}");
    group.bench_with_input(BenchmarkId::new("readable", &shape), &(), |b, _| {
        b.iter(|| route_top_s(&x, &d, rows, k, p, s).unwrap())
    });
    group.bench_with_input(BenchmarkId::new("fast_1thread", &shape), &(), |b, _| {
        let cfg = FastConfig {
            threads: 1,
            ..FastConfig::default()
        };
        b.iter(|| route_top_s_fast_with(&x, &d, rows, k, p, s, &cfg).unwrap())
    });
    group.bench_with_input(BenchmarkId::new("fast", &shape), &(), |b, _| {
        b.iter(|| route_top_s_fast(&x, &d, rows, k, p, s).unwrap())
    });
    group.finish();
}

criterion_group!(benches, bench_route);
criterion_main!(benches);
