//! Typed registers and operands.
//!
//! A [`Reg<T>`] is a virtual register of class `T` (a zero-sized marker such
//! as [`F32`] or [`U32`]); builder methods take and return typed registers,
//! so a float cannot be fed to an integer add, nor an address of one state
//! space used in another. Immediates are written as Rust literals and
//! converted with `Into<Src<T>>`.

use std::fmt;
use std::marker::PhantomData;

use crate::abi::ScalarType;

/// Register class: what the printer declares (`.reg .f32 %f<N>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RegClass {
    /// `.pred`
    Pred,
    /// `.b16`
    B16,
    /// `.b32`
    B32,
    /// `.u32`
    U32,
    /// `.s32`
    S32,
    /// `.f32`
    F32,
    /// `.u64`
    U64,
    /// `.s64`
    S64,
    /// `.f64`
    F64,
    /// `.b8`
    B8,
}

impl RegClass {
    pub(crate) const ALL: [RegClass; 10] = [
        RegClass::Pred,
        RegClass::B16,
        RegClass::B32,
        RegClass::U32,
        RegClass::S32,
        RegClass::F32,
        RegClass::U64,
        RegClass::S64,
        RegClass::F64,
        RegClass::B8,
    ];

    /// The natural instruction type of values in this class.
    pub(crate) fn ty(self) -> Ty {
        match self {
            RegClass::Pred => Ty::Pred,
            RegClass::B16 => Ty::B16,
            RegClass::B32 => Ty::B32,
            RegClass::U32 => Ty::U32,
            RegClass::S32 => Ty::S32,
            RegClass::F32 => Ty::F32,
            RegClass::U64 => Ty::U64,
            RegClass::S64 => Ty::S64,
            RegClass::F64 => Ty::F64,
            RegClass::B8 => Ty::B8,
        }
    }
}

/// Instruction operand types (the `.u32` of `add.u32`), printer-neutral.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Ty {
    Pred,
    B8,
    B16,
    B32,
    B64,
    U8,
    U16,
    U32,
    U64,
    S32,
    S64,
    F16,
    F32,
    F64,
}

impl Ty {
    /// The same-width untyped-bits type (`.b32` for `.u32`/`.s32`/`.f32`).
    pub(crate) fn bits(self) -> Ty {
        match self {
            Ty::Pred => Ty::Pred,
            Ty::B8 | Ty::U8 => Ty::B8,
            Ty::B16 | Ty::U16 | Ty::F16 => Ty::B16,
            Ty::B32 | Ty::U32 | Ty::S32 | Ty::F32 => Ty::B32,
            Ty::B64 | Ty::U64 | Ty::S64 | Ty::F64 => Ty::B64,
        }
    }
}

/// A register class marker type.
pub trait RegType: Copy + fmt::Debug + 'static {
    /// The class the printer declares registers of this type in.
    const CLASS: RegClass;
}

