//! Memory access of one thread: generic-address resolution, bounds and
//! alignment per state space, global initialisation, and the loads behind
//! `ld` (params and constants read in place).

use super::super::ir::*;
use super::super::memory::{CONST_WINDOW, LOCAL_WINDOW, SHARED_WINDOW, WINDOW_SIZE};
use super::{Exec, Fault};

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

    /// The byte slice of an access of `len` bytes (alignment `align`).
    #[inline(always)]
    pub(crate) fn access(
        &mut self,
        t: usize,
        sp: Space,
        addr: u64,
        len: u32,
        write: bool,
        atomic: bool,
    ) -> Result<&mut [u8], Fault> {
        let (sp, a) = Self::resolve(sp, addr);
        if a & (len as u64 - 1) != 0 {
            return Err(Fault::Misaligned(sp, addr, len));
        }
        let l = len as usize;
        match sp {
            Space::Global => match self.mem.find(a, len as u64) {
                Some((i, o)) => {
                    let al = &mut self.mem.allocs[i];
                    if self.checks {
                        let init = &mut al.init[o..o + l];
                        if !write || atomic {
                            if let Some(k) = init.iter().position(|b| !*b) {
                                return Err(Fault::UninitGlobal(addr + k as u64, len));
                            }
                        } else {
                            init.fill(true);
                        }
                    }
                    Ok(&mut al.data[o..o + l])
                }
                None => Err(Fault::Oob(sp, addr, len)),
            },
            Space::Shared => {
                if a.checked_add(len as u64)
                    .is_none_or(|end| end > self.cta.shared.len() as u64)
                {
                    return Err(Fault::Oob(sp, a, len));
                }
                let o = a as usize;
                if self.checks {
                    self.shared_check(t, o, l, write, atomic)?;
                }
                Ok(&mut self.cta.shared[o..o + l])
            }
            Space::Local => {
                let lb = self.e.local_bytes as u64;
                if a.checked_add(len as u64).is_none_or(|end| end > lb) {
                    return Err(Fault::Oob(sp, a, len));
                }
                let o = t * lb as usize + a as usize;
                Ok(&mut self.cta.local[o..o + l])
            }
            Space::Param => {
                if write
                    || a.checked_add(len as u64)
                        .is_none_or(|end| end > self.params.len() as u64)
                {
                    return Err(Fault::Oob(sp, a, len));
                }
                // params are read-only; hand out a copy through the scratch
                Err(Fault::Trap("internal: param access".into()))
            }
            Space::Const | Space::Generic => {
                if write
                    || a.checked_add(len as u64)
                        .is_none_or(|end| end > self.consts.len() as u64)
                {
                    return Err(Fault::Oob(Space::Const, a, len));
                }
                Err(Fault::Trap("internal: const access".into()))
            }
        }
    }

    #[inline(always)]
    pub(crate) fn load(
        &mut self,
        t: usize,
        sp: Space,
        addr: u64,
        size: u8,
        n: u8,
        out: &mut [u64; 4],
    ) -> Result<(), Fault> {
        let total = size as u32 * n as u32;
        let (rs, ra) = Self::resolve(sp, addr);
        let bytes: &[u8] = match rs {
            Space::Param | Space::Const => {
                if ra & (total as u64 - 1) != 0 {
                    return Err(Fault::Misaligned(rs, addr, total));
                }
                let src: &[u8] = if rs == Space::Param {
                    self.params
                } else {
                    self.consts
                };
                if ra
                    .checked_add(total as u64)
                    .is_none_or(|end| end > src.len() as u64)
                {
                    return Err(Fault::Oob(rs, ra, total));
                }
                &src[ra as usize..ra as usize + total as usize]
            }
            _ => self.access(t, sp, addr, total, false, false)?,
        };
        for k in 0..n as usize {
            let mut b = [0u8; 8];
            b[..size as usize].copy_from_slice(&bytes[k * size as usize..(k + 1) * size as usize]);
            out[k] = u64::from_le_bytes(b);
        }
        Ok(())
    }
}
