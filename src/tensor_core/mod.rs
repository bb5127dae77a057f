//! One model of tensor-core arithmetic (issue 31): the block FMA that an
//! NVIDIA tensor core computes for `mma.sync` with f16, bf16 or tf32
//! operands and an f32 accumulator, per architecture, and the conversions
//! into and out of those formats.
//!
//! The model is the one published by F. A. Khattak and M. Mikaitis,
//! *Accurate Models of NVIDIA Tensor Cores* (arXiv:2512.07004), whose MATLAB
//! code (BSD-2-Clause, github.com/north-numerical-computing/MATLAB-tensor-core,
//! commit `b12b5a7`) is cited below by file and line. This is an independent
//! Rust implementation of the rules that code states; no text of it is
//! copied. `docs/tensor-cores.md` states the contract and what a GPU run has
//! still to settle.
//!
//! # One block
//!
//! `d = c + Σ a_k·b_k` over at most [`BlockFma::width`] products
//! ([`BlockFma::dot`] chains blocks through `c`, ascending `k`):
//!
//! 1. **Specials first.** A NaN operand, a NaN `c` or an `∞·0` product gives
//!    NaN; otherwise a `+∞` and a `−∞` among the products and `c` give NaN;
//!    otherwise one infinite sign gives that infinity (`GEMM.m` 227–238, where
//!    the products are formed in double precision, so `∞·0` is NaN there
//!    too). The NaN returned is [`CANONICAL_NAN`].
//! 2. **Exact products.** Each operand is split into a significand and an
//!    exponent `max(⌊log2|x|⌋, emin)` of its format (subnormals kept with the
//!    format's minimum exponent), and the product keeps the unnormalised
//!    significand in `[0, 4)` with the exponent `e_a + e_b`
//!    (`Generic_BFMA_TC.m` 111–125, `denorm_prd = 1`). Zero products take no
//!    part (73–79), nor does a zero `c` (1082–1084, `c_min_exp_limit = 0`).
//! 3. **Alignment.** The largest of those exponents and `c`'s exponent
//!    (`max(e_c, −126)`), raised to [`BlockFma::min_align_exp`] if it is
//!    lower (1098–1105), is the block's exponent. Every term is written with
//!    `23 + neab` fraction bits ([`BlockFma::extra_align_bits`] = `neab`,
//!    1070, 1108–1110) and shifted right to that exponent, **truncating**
//!    its magnitude (no sticky bit, `stkbitenabled = 0`; 1127–1128).
//! 4. **One exact signed sum** of the aligned integers (501), then **one
//!    normalisation** (594–614).
//! 5. **Final rounding** to f32 (subnormals produced, 277–300): toward zero
//!    for every architecture's published model (`frmode = 'rz'`; the mantissa
//!    is cut at 23 bits, 310–311), or to nearest even for the published
//!    B200 "RN" variant (`B200TCRN.m` 54, 287–290). A result whose biased
//!    exponent reaches 255 is `±∞`, even under truncation (329–335).
//! 6. **Zeros.** An exact zero sum, or a block whose products are all zero
//!    with `c = ±0`, gives `+0` (81–86, 504–508). A negative sum that
//!    truncates to nothing in f32 keeps its sign: `−0` (315–317).
//!
//! # Chaining
//!
//! A dot product over any `K` is split into blocks of `width` products in
//! ascending `k`; block `i`'s result is block `i + 1`'s `c` (`GEMM.m`
//! 116–121 pad `K` with zero products, which step 2 drops, and 246–256 run
//! the blocks in order). A `k16` instruction on a width-8 architecture is
//! therefore two chained blocks, `k` 0–7 first.

mod block;
mod convert;
mod tile;

pub use block::CANONICAL_NAN;
pub use convert::{
    CANONICAL_NAN_F16, CANONICAL_NAN_TF32, bf16_to_f32, cvt_rn_bf16x2_f32, cvt_rn_f16x2_f32,
    f16_to_f32, f32_to_bf16_rn, f32_to_f16_rn, f32_to_tf32_rna, tf32_to_f32,
};

use crate::target::Sm;

/// The format of the `A` and `B` operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InputFormat {
    /// IEEE binary16 (`.f16`), given as its 16 bits.
    F16,
    /// bfloat16 (`.bf16`), given as its 16 bits.
    Bf16,
    /// TensorFloat-32 (`.tf32`), given as the 32 bits of an f32 whose low 13
    /// bits the tensor core does not read (they are ignored here: the
    /// published harness feeds tf32 values as f32 truncated to 10 fraction
    /// bits, `GEMM.m` 38–41, and `cvt.rna.tf32.f32` clears them).
    Tf32,
}

