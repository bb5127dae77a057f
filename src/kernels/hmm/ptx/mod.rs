//! The kernels of [`super`] (all with 256 threads a CTA, but the
//! transition counts' 128 at small batches):
//!
//! | kernel | grid | does |
//! |---|---|---|
//! | `hmm_prep_max` | threads over `2·S` | column and row maxima of `log_a` |
//! | `hmm_prep_exp` | CTAs over quads of columns | `Amax`, `dcol`, `drow`, `Â` and `Ãᵀ` (zero-padded to `S16 × S16`, packed in quads of columns) |
//! | `hmm_forward_cap<c>` | a CTA per sequence | emission maxima, then the forward recursion: `â` pairs into `log_alpha` (high) and `gamma` (low), `C_t`, `ll` |
//! | `hmm_backward_cap<c>` | a CTA per sequence | the backward recursion: `β̂` pairs into `log_beta` / workspace, `D_t`, and per step what the transition counts need (`R_t`, `s_i` or `−σ_i`, a fallback flag) |
//! | `hmm_forward_cluster<n>_cap<c>`, `hmm_backward_cluster<n>_cap<c>` | a cluster of `n` CTAs per sequence (sm_90+, `S16 ≥ 64`, [`cluster_for`]) | the same recursions with each CTA's slice of `Â` / `Ãᵀ` in shared memory, exchanging through DSMEM (`ptx/cluster.rs`, `ptx/cluster_bwd.rs`) |
//! | `hmm_fwdbwd_maxima`, `hmm_fwdbwd_cluster<n>_cap<c>` | a warp per position; `2·batch` clusters of `n` CTAs (sm_90+, when they fit the device in one wave) | the emission maxima, then both cluster recursions in one launch, the forward in clusters `0 .. batch`, the backward in the others (`ptx/joint.rs`) |
//! | `hmm_posteriors` | a warp per position | `gamma`, the final `log_alpha`/`log_beta` in place, `x = gamma/s` |
//! | `hmm_transitions` | a CTA of `n` threads (256, or 128 at small batches: [`transition_threads`]) per (32 states `j` × `n` states `i`) of a sequence, an 8 × 4 register tile a thread, `Q` and `x` a block in shared tiles | `xi` |
//!
//! The recursions' `S²` work is the contract's linear sum: four chains
//! over `k mod 4` per state, with the shifted matrix read as 16-byte
//! vectors of four consecutive states (forward: `Â[k][4q..4q+4]`;
//! backward: `Ã[4q..4q+4][k]`), stored packed by quads so that a chain's
//! next vector is a fixed 64 bytes on. Variants with a shared buffer of up to
//! 1024 states give each (chain, 4 states) item its own thread and add the
//! four partial sums after a barrier; the 4096 variant gives a thread all
//! four chains of its 4 states. The bits are the same: the chains and
//! their pairing are the contract's, not the launch's. `ptx/post.rs`
//! holds the posteriors, `ptx/xi.rs` the transition counts.

mod cluster;
mod cluster_bwd;
mod cols;
mod fwd_state;
mod joint;
mod pair;
mod post;
mod roles;
mod xi;

use crate::dsl::math;
use crate::dsl::params::Ptr;
use crate::dsl::types::{F32, Reg, U32};
use crate::dsl::{Cmp, GlobalPtr, KernelBuilder, PtxModule, Rounding, SharedArray};
use crate::error::Result;
use crate::kernel_params;
use crate::kernels::seq::{seq_cta, zero_if_empty};
use crate::kernels::viterbi::ptx::CAPS;
use crate::target::Sm;
use pair::{
    self as pp, DNorm, DP, Red, assign, cta_fmax, cta_pmax, of, padd, pexp, plse, pmax2, pshift,
    psub,
};

pub use crate::kernels::viterbi::ptx::cap_for;
pub use cluster::{
    CLUSTER_MIN_STATES, CLUSTER_SIZES, cluster_for, cluster_smem_bytes, forward_cluster_name,
    generate_forward_cluster,
};
pub use cluster_bwd::{backward_cluster_name, generate_backward_cluster};
use fwd_state::{FwdIn, FwdStep, forward_state, forward_state0, input_maxima};
pub use joint::{
    JointArgs, MAXIMA_NAME, MaximaArgs, fwdbwd_cluster_name, generate_fwdbwd_cluster,
    generate_maxima, joint_fits, maxima_ctas,
};
pub use post::{PosteriorArgs, generate_posteriors};
pub use xi::{
    TransitionArgs, XI_COLS, XI_THREADS, generate_transitions, transition_groups,
    transition_threads,
};

/// Threads per CTA.
pub const THREADS: u32 = 256;
/// Warps per CTA.
pub(crate) const WARPS: u32 = THREADS / 32;
/// Variants up to this capacity split the chains across threads.
const SPLIT_MAX: u32 = 1024;

/// Offsets in the prep vector (`6·S16 + 4` floats): column maxima, row
/// maxima, `dcol` (high, low), `drow` (high, low), `Amax`.
pub(crate) const PREP_COLMAX: u32 = 0;
pub(crate) const PREP_ROWMAX: u32 = 1;
pub(crate) const PREP_DCOL_H: u32 = 2;
pub(crate) const PREP_DCOL_L: u32 = 3;
pub(crate) const PREP_DROW_H: u32 = 4;
pub(crate) const PREP_DROW_L: u32 = 5;
pub(crate) const PREP_AMAX: u32 = 6;

