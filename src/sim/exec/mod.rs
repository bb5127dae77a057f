//! Execution of one CTA: the thread loop (budget, counters, guards), operand
//! reads and writes, and the CTA scheduler that runs each thread to its next
//! synchronisation point. Instruction semantics are in `step` (with
//! `int`, `float` and `convert` helpers), memory access in `memory`, warp
//! collectives and barriers in `warp`, findings in `findings`; the checks
//! live in `super::checks`.
//!
//! The public items of this module keep their historical paths
//! (`ptxsmith::sim::exec::SM_COUNT`, …).

mod convert;
mod findings;
mod float;
mod int;
mod memory;
mod step;
mod warp;

use super::cta::{Cta, TState};
use super::error::SimError;
use super::ir::*;
use super::memory::GlobalMem;
use crate::runtime::exec::LaunchConfig;

pub use super::machine::{SIM_DEFAULT_STREAM, SM_COUNT, Sim};
pub use super::memory::{CONST_WINDOW, GLOBAL_BASE, LOCAL_WINDOW, SHARED_WINDOW};
pub use super::options::{DEFAULT_INSTRUCTION_BUDGET, LaunchReport, SimOptions};
pub use convert::cvt;
pub use float::approx;
pub use int::prmt;

/// An internal fault, turned into a [`SimError`] with its site.
pub(crate) enum Fault {
    Oob(Space, u64, u32),
    Misaligned(Space, u64, u32),
    Race {
        offset: u64,
        this: &'static str,
        other: &'static str,
        other_tid: u32,
    },
    UninitShared(u64, u32),
    UninitGlobal(u64, u32),
    UninitReg(u32),
    Trap(String),
    Warp(String),
}

pub(crate) enum Flow {
    Next,
    Jump(u32),
    Park,
    Exit,
}

pub(crate) struct Exec<'a> {
    pub(crate) e: &'a Entry,
    pub(crate) consts: &'a [u8],
    pub(crate) mem: &'a mut GlobalMem,
    pub(crate) cta: &'a mut Cta,
    pub(crate) params: &'a [u8],
    pub(crate) counts: &'a mut [u64],
    pub(crate) checks: bool,
    pub(crate) ctaid: (u32, u32, u32),
    pub(crate) block: (u32, u32, u32),
    pub(crate) clock: &'a mut u64,
    pub(crate) budget: u64,
    pub(crate) limit: u64,
    pub(crate) barriers: u64,
}

#[inline(always)]
pub(crate) fn mask(w: u8) -> u64 {
    if w >= 64 { u64::MAX } else { (1u64 << w) - 1 }
}

#[inline(always)]
pub(crate) fn sext(v: u64, w: u8) -> i64 {
    if w >= 64 {
        v as i64
    } else {
        let sh = 64 - w as u32;
        ((v << sh) as i64) >> sh
    }
}

impl<'a> Exec<'a> {
    pub(crate) fn init_cta(&mut self, cfg: LaunchConfig, block_lin: u32) {
        let c = &mut *self.cta;
        c.regs.fill(0);
        c.init.fill(false);
        c.pc.fill(0);
        c.state.fill(TState::Run);
        c.shared.fill(0);
        c.sh_w.fill(0);
        c.sh_r.fill(0);
        c.local.fill(0);
        c.epoch = 1;
        c.wepoch.fill(0);
        c.bu_cnt.fill(0);
        for v in c.bu_out.iter_mut() {
            v.clear();
        }
        let (bx, by, bz) = cfg.block;
        let (gx, gy, gz) = cfg.grid;
        let nw = c.n.div_ceil(32) as u64;
        for t in 0..c.n {
            let b = t * c.nregs;
            let tu = t as u32;
            let lane = tu % 32;
            let vals: [u64; sreg::COUNT as usize] = [
                (tu % bx) as u64,
                ((tu / bx) % by) as u64,
                (tu / (bx * by)) as u64,
                bx as u64,
                by as u64,
                bz as u64,
                self.ctaid.0 as u64,
                self.ctaid.1 as u64,
                self.ctaid.2 as u64,
                gx as u64,
                gy as u64,
                gz as u64,
                lane as u64,
                (tu / 32) as u64,
                nw,
                (block_lin % SM_COUNT) as u64,
                SM_COUNT as u64,
                1u64 << lane,
                (1u64 << lane) - 1,
                (1u64 << (lane + 1)) - 1,
                !((1u64 << (lane + 1)) - 1) & 0xFFFF_FFFF,
                !((1u64 << lane) - 1) & 0xFFFF_FFFF,
                cfg.dynamic_smem_bytes as u64,
                0,
            ];
            c.regs[b..b + vals.len()].copy_from_slice(&vals);
            c.init[b..b + vals.len()].fill(true);
        }
    }

