//! The staged grad-values kernel (issue 31, speed step): one CTA computes
//! the `B × B` output blocks `gv[s]` of a **group** of [`ValuesTile::slots`]
//! consecutive slots of one block row `r` (grid-stride over the groups),
//! each block's reduction running over the tokens `n` in the contract's
//! order. The slots of a group share their `gy[:, r]` operand, so each
//! token tile of it is staged once for all of them.
//!
//! # Data movement
//! The tokens go in CTA tiles of [`values_tile`] rows (a power of two that
//! divides [`N_CHUNK`], so a tile never straddles two N-chunks). Per tile
//! the CTA stages into shared memory with `cp.async.cg` (16 bytes a copy,
//! one commit group per tile), double buffered as in [`super::grouped`]:
//! the **gy tile** `gy[n][r·B ..]` once, and for each non-empty slot `s`
//! of the group (`c = col[s]`) its **x tile** `x[n][c·B ..]`, each `tokens
//! × B` elements (an empty slot, or one past `K` in a row's last group,
//! stages nothing: a CTA-uniform branch). A tile wholly below `N` copies
//! from running row pointers (per group, the thread's first row; per
//! copy, a fixed stride). The ragged last tile copies rows `n ≥ N` with
//! `src_size` 0 (zero-filled, `+0` operands, their source address clamped
//! to row `N − 1`), which is the host model's padding of the last MMA
//! chunk; MMA chunks that start at or past `N` are skipped (a CTA-uniform
//! branch), as the model never runs them. Rows are padded by 16 bytes
//! (bf16/f16: an odd number of 16-byte units, so an `ldmatrix` phase hits
//! 8 distinct bank groups) or 32 bytes (tf32: the fragments'
//! `ld.shared.f32` of 4 token rows × 8 features hit 32 distinct banks).
//!
//! # MMA orientation
//! `A[i][e] = gy[n0 + e][r·B + i]` is stored token-major, i.e. `A`
//! transposed: `ldmatrix.x4.trans`; `B[e][j] = x[n0 + e][c·B + j]` is
//! row-major `B`: `ldmatrix.x4.trans` as well. tf32 cannot transpose
//! 32-bit elements with `ldmatrix`, so its fragments are `ld.shared.f32`
//! then `cvt.rna.tf32.f32`. Each output element is the contract's chain:
//! per N-chunk a partial from `+0.0`, one `mma.sync` per MMA chunk of `q`
//! tokens ascending, partials joined by `add.rn` in ascending order, all
//! in registers.
//!
//! # Warps
//! Where a warp tile of [`ValuesTile::wm`] × [`ValuesTile::wn`] is a
//! whole block (`B` ≤ 32: 32 × 32 or 16 × 16), each warp computes
//! two (`SLOTS_PER_WARP`) slots of the group (groups of 8), or one (groups of
//! 4) where the token tile would otherwise be too short for every thread
//! to stage a 16-byte unit (`B` = 16); at `B` = 64 a group is 2 slots,
//! each split into two warp tiles of 32 × 64. Each lane keeps `(wm/16) ×
//! (wn/8)` fragments of the partial and as many of the sum per slot of its
//! warp. The `A` fragments (gy) are loaded once a chunk and feed the MMAs
//! of every slot of the warp: at `B` = 32 each `A` fragment feeds 8
//! `mma.sync` and each `B` fragment 2. A warp skips the MMAs of its empty
//! slots (a warp-uniform branch). The epilogue stores each lane's two
//! adjacent `j` with one `st.global.v2.f32`; empty slots store `+0.0`
//! without reading anything.

use crate::dsl::types::{F32, MmaInput, Pred, Reg, U32, U64};
use crate::dsl::{Cmp, FragA, FragB, FragC, KernelBuilder, PtxModule};
use crate::error::Result;
use crate::kernels::block_ell::N_CHUNK;
use crate::target::Sm;
use crate::tensor_core::InputFormat;