/// Floats in the prep vector for the padded state count `sp`.
pub fn prep_len(sp: usize) -> usize {
    6 * sp + 4
}

kernel_params! {
    /// Arguments of `hmm_prep_max`.
    pub struct PrepMaxArgs => PrepMaxRegs {
        log_a: Ptr<F32>,
        prep: Ptr<F32>,
        s: U32,
        sp: U32,
    }
}

kernel_params! {
    /// Arguments of `hmm_prep_exp`.
    pub struct PrepExpArgs => PrepExpRegs {
        log_a: Ptr<F32>,
        prep: Ptr<F32>,
        a_hat: Ptr<F32>,
        a_til: Ptr<F32>,
        s: U32,
        sp: U32,
    }
}

kernel_params! {
    /// Arguments of `hmm_forward_cap<c>`: `alpha` / `alpha_lo` receive the
    /// normalized pairs (`alpha_lo` is the `gamma` buffer), `mb` the
    /// emission maxima `[batch, T]`, `cnorm` the pairs `C_t`
    /// `[batch, T, 2]`.
    pub struct ForwardArgs => ForwardRegs {
        log_pi: Ptr<F32>,
        log_a: Ptr<F32>,
        log_b: Ptr<F32>,
        lengths: Ptr<U32>,
        prep: Ptr<F32>,
        a_hat: Ptr<F32>,
        alpha: Ptr<F32>,
        alpha_lo: Ptr<F32>,
        mb: Ptr<F32>,
        cnorm: Ptr<F32>,
        ll: Ptr<F32>,
        t: U32,
        s: U32,
        sp: U32,
    }
}

kernel_params! {
    /// Arguments of `hmm_backward_cap<c>`: `beta` / `beta_lo` receive the
    /// normalized pairs, `dnorm` the pairs `D_t`, `w` `[batch, T, S16]`
    /// `s_i` or `−σ_i` (zero padding), `rh` / `rl` `[batch, T, S]` the
    /// pairs `R_t`, `flags` `[batch, T]` whether step `t` has a fallback
    /// state.
    pub struct BackwardArgs => BackwardRegs {
        log_a: Ptr<F32>,
        log_b: Ptr<F32>,
        lengths: Ptr<U32>,
        prep: Ptr<F32>,
        a_til: Ptr<F32>,
        mb: Ptr<F32>,
        beta: Ptr<F32>,
        beta_lo: Ptr<F32>,
        dnorm: Ptr<F32>,
        w: Ptr<F32>,
        rh: Ptr<F32>,
        rl: Ptr<F32>,
        flags: Ptr<U32>,
        t: U32,
        s: U32,
        sp: U32,
    }
}

pub(crate) fn builder(name: &str, sm: Sm) -> KernelBuilder {
    let mut b = KernelBuilder::new(name, sm);
    b.maxntid(THREADS, 1, 1);
    // As for Viterbi: without it ptxas caps sm_70 at 32 registers.
    b.min_ctas_per_sm(1);
    b
}

/// The entry name of the forward pass for `S ≤ cap`.
pub fn forward_name(cap: u32) -> String {
    format!("hmm_forward_cap{cap}")
}

/// The entry name of the backward pass for `S ≤ cap`.
pub fn backward_name(cap: u32) -> String {
    format!("hmm_backward_cap{cap}")
}

/// `p[k]` as a pair of loads from `hi` and `lo`.
pub(crate) fn ld_pair(
    b: &mut KernelBuilder,
    hi: GlobalPtr<F32>,
    lo: GlobalPtr<F32>,
    k: Reg<U32>,
) -> DP {
    let ph = b.offset(hi, k);
    let pl = b.offset(lo, k);
    DP {
        h: b.ld_global(ph, 0),
        l: b.ld_global(pl, 0),
    }
}

/// Store the pair `v` at `k` of `hi` and `lo`.
pub(crate) fn st_pair(
    b: &mut KernelBuilder,
    hi: GlobalPtr<F32>,
    lo: GlobalPtr<F32>,
    k: Reg<U32>,
    v: DP,
) {
    let ph = b.offset(hi, k);
    b.st_global(ph, 0, v.h);
    let pl = b.offset(lo, k);
    b.st_global(pl, 0, v.l);
}

/// `prep[section·sp + k]`.
pub(crate) fn ld_prep(
    b: &mut KernelBuilder,
    prep: GlobalPtr<F32>,
    section: u32,
    sp: Reg<U32>,
    k: impl Into<crate::dsl::types::Src<U32>>,
) -> Reg<F32> {
    let idx = b.mad_lo(sp, section, k);
    let p = b.offset(prep, idx);
    b.ld_global(p, 0)
}

/// `S` rounded up to a multiple of 4.
fn round4(b: &mut KernelBuilder, s: Reg<U32>) -> Reg<U32> {
    let s3 = b.add(s, 3u32);
    b.and(s3, !3u32)
}

