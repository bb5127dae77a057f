//! [`KernelBuilder`]: a typed, structured builder for one PTX entry.
//!
//! Methods append instructions and return fresh typed registers. Misuse
//! that the types cannot rule out (an instruction the target lacks, a
//! constant index past a shared array, too much static shared memory) is
//! recorded and returned by [`KernelBuilder::finish`] as a typed error:
//! the builder never prints invalid PTX.

use std::marker::PhantomData;

use super::PtxModule;
use super::ir::*;
use super::params::{KernelParams, ParamDesc};
use super::printer::{KernelText, SharedDecl, print_module};
use super::types::*;
use crate::error::{Error, Result};
use crate::target::{PtxVersion, STATIC_SMEM_LIMIT, Sm};

/// A typed pointer into global memory (a 64-bit global address of `E`s).
#[derive(Debug)]
pub struct GlobalPtr<E> {
    pub(crate) reg: Reg<U64>,
    _e: PhantomData<E>,
}
impl<E> Clone for GlobalPtr<E> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<E> Copy for GlobalPtr<E> {}
impl<E> GlobalPtr<E> {
    /// The address register.
    pub fn addr(self) -> Reg<U64> {
        self.reg
    }
    /// The same address viewed as a pointer to `F`s (no instruction), e.g.
    /// a byte buffer accessed four codes at a time as `U32`s. Accesses
    /// through the result must be aligned to their own size; the launch
    /// code guarantees the buffer's alignment.
    pub fn cast<F>(self) -> GlobalPtr<F> {
        GlobalPtr {
            reg: self.reg,
            _e: PhantomData,
        }
    }
}

/// A typed pointer into shared memory (a 32-bit shared-window address of `E`s).
#[derive(Debug)]
pub struct SharedPtr<E> {
    pub(crate) reg: Reg<U32>,
    _e: PhantomData<E>,
}
impl<E> Clone for SharedPtr<E> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<E> Copy for SharedPtr<E> {}

/// A statically sized shared-memory array of `len` elements of `E`.
#[derive(Debug)]
pub struct SharedArray<E> {
    name: String,
    len: u32,
    align: u32,
    _e: PhantomData<E>,
}
impl<E> Clone for SharedArray<E> {
    fn clone(&self) -> Self {
        Self {
            name: self.name.clone(),
            len: self.len,
            align: self.align,
            _e: PhantomData,
        }
    }
}
impl<E> SharedArray<E> {
    /// Number of elements.
    pub fn len(&self) -> u32 {
        self.len
    }
    /// Whether the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A branch target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Label(u32);

/// Builds one kernel entry for one SM.
pub struct KernelBuilder {
    name: String,
    tuning: String,
    sm: Sm,
    params: Vec<ParamDesc>,
    reqntid: Option<(u32, u32, u32)>,
    maxntid: Option<(u32, u32, u32)>,
    min_ctas: Option<u32>,
    regs: [u32; 10],
    shared: Vec<SharedDecl>,
    body: Vec<Instr>,
    labels: u32,
    guard: Option<(RegId, bool)>,
    version: PtxVersion,
    error: Option<Error>,
}

impl KernelBuilder {
    /// Start a kernel named `name` (the `.entry` name) for `sm`.
    pub fn new(name: &str, sm: Sm) -> Self {
        let mut b = Self {
            name: name.to_string(),
            tuning: String::new(),
            sm,
            params: Vec::new(),
            reqntid: None,
            maxntid: None,
            min_ctas: None,
            regs: [0; 10],
            shared: Vec::new(),
            body: Vec::new(),
            labels: 0,
            guard: None,
            version: sm.min_ptx(),
            error: None,
        };
        if !is_identifier(name) {
            b.fail(format!("`{name}` is not a valid PTX identifier"));
        }
        b
    }

    /// The target SM.
    pub fn sm(&self) -> Sm {
        self.sm
    }

    /// Record the tuning key (part of the module cache key).
    pub fn tuning(&mut self, key: impl Into<String>) -> &mut Self {
        self.tuning = key.into();
        self
    }

    /// Require exactly this block shape (`.reqntid`).
    pub fn reqntid(&mut self, x: u32, y: u32, z: u32) -> &mut Self {
        self.reqntid = Some((x, y, z));
        self
    }

    /// Bound the block size (`.maxntid`).
    pub fn maxntid(&mut self, x: u32, y: u32, z: u32) -> &mut Self {
        self.maxntid = Some((x, y, z));
        self
    }

    /// Ask ptxas for at least `n` resident CTAs per SM (`.minnctapersm`).
    pub fn min_ctas_per_sm(&mut self, n: u32) -> &mut Self {
        self.min_ctas = Some(n);
        self
    }

    /// Declare the kernel's parameters (once) and load them into registers.
    pub fn params<P: KernelParams>(&mut self) -> P::Regs {
        if !self.params.is_empty() {
            self.fail("params() called twice".to_string());
        }
        self.params = P::descs();
        P::load(self)
    }

    pub(crate) fn fail(&mut self, message: String) {
        if self.error.is_none() {
            self.error = Some(Error::Build {
                kernel: self.name.clone(),
                message,
            });
        }
    }

    /// PTX has no 8-bit `mov`/`selp`: refuse them on [`B8`] registers.
    fn no_b8<T: RegType>(&mut self, what: &str) {
        if T::CLASS == RegClass::B8 {
            self.fail(format!(
                "{what} has no .b8 form; widen with b8_to_u32 or pack with pack_4x8"
            ));
        }
    }

    /// Allocate a fresh register of class `T`.
    pub fn reg<T: RegType>(&mut self) -> Reg<T> {
        let slot = &mut self.regs[T::CLASS as usize];
        let r = Reg::new(*slot);
        *slot += 1;
        r
    }

