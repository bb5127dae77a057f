//! The execution engine: memory, the CTA scheduler, instruction semantics
//! and the sanitizer-style checks.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::error::{SimError, Site};
use super::fp::{self, F32_NAN, FOp, MiniFmt, Rnd};
use super::ir::*;
use super::parse::Program;
use crate::dsl::params::ArgValue;
use crate::runtime::exec::{LaunchConfig, Traffic};
use crate::target::Sm;

/// Generic-address window of `.shared` (a CTA's shared offset `o` has the
/// generic address `SHARED_WINDOW + o`).
pub const SHARED_WINDOW: u64 = 0x0000_7E00_0000_0000;
/// Generic-address window of `.local`.
pub const LOCAL_WINDOW: u64 = 0x0000_7D00_0000_0000;
/// Generic-address window of `.const`.
pub const CONST_WINDOW: u64 = 0x0000_7C00_0000_0000;
const WINDOW_SIZE: u64 = 1 << 32;
/// First global allocation address; allocations are 256-byte aligned and
/// separated by at least `GUARD` unmapped bytes.
pub const GLOBAL_BASE: u64 = 0x0000_0001_0000_0000;
const GUARD: u64 = 4096;
/// What `multiprocessor_count` reports, and the `%nsmid` of every launch.
pub const SM_COUNT: u32 = 4;

/// The raw handle of the simulator's default stream (an id; streams are
/// ordered trivially because the simulator runs every operation at once).
pub const SIM_DEFAULT_STREAM: u64 = 0x5157_0000;

/// The default per-launch instruction budget,
/// [`SimOptions::max_instructions`] of [`SimOptions::default`]: 10⁹ dynamic
/// PTX instructions, summed over every block and thread of one launch.
///
/// Without a budget a kernel that never exits (a `bra` back to itself, a
/// spin on a flag no thread sets) hangs the simulator, and the test or tool
/// driving it, forever. With it such a launch ends with
/// [`SimError::InstructionLimit`], whose [`Site`] names the kernel, the
/// block, the thread and the PTX line (and instruction) it was spinning on.
///
/// Why 10⁹: the simulator issues roughly 10⁸ instructions per second on one
/// core (`cargo bench --bench sim`), 3–4·10⁸ for a one-instruction
/// `bra` loop and 7–8·10⁷ for a loop polling global memory, so a runaway
/// launch ends after 3 to 15 seconds in a release build (measured on a
/// loaded 2-core machine). The largest legitimate launch in this
/// repository — every test, the benches' simulator cases and
/// `examples/demo.rs` on sm_80/89/120 — issues 8.8·10⁷ instructions
/// (`score_route_top_s_f32_v4`, grid 8 × 256, in the demo; the largest in
/// the tests is `fp8_quantize_e4m3` with 7.4·10⁷), more than 11× below the
/// budget.
///
/// Set `max_instructions` to another value, or to `None` for no limit,
/// with [`Sim::set_options`]; from the command line `ptx_run
/// --max-instructions N` sets it (`0` = no limit).
pub const DEFAULT_INSTRUCTION_BUDGET: u64 = 1_000_000_000;

/// Simulator options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimOptions {
    /// Race, uninitialised-shared, uninitialised-register and `bra.uni`
    /// uniformity checks (bounds, alignment, barrier and warp-divergence
    /// checks are always on: they are needed for memory safety and for a
    /// meaningful schedule). On by default.
    pub checks: bool,
    /// The per-launch instruction budget (runaway-loop guard): a launch
    /// that would issue more instructions than this, over all its blocks
    /// and threads, stops with [`SimError::InstructionLimit`]. `None` means
    /// no limit. Default: `Some(`[`DEFAULT_INSTRUCTION_BUDGET`]`)`.
    pub max_instructions: Option<u64>,
    /// Execute approximate f32 instructions (`ex2/lg2/rsqrt/sin/cos/tanh
    /// .approx`, `sqrt/rcp/div.approx`, `div.full`) as the correctly rounded
    /// value. The GPU's results are only within NVIDIA's error bounds, so
    /// these are not bit-exact; off by default (the launch is refused with
    /// [`SimError::Unsupported`] naming the instruction), and counted in
    /// [`LaunchReport::approximate`] when on.
    pub approx: bool,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            checks: true,
            max_instructions: Some(DEFAULT_INSTRUCTION_BUDGET),
            approx: false,
        }
    }
}

/// What one launch did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaunchReport {
    pub kernel: String,
    /// Dynamic instructions issued (predicated-off instructions included).
    pub instructions: u64,
    /// Per full opcode string (`add.rn.f32`).
    pub per_opcode: BTreeMap<String, u64>,
    /// Per base opcode (`add`).
    pub per_base: BTreeMap<String, u64>,
    pub blocks: u64,
    pub threads_per_block: u32,
    /// Completed CTA-wide barriers, over all blocks.
    pub barriers: u64,
    /// Executed approximate instructions (see [`SimOptions::approx`]); when
    /// non-zero the results are not bit-exact with the GPU.
    pub approximate: u64,
}

impl LaunchReport {
    fn merge_into(&self, tot: &mut BTreeMap<String, u64>) {
        for (k, v) in &self.per_opcode {
            *tot.entry(k.clone()).or_default() += v;
        }
    }
}

struct Alloc {
    base: u64,
    data: Vec<u8>,
    /// Per byte: written by the host or a kernel since allocation.
    init: Vec<bool>,
}

/// Global memory: allocations at distinct addresses with guard gaps.
#[derive(Default)]
pub(crate) struct GlobalMem {
    allocs: Vec<Alloc>,
    last: usize,
    next: u64,
}

impl GlobalMem {
    #[inline]
    fn find(&mut self, addr: u64, size: u64) -> Option<(usize, usize)> {
        if let Some(a) = self.allocs.get(self.last)
            && addr >= a.base
            && addr.wrapping_add(size) <= a.base + a.data.len() as u64
            && addr.checked_add(size).is_some()
        {
            return Some((self.last, (addr - a.base) as usize));
        }
        let i = self.allocs.partition_point(|a| a.base <= addr);
        if i == 0 {
            return None;
        }
        let a = &self.allocs[i - 1];
        if addr.checked_add(size)? <= a.base + a.data.len() as u64 {
            self.last = i - 1;
            Some((i - 1, (addr - a.base) as usize))
        } else {
            None
        }
    }
}

