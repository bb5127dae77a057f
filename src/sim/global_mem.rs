//! Global memory, the machine state that outlives a launch: allocations at
//! distinct addresses with unmapped guard gaps (never reused), their bytes
//! (freed buffers kept, bounded, for the next allocations) and per-byte
//! initialisation (flags only while an allocation is partly written), the
//! generic-address windows of the other state spaces, and the host-side
//! memory API of [`Sim`].

use super::error::SimError;
use std::sync::Arc;

use super::machine::Sim;
use super::parse::Program;

/// Generic-address window of `.shared` (a CTA's shared offset `o` has the
/// generic address `SHARED_WINDOW + o`).
pub const SHARED_WINDOW: u64 = 0x0000_7E00_0000_0000;
/// Generic-address window of `.local`.
pub const LOCAL_WINDOW: u64 = 0x0000_7D00_0000_0000;
/// Generic-address window of `.const`.
pub const CONST_WINDOW: u64 = 0x0000_7C00_0000_0000;
pub(crate) const WINDOW_SIZE: u64 = 1 << 32;
/// Placeholder addresses of module-scope `.global` variables in a program
/// not loaded yet (`MODULE_WINDOW + offset in the module image`; unmapped,
/// and relocated when the module is loaded: see `parse/globals.rs`).
pub(crate) const MODULE_WINDOW: u64 = 0x0000_7B00_0000_0000;
/// The generic addresses of the kernel parameters (`cvta.param`:
/// `PARAM_WINDOW + offset`; only a tensor-map copy reads through them).
pub(crate) const PARAM_WINDOW: u64 = 0x0000_7A00_0000_0000;
/// First global allocation address; allocations are 256-byte aligned and
/// separated by at least `GUARD` unmapped bytes.
pub const GLOBAL_BASE: u64 = 0x0000_0001_0000_0000;
pub(crate) const GUARD: u64 = 4096;

pub(crate) struct Alloc {
    pub(crate) base: u64,
    pub(crate) data: Vec<u8>,
    /// Per byte: written by the host or a kernel since allocation. Empty
    /// only while every byte has one state (`uninit` is 0 or the whole
    /// length), and always once every byte is written: an upload writes a
    /// fresh allocation whole, and so never needs the flags.
    init: Vec<bool>,
    /// Bytes not written yet (0: the common, fully written allocation,
    /// whose reads need no per-byte look).
    uninit: usize,
}

impl Alloc {
    fn new(base: u64, data: Vec<u8>, init: bool) -> Alloc {
        let uninit = if init { 0 } else { data.len() };
        Alloc {
            base,
            data,
            init: Vec::new(),
            uninit,
        }
    }

    /// The per-byte flags, made when the bytes first differ in state.
    fn flags(&mut self) -> &mut Vec<bool> {
        if self.init.is_empty() {
            self.init = vec![self.uninit == 0; self.data.len()];
        }
        &mut self.init
    }

    /// Drop the flags once every byte is written.
    fn settle(&mut self) {
        if self.uninit == 0 {
            self.init = Vec::new();
        }
    }

    /// The first byte of `[o, o + l)` not written yet (as an offset from
    /// `o`).
    #[inline(always)]
    pub(crate) fn first_uninit(&self, o: usize, l: usize) -> Option<usize> {
        if self.uninit == 0 || l == 0 {
            return None;
        }
        if self.init.is_empty() {
            return Some(0);
        }
        self.init[o..o + l].iter().position(|b| !*b)
    }

    /// Whether byte `o` was written.
    #[inline(always)]
    pub(crate) fn is_init(&self, o: usize) -> bool {
        self.uninit == 0 || (!self.init.is_empty() && self.init[o])
    }

    /// Count `[o, o + l)` as written.
    #[inline(always)]
    pub(crate) fn set_init(&mut self, o: usize, l: usize) {
        if self.uninit == 0 || l == 0 {
            return;
        }
        if o == 0 && l == self.data.len() {
            self.uninit = 0;
            self.init = Vec::new();
            return;
        }
        // count, then fill: both loops vectorise (a host write of a whole
        // buffer is one pass over its flags, not a branch per byte)
        let r = &mut self.flags()[o..o + l];
        let fresh: usize = r
            .chunks(255)
            .map(|c| c.iter().fold(0u8, |n, &b| n + !b as u8) as usize)
            .sum();
        r.fill(true);
        self.uninit -= fresh;
        self.settle();
    }

