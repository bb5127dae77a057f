//! Fragment and addressing helpers the tensor-core kernels share
//! ([`super::grouped`], [`super::tiled_values`]).
//!
//! tf32 operands are loaded as raw f32 bits (an 8×8 `.b16` matrix of
//! `ldmatrix` is an 8 × 4 `f32` matrix, exactly the tf32 fragment layout)
//! and converted with `cvt.rna.tf32.f32`.

use crate::dsl::types::{B32, MmaInput, Reg, U32, U64};
use crate::dsl::{GlobalPtr, KernelBuilder, SharedPtr};
use crate::tensor_core::InputFormat;

pub(super) fn log2(v: u32) -> u32 {
    v.trailing_zeros()
}

pub(super) fn gptr(r: Reg<U64>) -> GlobalPtr<U32> {
    GlobalPtr::from_reg(r)
}

pub(super) fn sptr<E>(r: Reg<U32>) -> SharedPtr<E> {
    SharedPtr::from_reg(r)
}

/// A raw f32 register (as loaded) as a tf32 operand of type `T`.
pub(super) fn tf32_operand<T: MmaInput>(b: &mut KernelBuilder, bits: Reg<U32>) -> Reg<T> {
    let f = b.f32_from_bits(bits);
    let t = b.cvt_to_tf32(f);
    let w = b.packed_bits(t);
    b.u32_as_packed::<T>(w)
}

/// `ldmatrix.x4` (no `.trans` unless `trans`) into four operand registers
/// of `T` (tf32: raw bits converted with `cvt.rna.tf32.f32`).
pub(super) fn ldsm4<T: MmaInput>(b: &mut KernelBuilder, p: Reg<U32>, trans: bool) -> [Reg<T>; 4] {
    if T::FORMAT == InputFormat::Tf32 {
        let raw = b.ldmatrix_x4::<B32, U32>(sptr(p), trans);
        raw.map(|r| {
            let u = b.b32_as_u32(r);
            tf32_operand::<T>(b, u)
        })
    } else {
        b.ldmatrix_x4::<T, U32>(sptr(p), trans)
    }
}
