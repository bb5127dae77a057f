//! Topology tools of [`super`]: the transposed (CSC-like) index that
//! grad-input reads, dense ↔ block-ELL conversion, and re-topology.

use super::host::{Dims, EMPTY, product, slot_col, validate_col};
use crate::error::{Error, Result};
use crate::kernels::check;

/// A block-ELL weight: sizes, `values [R, K, B, B]` and `col [R, K]`.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockEll {
    /// The layer's sizes.
    pub dims: Dims,
    /// `[R, K, B, B]` block values.
    pub values: Vec<f32>,
    /// `[R, K]` column blocks, `-1` for an empty slot.
    pub col: Vec<i32>,
}

/// The slots of each column block, for grad-input (no atomics: one writer
/// per `gx` element).
///
/// Layout (CSC-like, all `u32`):
/// * `offsets`: `[C + 1]`, `offsets[0] = 0`, non-decreasing, `offsets[C] =
///   nnz` (the number of non-empty slots);
/// * `slots`: `[nnz]`; `slots[offsets[c]..offsets[c+1]]` are the slots `s
///   = r·K + k` with `col[r,k] = c`, in ascending `s` (= ascending
///   `(r,k)`). The block row is `s / K`, the block's values start at
///   `values[s·B·B]`.
///
/// Built by a stable counting sort of the slots by column block, so it
/// depends only on `col`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransposedIndex {
    dims: Dims,
    offsets: Vec<u32>,
    slots: Vec<u32>,
}

impl TransposedIndex {
    /// Build the index of `col`.
    ///
    /// # Errors
    /// As [`validate_col`].
    pub fn build(dims: &Dims, col: &[i32]) -> Result<Self> {
        validate_col(dims, col)?;
        let c_n = dims.c();
        let mut counts = vec![0u32; c_n + 1];
        for s in 0..dims.slots() {
            if let Some(c) = slot_col(col, s) {
                counts[c + 1] += 1;
            }
        }
        for c in 0..c_n {
            counts[c + 1] += counts[c];
        }
        let offsets = counts;
        let mut cursor = offsets.clone();
        let mut slots = vec![0u32; offsets[c_n] as usize];
        for s in 0..dims.slots() {
            if let Some(c) = slot_col(col, s) {
                slots[cursor[c] as usize] = s as u32; // R·K ≤ u32::MAX (Dims)
                cursor[c] += 1;
            }
        }
        Ok(Self {
            dims: *dims,
            offsets,
            slots,
        })
    }

    /// The sizes the index was built for.
    pub fn dims(&self) -> &Dims {
        &self.dims
    }
    /// `offsets [C + 1]`.
    pub fn offsets(&self) -> &[u32] {
        &self.offsets
    }
    /// `slots [nnz]` (each `r·K + k`).
    pub fn slots(&self) -> &[u32] {
        &self.slots
    }
    /// The slots of column block `c`, ascending.
    ///
    /// # Panics
    /// If `c ≥ C` (an internal index, not user data).
    pub fn column(&self, c: usize) -> &[u32] {
        &self.slots[self.offsets[c] as usize..self.offsets[c + 1] as usize]
    }
    /// The number of non-empty slots.
    pub fn nnz(&self) -> usize {
        self.slots.len()
    }
    /// The largest number of slots in one column block (the width a
    /// padded transposed-ELL layout would need); `0` when `C = 0`.
    pub fn max_column_len(&self) -> usize {
        self.offsets
            .windows(2)
            .map(|w| (w[1] - w[0]) as usize)
            .max()
            .unwrap_or(0)
    }
}

/// Build block-ELL from a dense `[R·B, C·B]` row-major matrix and a block
/// mask `[R, C]` (`mask[r·C + c]`: block `(r, c)` is kept). `K` is the
/// largest number of kept blocks in a row (`0` for an all-false mask);
/// each row's slots hold its kept column blocks in ascending order, then
/// `-1` slots with zero values. Kept blocks are copied bit for bit (zeros
/// and NaNs included).
///
/// # Errors
/// [`Error::InvalidArgument`] naming the values: unsupported `B`, a length
/// that does not match, overflowing sizes.
pub fn from_dense(r: usize, c: usize, b: usize, dense: &[f32], mask: &[bool]) -> Result<BlockEll> {
    Dims::new(r, c, 0, b)?;
    let mask_len = product("R × C", &[r, c])?;
    check::len("block_ell", "mask", mask.len(), mask_len, "R × C")?;
    let dense_len = product("R·B × C·B", &[r, b, c, b])?;
    check::len("block_ell", "dense", dense.len(), dense_len, "R·B × C·B")?;
    let per_row = |rr: usize| mask[rr * c..(rr + 1) * c].iter().filter(|&&m| m).count();
    let k = (0..r).map(per_row).max().unwrap_or(0);
    let dims = Dims::new(r, c, k, b)?;
    let width = c * b;
    let mut values = vec![0.0f32; dims.values_len()];
    let mut col = vec![EMPTY; dims.slots()];
    for rr in 0..r {
        let kept = (0..c).filter(|&cc| mask[rr * c + cc]);
        for (kk, cc) in kept.enumerate() {
            let s = rr * k + kk;
            col[s] = cc as i32; // C ≤ i32::MAX (Dims)
            for i in 0..b {
                let src = (rr * b + i) * width + cc * b;
                let dst = (s * b + i) * b;
                values[dst..dst + b].copy_from_slice(&dense[src..src + b]);
            }
        }
    }
    Ok(BlockEll { dims, values, col })
}

