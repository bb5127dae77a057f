//! Shared-memory race and initialisation check: per byte the last write
//! and the last read(s) are tagged with the barrier epoch, the warp-sync
//! epoch and the thread.

use super::super::exec::{Exec, Fault};

/// Reader field of a byte read by several threads of different warps.
pub(crate) const MULTI: u64 = 0x7FF;

/// Reader field `MULTI_WARP + w`: several threads, all of warp `w`.
pub(crate) const MULTI_WARP: u64 = 1024;

/// The warp a tag's thread field belongs to (`None` for [`MULTI`]).
#[inline(always)]
pub(crate) fn tag_warp(ot: u64) -> Option<usize> {
    if ot < MULTI_WARP {
        Some((ot / 32) as usize)
    } else if ot < MULTI_WARP + 32 {
        Some((ot - MULTI_WARP) as usize)
    } else {
        None
    }
}
pub(crate) const ATOMIC_BIT: u64 = 1 << 11;

#[inline]
pub(crate) fn tag(epoch: u32, wep: u32, t: u64, atomic: bool) -> u64 {
    (epoch as u64) << 32 | ((wep as u64) & 0xF_FFFF) << 12 | if atomic { ATOMIC_BIT } else { 0 } | t
}

impl Exec<'_> {
    /// Check a shared access and update the race metadata.
    pub(crate) fn shared_check(
        &mut self,
        t: usize,
        off: usize,
        len: usize,
        write: bool,
        atomic: bool,
    ) -> Result<(), Fault> {
        let c = &mut *self.cta;
        let ep = c.epoch;
        let w = t / 32;
        let my = tag(ep, c.wepoch[w], t as u64, atomic);
        for i in off..off + len {
            let wt = c.sh_w[i];
            if (!write || atomic) && wt == 0 {
                return Err(Fault::UninitShared(off as u64, len as u32));
            }
            let conflict = |tg: u64, wepoch: &[u32]| -> bool {
                if (tg >> 32) as u32 != ep {
                    return false;
                }
                let ot = tg & 0x7FF;
                if ot == t as u64 {
                    return false;
                }
                // same warp, separated by a bar.warp.sync since: ordered
                !(tag_warp(ot) == Some(w) && ((tg >> 12) & 0xF_FFFF) as u32 != wepoch[w] & 0xF_FFFF)
            };
            if conflict(wt, &c.wepoch) && !(atomic && wt & ATOMIC_BIT != 0) {
                let other = if wt & ATOMIC_BIT != 0 {
                    "atomic"
                } else {
                    "write"
                };
                return Err(Fault::Race {
                    offset: i as u64,
                    this: if atomic {
                        "atomic"
                    } else if write {
                        "write"
                    } else {
                        "read"
                    },
                    other,
                    other_tid: (wt & 0x7FF) as u32,
                });
            }
            if write {
                let rt = c.sh_r[i];
                if conflict(rt, &c.wepoch) {
                    let ot = (rt & 0x7FF) as u32;
                    return Err(Fault::Race {
                        offset: i as u64,
                        this: if atomic { "atomic" } else { "write" },
                        other: "read",
                        other_tid: if ot as u64 >= MULTI_WARP {
                            u32::MAX
                        } else {
                            ot
                        },
                    });
                }
                c.sh_w[i] = my;
            } else {
                let rt = c.sh_r[i];
                let ot = rt & 0x7FF;
                c.sh_r[i] = if (rt >> 32) as u32 == ep && ot != t as u64 {
                    // a second reader in this barrier interval: keep the warp
                    // (and its latest warp-sync epoch) when all readers share it
                    if tag_warp(ot) == Some(w) {
                        tag(ep, c.wepoch[w], MULTI_WARP + w as u64, false)
                    } else {
                        tag(ep, 0, MULTI, false)
                    }
                } else {
                    my
                };
            }
        }
        Ok(())
    }
}
