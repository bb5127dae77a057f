//! The typed PTX DSL. This module is the only place in the crate that
//! spells PTX text (in `printer.rs`); kernels describe their code through
//! typed registers and builder methods.

pub mod params;

use crate::target::{PtxVersion, Sm};
use params::ParamDesc;

/// One generated kernel variant: a complete PTX module with a single
/// `.entry`, for one SM.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PtxModule {
    /// The entry name (also the kernel's name in the registry).
    pub kernel: String,
    /// Tuning key (empty for kernels without tuning knobs); part of the
    /// module cache key together with `kernel` and `sm`.
    pub tuning: String,
    pub sm: Sm,
    /// The `.version` written in the module: the lowest that `sm` and the
    /// instructions used require.
    pub version: PtxVersion,
    /// The entry's parameters, in order.
    pub params: Vec<ParamDesc>,
    /// The PTX text.
    pub ptx: String,
}
