//! The host model of [`super`]: quantize and dequantize `[L, M, K]` f32
//! tensors to MXFP8 (E4M3, E5M2), MXFP4 and NVFP4, bit for bit as the
//! [module contract](super) says. Every `*` is one `mul.rn.f32`, every
//! `/` one `div.rn.f32`.

use super::codec::{
    E2M1_NAN_BLOCK_CODE, E8M0_NAN, INV_6, INV_448, INV_57344, UE4M3_NAN, decode_e2m1, decode_e8m0,
    decode_ue4m3, e8m0_floor, e8m0_inverse, e8m0_rceil, encode_e2m1, encode_ue4m3,
};
use super::layout::{ScaleDims, ScaleLayout};
use crate::error::{Error, Result};
use crate::kernels::{check, fp8};

/// f32 bits of +Inf; magnitude bits above it are NaNs.
const F32_INF_BITS: u32 = 0x7F80_0000;

/// `448 · 6`, the numerator of the NVFP4 global encode scale.
pub const NVFP4_GLOBAL_NUMERATOR: f32 = 2688.0;

/// A block-scaled format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// MXFP8 with E4M3 elements: 32-element blocks, E8M0 scales.
    Mxfp8E4m3,
    /// MXFP8 with E5M2 elements: 32-element blocks, E8M0 scales.
    Mxfp8E5m2,
    /// MXFP4: E2M1 elements, 32-element blocks, E8M0 scales.
    Mxfp4,
    /// NVFP4: E2M1 elements, 16-element blocks, UE4M3 scales and one f32
    /// global scale per tensor.
    Nvfp4,
}

/// How the per-block scale is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ScaleMode {
    /// OCP MX v1.0 §6.3: `floor(log2 amax) − emax_elem` (MX formats only).
    Floor,
    /// cuBLAS / Transformer Engine: round `amax · rn(1/max_elem)` up to a
    /// power of two (MX formats only; their default).
    RCeil,
    /// The NVFP4 two-level recipe of Transformer Engine (NVFP4 only).
    Nvfp4,
}

impl Format {
    /// Every format.
    pub const ALL: [Format; 4] = [
        Format::Mxfp8E4m3,
        Format::Mxfp8E5m2,
        Format::Mxfp4,
        Format::Nvfp4,
    ];

    /// Elements per block: 32 (MX) or 16 (NVFP4).
    pub const fn block_size(self) -> usize {
        match self {
            Format::Nvfp4 => 16,
            _ => 32,
        }
    }

    /// Whether elements are 4-bit codes packed two per byte.
    pub const fn is_fp4(self) -> bool {
        matches!(self, Format::Mxfp4 | Format::Nvfp4)
    }

    /// The largest finite element value: 448, 57344 or 6.
    pub const fn element_max(self) -> f32 {
        match self {
            Format::Mxfp8E4m3 => 448.0,
            Format::Mxfp8E5m2 => 57344.0,
            Format::Mxfp4 | Format::Nvfp4 => 6.0,
        }
    }

    /// `emax_elem`, the exponent of the largest element binade: 8, 15, 2.
    pub const fn element_emax(self) -> u32 {
        match self {
            Format::Mxfp8E4m3 => 8,
            Format::Mxfp8E5m2 => 15,
            Format::Mxfp4 | Format::Nvfp4 => 2,
        }
    }

    /// `rn(1/element_max)`: the f32 constants `0x3B124925`, `0x37924925`,
    /// `0x3E2AAAAB`.
    pub const fn element_max_reciprocal(self) -> f32 {
        match self {
            Format::Mxfp8E4m3 => INV_448,
            Format::Mxfp8E5m2 => INV_57344,
            Format::Mxfp4 | Format::Nvfp4 => INV_6,
        }
    }

    /// The default scale mode: `RCeil` for MX formats, `Nvfp4` for NVFP4.
    pub const fn default_mode(self) -> ScaleMode {
        match self {
            Format::Nvfp4 => ScaleMode::Nvfp4,
            _ => ScaleMode::RCeil,
        }
    }

    /// Encodes one element (no scaling): E4M3/E5M2 as [`fp8`], E2M1 as
    /// [`encode_e2m1`].
    pub const fn encode_element(self, x: f32) -> u8 {
        match self {
            Format::Mxfp8E4m3 => fp8::encode_e4m3(x),
            Format::Mxfp8E5m2 => fp8::encode_e5m2(x),
            Format::Mxfp4 | Format::Nvfp4 => encode_e2m1(x),
        }
    }

