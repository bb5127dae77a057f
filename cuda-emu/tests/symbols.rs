//! Symbols real clients resolve (issue 34): `cuGetProcAddress(_v2)`,
//! `cuGetExportTable`, `cuCtxCreate_v3/_v4`, handles that are positive as
//! signed integers, error names for every `CUresult`, `cuMemFree(0)`,
//! consistent host-mapping attributes, `cuMemcpyPeerAsync` on stream 0.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::ptr::{null, null_mut};

use ptxsmith_cuda_emu::exports as cu;

mod common;
use common::*;

/// `cuGetProcAddress_v2(name, version, flags)`: `(code, address, status)`.
fn proc_v2(name: &CStr, version: c_int, flags: u64) -> (CUresult, usize, c_int) {
    let mut pfn: *mut c_void = std::ptr::dangling_mut();
    let mut status = -1;
    // SAFETY: a NUL-terminated name and valid out-pointers.
    let rc =
        unsafe { cu::cuGetProcAddress_v2(name.as_ptr(), &mut pfn, version, flags, &mut status) };
    (rc, pfn as usize, status)
}

fn addr_of(f: *const ()) -> usize {
    f as usize
}

#[test]
fn get_proc_address_gives_the_symbol_of_each_version() {
    let (rc, a, st) = proc_v2(c"cuMemAlloc", 12090, 0);
    is(rc, CUDA_SUCCESS);
    assert_eq!((a, st), (addr_of(cu::cuMemAlloc_v2 as *const ()), 0));
    for (version, want) in [
        (12090, cu::cuCtxCreate_v4 as *const ()),
        (12040, cu::cuCtxCreate_v3 as *const ()),
        (11040, cu::cuCtxCreate_v3 as *const ()),
        (4000, cu::cuCtxCreate_v2 as *const ()),
    ] {
        let (rc, a, st) = proc_v2(c"cuCtxCreate", version, 0);
        is(rc, CUDA_SUCCESS);
        assert_eq!((a, st), (addr_of(want), 0), "cuCtxCreate at {version}");
    }
    // Newer than the version asked for.
    let (rc, a, st) = proc_v2(c"cuCtxCreate", 3000, 0);
    is(rc, CUDA_ERROR_NOT_FOUND);
    assert_eq!((a, st), (0, 2), "VERSION_NOT_SUFFICIENT, pfn null");
    // Unknown, or a suffixed name (clients ask for base names).
    for name in [c"cuNoSuchThing", c"cuMemAlloc_v2", c""] {
        let (rc, a, st) = proc_v2(name, 12090, 0);
        is(rc, CUDA_ERROR_NOT_FOUND);
        assert_eq!((a, st), (0, 1), "{name:?}: SYMBOL_NOT_FOUND, pfn null");
    }
    // Legacy-stream flag: the same; per-thread default stream: the
    // `_ptsz`/`_ptds` variant where there is one, else the same.
    let (rc, a, _) = proc_v2(c"cuMemcpyAsync", 12090, 1);
    is(rc, CUDA_SUCCESS);
    assert_eq!(a, addr_of(cu::cuMemcpyAsync as *const ()));
    for (name, want) in [
        (c"cuMemcpyAsync", cu::cuMemcpyAsync_ptsz as *const ()),
        (c"cuLaunchKernel", cu::cuLaunchKernel_ptsz as *const ()),
        (c"cuMemcpyHtoD", cu::cuMemcpyHtoD_v2_ptds as *const ()),
        (
            c"cuStreamBeginCapture",
            cu::cuStreamBeginCapture_v2_ptsz as *const (),
        ),
        (c"cuMemAlloc", cu::cuMemAlloc_v2 as *const ()),
    ] {
        let (rc, a, st) = proc_v2(name, 12090, 2);
        is(rc, CUDA_SUCCESS);
        assert_eq!((a, st), (addr_of(want), 0), "{name:?} per thread");
    }
    // A variant's own name is a suffixed name.
    let (rc, a, st) = proc_v2(c"cuLaunchKernel_ptsz", 12090, 2);
    is(rc, CUDA_ERROR_NOT_FOUND);
    assert_eq!((a, st), (0, 1));
    let (rc, _, _) = proc_v2(c"cuMemAlloc", 12090, 4);
    is(rc, CUDA_ERROR_INVALID_VALUE);
    // Null arguments.
    let mut pfn = null_mut();
    // SAFETY: null pointers are refused before use.
    unsafe {
        is(
            cu::cuGetProcAddress(null(), &mut pfn, 12090, 0),
            CUDA_ERROR_INVALID_VALUE,
        );
        is(
            cu::cuGetProcAddress(c"cuInit".as_ptr(), null_mut(), 12090, 0),
            CUDA_ERROR_INVALID_VALUE,
        );
        // The first form, without the status, and a status pointer may be
        // null in the second.
        ok(cu::cuGetProcAddress(
            c"cuDriverGetVersion".as_ptr(),
            &mut pfn,
            12090,
            0,
        ));
        ok(cu::cuGetProcAddress_v2(
            c"cuGetProcAddress".as_ptr(),
            &mut pfn,
            12090,
            0,
            null_mut(),
        ));
        assert_eq!(pfn as usize, addr_of(cu::cuGetProcAddress_v2 as *const ()));
        ok(cu::cuGetProcAddress(
            c"cuDriverGetVersion".as_ptr(),
            &mut pfn,
            12090,
            0,
        ));
        // What it gives can be called.
        let f: unsafe extern "C" fn(*mut c_int) -> CUresult = std::mem::transmute(pfn);
        let mut v = 0;
        ok(f(&mut v));
        assert!(v >= 12000, "{v}");
    }
}