    /// Set the written state of `[o, o + src.len())` to `src`.
    fn copy_init(&mut self, o: usize, src: &[bool]) {
        // no flags: every byte has the one state `uninit == 0` says
        if self.init.is_empty() && src.iter().all(|&f| f == (self.uninit == 0)) {
            return;
        }
        let mut uninit = self.uninit;
        for (b, &f) in self.flags()[o..o + src.len()].iter_mut().zip(src) {
            if *b != f {
                *b = f;
                if f {
                    uninit -= 1;
                } else {
                    uninit += 1;
                }
            }
        }
        self.uninit = uninit;
        self.settle();
    }

    /// The written state of `[o, o + l)`, one flag per byte.
    fn init_of(&self, o: usize, l: usize) -> Vec<bool> {
        if self.init.is_empty() {
            vec![self.uninit == 0; l]
        } else {
            self.init[o..o + l].to_vec()
        }
    }
}

/// Freed allocations' byte buffers kept for reuse, so that a program that
/// allocates and frees the same sizes each step (every library call does)
/// writes into memory it already touched instead of fresh pages: on a
/// 256 KB upload the page faults cost more than the copy. Bounded.
#[derive(Default)]
pub(crate) struct Spare {
    bufs: Vec<Vec<u8>>,
    bytes: usize,
}

impl Spare {
    /// At most this many bytes are kept.
    const CAP: usize = 64 << 20;
    /// Buffers smaller than this go back to the allocator (it reuses them
    /// well).
    const MIN: usize = 16 << 10;

    /// A zeroed buffer of `bytes`: a kept one of at least that capacity
    /// (but not over twice it) if there is one.
    fn take(&mut self, bytes: usize) -> Vec<u8> {
        if bytes >= Self::MIN
            && let Some(i) = self
                .bufs
                .iter()
                .position(|b| (bytes..=2 * bytes).contains(&b.capacity()))
        {
            let mut b = self.bufs.swap_remove(i);
            self.bytes -= b.capacity();
            b.clear();
            b.resize(bytes, 0);
            return b;
        }
        vec![0; bytes]
    }

    /// Keep `b` if it is large enough and there is room (else the oldest
    /// kept buffers go first).
    fn keep(&mut self, b: Vec<u8>) {
        let c = b.capacity();
        if !(Self::MIN..=Self::CAP).contains(&c) {
            return;
        }
        while self.bytes + c > Self::CAP {
            let old = self.bufs.remove(0);
            self.bytes -= old.capacity();
        }
        self.bytes += c;
        self.bufs.push(b);
    }
}

/// Global memory: allocations at distinct addresses with guard gaps.
#[derive(Default)]
pub(crate) struct GlobalMem {
    pub(crate) allocs: Vec<Alloc>,
    pub(crate) last: usize,
    pub(crate) next: u64,
    pub(crate) spare: Spare,
}

impl GlobalMem {
    /// The allocation holding `[addr, addr + size)` and the offset in it,
    /// trying allocation `*last` first (and remembering the hit).
    #[inline]
    pub(crate) fn find_at(&self, last: &mut usize, addr: u64, size: u64) -> Option<(usize, usize)> {
        if let Some(a) = self.allocs.get(*last)
            && addr >= a.base
            && addr.wrapping_add(size) <= a.base + a.data.len() as u64
            && addr.checked_add(size).is_some()
        {
            return Some((*last, (addr - a.base) as usize));
        }
        let i = self.allocs.partition_point(|a| a.base <= addr);
        if i == 0 {
            return None;
        }
        let a = &self.allocs[i - 1];
        if addr.checked_add(size)? <= a.base + a.data.len() as u64 {
            *last = i - 1;
            Some((i - 1, (addr - a.base) as usize))
        } else {
            None
        }
    }

    #[inline]
    pub(crate) fn find(&mut self, addr: u64, size: u64) -> Option<(usize, usize)> {
        let mut last = self.last;
        let r = self.find_at(&mut last, addr, size);
        self.last = last;
        r
    }
}

