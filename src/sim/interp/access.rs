//! Memory access of one thread: generic-address resolution, alignment and
//! bounds per state space, global initialisation, and the data paths of
//! `ld`, `st` and `atom` (params and constants are read in place). Global
//! memory is reached through a [`GlobalView`]: the launch's starting memory
//! plus the CTA's own writes, or live memory for the entries that run their
//! CTAs one after another (see `checks::global`).

use super::super::checks::benign::{SameWrite, Where};
use super::super::checks::global::{CtaShadow, Kind, LINE, LaunchShadow, NO_DATA, line_bytes};
use super::super::checks::warp_race::WarpRace;
use super::super::global_mem::{
    Alloc, CONST_WINDOW, GlobalMem, LOCAL_WINDOW, SHARED_WINDOW, WINDOW_SIZE,
};
use super::super::ir::*;
use super::{Exec, Fault, Res, fault};

/// The global memory a CTA runs on.
pub(crate) enum Base<'a> {
    /// The launch's starting memory, shared by every worker; the CTA's
    /// writes stay in its shadow until the launch ends.
    Snapshot(&'a GlobalMem),
    /// Live memory (CTAs one after another).
    Live(&'a mut GlobalMem),
}

/// A CTA's view of global memory.
pub(crate) struct GlobalView<'a> {
    pub base: Base<'a>,
    /// Per instruction: the allocation it hit last.
    pub hint: Vec<u32>,
    /// The running CTA's accesses (and, on a snapshot, its writes).
    pub shadow: CtaShadow,
    /// The earlier CTAs' accesses, checked at every access (a CTA re-run
    /// to name its first conflicting access, or CTAs on live memory).
    pub watch: Option<LaunchShadow>,
    pub checks: bool,
    /// The CTA runs in lockstep (`super::lockstep`): accesses whose value
    /// depends on the threads' order are faults ([`Fault::Reorder`]).
    pub lockstep: bool,
}

/// The byte mask of `len` bytes at `addr` within its line.
#[inline(always)]
fn line_mask(addr: u64, len: u32) -> u64 {
    line_bytes((addr % LINE) as usize, len as usize)
}

/// The little-endian value of the first `size` (1, 2, 4, 8) bytes of `b`.
#[inline(always)]
pub(crate) fn get_le(b: &[u8], size: u8) -> u64 {
    match size {
        1 => b[0] as u64,
        2 => u16::from_le_bytes(b[..2].try_into().unwrap()) as u64,
        4 => u32::from_le_bytes(b[..4].try_into().unwrap()) as u64,
        _ => u64::from_le_bytes(b[..8].try_into().unwrap()),
    }
}

/// Store the low `size` (1, 2, 4, 8) bytes of `v` little-endian in `b`.
#[inline(always)]
pub(crate) fn put_le(b: &mut [u8], size: u8, v: u64) {
    match size {
        1 => b[0] = v as u8,
        2 => b[..2].copy_from_slice(&(v as u16).to_le_bytes()),
        4 => b[..4].copy_from_slice(&(v as u32).to_le_bytes()),
        _ => b[..8].copy_from_slice(&v.to_le_bytes()),
    }
}

impl<'a> GlobalView<'a> {
    pub fn new(base: Base<'a>, ninst: usize, watch: Option<LaunchShadow>, checks: bool) -> Self {
        GlobalView {
            base,
            hint: vec![0; ninst],
            shadow: CtaShadow::new(0),
            watch,
            checks,
            lockstep: false,
        }
    }

    fn mem(&self) -> &GlobalMem {
        match &self.base {
            Base::Snapshot(m) => m,
            Base::Live(m) => m,
        }
    }

    /// The allocation and offset of `len` bytes at `addr` accessed by `pc`.
    #[inline(always)]
    fn find(&mut self, pc: usize, addr: u64, len: u32) -> Res<(usize, usize)> {
        let mut last = self.hint[pc] as usize;
        let r = self.mem().find_at(&mut last, addr, len as u64);
        self.hint[pc] = last as u32;
        match r {
            Some(r) => Ok(r),
            None => fault(Fault::Oob(Space::Global, addr, len)),
        }
    }

