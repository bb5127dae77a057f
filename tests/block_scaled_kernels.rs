//! The block-scaled kernels on the simulator, bit for bit against the host
//! model: the hardware-cvt variants (`sm_100a`, `sm_120a`; FP8 cvt on
//! sm_90) and the integer software path (sm_70, sm_80, sm_90, and forced on
//! sm_100a); every format, scale mode and layout; M ∈ {1, 127, 128, 129,
//! 300} × nkb ∈ {1, 3, 4, 5, 9} × L ∈ {1, 2} with odd K and partial last
//! blocks; special blocks (NaN, ±Inf, all-zero, subnormal amax, 2^-127,
//! the 0xFE inverse, NVFP4 `sb = 0`, E2M1 ties, Floor/RCeil boundaries);
//! unaligned and oversized buffers (scalar path, untouched tails, zeroed
//! padding); layout conversion; typed errors that write nothing; which
//! targets' PTX holds the hardware cvt; and the GPU when one is present.

use ptxsmith::kernels::block_scaled::ptx::{self, Codec};
use ptxsmith::kernels::block_scaled::{
    self, BlockScaled, Format, Quantization, Recipe, Relayout, ScaleDims, ScaleLayout, ScaleMode,
    Shape, launch,
};
use ptxsmith::runtime::{AsDeviceMut, Backend, Context, Ran, Stream};
use ptxsmith::testing::cuda_for_tests;
use ptxsmith::{Error, Sm};

mod common;
use common::{Rng, bits, foreign_get, foreign_put};

/// The simulated targets and codecs: hardware first.
fn configs() -> Vec<(Sm, Codec)> {
    vec![
        (Sm::Sm100a, Codec::Hardware),
        (Sm::Sm120a, Codec::Hardware),
        (Sm::Sm80, Codec::Software),
        (Sm::Sm70, Codec::Software),
        (Sm::Sm90, Codec::Software),
        (Sm::Sm90, Codec::Hardware),
        (Sm::Sm100a, Codec::Software),
    ]
}

/// What a generated block holds.
#[derive(Clone, Copy, Debug)]
enum Block {
    /// Random values around `2^e`.
    Plain(i32),
    /// A NaN somewhere (random sign and payload).
    Nan,
    /// ±Inf somewhere, large finite values next to it.
    Inf,
    /// Signed zeros only.
    Zero,
    /// Subnormal values only.
    Subnormal,
    /// Amax exactly 2^-127, smaller subnormals beside it.
    TwoPowM127,
    /// Amax `max_elem · 2^k` or one of its f32 neighbours.
    MaxBoundary(i32, i32),
    /// E2M1 decision points times `2^k` with amax `6 · 2^k`.
    Ties(i32),
    /// Values 2^-40 of the tensor's scale (NVFP4: `sb = 0`).
    Tiny,
}

const SPECIAL: [Block; 11] = [
    Block::Nan,
    Block::Inf,
    Block::Zero,
    Block::Subnormal,
    Block::TwoPowM127,
    Block::MaxBoundary(3, 1),
    Block::MaxBoundary(-20, -1),
    // RCeil's `amax · rn(1/max)` lands on the f32 subnormals around 2^-127
    // and just below 2^-126 (the `ue8m0x2` cvt's subnormal inputs).
    Block::MaxBoundary(-127, 1),
    Block::MaxBoundary(-126, -1),
    Block::Ties(-2),
    Block::Tiny,
];

fn fill_block(rng: &mut Rng, out: &mut [f32], kind: Block, f: Format) {
    let n = out.len();
    match kind {
        Block::Plain(e) => out.iter_mut().for_each(|x| *x = rng.scaled(e)),
        Block::Nan => {
            out.iter_mut().for_each(|x| *x = rng.scaled(2));
            let payload = 0x7F80_0001 | (rng.next() as u32 & 0x807F_FFFF);
            out[rng.below(n)] = f32::from_bits(payload);
        }
        Block::Inf => {
            out.iter_mut().for_each(|x| *x = rng.scaled(120));
            out[rng.below(n)] = if rng.next() & 1 == 0 {
                f32::INFINITY
            } else {
                f32::NEG_INFINITY
            };
        }
        Block::Zero => out
            .iter_mut()
            .for_each(|x| *x = if rng.next() & 1 == 0 { 0.0 } else { -0.0 }),
        Block::Subnormal => out
            .iter_mut()
            .for_each(|x| *x = f32::from_bits(rng.next() as u32 & 0x807F_FFFF)),
        Block::TwoPowM127 => {
            out.iter_mut()
                .for_each(|x| *x = f32::from_bits(rng.next() as u32 & 0x803F_FFFF));
            out[rng.below(n)] = f32::from_bits(0x0040_0000);
        }
        Block::MaxBoundary(k, step) => {
            out.iter_mut().for_each(|x| *x = rng.scaled(k - 2));
            let top = f.element_max() * 2f32.powi(k);
            let v = f32::from_bits((top.to_bits() as i64 + i64::from(step)) as u32);
            out[rng.below(n)] = if rng.next() & 1 == 0 { v } else { -v };
        }
        Block::Ties(k) => {
            let pts = [0.25f32, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0, 0.5, 3.0];
            for (i, x) in out.iter_mut().enumerate() {
                let s = if i % 3 == 1 { -1.0 } else { 1.0 };
                *x = s * pts[i % pts.len()] * 2f32.powi(k);
            }
            out[0] = 6.0 * 2f32.powi(k);
        }
        Block::Tiny => out.iter_mut().for_each(|x| *x = rng.scaled(-40)),
    }
}

