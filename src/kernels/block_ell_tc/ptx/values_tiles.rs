//! The grad-values kernel for `B` ≤ 32 that shares **both** operands
//! (issue 31): one CTA computes the filled slots of a **tile** of
//! [`ValuesTiles::rows`] consecutive block rows × [`ValuesTiles::cols`]
//! consecutive column blocks of the block grid, staging per token tile
//! the `gy` tile of each of its rows and the `x` tile of each of its
//! column blocks once, however many of the tile's slots use them (the
//! kernel of [`super::tiled_values`] stages one `x` tile a slot). At
//! bf16/f16 `B` = 32 on sm_90, sm_100 and sm_100a four such CTAs (4 × 8
//! tiles, one above the other) run as a cluster that stages each `x` tile
//! once for the four by tensor-map multicast ([`super::values_cluster`]).
//!
//! # Work items
//! The schedule is computed in the kernel from `col`, so nothing beyond
//! the topology is uploaded: work item `it` of `parts × tiles` is part `q
//! = it / tiles` of tile `it % tiles` (row-major over the `⌈R / rows⌉ ×
//! ⌈C / cols⌉` tiles). The CTA writes the tile's table (`rows × cols`
//! entries of shared memory: the slot `s = r·K + k` whose column block is
//! the entry's, or `−1`) from the rows' `col`; the tile's hits, ranked in
//! the table's row-major order, go [`ValuesTiles::spw`] a warp, at most
//! [`ValuesTiles::slots`] a CTA: part `q` takes ranks `q·slots ..
//! (q+1)·slots` (a crowded tile is split into several CTAs, each staging
//! only the rows and columns of its own hits; a part without hits does
//! nothing). One ballot over the table (two for the 64 entries of an
//! 8 × 8 tile: entries `lane` and `lane + 32`, ranked low word first)
//! gives every warp its slots and the CTA the rows and columns to stage.
//! Part 0 of the tiles of column group 0 also stores `+0.0` to the empty
//! slots of its rows.
//!
//! # Data movement and arithmetic
//! As [`super::tiled_values`]: double-buffered `cp.async.cg` token tiles of
//! [`ValuesTiles::tokens`] rows (a power of two dividing [`N_CHUNK`]; one
//! or more 16-byte copies a thread a staged tile) in dynamic shared
//! memory, the ragged last tile zero-filled; `ldmatrix.x4.trans` fragments
//! (bf16/f16), `ld.shared.f32` + `cvt.rna.tf32.f32` (tf32); per slot a
//! warp tile of the whole `B × B` block, its N-chunk partial and running
//! sum in registers, joined by `add.rn` in ascending order. Each output
//! element is the contract's chain of `mma.sync` steps: which CTA or warp
//! computes a slot changes no bit.

use crate::dsl::types::{F32, MmaInput, Pred, Reg, S32, U32, U64};
use crate::dsl::{Cmp, FragC, KernelBuilder, PtxModule, ShflMode};
use crate::error::Result;
use crate::kernels::block_ell::N_CHUNK;
use crate::target::Sm;
use crate::tensor_core::InputFormat;

use super::super::host::TcPrecision;
use super::common::{gptr, log2, sptr, store_block, token_loop};
use super::shape::Shape;
use super::tiled_values::{frags_a_16, frags_a_tf32, frags_b_16, frags_b_tf32, pitch};
use super::{GradValuesArgs, GradValuesRegs, mma_into, name};

/// Threads per CTA of this kernel.
pub const THREADS: u32 = 256;
const WARPS: u32 = THREADS / 32;

/// The tiling of the two-operand grad-values kernel (see the
/// [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValuesTiles {
    /// Consecutive block rows per tile.
    pub rows: u32,
    /// Consecutive column blocks per tile.
    pub cols: u32,
    /// Slots a warp (each a whole `B × B` warp tile, or its share of
    /// one: [`wps`](Self::wps)).
    pub spw: u32,
    /// Warps a slot: 1 where a warp tile is the whole block (`B` ≤ 32),
    /// 2 at `B` = 64 (two 32 × 64 halves, [`super::values_cluster`]).
    pub wps: u32,
    /// Tokens (rows of `N`) per staged token tile.
    pub tokens: u32,
}

