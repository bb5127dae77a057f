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
use crate::dsl::{
    Cmp, GlobalPtr, KernelBuilder, PtxModule, Rounding, SharedArray, SharedPtr, ShflMode, Special,
};
use crate::error::{Error, Result};
use crate::kernel_params;
use crate::target::{MAX_THREADS_PER_BLOCK, STATIC_SMEM_LIMIT, Sm};

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

const FULL: u32 = 0xffff_ffff;

/// Tile shapes of the score kernels for one SM (part of the module cache
/// key through [`ScoreTuning::key`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ScoreTuning {
    /// Rows of the CTA tile.
    pub bm: u32,
    /// Atoms of the CTA tile.
    pub bn: u32,
    /// Width of a `P` chunk staged in shared memory.
    pub bk: u32,
    /// Rows of a thread's micro-tile (a multiple of 4).
    pub tm: u32,
    /// Atoms of a thread's micro-tile (a multiple of 4).
    pub tn: u32,
    /// Threads per CTA: `(bm/tm)·(bn/tn)`.
    pub threads: u32,
    /// Stage `x` and `D` with 16-byte loads of 4 columns (needs `P % 4 =
    /// 0`, 16-byte aligned buffers, `bk % 4 = 0`); else one column per
    /// load. The launch code turns it on when `P % 4 = 0` and no tuning is
    /// given.
    pub vec4: bool,
}

/// An inconsistent [`ScoreTuning`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TuningError {
    /// A micro-tile side is zero or not a multiple of 4 (the inner loop
    /// reads it with 16-byte `ld.shared.v4`).
    #[error("micro-tile {tm}×{tn}: both sides must be positive multiples of 4")]
    MicroTile {
        /// Micro-tile rows per thread.
        tm: u32,
        /// Micro-tile columns per thread.
        tn: u32,
    },
    /// The CTA tile is not a whole number of micro-tiles.
    #[error("CTA tile {bm}×{bn} is not a multiple of the {tm}×{tn} micro-tile")]
    TileNotDivisible {
        /// CTA tile rows.
        bm: u32,
        /// CTA tile atoms.
        bn: u32,
        /// Micro-tile rows per thread.
        tm: u32,
        /// Micro-tile columns per thread.
        tn: u32,
    },
    /// `threads` disagrees with the tile shape, or is not a whole number of
    /// warps within the CTA limit.
    #[error(
        "threads = {threads}, but the {bm}×{bn} tile of {tm}×{tn} micro-tiles needs {needed} (a multiple of 32, at most 1024)"
    )]
    Threads {
        /// Threads per CTA.
        threads: u32,
        /// Threads the tile shape needs.
        needed: u32,
        /// CTA tile rows.
        bm: u32,
        /// CTA tile atoms.
        bn: u32,
        /// Micro-tile rows per thread.
        tm: u32,
        /// Micro-tile columns per thread.
        tn: u32,
    },
    /// `bk` must divide `threads`, and the staged chunks must split evenly
    /// over the threads.
    #[error(
        "bk = {bk} must be positive, divide threads = {threads}, and threads/bk must divide bm = {bm} and bn = {bn}"
    )]
    Chunk {
        /// Columns of `P` staged per step.
        bk: u32,
        /// Threads per CTA.
        threads: u32,
        /// CTA tile rows.
        bm: u32,
        /// CTA tile atoms.
        bn: u32,
    },
    /// With `vec4`, `bk` must be a multiple of 4 and the chunk's vectors
    /// must split evenly over the threads.
    #[error(
        "vec4 needs bk = {bk} a multiple of 4 and 4·threads/bk (threads = {threads}) dividing bm = {bm} and bn = {bn}"
    )]
    Vec4 {
        /// Columns of `P` staged per step.
        bk: u32,
        /// Threads per CTA.
        threads: u32,
        /// CTA tile rows.
        bm: u32,
        /// CTA tile atoms.
        bn: u32,
    },
    /// The routed kernel gives each warp at most 32 rows of a tile.
    #[error(
        "the routed kernel needs bm ≤ 32 · warps and bm a multiple of the warp count: bm = {bm}, warps = {warps}"
    )]
    RowsPerWarp {
        /// CTA tile rows.
        bm: u32,
        /// Warps per CTA.
        warps: u32,
    },
    /// Static shared memory over the 48 KiB limit.
    #[error("{kernel} needs {bytes} bytes of static shared memory, over the {limit}-byte limit")]
    SharedMemory {
        /// The kernel.
        kernel: &'static str,
        /// Bytes it needs.
        bytes: u32,
        /// The limit.
        limit: u32,
    },
}