/// An `[L, M, K]` tensor whose blocks are random, with `specials` spread
/// over it (one in `every` blocks) and a block of magnitude ~2^10 so that
/// NVFP4's global amax is large.
fn tensor(rng: &mut Rng, shape: &Shape, specials: &[Block], every: usize) -> Vec<f32> {
    let f = shape.format();
    let bs = f.block_size();
    let mut xs = vec![0f32; shape.len()];
    let mut b = 0;
    for row in xs.chunks_mut(shape.k()) {
        for block in row.chunks_mut(bs) {
            let kind = if !specials.is_empty() && b % every == every / 2 {
                specials[(b / every) % specials.len()]
            } else if b == 0 {
                Block::Plain(10)
            } else {
                Block::Plain(rng.below(60) as i32 - 30)
            };
            fill_block(rng, block, kind, f);
            b += 1;
        }
    }
    xs
}

/// Quantize and dequantize on `st` with `codec`, both equal to the host.
fn check(st: &Stream, codec: Codec, xs: &[f32], shape: Shape, r: Recipe, layout: ScaleLayout) {
    let what = format!(
        "{} {codec:?} {r:?} {layout:?} [{}, {}, {}]",
        st.context().sm(),
        shape.l(),
        shape.m(),
        shape.k()
    );
    let host = block_scaled::host::quantize(xs, shape, r, layout).unwrap();
    let dev = launch::quantize_on(st, quant(shape, r, layout), codec, xs).unwrap();
    assert_eq!(dev.scales, host.scales, "scales: {what}");
    assert_eq!(dev.codes, host.codes, "codes: {what}");
    assert_eq!(
        dev.global.map(|g| bits(&[g.amax, g.encode, g.decode])),
        host.global.map(|g| bits(&[g.amax, g.encode, g.decode])),
        "global: {what}"
    );
    let hy = block_scaled::host::dequantize(&host).unwrap();
    let dy = launch::dequantize_on(st, codec, &host).unwrap();
    assert_eq!(bits(&dy), bits(&hy), "dequantize: {what}");
}

/// The quantization of `shape` with `recipe`, scales in `layout`.
fn quant(shape: Shape, recipe: Recipe, layout: ScaleLayout) -> Quantization {
    Quantization {
        shape,
        recipe,
        layout,
    }
}

/// What a dequantize of `shape` needs: its format's default recipe (the
/// dequantize reads only the format), scales in `layout`.
fn deq(shape: Shape, layout: ScaleLayout) -> Quantization {
    quant(shape, Recipe::default_for(shape.format()), layout)
}

fn sim(sm: Sm) -> (Context, Stream) {
    let ctx = Context::sim(sm);
    let st = ctx.default_stream();
    (ctx, st)
}

/// Every target/codec × every recipe × every layout, on small tensors with
/// every special block, odd K and a partial last block.
#[test]
fn every_codec_recipe_and_layout_equals_host() {
    let mut rng = Rng(1);
    for (sm, codec) in configs() {
        let (_ctx, st) = sim(sm);
        for r in ptx::recipes() {
            let bs = r.format().block_size();
            for layout in ScaleLayout::ALL {
                let shape = Shape::new(2, 5, 2 * bs + 7, r.format()).unwrap();
                let xs = tensor(&mut rng, &shape, &SPECIAL, 2);
                check(&st, codec, &xs, shape, r, layout);
            }
        }
    }
}

