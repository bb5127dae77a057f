//! Shared-memory race and initialisation check.
//!
//! # The rule, per byte
//! Every shared byte carries two tags: the last write's and the last
//! read(s)'. A tag is the barrier epoch, the warp-sync epoch of the
//! accessing warp (20 bits), an atomic bit and the thread (11 bits: a
//! thread, [`MULTI_WARP`]` + w` for several readers all of warp `w`, or
//! [`MULTI`] for readers of several warps). An access of `len` bytes at
//! `off` by thread `t` applies the step of [`step`] to its bytes in
//! ascending order and stops at the first finding:
//! * a read or atomic of a byte whose write tag is older than the CTA's
//!   first epoch is uninitialised (reported with `off` and `len`);
//! * a write tag of this barrier interval by another thread, not ordered
//!   by a `bar.warp.sync` of the same warp since, is a race (unless both
//!   accesses are atomic), reported at the byte with that thread;
//! * for a write, the same with the read tag (several readers are
//!   reported as `u32::MAX`);
//! * then a write sets the write tag, a read the read tag: to this
//!   thread's, or to a several-readers tag when another thread read the
//!   byte in this interval.
//!
//! Epochs keep counting across the CTAs a worker runs, so a byte whose
//! write tag is older than the CTA's first epoch was not written by this
//! CTA (no clearing between CTAs; the tags are cleared only when the epoch
//! counter nears its end, see [`SharedShadow::clear`]).
//!
//! # The representation, per word
//! Kernels mostly access shared memory in aligned 4-, 8- and 16-byte
//! units, so the four bytes of a word usually carry equal tags. The shadow
//! keeps one (write, read) tag pair per 4-byte word; a word whose bytes
//! got different tags is *split*: its write tag is [`SPLIT`] (which no
//! access writes) and its bytes' tags live
//! in a per-byte side table, allocated at the first split. The contract:
//! the tags of byte `i` of word `k` are the word's pair when the word is
//! not split, else the side table's pair of byte `i`.
//!
//! The step depends on a byte's tags and the access, not on where the
//! byte is, and it updates only that byte. So a whole-word access to a
//! word that is not split does the step once, on the pair, and a finding
//! there is the word's first byte's — exactly what the per-byte rule
//! gives, since its first byte decides first and with the same result as
//! the other three. A sub-word access, or any access to a split word,
//! splits the word (copying the pair to its four bytes) and steps byte by
//! byte; the word is joined again when its four bytes end with equal tags
//! (a word store over bytes that all have old read tags, for example).
//! Findings (kind, offset, both accesses, the other thread, and which
//! finding comes first) are therefore exactly the per-byte rule's; the
//! unit tests compare the two on random access sequences.

use super::super::cta::CtaState;
use super::super::interp::Fault;
use super::benign::{SameWrite, Where};
use super::global::Kind;
use super::probe::Probe;

/// Reader field of a byte read by several threads of different warps.
pub(crate) const MULTI: u64 = 0x7FF;

/// Reader field `MULTI_WARP + w`: several threads, all of warp `w`.
pub(crate) const MULTI_WARP: u64 = 1024;

/// The write tag of a split word: its bytes' tags are in the side table.
/// No access writes it (a write tag's thread field is a thread, not
/// [`MULTI`]); its epoch is 0, older than every CTA's first.
pub(crate) const SPLIT: u64 = 0xFFFF_FFFF;

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

/// One shared access as the check sees it.
#[derive(Clone, Copy)]
pub(crate) struct Access {
    /// The thread.
    pub t: usize,
    /// Byte offset and length of the whole access (what an uninitialised
    /// read reports).
    pub off: usize,
    pub len: usize,
    pub write: bool,
    pub atomic: bool,
    /// The CTA's barrier epoch now, and its first one.
    pub epoch: u32,
    pub epoch0: u32,
    /// The warp-sync epoch of the thread's warp.
    pub wepoch: u32,
    /// For a plain write: bit `j` set when the write leaves byte `off + j`
    /// as it is (a conflict of such a byte with another thread's plain
    /// write is a same-value one, `checks::benign`, not a race); 0 makes
    /// every conflict a race.
    pub same: u64,
}

