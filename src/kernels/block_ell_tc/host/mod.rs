//! The host model of [`super`], the spec: the forward pass and the
//! gradients in the contract's order, every `mma.sync` one
//! [`BlockFma::dot`] of the device SM's published model, every `+` one
//! `add.rn.f32`.

use crate::error::{Error, Result};
use crate::kernels::block_ell::host::slot_col;
use crate::kernels::block_ell::{Dims, N_CHUNK, TransposedIndex, validate_col};
use crate::kernels::check;
use crate::runtime::buffer::DeviceRepr;
use crate::target::{Feature, Sm};
use crate::tensor_core::{self, BlockFma, InputFormat};

/// The block sizes the tensor-core path takes (`B = 8` is refused: an
/// `m16` tile does not fit it).
pub const TC_BLOCK_SIZES: [usize; 3] = [16, 32, 64];

/// The operand precision of a tensor-core call (the request names the
/// path by calling [`super`] instead of
/// [`block_ell`](crate::kernels::block_ell), and the precision by this).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TcPrecision {
    /// bfloat16 inputs stored as `u16` bits, `m16n8k16`.
    Bf16,
    /// IEEE binary16 inputs stored as `u16` bits, `m16n8k16`.
    F16,
    /// f32 inputs converted by `cvt.rna.tf32.f32`, `m16n8k8`.
    Tf32,
}

impl TcPrecision {
    /// Every precision.
    pub const ALL: [TcPrecision; 3] = [TcPrecision::Bf16, TcPrecision::F16, TcPrecision::Tf32];

    /// The tensor-core operand format.
    pub const fn format(self) -> InputFormat {
        match self {
            TcPrecision::Bf16 => InputFormat::Bf16,
            TcPrecision::F16 => InputFormat::F16,
            TcPrecision::Tf32 => InputFormat::Tf32,
        }
    }

    /// Reduction elements per `mma.sync` (16, or 8 for tf32).
    pub const fn chunk(self) -> usize {
        match self {
            TcPrecision::Bf16 | TcPrecision::F16 => 16,
            TcPrecision::Tf32 => 8,
        }
    }

    /// `"bf16"`, `"f16"`, `"tf32"`.
    pub const fn name(self) -> &'static str {
        self.format().ptx_name()
    }
}

impl std::fmt::Display for TcPrecision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// An input element type of the tensor-core path: `u16` (bf16/f16 bits)
/// or `f32` (tf32).
pub trait TcElem: DeviceRepr + Copy {
    /// The Rust type's name, for error messages.
    const NAME: &'static str;
    /// Whether `prec` stores its inputs as `Self`.
    fn stores(prec: TcPrecision) -> bool;
    /// The operand bits the tensor core reads for `self` (bf16/f16: the
    /// 16 bits; tf32: `cvt.rna.tf32.f32`).
    fn operand(self) -> u32;
}

impl TcElem for u16 {
    const NAME: &'static str = "u16";
    fn stores(prec: TcPrecision) -> bool {
        matches!(prec, TcPrecision::Bf16 | TcPrecision::F16)
    }
    fn operand(self) -> u32 {
        u32::from(self)
    }
}

impl TcElem for f32 {
    const NAME: &'static str = "f32";
    fn stores(prec: TcPrecision) -> bool {
        prec == TcPrecision::Tf32
    }
    fn operand(self) -> u32 {
        tensor_core::f32_to_tf32_rna(self)
    }
}

/// The output type of a forward or grad-input call (grad-values is
/// always f32): the f32 results as they are, or each rounded once to bf16
/// at the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TcOutput {
    /// f32 results, stored as `f32`.
    F32,
    /// Each f32 result rounded to nearest even by `cvt.rn.bf16.f32`
    /// ([`to_bf16`]: overflow gives ±∞, every NaN gives `0x7FFF`), stored
    /// as `u16` bits: half the output bytes.
    Bf16,
}

impl TcOutput {
    /// Every output type.
    pub const ALL: [TcOutput; 2] = [TcOutput::F32, TcOutput::Bf16];

