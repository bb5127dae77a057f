//! Hostile calls: `cuTensorMapEncodeTiled` (null and misaligned maps and
//! arrays, ranks, enum codes and sizes past what the driver documents).
//! A null global address is not among them: the driver documents only its
//! alignment, and encoding reads no memory.

use super::*;

/// A tiled map's arguments, each hostile case changing one of them from a
/// valid 2D f32 map (64 × 64 elements, 256-byte rows, a 32 × 32 box).
#[derive(Clone, Copy)]
struct Args {
    map: usize,
    dtype: u32,
    rank: u32,
    addr: usize,
    dims: usize,
    strides: usize,
    boxes: usize,
    elems: usize,
    interleave: u32,
    swizzle: u32,
    promotion: u32,
    fill: u32,
}

/// 64-byte aligned, writable room for one map and a misaligned one.
#[repr(C, align(64))]
struct Room([u8; 192]);

/// The hostile calls of `cuTensorMapEncodeTiled` (none for other exports).
pub fn cases<'a>(name: &'a str, _e: &'a Env) -> Vec<Case<'a>> {
    let mut v: Vec<Case<'a>> = Vec::new();
    if name != "cuTensorMapEncodeTiled" {
        return v;
    }
    let room = Box::leak(Box::new(Room([0; 192]))).0.as_mut_ptr() as usize;
    let leak64 = |x: Vec<u64>| Box::leak(x.into_boxed_slice()).as_ptr() as usize;
    let leak32 = |x: Vec<u32>| Box::leak(x.into_boxed_slice()).as_ptr() as usize;
    let ok = Args {
        map: room,
        dtype: 7, // FLOAT32
        rank: 2,
        addr: 0x1000_0000,
        dims: leak64(vec![64, 64]),
        strides: leak64(vec![256]),
        boxes: leak32(vec![32, 32]),
        elems: leak32(vec![1, 1]),
        interleave: 0,
        swizzle: 0,
        promotion: 0,
        fill: 0,
    };
    let call = move |a: Args| -> CUresult {
        // SAFETY: the hostile call under test; every pointer is null,
        // misaligned (refused before use) or a leaked array of the length
        // the rank asks for.
        unsafe {
            cu::cuTensorMapEncodeTiled(
                a.map as *mut c_void,
                a.dtype,
                a.rank,
                a.addr as *mut c_void,
                a.dims as *const u64,
                a.strides as *const u64,
                a.boxes as *const u32,
                a.elems as *const u32,
                a.interleave,
                a.swizzle,
                a.promotion,
                a.fill,
            )
        }
    };
    let mut add = |label: String, a: Args| {
        v.push((label, Box::new(move || call(a))));
    };
    add("null map".into(), Args { map: 0, ..ok });
    add(
        "map not 64-byte aligned".into(),
        Args {
            map: room + 8,
            ..ok
        },
    );
    for rank in [0, 6, u32::MAX] {
        add(format!("rank {rank}"), Args { rank, ..ok });
    }
    add("null dims".into(), Args { dims: 0, ..ok });
    add("null strides".into(), Args { strides: 0, ..ok });
    add("null box".into(), Args { boxes: 0, ..ok });
    add("null element strides".into(), Args { elems: 0, ..ok });
    add(
        "address not 16-byte aligned".into(),
        Args {
            addr: 0x1000_0004,
            ..ok
        },
    );
    add("data type 99".into(), Args { dtype: 99, ..ok });
    add(
        "interleave 99".into(),
        Args {
            interleave: 99,
            ..ok
        },
    );
    add("swizzle 99".into(), Args { swizzle: 99, ..ok });
    add(
        "promotion 99".into(),
        Args {
            promotion: 99,
            ..ok
        },
    );
    add("fill 99".into(), Args { fill: 99, ..ok });
    add(
        "a zero dimension".into(),
        Args {
            dims: leak64(vec![0, 64]),
            ..ok
        },
    );
    add(
        "a dimension past 2^32".into(),
        Args {
            dims: leak64(vec![64, 1 << 33]),
            ..ok
        },
    );
    add(
        "stride not a multiple of 16".into(),
        Args {
            strides: leak64(vec![260]),
            ..ok
        },
    );
    add(
        "stride past 2^40".into(),
        Args {
            strides: leak64(vec![1 << 41]),
            ..ok
        },
    );
    add(
        "box 0".into(),
        Args {
            boxes: leak32(vec![0, 32]),
            ..ok
        },
    );
    add(
        "box 300".into(),
        Args {
            boxes: leak32(vec![32, 300]),
            ..ok
        },
    );
    add(
        "element stride 0".into(),
        Args {
            elems: leak32(vec![0, 1]),
            ..ok
        },
    );
    add(
        "element stride 9".into(),
        Args {
            elems: leak32(vec![1, 9]),
            ..ok
        },
    );
    // A 128-byte swizzle with a 256-byte inner box row (64 f32s) is refused.
    add(
        "inner box past the swizzle span".into(),
        Args {
            swizzle: 3,
            boxes: leak32(vec![64, 8]),
            ..ok
        },
    );
    v
}
