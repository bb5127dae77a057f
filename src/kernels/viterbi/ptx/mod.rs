//! The Viterbi kernels of [`super`]: one CTA per sequence (here), or a
//! cluster of CTAs per sequence with the matrix on chip ([`cluster`]).
//!
//! Threads stride over the states `j`; for each `j` one thread scans the
//! predecessors `i` in ascending order (the contract's tie rule needs no
//! cross-thread reduction), writes the backpointer to the global `psi`
//! workspace and the new score to the other half of a shared-memory double
//! buffer, then the CTA synchronises. Thread 0 picks the final state and
//! walks the backpointers. The shared buffer holds `2 · s_cap` floats; the
//! variant is chosen by `S` ([`cap_for`]).

use crate::dsl::params::Ptr;
use crate::dsl::types::{F32, Pred, Reg, U32};
use crate::dsl::{Cmp, GlobalPtr, KernelBuilder, PtxModule, Rounding, SharedArray};
use crate::error::Result;
use crate::kernel_params;
use crate::kernels::seq::{first_row, seq_cta, zero_if_empty};
use crate::target::{Feature, Sm};

pub mod cluster;

/// Entry-name prefix; a variant is `viterbi_f32_cap<cap>`.
pub const VITERBI: &str = "viterbi_f32";

/// The entry name of the variant with a shared buffer of `2 · cap` floats.
pub fn kernel_name(cap: u32) -> String {
    format!("{VITERBI}_cap{cap}")
}
/// Threads per CTA.
pub const THREADS: u32 = 256;
/// Predecessors a thread loads before it compares them (a power of two).
const UNROLL: u32 = 4;
/// The shared-buffer capacities variants are generated for.
pub const CAPS: [u32; 3] = [256, 1024, 4096];

/// The smallest capacity that holds `s` states.
pub fn cap_for(s: usize) -> u32 {
    CAPS.into_iter()
        .find(|&c| s <= c as usize)
        .unwrap_or(CAPS[CAPS.len() - 1])
}

kernel_params! {
    /// Arguments of [`VITERBI`]. `psi` is a `[batch, T, S]` workspace of
    /// backpointers (row 0 unused).
    pub struct ViterbiArgs => ViterbiRegs {
        log_pi: Ptr<F32>,
        log_a: Ptr<F32>,
        log_b: Ptr<F32>,
        lengths: Ptr<U32>,
        psi: Ptr<U32>,
        paths: Ptr<U32>,
        scores: Ptr<F32>,
        t: U32,
        s: U32,
    }
}

/// The contract's "candidate replaces best" test: `c > best`, or `c` NaN
/// where `best` is not. `gtu` is "greater or unordered", so the second
/// half only has to exclude a NaN `best`.
pub(super) fn better(b: &mut KernelBuilder, c: Reg<F32>, best: Reg<F32>) -> Reg<Pred> {
    let gtu = b.setp(Cmp::Gtu, c, best);
    let best_num = b.setp(Cmp::Num, best, best);
    b.pand(gtu, best_num)
}

