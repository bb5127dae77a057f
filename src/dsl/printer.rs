//! The printer: the only code in the crate that spells PTX text. It turns a
//! finished kernel (IR plus declarations) into a module.

use std::fmt::Write;

use super::ir::*;
use super::types::{RegClass, RegId, Ty};
use crate::abi::ParamDesc;
use crate::target::{PtxVersion, Sm};
use crate::tensor_core::InputFormat;

mod calls;
mod text;
pub(crate) use calls::{FUNC_RETVAL, func_param_name, ret_layout};
use calls::{call_text, param_addr, param_decl, param_name, slot_decl};
pub(crate) use text::reg;
use text::{class_decl, ty, val};

/// Everything the printer needs about one kernel.
pub(crate) struct KernelText<'a> {
    pub name: &'a str,
    pub sm: Sm,
    pub version: PtxVersion,
    pub params: &'a [ParamDesc],
    pub reqntid: Option<(u32, u32, u32)>,
    pub maxntid: Option<(u32, u32, u32)>,
    pub min_ctas_per_sm: Option<u32>,
    /// `.reqnctapercluster x, y, z` (sm_90+).
    pub cluster_dims: Option<(u32, u32, u32)>,
    pub reg_counts: &'a [(RegClass, u32)],
    pub shared: &'a [SharedDecl],
    pub body: &'a [Instr],
    /// Shared arrays of the device functions called (module scope).
    pub module_shared: &'a [SharedDecl],
    /// The device functions called, printed (callees before callers).
    pub funcs: &'a [&'a str],
}

/// Everything the printer needs about one device function (`.func`).
pub(crate) struct FuncText<'a> {
    pub name: &'a str,
    pub params: &'a [Ty],
    pub rets: &'a [Ty],
    pub reg_counts: &'a [(RegClass, u32)],
    pub body: &'a [Instr],
}

/// A `.shared` array declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SharedDecl {
    pub name: String,
    pub align: u32,
    pub bytes: u32,
    /// The dynamic array (`.extern .shared … name[]`, module scope; its
    /// size is the launch's dynamic shared memory): `bytes` is 0.
    pub dynamic: bool,
}

fn addr(a: &Addr) -> String {
    let base = match &a.base {
        AddrBase::Reg(r) => reg(*r),
        AddrBase::Var(v) => v.clone(),
    };
    match a.offset {
        0 => format!("[{base}]"),
        o => format!("[{base}+{o}]"),
    }
}

fn rnd(r: Rounding) -> &'static str {
    match r {
        Rounding::Rn => ".rn",
        Rounding::Rz => ".rz",
        Rounding::Rm => ".rm",
        Rounding::Rp => ".rp",
    }
}

fn irnd(r: IntRounding) -> &'static str {
    match r {
        IntRounding::Rni => ".rni",
        IntRounding::Rzi => ".rzi",
        IntRounding::Rmi => ".rmi",
        IntRounding::Rpi => ".rpi",
    }
}

fn cmp(c: Cmp, t: Ty) -> &'static str {
    let unsigned = matches!(t, Ty::U32 | Ty::U64 | Ty::U16 | Ty::U8);
    match c {
        Cmp::Eq => "eq",
        Cmp::Ne => "ne",
        Cmp::Lt if unsigned => "lo",
        Cmp::Le if unsigned => "ls",
        Cmp::Gt if unsigned => "hi",
        Cmp::Ge if unsigned => "hs",
        Cmp::Lt => "lt",
        Cmp::Le => "le",
        Cmp::Gt => "gt",
        Cmp::Ge => "ge",
        Cmp::Equ => "equ",
        Cmp::Neu => "neu",
        Cmp::Ltu => "ltu",
        Cmp::Leu => "leu",
        Cmp::Gtu => "gtu",
        Cmp::Geu => "geu",
        Cmp::Num => "num",
        Cmp::Nan => "nan",
    }
}

