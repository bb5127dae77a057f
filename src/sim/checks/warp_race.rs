//! Global-memory races between the warps of one CTA.
//!
//! # The rule
//! The shared-memory race rule (`shared_race`) at warp granularity, on
//! global memory: two accesses to one global byte by threads of two
//! different warps of a CTA in the same barrier interval (no `bar.sync`
//! between them: a CTA barrier orders every access before it before every
//! access after it, in every state space), at least one of them a write,
//! not both atomic, are a race
//! ([`SimError::WarpGlobalRace`](crate::sim::SimError::WarpGlobalRace)).
//! A plain read conflicts with plain writes and atomics of another warp, a
//! plain write with anything of another warp, an atomic with plain reads
//! and writes of another warp. Accesses of the lanes of one warp are not
//! compared (the lockstep schedule's `reorder` tags watch those for the
//! schedule's sake, and a warp's lanes are not the subject of this check);
//! fences and flags are not modelled, as between CTAs. The accesses are
//! checked in the simulator's thread order (the lockstep schedule runs a
//! round's warps in the same order), and the finding is the first access
//! of that order that conflicts, at its lowest conflicting byte; the
//! earlier access's kind is a plain write's if any conflicts there, else
//! an atomic's, else a read's.
//!
//! # The representation
//! Per line the CTA touched (a slot of its `CtaShadow`), [`WarpTags`]: the
//! barrier epoch the tags are of (tags of an older epoch are empty), and
//! while a single warp accessed the line in that epoch, that warp and the
//! bytes it read, wrote and updated atomically — no access of that warp
//! can conflict. When a second warp comes, the masks are checked against
//! its access and, if it does not conflict, turned into per-byte tags
//! ([`Detail`]: per byte the plain writer's warp, the atomic writers' and
//! the readers', each a warp or several), exactly what the masks said
//! since a single warp made them; from then on, in that epoch, the line is
//! checked byte by byte. Several plain writers of one byte occur only
//! through same-value writes (`checks::benign`), whose byte is then tagged
//! as written by several warps: every later access of it by any warp
//! conflicts (a write of the same byte again being a warning), so one
//! tag per byte suffices. The
//! per-byte tags of a line are kept (and re-seeded) across epochs, so a
//! CTA holds at most one per line.

use super::global::{Kind, conflicts, line_bytes};

/// No per-byte tags.
const NONE: u32 = u32::MAX;

/// A line accessed by several warps in its epoch: per-byte tags.
const MIXED: u8 = u8::MAX;

/// A per-byte tag of several warps.
const SEVERAL: u8 = u8::MAX;

/// One line's accesses by the warps of the running CTA in one barrier
/// interval (see the module docs).
#[derive(Debug, Clone, Copy)]
pub(crate) struct WarpTags {
    /// The barrier epoch of the tags (older: empty).
    epoch: u32,
    /// The warp + 1 of every access in the epoch, or [`MIXED`].
    sole: u8,
    /// The index of the line's per-byte tags, or [`NONE`].
    detail: u32,
    /// The sole warp's bytes read, written, updated atomically.
    r: u64,
    w: u64,
    a: u64,
}

impl Default for WarpTags {
    fn default() -> Self {
        WarpTags {
            epoch: 0,
            sole: 0,
            detail: NONE,
            r: 0,
            w: 0,
            a: 0,
        }
    }
}

/// Per byte of a line: the plain writer's warp + 1, the atomic writers'
/// (warp + 1 or [`SEVERAL`]), the readers' (likewise); 0 for none.
pub(crate) type Detail = [[u8; 64]; 3];

/// A race between warps: the line's conflicting byte, the earlier access's
/// kind and warp (`u32::MAX`: several warps).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WarpRace {
    pub byte: u32,
    pub other: Kind,
    pub other_warp: u32,
}

impl WarpTags {
    /// Forget everything (the line's slot is free again).
    pub fn clear(&mut self) {
        *self = WarpTags::default();
    }

