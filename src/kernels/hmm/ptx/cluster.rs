//! The forward recursion across a thread-block cluster (sm_90+):
//! `hmm_forward_cluster<n>_cap<c>`, a cluster of `n` CTAs per sequence.
//!
//! CTA `r` of a cluster owns the columns `[r·S16/n, (r+1)·S16/n)` (whole
//! quads: `n` divides `S16/4`, see [`cluster_for`]) and copies their
//! slice of `Â` (packed by quads, so the slice is one contiguous run of
//! `S16²/n` floats) into its dynamic shared memory once; the recursion
//! never reads the matrix from global memory again. Per step each CTA
//! computes its columns' linear sums with the contract's four chains (one
//! thread per (chain, quad of columns), `k` ascending, then
//! `(c0 + c1) + (c2 + c3)`: the bits of the one-CTA kernel), `L_j` and
//! `X_j`; the pair maximum `M_t` is reduced in each CTA, then every CTA
//! stores its partial maximum into every CTA's slot (`st.shared::cluster`)
//! and, after a cluster barrier, each reduces the `n` partials itself
//! (`pmax` is order-free by contract); the normalized weights
//! `pexp(â_t[j])` of a CTA's columns are stored into every CTA's weight
//! buffer, and a second cluster barrier closes the step. The fallback
//! reads the previous row's pairs of every column from global memory
//! (written before that barrier, whose release/acquire orders global
//! memory at cluster scope too). Every CTA keeps the normalizer sums
//! (the same operations on the same values, so the same bits); rank 0
//! stores `C_t` and `ll`. The emission maxima are split across the
//! cluster's warps, published by the first cluster barrier.
//!
//! Launch: the kernel's `.reqnctapercluster n, 1, 1` compiles the shape
//! in, so the classic `cuLaunchKernel` launches it in clusters (CUDA C++
//! Programming Guide, "Thread Block Clusters": "a thread block cluster
//! can be enabled in a kernel either using a compile-time kernel
//! attribute using `__cluster_dims__(X,Y,Z)` or using the CUDA kernel
//! launch API `cudaLaunchKernelEx`", and with the compile-time form "the
//! kernel can be launched using the classical `<<< , >>>`"); the grid,
//! `batch · n` CTAs, is a multiple of the cluster by construction.

use super::cols::{
    cluster_builder, fixed_columns, forward_prep, pairs, per_thread, prefetch_emissions, regs,
};
use super::fwd_state::{FwdCol, FwdIn};
use super::pair::{self as pp, DNorm, DP, Red, assign, pexp, pmax2, psub};
use super::roles::{active_warps, one_warp, own_col};
pub(super) use super::roles::{cta_barrier, idle_warp, multi_warp};
use super::{
    ForwardArgs, ForwardRegs, FwdStep, SPLIT_MAX, THREADS, WARPS, forward_state, forward_state0,
    input_maxima, st_pair, store_norm,
};
use crate::dsl::types::{F32, Pred, Reg, U32};
use crate::dsl::{Cmp, KernelBuilder, PtxModule, Rounding, SharedArray, ShflMode};
use crate::error::Result;
use crate::target::{Feature, Sm};

/// The cluster sizes a launch may choose from (portable: at most 8).
pub const CLUSTER_SIZES: [u32; 3] = [8, 4, 2];

/// Static shared bytes of the cluster kernels (forward and backward), at
/// least: the weights (`cap`), the chains' partial sums (`4·cap/n`), the
/// reduction slots (two `Red`s, the partial maxima and flags: `5·n` at
/// most) and 32 bytes for the arrays' alignment (ptxas reports 1792 bytes
/// for the forward at `n = 8`, cap 256, and 6400 for cap 1024, where this
/// gives 1920 and 6528).
pub(super) fn static_bytes(cap: u32, n: u32) -> u64 {
    4 * (u64::from(cap) + 4 * u64::from(cap / n) + 6 * u64::from(WARPS) + 5 * u64::from(n) + 8)
}

/// Dynamic shared bytes of the cluster forward for `sp` padded states
/// over `n` CTAs: the CTA's slice of `Â`, `sp²/n` floats.
pub fn cluster_smem_bytes(sp: usize, n: u32) -> u64 {
    4 * (sp as u64) * (sp as u64) / u64::from(n)
}

/// The fewest padded states the launch runs across a cluster: below, the
/// matrix (at most 12 KiB) stays in L1 and a step's chains are at most 12
/// deep, so two cluster barriers a step would cost more than they save.
pub const CLUSTER_MIN_STATES: usize = 64;

