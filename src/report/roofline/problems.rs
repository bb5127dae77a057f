//! The problems the roofline model covers: one operation of each kernel
//! family at a named size (the benches' sizes), how to run it through the
//! family's launch code, how its cost scales (the extrapolation basis),
//! and what DRAM traffic each of its kernels must cause.
//!
//! **Keep these in step with the kernels.** A problem's traffic list names
//! every kernel entry its launch code launches; [`super::generate`] fails
//! naming the problem when a kernel is launched that the list lacks, or
//! listed that is no longer launched. A rewritten family needs its entries
//! here updated: the run function (if the entry points change), the sample
//! shapes (small, but launching every kernel the full size launches, with
//! the same module text), the basis (one term per way the cost grows) and
//! the traffic. The block-ELL problems live in `problems/ell.rs`.
//!
//! Sample shapes are simulated; keep their dynamic instruction counts to a
//! few tens of millions, since the report runs them for every target.

use crate::error::Result;
use crate::kernels::block_ell::{self, DeviceTopology, Dims};
use crate::kernels::block_scaled::{self as bs, Format as BsFormat, Recipe, ScaleLayout};
use crate::kernels::score::launch::RoutePlan;
use crate::kernels::score::ptx::ScoreTuning;
use crate::kernels::score::{Route, ScoreShape};
use crate::kernels::{dot, fp8, hmm, logcumsumexp, score, viterbi};
use crate::runtime::{AsDevice, AsDeviceMut, DeviceBuffer, DeviceRepr, Stream};
use crate::target::Sm;

use super::Goal;

mod ell;
pub mod ell_tc;
use ell::block_ell_problems;
use ell_tc::block_ell_tc_problems;

/// A problem's size parameters (their meaning is the problem's).
pub type Shape = Vec<usize>;

/// The roof a problem is measured against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Roof {
    /// DRAM bandwidth (essential bytes / bandwidth).
    Memory,
    /// The FP32 peak (useful FP32 instructions / FP32 lanes × clock).
    Fp32,
    /// The dense tensor-core peak of an `mma.sync` shape (useful FLOP /
    /// [`super::speed::tensor_flop_per_s`]).
    Tensor(crate::report::pipes::MmaShape),
}

type RunFn = dyn Fn(&Stream, &Shape, bool) -> Result<()> + Send + Sync;
type BasisFn = dyn Fn(&Shape, Sm, u32) -> Vec<f64> + Send + Sync;
type TrafficFn = dyn Fn(&Shape, Sm) -> Vec<(String, f64)> + Send + Sync;
type ScalarFn = dyn Fn(&Shape) -> f64 + Send + Sync;

/// One problem.
pub struct Problem {
    /// The kernel family (its folder under `src/kernels/`).
    pub family: &'static str,
    /// The operation and its size, as the report prints it.
    pub name: String,
    /// The roof its share is measured against.
    pub roof: Roof,
    /// The named size.
    pub full: Shape,
    /// Scaled-down shapes that are simulated; as many as basis terms.
    pub samples: Vec<Shape>,
    /// A further sample simulated on a card with this few SMs, so that
    /// grid-stride loops give each thread more work: its presence adds
    /// a per-launched-thread term (the threads' prologue) to each kernel's
    /// fit. For kernels whose grids are capped by the SM count at the full
    /// size (element loops), where the samples' threads scale with the
    /// work but the full size's do not.
    pub capped: Option<(Shape, u32)>,
    /// A further small shape the fitted basis must predict
    /// (`tests/roofline.rs` simulates it and compares).
    pub check: Shape,
    /// The extrapolation basis at a shape, on an SM with a given SM count:
    /// each kernel's dynamic count is fitted as a linear combination.
    pub basis: Box<BasisFn>,
    /// Queue the operation on `stream` at `shape`; `dry` means the buffers
    /// are allocated but not filled (nothing runs).
    pub run: Box<RunFn>,
    /// DRAM bytes per kernel entry (summed over its launches) at a shape.
    pub traffic: Box<TrafficFn>,
    /// Essential bytes (memory roof) or useful FP32 instructions (FP32
    /// roof) at a shape.
    pub essential: Box<ScalarFn>,
    /// The goal for this problem, if any.
    pub goal: Option<Goal>,
    /// What the byte counts assume, printed under the tables.
    pub note: &'static str,
}

/// A deterministic LCG (the benches' generator).
struct Lcg(u32);

impl Lcg {
    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f32 {
        self.0 = self.0.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (self.0 >> 8) as f32 / (1u32 << 24) as f32
    }
}

/// `n` floats from `f` uploaded, or (dry) an unfilled buffer.
fn input(
    st: &Stream,
    n: usize,
    seed: u32,
    dry: bool,
    f: impl Fn(&mut Lcg, usize) -> f32,
) -> Result<DeviceBuffer<f32>> {
    if dry {
        return st.context().alloc(n);
    }
    let mut g = Lcg(seed);
    let v: Vec<f32> = (0..n).map(|i| f(&mut g, i)).collect();
    st.upload(&v)
}

/// Uniform floats in `[lo, hi)`.
fn uniform(
    st: &Stream,
    n: usize,
    seed: u32,
    dry: bool,
    lo: f32,
    hi: f32,
) -> Result<DeviceBuffer<f32>> {
    input(st, n, seed, dry, |g, _| lo + (hi - lo) * g.unit())
}