    pub(super) fn push(&mut self, op: Op) {
        if let Some(f) = op.feature() {
            if !self.sm.supports(f) {
                if self.error.is_none() {
                    self.error = Some(Error::UnsupportedFeature {
                        feature: f,
                        sm: self.sm,
                        needs: f.requirement(),
                    });
                }
            } else {
                self.version = self.version.max(f.min_ptx(self.sm));
            }
        }
        if self.guard.is_some() && matches!(op, Op::Label(_)) {
            self.fail("a label cannot be placed inside a guarded region".to_string());
        }
        self.body.push(Instr {
            guard: self.guard,
            op,
        });
    }

    pub(super) fn def<T: RegType>(&mut self, f: impl FnOnce(RegId) -> Op) -> Reg<T> {
        let d = self.reg::<T>();
        self.push(f(d.id()));
        d
    }

    /// A comment line in the PTX (documentation for readers of the dump).
    pub fn comment(&mut self, text: &str) {
        self.push(Op::Comment(text.to_string()));
    }

    // ---- moves and special registers -------------------------------------

    /// `d = a` into a fresh register.
    pub fn mov<T: RegType>(&mut self, a: impl Into<Src<T>>) -> Reg<T> {
        self.no_b8::<T>("mov");
        let a = a.into().v;
        self.def(|d| Op::Mov {
            ty: T::CLASS.ty(),
            d,
            a,
        })
    }

    /// Overwrite an existing register (loop-carried values).
    pub fn assign<T: RegType>(&mut self, d: Reg<T>, a: impl Into<Src<T>>) {
        self.no_b8::<T>("mov");
        let a = a.into().v;
        self.push(Op::Mov {
            ty: T::CLASS.ty(),
            d: d.id(),
            a,
        });
    }

    /// Read a special register.
    pub fn special(&mut self, s: Special) -> Reg<U32> {
        self.def(|d| Op::MovSpecial { d, s })
    }

    /// `%tid.x`
    pub fn tid_x(&mut self) -> Reg<U32> {
        self.special(Special::TidX)
    }

    /// `%ctaid.x`
    pub fn ctaid_x(&mut self) -> Reg<U32> {
        self.special(Special::CtaidX)
    }

    /// `%ntid.x`
    pub fn ntid_x(&mut self) -> Reg<U32> {
        self.special(Special::NtidX)
    }

    /// `%nctaid.x`
    pub fn nctaid_x(&mut self) -> Reg<U32> {
        self.special(Special::NctaidX)
    }

    /// `ctaid.x * ntid.x + tid.x` in 32 bits.
    pub fn global_id_x(&mut self) -> Reg<U32> {
        let (c, n, t) = (self.ctaid_x(), self.ntid_x(), self.tid_x());
        self.mad_lo(c, n, t)
    }

    /// `ctaid.x * ntid.x + tid.x` in 64 bits (no overflow for any grid).
    pub fn global_id_x_u64(&mut self) -> Reg<U64> {
        let (c, n, t) = (self.ctaid_x(), self.ntid_x(), self.tid_x());
        let t64 = self.u32_to_u64(t);
        self.mad_wide_u32(c, n, t64)
    }

    // ---- integer arithmetic ----------------------------------------------

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
    pub fn add<T: IntType>(&mut self, a: impl Into<Src<T>>, b: impl Into<Src<T>>) -> Reg<T> {
        self.int(IntOp::Add, a.into(), b.into())
    }
    /// Wrapping `a - b`.
    pub fn sub<T: IntType>(&mut self, a: impl Into<Src<T>>, b: impl Into<Src<T>>) -> Reg<T> {
        self.int(IntOp::Sub, a.into(), b.into())
    }
    /// Low half of `a * b`.
    pub fn mul_lo<T: IntType>(&mut self, a: impl Into<Src<T>>, b: impl Into<Src<T>>) -> Reg<T> {
        self.int(IntOp::MulLo, a.into(), b.into())
    }
    /// High half of `a * b`.
    pub fn mul_hi<T: IntType>(&mut self, a: impl Into<Src<T>>, b: impl Into<Src<T>>) -> Reg<T> {
        self.int(IntOp::MulHi, a.into(), b.into())
    }
    /// `a / b` (truncating). A zero divisor is the caller's bug: PTX leaves
    /// the result unspecified, so kernels must guard it.
    pub fn div<T: IntType>(&mut self, a: impl Into<Src<T>>, b: impl Into<Src<T>>) -> Reg<T> {
        let b = b.into();
        if b.as_int() == Some(0) {
            self.fail("integer division by the constant 0".to_string());
        }
        self.int(IntOp::Div, a.into(), b)
    }
    /// `a % b` (truncating; see [`Self::div`]).
    pub fn rem<T: IntType>(&mut self, a: impl Into<Src<T>>, b: impl Into<Src<T>>) -> Reg<T> {
        let b = b.into();
        if b.as_int() == Some(0) {
            self.fail("integer remainder by the constant 0".to_string());
        }
        self.int(IntOp::Rem, a.into(), b)
    }
    /// `min(a, b)` (signedness from `T`).
    pub fn min<T: IntType>(&mut self, a: impl Into<Src<T>>, b: impl Into<Src<T>>) -> Reg<T> {
        self.int(IntOp::Min, a.into(), b.into())
    }
    /// `max(a, b)` (signedness from `T`).
    pub fn max<T: IntType>(&mut self, a: impl Into<Src<T>>, b: impl Into<Src<T>>) -> Reg<T> {
        self.int(IntOp::Max, a.into(), b.into())
    }
    /// Bitwise and.
    pub fn and<T: IntType>(&mut self, a: impl Into<Src<T>>, b: impl Into<Src<T>>) -> Reg<T> {
        self.int(IntOp::And, a.into(), b.into())
    }
    /// Bitwise or.
    pub fn or<T: IntType>(&mut self, a: impl Into<Src<T>>, b: impl Into<Src<T>>) -> Reg<T> {
        self.int(IntOp::Or, a.into(), b.into())
    }
    /// Bitwise xor.
    pub fn xor<T: IntType>(&mut self, a: impl Into<Src<T>>, b: impl Into<Src<T>>) -> Reg<T> {
        self.int(IntOp::Xor, a.into(), b.into())
    }
    /// `a << n`; amounts ≥ the width give 0 (PTX clamps, unlike Rust).
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
    pub fn prmt(
        &mut self,
        a: impl Into<Src<U32>>,
        b: impl Into<Src<U32>>,
        sel: impl Into<Src<U32>>,
    ) -> Reg<U32> {
        let (a, b, sel) = (a.into().v, b.into().v, sel.into().v);
        self.def(|d| Op::Prmt { d, a, b, sel })
    }

