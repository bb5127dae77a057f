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
//! as a watch list names it), and the earlier CTA's first such access is
//! named by a re-run of that CTA with a probe on the byte
//! (`checks::probe`). Accesses by threads of one CTA are compared by
//! `checks::warp_race` (between its warps, per barrier interval), not
//! here.
//!
//! Entries that may communicate between CTAs during a launch (global or
//! generic atomics, `.volatile`/`.relaxed`/`.acquire`/`.release` global
//! accesses) run their CTAs one after another on live memory instead, each
//! access checked against the earlier CTAs as it happens; the check has no
//! model of fences, so a CTA reading plain data another CTA wrote is
//! reported even after a fence-and-flag handshake.
//!
//! ## Memory
//!
//! A worker keeps one [`CtaShadow`] table for all its CTAs and empties it
//! after each in time proportional to what the CTA touched (the table
//! lists its occupied slots). A finished CTA reaches the walk in compact
//! form ([`CtaRecs`]: its records in the order it first touched their
//! lines, and its written lines), so the race check, the merge into the
//! [`LaunchShadow`], the commit and the naming of the other CTA touch only
//! what each CTA touched; the accepted CTAs are appended to pooled vectors
//! ([`Done`]). Tables grow by doubling and stay at most half full; the
//! merged table ([`MergedTable`]) empties by starting a new epoch. All of
//! it lives in the simulator's [`Scratch`] between launches, shrunk when
//! far larger than recent launches needed.

use super::benign::{SameWrites, Warnings};
use super::probe::Probe;
use super::reorder::LineTags;
use super::warp_race::{Detail, WarpRace, WarpTags};
/// The kind of a global access.
pub(crate) use crate::sim::error::AccessKind as Kind;

/// Bytes per shadow line.
pub(crate) const LINE: u64 = 64;

/// No overlay data for a line.
pub(crate) const NO_DATA: u32 = u32::MAX;