fn special(s: Special) -> &'static str {
    match s {
        Special::TidX => "%tid.x",
        Special::TidY => "%tid.y",
        Special::TidZ => "%tid.z",
        Special::NtidX => "%ntid.x",
        Special::NtidY => "%ntid.y",
        Special::NtidZ => "%ntid.z",
        Special::CtaidX => "%ctaid.x",
        Special::CtaidY => "%ctaid.y",
        Special::CtaidZ => "%ctaid.z",
        Special::NctaidX => "%nctaid.x",
        Special::NctaidY => "%nctaid.y",
        Special::NctaidZ => "%nctaid.z",
        Special::LaneId => "%laneid",
        Special::ClusterCtaRank => "%cluster_ctarank",
        Special::ClusterNctaRank => "%cluster_nctarank",
        Special::ClusterIdX => "%clusterid.x",
        Special::ClusterIdY => "%clusterid.y",
        Special::ClusterIdZ => "%clusterid.z",
        Special::NclusterIdX => "%nclusterid.x",
        Special::NclusterIdY => "%nclusterid.y",
        Special::NclusterIdZ => "%nclusterid.z",
        Special::ClusterCtaidX => "%cluster_ctaid.x",
        Special::ClusterCtaidY => "%cluster_ctaid.y",
        Special::ClusterCtaidZ => "%cluster_ctaid.z",
        Special::ClusterNctaidX => "%cluster_nctaid.x",
        Special::ClusterNctaidY => "%cluster_nctaid.y",
        Special::ClusterNctaidZ => "%cluster_nctaid.z",
    }
}

fn space(s: Space) -> &'static str {
    match s {
        Space::Global => ".global",
        Space::GlobalNc => ".global.nc",
        Space::Shared => ".shared",
        Space::SharedCluster => ".shared::cluster",
    }
}

fn vec_prefix(n: usize) -> &'static str {
    match n {
        1 => "",
        2 => ".v2",
        _ => ".v4",
    }
}

fn braced(items: &[String]) -> String {
    if items.len() == 1 {
        items[0].clone()
    } else {
        format!("{{{}}}", items.join(", "))
    }
}

fn fp8(f: Fp8Format) -> &'static str {
    match f {
        Fp8Format::E4M3 => ".e4m3x2",
        Fp8Format::E5M2 => ".e5m2x2",
    }
}

fn label(id: u32) -> String {
    format!("$L_{id}")
}

