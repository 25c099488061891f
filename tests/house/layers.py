#!/usr/bin/env python3
"""The includes against docs/design.md's layer list (the fenced block after "Layers, as a test
reads them"): a module's files may include the public headers (`parallax/<module>/...`) of the
modules its line names and of everything those may include, and nothing else; the list itself
must be acyclic and name every module folder with C++ in it. No file outside the modules (tests/,
bench/, fuzz/) includes a module's private header (a path through a `src/` folder): such a test
goes through a public header or lives beside the code it tests. Prints each include that breaks the
list (file, line, the module it reaches) and exits 1; 0 when none does.

Usage: layers.py PROJECT_DIR | layers.py --self-test
"""
import os
import re
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s*"parallax/([a-z_]+)/')
PRIVATE = re.compile(r'^\s*#\s*include\s*"((?:\.\./)*[^"]*\bsrc/[^"]*)"')
OUTSIDE = ("tests", "bench", "fuzz")
SOURCES = (".cpp", ".hpp", ".cu", ".cuh", ".h")


def read_layers(design_md):
    text = open(design_md, encoding="utf-8").read()
    marker = text.find("Layers, as a test reads them")
    if marker < 0:
        sys.exit(f"layers: {design_md} has no 'Layers, as a test reads them' block")
    start = text.index("```", marker) + 3
    end = text.index("```", start)
    direct = {}
    for line in text[start:end].strip().splitlines():
        name, _, deps = line.partition(":")
        direct[name.strip()] = deps.split()
    return direct


def closure(direct):
    """Every module's reachable modules; exits on a cycle or an unknown name."""
    reach = {}

    def visit(m, path):
        if m in path:
            sys.exit("layers: the list has a cycle: " + " -> ".join(path + [m]))
        if m not in direct:
            sys.exit(f"layers: {path[-1] if path else '?'} names {m}, which the list does not define")
        if m in reach:
            return reach[m]
        out = set()
        for d in direct[m]:
            out.add(d)
            out |= visit(d, path + [m])
        reach[m] = out
        return out

    for m in direct:
        visit(m, [])
    return reach


def check(project, direct):
    reach = closure(direct)
    problems = []
    modules_with_code = set()
    for m in sorted(os.listdir(project)):
        folder = os.path.join(project, m)
        if not os.path.isdir(folder) or m.startswith((".", "build")) or m in ("tests", "bench", "fuzz", "shared"):
            continue
        for root, _, files in os.walk(folder):
            for f in files:
                if not f.endswith(SOURCES):
                    continue
                modules_with_code.add(m)
                path = os.path.join(root, f)
                for n, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
                    hit = INCLUDE.match(line)
                    if not hit or hit.group(1) == m:
                        continue
                    target = hit.group(1)
                    if m not in direct:
                        continue  # reported once below
                    if target not in reach[m]:
                        problems.append(f"{os.path.relpath(path, project)}:{n}: {m} includes {target}, "
                                        f"which it may not (may: {' '.join(sorted(reach[m])) or 'nothing'})")
    for m in OUTSIDE:
        for root, _, files in os.walk(os.path.join(project, m)):
            for f in files:
                if not f.endswith(SOURCES):
                    continue
                path = os.path.join(root, f)
                for n, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
                    hit = PRIVATE.match(line)
                    if hit:
                        problems.append(f"{os.path.relpath(path, project)}:{n}: includes a module's private "
                                        f"header ({hit.group(1)}): test it through a public header or "
                                        "beside the code")
    for m in sorted(modules_with_code - set(direct)):
        problems.append(f"{m}/: a module with C++ that the layer list does not name")
    return problems


def self_test():
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(f"{d}/docs")
        with open(f"{d}/docs/design.md", "w") as f:
            f.write("Layers, as a test reads them:\n\n```\ncore:\nplanner: core\n```\n")
        for m in ("core", "planner"):
            os.makedirs(f"{d}/{m}/src")
        with open(f"{d}/planner/src/ok.cpp", "w") as f:
            f.write('#include "parallax/core/spec.hpp"\n')
        with open(f"{d}/core/src/up.cpp", "w") as f:
            f.write('#include "parallax/planner/planner.hpp"\n')
        problems = check(d, read_layers(f"{d}/docs/design.md"))
        if len(problems) != 1 or "core includes planner" not in problems[0]:
            print("layers: self-test FAILED: expected the one upward include, got", problems)
            return 1
        os.makedirs(f"{d}/tests/planner")
        with open(f"{d}/tests/planner/test_ok.cpp", "w") as f:
            f.write('#include "parallax/planner/planner.hpp"\n#include "../common/util.hpp"\n')
        with open(f"{d}/tests/planner/test_private.cpp", "w") as f:
            f.write('#include "../../planner/src/search_impl.hpp"\n')
        problems = check(d, read_layers(f"{d}/docs/design.md"))
        if len(problems) != 2 or "test_private.cpp:1: includes a module's private header" not in problems[1]:
            print("layers: self-test FAILED: expected the upward include and the test's private include, got",
                  problems)
            return 1
    print("layers: self-test passed (an upward include and a test's private include are found)")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    project = sys.argv[1]
    direct = read_layers(os.path.join(project, "docs", "design.md"))
    problems = check(project, direct)
    for p in problems:
        print(p)
    if problems:
        print(f"layers: {len(problems)} include(s) against docs/design.md's layer list")
        return 1
    print(f"layers: every include of {len(direct)} modules keeps to docs/design.md's layer list")
    return 0


if __name__ == "__main__":
    sys.exit(main())
