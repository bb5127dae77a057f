//! What a caller sets and gets back: [`SimOptions`] (checks, the
//! instruction budget, approximate instructions) and the [`LaunchReport`]
//! of one launch.

use std::collections::BTreeMap;

use super::SimError;
#[cfg(doc)]
use super::{Sim, Site};

/// The floor of the default per-launch instruction budget,
/// [`SimOptions::max_instructions`] of [`SimOptions::default`]: 10⁹ dynamic
/// PTX instructions, summed over every block and thread of one launch. The
/// default budget scales with the launch: a launch of `n` threads (blocks ×
/// threads per block) may issue `max(10⁹, n ×`
/// [`DEFAULT_INSTRUCTIONS_PER_THREAD`]`)` instructions
/// ([`SimOptions::launch_budget`]).
///
/// Without a budget a kernel that never exits (a `bra` back to itself, a
/// spin on a flag no thread sets) hangs the simulator, and the test or tool
/// driving it, forever. With it such a launch ends with
/// [`SimError::InstructionLimit`], whose [`Site`] names the kernel, the
/// block, the thread and the PTX line (and instruction) it was spinning on.
///
/// Why 10⁹ as the floor: the simulator issues roughly 3–5·10⁸ instructions
/// per second per core with every check on (`cargo bench --bench sim`,
/// `docs/perf.md`), about 3·10⁸ for a one-instruction `bra` loop, so a
/// runaway launch of up to 59 threads ends after 3 to 10 seconds of CPU
/// time in a release build. The blocks of a launch run in parallel; a
/// spinning block runs to exactly its share of the budget (what the blocks
/// before it left) while the others stop. A block's attempt at the
/// lockstep schedule ([`SimOptions::lockstep`]) may issue a sixteenth of
/// its cap; past that it runs again in thread order (which gives the exact
/// stop), so a spin costs about 1/16 more than its budget: the
/// default-budget spin of `tests/sim_budget.rs` (54 threads, so the floor)
/// takes 3.2 s on the 2-core build machine (7 s when the attempt could run
/// to the whole cap). The largest legitimate launch in this repository's
/// library — every test, the benches' simulator cases and
/// `examples/demo.rs` on sm_80/89/120 — issues 8.8·10⁷ instructions
/// (`score_route_top_s_f32_v4`, grid 8 × 256, in the demo; the largest in
/// the tests is `fp8_quantize_e4m3` with 7.4·10⁷), more than 11× below the
/// floor.
///
/// The value `Some(DEFAULT_INSTRUCTION_BUDGET)` of
/// [`SimOptions::max_instructions`] *is* the scaled default; any other
/// `Some(n)` is a budget of exactly `n` instructions whatever the launch's
/// size, and `None` lifts the budget. Set them with [`Sim::set_options`];
/// from the command line `ptx_run --max-instructions N` sets an exact
/// budget (`0` = no limit).
pub const DEFAULT_INSTRUCTION_BUDGET: u64 = 1_000_000_000;

/// The default budget's allowance per thread of a launch, 2²⁴ (about
/// 1.68·10⁷) instructions (see [`DEFAULT_INSTRUCTION_BUDGET`] and
/// [`SimOptions::launch_budget`]): enough for a 10⁶-iteration loop of up
/// to sixteen instructions an iteration in every thread of the launch (a
/// 1024-thread block doing so issues up to 1.7·10¹⁰ instructions). The
/// measured need that set it: cudarc's `slow_worker` test kernel (NVRTC
/// 12.9's PTX for `for (size_t i = 0; i < 1000000; i++) tmp += data[i %
/// len];`), 12 instructions an iteration, 1.2·10⁷ a thread, over 2²³.
///
/// The cost: a launch that spins runs to its budget before the finding,
/// about 3.5·10⁸ instructions per second per core, and one block runs on
/// one core, so a spinning launch of `n` threads above the floor's 59
/// takes about `n` × 48 ms of CPU time: a spinning 1024-thread block (a
/// one-instruction `bra` loop, `ptx_run --block 1024`) took 50 s of CPU
/// time on the 2-core build machine (2 minutes of wall time while other
/// builds shared it); set an exact [`SimOptions::max_instructions`] to end
/// it sooner.
pub const DEFAULT_INSTRUCTIONS_PER_THREAD: u64 = 1 << 24;