    /// Decodes one element code (FP4: the low nibble).
    pub const fn decode_element(self, code: u8) -> f32 {
        match self {
            Format::Mxfp8E4m3 => fp8::decode_e4m3(code),
            Format::Mxfp8E5m2 => fp8::decode_e5m2(code),
            Format::Mxfp4 | Format::Nvfp4 => decode_e2m1(code),
        }
    }

    /// The element code of every element of a NaN block: what the
    /// element conversion gives a NaN (`0x7F` for FP8, `0x7` = +6 for
    /// E2M1).
    pub const fn nan_block_code(self) -> u8 {
        if self.is_fp4() {
            E2M1_NAN_BLOCK_CODE
        } else {
            fp8::NAN_CODE
        }
    }
}

/// A format with a scale mode that applies to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Recipe {
    format: Format,
    mode: ScaleMode,
}

impl Recipe {
    /// Pairs a format with a scale mode.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming both for a combination that is
    /// not defined: `Floor`/`RCeil` with NVFP4, `Nvfp4` with an MX format.
    pub fn new(format: Format, mode: ScaleMode) -> Result<Self> {
        let fits = match format {
            Format::Nvfp4 => mode == ScaleMode::Nvfp4,
            _ => mode != ScaleMode::Nvfp4,
        };
        if !fits {
            return Err(Error::invalid(format!(
                "block_scaled: scale mode {mode:?} is not defined for format {format:?} \
                 (MX formats take Floor or RCeil, NVFP4 takes Nvfp4)"
            )));
        }
        Ok(Self { format, mode })
    }

    /// The format's default recipe ([`Format::default_mode`]).
    pub const fn default_for(format: Format) -> Self {
        Self {
            format,
            mode: format.default_mode(),
        }
    }

    /// The format.
    pub const fn format(&self) -> Format {
        self.format
    }

    /// The scale mode.
    pub const fn mode(&self) -> ScaleMode {
        self.mode
    }
}

/// The sizes of an `[L, M, K]` input for a format: always valid once
/// built (every size ≥ 1, every derived length fits in `usize`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shape {
    l: usize,
    m: usize,
    k: usize,
    format: Format,
    scales: ScaleDims,
}

impl Shape {
    /// Checks `[L, M, K]` for `format`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the values when a size is zero or
    /// `L·M·K` (or the padded scale size) overflows `usize`.
    pub fn new(l: usize, m: usize, k: usize, format: Format) -> Result<Self> {
        if l == 0 || m == 0 || k == 0 {
            return Err(Error::invalid(format!(
                "block_scaled: shape [L, M, K] = [{l}, {m}, {k}] must have every size >= 1"
            )));
        }
        if l.checked_mul(m).and_then(|lm| lm.checked_mul(k)).is_none() {
            return Err(Error::invalid(format!(
                "block_scaled: L·M·K = {l}·{m}·{k} overflows usize"
            )));
        }
        let scales = ScaleDims::new(l, m, k.div_ceil(format.block_size()))?;
        Ok(Self {
            l,
            m,
            k,
            format,
            scales,
        })
    }

    /// `L`.
    pub fn l(&self) -> usize {
        self.l
    }
    /// `M`.
    pub fn m(&self) -> usize {
        self.m
    }
    /// `K`.
    pub fn k(&self) -> usize {
        self.k
    }
    /// The format the shape was checked for.
    pub fn format(&self) -> Format {
        self.format
    }
    /// `L·M·K`, the input length.
    pub fn len(&self) -> usize {
        self.l * self.m * self.k
    }
    /// Always `false`: every size is at least 1.
    pub fn is_empty(&self) -> bool {
        false
    }
    /// Code bytes per row: `K` (FP8) or `⌈K/2⌉` (FP4).
    pub fn row_code_bytes(&self) -> usize {
        if self.format.is_fp4() {
            self.k.div_ceil(2)
        } else {
            self.k
        }
    }
    /// Length of the code buffer, `L·M·row_code_bytes`.
    pub fn codes_len(&self) -> usize {
        self.l * self.m * self.row_code_bytes()
    }
    /// The extent of the scale tensor, `[L, M, ⌈K/block⌉]`.
    pub fn scale_dims(&self) -> ScaleDims {
        self.scales
    }
}

