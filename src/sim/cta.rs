//! The state of one CTA while it runs: per-thread registers (with their
//! initialisation flags), program counters and run states, shared and
//! local memory, and the shadow state of the checks.

use super::checks::uniform::Bits;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TState {
    Run,
    Park,
    Exit,
}

pub(crate) struct Cta {
    pub(crate) n: usize,
    pub(crate) nregs: usize,
    pub(crate) regs: Vec<u64>,
    pub(crate) init: Vec<bool>,
    pub(crate) pc: Vec<u32>,
    pub(crate) state: Vec<TState>,
    pub(crate) shared: Vec<u8>,
    /// per-byte last-write tag, 0 = never written in this CTA
    pub(crate) sh_w: Vec<u64>,
    /// per-byte last-read tag
    pub(crate) sh_r: Vec<u64>,
    pub(crate) local: Vec<u8>,
    pub(crate) epoch: u32,
    pub(crate) wepoch: Vec<u32>,
    pub(crate) bu_cnt: Vec<u32>,
    /// Per (warp, `bra.uni`): the outcome of each dynamic occurrence.
    pub(crate) bu_out: Vec<Bits>,
}
