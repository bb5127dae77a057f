//! Tensor-core operands and `mma.sync` (issue 31): the packed half and
//! tf32 conversions (`cvt.rn.{f16x2,bf16x2}.f32`, `cvt.rna.tf32.f32`, sm_80,
//! PTX 7.0) and their exact way back to f32, and
//! `mma.sync.aligned.{m16n8k16,m16n8k8}.row.col.f32.T.T.f32` with typed
//! per-thread fragments ([`FragA`], [`FragB`], [`FragC`]).
//!
//! # Fragment layout (PTX ISA 8.x §9.7.14.5.8 for `m16n8k16`, §9.7.14.5.7
//! for `m16n8k8`)
//!
//! With `groupID = laneid >> 2` and `threadID_in_group = laneid % 4`:
//!
//! * `m16n8k16` f16/bf16: `A` (16×16, row-major) is four `.b32` registers
//!   of two halves each: `a0,a1` at row `groupID`, `a2,a3` at row
//!   `groupID + 8`, `a4,a5` at row `groupID`, `a6,a7` at row `groupID + 8`;
//!   columns `threadID_in_group·2 + (i & 1)` for `a0..a3` and the same
//!   `+ 8` for `a4..a7` (register `r` holds elements `2r` (low half) and
//!   `2r + 1`). `B` (16×8, column-major) is two `.b32` registers: `b0,b1`
//!   at rows `threadID_in_group·2 + (i & 1)`, `b2,b3` the same `+ 8`,
//!   column `groupID`.
//! * `m16n8k8` tf32: `A` (16×8) is four `.b32`: `a0` (row `groupID`, col
//!   `threadID_in_group`), `a1` (row `groupID + 8`, same col), `a2` (row
//!   `groupID`, col `+ 4`), `a3` (row `groupID + 8`, col `+ 4`). `B` (8×8)
//!   is two: `b0` at row `threadID_in_group`, `b1` at row `+ 4`, column
//!   `groupID`.
//! * `C`/`D` (16×8 f32), both shapes: `c0,c1` at row `groupID`, `c2,c3` at
//!   row `groupID + 8`, column `threadID_in_group·2 + (i & 1)`.
//!
//! The simulator gathers and scatters the warp's fragments by the same
//! table (`sim::interp::mma`).

use super::core::KernelBuilder;
use crate::dsl::ir::*;
use crate::dsl::types::*;
use crate::tensor_core::InputFormat;

/// One thread's share of the `A` operand of `mma.sync` (16×k, row-major):
/// four `.b32` registers of `T` (see the module docs for the layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FragA<T: MmaInput> {
    /// `a0..a3` in PTX operand order.
    pub regs: [Reg<T>; 4],
}

/// One thread's share of the `B` operand of `mma.sync` (k×8,
/// column-major): two `.b32` registers of `T`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FragB<T: MmaInput> {
    /// `b0, b1` in PTX operand order.
    pub regs: [Reg<T>; 2],
}

/// One thread's share of the f32 accumulator `C` / result `D` (16×8):
/// four `.f32` registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FragC {
    /// `c0..c3` (or `d0..d3`) in PTX operand order.
    pub regs: [Reg<F32>; 4],
}

impl KernelBuilder {
    /// `cvt.rn.f16x2.f32 d, hi, lo` (sm_80, PTX 7.0): both rounded to
    /// nearest even (overflow → ±∞, subnormals kept); `hi` lands in bits
    /// 31:16. Host model: [`crate::tensor_core::cvt_rn_f16x2_f32`].
    #[track_caller]
    pub fn cvt_to_f16x2(&mut self, hi: impl Into<Src<F32>>, lo: impl Into<Src<F32>>) -> Reg<F16x2> {
        self.half2(InputFormat::F16, hi.into().v, lo.into().v)
    }

    /// `cvt.rn.bf16x2.f32 d, hi, lo` (sm_80, PTX 7.0): both rounded to
    /// nearest even; `hi` lands in bits 31:16. Host model:
    /// [`crate::tensor_core::cvt_rn_bf16x2_f32`].
    #[track_caller]
    pub fn cvt_to_bf16x2(
        &mut self,
        hi: impl Into<Src<F32>>,
        lo: impl Into<Src<F32>>,
    ) -> Reg<Bf16x2> {
        self.half2(InputFormat::Bf16, hi.into().v, lo.into().v)
    }

    #[track_caller]
    fn half2<T: RegType>(&mut self, fmt: InputFormat, hi: Value, lo: Value) -> Reg<T> {
        self.def(|d| Op::CvtToHalf2 { fmt, d, hi, lo })
    }

    /// `cvt.rna.tf32.f32 d, a` (sm_80, PTX 7.0): to nearest, ties away
    /// from zero, 10 fraction bits (the low 13 bits zero). Host model:
    /// [`crate::tensor_core::f32_to_tf32_rna`].
    #[track_caller]
    pub fn cvt_to_tf32(&mut self, a: impl Into<Src<F32>>) -> Reg<Tf32> {
        let a = a.into().v;
        self.def(|d| Op::CvtToTf32 { d, a })
    }

    /// Reinterpret 32 bits as a packed type (`mov.b32`), e.g. an `f16x2`
    /// pair loaded from memory as a `u32`.
    #[track_caller]
    pub fn u32_as_packed<T: Packed32>(&mut self, a: impl Into<Src<U32>>) -> Reg<T> {
        let a = a.into().v;
        self.def(|d| Op::Mov { ty: Ty::B32, d, a })
    }