/// The NVFP4 per-tensor scales.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GlobalScale {
    /// `max |x|` over the whole tensor, NaNs ignored ([`fp8::host::absmax`]).
    pub amax: f32,
    /// `S_enc = 2688 / amax` (see the contract for 0, Inf and overflow).
    pub encode: f32,
    /// `S_dec = 1 / S_enc`, what dequantization multiplies by.
    pub decode: f32,
}

impl GlobalScale {
    /// The scales of a tensor whose NaN-ignoring amax is `amax`:
    /// `S_enc = min(2688 / amax, FLT_MAX)`, replaced by 1 when `amax = 0`
    /// or the quotient is 0 (`amax = +Inf`); `S_dec = 1 / S_enc`. This is
    /// Transformer Engine's `compute_global_encode_scaling_factor_FP4`.
    /// `amax` is meant to be a NaN-ignoring absmax (≥ +0); a NaN gives
    /// `S_enc = FLT_MAX` (the `min.f32` returns the non-NaN operand).
    pub fn from_amax(amax: f32) -> Self {
        let quotient = (NVFP4_GLOBAL_NUMERATOR / amax).min(f32::MAX);
        let encode = if amax == 0.0 || quotient == 0.0 {
            1.0
        } else {
            quotient
        };
        Self {
            amax,
            encode,
            decode: 1.0 / encode,
        }
    }
}

/// A quantized tensor: element codes, block scales in `layout`, and for
/// NVFP4 the global scale.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockScaled {
    /// The recipe it was quantized with.
    pub recipe: Recipe,
    /// Its shape.
    pub shape: Shape,
    /// The byte order of `scales`.
    pub layout: ScaleLayout,
    /// Row-major `[L, M, K]` bytes (FP8) or `[L, M, ⌈K/2⌉]` packed nibbles
    /// (FP4: element `2i` in the low nibble of byte `i`).
    pub codes: Vec<u8>,
    /// E8M0 (MX) or UE4M3 (NVFP4) bytes in `layout`, padding bytes 0.
    pub scales: Vec<u8>,
    /// NVFP4 only: the per-tensor scales.
    pub global: Option<GlobalScale>,
}

/// The block amax as integer magnitude bits: `max_u32(bits(x) & 0x7FFFFFFF)`
/// from 0. A NaN anywhere makes it exceed `0x7F800000`.
fn block_amax_bits(block: &[f32]) -> u32 {
    block
        .iter()
        .fold(0u32, |acc, x| acc.max(x.to_bits() & 0x7FFF_FFFF))
}

/// The byte of one code at element `k` of a row in the code buffer, with
/// its nibble shift for FP4.
fn write_code(row: &mut [u8], k: usize, code: u8, fp4: bool) {
    if fp4 {
        row[k / 2] |= (code & 0xF) << (4 * (k % 2));
    } else {
        row[k] = code;
    }
}

fn read_code(row: &[u8], k: usize, fp4: bool) -> u8 {
    if fp4 {
        (row[k / 2] >> (4 * (k % 2))) & 0xF
    } else {
        row[k]
    }
}

/// How one block's scale byte and element multiplier are chosen; built
/// once per tensor from the recipe (and, for NVFP4, the global scale).
#[derive(Clone, Copy)]
enum BlockRule {
    Floor {
        emax: u32,
    },
    RCeil {
        inv_max: f32,
    },
    Nvfp4 {
        global: GlobalScale,
        block_factor: f32,
    },
}

impl BlockRule {
    fn new(recipe: Recipe, xs: &[f32]) -> Self {
        let format = recipe.format;
        match recipe.mode {
            ScaleMode::Floor => Self::Floor {
                emax: format.element_emax(),
            },
            ScaleMode::RCeil => Self::RCeil {
                inv_max: format.element_max_reciprocal(),
            },
            ScaleMode::Nvfp4 => {
                let global = GlobalScale::from_amax(fp8::host::absmax(xs));
                Self::Nvfp4 {
                    global,
                    // S_enc · rn(1/6): one product per tensor, before amax_b.
                    block_factor: global.encode * INV_6,
                }
            }
        }
    }

    fn global(self) -> Option<GlobalScale> {
        match self {
            Self::Nvfp4 { global, .. } => Some(global),
            _ => None,
        }
    }