/// The text of one operation (without guard, indentation or newline).
fn op_text(op: &Op) -> String {
    match op {
        Op::Mov { ty: t, d, a } => format!("mov{} {}, {};", ty(*t), reg(*d), val(*a)),
        Op::MovSpecial { d, s } => format!("mov.u32 {}, {};", reg(*d), special(*s)),
        Op::MovVarAddr { d, var } => format!("mov.u32 {}, {};", reg(*d), var),
        Op::Int { op, ty: t, d, a, b } => {
            let (name, t) = match op {
                IntOp::Add => ("add", *t),
                IntOp::Sub => ("sub", *t),
                IntOp::MulLo => ("mul.lo", *t),
                IntOp::MulHi => ("mul.hi", *t),
                IntOp::Div => ("div", *t),
                IntOp::Rem => ("rem", *t),
                IntOp::Min => ("min", *t),
                IntOp::Max => ("max", *t),
                IntOp::And => ("and", t.bits()),
                IntOp::Or => ("or", t.bits()),
                IntOp::Xor => ("xor", t.bits()),
                IntOp::Shl => ("shl", t.bits()),
                IntOp::Shr => ("shr", *t),
            };
            format!("{name}{} {}, {}, {};", ty(t), reg(*d), val(*a), val(*b))
        }
        Op::MulWide { signed, d, a, b } => {
            let t = if *signed { Ty::S32 } else { Ty::U32 };
            format!("mul.wide{} {}, {}, {};", ty(t), reg(*d), val(*a), val(*b))
        }
        Op::Mad {
            wide,
            ty: t,
            d,
            a,
            b,
            c,
        } => {
            let m = if *wide { "mad.wide" } else { "mad.lo" };
            format!(
                "{m}{} {}, {}, {}, {};",
                ty(*t),
                reg(*d),
                val(*a),
                val(*b),
                val(*c)
            )
        }
        Op::Float {
            op,
            rnd: r,
            ty: t,
            d,
            a,
            b,
        } => {
            let name = match op {
                FloatOp::Add => "add",
                FloatOp::Sub => "sub",
                FloatOp::Mul => "mul",
                FloatOp::Div => "div",
            };
            format!(
                "{name}{}{} {}, {}, {};",
                rnd(*r),
                ty(*t),
                reg(*d),
                val(*a),
                val(*b)
            )
        }
        Op::Fma {
            rnd: r,
            ty: t,
            d,
            a,
            b,
            c,
        } => {
            format!(
                "fma{}{} {}, {}, {}, {};",
                rnd(*r),
                ty(*t),
                reg(*d),
                val(*a),
                val(*b),
                val(*c)
            )
        }
        Op::FMinMax {
            max,
            nan,
            ty: t,
            d,
            a,
            b,
        } => {
            let m = if *max { "max" } else { "min" };
            let n = if *nan { ".NaN" } else { "" };
            format!("{m}{n}{} {}, {}, {};", ty(*t), reg(*d), val(*a), val(*b))
        }
        Op::Unary { op, ty: t, d, a } => {
            let (name, t) = match op {
                UnOp::Not => ("not".to_string(), t.bits()),
                UnOp::Neg => ("neg".to_string(), *t),
                UnOp::Abs => ("abs".to_string(), *t),
                UnOp::Clz => ("clz".to_string(), t.bits()),
                UnOp::Popc => ("popc".to_string(), t.bits()),
                UnOp::Brev => ("brev".to_string(), t.bits()),
                UnOp::Sqrt(r) => (format!("sqrt{}", rnd(*r)), *t),
                UnOp::Rcp(r) => (format!("rcp{}", rnd(*r)), *t),
            };
            format!("{name}{} {}, {};", ty(t), reg(*d), val(*a))
        }
        Op::Bfe {
            ty: t,
            d,
            a,
            pos,
            len,
        } => {
            format!(
                "bfe{} {}, {}, {}, {};",
                ty(*t),
                reg(*d),
                val(*a),
                val(*pos),
                val(*len)
            )
        }
        Op::Bfi {
            ty: t,
            d,
            a,
            b,
            pos,
            len,
        } => format!(
            "bfi{} {}, {}, {}, {}, {};",
            ty(t.bits()),
            reg(*d),
            val(*a),
            val(*b),
            val(*pos),
            val(*len)
        ),
        Op::Prmt { d, a, b, sel } => {
            format!(
                "prmt.b32 {}, {}, {}, {};",
                reg(*d),
                val(*a),
                val(*b),
                val(*sel)
            )
        }
        Op::Setp {
            cmp: c,
            ty: t,
            d,
            a,
            b,
        } => {
            format!(
                "setp.{}{} {}, {}, {};",
                cmp(*c, *t),
                ty(*t),
                reg(*d),
                val(*a),
                val(*b)
            )
        }
        Op::Selp { ty: t, d, a, b, p } => {
            format!(
                "selp{} {}, {}, {}, {};",
                ty(*t),
                reg(*d),
                val(*a),
                val(*b),
                reg(*p)
            )
        }
        Op::PredLogic { op, d, a, b } => {
            let name = match op {
                IntOp::And => "and",
                IntOp::Or => "or",
                _ => "xor",
            };
            format!("{name}.pred {}, {}, {};", reg(*d), reg(*a), reg(*b))
        }
        Op::PredNot { d, a } => format!("not.pred {}, {};", reg(*d), reg(*a)),
        Op::Cvt {
            dt,
            st,
            rnd: r,
            d,
            a,
        } => {
            let m = match r {
                None => String::new(),
                Some(CvtRnd::Float(r)) => rnd(*r).to_string(),
                Some(CvtRnd::Int(r)) => irnd(*r).to_string(),
            };
            format!("cvt{m}{}{} {}, {};", ty(*dt), ty(*st), reg(*d), val(*a))
        }
        Op::CvtToFp8x2 { fmt, d, hi, lo } => format!(
            "cvt.rn.satfinite{}.f32 {}, {}, {};",
            fp8(*fmt),
            reg(*d),
            val(*hi),
            val(*lo)
        ),
        Op::CvtFromFp8x2 { fmt, d, a } => {
            format!("cvt.rn.f16x2{} {}, {};", fp8(*fmt), reg(*d), reg(*a))
        }
        Op::CvtToE2m1x2 { d, hi, lo } => format!(
            "cvt.rn.satfinite.e2m1x2.f32 {}, {}, {};",
            reg(*d),
            val(*hi),
            val(*lo)
        ),
        Op::CvtFromE2m1x2 { d, a } => format!("cvt.rn.f16x2.e2m1x2 {}, {};", reg(*d), reg(*a)),
        Op::CvtToUe8m0x2 { rnd, d, hi, lo } => format!(
            "cvt{}.satfinite.ue8m0x2.f32 {}, {}, {};",
            match rnd {
                Ue8m0Rounding::Rz => ".rz",
                Ue8m0Rounding::Rp => ".rp",
            },
            reg(*d),
            val(*hi),
            val(*lo)
        ),
        Op::CvtFromUe8m0x2 { d, a } => {
            format!("cvt.rn.bf16x2.ue8m0x2 {}, {};", reg(*d), reg(*a))
        }
        Op::CvtToHalf2 { fmt, d, hi, lo } => format!(
            "cvt.rn.{}x2.f32 {}, {}, {};",
            fmt.ptx_name(),
            reg(*d),
            val(*hi),
            val(*lo)
        ),
        Op::CvtToTf32 { d, a } => format!("cvt.rna.tf32.f32 {}, {};", reg(*d), val(*a)),
        Op::Mma { fmt, d, a, b, c } => {
            let list = |rs: &[RegId]| rs.iter().map(|r| reg(*r)).collect::<Vec<_>>().join(", ");
            let (k, t) = (
                if *fmt == InputFormat::Tf32 { 8 } else { 16 },
                fmt.ptx_name(),
            );
            format!(
                "mma.sync.aligned.m16n8k{k}.row.col.f32.{t}.{t}.f32 {{{}}}, {{{}}}, {{{}}}, {{{}}};",
                list(d),
                list(a),
                list(b),
                list(c)
            )
        }
        Op::Ldmatrix { trans, d, addr: a } => {
            let ds: Vec<String> = d.iter().map(|r| reg(*r)).collect();
            format!(
                "ldmatrix.sync.aligned.m8n8.x{}{}.shared.b16 {{{}}}, {};",
                d.len(),
                if *trans { ".trans" } else { "" },
                ds.join(", "),
                addr(a)
            )
        }
        Op::CpAsync {
            cg,
            size,
            dst,
            src,
            src_size,
        } => format!(
            "cp.async.{}.shared.global {}, {}, {size}{};",
            if *cg { "cg" } else { "ca" },
            addr(dst),
            addr(src),
            src_size.map_or(String::new(), |n| format!(", {}", val(n)))
        ),
        Op::CpAsyncCommit => "cp.async.commit_group;".to_string(),
        Op::CpAsyncWait(Some(n)) => format!("cp.async.wait_group {n};"),
        Op::CpAsyncWait(None) => "cp.async.wait_all;".to_string(),
        Op::Pack4x8 { d, b } => format!(
            "mov.b32 {}, {{{}, {}, {}, {}}};",
            reg(*d),
            reg(b[0]),
            reg(b[1]),
            reg(b[2]),
            reg(b[3])
        ),
        Op::Unpack2x16 { lo, hi, a } => {
            format!("mov.b32 {{{}, {}}}, {};", reg(*lo), reg(*hi), reg(*a))
        }
        Op::Pack2x16 { d, lo, hi } => {
            format!("mov.b32 {}, {{{}, {}}};", reg(*d), reg(*lo), reg(*hi))
        }
        Op::LdParam { ty: t, d, name } => {
            format!("ld.param{} {}, [{}];", ty(*t), reg(*d), param_name(name))
        }
        Op::CvtaGlobal { d, a } => format!("cvta.to.global.u64 {}, {};", reg(*d), reg(*a)),
        Op::ParamAddr { d, name } => format!(
            "mov.u64 {0}, {1};\n\tcvta.param.u64 {0}, {0};",
            reg(*d),
            param_name(name)
        ),
        Op::CpAsyncBulkTensor {
            dst,
            map,
            coords,
            bar,
            mask,
        } => format!(
            "cp.async.bulk.tensor.{}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes{} [{}], [{}, {{{}}}], [{}]{};",
            coords.len(),
            mask.map_or("", |_| ".multicast::cluster"),
            reg(*dst),
            reg(*map),
            coords
                .iter()
                .map(|c| reg(*c))
                .collect::<Vec<_>>()
                .join(", "),
            reg(*bar),
            mask.map_or(String::new(), |m| format!(", {}", val(m)))
        ),
        Op::LdParamAt {
            ty: t,
            d,
            name,
            offset,
        } => format!(
            "ld.param{} {}, {};",
            ty(*t),
            reg(*d),
            param_addr(name, *offset)
        ),
        Op::StParamAt {
            ty: t,
            name,
            offset,
            a,
        } => format!(
            "st.param{} {}, {};",
            ty(*t),
            param_addr(name, *offset),
            val(*a)
        ),
        Op::Call {
            seq,
            func,
            args,
            rets,
        } => call_text(*seq, func, args, rets),
        Op::Ld {
            space: s,
            ty: t,
            d,
            addr: a,
        } => {
            let ds: Vec<String> = d.iter().map(|r| reg(*r)).collect();
            format!(
                "ld{}{}{} {}, {};",
                space(*s),
                vec_prefix(d.len()),
                ty(*t),
                braced(&ds),
                addr(a)
            )
        }
        Op::St {
            space: s,
            ty: t,
            v,
            addr: a,
        } => {
            let vs: Vec<String> = v.iter().map(|x| val(*x)).collect();
            format!(
                "st{}{}{} {}, {};",
                space(*s),
                vec_prefix(v.len()),
                ty(*t),
                addr(a),
                braced(&vs)
            )
        }
        Op::Atom {
            space: s,
            op,
            ty: t,
            d,
            addr: a,
            b,
            c,
        } => {
            let (name, t) = match op {
                AtomOp::Add => ("add", *t),
                AtomOp::Min => ("min", *t),
                AtomOp::Max => ("max", *t),
                AtomOp::Exch => ("exch", t.bits()),
                AtomOp::Cas => ("cas", t.bits()),
                AtomOp::And => ("and", t.bits()),
                AtomOp::Or => ("or", t.bits()),
            };
            let extra = c.map(|c| format!(", {}", val(c))).unwrap_or_default();
            format!(
                "atom{}.{name}{} {}, {}, {}{extra};",
                space(*s),
                ty(t),
                reg(*d),
                addr(a),
                val(*b)
            )
        }
        Op::BarSync => "bar.sync 0;".to_string(),
        Op::BarrierSync => "barrier.sync 0;".to_string(),
        Op::MbarInit { bar, count } => {
            format!(
                "mbarrier.init.shared::cta.b64 [{}], {};",
                reg(*bar),
                val(*count)
            )
        }
        Op::MbarArrive {
            state,
            bar,
            tx: None,
        } => format!(
            "mbarrier.arrive.shared::cta.b64 {}, [{}];",
            reg(*state),
            reg(*bar)
        ),
        Op::MbarArrive {
            state,
            bar,
            tx: Some(tx),
        } => format!(
            "mbarrier.arrive.expect_tx.shared::cta.b64 {}, [{}], {};",
            reg(*state),
            reg(*bar),
            val(*tx)
        ),
        Op::MbarArriveRemote { bar } => format!(
            "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [{}];",
            reg(*bar)
        ),
        Op::MbarTryWait { p, bar, parity } => format!(
            "mbarrier.try_wait.parity.shared::cta.b64 {}, [{}], {};",
            reg(*p),
            reg(*bar),
            val(*parity)
        ),
        Op::FenceMbarInit => "fence.mbarrier_init.release.cluster;".to_string(),
        Op::FenceProxyAsync => "fence.proxy.async.shared::cta;".to_string(),
        Op::CpAsyncBulk {
            dst,
            src,
            size,
            bar,
            mask,
        } => format!(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes{} [{}], [{}], {}, [{}]{};",
            if mask.is_some() {
                ".multicast::cluster"
            } else {
                ""
            },
            reg(*dst),
            reg(*src),
            val(*size),
            reg(*bar),
            mask.map_or(String::new(), |m| format!(", {}", val(m)))
        ),
        Op::Mapa { d, a, rank } => format!(
            "mapa.shared::cluster.u32 {}, {}, {};",
            reg(*d),
            reg(*a),
            val(*rank)
        ),
        Op::IsExplicitCluster { d } => format!("mov.pred {}, %is_explicit_cluster;", reg(*d)),
        Op::Clock64 { d } => format!("mov.u64 {}, %clock64;", reg(*d)),
        Op::ClusterArrive(ClusterArrive::Release) => "barrier.cluster.arrive;".to_string(),
        Op::ClusterArrive(ClusterArrive::Relaxed) => "barrier.cluster.arrive.relaxed;".to_string(),
        Op::ClusterWait => "barrier.cluster.wait;".to_string(),
        Op::FenceCluster => "fence.acq_rel.cluster;".to_string(),
        Op::BarWarpSync { mask } => format!("bar.warp.sync {mask:#x};"),
        Op::Shfl {
            mode,
            d,
            a,
            b,
            c,
            mask,
        } => {
            let m = match mode {
                ShflMode::Up => "up",
                ShflMode::Down => "down",
                ShflMode::Bfly => "bfly",
                ShflMode::Idx => "idx",
            };
            format!(
                "shfl.sync.{m}.b32 {}, {}, {}, {}, {mask:#x};",
                reg(*d),
                val(*a),
                val(*b),
                val(*c)
            )
        }
        Op::VoteBallot { d, p, mask } => {
            format!("vote.sync.ballot.b32 {}, {}, {mask:#x};", reg(*d), reg(*p))
        }
        Op::Elect { d, p, mask } => {
            format!("elect.sync {}|{}, {mask:#x};", reg(*d), reg(*p))
        }
        Op::VoteAny { all, d, p, mask } => {
            let m = if *all { "all" } else { "any" };
            format!("vote.sync.{m}.pred {}, {}, {mask:#x};", reg(*d), reg(*p))
        }
        Op::Redux {
            op,
            ty: t,
            d,
            a,
            mask,
        } => {
            let (name, t) = match op {
                ReduxOp::Add => ("add", *t),
                ReduxOp::Min => ("min", *t),
                ReduxOp::Max => ("max", *t),
                ReduxOp::And => ("and", t.bits()),
                ReduxOp::Or => ("or", t.bits()),
                ReduxOp::Xor => ("xor", t.bits()),
            };
            format!(
                "redux.sync.{name}{} {}, {}, {mask:#x};",
                ty(t),
                reg(*d),
                reg(*a)
            )
        }
        Op::Label(id) => format!("{}:", label(*id)),
        Op::Bra { target, uni } => {
            format!("bra{} {};", if *uni { ".uni" } else { "" }, label(*target))
        }
        Op::Ret => "ret;".to_string(),
        Op::Comment(c) => format!("// {}", c.replace('\n', " ")),
    }
}

