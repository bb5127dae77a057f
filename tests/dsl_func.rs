//! Device functions with calls in the DSL (issue 32): the printed
//! `.func`/`call.uni` forms, ptxas, the refusals (foreign registers both
//! ways, misuse inside a body, a function of another target, a name used
//! twice, a call in a guarded region) with the caller's location, and
//! kernels calling functions (a polynomial with `fma`, two returns, a
//! nested call, shared memory and special registers inside a function,
//! pointer arguments and a loop inside a function, returns of three sizes
//! in one struct slot) run on the simulator bit-exactly against host
//! closures on every SM.
//!
//! Wrong argument counts and types are compile errors: the `compile_fail`
//! doctests of `ptxsmith::dsl::IntoArgs`.

use ptxsmith::dsl::params::{KernelParams, Ptr};
use ptxsmith::dsl::types::{B16, F32, F64, Reg, U32};

use ptxsmith::dsl::*;
use ptxsmith::nvtools::NvTools;
use ptxsmith::runtime::{Context, LaunchConfig};
use ptxsmith::testing::{check_buffers_on_every_sm, finite_f32};
use ptxsmith::{Error, Sm, kernel_params};

use Rounding::Rn;

/// `p(x) = (x·0.5 + 1)·x − 2`, Horner with `fma.rn`.
fn poly_fn(b: &mut KernelBuilder) -> DeviceFn<F32, F32> {
    b.device_fn("poly", |f, x: Reg<F32>| {
        let t = f.ffma(Rn, x, 0.5f32, 1.0f32);
        f.ffma(Rn, t, x, -2.0f32)
    })
}

fn host_poly(x: f32) -> f32 {
    x.mul_add(0.5, 1.0).mul_add(x, -2.0)
}

kernel_params! {
    struct CallArgs => CallRegs {
        x: Ptr<F32>,
        poly: Ptr<F32>,
        sum: Ptr<F32>,
        diff: Ptr<F32>,
        nested: Ptr<F32>,
        staged: Ptr<F32>,
        n: U32,
    }
}

/// For `i < n`: `poly[i] = p(x)`, `(sum[i], diff[i]) = sum_diff(x, p(x))`
/// (two returns), `nested[i] = p(p(x))` (a function calling `poly`
/// twice), `staged[i] = x + tid.x` through a function that stores `x` in
/// its own shared array and reads it back.
fn calls(sm: Sm) -> ptxsmith::Result<PtxModule> {
    let mut b = KernelBuilder::new("calls", sm);
    b.maxntid(64, 1, 1);
    let p = b.params::<CallArgs>();
    let poly = poly_fn(&mut b);
    let sum_diff = b.device_fn::<(F32, F32), (F32, F32)>("sum_diff", |f, (x, y)| {
        (f.fadd(Rn, x, y), f.fsub(Rn, x, y))
    });
    let twice = b.device_fn::<F32, F32>("poly_twice", |f, x| {
        let y = f.call(&poly, x);
        f.call(&poly, y)
    });
    let staged = b.device_fn::<F32, F32>("staged", |f, x| {
        let s = f.shared_array::<F32>("fn_stage", 64, 4);
        let t = f.tid_x();
        let q = f.shared_elem(&s, t);
        f.st_shared(q, 0, x);
        let back = f.ld_shared(q, 0);
        let tf = f.u32_to_f32(Rn, t);
        f.fadd(Rn, back, tf)
    });
    let i = b.global_id_x();
    let inside = b.setp(Cmp::Lt, i, p.n);
    b.if_(inside, |b| {
        let xp = b.offset(p.x, i);
        let x = b.ld_global(xp, 0);
        let y = b.call(&poly, x);
        let (s, d) = b.call(&sum_diff, (x, y));
        let z = b.call(&twice, x);
        let w = b.call(&staged, x);
        for (ptr, v) in [
            (p.poly, y),
            (p.sum, s),
            (p.diff, d),
            (p.nested, z),
            (p.staged, w),
        ] {
            let q = b.offset(ptr, i);
            b.st_global(q, 0, v);
        }
    });
    b.finish()
}

const BLOCK: u32 = 64;

fn host_calls(x: &[f32]) -> Vec<Vec<f32>> {
    let poly: Vec<f32> = x.iter().map(|&v| host_poly(v)).collect();
    let sum = x.iter().zip(&poly).map(|(a, b)| a + b).collect();
    let diff = x.iter().zip(&poly).map(|(a, b)| a - b).collect();
    let nested = x.iter().map(|&v| host_poly(host_poly(v))).collect();
    let staged = x
        .iter()
        .enumerate()
        .map(|(i, &v)| v + (i as u32 % BLOCK) as f32)
        .collect();
    vec![poly, sum, diff, nested, staged]
}

