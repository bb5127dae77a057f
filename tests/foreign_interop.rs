//! Foreign memory and streams (another stack's allocations and streams)
//! through the safe views: `ForeignSlice`, `ForeignSliceMut`,
//! `Stream::from_raw`. On the simulator always; on a GPU (or the driver
//! emulator) in the `device_*` tests, with plain driver allocations and
//! streams standing in for cudarc or PyTorch.

use std::sync::Arc;

use oxicuda_driver::context::Context as DriverContext;
use oxicuda_driver::device::Device;
use oxicuda_driver::primary_context::PrimaryContext;
use oxicuda_driver::stream::Stream as DriverStream;
use ptxsmith::runtime::{Context, Executor, ForeignSlice, ForeignSliceMut, RawStream, Stream};
use ptxsmith::testing::cuda_for_tests;
use ptxsmith::{Error, FOREIGN_CONTEXT, Sm, kernels::dot};

mod common;
use common::{foreign_alloc, foreign_get, foreign_put};

/// `rows × n` ones and `n` twos: every output is `2n`.
fn inputs(rows: usize, n: usize) -> (Vec<f32>, Vec<f32>) {
    (vec![1.0; rows * n], vec![2.0; n])
}

/// A foreign view one element short of what the shape needs is refused
/// with `InvalidArgument` naming it, and nothing is queued.
fn wrong_length_is_refused(ctx: &Context) {
    let (rows, n) = (4, 3);
    let (x, y) = inputs(rows, n);
    // Foreign allocations of the right sizes, views of the wrong length.
    let (px, py, po) = (
        foreign_put(ctx, &x),
        foreign_put(ctx, &y),
        foreign_alloc(ctx, rows * 4),
    );
    // a stream of its own: on a GPU the context (and its default stream)
    // is shared by the tests running beside this one, whose copies would
    // show in the default stream's traffic
    let st = ctx.new_stream().unwrap();
    // SAFETY: live foreign allocations at least as long as the views.
    let (vx, vy, mut vo) = unsafe {
        (
            ForeignSlice::<f32>::from_raw_parts(ctx, px, rows * n - 1).unwrap(),
            ForeignSlice::<f32>::from_raw_parts(ctx, py, n).unwrap(),
            ForeignSliceMut::<f32>::from_raw_parts(ctx, po, rows).unwrap(),
        )
    };
    let before = st.traffic();
    let e = dot::dot_rows_dev(&st, dot::Shape { rows, n }, &vx, &vy, &mut vo).unwrap_err();
    match &e {
        Error::InvalidArgument(a) => {
            assert!(a.contains("x has 11 elements"), "{e}");
        }
        e => panic!("expected InvalidArgument, got {e:?}"),
    }
    assert_eq!(st.traffic(), before, "something was queued");
    // The right length runs, bit for bit.
    // SAFETY: as above.
    let vx = unsafe { ForeignSlice::<f32>::from_raw_parts(ctx, px, rows * n).unwrap() };
    dot::dot_rows_dev(&st, dot::Shape { rows, n }, &vx, &vy, &mut vo).unwrap();
    st.synchronize().unwrap();
    assert_eq!(foreign_get::<f32>(ctx, po, rows), vec![6.0; rows]);
}

#[test]
fn foreign_view_of_the_wrong_length_is_refused_without_a_launch() {
    wrong_length_is_refused(&Context::sim(Sm::Sm80));
}

#[test]
fn device_foreign_view_of_the_wrong_length_is_refused_without_a_launch() {
    let Some(ctx) = cuda_for_tests() else { return };
    wrong_length_is_refused(&ctx);
    // On a GPU the driver also knows the allocation's size: a view longer
    // than its allocation is refused when it is made.
    let p = foreign_alloc(&ctx, 64);
    // SAFETY: the constructor refuses before anything uses the view.
    let e = unsafe { ForeignSlice::<f32>::from_raw_parts(&ctx, p, 17) }.unwrap_err();
    match &e {
        Error::InvalidArgument(a) => {
            assert_eq!(a.what, "foreign view");
            assert!(a.contains("runs past its allocation"), "{e}");
        }
        e => panic!("expected InvalidArgument, got {e:?}"),
    }
    // A misaligned address is refused on any backend.
    // SAFETY: as above.
    let e = unsafe { ForeignSlice::<f32>::from_raw_parts(&ctx, p + 2, 4) }.unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(a) if a.what == "addr"),
        "{e}"
    );
}

/// Host and device copies and fills through foreign views, and a view
/// refused by another context.
fn views_in_copies(ctx: &Context) {
    let p = foreign_put(ctx, &[1u32, 2, 3, 4]);
    let st = ctx.default_stream();
    // SAFETY: 16 live bytes.
    let mut v = unsafe { ForeignSliceMut::<u32>::from_raw_parts(ctx, p, 4).unwrap() };
    assert_eq!(st.to_vec(&v).unwrap(), [1, 2, 3, 4]);
    st.copy_from_host(&mut v, &[5, 6, 7, 8]).unwrap();
    let mut own = ctx.alloc::<u32>(4).unwrap();
    st.copy(&mut own, &v).unwrap();
    st.zero(&mut v).unwrap();
    assert_eq!(st.to_vec(&own).unwrap(), [5, 6, 7, 8]);
    // The foreign stack reads after ptxsmith's queued work has run.
    ctx.synchronize().unwrap();
    assert_eq!(foreign_get::<u32>(ctx, p, 4), [0; 4]);
    // A view of another context is refused like a buffer of it.
    let other = Context::sim(Sm::Sm80);
    let e = other.default_stream().to_vec(&v).unwrap_err();
    assert!(matches!(e, Error::WrongContext { .. }), "{e}");
}

