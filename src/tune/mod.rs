//! A tuner for users' kernels: candidates (any `Clone + Debug` value:
//! block sizes, unroll factors, a tuning struct) each generate a
//! [`Kernel<A>`]; the tuner checks that every candidate gives the **same
//! bits** on the simulator, ranks them per SM and returns the winner of
//! each SM with the evidence ([`Tuned`]).
//!
//! # How candidates are run
//!
//! For each SM and candidate, `generate(sm, &candidate)` makes the kernel
//! (a [`PtxModule`](crate::dsl::PtxModule) built otherwise becomes one
//! with [`Kernel::from_module`](crate::dsl::Kernel::from_module)) and `launch(&mut trial, &candidate)` runs it: it uploads its inputs on
//! [`Trial::stream`], launches through [`Trial::launch`] (which records
//! the launch configuration) and returns the output elements. On the
//! simulator ([`Context::sim`] for that SM, a fresh one per candidate) the
//! outputs of all candidates must be bit-identical, else
//! [`TuneError::Differs`] names the two candidates and the first differing
//! byte.
//!
//! # The ranking
//!
//! **Timed**, on the SM of a GPU when one is present ([`Context::cuda`]`(0)`
//! succeeds and [`Tuner::gpu`] is on, the default): each
//! [`Trial::launch`] is run [`Tuner::warmup`] times, then
//! [`Tuner::runs`] times, each time measured on the device by CUDA events
//! recorded before and after the launch ([`Stream::timed`](crate::runtime::Stream::timed):
//! `cuEventElapsedTime`, without the host's launch overhead); a
//! candidate's time is the sum over its launches of each launch's
//! median. The GPU's outputs must also be bit-identical to the
//! simulator's ([`TuneError::GpuDiffers`]). Launches are repeated, so a
//! launch must overwrite its outputs (not accumulate into them).
//!
//! **Estimated**, on every other SM (and on the GPU's too, as evidence):
//! a cost in warp-issue slots,
//!
//! ```text
//! cost = (instructions / 32 + global_bytes / 32) / min(1, occupancy / 0.25)
//! ```
//!
//! * `instructions`: the simulator's dynamic instruction count (per thread,
//!   summed; `/ 32` makes it warp instructions);
//! * `global_bytes`: the bytes the kernel's global loads, stores and
//!   atomics moved on the simulator (`/ 32`: 32-byte sectors, one issue
//!   slot each);
//! * `occupancy`: resident warps per SM as a share of the SM's maximum
//!   (the lowest over the candidate's launches), from the launch's block
//!   size and dynamic shared memory, and, when the pinned ptxas is
//!   installed ([`NvTools::locate`]), its register and static shared
//!   memory report; latency counts as hidden from a quarter of the SM's
//!   warps on ([`estimate::HIDING_FRACTION`]).
//!
//! Lower is faster; ties go to the earlier candidate. This is a coarse
//! model: it tells a candidate that issues fewer instructions, moves
//! fewer bytes or keeps enough warps resident from one that does not, not
//! two candidates that differ in scheduling only (e.g. two block sizes
//! with full occupancy). A per-pipe model (issue, memory, tensor pipes per
//! SM) is coming in the `report` module; timed launches on a GPU decide
//! where one is present. What crossed the bus ([`Traffic`]) is recorded
//! as evidence.
//!
//! ```
//! use ptxsmith::dsl::{Kernel, params::Ptr, types::{F32, U32}, Rounding::Rn};
//! use ptxsmith::runtime::LaunchConfig;
//! use ptxsmith::tune::Tuner;
//! use ptxsmith::{Sm, kernel_params};
//! kernel_params! { pub struct ScaleArgs => ScaleRegs { x: Ptr<F32>, out: Ptr<F32>, n: U32 } }
//!
//! let x: Vec<f32> = (0..1000).map(|i| i as f32 * 0.5).collect();
//! let tuned = Tuner::new([Sm::Sm80, Sm::Sm90]).gpu(false).tune(
//!     &[64u32, 256],
//!     |sm, _block| {
//!         Kernel::<ScaleArgs>::generate("scale", sm, |b, p| {
//!             b.grid_stride(p.n, |b, i| {
//!                 let (xi, oi) = (b.offset(p.x, i), b.offset(p.out, i));
//!                 let v = b.ld_global(xi, 0);
//!                 let y = b.fmul(Rn, v, 3.0f32);
//!                 b.st_global(oi, 0, y);
//!             })
//!         })
//!     },
//!     |t, &block| {
//!         let st = t.stream().clone();
//!         let xd = st.upload(&x)?;
//!         let mut out = st.context().alloc::<f32>(x.len())?;
//!         let args = ScaleArgs { x: st.arg("x", &xd)?, out: st.arg_mut("out", &mut out)?, n: 1000 };
//!         t.launch(LaunchConfig::linear(4, block), args)?;
//!         st.to_vec(&out)
//!     },
//! )?;
//! assert_eq!(tuned.winners.len(), 2);
//! println!("{:?}", tuned.winner(Sm::Sm90));
//! # Ok::<(), ptxsmith::tune::TuneError>(())
//! ```
//!
//! [`Kernel<A>`]: crate::dsl::Kernel
//! [`NvTools::locate`]: crate::nvtools::NvTools::locate
//! [`Traffic`]: crate::exec::Traffic

