//! SASS instructions per call of the exact math routines of
//! [`crate::dsl::math`] (`exp`, `log`, `log1p`, `log_add_exp`) on every
//! target, as the pinned ptxas compiles them: the tuning report's section
//! "Exact math routines" and the budget check of `tests/math_sim.rs`.
//!
//! How a call is counted: a kernel loads `x` (and `y` for the binary
//! routine), applies the routine once and stores the result; the same
//! kernel without the call (the loaded `x` stored as is; `x + y` for the
//! binary routine, whose `FADD` the call replaces) is the baseline. Both are
//! assembled and disassembled, and the call's cost is the difference of
//! their SASS instruction counts, `NOP`s (alignment padding) not counted.
//! sm_70 has no figures: nvdisasm 13.5 reads no sm_70 cubin.

use std::fmt::Write as _;

use crate::dsl::math as dm;
use crate::dsl::params::Ptr;
use crate::dsl::types::{F32, Reg, U32};
use crate::dsl::{KernelBuilder, PtxModule, Rounding};
use crate::error::{Error, Result};
use crate::kernel_params;
use crate::nvtools::NvTools;
use crate::target::Sm;

/// A routine of [`crate::dsl::math`] the report measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Routine {
    /// [`dm::exp`]
    Exp,
    /// [`dm::log`]
    Log,
    /// [`dm::log1p`]
    Log1p,
    /// [`dm::log_add_exp`]
    LogAddExp,
}

impl Routine {
    /// Every measured routine, in the report's order.
    pub const ALL: [Routine; 4] = [
        Routine::Exp,
        Routine::Log,
        Routine::Log1p,
        Routine::LogAddExp,
    ];

    /// The routine's name in [`crate::dsl::math`].
    pub const fn name(self) -> &'static str {
        match self {
            Routine::Exp => "exp",
            Routine::Log => "log",
            Routine::Log1p => "log1p",
            Routine::LogAddExp => "log_add_exp",
        }
    }

    /// Whether the routine takes two operands.
    pub const fn binary(self) -> bool {
        matches!(self, Routine::LogAddExp)
    }
}

/// The body of a measuring kernel between its loads and its store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    /// `out[i] = x[i]` (the unary baseline)
    Copy,
    /// `out[i] = x[i] + y[i]` (the binary baseline)
    Add,
    /// One call of the routine.
    Call(Routine),
}

kernel_params! {
    struct OneArgs => OneRegs {
        x: Ptr<F32>,
        y: Ptr<F32>,
        out: Ptr<F32>,
    }
}

/// The name of every measuring kernel's entry.
const ENTRY: &str = "one_call";

/// One load (two for the binary bodies), the body, one store.
fn kernel(sm: Sm, body: Body) -> Result<PtxModule> {
    let mut b = KernelBuilder::new(ENTRY, sm);
    let p = b.params::<OneArgs>();
    let i: Reg<U32> = b.global_id_x();
    let xp = b.offset(p.x, i);
    let x = b.ld_global(xp, 0);
    let r = match body {
        Body::Copy => x,
        Body::Call(Routine::Exp) => dm::exp(&mut b, x),
        Body::Call(Routine::Log) => dm::log(&mut b, x),
        Body::Call(Routine::Log1p) => dm::log1p(&mut b, x),
        Body::Add | Body::Call(Routine::LogAddExp) => {
            let yp = b.offset(p.y, i);
            let y = b.ld_global(yp, 0);
            if body == Body::Add {
                b.fadd(Rounding::Rn, x, y)
            } else {
                dm::log_add_exp(&mut b, x, y)
            }
        }
    };
    let op = b.offset(p.out, i);
    b.st_global(op, 0, r);
    b.finish()
}

fn tool_error(sm: Sm, body: Body, e: impl std::fmt::Display) -> Error {
    Error::Build {
        kernel: ENTRY.into(),
        error: crate::dsl::BuildError::Inspect {
            message: format!("{body:?} on {sm}: {e}"),
        },
        location: None,
    }
}

/// SASS instructions of the measuring kernel with each of `bodies` for
/// `sm`, `NOP`s not counted (one nvdisasm run for them all).
fn sass_counts(tools: &NvTools, sm: Sm, bodies: &[Body]) -> Result<Vec<usize>> {
    let mut asms = Vec::with_capacity(bodies.len());
    for &body in bodies {
        let m = kernel(sm, body)?;
        asms.push(
            tools
                .assemble(&m.ptx, sm)
                .map_err(|e| tool_error(sm, body, e))?,
        );
    }
    let listings = tools.disassemble_many(&asms.iter().collect::<Vec<_>>());
    bodies
        .iter()
        .zip(listings)
        .map(|(&body, sass)| {
            let sass = sass.map_err(|e| tool_error(sm, body, e))?;
            let f = sass
                .function(ENTRY)
                .ok_or_else(|| tool_error(sm, body, "no SASS for the entry"))?;
            Ok(f.instructions.iter().filter(|i| !i.is("NOP")).count())
        })
        .collect()
}

