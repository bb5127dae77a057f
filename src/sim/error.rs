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
    /// barriers, at least one writing, not both atomically. `other_tid` is
    /// `(u32::MAX, u32::MAX, u32::MAX)` when the earlier access was reads by
    /// several threads.
    #[error(
        "shared-memory race at shared offset {offset:#x}: {site} ({this}) conflicts with an earlier {other} by thread ({},{},{})",
        other_tid.0, other_tid.1, other_tid.2
    )]
    SharedRace {
        /// The later of the two accesses.
        site: Box<Site>,
        /// Byte offset in the CTA's shared memory.
        offset: u64,
        /// The later access: `"read"`, `"write"` or `"atomic"`.
        this: &'static str,
        /// The earlier access, in the same words.
        other: &'static str,
        /// The thread (`%tid`) of the earlier access.
        other_tid: (u32, u32, u32),
    },

    /// Two CTAs of one launch touched the same global byte, at least one
    /// writing, not both atomically: CTAs of a launch are unordered, so the
    /// result depends on the GPU's schedule. `site` is the first conflicting
    /// access of the later CTA (in linear block order); `other_ctaid` is
    /// the earliest block whose access it conflicts with.
    #[error(
        "global-memory race at {addr:#x}: {site} ({this}) conflicts with the {other} of block ({},{},{}) in the same launch (blocks of a launch are unordered)",
        other_ctaid.0, other_ctaid.1, other_ctaid.2
    )]
    GlobalRace {
        /// The later block's first conflicting access.
        site: Box<Site>,
        /// The global address of the conflicting byte.
        addr: u64,
        /// The later access: `"read"`, `"write"` or `"atomic"`.
        this: &'static str,
        /// The earlier block's access, in the same words.
        other: &'static str,
        /// The earliest block (`%ctaid`) it conflicts with.
        other_ctaid: (u32, u32, u32),
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

    /// The launch itself is invalid (shape, directives, shared memory,
    /// arguments, unknown entry).
    #[error("invalid launch: {0}")]
    InvalidLaunch(String),

    /// A host-side memory API misuse (unknown buffer, size mismatch).
    #[error("invalid memory operation: {0}")]
    InvalidMemory(String),

    /// The launch used up its instruction budget
    /// ([`SimOptions::max_instructions`](super::SimOptions::max_instructions),
    /// by default [`DEFAULT_INSTRUCTION_BUDGET`](super::DEFAULT_INSTRUCTION_BUDGET)):
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