    /// The 32 bits of a packed register as a `u32` (`mov.b32`).
    #[track_caller]
    pub fn packed_bits<T: Packed32>(&mut self, a: Reg<T>) -> Reg<U32> {
        self.def(|d| Op::Mov {
            ty: Ty::B32,
            d,
            a: a.value(),
        })
    }

    /// Both halves of an `f16x2` as f32 `(lo, hi)`, exactly: `mov.b32
    /// {lo, hi}` and `cvt.f32.f16` on each (every target).
    #[track_caller]
    pub fn f16x2_to_f32x2(&mut self, a: Reg<F16x2>) -> (Reg<F32>, Reg<F32>) {
        // the same `.b32` register, seen as raw bits (no instruction)
        let (lo, hi) = self.unpack_2x16(Reg::<B32>::new(a.idx, a.owner));
        (self.f16_to_f32(lo), self.f16_to_f32(hi))
    }

    /// Both halves of a `bf16x2` as f32 `(lo, hi)`, exactly: a bf16 is the
    /// top half of an f32, so `lo = bits << 16` and `hi = bits & 0xFFFF0000`
    /// (integer operations every target has; `cvt.f32.bf16` needs sm_90).
    /// A NaN keeps its payload (unlike [`crate::tensor_core::bf16_to_f32`],
    /// which returns the canonical NaN).
    #[track_caller]
    pub fn bf16x2_to_f32x2(&mut self, a: Reg<Bf16x2>) -> (Reg<F32>, Reg<F32>) {
        let bits = self.packed_bits(a);
        let lo = self.shl(bits, 16u32);
        let hi = self.and(bits, 0xFFFF_0000u32);
        (self.f32_from_bits(lo), self.f32_from_bits(hi))
    }

    /// A tf32 register's value as f32 (`mov.b32`: the same bits, exact).
    #[track_caller]
    pub fn tf32_to_f32(&mut self, a: Reg<Tf32>) -> Reg<F32> {
        self.def(|d| Op::Mov {
            ty: Ty::B32,
            d,
            a: a.value(),
        })
    }

    /// An accumulator fragment of four `+0.0` (`mov.f32`).
    #[track_caller]
    pub fn frag_c_zero(&mut self) -> FragC {
        FragC {
            regs: [0; 4].map(|_| self.mov(0.0f32)),
        }
    }

    /// `mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32`
    /// (or `m16n8k8 … .tf32.tf32 …` for [`Tf32`] operands): `D = A·B + C`
    /// on a 16×8 tile, warp-collective (all 32 threads, converged).
    /// sm_80, PTX 7.0. The arithmetic is the tensor core's own (not IEEE):
    /// [`crate::tensor_core::params`] models it per SM.
    #[track_caller]
    pub fn mma_sync<T: MmaInput>(&mut self, a: FragA<T>, b: FragB<T>, c: FragC) -> FragC {
        let d = [0; 4].map(|_| self.reg::<F32>());
        self.push(Op::Mma {
            fmt: T::FORMAT,
            d: d.map(Reg::id),
            a: a.regs.map(Reg::id),
            b: b.regs.map(Reg::id),
            c: c.regs.map(Reg::id),
        });
        FragC { regs: d }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Error, Feature, Sm};

    fn kernel(sm: Sm) -> crate::Result<crate::dsl::PtxModule> {
        let mut b = KernelBuilder::new("k", sm);
        let x = b.mov(1.5f32);
        let h = b.cvt_to_bf16x2(x, 2.0f32);
        let t = b.cvt_to_tf32(x);
        let f = b.cvt_to_f16x2(x, x);
        let a = FragA { regs: [h; 4] };
        let bb = FragB { regs: [h; 2] };
        let c = b.frag_c_zero();
        let _ = b.mma_sync(a, bb, c);
        let _ = b.mma_sync(FragA { regs: [t; 4] }, FragB { regs: [t; 2] }, c);
        let _ = b.f16x2_to_f32x2(f);
        let _ = b.bf16x2_to_f32x2(h);
        b.finish()
    }

    #[test]
    fn prints_the_forms_at_ptx_7_0() {
        let m = kernel(Sm::Sm80).unwrap();
        assert!(m.ptx.contains(".version 7.0\n"), "{}", m.ptx);
        for s in [
            "cvt.rn.bf16x2.f32 %b0, %f0, 0f40000000;",
            "cvt.rna.tf32.f32 %b1, %f0;",
            "cvt.rn.f16x2.f32 %b2, %f0, %f0;",
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f5, %f6, %f7, %f8}, \
             {%b0, %b0, %b0, %b0}, {%b0, %b0}, {%f1, %f2, %f3, %f4};",
            "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%f9, %f10, %f11, %f12}, \
             {%b1, %b1, %b1, %b1}, {%b1, %b1}, {%f1, %f2, %f3, %f4};",
        ] {
            assert!(m.ptx.contains(s), "{s} missing in\n{}", m.ptx);
        }
    }

    #[test]
    fn refused_below_sm_80() {
        for sm in [Sm::Sm70, Sm::Sm75] {
            match kernel(sm) {
                Err(Error::UnsupportedFeature {
                    feature, sm: at, ..
                }) => {
                    assert_eq!(at, sm);
                    assert_eq!(feature, Feature::Bf16Cvt);
                }
                other => panic!("{sm}: {other:?}"),
            }
        }
    }
}
