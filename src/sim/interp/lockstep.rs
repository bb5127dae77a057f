//! The lockstep schedule: the threads of a round run block by block
//! together, instead of one after another.
//!
//! The simulator's order within a CTA is thread order (see
//! `checks::reorder`): in each round, thread 0 runs to the barrier, warp
//! collective or exit where it stops, then thread 1, and so on. That order
//! runs one thread's instructions back to back, so that consecutive
//! instructions are different operations on different memory: the host's
//! branch predictor and caches see little repetition. The lockstep
//! schedule runs a round's warps one after another; in a warp it takes the
//! runnable threads at the lowest program counter (a *group*, in thread
//! order) and runs each instruction of their block for every thread of
//! the group before the next instruction; threads that branch elsewhere
//! wait for their own group, and groups meet again where their program
//! counters do. The common operations run as one loop over the group
//! (`step_group`, `branch_group`, the group memory accesses, and their
//! guarded forms); the others step each thread.
//!
//! Both orders give the same registers, local and shared memory, counts
//! and budget use whenever the CTA runs without a finding: a round's
//! threads interact only through memory; shared memory accesses of two
//! threads in one round that conflict are race findings whatever the
//! order, and the global ones that could differ are caught by
//! `checks::reorder`. Entries whose results depend on the order even
//! without a race (atomics, `%clock`) never run in lockstep
//! (`Code::lockstep_ok`). Anything else — a finding, an order-dependent
//! access, a budget about to run out — ends the attempt: the CTA starts
//! again in thread order, which gives the finding (the first in thread
//! order), the exact budget stop, or the result; so lockstep changes
//! speed, never results. An attempt may issue only a sixteenth of the
//! CTA's cap ([`lockstep_cap`]): a spinning block, which must run again
//! in thread order for its exact stop, then costs a sixteenth more than
//! its budget instead of twice it.
//!
//! [`lockstep_cap`]: super::lockstep_cap

use super::super::code::{Code, F_CHK, F_GCHK, F_GUARD, F_MARK, XInst};
use super::super::cta::TState;
use super::super::fp::{self, FOp};
use super::super::ir::{Comb, Op, Space};
use super::access::{GroupAccess, put_le};
use super::int::{bfe, icmp, prmt, wide_mul};
use super::step::setp_part;
use super::{EXIT, Exec, FAULT, NEXT, PARK, SKIP, Stop, get_le, sext};

/// Set in a group entry for a thread that left the group's block early.
const LEFT: u32 = 1 << 31;

impl<'a> Exec<'a> {
    /// Run every runnable thread until it parks or exits, in lockstep. Any
    /// error ends the attempt (the caller runs the CTA in thread order).
    pub(super) fn run_lockstep(
        &mut self,
        regs: &mut [u64],
        counts: &mut [u64],
    ) -> Result<(), Stop> {
        let mut group = std::mem::take(&mut self.group);
        let r = self.lockstep_rounds(regs, counts, &mut group);
        self.group = group;
        r
    }