    /// The common case: record an access of `kind` to bytes `m` by warp
    /// `w` (+ 1) in epoch `epoch` if the line's tags are of another epoch
    /// or of that warp alone; `false` (nothing changed) otherwise.
    #[inline(always)]
    pub fn sole(&mut self, epoch: u32, w: u8, kind: Kind, m: u64) -> bool {
        if self.epoch != epoch {
            self.epoch = epoch;
            self.sole = w;
            (self.r, self.w, self.a) = (0, 0, 0);
        } else if self.sole != w {
            return false;
        }
        match kind {
            Kind::Read => self.r |= m,
            Kind::Write => self.w |= m,
            Kind::Atomic => self.a |= m,
        }
        true
    }

    /// An access of `kind` to the `len` bytes at `sh` by warp `w` (+ 1)
    /// that [`WarpTags::sole`] did not take: checked against the sole
    /// warp's masks, or byte by byte, with the per-byte tags in `details`.
    ///
    /// `same`, given for a plain write, says whether the write leaves byte
    /// `i` of the line as it is (the incoming byte equals the current
    /// one): a conflict of such a byte with another warp's plain write
    /// only is a same-value write-write conflict, not a race (`Ok(true)`,
    /// the caller records it as a warning, `checks::benign`); without
    /// `same` it is a race like any other.
    #[cold]
    #[inline(never)]
    pub fn mixed(
        &mut self,
        details: &mut Vec<Detail>,
        w: u8,
        kind: Kind,
        sh: usize,
        len: usize,
        same: Option<&dyn Fn(usize) -> bool>,
    ) -> Result<bool, WarpRace> {
        let same = same.filter(|_| kind == Kind::Write);
        let mut benign = false;
        if self.sole != MIXED {
            let s = self.sole;
            let c = conflicts(&[self.r, self.w, self.a], kind, line_bytes(sh, len));
            // only the sole warp's plain writes, each of an unchanged byte
            let tolerated = c != 0
                && c & (self.r | self.a) == 0
                && same.is_some_and(|f| (0..64).all(|b| c >> b & 1 == 0 || f(b)));
            benign |= tolerated;
            if c != 0 && !tolerated {
                let b = c.trailing_zeros();
                let bit = 1u64 << b;
                let other = if self.w & bit != 0 {
                    Kind::Write
                } else if self.a & bit != 0 && kind != Kind::Atomic {
                    Kind::Atomic
                } else {
                    Kind::Read
                };
                return Err(WarpRace {
                    byte: b,
                    other,
                    other_warp: s as u32 - 1,
                });
            }
            let d = if self.detail == NONE {
                details.push([[0; 64]; 3]);
                details.len() - 1
            } else {
                self.detail as usize
            };
            let [pw, aw, rw] = &mut details[d];
            let bytes = pw.iter_mut().zip(aw.iter_mut()).zip(rw.iter_mut());
            for (i, ((p, a), r)) in bytes.enumerate() {
                let tag = |m: u64| if m >> i & 1 != 0 { s } else { 0 };
                (*p, *a, *r) = (tag(self.w), tag(self.a), tag(self.r));
            }
            self.detail = d as u32;
            self.sole = MIXED;
        }
        let [pw, aw, rw] = &mut details[self.detail as usize];
        let bytes = pw.iter_mut().zip(aw.iter_mut()).zip(rw.iter_mut());
        for (i, ((pt, at), rt)) in bytes.enumerate().skip(sh).take(len) {
            let (p, a, r) = (*pt, *at, *rt);
            let other = |x: u8| x != 0 && x != w;
            let race = |other: Kind, x: u8| {
                Err(WarpRace {
                    byte: i as u32,
                    other,
                    other_warp: if x == SEVERAL { u32::MAX } else { x as u32 - 1 },
                })
            };
            let mut several = false;
            if other(p) {
                if !same.is_some_and(|f| f(i)) {
                    return race(Kind::Write, p);
                }
                benign = true;
                several = true;
            }
            if kind != Kind::Atomic && other(a) {
                return race(Kind::Atomic, a);
            }
            if kind != Kind::Read && other(r) {
                return race(Kind::Read, r);
            }
            let join = |x: u8| if x == 0 || x == w { w } else { SEVERAL };
            match kind {
                Kind::Read => *rt = join(r),
                // (after a same-value write over another warp's, every
                // warp's later access of the byte conflicts with one of
                // the two: the tag says several)
                Kind::Write => *pt = if several { SEVERAL } else { w },
                Kind::Atomic => *at = join(a),
            }
        }
        Ok(benign)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The per-byte rule, plainly: every access of the epoch so far, as
    /// (warp + 1, kind, first byte, length).
    fn reference(
        log: &[(u8, Kind, usize, usize)],
        w: u8,
        kind: Kind,
        sh: usize,
        len: usize,
    ) -> Option<(u32, Kind)> {
        for i in sh..sh + len {
            let hit = |k: Kind| {
                log.iter()
                    .any(|&(x, kk, s, l)| x != w && kk == k && (s..s + l).contains(&i))
            };
            if hit(Kind::Write) {
                return Some((i as u32, Kind::Write));
            }
            if kind != Kind::Atomic && hit(Kind::Atomic) {
                return Some((i as u32, Kind::Atomic));
            }
            if kind != Kind::Read && hit(Kind::Read) {
                return Some((i as u32, Kind::Read));
            }
        }
        None
    }

    fn access(
        t: &mut WarpTags,
        d: &mut Vec<Detail>,
        e: u32,
        w: u8,
        k: Kind,
        sh: usize,
        len: usize,
    ) -> Option<(u32, Kind)> {
        if t.sole(e, w, k, line_bytes(sh, len)) {
            return None;
        }
        t.mixed(d, w, k, sh, len, None)
            .err()
            .map(|r| (r.byte, r.other))
    }

    /// Random access sequences over a few warps and epochs: the findings
    /// (byte and kind) are the plain per-byte rule's.
    #[test]
    fn findings_are_the_per_byte_rules() {
        let mut rng = 0x1234_5678_9abc_def0u64;
        let mut next = |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        let mut found = 0;
        for _ in 0..3000 {
            let mut t = WarpTags::default();
            let mut d = Vec::new();
            let mut log = Vec::new();
            let mut e = 1;
            for _ in 0..12 {
                if next(6) == 0 {
                    e += 1;
                    log.clear();
                }
                let w = next(3) as u8 + 1;
                let k = [Kind::Read, Kind::Write, Kind::Atomic][next(3) as usize];
                let len = [1usize, 2, 4, 8][next(4) as usize];
                let sh = next(64 / len as u64) as usize * len;
                let want = reference(&log, w, k, sh, len);
                let got = access(&mut t, &mut d, e, w, k, sh, len);
                assert_eq!(got, want, "{log:?} then {:?}", (w, k, sh, len));
                if got.is_some() {
                    found += 1;
                    break;
                }
                log.push((w, k, sh, len));
            }
            assert!(d.len() <= 1);
        }
        assert!(found > 500, "{found}");
    }

    #[test]
    fn a_new_epoch_orders_everything_before() {
        let mut t = WarpTags::default();
        let mut d = Vec::new();
        assert_eq!(access(&mut t, &mut d, 1, 1, Kind::Write, 0, 4), None);
        assert_eq!(
            access(&mut t, &mut d, 1, 2, Kind::Read, 0, 4),
            Some((0, Kind::Write))
        );
        assert_eq!(access(&mut t, &mut d, 2, 2, Kind::Read, 0, 4), None);
        // atomics of several warps do not race; a plain read does
        assert_eq!(access(&mut t, &mut d, 3, 1, Kind::Atomic, 8, 4), None);
        assert_eq!(access(&mut t, &mut d, 3, 2, Kind::Atomic, 8, 4), None);
        let r = t.mixed(&mut d, 3, Kind::Read, 8, 4, None).unwrap_err();
        assert_eq!((r.byte, r.other, r.other_warp), (8, Kind::Atomic, u32::MAX));
    }
}
