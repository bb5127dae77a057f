//! ptxas output parsing: the error, warning and fatal diagnostics and the
//! `ptxas -v` resource report (per-function registers, spills, shared,
//! local and constant memory, and the module-wide line).

use std::fmt;

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
}
