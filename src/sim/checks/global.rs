//! Global memory between the CTAs of a launch: what each CTA accessed, its
//! private writes, and the race check between CTAs.
//!
//! ## Model
//!
//! The CTAs of a launch are unordered: PTX gives no order between two
//! CTAs' accesses unless they synchronise through atomics and fences. So
//! every CTA runs on the launch's starting memory plus its own writes (its
//! [`CtaShadow`] holds them per 64-byte line), whatever the thread count
//! and whatever the other CTAs do; the writes reach global memory when the
//! launch ends, CTA after CTA in linear order. A kernel without races gets
//! exactly the bits it got when CTAs ran one after another, and a kernel
//! with one gets the same finding on every thread count.
//!
//! With checks on, each CTA records per line the bytes it read, wrote and
//! updated atomically. In CTA order, a CTA's accesses are compared with the
//! union of the earlier CTAs' ([`LaunchShadow`]): a byte read by one CTA
//! and written by another, or written by two, is a
//! [`SimError::GlobalRace`](crate::sim::SimError::GlobalRace) unless both
//! accesses are atomic. The finding is reported at the later CTA's first
//! conflicting access (a re-run of that CTA with the earlier CTAs' accesses
//! as a watch list names it). Accesses by threads of one CTA are not
//! compared with each other (their order within the CTA is the
//! interpreter's).
//!
//! Entries that may communicate between CTAs during a launch (global or
//! generic atomics, `.volatile`/`.relaxed`/`.acquire`/`.release` global
//! accesses) run their CTAs one after another on live memory instead, each
//! access checked against the earlier CTAs as it happens; the check has no
//! model of fences, so a CTA reading plain data another CTA wrote is
//! reported even after a fence-and-flag handshake.

/// Bytes per shadow line.
pub(crate) const LINE: u64 = 64;

/// No overlay data for a line.
pub(crate) const NO_DATA: u32 = u32::MAX;

/// What a CTA did to one line: per byte (bit), read, written, updated
/// atomically; `data` indexes its private copy of the line once written.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LineRec {
    pub line: u64,
    pub r: u64,
    pub w: u64,
    pub a: u64,
    pub data: u32,
}

/// The `line` of a free slot.
const EMPTY: u64 = u64::MAX;

const FREE: LineRec = LineRec {
    line: EMPTY,
    r: 0,
    w: 0,
    a: 0,
    data: NO_DATA,
};

/// One CTA's global accesses and (without live memory) private writes: a
/// hash table of line records (open addressing with linear probing, a
/// power-of-two size, at most half full — the interpreter looks a line up
/// at nearly every global access).
#[derive(Debug, Clone)]
pub(crate) struct CtaShadow {
    slots: Vec<LineRec>,
    len: usize,
    shift: u32,
    pub data: Vec<[u8; LINE as usize]>,
    /// Whether the CTA wrote anything (reads skip the line lookup while not).
    pub wrote: bool,
}

impl Default for CtaShadow {
    fn default() -> Self {
        CtaShadow::new(0)
    }
}

impl CtaShadow {
    /// An empty shadow with room for `like` lines (the previous CTA's).
    pub fn new(like: usize) -> CtaShadow {
        let cap = (like * 2).next_power_of_two().max(64);
        CtaShadow {
            slots: vec![FREE; cap],
            len: 0,
            shift: 64 - cap.trailing_zeros(),
            data: Vec::new(),
            wrote: false,
        }
    }

