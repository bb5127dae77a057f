//! PTX generators for the score kernels: the register-tiled score block
//! ([`SCORE_BLOCK`]), the routed top-s kernel that never writes a score to
//! global memory ([`ROUTE`]) and the merge of K-split partial top-s lists
//! ([`MERGE`]).
//!
//! # The score tile (shared by [`SCORE_BLOCK`] and [`ROUTE`])
//! A CTA of `threads` threads computes a `bm × bn` tile of scores; thread
//! `(ty, tx)` (`tid = ty · bn/tn + tx`) owns a `tm × tn` micro-tile of
//! accumulators. `P` is walked in `bk`-wide chunks: each chunk of `x` and
//! `D` is staged into shared memory **transposed** (`xs[k][m]`, `ds[k][n]`,
//! rows padded by 4 floats so the transposing stores do not collide on a
//! bank, every row 16-byte aligned): a thread stages a run of
//! consecutive columns of a row from one pointer (constant offsets, one
//! pointer advance per row and chunk), with one-column loads or, when
//! `P % 4 = 0` ([`ScoreTuning::vec4`]), 16-byte loads of 4 columns. For
//! each `k` of the chunk (unrolled in Rust) the thread reads its `tm`
//! x-values and `tn` d-values with
//! `ld.shared.v4` and issues `tm·tn` `mul.rn` and `tm·tn` `add.rn`, so every
//! accumulator sees `c = 0, 1, …, P−1` in order and ptxas never contracts
//! them into FMAs. A micro-tile's rows are `tm/4` groups of 4 consecutive
//! rows spaced `4·bm/tm` apart (likewise columns), which keeps the
//! `v4` reads of a warp free of bank conflicts.
//!
//! Bit-exactness of the padding: an accumulator only ever sees its own
//! row of `x` and its own atom of `D`, so rows or atoms past the end are
//! loaded from a clamped, valid row (their accumulators are never stored).
//! Columns `c ≥ P` are staged as `+0.0` in **both** operands (without
//! register prefetch the whole chunks run unguarded and only a last,
//! partial chunk is peeled off with the padding): `acc` starts
//! at `+0.0` and is never `−0.0` under round-to-nearest (`x + (−x) = +0`),
//! so adding `0·0 = +0` leaves every accumulator, NaN and Inf included,
//! unchanged (zero in only one operand could produce `Inf·0 = NaN`).
//!
//! # Top-s state (the [`ROUTE`] and [`MERGE`] kernels)
//! Each row's running top-s lives in device memory as `(atom u32, score
//! f32)` pairs sorted best first, ordered by the `u64`
//! key `(k << 32) | !atom` with `k = 0` for NaN, else
//! `(bits & 0x7FFF_FFFF) + 1`. Keys are unique (atoms are), so the fold is
//! deterministic. A warp folds one row at a time: candidates better than
//! the current `s`-th key (all of them while the state holds fewer than
//! `s`) and, for `s ≤ 32`, not below the `s`-th best candidate of the tile
//! (a warp top-s by `shfl` maxima) are compacted into a per-warp shared
//! list (ballot + popc). A candidate's new position is `#(state keys
//! better)` (binary search in the state) `+ #(accepted keys better)`
//! (count, the list broadcast by `shfl`); a state entry's is its index `+
//! #(accepted candidates inserting at or before it)` (upper-bound search
//! over the accepted insertion points, which are sorted by rank). Entries
//! whose position is below `s` are written to the other half of a
//! ping-pong buffer. A row whose tile had no accepted candidate is left
//! where it is (its half is tracked per row in a bit mask), and at the end
//! every row is copied back into half 0.

use crate::dsl::params::Ptr;
use crate::dsl::types::{F32, Pred, Reg, U32, U64};
use crate::dsl::{Cmp, GlobalPtr, KernelBuilder, PtxModule, Rounding, SharedArray, SharedPtr};
use crate::error::Result;
use crate::kernel_params;
use crate::target::Sm;

mod topk;
mod tuning;

use topk::{Folder, half_ptr, load_entry};
pub use tuning::{ScoreTuning, TuningError};

