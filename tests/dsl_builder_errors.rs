//! The builder's refusals (issue 32): a register of another builder, a
//! value that escapes the loop body that defined it, and the location every
//! deferred error carries. Each refusal is a typed
//! [`BuildError`] inside `Error::Build`, returned by `finish()`, never
//! printed; `Var` carries a loop value correctly (run on the simulator).

use ptxsmith::dsl::params::{ArgValue, Ptr};
use ptxsmith::dsl::types::{F32, Pred, Reg, U32};
use ptxsmith::dsl::{BuildError, GlobalPtr, KernelBuilder, Label, PtxModule, Rounding::Rn, Var};
use ptxsmith::runtime::LaunchConfig;
use ptxsmith::sim::{Program, Sim};
use ptxsmith::{Error, Sm, kernel_params};

kernel_params! {
    /// One output float.
    struct OutArgs => OutRegs { out: Ptr<F32> }
}

/// The [`BuildError`] and the line it was recorded at.
fn refusal(r: ptxsmith::Result<PtxModule>) -> (BuildError, u32) {
    match r {
        Err(Error::Build {
            error,
            location: Some(l),
            ..
        }) => {
            assert_eq!(l.file(), file!(), "the location is the caller's file");
            (error, l.line())
        }
        other => panic!("expected a build error, got {other:?}"),
    }
}

#[test]
fn a_register_of_another_builder_is_refused_naming_both_kernels() {
    // (1) An index the second builder never declared: printed, it would be
    // an undeclared `%f4`.
    let mut a = KernelBuilder::new("first", Sm::Sm80);
    let regs: Vec<Reg<F32>> = (0..5).map(|i| a.mov(i as f32)).collect();
    let foreign = regs[4];
    let mut b = KernelBuilder::new("second", Sm::Sm80);
    let o = b.params::<OutArgs>();
    let line = line!() + 1;
    let y = b.fadd(Rn, foreign, 1.0f32);
    b.st_global(o.out, 0, y);
    let (e, at) = refusal(b.finish());
    assert_eq!(
        e,
        BuildError::ForeignRegister {
            register: "%f4".into(),
            owner_kernel: "first".into(),
            this_kernel: "second".into()
        }
    );
    assert_eq!(at, line);

    // (2) An index that exists in the second builder: printed, it would
    // silently alias the second builder's own `%f0` (2.0 stored where
    // 20.0 was meant).
    let mut a = KernelBuilder::new("first", Sm::Sm80);
    let twenty = a.mov(20.0f32);
    let mut b = KernelBuilder::new("second", Sm::Sm80);
    let o = b.params::<OutArgs>();
    let _two = b.mov(2.0f32);
    let line = line!() + 1;
    b.st_global(o.out, 0, twenty);
    let (e, at) = refusal(b.finish());
    assert_eq!(
        e,
        BuildError::ForeignRegister {
            register: "%f0".into(),
            owner_kernel: "first".into(),
            this_kernel: "second".into()
        }
    );
    assert_eq!(at, line);
    assert!(a.finish().is_ok(), "the owner itself is unaffected");
}

#[test]
fn foreign_predicates_pointers_arrays_and_labels_are_refused() {
    let mut a = KernelBuilder::new("owner", Sm::Sm80);
    let pa: GlobalPtr<F32> = a.params::<OutArgs>().out;
    let p: Reg<Pred> = a.setp(ptxsmith::dsl::Cmp::Eq, 1u32, 1u32);
    let arr = a.shared_array::<U32>("s", 4, 4);
    let l: Label = a.label();

    let foreign = |e: &BuildError| {
        matches!(e,
            BuildError::ForeignRegister { owner_kernel, this_kernel, .. }
            | BuildError::ForeignSharedArray { owner_kernel, this_kernel, .. }
            | BuildError::ForeignLabel { owner_kernel, this_kernel }
            if owner_kernel == "owner" && this_kernel == "user")
    };
    type Misuse = Box<dyn Fn(&mut KernelBuilder)>;
    let arr2 = arr.clone();
    let cases: Vec<(&str, Misuse)> = vec![
        ("predicate", Box::new(move |b| b.if_(p, |_| {}))),
        ("guard", Box::new(move |b| b.guarded(p, |b| b.bar_sync()))),
        ("pointer", Box::new(move |b| b.st_global(pa, 0, 1.0f32))),
        (
            "array",
            Box::new(move |b| {
                let _ = b.ld_shared_at(&arr2, 0);
            }),
        ),
        ("label", Box::new(move |b| b.bra(l))),
    ];
    for (what, misuse) in cases {
        let mut b = KernelBuilder::new("user", Sm::Sm80);
        let _ = b.mov(0u32);
        misuse(&mut b);
        let (e, _) = refusal(b.finish());
        assert!(foreign(&e), "{what}: {e:?}");
    }
    let _ = arr;
}

