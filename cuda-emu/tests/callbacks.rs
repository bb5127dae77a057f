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

/// `CU_STREAM_NON_BLOCKING`.
const NON_BLOCKING: u32 = 0x1;

/// What the host functions below see: a log of names, and the first word
/// of the device buffer as a host function read it.
struct Seen {
    log: std::sync::Mutex<Vec<&'static str>>,
    device_word: AtomicI32,
    /// The device buffer and a stream for the host function's own copy.
    buf: u64,
    copy_stream: CUstream,
    ctx: CUcontext,
    release: std::sync::Mutex<Option<mpsc::Receiver<()>>>,
    stream_seen: std::sync::atomic::AtomicUsize,
    status_seen: std::sync::atomic::AtomicU32,
}

unsafe extern "C" fn host_a(data: *mut std::ffi::c_void) {
    // SAFETY: `data` is the test's `Seen`, alive until it synchronised.
    let seen = unsafe { &*data.cast::<Seen>() };
    seen.log.lock().unwrap().push("a");
    // Driver calls from the host function (the driver forbids them, the
    // emulator allows them): bind the context (a host function's thread
    // has none current), read the buffer through another stream.
    // SAFETY: a handle value.
    assert_eq!(unsafe { cu::cuCtxSetCurrent(seen.ctx) }, CUDA_SUCCESS);
    let mut word = [0u32; 1];
    // SAFETY: `word` is written before the call returns (pageable).
    let rc = unsafe {
        cu::cuMemcpyDtoHAsync_v2(word.as_mut_ptr().cast(), seen.buf, 4, seen.copy_stream)
    };
    assert_eq!(rc, CUDA_SUCCESS);
    seen.device_word.store(word[0] as i32, Ordering::SeqCst);
}

unsafe extern "C" fn host_b(data: *mut std::ffi::c_void) {
    // SAFETY: as in `host_a`.
    let seen = unsafe { &*data.cast::<Seen>() };
    seen.log.lock().unwrap().push("b");
}

unsafe extern "C" fn host_wait(data: *mut std::ffi::c_void) {
    // SAFETY: as in `host_a`.
    let seen = unsafe { &*data.cast::<Seen>() };
    let rx = seen.release.lock().unwrap().take().unwrap();
    let _ = rx.recv_timeout(Duration::from_secs(30));
    seen.log.lock().unwrap().push("released");
}

unsafe extern "C" fn callback_c(
    stream: *mut std::ffi::c_void,
    status: CUresult,
    data: *mut std::ffi::c_void,
) {
    // SAFETY: as in `host_a`.
    let seen = unsafe { &*data.cast::<Seen>() };
    seen.stream_seen.store(stream as usize, Ordering::SeqCst);
    seen.status_seen.store(status, Ordering::SeqCst);
    seen.log.lock().unwrap().push("c");
}

fn seen(buf: u64, copy_stream: CUstream) -> Box<Seen> {
    let mut ctx = CUcontext::default();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cu::cuCtxGetCurrent(&mut ctx) });
    Box::new(Seen {
        ctx,
        log: std::sync::Mutex::new(Vec::new()),
        device_word: AtomicI32::new(-1),
        buf,
        copy_stream,
        release: std::sync::Mutex::new(None),
        stream_seen: 0.into(),
        status_seen: u32::MAX.into(),
    })
}

#[test]
fn host_functions_run_in_stream_order_and_may_call_the_driver() {
    within_deadline("host functions", || {
        let _c = TestCtx::new();
        let p = alloc(16);
        let s = stream(NON_BLOCKING);
        let s2 = stream(NON_BLOCKING);
        let seen = seen(p, s2);
        let data = (&*seen as *const Seen).cast_mut().cast();
        // SAFETY: `seen` outlives every host function (synchronised below).
        unsafe {
            ok(cu::cuMemsetD32Async(p, 1, 4, s));
            ok(cu::cuLaunchHostFunc(s, Some(host_a), data));
            ok(cu::cuMemsetD32Async(p, 2, 4, s));
            ok(cu::cuLaunchHostFunc(s, Some(host_b), data));
            ok(cu::cuStreamAddCallback(s, Some(callback_c), data, 0));
            // Nothing runs before a synchronisation.
            assert!(seen.log.lock().unwrap().is_empty());
        }
        ok(sync(s));
        assert_eq!(*seen.log.lock().unwrap(), ["a", "b", "c"]);
        // `a` ran after the first fill and before the second.
        assert_eq!(seen.device_word.load(Ordering::SeqCst), 1);
        assert_eq!(read_u32(p, 4), [2; 4]);
        assert_eq!(seen.stream_seen.load(Ordering::SeqCst), s.0 as usize);
        assert_eq!(seen.status_seen.load(Ordering::SeqCst), CUDA_SUCCESS);
    });
}

#[test]
fn a_running_host_function_holds_back_its_stream_not_the_caller() {
    within_deadline("a blocking host function", || {
        let _c = TestCtx::new();
        let s = stream(NON_BLOCKING);
        let seen = seen(0, s);
        let (release, rx) = mpsc::channel();
        *seen.release.lock().unwrap() = Some(rx);
        let data = (&*seen as *const Seen).cast_mut().cast();
        let e = event(0);
        // SAFETY: as above.
        unsafe {
            ok(cu::cuLaunchHostFunc(s, Some(host_wait), data));
            ok(cu::cuEventRecord(e, s));
            // First query: pending work; second: the host function starts
            // on its own thread and blocks, so the event is still not
            // complete (cudarc's `test_event_try_is_complete`).
            is(cu::cuEventQuery(e), CUDA_ERROR_NOT_READY);
            is(cu::cuEventQuery(e), CUDA_ERROR_NOT_READY);
            is(cu::cuStreamQuery(s), CUDA_ERROR_NOT_READY);
            is(cu::cuStreamQuery(s), CUDA_ERROR_NOT_READY);
            // The driver answers other calls meanwhile.
            let mut dev = -1;
            ok(cu::cuCtxGetDevice(&mut dev));
            assert!(seen.log.lock().unwrap().is_empty());
            release.send(()).unwrap();
            ok(cu::cuEventSynchronize(e));
            assert_eq!(*seen.log.lock().unwrap(), ["released"]);
            ok(cu::cuEventQuery(e));
            ok(cu::cuStreamQuery(s));
        }
    });
}

#[test]
fn host_function_refusals() {
    let _c = TestCtx::new();
    let s = stream(0);
    // SAFETY: no host function is queued by these calls.
    unsafe {
        is(
            cu::cuLaunchHostFunc(s, None, std::ptr::null_mut()),
            CUDA_ERROR_INVALID_VALUE,
        );
        is(
            cu::cuStreamAddCallback(s, None, std::ptr::null_mut(), 0),
            CUDA_ERROR_INVALID_VALUE,
        );
        is(
            cu::cuStreamAddCallback(s, Some(callback_c), std::ptr::null_mut(), 1),
            CUDA_ERROR_INVALID_VALUE,
        );
        ok(cu::cuStreamDestroy_v2(s));
        is(
            cu::cuLaunchHostFunc(s, Some(host_b), std::ptr::null_mut()),
            CUDA_ERROR_INVALID_HANDLE,
        );
    }
}
