//! What a loaded module is made of, and the JIT's checks: the [`Module`]
//! and [`Function`] records a context holds, the `.version`/`.target`
//! header scan and checks (as the driver's JIT makes them, with ptxas'
//! log format), and the parse-failure log. No driver state: the calls
//! that load modules are in `module.rs`.

use std::collections::HashMap;
use std::sync::Arc;

use ptxsmith::Sm;
use ptxsmith::sim::{Program, SimError};

use crate::config::max_ptx_isa;
use crate::error::*;

/// The static shared memory every target allows without opting in, and
/// the default of `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES` plus
/// the static size.
pub const DEFAULT_SMEM: u32 = ptxsmith::target::STATIC_SMEM_LIMIT;

/// A loaded module.
pub struct Module {
    pub program: Arc<Program>,
    /// Function handles made so far, by entry name.
    pub functions: HashMap<String, u64>,
}

/// An entry of a library: its name and each parameter's `(offset, size)`.
pub type LibraryEntry = (String, Vec<(u32, u32)>);

/// A library (`cuLibraryLoadData`): context-independent code, loaded as
/// a module into a context the first time something of it is asked for
/// there (`cuLibraryGetModule`, `cuKernelGetFunction`, a launch of one of
/// its kernels).
pub struct Library {
    /// The PTX text (checked and parsed once at the load).
    pub image: Arc<Vec<u8>>,
    pub req: JitRequest,
    /// Its entries, in PTX order, with each parameter's `(offset, size)`.
    pub entries: Vec<LibraryEntry>,
    /// The module made of it in each context, by context handle.
    pub modules: HashMap<u64, u64>,
    /// Kernel handles made so far, by entry name.
    pub kernels: HashMap<String, u64>,
}

/// A kernel of a loaded module, with what launches and attribute queries
/// need.
pub struct Function {
    pub module: u64,
    pub name: String,
    pub program: Arc<Program>,
    /// `(offset, size)` of each parameter in the parameter buffer.
    pub params: Vec<(u32, u32)>,
    /// Size of the parameter buffer (end of the last parameter).
    pub param_bytes: u32,
    pub static_smem: u32,
    pub local_bytes: u32,
    pub maxntid: Option<(u32, u32, u32)>,
    pub reqntid: Option<(u32, u32, u32)>,
    pub regs: u32,
    /// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`.
    pub max_dyn_smem: u32,
    pub carveout: i32,
    pub ptx_version: i32,
}

impl Function {
    /// The most threads a block of this function may have.
    pub fn max_threads(&self) -> u32 {
        let prod = |d: (u32, u32, u32)| d.0.saturating_mul(d.1).saturating_mul(d.2);
        let mut m = ptxsmith::target::MAX_THREADS_PER_BLOCK;
        if let Some(d) = self.maxntid {
            m = m.min(prod(d));
        }
        if let Some(d) = self.reqntid {
            m = m.min(prod(d));
        }
        m
    }
}

/// What the JIT options asked for (`CUjit_option`).
#[derive(Debug, Default, Clone, Copy)]
pub struct JitRequest {
    /// `CU_JIT_TARGET`: compile for this compute capability (`major*10+minor`).
    pub target: Option<u32>,
}

/// The info and error logs of a load.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct JitLog {
    pub info: String,
    pub error: String,
}

/// `.version` and `.target` of a PTX text, as the JIT reads them first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub version: (u32, u32),
    pub version_line: u32,
    /// The target's number (`90` for `sm_90a`) and suffix.
    pub target: (u32, Option<char>),
    pub target_line: u32,
}

/// Targets a driver knows (PTX ISA 9.x §11.1.2, `.target`).
const KNOWN_TARGETS: [u32; 27] = [
    20, 21, 30, 32, 35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 88, 89, 90, 100, 101,
    103, 110, 120, 121,
];

fn ptxas(line: u32, severity: &str, msg: &str) -> String {
    format!("ptxas application ptx input, line {line}; {severity:<8}: {msg}")
}