macro_rules! reg_types {
    ($($(#[$m:meta])* $name:ident => $class:ident;)*) => {$(
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name;
        impl RegType for $name {
            const CLASS: RegClass = RegClass::$class;
        }
    )*};
}

reg_types! {
    /// A predicate (`.pred`).
    Pred => Pred;
    /// 8 raw bits (`.b8`): a packed FP4 (E2M1) pair. PTX has no 8-bit
    /// `mov`/`selp`/arithmetic: widen with
    /// [`b8_to_u32`](super::KernelBuilder::b8_to_u32) or pack four with
    /// [`pack_4x8`](super::KernelBuilder::pack_4x8).
    B8 => B8;
    /// 16 raw bits (`.b16`): packed FP8 pairs, f16 halves.
    B16 => B16;
    /// 32 raw bits (`.b32`): packed pairs such as `f16x2`.
    B32 => B32;
    /// Unsigned 32-bit integer.
    U32 => U32;
    /// Signed 32-bit integer.
    S32 => S32;
    /// IEEE binary32.
    F32 => F32;
    /// Unsigned 64-bit integer (also global addresses).
    U64 => U64;
    /// Signed 64-bit integer.
    S64 => S64;
    /// IEEE binary64.
    F64 => F64;
    /// Two IEEE binary16 values packed in a `.b32` register (low half
    /// first), as `mma.sync` takes its f16 `A`/`B` fragments.
    F16x2 => B32;
    /// Two bfloat16 values packed in a `.b32` register (low half first),
    /// as `mma.sync` takes its bf16 `A`/`B` fragments.
    Bf16x2 => B32;
    /// A TensorFloat-32 value in a `.b32` register: an f32 pattern whose
    /// low 13 bits are zero (`cvt.rna.tf32.f32`), as `mma.sync` takes its
    /// tf32 `A`/`B` fragments.
    Tf32 => B32;
}

/// The `.b32`-held packed types ([`B32`], [`F16x2`], [`Bf16x2`], [`Tf32`]):
/// reinterpreted from and to `u32` bits with `mov.b32`.
pub trait Packed32: RegType {}
impl Packed32 for B32 {}
impl Packed32 for F16x2 {}
impl Packed32 for Bf16x2 {}
impl Packed32 for Tf32 {}

/// Operand register types of `mma.sync` (`A`/`B` fragments): [`F16x2`],
/// [`Bf16x2`] (`m16n8k16`) and [`Tf32`] (`m16n8k8`).
pub trait MmaInput: Packed32 {
    /// The operand format, for the tensor-core model.
    const FORMAT: crate::tensor_core::InputFormat;
    /// `k` of the instruction shape (16 for f16/bf16, 8 for tf32).
    const K: u32;
}
impl MmaInput for F16x2 {
    const FORMAT: crate::tensor_core::InputFormat = crate::tensor_core::InputFormat::F16;
    const K: u32 = 16;
}
impl MmaInput for Bf16x2 {
    const FORMAT: crate::tensor_core::InputFormat = crate::tensor_core::InputFormat::Bf16;
    const K: u32 = 16;
}
impl MmaInput for Tf32 {
    const FORMAT: crate::tensor_core::InputFormat = crate::tensor_core::InputFormat::Tf32;
    const K: u32 = 8;
}

/// A virtual register of class `T`, owned by the
/// [`KernelBuilder`](super::KernelBuilder) that made it: it carries that
/// builder's id, and another builder refuses it
/// ([`BuildError::ForeignRegister`](super::BuildError::ForeignRegister)).
pub struct Reg<T> {
    pub(crate) idx: u32,
    pub(crate) owner: u32,
    _t: PhantomData<T>,
}

impl<T> Clone for Reg<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Reg<T> {}
impl<T> PartialEq for Reg<T> {
    fn eq(&self, o: &Self) -> bool {
        (self.idx, self.owner) == (o.idx, o.owner)
    }
}
impl<T> Eq for Reg<T> {}
impl<T: RegType> fmt::Debug for Reg<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Reg<{:?}>#{}@b{}", T::CLASS, self.idx, self.owner)
    }
}

impl<T: RegType> Reg<T> {
    pub(crate) fn new(idx: u32, owner: u32) -> Self {
        Self {
            idx,
            owner,
            _t: PhantomData,
        }
    }
    pub(crate) fn id(self) -> RegId {
        RegId {
            class: T::CLASS,
            idx: self.idx,
            owner: self.owner,
        }
    }
    pub(crate) fn value(self) -> Value {
        Value::Reg(self.id())
    }
}

/// An untyped register reference inside the IR.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct RegId {
    pub class: RegClass,
    pub idx: u32,
    /// The id of the builder that made it (not printed: the builder
    /// refuses another builder's registers before anything is printed).
    pub owner: u32,
}

/// An IR operand value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Value {
    Reg(RegId),
    /// Integer immediate (printed in decimal; signed ones with a sign).
    Int(i128),
    /// f32 immediate, by bits (printed `0fXXXXXXXX`, exact).
    F32Bits(u32),
    /// f64 immediate, by bits (printed `0dXXXXXXXXXXXXXXXX`).
    F64Bits(u64),
}

/// A source operand of class `T`: a register or an immediate.
#[derive(Debug, Clone, Copy)]
pub struct Src<T> {
    pub(crate) v: Value,
    _t: PhantomData<T>,
}

