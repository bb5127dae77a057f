//! The simulator's error type.

use std::fmt;

use super::ir::Space;

/// Where a runtime finding happened: kernel, block, thread, PTX line and
/// instruction text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    /// Name of the entry that was running.
    pub kernel: String,
    /// The block (`%ctaid`: x, y, z).
    pub ctaid: (u32, u32, u32),
    /// The thread within the block (`%tid`: x, y, z).
    pub tid: (u32, u32, u32),
    /// 1-based line of the instruction in the PTX text.
    pub line: u32,
    /// The instruction's source text.
    pub instr: String,
}

impl fmt::Display for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (c, t) = (self.ctaid, self.tid);
        write!(
            f,
            "kernel `{}` block ({},{},{}) thread ({},{},{}) line {} `{}`",
            self.kernel, c.0, c.1, c.2, t.0, t.1, t.2, self.line, self.instr
        )
    }
}

/// The kind of a memory access in a race finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AccessKind {
    /// A load (`ld`, and the reads of `cp.async` and friends).
    Read,
    /// A plain store (`st`).
    Write,
    /// An atomic read-modify-write (`atom`, `red`).
    Atomic,
}

impl AccessKind {
    /// The kind of an access that writes (`write`) or not, atomically
    /// (`atomic`, a read-modify-write whichever `write` says) or not.
    pub(crate) fn of(write: bool, atomic: bool) -> AccessKind {
        match (write, atomic) {
            (_, true) => AccessKind::Atomic,
            (true, _) => AccessKind::Write,
            _ => AccessKind::Read,
        }
    }

    /// `"read"`, `"write"` or `"atomic"`.
    pub fn name(self) -> &'static str {
        match self {
            AccessKind::Read => "read",
            AccessKind::Write => "write",
            AccessKind::Atomic => "atomic",
        }
    }
}

impl fmt::Display for AccessKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// "kernel `k` block (x,y,z)".
fn block_of(s: &Site) -> String {
    let c = s.ctaid;
    format!("kernel `{}` block ({},{},{})", s.kernel, c.0, c.1, c.2)
}

/// "write by thread (x,y,z) at line N `instr`" (with the block if
/// `block`).
fn access(kind: AccessKind, s: &Site, block: bool) -> String {
    let (c, t) = (s.ctaid, s.tid);
    let of = if block {
        format!(" of block ({},{},{})", c.0, c.1, c.2)
    } else {
        String::new()
    };
    format!(
        "{kind} by thread ({},{},{}){of} at line {} `{}`",
        t.0, t.1, t.2, s.line, s.instr
    )
}

/// The earlier access of a race within a block: "read by thread (x,y,z)
/// at line N `instr`", or "reads by several threads (among them the …)"; only
/// the thread when the site is unknown.
fn earlier(kind: AccessKind, tid: (u32, u32, u32), s: Option<&Site>, block: bool) -> String {
    let several = tid == (u32::MAX, u32::MAX, u32::MAX);
    match (s, several) {
        (Some(s), false) => access(kind, s, block),
        (Some(s), true) => format!(
            "{kind}s by several threads (among them the {})",
            access(kind, s, block)
        ),
        (None, false) => format!("{kind} by thread ({},{},{})", tid.0, tid.1, tid.2),
        (None, true) => format!("{kind}s by several threads"),
    }
}

/// The earlier access of a race between warps.
fn earlier_warp(kind: AccessKind, warp: u32, s: Option<&Site>) -> String {
    match (s, warp) {
        (Some(s), u32::MAX) => format!(
            "{kind}s by several warps (the last: {})",
            access(kind, s, false)
        ),
        (Some(s), w) => format!("{} (warp {w})", access(kind, s, false)),
        (None, u32::MAX) => format!("{kind}s by several warps"),
        (None, w) => format!("{kind} by warp {w}"),
    }
}

/// The earlier block's access of a race between blocks.
fn earlier_block(kind: AccessKind, ctaid: (u32, u32, u32), s: Option<&Site>) -> String {
    match s {
        Some(s) => access(kind, s, true),
        None => format!("{kind} of block ({},{},{})", ctaid.0, ctaid.1, ctaid.2),
    }
}

