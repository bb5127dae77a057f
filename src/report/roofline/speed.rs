//! The roofline's time terms for one kernel on one card: memory, issue
//! per pipe, and the latency of dependent chains at the occupancy the
//! kernel gets.
//!
//! * **Memory**: DRAM bytes / ([`Gpu::bytes_per_s`] ×
//!   [`STREAM_FRACTION`]): the bandwidth a streaming kernel reaches, not the
//!   vendor's peak.
//! * **Issue**: the kernel's SASS lane-instructions split over the pipes
//!   by the shares of its regions weighted by their dynamic counts
//!   ([`super::regions`]; else its hot loop's, or its whole function's
//!   when it has no loop); the most loaded SM's share of them is
//!   [`busiest_sm`]'s, and its clocks come from [`issue_clocks`] (the
//!   maximum over the dispatch floor of 128 lane-instructions a clock and
//!   each pipe at its rate).
//! * **The busiest SM** ([`busiest_sm`]): CTAs need not carry equal work
//!   (the joint HMM launch's backward clusters carry about 1.6× its
//!   forward ones'; a ragged last CTA carries less). The simulator
//!   reports each launch's heaviest CTA
//!   ([`crate::sim::LaunchReport::heaviest_block`]), which the fit
//!   extrapolates to the full size as a count, the launches' CTAs × their
//!   heaviest CTA ([`super::Fit::heaviest`], checked on each
//!   problem's check shape by `tests/roofline.rs`); over the PTX count it
//!   gives the kernel's *skew* = heaviest CTA / mean CTA (≥ 1; 1 when
//!   every CTA does the same work; taken as 1 for the ticketed kernels
//!   of [`TICKET_KERNELS`], whose first simulated CTA takes every ticket).
//!   **Rule**: the hardware hands CTAs to
//!   SMs as slots free, so the busiest SM's share of the issue is the
//!   greedy bound max(`ceil(CTAs / SMs)` mean CTAs, the heaviest CTA):
//!   with at most one CTA an SM, the heaviest CTA's SM, exactly; with
//!   several (one wave of several CTAs an SM, or several waves), the mean
//!   share unless one CTA outweighs it (list scheduling ends at most one
//!   CTA after this bound; which CTAs share an SM is not modelled). An
//!   even launch's figure is the mean share, as before.
//! * **Latency** (kernels of [`CHAIN_KERNELS`] only: their threads' work
//!   is dependent chains, the logcumsumexp segment's `log_add_exp`
//!   chain, the HMM and Viterbi time recursions): a warp on a dependent
//!   chain issues one instruction every `L` clocks, `L` the mix-weighted
//!   dependent-issue latency of its instructions ([`dependent_latency`]);
//!   a warp whose threads each walk `c` independent chains interleaved
//!   (the kernel's chains per thread, [`chains_per_thread`]) issues `c`
//!   every `L` clocks; an SM holding `W` warps of the launch then issues
//!   at most `W · c / L` warp-instructions a clock, so latency time =
//!   warp-instructions of the most loaded SM × `L` / (`W` · `c`) / clock.
//!   `W` = min(the occupancy's CTAs per SM, the CTAs the launch gives each
//!   busy SM) × warps per CTA: the occupancy the kernel actually gets.
//!   Where `W · c / L` exceeds the four schedulers' one a clock, the issue
//!   term is the larger and the chain is hidden. A CTA's chains cannot
//!   end before its own warps have issued its instructions, so the term is
//!   at least the heaviest CTA's warp-instructions × `L` / (its warps ·
//!   `c`) / clock: the larger of the mean share at the SM's `W` warps and
//!   the heaviest CTA at its own. In one wave (the SM's CTAs all
//!   resident) that is the heaviest CTA's chain; over several waves, the
//!   mean share unless one CTA outweighs the SM's rounds; an even
//!   launch's term is as before (the mean share is never the smaller).
//!   **The critical path**: both figures assume a CTA's warps share its
//!   work and its chains are as long as its instructions × `L` / `c`.
//!   Where one warp of a CTA carries a step while the others wait at
//!   barriers (the HMM cluster recursions), or a thread's chains overlap
//!   more or less than `c` says, neither holds. The simulator times each
//!   CTA on a scoreboard (`sim::interp::timing`: every instruction issues
//!   once its sources are ready, its result ready its class's latency
//!   later; barriers and cluster barriers join their threads;
//!   [`crate::sim::LaunchReport::critical_path`]) and the fit
//!   extrapolates it ([`super::Fit::critical_path`]). The bound it gives
//!   is the launch's critical path / clock × the waves that serialize
//!   it, [`critical_path_s`]: a CTA beyond the SMs' resident slots
//!   (occupancy CTAs per SM × SMs) starts when one finishes, so
//!   `ceil(CTAs / slots)` paths run one after another; a kernel launched
//!   `n` times in sequence takes `n` of them. The scoreboard does not
//!   model issue bandwidth (the issue term does) nor DRAM misses (the
//!   memory term does): its global loads take an L2 hit. **Not yet in
//!   the term** (reported as [`super::KernelRow::critical_path_s`]): the
//!   scoreboard issues PTX in order but for the loads (hoisted to when
//!   their address is ready), so what else ptxas reorders or unrolls
//!   counts in full. Taken as the term's floor it moved the HMM, Viterbi
//!   and logcumsumexp rows up to 2.6× (`docs/perf.md`, HMM section): the
//!   HMM step about 2× a hand estimate of its critical path, Viterbi's
//!   not explained yet. It enters the term once those are understood.
//!
//! * **L2**: the kernel's global memory accesses in bytes (the
//!   simulator's count, [`super::l2`]: every global load and store taken
//!   to reach L2, the L1 not modelled) / ([`L2_FRACTION`] ×
//!   [`Gpu::l2_bytes_per_s`]): the bound of kernels that re-read data
//!   living in L2 (the one-CTA HMM kernels' transition matrix every step,
//!   the score and block-ELL tiles).
//!
//! Modeled time = max(memory, L2, issue, latency). Launch overhead,
//! barriers' waits beyond their issue, and L1 effects are not modelled.

