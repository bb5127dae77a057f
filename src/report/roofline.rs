//! A roofline model of every kernel family at a named, realistic problem
//! size (the benches' sizes), on every card of [`super::hardware::GPUS`].
//!
//! # What is counted
//! * **Launches**: each problem runs the family's own launch code
//!   (`*_dev` entry points) on a [`record::Recorder`] context that reports
//!   the card's SM count, without executing anything (*dry*), at the full
//!   size: the kernels, their order and grids are the library's, not a
//!   copy of them.
//! * **Bytes** (DRAM traffic): per kernel, what its problem description in
//!   [`problems`] says it reads and writes: every input read once, every
//!   output written once, scratch written and read back, small arrays that
//!   stay in L2 across CTAs (transition matrices, the `D` and `x` operands
//!   of the score tiles) counted once. The problem's **essential bytes**
//!   (what the operation must move: inputs once, outputs once) set its
//!   memory roof.
//! * **Instructions**: the simulator's dynamic PTX count of each kernel
//!   on scaled-down shapes of the same problem (same kernels, same
//!   module text), extrapolated to the full size by a per-problem linear
//!   basis (e.g. `rows` and `rows · T`), times the kernel's **SASS/PTX
//!   ratio**, weighted per region ([`regions`]): each innermost PTX loop's
//!   dynamic count (the simulator's per-instruction counts summed over the
//!   loop, extrapolated like the total) times that loop's ratio (its SASS
//!   counterpart's instructions over the PTX loop's times ptxas' unroll
//!   factor, the loop's FP32 instructions in SASS over those in PTX,
//!   rounded), plus the rest of the function's count times the ratio of
//!   the SASS and PTX outside the innermost loops. Where the samples ran
//!   several modules of one entry, the hot loop's ratio (the innermost
//!   loop with the most FP32 math, the tuning report's rule) stands for
//!   the whole kernel, and a kernel without a loop uses the whole
//!   function's ratio. The simulator counts every
//!   thread's instructions (predicated-off ones included); a warp whose
//!   threads diverge issues both paths on a GPU, which the count misses
//!   (it matters only where one thread of a CTA works alone, e.g. a final
//!   log-sum by thread 0). FP32 math instructions are counted separately
//!   (PTX `add/sub/mul/fma/min/max .f32`, one SASS instruction each).
//! * **Times** on a card ([`speed`]): memory time = bytes / the streaming
//!   bandwidth ([`speed::STREAM_FRACTION`] of the card's); issue time =
//!   the SASS lane-instructions split over the SM's pipes by the regions'
//!   mixes weighted by their SASS counts ([`super::pipes`]), each busy SM's clocks the maximum over
//!   the dispatch floor (128 lane-instructions a clock) and each pipe at
//!   its rate (FP32 64 or 128, integer ALU and `IMAD` 64, `MUFU` and
//!   conversions 16, loads/stores/shuffles 32, …), and never less than the
//!   PTX's FP32 count at the FP32 rate nor its `mma` count at the tensor
//!   pipe's `HMMA` rate (one `HMMA` a warp's `mma.sync`); the most loaded SM gets the
//!   greedy bound max(`ceil(CTAs / SMs)` mean CTAs, the heaviest CTA) of
//!   the work (the simulator's heaviest CTA, extrapolated:
//!   [`speed::busiest_sm`]); latency time (kernels whose threads run one
//!   dependent chain) = warp-instructions of that SM × the mix's
//!   dependent-issue latency / the warps of the launch the SM holds (the
//!   occupancy the kernel gets), or the heaviest CTA's at its own warps
//!   where that is longer (the simulated critical path,
//!   [`speed::critical_path_s`], is reported beside it, not yet taken:
//!   [`KernelRow::critical_path_s`]); L2 time = the kernel's global memory accesses in bytes (the
//!   simulator's, [`l2`], extrapolated like the instructions) / the L2
//!   bandwidth a kernel reaches ([`speed::L2_FRACTION`] of the card's);
//!   modeled time = max(memory, L2, issue, latency). Launch overhead,
//!   barrier waits and L1 behaviour are not modelled.
//! * **Share of the roof**: for a memory-roof problem, essential bytes /
//!   bandwidth over the modeled time; for an FP32-roof problem (the score
//!   GEMM, block-ELL), its useful FP32 instructions (2 per separately
//!   rounded multiply-add, 1 per `fma.rn`) at the FP32 peak over the
//!   modeled time. A kernel row's share uses the kernel's own traffic or
//!   FP32 instructions.
//!
//! sm_70 (V100) has no SASS (nvdisasm 13.5 reads no sm_70 cubin), so its
//! rows have bytes and memory time only.

