//! Locating and running the pinned NVIDIA tools (`ptxas`, `nvdisasm`).
//!
//! ptxsmith never needs these at run time; tests use them to check that
//! every generated module assembles for its target, what it costs in
//! registers, spills and shared memory, and what SASS the hot loops become.
//! `scripts/install-nvidia-tools.sh` installs the pinned versions from PyPI
//! wheels into [`NvTools::default_dir`] (`$PTXSMITH_NVIDIA_TOOLS`, else the
//! user's cache folder `$XDG_CACHE_HOME/ptxsmith/nvidia-tools` or
//! `~/.cache/ptxsmith/nvidia-tools`), a place that works the same for a
//! checkout of this repository and for ptxsmith used as a dependency (whose
//! sources lie read-only in the cargo registry):
//!
//! * `ptxas` 12.9.86 (`nvidia-cuda-nvcc-cu12==12.9.86`,
//!   `nvidia/cuda_nvcc/bin/ptxas`), highest `.version` accepted: 8.8;
//! * `nvdisasm` 13.5.37 (`nvidia-cuda-nvdisasm==13.5.37`,
//!   `nvidia/cu13/bin/nvdisasm`).
//!
//! # Example
//!
//! ```
//! use ptxsmith::Sm;
//! use ptxsmith::nvtools::NvTools;
//!
//! // A hand-written test kernel: a loop of rn-rounded multiply and add.
//! let ptx = include_str!(concat!(
//!     env!("CARGO_MANIFEST_DIR"),
//!     "/tests/fixtures/nvtools/loop.ptx"
//! ));
//! let Some(tools) = NvTools::for_tests() else { return Ok(()) }; // SKIP: not installed
//! let asm = tools.assemble(ptx, Sm::Sm80)?;
//! let usage = asm.function("axpy_loop").unwrap();
//! assert!(!usage.spills() && usage.registers <= 32);
//!
//! let sass = tools.disassemble(&asm)?;
//! let f = sass.function("axpy_loop").unwrap();
//! let hot = f.innermost_loops().into_iter().next().unwrap();
//! assert!(f.share(&hot, &["FMUL", "FADD"]) > 0.5);
//! assert_eq!(f.count("FFMA"), 0); // not contracted
//! # Ok::<(), ptxsmith::nvtools::ToolError>(())
//! ```
//!
//! # Measured behaviour of the pinned tools
//!
//! **Lowest `.version` per target** (ptxas 12.9.86, a kernel that only
//! returns; `tests/ptxas_versions.rs` asserts that version minus one is
//! rejected and the table value accepted, and that both agree with
//! [`Sm::min_ptx`](crate::Sm::min_ptx)):
//!
//! | target | lowest `.version` |
//! |--------|-------------------|
//! | sm_70  | 6.0 |
//! | sm_75  | 6.3 |
//! | sm_80  | 7.0 |
//! | sm_86  | 7.1 |
//! | sm_89  | 7.8 |
//! | sm_90  | 7.8 |
//! | sm_100 | 8.6 |
//! | sm_100a | 8.6 |
//! | sm_120 | 8.7 |
//! | sm_120a | 8.7 |
//! | sm_100f, sm_120f (not offered) | 8.8 |
//!
//! Below it, ptxas fails with `PTX .version 6.5 does not support .target
//! sm_80` (exit status 255). ptxas 12.9 still assembles sm_70 and sm_75
//! **without any deprecation warning**; `.version` 8.9 and above are
//! rejected (`Unsupported .version 8.9; current version is '8.8'`).
//!
//! **FP8 conversion** (`cvt.rn.satfinite.e4m3x2.f32`): lowest `.version` 8.1
//! on sm_89 and 7.8 on sm_90 (sm_100 / sm_120: their target minimums, 8.6 /
//! 8.7). On sm_89 with 7.8 to 8.0 the message is misleading: `Feature 'cvt
//! with .e4m3x2/.e5m2x2' requires .target sm_90 or higher`; on sm_90 with
//! 7.7 it is `... requires PTX ISA .version 7.8 or later`.
//!
//! **Block-scale conversions** (`cvt.rn.satfinite.e2m1x2.f32` into a `.b8`,
//! `cvt.{rz,rp}.satfinite.ue8m0x2.f32` into a `.b16`, and the decodes
//! `cvt.rn.f16x2.e2m1x2` / `cvt.rn.bf16x2.ue8m0x2`): accepted on sm_100a
//! at 8.6, sm_120a at 8.7 and sm_100f / sm_120f at 8.8; refused on plain
//! sm_100 / sm_120 and on sm_90a (`Instruction 'cvt with .e2m1x2' not
//! supported on .target 'sm_100'`), below 8.6 (`Feature 'cvt with .e2m1x2'
//! requires PTX ISA .version 8.6 or later`), with another destination type
//! (`Arguments mismatch for instruction 'cvt'`), with `.rn` on ue8m0x2
//! (`Illegal rounding modifier`), without `.satfinite` on e2m1x2
//! (`'.satfinite' modifier required`) and with `.relu` on ue8m0x2. ptxas
//! checks instructions against the module's `.target`, not `-arch`. SASS:
//! `F2FP.SATFINITE.E2M1.F32.PACK_AB_MERGE_C` (four of them merge into one
//! register when the bytes are packed with `mov.b32 {…}`) and
//! `F2FP.SATFINITE.E8.F32.PACK_AB_MERGE_C.RP`. ptxas does not fold them on
//! constant inputs, so it gives no evidence of their numerics.
//!
//! **nvdisasm 13.5 cannot disassemble sm_70 cubins** (`nvdisasm fatal :
//! CUDA architecture "SM70" is deprecated. Please use CUDA toolkit 13.0 or
//! earlier`); see [`NvTools::can_disassemble`]. For sm_75 .. sm_90 cubins
//! written by ptxas 12.9 it warns `Disassembling Std Elf to Old format or
//! Old Elf to Std format not supported yet, switching to Old format` and
//! `Dataflow analysis disabled due to previous warnings` on stderr; the
//! listing is complete and branch targets are still labels.
//!
//! # Formats parsed
//!
//! `ptxas -v` writes its report to **stderr** (stdout stays empty):
//!
//! ```text
//! ptxas info    : 64 bytes gmem, 32 bytes cmem[3], 8 bytes cmem[4]
//! ptxas info    : Compiling entry function 'axpy_loop' for 'sm_80'
//! ptxas info    : Function properties for axpy_loop
//!     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//! ptxas info    : Used 10 registers, used 1 barriers, 256 bytes smem, 364 bytes cmem[0]
//! ptxas info    : Compile time = 2.510 ms
//! ```
//!
//! Local memory appears as `128 bytes cumulative stack size` on the `Used`
//! line (older releases wrote `N bytes lmem`; both are read into
//! [`ResourceUsage::local_bytes`]). On sm_90 and later the `cmem[0]` part is
//! absent. Spills also give a warning line: `ptxas warning : Registers are
//! spilled to local memory in function 'spill', 568 bytes spill stores, 712
//! bytes spill loads`. Errors: `ptxas kernel.ptx, line 7; error   : Illegal
//! rounding modifier for instruction 'add'`, then `ptxas fatal   : Ptx
//! assembly aborted due to errors`.
//!
//! `nvdisasm -c` (code sections only) prints one instruction a line:
//!
//! ```text
//! .L_x_2:
//!         /*0120*/                   FMUL R5, R0, R5 ;
//!         /*01c0*/              @!P1 BRA `(.L_x_2) ;
//! ```
//!
//! Functions start with a column-0 label declared by `.type NAME,@function`
//! (entries and called `.func`s, the latter named `$entry$func`); each
//! instruction is 16 bytes; every function ends with a `BRA` to itself and
//! `NOP` padding.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::target::Sm;

