//! The test kit of `ptxsmith::testing`, used as a user would: a small
//! kernel written with the public DSL, checked on the simulator for every
//! SM against its host model bit for bit, a planted one-ulp difference
//! found and reported, and ptxas/SASS assertions on a library kernel
//! (skipped without the pinned tools, failing under
//! `PTXSMITH_REQUIRE_NVIDIA_TOOLS=1`).

use ptxsmith::dsl::params::{KernelParams, Ptr};
use ptxsmith::dsl::types::{F32, U32};
use ptxsmith::dsl::{KernelBuilder, PtxModule, Rounding};
use ptxsmith::runtime::{Context, LaunchConfig};
use ptxsmith::testing::{
    self, CheckError, InspectError, check_on_every_sm, check_on_sms, finite_f32, mixed_f32, or_skip,
};
use ptxsmith::{Sm, kernel_params};

const BLOCK: u32 = 128;

kernel_params! {
    /// `out[i] = x[i] · scale + bias`, rounded after each operation.
    struct ScaleBiasArgs => ScaleBiasRegs {
        x: Ptr<F32>,
        out: Ptr<F32>,
        n: U32,
        scale: F32,
        bias: F32,
    }
}

/// `out[i] = (x[i] ·rn scale) +rn bias`, grid-stride over `n`.
fn scale_bias(sm: Sm) -> ptxsmith::Result<PtxModule> {
    let mut b = KernelBuilder::new("kit_scale_bias", sm);
    b.maxntid(BLOCK, 1, 1);
    let p = b.params::<ScaleBiasArgs>();
    b.grid_stride(p.n, |b, i| {
        let xp = b.offset(p.x, i);
        let x = b.ld_global_nc(xp, 0);
        let m = b.fmul(Rounding::Rn, x, p.scale);
        let y = b.fadd(Rounding::Rn, m, p.bias);
        let op = b.offset(p.out, i);
        b.st_global(op, 0, y);
    });
    b.finish()
}

/// `out[i] = max.NaN(x[i], bias)`: needs sm_80 (`max.NaN`), so the
/// generator refuses sm_70 and sm_75 with `UnsupportedFeature`.
fn max_nan(sm: Sm) -> ptxsmith::Result<PtxModule> {
    let mut b = KernelBuilder::new("kit_max_nan", sm);
    b.maxntid(BLOCK, 1, 1);
    let p = b.params::<ScaleBiasArgs>();
    b.grid_stride(p.n, |b, i| {
        let xp = b.offset(p.x, i);
        let x = b.ld_global_nc(xp, 0);
        let y = b.fmax_nan(x, p.bias);
        let op = b.offset(p.out, i);
        b.st_global(op, 0, y);
    });
    b.finish()
}

const SCALE: f32 = 1.000_001;
const BIAS: f32 = -0.375;

/// Upload `x`, launch `module` over it with [`SCALE`] and [`BIAS`] and
/// download the output.
fn launch(ctx: &Context, module: &PtxModule, x: &[f32]) -> ptxsmith::Result<Vec<f32>> {
    let st = ctx.default_stream();
    let xd = st.upload(x)?;
    let mut out = ctx.alloc::<f32>(x.len())?;
    let args = ScaleBiasArgs {
        x: st.arg("x", &xd)?,
        out: st.arg_mut("out", &mut out)?,
        n: x.len() as u32,
        scale: SCALE,
        bias: BIAS,
    };
    let blocks = (x.len() as u32).div_ceil(BLOCK).clamp(1, 8);
    st.launch(module, LaunchConfig::linear(blocks, BLOCK), &args.args())?;
    st.to_vec(&out)
}

/// A NaN result of an f32 instruction is the canonical `0x7FFFFFFF` on
/// the GPU (and the simulator), whatever the inputs' payloads.
fn gpu(v: f32) -> f32 {
    if v.is_nan() {
        f32::from_bits(0x7fff_ffff)
    } else {
        v
    }
}

/// The host model: the same two roundings in the same order.
fn scale_bias_host(x: &[f32]) -> Vec<f32> {
    x.iter().map(|&v| gpu(gpu(v * SCALE) + BIAS)).collect()
}

