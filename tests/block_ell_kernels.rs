//! The block-ELL kernels: on the simulator, bit for bit against the host
//! model on ragged shapes, every block size, K = 1 and K = C, empty rows
//! and layers, NaN in empty slots, several N-chunks (with the partials
//! folded in one group and in many); the cost follows the density; the
//! slice API's errors; and the GPU when one is present.

use ptxsmith::kernels::block_ell::{
    self, BLOCK_SIZES, DeviceTopology, Dims, forward_dev, grad_bias_dev, grad_input_dev,
    grad_values_dev, launch,
};
use ptxsmith::runtime::{Backend, Context, Ran, Stream};
use ptxsmith::testing::cuda_for_tests;
use ptxsmith::{Error, Sm};

mod common;
use common::{Rng, bits, foreign_get, foreign_put};

/// A layer: `filled` of every `K` slots used per row (distinct random
/// columns at random slot positions), rows listed in `empty_rows` with no
/// slot at all; empty slots' values are NaN (never read).
struct Layer {
    dims: Dims,
    col: Vec<i32>,
    values: Vec<f32>,
    bias: Vec<f32>,
}

fn layer(
    rng: &mut Rng,
    r: usize,
    c: usize,
    k: usize,
    b: usize,
    filled: usize,
    empty_rows: &[usize],
) -> Layer {
    let dims = Dims::new(r, c, k, b).unwrap();
    let mut col = vec![-1i32; r * k];
    for row in 0..r {
        if empty_rows.contains(&row) {
            continue;
        }
        let mut cols: Vec<usize> = (0..c).collect();
        let mut pos: Vec<usize> = (0..k).collect();
        for f in 0..filled.min(c).min(k) {
            let ci = f + rng.below(c - f);
            cols.swap(f, ci);
            let pi = f + rng.below(k - f);
            pos.swap(f, pi);
            col[row * k + pos[f]] = cols[f] as i32;
        }
    }
    let mut values = rng.values(dims.values_len());
    for (s, &cb) in col.iter().enumerate() {
        if cb < 0 {
            values[s * b * b..(s + 1) * b * b].fill(f32::NAN);
        }
    }
    let bias = rng.values(dims.out_features());
    Layer {
        dims,
        col,
        values,
        bias,
    }
}

/// Run all four kernels on `st` and compare with the host model.
fn check(st: &Stream, l: &Layer, n: usize, x: &[f32], gy: &[f32], budget: usize, what: &str) {
    let d = &l.dims;
    let topo = DeviceTopology::upload(st, d, &l.col).unwrap();
    let (dx, dgy) = (st.upload(x).unwrap(), st.upload(gy).unwrap());
    let dv = st.upload(&l.values).unwrap();
    let db = st.upload(&l.bias).unwrap();
    let ctx = st.context();

    for with_bias in [false, true] {
        let want =
            block_ell::host::forward(d, n, x, &l.values, &l.col, with_bias.then_some(&l.bias[..]))
                .unwrap();
        let mut y = ctx.alloc::<f32>(n * d.out_features()).unwrap();
        let bias = with_bias.then_some(&db as &dyn ptxsmith::runtime::AsDevice<f32>);
        forward_dev(st, &topo, n, &dx, &dv, bias, &mut y).unwrap();
        assert_eq!(
            bits(&st.to_vec(&y).unwrap()),
            bits(&want),
            "forward (bias {with_bias}) {what}"
        );
    }

    let want = block_ell::host::grad_input(d, n, gy, &l.values, &l.col).unwrap();
    let mut gx = ctx.alloc::<f32>(n * d.in_features()).unwrap();
    grad_input_dev(st, &topo, n, &dgy, &dv, &mut gx).unwrap();
    assert_eq!(
        bits(&st.to_vec(&gx).unwrap()),
        bits(&want),
        "grad_input {what}"
    );

    let want = block_ell::host::grad_values(d, n, x, gy, &l.col).unwrap();
    let mut gv = ctx.alloc::<f32>(d.values_len()).unwrap();
    launch::grad_values_dev_budget(st, &topo, n, &dx, &dgy, &mut gv, budget).unwrap();
    assert_eq!(
        bits(&st.to_vec(&gv).unwrap()),
        bits(&want),
        "grad_values {what}"
    );

    let want = block_ell::host::grad_bias(d, n, gy).unwrap();
    let mut gb = ctx.alloc::<f32>(d.out_features()).unwrap();
    launch::grad_bias_dev_budget(st, d, n, &dgy, &mut gb, budget).unwrap();
    assert_eq!(
        bits(&st.to_vec(&gb).unwrap()),
        bits(&want),
        "grad_bias {what}"
    );
}

