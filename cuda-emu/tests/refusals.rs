//! Where the driver refuses, the emulator refuses with the driver's code
//! (the strictness list of `cuda-emu/README.md`): wrong parameter count or
//! sizes, a `.target` the device cannot run or a `.version` the driver does
//! not know, unknown instructions, a pointer of another context, dynamic
//! shared memory above the opt-in, use after `cuMemFree`, launch shapes,
//! handles of another context, calls without a current context.

use std::ffi::c_void;

use ptxsmith_cuda_emu::exports as cu;

mod common;
use common::*;

#[test]
fn launches_with_the_wrong_parameters_are_refused() {
    let _c = TestCtx::new();
    let f = emu_kernel("mixed");
    let out = alloc(32);
    let args = [
        Arg::U64(out),
        Arg::U32(7),
        Arg::U64(0x0123_4567_89AB_CDEF),
        Arg::F32(1.5),
    ];
    // The right parameters work, read at the entry's offsets (0, 8, 16, 24).
    ok(launch(f, 1, 1, 0, CUstream::default(), &args));
    assert_eq!(
        read_u32(out, 5),
        [7, 0, 0x89AB_CDEF, 0x0123_4567, 1.5f32.to_bits()]
    );
    // kernelParams with a missing (null) pointer: fewer parameters than the
    // entry takes.
    let mut slot = [0u8; 8];
    let mut short: [*mut c_void; 4] = [
        slot.as_mut_ptr().cast(),
        slot.as_mut_ptr().cast(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
    ];
    // SAFETY: four pointers for four parameters (two of them null, refused).
    let rc = unsafe {
        cu::cuLaunchKernel(
            f,
            1,
            1,
            1,
            1,
            1,
            1,
            0,
            CUstream::default(),
            short.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    };
    is(rc, CUDA_ERROR_INVALID_VALUE);
    // No parameters at all for an entry that takes four.
    is(
        launch(f, 1, 1, 0, CUstream::default(), &[]),
        CUDA_ERROR_INVALID_VALUE,
    );
    // `extra` with a parameter buffer: 28 bytes (or 32, the C struct's
    // padding) is the entry's; 24 (a missing or smaller parameter) and 40
    // (one too many) are not.
    let mut buf = [0u8; 40];
    buf[..8].copy_from_slice(&out.to_le_bytes());
    buf[8..12].copy_from_slice(&9u32.to_le_bytes());
    buf[16..24].copy_from_slice(&5u64.to_le_bytes());
    buf[24..28].copy_from_slice(&2.0f32.to_le_bytes());
    let try_extra = |size: usize| {
        let mut size = size;
        let mut extra: [*mut c_void; 5] = [
            std::ptr::without_provenance_mut(1),
            buf.as_ptr().cast_mut().cast(),
            std::ptr::without_provenance_mut(2),
            (&raw mut size).cast(),
            std::ptr::null_mut(),
        ];
        // SAFETY: a terminated extra list; the buffer holds 40 bytes.
        unsafe {
            cu::cuLaunchKernel(
                f,
                1,
                1,
                1,
                1,
                1,
                1,
                0,
                CUstream::default(),
                std::ptr::null_mut(),
                extra.as_mut_ptr(),
            )
        }
    };
    ok(try_extra(28));
    ok(try_extra(32));
    assert_eq!(read_u32(out, 5), [9, 0, 5, 0, 2.0f32.to_bits()]);
    is(try_extra(24), CUDA_ERROR_INVALID_VALUE);
    is(try_extra(40), CUDA_ERROR_INVALID_VALUE);
    // Both kernelParams and extra.
    let mut one: [*mut c_void; 1] = [slot.as_mut_ptr().cast()];
    let mut end: [*mut c_void; 1] = [std::ptr::null_mut()];
    // SAFETY: refused before either is read beyond its first entry.
    let rc = unsafe {
        cu::cuLaunchKernel(
            f,
            1,
            1,
            1,
            1,
            1,
            1,
            0,
            CUstream::default(),
            one.as_mut_ptr(),
            end.as_mut_ptr(),
        )
    };
    is(rc, CUDA_ERROR_INVALID_VALUE);
}

#[test]
fn a_target_the_device_cannot_run_is_invalid_ptx_with_the_jit_log() {
    let _c = TestCtx::new();
    // The default device is sm_90: sm_90 and older plain targets load.
    load(&with_header(EMU_PTX, "7.8", "sm_90"));
    let (r, _) = load_logged(&with_header(EMU_PTX, "8.6", "sm_100"));
    let (code, log) = r.unwrap_err();
    is(code, CUDA_ERROR_INVALID_PTX);
    assert!(
        log.contains(".target (sm_100)") && log.contains("line 5"),
        "{log}"
    );
    // An arch-specific target of another architecture.
    let (r, _) = load_logged(&with_header(EMU_PTX, "8.0", "sm_80a"));
    assert!(r.is_err());
    let (r, _) = load_logged(&with_header(EMU_PTX, "8.6", "sm_100a"));
    is(r.unwrap_err().0, CUDA_ERROR_INVALID_PTX);
    // A target this .version does not know yet (sm_90 needs 7.8).
    let (r, _) = load_logged(&with_header(EMU_PTX, "7.0", "sm_90"));
    let (code, log) = r.unwrap_err();
    is(code, CUDA_ERROR_INVALID_PTX);
    assert!(log.contains("7.8"), "{log}");
}

#[test]
fn a_version_newer_than_the_driver_is_unsupported_ptx_version() {
    let _c = TestCtx::new();
    // The default driver is CUDA 12.9: PTX ISA 8.8 at most.
    let (r, info) = load_logged(&with_header(EMU_PTX, "8.8", "sm_70"));
    assert!(r.is_ok());
    assert!(info.contains("sm_90"), "{info}");
    let (r, _) = load_logged(&with_header(EMU_PTX, "9.0", "sm_70"));
    let (code, log) = r.unwrap_err();
    is(code, CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
    assert!(
        log.contains("Unsupported .version 9.0") && log.contains("'8.8'"),
        "{log}"
    );
}

#[test]
fn unknown_instructions_and_images_are_refused() {
    let _c = TestCtx::new();
    let (r, _) = load_logged(UNKNOWN_PTX);
    let (code, log) = r.unwrap_err();
    is(code, CUDA_ERROR_INVALID_PTX);
    assert!(
        log.contains("line 12") && log.contains("frobnicate"),
        "{log}"
    );
    // A cubin is not PTX: the simulator cannot run SASS.
    let cubin = b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00";
    let mut m = CUmodule::default();
    // SAFETY: a 12-byte binary image (its magic is all that is read).
    let rc = unsafe { cu::cuModuleLoadData(&mut m, cubin.as_ptr().cast()) };
    is(rc, CUDA_ERROR_NOT_SUPPORTED);
    // A name that is not an entry.
    let m = load(EMU_PTX);
    is(
        function(m, "no_such_kernel").unwrap_err(),
        CUDA_ERROR_NOT_FOUND,
    );
    // Unload makes the module and its functions invalid handles.
    let f = function(m, "fill").unwrap();
    // SAFETY: handle values.
    ok(unsafe { cu::cuModuleUnload(m) });
    is(function(m, "fill").unwrap_err(), CUDA_ERROR_INVALID_HANDLE);
    is(
        launch(f, 1, 1, 0, CUstream::default(), &[]),
        CUDA_ERROR_INVALID_HANDLE,
    );
}

#[test]
fn a_pointer_of_another_context_is_refused_or_faults() {
    let a = TestCtx::new();
    let pa = alloc(64);
    ok(htod(pa, &[5u32; 16]));
    let b = TestCtx::new();
    // Copies check the current context's allocations.
    is(htod(pa, &[1u32; 16]), CUDA_ERROR_INVALID_VALUE);
    let mut out = [0u32; 16];
    is(dtoh(&mut out, pa), CUDA_ERROR_INVALID_VALUE);
    // SAFETY: handle values; refused.
    is(unsafe { cu::cuMemFree_v2(pa) }, CUDA_ERROR_INVALID_VALUE);
    // A kernel that writes through it faults when it runs: each context
    // has its own address range, and `pa` is in none of b's allocations.
    let f = emu_kernel("store_one");
    ok(launch(f, 1, 32, 0, CUstream::default(), &[Arg::U64(pa)]));
    is(ctx_sync(), CUDA_ERROR_ILLEGAL_ADDRESS);
    // The fault is sticky in b only.
    is(htod(alloc_or_code(), &[0u8]), CUDA_ERROR_ILLEGAL_ADDRESS);
    a.bind();
    assert_eq!(read_u32(pa, 16), vec![5; 16]);
    drop(b);
}

/// `cuMemAlloc` in a faulted context returns the sticky error: the
/// allocation "address" is then 0.
fn alloc_or_code() -> CUdeviceptr {
    let mut p = 0;
    // SAFETY: out-pointer.
    is(
        unsafe { cu::cuMemAlloc_v2(&mut p, 4) },
        CUDA_ERROR_ILLEGAL_ADDRESS,
    );
    p
}

#[test]
fn dynamic_shared_memory_above_the_opt_in_is_refused() {
    let _c = TestCtx::new();
    let f = emu_kernel("reverse_in_shared");
    let out = alloc(4 * 256);
    // Within the default 48 KiB: fine.
    ok(launch(
        f,
        1,
        256,
        1024,
        CUstream::default(),
        &[Arg::U64(out)],
    ));
    let want: Vec<u32> = (0..256).rev().collect();
    assert_eq!(read_u32(out, 256), want);
    let mut v = 0;
    // SAFETY: out-pointer.
    ok(unsafe { cu::cuFuncGetAttribute(&mut v, 8, f) });
    assert_eq!(v, 48 * 1024);
    // Above it without opting in: refused at launch.
    is(
        launch(f, 1, 256, 64 * 1024, CUstream::default(), &[Arg::U64(out)]),
        CUDA_ERROR_INVALID_VALUE,
    );
    // Opting in to 64 KiB allows exactly that much.
    // SAFETY: handle value.
    ok(unsafe { cu::cuFuncSetAttribute(f, 8, 64 * 1024) });
    ok(launch(
        f,
        1,
        256,
        64 * 1024,
        CUstream::default(),
        &[Arg::U64(out)],
    ));
    is(
        launch(
            f,
            1,
            256,
            64 * 1024 + 4,
            CUstream::default(),
            &[Arg::U64(out)],
        ),
        CUDA_ERROR_INVALID_VALUE,
    );
    // The opt-in itself is capped by the device (sm_90: 227 KiB).
    // SAFETY: handle value.
    is(
        unsafe { cu::cuFuncSetAttribute(f, 8, 232_448 + 1) },
        CUDA_ERROR_INVALID_VALUE,
    );
    // SAFETY: handle value.
    ok(unsafe { cu::cuFuncSetAttribute(f, 8, 232_448) });
    ok(ctx_sync());
}

#[test]
fn use_after_free_is_refused_or_faults() {
    let _c = TestCtx::new();
    let p = alloc(16);
    ok(htod(p, &[1u32; 4]));
    // SAFETY: a live allocation, freed once.
    ok(unsafe { cu::cuMemFree_v2(p) });
    is(htod(p, &[1u32; 4]), CUDA_ERROR_INVALID_VALUE);
    // SAFETY: refused (double free).
    is(unsafe { cu::cuMemFree_v2(p) }, CUDA_ERROR_INVALID_VALUE);
    // SAFETY: no memory is touched; refused.
    is(
        unsafe { cu::cuMemsetD32_v2(p, 0, 4) },
        CUDA_ERROR_INVALID_VALUE,
    );
    // A kernel using the freed pointer faults when it runs.
    let f = emu_kernel("store_one");
    ok(launch(f, 1, 32, 0, CUstream::default(), &[Arg::U64(p)]));
    is(ctx_sync(), CUDA_ERROR_ILLEGAL_ADDRESS);
}

#[test]
fn freeing_memory_under_queued_work_faults_when_the_work_runs() {
    let _c = TestCtx::new();
    let p = alloc(4 * 64);
    let f = emu_kernel("fill");
    let s = stream(0x1);
    ok(launch(
        f,
        1,
        64,
        0,
        s,
        &[Arg::U64(p), Arg::U32(64), Arg::U32(0)],
    ));
    // cuMemFree "may" synchronise on a GPU; the emulator does not, so the
    // queued kernel writes freed memory.
    // SAFETY: a live allocation, freed once.
    ok(unsafe { cu::cuMemFree_v2(p) });
    is(sync(s), CUDA_ERROR_ILLEGAL_ADDRESS);
}

#[test]
fn launch_shapes_are_checked_against_the_device_and_the_entry() {
    let _c = TestCtx::new();
    let f = emu_kernel("fill");
    let p = alloc(4);
    let args = [Arg::U64(p), Arg::U32(1), Arg::U32(0)];
    is(
        launch(f, 0, 32, 0, CUstream::default(), &args),
        CUDA_ERROR_INVALID_VALUE,
    );
    is(
        launch(f, 1, 0, 0, CUstream::default(), &args),
        CUDA_ERROR_INVALID_VALUE,
    );
    is(
        launch(f, 1, 1025, 0, CUstream::default(), &args),
        CUDA_ERROR_INVALID_VALUE,
    );
    // SAFETY: a grid y of 65536 is refused before params are read.
    let rc = unsafe {
        cu::cuLaunchKernel(
            f,
            1,
            65536,
            1,
            32,
            1,
            1,
            0,
            CUstream::default(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
    is(rc, CUDA_ERROR_INVALID_VALUE);
    // `.reqntid 64`: exactly 64 threads.
    let g = emu_kernel("exactly_64");
    is(
        launch(g, 1, 32, 0, CUstream::default(), &[]),
        CUDA_ERROR_INVALID_VALUE,
    );
    ok(launch(g, 2, 64, 0, CUstream::default(), &[]));
    let mut v = 0;
    // SAFETY: out-pointer.
    ok(unsafe { cu::cuFuncGetAttribute(&mut v, 0, g) });
    assert_eq!(v, 64);
    ok(ctx_sync());
}

#[test]
fn handles_of_another_context_and_no_context_are_refused() {
    let a = TestCtx::new();
    let fa = emu_kernel("fill");
    let sa = stream(0);
    let b = TestCtx::new();
    let p = alloc(4);
    let args = [Arg::U64(p), Arg::U32(1), Arg::U32(0)];
    // A function loaded in a, launched with b current.
    is(
        launch(fa, 1, 1, 0, CUstream::default(), &args),
        CUDA_ERROR_INVALID_HANDLE,
    );
    // A stream of a used for b's launch.
    let fb = emu_kernel("fill");
    is(launch(fb, 1, 1, 0, sa, &args), CUDA_ERROR_INVALID_HANDLE);
    // No current context at all: a thread that never bound one.
    let codes = std::thread::spawn(move || {
        let mut q = 0;
        // SAFETY: out-pointer.
        let a = unsafe { cu::cuMemAlloc_v2(&mut q, 4) };
        (a, launch(fb, 1, 1, 0, CUstream::default(), &args))
    })
    .join()
    .unwrap();
    assert_eq!(
        codes,
        (CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_CONTEXT)
    );
    // cuCtxSetCurrent(NULL) pops the top of the thread's stack: a (made
    // first) is current again.
    // SAFETY: a null handle.
    ok(unsafe { cu::cuCtxSetCurrent(CUcontext::default()) });
    let mut cur = CUcontext::default();
    // SAFETY: out-pointer.
    ok(unsafe { cu::cuCtxGetCurrent(&mut cur) });
    assert_eq!(cur, a.0);
    // A destroyed context's handle.
    let gone = b.0;
    drop(b);
    // SAFETY: a handle value.
    is(
        unsafe { cu::cuCtxSetCurrent(gone) },
        CUDA_ERROR_CONTEXT_IS_DESTROYED,
    );
    a.bind();
    // A destroyed stream.
    // SAFETY: handle values.
    ok(unsafe { cu::cuStreamDestroy_v2(sa) });
    is(sync(sa), CUDA_ERROR_INVALID_HANDLE);
    // Stream and wait flags.
    let mut s = CUstream::default();
    // SAFETY: out-pointer; refused.
    is(
        unsafe { cu::cuStreamCreate(&mut s, 0x2) },
        CUDA_ERROR_INVALID_VALUE,
    );
    let (s, e) = (stream(0), event(0));
    // SAFETY: handle values; CU_EVENT_WAIT_EXTERNAL outside stream capture.
    is(
        unsafe { cu::cuStreamWaitEvent(s, e, 1) },
        CUDA_ERROR_INVALID_VALUE,
    );
    // The legacy stream cannot be destroyed.
    // SAFETY: a handle value.
    is(
        unsafe { cu::cuStreamDestroy_v2(CUstream::default()) },
        CUDA_ERROR_INVALID_HANDLE,
    );
}

#[test]
fn memory_calls_check_sizes_alignment_and_host_pointers() {
    let _c = TestCtx::new();
    let mut p = 0;
    // SAFETY: out-pointer; a zero-byte allocation is refused.
    is(
        unsafe { cu::cuMemAlloc_v2(&mut p, 0) },
        CUDA_ERROR_INVALID_VALUE,
    );
    let p = alloc(100);
    // Past the end of the allocation.
    is(htod(p + 96, &[0u32; 2]), CUDA_ERROR_INVALID_VALUE);
    // cuMemsetD32 on an address that is not 4-byte aligned.
    // SAFETY: refused before anything is written.
    is(
        unsafe { cu::cuMemsetD32_v2(p + 2, 0, 1) },
        CUDA_ERROR_INVALID_VALUE,
    );
    // A device address passed as the host pointer.
    // SAFETY: refused before the "host" range is touched.
    let rc = unsafe { cu::cuMemcpyHtoD_v2(p, p as usize as *const c_void, 4) };
    is(rc, CUDA_ERROR_INVALID_VALUE);
    // A null host pointer.
    // SAFETY: refused.
    is(
        unsafe { cu::cuMemcpyDtoH_v2(std::ptr::null_mut(), p, 4) },
        CUDA_ERROR_INVALID_VALUE,
    );
    // Allocations never reuse an address.
    // SAFETY: a live allocation, freed once.
    ok(unsafe { cu::cuMemFree_v2(p) });
    assert_ne!(alloc(100), p);
}