impl From<TuningError> for Error {
    fn from(e: TuningError) -> Self {
        Error::invalid(format!("score tuning: {e}"))
    }
}

impl ScoreTuning {
    /// The default score-block tuning for `sm`: a 128×128 tile, `bk` 16,
    /// 8×8 micro-tiles, 256 threads (4 `ld.shared.v4` per 128 `mul.rn` +
    /// `add.rn`), on every SM but sm_90, whose default is a 128×64 tile
    /// with the same `bk` and micro-tile (128 threads).
    ///
    /// sm_90's was timed on a GPU: on an H200 (driver 580.159.04,
    /// 2026-11-26, `benches/score_kernels.rs`' tuning sweep at rows 4096,
    /// K 16384, P 256) 128×64 ran at 25.5 TFLOP/s against 23.4 for 128×128
    /// (64×128: 25.5; the other seven candidates 21.3 to 24.3); the bits
    /// are the same for every tuning (checked there on the GPU too). The
    /// smaller tile halves a CTA's threads at the same registers a thread,
    /// so twice as many CTAs share an SM and one CTA's barriers stall less
    /// of it.
    ///
    /// Why the same on the other SMs (see `docs/tuning.md`; not yet timed
    /// on their GPUs): its ~154 registers
    /// a thread leave room for one 8-warp CTA in every target's 64 K
    /// registers, the usual operating point of a register-tiled GEMM, and
    /// its 16.5 KiB of shared memory never limits it; no target's shared
    /// memory, thread or CTA-slot limit gives a different answer, so the
    /// model offers no reason to differ. Larger tiles needing dynamic
    /// shared memory above 48 KiB would not fit more of them: registers, not
    /// shared memory, are the cap.
    pub fn default_for(sm: Sm) -> Self {
        let bn = if sm == Sm::Sm90 { 64 } else { 128 };
        Self {
            bm: 128,
            bn,
            bk: 16,
            tm: 8,
            tn: 8,
            threads: (128 / 8) * (bn / 8),
            vec4: false,
        }
    }

    /// The default routed top-s tuning for `sm`: a 64×128 tile (its
    /// 32 KiB score tile lives in shared memory), `bk` 16, 4×8 micro-tiles,
    /// 256 threads; on sm_75 a 32×128 tile with the same micro-tile (128
    /// threads).
    ///
    /// Why (the occupancy model of `docs/tuning.md`): the 64×128 tile's
    /// 40 KiB of shared memory and ~113 registers give two 8-warp CTAs per
    /// SM on every target but sm_75, where the SM's 64 KiB holds only one:
    /// shared memory, not registers, is the cap there. Halving the tile
    /// keeps each thread's work and registers (the same 4×8 micro-tile) and
    /// drops shared memory to 20 KiB, so three 4-warp CTAs fit: 12 resident
    /// warps instead of 8. Elsewhere registers are the cap and a smaller
    /// tile would only trade per-thread reuse for occupancy, which the model
    /// cannot weigh; that needs GPU timing.
    pub fn route_default_for(sm: Sm) -> Self {
        let bm = if sm == Sm::Sm75 { 32 } else { 64 };
        Self {
            bm,
            bn: 128,
            bk: 16,
            tm: 4,
            tn: 8,
            threads: (bm / 4) * (128 / 8),
            vec4: false,
        }
    }

    /// This tuning with [`vec4`](Self::vec4) on when `p % 4 = 0` (and the
    /// chunk splits into whole vectors), else off.
    pub fn vectorized_for(self, p: usize) -> Self {
        let v = Self { vec4: true, ..self };
        Self {
            vec4: p.is_multiple_of(4) && v.check().is_ok(),
            ..self
        }
    }

    /// The module cache key, e.g. `bm128_bn128_bk16_tm8_tn8_t256` (with
    /// `_v4` for [`vec4`](Self::vec4)).
    pub fn key(&self) -> String {
        format!(
            "bm{}_bn{}_bk{}_tm{}_tn{}_t{}{}",
            self.bm,
            self.bn,
            self.bk,
            self.tm,
            self.tn,
            self.threads,
            if self.vec4 { "_v4" } else { "" }
        )
    }