/// The linear sums of one step: `Σ_k x[k]·M[k][j]` in the contract's
/// four chains, from the weights `x` in shared memory (zero-padded to
/// `sp`; the zero terms leave the chains' sums unchanged) and the matrix `M` in the packed-quad layout of `hmm_prep_exp`
/// (`M[k][4q + c]` at `(q·sp + k)·4 + c`, so a chain's next row is 64
/// bytes on), into `part`: split variants leave the four chains of `j` at
/// `part[g·s4 + j]`, the others the combined sum at `part[j]`.
fn lin_phase(
    b: &mut KernelBuilder,
    x: &SharedArray<F32>,
    mat: GlobalPtr<F32>,
    part: &SharedArray<F32>,
    s4: Reg<U32>,
    sp: Reg<U32>,
    split: bool,
) {
    let tid = b.tid_x();
    let nt = b.ntid_x();
    if split {
        let items = b.mov(s4);
        b.for_range(tid, items, nt, |b, w| {
            let g = b.and(w, 3u32);
            let q4 = b.sub(w, g);
            let g4 = b.shl(g, 2u32);
            let start = b.mad_lo(q4, sp, g4);
            let m = b.offset(mat, start);
            let m = b.ptr_copy(m);
            let acc: [Reg<F32>; 4] = std::array::from_fn(|_| b.mov(0f32));
            // Four steps of the chain a trip (k, k+4, k+8, k+12): the
            // weights and rows are zero-padded to `sp`, a multiple of 16.
            b.for_range(g, sp, 16u32, |b, k| {
                let xp = b.shared_elem(x, k);
                for step in 0..4 {
                    let xv = b.ld_shared(xp, 4 * step);
                    let m4 = b.ld_global_nc_v4(m, 16 * step);
                    for c in 0..4 {
                        let v = b.ffma(Rounding::Rn, xv, m4[c], acc[c]);
                        b.assign(acc[c], v);
                    }
                }
                b.advance(m, 64);
            });
            let at = b.mad_lo(g, s4, q4);
            let pp = b.shared_elem(part, at);
            b.st_shared_v4(pp, 0, acc);
        });
    } else {
        let quads = b.shr(s4, 2u32);
        b.for_range(tid, quads, nt, |b, q| {
            let q4 = b.shl(q, 2u32);
            let start = b.mul_lo(q4, sp);
            let m = b.offset(mat, start);
            let m = b.ptr_copy(m);
            let acc: [[Reg<F32>; 4]; 4] =
                std::array::from_fn(|_| std::array::from_fn(|_| b.mov(0f32)));
            b.for_range(0u32, s4, 4u32, |b, k0| {
                let xp = b.shared_elem(x, k0);
                let x4 = b.ld_shared_v4(xp, 0);
                for (g, row) in acc.iter().enumerate() {
                    let m4 = b.ld_global_nc_v4(m, 4 * g as i32);
                    for c in 0..4 {
                        let v = b.ffma(Rounding::Rn, x4[g], m4[c], row[c]);
                        b.assign(row[c], v);
                    }
                }
                b.advance(m, 16);
            });
            let sums: [Reg<F32>; 4] = std::array::from_fn(|c| {
                let a = b.fadd(Rounding::Rn, acc[0][c], acc[1][c]);
                let d = b.fadd(Rounding::Rn, acc[2][c], acc[3][c]);
                b.fadd(Rounding::Rn, a, d)
            });
            let pp = b.shared_elem(part, q4);
            b.st_shared_v4(pp, 0, sums);
        });
    }
}

/// The linear sum of state `j` from [`lin_phase`]'s `part`.
fn lin_value(
    b: &mut KernelBuilder,
    part: &SharedArray<F32>,
    j: Reg<U32>,
    s4: Reg<U32>,
    split: bool,
) -> Reg<F32> {
    if !split {
        let p = b.shared_elem(part, j);
        return b.ld_shared(p, 0);
    }
    let c: [Reg<F32>; 4] = std::array::from_fn(|g| {
        let at = b.mad_lo(s4, g as u32, j);
        let p = b.shared_elem(part, at);
        b.ld_shared(p, 0)
    });
    let a = b.fadd(Rounding::Rn, c[0], c[1]);
    let d = b.fadd(Rounding::Rn, c[2], c[3]);
    b.fadd(Rounding::Rn, a, d)
}

/// `L = (log s, +0)` when `s ≥ τ`, else the fallback's log-sum; also
/// `s`, or `−σ` for a fallback, and whether it fell back.
fn state_log(
    b: &mut KernelBuilder,
    s: Reg<F32>,
    n: Reg<U32>,
    term: &dyn Fn(&mut KernelBuilder, Reg<U32>) -> DP,
) -> (DP, Reg<F32>, Reg<crate::dsl::types::Pred>) {
    let l = pp::constant(b, 0.0, 0.0);
    let w = b.mov(s);
    let linear = b.setp(Cmp::Ge, s, super::host::TAU);
    b.if_else(
        linear,
        |b| {
            let lg = math::log(b, s);
            b.assign(l.h, lg);
            b.assign(l.l, 0f32);
        },
        |b| {
            let (v, _, sigma) = plse(b, n, term);
            assign(b, l, v);
            let ns = b.fneg(sigma);
            b.assign(w, ns);
        },
    );
    let fell = b.pnot(linear);
    (l, w, fell)
}

