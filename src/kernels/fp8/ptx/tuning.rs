//! The launch shape of the FP8 kernels: [`Fp8Tuning`] (threads per CTA,
//! the grid cap per SM, the dequantize loop's trips in flight), its
//! per-SM defaults with the model's reasons, the candidates a device
//! sweep times, and its validation ([`Fp8TuningError`]). The bits never
//! depend on it: every element goes through the same operations whatever
//! thread handles it, and the amax is a `max` (order-free).

use crate::error::Error;
use crate::kernels::grid::StreamShape;
use crate::target::Sm;

/// The launch shape of the FP8 kernels on one SM. Part of the module
/// cache key through [`Fp8Tuning::key`] (empty for the SM's default, so
/// the default modules keep their names and text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fp8Tuning {
    /// Threads per CTA of every FP8 kernel: a multiple of 32 from 64 to
    /// 1024 (the block reduction shuffles whole warps and keeps one shared
    /// slot per warp).
    pub threads: u32,
    /// Grid cap per multiprocessor (the grid-stride loops cover the
    /// rest): 1 to 32.
    pub ctas_per_sm: u32,
    /// Grid-stride trips a dequantize thread runs at a time, their code
    /// loads issued together: 1, 2, 4 or 8.
    pub unroll: u32,
}

/// An invalid [`Fp8Tuning`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Fp8TuningError {
    /// `threads` is not a multiple of 32 in `64..=1024`.
    #[error("fp8 tuning: threads = {threads}, want a multiple of 32 from 64 to 1024")]
    Threads {
        /// Threads per CTA asked for.
        threads: u32,
    },
    /// `ctas_per_sm` is not in `1..=32`.
    #[error("fp8 tuning: ctas_per_sm = {ctas_per_sm}, want 1 to 32")]
    CtasPerSm {
        /// Grid cap per SM asked for.
        ctas_per_sm: u32,
    },
    /// `unroll` is not 1, 2, 4 or 8.
    #[error("fp8 tuning: unroll = {unroll}, want 1, 2, 4 or 8")]
    Unroll {
        /// Dequantize trips in flight asked for.
        unroll: u32,
    },
}

impl From<Fp8TuningError> for Error {
    fn from(e: Fp8TuningError) -> Self {
        Error::invalid(e.to_string())
    }
}

impl Fp8Tuning {
    /// The default on `sm`: 256 threads, a grid cap of the CTAs of 256
    /// threads the SM holds at once (8 on sm_70/80/90/100, 6 on
    /// sm_86/89/120, 4 on sm_75), dequantize unroll 4.
    ///
    /// Why (`docs/tuning.md`'s occupancy columns and Little's law):
    /// * **Threads and occupancy.** At 256 threads and at most ~40
    ///   registers (software codec) or ~18 (hardware `cvt`), with no
    ///   shared memory beyond the reduction's few words, every FP8 kernel
    ///   reaches 100 % theoretical occupancy on every target, limited only
    ///   by the SM's thread count; a smaller CTA gains nothing and a
    ///   larger one rounds worse on the 1,536-thread SMs.
    /// * **Grid cap = resident CTAs.** The grid-stride loops give every
    ///   CTA the same work, so CTAs beyond what an SM holds at once run as
    ///   a second, partial wave with too few warps to stream at full
    ///   bandwidth (before this type the cap was 8 everywhere: a third of
    ///   the work in a second wave on the 6-CTA SMs, half on sm_75).
    /// * **Bytes in flight.** Little's law: to keep DRAM busy an SM needs
    ///   bandwidth × latency / SMs bytes of loads outstanding. With a
    ///   loaded DRAM latency of about 700 ns (an assumption in the
    ///   600–800 ns range; microbenchmarks report about 500 ns unloaded
    ///   on recent NVIDIA GPUs, and a saturated memory system queues), an
    ///   H200 (4.8 TB/s, 132 SMs) needs about 25 KiB per SM, an A100
    ///   (2.0 TB/s, 108 SMs) 13 KiB, a B200 (7.7 TB/s, 148 SMs) 36 KiB,
    ///   an RTX 5090 (1.8 TB/s, 170 SMs) 7 KiB. A quantize or absmax thread
    ///   keeps one 16-byte load in flight per trip (2,048 threads: 32 KiB
    ///   per SM); a dequantize thread reads 4 bytes a trip, so `unroll`
    ///   4 gives it the same 16 bytes. Only the B200 asks for more than 32
    ///   KiB; its candidates include `unroll` 8, for the device sweep to
    ///   decide (`benches/fp8_kernels.rs`), as no device run has timed
    ///   one yet.
    pub fn default_for(sm: Sm) -> Self {
        let StreamShape {
            threads,
            ctas_per_sm,
        } = StreamShape::default_for(sm);
        Self {
            threads,
            ctas_per_sm,
            unroll: super::DEQUANTIZE_UNROLL as u32,
        }
    }