use super::super::host::TcPrecision;
use super::common::{gptr, ldsm4, log2, sptr, store_block, tf32_operand, token_loop};
use super::shape::Shape;
use super::{GradValuesArgs, GradValuesRegs, THREADS, WARPS, builder, mma_into, name};

/// Static shared memory the staging may use.
const SHARED_MAX: u32 = 48 * 1024;

/// Slots a warp computes where its warp tile is a whole block (`B` ≤ 32):
/// each `A` fragment then feeds the MMAs of every one of them.
const SLOTS_PER_WARP: u32 = 2;

/// The tiling of the staged grad-values kernel of one precision and block
/// size (see the [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValuesTile {
    /// Tokens (rows of `N`) per staged CTA tile.
    pub tokens: u32,
    /// Rows `i` of a warp tile of the output block.
    pub wm: u32,
    /// Columns `j` of a warp tile.
    pub wn: u32,
    /// Consecutive slots of one block row per CTA (a group), sharing the
    /// staged `gy` tiles.
    pub slots: u32,
}

/// The padded pitch in bytes of a staged row of `bs` elements.
pub(super) fn pitch(prec: TcPrecision, bs: u32) -> u32 {
    match prec {
        TcPrecision::Tf32 => bs * 4 + 32,
        _ => bs * 2 + 16,
    }
}

/// The tiling of precision `prec` at block size `bs` (16, 32 or 64):
/// warp tiles of 16 × 16 (`B` = 16) or 32 × 32 (`B` = 32: the whole
/// block; `B` = 64); where a warp tile is the whole block (`B` ≤ 32),
/// two (`SLOTS_PER_WARP`) slots a warp (groups of `WARPS × SLOTS_PER_WARP`
/// slots), or one where the token tile would then be too short for each
/// thread to stage a 16-byte unit of its rows; else one slot a CTA. The
/// tokens: the most (up to [`N_CHUNK`]) whose double-buffered gy tile and
/// x tiles (one a slot) fit 48 KiB of static shared memory.
pub fn values_tile(prec: TcPrecision, bs: u32) -> ValuesTile {
    let w = if bs >= 32 { 32 } else { 16 };
    let pitch = pitch(prec, bs);
    // 16-byte units of a staged row
    let units = bs * if prec == TcPrecision::Tf32 { 4 } else { 2 } / 16;
    let tile = |slots: u32, wn: u32| {
        let per_token = 2 * (1 + slots) * pitch; // tiles × 2 buffers
        let mut tokens = N_CHUNK as u32;
        // headroom for the few bytes the builder may add
        while tokens * per_token > SHARED_MAX - 1024 {
            tokens /= 2;
        }
        ValuesTile {
            tokens,
            wm: w,
            wn,
            slots,
        }
    };
    if w < bs {
        // `B` = 64: two slots a CTA, two warps a slot (32 × 64 each)
        return tile(2, bs);
    }
    let t = tile(WARPS * SLOTS_PER_WARP, w);
    if t.tokens * units >= THREADS {
        t
    } else {
        tile(WARPS, w)
    }
}

/// The shape of a grad-values kernel: the output block's rows `i` are the
/// MMA's rows, its columns `j` the MMA's columns, the tokens its `K`.
fn shape<T: MmaInput>(prec: TcPrecision, bs: u32) -> Shape {
    let t = values_tile(prec, bs);
    let pad = pitch(prec, bs) - bs * if T::FORMAT == InputFormat::Tf32 { 4 } else { 2 };
    Shape::new::<T>(prec, bs, pad, t.tokens, (t.wm, t.wn), false)
}

/// Per-thread constants of the staging and the fragments.
struct Lane {
    /// the thread's first staged row and its 16-byte unit's byte offset
    row0: Reg<U32>,
    /// destinations (buffer 0) of the thread's first copy: the gy tile,
    /// and slot 0's x tile (slot `g`'s at `+ g · xslot`)
    gdst: Reg<U32>,
    xdst: Reg<U32>,
    /// fragment addresses (buffer 0, first chunk, first tile; `b` in the
    /// x tiles of each of the warp's slots)
    a: Reg<U32>,
    b: Vec<Reg<U32>>,
}

