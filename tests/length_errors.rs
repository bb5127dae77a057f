//! Every family's wrong-length error names its argument: one argument with
//! a wrong length, through the slice API on `Backend::Sim` and through the
//! `_dev` entry points on a simulator context, gives
//! `Error::InvalidArgument` whose `what` is that argument's name and whose
//! `expected` and `got` are filled in (the README's promise; the lengths are
//! checked by `kernels::check`). Nothing here needs a GPU.

use ptxsmith::kernels::{block_ell, block_scaled, dot, fp8, hmm, logcumsumexp, score, viterbi};
use ptxsmith::runtime::{AsDevice, AsDeviceMut, Backend, Context, Stream};
use ptxsmith::{Error, Result, Sm};

/// `r` is an `InvalidArgument` naming `what`, with `expected` and `got`.
#[track_caller]
fn names<T: std::fmt::Debug>(r: Result<T>, what: &str) {
    match r {
        Err(Error::InvalidArgument(a)) => {
            assert_eq!(a.what, what, "{a}");
            assert!(!a.expected.is_empty(), "no `expected` in {a:?}");
            assert!(a.got.ends_with("elements"), "`got` is {:?} in {a}", a.got);
        }
        r => panic!("expected InvalidArgument naming {what:?}, got {r:?}"),
    }
}

fn sim() -> (Context, Stream) {
    let ctx = Context::sim(Sm::Sm80);
    let st = ctx.default_stream();
    (ctx, st)
}

#[test]
fn dot() {
    let shape = dot::Shape { rows: 2, n: 3 };
    names(
        dot::dot_rows(Backend::Sim, shape, &[0.0; 5], &[0.0; 3]),
        "x",
    );
    names(
        dot::dot_rows(Backend::Sim, shape, &[0.0; 6], &[0.0; 4]),
        "y",
    );
    let (ctx, st) = sim();
    let (x, y) = (
        st.upload(&[0f32; 6]).unwrap(),
        st.upload(&[0f32; 3]).unwrap(),
    );
    let mut out = ctx.alloc::<f32>(3).unwrap();
    names(dot::dot_rows_dev(&st, shape, &x, &y, &mut out), "out");
}

#[test]
fn fp8() {
    let mut codes = [0u8; 3];
    names(
        fp8::host::encode_slice(fp8::Format::E4M3, &[0.0; 4], &mut codes),
        "out",
    );
    let mut ys = [0f32; 3];
    names(
        fp8::host::decode_slice(fp8::Format::E4M3, &[0; 4], &mut ys),
        "out",
    );
    let (ctx, st) = sim();
    let enc = fp8::Encoding::for_sm(fp8::Format::E4M3, Sm::Sm80);
    let x = st.upload(&[1f32; 8]).unwrap();
    let mut codes = ctx.alloc::<u8>(7).unwrap();
    let mut stats = ctx.alloc::<f32>(3).unwrap();
    names(
        fp8::quantize_dev(&st, enc, &x, &mut codes, &mut stats),
        "codes",
    );
    let mut codes = ctx.alloc::<u8>(8).unwrap();
    let mut stats = ctx.alloc::<f32>(2).unwrap();
    names(
        fp8::quantize_dev(&st, enc, &x, &mut codes, &mut stats),
        "stats",
    );
    let mut y = ctx.alloc::<f32>(9).unwrap();
    names(fp8::dequantize_dev(&st, enc, 1.0, &codes, &mut y), "y");
}

#[test]
fn score() {
    let shape = score::ScoreShape::new(2, 4, 3).unwrap();
    names(
        score::score_block(Backend::Sim, shape, &[0.0; 5], &[0.0; 12]),
        "x",
    );
    names(
        score::score_block(Backend::Sim, shape, &[0.0; 6], &[0.0; 11]),
        "D",
    );
    let (ctx, st) = sim();
    let (x, d) = (
        st.upload(&[0f32; 6]).unwrap(),
        st.upload(&[0f32; 12]).unwrap(),
    );
    let mut out = ctx.alloc::<f32>(7).unwrap();
    names(
        score::score_block_dev(&st, shape, None, &x, &d, &mut out),
        "out",
    );
    let short = st.upload(&[0f32; 11]).unwrap();
    let mut out = ctx.alloc::<f32>(8).unwrap();
    names(
        score::score_block_dev(&st, shape, None, &x, &short, &mut out),
        "D",
    );
}

