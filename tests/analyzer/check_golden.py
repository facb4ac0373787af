#!/usr/bin/env python3
"""tests/analyzer/check_golden.py PTANALYZE GOLDEN_DIR - the golden suite.

Runs the built ptanalyze on the checked-in trace(s) for every case of
GOLDEN_DIR/cases.txt (expected file, then arguments, run in GOLDEN_DIR) and
compares stdout byte for byte with the expected file; the command must exit
0 and write nothing to stderr. Every expected file in GOLDEN_DIR must have a
case. The expected files are never written here: scripts/update-golden.sh
regenerates them. Output is TAP; exit status 0 = all cases match.
"""
import difflib
import os
import shlex
import subprocess
import sys


def main():
    if len(sys.argv) != 3:
        print("usage: check_golden.py PTANALYZE GOLDEN_DIR", file=sys.stderr)
        return 2
    ana, gdir = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    cases = []
    with open(os.path.join(gdir, "cases.txt"), encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                out, args = line.split(None, 1)
                cases.append((out, shlex.split(args)))
    expected_files = {n for n in os.listdir(gdir) if n.endswith((".txt", ".csv", ".json")) and n != "cases.txt"}
    orphans = sorted(expected_files - {c[0] for c in cases})

    print("1..%d" % (len(cases) + 1))
    failed = 0
    for i, (out, args) in enumerate(cases, 1):
        p = subprocess.run([ana] + args, cwd=gdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        problems = []
        if p.returncode != 0:
            problems.append("exit status %d" % p.returncode)
        if p.stderr:
            problems.append("stderr: " + p.stderr.decode("utf-8", "replace").strip())
        try:
            with open(os.path.join(gdir, out), "rb") as f:
                want = f.read()
        except OSError as e:
            want = None
            problems.append("cannot read the expected file: %s" % e)
        if want is not None and p.stdout != want:
            diff = difflib.unified_diff(
                want.decode("utf-8", "replace").splitlines(True),
                p.stdout.decode("utf-8", "replace").splitlines(True),
                fromfile="expected/" + out, tofile="ptanalyze " + " ".join(args))
            problems.append("output differs (if intended: scripts/update-golden.sh BUILD_DIR):\n" + "".join(diff))
        if problems:
            failed += 1
            print("not ok %d - %s" % (i, out))
            for pr in problems:
                for line in pr.splitlines():
                    print("# " + line)
        else:
            print("ok %d - %s" % (i, out))
    if orphans:
        failed += 1
        print("not ok %d - every expected file has a case" % (len(cases) + 1))
        print("# no case in cases.txt for: " + ", ".join(orphans))
    else:
        print("ok %d - every expected file has a case" % (len(cases) + 1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