/// M ∈ {1, 127, 128, 129, 300} × nkb ∈ {1, 3, 4, 5, 9} × L ∈ {1, 2}: every
/// (M, nkb) pair with L alternating, K = nkb·block − r for several r
/// (odd, even, multiple of 4: the vector path), rotating through the
/// recipes, layouts and codecs.
#[test]
fn shape_grid_equals_host() {
    let mut rng = Rng(2);
    let recipes = ptx::recipes();
    let configs = configs();
    let ctxs: Vec<_> = configs.iter().map(|&(sm, _)| sim(sm)).collect();
    let mut i = 0usize;
    for m in [1usize, 127, 128, 129, 300] {
        for nkb in [1usize, 3, 4, 5, 9] {
            for l in [1usize, 2] {
                if (m + nkb + l) % 2 == 1 && m != 300 {
                    continue; // half of the L axis, except for the largest M
                }
                let r = recipes[i % recipes.len()];
                let layout = ScaleLayout::ALL[i % 3];
                let c = i % configs.len();
                let bs = r.format().block_size();
                let cut = [0usize, 1, 4, 3, bs - 1][i % 5].min(bs - 1);
                let shape = Shape::new(l, m, nkb * bs - cut, r.format()).unwrap();
                let xs = tensor(&mut rng, &shape, &SPECIAL, 7);
                check(&ctxs[c].1, configs[c].1, &xs, shape, r, layout);
                i += 1;
            }
        }
    }
    assert!(i >= 25, "{i}");
}

/// Targeted blocks, one tensor per special kind, every recipe, on both
/// hardware targets and one software target.
#[test]
fn special_blocks_equal_host() {
    let mut rng = Rng(3);
    for (sm, codec) in [
        (Sm::Sm100a, Codec::Hardware),
        (Sm::Sm120a, Codec::Hardware),
        (Sm::Sm80, Codec::Software),
    ] {
        let (_ctx, st) = sim(sm);
        for r in ptx::recipes() {
            let bs = r.format().block_size();
            for kind in SPECIAL {
                // Odd K: the last FP4 byte's high nibble is padding.
                let shape = Shape::new(1, 3, 3 * bs - 3, r.format()).unwrap();
                let mut xs = vec![0f32; shape.len()];
                for (i, block) in xs.chunks_mut(bs).enumerate() {
                    let k = if i % 2 == 0 { kind } else { Block::Plain(0) };
                    fill_block(&mut rng, block, k, r.format());
                }
                check(&st, codec, &xs, shape, r, ScaleLayout::RowMajor);
                // The special kind alone (NVFP4: it sets the global amax).
                let mut xs = vec![0f32; shape.len()];
                fill_block(&mut rng, &mut xs, kind, r.format());
                check(&st, codec, &xs, shape, r, ScaleLayout::Blocked128x4);
            }
        }
    }
}

/// Contract corner cases with known bytes.
#[test]
fn golden_bytes() {
    let (_ctx, st) = sim(Sm::Sm100a);
    let mx4 = Recipe::new(Format::Mxfp4, ScaleMode::RCeil).unwrap();
    // A NaN block: scale 0xFF, codes 0x7; odd K = 3 leaves the padding
    // nibble 0.
    let shape = Shape::new(1, 1, 3, Format::Mxfp4).unwrap();
    let q = launch::quantize_on(
        &st,
        quant(shape, mx4, ScaleLayout::RowMajor),
        Codec::Hardware,
        &[1.0, f32::NAN, -2.0],
    )
    .unwrap();
    assert_eq!(
        (q.scales.as_slice(), q.codes.as_slice()),
        (&[0xFFu8][..], &[0x77u8, 0x07][..])
    );
    // An Inf block: scale 0xFE, the inverse 2^-127 keeps Inf → ±6 and
    // a huge finite value non-zero; −0 → 0x8.
    let q = launch::quantize_on(
        &st,
        quant(shape, mx4, ScaleLayout::RowMajor),
        Codec::Hardware,
        &[f32::NEG_INFINITY, 3e38, -0.0],
    )
    .unwrap();
    let host = block_scaled::host::quantize(
        &[f32::NEG_INFINITY, 3e38, -0.0],
        shape,
        mx4,
        ScaleLayout::RowMajor,
    )
    .unwrap();
    assert_eq!(q, host);
    assert_eq!(q.scales, [0xFE]);
    assert_eq!(q.codes[0] & 0xF, 0xF);
    assert_eq!(q.codes[1], 0x8);
    // NVFP4 sb = 0: a block 2^-40 below the global amax.
    let shape = Shape::new(1, 1, 32, Format::Nvfp4).unwrap();
    let mut xs = vec![1000.0f32; 32];
    xs[16..].iter_mut().for_each(|x| *x = 1e-9);
    xs[17] = -0.0;
    let nv = Recipe::default_for(Format::Nvfp4);
    let q = launch::quantize_on(
        &st,
        quant(shape, nv, ScaleLayout::RowMajor),
        Codec::Hardware,
        &xs,
    )
    .unwrap();
    assert_eq!(
        q,
        block_scaled::host::quantize(&xs, shape, nv, ScaleLayout::RowMajor).unwrap()
    );
    assert_eq!(q.scales[1], 0);
}

