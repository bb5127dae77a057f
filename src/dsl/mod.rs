//! The typed PTX DSL. This module is the only place in the crate that
//! spells PTX text (in `printer.rs`); kernels describe their code through
//! typed registers and [`KernelBuilder`] methods.
//!
//! Layers: [`types`] (typed registers and operands) → [`builder`] (records
//! IR, checks target features, computes the minimal `.version`) → `ir`
//! (printer-neutral instructions) → `printer` (text).

pub mod builder;
mod convert;
pub(crate) mod ir;
mod loops;
pub mod math;
pub mod memo;
pub mod params;
pub(crate) mod printer;
pub mod types;

pub use builder::{GlobalPtr, KernelBuilder, Label, SharedArray, SharedPtr};
pub use ir::{
    AtomOp, Cmp, Fp8Format, IntRounding, ReduxOp, Rounding, ShflMode, Special, Ue8m0Rounding,
};
pub use params::{ArgValue, DevPtr, KernelParams, ParamDesc, ParamKind, Ptr, ScalarType};

use crate::target::{PtxVersion, Sm};

/// One generated kernel variant: a complete PTX module with a single
/// `.entry`, for one SM.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PtxModule {
    /// The entry name (also the kernel's name in the registry).
    pub kernel: String,
    /// Tuning key (empty for kernels without tuning knobs); part of the
    /// module cache key together with `kernel` and `sm`.
    pub tuning: String,
    /// The target the module was generated for (its `.target`).
    pub sm: Sm,
    /// The `.version` written in the module: the lowest that `sm` and the
    /// instructions used require.
    pub version: PtxVersion,
    /// The entry's parameters, in order.
    pub params: Vec<ParamDesc>,
    /// The PTX text.
    pub ptx: String,
}

impl PtxModule {
    /// The file name `dump_ptx` writes: `<kernel>.<sm>.ptx`.
    pub fn file_name(&self) -> String {
        format!("{}.{}.ptx", self.kernel, self.sm)
    }
}