/// Column and row maxima of `log_a`.
pub fn generate_prep_max(sm: Sm) -> Result<PtxModule> {
    let mut b = builder("hmm_prep_max", sm);
    let p = b.params::<PrepMaxArgs>();
    let gid = b.global_id_x();
    let nt = b.ntid_x();
    let nc = b.nctaid_x();
    let stride = b.mul_lo(nt, nc);
    let two_s = b.shl(p.s, 1u32);
    b.for_range(gid, two_s, stride, |b, k| {
        let col = b.setp(Cmp::Lt, k, p.s);
        let m = b.mov(f32::NAN);
        b.if_else(
            col,
            |b| {
                b.for_range(0u32, p.s, 1u32, |b, i| {
                    let idx = b.mad_lo(i, p.s, k);
                    let ap = b.offset(p.log_a, idx);
                    let a = b.ld_global(ap, 0);
                    let nm = b.fmax(m, a);
                    b.assign(m, nm);
                });
                let m0 = b.fadd(Rounding::Rn, m, 0f32);
                let idx = b.mad_lo(p.sp, PREP_COLMAX, k);
                let dst = b.offset(p.prep, idx);
                b.st_global(dst, 0, m0);
            },
            |b| {
                let i = b.sub(k, p.s);
                let row = b.mul_lo(i, p.s);
                b.for_range(0u32, p.s, 1u32, |b, j| {
                    let idx = b.add(row, j);
                    let ap = b.offset(p.log_a, idx);
                    let a = b.ld_global(ap, 0);
                    let nm = b.fmax(m, a);
                    b.assign(m, nm);
                });
                let m0 = b.fadd(Rounding::Rn, m, 0f32);
                let idx = b.mad_lo(p.sp, PREP_ROWMAX, i);
                let dst = b.offset(p.prep, idx);
                b.st_global(dst, 0, m0);
            },
        );
    });
    b.finish()
}

/// `Amax`, `dcol`, `drow`, `Â` and `Ãᵀ` (zero padding).
pub fn generate_prep_exp(sm: Sm) -> Result<PtxModule> {
    let mut b = builder("hmm_prep_exp", sm);
    let p = b.params::<PrepExpArgs>();
    let red = Red::new(&mut b, "red", WARPS);
    let tid = b.tid_x();
    let nt = b.ntid_x();
    let cta = b.ctaid_x();
    let nc = b.nctaid_x();
    let v = b.mov(f32::NAN);
    b.for_range(tid, p.s, nt, |b, j| {
        let c = ld_prep(b, p.prep, PREP_COLMAX, p.sp, j);
        let nv = b.fmax(v, c);
        b.assign(v, nv);
    });
    let amax = cta_fmax(&mut b, v, &red);
    let first = b.setp(Cmp::Eq, cta, 0u32);
    b.if_(first, |b| {
        let t0 = b.setp(Cmp::Eq, tid, 0u32);
        b.if_(t0, |b| {
            let at = b.mul_lo(p.sp, PREP_AMAX);
            let dst = b.offset(p.prep, at);
            b.st_global(dst, 0, amax);
        });
        let am = of(b, amax);
        b.for_range(tid, p.s, nt, |b, k| {
            for (src, hi, lo) in [
                (PREP_COLMAX, PREP_DCOL_H, PREP_DCOL_L),
                (PREP_ROWMAX, PREP_DROW_H, PREP_DROW_L),
            ] {
                let m = ld_prep(b, p.prep, src, p.sp, k);
                let m = of(b, m);
                let d = psub(b, m, am);
                let ih = b.mad_lo(p.sp, hi, k);
                let il = b.mad_lo(p.sp, lo, k);
                let ph = b.offset(p.prep, ih);
                b.st_global(ph, 0, d.h);
                let pl = b.offset(p.prep, il);
                b.st_global(pl, 0, d.l);
            }
        });
    });
    // The packed-quad layout: element (k, j) of M at (⌊j/4⌋·sp + k)·4 +
    // j mod 4, for the forward's M[k][j] = Â[k][j] = pexp(log_a[k][j] ⊖
    // colmax_j) and the backward's M[k][i] = Ã[i][k] = pexp(log_a[i][k] ⊖
    // rowmax_i); zero outside S × S. A CTA per quad of columns, threads
    // over its `4·sp` contiguous elements.
    let quads = b.shr(p.sp, 2u32);
    let span = b.shl(p.sp, 2u32);
    for transposed in [false, true] {
        let out = if transposed { p.a_til } else { p.a_hat };
        b.for_range(cta, quads, nc, |b, q| {
            let obase = b.mul_lo(q, span);
            b.for_range(tid, span, nt, |b, e| {
                let k = b.shr(e, 2u32);
                let c = b.and(e, 3u32);
                let j = b.mad_lo(q, 4u32, c);
                let v = b.mov(0f32);
                let kin = b.setp(Cmp::Lt, k, p.s);
                let jin = b.setp(Cmp::Lt, j, p.s);
                let inside = b.pand(kin, jin);
                b.if_(inside, |b| {
                    // (row, column) of log_a and the maximum it is shifted by.
                    let (r, cc, sec) = if transposed {
                        (j, k, PREP_ROWMAX)
                    } else {
                        (k, j, PREP_COLMAX)
                    };
                    let idx = b.mad_lo(r, p.s, cc);
                    let ap = b.offset(p.log_a, idx);
                    let a = b.ld_global(ap, 0);
                    let m = ld_prep(b, p.prep, sec, p.sp, j);
                    let x = pshift(b, a, m);
                    let ev = pexp(b, x);
                    b.assign(v, ev);
                });
                let o = b.add(obase, e);
                let dst = b.offset(out, o);
                b.st_global(dst, 0, v);
            });
        });
    }
    b.finish()
}