    /// The candidates a device sweep times on `sm`, the default first:
    /// 128 and 512 threads (at the same threads per SM), the grid cap
    /// doubled (a second full wave: shorter CTAs, the tail evened out),
    /// and dequantize unroll 2 and 8 (fewer or more bytes in flight).
    pub fn candidates(sm: Sm) -> Vec<Self> {
        let d = Self::default_for(sm);
        let with = |s: StreamShape| Self {
            threads: s.threads,
            ctas_per_sm: s.ctas_per_sm,
            ..d
        };
        let unrolls = [Self { unroll: 2, ..d }, Self { unroll: 8, ..d }];
        d.shape().sweep(with, unrolls, |t| t.check().is_ok())
    }

    /// Check the fields' ranges.
    ///
    /// # Errors
    /// The first field out of range, naming its value.
    pub fn check(&self) -> std::result::Result<(), Fp8TuningError> {
        self.shape().check(
            |threads| Fp8TuningError::Threads { threads },
            |ctas_per_sm| Fp8TuningError::CtasPerSm { ctas_per_sm },
        )?;
        if ![1, 2, 4, 8].contains(&self.unroll) {
            return Err(Fp8TuningError::Unroll {
                unroll: self.unroll,
            });
        }
        Ok(())
    }

    fn shape(&self) -> StreamShape {
        StreamShape {
            threads: self.threads,
            ctas_per_sm: self.ctas_per_sm,
        }
    }

    /// The module cache key, e.g. `t256_c8_u4`.
    pub fn key(&self) -> String {
        format!("t{}_c{}_u{}", self.threads, self.ctas_per_sm, self.unroll)
    }

    /// The key a module of `sm` carries: empty for `sm`'s default.
    pub(crate) fn key_on(&self, sm: Sm) -> String {
        if *self == Self::default_for(sm) {
            String::new()
        } else {
            self.key()
        }
    }

    /// Blocks of a launch over `n` elements on `sms` multiprocessors:
    /// `ceil(n / (threads · ITEMS_PER_THREAD))`, at least 1, at most
    /// `sms · ctas_per_sm`.
    pub fn grid_blocks(&self, n: u64, sms: u32) -> u32 {
        let per_block = u64::from(self.threads) * super::ITEMS_PER_THREAD;
        crate::kernels::grid::ctas(n, per_block, sms, self.ctas_per_sm)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_fill_each_sm_in_one_wave() {
        for sm in Sm::ALL {
            let d = Fp8Tuning::default_for(sm);
            d.check().unwrap();
            assert_eq!(
                d.threads * d.ctas_per_sm,
                sm.info().max_threads_per_sm,
                "{sm}"
            );
            assert_eq!(d.key_on(sm), "", "{sm}");
            let c = Fp8Tuning::candidates(sm);
            assert_eq!(c[0], d);
            assert!(c.len() >= 5, "{sm}: {c:?}");
            for t in &c[1..] {
                assert_ne!(t.key_on(sm), "", "{sm}: {t:?}");
            }
        }
        assert_eq!(Fp8Tuning::default_for(Sm::Sm90).ctas_per_sm, 8);
        assert_eq!(Fp8Tuning::default_for(Sm::Sm86).ctas_per_sm, 6);
        assert_eq!(Fp8Tuning::default_for(Sm::Sm75).ctas_per_sm, 4);
    }

    #[test]
    fn invalid_fields_are_named() {
        let d = Fp8Tuning::default_for(Sm::Sm80);
        for (t, e) in [
            (
                Fp8Tuning {
                    threads: 96 + 1,
                    ..d
                },
                Fp8TuningError::Threads { threads: 97 },
            ),
            (
                Fp8Tuning { threads: 32, ..d },
                Fp8TuningError::Threads { threads: 32 },
            ),
            (
                Fp8Tuning { threads: 2048, ..d },
                Fp8TuningError::Threads { threads: 2048 },
            ),
            (
                Fp8Tuning {
                    ctas_per_sm: 0,
                    ..d
                },
                Fp8TuningError::CtasPerSm { ctas_per_sm: 0 },
            ),
            (
                Fp8Tuning { unroll: 3, ..d },
                Fp8TuningError::Unroll { unroll: 3 },
            ),
        ] {
            assert_eq!(t.check(), Err(e.clone()));
            let err: Error = e.into();
            assert!(err.to_string().contains("fp8 tuning"), "{err}");
        }
    }

    #[test]
    fn grid_is_capped_by_the_tuning() {
        let t = Fp8Tuning {
            threads: 128,
            ctas_per_sm: 3,
            unroll: 1,
        };
        assert_eq!(t.grid_blocks(0, 10), 1);
        assert_eq!(t.grid_blocks(2048, 10), 1);
        assert_eq!(t.grid_blocks(2049, 10), 2);
        assert_eq!(t.grid_blocks(1 << 40, 10), 30);
    }
}