/// Environment variable naming a folder that holds `ptxas` and `nvdisasm`
/// (directly, in `bin/`, or in the wheel layout).
pub const TOOLS_ENV: &str = "PTXSMITH_NVIDIA_TOOLS";
/// Set to `1` to make [`NvTools::for_tests`] panic when the tools are
/// missing (CI sets it).
pub const REQUIRE_ENV: &str = "PTXSMITH_REQUIRE_NVIDIA_TOOLS";
/// The `ptxas --version` tag of the pinned assembler.
pub const PTXAS_PINNED: &str = "V12.9.86";
/// The `nvdisasm --version` tag of the pinned disassembler.
pub const NVDISASM_PINNED: &str = "V13.5.37";

/// Where the two binaries sit inside a tools folder, in search order.
const PTXAS_CANDIDATES: &[&str] = &["nvidia/cuda_nvcc/bin/ptxas", "bin/ptxas", "ptxas"];
const NVDISASM_CANDIDATES: &[&str] = &[
    "nvidia/cu13/bin/nvdisasm",
    "nvidia/cuda_nvdisasm/bin/nvdisasm",
    "nvidia/cuda_nvcc/bin/nvdisasm",
    "bin/nvdisasm",
    "nvdisasm",
];

/// Errors from running the NVIDIA tools.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// Creating, writing or reading a temporary file, or starting a tool.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// ptxas rejected the module. `log` is its complete output; the
    /// diagnostics carry the PTX line numbers.
    #[error("ptxas rejected the module for {sm} ({status}):\n{}", render_ptxas_error(.log, .excerpt))]
    Ptxas {
        /// The target assembled for.
        sm: Sm,
        /// ptxas' exit status.
        status: String,
        /// Its complete output.
        log: String,
        /// The parsed messages.
        diagnostics: Vec<Diagnostic>,
        /// `(line, source text)` for each line a diagnostic names.
        excerpt: Vec<(u32, String)>,
    },
    /// nvdisasm failed (for instance on sm_70 cubins, which nvdisasm 13.5
    /// no longer reads).
    #[error("nvdisasm failed on the {sm} cubin ({status}):\n{log}")]
    Nvdisasm {
        /// The cubin's target.
        sm: Sm,
        /// nvdisasm's exit status.
        status: String,
        /// Its complete output.
        log: String,
    },
}

fn render_ptxas_error(log: &str, excerpt: &[(u32, String)]) -> String {
    let mut s = log.trim_end().to_string();
    if !excerpt.is_empty() {
        s.push_str("\n--- offending lines ---");
        for (line, text) in excerpt {
            s.push_str(&format!("\n{line:>5} | {text}"));
        }
    }
    s
}

/// Severity of a ptxas message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Severity {
    /// `info`
    Info,
    /// `warning`
    Warning,
    /// `error`
    Error,
    /// `fatal`
    Fatal,
}

/// One `ptxas <file>, line N; error   : message` (or `ptxas fatal   :
/// message`) line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// How bad.
    pub severity: Severity,
    /// The PTX line (1-based) when ptxas names one.
    pub line: Option<u32>,
    /// The message text.
    pub message: String,
}

