//! The module graph of `cuda-emu/src` has no circle (issue 29): every
//! `crate::<module>` path a file names (in a `use` or inline) is an edge;
//! `exports/` counts as one module, on top. The graph is printed with
//! `cargo test -p ptxsmith-cuda-emu --test layering -- --nocapture`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The module a source file belongs to (`exports/memory.rs` → `exports`).
fn module_of(rel: &Path) -> String {
    let first = rel.components().next().expect("a file");
    let name = first.as_os_str().to_string_lossy();
    name.trim_end_matches(".rs").to_string()
}

/// Every `crate::name` in `text`, outside comments.
fn crate_refs(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            let tail = &rest[i + "crate::".len()..];
            let name: String = tail
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.insert(name);
            }
            rest = tail;
        }
        // `use crate::{a, b}` groups
        if let Some(i) = code.find("crate::{") {
            let group = &code[i + "crate::{".len()..];
            for part in group.split([',', '}']) {
                let name: String = part
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.insert(name);
                }
            }
        }
    }
    out
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).expect("src readable") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let rel = p.strip_prefix(&src).expect("under src");
            let m = module_of(rel);
            if m == "lib" {
                continue;
            }
            let text = std::fs::read_to_string(&p).expect("readable");
            let refs = g.entry(m.clone()).or_default();
            for r in crate_refs(&text) {
                if r != m {
                    refs.insert(r);
                }
            }
        }
    }
    g
}

/// A circle through the graph, if there is one.
fn find_cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match state.get(n) {
            Some(2) => return None,
            Some(1) => {
                let i = path.iter().position(|p| p == n).expect("on the path");
                let mut c = path[i..].to_vec();
                c.push(n.to_string());
                return Some(c);
            }
            _ => {}
        }
        state.insert(n.to_string(), 1);
        path.push(n.to_string());
        for m in g.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, g, state, path) {
                return Some(c);
            }
        }
        path.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in g.keys() {
        if let Some(c) = visit(n, g, &mut state, &mut Vec::new()) {
            return Some(c);
        }
    }
    None
}

#[test]
fn the_emulators_modules_import_each_other_without_a_circle() {
    let g = graph();
    for (m, refs) in &g {
        let list: Vec<&str> = refs.iter().map(String::as_str).collect();
        println!("{m:>9} -> {}", list.join(", "));
    }
    assert!(g.len() > 10, "read the sources: {g:?}");
    if let Some(c) = find_cycle(&g) {
        panic!("import circle in cuda-emu/src: {}", c.join(" -> "));
    }
    // Nothing below the C ABI reaches up into it.
    for (m, refs) in &g {
        assert!(
            m == "exports" || !refs.contains("exports"),
            "{m} imports exports"
        );
    }
}

#[test]
fn the_cycle_finder_finds_a_circle() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("c".into());
    assert_eq!(find_cycle(&g), None);
    g.entry("c".into()).or_default().insert("a".into());
    assert_eq!(
        find_cycle(&g).map(|c| c.join(" -> ")),
        Some("a -> b -> c -> a".to_string())
    );
    assert_eq!(
        crate_refs("use crate::{driver, ops::Op};\n// crate::x\nlet y = crate::host::f();"),
        ["driver", "host", "ops"]
            .map(String::from)
            .into_iter()
            .collect()
    );
}
