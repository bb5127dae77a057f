//! The block-scaled kernels' tuning candidates
//! ([`BlockScaledTuning::candidates`], plus 64 threads × 1 CTA per SM,
//! which makes every grid-stride loop wrap): identical results for every
//! candidate on the simulator (sm_80 with the software codec, sm_90 with
//! the hardware FP8 one), equal to the host model, for every format
//! (MXFP8 E4M3 and E5M2 with `RCeil`, MXFP4 with `Floor`, NVFP4) on small
//! ragged shapes (odd `K`, a partial last block, `M` past one 128-row
//! tile, `L = 2`) in both the row-major and the `Blocked128x4` layout,
//! with NaN and ±Inf blocks; the layout conversion too. And the default
//! tuning's modules are the plain generators'.

use ptxsmith::kernels::block_scaled::ptx::{self, BlockScaledTuning, Codec, Kernel};
use ptxsmith::kernels::block_scaled::{
    self as bs, Format, Recipe, ScaleLayout, ScaleMode, Shape, launch,
};
use ptxsmith::runtime::{Context, Stream};
use ptxsmith::{Error, Sm};

mod common;
#[path = "block_scaled_tuning/tuned.rs"]
mod tuned;
use common::bits;
use tuned::{Outputs, Tuned};

/// `n` values of varied magnitude (a binade per block of 16), a NaN and
/// a −Inf placed late.
fn inputs(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    let mut v: Vec<f32> = (0..n)
        .map(|i| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let u = (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
            u * (1u32 << (i / 16 % 12)) as f32
        })
        .collect();
    v[n * 2 / 3] = f32::NAN;
    v[n - 5] = f32::NEG_INFINITY;
    v
}

fn run(
    st: &Stream,
    shape: Shape,
    r: Recipe,
    layout: ScaleLayout,
    codec: Codec,
    t: &BlockScaledTuning,
    xs: &[f32],
) -> Outputs {
    let x = st.upload(xs).unwrap();
    let to = if layout == ScaleLayout::RowMajor {
        ScaleLayout::Atom6D
    } else {
        ScaleLayout::RowMajor
    };
    let k = Tuned::new(st, &x, shape, r, layout, to, codec, t);
    k.run_quantize(st);
    k.run_dequantize(st);
    k.run_convert(st);
    k.outputs(st, r.format() == Format::Nvfp4)
}

#[test]
fn every_candidate_gives_the_same_bits_as_the_host() {
    let recipes = [
        Recipe::new(Format::Mxfp8E4m3, ScaleMode::RCeil).unwrap(),
        Recipe::new(Format::Mxfp8E5m2, ScaleMode::RCeil).unwrap(),
        Recipe::new(Format::Mxfp4, ScaleMode::Floor).unwrap(),
        Recipe::default_for(Format::Nvfp4),
    ];
    // (L, M, K, layout): odd K with a partial last block (scalar path);
    // K % 4 = 0 but not 16 (32-bit path) across two 128-row tiles; K %
    // 16 = 0 (vector path) with two batches.
    let shapes = [
        (1, 3, 45, ScaleLayout::RowMajor),
        (1, 130, 36, ScaleLayout::Blocked128x4),
        (2, 5, 64, ScaleLayout::Blocked128x4),
    ];
    for (sm, codec) in [(Sm::Sm80, Codec::Software), (Sm::Sm90, Codec::Hardware)] {
        let st = Context::sim(sm).default_stream();
        let mut tunings = BlockScaledTuning::candidates(sm);
        tunings.push(BlockScaledTuning {
            threads: 64,
            ctas_per_sm: 1,
        });
        for r in recipes {
            for (i, &(l, m, k, layout)) in shapes.iter().enumerate() {
                let shape = Shape::new(l, m, k, r.format()).unwrap();
                let xs = inputs(shape.len(), 0x2545_F491_4F6C_DD1D ^ i as u64);
                let what = format!("{sm} {codec:?} {r:?} [{l}, {m}, {k}] {layout:?}");
                let want = bs::host::quantize(&xs, shape, r, layout).unwrap();
                let first = run(&st, shape, r, layout, codec, &tunings[0], &xs);
                assert_eq!(first.codes, want.codes, "codes: {what}");
                assert_eq!(first.scales, want.scales, "scales: {what}");
                if let Some(g) = want.global {
                    assert_eq!(
                        bits(
                            &first
                                .global
                                .iter()
                                .map(|&b| f32::from_bits(b))
                                .collect::<Vec<_>>()
                        ),
                        bits(&[g.amax, g.encode, g.decode]),
                        "global: {what}"
                    );
                }
                let y = bs::host::dequantize(&want).unwrap();
                let got: Vec<f32> = first.y.iter().map(|&b| f32::from_bits(b)).collect();
                assert_eq!(bits(&got), bits(&y), "dequantize: {what}");
                let to = if layout == ScaleLayout::RowMajor {
                    ScaleLayout::Atom6D
                } else {
                    ScaleLayout::RowMajor
                };
                let conv = bs::convert(&want.scales, &shape.scale_dims(), layout, to).unwrap();
                assert_eq!(first.converted, conv, "convert: {what}");
                for t in &tunings[1..] {
                    let got = run(&st, shape, r, layout, codec, t, &xs);
                    assert!(got == first, "{what}: {t:?} differs from the default");
                }
            }
        }
    }
}

