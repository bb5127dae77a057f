//! The typed DSL (`src/dsl/`) is the only place in the crate that spells
//! PTX. This test walks `src/` and fails if a string literal anywhere else
//! contains PTX text: an instruction mnemonic with a modifier (`add.rn`,
//! `ld.global`), a branch or return (`bra L`, `ret;`), a predicate guard
//! (`@%p1`), a PTX register (`%r1`, `%tid.x`), a directive (`.version`,
//! `.entry`, `.reg`, `.shared`, ...) or a type or modifier token (`.f32`,
//! `.rn`, `.sync`) that could be glued into an instruction.
//!
//! Only string literals are checked (plain, raw, byte; including the format
//! strings of `format!`, `write!`, `concat!`): comments, `///` and `//!`
//! doc comments are prose and may mention PTX freely.
//!
//! Exempt:
//! * `src/dsl/` (and `src/dsl.rs`): the PTX printer;
//! * `src/sim/` (and `src/sim.rs`): the CPU simulator's PTX parser must
//!   name opcodes and directives;
//! * in `src/nvtools.rs`, which parses ptxas/nvdisasm output and must not
//!   contain PTX instructions either, only the directive names `.version`
//!   and `.target` (its PTX header readers `ptx_version_of`/`ptx_target_of`).
//! * the exact literals in [`ALLOWED`]: names of instruction families in
//!   user-facing messages.

use std::path::{Path, PathBuf};

/// `(file relative to the crate root, exact literal)` pairs that may
/// contain PTX-looking text, with the reason.
const ALLOWED: &[(&str, &str)] = &[
    // `impl Display for Feature`: what an UnsupportedFeature error names.
    ("src/target.rs", "shfl.sync/vote.sync"),
    ("src/target.rs", "redux.sync"),
    ("src/target.rs", "cp.async"),
];

/// Patterns a file may contain (per file) despite the rule.
const FILE_EXCEPTIONS: &[(&str, &[&str])] = &[
    ("src/nvtools.rs", &[".version", ".target"]),
    // The roofline's sample memo compares two SMs' modules without the
    // lines that name their target.
    ("src/report/roofline/fit.rs", &[".version", ".target"]),
];

/// PTX instruction mnemonics; flagged when followed by `.modifier`.
const MNEMONICS: &[&str] = &[
    "abs",
    "activemask",
    "add",
    "addc",
    "and",
    "atom",
    "bar",
    "barrier",
    "bfe",
    "bfi",
    "bfind",
    "bra",
    "brev",
    "brx",
    "call",
    "clz",
    "cnot",
    "copysign",
    "cos",
    "cp",
    "cvt",
    "cvta",
    "discard",
    "div",
    "dp2a",
    "dp4a",
    "elect",
    "ex2",
    "fence",
    "fma",
    "fns",
    "isspacep",
    "ld",
    "ldmatrix",
    "ldu",
    "lg2",
    "lop3",
    "mad",
    "madc",
    "match",
    "max",
    "mbarrier",
    "membar",
    "min",
    "mma",
    "mov",
    "mul",
    "mul24",
    "nanosleep",
    "neg",
    "not",
    "or",
    "popc",
    "prefetch",
    "prmt",
    "rcp",
    "red",
    "redux",
    "rem",
    "ret",
    "rsqrt",
    "sad",
    "selp",
    "set",
    "setp",
    "shf",
    "shfl",
    "shl",
    "shr",
    "sin",
    "slct",
    "sqrt",
    "st",
    "stmatrix",
    "sub",
    "subc",
    "suld",
    "sust",
    "tanh",
    "testp",
    "tex",
    "tld4",
    "trap",
    "vote",
    "wgmma",
    "wmma",
    "xor",
];