mod fit;
mod goals;
pub mod l2;
pub mod problems;
pub mod record;
pub mod regions;

pub use fit::{Fit, Predicted, check_fit, check_traffic, fit};
mod render;
pub mod speed;
mod svg;

use std::collections::BTreeMap;
use std::sync::Mutex;

use rayon::prelude::*;

use crate::dsl::PtxModule;
use crate::error::{Error, Result};
use crate::nvtools::{NvTools, SassFunction};
use crate::sim::Program;
use crate::target::Sm;

use super::FP32_MATH;
use super::hardware::{GPUS, Gpu};
use super::pipes::{IssueLimit, Pipe, PipeMix, PipeRates};
use crate::occupancy::Occupancy;
use fit::{Extrapolated, extrapolate};
use problems::{Problem, Roof};
use record::Launch;
use regions::LoopSummary;

/// The SASS side of one module, as the tuning report measured it.
#[derive(Debug, Clone, PartialEq)]
pub struct SassSummary {
    /// Instructions of the function (padding `NOP`s and the closing
    /// self-branch left out).
    pub total: usize,
    /// The hot loop's instructions and FP32 math instructions.
    pub hot: Option<(usize, usize)>,
    /// The function's instructions per pipe (same instructions as
    /// `total`).
    pub mix: PipeMix,
    /// The hot loop's instructions per pipe.
    pub hot_mix: Option<PipeMix>,
    /// Every innermost loop in address order: instructions, FP32 math
    /// (and `HMMA`) instructions, instructions per pipe
    /// ([`regions`]).
    pub loops: Vec<LoopSummary>,
    /// Registers per thread (ptxas `-v`; 0 until
    /// [`SassSummary::with_resources`]).
    pub regs: u32,
    /// Static shared memory per CTA in bytes (ptxas `-v`).
    pub smem: u32,
}

impl SassSummary {
    /// Summarise `f` (hot loop: [`super::hot_loop_range`]).
    pub fn of(f: &SassFunction) -> Self {
        let counted = || {
            f.instructions.iter().filter(|i| {
                let self_branch = i.base() == "BRA" && i.target == Some(i.address);
                !i.is("NOP") && !self_branch
            })
        };
        let total = counted().count();
        let mix = PipeMix::of(counted());
        let hot_mix = super::hot_loop_range(f).map(|r| PipeMix::of(f.in_range(&r)));
        let summarise = |r: &std::ops::RangeInclusive<u32>| {
            let n = f.in_range(r).count();
            let fp = f
                .in_range(r)
                .filter(|i| i.is("HMMA") || FP32_MATH.iter().any(|o| i.is(o)))
                .count();
            (n, fp)
        };
        let hot = super::hot_loop_range(f).map(|r| summarise(&r));
        let mut inner = f.innermost_loops();
        inner.sort_by_key(|r| *r.start());
        let loops = inner
            .iter()
            .map(|r| {
                let (instructions, fp32) = summarise(r);
                LoopSummary {
                    instructions,
                    fp32,
                    mix: PipeMix::of(f.in_range(r)),
                }
            })
            .collect();
        SassSummary {
            total,
            hot,
            mix,
            hot_mix,
            loops,
            regs: 0,
            smem: 0,
        }
    }

    /// The summary with ptxas' registers per thread and static shared
    /// memory per CTA (for the occupancy the kernel gets).
    pub fn with_resources(self, regs: u32, smem: u32) -> Self {
        SassSummary { regs, smem, ..self }
    }
}

/// SASS summaries of modules by `(kernel, tuning, sm, PTX text)`.
pub type SassCache = BTreeMap<(String, String, Sm, String), SassSummary>;