#[test]
fn the_default_tuning_is_the_plain_generators() {
    for sm in Sm::ALL {
        let codec = Codec::for_sm(sm);
        let t = BlockScaledTuning::default_for(sm);
        let tuned = |k| ptx::generate_tuned(sm, k, codec, &t).unwrap();
        for r in ptx::recipes() {
            assert_eq!(
                ptx::generate_quantize(sm, r, codec).unwrap(),
                tuned(Kernel::Quantize(r)),
                "{sm} {r:?}"
            );
        }
        for f in Format::ALL {
            assert_eq!(
                ptx::generate_dequantize(sm, f, codec).unwrap(),
                tuned(Kernel::Dequantize(f)),
                "{sm} {f:?}"
            );
        }
        assert_eq!(
            ptx::generate_nvfp4_global(sm).unwrap(),
            tuned(Kernel::Nvfp4Global)
        );
        assert_eq!(ptx::generate_convert(sm).unwrap(), tuned(Kernel::Convert));
        let other = BlockScaledTuning::candidates(sm)[1];
        let r = Recipe::default_for(Format::Mxfp4);
        let m = ptx::generate_tuned(sm, Kernel::Quantize(r), codec, &other).unwrap();
        assert!(
            m.ptx.contains(&format!(".maxntid {}, 1, 1", other.threads)),
            "{sm}"
        );
        assert_ne!(m, tuned(Kernel::Quantize(r)), "{sm}: the key differs");
    }
}

#[test]
fn an_invalid_tuning_is_refused_naming_the_value() {
    let r = Recipe::default_for(Format::Mxfp8E4m3);
    for (t, needle) in [
        (
            BlockScaledTuning {
                threads: 100,
                ctas_per_sm: 8,
            },
            "threads = 100",
        ),
        (
            BlockScaledTuning {
                threads: 256,
                ctas_per_sm: 0,
            },
            "ctas_per_sm = 0",
        ),
    ] {
        let named = |e: Error| {
            assert!(
                matches!(&e, Error::InvalidArgument(_)) && e.to_string().contains(needle),
                "{e}"
            );
        };
        for k in [Kernel::Quantize(r), Kernel::Convert, Kernel::Nvfp4Global] {
            named(ptx::generate_tuned(Sm::Sm80, k, Codec::Software, &t).unwrap_err());
        }
        // The launch entries refuse it too, before anything is written.
        let st = Context::sim(Sm::Sm80).default_stream();
        let shape = Shape::new(1, 2, 32, Format::Mxfp8E4m3).unwrap();
        let q = bs::Quantization {
            shape,
            recipe: r,
            layout: ScaleLayout::RowMajor,
        };
        let x = st.upload(&[1.5f32; 64]).unwrap();
        let mut codes = st.upload(&[0xAAu8; 64]).unwrap();
        let mut scales = st.upload(&[0xAAu8; 2]).unwrap();
        let mut y = st.upload(&[5f32; 64]).unwrap();
        let sw = Codec::Software;
        named(
            launch::quantize_dev_tuned(&st, q, sw, &x, &mut codes, &mut scales, None, &t)
                .unwrap_err(),
        );
        named(
            launch::dequantize_dev_tuned(&st, q, sw, &codes, &scales, None, &mut y, &t)
                .unwrap_err(),
        );
        let relayout = bs::Relayout {
            dims: shape.scale_dims(),
            from: ScaleLayout::RowMajor,
            to: ScaleLayout::RowMajor,
        };
        let mut dst = st.upload(&[0xAAu8; 2]).unwrap();
        named(launch::convert_layout_dev_tuned(&st, relayout, &scales, &mut dst, &t).unwrap_err());
        assert_eq!(st.to_vec(&codes).unwrap(), [0xAA; 64]);
        assert_eq!(st.to_vec(&scales).unwrap(), [0xAA; 2]);
        assert_eq!(st.to_vec(&y).unwrap(), [5.0; 64]);
        assert_eq!(st.to_vec(&dst).unwrap(), [0xAA; 2]);
    }
}