/// Read `.version` and `.target` (the JIT's first checks).
pub fn scan_header(text: &str) -> Result<Header, (CUresult, String)> {
    let clean = ptxsmith::sim::parse::strip_comments(text);
    let mut version = None;
    let mut target = None;
    for (i, line) in clean.lines().enumerate() {
        let line_no = i as u32 + 1;
        let mut toks = line
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|t| !t.is_empty());
        match toks.next() {
            Some(".version") if version.is_none() => {
                let v = toks.next().unwrap_or("");
                let parsed = v
                    .split_once('.')
                    .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)));
                let Some(v) = parsed else {
                    return Err((
                        CUDA_ERROR_INVALID_PTX,
                        ptxas(line_no, "fatal", &format!("Malformed .version `{v}`")),
                    ));
                };
                version = Some((v, line_no));
            }
            Some(".target") if target.is_none() => {
                let t = toks
                    .find(|t| t.starts_with("sm_") || t.starts_with("compute_"))
                    .unwrap_or("");
                let body = t.trim_start_matches("sm_").trim_start_matches("compute_");
                let (digits, suffix) = match body.strip_suffix('a') {
                    Some(d) => (d, Some('a')),
                    None => match body.strip_suffix('f') {
                        Some(d) => (d, Some('f')),
                        None => (body, None),
                    },
                };
                let n: Option<u32> = digits.parse().ok().filter(|n| KNOWN_TARGETS.contains(n));
                let Some(n) = n else {
                    return Err((
                        CUDA_ERROR_INVALID_PTX,
                        ptxas(line_no, "fatal", &format!("Unknown target `{t}`")),
                    ));
                };
                target = Some(((n, suffix), line_no));
            }
            _ => {}
        }
    }
    let Some((version, version_line)) = version else {
        return Err((
            CUDA_ERROR_INVALID_PTX,
            ptxas(1, "fatal", "Missing .version directive"),
        ));
    };
    let Some((target, target_line)) = target else {
        return Err((
            CUDA_ERROR_INVALID_PTX,
            ptxas(version_line, "fatal", "Missing .target directive"),
        ));
    };
    Ok(Header {
        version,
        version_line,
        target,
        target_line,
    })
}

/// Whether PTX for `target` runs on a device of compute capability `cc`
/// (`major*10+minor`): ptxsmith's one rule, [`ptxsmith::Sm::target_runs_on`]
/// (a plain target on every device at least as new, an `a` target on
/// exactly its architecture, an `f` target on its family from its own on;
/// PTX ISA §11.1.2), which the simulator's `Program::runs_on` applies too.
/// The JIT applies it to any `.target` a driver knows (`KNOWN_TARGETS`),
/// not only to the targets of ptxsmith's table.
pub fn target_runs_on(target: (u32, Option<char>), cc: u32) -> bool {
    ptxsmith::Sm::target_runs_on(target, cc)
}

/// The checks the JIT makes before compiling: driver knows the `.version`,
/// the `.version` knows the `.target`, the device (or `CU_JIT_TARGET`) runs
/// the `.target`.
pub fn check_header(
    h: &Header,
    driver: i32,
    cc: u32,
    req: JitRequest,
) -> Result<(), (CUresult, String)> {
    let max = max_ptx_isa(driver);
    if h.version > max {
        return Err((
            CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
            ptxas(
                h.version_line,
                "fatal",
                &format!(
                    "Unsupported .version {}.{}; current version is '{}.{}' (driver {}.{})",
                    h.version.0,
                    h.version.1,
                    max.0,
                    max.1,
                    driver / 1000,
                    driver % 1000 / 10
                ),
            ),
        ));
    }
    let name = format!(
        "sm_{}{}",
        h.target.0,
        h.target.1.map_or(String::new(), String::from)
    );
    if let Ok(sm) = Sm::parse(&name)
        && h.target.1 != Some('f')
    {
        let need = sm.min_ptx();
        if h.version < (u32::from(need.major), u32::from(need.minor)) {
            return Err((
                CUDA_ERROR_INVALID_PTX,
                ptxas(
                    h.target_line,
                    "fatal",
                    &format!(
                        "SM version specified by .target ({name}) requires PTX ISA .version {need} or later, the module has {}.{}",
                        h.version.0, h.version.1
                    ),
                ),
            ));
        }
    }
    let run_cc = req.target.unwrap_or(cc);
    if !target_runs_on(h.target, run_cc) {
        return Err((
            CUDA_ERROR_INVALID_PTX,
            ptxas(
                h.target_line,
                "fatal",
                &format!(
                    "SM version specified by .target ({name}) is higher than default SM version assumed (sm_{run_cc}), or not compatible with it"
                ),
            ),
        ));
    }
    if run_cc != cc {
        return Err((
            oxicuda_driver::ffi::CUDA_ERROR_NO_BINARY_FOR_GPU,
            format!("ptxsmith-emu: CU_JIT_TARGET sm_{run_cc} is not the device's sm_{cc}"),
        ));
    }
    Ok(())
}