    // ---- float arithmetic: always with explicit rounding -------------------

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
    pub fn fadd<T: FloatType>(
        &mut self,
        r: Rounding,
        a: impl Into<Src<T>>,
        b: impl Into<Src<T>>,
    ) -> Reg<T> {
        self.float(FloatOp::Add, r, a.into(), b.into())
    }
    /// `a - b` rounded by `r`.
    pub fn fsub<T: FloatType>(
        &mut self,
        r: Rounding,
        a: impl Into<Src<T>>,
        b: impl Into<Src<T>>,
    ) -> Reg<T> {
        self.float(FloatOp::Sub, r, a.into(), b.into())
    }
    /// `a * b` rounded by `r` (never fused with an add).
    pub fn fmul<T: FloatType>(
        &mut self,
        r: Rounding,
        a: impl Into<Src<T>>,
        b: impl Into<Src<T>>,
    ) -> Reg<T> {
        self.float(FloatOp::Mul, r, a.into(), b.into())
    }
    /// IEEE-correct `a / b` rounded by `r`.
    pub fn fdiv<T: FloatType>(
        &mut self,
        r: Rounding,
        a: impl Into<Src<T>>,
        b: impl Into<Src<T>>,
    ) -> Reg<T> {
        self.float(FloatOp::Div, r, a.into(), b.into())
    }
    /// `a * b + c` with a single rounding (a deliberate FMA).
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
    pub fn fneg(&mut self, a: impl Into<Src<F32>>) -> Reg<F32> {
        let a = a.into().v;
        self.def(|d| Op::Unary {
            op: UnOp::Neg,
            ty: Ty::F32,
            d,
            a,
        })
    }

    // ---- comparisons and selection ----------------------------------------

    /// `a cmp b` into a predicate. Unsigned `T` compares unsigned; the
    /// unordered/`Num`/`Nan` comparisons are for floats only.
    pub fn setp<T: CmpType>(
        &mut self,
        c: Cmp,
        a: impl Into<Src<T>>,
        b: impl Into<Src<T>>,
    ) -> Reg<Pred> {
        let is_float = matches!(T::CLASS, RegClass::F32 | RegClass::F64);
        if c.float_only() && !is_float {
            self.fail(format!("comparison {c:?} is for floats only"));
        }
        let (a, b) = (a.into().v, b.into().v);
        self.def(|d| Op::Setp {
            cmp: c,
            ty: T::CLASS.ty(),
            d,
            a,
            b,
        })
    }
    /// `p ? a : b`.
    pub fn selp<T: RegType>(
        &mut self,
        p: Reg<Pred>,
        a: impl Into<Src<T>>,
        b: impl Into<Src<T>>,
    ) -> Reg<T> {
        if T::CLASS == RegClass::Pred {
            self.fail("selp on predicates; use pand/por".to_string());
        }
        self.no_b8::<T>("selp");
        let (a, b) = (a.into().v, b.into().v);
        let ty = T::CLASS.ty();
        self.def(|d| Op::Selp {
            ty,
            d,
            a,
            b,
            p: p.id(),
        })
    }
    /// `a && b`.
    pub fn pand(&mut self, a: Reg<Pred>, b: Reg<Pred>) -> Reg<Pred> {
        self.def(|d| Op::PredLogic {
            op: IntOp::And,
            d,
            a: a.id(),
            b: b.id(),
        })
    }
    /// `a || b`.
    pub fn por(&mut self, a: Reg<Pred>, b: Reg<Pred>) -> Reg<Pred> {
        self.def(|d| Op::PredLogic {
            op: IntOp::Or,
            d,
            a: a.id(),
            b: b.id(),
        })
    }
    /// `!a`.
    pub fn pnot(&mut self, a: Reg<Pred>) -> Reg<Pred> {
        self.def(|d| Op::PredNot { d, a: a.id() })
    }

    // ---- conversions -----------------------------------------------------