fn run_case(
    st: &Stream,
    rng: &mut Rng,
    shape: (usize, usize, usize, usize, usize),
    empty_rows: &[usize],
    budget: usize,
) {
    let (r, c, k, b, n) = shape;
    let filled = k.min(c);
    for fill in [filled, filled.div_ceil(2)] {
        let l = layer(rng, r, c, k, b, fill, empty_rows);
        let mut x = rng.values(n * c * b);
        // An Inf in a column block nobody uses must not reach any output.
        let unused: Vec<usize> = (0..c).filter(|cb| !l.col.contains(&(*cb as i32))).collect();
        if let (Some(&cb), true) = (unused.first(), n > 0) {
            x[cb * b] = f32::INFINITY;
        }
        let gy = rng.values(n * r * b);
        let what = format!(
            "R{r} C{c} K{k} B{b} N{n} fill {fill} empty rows {empty_rows:?} budget {budget} on {}",
            st.context().sm()
        );
        check(st, &l, n, &x, &gy, budget, &what);
    }
}

#[test]
fn sim_equals_host_on_ragged_shapes_every_block_size() {
    let ctx = Context::sim(Sm::Sm80);
    let st = ctx.default_stream();
    let mut rng = Rng(7);
    for &b in &BLOCK_SIZES {
        // N not a multiple of any tile; R, C not multiples of anything.
        let n = if b == 64 { 67 } else { 37 };
        run_case(&st, &mut rng, (3, 5, 2, b, n), &[1], usize::MAX);
        // K = 1 and K = C.
        run_case(&st, &mut rng, (2, 3, 1, b, n), &[], usize::MAX);
        run_case(&st, &mut rng, (2, 3, 3, b, 5), &[], usize::MAX);
    }
}

#[test]
fn sim_equals_host_across_n_chunks_and_fold_groups() {
    let ctx = Context::sim(Sm::Sm80);
    let st = ctx.default_stream();
    let mut rng = Rng(11);
    for b in [8, 16] {
        // 3 chunks (256 + 256 + 21): partials folded in one group, and one
        // chunk per group (the fold then adds onto gv's running total).
        for budget in [usize::MAX, 1] {
            run_case(&st, &mut rng, (2, 3, 2, b, 533), &[], budget);
        }
    }
    // Exactly one chunk, and one chunk plus one row.
    run_case(&st, &mut rng, (1, 2, 2, 32, 256), &[], usize::MAX);
    run_case(&st, &mut rng, (1, 2, 2, 32, 257), &[], 1);
}

#[test]
fn sim_equals_host_on_empty_layers_and_rows() {
    let ctx = Context::sim(Sm::Sm70);
    let st = ctx.default_stream();
    let mut rng = Rng(13);
    // Every row empty; K = 0; C = 0; N = 0.
    run_case(&st, &mut rng, (3, 4, 2, 8, 9), &[0, 1, 2], usize::MAX);
    run_case(&st, &mut rng, (3, 4, 0, 8, 9), &[], usize::MAX);
    run_case(&st, &mut rng, (2, 0, 2, 16, 9), &[], usize::MAX);
    run_case(&st, &mut rng, (2, 3, 2, 16, 0), &[], usize::MAX);
    run_case(&st, &mut rng, (0, 3, 2, 16, 4), &[], usize::MAX);
}