use crate::kernels::logcumsumexp::ptx::FWD_CHAINS;
use crate::occupancy::{Occupancy, occupancy};
use crate::report::hardware::Gpu;
use crate::report::pipes::{IssueLimit, MmaShape, Pipe, PipeMix, PipeRates, issue_clocks};

/// The dense tensor-core FLOP per second of `gpu` for `shape` (FP32
/// accumulate): SMs × [`PipeRates::mma_per_clock`] × 2 × the shape's
/// multiply-adds × the boost clock (the clock the issue term uses; the
/// vendors' tensor peaks are quoted at a lower tensor clock on some cards,
/// e.g. 1.83 GHz on the H100 SXM: the roof is then about 8 % above the
/// published 989 TFLOP/s, and so is the issue term's HMMA rate).
pub fn tensor_flop_per_s(gpu: &Gpu, shape: MmaShape) -> f64 {
    f64::from(gpu.sms)
        * PipeRates::of(gpu.sm).mma_per_clock(shape)
        * 2.0
        * shape.macs()
        * gpu.boost_mhz
        * 1e6
}

/// The share of the vendor's DRAM bandwidth a streaming kernel reaches:
/// 0.90, the H200's device-to-device copy through PyTorch (about 4.3 TB/s
/// counting bytes read and written, of 4.8; this workplace's device notes,
/// `KINDS.md`, measured on 2026-10-28 and 2026-11-04) and in line with this
/// crate's best streaming kernel there (FP8 quantize, 4.16 TB/s,
/// `docs/perf.md`). Applied to every card until each is measured.
pub const STREAM_FRACTION: f64 = 0.90;

/// The share of the card's L2 bandwidth ([`Gpu::l2_bytes_per_s`]) a
/// kernel reaches: 0.70, an estimate (no measurement of this crate's
/// kernels yet): the L2 figures of `hardware.rs` are the slices' bytes a
/// clock at the boost clock, and microbenchmarks read 60–75 % of that
/// (Chips and Cheese's H100 PCIe measurement ran under its power limit, at
/// clocks down to 80 % of the boost).
pub const L2_FRACTION: f64 = 0.70;

/// L2 time in seconds of `bytes` of global memory accesses on `gpu`:
/// bytes / ([`L2_FRACTION`] × the card's L2 bandwidth). Every access
/// counts, the ones that miss too (their data crosses L2 on its way to
/// the SM), so for a streaming kernel it is the memory term's bytes at L2
/// speed, below the memory term; it wins where a kernel re-reads data that
/// stays in L2 (see [`super::l2`] for what is counted).
pub fn l2_s(gpu: &Gpu, bytes: f64) -> f64 {
    bytes / (gpu.l2_bytes_per_s() * L2_FRACTION)
}