    pub(super) fn cvt<D: RegType>(
        &mut self,
        dt: Ty,
        st: Ty,
        rnd: Option<CvtRnd>,
        a: Value,
    ) -> Reg<D> {
        self.def(|d| Op::Cvt { dt, st, rnd, d, a })
    }
    /// Zero-extend.
    pub fn u32_to_u64(&mut self, a: impl Into<Src<U32>>) -> Reg<U64> {
        self.cvt(Ty::U64, Ty::U32, None, a.into().v)
    }
    /// Sign-extend.
    pub fn s32_to_s64(&mut self, a: impl Into<Src<S32>>) -> Reg<S64> {
        self.cvt(Ty::S64, Ty::S32, None, a.into().v)
    }
    /// Keep the low 32 bits.
    pub fn u64_to_u32(&mut self, a: impl Into<Src<U64>>) -> Reg<U32> {
        self.cvt(Ty::U32, Ty::U64, None, a.into().v)
    }
    /// Integer to float, rounded by `r`.
    pub fn u32_to_f32(&mut self, r: Rounding, a: impl Into<Src<U32>>) -> Reg<F32> {
        self.cvt(Ty::F32, Ty::U32, Some(CvtRnd::Float(r)), a.into().v)
    }
    /// Signed integer to float, rounded by `r`.
    pub fn s32_to_f32(&mut self, r: Rounding, a: impl Into<Src<S32>>) -> Reg<F32> {
        self.cvt(Ty::F32, Ty::S32, Some(CvtRnd::Float(r)), a.into().v)
    }
    /// Float to signed integer: saturating, NaN → 0.
    pub fn f32_to_s32(&mut self, r: IntRounding, a: impl Into<Src<F32>>) -> Reg<S32> {
        self.cvt(Ty::S32, Ty::F32, Some(CvtRnd::Int(r)), a.into().v)
    }
    /// Float to unsigned integer: saturating, NaN → 0.
    pub fn f32_to_u32(&mut self, r: IntRounding, a: impl Into<Src<F32>>) -> Reg<U32> {
        self.cvt(Ty::U32, Ty::F32, Some(CvtRnd::Int(r)), a.into().v)
    }
    /// Round to an integral float.
    pub fn f32_round(&mut self, r: IntRounding, a: impl Into<Src<F32>>) -> Reg<F32> {
        self.cvt(Ty::F32, Ty::F32, Some(CvtRnd::Int(r)), a.into().v)
    }
    /// Exact widening.
    pub fn f32_to_f64(&mut self, a: impl Into<Src<F32>>) -> Reg<F64> {
        self.cvt(Ty::F64, Ty::F32, None, a.into().v)
    }
    /// Narrowing, rounded by `r`.
    pub fn f64_to_f32(&mut self, r: Rounding, a: impl Into<Src<F64>>) -> Reg<F32> {
        self.cvt(Ty::F32, Ty::F64, Some(CvtRnd::Float(r)), a.into().v)
    }
    /// Exact f16 (held in a `B16`) to f32.
    pub fn f16_to_f32(&mut self, a: Reg<B16>) -> Reg<F32> {
        self.cvt(Ty::F32, Ty::F16, None, a.value())
    }
    /// Low 16 bits of a u32.
    pub fn u32_to_b16(&mut self, a: impl Into<Src<U32>>) -> Reg<B16> {
        self.cvt(Ty::U16, Ty::U32, None, a.into().v)
    }
    /// Zero-extend 16 bits.
    pub fn b16_to_u32(&mut self, a: Reg<B16>) -> Reg<U32> {
        self.cvt(Ty::U32, Ty::U16, None, a.value())
    }
    /// Reinterpret bits (`mov.b32`).
    pub fn f32_bits(&mut self, a: impl Into<Src<F32>>) -> Reg<U32> {
        let a = a.into().v;
        self.def(|d| Op::Mov { ty: Ty::B32, d, a })
    }
    /// Reinterpret bits (`mov.b32`).
    pub fn f32_from_bits(&mut self, a: impl Into<Src<U32>>) -> Reg<F32> {
        let a = a.into().v;
        self.def(|d| Op::Mov { ty: Ty::B32, d, a })
    }
    /// Reinterpret bits (`mov.b32`).
    pub fn u32_as_s32(&mut self, a: impl Into<Src<U32>>) -> Reg<S32> {
        let a = a.into().v;
        self.def(|d| Op::Mov { ty: Ty::B32, d, a })
    }
    /// Reinterpret bits (`mov.b32`).
    pub fn s32_as_u32(&mut self, a: impl Into<Src<S32>>) -> Reg<U32> {
        let a = a.into().v;
        self.def(|d| Op::Mov { ty: Ty::B32, d, a })
    }
    /// Reinterpret bits (`mov.b32`).
    pub fn u32_as_b32(&mut self, a: impl Into<Src<U32>>) -> Reg<B32> {
        let a = a.into().v;
        self.def(|d| Op::Mov { ty: Ty::B32, d, a })
    }
    /// Reinterpret bits (`mov.b32`).
    pub fn b32_as_u32(&mut self, a: Reg<B32>) -> Reg<U32> {
        self.def(|d| Op::Mov {
            ty: Ty::B32,
            d,
            a: a.value(),
        })
    }
    /// Split 32 bits into (low, high) halves.
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
    pub fn cvt_from_fp8x2(&mut self, fmt: Fp8Format, a: Reg<B16>) -> Reg<B32> {
        self.def(|d| Op::CvtFromFp8x2 { fmt, d, a: a.id() })
    }

    // ---- parameters and addresses -----------------------------------------

    /// Load a scalar parameter (used by [`KernelParams`] implementations).
    pub fn load_param<T: RegType>(&mut self, name: &str) -> Reg<T> {
        let name = name.to_string();
        self.def(|d| Op::LdParam {
            ty: T::CLASS.ty(),
            d,
            name,
        })
    }

    /// Load a pointer parameter and convert it to a global address.
    pub fn load_param_ptr<E: Elem>(&mut self, name: &str) -> GlobalPtr<E> {
        let generic = self.load_param::<U64>(name);
        let reg = self.def(|d| Op::CvtaGlobal { d, a: generic.id() });
        GlobalPtr {
            reg,
            _e: PhantomData,
        }
    }

    /// `p + i` elements, with a 32-bit index (`mul.wide`, no overflow).
    pub fn offset<E: Elem>(&mut self, p: GlobalPtr<E>, i: impl Into<Src<U32>>) -> GlobalPtr<E> {
        let size = E::SCALAR.size();
        let reg = self.mad_wide_u32(i, size, p.reg);
        GlobalPtr {
            reg,
            _e: PhantomData,
        }
    }

    /// `p + i` elements, with a 64-bit index.
    pub fn offset64<E: Elem>(&mut self, p: GlobalPtr<E>, i: impl Into<Src<U64>>) -> GlobalPtr<E> {
        let size = u64::from(E::SCALAR.size());
        let reg = self.mad_lo(i, size, p.reg);
        GlobalPtr {
            reg,
            _e: PhantomData,
        }
    }

