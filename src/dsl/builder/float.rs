//! Float arithmetic, always with an explicit rounding mode (`add.rn`,
//! `mul.rn`, `fma.rn`, `div.rn`, `sqrt.rn`, `rcp.rn`, …): there is no way
//! to print an unmodified `add.f32`, so ptxas never contracts a multiply
//! and an add. Also min/max (with and without NaN propagation), abs and
//! neg.

use super::core::KernelBuilder;
use crate::dsl::ir::*;
use crate::dsl::types::*;

impl KernelBuilder {
    #[track_caller]
    fn float<T: FloatType>(&mut self, op: FloatOp, r: Rounding, a: Src<T>, b: Src<T>) -> Reg<T> {
        self.def(|d| Op::Float {
            op,
            rnd: r,
            ty: T::CLASS.ty(),
            d,
            a: a.v,
            b: b.v,
        })
    }
    /// `a + b` rounded by `r` (never fused with a multiply).
    #[track_caller]
    pub fn fadd<T: FloatType>(
        &mut self,
        r: Rounding,
        a: impl Into<Src<T>>,
        b: impl Into<Src<T>>,
    ) -> Reg<T> {
        self.float(FloatOp::Add, r, a.into(), b.into())
    }
    /// `a - b` rounded by `r`.
    #[track_caller]
    pub fn fsub<T: FloatType>(
        &mut self,
        r: Rounding,
        a: impl Into<Src<T>>,
        b: impl Into<Src<T>>,
    ) -> Reg<T> {
        self.float(FloatOp::Sub, r, a.into(), b.into())
    }
    /// `a * b` rounded by `r` (never fused with an add).
    #[track_caller]
    pub fn fmul<T: FloatType>(
        &mut self,
        r: Rounding,
        a: impl Into<Src<T>>,
        b: impl Into<Src<T>>,
    ) -> Reg<T> {
        self.float(FloatOp::Mul, r, a.into(), b.into())
    }
    /// IEEE-correct `a / b` rounded by `r`.
    #[track_caller]
    pub fn fdiv<T: FloatType>(
        &mut self,
        r: Rounding,
        a: impl Into<Src<T>>,
        b: impl Into<Src<T>>,
    ) -> Reg<T> {
        self.float(FloatOp::Div, r, a.into(), b.into())
    }
    /// `a * b + c` with a single rounding (a deliberate FMA).
    #[track_caller]
    pub fn ffma<T: FloatType>(
        &mut self,
        r: Rounding,
        a: impl Into<Src<T>>,
        b: impl Into<Src<T>>,
        c: impl Into<Src<T>>,
    ) -> Reg<T> {
        let (a, b, c) = (a.into().v, b.into().v, c.into().v);
        self.def(|d| Op::Fma {
            rnd: r,
            ty: T::CLASS.ty(),
            d,
            a,
            b,
            c,
        })
    }
    /// IEEE-correct square root.
    #[track_caller]
    pub fn fsqrt<T: FloatType>(&mut self, r: Rounding, a: impl Into<Src<T>>) -> Reg<T> {
        let a = a.into().v;
        self.def(|d| Op::Unary {
            op: UnOp::Sqrt(r),
            ty: T::CLASS.ty(),
            d,
            a,
        })
    }
    /// IEEE-correct reciprocal.
    #[track_caller]
    pub fn frcp<T: FloatType>(&mut self, r: Rounding, a: impl Into<Src<T>>) -> Reg<T> {
        let a = a.into().v;
        self.def(|d| Op::Unary {
            op: UnOp::Rcp(r),
            ty: T::CLASS.ty(),
            d,
            a,
        })
    }
    /// `min(a, b)`: one NaN operand gives the other; −0 < +0.
    #[track_caller]
    pub fn fmin(&mut self, a: impl Into<Src<F32>>, b: impl Into<Src<F32>>) -> Reg<F32> {
        let (a, b) = (a.into().v, b.into().v);
        self.def(|d| Op::FMinMax {
            max: false,
            nan: false,
            ty: Ty::F32,
            d,
            a,
            b,
        })
    }
    /// `max(a, b)`: one NaN operand gives the other; −0 < +0.
    #[track_caller]
    pub fn fmax(&mut self, a: impl Into<Src<F32>>, b: impl Into<Src<F32>>) -> Reg<F32> {
        let (a, b) = (a.into().v, b.into().v);
        self.def(|d| Op::FMinMax {
            max: true,
            nan: false,
            ty: Ty::F32,
            d,
            a,
            b,
        })
    }
    /// `max.NaN`: NaN if either operand is NaN (sm_80+).
    #[track_caller]
    pub fn fmax_nan(&mut self, a: impl Into<Src<F32>>, b: impl Into<Src<F32>>) -> Reg<F32> {
        let (a, b) = (a.into().v, b.into().v);
        self.def(|d| Op::FMinMax {
            max: true,
            nan: true,
            ty: Ty::F32,
            d,
            a,
            b,
        })
    }
    /// `|a|` as a float op (a NaN input gives an unspecified NaN; use
    /// [`Self::and`] on the bits when the payload matters).
    #[track_caller]
    pub fn fabs(&mut self, a: impl Into<Src<F32>>) -> Reg<F32> {
        let a = a.into().v;
        self.def(|d| Op::Unary {
            op: UnOp::Abs,
            ty: Ty::F32,
            d,
            a,
        })
    }
    /// `-a` as a float op (see [`Self::fabs`] about NaN).
    #[track_caller]
    pub fn fneg(&mut self, a: impl Into<Src<F32>>) -> Reg<F32> {
        let a = a.into().v;
        self.def(|d| Op::Unary {
            op: UnOp::Neg,
            ty: Ty::F32,
            d,
            a,
        })
    }
}