impl ValuesTiles {
    /// Slots a CTA: [`spw`](Self::spw) × 8 warps / [`wps`](Self::wps).
    pub fn slots(&self) -> u32 {
        WARPS * self.spw / self.wps
    }
    /// CTAs (parts) a tile is split into, so that a tile with every slot
    /// filled fits.
    pub fn parts(&self) -> u32 {
        (self.rows * self.cols).div_ceil(self.slots())
    }
    /// Staged tiles per token tile at most: one a row, one a column.
    fn staged(&self) -> u32 {
        self.rows + self.cols
    }
}

/// The work of one launch on a topology ([`ValuesTiles::work`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TilesWork {
    /// Work items (CTAs' units): parts × tiles.
    pub items: usize,
    /// Tiles along the block rows (`⌈R / rows⌉`: the items that also
    /// store the empty slots' zeros).
    pub row_groups: usize,
    /// Items with at least one hit (those that stage and compute).
    pub busy: usize,
    /// Staged tiles summed over the busy items (per token tile: one `gy`
    /// tile a row and one `x` tile a column with a hit in the item).
    pub staged: usize,
    /// Hits (filled slots) over all items.
    pub hits: usize,
}

impl ValuesTiles {
    /// The work items of a launch on `col` (`r` rows of `k` slots, `c`
    /// column blocks), as the kernel schedules them: per tile, its hits
    /// ranked in row-major order of the table, [`slots`](Self::slots) a
    /// part. The L2 bytes of the staging are `staged × N × B ×` the
    /// element's bytes (`N` rounded up to whole token tiles).
    pub fn work(&self, r: usize, c: usize, k: usize, col: &[i32]) -> TilesWork {
        let (rows, cols) = (self.rows as usize, self.cols as usize);
        let slots = self.slots() as usize;
        let (nrg, ncg) = (r.div_ceil(rows), c.div_ceil(cols));
        let parts = self.parts() as usize;
        let mut w = TilesWork {
            items: nrg * ncg * parts,
            row_groups: nrg,
            ..TilesWork::default()
        };
        for rg in 0..nrg {
            for cg in 0..ncg {
                // the table's entries with a hit, row-major
                let mut hits = Vec::new();
                for ri in 0..rows.min(r - rg * rows) {
                    let row = rg * rows + ri;
                    for &cb in &col[row * k..(row + 1) * k] {
                        let d = (cb as usize).wrapping_sub(cg * cols);
                        if cb >= 0 && d < cols {
                            hits.push(ri * cols + d);
                        }
                    }
                }
                hits.sort_unstable();
                for part in hits.chunks(slots) {
                    let mut used_r: Vec<usize> = part.iter().map(|e| e / cols).collect();
                    let mut used_c: Vec<usize> = part.iter().map(|e| e % cols).collect();
                    used_r.dedup();
                    used_c.sort_unstable();
                    used_c.dedup();
                    w.busy += 1;
                    w.hits += part.len();
                    w.staged += used_r.len() + used_c.len();
                }
            }
        }
        w
    }
}

/// Bytes of a staged row's 16-byte units and of an element.
pub(super) fn elem(prec: TcPrecision) -> u32 {
    if prec == TcPrecision::Tf32 { 4 } else { 2 }
}

