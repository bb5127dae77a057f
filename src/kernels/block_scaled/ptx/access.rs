//! How a lane of the block-scaled kernels reads and writes its
//! [`ELEMS_PER_LANE`] consecutive elements: `x`/`y` as [`GROUPS`] 16-byte
//! vectors, the codes as one 16-byte (FP8) or 8-byte (FP4) vector when the
//! launch code says the row length and the buffers allow it (`wide`), a
//! 32-bit (FP8) or 16-bit (FP4) access per group of four when only `K %
//! 4 = 0` and the group alignment hold (`vec`), and element by element
//! with bounds checks otherwise. Nothing is read or written past `K`.

use super::{ELEMS_PER_LANE, Lane};
use crate::dsl::types::{F32, Pred, Reg, U8, U16, U32, U64};
use crate::dsl::{Cmp, GlobalPtr, KernelBuilder};
use crate::kernels::block_scaled::host::Format;

/// Groups of four elements per lane.
pub(super) const GROUPS: usize = (ELEMS_PER_LANE / 4) as usize;

/// Bit 0 of the kernels' `vec` argument: `K % 4 = 0`, `x`/`y` 16-byte and
/// the codes 4-byte (FP8) or 2-byte (FP4) aligned.
pub const VEC: u32 = 1;
/// Bit 1 of the kernels' `vec` argument: also `K % ELEMS_PER_LANE = 0` and
/// the codes 16-byte (FP8) or 8-byte (FP4) aligned, so a lane's codes are
/// one vector.
pub const WIDE: u32 = 2;

/// The access paths a launch allows (from its `vec` argument).
#[derive(Clone, Copy)]
pub(super) struct Access {
    pub vec: Reg<Pred>,
    pub wide: Reg<Pred>,
}

impl Access {
    pub fn of(b: &mut KernelBuilder, flags: Reg<U32>) -> Access {
        let v = b.and(flags, VEC);
        let vec = b.setp(Cmp::Ne, v, 0u32);
        let w = b.and(flags, WIDE);
        let wide = b.setp(Cmp::Ne, w, 0u32);
        Access { vec, wide }
    }
}

/// The element index (in `x`/`y`) of the lane's first element.
fn elem_offset(b: &mut KernelBuilder, ln: &Lane, k: Reg<U32>) -> Reg<U64> {
    let start = b.mul_wide_u32(ln.row, k);
    let kin64 = b.u32_to_u64(ln.kin);
    b.add(start, kin64)
}

/// The bounds-checked access runs, one helper for every width: for each of
/// the lane's `count` accesses `j`, whose first element is `kin + width · j`
/// (`width` elements an access: 4 for a group, 2 for an FP4 byte, 1 for an
/// element), emit `body(b, j, first)` under `first < k`.
fn each_access(
    b: &mut KernelBuilder,
    ln: &Lane,
    k: Reg<U32>,
    count: u32,
    width: u32,
    mut body: impl FnMut(&mut KernelBuilder, u32, Reg<U32>),
) {
    for j in 0..count {
        let first = b.add(ln.kin, width * j);
        let ok = b.setp(Cmp::Lt, first, k);
        b.if_(ok, |b| body(b, j, first));
    }
}

/// Load the lane's elements (zeros past `k` or on idle lanes).
pub(super) fn load_lane(
    b: &mut KernelBuilder,
    x: GlobalPtr<F32>,
    ln: &Lane,
    k: Reg<U32>,
    acc: Access,
) -> [Reg<F32>; ELEMS_PER_LANE as usize] {
    let xs = [0; ELEMS_PER_LANE as usize].map(|_| b.mov(0.0f32));
    let in_row = b.setp(Cmp::Lt, ln.kin, k);
    let go = b.pand(ln.active, in_row);
    b.if_(go, |b| {
        let e = elem_offset(b, ln, k);
        let p = b.offset64(x, e);
        b.if_else(
            acc.vec,
            |b| {
                each_access(b, ln, k, GROUPS as u32, 4, |b, g, _| {
                    let v = b.ld_global_nc_v4(p, 4 * g as i32);
                    for (i, vi) in v.into_iter().enumerate() {
                        b.assign(xs[4 * g as usize + i], vi);
                    }
                });
            },
            |b| {
                each_access(b, ln, k, ELEMS_PER_LANE, 1, |b, i, _| {
                    let v = b.ld_global_nc(p, i as i32);
                    b.assign(xs[i as usize], v);
                });
            },
        );
    });
    xs
}