    fn warps(&self) -> u32 {
        self.threads / 32
    }

    /// Consecutive columns of one row a thread stages per chunk: the
    /// largest divisor of `bk` that is a multiple of the load width (4 with
    /// [`vec4`](Self::vec4)) and leaves the chunk's rows splitting evenly
    /// over the threads (the load width itself always does, by
    /// [`check`](Self::check)).
    fn staging_run(&self) -> u32 {
        let w = if self.vec4 { 4 } else { 1 };
        (w..=self.bk)
            .rev()
            .find(|&r| {
                let per_row = self.bk / r;
                let step = self.threads / per_row;
                r.is_multiple_of(w)
                    && self.bk.is_multiple_of(r)
                    && self.threads.is_multiple_of(per_row)
                    && step > 0
                    && self.bm.is_multiple_of(step)
                    && self.bn.is_multiple_of(step)
            })
            .unwrap_or(w)
    }

    /// Floats of the staging area (`xs` and `ds`, rows padded by 4).
    fn staging_floats(&self) -> u32 {
        self.bk * (self.bm + 4) + self.bk * (self.bn + 4)
    }

    /// Check the shape rules shared by both kernels.
    pub fn check(&self) -> std::result::Result<(), TuningError> {
        let Self {
            bm,
            bn,
            bk,
            tm,
            tn,
            threads,
            vec4,
        } = *self;
        if tm == 0 || tn == 0 || tm % 4 != 0 || tn % 4 != 0 {
            return Err(TuningError::MicroTile { tm, tn });
        }
        if bm == 0 || bn == 0 || bm % tm != 0 || bn % tn != 0 {
            return Err(TuningError::TileNotDivisible { bm, bn, tm, tn });
        }
        let needed = (bm / tm).saturating_mul(bn / tn);
        if threads != needed || threads % 32 != 0 || threads > MAX_THREADS_PER_BLOCK {
            return Err(TuningError::Threads {
                threads,
                needed,
                bm,
                bn,
                tm,
                tn,
            });
        }
        if bk == 0 || threads % bk != 0 || bm % (threads / bk) != 0 || bn % (threads / bk) != 0 {
            return Err(TuningError::Chunk {
                bk,
                threads,
                bm,
                bn,
            });
        }
        if vec4 {
            let step = 4 * threads / bk;
            if bk % 4 != 0 || bm % step != 0 || bn % step != 0 {
                return Err(TuningError::Vec4 {
                    bk,
                    threads,
                    bm,
                    bn,
                });
            }
        }
        Ok(())
    }

    /// Static shared memory of the score-block kernel, in bytes.
    pub fn score_smem_bytes(&self) -> u64 {
        u64::from(self.staging_floats()) * 4 + 16
    }

    /// Static shared memory of the routed kernel, in bytes: the score tile
    /// (aliased with the staging area) and each warp's accepted list.
    pub fn route_smem_bytes(&self) -> u64 {
        let tile = u64::from(self.staging_floats().max(self.bm * self.bn)) * 4 + 16;
        tile + u64::from(self.warps()) * u64::from(self.bn) * 8 + 16
    }

    /// Validate for the score-block kernel.
    pub fn check_score(&self) -> std::result::Result<(), TuningError> {
        self.check()?;
        let bytes = self.score_smem_bytes();
        if bytes > u64::from(STATIC_SMEM_LIMIT) {
            let bytes = u32::try_from(bytes).unwrap_or(u32::MAX);
            return Err(TuningError::SharedMemory {
                kernel: SCORE_BLOCK,
                bytes,
                limit: STATIC_SMEM_LIMIT,
            });
        }
        Ok(())
    }

    /// Validate for the routed kernel.
    pub fn check_route(&self) -> std::result::Result<(), TuningError> {
        self.check()?;
        let warps = self.warps();
        if !self.bm.is_multiple_of(warps) || self.bm / warps > 32 {
            return Err(TuningError::RowsPerWarp { bm: self.bm, warps });
        }
        let bytes = self.route_smem_bytes();
        if bytes > u64::from(STATIC_SMEM_LIMIT) {
            let bytes = u32::try_from(bytes).unwrap_or(u32::MAX);
            return Err(TuningError::SharedMemory {
                kernel: ROUTE,
                bytes,
                limit: STATIC_SMEM_LIMIT,
            });
        }
        Ok(())
    }
}

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

