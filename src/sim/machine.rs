//! The simulator object [`Sim`]: the simulated SM, options, the program
//! cache, counters over launches, the global-memory shadows' memory kept
//! between launches, and a launch's validation (shape, directives, shared
//! memory, target, arguments) before its CTAs run.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::checks::global::Scratch;
use super::error::SimError;
use super::global_mem::{GLOBAL_BASE, GlobalMem};
use super::grid;
use super::interp::Kernel;
use super::ir::*;
use super::options::{LaunchReport, SimOptions};
use super::parse::Program;
use crate::abi::ArgValue;
use crate::exec::{LaunchConfig, Traffic};
use crate::target::Sm;

/// What `multiprocessor_count` reports, and the `%nsmid` of every launch.
pub const SM_COUNT: u32 = 4;

/// The raw handle of the simulator's default stream (an id; streams are
/// ordered trivially because the simulator runs every operation at once).
pub const SIM_DEFAULT_STREAM: u64 = 0x5157_0000;

/// The CPU PTX simulator: device memory plus launches.
pub struct Sim {
    pub(crate) sm: Sm,
    pub(crate) mem: GlobalMem,
    pub(crate) options: SimOptions,
    pub(crate) cache: HashMap<String, Arc<Program>>,
    pub(crate) traffic: Traffic,
    /// Streams handed out through the executor interface (the default
    /// stream is `SIM_DEFAULT_STREAM`).
    pub(crate) streams: Vec<u64>,
    pub(crate) next_stream: u64,
    pub(crate) totals: BTreeMap<String, u64>,
    pub(crate) total_instructions: u64,
    /// Issued instructions per PTX instruction (index into the entry's
    /// instructions) of the last launch.
    pub(crate) last_counts: Vec<u64>,
    /// The heaviest block's issued instructions in the last launch.
    pub(crate) last_heaviest: u64,
    /// The heaviest warp's issued instructions in the last launch.
    pub(crate) last_heaviest_warp: u64,
    /// The last launch's critical path (0 without the scoreboard).
    pub(crate) last_critical_path: u64,
    /// Keep the critical-path scoreboard ([`Sim::set_timing`]).
    pub(crate) timing: bool,
    /// Attribute it by instruction ([`Sim::set_timing_by_line`]).
    pub(crate) timing_lines: bool,
    /// Per kernel name, its last attributed launch's critical path and
    /// [`LaunchReport::critical_path_lines`].
    pub(crate) path_lines: BTreeMap<String, (u64, Vec<super::PathLine>)>,
    /// Blocks run in lockstep over every launch so far.
    pub(crate) lockstep_blocks: u64,
    pub(crate) clock: u64,
    /// The global-memory shadows' memory, kept between launches.
    pub(crate) scratch: Scratch,
}

impl Sim {
    /// A simulator for `sm` with checks on.
    pub fn new(sm: Sm) -> Self {
        Sim {
            sm,
            mem: GlobalMem {
                allocs: Vec::new(),
                last: 0,
                next: GLOBAL_BASE,
                spare: Default::default(),
            },
            options: SimOptions::default(),
            cache: HashMap::new(),
            traffic: Traffic::default(),
            streams: Vec::new(),
            next_stream: SIM_DEFAULT_STREAM + 1,
            totals: BTreeMap::new(),
            total_instructions: 0,
            last_counts: Vec::new(),
            last_heaviest: 0,
            last_heaviest_warp: 0,
            last_critical_path: 0,
            timing: false,
            timing_lines: false,
            path_lines: BTreeMap::new(),
            lockstep_blocks: 0,
            clock: 0,
            scratch: Scratch::default(),
        }
    }

    /// The SM of this simulator.
    pub fn sm_target(&self) -> Sm {
        self.sm
    }

    /// The options the next launch uses.
    pub fn options(&self) -> SimOptions {
        self.options
    }

    /// Replace the options; they apply from the next launch (which also
    /// resolves [`SimOptions::threads`] and reports a bad
    /// `PTXSMITH_SIM_THREADS` value).
    pub fn set_options(&mut self, o: SimOptions) {
        self.options = o;
    }

