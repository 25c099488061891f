#!/usr/bin/env python3
"""Runs one row of docs/errors.md: check_row.py DOC ID BIN_DIR.
check_row.py DOC --list prints "ID=input" for every row (CMake adds a test per line), and
"ID+mpi=input" for a row whose command runs mpirun (its test gets the label mpi).

The row is `| ID | input | `command` | exit | `first line of stderr` |` (`\\|` is a literal |).
The command runs under bash from the source directory (the directory above docs/) with BIN_DIR
first on PATH; its exit code and the first line of its stderr must equal the row's. A message
ending in "…" is a prefix. Exits 0 when both match, 1 (printing what differed) otherwise.
"""
import os
import re
import subprocess
import sys


def cells(line):
    parts = re.split(r"(?<!\\)\|", line.strip())[1:-1]
    return [p.strip().replace("\\|", "|") for p in parts]


def main():
    if len(sys.argv) == 3 and sys.argv[2] == "--list":
        for line in open(sys.argv[1], encoding="utf-8"):
            if re.match(r"^\| [A-Z][0-9]+ \|", line):
                c = cells(line)
                if re.search(r"[\[\];\\\"]", c[1]):
                    print(f"{sys.argv[1]}: row {c[0]}: the input column must not hold [ ] ; \\ or \"", file=sys.stderr)
                    return 1
                print(f"{c[0]}{'+mpi' if 'mpirun ' in c[2] else ''}={c[1]}")
        return 0
    doc, row_id, bin_dir = sys.argv[1], sys.argv[2], sys.argv[3]
    rows = [cells(l) for l in open(doc, encoding="utf-8") if l.startswith("| " + row_id + " |")]
    if len(rows) != 1:
        print(f"{doc}: expected one row {row_id}, found {len(rows)}")
        return 1
    _, what, command, code, message = rows[0]
    if not (command.startswith("`") and command.endswith("`") and message.startswith("`") and message.endswith("`")):
        print(f"{doc}: row {row_id}: command and message must be in backticks")
        return 1
    command, message = command[1:-1], message[1:-1]
    # Rows that run mpirun expect a rank to exit non-zero: without the timeout 0, Open MPI 4.1's
    # mpirun then waits 2 s before ending the job's other processes (tests/executor/mpi_run.hpp).
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""),
               OMPI_MCA_odls_base_sigkill_timeout="0")
    root = os.path.dirname(os.path.dirname(os.path.abspath(doc)))
    p = subprocess.run(["bash", "-c", command], cwd=root, env=env, stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=300)
    first = p.stderr.split("\n")[0]
    ok_code = p.returncode == int(code)
    ok_msg = first.startswith(message[:-1]) if message.endswith("…") else first == message
    if ok_code and ok_msg:
        return 0
    print(f"row {row_id} ({what}): {command}")
    print(f"  exit code: want {code}, got {p.returncode}")
    print(f"  stderr:    want {message!r}")
    print(f"             got  {first!r}")
    print("  full stderr:\n" + p.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