/// Entry name of the score-block kernel.
pub const SCORE_BLOCK: &str = "score_block_f32";
/// Entry name of the score-block kernel with 16-byte staging loads
/// ([`ScoreTuning::vec4`]).
pub const SCORE_BLOCK_V4: &str = "score_block_f32_v4";
/// Entry name of the routed top-s kernel.
pub const ROUTE: &str = "score_route_top_s_f32";
/// Entry name of the routed top-s kernel with 16-byte staging loads.
pub const ROUTE_V4: &str = "score_route_top_s_f32_v4";
/// Entry name of the merge of K-split partial top-s lists.
pub const MERGE: &str = "score_route_merge_f32";
/// Threads per CTA of the merge kernel (one warp per row).
pub const MERGE_THREADS: u32 = 256;
/// Candidates per fold step in the merge kernel.
pub const MERGE_CHUNK: u32 = 128;

kernel_params! {
    /// Launch arguments of [`SCORE_BLOCK`]: `out[r·k + a] = Σ_c x[r·p + c] ·
    /// d[a·p + c]`. Grid: `ceil(rows/bm) · ceil(k/bn)` CTAs (1-D, atom tiles
    /// fastest).
    pub struct ScoreBlockArgs => ScoreBlockRegs {
        x: Ptr<F32>,
        d: Ptr<F32>,
        out: Ptr<F32>,
        rows: U32,
        k: U32,
        p: U32,
    }
}

kernel_params! {
    /// Launch arguments of [`ROUTE`]. CTA `i` takes row tile `i % row_tiles`
    /// and atoms `[split·atoms_per_split, min(k, (split+1)·atoms_per_split))`
    /// with `split = i / row_tiles`. `state` holds two halves of `half`
    /// u32 each; the result of `(split, row)` ends in half 0 at entry
    /// `(split·rows + row)·s`, as `(atom, score bits)` pairs.
    pub struct RouteArgs => RouteRegs {
        x: Ptr<F32>,
        d: Ptr<F32>,
        state: Ptr<U32>,
        half: U64,
        rows: U32,
        k: U32,
        p: U32,
        s: U32,
        row_tiles: U32,
        atoms_per_split: U32,
    }
}

kernel_params! {
    /// Launch arguments of [`MERGE`]: merges the `splits` partial lists of
    /// each row (from [`ROUTE`]'s half 0) into `out` (two halves of `half`
    /// u32; the result ends in half 0, `rows × s` pairs). One warp per row,
    /// [`MERGE_THREADS`] threads per CTA.
    pub struct MergeArgs => MergeRegs {
        parts: Ptr<U32>,
        out: Ptr<U32>,
        half: U64,
        rows: U32,
        k: U32,
        s: U32,
        splits: U32,
        atoms_per_split: U32,
    }
}

// ---- the score tile ------------------------------------------------------

/// Emit the staged, register-tiled accumulation of one `bm × bn` tile
/// (`row0`, `atom0` its corner) into `tm·tn` fresh accumulators, in the
/// thread's micro-tile order (`acc[i·tn + j]`). Uses `tile` from element
/// 0 for staging; ends after a barrier, so the caller may reuse `tile`.
struct TileGeom {
    ty: Reg<U32>,
    tx: Reg<U32>,
}

impl TileGeom {
    fn new(b: &mut KernelBuilder, t: &ScoreTuning, tid: Reg<U32>) -> Self {
        let tn_threads = t.bn / t.tn;
        let ty = b.div(tid, tn_threads);
        let tx = b.rem(tid, tn_threads);
        Self { ty, tx }
    }
}

/// Local row of micro-tile row `i` relative to `4·ty` (a constant).
fn micro_row(t: &ScoreTuning, i: u32) -> u32 {
    (i / 4) * (4 * t.bm / t.tm) + i % 4
}

/// Local column of micro-tile column `j` relative to `4·tx` (a constant).
fn micro_col(t: &ScoreTuning, j: u32) -> u32 {
    (j / 4) * (4 * t.bn / t.tn) + j % 4
}