    /// `"f32"`, `"bf16"`.
    pub const fn name(self) -> &'static str {
        match self {
            TcOutput::F32 => "f32",
            TcOutput::Bf16 => "bf16",
        }
    }
}

impl std::fmt::Display for TcOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// An output element type of the tensor-core path: `f32` ([`TcOutput::F32`])
/// or `u16` (bf16 bits, [`TcOutput::Bf16`]).
pub trait TcOutElem: DeviceRepr + Copy {
    /// The Rust type's name, for error messages.
    const NAME: &'static str;
    /// Whether `out` stores its results as `Self`.
    fn holds(out: TcOutput) -> bool;
    /// The stored element of an f32 result (`u16`: `cvt.rn.bf16.f32`).
    fn store(v: f32) -> Self;
}

impl TcOutElem for f32 {
    const NAME: &'static str = "f32";
    fn holds(out: TcOutput) -> bool {
        out == TcOutput::F32
    }
    fn store(v: f32) -> f32 {
        v
    }
}

impl TcOutElem for u16 {
    const NAME: &'static str = "u16";
    fn holds(out: TcOutput) -> bool {
        out == TcOutput::Bf16
    }
    fn store(v: f32) -> u16 {
        tensor_core::f32_to_bf16_rn(v)
    }
}

/// Check that `O` is the storage of `out`.
///
/// # Errors
/// [`Error::InvalidArgument`] naming both otherwise.
pub fn request_output<O: TcOutElem>(out: TcOutput) -> Result<()> {
    if O::holds(out) {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "block_ell_tc: {out} output is not stored as {} (f32 output as f32, bf16 output as u16 \
             bits)",
            O::NAME
        )))
    }
}

/// The host model of a call with output type `out`: the f32 results of
/// [`forward`] or [`grad_input`], each stored as the kernels store it
/// (bf16: rounded once to nearest even, [`to_bf16`]).
///
/// ```
/// use ptxsmith::kernels::block_ell_tc::host::{TcOutput, output};
/// let y = [1.0 + 2f32.powi(-8), f32::MAX, f32::NAN];
/// // a tie rounds to even; past the largest bf16, to ∞; NaN to 0x7FFF
/// assert_eq!(output::<u16>(TcOutput::Bf16, &y)?, [0x3F80, 0x7F80, 0x7FFF]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`request_output`].
pub fn output<O: TcOutElem>(out: TcOutput, y: &[f32]) -> Result<Vec<O>> {
    request_output::<O>(out)?;
    Ok(y.iter().map(|&v| O::store(v)).collect())
}

/// f32 → bf16 bits, round to nearest even (`cvt.rn.bf16.f32`; NaN gives
/// `0x7FFF`).
pub fn to_bf16(v: &[f32]) -> Vec<u16> {
    v.iter().map(|&x| tensor_core::f32_to_bf16_rn(x)).collect()
}

/// f32 → f16 bits, round to nearest even (`cvt.rn.f16.f32`: overflow
/// gives ±∞, subnormals kept; NaN gives `0x7FFF`).
pub fn to_f16(v: &[f32]) -> Vec<u16> {
    v.iter().map(|&x| tensor_core::f32_to_f16_rn(x)).collect()
}

/// Check what every kernel of a request needs: `B` ∈ [`TC_BLOCK_SIZES`]
/// and an SM with `mma.sync` for these shapes (sm_80).
///
/// # Errors
/// [`Error::InvalidArgument`] for `B`; [`Error::UnsupportedFeature`]
/// ([`Feature::MmaSync`]) below sm_80.
pub fn request_sm(sm: Sm, dims: &Dims) -> Result<()> {
    if !TC_BLOCK_SIZES.contains(&dims.b()) {
        return Err(Error::invalid(format!(
            "block_ell_tc: block size B = {} is not supported on the tensor cores; supported are \
             {TC_BLOCK_SIZES:?}",
            dims.b()
        )));
    }
    if !sm.supports(Feature::MmaSync) {
        return Err(unsupported(sm));
    }
    Ok(())
}

