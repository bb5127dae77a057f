//! The Viterbi kernel across a thread-block cluster (sm_90 on), with the
//! transition matrix on chip for the whole recursion (issue 33).
//!
//! The one-CTA kernel ([`super::generate`]) reads `log_a` from global
//! memory every step (256 KiB at `S` 256: the L2 streams it `T` times a
//! sequence). Here a cluster of [`CLUSTER`] CTAs decodes one sequence and
//! each CTA keeps a slice of the matrix in its shared memory for the whole
//! recursion:
//!
//! * CTA `r` owns the columns `j = 32·r + lane` ([`COLS`] of them) and holds
//!   `log_a[i][j]` for every `i < S` and its columns (`S × 32` floats,
//!   32 KiB at `S` 256);
//! * warp `w` scans the predecessors `i ∈ [32·w, 32·w + 32)` of the lane's
//!   column in ascending order (the contract's rule: the running best is
//!   replaced when `c > best`, or when `c` is NaN and the best is not), into
//!   a partial `(best, arg)`, fully unrolled; where the last part passes `S`
//!   it reads padding (scores `−inf`, transitions 0), whose `−inf`
//!   candidates replace nothing. Where no candidate of the part can be NaN
//!   (its 32 scores, checked a step by a vote, and the lane's 32
//!   transitions, checked once, hold no NaN and no `+inf`) the rule is the
//!   plain `c > best`, one comparison fewer a predecessor; otherwise the
//!   whole rule runs;
//! * warp 0 folds the partials of the warps `0, 1, …` in ascending order
//!   by the same rule. The fold gives the scan's result: a part's partial
//!   is its first NaN if it has one, else its first maximum; a later part
//!   replaces an earlier one exactly when the scan would have (strictly
//!   greater, or NaN over a number), so the backpointer and the score are
//!   the one-CTA kernel's, bit for bit (the `add.rn` of each candidate is
//!   the same single rounding);
//! * warp 0 adds the emission (loaded at the start of the step), writes the
//!   backpointer to the `psi` workspace and stores the new score into the
//!   `delta` buffer of **every** CTA of the cluster (`mapa` +
//!   `st.shared::cluster`); one cluster barrier (release/acquire) a step
//!   publishes them. `delta` is double-buffered, so the next step's stores
//!   cannot meet this step's reads.
//!
//! Rank 0's thread 0 picks the final state and walks the backpointers as
//! the one-CTA kernel does (every CTA holds the whole last row of scores;
//! the cluster barriers order the other CTAs' `psi` stores before its
//! reads). `1 ≤ S ≤` [`CAP`].

use crate::dsl::types::{F32, Pred, Reg, U32};
use crate::dsl::{Cmp, KernelBuilder, PtxModule, Rounding, SharedArray};
use crate::error::Result;
use crate::kernels::seq::{SeqCta, zero_if_empty};
use crate::target::{Feature, Sm};

use super::{THREADS, ViterbiArgs, ViterbiRegs, better, final_state_and_path};

/// CTAs of a cluster (one sequence).
pub const CLUSTER: u32 = 8;
/// Columns a CTA owns (a lane each).
pub const COLS: u32 = 32;
/// The most states the cluster kernel takes: [`CLUSTER`] × [`COLS`].
pub const CAP: u32 = CLUSTER * COLS;
/// Warps of a CTA: each scans one part of 32 predecessors.
const WARPS: u32 = THREADS / 32;
/// The fewest states for which the cluster kernel is used: below, the
/// matrix is small enough that the one-CTA kernel's reads stay cheap, and
/// most of a cluster's CTAs would hold no column.
pub const MIN_STATES: usize = 65;

/// The kernel's entry name.
pub fn kernel_name() -> String {
    format!("{}_cluster{CLUSTER}_cap{CAP}", super::VITERBI)
}

/// Whether `S` states on `sm` take the cluster kernel: clusters exist
/// (sm_90 on) and `MIN_STATES ≤ S ≤ CAP`.
pub fn uses_cluster(sm: Sm, s: usize) -> bool {
    sm.supports(Feature::Cluster) && (MIN_STATES..=CAP as usize).contains(&s)
}