/// Parse the error, warning and fatal lines of a ptxas log (info lines are
/// the resource report, see [`parse_resource_report`]).
pub fn parse_diagnostics(log: &str) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for line in log.lines() {
        let Some(rest) = line.strip_prefix("ptxas") else {
            continue;
        };
        let Some((head, message)) = rest.split_once(':') else {
            continue;
        };
        // head is ` <file>, line N; error   ` or ` warning ` or ` fatal   `.
        let (loc, sev) = match head.rsplit_once(';') {
            Some((loc, sev)) => (Some(loc), sev),
            None => (None, head),
        };
        let severity = match sev.trim() {
            "error" => Severity::Error,
            "warning" => Severity::Warning,
            "fatal" => Severity::Fatal,
            _ => continue,
        };
        let line_no = loc
            .and_then(|l| l.rsplit_once("line "))
            .and_then(|(_, n)| n.trim().parse().ok());
        out.push(Diagnostic {
            severity,
            line: line_no,
            message: message.trim().to_string(),
        });
    }
    out
}

/// What ptxas reports for one function (`ptxas -v`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceUsage {
    /// The function's name (`.entry` or `.func`).
    pub name: String,
    /// Whether ptxas compiled it as an entry (`Compiling entry function`).
    pub is_entry: bool,
    /// The target ptxas named (`sm_80`), for entries.
    pub target: Option<String>,
    /// Registers per thread (`Used N registers`).
    pub registers: u32,
    /// Named barriers used (`used N barriers`).
    pub barriers: u32,
    /// `N bytes stack frame`.
    pub stack_frame_bytes: u32,
    /// `N bytes spill stores`.
    pub spill_stores_bytes: u32,
    /// `N bytes spill loads`.
    pub spill_loads_bytes: u32,
    /// Static shared memory (`N bytes smem`).
    pub shared_bytes: u32,
    /// Local memory per thread: `N bytes cumulative stack size` (ptxas
    /// 12.x) or `N bytes lmem` (older releases).
    pub local_bytes: u32,
    /// Sum over the constant banks of [`cmem`](Self::cmem).
    pub constant_bytes: u32,
    /// `N bytes cmem[B]` as `(B, N)`, in report order (bank 0 holds the
    /// parameters; ptxas omits it on sm_90 and later).
    pub cmem: Vec<(u32, u32)>,
    /// Parts of the report this parser did not recognise, verbatim.
    pub other: Vec<String>,
}

impl ResourceUsage {
    /// Whether ptxas spilled registers to local memory.
    pub fn spills(&self) -> bool {
        self.spill_stores_bytes > 0 || self.spill_loads_bytes > 0
    }
}

/// The module-wide line of a `ptxas -v` report (`N bytes gmem, M bytes
/// cmem[3]`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModuleUsage {
    /// Global variables (`N bytes gmem`).
    pub global_bytes: u32,
    /// Module constant banks `(bank, bytes)`.
    pub cmem: Vec<(u32, u32)>,
}

/// Parse a `ptxas -v` log into the module line and one [`ResourceUsage`]
/// per function, in the order ptxas first names them.
pub fn parse_resource_report(log: &str) -> (ModuleUsage, Vec<ResourceUsage>) {
    let mut module = ModuleUsage::default();
    let mut funcs: Vec<ResourceUsage> = Vec::new();
    // The function a `Used ...` line belongs to (the last compiled one) and
    // the one a `... stack frame ...` line belongs to (the last "Function
    // properties for").
    let mut compiling: Option<usize> = None;
    let mut props: Option<usize> = None;

    fn index_of(funcs: &mut Vec<ResourceUsage>, name: &str) -> usize {
        match funcs.iter().position(|f| f.name == name) {
            Some(i) => i,
            None => {
                funcs.push(ResourceUsage {
                    name: name.to_string(),
                    ..ResourceUsage::default()
                });
                funcs.len() - 1
            }
        }
    }

    for raw in log.lines() {
        if let Some(rest) = raw.strip_prefix("ptxas info") {
            let Some((_, body)) = rest.split_once(':') else {
                continue;
            };
            let body = body.trim();
            let compiled = match body.strip_prefix("Compiling entry function ") {
                Some(r) => Some((r, true)),
                None => body.strip_prefix("Compiling function ").map(|r| (r, false)),
            };
            if let Some((r, is_entry)) = compiled {
                // 'name' for 'sm_80'
                let mut quoted = r.split('\'').skip(1).step_by(2);
                let name = quoted.next().unwrap_or("").to_string();
                let target = quoted.next().map(str::to_string);
                let i = index_of(&mut funcs, &name);
                funcs[i].is_entry = is_entry;
                funcs[i].target = target;
                compiling = Some(i);
            } else if let Some(name) = body.strip_prefix("Function properties for ") {
                props = Some(index_of(&mut funcs, name.trim()));
            } else if body.starts_with("Used ") {
                if let Some(i) = compiling {
                    apply_parts(&mut funcs[i], body);
                }
            } else if body.contains("bytes gmem") {
                for part in body.split(',') {
                    let part = part.trim();
                    if let Some(n) = leading_number(part) {
                        if part.ends_with("bytes gmem") {
                            module.global_bytes = n;
                        } else if let Some(bank) = cmem_bank(part) {
                            module.cmem.push((bank, n));
                        }
                    }
                }
            }
        } else if raw.starts_with(char::is_whitespace)
            && raw.contains("bytes stack frame")
            && let Some(i) = props
        {
            apply_parts(&mut funcs[i], raw.trim());
        }
    }
    (module, funcs)
}