/// Generate the kernel for `sm` with a shared buffer of `2 · cap` floats.
pub fn generate(sm: Sm, cap: u32) -> Result<PtxModule> {
    let mut b = KernelBuilder::new(&kernel_name(cap), sm);
    b.maxntid(THREADS, 1, 1);
    // Without it ptxas 12.9 caps sm_70 at 32 registers (full occupancy)
    // and spills 8 bytes in the small variants.
    b.min_ctas_per_sm(1);
    let p = b.params::<ViterbiArgs>();
    let buf = b.shared_array::<F32>("delta", 2 * cap, 16);
    let c = seq_cta(&mut b, p.lengths, p.t, p.s);
    let (seq, tid, nt, len, zero_tid) = (c.seq, c.tid, c.nt, c.len, c.first_thread);
    // Row `tt` of sequence `seq` starts at (seq·T + tt)·S in log_b, psi.
    let seq_base = c.base;
    let paths_base = b.mul_wide_u32(seq, p.t);
    let seq_b = b.offset64(p.log_b, seq_base);
    let seq_psi = b.offset64(p.psi, seq_base);
    let seq_paths = b.offset64(p.paths, paths_base);

    // Positions past the length hold NO_STATE.
    let start = b.add(len, tid);
    b.for_range(start, p.t, nt, |b, tt| {
        let dst = b.offset(seq_paths, tt);
        b.st_global(dst, 0, u32::MAX);
    });
    let nonempty = zero_if_empty(&mut b, &c, p.scores);
    b.if_(nonempty, |b| {
        // delta_0[j] = log_pi[j] + log_b[seq, 0, j]
        first_row(b, &c, p.s, p.log_pi, seq_b, &buf, None);
        // The predecessor scan's groups end at 1 + ((S - 1) rounded down
        // to a multiple of UNROLL) (S ≥ 1 wherever a step runs).
        let preds = b.sub(p.s, 1u32);
        let whole = b.and(preds, !(UNROLL - 1));
        let groups_end = b.add(whole, 1u32);
        // Steps 1..len: `cur` starts at (tt-1 & 1)·cap, `next` at (tt & 1)·cap.
        b.for_range(1u32, len, 1u32, |b, tt| {
            let par = b.and(tt, 1u32);
            let next_off = b.mul_lo(par, cap);
            let cur_off = b.sub(cap, next_off);
            let row = b.mul_wide_u32(tt, p.s);
            let row_b = b.offset64(seq_b, row);
            let row_psi = b.offset64(seq_psi, row);
            b.for_range(tid, p.s, nt, |b, j| {
                let c0 = b.shared_elem(&buf, cur_off);
                let d0 = b.ld_shared(c0, 0);
                let ap = b.offset(p.log_a, j);
                let a0 = b.ld_global(ap, 0);
                let best = b.fadd(Rounding::Rn, d0, a0);
                let arg = b.mov(0u32);
                let best_r = b.mov(best);
                // The predecessors 1.. in groups of UNROLL, then one at a
                // time: a group's loads first, then its candidates in
                // ascending order (the same fold, so the same bits). In
                // PTX order a load used by the next comparison stalls the
                // thread for its latency each predecessor; issued together
                // they stall it once a group (`docs/perf.md`, "Where the
                // critical path goes").
                let scan = |b: &mut KernelBuilder, i: Reg<U32>, k: u32| {
                    let mut loaded = Vec::with_capacity(k as usize);
                    for q in 0..k {
                        let iq = if q == 0 { i } else { b.add(i, q) };
                        let ci = b.add(cur_off, iq);
                        let cp = b.shared_elem(&buf, ci);
                        let di = b.ld_shared(cp, 0);
                        let ij = b.mad_lo(iq, p.s, j);
                        let aip = b.offset(p.log_a, ij);
                        let ai = b.ld_global(aip, 0);
                        loaded.push((iq, di, ai));
                    }
                    for (iq, di, ai) in loaded {
                        let c = b.fadd(Rounding::Rn, di, ai);
                        let take = better(b, c, best_r);
                        let nb = b.selp(take, c, best_r);
                        let na = b.selp(take, iq, arg);
                        b.assign(best_r, nb);
                        b.assign(arg, na);
                    }
                };
                b.for_range(1u32, groups_end, UNROLL, |b, i| scan(b, i, UNROLL));
                b.for_range(groups_end, p.s, 1u32, |b, i| scan(b, i, 1));
                let ep = b.offset(row_b, j);
                let e = b.ld_global(ep, 0);
                let d = b.fadd(Rounding::Rn, best_r, e);
                let nj = b.add(next_off, j);
                let np = b.shared_elem(&buf, nj);
                b.st_shared(np, 0, d);
                let pp = b.offset(row_psi, j);
                b.st_global(pp, 0, arg);
            });
            b.bar_sync();
        });
        // Final state and backtrack (thread 0).
        b.if_(zero_tid, |b| {
            final_state_and_path(b, &buf, cap, len, &p, seq, seq_psi, seq_paths);
        });
    });
    b.finish()
}

/// One thread's end of a decode: the final state (the best of the last
/// score row, at `(len − 1 & 1)·cap` of `delta`, by the contract's rule),
/// the score, and the path by the backpointers in `psi` (shared by the
/// one-CTA and the cluster kernel, [`cluster`]).
#[allow(clippy::too_many_arguments)]
pub(super) fn final_state_and_path(
    b: &mut KernelBuilder,
    delta: &SharedArray<F32>,
    cap: u32,
    len: Reg<U32>,
    p: &ViterbiRegs,
    seq: Reg<U32>,
    seq_psi: GlobalPtr<U32>,
    seq_paths: GlobalPtr<U32>,
) {
    let last = b.sub(len, 1u32);
    let par = b.and(last, 1u32);
    let off = b.mul_lo(par, cap);
    let c0 = b.shared_elem(delta, off);
    let d0 = b.ld_shared(c0, 0);
    let best_r = b.mov(d0);
    let state = b.mov(0u32);
    b.for_range(1u32, p.s, 1u32, |b, j| {
        let k = b.add(off, j);
        let cp = b.shared_elem(delta, k);
        let c = b.ld_shared(cp, 0);
        let take = better(b, c, best_r);
        let nb = b.selp(take, c, best_r);
        let ns = b.selp(take, j, state);
        b.assign(best_r, nb);
        b.assign(state, ns);
    });
    let sp = b.offset(p.scores, seq);
    b.st_global(sp, 0, best_r);
    let lp = b.offset(seq_paths, last);
    b.st_global(lp, 0, state);
    // for tt = last down to 1: state = psi[tt][state]; path[tt-1] = state
    let tt = b.mov(last);
    b.while_(
        |b| b.setp(Cmp::Gt, tt, 0u32),
        |b| {
            let row = b.mul_wide_u32(tt, p.s);
            let rp = b.offset64(seq_psi, row);
            let sp = b.offset(rp, state);
            let prev = b.ld_global(sp, 0);
            b.assign(state, prev);
            let t1 = b.sub(tt, 1u32);
            b.assign(tt, t1);
            let dst = b.offset(seq_paths, tt);
            b.st_global(dst, 0, state);
        },
    );
}

/// Every variant for `sm`: one per shared-buffer capacity, and the
/// cluster kernel where clusters exist ([`cluster`]).
pub fn variants(sm: Sm) -> Result<Vec<PtxModule>> {
    let mut all: Vec<PtxModule> = CAPS
        .into_iter()
        .map(|c| generate(sm, c))
        .collect::<Result<_>>()?;
    if sm.supports(Feature::Cluster) {
        all.push(cluster::generate(sm)?);
    }
    Ok(all)
}
