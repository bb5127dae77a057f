//! The host model of [`super`]: the contract's fixed tree in plain Rust,
//! with [`crate::math`]'s routines (the mirrors of the device ones), so
//! the bits equal the kernels' on every input.

use crate::error::{Error, Result};
use crate::math::{exp_f32, log_add_exp, log_f32};

/// Elements per chunk of the scan tree.
pub const CHUNK: usize = 256;

/// Check `rows × T` against the buffers' lengths and the kernels' limits.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the values.
pub fn validate_shape(rows: usize, t: usize) -> Result<()> {
    let n = rows.checked_mul(t).ok_or_else(|| {
        Error::invalid(format!("logcumsumexp: rows × T overflows ({rows} × {t})"))
    })?;
    if t > u32::MAX as usize / 2 || rows > u32::MAX as usize / 2 {
        return Err(Error::invalid(format!(
            "logcumsumexp: rows = {rows}, T = {t}: each must stay below 2^31"
        )));
    }
    let chunks = rows.saturating_mul(t.div_ceil(CHUNK));
    if chunks > u32::MAX as usize / 2 || n as u64 > u64::MAX / 8 {
        return Err(Error::invalid(format!(
            "logcumsumexp: {rows} rows of {t} make {chunks} chunks, above 2^31"
        )));
    }
    Ok(())
}

/// `len` must be `rows × T`.
pub fn expect_len(what: &str, len: usize, rows: usize, t: usize) -> Result<()> {
    if len == rows * t {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "logcumsumexp: {what} has {len} elements, expected rows × T = {rows} × {t} = {}",
        rows * t
    )))
}

/// The scan of one row along `order` (indices into `row`, scan order):
/// the contract's tree, written back into `out` at the same indices.
fn scan_tree(row: &[f32], out: &mut [f32], order: impl Fn(usize) -> usize) {
    let t = row.len();
    let mut carry = f32::NEG_INFINITY;
    let mut start = 0;
    let mut chunk = 0;
    while start < t {
        let end = (start + CHUNK).min(t);
        // Local sequential scan of the chunk.
        let mut acc = row[order(start)];
        out[order(start)] = acc;
        for k in start + 1..end {
            acc = log_add_exp(acc, row[order(k)]);
            out[order(k)] = acc;
        }
        // Carry into this chunk (none for chunk 0), then the next carry.
        if chunk >= 1 {
            for k in start..end {
                out[order(k)] = log_add_exp(carry, out[order(k)]);
            }
        }
        carry = if chunk == 0 {
            acc
        } else {
            log_add_exp(carry, acc)
        };
        start = end;
        chunk += 1;
    }
}

/// Forward: `y[r][t] = log Σ_{k ≤ t} exp(x[r][k])` by the contract's tree.
pub fn forward(x: &[f32], rows: usize, t: usize) -> Result<Vec<f32>> {
    validate_shape(rows, t)?;
    expect_len("x", x.len(), rows, t)?;
    let mut y = vec![0f32; rows * t];
    for (xr, yr) in x.chunks_exact(t.max(1)).zip(y.chunks_exact_mut(t.max(1))) {
        scan_tree(xr, yr, |k| k);
    }
    Ok(y)
}

/// The log-space terms of the backward pass for one upstream gradient
/// value: `log(g) − y` where `g > 0` (for [`grad_pos`]) and the output is
/// not `−inf`, else `−inf`; NaN when `g` is NaN.
fn grad_term(g: f32, y: f32) -> f32 {
    if g.is_nan() {
        return f32::NAN;
    }
    if g > 0.0 && y != f32::NEG_INFINITY {
        log_f32(g) - y
    } else {
        f32::NEG_INFINITY
    }
}

/// `log(g) − y` for `g > 0` (see the contract).
pub fn grad_pos(g: f32, y: f32) -> f32 {
    grad_term(g, y)
}

/// `log(−g) − y` for `g < 0` (see the contract).
pub fn grad_neg(g: f32, y: f32) -> f32 {
    grad_term(-g, y)
}

/// Backward: given `x`, the forward output `y` and the upstream gradient
/// `g`, `gx[i] = exp(x[i] + P[i]) − exp(x[i] + N[i])` where `P`/`N` are
/// the reverse scans (the contract's tree on the reversed row) of
/// [`grad_pos`] / [`grad_neg`].
pub fn backward(x: &[f32], y: &[f32], g: &[f32], rows: usize, t: usize) -> Result<Vec<f32>> {
    validate_shape(rows, t)?;
    expect_len("x", x.len(), rows, t)?;
    expect_len("y", y.len(), rows, t)?;
    expect_len("g", g.len(), rows, t)?;
    let n = rows * t;
    let a: Vec<f32> = (0..n).map(|i| grad_pos(g[i], y[i])).collect();
    let b: Vec<f32> = (0..n).map(|i| grad_neg(g[i], y[i])).collect();
    let (mut p, mut q) = (vec![0f32; n], vec![0f32; n]);
    if t > 0 {
        for r in 0..rows {
            let span = r * t..(r + 1) * t;
            scan_tree(&a[span.clone()], &mut p[span.clone()], |k| t - 1 - k);
            scan_tree(&b[span.clone()], &mut q[span], |k| t - 1 - k);
        }
    }
    Ok((0..n)
        .map(|i| exp_f32(x[i] + p[i]) - exp_f32(x[i] + q[i]))
        .collect())
}
