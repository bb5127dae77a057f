//! `bra.uni` uniformity: every lane of a warp must take (or not take) the
//! same dynamic occurrence of a `bra.uni`.

use super::super::cta::CtaState;
use super::super::interp::Fault;

/// A growable bit vector.
#[derive(Debug, Clone, Default)]
pub(crate) struct Bits {
    pub(crate) words: Vec<u64>,
    pub(crate) len: usize,
}

impl Bits {
    pub(crate) fn get(&self, i: usize) -> bool {
        self.words[i / 64] >> (i % 64) & 1 != 0
    }
    pub(crate) fn push(&mut self, b: bool) {
        if self.len.is_multiple_of(64) {
            self.words.push(0);
        }
        if b {
            self.words[self.len / 64] |= 1 << (self.len % 64);
        }
        self.len += 1;
    }
    pub(crate) fn clear(&mut self) {
        self.words.clear();
        self.len = 0;
    }
}

impl CtaState {
    /// Record that thread `t` does (`taken`) or does not take the next
    /// dynamic occurrence of `bra.uni` number `idx` (of `nb`); a lane of the
    /// same warp that decided otherwise at that occurrence is a finding.
    pub(crate) fn brauni(
        &mut self,
        nb: usize,
        t: usize,
        idx: u32,
        taken: bool,
    ) -> Result<(), Box<Fault>> {
        let ci = t * nb + idx as usize;
        let c = self.bu_cnt[ci] as usize;
        self.bu_cnt[ci] += 1;
        let out = &mut self.bu_out[(t / 32) * nb + idx as usize];
        if c < out.len {
            let seen = out.get(c);
            if seen != taken {
                return Err(Box::new(Fault::Warp(format!(
                    "bra.uni is divergent: this lane {} the branch, an earlier lane of the warp did {}",
                    if taken { "takes" } else { "does not take" },
                    if seen { "take it" } else { "not take it" }
                ))));
            }
        } else {
            out.push(taken);
        }
        Ok(())
    }
}
