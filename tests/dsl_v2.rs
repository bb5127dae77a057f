//! `v2` global loads and stores (issue 32): `ld_global_v2`,
//! `ld_global_nc_v2`, `st_global_v2` print the `.v2` forms, move values
//! bit-exactly on the simulator for every SM (4- and 8-byte elements: f32 and the bits of f64s), are
//! assembled by the pinned ptxas, refuse sub-word elements at build time,
//! and a misaligned address is the simulator's `Misaligned` finding.

use ptxsmith::dsl::params::{ArgValue, KernelParams, Ptr};
use ptxsmith::dsl::types::{Elem, F32, U16, U32, U64};
use ptxsmith::dsl::*;
use ptxsmith::nvtools::NvTools;
use ptxsmith::runtime::exec::LaunchConfig as SimLaunch;
use ptxsmith::runtime::{Context, LaunchConfig};
use ptxsmith::sim::{Program, Sim, SimError};
use ptxsmith::testing::{check_on_every_sm, special_f32s, special_f64s};
use ptxsmith::{Error, Sm, kernel_params};

kernel_params! {
    struct SwapArgs32 => SwapRegs32 { x: Ptr<F32>, y: Ptr<F32>, pairs: U32 }
}
kernel_params! {
    struct SwapArgs64 => SwapRegs64 { x: Ptr<U64>, y: Ptr<U64>, pairs: U32 }
}

/// `y[2i] = x[2i+1]` (read through `ld.global.nc.v2`) and `y[2i+1] =
/// x[2i]` (read again through the coherent `ld.global.v2`), stored with
/// one `st.global.v2`, for `i < pairs`. `k` is the constant element offset
/// of the loads (0; 1 makes them misaligned).
macro_rules! swap_kernel {
    ($name:ident, $args:ident) => {
        fn $name(sm: Sm, k: i32) -> ptxsmith::Result<PtxModule> {
            let mut b = KernelBuilder::new(stringify!($name), sm);
            let p = b.params::<$args>();
            let i = b.global_id_x();
            let inside = b.setp(Cmp::Lt, i, p.pairs);
            b.if_(inside, |b| {
                let e = b.shl(i, 1u32);
                let (xp, yp) = (b.offset(p.x, e), b.offset(p.y, e));
                let [_, hi] = b.ld_global_nc_v2(xp, k);
                let [lo, _] = b.ld_global_v2(xp, k);
                b.st_global_v2(yp, 0, [hi, lo]);
            });
            b.finish()
        }
    };
}
swap_kernel!(swap_f32, SwapArgs32);
swap_kernel!(swap_u64, SwapArgs64);

fn host_swap<T: Copy>(x: &[T]) -> Vec<T> {
    x.chunks(2).flat_map(|c| [c[1], c[0]]).collect()
}

fn even<T: Clone>(mut v: Vec<T>) -> Vec<T> {
    v.truncate(v.len() / 2 * 2);
    v
}

#[test]
fn v2_forms_are_printed() {
    let ptx = swap_f32(Sm::Sm80, 0).unwrap().ptx;
    for form in [
        "ld.global.nc.v2.f32 {",
        "ld.global.v2.f32 {",
        "st.global.v2.f32 [",
    ] {
        assert!(ptx.contains(form), "{form} missing:\n{ptx}");
    }
    let ptx = swap_u64(Sm::Sm80, 0).unwrap().ptx;
    assert!(ptx.contains("ld.global.nc.v2.u64 {"), "{ptx}");
    assert!(ptx.contains("st.global.v2.u64 ["), "{ptx}");
    // the constant element offset is scaled to bytes
    let ptx = swap_f32(Sm::Sm80, 1).unwrap().ptx;
    assert!(ptx.contains("+4];"), "{ptx}");
}

#[test]
fn v2_moves_values_bit_exactly_on_every_sm() {
    let x = even(special_f32s());
    let pairs = (x.len() / 2) as u32;
    let sweep = check_on_every_sm(
        |sm| swap_f32(sm, 0),
        |ctx: &Context, m| {
            let st = ctx.default_stream();
            let (xd, mut yd) = (st.upload(&x)?, ctx.alloc::<f32>(x.len())?);
            let args = SwapArgs32 {
                x: st.arg("x", &xd)?,
                y: st.arg_mut("y", &mut yd)?,
                pairs,
            };
            st.launch(
                m,
                LaunchConfig::linear(pairs.div_ceil(32), 32),
                &args.args(),
            )?;
            st.to_vec(&yd)
        },
        |_| host_swap(&x),
    )
    .unwrap();
    assert_eq!(sweep.passed.len(), Sm::ALL.len(), "{sweep}");

    let x: Vec<u64> = even(special_f64s()).iter().map(|v| v.to_bits()).collect();
    let pairs = (x.len() / 2) as u32;
    let sweep = check_on_every_sm(
        |sm| swap_u64(sm, 0),
        |ctx: &Context, m| {
            let st = ctx.default_stream();
            let (xd, mut yd) = (st.upload(&x)?, ctx.alloc::<u64>(x.len())?);
            let args = SwapArgs64 {
                x: st.arg("x", &xd)?,
                y: st.arg_mut("y", &mut yd)?,
                pairs,
            };
            st.launch(
                m,
                LaunchConfig::linear(pairs.div_ceil(32), 32),
                &args.args(),
            )?;
            st.to_vec(&yd)
        },
        |_| host_swap(&x),
    )
    .unwrap();
    assert_eq!(sweep.passed.len(), Sm::ALL.len(), "{sweep}");
}