#[test]
fn an_exact_kernel_passes_on_every_sm_with_nans_infinities_and_subnormals() {
    let x = mixed_f32(1000, 11);
    let sweep = check_on_every_sm(
        scale_bias,
        |ctx, m| launch(ctx, m, &x),
        |_| scale_bias_host(&x),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sweep.passed, Sm::ALL.to_vec());
    assert!(sweep.skipped.is_empty());
}

#[test]
fn a_planted_one_ulp_difference_on_one_sm_is_found_and_named() {
    let x = mixed_f32(777, 5);
    // the host model is one ulp off at one finite element, on sm_89 only
    let planted = (300..x.len())
        .find(|&i| scale_bias_host(&x[i..=i])[0].is_normal())
        .unwrap();
    let host = |sm: Sm| {
        let mut h = scale_bias_host(&x);
        if sm == Sm::Sm89 {
            h[planted] = f32::from_bits(h[planted].to_bits() + 1);
        }
        h
    };
    let err = check_on_every_sm(scale_bias, |ctx, m| launch(ctx, m, &x), host).unwrap_err();
    let CheckError::Mismatch(m) = &err else {
        panic!("expected a mismatch, got {err}");
    };
    assert_eq!(m.sm, Sm::Sm89);
    assert_eq!(m.index, planted);
    assert_eq!(m.mismatches, 1);
    assert_eq!(m.failing_sms, [Sm::Sm89]);
    assert_eq!(m.host_bits, m.device_bits + 1);
    let text = err.to_string();
    assert!(text.contains("sm_89"), "{text}");
    assert!(text.contains(&format!("element {planted}")), "{text}");
    assert!(text.contains(&format!("0x{:08x}", m.device_bits)), "{text}");
    assert!(text.contains("1 of 777"), "{text}");
}

#[test]
fn nan_payloads_count_as_differences() {
    // without the canonical NaN of the GPU the host model differs at every
    // NaN input: `==` on f32 would not see it, the bit comparison does
    let x = testing::special_f32s();
    let naive = |_: Sm| x.iter().map(|&v| v * SCALE + BIAS).collect::<Vec<f32>>();
    let err =
        check_on_sms(&[Sm::Sm80], scale_bias, |ctx, m| launch(ctx, m, &x), naive).unwrap_err();
    let CheckError::Mismatch(m) = err else {
        panic!("expected a mismatch");
    };
    // (Rust leaves the NaN bits of `*` and `+` unspecified: count on this
    // machine's)
    let nans = naive(Sm::Sm80)
        .iter()
        .filter(|v| v.is_nan() && v.to_bits() != 0x7fff_ffff)
        .count();
    assert!(nans > 0);
    assert_eq!(m.mismatches, nans, "{m}");
    assert!(f32::from_bits(m.device_bits as u32).is_nan());
}

#[test]
fn an_sm_the_generator_refuses_is_a_skip_reported_in_the_result() {
    let x = finite_f32(300, 9);
    let host = |_: Sm| {
        x.iter()
            .map(|&v| ptxsmith::math::ptx_max_nan(v, BIAS))
            .collect()
    };
    let sweep = check_on_every_sm(max_nan, |ctx, m| launch(ctx, m, &x), host)
        .unwrap_or_else(|e| panic!("{e}"));
    let skipped: Vec<Sm> = sweep.skipped.iter().map(|(s, _)| *s).collect();
    assert_eq!(skipped, [Sm::Sm70, Sm::Sm75]);
    assert!(sweep.skipped[0].1.contains("sm_70"), "{sweep}");
    assert_eq!(sweep.passed.len(), Sm::ALL.len() - 2);
    // every SM refused: an error, not a silent pass
    let err = check_on_sms(
        &[Sm::Sm70, Sm::Sm75],
        max_nan,
        |ctx, m| launch(ctx, m, &x),
        host,
    )
    .unwrap_err();
    assert!(matches!(err, CheckError::NothingChecked { .. }), "{err}");
}