/// How a kernel's PTX count becomes SASS.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ratio {
    /// SASS instructions per PTX instruction.
    pub ratio: f64,
    /// ptxas' unroll factor of the hot loop (1 when unknown).
    pub unroll: u32,
    /// Whether the ratio is the hot loop's (else the whole function's or
    /// the weighted one).
    pub hot: bool,
    /// Whether the ratio is the regions' weighted by their dynamic counts
    /// ([`weighted_ratio`]).
    pub weighted: bool,
    /// The instructions per pipe of what the ratio was taken on (the hot
    /// loop, else the function): the shares the model splits the
    /// kernel's SASS count by.
    pub mix: PipeMix,
    /// Registers per thread.
    pub regs: u32,
    /// Static shared memory per CTA in bytes.
    pub smem: u32,
}

/// The PTX side: total instructions of the entry and its hot loop's
/// instructions and FP32 math instructions.
#[allow(clippy::type_complexity)]
fn ptx_summary(m: &PtxModule) -> Result<(usize, Option<(usize, usize)>, Vec<LoopSummary>)> {
    let prog = Program::parse(&m.ptx)?;
    let e = prog.entry(&m.kernel).ok_or_else(|| Error::Build {
        kernel: m.kernel.clone(),
        error: crate::dsl::BuildError::Inspect {
            message: "entry missing from its own module".into(),
        },
        location: None,
    })?;
    // FP32 math and `mma` (the tensor-core kernels' unit of work): what
    // ptxas' unroll factor is read from.
    let hot = regions::ptx_loops(e)
        .into_iter()
        .map(|l| (l.fp32, l.instructions))
        .max()
        .map(|(f, n)| (n, f));
    Ok((e.insts.len(), hot, regions::ptx_loops(e)))
}

/// The SASS/PTX ratio of a module from its SASS summary (see the
/// [module docs](self)).
pub fn ratio(m: &PtxModule, sass: &SassSummary) -> Result<Ratio> {
    let (ptx_total, ptx_hot, _) = ptx_summary(m)?;
    if let (Some((pn, pf)), Some((sn, sf))) = (ptx_hot, sass.hot) {
        let unroll = if pf > 0 && sf > 0 {
            ((sf as f64 / pf as f64).round() as u32).max(1)
        } else {
            1
        };
        return Ok(Ratio {
            ratio: sn as f64 / (f64::from(unroll) * pn as f64),
            unroll,
            hot: true,
            weighted: false,
            mix: sass.hot_mix.unwrap_or(sass.mix),
            regs: sass.regs,
            smem: sass.smem,
        });
    }
    Ok(Ratio {
        ratio: sass.total as f64 / ptx_total.max(1) as f64,
        unroll: 1,
        hot: false,
        weighted: false,
        mix: sass.mix,
        regs: sass.regs,
        smem: sass.smem,
    })
}

/// The SASS/PTX ratio of a module weighted by its regions' dynamic PTX
/// counts `regions` (one per innermost PTX loop, then the outside;
/// [`regions`]): the ratio and pipe mix are the regions' weighted by their
/// SASS counts, the unroll factor the hot loop's. Without region counts
/// that fit the module (`counts` empty: the samples ran several modules
/// of the entry), the hot loop's ratio ([`ratio`]).
pub fn weighted_ratio(m: &PtxModule, sass: &SassSummary, counts: &[f64]) -> Result<Ratio> {
    let hot = ratio(m, sass)?;
    let (ptx_total, _, loops) = ptx_summary(m)?;
    Ok(
        match regions::weighted(
            &loops,
            ptx_total,
            &sass.loops,
            sass.total,
            &sass.mix,
            counts,
        ) {
            Some((r, mix)) => Ratio {
                ratio: r,
                hot: false,
                weighted: true,
                mix,
                ..hot
            },
            None => hot,
        },
    )
}

