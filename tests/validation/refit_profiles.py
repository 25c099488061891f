#!/usr/bin/env python3
"""The committed GPU profiles are `parallax fit`'s output: rerunning the documented command
reproduces each one byte for byte (issue 22).

usage: refit_profiles.py PARALLAX SOURCE_DIR

For every presets/profiles/*.json whose provenance names the tool "parallax fit", runs
  parallax fit --profile NAME --date DATE --runs SOURCE_DIR/validation/runs --out TMP
with the profile's own provenance date, and compares TMP with the committed file. Prints one line
per profile; exits 1 when any differs, 2 on bad usage.
"""
import glob
import json
import os
import subprocess
import sys
import tempfile


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().split("\n")[3], file=sys.stderr)
        return 2
    parallax, src = sys.argv[1], sys.argv[2]
    checked, bad = 0, 0
    for path in sorted(glob.glob(os.path.join(src, "presets", "profiles", "*.json"))):
        prof = json.load(open(path, encoding="utf-8"))
        prov = prof.get("provenance", {})
        if prov.get("tool") != "parallax fit":
            continue
        name = os.path.basename(path)[:-5]
        with tempfile.TemporaryDirectory() as t:
            out = os.path.join(t, name + ".json")
            cmd = [parallax, "fit", "--profile", name, "--date", prov["date"],
                   "--runs", os.path.join(src, "validation", "runs"), "--out", out]
            r = subprocess.run(cmd, cwd=src, capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{name}: parallax fit failed ({r.returncode}): {r.stderr.strip()}")
                bad += 1
                continue
            same = open(out, "rb").read() == open(path, "rb").read()
        print(f"{name}: {'reproduced byte for byte' if same else 'DIFFERS from the committed file'}")
        checked += 1
        bad += not same
    if checked == 0:
        print("no profile names parallax fit as its tool")
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