    /// The allocation and offset of `len` bytes at `addr` accessed by `pc`
    /// (its last allocation first).
    #[inline(always)]
    fn locate(mem: &GlobalMem, hint: &mut u32, addr: u64, len: u64) -> Res<(usize, usize)> {
        let h = *hint as usize;
        if let Some(a) = mem.allocs.get(h) {
            let o = addr.wrapping_sub(a.base);
            if o < a.data.len() as u64 && len <= a.data.len() as u64 - o {
                return Ok((h, o as usize));
            }
        }
        let mut last = h;
        match mem.find_at(&mut last, addr, len) {
            Some(r) => {
                *hint = last as u32;
                Ok(r)
            }
            None => fault(Fault::Oob(Space::Global, addr, len as u32)),
        }
    }

    /// A scalar load of `size` (1, 2, 4, 8) bytes at `addr` (aligned) by
    /// instruction `pc`: [`GlobalView::load`] for one value, without the
    /// slice.
    #[inline(always)]
    pub fn load_scalar(&mut self, t: usize, pc: usize, addr: u64, size: u8) -> Res<u64> {
        // one body per size, so that the masks and byte reads fold
        match size {
            4 => self.load_n::<4>(t, pc, addr),
            8 => self.load_n::<8>(t, pc, addr),
            2 => self.load_n::<2>(t, pc, addr),
            _ => self.load_n::<1>(t, pc, addr),
        }
    }

    /// [`GlobalView::load_scalar`] of `N` bytes.
    #[inline(never)]
    fn load_n<const N: u8>(&mut self, t: usize, pc: usize, addr: u64) -> Res<u64> {
        let size = N;
        let GlobalView {
            base,
            hint,
            shadow,
            watch,
            checks,
            lockstep,
        } = self;
        let mem: &GlobalMem = match base {
            Base::Snapshot(m) => m,
            Base::Live(m) => m,
        };
        let len = size as u64;
        let (i, o) = Self::locate(mem, &mut hint[pc], addr, len)?;
        let a = &mem.allocs[i];
        let sh = (addr % LINE) as usize;
        if *checks {
            if let Some(w) = watch {
                race(w, addr, len as u32, Kind::Read)?;
            }
            let m = ((1u64 << len) - 1) << sh;
            let ri = shadow.rec_at(addr / LINE);
            warp(shadow, ri, t, pc, Kind::Read, addr, len as usize)?;
            let rec = shadow.slot(ri);
            rec.r |= m;
            let (w, d) = (rec.w, rec.data);
            if *lockstep && !shadow.tags[ri].read(shadow.stamp, t, sh, len as usize) {
                return fault(Fault::Reorder);
            }
            if let Some(k) = uninit_byte(a, o, sh, len as usize, w) {
                return fault(Fault::UninitGlobal(addr + k as u64, len as u32));
            }
            if d != NO_DATA {
                return Ok(get_le(&shadow.data[d as usize][sh..], size));
            }
        } else if shadow.wrote {
            let d = shadow.data_of(addr / LINE);
            if d != NO_DATA {
                return Ok(get_le(&shadow.data[d as usize][sh..], size));
            }
        }
        Ok(get_le(&a.data[o..], size))
    }

    /// A scalar store of the low `size` (1, 2, 4, 8) bytes of `v` at `addr`
    /// (aligned) by instruction `pc`.
    #[inline(always)]
    pub fn store_scalar(&mut self, t: usize, pc: usize, addr: u64, size: u8, v: u64) -> Res<()> {
        // one body per size, so that the masks and byte writes fold
        match size {
            4 => self.store_n::<4>(t, pc, addr, v),
            8 => self.store_n::<8>(t, pc, addr, v),
            2 => self.store_n::<2>(t, pc, addr, v),
            _ => self.store_n::<1>(t, pc, addr, v),
        }
    }

    #[inline(always)]
    fn store_n<const N: u8>(&mut self, t: usize, pc: usize, addr: u64, v: u64) -> Res<()> {
        let b = v.to_le_bytes();
        self.store(t, pc, addr, &b[..N as usize])
    }