/// One kernel of a problem on one card (every launch of that entry
/// summed).
#[derive(Debug, Clone, PartialEq)]
pub struct KernelRow {
    /// The entry's name.
    pub kernel: String,
    /// How many times the problem launches it.
    pub launches: usize,
    /// The largest grid among its launches, in CTAs.
    pub ctas: u64,
    /// DRAM bytes (the problem description's count).
    pub bytes: f64,
    /// L2 bytes: the simulator's global memory accesses ([`l2`]),
    /// extrapolated like the instruction counts.
    pub l2_bytes: f64,
    /// Extrapolated dynamic PTX instructions (thread-instructions).
    pub ptx: f64,
    /// Extrapolated FP32 math instructions.
    pub fp32: f64,
    /// Extrapolated warp-level MMA thread-instructions (`mma.*`; 32 a
    /// warp's `mma.sync`, one `HMMA`).
    pub mma: f64,
    /// `None` on sm_70 (no SASS).
    pub ratio: Option<Ratio>,
    /// Threads per CTA of its launches.
    pub threads: u32,
    /// Memory time in seconds: `bytes` / the streaming bandwidth
    /// ([`speed::STREAM_FRACTION`] of the card's).
    pub mem_s: f64,
    /// L2 time in seconds: `l2_bytes` / the L2 bandwidth a kernel reaches
    /// ([`speed::L2_FRACTION`] of the card's, [`speed::l2_s`]).
    pub l2_s: f64,
    /// Issue time in seconds (module docs, *Times*); `None` without SASS.
    pub issue_s: Option<f64>,
    /// What bounds the issue time; `None` without SASS.
    pub limit: Option<IssueLimit>,
    /// Latency time of a dependent chain in seconds (chain kernels with
    /// SASS only, [`speed::CHAIN_KERNELS`]).
    pub latency_s: Option<f64>,
    /// The critical-path bound ([`speed::critical_path_s`]; chain kernels
    /// with a simulated path only): a diagnostic beside the latency term,
    /// which does not take it yet (`speed`, *The critical path*).
    pub critical_path_s: Option<f64>,
    /// The occupancy the kernel gets (`None` without SASS: no resource
    /// figures read).
    pub occupancy: Option<Occupancy>,
}

impl KernelRow {
    /// Modeled SASS lane-instructions.
    pub fn sass(&self) -> Option<f64> {
        self.ratio.map(|r| self.ptx * r.ratio)
    }

    /// max(memory, L2, issue, latency); `None` without SASS.
    pub fn model_s(&self) -> Option<f64> {
        self.issue_s.map(|i| {
            i.max(self.mem_s)
                .max(self.l2_s)
                .max(self.latency_s.unwrap_or(0.0))
        })
    }

    /// The term that sets the modeled time: `memory`, `L2`, `latency`, or
    /// the issue limit (`dispatch`, a pipe); on a tie the earlier of
    /// memory, issue, L2 and latency.
    pub fn bound(&self) -> Option<String> {
        let i = self.issue_s?;
        let l = self.latency_s.unwrap_or(0.0);
        Some(
            if self.mem_s >= i && self.mem_s >= l && self.mem_s >= self.l2_s {
                "memory".into()
            } else if self.l2_s > i && self.l2_s > l {
                "L2".into()
            } else if l > i {
                "latency".into()
            } else {
                self.limit.map_or("issue".into(), |l| l.to_string())
            },
        )
    }
}

/// A goal of the issue, evaluated on a problem.
#[derive(Debug, Clone, PartialEq)]
pub enum Goal {
    /// The problem's share of its roof at least this (0..1).
    Share(f64),
    /// The dense SGEMM of `dense_macs` multiply-adds at the FMA peak (one
    /// `FFMA` per multiply-add, cuBLAS' arithmetic) takes at least `min`
    /// times the problem's modeled time.
    DenseSpeedup {
        /// Multiply-adds of the dense SGEMM.
        dense_macs: f64,
        /// The speedup required over it.
        min: f64,
    },
    /// On the card named `card` (`hardware::GPUS`), the problem's modeled
    /// time is at most `max_s` seconds (other cards show the figure only).
    TimeOn {
        /// The card's name in the hardware table, e.g. `"H200"`.
        card: &'static str,
        /// The time allowed, in seconds.
        max_s: f64,
    },
    /// The dense layer of `dense_macs` multiply-adds on the tensor cores in
    /// `shape` at [`problems::ell_tc::DENSE_TC_EFFICIENCY`] of the tensor
    /// peak (`torch.mm` in bf16 or TF32) takes at least `min` times the
    /// problem's modeled time.
    TensorDenseSpeedup {
        /// Multiply-adds of the dense layer.
        dense_macs: f64,
        /// The MMA shape (precision) of both.
        shape: super::pipes::MmaShape,
        /// The speedup required over it.
        min: f64,
    },
}

