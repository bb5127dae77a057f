//! `cuTensorMapEncodeTiled` through the C ABI (issue 31): a valid
//! description is written as ptxsmith's private encoding (it decodes to
//! the same description, as `ptxsmith::tensor_map` encodes it); each
//! documented requirement broken (rank, alignment of the map and of the
//! global address, strides, box, swizzle span, enum codes, NaN fill of an
//! integer type) is `CUDA_ERROR_INVALID_VALUE` and leaves the 128 bytes
//! untouched.

use std::ffi::c_void;

use ptxsmith::tensor_map::{Swizzle, TensorDataType, TensorMap, TiledDesc};
use ptxsmith_cuda_emu::exports as cu;

mod common;
use common::*;

#[derive(Clone)]
struct Raw {
    dtype: u32,
    addr: u64,
    dims: Vec<u64>,
    strides: Vec<u64>,
    boxes: Vec<u32>,
    el: Vec<u32>,
    codes: [u32; 4],
}

/// A change to a valid description.
type Edit = Box<dyn Fn(&mut Raw)>;

fn valid() -> Raw {
    Raw {
        dtype: 7,
        addr: 0x7000_0000_1000,
        dims: vec![32, 100],
        strides: vec![256],
        boxes: vec![32, 16],
        el: vec![1, 1],
        codes: [0, 3, 2, 0],
    }
}

fn encode(r: &Raw, map: &mut TensorMap, offset: usize) -> CUresult {
    // SAFETY: `offset` is within the 128 bytes.
    let p = unsafe { map.0.as_mut_ptr().add(offset) };
    // SAFETY: `map` is 128 bytes (with `offset` 0; other offsets are refused
    // before the write); the arrays hold the rank's entries.
    unsafe {
        cu::cuTensorMapEncodeTiled(
            p.cast::<c_void>(),
            r.dtype,
            r.dims.len() as u32,
            r.addr as usize as *mut c_void,
            r.dims.as_ptr(),
            r.strides.as_ptr(),
            r.boxes.as_ptr(),
            r.el.as_ptr(),
            r.codes[0],
            r.codes[1],
            r.codes[2],
            r.codes[3],
        )
    }
}

#[test]
fn encodes_privately_and_refuses_what_the_driver_documents() {
    init();
    let mut m = TensorMap([0xAA; 128]);
    ok(encode(&valid(), &mut m, 0));
    let want = TiledDesc::new(
        TensorDataType::F32,
        0x7000_0000_1000,
        &[32, 100],
        &[256],
        &[32, 16],
    )
    .swizzle(Swizzle::B128)
    .l2_promotion(ptxsmith::tensor_map::L2Promotion::B128);
    assert_eq!(m.decode_private().unwrap(), want);
    assert_eq!(m, TensorMap::encode_private(&want).unwrap());

    let bad: Vec<(&str, Edit)> = vec![
        ("rank 0", Box::new(|r| r.dims.clear())),
        (
            "rank 6",
            Box::new(|r| {
                r.dims = vec![16; 6];
                r.strides = vec![256; 5];
                r.boxes = vec![4; 6];
                r.el = vec![1; 6];
            }),
        ),
        ("address", Box::new(|r| r.addr += 8)),
        ("dim 0", Box::new(|r| r.dims[1] = 0)),
        ("stride", Box::new(|r| r.strides[0] = 264)),
        ("box 257", Box::new(|r| r.boxes[1] = 257)),
        ("box > swizzle span", Box::new(|r| r.codes[1] = 2)),
        ("element stride 9", Box::new(|r| r.el[1] = 9)),
        ("dtype 13", Box::new(|r| r.dtype = 13)),
        ("swizzle 4", Box::new(|r| r.codes[1] = 4)),
        (
            "NaN fill of u32",
            Box::new(|r| {
                r.dtype = 2;
                r.codes[3] = 1;
            }),
        ),
    ];
    for (what, f) in bad {
        let mut r = valid();
        f(&mut r);
        let mut m = TensorMap([0x55; 128]);
        is(encode(&r, &mut m, 0), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(m.0, [0x55; 128], "{what}: the map was written");
    }
    // a map not 64-byte aligned, a null map
    let mut m = TensorMap([0; 128]);
    is(encode(&valid(), &mut m, 16), CUDA_ERROR_INVALID_VALUE);
    let r = valid();
    // SAFETY: a null map is refused before anything is read.
    let code = unsafe {
        cu::cuTensorMapEncodeTiled(
            std::ptr::null_mut(),
            7,
            2,
            std::ptr::null_mut(),
            r.dims.as_ptr(),
            r.strides.as_ptr(),
            r.boxes.as_ptr(),
            r.el.as_ptr(),
            0,
            0,
            0,
            0,
        )
    };
    is(code, CUDA_ERROR_INVALID_VALUE);
}