#[test]
fn viterbi() {
    let shape = viterbi::Shape {
        batch: 2,
        t: 3,
        s: 4,
    };
    let (pi, a, b, lengths) = ([0f32; 4], [0f32; 16], [0f32; 24], [3u32, 2]);
    let run = |pi: &[f32], a: &[f32], b: &[f32], lengths: &[u32]| {
        viterbi::viterbi(Backend::Sim, shape, lengths, pi, a, b)
    };
    names(run(&pi[..3], &a, &b, &lengths), "log_pi");
    names(run(&pi, &a[..15], &b, &lengths), "log_a");
    names(run(&pi, &a, &b[..23], &lengths), "log_b");
    names(run(&pi, &a, &b, &lengths[..1]), "lengths");
    let (ctx, st) = sim();
    let (dpi, da, db) = (
        st.upload(&pi).unwrap(),
        st.upload(&a).unwrap(),
        st.upload(&b).unwrap(),
    );
    let mut paths = ctx.alloc::<u32>(6).unwrap();
    let mut scores = ctx.alloc::<f32>(3).unwrap();
    let out = viterbi::DeviceOutputs {
        paths: &mut paths,
        scores: &mut scores,
    };
    names(
        viterbi::viterbi_dev(&st, shape, &lengths, &dpi, &da, &db, out),
        "scores",
    );
}

#[test]
fn logcumsumexp() {
    let shape = logcumsumexp::Shape::new(2, 5).unwrap();
    names(logcumsumexp::forward(Backend::Sim, shape, &[0.0; 9]), "x");
    names(
        logcumsumexp::backward(Backend::Sim, shape, &[0.0; 10], &[0.0; 11]),
        "g",
    );
    let (ctx, st) = sim();
    let x = st.upload(&[0f32; 10]).unwrap();
    let mut y = ctx.alloc::<f32>(9).unwrap();
    names(logcumsumexp::forward_dev(&st, shape, &x, &mut y), "y");
    let mut gx = ctx.alloc::<f32>(11).unwrap();
    names(
        logcumsumexp::backward_dev(&st, shape, &x, &x, &mut gx),
        "gx",
    );
}

#[test]
fn hmm() {
    let shape = hmm::Shape::new(2, 3, 4).unwrap();
    let (pi, a, b, lengths) = ([0f32; 4], [0f32; 16], [0f32; 24], [3u32, 2]);
    let run = |log_pi: &[f32], log_a: &[f32], log_b: &[f32], lengths: &[u32]| {
        let inputs = hmm::Inputs {
            log_pi,
            log_a,
            log_b,
            lengths,
        };
        hmm::forward_backward(Backend::Sim, shape, &inputs)
    };
    names(run(&pi[..3], &a, &b, &lengths), "log_pi");
    names(run(&pi, &a[..15], &b, &lengths), "log_a");
    names(run(&pi, &a, &b[..23], &lengths), "log_b");
    names(run(&pi, &a, &b, &lengths[..1]), "lengths");
    let (ctx, st) = sim();
    let (dpi, da, db) = (
        st.upload(&pi).unwrap(),
        st.upload(&a).unwrap(),
        st.upload(&b).unwrap(),
    );
    let inputs = hmm::DeviceInputs {
        log_pi: dpi.as_device(),
        log_a: da.as_device(),
        log_b: db.as_device(),
        lengths: &lengths,
    };
    let mut full = [(); 3].map(|_| ctx.alloc::<f32>(24).unwrap());
    let mut ll = ctx.alloc::<f32>(2).unwrap();
    let mut xi = ctx.alloc::<f32>(31).unwrap();
    let [alpha, beta, gamma] = &mut full;
    let out = hmm::DeviceOutputs {
        log_alpha: alpha.as_device_mut(),
        log_beta: beta.as_device_mut(),
        log_likelihood: ll.as_device_mut(),
        gamma: gamma.as_device_mut(),
        xi: xi.as_device_mut(),
    };
    names(hmm::forward_backward_dev(&st, shape, &inputs, out), "xi");
}