#[test]
fn a_foreign_register_of_a_finished_builder_still_is_refused() {
    let mut a = KernelBuilder::new("gone", Sm::Sm80);
    let r = a.mov(1u32);
    let _ = a.finish().unwrap();
    let mut b = KernelBuilder::new("here", Sm::Sm80);
    let _ = b.add(r, 1u32);
    match refusal(b.finish()).0 {
        BuildError::ForeignRegister {
            owner_kernel,
            this_kernel,
            ..
        } => {
            assert!(owner_kernel.starts_with('#'), "{owner_kernel}");
            assert_eq!(this_kernel, "here");
        }
        e => panic!("{e:?}"),
    }
}

/// `sum = 1 + 2 + 3 + 4` over a `for_range`, written to `out[0]`.
fn sum_kernel(carry: &str) -> ptxsmith::Result<PtxModule> {
    let mut b = KernelBuilder::new("sum", Sm::Sm80);
    b.maxntid(1, 1, 1);
    let o = b.params::<OutArgs>();
    match carry {
        // The silent pattern of issue 32: the closure rebinds `acc`, so the
        // loop adds each `i` to the 0 from before the loop.
        "rebind" => {
            let mut acc = b.mov(0.0f32);
            b.for_range(1u32, 5u32, 1u32, |b, i| {
                let x = b.u32_to_f32(Rn, i);
                acc = b.fadd(Rn, acc, x);
            });
            b.st_global(o.out, 0, acc);
        }
        "var" => {
            let acc: Var<F32> = b.var(0.0f32);
            b.for_range(1u32, 5u32, 1u32, |b, i| {
                let x = b.u32_to_f32(Rn, i);
                let s = b.fadd(Rn, &acc, x);
                b.set(&acc, s);
            });
            let total = b.get(&acc);
            b.st_global(o.out, 0, total);
        }
        "assign" => {
            let acc = b.mov(0.0f32);
            b.for_range(1u32, 5u32, 1u32, |b, i| {
                let x = b.u32_to_f32(Rn, i);
                let s = b.fadd(Rn, acc, x);
                b.assign(acc, s);
            });
            b.st_global(o.out, 0, acc);
        }
        _ => unreachable!(),
    }
    b.finish()
}

fn run(m: &PtxModule) -> f32 {
    let prog = Program::parse(&m.ptx).unwrap();
    let mut sim = Sim::new(m.sm);
    let out = sim.alloc(4).unwrap();
    sim.write(out, &[0; 4]).unwrap();
    sim.launch_program(
        &prog,
        &m.kernel,
        LaunchConfig::linear(1, 1),
        &[ArgValue::Ptr(out)],
    )
    .unwrap();
    let mut bytes = [0u8; 4];
    sim.read(out, &mut bytes).unwrap();
    f32::from_le_bytes(bytes)
}

#[test]
fn a_loop_value_read_after_its_loop_is_refused_and_var_carries_it() {
    let (e, at) = refusal(sum_kernel("rebind"));
    match e {
        BuildError::LoopValueEscapes { register, loop_at } => {
            assert_eq!(register, "%f2", "the last fadd's register");
            assert_eq!(loop_at.file(), file!(), "the loop's own location");
        }
        e => panic!("{e:?}"),
    }
    // Refused at the read after the loop (the `st_global`).
    let src = include_str!("dsl_builder_errors.rs");
    let line = src.lines().nth(at as usize - 1).unwrap();
    assert!(line.contains("b.st_global(o.out, 0, acc);"), "{line}");

    assert_eq!(run(&sum_kernel("var").unwrap()), 10.0);
    assert_eq!(run(&sum_kernel("assign").unwrap()), 10.0);
    // Var and assign are the same code.
    let (v, a) = (sum_kernel("var").unwrap(), sum_kernel("assign").unwrap());
    assert_eq!(v.ptx, a.ptx);
}