    /// A fresh register holding the same address (to advance separately).
    pub fn ptr_copy<E: Elem>(&mut self, p: GlobalPtr<E>) -> GlobalPtr<E> {
        let reg = self.mov(p.reg);
        GlobalPtr {
            reg,
            _e: PhantomData,
        }
    }

    /// Move `p` forward by `k` elements in place (loop-carried pointers).
    pub fn advance<E: Elem>(&mut self, p: GlobalPtr<E>, k: i32) {
        let bytes = i64::from(k) * i64::from(E::SCALAR.size());
        self.push(Op::Int {
            op: IntOp::Add,
            ty: Ty::U64,
            d: p.reg.id(),
            a: p.reg.value(),
            b: Value::Int(bytes.into()),
        });
    }

    /// Declare a shared array of `len` elements aligned to `align` bytes
    /// (a power of two, at least the element size).
    pub fn shared_array<E: Elem>(&mut self, name: &str, len: u32, align: u32) -> SharedArray<E> {
        let size = E::SCALAR.size();
        if !align.is_power_of_two() || align < size {
            self.fail(format!(
                "shared array `{name}`: alignment {align} must be a power of two ≥ {size}"
            ));
        }
        if !is_identifier(name) || self.shared.iter().any(|s| s.name == name) {
            self.fail(format!(
                "shared array name `{name}` is invalid or used twice"
            ));
        }
        let bytes = u64::from(len) * u64::from(size);
        let bytes = u32::try_from(bytes).unwrap_or(u32::MAX);
        self.shared.push(SharedDecl {
            name: name.to_string(),
            align,
            bytes,
        });
        SharedArray {
            name: name.to_string(),
            len,
            align,
            _e: PhantomData,
        }
    }

    /// Address of element `i` of a shared array.
    pub fn shared_elem<E: Elem>(
        &mut self,
        a: &SharedArray<E>,
        i: impl Into<Src<U32>>,
    ) -> SharedPtr<E> {
        let i = i.into();
        if let Some(k) = i.as_int().filter(|k| *k >= i128::from(a.len)) {
            self.fail(format!(
                "constant index {k} past shared array `{}` of {}",
                a.name, a.len
            ));
        }
        let base = self.def(|d| Op::MovVarAddr {
            d,
            var: a.name.clone(),
        });
        let reg = self.mad_lo(i, E::SCALAR.size(), base);
        SharedPtr {
            reg,
            _e: PhantomData,
        }
    }

    /// `p + i` elements in shared memory.
    pub fn shared_offset<E: Elem>(
        &mut self,
        p: SharedPtr<E>,
        i: impl Into<Src<U32>>,
    ) -> SharedPtr<E> {
        let reg = self.mad_lo(i, E::SCALAR.size(), p.reg);
        SharedPtr {
            reg,
            _e: PhantomData,
        }
    }

    // ---- loads and stores -------------------------------------------------

    fn ld_n<E: Elem, const N: usize>(
        &mut self,
        space: Space,
        base: AddrBase,
        offset: i32,
    ) -> [Reg<E::Reg>; N] {
        let regs: [Reg<E::Reg>; N] = std::array::from_fn(|_| self.reg::<E::Reg>());
        if N > 1 && E::SCALAR.size() < 4 {
            self.fail("vector loads of sub-word elements are not offered".to_string());
        }
        let ty = scalar_ty(E::SCALAR);
        self.push(Op::Ld {
            space,
            ty,
            d: regs.iter().map(|r| r.id()).collect(),
            addr: Addr { base, offset },
        });
        regs
    }

    fn st_n<E: Elem>(&mut self, space: Space, base: AddrBase, offset: i32, v: Vec<Value>) {
        if v.len() > 1 && E::SCALAR.size() < 4 {
            self.fail("vector stores of sub-word elements are not offered".to_string());
        }
        let ty = scalar_ty(E::SCALAR);
        self.push(Op::St {
            space,
            ty,
            v,
            addr: Addr { base, offset },
        });
    }

    fn elem_offset<E: Elem>(&mut self, k: i32) -> i32 {
        match k.checked_mul(E::SCALAR.size() as i32) {
            Some(o) => o,
            None => {
                self.fail(format!("element offset {k} overflows"));
                0
            }
        }
    }