/// The JIT log of a simulator parse failure.
pub fn parse_failure(e: &SimError) -> String {
    match e {
        SimError::Parse {
            line,
            text,
            message,
        } => ptxas(*line, "error", &format!("{message} in `{}`", text.trim())),
        SimError::Unsupported {
            line,
            instr,
            reason,
        } => ptxas(
            *line,
            "error",
            &format!(
                "`{}`: {reason} (ptxsmith-emu: refused by the simulator, which runs only what it implements exactly)",
                instr.trim()
            ),
        ),
        other => format!("ptxas fatal   : {other}"),
    }
}

/// The JIT's checks of a module image, in the driver's order, for a device
/// of compute capability `cc` (e.g. 90) and a driver of version `driver`:
/// a cubin or fatbin is `CUDA_ERROR_NOT_SUPPORTED` (the simulator runs PTX
/// text only), text that is not UTF-8 `CUDA_ERROR_INVALID_PTX`, then the
/// header checks ([`check_header`]), then the parse (`INVALID_PTX` with
/// ptxas' log line). Each error comes with the text for the JIT log.
pub fn jit_image(
    image: &[u8],
    driver: i32,
    cc: u32,
    req: JitRequest,
) -> Result<Program, (CUresult, String)> {
    if is_binary(image) {
        return Err((
            CUDA_ERROR_NOT_SUPPORTED,
            "ptxsmith-emu: cubin and fatbin images cannot run on the simulator; load PTX text"
                .into(),
        ));
    }
    let Ok(text) = std::str::from_utf8(image) else {
        return Err((
            CUDA_ERROR_INVALID_PTX,
            "ptxas fatal   : the PTX text is not UTF-8".into(),
        ));
    };
    check_header(&scan_header(text)?, driver, cc, req)?;
    Program::parse(text).map_err(|e| (CUDA_ERROR_INVALID_PTX, parse_failure(&e)))
}

/// The non-NUL prefix of a module image is a cubin or fatbin.
pub fn is_binary(image: &[u8]) -> bool {
    image.starts_with(b"\x7fELF")
        || image.starts_with(&0xBA55_ED50u32.to_le_bytes())
        || image.starts_with(&0x4662_43B1u32.to_le_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_read_past_comments() {
        let h = scan_header("// .version 9.9\n/* .target sm_120\n */\n.version 7.8\n.target sm_90a, texmode_independent\n").unwrap();
        assert_eq!(h.version, (7, 8));
        assert_eq!(h.version_line, 4);
        assert_eq!(h.target, (90, Some('a')));
        assert_eq!(h.target_line, 5);
        assert_eq!(
            scan_header(".version 7.0\n").unwrap_err().0,
            CUDA_ERROR_INVALID_PTX
        );
        assert_eq!(
            scan_header(".version 7.0\n.target sm_42\n").unwrap_err().0,
            CUDA_ERROR_INVALID_PTX
        );
        assert_eq!(
            scan_header(".target sm_80\n").unwrap_err().0,
            CUDA_ERROR_INVALID_PTX
        );
    }

    #[test]
    fn targets_run_on_devices_as_the_isa_says() {
        assert!(target_runs_on((80, None), 90));
        assert!(!target_runs_on((90, None), 80));
        assert!(target_runs_on((100, Some('a')), 100));
        assert!(!target_runs_on((100, Some('a')), 103));
        assert!(target_runs_on((100, Some('f')), 103));
        assert!(!target_runs_on((100, Some('f')), 120));
    }

    #[test]
    fn header_checks_name_the_drivers_codes() {
        let h = |v: (u32, u32), t: u32| Header {
            version: v,
            version_line: 1,
            target: (t, None),
            target_line: 2,
        };
        let none = JitRequest::default();
        assert!(check_header(&h((7, 8), 90), 12090, 90, none).is_ok());
        let (code, log) = check_header(&h((8, 8), 80), 12040, 90, none).unwrap_err();
        assert_eq!(code, CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
        assert!(log.contains("current version is '8.4'"), "{log}");
        assert_eq!(
            check_header(&h((7, 8), 90), 12090, 80, none).unwrap_err().0,
            CUDA_ERROR_INVALID_PTX
        );
        assert_eq!(
            check_header(&h((7, 0), 90), 12090, 90, none).unwrap_err().0,
            CUDA_ERROR_INVALID_PTX
        );
        let other = JitRequest { target: Some(80) };
        assert_eq!(
            check_header(&h((7, 0), 80), 12090, 90, other)
                .unwrap_err()
                .0,
            oxicuda_driver::ffi::CUDA_ERROR_NO_BINARY_FOR_GPU
        );
    }
}
