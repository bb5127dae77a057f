//! Runtime behaviour with and without a CUDA device.
//!
//! * Without a driver (this crate's CI machines): every device entry point
//!   returns `Error::NoDevice` with the loader's reason, `Backend::Auto`
//!   resolves to the host model, nothing panics.
//! * With a device: the `gpu_*` tests JIT small hand-written modules,
//!   launch them and check results bit for bit; without one they print
//!   `SKIP: no CUDA device` and return.

use std::path::Path;

use ptxsmith::Error;
use ptxsmith::dsl::PtxModule;
use ptxsmith::dsl::params::{ArgValue, ParamDesc, ParamKind, ScalarType};
use ptxsmith::runtime::{
    Backend, Context, Gpu, LaunchConfig, Ran, Resolved, Stream, cuda_available,
    cuda_unavailable_reason, device_count, device_sm, resolve,
};
use ptxsmith::target::{PtxVersion, Sm};
use ptxsmith::testing::cuda_for_tests;

// ---------------------------------------------------------------------------
// Without a device
// ---------------------------------------------------------------------------

/// Returns true (after printing why) when a device is present, so the
/// no-device expectations do not apply.
fn device_present() -> bool {
    if cuda_available() {
        println!("SKIP: a CUDA device is present; no-device behaviour is not observable here");
        return true;
    }
    false
}

#[test]
fn open_without_a_driver_is_no_device_with_the_loaders_reason() {
    if device_present() {
        return;
    }
    let reason = cuda_unavailable_reason().expect("no device, so a reason");
    assert!(!reason.is_empty());
    match Gpu::open(0) {
        Err(Error::NoDevice(m)) => assert_eq!(m, reason),
        other => panic!("expected NoDevice, got {other:?}"),
    }
    assert!(matches!(device_sm(), Err(Error::NoDevice(_))));
    assert!(matches!(device_count(), Err(Error::NoDevice(_))));
    assert!(matches!(Context::cuda(0), Err(Error::NoDevice(_))));
    // The message names the cause.
    let shown = Gpu::open(0).unwrap_err().to_string();
    assert!(shown.starts_with("no CUDA device: "), "{shown}");
    assert!(shown.contains(reason), "{shown}");
}

#[test]
fn cuda_backend_fails_loud_and_auto_falls_back_to_host() {
    if device_present() {
        return;
    }
    match resolve(Backend::Cuda) {
        Err(Error::NoDevice(m)) => assert!(!m.is_empty()),
        other => panic!("expected NoDevice, got {other:?}"),
    }
    let auto = resolve(Backend::Auto).expect("Auto never fails for lack of a device");
    assert!(matches!(auto, Resolved::Host));
    assert_eq!(auto.ran(), Ran::Host);
    // Repeated calls give the same answers (the probe is cached).
    assert!(matches!(resolve(Backend::Cuda), Err(Error::NoDevice(_))));
    assert_eq!(resolve(Backend::Auto).unwrap().ran(), Ran::Host);
}

#[test]
fn cuda_for_tests_skips_without_a_device() {
    // Under PTXSMITH_REQUIRE_GPU it panics instead (tests/require_gpu.rs).
    if device_present() || ptxsmith::testing::gpu_required() {
        return;
    }
    assert!(cuda_for_tests().is_none());
}

#[test]
fn host_and_sim_never_need_a_driver() {
    assert_eq!(resolve(Backend::Host).unwrap().ran(), Ran::Host);
    assert_eq!(resolve(Backend::Sim).unwrap().ran(), Ran::Sim);
    for name in ["cuda", "auto", "host", "sim"] {
        assert_eq!(name.parse::<Backend>().unwrap().to_string(), name);
    }
}

#[test]
fn an_absent_ordinal_is_no_device_everywhere() {
    match Gpu::open(u32::MAX) {
        Err(Error::NoDevice(m)) => assert!(!m.is_empty()),
        other => panic!("expected NoDevice, got {other:?}"),
    }
    assert!(matches!(Context::cuda(u32::MAX), Err(Error::NoDevice(_))));
}

