//! The two-operand grad-values kernel ([`super::values_tiles`](mod@super::values_tiles)) in
//! **clusters of [`CLUSTER`] CTAs** that share the `x` tiles by
//! tensor-map multicast (issue 31, the L2 step; bf16/f16 `B` 32 and 64,
//! tf32 `B` 32 on sm_90, sm_100, sm_100a: [`enabled`]; bf16/f16 built
//! for `B` 16 too: [`buildable`]).
//!
//! # Work items
//! A cluster tile is `CLUSTER · rows` consecutive block rows × `cols`
//! column blocks ([`cluster_tiles`]: 16 × 8); rank `k` of the cluster
//! takes rows `4k .. 4k + 4` of it, with its own table, hits, parts and
//! slots exactly as the kernel without a cluster takes a 4 × 8 tile (at
//! `B` 64, which that kernel lacks, two warps a slot, each a 32 × 64
//! half of it: 4 slots a CTA, so a rank's 32 entries are 8 parts).
//! Cluster item `it` of `parts × cluster tiles` (grid-stride over the
//! clusters) is part `q = it / tiles` of cluster tile `it % tiles` for
//! every rank. Every CTA writes the whole cluster tile's table (4 ranks'
//! 32 entries, one ballot word a rank) from the 16 rows' `col`, so each
//! knows the `x` tiles to stage: the column blocks with a hit of part `q`
//! of any rank. The loop, and every branch around the barriers and the
//! copies, depends only on that union (cluster-uniform): a rank without
//! hits in the item still issues its share of the copies and takes part
//! in the barriers.
//!
//! # Data movement
//! `gy`: per CTA, as the kernel without a cluster (`cp.async.cg`, the
//! padded pitch, one tile a row with a hit). `x`: a 2D tensor map over
//! `x` `[N, C·B]` (box `B × tokens`, the swizzle whose span is a row: 128
//! bytes at bf16 `B` 64, 64 at `B` 32, 32 at `B` 16; rows `n ≥ N`
//! zero-filled by the
//! copy; [`x_map`]); per token tile the lane `elect.sync` picks in warp 0
//! of rank `k` multicasts (mask `0b1111`) the used column blocks `ci ≡ k
//! (mod 4)` into buffer `buf` of column `ci`'s tile in all four CTAs,
//! completing on buffer `buf`'s "full" mbarrier in each, and announces the
//! whole union's bytes on its own CTA's barrier. `ldmatrix.x4.trans` reads
//! the swizzled rows (the lane's chunk addresses hoisted out of the loops;
//! token-tile, buffer and column offsets are multiples of the swizzle's
//! repeat). Buffer reuse across the cluster by the protocol the grouped
//! forward shares (`cluster_copy.rs`): after a token tile's MMAs every thread fences its reads before the
//! async proxy's writes and arrives at the cluster barrier (release); the
//! wait comes just before the next copies into that buffer. The MMA
//! chain, N-chunk folds and epilogue are the kernel without a cluster's:
//! the same bits.
//!
//! # tf32 (`B` 32)
//! `x` by a map of f32 elements (box 32 × 64, rows of 128 bytes, the
//! 128-byte swizzle), token tiles of 64 (two `gy` copies a thread a row);
//! both operands land unrounded and each thread rounds its share of a
//! landed token tile in place before the barrier that precedes the MMAs;
//! the fragments come by `ld.shared.v2` / `ld.shared.b32` at feature maps
//! chosen so that no register moves precede an MMA and no load conflicts
//! (`ptx/values_cluster_tf32.rs`). Same bits as rounding at staging.

use crate::dsl::params::Ptr;
use crate::dsl::types::{F32, MmaInput, Pred, Reg, S32, U32};
use crate::dsl::{
    ClusterArrive, Cmp, FragB, FragC, KernelBuilder, PtxModule, ShflMode, TensorMapParam,
    TensorMapRef,
};
use crate::error::Result;
use crate::kernel_params;
use crate::kernels::block_ell::N_CHUNK;
use crate::target::Sm;
use crate::tensor_map::TiledDesc;