    /// The scale byte and element multiplier of a block whose
    /// [`block_amax_bits`] are `amax_bits`; `None` multiplier for a NaN
    /// block.
    fn apply(self, amax_bits: u32) -> (u8, Option<f32>) {
        let nan = amax_bits > F32_INF_BITS;
        let amax = f32::from_bits(amax_bits);
        match self {
            Self::Floor { .. } | Self::RCeil { .. } if nan => (E8M0_NAN, None),
            Self::Nvfp4 { .. } if nan => (UE4M3_NAN, None),
            Self::Floor { emax } => {
                let byte = e8m0_floor(amax, emax);
                (byte, Some(e8m0_inverse(byte)))
            }
            Self::RCeil { inv_max } => {
                let byte = e8m0_rceil(amax, inv_max);
                (byte, Some(e8m0_inverse(byte)))
            }
            Self::Nvfp4 {
                global,
                block_factor,
            } => {
                let sb = encode_ue4m3(amax * block_factor);
                let enc = (1.0 / (decode_ue4m3(sb) * global.decode)).min(f32::MAX);
                (sb, Some(enc))
            }
        }
    }
}

/// `[L, M, K] = [l, m, k] as Format`, for the messages.
pub(super) fn describe(shape: &Shape) -> String {
    format!(
        "[L, M, K] = [{}, {}, {}] as {:?}",
        shape.l, shape.m, shape.k, shape.format
    )
}

fn check_recipe(recipe: Recipe, shape: &Shape) -> Result<()> {
    if recipe.format == shape.format {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "block_scaled: shape was checked for {:?} but the recipe is {:?}",
        shape.format, recipe.format
    )))
}

/// Quantizes row-major `[L, M, K]` f32 `xs` with `recipe`, scales in
/// `layout` (see the [module contract](super)).
///
/// # Errors
/// [`Error::InvalidArgument`] when `xs.len() ≠ L·M·K` or `shape` was
/// built for another format than the recipe's.
pub fn quantize(
    xs: &[f32],
    shape: Shape,
    recipe: Recipe,
    layout: ScaleLayout,
) -> Result<BlockScaled> {
    check_recipe(recipe, &shape)?;
    check::len(
        "block_scaled",
        "xs",
        xs.len(),
        shape.len(),
        format_args!("L·M·K for {}", describe(&shape)),
    )?;
    let format = recipe.format;
    let fp4 = format.is_fp4();
    let rule = BlockRule::new(recipe, xs);
    let dims = shape.scale_dims();
    let mut codes = vec![0u8; shape.codes_len()];
    let mut scales = vec![0u8; layout.len(&dims)];
    let row_bytes = shape.row_code_bytes();
    let bs = format.block_size();
    for l in 0..shape.l {
        for m in 0..shape.m {
            let row_index = l * shape.m + m;
            let row = &xs[row_index * shape.k..][..shape.k];
            let out = &mut codes[row_index * row_bytes..][..row_bytes];
            for (kb, block) in row.chunks(bs).enumerate() {
                let (byte, multiplier) = rule.apply(block_amax_bits(block));
                scales[layout.offset_unchecked(&dims, l, m, kb)] = byte;
                for (i, &x) in block.iter().enumerate() {
                    let code = match multiplier {
                        Some(mult) => format.encode_element(x * mult),
                        None => format.nan_block_code(),
                    };
                    write_code(out, kb * bs + i, code, fp4);
                }
            }
        }
    }
    Ok(BlockScaled {
        recipe,
        shape,
        layout,
        codes,
        scales,
        global: rule.global(),
    })
}

