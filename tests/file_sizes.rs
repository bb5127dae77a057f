//! Issue 20 ("layout by concern"), then the whole crate: no Rust source
//! file under `src` may grow past 1,000 lines. A file that does is split by
//! responsibility (see `src/dsl/builder/`, `src/sim/parse/`,
//! `src/kernels/score/ptx/`, `src/nvtools/`), not exempted here. The test
//! names every offending file with its count.

use std::path::{Path, PathBuf};

/// The most lines a file may have.
const MAX_LINES: usize = 1_000;

/// The directories the rule covers, relative to the crate root.
const DIRS: [&str; 1] = ["src"];

/// Trees the walk must reach (guards against a vacuous pass after a move).
const MUST_SEE: [&str; 5] = [
    "src/sim",
    "src/dsl",
    "src/kernels",
    "src/runtime",
    "src/report",
];

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// The `(name, lines)` of every file over [`MAX_LINES`], in name order.
fn oversized<'a>(files: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<(String, usize)> {
    let mut over: Vec<(String, usize)> = files
        .into_iter()
        .map(|(name, text)| (name.to_string(), text.lines().count()))
        .filter(|&(_, n)| n > MAX_LINES)
        .collect();
    over.sort();
    over
}

#[test]
fn no_source_file_is_over_1000_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in DIRS {
        rust_files(&root.join(dir), &mut files);
    }
    let sources: Vec<(String, String)> = files
        .iter()
        .map(|p| {
            let name = p.strip_prefix(root).unwrap_or(p).display().to_string();
            let text =
                std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (name, text)
        })
        .collect();
    for dir in MUST_SEE {
        let n = sources.iter().filter(|(s, _)| s.starts_with(dir)).count();
        assert!(n >= 5, "only {n} .rs files found under {dir}");
    }
    let over = oversized(sources.iter().map(|(n, t)| (n.as_str(), t.as_str())));
    let report: String = over
        .iter()
        .map(|(name, n)| format!("  {name}: {n} lines\n"))
        .collect();
    assert!(
        over.is_empty(),
        "files over {MAX_LINES} lines (split them by responsibility):\n{report}"
    );
}

#[test]
fn the_check_flags_a_file_over_the_limit_and_only_that_one() {
    let at_limit = "x\n".repeat(MAX_LINES);
    let over_limit = "x\n".repeat(MAX_LINES + 1);
    let files = [
        ("src/dsl/ok.rs", at_limit.as_str()),
        ("src/sim/big.rs", over_limit.as_str()),
        ("src/sim/empty.rs", ""),
    ];
    assert_eq!(
        oversized(files),
        vec![("src/sim/big.rs".to_string(), MAX_LINES + 1)]
    );
}
