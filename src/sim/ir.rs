//! The pre-decoded, executable form of a PTX entry: a flat `Vec<Inst>` with
//! register operands resolved to slot indices, labels to instruction indices
//! and state-space variables to offsets.
//!
//! The module is crate-internal: the decoded instructions are the
//! interpreter's business. [`Entry`] (an entry's launch-relevant facts),
//! [`ParamInfo`] and [`Space`] are re-exported from [`crate::sim`].

use super::code::Code;
use super::fp::{FOp, MiniFmt, Rnd};

/// "no register" marker (a `_` destination or an unused slot).
pub const NO_REG: u32 = u32::MAX;

/// Reserved register slots holding the special registers (set at thread
/// start, read-only).
pub mod sreg {
    pub const TID_X: u32 = 0;
    pub const NTID_X: u32 = 3;
    pub const CTAID_X: u32 = 6;
    pub const NCTAID_X: u32 = 9;
    pub const LANEID: u32 = 12;
    pub const WARPID: u32 = 13;
    pub const NWARPID: u32 = 14;
    pub const SMID: u32 = 15;
    pub const NSMID: u32 = 16;
    pub const LANEMASK_EQ: u32 = 17;
    pub const LANEMASK_LT: u32 = 18;
    pub const LANEMASK_LE: u32 = 19;
    pub const LANEMASK_GT: u32 = 20;
    pub const LANEMASK_GE: u32 = 21;
    pub const DYN_SMEM: u32 = 22;
    pub const GRIDID: u32 = 23;
    /// `%cluster_ctarank`, `%cluster_nctarank`, `%clusterid.{x,y,z}`,
    /// `%nclusterid.{x,y,z}`, `%cluster_ctaid.{x,y,z}`,
    /// `%cluster_nctaid.{x,y,z}`, `%is_explicit_cluster` (sm_90; set by
    /// `interp::cluster` for the entries that read them).
    pub const CLUSTER_CTARANK: u32 = 24;
    pub const CLUSTER_NCTARANK: u32 = 25;
    pub const CLUSTERID_X: u32 = 26;
    pub const NCLUSTERID_X: u32 = 29;
    pub const CLUSTER_CTAID_X: u32 = 32;
    pub const CLUSTER_NCTAID_X: u32 = 35;
    pub const IS_EXPLICIT_CLUSTER: u32 = 38;
    /// Number of reserved slots.
    pub const COUNT: u32 = 39;

    /// Slot of a special register name, e.g. `%tid.x`.
    pub fn lookup(name: &str) -> Option<u32> {
        let dim = |s: &str| match s {
            "x" => Some(0),
            "y" => Some(1),
            "z" => Some(2),
            _ => None,
        };
        let (base, comp) = match name.split_once('.') {
            Some((b, c)) => (b, Some(c)),
            None => (name, None),
        };
        match (base, comp) {
            ("%tid", Some(c)) => dim(c).map(|d| TID_X + d),
            ("%ntid", Some(c)) => dim(c).map(|d| NTID_X + d),
            ("%ctaid", Some(c)) => dim(c).map(|d| CTAID_X + d),
            ("%nctaid", Some(c)) => dim(c).map(|d| NCTAID_X + d),
            ("%laneid", None) => Some(LANEID),
            ("%warpid", None) => Some(WARPID),
            ("%nwarpid", None) => Some(NWARPID),
            ("%smid", None) => Some(SMID),
            ("%nsmid", None) => Some(NSMID),
            ("%lanemask_eq", None) => Some(LANEMASK_EQ),
            ("%lanemask_lt", None) => Some(LANEMASK_LT),
            ("%lanemask_le", None) => Some(LANEMASK_LE),
            ("%lanemask_gt", None) => Some(LANEMASK_GT),
            ("%lanemask_ge", None) => Some(LANEMASK_GE),
            ("%dynamic_smem_size", None) => Some(DYN_SMEM),
            ("%gridid", None) => Some(GRIDID),
            ("%cluster_ctarank", None) => Some(CLUSTER_CTARANK),
            ("%cluster_nctarank", None) => Some(CLUSTER_NCTARANK),
            ("%clusterid", Some(c)) => dim(c).map(|d| CLUSTERID_X + d),
            ("%nclusterid", Some(c)) => dim(c).map(|d| NCLUSTERID_X + d),
            ("%cluster_ctaid", Some(c)) => dim(c).map(|d| CLUSTER_CTAID_X + d),
            ("%cluster_nctaid", Some(c)) => dim(c).map(|d| CLUSTER_NCTAID_X + d),
            ("%is_explicit_cluster", None) => Some(IS_EXPLICIT_CLUSTER),
            _ => None,
        }
    }
}