/// The CPU PTX simulator: device memory plus launches.
pub struct Sim {
    sm: Sm,
    pub(crate) mem: GlobalMem,
    options: SimOptions,
    pub(crate) cache: HashMap<String, Arc<Program>>,
    pub(crate) traffic: Traffic,
    /// Streams handed out through the executor interface (the default
    /// stream is `SIM_DEFAULT_STREAM`).
    pub(crate) streams: Vec<u64>,
    pub(crate) next_stream: u64,
    totals: BTreeMap<String, u64>,
    total_instructions: u64,
    clock: u64,
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
            },
            options: SimOptions::default(),
            cache: HashMap::new(),
            traffic: Traffic::default(),
            streams: Vec::new(),
            next_stream: SIM_DEFAULT_STREAM + 1,
            totals: BTreeMap::new(),
            total_instructions: 0,
            clock: 0,
        }
    }

    /// The SM of this simulator.
    pub fn sm_target(&self) -> Sm {
        self.sm
    }

    pub fn options(&self) -> SimOptions {
        self.options
    }

    pub fn set_options(&mut self, o: SimOptions) {
        self.options = o;
    }

    /// Turn the optional checks on or off.
    pub fn set_checks(&mut self, on: bool) {
        self.options.checks = on;
    }

    /// Place this simulator's global allocations from `base` on (256-byte
    /// aligned, at least [`GLOBAL_BASE`], below the state-space windows),
    /// so that several simulators in one process hand out disjoint
    /// addresses and a pointer of one used in another is out of bounds
    /// (the CUDA driver emulator gives each context its own range). Only
    /// before the first allocation.
    ///
    /// # Errors
    /// [`SimError::InvalidMemory`] after an allocation, or for a base that
    /// is misaligned or outside `[GLOBAL_BASE, CONST_WINDOW)`.
    pub fn set_global_base(&mut self, base: u64) -> Result<(), SimError> {
        if self.mem.next != GLOBAL_BASE || !self.mem.allocs.is_empty() {
            return Err(SimError::InvalidMemory(
                "set_global_base after the first allocation".into(),
            ));
        }
        if !base.is_multiple_of(256) || !(GLOBAL_BASE..CONST_WINDOW).contains(&base) {
            return Err(SimError::InvalidMemory(format!(
                "global base {base:#x} must be 256-byte aligned and in [{GLOBAL_BASE:#x}, {CONST_WINDOW:#x})"
            )));
        }
        self.mem.next = base;
        Ok(())
    }

    /// Allocate `bytes` of global memory; returns its address. The bytes
    /// read back as zero but are tracked as uninitialised: with checks on,
    /// a kernel load of a byte that neither the host ([`Sim::write`]) nor a
    /// kernel wrote is [`SimError::UninitializedGlobal`].
    pub fn alloc(&mut self, bytes: usize) -> Result<u64, SimError> {
        self.alloc_inner(bytes, false)
    }

    /// Allocate `bytes` of zero-initialised global memory (counts as
    /// written).
    pub fn alloc_zeroed(&mut self, bytes: usize) -> Result<u64, SimError> {
        self.alloc_inner(bytes, true)
    }

    fn alloc_inner(&mut self, bytes: usize, init: bool) -> Result<u64, SimError> {
        let base = self.mem.next;
        let span = (bytes as u64).div_ceil(256) * 256;
        self.mem.next = base + span + GUARD;
        if self.mem.next >= CONST_WINDOW {
            return Err(SimError::InvalidMemory(
                "simulated address space exhausted".into(),
            ));
        }
        self.mem.allocs.push(Alloc {
            base,
            data: vec![0; bytes],
            init: vec![init; bytes],
        });
        Ok(base)
    }

    /// Copy `data` to global memory at `addr` (inside one allocation).
    pub fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), SimError> {
        let (i, o) = self.mem.find(addr, data.len() as u64).ok_or_else(|| {
            SimError::InvalidMemory(format!(
                "write of {} bytes at {addr:#x} is outside every allocation",
                data.len()
            ))
        })?;
        self.mem.allocs[i].data[o..o + data.len()].copy_from_slice(data);
        self.mem.allocs[i].init[o..o + data.len()].fill(true);
        Ok(())
    }

    /// Copy global memory at `addr` (inside one allocation) to `out`.
    pub fn read(&mut self, addr: u64, out: &mut [u8]) -> Result<(), SimError> {
        let (i, o) = self.mem.find(addr, out.len() as u64).ok_or_else(|| {
            SimError::InvalidMemory(format!(
                "read of {} bytes at {addr:#x} is outside every allocation",
                out.len()
            ))
        })?;
        out.copy_from_slice(&self.mem.allocs[i].data[o..o + out.len()]);
        Ok(())
    }

    /// Copy `bytes` bytes from `src` to `dst` (each inside one allocation;
    /// the ranges may overlap). The destination counts as written where the
    /// source was.
    pub fn copy_within(&mut self, dst: u64, src: u64, bytes: usize) -> Result<(), SimError> {
        let outside = |what: &str, a: u64| {
            SimError::InvalidMemory(format!(
                "device copy {what} of {bytes} bytes at {a:#x} is outside every allocation"
            ))
        };
        let (si, so) = self
            .mem
            .find(src, bytes as u64)
            .ok_or_else(|| outside("source", src))?;
        let data = self.mem.allocs[si].data[so..so + bytes].to_vec();
        let init = self.mem.allocs[si].init[so..so + bytes].to_vec();
        let (di, d) = self
            .mem
            .find(dst, bytes as u64)
            .ok_or_else(|| outside("destination", dst))?;
        self.mem.allocs[di].data[d..d + bytes].copy_from_slice(&data);
        self.mem.allocs[di].init[d..d + bytes].copy_from_slice(&init);
        Ok(())
    }

    /// Set `bytes` bytes at `addr` (inside one allocation) to zero.
    pub fn fill_zero(&mut self, addr: u64, bytes: usize) -> Result<(), SimError> {
        let (i, o) = self.mem.find(addr, bytes as u64).ok_or_else(|| {
            SimError::InvalidMemory(format!(
                "zeroing {bytes} bytes at {addr:#x} is outside every allocation"
            ))
        })?;
        self.mem.allocs[i].data[o..o + bytes].fill(0);
        self.mem.allocs[i].init[o..o + bytes].fill(true);
        Ok(())
    }

    /// Release the allocation starting at `addr`. Addresses are never
    /// reused, so a later access through a stale pointer is out of bounds.
    pub fn free(&mut self, addr: u64) -> Result<(), SimError> {
        let i = self
            .mem
            .allocs
            .iter()
            .position(|a| a.base == addr)
            .ok_or_else(|| {
                SimError::InvalidMemory(format!("free of {addr:#x}, which is not an allocation"))
            })?;
        self.mem.allocs.remove(i);
        self.mem.last = 0;
        Ok(())
    }

    /// Number of live allocations.
    pub fn live_allocations(&self) -> usize {
        self.mem.allocs.len()
    }

    /// Parse `ptx`, or return the cached program for the same text.
    pub fn program(&mut self, ptx: &str) -> Result<Arc<Program>, SimError> {
        if let Some(p) = self.cache.get(ptx) {
            return Ok(p.clone());
        }
        let p = Arc::new(Program::parse(ptx)?);
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

    /// Run `entry` of `prog` over the grid. Blocks run one after another in
    /// x-fastest order; the launch stops at the first finding.
    pub fn launch_program(
        &mut self,
        prog: &Program,
        entry: &str,
        cfg: LaunchConfig,
        args: &[ArgValue],
    ) -> Result<LaunchReport, SimError> {
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
        if args.len() != e.params.len() {
            return Err(SimError::InvalidLaunch(format!(
                "`{entry}` takes {} parameters, got {} arguments",
                e.params.len(),
                args.len()
            )));
        }
        let mut params = vec![0u8; e.param_bytes as usize];
        for (p, a) in e.params.iter().zip(args) {
            let mut slot = [0u8; 8];
            a.write_le(&mut slot);
            let len = a.size() as usize;
            if len != p.size as usize {
                return Err(SimError::InvalidLaunch(format!(
                    "parameter `{}` of `{entry}` has {} bytes, argument {a:?} has {len}",
                    p.name, p.size,
                )));
            }
            params[p.offset as usize..p.offset as usize + len].copy_from_slice(&slot[..len]);
        }
        let n = nthreads as usize;
        let nregs = e.nregs as usize;
        let smem_size = if e.dyn_shared_align > 1 || cfg.dynamic_smem_bytes > 0 {
            smem
        } else {
            e.static_shared as u64
        } as usize;
        let checks = self.options.checks;
        let mut cta = Cta {
            n,
            nregs,
            regs: vec![0; n * nregs],
            init: vec![false; n * nregs],
            pc: vec![0; n],
            state: vec![TState::Run; n],
            shared: vec![0; smem_size],
            sh_w: if checks {
                vec![0; smem_size]
            } else {
                Vec::new()
            },
            sh_r: if checks {
                vec![0; smem_size]
            } else {
                Vec::new()
            },
            local: vec![0; n * e.local_bytes as usize],
            epoch: 1,
            wepoch: vec![0; n.div_ceil(32)],
            bu_cnt: vec![0; n * e.n_brauni as usize],
            bu_out: vec![Bits::default(); n.div_ceil(32) * e.n_brauni as usize],
        };
        let mut counts = vec![0u64; e.insts.len()];
        let mut report = LaunchReport {
            kernel: entry.to_string(),
            threads_per_block: n as u32,
            blocks: gx as u64 * gy as u64 * gz as u64,
            ..Default::default()
        };
        let budget = self.options.max_instructions.unwrap_or(u64::MAX);
        let mut ex = Exec {
            e,
            consts: &prog.consts,
            mem: &mut self.mem,
            cta: &mut cta,
            params: &params,
            counts: &mut counts,
            checks,
            ctaid: (0, 0, 0),
            block: cfg.block,
            clock: &mut self.clock,
            budget,
            limit: budget,
            barriers: 0,
        };
        let mut block_lin = 0u32;
        for z in 0..gz {
            for y in 0..gy {
                for x in 0..gx {
                    ex.ctaid = (x, y, z);
                    ex.init_cta(cfg, block_lin);
                    ex.run_cta()?;
                    block_lin = block_lin.wrapping_add(1);
                }
            }
        }
        report.barriers = ex.barriers;
        for (pc, c) in counts.iter().enumerate() {
            if *c == 0 {
                continue;
            }
            let name = &e.opcodes[e.insts[pc].opcode as usize];
            *report.per_opcode.entry(name.clone()).or_default() += c;
            let base = name.split('.').next().unwrap_or(name);
            *report.per_base.entry(base.to_string()).or_default() += c;
            report.instructions += c;
            if matches!(e.insts[pc].op, Op::Approx { .. }) {
                report.approximate += c;
            }
        }
        report.merge_into(&mut self.totals);
        self.total_instructions += report.instructions;
        self.traffic.launches += 1;
        Ok(report)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TState {
    Run,
    Park,
    Exit,
}

struct Cta {
    n: usize,
    nregs: usize,
    regs: Vec<u64>,
    init: Vec<bool>,
    pc: Vec<u32>,
    state: Vec<TState>,
    shared: Vec<u8>,
    /// per-byte last-write tag, 0 = never written in this CTA
    sh_w: Vec<u64>,
    /// per-byte last-read tag
    sh_r: Vec<u64>,
    local: Vec<u8>,
    epoch: u32,
    wepoch: Vec<u32>,
    bu_cnt: Vec<u32>,
    /// Per (warp, `bra.uni`): the outcome of each dynamic occurrence.
    bu_out: Vec<Bits>,
}

/// Reader field of a byte read by several threads of different warps.
const MULTI: u64 = 0x7FF;

/// A growable bit vector.
#[derive(Debug, Clone, Default)]
struct Bits {
    words: Vec<u64>,
    len: usize,
}

impl Bits {
    fn get(&self, i: usize) -> bool {
        self.words[i / 64] >> (i % 64) & 1 != 0
    }
    fn push(&mut self, b: bool) {
        if self.len.is_multiple_of(64) {
            self.words.push(0);
        }
        if b {
            self.words[self.len / 64] |= 1 << (self.len % 64);
        }
        self.len += 1;
    }
    fn clear(&mut self) {
        self.words.clear();
        self.len = 0;
    }
}
/// Reader field `MULTI_WARP + w`: several threads, all of warp `w`.
const MULTI_WARP: u64 = 1024;

/// The warp a tag's thread field belongs to (`None` for [`MULTI`]).
#[inline(always)]
fn tag_warp(ot: u64) -> Option<usize> {
    if ot < MULTI_WARP {
        Some((ot / 32) as usize)
    } else if ot < MULTI_WARP + 32 {
        Some((ot - MULTI_WARP) as usize)
    } else {
        None
    }
}
const ATOMIC_BIT: u64 = 1 << 11;

#[inline]
fn tag(epoch: u32, wep: u32, t: u64, atomic: bool) -> u64 {
    (epoch as u64) << 32 | ((wep as u64) & 0xF_FFFF) << 12 | if atomic { ATOMIC_BIT } else { 0 } | t
}

/// An internal fault, turned into a [`SimError`] with its site.
enum Fault {
    Oob(Space, u64, u32),
    Misaligned(Space, u64, u32),
    Race {
        offset: u64,
        this: &'static str,
        other: &'static str,
        other_tid: u32,
    },
    UninitShared(u64, u32),
    UninitGlobal(u64, u32),
    UninitReg(u32),
    Trap(String),
    Warp(String),
}

enum Flow {
    Next,
    Jump(u32),
    Park,
    Exit,
}

struct Exec<'a> {
    e: &'a Entry,
    consts: &'a [u8],
    mem: &'a mut GlobalMem,
    cta: &'a mut Cta,
    params: &'a [u8],
    counts: &'a mut [u64],
    checks: bool,
    ctaid: (u32, u32, u32),
    block: (u32, u32, u32),
    clock: &'a mut u64,
    budget: u64,
    limit: u64,
    barriers: u64,
}

#[inline(always)]
fn mask(w: u8) -> u64 {
    if w >= 64 { u64::MAX } else { (1u64 << w) - 1 }
}

#[inline(always)]
fn sext(v: u64, w: u8) -> i64 {
    if w >= 64 {
        v as i64
    } else {
        let sh = 64 - w as u32;
        ((v << sh) as i64) >> sh
    }
}

impl<'a> Exec<'a> {
    fn tid_of(&self, t: usize) -> (u32, u32, u32) {
        let (bx, by, _) = self.block;
        let t = t as u32;
        (t % bx, (t / bx) % by, t / (bx * by))
    }

    fn site(&self, t: usize, pc: usize) -> Box<Site> {
        Box::new(Site {
            kernel: self.e.name.clone(),
            ctaid: self.ctaid,
            tid: self.tid_of(t),
            line: self.e.lines.get(pc).copied().unwrap_or(0),
            instr: self.e.texts.get(pc).cloned().unwrap_or_default(),
        })
    }

    fn to_err(&self, f: Fault, t: usize, pc: usize) -> SimError {
        let site = self.site(t, pc);
        match f {
            Fault::Oob(space, addr, size) => SimError::OutOfBounds {
                site,
                space,
                addr,
                size,
            },
            Fault::Misaligned(space, addr, size) => SimError::Misaligned {
                site,
                space,
                addr,
                size,
            },
            Fault::Race {
                offset,
                this,
                other,
                other_tid,
            } => SimError::SharedRace {
                site,
                offset,
                this,
                other,
                other_tid: if other_tid == u32::MAX {
                    (u32::MAX, u32::MAX, u32::MAX)
                } else {
                    self.tid_of(other_tid as usize)
                },
            },
            Fault::UninitGlobal(addr, size) => SimError::UninitializedGlobal { site, addr, size },
            Fault::UninitShared(offset, size) => {
                SimError::UninitializedShared { site, offset, size }
            }
            Fault::UninitReg(r) => SimError::UninitializedRegister {
                site,
                reg: self.e.reg_names[r as usize].clone(),
            },
            Fault::Trap(message) => SimError::Trap { site, message },
            Fault::Warp(message) => SimError::WarpDivergence { site, message },
        }
    }

    /// The finding for a launch that used up its instruction budget, with
    /// thread `t` about to issue the instruction at `pc` (kept out of the
    /// interpreter loop).
    #[cold]
    #[inline(never)]
    fn budget_exhausted(&self, t: usize, pc: usize) -> SimError {
        SimError::InstructionLimit {
            site: self.site(t, pc),
            limit: self.limit,
        }
    }

    fn init_cta(&mut self, cfg: LaunchConfig, block_lin: u32) {
        let c = &mut *self.cta;
        c.regs.fill(0);
        c.init.fill(false);
        c.pc.fill(0);
        c.state.fill(TState::Run);
        c.shared.fill(0);
        c.sh_w.fill(0);
        c.sh_r.fill(0);
        c.local.fill(0);
        c.epoch = 1;
        c.wepoch.fill(0);
        c.bu_cnt.fill(0);
        for v in c.bu_out.iter_mut() {
            v.clear();
        }
        let (bx, by, bz) = cfg.block;
        let (gx, gy, gz) = cfg.grid;
        let nw = c.n.div_ceil(32) as u64;
        for t in 0..c.n {
            let b = t * c.nregs;
            let tu = t as u32;
            let lane = tu % 32;
            let vals: [u64; sreg::COUNT as usize] = [
                (tu % bx) as u64,
                ((tu / bx) % by) as u64,
                (tu / (bx * by)) as u64,
                bx as u64,
                by as u64,
                bz as u64,
                self.ctaid.0 as u64,
                self.ctaid.1 as u64,
                self.ctaid.2 as u64,
                gx as u64,
                gy as u64,
                gz as u64,
                lane as u64,
                (tu / 32) as u64,
                nw,
                (block_lin % SM_COUNT) as u64,
                SM_COUNT as u64,
                1u64 << lane,
                (1u64 << lane) - 1,
                (1u64 << (lane + 1)) - 1,
                !((1u64 << (lane + 1)) - 1) & 0xFFFF_FFFF,
                !((1u64 << lane) - 1) & 0xFFFF_FFFF,
                cfg.dynamic_smem_bytes as u64,
                0,
            ];
            c.regs[b..b + vals.len()].copy_from_slice(&vals);
            c.init[b..b + vals.len()].fill(true);
        }
    }

    /// Run every thread of the CTA to completion.
    fn run_cta(&mut self) -> Result<(), SimError> {
        let n = self.cta.n;
        loop {
            for t in 0..n {
                if self.cta.state[t] == TState::Run {
                    self.run_thread(t)?;
                }
            }
            if self.cta.state.iter().all(|s| *s == TState::Exit) {
                return Ok(());
            }
            if self.resolve_warps()? {
                continue;
            }
            self.resolve_barrier()?;
        }
    }

    #[inline(always)]
    fn rd(&mut self, base: usize, s: Src) -> Result<u64, Fault> {
        match s {
            Src::Reg(r) => {
                let i = base + r as usize;
                if self.checks && !self.cta.init[i] {
                    return Err(Fault::UninitReg(r));
                }
                Ok(self.cta.regs[i])
            }
            Src::Imm(v) => Ok(v),
            Src::Clock32 => {
                *self.clock += 1;
                Ok(*self.clock & 0xFFFF_FFFF)
            }
            Src::Clock64 => {
                *self.clock += 1;
                Ok(*self.clock)
            }
            Src::None => Ok(0),
        }
    }

    #[inline(always)]
    fn wr(&mut self, base: usize, d: u32, v: u64) {
        if d != NO_REG {
            let i = base + d as usize;
            self.cta.regs[i] = v;
            self.cta.init[i] = true;
        }
    }

    fn run_thread(&mut self, t: usize) -> Result<(), SimError> {
        let e: &'a Entry = self.e;
        let insts = &e.insts[..];
        let base = t * self.cta.nregs;
        let mut pc = self.cta.pc[t] as usize;
        loop {
            let Some(inst) = insts.get(pc) else {
                // falling off the end of the entry is an implicit `ret`
                self.cta.state[t] = TState::Exit;
                return Ok(());
            };
            if self.budget == 0 {
                return Err(self.budget_exhausted(t, pc));
            }
            self.budget -= 1;
            self.counts[pc] += 1;
            if inst.guard != NO_REG {
                let g = self.cta.regs[base + inst.guard as usize] != 0;
                if self.checks && !self.cta.init[base + inst.guard as usize] {
                    return Err(self.to_err(Fault::UninitReg(inst.guard), t, pc));
                }
                if g == inst.guard_neg {
                    if let Op::BraUni { idx, .. } = inst.op
                        && self.checks
                    {
                        self.brauni(t, idx, false)
                            .map_err(|f| self.to_err(f, t, pc))?;
                    }
                    pc += 1;
                    continue;
                }
                if let Op::BraUni { idx, .. } = inst.op
                    && self.checks
                {
                    self.brauni(t, idx, true)
                        .map_err(|f| self.to_err(f, t, pc))?;
                }
            }
            match self.step(t, base, inst) {
                Ok(Flow::Next) => pc += 1,
                Ok(Flow::Jump(j)) => pc = j as usize,
                Ok(Flow::Park) => {
                    self.cta.pc[t] = pc as u32;
                    self.cta.state[t] = TState::Park;
                    return Ok(());
                }
                Ok(Flow::Exit) => {
                    self.cta.pc[t] = pc as u32;
                    self.cta.state[t] = TState::Exit;
                    return Ok(());
                }
                Err(f) => return Err(self.to_err(f, t, pc)),
            }
        }
    }

    fn brauni(&mut self, t: usize, idx: u32, taken: bool) -> Result<(), Fault> {
        let nb = self.e.n_brauni as usize;
        let ci = t * nb + idx as usize;
        let c = self.cta.bu_cnt[ci] as usize;
        self.cta.bu_cnt[ci] += 1;
        let out = &mut self.cta.bu_out[(t / 32) * nb + idx as usize];
        if c < out.len {
            let seen = out.get(c);
            if seen != taken {
                return Err(Fault::Warp(format!(
                    "bra.uni is divergent: this lane {} the branch, an earlier lane of the warp did {}",
                    if taken { "takes" } else { "does not take" },
                    if seen { "take it" } else { "not take it" }
                )));
            }
        } else {
            out.push(taken);
        }
        Ok(())
    }

    // ---------- memory ----------

    /// Resolve a generic address to (space, space-relative address).
    #[inline(always)]
    fn resolve(sp: Space, addr: u64) -> (Space, u64) {
        if sp != Space::Generic {
            return (sp, addr);
        }
        if addr.wrapping_sub(SHARED_WINDOW) < WINDOW_SIZE {
            (Space::Shared, addr - SHARED_WINDOW)
        } else if addr.wrapping_sub(LOCAL_WINDOW) < WINDOW_SIZE {
            (Space::Local, addr - LOCAL_WINDOW)
        } else if addr.wrapping_sub(CONST_WINDOW) < WINDOW_SIZE {
            (Space::Const, addr - CONST_WINDOW)
        } else {
            (Space::Global, addr)
        }
    }

    /// Check a shared access and update the race metadata.
    fn shared_check(
        &mut self,
        t: usize,
        off: usize,
        len: usize,
        write: bool,
        atomic: bool,
    ) -> Result<(), Fault> {
        let c = &mut *self.cta;
        let ep = c.epoch;
        let w = t / 32;
        let my = tag(ep, c.wepoch[w], t as u64, atomic);
        for i in off..off + len {
            let wt = c.sh_w[i];
            if (!write || atomic) && wt == 0 {
                return Err(Fault::UninitShared(off as u64, len as u32));
            }
            let conflict = |tg: u64, wepoch: &[u32]| -> bool {
                if (tg >> 32) as u32 != ep {
                    return false;
                }
                let ot = tg & 0x7FF;
                if ot == t as u64 {
                    return false;
                }
                // same warp, separated by a bar.warp.sync since: ordered
                !(tag_warp(ot) == Some(w) && ((tg >> 12) & 0xF_FFFF) as u32 != wepoch[w] & 0xF_FFFF)
            };
            if conflict(wt, &c.wepoch) && !(atomic && wt & ATOMIC_BIT != 0) {
                let other = if wt & ATOMIC_BIT != 0 {
                    "atomic"
                } else {
                    "write"
                };
                return Err(Fault::Race {
                    offset: i as u64,
                    this: if atomic {
                        "atomic"
                    } else if write {
                        "write"
                    } else {
                        "read"
                    },
                    other,
                    other_tid: (wt & 0x7FF) as u32,
                });
            }
            if write {
                let rt = c.sh_r[i];
                if conflict(rt, &c.wepoch) {
                    let ot = (rt & 0x7FF) as u32;
                    return Err(Fault::Race {
                        offset: i as u64,
                        this: if atomic { "atomic" } else { "write" },
                        other: "read",
                        other_tid: if ot as u64 >= MULTI_WARP {
                            u32::MAX
                        } else {
                            ot
                        },
                    });
                }
                c.sh_w[i] = my;
            } else {
                let rt = c.sh_r[i];
                let ot = rt & 0x7FF;
                c.sh_r[i] = if (rt >> 32) as u32 == ep && ot != t as u64 {
                    // a second reader in this barrier interval: keep the warp
                    // (and its latest warp-sync epoch) when all readers share it
                    if tag_warp(ot) == Some(w) {
                        tag(ep, c.wepoch[w], MULTI_WARP + w as u64, false)
                    } else {
                        tag(ep, 0, MULTI, false)
                    }
                } else {
                    my
                };
            }
        }
        Ok(())
    }

    /// The byte slice of an access of `len` bytes (alignment `align`).
    #[inline(always)]
    fn access(
        &mut self,
        t: usize,
        sp: Space,
        addr: u64,
        len: u32,
        write: bool,
        atomic: bool,
    ) -> Result<&mut [u8], Fault> {
        let (sp, a) = Self::resolve(sp, addr);
        if a & (len as u64 - 1) != 0 {
            return Err(Fault::Misaligned(sp, addr, len));
        }
        let l = len as usize;
        match sp {
            Space::Global => match self.mem.find(a, len as u64) {
                Some((i, o)) => {
                    let al = &mut self.mem.allocs[i];
                    if self.checks {
                        let init = &mut al.init[o..o + l];
                        if !write || atomic {
                            if let Some(k) = init.iter().position(|b| !*b) {
                                return Err(Fault::UninitGlobal(addr + k as u64, len));
                            }
                        } else {
                            init.fill(true);
                        }
                    }
                    Ok(&mut al.data[o..o + l])
                }
                None => Err(Fault::Oob(sp, addr, len)),
            },
            Space::Shared => {
                if a.checked_add(len as u64)
                    .is_none_or(|end| end > self.cta.shared.len() as u64)
                {
                    return Err(Fault::Oob(sp, a, len));
                }
                let o = a as usize;
                if self.checks {
                    self.shared_check(t, o, l, write, atomic)?;
                }
                Ok(&mut self.cta.shared[o..o + l])
            }
            Space::Local => {
                let lb = self.e.local_bytes as u64;
                if a.checked_add(len as u64).is_none_or(|end| end > lb) {
                    return Err(Fault::Oob(sp, a, len));
                }
                let o = t * lb as usize + a as usize;
                Ok(&mut self.cta.local[o..o + l])
            }
            Space::Param => {
                if write
                    || a.checked_add(len as u64)
                        .is_none_or(|end| end > self.params.len() as u64)
                {
                    return Err(Fault::Oob(sp, a, len));
                }
                // params are read-only; hand out a copy through the scratch
                Err(Fault::Trap("internal: param access".into()))
            }
            Space::Const | Space::Generic => {
                if write
                    || a.checked_add(len as u64)
                        .is_none_or(|end| end > self.consts.len() as u64)
                {
                    return Err(Fault::Oob(Space::Const, a, len));
                }
                Err(Fault::Trap("internal: const access".into()))
            }
        }
    }

    #[inline(always)]
    fn load(
        &mut self,
        t: usize,
        sp: Space,
        addr: u64,
        size: u8,
        n: u8,
        out: &mut [u64; 4],
    ) -> Result<(), Fault> {
        let total = size as u32 * n as u32;
        let (rs, ra) = Self::resolve(sp, addr);
        let bytes: &[u8] = match rs {
            Space::Param | Space::Const => {
                if ra & (total as u64 - 1) != 0 {
                    return Err(Fault::Misaligned(rs, addr, total));
                }
                let src: &[u8] = if rs == Space::Param {
                    self.params
                } else {
                    self.consts
                };
                if ra
                    .checked_add(total as u64)
                    .is_none_or(|end| end > src.len() as u64)
                {
                    return Err(Fault::Oob(rs, ra, total));
                }
                &src[ra as usize..ra as usize + total as usize]
            }
            _ => self.access(t, sp, addr, total, false, false)?,
        };
        for k in 0..n as usize {
            let mut b = [0u8; 8];
            b[..size as usize].copy_from_slice(&bytes[k * size as usize..(k + 1) * size as usize]);
            out[k] = u64::from_le_bytes(b);
        }
        Ok(())
    }

    // ---------- one instruction ----------

    #[inline(always)]
    fn step(&mut self, t: usize, base: usize, i: &Inst) -> Result<Flow, Fault> {
        macro_rules! a {
            () => {
                self.rd(base, i.s[0])?
            };
        }
        macro_rules! b {
            () => {
                self.rd(base, i.s[1])?
            };
        }
        macro_rules! c {
            () => {
                self.rd(base, i.s[2])?
            };
        }
        macro_rules! out {
            ($v:expr) => {{
                let v = $v;
                self.wr(base, i.d[0], v);
            }};
        }
        match i.op {
            Op::Nop => {}
            Op::Mov { w } => out!(a!() & mask(w)),
            Op::Pack { n, w } => {
                let mut v = 0u64;
                for k in 0..n as usize {
                    v |= (self.rd(base, i.s[k])? & mask(w)) << (k as u32 * w as u32);
                }
                out!(v)
            }
            Op::Unpack { n, w } => {
                let v = a!();
                for k in 0..n as usize {
                    self.wr(base, i.d[k], (v >> (k as u32 * w as u32)) & mask(w));
                }
            }
            Op::Add { w } => out!(a!().wrapping_add(b!()) & mask(w)),
            Op::Sub { w } => out!(a!().wrapping_sub(b!()) & mask(w)),
            Op::MulLo { w } => out!(a!().wrapping_mul(b!()) & mask(w)),
            Op::MulHi { w, s } => {
                let p = wide_mul(a!(), b!(), w, s);
                out!(((p >> w) as u64) & mask(w))
            }
            Op::MulWide { w, s } => out!((wide_mul(a!(), b!(), w, s) as u64) & mask(2 * w)),
            Op::MadLo { w } => out!(a!().wrapping_mul(b!()).wrapping_add(c!()) & mask(w)),
            Op::MadHi { w, s } => {
                let p = wide_mul(a!(), b!(), w, s);
                out!(((p >> w) as u64).wrapping_add(c!()) & mask(w))
            }
            Op::MadWide { w, s } => {
                let p = wide_mul(a!(), b!(), w, s) as u64;
                out!(p.wrapping_add(c!()) & mask(2 * w))
            }
            Op::Div { w, s } | Op::Rem { w, s } => {
                let (x, y) = (a!(), b!());
                if y & mask(w) == 0 {
                    return Err(Fault::Trap("integer division by zero".into()));
                }
                let is_div = matches!(i.op, Op::Div { .. });
                let r = if s {
                    let (x, y) = (sext(x, w), sext(y, w));
                    (if is_div {
                        x.wrapping_div(y)
                    } else {
                        x.wrapping_rem(y)
                    }) as u64
                } else {
                    let (x, y) = (x & mask(w), y & mask(w));
                    if is_div { x / y } else { x % y }
                };
                out!(r & mask(w))
            }
            Op::Min { w, s } | Op::Max { w, s } => {
                let (x, y) = (a!(), b!());
                let lt = if s {
                    sext(x, w) < sext(y, w)
                } else {
                    x & mask(w) < y & mask(w)
                };
                let is_min = matches!(i.op, Op::Min { .. });
                out!(if lt == is_min { x } else { y } & mask(w))
            }
            Op::And { w } => out!(a!() & b!() & mask(w)),
            Op::Or { w } => out!((a!() | b!()) & mask(w)),
            Op::Xor { w } => out!((a!() ^ b!()) & mask(w)),
            Op::Not { w } => out!(!a!() & mask(w)),
            Op::CNot { w } => out!((a!() & mask(w) == 0) as u64),
            Op::Shl { w } => {
                let (x, n) = (a!(), b!() & 0xFFFF_FFFF);
                out!(if n >= w as u64 { 0 } else { (x << n) & mask(w) })
            }
            Op::Shr { w, s } => {
                let (x, n) = (a!(), b!() & 0xFFFF_FFFF);
                let n = n.min(w as u64) as u32;
                let r = if s {
                    (sext(x, w) >> n.min(63)) as u64
                } else if n >= w as u32 {
                    0
                } else {
                    (x & mask(w)) >> n
                };
                out!(r & mask(w))
            }
            Op::Bfe { w, s } => {
                let (x, pos, len) = (a!() & mask(w), b!() & 0xFF, c!() & 0xFF);
                let msb = w as u64 - 1;
                let sbit = if !s || len == 0 {
                    0
                } else {
                    (x >> (pos + len - 1).min(msb)) & 1
                };
                let mut d = 0u64;
                for k in 0..w as u64 {
                    let bit = if k < len && pos + k <= msb {
                        (x >> (pos + k)) & 1
                    } else {
                        sbit
                    };
                    d |= bit << k;
                }
                out!(d)
            }
            Op::Bfi { w } => {
                let (x, y, pos, len) = (a!(), b!(), c!() & 0xFF, self.rd(base, i.s[3])? & 0xFF);
                let msb = w as u64 - 1;
                let mut f = y & mask(w);
                for k in 0..len {
                    if pos + k > msb {
                        break;
                    }
                    f = (f & !(1 << (pos + k))) | (((x >> k) & 1) << (pos + k));
                }
                out!(f)
            }
            Op::Prmt { mode } => out!(prmt(a!() as u32, b!() as u32, c!() as u32, mode) as u64),
            Op::Clz { w } => {
                let x = a!() & mask(w);
                out!(if w == 64 {
                    x.leading_zeros() as u64
                } else {
                    (x as u32).leading_zeros() as u64 - (32 - w.min(32) as u64)
                })
            }
            Op::Popc { w } => out!((a!() & mask(w)).count_ones() as u64),
            Op::Brev { w } => out!((a!() & mask(w)).reverse_bits() >> (64 - w as u32)),
            Op::Neg { w } => out!(a!().wrapping_neg() & mask(w)),
            Op::Abs { w } => out!((sext(a!(), w).wrapping_abs() as u64) & mask(w)),
            Op::F32 { op, rnd, ftz, sat } => {
                let x = a!() as u32;
                let y = if matches!(op, FOp::Sqrt | FOp::Rcp) {
                    0
                } else {
                    b!() as u32
                };
                let z = if op == FOp::Fma { c!() as u32 } else { 0 };
                out!(fp::f32_op(op, rnd, ftz, sat, x, y, z) as u64)
            }
            Op::F32MinMax { max, nan, ftz } => {
                out!(fp::f32_minmax(max, nan, ftz, a!() as u32, b!() as u32) as u64)
            }
            Op::F32Abs { ftz } => {
                let x = f32::from_bits(a!() as u32);
                let x = if ftz && x.is_subnormal() {
                    0.0
                } else {
                    x.abs()
                };
                out!(if x.is_nan() { F32_NAN } else { x.to_bits() } as u64)
            }
            Op::F32Neg { ftz } => {
                let x = f32::from_bits(a!() as u32);
                let x = if ftz && x.is_subnormal() {
                    if x.is_sign_negative() { 0.0 } else { -0.0 }
                } else {
                    -x
                };
                out!(if x.is_nan() { F32_NAN } else { x.to_bits() } as u64)
            }
            Op::F64 { op } => {
                let x = f64::from_bits(a!());
                let r = match op {
                    FOp::Add => x + f64::from_bits(b!()),
                    FOp::Sub => x - f64::from_bits(b!()),
                    FOp::Mul => x * f64::from_bits(b!()),
                    FOp::Fma => x.mul_add(f64::from_bits(b!()), f64::from_bits(c!())),
                    FOp::Div => x / f64::from_bits(b!()),
                    FOp::Sqrt => x.sqrt(),
                    FOp::Rcp => 1.0 / x,
                };
                out!(r.to_bits())
            }
            Op::F64MinMax { max } => out!(fp::f64_minmax(max, a!(), b!())),
            Op::F64Abs => out!(a!() & !(1u64 << 63)),
            Op::F64Neg => out!(a!() ^ (1u64 << 63)),
            Op::SetpI { cmp, w, s, comb } => {
                let (x, y) = (a!(), b!());
                let r = if s {
                    let (x, y) = (sext(x, w), sext(y, w));
                    icmp(cmp, x.cmp(&y))
                } else {
                    let (x, y) = (x & mask(w), y & mask(w));
                    icmp(cmp, x.cmp(&y))
                };
                self.setp_out(base, i, r, comb)?;
            }
            Op::SetpF {
                cmp,
                f64: is64,
                ftz,
                comb,
            } => {
                let (x, y) = if is64 {
                    (f64::from_bits(a!()), f64::from_bits(b!()))
                } else {
                    let (mut x, mut y) = (f32::from_bits(a!() as u32), f32::from_bits(b!() as u32));
                    if ftz {
                        if x.is_subnormal() {
                            x = 0.0;
                        }
                        if y.is_subnormal() {
                            y = 0.0;
                        }
                    }
                    (x as f64, y as f64)
                };
                self.setp_out(base, i, fcmp(cmp, x, y), comb)?;
            }
            Op::Selp { w } => {
                let c = (c!() != 0) != i.neg;
                let v = if c { a!() } else { b!() };
                out!(v & mask(w))
            }
            Op::Cvt {
                d,
                s,
                rnd,
                irnd,
                sat,
                ftz,
            } => out!(cvt(d, s, rnd, irnd, sat, ftz, a!())),
            Op::CvtMiniEnc { fmt, relu } => {
                let enc = |v: u64| {
                    let mut x = f32::from_bits(v as u32);
                    if relu && (x < 0.0 || (x == 0.0 && x.is_sign_negative())) {
                        x = 0.0;
                    }
                    fmt.encode_satfinite(x) as u64
                };
                let (hi, lo) = (enc(a!()), enc(b!()));
                let sh = if fmt == MiniFmt::E2M1 { 4 } else { 8 };
                out!(hi << sh | lo)
            }
            Op::CvtUe8m0Enc { rnd } => {
                let enc = |v: u64| fp::ue8m0_satfinite(f32::from_bits(v as u32), rnd) as u64;
                out!(enc(a!()) << 8 | enc(b!()))
            }
            Op::CvtUe8m0Dec => {
                let v = a!();
                let dec = |c: u64| fp::ue8m0_to_bf16(c as u8) as u64;
                out!(dec(v >> 8 & 0xFF) << 16 | dec(v & 0xFF))
            }
            Op::CvtMiniDec { fmt, relu } => {
                let v = a!();
                let (hi, lo) = if fmt == MiniFmt::E2M1 {
                    ((v >> 4) & 0xF, v & 0xF)
                } else {
                    ((v >> 8) & 0xFF, v & 0xFF)
                };
                let dec = |c: u64| {
                    let h = fmt.to_f16(c as u8);
                    if relu && h & 0x8000 != 0 && h != fp::F16_NAN {
                        0
                    } else {
                        h as u64
                    }
                };
                out!(dec(hi) << 16 | dec(lo))
            }
            Op::CvtF16x2 {
                rnd,
                relu,
                satfinite,
            } => {
                let cv = |v: u64| {
                    let mut x = f32::from_bits(v as u32);
                    if relu && x < 0.0 {
                        x = 0.0;
                    }
                    fp::f32_to_f16(x, rnd, satfinite) as u64
                };
                out!(cv(a!()) << 16 | cv(b!()))
            }
            Op::Ld {
                sp,
                size,
                signed,
                n,
            } => {
                let addr = a!().wrapping_add(i.off as u64);
                let mut vals = [0u64; 4];
                self.load(t, sp, addr, size, n, &mut vals)?;
                for (k, &raw) in vals.iter().enumerate().take(n as usize) {
                    let v = if signed {
                        sext(raw, size * 8) as u64
                    } else {
                        raw
                    };
                    self.wr(base, i.d[k], v);
                }
            }
            Op::St { sp, size, n } => {
                let addr = a!().wrapping_add(i.off as u64);
                let mut vals = [0u64; 4];
                for (k, v) in vals.iter_mut().enumerate().take(n as usize) {
                    *v = self.rd(base, i.s[k + 1])?;
                }
                let sz = size as usize;
                let (rs, _) = Self::resolve(sp, addr);
                if matches!(rs, Space::Param | Space::Const) {
                    return Err(Fault::Oob(rs, addr, size as u32 * n as u32));
                }
                let bytes = self.access(t, sp, addr, size as u32 * n as u32, true, false)?;
                for k in 0..n as usize {
                    bytes[k * sz..(k + 1) * sz].copy_from_slice(&vals[k].to_le_bytes()[..sz]);
                }
            }
            Op::Atom { sp, op, w, s, ret } => {
                let addr = a!().wrapping_add(i.off as u64);
                let x = b!();
                let y = if op == AtomOp::Cas { c!() } else { 0 };
                let (rs, _) = Self::resolve(sp, addr);
                if !matches!(rs, Space::Global | Space::Shared) {
                    return Err(Fault::Oob(rs, addr, w as u32 / 8));
                }
                let sz = w as usize / 8;
                let bytes = self.access(t, sp, addr, sz as u32, true, true)?;
                let mut b8 = [0u8; 8];
                b8[..sz].copy_from_slice(bytes);
                let old = u64::from_le_bytes(b8);
                let m = mask(w);
                let new = match op {
                    AtomOp::Add => old.wrapping_add(x),
                    AtomOp::Min | AtomOp::Max => {
                        let lt = if s {
                            sext(x, w) < sext(old, w)
                        } else {
                            x & m < old & m
                        };
                        if lt == (op == AtomOp::Min) { x } else { old }
                    }
                    AtomOp::Inc => {
                        if old & m >= x & m {
                            0
                        } else {
                            old + 1
                        }
                    }
                    AtomOp::Dec => {
                        if old & m == 0 || old & m > x & m {
                            x
                        } else {
                            old - 1
                        }
                    }
                    AtomOp::And => old & x,
                    AtomOp::Or => old | x,
                    AtomOp::Xor => old ^ x,
                    AtomOp::Exch => x,
                    AtomOp::Cas => {
                        if old & m == x & m {
                            y
                        } else {
                            old
                        }
                    }
                    AtomOp::AddF32 => {
                        let ftz = rs == Space::Global;
                        fp::f32_op(FOp::Add, Rnd::Rn, ftz, false, old as u32, x as u32, 0) as u64
                    }
                    AtomOp::AddF64 => (f64::from_bits(old) + f64::from_bits(x)).to_bits(),
                } & m;
                bytes.copy_from_slice(&new.to_le_bytes()[..sz]);
                if ret {
                    let v = if s { sext(old, w) as u64 & m } else { old };
                    out!(v)
                }
            }
            Op::Cvta { to, sp, w } => {
                let x = a!() & mask(w.max(if to { 64 } else { w }));
                let win = match sp {
                    Space::Shared => SHARED_WINDOW,
                    Space::Local => LOCAL_WINDOW,
                    Space::Const => CONST_WINDOW,
                    _ => 0,
                };
                out!(if to {
                    x.wrapping_sub(win) & mask(w)
                } else {
                    x.wrapping_add(win)
                })
            }
            Op::Approx { f, ftz } => {
                let x = a!() as u32;
                let y = if f == ApproxFn::Div { b!() as u32 } else { 0 };
                out!(approx(f, ftz, x, y) as u64)
            }
            Op::Bra { target } | Op::BraUni { target, .. } => return Ok(Flow::Jump(target)),
            Op::Exit => return Ok(Flow::Exit),
            Op::Trap => return Err(Fault::Trap("trap instruction".into())),
            Op::Bar | Op::BarWarp | Op::Shfl { .. } | Op::Vote { .. } | Op::Redux { .. } => {
                return Ok(Flow::Park);
            }
        }
        Ok(Flow::Next)
    }

    #[inline(always)]
    fn setp_out(&mut self, base: usize, i: &Inst, r: bool, comb: Comb) -> Result<(), Fault> {
        let (p, q) = if comb == Comb::None {
            (r, !r)
        } else {
            let c = (self.rd(base, i.s[2])? != 0) != i.neg;
            let f = |x: bool| match comb {
                Comb::And => x && c,
                Comb::Or => x || c,
                Comb::Xor => x != c,
                Comb::None => x,
            };
            (f(r), f(!r))
        };
        self.wr(base, i.d[0], p as u64);
        self.wr(base, i.d[1], q as u64);
        Ok(())
    }

    // ---------- warp collectives and barriers ----------

    fn mask_src(op: &Op) -> usize {
        match op {
            Op::Shfl { .. } => 3,
            Op::BarWarp => 0,
            _ => 1,
        }
    }

    /// Execute every warp collective whose members are all parked at it.
    /// Returns whether anything was executed.
    fn resolve_warps(&mut self) -> Result<bool, SimError> {
        let e: &'a Entry = self.e;
        let n = self.cta.n;
        let mut progress = false;
        for w in 0..n.div_ceil(32) {
            let lanes = (n - w * 32).min(32);
            for l in 0..lanes {
                let t = w * 32 + l;
                if self.cta.state[t] != TState::Park {
                    continue;
                }
                let pc = self.cta.pc[t] as usize;
                let inst = &e.insts[pc];
                if !inst.op.is_sync() || inst.op == Op::Bar {
                    continue;
                }
                let base = t * self.cta.nregs;
                let m = self
                    .rd(base, inst.s[Self::mask_src(&inst.op)])
                    .map_err(|f| self.to_err(f, t, pc))? as u32;
                let exist = if lanes == 32 {
                    u32::MAX
                } else {
                    (1u32 << lanes) - 1
                };
                let members = m & exist;
                if m & (1 << l) == 0 {
                    return Err(self.to_err(
                        Fault::Warp(format!(
                            "lane {l} executes with membermask {m:#x} that excludes it"
                        )),
                        t,
                        pc,
                    ));
                }
                for ml in 0..lanes {
                    if members & (1 << ml) == 0 {
                        continue;
                    }
                    let mt = w * 32 + ml;
                    match self.cta.state[mt] {
                        TState::Exit => {
                            return Err(self.to_err(
                                Fault::Warp(format!("lane {ml} of membermask {m:#x} has exited")),
                                t,
                                pc,
                            ));
                        }
                        _ if self.cta.pc[mt] as usize != pc => {
                            let other = self.cta.pc[mt] as usize;
                            return Err(self.to_err(
                                Fault::Warp(format!(
                                    "lane {ml} of membermask {m:#x} waits at line {} `{}` instead",
                                    e.lines[other], e.texts[other]
                                )),
                                t,
                                pc,
                            ));
                        }
                        _ => {
                            let mm = self
                                .rd(
                                    ml_base(mt, self.cta.nregs),
                                    inst.s[Self::mask_src(&inst.op)],
                                )
                                .map_err(|f| self.to_err(f, mt, pc))?
                                as u32;
                            if mm != m {
                                return Err(self.to_err(
                                    Fault::Warp(format!(
                                        "lane {ml} uses membermask {mm:#x}, lane {l} uses {m:#x}"
                                    )),
                                    t,
                                    pc,
                                ));
                            }
                        }
                    }
                }
                self.exec_collective(w, members, inst, pc)?;
                for ml in 0..lanes {
                    if members & (1 << ml) != 0 {
                        let mt = w * 32 + ml;
                        self.cta.state[mt] = TState::Run;
                        self.cta.pc[mt] = pc as u32 + 1;
                    }
                }
                if inst.op == Op::BarWarp {
                    self.cta.wepoch[w] = self.cta.wepoch[w].wrapping_add(1);
                }
                progress = true;
            }
        }
        Ok(progress)
    }

    fn exec_collective(
        &mut self,
        w: usize,
        members: u32,
        inst: &Inst,
        pc: usize,
    ) -> Result<(), SimError> {
        let nregs = self.cta.nregs;
        let lanes: Vec<usize> = (0..32).filter(|l| members & (1 << l) != 0).collect();
        match inst.op {
            Op::BarWarp => {}
            Op::Shfl { mode } => {
                let mut res = Vec::with_capacity(lanes.len());
                for &l in &lanes {
                    let t = w * 32 + l;
                    let b = t * nregs;
                    let f = |s: &mut Self| -> Result<(u64, bool), Fault> {
                        let bval = (s.rd(b, inst.s[1])? & 0x1F) as i64;
                        let c = s.rd(b, inst.s[2])?;
                        let cval = (c & 0x1F) as i64;
                        let seg = ((c >> 8) & 0x1F) as i64;
                        let lane = l as i64;
                        let max_lane = (lane & seg) | (cval & !seg);
                        let min_lane = lane & seg;
                        let (j, valid) = match mode {
                            ShflMode::Up => {
                                let j = lane - bval;
                                (j, j >= max_lane)
                            }
                            ShflMode::Down => {
                                let j = lane + bval;
                                (j, j <= max_lane)
                            }
                            ShflMode::Bfly => {
                                let j = lane ^ bval;
                                (j, j <= max_lane)
                            }
                            ShflMode::Idx => {
                                let j = min_lane | (bval & !seg);
                                (j, j <= max_lane)
                            }
                        };
                        let j = if valid { j as usize } else { l };
                        if members & (1u32 << j) == 0 {
                            return Err(Fault::Warp(format!(
                                "shfl reads lane {j}, which is outside the membermask or inactive"
                            )));
                        }
                        let v = s.rd((w * 32 + j) * nregs, inst.s[0])?;
                        Ok((v & 0xFFFF_FFFF, valid))
                    };
                    res.push(f(self).map_err(|f| self.to_err(f, t, pc))?);
                }
                for (k, &l) in lanes.iter().enumerate() {
                    let b = (w * 32 + l) * nregs;
                    self.wr(b, inst.d[0], res[k].0);
                    self.wr(b, inst.d[1], res[k].1 as u64);
                }
            }
            Op::Vote { mode } => {
                let mut preds = Vec::with_capacity(lanes.len());
                for &l in &lanes {
                    let t = w * 32 + l;
                    let v = self
                        .rd(t * nregs, inst.s[0])
                        .map_err(|f| self.to_err(f, t, pc))?;
                    preds.push((v != 0) != inst.neg);
                }
                let r: u64 = match mode {
                    VoteMode::All => preds.iter().all(|p| *p) as u64,
                    VoteMode::Any => preds.iter().any(|p| *p) as u64,
                    VoteMode::Uni => (preds.iter().all(|p| *p) || preds.iter().all(|p| !*p)) as u64,
                    VoteMode::Ballot => lanes
                        .iter()
                        .zip(&preds)
                        .filter(|(_, p)| **p)
                        .map(|(l, _)| 1u64 << l)
                        .sum(),
                };
                for &l in &lanes {
                    self.wr((w * 32 + l) * nregs, inst.d[0], r);
                }
            }
            Op::Redux { op, s } => {
                let mut acc: Option<u64> = None;
                for &l in &lanes {
                    let t = w * 32 + l;
                    let v = self
                        .rd(t * nregs, inst.s[0])
                        .map_err(|f| self.to_err(f, t, pc))?
                        & 0xFFFF_FFFF;
                    acc = Some(match acc {
                        None => v,
                        Some(a) => match op {
                            ReduxOp::Add => a.wrapping_add(v) & 0xFFFF_FFFF,
                            ReduxOp::And => a & v,
                            ReduxOp::Or => a | v,
                            ReduxOp::Xor => a ^ v,
                            ReduxOp::Min | ReduxOp::Max => {
                                let lt = if s {
                                    (v as u32 as i32) < (a as u32 as i32)
                                } else {
                                    v < a
                                };
                                if lt == (op == ReduxOp::Min) { v } else { a }
                            }
                        },
                    });
                }
                for &l in &lanes {
                    self.wr((w * 32 + l) * nregs, inst.d[0], acc.unwrap_or(0));
                }
            }
            _ => unreachable!(),
        }
        Ok(())
    }

    /// All threads are parked or exited and no warp collective can run:
    /// complete a barrier or report divergence / deadlock.
    fn resolve_barrier(&mut self) -> Result<(), SimError> {
        let e: &'a Entry = self.e;
        let n = self.cta.n;
        let at_bar: Vec<usize> = (0..n)
            .filter(|&t| {
                self.cta.state[t] == TState::Park && e.insts[self.cta.pc[t] as usize].op == Op::Bar
            })
            .collect();
        let kernel = e.name.clone();
        let ctaid = self.ctaid;
        let describe = |s: &Self, t: usize| {
            let (x, y, z) = s.tid_of(t);
            let pc = s.cta.pc[t] as usize;
            format!(
                "thread ({x},{y},{z}) at line {} `{}`",
                e.lines[pc], e.texts[pc]
            )
        };
        if at_bar.is_empty() {
            let parked: Vec<String> = (0..n)
                .filter(|&t| self.cta.state[t] == TState::Park)
                .take(8)
                .map(|t| describe(self, t))
                .collect();
            return Err(SimError::Deadlock {
                kernel,
                ctaid,
                parked: parked.join("; "),
            });
        }
        let t0 = at_bar[0];
        let pc0 = self.cta.pc[t0] as usize;
        let inst = &e.insts[pc0];
        let count = match inst.s[1] {
            Src::None => None,
            s => Some(
                self.rd(t0 * self.cta.nregs, s)
                    .map_err(|f| self.to_err(f, t0, pc0))?,
            ),
        };
        let same: Vec<usize> = at_bar
            .iter()
            .copied()
            .filter(|&t| self.cta.pc[t] as usize == pc0)
            .collect();
        let full = count.is_none_or(|c| c as usize >= n);
        if full {
            if let Some(t) = (0..n).find(|&t| self.cta.state[t] == TState::Exit) {
                let (x, y, z) = self.tid_of(t);
                return Err(SimError::BarrierDivergence {
                    kernel,
                    ctaid,
                    message: format!(
                        "thread ({x},{y},{z}) exited while {} thread(s) wait at line {} `{}` (bar.sync is .aligned: every thread must reach it)",
                        at_bar.len(),
                        e.lines[pc0],
                        e.texts[pc0]
                    ),
                });
            }
            if let Some(&t) = at_bar.iter().find(|&&t| self.cta.pc[t] as usize != pc0) {
                return Err(SimError::BarrierDivergence {
                    kernel,
                    ctaid,
                    message: format!(
                        "{} and {} wait at different barriers",
                        describe(self, t0),
                        describe(self, t)
                    ),
                });
            }
            if same.len() != n {
                let t = (0..n).find(|&t| !same.contains(&t)).unwrap();
                return Err(SimError::Deadlock {
                    kernel,
                    ctaid,
                    parked: format!("{} vs {}", describe(self, t0), describe(self, t)),
                });
            }
        } else {
            let c = count.unwrap() as usize;
            if same.len() < c {
                let parked: Vec<String> = (0..n)
                    .filter(|&t| self.cta.state[t] == TState::Park)
                    .take(8)
                    .map(|t| describe(self, t))
                    .collect();
                return Err(SimError::Deadlock {
                    kernel,
                    ctaid,
                    parked: format!(
                        "bar.sync with count {c} has {} arrivals: {}",
                        same.len(),
                        parked.join("; ")
                    ),
                });
            }
        }
        for &t in &same {
            self.cta.state[t] = TState::Run;
            self.cta.pc[t] = pc0 as u32 + 1;
        }
        self.cta.epoch += 1;
        self.barriers += 1;
        Ok(())
    }
}

#[inline(always)]
fn ml_base(t: usize, nregs: usize) -> usize {
    t * nregs
}

#[inline(always)]
fn wide_mul(a: u64, b: u64, w: u8, s: bool) -> u128 {
    if s {
        (sext(a, w) as i128).wrapping_mul(sext(b, w) as i128) as u128
    } else {
        ((a & mask(w)) as u128) * ((b & mask(w)) as u128)
    }
}

fn icmp(c: Cmp, o: std::cmp::Ordering) -> bool {
    use std::cmp::Ordering::*;
    match c {
        Cmp::Eq => o == Equal,
        Cmp::Ne => o != Equal,
        Cmp::Lt => o == Less,
        Cmp::Le => o != Greater,
        Cmp::Gt => o == Greater,
        Cmp::Ge => o != Less,
        _ => false,
    }
}

fn fcmp(c: Cmp, x: f64, y: f64) -> bool {
    let nan = x.is_nan() || y.is_nan();
    match c {
        Cmp::Eq => !nan && x == y,
        Cmp::Ne => !nan && x != y,
        Cmp::Lt => !nan && x < y,
        Cmp::Le => !nan && x <= y,
        Cmp::Gt => !nan && x > y,
        Cmp::Ge => !nan && x >= y,
        Cmp::Equ => nan || x == y,
        Cmp::Neu => nan || x != y,
        Cmp::Ltu => nan || x < y,
        Cmp::Leu => nan || x <= y,
        Cmp::Gtu => nan || x > y,
        Cmp::Geu => nan || x >= y,
        Cmp::Num => !nan,
        Cmp::Nan => nan,
    }
}

/// `prmt.b32{.mode}`.
pub fn prmt(a: u32, b: u32, c: u32, mode: u8) -> u32 {
    let bytes = (b as u64) << 32 | a as u64;
    let byte = |k: u32| ((bytes >> (8 * k)) & 0xFF) as u32;
    let sel: [u32; 4] = match mode {
        0 => {
            let mut d = 0u32;
            for k in 0..4 {
                let ctl = (c >> (4 * k)) & 0xF;
                let mut v = byte(ctl & 7);
                if ctl & 8 != 0 {
                    v = if v & 0x80 != 0 { 0xFF } else { 0 };
                }
                d |= v << (8 * k);
            }
            return d;
        }
        _ => {
            let s = c & 3;
            match mode {
                1 => [s, (s + 1) % 8, (s + 2) % 8, (s + 3) % 8], // f4e
                2 => [s, (s + 7) % 8, (s + 6) % 8, (s + 5) % 8], // b4e
                3 => [s, s, s, s],                               // rc8
                4 => [[0, 1, 2, 3], [1, 1, 2, 3], [2, 2, 2, 3], [3, 3, 3, 3]][s as usize], // ecl
                5 => [[0, 0, 0, 0], [0, 1, 1, 1], [0, 1, 2, 2], [0, 1, 2, 3]][s as usize], // ecr
                _ => {
                    let p = [[0, 1, 0, 1], [2, 3, 2, 3], [0, 1, 0, 1], [2, 3, 2, 3]][s as usize]; // rc16
                    p
                }
            }
        }
    };
    let mut d = 0u32;
    for (k, s) in sel.iter().enumerate() {
        d |= byte(*s) << (8 * k);
    }
    d
}

fn f64_next_up(x: f64) -> f64 {
    if x.is_nan() || x == f64::INFINITY {
        return x;
    }
    if x == 0.0 {
        return f64::from_bits(1);
    }
    let b = x.to_bits();
    if x > 0.0 {
        f64::from_bits(b + 1)
    } else {
        f64::from_bits(b - 1)
    }
}

fn round_int_f64(x: f64, r: Rnd) -> f64 {
    match r {
        Rnd::Rn => x.round_ties_even(),
        Rnd::Rz => x.trunc(),
        Rnd::Rm => x.floor(),
        Rnd::Rp => x.ceil(),
    }
}

/// Scalar `cvt` (see the module docs for the rules).
pub fn cvt(
    d: CvtTy,
    s: CvtTy,
    rnd: Option<Rnd>,
    irnd: Option<Rnd>,
    sat: bool,
    ftz: bool,
    v: u64,
) -> u64 {
    let db = d.bits() as u8;
    let fin = |x: u64| {
        if d.signed() {
            sext(x, db) as u64
        } else {
            x & mask(db)
        }
    };
    // source value
    if s.is_int() && d.is_int() {
        let x: i128 = if s.signed() {
            sext(v, s.bits() as u8) as i128
        } else {
            (v & mask(s.bits() as u8)) as i128
        };
        let x = if sat {
            let (lo, hi) = int_range(d);
            x.clamp(lo, hi)
        } else {
            x
        };
        return fin(x as u64);
    }
    let srcf = |v: u64| -> f64 {
        match s {
            CvtTy::F32 => {
                let f = f32::from_bits(v as u32);
                (if ftz && f.is_subnormal() {
                    0.0f32.copysign(f)
                } else {
                    f
                }) as f64
            }
            CvtTy::F64 => f64::from_bits(v),
            CvtTy::F16 => fp::f16_to_f64(v as u16),
            CvtTy::Bf16 => f32::from_bits((v as u32 & 0xFFFF) << 16) as f64,
            _ => unreachable!(),
        }
    };
    if d.is_int() {
        let x = srcf(v);
        if x.is_nan() {
            return if s == CvtTy::F64 || db == 64 {
                fin(1u64 << (db - 1))
            } else {
                0
            };
        }
        let r = round_int_f64(x, irnd.unwrap_or(Rnd::Rz));
        let (lo, hi) = int_range(d);
        let val: i128 = if r <= lo as f64 {
            lo
        } else if r >= hi as f64 {
            hi
        } else {
            r as i128
        };
        return fin(val as u64);
    }
    // float destination
    let out_f32 = |f: f32| -> u64 {
        let f = if ftz && f.is_subnormal() {
            0.0f32.copysign(f)
        } else {
            f
        };
        let f = if sat {
            if f.is_nan() { 0.0 } else { f.clamp(0.0, 1.0) }
        } else {
            f
        };
        if f.is_nan() {
            F32_NAN as u64
        } else {
            f.to_bits() as u64
        }
    };
    if s.is_int() {
        let x: i128 = if s.signed() {
            sext(v, s.bits() as u8) as i128
        } else {
            (v & mask(s.bits() as u8)) as i128
        };
        let hi = x as f64;
        let lo = (x - hi as i128) as f64;
        let r = rnd.unwrap_or(Rnd::Rn);
        return match d {
            CvtTy::F32 => out_f32(fp::round_f32(hi, lo, r)),
            CvtTy::F64 => {
                let mut h = hi;
                let err = x - hi as i128;
                match r {
                    Rnd::Rn => {}
                    Rnd::Rz => {
                        if (err < 0 && h > 0.0) || (err > 0 && h < 0.0) {
                            h = if h > 0.0 {
                                -f64_next_up(-h)
                            } else {
                                f64_next_up(h)
                            };
                        }
                    }
                    Rnd::Rm => {
                        if err < 0 {
                            h = -f64_next_up(-h);
                        }
                    }
                    Rnd::Rp => {
                        if err > 0 {
                            h = f64_next_up(h);
                        }
                    }
                }
                let h = if sat { h.clamp(0.0, 1.0) } else { h };
                h.to_bits()
            }
            _ => unreachable!(),
        };
    }
    let x = srcf(v);
    match (d, s) {
        (CvtTy::F32, CvtTy::F32) | (CvtTy::F64, CvtTy::F64) => {
            let r = match irnd {
                Some(r) => round_int_f64(x, r),
                None => x,
            };
            if d == CvtTy::F32 {
                out_f32(r as f32)
            } else {
                let r = if sat {
                    if r.is_nan() { 0.0 } else { r.clamp(0.0, 1.0) }
                } else {
                    r
                };
                r.to_bits()
            }
        }
        (CvtTy::F32, CvtTy::F64) => {
            if x.is_nan() {
                return F32_NAN as u64;
            }
            let r = match (irnd, rnd.unwrap_or(Rnd::Rn)) {
                (Some(ir), _) => round_int_f64(x, ir) as f32,
                (None, Rnd::Rn) => x as f32,
                (None, r) => {
                    if x.is_infinite() || x == 0.0 {
                        x as f32
                    } else {
                        fp::round_f32(x, 0.0, r)
                    }
                }
            };
            out_f32(r)
        }
        (CvtTy::F32, CvtTy::F16) | (CvtTy::F32, CvtTy::Bf16) => out_f32(x as f32),
        (CvtTy::F64, _) => {
            if x.is_nan() {
                0x7FF8_0000_0000_0000 // canonical quiet NaN from a narrower NaN
            } else {
                x.to_bits()
            }
        }
        (CvtTy::F16, CvtTy::F32) => fp::f32_to_f16(x as f32, rnd.unwrap_or(Rnd::Rn), sat) as u64,
        (CvtTy::Bf16, CvtTy::F32) => fp::f32_to_bf16(x as f32, rnd.unwrap_or(Rnd::Rn)) as u64,
        _ => unreachable!("cvt {d:?} <- {s:?} is refused by the parser"),
    }
}

fn int_range(d: CvtTy) -> (i128, i128) {
    let b = d.bits();
    if d.signed() {
        (-(1i128 << (b - 1)), (1i128 << (b - 1)) - 1)
    } else {
        (0, (1i128 << b) - 1)
    }
}

/// Correctly rounded value of an approximate f32 function (specials per
/// PTX ISA §9.7.3: `ex2(−∞) = +0`, `lg2(±0) = −∞`, `lg2(x<0) = NaN`,
/// `rsqrt(±0) = ±∞`, `rcp(±0) = ±∞`, …; NaN results canonical).
pub fn approx(f: ApproxFn, ftz: bool, a: u32, b: u32) -> u32 {
    let flush = |x: f32| {
        if ftz && x.is_subnormal() {
            0.0f32.copysign(x)
        } else {
            x
        }
    };
    let (x, y) = (
        flush(f32::from_bits(a)) as f64,
        flush(f32::from_bits(b)) as f64,
    );
    let r: f64 = match f {
        ApproxFn::Ex2 => x.exp2(),
        ApproxFn::Lg2 => {
            if x == 0.0 {
                f64::NEG_INFINITY
            } else {
                x.log2()
            }
        }
        ApproxFn::Rsqrt => {
            if x == 0.0 {
                f64::INFINITY.copysign(x)
            } else {
                1.0 / x.sqrt()
            }
        }
        ApproxFn::Sqrt => x.sqrt(),
        ApproxFn::Rcp => 1.0 / x,
        ApproxFn::Div => x / y,
        ApproxFn::Sin => x.sin(),
        ApproxFn::Cos => x.cos(),
        ApproxFn::Tanh => x.tanh(),
    };
    let r = flush(r as f32);
    if r.is_nan() { F32_NAN } else { r.to_bits() }
}
