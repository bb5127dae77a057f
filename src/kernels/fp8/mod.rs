//! FP8 (E4M3 / E5M2) codec and per-tensor scaled quantization.
//!
//! [`host`] is the bit-exact CPU model and the specification of the GPU
//! kernels of this family: the hardware path (`cvt.rn.satfinite.e4m3x2.f32`
//! and its e5m2 twin, sm_89+) and the integer software encoder used below
//! sm_89 must reproduce it byte for byte. Read the [`host`] module docs for
//! the full contract (rounding, subnormals, saturation, NaN, signed zero,
//! the amax/scale rules for every input).
//!
//! [`ptx`] generates the kernels per SM (grid-wide absmax in two passes,
//! quantize with the device-computed or a given scale, dequantize; the
//! hardware `cvt` on sm_89+, the integer codec everywhere else), and
//! [`launch`] runs them.
//!
//! # Entry points
//! Here at the family root, one request per operation: an [`Encoding`]
//! (format and device codec) for the stream-level entry points —
//! [`quantize_dev`], [`quantize_with_scale_dev`], [`dequantize_dev`],
//! [`dequantize_stats_dev`] (device buffers or foreign views), their
//! `*_raw` twins, [`quantize_on`] & co. (host slices on a stream) — and
//! the [`Format`] for the slice API on a
//! [`Backend`](crate::runtime::Backend) ([`quantize`], [`quantize_as`],
//! [`quantize_with_scale_as`], [`dequantize_as`], [`absmax`]), which runs
//! the SM's default codec and reports which implementation ran. The host
//! models (the spec: [`host::quantize_as`], [`host::dequantize_as`],
//! [`host::absmax`], …) are reached through [`host`] only; the scalar
//! codecs that define the formats ([`encode_e4m3`], [`decode_e4m3`], …)
//! are re-exported here.

pub mod host;
pub mod launch;
pub mod ptx;

pub use host::{
    CANONICAL_NAN, DECODE_E4M3, DECODE_E5M2, Format, NAN_CODE, Quantized, decode_e4m3, decode_e5m2,
    encode_e4m3, encode_e5m2,
};
pub use launch::{
    AbsmaxTrace, Encoding, absmax, absmax_dev, absmax_on, dequantize, dequantize_as,
    dequantize_dev, dequantize_on, dequantize_raw, dequantize_stats_dev, dequantize_stats_raw,
    quantize, quantize_as, quantize_dev, quantize_on, quantize_raw, quantize_with_scale,
    quantize_with_scale_as, quantize_with_scale_dev, quantize_with_scale_on,
    quantize_with_scale_raw,
};
pub use ptx::Codec;
