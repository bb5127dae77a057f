//! Never crash (issue 34): copies with byte counts above the device
//! allocation are refused before the host buffer is touched, large copies
//! and fills need no host buffer of their full size, and page-locked
//! host memory is read when an asynchronous copy from it runs.

use std::ffi::c_void;

use ptxsmith_cuda_emu::exports as cu;

mod common;
use common::*;

/// 64 GiB: more than any host buffer here and than the device memory.
const HUGE: usize = 64 << 30;
/// `CU_STREAM_NON_BLOCKING`.
const NON_BLOCKING: u32 = 0x1;

#[test]
fn oversized_copies_are_refused_before_the_host_buffer_is_read() {
    let _c = TestCtx::new();
    let p = alloc(256);
    let s = stream(0);
    let host = vec![0u8; 256];
    let src = host.as_ptr().cast::<c_void>();
    let mut back = vec![0u8; 256];
    let dst = back.as_mut_ptr().cast::<c_void>();
    for bytes in [1 << 20, HUGE, usize::MAX] {
        // SAFETY: each call is refused before it reads or writes more than
        // the 256 host bytes (that is what is tested: a crash fails it).
        unsafe {
            is(cu::cuMemcpyHtoD_v2(p, src, bytes), CUDA_ERROR_INVALID_VALUE);
            is(
                cu::cuMemcpyHtoDAsync_v2(p, src, bytes, s),
                CUDA_ERROR_INVALID_VALUE,
            );
            is(
                cu::cuMemcpy(p, src as usize as u64, bytes),
                CUDA_ERROR_INVALID_VALUE,
            );
            is(
                cu::cuMemcpyAsync(p, src as usize as u64, bytes, s),
                CUDA_ERROR_INVALID_VALUE,
            );
            is(cu::cuMemcpyDtoH_v2(dst, p, bytes), CUDA_ERROR_INVALID_VALUE);
            is(
                cu::cuMemcpyDtoHAsync_v2(dst, p, bytes, s),
                CUDA_ERROR_INVALID_VALUE,
            );
            is(
                cu::cuMemcpy(dst as usize as u64, p, bytes),
                CUDA_ERROR_INVALID_VALUE,
            );
            is(cu::cuMemcpyDtoD_v2(p, p, bytes), CUDA_ERROR_INVALID_VALUE);
            is(cu::cuMemsetD8_v2(p, 1, bytes), CUDA_ERROR_INVALID_VALUE);
            is(cu::cuMemsetD32_v2(p, 1, bytes), CUDA_ERROR_INVALID_VALUE);
        }
    }
    // The context is still healthy: nothing was queued or faulted.
    ok(ctx_sync());
    ok(htod(p, &[5u8; 256]));
    assert_eq!(read_u32(p, 1), [0x0505_0505]);
}

#[test]
fn an_oversized_peer_copy_is_refused() {
    let a = TestCtx::new();
    let pa = alloc(256);
    let b = TestCtx::new();
    let pb = alloc(256);
    for bytes in [257, HUGE] {
        // SAFETY: no pointer arguments.
        unsafe {
            is(
                cu::cuMemcpyPeer(pb, b.0, pa, a.0, bytes),
                CUDA_ERROR_INVALID_VALUE,
            );
        }
    }
}

#[test]
fn copies_and_fills_larger_than_a_chunk_are_exact() {
    let _c = TestCtx::new();
    // 3 MiB + 12 bytes: three full 1 MiB pieces and a short one.
    let n = (3 << 20) / 4 + 3;
    let p = alloc(4 * n);
    let data: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    ok(htod(p, &data));
    let mut back = vec![0u32; n];
    ok(dtoh(&mut back, p));
    assert!(back == data, "device → host copy in pieces");
    // SAFETY: no pointer arguments.
    ok(unsafe { cu::cuMemsetD32_v2(p + 4, 0xA5A5_0001, n - 2) });
    ok(dtoh(&mut back, p));
    assert_eq!(back[0], data[0]);
    assert_eq!(back[n - 1], data[n - 1]);
    assert!(back[1..n - 1].iter().all(|&v| v == 0xA5A5_0001));
    // SAFETY: no pointer arguments.
    ok(unsafe { cu::cuMemsetD16_v2(p + 2, 0xBEEF, 2 * n - 2) });
    let mut half = vec![0u16; 2 * n];
    ok(dtoh(&mut half, p));
    assert!(half[1..2 * n - 1].iter().all(|&v| v == 0xBEEF));
    assert_eq!(half[2 * n - 1], (data[n - 1] >> 16) as u16);
}

