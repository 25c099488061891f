#!/usr/bin/env python3
"""Lists the functions longer than a limit in C++/CUDA sources.

usage: function_lengths.py LIMIT [--allow FILE] DIR...   |   function_lengths.py --self-test

A function is a definition that starts at column 0 (or after `static`/`template` lines) with a line
holding `(` and ending in `{`, up to the `}` at column 0 that closes it; its length is the number
of lines from the signature's first line to that brace. Every source in the project is formatted
that way (clang-format, no indented namespace bodies), so this needs no C++ parser. Prints one
line per function over the limit and exits 1 if there is any.

--allow FILE lists the functions allowed over the limit, one per line as `PATH FUNCTION: reason`
(PATH from the project root, `#` comments): each needs its reason, and an entry whose function is
no longer over the limit is an error too, so the list only holds what is true.
"""
import os
import re
import sys

from allow_list import take_allow_option

SIGNATURE_END = re.compile(r"\)\s*(const)?\s*(noexcept)?\s*(override)?\s*(->\s*[\w:<>, ]+)?\s*\{\s*$")


def functions(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line and not line[0].isspace() and not line.startswith(("//", "#", "}", "namespace", "struct", "class", "enum", "union")):
            # The signature may span lines: gather until `{` or `;`.
            j = i
            text = line
            while not text.rstrip().endswith(("{", ";", "}")) and j + 1 < len(lines) and j - i < 8:
                j += 1
                text += " " + lines[j].strip()
            if "(" in text and SIGNATURE_END.search(text) and "=" not in text.split("(")[0]:
                k = j + 1
                while k < len(lines) and lines[k] != "}" and not lines[k].startswith("}"):
                    k += 1
                name = text.split("(")[0].split()[-1] if text.split("(")[0].split() else "?"
                yield name, i + 1, k - i + 1
                i = k + 1
                continue
            i = j + 1
            continue
        i += 1


def self_test():
    """The checker finds a function one line over the limit and passes one at it."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        def write(name, lines_in_body):
            body = "".join("  x += %d;\n" % i for i in range(lines_in_body))
            with open(os.path.join(d, name), "w") as f:
                f.write("namespace a {\n\nint f(int x,\n      int y) {\n" + body + "}\n\n}  // namespace a\n")
        write("at.cpp", 97)    # 2 signature lines + 97 + the closing brace = 100 lines
        write("over.cpp", 98)  # 2 + 98 + 1 = 101 lines
        found = {os.path.basename(p): n for p in [os.path.join(d, f) for f in os.listdir(d)]
                 for _, _, n in functions(p)}
        ok = found == {"at.cpp": 100, "over.cpp": 101}
        # An allowed entry passes; a stale one (a function not over the limit) fails.
        import subprocess
        def run_with(entries):
            allow = os.path.join(d, "allow.txt")
            with open(allow, "w") as f:
                f.write("# test\n" + "".join(e + "\n" for e in entries))
            return subprocess.run([sys.executable, __file__, "100", "--allow", allow, d],
                                  capture_output=True).returncode
        codes = (run_with([]), run_with(["over.cpp f: a reason"]),
                 run_with(["over.cpp f: a reason", "at.cpp f: stale"]), run_with(["over.cpp f"]))
        ok = ok and codes == (1, 0, 1, 2)
        print("self-test:", "ok" if ok else "FAILED", found, "exit codes", codes)
        return 0 if ok else 1


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    allowed, args = take_allow_option(sys.argv[1:], "function_lengths.py", 2, "PATH FUNCTION: reason")
    if len(args) < 2:
        print(__doc__.strip().split("\n")[2], file=sys.stderr)
        return 2
    try:
        limit = int(args[0])
    except ValueError:
        print(f"function_lengths.py: LIMIT must be an integer (got {args[0]!r})", file=sys.stderr)
        return 2
    missing = [d for d in args[1:] if not os.path.isdir(d)]
    if missing:  # a wrong path must not pass as a tree with no long function
        print(f"function_lengths.py: DIR {missing[0]}: no such directory", file=sys.stderr)
        return 2
    over = []
    for root in args[1:]:
        for d, _, files in os.walk(root):
            for f in sorted(files):
                if f.endswith((".cpp", ".cu", ".hpp", ".cuh")):
                    p = os.path.join(d, f)
                    for name, line, length in functions(p):
                        if length > limit:
                            over.append((length, p, line, name))
    def listed(p, name):
        return next((k for k in allowed if k[1] == name and p.endswith("/" + k[0])), None)

    used = {listed(p, name) for _, p, _, name in over} - {None}
    bad = [o for o in over if listed(o[1], o[3]) is None]
    for length, p, line, name in sorted(bad, reverse=True):
        print(f"{p}:{line}: {name}: {length} lines (limit {limit})")
    stale = sorted(set(allowed) - used)
    for path, name in stale:
        print(f"{path} {name}: listed as allowed over {limit} lines, but it is not (remove the entry)")
    if allowed:
        print(f"function_lengths.py: {len(over) - len(bad)} function(s) over {limit} lines with a listed reason")
    return 1 if bad or stale else 0


if __name__ == "__main__":
    sys.exit(main())