fn leading_number(s: &str) -> Option<u32> {
    let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

fn cmem_bank(part: &str) -> Option<u32> {
    let (_, r) = part.split_once("cmem[")?;
    r.strip_suffix(']')?.parse().ok()
}

fn apply_parts(f: &mut ResourceUsage, body: &str) {
    for part in body.split(',') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        if let Some(r) = part.strip_prefix("Used ")
            && let (Some(n), true) = (leading_number(r), r.ends_with("registers"))
        {
            f.registers = n;
            continue;
        }
        if let Some(r) = part.strip_prefix("used ")
            && let (Some(n), true) = (leading_number(r), r.ends_with("barriers"))
        {
            f.barriers = n;
            continue;
        }
        let Some(n) = leading_number(part) else {
            f.other.push(part.to_string());
            continue;
        };
        let unit = part[n.to_string().len()..].trim();
        match unit {
            "bytes stack frame" => f.stack_frame_bytes = n,
            "bytes spill stores" => f.spill_stores_bytes = n,
            "bytes spill loads" => f.spill_loads_bytes = n,
            "bytes smem" => f.shared_bytes = n,
            "bytes lmem" | "bytes cumulative stack size" => f.local_bytes = n,
            _ => {
                if let Some(bank) = cmem_bank(unit) {
                    f.cmem.push((bank, n));
                    f.constant_bytes += n;
                } else {
                    f.other.push(part.to_string());
                }
            }
        }
    }
}

/// A module assembled by ptxas.
#[derive(Debug, Clone)]
pub struct Assembly {
    /// The target.
    pub sm: Sm,
    /// The cubin (ELF) ptxas wrote.
    pub cubin: Vec<u8>,
    /// ptxas's complete output (stdout then stderr): the `-v` report and
    /// any warnings.
    pub log: String,
    /// The `ptxas warning : ...` messages.
    pub warnings: Vec<String>,
    /// The module-wide report line.
    pub module: ModuleUsage,
    /// One entry per function, in report order.
    pub functions: Vec<ResourceUsage>,
}

impl Assembly {
    /// The report for function `name`.
    pub fn function(&self, name: &str) -> Option<&ResourceUsage> {
        self.functions.iter().find(|f| f.name == name)
    }

    /// The single entry of a one-kernel module (`None` when there are
    /// zero or several).
    pub fn entry(&self) -> Option<&ResourceUsage> {
        let mut it = self.functions.iter().filter(|f| f.is_entry);
        match (it.next(), it.next()) {
            (Some(f), None) => Some(f),
            _ => None,
        }
    }
}

/// One SASS instruction as nvdisasm prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SassInstr {
    /// Byte offset within the function's section (`/*0120*/`).
    pub address: u32,
    /// Guard predicate without the `@` (`P0`, `!P1`, `UPT`), if any.
    pub predicate: Option<String>,
    /// Opcode with modifiers, e.g. `FADD.FTZ`, `LDS.128`, `BRA`.
    pub opcode: String,
    /// The operand text, without the trailing `;`.
    pub operands: String,
    /// For branches (`BRA*`), the resolved target address.
    pub target: Option<u32>,
}

impl SassInstr {
    /// The opcode without modifiers (text before the first `.`).
    pub fn base(&self) -> &str {
        self.opcode.split('.').next().unwrap_or("")
    }

    /// Whether this instruction matches `op`: the full opcode when `op`
    /// has a `.` (`FADD.FTZ`), else the base opcode (`FADD`).
    pub fn is(&self, op: &str) -> bool {
        if op.contains('.') {
            self.opcode == op
        } else {
            self.base() == op
        }
    }
}

/// The disassembly of one function.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SassFunction {
    /// The function's (kernel's) name.
    pub name: String,
    /// Its instructions, in address order.
    pub instructions: Vec<SassInstr>,
    /// Labels (`.L_x_2`) and their addresses.
    pub labels: BTreeMap<String, u32>,
}

impl SassFunction {
    /// Instructions whose address lies in `range`.
    pub fn in_range<'a>(
        &'a self,
        range: &'a RangeInclusive<u32>,
    ) -> impl Iterator<Item = &'a SassInstr> + 'a {
        self.instructions
            .iter()
            .filter(move |i| range.contains(&i.address))
    }

    /// How many instructions match `op` (see [`SassInstr::is`]).
    pub fn count(&self, op: &str) -> usize {
        self.instructions.iter().filter(|i| i.is(op)).count()
    }

    /// Histogram of base opcodes.
    pub fn opcode_histogram(&self) -> BTreeMap<String, usize> {
        let mut h = BTreeMap::new();
        for i in &self.instructions {
            *h.entry(i.base().to_string()).or_insert(0) += 1;
        }
        h
    }

    /// Loops: for every backward branch (a `BRA*`, predicated or not, to a
    /// strictly earlier address) the range `target..=branch address`.
    /// Sorted by start then end, duplicates removed. The self-branch
    /// (`.L_x_3: BRA .L_x_3`) ptxas puts after the final `EXIT` is not a
    /// loop and is left out.
    pub fn loops(&self) -> Vec<RangeInclusive<u32>> {
        let mut v: Vec<RangeInclusive<u32>> = self
            .instructions
            .iter()
            .filter(|i| i.base() == "BRA")
            .filter_map(|i| match i.target {
                Some(t) if t < i.address => Some(t..=i.address),
                _ => None,
            })
            .collect();
        v.sort_by_key(|r| (*r.start(), *r.end()));
        v.dedup();
        v
    }

    /// Loops that contain no other loop.
    pub fn innermost_loops(&self) -> Vec<RangeInclusive<u32>> {
        let all = self.loops();
        all.iter()
            .filter(|r| {
                !all.iter()
                    .any(|o| o != *r && r.start() <= o.start() && o.end() <= r.end())
            })
            .cloned()
            .collect()
    }

    /// The loop with the most instructions (the first on a tie).
    pub fn largest_loop(&self) -> Option<RangeInclusive<u32>> {
        let mut best: Option<(usize, RangeInclusive<u32>)> = None;
        for r in self.loops() {
            let n = self.in_range(&r).count();
            if best.as_ref().is_none_or(|(m, _)| n > *m) {
                best = Some((n, r));
            }
        }
        best.map(|(_, r)| r)
    }

    /// Fraction (0..=1) of the instructions in `range` that match one of
    /// `ops` (see [`SassInstr::is`]); 0 for an empty range.
    pub fn share(&self, range: &RangeInclusive<u32>, ops: &[&str]) -> f64 {
        let mut total = 0usize;
        let mut hit = 0usize;
        for i in self.in_range(range) {
            total += 1;
            if ops.iter().any(|op| i.is(op)) {
                hit += 1;
            }
        }
        if total == 0 {
            0.0
        } else {
            hit as f64 / total as f64
        }
    }
}

