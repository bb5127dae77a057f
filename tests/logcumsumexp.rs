//! logcumsumexp, forward and backward: the host model against plain and
//! f64 references and finite differences, the simulator bit for bit
//! against the host model on ragged shapes and special values, and the GPU
//! when one is present.

use ptxsmith::kernels::logcumsumexp::{self as lcse, CHUNK, host, launch};
use ptxsmith::math::log_add_exp;
use ptxsmith::runtime::{Backend, Context, Ran, cuda_for_tests};
use ptxsmith::{Error, Sm};

mod common;
use common::{bits, foreign_get, foreign_put};

fn lcg(seed: u32) -> impl FnMut() -> f32 {
    let mut s = seed;
    move || {
        s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (s >> 8) as f32 / (1u32 << 24) as f32 * 2.0 - 1.0
    }
}

fn data(n: usize, seed: u32, scale: f32) -> Vec<f32> {
    let mut r = lcg(seed);
    (0..n).map(|_| r() * scale).collect()
}

/// `log Σ exp` of each prefix in f64, max-shifted.
fn reference(x: &[f32]) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    let (mut m, mut s) = (f64::NEG_INFINITY, 0f64);
    for &v in x {
        let v = f64::from(v);
        if v > m {
            s = s * (m - v).exp() + 1.0;
            m = v;
        } else {
            s += (v - m).exp();
        }
        out.push(m + s.ln());
    }
    out
}

#[test]
fn host_equals_the_plain_sequential_scan_up_to_one_chunk() {
    for t in [1, 2, 17, CHUNK - 1, CHUNK] {
        let x = data(t, t as u32, 10.0);
        let y = host::forward(&x, 1, t).unwrap();
        let mut acc = x[0];
        let mut want = vec![acc];
        for &v in &x[1..] {
            acc = log_add_exp(acc, v);
            want.push(acc);
        }
        assert_eq!(bits(&y), bits(&want), "T = {t}");
    }
}

/// The host model stays within `BOUND · 2^-23 · max(1, |ref|)` of the f64
/// reference (the tree changes only the association of the log-adds).
const BOUND: f64 = 16.0;

#[test]
fn host_is_close_to_the_f64_reference() {
    let mut worst = 0f64;
    for (t, scale, seed) in [
        (100, 3.0, 1),
        (1000, 10.0, 2),
        (5000, 1.0, 3),
        (3000, 30.0, 4),
    ] {
        let x = data(t, seed, scale);
        let y = host::forward(&x, 1, t).unwrap();
        for (k, (got, want)) in y.iter().zip(reference(&x)).enumerate() {
            let err = (f64::from(*got) - want).abs() / (want.abs().max(1.0) * 2f64.powi(-23));
            worst = worst.max(err);
            assert!(
                err <= BOUND,
                "T {t} k {k}: {got} vs {want} ({err:.2} units)"
            );
        }
    }
    println!("logcumsumexp host vs f64: worst {worst:.2} × 2^-23·max(1,|y|) (bound {BOUND})");
}

/// Rows with special values: a run of -inf first, +inf and NaN inside.
fn specials(rows: usize, t: usize, seed: u32) -> Vec<f32> {
    let mut x = data(rows * t, seed, 5.0);
    if rows >= 4 {
        x[..t].fill(f32::NEG_INFINITY); // row 0: all -inf
        x[t..t + t / 2].fill(f32::NEG_INFINITY); // row 1: a -inf run first
        x[2 * t + t / 2] = f32::INFINITY; // row 2: +inf inside
        x[3 * t + t / 3] = f32::NAN; // row 3: NaN inside
    }
    x
}

fn grads(n: usize, seed: u32) -> Vec<f32> {
    let mut g = data(n, seed, 1.0);
    for (i, v) in g.iter_mut().enumerate() {
        if i % 7 == 0 {
            *v = 0.0;
        }
    }
    g
}

#[test]
fn sim_equals_host_forward_and_backward_on_ragged_shapes() {
    for (rows, t) in [(4, 1), (4, 255), (4, 256), (4, 257), (5, 1000), (1, 700)] {
        let x = specials(rows, t, t as u32);
        let g = grads(rows * t, 7);
        let y = host::forward(&x, rows, t).unwrap();
        let gx = host::backward(&x, &y, &g, rows, t).unwrap();
        for sm in [Sm::Sm80, Sm::Sm70] {
            let ctx = Context::sim(sm);
            let st = ctx.default_stream();
            let gy = launch::forward_on(&st, &x, rows, t).unwrap();
            assert_eq!(bits(&gy), bits(&y), "forward {rows}×{t} {sm}");
            let ggx = launch::backward_on(&st, &x, &y, &g, rows, t).unwrap();
            assert_eq!(bits(&ggx), bits(&gx), "backward {rows}×{t} {sm}");
        }
        if rows >= 4 {
            // An all -inf row: -inf outputs, zero gradient (never NaN).
            assert!(y[..t].iter().all(|v| *v == f32::NEG_INFINITY));
            assert!(gx[..t].iter().all(|v| *v == 0.0), "{:?}", &gx[..t.min(8)]);
            // A -inf run: -inf until the first finite value, zero gradient.
            assert!(y[t..t + t / 2].iter().all(|v| *v == f32::NEG_INFINITY));
            assert!(gx[t..t + t / 2].iter().all(|v| *v == 0.0));
            // +inf: every later output +inf; NaN: every later output NaN.
            assert!(y[2 * t + t / 2..3 * t].iter().all(|v| *v == f32::INFINITY));
            assert!(y[3 * t + t / 3..4 * t].iter().all(|v| v.is_nan()));
        }
    }
}