use super::super::host::TcPrecision;
use super::cluster_copy::{self as cc, Full};
use super::common::{ldsm4, log2, sptr, store_block, token_loop};
use super::grouped_mcast::{input_map, swizzle};
use super::shape::Shape;
use super::tiled_values::{frags_a_16, pitch};
use super::values_cluster_tf32 as tf32;
use super::values_tiles::{Io, Src, THREADS, ValuesTiles, elem, issue, scan_rows, zero_slot};
use super::{GradValuesRegs, mma_into, name};
use crate::tensor_core::InputFormat;

/// CTAs of a cluster (along the block rows).
pub const CLUSTER: u32 = 4;

kernel_params! {
    /// Arguments of `block_ell_tc_grad_values_{p}_b{B}` where it runs in
    /// clusters ([`enabled`]): [`super::GradValuesArgs`] and `x` as a
    /// tensor map ([`x_map`]).
    pub struct GradValuesTmaArgs => GradValuesTmaRegs {
        x: Ptr<U32>,
        gy: Ptr<U32>,
        col: Ptr<S32>,
        gv: Ptr<F32>,
        n: U32,
        r: U32,
        c: U32,
        k: U32,
        xmap: TensorMapParam,
    }
}

/// Whether the cluster kernel exists for `prec` at `B` = `bs` on `sm`:
/// bf16/f16 at every `B` (16, 32, 64), tf32 at `B` 32 (rows of 128
/// bytes, a swizzle span; `x` lands unrounded and is rounded in shared
/// memory, `ptx/values_cluster_tf32.rs`) on sm_90, sm_100, sm_100a.
pub fn buildable(sm: Sm, prec: TcPrecision, bs: u32) -> bool {
    // the grouped cluster kernels' rule (`grouped_mcast::buildable`)
    super::grouped_mcast::buildable(sm, prec, bs)
}

/// Whether grad-values of `prec` at `B` = `bs` runs in clusters on `sm`:
/// bf16/f16 at `B` 32 and 64 and tf32 at `B` 32, where the roofline
/// model reads it faster (docs/perf.md). `B` 16 is built and tested ([`buildable`]) but no
/// roofline problem measures it, so it keeps the kernel without a
/// cluster.
pub fn enabled(sm: Sm, prec: TcPrecision, bs: u32) -> bool {
    buildable(sm, prec, bs) && bs >= 32
}

/// The tiling of one rank of the cluster kernel: 4 block rows × 8 column
/// blocks (a cluster tile of 16 × 8), two slots a warp at `B` = 32 (a
/// crowded rank is two parts), four at `B` = 16, and at `B` = 64 two
/// warps a slot (each a 32 × 64 half: 4 slots a CTA, so a rank's 32
/// entries are 8 parts); token tiles of one 16-byte `gy` copy a thread a
/// row, two at tf32 (64 tokens: the same per-tile work, the barriers,
/// waits, copies and the fold's test, over twice the MMAs; 210 KiB of
/// shared memory, one CTA an SM, which the problem's 128 busy CTAs of
/// 132 SMs leave idle anyway; docs/perf.md).
pub fn cluster_tiles(prec: TcPrecision, bs: u32) -> ValuesTiles {
    let units = bs * elem(prec) / 16;
    let copies = if prec == TcPrecision::Tf32 { 2 } else { 1 };
    ValuesTiles {
        rows: 4,
        cols: 8,
        spw: if bs == 16 {
            4
        } else if bs == 32 {
            2
        } else {
            1
        },
        wps: if bs == 64 { 2 } else { 1 },
        tokens: copies * THREADS / units,
    }
}

/// Bytes of dynamic shared memory of the cluster kernel: the slack to
/// align the `x` tiles to the swizzle's repeat, double-buffered `x` tiles
/// (unpadded) of the 8 columns and `gy` tiles (padded) of the 4 rows,
/// and the cluster tile's table.
pub fn smem_bytes(prec: TcPrecision, bs: u32) -> u64 {
    let t = cluster_tiles(prec, bs);
    let rowb = bs * elem(prec);
    let x = 2 * t.cols * t.tokens * rowb;
    let gy = 2 * t.rows * t.tokens * pitch(prec, bs);
    u64::from(swizzle(rowb).pattern_bytes() + x + gy + 4 * CLUSTER * t.rows * t.cols)
}

