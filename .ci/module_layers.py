#!/usr/bin/env python3
"""Checks how the core crate's modules (files under rust/core/src) import each other:
no import circles, and the top-level modules in the layers ARCHITECTURE.md lists (each
uses only the ones below it).

A module refers to another through `crate::a::b` (in a `use` or inline) or `super::`; each
reference is resolved to the deepest module file it names (paths relative to the module
itself, such as a parent's `take::x` for its child `take`, are not followed). Files that reach each other
through such references form a circle (a strongly connected component of the graph).
Exit status 1 when there is a circle with more files than --allow (0 by default), or a
top-level module that uses one above it in LAYERS.

Usage: .ci/module_layers.py [--allow N] [src dir]
"""

import argparse
import re
import sys
from pathlib import Path

# The top-level modules, bottom up, as ARCHITECTURE.md's table of layers lists them.
LAYERS = [
    "error",
    "proto",
    "storage",
    "session",
    "threads",
    "encoding",
    "file",
    "table",
    "expr",
    "dataset",
    "scan",
    "file_table",
    "blob",
    "index",
    "vector",
    "query",
    "write",
    "namespace",
    "spark",
    "fuzzing",
]

PATH = re.compile(r"\b(crate|super)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
USE_GROUP = re.compile(r"\buse\s+(crate|super)((?:::[A-Za-z_][A-Za-z0-9_]*)*)::\{([^;]*)\}", re.S)


def module_of(src: Path, path: Path) -> tuple:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] in ("mod", "lib"):
        parts.pop()
    return tuple(parts)


def strip_comments(text: str) -> str:
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def strip_test_modules(text: str) -> str:
    """Drops inline `#[cfg(test)] mod x { ... }` blocks: tests may use any module."""
    while True:
        m = re.search(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", text)
        if not m:
            return text
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        text = text[: m.start()] + text[i:]


def is_test_only(path: Path) -> bool:
    """A file its parent module declares after `#[cfg(test)]` (tests.rs, test_util.rs, ...)."""
    declared = re.compile(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+" + path.stem + r"\s*;")
    parents = [path.parent / "mod.rs", path.parent / "lib.rs", path.parent.with_suffix(".rs")]
    return any(p.exists() and p != path and declared.search(p.read_text()) for p in parents)


def graph(src: Path):
    modules = {module_of(src, p): p for p in src.rglob("*.rs") if not is_test_only(p)}
    edges = {m: set() for m in modules}

    def resolve(base: tuple, names: list):
        target = list(base)
        for name in names:
            if tuple(target + [name]) in modules:
                target.append(name)
            else:
                break
        return tuple(target)

    for module, path in modules.items():
        text = strip_test_modules(strip_comments(path.read_text()))
        # A file's own module for `super`: mod.rs/lib.rs is its directory.
        parent = module[:-1]
        refs = []
        for m in USE_GROUP.finditer(text):
            root, prefix, inner = m.group(1), m.group(2), m.group(3)
            head = [p for p in prefix.split("::") if p]
            for item in re.split(r"[,{}\s]+", inner):
                name = item.split("::")[0]
                if name and name not in ("self",):
                    refs.append((root, head + item.split("::")))
                elif name == "self":
                    refs.append((root, head))
        for m in PATH.finditer(text):
            refs.append((m.group(1), [p for p in m.group(2).split("::") if p]))
        for root, names in refs:
            base = () if root == "crate" else parent
            while names and names[0] == "super":
                base, names = base[:-1], names[1:]
            target = resolve(base, names)
            if target != module and target in modules and target != ():
                edges[module].add(target)
    return modules, edges


def circles(edges):
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in edges:
        if v not in index:
            visit(v)
    return found


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--allow", type=int, default=0, help="largest circle tolerated")
    parser.add_argument("src", nargs="?", default="rust/core/src")
    args = parser.parse_args()
    _, edges = graph(Path(args.src))
    found = sorted(circles(edges), key=len, reverse=True)
    for component in found:
        print(f"circle of {len(component)}: " + ", ".join("::".join(m) for m in component))
    upward = layer_violations(edges)
    for line in upward:
        print(line)
    largest = len(found[0]) if found else 0
    if largest > args.allow:
        print(f"{len(found)} circle(s); the largest has {largest} modules (allowed: {args.allow})")
    if largest > args.allow or upward:
        return 1
    print(f"no circle larger than {args.allow} and no upward use among the modules of {args.src}")
    return 0


def layer_violations(edges):
    """A line per use of a top-level module by one below it in LAYERS (or not in it)."""
    out = []
    for module, targets in sorted(edges.items()):
        for target in sorted(targets):
            a, b = module[0] if module else "lib", target[0]
            if a == b or a == "lib":
                continue
            if a not in LAYERS or b not in LAYERS:
                out.append(f"{'::'.join(module)} uses {'::'.join(target)}: add '{a if a not in LAYERS else b}' to LAYERS")
            elif LAYERS.index(b) > LAYERS.index(a):
                out.append(f"{'::'.join(module)} uses {'::'.join(target)}, a layer above it")
    return out


if __name__ == "__main__":
    sys.exit(main())
