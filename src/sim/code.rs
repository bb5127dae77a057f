//! The execution form of an entry ([`Code`]), lowered once from the decoded
//! [`Entry`] when the module is parsed, so that the interpreter does no
//! decoding work per instruction:
//!
//! * every operand is a slot of the thread's register file: the special
//!   registers and declared registers keep the parser's numbering, each
//!   distinct immediate gets a constant slot after them (written once per
//!   worker and launch, never by an instruction), and `%clock`/`%clock64`
//!   read two slots that the interpreter refreshes before an instruction
//!   flagged [`F_CLOCK`];
//! * an `ld.param` of a fixed, aligned, in-bounds address becomes a `mov`
//!   from a slot that holds the parameter's value, written once per worker
//!   and launch ([`Code::param_loads`]);
//! * the static register-initialisation analysis
//!   ([`super::checks::init`]) leaves a run-time check only on the reads
//!   that may see an unwritten register ([`F_CHK`], [`F_GCHK`] and
//!   [`Code::chk`]); the registers involved ([`Code::tracked`]) are the
//!   only ones whose initialisation is recorded ([`F_MARK`]) and which are
//!   cleared per CTA;
//! * each thread's register file is [`Code::stride`] slots, a power of two
//!   above every operand slot, so the interpreter indexes it with a mask
//!   instead of a bounds check; an absent destination (`_`) writes the sink
//!   slot `nslots`, so results are written without a test;
//! * control flow is in blocks ([`XInst::blen`], charged to the budget and
//!   counted per block entry); `@p bra` whose guard needs no run-time check
//!   becomes `Op::BraIf`, which reads its guard itself, and an integer
//!   `setp` right before one becomes `Op::SetpIBra`, the pair in one
//!   dispatch (the per-instruction counts, findings and budget are those of
//!   the two instructions);
//! * [`Code::inter_cta`] says whether the CTAs of a launch may communicate
//!   (global or generic atomics, strong or volatile global accesses), which
//!   makes the launch run its CTAs one after another on live memory.

use std::collections::HashMap;

use super::checks::init;
use super::fp::{FOp, Rnd};
use super::interp::mask;
use super::ir::*;

/// Some operand reads need a run-time initialisation check
/// ([`Code::chk`]).
pub(crate) const F_CHK: u8 = 1;
/// The guard predicate may be read before it is written.
pub(crate) const F_GCHK: u8 = 2;
/// The instruction reads `%clock`/`%clock64`.
pub(crate) const F_CLOCK: u8 = 4;
/// A guarded `bra.uni`: its uniformity is checked.
pub(crate) const F_BRAUNI: u8 = 8;
/// The instruction writes a register in [`Code::tracked`].
pub(crate) const F_MARK: u8 = 16;
/// The instruction has a guard predicate.
pub(crate) const F_GUARD: u8 = 32;

/// A parameter read into a slot at launch: `size` bytes at `offset` of the
/// parameter space, sign-extended when `signed`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ParamLoad {
    pub slot: u32,
    pub offset: u32,
    pub size: u8,
    pub signed: bool,
}

/// One instruction in execution form. Operands are register-file slots
/// (`NO_REG` for an absent one).
#[derive(Debug, Clone, Copy)]
pub(crate) struct XInst {
    pub op: Op,
    pub flags: u8,
    pub guard_neg: bool,
    pub neg: bool,
    pub guard: u32,
    pub d: [u32; 4],
    pub s: [u32; 5],
    pub off: i64,
    /// The length of the basic block this instruction starts, 0 if it
    /// starts none. Blocks end after a branch, `exit`/`ret`/`trap` and a
    /// synchronisation point, and before a branch target, so a thread runs
    /// a block whole unless it faults: the interpreter charges the budget
    /// and counts per block.
    pub blen: u32,
    /// The mask of the result's width for the integer operations that
    /// use it ([`result_mask`]), so that the interpreter does not compute
    /// it per instruction; all ones for the others.
    pub m: u64,
}

