//! The optional checks' shadow state and rules (on by default,
//! [`SimOptions::checks`](super::SimOptions::checks)): shared-memory races
//! and initialisation (`shared_race`), `bra.uni` uniformity (`uniform`).
//! Bounds and alignment are checked on every access in `exec::memory`.

pub(crate) mod shared_race;
pub(crate) mod uniform;