/// The forward pass.
pub fn generate_forward(sm: Sm, cap: u32) -> Result<PtxModule> {
    let split = cap <= SPLIT_MAX;
    let mut b = builder(&forward_name(cap), sm);
    let p = b.params::<ForwardArgs>();
    let pbuf = b.shared_array::<F32>("pw", cap, 16);
    let part = b.shared_array::<F32>("part", if split { 4 * cap } else { cap }, 16);
    let red = Red::new(&mut b, "red", WARPS);
    let red0 = Red::new(&mut b, "red0", WARPS);
    let c = seq_cta(&mut b, p.lengths, p.t, p.s);
    let (tid, nt, len) = (c.tid, c.nt, c.len);
    let s4 = round4(&mut b, p.s);
    let seq_b = b.offset64(p.log_b, c.base);
    let seq_ah = b.offset64(p.alpha, c.base);
    let seq_al = b.offset64(p.alpha_lo, c.base);
    let steps_base = b.mul_wide_u32(c.seq, p.t);
    let mbrow = b.offset64(p.mb, steps_base);
    let t2 = b.shl(p.t, 1u32);
    let cn_base = b.mul_wide_u32(c.seq, t2);
    let cn = b.offset64(p.cnorm, cn_base);
    let nonempty = zero_if_empty(&mut b, &c, p.ll);
    b.if_(nonempty, |b| {
        // Zero padding of the weights.
        let from = b.add(p.s, tid);
        b.for_range(from, p.sp, nt, |b, k| {
            let q = b.shared_elem(&pbuf, k);
            b.st_shared(q, 0, 0f32);
        });
        // Emission maxima: a warp per position.
        let lane = b.and(tid, 31u32);
        let warp = b.shr(tid, 5u32);
        b.for_range(warp, len, WARPS, |b, tt| {
            let m = b.mov(f32::NAN);
            let row = b.mul_lo(tt, p.s);
            b.for_range(lane, p.s, 32u32, |b, j| {
                let k = b.add(row, j);
                let ep = b.offset(seq_b, k);
                let e = b.ld_global(ep, 0);
                let nm = b.fmax(m, e);
                b.assign(m, nm);
            });
            let m = pp::warp_fmax(b, m);
            let m = b.fadd(Rounding::Rn, m, 0f32);
            let lead = b.setp(Cmp::Eq, lane, 0u32);
            b.if_(lead, |b| {
                let dst = b.offset(mbrow, tt);
                b.st_global(dst, 0, m);
            });
        });
        // Mpi (its barrier also publishes the maxima).
        let (mpi, amax) = input_maxima(b, &p, tid, nt, &red0);
        let norm = DNorm::new(b);
        // Step 0.
        let mb0 = b.ld_global(mbrow, 0);
        let xm = pp::constant(b, f32::NAN, 0.0);
        b.for_range(tid, p.s, nt, |b, j| {
            forward_state0(b, &p, seq_b, Some((seq_ah, seq_al)), (mpi, mb0), j, xm);
        });
        let (m, _) = cta_pmax(b, xm, None, &red);
        let row0 = b.mov(0u32);
        normalize_row(b, &pbuf, seq_ah, seq_al, row0, p.s, m);
        // The normalizer sums live in thread 0 only (it stores C_t and ll).
        let t0 = b.setp(Cmp::Eq, tid, 0u32);
        let cprev = pp::constant(b, 0.0, 0.0);
        b.if_(t0, |b| {
            let cv = norm.add_step(b, &[mpi, mb0], None, &[m.h, m.l]);
            assign(b, cprev, cv);
        });
        store_norm(b, tid, cn, row0, cprev);
        let dead0 = b.setp(Cmp::Eq, m.h, f32::NEG_INFINITY);
        let dead: Reg<U32> = b.selp(dead0, 1u32, 0u32);
        let zero_last = b.mov(0u32);
        b.bar_sync();
        b.for_range(1u32, len, 1u32, |b, tt| {
            let is_dead = b.setp(Cmp::Ne, dead, 0u32);
            let row = b.mul_lo(tt, p.s);
            b.if_else(
                is_dead,
                |b| {
                    b.for_range(tid, p.s, nt, |b, j| {
                        let k = b.add(row, j);
                        let ninf = pp::constant(b, f32::NEG_INFINITY, 0.0);
                        st_pair(b, seq_ah, seq_al, k, ninf);
                    });
                    store_norm(b, tid, cn, tt, cprev);
                    b.assign(zero_last, 1u32);
                },
                |b| {
                    let mbp = b.offset(mbrow, tt);
                    let mbt = b.ld_global(mbp, 0);
                    lin_phase(b, &pbuf, p.a_hat, &part, s4, p.sp, split);
                    b.bar_sync();
                    let prow = b.sub(row, p.s);
                    let xm = pp::constant(b, f32::NAN, 0.0);
                    b.for_range(tid, p.s, nt, |b, j| {
                        let sj = lin_value(b, &part, j, s4, split);
                        let step = FwdStep {
                            seq_ah,
                            seq_al,
                            prow,
                            mbt,
                        };
                        let input = FwdIn::Memory { seq_b, row };
                        forward_state(b, &p, &step, input, sj, j, xm);
                    });
                    let (m, _) = cta_pmax(b, xm, None, &red);
                    normalize_row(b, &pbuf, seq_ah, seq_al, row, p.s, m);
                    b.if_(t0, |b| {
                        let cv = norm.add_step(b, &[mbt], Some(amax), &[m.h, m.l]);
                        assign(b, cprev, cv);
                    });
                    store_norm(b, tid, cn, tt, cprev);
                    let d = b.setp(Cmp::Eq, m.h, f32::NEG_INFINITY);
                    let dv: Reg<U32> = b.selp(d, 1u32, 0u32);
                    b.assign(dead, dv);
                    b.bar_sync();
                },
            );
        });
        // ll: the last row's linear weights summed in ascending order.
        b.if_(t0, |b| {
            let z = b.mov(0f32);
            let live = b.setp(Cmp::Eq, zero_last, 0u32);
            b.if_(live, |b| {
                b.for_range(0u32, p.s, 1u32, |b, j| {
                    let q = b.shared_elem(&pbuf, j);
                    let x = b.ld_shared(q, 0);
                    let nz = b.fadd(Rounding::Rn, z, x);
                    b.assign(z, nz);
                });
            });
            let lz = math::log(b, z);
            norm.steps.add(b, lz);
            let v = norm.value(b);
            let dst = b.offset(p.ll, c.seq);
            b.st_global(dst, 0, v.h);
        });
    });
    b.finish()
}