/// The mask [`XInst::m`] holds for `op`: its width's (twice its width's
/// for the `.wide` multiplications), all ones for an operation without a
/// width.
pub(crate) fn result_mask(op: &Op) -> u64 {
    match *op {
        Op::MulWide { w, .. } | Op::MadWide { w, .. } => mask(2 * w),
        Op::Mov { w }
        | Op::Add { w }
        | Op::Sub { w }
        | Op::MulLo { w }
        | Op::MadLo { w }
        | Op::And { w }
        | Op::Or { w }
        | Op::Xor { w }
        | Op::Not { w }
        | Op::Shl { w }
        | Op::Shr { w, .. }
        | Op::Neg { w }
        | Op::Selp { w }
        | Op::SetpI { w, .. }
        | Op::SetpIBra { w, .. } => mask(w),
        _ => u64::MAX,
    }
}

/// An entry in execution form.
#[derive(Debug, Clone, Default)]
pub(crate) struct Code {
    pub insts: Vec<XInst>,
    /// Register-file slots per thread: registers, constants, the clocks.
    pub nslots: u32,
    /// Slots between two threads' register files: a power of two above
    /// `nslots`, so that the interpreter indexes a thread's file with a
    /// mask (no bounds check: every operand slot is below `nslots`); slot
    /// `nslots` is the sink that absent destinations write.
    pub stride: u32,
    /// The values of the constant slots `nregs..nregs + consts.len()`.
    pub consts: Vec<u64>,
    pub clock32: u32,
    pub clock64: u32,
    /// Slots holding a parameter's (sign- or zero-extended) value.
    pub param_loads: Vec<ParamLoad>,
    /// Per instruction, the range of [`Code::chk_slots`] holding the slots
    /// whose reads are checked at run time, in read order.
    pub chk: Vec<(u32, u32)>,
    pub chk_slots: Vec<u32>,
    /// Registers read somewhere before they are definitely written: their
    /// initialisation is tracked, and they are zeroed for every CTA.
    pub tracked: Vec<u32>,
    /// CTAs of a launch may communicate (see the module docs).
    pub inter_cta: bool,
    /// Per instruction: the first instruction of its block.
    pub leader_of: Vec<u32>,
    /// The entry may run its threads in lockstep (`interp::lockstep`): it has
    /// no atomics and no `%clock` reads, whose results depend on the order
    /// of the threads' instructions even in a race-free kernel, and no
    /// `cp.async` (the finding a conflict with a pending copy gives depends
    /// on that order).
    pub lockstep_ok: bool,
}

impl Code {
    /// The checked reads of instruction `pc`.
    #[inline]
    pub fn checked(&self, pc: usize) -> &[u32] {
        let (a, b) = self.chk[pc];
        &self.chk_slots[a as usize..b as usize]
    }

    /// Whether the read of `slot` by instruction `pc` is checked.
    pub fn is_checked(&self, pc: usize, slot: u32) -> bool {
        self.checked(pc).contains(&slot)
    }
}

