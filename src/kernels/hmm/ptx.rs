//! The kernels of [`super`], one CTA per sequence each:
//!
//! | kernel | threads stride over | does |
//! |---|---|---|
//! | `hmm_forward_cap<c>` | states `j` | `log_alpha` row by row through a shared double buffer, then the log-likelihood (thread 0) |
//! | `hmm_backward_cap<c>` | states `i` | `log_beta` from the last position back |
//! | `hmm_posteriors` | positions × states | `gamma = exp(alpha + beta − ll)` |
//! | `hmm_transitions` | state pairs `(i, j)` | `xi[i][j] = Σ_t exp(alpha_t[i] + a[i][j] + b_{t+1}[j] + beta_{t+1}[j] − ll)`, `t` ascending |
//!
//! Every log-sum is [`log_sum`]: a max pass and a sum pass over the terms
//! in ascending order, exactly as the host model's
//! [`log_sum`](super::host::log_sum).

use crate::dsl::math;
use crate::dsl::params::Ptr;
use crate::dsl::types::{F32, Reg, U32};
use crate::dsl::{Cmp, GlobalPtr, KernelBuilder, PtxModule, Rounding};
use crate::error::Result;
use crate::kernel_params;
use crate::kernels::seq::{first_row, seq_cta, zero_if_empty};
use crate::kernels::viterbi::ptx::CAPS;
use crate::target::Sm;

pub use crate::kernels::viterbi::ptx::cap_for;

/// Threads per CTA.
pub const THREADS: u32 = 256;

kernel_params! {
    /// Arguments of `hmm_forward_cap<c>`.
    pub struct ForwardArgs => ForwardRegs {
        log_pi: Ptr<F32>,
        log_a: Ptr<F32>,
        log_b: Ptr<F32>,
        lengths: Ptr<U32>,
        alpha: Ptr<F32>,
        ll: Ptr<F32>,
        t: U32,
        s: U32,
    }
}

kernel_params! {
    /// Arguments of `hmm_backward_cap<c>`.
    pub struct BackwardArgs => BackwardRegs {
        log_a: Ptr<F32>,
        log_b: Ptr<F32>,
        lengths: Ptr<U32>,
        beta: Ptr<F32>,
        t: U32,
        s: U32,
    }
}

kernel_params! {
    /// Arguments of `hmm_posteriors` and `hmm_transitions`.
    pub struct PostArgs => PostRegs {
        log_a: Ptr<F32>,
        log_b: Ptr<F32>,
        lengths: Ptr<U32>,
        alpha: Ptr<F32>,
        beta: Ptr<F32>,
        ll: Ptr<F32>,
        out: Ptr<F32>,
        t: U32,
        s: U32,
    }
}

/// The contract's log-sum of `term(i)` for `i = 0 … n−1`: NaN if any term
/// is NaN; else `m` = the largest term (strict `>` in ascending order);
/// `±inf` when `m` is; else `m + log(Σ exp(term(i) − m))`, summed in
/// ascending order. `term` is evaluated twice per `i` (same values).
pub fn log_sum(
    b: &mut KernelBuilder,
    n: Reg<U32>,
    term: &dyn Fn(&mut KernelBuilder, Reg<U32>) -> Reg<F32>,
) -> Reg<F32> {
    let m = b.mov(f32::NEG_INFINITY);
    let nan = b.mov(0u32);
    b.for_range(0u32, n, 1u32, |b, i| {
        let v = term(b, i);
        let take = b.setp(Cmp::Gt, v, m);
        let nm = b.selp(take, v, m);
        b.assign(m, nm);
        let is_nan = b.setp(Cmp::Nan, v, v);
        let nf = b.selp(is_nan, 1u32, nan);
        b.assign(nan, nf);
    });
    let sum = b.mov(0f32);
    b.for_range(0u32, n, 1u32, |b, i| {
        let v = term(b, i);
        let d = b.fsub(Rounding::Rn, v, m);
        let e = math::exp(b, d);
        let ns = b.fadd(Rounding::Rn, sum, e);
        b.assign(sum, ns);
    });
    let lg = math::log(b, sum);
    let r = b.fadd(Rounding::Rn, m, lg);
    let am = b.fabs(m);
    let inf = b.setp(Cmp::Eq, am, f32::INFINITY);
    let r = b.selp(inf, m, r);
    let any_nan = b.setp(Cmp::Ne, nan, 0u32);
    b.selp(any_nan, f32::NAN, r)
}