/// The per-group sources of the staging: byte offsets of the group's
/// column blocks within a row of gy and of x, plus the thread's unit, and
/// which slots stage an x tile.
struct Src {
    gcol: Reg<U64>,
    /// the thread's first source row of tile 0 (`gcol` plus row `row0`'s
    /// offset, plus the tensor's address): the full tiles' staging adds
    /// the tile's and the copy's row offsets to it
    gbase: Reg<U64>,
    /// per slot of the group: whether it is non-empty, and its `xcol` /
    /// `xbase` (as `gcol` / `gbase`)
    x: Vec<(Reg<Pred>, Reg<U64>, Reg<U64>)>,
}

/// Per-launch byte strides of the staging: `rstep` rows of gy and of x.
struct Steps {
    g: Reg<U64>,
    x: Reg<U64>,
}

/// The kernel's scalar arguments.
struct Io {
    p: GradValuesRegs,
    fin: Reg<U32>,
    fout: Reg<U32>,
    last: Reg<U32>,
}

/// Bytes between two slots' double-buffered x tiles.
fn xslot(sh: &Shape) -> u32 {
    2 * sh.buf()
}

/// Issue the copies of token tile `ti` into buffer `buf`: a tile wholly
/// below `N` copies from running row pointers (no clamp, no `src_size`);
/// the ragged last tile clamps each source row and zero-fills rows `n ≥
/// N` (a CTA-uniform branch). The x tiles of empty slots are skipped.
#[allow(clippy::too_many_arguments)]
fn issue(
    b: &mut KernelBuilder,
    sh: &Shape,
    io: &Io,
    ln: &Lane,
    src: &Src,
    steps: &Steps,
    ti: Reg<U32>,
    buf: Reg<U32>,
) {
    let n0 = b.shl(ti, log2(sh.tokens));
    let off = b.mul_lo(buf, sh.buf());
    let gd = b.add(ln.gdst, off);
    let xd = b.add(ln.xdst, off);
    let rstep = THREADS / sh.cpr;
    let copies = sh.tokens * sh.cpr / THREADS;
    let end = b.add(n0, sh.tokens);
    let full = b.setp(Cmp::Le, end, io.p.n);
    b.if_else(
        full,
        |b| {
            // the running pointers: (tensor's base, its step, destination)
            let tg = b.mul_wide_u32(n0, io.fout);
            let tg = b.shl(tg, log2(sh.e));
            let tx = b.mul_wide_u32(n0, io.fin);
            let tx = b.shl(tx, log2(sh.e));
            let copy_tile = |b: &mut KernelBuilder, base: Reg<U64>, t: Reg<U64>, st, d| {
                let mut p = b.add(base, t);
                for j in 0..copies {
                    if j > 0 {
                        p = b.add(p, st);
                    }
                    let dj = b.add(d, j * rstep * sh.pitch);
                    b.cp_async_cg(sptr::<U32>(dj), gptr(p), None);
                }
            };
            copy_tile(b, src.gbase, tg, steps.g, gd);
            for (g, &(live, _, xbase)) in src.x.iter().enumerate() {
                b.if_(live, |b| {
                    let d = b.add(xd, g as u32 * xslot(sh));
                    copy_tile(b, xbase, tx, steps.x, d);
                });
            }
        },
        |b| ragged(b, sh, io, ln, src, n0, gd, xd),
    );
}

