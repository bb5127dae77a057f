//! Conversions (`cvt` between integer and float widths, with explicit
//! rounding where the value can change), bit reinterpretation (`mov.b32`),
//! 16-bit pack/unpack and the hardware FP8 pair conversions. The
//! block-scale conversions (FP4, UE8M0, 8-bit plumbing) are in
//! `block_scale.rs`.

use super::core::KernelBuilder;
use crate::dsl::ir::*;
use crate::dsl::types::*;

impl KernelBuilder {
    #[track_caller]
    pub(in crate::dsl) fn cvt<D: RegType>(
        &mut self,
        dt: Ty,
        st: Ty,
        rnd: Option<CvtRnd>,
        a: Value,
    ) -> Reg<D> {
        self.def(|d| Op::Cvt { dt, st, rnd, d, a })
    }
    /// Zero-extend.
    #[track_caller]
    pub fn u32_to_u64(&mut self, a: impl Into<Src<U32>>) -> Reg<U64> {
        self.cvt(Ty::U64, Ty::U32, None, a.into().v)
    }
    /// Sign-extend.
    #[track_caller]
    pub fn s32_to_s64(&mut self, a: impl Into<Src<S32>>) -> Reg<S64> {
        self.cvt(Ty::S64, Ty::S32, None, a.into().v)
    }
    /// Keep the low 32 bits.
    #[track_caller]
    pub fn u64_to_u32(&mut self, a: impl Into<Src<U64>>) -> Reg<U32> {
        self.cvt(Ty::U32, Ty::U64, None, a.into().v)
    }
    /// Integer to float, rounded by `r`.
    #[track_caller]
    pub fn u32_to_f32(&mut self, r: Rounding, a: impl Into<Src<U32>>) -> Reg<F32> {
        self.cvt(Ty::F32, Ty::U32, Some(CvtRnd::Float(r)), a.into().v)
    }
    /// Signed integer to float, rounded by `r`.
    #[track_caller]
    pub fn s32_to_f32(&mut self, r: Rounding, a: impl Into<Src<S32>>) -> Reg<F32> {
        self.cvt(Ty::F32, Ty::S32, Some(CvtRnd::Float(r)), a.into().v)
    }
    /// Float to signed integer: saturating, NaN → 0.
    #[track_caller]
    pub fn f32_to_s32(&mut self, r: IntRounding, a: impl Into<Src<F32>>) -> Reg<S32> {
        self.cvt(Ty::S32, Ty::F32, Some(CvtRnd::Int(r)), a.into().v)
    }
    /// Float to unsigned integer: saturating, NaN → 0.
    #[track_caller]
    pub fn f32_to_u32(&mut self, r: IntRounding, a: impl Into<Src<F32>>) -> Reg<U32> {
        self.cvt(Ty::U32, Ty::F32, Some(CvtRnd::Int(r)), a.into().v)
    }
    /// Round to an integral float.
    #[track_caller]
    pub fn f32_round(&mut self, r: IntRounding, a: impl Into<Src<F32>>) -> Reg<F32> {
        self.cvt(Ty::F32, Ty::F32, Some(CvtRnd::Int(r)), a.into().v)
    }
    /// Exact widening.
    #[track_caller]
    pub fn f32_to_f64(&mut self, a: impl Into<Src<F32>>) -> Reg<F64> {
        self.cvt(Ty::F64, Ty::F32, None, a.into().v)
    }
    /// Narrowing, rounded by `r`.
    #[track_caller]
    pub fn f64_to_f32(&mut self, r: Rounding, a: impl Into<Src<F64>>) -> Reg<F32> {
        self.cvt(Ty::F32, Ty::F64, Some(CvtRnd::Float(r)), a.into().v)
    }
    /// Exact f16 (held in a `B16`) to f32.
    #[track_caller]
    pub fn f16_to_f32(&mut self, a: Reg<B16>) -> Reg<F32> {
        self.cvt(Ty::F32, Ty::F16, None, a.value())
    }
    /// Low 16 bits of a u32.
    #[track_caller]
    pub fn u32_to_b16(&mut self, a: impl Into<Src<U32>>) -> Reg<B16> {
        self.cvt(Ty::U16, Ty::U32, None, a.into().v)
    }
    /// Zero-extend 16 bits.
    #[track_caller]
    pub fn b16_to_u32(&mut self, a: Reg<B16>) -> Reg<U32> {
        self.cvt(Ty::U32, Ty::U16, None, a.value())
    }
    /// Reinterpret bits (`mov.b32`).
    #[track_caller]
    pub fn f32_bits(&mut self, a: impl Into<Src<F32>>) -> Reg<U32> {
        let a = a.into().v;
        self.def(|d| Op::Mov { ty: Ty::B32, d, a })
    }
    /// Reinterpret bits (`mov.b32`).
    #[track_caller]
    pub fn f32_from_bits(&mut self, a: impl Into<Src<U32>>) -> Reg<F32> {
        let a = a.into().v;
        self.def(|d| Op::Mov { ty: Ty::B32, d, a })
    }
    /// Reinterpret bits (`mov.b32`).
    #[track_caller]
    pub fn u32_as_s32(&mut self, a: impl Into<Src<U32>>) -> Reg<S32> {
        let a = a.into().v;
        self.def(|d| Op::Mov { ty: Ty::B32, d, a })
    }
    /// Reinterpret bits (`mov.b32`).
    #[track_caller]
    pub fn s32_as_u32(&mut self, a: impl Into<Src<S32>>) -> Reg<U32> {
        let a = a.into().v;
        self.def(|d| Op::Mov { ty: Ty::B32, d, a })
    }
    /// Reinterpret bits (`mov.b32`).
    #[track_caller]
    pub fn u32_as_b32(&mut self, a: impl Into<Src<U32>>) -> Reg<B32> {
        let a = a.into().v;
        self.def(|d| Op::Mov { ty: Ty::B32, d, a })
    }
    /// Reinterpret bits (`mov.b32`).
    #[track_caller]
    pub fn b32_as_u32(&mut self, a: Reg<B32>) -> Reg<U32> {
        self.def(|d| Op::Mov {
            ty: Ty::B32,
            d,
            a: a.value(),
        })
    }
    /// Split 32 bits into (low, high) halves.
    #[track_caller]
    pub fn unpack_2x16(&mut self, a: Reg<B32>) -> (Reg<B16>, Reg<B16>) {
        let (lo, hi) = (self.reg::<B16>(), self.reg::<B16>());
        self.push(Op::Unpack2x16 {
            lo: lo.id(),
            hi: hi.id(),
            a: a.id(),
        });
        (lo, hi)
    }
    /// Join two halves: `hi << 16 | lo`.
    #[track_caller]
    pub fn pack_2x16(&mut self, lo: Reg<B16>, hi: Reg<B16>) -> Reg<B32> {
        self.def(|d| Op::Pack2x16 {
            d,
            lo: lo.id(),
            hi: hi.id(),
        })
    }
    /// Hardware FP8 encode of two floats (sm_89+): `cvt.rn.satfinite`, so
    /// round-to-nearest-even, finite overflow and ±Inf saturate to the
    /// largest finite value, NaN becomes NaN. `hi` lands in bits 15:8.
    #[track_caller]
    pub fn cvt_to_fp8x2(
        &mut self,
        fmt: Fp8Format,
        hi: impl Into<Src<F32>>,
        lo: impl Into<Src<F32>>,
    ) -> Reg<B16> {
        let (hi, lo) = (hi.into().v, lo.into().v);
        self.def(|d| Op::CvtToFp8x2 { fmt, d, hi, lo })
    }
    /// Hardware FP8 decode of two codes to `f16x2` (sm_89+): bits 15:8 of
    /// `a` become the high half.
    #[track_caller]
    pub fn cvt_from_fp8x2(&mut self, fmt: Fp8Format, a: Reg<B16>) -> Reg<B32> {
        self.def(|d| Op::CvtFromFp8x2 { fmt, d, a: a.id() })
    }
}