/// Store the lane's results `y` (nothing past `k`).
pub(super) fn store_lane(
    b: &mut KernelBuilder,
    y_ptr: GlobalPtr<F32>,
    ln: &Lane,
    k: Reg<U32>,
    acc: Access,
    y: [Reg<F32>; ELEMS_PER_LANE as usize],
) {
    let in_row = b.setp(Cmp::Lt, ln.kin, k);
    b.if_(in_row, |b| {
        let e = elem_offset(b, ln, k);
        let yp = b.offset64(y_ptr, e);
        b.if_else(
            acc.vec,
            |b| {
                each_access(b, ln, k, GROUPS as u32, 4, |b, g, _| {
                    let g = g as usize;
                    let v = [y[4 * g], y[4 * g + 1], y[4 * g + 2], y[4 * g + 3]];
                    b.st_global_v4(yp, 4 * g as i32, v);
                });
            },
            |b| {
                each_access(b, ln, k, ELEMS_PER_LANE, 1, |b, i, _| {
                    b.st_global(yp, i as i32, y[i as usize]);
                });
            },
        );
    });
}

/// Byte offset of the lane's first code: `row · row_bytes + kin` (FP8) or
/// `+ kin / 2` (FP4, `row_bytes = ⌈K/2⌉`).
fn code_offset(b: &mut KernelBuilder, f: Format, ln: &Lane, k: Reg<U32>) -> Reg<U64> {
    let (row_bytes, within) = if f.is_fp4() {
        let rb = b.add(k, 1u32);
        (b.shr(rb, 1u32), b.shr(ln.kin, 1u32))
    } else {
        (k, ln.kin)
    };
    let start = b.mul_wide_u32(ln.row, row_bytes);
    let within = b.u32_to_u64(within);
    b.add(start, within)
}

/// Store a lane's codes: `w[g]` holds group `g`'s (see
/// [`super::encode_lane`]); nothing past `k`. An odd `K`'s last FP4 byte
/// gets `0x0` in its high nibble (the padding's code, also in a NaN block).
pub(super) fn store_codes(
    b: &mut KernelBuilder,
    f: Format,
    ln: &Lane,
    k: Reg<U32>,
    acc: Access,
    codes: GlobalPtr<U8>,
    w: [Reg<U32>; GROUPS],
) {
    let in_row = b.setp(Cmp::Lt, ln.kin, k);
    b.if_(in_row, |b| {
        let off = code_offset(b, f, ln, k);
        let cp = b.offset64(codes, off);
        b.if_else(
            acc.wide,
            |b| {
                let p32: GlobalPtr<U32> = cp.cast();
                if f.is_fp4() {
                    let pair = |b: &mut KernelBuilder, lo: Reg<U32>, hi: Reg<U32>| {
                        let hi = b.shl(hi, 16u32);
                        b.or(lo, hi)
                    };
                    let v0 = pair(b, w[0], w[1]);
                    let v1 = pair(b, w[2], w[3]);
                    b.st_global_v2(p32, 0, [v0, v1]);
                } else {
                    b.st_global_v4(p32, 0, w);
                }
            },
            |b| {
                b.if_else(
                    acc.vec,
                    |b| {
                        each_access(b, ln, k, GROUPS as u32, 4, |b, g, _| {
                            let wg = w[g as usize];
                            if f.is_fp4() {
                                let p16: GlobalPtr<U16> = cp.cast();
                                b.st_global(p16, g as i32, wg);
                            } else {
                                let p32: GlobalPtr<U32> = cp.cast();
                                b.st_global(p32, g as i32, wg);
                            }
                        });
                    },
                    |b| store_codes_bytes(b, f, ln, k, cp, w),
                );
            },
        );
    });
}

