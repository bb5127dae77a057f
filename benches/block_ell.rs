//! Block-ELL layer time by density: the host model on a small layer
//! always; on a GPU the device entry points (forward, grad-input,
//! grad-values; buffers resident, topology uploaded once) on a 2048 → 2048
//! layer of 32 × 32 blocks (R = C = 64) over N = 4096 rows at 100 %, 50 %,
//! 25 % and 10 % of the slots filled. 100 % is the dense layer computed by
//! the same kernels; `scripts/torch_baselines.py` times the dense GEMM of
//! the same shape in PyTorch.
//!
//! Throughput is reported in useful multiply-adds (`N · nnz · B²`). After
//! the criterion groups, the 50 % forward, grad-input and grad-values and
//! the 100 % forward are timed again (median of 10) next to the roofline
//! model's time for the card (`docs/roofline.tsv`).
//!
//! ```text
//! cargo bench --bench block_ell
//! ```

#[path = "common/model.rs"]
mod roofline;
#[path = "common/timing.rs"]
mod timing;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ptxsmith::kernels::block_ell::{self, DeviceTopology, Dims};
use ptxsmith::runtime::Context;
use ptxsmith::testing::{REQUIRED_GPU_MISSING, gpu_required};

fn data(len: usize, seed: u32) -> Vec<f32> {
    let mut s = seed;
    (0..len)
        .map(|_| {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (s >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        })
        .collect()
}

/// `col` of an `r × c`-block layer with `k` slots, `filled` of them used
/// per row (spread columns).
fn topology(r: usize, c: usize, k: usize, filled: usize) -> Vec<i32> {
    (0..r * k)
        .map(|s| {
            let (row, slot) = (s / k, s % k);
            if slot < filled {
                ((row + slot * (c / filled.max(1))) % c) as i32
            } else {
                -1
            }
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    roofline::check_rows(&[
        (
            "block_ell",
            "forward 2048 → 2048, B 32, N 4096, 50 % of the slots",
        ),
        (
            "block_ell",
            "forward 2048 → 2048, B 32, N 4096, 100 % of the slots",
        ),
        (
            "block_ell",
            "grad-input 2048 → 2048, B 32, N 4096, 50 % of the slots",
        ),
        (
            "block_ell",
            "grad-values 2048 → 2048, B 32, N 4096, 50 % of the slots",
        ),
    ]);
    let (r, cb, b, n) = (8, 8, 16, 256);
    let dims = Dims::new(r, cb, cb / 2, b).unwrap();
    let col = topology(r, cb, cb / 2, cb / 2);
    let (x, gy) = (
        data(n * dims.in_features(), 1),
        data(n * dims.out_features(), 2),
    );
    let values = data(dims.values_len(), 3);
    let mut g = c.benchmark_group("block_ell/host");
    g.throughput(Throughput::Elements((n * r * (cb / 2) * b * b) as u64));
    g.sample_size(10);
    g.bench_function("forward_8x8_b16_50pct_n256", |bn| {
        bn.iter(|| block_ell::host::forward(&dims, n, &x, &values, &col, None).unwrap())
    });
    g.bench_function("grad_values_8x8_b16_50pct_n256", |bn| {
        bn.iter(|| block_ell::host::grad_values(&dims, n, &x, &gy, &col).unwrap())
    });
    g.finish();

    let ctx = match Context::cuda(0) {
        Ok(ctx) => ctx,
        Err(e) if gpu_required() => panic!("{REQUIRED_GPU_MISSING}: {e}"),
        Err(e) => {
            println!("SKIP: no CUDA device ({e}); GPU block-ELL not measured");
            return;
        }
    };
    println!(
        "block_ell GPU: {}",
        ctx.info().map_or(String::new(), |i| i.to_string())
    );
    let st = ctx.default_stream();
    let sync = || st.synchronize().unwrap();
    let (r, cb, b, n) = (64, 64, 32, 4096);
    let x = st.upload(&data(n * cb * b, 4)).unwrap();
    let gy = st.upload(&data(n * r * b, 5)).unwrap();
    let mut y = ctx.alloc::<f32>(n * r * b).unwrap();
    let mut gx = ctx.alloc::<f32>(n * cb * b).unwrap();
    let dev = ctx.info().map_or(String::new(), |i| i.name.clone());
    let sms = ctx.multiprocessor_count();
    let mut modeled = Vec::new();
    let mut g = c.benchmark_group("block_ell/gpu");
    g.sample_size(10);
    for pct in [100, 50, 25, 10] {
        let filled = (cb * pct).div_ceil(100);
        let dims = Dims::new(r, cb, filled, b).unwrap();
        let col = topology(r, cb, filled, filled);
        let topo = DeviceTopology::upload(&st, &dims, &col).unwrap();
        let values = st.upload(&data(dims.values_len(), 6)).unwrap();
        let mut gv = ctx.alloc::<f32>(dims.values_len()).unwrap();
        g.throughput(Throughput::Elements((n * r * filled * b * b) as u64));
        g.bench_function(format!("forward_2048_b32_n4096_{pct}pct"), |bn| {
            bn.iter_custom(|iters| {
                timing::iter_queued(
                    iters,
                    || {
                        block_ell::forward_dev(&st, &topo, n, &x, &values, None, &mut y).unwrap();
                    },
                    sync,
                )
            })
        });
        g.bench_function(format!("grad_input_2048_b32_n4096_{pct}pct"), |bn| {
            bn.iter_custom(|iters| {
                timing::iter_queued(
                    iters,
                    || {
                        block_ell::grad_input_dev(&st, &topo, n, &gy, &values, &mut gx).unwrap();
                    },
                    sync,
                )
            })
        });
        g.bench_function(format!("grad_values_2048_b32_n4096_{pct}pct"), |bn| {
            bn.iter_custom(|iters| {
                timing::iter_queued(
                    iters,
                    || {
                        block_ell::grad_values_dev(&st, &topo, n, &x, &gy, &mut gv).unwrap();
                    },
                    sync,
                )
            })
        });
        if pct == 100 || pct == 50 {
            let fwd = timing::time(
                || {
                    block_ell::forward_dev(&st, &topo, n, &x, &values, None, &mut y).unwrap();
                },
                sync,
            );
            let problem = format!("forward 2048 → 2048, B 32, N 4096, {pct} % of the slots");
            modeled.push((format!("block_ell forward {pct} %"), fwd, problem));
        }
        if pct == 50 {
            let gi = timing::time(
                || {
                    block_ell::grad_input_dev(&st, &topo, n, &gy, &values, &mut gx).unwrap();
                },
                sync,
            );
            modeled.push((
                "block_ell grad-input 50 %".into(),
                gi,
                "grad-input 2048 → 2048, B 32, N 4096, 50 % of the slots".into(),
            ));
            let gvs = timing::time(
                || {
                    block_ell::grad_values_dev(&st, &topo, n, &x, &gy, &mut gv).unwrap();
                },
                sync,
            );
            modeled.push((
                "block_ell grad-values 50 %".into(),
                gvs,
                "grad-values 2048 → 2048, B 32, N 4096, 50 % of the slots".into(),
            ));
        }
    }
    g.finish();
    for (label, secs, problem) in modeled {
        roofline::compare(
            &label,
            (secs.per_launch_s, secs.single_s),
            &dev,
            sms,
            "block_ell",
            &problem,
            "*",
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
