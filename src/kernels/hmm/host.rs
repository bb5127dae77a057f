//! The host model of [`super`]: the contract in plain Rust with
//! [`crate::math`]'s exp/log (the device routines' mirrors), in the
//! kernels' exact order of operations. `a.mul_add(b, c)` is `fma.rn`;
//! Rust never contracts `a * b + c`, so every other line computes exactly
//! what it spells.

use super::pair::{Norm, P, max_of, padd, pexp, plse, pmax, pshift, psub};
use crate::error::{Error, Result};
use crate::kernels::{check, seq};
use crate::math::{exp_f32, log_f32};

/// Largest number of states.
pub const MAX_STATES: usize = 4096;
/// The linear sums' threshold: a state whose linear sum is below it (or
/// NaN) takes the exact log-space sum instead. `2^−64`.
pub const TAU: f32 = f32::from_bits(0x1f80_0000);
/// Interleaved accumulators of a linear sum (see the contract's `lin`).
pub const CHAINS: usize = 4;
/// Steps per block of the transition counts' sums over `t`.
pub const XI_BLOCK: usize = 32;
/// Lanes of the posteriors' sum over states.
pub const ROW_LANES: usize = 32;

/// The problem size: `batch` sequences of at most `t` steps over `s`
/// states. [`Shape::new`] checks the limits, so a `Shape` is always valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    batch: usize,
    t: usize,
    s: usize,
}

impl Shape {
    /// `batch` sequences, `t` positions, `s` states.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the values for `s` outside
    /// `1..=MAX_STATES` or sizes past the kernels' 32-bit indices.
    pub fn new(batch: usize, t: usize, s: usize) -> Result<Shape> {
        if s == 0 || s > MAX_STATES {
            return Err(Error::invalid(format!(
                "hmm: S = {s} states; supported are 1..={MAX_STATES}"
            )));
        }
        let sp = padded(s);
        let per_seq = t.checked_mul(sp);
        let all = per_seq.and_then(|p| p.checked_mul(batch));
        match (per_seq, all) {
            (Some(p), Some(_)) if p <= u32::MAX as usize / 2 && batch <= u32::MAX as usize / 2 => {
                Ok(Shape { batch, t, s })
            }
            _ => Err(Error::invalid(format!(
                "hmm: batch = {batch}, T = {t}, S = {s}: the sizes overflow or exceed the kernels' 32-bit indices"
            ))),
        }
    }
    /// Sequences.
    pub fn batch(&self) -> usize {
        self.batch
    }
    /// Positions per sequence (the longest length).
    pub fn t(&self) -> usize {
        self.t
    }
    /// States.
    pub fn s(&self) -> usize {
        self.s
    }
    /// `batch · T · S`: the length of `log_b`, `log_alpha`, `log_beta`,
    /// `gamma`.
    pub fn elements(&self) -> usize {
        self.batch * self.t * self.s
    }
    /// `batch · S · S`: the length of `xi`.
    pub fn xi_len(&self) -> usize {
        self.batch * self.s * self.s
    }
    /// `S` rounded up to a multiple of 16: the row stride of the kernels'
    /// padded matrices and per-step workspace.
    pub(crate) fn padded(&self) -> usize {
        padded(self.s)
    }
}

fn padded(s: usize) -> usize {
    s.div_ceil(16) * 16
}

/// The inputs of one pass: the model and the emissions of a batch.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    /// `[S]` initial log-probabilities (or start scores).
    pub log_pi: &'a [f32],
    /// `[S, S]` transition log-probabilities, `log_a[i·S + j]` from `i` to `j`.
    pub log_a: &'a [f32],
    /// `[batch, T, S]` emission log-probabilities (or label scores).
    pub log_b: &'a [f32],
    /// `[batch]` lengths, each at most `T`.
    pub lengths: &'a [u32],
}

