//! FP8 kernels: ptxas acceptance and the FP8 `cvt` per SM, minimal module
//! versions, bit-exactness against the host model on the simulator (both
//! codecs, both formats), the multi-block absmax, the public entry points'
//! backends and validation, and (with a device) all 2³² inputs through the
//! GPU encoder.

use ptxsmith::dsl::PtxModule;
use ptxsmith::dsl::params::KernelParams;
use ptxsmith::kernels::fp8::launch;
use ptxsmith::kernels::fp8::ptx::{self, BLOCK, Codec, Kind};
use ptxsmith::kernels::fp8::{self as fp8host, Format};
use ptxsmith::nvtools::NvTools;
use ptxsmith::runtime::backend::{Backend, Ran};
use ptxsmith::runtime::{Context, LaunchConfig, Stream};
use ptxsmith::{Error, Feature, Sm};

const FORMATS: [Format; 2] = [Format::E4M3, Format::E5M2];

/// Every (kind, format, codec) variant that exists on `sm`: the default
/// codec, plus the software codec forced where the hardware one is the
/// default.
fn variants(sm: Sm) -> Vec<(Kind, Format, Codec, PtxModule)> {
    let mut codecs = vec![Codec::for_sm(sm)];
    if codecs[0] == Codec::Hardware {
        codecs.push(Codec::Software);
    }
    let mut out = Vec::new();
    for f in FORMATS {
        for kind in Kind::ALL {
            for &c in &codecs {
                if !kind.uses_codec() && c != codecs[0] {
                    continue;
                }
                out.push((kind, f, c, ptx::generate(sm, kind, f, c).unwrap()));
            }
        }
    }
    out
}

fn uses_fp8_cvt(m: &PtxModule) -> bool {
    m.ptx.contains(".e4m3x2") || m.ptx.contains(".e5m2x2")
}

// ---------------------------------------------------------------------------
// PTX text, versions, ptxas
// ---------------------------------------------------------------------------

#[test]
fn fp8_cvt_is_used_exactly_where_the_sm_has_it() {
    for sm in Sm::ALL {
        for (kind, f, codec, m) in variants(sm) {
            let want = kind.uses_codec() && codec == Codec::Hardware;
            assert_eq!(uses_fp8_cvt(&m), want, "{} on {sm} ({codec:?})", m.kernel);
            if want {
                let (enc, dec) = match f {
                    Format::E4M3 => ("cvt.rn.satfinite.e4m3x2.f32", "cvt.rn.f16x2.e4m3x2"),
                    Format::E5M2 => ("cvt.rn.satfinite.e5m2x2.f32", "cvt.rn.f16x2.e5m2x2"),
                    other => unimplemented!("no cvt forms for {other:?}"),
                };
                let needle = match kind {
                    Kind::Dequantize | Kind::DequantizeStats => dec,
                    _ => enc,
                };
                assert!(
                    m.ptx.contains(needle),
                    "{} on {sm} lacks {needle}",
                    m.kernel
                );
            }
        }
    }
    // The cases the issue names, on the registered default variants.
    let text = |sm| {
        ptxsmith::kernels::all_variants(sm)
            .unwrap()
            .into_iter()
            .filter(|m| m.kernel.starts_with("fp8_"))
            .map(|m| m.ptx)
            .collect::<String>()
    };
    let has_fp8_cvt = |t: &str| {
        t.lines()
            .any(|l| l.trim_start().starts_with("cvt") && l.contains("e4m3"))
    };
    assert!(
        !has_fp8_cvt(&text(Sm::Sm80)),
        "sm_80 PTX must not use the FP8 cvt"
    );
    assert!(!has_fp8_cvt(&text(Sm::Sm86)));
    assert!(!text(Sm::Sm80).contains(".e4m3x2") && !text(Sm::Sm80).contains(".e5m2x2"));
    for sm in [Sm::Sm89, Sm::Sm90] {
        let t = text(sm);
        assert!(has_fp8_cvt(&t), "{sm}");
        assert!(t.contains("cvt.rn.satfinite.e4m3x2.f32"), "{sm}");
        assert!(t.contains("cvt.rn.f16x2.e4m3x2"), "{sm}");
    }
}

#[test]
fn module_versions_are_the_sm_table_minimum_for_what_they_use() {
    for sm in Sm::ALL {
        for (_, _, _, m) in variants(sm) {
            let want = if uses_fp8_cvt(&m) {
                Feature::Fp8Cvt.min_ptx(sm).max(sm.min_ptx())
            } else {
                // shfl.sync is PTX 6.0, which every target has.
                sm.min_ptx()
            };
            assert_eq!(m.version, want, "{} on {sm}", m.kernel);
            assert!(m.ptx.contains(&format!("\n.version {want}\n")));
        }
    }
    let q = |sm| {
        ptx::generate_quantize(sm, Format::E4M3, Codec::Hardware)
            .unwrap()
            .version
            .to_string()
    };
    assert_eq!(q(Sm::Sm89), "8.1");
    assert_eq!(q(Sm::Sm90), "7.8");
    assert!(matches!(
        ptx::generate_quantize(Sm::Sm86, Format::E4M3, Codec::Hardware),
        Err(Error::UnsupportedFeature {
            feature: Feature::Fp8Cvt,
            sm: Sm::Sm86,
            ..
        })
    ));
}

#[test]
fn ptxas_accepts_every_variant_on_every_sm() {
    let Some(tools) = NvTools::for_tests() else {
        return;
    };
    for sm in Sm::ALL {
        for (_, _, codec, m) in variants(sm) {
            if let Err(e) = tools.assemble(&m.ptx, sm) {
                panic!(
                    "ptxas rejected {} ({codec:?}) on {sm}: {e}\n{}",
                    m.kernel, m.ptx
                );
            }
        }
    }
}

#[test]
fn ptxas_rejects_the_fp8_modules_one_version_lower() {
    let Some(tools) = NvTools::for_tests() else {
        return;
    };
    for sm in [Sm::Sm89, Sm::Sm90] {
        for f in FORMATS {
            for m in [
                ptx::generate_quantize(sm, f, Codec::Hardware).unwrap(),
                ptx::generate_dequantize(sm, f, Codec::Hardware).unwrap(),
                ptx::generate_dequantize_stats(sm, f, Codec::Hardware).unwrap(),
            ] {
                let v = m.version;
                let lower = format!(".version {}.{}\n", v.major, v.minor - 1);
                let text = m.ptx.replace(&format!(".version {v}\n"), &lower);
                assert!(
                    tools.assemble(&text, sm).is_err(),
                    "{} on {sm} accepted {lower}",
                    m.kernel
                );
            }
        }
    }
}