/// Whether the access of thread `ot` recorded in byte `i`'s write tag
/// (`true`) or read tag (`false`) happens before the access being checked
/// by an ordering the epochs do not see (an mbarrier phase,
/// `interp::mbar_order`); [`NO_HB`] knows none.
pub(crate) trait Hb: Fn(usize, u64, bool) -> bool {}
impl<F: Fn(usize, u64, bool) -> bool> Hb for F {}

/// No ordering besides the epochs'.
#[inline(always)]
pub(crate) fn no_hb(_: usize, _: u64, _: bool) -> bool {
    false
}

/// [`no_hb`] as the check's default.
pub(crate) const NO_HB: fn(usize, u64, bool) -> bool = no_hb;

impl Access {
    /// A write or read of a CTA's shared memory by no thread of the CTA (a
    /// `st`/`ld.shared::cluster` of another CTA, a landed bulk copy): the
    /// thread [`REMOTE_T`](crate::sim::interp::cluster::REMOTE_T) at the
    /// CTA's first epoch `epoch0`, which no access of the CTA's own threads
    /// conflicts with, never graded same-value.
    pub(crate) fn remote(off: usize, len: usize, write: bool, epoch0: u32) -> Access {
        Access {
            t: super::super::interp::cluster::REMOTE_T,
            off,
            len,
            write,
            atomic: false,
            epoch: epoch0,
            epoch0,
            wepoch: 0,
            same: 0,
        }
    }
}

/// The step of the per-byte rule (see the module docs) for a byte at
/// offset `i` with tags `(wt, rt)`: its new tags, or the finding. A
/// conflicting tag of a single thread that `hb` orders before the access
/// is no conflict.
#[inline(always)]
fn step(a: &Access, i: usize, wt: u64, rt: u64, hb: &impl Hb) -> Result<(u64, u64), Box<Fault>> {
    let (t, ep, write, atomic) = (a.t, a.epoch, a.write, a.atomic);
    let w = t / 32;
    if (!write || atomic) && ((wt >> 32) as u32) < a.epoch0 {
        return Err(Box::new(Fault::UninitShared(a.off as u64, a.len as u32)));
    }
    let wepoch = a.wepoch;
    let conflict = |tg: u64, wtag: bool| -> bool {
        if (tg >> 32) as u32 != ep {
            return false;
        }
        let ot = tg & 0x7FF;
        if ot == t as u64 {
            return false;
        }
        // same warp, separated by a bar.warp.sync since: ordered
        let warp_synced =
            tag_warp(ot) == Some(w) && ((tg >> 12) & 0xF_FFFF) as u32 != wepoch & 0xF_FFFF;
        // a single thread's access ordered by `hb`
        let ordered = ot < MULTI_WARP && hb(i, ot, wtag);
        !(warp_synced || ordered)
    };
    // a plain write over another thread's plain write of the same byte
    let same = write && !atomic && wt & ATOMIC_BIT == 0 && a.same >> (i - a.off) & 1 != 0;
    let clash = conflict(wt, true) && !(atomic && wt & ATOMIC_BIT != 0);
    if clash && !same {
        let ot = wt & 0x7FF;
        return Err(race(
            i,
            a,
            if wt & ATOMIC_BIT != 0 {
                Kind::Atomic
            } else {
                Kind::Write
            },
            if ot == MULTI { u32::MAX } else { ot as u32 },
        ));
    }
    if write {
        if conflict(rt, false) {
            let ot = rt & 0x7FF;
            let ot = if ot >= MULTI_WARP {
                u32::MAX
            } else {
                ot as u32
            };
            return Err(race(i, a, Kind::Read, ot));
        }
        // a same-value write over another thread's: written by several
        // threads from now on (every later access of another thread,
        // or of these two, conflicts)
        let who = if clash { MULTI } else { t as u64 };
        Ok((tag(ep, wepoch, who, atomic), rt))
    } else {
        Ok((wt, read_tag(a, rt, tag(ep, wepoch, t as u64, atomic))))
    }
}