impl Inputs<'_> {
    /// Every buffer has its shape's length and every length is at most `T`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the buffer and both lengths, or
    /// the first length above `T`.
    pub fn validate(&self, shape: Shape) -> Result<()> {
        let s = shape.s;
        check::len("hmm", "log_pi", self.log_pi.len(), s, "S")?;
        check::len("hmm", "log_a", self.log_a.len(), s * s, "S × S")?;
        check::len(
            "hmm",
            "log_b",
            self.log_b.len(),
            shape.elements(),
            "batch × T × S",
        )?;
        validate_lengths(self.lengths, shape.batch, shape.t)
    }
}

/// Everything the forward-backward pass produces for a batch.
#[derive(Debug, Clone, PartialEq)]
pub struct Posteriors {
    /// Sequences (the shape's `batch`).
    pub batch: usize,
    /// Positions per sequence (the shape's `T`).
    pub t: usize,
    /// States (the shape's `S`).
    pub s: usize,
    /// `[batch, T, S]` forward log-probabilities (`−inf` past the length).
    pub log_alpha: Vec<f32>,
    /// `[batch, T, S]` backward log-probabilities (`−inf` past the length).
    pub log_beta: Vec<f32>,
    /// `[batch]` log-likelihoods (`+0.0` for length 0).
    pub log_likelihood: Vec<f32>,
    /// `[batch, T, S]` state posteriors (`0` past the length).
    pub gamma: Vec<f32>,
    /// `[batch, S, S]` expected transition counts.
    pub xi: Vec<f32>,
}

/// How often the host model took the exact log-space fallback (one count
/// per state and step).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fallbacks {
    /// (state, step) pairs of the forward recursion (steps `t ≥ 1` it
    /// computed, none after it stopped) whose linear sum was below [`TAU`]
    /// or NaN, summed over the batch.
    pub forward: u64,
    /// The same for the backward recursion (steps `t ≤ L − 2` it
    /// computed).
    pub backward: u64,
}

/// The contract's log-sum over `v` in ascending order.
pub fn log_sum(v: impl Iterator<Item = f32> + Clone) -> f32 {
    let mut m = f32::NEG_INFINITY;
    let mut nan = false;
    for x in v.clone() {
        if x.is_nan() {
            nan = true;
        } else if x > m {
            m = x;
        }
    }
    if nan {
        return f32::NAN;
    }
    if m.is_infinite() {
        return m;
    }
    let mut s = 0f32;
    for x in v {
        s += exp_f32(x - m);
    }
    m + log_f32(s)
}

/// The contract's `lin`: `Σ_k x[k]·m(k)` in four interleaved `fma` chains
/// over `k mod 4`, combined as `(c0 + c1) + (c2 + c3)`.
pub(crate) fn lin(x: &[f32], m: impl Fn(usize) -> f32) -> f32 {
    let mut c = [0f32; CHAINS];
    for (k, &xk) in x.iter().enumerate() {
        c[k % CHAINS] = xk.mul_add(m(k), c[k % CHAINS]);
    }
    (c[0] + c[1]) + (c[2] + c[3])
}

/// Kahan summation of the transition counts' block sums.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Kahan {
    sum: f32,
    c: f32,
}

impl Kahan {
    pub(crate) fn add(&mut self, b: f32) {
        let y = b - self.c;
        let t = self.sum + y;
        self.c = (t - self.sum) - y;
        self.sum = t;
    }
}

/// Every length at most `T`, one per sequence.
pub(crate) fn validate_lengths(lengths: &[u32], batch: usize, t: usize) -> Result<()> {
    seq::validate_lengths("hmm", lengths, batch, t)
}

/// The contract's prep: maxima and shifted matrices of `log_a`.
pub(crate) struct Prep {
    pub(crate) colmax: Vec<f32>,
    pub(crate) rowmax: Vec<f32>,
    pub(crate) amax: f32,
    pub(crate) dcol: Vec<P>,
    pub(crate) drow: Vec<P>,
    /// `Â`, `Ã` (row-major `[i][j]`).
    pub(crate) a_hat: Vec<f32>,
    pub(crate) a_til: Vec<f32>,
}

