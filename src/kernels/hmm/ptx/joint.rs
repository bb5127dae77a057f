//! The forward and backward recursions in one launch (sm_90+):
//! `hmm_fwdbwd_cluster<n>_cap<c>`, `2·batch` clusters of `n` CTAs, the
//! clusters `0 .. batch` running the forward recursion of sequence
//! `clusterid` (`ptx/cluster.rs`) and the clusters `batch .. 2·batch` the
//! backward of sequence `clusterid − batch` (`ptx/cluster_bwd.rs`), by a
//! cluster-uniform branch around the same emitting code, so each half
//! has the bits of its own kernel. The two recursions share no quantity
//! but the emission maxima `Mb_t`, which `hmm_fwdbwd_maxima` writes
//! first (a warp per position, the forward kernel's reduction: the same
//! bits); the forward half then reads them as the backward does.
//!
//! Shared memory: the two halves use the same weight buffer, partial
//! sums, slots and dynamic slice (`Â` or `Ãᵀ`, the same size), so a CTA
//! needs what the larger of the two needs (plus one pair of the
//! per-warp reduction slots, 192 bytes); the occupancy ptxas is asked
//! for is the recursions' ([`super::cluster`]'s `resident_ctas`). The
//! launch takes it when the `2·batch·n` CTAs fit the device in one wave
//! (`hmm::launch`), since then neither half waits for the other's SMs.

use super::cluster::{FwdSmem, forward_body, forward_cluster_name, resident_ctas, row_max};
use super::cluster_bwd::{BwdSmem, backward_body};
use super::cols::cluster_builder;
use super::pair::Red;
use super::{BackwardRegs, ForwardRegs, THREADS, WARPS, builder};
use crate::dsl::params::Ptr;
use crate::dsl::types::{F32, U32};
use crate::dsl::{Cmp, PtxModule};
use crate::error::Result;
use crate::kernel_params;
use crate::target::Sm;

kernel_params! {
    /// Arguments of `hmm_fwdbwd_cluster<n>_cap<c>`: the union of
    /// [`super::ForwardArgs`] and [`super::BackwardArgs`] (the same
    /// buffers) and the batch, the first backward cluster.
    pub struct JointArgs => JointRegs {
        log_pi: Ptr<F32>,
        log_a: Ptr<F32>,
        log_b: Ptr<F32>,
        lengths: Ptr<U32>,
        prep: Ptr<F32>,
        a_hat: Ptr<F32>,
        a_til: Ptr<F32>,
        alpha: Ptr<F32>,
        alpha_lo: Ptr<F32>,
        mb: Ptr<F32>,
        cnorm: Ptr<F32>,
        ll: Ptr<F32>,
        beta: Ptr<F32>,
        beta_lo: Ptr<F32>,
        dnorm: Ptr<F32>,
        w: Ptr<F32>,
        rh: Ptr<F32>,
        rl: Ptr<F32>,
        flags: Ptr<U32>,
        batch: U32,
        t: U32,
        s: U32,
        sp: U32,
    }
}

kernel_params! {
    /// Arguments of `hmm_fwdbwd_maxima`: the emission maxima `Mb_t` of
    /// every position `t < lengths[b]` into `mb` `[batch, T]`.
    pub struct MaximaArgs => MaximaRegs {
        log_b: Ptr<F32>,
        lengths: Ptr<U32>,
        mb: Ptr<F32>,
        batch: U32,
        t: U32,
        s: U32,
    }
}

/// The entry name of the joint recursions for `n` CTAs a cluster and
/// `S ≤ cap`.
pub fn fwdbwd_cluster_name(n: u32, cap: u32) -> String {
    forward_cluster_name(n, cap).replace("forward", "fwdbwd")
}

/// The entry name of the emission-maxima kernel.
pub const MAXIMA_NAME: &str = "hmm_fwdbwd_maxima";

/// `hmm_fwdbwd_maxima`: a warp per position `(b, t)` over the grid
/// (grid-stride), `Mb_t` by the forward kernels' reduction (the lanes'
/// strided `fmax` from NaN, a butterfly, `+ 0`); positions at or past a
/// sequence's length are not written.
pub fn generate_maxima(sm: Sm) -> Result<PtxModule> {
    let mut b = builder(MAXIMA_NAME, sm);
    let p = b.params::<MaximaArgs>();
    let tid = b.tid_x();
    let lane = b.and(tid, 31u32);
    let warp = b.shr(tid, 5u32);
    let cta = b.ctaid_x();
    let ncta = b.nctaid_x();
    let gw = b.mad_lo(cta, WARPS, warp);
    let stride = b.mul_lo(ncta, WARPS);
    let total = b.mul_lo(p.batch, p.t);
    b.for_range(gw, total, stride, |b, pos| {
        let seq = b.div(pos, p.t);
        let tt = b.rem(pos, p.t);
        let lp = b.offset(p.lengths, seq);
        let len = b.ld_global(lp, 0);
        let inside = b.setp(Cmp::Lt, tt, len);
        b.if_(inside, |b| {
            let ts = b.mul_lo(p.t, p.s);
            let base = b.mul_wide_u32(seq, ts);
            let seq_b = b.offset64(p.log_b, base);
            let m = row_max(b, seq_b, tt, lane, p.s);
            let lead = b.setp(Cmp::Eq, lane, 0u32);
            b.if_(lead, |b| {
                let dst = b.offset(p.mb, pos);
                b.st_global(dst, 0, m);
            });
        });
    });
    b.finish()
}