#[test]
fn every_export_is_found_by_its_base_name() {
    let variant = |n: &str| n.ends_with("_ptsz") || n.ends_with("_ptds");
    for s in cu::symbols() {
        if variant(s.name) {
            // Found through its base under the per-thread flag.
            let base = s.name.trim_end_matches("_ptsz").trim_end_matches("_ptds");
            let b = cu::symbols().iter().find(|o| o.name == base).unwrap();
            let name = std::ffi::CString::new(b.base).unwrap();
            let (rc, a, _) = proc_v2(&name, 12090, 2);
            is(rc, CUDA_SUCCESS);
            let newest = cu::symbols()
                .iter()
                .filter(|o| o.base == b.base && !variant(o.name))
                .max_by_key(|o| o.since)
                .unwrap();
            if newest.name == base {
                assert_eq!(a, s.addr, "{}", s.name);
            }
            continue;
        }
        let name = std::ffi::CString::new(s.base).unwrap();
        let (rc, a, _) = proc_v2(&name, s.since, 0);
        is(rc, CUDA_SUCCESS);
        // At its own version, the newest symbol of its base up to it.
        let newest = cu::symbols()
            .iter()
            .filter(|o| o.base == s.base && o.since <= s.since && !variant(o.name))
            .max_by_key(|o| o.since)
            .unwrap();
        assert_eq!(a, newest.addr, "{}", s.name);
    }
}

#[test]
fn get_export_table_answers_not_found_and_nulls_the_table() {
    let id = [0u8; 16];
    let mut table: *const c_void = std::ptr::dangling();
    // SAFETY: valid pointers; null ones are refused.
    unsafe {
        is(
            cu::cuGetExportTable(&mut table, id.as_ptr().cast()),
            CUDA_ERROR_NOT_FOUND,
        );
        assert!(table.is_null());
        is(
            cu::cuGetExportTable(null_mut(), id.as_ptr().cast()),
            CUDA_ERROR_INVALID_VALUE,
        );
        is(
            cu::cuGetExportTable(&mut table, null()),
            CUDA_ERROR_INVALID_VALUE,
        );
    }
}

