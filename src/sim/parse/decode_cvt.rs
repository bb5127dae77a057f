//! Decoding of comparisons (`setp`) and conversions (`cvt`).

use super::super::fp::{MiniFmt, Rnd};
use super::super::ir::*;
use super::decode::{DErr, Decoder, blank_inst, perr, unsup};
use super::operands::{Cls, Opnd, cvt_ty, int_ty, irnd_of, rnd_of};

impl Decoder<'_> {
    pub(super) fn setp(&self, mods: &[&str], ops: &[Opnd]) -> Result<Inst, DErr> {
        let last = *mods.last().unwrap_or(&"");
        let cmp_s = mods.first().copied().unwrap_or("");
        let comb = match mods.get(1) {
            Some(&"and") => Comb::And,
            Some(&"or") => Comb::Or,
            Some(&"xor") => Comb::Xor,
            _ => Comb::None,
        };
        let ftz = mods.contains(&"ftz");
        let (op, cls) = match last {
            "f32" | "f64" => {
                let cmp = match cmp_s {
                    "eq" => Cmp::Eq,
                    "ne" => Cmp::Ne,
                    "lt" => Cmp::Lt,
                    "le" => Cmp::Le,
                    "gt" => Cmp::Gt,
                    "ge" => Cmp::Ge,
                    "equ" => Cmp::Equ,
                    "neu" => Cmp::Neu,
                    "ltu" => Cmp::Ltu,
                    "leu" => Cmp::Leu,
                    "gtu" => Cmp::Gtu,
                    "geu" => Cmp::Geu,
                    "num" => Cmp::Num,
                    "nan" => Cmp::Nan,
                    c => return unsup(format!("setp comparison `{c}` on floats")),
                };
                (
                    Op::SetpF {
                        cmp,
                        f64: last == "f64",
                        ftz,
                        comb,
                    },
                    if last == "f32" { Cls::F32 } else { Cls::F64 },
                )
            }
            t => {
                let (w, s) = int_ty(t).ok_or(DErr::Unsup(format!("setp type `{t}`")))?;
                let bits = t.starts_with('b');
                let (cmp, s) = match cmp_s {
                    "eq" => (Cmp::Eq, s),
                    "ne" => (Cmp::Ne, s),
                    "lt" if !bits => (Cmp::Lt, s),
                    "le" if !bits => (Cmp::Le, s),
                    "gt" if !bits => (Cmp::Gt, s),
                    "ge" if !bits => (Cmp::Ge, s),
                    "lo" if !bits => (Cmp::Lt, false),
                    "ls" if !bits => (Cmp::Le, false),
                    "hi" if !bits => (Cmp::Gt, false),
                    "hs" if !bits => (Cmp::Ge, false),
                    c => return unsup(format!("setp comparison `{c}` on `{t}`")),
                };
                (Op::SetpI { cmp, w, s, comb }, Cls::Int)
            }
        };
        let want = if comb == Comb::None { 3 } else { 4 };
        self.nops(ops, want)?;
        let mut i = blank_inst(op);
        match &ops[0] {
            Opnd::Pair(a, b) => {
                i.d[0] = self.reg(a)?;
                i.d[1] = self.reg(b)?;
            }
            o => i.d[0] = self.reg(o)?,
        }
        i.s[0] = self.src(&ops[1], cls)?;
        i.s[1] = self.src(&ops[2], cls)?;
        if comb != Comb::None {
            let (c, neg) = self.pred_src(&ops[3])?;
            i.s[2] = c;
            i.neg = neg;
        }
        Ok(i)
    }

    pub(super) fn cvt(&self, mods: &[&str], ops: &[Opnd]) -> Result<Inst, DErr> {
        let has = |m: &str| mods.contains(&m);
        let relu = has("relu");
        let satfinite = has("satfinite");
        let types: Vec<&str> = mods
            .iter()
            .copied()
            .filter(|m| {
                !matches!(
                    *m,
                    "rn" | "rna"
                        | "rz"
                        | "rm"
                        | "rp"
                        | "rni"
                        | "rzi"
                        | "rmi"
                        | "rpi"
                        | "ftz"
                        | "sat"
                        | "relu"
                        | "satfinite"
                )
            })
            .collect();
        let rnd = mods.iter().find_map(|m| rnd_of(m));
        let irnd = mods.iter().find_map(|m| irnd_of(m));
        let mini = |s: &str| match s {
            "e4m3x2" => Some(MiniFmt::E4M3),
            "e5m2x2" => Some(MiniFmt::E5M2),
            "e2m1x2" => Some(MiniFmt::E2M1),
            _ => None,
        };
        if types.len() != 2 {
            return unsup(format!("cvt form `cvt.{}`", mods.join(".")));
        }
        let (dt, st) = (types[0], types[1]);
        if dt == "ue8m0x2" {
            if st != "f32" {
                return unsup(format!("cvt to ue8m0x2 from {st}"));
            }
            let r = match rnd {
                Some(r @ (Rnd::Rz | Rnd::Rp)) => r,
                _ => return perr("cvt to ue8m0x2 requires .rz or .rp"),
            };
            if !satfinite {
                // without .satfinite, overflow and Inf are not specified
                // where this simulator could check them: refuse
                return unsup("cvt to ue8m0x2 without .satfinite");
            }
            if relu {
                return perr("cvt to ue8m0x2 takes no .relu");
            }
            self.check_block_scale_target("UE8M0 (ue8m0x2)")?;
            return self.simple(Op::CvtUe8m0Enc { rnd: r }, ops, 2, Cls::F32);
        }
        if st == "ue8m0x2" {
            if dt != "bf16x2" {
                return unsup(format!("cvt from ue8m0x2 to {dt}"));
            }
            if rnd != Some(Rnd::Rn) || satfinite || relu {
                return perr("cvt.bf16x2.ue8m0x2 requires .rn and nothing else");
            }
            self.check_block_scale_target("UE8M0 (ue8m0x2)")?;
            return self.simple(Op::CvtUe8m0Dec, ops, 1, Cls::Int);
        }
        if let Some(fmt) = mini(dt) {
            if st != "f32" {
                return unsup(format!("cvt to {dt} from {st}"));
            }
            if rnd != Some(Rnd::Rn) || !satfinite {
                return perr(format!("cvt to {dt} requires .rn.satfinite"));
            }
            self.check_mini_target(fmt)?;
            return self.simple(Op::CvtMiniEnc { fmt, relu }, ops, 2, Cls::F32);
        }
        if let Some(fmt) = mini(st) {
            if dt != "f16x2" {
                return unsup(format!("cvt from {st} to {dt}"));
            }
            if rnd != Some(Rnd::Rn) {
                return perr(format!("cvt from {st} requires .rn"));
            }
            self.check_mini_target(fmt)?;
            return self.simple(Op::CvtMiniDec { fmt, relu }, ops, 1, Cls::Int);
        }
        if dt == "bf16x2" && st == "f32" {
            let r = match rnd {
                Some(r @ (Rnd::Rn | Rnd::Rz)) => r,
                _ => return perr("cvt.bf16x2.f32 requires .rn or .rz"),
            };
            if satfinite {
                return unsup("cvt.bf16x2.f32 .satfinite");
            }
            if self.sm < 80 {
                return unsup("bf16x2 cvt needs sm_80");
            }
            return self.simple(Op::CvtBf16x2 { rnd: r, relu }, ops, 2, Cls::F32);
        }
        if dt == "tf32" && st == "f32" {
            if !has("rna") || rnd.is_some() || satfinite || relu || irnd.is_some() {
                return unsup(format!(
                    "cvt form `cvt.{}` (only cvt.rna.tf32.f32)",
                    mods.join(".")
                ));
            }
            if self.sm < 80 {
                return unsup("cvt.rna.tf32.f32 needs sm_80");
            }
            return self.simple(Op::CvtTf32, ops, 1, Cls::F32);
        }
        if dt == "f16x2" && st == "f32" {
            let r = match rnd {
                Some(r @ (Rnd::Rn | Rnd::Rz)) => r,
                _ => return perr("cvt.f16x2.f32 requires .rn or .rz"),
            };
            return self.simple(
                Op::CvtF16x2 {
                    rnd: r,
                    relu,
                    satfinite,
                },
                ops,
                2,
                Cls::F32,
            );
        }
        let d = cvt_ty(dt).ok_or(DErr::Unsup(format!("cvt destination type `{dt}`")))?;
        let s = cvt_ty(st).ok_or(DErr::Unsup(format!("cvt source type `{st}`")))?;
        if relu {
            return unsup("cvt .relu");
        }
        // rounding requirements
        if d.is_int() && !s.is_int() && irnd.is_none() {
            return perr("float-to-int cvt requires .rni/.rzi/.rmi/.rpi");
        }
        if !d.is_int() && s.is_int() && rnd.is_none() {
            return perr("int-to-float cvt requires .rn/.rz/.rm/.rp");
        }
        if !d.is_int() && !s.is_int() {
            if d.bits() < s.bits() && rnd.is_none() {
                return perr("narrowing float cvt requires a rounding modifier");
            }
            if d.bits() == s.bits() && d != s {
                return unsup("cvt between f16 and bf16");
            }
            if d.bits() >= s.bits() && d != s && (rnd.is_some() || irnd.is_some()) {
                return perr("widening float cvt takes no rounding modifier");
            }
            if d == s && irnd.is_none() {
                return perr("same-type float cvt requires .rni/.rzi/.rmi/.rpi");
            }
            if d == s && !matches!(d, CvtTy::F32 | CvtTy::F64) {
                return unsup("cvt.rni on 16-bit floats");
            }
            if (d == CvtTy::Bf16 || s == CvtTy::Bf16) && self.sm < 80 {
                return unsup("bf16 cvt needs sm_80");
            }
        }
        if (d == CvtTy::F16 || d == CvtTy::Bf16) && s.is_int() {
            return unsup("cvt from integer to 16-bit float");
        }
        if (s == CvtTy::F16 || s == CvtTy::Bf16) && d.is_int() {
            return unsup("cvt from 16-bit float to integer");
        }
        if s == CvtTy::F64 && matches!(d, CvtTy::F16 | CvtTy::Bf16) {
            return unsup("cvt from f64 to 16-bit float");
        }
        if d == CvtTy::F32
            && s == CvtTy::F64
            && !matches!(rnd, Some(Rnd::Rn) | None)
            && irnd.is_none()
        {
            // directed f64->f32 is supported (exact path)
        }
        let cls = match s {
            CvtTy::F32 => Cls::F32,
            CvtTy::F64 => Cls::F64,
            _ => Cls::Int,
        };
        if (has("satfinite")) && d != CvtTy::F16 {
            return unsup("cvt .satfinite for this type");
        }
        let mut i = self.simple(
            Op::Cvt {
                d,
                s,
                rnd,
                irnd,
                sat: has("sat") || satfinite,
                ftz: has("ftz"),
            },
            ops,
            1,
            cls,
        )?;
        i.neg = false;
        Ok(i)
    }
}