#[test]
fn foreign_views_work_like_buffers_in_copies() {
    views_in_copies(&Context::sim(Sm::Sm80));
}

#[test]
fn device_foreign_views_work_like_buffers_in_copies() {
    let Some(ctx) = cuda_for_tests() else { return };
    views_in_copies(&ctx);
}

/// The primary context of device 0 as oxicuda sees it: "another stack"
/// on the context ptxsmith uses.
fn driver_primary() -> Arc<DriverContext> {
    let dev = Device::get(0).unwrap();
    let pc = PrimaryContext::retain(&dev).unwrap();
    let raw = pc.raw();
    std::mem::forget(pc);
    // SAFETY: the primary context stays retained (forgotten above) for the
    // rest of the process.
    Arc::new(unsafe { DriverContext::from_raw_borrowed(raw, dev) })
}

#[test]
fn device_memory_and_streams_of_another_context_are_refused() {
    let Some(ctx) = cuda_for_tests() else { return };
    // A context ptxsmith does not use, with memory and a stream of its own.
    let dev = Device::get(0).unwrap();
    let other = Arc::new(DriverContext::new(&dev).unwrap());
    other.set_current().unwrap();
    let theirs = oxicuda_memory::DeviceBuffer::<f32>::alloc(16).unwrap();
    let their_stream = DriverStream::new(&other).unwrap();
    // SAFETY: refused before use.
    let e = unsafe { ForeignSlice::<f32>::from_raw_parts(&ctx, theirs.as_device_ptr(), 16) }
        .unwrap_err();
    match e {
        Error::WrongContext { owner, used, .. } => {
            assert_eq!(owner, FOREIGN_CONTEXT);
            assert_eq!(used, ctx.id());
        }
        e => panic!("expected WrongContext, got {e:?}"),
    }
    // SAFETY: refused before use.
    let e =
        unsafe { Stream::from_raw(&ctx, RawStream::from_ptr(their_stream.raw().0)) }.unwrap_err();
    assert!(
        matches!(
            e,
            Error::WrongContext {
                owner: FOREIGN_CONTEXT,
                ..
            }
        ),
        "{e}"
    );
    other.set_current().unwrap();
    drop(their_stream);
    drop(theirs);
    ctx.make_current().unwrap();
}

/// Resident set size of this process in KiB (Linux), for the log.
fn rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `launches` tiny kernels queued on `st`, a stream another stack owns and
/// synchronises (`sync` every 1000 launches, never through ptxsmith); the
/// context's bookkeeping must stay bounded.
fn bookkeeping_stays_bounded(ctx: &Context, st: &Stream, launches: usize, sync: impl Fn()) {
    let (rows, n) = (1, 1);
    let x = ctx.upload(&[3.0f32]).unwrap();
    let y = ctx.upload(&[0.5f32]).unwrap();
    let mut out = ctx.alloc::<f32>(rows).unwrap();
    let (rss0, t0) = (rss_kib(), std::time::Instant::now());
    let mut most = 0;
    for i in 1..=launches {
        dot::dot_rows_dev(st, dot::Shape { rows, n }, &x, &y, &mut out).unwrap();
        if i % 1000 == 0 {
            sync();
            most = most.max(ctx.bookkeeping());
        }
    }
    sync();
    assert_eq!(ctx.default_stream().to_vec(&out).unwrap(), [1.5]);
    println!(
        "{launches} launches on a foreign stream in {:.2} s: bookkeeping at most {most} entries, RSS {:?} -> {:?} KiB",
        t0.elapsed().as_secs_f64(),
        rss0,
        rss_kib()
    );
    assert!(most <= 40, "bookkeeping grew to {most} entries");
}

#[test]
fn foreign_stream_bookkeeping_stays_bounded_on_sim() {
    let ctx = Context::sim(Sm::Sm80);
    let raw = ctx.with_sim(|sim| sim.create_stream().unwrap()).unwrap();
    // SAFETY: a stream of this simulator, never destroyed.
    let st = unsafe { Stream::from_raw(&ctx, raw).unwrap() };
    bookkeeping_stays_bounded(&ctx, &st, 5_000, || {});
}

#[test]
fn device_foreign_stream_bookkeeping_stays_bounded() {
    let Some(ctx) = cuda_for_tests() else { return };
    let primary = driver_primary();
    primary.set_current().unwrap();
    let theirs = DriverStream::new(&primary).unwrap();
    // SAFETY: a live stream of the primary context, dropped after `st`.
    let st = unsafe { Stream::from_raw(&ctx, RawStream::from_ptr(theirs.raw().0)).unwrap() };
    // Synchronised by the driver call only (cuStreamSynchronize through
    // oxicuda), never through ptxsmith.
    bookkeeping_stays_bounded(&ctx, &st, 100_000, || theirs.synchronize().unwrap());
    drop(st);
}
