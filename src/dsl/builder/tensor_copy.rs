//! Tensor-map copies (`cp.async.bulk.tensor`, sm_90, PTX ISA 8.0,
//! [`Feature::TensorCopy`](crate::Feature::TensorCopy)), issue 31: one
//! thread copies a box of a tensor described by a [`TensorMap`] kernel
//! parameter into shared memory — landing swizzled per the map
//! ([`crate::tensor_map::swizzle`]) — and completes its bytes on an
//! mbarrier, like [`cp_async_bulk`](KernelBuilder::cp_async_bulk); with
//! `.multicast::cluster` into several CTAs of a cluster.
//!
//! PTX ISA 8.x "Data Movement and Conversion Instructions:
//! cp.async.bulk.tensor": the tensor map operand is the generic address of
//! the map, here a by-value kernel parameter (`.param .align 64 .b8
//! name[128]`; ptxas refuses the parameter's name itself as the operand,
//! "State space mismatch", so its address is taken with `mov` and
//! `cvta.param`); the coordinates are `.s32`, innermost first; elements
//! outside the tensor land as zeros (or NaN, the map's OOB fill) and count
//! in the complete-tx bytes.

use super::bulk_copy::SharedMbarrier;
use super::core::KernelBuilder;
use super::error::BuildError;
use super::memory::SharedPtr;
use super::params::{ArgValue, ParamKind, ParamType};
use crate::dsl::ir::*;
use crate::dsl::types::*;
use crate::tensor_map::{Swizzle, TensorMap};

/// Parameter marker: a tensor map passed by value (the host passes a
/// [`TensorMap`], the kernel gets a [`TensorMapRef`]).
#[derive(Debug, Clone, Copy)]
pub struct TensorMapParam;

/// The generic address of a kernel's tensor-map parameter, the operand of
/// [`cp_async_bulk_tensor`](KernelBuilder::cp_async_bulk_tensor).
#[derive(Debug, Clone, Copy)]
pub struct TensorMapRef {
    pub(crate) reg: Reg<U64>,
}

impl TensorMapRef {
    /// The address register.
    pub fn addr(self) -> Reg<U64> {
        self.reg
    }
}

impl ParamType for TensorMapParam {
    type Host = TensorMap;
    type Dev = TensorMapRef;
    const KIND: ParamKind = ParamKind::TensorMap;
    fn load(b: &mut KernelBuilder, name: &str) -> TensorMapRef {
        b.tensor_map_param(name)
    }
    fn arg(h: TensorMap) -> ArgValue {
        ArgValue::TensorMap(h)
    }
}

impl KernelBuilder {
    /// The generic address of tensor-map parameter `name` (declared by
    /// [`params`](Self::params) with a [`TensorMapParam`] field).
    #[track_caller]
    pub fn tensor_map_param(&mut self, name: &str) -> TensorMapRef {
        self.entry_only("tensor_map_param");
        let name = name.to_string();
        TensorMapRef {
            reg: self.def(|d| Op::ParamAddr { d, name }),
        }
    }

    /// `cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes
    /// [dst], [map, {coords}], [bar]`: copy the box of `map` at `coords`
    /// (1 to 3 of them, the map's rank, innermost first; another count is
    /// [`BuildError::TensorCoords`]) into this CTA's shared memory at
    /// `dst` (128-byte aligned, and aligned to the swizzle pattern: 256,
    /// 512, 1,024 bytes), complete-tx of the box's bytes on `bar`.
    #[track_caller]
    pub fn cp_async_bulk_tensor<E>(
        &mut self,
        dst: SharedPtr<E>,
        map: TensorMapRef,
        coords: &[Src<S32>],
        bar: SharedMbarrier,
    ) {
        self.tensor_copy(dst, map, coords, bar, None);
    }

    /// [`cp_async_bulk_tensor`](Self::cp_async_bulk_tensor) with
    /// `.multicast::cluster`: the box lands at `dst`'s offset of every CTA
    /// whose rank is set in the 16-bit `mask` (a constant naming none or
    /// a bit past 15 is [`BuildError::ClusterMask`]), completing on the
    /// barrier at `bar`'s offset in each; one L2 read serves them all.
    #[track_caller]
    pub fn cp_async_bulk_tensor_multicast<E>(
        &mut self,
        dst: SharedPtr<E>,
        map: TensorMapRef,
        coords: &[Src<S32>],
        bar: SharedMbarrier,
        mask: impl Into<Src<U32>>,
    ) {
        let m = self.cluster_mask_operand(mask.into());
        self.tensor_copy(dst, map, coords, bar, Some(m));
    }

    #[track_caller]
    fn tensor_copy<E>(
        &mut self,
        dst: SharedPtr<E>,
        map: TensorMapRef,
        coords: &[Src<S32>],
        bar: SharedMbarrier,
        mask: Option<Value>,
    ) {
        if !(1..=3).contains(&coords.len()) {
            self.fail(BuildError::TensorCoords { n: coords.len() });
            return;
        }
        // the coordinates are registers (a constant is moved into one)
        let coords = coords
            .iter()
            .map(|&c| match c.v {
                Value::Reg(r) => r,
                _ => self.mov::<S32>(c).id(),
            })
            .collect();
        self.push(Op::CpAsyncBulkTensor {
            dst: dst.reg.id(),
            map: map.reg.id(),
            coords,
            bar: bar.reg.id(),
            mask,
        });
    }

    /// The shared address of 16-byte chunk `chunk` of row `row` of a tile
    /// a tensor-map copy with `swizzle` landed at `tile` (rows of
    /// `row_bytes` bytes, the box's inner dimension; `tile` aligned to the
    /// swizzle pattern, as the copy requires): `tile + s(row × row_bytes +
    /// 16 × chunk)` with `s` the swizzle ([`crate::tensor_map::swizzle_offset`]:
    /// bits 4.. of the offset XORed with bits 7..). Unswizzled, the plain
    /// row-major offset.
    #[track_caller]
    pub fn swizzled_chunk<E>(
        &mut self,
        tile: SharedPtr<E>,
        swizzle: Swizzle,
        row_bytes: u32,
        row: impl Into<Src<U32>>,
        chunk: impl Into<Src<U32>>,
    ) -> SharedPtr<E> {
        let c16 = self.shl(chunk, 4u32);
        let off = self.mad_lo(row, row_bytes, c16);
        let off = match swizzle {
            Swizzle::None => off,
            s => {
                let bits = s.span_bytes().map_or(0, |b| (b / 16).trailing_zeros());
                let m = self.and(off, ((1u32 << bits) - 1) << 7);
                let m = self.shr(m, 3u32);
                self.xor(off, m)
            }
        };
        let a = self.add(tile.reg, off);
        SharedPtr::from_reg(a)
    }
}