/// Directive, state-space, type and modifier tokens, flagged as whole
/// tokens (`.reg` but not `.register` or `x.reg`).
const TOKENS: &[&str] = &[
    // directives
    ".version",
    ".target",
    ".address_size",
    ".entry",
    ".func",
    ".visible",
    ".extern",
    ".weak",
    ".reg",
    ".param",
    ".shared",
    ".global",
    ".local",
    ".const",
    ".tex",
    ".maxnreg",
    ".maxntid",
    ".reqntid",
    ".minnctapersm",
    ".pragma",
    ".loc",
    ".file",
    // types
    ".pred",
    ".b8",
    ".b16",
    ".b32",
    ".b64",
    ".b128",
    ".u8",
    ".u16",
    ".u32",
    ".u64",
    ".s8",
    ".s16",
    ".s32",
    ".s64",
    ".f16",
    ".f16x2",
    ".bf16",
    ".bf16x2",
    ".tf32",
    ".f32",
    ".f64",
    ".e4m3x2",
    ".e5m2x2",
    ".v2",
    ".v4",
    // modifiers
    ".rn",
    ".rz",
    ".rm",
    ".rp",
    ".rni",
    ".rzi",
    ".rmi",
    ".rpi",
    ".lo",
    ".hi",
    ".wide",
    ".ftz",
    ".sat",
    ".satfinite",
    ".approx",
    ".full",
    ".sync",
    ".aligned",
    ".uni",
    ".volatile",
    ".relaxed",
    ".acquire",
    ".release",
    ".acq_rel",
    ".cta",
    ".gpu",
    ".sys",
    ".bfly",
    ".idx",
    ".ca",
    ".cg",
    ".cs",
    ".lu",
    ".cv",
    ".nc",
];

/// PTX register prefixes; flagged when followed by a digit, `<`, `{` or
/// (for special registers) `.`.
const REGISTERS: &[&str] = &[
    "%rd", "%r", "%fd", "%f", "%hh", "%h", "%p", "%b", "%tid", "%ntid", "%ctaid", "%nctaid",
    "%laneid", "%warpid", "%clock", "%smid",
];

/// A string literal: the line it starts on and its (lightly unescaped)
/// contents.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Literal {
    line: usize,
    text: String,
}