/// A goal's outcome on one card.
#[derive(Debug, Clone, PartialEq)]
pub struct GoalResult {
    /// What was required and what the model gives.
    pub text: String,
    /// `None` where the model has no figure (sm_70, or a baseline that
    /// exists only for sm_90).
    pub met: Option<bool>,
}

/// One problem on one card.
#[derive(Debug, Clone, PartialEq)]
pub struct ProblemRow {
    /// The kernel family ([`Problem::family`]).
    pub family: &'static str,
    /// The operation and its size ([`Problem::name`]).
    pub problem: String,
    /// The roof the problem is measured against.
    pub roof: Roof,
    /// Its kernels, in the order of their first launch.
    pub kernels: Vec<KernelRow>,
    /// Essential bytes (memory roof) or useful FP32 instructions (FP32
    /// roof).
    pub essential: f64,
    /// The problem's goal evaluated on this card, if it has one.
    pub goal: Option<GoalResult>,
}

impl ProblemRow {
    /// Sum of the kernels' modeled times; `None` without SASS or where
    /// the problem does not run on the card ([`Problem::runs_on`]).
    pub fn model_s(&self) -> Option<f64> {
        if self.kernels.is_empty() {
            return None;
        }
        self.kernels.iter().map(KernelRow::model_s).sum()
    }

    /// Sum of the kernels' bytes.
    pub fn bytes(&self) -> f64 {
        self.kernels.iter().map(|k| k.bytes).sum()
    }

    /// The problem's time at its roof on `gpu`.
    pub fn roof_s(&self, gpu: &Gpu) -> f64 {
        match self.roof {
            Roof::Memory => self.essential / gpu.bytes_per_s(),
            Roof::Fp32 => self.essential / gpu.fp32_instr_per_s(),
            Roof::Tensor(m) => self.essential / speed::tensor_flop_per_s(gpu, m),
        }
    }

    /// Roof time over modeled time.
    pub fn share(&self, gpu: &Gpu) -> Option<f64> {
        self.model_s().map(|m| self.roof_s(gpu) / m)
    }
}

/// The model of every problem on one card.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuRows {
    /// The card.
    pub gpu: Gpu,
    /// One row per problem, in the order of [`problems::all`].
    pub problems: Vec<ProblemRow>,
}

/// The whole model.
#[derive(Debug, Clone, PartialEq)]
pub struct Roofline {
    /// One entry per card of [`GPUS`], in that order.
    pub gpus: Vec<GpuRows>,
}