    /// The `len` (≤ 16, aligned) bytes at `addr` that instruction `pc`
    /// reads: checked, recorded, from the CTA's own writes or memory.
    #[inline(always)]
    pub fn load(&mut self, t: usize, pc: usize, addr: u64, len: u32) -> Res<&[u8]> {
        let GlobalView {
            base,
            hint,
            shadow,
            watch,
            checks,
            lockstep,
        } = self;
        let mem: &GlobalMem = match base {
            Base::Snapshot(m) => m,
            Base::Live(m) => m,
        };
        let (i, o) = Self::locate(mem, &mut hint[pc], addr, len as u64)?;
        let a = &mem.allocs[i];
        let l = len as usize;
        let (line, sh) = (addr / LINE, (addr % LINE) as usize);
        let data = if *checks {
            if let Some(w) = watch {
                race(w, addr, len, Kind::Read)?;
            }
            let m = line_mask(addr, len);
            let ri = shadow.rec_at(line);
            warp(shadow, ri, t, pc, Kind::Read, addr, l)?;
            let rec = shadow.slot(ri);
            rec.r |= m;
            let (w, d) = (rec.w, rec.data);
            if *lockstep && !shadow.tags[ri].read(shadow.stamp, t, sh, l) {
                return fault(Fault::Reorder);
            }
            if let Some(k) = uninit_byte(a, o, sh, l, w) {
                return fault(Fault::UninitGlobal(addr + k as u64, len));
            }
            d
        } else if shadow.wrote {
            shadow.data_of(line)
        } else {
            NO_DATA
        };
        if data != NO_DATA {
            return Ok(&shadow.data[data as usize][sh..sh + l]);
        }
        Ok(&a.data[o..o + l])
    }

    /// Write `new` (≤ 32 bytes, aligned) at `addr` by instruction `pc`:
    /// checked, recorded, in the CTA's copy of the line (or in live
    /// memory).
    #[inline(always)]
    pub fn store(&mut self, t: usize, pc: usize, addr: u64, new: &[u8]) -> Res<()> {
        let len = new.len() as u32;
        let GlobalView {
            base,
            hint,
            shadow,
            watch,
            checks,
            lockstep,
        } = self;
        let (i, o) = match base {
            Base::Snapshot(m) => Self::locate(m, &mut hint[pc], addr, len as u64)?,
            Base::Live(m) => Self::locate(m, &mut hint[pc], addr, len as u64)?,
        };
        let (line, sh) = (addr / LINE, (addr % LINE) as usize);
        let l = len as usize;
        if *checks && let Some(w) = watch {
            race(w, addr, len, Kind::Write)?;
        }
        match base {
            Base::Live(m) => {
                if *checks {
                    let ri = shadow.rec_at(line);
                    warp_write(shadow, ri, t, pc, addr, new, &m.allocs[i].data[o..o + l])?;
                    shadow.slot(ri).w |= line_mask(addr, len);
                    m.allocs[i].set_init(o, l);
                }
                m.allocs[i].data[o..o + l].copy_from_slice(new);
                Ok(())
            }
            Base::Snapshot(m) => {
                let ri = shadow.rec_at(line);
                if *checks {
                    warp_write(shadow, ri, t, pc, addr, new, &m.allocs[i].data[o..o + l])?;
                }
                shadow.wrote = true;
                if *lockstep && !shadow.tags[ri].write(shadow.stamp, t, sh, l) {
                    return fault(Fault::Reorder);
                }
                let d = written_line(shadow, m, ri, i, o - sh, line_mask(addr, len));
                shadow.data[d][sh..sh + l].copy_from_slice(new);
                Ok(())
            }
        }
    }

