//! Warp collectives (`shfl/vote/redux.sync`, `bar.warp.sync`) and CTA
//! barriers: when every thread is parked, run what can complete or report
//! divergence and deadlock.

use super::super::code::{Code, XInst};
use super::super::cta::TState;
use super::super::error::SimError;
use super::super::ir::*;
use super::{Exec, Fault, Res, fault};

impl<'a> Exec<'a> {
    pub(crate) fn mask_src(op: &Op) -> usize {
        match op {
            Op::Shfl { .. } => 3,
            Op::BarWarp | Op::Elect => 0,
            _ => 1,
        }
    }

    /// Execute every warp collective whose members are all parked at it.
    /// Returns whether anything was executed.
    pub(crate) fn resolve_warps(&mut self) -> Result<bool, SimError> {
        let e: &'a Entry = self.k.e;
        let code: &'a Code = self.k.code;
        let n = self.cta.n;
        let mut progress = false;
        for w in 0..n.div_ceil(32) {
            let lanes = (n - w * 32).min(32);
            for l in 0..lanes {
                let t = w * 32 + l;
                if self.cta.state[t] != TState::Park {
                    continue;
                }
                let pc = self.cta.pc[t] as usize;
                let inst = &code.insts[pc];
                if !inst.op.is_sync() || matches!(inst.op, Op::Bar { .. } | Op::ClusterWait) {
                    continue;
                }
                // `mma.sync` and `ldmatrix` have no membermask: the whole
                // warp takes part
                let mma = matches!(inst.op, Op::Mma { .. } | Op::Ldmatrix { .. });
                if mma && lanes < 32 {
                    return Err(self.to_err(
                        Fault::Warp(format!(
                            "{} needs all 32 lanes; this warp has {lanes}",
                            if matches!(inst.op, Op::Mma { .. }) {
                                "mma.sync"
                            } else {
                                "ldmatrix"
                            }
                        )),
                        t,
                        pc,
                    ));
                }
                let m = if mma {
                    u32::MAX
                } else {
                    self.r_checked(t, pc, inst.s[Self::mask_src(&inst.op)])
                        .map_err(|f| self.to_err(*f, t, pc))? as u32
                };
                let exist = if lanes == 32 {
                    u32::MAX
                } else {
                    (1u32 << lanes) - 1
                };
                let members = m & exist;
                if m & (1 << l) == 0 {
                    return Err(self.to_err(
                        Fault::Warp(format!(
                            "lane {l} executes with membermask {m:#x} that excludes it"
                        )),
                        t,
                        pc,
                    ));
                }
                for ml in 0..lanes {
                    if members & (1 << ml) == 0 {
                        continue;
                    }
                    let mt = w * 32 + ml;
                    match self.cta.state[mt] {
                        TState::Exit => {
                            return Err(self.to_err(
                                Fault::Warp(format!("lane {ml} of membermask {m:#x} has exited")),
                                t,
                                pc,
                            ));
                        }
                        _ if self.cta.pc[mt] as usize != pc => {
                            let other = self.cta.pc[mt] as usize;
                            return Err(self.to_err(
                                Fault::Warp(format!(
                                    "lane {ml} of membermask {m:#x} waits at line {} `{}` instead",
                                    e.lines[other], e.texts[other]
                                )),
                                t,
                                pc,
                            ));
                        }
                        _ if mma => {}
                        _ => {
                            let mm = self
                                .r_checked(mt, pc, inst.s[Self::mask_src(&inst.op)])
                                .map_err(|f| self.to_err(*f, mt, pc))?
                                as u32;
                            if mm != m {
                                return Err(self.to_err(
                                    Fault::Warp(format!(
                                        "lane {ml} uses membermask {mm:#x}, lane {l} uses {m:#x}"
                                    )),
                                    t,
                                    pc,
                                ));
                            }
                        }
                    }
                }
                self.exec_collective(w, members, inst, pc)?;
                if let Some(s) = self.cta.time.as_mut() {
                    let ts = (0..lanes)
                        .filter(move |ml| members & (1 << ml) != 0)
                        .map(move |ml| w * 32 + ml);
                    s.collective(ts, inst, pc);
                }
                for ml in 0..lanes {
                    if members & (1 << ml) != 0 {
                        let mt = w * 32 + ml;
                        self.cta.state[mt] = TState::Run;
                        self.cta.pc[mt] = pc as u32 + 1;
                    }
                }
                if matches!(inst.op, Op::BarWarp) {
                    self.cta.wepoch[w] = self.cta.wepoch[w].wrapping_add(1);
                }
                progress = true;
            }
        }
        Ok(progress)
    }

