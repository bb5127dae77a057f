//! What an [`Op`] reads and writes (its register operands) and which
//! target feature it needs: the queries the builder's checks and the
//! printer's `.version` choice make of the IR.

use super::*;

impl Op {
    /// Every register operand, with whether the operation reads it (`true`)
    /// or writes it (`false`; `advance`'s in-place add writes and reads its
    /// register).
    pub(crate) fn for_each_reg(&self, mut f: impl FnMut(RegId, bool)) {
        let v = |v: &Value, f: &mut dyn FnMut(RegId, bool)| {
            if let Value::Reg(r) = v {
                f(*r, true);
            }
        };
        let addr = |a: &Addr, f: &mut dyn FnMut(RegId, bool)| {
            if let AddrBase::Reg(r) = a.base {
                f(r, true);
            }
        };
        match self {
            Op::Mov { d, a, .. } | Op::Unary { d, a, .. } | Op::Cvt { d, a, .. } => {
                v(a, &mut f);
                f(*d, false);
            }
            Op::Mapa { d, a, rank } => {
                f(*a, true);
                v(rank, &mut f);
                f(*d, false);
            }
            Op::MovSpecial { d, .. }
            | Op::IsExplicitCluster { d }
            | Op::Clock64 { d }
            | Op::MovVarAddr { d, .. }
            | Op::LdParam { d, .. }
            | Op::ParamAddr { d, .. }
            | Op::LdParamAt { d, .. } => f(*d, false),
            Op::StParamAt { a, .. } => v(a, &mut f),
            Op::Call { args, rets, .. } => {
                for (_, a) in args {
                    v(a, &mut f);
                }
                for (_, d) in rets {
                    f(*d, false);
                }
            }
            Op::Int { d, a, b, .. }
            | Op::MulWide { d, a, b, .. }
            | Op::Float { d, a, b, .. }
            | Op::FMinMax { d, a, b, .. }
            | Op::Setp { d, a, b, .. } => {
                v(a, &mut f);
                v(b, &mut f);
                f(*d, false);
            }
            Op::Mad { d, a, b, c, .. }
            | Op::Fma { d, a, b, c, .. }
            | Op::Bfe {
                d,
                a,
                pos: b,
                len: c,
                ..
            }
            | Op::Prmt {
                d, a, b, sel: c, ..
            } => {
                v(a, &mut f);
                v(b, &mut f);
                v(c, &mut f);
                f(*d, false);
            }
            Op::Bfi {
                d, a, b, pos, len, ..
            } => {
                for x in [a, b, pos, len] {
                    v(x, &mut f);
                }
                f(*d, false);
            }
            Op::Selp { d, a, b, p, .. } => {
                v(a, &mut f);
                v(b, &mut f);
                f(*p, true);
                f(*d, false);
            }
            Op::PredLogic { d, a, b, .. }
            | Op::Pack2x16 {
                d, lo: a, hi: b, ..
            } => {
                f(*a, true);
                f(*b, true);
                f(*d, false);
            }
            Op::PredNot { d, a }
            | Op::CvtFromFp8x2 { d, a, .. }
            | Op::CvtFromE2m1x2 { d, a }
            | Op::CvtFromUe8m0x2 { d, a }
            | Op::CvtaGlobal { d, a }
            | Op::Redux { d, a, .. } => {
                f(*a, true);
                f(*d, false);
            }
            Op::VoteBallot { d, p, .. } | Op::VoteAny { d, p, .. } => {
                f(*p, true);
                f(*d, false);
            }
            Op::Elect { d, p, .. } => {
                f(*d, false);
                f(*p, false);
            }
            Op::CvtToFp8x2 { d, hi, lo, .. }
            | Op::CvtToE2m1x2 { d, hi, lo }
            | Op::CvtToUe8m0x2 { d, hi, lo, .. } => {
                v(hi, &mut f);
                v(lo, &mut f);
                f(*d, false);
            }
            Op::CvtToHalf2 { d, hi, lo, .. } => {
                v(hi, &mut f);
                v(lo, &mut f);
                f(*d, false);
            }
            Op::CvtToTf32 { d, a } => {
                v(a, &mut f);
                f(*d, false);
            }
            Op::Mma { d, a, b, c, .. } => {
                for r in a.iter().chain(b).chain(c) {
                    f(*r, true);
                }
                for r in d {
                    f(*r, false);
                }
            }
            Op::Ldmatrix { d, addr: a, .. } => {
                addr(a, &mut f);
                for r in d {
                    f(*r, false);
                }
            }
            Op::CpAsync {
                dst, src, src_size, ..
            } => {
                addr(dst, &mut f);
                addr(src, &mut f);
                if let Some(n) = src_size {
                    v(n, &mut f);
                }
            }
            Op::MbarInit { bar, count } => {
                f(*bar, true);
                v(count, &mut f);
            }
            Op::MbarArrive { state, bar, tx } => {
                f(*bar, true);
                if let Some(x) = tx {
                    v(x, &mut f);
                }
                f(*state, false);
            }
            Op::MbarArriveRemote { bar } => f(*bar, true),
            Op::MbarTryWait { p, bar, parity } => {
                f(*bar, true);
                v(parity, &mut f);
                f(*p, false);
            }
            Op::CpAsyncBulk {
                dst,
                src,
                size,
                bar,
                mask,
            } => {
                f(*dst, true);
                f(*src, true);
                v(size, &mut f);
                f(*bar, true);
                if let Some(m) = mask {
                    v(m, &mut f);
                }
            }
            Op::CpAsyncBulkTensor {
                dst,
                map,
                coords,
                bar,
                mask,
            } => {
                f(*dst, true);
                f(*map, true);
                for c in coords {
                    f(*c, true);
                }
                f(*bar, true);
                if let Some(m) = mask {
                    v(m, &mut f);
                }
            }
            Op::Pack4x8 { d, b } => {
                for r in b {
                    f(*r, true);
                }
                f(*d, false);
            }
            Op::Unpack2x16 { lo, hi, a } => {
                f(*a, true);
                f(*lo, false);
                f(*hi, false);
            }
            Op::Ld { d, addr: a, .. } => {
                addr(a, &mut f);
                for r in d {
                    f(*r, false);
                }
            }
            Op::St {
                v: vals, addr: a, ..
            } => {
                addr(a, &mut f);
                for x in vals {
                    v(x, &mut f);
                }
            }
            Op::Atom {
                d, addr: a, b, c, ..
            } => {
                addr(a, &mut f);
                v(b, &mut f);
                if let Some(c) = c {
                    v(c, &mut f);
                }
                f(*d, false);
            }
            Op::Shfl { d, a, b, c, .. } => {
                v(a, &mut f);
                v(b, &mut f);
                v(c, &mut f);
                f(*d, false);
            }
            Op::BarSync
            | Op::BarrierSync
            | Op::BarWarpSync { .. }
            | Op::Label(_)
            | Op::Bra { .. }
            | Op::Ret
            | Op::CpAsyncCommit
            | Op::CpAsyncWait(_)
            | Op::ClusterArrive(_)
            | Op::ClusterWait
            | Op::FenceCluster
            | Op::FenceMbarInit
            | Op::FenceProxyAsync
            | Op::Comment(_) => {}
        }
    }