#[test]
fn launch_errors_and_length_differences_name_the_sm() {
    let x = finite_f32(64, 1);
    let err = check_on_sms(
        &[Sm::Sm90],
        scale_bias,
        |ctx, m| launch(ctx, m, &x),
        |_| scale_bias_host(&x[..63]),
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            CheckError::Length {
                sm: Sm::Sm90,
                device: 64,
                host: 63,
                ..
            }
        ),
        "{err}"
    );
    // a launch with the wrong element count for the buffer: the
    // simulator's finding (an out-of-bounds read) comes back as a typed
    // launch error naming the SM and the kernel
    let err = check_on_sms(
        &[Sm::Sm86],
        scale_bias,
        |ctx, m| {
            let st = ctx.default_stream();
            let xd = st.upload(&x)?;
            let mut out = ctx.alloc::<f32>(x.len())?;
            let args = ScaleBiasArgs {
                x: st.arg("x", &xd)?,
                out: st.arg_mut("out", &mut out)?,
                n: 2 * x.len() as u32,
                scale: SCALE,
                bias: BIAS,
            };
            st.launch(m, LaunchConfig::linear(1, BLOCK), &args.args())?;
            st.to_vec(&out)
        },
        |_| scale_bias_host(&x),
    )
    .unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(&err, CheckError::Launch { sm: Sm::Sm86, kernel, .. } if kernel == "kit_scale_bias"),
        "{text}"
    );
}

/// A library kernel's ptxas report and SASS: the row dot product keeps
/// `mul.rn` and `add.rn` apart (FMUL and FADD, no FFMA) and does not spill.
#[test]
fn sass_assertions_on_a_library_kernel() {
    let module = ptxsmith::kernels::dot::ptx::generate(Sm::Sm80).unwrap();
    let Some(report) = or_skip(testing::assert_no_spills(&module)).unwrap() else {
        return;
    };
    assert!(report.registers() > 0 && !report.spills());
    let sass = or_skip(testing::assert_opcode_absent(&module, "FFMA"))
        .unwrap()
        .expect("tools found above");
    assert!(sass.opcode_counts["FMUL"] > 0 && sass.opcode_counts["FADD"] > 0);
    testing::assert_opcode_present(&module, "FMUL").unwrap();

    // the assertions fail when the SASS says otherwise
    let err = testing::assert_opcode_present(&module, "HMMA").unwrap_err();
    assert!(
        matches!(&err, InspectError::OpcodeAbsent { opcode, sm: Sm::Sm80, .. } if opcode == "HMMA"),
        "{err}"
    );
    assert!(err.to_string().contains("FMUL×"), "{err}");
    let err = testing::assert_opcode_absent(&module, "FMUL").unwrap_err();
    assert!(
        matches!(&err, InspectError::OpcodePresent { count, .. } if *count > 0),
        "{err}"
    );
    assert!(err.to_string().contains("FMUL R"), "{err}");

    // our own kernel: no FFMA either, on every SM nvdisasm reads
    for sm in Sm::ALL {
        let m = scale_bias(sm).unwrap();
        match or_skip(testing::assert_opcode_absent(&m, "FFMA")).unwrap() {
            Some(s) => assert!(s.count("FMUL") > 0, "{sm}"),
            None => assert_eq!(sm, Sm::Sm70, "only sm_70 may be skipped"),
        }
    }
}

/// Missing tools: a skip, except under `PTXSMITH_REQUIRE_NVIDIA_TOOLS=1`.
#[test]
fn missing_tools_are_a_typed_skip_unless_required() {
    let e = InspectError::ToolsMissing {
        looked_in: None,
        required: false,
    };
    assert!(e.is_skip());
    let e = InspectError::ToolsMissing {
        looked_in: None,
        required: true,
    };
    assert!(!e.is_skip());
    assert!(or_skip::<()>(Err(e)).is_err());
    // with the tools present, `tools()` finds them; without them it says
    // where it looked (and whether CI requires them)
    match testing::tools() {
        Ok(t) => assert!(t.ptxas.is_file()),
        Err(e) => {
            assert!(matches!(e, InspectError::ToolsMissing { .. }), "{e}");
            assert!(
                std::env::var(ptxsmith::nvtools::REQUIRE_ENV).as_deref() != Ok("1"),
                "{e}"
            );
        }
    }
}