/// Log-probabilities `ln(0.1 + 0.9 u)` (the HMM bench's model).
fn logp(st: &Stream, n: usize, seed: u32, dry: bool) -> Result<DeviceBuffer<f32>> {
    input(st, n, seed, dry, |g, _| (0.1 + 0.9 * g.unit()).ln())
}

/// Random bytes uploaded, or (dry) an unfilled buffer.
fn bytes_in(st: &Stream, n: usize, seed: u32, dry: bool) -> Result<DeviceBuffer<u8>> {
    if dry {
        return st.context().alloc(n);
    }
    let mut g = Lcg(seed);
    let v: Vec<u8> = (0..n).map(|_| (g.unit() * 256.0) as u8).collect();
    st.upload(&v)
}

fn out<T: DeviceRepr>(st: &Stream, n: usize) -> Result<DeviceBuffer<T>> {
    st.context().alloc(n)
}

fn f(v: usize) -> f64 {
    v as f64
}

const F32: f64 = 4.0;

/// Every problem, in report order.
pub fn all() -> Vec<Problem> {
    let mut v = vec![
        lcse_forward(),
        lcse_forward_long_row(),
        lcse_backward(),
        hmm_forward_backward(64, 1.5e-3),
        hmm_forward_backward(8, 1.2e-3),
        viterbi(),
        viterbi_s4096(),
    ];
    v.push(dot_rows());
    v.extend(fp8_problems());
    v.extend(block_scaled_problems());
    v.push(score_block());
    v.push(score_route());
    v.extend(block_ell_problems());
    v.extend(block_ell_tc_problems());
    v
}

impl Problem {
    /// Whether the problem's kernels exist on `sm` (the tensor-core
    /// problems from sm_80 only; elsewhere the request is refused and the
    /// card's row is empty).
    pub fn runs_on(&self, sm: Sm) -> bool {
        !matches!(self.roof, Roof::Tensor(_)) || ell_tc::runs_on(sm)
    }
}

// ---- logcumsumexp -------------------------------------------------------------

/// Rows of one tile take the row path whatever the SM count: one CTA per
/// row (`lcse_bwd`), cost linear in the rows (a launch's fixed cost, then
/// per row).
fn lcse_basis(s: &Shape, _: Sm, _: u32) -> Vec<f64> {
    vec![1.0, f(s[0])]
}

/// The forward's: one CTA per [`FWD_CHAINS`](logcumsumexp::ptx::FWD_CHAINS)
/// rows (an odd row count leaves a slot empty that still computes), cost
/// linear in those CTAs.
fn lcse_fwd_basis(s: &Shape, _: Sm, _: u32) -> Vec<f64> {
    let per = logcumsumexp::ptx::FWD_CHAINS as usize;
    vec![1.0, f(s[0].div_ceil(per))]
}

/// `[rows, 4096]` shapes: one tile a row, so the samples launch the same
/// kernel (`lcse_fwd` / `lcse_bwd`, row path) as the full size; `scale`
/// rows per step of the basis (the forward's CTAs take two rows).
fn lcse_samples(scale: usize) -> Vec<Shape> {
    vec![
        vec![scale, logcumsumexp::TILE],
        vec![2 * scale, logcumsumexp::TILE],
    ]
}

fn lcse_forward() -> Problem {
    Problem {
        family: "logcumsumexp",
        name: "forward [4096, 4096]".into(),
        roof: Roof::Memory,
        full: vec![4096, 4096],
        samples: lcse_samples(logcumsumexp::ptx::FWD_CHAINS as usize),
        check: vec![3, logcumsumexp::TILE],
        capped: None,
        basis: Box::new(lcse_fwd_basis),
        run: Box::new(|st, s, dry| {
            let shape = logcumsumexp::Shape::new(s[0], s[1])?;
            let x = uniform(st, shape.len(), 1, dry, -10.0, 10.0)?;
            let mut y = out::<f32>(st, shape.len())?;
            logcumsumexp::forward_dev(st, shape, &x, &mut y)
        }),
        traffic: Box::new(|s, _| vec![("lcse_fwd".into(), 2.0 * F32 * f(s[0] * s[1]))]),
        essential: Box::new(|s| 2.0 * F32 * f(s[0] * s[1])),
        goal: Some(Goal::Share(0.8)),
        note: "one CTA per two rows (T = 4096 is one tile; each thread walks a \
               segment of both rows, two log_add_exp chains in flight): x read and \
               y written once; essential: x in, y out (8 B/element)",
    }
}

/// The H200's modeled time of the forward `[4096, 4096]` (the many-rows
/// problem above, `docs/roofline.tsv`): the one long row's goal is 1.3×
/// it (issue 33: "a row of 2²⁴ elements within 1.3× of the same bytes
/// spread over many rows"). Update it with the table.
const LCSE_MANY_ROWS_H200_S: f64 = 47.1e-6;

/// One row of `n_τ` tiles takes the split path: `lcse_fwd_split`, a CTA
/// per tile (linear in `n_τ`), plus per run of `L` tiles the run
/// aggregate's fold and the run prefix's tree (linear in the number of
/// runs `⌈n_τ / L⌉`, `L` = 32 up to 4 096 tiles).
fn lcse_long_row_basis(s: &Shape, _: Sm, _: u32) -> Vec<f64> {
    let n = s[1].div_ceil(logcumsumexp::TILE);
    let l = logcumsumexp::host::run_len(n);
    vec![1.0, f(n), f(n.div_ceil(l))]
}