/// The copies of the ragged last token tile (see [`issue`]).
#[allow(clippy::too_many_arguments)]
fn ragged(
    b: &mut KernelBuilder,
    sh: &Shape,
    io: &Io,
    ln: &Lane,
    src: &Src,
    n0: Reg<U32>,
    gd: Reg<U32>,
    xd: Reg<U32>,
) {
    let rstep = THREADS / sh.cpr;
    let copies = sh.tokens * sh.cpr / THREADS;
    let gy = io.p.gy.addr();
    let x = io.p.x.addr();
    // per copy: the clamped source row and the copy's size
    let rows: Vec<_> = (0..copies)
        .map(|j| {
            let row = b.add(n0, ln.row0);
            let row = b.add(row, j * rstep);
            let inside = b.setp(Cmp::Lt, row, io.p.n);
            let size = b.selp(inside, 16u32, 0u32);
            (b.min(row, io.last), size)
        })
        .collect();
    let copy_tile =
        |b: &mut KernelBuilder, width: Reg<U32>, col: Reg<U64>, base: Reg<U64>, d: Reg<U32>| {
            for (j, &(rc, size)) in rows.iter().enumerate() {
                let el = b.mul_wide_u32(rc, width);
                let by = b.shl(el, log2(sh.e));
                let by = b.add(by, col);
                let s = b.add(by, base);
                let dj = b.add(d, j as u32 * rstep * sh.pitch);
                b.cp_async_cg(sptr::<U32>(dj), gptr(s), Some(size.into()));
            }
        };
    // gy[rc][r·B ..]
    copy_tile(b, io.fout, src.gcol, gy, gd);
    // x[rc][c·B ..] of each non-empty slot
    for (g, &(live, xcol, _)) in src.x.iter().enumerate() {
        b.if_(live, |b| {
            let d = b.add(xd, g as u32 * xslot(sh));
            copy_tile(b, io.fin, xcol, x, d);
        });
    }
}

/// The MMAs of token tile `ti` from buffer `buf` into the partials of
/// the warp's slots (`part[k]`, those whose `mine[k]` holds; MMA chunks
/// starting at or past `N` skipped). The `A` fragments (gy) are loaded
/// once for all of the warp's slots.
#[allow(clippy::too_many_arguments)]
fn compute<T: MmaInput>(
    b: &mut KernelBuilder,
    sh: &Shape,
    io: &Io,
    ln: &Lane,
    mine: &[Reg<Pred>],
    part: &[Vec<Vec<FragC>>],
    ti: Reg<U32>,
    buf: Reg<U32>,
) {
    let off = b.mul_lo(buf, sh.buf());
    let abase = b.add(ln.a, off);
    let bbase: Vec<Reg<U32>> = ln.b.iter().map(|&p| b.add(p, off)).collect();
    let n0 = b.shl(ti, log2(sh.tokens));
    for kc in 0..sh.tokens / sh.q {
        let start = b.add(n0, kc * sh.q);
        let run = b.setp(Cmp::Lt, start, io.p.n);
        b.if_(run, |b| {
            let fa = if sh.fmt == InputFormat::Tf32 {
                frags_a_tf32::<T>(b, sh, abase, kc)
            } else {
                frags_a_16::<T>(b, sh, abase, kc)
            };
            for ((&live, &bb), part) in mine.iter().zip(&bbase).zip(part) {
                b.if_(live, |b| {
                    let fb = if sh.fmt == InputFormat::Tf32 {
                        frags_b_tf32::<T>(b, sh, bb, kc)
                    } else {
                        frags_b_16::<T>(b, sh, bb, kc)
                    };
                    for (mi, a) in fa.iter().enumerate() {
                        for (ni, bf) in fb.iter().enumerate() {
                            mma_into(b, *a, *bf, part[mi][ni]);
                        }
                    }
                });
            }
        });
    }
}

/// bf16/f16 `A` fragments of MMA chunk `kc`: `ldmatrix.x4.trans` (as
/// the `B` fragments).
pub(super) fn frags_a_16<T: MmaInput>(
    b: &mut KernelBuilder,
    sh: &Shape,
    abase: Reg<U32>,
    kc: u32,
) -> Vec<FragA<T>> {
    let krow = kc * 16 * sh.pitch;
    (0..sh.mt)
        .map(|mi| {
            let p = b.add(abase, krow + mi * 16 * sh.e);
            FragA {
                regs: ldsm4::<T>(b, p, true),
            }
        })
        .collect()
}