// ---- top-s state -----------------------------------------------------------

/// Emit the ordering key of `(score bits, atom)`: `(k << 32) | !atom` with
/// `k = 0` for NaN, else `(bits & 0x7FFF_FFFF) + 1`. Larger is better.
pub(crate) fn emit_key(b: &mut KernelBuilder, bits: Reg<U32>, atom: Reg<U32>) -> Reg<U64> {
    let (hi, lo) = emit_key_parts(b, bits, atom);
    join_key(b, hi, lo)
}

/// The two halves of [`emit_key`]: `(k, !atom)`.
fn emit_key_parts(b: &mut KernelBuilder, bits: Reg<U32>, atom: Reg<U32>) -> (Reg<U32>, Reg<U32>) {
    let mag = b.and(bits, 0x7fff_ffffu32);
    let is_num = b.setp(Cmp::Le, mag, 0x7f80_0000u32);
    let k1 = b.add(mag, 1u32);
    let k = b.selp(is_num, k1, 0u32);
    (k, b.not(atom))
}

/// `(hi << 32) | lo`.
fn join_key(b: &mut KernelBuilder, hi: Reg<U32>, lo: Reg<U32>) -> Reg<U64> {
    let hi = b.u32_to_u64(hi);
    let hi = b.shl(hi, 32u32);
    let lo = b.u32_to_u64(lo);
    b.or(hi, lo)
}

/// Entry `j` of a top-s list: `(atom, score bits)`.
fn load_entry(b: &mut KernelBuilder, list: GlobalPtr<U32>, j: Reg<U32>) -> (Reg<U32>, Reg<U32>) {
    let j2 = b.shl(j, 1u32);
    let q = b.offset(list, j2);
    (b.ld_global(q, 0), b.ld_global(q, 1))
}

fn store_entry(
    b: &mut KernelBuilder,
    list: GlobalPtr<U32>,
    j: Reg<U32>,
    atom: Reg<U32>,
    bits: Reg<U32>,
) {
    let j2 = b.shl(j, 1u32);
    let q = b.offset(list, j2);
    b.st_global(q, 0, atom);
    b.st_global(q, 1, bits);
}

/// Emits the load of candidate `n` of a fold step: `(score bits, atom)`.
type CandFn<'a> = &'a dyn Fn(&mut KernelBuilder, Reg<U32>) -> (Reg<U32>, Reg<U32>);

/// A warp's fold resources.
struct Folder {
    lane: Reg<U32>,
    lt_mask: Reg<U32>,
    /// This warp's accepted list: atoms at `acc_a[i]`, score bits at `acc_s[i]`.
    acc_a: SharedPtr<U32>,
    acc_s: SharedPtr<U32>,
    s: Reg<U32>,
    /// Most candidates one fold step gets (the accepted list's capacity).
    cap: u32,
}

impl Folder {
    fn new(
        b: &mut KernelBuilder,
        list: &SharedArray<U32>,
        warp: Reg<U32>,
        cap: u32,
        s: Reg<U32>,
    ) -> Self {
        let lane = b.special(Special::LaneId);
        let one = b.shl(1u32, lane);
        let lt_mask = b.sub(one, 1u32);
        let base = b.mul_lo(warp, 2 * cap);
        let acc_a = b.shared_elem(list, base);
        let acc_s = b.shared_offset(acc_a, cap);
        Self {
            lane,
            lt_mask,
            acc_a,
            acc_s,
            s,
            cap,
        }
    }

    fn acc_entry(&self, b: &mut KernelBuilder, i: Reg<U32>) -> (Reg<U32>, Reg<U32>) {
        let pa = b.shared_offset(self.acc_a, i);
        let ps = b.shared_offset(self.acc_s, i);
        (b.ld_shared(pa, 0), b.ld_shared(ps, 0))
    }

