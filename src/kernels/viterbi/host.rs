//! The host model of [`super`]: the contract as plain Rust, in the exact
//! order of operations the kernel uses (every `+` is one `add.rn.f32`).

use crate::error::{ArgError, Error, Result};
use crate::kernels::{check, seq};

/// Marks a position past a sequence's length in [`Viterbi::paths`].
pub const NO_STATE: u32 = u32::MAX;

/// Largest number of states (the kernel keeps two rows of `S` scores in
/// shared memory).
pub const MAX_STATES: usize = 4096;

/// The sizes of a decode: `batch` sequences of up to `t` steps over `s`
/// states; `log_pi` is `[S]`, `log_a` `[S, S]`, `log_b` `[batch, T, S]`,
/// `paths` `[batch, T]`, `scores` `[batch]`. Named fields, so `t` and `s`
/// cannot be swapped unnoticed; checked by every entry point
/// ([`Shape::validate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shape {
    /// Sequences.
    pub batch: usize,
    /// Steps per sequence (each sequence's own length is at most `t`).
    pub t: usize,
    /// States, `1..=`[`MAX_STATES`].
    pub s: usize,
}

impl Shape {
    /// The shape rules (see [`validate_shape`]).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the values.
    pub fn validate(&self) -> Result<()> {
        validate_shape(self.batch, self.t, self.s)
    }
}

/// Best paths and their scores for a batch.
#[derive(Debug, Clone, PartialEq)]
pub struct Viterbi {
    /// Sequences.
    pub batch: usize,
    /// Steps per sequence.
    pub t: usize,
    /// `[batch, T]`: the best state at each position, [`NO_STATE`] past
    /// the sequence's length.
    pub paths: Vec<u32>,
    /// `[batch]`: each best path's score (`+0.0` for a sequence of length
    /// 0).
    pub scores: Vec<f32>,
}

/// Whether candidate `c` replaces the running best `best` (scanning
/// states in ascending order): strictly greater, or NaN where the best is
/// not (so the first NaN wins and is kept, and ties keep the lower state).
#[inline]
pub fn better(c: f32, best: f32) -> bool {
    c > best || (c.is_nan() && !best.is_nan())
}

fn product(what: &str, dims: &[usize]) -> Result<usize> {
    dims.iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| Error::invalid(format!("viterbi: {what} {dims:?} overflows")))
}

/// Check shapes and lengths (see the [module contract](super)).
///
/// # Errors
/// [`Error::InvalidArgument`] naming the values: `S = 0` or above
/// [`MAX_STATES`], a buffer whose length does not match its shape, a
/// length above `T`, sizes whose products overflow or exceed the kernel's
/// 32-bit indices per sequence.
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
    check::len("viterbi", "log_pi", log_pi.len(), s, "S")?;
    check::len("viterbi", "log_a", log_a.len(), s * s, "S × S")?;
    check::len(
        "viterbi",
        "log_b",
        log_b.len(),
        batch * t * s,
        "batch × T × S",
    )?;
    validate_lengths(lengths, batch, t)
}

/// The shape rules alone (for entry points whose inputs are on a device).
pub fn validate_shape(batch: usize, t: usize, s: usize) -> Result<()> {
    if s == 0 || s > MAX_STATES {
        return Err(
            ArgError::new("s", format!("1..={MAX_STATES} states"), s.to_string())
                .with_message(format!(
                    "viterbi: S = {s} states; supported are 1..={MAX_STATES}"
                ))
                .into(),
        );
    }
    product("batch × T × S", &[batch, t, s])?;
    let per_seq = product("T × S", &[t, s])?;
    if per_seq > u32::MAX as usize || batch > u32::MAX as usize || t > u32::MAX as usize / 2 {
        return Err(Error::invalid(format!(
            "viterbi: T × S = {per_seq} (T = {t}), batch = {batch}: above the kernel's 32-bit limits"
        )));
    }
    Ok(())
}

/// Every length at most `T`, one per sequence.
pub fn validate_lengths(lengths: &[u32], batch: usize, t: usize) -> Result<()> {
    seq::validate_lengths("viterbi", lengths, batch, t)
}

/// The best path of every sequence (see the [module contract](super)).
pub fn viterbi(
    log_pi: &[f32],
    log_a: &[f32],
    log_b: &[f32],
    lengths: &[u32],
    batch: usize,
    t: usize,
    s: usize,
) -> Result<Viterbi> {
    validate(log_pi, log_a, log_b, lengths, batch, t, s)?;
    let mut out = Viterbi {
        batch,
        t,
        paths: vec![NO_STATE; batch * t],
        scores: vec![0.0; batch],
    };
    let mut psi = vec![0u32; t * s];
    let (mut cur, mut next) = (vec![0f32; s], vec![0f32; s]);
    for b in 0..batch {
        let len = lengths[b] as usize;
        if len == 0 {
            continue;
        }
        let emit = |tt: usize, j: usize| log_b[(b * t + tt) * s + j];
        for j in 0..s {
            cur[j] = log_pi[j] + emit(0, j);
        }
        for tt in 1..len {
            for j in 0..s {
                let mut best = cur[0] + log_a[j];
                let mut arg = 0u32;
                for i in 1..s {
                    let c = cur[i] + log_a[i * s + j];
                    if better(c, best) {
                        best = c;
                        arg = i as u32;
                    }
                }
                next[j] = best + emit(tt, j);
                psi[tt * s + j] = arg;
            }
            std::mem::swap(&mut cur, &mut next);
        }
        let mut best = cur[0];
        let mut state = 0u32;
        for (j, &c) in cur.iter().enumerate().skip(1) {
            if better(c, best) {
                best = c;
                state = j as u32;
            }
        }
        out.scores[b] = best;
        let path = &mut out.paths[b * t..(b + 1) * t];
        path[len - 1] = state;
        for tt in (1..len).rev() {
            state = psi[tt * s + state as usize];
            path[tt - 1] = state;
        }
    }
    Ok(out)
}