impl Sim {
    /// Place this simulator's global allocations from `base` on (256-byte
    /// aligned, at least [`GLOBAL_BASE`], below the state-space windows),
    /// so that several simulators in one process hand out disjoint
    /// addresses and a pointer of one used in another is out of bounds
    /// (the CUDA driver emulator gives each context its own range). Only
    /// before the first allocation.
    ///
    /// # Errors
    /// [`SimError::InvalidMemory`] after an allocation, or for a base that
    /// is misaligned or outside `[GLOBAL_BASE, CONST_WINDOW)`.
    pub fn set_global_base(&mut self, base: u64) -> Result<(), SimError> {
        if self.mem.next != GLOBAL_BASE || !self.mem.allocs.is_empty() {
            return Err(SimError::InvalidMemory(
                "set_global_base after the first allocation".into(),
            ));
        }
        if !base.is_multiple_of(256) || !(GLOBAL_BASE..CONST_WINDOW).contains(&base) {
            return Err(SimError::InvalidMemory(format!(
                "global base {base:#x} must be 256-byte aligned and in [{GLOBAL_BASE:#x}, {CONST_WINDOW:#x})"
            )));
        }
        self.mem.next = base;
        Ok(())
    }

    /// Allocate `bytes` of global memory; returns its address. The bytes
    /// read back as zero but are tracked as uninitialised: with checks on,
    /// a kernel load of a byte that neither the host ([`Sim::write`]) nor a
    /// kernel wrote is [`SimError::UninitializedGlobal`].
    pub fn alloc(&mut self, bytes: usize) -> Result<u64, SimError> {
        self.alloc_inner(bytes, false)
    }

    /// Allocate `bytes` of zero-initialised global memory (counts as
    /// written).
    pub fn alloc_zeroed(&mut self, bytes: usize) -> Result<u64, SimError> {
        self.alloc_inner(bytes, true)
    }

    pub(crate) fn alloc_inner(&mut self, bytes: usize, init: bool) -> Result<u64, SimError> {
        let base = self.mem.next;
        let span = (bytes as u64).div_ceil(256) * 256;
        self.mem.next = base + span + GUARD;
        if self.mem.next >= CONST_WINDOW {
            return Err(SimError::InvalidMemory(
                "simulated address space exhausted".into(),
            ));
        }
        let data = self.mem.spare.take(bytes);
        self.mem.allocs.push(Alloc::new(base, data, init));
        Ok(base)
    }