pub mod estimate;
mod run;

use std::fmt::Debug;
use std::time::Duration;

pub use estimate::{Estimate, Occupancy};
pub use run::Trial;

use crate::dsl::{Kernel, KernelParams};
use crate::error::Error;
use crate::runtime::Context;
use crate::target::Sm;

/// Why tuning failed.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    /// No candidates, or no SMs, to tune.
    #[error("nothing to tune: {0}")]
    Nothing(&'static str),
    /// A candidate failed to generate or run.
    #[error("candidate {candidate} on {sm}: {source}")]
    Candidate {
        /// The candidate (its `Debug` text).
        candidate: String,
        /// The SM.
        sm: Sm,
        /// What failed.
        #[source]
        source: Box<Error>,
    },
    /// Two candidates gave different bits on the simulator.
    #[error(
        "candidates {first} and {second} differ on {sm} (simulator): first difference at byte \
         {byte} ({first_byte} vs {second_byte}); outputs of {first_len} and {second_len} bytes"
    )]
    Differs {
        /// The SM.
        sm: Sm,
        /// The first candidate (the reference: the first of the list).
        first: String,
        /// The candidate whose output differs from it.
        second: String,
        /// The offset of the first differing byte (the shorter length when
        /// one output is a prefix of the other).
        byte: usize,
        /// The first candidate's byte there (`None` past its end).
        first_byte: ByteAt,
        /// The second candidate's byte there.
        second_byte: ByteAt,
        /// The first candidate's output length, in bytes.
        first_len: usize,
        /// The second candidate's output length, in bytes.
        second_len: usize,
    },
    /// A candidate's output on the GPU differs from the simulator's.
    #[error(
        "candidate {candidate} on {sm}: the GPU's output differs from the simulator's at byte \
         {byte} ({gpu_byte} on the GPU vs {sim_byte} on the simulator)"
    )]
    GpuDiffers {
        /// The SM (the GPU's).
        sm: Sm,
        /// The candidate.
        candidate: String,
        /// The first differing byte.
        byte: usize,
        /// The GPU's byte there.
        gpu_byte: ByteAt,
        /// The simulator's byte there.
        sim_byte: ByteAt,
    },
}

/// A byte of an output, or its end (for the messages of [`TuneError`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteAt(pub Option<u8>);

impl std::fmt::Display for ByteAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(b) => write!(f, "{b:#04x}"),
            None => f.write_str("past the end"),
        }
    }
}

/// One candidate's evidence on one SM.
#[derive(Debug, Clone, PartialEq)]
pub struct Evidence<T> {
    /// The candidate.
    pub candidate: T,
    /// The simulator's estimate.
    pub estimate: Estimate,
    /// On the GPU's SM when a GPU was used: the sum over the candidate's
    /// launches of each launch's median device time (CUDA events).
    pub timed: Option<Duration>,
}

/// How the winner of an SM was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ranking {
    /// By timed launches on a GPU of that SM.
    Timed,
    /// By the estimate (see the module docs).
    Estimated,
}

