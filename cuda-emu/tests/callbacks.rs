//! Never hang (issue 34): user callbacks run without the emulator's lock
//! held, so a callback may call the driver. Each call runs on a thread of
//! its own with a deadline: a deadlock fails the test instead of hanging.

use std::ffi::c_int;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use ptxsmith_cuda_emu::exports as cu;

mod common;
use common::*;

/// Run `f` on a new thread; fail if it does not finish within 60 s.
fn within_deadline<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{what} did not return within 60 s (a deadlock?)"))
}

/// Calls the callback saw, and the device `cuCtxGetDevice` gave inside it.
static CALLS: AtomicI32 = AtomicI32::new(0);
static DEVICE_SEEN: AtomicI32 = AtomicI32::new(-1);

/// An occupancy callback that calls the driver: 64 bytes of shared
/// memory per thread.
extern "C" fn smem_calling_the_driver(block: c_int) -> usize {
    let mut dev = -1;
    // SAFETY: a valid out-pointer.
    let rc = unsafe { cu::cuCtxGetDevice(&mut dev) };
    assert_eq!(rc, CUDA_SUCCESS);
    DEVICE_SEEN.store(dev, Ordering::SeqCst);
    CALLS.fetch_add(1, Ordering::SeqCst);
    block as usize * 64
}

#[test]
fn an_occupancy_callback_may_call_the_driver() {
    let (grid, block) = within_deadline("cuOccupancyMaxPotentialBlockSize", || {
        let _c = TestCtx::new();
        let f = emu_kernel("fill");
        let (mut grid, mut block) = (0, 0);
        // SAFETY: valid out-pointers; the callback is safe for any size.
        let rc = unsafe {
            cu::cuOccupancyMaxPotentialBlockSize(
                &mut grid,
                &mut block,
                f,
                Some(smem_calling_the_driver),
                0,
                0,
            )
        };
        is(rc, CUDA_SUCCESS);
        (grid, block)
    });
    assert!(CALLS.load(Ordering::SeqCst) > 0);
    assert_eq!(DEVICE_SEEN.load(Ordering::SeqCst), 0);
    assert!(block > 0 && block % 32 == 0 && grid > 0, "{grid} x {block}");
    // 64 B per thread: the shared memory per SM limits the block size
    // the answer can have with as many resident threads as possible.
    assert!(block as usize * 64 <= 232_448, "{block}");
}