    /// Copy `data` to global memory at `addr` (inside one allocation).
    pub fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), SimError> {
        let (i, o) = self.mem.find(addr, data.len() as u64).ok_or_else(|| {
            SimError::InvalidMemory(format!(
                "write of {} bytes at {addr:#x} is outside every allocation",
                data.len()
            ))
        })?;
        self.mem.allocs[i].data[o..o + data.len()].copy_from_slice(data);
        self.mem.allocs[i].set_init(o, data.len());
        Ok(())
    }

    /// Copy global memory at `addr` (inside one allocation) to `out`.
    pub fn read(&mut self, addr: u64, out: &mut [u8]) -> Result<(), SimError> {
        let (i, o) = self.mem.find(addr, out.len() as u64).ok_or_else(|| {
            SimError::InvalidMemory(format!(
                "read of {} bytes at {addr:#x} is outside every allocation",
                out.len()
            ))
        })?;
        out.copy_from_slice(&self.mem.allocs[i].data[o..o + out.len()]);
        Ok(())
    }

    /// Copy `bytes` bytes from `src` to `dst` (each inside one allocation;
    /// the ranges may overlap). The destination counts as written where the
    /// source was.
    pub fn copy_within(&mut self, dst: u64, src: u64, bytes: usize) -> Result<(), SimError> {
        let outside = |what: &str, a: u64| {
            SimError::InvalidMemory(format!(
                "device copy {what} of {bytes} bytes at {a:#x} is outside every allocation"
            ))
        };
        let (si, so) = self
            .mem
            .find(src, bytes as u64)
            .ok_or_else(|| outside("source", src))?;
        let data = self.mem.allocs[si].data[so..so + bytes].to_vec();
        let init = self.mem.allocs[si].init_of(so, bytes);
        let (di, d) = self
            .mem
            .find(dst, bytes as u64)
            .ok_or_else(|| outside("destination", dst))?;
        self.mem.allocs[di].data[d..d + bytes].copy_from_slice(&data);
        self.mem.allocs[di].copy_init(d, &init);
        Ok(())
    }

    /// Set `bytes` bytes at `addr` (inside one allocation) to zero.
    pub fn fill_zero(&mut self, addr: u64, bytes: usize) -> Result<(), SimError> {
        let (i, o) = self.mem.find(addr, bytes as u64).ok_or_else(|| {
            SimError::InvalidMemory(format!(
                "zeroing {bytes} bytes at {addr:#x} is outside every allocation"
            ))
        })?;
        self.mem.allocs[i].data[o..o + bytes].fill(0);
        self.mem.allocs[i].set_init(o, bytes);
        Ok(())
    }

    /// Release the allocation starting at `addr`. Addresses are never
    /// reused, so a later access through a stale pointer is out of bounds.
    pub fn free(&mut self, addr: u64) -> Result<(), SimError> {
        let i = self
            .mem
            .allocs
            .iter()
            .position(|a| a.base == addr)
            .ok_or_else(|| {
                SimError::InvalidMemory(format!("free of {addr:#x}, which is not an allocation"))
            })?;
        let a = self.mem.allocs.remove(i);
        self.mem.spare.keep(a.data);
        self.mem.last = 0;
        Ok(())
    }

    /// Number of live allocations.
    pub fn live_allocations(&self) -> usize {
        self.mem.allocs.len()
    }

    /// Load `prog` into this simulator: its module-scope `.global`
    /// variables and a device copy of its `.const` bank get one
    /// allocation holding the module image (the initialisers, zero
    /// elsewhere; every byte counts as written), and the returned copy's
    /// instructions address it (see `parse/globals.rs`); launches read the
    /// `.const` bank from that copy.
    /// The variables keep their values across launches of the returned
    /// program until [`Sim::unload_module`]. A program without variables
    /// comes back as it is (nothing allocated); each call loads a fresh
    /// copy of the variables, as each module load on a GPU does.
    /// [`Sim::program`] loads the programs it caches.
    pub fn load_module(&mut self, prog: &Arc<Program>) -> Result<Arc<Program>, SimError> {
        if prog.globals.is_empty() && prog.consts.is_empty() {
            return Ok(Arc::clone(prog));
        }
        let base = self.alloc_inner(prog.global_image_len().max(1), true)?;
        let loaded = prog.relocated(base);
        if !loaded.global_image.is_empty() {
            self.write(base, &loaded.global_image)?;
        }
        if !loaded.consts.is_empty() {
            self.write(base + loaded.const_image_offset(), &loaded.consts)?;
        }
        Ok(Arc::new(loaded))
    }

    /// Release the module variables of `prog` (a program returned by
    /// [`Sim::load_module`]); nothing for a program without variables
    /// (`.global` or `.const`).
    pub fn unload_module(&mut self, prog: &Program) -> Result<(), SimError> {
        match prog.global_base {
            Some(b) => self.free(b),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Sm;

    /// The allocation at `addr` (whole-allocation address).
    fn at(sim: &mut Sim, addr: u64) -> &Alloc {
        let (i, _) = sim.mem.find(addr, 1).unwrap();
        &sim.mem.allocs[i]
    }

    /// Every byte's written state, through the per-byte query.
    fn states(a: &Alloc) -> Vec<bool> {
        (0..a.data.len()).map(|o| a.is_init(o)).collect()
    }

    #[test]
    fn written_state_without_and_with_flags() {
        let mut sim = Sim::new(Sm::Sm80);
        let a = sim.alloc(100).unwrap();
        let z = sim.alloc_zeroed(100).unwrap();
        // one state each: no per-byte flags
        assert_eq!(at(&mut sim, a).first_uninit(10, 5), Some(0));
        assert!(at(&mut sim, a).init.is_empty());
        assert_eq!(at(&mut sim, z).first_uninit(0, 100), None);
        assert!(at(&mut sim, z).init.is_empty());
        // a partial write makes the flags; the query sees the gap
        sim.write(a + 20, &[7; 30]).unwrap();
        let al = at(&mut sim, a);
        assert_eq!(al.first_uninit(20, 30), None);
        assert_eq!(al.first_uninit(20, 31), Some(30));
        assert_eq!(al.first_uninit(0, 100), Some(0));
        let want: Vec<bool> = (0..100).map(|o| (20..50).contains(&o)).collect();
        assert_eq!(states(al), want);
        assert_eq!(al.uninit, 70);
        // the rest written: the flags go
        sim.write(a, &[1; 20]).unwrap();
        sim.write(a + 50, &[2; 50]).unwrap();
        let al = at(&mut sim, a);
        assert_eq!((al.uninit, al.init.is_empty()), (0, true));
        assert_eq!(al.first_uninit(0, 100), None);
        // a whole write of a fresh allocation never makes them
        let b = sim.alloc(64).unwrap();
        sim.write(b, &[3; 64]).unwrap();
        let bl = at(&mut sim, b);
        assert_eq!((bl.uninit, bl.init.is_empty()), (0, true));
        // empty allocations count as written
        let e = sim.alloc(0).unwrap();
        let el = &sim.mem.allocs[sim.mem.allocs.iter().position(|x| x.base == e).unwrap()];
        assert_eq!((el.uninit, el.first_uninit(0, 0)), (0, None));
    }

    #[test]
    fn device_copies_carry_the_written_state() {
        let mut sim = Sim::new(Sm::Sm80);
        let src = sim.alloc(64).unwrap();
        sim.write(src + 8, &[9; 8]).unwrap(); // bytes 8..16 written
        let dst = sim.alloc_zeroed(64).unwrap();
        sim.copy_within(dst, src, 32).unwrap();
        let want: Vec<bool> = (0..64).map(|o| (8..16).contains(&o) || o >= 32).collect();
        assert_eq!(states(at(&mut sim, dst)), want);
        assert_eq!(at(&mut sim, dst).uninit, 24);
        // a written source over a fresh destination, whole: no flags
        let full = sim.alloc_zeroed(64).unwrap();
        let fresh = sim.alloc(64).unwrap();
        sim.copy_within(fresh, full, 64).unwrap();
        let f = at(&mut sim, fresh);
        assert_eq!((f.uninit, f.init.is_empty()), (0, true));
        // unwritten over unwritten changes nothing
        let u1 = sim.alloc(64).unwrap();
        let u2 = sim.alloc(64).unwrap();
        sim.copy_within(u2, u1, 64).unwrap();
        let u = at(&mut sim, u2);
        assert_eq!((u.uninit, u.init.is_empty()), (64, true));
        // part of a written source over an unwritten destination
        sim.copy_within(u2 + 4, full, 4).unwrap();
        let want: Vec<bool> = (0..64).map(|o| (4..8).contains(&o)).collect();
        assert_eq!(states(at(&mut sim, u2)), want);
    }

    #[test]
    fn reused_buffers_read_as_new_ones() {
        let mut sim = Sim::new(Sm::Sm80);
        let n = 256 << 10;
        let a = sim.alloc(n).unwrap();
        sim.write(a, &vec![0xAB; n]).unwrap();
        sim.free(a).unwrap();
        assert_eq!(sim.mem.spare.bufs.len(), 1);
        // same size: the kept buffer, zeroed, unwritten, at a new address
        let b = sim.alloc(n).unwrap();
        assert_ne!(a, b);
        assert!(sim.mem.spare.bufs.is_empty());
        let mut out = vec![1u8; n];
        sim.read(b, &mut out).unwrap();
        assert!(out.iter().all(|&v| v == 0));
        assert_eq!(at(&mut sim, b).first_uninit(0, n), Some(0));
        // the stale address stays out of bounds
        assert!(sim.read(a, &mut out[..4]).is_err());
        // small buffers are not kept; the kept bytes stay under the cap
        let s = sim.alloc(100).unwrap();
        sim.free(s).unwrap();
        assert!(sim.mem.spare.bufs.is_empty());
        let big = Spare::CAP / 3 + 1;
        let xs: Vec<u64> = (0..4).map(|_| sim.alloc(big).unwrap()).collect();
        for x in xs {
            sim.free(x).unwrap();
            assert!(sim.mem.spare.bytes <= Spare::CAP);
        }
        assert_eq!(sim.mem.spare.bufs.len(), 2);
        // a much smaller request does not take a large kept buffer
        let c = sim.alloc(Spare::MIN).unwrap();
        assert_eq!(sim.mem.spare.bufs.len(), 2);
        sim.free(c).unwrap();
    }
}