    /// `#(accepted keys > key)` over the first `na` accepted entries.
    /// Warp-uniform `na`; every lane calls it. Lane `l` reads entry `c0 +
    /// l` of each 32-entry chunk from shared memory once and the chunk is
    /// broadcast with `shfl` (no two lanes read the same shared word).
    fn count_better(&self, b: &mut KernelBuilder, na: Reg<U32>, key: Reg<U64>) -> Reg<U32> {
        let cnt = b.mov(0u32);
        b.for_range(0u32, na, 32u32, |b, c0| {
            let e = b.add(c0, self.lane);
            let valid = b.setp(Cmp::Lt, e, na);
            let hi = b.mov(0u32);
            let lo = b.mov(0u32);
            b.if_(valid, |b| {
                let (a, sc) = self.acc_entry(b, e);
                let (h, l) = emit_key_parts(b, sc, a);
                b.assign(hi, h);
                b.assign(lo, l);
            });
            let left = b.sub(na, c0);
            let here = b.min(left, 32u32);
            b.for_range(0u32, here, 1u32, |b, jj| {
                let hj = b.shfl(ShflMode::Idx, hi, jj, 0x1f, FULL);
                let lj = b.shfl(ShflMode::Idx, lo, jj, 0x1f, FULL);
                let kj = join_key(b, hj, lj);
                let gt = b.setp(Cmp::Gt, kj, key);
                let inc = b.selp(gt, 1u32, 0u32);
                let next = b.add(cnt, inc);
                b.assign(cnt, next);
            });
        });
        cnt
    }

    /// The `s`-th best key among the `nv` candidates when `s ≤ 32` and
    /// `nv > s`, else 0 (every real key is at least 1: `!atom ≥ 1` because
    /// `atom < K ≤ u32::MAX`). A candidate below it has `s` better
    /// candidates, so it cannot reach the row's top `s`; filtering on it
    /// keeps a fold step to at most `s` accepted candidates even while the
    /// state is not full (the first tile of a row, or of a K-split), where
    /// ranking all `nv` would cost `O(nv²/32)` per lane. Warp-uniform `nv`.
    ///
    /// Each lane holds the keys of candidates `lane + 32·i`; `s` rounds of
    /// a warp-wide maximum (butterfly `shfl` of both halves) each retire
    /// the current best (keys are unique, so exactly one lane owns it).
    fn candidate_threshold(
        &self,
        b: &mut KernelBuilder,
        nv: Reg<U32>,
        cand: CandFn<'_>,
    ) -> Reg<U64> {
        let s = self.s;
        let result = b.mov(0u64);
        let small_s = b.setp(Cmp::Le, s, 32u32);
        let more = b.setp(Cmp::Gt, nv, s);
        let go = b.pand(small_s, more);
        b.if_(go, |b| {
            b.comment("fold: s-th best candidate key (warp top-s)");
            let keys: Vec<Reg<U64>> = (0..self.cap.div_ceil(32))
                .map(|i| {
                    let n = b.add(self.lane, 32 * i);
                    let valid = b.setp(Cmp::Lt, n, nv);
                    let key = b.mov(0u64);
                    b.if_(valid, |b| {
                        let (sc, a) = cand(b, n);
                        let k = emit_key(b, sc, a);
                        b.assign(key, k);
                    });
                    key
                })
                .collect();
            b.for_range(0u32, s, 1u32, |b, _round| {
                let best = b.mov(keys[0]);
                for k in &keys[1..] {
                    let gt = b.setp(Cmp::Gt, *k, best);
                    let nb = b.selp(gt, *k, best);
                    b.assign(best, nb);
                }
                for off in [16u32, 8, 4, 2, 1] {
                    let lo = b.u64_to_u32(best);
                    let hi64 = b.shr(best, 32u32);
                    let hi = b.u64_to_u32(hi64);
                    let olo = b.shfl(ShflMode::Bfly, lo, off, 0x1f, FULL);
                    let ohi = b.shfl(ShflMode::Bfly, hi, off, 0x1f, FULL);
                    let other = join_key(b, ohi, olo);
                    let gt = b.setp(Cmp::Gt, other, best);
                    let nb = b.selp(gt, other, best);
                    b.assign(best, nb);
                }
                for k in &keys {
                    let mine = b.setp(Cmp::Eq, *k, best);
                    let nk = b.selp(mine, 0u64, *k);
                    b.assign(*k, nk);
                }
                b.assign(result, best);
            });
        });
        result
    }