/// The read tag after read `a` of a byte with read tag `rt`, `my` being
/// the reader's own tag.
#[inline(always)]
fn read_tag(a: &Access, rt: u64, my: u64) -> u64 {
    let ot = rt & 0x7FF;
    if (rt >> 32) as u32 == a.epoch && ot != a.t as u64 {
        // a second reader in this barrier interval: keep the warp (and
        // its latest warp-sync epoch) when all readers share it
        let w = a.t / 32;
        if tag_warp(ot) == Some(w) {
            tag(a.epoch, a.wepoch, MULTI_WARP + w as u64, false)
        } else {
            tag(a.epoch, 0, MULTI, false)
        }
    } else {
        my
    }
}

#[cold]
#[inline(never)]
fn race(i: usize, a: &Access, other: Kind, other_tid: u32) -> Box<Fault> {
    Box::new(Fault::Race {
        offset: i as u64,
        this: if a.atomic {
            Kind::Atomic
        } else if a.write {
            Kind::Write
        } else {
            Kind::Read
        },
        other,
        other_tid,
    })
}

/// The race and initialisation tags of a CTA's shared memory (see the
/// module docs for the contract).
#[derive(Default)]
pub(crate) struct SharedShadow {
    /// Per 4-byte word: (write tag or [`SPLIT`], read tag).
    words: Vec<[u64; 2]>,
    /// Per byte: (write tag, read tag), meaningful in split words only;
    /// empty until the first split.
    bytes: Vec<[u64; 2]>,
}

impl SharedShadow {
    /// Tags for `smem` bytes of shared memory, none written.
    pub fn new(smem: usize) -> SharedShadow {
        SharedShadow {
            words: vec![[0; 2]; smem.div_ceil(4)],
            bytes: Vec::new(),
        }
    }

    /// Every byte unwritten and unread (epoch 0): before the epoch counter
    /// starts again.
    pub fn clear(&mut self) {
        self.words.fill([0; 2]);
    }

    /// The common case, without a finding: an access of one, two or four
    /// whole words none of whose tags can make a finding. Updates the tags
    /// and returns `true`; else changes nothing and returns `false` (the
    /// access then goes through [`SharedShadow::check`]).
    #[inline(always)]
    pub fn fast(&mut self, a: &Access) -> bool {
        if a.off & 3 != 0 {
            return false;
        }
        let k = a.off / 4;
        match a.len {
            4 => self.fast_words::<1>(k, a),
            8 => self.fast_words::<2>(k, a),
            16 => self.fast_words::<4>(k, a),
            _ => false,
        }
    }

    /// [`SharedShadow::fast`] on the `N` words from word `k`.
    ///
    /// A tag of another barrier interval or of the accessing thread itself
    /// conflicts with nothing. A read or an atomic also needs the write tag
    /// to be of this CTA (epoch at least `epoch0`), which a split word's
    /// [`SPLIT`] (epoch 0) is not; a plain write tests for [`SPLIT`]. When
    /// every word passes, the per-byte step gives each byte of the words
    /// the writer's tag (a write) or the read tag of [`read_tag`] (a
    /// read), and makes no finding.
    #[inline(always)]
    fn fast_words<const N: usize>(&mut self, k: usize, a: &Access) -> bool {
        let ws: &mut [[u64; 2]; N] = (&mut self.words[k..k + N]).try_into().unwrap();
        let t = a.t as u64;
        // `busy(tg)`: `tg` is of this barrier interval and of another
        // thread (or several): its epoch and thread fields differ from
        // `key`'s in the thread field only
        let key = (a.epoch as u64) << 32 | t;
        const FIELDS: u64 = 0xFFFF_FFFF_0000_07FF;
        let busy = |tg: u64| ((tg ^ key) & FIELDS).wrapping_sub(1) < 0x7FF;
        let ep0 = a.epoch0 as u64;
        let my = key | ((a.wepoch as u64) & 0xF_FFFF) << 12 | (a.atomic as u64) << 11;
        if a.write {
            for &[wt, rt] in ws.iter() {
                if busy(wt) || busy(rt) || wt == SPLIT || (a.atomic && wt >> 32 < ep0) {
                    return false;
                }
            }
            for p in ws.iter_mut() {
                p[0] = my;
            }
        } else {
            for &[wt, _] in ws.iter() {
                if wt >> 32 < ep0 || busy(wt) {
                    return false;
                }
            }
            // several readers in this interval (the common case of a word
            // many threads read): of several warps, or all of this warp
            // at its warp-sync epoch, stay so
            let multi = key & !0x7FF | MULTI;
            let mine = my & !0x7FF | (MULTI_WARP + t / 32);
            for p in ws.iter_mut() {
                let rt = p[1];
                if rt != multi && rt != mine {
                    p[1] = if busy(rt) { read_tag(a, rt, my) } else { my };
                }
            }
        }
        true
    }