/// The cluster size the forward takes on `sm` for `s` states (padded
/// `sp`, capacity `cap`): the largest of [`CLUSTER_SIZES`] that divides
/// the `sp/4` quads and whose slice fits the SM's opt-in shared memory
/// beside the static arrays; `None` (the one-CTA kernel) below sm_90,
/// below [`CLUSTER_MIN_STATES`], for a capacity above the split
/// variants', or when no slice fits.
pub fn cluster_for(sm: Sm, s: usize, sp: usize, cap: u32) -> Option<u32> {
    if !sm.supports(Feature::Cluster) || cap > SPLIT_MAX || s == 0 || sp < CLUSTER_MIN_STATES {
        return None;
    }
    let quads = sp / 4;
    let limit = u64::from(sm.info().max_smem_per_block_optin);
    CLUSTER_SIZES.into_iter().find(|&n| {
        quads.is_multiple_of(n as usize)
            && cluster_smem_bytes(sp, n) + static_bytes(cap, n) <= limit
    })
}

/// The CTAs of a cluster kernel (`cap`, `n`) that ptxas is asked to keep
/// resident on an SM of `sm` (`.minnctapersm`, which bounds the registers
/// a thread): as many as the SM's shared memory holds at `S = cap`
/// (the slice, the static arrays and the CTA's reserved bytes) and its
/// thread slots allow, at most 4 (64 registers a thread: ptxas fits both
/// recursions at cap 256 without spilling, where they took 105 and 117
/// and so two CTAs an SM), at least 1. The recursion's latency is hidden
/// by the warps an SM holds, so the occupancy is the lever.
pub(super) fn resident_ctas(sm: Sm, cap: u32, n: u32) -> u32 {
    let i = sm.info();
    let per_cta = cluster_smem_bytes(cap as usize, n)
        + static_bytes(cap, n)
        + u64::from(i.reserved_smem_per_cta);
    let by_smem = (u64::from(i.smem_per_sm) / per_cta).min(4) as u32;
    by_smem
        .min(i.max_threads_per_sm / THREADS)
        .min(i.max_ctas_per_sm)
        .max(1)
}

/// The entry name of the cluster forward for `n` CTAs and `S ≤ cap`.
pub fn forward_cluster_name(n: u32, cap: u32) -> String {
    format!("hmm_forward_cluster{n}_cap{cap}")
}

/// The weights, the partial maxima's slots and the cluster's shape.
pub(super) struct Ex {
    pub(super) n: u32,
    pub(super) pbuf: SharedArray<F32>,
    pub(super) mh: SharedArray<F32>,
    pub(super) ml: SharedArray<F32>,
    pub(super) rank: Reg<U32>,
    /// First column of this CTA, its column count.
    pub(super) c0: Reg<U32>,
    pub(super) ncol: Reg<U32>,
    /// The most columns a thread owns ([`super::cols::per_thread`]).
    pub(super) per: usize,
    /// The warps that hold no column run a step of their own that meets
    /// the others' barriers only ([`idle_step`]), so every CTA barrier of
    /// a step is the unaligned `barrier.sync` ([`cta_barrier`]).
    pub(super) split: bool,
    /// Warp 0 holds every column of the CTA ([`super::roles::one_warp`]):
    /// the warps' roles are fixed when the kernel is generated.
    pub(super) one_warp: bool,
}

/// The forward pass across a cluster of `n` CTAs (`n` in
/// [`CLUSTER_SIZES`], `cap` ≤ 1024): the same arguments and the same
/// bits as `hmm_forward_cap<cap>`, launched with `batch · n` CTAs and
/// [`cluster_smem_bytes`] of dynamic shared memory.
pub fn generate_forward_cluster(sm: Sm, cap: u32, n: u32) -> Result<PtxModule> {
    let mut b = cluster_builder(&forward_cluster_name(n, cap), sm, cap, n);
    let p = b.params::<ForwardArgs>();
    let sh = FwdSmem {
        pbuf: b.shared_array::<F32>("pw", cap, 16),
        part: b.shared_array::<F32>("part", 4 * (cap / n).max(4), 16),
        red: Red::new(&mut b, "red", WARPS),
        red0: Red::new(&mut b, "red0", WARPS),
        mh: b.shared_array::<F32>("mh", n, 4),
        ml: b.shared_array::<F32>("ml", n, 4),
        mat: b.dynamic_shared::<F32>("ahat", 16),
    };
    forward_body(&mut b, &p, sh, (n, cap), |b| b.clusterid_x(), true);
    // No CTA leaves while a peer may still store into its shared memory.
    b.cluster_sync();
    b.finish()
}

/// The shared arrays of the cluster forward: the weights, the chains'
/// partial sums, two CTA reductions, the partial maxima's slots and the
/// slice of `Â` (dynamic).
pub(super) struct FwdSmem {
    pub(super) pbuf: SharedArray<F32>,
    pub(super) part: SharedArray<F32>,
    pub(super) red: Red,
    pub(super) red0: Red,
    pub(super) mh: SharedArray<F32>,
    pub(super) ml: SharedArray<F32>,
    pub(super) mat: SharedArray<F32>,
}

