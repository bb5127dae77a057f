//! Per-block statistics of [`super`] for a topology controller, each in a
//! stated evaluation order (see the [module contract](super)).

use super::host::{Dims, chunk_tree, slot_col, validate_col};
use crate::error::{Error, Result};
use crate::kernels::check;

/// The Frobenius norm of each block of `gv [R, K, B, B]`, as `[R, K]`:
/// `acc = +0.0`; for `i`, then `j` ascending: `acc = fma(g, g, acc)`;
/// then `sqrt(acc)` (`sqrt.rn`). Empty slots give `+0.0` without reading
/// their values.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the values for a bad length or `col`
/// entry.
pub fn block_grad_norms(dims: &Dims, gv: &[f32], col: &[i32]) -> Result<Vec<f32>> {
    check::len(
        "block_ell",
        "gv",
        gv.len(),
        dims.values_len(),
        "R × K × B × B",
    )?;
    validate_col(dims, col)?;
    let bb = dims.b() * dims.b();
    Ok((0..dims.slots())
        .map(|s| match slot_col(col, s) {
            None => 0.0,
            Some(_) => gv[s * bb..(s + 1) * bb]
                .iter()
                .fold(0.0f32, |acc, &g| g.mul_add(g, acc))
                .sqrt(),
        })
        .collect())
}

/// The norm of each `B`-wide block of the columns of an `[N, blocks·B]`
/// buffer over all `N` rows: the N-chunk tree where row `n` adds `j =
/// 0..B` ascending with `acc = fma(v, v, acc)`, then `sqrt`.
fn column_block_norms(n: usize, blocks: usize, b: usize, a: &[f32]) -> Vec<f32> {
    let width = blocks * b;
    (0..blocks)
        .map(|blk| {
            chunk_tree(n, |row, mut acc| {
                let part = &a[row * width + blk * b..row * width + (blk + 1) * b];
                for &v in part {
                    acc = v.mul_add(v, acc);
                }
                acc
            })
            .sqrt()
        })
        .collect()
}

/// The activation norm of each input block over the batch, `[C]`: for
/// column block `c`, the N-chunk tree over `x[n][c·B + j]` (row `n` adds
/// `j = 0..B` ascending, `acc = fma(v, v, acc)`), then `sqrt`.
///
/// # Errors
/// [`Error::InvalidArgument`] for a bad `x` length or overflowing sizes.
pub fn input_block_norms(dims: &Dims, n: usize, x: &[f32]) -> Result<Vec<f32>> {
    let len = dims.rows_len("N × C·B", n, dims.in_features())?;
    check::len("block_ell", "x", x.len(), len, "N × C·B")?;
    Ok(column_block_norms(n, dims.c(), dims.b(), x))
}

/// The output-error norm of each output block over the batch, `[R]`: as
/// [`input_block_norms`] over `gy [N, R·B]`.
///
/// # Errors
/// [`Error::InvalidArgument`] for a bad `gy` length or overflowing sizes.
pub fn output_block_norms(dims: &Dims, n: usize, gy: &[f32]) -> Result<Vec<f32>> {
    let len = dims.rows_len("N × R·B", n, dims.out_features())?;
    check::len("block_ell", "gy", gy.len(), len, "N × R·B")?;
    Ok(column_block_norms(n, dims.r(), dims.b(), gy))
}

/// Exponential moving average of block scores, in place: `s ← fma(decay,
/// s, mul.rn(sub.rn(1, decay), v))`, i.e. `decay.mul_add(s, (1.0 - decay)
/// * v)`. Both products are always evaluated, so an Inf or NaN in `s` or
/// `v` propagates as IEEE arithmetic does even when `decay` is 0 or 1.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the values: `decay` not finite in
/// `[0, 1]`, lengths that differ.
pub fn ema_update(scores: &mut [f32], values: &[f32], decay: f32) -> Result<()> {
    if !(0.0..=1.0).contains(&decay) {
        return Err(Error::invalid(format!(
            "block_ell: EMA decay = {decay} is outside [0, 1]"
        )));
    }
    check::len(
        "block_ell",
        "values",
        values.len(),
        scores.len(),
        "scores.len()",
    )?;
    let keep = 1.0 - decay;
    for (s, &v) in scores.iter_mut().zip(values) {
        *s = decay.mul_add(*s, keep * v);
    }
    Ok(())
}