/// `L(x) = Σ g_t y_t(x)` in f64.
fn loss(x: &[f64], g: &[f32]) -> f64 {
    let (mut m, mut s, mut l) = (f64::NEG_INFINITY, 0f64, 0f64);
    for (&v, &gt) in x.iter().zip(g) {
        if v > m {
            s = s * (m - v).exp() + 1.0;
            m = v;
        } else {
            s += (v - m).exp();
        }
        l += f64::from(gt) * (m + s.ln());
    }
    l
}

#[test]
fn gradient_matches_f64_finite_differences() {
    for (t, seed) in [(40, 1), (300, 2), (600, 3)] {
        let x = data(t, seed, 4.0);
        let g = grads(t, seed + 10);
        let y = host::forward(&x, 1, t).unwrap();
        let gx = host::backward(&x, &y, &g, 1, t).unwrap();
        let xd: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
        let h = 1e-6;
        for i in (0..t).step_by(t / 20 + 1) {
            let (mut up, mut dn) = (xd.clone(), xd.clone());
            up[i] += h;
            dn[i] -= h;
            let fd = (loss(&up, &g) - loss(&dn, &g)) / (2.0 * h);
            let err = (f64::from(gx[i]) - fd).abs();
            assert!(
                err <= 1e-4 * (1.0 + fd.abs()),
                "T {t} i {i}: {} vs {fd}",
                gx[i]
            );
        }
    }
}

#[test]
fn slice_api_on_every_backend_but_cuda_and_device_entry_points() {
    let (rows, t) = (3, 600);
    let x = data(rows * t, 5, 6.0);
    let g = grads(rows * t, 6);
    let want = host::forward(&x, rows, t).unwrap();
    for backend in [Backend::Host, Backend::Sim] {
        let (y, ran) = lcse::forward(backend, &x, rows, t).unwrap();
        assert_eq!(
            ran,
            if backend == Backend::Host {
                Ran::Host
            } else {
                Ran::Sim
            }
        );
        assert_eq!(bits(&y), bits(&want));
        let (gx, _) = lcse::backward(backend, &x, &y, &g, rows, t).unwrap();
        assert_eq!(
            bits(&gx),
            bits(&host::backward(&x, &want, &g, rows, t).unwrap())
        );
    }
    // Device buffers: forward feeds backward without a download.
    let ctx = Context::sim(Sm::Sm80);
    let st = ctx.default_stream();
    let (dx, dg) = (st.upload(&x).unwrap(), st.upload(&g).unwrap());
    let mut dy = ctx.alloc::<f32>(rows * t).unwrap();
    let mut dgx = ctx.alloc::<f32>(rows * t).unwrap();
    let before = st.traffic();
    lcse::forward_dev(&st, &dx, &mut dy, rows, t).unwrap();
    lcse::backward_dev(&st, &dx, &dy, &dg, &mut dgx, rows, t).unwrap();
    assert_eq!(st.traffic().since(&before).downloads, 0);
    assert_eq!(bits(&dy.to_vec().unwrap()), bits(&want));
}

#[test]
fn bad_input_is_a_typed_error() {
    let e = host::forward(&[1.0; 5], 2, 3).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("5") && m.contains("2 × 3")),
        "{e}"
    );
    let e = host::forward(&[], usize::MAX, 3).unwrap_err();
    assert!(e.to_string().contains("overflows"), "{e}");
    let e = host::backward(&[1.0; 6], &[1.0; 6], &[1.0; 5], 2, 3).unwrap_err();
    assert!(e.to_string().contains("g has 5"), "{e}");
    let ctx = Context::sim(Sm::Sm80);
    let st = ctx.default_stream();
    let x = st.upload(&[1f32; 6]).unwrap();
    let mut y = ctx.alloc::<f32>(5).unwrap();
    let e = lcse::forward_dev(&st, &x, &mut y, 2, 3).unwrap_err();
    assert!(e.to_string().contains("y has 5"), "{e}");
    // Empty shapes are fine and launch nothing.
    assert!(host::forward(&[], 0, 7).unwrap().is_empty());
    assert!(host::forward(&[], 3, 0).unwrap().is_empty());
    assert_eq!(launch::forward_on(&st, &[], 3, 0).unwrap().len(), 0);
    assert_eq!(st.traffic().launches, 0);
}

