//! The typed PTX DSL. This module is the only place in the crate that
//! spells PTX text (in `printer.rs`); kernels describe their code through
//! typed registers and [`KernelBuilder`] methods.
//!
//! Layers: [`types`] (typed registers and operands) → [`builder`] (records
//! IR, checks target features, computes the minimal `.version`) → `ir`
//! (printer-neutral instructions) → `printer` (text).

pub mod builder;
pub(crate) mod ir;
pub mod math;
pub mod memo;
mod module;
pub(crate) mod printer;
pub mod types;

pub use builder::params;

pub use builder::{BuildError, GlobalPtr, KernelBuilder, Label, SharedArray, SharedPtr, Var};
pub use ir::{
    AtomOp, Cmp, Fp8Format, IntRounding, ReduxOp, Rounding, ShflMode, Special, Ue8m0Rounding,
};
pub use module::PtxModule;
pub use params::{ArgValue, DevPtr, KernelParams, ParamDesc, ParamKind, Ptr, ScalarType};