impl InputFormat {
    /// Fraction bits of the format (10, 7, 10).
    pub const fn fraction_bits(self) -> u32 {
        match self {
            InputFormat::F16 | InputFormat::Tf32 => 10,
            InputFormat::Bf16 => 7,
        }
    }

    /// Exponent bits of the format (5, 8, 8).
    pub const fn exponent_bits(self) -> u32 {
        match self {
            InputFormat::F16 => 5,
            InputFormat::Bf16 | InputFormat::Tf32 => 8,
        }
    }

    /// The PTX type name (`f16`, `bf16`, `tf32`).
    pub const fn ptx_name(self) -> &'static str {
        match self {
            InputFormat::F16 => "f16",
            InputFormat::Bf16 => "bf16",
            InputFormat::Tf32 => "tf32",
        }
    }
}

impl std::fmt::Display for InputFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.ptx_name())
    }
}

/// How a block's exact (truncated-alignment) sum is rounded to f32.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FinalRounding {
    /// Toward zero (`frmode = 'rz'`): the published model of every
    /// architecture for f32 output.
    TowardZero,
    /// To nearest, ties to even (`frmode = 'rne'`): the published
    /// `B200TCRN.m` variant, kept for comparison (no SM maps to it).
    NearestEven,
}

/// The published model a parameter set comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PublishedModel {
    /// `models/A100TC.m` (sm_80; sm_86 is assumed to match).
    A100,
    /// `models/AdaTC.m` (sm_89; `L40STC.m` has the same parameters).
    Ada,
    /// `models/H100TC.m` (sm_90; `H200TC.m` calls it).
    H100,
    /// `models/B200TC.m` (sm_100; `RTXPRO6000TC.m`, sm_120, calls it).
    B200,
    /// `models/B200TCRN.m`: B200 with round-to-nearest-even final rounding.
    B200Rn,
}

/// One block FMA: the parameters of the published model for one
/// architecture and operand format. See the module documentation for the
/// arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlockFma {
    /// Operand format.
    pub input: InputFormat,
    /// Products per block (the model's `fma`): one normalisation and one
    /// rounding per block.
    pub width: usize,
    /// Extra alignment bits (`neab`): terms are aligned with `23 + neab`
    /// fraction bits before truncation.
    pub extra_align_bits: u32,
    /// Rounding of each block's result to f32 (`frmode`).
    pub rounding: FinalRounding,
    /// The block exponent is at least this (`min_exp_limit`), so products
    /// far below the f32 range are truncated on a fixed grid.
    pub min_align_exp: i32,
    /// Where the parameters come from.
    pub source: PublishedModel,
}

impl BlockFma {
    /// The parameters of one published model for one operand format.
    ///
    /// | model | f16 / bf16 | tf32 | `neab` | `min_exp_limit` | final |
    /// |---|---|---|---|---|---|
    /// | A100 (`A100TC.m` 50, 52, 55, 72; tf32 98–99) | 8 | 4 | 1 | −132 | RZ |
    /// | Ada (`AdaTC.m` 51, 53, 56, 73; tf32 104–105) | 8 | 4 | 1 | −132 | RZ |
    /// | H100 (`H100TC.m` 48, 50, 53, 70; tf32 103–104) | 16 | 8 | 2 | −133 | RZ |
    /// | B200 (`B200TC.m` 50, 51, 54, 71; tf32 98–99) | 16 | 8 | 2 | −133 | RZ |
    /// | B200 RN (`B200TCRN.m` 50, 51, 54, 71; tf32 98–99) | 16 | 8 | 2 | −133 | RNE |
    ///
    /// Every one of them has `stkbitenabled = 0`, `global_alignment = 1`,
    /// `denorm_prd = 1`, `c_min_exp_limit = 0`, `prd_limit = 0` and keeps
    /// subnormal inputs and outputs (`A100TC.m` 61–86 and the same lines of
    /// the others); the tf32 branch changes only the width.
    pub const fn published(model: PublishedModel, input: InputFormat) -> BlockFma {
        let tf32 = matches!(input, InputFormat::Tf32);
        let (width, tf32_width, neab, min_exp, rounding) = match model {
            PublishedModel::A100 | PublishedModel::Ada => {
                (8, 4, 1, -132, FinalRounding::TowardZero)
            }
            PublishedModel::H100 | PublishedModel::B200 => {
                (16, 8, 2, -133, FinalRounding::TowardZero)
            }
            PublishedModel::B200Rn => (16, 8, 2, -133, FinalRounding::NearestEven),
        };
        BlockFma {
            input,
            width: if tf32 { tf32_width } else { width },
            extra_align_bits: neab,
            rounding,
            min_align_exp: min_exp,
            source: model,
        }
    }
}