/// bf16/f16 `B` fragments of MMA chunk `kc` (see [`frags_a_16`]).
pub(super) fn frags_b_16<T: MmaInput>(
    b: &mut KernelBuilder,
    sh: &Shape,
    bbase: Reg<U32>,
    kc: u32,
) -> Vec<FragB<T>> {
    let krow = kc * 16 * sh.pitch;
    let mut fb = Vec::new();
    for np in 0..sh.nt / 2 {
        let p = b.add(bbase, krow + np * 16 * sh.e);
        let [r0, r1, r2, r3] = ldsm4::<T>(b, p, true);
        fb.push(FragB { regs: [r0, r1] });
        fb.push(FragB { regs: [r2, r3] });
    }
    fb
}

/// One tf32 fragment register: `ld.shared.f32` and `cvt.rna.tf32.f32`
/// (fragments of MMA chunk `kc`: `a_r = gy[k0 + t + 4·(r/2)][i0 + g + 8·(r%2)]`,
/// `b_r = x[k0 + t + 4·r][j0 + g]`).
fn load_tf32<T: MmaInput>(b: &mut KernelBuilder, base: Reg<U32>, off: u32) -> Reg<T> {
    let p = b.add(base, off);
    let v = b.ld_shared(sptr::<F32>(p), 0);
    let u = b.f32_bits(v);
    tf32_operand::<T>(b, u)
}

/// tf32 `A` fragments of MMA chunk `kc` (see [`load_tf32`]).
pub(super) fn frags_a_tf32<T: MmaInput>(
    b: &mut KernelBuilder,
    sh: &Shape,
    abase: Reg<U32>,
    kc: u32,
) -> Vec<FragA<T>> {
    (0..sh.mt)
        .map(|mi| FragA {
            regs: [0u32, 1, 2, 3].map(|r| {
                let off = (kc * 8 + 4 * (r >> 1)) * sh.pitch + (mi * 16 + 8 * (r & 1)) * 4;
                load_tf32::<T>(b, abase, off)
            }),
        })
        .collect()
}

/// tf32 `B` fragments of MMA chunk `kc` (see [`load_tf32`]).
pub(super) fn frags_b_tf32<T: MmaInput>(
    b: &mut KernelBuilder,
    sh: &Shape,
    bbase: Reg<U32>,
    kc: u32,
) -> Vec<FragB<T>> {
    (0..sh.nt)
        .map(|ni| FragB {
            regs: [0u32, 1]
                .map(|r| load_tf32::<T>(b, bbase, (kc * 8 + 4 * r) * sh.pitch + ni * 32)),
        })
        .collect()
}