/// Kernels (entry-name prefixes) whose threads run dependent chains, so
/// that the latency term applies (module docs), with the independent
/// chains each thread keeps in flight (the longest matching prefix
/// counts): `lcse_fwd` walks [`FWD_CHAINS`] segments at once, the split
/// path's `lcse_fwd_split` one (a tile a CTA).
pub const CHAIN_KERNELS: [(&str, u32); 7] = [
    ("lcse_fwd", FWD_CHAINS),
    ("lcse_fwd_split", 1),
    ("lcse_bwd", 1),
    ("hmm_forward", 1),
    ("hmm_backward", 1),
    ("hmm_fwdbwd_cluster", 1),
    ("viterbi", 1),
];

/// Kernels whose CTAs take their work by ticket (an atomic counter) in a
/// loop: on a GPU the CTAs resident at once share the tickets, so the
/// work is spread as evenly as the tickets allow, but the simulator runs
/// such a launch's CTAs one after another (atomics), so its first CTA
/// takes every ticket and the measured heaviest CTA is the whole launch.
/// Their skew is taken as 1 ([`ticket_skew`]).
pub const TICKET_KERNELS: [&str; 1] = ["lcse_fwd_split"];

/// The skew the model uses for `kernel` given the simulator's `skew`:
/// 1 for [`TICKET_KERNELS`] (see there), else `skew`.
pub fn ticket_skew(kernel: &str, skew: f64) -> f64 {
    if TICKET_KERNELS.contains(&kernel) {
        1.0
    } else {
        skew
    }
}

/// Dependent-issue latency in clocks of an instruction of `pipe` (the
/// clocks before an instruction that uses its result can issue): FP32,
/// integer and `IMAD` about 4 on Volta through Hopper (Jia et al.,
/// "Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking",
/// 2018, and the Turing sequel, 2019; Luo et al., "Benchmarking and
/// Dissecting the Nvidia Hopper GPU Architecture", 2024); `MUFU` and
/// conversions about 18; shared-memory loads and shuffles about 28 (the
/// papers give 19–33 from Volta to Hopper; global loads count the same,
/// their DRAM time being the memory term); FP64 8 and tensor 16
/// (unused by the chain kernels); uniform 2 and control 12 (branches,
/// barriers: an estimate). Approximate: the term is a model, the bench
/// measures.
pub const fn dependent_latency(pipe: Pipe) -> f64 {
    match pipe {
        Pipe::Fp32 | Pipe::Imad | Pipe::Alu => 4.0,
        Pipe::Xu => 18.0,
        Pipe::Fp64 => 8.0,
        Pipe::Lsu => 28.0,
        Pipe::Tensor => 16.0,
        Pipe::Uniform => 2.0,
        Pipe::Control => 12.0,
    }
}

/// The mix-weighted dependent-issue latency of `mix` (4 for an empty mix).
pub fn mean_latency(mix: &PipeMix) -> f64 {
    let t = mix.total();
    if t == 0.0 {
        return 4.0;
    }
    Pipe::ALL
        .iter()
        .map(|&p| mix.get(p) * dependent_latency(p))
        .sum::<f64>()
        / t
}

/// Whether `kernel` is one of [`CHAIN_KERNELS`].
pub fn is_chain(kernel: &str) -> bool {
    chains_per_thread(kernel).is_some()
}

/// The independent chains a thread of `kernel` keeps in flight (the entry
/// of [`CHAIN_KERNELS`] with the longest prefix of the name), `None` for a
/// kernel that is not a chain kernel.
pub fn chains_per_thread(kernel: &str) -> Option<u32> {
    CHAIN_KERNELS
        .iter()
        .filter(|(k, _)| kernel.starts_with(k))
        .max_by_key(|(k, _)| k.len())
        .map(|&(_, c)| c.max(1))
}

/// The time terms of one kernel.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Terms {
    /// Issue time in seconds.
    pub issue_s: f64,
    /// What bounds the issue time.
    pub limit: IssueLimit,
    /// Latency time in seconds (chain kernels only).
    pub latency_s: Option<f64>,
    /// The occupancy from the kernel's registers, shared memory and CTA
    /// size.
    pub occupancy: Occupancy,
}