/// `cuMemAllocHost` memory of `bytes`, freed by the caller.
fn pinned(bytes: usize) -> *mut u8 {
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cu::cuMemAllocHost_v2(&mut p, bytes) });
    p.cast()
}

#[test]
fn an_async_copy_from_page_locked_memory_reads_it_when_it_runs() {
    let _c = TestCtx::new();
    let p = alloc(16);
    let s = stream(NON_BLOCKING);
    let host = pinned(16);
    // SAFETY: 16 bytes of page-locked memory, freed at the end; the
    // queued copy reads it only when the stream is synchronised below.
    unsafe {
        std::ptr::write_bytes(host, 1, 16);
        ok(cu::cuMemcpyHtoDAsync_v2(p, host.cast(), 16, s));
        // Overwritten after the call, before the copy runs: a GPU's copy
        // engine reads the new bytes.
        std::ptr::write_bytes(host, 2, 16);
        ok(sync(s));
        assert_eq!(read_u32(p, 4), [0x0202_0202; 4]);
        // Pageable memory is staged at the call (the driver copies it into
        // its own staging buffer before returning).
        let mut pageable = [3u8; 16];
        ok(cu::cuMemcpyHtoDAsync_v2(p, pageable.as_ptr().cast(), 16, s));
        pageable.fill(4);
        ok(sync(s));
        assert_eq!(read_u32(p, 4), [0x0303_0303; 4], "{pageable:?}");
        // Memory registered with cuMemHostRegister is page-locked too.
        let mut registered = vec![5u8; 4096];
        ok(cu::cuMemHostRegister_v2(
            registered.as_mut_ptr().cast(),
            4096,
            0,
        ));
        ok(cu::cuMemcpyHtoDAsync_v2(
            p,
            registered.as_ptr().cast(),
            16,
            s,
        ));
        registered[..16].fill(6);
        ok(sync(s));
        assert_eq!(read_u32(p, 4), [0x0606_0606; 4]);
        // Unregistering runs the copies still reading it first.
        ok(cu::cuMemcpyHtoDAsync_v2(
            p,
            registered.as_ptr().cast(),
            16,
            s,
        ));
        ok(cu::cuMemHostUnregister(registered.as_mut_ptr().cast()));
        registered[..16].fill(7);
        drop(registered);
        ok(sync(s));
        assert_eq!(read_u32(p, 4), [0x0606_0606; 4]);
        ok(cu::cuMemFreeHost(host.cast()));
    }
}

#[test]
fn freeing_page_locked_memory_runs_the_copies_that_use_it_first() {
    let _c = TestCtx::new();
    let p = alloc(16);
    let s = stream(NON_BLOCKING);
    ok(htod(p, &[9u32; 4]));
    ok(ctx_sync());
    let into = pinned(16);
    let from = pinned(16);
    // SAFETY: both buffers are page-locked memory of 16 bytes; freeing
    // them runs the queued copies first, so none touches freed memory.
    unsafe {
        std::ptr::write_bytes(from, 8, 16);
        ok(cu::cuMemcpyDtoHAsync_v2(into.cast(), p, 16, s));
        ok(cu::cuMemcpyHtoDAsync_v2(p, from.cast(), 16, s));
        ok(cu::cuMemFreeHost(into.cast()));
        ok(cu::cuMemFreeHost(from.cast()));
        // Both copies have run: the stream has nothing pending (a query of
        // pending work would answer NOT_READY).
        ok(cu::cuStreamQuery(s));
    }
    ok(sync(s));
    assert_eq!(read_u32(p, 4), [0x0808_0808; 4]);
}
