//! The host model of [`super`]: the layer's forward and gradients as plain
//! Rust, in the exact order of operations of the contract (every
//! `mul_add` is one `fma.rn.f32`, every `+` one `add.rn.f32`).

use super::topology::TransposedIndex;

// The per-block statistics' host models live in `stats.rs`; they are
// reached here with the layer's.
pub use super::stats::{block_grad_norms, ema_update, input_block_norms, output_block_norms};
use crate::error::{Error, Result};
use crate::kernels::check;

/// The supported block sizes `B`.
pub const BLOCK_SIZES: [usize; 4] = [8, 16, 32, 64];

/// Rows per chunk of the N-chunk tree (see the [module contract](super)).
pub const N_CHUNK: usize = 256;

/// The marker of an empty slot in `col`.
pub const EMPTY: i32 = -1;

/// The sizes of a block-ELL layer: `R` output blocks, `C` input blocks,
/// `K` slots per block row, block size `B`. Always valid once built (see
/// [`Dims::new`]), so the derived lengths never overflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Dims {
    r: usize,
    c: usize,
    k: usize,
    b: usize,
}

pub(crate) fn product(what: &str, dims: &[usize]) -> Result<usize> {
    dims.iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| Error::invalid(format!("block_ell: {what} {dims:?} overflows")))
}

impl Dims {
    /// Check and build the sizes.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the values: `b` not in
    /// [`BLOCK_SIZES`]; `R·K·B·B`, `R·B` or `C·B` overflowing `usize`;
    /// `C > i32::MAX` (a column block must be representable in `col`);
    /// `R·K > u32::MAX` (a slot must be representable in the
    /// [`TransposedIndex`]). `R`, `C` and `K` may be zero.
    pub fn new(r: usize, c: usize, k: usize, b: usize) -> Result<Self> {
        if !BLOCK_SIZES.contains(&b) {
            return Err(Error::invalid(format!(
                "block_ell: block size B = {b} is not supported; supported are {BLOCK_SIZES:?}"
            )));
        }
        if i32::try_from(c).is_err() {
            return Err(Error::invalid(format!(
                "block_ell: C = {c} column blocks exceed i32::MAX (col is i32)"
            )));
        }
        let slots = product("R × K", &[r, k])?;
        if u32::try_from(slots).is_err() {
            return Err(Error::invalid(format!(
                "block_ell: R × K = {r} × {k} = {slots} slots exceed u32::MAX"
            )));
        }
        product("R × K × B × B", &[r, k, b, b])?;
        product("R × B", &[r, b])?;
        product("C × B", &[c, b])?;
        Ok(Self { r, c, k, b })
    }

    /// `R`, the number of output (row) blocks.
    pub fn r(&self) -> usize {
        self.r
    }
    /// `C`, the number of input (column) blocks.
    pub fn c(&self) -> usize {
        self.c
    }
    /// `K`, the slots per block row.
    pub fn k(&self) -> usize {
        self.k
    }
    /// `B`, the block size.
    pub fn b(&self) -> usize {
        self.b
    }
    /// `C·B`, the width of `x` and `gx`.
    pub fn in_features(&self) -> usize {
        self.c * self.b
    }
    /// `R·B`, the width of `y` and `gy`, the length of `bias`.
    pub fn out_features(&self) -> usize {
        self.r * self.b
    }
    /// `R·K`, the length of `col`.
    pub fn slots(&self) -> usize {
        self.r * self.k
    }
    /// `R·K·B·B`, the length of `values` and `gv`.
    pub fn values_len(&self) -> usize {
        self.r * self.k * self.b * self.b
    }
    /// The same sizes with another `K`.
    ///
    /// # Errors
    /// As [`Dims::new`].
    pub fn with_k(&self, k: usize) -> Result<Self> {
        Self::new(self.r, self.c, k, self.b)
    }

    /// `N·width` for an activation buffer, checked.
    pub(crate) fn rows_len(&self, what: &str, n: usize, width: usize) -> Result<usize> {
        product(what, &[n, width])
    }
}

/// Check `col` against `dims`: length `R·K`, every entry in `-1..C`, no
/// column block twice in a row.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the length, or the slot `(r, k)` and
/// its value (and, for a repeat, the earlier slot).
pub fn validate_col(dims: &Dims, col: &[i32]) -> Result<()> {
    check::len("block_ell", "col", col.len(), dims.slots(), "R × K")?;
    let (k_n, c_n) = (dims.k, dims.c);
    for r in 0..dims.r {
        let row = &col[r * k_n..(r + 1) * k_n];
        for (k, &c) in row.iter().enumerate() {
            if c == EMPTY {
                continue;
            }
            if c < EMPTY || c as i64 >= c_n as i64 {
                return Err(Error::invalid(format!(
                    "block_ell: col[{r},{k}] = {c} is outside -1..{c_n} (C = {c_n}, -1 = empty)"
                )));
            }
            if let Some(k0) = row[..k].iter().position(|&c0| c0 == c) {
                return Err(Error::invalid(format!(
                    "block_ell: column block {c} appears twice in block row {r} \
                     (col[{r},{k0}] and col[{r},{k}])"
                )));
            }
        }
    }
    Ok(())
}