/// `[1, n·4096]`.
fn lcse_row_of(tiles: usize) -> Shape {
    vec![1, tiles * logcumsumexp::TILE]
}

fn lcse_forward_long_row() -> Problem {
    let tile = logcumsumexp::TILE;
    Problem {
        family: "logcumsumexp",
        name: "forward [1, 2^24] (one row)".into(),
        roof: Roof::Memory,
        full: lcse_row_of(1 << 12),
        samples: vec![lcse_row_of(2), lcse_row_of(4), lcse_row_of(34)],
        check: lcse_row_of(36),
        capped: None,
        basis: Box::new(lcse_long_row_basis),
        run: Box::new(|st, s, dry| {
            let shape = logcumsumexp::Shape::new(s[0], s[1])?;
            let x = uniform(st, shape.len(), 1, dry, -10.0, 10.0)?;
            let mut y = out::<f32>(st, shape.len())?;
            logcumsumexp::forward_dev(st, shape, &x, &mut y)
        }),
        traffic: Box::new(move |s, _| {
            let (rows, t) = (s[0], s[1]);
            let n = t.div_ceil(tile);
            // x in, y out; the zeroed scratch's 8-byte words, each tile
            // publishing two and reading about two.
            let words = logcumsumexp::ptx::scratch_words(rows, n);
            vec![(
                "lcse_fwd_split".into(),
                2.0 * F32 * f(rows * t) + 8.0 * f(words + 4 * rows * n),
            )]
        }),
        essential: Box::new(|s| 2.0 * F32 * f(s[0] * s[1])),
        goal: Some(Goal::TimeOn {
            card: "H200",
            max_s: 1.3 * LCSE_MANY_ROWS_H200_S,
        }),
        note: "the split path (one row: a CTA per tile) in one launch, lcse_fwd_split: \
               a CTA takes a tile by ticket, stages it, publishes its total, gets its \
               carry by a look-back over the published totals in the carry tree's \
               order (a run's last tile folds the run's aggregate, a run's first \
               tile the tree over the runs) and writes y: x read once (8 B/element, \
               plus 8-byte flagged words per tile); the waits between CTAs are not \
               modeled; essential: x in, y out (8 B/element); goal: 1.3× the \
               forward [4096, 4096] on the H200 (the same bytes over many rows, \
               47.1 µs modeled)",
    }
}

fn lcse_backward() -> Problem {
    Problem {
        family: "logcumsumexp",
        name: "backward [4096, 4096]".into(),
        roof: Roof::Memory,
        full: vec![4096, 4096],
        samples: lcse_samples(1),
        check: vec![3, logcumsumexp::TILE],
        capped: None,
        basis: Box::new(lcse_basis),
        run: Box::new(|st, s, dry| {
            let shape = logcumsumexp::Shape::new(s[0], s[1])?;
            let x = uniform(st, shape.len(), 1, dry, -10.0, 10.0)?;
            let g = uniform(st, shape.len(), 2, dry, -1.0, 1.0)?;
            let mut gx = out::<f32>(st, shape.len())?;
            logcumsumexp::backward_dev(st, shape, &x, &g, &mut gx)
        }),
        traffic: Box::new(|s, _| vec![("lcse_bwd".into(), 3.0 * F32 * f(s[0] * s[1]))]),
        essential: Box::new(|s| 3.0 * F32 * f(s[0] * s[1])),
        goal: Some(Goal::Share(0.7)),
        note: "one CTA a row, one pass (T = 4096 is one tile): x and g read, gx \
               written once; the forward output y is not an input; essential: \
               x, g in, gx out (12 B/element)",
    }
}

// ---- HMM and Viterbi ----------------------------------------------------------

/// `[batch, T, S]` shapes of the HMM and Viterbi problems.
const SEQ_FULL: [usize; 3] = [64, 1000, 256];

fn seq_samples() -> Vec<Shape> {
    vec![vec![1, 2, 256], vec![1, 3, 256]]
}

fn seq_basis(s: &Shape, _: Sm, _: u32) -> Vec<f64> {
    vec![f(s[0]), f(s[0] * s[1])]
}

/// A launch's fixed cost (the prep kernels), per sequence, per step.
fn hmm_basis(s: &Shape, _: Sm, _: u32) -> Vec<f64> {
    vec![1.0, f(s[0]), f(s[0] * s[1])]
}

/// The recursions' entry names for `batch` sequences of `s` states on
/// `sm`: a cluster of CTAs per sequence on sm_90+
/// (`hmm::ptx::cluster_for`), both recursions in one launch after the
/// emission maxima where `joint` and they fit one wave
/// (`hmm::ptx::joint_fits`) on the cards of `sm` (all of
/// [`crate::report::hardware::GPUS`] of sm_90+ have 132 SMs or more: batch
/// 8 takes the one launch on each, batch 64 on none).
fn hmm_recursion_names(batch: usize, s: usize, sm: Sm, joint: bool) -> Vec<String> {
    let cap = hmm::ptx::cap_for(s);
    let sp = s.next_multiple_of(16);
    let sms = crate::report::hardware::GPUS
        .iter()
        .filter(|g| g.sm == sm)
        .map(|g| g.sms)
        .min()
        .unwrap_or(0);
    match hmm::ptx::cluster_for(sm, s, sp, cap) {
        Some(n) if joint && hmm::ptx::joint_fits(sm, sms, batch, cap, n) => vec![
            hmm::ptx::MAXIMA_NAME.to_string(),
            hmm::ptx::fwdbwd_cluster_name(n, cap),
        ],
        Some(n) => vec![
            hmm::ptx::forward_cluster_name(n, cap),
            hmm::ptx::backward_cluster_name(n, cap),
        ],
        None => vec![hmm::ptx::forward_name(cap), hmm::ptx::backward_name(cap)],
    }
}

