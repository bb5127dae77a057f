//! [`PtxModule`]: one generated kernel variant (a leaf: the builder makes
//! it, the memo table and the runtime keep it).

use crate::abi::ParamDesc;
use crate::target::{PtxVersion, Sm};

/// One generated kernel variant: a complete PTX module with a single
/// `.entry`, for one SM, preceded by the device functions (`.func`) the
/// entry calls, if any ([`KernelBuilder::device_fn`](crate::dsl::KernelBuilder::device_fn)).
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