/// A `v2` access is aligned to its whole size (8 bytes for f32, 16 for
/// u64): one element off is the simulator's `Misaligned` finding with that
/// size, not a silent split access.
#[test]
fn a_misaligned_v2_access_is_a_finding() {
    for (m, size) in [
        (swap_f32(Sm::Sm80, 1).unwrap(), 8u32),
        (swap_u64(Sm::Sm80, 1).unwrap(), 16),
    ] {
        let prog = Program::parse(&m.ptx).unwrap();
        let mut sim = Sim::new(Sm::Sm80);
        let x = sim.alloc_zeroed(256).unwrap();
        let y = sim.alloc_zeroed(256).unwrap();
        let e = sim
            .launch_program(
                &prog,
                &m.kernel,
                SimLaunch::linear(1, 1),
                &[ArgValue::Ptr(x), ArgValue::Ptr(y), ArgValue::U32(1)],
            )
            .unwrap_err();
        assert!(
            matches!(e, SimError::Misaligned { size: s, .. } if s == size),
            "{}: {e}",
            m.kernel
        );
        // aligned, the same launch runs
        let m0 = if size == 8 {
            swap_f32(Sm::Sm80, 0)
        } else {
            swap_u64(Sm::Sm80, 0)
        }
        .unwrap();
        let prog = Program::parse(&m0.ptx).unwrap();
        sim.launch_program(
            &prog,
            &m0.kernel,
            SimLaunch::linear(1, 1),
            &[ArgValue::Ptr(x), ArgValue::Ptr(y), ArgValue::U32(1)],
        )
        .unwrap();
    }
}

fn sub_word<E: Elem>(store: bool) -> Error {
    let mut b = KernelBuilder::new("k", Sm::Sm80);
    let p = b.params::<SwapArgs32>();
    let q = p.x.cast::<E>();
    if store {
        let v = b.ld_global(q, 0);
        b.st_global_v2(q, 0, [v, v]);
    } else {
        let _ = b.ld_global_v2(q, 0);
    }
    b.finish().unwrap_err()
}

#[test]
fn sub_word_v2_is_refused() {
    for (store, access) in [(false, "loads"), (true, "stores")] {
        let e = sub_word::<U16>(store);
        assert!(
            matches!(&e, Error::Build { error: BuildError::SubWordVector { access: a }, .. } if *a == access),
            "{e}"
        );
    }
    // 4-byte elements are fine
    let mut b = KernelBuilder::new("k", Sm::Sm80);
    let p = b.params::<SwapArgs32>();
    let _ = b.ld_global_v2(p.x.cast::<U32>(), 0);
    b.finish().unwrap();
}

#[test]
fn ptxas_assembles_v2_on_every_target() {
    let Some(tools) = NvTools::for_tests() else {
        return;
    };
    for sm in Sm::ALL {
        for m in [swap_f32(sm, 0).unwrap(), swap_u64(sm, 0).unwrap()] {
            if let Err(e) = tools.assemble(&m.ptx, sm) {
                panic!("{} on {sm} rejected by ptxas: {e}\n{}", m.kernel, m.ptx);
            }
        }
    }
}

/// The `v2` kernels on a CUDA device (a GPU, or the driver emulator in
/// CI's emulator pass).
#[test]
fn gpu_v2_moves_values_bit_exactly() {
    let Some(ctx) = ptxsmith::testing::cuda_for_tests() else {
        return;
    };
    let st = ctx.default_stream();
    let x = even(special_f32s());
    let pairs = (x.len() / 2) as u32;
    let (xd, mut yd) = (st.upload(&x).unwrap(), ctx.alloc::<f32>(x.len()).unwrap());
    let args = SwapArgs32 {
        x: st.arg("x", &xd).unwrap(),
        y: st.arg_mut("y", &mut yd).unwrap(),
        pairs,
    };
    let m = swap_f32(ctx.sm(), 0).unwrap();
    st.launch(
        &m,
        LaunchConfig::linear(pairs.div_ceil(32), 32),
        &args.args(),
    )
    .unwrap();
    let got: Vec<u32> = st
        .to_vec(&yd)
        .unwrap()
        .iter()
        .map(|v| v.to_bits())
        .collect();
    let want: Vec<u32> = host_swap(&x).iter().map(|v| v.to_bits()).collect();
    assert_eq!(got, want);
}
