//! Decoding of memory instructions: state spaces, address operands,
//! `ld`/`st` (vectors, widths) and `atom`/`red`.

use super::super::ir::*;
use super::decode::{DErr, Decoder, blank_inst, perr, unsup};
use super::operands::{Cls, Opnd, int_ty};

impl Decoder<'_> {
    pub(super) fn space_of(mods: &[&str]) -> Space {
        for m in mods {
            match *m {
                "global" => return Space::Global,
                "shared" => return Space::Shared,
                "shared_cluster" => return Space::SharedCluster,
                "local" => return Space::Local,
                "param" => return Space::Param,
                "const" => return Space::Const,
                _ => {}
            }
        }
        Space::Generic
    }

    pub(super) fn mem_operand(&self, o: &Opnd, sp: Space) -> Result<(Src, i64, Space), DErr> {
        match o {
            Opnd::Mem(Some(base), off, _) => {
                if let Some(r) = self.regs.get(base) {
                    return Ok((Src::Reg(*r), *off, sp));
                }
                if let Some(v) = self.vars.get(base) {
                    // a `.shared` variable is a `.shared::cluster` address
                    // of the executing CTA
                    if sp == Space::SharedCluster && v.sp == Space::Shared {
                        return Ok((Src::Imm(v.offset), *off, sp));
                    }
                    // a call frame's `.param` lives in the thread's `.local` frame
                    let frame =
                        sp == Space::Param && v.sp == Space::Local && self.frame.contains(base);
                    let vsp = if sp == Space::Generic || frame {
                        v.sp
                    } else {
                        sp
                    };
                    if vsp != v.sp {
                        return perr(format!(
                            "`{base}` is in .{} but the access is .{}",
                            v.sp, sp
                        ));
                    }
                    return Ok((Src::Imm(v.offset), *off, vsp));
                }
                perr(format!("unknown address base `{base}`"))
            }
            Opnd::Mem(None, off, Some(abs)) => Ok((Src::Imm(*abs), *off, sp)),
            _ => perr("expected an address operand"),
        }
    }

    pub(super) fn ldst(&self, ld: bool, mods: &[&str], ops: &[Opnd]) -> Result<Inst, DErr> {
        for m in mods {
            if m.starts_with("v8") || *m == "v8" {
                return unsup("256-bit vector access");
            }
        }
        let sp = Self::space_of(mods);
        let last = *mods.last().unwrap_or(&"");
        let n: u8 = if mods.contains(&"v4") {
            4
        } else if mods.contains(&"v2") {
            2
        } else {
            1
        };
        let (size, signed) = match last {
            "f32" => (4, false),
            "f64" => (8, false),
            "f16" => (2, false),
            t => {
                let (w, s) = int_ty(t).ok_or(DErr::Unsup(format!(
                    "{} type `{t}`",
                    if ld { "ld" } else { "st" }
                )))?;
                (w / 8, s)
            }
        };
        let cls = match last {
            "f32" => Cls::F32,
            "f64" => Cls::F64,
            _ => Cls::Int,
        };
        if sp == Space::Const && !ld {
            return perr("st.const is illegal");
        }
        self.nops(ops, 2)?;
        let (vals, mem) = if ld {
            (&ops[0], &ops[1])
        } else {
            (&ops[1], &ops[0])
        };
        let (base, off, sp) = self.mem_operand(mem, sp)?;
        if sp == Space::Param && !ld {
            return unsup("st.param outside a call sequence");
        }
        let mut i = blank_inst(if ld {
            Op::Ld {
                sp,
                size,
                signed,
                n,
            }
        } else {
            Op::St { sp, size, n }
        });
        i.off = off;
        i.s[0] = base;
        let elems: Vec<Opnd> = match vals {
            Opnd::Vec(v) => v.clone(),
            o => vec![o.clone()],
        };
        if elems.len() != n as usize {
            return perr(format!("expected {n} value operand(s)"));
        }
        if ld {
            for (k, e) in elems.iter().enumerate() {
                i.d[k] = self.reg(e)?;
            }
        } else {
            let vals = elems
                .iter()
                .map(|e| self.src(e, cls))
                .collect::<Result<Vec<_>, _>>()?;
            for (k, v) in vals.into_iter().enumerate() {
                i.s[k + 1] = v;
            }
        }
        Ok(i)
    }

    pub(super) fn atom(&self, is_atom: bool, mods: &[&str], ops: &[Opnd]) -> Result<Inst, DErr> {
        let sp = Self::space_of(mods);
        let last = *mods.last().unwrap_or(&"");
        let opn = mods
            .iter()
            .find(|m| {
                matches!(
                    **m,
                    "add" | "min" | "max" | "inc" | "dec" | "and" | "or" | "xor" | "exch" | "cas"
                )
            })
            .copied()
            .ok_or(DErr::Unsup("atomic operation".into()))?;
        if mods.iter().any(|m| m.starts_with('v') && m.len() == 2) {
            return unsup("vector atomics");
        }
        let (w, s, op) = match (opn, last) {
            ("add", "f32") => (32, false, AtomOp::AddF32),
            ("add", "f64") => (64, false, AtomOp::AddF64),
            (_, t) => {
                let (w, s) = int_ty(t).ok_or(DErr::Unsup(format!("atomic type `{t}`")))?;
                if w < 32 {
                    return unsup("16-bit atomics");
                }
                let op = match opn {
                    "add" => AtomOp::Add,
                    "min" => AtomOp::Min,
                    "max" => AtomOp::Max,
                    "inc" => AtomOp::Inc,
                    "dec" => AtomOp::Dec,
                    "and" => AtomOp::And,
                    "or" => AtomOp::Or,
                    "xor" => AtomOp::Xor,
                    "exch" => AtomOp::Exch,
                    _ => AtomOp::Cas,
                };
                if op == AtomOp::Cas && !is_atom {
                    return perr("red.cas does not exist");
                }
                (w, s, op)
            }
        };
        if !matches!(sp, Space::Global | Space::Shared | Space::Generic) {
            return perr("atomics need .global, .shared or generic addressing");
        }
        let cls = match op {
            AtomOp::AddF32 => Cls::F32,
            AtomOp::AddF64 => Cls::F64,
            _ => Cls::Int,
        };
        let nsrc = if op == AtomOp::Cas { 2 } else { 1 };
        let (first, rest) = if is_atom {
            self.nops(ops, 2 + nsrc)?;
            (1, &ops[2..])
        } else {
            self.nops(ops, 1 + nsrc)?;
            (0, &ops[1..])
        };
        let (base, off, sp) = self.mem_operand(&ops[first], sp)?;
        let mut i = blank_inst(Op::Atom {
            sp,
            op,
            w,
            s,
            ret: is_atom,
        });
        if is_atom {
            i.d[0] = self.reg(&ops[0])?;
        }
        i.s[0] = base;
        i.off = off;
        for (k, o) in rest.iter().enumerate() {
            i.s[k + 1] = self.src(o, cls)?;
        }
        Ok(i)
    }
}