/// The forward recursion of the sequence `seq(b)` across this CTA's
/// cluster of `n` (everything of [`generate_forward_cluster`] for `cap`
/// but the declarations and the closing cluster barrier). With `maxima`
/// the cluster computes the emission maxima `Mb_t` into `p.mb` first;
/// without, it reads them from there (written by an earlier launch).
///
/// A thread's columns are fixed ([`super::cols`]): their `colmax` and
/// `dcol` are loaded once, before the steps; the emissions `log b_{t+1}`
/// of its columns and `Mb_{t+1}` (in the threads that hold columns,
/// thread 0 among them, which keeps the normalizer) are loaded during
/// step `t` (when `t + 1 < len`) into loop-carried registers; and the
/// pairs `X_j` stay in registers for [`exchange`], which stores `â`
/// (nothing reads `X` from memory, so it is not stored).
pub(super) fn forward_body(
    b: &mut KernelBuilder,
    p: &ForwardRegs,
    sh: FwdSmem,
    (n, cap): (u32, u32),
    seq: impl FnOnce(&mut KernelBuilder) -> Reg<U32>,
    maxima: bool,
) {
    let FwdSmem {
        pbuf,
        part,
        red,
        red0,
        mh,
        ml,
        mat,
    } = sh;
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
        pbuf,
        mh,
        ml,
        rank,
        c0,
        ncol,
        per: per_thread(cap, n),
        split: true,
        one_warp: one_warp(cap, n),
    };
    let seq_b = b.offset64(p.log_b, base);
    let seq_ah = b.offset64(p.alpha, base);
    let seq_al = b.offset64(p.alpha_lo, base);
    let steps_base = b.mul_wide_u32(seq, p.t);
    let mbrow = b.offset64(p.mb, steps_base);
    let t2 = b.shl(p.t, 1u32);
    let cn_base = b.mul_wide_u32(seq, t2);
    let cn = b.offset64(p.cnorm, cn_base);
    let is_r0 = b.setp(Cmp::Eq, rank, 0u32);
    let t0 = b.setp(Cmp::Eq, tid, 0u32);
    let lead = b.pand(is_r0, t0);
    let empty = b.setp(Cmp::Eq, len, 0u32);
    let write_zero = b.pand(empty, lead);
    b.if_(write_zero, |b| {
        let dst = b.offset(p.ll, seq);
        b.st_global(dst, 0, 0f32);
    });
    let nonempty = b.pnot(empty);
    b.if_(nonempty, |b| {
        // The slice of Â: quads [rank·ncol/4, …), contiguous in the
        // packed layout ((q·sp + k)·4 + c), `ncol·sp` floats, each quad's
        // rows put in chain order.
        let from = b.mul_lo(ex.c0, p.sp);
        let src = b.offset(p.a_hat, from);
        load_slice(b, &ex, &mat, src, p.sp);
        // Zero padding of the weights (remote stores touch j < S only).
        let zfrom = b.add(p.s, tid);
        b.for_range(zfrom, p.sp, nt, |b, k| {
            let sp4 = b.shr(p.sp, 2u32);
            let kc = chain_slot(b, k, sp4);
            let q = b.shared_elem(&ex.pbuf, kc);
            b.st_shared(q, 0, 0f32);
        });
        // Emission maxima: a warp per position over the cluster's warps.
        if maxima {
            let lane = b.and(tid, 31u32);
            let warp = b.shr(tid, 5u32);
            let gw = b.mad_lo(rank, WARPS, warp);
            b.for_range(gw, len, n * WARPS, |b, tt| {
                let m = row_max(b, seq_b, tt, lane, p.s);
                let lead = b.setp(Cmp::Eq, lane, 0u32);
                b.if_(lead, |b| {
                    let dst = b.offset(mbrow, tt);
                    b.st_global(dst, 0, m);
                });
            });
        }
        // Publishes the maxima and the slice; every CTA of the cluster
        // has started before any remote store.
        b.cluster_sync();
        let (mpi, amax) = input_maxima(b, p, tid, nt, &red0);
        let norm = DNorm::new(b);
        // The columns' loop-invariant prep, their pairs X, the next
        // step's emissions and Mb (step 1's, when there is one).
        let (colmax, dcol) = forward_prep(b, &ex, p.prep, (p.s, p.sp));
        let xs = pairs(b, ex.per);
        let es = regs(b, ex.per);
        let mbt = b.mov(0f32);
        let holds = b.setp(Cmp::Lt, tid, ex.ncol);
        let one = b.setp(Cmp::Gt, len, 1u32);
        let first = b.pand(one, holds);
        b.if_(first, |b| {
            let v = b.ld_global(mbrow, 1);
            b.assign(mbt, v);
        });
        prefetch_emissions(b, &ex, (seq_b, p.s, p.s), one, &es);
        // Step 0.
        let mb0 = b.ld_global(mbrow, 0);
        let xm = pp::constant(b, f32::NAN, 0.0);
        fixed_columns(b, &ex, Some(p.s), |b, c, _, j| {
            let x = forward_state0(b, p, seq_b, None, (mpi, mb0), j, xm);
            assign(b, xs[c], x);
        });
        let row0 = b.mov(0u32);
        let (m, dead0) = exchange(
            b,
            &ex,
            &red,
            xm,
            (seq_ah, seq_al),
            row0,
            &xs,
            (p.s, p.sp),
            None,
        );
        let cprev = pp::constant(b, 0.0, 0.0);
        b.if_(t0, |b| {
            let cv = norm.add_step(b, &[mpi, mb0], None, &[m.h, m.l]);
            assign(b, cprev, cv);
        });
        b.if_(is_r0, |b| store_norm(b, tid, cn, row0, cprev));
        let dead: Reg<U32> = b.selp(dead0, 1u32, 0u32);
        let zero_last = b.mov(0u32);
        // The warps past those that hold columns take `idle_step`.

        b.for_range(1u32, len, 1u32, |b, tt| {
            let is_dead = b.setp(Cmp::Ne, dead, 0u32);
            // (`row` in the branches that use it, not the idle warps.)
            b.if_else(
                is_dead,
                |b| {
                    let row = b.mul_lo(tt, p.s);
                    own_columns(b, &ex, p.s, |b, _, j| {
                        let k = b.add(row, j);
                        let ninf = pp::constant(b, f32::NEG_INFINITY, 0.0);
                        st_pair(b, seq_ah, seq_al, k, ninf);
                    });
                    b.if_(is_r0, |b| store_norm(b, tid, cn, tt, cprev));
                    b.assign(zero_last, 1u32);
                },
                |b| {
                    let idle = idle_warp(b, &ex);
                    b.if_else(
                        idle,
                        |b| {
                            // `dead` in `red`'s flags (the forward's maximum
                            // carries no flag: they are free).
                            let d = idle_step(b, &ex, &red.f);
                            b.assign(dead, d);
                        },
                        |b| {
                            lin_slice(b, &ex, &mat, &part, p.sp);
                            cta_barrier(b, &ex);
                            let row = b.mul_lo(tt, p.s);
                            let prow = b.sub(row, p.s);
                            let nrow = b.add(row, p.s);
                            let t1 = b.add(tt, 1u32);
                            let more = b.setp(Cmp::Lt, t1, len);
                            let xm = pp::constant(b, f32::NAN, 0.0);
                            fixed_columns(b, &ex, Some(p.s), |b, c, jl, j| {
                                let sj = lin_local(b, &part, jl, ex.ncol);
                                let step = FwdStep {
                                    seq_ah,
                                    seq_al,
                                    prow,
                                    mbt,
                                };
                                let col = FwdCol {
                                    colmax: colmax[c],
                                    dcol: dcol[c],
                                    e: es[c],
                                };
                                let x = forward_state(b, p, &step, FwdIn::Held(&col), sj, j, xm);
                                assign(b, xs[c], x);
                                // The next step's emission, in flight across the
                                // exchange.
                                b.if_(more, |b| {
                                    let k = b.add(nrow, j);
                                    let ep = b.offset(seq_b, k);
                                    let e = b.ld_global(ep, 0);
                                    b.assign(es[c], e);
                                });
                            });
                            let (m, d) = exchange(
                                b,
                                &ex,
                                &red,
                                xm,
                                (seq_ah, seq_al),
                                row,
                                &xs,
                                (p.s, p.sp),
                                Some(&red.f),
                            );
                            b.if_(t0, |b| {
                                let cv = norm.add_step(b, &[mbt], Some(amax), &[m.h, m.l]);
                                assign(b, cprev, cv);
                            });
                            let next = b.pand(more, holds);
                            b.if_(next, |b| {
                                let mbp = b.offset(mbrow, t1);
                                let v = b.ld_global(mbp, 0);
                                b.assign(mbt, v);
                            });
                            b.if_(is_r0, |b| store_norm(b, tid, cn, tt, cprev));
                            let dv: Reg<U32> = b.selp(d, 1u32, 0u32);
                            b.assign(dead, dv);
                        },
                    );
                },
            );
        });
        // ll (rank 0): the last row's linear weights in ascending order
        // (nested tests: `lead` kept across the steps made ptxas spill
        // it at cap 256, n = 4, sm_90's 80 registers).
        b.if_(is_r0, |b| {
            b.if_(t0, |b| ll_of_last_row(b, p, &ex, zero_last, norm, seq));
        });
    });
}

