//! The kernel IR: what the builder records and the printer spells. Every
//! instruction form here has a printer case, a feature gate (if any) and a
//! ptxas test on the lowest SM that has it.

use super::types::{RegId, Ty, Value};
use crate::target::Feature;
use crate::tensor_core::InputFormat;

/// IEEE rounding of float arithmetic. There is deliberately no "none":
/// every float add/sub/mul carries a modifier, so ptxas never contracts a
/// multiply and an add into an FMA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rounding {
    /// To nearest, ties to even.
    Rn,
    /// Toward zero.
    Rz,
    /// Toward −∞.
    Rm,
    /// Toward +∞.
    Rp,
}

/// Float → integer (or float → integral float) rounding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IntRounding {
    /// Nearest, ties to even (`.rni`).
    Rni,
    /// Toward zero (`.rzi`).
    Rzi,
    /// Toward −∞ (`.rmi`).
    Rmi,
    /// Toward +∞ (`.rpi`).
    Rpi,
}

/// Comparison of `setp`. The `U*` variants are the unordered float forms
/// (true when either operand is NaN); integer compares ignore them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cmp {
    /// `eq`: equal.
    Eq,
    /// `ne`: not equal (floats: ordered, false for NaN).
    Ne,
    /// `lt`: less than (`lo` for unsigned integers).
    Lt,
    /// `le`: less or equal (`ls` unsigned).
    Le,
    /// `gt`: greater than (`hi` unsigned).
    Gt,
    /// `ge`: greater or equal (`hs` unsigned).
    Ge,
    /// Unordered-or-equal etc. (floats only).
    Equ,
    /// `neu`: not equal or unordered.
    Neu,
    /// `ltu`: less than or unordered.
    Ltu,
    /// `leu`: less or equal or unordered.
    Leu,
    /// `gtu`: greater than or unordered.
    Gtu,
    /// `geu`: greater or equal or unordered.
    Geu,
    /// Neither operand is NaN (floats only).
    Num,
    /// Either operand is NaN (floats only).
    Nan,
}