/// A source operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Src {
    Reg(u32),
    Imm(u64),
    /// `%clock`
    Clock32,
    /// `%clock64`
    Clock64,
    None,
}

/// The state space of a memory access, as named in the PTX (`ld.global`,
/// `st.shared`, …); carried by [`SimError::OutOfBounds`] and
/// [`SimError::Misaligned`]. It displays as the PTX spelling (`global`).
///
/// [`SimError::OutOfBounds`]: crate::sim::SimError::OutOfBounds
/// [`SimError::Misaligned`]: crate::sim::SimError::Misaligned
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Space {
    /// `.global`: device memory allocated through the simulator.
    Global,
    /// `.shared`: the CTA's static and dynamic shared memory.
    Shared,
    /// `.local`: the thread's private frame.
    Local,
    /// `.param`: the kernel's parameter bank.
    Param,
    /// `.const`: the module's constant bank.
    Const,
    /// A generic address (`ld` without a space). Instructions carry it;
    /// findings name the space the address resolved to (an address in none
    /// of the shared, local and const windows is global).
    Generic,
    /// `.shared::cluster`: the shared memory of any CTA of the cluster, at
    /// an address `mapa` made (sm_90+). A finding's address is the
    /// instruction's (the rank in its high bits, see `interp::cluster`).
    SharedCluster,
}

impl std::fmt::Display for Space {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Space::Global => "global",
            Space::Shared => "shared",
            Space::Local => "local",
            Space::Param => "param",
            Space::Const => "const",
            Space::Generic => "generic",
            Space::SharedCluster => "shared::cluster",
        })
    }
}

/// Comparison of `setp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Equ,
    Neu,
    Ltu,
    Leu,
    Gtu,
    Geu,
    Num,
    Nan,
}

