//! The configuration from the environment: two devices
//! (`PTXSMITH_EMU_DEVICES=sm_90,sm_80`) with their own attributes and
//! address ranges, an older driver (`PTXSMITH_EMU_DRIVER_VERSION=12.4`),
//! 64 MiB per device, a small instruction budget and a findings log file.
//! Every test calls `setup()`, which sets the variables once, before the
//! driver reads them at `cuInit`.

use std::path::PathBuf;
use std::sync::Once;

use ptxsmith_cuda_emu::exports as cu;

mod common;
use common::*;

fn log_path() -> PathBuf {
    std::env::temp_dir().join(format!(
        "ptxsmith-emu-config-test-{}.log",
        std::process::id()
    ))
}

fn setup() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: set once, before any test reads the environment or
        // initialises the driver (every test waits on this `Once`), and no
        // C code of this process reads the environment concurrently.
        unsafe {
            std::env::set_var("PTXSMITH_EMU_DEVICES", "sm_90, sm_80");
            std::env::set_var("PTXSMITH_EMU_DRIVER_VERSION", "12.4");
            std::env::set_var("PTXSMITH_EMU_MEMORY_MIB", "64");
            std::env::set_var("PTXSMITH_EMU_MAX_INSTRUCTIONS", "100000");
            std::env::set_var("PTXSMITH_EMU_LOG", log_path());
        }
        init();
    });
}

fn attr(dev: i32, a: i32) -> i32 {
    let mut v = 0;
    // SAFETY: out-pointer.
    ok(unsafe { cu::cuDeviceGetAttribute(&mut v, a, dev) });
    v
}

#[test]
fn two_devices_with_their_own_attributes() {
    setup();
    let mut n = 0;
    // SAFETY: out-pointer.
    ok(unsafe { cu::cuDeviceGetCount(&mut n) });
    assert_eq!(n, 2);
    assert_eq!((attr(0, 75), attr(0, 76)), (9, 0));
    assert_eq!((attr(1, 75), attr(1, 76)), (8, 0));
    assert_eq!(attr(0, 97), 232_448);
    assert_eq!(attr(1, 97), 166_912);
    let mut bytes = 0;
    // SAFETY: out-pointer.
    ok(unsafe { cu::cuDeviceTotalMem_v2(&mut bytes, 1) });
    assert_eq!(bytes, 64 << 20);
    let mut name = [0i8; 64];
    // SAFETY: a 64-byte buffer.
    ok(unsafe { cu::cuDeviceGetName(name.as_mut_ptr(), 64, 1) });
    // SAFETY: NUL-terminated by the call.
    let name = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    assert!(name.starts_with("ptxsmith-emu sm_80"), "{name}");
    let mut d = 0;
    // SAFETY: out-pointer; there is no device 2.
    is(
        unsafe { cu::cuDeviceGet(&mut d, 2) },
        CUDA_ERROR_INVALID_DEVICE,
    );
    let mut v = 0;
    // SAFETY: out-pointer.
    ok(unsafe { cu::cuDriverGetVersion(&mut v) });
    assert_eq!(v, 12040);
}

#[test]
fn each_device_has_its_own_address_range() {
    setup();
    let a = TestCtx::on(0);
    let pa = alloc(64);
    let b = TestCtx::on(1);
    let pb = alloc(64);
    assert_ne!(
        pa >> 43,
        pb >> 43,
        "{pa:#x} and {pb:#x} share a device range"
    );
    is(htod(pa, &[0u8; 4]), CUDA_ERROR_INVALID_VALUE);
    let mut dev = -1;
    // SAFETY: out-pointer.
    ok(unsafe { cu::cuCtxGetDevice(&mut dev) });
    assert_eq!(dev, 1);
    // Device 0's pointer in a kernel on device 1 faults.
    ok(launch(
        emu_kernel("store_one"),
        1,
        1,
        0,
        CUstream::default(),
        &[Arg::U64(pa)],
    ));
    is(ctx_sync(), CUDA_ERROR_ILLEGAL_ADDRESS);
    drop(b);
    a.bind();
    ok(htod(pa, &[1u8; 4]));
}

