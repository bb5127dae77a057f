//! The backward recursion across a thread-block cluster (sm_90+):
//! `hmm_backward_cluster<n>_cap<c>`, the twin of `ptx/cluster.rs`'s
//! forward. CTA `r` owns the states `[r·S16/n, (r+1)·S16/n)` as columns
//! `j` (its `R_t[j]`, `Q_j`) and as rows `i` (its `s_i`, `u_i`, `β̂_t[i]`)
//! and keeps its slice of `Ãᵀ` (packed by quads of `i`) in dynamic shared
//! memory. Per step: `R_t = r ⊖ M'` and `Q = pexp(R_t)` of the CTA's
//! states into every CTA's weight buffer (a cluster barrier); the linear
//! sums of its rows (the contract's chains), `L_i` (the fallback reads
//! `R_t` of every state from global memory), `u_i`; the maximum `K_t` and
//! whether any state fell back, reduced over the cluster (a second
//! barrier); `β̂_t = u ⊖ K_t` and the next step's `r` of its states and
//! their maximum `M'`, reduced over the cluster (a third). Every CTA keeps
//! the normalizer sums; rank 0 stores `D_t` and the fallback flags. The
//! same arguments and bits as `hmm_backward_cap<c>`.

use super::cluster::{
    Ex, FwdSmem, Slots, chain_slot, cluster_barrier, cluster_pmax, cta_barrier,
    forward_cluster_name, idle_warp, lin_local, lin_slice, load_slice, multi_warp,
};
use super::cols::{
    cluster_builder, fixed_columns, pairs, per_thread, prefetch_emissions, prep_cols, regs,
};
use super::pair::{self as pp, DNorm, DP, Red, assign, padd, pexp, pmax2, pshift, psub};
use super::{
    BackwardArgs, BackwardRegs, PREP_AMAX, PREP_DROW_H, PREP_DROW_L, PREP_ROWMAX, WARPS,
    dead_back_state, ld_pair, st_pair, state_log, store_norm,
};
use crate::dsl::types::{F32, Reg, U32};
use crate::dsl::{Cmp, KernelBuilder, PtxModule, SharedArray};
use crate::error::Result;
use crate::target::Sm;

/// The entry name of the cluster backward for `n` CTAs and `S ≤ cap`.
pub fn backward_cluster_name(n: u32, cap: u32) -> String {
    forward_cluster_name(n, cap).replace("forward", "backward")
}

/// `f(b, jl, j)` for this thread's share of every one of the CTA's
/// states `j = c0 + jl` (padding included).
fn own_all(b: &mut KernelBuilder, ex: &Ex, mut f: impl FnMut(&mut KernelBuilder, Reg<U32>)) {
    let tid = b.tid_x();
    let nt = b.ntid_x();
    let c0 = ex.c0;
    b.for_range(tid, ex.ncol, nt, |b, jl| {
        let j = b.add(c0, jl);
        f(b, j);
    });
}

/// The backward pass across a cluster of `n` CTAs: the arguments of
/// `hmm_backward_cap<cap>`, launched with `batch · n` CTAs and
/// [`super::cluster_smem_bytes`] of dynamic shared memory.
pub fn generate_backward_cluster(sm: Sm, cap: u32, n: u32) -> Result<PtxModule> {
    let mut b = cluster_builder(&backward_cluster_name(n, cap), sm, cap, n);
    let p = b.params::<BackwardArgs>();
    let qbuf = b.shared_array::<F32>("qw", cap, 16);
    let part = b.shared_array::<F32>("part", 4 * (cap / n).max(4), 16);
    let red_m = Red::new(&mut b, "redm", WARPS);
    let red_k = Red::new(&mut b, "redk", WARPS);
    let mh = b.shared_array::<F32>("mh", n, 4);
    let ml = b.shared_array::<F32>("ml", n, 4);
    let (kh, kl) = (
        b.shared_array::<F32>("kh", n, 4),
        b.shared_array::<F32>("kl", n, 4),
    );
    let kf = b.shared_array::<U32>("kf", n, 4);
    let sh = BwdSmem {
        fwd: FwdSmem {
            pbuf: qbuf,
            part,
            red: red_m,
            red0: red_k,
            mh,
            ml,
            mat: b.dynamic_shared::<F32>("atil", 16),
        },
        kh,
        kl,
        kf,
    };
    backward_body(&mut b, &p, sh, (n, cap), |b| b.clusterid_x());
    // No CTA leaves while a peer may still store into its shared memory.
    b.cluster_sync();
    b.finish()
}