#[test]
fn every_target_runs_on_the_simulator() {
    let mut rng = Rng(17);
    for sm in Sm::ALL {
        let ctx = Context::sim(sm);
        let st = ctx.default_stream();
        run_case(&st, &mut rng, (2, 3, 2, 16, 21), &[], usize::MAX);
    }
}

/// Dynamic instruction count of one forward on the simulator.
fn forward_instructions(l: &Layer, n: usize) -> u64 {
    let ctx = Context::sim(Sm::Sm80);
    let st = ctx.default_stream();
    let mut rng = Rng(3);
    let x = rng.values(n * l.dims.in_features());
    let topo = DeviceTopology::upload(&st, &l.dims, &l.col).unwrap();
    let (dx, dv) = (st.upload(&x).unwrap(), st.upload(&l.values).unwrap());
    let mut y = ctx.alloc::<f32>(n * l.dims.out_features()).unwrap();
    let before = ctx.with_sim(|s| s.total_instructions()).unwrap();
    forward_dev(&st, &topo, n, &dx, &dv, None, &mut y).unwrap();
    st.synchronize().unwrap();
    ctx.with_sim(|s| s.total_instructions()).unwrap() - before
}

#[test]
fn forward_cost_follows_density() {
    // Same N, R, C, B: every slot filled vs half of them (K = C = 8).
    let mut rng = Rng(5);
    let (r, c, b, n) = (4, 8, 16, 256);
    let full = layer(&mut rng, r, c, c, b, c, &[]);
    let half = layer(&mut rng, r, c, c, b, c / 2, &[]);
    let (f, h) = (
        forward_instructions(&full, n),
        forward_instructions(&half, n),
    );
    let ratio = h as f64 / f as f64;
    println!("forward instructions: full {f}, 50 % {h}, ratio {ratio:.3}");
    assert!(ratio <= 0.55, "50 % density costs {ratio:.3} of full");
}

#[test]
fn slice_api_matches_host_and_rejects_bad_input() {
    let mut rng = Rng(19);
    let l = layer(&mut rng, 2, 3, 2, 8, 2, &[]);
    let n = 5;
    let x = rng.values(n * 24);
    let (y, ran) = launch::forward(Backend::Sim, &l.dims, n, &x, &l.values, &l.col, None).unwrap();
    assert_eq!(ran, Ran::Sim);
    let want = block_ell::host::forward(&l.dims, n, &x, &l.values, &l.col, None).unwrap();
    assert_eq!(bits(&y), bits(&want));
    // A column out of range, a repeat, a wrong length: typed errors that
    // name the values, before anything runs.
    let mut bad = l.col.clone();
    bad[0] = 3;
    let e = launch::forward(Backend::Sim, &l.dims, n, &x, &l.values, &bad, None).unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument(_)) && e.to_string().contains("col[0,0] = 3"),
        "{e}"
    );
    bad[0] = bad[1];
    let e = launch::forward(Backend::Sim, &l.dims, n, &x, &l.values, &bad, None).unwrap_err();
    assert!(e.to_string().contains("twice"), "{e}");
    let e = launch::grad_input(Backend::Sim, &l.dims, n, &x, &l.values, &l.col).unwrap_err();
    assert!(e.to_string().contains("gy has 120 elements"), "{e}");
    let e =
        launch::forward(Backend::Sim, &l.dims, 1 << 31, &x, &l.values, &l.col, None).unwrap_err();
    assert!(e.to_string().contains("N = 2147483648"), "{e}");
}