fn unsupported(sm: Sm) -> Error {
    Error::UnsupportedFeature {
        feature: Feature::MmaSync,
        sm,
        needs: Feature::MmaSync.requirement(),
    }
}

/// Check a request: as [`request_sm`], and `T` the storage of `prec`;
/// returns the SM's block FMA.
///
/// # Errors
/// As [`request_sm`]; [`Error::InvalidArgument`] for a `T` that `prec`
/// does not store its inputs as.
pub fn request<T: TcElem>(sm: Sm, prec: TcPrecision, dims: &Dims) -> Result<BlockFma> {
    request_sm(sm, dims)?;
    if !T::stores(prec) {
        return Err(Error::invalid(format!(
            "block_ell_tc: {prec} inputs are not stored as {} (bf16/f16 as u16 bits, tf32 as f32)",
            T::NAME
        )));
    }
    tensor_core::params(sm, prec.format()).ok_or_else(|| unsupported(sm))
}

/// One MMA chunk on the model: `acc = tc(acc, pairs)`.
fn tc(fma: &BlockFma, acc: f32, pairs: impl Iterator<Item = (u32, u32)>) -> f32 {
    fma.dot(acc, pairs)
}

/// Row `r`'s filled slots in the forward pass's order: `(c, s)` (input
/// block, global slot `s = r·K + k`) ascending by input block, then slot
/// (see the [contract](super)).
pub fn row_order(col: &[i32], r: usize, k: usize) -> Vec<(usize, usize)> {
    let mut e: Vec<(usize, usize)> = (r * k..(r + 1) * k)
        .filter_map(|s| slot_col(col, s).map(|c| (c, s)))
        .collect();
    e.sort_unstable();
    e
}

/// The forward pass `y = x·Wᵀ (+ bias)` on `sm`'s tensor cores, `y` of
/// `[N, R·B]` (see the [contract](super)).
///
/// # Errors
/// As [`request`]; [`Error::InvalidArgument`] naming the values for a bad
/// length, `col` entry or overflowing sizes.
#[allow(clippy::too_many_arguments)]
pub fn forward<T: TcElem>(
    sm: Sm,
    prec: TcPrecision,
    dims: &Dims,
    n: usize,
    x: &[T],
    values: &[T],
    col: &[i32],
    bias: Option<&[f32]>,
) -> Result<Vec<f32>> {
    let fma = request::<T>(sm, prec, dims)?;
    let (fin, fout) = (dims.in_features(), dims.out_features());
    let x_len = dims.rows_len("N × C·B", n, fin)?;
    let y_len = dims.rows_len("N × R·B", n, fout)?;
    check::len("block_ell_tc", "x", x.len(), x_len, "N × C·B")?;
    check::len(
        "block_ell_tc",
        "values",
        values.len(),
        dims.values_len(),
        "R × K × B × B",
    )?;
    validate_col(dims, col)?;
    if let Some(bias) = bias {
        check::len("block_ell_tc", "bias", bias.len(), fout, "R·B")?;
    }
    let (b, kn, q) = (dims.b(), dims.k(), prec.chunk());
    let order: Vec<Vec<(usize, usize)>> = (0..dims.r()).map(|r| row_order(col, r, kn)).collect();
    let mut y = vec![0.0f32; y_len];
    for row in 0..n {
        let xr = &x[row * fin..(row + 1) * fin];
        for r in 0..dims.r() {
            for i in 0..b {
                let mut acc = 0.0f32;
                for &(c, s) in &order[r] {
                    let w = &values[(s * b + i) * b..(s * b + i + 1) * b];
                    let xs = &xr[c * b..(c + 1) * b];
                    for j0 in (0..b).step_by(q) {
                        let pairs = (j0..j0 + q).map(|j| (w[j].operand(), xs[j].operand()));
                        acc = tc(&fma, acc, pairs);
                    }
                }
                if let Some(bias) = bias {
                    acc += bias[r * b + i];
                }
                y[row * fout + r * b + i] = acc;
            }
        }
    }
    Ok(y)
}