#[test]
fn contexts_made_with_v3_and_v4_work_and_refuse_what_is_not_emulated() {
    init();
    let mut c = CUcontext::default();
    let check_and_destroy = |c: CUcontext| {
        let mut dev = -1;
        // SAFETY: valid out-pointer; the context is current, then destroyed.
        unsafe {
            ok(cu::cuCtxGetDevice(&mut dev));
            assert_eq!(dev, 0);
            ok(cu::cuCtxDestroy_v2(c));
        }
    };
    let mut affinity = [0u64; 2];
    // SAFETY: valid out-pointers and parameter structs.
    unsafe {
        ok(cu::cuCtxCreate_v3(&mut c, null_mut(), 0, 0, 0));
        check_and_destroy(c);
        ok(cu::cuCtxCreate_v4(&mut c, null_mut(), 0, 0));
        check_and_destroy(c);
        let mut p = cu::CtxCreateParams {
            exec_affinity_params: null_mut(),
            num_exec_affinity_params: 0,
            cig_params: null_mut(),
        };
        ok(cu::cuCtxCreate_v4(&mut c, &mut p, 0, 0));
        check_and_destroy(c);
        is(
            cu::cuCtxCreate_v3(&mut c, affinity.as_mut_ptr().cast(), 1, 0, 0),
            CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY,
        );
        is(
            cu::cuCtxCreate_v3(&mut c, affinity.as_mut_ptr().cast(), -1, 0, 0),
            CUDA_ERROR_INVALID_VALUE,
        );
        is(
            cu::cuCtxCreate_v3(&mut c, null_mut(), 1, 0, 0),
            CUDA_ERROR_INVALID_VALUE,
        );
        p.exec_affinity_params = affinity.as_mut_ptr().cast();
        p.num_exec_affinity_params = 1;
        is(
            cu::cuCtxCreate_v4(&mut c, &mut p, 0, 0),
            CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY,
        );
        p.num_exec_affinity_params = 0;
        p.cig_params = affinity.as_mut_ptr().cast();
        is(
            cu::cuCtxCreate_v4(&mut c, &mut p, 0, 0),
            CUDA_ERROR_NOT_SUPPORTED,
        );
        is(
            cu::cuCtxCreate_v4(null_mut(), null_mut(), 0, 0),
            CUDA_ERROR_INVALID_VALUE,
        );
        is(
            cu::cuCtxCreate_v4(&mut c, null_mut(), 0, 99),
            CUDA_ERROR_INVALID_DEVICE,
        );
    }
}

#[test]
fn handles_are_positive_as_signed_integers() {
    let c = TestCtx::new();
    let s = stream(0);
    let e = event(0);
    let m = load(EMU_PTX);
    let f = function(m, "fill").unwrap();
    let mut primary = CUcontext::default();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cu::cuDevicePrimaryCtxRetain(&mut primary, 0) });
    for (what, h) in [
        ("context", c.0.0 as usize),
        ("primary context", primary.0 as usize),
        ("stream", s.0 as usize),
        ("event", e.0 as usize),
        ("module", m.0 as usize),
        ("function", f.0 as usize),
    ] {
        assert!((h as i64) > 0, "{what} {h:#x}");
    }
    // SAFETY: retained above.
    ok(unsafe { cu::cuDevicePrimaryCtxRelease_v2(0) });
}

