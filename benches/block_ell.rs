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
//! The tensor-core path (`block_ell_tc`): its host model (sm_90, bf16) and
//! the simulator (sm_90) on a small layer always; on a GPU from sm_80 the
//! bf16 and tf32 forward, grad-input and grad-values on the same 2048 →
//! 2048 layer at 50 % and 25 % (B = 32) and the bf16 forward at B = 64,
//! 50 %, each timed again next to the model's `block_ell_tc` row.
//! `scripts/torch_baselines.py` times the dense layer in bf16 and TF32.
//!
//! ```text
//! cargo bench --bench block_ell
//! ```

#[path = "common/model.rs"]
mod roofline;
#[path = "common/timing.rs"]
mod timing;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ptxsmith::Sm;
use ptxsmith::kernels::block_ell::{self, DeviceTopology, Dims};
use ptxsmith::kernels::block_ell_tc::{self as tc, TcElem, TcOutput, TcPrecision};
use ptxsmith::runtime::Context;
use ptxsmith::runtime::Stream;
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
        (
            "block_ell_tc",
            "tensor-core forward bf16, 2048 → 2048, B 32, N 4096, 50 % of the slots",
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
    // The tensor-core path: host model and simulator (sm_90, the H100
    // model), bf16, 8 × 8 blocks of 16, half the slots, N = 64.
    let n_tc = 64;
    let (xb, vb) = (
        tc::to_bf16(&x[..n_tc * dims.in_features()]),
        tc::to_bf16(&values),
    );
    g.throughput(Throughput::Elements((n_tc * r * (cb / 2) * b * b) as u64));
    g.bench_function("tc_forward_bf16_8x8_b16_50pct_n64", |bn| {
        bn.iter(|| {
            tc::host::forward(
                Sm::Sm90,
                TcPrecision::Bf16,
                &dims,
                n_tc,
                &xb,
                &vb,
                &col,
                None,
            )
            .unwrap()
        })
    });
    let sim = Context::sim(Sm::Sm90).default_stream();
    let topo = DeviceTopology::upload(&sim, &dims, &col).unwrap();
    let (xs, vs) = (sim.upload(&xb).unwrap(), sim.upload(&vb).unwrap());
    let mut ys = sim
        .context()
        .alloc::<f32>(n_tc * dims.out_features())
        .unwrap();
    g.bench_function("tc_forward_bf16_8x8_b16_50pct_n64_simulator", |bn| {
        bn.iter(|| {
            tc::forward_dev(
                &sim,
                TcPrecision::Bf16,
                TcOutput::F32,
                &topo,
                n_tc,
                &xs,
                &vs,
                None,
                &mut ys,
            )
            .unwrap();
            sim.synchronize().unwrap();
        })
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
                timing::iter_queued(&st, iters, || {
                    block_ell::forward_dev(&st, &topo, n, &x, &values, None, &mut y).unwrap();
                })
            })
        });
        g.bench_function(format!("grad_input_2048_b32_n4096_{pct}pct"), |bn| {
            bn.iter_custom(|iters| {
                timing::iter_queued(&st, iters, || {
                    block_ell::grad_input_dev(&st, &topo, n, &gy, &values, &mut gx).unwrap();
                })
            })
        });
        g.bench_function(format!("grad_values_2048_b32_n4096_{pct}pct"), |bn| {
            bn.iter_custom(|iters| {
                timing::iter_queued(&st, iters, || {
                    block_ell::grad_values_dev(&st, &topo, n, &x, &gy, &mut gv).unwrap();
                })
            })
        });
        if pct == 100 || pct == 50 {
            let fwd = timing::time(&st, || {
                block_ell::forward_dev(&st, &topo, n, &x, &values, None, &mut y).unwrap();
            });
            let problem = format!("forward 2048 → 2048, B 32, N 4096, {pct} % of the slots");
            modeled.push((format!("block_ell forward {pct} %"), fwd, problem));
        }
        if pct == 50 {
            let gi = timing::time(&st, || {
                block_ell::grad_input_dev(&st, &topo, n, &gy, &values, &mut gx).unwrap();
            });
            modeled.push((
                "block_ell grad-input 50 %".into(),
                gi,
                "grad-input 2048 → 2048, B 32, N 4096, 50 % of the slots".into(),
            ));
            let gvs = timing::time(&st, || {
                block_ell::grad_values_dev(&st, &topo, n, &x, &gy, &mut gv).unwrap();
            });
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
    if tc::host::request_sm(ctx.sm(), &Dims::new(1, 1, 1, 32).unwrap()).is_err() {
        println!("SKIP: {} has no bf16/tf32 mma.sync (sm_80 on)", ctx.sm());
        return;
    }
    let mut g = c.benchmark_group("block_ell_tc/gpu");
    g.sample_size(10);
    let mut modeled = Vec::new();
    for (prec, b, pct) in [
        (TcPrecision::Bf16, 32, 50),
        (TcPrecision::Bf16, 32, 25),
        (TcPrecision::Bf16, 64, 50),
        (TcPrecision::Tf32, 32, 50),
        (TcPrecision::Tf32, 32, 25),
    ] {
        let run = TcRun::new(&st, prec, b, pct);
        let tag = format!("{prec}_2048_b{b}_n4096_{pct}pct");
        g.throughput(Throughput::Elements((n * run.dims.slots() * b * b) as u64));
        for op in TcOp::ALL {
            g.bench_function(format!("{}_{tag}", op.name()), |bn| {
                bn.iter_custom(|iters| timing::iter_queued(&st, iters, || run.launch(&st, op)))
            });
            let problem = format!(
                "tensor-core {} {prec}, 2048 → 2048, B {b}, N 4096, {pct} % of the slots",
                op.label()
            );
            // The rows the model has (docs/roofline.tsv).
            if roofline::lookup(&dev, sms, "block_ell_tc", &problem, "*").is_some() {
                let t = timing::time(&st, || run.launch(&st, op));
                modeled.push((
                    format!("block_ell_tc {} {prec} B {b} {pct} %", op.label()),
                    t,
                    problem,
                ));
            }
        }
    }
    g.finish();
    for (label, secs, problem) in modeled {
        roofline::compare(
            &label,
            (secs.per_launch_s, secs.single_s),
            &dev,
            sms,
            "block_ell_tc",
            &problem,
            "*",
        );
    }
}