    fn lockstep_rounds(
        &mut self,
        regs: &mut [u64],
        counts: &mut [u64],
        group: &mut Vec<u32>,
    ) -> Result<(), Stop> {
        let n = self.cta.n;
        let (ns, pitch) = (self.cta.stride, self.cta.pitch);
        assert!(ns.is_power_of_two() && regs.len() == n * pitch);
        let code: &'a Code = self.k.code;
        let insts = &code.insts[..];
        // a warp at a time: the register files of 32 threads stay in the
        // host's L1 cache from one instruction to the next
        let mut lanes = 0..0;
        // the instructions issued when the current warp started
        let mut mark = self.cta_issued();
        loop {
            // the group: the runnable threads of the warp at the lowest pc,
            // in order, and the lowest pc of the others (which wait there
            // while the group runs: the group goes on without looking
            // again while its pc stays below it)
            group.clear();
            let mut lo = u32::MAX;
            let mut wait_lo = u32::MAX;
            for t in lanes.clone() {
                if self.cta.state[t] != TState::Run {
                    continue;
                }
                let p = self.cta.pc[t];
                if p < lo {
                    if !group.is_empty() {
                        wait_lo = lo;
                    }
                    group.clear();
                    lo = p;
                }
                if p == lo {
                    group.push(t as u32);
                } else {
                    wait_lo = wait_lo.min(p);
                }
            }
            if group.is_empty() {
                // the warp parked or exited: its count, then the next one
                if !lanes.is_empty() {
                    let now = self.cta_issued();
                    self.cta.warp_issued[lanes.start / 32] += now - mark;
                    mark = now;
                }
                if lanes.end >= n {
                    return Ok(());
                }
                lanes = lanes.end..(lanes.end + 32).min(n);
                self.g.shadow.next_stamp();
                continue;
            }
            let mut pc = lo as usize;
            // run the group's blocks while it stays together
            loop {
                let Some(first) = insts.get(pc) else {
                    // falling off the end of the entry is an implicit `ret`
                    for &t in group.iter() {
                        self.cta.state[t as usize] = TState::Exit;
                    }
                    break;
                };
                let len = first.blen as usize;
                let need = len as u64 * group.len() as u64;
                if self.budget < need {
                    self.lockstep_refill(need)?;
                }
                self.budget -= need;
                counts[pc] += group.len() as u64;
                // threads leave a block only at its end (a branch, a
                // synchronisation point, an exit: the instructions that end
                // blocks; a fused `setp`/`bra` is the last but one), all
                // with one outcome unless the branch diverges
                let mut nleft = 0;
                let mut end = (pc + len) as u32;
                let mut first = NEXT;
                let mut mixed = false;
                let mut flow = None;
                for (at, inst) in insts.iter().enumerate().skip(pc).take(len) {
                    if inst.flags == 0 {
                        if step_group(inst, regs, ns, pitch, group) {
                            continue;
                        }
                        if let Some(done) = self
                            .memory_group(at, inst, regs, group)
                            .or_else(|| self.shared_group(inst, regs, group))
                        {
                            if !done {
                                return Err(Stop::Aborted);
                            }
                            continue;
                        }
                        flow = branch_group(inst, at, regs, ns, pitch, group, &mut self.cta.pc);
                        if flow.is_some() {
                            break;
                        }
                    } else if inst.flags & !(F_GUARD | F_GCHK | F_CHK | F_MARK) == 0
                        && !matches!(inst.op, Op::Selp { .. })
                        && self.guarded_group(at, inst, regs, group)?
                    {
                        continue;
                    }
                    for g in group.iter_mut() {
                        let t = *g as usize;
                        let rf = &mut regs[t * pitch..][..ns];
                        if inst.flags != 0 && !self.pre_step(t, at, rf, inst)? {
                            continue;
                        }
                        let r = self.step(t, at, rf, inst);
                        if r == NEXT {
                            continue;
                        }
                        // the thread leaves the block
                        if nleft == 0 {
                            first = r;
                        } else if r != first {
                            mixed = true;
                        }
                        nleft += 1;
                        *g |= LEFT;
                        match r {
                            PARK => {
                                self.cta.pc[t] = at as u32;
                                self.cta.state[t] = TState::Park;
                            }
                            EXIT => {
                                self.cta.pc[t] = at as u32;
                                self.cta.state[t] = TState::Exit;
                            }
                            FAULT => {
                                self.pending = None;
                                return Err(Stop::Aborted);
                            }
                            SKIP => self.cta.pc[t] = (at + 2) as u32,
                            target => self.cta.pc[t] = target,
                        }
                    }
                    if nleft > 0 {
                        // the others go on after it
                        end = at as u32 + 1;
                        break;
                    }
                }
                // one place for all threads (a group branch's, or the next
                // block when none left), their program counters not yet
                // written
                let next = match flow {
                    Some(Flow::To(to)) => Some(to),
                    Some(Flow::Split) => break,
                    None if nleft == 0 => Some(end),
                    None => None,
                };
                if let Some(to) = next {
                    if to < wait_lo {
                        pc = to as usize;
                        continue;
                    }
                    for &t in group.iter() {
                        self.cta.pc[t as usize] = to;
                    }
                    break;
                }
                if nleft == group.len() && !mixed {
                    // one outcome for all
                    let to = match first {
                        PARK | EXIT => {
                            group.clear();
                            break;
                        }
                        SKIP => self.cta.pc[(group[0] & !LEFT) as usize],
                        target => target,
                    };
                    for g in group.iter_mut() {
                        *g &= !LEFT;
                    }
                    if to < wait_lo {
                        pc = to as usize;
                        continue;
                    }
                    break;
                }
                // the branch diverged: the threads that stayed fall through
                for g in group.iter_mut() {
                    if *g & LEFT == 0 {
                        self.cta.pc[*g as usize] = end;
                    }
                    *g &= !LEFT;
                }
                break;
            }
        }
    }

