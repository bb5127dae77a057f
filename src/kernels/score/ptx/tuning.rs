//! The tuning of the score kernels: [`ScoreTuning`] (tile shapes, part of
//! the module cache key), its defaults per SM and its validation
//! ([`TuningError`]). Separate from the generators because it is plain
//! arithmetic on the shape, with no PTX emitted.

use super::{ROUTE, SCORE_BLOCK};
use crate::error::Error;
use crate::target::{MAX_THREADS_PER_BLOCK, STATIC_SMEM_LIMIT, Sm};

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

    pub(super) fn warps(&self) -> u32 {
        self.threads / 32
    }

    /// Consecutive columns of one row a thread stages per chunk: the
    /// largest divisor of `bk` that is a multiple of the load width (4 with
    /// [`vec4`](Self::vec4)) and leaves the chunk's rows splitting evenly
    /// over the threads (the load width itself always does, by
    /// [`check`](Self::check)).
    pub(super) fn staging_run(&self) -> u32 {
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
    pub(super) fn staging_floats(&self) -> u32 {
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