    /// Check access `a` and update the tags: the entry the unit tests use
    /// (`CtaState::shared_check` does the same).
    #[cfg(test)]
    pub fn access(&mut self, a: &Access) -> Result<(), Box<Fault>> {
        if self.fast(a) { Ok(()) } else { self.check(a) }
    }

    /// Check access `a` and update the tags.
    #[cold]
    #[inline(never)]
    pub fn check(&mut self, a: &Access) -> Result<(), Box<Fault>> {
        self.check_hb(a, &NO_HB)
    }

    /// [`SharedShadow::check`] where `hb` orders single threads' accesses
    /// the epochs do not (see [`Hb`]).
    pub fn check_hb(&mut self, a: &Access, hb: &impl Hb) -> Result<(), Box<Fault>> {
        let (off, end) = (a.off, a.off + a.len);
        if (off | end) & 3 == 0 {
            for k in off / 4..end / 4 {
                self.word(a, k, hb)?;
            }
            Ok(())
        } else {
            self.pieces(a, off, end, hb)
        }
    }

    /// The access to the whole word `k`.
    #[inline(always)]
    fn word(&mut self, a: &Access, k: usize, hb: &impl Hb) -> Result<(), Box<Fault>> {
        let [wt, rt] = self.words[k];
        if wt == SPLIT {
            return self.split_bytes(a, k, 4 * k, 4 * k + 4, hb);
        }
        let (w, r) = step(a, 4 * k, wt, rt, hb)?;
        self.words[k] = [w, r];
        Ok(())
    }

    /// The bytes `off..end` of the access, word by word (not all whole).
    #[cold]
    #[inline(never)]
    fn pieces(
        &mut self,
        a: &Access,
        off: usize,
        end: usize,
        hb: &impl Hb,
    ) -> Result<(), Box<Fault>> {
        let mut i = off;
        while i < end {
            let k = i / 4;
            let e = end.min(4 * k + 4);
            if i == 4 * k && e == 4 * k + 4 {
                self.word(a, k, hb)?;
            } else {
                self.split_bytes(a, k, i, e, hb)?;
            }
            i = e;
        }
        Ok(())
    }

    /// The bytes `i..e` of word `k`, split first: byte by byte, joining
    /// the word again when its bytes end with equal tags.
    #[cold]
    #[inline(never)]
    fn split_bytes(
        &mut self,
        a: &Access,
        k: usize,
        i: usize,
        e: usize,
        hb: &impl Hb,
    ) -> Result<(), Box<Fault>> {
        let b = 4 * k;
        if self.words[k][0] != SPLIT {
            if self.bytes.is_empty() {
                self.bytes = vec![[0; 2]; 4 * self.words.len()];
            }
            let pair = self.words[k];
            self.bytes[b..b + 4].fill(pair);
            self.words[k][0] = SPLIT;
        }
        for j in i..e {
            let [wt, rt] = self.bytes[j];
            let (w, r) = step(a, j, wt, rt, hb)?;
            self.bytes[j] = [w, r];
        }
        let q = &self.bytes[b..b + 4];
        if q.iter().all(|&p| p == q[0]) {
            self.words[k] = q[0];
        }
        Ok(())
    }

    /// The (write, read) tags of byte `i` (the contract of the module
    /// docs).
    #[cfg(test)]
    pub fn byte_tags(&self, i: usize) -> [u64; 2] {
        let p = self.words[i / 4];
        if p[0] == SPLIT { self.bytes[i] } else { p }
    }
}