/// The tiling of precision `prec` at block size `bs` on `sm`, or `None`
/// for `B` = 64 (which keeps [`super::tiled_values`]).
///
/// At `B` = 16 where the shared memory a block may opt in to holds it
/// (sm_90, sm_100): tiles of 8 block rows × 8 column blocks, four slots a
/// warp (32 a CTA: a crowded tile is two parts), the sums in registers,
/// one 16-byte copy a thread a staged tile (128 tokens at bf16/f16, 64 at
/// tf32). (`B` = 32 keeps the 4 × 8 tiles: see the comment in the body.)
///
/// Elsewhere (and at `B` = 32): tiles of 4 block rows × 8 column blocks (4 × 4 where the
/// shared memory a block may opt in to holds no more), two slots a warp
/// at `B` = 32 (16 a CTA: a crowded tile is two parts), four at `B` = 16
/// (32 a CTA: one part); token tiles of one 16-byte copy a thread a
/// staged tile (64 tokens at bf16/f16 `B` = 32, 128 at `B` = 16; tf32
/// half as many); sums in registers.
pub fn values_tiles(prec: TcPrecision, bs: u32, sm: Sm) -> Option<ValuesTiles> {
    if bs > 32 {
        return None;
    }
    let units = bs * elem(prec) / 16;
    let max = u64::from(sm.info().max_smem_per_block_optin);
    let wide = ValuesTiles {
        rows: 8,
        cols: 8,
        spw: 4,
        wps: 1,
        tokens: THREADS / units,
    };
    // `B` = 32 keeps the 4 × 8 tiles: 8 × 8 tiles there need the N-chunk
    // running sums in shared memory (4 slots a warp), and at 2048 → 2048,
    // 50 %, their 32 hits a CTA leave 64 busy CTAs on 132 SMs, about 59 µs
    // of issue on the H200 against 58 µs in L2 today (docs/perf.md; built,
    // measured in the model, removed)
    if bs == 16 && smem_of(prec, bs, &wide) <= max {
        return Some(wide);
    }
    let mut t = ValuesTiles {
        rows: 4,
        cols: 8,
        spw: if bs == 32 { 2 } else { 4 },
        wps: 1,
        tokens: THREADS / units,
    };
    while smem_of(prec, bs, &t) > max && t.cols > 1 {
        t.cols /= 2;
    }
    Some(t)
}

fn smem_of(prec: TcPrecision, bs: u32, t: &ValuesTiles) -> u64 {
    let buf = u64::from(t.tokens * pitch(prec, bs));
    2 * u64::from(t.staged()) * buf + 4 * u64::from(t.rows * t.cols)
}

/// Bytes of dynamic shared memory of the kernel of `prec`, `bs` on `sm`
/// (double-buffered token tiles of every row and column of a tile, its
/// table); `None` as [`values_tiles`].
pub fn smem_bytes(prec: TcPrecision, bs: u32, sm: Sm) -> Option<u64> {
    values_tiles(prec, bs, sm).map(|t| smem_of(prec, bs, &t))
}

/// The kernel's scalar arguments.
pub(super) struct Io {
    pub(super) p: GradValuesRegs,
    pub(super) fin: Reg<U32>,
    pub(super) fout: Reg<U32>,
    pub(super) last: Reg<U32>,
}

/// One staged tile of a work item: whether it is staged, the byte offset
/// of its column block within a row plus the thread's unit, and (for
/// tiles of at most 32 entries) that plus row `row0` and the tensor's
/// address; whether it is gy's. (The 8 × 8 tiles add row `row0`'s
/// address per token tile instead: 16 staged tiles' 64-bit bases would
/// cost 32 more registers.)
pub(super) struct Src {
    pub(super) live: Reg<Pred>,
    pub(super) col: Reg<U64>,
    pub(super) base: Option<Reg<U64>>,
    pub(super) gy: bool,
}

/// Two 64-bit registers: gy's and x's (row steps, or row `row0`'s
/// addresses).
pub(super) type Wide2 = (Reg<U64>, Reg<U64>);

