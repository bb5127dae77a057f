//! `ldmatrix` and `cp.async` (issue 31).
//!
//! * `ldmatrix.sync.aligned.m8n8.xN{.trans}.b16` (PTX ISA 8.x §9.7.14.5.15):
//!   warp-collective; lane `8·i + r` supplies the (16-byte aligned) shared
//!   address of row `r` of matrix `i`; destination register `i` of lane
//!   `l` receives row `l / 4`, columns `2·(l % 4)` (low half) and `+ 1` of
//!   matrix `i`, or with `.trans` column `l / 4`, rows `2·(l % 4)` and
//!   `+ 1`. Each row is a 16-byte shared read of its supplying lane,
//!   checked like an `ld.shared` (bounds, alignment, races, uninitialised
//!   bytes).
//! * `cp.async` (PTX ISA "Data Movement and Conversion Instructions:
//!   cp.async"): the source is read (bounds and
//!   initialisation checked) when the copy is issued; the bytes reach
//!   shared memory only at the thread's `cp.async.wait_group` /
//!   `cp.async.wait_all` that covers the copy's group, the latest point
//!   the ISA allows, so a program that relies on them earlier reads stale
//!   bytes. The race check sees the copy's write both at the issue (the
//!   earliest point: an unsynchronised access of another thread in that
//!   barrier interval is a race) and at the wait. Between the two every
//!   shared access to a byte the copy will write is a finding
//!   ([`SimError::AsyncCopyPending`]): a read by the copying thread ("read
//!   before wait"), a read or write by another thread, a second pending
//!   copy to it (two `cp.async`s are unordered). A copy never waited for
//!   when its thread exits is dropped without a finding (the ISA's
//!   `cp.async` text says nothing of it; any later access of its bytes by
//!   another thread is a finding). `src_size` below the copy size reads
//!   that many bytes and zero-fills the rest; above it (undefined
//!   behaviour in the ISA) is a trap.
//!
//! [`SimError::AsyncCopyPending`]: crate::sim::SimError::AsyncCopyPending

use super::super::code::XInst;
use super::super::error::SimError;
use super::super::ir::*;
use super::step::reg;
use super::{Exec, Fault, Res, fault};

/// A copy's group before `cp.async.commit_group`.
const UNCOMMITTED: u32 = u32::MAX;

/// One pending `cp.async` of a thread.
#[derive(Debug, Clone, Copy)]
struct Copy {
    /// The commit group (`UNCOMMITTED` before the commit).
    group: u32,
    /// Destination offset in shared memory and bytes.
    dst: u32,
    len: u8,
    /// The bytes read at issue (zero-filled past `src_size`).
    data: [u8; 16],
    /// The `cp.async` instruction.
    pc: u32,
}

/// The CTA's pending `cp.async`s.
#[derive(Debug, Default)]
pub(crate) struct AsyncCopies {
    /// Per thread: its pending copies, in issue order.
    per: Vec<Vec<Copy>>,
    /// Per thread: the groups it committed so far.
    groups: Vec<u32>,
    /// Per shared byte (with checks): 1 + the thread whose pending copy
    /// writes it, or 0.
    owner: Vec<u32>,
    /// Pending copies in the CTA.
    live: usize,
}

impl AsyncCopies {
    /// State for `n` threads and `smem` bytes of shared memory (the byte
    /// owners only if `checks`: checks are on and the entry has a
    /// `cp.async`).
    pub fn new(n: usize, smem: usize, checks: bool) -> Self {
        AsyncCopies {
            per: vec![Vec::new(); n],
            groups: vec![0; n],
            owner: if checks { vec![0; smem] } else { Vec::new() },
            live: 0,
        }
    }

    /// Forget everything (a CTA starts).
    pub fn reset(&mut self) {
        if self.live != 0 {
            for list in &mut self.per {
                list.clear();
            }
            self.owner.fill(0);
            self.live = 0;
        }
        self.groups.fill(0);
    }

    /// The check of a shared access of `len` bytes at `off` by thread `t`
    /// against the pending copies (the shared-memory check calls it).
    #[inline(always)]
    pub fn check(&self, t: usize, off: usize, len: usize, write: bool) -> Res<()> {
        if self.live == 0 || self.owner.is_empty() {
            return Ok(());
        }
        self.check_slow(t, off, len, write)
    }

    #[cold]
    #[inline(never)]
    fn check_slow(&self, _t: usize, off: usize, len: usize, write: bool) -> Res<()> {
        let Some(b) = (off..off + len).find(|&b| self.owner.get(b).is_some_and(|&o| o != 0)) else {
            return Ok(());
        };
        let ct = self.owner[b] as usize - 1;
        let copy_pc = self.per[ct]
            .iter()
            .rev()
            .find(|c| (c.dst as usize..c.dst as usize + c.len as usize).contains(&b))
            .map_or(u32::MAX, |c| c.pc);
        fault(Fault::AsyncPending {
            offset: b as u64,
            write,
            copy_tid: ct as u32,
            copy_pc,
        })
    }

    /// Mark (`who` = 1 + thread) or clear (`who` = 0) the owner of a
    /// copy's bytes.
    fn own(&mut self, c: &Copy, who: u32) {
        if let Some(o) = self
            .owner
            .get_mut(c.dst as usize..c.dst as usize + c.len as usize)
        {
            o.fill(who);
        }
    }
}

