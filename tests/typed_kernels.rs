//! Typed kernels (issue 32): a user kernel generated as `Kernel<A>`,
//! launched with its own argument struct on the simulator, memoised per
//! (target, tuning). The compile error for another kernel's arguments is
//! the `compile_fail` doctest of `ptxsmith::dsl::Kernel`.

use ptxsmith::dsl::params::Ptr;
use ptxsmith::dsl::types::{F32, U32};
use ptxsmith::dsl::{Cmp, Kernel, Rounding::Rn, memo};
use ptxsmith::runtime::{Context, LaunchConfig};
use ptxsmith::{Error, Sm, kernel_params};

kernel_params! {
    /// `out[i] = x[i] · scale + bias` for `i < n`.
    pub struct AffineArgs => AffineRegs {
        x: Ptr<F32>,
        out: Ptr<F32>,
        scale: F32,
        bias: F32,
        n: U32,
    }
}

fn affine(sm: Sm, unroll_tag: u32) -> ptxsmith::Result<Kernel<AffineArgs>> {
    Kernel::<AffineArgs>::generate("user_affine", sm, |b, p| {
        b.tuning(format!("tag{unroll_tag}"));
        b.grid_stride(p.n, |b, i| {
            let (xi, oi) = (b.offset(p.x, i), b.offset(p.out, i));
            let v = b.ld_global(xi, 0);
            let m = b.fmul(Rn, v, p.scale);
            let y = b.fadd(Rn, m, p.bias);
            b.st_global(oi, 0, y);
        });
    })
}

fn host(x: &[f32], scale: f32, bias: f32) -> Vec<f32> {
    x.iter().map(|&v| v * scale + bias).collect()
}

fn run(ctx: &Context, k: &Kernel<AffineArgs>, x: &[f32]) -> ptxsmith::Result<Vec<f32>> {
    let st = ctx.default_stream();
    let xd = st.upload(x)?;
    let mut out = ctx.alloc::<f32>(x.len())?;
    let args = AffineArgs {
        x: st.arg("x", &xd)?,
        out: st.arg_mut("out", &mut out)?,
        scale: 1.5,
        bias: -0.25,
        n: x.len() as u32,
    };
    // Fewer threads than elements: the grid-stride loop covers the rest.
    st.launch_kernel(k, LaunchConfig::linear(2, 32), args)?;
    st.to_vec(&out)
}

#[test]
fn typed_user_kernel_runs_bit_exact_on_the_simulator() {
    let x: Vec<f32> = (0..200).map(|i| (i as f32 - 77.0) * 0.37).collect();
    for sm in [Sm::Sm80, Sm::Sm90] {
        let ctx = Context::sim(sm);
        let k = affine(sm, 0).unwrap();
        assert_eq!(k.sm(), sm);
        assert_eq!(k.module().tuning, "tag0");
        let got = run(&ctx, &k, &x).unwrap();
        let want = host(&x, 1.5, -0.25);
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&want), "{sm}");
    }
}

#[test]
fn memoised_twice_is_one_static_kernel_and_one_generation() {
    let get = |sm: Sm, tag: u32| {
        Kernel::<AffineArgs>::memoized("typed_kernels::affine", sm, tag, || affine(sm, tag))
    };
    let before = memo::generations();
    let a = get(Sm::Sm80, 1).unwrap();
    let b = get(Sm::Sm80, 1).unwrap();
    assert!(std::ptr::eq(a, b), "the same &'static Kernel");
    assert_eq!(
        memo::generations() - before,
        1,
        "one generation for one key"
    );
    // Another tuning or target is another kernel.
    let c = get(Sm::Sm80, 2).unwrap();
    let d = get(Sm::Sm90, 1).unwrap();
    assert!(!std::ptr::eq(a, c) && !std::ptr::eq(a, d));
    assert_eq!(memo::generations() - before, 3);
    // The memoised kernel launches like a generated one.
    let x = [1.0f32, 2.0, -3.5];
    assert_eq!(
        run(&Context::sim(Sm::Sm80), a, &x).unwrap(),
        host(&x, 1.5, -0.25)
    );
}

#[test]
fn a_module_with_other_parameters_is_refused_as_a_typed_kernel() {
    kernel_params! { struct OnlyOut => OnlyOutRegs { out: Ptr<F32> } }
    let m = Kernel::<OnlyOut>::generate("only_out", Sm::Sm80, |b, p| b.st_global(p.out, 0, 1.0f32))
        .unwrap()
        .into_module();
    let e = Kernel::<AffineArgs>::from_module(m).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    assert!(e.to_string().contains("AffineArgs"), "{e}");
}

#[test]
fn a_build_error_in_the_body_is_returned() {
    let e = Kernel::<AffineArgs>::generate("bad", Sm::Sm80, |b, p| {
        let mut acc = b.mov(0.0f32);
        b.for_range(0u32, p.n, 1u32, |b, _| {
            acc = b.fadd(Rn, acc, 1.0f32);
        });
        let _ = b.setp(Cmp::Lt, acc, 1.0f32); // a loop value read after the loop
    })
    .unwrap_err();
    assert!(matches!(e, Error::Build { .. }), "{e}");
}