/// An error found or raised by the simulator. Each check has its own
/// variant; runtime variants carry a [`Site`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// The PTX text could not be parsed.
    #[error("PTX parse error at line {line}: {message} (`{text}`)")]
    Parse {
        /// 1-based line in the PTX text.
        line: u32,
        /// The offending source text.
        text: String,
        /// What is wrong with it.
        message: String,
    },

    /// Valid PTX the simulator does not implement (refused, never guessed).
    #[error("unsupported PTX at line {line}: `{instr}`: {reason}")]
    Unsupported {
        /// 1-based line in the PTX text.
        line: u32,
        /// The instruction or directive text.
        instr: String,
        /// Which part of it the simulator does not implement.
        reason: String,
    },

    /// An access outside every allocation / the state space's extent.
    #[error("out-of-bounds {space} access of {size} bytes at {addr:#x}: {site}")]
    OutOfBounds {
        /// The thread and instruction of the finding.
        site: Box<Site>,
        /// The space the address resolved to.
        space: Space,
        /// A global address; for the other spaces the offset inside the
        /// CTA's shared memory, the thread's local frame or the param/const
        /// bank (a store to param/const names the address as written).
        addr: u64,
        /// Bytes of the whole access (all elements of a vector access).
        size: u32,
    },

    /// An access not naturally aligned to its total size.
    #[error("misaligned {space} access of {size} bytes at {addr:#x}: {site}")]
    Misaligned {
        /// The thread and instruction of the finding.
        site: Box<Site>,
        /// The space the address resolved to.
        space: Space,
        /// The address as the instruction computed it (a generic address
        /// stays generic).
        addr: u64,
        /// Bytes of the whole access, which is also the alignment required.
        size: u32,
    },

    /// Two threads of a CTA touched the same shared byte between two
    /// barriers, at least one writing, not both atomically. `site` is the
    /// later access; `other_tid` the thread of the earlier one,
    /// `(u32::MAX, u32::MAX, u32::MAX)` when the earlier access was reads
    /// by several threads; `other_site` the earlier access itself (thread,
    /// PTX line and instruction; of several reads, the last by a thread of
    /// another warp than `site`'s, else the last by another thread), `None`
    /// where the simulator cannot name it (entries whose blocks run on live
    /// memory, see the module docs).
    #[error(
        "shared-memory race at shared offset {offset:#x} in {}: {} races with an earlier {} (no bar.sync between them)",
        block_of(site), access(*this, site, false), earlier(*other, *other_tid, other_site.as_deref(), false)
    )]
    SharedRace {
        /// The later of the two accesses.
        site: Box<Site>,
        /// Byte offset in the CTA's shared memory.
        offset: u64,
        /// The later access's kind.
        this: AccessKind,
        /// The earlier access's kind.
        other: AccessKind,
        /// The thread (`%tid`) of the earlier access.
        other_tid: (u32, u32, u32),
        /// The earlier access, when known.
        other_site: Option<Box<Site>>,
    },

    /// Two CTAs of one launch touched the same global byte, at least one
    /// writing, not both atomically: CTAs of a launch are unordered, so the
    /// result depends on the GPU's schedule. `site` is the first conflicting
    /// access of the later CTA (in linear block order); `other_ctaid` is
    /// the earliest block whose access it conflicts with, and `other_site`
    /// that block's first such access (thread, PTX line and instruction),
    /// `None` where the simulator cannot name it (entries whose blocks run
    /// on live memory).
    #[error(
        "global-memory race at {addr:#x} in kernel `{}`: {} races with the {} (blocks of a launch are unordered)",
        site.kernel, access(*this, site, true), earlier_block(*other, *other_ctaid, other_site.as_deref())
    )]
    GlobalRace {
        /// The later block's first conflicting access.
        site: Box<Site>,
        /// The global address of the conflicting byte.
        addr: u64,
        /// The later access's kind.
        this: AccessKind,
        /// The earlier block's access's kind.
        other: AccessKind,
        /// The earliest block (`%ctaid`) it conflicts with.
        other_ctaid: (u32, u32, u32),
        /// That block's first conflicting access, when known.
        other_site: Option<Box<Site>>,
    },

    /// Threads of two warps of one CTA touched the same global byte between
    /// two barriers (`bar.sync`), at least one writing, not both atomically:
    /// nothing orders the warps' accesses, so the result depends on the
    /// GPU's schedule. The rule is the shared-memory race rule at warp
    /// granularity: a `bar.sync` orders everything before it before
    /// everything after it; the lanes of one warp are not compared here.
    /// `site` is the later access (in the simulator's thread order);
    /// `other_warp` the earlier access's warp (`u32::MAX` when it was reads
    /// or atomics by several warps); `other_site` the earlier access itself
    /// (the last of several), `None` where the simulator cannot name it
    /// (entries whose blocks run on live memory).
    #[error(
        "global-memory race at {addr:#x} between warps of {}: {} races with an earlier {} (no bar.sync between them)",
        block_of(site), access(*this, site, false), earlier_warp(*other, *other_warp, other_site.as_deref())
    )]
    WarpGlobalRace {
        /// The later of the two accesses.
        site: Box<Site>,
        /// The global address of the conflicting byte.
        addr: u64,
        /// The later access's kind.
        this: AccessKind,
        /// The earlier access's kind.
        other: AccessKind,
        /// The earlier access's warp (`%tid` linear / 32).
        other_warp: u32,
        /// The earlier access, when known.
        other_site: Option<Box<Site>>,
    },

    /// `bar.sync` not reached by every thread of the CTA at the same
    /// instruction (`.aligned` semantics).
    #[error("barrier divergence in kernel `{kernel}` block ({},{},{}): {message}", ctaid.0, ctaid.1, ctaid.2)]
    BarrierDivergence {
        /// Name of the entry.
        kernel: String,
        /// The block (`%ctaid`).
        ctaid: (u32, u32, u32),
        /// Which threads wait where (or have exited).
        message: String,
    },

    /// A warp-collective (`shfl/vote/redux.sync`, `bar.warp.sync`) whose
    /// member threads are not all at that instruction, or a divergent
    /// `bra.uni`.
    #[error("warp divergence: {site}: {message}")]
    WarpDivergence {
        /// A thread at the collective (or the divergent `bra.uni`).
        site: Box<Site>,
        /// Which lanes are missing or disagree.
        message: String,
    },

    /// A shared-memory byte read before any thread of the CTA wrote it.
    #[error(
        "uninitialized shared-memory read of {size} bytes at shared offset {offset:#x}: {site}"
    )]
    UninitializedShared {
        /// The thread and instruction of the finding.
        site: Box<Site>,
        /// Byte offset of the access in the CTA's shared memory.
        offset: u64,
        /// Bytes of the access.
        size: u32,
    },

    /// A shared-memory access to a byte that a `cp.async` not yet covered
    /// by a `cp.async.wait_group`/`cp.async.wait_all` of its thread will
    /// write (the simulator makes a copy's bytes visible at that wait, the
    /// latest point the PTX ISA allows): a read may see the old bytes, a
    /// write may be overwritten. `site` is the access (a read by the
    /// copying thread itself is the classic "read before wait"); `copy_tid`,
    /// `copy_line` and `copy_text` name the pending `cp.async`.
    #[error(
        "shared-memory {this} at shared offset {offset:#x} of a byte a pending cp.async will write: {site}; the cp.async at line {copy_line} `{copy_text}` of thread ({},{},{}) is not yet covered by a cp.async.wait_group/wait_all of that thread",
        copy_tid.0, copy_tid.1, copy_tid.2
    )]
    AsyncCopyPending {
        /// The access (thread and instruction).
        site: Box<Site>,
        /// Byte offset in the CTA's shared memory.
        offset: u64,
        /// The access's kind.
        this: AccessKind,
        /// The thread (`%tid`) that issued the pending `cp.async`.
        copy_tid: (u32, u32, u32),
        /// 1-based PTX line of the pending `cp.async`.
        copy_line: u32,
        /// Its source text.
        copy_text: String,
    },

    /// A global-memory byte read by a kernel before the host or a kernel
    /// wrote it (allocations start uninitialised).
    #[error("uninitialized global-memory read of {size} bytes at {addr:#x}: {site}")]
    UninitializedGlobal {
        /// The thread and instruction of the finding.
        site: Box<Site>,
        /// Global address of the access.
        addr: u64,
        /// Bytes of the access.
        size: u32,
    },

    /// A register read before the thread wrote it.
    #[error("read of uninitialized register `{reg}`: {site}")]
    UninitializedRegister {
        /// The thread and instruction of the finding.
        site: Box<Site>,
        /// The register's PTX name (`%r3`, `%p1`).
        reg: String,
    },

    /// An instruction trapped (`trap`, integer division by zero).
    #[error("trap: {message}: {site}")]
    Trap {
        /// The trapping thread and instruction.
        site: Box<Site>,
        /// The cause (`trap` executed, division by zero).
        message: String,
    },

    /// A device-side `assert` failed: the thread called `__assertfail`.
    /// Displays as the device prints it; `site` has the kernel, block,
    /// thread and the PTX line of the call.
    #[error(
        "{file}:{line}: {function}: block: [{},{},{}], thread: [{},{},{}] Assertion `{message}` failed.",
        site.ctaid.0, site.ctaid.1, site.ctaid.2, site.tid.0, site.tid.1, site.tid.2
    )]
    Assert {
        /// The thread and the PTX instruction (the inlined call).
        site: Box<Site>,
        /// The asserted expression's text.
        message: String,
        /// The source file the assertion names.
        file: String,
        /// The source line the assertion names (not the PTX line).
        line: u32,
        /// The function the assertion names.
        function: String,
    },

    /// No thread of a CTA can proceed.
    #[error("deadlock in kernel `{kernel}` block ({},{},{}): {parked}", ctaid.0, ctaid.1, ctaid.2)]
    Deadlock {
        /// Name of the entry.
        kernel: String,
        /// The block (`%ctaid`).
        ctaid: (u32, u32, u32),
        /// The parked threads and where each waits.
        parked: String,
    },

    /// `mapa` to a rank that is not in the cluster (`rank` ≥
    /// `%cluster_nctarank`).
    #[error("mapa to rank {rank} of a cluster of {size} CTAs: {site}")]
    ClusterRank {
        /// The thread and instruction of the finding.
        site: Box<Site>,
        /// The rank asked for.
        rank: u64,
        /// CTAs per cluster.
        size: u64,
    },

    /// Misuse of an `mbarrier` or a `cp.async.bulk` (`interp::bulk`): a
    /// barrier used before `mbarrier.init`, more arrivals than its count,
    /// a bulk copy whose size is not a non-zero multiple of 16, whose
    /// multicast mask names no CTA or one outside the cluster, whose
    /// destination CTA has not initialised the barrier (a missing
    /// `fence.mbarrier_init` and cluster barrier), two pending copies to
    /// one byte, or a shared access to the bytes of a pending copy (a read
    /// before the wait on its barrier).
    #[error("mbarrier / bulk copy misuse: {message}: {site}")]
    BulkCopy {
        /// The thread and instruction of the finding.
        site: Box<Site>,
        /// What is wrong, with the values.
        message: String,
    },

    /// Misuse of `barrier.cluster`: a second arrive before the thread's
    /// wait, or a wait without an arrive.
    #[error("cluster barrier misuse: {message}: {site}")]
    ClusterBarrier {
        /// The thread and instruction of the finding.
        site: Box<Site>,
        /// What is wrong.
        message: String,
    },

    /// Threads of two CTAs of a cluster touched the same byte of one CTA's
    /// shared memory (through `ld`/`st.shared::cluster`, or the owner's
    /// own `ld`/`st.shared`), at least one writing, with no
    /// `barrier.cluster.arrive` (release) of the earlier thread and
    /// `barrier.cluster.wait` (acquire) of the later one between them.
    /// `site` is the later access, `other_site` the earlier one.
    #[error(
        "distributed shared-memory race at shared offset {offset:#x} of block ({},{},{}) (cluster rank {rank}) in kernel `{}`: {} races with the earlier {} (no phase of barrier.cluster or of an mbarrier orders them)",
        owner_ctaid.0, owner_ctaid.1, owner_ctaid.2, site.kernel, access(*this, site, true), access(*other, other_site, true)
    )]
    ClusterRace {
        /// The later access.
        site: Box<Site>,
        /// The rank of the CTA whose shared memory it is.
        rank: u32,
        /// That CTA's block index.
        owner_ctaid: (u32, u32, u32),
        /// Byte offset in that CTA's shared memory.
        offset: u64,
        /// The later access's kind.
        this: AccessKind,
        /// The earlier access's kind.
        other: AccessKind,
        /// The earlier access (its block is another CTA of the cluster).
        other_site: Box<Site>,
    },

    /// A CTA of a cluster exited while a thread of another CTA of the
    /// cluster may still access its shared memory (the access, `site`, is
    /// not ordered before the exit by the cluster barrier, or comes after
    /// it): the PTX ISA requires a CTA's shared memory to outlive the
    /// other CTAs' accesses to it.
    #[error(
        "block ({},{},{}) of a cluster exited while another block may still access its shared memory: the {} by thread ({},{},{}) of block ({},{},{}) at line {} `{}` is not ordered before the exit (no barrier.cluster between them)",
        exited_ctaid.0, exited_ctaid.1, exited_ctaid.2, this, site.tid.0, site.tid.1, site.tid.2, site.ctaid.0, site.ctaid.1, site.ctaid.2, site.line, site.instr
    )]
    ClusterExit {
        /// The access of the other CTA.
        site: Box<Site>,
        /// Its kind.
        this: AccessKind,
        /// The block that exited.
        exited_ctaid: (u32, u32, u32),
    },

    /// With race checks on, the mbarrier clocks of a cluster launch
    /// (`interp::mbar_order`: a vector clock of 4 bytes per thread of the
    /// cluster for each thread, two for each barrier an arrive reached)
    /// would take more than
    /// [`MBAR_CLOCK_BUDGET`](super::MBAR_CLOCK_BUDGET) bytes. Raised at
    /// launch (`mbarriers` 1: a kernel that arrives has a barrier) before
    /// any thread runs, or at the arrive that would give one more barrier
    /// clocks. Run the launch with the checks off
    /// ([`Sim::set_checks`](super::Sim::set_checks)`(false)`), or with
    /// fewer threads per cluster.
    #[error(
        "race checks of kernel `{kernel}`: the mbarrier clocks of a cluster of {threads} \
         threads with {mbarriers} mbarrier(s) would take {bytes} bytes, above the budget of \
         {budget} bytes (MBAR_CLOCK_BUDGET); run the launch without race checks \
         (Sim::set_checks(false), PTXSMITH_EMU_CHECKS=0 in the emulator) or with fewer \
         threads per cluster"
    )]
    MbarClockBudget {
        /// The kernel.
        kernel: String,
        /// Threads per cluster (CTAs × threads per CTA).
        threads: u64,
        /// Barriers holding clocks (counted so far, or 1 at launch).
        mbarriers: u64,
        /// The bytes the clocks would take: `4 · threads · (threads + 2 ·
        /// mbarriers)`.
        bytes: u64,
        /// The budget.
        budget: u64,
    },

    /// The launch itself is invalid (shape, directives, shared memory,
    /// arguments, unknown entry).
    #[error("invalid launch: {0}")]
    InvalidLaunch(String),

    /// A host-side memory API misuse (unknown buffer, size mismatch).
    #[error("invalid memory operation: {0}")]
    InvalidMemory(String),

    /// The launch used up its instruction budget
    /// ([`SimOptions::launch_budget`](super::SimOptions::launch_budget): by
    /// default `max(`[`DEFAULT_INSTRUCTION_BUDGET`](super::DEFAULT_INSTRUCTION_BUDGET)`,
    /// threads × 2²⁴)`, else exactly
    /// [`SimOptions::max_instructions`](super::SimOptions::max_instructions)):
    /// almost always a kernel that never exits. `site` is the thread that
    /// was about to issue the first instruction over the budget (kernel,
    /// block, thread, PTX line and instruction text); `limit` is the budget
    /// (instructions per launch, over all blocks and threads).
    #[error(
        "instruction budget of {limit} instructions exhausted \
         (SimOptions::max_instructions; a kernel that never exits?) at {site}"
    )]
    InstructionLimit {
        /// The thread that would have issued the instruction past the
        /// budget.
        site: Box<Site>,
        /// The budget (instructions per launch).
        limit: u64,
    },
}
