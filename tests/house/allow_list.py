"""The lists of what a house rule allows, with reasons (long_functions.txt, long_files.txt).

One entry per line, `KEY: reason`, KEY being `fields` words (a path, or a path and a function);
`#` starts a comment line. A line without its reason exits 2 naming the file and line.
"""
import os
import sys


def read_allowed(path, tool, fields, form):
    """{KEY tuple: reason} of the list at path."""
    allowed = {}
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        head, _, reason = line.partition(": ")
        key = tuple(head.split())
        if len(key) != fields or not reason.strip():
            print(f"{tool}: {path}:{n}: an entry is `{form}`", file=sys.stderr)
            sys.exit(2)
        allowed[key] = reason.strip()
    return allowed


def take_allow_option(args, tool, fields, form):
    """(allowed, the other arguments) of `LIMIT [--allow FILE] DIR...`; exits 2 when FILE is
    missing or an entry has no reason."""
    if len(args) >= 3 and args[1] == "--allow":
        if not os.path.isfile(args[2]):
            print(f"{tool}: --allow {args[2]}: no such file", file=sys.stderr)
            sys.exit(2)
        return read_allowed(args[2], tool, fields, form), [args[0]] + args[3:]
    return {}, args