#[test]
fn device_buffers_are_checked_and_untouched_on_error() {
    let ctx = Context::sim(Sm::Sm80);
    let st = ctx.default_stream();
    let mut rng = Rng(23);
    let l = layer(&mut rng, 2, 3, 2, 8, 2, &[]);
    let topo = DeviceTopology::upload(&st, &l.dims, &l.col).unwrap();
    let n = 4;
    let dx = st.upload(&rng.values(n * 24)).unwrap();
    let dv = st.upload(&l.values).unwrap();
    let sentinel = vec![42.0f32; n * 16 + 1];
    let mut y = st.upload(&sentinel).unwrap();
    let e = forward_dev(&st, &topo, n, &dx, &dv, None, &mut y).unwrap_err();
    assert!(e.to_string().contains("y has 65 elements"), "{e}");
    let short_bias = st.upload(&[0.0f32; 3]).unwrap();
    let mut y2 = ctx.alloc::<f32>(n * 16).unwrap();
    let e = forward_dev(&st, &topo, n, &dx, &dv, Some(&short_bias), &mut y2).unwrap_err();
    assert!(e.to_string().contains("bias has 3 elements"), "{e}");
    assert_eq!(st.to_vec(&y).unwrap(), sentinel);
    // A buffer of another context.
    let other = Context::sim(Sm::Sm80);
    let foreign = other.upload(&l.values).unwrap();
    let e = forward_dev(&st, &topo, n, &dx, &foreign, None, &mut y2).unwrap_err();
    assert!(matches!(e, Error::WrongContext { .. }), "{e}");
    let mut gb = ctx.alloc::<f32>(15).unwrap();
    let e = grad_bias_dev(&st, &l.dims, n, &dx, &mut gb).unwrap_err();
    assert!(e.to_string().contains("gy has 96 elements"), "{e}");
    let mut gv = ctx.alloc::<f32>(l.dims.values_len()).unwrap();
    let e = grad_values_dev(&st, &topo, n + 1, &dx, &dx, &mut gv).unwrap_err();
    assert!(e.to_string().contains("x has 96 elements"), "{e}");
}

#[test]
fn gpu_equals_host_when_present() {
    let Some(ctx) = cuda_for_tests() else {
        return;
    };
    let st = ctx.default_stream();
    let mut rng = Rng(29);
    // Several N-chunks of 256 rows; fewer rows on the driver emulator
    // (kernels on the simulator), still more than one chunk.
    let (n1, n2) = if ptxsmith::testing::small_shapes(&ctx) {
        (300, 260)
    } else {
        (1000, 300)
    };
    for &b in &BLOCK_SIZES {
        run_case(&st, &mut rng, (5, 7, 3, b, n1), &[2], usize::MAX);
        run_case(&st, &mut rng, (3, 4, 4, b, n2), &[], 1);
    }
    // The slice API on the device.
    let l = layer(&mut rng, 3, 5, 2, 16, 2, &[1]);
    let (d, n) = (&l.dims, 70);
    let x = rng.values(n * d.in_features());
    let gy = rng.values(n * d.out_features());
    let cuda = |r: ptxsmith::Result<(Vec<f32>, Ran)>| {
        let (v, ran) = r.unwrap();
        assert_eq!(ran, Ran::Cuda);
        bits(&v)
    };
    let bias = Some(&l.bias[..]);
    assert_eq!(
        cuda(launch::forward(
            Backend::Cuda,
            d,
            n,
            &x,
            &l.values,
            &l.col,
            bias
        )),
        bits(&block_ell::host::forward(d, n, &x, &l.values, &l.col, bias).unwrap())
    );
    assert_eq!(
        cuda(launch::grad_input(
            Backend::Cuda,
            d,
            n,
            &gy,
            &l.values,
            &l.col
        )),
        bits(&block_ell::host::grad_input(d, n, &gy, &l.values, &l.col).unwrap())
    );
    assert_eq!(
        cuda(launch::grad_values(Backend::Cuda, d, n, &x, &gy, &l.col)),
        bits(&block_ell::host::grad_values(d, n, &x, &gy, &l.col).unwrap())
    );
    assert_eq!(
        cuda(launch::grad_bias(Backend::Cuda, d, n, &gy)),
        bits(&block_ell::host::grad_bias(d, n, &gy).unwrap())
    );
}

#[test]
fn statistics_on_the_simulator_equal_the_host() {
    let mut rng = Rng(31);
    for sm in [Sm::Sm80, Sm::Sm70] {
        statistics_on(&Context::sim(sm), &mut rng);
    }
}

/// The same on a GPU or the driver emulator (SKIP without one).
#[test]
fn gpu_statistics_equal_the_host() {
    let Some(ctx) = cuda_for_tests() else {
        return;
    };
    statistics_on(&ctx, &mut Rng(31));
}

