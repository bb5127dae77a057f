//! The FP8 kernels' tuning candidates ([`Fp8Tuning::candidates`], plus a
//! small shape that makes every loop wrap): identical results for every
//! candidate on the simulator (sm_80 with the software codec, sm_90 with
//! the hardware one), equal to the host model, on a ragged input (`n mod
//! 4 = 3`, NaN, infinities and the maximum away from block 0); and the
//! default tuning's modules are `generate`'s.

use ptxsmith::dsl::params::KernelParams;
use ptxsmith::kernels::fp8::ptx::{
    self, AbsmaxFinalizeArgs, AbsmaxPartialsArgs, Codec, DequantizeArgs, DequantizeStatsArgs,
    Fp8Tuning, Kind, QuantizeArgs, QuantizeScaledArgs,
};
use ptxsmith::kernels::fp8::{Format, host};
use ptxsmith::runtime::{Context, LaunchConfig, Stream};
use ptxsmith::{Error, Sm};

/// Everything one tuning produces: stats of the absmax passes, codes and
/// stats of current scaling, codes of delayed scaling, the bits of both
/// dequantizations.
#[derive(Debug, PartialEq)]
struct Outputs {
    absmax_stats: Vec<u32>,
    codes: Vec<u8>,
    stats: Vec<u32>,
    scaled_codes: Vec<u8>,
    y: Vec<u32>,
    y_stats: Vec<u32>,
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn run(st: &Stream, f: Format, codec: Codec, t: &Fp8Tuning, xs: &[f32]) -> Outputs {
    let ctx = st.context();
    let sm = ctx.sm();
    let n = xs.len();
    let n64 = n as u64;
    let m = |kind| ptx::generate_tuned(sm, kind, f, codec, t).unwrap();
    let blocks = t.grid_blocks(n64, ctx.multiprocessor_count());
    let cfg = LaunchConfig::linear(blocks, t.threads);
    let x = st.upload(xs).unwrap();
    let mut partials = ctx.alloc::<f32>(blocks as usize).unwrap();
    let (mut s1, mut s2) = (ctx.alloc::<f32>(3).unwrap(), ctx.alloc::<f32>(3).unwrap());
    let (mut c1, mut c2) = (ctx.alloc::<u8>(n).unwrap(), ctx.alloc::<u8>(n).unwrap());
    let (mut y1, mut y2) = (ctx.alloc::<f32>(n).unwrap(), ctx.alloc::<f32>(n).unwrap());
    let a = AbsmaxPartialsArgs {
        x: st.arg("x", &x).unwrap(),
        n: n64,
        partials: st.arg_mut("partials", &mut partials).unwrap(),
    };
    st.launch(&m(Kind::AbsmaxPartials), cfg, &a.args()).unwrap();
    let a = AbsmaxFinalizeArgs {
        partials: st.arg("partials", &partials).unwrap(),
        count: blocks,
        stats: st.arg_mut("stats", &mut s1).unwrap(),
    };
    let one = LaunchConfig::linear(1, t.threads);
    st.launch(&m(Kind::AbsmaxFinalize), one, &a.args()).unwrap();
    let a = QuantizeArgs {
        x: st.arg("x", &x).unwrap(),
        n: n64,
        partials: st.arg("partials", &partials).unwrap(),
        count: blocks,
        stats: st.arg_mut("stats", &mut s2).unwrap(),
        codes: st.arg_mut("codes", &mut c1).unwrap(),
    };
    st.launch(&m(Kind::Quantize), cfg, &a.args()).unwrap();
    let a = QuantizeScaledArgs {
        x: st.arg("x", &x).unwrap(),
        n: n64,
        scale: 0.37,
        codes: st.arg_mut("codes", &mut c2).unwrap(),
    };
    st.launch(&m(Kind::QuantizeScaled), cfg, &a.args()).unwrap();
    let a = DequantizeArgs {
        codes: st.arg("codes", &c1).unwrap(),
        n: n64,
        scale_inv: 0.75,
        y: st.arg_mut("y", &mut y1).unwrap(),
    };
    st.launch(&m(Kind::Dequantize), cfg, &a.args()).unwrap();
    let a = DequantizeStatsArgs {
        codes: st.arg("codes", &c1).unwrap(),
        n: n64,
        stats: st.arg("stats", &s2).unwrap(),
        y: st.arg_mut("y", &mut y2).unwrap(),
    };
    st.launch(&m(Kind::DequantizeStats), cfg, &a.args())
        .unwrap();
    Outputs {
        absmax_stats: bits(&st.to_vec(&s1).unwrap()),
        codes: st.to_vec(&c1).unwrap(),
        stats: bits(&st.to_vec(&s2).unwrap()),
        scaled_codes: st.to_vec(&c2).unwrap(),
        y: bits(&st.to_vec(&y1).unwrap()),
        y_stats: bits(&st.to_vec(&y2).unwrap()),
    }
}

/// `n` values, `n mod 4 = 3`, with NaNs, infinities and the maximum late.
fn inputs(n: usize) -> Vec<f32> {
    let mut s = 0x2545_F491_4F6C_DD1Du64;
    let mut v: Vec<f32> = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 600.0
        })
        .collect();
    v[n / 3] = f32::NAN;
    v[n / 2] = f32::NEG_INFINITY;
    v
}

