#!/usr/bin/env python3
"""Include cycles between the module folders of src/ (docs/architecture.md, "The layers").

A file of module A (src/A/..., cuda/ and cpu/ subfolders included) that includes "B/..." of another
module B makes the edge A -> B. Modules that reach each other through such edges form a cycle; every
cycle is printed with the #include lines that make it, and the exit status is 1 (none is allowed:
docs/architecture.md, "The layers"). `--self-test` checks the detection on a small made-up tree.

usage: module_cycles.py SRC_DIR | --self-test
"""
import os
import re
import sys
import tempfile

INCLUDE = re.compile(r'\s*#\s*include\s*"([^"/]+)/[^"]+"')


def edges_of(src):
    """{(a, b): ["file:line include", ...]} for every include of module a that names module b."""
    modules = {d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d))}
    edges = {}
    for folder, _, files in os.walk(src):
        rel = os.path.relpath(folder, src)
        if rel == ".":
            continue
        a = rel.split(os.sep)[0]
        for name in sorted(files):
            if not name.endswith((".c", ".h", ".cu", ".cuh", ".cpp")):
                continue
            path = os.path.join(folder, name)
            with open(path, errors="replace") as f:
                for k, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if m and m.group(1) in modules and m.group(1) != a:
                        edges.setdefault((a, m.group(1)), []).append(
                            f"{os.path.relpath(path, src)}:{k} {line.strip()}")
    return edges


def cycles(edges):
    """The strongly connected sets of two or more modules (Tarjan)."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def check(src):
    """The number of cycles found (each printed with its includes)."""
    edges = edges_of(src)
    found = cycles(edges)
    for comp in found:
        print(f"CYCLE: {' <-> '.join(sorted(comp))}")
        for (a, b), why in sorted(edges.items()):
            if a in comp and b in comp:
                print(f"  {a} -> {b}: {len(why)} include(s), e.g. {why[0]}")
    if not found:
        print("no include cycle between the modules of", src)
    return len(found)


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        def put(path, text):
            os.makedirs(os.path.dirname(os.path.join(tmp, path)), exist_ok=True)
            with open(os.path.join(tmp, path), "w") as f:
                f.write(text)
        put("core/a.h", "#include <stdio.h>\n")
        put("x/x.c", '#include "core/a.h"\n#include "y/y.h"\n')
        put("y/y.h", '#include "core/a.h"\n')
        ok = check(tmp) == 0
        put("z/z.c", '#include "x/x.h"\n')  # z above x: no way back to z
        ok &= check(tmp) == 0
        put("y/cuda/y.cu", '#include "x/x.h"\n')  # y -> x closes x -> y
        ok &= check(tmp) == 1
        put("w/w.c", '#include "z/z.h"\n')
        put("z/z2.c", '#include "w/w.h"\n')  # a second cycle, z <-> w
        ok &= check(tmp) == 2
    print("self-test", "passed" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(self_test() if sys.argv[1] == "--self-test" else 1 if check(sys.argv[1]) else 0)