    /// Run every thread of the CTA to completion.
    pub(crate) fn run_cta(&mut self) -> Result<(), SimError> {
        let n = self.cta.n;
        loop {
            for t in 0..n {
                if self.cta.state[t] == TState::Run {
                    self.run_thread(t)?;
                }
            }
            if self.cta.state.iter().all(|s| *s == TState::Exit) {
                return Ok(());
            }
            if self.resolve_warps()? {
                continue;
            }
            self.resolve_barrier()?;
        }
    }

    #[inline(always)]
    pub(crate) fn rd(&mut self, base: usize, s: Src) -> Result<u64, Fault> {
        match s {
            Src::Reg(r) => {
                let i = base + r as usize;
                if self.checks && !self.cta.init[i] {
                    return Err(Fault::UninitReg(r));
                }
                Ok(self.cta.regs[i])
            }
            Src::Imm(v) => Ok(v),
            Src::Clock32 => {
                *self.clock += 1;
                Ok(*self.clock & 0xFFFF_FFFF)
            }
            Src::Clock64 => {
                *self.clock += 1;
                Ok(*self.clock)
            }
            Src::None => Ok(0),
        }
    }

    #[inline(always)]
    pub(crate) fn wr(&mut self, base: usize, d: u32, v: u64) {
        if d != NO_REG {
            let i = base + d as usize;
            self.cta.regs[i] = v;
            self.cta.init[i] = true;
        }
    }

    pub(crate) fn run_thread(&mut self, t: usize) -> Result<(), SimError> {
        let e: &'a Entry = self.e;
        let insts = &e.insts[..];
        let base = t * self.cta.nregs;
        let mut pc = self.cta.pc[t] as usize;
        loop {
            let Some(inst) = insts.get(pc) else {
                // falling off the end of the entry is an implicit `ret`
                self.cta.state[t] = TState::Exit;
                return Ok(());
            };
            if self.budget == 0 {
                return Err(self.budget_exhausted(t, pc));
            }
            self.budget -= 1;
            self.counts[pc] += 1;
            if inst.guard != NO_REG {
                let g = self.cta.regs[base + inst.guard as usize] != 0;
                if self.checks && !self.cta.init[base + inst.guard as usize] {
                    return Err(self.to_err(Fault::UninitReg(inst.guard), t, pc));
                }
                if g == inst.guard_neg {
                    if let Op::BraUni { idx, .. } = inst.op
                        && self.checks
                    {
                        self.brauni(t, idx, false)
                            .map_err(|f| self.to_err(f, t, pc))?;
                    }
                    pc += 1;
                    continue;
                }
                if let Op::BraUni { idx, .. } = inst.op
                    && self.checks
                {
                    self.brauni(t, idx, true)
                        .map_err(|f| self.to_err(f, t, pc))?;
                }
            }
            match self.step(t, base, inst) {
                Ok(Flow::Next) => pc += 1,
                Ok(Flow::Jump(j)) => pc = j as usize,
                Ok(Flow::Park) => {
                    self.cta.pc[t] = pc as u32;
                    self.cta.state[t] = TState::Park;
                    return Ok(());
                }
                Ok(Flow::Exit) => {
                    self.cta.pc[t] = pc as u32;
                    self.cta.state[t] = TState::Exit;
                    return Ok(());
                }
                Err(f) => return Err(self.to_err(f, t, pc)),
            }
        }
    }
}
