//! Assertions on what ptxas makes of a module, with the pinned NVIDIA
//! tools ([`crate::nvtools`]): registers and spills from ptxas' resource
//! report, opcode counts from nvdisasm's SASS.
//!
//! Every function returns [`InspectError::ToolsMissing`] when the tools
//! are not installed; [`or_skip`] turns that into `Ok(None)` after
//! printing a `SKIP:` line, except under `PTXSMITH_REQUIRE_NVIDIA_TOOLS=1`
//! ([`nvtools::REQUIRE_ENV`](crate::nvtools::REQUIRE_ENV), which CI sets),
//! where it stays an error — the convention of
//! [`NvTools::for_tests`](crate::nvtools::NvTools::for_tests).
//!
//! ```
//! use ptxsmith::testing::{assert_no_spills, assert_opcode_absent, or_skip};
//!
//! let module = ptxsmith::kernels::dot::ptx::generate(ptxsmith::Sm::Sm80)?;
//! // ptxas keeps `mul.rn` + `add.rn` apart: no fused multiply-add
//! let Some(sass) = or_skip(assert_opcode_absent(&module, "FFMA"))? else {
//!     return Ok(()); // SKIP: tools not installed
//! };
//! assert!(sass.count("FMUL") > 0);
//! let report = or_skip(assert_no_spills(&module))?.expect("tools found above");
//! assert!(report.registers() > 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::dsl::PtxModule;
use crate::nvtools::{Assembly, NvTools, REQUIRE_ENV, ResourceUsage, Sass, ToolError};
use crate::target::Sm;

/// Why an inspection failed or could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InspectError {
    /// The pinned tools are not installed (`scripts/install-nvidia-tools.sh`
    /// installs them). `required` is set when
    /// `PTXSMITH_REQUIRE_NVIDIA_TOOLS=1`: then [`or_skip`] keeps the error.
    #[error(
        "the pinned NVIDIA tools (ptxas, nvdisasm) were not found in {}{}; run scripts/install-nvidia-tools.sh",
        .looked_in.as_ref().map_or_else(|| "(no folder: set PTXSMITH_NVIDIA_TOOLS or HOME)".to_string(), |d| d.display().to_string()),
        if *.required { " and PTXSMITH_REQUIRE_NVIDIA_TOOLS=1 requires them" } else { "" }
    )]
    ToolsMissing {
        /// The folder searched ([`NvTools::default_dir`]).
        looked_in: Option<PathBuf>,
        /// Whether `PTXSMITH_REQUIRE_NVIDIA_TOOLS=1` is set.
        required: bool,
    },
    /// The pinned nvdisasm cannot read cubins for this target (sm_70; see
    /// [`NvTools::can_disassemble`]). [`or_skip`] treats it as a skip.
    #[error("the pinned nvdisasm cannot disassemble {sm} cubins")]
    CannotDisassemble {
        /// The target.
        sm: Sm,
    },
    /// ptxas or nvdisasm failed (ptxas rejected the module, for instance).
    #[error(transparent)]
    Tool(#[from] ToolError),
    /// ptxas' report has no entry for the module's kernel.
    #[error("ptxas' report for {sm} has no function `{kernel}`")]
    NoReport {
        /// The kernel.
        kernel: String,
        /// The target.
        sm: Sm,
    },
    /// The kernel spills registers to local memory.
    #[error(
        "`{kernel}` on {sm} spills: {stores} bytes of spill stores, {loads} bytes of spill loads ({registers} registers)"
    )]
    Spills {
        /// The kernel.
        kernel: String,
        /// The target.
        sm: Sm,
        /// Spill stores in bytes.
        stores: u32,
        /// Spill loads in bytes.
        loads: u32,
        /// Registers used.
        registers: u32,
    },
    /// An opcode asserted absent is in the SASS.
    #[error(
        "`{kernel}` on {sm}: {count} {opcode} instruction(s) in the SASS, expected none; first: {first}"
    )]
    OpcodePresent {
        /// The kernel.
        kernel: String,
        /// The target.
        sm: Sm,
        /// The opcode (as given: `FFMA` or `FADD.FTZ`).
        opcode: String,
        /// How many instructions match.
        count: usize,
        /// The first match (`/*0120*/ FFMA R5, R0, R5, R2`).
        first: String,
    },
    /// An opcode asserted present is not in the SASS.
    #[error("`{kernel}` on {sm}: no {opcode} instruction in the SASS; opcodes: {histogram}")]
    OpcodeAbsent {
        /// The kernel.
        kernel: String,
        /// The target.
        sm: Sm,
        /// The opcode.
        opcode: String,
        /// The SASS's base opcodes with their counts.
        histogram: String,
    },
}

impl InspectError {
    /// Whether this is a reason to skip the check rather than a failure:
    /// missing tools when `PTXSMITH_REQUIRE_NVIDIA_TOOLS=1` is not set, or
    /// a target nvdisasm cannot read.
    pub fn is_skip(&self) -> bool {
        matches!(
            self,
            InspectError::ToolsMissing {
                required: false,
                ..
            } | InspectError::CannotDisassemble { .. }
        )
    }
}