    /// Atomically replace the `len` (4 or 8) bytes at `addr` by `f(old)`;
    /// returns `old`. Only on live memory (entries with global atomics run
    /// their CTAs one after another).
    pub fn atomic(
        &mut self,
        t: usize,
        pc: usize,
        addr: u64,
        len: u32,
        f: &mut dyn FnMut(u64) -> u64,
    ) -> Res<u64> {
        let (i, o) = self.find(pc, addr, len)?;
        let l = len as usize;
        if self.checks {
            if let Some(w) = &self.watch {
                race(w, addr, len, Kind::Atomic)?;
            }
            let ri = self.shadow.rec_at(addr / LINE);
            warp(&mut self.shadow, ri, t, pc, Kind::Atomic, addr, l)?;
            self.shadow.slot(ri).a |= line_mask(addr, len);
        }
        let checks = self.checks;
        let Base::Live(m) = &mut self.base else {
            return fault(Fault::Trap("internal: global atomic on a snapshot"));
        };
        let a = &mut m.allocs[i];
        if checks && let Some(k) = a.first_uninit(o, l) {
            return fault(Fault::UninitGlobal(addr + k as u64, len));
        }
        let old = get_le(&a.data[o..o + l], len as u8);
        put_le(&mut a.data[o..o + l], len as u8, f(old));
        Ok(old)
    }
}

/// The race check of an access against the earlier CTAs' (`w`).
#[inline(always)]
fn race(w: &LaunchShadow, addr: u64, len: u32, kind: Kind) -> Res<()> {
    let c = w.check(addr / LINE, kind, line_mask(addr, len));
    if c != 0 {
        let at = addr / LINE * LINE + c.trailing_zeros() as u64;
        return fault(Fault::GlobalRace {
            addr: at,
            this: kind,
            other: w.other_kind(at, kind),
        });
    }
    Ok(())
}

/// The race check between the CTA's warps (`checks::warp_race`) of an
/// access of `kind` to the `len` bytes at `addr` (in the line of slot
/// `ri`) by thread `t` at instruction `pc`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn warp(
    shadow: &mut CtaShadow,
    ri: usize,
    t: usize,
    pc: usize,
    kind: Kind,
    addr: u64,
    len: usize,
) -> Res<()> {
    match shadow.warp_check(ri, t, pc, kind, (addr % LINE) as usize, len, None) {
        Ok(_) => Ok(()),
        Err(r) => warp_fault(addr, kind, r),
    }
}

/// [`warp`] for a plain write of `new` at `addr` (in the line of slot
/// `ri`), where memory holds `mem` (as many bytes): a conflict with
/// another warp's writes of the same bytes is a warning (`checks::benign`),
/// not a finding.
#[inline(always)]
fn warp_write(
    shadow: &mut CtaShadow,
    ri: usize,
    t: usize,
    pc: usize,
    addr: u64,
    new: &[u8],
    mem: &[u8],
) -> Res<()> {
    let sh = (addr % LINE) as usize;
    match shadow.warp_check(ri, t, pc, Kind::Write, sh, new.len(), None) {
        Ok(_) => Ok(()),
        Err(r) => same_write(shadow, ri, t, pc, addr, new, mem, r),
    }
}

/// The cold path of [`warp_write`]: the race `r` again with the values,
/// a warning if every conflict is a same-value write-write one.
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn same_write(
    shadow: &mut CtaShadow,
    ri: usize,
    t: usize,
    pc: usize,
    addr: u64,
    new: &[u8],
    mem: &[u8],
    r: WarpRace,
) -> Res<()> {
    if r.other != Kind::Write {
        return warp_fault(addr, Kind::Write, r);
    }
    let sh = (addr % LINE) as usize;
    let l = new.len();
    let mut cur = [0u8; LINE as usize];
    cur[sh..sh + l].copy_from_slice(match shadow.line_now(ri) {
        Some(line) => &line[sh..sh + l],
        None => mem,
    });
    let mut inc = [0u8; LINE as usize];
    inc[sh..sh + l].copy_from_slice(new);
    let same = |i: usize| cur[i] == inc[i];
    match shadow.warp_check(ri, t, pc, Kind::Write, sh, l, Some(&same)) {
        Ok(_) => {
            shadow.same.note(SameWrite {
                t: t as u32,
                pc: pc as u32,
                at: Where::Global {
                    addr: addr / LINE * LINE + r.byte as u64,
                    other_warp: r.other_warp,
                },
            });
            Ok(())
        }
        Err(r) => warp_fault(addr, Kind::Write, r),
    }
}