/// A tensor-core operation of the bench.
#[derive(Clone, Copy)]
enum TcOp {
    Forward,
    GradInput,
    GradValues,
}

impl TcOp {
    const ALL: [TcOp; 3] = [TcOp::Forward, TcOp::GradInput, TcOp::GradValues];
    fn name(self) -> &'static str {
        match self {
            TcOp::Forward => "forward",
            TcOp::GradInput => "grad_input",
            TcOp::GradValues => "grad_values",
        }
    }
    /// As the roofline problems name it.
    fn label(self) -> &'static str {
        match self {
            TcOp::Forward => "forward",
            TcOp::GradInput => "grad-input",
            TcOp::GradValues => "grad-values",
        }
    }
}

/// Device buffers of one tensor-core configuration at 2048 → 2048, N 4096.
struct TcRun {
    dims: Dims,
    topo: DeviceTopology,
    prec: TcPrecision,
    bufs: TcBufs,
    y: std::cell::RefCell<ptxsmith::runtime::DeviceBuffer<f32>>,
    gx: std::cell::RefCell<ptxsmith::runtime::DeviceBuffer<f32>>,
    gv: std::cell::RefCell<ptxsmith::runtime::DeviceBuffer<f32>>,
}

/// x, gy and values in the precision's storage.
enum TcBufs {
    Half([ptxsmith::runtime::DeviceBuffer<u16>; 3]),
    Single([ptxsmith::runtime::DeviceBuffer<f32>; 3]),
}

const N_TC: usize = 4096;

impl TcRun {
    fn new(st: &Stream, prec: TcPrecision, b: usize, pct: usize) -> TcRun {
        let rc = 2048 / b;
        let filled = rc * pct / 100;
        let dims = Dims::new(rc, rc, filled, b).unwrap();
        let topo = DeviceTopology::upload(st, &dims, &topology(rc, rc, filled, filled)).unwrap();
        let (x, gy, v) = (
            data(N_TC * 2048, 4),
            data(N_TC * 2048, 5),
            data(dims.values_len(), 6),
        );
        let bufs = match prec {
            TcPrecision::Tf32 => TcBufs::Single([x, gy, v].map(|d| st.upload(&d).unwrap())),
            TcPrecision::Bf16 => {
                TcBufs::Half([x, gy, v].map(|d| st.upload(&tc::to_bf16(&d)).unwrap()))
            }
            TcPrecision::F16 => {
                TcBufs::Half([x, gy, v].map(|d| st.upload(&tc::to_f16(&d)).unwrap()))
            }
        };
        let ctx = st.context();
        TcRun {
            topo,
            prec,
            bufs,
            y: ctx.alloc(N_TC * 2048).unwrap().into(),
            gx: ctx.alloc(N_TC * 2048).unwrap().into(),
            gv: ctx.alloc(dims.values_len()).unwrap().into(),
            dims,
        }
    }

    fn launch(&self, st: &Stream, op: TcOp) {
        match &self.bufs {
            TcBufs::Half(b) => self.launch_as(st, op, b),
            TcBufs::Single(b) => self.launch_as(st, op, b),
        }
    }

    fn launch_as<T: TcElem>(
        &self,
        st: &Stream,
        op: TcOp,
        [x, gy, v]: &[ptxsmith::runtime::DeviceBuffer<T>; 3],
    ) {
        let (p, t) = (self.prec, &self.topo);
        match op {
            TcOp::Forward => tc::forward_dev(
                st,
                p,
                TcOutput::F32,
                t,
                N_TC,
                x,
                v,
                None,
                &mut *self.y.borrow_mut(),
            ),
            TcOp::GradInput => tc::grad_input_dev(
                st,
                p,
                TcOutput::F32,
                t,
                N_TC,
                gy,
                v,
                &mut *self.gx.borrow_mut(),
            ),
            TcOp::GradValues => {
                tc::grad_values_dev(st, p, t, N_TC, x, gy, &mut *self.gv.borrow_mut())
            }
        }
        .unwrap()
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