/// Rank 0's thread 0: `ll` from the last row's linear weights in ascending
/// order (zero when the sequence died, `zero_last`) and the normalizer.
fn ll_of_last_row(
    b: &mut KernelBuilder,
    p: &ForwardRegs,
    ex: &Ex,
    zero_last: Reg<U32>,
    norm: DNorm,
    seq: Reg<U32>,
) {
    let z = b.mov(0f32);
    let live = b.setp(Cmp::Eq, zero_last, 0u32);
    b.if_(live, |b| {
        let sp4 = b.shr(p.sp, 2u32);
        b.for_range(0u32, p.s, 1u32, |b, j| {
            let jc = chain_slot(b, j, sp4);
            let q = b.shared_elem(&ex.pbuf, jc);
            let x = b.ld_shared(q, 0);
            let nz = b.fadd(Rounding::Rn, z, x);
            b.assign(z, nz);
        });
    });
    let lz = crate::dsl::math::log(b, z);
    norm.steps.add(b, lz);
    let v = norm.value(b);
    let dst = b.offset(p.ll, seq);
    b.st_global(dst, 0, v.h);
}

/// The emission maximum `Mb_t` of position `tt` (`s` scores from
/// `seq_b + tt·s`) in every lane of a warp: the lanes' strided `fmax` from
/// NaN, the warp's butterfly, `+ 0` (no `−0`).
pub(super) fn row_max(
    b: &mut KernelBuilder,
    seq_b: crate::dsl::GlobalPtr<F32>,
    tt: Reg<U32>,
    lane: Reg<U32>,
    s: Reg<U32>,
) -> Reg<F32> {
    let m = b.mov(f32::NAN);
    let row = b.mul_lo(tt, s);
    b.for_range(lane, s, 32u32, |b, j| {
        let k = b.add(row, j);
        let ep = b.offset(seq_b, k);
        let e = b.ld_global(ep, 0);
        let nm = b.fmax(m, e);
        b.assign(m, nm);
    });
    let m = pp::warp_fmax(b, m);
    b.fadd(Rounding::Rn, m, 0f32)
}