    pub(crate) fn exec_collective(
        &mut self,
        w: usize,
        members: u32,
        inst: &XInst,
        pc: usize,
    ) -> Result<(), SimError> {
        // the member lanes, on the stack (collectives are frequent)
        let mut lane_buf = [0usize; 32];
        let mut nl = 0;
        for l in 0..32 {
            if members & (1 << l) != 0 {
                lane_buf[nl] = l;
                nl += 1;
            }
        }
        let lanes = &lane_buf[..nl];
        match inst.op {
            Op::BarWarp => {}
            Op::Mma { fmt, ops } => self.exec_mma(w, inst, pc, fmt, ops)?,
            Op::Ldmatrix { num, trans, sp } => self.exec_ldmatrix(w, inst, pc, num, trans, sp)?,
            Op::Shfl { mode } => {
                let mut res = [(0u64, false); 32];
                for (k, &l) in lanes.iter().enumerate() {
                    let t = w * 32 + l;
                    let f = |s: &mut Self| -> Res<(u64, bool)> {
                        let bval = (s.r_checked(t, pc, inst.s[1])? & 0x1F) as i64;
                        let c = s.r_checked(t, pc, inst.s[2])?;
                        let cval = (c & 0x1F) as i64;
                        let seg = ((c >> 8) & 0x1F) as i64;
                        let lane = l as i64;
                        let max_lane = (lane & seg) | (cval & !seg);
                        let min_lane = lane & seg;
                        let (j, valid) = match mode {
                            ShflMode::Up => {
                                let j = lane - bval;
                                (j, j >= max_lane)
                            }
                            ShflMode::Down => {
                                let j = lane + bval;
                                (j, j <= max_lane)
                            }
                            ShflMode::Bfly => {
                                let j = lane ^ bval;
                                (j, j <= max_lane)
                            }
                            ShflMode::Idx => {
                                let j = min_lane | (bval & !seg);
                                (j, j <= max_lane)
                            }
                        };
                        let j = if valid { j as usize } else { l };
                        if members & (1u32 << j) == 0 {
                            return fault(Fault::Warp(format!(
                                "shfl reads lane {j}, which is outside the membermask or inactive"
                            )));
                        }
                        let v = s.r_checked(w * 32 + j, pc, inst.s[0])?;
                        Ok((v & 0xFFFF_FFFF, valid))
                    };
                    res[k] = f(self).map_err(|f| self.to_err(*f, t, pc))?;
                }
                for (k, &l) in lanes.iter().enumerate() {
                    let t = w * 32 + l;
                    self.w_collective(t, inst.d[0], res[k].0);
                    self.w_collective(t, inst.d[1], res[k].1 as u64);
                }
            }
            Op::Vote { mode } => {
                let mut pred_buf = [false; 32];
                for (k, &l) in lanes.iter().enumerate() {
                    let t = w * 32 + l;
                    let v = self
                        .r_checked(t, pc, inst.s[0])
                        .map_err(|f| self.to_err(*f, t, pc))?;
                    pred_buf[k] = (v != 0) != inst.neg;
                }
                let preds = &pred_buf[..nl];
                let r: u64 = match mode {
                    VoteMode::All => preds.iter().all(|p| *p) as u64,
                    VoteMode::Any => preds.iter().any(|p| *p) as u64,
                    VoteMode::Uni => (preds.iter().all(|p| *p) || preds.iter().all(|p| !*p)) as u64,
                    VoteMode::Ballot => lanes
                        .iter()
                        .zip(preds)
                        .filter(|(_, p)| **p)
                        .map(|(l, _)| 1u64 << l)
                        .sum(),
                };
                for &l in lanes {
                    self.w_collective(w * 32 + l, inst.d[0], r);
                }
            }
            Op::Elect => {
                // The lowest lane of those executing it leads (the PTX ISA
                // leaves the choice to the hardware, deterministic per mask).
                let leader = lanes[0] as u64;
                for &l in lanes {
                    let t = w * 32 + l;
                    self.w_collective(t, inst.d[0], leader);
                    self.w_collective(t, inst.d[1], u64::from(l as u64 == leader));
                }
            }
            Op::Redux { op, s } => {
                let mut acc: Option<u64> = None;
                for &l in lanes {
                    let t = w * 32 + l;
                    let v = self
                        .r_checked(t, pc, inst.s[0])
                        .map_err(|f| self.to_err(*f, t, pc))?
                        & 0xFFFF_FFFF;
                    acc = Some(match acc {
                        None => v,
                        Some(a) => match op {
                            ReduxOp::Add => a.wrapping_add(v) & 0xFFFF_FFFF,
                            ReduxOp::And => a & v,
                            ReduxOp::Or => a | v,
                            ReduxOp::Xor => a ^ v,
                            ReduxOp::Min | ReduxOp::Max => {
                                let lt = if s {
                                    (v as u32 as i32) < (a as u32 as i32)
                                } else {
                                    v < a
                                };
                                if lt == (op == ReduxOp::Min) { v } else { a }
                            }
                        },
                    });
                }
                for &l in lanes {
                    self.w_collective(w * 32 + l, inst.d[0], acc.unwrap_or(0));
                }
            }
            _ => unreachable!(),
        }
        Ok(())
    }