fn statistics_on(ctx: &Context, rng: &mut Rng) {
    use block_ell::host::{block_grad_norms, ema_update, input_block_norms, output_block_norms};
    use block_ell::{
        block_grad_norms_dev, ema_update_dev, input_block_norms_dev, output_block_norms_dev,
    };
    let sm = ctx.sm();
    {
        let st = ctx.default_stream();
        for (b, n) in [(8, 533), (32, 37), (16, 0)] {
            // Empty slots hold NaN in gv: never read.
            let l = layer(rng, 3, 5, 3, b, 2, &[1]);
            let d = &l.dims;
            let topo = DeviceTopology::upload(&st, d, &l.col).unwrap();
            let mut gv = rng.values(d.values_len());
            for (s, &cb) in l.col.iter().enumerate() {
                if cb < 0 {
                    gv[s * b * b..(s + 1) * b * b].fill(f32::NAN);
                }
            }
            let dgv = st.upload(&gv).unwrap();
            let mut out = ctx.alloc::<f32>(d.slots()).unwrap();
            block_grad_norms_dev(&st, &topo, &dgv, &mut out).unwrap();
            let want = block_grad_norms(d, &gv, &l.col).unwrap();
            assert_eq!(
                bits(&st.to_vec(&out).unwrap()),
                bits(&want),
                "grad norms B{b} {sm}"
            );

            let x = rng.values(n * d.in_features());
            let gy = rng.values(n * d.out_features());
            let (dx, dgy) = (st.upload(&x).unwrap(), st.upload(&gy).unwrap());
            let mut inorm = ctx.alloc::<f32>(d.c()).unwrap();
            input_block_norms_dev(&st, d, n, &dx, &mut inorm).unwrap();
            let want = input_block_norms(d, n, &x).unwrap();
            assert_eq!(
                bits(&st.to_vec(&inorm).unwrap()),
                bits(&want),
                "input norms B{b} N{n} {sm}"
            );
            let mut onorm = ctx.alloc::<f32>(d.r()).unwrap();
            output_block_norms_dev(&st, d, n, &dgy, &mut onorm).unwrap();
            let want = output_block_norms(d, n, &gy).unwrap();
            assert_eq!(
                bits(&st.to_vec(&onorm).unwrap()),
                bits(&want),
                "output norms B{b} N{n} {sm}"
            );
        }
        // EMA with special values and the ends of the decay range.
        let v = [
            1.0f32,
            -2.5,
            f32::INFINITY,
            f32::NAN,
            0.0,
            -0.0,
            3.0e38,
            1.0e-40,
        ];
        for decay in [0.0f32, 0.3, 0.9, 1.0] {
            let mut s = vec![0.5f32, f32::NEG_INFINITY, 2.0, 1.0, -0.0, 0.0, 3.0e38, 7.0];
            let mut ds = st.upload(&s).unwrap();
            let dv = st.upload(&v).unwrap();
            ema_update_dev(&st, &mut ds, &dv, decay).unwrap();
            ema_update(&mut s, &v, decay).unwrap();
            assert_eq!(
                bits(&st.to_vec(&ds).unwrap()),
                bits(&s),
                "ema decay {decay} {sm}"
            );
        }
        let mut ds = st.upload(&[0.0f32; 3]).unwrap();
        let dv = st.upload(&[0.0f32; 3]).unwrap();
        let e = ema_update_dev(&st, &mut ds, &dv, 1.5).unwrap_err();
        assert!(e.to_string().contains("decay = 1.5"), "{e}");
    }
}

#[test]
fn raw_entry_points_run_on_foreign_memory() {
    raw_entry_points_on(&Context::sim(Sm::Sm80));
}

/// The same on plain driver allocations of a GPU or the driver emulator
/// (SKIP without one).
#[test]
fn gpu_raw_entry_points_run_on_driver_allocations() {
    let Some(ctx) = cuda_for_tests() else {
        return;
    };
    raw_entry_points_on(&ctx);
}