#[test]
fn ptx_has_no_approximate_instruction_or_atomic_on_any_sm() {
    for sm in Sm::ALL {
        for m in lcse::ptx::variants(sm).unwrap() {
            for bad in [
                ".approx",
                "ex2.",
                "lg2.",
                ".ftz",
                "rcp.",
                "div.rn.f32",
                "sqrt.",
            ] {
                assert!(
                    !m.ptx.contains(bad),
                    "{} on {sm} contains `{bad}`",
                    m.kernel
                );
            }
            for line in m.ptx.lines() {
                let ins = line.trim_start().trim_start_matches(['@', '!']);
                assert!(
                    !ins.starts_with("atom.") && !ins.starts_with("red."),
                    "{line}"
                );
            }
        }
    }
}

#[test]
fn gpu_logcumsumexp_matches_the_host_model() {
    let Some(ctx) = cuda_for_tests() else { return };
    let st = ctx.default_stream();
    // Many chunks per row, two rows of 2^20 (4096 chunks folded), many
    // short rows; smaller on the driver emulator (kernels on the simulator).
    let shapes = if ptxsmith::runtime::on_emulator(&ctx) {
        [(16, 4096), (1, 1 << 17), (512, 33)]
    } else {
        [(64, 4096), (2, 1 << 20), (4096, 33)]
    };
    for (rows, t) in shapes {
        let x = specials(rows, t, 9);
        let g = grads(rows * t, 10);
        let y = host::forward(&x, rows, t).unwrap();
        assert_eq!(
            bits(&launch::forward_on(&st, &x, rows, t).unwrap()),
            bits(&y)
        );
        let gx = host::backward(&x, &y, &g, rows, t).unwrap();
        assert_eq!(
            bits(&launch::backward_on(&st, &x, &y, &g, rows, t).unwrap()),
            bits(&gx)
        );
    }
    // The slice API on the device.
    let (rows, t) = (3, 700);
    let (x, g) = (specials(rows, t, 11), grads(rows * t, 12));
    let y = host::forward(&x, rows, t).unwrap();
    let (got, ran) = launch::forward(Backend::Cuda, &x, rows, t).unwrap();
    assert_eq!(ran, Ran::Cuda);
    assert_eq!(bits(&got), bits(&y));
    let (got, ran) = launch::backward(Backend::Cuda, &x, &y, &g, rows, t).unwrap();
    assert_eq!(ran, Ran::Cuda);
    assert_eq!(
        bits(&got),
        bits(&host::backward(&x, &y, &g, rows, t).unwrap())
    );
}

#[test]
fn raw_entry_points_run_on_foreign_memory() {
    raw_entry_points_on(&Context::sim(Sm::Sm80));
}

/// The same on plain driver allocations of a GPU or the driver emulator
/// (SKIP without one).
#[test]
fn gpu_raw_entry_points_run_on_driver_allocations() {
    let Some(ctx) = cuda_for_tests() else { return };
    raw_entry_points_on(&ctx);
}

fn raw_entry_points_on(ctx: &Context) {
    let raw = ctx.default_stream().raw();
    let put = |data: &[f32]| foreign_put(ctx, data);
    let get = |addr: u64, n: usize| foreign_get::<f32>(ctx, addr, n);
    let (rows, t) = (3, 600);
    let x = data(rows * t, 41, 8.0);
    let g = data(rows * t, 42, 1.0);
    let y = host::forward(&x, rows, t).unwrap();
    let gx = host::backward(&x, &y, &g, rows, t).unwrap();
    let (px, pg, py) = (put(&x), put(&g), put(&vec![0.0; rows * t]));
    let pgx = put(&vec![0.0; rows * t]);
    // SAFETY: live simulator allocations of rows × T f32s; outputs overlap
    // no input; `raw` is this context's stream.
    unsafe {
        launch::forward_raw(ctx, raw, px, py, rows, t).unwrap();
        launch::backward_raw(ctx, raw, px, py, pg, pgx, rows, t).unwrap();
    }
    ctx.synchronize().unwrap();
    assert_eq!(bits(&get(py, rows * t)), bits(&y));
    assert_eq!(bits(&get(pgx, rows * t)), bits(&gx));
    // In place (x and y the same address).
    let pin = put(&x);
    // SAFETY: as above; the forward scan may run in place.
    unsafe { launch::forward_raw(ctx, raw, pin, pin, rows, t) }.unwrap();
    ctx.synchronize().unwrap();
    assert_eq!(bits(&get(pin, rows * t)), bits(&y));
}