/// The forward-backward at `batch` × [`SEQ_FULL`]'s T and S, with issue
/// 33's goal for that batch (`max_s` on the H200). Batch 8 runs the
/// library's `forward_backward_dev`, which takes the joint launch
/// (`hmm_fwdbwd_cluster`, both recursions in one launch of `2·batch`
/// clusters) where it fits one wave, the samples (batch 1 and 2) too: its
/// backward clusters carry about 1.6× its forward ones' work, which the
/// model charges through the launch's heaviest CTA (`speed::busiest_sm`).
/// Batch 64 runs `forward_backward_dev_two_launches`, the launches it
/// takes at full size on every card, so that its small samples run the
/// same kernels.
fn hmm_forward_backward(batch: usize, max_s: f64) -> Problem {
    let joint = batch <= 8;
    Problem {
        family: "hmm",
        name: format!("forward-backward, batch {batch}, T 1000, S 256"),
        roof: Roof::Memory,
        full: vec![batch, SEQ_FULL[1], SEQ_FULL[2]],
        // The joint launch's heaviest CTA is a backward one from T 3 on
        // (a forward CTA below: its fixed cost is larger, its steps
        // cheaper), and the skew's fit (`Fit::heaviest`, linear in the
        // basis) holds only where the samples' heaviest CTAs are of the
        // full size's kind: its samples and check shape start at T 8.
        // Their `batch · T` is a multiple of 8, as the full size's is, so
        // that `hmm_fwdbwd_maxima` (a warp per position, 8 a CTA) launches
        // full CTAs whose count follows `batch · T`.
        samples: if joint {
            vec![vec![1, 8, 256], vec![1, 16, 256], vec![2, 8, 256]]
        } else {
            vec![vec![1, 2, 256], vec![1, 3, 256], vec![2, 2, 256]]
        },
        check: if joint {
            vec![2, 16, 256]
        } else {
            vec![2, 3, 256]
        },
        capped: None,
        basis: Box::new(hmm_basis),
        run: Box::new(move |st, sh, dry| {
            let shape = hmm::Shape::new(sh[0], sh[1], sh[2])?;
            let (b, t, s) = (sh[0], sh[1], sh[2]);
            let pi = logp(st, s, 1, dry)?;
            let a = logp(st, s * s, 2, dry)?;
            let e = logp(st, b * t * s, 3, dry)?;
            let mut alpha = out::<f32>(st, b * t * s)?;
            let mut beta = out::<f32>(st, b * t * s)?;
            let mut ll = out::<f32>(st, b)?;
            let mut gamma = out::<f32>(st, b * t * s)?;
            let mut xi = out::<f32>(st, b * s * s)?;
            let lengths = vec![t as u32; b];
            let inputs = hmm::DeviceInputs {
                log_pi: pi.as_device(),
                log_a: a.as_device(),
                log_b: e.as_device(),
                lengths: &lengths,
            };
            let outputs = hmm::DeviceOutputs {
                log_alpha: alpha.as_device_mut(),
                log_beta: beta.as_device_mut(),
                log_likelihood: ll.as_device_mut(),
                gamma: gamma.as_device_mut(),
                xi: xi.as_device_mut(),
            };
            if joint {
                hmm::forward_backward_dev(st, shape, &inputs, outputs)
            } else {
                hmm::forward_backward_dev_two_launches(st, shape, &inputs, outputs)
            }
        }),
        traffic: Box::new(move |sh, sm| {
            let (b, t, s) = (sh[0], sh[1], sh[2]);
            let sp = s.next_multiple_of(16);
            let plane = F32 * f(b * t * s);
            // per-step records: the max of log_b, the two normalizer pairs
            // (forward and backward), the fallback flags; W is [b, T, S16]
            let steps = F32 * f(b * t);
            let w = F32 * f(b * t * sp);
            let a = F32 * f(s * s);
            let names = hmm_recursion_names(b, s, sm, joint);
            let fwd = 3.0 * plane + 3.0 * steps + F32 * f(sp * sp);
            let bwd = 5.0 * plane + w + 4.0 * steps + F32 * f(sp * sp);
            let (fwd_bytes, bwd_bytes) = if names[0] == hmm::ptx::MAXIMA_NAME {
                (plane + steps, fwd + bwd)
            } else {
                (fwd, bwd)
            };
            vec![
                // log_a in, the maxima out
                ("hmm_prep_max".into(), a),
                // log_a in, the two shifted matrices out
                ("hmm_prep_exp".into(), a + 2.0 * F32 * f(sp * sp)),
                // log_b in; alpha (hi into log_alpha, lo into gamma) out; Mb
                // and the normalizer pairs out; Â once (L2-resident; on the
                // cluster path each CTA copies its slice into shared memory
                // once, from L2)
                // (the one launch: the forward's and the backward's bytes,
                // Mb read instead of written; the maxima kernel reads log_b
                // and writes Mb)
                (names[0].clone(), fwd_bytes),
                (names[1].clone(), bwd_bytes),
                // alpha (hi, lo), beta (hi, lo), W and the normalizers in;
                // gamma out; log_alpha and log_beta rewritten in place
                ("hmm_posteriors".into(), 7.0 * plane + w + 4.0 * steps),
                // gamma, W, R (hi, lo), the flags in (R and W once: they
                // stay in L2 across the state blocks); xi out
                (
                    "hmm_transitions".into(),
                    3.0 * plane + w + steps + F32 * f(b * s * s) + F32 * f(sp * sp),
                ),
            ]
        }),
        essential: Box::new(|sh| {
            let (b, t, s) = (sh[0], sh[1], sh[2]);
            // log_b in; alpha, beta, gamma, xi out.
            F32 * (4.0 * f(b * t * s) + f(b * s * s))
        }),
        // Issue 33: forward-backward with gamma and xi at batch 64, T 1000,
        // S 256 in at most 1.5 ms on the H200, at batch 8 in 1.2 ms.
        goal: Some(Goal::TimeOn {
            card: "H200",
            max_s,
        }),
        note: "every [batch, T, S] array read or written once per kernel that uses it, \
               the per-step records (W [batch, T, S16], R hi/lo, beta lo, alpha lo \
               in the gamma buffer) written once and read once by each kernel that \
               needs them, the shifted matrices once (they stay in L2); PyTorch: \
               2 × 16.8 MB per step",
    }
}