/// The column block of slot `s = r·K + k`, or `None` for an empty slot.
/// `col` must have been validated.
#[inline]
pub(crate) fn slot_col(col: &[i32], s: usize) -> Option<usize> {
    let c = col[s];
    (c >= 0).then_some(c as usize)
}

/// The N-chunk tree over rows `0..n` (see the [module contract](super)):
/// `step(row, acc)` advances a chunk's chain by one row.
pub(crate) fn chunk_tree(n: usize, mut step: impl FnMut(usize, f32) -> f32) -> f32 {
    let mut total = 0.0f32;
    let mut start = 0;
    while start < n {
        let end = n.min(start + N_CHUNK);
        let mut acc = 0.0f32;
        for row in start..end {
            acc = step(row, acc);
        }
        total = if start == 0 { acc } else { total + acc };
        start = end;
    }
    total
}

/// Check everything [`forward`] reads.
fn validate_forward(
    dims: &Dims,
    n: usize,
    x: &[f32],
    values: &[f32],
    col: &[i32],
    bias: Option<&[f32]>,
) -> Result<()> {
    let x_len = dims.rows_len("N × C·B", n, dims.in_features())?;
    dims.rows_len("N × R·B", n, dims.out_features())?;
    check::len("block_ell", "x", x.len(), x_len, "N × C·B")?;
    check::len(
        "block_ell",
        "values",
        values.len(),
        dims.values_len(),
        "R × K × B × B",
    )?;
    validate_col(dims, col)?;
    if let Some(bias) = bias {
        check::len("block_ell", "bias", bias.len(), dims.out_features(), "R·B")?;
    }
    Ok(())
}

/// The forward pass `y = x·Wᵀ (+ bias)`, `y` of `[N, R·B]`, in the
/// contract's order (see the [module contract](super)).
///
/// # Errors
/// [`Error::InvalidArgument`] naming the values for a bad length, `col`
/// entry, or an overflowing `N·C·B` / `N·R·B`.
pub fn forward(
    dims: &Dims,
    n: usize,
    x: &[f32],
    values: &[f32],
    col: &[i32],
    bias: Option<&[f32]>,
) -> Result<Vec<f32>> {
    validate_forward(dims, n, x, values, col, bias)?;
    let (b, kn) = (dims.b, dims.k);
    let (fin, fout) = (dims.in_features(), dims.out_features());
    let mut y = vec![0.0f32; n * fout];
    for row in 0..n {
        let xr = &x[row * fin..(row + 1) * fin];
        let yr = &mut y[row * fout..(row + 1) * fout];
        for r in 0..dims.r {
            for i in 0..b {
                let mut acc = 0.0f32;
                for k in 0..kn {
                    let s = r * kn + k;
                    let Some(c) = slot_col(col, s) else { continue };
                    let w = &values[(s * b + i) * b..(s * b + i + 1) * b];
                    let xs = &xr[c * b..(c + 1) * b];
                    for j in 0..b {
                        acc = w[j].mul_add(xs[j], acc);
                    }
                }
                if let Some(bias) = bias {
                    acc += bias[r * b + i];
                }
                yr[r * b + i] = acc;
            }
        }
    }
    Ok(y)
}

/// The gradient with respect to `x`, `gx` of `[N, C·B]`, reading the
/// [`TransposedIndex`] built from `col` (see the [module contract](super)).
///
/// # Errors
/// [`Error::InvalidArgument`] naming the values for a bad length or `col`
/// entry, or overflowing sizes.
pub fn grad_input(
    dims: &Dims,
    n: usize,
    gy: &[f32],
    values: &[f32],
    col: &[i32],
) -> Result<Vec<f32>> {
    let index = TransposedIndex::build(dims, col)?;
    grad_input_indexed(dims, n, gy, values, &index)
}

/// [`grad_input`] with a prebuilt [`TransposedIndex`] (the form a kernel
/// uses: the index is built once per topology and reused).
///
/// # Errors
/// [`Error::InvalidArgument`] naming the values for a bad length, an index
/// built for other sizes, or overflowing sizes.
pub fn grad_input_indexed(
    dims: &Dims,
    n: usize,
    gy: &[f32],
    values: &[f32],
    index: &TransposedIndex,
) -> Result<Vec<f32>> {
    if index.dims() != dims {
        return Err(Error::invalid(format!(
            "block_ell: transposed index built for {:?}, used with {dims:?}",
            index.dims()
        )));
    }
    let gx_len = dims.rows_len("N × C·B", n, dims.in_features())?;
    let gy_len = dims.rows_len("N × R·B", n, dims.out_features())?;
    check::len("block_ell", "gy", gy.len(), gy_len, "N × R·B")?;
    check::len(
        "block_ell",
        "values",
        values.len(),
        dims.values_len(),
        "R × K × B × B",
    )?;
    let (b, kn) = (dims.b, dims.k);
    let (fin, fout) = (dims.in_features(), dims.out_features());
    let mut gx = vec![0.0f32; gx_len];
    for row in 0..n {
        let gyr = &gy[row * fout..(row + 1) * fout];
        let gxr = &mut gx[row * fin..(row + 1) * fin];
        for c in 0..dims.c {
            let slots = index.column(c);
            for j in 0..b {
                let mut acc = 0.0f32;
                for &s in slots {
                    let s = s as usize;
                    let r = s / kn;
                    let blk = &values[s * b * b..(s + 1) * b * b];
                    let g = &gyr[r * b..(r + 1) * b];
                    for i in 0..b {
                        acc = blk[i * b + j].mul_add(g[i], acc);
                    }
                }
                gxr[c * b + j] = acc;
            }
        }
    }
    Ok(gx)
}