/// The CTAs of `hmm_fwdbwd_maxima` for `positions = batch·T` (a warp
/// each, at most 65535 CTAs, grid-stride beyond).
pub fn maxima_ctas(positions: u64) -> u32 {
    positions.div_ceil(u64::from(WARPS)).clamp(1, 65_535) as u32
}

/// `hmm_fwdbwd_cluster<n>_cap<c>` (`n` in `CLUSTER_SIZES`, `cap` ≤ 1024):
/// launched with `2·batch·n` CTAs of [`THREADS`] and
/// `cluster_smem_bytes` of dynamic shared memory, after
/// `hmm_fwdbwd_maxima`; the outputs of `hmm_forward_cluster<n>_cap<c>`
/// then `hmm_backward_cluster<n>_cap<c>`, bit for bit.
pub fn generate_fwdbwd_cluster(sm: Sm, cap: u32, n: u32) -> Result<PtxModule> {
    debug_assert_eq!(THREADS, 256);
    let mut b = cluster_builder(&fwdbwd_cluster_name(n, cap), sm, cap, n);
    let p = b.params::<JointArgs>();
    let pbuf = b.shared_array::<F32>("pw", cap, 16);
    let part = b.shared_array::<F32>("part", 4 * (cap / n).max(4), 16);
    let (red, red0) = (
        Red::new(&mut b, "red", WARPS),
        Red::new(&mut b, "red0", WARPS),
    );
    let (redm, redk) = (
        Red::new(&mut b, "redm", WARPS),
        Red::new(&mut b, "redk", WARPS),
    );
    let mh = b.shared_array::<F32>("mh", n, 4);
    let ml = b.shared_array::<F32>("ml", n, 4);
    let kh = b.shared_array::<F32>("kh", n, 4);
    let kl = b.shared_array::<F32>("kl", n, 4);
    let kf = b.shared_array::<U32>("kf", n, 4);
    let mat = b.dynamic_shared::<F32>("mat", 16);
    let fwd = ForwardRegs {
        log_pi: p.log_pi,
        log_a: p.log_a,
        log_b: p.log_b,
        lengths: p.lengths,
        prep: p.prep,
        a_hat: p.a_hat,
        alpha: p.alpha,
        alpha_lo: p.alpha_lo,
        mb: p.mb,
        cnorm: p.cnorm,
        ll: p.ll,
        t: p.t,
        s: p.s,
        sp: p.sp,
    };
    let bwd = BackwardRegs {
        log_a: p.log_a,
        log_b: p.log_b,
        lengths: p.lengths,
        prep: p.prep,
        a_til: p.a_til,
        mb: p.mb,
        beta: p.beta,
        beta_lo: p.beta_lo,
        dnorm: p.dnorm,
        w: p.w,
        rh: p.rh,
        rl: p.rl,
        flags: p.flags,
        t: p.t,
        s: p.s,
        sp: p.sp,
    };
    let fsh = FwdSmem {
        pbuf: pbuf.clone(),
        part: part.clone(),
        red,
        red0,
        mh: mh.clone(),
        ml: ml.clone(),
        mat: mat.clone(),
    };
    let bsh = BwdSmem {
        fwd: FwdSmem {
            pbuf,
            part,
            red: redm,
            red0: redk,
            mh,
            ml,
            mat,
        },
        kh,
        kl,
        kf,
    };
    let cid = b.clusterid_x();
    let forward = b.setp(Cmp::Lt, cid, p.batch);
    let batch = p.batch;
    // Cluster-uniform: every barrier inside is reached by all the
    // cluster's threads or none.
    b.if_else(
        forward,
        |b| forward_body(b, &fwd, fsh, (n, cap), |b| b.clusterid_x(), false),
        |b| {
            backward_body(b, &bwd, bsh, (n, cap), |b| {
                let c = b.clusterid_x();
                b.sub(c, batch)
            })
        },
    );
    // No CTA leaves while a peer may still store into its shared memory.
    b.cluster_sync();
    b.finish()
}

/// Whether the launch runs both recursions in one launch of
/// [`generate_fwdbwd_cluster`]: when its `2·batch·n` CTAs fit the
/// device's `sms` SMs in one wave at the occupancy the cluster kernels
/// are compiled for (`.minnctapersm`), so that neither half waits for
/// SMs the other holds; otherwise the two launches one after the other.
pub fn joint_fits(sm: Sm, sms: u32, batch: usize, cap: u32, n: u32) -> bool {
    let ctas = 2 * batch as u64 * u64::from(n);
    ctas <= u64::from(sms) * u64::from(resident_ctas(sm, cap, n))
}
