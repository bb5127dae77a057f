//! ptxsmith's own runtime on two emulated devices
//! (`PTXSMITH_EMU_DEVICES=sm_90,sm_80`, set for the child process the test
//! re-runs itself as): each `Context::cuda(ordinal)` opens its device's
//! primary context, builds kernels for its SM, and buffers of one device
//! are refused on the other (`Error::WrongContext`) before the driver sees
//! them.

use ptxsmith::Error;
use ptxsmith::Sm;
use ptxsmith::kernels::dot;
use ptxsmith::runtime::{Context, device_count};

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
    let want = dot::dot_rows_host(&x, &y, rows, n);
    let ctxs = [Context::cuda(0).unwrap(), Context::cuda(1).unwrap()];
    assert_eq!([ctxs[0].sm(), ctxs[1].sm()], [Sm::Sm90, Sm::Sm80]);
    for ctx in &ctxs {
        let st = ctx.default_stream();
        let got = dot::launch::run_on(&st, &x, &y, rows, n).unwrap();
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
}