/// Generate the cluster kernel for `sm` (launched with `batch · CLUSTER`
/// CTAs of [`THREADS`]; static shared memory only).
pub fn generate(sm: Sm) -> Result<PtxModule> {
    let mut b = KernelBuilder::new(&kernel_name(), sm);
    b.reqntid(THREADS, 1, 1);
    // 36 KiB of shared memory a CTA; four CTAs an SM put batch 64's 512
    // CTAs in one wave on 132 SMs (64 registers a thread).
    b.min_ctas_per_sm(4);
    b.cluster_dims(CLUSTER, 1, 1);
    let p = b.params::<ViterbiArgs>();
    let sh = Smem {
        a: b.shared_array::<F32>("a_slice", CAP * COLS, 16),
        delta: b.shared_array::<F32>("delta", 2 * CAP, 16),
        pbest: b.shared_array::<F32>("pbest", WARPS * COLS, 16),
        parg: b.shared_array::<U32>("parg", WARPS * COLS, 16),
    };
    let seq = b.clusterid_x();
    let rank = b.cluster_ctarank();
    let tid = b.tid_x();
    let nt = b.ntid_x();
    let lane = b.and(tid, 31u32);
    let warp = b.shr(tid, 5u32);
    let lp = b.offset(p.lengths, seq);
    let len = b.ld_global(lp, 0);
    let ts = b.mul_lo(p.t, p.s);
    let base = b.mul_wide_u32(seq, ts);
    let t0 = b.setp(Cmp::Eq, tid, 0u32);
    let r0 = b.setp(Cmp::Eq, rank, 0u32);
    let lead = b.pand(t0, r0);
    let c = SeqCta {
        seq,
        tid,
        nt,
        len,
        ts,
        base,
        first_thread: lead,
    };
    let paths_base = b.mul_wide_u32(seq, p.t);
    let seq_b = b.offset64(p.log_b, base);
    let seq_psi = b.offset64(p.psi, base);
    let seq_paths = b.offset64(p.paths, paths_base);

    // Positions past the length hold NO_STATE (rank 0's threads).
    b.if_(r0, |b| {
        let start = b.add(len, tid);
        b.for_range(start, p.t, nt, |b, tt| {
            let dst = b.offset(seq_paths, tt);
            b.st_global(dst, 0, u32::MAX);
        });
    });
    let nonempty = zero_if_empty(&mut b, &c, p.scores);
    b.if_(nonempty, |b| {
        // The CTA's slice: a[i·32 + l] = log_a[i·S + 32·rank + l] for the
        // columns below S.
        let c0 = b.mul_lo(rank, COLS);
        let cells = b.mul_lo(p.s, COLS);
        b.for_range(tid, cells, nt, |b, k| {
            let i = b.shr(k, 5u32);
            let l = b.and(k, 31u32);
            let j = b.add(c0, l);
            let inside = b.setp(Cmp::Lt, j, p.s);
            b.if_(inside, |b| {
                let ij = b.mad_lo(i, p.s, j);
                let src = b.offset(p.log_a, ij);
                let v = b.ld_global(src, 0);
                let dst = b.shared_elem(&sh.a, k);
                b.st_shared(dst, 0, v);
            });
        });
        // The padding the scan reads past S (the last part's rows): the
        // slice's rows S.. hold 0 and both score rows `−inf` at S..CAP, so
        // those candidates are `−inf` (the exchange stores j < S only).
        let pad_from = b.add(cells, tid);
        b.for_range(pad_from, CAP * COLS, nt, |b, k| {
            let dst = b.shared_elem(&sh.a, k);
            b.st_shared(dst, 0, 0f32);
        });
        let pad_s = b.add(p.s, tid);
        b.for_range(pad_s, CAP, nt, |b, j| {
            let dst = b.shared_elem(&sh.delta, j);
            b.st_shared(dst, 0, f32::NEG_INFINITY);
            b.st_shared(dst, CAP as i32, f32::NEG_INFINITY);
        });
        // delta_0[j] = log_pi[j] + log_b[seq, 0, j], every CTA all of it.
        b.for_range(tid, p.s, nt, |b, j| {
            let pp = b.offset(p.log_pi, j);
            let pi = b.ld_global(pp, 0);
            let ep = b.offset(seq_b, j);
            let e = b.ld_global(ep, 0);
            let v = b.fadd(Rounding::Rn, pi, e);
            let dp = b.shared_elem(&sh.delta, j);
            b.st_shared(dp, 0, v);
        });
        // Every CTA has started (and written its slice and row 0) before
        // any remote store.
        cluster_barrier(b);
        let j = b.add(c0, lane);
        let col = b.setp(Cmp::Lt, j, p.s);
        let i0 = b.shl(warp, 5u32);
        let has_part = b.setp(Cmp::Lt, i0, p.s);
        let scans = b.pand(col, has_part);
        let w0 = b.setp(Cmp::Eq, warp, 0u32);
        let folds = b.pand(w0, col);
        // Whether the lane's 32 transitions of its part hold no NaN and no
        // +inf (the slice and its padding are written: the barrier above).
        let a_ok = b.mov(1u32);
        b.if_(scans, |b| {
            let ak = b.mad_lo(i0, COLS, lane);
            let ap = b.shared_elem(&sh.a, ak);
            for k in 0..COLS {
                let v = b.ld_shared(ap, (k * COLS) as i32);
                let bad = b.setp(Cmp::Gtu, v, f32::MAX);
                let z = b.selp(bad, 0u32, a_ok);
                b.assign(a_ok, z);
            }
        });
        let a_ok = b.setp(Cmp::Ne, a_ok, 0u32);
        b.for_range(1u32, len, 1u32, |b, tt| {
            step(
                b,
                &sh,
                &p,
                (seq_b, seq_psi),
                tt,
                [j, lane, warp, i0],
                Preds { scans, folds, a_ok },
            );
        });
        // Final state and backtrack (rank 0's thread 0).
        b.if_(lead, |b| {
            final_state_and_path(b, &sh.delta, CAP, len, &p, seq, seq_psi, seq_paths);
        });
    });
    b.finish()
}