#[cold]
#[inline(never)]
fn warp_fault(addr: u64, kind: Kind, r: WarpRace) -> Res<()> {
    fault(Fault::WarpRace {
        addr: addr / LINE * LINE + r.byte as u64,
        this: kind,
        other: r.other,
        other_warp: r.other_warp,
    })
}

/// A CTA's first copy of the line starting at offset `lo` (which may be
/// negative of the allocation's end: bytes outside it read as zero) of
/// allocation `i`.
/// The first byte (index in the access) of the `len` bytes at offset `o`
/// of allocation `a` (at `sh` in their line) that is neither initialised
/// in memory nor written by the CTA (`w`, its line's written bytes).
#[inline(always)]
fn uninit_byte(a: &Alloc, o: usize, sh: usize, len: usize, w: u64) -> Option<usize> {
    let m = line_bytes(sh, len);
    if w & m == m || a.first_uninit(o, len).is_none() {
        return None;
    }
    (0..len).find(|&k| !a.is_init(o + k) && w >> (sh + k) & 1 == 0)
}

/// Record the CTA's write of bytes `mask` of the line in slot `ri` (its
/// start at offset `lo` of allocation `i` of `mem`): the index of the
/// CTA's private copy of the line, made at its first write.
#[inline(always)]
fn written_line(
    shadow: &mut CtaShadow,
    mem: &GlobalMem,
    ri: usize,
    i: usize,
    lo: usize,
    mask: u64,
) -> usize {
    let ndata = shadow.data.len() as u32;
    let rec = shadow.slot(ri);
    rec.w |= mask;
    if rec.data != NO_DATA {
        return rec.data as usize;
    }
    rec.data = ndata;
    shadow.data.push(line_copy(mem, i, lo));
    ndata as usize
}

#[cold]
fn line_copy(m: &GlobalMem, i: usize, lo: usize) -> [u8; LINE as usize] {
    let a = &m.allocs[i].data;
    let mut copy = [0u8; LINE as usize];
    let end = (lo + LINE as usize).min(a.len());
    copy[..end - lo].copy_from_slice(&a[lo..end]);
    copy
}

