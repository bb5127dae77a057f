//! Issue 29 ("layers in one direction"): the simulator sits below the
//! runtime, and the launch vocabulary (`src/exec.rs`) below both. This test
//! reads the source files (like `tests/file_sizes.rs`) and fails if
//!
//! * a file under `src/sim/` names the runtime (`crate::runtime`, or a
//!   `ptxsmith::runtime` path in a doc example), in code or in an
//!   intra-doc link (a link is a dependency of the docs; plain prose may
//!   say "the runtime");
//! * the leaf `src/exec.rs` names the runtime or the simulator.
//!
//! The full import map, with its circles, is `scripts/import-map.sh`.

use std::path::{Path, PathBuf};

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

/// The `(line number, line)` of `text` that name a module in `forbidden`
/// (e.g. `"runtime"`): a path `crate::runtime` / `ptxsmith::runtime` in
/// code, in a doc example, or as an intra-doc link target. Plain comment
/// prose that spells the name without a path is allowed.
fn offending_lines(text: &str, forbidden: &[&str]) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = line.trim_start();
        let is_comment = code.starts_with("//");
        let hit = forbidden.iter().any(|m| {
            let paths = [format!("crate::{m}"), format!("ptxsmith::{m}")];
            paths.iter().any(|p| {
                line.match_indices(p.as_str()).any(|(at, _)| {
                    // a whole segment: `crate::runtime` but not `crate::runtimes`
                    let after = &line[at + p.len()..];
                    let whole = !after.starts_with(|c: char| c.is_alphanumeric() || c == '_');
                    whole && (!is_comment || doc_reference(line, at))
                })
            })
        });
        if hit {
            found.push((i + 1, line.trim().to_string()));
        }
    }
    // Grouped imports, `use crate::{dsl, runtime::Context};`, over lines.
    for (line, stmt) in use_statements(text) {
        let flat: String = stmt.chars().filter(|c| !c.is_whitespace()).collect();
        let grouped = flat.starts_with("crate::{") || flat.starts_with("ptxsmith::{");
        let hit = grouped
            && forbidden.iter().any(|m| {
                [
                    format!("{{{m}::"),
                    format!(",{m}::"),
                    format!("{{{m},"),
                    format!(",{m},"),
                ]
                .iter()
                .chain([format!("{{{m}}}"), format!(",{m}}}")].iter())
                .any(|p| flat.contains(p.as_str()))
            });
        if hit && !found.iter().any(|(n, _)| *n == line) {
            found.push((line, format!("use {flat};")));
        }
    }
    found.sort();
    found
}

/// The `use` declarations of `text` outside comments: `(first line, the
/// path tree)`, the tree possibly spanning lines.
fn use_statements(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        if current.is_none() {
            let t = code.trim_start();
            let t = t
                .strip_prefix("pub ")
                .or(t.strip_prefix("pub(crate) "))
                .unwrap_or(t);
            match t.strip_prefix("use ") {
                Some(r) => {
                    current = Some((i + 1, String::new()));
                    rest = r;
                }
                None => continue,
            }
        }
        if let Some((_, stmt)) = current.as_mut() {
            match rest.split_once(';') {
                Some((head, _)) => {
                    stmt.push_str(head);
                    out.push(current.take().expect("a statement"));
                }
                None => stmt.push_str(rest),
            }
        }
    }
    out
}

/// Whether the path at byte `at` of comment `line` is something the docs
/// resolve: an intra-doc link (`[..](crate::x)`, `` [`crate::x`] ``,
/// `[crate::x]`) or code of a doc example (a `//!`/`///` line that is not
/// prose: it starts with `use` or contains `::` calls; doc examples in this
/// crate name the crate as `ptxsmith::`).
fn doc_reference(line: &str, at: usize) -> bool {
    let before = line[..at].trim_end_matches('`');
    if before.ends_with('(') || before.ends_with('[') {
        return true;
    }
    let body = line
        .trim_start()
        .trim_start_matches("//!")
        .trim_start_matches("///")
        .trim_start();
    body.starts_with("use ") || body.starts_with("let ") || body.starts_with("# ")
}

fn source(root: &Path, path: &Path) -> (String, String) {
    let name = path
        .strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string();
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{name}: {e}"));
    (name, text)
}

fn report(violations: &[(String, usize, String)]) -> String {
    violations
        .iter()
        .map(|(f, n, l)| format!("  {f}:{n}: {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_simulator_does_not_import_the_runtime() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src/sim"), &mut files);
    // Guard against a vacuous pass after a move.
    assert!(
        files.len() > 20 && files.iter().any(|f| f.ends_with("src/sim/backend.rs")),
        "src/sim looks moved: {} files",
        files.len()
    );
    let mut violations = Vec::new();
    for path in &files {
        let (name, text) = source(root, path);
        for (n, line) in offending_lines(&text, &["runtime"]) {
            violations.push((name.clone(), n, line));
        }
    }
    assert!(
        violations.is_empty(),
        "the simulator must not depend on the runtime above it (use crate::exec for the \
         launch vocabulary and the Executor trait):\n{}",
        report(&violations)
    );
}

#[test]
fn the_exec_leaf_imports_neither_the_runtime_nor_the_simulator() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (name, text) = source(root, &root.join("src/exec.rs"));
    assert!(
        text.contains("pub trait Executor"),
        "src/exec.rs no longer holds the Executor trait"
    );
    let violations: Vec<_> = offending_lines(&text, &["runtime", "sim"])
        .into_iter()
        .map(|(n, l)| (name.clone(), n, l))
        .collect();
    assert!(
        violations.is_empty(),
        "src/exec.rs is a leaf under the runtime and the simulator:\n{}",
        report(&violations)
    );
}

#[test]
fn the_checker_sees_imports_links_and_examples_but_not_prose() {
    let flagged = |s: &str| !offending_lines(s, &["runtime"]).is_empty();
    assert!(flagged("use crate::runtime::exec::LaunchConfig;"));
    assert!(flagged(
        "    let c = crate::runtime::LaunchConfig::linear(1, 1);"
    ));
    assert!(flagged("use crate::{dsl, runtime::Context};"));
    assert!(flagged(
        "use crate::{\n    dsl::PtxModule,\n    runtime::{Context, Stream},\n};"
    ));
    assert!(flagged(
        "//! the backend under [`crate::runtime::Context::sim`]"
    ));
    assert!(flagged(
        "/// through the same [`Context`](crate::runtime::Context)."
    ));
    assert!(flagged("//! use ptxsmith::runtime::exec::LaunchConfig;"));
    assert!(!flagged(
        "//! the backend under the runtime's `Context::sim`"
    ));
    assert!(!flagged("use crate::runtimes::X;"));
    assert!(!flagged("use crate::exec::LaunchConfig;"));
}