/// Boolean combine of `setp.cmp.bool`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comb {
    None,
    And,
    Or,
    Xor,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomOp {
    Add,
    Min,
    Max,
    Inc,
    Dec,
    And,
    Or,
    Xor,
    Exch,
    Cas,
    AddF32,
    AddF64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShflMode {
    Up,
    Down,
    Bfly,
    Idx,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VoteMode {
    All,
    Any,
    Uni,
    Ballot,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduxOp {
    Add,
    Min,
    Max,
    And,
    Or,
    Xor,
}

/// Scalar types of `cvt`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CvtTy {
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    F16,
    Bf16,
    F32,
    F64,
}

impl CvtTy {
    pub fn bits(self) -> u32 {
        match self {
            CvtTy::U8 | CvtTy::S8 => 8,
            CvtTy::U16 | CvtTy::S16 | CvtTy::F16 | CvtTy::Bf16 => 16,
            CvtTy::U32 | CvtTy::S32 | CvtTy::F32 => 32,
            CvtTy::U64 | CvtTy::S64 | CvtTy::F64 => 64,
        }
    }
    pub fn is_int(self) -> bool {
        !matches!(self, CvtTy::F16 | CvtTy::Bf16 | CvtTy::F32 | CvtTy::F64)
    }
    pub fn signed(self) -> bool {
        matches!(self, CvtTy::S8 | CvtTy::S16 | CvtTy::S32 | CvtTy::S64)
    }
}

/// One decoded operation. `w` is the operation width in bits, `s` whether
/// the integer type is signed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Op {
    Nop,
    Mov {
        w: u8,
    },
    /// d0 = s0 | s1 << w | ... (s0 is the low part)
    Pack {
        n: u8,
        w: u8,
    },
    /// `d[i] = s0 >> (i·w)`
    Unpack {
        n: u8,
        w: u8,
    },
    Add {
        w: u8,
    },
    Sub {
        w: u8,
    },
    MulLo {
        w: u8,
    },
    MulHi {
        w: u8,
        s: bool,
    },
    MulWide {
        w: u8,
        s: bool,
    },
    MadLo {
        w: u8,
    },
    MadHi {
        w: u8,
        s: bool,
    },
    MadWide {
        w: u8,
        s: bool,
    },
    Div {
        w: u8,
        s: bool,
    },
    Rem {
        w: u8,
        s: bool,
    },
    Min {
        w: u8,
        s: bool,
    },
    Max {
        w: u8,
        s: bool,
    },
    And {
        w: u8,
    },
    Or {
        w: u8,
    },
    Xor {
        w: u8,
    },
    Not {
        w: u8,
    },
    CNot {
        w: u8,
    },
    Shl {
        w: u8,
    },
    Shr {
        w: u8,
        s: bool,
    },
    Bfe {
        w: u8,
        s: bool,
    },
    Bfi {
        w: u8,
    },
    /// 0 = generic, 1.. = f4e b4e rc8 ecl ecr rc16
    Prmt {
        mode: u8,
    },
    Clz {
        w: u8,
    },
    Popc {
        w: u8,
    },
    Brev {
        w: u8,
    },
    Neg {
        w: u8,
    },
    Abs {
        w: u8,
    },
    F32 {
        op: FOp,
        rnd: Rnd,
        ftz: bool,
        sat: bool,
    },
    /// `add.rn.f32` without `.ftz`/`.sat` (execution form only: the
    /// lowering's fast variant of [`Op::F32`]).
    #[doc(hidden)]
    FAddRn,
    /// `mul.rn.f32` without `.ftz`/`.sat` (execution form only).
    #[doc(hidden)]
    FMulRn,
    /// `fma.rn.f32` without `.ftz`/`.sat` (execution form only).
    #[doc(hidden)]
    FFmaRn,
    F32MinMax {
        max: bool,
        nan: bool,
        ftz: bool,
    },
    F32Abs {
        ftz: bool,
    },
    F32Neg {
        ftz: bool,
    },
    F64 {
        op: FOp,
    },
    F64MinMax {
        max: bool,
    },
    F64Abs,
    F64Neg,
    SetpI {
        cmp: Cmp,
        w: u8,
        s: bool,
        comb: Comb,
    },
    /// An integer `setp` without a combine followed by the `@p bra` after
    /// it, in one dispatch (execution form only): the branch's target is
    /// here, its guard in the instruction's guard fields.
    #[doc(hidden)]
    SetpIBra {
        cmp: Cmp,
        w: u8,
        s: bool,
        target: u32,
    },
    SetpF {
        cmp: Cmp,
        f64: bool,
        ftz: bool,
        comb: Comb,
    },
    Selp {
        w: u8,
    },
    /// `rnd`: float rounding (int→float, float→float narrowing);
    /// `irnd`: integer rounding (`.rni` …) for float→int and float→float.
    Cvt {
        d: CvtTy,
        s: CvtTy,
        rnd: Option<Rnd>,
        irnd: Option<Rnd>,
        sat: bool,
        ftz: bool,
    },
    /// `cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2,e2m1x2}.f32 d, a, b`
    CvtMiniEnc {
        fmt: MiniFmt,
        relu: bool,
    },
    /// `cvt.rn{.relu}.f16x2.{e4m3x2,e5m2x2,e2m1x2} d, a`
    CvtMiniDec {
        fmt: MiniFmt,
        relu: bool,
    },
    /// `cvt.{rz,rp}.satfinite.ue8m0x2.f32 d, a, b` (a → bits 15:8)
    CvtUe8m0Enc {
        rnd: Rnd,
    },
    /// `cvt.rn.bf16x2.ue8m0x2 d, a` (a\[15:8\] → bits 31:16)
    CvtUe8m0Dec,
    /// `cvt.{rn,rz}{.relu}.bf16x2.f32 d, a, b` (a → upper half; sm_80)
    CvtBf16x2 {
        rnd: Rnd,
        relu: bool,
    },
    /// `cvt.rna.tf32.f32 d, a` (sm_80): nearest, ties away, low 13 bits 0
    CvtTf32,
    /// `cvt.{rn,rz}{.relu}{.satfinite}.f16x2.f32 d, a, b` (a → upper half)
    CvtF16x2 {
        rnd: Rnd,
        relu: bool,
        satfinite: bool,
    },
    /// n elements of `size` bytes; `signed` sign-extends narrow loads.
    Ld {
        sp: Space,
        size: u8,
        signed: bool,
        n: u8,
    },
    St {
        sp: Space,
        size: u8,
        n: u8,
    },
    Atom {
        sp: Space,
        op: AtomOp,
        w: u8,
        s: bool,
        ret: bool,
    },
    /// `cvta{.to}.space.{u32,u64}`; `w` is the size (32 only for the
    /// shared/local/const windows' space-relative side).
    Cvta {
        to: bool,
        sp: Space,
        w: u8,
    },
    Bra {
        target: u32,
    },
    /// A guarded `bra` that reads its guard itself (execution form only:
    /// the lowering's form of `@p bra` when the guard needs no run-time
    /// check, so the interpreter skips its generic guard path).
    #[doc(hidden)]
    BraIf {
        target: u32,
    },
    /// `bra.uni`; `idx` numbers the entry's predicated `bra.uni`s for the
    /// uniformity check.
    BraUni {
        target: u32,
        idx: u32,
    },
    Exit,
    Trap,
    /// A call past the recursion depth the inliner allows (`parse/func.rs`,
    /// `MAX_RECURSION`): a trap naming the limit.
    CallTooDeep,
    /// `bar.sync a{, b}` / `barrier.sync{.aligned} a{, b}`: s0 = barrier,
    /// s1 = count (Src::None when absent). `aligned`: every thread reaches
    /// the same instruction (`bar.sync`, `barrier.sync.aligned`); without
    /// it (`barrier.sync`) threads may wait at different ones.
    Bar {
        aligned: bool,
    },
    /// `bar.warp.sync mask`: s0 = mask
    BarWarp,
    /// `mapa.shared::cluster.u32 d, a, rank`: d0 = d; s0 = a, s1 = rank.
    Mapa,
    /// `barrier.cluster.arrive{.release,.relaxed}{.aligned}`.
    ClusterArrive {
        relaxed: bool,
    },
    /// `barrier.cluster.wait{.acquire}{.aligned}`: parks until the
    /// thread's phase of the cluster barrier completes.
    ClusterWait,
    /// d0 = d, d1 = p; s = a, b, c, mask
    Shfl {
        mode: ShflMode,
    },
    /// d0 = d; s0 = a (negated by `neg`), s1 = mask
    Vote {
        mode: VoteMode,
    },
    /// `elect.sync d|p, mask`: d0 = the leader's lane, d1 = p (the leader
    /// only); s0 = mask. The simulator elects the lowest lane.
    Elect,
    /// d0 = d; s0 = a, s1 = mask
    Redux {
        op: ReduxOp,
        s: bool,
    },
    /// `mma.sync.aligned.{m16n8k16,m16n8k8}.row.col.f32.T.T.f32`: d0..d3 =
    /// D; the A, B and C registers are [`Entry::mma`]`[ops]` (ten slots do
    /// not fit in `Inst::s`). Warp-collective.
    Mma {
        fmt: crate::tensor_core::InputFormat,
        ops: u32,
    },
    /// `ldmatrix.sync.aligned.m8n8.xN{.trans}{.shared}.b16` (`N = num`):
    /// d0..d(N-1); s0 the lane's row address (+ `off`), in `sp` (shared
    /// or generic). Warp-collective.
    Ldmatrix {
        num: u8,
        trans: bool,
        sp: Space,
    },
    /// `cp.async.{ca,cg}.shared.global [s0+off], [s1+s2], size{, s3}`:
    /// s2 the source's offset (an immediate), s3 the source size
    /// (`Src::None`: `size`).
    CpAsync {
        size: u8,
    },
    /// `cp.async.commit_group`
    CpAsyncCommit,
    /// `cp.async.wait_group n`; `cp.async.wait_all` is `n: None`.
    CpAsyncWait {
        n: Option<u32>,
    },
    /// `mbarrier.init.shared{::cta}.b64 [s0+off], s1` (sm_90 here; see
    /// `interp::bulk`).
    MbarInit,
    /// `mbarrier.arrive{.expect_tx}.shared{::cta}.b64 d0, [s0+off]{, s1}`:
    /// d0 the opaque state (the phase number); `remote`:
    /// `mbarrier.arrive.release.cluster.shared::cluster.b64 _, [s0+off]`
    /// (a barrier of any CTA of the cluster).
    MbarArrive {
        tx: bool,
        remote: bool,
    },
    /// `mbarrier.try_wait.parity.shared{::cta}.b64 d0, [s0+off], s1`: parks
    /// the thread while the phase of parity `s1 & 1` has not completed.
    MbarTryWait,
    /// `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes
    /// {.multicast::cluster} [s0+off], [s1], s2, [s3]{, s4}`: s2 the size,
    /// s3 the barrier, s4 the CTA mask; `size` the size if it is an
    /// immediate (0 for a register), for the L2 traffic model.
    CpAsyncBulk {
        multicast: bool,
        size: u32,
    },
    /// `cp.async.bulk.tensor.{dims}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
    /// {.multicast::cluster} [s0+off], [s1, {coords}], [s2]{, s3}`: s1 the
    /// tensor map's generic address, s2 the barrier, s3 the CTA mask; the
    /// coordinates' register slots are [`Entry::mma`]`[ops][..dims]`
    /// (`interp::bulk_tensor`).
    CpAsyncBulkTensor {
        dims: u8,
        multicast: bool,
        ops: u32,
    },
    /// The `vprintf` builtin (an inlined `call vprintf`): d0 = the
    /// returned argument count, s0 = format address, s1 = argument buffer.
    Vprintf,
    /// The `__assertfail` builtin: s0 = message, s1 = file, s2 = line,
    /// s3 = function. Always a finding ([`SimError::Assert`]).
    ///
    /// [`SimError::Assert`]: crate::sim::SimError::Assert
    AssertFail,
    /// An approximate f32 instruction (`ex2.approx`, `div.full`, …),
    /// executed as the correctly rounded value only when
    /// `SimOptions::approx` allows it.
    Approx {
        f: ApproxFn,
        ftz: bool,
    },
}

/// The approximate f32 functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApproxFn {
    Ex2,
    Lg2,
    Rsqrt,
    Sqrt,
    Rcp,
    /// `div.approx` and `div.full`
    Div,
    Sin,
    Cos,
    Tanh,
}