    /// Load `p[k]` (constant `k`) from global memory.
    pub fn ld_global<E: Elem>(&mut self, p: GlobalPtr<E>, k: i32) -> Reg<E::Reg> {
        let o = self.elem_offset::<E>(k);
        self.ld_n::<E, 1>(Space::Global, AddrBase::Reg(p.reg.id()), o)[0]
    }
    /// Load `p[k]` through the read-only path (the data must not change
    /// during the kernel).
    pub fn ld_global_nc<E: Elem>(&mut self, p: GlobalPtr<E>, k: i32) -> Reg<E::Reg> {
        let o = self.elem_offset::<E>(k);
        self.ld_n::<E, 1>(Space::GlobalNc, AddrBase::Reg(p.reg.id()), o)[0]
    }
    /// Load `p[k..k+4]` as one 16-byte access (the address must be 16-byte
    /// aligned; 4-byte elements only).
    pub fn ld_global_nc_v4<E: Elem>(&mut self, p: GlobalPtr<E>, k: i32) -> [Reg<E::Reg>; 4] {
        let o = self.elem_offset::<E>(k);
        self.ld_n::<E, 4>(Space::GlobalNc, AddrBase::Reg(p.reg.id()), o)
    }
    /// Load `p[k..k+4]` as one 16-byte access through the coherent path
    /// (for data the kernel may also write, e.g. an in-place update; the
    /// address must be 16-byte aligned; 4-byte elements only).
    pub fn ld_global_v4<E: Elem>(&mut self, p: GlobalPtr<E>, k: i32) -> [Reg<E::Reg>; 4] {
        let o = self.elem_offset::<E>(k);
        self.ld_n::<E, 4>(Space::Global, AddrBase::Reg(p.reg.id()), o)
    }
    /// Store `v` to `p[k]`.
    pub fn st_global<E: Elem>(&mut self, p: GlobalPtr<E>, k: i32, v: impl Into<Src<E::Reg>>) {
        let o = self.elem_offset::<E>(k);
        self.st_n::<E>(
            Space::Global,
            AddrBase::Reg(p.reg.id()),
            o,
            vec![v.into().v],
        );
    }
    /// Store four values to `p[k..k+4]` as one 16-byte access.
    pub fn st_global_v4<E: Elem>(&mut self, p: GlobalPtr<E>, k: i32, v: [Reg<E::Reg>; 4]) {
        let o = self.elem_offset::<E>(k);
        self.st_n::<E>(
            Space::Global,
            AddrBase::Reg(p.reg.id()),
            o,
            v.iter().map(|r| r.value()).collect(),
        );
    }
    /// Load `p[k]` from shared memory.
    pub fn ld_shared<E: Elem>(&mut self, p: SharedPtr<E>, k: i32) -> Reg<E::Reg> {
        let o = self.elem_offset::<E>(k);
        self.ld_n::<E, 1>(Space::Shared, AddrBase::Reg(p.reg.id()), o)[0]
    }
    /// Load `p[k..k+4]` from shared memory as one 16-byte access.
    pub fn ld_shared_v4<E: Elem>(&mut self, p: SharedPtr<E>, k: i32) -> [Reg<E::Reg>; 4] {
        let o = self.elem_offset::<E>(k);
        self.ld_n::<E, 4>(Space::Shared, AddrBase::Reg(p.reg.id()), o)
    }
    /// Load `p[k..k+2]` from shared memory as one 8-byte access.
    pub fn ld_shared_v2<E: Elem>(&mut self, p: SharedPtr<E>, k: i32) -> [Reg<E::Reg>; 2] {
        let o = self.elem_offset::<E>(k);
        self.ld_n::<E, 2>(Space::Shared, AddrBase::Reg(p.reg.id()), o)
    }
    /// Store `v` to `p[k]` in shared memory.
    pub fn st_shared<E: Elem>(&mut self, p: SharedPtr<E>, k: i32, v: impl Into<Src<E::Reg>>) {
        let o = self.elem_offset::<E>(k);
        self.st_n::<E>(
            Space::Shared,
            AddrBase::Reg(p.reg.id()),
            o,
            vec![v.into().v],
        );
    }
    /// Store four values to `p[k..k+4]` in shared memory.
    pub fn st_shared_v4<E: Elem>(&mut self, p: SharedPtr<E>, k: i32, v: [Reg<E::Reg>; 4]) {
        let o = self.elem_offset::<E>(k);
        self.st_n::<E>(
            Space::Shared,
            AddrBase::Reg(p.reg.id()),
            o,
            v.iter().map(|r| r.value()).collect(),
        );
    }
    /// Load element `k` (constant) of a shared array: `[name+offset]`.
    pub fn ld_shared_at<E: Elem>(&mut self, a: &SharedArray<E>, k: u32) -> Reg<E::Reg> {
        if k >= a.len {
            self.fail(format!(
                "constant index {k} past shared array `{}` of {}",
                a.name, a.len
            ));
        }
        let o = self.elem_offset::<E>(k as i32);
        self.ld_n::<E, 1>(Space::Shared, AddrBase::Var(a.name.clone()), o)[0]
    }
    /// Store to element `k` (constant) of a shared array.
    pub fn st_shared_at<E: Elem>(&mut self, a: &SharedArray<E>, k: u32, v: impl Into<Src<E::Reg>>) {
        if k >= a.len {
            self.fail(format!(
                "constant index {k} past shared array `{}` of {}",
                a.name, a.len
            ));
        }
        let o = self.elem_offset::<E>(k as i32);
        self.st_n::<E>(
            Space::Shared,
            AddrBase::Var(a.name.clone()),
            o,
            vec![v.into().v],
        );
    }

    /// Integer atomic on global memory; returns the old value. `c` is the
    /// new value for `Cas` (and must be `None` otherwise).
    pub fn atom_global<E: Elem>(
        &mut self,
        op: AtomOp,
        p: GlobalPtr<E>,
        b: impl Into<Src<E::Reg>>,
        c: Option<Src<E::Reg>>,
    ) -> Reg<E::Reg> {
        self.atom(
            Space::Global,
            op,
            AddrBase::Reg(p.reg.id()),
            b.into().v,
            c.map(|c| c.v),
            E::SCALAR,
        )
    }

    /// Integer atomic on shared memory; returns the old value.
    pub fn atom_shared<E: Elem>(
        &mut self,
        op: AtomOp,
        p: SharedPtr<E>,
        b: impl Into<Src<E::Reg>>,
        c: Option<Src<E::Reg>>,
    ) -> Reg<E::Reg> {
        self.atom(
            Space::Shared,
            op,
            AddrBase::Reg(p.reg.id()),
            b.into().v,
            c.map(|c| c.v),
            E::SCALAR,
        )
    }

    fn atom<R: RegType>(
        &mut self,
        space: Space,
        op: AtomOp,
        base: AddrBase,
        b: Value,
        c: Option<Value>,
        s: super::params::ScalarType,
    ) -> Reg<R> {
        use super::params::ScalarType as S;
        if !matches!(s, S::U32 | S::S32 | S::U64) {
            self.fail(format!("atomics on {s:?} are not offered (integers only: float atomics are not reproducible)"));
        }
        if (op == AtomOp::Cas) != c.is_some() {
            self.fail(
                "cas takes a compare and a new value; other atomics take one operand".to_string(),
            );
        }
        let ty = scalar_ty(s);
        self.def(|d| Op::Atom {
            space,
            op,
            ty,
            d,
            addr: Addr { base, offset: 0 },
            b,
            c,
        })
    }

    // ---- synchronisation and warp operations --------------------------------