/// `f(b, jl, j)` for this thread's share of the CTA's columns `j = c0 +
/// jl` below `s`.
pub(super) fn own_columns(
    b: &mut KernelBuilder,
    ex: &Ex,
    s: Reg<U32>,
    mut f: impl FnMut(&mut KernelBuilder, Reg<U32>, Reg<U32>),
) {
    let tid = b.tid_x();
    let nt = b.ntid_x();
    let c0 = ex.c0;
    b.for_range(tid, ex.ncol, nt, |b, jl| {
        let j = b.add(c0, jl);
        let inside = b.setp(Cmp::Lt, j, s);
        b.if_(inside, |b| f(b, jl, j));
    });
}

/// The step's maximum from each thread's running `xm` over the cluster,
/// then `â = X ⊖ M` for the CTA's columns (`X` of this thread's `c`-th
/// column in `xs[c]`), stored at `row` of `(hi, lo)`, and their weights
/// `pexp(â)` into every CTA's weight buffer; returns `M` (in the warps
/// that hold columns, thread 0's among them) and, in every calling
/// thread, whether `M` is `−inf`. Two cluster barriers. With `dflag` only
/// the warps that hold columns call it (the step loop; the others take
/// [`idle_step`]), and thread 0 stores that test (1 or 0) into `dflag[0]`
/// before the second barrier, for the idle warps.
#[allow(clippy::too_many_arguments)]
fn exchange(
    b: &mut KernelBuilder,
    ex: &Ex,
    red: &Red,
    xm: DP,
    (hi, lo): (crate::dsl::GlobalPtr<F32>, crate::dsl::GlobalPtr<F32>),
    row: Reg<U32>,
    xs: &[DP],
    (s, sp): (Reg<U32>, Reg<U32>),
    dflag: Option<&SharedArray<U32>>,
) -> (DP, Reg<Pred>) {
    let slots = Slots {
        h: &ex.mh,
        l: &ex.ml,
        f: None,
    };
    let (m, _, dead) = cluster_pmax(b, ex, red, &slots, xm, None, dflag.is_some());
    if let Some(dflag) = dflag {
        // For the idle warps ([`idle_step`]), read after the barrier below.
        let tid = b.tid_x();
        let t0 = b.setp(Cmp::Eq, tid, 0u32);
        b.if_(t0, |b| {
            let dv: Reg<U32> = b.selp(dead, 1u32, 0u32);
            let p = b.shared_elem(dflag, 0u32);
            b.st_shared(p, 0, dv);
        });
    }
    let sp4 = b.shr(sp, 2u32);
    fixed_columns(b, ex, Some(s), |b, c, _, j| {
        let k = b.add(row, j);
        let a = psub(b, xs[c], m);
        st_pair(b, hi, lo, k, a);
        let w = pexp(b, a);
        let jc = chain_slot(b, j, sp4);
        let q = b.shared_elem(&ex.pbuf, jc);
        for r in 0..ex.n {
            let qr = b.mapa(q, r);
            b.st_cluster(qr, 0, w);
        }
    });
    cluster_barrier(b, ex);
    (m, dead)
}

/// Slots of one cluster-wide reduction: a pair and a flag per rank.
pub(super) struct Slots<'a> {
    pub(super) h: &'a SharedArray<F32>,
    pub(super) l: &'a SharedArray<F32>,
    pub(super) f: Option<&'a SharedArray<U32>>,
}