impl CtaState {
    /// [`CtaState::shared_check`] of an access by instruction `pc`; then
    /// the probe, if any, sees it (`checks::probe`).
    #[inline(always)]
    pub(crate) fn shared_check_at(
        &mut self,
        t: usize,
        pc: usize,
        off: usize,
        len: usize,
        write: bool,
        atomic: bool,
    ) -> Result<(), Box<Fault>> {
        self.shared_check(t, off, len, write, atomic)?;
        if let Some(p) = &mut self.probe {
            Probe::note(p, off as u64, len, t, pc, Kind::of(write, atomic));
        }
        Ok(())
    }

    /// Check a shared access of `len` bytes at offset `off` by thread `t`
    /// and update the race metadata. Kept out of line: inlined into the
    /// load and store paths it made them slower on a real CPU (more
    /// registers saved for every load, shared or not) though it ran fewer
    /// instructions.
    #[inline(never)]
    pub(crate) fn shared_check(
        &mut self,
        t: usize,
        off: usize,
        len: usize,
        write: bool,
        atomic: bool,
    ) -> Result<(), Box<Fault>> {
        // an access inside the thread's cluster-barrier window (after its
        // arrive, before the phase completes) keeps the phase from
        // ordering the CTA's accesses (`interp::cluster`)
        if self.cl_pending != 0 && self.cl_arrived[t] {
            self.cl_window = true;
        }
        self.asyncs.check(t, off, len, write || atomic)?;
        self.bulk.check(off, len, write || atomic)?;
        if self.sh.fast(&self.access(t, off, len, write, atomic)) {
            Ok(())
        } else {
            self.shared_check_slow(t, off, len, write, atomic)
        }
    }

    #[inline(always)]
    pub(crate) fn access(
        &self,
        t: usize,
        off: usize,
        len: usize,
        write: bool,
        atomic: bool,
    ) -> Access {
        Access {
            t,
            off,
            len,
            write,
            atomic,
            epoch: self.epoch,
            epoch0: self.epoch0,
            wepoch: self.wepoch[t / 32],
            same: 0,
        }
    }

    /// [`CtaState::shared_check_at`] of a plain write of `new` at offset
    /// `off` by thread `t` at instruction `pc`: a race with another
    /// thread's plain write of the same bytes is a warning
    /// (`checks::benign`), not a finding.
    #[inline(always)]
    pub(crate) fn shared_write_check(
        &mut self,
        t: usize,
        pc: usize,
        off: usize,
        new: &[u8],
    ) -> Result<(), Box<Fault>> {
        match self.shared_check_at(t, pc, off, new.len(), true, false) {
            Ok(()) => Ok(()),
            Err(f) => self.shared_same_write(t, pc, off, new, f, &NO_HB),
        }
    }

    /// The cold path of [`CtaState::shared_write_check`]: the race `f`
    /// again with the values (and the order `hb`).
    #[cold]
    #[inline(never)]
    pub(crate) fn shared_same_write(
        &mut self,
        t: usize,
        pc: usize,
        off: usize,
        new: &[u8],
        f: Box<Fault>,
        hb: &impl Hb,
    ) -> Result<(), Box<Fault>> {
        let Fault::Race {
            offset,
            this: Kind::Write,
            other: Kind::Write,
            other_tid,
        } = *f
        else {
            return Err(f);
        };
        let cur = &self.shared[off..off + new.len()];
        let same = (cur.iter().zip(new).enumerate())
            .fold(0u64, |m, (j, (c, n))| m | ((c == n) as u64) << j);
        let mut a = self.access(t, off, new.len(), true, false);
        a.same = same;
        // (the bytes before the race already carry this write's tags:
        // stepping them again changes nothing)
        self.sh.check_hb(&a, hb)?;
        if let Some(p) = &mut self.probe {
            Probe::note(p, off as u64, new.len(), t, pc, Kind::Write);
        }
        self.same.note(SameWrite {
            t: t as u32,
            pc: pc as u32,
            at: Where::Shared { offset, other_tid },
        });
        Ok(())
    }

    /// [`CtaState::shared_check`] past the fast path.
    #[cold]
    #[inline(never)]
    fn shared_check_slow(
        &mut self,
        t: usize,
        off: usize,
        len: usize,
        write: bool,
        atomic: bool,
    ) -> Result<(), Box<Fault>> {
        let a = self.access(t, off, len, write, atomic);
        self.sh.check(&a)
    }
}

#[cfg(test)]
#[path = "shared_race_tests.rs"]
mod tests;
