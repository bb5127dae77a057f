//! Instruction decoding: opcode and modifiers → [`Op`] with resolved
//! operands (arithmetic, logic, moves, control, warp collectives; `setp`
//! and `cvt` in [`super::decode_cvt`], memory in [`super::decode_mem`]).

use std::collections::HashMap;

use super::super::fp::{FOp, MiniFmt, Rnd};
use super::super::ir::*;
use super::directives::Stmt;
use super::lex::Tok;
use super::operands::{Cls, Opnd, Var, int_ty, operands, rnd_of};

pub(super) enum DErr {
    Parse(String),
    Unsup(String),
}

pub(super) fn unsup<T>(m: impl Into<String>) -> Result<T, DErr> {
    Err(DErr::Unsup(m.into()))
}
pub(super) fn perr<T>(m: impl Into<String>) -> Result<T, DErr> {
    Err(DErr::Parse(m.into()))
}

pub(super) struct Decoder<'a> {
    pub(super) regs: &'a HashMap<String, u32>,
    pub(super) vars: &'a HashMap<String, Var>,
    pub(super) labels: &'a HashMap<String, u32>,
    pub(super) sm: u32,
    pub(super) suffix: Option<char>,
    /// The A/B/C register slots of the `mma.sync`s decoded so far
    /// ([`Entry::mma`]).
    pub(super) mma: std::cell::RefCell<Vec<[u32; 10]>>,
    /// `.param` variables of call frames, which live in `.local`.
    pub(super) frame: &'a std::collections::HashSet<String>,
}

pub(super) fn blank_inst(op: Op) -> Inst {
    Inst {
        op,
        d: [NO_REG; 4],
        s: [Src::None; 5],
        off: 0,
        guard: NO_REG,
        guard_neg: false,
        neg: false,
        opcode: 0,
    }
}