/// The work of the most loaded of `sms` SMs, of a launch of `ctas` CTAs
/// carrying `total` in all (lane-instructions, or any count that CTAs
/// share), its heaviest CTA `skew` times the mean (values below 1 count
/// as 1): the greedy bound max(`ceil(CTAs / SMs)` × the mean CTA, the
/// heaviest CTA) (module docs, *The busiest SM*).
pub fn busiest_sm(total: f64, skew: f64, ctas: u64, sms: u32) -> f64 {
    let ctas = (ctas as f64).max(1.0);
    let mean = total / ctas;
    (mean * (ctas / f64::from(sms.max(1))).ceil()).max(mean * skew.max(1.0))
}

/// The issue and latency terms of a kernel of `sass` lane-instructions
/// with pipe shares `mix` whose heaviest CTA carries `skew` times the
/// mean CTA's (1 for an even launch; [`busiest_sm`]), launched as `ctas`
/// CTAs of `threads` threads using `regs` registers and `smem` bytes of
/// static shared memory.
#[allow(clippy::too_many_arguments)]
pub fn terms(
    gpu: &Gpu,
    kernel: &str,
    sass: f64,
    skew: f64,
    mix: &PipeMix,
    ctas: u64,
    threads: u32,
    regs: u32,
    smem: u32,
) -> Terms {
    let busy = f64::from(gpu.sms).min(ctas as f64).max(1.0);
    let clock = gpu.boost_mhz * 1e6;
    // The most loaded SM: the greedy bound over its CTAs.
    let sass_sm = busiest_sm(sass, skew, ctas, gpu.sms);
    let per_sm = mix.scaled_to(sass_sm);
    let (clocks, limit) = issue_clocks(&per_sm, &PipeRates::of(gpu.sm));
    let occ = occupancy(gpu.sm, threads, regs, smem);
    let latency_s = chains_per_thread(kernel).map(|chains| {
        let ctas_f = (ctas as f64).max(1.0);
        let mean_cta = sass / ctas_f;
        let warps_per_cta = f64::from(threads.div_ceil(32).max(1));
        let ctas_here = (ctas_f / busy).ceil();
        let w = (f64::from(occ.ctas_per_sm.max(1)).min(ctas_here) * warps_per_cta).max(1.0);
        // the mean share at the SM's resident warps, or the heaviest CTA
        // at its own warps, whichever takes longer
        let mean_share = mean_cta * ctas_here / w;
        let heaviest = mean_cta * skew.max(1.0) / warps_per_cta;
        mean_share.max(heaviest) / 32.0 * mean_latency(mix) / f64::from(chains) / clock
    });
    Terms {
        issue_s: clocks / clock,
        limit,
        latency_s,
        occupancy: occ,
    }
}

