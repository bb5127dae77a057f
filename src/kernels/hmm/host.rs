//! The host model of [`super`]: the contract in plain Rust with
//! [`crate::math`]'s exp/log (the device routines' mirrors), in the
//! kernels' exact order of operations.

use crate::error::{Error, Result};
use crate::kernels::seq;
use crate::math::{exp_f32, log_f32};

/// Largest number of states (two rows of `S` scores in shared memory).
pub const MAX_STATES: usize = 4096;

/// Everything the forward-backward pass produces for a batch.
#[derive(Debug, Clone, PartialEq)]
pub struct Posteriors {
    pub batch: usize,
    pub t: usize,
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

/// `got` must be `want` (see [`crate::kernels::seq::expect_len`]).
pub(crate) fn expect(what: &str, got: usize, want: usize, shape: &str) -> Result<()> {
    seq::expect_len("hmm", what, got, want, shape)
}

/// Shape rules: `1 ≤ S ≤ MAX_STATES`, products without overflow, 32-bit
/// indices within a sequence.
pub fn validate_shape(batch: usize, t: usize, s: usize) -> Result<()> {
    if s == 0 || s > MAX_STATES {
        return Err(Error::invalid(format!(
            "hmm: S = {s} states; supported are 1..={MAX_STATES}"
        )));
    }
    let per_seq = t.checked_mul(s);
    let all = per_seq.and_then(|p| p.checked_mul(batch));
    match (per_seq, all) {
        (Some(p), Some(_)) if p <= u32::MAX as usize / 2 && batch <= u32::MAX as usize / 2 => {
            Ok(())
        }
        _ => Err(Error::invalid(format!(
            "hmm: batch = {batch}, T = {t}, S = {s}: the sizes overflow or exceed the kernels' 32-bit indices"
        ))),
    }
}

/// Every length at most `T`, one per sequence.
pub fn validate_lengths(lengths: &[u32], batch: usize, t: usize) -> Result<()> {
    seq::validate_lengths("hmm", lengths, batch, t)
}

/// All input checks.
pub fn validate(
    log_pi: &[f32],
    log_a: &[f32],
    log_b: &[f32],
    lengths: &[u32],
    batch: usize,
    t: usize,
    s: usize,
) -> Result<()> {
    validate_shape(batch, t, s)?;
    expect("log_pi", log_pi.len(), s, "S")?;
    expect("log_a", log_a.len(), s * s, "S × S")?;
    expect("log_b", log_b.len(), batch * t * s, "batch × T × S")?;
    validate_lengths(lengths, batch, t)
}

/// Forward pass: `log_alpha` and the log-likelihoods.
#[allow(clippy::too_many_arguments)]
pub fn forward(
    log_pi: &[f32],
    log_a: &[f32],
    log_b: &[f32],
    lengths: &[u32],
    batch: usize,
    t: usize,
    s: usize,
) -> Result<(Vec<f32>, Vec<f32>)> {
    validate(log_pi, log_a, log_b, lengths, batch, t, s)?;
    let mut alpha = vec![f32::NEG_INFINITY; batch * t * s];
    let mut ll = vec![0f32; batch];
    for b in 0..batch {
        let len = lengths[b] as usize;
        if len == 0 {
            continue;
        }
        let row = |tt: usize| (b * t + tt) * s;
        for j in 0..s {
            alpha[row(0) + j] = log_pi[j] + log_b[row(0) + j];
        }
        for tt in 1..len {
            for j in 0..s {
                let prev = &alpha[row(tt - 1)..row(tt - 1) + s];
                let v = log_sum((0..s).map(|i| prev[i] + log_a[i * s + j]));
                alpha[row(tt) + j] = v + log_b[row(tt) + j];
            }
        }
        ll[b] = log_sum(alpha[row(len - 1)..row(len - 1) + s].iter().copied());
    }
    Ok((alpha, ll))
}

/// Backward pass: `log_beta`.
#[allow(clippy::too_many_arguments)]
pub fn backward(
    log_a: &[f32],
    log_b: &[f32],
    lengths: &[u32],
    batch: usize,
    t: usize,
    s: usize,
) -> Result<Vec<f32>> {
    validate_shape(batch, t, s)?;
    expect("log_a", log_a.len(), s * s, "S × S")?;
    expect("log_b", log_b.len(), batch * t * s, "batch × T × S")?;
    validate_lengths(lengths, batch, t)?;
    let mut beta = vec![f32::NEG_INFINITY; batch * t * s];
    for (b, &len) in lengths.iter().enumerate() {
        let len = len as usize;
        if len == 0 {
            continue;
        }
        let row = |tt: usize| (b * t + tt) * s;
        beta[row(len - 1)..row(len - 1) + s].fill(0.0);
        for tt in (0..len - 1).rev() {
            for i in 0..s {
                let next = &beta[row(tt + 1)..row(tt + 1) + s];
                let emit = &log_b[row(tt + 1)..row(tt + 1) + s];
                beta[row(tt) + i] = log_sum((0..s).map(|j| log_a[i * s + j] + emit[j] + next[j]));
            }
        }
    }
    Ok(beta)
}

/// The whole forward-backward pass (see the [module contract](super)).
#[allow(clippy::too_many_arguments)]
pub fn forward_backward(
    log_pi: &[f32],
    log_a: &[f32],
    log_b: &[f32],
    lengths: &[u32],
    batch: usize,
    t: usize,
    s: usize,
) -> Result<Posteriors> {
    let (alpha, ll) = forward(log_pi, log_a, log_b, lengths, batch, t, s)?;
    let beta = backward(log_a, log_b, lengths, batch, t, s)?;
    let mut gamma = vec![0f32; batch * t * s];
    let mut xi = vec![0f32; batch * s * s];
    for (b, &len) in lengths.iter().enumerate() {
        let len = len as usize;
        let row = |tt: usize| (b * t + tt) * s;
        for tt in 0..len {
            for i in 0..s {
                let k = row(tt) + i;
                gamma[k] = exp_f32(alpha[k] + beta[k] - ll[b]);
            }
        }
        for i in 0..s {
            for j in 0..s {
                let mut acc = 0f32;
                for tt in 0..len.saturating_sub(1) {
                    let v = alpha[row(tt) + i]
                        + log_a[i * s + j]
                        + log_b[row(tt + 1) + j]
                        + beta[row(tt + 1) + j]
                        - ll[b];
                    acc += exp_f32(v);
                }
                xi[(b * s + i) * s + j] = acc;
            }
        }
    }
    Ok(Posteriors {
        batch,
        t,
        s,
        log_alpha: alpha,
        log_beta: beta,
        log_likelihood: ll,
        gamma,
        xi,
    })
}
