//! Pitched allocations and 2D copies through the C ABI.

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use ptxsmith_cuda_emu::exports as cu;
use ptxsmith_cuda_emu::exports::Memcpy2D;

mod common;
use common::*;

const HOST: u32 = 1;
const DEVICE: u32 = 2;
const ARRAY: u32 = 3;
const UNIFIED: u32 = 4;

fn desc(width: usize, height: usize) -> Memcpy2D {
    Memcpy2D {
        src_x: 0,
        src_y: 0,
        src_type: HOST,
        src_host: null(),
        src_device: 0,
        src_array: null_mut(),
        src_pitch: 0,
        dst_x: 0,
        dst_y: 0,
        dst_type: HOST,
        dst_host: null_mut(),
        dst_device: 0,
        dst_array: null_mut(),
        dst_pitch: 0,
        width,
        height,
    }
}

fn copy(c: &Memcpy2D) -> CUresult {
    // SAFETY: the descriptors built here name live buffers (or are refused).
    unsafe { cu::cuMemcpy2D_v2(c) }
}

#[test]
fn pitched_rows_round_trip_through_every_direction() {
    let _c = TestCtx::new();
    let (w, h) = (40usize, 5usize);
    let (mut d, mut pitch) = (0u64, 0usize);
    // SAFETY: valid out-pointers.
    ok(unsafe { cu::cuMemAllocPitch_v2(&mut d, &mut pitch, w, h, 4) });
    assert_eq!(pitch, 512);
    // Host (tight rows of 40 bytes) -> device (pitched).
    let host: Vec<u8> = (0..w * h).map(|i| i as u8).collect();
    let mut c = desc(w, h);
    c.src_host = host.as_ptr().cast();
    c.src_pitch = w;
    c.dst_type = DEVICE;
    c.dst_device = d;
    c.dst_pitch = pitch;
    ok(copy(&c));
    // Device -> device: a 16 × 3 window at (x 8, row 1) into a second
    // pitched buffer at (x 4, row 2), asynchronously.
    let (mut e, mut epitch) = (0u64, 0usize);
    // SAFETY: valid out-pointers.
    ok(unsafe { cu::cuMemAllocPitch_v2(&mut e, &mut epitch, 64, 6, 8) });
    // SAFETY: device address, rows written only by the copies below.
    ok(unsafe { cu::cuMemsetD8_v2(e, 0xEE, epitch * 6) });
    let mut c2 = desc(16, 3);
    c2.src_type = DEVICE;
    c2.src_device = d;
    c2.src_pitch = pitch;
    c2.src_x = 8;
    c2.src_y = 1;
    c2.dst_type = UNIFIED;
    c2.dst_device = e;
    c2.dst_pitch = epitch;
    c2.dst_x = 4;
    c2.dst_y = 2;
    let s = stream(0);
    // SAFETY: a valid descriptor.
    ok(unsafe { cu::cuMemcpy2DAsync_v2(&c2, s) });
    ok(sync(s));
    // Device -> host (unified host address), the whole second buffer.
    let mut back = vec![0u8; 64 * 6];
    let mut c3 = desc(64, 6);
    c3.src_type = DEVICE;
    c3.src_device = e;
    c3.src_pitch = epitch;
    c3.dst_type = UNIFIED;
    c3.dst_device = back.as_mut_ptr() as u64;
    c3.dst_pitch = 64;
    ok(copy(&c3));
    for r in 0..6 {
        for x in 0..64 {
            let want = if (2..5).contains(&r) && (4..20).contains(&x) {
                host[(r - 2 + 1) * w + (x - 4 + 8)]
            } else {
                0xEE
            };
            assert_eq!(back[r * 64 + x], want, "row {r} byte {x}");
        }
    }
}

#[test]
fn every_row_is_checked_before_anything_is_touched() {
    let _c = TestCtx::new();
    let (mut d, mut pitch) = (0u64, 0usize);
    // SAFETY: valid out-pointers.
    ok(unsafe { cu::cuMemAllocPitch_v2(&mut d, &mut pitch, 16, 4, 4) });
    let mut host = vec![7u8; 64 * 8];
    let mut c = desc(16, 4);
    c.src_type = DEVICE;
    c.src_device = d;
    c.src_pitch = pitch;
    c.dst_host = host.as_mut_ptr().cast();
    c.dst_pitch = 16;
    ok(copy(&c));
    // One row too many on the device side: refused, nothing written.
    host.fill(7);
    let mut bad = c;
    bad.height = 5;
    is(copy(&bad), CUDA_ERROR_INVALID_VALUE);
    bad = c;
    bad.src_y = 1;
    is(copy(&bad), CUDA_ERROR_INVALID_VALUE);
    bad = c;
    bad.src_x = pitch - 8;
    is(copy(&bad), CUDA_ERROR_INVALID_VALUE);
    bad = c;
    bad.height = usize::MAX;
    is(copy(&bad), CUDA_ERROR_INVALID_VALUE);
    bad = c;
    bad.src_pitch = 8;
    is(copy(&bad), CUDA_ERROR_INVALID_VALUE);
    bad = c;
    bad.dst_host = null_mut();
    is(copy(&bad), CUDA_ERROR_INVALID_VALUE);
    bad = c;
    bad.dst_host = std::ptr::without_provenance_mut(d as usize);
    is(copy(&bad), CUDA_ERROR_INVALID_VALUE);
    bad = c;
    bad.src_type = ARRAY;
    is(copy(&bad), CUDA_ERROR_NOT_SUPPORTED);
    bad = c;
    bad.src_type = 9;
    is(copy(&bad), CUDA_ERROR_INVALID_VALUE);
    bad = c;
    bad.src_type = HOST;
    bad.src_host = host.as_ptr().cast::<c_void>();
    is(copy(&bad), CUDA_ERROR_NOT_SUPPORTED);
    assert!(host.iter().all(|&b| b == 7), "nothing written");
    // SAFETY: null descriptor.
    is(
        unsafe { cu::cuMemcpy2D_v2(null()) },
        CUDA_ERROR_INVALID_VALUE,
    );
    let (mut p, mut q) = (0u64, 0usize);
    // SAFETY: valid out-pointers; bad sizes refused.
    unsafe {
        is(
            cu::cuMemAllocPitch_v2(&mut p, &mut q, 16, 4, 2),
            CUDA_ERROR_INVALID_VALUE,
        );
        is(
            cu::cuMemAllocPitch_v2(&mut p, &mut q, 0, 4, 4),
            CUDA_ERROR_INVALID_VALUE,
        );
        is(
            cu::cuMemAllocPitch_v2(&mut p, &mut q, usize::MAX, 4, 4),
            CUDA_ERROR_INVALID_VALUE,
        );
        is(
            cu::cuMemAllocPitch_v2(&mut p, &mut q, 1 << 40, 1 << 20, 4),
            CUDA_ERROR_OUT_OF_MEMORY,
        );
        is(
            cu::cuMemAllocPitch_v2(null_mut(), &mut q, 16, 4, 4),
            CUDA_ERROR_INVALID_VALUE,
        );
    }
}