/// Sub-slices at odd offsets (the scalar path with K % 4 = 0), outputs
/// larger than needed (their tails untouched), and padding bytes zeroed
/// over garbage.
#[test]
fn unaligned_and_oversized_buffers() {
    let mut rng = Rng(4);
    for (sm, codec) in [(Sm::Sm100a, Codec::Hardware), (Sm::Sm80, Codec::Software)] {
        let (ctx, st) = sim(sm);
        for r in ptx::recipes() {
            let shape = Shape::new(2, 130, 64, r.format()).unwrap();
            let xs = tensor(&mut rng, &shape, &SPECIAL, 5);
            let layout = ScaleLayout::Blocked128x4;
            let host = block_scaled::host::quantize(&xs, shape, r, layout).unwrap();
            let nv = r.mode() == ScaleMode::Nvfp4;
            // NVFP4's x must be 16-byte aligned (absmax pass): offset 4 floats.
            let xoff = if nv { 4 } else { 1 };
            let mut xpad = vec![7.0f32; xoff];
            xpad.extend_from_slice(&xs);
            let x = st.upload(&xpad).unwrap();
            let xv = x.slice(xoff..).unwrap();
            let codes_len = shape.codes_len();
            let slen = layout.len(&shape.scale_dims());
            let mut codes = st.upload(&vec![0xAAu8; codes_len + 9]).unwrap();
            let mut scales = st.upload(&vec![0xAAu8; slen + 16 + 5]).unwrap();
            let mut global = st.upload(&[0f32; 4]).unwrap();
            {
                let mut cv = codes.slice_mut(3..).unwrap();
                let mut sv = scales.slice_mut(16..).unwrap();
                let g = nv.then(|| global.as_device_mut());
                launch::quantize_dev(
                    &st,
                    quant(shape, r, layout),
                    codec,
                    &xv,
                    &mut cv,
                    &mut sv,
                    g,
                )
                .unwrap();
            }
            let c = st.to_vec(&codes).unwrap();
            let s = st.to_vec(&scales).unwrap();
            assert_eq!(&c[3..3 + codes_len], &host.codes[..], "{sm} {r:?}");
            assert!(c[..3].iter().chain(&c[3 + codes_len..]).all(|&b| b == 0xAA));
            assert_eq!(&s[16..16 + slen], &host.scales[..], "{sm} {r:?}");
            assert!(s[..16].iter().chain(&s[16 + slen..]).all(|&b| b == 0xAA));
            // Dequantize from an odd code offset into an odd y offset.
            let mut cbuf = vec![0u8; 1];
            cbuf.extend_from_slice(&host.codes);
            let cdev = st.upload(&cbuf).unwrap();
            let mut y = ctx.alloc_zeroed::<f32>(shape.len() + 3).unwrap();
            let gv = host.global.map(|g| [g.amax, g.encode, g.decode]);
            let gdev = gv.map(|g| st.upload(&g).unwrap());
            let sdev = st.upload(&host.scales).unwrap();
            {
                let cv = cdev.slice(1..).unwrap();
                let mut yv = y.slice_mut(1..).unwrap();
                let g = gdev.as_ref().map(|g| g.slice(..).unwrap());
                launch::dequantize_dev(&st, deq(shape, layout), codec, &cv, &sdev, g, &mut yv)
                    .unwrap();
            }
            let yv = st.to_vec(&y).unwrap();
            let hy = block_scaled::host::dequantize(&host).unwrap();
            assert_eq!(bits(&yv[1..=shape.len()]), bits(&hy), "{sm} {r:?}");
            assert_eq!(bits(&[yv[0], yv[shape.len() + 1]]), [0, 0]);
        }
    }
}

/// Every pair of layouts over the grid's extents, padding written 0 over
/// garbage, equal to the host conversion.
#[test]
fn layout_conversion_equals_host() {
    let mut rng = Rng(5);
    let (_ctx, st) = sim(Sm::Sm80);
    for (l, m, nkb) in [
        (1, 1, 1),
        (2, 127, 3),
        (1, 128, 4),
        (2, 129, 5),
        (1, 300, 9),
        (2, 300, 1),
    ] {
        let dims = ScaleDims::new(l, m, nkb).unwrap();
        let logical: Vec<u8> = (0..dims.count()).map(|_| rng.next() as u8 | 1).collect();
        for from in ScaleLayout::ALL {
            let src = block_scaled::convert(&logical, &dims, ScaleLayout::RowMajor, from).unwrap();
            for to in ScaleLayout::ALL {
                let want = block_scaled::convert(&src, &dims, from, to).unwrap();
                let s = st.upload(&src).unwrap();
                let mut d = st.upload(&vec![0xAAu8; to.len(&dims)]).unwrap();
                launch::convert_layout_dev(&st, Relayout { dims, from, to }, &s, &mut d).unwrap();
                assert_eq!(st.to_vec(&d).unwrap(), want, "{dims:?} {from:?} → {to:?}");
                let (got, ran) =
                    launch::convert_layout(Backend::Sim, Relayout { dims, from, to }, &src)
                        .unwrap();
                assert_eq!((got, ran), (want, Ran::Sim));
            }
        }
    }
}

