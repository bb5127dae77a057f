//! Global accesses whose result depends on the order of a CTA's threads.
//!
//! The simulator's order within a CTA is *thread order*: in each round
//! (the threads run until every one parks at a barrier or warp collective,
//! or exits) thread 0 runs to its stopping point, then thread 1, and so on.
//! The lockstep schedule (`interp::lockstep`) runs the threads of a round
//! interleaved instead, block by block. Registers, local memory and the
//! checked shared memory (where any cross-thread conflict within a round is
//! a finding) give the same results in either order; global memory within a
//! CTA has no race check, so the lockstep schedule watches its global
//! accesses with these tags and gives up (the CTA runs again in thread
//! order) at the first access whose value could differ:
//!
//! * a read of bytes written this round by a *later* thread (thread order
//!   reads them before that write) or by several threads;
//! * a write of a word read this round by a later thread (thread order
//!   reads the new value there);
//! * a write of bytes another thread wrote this round (the last writer
//!   differs).
//!
//! A read of bytes an earlier thread wrote is what thread order reads too:
//! that thread's last write, since a later write of its own would meet the
//! read's tag. Written bytes are tracked per byte, writers and readers per
//! 4-byte word (a word written in parts by several threads reads as
//! written by several). Accesses of one thread, and of rounds before, are
//! ordered the same way in both schedules; so are those of two warps,
//! since the lockstep schedule runs a round's warps one after another in
//! order: the tags only order the threads of the running warp (a warp's
//! run in a round is a *stamp*; tags of another stamp are empty), and a
//! thread is its lane.

use super::global::line_bytes;

/// Writer field of a word written by several lanes.
const MULTI: u8 = u8::MAX;

/// One line's accesses by the running warp in its current run (stale when
/// `stamp` is another): the bytes written, and per 4-byte word the writer
/// and the highest reader, as lane + 1 (0: none). One host cache line.
#[derive(Debug, Clone, Copy, Default)]
#[repr(align(64))]
pub(crate) struct LineTags {
    stamp: u32,
    written: u64,
    writer: [u8; 16],
    reader: [u8; 16],
}

impl LineTags {
    /// The tags as of stamp `stamp`.
    #[inline(always)]
    fn fresh(&mut self, stamp: u32) {
        if self.stamp != stamp {
            *self = LineTags {
                stamp,
                ..LineTags::default()
            };
        }
    }

    /// Record a read by thread `t` (of the running warp) of `len` bytes at
    /// `off` in the line (an aligned access, so within it) at stamp
    /// `stamp`; `false` if thread order could read another value.
    #[inline(always)]
    pub(crate) fn read(&mut self, stamp: u32, t: usize, off: usize, len: usize) -> bool {
        self.fresh(stamp);
        let u = (t % 32) as u8 + 1;
        let (w0, w1) = (off / 4, (off + len - 1) / 4);
        if self.written & line_bytes(off, len) != 0 {
            // an earlier thread's (or its own) write is what thread order
            // reads; a later thread's, or several threads', is not
            if self.writer[w0..=w1].iter().any(|&x| x > u) {
                return false;
            }
        }
        for r in &mut self.reader[w0..=w1] {
            *r = (*r).max(u);
        }
        true
    }

    /// Record a write by thread `t` of `len` bytes at `off`; `false` if a
    /// later lane read the word or another lane wrote the bytes.
    #[inline(always)]
    pub(crate) fn write(&mut self, stamp: u32, t: usize, off: usize, len: usize) -> bool {
        self.fresh(stamp);
        let u = (t % 32) as u8 + 1;
        let (w0, w1) = (off / 4, (off + len - 1) / 4);
        if self.reader[w0..=w1].iter().any(|&r| r > u) {
            return false;
        }
        let m = line_bytes(off, len);
        if self.written & m != 0 && self.writer[w0..=w1].iter().any(|&x| x != 0 && x != u) {
            return false;
        }
        for x in &mut self.writer[w0..=w1] {
            *x = if *x == 0 || *x == u { u } else { MULTI };
        }
        self.written |= m;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Read-modify-write of its own word by each thread, in lockstep order
    /// (every read, then every write): thread order gives the same values.
    #[test]
    fn own_words_read_then_written_are_order_free() {
        let mut l = LineTags::default();
        for t in 0..16 {
            assert!(l.read(1, t, 4 * t, 4));
        }
        for t in 0..16 {
            assert!(l.write(1, t, 4 * t, 4));
        }
        // and read back by its writer
        assert!(l.read(1, 3, 12, 4));
    }

    #[test]
    fn a_later_readers_word_written_is_not() {
        let mut l = LineTags::default();
        assert!(l.read(1, 5, 0, 4));
        assert!(!l.write(1, 2, 0, 4));
        // an earlier reader's is
        let mut l = LineTags::default();
        assert!(l.read(1, 2, 0, 4));
        assert!(l.write(1, 5, 0, 4));
        // another stamp (a later warp run) starts afresh
        let mut l = LineTags::default();
        assert!(l.read(1, 5, 0, 4));
        assert!(l.write(2, 2, 0, 4));
    }

    #[test]
    fn reads_see_only_earlier_writers() {
        let mut l = LineTags::default();
        assert!(l.write(1, 2, 8, 4));
        assert!(l.read(1, 7, 8, 4));
        let mut l = LineTags::default();
        assert!(l.write(1, 7, 8, 4));
        assert!(!l.read(1, 2, 8, 4));
        // bytes of the word nobody wrote are free
        let mut l = LineTags::default();
        assert!(l.write(1, 7, 8, 2));
        assert!(l.read(1, 2, 10, 2));
    }

    #[test]
    fn bytes_of_one_word_by_several_writers() {
        let mut l = LineTags::default();
        for t in 0..4 {
            assert!(l.write(1, t, t, 1));
        }
        // written again by another thread: the last writer would differ
        assert!(!l.clone().write(1, 9, 2, 1));
        // read by a thread after them all: several writers, given up
        assert!(!l.read(1, 9, 0, 4));
    }

    #[test]
    fn a_thread_rewriting_its_own_bytes_is_order_free() {
        let mut l = LineTags::default();
        assert!(l.write(1, 3, 0, 8));
        assert!(l.read(1, 3, 0, 8));
        assert!(l.write(1, 3, 0, 8));
        assert!(!l.write(1, 4, 4, 4));
    }
}