#[allow(clippy::too_many_arguments)]
fn emit_tile(
    b: &mut KernelBuilder,
    t: &ScoreTuning,
    tile: &SharedArray<F32>,
    geom: &TileGeom,
    tid: Reg<U32>,
    x: GlobalPtr<F32>,
    d: GlobalPtr<F32>,
    rows: Reg<U32>,
    k: Reg<U32>,
    p: Reg<U32>,
    row0: Reg<U32>,
    atom0: Reg<U32>,
    prefetch: bool,
) -> Vec<Reg<F32>> {
    let xs_stride = t.bm + 4;
    let ds_stride = t.bn + 4;
    let ds_base = t.bk * xs_stride;
    // Staging roles: thread `tid` loads `run` consecutive columns `kk ..
    // kk + run`, `kk = run · (tid % (bk/run))`, of rows `tid / (bk/run) +
    // e · step`, with `run/w` loads of `w` columns (4 with `vec4`, one
    // 16-byte load; else 1) at constant offsets from one pointer per row.
    let w = if t.vec4 { 4 } else { 1 };
    let run = t.staging_run();
    let per_row = t.bk / run;
    let kq = b.rem(tid, per_row);
    let kk = b.mul_lo(kq, run);
    let m_first = b.div(tid, per_row);
    let step = t.threads / per_row;
    let last_row = b.sub(rows, 1u32);
    let last_atom = b.sub(k, 1u32);

    // (global source of column kk, shared destination of column kk, column stride)
    let mut loads: Vec<(GlobalPtr<F32>, SharedPtr<F32>, u32)> = Vec::new();
    for (count, base, last, first, stride, off) in [
        (t.bm / step, x, last_row, row0, xs_stride, 0),
        (t.bn / step, d, last_atom, atom0, ds_stride, ds_base),
    ] {
        for e in 0..count {
            let m = b.add(m_first, e * step);
            let r = b.add(first, m);
            let r = b.min(r, last); // clamped: see the module docs
            let start = b.mul_wide_u32(r, p);
            let kk64 = b.u32_to_u64(kk);
            let start = b.add(start, kk64);
            let src = b.offset64(base, start);
            let dst_i = b.mad_lo(kk, stride, m);
            let dst_i = b.add(dst_i, off);
            loads.push((src, b.shared_elem(tile, dst_i), stride));
        }
    }

    // The thread's read pointers: xs[0][4·ty], ds[0][4·tx].
    let xr = b.shl(geom.ty, 2u32);
    let x_read = b.shared_elem(tile, xr);
    let dr = b.shl(geom.tx, 2u32);
    let dr = b.add(dr, ds_base);
    let d_read = b.shared_elem(tile, dr);

    let acc: Vec<Reg<F32>> = (0..t.tm * t.tn).map(|_| b.mov(0.0f32)).collect();
    let staged: Vec<Vec<Reg<F32>>> = loads
        .iter()
        .map(|_| (0..run).map(|_| b.mov(0.0f32)).collect())
        .collect();
    // Load chunk `c0` into the staging registers. `guard`: columns `c ≥ P`
    // become `+0.0` (with `vec4`, `P % 4 = 0`, so a vector is wholly inside
    // or wholly outside); without it every column must be inside.
    let load_chunk = |b: &mut KernelBuilder, c0: Reg<U32>, guard: bool| {
        let c_ok: Vec<Option<Reg<Pred>>> = (0..run / w)
            .map(|v| {
                guard.then(|| {
                    let c = b.add(c0, kk);
                    let c = b.add(c, v * w);
                    b.setp(Cmp::Lt, c, p)
                })
            })
            .collect();
        for ((src, _, _), regs) in loads.iter().zip(&staged) {
            for (v, ok) in (0u32..).zip(&c_ok) {
                let dst = &regs[(v * w) as usize..((v + 1) * w) as usize];
                let emit = |b: &mut KernelBuilder| {
                    if w == 4 {
                        let l = b.ld_global_nc_v4(*src, (v * w) as i32);
                        for (r, l) in dst.iter().zip(l) {
                            b.assign(*r, l);
                        }
                    } else {
                        let l = b.ld_global_nc(*src, v as i32);
                        b.assign(dst[0], l);
                    }
                };
                match ok {
                    Some(ok) => {
                        for r in dst {
                            b.assign(*r, 0.0f32);
                        }
                        b.guarded(*ok, emit);
                    }
                    None => emit(b),
                }
            }
            b.advance(*src, t.bk as i32);
        }
    };
    let store_chunk = |b: &mut KernelBuilder| {
        for ((_, dst, stride), regs) in loads.iter().zip(&staged) {
            for (j, r) in (0u32..).zip(regs) {
                b.st_shared(*dst, (j * stride) as i32, *r);
            }
        }
    };
    let compute_chunk = |b: &mut KernelBuilder| {
        for kq in 0..t.bk {
            let mut xv = Vec::new();
            for g in 0..t.tm / 4 {
                let off = kq * xs_stride + g * (4 * t.bm / t.tm);
                xv.extend(b.ld_shared_v4(x_read, off as i32));
            }
            let mut dv = Vec::new();
            for g in 0..t.tn / 4 {
                let off = kq * ds_stride + g * (4 * t.bn / t.tn);
                dv.extend(b.ld_shared_v4(d_read, off as i32));
            }
            for (i, xi) in xv.iter().enumerate() {
                for (j, dj) in dv.iter().enumerate() {
                    let a = acc[i * t.tn as usize + j];
                    let prod = b.fmul(Rounding::Rn, *xi, *dj);
                    let sum = b.fadd(Rounding::Rn, a, prod);
                    b.assign(a, sum);
                }
            }
        }
    };
    b.comment("score tile: P in bk-wide chunks, staged transposed in shared memory");
    if prefetch {
        // Chunk `c0 + bk` is loaded into registers before the arithmetic of
        // chunk `c0`, so its global latency overlaps it.
        let zero = b.mov(0u32);
        load_chunk(b, zero, true);
        b.for_range(0u32, p, t.bk, |b, c0| {
            store_chunk(b);
            b.bar_sync();
            let next = b.add(c0, t.bk);
            load_chunk(b, next, true);
            compute_chunk(b);
            b.bar_sync();
        });
    } else {
        // The whole chunks need no padding; a last partial chunk is peeled
        // off, so the hot loop carries no guard.
        let tail = b.rem(p, t.bk);
        let p_full = b.sub(p, tail);
        b.for_range(0u32, p_full, t.bk, |b, c0| {
            load_chunk(b, c0, false);
            store_chunk(b);
            b.bar_sync();
            compute_chunk(b);
            b.bar_sync();
        });
        let partial = b.setp(Cmp::Ne, tail, 0u32);
        b.if_(partial, |b| {
            b.comment("score tile: the last, partial chunk (zero-padded)");
            load_chunk(b, p_full, true);
            store_chunk(b);
            b.bar_sync();
            compute_chunk(b);
            b.bar_sync();
        });
    }
    acc
}