    /// Turn the optional checks on or off.
    pub fn set_checks(&mut self, on: bool) {
        self.options.checks = on;
    }

    /// Parse `ptx`, or return the cached program for the same text. A new
    /// program is loaded ([`Sim::load_module`]): its module variables live
    /// in this simulator's global memory for as long as it is cached (the
    /// simulator's life), shared by every launch of the same text.
    pub fn program(&mut self, ptx: &str) -> Result<Arc<Program>, SimError> {
        if let Some(p) = self.cache.get(ptx) {
            return Ok(p.clone());
        }
        let p = self.load_module(&Arc::new(Program::parse(ptx)?))?;
        self.cache.insert(ptx.to_string(), p.clone());
        Ok(p)
    }

    /// Number of distinct PTX texts parsed and cached so far.
    pub fn cache_len(&self) -> usize {
        self.cache.len()
    }

    /// Instruction counts per opcode over every launch so far.
    pub fn opcode_totals(&self) -> &BTreeMap<String, u64> {
        &self.totals
    }

    /// Instructions over every launch so far.
    pub fn total_instructions(&self) -> u64 {
        self.total_instructions
    }

    /// The last launch's issued instructions per PTX instruction of its
    /// entry (thread-instructions, predicated-off ones included), indexed
    /// like the parsed entry's instructions; empty before the first
    /// launch. The roofline model weights each loop's SASS/PTX ratio by
    /// these.
    pub fn last_launch_counts(&self) -> &[u64] {
        &self.last_counts
    }

    /// The last launch's [`LaunchReport::heaviest_block`] (0 before the
    /// first launch), for callers that launch through the executor
    /// interface, which returns no report.
    pub fn last_launch_heaviest_block(&self) -> u64 {
        self.last_heaviest
    }

    /// The last launch's [`LaunchReport::heaviest_warp`] (0 before the
    /// first launch), as [`Sim::last_launch_heaviest_block`].
    pub fn last_launch_heaviest_warp(&self) -> u64 {
        self.last_heaviest_warp
    }

    /// The last launch's [`LaunchReport::critical_path`] (0 before the
    /// first launch or without the scoreboard), as
    /// [`Sim::last_launch_heaviest_block`].
    pub fn last_launch_critical_path(&self) -> u64 {
        self.last_critical_path
    }

    /// Keep a critical-path scoreboard in the following launches (off by
    /// default): per thread a clock and a ready-clock per register, each
    /// executed instruction issuing once its sources are ready and its
    /// results ready after its class's latency, barriers joining their
    /// threads' clocks (`sim::interp::timing` has the rules and the cited
    /// latencies). Each launch then reports its
    /// [`LaunchReport::critical_path`]. Results are the same either way;
    /// the blocks run one thread after another (no lockstep) and each
    /// instruction costs a little more on the host.
    pub fn set_timing(&mut self, on: bool) {
        self.timing = on;
    }

    /// With `on`, also attribute the scoreboard's clocks by instruction
    /// (and turn the scoreboard on; off turns only the attribution off):
    /// each launch then reports [`LaunchReport::critical_path_lines`], where
    /// the longest path's clocks went (`sim::interp::timing` has the
    /// rules). It keeps a row per thread and instruction and copies rows
    /// at barriers: a diagnostic, slower than the scoreboard alone.
    pub fn set_timing_by_line(&mut self, on: bool) {
        self.timing_lines = on;
        if on {
            self.timing = true;
        }
    }

    /// Per kernel name (in name order), its last launch with attribution
    /// on ([`Sim::set_timing_by_line`]): its critical path and
    /// [`LaunchReport::critical_path_lines`] (for launches made through a
    /// runtime context, whose reports the caller does not see).
    pub fn critical_path_lines_by_kernel(
        &self,
    ) -> impl Iterator<Item = (&str, u64, &[super::PathLine])> {
        (self.path_lines.iter()).map(|(k, (c, v))| (k.as_str(), *c, v.as_slice()))
    }

    /// Whether the scoreboard is on ([`Sim::set_timing`]).
    pub fn timing(&self) -> bool {
        self.timing
    }