/// The slice API on the simulator and the host give the same bytes.
#[test]
fn slice_api_on_every_backend() {
    let mut rng = Rng(6);
    for r in ptx::recipes() {
        let shape = Shape::new(1, 129, 70, r.format()).unwrap();
        let xs = tensor(&mut rng, &shape, &SPECIAL, 3);
        let (h, ran) =
            launch::quantize(Backend::Host, quant(shape, r, ScaleLayout::Atom6D), &xs).unwrap();
        assert_eq!(ran, Ran::Host);
        let (s, ran) =
            launch::quantize(Backend::Sim, quant(shape, r, ScaleLayout::Atom6D), &xs).unwrap();
        assert_eq!((&s, ran), (&h, Ran::Sim));
        let (hy, _) = launch::dequantize(Backend::Host, &h).unwrap();
        let (sy, _) = launch::dequantize(Backend::Sim, &h).unwrap();
        assert_eq!(bits(&sy), bits(&hy));
    }
}

fn invalid(r: ptxsmith::Result<()>, needle: &str) {
    match r {
        Err(Error::InvalidArgument(msg)) => assert!(msg.contains(needle), "{msg}"),
        r => panic!("expected InvalidArgument with {needle:?}, got {r:?}"),
    }
}

/// Typed errors naming the values; nothing written on error.
#[test]
fn errors_write_nothing() {
    let (ctx, st) = sim(Sm::Sm80);
    let mx = Recipe::default_for(Format::Mxfp8E4m3);
    let nv = Recipe::default_for(Format::Nvfp4);
    let shape = Shape::new(1, 3, 40, Format::Mxfp8E4m3).unwrap();
    let nshape = Shape::new(1, 3, 40, Format::Nvfp4).unwrap();
    let x = st.upload(&vec![1.5f32; 120]).unwrap();
    let pad = ScaleLayout::Blocked128x4;
    let slen = pad.len(&shape.scale_dims());
    let mut codes = st.upload(&[0xAAu8; 200]).unwrap();
    let mut scales = st.upload(&vec![0xAAu8; slen + 1]).unwrap();
    let mut g = st.upload(&[9f32; 3]).unwrap();
    let sw = Codec::Software;
    // A software-codec quantize on `st` that fails naming `needle`.
    macro_rules! quantize_fails {
        ($q:expr, $x:expr, $codes:expr, $scales:expr, $g:expr => $needle:expr) => {
            invalid(
                launch::quantize_dev(&st, $q, sw, $x, $codes, $scales, $g),
                $needle,
            )
        };
    }
    quantize_fails!(quant(shape, nv, pad), &x, &mut codes, &mut scales, None => "recipe is");
    let mut short = ctx.alloc::<u8>(119).unwrap();
    quantize_fails!(quant(shape, mx, pad), &x, &mut short, &mut scales, None
        => "codes has 119 elements");
    let mut small = ctx.alloc::<u8>(slen - 1).unwrap();
    quantize_fails!(quant(shape, mx, pad), &x, &mut codes, &mut small, None
        => "scales has 511 elements");
    {
        let mut off = scales.slice_mut(1..).unwrap();
        quantize_fails!(quant(shape, mx, pad), &x, &mut codes, &mut off, None
            => "not 16-byte aligned");
    }
    let xs = x.slice(..119).unwrap();
    quantize_fails!(quant(shape, mx, pad), &xs, &mut codes, &mut scales, None
        => "x has 119 elements");
    quantize_fails!(quant(nshape, nv, pad), &x, &mut codes, &mut scales, None
        => "NVFP4 needs a global-scale buffer");
    quantize_fails!(quant(shape, mx, pad), &x, &mut codes, &mut scales, Some(g.as_device_mut())
        => "has no global scale");
    {
        let gs = g.slice_mut(..2).unwrap();
        quantize_fails!(quant(nshape, nv, pad), &x, &mut codes, &mut scales, Some(gs)
            => "global has 2 elements");
    }
    match launch::quantize_dev(
        &st,
        quant(shape, mx, pad),
        Codec::Hardware,
        &x,
        &mut codes,
        &mut scales,
        None,
    ) {
        Err(Error::UnsupportedFeature { sm: Sm::Sm80, .. }) => {}
        r => panic!("{r:?}"),
    }
    // Nothing was written by any of them.
    assert!(st.to_vec(&codes).unwrap().iter().all(|&b| b == 0xAA));
    assert!(st.to_vec(&scales).unwrap().iter().all(|&b| b == 0xAA));
    assert_eq!(st.to_vec(&g).unwrap(), [9.0; 3]);
    // Dequantize and convert.
    let mut y = st.upload(&vec![5f32; 120]).unwrap();
    invalid(
        launch::dequantize_dev(&st, deq(shape, pad), sw, &codes, &small, None, &mut y),
        "scales has 511 elements",
    );
    let mut ys = y.slice_mut(..119).unwrap();
    invalid(
        launch::dequantize_dev(&st, deq(shape, pad), sw, &codes, &scales, None, &mut ys),
        "y has 119 elements",
    );
    invalid(
        launch::dequantize_dev(&st, deq(nshape, pad), sw, &codes, &scales, None, &mut y),
        "NVFP4 needs",
    );
    assert!(st.to_vec(&y).unwrap().iter().all(|&v| v == 5.0));
    let dims = shape.scale_dims();
    invalid(
        launch::convert_layout_dev(
            &st,
            Relayout {
                dims,
                from: pad,
                to: ScaleLayout::RowMajor,
            },
            &small,
            &mut codes,
        ),
        "src has 511 elements",
    );
    let mut tiny = ctx.alloc::<u8>(5).unwrap();
    invalid(
        launch::convert_layout_dev(
            &st,
            Relayout {
                dims,
                from: pad,
                to: ScaleLayout::RowMajor,
            },
            &scales,
            &mut tiny,
        ),
        "dst has 5 elements",
    );
    // Slice API: host-model errors before anything runs.
    assert!(Shape::new(1, 0, 4, Format::Mxfp4).is_err());
    assert!(Shape::new(usize::MAX, 2, 2, Format::Mxfp4).is_err());
    assert!(Recipe::new(Format::Nvfp4, ScaleMode::RCeil).is_err());
    assert!(Recipe::new(Format::Mxfp4, ScaleMode::Nvfp4).is_err());
    invalid(
        launch::quantize(Backend::Sim, quant(shape, mx, pad), &[1.0; 3]).map(drop),
        "xs has 3 elements",
    );
    let mut q: BlockScaled = block_scaled::host::quantize(&[1.0; 120], shape, mx, pad).unwrap();
    q.scales.pop();
    assert!(launch::dequantize(Backend::Sim, &q).is_err());
    assert!(
        launch::convert_layout(
            Backend::Sim,
            Relayout {
                dims,
                from: pad,
                to: ScaleLayout::Atom6D
            },
            &[0; 3]
        )
        .is_err()
    );
}

