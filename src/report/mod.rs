//! The per-SM tuning report: every kernel variant × every target,
//! assembled with the pinned ptxas and disassembled with nvdisasm, with
//! registers, spills, shared memory, theoretical occupancy and the hot
//! loop's SASS mix. `cargo run --release --example tuning_report` writes
//! it as `docs/tuning.md` (a Markdown table) and `docs/tuning.svg` (heat
//! maps of occupancy and hot-loop FP32 math share); `tests/tuning_report.rs`
//! fails when those committed copies drift from what the code generates.
//! After the table, [`math_cost`] gives the SASS instructions per call of
//! each exact math routine of [`crate::dsl::math`] on every target. The
//! report ends with the [`roofline`] model of every kernel family on
//! every card of [`hardware::GPUS`] (`docs/roofline.svg`,
//! `docs/roofline.tsv`).
//!
//! Definitions:
//! * **threads**: the CTA size the launch code uses (the entry's
//!   `maxntid`, which every library kernel declares).
//! * **occupancy**: [`occupancy::occupancy`] from registers, static shared
//!   memory (no library kernel uses dynamic shared memory) and the target
//!   table.
//! * **hot loop**: among the innermost loops of the SASS (backward
//!   branches), the one with the most FP32 math instructions (FADD, FMUL,
//!   FFMA, FMNMX, FMNMX3), ties broken by size. *FP32 math* is the share of those;
//!   *memory* counts global/shared loads and stores, *shuffles* `SHFL`.
//! * **SASS per unit**: hot-loop instructions per multiply-add (kernels
//!   whose hot loop multiplies: one separate-rounding multiply-add is an
//!   FMUL and an FADD) or per element (FP8 and block-scaled element loops,
//!   four elements a thread per iteration; the block-scaled loop body holds
//!   both the vector and the element-wise load/store paths, of which one
//!   runs).
//!
//! nvdisasm 13.5 cannot read sm_70 cubins, so sm_70 rows have resources
//! and occupancy but no SASS figures.

pub mod hardware;
pub mod math_cost;
pub use crate::occupancy;
pub mod pipes;
pub mod roofline;
mod svg;

use std::fmt::Write as _;

use crate::dsl::PtxModule;
use crate::error::{Error, Result};
use crate::kernels;
use crate::nvtools::{Assembly, NvTools, Sass, SassFunction};
use crate::occupancy::{Occupancy, occupancy};
use crate::target::Sm;
use math_cost::MathCost;
use rayon::prelude::*;
use roofline::{Roofline, SassCache, SassSummary};

/// FP32 math opcodes counted in the hot loop (`FMNMX3`: the three-input
/// min/max of sm_100 and later).
pub const FP32_MATH: [&str; 5] = ["FADD", "FMUL", "FFMA", "FMNMX", "FMNMX3"];
/// Memory opcodes counted in the hot loop.
pub const MEMORY: [&str; 6] = ["LDG", "STG", "LDS", "STS", "LD", "ST"];

/// The SASS figures of a kernel's hot loop.
#[derive(Debug, Clone, PartialEq)]
pub struct HotLoop {
    /// Instructions in the loop.
    pub instructions: usize,
    /// FP32 math instructions (see [`FP32_MATH`]).
    pub fp32_math: usize,
    /// Global and shared loads and stores.
    pub memory: usize,
    /// `SHFL` instructions.
    pub shuffles: usize,
    /// What one unit of work is ("multiply-add" or "element") and the
    /// loop's instructions per unit, where defined.
    pub per_unit: Option<(&'static str, f64)>,
}

impl HotLoop {
    /// FP32 math as a share of the loop, in `[0, 1]`.
    pub fn math_share(&self) -> f64 {
        self.fp32_math as f64 / self.instructions.max(1) as f64
    }
}

/// One kernel variant on one target.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The entry's name.
    pub kernel: String,
    /// Tuning key (empty for the default variant of a kernel without
    /// knobs).
    pub tuning: String,
    /// The target it was generated and assembled for.
    pub sm: Sm,
    /// CTA size the launch code uses (the entry's `.maxntid`).
    pub threads: u32,
    /// Registers per thread (ptxas `-v`).
    pub registers: u32,
    /// Spill stores plus spill loads, in bytes per thread (ptxas `-v`).
    pub spill_bytes: u32,
    /// Local memory per thread in bytes (ptxas `-v`, cumulative stack
    /// size).
    pub local_bytes: u32,
    /// Static shared memory per CTA in bytes (ptxas `-v`).
    pub static_smem: u32,
    /// Theoretical occupancy from `threads`, `registers` and
    /// `static_smem`.
    pub occupancy: Occupancy,
    /// `None` where there is no SASS (sm_70) or no loop.
    pub hot: Option<HotLoop>,
}

