//! Buffers ptxsmith allocates for a raw-pointer call (the route's
//! workspace) are dropped when the call returns, while the kernels using
//! them are still queued on the caller's stream. Their memory must not be
//! freed before that stream's work has run, even when ptxsmith's own
//! default stream synchronises meanwhile (the driver's `cuMemFree` does not
//! promise to wait; the driver emulator never does, so a premature free is
//! a fault there). Its own test binary: the context must have no other
//! stream for the default stream's synchronisation to free memory.

use ptxsmith::kernels::score::{self, launch as score_l};
use ptxsmith::runtime::RawStream;
use ptxsmith::testing::cuda_for_tests;

mod common;
use common::{bits, foreign_alloc, foreign_get, foreign_put};

#[test]
fn gpu_raw_call_workspace_outlives_a_default_stream_synchronisation() {
    let Some(ctx) = cuda_for_tests() else { return };
    let (rows, k, p, s) = (9, 700, 16, 3);
    let x: Vec<f32> = (0..rows * p).map(|i| (i as f32 * 0.37).sin()).collect();
    let d: Vec<f32> = (0..k * p).map(|i| (i as f32 * 0.11).cos()).collect();
    let (px, pd, out) = (
        foreign_put(&ctx, &x),
        foreign_put(&ctx, &d),
        foreign_alloc(&ctx, rows * s * 8),
    );
    // SAFETY: driver allocations of rows·P and K·P floats and rows·s·8
    // bytes in the primary context, alive until the end; the legacy
    // stream is synchronised by `ctx.synchronize()` below.
    unsafe {
        score_l::route_top_s_raw(
            &ptxsmith::runtime::Stream::from_raw(&ctx, RawStream::NULL).unwrap(),
            score::Route {
                shape: score::ScoreShape { rows, k, p },
                s,
            },
            None,
            px,
            pd,
            out,
        )
    }
    .unwrap();
    // ptxsmith's default stream synchronises (an upload waits for its
    // copy): the dropped workspace is still in use on the legacy stream.
    let other = ctx.upload(&[1f32, 2.0, 3.0]).unwrap();
    assert_eq!(other.to_vec().unwrap(), vec![1.0, 2.0, 3.0]);
    ctx.synchronize().unwrap();
    let pairs = foreign_get::<u32>(&ctx, out, rows * s * 2);
    let want = score::host::route_top_s(&x, &d, rows, k, p, s).unwrap();
    let atoms: Vec<u32> = pairs.chunks(2).map(|c| c[0]).collect();
    let scores: Vec<u32> = pairs.chunks(2).map(|c| c[1]).collect();
    assert_eq!(atoms, want.atoms);
    assert_eq!(scores, bits(&want.scores));
}