/// The hardware cvts appear in the sm_100a/sm_120a PTX and nowhere else;
/// with the pinned ptxas, every codec's variants assemble there.
#[test]
fn hardware_cvt_only_on_the_arch_specific_targets() {
    for sm in Sm::ALL {
        let hw = sm == Sm::Sm100a || sm == Sm::Sm120a;
        let v = ptx::variants(sm).unwrap();
        let has = |needle: &str| v.iter().any(|m| m.ptx.contains(needle));
        assert_eq!(has("cvt.rn.satfinite.e2m1x2.f32"), hw, "{sm}");
        assert_eq!(has("cvt.rp.satfinite.ue8m0x2.f32"), hw, "{sm}");
        assert_eq!(has("cvt.rn.f16x2.e2m1x2"), hw, "{sm}");
        assert_eq!(
            has("cvt.rn.satfinite.e4m3x2.f32"),
            sm.supports(ptxsmith::Feature::Fp8Cvt)
        );
        // Explicit rounding only; no approximations, flushes or atomics.
        for m in &v {
            for line in m.ptx.lines() {
                let t = line.trim_start();
                assert!(
                    !t.contains(".approx") && !t.contains(".ftz"),
                    "{}: {t}",
                    m.kernel
                );
                assert!(
                    !t.starts_with("atom.") && !t.starts_with("red."),
                    "{}: {t}",
                    m.kernel
                );
            }
        }
    }
    let Some(tools) = ptxsmith::nvtools::NvTools::for_tests() else {
        return;
    };
    for sm in [Sm::Sm100a, Sm::Sm120a] {
        for r in ptx::recipes() {
            let m = ptx::generate_quantize(sm, r, Codec::Software).unwrap();
            assert!(!m.ptx.contains("e2m1x2") && !m.ptx.contains("ue8m0x2"));
            tools.assemble(&m.ptx, sm).unwrap();
        }
        for f in Format::ALL {
            let m = ptx::generate_dequantize(sm, f, Codec::Software).unwrap();
            tools.assemble(&m.ptx, sm).unwrap();
        }
    }
}