    /// Run instruction `inst` (at `at`) with a guard, checked reads or
    /// tracked destinations for the threads of `group` whose guard holds,
    /// if it is one of the group operations: the guard and the reads'
    /// initialisation for each thread first (an unset one ends the
    /// attempt: thread order reports it), then the operation, then the
    /// destinations' initialisation — `pre_step` and `step` per thread, in
    /// an order with the same outcome. `false` if `inst` is not a group
    /// operation (nothing done).
    fn guarded_group(
        &mut self,
        at: usize,
        inst: &XInst,
        regs: &mut [u64],
        group: &[u32],
    ) -> Result<bool, Stop> {
        let (ns, pitch) = (self.cta.stride, self.cta.pitch);
        let checks = self.k.checks;
        let checked = self.k.code.checked(at);
        let mut sub = std::mem::take(&mut self.sub);
        sub.clear();
        for &t in group {
            let b = t as usize * pitch;
            if inst.flags & F_GUARD != 0 {
                if inst.flags & F_GCHK != 0 && checks && !self.cta.init[b + inst.guard as usize] {
                    self.sub = sub;
                    return Err(Stop::Aborted);
                }
                if (regs[b + (inst.guard as usize & (ns - 1))] != 0) == inst.guard_neg {
                    continue;
                }
            }
            if inst.flags & F_CHK != 0
                && checks
                && !inst.op.is_sync()
                && checked.iter().any(|&r| !self.cta.init[b + r as usize])
            {
                self.sub = sub;
                return Err(Stop::Aborted);
            }
            sub.push(t);
        }
        let done = if step_group(inst, regs, ns, pitch, &sub) {
            true
        } else {
            match self
                .memory_group(at, inst, regs, &sub)
                .or_else(|| self.shared_group(inst, regs, &sub))
            {
                Some(true) => true,
                Some(false) => {
                    self.sub = sub;
                    return Err(Stop::Aborted);
                }
                None => false,
            }
        };
        if done && inst.flags & F_MARK != 0 {
            for &t in &sub {
                self.mark(t as usize * pitch, inst);
            }
        }
        self.sub = sub;
        Ok(done)
    }

    /// Run a scalar `ld.global`/`st.global` (`inst`, at `at`, without
    /// flags) for every thread of `group`: `None` if `inst` is not one,
    /// `Some(false)` if an access would fault or depend on the order (the
    /// attempt ends).
    #[inline(always)]
    fn memory_group(
        &mut self,
        at: usize,
        inst: &XInst,
        regs: &mut [u64],
        group: &[u32],
    ) -> Option<bool> {
        let (size, n, value, load) = match inst.op {
            Op::Ld {
                sp: Space::Global,
                size,
                signed,
                n,
            } => (
                size,
                n,
                [inst.d[0], inst.d[1], inst.d[2], inst.d[3]],
                Some(signed),
            ),
            Op::St {
                sp: Space::Global,
                size,
                n,
            } => (size, n, [inst.s[1], inst.s[2], inst.s[3], inst.s[4]], None),
            _ => return None,
        };
        let acc = GroupAccess {
            regs,
            pitch: self.cta.pitch,
            stride: self.cta.stride,
            group,
            pc: at,
            size,
            n,
            off: inst.off,
            addr: inst.s[0],
            value,
        };
        Some(match load {
            Some(signed) => self.g.load_group(acc, signed),
            None => self.g.store_group(acc),
        })
    }