impl Cmp {
    pub(crate) fn float_only(self) -> bool {
        !matches!(
            self,
            Cmp::Eq | Cmp::Ne | Cmp::Lt | Cmp::Le | Cmp::Gt | Cmp::Ge
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum IntOp {
    Add,
    Sub,
    MulLo,
    MulHi,
    Div,
    Rem,
    Min,
    Max,
    And,
    Or,
    Xor,
    Shl,
    Shr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum FloatOp {
    Add,
    Sub,
    Mul,
    Div,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum UnOp {
    Not,
    Neg,
    Abs,
    Clz,
    Popc,
    Brev,
    /// `sqrt.rnd` (floats)
    Sqrt(Rounding),
    /// `rcp.rnd` (floats)
    Rcp(Rounding),
}

/// Special registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Special {
    /// `%tid.x`
    TidX,
    /// `%tid.y`
    TidY,
    /// `%tid.z`
    TidZ,
    /// `%ntid.x`
    NtidX,
    /// `%ntid.y`
    NtidY,
    /// `%ntid.z`
    NtidZ,
    /// `%ctaid.x`
    CtaidX,
    /// `%ctaid.y`
    CtaidY,
    /// `%ctaid.z`
    CtaidZ,
    /// `%nctaid.x`
    NctaidX,
    /// `%nctaid.y`
    NctaidY,
    /// `%nctaid.z`
    NctaidZ,
    /// `%laneid`
    LaneId,
    /// `%cluster_ctarank`: this CTA's rank in its cluster (sm_90+).
    ClusterCtaRank,
    /// `%cluster_nctarank`: CTAs per cluster (sm_90+).
    ClusterNctaRank,
    /// `%clusterid.x`: the cluster's index in the grid of clusters (sm_90+).
    ClusterIdX,
    /// `%clusterid.y`
    ClusterIdY,
    /// `%clusterid.z`
    ClusterIdZ,
    /// `%nclusterid.x`: clusters in the grid (sm_90+).
    NclusterIdX,
    /// `%nclusterid.y`
    NclusterIdY,
    /// `%nclusterid.z`
    NclusterIdZ,
    /// `%cluster_ctaid.x`: this CTA's index within its cluster (sm_90+).
    ClusterCtaidX,
    /// `%cluster_ctaid.y`
    ClusterCtaidY,
    /// `%cluster_ctaid.z`
    ClusterCtaidZ,
    /// `%cluster_nctaid.x`: the cluster's shape in CTAs (sm_90+).
    ClusterNctaidX,
    /// `%cluster_nctaid.y`
    ClusterNctaidY,
    /// `%cluster_nctaid.z`
    ClusterNctaidZ,
}

impl Special {
    /// Whether the register exists only with clusters (sm_90+).
    pub(crate) fn is_cluster(self) -> bool {
        !matches!(
            self,
            Special::TidX
                | Special::TidY
                | Special::TidZ
                | Special::NtidX
                | Special::NtidY
                | Special::NtidZ
                | Special::CtaidX
                | Special::CtaidY
                | Special::CtaidZ
                | Special::NctaidX
                | Special::NctaidY
                | Special::NctaidZ
                | Special::LaneId
        )
    }
}

/// The memory semantics of `barrier.cluster.arrive` (PTX ISA
/// `barrier.cluster`: without a qualifier the arrive has release
/// semantics).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClusterArrive {
    /// Release (the ISA's default, printed without a qualifier so that
    /// PTX 7.8 suffices): the thread's earlier memory accesses are
    /// visible to every thread whose `barrier.cluster.wait` completes the
    /// phase.
    Release,
    /// `.relaxed` (PTX 8.0): an arrive that orders no memory access.
    Relaxed,
}

/// Memory state spaces addressable by `ld`/`st`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Space {
    Global,
    /// Global, read-only for the kernel's lifetime (`ld.global.nc`).
    GlobalNc,
    Shared,
    /// `.shared::cluster`: a shared address of any CTA of the cluster
    /// (from `mapa`), sm_90+.
    SharedCluster,
}

/// An address operand: `[base+offset]` where base is a register or a
/// named variable (shared array).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum AddrBase {
    Reg(RegId),
    Var(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Addr {
    pub base: AddrBase,
    pub offset: i32,
}

/// Warp shuffle modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ShflMode {
    /// `shfl.sync.up`
    Up,
    /// `shfl.sync.down`
    Down,
    /// `shfl.sync.bfly` (XOR of the lane)
    Bfly,
    /// `shfl.sync.idx`
    Idx,
}

/// Atomic read-modify-write operations (integer only: float atomics are
/// not reproducible and the DSL does not offer them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AtomOp {
    /// `atom.add`
    Add,
    /// `atom.min`
    Min,
    /// `atom.max`
    Max,
    /// `atom.exch`
    Exch,
    /// `atom.cas`
    Cas,
    /// `atom.and`
    And,
    /// `atom.or`
    Or,
}

/// Warp reductions of `redux.sync` (sm_80+).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduxOp {
    /// `redux.sync.add`
    Add,
    /// `redux.sync.min`
    Min,
    /// `redux.sync.max`
    Max,
    /// `redux.sync.and`
    And,
    /// `redux.sync.or`
    Or,
    /// `redux.sync.xor`
    Xor,
}

/// FP8 formats with a hardware `cvt` on sm_89+.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fp8Format {
    /// E4M3 (`e4m3x2`)
    E4M3,
    /// E5M2 (`e5m2x2`)
    E5M2,
}

/// Rounding of `cvt.*.satfinite.ue8m0x2.f32` (the only two PTX allows).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ue8m0Rounding {
    /// `.rz`: the largest power of two not above |x|.
    Rz,
    /// `.rp`: the smallest power of two not below |x| (the cuBLAS /
    /// Transformer Engine "RCeil" MX scale).
    Rp,
}