    /// All threads are parked or exited and no warp collective can run:
    /// complete a barrier or report divergence / deadlock.
    pub(crate) fn resolve_barrier(&mut self) -> Result<(), SimError> {
        let e: &'a Entry = self.k.e;
        let code: &'a Code = self.k.code;
        let n = self.cta.n;
        let at_bar: Vec<usize> = (0..n)
            .filter(|&t| {
                self.cta.state[t] == TState::Park
                    && matches!(code.insts[self.cta.pc[t] as usize].op, Op::Bar { .. })
            })
            .collect();
        let kernel = e.name.clone();
        let ctaid = self.ctaid;
        let describe = |s: &Self, t: usize| {
            let (x, y, z) = s.tid_of(t);
            let pc = s.cta.pc[t] as usize;
            format!(
                "thread ({x},{y},{z}) at line {} `{}`",
                e.lines[pc], e.texts[pc]
            )
        };
        // the first eight parked threads, described
        let parked = |s: &Self| {
            (0..n)
                .filter(|&t| s.cta.state[t] == TState::Park)
                .take(8)
                .map(|t| describe(s, t))
                .collect::<Vec<String>>()
                .join("; ")
        };
        if at_bar.is_empty() {
            return Err(SimError::Deadlock {
                kernel,
                ctaid,
                parked: parked(self),
            });
        }
        let t0 = at_bar[0];
        let pc0 = self.cta.pc[t0] as usize;
        let inst = &code.insts[pc0];
        let count = match inst.s[1] {
            NO_REG => None,
            s => Some(
                self.r_checked(t0, pc0, s)
                    .map_err(|f| self.to_err(*f, t0, pc0))?,
            ),
        };
        // `barrier.sync` without `.aligned` and without a count: released
        // once every thread of the CTA waits at one, whichever instruction
        // each waits at (the busy and idle warps of a step meeting there)
        let unaligned = |t: usize| {
            let i = &code.insts[self.cta.pc[t] as usize];
            matches!(i.op, Op::Bar { aligned: false }) && i.s[1] == NO_REG
        };
        if at_bar.len() == n && at_bar.iter().all(|&t| unaligned(t)) {
            if let Some(s) = self.cta.time.as_mut() {
                s.join(0..n, super::timing::BAR_CLOCKS, pc0);
            }
            for t in 0..n {
                self.cta.state[t] = TState::Run;
                self.cta.pc[t] += 1;
            }
            self.cta.epoch += 1;
            self.barriers += 1;
            return Ok(());
        }
        let same: Vec<usize> = at_bar
            .iter()
            .copied()
            .filter(|&t| self.cta.pc[t] as usize == pc0)
            .collect();
        let full = count.is_none_or(|c| c as usize >= n);
        if full {
            if let Some(t) = (0..n).find(|&t| self.cta.state[t] == TState::Exit) {
                let (x, y, z) = self.tid_of(t);
                return Err(SimError::BarrierDivergence {
                    kernel,
                    ctaid,
                    message: format!(
                        "thread ({x},{y},{z}) exited while {} thread(s) wait at line {} `{}` (bar.sync is .aligned: every thread must reach it)",
                        at_bar.len(),
                        e.lines[pc0],
                        e.texts[pc0]
                    ),
                });
            }
            if let Some(&t) = at_bar.iter().find(|&&t| self.cta.pc[t] as usize != pc0) {
                return Err(SimError::BarrierDivergence {
                    kernel,
                    ctaid,
                    message: format!(
                        "{} and {} wait at different barriers",
                        describe(self, t0),
                        describe(self, t)
                    ),
                });
            }
            if same.len() != n {
                let t = (0..n).find(|&t| !same.contains(&t)).unwrap();
                return Err(SimError::Deadlock {
                    kernel,
                    ctaid,
                    parked: format!("{} vs {}", describe(self, t0), describe(self, t)),
                });
            }
        } else {
            let c = count.unwrap() as usize;
            if same.len() < c {
                return Err(SimError::Deadlock {
                    kernel,
                    ctaid,
                    parked: format!(
                        "bar.sync with count {c} has {} arrivals: {}",
                        same.len(),
                        parked(self)
                    ),
                });
            }
        }
        if let Some(s) = self.cta.time.as_mut() {
            s.join(same.iter().copied(), super::timing::BAR_CLOCKS, pc0);
        }
        for &t in &same {
            self.cta.state[t] = TState::Run;
            self.cta.pc[t] = pc0 as u32 + 1;
        }
        self.cta.epoch += 1;
        self.barriers += 1;
        Ok(())
    }
}