#[test]
fn every_candidate_gives_the_same_bits_as_the_host() {
    for (sm, codec) in [(Sm::Sm80, Codec::Software), (Sm::Sm90, Codec::Hardware)] {
        let st = Context::sim(sm).default_stream();
        let mut tunings = Fp8Tuning::candidates(sm);
        // A small shape: several grid-stride trips per thread, so the
        // unrolled dequantize loop and its remainder both run.
        tunings.push(Fp8Tuning {
            threads: 64,
            ctas_per_sm: 1,
            unroll: 8,
        });
        for f in [Format::E4M3, Format::E5M2] {
            for (xs, what) in [
                (inputs(9_003), "with NaN and -Inf"),
                (
                    inputs(9_003)
                        .into_iter()
                        .enumerate()
                        .map(|(i, x)| if i == 8_999 { 1234.5 } else { x % 100.0 })
                        .collect::<Vec<_>>(),
                    "finite, maximum late",
                ),
            ] {
                let want = host::quantize_as(&xs, f);
                let first = run(&st, f, codec, &tunings[0], &xs);
                let wstats = bits(&[want.amax, want.scale, want.scale_inv]);
                assert_eq!(first.stats, wstats, "{sm} {f:?} {what}");
                assert_eq!(first.absmax_stats, wstats, "{sm} {f:?} {what}");
                assert!(first.codes == want.codes, "{sm} {f:?} {what}: codes");
                let scaled = host::quantize_with_scale_as(&xs, 0.37, f).unwrap();
                assert!(first.scaled_codes == scaled, "{sm} {f:?} {what}");
                let y = host::dequantize_as(&want.codes, 0.75, f);
                assert_eq!(first.y, bits(&y), "{sm} {f:?} {what}");
                let y = host::dequantize_as(&want.codes, want.scale_inv, f);
                assert_eq!(first.y_stats, bits(&y), "{sm} {f:?} {what}");
                for t in &tunings[1..] {
                    let got = run(&st, f, codec, t, &xs);
                    assert!(got == first, "{sm} {f:?} {what}: {t:?} differs");
                }
            }
        }
    }
}

#[test]
fn the_default_tuning_is_generate() {
    for sm in Sm::ALL {
        let codec = Codec::for_sm(sm);
        let t = Fp8Tuning::default_for(sm);
        for kind in Kind::ALL {
            let a = ptx::generate(sm, kind, Format::E4M3, codec).unwrap();
            let b = ptx::generate_tuned(sm, kind, Format::E4M3, codec, &t).unwrap();
            assert_eq!(a.ptx, b.ptx, "{sm} {kind:?}");
        }
        let other = Fp8Tuning::candidates(sm)[1];
        let m = ptx::generate_tuned(sm, Kind::Quantize, Format::E4M3, codec, &other).unwrap();
        assert!(
            m.ptx.contains(&format!(".maxntid {}, 1, 1", other.threads)),
            "{sm}"
        );
    }
}

#[test]
fn an_invalid_tuning_is_refused_naming_the_value() {
    let t = Fp8Tuning {
        threads: 100,
        ctas_per_sm: 8,
        unroll: 4,
    };
    let e = ptx::generate_tuned(Sm::Sm80, Kind::Quantize, Format::E4M3, Codec::Software, &t)
        .unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(_)) && e.to_string().contains("threads = 100"),
        "{e}"
    );
}