impl Row {
    /// `kernel` or `kernel[tuning]`.
    pub fn label(&self) -> String {
        if self.tuning.is_empty() {
            self.kernel.clone()
        } else {
            format!("{}[{}]", self.kernel, self.tuning)
        }
    }
}

/// The whole report.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// `(ptxas, nvdisasm)` version tags.
    pub tools: (String, String),
    /// One row per variant × target (see [`variants`]), sorted by
    /// [`Row::label`], then target.
    pub rows: Vec<Row>,
    /// SASS instructions per call of the exact math routines, one entry
    /// per target of [`Sm::ALL`].
    pub math: Vec<MathCost>,
    /// The roofline model of every kernel family on every card.
    pub roofline: Roofline,
}

/// Every variant the report covers on `sm`: the library's default variants
/// and the non-default ones a user can select (the software FP8 codec
/// where the SM has the hardware one).
pub fn variants(sm: Sm) -> Result<Vec<PtxModule>> {
    let mut all = kernels::all_variants(sm)?;
    use kernels::fp8::{Format, ptx};
    if ptx::Codec::for_sm(sm) == ptx::Codec::Hardware {
        for f in [Format::E4M3, Format::E5M2] {
            for kind in ptx::Kind::ALL.into_iter().filter(|k| k.uses_codec()) {
                all.push(ptx::generate(sm, kind, f, ptx::Codec::Software)?);
            }
        }
    }
    // The block-scaled kernels' integer codec next to the hardware cvt of
    // the arch-specific targets.
    if sm.supports(crate::target::Feature::BlockScaleCvt) {
        use kernels::block_scaled::{Format as BsFormat, ptx as bs};
        for r in bs::recipes() {
            all.push(bs::generate_quantize(sm, r, bs::Codec::Software)?);
        }
        for f in BsFormat::ALL {
            all.push(bs::generate_dequantize(sm, f, bs::Codec::Software)?);
        }
    }
    Ok(all)
}

/// The CTA size a module declares (`maxntid`).
fn threads_of(m: &PtxModule) -> Result<u32> {
    let prog = crate::sim::Program::parse(&m.ptx)?;
    let e = prog.entry(&m.kernel).ok_or_else(|| Error::Build {
        kernel: m.kernel.clone(),
        error: crate::dsl::BuildError::Inspect {
            message: "entry missing from its own module".into(),
        },
        location: None,
    })?;
    let (x, y, z) = e.maxntid.or(e.reqntid).ok_or_else(|| Error::Build {
        kernel: m.kernel.clone(),
        error: crate::dsl::BuildError::Inspect {
            message: "the report needs every library kernel to declare its CTA size (maxntid)"
                .into(),
        },
        location: None,
    })?;
    Ok(x * y * z)
}

/// The address range of the hot loop of `f`: among its innermost loops,
/// the one with the most FP32 math instructions, ties broken by size.
pub fn hot_loop_range(f: &SassFunction) -> Option<std::ops::RangeInclusive<u32>> {
    let count = |r: &std::ops::RangeInclusive<u32>| {
        f.in_range(r)
            .filter(|i| i.is("HMMA") || FP32_MATH.iter().any(|o| i.is(o)))
            .count()
    };
    f.innermost_loops()
        .into_iter()
        .max_by_key(|r| (count(r), f.in_range(r).count()))
}