    /// CTA-wide barrier (`bar.sync 0`); every thread of the CTA must reach
    /// the same one (the simulator checks this).
    pub fn bar_sync(&mut self) {
        self.push(Op::BarSync);
    }

    /// Warp barrier (`bar.warp.sync mask`): the threads in `mask` wait for
    /// each other, and their earlier memory accesses (shared and global)
    /// are ordered before their later ones, so lanes of one warp can hand
    /// data to each other through memory. Every thread in `mask` must
    /// execute it, and the executing thread must be in `mask`.
    pub fn bar_warp_sync(&mut self, mask: u32) {
        self.push(Op::BarWarpSync { mask });
    }

    /// `shfl.sync` of 32 bits (`T` is any 32-bit class). `c` packs the
    /// clamp and segment mask (`0x1f` for a full-warp down/bfly/idx, `0`
    /// for up).
    pub fn shfl<T: RegType>(
        &mut self,
        mode: ShflMode,
        a: Reg<T>,
        lane: impl Into<Src<U32>>,
        c: u32,
        mask: u32,
    ) -> Reg<T> {
        if !matches!(
            T::CLASS,
            RegClass::U32 | RegClass::S32 | RegClass::F32 | RegClass::B32
        ) {
            self.fail("shfl moves 32-bit registers only".to_string());
        }
        let b = lane.into().v;
        self.def(|d| Op::Shfl {
            mode,
            d,
            a: a.value(),
            b,
            c: Value::Int(c.into()),
            mask,
        })
    }

    /// Ballot of `p` over the threads in `mask`.
    pub fn vote_ballot(&mut self, p: Reg<Pred>, mask: u32) -> Reg<U32> {
        self.def(|d| Op::VoteBallot { d, p: p.id(), mask })
    }

    /// `vote.sync.all` (`all = true`) or `.any`.
    pub fn vote(&mut self, all: bool, p: Reg<Pred>, mask: u32) -> Reg<Pred> {
        self.def(|d| Op::VoteAny {
            all,
            d,
            p: p.id(),
            mask,
        })
    }

    /// Warp-wide integer reduction (sm_80+).
    pub fn redux<T: IntType>(&mut self, op: ReduxOp, a: Reg<T>, mask: u32) -> Reg<T> {
        if T::BITS != 32 {
            self.fail("redux.sync reduces 32-bit integers only".to_string());
        }
        self.def(|d| Op::Redux {
            op,
            ty: T::CLASS.ty(),
            d,
            a: a.id(),
            mask,
        })
    }

    // ---- control flow --------------------------------------------------------

    /// A new label, to be placed with [`Self::place`].
    pub fn label(&mut self) -> Label {
        self.labels += 1;
        Label(self.labels)
    }

    /// Place `l` here.
    pub fn place(&mut self, l: Label) {
        self.push(Op::Label(l.0));
    }

    /// Unconditional branch.
    pub fn bra(&mut self, l: Label) {
        self.push(Op::Bra {
            target: l.0,
            uni: false,
        });
    }

    /// Branch when `p` (or when `!p` if `negate`).
    pub fn bra_if(&mut self, p: Reg<Pred>, negate: bool, l: Label) {
        let saved = self.guard;
        if saved.is_some() {
            self.fail("bra_if inside a guarded region".to_string());
        }
        self.guard = Some((p.id(), negate));
        self.push(Op::Bra {
            target: l.0,
            uni: false,
        });
        self.guard = saved;
    }

    /// Exit the thread.
    pub fn ret(&mut self) {
        self.push(Op::Ret);
    }

    /// Run `f` only when `p` holds.
    pub fn if_(&mut self, p: Reg<Pred>, f: impl FnOnce(&mut Self)) {
        let end = self.label();
        self.bra_if(p, true, end);
        f(self);
        self.place(end);
    }

    /// `if p { then } else { otherwise }`.
    pub fn if_else(
        &mut self,
        p: Reg<Pred>,
        then: impl FnOnce(&mut Self),
        otherwise: impl FnOnce(&mut Self),
    ) {
        let (else_l, end) = (self.label(), self.label());
        self.bra_if(p, true, else_l);
        then(self);
        self.bra(end);
        self.place(else_l);
        otherwise(self);
        self.place(end);
    }

    /// Predicate every instruction `f` emits with `p` (straight-line code
    /// only: no labels or branches inside).
    pub fn guarded(&mut self, p: Reg<Pred>, f: impl FnOnce(&mut Self)) {
        if self.guard.is_some() {
            self.fail("nested guarded regions".to_string());
        }
        self.guard = Some((p.id(), false));
        f(self);
        self.guard = None;
    }

    /// `for (i = start; i < end; i += step) body(i)` with unsigned 32-bit
    /// `i` (the loop runs zero times when `start >= end`; the caller keeps
    /// `end + step` from wrapping).
    pub fn for_range(
        &mut self,
        start: impl Into<Src<U32>>,
        end: impl Into<Src<U32>>,
        step: impl Into<Src<U32>>,
        body: impl FnOnce(&mut Self, Reg<U32>),
    ) {
        let (end, step) = (end.into(), step.into());
        let i = self.mov(start);
        let (head, exit) = (self.label(), self.label());
        self.place(head);
        let done = self.setp(Cmp::Ge, i, end);
        self.bra_if(done, false, exit);
        body(self, i);
        let next = self.add(i, step);
        self.assign(i, next);
        self.bra(head);
        self.place(exit);
    }

    /// `while cond() { body() }`; `cond` emits code that computes the
    /// continuation predicate.
    pub fn while_(
        &mut self,
        cond: impl FnOnce(&mut Self) -> Reg<Pred>,
        body: impl FnOnce(&mut Self),
    ) {
        let (head, exit) = (self.label(), self.label());
        self.place(head);
        let go = cond(self);
        self.bra_if(go, true, exit);
        body(self);
        self.bra(head);
        self.place(exit);
    }

