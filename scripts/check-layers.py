#!/usr/bin/env python3
"""Checks the include graph against Rewire's layers (docs/architecture.md).

Layers, bottom to top; a file may include its own layer and those listed:

  support    lib/Support, lib/Plot and their headers      (no MLIR)
  dialects   dialects/                                    support
  passes     passes/, lib/Autodiff                        support, dialects
  compiler   lib/Import, lib/Export, lib/Compiler,        support, dialects, passes
             lib/Registration and their headers
  runtime    runtime/, include/rewire/Runtime             support (no MLIR, no LLVM)
  tools      tools/, python/src (the Python module)       everything

and the components (lib/Export, passes/Transforms, dialects/nn, ...) include
one another without a cycle. Prints every violation; exit 1 if any.
Usage: check-layers.py [SOURCE_ROOT]
"""
import os
import re
import sys

ALLOWED = {
    "support": {"support"},
    "dialects": {"support", "dialects"},
    "passes": {"support", "dialects", "passes"},
    "compiler": {"support", "dialects", "passes", "compiler"},
    "runtime": {"support", "runtime"},
    "tools": {"support", "dialects", "passes", "compiler", "runtime", "tools"},
}
# Layers that must not include MLIR or LLVM headers.
NO_MLIR = {"support", "runtime"}

# (path prefix, layer, component); the first match wins.
PLACES = [
    ("include/rewire/Support/", "support", "lib/Support"),
    ("include/rewire/Plot/", "support", "lib/Plot"),
    ("include/rewire/Version.h", "support", "lib/Support"),
    ("include/rewire/Runtime/", "runtime", "runtime"),
    ("include/rewire/Import/", "compiler", "lib/Import"),
    ("include/rewire/Export/", "compiler", "lib/Export"),
    ("include/rewire/Compiler/", "compiler", "lib/Compiler"),
    ("include/rewire/InitAll.h", "compiler", "lib/Registration"),
    ("lib/Support/", "support", "lib/Support"),
    ("lib/Plot/", "support", "lib/Plot"),
    ("lib/Autodiff/", "passes", "lib/Autodiff"),
    ("lib/Import/", "compiler", "lib/Import"),
    ("lib/Export/", "compiler", "lib/Export"),
    ("lib/Compiler/", "compiler", "lib/Compiler"),
    ("lib/Registration/", "compiler", "lib/Registration"),
    ("dialects/", "dialects", None),
    ("passes/", "passes", None),
    ("runtime/", "runtime", "runtime"),
    ("tools/", "tools", None),
    ("python/src/", "tools", "python"),
]
SOURCE = re.compile(r".*\.(h|hpp|c|cc|cpp|inc)$")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]', re.M)


def place(path):
    for prefix, layer, component in PLACES:
        if path == prefix or path.startswith(prefix):
            if component is None:  # dialects/nn, passes/Transforms, tools/rewire-run
                parts = path.split("/")
                component = "/".join(parts[:2]) if len(parts) > 2 else parts[0]
            return layer, component
    return None, None


def resolve(root, including, name):
    """The repository path `name` refers to from `including`, or None."""
    here = os.path.dirname(including)
    for base in (here, "", "include"):
        candidate = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate
    # Generated headers (build/): named by their source folder.
    if name.endswith(".inc") or name == "rewire/Version.h":
        for base in ("", "include"):
            candidate = os.path.normpath(os.path.join(base, name))
            if place(candidate)[0]:
                return candidate
    return None


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    problems, edges, files = [], {}, 0
    for top in ("include", "lib", "dialects", "passes", "runtime", "tools", "python/src"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for n in sorted(names):
                if not SOURCE.match(n):
                    continue
                path = os.path.relpath(os.path.join(dirpath, n), root)
                layer, component = place(path)
                if not layer:
                    continue
                files += 1
                with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for m in INCLUDE.finditer(text):
                    name = m.group(1)
                    line = text.count("\n", 0, m.start()) + 1
                    if layer in NO_MLIR and name.split("/")[0] in ("mlir", "llvm", "llvm-c"):
                        problems.append("%s:%d: %s layer includes <%s>: it links no MLIR or LLVM"
                                        % (path, line, layer, name))
                        continue
                    target = resolve(root, path, name)
                    if not target:
                        continue  # system, upstream or generated protobuf headers
                    tlayer, tcomponent = place(target)
                    if not tlayer:
                        continue
                    if tlayer not in ALLOWED[layer]:
                        problems.append("%s:%d: %s layer includes %s (%s layer)"
                                        % (path, line, layer, target, tlayer))
                    if tcomponent != component:
                        edges.setdefault(component, {}).setdefault(tcomponent, (path, line, target))
    # Cycles between components (Tarjan's strongly connected components).
    index, low, stack, onstack, sccs, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        onstack.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in onstack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                onstack.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                sccs.append(sorted(scc))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    for scc in sccs:
        why = []
        for a in scc:
            for b in scc:
                if b in edges.get(a, {}):
                    p, l, t = edges[a][b]
                    why.append("%s -> %s (%s:%d includes %s)" % (a, b, p, l, t))
        problems.append("include cycle between %s: %s" % (", ".join(scc), "; ".join(why)))
    for p in problems:
        print("check-layers: " + p)
    ncomp = len(set(edges) | {c for e in edges.values() for c in e})
    print("check-layers: %d files, %d components, %d include edges between components: %s"
          % (files, ncomp, sum(len(e) for e in edges.values()),
             "%d problems" % len(problems) if problems else "ok"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