    /// Fold `nv` candidates (`cand(n)` = `(score bits, atom)` for `n < nv`)
    /// into the `m`-entry list `cur`, writing the merged list to `nxt`.
    /// Warp-uniform `m`, `nv`; every lane calls it. Returns whether `nxt`
    /// was written (otherwise `cur` is still the state).
    fn fold(
        &self,
        b: &mut KernelBuilder,
        cur: GlobalPtr<U32>,
        nxt: GlobalPtr<U32>,
        m: Reg<U32>,
        nv: Reg<U32>,
        cand: CandFn<'_>,
    ) -> Reg<Pred> {
        let s = self.s;
        let full = b.setp(Cmp::Ge, m, s);
        let not_full = b.pnot(full);
        let threshold = b.mov(0u64);
        b.if_(full, |b| {
            let last = b.sub(s, 1u32);
            let (a, sc) = load_entry(b, cur, last);
            let k = emit_key(b, sc, a);
            b.assign(threshold, k);
        });
        let cand_threshold = self.candidate_threshold(b, nv, cand);
        b.comment("fold: compact the candidates that beat the s-th key");
        let na = b.mov(0u32);
        b.for_range(0u32, nv, 32u32, |b, n0| {
            let n = b.add(n0, self.lane);
            let valid = b.setp(Cmp::Lt, n, nv);
            let bits = b.mov(0u32);
            let atom = b.mov(0u32);
            b.if_(valid, |b| {
                let (sc, a) = cand(b, n);
                b.assign(bits, sc);
                b.assign(atom, a);
            });
            let key = emit_key(b, bits, atom);
            let beats = b.setp(Cmp::Gt, key, threshold);
            let wanted = b.por(not_full, beats);
            let top_cand = b.setp(Cmp::Ge, key, cand_threshold);
            let wanted = b.pand(wanted, top_cand);
            let ok = b.pand(valid, wanted);
            let mask = b.vote_ballot(ok, FULL);
            b.if_(ok, |b| {
                let below = b.and(mask, self.lt_mask);
                let before = b.popc(below);
                let pos = b.add(na, before);
                let pa = b.shared_offset(self.acc_a, pos);
                b.st_shared(pa, 0, atom);
                let ps = b.shared_offset(self.acc_s, pos);
                b.st_shared(ps, 0, bits);
            });
            let cnt = b.popc(mask);
            let next = b.add(na, cnt);
            b.assign(na, next);
        });
        b.bar_warp_sync(FULL);
        let changed = b.setp(Cmp::Ne, na, 0u32);
        b.if_(changed, |b| {
            b.comment("fold: place the accepted candidates");
            // Lane `l` handles accepted entries `l + 32·c`; it keeps each
            // one's rank among the accepted and its insertion point in the
            // state (`#(state keys better)`) for the state move below.
            let chunks = self.cap.div_ceil(32);
            let mut held = Vec::new();
            for c in 0..chunks {
                let rank = b.mov(0u32);
                let ins = b.mov(0u32);
                let i = b.add(self.lane, 32 * c);
                let in_range = b.setp(Cmp::Lt, i, na);
                let live = b.setp(Cmp::Lt, 32 * c, na);
                b.if_(live, |b| {
                    let ai = b.mov(0u32);
                    let si = b.mov(0u32);
                    b.if_(in_range, |b| {
                        let (a, sc) = self.acc_entry(b, i);
                        b.assign(ai, a);
                        b.assign(si, sc);
                    });
                    let ki = emit_key(b, si, ai);
                    let better = self.count_better(b, na, ki);
                    b.assign(rank, better);
                    b.if_(in_range, |b| {
                        // binary search: #(state entries with a larger key)
                        let lo = b.mov(0u32);
                        let hi = b.mov(m);
                        b.while_(
                            |b| b.setp(Cmp::Lt, lo, hi),
                            |b| {
                                let sum = b.add(lo, hi);
                                let mid = b.shr(sum, 1u32);
                                let (am, sm) = load_entry(b, cur, mid);
                                let km = emit_key(b, sm, am);
                                let gt = b.setp(Cmp::Gt, km, ki);
                                let mid1 = b.add(mid, 1u32);
                                let nlo = b.selp(gt, mid1, lo);
                                let nhi = b.selp(gt, hi, mid);
                                b.assign(lo, nlo);
                                b.assign(hi, nhi);
                            },
                        );
                        b.assign(ins, lo);
                        let pos = b.add(better, lo);
                        let keep = b.setp(Cmp::Lt, pos, s);
                        b.if_(keep, |b| store_entry(b, nxt, pos, ai, si));
                    });
                });
                held.push((rank, ins, in_range));
            }
            // The insertion points in rank order, `ins_by_rank[r]`, are
            // non-decreasing (a better candidate inserts no later). Scatter
            // them through the (now unused) accepted list and gather them
            // back with lane `l` holding ranks `l + 32·c`.
            b.bar_warp_sync(FULL);
            for (rank, ins, in_range) in &held {
                b.if_(*in_range, |b| {
                    let q = b.shared_offset(self.acc_a, *rank);
                    b.st_shared(q, 0, *ins);
                });
            }
            b.bar_warp_sync(FULL);
            let by_rank: Vec<Reg<U32>> = (0u32..)
                .zip(&held)
                .map(|(c, (_, _, in_range))| {
                    let v = b.mov(0u32);
                    b.if_(*in_range, |b| {
                        let r = b.add(self.lane, 32 * c);
                        let q = b.shared_offset(self.acc_a, r);
                        let x = b.ld_shared(q, 0);
                        b.assign(v, x);
                    });
                    v
                })
                .collect();
            b.comment("fold: move the surviving state entries");
            // Entry `j` moves to `j + #(ranks r with ins_by_rank[r] ≤ j)`
            // (an accepted candidate is better than entry `j` exactly when
            // it inserts at or before `j`): an upper-bound search over the
            // warp-held array, a fixed number of uniform steps with `shfl`.
            let steps = 32 - (self.cap).leading_zeros();
            b.for_range(0u32, m, 32u32, |b, j0| {
                let j = b.add(j0, self.lane);
                let in_range = b.setp(Cmp::Lt, j, m);
                let lo = b.mov(0u32);
                let hi = b.mov(na);
                for _ in 0..steps {
                    let open = b.setp(Cmp::Lt, lo, hi);
                    let sum = b.add(lo, hi);
                    let mid = b.shr(sum, 1u32);
                    let src = b.and(mid, 31u32);
                    let which = b.shr(mid, 5u32);
                    let val = b.mov(0u32);
                    for (c, reg) in by_rank.iter().enumerate() {
                        let got = b.shfl(ShflMode::Idx, *reg, src, 0x1f, FULL);
                        let this = b.setp(Cmp::Eq, which, c as u32);
                        let pick = b.selp(this, got, val);
                        b.assign(val, pick);
                    }
                    let le = b.setp(Cmp::Le, val, j);
                    let up = b.pand(open, le);
                    let not_le = b.pnot(le);
                    let down = b.pand(open, not_le);
                    let mid1 = b.add(mid, 1u32);
                    let nlo = b.selp(up, mid1, lo);
                    let nhi = b.selp(down, mid, hi);
                    b.assign(lo, nlo);
                    b.assign(hi, nhi);
                }
                b.if_(in_range, |b| {
                    let pos = b.add(j, lo);
                    let keep = b.setp(Cmp::Lt, pos, s);
                    b.if_(keep, |b| {
                        let (aj, sj) = load_entry(b, cur, j);
                        store_entry(b, nxt, pos, aj, sj);
                    });
                });
            });
            b.bar_warp_sync(FULL);
        });
        changed
    }

    /// Copy the first `m` entries of `from` to `to` (lanes strided), then
    /// synchronise the warp.
    fn copy(&self, b: &mut KernelBuilder, from: GlobalPtr<U32>, to: GlobalPtr<U32>, m: Reg<U32>) {
        b.for_range(0u32, m, 32u32, |b, j0| {
            let j = b.add(j0, self.lane);
            let in_range = b.setp(Cmp::Lt, j, m);
            b.if_(in_range, |b| {
                let (a, sc) = load_entry(b, from, j);
                store_entry(b, to, j, a, sc);
            });
        });
        b.bar_warp_sync(FULL);
    }
}

/// `base + (parity ? half : 0)` u32 elements.
fn half_ptr(
    b: &mut KernelBuilder,
    base: GlobalPtr<U32>,
    half: Reg<U64>,
    parity: Reg<Pred>,
) -> GlobalPtr<U32> {
    let off = b.selp(parity, half, 0u64);
    b.offset64(base, off)
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

/// The default variants (for `all_variants`, `dump_ptx` and the ptxas
/// tests): the score block and the route, each with one-column and
/// 16-byte staging loads, and the merge.
pub fn generate(sm: Sm) -> Result<Vec<PtxModule>> {
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
