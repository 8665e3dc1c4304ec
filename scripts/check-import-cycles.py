#!/usr/bin/env python3
"""Import circles inside the library crates: which source files reach each other through
`crate::` / `super::` / `self::` paths (in `use` lines and inline paths), and how many files the
widest circle spans.

Usage: scripts/check-import-cycles.py [--max N] [--verbose] [CRATE_DIR...]

Each library crate (default: every workspace member but the dev-only and tool folders) is read as a
graph: a node per source file under src/, an edge from a file to the file a path names (the longest
prefix of the path that is a module file; a name re-exported by a `mod.rs` / `lib.rs` is followed
to the file it comes from). The code after a file's `#[cfg(test)]` and comments are left out. The
strongly connected parts with more than one file are the import circles. Exit 1 when one spans
more than N files (--max, default: no limit); the widest of each crate is always printed.
"""

import os
import re
import sys

SKIP = {"bench", "fuzz", "testkit", "tests-integration", "examples", "fake", "cli"}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def code_of(path):
    """The file's code before its test module, comments removed."""
    out = []
    in_block = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip().startswith("#[cfg(test)]"):
                break
            # Block comments (not nested across code on one line; good enough for this code base).
            if in_block:
                if "*/" in line:
                    in_block = 0
                    line = line.split("*/", 1)[1]
                else:
                    continue
            if "/*" in line and "*/" not in line.split("/*", 1)[1]:
                in_block = 1
                line = line.split("/*", 1)[0]
            line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
            line = line.split("//", 1)[0]
            out.append(line)
    return "".join(out)


def module_files(src):
    """Module path (tuple of names) -> file, for every .rs file under src."""
    mods = {}
    for dirpath, _, files in os.walk(src):
        for name in files:
            if not name.endswith(".rs"):
                continue
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, src)[:-3].split(os.sep)
            if rel in (["lib"], ["main"]):
                key = ()
            elif rel[-1] == "mod":
                key = tuple(rel[:-1])
            else:
                key = tuple(rel)
            mods[key] = full
    return mods


def expand_use(tree):
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e] (names only; `as` and `*` dropped)."""
    tree = re.sub(r"\s+", "", tree)

    def split_top(s):
        parts, depth, cur = [], 0, ""
        for ch in s:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        if cur:
            parts.append(cur)
        return parts

    def walk(prefix, s):
        m = re.match(r"^(.*?)::\{(.*)\}$", s)
        if m:
            out = []
            for part in split_top(m.group(2)):
                out.extend(walk(prefix + m.group(1).split("::"), part))
            return out
        s = s.split("as", 1)[0] if re.search(r"\bas\b", s) else s
        segs = [x for x in s.split("::") if x and x != "*"]
        if segs == ["self"]:
            segs = []
        return [prefix + segs]

    if tree.startswith("{"):
        return [p for part in split_top(tree[1:-1]) for p in walk([], part)]
    return walk([], tree)


USE_RE = re.compile(r"\buse\s+((?:crate|super|self)\b[^;]*);", re.S)
INLINE_RE = re.compile(r"(?<![\w:])((?:crate|super)(?:::(?:[A-Za-z_][A-Za-z0-9_]*))+)")


def absolute(mod_key, is_dir_module, segs):
    """Resolve a path starting with crate/super/self from the module `mod_key`."""
    if not segs:
        return None
    here = list(mod_key)
    head, rest = segs[0], segs[1:]
    if head == "crate":
        base = []
    elif head == "self":
        base = here
    elif head == "super":
        base = here[:-1]
        while rest and rest[0] == "super":
            base = base[:-1]
            rest = rest[1:]
    else:
        return None
    return base + rest


def reexports(path, mod_key):
    """Names a module file re-exports (`pub use x::Y`) -> the absolute path they come from."""
    out = {}
    code = code_of(path)
    for m in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]*);", code, re.S):
        for segs in expand_use(m.group(1)):
            if not segs:
                continue
            if segs[0] in ("crate", "super", "self"):
                target = absolute(mod_key, True, segs)
            else:
                target = list(mod_key) + segs
            if target:
                out[segs[-1]] = target
    return out


def resolve(mods, reexp, segs, depth=0):
    """The file an absolute module path names (longest module prefix, re-exports followed)."""
    if depth > 8:
        return None
    for n in range(len(segs), -1, -1):
        key = tuple(segs[:n])
        if key in mods:
            rest = segs[n:]
            if rest and key in reexp and rest[0] in reexp[key]:
                target = reexp[key][rest[0]] + rest[1:]
                if tuple(target[: len(key)]) != key or len(target) > len(key):
                    found = resolve(mods, reexp, target, depth + 1)
                    if found:
                        return found
            return mods[key]
    return None


def crate_graph(crate_dir):
    src = os.path.join(crate_dir, "src")
    mods = module_files(src)
    keys = {v: k for k, v in mods.items()}
    reexp = {}
    for key, path in mods.items():
        if os.path.basename(path) in ("mod.rs", "lib.rs", "main.rs"):
            reexp[key] = reexports(path, key)
    edges = {p: set() for p in mods.values()}
    for path, key in keys.items():
        code = code_of(path)
        paths = []
        for m in USE_RE.finditer(code):
            paths.extend(expand_use(m.group(1)))
        for m in INLINE_RE.finditer(code):
            paths.append(m.group(1).split("::"))
        for segs in paths:
            target = absolute(key, False, segs)
            if target is None:
                continue
            found = resolve(mods, reexp, target)
            if found and found != path:
                edges[path].add(found)
    return src, edges


def sccs(edges):
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    sys.setrecursionlimit(10000)
    for v in edges:
        if v not in index:
            visit(v)
    return out


def main(argv):
    limit, verbose, dirs = None, False, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--max":
            limit = int(argv[i + 1])
            i += 2
            continue
        if a == "--verbose":
            verbose = True
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            dirs.append(a)
        i += 1
    if not dirs:
        for name in sorted(os.listdir(ROOT)):
            d = os.path.join(ROOT, name)
            if name in SKIP or not os.path.isfile(os.path.join(d, "Cargo.toml")):
                continue
            if os.path.isdir(os.path.join(d, "src")):
                dirs.append(d)
    worst = 0
    for d in dirs:
        src, edges = crate_graph(d)
        circles = sorted((c for c in sccs(edges) if len(c) > 1), key=len, reverse=True)
        widest = len(circles[0]) if circles else 1
        worst = max(worst, widest)
        name = os.path.relpath(d, ROOT)
        print(f"{name}: widest import circle {widest} file(s), {len(circles)} circle(s)")
        for c in circles if verbose else circles[:1]:
            files = sorted(os.path.relpath(p, src) for p in c)
            print(f"  {len(c)}: {' '.join(files)}")
    if limit is not None and worst > limit:
        print(f"check-import-cycles: a circle spans {worst} files (at most {limit} allowed)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