/// Simulator options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimOptions {
    /// Race, uninitialised-shared, uninitialised-register and `bra.uni`
    /// uniformity checks (bounds, alignment, barrier and warp-divergence
    /// checks are always on: they are needed for memory safety and for a
    /// meaningful schedule). On by default.
    pub checks: bool,
    /// The per-launch instruction budget (runaway-loop guard): a launch
    /// that would issue more instructions than its budget, over all its
    /// blocks and threads, stops with [`SimError::InstructionLimit`].
    /// Default: `Some(`[`DEFAULT_INSTRUCTION_BUDGET`]`)`, the scaled
    /// default budget, `max(10⁹, threads ×`
    /// [`DEFAULT_INSTRUCTIONS_PER_THREAD`]`)` for a launch of `threads`
    /// threads (blocks × threads per block). Any other `Some(n)` is an
    /// exact budget of `n` instructions for every launch; `None` means no
    /// limit. [`SimOptions::launch_budget`] gives a launch's budget.
    pub max_instructions: Option<u64>,
    /// Execute approximate f32 instructions (`ex2/lg2/rsqrt/sin/cos/tanh
    /// .approx`, `sqrt/rcp/div.approx`, `div.full`) as the correctly rounded
    /// value. The GPU's results are only within NVIDIA's error bounds, so
    /// these are not bit-exact; off by default (the launch is refused with
    /// [`SimError::Unsupported`] naming the instruction), and counted in
    /// [`LaunchReport::approximate`] when on.
    pub approx: bool,
    /// Worker threads that run the CTAs of a launch in parallel. `0` (the
    /// default) means the `PTXSMITH_SIM_THREADS` environment variable if it
    /// is set, else every core ([`std::thread::available_parallelism`]).
    /// Results, memory, reports and findings are the same for every thread
    /// count (module docs, *Execution model*); entries with global atomics
    /// or `vprintf` calls run their CTAs one after another whatever this
    /// says. The calling
    /// thread is one of the workers; the others come from a pool kept per
    /// thread count for the whole process, whose threads stay awake (and
    /// yield their CPU) for up to 200 µs after each launch, so that
    /// back-to-back launches need not wake them.
    pub threads: usize,
    /// Run the threads of a block in lockstep where that cannot change the
    /// results (on by default): each instruction for every thread at the
    /// same place before the next, which is several times faster on the
    /// host than running each thread to its next barrier in turn. A block
    /// whose results could depend on the order — a finding, a global
    /// access whose value depends on which thread goes first, an
    /// instruction budget about to run out — runs again one thread after
    /// another, so results, findings and reports are the same either way
    /// (`tests/sim_lockstep.rs` compares them). Entries with atomics or
    /// `%clock` reads, and launches without checks, always run one thread
    /// after another.
    pub lockstep: bool,
}

/// The environment variable that sets the default thread count
/// ([`SimOptions::threads`] `0`): a positive integer.
pub const THREADS_ENV: &str = "PTXSMITH_SIM_THREADS";

impl SimOptions {
    /// The instruction budget of a launch of `threads` threads (blocks ×
    /// threads per block) under these options (see
    /// [`SimOptions::max_instructions`]): `None` for no limit.
    ///
    /// ```
    /// use ptxsmith::sim::{DEFAULT_INSTRUCTION_BUDGET, DEFAULT_INSTRUCTIONS_PER_THREAD, SimOptions};
    /// let o = SimOptions::default();
    /// assert_eq!(o.launch_budget(32), Some(DEFAULT_INSTRUCTION_BUDGET));
    /// assert_eq!(DEFAULT_INSTRUCTIONS_PER_THREAD, 1 << 24);
    /// assert_eq!(o.launch_budget(1024), Some(1024 << 24));
    /// let exact = SimOptions { max_instructions: Some(5000), ..o };
    /// assert_eq!(exact.launch_budget(1024), Some(5000));
    /// ```
    pub fn launch_budget(&self, threads: u64) -> Option<u64> {
        match self.max_instructions {
            Some(DEFAULT_INSTRUCTION_BUDGET) => Some(
                DEFAULT_INSTRUCTION_BUDGET
                    .max(threads.saturating_mul(DEFAULT_INSTRUCTIONS_PER_THREAD)),
            ),
            m => m,
        }
    }

    /// The thread count a launch uses: [`SimOptions::threads`], else
    /// `PTXSMITH_SIM_THREADS`, else every core.
    ///
    /// # Errors
    /// [`SimError::InvalidLaunch`] naming the variable when it is set to
    /// anything but a positive integer.
    pub fn resolved_threads(&self) -> Result<usize, SimError> {
        if self.threads > 0 {
            return Ok(self.threads);
        }
        match std::env::var(THREADS_ENV) {
            Ok(v) => match v.trim().parse::<usize>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(SimError::InvalidLaunch(format!(
                    "{THREADS_ENV}={v:?} is not a positive thread count"
                ))),
            },
            Err(_) => Ok(std::thread::available_parallelism().map_or(1, |n| n.get())),
        }
    }
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            checks: true,
            max_instructions: Some(DEFAULT_INSTRUCTION_BUDGET),
            approx: false,
            threads: 0,
            lockstep: true,
        }
    }
}

