//! Shared-memory race and initialisation check: per byte the last write
//! and the last read(s) are tagged with the barrier epoch, the warp-sync
//! epoch and the thread. Epochs keep counting across the CTAs a worker
//! runs, so a byte whose write tag is older than the CTA's first epoch was
//! not written by this CTA (no clearing between CTAs).

use super::super::cta::CtaState;
use super::super::exec::Fault;

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

impl CtaState {
    /// Check a shared access of `len` bytes at offset `off` by thread `t`
    /// and update the race metadata.
    #[inline]
    pub(crate) fn shared_check(
        &mut self,
        t: usize,
        off: usize,
        len: usize,
        write: bool,
        atomic: bool,
    ) -> Result<(), Box<Fault>> {
        match len {
            4 => self.shared_word::<4>(t, off, off, len, write, atomic),
            8 => self.shared_word::<8>(t, off, off, len, write, atomic),
            16 => {
                for k in 0..4 {
                    self.shared_word::<4>(t, off + 4 * k, off, len, write, atomic)?;
                }
                Ok(())
            }
            _ => self.shared_runs(t, off, off + len, off, len, write, atomic),
        }
    }

    /// The check of the `N` bytes at `at` of an access of `len` bytes at
    /// `off`: when they carry one write tag and one read tag (a word
    /// written and read as a unit) the first byte decides and every byte
    /// gets its new tags.
    #[inline(always)]
    fn shared_word<const N: usize>(
        &mut self,
        t: usize,
        at: usize,
        off: usize,
        len: usize,
        write: bool,
        atomic: bool,
    ) -> Result<(), Box<Fault>> {
        let w: [u64; N] = self.sh_w[at..at + N].try_into().unwrap();
        let r: [u64; N] = self.sh_r[at..at + N].try_into().unwrap();
        if w.iter().all(|&x| x == w[0]) && r.iter().all(|&x| x == r[0]) {
            self.shared_byte(t, at, off, len, write, atomic)?;
            // a write changes only the write tag, a read only the read tag
            if write {
                let w1 = self.sh_w[at];
                self.sh_w[at..at + N].copy_from_slice(&[w1; N]);
            } else {
                let r1 = self.sh_r[at];
                self.sh_r[at..at + N].copy_from_slice(&[r1; N]);
            }
            return Ok(());
        }
        self.shared_runs(t, at, at + N, off, len, write, atomic)
    }

    /// The check of the bytes `at..end` of an access of `len` bytes at
    /// `off`, run by run of bytes with equal tags.
    #[allow(clippy::too_many_arguments)]
    fn shared_runs(
        &mut self,
        t: usize,
        at: usize,
        end: usize,
        off: usize,
        len: usize,
        write: bool,
        atomic: bool,
    ) -> Result<(), Box<Fault>> {
        // Bytes that carry the same write and read tags (a word written and
        // read as a unit) are decided by the first of them and all get its
        // new tags: the access is checked run by run.
        let mut i = at;
        while i < end {
            let (w0, r0) = (self.sh_w[i], self.sh_r[i]);
            let mut j = i + 1;
            while j < end && self.sh_w[j] == w0 && self.sh_r[j] == r0 {
                j += 1;
            }
            self.shared_byte(t, i, off, len, write, atomic)?;
            if j > i + 1 {
                let (w1, r1) = (self.sh_w[i], self.sh_r[i]);
                self.sh_w[i + 1..j].fill(w1);
                self.sh_r[i + 1..j].fill(r1);
            }
            i = j;
        }
        Ok(())
    }

    /// The check of byte `i` of an access at `off` of `len` bytes.
    #[inline(always)]
    fn shared_byte(
        &mut self,
        t: usize,
        i: usize,
        off: usize,
        len: usize,
        write: bool,
        atomic: bool,
    ) -> Result<(), Box<Fault>> {
        let ep = self.epoch;
        let w = t / 32;
        let my = tag(ep, self.wepoch[w], t as u64, atomic);
        let wt = self.sh_w[i];
        if (!write || atomic) && ((wt >> 32) as u32) < self.epoch0 {
            return Err(Box::new(Fault::UninitShared(off as u64, len as u32)));
        }
        let wepoch = self.wepoch[w];
        let conflict = |tg: u64| -> bool {
            if (tg >> 32) as u32 != ep {
                return false;
            }
            let ot = tg & 0x7FF;
            if ot == t as u64 {
                return false;
            }
            // same warp, separated by a bar.warp.sync since: ordered
            !(tag_warp(ot) == Some(w) && ((tg >> 12) & 0xF_FFFF) as u32 != wepoch & 0xF_FFFF)
        };
        if conflict(wt) && !(atomic && wt & ATOMIC_BIT != 0) {
            let other = if wt & ATOMIC_BIT != 0 {
                "atomic"
            } else {
                "write"
            };
            return Err(Box::new(Fault::Race {
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
            }));
        }
        let rt = self.sh_r[i];
        if write {
            if conflict(rt) {
                let ot = (rt & 0x7FF) as u32;
                return Err(Box::new(Fault::Race {
                    offset: i as u64,
                    this: if atomic { "atomic" } else { "write" },
                    other: "read",
                    other_tid: if ot as u64 >= MULTI_WARP {
                        u32::MAX
                    } else {
                        ot
                    },
                }));
            }
            self.sh_w[i] = my;
        } else {
            let ot = rt & 0x7FF;
            self.sh_r[i] = if (rt >> 32) as u32 == ep && ot != t as u64 {
                // a second reader in this barrier interval: keep the warp
                // (and its latest warp-sync epoch) when all readers share it
                if tag_warp(ot) == Some(w) {
                    tag(ep, wepoch, MULTI_WARP + w as u64, false)
                } else {
                    tag(ep, 0, MULTI, false)
                }
            } else {
                my
            };
        }
        Ok(())
    }
}