/// On a GPU: every recipe and layout, the default codec, equal to the host.
#[test]
fn gpu_equals_host_when_present() {
    let Some(ctx) = cuda_for_tests() else {
        return;
    };
    let st = ctx.default_stream();
    let codec = Codec::for_sm(ctx.sm());
    let mut rng = Rng(7);
    for r in ptx::recipes() {
        for layout in ScaleLayout::ALL {
            for (l, m, k) in [(2, 129, 161), (1, 300, 288), (1, 1, 1)] {
                let shape = Shape::new(l, m, k, r.format()).unwrap();
                let xs = tensor(&mut rng, &shape, &SPECIAL, 4);
                check(&st, codec, &xs, shape, r, layout);
            }
        }
    }
    let dims = ScaleDims::new(2, 300, 9).unwrap();
    let src: Vec<u8> = (0..dims.count()).map(|i| i as u8 | 1).collect();
    let want =
        block_scaled::convert(&src, &dims, ScaleLayout::RowMajor, ScaleLayout::Atom6D).unwrap();
    let got = launch::convert_layout_on(
        &st,
        Relayout {
            dims,
            from: ScaleLayout::RowMajor,
            to: ScaleLayout::Atom6D,
        },
        &src,
    )
    .unwrap();
    assert_eq!(got, want);
    // The slice API on the device, one recipe of each format family.
    for r in ptx::recipes().into_iter().step_by(2) {
        let shape = Shape::new(1, 33, 96, r.format()).unwrap();
        let xs = tensor(&mut rng, &shape, &SPECIAL, 4);
        let host = block_scaled::host::quantize(&xs, shape, r, ScaleLayout::RowMajor).unwrap();
        let (q, ran) =
            launch::quantize(Backend::Cuda, quant(shape, r, ScaleLayout::RowMajor), &xs).unwrap();
        assert_eq!(ran, Ran::Cuda);
        assert_eq!((&q.codes, &q.scales), (&host.codes, &host.scales), "{r:?}");
        let (y, ran) = launch::dequantize(Backend::Cuda, &host).unwrap();
        assert_eq!(ran, Ran::Cuda);
        assert_eq!(
            bits(&y),
            bits(&block_scaled::host::dequantize(&host).unwrap()),
            "{r:?}"
        );
    }
    let (got, ran) = launch::convert_layout(
        Backend::Cuda,
        Relayout {
            dims,
            from: ScaleLayout::RowMajor,
            to: ScaleLayout::Atom6D,
        },
        &src,
    )
    .unwrap();
    assert_eq!(ran, Ran::Cuda);
    assert_eq!(got, want);
}

#[test]
fn raw_entry_points_run_on_foreign_memory() {
    for (sm, codec) in [(Sm::Sm100a, Codec::Hardware), (Sm::Sm80, Codec::Software)] {
        raw_entry_points_on(&Context::sim(sm), codec);
    }
}

/// The same on plain driver allocations of a GPU or the driver emulator
/// (SKIP without one).
#[test]
fn gpu_raw_entry_points_run_on_driver_allocations() {
    let Some(ctx) = cuda_for_tests() else {
        return;
    };
    for codec in [Codec::for_sm(ctx.sm()), Codec::Software] {
        raw_entry_points_on(&ctx, codec);
    }
}