#[test]
fn printed_forms_are_nvrtcs() {
    let ptx = calls(Sm::Sm80).unwrap().ptx;
    for form in [
        ".func (.param .b32 func_retval0) poly(\n\t.param .b32 poly_param_0\n)\n{",
        "ld.param.f32 %f0, [poly_param_0];",
        "st.param.f32 [func_retval0], %f2;",
        ".func (.param .align 4 .b8 func_retval0[8]) sum_diff(\n\t.param .b32 sum_diff_param_0,\n\t.param .b32 sum_diff_param_1\n)",
        "st.param.f32 [func_retval0+4], ",
        "\t{ // callseq 0\n\t.param .b32 param0;\n\tst.param.f32 [param0], %f",
        "\t.param .b32 retval0;\n\tcall.uni (retval0), poly, (param0);\n\tld.param.f32 %f",
        ".param .align 4 .b8 retval0[8];\n\tcall.uni (retval0), sum_diff, (param0, param1);",
        "ld.param.f32 %f",
        ", [retval0+4];\n\t} // callseq 1",
        // the function's shared array is at module scope
        "\n.shared .align 4 .b8 fn_stage[256];\n",
    ] {
        assert!(ptx.contains(form), "missing {form:?} in\n{ptx}");
    }
    // every function once, callees first, all before the entry
    let at = |s: &str| {
        assert_eq!(
            ptx.matches(s).count(),
            1,
            "{s} printed {}×",
            ptx.matches(s).count()
        );
        ptx.find(s).unwrap()
    };
    let (poly, twice, entry) = (
        at(") poly("),
        at(") poly_twice("),
        at(".visible .entry calls("),
    );
    assert!(poly < twice && twice < entry && at(") sum_diff(") < entry);
    assert!(at(") staged(") < entry);
    // no call needs a newer .version than the target's lowest
    assert!(ptx.contains(".version 7.0\n"), "{ptx}");
}

#[test]
fn no_argument_and_no_return_forms() {
    let mut b = KernelBuilder::new("k", Sm::Sm80);
    let tid = b.device_fn::<(), U32>("tid", |f, ()| f.tid_x());
    let sink = b.device_fn::<U32, ()>("sink", |f, x| {
        let _ = f.add(x, 1u32);
    });
    let t = b.call(&tid, ());
    b.call(&sink, t);
    b.call(&sink, 7u32); // an immediate argument
    let ptx = b.finish().unwrap().ptx;
    for form in [
        ".func (.param .b32 func_retval0) tid()\n{",
        "call.uni (retval0), tid, ();",
        ".func sink(\n\t.param .b32 sink_param_0\n)",
        "call.uni sink, (param0);",
        "st.param.u32 [param0], 7;",
    ] {
        assert!(ptx.contains(form), "missing {form:?} in\n{ptx}");
    }
}

#[test]
fn ptxas_assembles_calls() {
    let Some(tools) = NvTools::for_tests() else {
        return;
    };
    for sm in Sm::ALL {
        let m = calls(sm).unwrap();
        if let Err(e) = tools.assemble(&m.ptx, sm) {
            panic!("{sm}: ptxas rejected the calls:\n{e}\n{}", m.ptx);
        }
    }
}

#[test]
fn kernels_calling_functions_are_bit_exact_on_every_sm() {
    let n = 300usize;
    let x = finite_f32(n, 32);
    let sweep = check_buffers_on_every_sm(
        calls,
        |ctx: &Context, m| {
            let st = ctx.default_stream();
            let xd = st.upload(&x)?;
            let mut outs = (0..5)
                .map(|_| ctx.alloc::<f32>(n))
                .collect::<ptxsmith::Result<Vec<_>>>()?;
            let [o0, o1, o2, o3, o4] = &mut outs[..] else {
                unreachable!()
            };
            let args = CallArgs {
                x: st.arg("x", &xd)?,
                poly: st.arg_mut("poly", o0)?,
                sum: st.arg_mut("sum", o1)?,
                diff: st.arg_mut("diff", o2)?,
                nested: st.arg_mut("nested", o3)?,
                staged: st.arg_mut("staged", o4)?,
                n: n as u32,
            };
            st.launch(
                m,
                LaunchConfig::linear((n as u32).div_ceil(BLOCK), BLOCK),
                &args.args(),
            )?;
            outs.iter().map(|o| st.to_vec(o)).collect()
        },
        |_| host_calls(&x),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sweep.passed.len(), Sm::ALL.len(), "{sweep}");
}