#[test]
fn block_ell() {
    // R = 2 block rows, C = 3 block columns, K = 2 slots, B = 16; N = 4.
    let dims = block_ell::Dims::new(2, 3, 2, 16).unwrap();
    let n = 4;
    let col = [0, 2, 1, -1];
    let x = vec![0f32; n * dims.in_features()];
    let values = vec![0f32; dims.values_len()];
    let bias = vec![0f32; dims.out_features()];
    let fwd = |x: &[f32], values: &[f32], col: &[i32], bias: &[f32]| {
        block_ell::forward(Backend::Sim, &dims, n, x, values, col, Some(bias))
    };
    names(fwd(&x[1..], &values, &col, &bias), "x");
    names(fwd(&x, &values[1..], &col, &bias), "values");
    names(fwd(&x, &values, &col[1..], &bias), "col");
    names(fwd(&x, &values, &col, &bias[1..]), "bias");
    let gy = vec![0f32; n * dims.out_features()];
    names(
        block_ell::grad_input(Backend::Sim, &dims, n, &gy[1..], &values, &col),
        "gy",
    );
    names(block_ell::grad_bias(Backend::Sim, &dims, n, &gy[1..]), "gy");
    let (ctx, st) = sim();
    let topo = block_ell::DeviceTopology::upload(&st, &dims, &col).unwrap();
    let (dx, dv) = (st.upload(&x).unwrap(), st.upload(&values).unwrap());
    let mut y = ctx.alloc::<f32>(n * dims.out_features() - 1).unwrap();
    names(
        block_ell::forward_dev(&st, &topo, n, &dx, &dv, None, &mut y),
        "y",
    );
}

#[test]
fn block_scaled() {
    use block_scaled::{Format, Quantization, Recipe, ScaleLayout, Shape};
    let shape = Shape::new(1, 2, 64, Format::Mxfp8E4m3).unwrap();
    let q = Quantization {
        shape,
        recipe: Recipe::default_for(Format::Mxfp8E4m3),
        layout: ScaleLayout::RowMajor,
    };
    let xs = vec![1f32; shape.len()];
    names(block_scaled::quantize(Backend::Sim, q, &xs[1..]), "xs");
    names(
        block_scaled::host::quantize(&xs[1..], shape, q.recipe, q.layout),
        "xs",
    );
    let good = block_scaled::host::quantize(&xs, shape, q.recipe, q.layout).unwrap();
    let mut bad = good.clone();
    bad.codes.pop();
    names(block_scaled::dequantize(Backend::Sim, &bad), "codes");
    let mut bad = good.clone();
    bad.scales.pop();
    names(block_scaled::dequantize(Backend::Sim, &bad), "scales");
    let (ctx, st) = sim();
    let dx = st.upload(&xs[1..]).unwrap();
    let mut codes = ctx.alloc::<u8>(shape.codes_len()).unwrap();
    let mut scales = ctx.alloc::<u8>(q.scales_len()).unwrap();
    let codec = block_scaled::Codec::for_sm(Sm::Sm80);
    names(
        block_scaled::quantize_dev(&st, q, codec, &dx, &mut codes, &mut scales, None),
        "x",
    );
    let (dcodes, dscales) = (
        st.upload(&good.codes).unwrap(),
        st.upload(&good.scales).unwrap(),
    );
    let mut y = ctx.alloc::<f32>(shape.len() - 1).unwrap();
    names(
        block_scaled::dequantize_dev(&st, q, codec, &dcodes, &dscales, None, &mut y),
        "y",
    );
}