/// A disassembled cubin.
#[derive(Debug, Clone)]
pub struct Sass {
    /// The target.
    pub sm: Sm,
    /// The functions, in listing order.
    pub functions: Vec<SassFunction>,
    /// nvdisasm's complete stdout.
    pub text: String,
    /// nvdisasm's stderr (warnings).
    pub warnings: String,
}

impl Sass {
    /// Parse an `nvdisasm -c` listing.
    pub fn parse(sm: Sm, text: &str) -> Sass {
        Sass {
            sm,
            functions: parse_sass(text),
            text: text.to_string(),
            warnings: String::new(),
        }
    }

    /// The function called `name`.
    pub fn function(&self, name: &str) -> Option<&SassFunction> {
        self.functions.iter().find(|f| f.name == name)
    }

    /// Loops of function `name` (see [`SassFunction::loops`]); empty when
    /// there is no such function.
    pub fn loops(&self, function: &str) -> Vec<RangeInclusive<u32>> {
        self.function(function)
            .map(SassFunction::loops)
            .unwrap_or_default()
    }

    /// Histogram of base opcodes over all functions.
    pub fn opcode_histogram(&self) -> BTreeMap<String, usize> {
        let mut h = BTreeMap::new();
        for f in &self.functions {
            for (k, v) in f.opcode_histogram() {
                *h.entry(k).or_insert(0) += v;
            }
        }
        h
    }

    /// How many instructions over all functions match `op` (see
    /// [`SassInstr::is`]).
    pub fn count(&self, op: &str) -> usize {
        self.functions.iter().map(|f| f.count(op)).sum()
    }
}

/// Parse an `nvdisasm` listing into functions. Lines that are not
/// instructions, labels or function starts are ignored.
pub fn parse_sass(text: &str) -> Vec<SassFunction> {
    let mut declared: Vec<String> = Vec::new();
    let mut funcs: Vec<SassFunction> = Vec::new();
    let mut pending_labels: Vec<String> = Vec::new();
    // (function index, instruction index, label) for branch targets.
    let mut unresolved: Vec<(usize, usize, String)> = Vec::new();

    let finish = |f: &mut SassFunction, pending: &mut Vec<String>| {
        // Labels after the last instruction (the `.size` end label) point
        // one instruction past it.
        let end = f.instructions.last().map_or(0, |i| i.address + 16);
        for l in pending.drain(..) {
            f.labels.insert(l, end);
        }
    };

    for line in text.lines() {
        let t = line.trim();
        if let Some(r) = t.strip_prefix(".type") {
            if let Some(name) = r.trim().strip_suffix(",@function") {
                declared.push(name.trim().to_string());
            }
            continue;
        }
        if t.starts_with("//") {
            // Section banner: whatever follows is not the current function.
            if let Some(f) = funcs.last_mut() {
                finish(f, &mut pending_labels);
            }
            pending_labels.clear();
            continue;
        }
        if let Some(label) = t.strip_suffix(':')
            && !label.contains(char::is_whitespace)
        {
            if declared.iter().any(|d| d == label) && !line.starts_with(char::is_whitespace) {
                if let Some(f) = funcs.last_mut() {
                    finish(f, &mut pending_labels);
                }
                funcs.push(SassFunction {
                    name: label.to_string(),
                    ..SassFunction::default()
                });
            } else if label.starts_with(".L") {
                pending_labels.push(label.to_string());
            }
            continue;
        }
        let Some(instr) = parse_sass_line(t) else {
            continue;
        };
        let Some(fi) = funcs.len().checked_sub(1) else {
            continue;
        };
        let f = &mut funcs[fi];
        for l in pending_labels.drain(..) {
            f.labels.insert(l, instr.address);
        }
        if instr.base() == "BRA"
            && let Some(label) = branch_label(&instr.operands)
        {
            unresolved.push((fi, f.instructions.len(), label));
        }
        f.instructions.push(instr);
    }
    if let Some(f) = funcs.last_mut() {
        finish(f, &mut pending_labels);
    }
    for (fi, ii, label) in unresolved {
        let target = funcs[fi].labels.get(&label).copied();
        if target.is_some() {
            funcs[fi].instructions[ii].target = target;
        }
    }
    funcs
}

/// The label of a branch operand `` `(.L_x_2) ``.
fn branch_label(operands: &str) -> Option<String> {
    let (_, r) = operands.split_once("`(")?;
    let (label, _) = r.split_once(')')?;
    Some(label.trim().to_string())
}