impl<T> Src<T> {
    pub(crate) fn from_value(v: Value) -> Self {
        Self { v, _t: PhantomData }
    }
    /// The immediate integer value, if this operand is one.
    pub(crate) fn as_int(&self) -> Option<i128> {
        match self.v {
            Value::Int(i) => Some(i),
            _ => None,
        }
    }
}

impl<T: RegType> From<Reg<T>> for Src<T> {
    fn from(r: Reg<T>) -> Self {
        Src::from_value(r.value())
    }
}
impl<T: RegType> From<&Reg<T>> for Src<T> {
    fn from(r: &Reg<T>) -> Self {
        Src::from_value(r.value())
    }
}
impl From<u32> for Src<U32> {
    fn from(v: u32) -> Self {
        Src::from_value(Value::Int(v.into()))
    }
}
impl From<i32> for Src<S32> {
    fn from(v: i32) -> Self {
        Src::from_value(Value::Int(v.into()))
    }
}
impl From<u64> for Src<U64> {
    fn from(v: u64) -> Self {
        Src::from_value(Value::Int(v.into()))
    }
}
impl From<i64> for Src<S64> {
    fn from(v: i64) -> Self {
        Src::from_value(Value::Int(v.into()))
    }
}
impl From<f32> for Src<F32> {
    fn from(v: f32) -> Self {
        Src::from_value(Value::F32Bits(v.to_bits()))
    }
}
impl From<f64> for Src<F64> {
    fn from(v: f64) -> Self {
        Src::from_value(Value::F64Bits(v.to_bits()))
    }
}

/// Integer register classes (arithmetic with wrap-around).
pub trait IntType: RegType {
    /// Whether the type is signed.
    const SIGNED: bool;
    /// Width in bits.
    const BITS: u32;
}
impl IntType for U32 {
    const SIGNED: bool = false;
    const BITS: u32 = 32;
}
impl IntType for S32 {
    const SIGNED: bool = true;
    const BITS: u32 = 32;
}
impl IntType for U64 {
    const SIGNED: bool = false;
    const BITS: u32 = 64;
}
impl IntType for S64 {
    const SIGNED: bool = true;
    const BITS: u32 = 64;
}

/// Float register classes.
pub trait FloatType: RegType {}
impl FloatType for F32 {}
impl FloatType for F64 {}

/// Classes with a comparison (`setp`).
pub trait CmpType: RegType {}
impl CmpType for U32 {}
impl CmpType for S32 {}
impl CmpType for U64 {}
impl CmpType for S64 {}
impl CmpType for F32 {}
impl CmpType for F64 {}

/// Element types of memory arrays: the register class a load produces and
/// the in-memory type (narrow integers zero-extend into `U32`).
pub trait Elem: Copy + fmt::Debug + 'static {
    /// The register a load of one element produces.
    type Reg: RegType;
    /// The in-memory scalar type.
    const SCALAR: ScalarType;
}

/// An unsigned byte in memory (loads zero-extend into a `Reg<U32>`, stores
/// keep the low 8 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct U8;
/// An unsigned 16-bit integer in memory (zero-extends into a `Reg<U32>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct U16;

macro_rules! elems {
    ($($t:ident => $reg:ident, $s:ident;)*) => {$(
        impl Elem for $t {
            type Reg = $reg;
            const SCALAR: ScalarType = ScalarType::$s;
        }
    )*};
}
elems! {
    U8 => U32, U8;
    U16 => U32, U16;
    U32 => U32, U32;
    S32 => S32, S32;
    F32 => F32, F32;
    U64 => U64, U64;
    S64 => S64, S64;
    F64 => F64, F64;
}

pub(crate) fn scalar_ty(s: ScalarType) -> Ty {
    match s {
        ScalarType::U8 => Ty::U8,
        ScalarType::U16 => Ty::U16,
        ScalarType::U32 => Ty::U32,
        ScalarType::S32 => Ty::S32,
        ScalarType::U64 => Ty::U64,
        ScalarType::S64 => Ty::S64,
        ScalarType::F32 => Ty::F32,
        ScalarType::F64 => Ty::F64,
    }
}
