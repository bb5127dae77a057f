//! Decoding of `mma.sync.aligned` (issue 31): the `m16n8k16` f16/bf16 and
//! `m16n8k8` tf32 shapes with f32 accumulators, `.row.col` only (the only
//! layouts those shapes have, PTX ISA §9.7.14.5.14).

use super::super::ir::*;
use super::decode::{Decoder, blank_inst, perr, unsup};
use super::operands::Opnd;
use crate::tensor_core::InputFormat;

impl Decoder<'_> {
    /// `mma.sync.aligned.SHAPE.row.col.f32.T.T.f32 {d×4}, {a×4}, {b×2},
    /// {c×4}`: D in `Inst::d`, A/B/C slots in the decoder's side table.
    pub(super) fn decode_mma(
        &self,
        mods: &[&str],
        ops: &[Opnd],
    ) -> Result<Inst, super::decode::DErr> {
        let fmt = match mods {
            [
                "sync",
                "aligned",
                "m16n8k16",
                "row",
                "col",
                "f32",
                "f16",
                "f16",
                "f32",
            ] => InputFormat::F16,
            [
                "sync",
                "aligned",
                "m16n8k16",
                "row",
                "col",
                "f32",
                "bf16",
                "bf16",
                "f32",
            ] => InputFormat::Bf16,
            [
                "sync",
                "aligned",
                "m16n8k8",
                "row",
                "col",
                "f32",
                "tf32",
                "tf32",
                "f32",
            ] => InputFormat::Tf32,
            _ => return unsup(format!("mma form `mma.{}`", mods.join("."))),
        };
        if self.sm < 80 {
            return unsup(format!(
                "mma.sync with {} operands needs sm_80+, module targets sm_{}",
                fmt.ptx_name(),
                self.sm
            ));
        }
        self.nops(ops, 4)?;
        let list = |o: &Opnd, n: usize, what: &str| -> Result<Vec<u32>, super::decode::DErr> {
            match o {
                Opnd::Vec(v) if v.len() == n => v.iter().map(|r| self.reg(r)).collect(),
                _ => perr(format!("mma {what} must be a vector of {n} registers")),
            }
        };
        let d = list(&ops[0], 4, "D")?;
        let a = list(&ops[1], 4, "A")?;
        let b = list(&ops[2], 2, "B")?;
        let c = list(&ops[3], 4, "C")?;
        if d.iter().chain(&a).chain(&b).chain(&c).any(|&r| r == NO_REG) {
            return perr("mma operands must be registers");
        }
        let mut slots = [0u32; 10];
        for (s, r) in slots.iter_mut().zip(a.iter().chain(&b).chain(&c)) {
            *s = *r;
        }
        let mut table = self.mma.borrow_mut();
        let mut i = blank_inst(Op::Mma {
            fmt,
            ops: table.len() as u32,
        });
        table.push(slots);
        i.d.copy_from_slice(&d);
        Ok(i)
    }
}
