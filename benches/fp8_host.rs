//! Host FP8 codec throughput next to the `float8` crate, 1M elements.
//!
//! `cargo bench --bench fp8_host`

use criterion::{BenchmarkId, Criterion, Throughput, black_box, criterion_group, criterion_main};
use float8::{F8E4M3, F8E5M2};
use ptxsmith::kernels::fp8::{self, Format};
use std::time::Duration;

const N: usize = 1 << 20;

/// Deterministic inputs covering the E4M3 range, subnormals and a few
/// saturating values (|x| up to ~600).
fn inputs() -> Vec<f32> {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    (0..N)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let u = (state >> 40) as f32 / (1u64 << 24) as f32; // [0, 1)
            let e = (state & 31) as i32 - 20; // 2^-20 .. 2^11
            (u - 0.5) * 2f32.powi(e) * 1.2
        })
        .collect()
}

fn bench_encode(c: &mut Criterion) {
    let xs = inputs();
    let mut out = vec![0u8; N];
    let mut g = c.benchmark_group("fp8_encode");
    g.throughput(Throughput::Elements(N as u64));
    for format in [Format::E4M3, Format::E5M2] {
        let name = format!("{format:?}");
        g.bench_with_input(
            BenchmarkId::new("ptxsmith_readable", &name),
            &xs,
            |b, xs| {
                b.iter(|| {
                    for (o, &x) in out.iter_mut().zip(xs) {
                        *o = format.encode(x);
                    }
                    black_box(&out);
                })
            },
        );
        g.bench_with_input(
            BenchmarkId::new("ptxsmith_encode_slice", &name),
            &xs,
            |b, xs| {
                b.iter(|| {
                    fp8::host::encode_slice(format, xs, &mut out).unwrap();
                    black_box(&out);
                })
            },
        );
        g.bench_with_input(BenchmarkId::new("float8", &name), &xs, |b, xs| {
            b.iter(|| {
                match format {
                    Format::E4M3 => {
                        for (o, &x) in out.iter_mut().zip(xs) {
                            *o = F8E4M3::from_f32(x).to_bits();
                        }
                    }
                    Format::E5M2 => {
                        for (o, &x) in out.iter_mut().zip(xs) {
                            *o = F8E5M2::from_f32(x).to_bits();
                        }
                    }
                    other => unimplemented!("no float8 oracle for {other:?}"),
                }
                black_box(&out);
            })
        });
    }
    g.finish();
}

fn bench_decode(c: &mut Criterion) {
    let xs = inputs();
    let mut out = vec![0f32; N];
    let mut g = c.benchmark_group("fp8_decode");
    g.throughput(Throughput::Elements(N as u64));
    for format in [Format::E4M3, Format::E5M2] {
        let name = format!("{format:?}");
        let codes: Vec<u8> = xs.iter().map(|&x| format.encode(x)).collect();
        g.bench_with_input(
            BenchmarkId::new("ptxsmith_readable", &name),
            &codes,
            |b, codes| {
                b.iter(|| {
                    for (o, &q) in out.iter_mut().zip(codes) {
                        *o = format.decode(q);
                    }
                    black_box(&out);
                })
            },
        );
        g.bench_with_input(
            BenchmarkId::new("ptxsmith_decode_slice", &name),
            &codes,
            |b, codes| {
                b.iter(|| {
                    fp8::host::decode_slice(format, codes, &mut out).unwrap();
                    black_box(&out);
                })
            },
        );
        g.bench_with_input(BenchmarkId::new("float8", &name), &codes, |b, codes| {
            b.iter(|| {
                match format {
                    Format::E4M3 => {
                        for (o, &q) in out.iter_mut().zip(codes) {
                            *o = F8E4M3::from_bits(q).to_f32();
                        }
                    }
                    Format::E5M2 => {
                        for (o, &q) in out.iter_mut().zip(codes) {
                            *o = F8E5M2::from_bits(q).to_f32();
                        }
                    }
                    other => unimplemented!("no float8 oracle for {other:?}"),
                }
                black_box(&out);
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = bench_encode, bench_decode
}
criterion_main!(benches);