/// Dequantizes: `y = decode(code) · decode_e8m0(scale)` (MX) or `y =
/// decode(code) · (decode_ue4m3(sb) · S_dec)` (NVFP4), row-major
/// `[L, M, K]`.
///
/// # Errors
/// [`Error::InvalidArgument`] when the buffers' lengths do not match the
/// shape and layout, the shape's format is not the recipe's, or an NVFP4
/// tensor has no global scale (or an MX tensor has one).
pub fn dequantize(q: &BlockScaled) -> Result<Vec<f32>> {
    let shape = q.shape;
    check_recipe(q.recipe, &shape)?;
    let dims = shape.scale_dims();
    check::len(
        "block_scaled",
        "codes",
        q.codes.len(),
        shape.codes_len(),
        format_args!("the codes of {}", describe(&shape)),
    )?;
    check::len(
        "block_scaled",
        "scales",
        q.scales.len(),
        q.layout.len(&dims),
        format_args!("the {:?} scales of {}", q.layout, describe(&shape)),
    )?;
    let format = q.recipe.format;
    let global_decode = match (format, q.global) {
        (Format::Nvfp4, Some(g)) => Some(g.decode),
        (Format::Nvfp4, None) => {
            return Err(Error::invalid(
                "block_scaled: an NVFP4 tensor needs its global scale",
            ));
        }
        (_, None) => None,
        (_, Some(_)) => {
            return Err(Error::invalid(format!(
                "block_scaled: a {format:?} tensor has no global scale, but one was given"
            )));
        }
    };
    let fp4 = format.is_fp4();
    let bs = format.block_size();
    let row_bytes = shape.row_code_bytes();
    let mut ys = vec![0f32; shape.len()];
    for l in 0..shape.l {
        for m in 0..shape.m {
            let row_index = l * shape.m + m;
            let row = &q.codes[row_index * row_bytes..][..row_bytes];
            let out = &mut ys[row_index * shape.k..][..shape.k];
            for (kb, block) in out.chunks_mut(bs).enumerate() {
                let byte = q.scales[q.layout.offset_unchecked(&dims, l, m, kb)];
                let block_decode = match global_decode {
                    Some(s_dec) => decode_ue4m3(byte) * s_dec,
                    None => decode_e8m0(byte),
                };
                for (i, y) in block.iter_mut().enumerate() {
                    let code = read_code(row, kb * bs + i, fp4);
                    *y = format.decode_element(code) * block_decode;
                }
            }
        }
    }
    Ok(ys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recipe_combinations() {
        for format in Format::ALL {
            for mode in [ScaleMode::Floor, ScaleMode::RCeil, ScaleMode::Nvfp4] {
                let ok = (format == Format::Nvfp4) == (mode == ScaleMode::Nvfp4);
                assert_eq!(Recipe::new(format, mode).is_ok(), ok, "{format:?} {mode:?}");
            }
            let d = Recipe::default_for(format);
            assert_eq!(Recipe::new(format, d.mode()).unwrap(), d);
        }
    }

    #[test]
    fn shape_errors() {
        assert!(Shape::new(0, 1, 1, Format::Mxfp4).is_err());
        assert!(Shape::new(1, 0, 1, Format::Mxfp4).is_err());
        assert!(Shape::new(1, 1, 0, Format::Mxfp4).is_err());
        assert!(Shape::new(usize::MAX, 2, 1, Format::Mxfp4).is_err());
        let s = Shape::new(2, 3, 33, Format::Mxfp4).unwrap();
        assert_eq!(s.row_code_bytes(), 17);
        assert_eq!(s.scale_dims().nkb(), 2);
        let s = Shape::new(1, 1, 17, Format::Nvfp4).unwrap();
        assert_eq!(s.scale_dims().nkb(), 2);
    }

    #[test]
    fn global_scale_specials() {
        let g = GlobalScale::from_amax(0.0);
        assert_eq!((g.encode, g.decode), (1.0, 1.0));
        let g = GlobalScale::from_amax(f32::INFINITY);
        assert_eq!((g.encode, g.decode), (1.0, 1.0));
        let g = GlobalScale::from_amax(f32::from_bits(1));
        assert_eq!(g.encode, f32::MAX);
        let g = GlobalScale::from_amax(2688.0);
        assert_eq!((g.encode, g.decode), (1.0, 1.0));
        assert_eq!(GlobalScale::from_amax(f32::NAN).encode, f32::MAX);
    }

    #[test]
    fn mismatched_inputs_are_errors() {
        let shape = Shape::new(1, 2, 40, Format::Mxfp4).unwrap();
        let xs = vec![1.0f32; 80];
        let r = Recipe::default_for(Format::Mxfp4);
        assert!(quantize(&xs[..79], shape, r, ScaleLayout::RowMajor).is_err());
        let nv = Recipe::default_for(Format::Nvfp4);
        assert!(quantize(&xs, shape, nv, ScaleLayout::RowMajor).is_err());
        let mut q = quantize(&xs, shape, r, ScaleLayout::Blocked128x4).unwrap();
        q.scales.pop();
        assert!(dequantize(&q).is_err());
        let mut q = quantize(&xs, shape, r, ScaleLayout::RowMajor).unwrap();
        q.global = Some(GlobalScale::from_amax(1.0));
        assert!(dequantize(&q).is_err());
    }
}
