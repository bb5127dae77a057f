//! Naming the earlier access of a race.
//!
//! The race checks keep, per byte, only what they need to decide (barrier
//! epoch, the warp or thread, the kind), not the instruction. When a race
//! is found, the grid runs the CTA that made the earlier access again,
//! alone, in thread order, on the launch's starting memory, with a
//! [`Probe`] on the racing byte: every access to the byte that passes the
//! checks is offered to the probe, which keeps the one the finding's tags
//! stand for (the last, or for a race between blocks the first, of the
//! earlier access's kind by the earlier thread or warp). The re-run is the
//! same deterministic run as the first (thread order; the same starting
//! memory and watch list), so it stops at the same finding, and the probe
//! has seen exactly the accesses before it. Nothing of this runs unless a
//! race is found.

use super::global::Kind;

/// Which threads' accesses a probe keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Who {
    /// Any thread.
    Any,
    /// This thread.
    Thread(usize),
    /// Threads of this warp.
    Warp(usize),
    /// Threads of other warps than this one.
    NotWarp(usize),
    /// Threads other than this one, those of other warps first (reads by
    /// several threads of a shared byte).
    Others(usize),
}

/// A watch on one byte during a re-run (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct Probe {
    /// The byte: a global address, or an offset in shared memory.
    pub at: u64,
    /// The kinds kept (bits: 1 read, 2 write, 4 atomic).
    pub kinds: u8,
    pub who: Who,
    /// Keep the first access (else the last).
    pub first: bool,
    /// The access kept: thread and instruction.
    pub found: Option<(usize, usize)>,
    /// For [`Who::Others`]: the last access by a thread of the finding's
    /// own warp, used when no other warp's is found.
    pub fallback: Option<(usize, usize)>,
}

/// The probe's bit of `kind`.
pub(crate) fn bit(kind: Kind) -> u8 {
    match kind {
        Kind::Read => 1,
        Kind::Write => 2,
        Kind::Atomic => 4,
    }
}

impl Probe {
    /// A probe on byte `at` for accesses of the kinds `kinds` by `who`.
    pub fn new(at: u64, kinds: u8, who: Who, first: bool) -> Box<Probe> {
        Box::new(Probe {
            at,
            kinds,
            who,
            first,
            found: None,
            fallback: None,
        })
    }

    /// An access of `kind` to the `len` bytes at `at` by thread `t` at
    /// instruction `pc`, which passed the checks.
    #[cold]
    #[inline(never)]
    pub fn note(&mut self, at: u64, len: usize, t: usize, pc: usize, kind: Kind) {
        if self.at.wrapping_sub(at) >= len as u64 || self.kinds & bit(kind) == 0 {
            return;
        }
        if self.first && self.found.is_some() {
            return;
        }
        let hit = Some((t, pc));
        match self.who {
            Who::Any => self.found = hit,
            Who::Thread(o) if o == t => self.found = hit,
            Who::Warp(w) if t / 32 == w => self.found = hit,
            Who::NotWarp(w) if t / 32 != w => self.found = hit,
            Who::Others(o) if t / 32 != o / 32 => self.found = hit,
            Who::Others(o) if t != o => self.fallback = hit,
            _ => {}
        }
    }

    /// The access kept (thread, instruction).
    pub fn result(&self) -> Option<(usize, usize)> {
        self.found.or(self.fallback)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_or_first_access_of_its_kind_and_threads() {
        let mut p = Probe::new(10, bit(Kind::Write), Who::Warp(1), false);
        p.note(8, 4, 33, 1, Kind::Write);
        p.note(8, 2, 34, 2, Kind::Write); // not the byte
        p.note(8, 4, 35, 3, Kind::Read); // not the kind
        p.note(10, 1, 3, 4, Kind::Write); // not the warp
        p.note(10, 1, 40, 5, Kind::Write);
        assert_eq!(p.result(), Some((40, 5)));
        let mut p = Probe::new(10, bit(Kind::Read), Who::Any, true);
        p.note(8, 4, 7, 1, Kind::Read);
        p.note(8, 4, 9, 2, Kind::Read);
        assert_eq!(p.result(), Some((7, 1)));
        // several readers: another warp's first, else the own warp's
        let mut p = Probe::new(0, bit(Kind::Read), Who::Others(5), false);
        p.note(0, 4, 6, 1, Kind::Read);
        p.note(0, 4, 5, 2, Kind::Read);
        assert_eq!(p.result(), Some((6, 1)));
        p.note(0, 4, 64, 3, Kind::Read);
        p.note(0, 4, 7, 4, Kind::Read);
        assert_eq!(p.result(), Some((64, 3)));
    }
}