fn viterbi() -> Problem {
    Problem {
        family: "viterbi",
        name: "batch 64, T 1000, S 256".into(),
        roof: Roof::Memory,
        full: SEQ_FULL.to_vec(),
        samples: seq_samples(),
        check: vec![2, 2, 256],
        capped: None,
        basis: Box::new(seq_basis),
        run: Box::new(|st, sh, dry| {
            let (b, t, s) = (sh[0], sh[1], sh[2]);
            let pi = logp(st, s, 1, dry)?;
            let a = logp(st, s * s, 2, dry)?;
            let e = logp(st, b * t * s, 3, dry)?;
            let mut paths = out::<u32>(st, b * t)?;
            let mut scores = out::<f32>(st, b)?;
            let lengths = vec![t as u32; b];
            viterbi::viterbi_dev(
                st,
                viterbi::Shape { batch: b, t, s },
                &lengths,
                &pi,
                &a,
                &e,
                viterbi::DeviceOutputs {
                    paths: &mut paths,
                    scores: &mut scores,
                },
            )
        }),
        traffic: Box::new(|sh, sm| {
            let (b, t, s) = (sh[0], sh[1], sh[2]);
            // log_b in, the u32 backpointers written, paths out; log_a once
            // (the cluster kernel's CTAs each read their slice once; the
            // one-CTA kernel's re-reads stay in L2).
            let name = if viterbi::ptx::cluster::uses_cluster(sm, s) {
                viterbi::ptx::cluster::kernel_name()
            } else {
                viterbi::ptx::kernel_name(viterbi::ptx::cap_for(s))
            };
            vec![(name, F32 * (2.0 * f(b * t * s) + f(b * t) + f(s * s)))]
        }),
        essential: Box::new(|sh| F32 * (f(sh[0] * sh[1] * sh[2]) + f(sh[0] * sh[1]))),
        goal: None,
        note: "log_b read once, the [batch, T, S] backpointer workspace written once \
               (the walk back reads T of them); essential: log_b in, paths out",
    }
}

/// Viterbi at S 4096: `[batch, T, S]`, the `cap 4096` kernel.
const VITERBI_BIG: [usize; 3] = [64, 1000, 4096];

/// The `cap 4096` kernel's cost per sequence: setup, the first row and the
/// final scan (`S`), the backtrack (`T`), and per step the state loop
/// (`S`) with its scan over the previous states (`S²`). Exact: the kernel
/// has no data-dependent branch.
fn viterbi_big_basis(s: &Shape, _: Sm, _: u32) -> Vec<f64> {
    let (b, t, n) = (f(s[0]), f(s[1]), f(s[2]));
    vec![b, b * n, b * t, b * (t - 1.0) * n, b * (t - 1.0) * n * n]
}

fn viterbi_s4096() -> Problem {
    let base = viterbi();
    Problem {
        family: "viterbi",
        name: "batch 64, T 1000, S 4096".into(),
        roof: Roof::Memory,
        full: VITERBI_BIG.to_vec(),
        // S above 1024 takes the same `cap 4096` kernel (the same module
        // text); one to two steps of about 1.1–1.4 M (i, j) pairs each.
        samples: vec![
            vec![1, 2, 1025],
            vec![1, 2, 1100],
            vec![1, 2, 1200],
            vec![1, 3, 1025],
            vec![1, 3, 1100],
        ],
        check: vec![1, 3, 1200],
        capped: None,
        basis: Box::new(viterbi_big_basis),
        run: base.run,
        traffic: Box::new(|sh, _| {
            let (b, t, s) = (sh[0], sh[1], sh[2]);
            let name = viterbi::ptx::kernel_name(viterbi::ptx::cap_for(s));
            // log_b in, the u32 backpointers written, paths out; log_a
            // (64 MiB, more than the L2) streamed from DRAM once a step,
            // shared by the sequences (they run in step).
            let a = F32 * f(s * s) * f(t - 1);
            vec![(name, F32 * (2.0 * f(b * t * s) + f(b * t)) + a)]
        }),
        essential: base.essential,
        goal: None,
        note: "log_b read once, the [batch, T, S] backpointer workspace written once, \
               log_a (S² floats, larger than the L2) once a step for all the sequences \
               together; essential: log_b in, paths out. Bound: one CTA a sequence \
               (64 of the SMs), S² add-compare-selects a step",
    }
}

