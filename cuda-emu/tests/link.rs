//! The JIT linker for PTX inputs (`cuLink*`) through the C ABI.

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use ptxsmith_cuda_emu::exports as cu;

mod common;
use common::*;

const PTX: u32 = 1;

fn create(opts: &mut [u32], vals: &mut [*mut c_void]) -> *mut c_void {
    let mut st = null_mut();
    // SAFETY: arrays of the count given; a valid out-pointer.
    ok(unsafe {
        cu::cuLinkCreate_v2(
            opts.len() as u32,
            opts.as_mut_ptr(),
            vals.as_mut_ptr(),
            &mut st,
        )
    });
    st
}

fn add(st: *mut c_void, ty: u32, text: &str) -> CUresult {
    let mut bytes = text.as_bytes().to_vec();
    // SAFETY: `bytes.len()` readable bytes; no options.
    unsafe {
        cu::cuLinkAddData_v2(
            st,
            ty,
            bytes.as_mut_ptr().cast(),
            bytes.len(),
            c"input".as_ptr(),
            0,
            null_mut(),
            null_mut(),
        )
    }
}

#[test]
fn one_ptx_input_links_to_a_loadable_image() {
    let _c = TestCtx::new();
    let st = create(&mut [], &mut []);
    ok(add(st, PTX, EMU_PTX));
    let (mut img, mut size) = (null_mut(), 0usize);
    // SAFETY: valid out-pointers.
    ok(unsafe { cu::cuLinkComplete(st, &mut img, &mut size) });
    assert_eq!(size, EMU_PTX.len() + 1);
    let mut m = CUmodule::default();
    // SAFETY: the linked image, valid until cuLinkDestroy.
    ok(unsafe { cu::cuModuleLoadData(&mut m, img) });
    let f = function(m, "fill").unwrap();
    let p = alloc(64 * 4);
    ok(launch(
        f,
        1,
        64,
        0,
        CUstream::default(),
        &[Arg::U64(p), Arg::U32(64), Arg::U32(1)],
    ));
    assert_eq!(read_u32(p, 64), (1..65).collect::<Vec<u32>>());
    // A second input, or one after completion, is not supported.
    is(add(st, PTX, EMU_PTX), CUDA_ERROR_NOT_SUPPORTED);
    // SAFETY: handle values.
    unsafe {
        ok(cu::cuLinkDestroy(st));
        is(cu::cuLinkDestroy(st), CUDA_ERROR_INVALID_HANDLE);
        is(
            cu::cuLinkComplete(st, &mut img, &mut size),
            CUDA_ERROR_INVALID_HANDLE,
        );
    }
}

#[test]
fn link_inputs_are_checked_when_added() {
    let _c = TestCtx::new();
    // The error log goes to the buffer given at cuLinkCreate.
    let mut log = vec![0u8; 4096];
    let mut opts = [5u32, 6];
    let mut vals = [
        log.as_mut_ptr().cast::<c_void>(),
        std::ptr::without_provenance_mut(log.len()),
    ];
    let st = create(&mut opts, &mut vals);
    is(add(st, PTX, UNKNOWN_PTX), CUDA_ERROR_INVALID_PTX);
    let text = String::from_utf8_lossy(&log[..log.iter().position(|&b| b == 0).unwrap()]);
    assert!(!text.is_empty(), "error log written");
    is(add(st, 0, EMU_PTX), CUDA_ERROR_NOT_SUPPORTED);
    is(add(st, 2, EMU_PTX), CUDA_ERROR_NOT_SUPPORTED);
    is(add(st, 9, EMU_PTX), CUDA_ERROR_INVALID_VALUE);
    let (mut img, mut size) = (null_mut(), 0usize);
    // SAFETY: valid out-pointers; nothing added yet.
    is(
        unsafe { cu::cuLinkComplete(st, &mut img, &mut size) },
        CUDA_ERROR_INVALID_VALUE,
    );
    // SAFETY: a missing file.
    is(
        unsafe {
            cu::cuLinkAddFile_v2(
                st,
                PTX,
                c"/nonexistent.ptx".as_ptr(),
                0,
                null_mut(),
                null_mut(),
            )
        },
        301,
    );
    let path = std::env::temp_dir().join(format!("ptxsmith-emu-link-{}.ptx", std::process::id()));
    std::fs::write(&path, EMU_PTX).unwrap();
    let cpath = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a readable file path.
    ok(unsafe { cu::cuLinkAddFile_v2(st, PTX, cpath.as_ptr(), 0, null_mut(), null_mut()) });
    std::fs::remove_file(&path).unwrap();
    // A second PTX input before completion: not supported.
    is(add(st, PTX, EMU_PTX), CUDA_ERROR_NOT_SUPPORTED);
    // SAFETY: valid out-pointers.
    ok(unsafe { cu::cuLinkComplete(st, &mut img, &mut size) });
    // SAFETY: a handle value.
    ok(unsafe { cu::cuLinkDestroy(st) });
    // No context: cuLinkCreate is refused.
    let rc = std::thread::spawn(|| {
        let mut st = null_mut();
        // SAFETY: a valid out-pointer.
        unsafe { cu::cuLinkCreate_v2(0, null_mut(), null_mut(), &mut st) }
    })
    .join()
    .unwrap();
    is(rc, CUDA_ERROR_INVALID_CONTEXT);
    // SAFETY: null out-pointer / data.
    unsafe {
        is(
            cu::cuLinkCreate_v2(0, null_mut(), null_mut(), null_mut()),
            CUDA_ERROR_INVALID_VALUE,
        );
        let st = create(&mut [], &mut []);
        is(
            cu::cuLinkAddData_v2(st, PTX, null_mut(), 10, null(), 0, null_mut(), null_mut()),
            CUDA_ERROR_INVALID_VALUE,
        );
        ok(cu::cuLinkDestroy(st));
    }
}