fn builder(name: &str, sm: Sm) -> KernelBuilder {
    let mut b = KernelBuilder::new(name, sm);
    b.maxntid(THREADS, 1, 1);
    // As for Viterbi: without it ptxas caps sm_70 at 32 registers.
    b.min_ctas_per_sm(1);
    b
}

/// The entry name of the forward pass with a `2 · cap` shared buffer.
pub fn forward_name(cap: u32) -> String {
    format!("hmm_forward_cap{cap}")
}

/// The entry name of the backward pass with a `2 · cap` shared buffer.
pub fn backward_name(cap: u32) -> String {
    format!("hmm_backward_cap{cap}")
}

/// Fill positions `len ..` of a sequence's `[T, S]` rows with `v`.
fn fill_tail(
    b: &mut KernelBuilder,
    base: GlobalPtr<F32>,
    len: Reg<U32>,
    t: Reg<U32>,
    s: Reg<U32>,
    v: f32,
) {
    let tid = b.tid_x();
    let nt = b.ntid_x();
    let from = b.mul_lo(len, s);
    let start = b.add(from, tid);
    let end = b.mul_lo(t, s);
    b.for_range(start, end, nt, |b, k| {
        let p = b.offset(base, k);
        b.st_global(p, 0, v);
    });
}

/// The forward pass.
pub fn generate_forward(sm: Sm, cap: u32) -> Result<PtxModule> {
    let mut b = builder(&forward_name(cap), sm);
    let p = b.params::<ForwardArgs>();
    let buf = b.shared_array::<F32>("alpha_rows", 2 * cap, 16);
    let c = seq_cta(&mut b, p.lengths, p.t, p.s);
    let (seq, tid, nt, len, zero_tid) = (c.seq, c.tid, c.nt, c.len, c.first_thread);
    let seq_b = b.offset64(p.log_b, c.base);
    let seq_alpha = b.offset64(p.alpha, c.base);
    fill_tail(&mut b, seq_alpha, len, p.t, p.s, f32::NEG_INFINITY);
    let nonempty = zero_if_empty(&mut b, &c, p.ll);
    b.if_(nonempty, |b| {
        first_row(b, &c, p.s, p.log_pi, seq_b, &buf, Some(seq_alpha));
        b.for_range(1u32, len, 1u32, |b, tt| {
            let par = b.and(tt, 1u32);
            let next_off = b.mul_lo(par, cap);
            let cur_off = b.sub(cap, next_off);
            let row = b.mul_lo(tt, p.s);
            b.for_range(tid, p.s, nt, |b, j| {
                let term = |b: &mut KernelBuilder, i: Reg<U32>| {
                    let ci = b.add(cur_off, i);
                    let cp = b.shared_elem(&buf, ci);
                    let prev = b.ld_shared(cp, 0);
                    let ij = b.mad_lo(i, p.s, j);
                    let ap = b.offset(p.log_a, ij);
                    let a = b.ld_global(ap, 0);
                    b.fadd(Rounding::Rn, prev, a)
                };
                let v = log_sum(b, p.s, &term);
                let k = b.add(row, j);
                let ep = b.offset(seq_b, k);
                let e = b.ld_global(ep, 0);
                let alpha = b.fadd(Rounding::Rn, v, e);
                let nj = b.add(next_off, j);
                let np = b.shared_elem(&buf, nj);
                b.st_shared(np, 0, alpha);
                let gp = b.offset(seq_alpha, k);
                b.st_global(gp, 0, alpha);
            });
            b.bar_sync();
        });
        b.if_(zero_tid, |b| {
            let last = b.sub(len, 1u32);
            let par = b.and(last, 1u32);
            let off = b.mul_lo(par, cap);
            let term = |b: &mut KernelBuilder, j: Reg<U32>| {
                let k = b.add(off, j);
                let sp = b.shared_elem(&buf, k);
                b.ld_shared(sp, 0)
            };
            let ll = log_sum(b, p.s, &term);
            let lp = b.offset(p.ll, seq);
            b.st_global(lp, 0, ll);
        });
    });
    b.finish()
}