/// Issue the copies of token tile `ti` into buffer `buf` of each staged
/// tile (see [`super::tiled_values`]: running pointers for a full tile,
/// clamped sources and `src_size` 0 past `N` for the ragged one).
#[allow(clippy::too_many_arguments)]
pub(super) fn issue(
    b: &mut KernelBuilder,
    sh: &Shape,
    io: &Io,
    row0: Reg<U32>,
    dst: Reg<U32>,
    srcs: &[Src],
    (steps, rows0): (Wide2, Wide2),
    ti: Reg<U32>,
    buf: Reg<U32>,
) {
    let n0 = b.shl(ti, log2(sh.tokens));
    let off = b.mul_lo(buf, sh.buf());
    let d0 = b.add(dst, off);
    let rstep = THREADS / sh.cpr;
    let copies = sh.tokens * sh.cpr / THREADS;
    let end = b.add(n0, sh.tokens);
    let full = b.setp(Cmp::Le, end, io.p.n);
    let tile = 2 * sh.buf();
    b.if_else(
        full,
        |b| {
            let tg = b.mul_wide_u32(n0, io.fout);
            let tg = b.shl(tg, log2(sh.e));
            let based = srcs.iter().all(|s| s.base.is_some());
            let tg = if based { tg } else { b.add(tg, rows0.0) };
            let tx = b.mul_wide_u32(n0, io.fin);
            let tx = b.shl(tx, log2(sh.e));
            let tx = if based { tx } else { b.add(tx, rows0.1) };
            for (u, s) in srcs.iter().enumerate() {
                b.if_(s.live, |b| {
                    let (t, st) = if s.gy { (tg, steps.0) } else { (tx, steps.1) };
                    let mut p = b.add(s.base.unwrap_or(s.col), t);
                    let d = b.add(d0, u as u32 * tile);
                    for j in 0..copies {
                        if j > 0 {
                            p = b.add(p, st);
                        }
                        let dj = b.add(d, j * rstep * sh.pitch);
                        b.cp_async_cg(sptr::<U32>(dj), gptr(p), None);
                    }
                });
            }
        },
        |b| {
            let rows: Vec<_> = (0..copies)
                .map(|j| {
                    let row = b.add(n0, row0);
                    let row = b.add(row, j * rstep);
                    let inside = b.setp(Cmp::Lt, row, io.p.n);
                    let size = b.selp(inside, 16u32, 0u32);
                    (b.min(row, io.last), size)
                })
                .collect();
            for (u, s) in srcs.iter().enumerate() {
                b.if_(s.live, |b| {
                    let (width, base) = if s.gy {
                        (io.fout, io.p.gy.addr())
                    } else {
                        (io.fin, io.p.x.addr())
                    };
                    let d = b.add(d0, u as u32 * tile);
                    for (j, &(rc, size)) in rows.iter().enumerate() {
                        let el = b.mul_wide_u32(rc, width);
                        let by = b.shl(el, log2(sh.e));
                        let by = b.add(by, s.col);
                        let p = b.add(by, base);
                        let dj = b.add(d, j as u32 * rstep * sh.pitch);
                        b.cp_async_cg(sptr::<U32>(dj), gptr(p), Some(size.into()));
                    }
                });
            }
        },
    );
}

/// One slot of a warp in a work item: whether the warp has it (and the
/// tokens to reduce), its slot index, and its fragment addresses (buffer
/// 0 of its row's gy tile and its column's x tile, the lane's offsets
/// added).
struct Mine {
    exists: Reg<Pred>,
    run: Reg<Pred>,
    slot: Reg<U32>,
    a: Reg<U32>,
    b: Reg<U32>,
}