/// The pair maximum of the threads' `x` (and whether `flag` held
/// anywhere) over the cluster, in every thread (every thread must call
/// it). Only the threads `tid < min(ncol, ntid)` hold values (those of
/// [`own_columns`]; the others' `x` is the NaN pair and their flag
/// false), so only their warps reduce: a butterfly per warp, and where
/// more than one warp holds values, their maxima through `red` (a CTA
/// barrier) into warp 0. Lane `r < n` of warp 0 stores the CTA's maximum
/// (`+ 0`) into CTA `r`'s slot of this rank; after a cluster barrier each
/// warp reduces the `n` slots, lane `l` loading slot `l mod n`, by a
/// butterfly over `log2 n` lanes. The maximum is order-free by contract
/// (the slots hold no `−0`), so every thread gets the bits of the
/// rank-order fold. Returns the maximum and the flag, both valid in the
/// warps that hold values only (the others keep the NaN pair and false),
/// and, in every thread, whether the maximum is `−inf`.
#[allow(clippy::too_many_arguments)]
pub(super) fn cluster_pmax(
    b: &mut KernelBuilder,
    ex: &Ex,
    red: &Red,
    slots: &Slots<'_>,
    x: DP,
    flag: Option<Reg<Pred>>,
    busy: bool,
) -> (DP, Option<Reg<Pred>>, Reg<Pred>) {
    let tid = b.tid_x();
    // Whether this warp holds values: `None` where every caller's warp
    // does (`busy` and [`Ex::one_warp`]: warp 0 alone calls it).
    let (active, lane, warp) = if ex.one_warp {
        let active = (!busy).then(|| {
            let warp = b.shr(tid, 5u32);
            b.setp(Cmp::Eq, warp, 0u32)
        });
        (active, None, None)
    } else {
        let lane = b.and(tid, 31u32);
        let warp = b.shr(tid, 5u32);
        let nact = active_warps(b, ex);
        (Some(b.setp(Cmp::Lt, warp, nact)), Some(lane), Some(warp))
    };
    let when_active = |b: &mut KernelBuilder, f: &mut dyn FnMut(&mut KernelBuilder)| match active {
        Some(a) => b.if_(a, |b| f(b)),
        None => f(b),
    };
    let mc = pp::constant(b, f32::NAN, 0.0);
    let fc = b.mov(0u32);
    when_active(b, &mut |b| {
        let w = pp::warp_pmax(b, x);
        assign(b, mc, w);
        if let Some(f) = flag {
            let any = b.vote(false, f, pp::FULL);
            let v: Reg<U32> = b.selp(any, 1u32, 0u32);
            b.assign(fc, v);
        }
    });
    if let (Some(lane), Some(warp), Some(active)) = (lane, warp, active) {
        let nact = active_warps(b, ex);
        let multi = b.setp(Cmp::Gt, nact, 1u32);
        b.if_(multi, |b| {
            let lead = b.setp(Cmp::Eq, lane, 0u32);
            let st = b.pand(lead, active);
            b.if_(st, |b| {
                let p = b.shared_elem(&red.h, warp);
                b.st_shared(p, 0, mc.h);
                let p = b.shared_elem(&red.l, warp);
                b.st_shared(p, 0, mc.l);
                if flag.is_some() {
                    let p = b.shared_elem(&red.f, warp);
                    b.st_shared(p, 0, fc);
                }
            });
            cta_barrier(b, ex);
            let w0 = b.setp(Cmp::Eq, warp, 0u32);
            b.if_(w0, |b| {
                let v = pp::constant(b, f32::NAN, 0.0);
                let fv = b.mov(0u32);
                let has = b.setp(Cmp::Lt, lane, nact);
                b.if_(has, |b| {
                    let p = b.shared_elem(&red.h, lane);
                    let h = b.ld_shared(p, 0);
                    let p = b.shared_elem(&red.l, lane);
                    let l = b.ld_shared(p, 0);
                    assign(b, v, DP { h, l });
                    if flag.is_some() {
                        let p = b.shared_elem(&red.f, lane);
                        let f = b.ld_shared(p, 0);
                        b.assign(fv, f);
                    }
                });
                let w = pp::warp_pmax(b, v);
                assign(b, mc, w);
                if flag.is_some() {
                    let nz = b.setp(Cmp::Ne, fv, 0u32);
                    let any = b.vote(false, nz, pp::FULL);
                    let v: Reg<U32> = b.selp(any, 1u32, 0u32);
                    b.assign(fc, v);
                }
            });
        });
    }
    // Lanes `r < n` of warp 0 publish (`tid < n`: n ≤ 8).
    let publish = b.setp(Cmp::Lt, tid, ex.n);
    b.if_(publish, |b| {
        let m = pp::canon(b, mc);
        let ph = b.shared_elem(slots.h, ex.rank);
        let q = b.mapa(ph, tid);
        b.st_cluster(q, 0, m.h);
        let pl = b.shared_elem(slots.l, ex.rank);
        let q = b.mapa(pl, tid);
        b.st_cluster(q, 0, m.l);
        if let Some(f) = slots.f {
            let pf = b.shared_elem(f, ex.rank);
            let q = b.mapa(pf, tid);
            b.st_cluster(q, 0, fc);
        }
    });
    cluster_barrier(b, ex);
    let (dead, li, h) = slots_dead(b, ex, slots.h);
    // The warps that hold values: the maximum by a butterfly over the
    // `n` slots.
    let m = pp::constant(b, f32::NAN, 0.0);
    let f = slots.f.map(|_| b.mov(0u32));
    when_active(b, &mut |b| {
        let p = b.shared_elem(slots.l, li);
        let l = b.ld_shared(p, 0);
        let mut v = DP { h, l };
        let mut fv = slots.f.map(|a| {
            let p = b.shared_elem(a, li);
            b.ld_shared(p, 0)
        });
        let mut off = 1;
        while off < ex.n {
            let h = b.shfl(ShflMode::Bfly, v.h, off, 0x1f, pp::FULL);
            let l = b.shfl(ShflMode::Bfly, v.l, off, 0x1f, pp::FULL);
            v = pmax2(b, v, DP { h, l });
            if let Some(x) = fv {
                let o = b.shfl(ShflMode::Bfly, x, off, 0x1f, pp::FULL);
                fv = Some(b.or(x, o));
            }
            off *= 2;
        }
        let v = pp::canon(b, v);
        assign(b, m, v);
        if let (Some(f), Some(x)) = (f, fv) {
            b.assign(f, x);
        }
    });
    let flag = f.map(|fv| b.setp(Cmp::Ne, fv, 0u32));
    (m, flag, dead)
}

