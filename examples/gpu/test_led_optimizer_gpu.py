#!/usr/bin/env python3
"""examples/gpu/test_led_optimizer_gpu.py - run the GPU LED optimizer and
check its trace against the totals it computes on its own.

usage: test_led_optimizer_gpu.py BUILD_DIR TESTS_EXAMPLES_DIR

Exit 77 (meson: skipped) when `led_optimizer_gpu --check-device` finds no
usable CUDA device. Otherwise:
  1. every check of tests/examples/test_examples.py (imported from
     TESTS_EXAMPLES_DIR, not copied): the program exits 0 with --small, its
     totals line (flops, read and written bytes, sections) equals ptanalyze's
     JSON and CSV sums, merged, per thread and flat, with no losses;
  2. the transfers: the sum over depth-1 rows of the merged tree (JSON and
     CSV) of h2d_bytes, d2h_bytes and d2d_bytes equals the program's
     total_h2d_bytes, total_d2h_bytes and total_d2d_bytes;
  3. the recorder's GPU figures the program prints: GPU timing on
     (gpu_state=1), at least one range, and every GPU section either a
     range or a drop (gpu_ranges + gpu_dropped = gpu_sections: the program
     waits for the recorder's CUDA thread before it closes the trace),
     launched ones never fewer than ranges.
Prints one line per check and a final "N passed, N failed"; exits 1 on any
failure.
"""
import contextlib
import csv
import io
import json
import os
import re
import subprocess
import sys
import tempfile

PROG = "led_optimizer_gpu"


def main():
    if len(sys.argv) != 3:
        print("usage: test_led_optimizer_gpu.py BUILD_DIR TESTS_EXAMPLES_DIR", file=sys.stderr)
        return 2
    build = os.path.abspath(sys.argv[1])
    sys.path.insert(0, os.path.abspath(sys.argv[2]))
    import test_examples as te  # the CPU examples' checks, shared

    exe = os.path.join(build, "examples", PROG)
    p = subprocess.run([exe, "--check-device"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=60)
    if p.returncode == 77:
        print(f"skip: {p.stderr.strip()}")
        return 77
    if not te.check(f"{PROG} --check-device exits 0", p.returncode == 0, f"status {p.returncode}: {p.stderr}"):
        print(f"{te.passed} passed, {te.failed} failed")
        return 1

    with tempfile.TemporaryDirectory(prefix="ptz-examples-gpu-") as tmp:
        # runs --small into tmp/PROG.ptz, writes PROG.json and PROG.csv, and
        # echoes the program's stdout as "     | LINE": kept for the checks below
        log = io.StringIO()
        with contextlib.redirect_stdout(log):
            te.test_example(build, PROG, tmp)
        sys.stdout.write(log.getvalue())
        out = "\n".join(ln[7:] for ln in log.getvalue().splitlines() if ln.startswith("     | "))
        m = re.search(r"^%s: total_h2d_bytes=(\d+) total_d2h_bytes=(\d+) total_d2d_bytes=(\d+) "
                      r"gpu_sections=(\d+)$" % PROG, out, re.M)
        g = re.search(r"^%s: recorder lost_records=\d+ lost_sections=\d+ gpu_state=(-?\d+) gpu_launched=(\d+) "
                      r"gpu_ranges=(\d+) gpu_dropped=(\d+) gpu_early_starts=(\d+) trace=" % PROG, out, re.M)
        if te.check(f"{PROG}: transfer and GPU lines parsed", m is not None and g is not None, out):
            want = {"h2d_bytes": int(m.group(1)), "d2h_bytes": int(m.group(2)), "d2d_bytes": int(m.group(3))}
            sections = int(m.group(4))
            te.check(f"{PROG}: non-trivial transfers", all(v > 0 for v in want.values()), str(want))
            try:
                with open(os.path.join(tmp, PROG + ".json")) as f:
                    doc = json.load(f)
                with open(os.path.join(tmp, PROG + ".csv"), newline="") as f:
                    rows = [r for r in csv.DictReader(f) if r["view"] == "tree" and r["thread"] == "all"]
            except (OSError, ValueError) as e:
                te.check(f"{PROG}: JSON and CSV readable", False, str(e))
                doc, rows = {}, []
            for k, v in want.items():
                te.check_eq(f"{PROG}: JSON sum of depth-1 {k} = program's total",
                            sum(int(r[k]) for r in doc.get("tree", []) if r["depth"] == 1), v)
                te.check_eq(f"{PROG}: CSV sum of depth-1 {k} = program's total",
                            sum(int(r[k]) for r in rows if int(r["depth"]) == 1), v)

            state, launched, ranges, dropped = (int(g.group(i)) for i in range(1, 5))
            te.check_eq(f"{PROG}: gpu_state (1 = on)", state, 1)
            te.check(f"{PROG}: GPU ranges resolved", ranges > 0, f"gpu_ranges={ranges}")
            te.check_eq(f"{PROG}: gpu_ranges + gpu_dropped = GPU sections", ranges + dropped, sections)
            te.check(f"{PROG}: gpu_ranges <= gpu_launched <= GPU sections", ranges <= launched <= sections,
                     f"ranges={ranges} launched={launched} sections={sections}")
    print(f"{te.passed} passed, {te.failed} failed")
    return 1 if te.failed else 0


if __name__ == "__main__":
    sys.exit(main())