impl Exec<'_> {
    /// Resolve a generic address to (space, space-relative address).
    #[inline(always)]
    pub(crate) fn resolve(sp: Space, addr: u64) -> (Space, u64) {
        if sp != Space::Generic {
            return (sp, addr);
        }
        if addr.wrapping_sub(SHARED_WINDOW) < WINDOW_SIZE {
            (Space::Shared, addr - SHARED_WINDOW)
        } else if addr.wrapping_sub(LOCAL_WINDOW) < WINDOW_SIZE {
            (Space::Local, addr - LOCAL_WINDOW)
        } else if addr.wrapping_sub(CONST_WINDOW) < WINDOW_SIZE {
            (Space::Const, addr - CONST_WINDOW)
        } else {
            (Space::Global, addr)
        }
    }

    /// Bounds of a shared access; its offset.
    #[inline(always)]
    pub(super) fn shared_at(&self, a: u64, len: u32) -> Res<usize> {
        if a.checked_add(len as u64)
            .is_none_or(|end| end > self.cta.shared.len() as u64)
        {
            return fault(Fault::Oob(Space::Shared, a, len));
        }
        Ok(a as usize)
    }

    /// Bounds of a local access by thread `t`; its offset in `cta.local`.
    #[inline(always)]
    fn local_at(&self, t: usize, a: u64, len: u32) -> Res<usize> {
        let lb = self.k.e.local_bytes as u64;
        if a.checked_add(len as u64).is_none_or(|end| end > lb) {
            return fault(Fault::Oob(Space::Local, a, len));
        }
        Ok(t * lb as usize + a as usize)
    }

    /// The `total` bytes an `ld` at `addr` in `sp` by thread `t` at
    /// instruction `pc` reads (aligned to `total`).
    #[inline(always)]
    pub(crate) fn load_bytes(
        &mut self,
        t: usize,
        pc: usize,
        sp: Space,
        addr: u64,
        total: u32,
    ) -> Res<&[u8]> {
        let (rs, ra) = Self::resolve(sp, addr);
        if ra & (total as u64 - 1) != 0 {
            return fault(Fault::Misaligned(rs, addr, total));
        }
        let l = total as usize;
        Ok(match rs {
            Space::Global => self.g.load(t, pc, ra, total)?,
            Space::Shared => {
                let o = self.shared_at(ra, total)?;
                if self.k.checks {
                    if let Err(f) = self.cta.shared_check_at(t, pc, o, l, false, false) {
                        let a = self.cta.access(t, o, l, false, false);
                        self.shared_race_hb(pc, &a, f)?;
                    }
                    if self.cl.is_some() {
                        self.cluster_local(t, pc, o, l, false)?;
                    }
                }
                &self.cta.shared[o..o + l]
            }
            Space::SharedCluster => self.cluster_bytes(t, pc, ra, total, false)?,
            Space::Local => {
                let o = self.local_at(t, ra, total)?;
                &self.cta.local[o..o + l]
            }
            Space::Param | Space::Const | Space::Generic => {
                let src: &[u8] = if rs == Space::Param {
                    self.k.params
                } else {
                    self.k.consts
                };
                if ra
                    .checked_add(total as u64)
                    .is_none_or(|end| end > src.len() as u64)
                {
                    return fault(Fault::Oob(rs, ra, total));
                }
                &src[ra as usize..ra as usize + l]
            }
        })
    }

    /// An `st` of `new` (aligned to its length) at `addr` in `sp` by
    /// thread `t` at instruction `pc`.
    #[inline(always)]
    pub(crate) fn store_bytes(
        &mut self,
        t: usize,
        pc: usize,
        sp: Space,
        addr: u64,
        new: &[u8],
    ) -> Res<()> {
        let total = new.len() as u32;
        let (rs, ra) = Self::resolve(sp, addr);
        if matches!(rs, Space::Param | Space::Const) {
            return fault(Fault::Oob(rs, addr, total));
        }
        if ra & (total as u64 - 1) != 0 {
            return fault(Fault::Misaligned(rs, addr, total));
        }
        let l = total as usize;
        match rs {
            Space::Global => self.g.store(t, pc, ra, new)?,
            Space::Shared => {
                let o = self.shared_at(ra, total)?;
                if self.k.checks {
                    if self.cl.as_deref().is_some_and(|c| c.clocks()) {
                        self.shared_store_hb(t, pc, o, new)?;
                    } else {
                        self.cta.shared_write_check(t, pc, o, new)?;
                    }
                    if self.cl.is_some() {
                        self.cluster_local(t, pc, o, l, true)?;
                    }
                }
                self.cta.shared[o..o + l].copy_from_slice(new);
            }
            Space::SharedCluster => self
                .cluster_bytes(t, pc, ra, total, true)?
                .copy_from_slice(new),
            _ => {
                let o = self.local_at(t, ra, total)?;
                self.cta.local[o..o + l].copy_from_slice(new);
            }
        }
        Ok(())
    }

    /// `atom`/`red` of `len` (4 or 8) bytes at `addr` in `sp` by thread
    /// `t` at instruction `pc`: the word becomes `f(old)`; returns `old`.
    pub(crate) fn atomic(
        &mut self,
        t: usize,
        pc: usize,
        sp: Space,
        addr: u64,
        len: u32,
        f: &mut dyn FnMut(u64) -> u64,
    ) -> Res<u64> {
        let (rs, ra) = Self::resolve(sp, addr);
        if !matches!(rs, Space::Global | Space::Shared) {
            return fault(Fault::Oob(rs, addr, len));
        }
        if ra & (len as u64 - 1) != 0 {
            return fault(Fault::Misaligned(rs, addr, len));
        }
        if rs == Space::Global {
            return self.g.atomic(t, pc, ra, len, f);
        }
        let o = self.shared_at(ra, len)?;
        let l = len as usize;
        if self.k.checks {
            if let Err(f) = self.cta.shared_check_at(t, pc, o, l, true, true) {
                let a = self.cta.access(t, o, l, true, true);
                self.shared_race_hb(pc, &a, f)?;
            }
            if self.cl.is_some() {
                self.cluster_local(t, pc, o, l, true)?;
            }
        }
        let old = get_le(&self.cta.shared[o..o + l], len as u8);
        put_le(&mut self.cta.shared[o..o + l], len as u8, f(old));
        Ok(old)
    }
}