/// Parse one instruction line `/*0120*/  @!P1 FMUL R5, R0, R5 ;` (already
/// trimmed). Returns `None` for anything else.
pub fn parse_sass_line(t: &str) -> Option<SassInstr> {
    let r = t.strip_prefix("/*")?;
    let (addr, rest) = r.split_once("*/")?;
    let address = u32::from_str_radix(addr.trim(), 16).ok()?;
    let mut rest = rest.trim();
    // Instructions end with ';' (an encoding comment may follow with -hex).
    if let Some((code, _)) = rest.split_once(';') {
        rest = code.trim();
    }
    if rest.is_empty() || rest.starts_with('.') {
        return None; // data directives inside non-code sections
    }
    let mut predicate = None;
    if let Some(p) = rest.strip_prefix('@') {
        let (pred, r) = p.split_once(char::is_whitespace)?;
        predicate = Some(pred.to_string());
        rest = r.trim_start();
    }
    let (opcode, operands) = match rest.split_once(char::is_whitespace) {
        Some((o, r)) => (o, r.trim()),
        None => (rest, ""),
    };
    let mut instr = SassInstr {
        address,
        predicate,
        opcode: opcode.to_string(),
        operands: operands.to_string(),
        target: None,
    };
    if instr.base() == "BRA" && !operands.contains('`') {
        // Without dataflow labels, nvdisasm prints an absolute offset.
        instr.target = operands
            .split(|c: char| c.is_whitespace() || c == ',')
            .find_map(|w| w.strip_prefix("0x"))
            .and_then(|h| u32::from_str_radix(h, 16).ok());
    }
    Some(instr)
}

/// [`NvTools::default_dir`] with the environment read through `env`.
fn tools_dir(env: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    let var = |k: &str| env(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(d) = var(TOOLS_ENV) {
        return Some(d);
    }
    let cache = var("XDG_CACHE_HOME")
        .filter(|d| d.is_absolute())
        .or_else(|| var("HOME").map(|h| h.join(".cache")))?;
    Some(cache.join("ptxsmith").join("nvidia-tools"))
}

/// The pinned NVIDIA tools, located on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvTools {
    /// The `ptxas` executable.
    pub ptxas: PathBuf,
    /// The `nvdisasm` executable.
    pub nvdisasm: PathBuf,
}

impl NvTools {
    /// The folder the tools are looked for in (and that
    /// `scripts/install-nvidia-tools.sh` installs into):
    /// `$PTXSMITH_NVIDIA_TOOLS` when set and non-empty, else
    /// `$XDG_CACHE_HOME/ptxsmith/nvidia-tools` (an absolute
    /// `XDG_CACHE_HOME` only, as the XDG spec says), else
    /// `$HOME/.cache/ptxsmith/nvidia-tools`. `None` when none of these
    /// variables is usable.
    pub fn default_dir() -> Option<PathBuf> {
        tools_dir(|k| std::env::var_os(k))
    }

    /// Find the tools in [`default_dir`](Self::default_dir). Looks for the
    /// binaries in the wheel layout (`nvidia/cuda_nvcc/bin/ptxas`,
    /// `nvidia/cu13/bin/nvdisasm`), in `bin/` and directly in the folder.
    /// Runs nothing; see [`versions`](Self::versions).
    pub fn locate() -> Option<NvTools> {
        Self::in_dir(&Self::default_dir()?)
    }

    /// Find both tools inside `dir` (see [`locate`](Self::locate)).
    pub fn in_dir(dir: &Path) -> Option<NvTools> {
        let find = |cands: &[&str]| cands.iter().map(|c| dir.join(c)).find(|p| p.is_file());
        Some(NvTools {
            ptxas: find(PTXAS_CANDIDATES)?,
            nvdisasm: find(NVDISASM_CANDIDATES)?,
        })
    }

