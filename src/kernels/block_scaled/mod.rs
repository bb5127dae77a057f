//! Block-scaled quantization (issue #11): MXFP8 (E4M3, E5M2 elements),
//! MXFP4 and NVFP4, with three scale-factor layouts.
//!
//! [`host`] and [`layout`] are the bit-exact host model (the spec) and the
//! layout maps; [`ptx`] generates the kernels (quantize, dequantize, the
//! NVFP4 global scale, layout conversion) and [`launch`] runs them on a
//! [`Stream`](crate::runtime::Stream) or any
//! [`Backend`](crate::runtime::Backend). The kernels reproduce these bytes
//! exactly, both with the hardware conversions of sm_100a/sm_120a
//! ([`ptx::codec`]; FP8 cvt from sm_89) and with an integer software path
//! elsewhere. Each step below names the PTX instruction it corresponds to.
//!
//! **Entry points.** One request, [`Quantization`] `{ shape, recipe,
//! layout }`, for every quantize and dequantize entry point at the family
//! root: [`quantize`] / [`dequantize`] (host memory, any
//! [`Backend`](crate::runtime::Backend)), [`quantize_on`] /
//! [`dequantize_on`] (a given stream and [`Codec`]), [`quantize_dev`] /
//! [`dequantize_dev`] (device buffers or foreign views), [`quantize_raw`] /
//! [`dequantize_raw`] (another stack's raw addresses); [`Relayout`]
//! `{ dims, from, to }` for [`convert_layout`] & co. The host models are
//! [`host::quantize`], [`host::dequantize`] and [`convert`].
//!
//! **Targets.** The hardware E2M1/UE8M0 variants are generated for the
//! arch-specific `sm_100a` and `sm_120a` only (not forward compatible: a
//! device gets them only when it is exactly that architecture). The family
//! targets `sm_100f`/`sm_120f` (PTX 8.8) would also accept the forms; they
//! are not offered, since a plain `sm_100`/`sm_120` module with the
//! software codec already runs on every later device and the `a` targets
//! cover the hardware path where it exists.
//!
//! Sources (cited by tag): **\[OCP\]** OCP Microscaling Formats (MX) v1.0
//! §5.4.1 (E8M0), §6.3 (scale rule); **\[cuBLAS\]** cuBLAS §3.1.4.4 "1D Block
//! Quantization" and "1D Block Scaling Factors Layout"; **\[PTX\]** PTX ISA
//! §9.7.9.21 `cvt` (e2m1x2, ue8m0x2, `.satfinite`); **\[TE\]**
//! NVIDIA/TransformerEngine (`core_nvfp4.cuh`, `quantize_mxfp8.cuh`,
//! `ptx.cuh` `exp2f_rcp`); **\[CUTLASS\]**
//! `include/cutlass/detail/sm100_blockscaled_layout.hpp`; **\[seed 002\]**
//! the 6-D atom layout note; **\[GPU MODE\]** gpu-mode/reference-kernels
//! `problems/nvidia/nvfp4_dual_gemm/reference.py`. Bug reports the rules
//! guard against: flashinfer #2440 and PR #4023, TE #2407 and PR #3262,
//! vllm #45741 and #50084, pytorch PR #152665.
//!
//! # Input, blocks, codes
//! * Input: row-major f32 `[L, M, K]` ([`Shape`]; every size ≥ 1). Blocks
//!   run along K: 32 elements for MX formats, 16 for NVFP4, `nkb =
//!   ⌈K/block⌉` per row. A last partial block is padded with `+0.0`: the
//!   padding takes part in the block amax (where it changes nothing, the
//!   amax starts at 0) and is never stored.
//! * FP8 codes: row-major `[L, M, K]` bytes. FP4 codes: `[L, M, ⌈K/2⌉]`
//!   bytes, element `2i` in the low nibble of byte `i`, `2i+1` in the high
//!   nibble (the order `cvt.rn.satfinite.e2m1x2.f32 d, x1, x0` produces).
//!   **Odd K**: every row starts on a byte boundary, and the high nibble
//!   of a row's last byte is `0x0` (the code of the `+0.0` padding).
//!
//! # Element codecs ([`codec`])
//! * **E4M3 / E5M2**: [`fp8::encode_e4m3`](crate::kernels::fp8::encode_e4m3)
//!   and `encode_e5m2`, i.e. `cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32` with
//!   ptxsmith's NaN choice (every NaN → `0x7F`); see [`crate::kernels::fp8`].
//! * **E2M1** ([`encode_e2m1`]): values {0, 0.5, 1, 1.5, 2, 3, 4, 6},
//!   bit 3 the sign. Round to nearest, ties to even, with the decision
//!   points 0.25 → 0, 0.75 → 1, 1.25 → 1, 1.75 → 2, 2.5 → 2, 3.5 → 4,
//!   5 → 4 (the lower/upper value with the even code); `|x| > 5` and ±Inf
//!   saturate to ±6 (`.satfinite`). **Sign of zero kept**: `+0 → 0x0`,
//!   `−0 → 0x8`, and a negative value that rounds to zero gives `0x8`, as
//!   the FP8 contract and ptxsmith's simulator do. (TE's reference and
//!   ModelOpt give `0x0` for −0, torchao `0x8`; the hardware result is
//!   unverified here, so a hardware-cvt kernel must canonicalise if
//!   sm_100a disagrees.) **NaN → `0x7`** (+6): \[PTX\] `.satfinite` turns
//!   NaN into +MAX_NORM for e2m1. Hardware: `cvt.rn.satfinite.e2m1x2.f32`;
//!   software: [`encode_e2m1_branch_free`]'s steps (the magnitude rounded
//!   to each binade's spacing by three `fma.rn`/`add.rn` onto 2^23, the
//!   `min.u32` of their bits), equal to the spec on all 2^32 inputs.
//! * **UE4M3** (NVFP4 scales, [`encode_ue4m3`]): the E4M3 encoding of the
//!   magnitude (PTX has no unsigned E4M3 conversion, so a kernel uses
//!   `cvt.rn.satfinite.e4m3x2.f32` on a value ≥ +0): RNE with subnormals,
//!   saturation to 448 (`0x7E`), NaN → `0x7F`, sign bit 0.
//! * **E8M0** (\[OCP §5.4.1\]): value `2^(b−127)`; `0xFF` is NaN; `0x00` is
//!   2^-127, the f32 subnormal `0x00400000` ([`decode_e8m0`] special-cases
//!   it, TE PR #3262). No zero, no Inf.
//!
//! # MX scale rules (MXFP8, MXFP4)
//! Per block, **amax** is `max_u32(bits(x) & 0x7FFFFFFF)` from 0 — an
//! integer max of magnitude bits (`and.b32`, `max.u32`; f32 magnitudes
//! order like their bits). It is NaN-propagating: the block **contains a
//! NaN** iff amax bits `> 0x7F800000`, and this is tested before any scale
//! rule. Otherwise amax is the exact f32 `max |x|` (+Inf if an element is
//! ±Inf). Being an integer max it is order-independent.
//!
//! * **`Floor`** (\[OCP §6.3\], [`e8m0_floor`]): `floor(log2 amax) −
//!   emax_elem` clamped to [−127, 127], plus 127, from the exponent bits
//!   (`shr.u32` by 23 and `max.s32(e − emax, 0)` on the biased exponent;
//!   never `log2`, which is wrong near powers of two, torchao PR #4725).
//!   `emax_elem` = 8 (E4M3), 15 (E5M2), 2 (E2M1). A zero or subnormal amax
//!   has exponent ≤ −127 and gives `0x00`.
//! * **`RCeil`** (\[cuBLAS\], \[TE\]; the default, [`e8m0_rceil`]): `s = amax ·
//!   rn(1/max_elem)` as one `mul.rn.f32` with the f32 constants
//!   `0x3B124925` (1/448), `0x37924925` (1/57344), `0x3E2AAAAB` (1/6);
//!   then `cvt.rp.satfinite.ue8m0x2.f32` of `s` ([`ue8m0_round_up`]): the
//!   smallest power of two ≥ `s`; `s ≤ 2^-127` (zero, the f32 subnormals
//!   up to `0x00400000`) → `0x00`; `s > 2^127` → `0xFE`. Integer form:
//!   `e + (f ≠ 0)` for a normal `s` saturated at 254, `f > 0x400000` for
//!   a subnormal one.
//! * The two rules differ (by one binade) exactly when amax's significand
//!   exceeds max_elem's (1.75 for FP8, 1.5 for E2M1), up to the rounding
//!   of the product: `Floor` then saturates the largest elements
//!   (microxcaling #4: 957 → 896 in E4M3), `RCeil` never does. Record the
//!   mode with the data: both are called "MXFP4" in the wild.
//! * **Element** = `cvt.rn.satfinite(x · 2^(127 − scale))`, the multiply
//!   one `mul.rn.f32` by [`e8m0_inverse`]`(scale)`, an exact power of two:
//!   `(254 − b) << 23` for `b ≤ 0xFD`; for **`0xFE` it is 2^-127, the f32
//!   subnormal `0x00400000`** (not 0: flashinfer PR #4023 built it as 0
//!   and got `Inf · 0 = NaN`). Products that land in the f32 subnormal
//!   range are far below every element's zero threshold, so they encode
//!   ±0 whether or not the device flushes them.
//!
//! Special blocks (MX):
//! * **NaN** anywhere in the block: scale **`0xFF`**, and every element
//!   code of the block is the element conversion of a NaN — `0x7F` for
//!   E4M3/E5M2, `0x7` for E2M1 — as if each element were multiplied by
//!   `e8m0_inverse(0xFF)` = NaN. Dequantization gives NaN for the whole
//!   block either way (scale NaN).
//! * **±Inf** (no NaN): amax = +Inf; both rules give **`0xFE`** (`RCeil`
//!   by saturation; for `Floor` this is our choice, where a literal
//!   exponent read would give a meaningless `128 − emax`). The Inf
//!   elements saturate to ±max_elem and dequantize to ±Inf (max_elem ·
//!   2^127 overflows f32); the finite elements are multiplied by 2^-127
//!   and become ±0 unless `|x|` exceeds 2^117 (E4M3), 2^110 (E5M2) or
//!   2^125 (E2M1).
//! * **All-zero** block: amax 0 → scale `0x00` in both rules; codes are
//!   the signed zeros (`0x00`/`0x80`, E2M1 `0x0`/`0x8`).
//! * **Subnormal amax**: `Floor` `0x00`; `RCeil` `0x00` (the product is
//!   below 2^-127). The multiplier 2^127 is exact on a subnormal `x` (the
//!   product is normal), so e.g. a block whose amax is 2^-127 encodes
//!   that element as 1.0 and dequantizes it back to 2^-127 exactly.
//!
//! # NVFP4 (\[TE\] `core_nvfp4.cuh`, with IEEE division only)
//! * Global: `amax_g` = NaN-ignoring `max |x|` over the **whole** `[L, M,
//!   K]` tensor ([`fp8::host::absmax`](crate::kernels::fp8::host::absmax): PTX
//!   `max.f32` fold from +0, so one NaN poisons only its own block).
//!   `S_enc = min(2688 / amax_g, FLT_MAX)` (`div.rn.f32`, `min.f32`),
//!   replaced by 1 when `amax_g = 0` or the quotient is 0 (`amax_g =
//!   +Inf`, TE's rule). `S_dec = 1 / S_enc` (`div.rn.f32`; equal to TE's
//!   double-precision reciprocal rounded to f32). See [`GlobalScale`].
//! * Per block: amax as for MX (integer max of magnitude bits, NaN test
//!   first). `sb = e4m3_satfinite(amax_b · (S_enc · rn(1/6)))`: the inner
//!   product once per tensor, then one `mul.rn.f32` and
//!   `cvt.rn.satfinite.e4m3x2.f32`; the order matters. `enc = min(1 /
//!   (f32(sb) · S_dec), FLT_MAX)` (`mul.rn`, `div.rn`, `min.f32`), `q =
//!   e2m1_satfinite(x · enc)` (`mul.rn.f32`, `cvt.rn.satfinite.e2m1x2.f32`).
//!   Approximate reciprocals (`rcp.approx`, FlashInfer's default) are not
//!   allowed: their bits are unspecified.
//! * **NaN block**: scale byte **`0x7F`** (the E4M3 NaN), element codes
//!   all `0x7` (what `x · NaN` converts to).
//! * **`sb = 0`** (the block's amax below 2^-10 / (S_enc/6), e.g. a block
//!   2.2e-6 times smaller than `amax_g`): `f32(sb) · S_dec = 0`, `1/0 =
//!   +Inf`, `enc = FLT_MAX`; every element is `e2m1(x · FLT_MAX)`, so
//!   `|x| > 5/FLT_MAX` (≈ 1.47e-38, just above the smallest normal)
//!   saturates to ±6, smaller values get the code of `x · FLT_MAX`, and
//!   zeros keep their sign. It dequantizes to signed zeros (`code · 0`). (With `1/0 = Inf`
//!   unclamped, an exact 0 would become `0 · Inf = NaN` → +6: FlashInfer
//!   #2440's family of bug.)
//! * **±Inf**: `amax_g = +Inf`, so `S_enc = S_dec = 1`; the Inf block gets
//!   `sb = 0x7E` (448, saturated) and its Inf elements ±6.
//! * All-zero tensor: `S_enc = 1`, every `sb = 0`, codes signed zeros.
//!
//! # Dequantization ([`dequantize`])
//! MX: `y = decode_elem(q) · decode_e8m0(scale)`, one `mul.rn.f32`; exact
//! except where it overflows to ±Inf (every element value times a power
//! of two down to 2^-127 is an f32). NVFP4: `d = f32(sb) · S_dec` once
//! per block, then `y = e2m1(q) · d`. A NaN scale (`0xFF`, `0x7F`) gives
//! NaN for the whole block.
//!
//! # Scale layouts
//! [`ScaleLayout`], all over the logical `[L, M, nkb]` scale tensor
//! ([`ScaleDims`]), with forward maps [`ScaleLayout::offset`], inverses
//! [`ScaleLayout::index_of`] (`None` for padding), sizes
//! [`ScaleLayout::len`] and [`convert`] (padding written as 0):
//! * **`RowMajor`** `[L, M, nkb]`, no padding.
//! * **`Blocked128x4`** (\[cuBLAS\], torchao/PyTorch `to_blocked`): per
//!   batch, M padded to a multiple of 128 and nkb to a multiple of 4 (`Mp`,
//!   `Kp`); 128×4 tiles of 512 bytes, row-block-major (`tile = (m/128) ·
//!   (Kp/4) + kb/4`), within a tile `(r%32)·16 + (r/32)·4 + kb%4` with `r =
//!   m % 128`; batch `l` at `l · Mp · Kp`. Padding bytes are 0: for E8M0
//!   that reads as 2^-127, for UE4M3 as 0 (never pad with 127 = 1.0, aiter
//!   PR #2900; never leave them uninitialised, vllm #45741).
//! * **`Atom6D`**: the seed-002 tensor `[32, 4, ⌈M/128⌉, 4, ⌈nkb/4⌉, L]`
//!   indexed by ([`ref_to_permuted_index`]) `(m%32, (m%128)/32, m/128,
//!   kb%4, kb/4, l)` (inverse [`permuted_to_ref_index`]), stored densely
//!   row-major — the bytes of the seed's `permute_scales(...)`, which ends
//!   in `.contiguous()`. It pads like `Blocked128x4` (M to 128, nkb to 4,
//!   per batch; same total size). The seed's shapes assume M % 128 = 0 and
//!   K % 64 = 0 with 16-element blocks; here nkb is any size and is padded.
//!
//! **Which bytes CUTLASS reads.** \[CUTLASS\] builds the SM100 block-scaled
//! GEMM's scale layout as `tile_to_shape(SfKMajorAtom, (M, K, L),
//! Step<_2,_1,_3>)` with `SfKMajorAtom = ((32,4),(SFVec,4)) :
//! ((16,4),(0,1))`: a 512-byte atom in which row `m%32` has stride 16, row
//! group `(m%128)/32` stride 4 and `kb%4` stride 1, atoms tiled K-first,
//! then M, then L. That is exactly `Blocked128x4`, batch-major. \[GPU MODE\]
//! builds its `[32, 4, rest_m, 4, rest_k, l]` scale tensor as a
//! `.permute(3, 4, 1, 5, 2, 0)` *view* of a contiguous `(l, rest_m,
//! rest_k, 32, 4, 4)` allocation — again the `Blocked128x4` bytes, with
//! 6-D strides `(16, 4, Kt·512, 1, 512, Mt·Kt·512)`
//! ([`ScaleDims::atom_strides_cutlass`]). So: **hand CUTLASS (and cuBLAS,
//! `torch._scaled_mm`) `Blocked128x4`**. The 6-D atom index is a view of
//! those bytes; the dense `Atom6D` is a different byte order (equal to
//! `Blocked128x4` only for one tile, `M ≤ 128`, `nkb ≤ 4`, `L = 1`; not for
//! `L = 1` in general), useful only to a consumer that reads the seed's
//! `.contiguous()` tensor. `tests/block_scaled_host.rs` checks all three
//! relations exhaustively.
//!
//! # Sizes and errors
//! Every mistake is [`Error::InvalidArgument`](crate::Error::InvalidArgument)
//! naming the values, and nothing is returned half-written: a zero size
//! or an overflowing `L·M·K` / padded scale size ([`Shape::new`],
//! [`ScaleDims::new`]); an input, code or scale buffer whose length does
//! not match; an out-of-range scale index or offset; an undefined
//! format/mode pair ([`Recipe::new`]: `Floor`/`RCeil` with NVFP4, `Nvfp4`
//! with an MX format); an NVFP4 tensor without its global scale.

pub mod codec;
pub mod host;
pub mod launch;
pub mod layout;
pub mod ptx;

/// The old path of [`ptx::codec`].
#[deprecated(
    note = "moved to `block_scaled::ptx::codec` (a family's parts live in its `ptx/` folder)"
)]
pub mod codec_ptx {
    pub use super::ptx::codec::*;
}

pub use codec::{
    decode_e2m1, decode_e8m0, decode_ue4m3, e8m0_floor, e8m0_inverse, e8m0_rceil, encode_e2m1,
    encode_e2m1_branch_free, encode_ue4m3, ue8m0_round_up,
};
pub use host::{BlockScaled, Format, GlobalScale, Recipe, ScaleMode, Shape};
pub use launch::{
    Quantization, Relayout, convert_layout, convert_layout_dev, convert_layout_dev_tuned,
    convert_layout_on, dequantize, dequantize_dev, dequantize_dev_tuned, dequantize_on,
    dequantize_raw, quantize, quantize_dev, quantize_dev_tuned, quantize_on, quantize_raw,
};
pub use layout::{
    AtomIndex, ScaleDims, ScaleLayout, convert, permuted_to_ref_index, ref_to_permuted_index,
};
pub use ptx::Codec;
