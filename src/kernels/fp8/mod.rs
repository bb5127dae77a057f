//! FP8 (E4M3 / E5M2) codec and per-tensor scaled quantization.
//!
//! [`host`] is the bit-exact CPU model and the specification of the GPU
//! kernels of this family: the hardware path (`cvt.rn.satfinite.e4m3x2.f32`
//! and its e5m2 twin, sm_89+) and the integer software encoder used below
//! sm_89 must reproduce it byte for byte. Read the [`host`] module docs for
//! the full contract (rounding, subnormals, saturation, NaN, signed zero,
//! the amax/scale rules for every input).
//!
//! Everything public in [`host`] is re-exported here.

pub mod host;

pub use host::*;