/// What one launch did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaunchReport {
    /// Name of the launched entry.
    pub kernel: String,
    /// Dynamic instructions issued (predicated-off instructions included).
    pub instructions: u64,
    /// Per full opcode string (`add.rn.f32`).
    pub per_opcode: BTreeMap<String, u64>,
    /// Per base opcode (`add`).
    pub per_base: BTreeMap<String, u64>,
    /// Blocks in the grid (x · y · z).
    pub blocks: u64,
    /// Threads per block (x · y · z).
    pub threads_per_block: u32,
    /// Completed CTA-wide barriers, over all blocks.
    pub barriers: u64,
    /// The most instructions one block issued (counted as
    /// [`LaunchReport::instructions`]; `instructions / blocks` is the
    /// mean): how unequal the launch's blocks are, which the roofline
    /// model's busiest SM needs (`report::roofline::speed`). In a launch
    /// in thread-block clusters, the heaviest cluster's count over its
    /// blocks (rounded up): the simulator counts a cluster as a whole.
    pub heaviest_block: u64,
    /// The most instructions one warp issued, as the thread-instructions
    /// of its lanes (counted as [`LaunchReport::instructions`]: a warp of
    /// 32 threads that stay together issues a 32nd of it as
    /// warp-instructions); 0 for an empty grid. Where a block's warps do
    /// unequal work (one warp walks a dependent chain while the others
    /// wait at barriers), it says which warp a latency bound must follow
    /// (the roofline recorder fits it as a diagnostic; `docs/perf.md`).
    /// Counted per warp in every schedule, clusters included.
    pub heaviest_warp: u64,
    /// Where [`LaunchReport::heaviest_warp`] ran: its block's linear index
    /// (x fastest) and its warp index in the block (`%tid` linear / 32);
    /// the lowest block, then warp, on ties; `(0, 0)` for an empty grid.
    pub heaviest_warp_at: (u64, u32),
    /// With the scoreboard on ([`crate::sim::Sim::set_timing`]; else 0):
    /// the longest critical path of a block, in clocks: the latest clock
    /// a thread of it reached at exit, each instruction issued once its
    /// sources were ready and barriers joining their threads (rules and
    /// latencies in `sim::interp::timing`). Blocks are timed each from
    /// clock 0: what a block's chain takes, not the launch's waves.
    pub critical_path: u64,
    /// Where [`LaunchReport::critical_path`] ended: its block's linear
    /// index and the thread's linear index in the block (the lowest on
    /// ties); `(0, 0)` without the scoreboard.
    pub critical_path_at: (u64, u32),
    /// With attribution on ([`crate::sim::Sim::set_timing_by_line`]; else
    /// empty): where [`LaunchReport::critical_path`] went, per PTX
    /// instruction of its thread with a charge, in PTX order (rules in
    /// `sim::interp::timing`); the clocks sum to the critical path.
    /// [`LaunchReport::critical_path_by_line`] sorts them.
    pub critical_path_lines: Vec<PathLine>,
    /// Executed approximate instructions (see [`SimOptions::approx`]); when
    /// non-zero the results are not bit-exact with the GPU.
    pub approximate: u64,
    /// The launch's device `printf` output (`vprintf`), also written to
    /// the host's stdout when the launch ends: block by block in linear
    /// order, within a block thread by thread in linear order, each
    /// thread's output in its program order (a GPU interleaves threads in
    /// an unspecified order). Empty when the kernel prints nothing; a
    /// launch that fails prints nothing.
    pub printf: String,
    /// Same-value write-write conflicts: plain stores of two threads
    /// (of two warps of a block, on global memory; of a block, on shared
    /// memory) to one byte that nothing orders, where the later stores the
    /// byte the earlier left there. compute-sanitizer's racecheck grades
    /// hazards by severity and keeps ERROR for the likely causes of data
    /// races; a write-after-write whose incoming value is the current one
    /// changes nothing in either order, so the simulator counts it here (one
    /// per store instruction of a thread that had one) and does not fail the
    /// launch. Every other race (different bytes, a read or an atomic
    /// involved) is a finding ([`SimError::WarpGlobalRace`],
    /// [`SimError::SharedRace`]). Races between blocks are findings whatever
    /// the values.
    pub same_value_writes: u64,
    /// The first of [`LaunchReport::same_value_writes`] (in block order,
    /// then the simulator's thread order; a global one before a shared one
    /// within a block), as the text of the race finding it would otherwise
    /// be: both accesses named.
    pub first_same_value_write: Option<String>,
}

/// The clocks one PTX instruction added to a critical path
/// ([`LaunchReport::critical_path_lines`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathLine {
    /// Its source line (1-based).
    pub line: u32,
    /// Its source text.
    pub text: String,
    /// Its own issue slots: one clock each time the thread issued it.
    pub issue: u64,
    /// Clocks the thread stalled for its result (a load's latency, an
    /// arithmetic chain's), charged to it as the producer of the source
    /// ready last.
    pub wait: u64,
    /// Clocks waited at it as a barrier, its release cost included.
    pub join: u64,
}

impl PathLine {
    /// Its clocks: `issue + wait + join`.
    pub fn clocks(&self) -> u64 {
        self.issue + self.wait + self.join
    }
}

impl LaunchReport {
    /// [`LaunchReport::critical_path_lines`], most clocks first (PTX
    /// order on ties).
    pub fn critical_path_by_line(&self) -> Vec<&PathLine> {
        let mut v: Vec<&PathLine> = self.critical_path_lines.iter().collect();
        v.sort_by_key(|l| std::cmp::Reverse(l.clocks()));
        v
    }

    pub(crate) fn merge_into(&self, tot: &mut BTreeMap<String, u64>) {
        for (k, v) in &self.per_opcode {
            *tot.entry(k.clone()).or_default() += v;
        }
    }
}