/// Every warp: whether the cluster's maximum is −inf (no slot above
/// −inf, one at −inf; a NaN slot holds nothing), lane `l` reading slot
/// `l mod n` of `h` (after the barrier that published them); also
/// returns that slot's index and value.
pub(super) fn slots_dead(
    b: &mut KernelBuilder,
    ex: &Ex,
    h: &SharedArray<F32>,
) -> (Reg<Pred>, Reg<U32>, Reg<F32>) {
    // n divides 32: tid mod n is the lane's slot.
    let tid = b.tid_x();
    let li = b.and(tid, ex.n - 1);
    let p = b.shared_elem(h, li);
    let h = b.ld_shared(p, 0);
    let above = b.setp(Cmp::Gt, h, f32::NEG_INFINITY);
    let at = b.setp(Cmp::Eq, h, f32::NEG_INFINITY);
    let any_above = b.vote(false, above, pp::FULL);
    let any_at = b.vote(false, at, pp::FULL);
    let none_above = b.pnot(any_above);
    (b.pand(none_above, any_at), li, h)
}

/// A live forward step in a warp that holds no column: the barriers of
/// [`lin_slice`]'s end, [`cluster_pmax`] (its CTA reduction where more
/// than one warp holds columns, `multi`) and [`exchange`]'s two cluster
/// barriers, in that order, then the step's `dead` test as thread 0 left
/// it in `dflag` before the last of them ([`exchange`]; the next store
/// waits for this warp at the next step's first barrier). Nothing
/// else: the busy warps' work is theirs alone, and the per-step
/// instructions these warps used to walk past (guards, reductions'
/// preambles) are a third of a step's.
fn idle_step(b: &mut KernelBuilder, ex: &Ex, dflag: &SharedArray<U32>) -> Reg<U32> {
    let multi = multi_warp(b, ex);
    cta_barrier(b, ex);
    if let Some(multi) = multi {
        b.if_(multi, |b| cta_barrier(b, ex));
    }
    cluster_barrier(b, ex);
    cluster_barrier(b, ex);
    let p = b.shared_elem(dflag, 0u32);
    b.ld_shared(p, 0)
}

/// `barrier.cluster` (release arrive, acquire wait), then `bar.sync`. The
/// cluster barrier alone orders one CTA's threads too (PTX ISA), and the
/// simulator's race check now sees that (`sim::interp::cluster`, *Order
/// within a CTA*: the HMM cluster tests pass without the `bar.sync`); the
/// CTA barrier, which costs little beside the cluster's, stays until a GPU
/// run has checked the PTX without it.
pub(super) fn cluster_barrier(b: &mut KernelBuilder, ex: &Ex) {
    b.cluster_sync();
    cta_barrier(b, ex);
}

/// Where the weight of state `j` lives in a cluster kernel's weight
/// buffer: chain-major, `(j mod 4)·(sp/4) + j/4`, so chain `g`'s weights
/// (`k ≡ g mod 4`, ascending) are one contiguous run and four successive
/// ones one `ld.shared.v4` ([`lin_slice`]).
pub(super) fn chain_slot(b: &mut KernelBuilder, j: Reg<U32>, sp4: Reg<U32>) -> Reg<U32> {
    let g = b.and(j, 3u32);
    let i = b.shr(j, 2u32);
    b.mad_lo(g, sp4, i)
}