    /// Blocks that ran their threads in lockstep ([`SimOptions::lockstep`])
    /// over every launch so far: a diagnostic of the schedule (how often it
    /// applies), not of the results, which are the same either way. A
    /// block the launch's ordered walk runs again (to name a race or the
    /// exact budget stop) counts once for its lockstep run, so the figure
    /// can vary a little with the thread count.
    pub fn lockstep_blocks(&self) -> u64 {
        self.lockstep_blocks
    }

    /// Run `entry` of `prog` over the grid. Blocks run one after another in
    /// x-fastest order; the launch stops at the first finding. Each
    /// argument must have its parameter's size ([`ArgValue`]s are 4 or 8
    /// bytes; a kernel with other parameters, `.u8`, `.u16`, `.f16` or a
    /// `.b8` array by value, is launched with
    /// [`Sim::launch_program_bytes`]). A program with module variables
    /// must be loaded first ([`Sim::load_module`]; [`Sim::program`] does).
    pub fn launch_program(
        &mut self,
        prog: &Program,
        entry: &str,
        cfg: LaunchConfig,
        args: &[ArgValue],
    ) -> Result<LaunchReport, SimError> {
        self.launch_with(prog, entry, cfg, None, Params::Args(args))
    }

    /// [`Sim::launch_program`] with the parameter buffer itself: `params`
    /// holds [`Entry::param_bytes`] bytes laid out as the entry's
    /// [`ParamInfo`]s say (what a driver copies from `kernelParams`), so
    /// parameters of every size and alignment can be passed.
    pub fn launch_program_bytes(
        &mut self,
        prog: &Program,
        entry: &str,
        cfg: LaunchConfig,
        params: &[u8],
    ) -> Result<LaunchReport, SimError> {
        self.launch_with(prog, entry, cfg, None, Params::Bytes(params))
    }

    /// [`Sim::launch_program_bytes`] in thread-block clusters of
    /// `cluster` CTAs (x, y, z; sm_90+): what `cuLaunchKernelEx` with
    /// `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION` does. The grid must be a
    /// multiple of the shape, and an entry's `.reqnctapercluster` must
    /// equal it ([`SimError::InvalidLaunch`] otherwise, also below sm_90).
    /// The other launches run an entry with `.reqnctapercluster` in its
    /// clusters, and one that uses cluster instructions without a shape
    /// as clusters of one CTA.
    pub fn launch_program_bytes_clustered(
        &mut self,
        prog: &Program,
        entry: &str,
        cfg: LaunchConfig,
        cluster: (u32, u32, u32),
        params: &[u8],
    ) -> Result<LaunchReport, SimError> {
        self.launch_with(prog, entry, cfg, Some(cluster), Params::Bytes(params))
    }