/// The hot loop of `f` (see the [module docs](self)).
fn hot_loop(kernel: &str, f: &SassFunction) -> Option<HotLoop> {
    let count = |r: &std::ops::RangeInclusive<u32>, ops: &[&str]| {
        f.in_range(r)
            .filter(|i| ops.iter().any(|o| i.is(o)))
            .count()
    };
    let r = hot_loop_range(f)?;
    let instructions = f.in_range(&r).count();
    let multiplies = count(&r, &["FMUL", "FFMA"]);
    let per_unit = if kernel.starts_with("fp8_")
        || kernel.starts_with("block_scaled_quantize")
        || kernel.starts_with("block_scaled_dequantize")
    {
        // Element loops: four elements a thread per iteration, sixteen in
        // the block-scaled kernels (`ELEMS_PER_LANE`) and in FP8
        // dequantize's unrolled loop (four groups of four); the finalize
        // kernel's loop runs over partials, not elements.
        let elements = if kernel.starts_with("block_scaled_") {
            f64::from(crate::kernels::block_scaled::ptx::ELEMS_PER_LANE)
        } else if kernel.starts_with("fp8_dequantize") {
            4.0 * crate::kernels::fp8::ptx::DEQUANTIZE_UNROLL as f64
        } else {
            4.0
        };
        (!kernel.starts_with("fp8_absmax_finalize"))
            .then(|| ("element", instructions as f64 / elements))
    } else if kernel.starts_with("block_scaled_") {
        // The NVFP4 global-scale loop runs over partials; the layout
        // conversion moves bytes without arithmetic.
        None
    } else if multiplies > 0 {
        Some(("multiply-add", instructions as f64 / multiplies as f64))
    } else {
        None
    };
    Some(HotLoop {
        instructions,
        fp32_math: count(&r, &FP32_MATH),
        memory: count(&r, &MEMORY),
        shuffles: count(&r, &["SHFL"]),
        per_unit,
    })
}

fn tool_error(m: &PtxModule, e: impl std::fmt::Display) -> Error {
    Error::Build {
        kernel: m.kernel.clone(),
        error: crate::dsl::BuildError::Inspect {
            message: format!("{} on {}: {e}", m.tuning, m.sm),
        },
        location: None,
    }
}

/// Measure one module from its assembly and disassembly (`None` on
/// sm_70); also its SASS summary for the roofline model.
fn row(m: &PtxModule, asm: &Assembly, sass: Option<&Sass>) -> Result<(Row, Option<SassSummary>)> {
    let usage = asm
        .function(&m.kernel)
        .ok_or_else(|| tool_error(m, "no resource report for the entry"))?
        .clone();
    let threads = threads_of(m)?;
    let f = sass.and_then(|s| s.function(&m.kernel));
    let hot = f.and_then(|f| hot_loop(&m.kernel, f));
    let summary = f.map(|f| SassSummary::of(f).with_resources(usage.registers, usage.shared_bytes));
    let row = Row {
        kernel: m.kernel.clone(),
        tuning: m.tuning.clone(),
        sm: m.sm,
        threads,
        registers: usage.registers,
        spill_bytes: usage.spill_stores_bytes + usage.spill_loads_bytes,
        local_bytes: usage.local_bytes,
        static_smem: usage.shared_bytes,
        occupancy: occupancy(m.sm, threads, usage.registers, usage.shared_bytes),
        hot,
    };
    Ok((row, summary))
}

/// What [`generate_with_progress`] reports as it works, for a progress
/// display. The report runs in phases, one after the other; each starts
/// with [`Progress::Phase`] and reports each of its units with
/// [`Progress::Done`] (from any worker thread, in no fixed order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress<'a> {
    /// A phase starts, with `units` units of work.
    Phase {
        /// What the phase does, e.g. "variant × target".
        name: &'static str,
        /// How many [`Progress::Done`] follow.
        units: usize,
    },
    /// One unit of the current phase is done; `what` names it.
    Done {
        /// E.g. a kernel and its target.
        what: &'a str,
    },
}

