//! Same-value write-write conflicts: two plain writes of one byte that
//! nothing orders (threads of two warps of a CTA between barriers, on
//! global memory; two threads of a CTA, on shared memory) where the later
//! write stores the byte the earlier one left there.
//!
//! compute-sanitizer's racecheck grades its hazards by severity
//! (*Compute Sanitizer User Manual*, "Racecheck Severity Levels"): INFO
//! for "hazards that have no impact on program execution", WARNING for
//! programming-model hazards that "may be intentionally created by the
//! programmer", ERROR for "very likely candidates for causing data access
//! races"; its write-after-write reports carry the "Current Value" and the
//! "Incoming Value" of the byte ("Understanding Racecheck Hazard
//! Reports"). A write-after-write whose incoming value is the current one
//! leaves memory the same in either order, so it is no ERROR: the
//! simulator records it as a warning of the launch
//! ([`LaunchReport::same_value_writes`](crate::sim::LaunchReport::same_value_writes):
//! a count and the first one, named as the race finding it would
//! otherwise be) and the launch goes on. Every other conflict (different
//! bytes, a read or an atomic involved) stays a finding.

/// One same-value conflict, as the interpreter saw it: the later access
/// (thread `t`, instruction `pc`) and the earlier one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SameWrite {
    pub t: u32,
    pub pc: u32,
    pub at: Where,
}

/// Where a same-value conflict was and whom it was with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Where {
    /// The global byte at `addr`, written before by warp `other_warp`.
    Global { addr: u64, other_warp: u32 },
    /// The shared byte at `offset`, written before by thread `other_tid`
    /// (linear; `u32::MAX` when unknown).
    Shared { offset: u64, other_tid: u32 },
}

/// A CTA's same-value conflicts: how many accesses had one, and the
/// first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct SameWrites {
    pub count: u64,
    pub first: Option<SameWrite>,
}

impl SameWrites {
    /// Count `w`, keeping the first.
    #[cold]
    pub fn note(&mut self, w: SameWrite) {
        self.count += 1;
        if self.first.is_none() {
            self.first = Some(w);
        }
    }
}

/// Same-value conflicts as a launch reports them: how many accesses had
/// one, and the first (in block order, then the simulator's thread
/// order), as text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Warnings {
    pub count: u64,
    pub first: Option<String>,
}

impl Warnings {
    /// Add the warnings of the next block.
    pub fn add(&mut self, later: &Warnings) {
        self.count += later.count;
        if self.first.is_none() {
            self.first.clone_from(&later.first);
        }
    }
}