/// The dense `[R·B, C·B]` row-major matrix of a block-ELL weight; blocks
/// no slot covers (and empty slots' values) are `+0.0`.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the values: a bad length or `col`
/// entry, overflowing sizes.
pub fn to_dense(dims: &Dims, values: &[f32], col: &[i32]) -> Result<Vec<f32>> {
    check::len(
        "block_ell",
        "values",
        values.len(),
        dims.values_len(),
        "R × K × B × B",
    )?;
    validate_col(dims, col)?;
    let b = dims.b();
    let dense_len = product("R·B × C·B", &[dims.r(), b, dims.c(), b])?;
    let width = dims.in_features();
    let mut dense = vec![0.0f32; dense_len];
    for s in 0..dims.slots() {
        let Some(c) = slot_col(col, s) else { continue };
        let r = s / dims.k();
        for i in 0..b {
            let dst = (r * b + i) * width + c * b;
            let src = (s * b + i) * b;
            dense[dst..dst + b].copy_from_slice(&values[src..src + b]);
        }
    }
    Ok(dense)
}

/// Move a weight to a new topology: `new_col [R, new_k]` (the same rules
/// as `col`). A new slot whose column block the old row had gets that
/// block's values bit for bit (wherever it sat in the old row); a
/// newcomer, and every empty slot, gets `+0.0`s. Blocks absent from the
/// new row are dropped.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the values: bad lengths or `col` /
/// `new_col` entries, sizes that overflow with `new_k`.
pub fn retopology(
    dims: &Dims,
    values: &[f32],
    col: &[i32],
    new_col: &[i32],
    new_k: usize,
) -> Result<BlockEll> {
    check::len(
        "block_ell",
        "values",
        values.len(),
        dims.values_len(),
        "R × K × B × B",
    )?;
    validate_col(dims, col)?;
    let new_dims = dims.with_k(new_k)?;
    validate_col(&new_dims, new_col).map_err(|e| match e {
        Error::InvalidArgument(m) => Error::invalid(format!("new_col: {m}")),
        other => other,
    })?;
    let (b, k_old) = (dims.b(), dims.k());
    let bb = b * b;
    let mut new_values = vec![0.0f32; new_dims.values_len()];
    for r in 0..dims.r() {
        let old_row = &col[r * k_old..(r + 1) * k_old];
        for k in 0..new_k {
            let s = r * new_k + k;
            let Some(c) = slot_col(new_col, s) else {
                continue;
            };
            if let Some(k0) = old_row.iter().position(|&c0| c0 as i64 == c as i64) {
                let src = (r * k_old + k0) * bb;
                new_values[s * bb..(s + 1) * bb].copy_from_slice(&values[src..src + bb]);
            }
        }
    }
    Ok(BlockEll {
        dims: new_dims,
        values: new_values,
        col: new_col.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_layout() {
        // R = 3, K = 2, C = 3: col = [[2, 0], [-1, 2], [0, -1]].
        let d = Dims::new(3, 3, 2, 8).unwrap();
        let t = TransposedIndex::build(&d, &[2, 0, -1, 2, 0, -1]).unwrap();
        assert_eq!(t.offsets(), &[0, 2, 2, 4]);
        assert_eq!(t.slots(), &[1, 4, 0, 3]);
        assert_eq!(t.column(1), &[] as &[u32]);
        assert_eq!(t.max_column_len(), 2);
        let empty = TransposedIndex::build(&Dims::new(0, 0, 0, 8).unwrap(), &[]).unwrap();
        assert_eq!(empty.offsets(), &[0]);
        assert_eq!(empty.max_column_len(), 0);
    }
}