// ---- dot ----------------------------------------------------------------------

fn dot_rows() -> Problem {
    Problem {
        family: "dot",
        name: "dot_rows [4096, 4096]".into(),
        roof: Roof::Memory,
        full: vec![4096, 4096],
        samples: vec![vec![64, 4096], vec![128, 4096]],
        check: vec![96, 4096],
        capped: None,
        basis: Box::new(|s, _, _| vec![1.0, f(s[0] * s[1])]),
        run: Box::new(|st, s, dry| {
            let (rows, n) = (s[0], s[1]);
            let x = uniform(st, rows * n, 1, dry, -1.0, 1.0)?;
            let y = uniform(st, n, 2, dry, -1.0, 1.0)?;
            let mut o = out::<f32>(st, rows)?;
            dot::dot_rows_dev(st, dot::Shape { rows, n }, &x, &y, &mut o)
        }),
        traffic: Box::new(|s, _| vec![("dot_rows_f32".into(), F32 * f(s[0] * s[1] + s[1] + s[0]))]),
        essential: Box::new(|s| F32 * f(s[0] * s[1] + s[1] + s[0])),
        goal: None,
        note: "x once, y once (it stays in L2), out once",
    }
}

// ---- FP8 ----------------------------------------------------------------------

/// Elements of the FP8 problems (the bench's largest size, 1 GiB of f32).
const FP8_N: usize = 1 << 28;

fn fp8_problem(
    name: &str,
    goal: f64,
    essential_per_elem: f64,
    kernels: fn(usize) -> Vec<(String, f64)>,
    run: fn(&Stream, usize, bool) -> Result<()>,
    note: &'static str,
) -> Problem {
    Problem {
        family: "fp8",
        name: format!("{name}, 256 Mi elements"),
        roof: Roof::Memory,
        full: vec![FP8_N],
        samples: vec![vec![1 << 16], vec![1 << 17]],
        check: vec![3 << 15],
        capped: Some((vec![1 << 17], 1)),
        basis: Box::new(|s, _, _| vec![1.0, f(s[0])]),
        run: Box::new(move |st, s, dry| run(st, s[0], dry)),
        traffic: Box::new(move |s, _| kernels(s[0])),
        essential: Box::new(move |s| essential_per_elem * f(s[0])),
        goal: Some(Goal::Share(goal)),
        note,
    }
}

fn fp8_x(st: &Stream, n: usize, dry: bool) -> Result<DeviceBuffer<f32>> {
    input(st, n, 1, dry, |_, i| ((i as f32) * 0.618_034).sin() * 300.0)
}

fn fp8_enc(st: &Stream) -> fp8::Encoding {
    fp8::Encoding::for_sm(fp8::Format::E4M3, st.context().sm())
}

/// Issue 30's goals: FP8 quantize ≥ 90 % of HBM, dequantize ≥ 88 %.
fn fp8_problems() -> Vec<Problem> {
    vec![
        fp8_problem(
            "quantize E4M3 (current scaling)",
            0.9,
            9.0,
            |n| {
                vec![
                    ("fp8_absmax_partials".into(), F32 * f(n)),
                    ("fp8_quantize_e4m3".into(), 5.0 * f(n)),
                ]
            },
            |st, n, dry| {
                let x = fp8_x(st, n, dry)?;
                let mut codes = out::<u8>(st, n)?;
                let mut stats = out::<f32>(st, fp8::ptx::STATS_LEN)?;
                fp8::launch::quantize_dev(st, fp8_enc(st), &x, &mut codes, &mut stats)
            },
            "absmax pass reads x (partials and stats are a few KiB; every encode \
             block reduces the partials from L2), the encode pass reads x again and \
             writes a byte per element: 9 B/element",
        ),
        fp8_problem(
            "quantize_with_scale E4M3",
            0.9,
            5.0,
            |n| vec![("fp8_quantize_scaled_e4m3".into(), 5.0 * f(n))],
            |st, n, dry| {
                let x = fp8_x(st, n, dry)?;
                let mut codes = out::<u8>(st, n)?;
                fp8::launch::quantize_with_scale_dev(st, fp8_enc(st), 0.5, &x, &mut codes)
            },
            "x in, codes out: 5 B/element",
        ),
        fp8_problem(
            "dequantize E4M3",
            0.88,
            5.0,
            |n| vec![("fp8_dequantize_e4m3".into(), 5.0 * f(n))],
            |st, n, dry| {
                let codes = bytes_in(st, n, 2, dry)?;
                let mut y = out::<f32>(st, n)?;
                fp8::launch::dequantize_dev(st, fp8_enc(st), 2.0, &codes, &mut y)
            },
            "codes in, y out: 5 B/element",
        ),
        fp8_problem(
            "dequantize_stats E4M3",
            0.88,
            5.0,
            |n| vec![("fp8_dequantize_stats_e4m3".into(), 5.0 * f(n))],
            |st, n, dry| {
                let codes = bytes_in(st, n, 2, dry)?;
                let stats = if dry {
                    out::<f32>(st, fp8::ptx::STATS_LEN)?
                } else {
                    st.upload(&[448.0f32, 1.0, 1.0])?
                };
                let mut y = out::<f32>(st, n)?;
                fp8::launch::dequantize_stats_dev(st, fp8_enc(st), &codes, &stats, &mut y)
            },
            "codes in, y out: 5 B/element",
        ),
    ]
}