/// One scalar global access of each thread of a lockstep group
/// (`super::lockstep`): where the operands and results are.
pub(crate) struct GroupAccess<'r> {
    /// Every thread's register file, `pitch` slots apart, `stride` slots
    /// each (a power of two).
    pub regs: &'r mut [u64],
    pub pitch: usize,
    pub stride: usize,
    /// The group's threads, in order.
    pub group: &'r [u32],
    /// The instruction, its element's bytes, elements (1, 2, 4) and
    /// immediate offset.
    pub pc: usize,
    pub size: u8,
    pub n: u8,
    pub off: i64,
    /// The address slot and the value slots (the destinations of a load,
    /// the sources of a store; `n` of them).
    pub addr: u32,
    pub value: [u32; 4],
}

impl GroupAccess<'_> {
    /// The bytes each thread accesses.
    fn bytes(&self) -> u64 {
        self.size as u64 * self.n as u64
    }

    /// The address slot and the value slots, masked to the register file.
    fn slots(&self) -> (usize, [usize; 4]) {
        let m = self.stride - 1;
        (self.addr as usize & m, self.value.map(|v| v as usize & m))
    }
}

/// The allocation (index, base, bytes) the group's previous access hit.
struct AllocCache(Option<(usize, u64, u64)>);

impl AllocCache {
    /// The allocation and offset of `len` bytes at `addr` (by instruction
    /// with allocation hint `hint`): the previous access's allocation if it
    /// holds them, else [`GlobalView::locate`]'s; `None` if out of bounds.
    #[inline(always)]
    fn at(
        &mut self,
        mem: &GlobalMem,
        hint: &mut u32,
        addr: u64,
        len: u64,
    ) -> Option<(usize, usize)> {
        if let Some((i, lo, n)) = self.0
            && addr.wrapping_sub(lo) <= n - len
        {
            return Some((i, (addr - lo) as usize));
        }
        let (i, o) = GlobalView::locate(mem, hint, addr, len).ok()?;
        let a = &mem.allocs[i];
        if (a.data.len() as u64) < len {
            return None;
        }
        self.0 = Some((i, a.base, a.data.len() as u64));
        Some((i, o))
    }
}

impl<'a> GlobalView<'a> {
    /// What the group accesses use, if the CTA runs in lockstep with
    /// checks on a snapshot without a watch list (else they do not
    /// apply): the memory, the allocation hints and the CTA's shadow.
    fn group_parts(&mut self) -> Option<(&'a GlobalMem, &mut Vec<u32>, &mut CtaShadow)> {
        let GlobalView {
            base,
            hint,
            shadow,
            watch,
            checks,
            lockstep,
        } = self;
        match base {
            Base::Snapshot(mem) if *checks && *lockstep && watch.is_none() => {
                Some((*mem, hint, shadow))
            }
            _ => None,
        }
    }