/// The published model for an SM target, if the target's tensor cores are
/// modelled:
///
/// * `sm_80`, `sm_86` → A100 (the A2, an sm_86 part, was validated by the
///   authors against the A100 model: `Validate_TC_models.m` 29–31, 98–99);
/// * `sm_89` → Ada (`AdaTC.m`; `L40STC.m` agrees);
/// * `sm_90` → H100 (`H100TC.m`; `H200TC.m` 26 calls it);
/// * `sm_100`, `sm_100a` → B200 (`B200TC.m`); `sm_120`, `sm_120a` → B200
///   (`RTXPRO6000TC.m` calls `B200TC`);
/// * `sm_70`, `sm_75` → `None`: Volta's tensor cores take only f16 (a
///   different model, `V100TC.m`, width 4, no extra bit, no exponent clamp)
///   and Turing's were not modelled by the authors; neither has the bf16 or
///   tf32 `mma` shapes (sm_80, PTX 7.0), so nothing here applies.
pub const fn published_model(sm: Sm) -> Option<PublishedModel> {
    match sm {
        Sm::Sm70 | Sm::Sm75 => None,
        Sm::Sm80 | Sm::Sm86 => Some(PublishedModel::A100),
        Sm::Sm89 => Some(PublishedModel::Ada),
        Sm::Sm90 => Some(PublishedModel::H100),
        Sm::Sm100 | Sm::Sm100a | Sm::Sm120 | Sm::Sm120a => Some(PublishedModel::B200),
    }
}

/// The block FMA of `sm`'s tensor cores for `input` operands, or `None`
/// where they are not modelled (see [`published_model`]).
pub const fn params(sm: Sm, input: InputFormat) -> Option<BlockFma> {
    match published_model(sm) {
        Some(model) => Some(BlockFma::published(model, input)),
        None => None,
    }
}

/// A request the model cannot answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TensorCoreError {
    /// No model of `sm`'s tensor cores (below sm_80).
    #[error("no tensor-core model for {sm} with {input} operands (modelled from sm_80)")]
    Unsupported {
        /// The target asked for.
        sm: Sm,
        /// The operand format asked for.
        input: InputFormat,
    },
    /// A matrix does not have the length its shape needs.
    #[error("matrix {name} has {len} elements, but its shape {rows}x{cols} needs {}", rows * cols)]
    Shape {
        /// `"A"`, `"B"` or `"C"`.
        name: &'static str,
        /// Elements given.
        len: usize,
        /// Rows of the shape.
        rows: usize,
        /// Columns of the shape.
        cols: usize,
    },
}

/// `D = A·B + C` on one tile, every element by [`BlockFma::dot`]: `A` is
/// `m × k` row-major, `B` is `k × n` row-major, `C` and the result are
/// `m × n` row-major. `A`/`B` elements are bit patterns of `fma.input` (the
/// low 16 bits for f16/bf16). For `m16n8k16` pass `m = 16, n = 8, k = 16`;
/// any shape is accepted.
pub fn mma_tile(
    fma: &BlockFma,
    (m, n, k): (usize, usize, usize),
    a: &[u32],
    b: &[u32],
    c: &[f32],
) -> Result<Vec<f32>, TensorCoreError> {
    let check = |name, len: usize, rows, cols| {
        if Some(len) == usize::checked_mul(rows, cols) {
            Ok(())
        } else {
            Err(TensorCoreError::Shape {
                name,
                len,
                rows,
                cols,
            })
        }
    };
    check("A", a.len(), m, k)?;
    check("B", b.len(), k, n)?;
    check("C", c.len(), m, n)?;
    Ok(fma.tile((m, n, k), a, b, c))
}

/// [`mma_tile`] with the block FMA of `sm` for `input` operands, or
/// [`TensorCoreError::Unsupported`] below sm_80.
pub fn mma(
    sm: Sm,
    input: InputFormat,
    shape: (usize, usize, usize),
    a: &[u32],
    b: &[u32],
    c: &[f32],
) -> Result<Vec<f32>, TensorCoreError> {
    let fma = params(sm, input).ok_or(TensorCoreError::Unsupported { sm, input })?;
    mma_tile(&fma, shape, a, b, c)
}

#[cfg(test)]
mod tests;