/// Copies the CTA's slice of the packed matrix (`ncol/4` quads from
/// `src`, quad `q` row `k` at `(q·sp + k)·4`, the four columns) into
/// `mat` with each quad's rows in chain order: row `k` at
/// `q·sp + (k mod 4)·(sp/4) + k/4` ([`lin_slice`]'s layout).
pub(super) fn load_slice(
    b: &mut KernelBuilder,
    ex: &Ex,
    mat: &SharedArray<F32>,
    src: crate::dsl::GlobalPtr<F32>,
    sp: Reg<U32>,
) {
    let tid = b.tid_x();
    let nt = b.ntid_x();
    let sp4 = b.shr(sp, 2u32);
    let quads = b.shr(ex.ncol, 2u32);
    b.for_range(0u32, quads, 1u32, |b, q| {
        let qrow = b.mul_lo(q, sp);
        b.for_range(tid, sp, nt, |b, k| {
            let r = b.add(qrow, k);
            let e = b.shl(r, 2u32);
            let sp_ = b.offset(src, e);
            let x = b.ld_global_nc_v4(sp_, 0);
            let kc = chain_slot(b, k, sp4);
            let d = b.add(qrow, kc);
            let d4 = b.shl(d, 2u32);
            let dp = b.shared_elem(mat, d4);
            b.st_shared_v4(dp, 0, x);
        });
    });
}

/// The linear sums of the CTA's columns from the weights (chain-major,
/// [`chain_slot`]) and the slice `mat` ([`load_slice`]'s layout): chain
/// `g` of a quad `q4/4` on one thread, `k ≡ g (mod 4)` ascending (four
/// successive weights of the chain one `ld.shared.v4`, each followed by
/// the four columns' row, one `ld.shared.v4` each), left at
/// `part[g·ncol + q4 …]`.
pub(super) fn lin_slice(
    b: &mut KernelBuilder,
    ex: &Ex,
    mat: &SharedArray<F32>,
    part: &SharedArray<F32>,
    sp: Reg<U32>,
) {
    let x = &ex.pbuf;
    let sp4 = b.shr(sp, 2u32);
    own_col(b, ex, |b, w| {
        let g = b.and(w, 3u32);
        let q4 = b.sub(w, g);
        // Chain g's rows of quad q4/4 start at (q·sp + g·sp/4)·4.
        let qg = b.add(q4, g);
        let mi = b.mul_lo(qg, sp);
        let mi = b.mov(mi);
        let xi = b.mul_lo(g, sp4);
        let xi = b.mov(xi);
        let xend = b.add(xi, sp4);
        let acc: [Reg<F32>; 4] = std::array::from_fn(|_| b.mov(0f32));
        // One block: four successive weights of the chain (`blk` blocks
        // on), each times its row of the quad's four columns.
        let block = |b: &mut KernelBuilder, blk: i32| {
            let xp = b.shared_elem(x, xi);
            let mp = b.shared_elem(mat, mi);
            let xv = b.ld_shared_v4(xp, 4 * blk);
            for (step, &xs) in xv.iter().enumerate() {
                let m4 = b.ld_shared_v4(mp, 16 * blk + 4 * step as i32);
                for c in 0..4 {
                    let v = b.ffma(Rounding::Rn, xs, m4[c], acc[c]);
                    b.assign(acc[c], v);
                }
            }
        };
        // `nb` blocks, then on past them.
        let run = |b: &mut KernelBuilder, nb: i32| {
            for blk in 0..nb {
                block(b, blk);
            }
            let nxi = b.add(xi, 4 * nb as u32);
            b.assign(xi, nxi);
            let nmi = b.add(mi, 16 * nb as u32);
            b.assign(mi, nmi);
        };
        // Four blocks an iteration (S16/16 blocks, at least 4: one test
        // and one pair of pointer steps a 64 `fma`), then two and one.
        // (max(xend, 12) − 12: chain 0's end is `sp/4`, 4 at S16 16.)
        let xend12 = b.max(xend, 12u32);
        let xend4 = b.sub(xend12, 12u32);
        b.while_(|b| b.setp(Cmp::Lt, xi, xend4), |b| run(b, 4));
        let xend2 = b.sub(xend, 4u32);
        let two = b.setp(Cmp::Lt, xi, xend2);
        b.if_(two, |b| run(b, 2));
        let odd = b.setp(Cmp::Lt, xi, xend);
        b.if_(odd, |b| block(b, 0));
        let at = b.mad_lo(g, ex.ncol, q4);
        let pp_ = b.shared_elem(part, at);
        b.st_shared_v4(pp_, 0, acc);
    });
}

/// The linear sum of the CTA's column `jl`: `(c0 + c1) + (c2 + c3)`.
pub(super) fn lin_local(
    b: &mut KernelBuilder,
    part: &SharedArray<F32>,
    jl: Reg<U32>,
    ncol: Reg<U32>,
) -> Reg<F32> {
    let c: [Reg<F32>; 4] = std::array::from_fn(|g| {
        let at = b.mad_lo(ncol, g as u32, jl);
        let p = b.shared_elem(part, at);
        b.ld_shared(p, 0)
    });
    let a = b.fadd(Rounding::Rn, c[0], c[1]);
    let d = b.fadd(Rounding::Rn, c[2], c[3]);
    b.fadd(Rounding::Rn, a, d)
}