/// The tensor map's description of `x` at `address` (`n` rows of
/// `in_width` elements of `prec`: `u16` bf16/f16, `f32` tf32; `n` at
/// least 1): box `B × tokens`, the swizzle whose span is a row (the
/// grouped forward's input map, `grouped_mcast::input_map`, at this
/// kernel's token tiles).
pub fn x_map(prec: TcPrecision, bs: u32, address: u64, n: u64, in_width: u64) -> TiledDesc {
    let t = cluster_tiles(prec, bs);
    input_map(prec, bs, t.tokens, address, n.max(1), in_width)
}

/// The work of a launch of the cluster kernel on a topology
/// ([`cluster_work`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClusterWork {
    /// CTA work items: [`CLUSTER`] × parts × cluster tiles.
    pub items: usize,
    /// CTAs that store the empty slots' zeros (part 0 of column group 0:
    /// [`CLUSTER`] × the cluster tiles along the rows).
    pub row_groups: usize,
    /// CTAs that run the token loop ([`CLUSTER`] × the cluster items with
    /// a hit).
    pub busy: usize,
    /// `gy` tiles staged per token tile, summed over the CTAs.
    pub gy: usize,
    /// `x` tiles staged per token tile, summed over the clusters (one
    /// multicast serves the four CTAs).
    pub x: usize,
    /// Hits (filled slots).
    pub hits: usize,
}

/// The work items of the cluster kernel on `col` (`r` rows of `k` slots,
/// `c` column blocks), as the kernel schedules them. The L2 bytes of the
/// staging are `(gy + x) × N × B ×` the element's bytes.
pub fn cluster_work(t: &ValuesTiles, r: usize, c: usize, k: usize, col: &[i32]) -> ClusterWork {
    let (rows, cols, cl) = (t.rows as usize, t.cols as usize, CLUSTER as usize);
    let slots = t.slots() as usize;
    let (nrg, ncg) = (r.div_ceil(rows * cl), c.div_ceil(cols));
    let parts = t.parts() as usize;
    let mut w = ClusterWork {
        items: cl * parts * nrg * ncg,
        row_groups: cl * nrg,
        ..ClusterWork::default()
    };
    for rg in 0..nrg {
        for cg in 0..ncg {
            // each rank's hits, ranked row-major in its table
            let ranks: Vec<Vec<usize>> = (0..cl)
                .map(|q| {
                    let mut hits = Vec::new();
                    for ri in 0..rows {
                        let row = (rg * cl + q) * rows + ri;
                        if row >= r {
                            break;
                        }
                        for &cb in &col[row * k..(row + 1) * k] {
                            let d = (cb as usize).wrapping_sub(cg * cols);
                            if cb >= 0 && d < cols {
                                hits.push(ri * cols + d);
                            }
                        }
                    }
                    hits.sort_unstable();
                    hits
                })
                .collect();
            for part in 0..parts {
                let mut xs = vec![false; cols];
                let mut gy = 0;
                let mut hits = 0;
                for h in &ranks {
                    let mine = &h[(part * slots).min(h.len())..((part + 1) * slots).min(h.len())];
                    let mut used_r: Vec<usize> = mine.iter().map(|e| e / cols).collect();
                    used_r.dedup();
                    gy += used_r.len();
                    hits += mine.len();
                    for e in mine {
                        xs[e % cols] = true;
                    }
                }
                if hits > 0 {
                    w.busy += cl;
                    w.gy += gy;
                    w.hits += hits;
                    w.x += xs.iter().filter(|&&u| u).count();
                }
            }
        }
    }
    w
}

/// The barriers of the `x` multicast and the wait's out-of-line retry
/// ([`cc::Full`]), the CTA's rank, warp 0 (whose elected lane issues the
/// copies) and the map.
struct Mc {
    fl: Full,
    rank: Reg<U32>,
    warp0: Reg<Pred>,
    map: TensorMapRef,
}

/// One slot of a warp: whether it has it (and the tokens to reduce), its
/// slot, its `gy` fragment address (buffer 0) and its `x` fragment
/// addresses (buffer 0, one a pair of 8-column fragments).
struct Mine {
    exists: Reg<Pred>,
    run: Reg<Pred>,
    slot: Reg<U32>,
    a: Reg<U32>,
    b: Vec<Reg<U32>>,
}

/// The `x` tiles of an item: the used columns (8 bits) and, for the
/// columns `rank + 4j` this rank issues, whether used, the tile's shared
/// address (buffer 0) and its first element's column.
struct Xs {
    used: Reg<U32>,
    mine: Vec<(Reg<Pred>, Reg<U32>, Reg<S32>)>,
}