    /// For tests: the located tools; when they are missing, panic if
    /// `PTXSMITH_REQUIRE_NVIDIA_TOOLS=1` (CI), else print a `SKIP:` line
    /// to stderr and return `None` so the test can return early.
    pub fn for_tests() -> Option<NvTools> {
        if let Some(t) = Self::locate() {
            return Some(t);
        }
        let where_ = Self::default_dir().map_or_else(
            || format!("no folder: set {TOOLS_ENV} or HOME"),
            |d| d.display().to_string(),
        );
        if std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1") {
            panic!(
                "\n\n*** {REQUIRE_ENV}=1 but the pinned NVIDIA tools (ptxas, nvdisasm) \
                 were not found in {where_}.\n*** Run scripts/install-nvidia-tools.sh. \
                 CI requires the assembler checks.\n"
            );
        }
        eprintln!("SKIP: pinned NVIDIA tools not found; run scripts/install-nvidia-tools.sh");
        None
    }

    /// The `--version` tags (`V12.9.86`, `V13.5.37`) of ptxas and nvdisasm.
    pub fn versions(&self) -> Result<(String, String), ToolError> {
        let tag = |p: &Path| -> Result<String, ToolError> {
            let out = Command::new(p)
                .arg("--version")
                .output()
                .map_err(|e| io_err(format!("running {} --version", p.display()), e))?;
            let text = String::from_utf8_lossy(&out.stdout);
            Ok(text
                .split_whitespace()
                .rev()
                .find(|w| w.starts_with('V') && w[1..].starts_with(|c: char| c.is_ascii_digit()))
                .unwrap_or("")
                .to_string())
        };
        Ok((tag(&self.ptxas)?, tag(&self.nvdisasm)?))
    }

    /// Whether the pinned nvdisasm (13.5) reads cubins for `sm`: every
    /// supported target except sm_70.
    pub const fn can_disassemble(sm: Sm) -> bool {
        !matches!(sm, Sm::Sm70)
    }

    /// Assemble `ptx` for `sm` with `ptxas -arch=<sm> -v -warn-spills`.
    /// The input file is called `kernel.ptx` in ptxas's messages.
    pub fn assemble(&self, ptx: &str, sm: Sm) -> Result<Assembly, ToolError> {
        self.assemble_with(ptx, sm, &[])
    }

    /// [`assemble`](Self::assemble) with extra ptxas options (for example
    /// `-O0` or `-maxrregcount=32`).
    pub fn assemble_with(&self, ptx: &str, sm: Sm, extra: &[&str]) -> Result<Assembly, ToolError> {
        let dir = TempDir::new()?;
        let input = dir.path().join("kernel.ptx");
        std::fs::write(&input, ptx)
            .map_err(|e| io_err(format!("writing {}", input.display()), e))?;
        let mut args: Vec<OsString> = vec![
            format!("-arch={}", sm.name()).into(),
            "-v".into(),
            "-warn-spills".into(),
        ];
        args.extend(extra.iter().map(OsString::from));
        args.extend(["-o".into(), "kernel.cubin".into(), "kernel.ptx".into()]);
        let out = Command::new(&self.ptxas)
            .args(&args)
            .current_dir(dir.path())
            .output()
            .map_err(|e| io_err(format!("running {}", self.ptxas.display()), e))?;
        let mut log = String::from_utf8_lossy(&out.stdout).into_owned();
        log.push_str(&String::from_utf8_lossy(&out.stderr));
        let diagnostics = parse_diagnostics(&log);
        if !out.status.success() {
            let src: Vec<&str> = ptx.lines().collect();
            let mut lines: Vec<u32> = diagnostics.iter().filter_map(|d| d.line).collect();
            lines.sort_unstable();
            lines.dedup();
            let excerpt = lines
                .into_iter()
                .filter_map(|l| {
                    let text = src.get((l as usize).checked_sub(1)?)?;
                    Some((l, text.trim().to_string()))
                })
                .collect();
            return Err(ToolError::Ptxas {
                sm,
                status: out.status.to_string(),
                log,
                diagnostics,
                excerpt,
            });
        }
        let cubin_path = dir.path().join("kernel.cubin");
        let cubin = std::fs::read(&cubin_path)
            .map_err(|e| io_err(format!("reading {}", cubin_path.display()), e))?;
        let warnings = diagnostics
            .into_iter()
            .filter(|d| d.severity == Severity::Warning)
            .map(|d| d.message)
            .collect();
        let (module, functions) = parse_resource_report(&log);
        Ok(Assembly {
            sm,
            cubin,
            log,
            warnings,
            module,
            functions,
        })
    }

    /// Disassemble a cubin with `nvdisasm -c` (code sections only).
    pub fn disassemble(&self, asm: &Assembly) -> Result<Sass, ToolError> {
        let dir = TempDir::new()?;
        let path = dir.path().join("kernel.cubin");
        std::fs::write(&path, &asm.cubin)
            .map_err(|e| io_err(format!("writing {}", path.display()), e))?;
        let out = Command::new(&self.nvdisasm)
            .args(["-c", "kernel.cubin"])
            .current_dir(dir.path())
            .output()
            .map_err(|e| io_err(format!("running {}", self.nvdisasm.display()), e))?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let warnings = String::from_utf8_lossy(&out.stderr).into_owned();
        if !out.status.success() {
            return Err(ToolError::Nvdisasm {
                sm: asm.sm,
                status: out.status.to_string(),
                log: format!("{warnings}{text}"),
            });
        }
        let mut sass = Sass::parse(asm.sm, &text);
        sass.warnings = warnings;
        Ok(sass)
    }
}

fn io_err(context: String, source: std::io::Error) -> ToolError {
    ToolError::Io { context, source }
}