    fn launch_with(
        &mut self,
        prog: &Program,
        entry: &str,
        cfg: LaunchConfig,
        cluster: Option<(u32, u32, u32)>,
        args: Params<'_>,
    ) -> Result<LaunchReport, SimError> {
        if !prog.globals.is_empty() && prog.global_base.is_none() {
            return Err(SimError::InvalidLaunch(format!(
                "the module has module-scope .global variables ({}) and was not loaded: \
                 load it with Sim::load_module (Sim::program does) before launching",
                prog.globals
                    .iter()
                    .map(|v| v.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let e = prog.entry(entry).ok_or_else(|| {
            SimError::InvalidLaunch(format!(
                "module has no entry `{entry}` (has {:?})",
                prog.entry_names()
            ))
        })?;
        let (bx, by, bz) = cfg.block;
        let (gx, gy, gz) = cfg.grid;
        let nthreads = bx as u64 * by as u64 * bz as u64;
        if bx == 0 || by == 0 || bz == 0 || gx == 0 || gy == 0 || gz == 0 {
            return Err(SimError::InvalidLaunch(format!(
                "zero dimension in grid {:?} / block {:?}",
                cfg.grid, cfg.block
            )));
        }
        if nthreads > 1024 || bx > 1024 || by > 1024 || bz > 64 {
            return Err(SimError::InvalidLaunch(format!(
                "block {:?} exceeds (1024, 1024, 64) / 1024 threads",
                cfg.block
            )));
        }
        if gx > i32::MAX as u32 || gy > 65535 || gz > 65535 {
            return Err(SimError::InvalidLaunch(format!(
                "grid {:?} exceeds (2^31-1, 65535, 65535)",
                cfg.grid
            )));
        }
        if let Some(m) = e.maxntid
            && nthreads > m.0 as u64 * m.1 as u64 * m.2 as u64
        {
            return Err(SimError::InvalidLaunch(format!(
                "block {:?} exceeds .maxntid {:?} of `{entry}`",
                cfg.block, m
            )));
        }
        if let Some(r) = e.reqntid
            && r != cfg.block
        {
            return Err(SimError::InvalidLaunch(format!(
                "block {:?} differs from .reqntid {:?} of `{entry}`",
                cfg.block, r
            )));
        }
        let cluster = super::cluster::shape(e, &cfg, cluster, self.sm)?;
        if let Some((d, _)) = cluster
            && self.options.checks
            && super::interp::mbar_order::arrives(&e.code)
        {
            // the race checks' mbarrier clocks, with the one barrier such a
            // kernel arrives on, within their budget (`interp::mbar_order`)
            let threads = d.0 as u64 * d.1 as u64 * d.2 as u64 * nthreads;
            super::interp::mbar_order::check_budget(entry, threads, 1)?;
        }
        let smem = e.dyn_shared_offset() as u64 + cfg.dynamic_smem_bytes as u64;
        let limit = self.sm.info().max_smem_per_block_optin as u64;
        if cfg.dynamic_smem_bytes > 0 && smem > limit {
            return Err(SimError::InvalidLaunch(format!(
                "{smem} bytes of shared memory exceed the {limit} of {}",
                self.sm
            )));
        }
        let cc = self.sm.info().cc.0 as u32 * 10 + self.sm.info().cc.1 as u32;
        if prog.sm > 0 && !prog.runs_on(cc) {
            return Err(SimError::InvalidLaunch(format!(
                "module targets sm_{}{}, which does not run on the simulator's {}",
                prog.sm,
                prog.suffix.map_or(String::new(), String::from),
                self.sm
            )));
        }
        if !self.options.approx
            && let Some(pc) = e
                .insts
                .iter()
                .position(|i| matches!(i.op, Op::Approx { .. }))
        {
            return Err(SimError::Unsupported {
                line: e.lines[pc],
                instr: e.texts[pc].clone(),
                reason: concat!(
                    "approximate instruction: not bit-reproducible; set ",
                    "SimOptions::approx to run it as the correctly rounded value"
                )
                .into(),
            });
        }
        // parameters
        let params = match args {
            Params::Args(args) => param_buffer(e, entry, args)?,
            Params::Bytes(b) => {
                if b.len() != e.param_bytes as usize {
                    return Err(SimError::InvalidLaunch(format!(
                        "`{entry}` has a {}-byte parameter buffer, got {} bytes",
                        e.param_bytes,
                        b.len()
                    )));
                }
                b.to_vec()
            }
        };
        let n = nthreads as usize;
        let smem_size = if e.dyn_shared_align > 1 || cfg.dynamic_smem_bytes > 0 {
            smem
        } else {
            e.static_shared as u64
        } as usize;
        let threads = self.options.resolved_threads()?;
        // A loaded module's `.const` bank as the host last wrote it (see
        // `Program::const_image_offset`); the parsed bank otherwise.
        let bank;
        let consts: &[u8] = match prog.global_base {
            Some(base) if !prog.consts.is_empty() => {
                let mut b = vec![0u8; prog.consts.len()];
                self.read(base + prog.const_image_offset(), &mut b)?;
                bank = b;
                &bank
            }
            _ => &prog.consts,
        };
        let k = Kernel {
            e,
            code: &e.code,
            consts,
            params: &params,
            cfg,
            checks: self.options.checks,
            limit: (self.options)
                .launch_budget(nthreads * gx as u64 * gy as u64 * gz as u64)
                .unwrap_or(u64::MAX),
            clock_base: self.clock,
            smem: smem_size,
            lockstep: self.options.lockstep,
            sm: self.sm,
            cluster,
            timing: self.timing,
            path_lines: (self.timing && self.timing_lines).then(Default::default),
        };
        let totals = grid::run(&mut self.mem, &k, threads, &mut self.scratch)?;
        self.clock = self.clock.wrapping_add(totals.clock_reads);
        self.lockstep_blocks += totals.lockstep;
        let counts = totals.counts;
        let mut report = LaunchReport {
            kernel: entry.to_string(),
            threads_per_block: n as u32,
            blocks: gx as u64 * gy as u64 * gz as u64,
            barriers: totals.barriers,
            heaviest_block: totals.heaviest,
            heaviest_warp: totals.heaviest_warp.0,
            heaviest_warp_at: (totals.heaviest_warp.1, totals.heaviest_warp.2),
            critical_path: totals.critical_path.0,
            critical_path_at: (totals.critical_path.1, totals.critical_path.2),
            same_value_writes: totals.same.count,
            first_same_value_write: totals.same.first,
            ..Default::default()
        };
        if let Some(best) = k.path_lines.as_ref() {
            let best = best.lock().unwrap_or_else(|e| e.into_inner()).take();
            let at = totals.critical_path;
            if let Some((key, row)) = best.filter(|(key, _)| *key == at) {
                debug_assert_eq!(key, at);
                report.critical_path_lines = row
                    .into_iter()
                    .map(|(pc, c)| super::PathLine {
                        line: e.lines[pc as usize],
                        text: e.texts[pc as usize].clone(),
                        issue: c[0],
                        wait: c[1],
                        join: c[2],
                    })
                    .collect();
            }
        }
        // per opcode index first: the maps get one entry per opcode, not
        // one string per instruction
        let mut per_op = vec![0u64; e.opcodes.len()];
        for (pc, &c) in counts.iter().enumerate() {
            if c == 0 {
                continue;
            }
            per_op[e.insts[pc].opcode as usize] += c;
            report.instructions += c;
            if matches!(e.insts[pc].op, Op::Approx { .. }) {
                report.approximate += c;
            }
        }
        for (name, &c) in e.opcodes.iter().zip(&per_op) {
            if c == 0 {
                continue;
            }
            *report.per_opcode.entry(name.clone()).or_default() += c;
            let base = name.split('.').next().unwrap_or(name);
            *report.per_base.entry(base.to_string()).or_default() += c;
        }
        if !totals.printf.is_empty() {
            report.printf = String::from_utf8_lossy(&totals.printf).into_owned();
            print!("{}", report.printf);
            use std::io::Write as _;
            std::io::stdout().flush().ok();
        }
        report.merge_into(&mut self.totals);
        self.total_instructions += report.instructions;
        self.last_counts = counts;
        self.last_heaviest = report.heaviest_block;
        self.last_heaviest_warp = report.heaviest_warp;
        self.last_critical_path = report.critical_path;
        if self.timing && self.timing_lines {
            let v = (report.critical_path, report.critical_path_lines.clone());
            self.path_lines.insert(report.kernel.clone(), v);
        }
        self.traffic.launches += 1;
        Ok(report)
    }
}

/// Where a launch's parameter values come from.
enum Params<'a> {
    Args(&'a [ArgValue]),
    Bytes(&'a [u8]),
}

/// The parameter buffer of `e` holding `args` (one per parameter, each of
/// its parameter's size).
fn param_buffer(e: &Entry, entry: &str, args: &[ArgValue]) -> Result<Vec<u8>, SimError> {
    if args.len() != e.params.len() {
        return Err(SimError::InvalidLaunch(format!(
            "`{entry}` takes {} parameters, got {} arguments",
            e.params.len(),
            args.len()
        )));
    }
    let mut params = vec![0u8; e.param_bytes as usize];
    for (p, a) in e.params.iter().zip(args) {
        let slot = a.to_le_bytes();
        let len = slot.len();
        if len != p.size as usize {
            return Err(SimError::InvalidLaunch(format!(
                "parameter `{}` of `{entry}` has {} bytes, argument {a:?} has {len} \
                 (pass parameters of other sizes with Sim::launch_program_bytes)",
                p.name, p.size,
            )));
        }
        params[p.offset as usize..p.offset as usize + len].copy_from_slice(&slot[..len]);
    }
    Ok(params)
}