/// `block_ell_tc_grad_values_{p}_b{B}`, staged (see the [module docs](self)).
pub(super) fn grad_values<T: MmaInput>(sm: Sm, prec: TcPrecision, bs: u32) -> Result<PtxModule> {
    let sh = shape::<T>(prec, bs);
    let group = values_tile(prec, bs).slots;
    // warps a slot, slots a warp, and warps along a block's rows `i`
    let wps = (WARPS / group).max(1);
    let spw = (group / WARPS).max(1);
    let warps_m = sh.bs / sh.wm;
    debug_assert_eq!(warps_m * (sh.bs / sh.wn), wps);
    let mut b = builder(&name("grad_values", prec, bs), sm);
    let p = b.params::<GradValuesArgs>();
    let fin = b.shl(p.c, log2(bs));
    let fout = b.shl(p.r, log2(bs));
    let last = b.sub(p.n, 1u32);
    let io = Io { p, fin, fout, last };
    let gs = b.shared_array::<U32>("gs", 2 * sh.buf() / 4, 16);
    let xs = b.shared_array::<U32>("xs", group * xslot(&sh) / 4, 16);
    let tid = b.tid_x();
    let lane = b.and(tid, 31u32);
    let w = b.shr(tid, 5u32);
    // the warp's first slot in the group, and its warp tile within the
    // block
    let gw = b.shr(w, log2(wps));
    let gw = b.mul_lo(gw, spw);
    let wt = b.and(w, wps - 1);
    let wi = b.rem(wt, warps_m);
    let wj = b.div(wt, warps_m);
    let wm0 = b.mul_lo(wi, sh.wm);
    let wn0 = b.mul_lo(wj, sh.wn);
    let g = b.shr(lane, 2u32);
    let t = b.and(lane, 3u32);
    let gs0 = b.shared_elem(&gs, 0u32).reg;
    let xs0 = b.shared_elem(&xs, 0u32).reg;
    // the x tiles of the warp's first slot
    let xw0 = b.mad_lo(gw, xslot(&sh), xs0);
    let (a, bl) = if sh.fmt == InputFormat::Tf32 {
        // token t; A column wm0 + g, B column wn0 + g
        let ia = b.add(wm0, g);
        let pa = b.mad_lo(t, sh.pitch, gs0);
        let a = b.mad_lo(ia, 4u32, pa);
        let jb = b.add(wn0, g);
        let pb = b.mad_lo(t, sh.pitch, xw0);
        (a, b.mad_lo(jb, 4u32, pb))
    } else {
        let l8 = b.and(lane, 7u32);
        let hi16 = b.shr(lane, 4u32); // lane / 16
        let mid = b.shr(lane, 3u32);
        let mid = b.and(mid, 1u32); // (lane / 8) % 2
        // A (matrix m = lane / 8: tokens + 8·(m / 2), i + 8·(m % 2)):
        // token lane % 8 + 8·(lane / 16), column wm0 + 8·((lane / 8) % 2)
        let ka = b.mad_lo(hi16, 8u32, l8);
        let pa = b.mad_lo(ka, sh.pitch, gs0);
        let ia = b.mad_lo(mid, 8u32, wm0);
        let a = b.mad_lo(ia, sh.e, pa);
        // B (as grad-input's): token lane % 8 + 8·((lane / 8) % 2),
        // column wn0 + 8·(lane / 16)
        let kb = b.mad_lo(mid, 8u32, l8);
        let pb = b.mad_lo(kb, sh.pitch, xw0);
        let jb = b.mad_lo(hi16, 8u32, wn0);
        (a, b.mad_lo(jb, sh.e, pb))
    };
    // staging: the thread's 16-byte unit of a row, and its first row
    let ch = b.and(tid, sh.cpr - 1);
    let row0 = b.shr(tid, log2(sh.cpr));
    let gdst = b.mad_lo(row0, sh.pitch, gs0);
    let gdst = b.mad_lo(ch, 16u32, gdst);
    let xdst = b.mad_lo(row0, sh.pitch, xs0);
    let xdst = b.mad_lo(ch, 16u32, xdst);
    let ln = Lane {
        row0,
        gdst,
        xdst,
        a,
        b: (0..spw).map(|k| b.add(bl, k * xslot(&sh))).collect(),
    };
    let ch16 = b.shl(ch, 4u32);
    // the full tiles' running source pointers: row `row0` of each tensor,
    // and `rstep` rows
    let rstep = THREADS / sh.cpr;
    let grow0 = b.mul_wide_u32(row0, io.fout);
    let grow0 = b.shl(grow0, log2(sh.e));
    let grow0 = b.add(grow0, io.p.gy.addr());
    let xrow0 = b.mul_wide_u32(row0, io.fin);
    let xrow0 = b.shl(xrow0, log2(sh.e));
    let xrow0 = b.add(xrow0, io.p.x.addr());
    let gstep = b.mul_wide_u32(io.fout, rstep * sh.e);
    let xstep = b.mul_wide_u32(io.fin, rstep * sh.e);
    let steps = Steps { g: gstep, x: xstep };
    let ntiles = b.add(io.p.n, sh.tokens - 1);
    let ntiles = b.shr(ntiles, log2(sh.tokens));
    let any_tile = b.setp(Cmp::Ne, ntiles, 0u32);
    let per_chunk = N_CHUNK as u32 / sh.tokens;
    // groups: `group` consecutive slots of a row (the row's last group
    // may be short)
    let kg = b.add(io.p.k, group - 1);
    let kg = b.shr(kg, log2(group));
    let groups = b.mul_lo(io.p.r, kg);
    let first = b.ctaid_x();
    let step = b.nctaid_x();
    b.for_range(first, groups, step, |b, gi| {
        // per slot of the warp: the partial and the sum of its fragments
        let frags = |b: &mut KernelBuilder| -> Vec<Vec<Vec<FragC>>> {
            (0..spw)
                .map(|_| {
                    (0..sh.mt)
                        .map(|_| (0..sh.nt).map(|_| b.frag_c_zero()).collect())
                        .collect()
                })
                .collect()
        };
        let part = frags(b);
        let sum = frags(b);
        let r = b.div(gi, kg);
        let k0 = b.rem(gi, kg);
        let k0 = b.shl(k0, log2(group));
        // the group's first slot, and how many of its slots exist
        let s0 = b.mad_lo(r, io.p.k, k0);
        let count = b.sub(io.p.k, k0);
        let top = b.sub(count, 1u32);
        // slot `g` of the group: whether it exists and is non-empty (with
        // tokens to reduce), and its column block
        let col = |b: &mut KernelBuilder, g: Reg<U32>| {
            let exists = b.setp(Cmp::Lt, g, count);
            let gc = b.min(g, top);
            let s = b.add(s0, gc);
            let cp = b.offset(io.p.col, s);
            let cs = b.ld_global(cp, 0);
            let live = b.setp(Cmp::Ge, cs, 0i32);
            let live = b.pand(live, exists);
            (exists, b.pand(live, any_tile), cs)
        };
        let mut slots = Vec::new();
        let mut any = None;
        for gi in 0..group {
            let gr = b.mov(gi);
            let (_, live, cs) = col(b, gr);
            any = Some(match any {
                None => live,
                Some(a) => b.por(a, live),
            });
            slots.push((live, cs));
        }
        // the warp's own slots
        let (mut exists, mut mine) = (Vec::new(), Vec::new());
        for k in 0..spw {
            let gk = b.add(gw, k);
            let (e, m, _) = col(b, gk);
            exists.push(e);
            mine.push(m);
        }
        let any = any.expect("a group has a slot");
        b.if_(any, |b| {
            let unit = b.u32_to_u64(ch16);
            let gcol = b.mul_wide_u32(r, sh.rowb);
            let gcol = b.add(gcol, unit);
            let gbase = b.add(gcol, grow0);
            let x = slots
                .iter()
                .map(|&(live, cs)| {
                    let c = b.s32_as_u32(cs);
                    let xcol = b.mul_wide_u32(c, sh.rowb);
                    let xcol = b.add(xcol, unit);
                    (live, xcol, b.add(xcol, xrow0))
                })
                .collect();
            let src = Src { gcol, gbase, x };
            // prologue: tile 0 into buffer 0
            let zero = b.mov(0u32);
            issue(b, &sh, &io, &ln, &src, &steps, zero, zero);
            b.cp_async_commit_group();
            token_loop(
                b,
                (ntiles, per_chunk),
                (&part, &sum),
                |b, more, next, nbuf| {
                    b.if_(more, |b| issue(b, &sh, &io, &ln, &src, &steps, next, nbuf))
                },
                |b, _| b.bar_sync(),
                |b, ti, cur| compute::<T>(b, &sh, &io, &ln, &mine, &part, ti, cur),
            );
        });
        // epilogue: lane (g, t) holds rows g and g + 8 of each 16-row
        // tile, columns 2t and 2t + 1 of each 8-column tile
        for (k, (&e, sum)) in exists.iter().zip(&sum).enumerate() {
            b.if_(e, |b| {
                let s = b.add(s0, gw);
                let s = b.add(s, k as u32);
                let i0 = b.add(wm0, g);
                let t2 = b.shl(t, 1u32);
                let j0 = b.add(wn0, t2);
                let sb = b.mul_lo(s, sh.bs);
                store_block(b, (io.p.gv, sh.bs), sum, sb, (i0, j0));
            });
        }
    });
    b.finish()
}