/// SASS instructions of one call of each routine of [`Routine::ALL`] on
/// `sm` (see the [module docs](self) for how they are counted); `None` on
/// a target nvdisasm cannot read ([`NvTools::can_disassemble`]).
pub fn per_call(tools: &NvTools, sm: Sm) -> Result<Option<[usize; 4]>> {
    if !NvTools::can_disassemble(sm) {
        return Ok(None);
    }
    let mut bodies = vec![Body::Copy, Body::Add];
    bodies.extend(Routine::ALL.map(Body::Call));
    let counts = sass_counts(tools, sm, &bodies)?;
    let unary = counts[0];
    // the call replaces the binary baseline's FADD
    let binary = counts[1] - 1;
    let mut out = [0; 4];
    for ((slot, r), &with) in out.iter_mut().zip(Routine::ALL).zip(&counts[2..]) {
        let base = if r.binary() { binary } else { unary };
        *slot = with.checked_sub(base).ok_or_else(|| {
            tool_error(
                sm,
                Body::Call(r),
                format!("{with} SASS instructions with the call, {base} without"),
            )
        })?;
    }
    Ok(Some(out))
}

/// The cost of every routine on one target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MathCost {
    /// The target.
    pub sm: Sm,
    /// SASS instructions per call, in the order of [`Routine::ALL`];
    /// `None` where nvdisasm reads no cubin (sm_70).
    pub per_call: Option<[usize; 4]>,
}

impl MathCost {
    /// The SASS instructions of one call of `r`, where measured.
    pub fn of(&self, r: Routine) -> Option<usize> {
        let i = Routine::ALL.iter().position(|&x| x == r)?;
        self.per_call.map(|c| c[i])
    }
}

/// [`per_call`] on every target of [`Sm::ALL`], oldest first; `done` is
/// called with each target once it is measured.
pub fn generate(tools: &NvTools, done: &dyn Fn(Sm)) -> Result<Vec<MathCost>> {
    Sm::ALL
        .into_iter()
        .map(|sm| {
            let per_call = per_call(tools, sm)?;
            done(sm);
            Ok(MathCost { sm, per_call })
        })
        .collect()
}

/// The tuning report's section: a table routine × target.
pub fn markdown(costs: &[MathCost]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\n## Exact math routines: SASS instructions per call\n\n\
         The routines of `ptxsmith::dsl::math` (bit for bit their host mirrors in `ptxsmith::math`, which document the accuracy) as the pinned ptxas compiles them. Counted as a kernel that loads `x` (and `y`), makes one call and stores the result, minus the same kernel without the call (`x` stored as is; for `log_add_exp`, `x + y`, whose `FADD` the call replaces), both disassembled with `NOP`s not counted; sm_70 has no figures (nvdisasm 13.5 reads no sm_70 cubin). Code: `src/report/math_cost.rs`; `tests/math_sim.rs` holds `log_add_exp` to 45 (47 on sm_75, which has no `max.NaN`).\n"
    );
    let _ = write!(s, "| routine |");
    for c in costs {
        let _ = write!(s, " {} |", c.sm);
    }
    let _ = write!(s, "\n|---|");
    for _ in costs {
        let _ = write!(s, "---:|");
    }
    s.push('\n');
    for r in Routine::ALL {
        let _ = write!(s, "| `{}` |", r.name());
        for c in costs {
            match c.of(r) {
                Some(n) => {
                    let _ = write!(s, " {n} |");
                }
                None => s.push_str(" – |"),
            }
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measuring_kernels_build_on_every_target() {
        for sm in Sm::ALL {
            let base = kernel(sm, Body::Copy).unwrap();
            for r in Routine::ALL {
                let m = kernel(sm, Body::Call(r)).unwrap();
                assert_eq!(m.kernel, ENTRY);
                assert!(m.ptx.len() > base.ptx.len(), "{sm} {r:?}");
            }
        }
    }

    #[test]
    fn table_has_a_row_per_routine_and_a_column_per_target() {
        let costs = [
            MathCost {
                sm: Sm::Sm70,
                per_call: None,
            },
            MathCost {
                sm: Sm::Sm90,
                per_call: Some([30, 25, 35, 45]),
            },
        ];
        let md = markdown(&costs);
        assert!(
            md.contains("| routine | sm_70 | sm_90 |\n|---|---:|---:|\n"),
            "{md}"
        );
        assert!(md.contains("| `exp` | – | 30 |\n"), "{md}");
        assert!(md.contains("| `log_add_exp` | – | 45 |\n"), "{md}");
        assert_eq!(costs[1].of(Routine::Log1p), Some(35));
        assert_eq!(costs[0].of(Routine::Exp), None);
    }
}