/// `â = X ⊖ M` for the row staged at `row` of `hi`/`lo`, stored back, and
/// the linear weights `pexp(â)` into `pbuf`.
fn normalize_row(
    b: &mut KernelBuilder,
    pbuf: &SharedArray<F32>,
    hi: GlobalPtr<F32>,
    lo: GlobalPtr<F32>,
    row: Reg<U32>,
    s: Reg<U32>,
    m: DP,
) {
    let tid = b.tid_x();
    let nt = b.ntid_x();
    b.for_range(tid, s, nt, |b, j| {
        let k = b.add(row, j);
        let x = ld_pair(b, hi, lo, k);
        let a = psub(b, x, m);
        st_pair(b, hi, lo, k, a);
        let w = pexp(b, a);
        let q = b.shared_elem(pbuf, j);
        b.st_shared(q, 0, w);
    });
}

/// Thread 0 stores the pair `v` at `dst[2·t]`, `dst[2·t + 1]`.
fn store_norm(b: &mut KernelBuilder, tid: Reg<U32>, dst: GlobalPtr<F32>, t: Reg<U32>, v: DP) {
    let t0 = b.setp(Cmp::Eq, tid, 0u32);
    b.if_(t0, |b| {
        let k = b.shl(t, 1u32);
        let ph = b.offset(dst, k);
        b.st_global(ph, 0, v.h);
        b.st_global(ph, 1, v.l);
    });
}

/// The backward pass.
pub fn generate_backward(sm: Sm, cap: u32) -> Result<PtxModule> {
    let split = cap <= SPLIT_MAX;
    let mut b = builder(&backward_name(cap), sm);
    let p = b.params::<BackwardArgs>();
    let qbuf = b.shared_array::<F32>("qw", cap, 16);
    let part = b.shared_array::<F32>("part", if split { 4 * cap } else { cap }, 16);
    let red_m = Red::new(&mut b, "redm", WARPS);
    let red_k = Red::new(&mut b, "redk", WARPS);
    let c = seq_cta(&mut b, p.lengths, p.t, p.s);
    let (tid, nt, len) = (c.tid, c.nt, c.len);
    let s4 = round4(&mut b, p.s);
    let seq_b = b.offset64(p.log_b, c.base);
    let seq_bh = b.offset64(p.beta, c.base);
    let seq_bl = b.offset64(p.beta_lo, c.base);
    let seq_rh = b.offset64(p.rh, c.base);
    let seq_rl = b.offset64(p.rl, c.base);
    let tsp = b.mul_lo(p.t, p.sp);
    let wbase = b.mul_wide_u32(c.seq, tsp);
    let seq_w = b.offset64(p.w, wbase);
    let steps_base = b.mul_wide_u32(c.seq, p.t);
    let mbrow = b.offset64(p.mb, steps_base);
    let flags = b.offset64(p.flags, steps_base);
    let t2 = b.shl(p.t, 1u32);
    let dn_base = b.mul_wide_u32(c.seq, t2);
    let dn = b.offset64(p.dnorm, dn_base);
    let nonempty = b.setp(Cmp::Ne, len, 0u32);
    b.if_(nonempty, |b| {
        let from = b.add(p.s, tid);
        b.for_range(from, p.sp, nt, |b, k| {
            let q = b.shared_elem(&qbuf, k);
            b.st_shared(q, 0, 0f32);
        });
        let amax_at = b.mul_lo(p.sp, PREP_AMAX);
        let amax_p = b.offset(p.prep, amax_at);
        let amax = b.ld_global(amax_p, 0);
        let norm = DNorm::new(b);
        let last = b.sub(len, 1u32);
        let zero = pp::constant(b, 0.0, 0.0);
        let dprev = pp::constant(b, 0.0, 0.0);
        store_norm(b, tid, dn, last, dprev);
        // β̂_{L−1} = (0, 0); the first step's r staged in R row L−2.
        let lrow = b.mul_lo(last, p.s);
        let mbl_p = b.offset(mbrow, last);
        let mbl = b.ld_global(mbl_p, 0);
        let has_steps = b.setp(Cmp::Gt, last, 0u32);
        let rrow0 = b.sub(lrow, p.s);
        let rm = pp::constant(b, f32::NAN, 0.0);
        b.for_range(tid, p.s, nt, |b, j| {
            let k = b.add(lrow, j);
            st_pair(b, seq_bh, seq_bl, k, zero);
            b.if_(has_steps, |b| {
                let ep = b.offset(seq_b, k);
                let e = b.ld_global(ep, 0);
                let e = pshift(b, e, mbl);
                let r = padd(b, e, zero);
                let kr = b.add(rrow0, j);
                st_pair(b, seq_rh, seq_rl, kr, r);
                let nm = pmax2(b, rm, r);
                assign(b, rm, nm);
            });
        });
        b.if_(has_steps, |b| {
            let (m0, _) = cta_pmax(b, rm, None, &red_m);
            let mprime = DP {
                h: b.mov(m0.h),
                l: b.mov(m0.l),
            };
            let dead = b.mov(0u32);
            let tt = b.mov(last);
            b.while_(
                |b| b.setp(Cmp::Gt, tt, 0u32),
                |b| {
                    let t = b.sub(tt, 1u32);
                    b.assign(tt, t);
                    let row = b.mul_lo(t, p.s);
                    let wrow = b.mul_lo(t, p.sp);
                    let is_dead = b.setp(Cmp::Ne, dead, 0u32);
                    b.if_else(
                        is_dead,
                        |b| {
                            b.for_range(tid, p.sp, nt, |b, i| {
                                let seq = [seq_bh, seq_bl, seq_rh, seq_rl, seq_w];
                                dead_back_state(b, p.s, (row, wrow), i, seq);
                            });
                            store_norm(b, tid, dn, t, dprev);
                            let t0 = b.setp(Cmp::Eq, tid, 0u32);
                            b.if_(t0, |b| {
                                let fp = b.offset(flags, t);
                                b.st_global(fp, 0, 1u32);
                            });
                        },
                        |b| {
                            backward_step(
                                b,
                                &BackStep {
                                    p: &p,
                                    qbuf: &qbuf,
                                    part: &part,
                                    red_m: &red_m,
                                    red_k: &red_k,
                                    split,
                                    s4,
                                    seq_b,
                                    seq_bh,
                                    seq_bl,
                                    seq_rh,
                                    seq_rl,
                                    seq_w,
                                    mbrow,
                                    flags,
                                    dn,
                                    amax,
                                    norm,
                                    mprime,
                                    dprev,
                                    dead,
                                },
                                t,
                            );
                        },
                    );
                },
            );
        });
    });
    b.finish()
}

