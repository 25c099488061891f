#!/usr/bin/env python3
"""Fails when a source file reaches a forbidden header, directly or through the project's headers.

usage: includes_reach.py SOURCE FORBIDDEN_PREFIX SOURCE_DIR

Follows every `#include "..."` of SOURCE through the project's headers (the SOURCE's folder, then
every `*/include` folder under SOURCE_DIR, as the build's include paths are) and prints the chain
to the first header whose include path starts with FORBIDDEN_PREFIX (e.g. parallax/planner/).
System headers (`<...>`) are not followed.
"""
import glob
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def main():
    if len(sys.argv) != 4:
        print(__doc__.strip().split("\n")[2], file=sys.stderr)
        return 2
    source, forbidden, root = sys.argv[1:]
    for what, path, ok in [("SOURCE", source, os.path.isfile), ("SOURCE_DIR", root, os.path.isdir)]:
        if not ok(path):
            print(f"includes_reach.py: {what} {path}: not found", file=sys.stderr)
            return 2
    roots = sorted(glob.glob(os.path.join(root, "*", "include")) + glob.glob(os.path.join(root, "*", "*", "include")))
    seen = set()
    stack = [(source, [source])]
    while stack:
        path, chain = stack.pop()
        text = open(path, encoding="utf-8").read()
        for inc in INCLUDE.findall(text):
            if inc.startswith(forbidden):
                print(" -> ".join(chain + [inc]))
                return 1
            for base in [os.path.dirname(path)] + roots:
                candidate = os.path.join(base, inc)
                if os.path.isfile(candidate):
                    if candidate not in seen:
                        seen.add(candidate)
                        stack.append((candidate, chain + [inc]))
                    break
    print(f"{source}: reaches no {forbidden} header ({len(seen)} project headers followed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