/// Generate the score-block kernel for `sm` with tuning `t`.
pub fn generate_score_block(sm: Sm, t: &ScoreTuning) -> Result<PtxModule> {
    t.check_score()?;
    let mut b = KernelBuilder::new(if t.vec4 { SCORE_BLOCK_V4 } else { SCORE_BLOCK }, sm);
    b.tuning(t.key());
    b.reqntid(t.threads, 1, 1);
    let a = b.params::<ScoreBlockArgs>();
    let tile = b.shared_array::<F32>("tile", t.staging_floats(), 16);
    let tid = b.tid_x();
    let cta = b.ctaid_x();
    let geom = TileGeom::new(&mut b, t, tid);
    let bn_m1 = b.add(a.k, t.bn - 1);
    let atom_tiles = b.div(bn_m1, t.bn);
    let rt = b.div(cta, atom_tiles);
    let at = b.rem(cta, atom_tiles);
    let row0 = b.mul_lo(rt, t.bm);
    let atom0 = b.mul_lo(at, t.bn);
    let acc = emit_tile(
        &mut b, t, &tile, &geom, tid, a.x, a.d, a.rows, a.k, a.p, row0, atom0, true,
    );

    b.comment("guarded stores of the micro-tile");
    let r_base = b.mad_lo(geom.ty, 4u32, row0);
    let c_base = b.mad_lo(geom.tx, 4u32, atom0);
    let cols: Vec<(Reg<U32>, Reg<Pred>)> = (0..t.tn)
        .map(|j| {
            let c = b.add(c_base, micro_col(t, j));
            let ok = b.setp(Cmp::Lt, c, a.k);
            (c, ok)
        })
        .collect();
    for i in 0..t.tm {
        let r = b.add(r_base, micro_row(t, i));
        let r_ok = b.setp(Cmp::Lt, r, a.rows);
        let row_start = b.mul_wide_u32(r, a.k);
        let row_ptr = b.offset64(a.out, row_start);
        for (j, (c, c_ok)) in cols.iter().enumerate() {
            let ok = b.pand(r_ok, *c_ok);
            let v = acc[(i * t.tn) as usize + j];
            b.guarded(ok, |b| {
                let q = b.offset(row_ptr, *c);
                b.st_global(q, 0, v);
            });
        }
    }
    b.finish()
}