// ---- block-scaled -------------------------------------------------------------

/// `[L, M, K]` of the block-scaled problems (the bench's GPU tensor).
const BS_FULL: [usize; 3] = [1, 16384, 8192];
const BS_LAYOUT: ScaleLayout = ScaleLayout::Blocked128x4;

fn bs_shape(s: &Shape, f: BsFormat) -> Result<bs::Shape> {
    bs::Shape::new(s[0], s[1], s[2], f)
}

/// Bytes of `x` (f32), codes and scales (in the bench's layout) at `s`.
fn bs_bytes(s: &Shape, f: BsFormat) -> (f64, f64, f64) {
    let sh = bs_shape(s, f).expect("the problems' shapes are valid");
    (
        F32 * sh.len() as f64,
        sh.codes_len() as f64,
        BS_LAYOUT.len(&sh.scale_dims()) as f64,
    )
}

fn bs_names(f: BsFormat) -> (String, String) {
    let r = Recipe::default_for(f);
    let q = bs::ptx::generate_quantize(Sm::Sm90, r, bs::ptx::Codec::Software)
        .map(|m| m.kernel)
        .unwrap_or_default();
    let d = bs::ptx::generate_dequantize(Sm::Sm90, f, bs::ptx::Codec::Software)
        .map(|m| m.kernel)
        .unwrap_or_default();
    (q, d)
}

fn bs_problem(fmt: BsFormat, label: &str, quantize: bool) -> Problem {
    let nv = fmt == BsFormat::Nvfp4;
    let traffic: Box<TrafficFn> = Box::new(move |s, _| {
        let (x, codes, scales) = bs_bytes(s, fmt);
        let (q, d) = bs_names(fmt);
        if quantize {
            // A layout with padding bytes has its scale buffer zeroed (a
            // memset) before the kernel writes it: counted twice then.
            let padded = bs_shape(s, fmt).is_ok_and(|sh| {
                let dims = sh.scale_dims();
                BS_LAYOUT.len(&dims) != dims.count()
            });
            let mut v = vec![(q, x + codes + if padded { 2.0 } else { 1.0 } * scales)];
            if nv {
                v.push(("fp8_absmax_partials".into(), x));
                v.push(("block_scaled_nvfp4_global".into(), 0.0));
            }
            v
        } else {
            vec![(d, x + codes + scales)]
        }
    });
    Problem {
        family: "block_scaled",
        name: format!(
            "{} {label} [1, 16384, 8192], Blocked128x4",
            if quantize { "quantize" } else { "dequantize" }
        ),
        roof: Roof::Memory,
        full: BS_FULL.to_vec(),
        samples: vec![vec![1, 128, 256], vec![1, 256, 256]],
        check: vec![1, 128, 512],
        capped: Some((vec![1, 256, 256], 1)),
        basis: Box::new(|s, _, _| vec![1.0, f(s[0] * s[1] * s[2])]),
        traffic,
        run: Box::new(move |st, s, dry| {
            let shape = bs_shape(s, fmt)?;
            let q = bs::Quantization {
                shape,
                recipe: Recipe::default_for(fmt),
                layout: BS_LAYOUT,
            };
            let codec = bs::ptx::Codec::for_sm(st.context().sm());
            let mut codes = out::<u8>(st, shape.codes_len())?;
            let scale_len = BS_LAYOUT.len(&shape.scale_dims());
            if quantize {
                let x = input(st, shape.len(), 2, dry, |g, i| {
                    (g.unit() - 0.5) * (1 << (i / 32 % 16)) as f32
                })?;
                let mut scales = out::<u8>(st, scale_len)?;
                let mut global = out::<f32>(st, 3)?;
                let gv = nv.then(|| global.as_device_mut());
                bs::launch::quantize_dev(st, q, codec, &x, &mut codes, &mut scales, gv)
            } else {
                let codes = bytes_in(st, shape.codes_len(), 3, dry)?;
                // Scale bytes near 1.0 (E8M0 127, UE4M3 0x38).
                let scales = if dry {
                    out::<u8>(st, scale_len)?
                } else {
                    st.upload(&vec![if nv { 0x38u8 } else { 127u8 }; scale_len])?
                };
                let global = if dry {
                    out::<f32>(st, 3)?
                } else {
                    st.upload(&[1.0f32, 1.0, 1.0])?
                };
                let mut y = out::<f32>(st, shape.len())?;
                let gd = nv.then(|| global.as_device());
                bs::launch::dequantize_dev(st, q, codec, &codes, &scales, gd, &mut y)
            }
        }),
        essential: Box::new(move |s| {
            let (x, codes, scales) = bs_bytes(s, fmt);
            // NVFP4's quantize reads x twice (per-tensor amax first).
            x + codes + scales + if nv && quantize { x } else { 0.0 }
        }),
        // Issue 30's goals: MXFP8 ≥ 85 % of HBM, MXFP4 and NVFP4 ≥ 80 %.
        goal: Some(Goal::Share(if fmt == BsFormat::Mxfp8E4m3 {
            0.85
        } else {
            0.8
        })),
        note: "x (f32) once (twice for NVFP4's quantize: the per-tensor amax pass), codes \
               once, scales once (quantize: also the memset of a layout with padding bytes)",
    }
}