/// The kernel's shared arrays.
struct Smem {
    /// `[CAP][COLS]`: the CTA's columns of `log_a`, row `i` at `32·i`.
    a: SharedArray<F32>,
    /// Two rows of scores, `[2][CAP]`.
    delta: SharedArray<F32>,
    /// `[WARPS][COLS]`: each part's best and its predecessor.
    pbest: SharedArray<F32>,
    parg: SharedArray<U32>,
}

/// The step's per-thread conditions, fixed for the whole recursion.
struct Preds {
    /// the lane's column is below `S` and the warp's part has a
    /// predecessor
    scans: Reg<Pred>,
    /// warp 0 with a column: folds the partials and stores the score
    folds: Reg<Pred>,
    /// the lane's part of its column holds no NaN and no `+inf`
    a_ok: Reg<Pred>,
}

/// One step `tt ≥ 1` of the recursion (the module docs' order).
fn step(
    b: &mut KernelBuilder,
    sh: &Smem,
    p: &ViterbiRegs,
    (seq_b, seq_psi): (crate::dsl::GlobalPtr<F32>, crate::dsl::GlobalPtr<U32>),
    tt: Reg<U32>,
    [j, lane, warp, i0]: [Reg<U32>; 4],
    pr: Preds,
) {
    let par = b.and(tt, 1u32);
    let next_off = b.mul_lo(par, CAP);
    let cur_off = b.sub(CAP, next_off);
    let row = b.mul_wide_u32(tt, p.s);
    // The emission, early: its latency hides behind the scan.
    let e = b.mov(0f32);
    b.if_(pr.folds, |b| {
        let rb = b.offset64(seq_b, row);
        let ep = b.offset(rb, j);
        let v = b.ld_global(ep, 0);
        b.assign(e, v);
    });
    // No candidate of the part can be NaN when its scores hold no NaN and
    // no +inf and the lane's transitions neither (−inf + −inf = −inf): the
    // rule's "NaN over a number" cannot fire, and it is `c > best`.
    let dl = b.add(cur_off, i0);
    let dl = b.add(dl, lane);
    let dlp = b.shared_elem(&sh.delta, dl);
    let dv = b.ld_shared(dlp, 0);
    let d_bad = b.setp(Cmp::Gtu, dv, f32::MAX);
    let any_bad = b.vote(false, d_bad, u32::MAX);
    let d_ok = b.pnot(any_bad);
    let plain = b.pand(d_ok, pr.a_ok);
    // The part's scan: predecessors i0 .. i0 + 32, ascending.
    let best = b.mov(0f32);
    let arg = b.mov(0u32);
    b.if_(pr.scans, |b| {
        let dbase = b.add(cur_off, i0);
        let dp = b.shared_elem(&sh.delta, dbase);
        let ak = b.mad_lo(i0, COLS, lane);
        let ap = b.shared_elem(&sh.a, ak);
        let d0 = b.ld_shared(dp, 0);
        let a0 = b.ld_shared(ap, 0);
        let c0 = b.fadd(Rounding::Rn, d0, a0);
        b.assign(best, c0);
        b.assign(arg, i0);
        // 32 predecessors, the scores four at a time (16-byte aligned:
        // both offsets are multiples of 32); past `S` the padding (score
        // `−inf`, transition 0) gives `−inf` candidates, which replace
        // nothing. `nan_free`: the plain comparison.
        let scan = |b: &mut KernelBuilder, nan_free: bool| {
            for q in 0..COLS / 4 {
                let d = b.ld_shared_v4(dp, (4 * q) as i32);
                for (u, &dv) in d.iter().enumerate() {
                    let k = 4 * q + u as u32;
                    if k == 0 {
                        continue;
                    }
                    let av = b.ld_shared(ap, (k * COLS) as i32);
                    let c = b.fadd(Rounding::Rn, dv, av);
                    let take = if nan_free {
                        b.setp(Cmp::Gt, c, best)
                    } else {
                        better(b, c, best)
                    };
                    let nb = b.selp(take, c, best);
                    let i = b.add(i0, k);
                    let na = b.selp(take, i, arg);
                    b.assign(best, nb);
                    b.assign(arg, na);
                }
            }
        };
        b.if_else(plain, |b| scan(b, true), |b| scan(b, false));
        let slot = b.mad_lo(warp, COLS, lane);
        let bp = b.shared_elem(&sh.pbest, slot);
        b.st_shared(bp, 0, best);
        let ip = b.shared_elem(&sh.parg, slot);
        b.st_shared(ip, 0, arg);
    });
    b.bar_sync();
    // Warp 0: the partials in ascending order, the emission, the stores.
    b.if_(pr.folds, |b| {
        let bp = b.shared_elem(&sh.pbest, lane);
        let ip = b.shared_elem(&sh.parg, lane);
        let b0 = b.ld_shared(bp, 0);
        let a0 = b.ld_shared(ip, 0);
        b.assign(best, b0);
        b.assign(arg, a0);
        for w in 1..WARPS {
            // part w exists when S > 32·w (the same in every lane)
            let present = b.setp(Cmp::Gt, p.s, w * COLS);
            b.if_(present, |b| {
                let c = b.ld_shared(bp, (w * COLS) as i32);
                let i = b.ld_shared(ip, (w * COLS) as i32);
                let take = better(b, c, best);
                let nb = b.selp(take, c, best);
                let na = b.selp(take, i, arg);
                b.assign(best, nb);
                b.assign(arg, na);
            });
        }
        let d = b.fadd(Rounding::Rn, best, e);
        let rp = b.offset64(seq_psi, row);
        let pp = b.offset(rp, j);
        b.st_global(pp, 0, arg);
        let nj = b.add(next_off, j);
        let q = b.shared_elem(&sh.delta, nj);
        for r in 0..CLUSTER {
            let qr = b.mapa(q, r);
            b.st_cluster(qr, 0, d);
        }
    });
    // Publishes the scores (and the backpointers) to the cluster; every
    // thread is past this step's reads of `delta` and the partials.
    cluster_barrier(b);
}

/// A cluster barrier (release arrive, acquire wait), then the CTA's
/// `bar.sync`. The cluster barrier alone orders the CTA's own shared
/// accesses too (PTX ISA, "barrier.cluster": its arrive releases and its
/// wait acquires at cluster scope), and the simulator's race check now
/// sees that (`sim::interp::cluster`, *Order within a CTA*: the kernel's
/// simulator tests pass without the `bar.sync`); the `bar.sync`, a few
/// SASS a step, stays until a GPU run has checked the PTX without it (the
/// HMM cluster kernels pair them the same way).
fn cluster_barrier(b: &mut KernelBuilder) {
    b.cluster_sync();
    b.bar_sync();
}