/// Generate the routed top-s kernel for `sm` with tuning `t`.
pub fn generate_route(sm: Sm, t: &ScoreTuning) -> Result<PtxModule> {
    t.check_route()?;
    let mut b = KernelBuilder::new(if t.vec4 { ROUTE_V4 } else { ROUTE }, sm);
    b.tuning(t.key());
    b.reqntid(t.threads, 1, 1);
    // Without an occupancy target the pinned ptxas picks 80 registers for
    // the default tuning and spills; two CTAs per SM (at most 128 registers
    // at 256 threads) leaves it room.
    b.min_ctas_per_sm(2);
    let a = b.params::<RouteArgs>();
    let tile_len = t.staging_floats().max(t.bm * t.bn);
    let tile = b.shared_array::<F32>("tile", tile_len, 16);
    let list = b.shared_array::<U32>("accepted", t.warps() * t.bn * 2, 16);
    let tid = b.tid_x();
    let cta = b.ctaid_x();
    let geom = TileGeom::new(&mut b, t, tid);
    let warp = b.shr(tid, 5u32);
    let folder = Folder::new(&mut b, &list, warp, t.bn, a.s);

    let rt = b.rem(cta, a.row_tiles);
    let split = b.div(cta, a.row_tiles);
    let row0 = b.mul_lo(rt, t.bm);
    let a_begin = b.mul_lo(split, a.atoms_per_split);
    let a_end = b.add(a_begin, a.atoms_per_split);
    let a_end = b.min(a_end, a.k);
    let parity = b.mov(0u32);
    let rows_per_warp = t.bm / t.warps();

    // The score tile as written by the thread: row 4·ty + micro_row(i),
    // columns 4·tx + micro_col(j) (groups of 4 contiguous).
    let st_row = b.shl(geom.ty, 2u32);
    let st_col = b.shl(geom.tx, 2u32);
    let st_i = b.mad_lo(st_row, t.bn, st_col);
    let st_base = b.shared_elem(&tile, st_i);

    b.comment("route: walk this split's atom tiles");
    b.for_range(a_begin, a_end, t.bn, |b, atom0| {
        // Register prefetch of the next P chunk only with 16-byte staging.
        // The one-column staging loads each chunk in the loop instead: its
        // whole chunks then need no padding guard (the last, partial chunk
        // is peeled off), which keeps 12 guarded loads out of the hot loop.
        let acc = emit_tile(
            b, t, &tile, &geom, tid, a.x, a.d, a.rows, a.k, a.p, row0, atom0, t.vec4,
        );
        b.comment("route: scores of the tile into shared memory");
        for i in 0..t.tm {
            for g in 0..t.tn / 4 {
                let off = micro_row(t, i) * t.bn + micro_col(t, 4 * g);
                let v: [Reg<F32>; 4] =
                    std::array::from_fn(|e| acc[(i * t.tn + 4 * g) as usize + e]);
                b.st_shared_v4(st_base, off as i32, v);
            }
        }
        b.bar_sync();
        b.comment("route: fold the tile into each row's top-s (a warp per row)");
        let seen = b.sub(atom0, a_begin);
        let m = b.min(seen, a.s);
        let left = b.sub(a_end, atom0);
        let nv = b.min(left, t.bn);
        b.for_range(0u32, rows_per_warp, 1u32, |b, q| {
            let r_l = b.mad_lo(q, t.warps(), warp);
            let r = b.add(row0, r_l);
            let live = b.setp(Cmp::Lt, r, a.rows);
            b.if_(live, |b| {
                let bit = b.shl(1u32, q);
                let mine = b.and(parity, bit);
                let odd = b.setp(Cmp::Ne, mine, 0u32);
                let even = b.pnot(odd);
                let slot = b.mad_lo(split, a.rows, r);
                let start = b.mul_wide_u32(slot, a.s);
                let start = b.shl(start, 1u32);
                let row_list = b.offset64(a.state, start);
                let cur = half_ptr(b, row_list, a.half, odd);
                let nxt = half_ptr(b, row_list, a.half, even);
                let row_scores = b.mul_lo(r_l, t.bn);
                let cand = |b: &mut KernelBuilder, n: Reg<U32>| {
                    let i = b.add(row_scores, n);
                    let sp = b.shared_elem(&tile, i);
                    let v = b.ld_shared(sp, 0);
                    let bits = b.f32_bits(v);
                    let atom = b.add(atom0, n);
                    (bits, atom)
                };
                let changed = folder.fold(b, cur, nxt, m, nv, &cand);
                let flip = b.selp(changed, bit, 0u32);
                let p2 = b.xor(parity, flip);
                b.assign(parity, p2);
            });
        });
        b.bar_sync();
    });

    b.comment("route: leave every row's list in half 0");
    let total = b.sub(a_end, a_begin);
    let m_final = b.min(total, a.s);
    b.for_range(0u32, rows_per_warp, 1u32, |b, q| {
        let r_l = b.mad_lo(q, t.warps(), warp);
        let r = b.add(row0, r_l);
        let live = b.setp(Cmp::Lt, r, a.rows);
        let bit = b.shl(1u32, q);
        let mine = b.and(parity, bit);
        let odd = b.setp(Cmp::Ne, mine, 0u32);
        let go = b.pand(live, odd);
        b.if_(go, |b| {
            let slot = b.mad_lo(split, a.rows, r);
            let start = b.mul_wide_u32(slot, a.s);
            let start = b.shl(start, 1u32);
            let row_list = b.offset64(a.state, start);
            let from = b.offset64(row_list, a.half);
            folder.copy(b, from, row_list, m_final);
        });
    });
    b.finish()
}

