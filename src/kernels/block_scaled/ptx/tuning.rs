//! The launch shape of the block-scaled kernels: [`BlockScaledTuning`]
//! (threads per CTA, the grid cap per SM), its per-SM defaults with the
//! model's reasons, the candidates a device sweep times, and its
//! validation ([`BlockScaledTuningError`]). The bits never depend on it:
//! a block's lanes are consecutive threads of one warp whatever the CTA
//! size (the grid-stride step is a multiple of 32), every element goes
//! through the same operations whatever thread handles it, and the
//! amaxes are maxima (order-free).

use crate::error::Error;
use crate::kernels::grid::StreamShape;
use crate::target::Sm;

/// The launch shape of the block-scaled kernels (quantize, dequantize,
/// the NVFP4 global scale, the layout conversion) on one SM. Part of the
/// module cache key through [`BlockScaledTuning::key`] (empty for the
/// SM's default, so the default modules keep their names and text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlockScaledTuning {
    /// Threads per CTA: a multiple of 32 from 64 to 1024 (the grid-stride
    /// step must be a multiple of a warp, so that a block's lanes stay in
    /// one warp and every shuffle runs with all 32 lanes; the NVFP4
    /// global-scale kernel's reduction keeps one shared slot per warp).
    pub threads: u32,
    /// Grid cap per multiprocessor (the grid-stride loops cover the
    /// rest): 1 to 32.
    pub ctas_per_sm: u32,
}

/// An invalid [`BlockScaledTuning`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlockScaledTuningError {
    /// `threads` is not a multiple of 32 in `64..=1024`.
    #[error("block_scaled tuning: threads = {threads}, want a multiple of 32 from 64 to 1024")]
    Threads {
        /// Threads per CTA asked for.
        threads: u32,
    },
    /// `ctas_per_sm` is not in `1..=32`.
    #[error("block_scaled tuning: ctas_per_sm = {ctas_per_sm}, want 1 to 32")]
    CtasPerSm {
        /// Grid cap per SM asked for.
        ctas_per_sm: u32,
    },
}

impl From<BlockScaledTuningError> for Error {
    fn from(e: BlockScaledTuningError) -> Self {
        Error::invalid(e.to_string())
    }
}

impl BlockScaledTuning {
    fn from_shape(s: StreamShape) -> Self {
        Self {
            threads: s.threads,
            ctas_per_sm: s.ctas_per_sm,
        }
    }

    fn shape(&self) -> StreamShape {
        StreamShape {
            threads: self.threads,
            ctas_per_sm: self.ctas_per_sm,
        }
    }

    /// The default on `sm`: 256 threads and a grid cap of the CTAs of 256
    /// threads the SM holds at once (8 on sm_70/80/90/100, 6 on
    /// sm_86/89/120, 4 on sm_75).
    ///
    /// Why (`docs/tuning.md`'s occupancy columns and Little's law):
    /// * **Threads and occupancy.** At 256 threads the quantize and
    ///   dequantize kernels use 30–40 registers on sm_80 and later (48–54
    ///   on sm_75) and no shared memory, so they reach the SM's thread
    ///   limit (100 % theoretical occupancy) except the NVFP4 quantize at
    ///   37–40 registers on sm_80/90/100 (6 CTAs, 75 %) and, on sm_70,
    ///   every quantize (6 CTAs) and the MXFP8 dequantize (47 registers,
    ///   5 CTAs). A smaller CTA gains nothing; a larger one rounds worse on
    ///   the 1,536-thread SMs.
    /// * **Grid cap = resident CTAs.** The grid-stride loops give every
    ///   CTA the same work, so CTAs beyond what an SM holds at once run as
    ///   a second, partial wave (before this type the cap was 8 everywhere:
    ///   a third of the work in a second wave on the 6-CTA SMs, half on
    ///   sm_75). The NVFP4 quantize's 6 CTAs on the 8-CTA SMs are a
    ///   candidate ([`BlockScaledTuning::candidates`]) for the device to
    ///   decide, one cap serving every kernel.
    /// * **Bytes in flight.** A quantize lane issues four 16-byte loads of
    ///   `x` at once (64 bytes), a dequantize lane one 8- or 16-byte code
    ///   load and a scale byte, then four 16-byte stores: at 2,048 threads
    ///   an SM has 128 KiB of quantize loads outstanding, far above the
    ///   ~25 KiB per SM an H200 needs (4.8 TB/s × ~700 ns over 132 SMs),
    ///   and dequantize's 16–32 KiB is at the mark, so no unroll knob.
    pub fn default_for(sm: Sm) -> Self {
        // 256 threads: the PTX's `.maxntid` before this type existed, so
        // the default modules are unchanged.
        Self::from_shape(StreamShape::default_for(sm))
    }