    /// Run a scalar `ld.shared`/`st.shared` (`inst`, without flags) for
    /// every thread of `group`, with what `exec_ld`/`exec_st` do for each:
    /// `None` if `inst` is not one, `Some(false)` if an access would fault
    /// (a race or an uninitialised read included: the attempt ends).
    #[inline(always)]
    fn shared_group(&mut self, inst: &XInst, regs: &mut [u64], group: &[u32]) -> Option<bool> {
        let (size, n, signed, value, write) = match inst.op {
            Op::Ld {
                sp: Space::Shared,
                size,
                signed,
                n,
            } => (
                size,
                n,
                signed,
                [inst.d[0], inst.d[1], inst.d[2], inst.d[3]],
                false,
            ),
            Op::St {
                sp: Space::Shared,
                size,
                n,
            } => (
                size,
                n,
                false,
                [inst.s[1], inst.s[2], inst.s[3], inst.s[4]],
                true,
            ),
            _ => return None,
        };
        let (ns, pitch) = (self.cta.stride, self.cta.pitch);
        let sa = inst.s[0] as usize & (ns - 1);
        let sv = value.map(|v| v as usize & (ns - 1));
        let (sz, n) = (size as usize, n as usize);
        let len = sz * n;
        let checks = self.k.checks;
        for &t in group {
            let t = t as usize;
            let b = t * pitch;
            let addr = regs[b + sa].wrapping_add(inst.off as u64);
            if addr & (len as u64 - 1) != 0 {
                return Some(false);
            }
            let Ok(o) = self.shared_at(addr, len as u32) else {
                return Some(false);
            };
            if checks && self.cta.shared_check(t, o, len, write, false).is_err() {
                return Some(false);
            }
            let bytes = &mut self.cta.shared[o..o + len];
            for (k, &vk) in sv.iter().enumerate().take(n) {
                if write {
                    put_le(&mut bytes[k * sz..], size, regs[b + vk]);
                } else {
                    let v = get_le(&bytes[k * sz..], size);
                    regs[b + vk] = if signed { sext(v, size * 8) as u64 } else { v };
                }
            }
        }
        Some(true)
    }

    /// The budget chunk cannot pay for the `need` instructions of the next
    /// block: go on if the CTA's cap and the launch's budget allow it,
    /// else end the attempt (thread order charges instruction by
    /// instruction near the cap, and keeps the launch-wide count).
    #[cold]
    #[inline(never)]
    fn lockstep_refill(&mut self, need: u64) -> Result<(), Stop> {
        self.issued += self.chunk - self.budget;
        self.chunk = 0;
        self.budget = 0;
        if let Some(p) = self.progress {
            let others = p.issued.load(std::sync::atomic::Ordering::Relaxed);
            if p.abort.load(std::sync::atomic::Ordering::Relaxed)
                || others.saturating_add(self.issued) > self.k.limit
            {
                return Err(Stop::Aborted);
            }
        }
        let left = self.cap.saturating_sub(self.issued);
        if left < need {
            return Err(Stop::Aborted);
        }
        self.chunk = left.min(super::CHUNK.max(need));
        self.budget = self.chunk;
        Ok(())
    }
}