/// Every `CUresult` of CUDA 12.9 (`cudaError_enum`), by value.
const CUDA_12_9_CODES: [(u32, &str); 100] = [
    (0, "CUDA_SUCCESS"),
    (1, "CUDA_ERROR_INVALID_VALUE"),
    (2, "CUDA_ERROR_OUT_OF_MEMORY"),
    (3, "CUDA_ERROR_NOT_INITIALIZED"),
    (4, "CUDA_ERROR_DEINITIALIZED"),
    (5, "CUDA_ERROR_PROFILER_DISABLED"),
    (6, "CUDA_ERROR_PROFILER_NOT_INITIALIZED"),
    (7, "CUDA_ERROR_PROFILER_ALREADY_STARTED"),
    (8, "CUDA_ERROR_PROFILER_ALREADY_STOPPED"),
    (34, "CUDA_ERROR_STUB_LIBRARY"),
    (46, "CUDA_ERROR_DEVICE_UNAVAILABLE"),
    (100, "CUDA_ERROR_NO_DEVICE"),
    (101, "CUDA_ERROR_INVALID_DEVICE"),
    (102, "CUDA_ERROR_DEVICE_NOT_LICENSED"),
    (200, "CUDA_ERROR_INVALID_IMAGE"),
    (201, "CUDA_ERROR_INVALID_CONTEXT"),
    (202, "CUDA_ERROR_CONTEXT_ALREADY_CURRENT"),
    (205, "CUDA_ERROR_MAP_FAILED"),
    (206, "CUDA_ERROR_UNMAP_FAILED"),
    (207, "CUDA_ERROR_ARRAY_IS_MAPPED"),
    (208, "CUDA_ERROR_ALREADY_MAPPED"),
    (209, "CUDA_ERROR_NO_BINARY_FOR_GPU"),
    (210, "CUDA_ERROR_ALREADY_ACQUIRED"),
    (211, "CUDA_ERROR_NOT_MAPPED"),
    (212, "CUDA_ERROR_NOT_MAPPED_AS_ARRAY"),
    (213, "CUDA_ERROR_NOT_MAPPED_AS_POINTER"),
    (214, "CUDA_ERROR_ECC_UNCORRECTABLE"),
    (215, "CUDA_ERROR_UNSUPPORTED_LIMIT"),
    (216, "CUDA_ERROR_CONTEXT_ALREADY_IN_USE"),
    (217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED"),
    (218, "CUDA_ERROR_INVALID_PTX"),
    (219, "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT"),
    (220, "CUDA_ERROR_NVLINK_UNCORRECTABLE"),
    (221, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND"),
    (222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"),
    (223, "CUDA_ERROR_JIT_COMPILATION_DISABLED"),
    (224, "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY"),
    (225, "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC"),
    (226, "CUDA_ERROR_CONTAINED"),
    (300, "CUDA_ERROR_INVALID_SOURCE"),
    (301, "CUDA_ERROR_FILE_NOT_FOUND"),
    (302, "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND"),
    (303, "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED"),
    (304, "CUDA_ERROR_OPERATING_SYSTEM"),
    (400, "CUDA_ERROR_INVALID_HANDLE"),
    (401, "CUDA_ERROR_ILLEGAL_STATE"),
    (402, "CUDA_ERROR_LOSSY_QUERY"),
    (500, "CUDA_ERROR_NOT_FOUND"),
    (600, "CUDA_ERROR_NOT_READY"),
    (700, "CUDA_ERROR_ILLEGAL_ADDRESS"),
    (701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"),
    (702, "CUDA_ERROR_LAUNCH_TIMEOUT"),
    (703, "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING"),
    (704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED"),
    (705, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED"),
    (708, "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE"),
    (709, "CUDA_ERROR_CONTEXT_IS_DESTROYED"),
    (710, "CUDA_ERROR_ASSERT"),
    (711, "CUDA_ERROR_TOO_MANY_PEERS"),
    (712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"),
    (713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"),
    (714, "CUDA_ERROR_HARDWARE_STACK_ERROR"),
    (715, "CUDA_ERROR_ILLEGAL_INSTRUCTION"),
    (716, "CUDA_ERROR_MISALIGNED_ADDRESS"),
    (717, "CUDA_ERROR_INVALID_ADDRESS_SPACE"),
    (718, "CUDA_ERROR_INVALID_PC"),
    (719, "CUDA_ERROR_LAUNCH_FAILED"),
    (720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"),
    (721, "CUDA_ERROR_TENSOR_MEMORY_LEAK"),
    (800, "CUDA_ERROR_NOT_PERMITTED"),
    (801, "CUDA_ERROR_NOT_SUPPORTED"),
    (802, "CUDA_ERROR_SYSTEM_NOT_READY"),
    (803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"),
    (804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"),
    (805, "CUDA_ERROR_MPS_CONNECTION_FAILED"),
    (806, "CUDA_ERROR_MPS_RPC_FAILURE"),
    (807, "CUDA_ERROR_MPS_SERVER_NOT_READY"),
    (808, "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED"),
    (809, "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED"),
    (810, "CUDA_ERROR_MPS_CLIENT_TERMINATED"),
    (811, "CUDA_ERROR_CDP_NOT_SUPPORTED"),
    (812, "CUDA_ERROR_CDP_VERSION_MISMATCH"),
    (900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"),
    (901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"),
    (902, "CUDA_ERROR_STREAM_CAPTURE_MERGE"),
    (903, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED"),
    (904, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED"),
    (905, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION"),
    (906, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT"),
    (907, "CUDA_ERROR_CAPTURED_EVENT"),
    (908, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD"),
    (909, "CUDA_ERROR_TIMEOUT"),
    (910, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE"),
    (911, "CUDA_ERROR_EXTERNAL_DEVICE"),
    (912, "CUDA_ERROR_INVALID_CLUSTER_SIZE"),
    (913, "CUDA_ERROR_FUNCTION_NOT_LOADED"),
    (914, "CUDA_ERROR_INVALID_RESOURCE_TYPE"),
    (915, "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION"),
    (916, "CUDA_ERROR_KEY_ROTATION"),
    (999, "CUDA_ERROR_UNKNOWN"),
];

#[test]
fn every_cuda_12_9_code_has_its_name_and_a_string() {
    for (code, want) in CUDA_12_9_CODES {
        let (mut n, mut s): (*const c_char, *const c_char) = (null(), null());
        // SAFETY: valid out-pointers; the strings are static.
        unsafe {
            ok(cu::cuGetErrorName(code, &mut n));
            ok(cu::cuGetErrorString(code, &mut s));
            assert_eq!(CStr::from_ptr(n).to_str().unwrap(), want);
            assert!(!CStr::from_ptr(s).to_bytes().is_empty(), "{want}");
        }
    }
    let mut n: *const c_char = std::ptr::dangling();
    // SAFETY: a valid out-pointer.
    unsafe {
        is(cu::cuGetErrorName(12345, &mut n), CUDA_ERROR_INVALID_VALUE);
        assert!(n.is_null());
    }
}

#[test]
fn mem_free_of_zero_succeeds_with_a_context() {
    // SAFETY: no pointer arguments.
    unsafe {
        init();
        // A test thread starts with no current context.
        assert!(!current_is_set());
        is(cu::cuMemFree_v2(0), CUDA_ERROR_INVALID_CONTEXT);
        let _c = TestCtx::new();
        ok(cu::cuMemFree_v2(0));
        ok(cu::cuMemFree_v2(0));
    }
}

/// Whether the calling thread has a current context.
fn current_is_set() -> bool {
    let mut c = CUcontext::default();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cu::cuCtxGetCurrent(&mut c) });
    !c.0.is_null()
}

#[test]
fn host_mapping_and_unified_addressing_are_both_off() {
    init();
    let (mut map, mut uva) = (-1, -1);
    // SAFETY: valid out-pointers.
    unsafe {
        ok(cu::cuDeviceGetAttribute(&mut map, 19, 0));
        ok(cu::cuDeviceGetAttribute(&mut uva, 41, 0));
    }
    assert_eq!((map, uva), (0, 0));
}

#[test]
fn a_peer_copy_on_the_default_stream_is_accepted() {
    let a = TestCtx::new();
    let pa = alloc(16);
    ok(htod(pa, &[1u32, 2, 3, 4]));
    let b = TestCtx::new();
    let pb = alloc(16);
    ok(htod(pb, &[0u32; 4]));
    for s in [0usize, 1, 2] {
        // SAFETY: device addresses of the two contexts; handle values.
        ok(unsafe {
            cu::cuMemcpyPeerAsync(
                pb,
                b.0,
                pa,
                a.0,
                16,
                CUstream(std::ptr::without_provenance_mut(s)),
            )
        });
        ok(ctx_sync());
        assert_eq!(read_u32(pb, 4), [1, 2, 3, 4]);
        ok(htod(pb, &[0u32; 4]));
    }
    // From a third context current, onto the destination's default stream.
    let _c = TestCtx::new();
    // SAFETY: as above.
    ok(unsafe { cu::cuMemcpyPeerAsync(pb, b.0, pa, a.0, 16, CUstream::default()) });
    b.bind();
    ok(ctx_sync());
    assert_eq!(read_u32(pb, 4), [1, 2, 3, 4]);
}

#[test]
fn pointer_attributes_at_once_and_null_values_for_unknown_addresses() {
    let c = TestCtx::new();
    let p = alloc(300);
    let (mut ctx, mut kind, mut base, mut size, mut ordinal) =
        (CUcontext::default(), 0u32, 0u64, 0usize, -5i32);
    let attrs = [1u32, 2, 11, 12, 9];
    let mut data: [*mut c_void; 5] = [
        (&raw mut ctx).cast(),
        (&raw mut kind).cast(),
        (&raw mut base).cast(),
        (&raw mut size).cast(),
        (&raw mut ordinal).cast(),
    ];
    // SAFETY: five attributes, each with a buffer of its type.
    unsafe {
        ok(cu::cuPointerGetAttributes(
            5,
            attrs.as_ptr(),
            data.as_mut_ptr(),
            p + 17,
        ));
        assert_eq!((ctx, kind, base, size, ordinal), (c.0, 2, p, 300, 0));
        // An address the driver does not know: no error, null values.
        ok(cu::cuPointerGetAttributes(
            5,
            attrs.as_ptr(),
            data.as_mut_ptr(),
            0x1000,
        ));
        assert_eq!(
            (ctx, kind, base, size, ordinal),
            (CUcontext::default(), 0, 0, 0, -1)
        );
        // ... where the single-attribute form refuses it.
        is(
            cu::cuPointerGetAttribute(data[1], 2, 0x1000),
            CUDA_ERROR_INVALID_VALUE,
        );
        // Attributes not answered, null arrays, a null slot: refused, and
        // nothing written.
        kind = 77;
        let other = [2u32, 5];
        is(
            cu::cuPointerGetAttributes(2, other.as_ptr(), data[1..].as_mut_ptr(), p),
            CUDA_ERROR_INVALID_VALUE,
        );
        assert_eq!(kind, 77);
        is(
            cu::cuPointerGetAttributes(1, null(), data.as_mut_ptr(), p),
            CUDA_ERROR_INVALID_VALUE,
        );
        let mut holes: [*mut c_void; 2] = [data[1], null_mut()];
        is(
            cu::cuPointerGetAttributes(2, [2u32, 2].as_ptr(), holes.as_mut_ptr(), p),
            CUDA_ERROR_INVALID_VALUE,
        );
        assert_eq!(kind, 77);
    }
}

#[test]
fn per_thread_variants_use_the_per_thread_default_stream() {
    let _c = TestCtx::new();
    let p = alloc(256);
    ok(htod(p, &[1u32; 64]));
    ok(ctx_sync());
    // A fill queued by the `_ptsz` variant on "stream 0" lands on the
    // per-thread stream (a query of that stream sees it pending), and
    // synchronising the per-thread stream runs it.
    // SAFETY: a device address.
    ok(unsafe { cu::cuMemsetD32Async_ptsz(p, 7, 64, CUstream::default()) });
    let mut st = 9u32;
    // SAFETY: a valid out-pointer.
    ok(unsafe { cu::cuStreamIsCapturing_ptsz(CUstream::default(), &mut st) });
    assert_eq!(st, 0);
    // SAFETY: no pointers.
    is(
        unsafe { cu::cuStreamQuery(CUstream(std::ptr::without_provenance_mut(2))) },
        CUDA_ERROR_NOT_READY,
    );
    // SAFETY: no pointers.
    ok(unsafe { cu::cuStreamSynchronize_ptsz(CUstream::default()) });
    assert_eq!(read_u32(p, 64), vec![7; 64]);
    // The `_ptds` synchronous fill goes to the per-thread stream as well:
    // a query of the per-thread stream sees it pending.
    // SAFETY: a device address.
    ok(unsafe { cu::cuMemsetD32_v2_ptds(p, 8, 64) });
    // SAFETY: no pointers.
    is(
        unsafe { cu::cuStreamQuery(CUstream(std::ptr::without_provenance_mut(2))) },
        CUDA_ERROR_NOT_READY,
    );
    // An explicit CU_STREAM_LEGACY stays the legacy stream.
    // SAFETY: a device address.
    ok(unsafe {
        cu::cuMemsetD32Async_ptsz(p, 9, 64, CUstream(std::ptr::without_provenance_mut(1)))
    });
    // SAFETY: no pointers.
    ok(unsafe { cu::cuStreamSynchronize(CUstream(std::ptr::without_provenance_mut(1))) });
    assert_eq!(read_u32(p, 64), vec![9; 64]);
}