/// The indices into `Inst::s` that instruction `i` reads, in the order the
/// interpreter reads them (the guard aside). `selp` lists its predicate
/// first and both values; the interpreter reads only the selected one.
pub(crate) fn src_reads(op: &Op) -> &'static [usize] {
    const NONE: &[usize] = &[];
    const A: &[usize] = &[0];
    const AB: &[usize] = &[0, 1];
    const ABC: &[usize] = &[0, 1, 2];
    const ABCD: &[usize] = &[0, 1, 2, 3];
    const ALL5: &[usize] = &[0, 1, 2, 3, 4];
    match op {
        Op::Nop
        | Op::Bra { .. }
        | Op::BraIf { .. }
        | Op::BraUni { .. }
        | Op::Exit
        | Op::Trap
        | Op::CallTooDeep => NONE,
        Op::Vprintf => AB,
        Op::AssertFail => ABCD,
        Op::Mov { .. }
        | Op::Unpack { .. }
        | Op::Not { .. }
        | Op::CNot { .. }
        | Op::Clz { .. }
        | Op::Popc { .. }
        | Op::Brev { .. }
        | Op::Neg { .. }
        | Op::Abs { .. }
        | Op::F32Abs { .. }
        | Op::F32Neg { .. }
        | Op::F64Abs
        | Op::F64Neg
        | Op::Cvt { .. }
        | Op::CvtMiniDec { .. }
        | Op::CvtUe8m0Dec
        | Op::CvtTf32
        | Op::Cvta { .. }
        | Op::Ldmatrix { .. }
        | Op::Ld { .. } => A,
        Op::Pack { n, .. } => &ALL5[..*n as usize],
        Op::St { n, .. } => &ALL5[..*n as usize + 1],
        Op::Add { .. }
        | Op::Sub { .. }
        | Op::MulLo { .. }
        | Op::MulHi { .. }
        | Op::MulWide { .. }
        | Op::Div { .. }
        | Op::Rem { .. }
        | Op::Min { .. }
        | Op::Max { .. }
        | Op::And { .. }
        | Op::Or { .. }
        | Op::Xor { .. }
        | Op::Shl { .. }
        | Op::Shr { .. }
        | Op::F32MinMax { .. }
        | Op::F64MinMax { .. }
        | Op::CvtMiniEnc { .. }
        | Op::CvtUe8m0Enc { .. }
        | Op::CvtF16x2 { .. }
        | Op::CvtBf16x2 { .. } => AB,
        Op::SetpIBra { .. } => AB,
        Op::SetpI { comb, .. } | Op::SetpF { comb, .. } => {
            if *comb == Comb::None {
                AB
            } else {
                ABC
            }
        }
        Op::MadLo { .. }
        | Op::MadHi { .. }
        | Op::MadWide { .. }
        | Op::Bfe { .. }
        | Op::Prmt { .. } => ABC,
        Op::Bfi { .. } => ABCD,
        Op::FAddRn | Op::FMulRn => AB,
        Op::FFmaRn => ABC,
        Op::F32 { op, .. } => match op {
            FOp::Sqrt | FOp::Rcp => A,
            FOp::Fma => ABC,
            _ => AB,
        },
        Op::F64 { op } => match op {
            FOp::Sqrt | FOp::Rcp => A,
            FOp::Fma => ABC,
            _ => AB,
        },
        Op::Selp { .. } => &[2, 0, 1],
        Op::Atom { op, .. } => {
            if *op == AtomOp::Cas {
                ABC
            } else {
                AB
            }
        }
        Op::Approx { f, .. } => {
            if *f == ApproxFn::Div {
                AB
            } else {
                A
            }
        }
        // barrier id (never read), count; the scheduler reads them
        Op::Bar { .. } => &[1],
        Op::BarWarp => A,
        Op::Mapa => AB,
        Op::ClusterArrive { .. } | Op::ClusterWait => NONE,
        // mask first (per lane), then b, c, and a of the source lane
        Op::Shfl { .. } => &[3, 1, 2, 0],
        Op::Vote { .. } | Op::Redux { .. } => &[1, 0],
        Op::Elect => A,
        // the A/B/C slots are in `Entry::mma`; the interpreter reads them
        Op::Mma { .. } => NONE,
        // destination, source, source offset, source size
        Op::CpAsync { .. } => ABCD,
        Op::CpAsyncCommit | Op::CpAsyncWait { .. } => NONE,
        // barrier, count / byte count / parity
        Op::MbarInit | Op::MbarArrive { .. } | Op::MbarTryWait => AB,
        // destination, source, size, barrier, mask
        Op::CpAsyncBulk { .. } => &[0, 1, 2, 3, 4],
        // destination, map, barrier, mask (the coordinates are in
        // `Entry::mma`; the interpreter reads them)
        Op::CpAsyncBulkTensor { .. } => &[0, 1, 2, 3],
    }
}

/// The indices into `Inst::d` that instruction `i` writes when it executes.
pub(crate) fn dst_writes(op: &Op) -> &'static [usize] {
    const NONE: &[usize] = &[];
    const D: &[usize] = &[0];
    const ALL4: &[usize] = &[0, 1, 2, 3];
    match op {
        Op::Unpack { n, .. } | Op::Ld { n, .. } => &ALL4[..*n as usize],
        Op::Mma { .. } => ALL4,
        Op::Ldmatrix { num, .. } => &ALL4[..*num as usize],
        Op::SetpI { .. } | Op::SetpIBra { .. } | Op::SetpF { .. } | Op::Shfl { .. } | Op::Elect => {
            &ALL4[..2]
        }
        Op::St { .. }
        | Op::Nop
        | Op::Bra { .. }
        | Op::BraIf { .. }
        | Op::BraUni { .. }
        | Op::Exit
        | Op::Trap
        | Op::CallTooDeep
        | Op::AssertFail
        | Op::Bar { .. }
        | Op::BarWarp
        | Op::ClusterArrive { .. }
        | Op::ClusterWait
        | Op::CpAsync { .. }
        | Op::CpAsyncCommit
        | Op::CpAsyncWait { .. }
        | Op::MbarInit
        | Op::CpAsyncBulk { .. }
        | Op::CpAsyncBulkTensor { .. } => NONE,
        _ => D,
    }
}

