//! ptxsmith's own runtime on two emulated devices
//! (`PTXSMITH_EMU_DEVICES=sm_90,sm_80`, set for the child process the test
//! re-runs itself as): each `Context::cuda(ordinal)` opens its device's
//! primary context, builds kernels for its SM, and buffers of one device
//! are refused on the other (`Error::WrongContext`) before the driver sees
//! them, as buffers or as foreign views; `Backend::CudaDevice(n)` runs the
//! slice API on device `n`.

use ptxsmith::Error;
use ptxsmith::Sm;
use ptxsmith::kernels::dot;
use ptxsmith::runtime::{Backend, Context, ForeignSlice, Ran, device_count};

mod common;

#[test]
fn the_runtime_runs_on_each_of_two_devices() {
    if !common::in_emulator_process_with(
        "the_runtime_runs_on_each_of_two_devices",
        &[("PTXSMITH_EMU_DEVICES", "sm_90,sm_80")],
    ) {
        return;
    }
    assert_eq!(device_count().unwrap(), 2);
    let (rows, n) = (5, 70);
    let x: Vec<f32> = (0..rows * n).map(|i| (i as f32 * 0.01).sin()).collect();
    let y: Vec<f32> = (0..n).map(|i| (i as f32 * 0.02).cos()).collect();
    let want = dot::host::dot_rows(&x, &y, rows, n);
    let ctxs = [Context::cuda(0).unwrap(), Context::cuda(1).unwrap()];
    assert_eq!([ctxs[0].sm(), ctxs[1].sm()], [Sm::Sm90, Sm::Sm80]);
    for ctx in &ctxs {
        let st = ctx.default_stream();
        let got = dot::dot_rows_on(&st, dot::Shape { rows, n }, &x, &y).unwrap();
        assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "{:?}",
            ctx.info()
        );
    }
    let on0 = ctxs[0].upload(&y).unwrap();
    let e = ctxs[1].default_stream().to_vec(&on0).unwrap_err();
    assert!(matches!(e, Error::WrongContext { .. }), "{e}");
    // Device 0's memory seen as foreign memory by device 1's context: the
    // driver says it belongs to another context.
    // SAFETY: refused before it is used.
    let e =
        unsafe { ForeignSlice::<f32>::from_raw_parts(&ctxs[1], on0.device_ptr(), n) }.unwrap_err();
    assert!(
        matches!(
            e,
            Error::WrongContext {
                owner: ptxsmith::FOREIGN_CONTEXT,
                ..
            }
        ),
        "{e}"
    );
    // The slice API names a device.
    let shape = dot::Shape { rows, n };
    for (ordinal, ctx) in ctxs.iter().enumerate() {
        let before = ctx.traffic().launches;
        let (got, ran) = dot::dot_rows(Backend::CudaDevice(ordinal as u32), shape, &x, &y).unwrap();
        assert_eq!(ran, Ran::Cuda);
        assert_eq!(ctx.traffic().launches, before + 1, "device {ordinal}");
        assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }
    let e = dot::dot_rows(Backend::CudaDevice(2), shape, &x, &y).unwrap_err();
    assert!(matches!(e, Error::NoDevice(_)), "{e}");
}