/// The shared arrays of the cluster backward: the forward's (the weights
/// `Q`, the partial sums, the reductions of `M'` and `K_t`, the slots of
/// `M'`, the slice of `Ãᵀ`) and the slots of `K_t` and its flag.
pub(super) struct BwdSmem {
    pub(super) fwd: FwdSmem,
    pub(super) kh: SharedArray<F32>,
    pub(super) kl: SharedArray<F32>,
    pub(super) kf: SharedArray<U32>,
}

/// The backward recursion of the sequence `seq(b)` across this CTA's
/// cluster of `n` (everything of [`generate_backward_cluster`] but the
/// declarations and the closing cluster barrier, for `cap`); `Mb_t` is
/// read from `p.mb`.
///
/// A thread's states are fixed ([`super::cols`]): their `rowmax` and
/// `drow` are loaded once, before the steps; the emissions `log b_{t−1}`
/// of its states and `Mb_{t−1}` (in the threads that hold states, thread
/// 0 among them, which keeps `Mb_t` for the next step's normalizer) are
/// loaded during step `t` (when `t − 1 > 0`) into loop-carried registers;
/// the next step's `r` of its states and `u` stay in registers (nothing
/// reads them from memory: `R_t = r ⊖ M'` and `β̂_t = u ⊖ K_t` are
/// stored over them, so they are not stored).
pub(super) fn backward_body(
    b: &mut KernelBuilder,
    p: &BackwardRegs,
    sh: BwdSmem,
    (n, cap): (u32, u32),
    seq: impl FnOnce(&mut KernelBuilder) -> Reg<U32>,
) {
    let BwdSmem {
        fwd:
            FwdSmem {
                pbuf: qbuf,
                part,
                red: red_m,
                red0: red_k,
                mh,
                ml,
                mat,
            },
        kh,
        kl,
        kf,
    } = sh;
    let kslots = Slots {
        h: &kh,
        l: &kl,
        f: Some(&kf),
    };
    let seq = seq(b);
    let rank = b.cluster_ctarank();
    let tid = b.tid_x();
    let nt = b.ntid_x();
    let lp = b.offset(p.lengths, seq);
    let len = b.ld_global(lp, 0);
    let ts = b.mul_lo(p.t, p.s);
    let base = b.mul_wide_u32(seq, ts);
    let ncol = b.shr(p.sp, n.trailing_zeros());
    let c0 = b.mul_lo(rank, ncol);
    let ex = Ex {
        n,
        pbuf: qbuf,
        mh,
        ml,
        rank,
        c0,
        ncol,
        per: per_thread(cap, n),
        split: true,
        one_warp: super::roles::one_warp(cap, n),
    };
    let mslots = Slots {
        h: &ex.mh,
        l: &ex.ml,
        f: None,
    };
    let seq_b = b.offset64(p.log_b, base);
    let seq_bh = b.offset64(p.beta, base);
    let seq_bl = b.offset64(p.beta_lo, base);
    let seq_rh = b.offset64(p.rh, base);
    let seq_rl = b.offset64(p.rl, base);
    let tsp = b.mul_lo(p.t, p.sp);
    let wbase = b.mul_wide_u32(seq, tsp);
    let seq_w = b.offset64(p.w, wbase);
    let steps_base = b.mul_wide_u32(seq, p.t);
    let mbrow = b.offset64(p.mb, steps_base);
    let flags = b.offset64(p.flags, steps_base);
    let t2 = b.shl(p.t, 1u32);
    let dn_base = b.mul_wide_u32(seq, t2);
    let dn = b.offset64(p.dnorm, dn_base);
    let is_r0 = b.setp(Cmp::Eq, rank, 0u32);
    let t0 = b.setp(Cmp::Eq, tid, 0u32);
    let lead = b.pand(is_r0, t0);
    let nonempty = b.setp(Cmp::Ne, len, 0u32);
    b.if_(nonempty, |b| {
        // The slice of Ãᵀ (rows i of this CTA, contiguous when packed).
        let from = b.mul_lo(ex.c0, p.sp);
        let src = b.offset(p.a_til, from);
        load_slice(b, &ex, &mat, src, p.sp);
        let zfrom = b.add(p.s, tid);
        b.for_range(zfrom, p.sp, nt, |b, k| {
            let sp4 = b.shr(p.sp, 2u32);
            let kc = chain_slot(b, k, sp4);
            let q = b.shared_elem(&ex.pbuf, kc);
            b.st_shared(q, 0, 0f32);
        });
        // Every CTA has started before any remote store.
        cluster_barrier(b, &ex);
        let amax_at = b.mul_lo(p.sp, PREP_AMAX);
        let amax_p = b.offset(p.prep, amax_at);
        let amax = b.ld_global(amax_p, 0);
        let norm = DNorm::new(b);
        let last = b.sub(len, 1u32);
        let zero = pp::constant(b, 0.0, 0.0);
        let dprev = pp::constant(b, 0.0, 0.0);
        b.if_(is_r0, |b| store_norm(b, tid, dn, last, dprev));
        let lrow = b.mul_lo(last, p.s);
        let mbl_p = b.offset(mbrow, last);
        let mbl = b.ld_global(mbl_p, 0);
        let has_steps = b.setp(Cmp::Gt, last, 0u32);
        let rrow0 = b.sub(lrow, p.s);
        let rm = pp::constant(b, f32::NAN, 0.0);
        // The states' loop-invariant prep; their r (the step's R row
        // before `⊖ M'`) and u; the step's emissions and Mb (step
        // L−2's, when it has one: `L − 2 > 0`), and Mb_{t+1} (`Mb_{L−1}`).
        let rowmax = prep_cols(b, &ex, p.prep, (p.s, p.sp), PREP_ROWMAX);
        let drh = prep_cols(b, &ex, p.prep, (p.s, p.sp), PREP_DROW_H);
        let drl = prep_cols(b, &ex, p.prep, (p.s, p.sp), PREP_DROW_L);
        let drow: Vec<DP> = drh.into_iter().zip(drl).map(|(h, l)| DP { h, l }).collect();
        let rs = pairs(b, ex.per);
        let us = pairs(b, ex.per);
        let es = regs(b, ex.per);
        let holds = b.setp(Cmp::Lt, tid, ex.ncol);
        let mbn = b.mov(mbl);
        let mbt = b.mov(0f32);
        let ahead = b.setp(Cmp::Gt, last, 1u32);
        let first = b.pand(ahead, holds);
        b.if_(first, |b| {
            let mbp = b.offset(mbrow, last);
            let v = b.ld_global(mbp, -1);
            b.assign(mbt, v);
        });
        prefetch_emissions(b, &ex, (seq_b, rrow0, p.s), ahead, &es);
        fixed_columns(b, &ex, Some(p.s), |b, c, _, j| {
            let k = b.add(lrow, j);
            st_pair(b, seq_bh, seq_bl, k, zero);
            b.if_(has_steps, |b| {
                let ep = b.offset(seq_b, k);
                let e = b.ld_global(ep, 0);
                let e = pshift(b, e, mbl);
                let r = padd(b, e, zero);
                assign(b, rs[c], r);
                let nm = pmax2(b, rm, r);
                assign(b, rm, nm);
            });
        });
        b.if_(has_steps, |b| {
            let (m0, _, _) = cluster_pmax(b, &ex, &red_m, &mslots, rm, None, false);
            let mprime = DP {
                h: b.mov(m0.h),
                l: b.mov(m0.l),
            };
            let dead = b.mov(0u32);
            let tt = b.mov(last);
            // The warps past those that hold states take `idle_back_step`.

            b.while_(
                |b| b.setp(Cmp::Gt, tt, 0u32),
                |b| {
                    let t = b.sub(tt, 1u32);
                    b.assign(tt, t);
                    // (`row`, `wrow` in the branches that use them, not
                    // the idle warps.)
                    let rows = |b: &mut KernelBuilder| (b.mul_lo(t, p.s), b.mul_lo(t, p.sp));
                    let is_dead = b.setp(Cmp::Ne, dead, 0u32);
                    b.if_else(
                        is_dead,
                        |b| {
                            let (row, wrow) = rows(b);
                            own_all(b, &ex, |b, i| {
                                let seq = [seq_bh, seq_bl, seq_rh, seq_rl, seq_w];
                                dead_back_state(b, p.s, (row, wrow), i, seq);
                            });
                            b.if_(is_r0, |b| store_norm(b, tid, dn, t, dprev));
                            b.if_(lead, |b| {
                                let fp = b.offset(flags, t);
                                b.st_global(fp, 0, 1u32);
                            });
                        },
                        |b| {
                            let idle = idle_warp(b, &ex);
                            b.if_else(
                                idle,
                                |b| {
                                    // `dead` in the `M'` reduction's flags
                                    // (it carries none: they are free).
                                    let d = idle_back_step(b, &ex, &red_m.f);
                                    b.assign(dead, d);
                                },
                                |b| {
                                    let (row, wrow) = rows(b);
                                    // R_t = r ⊖ M', Q = pexp(R) into every CTA.
                                    fixed_columns(b, &ex, Some(p.s), |b, c, _, j| {
                                        let k = b.add(row, j);
                                        let rr = psub(b, rs[c], mprime);
                                        st_pair(b, seq_rh, seq_rl, k, rr);
                                        let q = pexp(b, rr);
                                        let sp4 = b.shr(p.sp, 2u32);
                                        let jc = chain_slot(b, j, sp4);
                                        let qp = b.shared_elem(&ex.pbuf, jc);
                                        for r in 0..ex.n {
                                            let qr = b.mapa(qp, r);
                                            b.st_cluster(qr, 0, q);
                                        }
                                    });
                                    cluster_barrier(b, &ex);
                                    lin_slice(b, &ex, &mat, &part, p.sp);
                                    cta_barrier(b, &ex);
                                    let um = pp::constant(b, f32::NAN, 0.0);
                                    let fell_any = b.mov(0u32);
                                    fixed_columns(b, &ex, None, |b, c, il, i| {
                                        let kw = b.add(wrow, i);
                                        let wp = b.offset(seq_w, kw);
                                        let inside = b.setp(Cmp::Lt, i, p.s);
                                        b.if_else(
                                            inside,
                                            |b| {
                                                let si = lin_local(b, &part, il, ex.ncol);
                                                let rowmax = rowmax[c];
                                                let arow = b.mul_lo(i, p.s);
                                                let term = |b: &mut KernelBuilder, j: Reg<U32>| {
                                                    let ai = b.add(arow, j);
                                                    let ap = b.offset(p.log_a, ai);
                                                    let la = b.ld_global(ap, 0);
                                                    let lr = pshift(b, la, rowmax);
                                                    let k = b.add(row, j);
                                                    let r = ld_pair(b, seq_rh, seq_rl, k);
                                                    padd(b, lr, r)
                                                };
                                                let (l, w, fell) = state_log(b, si, p.s, &term);
                                                b.st_global(wp, 0, w);
                                                let u = padd(b, l, drow[c]);
                                                assign(b, us[c], u);
                                                let nm = pmax2(b, um, u);
                                                assign(b, um, nm);
                                                let f: Reg<U32> = b.selp(fell, 1u32, 0u32);
                                                let nf = b.or(fell_any, f);
                                                b.assign(fell_any, nf);
                                            },
                                            |b| b.st_global(wp, 0, 0f32),
                                        );
                                    });
                                    let fell = b.setp(Cmp::Ne, fell_any, 0u32);
                                    let (k, any, dead_now) =
                                        cluster_pmax(b, &ex, &red_k, &kslots, um, Some(fell), true);
                                    let any = any.expect("flag requested");
                                    // For the idle warps (`idle_back_step`),
                                    // read after the `M'` reduction's barrier.
                                    b.if_(t0, |b| {
                                        let dv: Reg<U32> = b.selp(dead_now, 1u32, 0u32);
                                        let p = b.shared_elem(&red_m.f, 0u32);
                                        b.st_shared(p, 0, dv);
                                    });
                                    let t_pos = b.setp(Cmp::Gt, t, 0u32);
                                    let live = b.pnot(dead_now);
                                    let more = b.pand(t_pos, live);
                                    let prow = b.sub(row, p.s);
                                    // Step t − 1 has a next r (t − 1 > 0).
                                    let ahead = b.setp(Cmp::Gt, t, 1u32);
                                    let rm = pp::constant(b, f32::NAN, 0.0);
                                    fixed_columns(b, &ex, Some(p.s), |b, c, _, i| {
                                        let k_ = b.add(row, i);
                                        let bh = psub(b, us[c], k);
                                        st_pair(b, seq_bh, seq_bl, k_, bh);
                                        b.if_(more, |b| {
                                            let e = pshift(b, es[c], mbt);
                                            let r = padd(b, e, bh);
                                            assign(b, rs[c], r);
                                            let nm = pmax2(b, rm, r);
                                            assign(b, rm, nm);
                                        });
                                        b.if_(ahead, |b| {
                                            let kp = b.add(prow, i);
                                            let ep = b.offset(seq_b, kp);
                                            let e = b.ld_global(ep, 0);
                                            b.assign(es[c], e);
                                        });
                                    });
                                    b.if_(t0, |b| {
                                        let steps = [mprime.h, mprime.l, k.h, k.l];
                                        let d = norm.add_step(b, &[mbn], Some(amax), &steps);
                                        assign(b, dprev, d);
                                    });
                                    // Mb_t for step t − 1's normalizer, Mb_{t−1}
                                    // for its r.
                                    b.if_(holds, |b| {
                                        b.assign(mbn, mbt);
                                        b.if_(ahead, |b| {
                                            let mbp = b.offset(mbrow, t);
                                            let v = b.ld_global(mbp, -1);
                                            b.assign(mbt, v);
                                        });
                                    });
                                    b.if_(is_r0, |b| store_norm(b, tid, dn, t, dprev));
                                    b.if_(lead, |b| {
                                        let f: Reg<U32> = b.selp(any, 1u32, 0u32);
                                        let fp = b.offset(flags, t);
                                        b.st_global(fp, 0, f);
                                    });
                                    let dv: Reg<U32> = b.selp(dead_now, 1u32, 0u32);
                                    b.assign(dead, dv);
                                    // Every step (its barrier is the idle
                                    // warps' `dead`); `M'` only when the
                                    // recursion goes on (`rm` is the NaN pair
                                    // otherwise, the maximum unused).
                                    let (m, _, _) =
                                        cluster_pmax(b, &ex, &red_m, &mslots, rm, None, true);
                                    b.if_(more, |b| assign(b, mprime, m));
                                },
                            );
                        },
                    );
                },
            );
        });
    });
}

/// A live backward step in a warp that holds no state: the barriers of
/// the `Q` exchange, [`lin_slice`]'s end, the `K_t` reduction
/// ([`cluster_pmax`]: its CTA reduction where `multi`, its cluster
/// barrier) and the next `M'` reduction's (the busy warps take it every
/// step), in the busy warps' order; then the step's `dead` test of `K_t`
/// as thread 0 left it in `dflag` between the last two (the next store
/// waits for this warp at the next step's first barrier); see
/// [`super::cluster`]'s `idle_step`.
fn idle_back_step(b: &mut KernelBuilder, ex: &Ex, dflag: &SharedArray<U32>) -> Reg<U32> {
    let multi = multi_warp(b, ex);
    cluster_barrier(b, ex);
    cta_barrier(b, ex);
    for _ in 0..2 {
        if let Some(multi) = multi {
            b.if_(multi, |b| cta_barrier(b, ex));
        }
        cluster_barrier(b, ex);
    }
    let p = b.shared_elem(dflag, 0u32);
    b.ld_shared(p, 0)
}