/// A PTX-looking token found in a literal.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Finding {
    line: usize,
    pattern: String,
    literal: String,
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The string literals of Rust source `src`, skipping comments, char
/// literals and lifetimes.
fn string_literals(src: &str) -> Vec<Literal> {
    let c: Vec<char> = src.chars().collect();
    let n = c.len();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1;
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    while i < n {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < n && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < n {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if c[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if ch == '\'' {
            // char literal ('x', '\n', '\'', '"') or lifetime / label ('a)
            if at(i + 1) == '\\' {
                i += 2;
                while i < n && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1;
            }
        } else if (ch == 'r' || ch == 'b' || ch == 'c') && (i == 0 || !is_ident(c[i - 1])) && {
            // raw / byte / C string prefixes: r" r#" b" br" br#" c" cr"
            let mut j = i + 1;
            if ch != 'r' && at(j) == 'r' {
                j += 1;
            }
            let raw = at(j - 1) == 'r';
            let mut k = j;
            while raw && at(k) == '#' {
                k += 1;
            }
            at(k) == '"' && (raw || k == i + 1)
        } {
            let mut j = i + 1;
            if ch != 'r' && at(j) == 'r' {
                j += 1;
            }
            let raw = at(j - 1) == 'r';
            if raw {
                let mut hashes = 0;
                while at(j) == '#' {
                    hashes += 1;
                    j += 1;
                }
                j += 1; // opening quote
                let start_line = line;
                let mut text = String::new();
                while j < n {
                    if c[j] == '"' && (1..=hashes).all(|h| at(j + h) == '#') {
                        j += 1 + hashes;
                        break;
                    }
                    if c[j] == '\n' {
                        line += 1;
                    }
                    text.push(c[j]);
                    j += 1;
                }
                out.push(Literal {
                    line: start_line,
                    text,
                });
                i = j;
            } else {
                i = j; // at the quote; the plain-string branch reads it
            }
        } else if ch == '"' {
            let start_line = line;
            let mut text = String::new();
            let mut j = i + 1;
            while j < n && c[j] != '"' {
                if c[j] == '\\' {
                    let e = at(j + 1);
                    match e {
                        'n' => text.push('\n'),
                        't' => text.push('\t'),
                        'r' => text.push('\r'),
                        '0' => text.push('\0'),
                        '\\' | '"' | '\'' => text.push(e),
                        '\n' => {
                            // line continuation: skip the newline and indent
                            line += 1;
                            j += 2;
                            while j < n && c[j].is_whitespace() {
                                if c[j] == '\n' {
                                    line += 1;
                                }
                                j += 1;
                            }
                            continue;
                        }
                        'x' => {
                            let hex: String = c[j + 2..(j + 4).min(n)].iter().collect();
                            if let Ok(v) = u8::from_str_radix(&hex, 16) {
                                text.push(v as char);
                                j += 4;
                                continue;
                            }
                            text.push('\\');
                            text.push(e);
                        }
                        _ => {
                            text.push('\\');
                            text.push(e);
                        }
                    }
                    j += 2;
                } else {
                    if c[j] == '\n' {
                        line += 1;
                    }
                    text.push(c[j]);
                    j += 1;
                }
            }
            out.push(Literal {
                line: start_line,
                text,
            });
            i = j + 1;
        } else {
            i += 1;
        }
    }
    out
}

/// The PTX patterns found in one literal's text.
fn ptx_patterns(text: &str) -> Vec<String> {
    let c: Vec<char> = text.chars().collect();
    let n = c.len();
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    let starts = |i: usize, s: &str| s.chars().enumerate().all(|(k, x)| at(i + k) == x);
    let mut found = Vec::new();
    for i in 0..n {
        let prev = if i == 0 { ' ' } else { c[i - 1] };
        // mnemonic.modifier (add.rn, ld.global, shfl.sync, mov.u32) and
        // "bra L", "ret;", "exit;"
        if !is_ident(prev) && prev != '.' && prev != '%' {
            for m in MNEMONICS {
                if !starts(i, m) {
                    continue;
                }
                let j = i + m.chars().count();
                let next = at(j);
                let after = at(j + 1);
                if next == '.' && (after.is_ascii_lowercase() || after.is_ascii_digit()) {
                    let end = (j + 1..=n)
                        .find(|&k| !(is_ident(at(k)) || at(k) == '.'))
                        .unwrap_or(n);
                    found.push(c[i..end].iter().collect());
                } else if *m == "bra" && next == ' ' && (is_ident(after) || after == '$') {
                    found.push("bra ".to_string());
                } else if *m == "ret" && next == ';' {
                    found.push("ret;".to_string());
                }
            }
            if starts(i, "exit;") {
                found.push("exit;".to_string());
            }
        }
        // predicate guards @%p1, @!%p1
        if c[i] == '@' && (starts(i + 1, "%p") || starts(i + 1, "!%p")) {
            found.push("@%p".to_string());
        }
        // registers %r1, %rd<4>, %f{i}, %tid.x
        if c[i] == '%' && !is_ident(prev) {
            for r in REGISTERS {
                if starts(i, r) {
                    let next = at(i + r.len());
                    let special = r.len() > 3;
                    if next.is_ascii_digit()
                        || next == '<'
                        || next == '{'
                        || (special && (next == '.' || !is_ident(next)))
                    {
                        found.push(r.to_string());
                        break;
                    }
                }
            }
        }
        // directive / type / modifier tokens
        if c[i] == '.' && !is_ident(prev) && prev != '.' {
            for t in TOKENS {
                if starts(i, t) && !is_ident(at(i + t.len())) {
                    found.push(t.to_string());
                }
            }
        }
    }
    found
}

/// Findings in one Rust source file (`rel` is its path relative to the
/// crate root, for the exceptions).
fn scan_source(rel: &str, src: &str) -> Vec<Finding> {
    let excepted: &[&str] = FILE_EXCEPTIONS
        .iter()
        .find(|(f, _)| *f == rel)
        .map_or(&[], |(_, p)| p);
    let mut out = Vec::new();
    for lit in string_literals(src) {
        if ALLOWED.contains(&(rel, lit.text.as_str())) {
            continue;
        }
        for pattern in ptx_patterns(&lit.text) {
            if !excepted.contains(&pattern.as_str()) {
                out.push(Finding {
                    line: lit.line,
                    pattern,
                    literal: lit.text.clone(),
                });
            }
        }
    }
    out
}

fn exempt(rel: &str) -> bool {
    ["src/dsl/", "src/sim/"].iter().any(|d| rel.starts_with(d))
        || rel == "src/dsl.rs"
        || rel == "src/sim.rs"
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_ptx_text_outside_the_dsl() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    assert!(!files.is_empty());
    let mut report = String::new();
    let mut scanned = 0;
    for path in files {
        let rel = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if exempt(&rel) {
            continue;
        }
        scanned += 1;
        let src = std::fs::read_to_string(&path).unwrap();
        for f in scan_source(&rel, &src) {
            let lit: String = f.literal.chars().take(100).collect();
            report.push_str(&format!(
                "{rel}:{}: `{}` in string literal {lit:?}\n",
                f.line, f.pattern
            ));
        }
    }
    assert!(scanned > 0);
    assert!(
        report.is_empty(),
        "PTX text outside src/dsl (emit PTX only through the DSL printer):\n{report}"
    );
}

#[test]
fn flags_planted_ptx() {
    let planted = r##"
        fn emit(d: &str, a: &str, b: &str) -> String {
            format!("add.rn.f32 {d}, {a}, {b};")
        }
        const HEADER: &str = ".version 7.8\n.target sm_90\n";
        fn more(out: &mut String) {
            out.push_str(r#"ld.global.nc.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];"#);
            out.push_str("@%p1 bra LOOP;");
            out.push_str(concat!("mul", ".lo", ".s32"));
            let _ = b"\tbar.sync 0;";
            write!(out, "\tshfl.sync.bfly.b32 {}|{}, {}, {}, 31, -1;", 1, 2, 3, 4);
            let _ = "    .reg .b32 %r<8>;";
            let _ = "setp.lt.u32";
            let _ = "    ret;";
            let _ = "mov.u32 %r{}, %tid.x;";
            let _ = "\
                cvt.rn.bf16.f32 x, y;";
        }
    "##;
    let found = scan_source("src/kernels/planted.rs", planted);
    let pats: Vec<&str> = found.iter().map(|f| f.pattern.as_str()).collect();
    for want in [
        "add.rn.f32",
        ".version",
        ".target",
        "ld.global.nc.v4.f32",
        "%rd",
        "bra ",
        "@%p",
        ".lo",
        ".s32",
        "bar.sync",
        "shfl.sync.bfly.b32",
        ".reg",
        ".b32",
        "%r",
        "setp.lt.u32",
        "ret;",
        "mov.u32",
        "%tid",
        "cvt.rn.bf16.f32",
    ] {
        assert!(pats.contains(&want), "missed {want:?}; found {pats:?}");
    }
    let line_of = |p: &str| found.iter().find(|f| f.pattern == p).unwrap().line;
    assert_eq!(line_of("add.rn.f32"), 3);
    assert_eq!(line_of(".version"), 5);
    assert_eq!(
        line_of("cvt.rn.bf16.f32"),
        16,
        "the line the literal starts on"
    );
}

#[test]
fn prose_and_comments_are_not_flagged() {
    let prose = r##"
        //! Emits `add.rn.f32` and `ld.global` through the DSL; the module's
        //! `.version` is the lowest the target needs.
        /// Uses `shfl.sync.bfly` and `bar.sync 0;` (see `.shared` memory).
        // ret; bra LOOP; %r1 .reg .f32
        /* nested /* add.rn */ mul.lo.s32 */
        fn f<'a>(x: &'a str) -> String {
            let q = '"';
            let e = '\'';
            let _ = "the kernel needs PTX ISA 8.1 on sm_89; got 7.8";
            let _ = "kernel `{kernel}` takes {} parameters, got {} arguments";
            let _ = "min/max.NaN";
            let _ = "50% done, or. more, set.";
            let _ = "file.rs: register count 255, shared memory 48 KiB";
            let _ = "x.reg and y.f32 are fields, not tokens";
            let _ = "at least 3 registers; branch to the loop; st. Louis";
            format!("{q}{e}{x}")
        }
    "##;
    let found = scan_source("src/kernels/prose.rs", prose);
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn allowed_literals_and_file_exceptions() {
    let src = r#"fn d() -> &'static str { "redux.sync" }"#;
    assert!(scan_source("src/target.rs", src).is_empty());
    assert_eq!(scan_source("src/kernels/x.rs", src).len(), 1);
    let src = r#"fn v(p: &str) { directive_arg(p, ".version"); directive_arg(p, ".target"); }"#;
    assert!(scan_source("src/nvtools.rs", src).is_empty());
    assert_eq!(scan_source("src/runtime/x.rs", src).len(), 2);
    // nvtools may not hold instructions
    let src = r#"const K: &str = "fma.rn.f32 %f1, %f2, %f3, %f4;";"#;
    assert!(!scan_source("src/nvtools.rs", src).is_empty());
    assert!(exempt("src/dsl/printer.rs") && exempt("src/sim/parse.rs"));
    assert!(!exempt("src/nvtools.rs") && !exempt("src/kernels/gemm.rs"));
}