fn raw_entry_points_on(ctx: &Context) {
    let st = ctx.default_stream();
    let raw = st.raw();
    let mut rng = Rng(37);
    let l = layer(&mut rng, 3, 4, 2, 16, 2, &[]);
    let d = &l.dims;
    let topo = DeviceTopology::upload(&st, d, &l.col).unwrap();
    for n in [70, 300] {
        let x = rng.values(n * d.in_features());
        let gy = rng.values(n * d.out_features());
        let (px, pgy, pv, pb) = (
            foreign_put(ctx, &x),
            foreign_put(ctx, &gy),
            foreign_put(ctx, &l.values),
            foreign_put(ctx, &l.bias),
        );
        let py = foreign_put(ctx, &vec![0.0; n * d.out_features()]);
        let pgx = foreign_put(ctx, &vec![0.0; n * d.in_features()]);
        let pgv = foreign_put(ctx, &vec![0.0; d.values_len()]);
        // SAFETY: every address is a live simulator allocation of the
        // stated length; outputs overlap nothing; `raw` is this context's.
        unsafe {
            launch::forward_raw(
                &Stream::from_raw(ctx, raw).unwrap(),
                &topo,
                n,
                px,
                pv,
                Some(pb),
                py,
            )
            .unwrap();
            launch::grad_input_raw(&Stream::from_raw(ctx, raw).unwrap(), &topo, n, pgy, pv, pgx)
                .unwrap();
            launch::grad_values_raw(&Stream::from_raw(ctx, raw).unwrap(), &topo, n, px, pgy, pgv)
                .unwrap();
        }
        st.synchronize().unwrap();
        let y = block_ell::host::forward(d, n, &x, &l.values, &l.col, Some(&l.bias)).unwrap();
        assert_eq!(
            bits(&foreign_get::<f32>(ctx, py, y.len())),
            bits(&y),
            "forward_raw N{n}"
        );
        let gx = block_ell::host::grad_input(d, n, &gy, &l.values, &l.col).unwrap();
        assert_eq!(
            bits(&foreign_get::<f32>(ctx, pgx, gx.len())),
            bits(&gx),
            "grad_input_raw N{n}"
        );
        let gv = block_ell::host::grad_values(d, n, &x, &gy, &l.col).unwrap();
        assert_eq!(
            bits(&foreign_get::<f32>(ctx, pgv, gv.len())),
            bits(&gv),
            "grad_values_raw N{n}"
        );
    }
    // Sizes are still checked.
    // SAFETY: refused before anything is queued.
    let e = unsafe {
        launch::forward_raw(
            &Stream::from_raw(ctx, raw).unwrap(),
            &topo,
            1 << 31,
            0,
            0,
            None,
            0,
        )
    }
    .unwrap_err();
    assert!(e.to_string().contains("N = 2147483648"), "{e}");
}

mod random_topologies {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        /// Random shapes and topologies (any slot may be empty, rows may
        /// be empty, K up to C + 1) on the simulator, bit for bit.
        #[test]
        fn sim_equals_host(
            seed in any::<u64>(),
            bi in 0usize..4,
            r in 1usize..5,
            c in 1usize..6,
            extra_k in 0usize..2,
            n in 1usize..80,
            fill_pct in 0usize..=100,
        ) {
            let b = BLOCK_SIZES[bi];
            let n = if b == 64 { n.min(20) } else { n };
            let k = (c + extra_k).min(4);
            let mut rng = Rng(seed);
            let filled = (k * fill_pct).div_ceil(100);
            let empty_rows: Vec<usize> = (0..r).filter(|_| rng.below(5) == 0).collect();
            let l = layer(&mut rng, r, c, k, b, filled, &empty_rows);
            let x = rng.values(n * c * b);
            let gy = rng.values(n * r * b);
            let ctx = Context::sim(Sm::Sm80);
            let what = format!("R{r} C{c} K{k} B{b} N{n} filled {filled} empty {empty_rows:?}");
            check(&ctx.default_stream(), &l, n, &x, &gy, usize::MAX, &what);
        }
    }
}