/// Whether `text` holds `marker` other than as a Rust field access
/// (`module.version` is fine, a `.version` directive is not).
fn spells(text: &str, marker: &str) -> bool {
    text.match_indices(marker).any(|(i, _)| {
        !marker.starts_with('.')
            || !text[..i]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ')')
    })
}

#[test]
fn src_runtime_spells_no_ptx() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/runtime");
    let markers = [
        ".version",
        ".target",
        ".entry",
        ".visible",
        ".address_size",
        ".param .",
        ".reg .",
        "ld.param",
        "ld.global",
        "st.global",
        "%tid",
        "%ctaid",
    ];
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            for m in markers {
                assert!(
                    !spells(&text, m),
                    "{} contains PTX text (`{m}`)",
                    path.display()
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 6, "only {checked} files under {}", dir.display());
    // The checker itself: it sees this file's kernel text.
    assert!(spells(SCALE_PTX, ".version") && spells(SCALE_PTX, ".entry"));
    assert!(!spells("m.version = v; x.target()", ".version"));
}

// ---------------------------------------------------------------------------
// With a device
// ---------------------------------------------------------------------------

/// `out[i] = in[i] * scale + (float)offset` for `i < n`, with separately
/// rounded multiply and add (no contraction), so the host check is exact.
const SCALE_PTX: &str = r#"
.version 6.0
.target sm_70
.address_size 64

.visible .entry ptxsmith_test_scale(
    .param .u64 p_out,
    .param .u64 p_in,
    .param .u32 p_n,
    .param .f32 p_scale,
    .param .f64 p_offset
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<5>;
    .reg .b64 %rd<8>;
    .reg .f64 %fd<2>;

    ld.param.u64 %rd1, [p_out];
    ld.param.u64 %rd2, [p_in];
    ld.param.u32 %r1, [p_n];
    ld.param.f32 %f1, [p_scale];
    ld.param.f64 %fd1, [p_offset];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.u32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra $L_done;
    cvta.to.global.u64 %rd3, %rd2;
    cvta.to.global.u64 %rd4, %rd1;
    mul.wide.u32 %rd5, %r5, 4;
    add.u64 %rd6, %rd3, %rd5;
    ld.global.f32 %f2, [%rd6];
    mul.rn.f32 %f3, %f2, %f1;
    cvt.rn.f32.f64 %f4, %fd1;
    add.rn.f32 %f3, %f3, %f4;
    add.u64 %rd7, %rd4, %rd5;
    st.global.f32 [%rd7], %f3;
$L_done:
    ret;
}
"#;

fn scale_module() -> PtxModule {
    let ptr = |name: &str| ParamDesc {
        name: name.into(),
        kind: ParamKind::GlobalPtr {
            elem: ScalarType::F32,
            align: 4,
        },
    };
    let scalar = |name: &str, t| ParamDesc {
        name: name.into(),
        kind: ParamKind::Scalar(t),
    };
    PtxModule {
        kernel: "ptxsmith_test_scale".into(),
        tuning: String::new(),
        sm: Sm::Sm70,
        version: PtxVersion::new(6, 0),
        params: vec![
            ptr("p_out"),
            ptr("p_in"),
            scalar("p_n", ScalarType::U32),
            scalar("p_scale", ScalarType::F32),
            scalar("p_offset", ScalarType::F64),
        ],
        ptx: SCALE_PTX.into(),
    }
}

fn host_scale(x: &[f32], scale: f32, offset: f64) -> Vec<f32> {
    x.iter().map(|&v| v * scale + offset as f32).collect()
}