    #[inline(always)]
    fn home(&self, line: u64) -> usize {
        (line.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// The record of `line`, created empty if the CTA has none yet.
    #[inline(always)]
    pub fn rec(&mut self, line: u64) -> &mut LineRec {
        let m = self.slots.len() - 1;
        let mut i = self.home(line);
        loop {
            let l = self.slots[i].line;
            if l == line {
                return &mut self.slots[i];
            }
            if l == EMPTY {
                return self.insert(line);
            }
            i = (i + 1) & m;
        }
    }

    #[cold]
    #[inline(never)]
    fn insert(&mut self, line: u64) -> &mut LineRec {
        if (self.len + 1) * 2 > self.slots.len() {
            self.resize(self.slots.len());
        }
        self.len += 1;
        let s = self.slot_for(line);
        s.line = line;
        s
    }

    /// Make room for `lines` lines without growing.
    pub fn reserve(&mut self, lines: usize) {
        if lines * 2 > self.slots.len() {
            self.resize(lines);
        }
    }

    /// Rebuild with room for `lines` lines.
    fn resize(&mut self, lines: usize) {
        let old = std::mem::replace(self, CtaShadow::new(lines));
        self.data = old.data;
        self.wrote = old.wrote;
        for r in old.slots.into_iter().filter(|r| r.line != EMPTY) {
            *self.slot_for(r.line) = r;
            self.len += 1;
        }
    }

    /// The slot of `line`, or the free slot where it goes.
    fn slot_for(&mut self, line: u64) -> &mut LineRec {
        let m = self.slots.len() - 1;
        let mut i = self.home(line);
        while self.slots[i].line != line && self.slots[i].line != EMPTY {
            i = (i + 1) & m;
        }
        &mut self.slots[i]
    }

    /// The record of `line`, if the CTA touched it.
    #[inline]
    pub fn get(&self, line: u64) -> Option<&LineRec> {
        let m = self.slots.len() - 1;
        let mut i = self.home(line);
        loop {
            let r = &self.slots[i];
            if r.line == line {
                return Some(r);
            }
            if r.line == EMPTY {
                return None;
            }
            i = (i + 1) & m;
        }
    }

    /// The overlay data index of `line`, if the CTA wrote it.
    #[inline]
    pub fn data_of(&self, line: u64) -> u32 {
        self.get(line).map_or(NO_DATA, |r| r.data)
    }

    /// The lines touched, in no particular order.
    pub fn recs(&self) -> impl Iterator<Item = &LineRec> {
        self.slots.iter().filter(|r| r.line != EMPTY)
    }

    /// Number of lines touched.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Slots of the table (twice the lines it holds without growing).
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }
}

/// Aggregate masks (read, written, atomic) of one line.
pub(crate) type Agg = [u64; 3];

/// The bytes of `mask` that an access of kind `kind` conflicts with in
/// `agg`: a read with earlier writes and atomics, a write with anything,
/// an atomic with plain reads and writes.
#[inline]
pub(crate) fn conflicts(agg: &Agg, kind: Kind, mask: u64) -> u64 {
    mask & match kind {
        Kind::Read => agg[1] | agg[2],
        Kind::Write => agg[0] | agg[1] | agg[2],
        Kind::Atomic => agg[0] | agg[1],
    }
}

/// The kind of a global access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Read,
    Write,
    Atomic,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Read => "read",
            Kind::Write => "write",
            Kind::Atomic => "atomic",
        }
    }
}

/// The accesses of the CTAs merged so far, in CTA order: per line the
/// union of their read, written and atomic masks.
#[derive(Debug, Default)]
pub(crate) struct LaunchShadow {
    lines: CtaShadow,
}

impl LaunchShadow {
    /// The conflicting bytes of an access of `kind` to `mask` of `line`.
    #[inline]
    pub fn check(&self, line: u64, kind: Kind, mask: u64) -> u64 {
        match self.lines.get(line) {
            Some(r) => conflicts(&[r.r, r.w, r.a], kind, mask),
            None => 0,
        }
    }

    /// Whether any access of `cta` conflicts with the merged CTAs.
    pub fn conflicts_with(&self, cta: &CtaShadow) -> bool {
        cta.recs().any(|r| {
            self.lines.get(r.line).is_some_and(|agg| {
                let agg = [agg.r, agg.w, agg.a];
                conflicts(&agg, Kind::Read, r.r)
                    | conflicts(&agg, Kind::Write, r.w)
                    | conflicts(&agg, Kind::Atomic, r.a)
                    != 0
            })
        })
    }

    /// Add `cta`'s accesses.
    pub fn merge(&mut self, cta: &CtaShadow) {
        // grow four-fold ahead: most launches touch new lines CTA by CTA
        let need = self.lines.len() + cta.len();
        if need * 2 > self.lines.capacity() {
            self.lines.reserve(need * 4);
        }
        for r in cta.recs() {
            let agg = self.lines.rec(r.line);
            agg.r |= r.r;
            agg.w |= r.w;
            agg.a |= r.a;
        }
    }

    /// What the merged CTAs did to the byte at `addr` that conflicts with
    /// `kind`: the earlier access's kind (writes first, then atomics).
    pub fn other_kind(&self, addr: u64, kind: Kind) -> Kind {
        let bit = 1u64 << (addr % LINE);
        let agg = self
            .lines
            .get(addr / LINE)
            .map_or([0; 3], |r| [r.r, r.w, r.a]);
        if agg[1] & bit != 0 {
            Kind::Write
        } else if agg[2] & bit != 0 && kind != Kind::Atomic {
            Kind::Atomic
        } else {
            Kind::Read
        }
    }
}

/// Whether `cta` did an access of `other` kind to the byte at `addr`.
pub(crate) fn touched(cta: &CtaShadow, addr: u64, other: Kind) -> bool {
    let bit = 1u64 << (addr % LINE);
    cta.get(addr / LINE).is_some_and(|r| {
        let m = match other {
            Kind::Read => r.r,
            Kind::Write => r.w,
            Kind::Atomic => r.a,
        };
        m & bit != 0
    })
}