/// One IR operation.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Op {
    Mov {
        ty: Ty,
        d: RegId,
        a: Value,
    },
    MovSpecial {
        d: RegId,
        s: Special,
    },
    /// Address of a shared variable within the shared window.
    MovVarAddr {
        d: RegId,
        var: String,
    },
    Int {
        op: IntOp,
        ty: Ty,
        d: RegId,
        a: Value,
        b: Value,
    },
    /// `mul.wide` (32 → 64 bits)
    MulWide {
        signed: bool,
        d: RegId,
        a: Value,
        b: Value,
    },
    /// `mad.lo` (`wide: false`) or `mad.wide` (32×32+64)
    Mad {
        wide: bool,
        ty: Ty,
        d: RegId,
        a: Value,
        b: Value,
        c: Value,
    },
    Float {
        op: FloatOp,
        rnd: Rounding,
        ty: Ty,
        d: RegId,
        a: Value,
        b: Value,
    },
    Fma {
        rnd: Rounding,
        ty: Ty,
        d: RegId,
        a: Value,
        b: Value,
        c: Value,
    },
    /// `min/max.f32`, with `.NaN` when `nan` (sm_80+)
    FMinMax {
        max: bool,
        nan: bool,
        ty: Ty,
        d: RegId,
        a: Value,
        b: Value,
    },
    Unary {
        op: UnOp,
        ty: Ty,
        d: RegId,
        a: Value,
    },
    Bfe {
        ty: Ty,
        d: RegId,
        a: Value,
        pos: Value,
        len: Value,
    },
    Bfi {
        ty: Ty,
        d: RegId,
        a: Value,
        b: Value,
        pos: Value,
        len: Value,
    },
    Prmt {
        d: RegId,
        a: Value,
        b: Value,
        sel: Value,
    },
    Setp {
        cmp: Cmp,
        ty: Ty,
        d: RegId,
        a: Value,
        b: Value,
    },
    Selp {
        ty: Ty,
        d: RegId,
        a: Value,
        b: Value,
        p: RegId,
    },
    PredLogic {
        op: IntOp,
        d: RegId,
        a: RegId,
        b: RegId,
    },
    PredNot {
        d: RegId,
        a: RegId,
    },
    /// Conversions; `rnd` is the printed modifier (None for exact ones).
    Cvt {
        dt: Ty,
        st: Ty,
        rnd: Option<CvtRnd>,
        d: RegId,
        a: Value,
    },
    /// `cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 d, hi, lo`
    CvtToFp8x2 {
        fmt: Fp8Format,
        d: RegId,
        hi: Value,
        lo: Value,
    },
    /// `cvt.rn.f16x2.{e4m3x2,e5m2x2} d, a`
    CvtFromFp8x2 {
        fmt: Fp8Format,
        d: RegId,
        a: RegId,
    },
    /// `cvt.rn.satfinite.e2m1x2.f32 d, hi, lo` (d is `.b8`)
    CvtToE2m1x2 {
        d: RegId,
        hi: Value,
        lo: Value,
    },
    /// `cvt.rn.f16x2.e2m1x2 d, a` (a is `.b8`)
    CvtFromE2m1x2 {
        d: RegId,
        a: RegId,
    },
    /// `cvt.{rz,rp}.satfinite.ue8m0x2.f32 d, hi, lo` (d is `.b16`)
    CvtToUe8m0x2 {
        rnd: Ue8m0Rounding,
        d: RegId,
        hi: Value,
        lo: Value,
    },
    /// `cvt.rn.bf16x2.ue8m0x2 d, a` (a is `.b16`)
    CvtFromUe8m0x2 {
        d: RegId,
        a: RegId,
    },
    /// `cvt.rn.{f16x2,bf16x2}.f32 d, hi, lo` (d is `.b32`)
    CvtToHalf2 {
        fmt: InputFormat,
        d: RegId,
        hi: Value,
        lo: Value,
    },
    /// `cvt.rna.tf32.f32 d, a` (d is `.b32`)
    CvtToTf32 {
        d: RegId,
        a: Value,
    },
    /// `mma.sync.aligned.{m16n8k16,m16n8k8}.row.col.f32.T.T.f32 d, a, b, c`
    /// (`k` from the format: 16 for f16/bf16, 8 for tf32)
    Mma {
        fmt: InputFormat,
        d: [RegId; 4],
        a: [RegId; 4],
        b: [RegId; 2],
        c: [RegId; 4],
    },
    /// `ldmatrix.sync.aligned.m8n8.xN{.trans}.shared.b16 {d…}, [addr]`
    /// (`N = d.len()`: 1, 2 or 4)
    Ldmatrix {
        trans: bool,
        d: Vec<RegId>,
        addr: Addr,
    },
    /// `cp.async.{ca,cg}.shared.global [dst], [src], size{, src_size}`
    CpAsync {
        cg: bool,
        size: u8,
        dst: Addr,
        src: Addr,
        src_size: Option<Value>,
    },
    /// `cp.async.commit_group`
    CpAsyncCommit,
    /// `cp.async.wait_group n` (`None`: `cp.async.wait_all`)
    CpAsyncWait(Option<u32>),
    /// `mov.b32 d, {b0, b1, b2, b3}` (b0 → bits 7:0)
    Pack4x8 {
        d: RegId,
        b: [RegId; 4],
    },
    /// `mov.b32 {lo, hi}, a` (split 32 bits into two b16)
    Unpack2x16 {
        lo: RegId,
        hi: RegId,
        a: RegId,
    },
    /// `mov.b32 d, {lo, hi}`
    Pack2x16 {
        d: RegId,
        lo: RegId,
        hi: RegId,
    },
    LdParam {
        ty: Ty,
        d: RegId,
        name: String,
    },
    CvtaGlobal {
        d: RegId,
        a: RegId,
    },
    /// `mov.u64 d, name` then `cvta.param.u64 d, d`: the generic address
    /// of a by-value kernel parameter (a tensor map's).
    ParamAddr {
        d: RegId,
        name: String,
    },
    /// `ld.param.T d, [name+offset]` with the name as printed: a device
    /// function's own parameter, or a call's return value in the caller.
    LdParamAt {
        ty: Ty,
        d: RegId,
        name: String,
        offset: u32,
    },
    /// `st.param.T [name+offset], a`: a device function's return value.
    StParamAt {
        ty: Ty,
        name: String,
        offset: u32,
        a: Value,
    },
    /// A call sequence: `{ .param` slots, `st.param` of the arguments,
    /// `call.uni (retval0), func, (param0, …);`, `ld.param` of the returns
    /// `}` (the block NVRTC emits; `seq` numbers it in comments).
    Call {
        seq: u32,
        func: String,
        args: Vec<(Ty, Value)>,
        rets: Vec<(Ty, RegId)>,
    },
    Ld {
        space: Space,
        ty: Ty,
        d: Vec<RegId>,
        addr: Addr,
    },
    St {
        space: Space,
        ty: Ty,
        v: Vec<Value>,
        addr: Addr,
    },
    Atom {
        space: Space,
        op: AtomOp,
        ty: Ty,
        d: RegId,
        addr: Addr,
        b: Value,
        c: Option<Value>,
    },
    BarSync,
    /// `barrier.sync 0`: the CTA barrier without `.aligned`, so threads may
    /// reach it at different instructions (PTX 6.0)
    BarrierSync,
    /// `bar.warp.sync mask` (sm_70+, PTX 6.0)
    BarWarpSync {
        mask: u32,
    },
    Shfl {
        mode: ShflMode,
        d: RegId,
        a: Value,
        b: Value,
        c: Value,
        mask: u32,
    },
    VoteBallot {
        d: RegId,
        p: RegId,
        mask: u32,
    },
    VoteAny {
        all: bool,
        d: RegId,
        p: RegId,
        mask: u32,
    },
    /// `elect.sync d|p, mask`: `d` the leader's lane, `p` true in the
    /// leader only.
    Elect {
        d: RegId,
        p: RegId,
        mask: u32,
    },
    Redux {
        op: ReduxOp,
        ty: Ty,
        d: RegId,
        a: RegId,
        mask: u32,
    },
    /// `mapa.shared::cluster.u32 d, a, rank`
    Mapa {
        d: RegId,
        a: RegId,
        rank: Value,
    },
    /// `mov.pred d, %is_explicit_cluster`
    IsExplicitCluster {
        d: RegId,
    },
    /// `mov.u64 d, %clock64`: the SM's cycle counter.
    Clock64 {
        d: RegId,
    },
    /// `barrier.cluster.arrive{.relaxed}`
    ClusterArrive(ClusterArrive),
    /// `barrier.cluster.wait` (acquire, the ISA's default)
    ClusterWait,
    /// `fence.acq_rel.cluster`
    FenceCluster,
    /// `mbarrier.init.shared::cta.b64 [bar], count`
    MbarInit {
        bar: RegId,
        count: Value,
    },
    /// `mbarrier.arrive{.expect_tx}.shared::cta.b64 state, [bar]{, tx}`
    MbarArrive {
        state: RegId,
        bar: RegId,
        tx: Option<Value>,
    },
    /// `mbarrier.arrive.release.cluster.shared::cluster.b64 _, [bar]` (a
    /// barrier of any CTA of the cluster, from `mapa`)
    MbarArriveRemote {
        bar: RegId,
    },
    /// `mbarrier.try_wait.parity.shared::cta.b64 p, [bar], parity`
    MbarTryWait {
        p: RegId,
        bar: RegId,
        parity: Value,
    },
    /// `fence.mbarrier_init.release.cluster`
    FenceMbarInit,
    /// `fence.proxy.async.shared::cta`
    FenceProxyAsync,
    /// `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes
    /// {.multicast::cluster} [dst], [src], size, [bar]{, mask}`
    CpAsyncBulk {
        dst: RegId,
        src: RegId,
        size: Value,
        bar: RegId,
        mask: Option<Value>,
    },
    /// `cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes
    /// {.multicast::cluster} [dst], [map, {coords}], [bar]{, mask}`
    CpAsyncBulkTensor {
        dst: RegId,
        map: RegId,
        coords: Vec<RegId>,
        bar: RegId,
        mask: Option<Value>,
    },
    Label(u32),
    Bra {
        target: u32,
        uni: bool,
    },
    Ret,
    Comment(String),
}

/// Conversion rounding modifiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum CvtRnd {
    Float(Rounding),
    Int(IntRounding),
}

/// An instruction: an operation with an optional guard predicate.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Instr {
    pub guard: Option<(RegId, bool)>,
    pub op: Op,
}

mod uses;