    /// The feature the operation needs, if not every target has it.
    pub(crate) fn feature(&self) -> Option<Feature> {
        match self {
            Op::Shfl { .. }
            | Op::VoteBallot { .. }
            | Op::VoteAny { .. }
            | Op::BarWarpSync { .. } => Some(Feature::WarpSync),
            Op::Redux { .. } => Some(Feature::Redux),
            Op::Elect { .. } => Some(Feature::Elect),
            Op::FMinMax { nan: true, .. } => Some(Feature::MinMaxNaN),
            Op::CvtToFp8x2 { .. } | Op::CvtFromFp8x2 { .. } => Some(Feature::Fp8Cvt),
            Op::CvtToE2m1x2 { .. }
            | Op::CvtFromE2m1x2 { .. }
            | Op::CvtToUe8m0x2 { .. }
            | Op::CvtFromUe8m0x2 { .. } => Some(Feature::BlockScaleCvt),
            Op::CvtToHalf2 {
                fmt: InputFormat::Bf16,
                ..
            } => Some(Feature::Bf16Cvt),
            Op::CvtToHalf2 { .. } => Some(Feature::F16x2Cvt),
            Op::CvtToTf32 { .. } => Some(Feature::Tf32Cvt),
            Op::Mma { .. } => Some(Feature::MmaSync),
            Op::Ldmatrix { .. } => Some(Feature::Ldmatrix),
            Op::CpAsync { .. } | Op::CpAsyncCommit | Op::CpAsyncWait(_) => Some(Feature::CpAsync),
            Op::ClusterArrive(ClusterArrive::Relaxed) => Some(Feature::ClusterRelaxed),
            Op::MbarInit { .. }
            | Op::MbarArrive { .. }
            | Op::MbarArriveRemote { .. }
            | Op::MbarTryWait { .. }
            | Op::FenceMbarInit
            | Op::FenceProxyAsync
            | Op::CpAsyncBulk { .. } => Some(Feature::BulkCopy),
            Op::CpAsyncBulkTensor { .. } | Op::ParamAddr { .. } => Some(Feature::TensorCopy),
            Op::Mapa { .. }
            | Op::IsExplicitCluster { .. }
            | Op::ClusterArrive(_)
            | Op::ClusterWait
            | Op::FenceCluster
            | Op::Ld {
                space: Space::SharedCluster,
                ..
            }
            | Op::St {
                space: Space::SharedCluster,
                ..
            } => Some(Feature::Cluster),
            Op::MovSpecial { s, .. } if s.is_cluster() => Some(Feature::Cluster),
            _ => None,
        }
    }
}