impl Prep {
    /// `lc[i][j] = log_a[i][j] ⊖ colmax_j`.
    pub(crate) fn lc(&self, log_a: &[f32], s: usize, i: usize, j: usize) -> P {
        pshift(log_a[i * s + j], self.colmax[j])
    }
    /// `lr[i][j] = log_a[i][j] ⊖ rowmax_i`.
    pub(crate) fn lr(&self, log_a: &[f32], s: usize, i: usize, j: usize) -> P {
        pshift(log_a[i * s + j], self.rowmax[i])
    }
}

pub(crate) fn prep(log_a: &[f32], s: usize) -> Prep {
    let colmax: Vec<f32> = (0..s)
        .map(|j| max_of((0..s).map(|i| log_a[i * s + j])))
        .collect();
    let rowmax: Vec<f32> = (0..s)
        .map(|i| max_of(log_a[i * s..(i + 1) * s].iter().copied()))
        .collect();
    let amax = max_of(colmax.iter().copied());
    let mut p = Prep {
        dcol: colmax.iter().map(|&c| pshift(c, amax)).collect(),
        drow: rowmax.iter().map(|&r| pshift(r, amax)).collect(),
        colmax,
        rowmax,
        amax,
        a_hat: vec![0f32; s * s],
        a_til: vec![0f32; s * s],
    };
    for i in 0..s {
        for j in 0..s {
            p.a_hat[i * s + j] = pexp(p.lc(log_a, s, i, j));
            p.a_til[i * s + j] = pexp(p.lr(log_a, s, i, j));
        }
    }
    p
}

/// The forward pass of one sequence (`lb`: its `L` rows of `S`).
pub(crate) struct Fwd {
    /// `[L, S]` normalized log-alpha pairs.
    pub(crate) ahat: Vec<P>,
    /// `[L]` the compensated running normalizer `C_t` (a pair).
    pub(crate) c: Vec<P>,
    /// `[L]` emission maxima `Mb_t`.
    pub(crate) mb: Vec<f32>,
    pub(crate) ll: f32,
    pub(crate) fallbacks: u64,
}

/// The state's log of its linear sum, or the exact fallback log-sum (and
/// then `σ`, negated, for the transition counts).
fn state_log(s_lin: f32, terms: impl FnOnce() -> Vec<P>) -> (P, f32, bool) {
    if s_lin >= TAU {
        (P::of(log_f32(s_lin)), s_lin, false)
    } else {
        let (v, _, sigma) = plse(&terms());
        (v, sigma, true)
    }
}

// Index loops mirror the contract's subscripts.
#[allow(clippy::needless_range_loop)]
pub(crate) fn forward_seq(p: &Prep, log_a: &[f32], log_pi: &[f32], lb: &[f32], s: usize) -> Fwd {
    let l = lb.len() / s;
    let row = |t: usize| &lb[t * s..(t + 1) * s];
    let mb: Vec<f32> = (0..l).map(|t| max_of(row(t).iter().copied())).collect();
    let mut ahat = vec![P::NEG_INF; l * s];
    let mut c = vec![P::of(0.0); l];
    let mut acc = Norm::default();
    let mut fallbacks = 0;
    let mpi = max_of(log_pi.iter().copied());
    let x: Vec<P> = (0..s)
        .map(|j| padd(pshift(log_pi[j], mpi), pshift(row(0)[j], mb[0])))
        .collect();
    let m = pmax(x.iter().copied());
    for j in 0..s {
        ahat[j] = psub(x[j], m);
    }
    acc.maxima.add(mpi);
    acc.maxima.add(mb[0]);
    acc.steps.add(m.h);
    acc.steps.add(m.l);
    c[0] = acc.value();
    let mut dead = m.h == f32::NEG_INFINITY;
    let mut x = vec![P::NEG_INF; s];
    for t in 1..l {
        if dead {
            c[t] = c[t - 1];
            continue;
        }
        let (done, rest) = ahat.split_at_mut(t * s);
        let prev = &done[(t - 1) * s..];
        let pl: Vec<f32> = prev.iter().map(|&a| pexp(a)).collect();
        for j in 0..s {
            let sj = lin(&pl, |i| p.a_hat[i * s + j]);
            let (lj, _, fell) = state_log(sj, || {
                (0..s)
                    .map(|i| padd(prev[i], p.lc(log_a, s, i, j)))
                    .collect()
            });
            fallbacks += u64::from(fell);
            x[j] = padd(padd(lj, p.dcol[j]), pshift(row(t)[j], mb[t]));
        }
        let m = pmax(x.iter().copied());
        for j in 0..s {
            rest[j] = psub(x[j], m);
        }
        acc.maxima.add(mb[t]);
        acc.amax.add(p.amax);
        acc.steps.add(m.h);
        acc.steps.add(m.l);
        c[t] = acc.value();
        dead = m.h == f32::NEG_INFINITY;
    }
    let last = &ahat[(l - 1) * s..];
    let mut z = 0f32;
    for &a in last {
        z += pexp(a);
    }
    acc.steps.add(log_f32(z));
    Fwd {
        ahat,
        c,
        mb,
        ll: acc.value().h,
        fallbacks,
    }
}