    // ---- finishing -------------------------------------------------------------

    /// Validate and print the module.
    pub fn finish(mut self) -> Result<PtxModule> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let static_smem: u64 = self
            .shared
            .iter()
            .map(|s| u64::from(s.bytes) + u64::from(s.align))
            .sum();
        if static_smem > u64::from(STATIC_SMEM_LIMIT) {
            return Err(Error::Build {
                kernel: self.name,
                message: format!(
                    "{static_smem} bytes of static shared memory exceed {STATIC_SMEM_LIMIT}"
                ),
            });
        }
        if !matches!(
            self.body.last(),
            Some(Instr {
                op: Op::Ret,
                guard: None
            })
        ) {
            self.push(Op::Ret);
        }
        let reg_counts: Vec<(RegClass, u32)> = RegClass::ALL
            .iter()
            .map(|&c| (c, self.regs[c as usize]))
            .collect();
        let ptx = print_module(&KernelText {
            name: &self.name,
            sm: self.sm,
            version: self.version,
            params: &self.params,
            reqntid: self.reqntid,
            maxntid: self.maxntid,
            min_ctas_per_sm: self.min_ctas,
            reg_counts: &reg_counts,
            shared: &self.shared,
            body: &self.body,
        });
        Ok(PtxModule {
            kernel: self.name,
            tuning: self.tuning,
            sm: self.sm,
            version: self.version,
            params: self.params,
            ptx,
        })
    }
}

/// PTX identifiers: `[a-zA-Z][a-zA-Z0-9_$]*` or `[_$%][a-zA-Z0-9_$]+`.
fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() => {
            chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
        }
        Some('_' | '$') => {
            let rest: Vec<char> = chars.collect();
            !rest.is_empty()
                && rest
                    .iter()
                    .all(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '$')
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::Feature;

    fn err_of(r: Result<PtxModule>) -> Error {
        r.expect_err("builder should refuse")
    }

    #[test]
    fn missing_feature_is_a_typed_error_naming_sm_and_feature() {
        let mut b = KernelBuilder::new("k", Sm::Sm75);
        let t = b.tid_x();
        let _ = b.redux(ReduxOp::Add, t, u32::MAX);
        match err_of(b.finish()) {
            Error::UnsupportedFeature { feature, sm, .. } => {
                assert_eq!((feature, sm), (Feature::Redux, Sm::Sm75));
            }
            e => panic!("{e}"),
        }
    }

    #[test]
    fn feature_use_raises_the_version_only_as_far_as_needed() {
        let build = |sm: Sm, fp8: bool| {
            let mut b = KernelBuilder::new("k", sm);
            let f = b.mov(1.0f32);
            if fp8 {
                let _ = b.cvt_to_fp8x2(Fp8Format::E4M3, f, f);
            }
            b.finish().unwrap().version.to_string()
        };
        assert_eq!(build(Sm::Sm89, false), "7.8");
        assert_eq!(build(Sm::Sm89, true), "8.1");
        assert_eq!(build(Sm::Sm90, true), "7.8");
        assert_eq!(build(Sm::Sm100, true), "8.6");
        assert_eq!(build(Sm::Sm80, false), "7.0");
    }

    #[test]
    fn constant_index_past_a_shared_array_is_refused() {
        let mut b = KernelBuilder::new("k", Sm::Sm80);
        let a = b.shared_array::<F32>("a", 4, 4);
        let _ = b.ld_shared_at(&a, 4);
        assert!(
            matches!(err_of(b.finish()), Error::Build { message, .. } if message.contains("index 4"))
        );
    }

    #[test]
    fn static_shared_memory_over_48k_is_refused() {
        let mut b = KernelBuilder::new("k", Sm::Sm90);
        let _ = b.shared_array::<F32>("a", 12 * 1024, 16);
        assert!(
            matches!(err_of(b.finish()), Error::Build { message, .. } if message.contains("static shared"))
        );
    }

    #[test]
    fn misuse_is_refused() {
        let mut b = KernelBuilder::new("9bad", Sm::Sm80);
        let _ = b.mov(1u32);
        assert!(err_of(b.finish()).to_string().contains("identifier"));

        let mut b = KernelBuilder::new("k", Sm::Sm80);
        let x = b.mov(1u32);
        let _ = b.setp(Cmp::Ltu, x, 2u32);
        assert!(err_of(b.finish()).to_string().contains("floats only"));

        let mut b = KernelBuilder::new("k", Sm::Sm80);
        let x = b.mov(1u32);
        let _ = b.div(x, 0u32);
        assert!(err_of(b.finish()).to_string().contains("division"));

        let mut b = KernelBuilder::new("k", Sm::Sm80);
        let _ = b.shared_array::<F32>("a", 4, 2);
        assert!(err_of(b.finish()).to_string().contains("alignment"));

        let mut b = KernelBuilder::new("k", Sm::Sm80);
        let p = b.mov(1u32);
        let q = b.setp(Cmp::Eq, p, 1u32);
        b.guarded(q, |b| {
            let l = b.label();
            b.place(l);
        });
        assert!(err_of(b.finish()).to_string().contains("guarded"));
    }

    #[test]
    fn float_immediates_are_exact_hex_and_ops_carry_rounding() {
        let mut b = KernelBuilder::new("k", Sm::Sm80);
        let x = b.mov(0.1f32);
        let y = b.fmul(Rounding::Rn, x, 3.0f32);
        let _ = b.fadd(Rounding::Rz, y, -0.0f32);
        let ptx = b.finish().unwrap().ptx;
        assert!(ptx.contains("0f3DCCCCCD"), "{ptx}");
        assert!(ptx.contains("mul.rn.f32"));
        assert!(ptx.contains("add.rz.f32"));
        assert!(ptx.contains("0f80000000"));
        assert!(!ptx.contains(".approx"));
    }
}