/// The hardware encoder really is the hardware conversion in SASS
/// (`F2FP.SATFINITE.<format>…`, two per group of four and one in the
/// tail), and the software encoder has none; the main loop's size is
/// printed.
#[test]
fn sass_of_the_quantize_loop() {
    let Some(tools) = NvTools::for_tests() else {
        return;
    };
    for (sm, codec) in [
        (Sm::Sm80, Codec::Software),
        (Sm::Sm89, Codec::Hardware),
        (Sm::Sm90, Codec::Hardware),
        (Sm::Sm90, Codec::Software),
    ] {
        for f in FORMATS {
            let m = ptx::generate_quantize_scaled(sm, f, codec).unwrap();
            let sass = tools
                .disassemble(&tools.assemble(&m.ptx, sm).unwrap())
                .unwrap();
            let func = sass.function(&m.kernel).unwrap();
            let fp8_cvt = func
                .instructions
                .iter()
                .filter(|i| {
                    i.base() == "F2FP"
                        && i.opcode.contains("SATFINITE")
                        && i.opcode.contains(&format!("{f:?}"))
                })
                .count();
            let main_loop = func.largest_loop().expect("a grid-stride loop");
            println!(
                "{} {sm} {codec:?}: {} SASS instructions in the main loop (4 elements), {fp8_cvt} FP8 cvt",
                m.kernel,
                func.in_range(&main_loop).count()
            );
            match codec {
                // Two per group of four, one in the tail.
                Codec::Hardware => assert_eq!(fp8_cvt, 3, "{} {sm}", m.kernel),
                Codec::Software => assert_eq!(fp8_cvt, 0, "{} {sm}", m.kernel),
                other => unimplemented!("no expectation for {other:?}"),
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------

fn next_up(x: f32) -> f32 {
    f32::from_bits(x.to_bits() + 1)
}
fn next_down(x: f32) -> f32 {
    f32::from_bits(x.to_bits() - 1)
}

/// Every boundary of format `f`, both signs: each finite value, each
/// rounding midpoint between neighbouring magnitudes, and the f32
/// neighbours of both; the zero threshold, the subnormal/normal boundary,
/// the saturation region (448, 464, 480 / 57344, 61440), f32::MAX, f32
/// subnormals, ±Inf, NaNs with either sign and several payloads, ±0.
fn boundary_inputs(f: Format) -> Vec<f32> {
    let mut mags = Vec::new();
    for c in 0..0x7Fu8 {
        let v = f.decode(c);
        let w = f.decode(c + 1);
        if !v.is_finite() {
            continue;
        }
        mags.extend([v, next_up(v)]);
        if v > 0.0 {
            mags.push(next_down(v));
        }
        if w.is_finite() {
            let mid = (v + w) / 2.0; // exact: both are short binary fractions
            mags.extend([mid, next_up(mid), next_down(mid)]);
        }
    }
    let max = f.max_finite();
    let above = match f {
        Format::E4M3 => [448.0, 456.0, 464.0, 472.0, 480.0, 512.0],
        Format::E5M2 => [57344.0, 59392.0, 61440.0, 63488.0, 65536.0, 131072.0],
        other => unimplemented!("no boundaries for {other:?}"),
    };
    for a in above {
        mags.extend([a, next_up(a), next_down(a)]);
    }
    mags.extend([
        max,
        f32::MAX,
        next_down(f32::MAX),
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        f32::from_bits(0x007F_FFFF),
        f32::INFINITY,
        1.0,
        1e-30,
        1e30,
    ]);
    let mut out: Vec<f32> = mags.iter().flat_map(|&m| [m, -m]).collect();
    out.extend(
        [
            0x7FC0_0000u32,
            0x7F80_0001,
            0x7FFF_FFFF,
            0xFFC0_0000,
            0xFF80_0001,
            0xFFFF_FFFF,
            0x7FA5_A5A5,
        ]
        .map(f32::from_bits),
    );
    out
}

/// A deterministic pseudo-random f32 sample: half uniform bit patterns
/// (every exponent, NaNs and infinities included), half values near the
/// FP8 range.
fn random_inputs(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    (0..n)
        .map(|i| {
            let r = next();
            if i % 2 == 0 {
                f32::from_bits(r as u32)
            } else {
                // sign, exponent in [-20, 20), random mantissa
                let e = ((r >> 32) % 40) as i32 - 20;
                let m = 1.0 + (r as u32 >> 9) as f32 / (1u32 << 23) as f32;
                let v = m * 2f32.powi(e);
                if r >> 63 == 1 { -v } else { v }
            }
        })
        .collect()
}

fn same_bits_or_both_nan(a: &[f32], b: &[f32]) -> Result<(), String> {
    if a.len() != b.len() {
        return Err(format!("lengths {} vs {}", a.len(), b.len()));
    }
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        if !(x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())) {
            return Err(format!(
                "element {i}: {x:e} ({:#010x}) vs {y:e} ({:#010x})",
                x.to_bits(),
                y.to_bits()
            ));
        }
    }
    Ok(())
}

fn first_code_mismatch(xs: &[f32], got: &[u8], want: &[u8]) -> Option<String> {
    assert_eq!(got.len(), want.len());
    got.iter().zip(want).position(|(g, w)| g != w).map(|i| {
        format!(
            "x[{i}] = {:e} ({:#010x}): got {:#04x}, want {:#04x}",
            xs[i],
            xs[i].to_bits(),
            got[i],
            want[i]
        )
    })
}

/// The variants the simulator runs: both codecs, the oldest and newest
/// SMs, sm_89 (PTX 8.1) and sm_90 (PTX 7.8) with the hardware cvt, and the
/// software codec forced on sm_90.
const SIM_SMS: [(Sm, Codec); 6] = [
    (Sm::Sm70, Codec::Software),
    (Sm::Sm80, Codec::Software),
    (Sm::Sm89, Codec::Hardware),
    (Sm::Sm90, Codec::Hardware),
    (Sm::Sm90, Codec::Software),
    (Sm::Sm120, Codec::Hardware),
];

// ---------------------------------------------------------------------------
// Simulator: codec exactness
// ---------------------------------------------------------------------------

#[test]
fn sim_quantize_with_scale_is_bit_exact_on_every_boundary() {
    for (sm, codec) in SIM_SMS {
        let sim = Context::sim(sm).default_stream();
        for f in FORMATS {
            let xs = boundary_inputs(f);
            for scale in [1.0f32, 0.75, 3.0e-3] {
                let got = launch::quantize_with_scale_on(
                    &sim,
                    ptxsmith::kernels::fp8::Encoding { format: f, codec },
                    scale,
                    &xs,
                )
                .unwrap();
                let want = fp8host::host::quantize_with_scale_as(&xs, scale, f).unwrap();
                if let Some(m) = first_code_mismatch(&xs, &got, &want) {
                    panic!("{sm} {codec:?} {f:?} scale {scale}: {m}");
                }
            }
        }
    }
}

#[test]
fn sim_decode_of_all_256_codes_is_exact() {
    let codes: Vec<u8> = (0..=255u8).chain(0..=254u8).collect(); // 511: a tail of 3
    for (sm, codec) in SIM_SMS {
        let sim = Context::sim(sm).default_stream();
        for f in FORMATS {
            for scale_inv in [1.0f32, 0.5, 1.0 / 3.0, 3.0e38] {
                let got = launch::dequantize_on(
                    &sim,
                    ptxsmith::kernels::fp8::Encoding { format: f, codec },
                    scale_inv,
                    &codes,
                )
                .unwrap();
                let want = fp8host::host::dequantize_as(&codes, scale_inv, f);
                if let Err(e) = same_bits_or_both_nan(&got, &want) {
                    panic!("{sm} {codec:?} {f:?} scale_inv {scale_inv}: {e}");
                }
            }
        }
    }
}

#[test]
fn sim_random_sample_round_trips_like_the_host() {
    // Sized for the debug-build simulator; see the release-only test below
    // for a larger one.
    let xs = random_inputs(32 * 1024 + 3, 7);
    for (sm, codec) in SIM_SMS {
        let sim = Context::sim(sm).default_stream();
        for f in FORMATS {
            let got = launch::quantize_with_scale_on(
                &sim,
                ptxsmith::kernels::fp8::Encoding { format: f, codec },
                0.37,
                &xs,
            )
            .unwrap();
            let want = fp8host::host::quantize_with_scale_as(&xs, 0.37, f).unwrap();
            if let Some(m) = first_code_mismatch(&xs, &got, &want) {
                panic!("{sm} {codec:?} {f:?}: {m}");
            }
            let y = launch::dequantize_on(
                &sim,
                ptxsmith::kernels::fp8::Encoding { format: f, codec },
                1.0 / 0.37,
                &got,
            )
            .unwrap();
            same_bits_or_both_nan(&y, &fp8host::host::dequantize_as(&want, 1.0 / 0.37, f)).unwrap();
        }
    }
}

#[test]
#[cfg_attr(debug_assertions, ignore = "large simulator run: release builds only")]
fn sim_large_random_sample_release_only() {
    let xs = random_inputs(2 * 1024 * 1024 + 1, 11);
    let finite: Vec<f32> = xs
        .iter()
        .map(|x| if x.is_finite() { x % 1e4 } else { *x })
        .collect();
    for (sm, codec) in SIM_SMS {
        let sim = Context::sim(sm).default_stream();
        for f in FORMATS {
            check_quantize(&sim, &finite, f, codec, "large random");
            let got = launch::quantize_with_scale_on(
                &sim,
                ptxsmith::kernels::fp8::Encoding { format: f, codec },
                1.0,
                &xs,
            )
            .unwrap();
            let want = fp8host::host::quantize_with_scale_as(&xs, 1.0, f).unwrap();
            if let Some(m) = first_code_mismatch(&xs, &got, &want) {
                panic!("{sm} {codec:?} {f:?}: {m}");
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Simulator: current scaling and absmax
// ---------------------------------------------------------------------------

fn check_quantize(st: &Stream, xs: &[f32], f: Format, codec: Codec, what: &str) {
    let got = launch::quantize_on(
        st,
        ptxsmith::kernels::fp8::Encoding { format: f, codec },
        xs,
    )
    .unwrap();
    let want = fp8host::host::quantize_as(xs, f);
    let sm = st.context().sm();
    assert_eq!(
        got.amax.to_bits(),
        want.amax.to_bits(),
        "{what} {sm} {f:?}: amax"
    );
    assert_eq!(
        got.scale.to_bits(),
        want.scale.to_bits(),
        "{what} {sm} {f:?}: scale"
    );
    assert_eq!(
        got.scale_inv.to_bits(),
        want.scale_inv.to_bits(),
        "{what} {sm} {f:?}: scale_inv"
    );
    if let Some(m) = first_code_mismatch(xs, &got.codes, &want.codes) {
        panic!("{what} {sm} {codec:?} {f:?}: {m}");
    }
}

#[test]
fn sim_quantize_with_device_scale_equals_the_host() {
    for (sm, codec) in SIM_SMS {
        let sim = Context::sim(sm).default_stream();
        for f in FORMATS {
            // Finite boundary values (amax a finite FP8 boundary region).
            let finite: Vec<f32> = boundary_inputs(f)
                .into_iter()
                .filter(|x| x.abs() <= 1e30)
                .collect();
            check_quantize(&sim, &finite, f, codec, "finite boundaries");
            // Every boundary within ±MAX: amax = MAX, so scale = 1 exactly
            // and the codes sit on the encoder's boundaries.
            let in_range: Vec<f32> = boundary_inputs(f)
                .into_iter()
                .filter(|x| x.abs() <= f.max_finite())
                .collect();
            assert_eq!(fp8host::host::quantize_as(&in_range, f).scale, 1.0);
            check_quantize(&sim, &in_range, f, codec, "boundaries within MAX");
            // With ±Inf and NaN present: amax = Inf, scale = 1.
            check_quantize(&sim, &boundary_inputs(f), f, codec, "all boundaries");
            check_quantize(
                &sim,
                &random_inputs(1027, 3)
                    .iter()
                    .map(|x| x % 1e6)
                    .collect::<Vec<_>>(),
                f,
                codec,
                "random",
            );
            // Tiny amax: 448 / amax overflows, so scale = 1.
            check_quantize(
                &sim,
                &[f32::from_bits(1), -0.0, f32::from_bits(3)],
                f,
                codec,
                "tiny",
            );
            check_quantize(&sim, &[], f, codec, "empty");
            check_quantize(&sim, &[f32::NAN, -f32::NAN], f, codec, "all NaN");
        }
    }
}

/// Current scaling never returns to the host between its passes: two
/// launches (the absmax partials, then the quantize kernel whose blocks
/// reduce them; no finalize launch), the input uploaded once, only the
/// codes and the 12 bytes of stats downloaded.
#[test]
fn sim_quantize_traffic_has_no_host_round_trip() {
    let xs = random_inputs(50_001, 9);
    let ctx = Context::sim(Sm::Sm89);
    let before = ctx.traffic();
    launch::quantize_on(
        &ctx.default_stream(),
        ptxsmith::kernels::fp8::Encoding {
            format: Format::E4M3,
            codec: Codec::Hardware,
        },
        &xs,
    )
    .unwrap();
    let moved = ctx.traffic().since(&before);
    assert_eq!(moved.launches, 2);
    assert_eq!(moved.bytes_uploaded, 4 * xs.len() as u64);
    assert_eq!(moved.uploads, 1);
    assert_eq!(moved.bytes_downloaded, xs.len() as u64 + 12);
    assert_eq!(moved.downloads, 2, "the codes and the stats");
}

/// Arrays with the maximum at the first, a middle and the last index, and
/// with NaN / Inf present.
fn absmax_cases(n: usize) -> Vec<(String, Vec<f32>)> {
    let base: Vec<f32> = random_inputs(n, 5)
        .iter()
        .map(|x| if x.is_finite() { x % 100.0 } else { 1.5 })
        .collect();
    let mut cases = Vec::new();
    for (name, at) in [("first", 0), ("middle", n / 2 + 1), ("last", n - 1)] {
        let mut v = base.clone();
        v[at] = -1234.5;
        cases.push((format!("max at {name}"), v));
    }
    let mut v = base.clone();
    v[n / 3] = f32::NAN;
    v[n - 1] = -f32::NAN;
    cases.push(("with NaN".to_string(), v.clone()));
    v[n / 2] = f32::NEG_INFINITY;
    cases.push(("with NaN and -Inf".to_string(), v));
    cases.push(("all -0".to_string(), vec![-0.0; n]));
    cases
}

#[test]
fn sim_absmax_uses_several_blocks_and_matches_the_contract() {
    let n = 64 * 1024 + 5; // 17 blocks of 256 × 16 elements wanted, 4 SMs × 8 allowed
    let ctx = Context::sim(Sm::Sm80);
    let sim = ctx.default_stream();
    let sms = ctx.multiprocessor_count();
    let blocks = ptx::grid_blocks(n as u64, sms);
    assert!(blocks > 1, "{blocks} blocks for n = {n}");
    assert_eq!(
        blocks,
        (n as u64)
            .div_ceil(u64::from(BLOCK) * ptx::ITEMS_PER_THREAD)
            .min(u64::from(sms) * 8) as u32
    );
    for (name, xs) in absmax_cases(n) {
        let t = launch::absmax_on(&sim, Format::E4M3, &xs).unwrap();
        let amax = fp8host::host::absmax(&xs);
        assert_eq!(t.partials_launch.grid.0, blocks, "{name}");
        assert_eq!(t.partials_launch.block.0, BLOCK, "{name}");
        assert_eq!(t.finalize_launch.grid.0, 1, "{name}");
        assert_eq!(t.partials.len(), blocks as usize, "{name}");
        // Several blocks saw data, and the partials reduce to the answer.
        let nonzero = t.partials.iter().filter(|p| **p != 0.0).count();
        assert!(name == "all -0" || nonzero > 1, "{name}: {:?}", t.partials);
        assert_eq!(
            fp8host::host::absmax(&t.partials).to_bits(),
            amax.to_bits(),
            "{name}"
        );
        assert_eq!(
            t.stats[0].to_bits(),
            amax.to_bits(),
            "{name}: amax {} vs {amax}",
            t.stats[0]
        );
        let scale = fp8host::host::scale_for_amax(amax);
        assert_eq!(t.stats[1].to_bits(), scale.to_bits(), "{name}");
        assert_eq!(t.stats[2].to_bits(), (1.0 / scale).to_bits(), "{name}");
    }
}

/// Current scaling over several blocks: every quantize block reduces all
/// the partials, so the amax, the scale and every code are the host's
/// wherever the maximum (or a NaN, or an infinity) sits, on both codecs
/// and both formats; the race checks (on in `Context::sim`) see no block
/// reading what another wrote.
#[test]
fn sim_quantize_over_several_blocks_matches_the_host() {
    let n = 64 * 1024 + 5; // 17 blocks wanted, 4 SMs × 8 allowed
    for (sm, codec) in [(Sm::Sm80, Codec::Software), (Sm::Sm90, Codec::Hardware)] {
        let ctx = Context::sim(sm);
        assert!(ptx::grid_blocks(n as u64, ctx.multiprocessor_count()) > 1);
        let sim = ctx.default_stream();
        for (name, xs) in absmax_cases(n) {
            for f in FORMATS {
                check_quantize(&sim, &xs, f, codec, &name);
            }
        }
    }
}

#[test]
fn sim_absmax_of_small_inputs() {
    let sim = Context::sim(Sm::Sm90).default_stream();
    for xs in [
        vec![],
        vec![-3.0],
        vec![1.0, f32::NAN, -2.0],
        vec![f32::INFINITY, 1.0, 2.0, 3.0, 4.0],
    ] {
        let t = launch::absmax_on(&sim, Format::E5M2, &xs).unwrap();
        assert_eq!(t.partials_launch.grid.0, 1);
        let amax = fp8host::host::absmax(&xs);
        assert_eq!(t.stats[0].to_bits(), amax.to_bits(), "{xs:?}");
        assert_eq!(
            t.stats[1].to_bits(),
            fp8host::host::scale_for_amax_as(amax, Format::E5M2).to_bits(),
            "{xs:?}"
        );
    }
}

// ---------------------------------------------------------------------------
// Simulator: device and raw-pointer entry points
// ---------------------------------------------------------------------------

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Quantize → dequantize chained on the device: the stats stay resident
/// and `dequantize_stats_dev` reads `scale_inv = stats[2]` there, so the
/// input goes up once and only the result comes down (three launches). The
/// resident codes and stats, `absmax_dev`, `dequantize_dev` and
/// `quantize_with_scale_dev` all equal the host model bit for bit.
#[test]
fn sim_device_entry_points_chain_without_a_round_trip() {
    let xs: Vec<f32> = random_inputs(4099, 13).iter().map(|x| x % 1e4).collect();
    let n = xs.len();
    for (sm, codec) in SIM_SMS {
        let ctx = Context::sim(sm);
        let st = ctx.default_stream();
        for f in FORMATS {
            let want = fp8host::host::quantize_as(&xs, f);
            let before = ctx.traffic();
            let x = st.upload(&xs).unwrap();
            let mut codes = ctx.alloc::<u8>(n).unwrap();
            let mut stats = ctx.alloc::<f32>(3).unwrap();
            let mut y = ctx.alloc::<f32>(n).unwrap();
            launch::quantize_dev(
                &st,
                ptxsmith::kernels::fp8::Encoding { format: f, codec },
                &x,
                &mut codes,
                &mut stats,
            )
            .unwrap();
            launch::dequantize_stats_dev(
                &st,
                ptxsmith::kernels::fp8::Encoding { format: f, codec },
                &codes,
                &stats,
                &mut y,
            )
            .unwrap();
            let got = st.to_vec(&y).unwrap();
            let moved = ctx.traffic().since(&before);
            // Partials, quantize (its blocks reduce the partials), dequantize.
            assert_eq!(moved.launches, 3, "{sm} {f:?}");
            assert_eq!((moved.uploads, moved.bytes_uploaded), (1, 4 * n as u64));
            assert_eq!((moved.downloads, moved.bytes_downloaded), (1, 4 * n as u64));
            let want_y = fp8host::host::dequantize_as(&want.codes, want.scale_inv, f);
            if let Err(e) = same_bits_or_both_nan(&got, &want_y) {
                panic!("{sm} {codec:?} {f:?}: {e}");
            }

            // What stayed on the device.
            let resident = st.to_vec(&codes).unwrap();
            if let Some(m) = first_code_mismatch(&xs, &resident, &want.codes) {
                panic!("{sm} {codec:?} {f:?}: {m}");
            }
            let s = st.to_vec(&stats).unwrap();
            assert_eq!(
                bits(&s),
                bits(&[want.amax, want.scale, want.scale_inv]),
                "{sm} {f:?}"
            );
            let mut s2 = ctx.alloc::<f32>(3).unwrap();
            launch::absmax_dev(&st, f, &x, &mut s2).unwrap();
            assert_eq!(bits(&st.to_vec(&s2).unwrap()), bits(&s), "{sm} {f:?}");

            // The scale as a value gives the same result.
            let mut y2 = ctx.alloc::<f32>(n).unwrap();
            launch::dequantize_dev(
                &st,
                ptxsmith::kernels::fp8::Encoding { format: f, codec },
                want.scale_inv,
                &codes,
                &mut y2,
            )
            .unwrap();
            same_bits_or_both_nan(&st.to_vec(&y2).unwrap(), &want_y).unwrap();
            let mut c2 = ctx.alloc::<u8>(n).unwrap();
            launch::quantize_with_scale_dev(
                &st,
                ptxsmith::kernels::fp8::Encoding { format: f, codec },
                0.37,
                &x,
                &mut c2,
            )
            .unwrap();
            let want_c = fp8host::host::quantize_with_scale_as(&xs, 0.37, f).unwrap();
            if let Some(m) = first_code_mismatch(&xs, &st.to_vec(&c2).unwrap(), &want_c) {
                panic!("{sm} {codec:?} {f:?} scaled: {m}");
            }
        }
    }
}

/// Sub-slices at a 16-byte (floats) / 4-byte (codes) boundary run on the
/// device entry points like their own buffers would.
#[test]
fn sim_device_entry_points_on_aligned_sub_slices() {
    let ctx = Context::sim(Sm::Sm90);
    let st = ctx.default_stream();
    let f = Format::E4M3;
    let codec = Codec::Hardware;
    let xs = random_inputs(1000, 17);
    let x = st.upload(&xs).unwrap();
    let part = &xs[4..903];
    let mut codes = ctx.alloc::<u8>(1000).unwrap();
    let mut stats = ctx.alloc::<f32>(3).unwrap();
    launch::quantize_dev(
        &st,
        ptxsmith::kernels::fp8::Encoding { format: f, codec },
        &x.slice(4..903).unwrap(),
        &mut codes.slice_mut(8..907).unwrap(),
        &mut stats,
    )
    .unwrap();
    let want = fp8host::host::quantize_as(part, f);
    let got = st.to_vec(&codes.slice(8..907).unwrap()).unwrap();
    if let Some(m) = first_code_mismatch(part, &got, &want.codes) {
        panic!("{m}");
    }
    let mut y = ctx.alloc::<f32>(1000).unwrap();
    launch::dequantize_stats_dev(
        &st,
        ptxsmith::kernels::fp8::Encoding { format: f, codec },
        &codes.slice(8..907).unwrap(),
        &stats,
        &mut y.slice_mut(96..995).unwrap(),
    )
    .unwrap();
    same_bits_or_both_nan(
        &st.to_vec(&y.slice(96..995).unwrap()).unwrap(),
        &fp8host::host::dequantize_as(&want.codes, want.scale_inv, f),
    )
    .unwrap();
}

#[track_caller]
fn assert_invalid(r: ptxsmith::Result<()>, needle: &str) {
    match r {
        Err(Error::InvalidArgument(m)) => assert!(m.contains(needle), "{m:?} lacks {needle:?}"),
        other => panic!("expected InvalidArgument ({needle}), got {other:?}"),
    }
}

/// Misaligned views (the vector accesses need `x`, `y` 16-byte and `codes`
/// 4-byte aligned), mismatched lengths, a stats buffer that is not 3
/// elements, a bad scale, a buffer of another context and the hardware
/// codec below sm_89 are refused as typed errors before anything launches.
#[test]
fn sim_device_entry_points_refuse_bad_buffers() {
    let ctx = Context::sim(Sm::Sm90);
    let st = ctx.default_stream();
    let (f, codec) = (Format::E4M3, Codec::Hardware);
    let xs: Vec<f32> = (0..64).map(|i| i as f32 - 30.0).collect();
    let x = st.upload(&xs).unwrap();
    let mut codes = ctx.alloc_zeroed::<u8>(64).unwrap();
    let mut stats = ctx.alloc_zeroed::<f32>(3).unwrap();
    let mut y = ctx.alloc_zeroed::<f32>(64).unwrap();
    let mut c60 = ctx.alloc_zeroed::<u8>(60).unwrap();
    let mut y60 = ctx.alloc_zeroed::<f32>(60).unwrap();
    let before = ctx.traffic();

    // `x` one float into its allocation.
    let x1 = x.slice(1..61).unwrap();
    assert_invalid(
        launch::quantize_dev(
            &st,
            ptxsmith::kernels::fp8::Encoding { format: f, codec },
            &x1,
            &mut c60,
            &mut stats,
        ),
        "16-byte aligned",
    );
    assert_invalid(
        launch::quantize_with_scale_dev(
            &st,
            ptxsmith::kernels::fp8::Encoding { format: f, codec },
            1.0,
            &x1,
            &mut c60,
        ),
        "16-byte aligned",
    );
    assert_invalid(
        launch::absmax_dev(&st, f, &x1, &mut stats),
        "16-byte aligned",
    );
    // `codes` one byte into its allocation.
    let x60 = x.slice(0..60).unwrap();
    assert_invalid(
        launch::quantize_dev(
            &st,
            ptxsmith::kernels::fp8::Encoding { format: f, codec },
            &x60,
            &mut codes.slice_mut(1..61).unwrap(),
            &mut stats,
        ),
        "4-byte aligned",
    );
    assert_invalid(
        launch::quantize_with_scale_dev(
            &st,
            ptxsmith::kernels::fp8::Encoding { format: f, codec },
            1.0,
            &x60,
            &mut codes.slice_mut(1..61).unwrap(),
        ),
        "4-byte aligned",
    );
    assert_invalid(
        launch::dequantize_dev(
            &st,
            ptxsmith::kernels::fp8::Encoding { format: f, codec },
            1.0,
            &codes.slice(1..61).unwrap(),
            &mut y60,
        ),
        "4-byte aligned",
    );
    // `y` one float into its allocation.
    assert_invalid(
        launch::dequantize_dev(
            &st,
            ptxsmith::kernels::fp8::Encoding { format: f, codec },
            1.0,
            &c60,
            &mut y.slice_mut(1..61).unwrap(),
        ),
        "16-byte aligned",
    );
    assert_invalid(
        launch::dequantize_stats_dev(
            &st,
            ptxsmith::kernels::fp8::Encoding { format: f, codec },
            &c60,
            &stats,
            &mut y.slice_mut(1..61).unwrap(),
        ),
        "16-byte aligned",
    );
    // Lengths.
    assert_invalid(
        launch::quantize_dev(
            &st,
            ptxsmith::kernels::fp8::Encoding { format: f, codec },
            &x,
            &mut c60,
            &mut stats,
        ),
        "elements",
    );
    assert_invalid(
        launch::dequantize_dev(
            &st,
            ptxsmith::kernels::fp8::Encoding { format: f, codec },
            1.0,
            &codes,
            &mut y60,
        ),
        "elements",
    );
    let mut stats4 = ctx.alloc_zeroed::<f32>(4).unwrap();
    assert_invalid(
        launch::quantize_dev(
            &st,
            ptxsmith::kernels::fp8::Encoding { format: f, codec },
            &x,
            &mut codes,
            &mut stats4,
        ),
        "stats",
    );
    assert_invalid(launch::absmax_dev(&st, f, &x, &mut stats4), "stats");
    assert_invalid(
        launch::dequantize_stats_dev(
            &st,
            ptxsmith::kernels::fp8::Encoding { format: f, codec },
            &codes,
            &stats.slice(0..2).unwrap(),
            &mut y,
        ),
        "stats",
    );
    // A scale that is not finite and > 0.
    assert_invalid(
        launch::quantize_with_scale_dev(
            &st,
            ptxsmith::kernels::fp8::Encoding { format: f, codec },
            0.0,
            &x,
            &mut codes,
        ),
        "scale",
    );
    // A buffer of another context.
    let other = Context::sim(Sm::Sm90);
    let foreign = other.upload(&xs).unwrap();
    assert!(matches!(
        launch::quantize_dev(
            &st,
            ptxsmith::kernels::fp8::Encoding { format: f, codec },
            &foreign,
            &mut codes,
            &mut stats
        ),
        Err(Error::WrongContext { .. })
    ));
    assert_eq!(ctx.traffic().since(&before).launches, 0, "nothing launched");

    // The hardware codec where the SM has no FP8 cvt.
    let old = Context::sim(Sm::Sm80);
    let ost = old.default_stream();
    let ox = ost.upload(&xs).unwrap();
    let mut oc = old.alloc::<u8>(64).unwrap();
    let mut os = old.alloc::<f32>(3).unwrap();
    assert!(matches!(
        launch::quantize_dev(
            &ost,
            ptxsmith::kernels::fp8::Encoding {
                format: f,
                codec: Codec::Hardware
            },
            &ox,
            &mut oc,
            &mut os
        ),
        Err(Error::UnsupportedFeature {
            feature: Feature::Fp8Cvt,
            sm: Sm::Sm80,
            ..
        })
    ));
}

/// The raw-pointer entry points on addresses of buffers the context owns
/// (the way another stack's memory looks to them) compute what the
/// device entry points do; alignment is still checked.
#[test]
fn sim_raw_entry_points_match_the_device_entry_points() {
    raw_entry_points_on(&Context::sim(Sm::Sm89), Codec::Hardware);
}

/// The same on a GPU or the driver emulator (SKIP without one), with its
/// own codec and the software one.
#[test]
fn device_raw_entry_points_match_the_device_entry_points() {
    let Some(ctx) = ptxsmith::testing::cuda_for_tests() else {
        return;
    };
    for codec in [Codec::for_sm(ctx.sm()), Codec::Software] {
        raw_entry_points_on(&ctx, codec);
    }
}

fn raw_entry_points_on(ctx: &Context, codec: Codec) {
    let st = ctx.default_stream();
    let f = Format::E5M2;
    let xs: Vec<f32> = random_inputs(777, 21).iter().map(|x| x % 1e3).collect();
    let n = xs.len();
    let want = fp8host::host::quantize_as(&xs, f);
    let x = st.upload(&xs).unwrap();
    let codes = ctx.alloc::<u8>(n).unwrap();
    let stats = ctx.alloc::<f32>(3).unwrap();
    let y = ctx.alloc::<f32>(n).unwrap();
    let scaled = ctx.alloc::<u8>(n).unwrap();
    let y2 = ctx.alloc::<f32>(n).unwrap();
    // SAFETY: every address is a live buffer of `ctx` of the stated size,
    // the outputs overlap nothing, and `st` is `ctx`'s default stream.
    unsafe {
        let s = st.raw();
        launch::quantize_raw(
            &ptxsmith::runtime::Stream::from_raw(ctx, s).unwrap(),
            ptxsmith::kernels::fp8::Encoding { format: f, codec },
            n,
            x.device_ptr(),
            codes.device_ptr(),
            stats.device_ptr(),
        )
        .unwrap();
        launch::dequantize_stats_raw(
            &ptxsmith::runtime::Stream::from_raw(ctx, s).unwrap(),
            ptxsmith::kernels::fp8::Encoding { format: f, codec },
            n,
            codes.device_ptr(),
            stats.device_ptr(),
            y.device_ptr(),
        )
        .unwrap();
        launch::quantize_with_scale_raw(
            &ptxsmith::runtime::Stream::from_raw(ctx, s).unwrap(),
            ptxsmith::kernels::fp8::Encoding { format: f, codec },
            2.0,
            n,
            x.device_ptr(),
            scaled.device_ptr(),
        )
        .unwrap();
        launch::dequantize_raw(
            &ptxsmith::runtime::Stream::from_raw(ctx, s).unwrap(),
            ptxsmith::kernels::fp8::Encoding { format: f, codec },
            want.scale_inv,
            n,
            codes.device_ptr(),
            y2.device_ptr(),
        )
        .unwrap();
        // Misaligned `x`: refused before anything runs.
        assert_invalid(
            launch::quantize_with_scale_raw(
                &ptxsmith::runtime::Stream::from_raw(ctx, s).unwrap(),
                ptxsmith::kernels::fp8::Encoding { format: f, codec },
                2.0,
                n - 1,
                x.device_ptr() + 4,
                scaled.device_ptr(),
            ),
            "16-byte aligned",
        );
    }
    st.synchronize().unwrap();
    assert_eq!(st.to_vec(&codes).unwrap(), want.codes);
    assert_eq!(
        bits(&st.to_vec(&stats).unwrap()),
        bits(&[want.amax, want.scale, want.scale_inv])
    );
    let want_y = fp8host::host::dequantize_as(&want.codes, want.scale_inv, f);
    same_bits_or_both_nan(&st.to_vec(&y).unwrap(), &want_y).unwrap();
    same_bits_or_both_nan(&st.to_vec(&y2).unwrap(), &want_y).unwrap();
    assert_eq!(
        st.to_vec(&scaled).unwrap(),
        fp8host::host::quantize_with_scale_as(&xs, 2.0, f).unwrap()
    );
}

// ---------------------------------------------------------------------------
// Public entry points
// ---------------------------------------------------------------------------

#[test]
fn entry_points_run_where_the_backend_says() {
    let xs = [1.0f32, -2.5, 448.0, f32::NAN, 0.001, -0.0, 7.0];
    let host = fp8host::host::quantize(&xs);
    for backend in [Backend::Host, Backend::Sim] {
        let (q, ran) = launch::quantize(backend, &xs).unwrap();
        assert_eq!(
            ran,
            if backend == Backend::Sim {
                Ran::Sim
            } else {
                Ran::Host
            }
        );
        assert_eq!(q, host, "{backend}");
        let (c, _) = launch::quantize_with_scale(backend, 2.0, &xs).unwrap();
        assert_eq!(c, fp8host::host::quantize_with_scale(&xs, 2.0).unwrap());
        let (y, _) = launch::dequantize(backend, q.scale_inv, &q.codes).unwrap();
        same_bits_or_both_nan(&y, &fp8host::host::dequantize(&host.codes, host.scale_inv)).unwrap();
        let (a, _) = launch::absmax(backend, &xs).unwrap();
        assert_eq!(a, 448.0);
    }
    let (_, ran) = launch::absmax(Backend::Auto, &xs).unwrap();
    if ptxsmith::runtime::cuda_available() {
        assert_eq!(ran, Ran::Cuda);
    } else {
        assert_eq!(ran, Ran::Host);
        assert!(matches!(
            launch::quantize(Backend::Cuda, &xs),
            Err(Error::NoDevice(_))
        ));
    }
}

#[test]
fn invalid_scales_are_refused_before_any_backend_runs() {
    for scale in [
        0.0f32,
        -0.0,
        -1.0,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
    ] {
        for backend in Backend::ALL {
            match launch::quantize_with_scale(backend, scale, &[1.0]) {
                Err(Error::InvalidArgument(m)) => assert!(m.contains("scale"), "{m}"),
                other => panic!("{backend} scale {scale}: {other:?}"),
            }
        }
    }
    // A subnormal scale is valid.
    let (c, _) = launch::quantize_with_scale(Backend::Sim, f32::from_bits(1), &[1e30]).unwrap();
    assert_eq!(
        c,
        fp8host::host::quantize_with_scale(&[1e30], f32::from_bits(1)).unwrap()
    );
}

// ---------------------------------------------------------------------------
// Device
// ---------------------------------------------------------------------------

/// The codecs an executor's SM offers (hardware first where present).
fn codecs_of(sm: Sm) -> Vec<Codec> {
    if sm.supports(Feature::Fp8Cvt) {
        vec![Codec::Hardware, Codec::Software]
    } else {
        vec![Codec::Software]
    }
}

/// Run the bit patterns `[start, start + chunk · chunks)` through every
/// (format, codec) variant of the scaled-quantize kernel on `st` (scale 1,
/// so the product is the input itself), uploading each chunk once, and
/// compare every code with the host model. Returns the codes checked.
fn check_bit_patterns(st: &Stream, start: u64, chunk: usize, chunks: u64) -> u64 {
    let ctx = st.context();
    let sm = ctx.sm();
    let blocks = ptx::grid_blocks(chunk as u64, ctx.multiprocessor_count());
    let mut xs = vec![0f32; chunk];
    let mut want = vec![0u8; chunk];
    let mut got = vec![0u8; chunk];
    let mut x = ctx.alloc::<f32>(chunk).unwrap();
    let mut c = ctx.alloc::<u8>(chunk).unwrap();
    let mut checked = 0u64;
    for k in 0..chunks {
        let first = start + k * chunk as u64;
        for (i, v) in xs.iter_mut().enumerate() {
            *v = f32::from_bits((first + i as u64) as u32);
        }
        st.copy_from_host(&mut x, &xs).unwrap();
        for f in FORMATS {
            fp8host::host::encode_slice(f, &xs, &mut want).unwrap();
            for codec in codecs_of(sm) {
                let m = ptx::generate_quantize_scaled(sm, f, codec).unwrap();
                let args = ptx::QuantizeScaledArgs {
                    x: st.arg("x", &x).unwrap(),
                    n: chunk as u64,
                    scale: 1.0,
                    codes: st.arg_mut("codes", &mut c).unwrap(),
                };
                st.launch(&m, LaunchConfig::linear(blocks, BLOCK), &args.args())
                    .unwrap();
                st.copy_to_host(&c, &mut got).unwrap();
                if let Some(msg) = first_code_mismatch(&xs, &got, &want) {
                    panic!("{sm} {codec:?} {f:?}: {msg}");
                }
                checked += chunk as u64;
            }
        }
    }
    checked
}

/// The bit-pattern sweep of the device test, on the simulator over the
/// regions where the encoder's decisions change (zero threshold,
/// subnormal/normal boundary, saturation, Inf/NaN), both signs.
#[test]
fn sim_bit_pattern_sweeps_around_every_decision() {
    for sm in [Sm::Sm80, Sm::Sm90] {
        let sim = Context::sim(sm).default_stream();
        for centre in [
            0x3700_0000u64,
            0x3880_0000,
            0x3A80_0000,
            0x3C80_0000,
            0x43E0_0000,
            0x4760_0000,
            0x7F80_0000,
        ] {
            for sign in [0, 0x8000_0000u64] {
                let n = check_bit_patterns(&sim, (centre | sign) - 1024, 2048, 1);
                assert_eq!(n, 2048 * 2 * codecs_of(sm).len() as u64);
            }
        }
    }
}

/// On sm_89+, all 2³² f32 bit patterns through the GPU encoder equal the
/// host model, for both formats and both codecs (the software codec on
/// older cards). On the driver emulator, where the kernels run on the
/// simulator, a strided sample instead: the first 4096 patterns of each of
/// the 64 slices of 2²⁶ (every sign, exponent range and both NaN/Inf
/// ends), plus the regions where the encoder's decisions change, as the
/// simulator sweep checks them.
#[test]
fn device_all_f32_inputs_match_the_host() {
    let Some(ctx) = ptxsmith::testing::cuda_for_tests() else {
        return;
    };
    let gpu = ctx.default_stream();
    let sm = ctx.sm();
    if !sm.supports(Feature::Fp8Cvt) {
        println!("note: {sm} has no FP8 cvt; checking the software codec only");
    }
    let per_pattern = 2 * codecs_of(sm).len() as u64;
    if ptxsmith::testing::on_emulator(&ctx) {
        const SLICE: u64 = 1 << 26;
        let mut checked = 0;
        for k in 0..(1u64 << 32) / SLICE {
            checked += check_bit_patterns(&gpu, k * SLICE, 4096, 1);
        }
        for centre in [0x3C00_0000u64, 0x4380_0000, 0x4760_0000, 0x7F80_0000] {
            for sign in [0, 0x8000_0000u64] {
                checked += check_bit_patterns(&gpu, (centre | sign) - 1024, 2048, 1);
            }
        }
        assert_eq!(checked, (64 * 4096 + 8 * 2048) * per_pattern);
        println!("{sm} (emulator): {checked} codes equal the host model");
        return;
    }
    const CHUNK: usize = 1 << 26;
    let checked = check_bit_patterns(&gpu, 0, CHUNK, (1u64 << 32) / CHUNK as u64);
    assert_eq!(checked, (1u64 << 32) * per_pattern);
    println!(
        "{sm}: all 2^32 inputs equal the host model for {:?} x {FORMATS:?}",
        codecs_of(sm)
    );
}

/// 64-bit indexing: more than 2³¹ elements through quantize_with_scale
/// (8 GiB of input), every code checked against the host. The driver
/// emulator cannot hold that much simulated memory (it keeps two host bytes
/// per device byte): there the test returns at once, saying so, and the
/// name says it is a GPU-only test.
#[test]
fn device_more_than_2_pow_31_elements_gpu_only_not_on_emulator() {
    let Some(ctx) = ptxsmith::testing::cuda_for_tests() else {
        return;
    };
    if ptxsmith::testing::on_emulator(&ctx) {
        println!("EMULATOR: not run: 2^31 elements need 12 GiB of device memory");
        return;
    }
    let gpu = ctx.default_stream();
    let n = (1usize << 31) + 7;
    let info = ctx.info().expect("a CUDA context has device info");
    if info.total_memory_bytes < 12 << 30 {
        println!("SKIP: the device has less than 12 GiB");
        return;
    }
    let xs: Vec<f32> = (0..n).map(|i| (i % 1031) as f32 * 0.4375 - 200.0).collect();
    let sm = ctx.sm();
    let got = launch::quantize_with_scale_on(
        &gpu,
        ptxsmith::kernels::fp8::Encoding {
            format: Format::E4M3,
            codec: Codec::for_sm(sm),
        },
        1.0,
        &xs,
    )
    .unwrap();
    let mut want = vec![0u8; n];
    fp8host::host::encode_slice(Format::E4M3, &xs, &mut want).unwrap();
    if let Some(m) = first_code_mismatch(&xs, &got, &want) {
        panic!("{sm}: {m}");
    }
}

#[test]
fn device_entry_points_match_the_host() {
    let Some(ctx) = ptxsmith::testing::cuda_for_tests() else {
        return;
    };
    let gpu = ctx.default_stream();
    let sm = ctx.sm();
    // Fewer random inputs on the driver emulator (kernels on the simulator).
    let n = if ptxsmith::testing::on_emulator(&ctx) {
        100_003
    } else {
        10_000_003
    };
    for f in FORMATS {
        let codec = Codec::for_sm(sm);
        for xs in [boundary_inputs(f), random_inputs(n, 1)] {
            let got = launch::quantize_on(
                &gpu,
                ptxsmith::kernels::fp8::Encoding { format: f, codec },
                &xs,
            )
            .unwrap();
            let want = fp8host::host::quantize_as(&xs, f);
            assert_eq!(got.amax.to_bits(), want.amax.to_bits());
            assert_eq!(got.scale.to_bits(), want.scale.to_bits());
            assert!(first_code_mismatch(&xs, &got.codes, &want.codes).is_none());
            let y = launch::dequantize_on(
                &gpu,
                ptxsmith::kernels::fp8::Encoding { format: f, codec },
                got.scale_inv,
                &got.codes,
            )
            .unwrap();
            same_bits_or_both_nan(
                &y,
                &fp8host::host::dequantize_as(&want.codes, want.scale_inv, f),
            )
            .unwrap();
        }
    }
    // The slice API on the device.
    let xs = random_inputs(5000, 3);
    let want = fp8host::host::quantize_as(&xs, Format::E5M2);
    let (q, ran) = launch::quantize_as(Backend::Cuda, Format::E5M2, &xs).unwrap();
    assert_eq!(ran, Ran::Cuda);
    assert_eq!(q, want);
    let (c, ran) = launch::quantize_with_scale(Backend::Cuda, 0.5, &xs).unwrap();
    assert_eq!(ran, Ran::Cuda);
    assert_eq!(c, fp8host::host::quantize_with_scale(&xs, 0.5).unwrap());
    let (y, ran) =
        launch::dequantize_as(Backend::Cuda, Format::E5M2, want.scale_inv, &want.codes).unwrap();
    assert_eq!(ran, Ran::Cuda);
    same_bits_or_both_nan(
        &y,
        &fp8host::host::dequantize_as(&want.codes, want.scale_inv, Format::E5M2),
    )
    .unwrap();
    let (a, ran) = launch::absmax(Backend::Cuda, &xs).unwrap();
    assert_eq!(ran, Ran::Cuda);
    assert_eq!(a.to_bits(), fp8host::host::quantize(&xs).amax.to_bits());
    // absmax_dev: the stats [amax, scale, scale_inv] on the device.
    let x = gpu.upload(&xs).unwrap();
    let mut stats = ctx.alloc::<f32>(3).unwrap();
    launch::absmax_dev(&gpu, Format::E5M2, &x, &mut stats).unwrap();
    let s = gpu.to_vec(&stats).unwrap();
    assert_eq!(
        s.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        [want.amax, want.scale, want.scale_inv].map(f32::to_bits)
    );
}
