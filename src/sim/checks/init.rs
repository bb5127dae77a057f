//! Register initialisation, decided statically where possible: a forward
//! "definitely written" data-flow analysis over the entry's control-flow
//! graph finds the reads that may see a register no instruction has
//! written on some path. Only those reads are checked at run time
//! ([`SimError::UninitializedRegister`](crate::sim::SimError)); every other
//! read is proven initialised and costs nothing.
//!
//! The lattice is the set of declared registers definitely written, met by
//! intersection at joins. An unguarded instruction that executes writes its
//! destinations (a warp collective writes them for every member when it
//! completes); a guarded one may not, so it adds nothing. Special
//! registers and immediates are always initialised. Unreachable
//! instructions keep the top element and get no checks (they never run).

use super::super::code::{dst_writes, src_reads};
use super::super::ir::*;

/// The reads of one instruction that need a run-time check.
#[derive(Debug, Clone, Default)]
pub(crate) struct MaybeUninit {
    /// The guard predicate may be unwritten.
    pub guard: bool,
    /// Indices into `Inst::s`, in read order.
    pub srcs: Vec<usize>,
}

/// A fixed-size bit set over the dense register indices.
#[derive(Clone, PartialEq)]
struct Set(Vec<u64>);

impl Set {
    fn full(n: usize) -> Set {
        Set(vec![u64::MAX; n.div_ceil(64)])
    }
    fn empty(n: usize) -> Set {
        Set(vec![0; n.div_ceil(64)])
    }
    fn has(&self, i: usize) -> bool {
        self.0[i / 64] >> (i % 64) & 1 != 0
    }
    fn add(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }
    /// `self &= o`; whether `self` changed.
    fn meet(&mut self, o: &Set) -> bool {
        let mut changed = false;
        for (a, b) in self.0.iter_mut().zip(&o.0) {
            let n = *a & *b;
            changed |= n != *a;
            *a = n;
        }
        changed
    }
}

/// Above this many bits of analysis state (instructions × registers read)
/// the analysis is skipped and every register read is checked at run time.
const MAX_BITS: usize = 1 << 28;

/// For every instruction of `e`, the reads that may see an unwritten
/// register.
pub(crate) fn maybe_uninit_reads(e: &Entry) -> Vec<MaybeUninit> {
    let n = e.insts.len();
    let first = sreg::COUNT;
    let declared = |s: Src| match s {
        Src::Reg(r) if r >= first && r < e.nregs => Some(r),
        _ => None,
    };
    // dense indices of the registers that are ever read
    let mut dense = vec![u32::MAX; e.nregs as usize];
    let mut nd = 0usize;
    for i in &e.insts {
        let reads = src_reads(&i.op).iter().map(|&k| i.s[k]);
        let guard = (i.guard != NO_REG).then_some(Src::Reg(i.guard));
        for r in reads.chain(guard).filter_map(declared) {
            if dense[r as usize] == u32::MAX {
                dense[r as usize] = nd as u32;
                nd += 1;
            }
        }
    }
    let every_read = |i: &Inst| MaybeUninit {
        guard: declared(Src::Reg(i.guard)).is_some(),
        srcs: src_reads(&i.op)
            .iter()
            .copied()
            .filter(|&k| declared(i.s[k]).is_some())
            .collect(),
    };
    if nd == 0 {
        return vec![MaybeUninit::default(); n];
    }
    if n.saturating_mul(nd) > MAX_BITS {
        return e.insts.iter().map(every_read).collect();
    }
    let succs = |pc: usize| -> ([usize; 2], usize) {
        let i = &e.insts[pc];
        let guarded = i.guard != NO_REG;
        match i.op {
            Op::Bra { target } | Op::BraUni { target, .. } => {
                if guarded {
                    ([target as usize, pc + 1], 2)
                } else {
                    ([target as usize, 0], 1)
                }
            }
            Op::Exit | Op::Trap if !guarded => ([0, 0], 0),
            _ => ([pc + 1, 0], 1),
        }
    };
    // IN sets; the entry starts with no declared register written
    let mut inn: Vec<Set> = vec![Set::full(nd); n];
    let mut reached = vec![false; n];
    inn[0] = Set::empty(nd);
    reached[0] = true;
    let mut work: Vec<usize> = vec![0];
    let mut queued = vec![false; n];
    queued[0] = true;
    while let Some(pc) = work.pop() {
        queued[pc] = false;
        let i = &e.insts[pc];
        let mut out = inn[pc].clone();
        if i.guard == NO_REG {
            for &k in dst_writes(&i.op) {
                let d = i.d[k];
                if d != NO_REG && (d as usize) < dense.len() && dense[d as usize] != u32::MAX {
                    out.add(dense[d as usize] as usize);
                }
            }
        }
        let (s, ns) = succs(pc);
        for &t in &s[..ns] {
            if t >= n {
                continue;
            }
            let changed = if reached[t] {
                inn[t].meet(&out)
            } else {
                reached[t] = true;
                inn[t] = out.clone();
                true
            };
            if changed && !queued[t] {
                queued[t] = true;
                work.push(t);
            }
        }
    }
    e.insts
        .iter()
        .enumerate()
        .map(|(pc, i)| {
            if !reached[pc] {
                return MaybeUninit::default();
            }
            let unset =
                |s: Src| declared(s).is_some_and(|r| !inn[pc].has(dense[r as usize] as usize));
            MaybeUninit {
                guard: i.guard != NO_REG && unset(Src::Reg(i.guard)),
                srcs: src_reads(&i.op)
                    .iter()
                    .copied()
                    .filter(|&k| unset(i.s[k]))
                    .collect(),
            }
        })
        .collect()
}