/// The `Error::Build` of a refused build: its error, kernel and line.
fn refusal(r: ptxsmith::Result<PtxModule>) -> (BuildError, String, u32) {
    match r.expect_err("the builder should refuse") {
        Error::Build {
            error,
            kernel,
            location: Some(l),
        } => {
            assert!(l.file().ends_with("dsl_func.rs"), "{l}");
            (error, kernel, l.line())
        }
        e => panic!("{e:?}"),
    }
}

#[test]
fn a_kernel_register_in_a_function_body_is_refused_naming_both() {
    let mut b = KernelBuilder::new("outer", Sm::Sm80);
    let k = b.mov(2.0f32);
    let line = line!() + 2;
    let _ = b.device_fn::<F32, F32>("inner", |f, x| {
        f.fmul(Rn, x, k) // `k` is the kernel's
    });
    let (e, kernel, l) = refusal(b.finish());
    assert_eq!(
        (e, kernel.as_str(), l),
        (
            BuildError::ForeignRegister {
                register: "%f0".into(),
                owner_kernel: "outer".into(),
                this_kernel: "inner".into()
            },
            "inner",
            line
        )
    );
}

#[test]
fn a_function_register_in_the_kernel_is_refused_naming_both() {
    let mut b = KernelBuilder::new("outer", Sm::Sm80);
    let mut leaked = None;
    let f = b.device_fn::<F32, F32>("inner", |f, x| {
        leaked = Some(x);
        f.fadd(Rn, x, 1.0f32)
    });
    let y = b.call(&f, 1.0f32);
    let line = line!() + 1;
    let _ = b.fadd(Rn, y, leaked.unwrap());
    let (e, kernel, l) = refusal(b.finish());
    assert_eq!(
        (e, kernel.as_str(), l),
        (
            BuildError::ForeignRegister {
                register: "%f0".into(),
                owner_kernel: "inner".into(),
                this_kernel: "outer".into()
            },
            "outer",
            line
        )
    );
}

#[test]
fn misuse_in_a_body_is_refused_at_its_line() {
    type Body = fn(&mut KernelBuilder, Reg<U32>) -> Reg<U32>;
    let cases: [(Body, BuildError); 4] = [
        (
            |f, x| f.div(x, 0u32),
            BuildError::DivisionByZero { op: "division" },
        ),
        (
            |f, x| {
                f.ret();
                x
            },
            BuildError::RetInDeviceFunction,
        ),
        (
            |f, _| f.load_param::<U32>("n"),
            BuildError::NotInDeviceFunction { op: "load_param" },
        ),
        (
            |f, x| {
                f.maxntid(32, 1, 1);
                x
            },
            BuildError::NotInDeviceFunction { op: "maxntid" },
        ),
    ];
    for (body, want) in cases {
        let mut b = KernelBuilder::new("k", Sm::Sm80);
        let f = b.device_fn::<U32, U32>("f", body);
        // the refused function's handle is refused where it is called too
        let mut other = KernelBuilder::new("k2", Sm::Sm80);
        let line = line!() + 1;
        let _ = other.call(&f, 1u32);
        let (e, kernel, _) = refusal(b.finish());
        assert_eq!((e, kernel.as_str()), (want.clone(), "f"));
        let (e, kernel, l) = refusal(other.finish());
        assert!(
            matches!(&e, BuildError::BrokenFunction { function, .. } if function == "f"),
            "{e}"
        );
        assert_eq!((kernel.as_str(), l), ("k2", line));
    }
}