/// The PTX text of a finished kernel.
/// Module texts printed so far in this process (see
/// [`crate::dsl::memo::modules_printed`]).
static PRINTED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many module texts [`print_module`] has produced in this process.
pub(crate) fn printed() -> u64 {
    PRINTED.load(std::sync::atomic::Ordering::Relaxed)
}

pub(crate) fn print_module(k: &KernelText<'_>) -> String {
    PRINTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut s = String::with_capacity(256 + 40 * k.body.len());
    let _ = writeln!(s, "//");
    let _ = writeln!(
        s,
        "// Generated by ptxsmith {} ({} for {}).",
        env!("CARGO_PKG_VERSION"),
        k.name,
        k.sm
    );
    let _ = writeln!(s, "//");
    let _ = writeln!(s, ".version {}", k.version);
    let _ = writeln!(s, ".target {}", k.sm.name());
    let _ = writeln!(s, ".address_size 64");
    let _ = writeln!(s);
    for sh in k.shared.iter().filter(|sh| sh.dynamic) {
        let _ = writeln!(s, ".extern .shared .align {} .b8 {}[];", sh.align, sh.name);
        let _ = writeln!(s);
    }
    for sh in k.module_shared {
        if sh.dynamic {
            let _ = writeln!(s, ".extern .shared .align {} .b8 {}[];", sh.align, sh.name);
        } else {
            let _ = writeln!(
                s,
                ".shared .align {} .b8 {}[{}];",
                sh.align, sh.name, sh.bytes
            );
        }
        let _ = writeln!(s);
    }
    for f in k.funcs {
        let _ = writeln!(s, "{f}");
    }
    let params: Vec<String> = k
        .params
        .iter()
        .map(|p| format!("\t{}", param_decl(p)))
        .collect();
    let _ = writeln!(s, ".visible .entry {}(\n{}\n)", k.name, params.join(",\n"));
    if let Some((x, y, z)) = k.reqntid {
        let _ = writeln!(s, ".reqntid {x}, {y}, {z}");
    }
    if let Some((x, y, z)) = k.maxntid {
        let _ = writeln!(s, ".maxntid {x}, {y}, {z}");
    }
    if let Some(n) = k.min_ctas_per_sm {
        let _ = writeln!(s, ".minnctapersm {n}");
    }
    if let Some((x, y, z)) = k.cluster_dims {
        let _ = writeln!(s, ".reqnctapercluster {x}, {y}, {z}");
    }
    let _ = writeln!(s, "{{");
    print_regs(&mut s, k.reg_counts);
    for sh in k.shared.iter().filter(|sh| !sh.dynamic) {
        let _ = writeln!(
            s,
            "\t.shared .align {} .b8 {}[{}];",
            sh.align, sh.name, sh.bytes
        );
    }
    let _ = writeln!(s);
    print_body(&mut s, k.body);
    let _ = writeln!(s, "}}");
    s
}