/// The backward pass of one sequence.
pub(crate) struct Bwd {
    /// `[L, S]` normalized log-beta pairs.
    pub(crate) bhat: Vec<P>,
    /// `[L]` the compensated normalizer `D_t` (a pair).
    pub(crate) d: Vec<P>,
    /// `[L−1, S]` `R_t[j]`.
    pub(crate) r: Vec<P>,
    /// `[L−1, S]` per state `i` of step `t`: `s_i`, or `−σ_i` for a
    /// fallback state.
    pub(crate) w: Vec<f32>,
    pub(crate) fallbacks: u64,
}

// Index loops mirror the contract's subscripts.
#[allow(clippy::needless_range_loop)]
pub(crate) fn backward_seq(p: &Prep, log_a: &[f32], lb: &[f32], mb: &[f32], s: usize) -> Bwd {
    let l = lb.len() / s;
    let steps = l.saturating_sub(1);
    let mut out = Bwd {
        bhat: vec![P::NEG_INF; l * s],
        d: vec![P::of(0.0); l],
        r: vec![P::NEG_INF; steps * s],
        w: vec![-1.0; steps * s],
        fallbacks: 0,
    };
    if l == 0 {
        return out;
    }
    out.bhat[(l - 1) * s..].fill(P::of(0.0));
    let mut acc = Norm::default();
    let mut dead = false;
    let mut q = vec![0f32; s];
    let mut u = vec![P::NEG_INF; s];
    for t in (0..steps).rev() {
        if dead {
            out.d[t] = out.d[t + 1];
            continue;
        }
        let next = &lb[(t + 1) * s..(t + 2) * s];
        let r: Vec<P> = (0..s)
            .map(|j| padd(pshift(next[j], mb[t + 1]), out.bhat[(t + 1) * s + j]))
            .collect();
        let mm = pmax(r.iter().copied());
        let rt = &mut out.r[t * s..(t + 1) * s];
        for j in 0..s {
            rt[j] = psub(r[j], mm);
            q[j] = pexp(rt[j]);
        }
        for i in 0..s {
            let si = lin(&q, |j| p.a_til[i * s + j]);
            let (li, sigma, fell) = state_log(si, || {
                (0..s).map(|j| padd(p.lr(log_a, s, i, j), rt[j])).collect()
            });
            out.fallbacks += u64::from(fell);
            out.w[t * s + i] = if fell { -sigma } else { sigma };
            u[i] = padd(li, p.drow[i]);
        }
        let k = pmax(u.iter().copied());
        for i in 0..s {
            out.bhat[t * s + i] = psub(u[i], k);
        }
        acc.maxima.add(mb[t + 1]);
        acc.amax.add(p.amax);
        for term in [mm.h, mm.l, k.h, k.l] {
            acc.steps.add(term);
        }
        out.d[t] = acc.value();
        dead = k.h == f32::NEG_INFINITY;
    }
    out
}

/// The posteriors' sum over states: lanes `k = i mod 32` ascending, then
/// the halving tree.
pub(crate) fn row_sum(v: impl Iterator<Item = f32>) -> f32 {
    let mut z = [0f32; ROW_LANES];
    for (i, x) in v.enumerate() {
        z[i % ROW_LANES] += x;
    }
    let mut off = ROW_LANES / 2;
    while off > 0 {
        for k in 0..off {
            z[k] += z[k + off];
        }
        off /= 2;
    }
    z[0]
}