/// Generate the merge kernel for `sm`.
pub fn generate_merge(sm: Sm) -> Result<PtxModule> {
    let mut b = KernelBuilder::new(MERGE, sm);
    b.tuning(format!("c{MERGE_CHUNK}_t{MERGE_THREADS}"));
    b.reqntid(MERGE_THREADS, 1, 1);
    let a = b.params::<MergeArgs>();
    let list = b.shared_array::<U32>("accepted", MERGE_THREADS / 32 * MERGE_CHUNK * 2, 16);
    let tid = b.tid_x();
    let cta = b.ctaid_x();
    let warp = b.shr(tid, 5u32);
    let folder = Folder::new(&mut b, &list, warp, MERGE_CHUNK, a.s);
    let r = b.mad_lo(cta, MERGE_THREADS / 32, warp);
    let live = b.setp(Cmp::Lt, r, a.rows);
    b.if_(live, |b| {
        let start = b.mul_wide_u32(r, a.s);
        let start = b.shl(start, 1u32);
        let out = b.offset64(a.out, start);
        let odd = b.mov(0u32);
        let m = b.mov(0u32);
        b.for_range(0u32, a.splits, 1u32, |b, t| {
            let first = b.mul_lo(t, a.atoms_per_split);
            let len = b.sub(a.k, first);
            let len = b.min(len, a.atoms_per_split);
            let count = b.min(len, a.s);
            let slot = b.mad_lo(t, a.rows, r);
            let pstart = b.mul_wide_u32(slot, a.s);
            let pstart = b.shl(pstart, 1u32);
            let part = b.offset64(a.parts, pstart);
            b.for_range(0u32, count, MERGE_CHUNK, |b, c0| {
                let left = b.sub(count, c0);
                let nv = b.min(left, MERGE_CHUNK);
                let is_odd = b.setp(Cmp::Ne, odd, 0u32);
                let is_even = b.pnot(is_odd);
                let cur = half_ptr(b, out, a.half, is_odd);
                let nxt = half_ptr(b, out, a.half, is_even);
                let cand = |b: &mut KernelBuilder, n: Reg<U32>| {
                    let j = b.add(c0, n);
                    let (atom, bits) = load_entry(b, part, j);
                    (bits, atom)
                };
                let changed = folder.fold(b, cur, nxt, m, nv, &cand);
                let flip = b.selp(changed, 1u32, 0u32);
                let o2 = b.xor(odd, flip);
                b.assign(odd, o2);
                let grown = b.add(m, nv);
                let grown = b.min(grown, a.s);
                b.assign(m, grown);
            });
        });
        let is_odd = b.setp(Cmp::Ne, odd, 0u32);
        b.if_(is_odd, |b| {
            let from = b.offset64(out, a.half);
            folder.copy(b, from, out, m);
        });
    });
    b.finish()
}