/// A private temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<TempDir, ToolError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let base = std::env::temp_dir();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let mut last = None;
        for _ in 0..16 {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let p = base.join(format!(
                "ptxsmith-nvtools-{}-{n}-{nanos}",
                std::process::id()
            ));
            match std::fs::create_dir(&p) {
                Ok(()) => return Ok(TempDir(p)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(io_err(format!("creating {}", p.display()), e)),
            }
        }
        Err(io_err(
            "creating a temporary directory".to_string(),
            last.unwrap_or_else(|| std::io::Error::other("name collisions")),
        ))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The `.version` of a PTX module, `(major, minor)`.
pub fn ptx_version_of(ptx: &str) -> Option<(u8, u8)> {
    let v = directive_arg(ptx, ".version")?;
    let (a, b) = v.split_once('.')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// The first `.target` name of a PTX module (`sm_80`), without options
/// such as `, debug`.
pub fn ptx_target_of(ptx: &str) -> Option<String> {
    let t = directive_arg(ptx, ".target")?;
    Some(t.split(',').next()?.trim().to_string())
}

/// The rest of the first line (comments removed) that starts with
/// `directive` followed by whitespace.
fn directive_arg<'a>(ptx: &'a str, directive: &str) -> Option<&'a str> {
    ptx.lines().find_map(|line| {
        let line = line.split("//").next()?.trim();
        let rest = line.strip_prefix(directive)?;
        rest.starts_with(char::is_whitespace).then(|| rest.trim())
    })
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
            Severity::Fatal => "fatal",
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn tools_dir_prefers_the_variable_then_the_user_cache() {
        use std::ffi::OsString;
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        let dir = |pairs| super::tools_dir(env(pairs)).map(|p| p.display().to_string());
        let all = &[
            ("PTXSMITH_NVIDIA_TOOLS", "/opt/nv"),
            ("XDG_CACHE_HOME", "/xdg"),
            ("HOME", "/home/u"),
        ];
        assert_eq!(dir(all).as_deref(), Some("/opt/nv"));
        let xdg = &[
            ("PTXSMITH_NVIDIA_TOOLS", ""),
            ("XDG_CACHE_HOME", "/xdg"),
            ("HOME", "/home/u"),
        ];
        assert_eq!(dir(xdg).as_deref(), Some("/xdg/ptxsmith/nvidia-tools"));
        // A relative XDG_CACHE_HOME is invalid per the XDG spec: ignored.
        let rel = &[("XDG_CACHE_HOME", "rel"), ("HOME", "/home/u")];
        assert_eq!(
            dir(rel).as_deref(),
            Some("/home/u/.cache/ptxsmith/nvidia-tools")
        );
        assert_eq!(dir(&[]), None);
    }

    use super::*;

    const REPORT: &str = "\
ptxas warning : Registers are spilled to local memory in function 'spill', 568 bytes spill stores, 712 bytes spill loads
ptxas info    : 64 bytes gmem, 32 bytes cmem[3], 8 bytes cmem[4]
ptxas info    : Compiling entry function 'caller' for 'sm_80'
ptxas info    : Function properties for caller
    16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 1 barriers, 256 bytes smem, 16 bytes cumulative stack size, 360 bytes cmem[0]
ptxas info    : Compile time = 1.202 ms
ptxas info    : Function properties for helper
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function 'spill' for 'sm_80'
ptxas info    : Function properties for spill
    560 bytes stack frame, 568 bytes spill stores, 712 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 560 bytes cumulative stack size, 360 bytes cmem[0], 4 bytes cmem[2]
ptxas info    : Compile time = 20.449 ms
";

    #[test]
    fn resource_report() {
        let (module, funcs) = parse_resource_report(REPORT);
        assert_eq!(module.global_bytes, 64);
        assert_eq!(module.cmem, vec![(3, 32), (4, 8)]);
        let names: Vec<&str> = funcs.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["caller", "helper", "spill"]);
        let c = &funcs[0];
        assert!(c.is_entry);
        assert_eq!(c.target.as_deref(), Some("sm_80"));
        assert_eq!(
            (c.registers, c.barriers, c.shared_bytes, c.local_bytes),
            (10, 1, 256, 16)
        );
        assert_eq!((c.stack_frame_bytes, c.constant_bytes), (16, 360));
        assert!(!c.spills());
        assert!(c.other.is_empty(), "{:?}", c.other);
        let h = &funcs[1];
        assert!(!h.is_entry);
        assert_eq!(h.registers, 0);
        let s = &funcs[2];
        assert_eq!(
            (
                s.registers,
                s.stack_frame_bytes,
                s.spill_stores_bytes,
                s.spill_loads_bytes
            ),
            (32, 560, 568, 712)
        );
        assert_eq!(s.local_bytes, 560);
        assert_eq!(s.cmem, vec![(0, 360), (2, 4)]);
        assert_eq!(s.constant_bytes, 364);
        assert!(s.spills());
    }

    #[test]
    fn older_lmem_format_and_unknown_parts() {
        let log = "ptxas info    : Compiling entry function 'k' for 'sm_70'\n\
                   ptxas info    : Used 26 registers, 48 bytes lmem, 7 widgets, 336 bytes cmem[0]\n";
        let (_, f) = parse_resource_report(log);
        assert_eq!(
            (f[0].registers, f[0].local_bytes, f[0].constant_bytes),
            (26, 48, 336)
        );
        assert_eq!(f[0].other, vec!["7 widgets".to_string()]);
    }

    #[test]
    fn diagnostics() {
        let log = "ptxas kernel.ptx, line 7; error   : Illegal rounding modifier for instruction 'add'\n\
                   ptxas kernel.ptx, line 8; error   : Unknown modifier '.bar'\n\
                   ptxas warning : For entry loc adjusting per thread register count of 16 to lower bound of 24\n\
                   ptxas info    : 0 bytes gmem\n\
                   ptxas fatal   : Ptx assembly aborted due to errors\n";
        let d = parse_diagnostics(log);
        assert_eq!(d.len(), 4);
        assert_eq!((d[0].severity, d[0].line), (Severity::Error, Some(7)));
        assert_eq!(
            d[0].message,
            "Illegal rounding modifier for instruction 'add'"
        );
        assert_eq!(
            (d[1].line, d[1].message.as_str()),
            (Some(8), "Unknown modifier '.bar'")
        );
        assert_eq!((d[2].severity, d[2].line), (Severity::Warning, None));
        assert_eq!((d[3].severity, d[3].line), (Severity::Fatal, None));
    }

    #[test]
    fn instruction_lines() {
        let i = parse_sass_line("/*01c0*/              @!P1 BRA `(.L_x_2) ;").unwrap();
        assert_eq!(i.address, 0x1c0);
        assert_eq!(i.predicate.as_deref(), Some("!P1"));
        assert_eq!((i.opcode.as_str(), i.base()), ("BRA", "BRA"));
        assert_eq!(i.operands, "`(.L_x_2)");
        let i = parse_sass_line("/*0070*/   BAR.SYNC.DEFER_BLOCKING 0x0 ;").unwrap();
        assert_eq!((i.base(), i.predicate.clone()), ("BAR", None));
        assert!(i.is("BAR") && i.is("BAR.SYNC.DEFER_BLOCKING") && !i.is("BAR.SYNC"));
        let i = parse_sass_line("/*0100*/                   NOP;").unwrap();
        assert_eq!((i.opcode.as_str(), i.operands.as_str()), ("NOP", ""));
        let i = parse_sass_line("/*0010*/  LDS.128 R4, [R2+0x10] ;").unwrap();
        assert_eq!((i.opcode.as_str(), i.base()), ("LDS.128", "LDS"));
        let i = parse_sass_line("/*0200*/   @P0 BRA 0x120 ;").unwrap();
        assert_eq!(i.target, Some(0x120));
        assert!(parse_sass_line("/*0000*/ \t.byte\t0xff, 0xff").is_none());
        assert!(parse_sass_line("MOV R1, R2 ;").is_none());
    }
}
