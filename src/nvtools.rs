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
//! **nvdisasm 13.5 takes about half a second to start**, whatever it reads
//! (0.55 s for a 2 KiB cubin on the 2-core CI machine): to disassemble many
//! cubins, [`NvTools::disassemble_many`] runs it once per target.
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

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::target::Sm;

mod batch;
mod report;
mod run;
mod sass;

pub use report::{
    Diagnostic, ModuleUsage, ResourceUsage, Severity, parse_diagnostics, parse_resource_report,
};
pub use sass::{Sass, SassFunction, SassInstr, parse_sass, parse_sass_line, replace_labels};

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
    /// Where earlier runs' results are kept ([`with_cache`](Self::with_cache)).
    cache: Option<PathBuf>,
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
            cache: None,
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

    /// These tools with an on-disk memo in `dir` (created when first
    /// written): a run of ptxas or nvdisasm identical to an earlier one
    /// (same tool binary, size and modification time, same arguments, same
    /// input bytes) returns the stored result instead of running again.
    /// For test suites that assemble the same modules in several binaries
    /// (`tests/kernels_ptxas.rs` and `tests/tuning_report.rs` share
    /// `target/tmp/nvtools-cache`). A stored entry is compared with the
    /// whole key, so a stale or colliding one is a miss; an entry that
    /// cannot be written is skipped.
    pub fn with_cache(mut self, dir: impl Into<PathBuf>) -> NvTools {
        self.cache = Some(dir.into());
        self
    }

    /// The memo folder, if [`with_cache`](Self::with_cache) set one.
    pub fn cache_dir(&self) -> Option<&Path> {
        self.cache.as_deref()
    }

    /// Assemble `ptx` for `sm` with `ptxas -arch=<sm> -v -warn-spills`.
    /// The input file is called `kernel.ptx` in ptxas's messages.
    pub fn assemble(&self, ptx: &str, sm: Sm) -> Result<Assembly, ToolError> {
        self.assemble_with(ptx, sm, &[])
    }

    /// [`assemble`](Self::assemble) with extra ptxas options (for example
    /// `-O0` or `-maxrregcount=32`).
    pub fn assemble_with(&self, ptx: &str, sm: Sm, extra: &[&str]) -> Result<Assembly, ToolError> {
        let mut args: Vec<OsString> = vec![
            format!("-arch={}", sm.name()).into(),
            "-v".into(),
            "-warn-spills".into(),
        ];
        args.extend(extra.iter().map(OsString::from));
        args.extend(["-o".into(), "kernel.cubin".into(), "kernel.ptx".into()]);
        let out = run::run(
            &self.ptxas,
            &args,
            &[("kernel.ptx", ptx.as_bytes())],
            Some("kernel.cubin"),
            self.cache.as_deref(),
        )?;
        let mut log = out.stdout;
        log.push_str(&out.stderr);
        let diagnostics = parse_diagnostics(&log);
        let Some(cubin) = out.output.filter(|_| out.success) else {
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
                status: out.status,
                log,
                diagnostics,
                excerpt,
            });
        };
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

    /// Disassemble a cubin with `nvdisasm -c` (code sections only). For
    /// many cubins, [`disassemble_many`](Self::disassemble_many) is one
    /// run per target instead of one per cubin.
    pub fn disassemble(&self, asm: &Assembly) -> Result<Sass, ToolError> {
        let args = [OsString::from("-c"), OsString::from("kernel.cubin")];
        let out = run::run(
            &self.nvdisasm,
            &args,
            &[("kernel.cubin", &asm.cubin)],
            None,
            self.cache.as_deref(),
        )?;
        let (text, warnings) = (out.stdout, out.stderr);
        if !out.success {
            return Err(ToolError::Nvdisasm {
                sm: asm.sm,
                status: out.status,
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
}
