//! Internal faults → [`SimError`] findings with their [`Site`] (kernel,
//! block, thread, PTX line and instruction text).

use super::super::checks::benign::{Warnings, Where};
use super::super::error::{AccessKind, SimError, Site};
use super::{Exec, Fault, Stop};

impl Exec<'_> {
    pub(crate) fn tid_of(&self, t: usize) -> (u32, u32, u32) {
        let (bx, by, _) = self.k.cfg.block;
        let t = t as u32;
        (t % bx, (t / bx) % by, t / (bx * by))
    }

    pub(crate) fn site(&self, t: usize, pc: usize) -> Box<Site> {
        Box::new(Site {
            kernel: self.k.e.name.clone(),
            ctaid: self.ctaid,
            tid: self.tid_of(t),
            line: self.k.e.lines.get(pc).copied().unwrap_or(0),
            instr: self.k.e.texts.get(pc).cloned().unwrap_or_default(),
        })
    }

    pub(crate) fn to_err(&self, f: Fault, t: usize, pc: usize) -> SimError {
        let site = self.site(t, pc);
        match f {
            Fault::Oob(space, addr, size) => SimError::OutOfBounds {
                site,
                space,
                addr,
                size,
            },
            Fault::Misaligned(space, addr, size) => SimError::Misaligned {
                site,
                space,
                addr,
                size,
            },
            Fault::Race {
                offset,
                this,
                other,
                other_tid,
            } => SimError::SharedRace {
                site,
                offset,
                this,
                other,
                other_tid: if other_tid == u32::MAX {
                    (u32::MAX, u32::MAX, u32::MAX)
                } else {
                    self.tid_of(other_tid as usize)
                },
                other_site: self.cluster_earlier(offset, other, other_tid),
            },
            Fault::Sim(e) => super::cluster::with_site(*e, site),
            Fault::UninitGlobal(addr, size) => SimError::UninitializedGlobal { site, addr, size },
            Fault::UninitShared(offset, size) => {
                SimError::UninitializedShared { site, offset, size }
            }
            Fault::UninitReg(r) => SimError::UninitializedRegister {
                site,
                reg: self.k.e.reg_names[r as usize].clone(),
            },
            Fault::GlobalRace { addr, this, other } => SimError::GlobalRace {
                site,
                addr,
                this,
                other,
                other_ctaid: (u32::MAX, u32::MAX, u32::MAX),
                other_site: None,
            },
            Fault::WarpRace {
                addr,
                this,
                other,
                other_warp,
            } => SimError::WarpGlobalRace {
                site,
                addr,
                this,
                other,
                other_warp,
                other_site: None,
            },
            Fault::AsyncPending {
                offset,
                write,
                copy_tid,
                copy_pc,
            } => {
                let e = self.k.e;
                let cp = copy_pc as usize;
                SimError::AsyncCopyPending {
                    site,
                    offset,
                    this: AccessKind::of(write, false),
                    copy_tid: self.tid_of(copy_tid as usize),
                    copy_line: e.lines.get(cp).copied().unwrap_or(0),
                    copy_text: e.texts.get(cp).cloned().unwrap_or_default(),
                }
            }
            Fault::BulkPending {
                offset,
                write,
                copy_tid,
                copy_rank,
                copy_pc,
            } => {
                let e = self.k.e;
                let cp = copy_pc as usize;
                let (x, y, z) = self.tid_of(copy_tid as usize);
                SimError::BulkCopy {
                    site,
                    message: format!(
                        "shared-memory {} at shared offset {offset:#x} of a byte a pending \
                         cp.async.bulk will write (line {} `{}` of thread ({x},{y},{z}) of \
                         cluster rank {copy_rank}): no mbarrier wait has seen its barrier's \
                         phase complete",
                        if write { "write" } else { "read" },
                        e.lines.get(cp).copied().unwrap_or(0),
                        e.texts.get(cp).cloned().unwrap_or_default(),
                    ),
                }
            }
            Fault::Trap(message) => SimError::Trap {
                site,
                message: message.into(),
            },
            Fault::Assert {
                message,
                file,
                line,
                function,
            } => SimError::Assert {
                site,
                message,
                file,
                line,
                function,
            },
            Fault::Warp(message) => SimError::WarpDivergence { site, message },
            // the lockstep schedule runs such a CTA again in thread order
            Fault::Reorder => SimError::Trap {
                site,
                message: "internal: an order-dependent access escaped the lockstep schedule".into(),
            },
        }
    }

    /// The CTA's same-value write-write conflicts (`checks::benign`), in
    /// global and shared memory, as a launch reports them; the CTA's
    /// records of them are emptied. The first is the global one if any.
    pub(crate) fn take_same_writes(&mut self) -> Warnings {
        let g = std::mem::take(&mut self.g.shadow.same);
        let s = std::mem::take(&mut self.cta.same);
        let first = g.first.or(s.first).map(|w| {
            let f = match w.at {
                Where::Global { addr, other_warp } => Fault::WarpRace {
                    addr,
                    this: AccessKind::Write,
                    other: AccessKind::Write,
                    other_warp,
                },
                Where::Shared { offset, other_tid } => Fault::Race {
                    offset,
                    this: AccessKind::Write,
                    other: AccessKind::Write,
                    other_tid,
                },
            };
            format!(
                "{}; both wrote the same bytes: a warning, not a finding",
                self.to_err(f, w.t as usize, w.pc as usize)
            )
        });
        Warnings {
            count: g.count + s.count,
            first,
        }
    }

    /// `f` at thread `t`, instruction `pc`, as a stop of the CTA.
    #[cold]
    #[inline(never)]
    pub(crate) fn finding(&self, f: Fault, t: usize, pc: usize) -> Stop {
        Stop::Finding(self.to_err(f, t, pc))
    }

    /// The finding for a launch that used up its instruction budget, with
    /// thread `t` about to issue the instruction at `pc` (kept out of the
    /// interpreter loop).
    #[cold]
    #[inline(never)]
    pub(crate) fn budget_exhausted(&self, t: usize, pc: usize) -> SimError {
        SimError::InstructionLimit {
            site: self.site(t, pc),
            limit: self.k.limit,
        }
    }
}
