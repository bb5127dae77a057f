//! Decoding of `ldmatrix` (sm_75) and `cp.async` with its commit and wait
//! groups (sm_80), issue 31 (PTX ISA 8.x §9.7.14.5.15 "ldmatrix" and
//! "Data Movement and Conversion Instructions: cp.async").

use super::super::ir::*;
use super::decode::{DErr, Decoder, blank_inst, perr, unsup};
use super::operands::{Cls, Opnd};

impl Decoder<'_> {
    /// `ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}{.shared}.b16 {d…},
    /// [a]` (`.shared::cta` arrives as `.shared`).
    pub(super) fn decode_ldmatrix(&self, mods: &[&str], ops: &[Opnd]) -> Result<Inst, DErr> {
        let (num, rest) = match mods {
            ["sync", "aligned", "m8n8", x, rest @ ..] => match *x {
                "x1" => (1u8, rest),
                "x2" => (2, rest),
                "x4" => (4, rest),
                _ => return unsup(format!("ldmatrix count `.{x}`")),
            },
            _ => return unsup(format!("ldmatrix form `ldmatrix.{}`", mods.join("."))),
        };
        let (trans, sp) = match rest {
            ["trans", "shared", "b16"] => (true, Space::Shared),
            ["shared", "b16"] => (false, Space::Shared),
            ["trans", "b16"] => (true, Space::Generic),
            ["b16"] => (false, Space::Generic),
            _ => return unsup(format!("ldmatrix form `ldmatrix.{}`", mods.join("."))),
        };
        if self.sm < 75 {
            return unsup(format!(
                "ldmatrix needs sm_75+, module targets sm_{}",
                self.sm
            ));
        }
        self.nops(ops, 2)?;
        let mut i = blank_inst(Op::Ldmatrix { num, trans, sp });
        match &ops[0] {
            Opnd::Vec(v) if v.len() == num as usize => {
                for (k, r) in v.iter().enumerate() {
                    i.d[k] = self.reg(r)?;
                }
            }
            _ => {
                return perr(format!(
                    "ldmatrix .x{num} needs a vector of {num} registers"
                ));
            }
        }
        if i.d.iter().take(num as usize).any(|&r| r == NO_REG) {
            return perr("ldmatrix destinations must be registers");
        }
        let (a, off, sp2) = self.mem_operand(&ops[1], sp)?;
        if sp2 != Space::Shared && sp2 != Space::Generic {
            return perr(format!("ldmatrix reads shared memory, not .{sp2}"));
        }
        i.op = Op::Ldmatrix {
            num,
            trans,
            sp: sp2,
        };
        i.s[0] = a;
        i.off = off;
        Ok(i)
    }

    /// `cp.async.{ca,cg}.shared.global [d], [s], size{, src_size}`,
    /// `cp.async.commit_group`, `cp.async.wait_group N`,
    /// `cp.async.wait_all`.
    pub(super) fn decode_cp(&self, mods: &[&str], ops: &[Opnd]) -> Result<Inst, DErr> {
        if mods.first() != Some(&"async") {
            return unsup(format!("opcode `cp.{}`", mods.join(".")));
        }
        if self.sm < 80 {
            return unsup(format!(
                "cp.async needs sm_80+, module targets sm_{}",
                self.sm
            ));
        }
        match &mods[1..] {
            ["bulk", rest @ ..] => self.decode_bulk(rest, ops),
            ["commit_group"] => {
                self.nops(ops, 0)?;
                Ok(blank_inst(Op::CpAsyncCommit))
            }
            ["wait_all"] => {
                self.nops(ops, 0)?;
                Ok(blank_inst(Op::CpAsyncWait { n: None }))
            }
            ["wait_group"] => {
                self.nops(ops, 1)?;
                match self.src(&ops[0], Cls::Int)? {
                    Src::Imm(n) => Ok(blank_inst(Op::CpAsyncWait {
                        n: Some(u32::try_from(n).unwrap_or(u32::MAX)),
                    })),
                    _ => perr("cp.async.wait_group takes an integer constant"),
                }
            }
            [cache @ ("ca" | "cg"), "shared", "global"] => {
                if ops.len() != 3 && ops.len() != 4 {
                    return perr(format!(
                        "cp.async takes 3 or 4 operands, found {}",
                        ops.len()
                    ));
                }
                let size = match self.src(&ops[2], Cls::Int)? {
                    Src::Imm(n @ (4 | 8 | 16)) => n as u8,
                    Src::Imm(n) => return perr(format!("cp.async size {n} (4, 8 or 16)")),
                    _ => return perr("cp.async size must be a constant"),
                };
                if *cache == "cg" && size != 16 {
                    return perr(format!("cp.async.cg copies 16 bytes, not {size}"));
                }
                let (d, doff, dsp) = self.mem_operand(&ops[0], Space::Shared)?;
                let (s, soff, ssp) = self.mem_operand(&ops[1], Space::Global)?;
                if dsp != Space::Shared || ssp != Space::Global {
                    return perr("cp.async copies from .global to .shared");
                }
                let mut i = blank_inst(Op::CpAsync { size });
                i.s[0] = d;
                i.off = doff;
                i.s[1] = s;
                i.s[2] = Src::Imm(soff as u64);
                if let Some(n) = ops.get(3) {
                    i.s[3] = self.src(n, Cls::Int)?;
                }
                Ok(i)
            }
            _ => unsup(format!("cp.async form `cp.{}`", mods.join("."))),
        }
    }

    /// `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes
    /// {.multicast::cluster} [dst], [src], size, [mbar]{, ctaMask}` (sm_90,
    /// PTX 8.0; PTX ISA "cp.async.bulk"). `mods` follow `cp.async.bulk`.
    fn decode_bulk(&self, mods: &[&str], ops: &[Opnd]) -> Result<Inst, DErr> {
        if self.sm < 90 {
            return unsup(format!(
                "cp.async.bulk needs sm_90+, module targets sm_{}",
                self.sm
            ));
        }
        if let ["tensor", rest @ ..] = mods {
            return self.decode_bulk_tensor(rest, ops);
        }
        let multicast = match mods {
            ["shared_cluster", "global", "mbarrier_complete_tx_bytes"] => false,
            [
                "shared_cluster",
                "global",
                "mbarrier_complete_tx_bytes",
                "multicast_cluster",
            ] => true,
            _ => {
                return unsup(format!(
                    "cp.async.bulk form `cp.async.bulk.{}`",
                    mods.join(".")
                ));
            }
        };
        self.nops(ops, if multicast { 5 } else { 4 })?;
        let (d, doff, _) = self.mem_operand(&ops[0], Space::SharedCluster)?;
        let (s, soff, _) = self.mem_operand(&ops[1], Space::Global)?;
        let (b, boff, _) = self.mem_operand(&ops[3], Space::SharedCluster)?;
        if soff != 0 || boff != 0 {
            return unsup("cp.async.bulk with an offset in the source or barrier address");
        }
        let size = self.src(&ops[2], Cls::Int)?;
        let imm = match size {
            Src::Imm(n) => u32::try_from(n).unwrap_or(0),
            _ => 0,
        };
        let mut i = blank_inst(Op::CpAsyncBulk {
            multicast,
            size: imm,
        });
        i.s[0] = d;
        i.off = doff;
        i.s[1] = s;
        i.s[2] = size;
        i.s[3] = b;
        if multicast {
            i.s[4] = self.src(&ops[4], Cls::Int)?;
        }
        Ok(i)
    }

    /// `cp.async.bulk.tensor.{1d,2d,3d}.shared::cluster.global{.tile}
    /// .mbarrier::complete_tx::bytes{.multicast::cluster} [dst], [map,
    /// {c…}], [mbar]{, ctaMask}` (sm_90, PTX 8.0; PTX ISA
    /// "cp.async.bulk.tensor"); `mods` follow `cp.async.bulk.tensor`. The
    /// map is a 64-bit register (its generic address), the coordinates
    /// registers.
    fn decode_bulk_tensor(&self, mods: &[&str], ops: &[Opnd]) -> Result<Inst, DErr> {
        let form = || unsup(format!("cp.async.bulk.tensor form `{}`", mods.join(".")));
        let dims: u8 = match mods.first() {
            Some(&"1d") => 1,
            Some(&"2d") => 2,
            Some(&"3d") => 3,
            _ => return form(),
        };
        let rest: Vec<&str> = mods[1..].iter().copied().filter(|m| *m != "tile").collect();
        let multicast = match rest.as_slice() {
            ["shared_cluster", "global", "mbarrier_complete_tx_bytes"] => false,
            [
                "shared_cluster",
                "global",
                "mbarrier_complete_tx_bytes",
                "multicast_cluster",
            ] => true,
            _ => return form(),
        };
        self.nops(ops, if multicast { 4 } else { 3 })?;
        let (d, doff, _) = self.mem_operand(&ops[0], Space::SharedCluster)?;
        let Opnd::Tensor(map, coords) = &ops[1] else {
            return perr("cp.async.bulk.tensor's source is [map, {coordinates}]");
        };
        if coords.len() != dims as usize {
            return perr(format!(
                "cp.async.bulk.tensor.{dims}d with {} coordinates",
                coords.len()
            ));
        }
        let m = match self.regs.get(map) {
            Some(r) => Src::Reg(*r),
            None => {
                return unsup(format!(
                    "cp.async.bulk.tensor map operand `{map}` (a 64-bit register holding its \
                     generic address)"
                ));
            }
        };
        let mut slots = [0u32; 10];
        for (s, c) in slots.iter_mut().zip(coords) {
            match self.src(c, Cls::Int)? {
                Src::Reg(r) => *s = r,
                _ => return unsup("cp.async.bulk.tensor coordinates other than registers"),
            }
        }
        let (b, boff, _) = self.mem_operand(&ops[2], Space::SharedCluster)?;
        if boff != 0 {
            return unsup("cp.async.bulk.tensor with an offset in the barrier address");
        }
        let mut table = self.mma.borrow_mut();
        let mut i = blank_inst(Op::CpAsyncBulkTensor {
            dims,
            multicast,
            ops: table.len() as u32,
        });
        table.push(slots);
        i.s[0] = d;
        i.off = doff;
        i.s[1] = m;
        i.s[2] = b;
        if multicast {
            i.s[3] = self.src(&ops[3], Cls::Int)?;
        }
        Ok(i)
    }

    /// `mbarrier.init`, `mbarrier.arrive{.expect_tx}` and
    /// `mbarrier.try_wait.parity` on `.shared{::cta}` `.b64` objects (sm_90
    /// in the simulator; PTX ISA "mbarrier").
    pub(super) fn decode_mbarrier(&self, mods: &[&str], ops: &[Opnd]) -> Result<Inst, DErr> {
        if self.sm < 90 {
            return unsup(format!(
                "mbarrier needs sm_90 in the simulator, module targets sm_{}",
                self.sm
            ));
        }
        // the default semantics (`.release.cta` / `.acquire.cta`) only
        let rest: Vec<&str> = mods
            .iter()
            .copied()
            .filter(|m| !matches!(*m, "release" | "acquire" | "cta"))
            .collect();
        let arrive = |tx, remote| Op::MbarArrive { tx, remote };
        let (op, nops, dst) = match rest.as_slice() {
            ["init", "shared", "b64"] => (Op::MbarInit, 2, false),
            ["arrive", "shared", "b64"] => (arrive(false, false), 2, true),
            ["arrive", "expect_tx", "shared", "b64"] => (arrive(true, false), 3, true),
            ["arrive", "cluster", "shared_cluster", "b64"] => (arrive(false, true), 2, true),
            ["try_wait", "parity", "shared", "b64"] => (Op::MbarTryWait, 3, true),
            _ => return unsup(format!("mbarrier form `mbarrier.{}`", mods.join("."))),
        };
        self.nops(ops, nops)?;
        let mut i = blank_inst(op);
        let ops = if dst {
            i.d[0] = self.reg(&ops[0])?;
            &ops[1..]
        } else {
            ops
        };
        let space = if matches!(op, Op::MbarArrive { remote: true, .. }) {
            Space::SharedCluster
        } else {
            Space::Shared
        };
        let (a, off, sp) = self.mem_operand(&ops[0], space)?;
        if sp != space {
            return perr("mbarrier objects are in .shared");
        }
        i.s[0] = a;
        i.off = off;
        if let Some(o) = ops.get(1) {
            i.s[1] = self.src(o, Cls::Int)?;
        }
        Ok(i)
    }
}