/// Evaluate `p` on `gpu` from its full-size launches, the extrapolated
/// counts and the SASS ratios.
fn evaluate(
    p: &Problem,
    gpu: &Gpu,
    full: &[Launch],
    counts: &BTreeMap<String, Extrapolated>,
    ratios: &BTreeMap<String, Option<Ratio>>,
) -> Result<ProblemRow> {
    let traffic = (p.traffic)(&p.full, gpu.sm);
    let mut kernels: Vec<KernelRow> = Vec::new();
    for l in full {
        let name = &l.module.kernel;
        if let Some(k) = kernels.iter_mut().find(|k| &k.kernel == name) {
            k.launches += 1;
            k.ctas = k.ctas.max(l.ctas());
            continue;
        }
        let bytes = traffic
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, b)| *b)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "roofline: {} launches {name}, which its description in \
                     src/report/roofline/problems.rs does not list: update it",
                    p.name
                ))
            })?;
        let (ptx, fp32, mma) = (counts[name].ptx, counts[name].fp32, counts[name].mma);
        let (bx, by, bz) = l.cfg.block;
        kernels.push(KernelRow {
            kernel: name.clone(),
            launches: 1,
            ctas: l.ctas(),
            bytes,
            l2_bytes: counts[name].l2,
            ptx,
            fp32,
            mma,
            ratio: ratios[name],
            threads: bx * by * bz,
            mem_s: bytes / (gpu.bytes_per_s() * speed::STREAM_FRACTION),
            l2_s: speed::l2_s(gpu, counts[name].l2),
            issue_s: None,
            limit: None,
            latency_s: None,
            critical_path_s: None,
            occupancy: None,
        });
    }
    for k in &mut kernels {
        let (Some(sass), Some(r)) = (k.sass(), k.ratio) else {
            continue;
        };
        // The heaviest CTA over the mean (`speed::busiest_sm`).
        let c = &counts[&k.kernel];
        let skew = if c.ptx > 0.0 && c.heaviest > 0.0 {
            speed::ticket_skew(&k.kernel, c.heaviest / c.ptx)
        } else {
            1.0
        };
        let t = speed::terms(
            gpu, &k.kernel, sass, skew, &r.mix, k.ctas, k.threads, r.regs, r.smem,
        );
        // The FP32 pipe never takes fewer clocks than the PTX's own FP32
        // count needs (the hot loop's share can miss FP32 work outside it).
        let fp32_sm = speed::busiest_sm(k.fp32, skew, k.ctas, gpu.sms);
        let fp = fp32_sm / (f64::from(gpu.fp32_lanes_per_sm) * gpu.boost_mhz * 1e6);
        // Likewise the tensor pipe and the PTX's own MMA count: every
        // `mma.sync` is one `HMMA` (the hot loop's mix can miss MMAs that
        // sit in another loop of the kernel).
        let mma_sm = speed::busiest_sm(k.mma, skew, k.ctas, gpu.sms);
        let tc = mma_sm / (PipeRates::of(gpu.sm).tensor_lanes() * gpu.boost_mhz * 1e6);
        k.issue_s = Some(t.issue_s.max(fp).max(tc));
        k.limit = Some(if fp > t.issue_s && fp >= tc {
            IssueLimit::Pipe(Pipe::Fp32)
        } else if tc > t.issue_s {
            IssueLimit::Pipe(Pipe::Tensor)
        } else {
            t.limit
        });
        // The critical path (`speed::critical_path_s`): the fit's CTAs ×
        // path over the launches' CTAs is the mean launch's path; the
        // ticketed kernels' simulated first CTA took every ticket, so its
        // path is over the CTA skew (as their skew is taken as 1).
        let path = if speed::is_chain(&k.kernel) && c.critical_path > 0.0 {
            let ctas: u64 = full
                .iter()
                .filter(|l| l.module.kernel == k.kernel)
                .map(|l| l.ctas())
                .sum();
            let mut path = c.critical_path / (ctas.max(1) as f64);
            if speed::TICKET_KERNELS.contains(&k.kernel.as_str()) && c.ptx > 0.0 {
                path /= (c.heaviest / c.ptx).max(1.0);
            }
            Some(speed::critical_path_s(
                gpu,
                path,
                k.launches,
                k.ctas,
                t.occupancy.ctas_per_sm,
            ))
        } else {
            None
        };
        // reported, not taken into the latency term (`speed`, *The
        // critical path*: in PTX order it misses ptxas's scheduling)
        k.latency_s = t.latency_s;
        k.critical_path_s = path;
        k.occupancy = Some(t.occupancy);
    }
    let mut row = ProblemRow {
        family: p.family,
        problem: p.name.clone(),
        roof: p.roof,
        kernels,
        essential: (p.essential)(&p.full),
        goal: None,
    };
    row.goal = p.goal.as_ref().map(|g| goals::goal(g, &row, gpu));
    Ok(row)
}

/// Build the model of every problem on every card. `sass` holds the
/// tuning report's SASS summaries; modules it lacks are assembled and
/// disassembled here. One job per problem on rayon's pool (its SMs in
/// turn): the samples are simulated once per SM (grids sized for the first
/// card with that SM; the samples are small enough that no grid cap
/// binds), and not at all on an SM whose sample runs launch the same
/// modules, but for their target lines, with the same grids as an SM done
/// before (their counts are reused: `fit.rs`, `SampleMemo`); the full-size
/// launches are recorded for each card.
pub fn generate(tools: &NvTools, sass: &SassCache) -> Result<Roofline> {
    generate_with_progress(tools, sass, &|_| {})
}

