//! `Stream::timed`: device time from CUDA events on a GPU (or the driver
//! emulator), none on the simulator; the timed work's results and errors
//! come through unchanged.

use ptxsmith::kernels::dot;
use ptxsmith::runtime::Context;
use ptxsmith::testing::cuda_for_tests;

/// 64 row dot products of length 100 on `ctx`, timed; the result checked.
fn timed_dots(ctx: &Context) -> Option<std::time::Duration> {
    let (rows, n) = (64, 100);
    let s = ctx.new_stream().unwrap();
    let x = s.upload(&vec![0.5f32; rows * n]).unwrap();
    let y = s.upload(&vec![2.0f32; n]).unwrap();
    let mut out = ctx.alloc::<f32>(rows).unwrap();
    let ((), time) = s
        .timed(|s| {
            for _ in 0..4 {
                dot::dot_rows_dev(s, dot::Shape { rows, n }, &x, &y, &mut out)?;
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(s.to_vec(&out).unwrap(), vec![100.0; rows]);
    time
}

#[test]
fn the_simulator_has_no_device_clock_and_errors_come_through() {
    let ctx = Context::sim(ptxsmith::Sm::Sm80);
    assert_eq!(timed_dots(&ctx), None);
    // the work's own error, not a timing error
    let s = ctx.default_stream();
    let x = s.upload(&[1.0f32; 3]).unwrap();
    let mut out = ctx.alloc::<f32>(1).unwrap();
    let e = s
        .timed(|s| dot::dot_rows_dev(s, dot::Shape { rows: 1, n: 4 }, &x, &x, &mut out))
        .unwrap_err();
    assert!(matches!(e, ptxsmith::Error::InvalidArgument(_)), "{e}");
    // the stream still works and can be timed again
    assert_eq!(timed_dots(&ctx), None);
}

#[test]
fn gpu_timed_work_has_a_device_time() {
    let Some(ctx) = cuda_for_tests() else { return };
    let t = timed_dots(&ctx).expect("a GPU stream has a device clock");
    assert!(t.as_secs_f64() < 60.0, "{t:?}");
    // twice on the same stream: the first timing was closed
    let t2 = timed_dots(&ctx).expect("timed again");
    assert!(t2.as_secs_f64() < 60.0, "{t2:?}");
}