/// The outcome on one SM.
#[derive(Debug, Clone, PartialEq)]
pub struct SmResult<T> {
    /// The SM.
    pub sm: Sm,
    /// Index of the winner in [`evidence`](Self::evidence) (and in the
    /// candidate list).
    pub winner: usize,
    /// How the winner was chosen.
    pub ranking: Ranking,
    /// Every candidate's evidence, in the candidates' order.
    pub evidence: Vec<Evidence<T>>,
}

impl<T> SmResult<T> {
    /// The winning candidate.
    pub fn best(&self) -> &T {
        &self.evidence[self.winner].candidate
    }
}

/// The tuner's result: one [`SmResult`] per SM, in the order asked.
#[derive(Debug, Clone, PartialEq)]
pub struct Tuned<T> {
    /// Per SM.
    pub winners: Vec<SmResult<T>>,
}

impl<T> Tuned<T> {
    /// The winning candidate for `sm`, if `sm` was tuned.
    pub fn winner(&self, sm: Sm) -> Option<&T> {
        self.winners.iter().find(|r| r.sm == sm).map(SmResult::best)
    }
}

/// Tuning settings: the SMs, whether to time on a GPU, warm-up and runs.
#[derive(Debug, Clone)]
pub struct Tuner {
    sms: Vec<Sm>,
    gpu: bool,
    ptxas: bool,
    warmup: u32,
    runs: u32,
}

impl Tuner {
    /// Tune for `sms`, timing on a GPU when one is present, 3 warm-up and
    /// 10 timed runs per launch, with ptxas' report when it is installed.
    pub fn new(sms: impl IntoIterator<Item = Sm>) -> Self {
        Tuner {
            sms: sms.into_iter().collect(),
            gpu: true,
            ptxas: true,
            warmup: 3,
            runs: 10,
        }
    }

    /// Whether to time on `Context::cuda(0)` when it opens (default on).
    pub fn gpu(mut self, on: bool) -> Self {
        self.gpu = on;
        self
    }

    /// Whether to ask the pinned ptxas for registers and shared memory
    /// (default on; skipped when it is not installed).
    pub fn ptxas(mut self, on: bool) -> Self {
        self.ptxas = on;
        self
    }

    /// Untimed launches before the timed ones (default 3).
    pub fn warmup(mut self, n: u32) -> Self {
        self.warmup = n;
        self
    }

    /// Timed launches per launch, of which the median counts (default
    /// 10, at least 1).
    pub fn runs(mut self, n: u32) -> Self {
        self.runs = n.max(1);
        self
    }