/// The backward pass.
pub fn generate_backward(sm: Sm, cap: u32) -> Result<PtxModule> {
    let mut b = builder(&backward_name(cap), sm);
    let p = b.params::<BackwardArgs>();
    let buf = b.shared_array::<F32>("beta_rows", 2 * cap, 16);
    let c = seq_cta(&mut b, p.lengths, p.t, p.s);
    let (tid, nt, len) = (c.tid, c.nt, c.len);
    let seq_b = b.offset64(p.log_b, c.base);
    let seq_beta = b.offset64(p.beta, c.base);
    fill_tail(&mut b, seq_beta, len, p.t, p.s, f32::NEG_INFINITY);
    let nonempty = b.setp(Cmp::Ne, len, 0u32);
    b.if_(nonempty, |b| {
        // beta_{L−1} = 0, kept at parity (L−1) & 1.
        let last = b.sub(len, 1u32);
        let lpar = b.and(last, 1u32);
        let loff = b.mul_lo(lpar, cap);
        let lrow = b.mul_lo(last, p.s);
        b.for_range(tid, p.s, nt, |b, i| {
            let k = b.add(loff, i);
            let sp = b.shared_elem(&buf, k);
            b.st_shared(sp, 0, 0f32);
            let g = b.add(lrow, i);
            let gp = b.offset(seq_beta, g);
            b.st_global(gp, 0, 0f32);
        });
        b.bar_sync();
        // for tt = L−2 down to 0: row tt+1 at parity (tt+1)&1, row tt at tt&1.
        let tt = b.mov(last);
        b.while_(
            |b| b.setp(Cmp::Gt, tt, 0u32),
            |b| {
                let next_row = b.mov(tt);
                let t1 = b.sub(tt, 1u32);
                b.assign(tt, t1);
                let npar = b.and(next_row, 1u32);
                let noff = b.mul_lo(npar, cap);
                let coff = b.sub(cap, noff);
                let nrow = b.mul_lo(next_row, p.s);
                let crow = b.mul_lo(tt, p.s);
                b.for_range(tid, p.s, nt, |b, i| {
                    let term = |b: &mut KernelBuilder, j: Reg<U32>| {
                        let ij = b.mad_lo(i, p.s, j);
                        let ap = b.offset(p.log_a, ij);
                        let a = b.ld_global(ap, 0);
                        let k = b.add(nrow, j);
                        let ep = b.offset(seq_b, k);
                        let e = b.ld_global(ep, 0);
                        let nk = b.add(noff, j);
                        let np = b.shared_elem(&buf, nk);
                        let nb = b.ld_shared(np, 0);
                        let ae = b.fadd(Rounding::Rn, a, e);
                        b.fadd(Rounding::Rn, ae, nb)
                    };
                    let v = log_sum(b, p.s, &term);
                    let ck = b.add(coff, i);
                    let cp = b.shared_elem(&buf, ck);
                    b.st_shared(cp, 0, v);
                    let g = b.add(crow, i);
                    let gp = b.offset(seq_beta, g);
                    b.st_global(gp, 0, v);
                });
                b.bar_sync();
            },
        );
    });
    b.finish()
}