/// `gamma_t` of one row from `â_t` and `β̂_t`.
pub(crate) fn gamma_row(ahat: &[P], bhat: &[P], out: &mut [f32]) {
    let w: Vec<P> = ahat.iter().zip(bhat).map(|(&a, &b)| padd(a, b)).collect();
    let m = pmax(w.iter().copied());
    let e: Vec<f32> = w.iter().map(|&x| pexp(psub(x, m))).collect();
    let z = row_sum(e.iter().copied());
    for (o, &x) in out.iter_mut().zip(&e) {
        *o = x / z;
    }
}

/// The transition-count terms `y` of a fallback state `i` at a step whose
/// `R` row is `r`: `pexp((lr[i][j] + R_j) ⊖ M_i)` for every `j`.
pub(crate) fn fallback_y(p: &Prep, log_a: &[f32], s: usize, i: usize, r: &[P]) -> Vec<f32> {
    let terms: Vec<P> = (0..s).map(|k| padd(p.lr(log_a, s, i, k), r[k])).collect();
    let m = pmax(terms.iter().copied());
    terms.iter().map(|&x| pexp(psub(x, m))).collect()
}

/// One sequence's `xi` (`[S, S]`) from its backward records and `gamma`
/// rows: per block of [`XI_BLOCK`] steps a linear chain `L = fma(x,
/// Q_t[j], L)` over its linear states' steps, `Ã[i][j]·L` Kahan-added at
/// the block's end; a fallback state's term `x·y` Kahan-added at its step
/// (the [module contract](super)).
fn xi_seq(p: &Prep, log_a: &[f32], bw: &Bwd, gamma: &[f32], s: usize, out: &mut [f32]) {
    let steps = bw.r.len() / s;
    let q: Vec<f32> = bw.r.iter().map(|&r| pexp(r)).collect();
    // x per (t, i), and for fallback states with x ≠ 0 their y row.
    let mut x = vec![0f32; steps * s];
    let mut ys: Vec<Option<Vec<f32>>> = vec![None; steps * s];
    for t in 0..steps {
        let r = &bw.r[t * s..(t + 1) * s];
        for i in 0..s {
            let w = bw.w[t * s + i];
            let xi = gamma[t * s + i] / w.abs();
            x[t * s + i] = xi;
            if w.is_sign_negative() && xi != 0.0 {
                ys[t * s + i] = Some(fallback_y(p, log_a, s, i, r));
            }
        }
    }
    for i in 0..s {
        for j in 0..s {
            let a = p.a_til[i * s + j];
            let mut sum = Kahan::default();
            let mut lin = 0f32;
            for t in 0..steps {
                let k = t * s + i;
                if bw.w[k].is_sign_negative() {
                    // A fallback state: its term at once (none where x = 0).
                    if let Some(row) = &ys[k] {
                        sum.add(x[k] * row[j]);
                    }
                } else {
                    lin = x[k].mul_add(q[t * s + j], lin);
                }
                if (t + 1) % XI_BLOCK == 0 || t + 1 == steps {
                    sum.add(a * lin);
                    lin = 0.0;
                }
            }
            out[i * s + j] = sum.sum;
        }
    }
}

/// `log_alpha` / `log_beta` rows: `(h + C.h) + (l + C.l)`.
fn fill_shifted(out: &mut [f32], norm: &[P], shift: &[P], s: usize) {
    for (t, (o, n)) in out.chunks_mut(s).zip(norm.chunks(s)).enumerate() {
        let c = shift[t];
        for (o, n) in o.iter_mut().zip(n) {
            *o = (n.h + c.h) + (n.l + c.l);
        }
    }
}

