#!/usr/bin/env bash
# Import map of the crates' modules, and the import circles in it.
#
# What it reads: every `.rs` file under `src/` (crate `ptxsmith`) and
# `cuda-emu/src/` (crate `ptxsmith-cuda-emu`). A file is a module (`a/b.rs`
# and `a/b/mod.rs` are `a::b`; `lib.rs` is the crate root). Its edges come
# from the module paths it names, after comments are removed:
#   * `use crate::…` declarations, groups included (`use crate::{a, b::{c}}`),
#     and `use super::…` / `use self::…` ones resolved against the file's
#     module;
#   * inline paths `crate::a::b::…` in code (e.g. `crate::sim::Sim::new`).
# Unit-test modules (from a `#[cfg(test)]` followed by `mod name {` to the
# end of the file, where they sit by convention) are not read: a test may
# reach up (a runtime test launching a kernel family's module).
# Plain child paths (`use child::Item;`, `mod child;`) are not read: a module
# and its own submodules are one unit here. Each path goes to the longest
# prefix that is a module file (`crate::sim::interp::Exec` -> `sim::interp`,
# `crate::sim::Sim` -> `sim`). Edges between a module and its own ancestor or
# descendant are dropped (re-exports from children, `super::` items); what
# remains is one module naming a module outside its own subtree.
# `use ptxsmith::…` in the emulator is listed as an edge into the library
# (`ptxsmith::<first segment>`), outside the circle search.
#
# Usage: scripts/import-map.sh [--depth N] [--edges] [--only PREFIX]...
#   --depth N      fold modules to their first N path segments (default:
#                  none, one node per file); `--depth 1` is the layer
#                  picture (dsl, exec, runtime, sim, ...).
#   --edges        print every edge with the files that make it.
#   --only PREFIX  report only the circles whose modules all start with
#                  PREFIX (repeatable), e.g. `--only ptxsmith::dsl
#                  --only cuda-emu`.
# Prints the edges (module -> modules it imports), then every circle (a
# strongly connected set of modules, each reachable from the others), and
# exits 1 if there is a circle.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 - "$@" <<'PY'
import os, re, sys
from collections import defaultdict

args = sys.argv[1:]
depth = None
show_files = False
only = []
i = 0
while i < len(args):
    if args[i] == "--depth":
        depth = int(args[i + 1]); i += 2
    elif args[i] == "--edges":
        show_files = True; i += 1
    elif args[i] == "--only":
        only.append(args[i + 1]); i += 2
    else:
        sys.exit(f"unknown argument {args[i]!r} (see the script header)")

CRATES = [("ptxsmith", "src"), ("cuda-emu", "cuda-emu/src")]

def module_of(root, path):
    rel = os.path.relpath(path, root)[:-3].split(os.sep)
    if rel[-1] in ("mod", "lib", "main"):
        rel = rel[:-1]
    return tuple(rel)

def strip_comments(text):
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""'); i = j + 1
        elif text[i] == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i+4]):
            m = re.match(r"'(\\.|[^\\'])'", text[i:])
            out.append("' '"); i += m.end()
        else:
            out.append(text[i]); i += 1
    return "".join(out)

def expand(tree):
    """`a::{b, c::{d}}` -> [a::b, a::c::d] (no whitespace in `tree`)."""
    m = re.match(r"^(.*?)\{(.*)\}$", tree)
    if not m:
        return [tree]
    head, body = m.group(1), m.group(2)
    parts, level, cur = [], 0, ""
    for ch in body:
        if ch == "{": level += 1
        if ch == "}": level -= 1
        if ch == "," and level == 0:
            parts.append(cur); cur = ""
        else:
            cur += ch
    parts.append(cur)
    res = []
    for p in parts:
        if p:
            res += [head + x for x in expand(p)]
    return res

edges = defaultdict(lambda: defaultdict(set))
external = defaultdict(lambda: defaultdict(set))
for crate, root in CRATES:
    files = []
    for d, _, names in os.walk(root):
        files += [os.path.join(d, f) for f in names if f.endswith(".rs")]
    mods = {module_of(root, f): f for f in files}
    def target(segs):
        for k in range(len(segs), -1, -1):
            if tuple(segs[:k]) in mods:
                return tuple(segs[:k])
        return ()
    for f in sorted(files):
        me = module_of(root, f)
        text = strip_comments(open(f, encoding="utf-8").read())
        t = re.search(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", text)
        if t:
            text = text[:t.start()]
        paths = []
        for m in re.finditer(r"\buse\s+([^;]*);", text):
            for p in expand(re.sub(r"\s+", "", m.group(1))):
                p = re.sub(r"\bas\w+$", "", p)
                paths.append(p)
        paths += [m.group(0) for m in re.finditer(r"(?<![\w:])crate(::\w+)+", text)]
        for p in paths:
            segs = [s for s in p.split("::") if s]
            if not segs:
                continue
            if segs[0] == "ptxsmith" and crate != "ptxsmith":
                if len(segs) > 1:
                    external[me][("ptxsmith", segs[1])].add(f)
                continue
            if segs[0] == "crate":
                abs_ = segs[1:]
            elif segs[0] in ("super", "self"):
                base = list(me)
                while segs and segs[0] in ("super", "self"):
                    if segs[0] == "super":
                        base = base[:-1]
                    segs = segs[1:]
                abs_ = base + segs
            else:
                continue
            t = target(abs_)
            if t == me or t[:len(me)] == me or me[:len(t)] == t:
                continue
            a, b = me, t
            if depth is not None:
                a, b = a[:depth], b[:depth]
                if a == b or a[:len(b)] == b or b[:len(a)] == a:
                    continue
            edges[(crate, a)][(crate, b)].add(f)

def name(node):
    crate, m = node
    return f"{crate}::{'::'.join(m)}" if m else crate

print(f"# import map of src/ and cuda-emu/src (depth: {depth or 'file'})")
for a in sorted(edges, key=name):
    outs = sorted(edges[a], key=name)
    print(f"{name(a)} -> {', '.join(name(b) for b in outs)}")
    if show_files:
        for b in outs:
            print(f"    {name(b)}: {', '.join(sorted(edges[a][b]))}")
for a in sorted(external, key=lambda m: "::".join(m)):
    print(f"cuda-emu::{'::'.join(a)} -> " + ", ".join(sorted(f"{c}::{s}" for c, s in external[a])))

# Tarjan's strongly connected components
index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]
nodes = set(edges) | {b for a in edges for b in edges[a]}
sys.setrecursionlimit(10000)
def visit(v):
    index[v] = low[v] = counter[0]; counter[0] += 1
    stack.append(v); on.add(v)
    for w in edges.get(v, {}):
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); on.discard(w); comp.append(w)
            if w == v: break
        if len(comp) > 1:
            sccs.append(sorted(comp, key=name))
for v in sorted(nodes, key=name):
    if v not in index:
        visit(v)
print()
if only:
    sccs = [c for c in sccs if any(all(name(v).startswith(p) for v in c) for p in only)]
    print(f"# (circles only within: {', '.join(only)})")
if not sccs:
    print("# circles: none")
    sys.exit(0)
print(f"# circles: {len(sccs)}")
for comp in sccs:
    print("circle: " + ", ".join(name(v) for v in comp))
    members = set(comp)
    for a in comp:
        for b in sorted(edges[a], key=name):
            if b in members:
                print(f"    {name(a)} -> {name(b)}: {', '.join(sorted(edges[a][b]))}")
sys.exit(1)
PY