/// The old name of [`variants`].
#[deprecated(note = "use `score::ptx::variants`, the name every family uses")]
pub fn generate(sm: Sm) -> Result<Vec<PtxModule>> {
    variants(sm)
}

/// The default variants (for `all_variants`, `dump_ptx` and the ptxas
/// tests): the score block and the route, each with one-column and
/// 16-byte staging loads, and the merge.
pub fn variants(sm: Sm) -> Result<Vec<PtxModule>> {
    let (block, route) = (
        ScoreTuning::default_for(sm),
        ScoreTuning::route_default_for(sm),
    );
    Ok(vec![
        generate_score_block(sm, &block)?,
        generate_score_block(
            sm,
            &ScoreTuning {
                vec4: true,
                ..block
            },
        )?,
        generate_route(sm, &route)?,
        generate_route(
            sm,
            &ScoreTuning {
                vec4: true,
                ..route
            },
        )?,
        generate_merge(sm)?,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::STATIC_SMEM_LIMIT;

    const SMALL: ScoreTuning = ScoreTuning {
        bm: 32,
        bn: 32,
        bk: 8,
        tm: 4,
        tn: 4,
        threads: 64,
        vec4: false,
    };

    /// Rows `4·ty + micro_row(i)` and columns `4·tx + micro_col(j)` cover
    /// the CTA tile exactly once.
    #[test]
    fn micro_tiles_partition_the_cta_tile() {
        for t in [
            ScoreTuning::default_for(Sm::Sm80),
            ScoreTuning::route_default_for(Sm::Sm80),
            SMALL,
        ] {
            let mut rows = vec![0u32; t.bm as usize];
            for ty in 0..t.bm / t.tm {
                for i in 0..t.tm {
                    rows[(4 * ty + micro_row(&t, i)) as usize] += 1;
                }
            }
            let mut cols = vec![0u32; t.bn as usize];
            for tx in 0..t.bn / t.tn {
                for j in 0..t.tn {
                    cols[(4 * tx + micro_col(&t, j)) as usize] += 1;
                }
            }
            assert!(rows.iter().chain(&cols).all(|&n| n == 1), "{t:?}");
        }
    }

    /// One pointer per staged row: the route's 64 + 128 rows of a 16-wide
    /// chunk take 4 columns per thread, the score block's 128 + 128 take 8.
    #[test]
    fn staging_runs() {
        let r = ScoreTuning::route_default_for(Sm::Sm80);
        let d = ScoreTuning::default_for(Sm::Sm80);
        for (t, run) in [
            (r, 4),
            (ScoreTuning { vec4: true, ..r }, 4),
            (d, 8),
            (ScoreTuning { vec4: true, ..d }, 8),
            (SMALL, 4),
            (ScoreTuning { bk: 4, ..SMALL }, 2),
        ] {
            t.check().unwrap();
            assert_eq!(t.staging_run(), run, "{t:?}");
        }
    }

    #[test]
    fn shared_memory_sizes_and_keys() {
        let d = ScoreTuning::default_for(Sm::Sm80);
        assert_eq!(d.key(), "bm128_bn128_bk16_tm8_tn8_t256");
        let h = ScoreTuning::default_for(Sm::Sm90);
        assert_eq!(h.key(), "bm128_bn64_bk16_tm8_tn8_t128");
        h.check_score().unwrap();
        // xs: 16 × (128 + 4) floats, ds the same, plus alignment slack.
        assert_eq!(d.score_smem_bytes(), 16 * 132 * 4 * 2 + 16);
        let r = ScoreTuning::route_default_for(Sm::Sm90);
        // A 64 × 128 score tile plus 8 warps × 128 accepted pairs.
        assert_eq!(r.route_smem_bytes(), 64 * 128 * 4 + 16 + 8 * 128 * 8 + 16);
        assert!(r.route_smem_bytes() <= u64::from(STATIC_SMEM_LIMIT));
        SMALL.check_route().unwrap();
    }
}