    /// The candidates a device sweep times on `sm`, the default first:
    /// 128 and 512 threads (at the same threads per SM), the grid cap
    /// doubled (a second full wave: shorter CTAs, the tail evened out),
    /// and three quarters of it (the NVFP4 quantize's register-bound
    /// residency on the 8-CTA SMs).
    pub fn candidates(sm: Sm) -> Vec<Self> {
        let d = Self::default_for(sm);
        let fewer = Self {
            ctas_per_sm: 3 * d.ctas_per_sm / 4,
            ..d
        };
        d.shape()
            .sweep(Self::from_shape, [fewer], |t| t.check().is_ok())
    }

    /// Check the fields' ranges.
    ///
    /// # Errors
    /// The first field out of range, naming its value.
    pub fn check(&self) -> std::result::Result<(), BlockScaledTuningError> {
        self.shape().check(
            |threads| BlockScaledTuningError::Threads { threads },
            |ctas_per_sm| BlockScaledTuningError::CtasPerSm { ctas_per_sm },
        )
    }

    /// The module cache key, e.g. `t256_c8`.
    pub fn key(&self) -> String {
        format!("t{}_c{}", self.threads, self.ctas_per_sm)
    }

    /// The key a module of `sm` carries: empty for `sm`'s default.
    pub(crate) fn key_on(&self, sm: Sm) -> String {
        if *self == Self::default_for(sm) {
            String::new()
        } else {
            self.key()
        }
    }

    /// Blocks of a launch of `threads` threads of work (for quantize and
    /// dequantize: `⌈K / block⌉ · L · M` blocks times `block / 16` lanes,
    /// rounded up to a warp) on `sms` multiprocessors: `⌈threads /
    /// self.threads⌉`, at least 1, at most `sms · ctas_per_sm`.
    pub fn grid_blocks(&self, threads: u64, sms: u32) -> u32 {
        crate::kernels::grid::ctas(threads, u64::from(self.threads), sms, self.ctas_per_sm)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_fill_each_sm_in_one_wave() {
        for sm in Sm::ALL {
            let d = BlockScaledTuning::default_for(sm);
            d.check().unwrap();
            assert_eq!(d.threads, 256, "{sm}: the default modules' block size");
            assert_eq!(
                d.threads * d.ctas_per_sm,
                sm.info().max_threads_per_sm,
                "{sm}"
            );
            assert_eq!(d.key_on(sm), "", "{sm}");
            let c = BlockScaledTuning::candidates(sm);
            assert_eq!(c[0], d);
            assert!(c.len() >= 5, "{sm}: {c:?}");
            for t in &c[1..] {
                t.check().unwrap();
                assert_ne!(t.key_on(sm), "", "{sm}: {t:?}");
            }
        }
        assert_eq!(BlockScaledTuning::default_for(Sm::Sm90).ctas_per_sm, 8);
        assert_eq!(BlockScaledTuning::default_for(Sm::Sm86).ctas_per_sm, 6);
        assert_eq!(BlockScaledTuning::default_for(Sm::Sm75).ctas_per_sm, 4);
        let c90 = BlockScaledTuning::candidates(Sm::Sm90);
        assert!(c90.iter().any(|t| t.threads == 256 && t.ctas_per_sm == 6));
    }

    #[test]
    fn invalid_fields_are_named() {
        let d = BlockScaledTuning::default_for(Sm::Sm80);
        for (t, e) in [
            (
                BlockScaledTuning { threads: 97, ..d },
                BlockScaledTuningError::Threads { threads: 97 },
            ),
            (
                BlockScaledTuning { threads: 32, ..d },
                BlockScaledTuningError::Threads { threads: 32 },
            ),
            (
                BlockScaledTuning { threads: 2048, ..d },
                BlockScaledTuningError::Threads { threads: 2048 },
            ),
            (
                BlockScaledTuning {
                    ctas_per_sm: 0,
                    ..d
                },
                BlockScaledTuningError::CtasPerSm { ctas_per_sm: 0 },
            ),
            (
                BlockScaledTuning {
                    ctas_per_sm: 33,
                    ..d
                },
                BlockScaledTuningError::CtasPerSm { ctas_per_sm: 33 },
            ),
        ] {
            assert_eq!(t.check(), Err(e.clone()));
            let err: Error = e.into();
            assert!(err.to_string().contains("block_scaled tuning"), "{err}");
        }
    }

    #[test]
    fn grid_is_capped_by_the_tuning() {
        let t = BlockScaledTuning {
            threads: 128,
            ctas_per_sm: 3,
        };
        assert_eq!(t.grid_blocks(0, 10), 1);
        assert_eq!(t.grid_blocks(128, 10), 1);
        assert_eq!(t.grid_blocks(129, 10), 2);
        assert_eq!(t.grid_blocks(1 << 40, 10), 30);
    }
}