/// The MMAs of token tile `ti` from buffer `buf` into the partials of
/// the warp's slots (MMA chunks starting at or past `N` skipped).
fn compute<T: MmaInput>(
    b: &mut KernelBuilder,
    sh: &Shape,
    io: &Io,
    mine: &[Mine],
    part: &[Vec<Vec<FragC>>],
    ti: Reg<U32>,
    buf: Reg<U32>,
) {
    let off = b.mul_lo(buf, sh.buf());
    let bases: Vec<(Reg<U32>, Reg<U32>)> = mine
        .iter()
        .map(|m| (b.add(m.a, off), b.add(m.b, off)))
        .collect();
    let n0 = b.shl(ti, log2(sh.tokens));
    for kc in 0..sh.tokens / sh.q {
        let start = b.add(n0, kc * sh.q);
        let run = b.setp(Cmp::Lt, start, io.p.n);
        b.if_(run, |b| {
            for ((m, &(ab, bb)), part) in mine.iter().zip(&bases).zip(part) {
                b.if_(m.run, |b| {
                    let (fa, fb) = if sh.fmt == InputFormat::Tf32 {
                        (
                            frags_a_tf32::<T>(b, sh, ab, kc),
                            frags_b_tf32::<T>(b, sh, bb, kc),
                        )
                    } else {
                        (
                            frags_a_16::<T>(b, sh, ab, kc),
                            frags_b_16::<T>(b, sh, bb, kc),
                        )
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

/// `block_ell_tc_grad_values_{p}_b{B}` for `B` ≤ 32 (see the
/// [module docs](self)).
pub(super) fn grad_values<T: MmaInput>(sm: Sm, prec: TcPrecision, bs: u32) -> Result<PtxModule> {
    let vt = values_tiles(prec, bs, sm).expect("B ≤ 32");
    let (rows, cols, spw) = (vt.rows, vt.cols, vt.spw);
    let entries = rows * cols;
    debug_assert!(entries <= 64);
    // table entries a lane (one bit of a ballot each)
    let words = entries.div_ceil(32);
    let pad = pitch(prec, bs) - bs * elem(prec);
    let sh = Shape::new::<T>(prec, bs, pad, vt.tokens, (bs, bs), false);
    debug_assert!((sh.tokens * sh.cpr).is_multiple_of(THREADS));
    let mut b = KernelBuilder::new(&name("grad_values", prec, bs), sm);
    b.maxntid(THREADS, 1, 1);
    let p = b.params::<GradValuesArgs>();
    let fin = b.shl(p.c, log2(bs));
    let fout = b.shl(p.r, log2(bs));
    let last = b.sub(p.n, 1u32);
    let io = Io { p, fin, fout, last };
    let smem = b.dynamic_shared::<U32>("smem", 16);
    let s0 = b.shared_elem(&smem, 0u32).reg;
    let tile = 2 * sh.buf();
    let tab = b.add(s0, vt.staged() * tile);
    let tid = b.tid_x();
    let lane = b.and(tid, 31u32);
    let w = b.shr(tid, 5u32);
    // the lane's fragment offsets within a staged tile
    let (aoff, boff) = if sh.fmt == InputFormat::Tf32 {
        // token t; A column g, B column g
        let g = b.shr(lane, 2u32);
        let t = b.and(lane, 3u32);
        let o = b.mul_lo(t, sh.pitch);
        let o = b.mad_lo(g, 4u32, o);
        (o, o)
    } else {
        let l8 = b.and(lane, 7u32);
        let hi16 = b.shr(lane, 4u32);
        let mid = b.shr(lane, 3u32);
        let mid = b.and(mid, 1u32);
        // A: token lane % 8 + 8·(lane / 16), column 8·((lane / 8) % 2)
        let ka = b.mad_lo(hi16, 8u32, l8);
        let pa = b.mul_lo(ka, sh.pitch);
        let ia = b.shl(mid, 3u32);
        let a = b.mad_lo(ia, sh.e, pa);
        // B: token lane % 8 + 8·((lane / 8) % 2), column 8·(lane / 16)
        let kb = b.mad_lo(mid, 8u32, l8);
        let pb = b.mul_lo(kb, sh.pitch);
        let jb = b.shl(hi16, 3u32);
        (a, b.mad_lo(jb, sh.e, pb))
    };
    let aoff = b.add(aoff, s0);
    let boff = b.add(boff, s0);
    // staging: the thread's 16-byte unit of a row, and its first row
    let ch = b.and(tid, sh.cpr - 1);
    let row0 = b.shr(tid, log2(sh.cpr));
    let dst = b.mad_lo(row0, sh.pitch, s0);
    let dst = b.mad_lo(ch, 16u32, dst);
    let ch16 = b.shl(ch, 4u32);
    let rstep = THREADS / sh.cpr;
    let grow0 = b.mul_wide_u32(row0, io.fout);
    let grow0 = b.shl(grow0, log2(sh.e));
    let grow0 = b.add(grow0, io.p.gy.addr());
    let xrow0 = b.mul_wide_u32(row0, io.fin);
    let xrow0 = b.shl(xrow0, log2(sh.e));
    let xrow0 = b.add(xrow0, io.p.x.addr());
    let gstep = b.mul_wide_u32(io.fout, rstep * sh.e);
    let xstep = b.mul_wide_u32(io.fin, rstep * sh.e);
    let ntiles = b.add(io.p.n, sh.tokens - 1);
    let ntiles = b.shr(ntiles, log2(sh.tokens));
    let any_tile = b.setp(Cmp::Ne, ntiles, 0u32);
    let per_chunk = N_CHUNK as u32 / sh.tokens;
    // work items: parts × tiles
    let nrg = b.add(io.p.r, rows - 1);
    let nrg = b.shr(nrg, log2(rows));
    let ncg = b.add(io.p.c, cols - 1);
    let ncg = b.shr(ncg, log2(cols));
    let tiles = b.mul_lo(nrg, ncg);
    let items = b.mul_lo(tiles, vt.parts());
    // the lane's entries of the table (`lane + 32·word`), and the lanes
    // below it
    let (in_tab, tab_e): (Vec<_>, Vec<_>) = (0..words)
        .map(|wd| {
            let e = if wd == 0 { lane } else { b.add(lane, 32 * wd) };
            let in_tab = b.setp(Cmp::Lt, e, entries);
            let lane_e = b.min(e, entries - 1);
            (in_tab, b.mad_lo(lane_e, 4u32, tab))
        })
        .unzip();
    let below = b.shl(1u32, lane);
    let below = b.sub(below, 1u32);
    let first = b.ctaid_x();
    let step = b.nctaid_x();
    b.for_range(first, items, step, |b, it| {
        let q = b.div(it, tiles);
        let tix = b.rem(it, tiles);
        let rg = b.div(tix, ncg);
        let cg = b.rem(tix, ncg);
        let r0 = b.shl(rg, log2(rows));
        let c0 = b.shl(cg, log2(cols));
        // the table: -1, then the rows' slots whose column is the tile's
        b.bar_sync();
        let init = b.setp(Cmp::Lt, tid, entries);
        b.if_(init, |b| {
            let pt = b.mad_lo(tid, 4u32, tab);
            b.st_shared(sptr::<S32>(pt), 0, -1i32);
        });
        b.bar_sync();
        scan_rows(b, &io, (r0, rows), (tid, THREADS), |b, ri, s, c| {
            let c = b.s32_as_u32(c);
            let d = b.sub(c, c0);
            // -1 wraps past `cols`
            let hit = b.setp(Cmp::Lt, d, cols);
            b.if_(hit, |b| {
                let at = b.mad_lo(ri, cols, d);
                let pt = b.mad_lo(at, 4u32, tab);
                let sv = b.u32_as_s32(s);
                b.st_shared(sptr::<S32>(pt), 0, sv);
            });
        });
        b.bar_sync();
        // the hits (one table entry a lane), their ranks, this part's
        let mut v = Vec::new();
        let mut hit = Vec::new();
        let mut hits = Vec::new();
        for wd in 0..words as usize {
            v.push(b.ld_shared(sptr::<S32>(tab_e[wd]), 0));
            let filled = b.setp(Cmp::Ge, v[wd], 0i32);
            hit.push(b.pand(filled, in_tab[wd]));
            hits.push(b.vote_ballot(hit[wd], u32::MAX));
        }
        // ranks in the table's order: the hits of the lower words first
        let mut rank = Vec::new();
        for wd in 0..words as usize {
            let r = b.and(hits[wd], below);
            let mut r = b.popc(r);
            for h in &hits[..wd] {
                let c = b.popc(*h);
                r = b.add(r, c);
            }
            rank.push(r);
        }
        let lo = b.mul_lo(q, vt.slots());
        let part_hits: Vec<Reg<U32>> = (0..words as usize)
            .map(|wd| {
                let rel = b.sub(rank[wd], lo);
                let inside = b.setp(Cmp::Lt, rel, vt.slots());
                let inpart = b.pand(hit[wd], inside);
                b.vote_ballot(inpart, u32::MAX)
            })
            .collect();
        let vu: Vec<Reg<U32>> = v.iter().map(|&v| b.s32_as_u32(v)).collect();
        let wbase = b.mad_lo(w, spw, lo);
        let mine: Vec<Mine> = (0..spw)
            .map(|j| {
                let want = b.add(wbase, j);
                // per word: the lane with the rank, its entry and slot
                let found: Vec<_> = (0..words as usize)
                    .map(|wd| {
                        let is = b.setp(Cmp::Eq, rank[wd], want);
                        let is = b.pand(is, hit[wd]);
                        let m = b.vote_ballot(is, u32::MAX);
                        let exists = b.setp(Cmp::Ne, m, 0u32);
                        let e = b.sub(m, 1u32);
                        let e = b.popc(e);
                        let e = b.and(e, 31u32);
                        let slot = b.shfl(ShflMode::Idx, vu[wd], e, 0x1f, u32::MAX);
                        (exists, e, slot)
                    })
                    .collect();
                let (exists, e, slot) = found[0];
                let (e, slot, exists) = match found.get(1) {
                    None => (e, slot, exists),
                    Some(&(x1, e1, s1)) => {
                        let e1 = b.add(e1, 32u32);
                        let any = b.por(exists, x1);
                        (b.selp(exists, e, e1), b.selp(exists, slot, s1), any)
                    }
                };
                let ri = b.shr(e, log2(cols));
                let ci = b.and(e, cols - 1);
                let a = b.mad_lo(ri, tile, aoff);
                let ci = b.add(ci, rows);
                let bb = b.mad_lo(ci, tile, boff);
                let run = b.pand(exists, any_tile);
                Mine {
                    exists,
                    run,
                    slot,
                    a,
                    b: bb,
                }
            })
            .collect();
        // part 0 of column group 0: +0.0 into the rows' empty slots
        let zq = b.setp(Cmp::Eq, q, 0u32);
        let zc = b.setp(Cmp::Eq, cg, 0u32);
        let zero_here = b.pand(zq, zc);
        b.if_(zero_here, |b| {
            scan_rows(b, &io, (r0, rows), (0u32, 1), |b, _, s, c| {
                let empty = b.setp(Cmp::Lt, c, 0i32);
                b.if_(empty, |b| zero_slot(b, &sh, &io, s, tid));
            });
        });
        let all_hits = part_hits[1..].iter().fold(part_hits[0], |a, &h| b.or(a, h));
        let any = b.setp(Cmp::Ne, all_hits, 0u32);
        let any = b.pand(any, any_tile);
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
        b.if_(any, |b| {
            // the staged tiles: gy of each row, x of each column with a
            // hit in this part
            let unit = b.u32_to_u64(ch16);
            let srcs: Vec<Src> = (0..vt.staged())
                .map(|u| {
                    // the table entries of the row (or column)
                    let (mask, blk, gy) = if u < rows {
                        let m = ((1u64 << cols) - 1) << (u * cols);
                        (m, b.add(r0, u), true)
                    } else {
                        let ci = u - rows;
                        let m = (0..rows).fold(0u64, |m, ri| m | 1 << (ri * cols + ci));
                        (m, b.add(c0, ci), false)
                    };
                    let mut used: Option<Reg<U32>> = None;
                    for (wd, &ph) in part_hits.iter().enumerate() {
                        let mw = (mask >> (32 * wd)) as u32;
                        if mw != 0 {
                            let x = b.and(ph, mw);
                            used = Some(match used {
                                None => x,
                                Some(u) => b.or(u, x),
                            });
                        }
                    }
                    let used = used.expect("a row or column has table entries");
                    let live = b.setp(Cmp::Ne, used, 0u32);
                    let colb = b.mul_wide_u32(blk, sh.rowb);
                    let colb = b.add(colb, unit);
                    let base = (entries <= 32).then(|| b.add(colb, if gy { grow0 } else { xrow0 }));
                    Src {
                        live,
                        col: colb,
                        base,
                        gy,
                    }
                })
                .collect();
            let steps = ((gstep, xstep), (grow0, xrow0));
            let zero = b.mov(0u32);
            issue(b, &sh, &io, row0, dst, &srcs, steps, zero, zero);
            b.cp_async_commit_group();
            token_loop(
                b,
                (ntiles, per_chunk),
                (&part, &sum),
                |b, more, next, nbuf| {
                    b.if_(more, |b| {
                        issue(b, &sh, &io, row0, dst, &srcs, steps, next, nbuf)
                    })
                },
                |b, _| b.bar_sync(),
                |b, ti, cur| compute::<T>(b, &sh, &io, &mine, &part, ti, cur),
            );
        });
        // epilogue: lane (g, t) holds rows g and g + 8 of each 16-row
        // tile, columns 2t and 2t + 1 of each 8-column tile
        let g = b.shr(lane, 2u32);
        let t = b.and(lane, 3u32);
        let j0 = b.shl(t, 1u32);
        for (m, sum) in mine.iter().zip(&sum) {
            b.if_(m.exists, |b| {
                let sb = b.mul_lo(m.slot, sh.bs);
                store_block(b, (io.p.gv, sh.bs), sum, sb, (g, j0));
            });
        }
    });
    b.finish()
}

/// The slots of block rows `r0 .. r0 + rows` (those below `R`), entries
/// `from, from + step, …` of the `rows × K` scan: `body(b, ri, s, c)`
/// with the row's index in the tile `ri`, the slot `s = row·K + k` and
/// its column block `c = col[s]`.
pub(super) fn scan_rows(
    b: &mut KernelBuilder,
    io: &Io,
    (r0, rows): (Reg<U32>, u32),
    (from, step): (impl Into<crate::dsl::types::Src<U32>>, u32),
    body: impl FnOnce(&mut KernelBuilder, Reg<U32>, Reg<U32>, Reg<S32>),
) {
    let scan = b.mul_lo(io.p.k, rows);
    b.for_range(from, scan, step, |b, e| {
        let ri = b.div(e, io.p.k);
        let row = b.add(r0, ri);
        let ok = b.setp(Cmp::Lt, row, io.p.r);
        b.if_(ok, |b| {
            let kk = b.rem(e, io.p.k);
            let s = b.mad_lo(row, io.p.k, kk);
            let cp = b.offset(io.p.col, s);
            let c = b.ld_global(cp, 0);
            body(b, ri, s, c);
        });
    });
}

/// `+0.0` into the `B × B` block of empty slot `s` (the CTA's threads
/// together: `B²` / [`THREADS`] elements each).
pub(super) fn zero_slot(b: &mut KernelBuilder, sh: &Shape, io: &Io, s: Reg<U32>, tid: Reg<U32>) {
    let per = sh.bs * sh.bs / THREADS;
    let e = b.mul_lo(s, sh.bs * sh.bs);
    let e = b.mad_lo(tid, per, e);
    let gp = b.offset(io.p.gv, e);
    let z = b.mov::<F32>(0.0f32);
    match per {
        4 => b.st_global_v4(gp, 0, [z; 4]),
        _ => {
            for k in 0..per {
                b.st_global(gp, k as i32, z);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::Feature;

    /// Every tiling fits the shared memory its SM lets a block opt in to,
    /// stages one 16-byte copy a thread a tile, and its table fits a warp's
    /// ballot; `B` = 64 has none.
    #[test]
    fn tilings_fit_every_sm() {
        for sm in Sm::ALL.into_iter().filter(|s| s.supports(Feature::MmaSync)) {
            for prec in TcPrecision::ALL {
                assert!(values_tiles(prec, 64, sm).is_none());
                for bs in [16, 32] {
                    let t = values_tiles(prec, bs, sm).unwrap();
                    let smem = smem_bytes(prec, bs, sm).unwrap();
                    assert!(
                        smem <= u64::from(sm.info().max_smem_per_block_optin),
                        "{sm}"
                    );
                    assert!(
                        t.rows * t.cols <= 64 && t.cols >= 4,
                        "{sm} {prec} {bs}: {t:?}"
                    );
                    let units = bs * elem(prec) / 16;
                    assert_eq!(t.tokens * units % THREADS, 0);
                    assert_eq!(N_CHUNK as u32 % t.tokens, 0);
                }
            }
        }
    }
}