/// A progress callback: called from the report's worker threads.
pub type ProgressFn<'f> = &'f (dyn Fn(Progress<'_>) + Sync);

/// Build the report for every variant × target (ptxas on every core), the
/// math routines' cost per call, then the roofline model on the SASS it
/// measured.
pub fn generate(tools: &NvTools) -> Result<Report> {
    generate_with_progress(tools, &|_| {})
}

/// [`generate`], reporting its progress to `progress` (phases: the
/// variant × target rows, the math routines per target, the roofline
/// model's problem × SM jobs). The report does not depend on it.
pub fn generate_with_progress(tools: &NvTools, progress: ProgressFn<'_>) -> Result<Report> {
    let mut modules = Vec::new();
    for sm in Sm::ALL {
        modules.extend(variants(sm)?);
    }
    progress(Progress::Phase {
        name: "variant × target",
        units: modules.len(),
    });
    let tools_v = tools
        .versions()
        .map_err(|e| Error::invalid(format!("NVIDIA tools: {e}")))?;
    // Assemble on every core (ptxas is a process a module), then
    // disassemble every target's cubins with one nvdisasm run
    // (`NvTools::disassemble_many`: its start-up costs more than a
    // kernel's disassembly).
    let asms: Vec<Assembly> = modules
        .par_iter()
        .map(|m| {
            let a = tools.assemble(&m.ptx, m.sm).map_err(|e| tool_error(m, e));
            progress(Progress::Done {
                what: &format!("{}[{}] {}", m.kernel, m.tuning, m.sm),
            });
            a
        })
        .collect::<Result<_>>()?;
    let readable: Vec<usize> = (0..asms.len())
        .filter(|&i| NvTools::can_disassemble(modules[i].sm))
        .collect();
    let listings = tools.disassemble_many(&readable.iter().map(|&i| &asms[i]).collect::<Vec<_>>());
    let mut sass_of: Vec<Option<Sass>> = asms.iter().map(|_| None).collect();
    for (&i, l) in readable.iter().zip(listings) {
        sass_of[i] = Some(l.map_err(|e| tool_error(&modules[i], e))?);
    }
    let mut rows: Vec<(usize, Row)> = Vec::with_capacity(asms.len());
    let mut sass = SassCache::new();
    for (i, (m, asm)) in modules.iter().zip(&asms).enumerate() {
        let (row, summary) = row(m, asm, sass_of[i].as_ref())?;
        if let Some(s) = summary {
            sass.insert((m.kernel.clone(), m.tuning.clone(), m.sm, m.ptx.clone()), s);
        }
        rows.push((i, row));
    }
    rows.sort_by_key(|(i, _)| *i);
    let mut rows: Vec<Row> = rows.into_iter().map(|(_, r)| r).collect();
    rows.sort_by_key(|r| (r.label(), r.sm));
    progress(Progress::Phase {
        name: "math routines × target",
        units: Sm::ALL.len(),
    });
    let math = math_cost::generate(tools, &|sm| {
        progress(Progress::Done {
            what: &format!("math routines {sm}"),
        })
    })?;
    let roofline = roofline::generate_with_progress(tools, &sass, progress)?;
    Ok(Report {
        tools: tools_v,
        rows,
        math,
        roofline,
    })
}

impl Report {
    /// The report as Markdown: one table, a row per variant × target.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# Tuning report\n\nGenerated by `cargo run --release --example tuning_report` with ptxas {} and nvdisasm {}; `tests/tuning_report.rs` fails when this file drifts from the code. Definitions: `src/report/mod.rs`. Occupancy is theoretical (registers, static shared memory, threads and CTA slots against the target table); *hot loop* is the innermost SASS loop with the most FP32 math; sm_70 has no SASS figures (nvdisasm 13.5 reads no sm_70 cubin). Picture: [tuning.svg](tuning.svg). After the table: the SASS instructions per call of the exact math routines ([Exact math routines](#exact-math-routines-sass-instructions-per-call)), then the roofline model of every kernel family on every card ([Roofline model](#roofline-model)).\n",
            self.tools.0, self.tools.1
        );
        let _ = writeln!(
            s,
            "| kernel | SM | threads | regs | spill B | smem B | CTAs/SM | warps/SM | occupancy | limited by | hot loop | FP32 math | mem | shfl | SASS per unit |"
        );
        let _ = writeln!(
            s,
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---|"
        );
        for r in &self.rows {
            let o = &r.occupancy;
            let hot = match &r.hot {
                None => "| – | – | – | – | – |".to_string(),
                Some(h) => format!(
                    "| {} | {:.1} % | {} | {} | {} |",
                    h.instructions,
                    100.0 * h.math_share(),
                    h.memory,
                    h.shuffles,
                    h.per_unit
                        .map_or("–".to_string(), |(u, v)| format!("{v:.2} / {u}"))
                ),
            };
            let _ = writeln!(
                s,
                "| `{}` | {} | {} | {} | {} | {} | {} | {}/{} | {:.0} % | {} {hot}",
                r.label(),
                r.sm,
                r.threads,
                r.registers,
                r.spill_bytes,
                r.static_smem,
                o.ctas_per_sm,
                o.warps_per_sm,
                o.max_warps_per_sm,
                100.0 * o.fraction(),
                o.limiter,
            );
        }
        s.push_str(&math_cost::markdown(&self.math));
        s.push_str(&self.roofline.markdown());
        s
    }

    /// The report as an SVG picture: heat maps of occupancy and hot-loop
    /// FP32 math share per kernel and SM.
    pub fn svg(&self) -> String {
        svg::render(self)
    }

    /// The roofline picture (`docs/roofline.svg`).
    pub fn roofline_svg(&self) -> String {
        self.roofline.svg()
    }

    /// The roofline model as tab-separated values (`docs/roofline.tsv`).
    pub fn roofline_tsv(&self) -> String {
        self.roofline.tsv()
    }
}