/// Forward pass: `log_alpha` and the log-likelihoods.
///
/// # Errors
/// As [`forward_backward`].
pub fn forward(shape: Shape, inp: &Inputs<'_>) -> Result<(Vec<f32>, Vec<f32>)> {
    inp.validate(shape)?;
    let (t, s) = (shape.t, shape.s);
    let p = prep(inp.log_a, s);
    let mut alpha = vec![f32::NEG_INFINITY; shape.elements()];
    let mut ll = vec![0f32; shape.batch];
    for (b, &len) in inp.lengths.iter().enumerate() {
        let len = len as usize;
        if len == 0 {
            continue;
        }
        let base = b * t * s;
        let f = forward_seq(
            &p,
            inp.log_a,
            inp.log_pi,
            &inp.log_b[base..base + len * s],
            s,
        );
        fill_shifted(&mut alpha[base..base + len * s], &f.ahat, &f.c, s);
        ll[b] = f.ll;
    }
    Ok((alpha, ll))
}

/// Backward pass: `log_beta`.
///
/// # Errors
/// As [`forward_backward`].
pub fn backward(shape: Shape, inp: &Inputs<'_>) -> Result<Vec<f32>> {
    inp.validate(shape)?;
    let (t, s) = (shape.t, shape.s);
    let p = prep(inp.log_a, s);
    let mut beta = vec![f32::NEG_INFINITY; shape.elements()];
    for (b, &len) in inp.lengths.iter().enumerate() {
        let len = len as usize;
        if len == 0 {
            continue;
        }
        let base = b * t * s;
        let lb = &inp.log_b[base..base + len * s];
        let mb: Vec<f32> = lb.chunks(s).map(|r| max_of(r.iter().copied())).collect();
        let bw = backward_seq(&p, inp.log_a, lb, &mb, s);
        fill_shifted(&mut beta[base..base + len * s], &bw.bhat, &bw.d, s);
    }
    Ok(beta)
}

/// The whole forward-backward pass (see the [module contract](super)).
///
/// # Errors
/// [`Error::InvalidArgument`] naming the values for a buffer whose length
/// does not match `shape` or a length above `T`.
pub fn forward_backward(shape: Shape, inp: &Inputs<'_>) -> Result<Posteriors> {
    forward_backward_counted(shape, inp).map(|(p, _)| p)
}

/// [`forward_backward`] and how many states took the exact log-space
/// fallback.
///
/// # Errors
/// As [`forward_backward`].
pub fn forward_backward_counted(shape: Shape, inp: &Inputs<'_>) -> Result<(Posteriors, Fallbacks)> {
    inp.validate(shape)?;
    let (t, s) = (shape.t, shape.s);
    let p = prep(inp.log_a, s);
    let n = shape.elements();
    let mut out = Posteriors {
        batch: shape.batch,
        t,
        s,
        log_alpha: vec![f32::NEG_INFINITY; n],
        log_beta: vec![f32::NEG_INFINITY; n],
        log_likelihood: vec![0f32; shape.batch],
        gamma: vec![0f32; n],
        xi: vec![0f32; shape.xi_len()],
    };
    let mut fb = Fallbacks::default();
    for (b, &len) in inp.lengths.iter().enumerate() {
        let len = len as usize;
        if len == 0 {
            continue;
        }
        let base = b * t * s;
        let live = base..base + len * s;
        let lb = &inp.log_b[live.clone()];
        let f = forward_seq(&p, inp.log_a, inp.log_pi, lb, s);
        let bw = backward_seq(&p, inp.log_a, lb, &f.mb, s);
        fb.forward += f.fallbacks;
        fb.backward += bw.fallbacks;
        out.log_likelihood[b] = f.ll;
        fill_shifted(&mut out.log_alpha[live.clone()], &f.ahat, &f.c, s);
        fill_shifted(&mut out.log_beta[live.clone()], &bw.bhat, &bw.d, s);
        let g = &mut out.gamma[live];
        for tt in 0..len {
            let r = tt * s..(tt + 1) * s;
            gamma_row(&f.ahat[r.clone()], &bw.bhat[r.clone()], &mut g[r]);
        }
        xi_seq(
            &p,
            inp.log_a,
            &bw,
            g,
            s,
            &mut out.xi[b * s * s..(b + 1) * s * s],
        );
    }
    Ok((out, fb))
}