/// A dead backward step's state slot `i < S16` (no path from step `t`
/// reaches the end): for `i < S` the `β̂` and `r` pairs
/// (`seq = [bh, bl, rh, rl, w]`) at `row + i` are `−inf`, and `w` at
/// `wrow + i` is `−1` (`0` past `S`). Shared by the one-CTA and the
/// cluster backward kernels.
pub(super) fn dead_back_state(
    b: &mut KernelBuilder,
    s: Reg<U32>,
    (row, wrow): (Reg<U32>, Reg<U32>),
    i: Reg<U32>,
    seq: [GlobalPtr<F32>; 5],
) {
    let [seq_bh, seq_bl, seq_rh, seq_rl, seq_w] = seq;
    let inside = b.setp(Cmp::Lt, i, s);
    b.if_(inside, |b| {
        let k = b.add(row, i);
        let ninf = pp::constant(b, f32::NEG_INFINITY, 0.0);
        st_pair(b, seq_bh, seq_bl, k, ninf);
        st_pair(b, seq_rh, seq_rl, k, ninf);
    });
    let wv = b.selp(inside, -1f32, 0f32);
    let kw = b.add(wrow, i);
    let wp = b.offset(seq_w, kw);
    b.st_global(wp, 0, wv);
}

/// Everything one live backward step uses.
struct BackStep<'a> {
    p: &'a BackwardRegs,
    qbuf: &'a SharedArray<F32>,
    part: &'a SharedArray<F32>,
    red_m: &'a Red,
    red_k: &'a Red,
    split: bool,
    s4: Reg<U32>,
    seq_b: GlobalPtr<F32>,
    seq_bh: GlobalPtr<F32>,
    seq_bl: GlobalPtr<F32>,
    seq_rh: GlobalPtr<F32>,
    seq_rl: GlobalPtr<F32>,
    seq_w: GlobalPtr<F32>,
    mbrow: GlobalPtr<F32>,
    flags: GlobalPtr<U32>,
    dn: GlobalPtr<F32>,
    amax: Reg<F32>,
    norm: DNorm,
    /// `M'_t`, from the previous step's reduction (loop-carried).
    mprime: DP,
    /// `D` after the last live step (loop-carried).
    dprev: DP,
    dead: Reg<U32>,
}