/// The register declarations of a kernel or function body.
fn print_regs(s: &mut String, reg_counts: &[(RegClass, u32)]) {
    for &(class, n) in reg_counts {
        if n > 0 {
            let (t, prefix) = class_decl(class);
            let _ = writeln!(s, "\t.reg {t} {prefix}<{n}>;");
        }
    }
}

/// The PTX text of a device function: `.func (ret) name(params) { … }`.
/// Its shared arrays are printed at module scope by the kernel that calls
/// it.
pub(crate) fn print_func(f: &FuncText<'_>) -> String {
    let mut s = String::with_capacity(128 + 40 * f.body.len());
    let ret = if f.rets.is_empty() {
        String::new()
    } else {
        format!("({}) ", slot_decl(FUNC_RETVAL, f.rets))
    };
    let params: Vec<String> = f
        .params
        .iter()
        .enumerate()
        .map(|(i, t)| format!("\t{}", slot_decl(&func_param_name(f.name, i), &[*t])))
        .collect();
    if params.is_empty() {
        let _ = writeln!(s, ".func {ret}{}()", f.name);
    } else {
        let _ = writeln!(s, ".func {ret}{}(\n{}\n)", f.name, params.join(",\n"));
    }
    let _ = writeln!(s, "{{");
    print_regs(&mut s, f.reg_counts);
    let _ = writeln!(s);
    print_body(&mut s, f.body);
    let _ = writeln!(s, "}}");
    s
}

/// The instructions of a body, one a line (labels unindented).
fn print_body(s: &mut String, body: &[Instr]) {
    for ins in body {
        let text = op_text(&ins.op);
        match (&ins.op, ins.guard) {
            (Op::Label(_), _) => {
                let _ = writeln!(s, "{text}");
            }
            (_, Some((p, neg))) => {
                let _ = writeln!(s, "\t@{}{} {text}", if neg { "!" } else { "" }, reg(p));
            }
            (_, None) => {
                let _ = writeln!(s, "\t{text}");
            }
        }
    }
}
