#!/usr/bin/env python3
"""Lists the C++/CUDA sources longer than a limit.

usage: file_lengths.py LIMIT [--allow FILE] DIR...   |   file_lengths.py --self-test

--allow FILE lists the files allowed over the limit, one per line as `PATH: reason` (PATH from
the project root, `#` comments); an entry whose file is no longer over the limit is an error too.
Prints one line per file over the limit without a listed reason and exits 1 if there is any.
"""
import os
import subprocess
import sys
import tempfile

from allow_list import take_allow_option

SOURCES = (".cpp", ".hpp", ".cu", ".cuh", ".h")


def check(limit, allowed, dirs):
    over = []
    for root in dirs:
        for d, _, files in os.walk(root):
            for f in sorted(files):
                if f.endswith(SOURCES):
                    p = os.path.join(d, f)
                    n = sum(1 for _ in open(p, encoding="utf-8", errors="replace"))
                    if n > limit:
                        over.append((n, p))
    listed = lambda p: next((k for k in allowed if p.endswith("/" + k)), None)
    bad = [(n, p) for n, p in over if listed(p) is None]
    stale = sorted(set(allowed) - {listed(p) for _, p in over})
    for n, p in sorted(bad, reverse=True):
        print(f"{p}: {n} lines (limit {limit})")
    for p in stale:
        print(f"{p}: listed as allowed over {limit} lines, but it is not (remove the entry)")
    return 1 if bad or stale else 0


def self_test():
    with tempfile.TemporaryDirectory() as d:
        for name, n in (("at.cpp", 10), ("over.cpp", 11)):
            with open(os.path.join(d, name), "w") as f:
                f.write("//\n" * n)
        allow = os.path.join(d, "allow.txt")

        def run_with(entries):
            with open(allow, "w") as f:
                f.write("".join(e + "\n" for e in entries))
            return subprocess.run([sys.executable, __file__, "10", "--allow", allow, d],
                                  capture_output=True).returncode
        codes = (run_with([]), run_with(["over.cpp: a reason"]),
                 run_with(["over.cpp: a reason", "at.cpp: stale"]), run_with(["over.cpp"]))
        ok = codes == (1, 0, 1, 2)
        print("self-test:", "ok" if ok else "FAILED", "exit codes", codes)
        return 0 if ok else 1


def main():
    args = sys.argv[1:]
    if args == ["--self-test"]:
        return self_test()
    allowed, args = take_allow_option(args, "file_lengths.py", 1, "PATH: reason")
    allowed = {k[0]: v for k, v in allowed.items()}
    if len(args) < 2 or not args[0].isdigit():
        print(__doc__.strip().split("\n")[2], file=sys.stderr)
        return 2
    missing = [d for d in args[1:] if not os.path.isdir(d)]
    if missing:
        print(f"file_lengths.py: DIR {missing[0]}: no such directory", file=sys.stderr)
        return 2
    return check(int(args[0]), allowed, args[1:])


if __name__ == "__main__":
    sys.exit(main())
