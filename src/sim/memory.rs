//! Global memory, the machine state that outlives a launch: allocations at
//! distinct addresses with unmapped guard gaps (never reused), their bytes
//! and per-byte initialisation, the generic-address windows of the other
//! state spaces, and the host-side memory API of [`Sim`].

use super::error::SimError;
use super::machine::Sim;

/// Generic-address window of `.shared` (a CTA's shared offset `o` has the
/// generic address `SHARED_WINDOW + o`).
pub const SHARED_WINDOW: u64 = 0x0000_7E00_0000_0000;
/// Generic-address window of `.local`.
pub const LOCAL_WINDOW: u64 = 0x0000_7D00_0000_0000;
/// Generic-address window of `.const`.
pub const CONST_WINDOW: u64 = 0x0000_7C00_0000_0000;
pub(crate) const WINDOW_SIZE: u64 = 1 << 32;
/// First global allocation address; allocations are 256-byte aligned and
/// separated by at least `GUARD` unmapped bytes.
pub const GLOBAL_BASE: u64 = 0x0000_0001_0000_0000;
pub(crate) const GUARD: u64 = 4096;

pub(crate) struct Alloc {
    pub(crate) base: u64,
    pub(crate) data: Vec<u8>,
    /// Per byte: written by the host or a kernel since allocation.
    init: Vec<bool>,
    /// Bytes not written yet (0: the common, fully written allocation,
    /// whose reads need no per-byte look).
    uninit: usize,
}

impl Alloc {
    fn new(base: u64, bytes: usize, init: bool) -> Alloc {
        Alloc {
            base,
            data: vec![0; bytes],
            init: vec![init; bytes],
            uninit: if init { 0 } else { bytes },
        }
    }

    /// The first byte of `[o, o + l)` not written yet (as an offset from
    /// `o`).
    #[inline(always)]
    pub(crate) fn first_uninit(&self, o: usize, l: usize) -> Option<usize> {
        if self.uninit == 0 {
            return None;
        }
        self.init[o..o + l].iter().position(|b| !*b)
    }

    /// Whether byte `o` was written.
    #[inline(always)]
    pub(crate) fn is_init(&self, o: usize) -> bool {
        self.uninit == 0 || self.init[o]
    }

    /// Count `[o, o + l)` as written.
    #[inline(always)]
    pub(crate) fn set_init(&mut self, o: usize, l: usize) {
        if self.uninit == 0 {
            return;
        }
        // count, then fill: both loops vectorise (a host write of a whole
        // buffer is one pass over its flags, not a branch per byte)
        let r = &mut self.init[o..o + l];
        let fresh: usize = r
            .chunks(255)
            .map(|c| c.iter().fold(0u8, |n, &b| n + !b as u8) as usize)
            .sum();
        r.fill(true);
        self.uninit -= fresh;
    }

    /// Set the written state of `[o, o + flags.len())` to `flags`.
    fn copy_init(&mut self, o: usize, flags: &[bool]) {
        for (b, &f) in self.init[o..o + flags.len()].iter_mut().zip(flags) {
            if *b != f {
                *b = f;
                if f {
                    self.uninit -= 1;
                } else {
                    self.uninit += 1;
                }
            }
        }
    }
}

/// Global memory: allocations at distinct addresses with guard gaps.
#[derive(Default)]
pub(crate) struct GlobalMem {
    pub(crate) allocs: Vec<Alloc>,
    pub(crate) last: usize,
    pub(crate) next: u64,
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
        self.mem.allocs.push(Alloc::new(base, bytes, init));
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
        let init = self.mem.allocs[si].init[so..so + bytes].to_vec();
        // (`init` is per byte even for a fully written allocation)
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
        self.mem.allocs.remove(i);
        self.mem.last = 0;
        Ok(())
    }

    /// Number of live allocations.
    pub fn live_allocations(&self) -> usize {
        self.mem.allocs.len()
    }
}
