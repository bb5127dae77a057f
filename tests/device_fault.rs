//! A device-side fault on a GPU (skipped without one). This is its own test
//! binary because recovering resets the device's primary context, which
//! would pull the rug from under other GPU tests running in the same
//! process.
//!
//! The fault is reported once, by the synchronising call after it, naming
//! the kernel; the faulted context then answers `Error::DeviceLost`, and
//! so does `Context::cuda(0)` for the rest of the process (the CUDA driver
//! keeps the fault: the process must restart).

use ptxsmith::dsl::KernelBuilder;
use ptxsmith::dsl::params::{ArgValue, Ptr};
use ptxsmith::dsl::types::U32;
use ptxsmith::kernels::dot;
use ptxsmith::runtime::{Context, LaunchConfig};
use ptxsmith::testing::cuda_for_tests;
use ptxsmith::{Error, kernel_params};

kernel_params! {
    struct FaultArgs => FaultRegs {
        p: Ptr<U32>,
    }
}

#[test]
fn gpu_fault_is_reported_once_then_the_device_is_lost_for_the_process() {
    let Some(ctx) = cuda_for_tests() else { return };
    let mut b = KernelBuilder::new("ptxsmith_test_fault", ctx.sm());
    let p = b.params::<FaultArgs>();
    let i = b.global_id_x();
    let dst = b.offset(p.p, i);
    b.st_global(dst, 0, i);
    let module = b.finish().unwrap();
    let st = ctx.default_stream();
    // A null pointer passes the live-buffer check (null is allowed) and
    // stores through it fault on the device.
    st.launch(&module, LaunchConfig::linear(1, 32), &[ArgValue::Ptr(0)])
        .unwrap();
    let e = st.synchronize().unwrap_err();
    println!("fault as reported: {e}");
    assert!(
        matches!(&e, Error::Launch { kernel, .. } if kernel.contains("ptxsmith_test_fault")),
        "{e}"
    );
    // From now on the old context says it is lost, naming the fault.
    match ctx.upload(&[1f32]) {
        Err(Error::DeviceLost { ordinal: 0, fault }) => {
            assert!(fault.contains("ptxsmith_test_fault"), "{fault}")
        }
        other => panic!("expected DeviceLost, got {other:?}"),
    }
    assert!(ctx.lost().is_some());
    // The driver keeps the fault for the rest of the process: a context
    // for the device is refused with DeviceLost naming the fault and the
    // restart, and so is the slice API on the device (no host fallback).
    let restart = |e: &Error| {
        matches!(e, Error::DeviceLost { ordinal: 0, fault }
            if fault.contains("ptxsmith_test_fault") && fault.contains("must restart"))
    };
    match Context::cuda(0) {
        Err(e) => assert!(restart(&e), "{e}"),
        Ok(_) => panic!("a fresh context after a device fault: the driver recovered?"),
    }
    let (x, y) = (vec![1.5f32; 6], vec![2.0f32; 3]);
    let e = dot::dot_rows(
        ptxsmith::runtime::Backend::Cuda,
        dot::Shape { rows: 2, n: 3 },
        &x,
        &y,
    )
    .unwrap_err();
    assert!(restart(&e), "{e}");
    // Dropping the old context's buffers and streams is harmless.
    drop(ctx);
}
