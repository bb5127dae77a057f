//! Loop-carried variables: [`Var`], cranelift-frontend `Variable` style.
//!
//! A value that changes from one loop iteration to the next lives in one
//! register that every iteration overwrites. [`KernelBuilder::var`]
//! declares it (and moves its initial value in), [`KernelBuilder::set`]
//! overwrites it (a `mov`), and [`KernelBuilder::get`] / [`Var::reg`] (or
//! passing `&v` where an operand is expected) read it:
//!
//! ```
//! use ptxsmith::dsl::{KernelBuilder, Rounding::Rn};
//! use ptxsmith::Sm;
//! let mut b = KernelBuilder::new("sum", Sm::Sm80);
//! let acc = b.var(0.0f32);
//! b.for_range(0u32, 4u32, 1u32, |b, i| {
//!     let x = b.u32_to_f32(Rn, i);
//!     let s = b.fadd(Rn, &acc, x);
//!     b.set(&acc, s);
//! });
//! let total = b.get(&acc); // 0 + 1 + 2 + 3 after the loop
//! let _ = b.fmul(Rn, total, 2.0f32);
//! assert!(b.finish().is_ok());
//! ```
//!
//! Rebinding a Rust variable inside a loop body instead
//! (`acc = b.fadd(Rn, acc, x)`) builds a loop whose every iteration adds
//! to the value from *before* the loop; reading that `acc` after the loop
//! is refused with
//! [`BuildError::LoopValueEscapes`](super::BuildError::LoopValueEscapes).

use super::core::KernelBuilder;
use crate::dsl::types::{Reg, RegType, Src};

/// A loop-carried variable of class `T`: one register, written with
/// [`KernelBuilder::set`] and read with [`KernelBuilder::get`] (or
/// [`Var::reg`], or `&v` as an operand). Made by [`KernelBuilder::var`];
/// owned by that builder like its registers.
pub struct Var<T> {
    reg: Reg<T>,
}

impl<T: RegType> std::fmt::Debug for Var<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Var({:?})", self.reg)
    }
}

impl<T> Clone for Var<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Var<T> {}

impl<T: RegType> Var<T> {
    /// The variable's register (its current value where it is read).
    pub fn reg(&self) -> Reg<T> {
        self.reg
    }
}

/// `&v` as an operand reads the variable (by reference, so that a read
/// of a variable looks different from a read of a plain register).
impl<T: RegType> From<&Var<T>> for Src<T> {
    fn from(v: &Var<T>) -> Self {
        v.reg.into()
    }
}

impl KernelBuilder {
    /// Declare a loop-carried variable holding `init` (a `mov` into a fresh
    /// register). Declare it before the loop that updates it.
    #[track_caller]
    pub fn var<T: RegType>(&mut self, init: impl Into<Src<T>>) -> Var<T> {
        Var {
            reg: self.mov(init),
        }
    }

    /// The variable's register, to read its current value.
    #[track_caller]
    pub fn get<T: RegType>(&self, v: &Var<T>) -> Reg<T> {
        v.reg
    }

    /// Overwrite the variable with `value` (`mov`).
    #[track_caller]
    pub fn set<T: RegType>(&mut self, v: &Var<T>, value: impl Into<Src<T>>) {
        self.assign(v.reg, value);
    }
}