/// Multicast token tile `ti`'s `x` tiles into buffer `buf` (see the
/// [module docs](self)).
fn issue_x(b: &mut KernelBuilder, sh: &Shape, mc: &Mc, xs: &Xs, ti: Reg<U32>, buf: Reg<U32>) {
    let xbuf = sh.tokens * sh.rowb;
    let fb = cc::bar(b, &mc.fl, buf);
    let off = b.mul_lo(buf, xbuf);
    cc::elected(b, mc.warp0, |b| {
        let n = b.popc(xs.used);
        let bytes = b.mul_lo(n, xbuf);
        let _ = b.mbarrier_arrive_expect_tx(fb, bytes);
        let n0 = b.shl(ti, log2(sh.tokens));
        let n0 = b.u32_as_s32(n0);
        for &(go, dst, col) in &xs.mine {
            b.if_(go, |b| {
                let d = b.add(dst, off);
                let coords = [col.into(), n0.into()];
                b.cp_async_bulk_tensor_multicast(sptr::<U32>(d), mc.map, &coords, fb, 0b1111u32);
            });
        }
    });
}

/// The MMAs of token tile `ti` from buffer `buf` into the partials of the
/// warp's slots (MMA chunks at or past `N` skipped).
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
    let xoff = b.mul_lo(buf, sh.tokens * sh.rowb);
    let bases: Vec<(Reg<U32>, Vec<Reg<U32>>)> = mine
        .iter()
        .map(|m| {
            let a = b.add(m.a, off);
            (a, m.b.iter().map(|&p| b.add(p, xoff)).collect())
        })
        .collect();
    let n0 = b.shl(ti, log2(sh.tokens));
    for kc in 0..sh.tokens / sh.q {
        let start = b.add(n0, kc * sh.q);
        let run = b.setp(Cmp::Lt, start, io.p.n);
        b.if_(run, |b| {
            for ((m, (ab, bb)), part) in mine.iter().zip(&bases).zip(part) {
                b.if_(m.run, |b| {
                    let (fa, fb) = if sh.fmt == InputFormat::Tf32 {
                        tf32::frags::<T>(b, sh, *ab, bb, kc)
                    } else {
                        let fa = frags_a_16::<T>(b, sh, *ab, kc);
                        let mut fb = Vec::new();
                        for &p in bb {
                            let p = b.add(p, kc * 16 * sh.rowb);
                            let [r0, r1, r2, r3] = ldsm4::<T>(b, p, true);
                            fb.push(FragB { regs: [r0, r1] });
                            fb.push(FragB { regs: [r2, r3] });
                        }
                        (fa, fb)
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

/// `block_ell_tc_grad_values_{p}_b{B}` in clusters (see the
/// [module docs](self)).
pub(super) fn grad_values<T: MmaInput>(sm: Sm, prec: TcPrecision, bs: u32) -> Result<PtxModule> {
    assert!(buildable(sm, prec, bs));
    let vt = cluster_tiles(prec, bs);
    let (rows, cols, spw, wps) = (vt.rows, vt.cols, vt.spw, vt.wps);
    let entries = rows * cols;
    debug_assert_eq!(entries, 32);
    let crows = CLUSTER * rows;
    let pad = pitch(prec, bs) - bs * elem(prec);
    // a warp tile: the whole block, or its share of the rows `i`
    let sh = Shape::new::<T>(prec, bs, pad, vt.tokens, (bs / wps, bs), false);
    let sw = swizzle(sh.rowb);
    let tf32 = prec == TcPrecision::Tf32;
    debug_assert!(!tf32 || wps == 1);
    let xbuf = sh.tokens * sh.rowb;
    let (tile, xtile) = (2 * sh.buf(), 2 * xbuf);
    let mut b = KernelBuilder::new(&name("grad_values", prec, bs), sm);
    b.maxntid(THREADS, 1, 1);
    b.cluster_dims(CLUSTER, 1, 1);
    let p = b.params::<GradValuesTmaArgs>();
    let map = p.xmap;
    let p = GradValuesRegs {
        x: p.x,
        gy: p.gy,
        col: p.col,
        gv: p.gv,
        n: p.n,
        r: p.r,
        c: p.c,
        k: p.k,
    };
    let fin = b.shl(p.c, log2(bs));
    let fout = b.shl(p.r, log2(bs));
    let last = b.sub(p.n, 1u32);
    let io = Io { p, fin, fout, last };
    let full = cc::declare(&mut b);
    let smem = b.dynamic_shared::<U32>("smem", 16);
    let s0 = b.shared_elem(&smem, 0u32).reg;
    // x tiles (aligned to the swizzle's repeat), gy tiles, the table
    let pat = sw.pattern_bytes();
    let xs0 = b.add(s0, pat - 1);
    let xs0 = b.and(xs0, !(pat - 1));
    let gs0 = b.add(xs0, cols * xtile);
    let tab = b.add(gs0, rows * tile);
    let tid = b.tid_x();
    let lane = b.and(tid, 31u32);
    let w = b.shr(tid, 5u32);
    // `B` 64: warp `w` takes rows `wm·(w % 2) ..` of slot `w / 2` of the
    // part's group of the CTA's warps
    let (wslot, wm0) = if wps > 1 {
        let wh = b.and(w, wps - 1);
        (b.shr(w, log2(wps)), Some(b.mul_lo(wh, sh.wm)))
    } else {
        (w, None)
    };
    let (aoff, boffs) = if tf32 {
        tf32::lanes(&mut b, &sh, sw, (gs0, xs0), lane)
    } else {
        let l8 = b.and(lane, 7u32);
        let hi16 = b.shr(lane, 4u32);
        let mid = b.shr(lane, 3u32);
        let mid = b.and(mid, 1u32);
        // A (gy, padded): token lane % 8 + 8·(lane / 16), column 8·((lane / 8) % 2)
        let ka = b.mad_lo(hi16, 8u32, l8);
        let pa = b.mul_lo(ka, sh.pitch);
        let ia = b.shl(mid, 3u32);
        let aoff = b.mad_lo(ia, sh.e, pa);
        let aoff = b.add(aoff, gs0);
        let aoff = match wm0 {
            Some(m0) => b.mad_lo(m0, sh.e, aoff),
            None => aoff,
        };
        // B (x, swizzled): token lane % 8 + 8·((lane / 8) % 2), 16-byte chunk
        // lane / 16 + 2·(fragment pair)
        let kb = b.mad_lo(mid, 8u32, l8);
        let boffs: Vec<Reg<U32>> = (0..sh.nt / 2)
            .map(|np| {
                let c = b.add(hi16, 2 * np);
                b.swizzled_chunk(sptr::<U32>(xs0), sw, sh.rowb, kb, c).reg
            })
            .collect();
        (aoff, boffs)
    };
    // gy staging: the thread's 16-byte unit of a row, and its first row
    let ch = b.and(tid, sh.cpr - 1);
    let row0 = b.shr(tid, log2(sh.cpr));
    let dst = b.mad_lo(row0, sh.pitch, gs0);
    let dst = b.mad_lo(ch, 16u32, dst);
    let ch16 = b.shl(ch, 4u32);
    let rstep = THREADS / sh.cpr;
    let grow0 = b.mul_wide_u32(row0, io.fout);
    let grow0 = b.shl(grow0, log2(sh.e));
    let grow0 = b.add(grow0, io.p.gy.addr());
    let gstep = b.mul_wide_u32(io.fout, rstep * sh.e);
    let ntiles = b.add(io.p.n, sh.tokens - 1);
    let ntiles = b.shr(ntiles, log2(sh.tokens));
    let any_tile = b.setp(Cmp::Ne, ntiles, 0u32);
    let per_chunk = N_CHUNK as u32 / sh.tokens;
    // the barriers, and the kernel's first cluster arrive
    let rank = b.cluster_ctarank();
    let first = b.setp(Cmp::Eq, tid, 0u32);
    let warp0 = b.setp(Cmp::Lt, tid, 32u32);
    let fl = cc::init(&mut b, full, first);
    let mc = Mc {
        fl,
        rank,
        warp0,
        map,
    };
    // cluster items: parts × cluster tiles
    let nrg = b.add(io.p.r, crows - 1);
    let nrg = b.shr(nrg, log2(crows));
    let ncg = b.add(io.p.c, cols - 1);
    let ncg = b.shr(ncg, log2(cols));
    let tiles = b.mul_lo(nrg, ncg);
    let items = b.mul_lo(tiles, vt.parts());
    // the lane's entry of each rank's table and of its own
    let tab_w: Vec<Reg<U32>> = (0..CLUSTER)
        .map(|wd| {
            let e = b.add(lane, 32 * wd);
            b.mad_lo(e, 4u32, tab)
        })
        .collect();
    let own = b.mad_lo(rank, 32u32, lane);
    let tab_own = b.mad_lo(own, 4u32, tab);
    let below = b.shl(1u32, lane);
    let below = b.sub(below, 1u32);
    let cid = b.ctaid_x();
    let cid = b.shr(cid, log2(CLUSTER));
    let ncl = b.nctaid_x();
    let ncl = b.shr(ncl, log2(CLUSTER));
    b.for_range(cid, items, ncl, |b, it| {
        let q = b.div(it, tiles);
        let tix = b.rem(it, tiles);
        let rg = b.div(tix, ncg);
        let cg = b.rem(tix, ncg);
        let rc0 = b.shl(rg, log2(crows));
        let r0 = b.mad_lo(mc.rank, rows, rc0);
        let c0 = b.shl(cg, log2(cols));
        // the cluster tile's table: -1, then the 16 rows' slots whose
        // column is the tile's
        b.bar_sync();
        let init = b.setp(Cmp::Lt, tid, CLUSTER * entries);
        b.if_(init, |b| {
            let pt = b.mad_lo(tid, 4u32, tab);
            b.st_shared(sptr::<S32>(pt), 0, -1i32);
        });
        b.bar_sync();
        scan_rows(b, &io, (rc0, crows), (tid, THREADS), |b, ri, s, c| {
            let c = b.s32_as_u32(c);
            let d = b.sub(c, c0);
            let hit = b.setp(Cmp::Lt, d, cols);
            b.if_(hit, |b| {
                let at = b.mad_lo(ri, cols, d);
                let pt = b.mad_lo(at, 4u32, tab);
                let sv = b.u32_as_s32(s);
                b.st_shared(sptr::<S32>(pt), 0, sv);
            });
        });
        b.bar_sync();
        let lo = b.mul_lo(q, vt.slots());
        // a rank's table word: the lane's entry, hit, rank, and part q's
        // hits
        let word = |b: &mut KernelBuilder, at: Reg<U32>| {
            let v = b.ld_shared(sptr::<S32>(at), 0);
            let hit = b.setp(Cmp::Ge, v, 0i32);
            let hits = b.vote_ballot(hit, u32::MAX);
            let rk = b.and(hits, below);
            let rk = b.popc(rk);
            let rel = b.sub(rk, lo);
            let inside = b.setp(Cmp::Lt, rel, vt.slots());
            let inpart = b.pand(hit, inside);
            let ph = b.vote_ballot(inpart, u32::MAX);
            (v, hit, rk, ph)
        };
        // the x tiles: the columns of part q's hits of any rank
        let mut union = None;
        for &at in &tab_w {
            let (_, _, _, ph) = word(b, at);
            union = Some(match union {
                None => ph,
                Some(u) => b.or(u, ph),
            });
        }
        let u = union.expect("a cluster has ranks");
        let u16 = b.shr(u, 16u32);
        let u = b.or(u, u16);
        let u8 = b.shr(u, 8u32);
        let u = b.or(u, u8);
        let used = b.and(u, (1u32 << cols) - 1);
        let xs = Xs {
            used,
            mine: (0..cols / CLUSTER)
                .map(|j| {
                    let ci = b.add(mc.rank, CLUSTER * j);
                    let bit = b.shr(used, ci);
                    let bit = b.and(bit, 1u32);
                    let go = b.setp(Cmp::Ne, bit, 0u32);
                    let d = b.mad_lo(ci, xtile, xs0);
                    let cb = b.add(c0, ci);
                    let cb = b.shl(cb, log2(bs));
                    (go, d, b.u32_as_s32(cb))
                })
                .collect(),
        };
        // this rank's word: its slots
        let (v, hit, rk, ph) = word(b, tab_own);
        let vu = b.s32_as_u32(v);
        let wbase = b.mad_lo(wslot, spw, lo);
        let mine: Vec<Mine> = (0..spw)
            .map(|j| {
                let want = b.add(wbase, j);
                let is = b.setp(Cmp::Eq, rk, want);
                let is = b.pand(is, hit);
                let m = b.vote_ballot(is, u32::MAX);
                let exists = b.setp(Cmp::Ne, m, 0u32);
                let e = b.sub(m, 1u32);
                let e = b.popc(e);
                let e = b.and(e, 31u32);
                let slot = b.shfl(ShflMode::Idx, vu, e, 0x1f, u32::MAX);
                let ri = b.shr(e, log2(cols));
                let ci = b.and(e, cols - 1);
                let a = b.mad_lo(ri, tile, aoff);
                let xo = b.mul_lo(ci, xtile);
                let bb = boffs.iter().map(|&o| b.add(o, xo)).collect();
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
        // part 0 of column group 0: +0.0 into the rank's rows' empty slots
        let zq = b.setp(Cmp::Eq, q, 0u32);
        let zc = b.setp(Cmp::Eq, cg, 0u32);
        let zero_here = b.pand(zq, zc);
        b.if_(zero_here, |b| {
            scan_rows(b, &io, (r0, rows), (0u32, 1), |b, _, s, c| {
                let empty = b.setp(Cmp::Lt, c, 0i32);
                b.if_(empty, |b| zero_slot(b, &sh, &io, s, tid));
            });
        });
        // cluster-uniform: the union of the ranks' x tiles
        let any = b.setp(Cmp::Ne, used, 0u32);
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
            // the gy tiles of the rank's rows with a hit in this part
            let unit = b.u32_to_u64(ch16);
            let srcs: Vec<Src> = (0..rows)
                .map(|u| {
                    let mask = ((1u32 << cols) - 1) << (u * cols);
                    let used = b.and(ph, mask);
                    let live = b.setp(Cmp::Ne, used, 0u32);
                    let blk = b.add(r0, u);
                    let colb = b.mul_wide_u32(blk, sh.rowb);
                    let colb = b.add(colb, unit);
                    Src {
                        live,
                        col: colb,
                        base: Some(b.add(colb, grow0)),
                        gy: true,
                    }
                })
                .collect();
            let steps = ((gstep, gstep), (grow0, grow0));
            // tf32: the columns this rank uses (its part's hits), whose
            // landed `x` tiles it rounds
            let xcol: Vec<Reg<Pred>> = if tf32 {
                let h = b.shr(ph, 16u32);
                let h = b.or(ph, h);
                let q8 = b.shr(h, 8u32);
                let h = b.or(h, q8);
                (0..cols)
                    .map(|ci| {
                        let bit = b.and(h, 1u32 << ci);
                        b.setp(Cmp::Ne, bit, 0u32)
                    })
                    .collect()
            } else {
                Vec::new()
            };
            let live: Vec<Reg<Pred>> = srcs.iter().map(|s| s.live).collect();
            let zero = b.mov(0u32);
            issue(b, &sh, &io, row0, dst, &srcs, steps, zero, zero);
            // the peers have read both buffers (the previous item)
            b.cluster_wait();
            issue_x(b, &sh, &mc, &xs, zero, zero);
            b.cluster_arrive(ClusterArrive::Release);
            b.cp_async_commit_group();
            token_loop(
                b,
                (ntiles, per_chunk),
                (&part, &sum),
                |b, more, next, nbuf| {
                    b.if_(more, |b| {
                        issue(b, &sh, &io, row0, dst, &srcs, steps, next, nbuf)
                    });
                    // x once the peers have read buffer `nbuf` (the
                    // previous token tile)
                    b.cluster_wait();
                    b.if_(more, |b| issue_x(b, &sh, &mc, &xs, next, nbuf));
                },
                |b, cur| {
                    if tf32 {
                        // the landed tiles rounded once before the barrier
                        cc::wait_full(b, &mc.fl, cur);
                        let xs = (xs0, xcol.as_slice(), xtile);
                        tf32::round_tiles(b, &sh, (dst, &live), xs, tid, cur);
                        b.bar_sync();
                    } else {
                        b.bar_sync();
                        cc::wait_full(b, &mc.fl, cur);
                    }
                },
                |b, ti, cur| {
                    compute::<T>(b, &sh, &io, &mine, &part, ti, cur);
                    cc::release(b);
                },
            );
        });
        if tf32 {
            for (m, sum) in mine.iter().zip(&sum) {
                b.if_(m.exists, |b| {
                    let sb = b.mul_lo(m.slot, sh.bs);
                    tf32::store(b, &sh, &io, sum, sb, lane);
                });
            }
            return;
        }
        // epilogue: lane (g, t) holds rows g and g + 8 of each 16-row
        // tile (of the warp's half at `B` 64), columns 2t and 2t + 1 of
        // each 8-column tile
        let g = b.shr(lane, 2u32);
        let g = match wm0 {
            Some(m0) => b.add(g, m0),
            None => g,
        };
        let t = b.and(lane, 3u32);
        let j0 = b.shl(t, 1u32);
        for (m, sum) in mine.iter().zip(&sum) {
            b.if_(m.exists, |b| {
                let sb = b.mul_lo(m.slot, sh.bs);
                store_block(b, (io.p.gv, sh.bs), sum, sb, (g, j0));
            });
        }
    });
    // no CTA exits while a peer may still be at a cluster barrier
    b.cluster_wait();
    cc::slow_path(&mut b, &mc.fl);
    b.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsl::types::{Bf16x2, F16x2};

    /// The shared memory fits what every enabled SM lets a block opt in
    /// to; an `x` tile buffer and 16 of its rows (an MMA chunk) are whole
    /// swizzle repeats, so the lane's swizzled chunk addresses take the
    /// buffer, column and chunk offsets unchanged; one `gy` copy a thread.
    #[test]
    fn layout_fits_and_keeps_the_swizzle() {
        for sm in [Sm::Sm90, Sm::Sm100, Sm::Sm100a] {
            for prec in TcPrecision::ALL {
                for bs in [16, 32, 64] {
                    let tf32 = prec == TcPrecision::Tf32;
                    assert_eq!(buildable(sm, prec, bs), !tf32 || bs == 32);
                    assert_eq!(enabled(sm, prec, bs), bs == 32 || (!tf32 && bs == 64));
                    if !buildable(sm, prec, bs) {
                        continue;
                    }
                    let t = cluster_tiles(prec, bs);
                    let max = u64::from(sm.info().max_smem_per_block_optin);
                    assert!(smem_bytes(prec, bs) + 16 <= max, "{sm} {prec} B {bs}");
                    let rowb = bs * elem(prec);
                    let pat = swizzle(rowb).pattern_bytes();
                    assert_eq!(swizzle(rowb).span_bytes(), Some(rowb));
                    assert!((t.tokens * rowb).is_multiple_of(pat));
                    assert!((16 * rowb).is_multiple_of(pat));
                    let copies = if tf32 { 2 } else { 1 };
                    assert_eq!(t.tokens * rowb / 16, copies * THREADS);
                    assert_eq!(t.rows * t.cols, 32);
                    // a warp tile of at most 32 × 64 (the partials and
                    // sums of its slots in registers)
                    assert!(t.spw * bs * bs / t.wps <= 2048);
                }
            }
        }
        assert!(!buildable(Sm::Sm90, TcPrecision::Bf16, 128));
        assert!(!buildable(Sm::Sm80, TcPrecision::Bf16, 32));
        assert!(!buildable(Sm::Sm120a, TcPrecision::Bf16, 32));
    }

    /// `B` 16 (built, not enabled) generates the cluster kernel (`x` as a
    /// tensor map), as `B` 32 does; the dispatch keeps the kernel without
    /// a cluster at `B` 16.
    #[test]
    fn b16_builds_in_clusters() {
        let has_map = |m: &PtxModule| m.params.iter().any(|p| p.name == "xmap");
        for sm in [Sm::Sm90, Sm::Sm100] {
            let m = grad_values::<Bf16x2>(sm, TcPrecision::Bf16, 16).unwrap();
            let f = grad_values::<F16x2>(sm, TcPrecision::F16, 32).unwrap();
            assert!(has_map(&m) && has_map(&f), "{sm}");
            let plain = super::super::generate_grad_values(sm, TcPrecision::Bf16, 16).unwrap();
            assert!(!has_map(&plain), "{sm}");
            let used = super::super::generate_grad_values(sm, TcPrecision::F16, 32).unwrap();
            assert_eq!(used.ptx, f.ptx, "{sm}");
        }
    }
}