/// Run the scale kernel on `ctx` (GPU or simulator) and check it bit for
/// bit.
fn run_scale(st: &Stream, n: usize) {
    let module = scale_module();
    let input: Vec<f32> = (0..n).map(|i| (i as f32 - 300.25) * 0.37).collect();
    let (scale, offset) = (1.7f32, -0.1f64);
    let ctx = st.context();
    let inp = st.upload(&input).unwrap();
    let mut out = ctx.alloc::<f32>(n).unwrap();
    let args = [
        ArgValue::Ptr(st.arg_mut("out", &mut out).unwrap().addr),
        ArgValue::Ptr(st.arg("in", &inp).unwrap().addr),
        ArgValue::U32(n as u32),
        ArgValue::F32(scale),
        ArgValue::F64(offset),
    ];
    st.launch(
        &module,
        LaunchConfig::linear((n as u32).div_ceil(128), 128),
        &args,
    )
    .unwrap();
    let got = st.to_vec(&out).unwrap();
    let want = host_scale(&input, scale, offset);
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g.to_bits(), w.to_bits(), "element {i}: device {g} host {w}");
    }
}

#[test]
fn sim_runs_the_hand_written_scale_kernel_like_a_gpu() {
    let ctx = Context::sim(Sm::Sm70);
    run_scale(&ctx.default_stream(), 1000);
    let t = ctx.traffic();
    assert_eq!(
        (
            t.bytes_uploaded,
            t.bytes_downloaded,
            t.launches,
            t.uploads,
            t.downloads
        ),
        (4000, 4000, 1, 1, 1)
    );
}

#[test]
fn gpu_scale_kernel_matches_the_host_bit_for_bit() {
    let Some(ctx) = cuda_for_tests() else {
        return;
    };
    println!("{}", ctx.info().unwrap());
    assert_eq!(ctx.sm(), device_sm().unwrap());
    assert!(ctx.multiprocessor_count() > 0);
    // A stream of our own: the context is shared with the other device
    // tests of this binary, which run in parallel; the stream's counters
    // see only this test's work.
    let st = ctx.new_stream().unwrap();
    let before = st.traffic();
    run_scale(&st, 1000);
    let t = st.traffic().since(&before);
    assert_eq!(
        (t.bytes_uploaded, t.bytes_downloaded, t.launches),
        (4000, 4000, 1)
    );
    run_scale(&st, 37);
    assert_eq!(st.traffic().since(&before).launches, 2);
}

#[test]
fn gpu_copies_and_length_checks() {
    let Some(ctx) = cuda_for_tests() else {
        return;
    };
    let st = ctx.default_stream();
    let mut buf = st.upload(&[7u8; 64]).unwrap();
    st.copy_from_host(&mut buf.slice_mut(..3).unwrap(), &[1, 2, 3])
        .unwrap();
    let mut head = [0u8; 5];
    st.copy_to_host(&buf.slice(..5).unwrap(), &mut head)
        .unwrap();
    assert_eq!(head, [1, 2, 3, 7, 7]);
    match buf.copy_from_host(&[0u8; 65]) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("65") && m.contains("64"), "{m}"),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    // Unaligned zeroing and device copies.
    st.zero(&mut buf.slice_mut(1..6).unwrap()).unwrap();
    let src = st.upload(&[9u8; 3]).unwrap();
    st.copy(&mut buf.slice_mut(61..).unwrap(), &src).unwrap();
    let all = buf.to_vec().unwrap();
    assert_eq!(&all[..7], &[1, 0, 0, 0, 0, 0, 7]);
    assert_eq!(&all[60..], &[7, 9, 9, 9]);
    let empty = ctx.upload::<f32>(&[]).unwrap();
    assert!(empty.to_vec().unwrap().is_empty());
    let z = ctx.alloc_zeroed::<u32>(1001).unwrap();
    assert!(z.to_vec().unwrap().iter().all(|&v| v == 0));
}