#[test]
fn the_older_driver_and_device_limit_what_loads() {
    setup();
    let _c = TestCtx::on(1);
    // Driver 12.4: PTX ISA 8.4 at most.
    let (r, _) = load_logged(&with_header(EMU_PTX, "8.5", "sm_80"));
    is(r.unwrap_err().0, CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
    load(&with_header(EMU_PTX, "8.4", "sm_80"));
    // Device 1 is sm_80: sm_90 code does not run on it.
    let (r, _) = load_logged(&with_header(EMU_PTX, "7.8", "sm_90"));
    is(r.unwrap_err().0, CUDA_ERROR_INVALID_PTX);
}

#[test]
fn device_memory_is_limited_to_the_configured_size() {
    setup();
    let _c = TestCtx::on(0);
    let mut p = 0;
    // SAFETY: out-pointer.
    is(
        unsafe { cu::cuMemAlloc_v2(&mut p, (64 << 20) + 1) },
        CUDA_ERROR_OUT_OF_MEMORY,
    );
    let big = alloc(32 << 20);
    let (mut free, mut total) = (0, 0);
    // SAFETY: out-pointers.
    ok(unsafe { cu::cuMemGetInfo_v2(&mut free, &mut total) });
    assert_eq!(total, 64 << 20);
    assert!(free <= 32 << 20, "{free}");
    // SAFETY: a live allocation, freed once.
    ok(unsafe { cu::cuMemFree_v2(big) });
}

#[test]
fn a_kernel_that_never_finishes_is_a_launch_timeout_and_is_logged() {
    setup();
    let _c = TestCtx::on(0);
    ok(launch(
        emu_kernel("spin"),
        1,
        1,
        0,
        CUstream::default(),
        &[],
    ));
    is(ctx_sync(), CUDA_ERROR_LAUNCH_TIMEOUT);
    let log = std::fs::read_to_string(log_path()).unwrap();
    assert!(
        log.contains("CUDA_ERROR_LAUNCH_TIMEOUT") && log.contains("kernel `spin`"),
        "{log}"
    );
}

#[test]
fn peer_copies_and_cross_device_waits() {
    setup();
    let mut can = -1;
    // SAFETY: out-pointer.
    ok(unsafe { cu::cuDeviceCanAccessPeer(&mut can, 0, 1) });
    assert_eq!(can, 0);
    let a = TestCtx::on(0);
    let pa = alloc(16);
    let sa = stream(0x1);
    ok(launch(
        emu_kernel("fill"),
        1,
        4,
        0,
        sa,
        &[Arg::U64(pa), Arg::U32(4), Arg::U32(20)],
    ));
    let e = event(0x2);
    // SAFETY: handle values.
    ok(unsafe { cu::cuEventRecord(e, sa) });
    let b = TestCtx::on(1);
    // SAFETY: handle values; refused (no peer access between devices).
    is(
        unsafe { cu::cuCtxEnablePeerAccess(a.0, 0) },
        CUDA_ERROR_PEER_ACCESS_UNSUPPORTED,
    );
    let pb = alloc(16);
    ok(htod(pb, &[0u32; 4]));
    // The synchronous copy's transfer is queued on b's legacy stream, which
    // a non-blocking stream is not ordered with: let it land first, or it
    // would land after the peer copy below (as it may on a GPU).
    ok(ctx_sync());
    let sb = stream(0x1);
    // Device 1's stream waits for device 0's event; then a peer copy.
    // SAFETY: handle values.
    ok(unsafe { cu::cuStreamWaitEvent(sb, e, 0) });
    // SAFETY: device addresses of the two contexts.
    ok(unsafe { cu::cuMemcpyPeerAsync(pb, b.0, pa, a.0, 16, sb) });
    ok(sync(sb));
    assert_eq!(read_u32(pb, 4), [20, 21, 22, 23]);
}