/// `Ok(Some(value))` for a result that ran, `Ok(None)` after printing
/// `SKIP: <reason>` to stderr when [`InspectError::is_skip`], else the
/// error (including missing tools under `PTXSMITH_REQUIRE_NVIDIA_TOOLS=1`).
///
/// # Errors
/// Every error that is not a skip.
pub fn or_skip<T>(r: Result<T, InspectError>) -> Result<Option<T>, InspectError> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is_skip() => {
            eprintln!("SKIP: {e}");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The located tools, or [`InspectError::ToolsMissing`].
///
/// # Errors
/// [`InspectError::ToolsMissing`].
pub fn tools() -> Result<NvTools, InspectError> {
    NvTools::locate().ok_or_else(|| InspectError::ToolsMissing {
        looked_in: NvTools::default_dir(),
        required: std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1"),
    })
}

/// What ptxas reports for a module's kernel.
#[derive(Debug, Clone)]
pub struct KernelReport {
    /// The kernel's resource usage (registers, spills, shared memory).
    pub usage: ResourceUsage,
    /// The whole assembly (cubin, log, warnings, every function).
    pub assembly: Assembly,
}

impl KernelReport {
    /// Registers per thread.
    pub fn registers(&self) -> u32 {
        self.usage.registers
    }

    /// Whether the kernel spills registers to local memory.
    pub fn spills(&self) -> bool {
        self.usage.spills()
    }
}

/// The SASS of a module, with its opcode counts.
#[derive(Debug, Clone)]
pub struct SassReport {
    /// The kernel.
    pub kernel: String,
    /// The disassembly.
    pub sass: Sass,
    /// Base opcodes (`FFMA`, `LDG`) over every function, with their counts.
    pub opcode_counts: BTreeMap<String, usize>,
}

impl SassReport {
    /// How many instructions match `op`: its base opcode (`FFMA`), or the
    /// full opcode when `op` has a `.` (`FADD.FTZ`).
    pub fn count(&self, op: &str) -> usize {
        self.sass.count(op)
    }
}

/// Assemble `module` for its target with the pinned ptxas.
///
/// # Errors
/// [`InspectError::ToolsMissing`]; [`InspectError::Tool`] when ptxas
/// rejects the module; [`InspectError::NoReport`].
pub fn assemble(module: &PtxModule) -> Result<KernelReport, InspectError> {
    let assembly = tools()?.assemble(&module.ptx, module.sm)?;
    let usage =
        assembly
            .function(&module.kernel)
            .cloned()
            .ok_or_else(|| InspectError::NoReport {
                kernel: module.kernel.clone(),
                sm: module.sm,
            })?;
    Ok(KernelReport { usage, assembly })
}

/// Assemble and disassemble `module` with the pinned tools.
///
/// # Errors
/// As [`assemble`]; [`InspectError::CannotDisassemble`] for sm_70;
/// [`InspectError::Tool`] when nvdisasm fails.
pub fn sass(module: &PtxModule) -> Result<SassReport, InspectError> {
    let tools = tools()?;
    if !NvTools::can_disassemble(module.sm) {
        return Err(InspectError::CannotDisassemble { sm: module.sm });
    }
    let assembly = tools.assemble(&module.ptx, module.sm)?;
    let sass = tools.disassemble(&assembly)?;
    Ok(SassReport {
        kernel: module.kernel.clone(),
        opcode_counts: sass.opcode_histogram(),
        sass,
    })
}

/// [`assemble`], then fail with [`InspectError::Spills`] when the kernel
/// spills registers.
///
/// # Errors
/// As [`assemble`]; [`InspectError::Spills`].
pub fn assert_no_spills(module: &PtxModule) -> Result<KernelReport, InspectError> {
    let r = assemble(module)?;
    if r.spills() {
        return Err(InspectError::Spills {
            kernel: module.kernel.clone(),
            sm: module.sm,
            stores: r.usage.spill_stores_bytes,
            loads: r.usage.spill_loads_bytes,
            registers: r.usage.registers,
        });
    }
    Ok(r)
}

/// [`sass`], then fail with [`InspectError::OpcodePresent`] when an
/// instruction matches `opcode` (`FFMA`: any FFMA; `FADD.FTZ`: exactly
/// that form).
///
/// # Errors
/// As [`sass`]; [`InspectError::OpcodePresent`].
pub fn assert_opcode_absent(module: &PtxModule, opcode: &str) -> Result<SassReport, InspectError> {
    let r = sass(module)?;
    let count = r.count(opcode);
    if count > 0 {
        let first = r
            .sass
            .functions
            .iter()
            .flat_map(|f| &f.instructions)
            .find(|i| i.is(opcode))
            .map(|i| format!("/*{:04x}*/ {} {}", i.address, i.opcode, i.operands))
            .unwrap_or_default();
        return Err(InspectError::OpcodePresent {
            kernel: module.kernel.clone(),
            sm: module.sm,
            opcode: opcode.to_string(),
            count,
            first,
        });
    }
    Ok(r)
}

/// [`sass`], then fail with [`InspectError::OpcodeAbsent`] when no
/// instruction matches `opcode`.
///
/// # Errors
/// As [`sass`]; [`InspectError::OpcodeAbsent`].
pub fn assert_opcode_present(module: &PtxModule, opcode: &str) -> Result<SassReport, InspectError> {
    let r = sass(module)?;
    if r.count(opcode) == 0 {
        let histogram = r
            .opcode_counts
            .iter()
            .map(|(k, v)| format!("{k}×{v}"))
            .collect::<Vec<_>>()
            .join(" ");
        return Err(InspectError::OpcodeAbsent {
            kernel: module.kernel.clone(),
            sm: module.sm,
            opcode: opcode.to_string(),
            histogram,
        });
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_are_missing_tools_unless_required_and_old_targets() {
        let missing = |required| InspectError::ToolsMissing {
            looked_in: None,
            required,
        };
        assert!(missing(false).is_skip());
        assert!(!missing(true).is_skip());
        assert!(missing(true).to_string().contains("requires them"));
        assert!(InspectError::CannotDisassemble { sm: Sm::Sm70 }.is_skip());
        assert!(matches!(or_skip::<()>(Err(missing(false))), Ok(None)));
        assert!(or_skip::<()>(Err(missing(true))).is_err());
        assert!(matches!(or_skip(Ok(3)), Ok(Some(3))));
    }
}