    /// Tune `candidates`: see the [module docs](self).
    ///
    /// # Errors
    /// [`TuneError::Nothing`] without candidates or SMs;
    /// [`TuneError::Candidate`] when one fails to generate or run;
    /// [`TuneError::Differs`] when two give different bits on the
    /// simulator; [`TuneError::GpuDiffers`] when the GPU's bits are not the
    /// simulator's.
    pub fn tune<T, A, E, G, L>(
        &self,
        candidates: &[T],
        generate: G,
        launch: L,
    ) -> Result<Tuned<T>, TuneError>
    where
        T: Clone + Debug,
        A: KernelParams,
        E: bytemuck::Pod,
        G: Fn(Sm, &T) -> crate::Result<Kernel<A>>,
        L: Fn(&mut Trial<'_, A>, &T) -> crate::Result<Vec<E>>,
    {
        if candidates.is_empty() {
            return Err(TuneError::Nothing("no candidates"));
        }
        if self.sms.is_empty() {
            return Err(TuneError::Nothing("no SMs"));
        }
        let tools = if self.ptxas {
            crate::nvtools::NvTools::locate()
        } else {
            None
        };
        let gpu = if self.gpu {
            Context::cuda(0).ok()
        } else {
            None
        };
        let mut winners = Vec::with_capacity(self.sms.len());
        for &sm in &self.sms {
            let fail = |c: &T, source: Error| TuneError::Candidate {
                candidate: format!("{c:?}"),
                sm,
                source: Box::new(source),
            };
            let mut evidence = Vec::with_capacity(candidates.len());
            let mut reference: Option<Vec<u8>> = None;
            let timing_ctx = gpu.as_ref().filter(|g| g.sm() == sm);
            for c in candidates {
                let kernel = generate(sm, c).map_err(|e| fail(c, e))?;
                let (bytes, estimate) =
                    run::on_sim(sm, &kernel, c, &launch, tools.as_ref()).map_err(|e| fail(c, e))?;
                match &reference {
                    None => reference = Some(bytes.clone()),
                    Some(r) => {
                        if let Some(byte) = first_difference(r, &bytes) {
                            return Err(TuneError::Differs {
                                sm,
                                first: format!("{:?}", candidates[0]),
                                second: format!("{c:?}"),
                                byte,
                                first_byte: ByteAt(r.get(byte).copied()),
                                second_byte: ByteAt(bytes.get(byte).copied()),
                                first_len: r.len(),
                                second_len: bytes.len(),
                            });
                        }
                    }
                }
                let timed = match timing_ctx {
                    Some(ctx) => {
                        let (gpu_bytes, t) =
                            run::timed(ctx, &kernel, c, &launch, self.warmup, self.runs)
                                .map_err(|e| fail(c, e))?;
                        if let Some(byte) = first_difference(&bytes, &gpu_bytes) {
                            return Err(TuneError::GpuDiffers {
                                sm,
                                candidate: format!("{c:?}"),
                                byte,
                                gpu_byte: ByteAt(gpu_bytes.get(byte).copied()),
                                sim_byte: ByteAt(bytes.get(byte).copied()),
                            });
                        }
                        Some(t)
                    }
                    None => None,
                };
                evidence.push(Evidence {
                    candidate: c.clone(),
                    estimate,
                    timed,
                });
            }
            let (winner, ranking) = rank(&evidence);
            winners.push(SmResult {
                sm,
                winner,
                ranking,
                evidence,
            });
        }
        Ok(Tuned { winners })
    }
}

/// The winner: the shortest time when every candidate was timed, else the
/// lowest cost; the earlier candidate on a tie.
fn rank<T>(evidence: &[Evidence<T>]) -> (usize, Ranking) {
    let times: Option<Vec<Duration>> = evidence.iter().map(|e| e.timed).collect();
    if let Some(times) = times {
        let best = (0..times.len()).min_by_key(|&i| (times[i], i)).unwrap_or(0);
        return (best, Ranking::Timed);
    }
    let best = (0..evidence.len())
        .min_by(|&i, &j| {
            evidence[i]
                .estimate
                .cost
                .total_cmp(&evidence[j].estimate.cost)
                .then(i.cmp(&j))
        })
        .unwrap_or(0);
    (best, Ranking::Estimated)
}

/// The offset of the first byte where `a` and `b` differ (the shorter
/// length when one is a prefix of the other), `None` when equal.
fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    a.iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .or_else(|| (a.len() != b.len()).then(|| a.len().min(b.len())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::Traffic;

    #[test]
    fn first_difference_finds_bytes_and_lengths() {
        assert_eq!(first_difference(&[1, 2, 3], &[1, 2, 3]), None);
        assert_eq!(first_difference(&[1, 2, 3], &[1, 9, 3]), Some(1));
        assert_eq!(first_difference(&[1, 2], &[1, 2, 3]), Some(2));
    }

    fn ev(cost: f64, timed: Option<u64>) -> Evidence<u32> {
        Evidence {
            candidate: 0,
            estimate: Estimate {
                registers: None,
                shared_bytes: 0,
                launches: vec![],
                occupancy: None,
                instructions: 0,
                global_bytes: 0,
                traffic: Traffic::default(),
                cost,
            },
            timed: timed.map(Duration::from_micros),
        }
    }

    #[test]
    fn ranking_prefers_time_then_cost_then_order() {
        assert_eq!(
            rank(&[ev(2.0, None), ev(1.0, None)]),
            (1, Ranking::Estimated)
        );
        assert_eq!(
            rank(&[ev(1.0, None), ev(1.0, None)]),
            (0, Ranking::Estimated)
        );
        assert_eq!(
            rank(&[ev(1.0, Some(9)), ev(2.0, Some(5))]),
            (1, Ranking::Timed)
        );
    }
}
