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

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Bytes per shadow line.
pub(crate) const LINE: u64 = 64;

/// No overlay data for a line.
pub(crate) const NO_DATA: u32 = u32::MAX;

/// A multiplicative hash for line addresses (keys are already spread).
#[derive(Default, Clone, Copy)]
pub(crate) struct LineHasher(u64);

impl Hasher for LineHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (x ^ (x >> 29))
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(26);
    }
}

pub(crate) type LineMap<V> = HashMap<u64, V, BuildHasherDefault<LineHasher>>;

/// A map from line numbers to record indices: open addressing with linear
/// probing, sized to a power of two, never more than half full. (The
/// interpreter looks a line up at nearly every global access.)
#[derive(Debug, Clone)]
pub(crate) struct LineTable {
    keys: Vec<u64>,
    vals: Vec<u32>,
    len: usize,
    shift: u32,
}

const EMPTY: u64 = u64::MAX;

impl LineTable {
    pub fn with_capacity(n: usize) -> LineTable {
        let cap = (n * 2).next_power_of_two().max(16);
        LineTable {
            keys: vec![EMPTY; cap],
            vals: vec![0; cap],
            len: 0,
            shift: 64 - cap.trailing_zeros(),
        }
    }

    #[inline(always)]
    fn slot(&self, line: u64) -> usize {
        (line.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    #[inline]
    pub fn get(&self, line: u64) -> Option<u32> {
        let m = self.keys.len() - 1;
        let mut i = self.slot(line);
        loop {
            let k = self.keys[i];
            if k == line {
                return Some(self.vals[i]);
            }
            if k == EMPTY {
                return None;
            }
            i = (i + 1) & m;
        }
    }

    /// The value of `line`, inserting `v` if absent.
    #[inline]
    pub fn get_or_insert(&mut self, line: u64, v: u32) -> u32 {
        if (self.len + 1) * 2 > self.keys.len() {
            self.grow();
        }
        let m = self.keys.len() - 1;
        let mut i = self.slot(line);
        loop {
            let k = self.keys[i];
            if k == line {
                return self.vals[i];
            }
            if k == EMPTY {
                self.keys[i] = line;
                self.vals[i] = v;
                self.len += 1;
                return v;
            }
            i = (i + 1) & m;
        }
    }

    #[cold]
    fn grow(&mut self) {
        let mut t = LineTable::with_capacity(self.keys.len());
        for (&k, &v) in self.keys.iter().zip(&self.vals) {
            if k != EMPTY {
                t.get_or_insert(k, v);
            }
        }
        *self = t;
    }
}

impl Default for LineTable {
    fn default() -> Self {
        LineTable::with_capacity(0)
    }
}

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

/// One CTA's global accesses and (without live memory) private writes.
#[derive(Debug, Clone, Default)]
pub(crate) struct CtaShadow {
    map: LineTable,
    pub recs: Vec<LineRec>,
    pub data: Vec<[u8; LINE as usize]>,
    /// Per instruction: the line it touched last and its record (an
    /// instruction walks its lines in order, threads of a warp share them).
    hint: Vec<(u64, u32)>,
    /// Whether the CTA wrote anything (reads skip the line lookup while not).
    pub wrote: bool,
}

impl CtaShadow {
    /// An empty shadow for an entry of `ninst` instructions, sized like
    /// the previous CTA's (`like` lines).
    pub fn new(ninst: usize, like: usize) -> CtaShadow {
        CtaShadow {
            map: LineTable::with_capacity(like),
            recs: Vec::with_capacity(like),
            data: Vec::new(),
            hint: vec![(u64::MAX, 0); ninst],
            wrote: false,
        }
    }

    /// The record of `line` touched by instruction `pc`, created empty if
    /// the CTA has none yet.
    #[inline]
    pub fn rec(&mut self, pc: usize, line: u64) -> &mut LineRec {
        let (l, i) = self.hint[pc];
        if l == line {
            return &mut self.recs[i as usize];
        }
        self.rec_slow(pc, line)
    }

    #[inline(never)]
    fn rec_slow(&mut self, pc: usize, line: u64) -> &mut LineRec {
        let n = self.recs.len() as u32;
        let i = self.map.get_or_insert(line, n);
        if i == n {
            self.recs.push(LineRec {
                line,
                r: 0,
                w: 0,
                a: 0,
                data: NO_DATA,
            });
        }
        self.hint[pc] = (line, i);
        &mut self.recs[i as usize]
    }

    /// The overlay data index of `line` read by `pc`, if the CTA wrote it.
    #[inline]
    pub fn data_of(&mut self, pc: usize, line: u64) -> u32 {
        let (l, i) = self.hint[pc];
        if l == line {
            return self.recs[i as usize].data;
        }
        match self.map.get(line) {
            Some(i) => {
                self.hint[pc] = (line, i);
                self.recs[i as usize].data
            }
            None => NO_DATA,
        }
    }

    /// The record of `line`, if the CTA touched it.
    pub fn get(&self, line: u64) -> Option<&LineRec> {
        self.map.get(line).map(|i| &self.recs[i as usize])
    }

    /// Number of lines touched.
    pub fn len(&self) -> usize {
        self.recs.len()
    }
}

/// Aggregate masks (read, written, atomic) of one line over the CTAs
/// merged so far.
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

/// The accesses of the CTAs merged so far, in CTA order.
#[derive(Debug, Default)]
pub(crate) struct LaunchShadow {
    pub lines: LineMap<Agg>,
}

impl LaunchShadow {
    /// The conflicting bytes of an access of `kind` to `mask` of `line`.
    #[inline]
    pub fn check(&self, line: u64, kind: Kind, mask: u64) -> u64 {
        match self.lines.get(&line) {
            Some(agg) => conflicts(agg, kind, mask),
            None => 0,
        }
    }

    /// Whether any access of `cta` conflicts with the merged CTAs.
    pub fn conflicts_with(&self, cta: &CtaShadow) -> bool {
        cta.recs.iter().any(|r| {
            self.lines.get(&r.line).is_some_and(|agg| {
                conflicts(agg, Kind::Read, r.r)
                    | conflicts(agg, Kind::Write, r.w)
                    | conflicts(agg, Kind::Atomic, r.a)
                    != 0
            })
        })
    }

    /// Add `cta`'s accesses.
    pub fn merge(&mut self, cta: &CtaShadow) {
        self.lines.reserve(cta.recs.len());
        for r in &cta.recs {
            let agg = self.lines.entry(r.line).or_insert([0; 3]);
            agg[0] |= r.r;
            agg[1] |= r.w;
            agg[2] |= r.a;
        }
    }

    /// What the merged CTAs did to the byte at `addr` that conflicts with
    /// `kind`: the earlier access's kind (writes first, then atomics).
    pub fn other_kind(&self, addr: u64, kind: Kind) -> Kind {
        let bit = 1u64 << (addr % LINE);
        let agg = self.lines.get(&(addr / LINE)).copied().unwrap_or([0; 3]);
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