/// The critical-path bound in seconds (module docs, *The critical
/// path*): `path` clocks a launch (the mean over its CTAs of the simulated
/// critical path, extrapolated), `launches` launches in sequence, each of
/// `ctas` CTAs of which `ctas_per_sm` fit an SM at once, at the card's
/// boost clock.
pub fn critical_path_s(gpu: &Gpu, path: f64, launches: usize, ctas: u64, ctas_per_sm: u32) -> f64 {
    let slots = u64::from(ctas_per_sm.max(1)) * u64::from(gpu.sms.max(1));
    let waves = ctas.max(1).div_ceil(slots) as f64;
    path.max(0.0) * waves * launches.max(1) as f64 / (gpu.boost_mhz * 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::hardware::H200;

    #[test]
    fn the_critical_path_repeats_per_wave_and_launch() {
        let clock = H200.boost_mhz * 1e6;
        // one wave: the path itself
        let one = critical_path_s(&H200, clock, 1, 128, 1);
        assert!((one - 1.0).abs() < 1e-12);
        assert_eq!(critical_path_s(&H200, clock, 1, 132, 1), one);
        // 133 CTAs, one an SM: two waves
        assert!((critical_path_s(&H200, clock, 1, 133, 1) - 2.0).abs() < 1e-12);
        // four resident an SM: 528 CTAs are one wave, 529 two
        assert_eq!(critical_path_s(&H200, clock, 1, 528, 4), one);
        assert!((critical_path_s(&H200, clock, 1, 529, 4) - 2.0).abs() < 1e-12);
        // three launches in sequence
        assert!((critical_path_s(&H200, clock, 3, 128, 1) - 3.0).abs() < 1e-12);
    }

    fn mix(v: &[(Pipe, f64)]) -> PipeMix {
        let mut m = PipeMix::default();
        for &(p, n) in v {
            m.0[p as usize] = n;
        }
        m
    }

    #[test]
    fn issue_and_latency_terms() {
        // 132 CTAs of 256 threads, 32 registers: 8 warps per SM on the
        // H200. 132 × 128 × 1.98e9 lane-instructions of pure FP32 take
        // one second of issue.
        let lanes = 132.0 * 128.0 * 1.98e9;
        let m = mix(&[(Pipe::Fp32, 1.0)]);
        let t = terms(&H200, "dot_rows", lanes, 1.0, &m, 132, 256, 32, 0);
        assert!((t.issue_s - 1.0).abs() < 1e-9);
        assert_eq!(t.limit, IssueLimit::Dispatch);
        assert_eq!(t.latency_s, None);
        // All ALU: twice as long.
        let t = terms(
            &H200,
            "dot_rows",
            lanes,
            1.0,
            &mix(&[(Pipe::Alu, 1.0)]),
            132,
            256,
            32,
            0,
        );
        assert!((t.issue_s - 2.0).abs() < 1e-9);
        // A chain kernel with one CTA of 8 warps per SM: each warp issues
        // every 4 clocks, 8 warps 2 a clock of the 4 the SM could: the
        // latency term is twice the issue term.
        let t = terms(&H200, "hmm_forward_cap256", lanes, 1.0, &m, 132, 256, 32, 0);
        let l = t.latency_s.unwrap();
        assert!((l - 2.0).abs() < 1e-9, "{l}");
        // With 8 CTAs per SM resident the chain is hidden (64 warps:
        // 16 a clock, above the 4 the schedulers issue).
        let t = terms(&H200, "lcse_fwd", lanes, 1.0, &m, 132 * 8, 256, 32, 0);
        assert!(t.latency_s.unwrap() < t.issue_s);
        assert_eq!(t.occupancy.ctas_per_sm, 8);
        // Independent chains per thread divide the latency term: the
        // same launch as `hmm_forward_cap256` above, each thread walking
        // two chains (`lcse_fwd`), takes half as long; the split path's
        // `lcse_fwd_split` (longest prefix) one chain.
        assert_eq!(chains_per_thread("lcse_fwd"), Some(FWD_CHAINS));
        assert_eq!(chains_per_thread("lcse_fwd_split"), Some(1));
        assert_eq!(chains_per_thread("lcse_bwd_aff"), Some(1));
        assert_eq!(chains_per_thread("dot_rows"), None);
        assert_eq!(FWD_CHAINS, 2);
        let one = terms(&H200, "lcse_fwd_split", lanes, 1.0, &m, 132, 256, 32, 0);
        let two = terms(&H200, "lcse_fwd", lanes, 1.0, &m, 132, 256, 32, 0);
        assert!((one.latency_s.unwrap() - 2.0).abs() < 1e-9);
        assert!((two.latency_s.unwrap() - 1.0).abs() < 1e-9);
        assert_eq!(one.issue_s, two.issue_s);
        // The L2 term: bytes over 0.70 of the card's L2 bandwidth (the
        // H200: 5 120 bytes a clock at 1.98 GHz).
        let bw = 5120.0 * 1.98e9 * L2_FRACTION;
        assert!((l2_s(&H200, bw) - 1.0).abs() < 1e-12);
        assert!((l2_s(&H200, 3.0 * bw) - 3.0).abs() < 1e-12);
        // Mean latency: half FP32 (4), half shared loads (28): 16.
        let m = mix(&[(Pipe::Fp32, 1.0), (Pipe::Lsu, 1.0)]);
        assert!((mean_latency(&m) - 16.0).abs() < 1e-12);
    }

    #[test]
    fn ticketed_kernels_take_skew_one() {
        assert_eq!(ticket_skew("lcse_fwd_split", 35.6), 1.0);
        assert_eq!(ticket_skew("lcse_fwd", 1.3), 1.3);
        assert_eq!(ticket_skew("hmm_fwdbwd_cluster8_cap256", 1.15), 1.15);
    }

    #[test]
    fn the_busiest_sm_is_the_greedy_bound() {
        // One CTA an SM: the heaviest CTA's SM.
        assert_eq!(busiest_sm(1000.0, 1.0, 100, 132), 10.0);
        assert_eq!(busiest_sm(1000.0, 1.6, 100, 132), 16.0);
        // Several waves: the mean share, unless one CTA outweighs it.
        assert_eq!(busiest_sm(2640.0, 1.0, 264, 132), 20.0);
        assert_eq!(busiest_sm(2640.0, 1.5, 264, 132), 20.0);
        assert_eq!(busiest_sm(2640.0, 3.0, 264, 132), 30.0);
        // A skew below 1 (an extrapolation's rounding) counts as 1.
        assert_eq!(busiest_sm(1000.0, 0.9, 100, 132), 10.0);
    }

    #[test]
    fn an_unequal_launch_gets_its_heaviest_cta() {
        // The joint HMM launch's shape: 128 CTAs of 256 threads on the
        // H200's 132 SMs (one CTA an SM, 8 warps each), a chain kernel.
        let m = mix(&[(Pipe::Fp32, 1.0)]);
        let lanes = 128.0 * 128.0 * 1.98e9;
        let even = terms(
            &H200,
            "hmm_fwdbwd_cluster8_cap256",
            lanes,
            1.0,
            &m,
            128,
            256,
            64,
            0,
        );
        // Each SM: 128 × 1.98e9 lane-instructions, one second at the
        // dispatch floor; the chain: 8 warps issue 2 a clock, two seconds.
        assert!((even.issue_s - 1.0).abs() < 1e-9, "{}", even.issue_s);
        assert!((even.latency_s.unwrap() - 2.0).abs() < 1e-9);
        // Half the CTAs carry 1.6× the others' work: the mean is 1.3× the
        // light ones', the heaviest 1.6/1.3 of the mean; issue and latency
        // both follow the heaviest CTA.
        let skew = 1.6 / 1.3;
        let t = terms(
            &H200,
            "hmm_fwdbwd_cluster8_cap256",
            lanes,
            skew,
            &m,
            128,
            256,
            64,
            0,
        );
        assert!((t.issue_s - skew).abs() < 1e-9, "{}", t.issue_s);
        assert!((t.latency_s.unwrap() - 2.0 * skew).abs() < 1e-9);
        assert_eq!(t.occupancy, even.occupancy);
        // One wave of four CTAs an SM (528 CTAs, 4 resident): the SM's
        // issue is their sum (the mean share, 4 mean CTAs), but its
        // chains end with its heaviest CTA's: latency × 1.3.
        let lanes = 528.0 * 128.0 * 1.98e9;
        let even = terms(&H200, "hmm_forward_cap256", lanes, 1.0, &m, 528, 256, 64, 0);
        let t = terms(&H200, "hmm_forward_cap256", lanes, 1.3, &m, 528, 256, 64, 0);
        assert_eq!(even.occupancy.ctas_per_sm, 4);
        assert_eq!(t.issue_s, even.issue_s);
        let l = even.latency_s.unwrap();
        assert!((t.latency_s.unwrap() - 1.3 * l).abs() < 1e-9 * l);
        // Two waves (1 056 CTAs, 8 an SM, 4 resident): the mean share
        // (8 CTAs at 32 warps: a quarter of a mean CTA a warp) outweighs a
        // heaviest CTA below twice the mean at its own 8 warps: unchanged.
        let lanes = 1056.0 * 128.0 * 1.98e9;
        let even = terms(
            &H200,
            "hmm_forward_cap256",
            lanes,
            1.0,
            &m,
            1056,
            256,
            64,
            0,
        );
        let l = even.latency_s.unwrap();
        assert_eq!(
            terms(
                &H200,
                "hmm_forward_cap256",
                lanes,
                1.3,
                &m,
                1056,
                256,
                64,
                0
            ),
            even
        );
        // A heaviest CTA of 3 mean ones sets the latency (3/8 against
        // 2/8), not the issue (8 mean CTAs an SM); one of 12 sets both.
        let t = terms(
            &H200,
            "hmm_forward_cap256",
            lanes,
            3.0,
            &m,
            1056,
            256,
            64,
            0,
        );
        assert_eq!(t.issue_s, even.issue_s);
        assert!((t.latency_s.unwrap() - 1.5 * l).abs() < 1e-9 * l);
        let t = terms(
            &H200,
            "hmm_forward_cap256",
            lanes,
            12.0,
            &m,
            1056,
            256,
            64,
            0,
        );
        assert!((t.issue_s - 1.5 * even.issue_s).abs() < 1e-9 * even.issue_s);
        assert!((t.latency_s.unwrap() - 6.0 * l).abs() < 1e-9 * l);
        // A kernel outside the chain kernels has no latency term.
        let t = terms(&H200, "dot_rows", lanes, 6.0, &m, 528, 256, 64, 0);
        assert_eq!(t.latency_s, None);
    }
}