impl Op {
    /// Whether the op is a `cp.async` (its entry keeps the pending-copy
    /// shadow of shared memory).
    pub fn is_cp_async(&self) -> bool {
        matches!(self, Op::CpAsync { .. })
    }

    /// Whether the op is a synchronisation point (the scheduler parks the
    /// thread there).
    pub fn is_sync(&self) -> bool {
        matches!(
            self,
            Op::Bar { .. }
                | Op::BarWarp
                | Op::ClusterWait
                | Op::Shfl { .. }
                | Op::Vote { .. }
                | Op::Elect
                | Op::Redux { .. }
                | Op::Mma { .. }
                | Op::Ldmatrix { .. }
        )
    }
}

/// One instruction.
#[derive(Debug, Clone, Copy)]
pub struct Inst {
    pub op: Op,
    pub d: [u32; 4],
    /// Sources (`st.v4` uses `s[1..5]` for its values, `s[0]` for the address).
    pub s: [Src; 5],
    /// Byte offset of a memory operand.
    pub off: i64,
    /// Guard predicate slot, `NO_REG` if none.
    pub guard: u32,
    pub guard_neg: bool,
    /// Negate the predicate source (`setp`'s `c`, `vote`'s `a`, `selp`'s `c`).
    pub neg: bool,
    /// Index of the opcode string in `Entry::opcodes`.
    pub opcode: u16,
}