/// Lower `e` to its execution form.
pub(crate) fn lower(e: &Entry) -> Code {
    let nregs = e.nregs;
    let mut consts: Vec<u64> = Vec::new();
    let mut const_slot: HashMap<u64, u32> = HashMap::new();
    let clock32 = u32::MAX - 2;
    let clock64 = u32::MAX - 1;
    let mut slot = |s: Src| -> u32 {
        match s {
            Src::Reg(r) => r,
            Src::Imm(v) => *const_slot.entry(v).or_insert_with(|| {
                consts.push(v);
                nregs + consts.len() as u32 - 1
            }),
            Src::Clock32 => clock32,
            Src::Clock64 => clock64,
            Src::None => NO_REG,
        }
    };
    let mut insts: Vec<XInst> = e
        .insts
        .iter()
        .map(|i| {
            let mut s = [NO_REG; 5];
            for (k, v) in i.s.iter().enumerate() {
                s[k] = slot(*v);
            }
            let op = match i.op {
                Op::F32 {
                    op,
                    rnd: Rnd::Rn,
                    ftz: false,
                    sat: false,
                } => match op {
                    FOp::Add => Op::FAddRn,
                    FOp::Mul => Op::FMulRn,
                    FOp::Fma => Op::FFmaRn,
                    _ => i.op,
                },
                op => op,
            };
            let mut flags = 0;
            if i.guard != NO_REG {
                flags |= F_GUARD;
            }
            if i.s.iter().any(|v| matches!(v, Src::Clock32 | Src::Clock64)) {
                flags |= F_CLOCK;
            }
            if matches!(i.op, Op::BraUni { .. }) && i.guard != NO_REG {
                flags |= F_BRAUNI;
            }
            XInst {
                op,
                flags,
                guard_neg: i.guard_neg,
                neg: i.neg,
                guard: i.guard,
                d: i.d,
                s,
                off: i.off,
                blen: 0,
                m: u64::MAX,
            }
        })
        .collect();
    let nconst = consts.len() as u32;
    let (c32, c64) = (nregs + nconst, nregs + nconst + 1);
    let mut param_loads = Vec::new();
    for (x, i) in insts.iter_mut().zip(&e.insts) {
        if let (
            Op::Ld {
                sp: Space::Param,
                size,
                signed,
                n: 1,
            },
            Src::Imm(a),
        ) = (i.op, i.s[0])
        {
            let addr = a.wrapping_add(i.off as u64);
            if addr.is_multiple_of(size as u64) && addr + (size as u64) <= e.param_bytes as u64 {
                let slot = c64 + 1 + param_loads.len() as u32;
                param_loads.push(ParamLoad {
                    slot,
                    offset: addr as u32,
                    size,
                    signed,
                });
                x.op = Op::Mov { w: 64 };
                x.s[0] = slot;
            }
        }
    }
    for x in insts.iter_mut() {
        // the global window starts at 0: `cvta` to or from it is a `mov`
        // of its width (to: the 64-bit address masked to `w` bits)
        if let Op::Cvta {
            sp: Space::Global,
            w,
            ..
        } = x.op
        {
            x.op = Op::Mov { w };
        }
        x.m = result_mask(&x.op);
        for v in x.s.iter_mut() {
            if *v == clock32 {
                *v = c32;
            } else if *v == clock64 {
                *v = c64;
            }
        }
    }
    // run-time initialisation checks where the analysis cannot prove a write
    let maybe = init::maybe_uninit_reads(e);
    let mut chk = Vec::with_capacity(insts.len());
    let mut chk_slots = Vec::new();
    let mut tracked = vec![false; nregs as usize];
    for (pc, x) in insts.iter_mut().enumerate() {
        let m = &maybe[pc];
        if m.guard {
            x.flags |= F_GCHK;
            tracked[x.guard as usize] = true;
        }
        let a = chk_slots.len() as u32;
        for &k in &m.srcs {
            let r = x.s[k];
            chk_slots.push(r);
            tracked[r as usize] = true;
        }
        if !m.srcs.is_empty() {
            x.flags |= F_CHK;
        }
        chk.push((a, chk_slots.len() as u32));
    }
    for x in insts.iter_mut() {
        if dst_writes(&x.op)
            .iter()
            .any(|&k| x.d[k] != NO_REG && tracked[x.d[k] as usize])
        {
            x.flags |= F_MARK;
        }
    }
    // `vprintf` output is collected CTA by CTA in block order
    let inter_cta = e.insts.iter().any(|i| match i.op {
        Op::Atom { sp, .. } => matches!(sp, Space::Global | Space::Generic),
        Op::Vprintf => true,
        _ => false,
    }) || e.strong_global;
    let n = insts.len();
    let mut leader = vec![false; n + 1];
    leader[0] = true;
    for (pc, x) in insts.iter().enumerate() {
        match x.op {
            Op::Bra { target } | Op::BraUni { target, .. } => {
                leader[(target as usize).min(n)] = true;
                leader[pc + 1] = true;
            }
            Op::Exit | Op::Trap | Op::CallTooDeep | Op::AssertFail => leader[pc + 1] = true,
            op if op.is_sync() => leader[pc + 1] = true,
            // a thread parked at `mbarrier.try_wait` runs it again: it
            // must start a block
            Op::MbarTryWait => {
                leader[pc] = true;
                leader[pc + 1] = true;
            }
            _ => {}
        }
    }
    let mut block_len = vec![0u32; n];
    let mut leader_of = vec![0u32; n];
    let mut start = 0;
    for pc in 0..n {
        if leader[pc] {
            start = pc;
            let end = (pc + 1..=n).find(|&q| leader[q]).unwrap_or(n);
            block_len[pc] = (end - pc) as u32;
        }
        leader_of[pc] = start as u32;
    }
    let nslots = nregs + nconst + 2 + param_loads.len() as u32;
    for (x, &len) in insts.iter_mut().zip(&block_len) {
        x.blen = len;
        // `@p bra` whose guard needs no run-time check reads it itself
        if let Op::Bra { target } = x.op
            && x.flags == F_GUARD
        {
            x.op = Op::BraIf { target };
            x.flags = 0;
        }
        // an absent destination (`_`) writes the sink slot: the
        // interpreter writes results without testing for `NO_REG`
        for &k in dst_writes(&x.op) {
            if x.d[k] == NO_REG {
                x.d[k] = nslots;
            }
        }
    }
    // `setp` then `@p bra` in one block, neither with flags: one dispatch
    // (the interpreter skips the `bra` after it; see `Op::SetpIBra`)
    for pc in 0..n.saturating_sub(1) {
        if let (
            Op::SetpI {
                cmp,
                w,
                s,
                comb: Comb::None,
            },
            Op::BraIf { target },
        ) = (insts[pc].op, insts[pc + 1].op)
            && insts[pc].flags == 0
            && insts[pc + 1].blen == 0
        {
            let (guard, neg) = (insts[pc + 1].guard, insts[pc + 1].guard_neg);
            let x = &mut insts[pc];
            x.op = Op::SetpIBra { cmp, w, s, target };
            x.guard = guard;
            x.guard_neg = neg;
        }
    }
    let lockstep_ok = !insts.iter().any(|x| {
        x.flags & F_CLOCK != 0
            || matches!(
                x.op,
                Op::Atom { .. }
                    | Op::CpAsync { .. }
                    | Op::Vprintf
                    | Op::AssertFail
                    | Op::Mapa
                    | Op::ClusterArrive { .. }
                    | Op::ClusterWait
                    | Op::MbarInit
                    | Op::MbarArrive { .. }
                    | Op::MbarTryWait
                    | Op::CpAsyncBulk { .. }
                    | Op::CpAsyncBulkTensor { .. }
            )
    });
    Code {
        insts,
        nslots,
        stride: (nslots + 1).next_power_of_two(),
        consts,
        clock32: c32,
        clock64: c64,
        param_loads,
        chk,
        chk_slots,
        tracked: (0..nregs).filter(|&r| tracked[r as usize]).collect(),
        inter_cta,
        leader_of,
        lockstep_ok,
    }
}