/// One live step `t` of the backward recursion (`R` row `t` holds the
/// staged `r`, `mprime` its maximum).
fn backward_step(b: &mut KernelBuilder, c: &BackStep<'_>, t: Reg<U32>) {
    let p = c.p;
    let tid = b.tid_x();
    let nt = b.ntid_x();
    let row = b.mul_lo(t, p.s);
    let wrow = b.mul_lo(t, p.sp);
    // R_t = r ⊖ M', Q = pexp(R).
    b.for_range(tid, p.s, nt, |b, j| {
        let k = b.add(row, j);
        let r = ld_pair(b, c.seq_rh, c.seq_rl, k);
        let rr = psub(b, r, c.mprime);
        st_pair(b, c.seq_rh, c.seq_rl, k, rr);
        let q = pexp(b, rr);
        let qp = b.shared_elem(c.qbuf, j);
        b.st_shared(qp, 0, q);
    });
    b.bar_sync();
    lin_phase(b, c.qbuf, p.a_til, c.part, c.s4, p.sp, c.split);
    b.bar_sync();
    let um = pp::constant(b, f32::NAN, 0.0);
    let fell_any = b.mov(0u32);
    b.for_range(tid, p.sp, nt, |b, i| {
        let kw = b.add(wrow, i);
        let wp = b.offset(c.seq_w, kw);
        let inside = b.setp(Cmp::Lt, i, p.s);
        b.if_else(
            inside,
            |b| {
                let si = lin_value(b, c.part, i, c.s4, c.split);
                let rowmax = ld_prep(b, p.prep, PREP_ROWMAX, p.sp, i);
                let arow = b.mul_lo(i, p.s);
                let term = |b: &mut KernelBuilder, j: Reg<U32>| {
                    let ai = b.add(arow, j);
                    let ap = b.offset(p.log_a, ai);
                    let la = b.ld_global(ap, 0);
                    let lr = pshift(b, la, rowmax);
                    let k = b.add(row, j);
                    let r = ld_pair(b, c.seq_rh, c.seq_rl, k);
                    padd(b, lr, r)
                };
                let (l, w, fell) = state_log(b, si, p.s, &term);
                b.st_global(wp, 0, w);
                let drow = DP {
                    h: ld_prep(b, p.prep, PREP_DROW_H, p.sp, i),
                    l: ld_prep(b, p.prep, PREP_DROW_L, p.sp, i),
                };
                let u = padd(b, l, drow);
                let k = b.add(row, i);
                st_pair(b, c.seq_bh, c.seq_bl, k, u);
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
    let (k, any) = cta_pmax(b, um, Some(fell), c.red_k);
    let any = any.expect("flag requested");
    // β̂_t = u ⊖ K; and, unless this is step 0 or the sequence is dead,
    // the next step's r = e_t + β̂_t.
    let dead_now = b.setp(Cmp::Eq, k.h, f32::NEG_INFINITY);
    let t_pos = b.setp(Cmp::Gt, t, 0u32);
    let live = b.pnot(dead_now);
    let more = b.pand(t_pos, live);
    let mbp = b.offset(c.mbrow, t);
    let mbt = b.ld_global(mbp, 0);
    let prow = b.sub(row, p.s);
    let rm = pp::constant(b, f32::NAN, 0.0);
    b.for_range(tid, p.s, nt, |b, i| {
        let k_ = b.add(row, i);
        let u = ld_pair(b, c.seq_bh, c.seq_bl, k_);
        let bh = psub(b, u, k);
        st_pair(b, c.seq_bh, c.seq_bl, k_, bh);
        b.if_(more, |b| {
            let ep = b.offset(c.seq_b, k_);
            let e = b.ld_global(ep, 0);
            let e = pshift(b, e, mbt);
            let r = padd(b, e, bh);
            let kr = b.add(prow, i);
            st_pair(b, c.seq_rh, c.seq_rl, kr, r);
            let nm = pmax2(b, rm, r);
            assign(b, rm, nm);
        });
    });
    // The normalizer sums live in thread 0 only (it stores D_t).
    let t0 = b.setp(Cmp::Eq, tid, 0u32);
    b.if_(t0, |b| {
        let t1 = b.add(t, 1u32);
        let mbn_p = b.offset(c.mbrow, t1);
        let mbn = b.ld_global(mbn_p, 0);
        let steps = [c.mprime.h, c.mprime.l, k.h, k.l];
        let d = c.norm.add_step(b, &[mbn], Some(c.amax), &steps);
        assign(b, c.dprev, d);
    });
    store_norm(b, tid, c.dn, t, c.dprev);
    b.if_(t0, |b| {
        let f: Reg<U32> = b.selp(any, 1u32, 0u32);
        let fp = b.offset(c.flags, t);
        b.st_global(fp, 0, f);
    });
    let dv: Reg<U32> = b.selp(dead_now, 1u32, 0u32);
    b.assign(c.dead, dv);
    b.if_(more, |b| {
        let (m, _) = cta_pmax(b, rm, None, c.red_m);
        assign(b, c.mprime, m);
    });
}

/// Every kernel of the family for `sm`.
pub fn variants(sm: Sm) -> Result<Vec<PtxModule>> {
    let mut v = vec![generate_prep_max(sm)?, generate_prep_exp(sm)?];
    for cap in CAPS {
        v.push(generate_forward(sm, cap)?);
        v.push(generate_backward(sm, cap)?);
    }
    if sm.supports(crate::target::Feature::Cluster) {
        for cap in CAPS.into_iter().filter(|&c| c <= SPLIT_MAX) {
            for n in CLUSTER_SIZES {
                v.push(generate_forward_cluster(sm, cap, n)?);
                v.push(generate_backward_cluster(sm, cap, n)?);
                v.push(generate_fwdbwd_cluster(sm, cap, n)?);
            }
        }
        v.push(generate_maxima(sm)?);
    }
    v.push(generate_posteriors(sm)?);
    v.push(generate_transitions(sm)?);
    Ok(v)
}