/// [`store_codes`]' element path: one byte at a time, bounds-checked.
fn store_codes_bytes(
    b: &mut KernelBuilder,
    f: Format,
    ln: &Lane,
    k: Reg<U32>,
    cp: GlobalPtr<U8>,
    w: [Reg<U32>; GROUPS],
) {
    if f.is_fp4() {
        each_access(b, ln, k, 2 * GROUPS as u32, 2, |b, j, first| {
            let byte = b.bfe(w[(j / 2) as usize], 8 * (j % 2), 8u32);
            let second = b.add(first, 1u32);
            let lone = b.setp(Cmp::Ge, second, k);
            let low = b.and(byte, 0xFu32);
            let byte = b.selp(lone, low, byte);
            b.st_global(cp, j as i32, byte);
        });
    } else {
        each_access(b, ln, k, ELEMS_PER_LANE, 1, |b, j, _| {
            let byte = b.bfe(w[(j / 4) as usize], 8 * (j % 4), 8u32);
            b.st_global(cp, j as i32, byte);
        });
    }
}

/// Load a lane's codes as [`store_codes`] writes them: `w[g]` group `g`'s
/// (zeros past `k` or on idle lanes).
pub(super) fn load_codes(
    b: &mut KernelBuilder,
    f: Format,
    ln: &Lane,
    k: Reg<U32>,
    acc: Access,
    codes: GlobalPtr<U8>,
) -> [Reg<U32>; GROUPS] {
    let w = [0; GROUPS].map(|_| b.mov(0u32));
    let in_row = b.setp(Cmp::Lt, ln.kin, k);
    let go = b.pand(ln.active, in_row);
    b.if_(go, |b| {
        let off = code_offset(b, f, ln, k);
        let cp = b.offset64(codes, off);
        b.if_else(
            acc.wide,
            |b| {
                let p32: GlobalPtr<U32> = cp.cast();
                if f.is_fp4() {
                    let v = b.ld_global_nc_v2(p32, 0);
                    for (i, &vi) in v.iter().enumerate() {
                        let lo = b.and(vi, 0xFFFFu32);
                        let hi = b.shr(vi, 16u32);
                        b.assign(w[2 * i], lo);
                        b.assign(w[2 * i + 1], hi);
                    }
                } else {
                    let v = b.ld_global_nc_v4(p32, 0);
                    for (wi, vi) in w.iter().zip(v) {
                        b.assign(*wi, vi);
                    }
                }
            },
            |b| {
                b.if_else(
                    acc.vec,
                    |b| {
                        each_access(b, ln, k, GROUPS as u32, 4, |b, g, _| {
                            let v = if f.is_fp4() {
                                let p16: GlobalPtr<U16> = cp.cast();
                                b.ld_global_nc(p16, g as i32)
                            } else {
                                let p32: GlobalPtr<U32> = cp.cast();
                                b.ld_global_nc(p32, g as i32)
                            };
                            b.assign(w[g as usize], v);
                        });
                    },
                    |b| {
                        // FP4: two codes a byte, two bytes a group.
                        let (per_group, step) = if f.is_fp4() { (2u32, 2u32) } else { (4, 1) };
                        each_access(b, ln, k, per_group * GROUPS as u32, step, |b, j, _| {
                            let wg = w[(j / per_group) as usize];
                            let v = b.ld_global_nc(cp, j as i32);
                            let v = b.shl(v, 8 * (j % per_group));
                            let next = b.or(wg, v);
                            b.assign(wg, next);
                        });
                    },
                );
            },
        );
    });
    w
}