/// The gradient with respect to `x`, `gx` of `[N, C·B]`, on `sm`'s tensor
/// cores over the [`TransposedIndex`] of `col` (see the [contract](super)).
///
/// # Errors
/// As [`forward`].
pub fn grad_input<T: TcElem>(
    sm: Sm,
    prec: TcPrecision,
    dims: &Dims,
    n: usize,
    gy: &[T],
    values: &[T],
    col: &[i32],
) -> Result<Vec<f32>> {
    let fma = request::<T>(sm, prec, dims)?;
    let index = TransposedIndex::build(dims, col)?;
    let (fin, fout) = (dims.in_features(), dims.out_features());
    let gx_len = dims.rows_len("N × C·B", n, fin)?;
    let gy_len = dims.rows_len("N × R·B", n, fout)?;
    check::len("block_ell_tc", "gy", gy.len(), gy_len, "N × R·B")?;
    check::len(
        "block_ell_tc",
        "values",
        values.len(),
        dims.values_len(),
        "R × K × B × B",
    )?;
    let (b, kn, q) = (dims.b(), dims.k(), prec.chunk());
    let mut gx = vec![0.0f32; gx_len];
    for row in 0..n {
        let gyr = &gy[row * fout..(row + 1) * fout];
        for c in 0..dims.c() {
            for j in 0..b {
                let mut acc = 0.0f32;
                for &s in index.column(c) {
                    let s = s as usize;
                    let r = s / kn;
                    let blk = &values[s * b * b..(s + 1) * b * b];
                    let g = &gyr[r * b..(r + 1) * b];
                    for i0 in (0..b).step_by(q) {
                        let pairs =
                            (i0..i0 + q).map(|i| (blk[i * b + j].operand(), g[i].operand()));
                        acc = tc(&fma, acc, pairs);
                    }
                }
                gx[row * fin + c * b + j] = acc;
            }
        }
    }
    Ok(gx)
}

/// The gradient with respect to `values`, `gv` of `[R, K, B, B]`, on
/// `sm`'s tensor cores by the N-chunk tree (see the [contract](super));
/// empty slots are `+0.0`.
///
/// # Errors
/// As [`forward`].
pub fn grad_values<T: TcElem>(
    sm: Sm,
    prec: TcPrecision,
    dims: &Dims,
    n: usize,
    x: &[T],
    gy: &[T],
    col: &[i32],
) -> Result<Vec<f32>> {
    let fma = request::<T>(sm, prec, dims)?;
    let (fin, fout) = (dims.in_features(), dims.out_features());
    let x_len = dims.rows_len("N × C·B", n, fin)?;
    let gy_len = dims.rows_len("N × R·B", n, fout)?;
    check::len("block_ell_tc", "x", x.len(), x_len, "N × C·B")?;
    check::len("block_ell_tc", "gy", gy.len(), gy_len, "N × R·B")?;
    validate_col(dims, col)?;
    let (b, kn, q) = (dims.b(), dims.k(), prec.chunk());
    let mut gv = vec![0.0f32; dims.values_len()];
    for s in 0..dims.slots() {
        let Some(c) = slot_col(col, s) else { continue };
        let r = s / kn;
        for i in 0..b {
            for j in 0..b {
                let (o, f) = (r * b + i, c * b + j);
                // a padded row is a +0 × +0 pair, as the kernel feeds it
                let pair = |row: usize| {
                    if row < n {
                        (gy[row * fout + o].operand(), x[row * fin + f].operand())
                    } else {
                        (0, 0)
                    }
                };
                let mut total = 0.0f32;
                for start in (0..n).step_by(N_CHUNK) {
                    let end = n.min(start + N_CHUNK);
                    let mut part = 0.0f32;
                    for n0 in (start..end).step_by(q) {
                        part = tc(&fma, part, (n0..n0 + q).map(pair));
                    }
                    total = if start == 0 { part } else { total + part };
                }
                gv[(s * b + i) * b + j] = total;
            }
        }
    }
    Ok(gv)
}

#[cfg(test)]
mod tests;