/// The byte mask of `len` bytes at offset `off` of a line (`off + len` at
/// most [`LINE`]).
#[inline(always)]
pub(crate) fn line_bytes(off: usize, len: usize) -> u64 {
    let m = if len >= 64 {
        u64::MAX
    } else {
        (1u64 << len) - 1
    };
    m << off
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

/// The `line` of a free slot.
const EMPTY: u64 = u64::MAX;

/// The slots of a hash table of lines that holds `lines` without growing
/// (at most half full, a power of two, at least 64), and the shift of its
/// hash ([`home`]).
fn table_size(lines: usize) -> (usize, u32) {
    let cap = (lines * 2).next_power_of_two().max(64);
    (cap, 64 - cap.trailing_zeros())
}

/// The first slot probed for `line` in a table hashed with `shift`
/// (Fibonacci hashing: consecutive lines spread over the table).
#[inline(always)]
fn home(line: u64, shift: u32) -> usize {
    (line.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize
}

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
/// at nearly every global access) and the list of its occupied slots in
/// insertion order, so that emptying it for the next CTA
/// ([`CtaShadow::drain_into`], [`CtaShadow::clear`]) costs what the CTA
/// touched, not the table's size. A worker keeps one for all its CTAs,
/// and the simulator keeps it between launches ([`Scratch`]).
#[derive(Debug, Clone)]
pub(crate) struct CtaShadow {
    slots: Vec<LineRec>,
    /// The occupied slots, in insertion order.
    used: Vec<u32>,
    shift: u32,
    pub data: Vec<[u8; LINE as usize]>,
    /// Whether the CTA wrote anything (reads skip the line lookup while not).
    pub wrote: bool,
    /// The most lines the table held since [`CtaShadow::take_peak`].
    peak: usize,
    /// Per slot, the line's tags of the lockstep schedule's running warp
    /// (see `checks::reorder`): empty unless a CTA ran in lockstep, then
    /// as long as `slots`. Stale tags (another stamp) need no clearing.
    pub tags: Vec<LineTags>,
    /// The stamp of the running warp's run, counting across the CTAs.
    pub stamp: u32,
    /// Per slot, the line's accesses by the CTA's warps in the current
    /// barrier interval (`checks::warp_race`), as long as `slots`.
    warps: Vec<WarpTags>,
    /// The per-byte tags of lines accessed by several warps.
    details: Vec<Detail>,
    /// The running CTA's barrier epoch (set by the interpreter at each
    /// round).
    pub epoch: u32,
    /// A watch on one byte while a CTA runs again to name the earlier
    /// access of a race (`checks::probe`).
    pub probe: Option<Box<Probe>>,
    /// The CTA's same-value write-write conflicts between warps
    /// (`checks::benign`).
    pub same: SameWrites,
}

impl Default for CtaShadow {
    fn default() -> Self {
        CtaShadow::new(0)
    }
}

impl CtaShadow {
    /// An empty shadow with room for `lines` lines without growing.
    pub fn new(lines: usize) -> CtaShadow {
        let (cap, shift) = table_size(lines);
        CtaShadow {
            slots: vec![FREE; cap],
            used: Vec::new(),
            shift,
            data: Vec::new(),
            wrote: false,
            peak: 0,
            tags: Vec::new(),
            stamp: 0,
            warps: vec![WarpTags::default(); cap],
            details: Vec::new(),
            epoch: 0,
            probe: None,
            same: SameWrites::default(),
        }
    }

    /// The race check between the warps of the CTA (`checks::warp_race`)
    /// of an access of `kind` to the `len` bytes at `sh` of the line in
    /// slot `ri` by thread `t` at instruction `pc`; then the probe, if
    /// any, sees it. `same` (a plain write's, see [`WarpTags::mixed`])
    /// tolerates conflicts with other warps' writes of the same bytes:
    /// `Ok(true)` when there were some.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn warp_check(
        &mut self,
        ri: usize,
        t: usize,
        pc: usize,
        kind: Kind,
        sh: usize,
        len: usize,
        same: Option<&dyn Fn(usize) -> bool>,
    ) -> Result<bool, WarpRace> {
        let w = (t / 32) as u8 + 1;
        let tags = &mut self.warps[ri];
        let mut benign = false;
        if !tags.sole(self.epoch, w, kind, line_bytes(sh, len)) {
            benign = tags.mixed(&mut self.details, w, kind, sh, len, same)?;
        }
        if let Some(p) = &mut self.probe {
            p.note(self.slots[ri].line * LINE + sh as u64, len, t, pc, kind);
        }
        Ok(benign)
    }

    /// The CTA's private copy of the line in slot `ri`, if it wrote the
    /// line on a snapshot (else memory holds the line as the CTA sees it).
    pub fn line_now(&self, ri: usize) -> Option<&[u8; LINE as usize]> {
        let d = self.slots[ri].data;
        (d != NO_DATA).then(|| &self.data[d as usize])
    }

    /// Start a warp's run in the lockstep schedule: the tags of the lines
    /// accessed before are stale from now on.
    pub fn next_stamp(&mut self) {
        if self.tags.len() != self.slots.len() {
            self.tags = vec![LineTags::default(); self.slots.len()];
        }
        if self.stamp == u32::MAX {
            self.tags.fill(LineTags::default());
            self.stamp = 0;
        }
        self.stamp += 1;
    }

    #[inline(always)]
    fn home(&self, line: u64) -> usize {
        home(line, self.shift)
    }

    /// The record of `line`, created empty if the CTA has none yet.
    #[cfg(test)]
    pub fn rec(&mut self, line: u64) -> &mut LineRec {
        let i = self.rec_at(line);
        &mut self.slots[i]
    }

    /// The slot of `line`'s record (created empty if the CTA has none
    /// yet): [`CtaShadow::slot`] and, in lockstep, `tags` index it.
    #[inline(always)]
    pub fn rec_at(&mut self, line: u64) -> usize {
        let m = self.slots.len() - 1;
        let mut i = self.home(line);
        loop {
            let l = self.slots[i].line;
            if l == line {
                return i;
            }
            if l == EMPTY {
                return self.insert(i, line);
            }
            i = (i + 1) & m;
        }
    }

    /// The record in slot `i` (from [`CtaShadow::rec_at`]).
    #[inline(always)]
    pub fn slot(&mut self, i: usize) -> &mut LineRec {
        &mut self.slots[i]
    }

    /// A record for `line`, which is not in the table and goes to the free
    /// slot `i` unless the table has to grow; its slot.
    #[cold]
    #[inline(never)]
    fn insert(&mut self, mut i: usize, line: u64) -> usize {
        if (self.used.len() + 1) * 2 > self.slots.len() {
            // doubles the table
            self.resize(self.used.len() + 1);
            i = self.slot_for(line);
        }
        self.used.push(i as u32);
        self.slots[i].line = line;
        i
    }

    /// Rebuild with room for `lines` lines, keeping the records (and their
    /// insertion order).
    fn resize(&mut self, lines: usize) {
        let (cap, shift) = table_size(lines);
        let old = std::mem::replace(&mut self.slots, vec![FREE; cap]);
        let old_warps = std::mem::replace(&mut self.warps, vec![WarpTags::default(); cap]);
        let tracked = !self.tags.is_empty();
        let old_tags = std::mem::take(&mut self.tags);
        if tracked {
            self.tags = vec![LineTags::default(); cap];
        }
        self.shift = shift;
        for u in self.used.iter_mut() {
            let r = old[*u as usize];
            let m = cap - 1;
            let mut i = home(r.line, shift);
            while self.slots[i].line != EMPTY {
                i = (i + 1) & m;
            }
            self.slots[i] = r;
            self.warps[i] = old_warps[*u as usize];
            if tracked {
                self.tags[i] = old_tags[*u as usize];
            }
            *u = i as u32;
        }
    }

    /// The slot of `line`, or the free slot where it goes.
    fn slot_for(&self, line: u64) -> usize {
        let m = self.slots.len() - 1;
        let mut i = self.home(line);
        while self.slots[i].line != line && self.slots[i].line != EMPTY {
            i = (i + 1) & m;
        }
        i
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

    /// Empty the shadow in time proportional to the lines it held.
    pub fn clear(&mut self) {
        self.peak = self.peak.max(self.used.len());
        for &i in &self.used {
            self.slots[i as usize] = FREE;
            self.warps[i as usize].clear();
        }
        self.used.clear();
        self.details.clear();
        self.data.clear();
        self.wrote = false;
        self.same = SameWrites::default();
    }

    /// Move the CTA's records (in the order it first touched their lines)
    /// and written lines to `out` (emptied first) and empty the shadow.
    pub fn drain_into(&mut self, out: &mut CtaRecs) {
        out.recs.clear();
        out.recs
            .extend(self.used.iter().map(|&i| self.slots[i as usize]));
        out.data.clear();
        std::mem::swap(&mut self.data, &mut out.data);
        self.clear();
    }

    /// The most lines held since the last call; a table far larger than
    /// that is replaced by a smaller one (see [`Scratch::settle`]).
    fn take_peak(&mut self) -> usize {
        std::mem::take(&mut self.peak).max(self.used.len())
    }
}

/// A finished CTA's accesses in compact form: its line records (in the
/// order it first touched the lines; `data` indexes `data`) and its
/// written lines.
#[derive(Debug, Default)]
pub(crate) struct CtaRecs {
    pub recs: Vec<LineRec>,
    pub data: Vec<[u8; LINE as usize]>,
    /// The CTA's same-value write-write conflicts (`checks::benign`).
    pub same: Warnings,
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

/// The merged table's slot: a line's aggregate masks (read, written,
/// atomic), valid while `epoch` is the table's generation.
#[derive(Debug, Clone, Copy)]
struct AggSlot {
    line: u64,
    agg: Agg,
    epoch: u32,
}

/// The launch-wide union of line masks: open addressing with linear
/// probing, at most half full, doubling when it grows. A slot of an older
/// generation is free, so emptying the table between launches is one
/// increment, not a pass over its memory.
#[derive(Debug, Clone)]
pub(crate) struct MergedTable {
    slots: Vec<AggSlot>,
    len: usize,
    shift: u32,
    epoch: u32,
    /// The most lines held since [`MergedTable::take_peak`].
    peak: usize,
}

impl Default for MergedTable {
    fn default() -> Self {
        MergedTable::new(0)
    }
}

impl MergedTable {
    /// An empty table with room for `lines` lines without growing.
    pub fn new(lines: usize) -> MergedTable {
        let (cap, shift) = table_size(lines);
        let free = AggSlot {
            line: EMPTY,
            agg: [0; 3],
            epoch: 0,
        };
        MergedTable {
            slots: vec![free; cap],
            len: 0,
            shift,
            epoch: 1,
            peak: 0,
        }
    }

    #[inline(always)]
    fn home(&self, line: u64) -> usize {
        home(line, self.shift)
    }

    /// The masks of `line`, if merged.
    #[inline]
    pub fn get(&self, line: u64) -> Option<&Agg> {
        let m = self.slots.len() - 1;
        let mut i = self.home(line);
        loop {
            let s = &self.slots[i];
            if s.epoch != self.epoch {
                return None;
            }
            if s.line == line {
                return Some(&s.agg);
            }
            i = (i + 1) & m;
        }
    }

    /// The masks of `line`, zero if new.
    pub fn entry(&mut self, line: u64) -> &mut Agg {
        if (self.len + 1) * 2 > self.slots.len() {
            self.reserve(self.len + 1);
        }
        let m = self.slots.len() - 1;
        let mut i = self.home(line);
        while self.slots[i].epoch == self.epoch && self.slots[i].line != line {
            i = (i + 1) & m;
        }
        let s = &mut self.slots[i];
        if s.epoch != self.epoch {
            *s = AggSlot {
                line,
                agg: [0; 3],
                epoch: self.epoch,
            };
            self.len += 1;
        }
        &mut s.agg
    }

    /// Make room for `lines` lines (at least doubling the table when it
    /// grows).
    pub fn reserve(&mut self, lines: usize) {
        if lines * 2 <= self.slots.len() {
            return;
        }
        let old = std::mem::replace(self, MergedTable::new(lines));
        self.peak = old.peak;
        for s in old.slots.iter().filter(|s| s.epoch == old.epoch) {
            *self.entry(s.line) = s.agg;
        }
    }

    /// Number of lines merged.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Forget every line: a new generation (the slots are rewritten only
    /// when the generation counter wraps).
    pub fn clear(&mut self) {
        self.peak = self.peak.max(self.len);
        self.len = 0;
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            for s in &mut self.slots {
                s.epoch = 0;
            }
            self.epoch = 1;
        }
    }

    /// The most lines held since the last call.
    fn take_peak(&mut self) -> usize {
        std::mem::take(&mut self.peak).max(self.len)
    }
}

/// The accesses of the CTAs merged so far, in CTA order: per line the
/// union of their read, written and atomic masks.
#[derive(Debug, Default)]
pub(crate) struct LaunchShadow {
    lines: MergedTable,
}

impl LaunchShadow {
    /// The conflicting bytes of an access of `kind` to `mask` of `line`.
    #[inline]
    pub fn check(&self, line: u64, kind: Kind, mask: u64) -> u64 {
        match self.lines.get(line) {
            Some(agg) => conflicts(agg, kind, mask),
            None => 0,
        }
    }

    /// Whether any of a CTA's records `recs` conflicts with the merged
    /// CTAs.
    pub fn conflicts_with(&self, recs: &[LineRec]) -> bool {
        recs.iter().any(|r| {
            self.lines.get(r.line).is_some_and(|agg| {
                conflicts(agg, Kind::Read, r.r)
                    | conflicts(agg, Kind::Write, r.w)
                    | conflicts(agg, Kind::Atomic, r.a)
                    != 0
            })
        })
    }

    /// Add a CTA's records `recs`.
    pub fn merge(&mut self, recs: &[LineRec]) {
        // one rebuild at most (the table at least doubles when it grows)
        self.lines.reserve(self.lines.len() + recs.len());
        for r in recs {
            let agg = self.lines.entry(r.line);
            agg[0] |= r.r;
            agg[1] |= r.w;
            agg[2] |= r.a;
        }
    }

    /// Forget every CTA.
    pub fn clear(&mut self) {
        self.lines.clear();
    }

    /// What the merged CTAs did to the byte at `addr` that conflicts with
    /// `kind`: the earlier access's kind (writes first, then atomics).
    pub fn other_kind(&self, addr: u64, kind: Kind) -> Kind {
        let bit = 1u64 << (addr % LINE);
        let agg = self.lines.get(addr / LINE).copied().unwrap_or([0; 3]);
        if agg[1] & bit != 0 {
            Kind::Write
        } else if agg[2] & bit != 0 && kind != Kind::Atomic {
            Kind::Atomic
        } else {
            Kind::Read
        }
    }
}

/// Whether a CTA with records `recs` did an access of `other` kind to the
/// byte at `addr`.
pub(crate) fn touched(recs: &[LineRec], addr: u64, other: Kind) -> bool {
    let bit = 1u64 << (addr % LINE);
    recs.iter().any(|r| {
        let m = match other {
            Kind::Read => r.r,
            Kind::Write => r.w,
            Kind::Atomic => r.a,
        };
        r.line == addr / LINE && m & bit != 0
    })
}

/// The CTAs a launch's walk accepted, in CTA order, pooled: their records
/// one after another (`data` rebased to index `data`), and where each
/// CTA's records end.
#[derive(Debug, Default)]
pub(crate) struct Done {
    pub recs: Vec<LineRec>,
    pub data: Vec<[u8; LINE as usize]>,
    ends: Vec<usize>,
}

impl Done {
    /// Forget every CTA, keeping the memory.
    pub fn clear(&mut self) {
        self.recs.clear();
        self.data.clear();
        self.ends.clear();
    }

    /// Append the next CTA.
    pub fn push(&mut self, cta: &CtaRecs) {
        let base = u32::try_from(self.data.len()).expect("fewer than 2^32 written lines");
        let start = self.recs.len();
        self.recs.extend_from_slice(&cta.recs);
        if base > 0 && !cta.data.is_empty() {
            for r in &mut self.recs[start..] {
                if r.data != NO_DATA {
                    r.data += base;
                }
            }
        }
        self.data.extend_from_slice(&cta.data);
        self.ends.push(self.recs.len());
    }

    /// Number of CTAs.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// The records of CTA `j` (in the order appended).
    pub fn cta(&self, j: usize) -> &[LineRec] {
        let start = if j == 0 { 0 } else { self.ends[j - 1] };
        &self.recs[start..self.ends[j]]
    }
}

/// A decaying high-water mark of what a pooled buffer held per launch:
/// each launch, the larger of its need and 15/16 of the mark before.
#[derive(Debug, Default, Clone, Copy)]
struct Peak(usize);

/// Below this many entries a pooled buffer is never shrunk.
const KEEP: usize = 1024;

impl Peak {
    /// Note a launch's `need`; whether a buffer of `cap` entries is now
    /// more than four times the mark (and above [`KEEP`]).
    fn too_big(&mut self, need: usize, cap: usize) -> bool {
        self.0 = need.max(self.0 - self.0 / 16);
        cap > KEEP && cap > 4 * self.0.max(KEEP / 4)
    }

    /// The entries to keep when shrinking.
    fn keep(self) -> usize {
        self.0.max(KEEP / 4)
    }
}

/// The global-memory shadows' memory kept by the simulator between
/// launches, so that a launch neither allocates nor page-faults it again:
/// the walk's merged table, one CTA table per worker, the compact records
/// handed from workers to the walk, and the accepted CTAs.
///
/// Memory stays bounded: after each launch, [`Scratch::settle`] replaces
/// a buffer more than four times larger than the decaying high-water mark
/// of what launches needed ([`Peak`]: a launch's need, or 15/16 of the
/// mark before) by one of the mark's size. A big launch's memory is thus
/// kept over the next few small ones (a two-pass reduction alternating a
/// big and a one-CTA launch reuses it) and given back over about a dozen
/// launches that need far less.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    pub launch: LaunchShadow,
    /// One per worker (the first for a lone thread and re-runs).
    pub tables: Vec<CtaShadow>,
    /// Compact records not in use.
    pub pool: Vec<CtaRecs>,
    pub done: Done,
    peaks: [Peak; 6],
    /// Most records and written lines of one CTA this launch.
    pub cta_peak: (usize, usize),
}

impl Scratch {
    /// Empty shadows for a launch with `workers` workers (at least one).
    pub fn prepare(&mut self, workers: usize) {
        self.launch.clear();
        if self.tables.len() < workers.max(1) {
            self.tables.resize_with(workers.max(1), CtaShadow::default);
        }
        for t in &mut self.tables {
            t.clear();
        }
        self.done.clear();
        self.cta_peak = (0, 0);
    }

    /// After a launch: empty the shadows and shrink what is far larger
    /// than recent launches needed (see the type's docs).
    pub fn settle(&mut self, workers: usize) {
        let [pl, pt, pr, pd, pcr, pcd] = &mut self.peaks;
        let l = self.launch.lines.take_peak();
        self.launch.clear();
        if pl.too_big(l, self.launch.lines.slots.len() / 2) {
            self.launch.lines = MergedTable::new(pl.keep());
        }
        // tables of workers this launch did not use are dropped
        self.tables.truncate(workers.max(1));
        let t = self.tables.iter_mut().map(|t| t.take_peak()).max();
        let t = t.unwrap_or(0);
        let cap = self.tables.iter().map(|t| t.slots.len() / 2).max();
        if pt.too_big(t, cap.unwrap_or(0)) {
            for s in &mut self.tables {
                *s = CtaShadow::new(pt.keep());
            }
        }
        for s in &mut self.tables {
            s.clear();
        }
        let d = &mut self.done;
        if pr.too_big(d.recs.len(), d.recs.capacity()) {
            d.recs = Vec::with_capacity(pr.keep());
            d.ends = Vec::new();
        }
        if pd.too_big(d.data.len(), d.data.capacity()) {
            d.data = Vec::with_capacity(pd.keep());
        }
        d.clear();
        // the pool: as many buffers as workers could hold at once, none far
        // larger than a CTA needed lately
        self.pool.truncate(2 * workers.max(1) + 2);
        let cr = self.pool.iter().map(|p| p.recs.capacity()).max();
        let cd = (self.pool.iter().map(|p| p.data.capacity()))
            .chain(self.tables.iter().map(|t| t.data.capacity()))
            .max();
        let shrink_r = pcr.too_big(self.cta_peak.0, cr.unwrap_or(0));
        let shrink_d = pcd.too_big(self.cta_peak.1, cd.unwrap_or(0));
        for p in &mut self.pool {
            if shrink_r {
                p.recs = Vec::new();
            }
            if shrink_d {
                p.data = Vec::new();
            }
            p.recs.clear();
            p.data.clear();
        }
        // (a table's written lines are a pooled buffer it swapped in)
        for s in &mut self.tables {
            if shrink_d {
                s.data = Vec::new();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(s: &mut CtaShadow, line: u64, byte: u8) {
        let n = s.data.len() as u32;
        let r = s.rec(line);
        r.w |= 1;
        if r.data == NO_DATA {
            r.data = n;
            s.data.push([byte; LINE as usize]);
        }
        s.wrote = true;
    }

    #[test]
    fn drain_keeps_insertion_order_across_growth_and_empties_the_table() {
        let mut s = CtaShadow::new(0);
        let lines: Vec<u64> = (0..500u64).map(|i| i * 7919 % 1009).collect();
        for (i, &l) in lines.iter().enumerate() {
            if i % 3 == 0 {
                write(&mut s, l, i as u8);
            } else {
                s.rec(l).r |= 2;
            }
        }
        let cap = s.slots.len();
        assert!((1000..=2048).contains(&cap), "{cap}");
        let mut out = CtaRecs::default();
        s.drain_into(&mut out);
        assert_eq!(out.recs.iter().map(|r| r.line).collect::<Vec<_>>(), lines);
        for (i, r) in out.recs.iter().enumerate() {
            if i % 3 == 0 {
                assert_eq!(out.data[r.data as usize][0], i as u8);
            } else {
                assert_eq!((r.r, r.w, r.data), (2, 0, NO_DATA));
            }
        }
        // empty, same size, every slot free
        assert_eq!((s.used.len(), s.slots.len(), s.wrote), (0, cap, false));
        assert!(s.data.is_empty());
        assert!(
            s.slots
                .iter()
                .all(|r| r.line == EMPTY && r.r | r.w | r.a == 0)
        );
        assert!(s.get(lines[0]).is_none());
        assert_eq!(s.take_peak(), 500);
        assert_eq!(s.take_peak(), 0);
    }

    #[test]
    fn merged_table_grows_geometrically_not_eightfold() {
        let mut l = LaunchShadow::default();
        for c in 0..64u64 {
            let recs: Vec<LineRec> = (0..512)
                .map(|i| LineRec {
                    line: c * 512 + i,
                    r: 1,
                    w: 0,
                    a: 0,
                    data: NO_DATA,
                })
                .collect();
            assert!(!l.conflicts_with(&recs));
            l.merge(&recs);
        }
        // 32k lines: 64k slots (at most half full), not 256k
        assert_eq!(l.lines.len(), 32768);
        assert_eq!(l.lines.slots.len(), 65536);
        let w = [LineRec {
            line: 5,
            r: 0,
            w: 1,
            a: 0,
            data: NO_DATA,
        }];
        assert!(l.conflicts_with(&w));
        assert_eq!(l.check(5, Kind::Write, 1), 1);
        assert_eq!(l.check(5, Kind::Read, 1), 0);
        l.clear();
        assert!(!l.conflicts_with(&w));
        assert_eq!(l.lines.slots.len(), 65536);
    }

    #[test]
    fn merged_table_empties_by_epoch_also_when_the_counter_wraps() {
        let mut t = MergedTable::new(0);
        for epoch in [1, u32::MAX - 1, u32::MAX] {
            t.epoch = epoch;
            for l in 0..40 {
                t.entry(l)[1] = l + 1;
            }
            assert_eq!((t.len(), t.get(7)), (40, Some(&[0, 8, 0])));
            t.clear();
            assert_eq!(t.len(), 0);
            assert!((0..40).all(|l| t.get(l).is_none()));
            assert_ne!(t.epoch, 0);
            assert_eq!(*t.entry(7), [0; 3]);
            t.clear();
        }
        assert_eq!(t.take_peak(), 40);
    }

    #[test]
    fn done_rebases_data_and_names_ctas_in_order() {
        let mut d = Done::default();
        let mut s = CtaShadow::new(0);
        let mut out = CtaRecs::default();
        write(&mut s, 10, 1);
        s.rec(11).r |= 1;
        s.drain_into(&mut out);
        d.push(&out);
        write(&mut s, 11, 2);
        write(&mut s, 12, 3);
        s.drain_into(&mut out);
        d.push(&out);
        assert_eq!(d.len(), 2);
        assert_eq!(d.cta(0).len(), 2);
        let c1 = d.cta(1);
        assert_eq!((c1[0].line, c1[1].line), (11, 12));
        assert_eq!(d.data[c1[0].data as usize][0], 2);
        assert_eq!(d.data[c1[1].data as usize][0], 3);
        assert!(touched(d.cta(0), 11 * LINE, Kind::Read));
        assert!(!touched(d.cta(0), 11 * LINE, Kind::Write));
        assert!(touched(d.cta(1), 11 * LINE, Kind::Write));
        assert!(!touched(d.cta(1), 11 * LINE + 1, Kind::Write));
    }

    /// A scratch that held a big launch is kept over a few small ones and
    /// shrunk once small launches go on; it never grows without a need.
    #[test]
    fn scratch_shrinks_after_small_launches() {
        let mut s = Scratch::default();
        let big = |s: &mut Scratch| {
            s.prepare(1);
            let recs: Vec<LineRec> = (0..100_000)
                .map(|i| LineRec {
                    line: i,
                    r: 1,
                    w: 0,
                    a: 0,
                    data: NO_DATA,
                })
                .collect();
            s.launch.merge(&recs);
            s.done.push(&CtaRecs {
                recs,
                data: vec![[0; 64]; 50_000],
                same: Warnings::default(),
            });
            s.settle(1);
        };
        let small = |s: &mut Scratch| {
            s.prepare(1);
            s.launch.lines.entry(1)[0] = 1;
            s.settle(1);
        };
        big(&mut s);
        let slots = s.launch.lines.slots.len();
        assert!(slots >= 200_000);
        assert!(s.done.recs.capacity() >= 100_000);
        // a big and a small launch in turn keep the memory
        for _ in 0..8 {
            small(&mut s);
            big(&mut s);
            assert_eq!(s.launch.lines.slots.len(), slots);
        }
        for _ in 0..4 {
            small(&mut s);
        }
        assert_eq!(s.launch.lines.slots.len(), slots);
        // many small launches give it back, step by step
        for _ in 0..200 {
            small(&mut s);
        }
        assert!(s.launch.lines.slots.len() <= 4096);
        assert!(s.done.recs.capacity() <= 4 * KEEP);
        assert!(s.done.data.capacity() <= 4 * KEEP);
        assert_eq!(s.launch.lines.len(), 0);
    }
}