    /// `ld.global` of `acc.size` bytes for every thread of the group, with
    /// what [`GlobalView::load_n`] does for each, in the group's order;
    /// sign-extended if `signed`. `false` (some threads done, the attempt
    /// ends) if any access would fault or is order-dependent: the thread
    /// order run reports it.
    pub(crate) fn load_group(&mut self, acc: GroupAccess, signed: bool) -> bool {
        let Some((mem, hint, shadow)) = self.group_parts() else {
            return false;
        };
        let (size, n, len) = (acc.size, acc.n as usize, acc.bytes());
        let (sa, sd) = acc.slots();
        // the allocation, and the line with its record's slot, write mask,
        // data and the reads to add to it, of the thread before
        let mut cur = AllocCache(None);
        let (mut line_at, mut ri, mut w, mut d, mut reads) = (u64::MAX, 0, 0, NO_DATA, 0u64);
        for &t in acc.group {
            let t = t as usize;
            let rf = &mut acc.regs[t * acc.pitch..][..acc.stride];
            let addr = rf[sa].wrapping_add(acc.off as u64);
            if addr & (len - 1) != 0 {
                return false;
            }
            let Some((i, o)) = cur.at(mem, &mut hint[acc.pc], addr, len) else {
                return false;
            };
            let a = &mem.allocs[i];
            let line = addr / LINE;
            if line != line_at {
                if reads != 0 {
                    shadow.slot(ri).r |= reads;
                }
                line_at = line;
                ri = shadow.rec_at(line);
                let rec = shadow.slot(ri);
                (w, d, reads) = (rec.w, rec.data, 0);
            }
            let sh = (addr % LINE) as usize;
            if shadow
                .warp_check(ri, t, acc.pc, Kind::Read, sh, len as usize, None)
                .is_err()
            {
                return false;
            }
            let mk = ((1u64 << len) - 1) << sh;
            reads |= mk;
            if uninit_byte(a, o, sh, len as usize, w).is_some() {
                return false;
            }
            if !shadow.tags[ri].read(shadow.stamp, t, sh, len as usize) {
                return false;
            }
            let src = if d != NO_DATA {
                &shadow.data[d as usize][sh..]
            } else {
                &a.data[o..]
            };
            let ext = |v: u64| {
                if signed {
                    super::sext(v, size * 8) as u64
                } else {
                    v
                }
            };
            if n == 1 {
                rf[sd[0]] = ext(get_le(src, size));
            } else {
                for (k, &dk) in sd.iter().enumerate().take(n) {
                    rf[dk] = ext(get_le(&src[k * size as usize..], size));
                }
            }
        }
        if reads != 0 {
            shadow.slot(ri).r |= reads;
        }
        true
    }

    /// `st.global` of `acc.size` bytes for every thread of the group, with
    /// what [`GlobalView::store`] does for each, in the group's order.
    /// `false` as for [`GlobalView::load_group`].
    pub(crate) fn store_group(&mut self, acc: GroupAccess) -> bool {
        let Some((mem, hint, shadow)) = self.group_parts() else {
            return false;
        };
        let (size, n, len) = (acc.size, acc.n as usize, acc.bytes());
        let (sa, sv) = acc.slots();
        let mut cur = AllocCache(None);
        let mut line_at = (u64::MAX, 0usize);
        shadow.wrote = true;
        for &t in acc.group {
            let t = t as usize;
            let b = t * acc.pitch;
            let addr = acc.regs[b + sa].wrapping_add(acc.off as u64);
            if addr & (len - 1) != 0 {
                return false;
            }
            let Some((i, o)) = cur.at(mem, &mut hint[acc.pc], addr, len) else {
                return false;
            };
            let line = addr / LINE;
            if line != line_at.0 {
                line_at = (line, shadow.rec_at(line));
            }
            let ri = line_at.1;
            let sh = (addr % LINE) as usize;
            let mut new = [0u8; 32];
            for (k, &vk) in sv.iter().enumerate().take(n) {
                put_le(&mut new[k * size as usize..], size, acc.regs[b + vk]);
            }
            let o_mem = &mem.allocs[i].data[o..o + len as usize];
            let new = &new[..len as usize];
            if warp_write(shadow, ri, t, acc.pc, addr, new, o_mem).is_err() {
                return false;
            }
            if !shadow.tags[ri].write(shadow.stamp, t, sh, len as usize) {
                return false;
            }
            let d = written_line(shadow, mem, ri, i, o - sh, line_mask(addr, len as u32));
            shadow.data[d][sh..sh + len as usize].copy_from_slice(new);
        }
        true
    }
}