/// The gradient with respect to `values`, `gv` of `[R, K, B, B]`, by the
/// N-chunk tree (see the [module contract](super)); empty slots are
/// `+0.0`.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the values for a bad length or `col`
/// entry, or overflowing sizes.
pub fn grad_values(dims: &Dims, n: usize, x: &[f32], gy: &[f32], col: &[i32]) -> Result<Vec<f32>> {
    let x_len = dims.rows_len("N × C·B", n, dims.in_features())?;
    let gy_len = dims.rows_len("N × R·B", n, dims.out_features())?;
    check::len("block_ell", "x", x.len(), x_len, "N × C·B")?;
    check::len("block_ell", "gy", gy.len(), gy_len, "N × R·B")?;
    validate_col(dims, col)?;
    let (b, kn) = (dims.b, dims.k);
    let (fin, fout) = (dims.in_features(), dims.out_features());
    let mut gv = vec![0.0f32; dims.values_len()];
    for s in 0..dims.slots() {
        let Some(c) = slot_col(col, s) else { continue };
        let r = s / kn;
        for i in 0..b {
            for j in 0..b {
                let (o, f) = (r * b + i, c * b + j);
                gv[(s * b + i) * b + j] = chunk_tree(n, |row, acc| {
                    gy[row * fout + o].mul_add(x[row * fin + f], acc)
                });
            }
        }
    }
    Ok(gv)
}

/// The gradient with respect to `bias`, `gb` of `[R·B]`, by the N-chunk
/// tree over `gy` with `add.rn` (see the [module contract](super)).
///
/// # Errors
/// [`Error::InvalidArgument`] for a bad `gy` length or overflowing sizes.
pub fn grad_bias(dims: &Dims, n: usize, gy: &[f32]) -> Result<Vec<f32>> {
    let fout = dims.out_features();
    let gy_len = dims.rows_len("N × R·B", n, fout)?;
    check::len("block_ell", "gy", gy.len(), gy_len, "N × R·B")?;
    Ok((0..fout)
        .map(|o| chunk_tree(n, |row, acc| acc + gy[row * fout + o]))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_reject_bad_sizes() {
        let e = Dims::new(1, 1, 1, 12).unwrap_err().to_string();
        assert!(e.contains("B = 12"), "{e}");
        let e = Dims::new(usize::MAX, 1, 2, 8).unwrap_err().to_string();
        assert!(e.contains("overflows"), "{e}");
        let e = Dims::new(1, 1usize << 31, 1, 8).unwrap_err().to_string();
        assert!(e.contains("2147483648"), "{e}");
        let e = Dims::new(1 << 17, 1, 1 << 16, 8).unwrap_err().to_string();
        assert!(e.contains("u32::MAX"), "{e}");
        assert!(Dims::new(0, 0, 0, 64).is_ok());
    }

    #[test]
    fn chunk_tree_is_chunked() {
        // 300 ones: one chain of 256 and one of 44, then one add.
        assert_eq!(chunk_tree(300, |_, acc| acc + 1.0), 300.0);
        assert_eq!(chunk_tree(0, |_, acc| acc + 1.0).to_bits(), 0);
        // 2^24 + 1 + 1 in one chain stays 2^24; split across chunks it
        // does not: the second chunk's partial (2.0) is added whole.
        let big = 16_777_216.0f32;
        let v = |row: usize| if row == 0 { big } else { 1.0 };
        assert_eq!(chunk_tree(258, |row, acc| acc + v(row)), big + 2.0);
    }

    #[test]
    fn col_errors_name_values() {
        let d = Dims::new(2, 3, 2, 8).unwrap();
        let e = validate_col(&d, &[0, 1, 2, 3]).unwrap_err().to_string();
        assert!(e.contains("col[1,1] = 3"), "{e}");
        let e = validate_col(&d, &[0, 1, -2, 1]).unwrap_err().to_string();
        assert!(e.contains("col[1,0] = -2"), "{e}");
        let e = validate_col(&d, &[1, 1, -1, -1]).unwrap_err().to_string();
        assert!(e.contains("col[0,0] and col[0,1]"), "{e}");
        let e = validate_col(&d, &[1, 1, -1]).unwrap_err().to_string();
        assert!(e.contains("3 elements") && e.contains("= 4"), "{e}");
        validate_col(&d, &[-1, -1, 2, 0]).unwrap();
    }
}