#[test]
fn call_misuse_is_refused_at_the_call() {
    // a function of another target
    let mut a = KernelBuilder::new("a", Sm::Sm80);
    let f = poly_fn(&mut a);
    let mut b = KernelBuilder::new("b", Sm::Sm90);
    let line = line!() + 1;
    let _ = b.call(&f, 1.0f32);
    assert_eq!(
        refusal(b.finish()),
        (
            BuildError::FunctionTarget {
                function: "poly".into(),
                function_sm: Sm::Sm80,
                this_sm: Sm::Sm90
            },
            "b".into(),
            line
        )
    );

    // two different functions of one name in one module
    let mut b = KernelBuilder::new("k", Sm::Sm80);
    let f1 = poly_fn(&mut b);
    let f2 = poly_fn(&mut b);
    let _ = b.call(&f1, 1.0f32);
    let _ = b.call(&f1, 2.0f32); // the same one again is fine
    let line = line!() + 1;
    let _ = b.call(&f2, 1.0f32);
    assert_eq!(
        refusal(b.finish()),
        (
            BuildError::FunctionName {
                name: "poly".into()
            },
            "k".into(),
            line
        )
    );

    // a function named as the kernel
    let mut b = KernelBuilder::new("poly", Sm::Sm80);
    let f = poly_fn(&mut b);
    let line = line!() + 1;
    let _ = b.call(&f, 1.0f32);
    assert_eq!(
        refusal(b.finish()),
        (
            BuildError::FunctionName {
                name: "poly".into()
            },
            "poly".into(),
            line
        )
    );

    // a call in a guarded region
    let mut b = KernelBuilder::new("k", Sm::Sm80);
    let f = poly_fn(&mut b);
    let t = b.tid_x();
    let p = b.setp(Cmp::Eq, t, 0u32);
    let line = line!() + 2;
    b.guarded(p, |b| {
        let _ = b.call(&f, 1.0f32);
    });
    assert_eq!(
        refusal(b.finish()),
        (BuildError::CallInGuardedRegion, "k".into(), line)
    );

    // a shared array name used by the kernel and a function
    let mut b = KernelBuilder::new("k", Sm::Sm80);
    let _ = b.shared_array::<F32>("s", 4, 4);
    let f = b.device_fn::<(), ()>("g", |f, ()| {
        let _ = f.shared_array::<F32>("s", 4, 4);
    });
    let line = line!() + 1;
    b.call(&f, ());
    assert_eq!(
        refusal(b.finish()),
        (
            BuildError::SharedName { array: "s".into() },
            "k".into(),
            line
        )
    );
}

#[test]
fn features_inside_a_function_gate_and_version_the_kernel() {
    // redux.sync (sm_80+) inside a function: refused on sm_75
    let build = |sm: Sm| {
        let mut b = KernelBuilder::new("k", sm);
        let f = b.device_fn::<U32, U32>("wsum", |f, x| f.redux(ReduxOp::Add, x, u32::MAX));
        let t = b.tid_x();
        let _ = b.call(&f, t);
        b.finish()
    };
    assert!(matches!(
        build(Sm::Sm75),
        Err(Error::UnsupportedFeature { sm: Sm::Sm75, .. })
    ));
    assert!(build(Sm::Sm80).is_ok());
    // an FP8 conversion inside a function raises the kernel's .version
    let mut b = KernelBuilder::new("k", Sm::Sm89);
    let f = b.device_fn::<F32, ptxsmith::dsl::types::B16>("to_fp8", |f, x| {
        f.cvt_to_fp8x2(Fp8Format::E4M3, x, x)
    });
    let _ = b.call(&f, 1.0f32);
    assert_eq!(b.finish().unwrap().version.to_string(), "8.1");
}

kernel_params! {
    struct RowArgs => RowRegs { x: Ptr<F32>, out: Ptr<F32>, rows: U32, len: U32 }
}

/// `out[r] = x[r·len] + x[r·len + 1] + …` in order (`add.rn`), through
/// `row_sum(GlobalPtr<F32>, U32) -> F32`, a function with a loop and a
/// `Var` inside (its labels are its own), then stored to shared memory by
/// `put(SharedPtr<F32>, F32)` and read back by the kernel.
fn rows(sm: Sm) -> ptxsmith::Result<PtxModule> {
    let mut b = KernelBuilder::new("rows", sm);
    let p = b.params::<RowArgs>();
    let row_sum = b.device_fn::<(GlobalPtr<F32>, U32), F32>("row_sum", |f, (x, n)| {
        let acc = f.var(0.0f32);
        f.for_range(0u32, n, 1u32, |f, j| {
            let q = f.offset(x, j);
            let v = f.ld_global(q, 0);
            let s = f.fadd(Rn, &acc, v);
            f.set(&acc, s);
        });
        f.get(&acc)
    });
    let put = b.device_fn::<(SharedPtr<F32>, F32), ()>("put", |f, (q, v)| f.st_shared(q, 0, v));
    let s = b.shared_array::<F32>("rowbuf", 64, 4);
    let r = b.global_id_x();
    let inside = b.setp(Cmp::Lt, r, p.rows);
    b.if_(inside, |b| {
        let e = b.mul_lo(r, p.len);
        let xp = b.offset(p.x, e);
        let total = b.call(&row_sum, (xp, p.len));
        let t = b.tid_x();
        let q = b.shared_elem(&s, t);
        b.call(&put, (q, total));
        let back = b.ld_shared(q, 0);
        let op = b.offset(p.out, r);
        b.st_global(op, 0, back);
    });
    b.finish()
}

