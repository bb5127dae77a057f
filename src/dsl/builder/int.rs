//! Integer arithmetic and logic: add/sub/mul/div/rem, min/max, bitwise
//! ops and shifts, bit counting, multiply-add (narrow and wide), bit-field
//! extract/insert and byte permute.

use super::core::KernelBuilder;
use super::error::BuildError;
use crate::dsl::ir::*;
use crate::dsl::types::*;

impl KernelBuilder {
    #[track_caller]
    fn int<T: IntType>(&mut self, op: IntOp, a: Src<T>, b: Src<T>) -> Reg<T> {
        self.def(|d| Op::Int {
            op,
            ty: T::CLASS.ty(),
            d,
            a: a.v,
            b: b.v,
        })
    }

    /// Wrapping `a + b`.
    #[track_caller]
    pub fn add<T: IntType>(&mut self, a: impl Into<Src<T>>, b: impl Into<Src<T>>) -> Reg<T> {
        self.int(IntOp::Add, a.into(), b.into())
    }
    /// Wrapping `a - b`.
    #[track_caller]
    pub fn sub<T: IntType>(&mut self, a: impl Into<Src<T>>, b: impl Into<Src<T>>) -> Reg<T> {
        self.int(IntOp::Sub, a.into(), b.into())
    }
    /// Low half of `a * b`.
    #[track_caller]
    pub fn mul_lo<T: IntType>(&mut self, a: impl Into<Src<T>>, b: impl Into<Src<T>>) -> Reg<T> {
        self.int(IntOp::MulLo, a.into(), b.into())
    }
    /// High half of `a * b`.
    #[track_caller]
    pub fn mul_hi<T: IntType>(&mut self, a: impl Into<Src<T>>, b: impl Into<Src<T>>) -> Reg<T> {
        self.int(IntOp::MulHi, a.into(), b.into())
    }
    /// `a / b` (truncating). A zero divisor is the caller's bug: PTX leaves
    /// the result unspecified, so kernels must guard it.
    #[track_caller]
    pub fn div<T: IntType>(&mut self, a: impl Into<Src<T>>, b: impl Into<Src<T>>) -> Reg<T> {
        let b = b.into();
        if b.as_int() == Some(0) {
            self.fail(BuildError::DivisionByZero { op: "division" });
        }
        self.int(IntOp::Div, a.into(), b)
    }
    /// `a % b` (truncating; see [`Self::div`]).
    #[track_caller]
    pub fn rem<T: IntType>(&mut self, a: impl Into<Src<T>>, b: impl Into<Src<T>>) -> Reg<T> {
        let b = b.into();
        if b.as_int() == Some(0) {
            self.fail(BuildError::DivisionByZero { op: "remainder" });
        }
        self.int(IntOp::Rem, a.into(), b)
    }
    /// `min(a, b)` (signedness from `T`).
    #[track_caller]
    pub fn min<T: IntType>(&mut self, a: impl Into<Src<T>>, b: impl Into<Src<T>>) -> Reg<T> {
        self.int(IntOp::Min, a.into(), b.into())
    }
    /// `max(a, b)` (signedness from `T`).
    #[track_caller]
    pub fn max<T: IntType>(&mut self, a: impl Into<Src<T>>, b: impl Into<Src<T>>) -> Reg<T> {
        self.int(IntOp::Max, a.into(), b.into())
    }
    /// Bitwise and.
    #[track_caller]
    pub fn and<T: IntType>(&mut self, a: impl Into<Src<T>>, b: impl Into<Src<T>>) -> Reg<T> {
        self.int(IntOp::And, a.into(), b.into())
    }
    /// Bitwise or.
    #[track_caller]
    pub fn or<T: IntType>(&mut self, a: impl Into<Src<T>>, b: impl Into<Src<T>>) -> Reg<T> {
        self.int(IntOp::Or, a.into(), b.into())
    }
    /// Bitwise xor.
    #[track_caller]
    pub fn xor<T: IntType>(&mut self, a: impl Into<Src<T>>, b: impl Into<Src<T>>) -> Reg<T> {
        self.int(IntOp::Xor, a.into(), b.into())
    }
    /// `a << n`; amounts ≥ the width give 0 (PTX clamps, unlike Rust).
    #[track_caller]
    pub fn shl<T: IntType>(&mut self, a: impl Into<Src<T>>, n: impl Into<Src<U32>>) -> Reg<T> {
        let (a, n) = (a.into().v, n.into().v);
        self.def(|d| Op::Int {
            op: IntOp::Shl,
            ty: T::CLASS.ty(),
            d,
            a,
            b: n,
        })
    }
    /// `a >> n`: logical for unsigned `T`, arithmetic for signed; amounts ≥
    /// the width give 0 or the sign fill.
    #[track_caller]
    pub fn shr<T: IntType>(&mut self, a: impl Into<Src<T>>, n: impl Into<Src<U32>>) -> Reg<T> {
        let (a, n) = (a.into().v, n.into().v);
        self.def(|d| Op::Int {
            op: IntOp::Shr,
            ty: T::CLASS.ty(),
            d,
            a,
            b: n,
        })
    }
    /// Bitwise not.
    #[track_caller]
    pub fn not<T: IntType>(&mut self, a: impl Into<Src<T>>) -> Reg<T> {
        let a = a.into().v;
        self.def(|d| Op::Unary {
            op: UnOp::Not,
            ty: T::CLASS.ty(),
            d,
            a,
        })
    }
    /// Count leading zeros (`clz(0) = 32`).
    #[track_caller]
    pub fn clz(&mut self, a: impl Into<Src<U32>>) -> Reg<U32> {
        let a = a.into().v;
        self.def(|d| Op::Unary {
            op: UnOp::Clz,
            ty: Ty::U32,
            d,
            a,
        })
    }
    /// Population count.
    #[track_caller]
    pub fn popc(&mut self, a: impl Into<Src<U32>>) -> Reg<U32> {
        let a = a.into().v;
        self.def(|d| Op::Unary {
            op: UnOp::Popc,
            ty: Ty::U32,
            d,
            a,
        })
    }
    /// Reverse the bits.
    #[track_caller]
    pub fn brev(&mut self, a: impl Into<Src<U32>>) -> Reg<U32> {
        let a = a.into().v;
        self.def(|d| Op::Unary {
            op: UnOp::Brev,
            ty: Ty::U32,
            d,
            a,
        })
    }
    /// `a * b + c`, low half.
    #[track_caller]
    pub fn mad_lo<T: IntType>(
        &mut self,
        a: impl Into<Src<T>>,
        b: impl Into<Src<T>>,
        c: impl Into<Src<T>>,
    ) -> Reg<T> {
        let (a, b, c) = (a.into().v, b.into().v, c.into().v);
        self.def(|d| Op::Mad {
            wide: false,
            ty: T::CLASS.ty(),
            d,
            a,
            b,
            c,
        })
    }
    /// Full 64-bit product of two u32.
    #[track_caller]
    pub fn mul_wide_u32(&mut self, a: impl Into<Src<U32>>, b: impl Into<Src<U32>>) -> Reg<U64> {
        let (a, b) = (a.into().v, b.into().v);
        self.def(|d| Op::MulWide {
            signed: false,
            d,
            a,
            b,
        })
    }
    /// `u64(a) * u64(b) + c`.
    #[track_caller]
    pub fn mad_wide_u32(
        &mut self,
        a: impl Into<Src<U32>>,
        b: impl Into<Src<U32>>,
        c: impl Into<Src<U64>>,
    ) -> Reg<U64> {
        let (a, b, c) = (a.into().v, b.into().v, c.into().v);
        self.def(|d| Op::Mad {
            wide: true,
            ty: Ty::U32,
            d,
            a,
            b,
            c,
        })
    }
    /// Bit-field extract: `len` bits of `a` from `pos` (both taken mod 256;
    /// `len = 0` gives 0; bits past the top are zero for `U32`, the sign for
    /// `S32`).
    #[track_caller]
    pub fn bfe<T: IntType>(
        &mut self,
        a: impl Into<Src<T>>,
        pos: impl Into<Src<U32>>,
        len: impl Into<Src<U32>>,
    ) -> Reg<T> {
        let (a, pos, len) = (a.into().v, pos.into().v, len.into().v);
        self.def(|d| Op::Bfe {
            ty: T::CLASS.ty(),
            d,
            a,
            pos,
            len,
        })
    }
    /// Bit-field insert: `b` with `len` low bits of `a` placed at `pos`.
    #[track_caller]
    pub fn bfi(
        &mut self,
        a: impl Into<Src<U32>>,
        b: impl Into<Src<U32>>,
        pos: impl Into<Src<U32>>,
        len: impl Into<Src<U32>>,
    ) -> Reg<U32> {
        let (a, b, pos, len) = (a.into().v, b.into().v, pos.into().v, len.into().v);
        self.def(|d| Op::Bfi {
            ty: Ty::B32,
            d,
            a,
            b,
            pos,
            len,
        })
    }
    /// Byte permute (generic mode).
    #[track_caller]
    pub fn prmt(
        &mut self,
        a: impl Into<Src<U32>>,
        b: impl Into<Src<U32>>,
        sel: impl Into<Src<U32>>,
    ) -> Reg<U32> {
        let (a, b, sel) = (a.into().v, b.into().v, sel.into().v);
        self.def(|d| Op::Prmt { d, a, b, sel })
    }
}
