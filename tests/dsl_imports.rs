//! Issue 29: no import circle inside `src/dsl` (with the parameter ABI
//! leaf `src/abi.rs`), and `src/abi.rs` a leaf.
//!
//! The graph has one node per file and an edge per `use` of a path into
//! the DSL (`crate::dsl::…`, `crate::abi…`, `super::…`, `self::…`, or a
//! child module's name), `pub use` re-exports included, `#[cfg(test)]`
//! code and `mod x;` declarations not. A path resolves to the file of its
//! longest module prefix, so an item of a `mod.rs` (`crate::dsl::PtxModule`
//! before it moved to `module.rs`) is an edge to that `mod.rs`. The test
//! names every circle it finds with its files.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// `dsl/builder/core.rs` → `["dsl", "builder", "core"]`; a `mod.rs` is its
/// directory's module.
fn module_path(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if parts.last().map(String::as_str) == Some("mod") {
        parts.pop();
    }
    parts
}

fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, root, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(
                path.strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/"),
            );
        }
    }
}

/// The paths of the `use` declarations of `text` outside `#[cfg(test)]`
/// (one brace level expanded: `a::{b, c}` → `a::b`, `a::c`).
fn use_paths(text: &str) -> Vec<Vec<String>> {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("use ") {
        let before = &rest[..i];
        let line_start = before.rfind('\n').map_or(0, |k| k + 1);
        let prefix = before[line_start..].trim();
        let at_decl = prefix.is_empty() || prefix.starts_with("pub");
        let after = &rest[i + 4..];
        let Some(end) = after.find(';') else { break };
        if at_decl && !before[line_start..].trim_start().starts_with("//") {
            let body: String = after[..end]
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect();
            match body.split_once("::{") {
                Some((head, items)) => {
                    let items = items.strip_suffix('}').unwrap_or(items);
                    let mut depth = 0;
                    let mut cur = String::new();
                    for c in items.chars().chain([',']) {
                        match c {
                            '{' => depth += 1,
                            '}' => depth -= 1,
                            ',' if depth == 0 => {
                                let item = std::mem::take(&mut cur);
                                if !item.is_empty() {
                                    out.push(format!("{head}::{item}"));
                                }
                                continue;
                            }
                            _ => {}
                        }
                        cur.push(c);
                    }
                }
                None => out.push(body),
            }
            rest = &after[end..];
        } else {
            rest = after;
        }
    }
    out.into_iter()
        .map(|p| p.split("::").map(String::from).collect())
        .collect()
}

#[test]
fn no_import_circle_in_src_dsl_and_abi_is_a_leaf() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src.join("dsl"), &src, &mut files);
    files.push("abi.rs".to_string());
    assert!(
        files.len() > 10 && files.iter().any(|f| f == "dsl/builder/core.rs"),
        "{files:?}"
    );
    let modules: BTreeMap<Vec<String>, String> =
        files.iter().map(|f| (module_path(f), f.clone())).collect();
    let resolve = |path: &[String]| {
        (1..=path.len())
            .rev()
            .find_map(|k| modules.get(&path[..k]).cloned())
    };
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let text = std::fs::read_to_string(src.join(f)).unwrap();
        let me = module_path(f);
        let set = edges.entry(f.clone()).or_default();
        for p in use_paths(&text) {
            let path: Vec<String> = match p[0].as_str() {
                "crate" => p[1..].to_vec(),
                "super" => [&me[..me.len() - 1], &p[1..]].concat(),
                "self" => [&me[..], &p[1..]].concat(),
                _ if modules.contains_key(&[&me[..], &p[..1]].concat()) => {
                    [&me[..], &p[..]].concat()
                }
                _ => continue,
            };
            if !matches!(path.first().map(String::as_str), Some("dsl" | "abi")) {
                continue;
            }
            if let Some(t) = resolve(&path).filter(|t| t != f) {
                set.insert(t);
            }
        }
    }
    assert!(
        edges["abi.rs"].is_empty(),
        "abi.rs must be a leaf: {:?}",
        edges["abi.rs"]
    );
    assert!(
        edges["dsl/types.rs"].contains("abi.rs"),
        "the scan must see types.rs's `use crate::abi::ScalarType`: {edges:?}"
    );

    // A circle is a file that reaches itself.
    let mut circles = BTreeSet::new();
    for start in &files {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&String> = edges[start].iter().collect();
        while let Some(n) = stack.pop() {
            if n == start {
                let members: BTreeSet<&String> = files
                    .iter()
                    .filter(|g| reaches(&edges, start, g) && reaches(&edges, g, start))
                    .collect();
                circles.insert(format!("{members:?}"));
                break;
            }
            if seen.insert(n) {
                stack.extend(edges[n].iter());
            }
        }
    }
    assert!(
        circles.is_empty(),
        "import circles in src/dsl: {circles:#?}\nedges: {edges:#?}"
    );
}

fn reaches(edges: &BTreeMap<String, BTreeSet<String>>, from: &str, to: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack = vec![from.to_string()];
    while let Some(n) = stack.pop() {
        for m in &edges[&n] {
            if m == to {
                return true;
            }
            if seen.insert(m.clone()) {
                stack.push(m.clone());
            }
        }
    }
    false
}