impl Decoder<'_> {
    /// FP8 cvt exists from sm_89; the block-scale cvts (FP4 e2m1x2, UE8M0)
    /// only on arch-specific or family targets from sm_100 (`sm_100a`,
    /// `sm_120a`, `sm_100f`, …): ptxas refuses them on plain `sm_100` and
    /// on `sm_90a`.
    pub(super) fn check_mini_target(&self, fmt: MiniFmt) -> Result<(), DErr> {
        if fmt != MiniFmt::E2M1 && self.sm < 89 {
            return unsup(format!(
                "FP8 cvt needs sm_89+, module targets sm_{}",
                self.sm
            ));
        }
        if fmt == MiniFmt::E2M1 {
            return self.check_block_scale_target("FP4 (e2m1x2)");
        }
        Ok(())
    }

    pub(super) fn check_block_scale_target(&self, what: &str) -> Result<(), DErr> {
        if self.sm < 100 || self.suffix.is_none() {
            return unsup(format!(
                "{what} cvt needs an sm_100a/sm_120a-class target, module targets sm_{}{}",
                self.sm,
                self.suffix.map_or(String::new(), String::from)
            ));
        }
        Ok(())
    }

    pub(super) fn decode(&self, st: &Stmt, n_brauni: &mut u32) -> Result<(Inst, String), DErr> {
        let mut toks = &st.toks[..];
        let mut guard = NO_REG;
        let mut guard_neg = false;
        if toks.first() == Some(&Tok::P('@')) {
            let mut i = 1;
            if toks.get(1) == Some(&Tok::P('!')) {
                guard_neg = true;
                i = 2;
            }
            guard = match toks.get(i) {
                Some(Tok::Id(p)) => *self
                    .regs
                    .get(p)
                    .ok_or(DErr::Parse(format!("undeclared predicate `{p}`")))?,
                _ => return perr("bad guard predicate"),
            };
            toks = &toks[i + 1..];
        }
        let opname = match toks.first() {
            Some(Tok::Id(s)) => s.clone(),
            _ => return perr("expected an opcode"),
        };
        // the builtins' pseudo-instructions (`func`: no PTX token has a `#`)
        let builtin = match opname.as_str() {
            "call#vprintf" => Some((Op::Vprintf, 1, 2)),
            "call#__assertfail" => Some((Op::AssertFail, 0, 4)),
            "call#too_deep" => Some((Op::CallTooDeep, 0, 0)),
            _ => None,
        };
        if let Some((op, nd, ns)) = builtin {
            let ops = operands(&toks[1..])?;
            self.nops(&ops, nd + ns)?;
            let mut inst = blank_inst(op);
            for (d, o) in inst.d.iter_mut().zip(&ops[..nd]) {
                *d = self.reg(o)?;
            }
            for (s, o) in inst.s.iter_mut().zip(&ops[nd..]) {
                *s = self.src(o, Cls::Int)?;
            }
            inst.guard = guard;
            inst.guard_neg = guard_neg;
            return Ok((inst, opname));
        }
        const KNOWN: &[&str] = &[
            "mov", "add", "sub", "mul", "mad", "fma", "div", "rem", "min", "max", "sqrt", "rcp",
            "abs", "neg", "and", "or", "xor", "not", "cnot", "shl", "shr", "bfe", "bfi", "prmt",
            "clz", "popc", "brev", "setp", "selp", "cvt", "cvta", "ld", "st", "atom", "red", "bra",
            "ret", "exit", "trap", "membar", "fence", "bar", "barrier", "shfl", "vote", "redux",
            "ex2", "lg2", "rsqrt", "sin", "cos", "tanh", "mma", "ldmatrix", "cp", "mapa",
            "mbarrier", "elect",
        ];
        let base = opname.split('.').next().unwrap_or("");
        if !KNOWN.contains(&base) {
            return unsup(format!("opcode `{opname}`"));
        }
        let ops = operands(&toks[1..])?;
        let norm = opname
            .replace("::cta", "")
            .replace("::entry", "")
            .replace("mbarrier::complete_tx::bytes", "mbarrier_complete_tx_bytes")
            .replace("multicast::cluster", "multicast_cluster")
            .replace("shared::cluster", "shared_cluster");
        // `.shared::cluster` only with `ld`, `st`, `mapa` and the bulk copy
        // (sm_90+)
        let cluster_ok = matches!(base, "ld" | "st" | "mapa" | "cp" | "mbarrier");
        if norm.contains("::cluster") || norm.contains("::func") {
            return unsup("cluster / function state spaces");
        }
        if norm.contains("shared_cluster") && !cluster_ok {
            return unsup(format!(
                "`{opname}`: .shared::cluster only with ld, st and mapa"
            ));
        }
        if norm.contains("shared_cluster") && self.sm > 0 && self.sm < 90 {
            return unsup(format!(
                "the .shared::cluster state space needs sm_90, module targets sm_{}",
                self.sm
            ));
        }
        let parts: Vec<&str> = norm.split('.').collect();
        let mut inst = self.decode_op(&parts, &ops, n_brauni)?;
        inst.guard = guard;
        inst.guard_neg = guard_neg;
        Ok((inst, opname))
    }

    pub(super) fn nops(&self, ops: &[Opnd], n: usize) -> Result<(), DErr> {
        if ops.len() != n {
            return perr(format!("expected {n} operands, found {}", ops.len()));
        }
        Ok(())
    }

    /// d, a[, b[, c]] with the given class.
    pub(super) fn simple(&self, op: Op, ops: &[Opnd], nsrc: usize, cls: Cls) -> Result<Inst, DErr> {
        self.nops(ops, nsrc + 1)?;
        let mut i = blank_inst(op);
        i.d[0] = self.reg(&ops[0])?;
        for k in 0..nsrc {
            i.s[k] = self.src(&ops[k + 1], cls)?;
        }
        Ok(i)
    }

    pub(super) fn decode_op(
        &self,
        p: &[&str],
        ops: &[Opnd],
        n_brauni: &mut u32,
    ) -> Result<Inst, DErr> {
        let base = p[0];
        let mods = &p[1..];
        let last = *mods.last().unwrap_or(&"");
        let has = |m: &str| mods.contains(&m);
        let rnd = mods.iter().find_map(|m| rnd_of(m));
        let ftz = has("ftz");
        let sat = has("sat");
        let int = int_ty(last);
        match base {
            "mov" => {
                self.nops(ops, 2)?;
                let w = match last {
                    "pred" => 1,
                    "f32" => 32,
                    "f64" => 64,
                    "f16" => 16,
                    t => int_ty(t).ok_or(DErr::Unsup(format!("mov type `{t}`")))?.0,
                };
                let cls = match last {
                    "f32" => Cls::F32,
                    "f64" => Cls::F64,
                    _ => Cls::Int,
                };
                match (&ops[0], &ops[1]) {
                    (Opnd::Vec(ds), src) => {
                        let n = ds.len() as u8;
                        if !(2..=4).contains(&n) || w % n != 0 {
                            return perr("bad unpack");
                        }
                        let mut i = blank_inst(Op::Unpack { n, w: w / n });
                        for (k, d) in ds.iter().enumerate() {
                            i.d[k] = self.reg(d)?;
                        }
                        i.s[0] = self.src(src, Cls::Int)?;
                        Ok(i)
                    }
                    (d, Opnd::Vec(ss)) => {
                        let n = ss.len() as u8;
                        if !(2..=4).contains(&n) || w % n != 0 {
                            return perr("bad pack");
                        }
                        let mut i = blank_inst(Op::Pack { n, w: w / n });
                        i.d[0] = self.reg(d)?;
                        for (k, s) in ss.iter().enumerate() {
                            i.s[k] = self.src(s, Cls::Int)?;
                        }
                        Ok(i)
                    }
                    _ => self.simple(Op::Mov { w }, ops, 1, cls),
                }
            }
            "add" | "sub" | "mul" | "mad" | "fma" | "div" | "rem" | "min" | "max" | "sqrt"
            | "rcp" | "abs" | "neg" => {
                if has("cc")
                    || mods.iter().any(|m| m.starts_with("cc"))
                    || has("relu")
                    || has("xorsign")
                {
                    return unsup(format!("modifier of `{}`", p.join(".")));
                }
                match last {
                    "f32" => {
                        if has("approx") || has("full") {
                            let f = match base {
                                "sqrt" => ApproxFn::Sqrt,
                                "rcp" => ApproxFn::Rcp,
                                "div" => ApproxFn::Div,
                                _ => return unsup(p.join(".")),
                            };
                            let n = if f == ApproxFn::Div { 2 } else { 1 };
                            return self.simple(Op::Approx { f, ftz }, ops, n, Cls::F32);
                        }
                        let r = rnd.unwrap_or(Rnd::Rn);
                        let need_rnd = matches!(base, "fma" | "mad" | "div" | "sqrt" | "rcp");
                        if need_rnd && rnd.is_none() {
                            return perr(format!("{base}.f32 requires a rounding modifier"));
                        }
                        let (op, n) = match base {
                            "add" => (FOp::Add, 2),
                            "sub" => (FOp::Sub, 2),
                            "mul" => (FOp::Mul, 2),
                            "fma" | "mad" => (FOp::Fma, 3),
                            "div" => (FOp::Div, 2),
                            "sqrt" => (FOp::Sqrt, 1),
                            "rcp" => (FOp::Rcp, 1),
                            "min" | "max" => {
                                if sat {
                                    return unsup("min/max.sat");
                                }
                                return self.simple(
                                    Op::F32MinMax {
                                        max: base == "max",
                                        nan: has("NaN"),
                                        ftz,
                                    },
                                    ops,
                                    2,
                                    Cls::F32,
                                );
                            }
                            "abs" => return self.simple(Op::F32Abs { ftz }, ops, 1, Cls::F32),
                            "neg" => return self.simple(Op::F32Neg { ftz }, ops, 1, Cls::F32),
                            _ => return unsup(format!("{base}.f32")),
                        };
                        if sat && !matches!(op, FOp::Add | FOp::Sub | FOp::Mul | FOp::Fma) {
                            return perr(".sat not allowed");
                        }
                        self.simple(
                            Op::F32 {
                                op,
                                rnd: r,
                                ftz,
                                sat,
                            },
                            ops,
                            n,
                            Cls::F32,
                        )
                    }
                    "f64" => {
                        if has("approx") || has("full") || ftz || sat {
                            return unsup(format!("{} is not supported", p.join(".")));
                        }
                        if rnd.is_some() && rnd != Some(Rnd::Rn) {
                            return unsup("directed rounding on f64");
                        }
                        let (op, n) = match base {
                            "add" => (FOp::Add, 2),
                            "sub" => (FOp::Sub, 2),
                            "mul" => (FOp::Mul, 2),
                            "fma" | "mad" => (FOp::Fma, 3),
                            "div" => (FOp::Div, 2),
                            "sqrt" => (FOp::Sqrt, 1),
                            "rcp" => (FOp::Rcp, 1),
                            "min" | "max" => {
                                return self.simple(
                                    Op::F64MinMax { max: base == "max" },
                                    ops,
                                    2,
                                    Cls::F64,
                                );
                            }
                            "abs" => return self.simple(Op::F64Abs, ops, 1, Cls::F64),
                            "neg" => return self.simple(Op::F64Neg, ops, 1, Cls::F64),
                            _ => return unsup(format!("{base}.f64")),
                        };
                        if matches!(base, "fma" | "mad" | "div" | "sqrt" | "rcp") && rnd.is_none() {
                            return perr(format!("{base}.f64 requires a rounding modifier"));
                        }
                        self.simple(Op::F64 { op }, ops, n, Cls::F64)
                    }
                    _ => {
                        let (w, s) = int.ok_or(DErr::Unsup(format!("type `{last}` of {base}")))?;
                        if sat {
                            return unsup(format!("{base}.sat on integers"));
                        }
                        let hi = has("hi");
                        let wide = has("wide");
                        let op = match base {
                            "add" => Op::Add { w },
                            "sub" => Op::Sub { w },
                            "mul" if wide => {
                                if w > 32 {
                                    return perr("mul.wide needs a 16/32-bit type");
                                }
                                Op::MulWide { w, s }
                            }
                            "mul" if hi => Op::MulHi { w, s },
                            "mul" => Op::MulLo { w },
                            "mad" if wide => {
                                if w > 32 {
                                    return perr("mad.wide needs a 16/32-bit type");
                                }
                                return self.simple(Op::MadWide { w, s }, ops, 3, Cls::Int);
                            }
                            "mad" if hi => {
                                return self.simple(Op::MadHi { w, s }, ops, 3, Cls::Int);
                            }
                            "mad" => return self.simple(Op::MadLo { w }, ops, 3, Cls::Int),
                            "div" => Op::Div { w, s },
                            "rem" => Op::Rem { w, s },
                            "min" => Op::Min { w, s },
                            "max" => Op::Max { w, s },
                            "abs" => return self.simple(Op::Abs { w }, ops, 1, Cls::Int),
                            "neg" => return self.simple(Op::Neg { w }, ops, 1, Cls::Int),
                            _ => return unsup(format!("{base} on integers")),
                        };
                        self.simple(op, ops, 2, Cls::Int)
                    }
                }
            }
            "and" | "or" | "xor" | "not" | "cnot" => {
                let w = if last == "pred" {
                    1
                } else {
                    int.ok_or(DErr::Unsup(format!("type `{last}`")))?.0
                };
                match base {
                    "and" => self.simple(Op::And { w }, ops, 2, Cls::Int),
                    "or" => self.simple(Op::Or { w }, ops, 2, Cls::Int),
                    "xor" => self.simple(Op::Xor { w }, ops, 2, Cls::Int),
                    "not" => self.simple(Op::Not { w }, ops, 1, Cls::Int),
                    _ => self.simple(Op::CNot { w }, ops, 1, Cls::Int),
                }
            }
            "shl" | "shr" => {
                let (w, s) = int.ok_or(DErr::Unsup(format!("type `{last}`")))?;
                let op = if base == "shl" {
                    Op::Shl { w }
                } else {
                    Op::Shr { w, s }
                };
                self.simple(op, ops, 2, Cls::Int)
            }
            "bfe" => {
                let (w, s) = int.ok_or(DErr::Unsup(format!("type `{last}`")))?;
                self.simple(Op::Bfe { w, s }, ops, 3, Cls::Int)
            }
            "bfi" => {
                let (w, _) = int.ok_or(DErr::Unsup(format!("type `{last}`")))?;
                let mut i = blank_inst(Op::Bfi { w });
                self.nops(ops, 5)?;
                i.d[0] = self.reg(&ops[0])?;
                for k in 0..4 {
                    i.s[k] = self.src(&ops[k + 1], Cls::Int)?;
                }
                Ok(i)
            }
            "prmt" => {
                if last != "b32" && !mods.is_empty() && mods[0] != "b32" {
                    return unsup("prmt type");
                }
                let mode = match mods.iter().find(|m| **m != "b32").copied() {
                    None => 0,
                    Some("f4e") => 1,
                    Some("b4e") => 2,
                    Some("rc8") => 3,
                    Some("ecl") => 4,
                    Some("ecr") => 5,
                    Some("rc16") => 6,
                    Some(m) => return unsup(format!("prmt mode `{m}`")),
                };
                self.simple(Op::Prmt { mode }, ops, 3, Cls::Int)
            }
            "clz" | "popc" | "brev" => {
                let (w, _) = int.ok_or(DErr::Unsup(format!("type `{last}`")))?;
                let op = match base {
                    "clz" => Op::Clz { w },
                    "popc" => Op::Popc { w },
                    _ => Op::Brev { w },
                };
                self.simple(op, ops, 1, Cls::Int)
            }
            "setp" => self.setp(mods, ops),
            "selp" => {
                let (w, cls) = match last {
                    "f32" => (32, Cls::F32),
                    "f64" => (64, Cls::F64),
                    t => (
                        int_ty(t).ok_or(DErr::Unsup(format!("selp type `{t}`")))?.0,
                        Cls::Int,
                    ),
                };
                self.nops(ops, 4)?;
                let mut i = blank_inst(Op::Selp { w });
                i.d[0] = self.reg(&ops[0])?;
                i.s[0] = self.src(&ops[1], cls)?;
                i.s[1] = self.src(&ops[2], cls)?;
                let (c, neg) = self.pred_src(&ops[3])?;
                i.s[2] = c;
                i.neg = neg;
                Ok(i)
            }
            "cvt" => self.cvt(mods, ops),
            "cvta" => {
                let to = has("to");
                let sp = match mods
                    .iter()
                    .find(|m| matches!(**m, "global" | "shared" | "local" | "const" | "param"))
                {
                    Some(&"global") => Space::Global,
                    Some(&"shared") => Space::Shared,
                    Some(&"local") => Space::Local,
                    Some(&"const") => Space::Const,
                    Some(&"param") if !to => Space::Param,
                    _ => return unsup("cvta state space"),
                };
                let w = match last {
                    "u64" => 64,
                    "u32" if sp != Space::Global => 32,
                    _ => return unsup("cvta size (.u64, or .u32 for shared/local/const)"),
                };
                self.simple(Op::Cvta { to, sp, w }, ops, 1, Cls::Int)
            }
            "ld" | "st" => self.ldst(base == "ld", mods, ops),
            "atom" | "red" => self.atom(base == "atom", mods, ops),
            "bra" => {
                self.nops(ops, 1)?;
                let target = match &ops[0] {
                    Opnd::Name(l) => *self
                        .labels
                        .get(l)
                        .ok_or(DErr::Parse(format!("unknown label `{l}`")))?,
                    _ => return perr("bra needs a label"),
                };
                if has("uni") {
                    let idx = *n_brauni;
                    *n_brauni += 1;
                    Ok(blank_inst(Op::BraUni { target, idx }))
                } else {
                    Ok(blank_inst(Op::Bra { target }))
                }
            }
            "ret" | "exit" => Ok(blank_inst(Op::Exit)),
            "trap" => Ok(blank_inst(Op::Trap)),
            "ex2" | "lg2" | "rsqrt" | "sin" | "cos" | "tanh" => {
                if !has("approx") || last != "f32" {
                    return unsup(format!("`{}` (only .approx{{.ftz}}.f32)", p.join(".")));
                }
                let f = match base {
                    "ex2" => ApproxFn::Ex2,
                    "lg2" => ApproxFn::Lg2,
                    "rsqrt" => ApproxFn::Rsqrt,
                    "sin" => ApproxFn::Sin,
                    "cos" => ApproxFn::Cos,
                    _ => ApproxFn::Tanh,
                };
                self.simple(Op::Approx { f, ftz: has("ftz") }, ops, 1, Cls::F32)
            }
            "membar" | "fence" => Ok(blank_inst(Op::Nop)),
            "mapa" | "barrier" if base == "mapa" || mods.first() == Some(&"cluster") => {
                self.decode_cluster(base, mods, ops)
            }
            "bar" | "barrier" => {
                if base == "bar" && has("warp") {
                    self.nops(ops, 1)?;
                    let mut i = blank_inst(Op::BarWarp);
                    i.s[0] = self.src(&ops[0], Cls::Int)?;
                    return Ok(i);
                }
                let kind = mods.first().copied().unwrap_or("");
                if !(kind == "sync" || (base == "bar" && mods.is_empty())) {
                    return unsup(format!("{base}.{kind} (only bar.sync / barrier.sync)"));
                }
                if ops.is_empty() || ops.len() > 2 {
                    return perr("bar.sync takes 1 or 2 operands");
                }
                // `bar.sync` is `barrier.sync.aligned` (PTX ISA, bar/barrier)
                let aligned = base == "bar" || has("aligned");
                let mut i = blank_inst(Op::Bar { aligned });
                i.s[0] = self.src(&ops[0], Cls::Int)?;
                if ops.len() == 2 {
                    i.s[1] = self.src(&ops[1], Cls::Int)?;
                }
                Ok(i)
            }
            "shfl" => {
                if !has("sync") {
                    return unsup("shfl without .sync");
                }
                let mode = match mods.get(1) {
                    Some(&"up") => ShflMode::Up,
                    Some(&"down") => ShflMode::Down,
                    Some(&"bfly") => ShflMode::Bfly,
                    Some(&"idx") => ShflMode::Idx,
                    _ => return unsup("shfl mode"),
                };
                if last != "b32" {
                    return unsup("shfl type");
                }
                self.nops(ops, 5)?;
                let mut i = blank_inst(Op::Shfl { mode });
                match &ops[0] {
                    Opnd::Pair(a, b) => {
                        i.d[0] = self.reg(a)?;
                        i.d[1] = self.reg(b)?;
                    }
                    o => i.d[0] = self.reg(o)?,
                }
                for k in 0..4 {
                    i.s[k] = self.src(&ops[k + 1], Cls::Int)?;
                }
                Ok(i)
            }
            "vote" => {
                if !has("sync") {
                    return unsup("vote without .sync");
                }
                let mode = match mods.get(1) {
                    Some(&"all") => VoteMode::All,
                    Some(&"any") => VoteMode::Any,
                    Some(&"uni") => VoteMode::Uni,
                    Some(&"ballot") => VoteMode::Ballot,
                    _ => return unsup("vote mode"),
                };
                self.nops(ops, 3)?;
                let mut i = blank_inst(Op::Vote { mode });
                i.d[0] = self.reg(&ops[0])?;
                let (a, neg) = self.pred_src(&ops[1])?;
                i.s[0] = a;
                i.neg = neg;
                i.s[1] = self.src(&ops[2], Cls::Int)?;
                Ok(i)
            }
            "elect" => {
                if !has("sync") {
                    return unsup("elect without .sync");
                }
                if self.sm < 90 {
                    return unsup(format!(
                        "elect.sync needs sm_90, module targets sm_{}",
                        self.sm
                    ));
                }
                self.nops(ops, 2)?;
                let mut i = blank_inst(Op::Elect);
                match &ops[0] {
                    Opnd::Pair(a, b) => {
                        i.d[0] = self.reg(a)?;
                        i.d[1] = self.reg(b)?;
                    }
                    _ => return unsup("elect.sync without its d|p destinations"),
                }
                i.s[0] = self.src(&ops[1], Cls::Int)?;
                Ok(i)
            }
            "mma" => self.decode_mma(mods, ops),
            "ldmatrix" => self.decode_ldmatrix(mods, ops),
            "cp" => self.decode_cp(mods, ops),
            "mbarrier" => self.decode_mbarrier(mods, ops),
            "redux" => {
                if self.sm < 80 {
                    return unsup(format!(
                        "redux.sync needs sm_80, module targets sm_{}",
                        self.sm
                    ));
                }
                let op = match mods.get(1) {
                    Some(&"add") => ReduxOp::Add,
                    Some(&"min") => ReduxOp::Min,
                    Some(&"max") => ReduxOp::Max,
                    Some(&"and") => ReduxOp::And,
                    Some(&"or") => ReduxOp::Or,
                    Some(&"xor") => ReduxOp::Xor,
                    _ => return unsup("redux op"),
                };
                let s = match last {
                    "u32" | "b32" => false,
                    "s32" => true,
                    t => return unsup(format!("redux type `{t}`")),
                };
                self.simple(Op::Redux { op, s }, ops, 2, Cls::Int)
            }
            _ => unsup(format!("opcode `{}`", p.join("."))),
        }
    }
}