/// Run instruction `inst` (without flags) for every thread of `group` if
/// it is one of the common register-only operations, whose outcome is
/// always the next instruction; `false` for any other (the caller steps
/// each thread). The semantics are `Exec::step`'s.
#[inline(always)]
fn step_group(inst: &XInst, regs: &mut [u64], ns: usize, pitch: usize, group: &[u32]) -> bool {
    let m = ns - 1;
    let (s0, s1, s2) = (
        inst.s[0] as usize & m,
        inst.s[1] as usize & m,
        inst.s[2] as usize & m,
    );
    let (d0, d1) = (inst.d[0] as usize & m, inst.d[1] as usize & m);
    let wm = inst.m;
    macro_rules! lanes {
        (|$a:ident, $b:ident, $c:ident| $e:expr) => {{
            for &t in group {
                let rf = &mut regs[t as usize * pitch..][..ns];
                let ($a, $b, $c) = (rf[s0], rf[s1], rf[s2]);
                let _ = (&$a, &$b, &$c);
                rf[d0] = $e;
            }
            true
        }};
    }
    match inst.op {
        Op::Mov { .. } => lanes!(|a, b, c| a & wm),
        Op::Add { .. } => lanes!(|a, b, c| a.wrapping_add(b) & wm),
        Op::Sub { .. } => lanes!(|a, b, c| a.wrapping_sub(b) & wm),
        Op::MulLo { .. } => lanes!(|a, b, c| a.wrapping_mul(b) & wm),
        Op::MadLo { .. } => lanes!(|a, b, c| a.wrapping_mul(b).wrapping_add(c) & wm),
        Op::MulWide { w, s } => lanes!(|a, b, c| (wide_mul(a, b, w, s) as u64) & wm),
        Op::MadWide { w, s } => {
            lanes!(|a, b, c| (wide_mul(a, b, w, s) as u64).wrapping_add(c) & wm)
        }
        Op::Bfe { w, s } => lanes!(|a, b, c| bfe(a, b, c, w, s)),
        Op::Prmt { mode } => lanes!(|a, b, c| prmt(a as u32, b as u32, c as u32, mode) as u64),
        Op::Selp { .. } => lanes!(|a, b, c| (if (c != 0) != inst.neg { a } else { b }) & wm),
        Op::F32MinMax { max, nan, ftz } => {
            lanes!(|a, b, c| fp::f32_minmax(max, nan, ftz, a as u32, b as u32) as u64)
        }
        Op::And { .. } => lanes!(|a, b, c| a & b & wm),
        Op::Or { .. } => lanes!(|a, b, c| (a | b) & wm),
        Op::Xor { .. } => lanes!(|a, b, c| (a ^ b) & wm),
        Op::Shl { w } => lanes!(|a, b, c| {
            let n = b & 0xFFFF_FFFF;
            if n >= w as u64 { 0 } else { (a << n) & wm }
        }),
        Op::Shr { w, s: false } => lanes!(|a, b, c| {
            let n = b & 0xFFFF_FFFF;
            if n >= w as u64 { 0 } else { (a & wm) >> n }
        }),
        Op::FAddRn => lanes!(|a, b, c| fp::f32_rn(FOp::Add, a as u32, b as u32, 0) as u64),
        Op::FMulRn => lanes!(|a, b, c| fp::f32_rn(FOp::Mul, a as u32, b as u32, 0) as u64),
        Op::FFmaRn => lanes!(|a, b, c| fp::f32_rn(FOp::Fma, a as u32, b as u32, c as u32) as u64),
        Op::SetpI {
            cmp,
            w,
            s,
            comb: Comb::None,
        } => {
            for &t in group {
                let rf = &mut regs[t as usize * pitch..][..ns];
                let (a, b) = (rf[s0], rf[s1]);
                let r = if s {
                    icmp(cmp, sext(a, w).cmp(&sext(b, w)))
                } else {
                    icmp(cmp, (a & wm).cmp(&(b & wm)))
                };
                rf[d0] = r as u64;
                rf[d1] = !r as u64;
            }
            true
        }
        _ => false,
    }
}

/// Where the threads of a group go after a branch.
enum Flow {
    /// All to one instruction.
    To(u32),
    /// Each to its own (written in the threads' program counters).
    Split,
}

/// Run branch `inst` (at `at`, without flags) for every thread of
/// `group`: where they go, or `None` if `inst` is not an unconditional
/// branch, a `@p bra` or a fused `setp`/`@p bra` (the caller steps each
/// thread). The semantics are `Exec::step`'s.
#[inline(always)]
fn branch_group(
    inst: &XInst,
    at: usize,
    regs: &mut [u64],
    ns: usize,
    pitch: usize,
    group: &[u32],
    pcs: &mut [u32],
) -> Option<Flow> {
    let guard = inst.guard as usize & (ns - 1);
    let taken = |rf: &[u64]| (rf[guard] != 0) != inst.guard_neg;
    let (target, fall) = match inst.op {
        Op::Bra { target } | Op::BraUni { target, .. } => return Some(Flow::To(target)),
        Op::BraIf { target } => (target, at as u32 + 1),
        Op::SetpIBra { target, .. } => {
            for &t in group {
                setp_part(&mut regs[t as usize * pitch..][..ns], inst);
            }
            (target, at as u32 + 2)
        }
        _ => return None,
    };
    let n_taken = group
        .iter()
        .filter(|&&t| taken(&regs[t as usize * pitch..][..ns]))
        .count();
    if n_taken == group.len() {
        return Some(Flow::To(target));
    }
    if n_taken == 0 {
        return Some(Flow::To(fall));
    }
    for &t in group {
        let t = t as usize;
        pcs[t] = if taken(&regs[t * pitch..][..ns]) {
            target
        } else {
            fall
        };
    }
    Some(Flow::Split)
}