/// [`generate`], reporting one phase ("roofline problem × SM") with a
/// unit per job to `progress` (see [`super::Progress`]).
pub fn generate_with_progress(
    tools: &NvTools,
    sass: &SassCache,
    progress: super::ProgressFn<'_>,
) -> Result<Roofline> {
    // `PTXSMITH_ROOFLINE_ONLY=<text>`: only the problems whose family or
    // name contains `text` (a quicker model while one kernel is tuned).
    let only = std::env::var("PTXSMITH_ROOFLINE_ONLY").ok();
    let problems: Vec<Problem> = (problems::all().into_iter())
        .filter(|p| {
            only.as_deref()
                .is_none_or(|o| p.family.contains(o) || p.name.contains(o))
        })
        .collect();
    let mut sms_of: Vec<Sm> = GPUS.iter().map(|g| g.sm).collect();
    sms_of.sort_unstable();
    sms_of.dedup();
    let units = problems.len() * sms_of.len();
    progress(super::Progress::Phase {
        name: "roofline problem × SM",
        units,
    });
    let cache = Mutex::new(sass.clone());
    // Per card of the SM: (full-size launches, counts, SASS ratios).
    type Done = Vec<(
        Vec<Launch>,
        BTreeMap<String, Extrapolated>,
        BTreeMap<String, Option<Ratio>>,
    )>;
    let times = std::env::var_os("PTXSMITH_ROOFLINE_TIMES").is_some();
    // One job per problem, its SMs in turn: a sample run whose modules
    // (but for their target lines) and grids another SM already ran is
    // not simulated again (`fit::SampleMemo`).
    let one = |p: &Problem, sm: Sm, memo: &mut fit::SampleMemo| -> Result<Done> {
        let cards: Vec<&Gpu> = GPUS.iter().filter(|g| g.sm == sm).collect();
        if !p.runs_on(sm) {
            return Ok(cards.iter().map(|_| Default::default()).collect());
        }
        let (fits, sampled) = fit::fit_memo(p, sm, cards[0].sms, memo)?;
        let mut done = Vec::new();
        for g in cards {
            let full = check_traffic(p, sm, g.sms)?;
            let counts = extrapolate(p, sm, g.sms, &fits, &sampled, &full)?;
            let mut ratios = BTreeMap::new();
            for l in &full {
                if ratios.contains_key(&l.module.kernel) {
                    continue;
                }
                let r = if sm == Sm::Sm70 {
                    None
                } else {
                    let sum = summary(tools, &cache, &l.module)?;
                    let c = &counts[&l.module.kernel].regions;
                    Some(weighted_ratio(&l.module, &sum, c)?)
                };
                ratios.insert(l.module.kernel.clone(), r);
            }
            done.push((full, counts, ratios));
        }
        Ok(done)
    };
    // Problems on every core (the simulator's CTAs share rayon's pool).
    let results: Vec<((usize, Sm), Result<Done>)> = (problems.par_iter().enumerate())
        .flat_map_iter(|(pi, p)| {
            let mut memo = fit::SampleMemo::default();
            (sms_of.iter())
                .map(|&sm| {
                    let t0 = std::time::Instant::now();
                    let r = one(p, sm, &mut memo);
                    if times {
                        eprintln!("{:>7.2} s  {sm}: {}", t0.elapsed().as_secs_f64(), p.name);
                    }
                    progress(super::Progress::Done {
                        what: &format!("{} {sm}", p.name),
                    });
                    ((pi, sm), r)
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let mut done: BTreeMap<(usize, Sm), Done> = BTreeMap::new();
    for (k, r) in results {
        done.insert(k, r?);
    }
    let mut gpus = Vec::new();
    for gpu in GPUS {
        let nth = GPUS
            .iter()
            .filter(|g| g.sm == gpu.sm)
            .position(|g| g.name == gpu.name)
            .expect("the card is in the table");
        let mut rows = Vec::new();
        for (pi, p) in problems.iter().enumerate() {
            let (full, counts, ratios) = &done[&(pi, gpu.sm)][nth];
            rows.push(evaluate(p, &gpu, full, counts, ratios)?);
        }
        gpus.push(GpuRows {
            gpu,
            problems: rows,
        });
    }
    Ok(Roofline { gpus })
}

/// The SASS summary of `m`, from the cache or assembled now.
fn summary(tools: &NvTools, cache: &Mutex<SassCache>, m: &PtxModule) -> Result<SassSummary> {
    let key = (m.kernel.clone(), m.tuning.clone(), m.sm, m.ptx.clone());
    if let Some(s) = cache.lock().expect("sass cache").get(&key) {
        return Ok(s.clone());
    }
    let err = |e: &dyn std::fmt::Display| Error::Build {
        kernel: m.kernel.clone(),
        error: crate::dsl::BuildError::Inspect {
            message: format!("{} on {}: {e}", m.tuning, m.sm),
        },
        location: None,
    };
    let asm = tools.assemble(&m.ptx, m.sm).map_err(|e| err(&e))?;
    let usage = asm
        .function(&m.kernel)
        .ok_or_else(|| err(&"no resource report for the entry"))?
        .clone();
    let sass = tools.disassemble(&asm).map_err(|e| err(&e))?;
    let f = sass
        .function(&m.kernel)
        .ok_or_else(|| err(&"no SASS for the entry"))?;
    let s = SassSummary::of(f).with_resources(usage.registers, usage.shared_bytes);
    cache.lock().expect("sass cache").insert(key, s.clone());
    Ok(s)
}

impl Roofline {
    /// The roofline section of `docs/tuning.md`.
    pub fn markdown(&self) -> String {
        render::markdown(self)
    }

    /// The roofline picture (`docs/roofline.svg`).
    pub fn svg(&self) -> String {
        svg::render(self)
    }

    /// Every problem and kernel on every card as tab-separated values
    /// (`docs/roofline.tsv`, which the benches embed to print the modeled
    /// figure next to the measured one): card, its device token and SM
    /// count, SM target, family, problem, kernel (`*` for the problem's
    /// total), modeled seconds and share of the roof (empty without SASS).
    pub fn tsv(&self) -> String {
        let mut s =
            String::from("card\ttoken\tsms\tsm\tfamily\tproblem\tkernel\tmodeled_s\tshare\n");
        let num = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.4e}"));
        for g in &self.gpus {
            let gpu = &g.gpu;
            for p in &g.problems {
                let mut line = |kernel: &str, t: Option<f64>, share: Option<f64>| {
                    s.push_str(&format!(
                        "{}\t{}\t{}\t{}\t{}\t{}\t{kernel}\t{}\t{}\n",
                        gpu.name,
                        gpu.device_token,
                        gpu.sms,
                        gpu.sm,
                        p.family,
                        p.problem,
                        num(t),
                        num(share)
                    ));
                };
                line("*", p.model_s(), p.share(gpu));
                for k in &p.kernels {
                    let share = render::kernel_share(k, p, gpu);
                    line(&k.kernel, k.model_s(), share);
                }
            }
        }
        s
    }

    /// The rows of the card called `name`.
    pub fn gpu(&self, name: &str) -> Option<&GpuRows> {
        self.gpus.iter().find(|g| g.gpu.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(mem_s: f64, l2_s: f64, issue_s: f64, latency_s: Option<f64>) -> KernelRow {
        KernelRow {
            kernel: "k".into(),
            launches: 1,
            ctas: 1,
            bytes: 0.0,
            l2_bytes: 0.0,
            ptx: 0.0,
            fp32: 0.0,
            mma: 0.0,
            ratio: None,
            threads: 32,
            mem_s,
            l2_s,
            issue_s: Some(issue_s),
            limit: Some(IssueLimit::Dispatch),
            latency_s,
            critical_path_s: None,
            occupancy: None,
        }
    }

    /// The L2 term enters the modeled time and names the bound when it
    /// is the largest; memory wins a tie, as before the term existed.
    #[test]
    fn l2_term_sets_the_time_when_largest() {
        let k = row(1.0, 3.0, 2.0, Some(2.5));
        assert_eq!(k.model_s(), Some(3.0));
        assert_eq!(k.bound().as_deref(), Some("L2"));
        let k = row(3.0, 3.0, 2.0, None);
        assert_eq!(k.model_s(), Some(3.0));
        assert_eq!(k.bound().as_deref(), Some("memory"));
        let k = row(1.0, 2.0, 3.0, None);
        assert_eq!(k.model_s(), Some(3.0));
        assert_eq!(k.bound().as_deref(), Some("dispatch"));
        let k = row(1.0, 2.0, 1.5, Some(4.0));
        assert_eq!(k.model_s(), Some(4.0));
        assert_eq!(k.bound().as_deref(), Some("latency"));
        // No SASS, no modeled time.
        let k = KernelRow {
            issue_s: None,
            ..row(1.0, 2.0, 0.0, None)
        };
        assert_eq!(k.model_s(), None);
    }
}
