//! The checks' rules and shadow state (the optional ones are on by
//! default, [`SimOptions::checks`](super::SimOptions::checks)):
//! * `init`: register initialisation, proven statically where possible;
//! * `shared_race`: races and initialisation in shared memory;
//! * `global`: what each CTA did to global memory, its private writes, and
//!   races between the CTAs of a launch;
//! * `warp_race`: global-memory races between the warps of a CTA;
//! * `reorder`: global accesses within a CTA whose result depends on the
//!   order of its threads (what the lockstep schedule gives up on);
//! * `probe`: naming the earlier access of a race (a re-run watching one
//!   byte);
//! * `uniform`: `bra.uni` uniformity;
//! * `benign`: same-value write-write conflicts, warnings not findings.
//!
//! Bounds and alignment are checked on every access in `interp::access`.

pub(crate) mod benign;
pub(crate) mod global;
pub(crate) mod init;
pub(crate) mod probe;
pub(crate) mod reorder;
pub(crate) mod shared_race;
pub(crate) mod uniform;
pub(crate) mod warp_race;