#[test]
fn pointer_arguments_and_loops_inside_functions() {
    let (n_rows, len) = (70usize, 9usize);
    let x = finite_f32(n_rows * len, 7);
    let m = rows(Sm::Sm80).unwrap();
    assert!(
        m.ptx
            .contains(".func (.param .b32 func_retval0) row_sum(\n\t.param .b64 row_sum_param_0,\n\t.param .b32 row_sum_param_1\n)"),
        "{}",
        m.ptx
    );
    assert!(m.ptx.contains("st.param.u64 [param0], %rd"), "{}", m.ptx);
    if let Some(tools) = NvTools::for_tests() {
        for sm in [Sm::Sm70, Sm::Sm90] {
            let m = rows(sm).unwrap();
            tools
                .assemble(&m.ptx, sm)
                .unwrap_or_else(|e| panic!("{sm}: {e}\n{}", m.ptx));
        }
    }
    let sweep = check_buffers_on_every_sm(
        rows,
        |ctx: &Context, m| {
            let st = ctx.default_stream();
            let (xd, mut out) = (st.upload(&x)?, ctx.alloc::<f32>(n_rows)?);
            let args = RowArgs {
                x: st.arg("x", &xd)?,
                out: st.arg_mut("out", &mut out)?,
                rows: n_rows as u32,
                len: len as u32,
            };
            st.launch(m, LaunchConfig::linear(2, 64), &args.args())?;
            Ok(vec![st.to_vec(&out)?])
        },
        |_| {
            vec![
                x.chunks(len)
                    .map(|c| c.iter().fold(0.0f32, |a, &v| a + v))
                    .collect(),
            ]
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sweep.passed.len(), Sm::ALL.len(), "{sweep}");
}

kernel_params! {
    struct MixedArgs => MixedRegs { x: Ptr<U32>, h: Ptr<U32>, d: Ptr<U32>, a: Ptr<U32>, n: U32 }
}

/// Arguments and returns of three sizes: `mixed(U32, F64, B16) -> (B16,
/// F64, U32)` returns `(h, d·2, a + 1)` in one 24-byte return slot laid
/// out as a C struct (offsets 0, 8, 16; aligned to 8).
fn mixed(sm: Sm) -> ptxsmith::Result<PtxModule> {
    let mut b = KernelBuilder::new("mixed", sm);
    let p = b.params::<MixedArgs>();
    let f = b.device_fn::<(U32, F64, B16), (B16, F64, U32)>("mixed_fn", |f, (a, d, h)| {
        (h, f.fmul(Rn, d, 2.0f64), f.add(a, 1u32))
    });
    let i = b.global_id_x();
    let inside = b.setp(Cmp::Lt, i, p.n);
    b.if_(inside, |b| {
        let xp = b.offset(p.x, i);
        let x = b.ld_global(xp, 0);
        let xf = b.u32_to_f32(Rn, x);
        let d = b.f32_to_f64(xf);
        let h = b.u32_to_b16(x);
        let (h2, d2, a2) = b.call(&f, (x, d, h));
        let hv = b.b16_to_u32(h2);
        let df = b.f64_to_f32(Rn, d2);
        let dv = b.f32_bits(df);
        for (ptr, v) in [(p.h, hv), (p.d, dv), (p.a, a2)] {
            let q = b.offset(ptr, i);
            b.st_global(q, 0, v);
        }
    });
    b.finish()
}

#[test]
fn returns_of_mixed_sizes_are_laid_out_as_a_struct() {
    let m = mixed(Sm::Sm80).unwrap();
    for form in [
        ".func (.param .align 8 .b8 func_retval0[24]) mixed_fn(\n\t.param .b32 mixed_fn_param_0,\n\t.param .b64 mixed_fn_param_1,\n\t.param .b16 mixed_fn_param_2\n)",
        "st.param.b16 [func_retval0], %h",
        "st.param.f64 [func_retval0+8], %fd",
        "st.param.u32 [func_retval0+16], %r",
        ".param .align 8 .b8 retval0[24];",
        "ld.param.f64 %fd",
    ] {
        assert!(m.ptx.contains(form), "missing {form:?} in\n{}", m.ptx);
    }
    if let Some(tools) = NvTools::for_tests() {
        for sm in [Sm::Sm70, Sm::Sm90] {
            let m = mixed(sm).unwrap();
            tools
                .assemble(&m.ptx, sm)
                .unwrap_or_else(|e| panic!("{sm}: {e}\n{}", m.ptx));
        }
    }
    let x: Vec<u32> = (0..100u32)
        .map(|i| i.wrapping_mul(0x9E37_79B9) ^ (i << 3))
        .collect();
    let n = x.len();
    let sweep = check_buffers_on_every_sm(
        mixed,
        |ctx: &Context, m| {
            let st = ctx.default_stream();
            let xd = st.upload(&x)?;
            let (mut h, mut d, mut a) = (
                ctx.alloc::<u32>(n)?,
                ctx.alloc::<u32>(n)?,
                ctx.alloc::<u32>(n)?,
            );
            let args = MixedArgs {
                x: st.arg("x", &xd)?,
                h: st.arg_mut("h", &mut h)?,
                d: st.arg_mut("d", &mut d)?,
                a: st.arg_mut("a", &mut a)?,
                n: n as u32,
            };
            st.launch(m, LaunchConfig::linear(4, 32), &args.args())?;
            Ok(vec![st.to_vec(&h)?, st.to_vec(&d)?, st.to_vec(&a)?])
        },
        |_| {
            vec![
                x.iter().map(|&v| v & 0xffff).collect(),
                x.iter()
                    .map(|&v| ((f64::from(v as f32) * 2.0) as f32).to_bits())
                    .collect(),
                x.iter().map(|&v| v.wrapping_add(1)).collect(),
            ]
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sweep.passed.len(), Sm::ALL.len(), "{sweep}");
}

/// The same kernels on a CUDA device (a GPU, or the driver emulator in
/// CI's emulator pass): the driver's JIT takes the `.func`s and calls, and
/// the outputs are the host closures' bits.
#[test]
fn gpu_kernels_calling_functions_match_the_host() {
    let Some(ctx) = ptxsmith::testing::cuda_for_tests() else {
        return;
    };
    let sm = ctx.sm();
    let st = ctx.default_stream();
    let n = 300usize;
    let x = finite_f32(n, 32);
    let xd = st.upload(&x).unwrap();
    let mut outs: Vec<_> = (0..5).map(|_| ctx.alloc::<f32>(n).unwrap()).collect();
    let [o0, o1, o2, o3, o4] = &mut outs[..] else {
        unreachable!()
    };
    let args = CallArgs {
        x: st.arg("x", &xd).unwrap(),
        poly: st.arg_mut("poly", o0).unwrap(),
        sum: st.arg_mut("sum", o1).unwrap(),
        diff: st.arg_mut("diff", o2).unwrap(),
        nested: st.arg_mut("nested", o3).unwrap(),
        staged: st.arg_mut("staged", o4).unwrap(),
        n: n as u32,
    };
    st.launch(
        &calls(sm).unwrap(),
        LaunchConfig::linear((n as u32).div_ceil(BLOCK), BLOCK),
        &args.args(),
    )
    .unwrap();
    for (k, (o, want)) in outs.iter().zip(host_calls(&x)).enumerate() {
        let got: Vec<u32> = st.to_vec(o).unwrap().iter().map(|v| v.to_bits()).collect();
        let want: Vec<u32> = want.iter().map(|v| v.to_bits()).collect();
        assert_eq!(got, want, "output {k} on {sm}");
    }

    let (n_rows, len) = (70usize, 9usize);
    let x = finite_f32(n_rows * len, 7);
    let xd = st.upload(&x).unwrap();
    let mut out = ctx.alloc::<f32>(n_rows).unwrap();
    let args = RowArgs {
        x: st.arg("x", &xd).unwrap(),
        out: st.arg_mut("out", &mut out).unwrap(),
        rows: n_rows as u32,
        len: len as u32,
    };
    st.launch(
        &rows(sm).unwrap(),
        LaunchConfig::linear(2, 64),
        &args.args(),
    )
    .unwrap();
    let want: Vec<u32> = x
        .chunks(len)
        .map(|c| c.iter().fold(0.0f32, |a, &v| a + v).to_bits())
        .collect();
    let got: Vec<u32> = st
        .to_vec(&out)
        .unwrap()
        .iter()
        .map(|v| v.to_bits())
        .collect();
    assert_eq!(got, want, "row sums on {sm}");
}
