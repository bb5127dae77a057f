//! Unit tests of the codec: the software spec against the host codec, the
//! RNE shift form, the Rust model of the emitted encoder, and the hardware
//! path's NaN-code canonicalisation on the simulator.

use super::*;
use crate::dsl::params::Ptr;
use crate::kernels::fp8::host;
use crate::target::Sm;

#[test]
fn sw_spec_matches_the_host_codec() {
    for f in [Format::E4M3, Format::E5M2] {
        let s = SwSpec::of(f);
        assert_eq!(s.max_bits, f.max_finite().to_bits(), "{f:?}");
        assert_eq!(s.max_code, u32::from(f.max_code()), "{f:?}");
        let z = f32::from_bits(s.zero_max_bits);
        assert_eq!(
            f.encode(z),
            0,
            "{f:?}: half the smallest subnormal rounds to 0"
        );
        assert_eq!(f.encode(f32::from_bits(s.zero_max_bits + 1)), 1, "{f:?}");
        assert_eq!(f.decode(1).to_bits(), s.sub_unit_bits, "{f:?}");
        assert_eq!(f.decode(1 << s.mbits).to_bits(), s.min_normal_bits, "{f:?}");
        for c in 0..=0x7Fu8 {
            assert_eq!(
                f.decode(c).is_nan(),
                u32::from(c) >= s.first_nan_code,
                "{f:?} {c:#x}"
            );
        }
    }
    assert_eq!(SwSpec::of(Format::E4M3).first_nan_code, 0x7F);
    assert_eq!(SwSpec::of(Format::E5M2).first_nan_code, 0x7D);
}

#[test]
fn rne_shift_equals_the_compare_form() {
    let cmp_form = |v: u32, s: u32| {
        let kept = v >> s;
        let dropped = v & ((1 << s) - 1);
        let half = 1 << (s - 1);
        kept + u32::from(dropped > half || (dropped == half && kept & 1 == 1))
    };
    for s in 1..=24 {
        for v in (0u32..1 << 25)
            .step_by(97)
            .chain([(1 << 25) - 1, 3 << (s - 1), 1 << (s - 1)])
        {
            assert_eq!(rne_shr_model(v, s), cmp_form(v, s), "v={v:#x} s={s}");
        }
    }
}

/// The emitted algorithm (modelled in Rust) equals the host encoder on
/// a stride through all 2³² bit patterns plus every boundary region.
#[test]
fn sw_encoder_model_equals_host() {
    for f in [Format::E4M3, Format::E5M2] {
        let mut bits = 0u64;
        while bits < 1 << 32 {
            let x = f32::from_bits(bits as u32);
            assert_eq!(sw_encode_model(f, x), f.encode(x), "{f:?} {:#010x}", bits);
            bits += 4099;
        }
        // Every FP8 value, its midpoints and their f32 neighbours.
        for c in 0..=0xFFu8 {
            let v = f.decode(c);
            if !v.is_finite() {
                continue;
            }
            let next = f.decode(c.wrapping_add(1));
            let mut probes = vec![v];
            if next.is_finite() && (next.abs() > v.abs()) {
                probes.push((v + next) / 2.0);
            }
            for p in probes.clone() {
                probes.push(f32::from_bits(p.to_bits().wrapping_add(1)));
                probes.push(f32::from_bits(p.to_bits().wrapping_sub(1)));
            }
            for p in probes {
                assert_eq!(sw_encode_model(f, p), f.encode(p), "{f:?} {p:e}");
            }
        }
    }
    assert_eq!(sw_encode_model(Format::E4M3, f32::NAN), host::NAN_CODE);
}

crate::kernel_params! {
    struct CanonArgs => CanonRegs {
        w: Ptr<U32>,
        n: U32,
        out: Ptr<U32>,
    }
}

/// The simulator's FP8 cvt always writes `0x7F` for NaN, so the
/// hardware path's NaN canonicalisation is checked on its own: every
/// byte value in every position, next to other bytes.
#[test]
fn nan_code_canonicalisation_on_the_simulator() {
    use crate::dsl::params::KernelParams;
    use crate::runtime::{Context, LaunchConfig};
    for f in [Format::E4M3, Format::E5M2] {
        let mut b = KernelBuilder::new("nan_canon", Sm::Sm80);
        let p = b.params::<CanonArgs>();
        let i = b.global_id_x();
        let ok = b.setp(Cmp::Lt, i, p.n);
        b.if_(ok, |b| {
            let src = b.offset(p.w, i);
            let w = b.ld_global(src, 0);
            let c = canonicalize_nan_codes(b, f, w);
            let dst = b.offset(p.out, i);
            b.st_global(dst, 0, c);
        });
        let m = b.finish().unwrap();
        let mut words = Vec::new();
        for v in 0..=255u32 {
            for k in 0..4 {
                let others = [0x00u32, 0xFF, 0x7F, 0x12, 0xFE][(v as usize + k) % 5];
                let w = (others * 0x0101_0101) & !(0xFF << (8 * k)) | (v << (8 * k));
                words.push(w);
            }
        }
        let ctx = Context::sim(Sm::Sm80);
        let st = ctx.default_stream();
        let wb = st.upload(&words).unwrap();
        let mut ob = ctx.alloc::<u32>(words.len()).unwrap();
        let n = words.len() as u32;
        let args = CanonArgs {
            w: st.arg("w", &wb).unwrap(),
            n,
            out: st.arg_mut("out", &mut ob).unwrap(),
        };
        st.launch(&m, LaunchConfig::linear(n.div_ceil(128), 128), &args.args())
            .unwrap();
        let got: Vec<u32> = ob.to_vec().unwrap();
        let nan_code = |c: u32| f.decode(c as u8).is_nan();
        for (w, g) in words.iter().zip(got) {
            let want = (0..4).fold(0u32, |acc, k| {
                let c = (w >> (8 * k)) & 0xFF;
                acc | (if nan_code(c) { 0x7F } else { c }) << (8 * k)
            });
            assert_eq!(g, want, "{f:?} {w:#010x}");
        }
    }
}