#[test]
fn values_used_inside_the_loop_body_and_nested_loops_are_fine() {
    let mut b = KernelBuilder::new("nested", Sm::Sm80);
    let o = b.params::<OutArgs>();
    let acc = b.var(0.0f32);
    b.for_range(0u32, 3u32, 1u32, |b, i| {
        let xi = b.u32_to_f32(Rn, i);
        b.for_range(0u32, 2u32, 1u32, |b, j| {
            // `xi` was defined in the enclosing, still open, loop body.
            let xj = b.u32_to_f32(Rn, j);
            let t = b.fadd(Rn, xi, xj);
            let s = b.fadd(Rn, &acc, t);
            b.set(&acc, s);
        });
        // A value of this iteration, read in this iteration.
        let again = b.fadd(Rn, xi, 0.0f32);
        let s = b.fadd(Rn, &acc, again);
        b.set(&acc, s);
    });
    b.st_global(o.out, 0, &acc);
    // sum over i<3, j<2 of (i + j) = 9, plus sum of i = 3.
    assert_eq!(run(&b.finish().unwrap()), 12.0);

    // A value of an inner loop read after it, inside the outer one.
    let mut b = KernelBuilder::new("inner", Sm::Sm80);
    let o = b.params::<OutArgs>();
    b.for_range(0u32, 3u32, 1u32, |b, _| {
        let mut last = b.mov(0.0f32);
        b.for_range(0u32, 2u32, 1u32, |b, j| last = b.u32_to_f32(Rn, j));
        b.st_global(o.out, 0, last);
    });
    assert!(matches!(
        refusal(b.finish()).0,
        BuildError::LoopValueEscapes { .. }
    ));

    // `while_`'s body counts as a loop body too.
    let mut b = KernelBuilder::new("w", Sm::Sm80);
    let o = b.params::<OutArgs>();
    let i = b.var(0u32);
    let mut seen = b.mov(0.0f32);
    b.while_(
        |b| b.setp(ptxsmith::dsl::Cmp::Lt, &i, 3u32),
        |b| {
            seen = b.u32_to_f32(Rn, &i);
            let n = b.add(&i, 1u32);
            b.set(&i, n);
        },
    );
    b.st_global(o.out, 0, seen);
    assert!(matches!(
        refusal(b.finish()).0,
        BuildError::LoopValueEscapes { .. }
    ));
}

#[test]
fn a_deferred_error_names_the_callers_file_line_and_column() {
    let mut b = KernelBuilder::new("k", Sm::Sm80);
    let a = b.shared_array::<F32>("a", 4, 4);
    let line = line!() + 1;
    let _ = b.ld_shared_at(&a, 7);
    let e = b.finish().unwrap_err();
    let Error::Build {
        error,
        location: Some(l),
        ..
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!(
        error,
        &BuildError::SharedIndex {
            array: "a".into(),
            index: 7,
            len: 4
        }
    );
    assert_eq!((l.file(), l.line(), l.column()), (file!(), line, 15));
    assert_eq!(
        e.to_string(),
        format!(
            "kernel `k`: constant index 7 past shared array `a` of 4 (at {}:{line}:15)",
            file!()
        )
    );
}

#[test]
fn handles_stay_small_and_copy() {
    use std::mem::size_of;
    fn copy<T: Copy>() {}
    copy::<Reg<F32>>();
    copy::<Var<F32>>();
    copy::<GlobalPtr<F32>>();
    copy::<Label>();
    // index + builder id
    assert_eq!(size_of::<Reg<F32>>(), 8);
    assert_eq!(size_of::<Var<U32>>(), 8);
    assert_eq!(size_of::<GlobalPtr<F32>>(), 8);
    assert_eq!(size_of::<Label>(), 8);
    // The typed error keeps `Error` under clippy's `result_large_err` bound.
    assert!(size_of::<Error>() < 128, "{}", size_of::<Error>());
}