fn block_scaled_problems() -> Vec<Problem> {
    let mut v = Vec::new();
    for (f, label) in [
        (BsFormat::Mxfp8E4m3, "MXFP8 E4M3"),
        (BsFormat::Mxfp4, "MXFP4"),
        (BsFormat::Nvfp4, "NVFP4"),
    ] {
        v.push(bs_problem(f, label, true));
        v.push(bs_problem(f, label, false));
    }
    v
}

// ---- score --------------------------------------------------------------------

fn score_block() -> Problem {
    Problem {
        family: "score",
        name: "score block rows 4096, K 16384, P 256".into(),
        roof: Roof::Fp32,
        full: vec![4096, 16384, 256],
        samples: vec![vec![128, 128, 64], vec![128, 128, 128]],
        check: vec![128, 256, 64],
        capped: None,
        // Per tile: a prologue and epilogue, and a main loop over P.
        basis: Box::new(|s, _, _| vec![f(s[0] * s[1]), f(s[0] * s[1] * s[2])]),
        run: Box::new(|st, s, dry| {
            let (rows, k, p) = (s[0], s[1], s[2]);
            let x = uniform(st, rows * p, 1, dry, -1.0, 1.0)?;
            let d = uniform(st, k * p, 2, dry, -1.0, 1.0)?;
            let mut o = out::<f32>(st, rows * k)?;
            score::launch::score_block_dev(st, ScoreShape { rows, k, p }, None, &x, &d, &mut o)
        }),
        traffic: Box::new(|s, _| {
            let (rows, k, p) = (s[0], s[1], s[2]);
            vec![(
                score::ptx::SCORE_BLOCK_V4.into(),
                F32 * f(rows * p + k * p + rows * k),
            )]
        }),
        // One FMUL and one FADD per multiply-add.
        essential: Box::new(|s| 2.0 * f(s[0] * s[1] * s[2])),
        goal: Some(Goal::Share(0.8)),
        note: "x and D once (a wave's tiles share them in L2), the score block written once; \
               roof: 2 FP32 instructions (FMUL, FADD) per multiply-add",
    }
}

/// The route's K-splits: the forced count, or the launch code's default
/// plan on an SM with `sms` SMs.
fn route_splits(s: &Shape, sm: Sm, sms: u32) -> f64 {
    let (rows, k, p, top) = (s[0], s[1], s[2], s[3]);
    let t = ScoreTuning::route_default_for(sm).vectorized_for(p);
    let plan = if s[4] > 0 {
        RoutePlan::with_splits(rows, k, &t, s[4] as u32)
    } else {
        RoutePlan::new(rows, k, top, &t, sms)
    };
    f64::from(plan.splits)
}

fn score_route() -> Problem {
    Problem {
        family: "score",
        name: "routed top-4, rows 256, K 32768, P 64".into(),
        roof: Roof::Fp32,
        // `[rows, K, P, s, splits]`; splits 0: the launch code's plan for
        // the card (33 on an H100), else a forced plan (the samples).
        full: vec![256, 32768, 64, 4, 0],
        samples: vec![vec![64, 512, 64, 4, 2], vec![64, 512, 64, 4, 4]],
        check: vec![64, 1024, 64, 4, 4],
        capped: None,
        basis: Box::new(|s, sm, sms| {
            vec![
                f(s[0] * s[1] * s[2]),
                f(s[0] * s[3]) * route_splits(s, sm, sms),
            ]
        }),
        run: Box::new(|st, s, dry| {
            let (rows, k, p, top) = (s[0], s[1], s[2], s[3]);
            let x = uniform(st, rows * p, 3, dry, -1.0, 1.0)?;
            let d = uniform(st, k * p, 4, dry, -1.0, 1.0)?;
            let route = Route {
                shape: ScoreShape { rows, k, p },
                s: top,
            };
            if s[4] == 0 {
                score::launch::route_top_s_dev(st, route, None, &x, &d).map(drop)
            } else {
                let t = ScoreTuning::route_default_for(st.context().sm()).vectorized_for(p);
                let plan = RoutePlan::with_splits(rows, k, &t, s[4] as u32);
                score::launch::route_top_s_planned_dev(st, route, t, plan, &x, &d).map(drop)
            }
        }),
        traffic: Box::new(|s, _| {
            let (rows, k, p, top) = (s[0], s[1], s[2], s[3]);
            // The partial lists depend on the plan: bounded by 2 words per
            // entry and split; small next to D.
            vec![
                (score::ptx::ROUTE_V4.into(), F32 * f(rows * p + k * p)),
                (score::ptx::MERGE.into(), 2.0 * F32 * f(rows * top)),
            ]
        }),
        essential: Box::new(|s| 2.0 * f(s[0] * s[1] * s[2])),
        goal: None,
        note: "x and D once; the per-split partial lists (a few hundred KiB) are not counted; \
               roof: 2 FP32 instructions per multiply-add",
    }
}