fn raw_entry_points_on(ctx: &Context, codec: Codec) {
    let sm = ctx.sm();
    {
        let raw = ctx.default_stream().raw();
        for (format, mode, layout) in [
            (Format::Nvfp4, ScaleMode::Nvfp4, ScaleLayout::Blocked128x4),
            (Format::Mxfp4, ScaleMode::RCeil, ScaleLayout::RowMajor),
            (Format::Mxfp8E4m3, ScaleMode::Floor, ScaleLayout::Atom6D),
        ] {
            let shape = Shape::new(2, 130, 70, format).unwrap();
            let recipe = Recipe::new(format, mode).unwrap();
            let mut rng = Rng(71);
            let x: Vec<f32> = (0..shape.len()).map(|_| rng.scaled(3)).collect();
            let want = block_scaled::host::quantize(&x, shape, recipe, layout).unwrap();
            let scale_len = layout.len(&shape.scale_dims());
            let px = foreign_put(ctx, &x);
            // Garbage in the outputs: padding must come out 0.
            let pc = foreign_put(ctx, &vec![0xAAu8; shape.codes_len()]);
            let ps = foreign_put(ctx, &vec![0xAAu8; scale_len]);
            let pg = (format == Format::Nvfp4).then(|| foreign_put(ctx, &[0f32; 3]));
            let py = foreign_put(ctx, &vec![0f32; shape.len()]);
            // SAFETY: live simulator allocations of the stated lengths
            // (the simulator's allocations are 256-byte aligned); outputs
            // overlap nothing; `raw` is this context's stream.
            unsafe {
                launch::quantize_raw(
                    &ptxsmith::runtime::Stream::from_raw(ctx, raw).unwrap(),
                    quant(shape, recipe, layout),
                    codec,
                    px,
                    pc,
                    ps,
                    pg,
                )
                .unwrap();
                launch::dequantize_raw(
                    &ptxsmith::runtime::Stream::from_raw(ctx, raw).unwrap(),
                    deq(shape, layout),
                    codec,
                    pc,
                    ps,
                    pg,
                    py,
                )
                .unwrap();
            }
            ctx.synchronize().unwrap();
            let what = format!("{format:?} {layout:?} on {sm}");
            assert_eq!(
                foreign_get::<u8>(ctx, pc, want.codes.len()),
                want.codes,
                "codes {what}"
            );
            assert_eq!(
                foreign_get::<u8>(ctx, ps, scale_len),
                want.scales,
                "scales {what}"
            );
            if let (Some(pg), Some(g)) = (pg, want.global) {
                let got = foreign_get::<f32>(ctx, pg, 3);
                assert_eq!(
                    bits(&got),
                    bits(&[g.amax, g.encode, g.decode]),
                    "global {what}"
                );
            }
            let y = block_scaled::host::dequantize(&want).unwrap();
            assert_eq!(
                bits(&foreign_get::<f32>(ctx, py, y.len())),
                bits(&y),
                "y {what}"
            );
        }
        // The checks that remain: alignment, the global buffer's presence.
        let shape = Shape::new(1, 4, 32, Format::Nvfp4).unwrap();
        let recipe = Recipe::new(Format::Nvfp4, ScaleMode::Nvfp4).unwrap();
        // One float more than x needs, so a view at px + 4 lies inside the
        // allocation and only its alignment is wrong.
        let px = foreign_put(ctx, &[0f32; 129]);
        let ps = foreign_put(ctx, &[0u8; 512]);
        let l = ScaleLayout::Blocked128x4;
        // SAFETY: refused before anything is queued.
        let e = unsafe {
            launch::quantize_raw(
                &ptxsmith::runtime::Stream::from_raw(ctx, raw).unwrap(),
                quant(shape, recipe, l),
                codec,
                px + 4,
                ps,
                ps,
                Some(px),
            )
        }
        .unwrap_err();
        assert!(e.to_string().contains("16-byte aligned"), "{e}");
        // SAFETY: refused before anything is queued.
        let e = unsafe {
            launch::quantize_raw(
                &ptxsmith::runtime::Stream::from_raw(ctx, raw).unwrap(),
                quant(shape, recipe, l),
                codec,
                px,
                ps,
                ps,
                None,
            )
        }
        .unwrap_err();
        assert!(e.to_string().contains("global-scale buffer"), "{e}");
    }
}

/// The software E2M1 encoder on a strided sweep of every f32 magnitude
/// below 8 (both signs): MXFP4 `Floor` blocks that start with 4.0 get the
/// scale 127, whose multiplier 1.0 hands each value to the encoder as is.
#[test]
fn software_e2m1_encoder_on_a_sweep_below_8() {
    let step = 0x4100_0000u32 / (1 << 15);
    let mut x = Vec::new();
    for (i, b) in (0..0x4100_0000u32).step_by(step as usize).enumerate() {
        if x.len() % 32 == 0 {
            x.push(4.0);
        }
        let v = f32::from_bits(b);
        x.push(if i % 2 == 0 { v } else { -v });
    }
    // The decision points and their neighbours too.
    for p in [0.25f32, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0] {
        for b in [p.to_bits() - 1, p.to_bits(), p.to_bits() + 1] {
            if x.len() % 32 == 0 {
                x.push(4.0);
            }
            x.push(f32::from_bits(b));
        }
    }
    while x.len() % 32 != 0 {
        x.push(0.0);
    }
    let shape = Shape::new(1, x.len() / 32, 32, Format::Mxfp4).unwrap();
    let recipe = Recipe::new(Format::Mxfp4, ScaleMode::Floor).unwrap();
    let want = block_scaled::host::quantize(&x, shape, recipe, ScaleLayout::RowMajor).unwrap();
    assert!(want.scales.iter().all(|&s| s == 127));
    for sm in [Sm::Sm80, Sm::Sm100a] {
        let ctx = Context::sim(sm);
        let st = ctx.default_stream();
        let got = launch::quantize_on(
            &st,
            quant(shape, recipe, ScaleLayout::RowMajor),
            Codec::Software,
            &x,
        )
        .unwrap();
        assert_eq!(got.codes, want.codes, "software E2M1 on {sm}");
    }
}