impl Exec<'_> {
    /// `ldmatrix` for the full warp `w` (the caller checked that all 32
    /// lanes are there and converged).
    pub(crate) fn exec_ldmatrix(
        &mut self,
        w: usize,
        inst: &XInst,
        pc: usize,
        num: u8,
        trans: bool,
        sp: Space,
    ) -> Result<(), SimError> {
        let mut rows = [[0u16; 8]; 32];
        for (q, row) in rows.iter_mut().enumerate().take(num as usize * 8) {
            let t = w * 32 + q;
            *row = self
                .ldmatrix_row(t, pc, inst, sp)
                .map_err(|f| self.to_err(*f, t, pc))?;
        }
        for l in 0..32 {
            let (g, k) = (l / 4, 2 * (l % 4));
            for i in 0..num as usize {
                let m = &rows[i * 8..i * 8 + 8];
                let (lo, hi) = if trans {
                    (m[k][g], m[k + 1][g])
                } else {
                    (m[g][k], m[g][k + 1])
                };
                let v = (u64::from(hi) << 16) | u64::from(lo);
                self.w_collective(w * 32 + l, inst.d[i], v);
            }
        }
        Ok(())
    }

    /// The 16-byte row thread `t` addresses for the `ldmatrix` at `pc`.
    fn ldmatrix_row(&mut self, t: usize, pc: usize, inst: &XInst, sp: Space) -> Res<[u16; 8]> {
        let a = self
            .r_checked(t, pc, inst.s[0])?
            .wrapping_add(inst.off as u64);
        let (rs, ra) = Self::resolve(sp, a);
        if rs != Space::Shared {
            return fault(Fault::Trap("ldmatrix row address outside shared memory"));
        }
        if ra % 16 != 0 {
            return fault(Fault::Misaligned(Space::Shared, a, 16));
        }
        let o = self.shared_at(ra, 16)?;
        if self.k.checks {
            self.cta.shared_check_at(t, pc, o, 16, false, false)?;
        }
        let b = &self.cta.shared[o..o + 16];
        Ok(std::array::from_fn(|c| {
            u16::from_le_bytes([b[2 * c], b[2 * c + 1]])
        }))
    }

    /// `cp.async.{ca,cg}.shared.global [s0+off], [s1+s2], size{, s3}` by
    /// thread `t`: read the source, keep the copy pending.
    pub(crate) fn exec_cp_async(&mut self, t: usize, pc: usize, rf: &[u64], i: &XInst) -> Res<()> {
        let Op::CpAsync { size } = i.op else {
            unreachable!()
        };
        let dst = reg(rf, i.s[0]).wrapping_add(i.off as u64);
        let src = reg(rf, i.s[1]).wrapping_add(reg(rf, i.s[2]));
        let n = if i.s[3] == NO_REG {
            u64::from(size)
        } else {
            reg(rf, i.s[3]) & 0xFFFF_FFFF
        };
        if n > u64::from(size) {
            return fault(Fault::Trap("cp.async src_size larger than the copy size"));
        }
        if !dst.is_multiple_of(u64::from(size)) {
            return fault(Fault::Misaligned(Space::Shared, dst, size.into()));
        }
        if !src.is_multiple_of(u64::from(size)) {
            return fault(Fault::Misaligned(Space::Global, src, size.into()));
        }
        let o = self.shared_at(dst, size.into())?;
        if self.k.checks {
            // the copy may write from its issue on: a write here for the
            // race check (an unsynchronised read of another thread in this
            // barrier interval), and a second pending copy to these bytes
            self.cta
                .shared_check_at(t, pc, o, size.into(), true, false)?;
        }
        let mut data = [0u8; 16];
        if n > 0 {
            let b = self.g.load(t, pc, src, n as u32)?;
            data[..n as usize].copy_from_slice(b);
        }
        let c = Copy {
            group: UNCOMMITTED,
            dst: o as u32,
            len: size,
            data,
            pc: pc as u32,
        };
        let q = &mut self.cta.asyncs;
        q.own(&c, t as u32 + 1);
        q.per[t].push(c);
        q.live += 1;
        Ok(())
    }

    /// `cp.async.commit_group` by thread `t`: its uncommitted copies
    /// become a group (an empty one if there are none).
    pub(crate) fn exec_cp_commit(&mut self, t: usize) {
        let q = &mut self.cta.asyncs;
        let g = q.groups[t];
        for c in q.per[t].iter_mut().filter(|c| c.group == UNCOMMITTED) {
            c.group = g;
        }
        q.groups[t] = g.wrapping_add(1);
    }

    /// `cp.async.wait_group n` (`Some(n)`) or `cp.async.wait_all` by
    /// thread `t` at `pc`: the covered copies land in shared memory, each a
    /// write checked like a store of its thread.
    pub(crate) fn exec_cp_wait(&mut self, t: usize, pc: usize, n: Option<u32>) -> Res<()> {
        let q = &mut self.cta.asyncs;
        if q.per[t].is_empty() {
            return Ok(());
        }
        // groups older than the newest `n` are complete
        let upto = n.map(|n| q.groups[t].saturating_sub(n));
        let covered = |c: &Copy| upto.is_none_or(|u| c.group != UNCOMMITTED && c.group < u);
        let (done, rest): (Vec<Copy>, Vec<Copy>) =
            std::mem::take(&mut q.per[t]).into_iter().partition(covered);
        for c in &done {
            q.own(c, 0);
        }
        for c in &rest {
            q.own(c, t as u32 + 1);
        }
        q.live -= done.len();
        q.per[t] = rest;
        for c in done {
            let (o, l) = (c.dst as usize, c.len as usize);
            if self.k.checks {
                self.cta.shared_check_at(t, pc, o, l, true, false)?;
            }
            self.cta.shared[o..o + l].copy_from_slice(&c.data[..l]);
        }
        Ok(())
    }
}