#[test]
fn gpu_launch_arguments_are_checked_before_launching() {
    let Some(ctx) = cuda_for_tests() else {
        return;
    };
    // A stream of our own: the context is shared with the other device
    // tests of this binary, which run in parallel (a launch of theirs in
    // the context's counters failed this test once on the emulator).
    let st = ctx.new_stream().unwrap();
    let module = scale_module();
    let a = st.upload(&[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let pa = ArgValue::Ptr(a.device_ptr());
    let cfg = LaunchConfig::linear(1, 32);
    let before = st.traffic();
    // Wrong count and wrong kind.
    assert!(matches!(
        st.launch(&module, cfg, &[pa]),
        Err(Error::InvalidArgument(_))
    ));
    let wrong = [
        pa,
        pa,
        ArgValue::S32(4),
        ArgValue::F32(1.0),
        ArgValue::F64(0.0),
    ];
    assert!(
        matches!(st.launch(&module, cfg, &wrong), Err(Error::InvalidArgument(m)) if m.contains("p_n"))
    );
    // A pointer outside every live buffer is refused: on the device it
    // would fault and lose the context.
    let stale = [
        ArgValue::Ptr(0x10),
        pa,
        ArgValue::U32(4),
        ArgValue::F32(1.0),
        ArgValue::F64(0.0),
    ];
    assert!(
        matches!(st.launch(&module, cfg, &stale), Err(Error::InvalidArgument(m)) if m.contains("p_out"))
    );
    let ok = [
        pa,
        pa,
        ArgValue::U32(4),
        ArgValue::F32(1.0),
        ArgValue::F64(0.0),
    ];
    assert!(matches!(
        st.launch(&module, LaunchConfig::linear(1, 0), &ok),
        Err(Error::InvalidArgument(_))
    ));
    // A module whose PTX entry takes more parameters than it declares.
    let mut lying = scale_module();
    lying.params.pop();
    assert!(matches!(
        st.launch(&lying, cfg, &ok[..4]),
        Err(Error::InvalidArgument(m)) if m.contains("description")
    ));
    assert_eq!(st.traffic().since(&before).launches, 0);
    // And the real thing works in place (out == in).
    st.launch(&module, cfg, &ok).unwrap();
    // scale 1, offset 0: the values come back unchanged.
    assert_eq!(a.to_vec().unwrap(), vec![1.0f32, 2.0, 3.0, 4.0]);
}

#[test]
fn gpu_broken_ptx_is_a_jit_error_with_the_log() {
    let Some(ctx) = cuda_for_tests() else {
        return;
    };
    let mut broken = scale_module();
    broken.kernel = "ptxsmith_test_broken".into();
    broken.ptx = SCALE_PTX
        .replace("ptxsmith_test_scale", "ptxsmith_test_broken")
        .replace("mul.rn.f32 %f3, %f2, %f1;", "frobnicate.f32 %f3, %f2, %f1;");
    match ctx.load(&broken) {
        Err(Error::Jit {
            kernel,
            sm,
            message,
            log,
        }) => {
            assert_eq!(kernel, "ptxsmith_test_broken");
            assert_eq!(sm, Sm::Sm70);
            assert!(!message.is_empty());
            assert!(!log.trim().is_empty(), "the JIT log must be carried");
            println!("JIT log as reported:\n{log}");
        }
        other => panic!("expected Error::Jit, got {other:?}"),
    }
    // A JIT failure does not poison the context.
    run_scale(&ctx.default_stream(), 100);
}

#[test]
fn gpu_module_for_a_newer_sm_is_refused() {
    let Some(ctx) = cuda_for_tests() else {
        return;
    };
    if ctx.sm() == Sm::Sm120 {
        println!("SKIP: the device runs the newest supported target");
        return;
    }
    let mut m = scale_module();
    m.sm = Sm::Sm120;
    assert!(matches!(ctx.load(&m), Err(Error::UnsupportedSm(_))));
}

#[test]
fn gpu_shared_device_works_from_several_threads() {
    if cuda_for_tests().is_none() {
        return;
    }
    let shared = match resolve(Backend::Cuda).unwrap() {
        Resolved::Cuda(c) => c,
        other => panic!("expected the device, got {other:?}"),
    };
    assert_eq!(resolve(Backend::Auto).unwrap().ran(), Ran::Cuda);
    assert_eq!(shared.sm(), device_sm().unwrap());
    // One context per device: every lookup gives the same one.
    assert_eq!(Context::cuda(0).unwrap().id(), shared.id());
    let handles: Vec<_> = (0..3)
        .map(|t| {
            let ctx = shared.clone();
            std::thread::spawn(move || {
                for _ in 0..2 {
                    run_scale(&ctx.default_stream(), 200 + t);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}