/// A `.param` of an entry, laid out as the driver lays out the parameter
/// buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamInfo {
    /// The parameter's name in the PTX.
    pub name: String,
    /// Byte offset in the parameter buffer (the previous parameter's end
    /// rounded up to this one's alignment).
    pub offset: u32,
    /// Size in bytes (element size times count for `.b8 name[N]` arrays).
    pub size: u32,
}

/// One `.entry` of a [`Program`](crate::sim::Program), decoded: what a
/// launch needs to know about it (parameters, shared and local memory,
/// launch-bound directives). Returned by
/// [`Program::entry`](crate::sim::Program::entry).
#[derive(Debug, Clone)]
pub struct Entry {
    /// The entry's name.
    pub name: String,
    /// The parameters in declaration order.
    pub params: Vec<ParamInfo>,
    /// Size of the parameter buffer in bytes (the end of the last
    /// parameter; 0 without parameters).
    pub param_bytes: u32,
    pub(crate) insts: Vec<Inst>,
    /// Source line of each instruction (1-based).
    pub(crate) lines: Vec<u32>,
    /// Source text of each instruction.
    pub(crate) texts: Vec<String>,
    /// Distinct opcode strings (with modifiers), indexed by `Inst::opcode`.
    pub(crate) opcodes: Vec<String>,
    /// Register slots: every declared `.reg` register (each element of a
    /// `%r<N>` range, predicates included) plus the simulator's reserved
    /// slots for special registers. Not a hardware register count.
    pub nregs: u32,
    /// Name of each register slot, for findings.
    pub(crate) reg_names: Vec<String>,
    /// Bytes of static shared memory (module + entry declarations).
    pub static_shared: u32,
    /// Alignment in bytes of the `.extern .shared` (dynamic shared) array;
    /// 1 when the module declares none.
    pub dyn_shared_align: u32,
    /// Bytes of the thread's `.local` frame.
    pub local_bytes: u32,
    /// `.maxntid x, y, z`, if declared.
    pub maxntid: Option<(u32, u32, u32)>,
    /// `.reqntid x, y, z`, if declared.
    pub reqntid: Option<(u32, u32, u32)>,
    /// `.reqnctapercluster x, y, z`, if declared (sm_90+).
    pub reqnctapercluster: Option<(u32, u32, u32)>,
    /// `.explicitcluster`: the kernel must be launched with a cluster
    /// shape (sm_90+).
    pub explicitcluster: bool,
    /// `.maxclusterrank n`, if declared (sm_90+).
    pub maxclusterrank: Option<u32>,
    /// Number of predicated `bra.uni`s (slots of the uniformity check).
    pub(crate) n_brauni: u32,
    /// A `.volatile`/`.relaxed`/`.acquire`/`.release`/`.mmio` global or
    /// generic access: CTAs may communicate through it.
    pub(crate) strong_global: bool,
    /// The A (4), B (2) and C (4) register slots of each `mma.sync`, in
    /// PTX operand order, indexed by [`Op::Mma`]'s `ops`; and the
    /// coordinates' slots of each `cp.async.bulk.tensor`
    /// ([`Op::CpAsyncBulkTensor`]'s `ops`, the rest unused).
    pub(crate) mma: Vec<[u32; 10]>,
    /// `(instruction, source slot)` holding a module variable's address
    /// (relocated when the module is loaded; see `parse/globals.rs`).
    pub(crate) relocs: Vec<(u32, u8)>,
    /// The execution form (lowered once, when the module is parsed).
    pub(crate) code: Code,
}

impl Entry {
    /// Offset of the dynamic shared array in the CTA's shared memory: the
    /// static size rounded up to [`Entry::dyn_shared_align`].
    pub fn dyn_shared_offset(&self) -> u32 {
        let a = self.dyn_shared_align.max(1);
        self.static_shared.div_ceil(a) * a
    }
}