/// `gamma = exp(alpha + beta − ll)` at positions `< len`, `0` after.
pub fn generate_posteriors(sm: Sm) -> Result<PtxModule> {
    let mut b = builder("hmm_posteriors", sm);
    let p = b.params::<PostArgs>();
    let c = seq_cta(&mut b, p.lengths, p.t, p.s);
    let (tid, nt, len, ts, base) = (c.tid, c.nt, c.len, c.ts, c.base);
    let llp = b.offset(p.ll, c.seq);
    let ll = b.ld_global(llp, 0);
    let seq_alpha = b.offset64(p.alpha, base);
    let seq_beta = b.offset64(p.beta, base);
    let seq_out = b.offset64(p.out, base);
    let live = b.mul_lo(len, p.s);
    b.for_range(tid, ts, nt, |b, k| {
        let ap = b.offset(seq_alpha, k);
        let a = b.ld_global(ap, 0);
        let bp = b.offset(seq_beta, k);
        let be = b.ld_global(bp, 0);
        let ab = b.fadd(Rounding::Rn, a, be);
        let d = b.fsub(Rounding::Rn, ab, ll);
        let g = math::exp(b, d);
        let inside = b.setp(Cmp::Lt, k, live);
        let v = b.selp(inside, g, 0f32);
        let op = b.offset(seq_out, k);
        b.st_global(op, 0, v);
    });
    b.finish()
}

/// Expected transition counts, `t` ascending per pair.
pub fn generate_transitions(sm: Sm) -> Result<PtxModule> {
    let mut b = builder("hmm_transitions", sm);
    let p = b.params::<PostArgs>();
    let c = seq_cta(&mut b, p.lengths, p.t, p.s);
    let (seq, tid, nt, len, base) = (c.seq, c.tid, c.nt, c.len, c.base);
    let llp = b.offset(p.ll, seq);
    let ll = b.ld_global(llp, 0);
    let seq_alpha = b.offset64(p.alpha, base);
    let seq_beta = b.offset64(p.beta, base);
    let seq_b = b.offset64(p.log_b, base);
    let ss = b.mul_lo(p.s, p.s);
    let obase = b.mul_wide_u32(seq, ss);
    let seq_out = b.offset64(p.out, obase);
    let steps = b.max(len, 1u32);
    let steps = b.sub(steps, 1u32);
    b.for_range(tid, ss, nt, |b, ij| {
        let i = b.div(ij, p.s);
        let j = b.rem(ij, p.s);
        let ap = b.offset(p.log_a, ij);
        let a = b.ld_global(ap, 0);
        let acc = b.mov(0f32);
        b.for_range(0u32, steps, 1u32, |b, tt| {
            let row = b.mul_lo(tt, p.s);
            let ai = b.add(row, i);
            let alp = b.offset(seq_alpha, ai);
            let al = b.ld_global(alp, 0);
            let nrow = b.add(row, p.s);
            let nj = b.add(nrow, j);
            let ep = b.offset(seq_b, nj);
            let e = b.ld_global(ep, 0);
            let bp = b.offset(seq_beta, nj);
            let be = b.ld_global(bp, 0);
            let v1 = b.fadd(Rounding::Rn, al, a);
            let v2 = b.fadd(Rounding::Rn, v1, e);
            let v3 = b.fadd(Rounding::Rn, v2, be);
            let v4 = b.fsub(Rounding::Rn, v3, ll);
            let x = math::exp(b, v4);
            let na = b.fadd(Rounding::Rn, acc, x);
            b.assign(acc, na);
        });
        let op = b.offset(seq_out, ij);
        b.st_global(op, 0, acc);
    });
    b.finish()
}

/// Every kernel of the family for `sm`.
pub fn variants(sm: Sm) -> Result<Vec<PtxModule>> {
    let mut v = Vec::new();
    for cap in CAPS {
        v.push(generate_forward(sm, cap)?);
        v.push(generate_backward(sm, cap)?);
    }
    v.push(generate_posteriors(sm)?);
    v.push(generate_transitions(sm)?);
    Ok(v)
}
