#!/usr/bin/env python3
"""bench/check_instructions.py - the read side's instruction budget (issue 18).

Counts the instructions `ptanalyze` executes on the bench's 10 M-record
trace, with valgrind's callgrind (deterministic: the same binary on the same
trace gives the same count on a loaded or an idle machine, unlike time), for
the modes issue 18 sets targets for, and fails when one passes its budget:

  mode                command                                   budget  target
  --report            ptanalyze -j 1 TRACE --report              192     130
  --csv FILE          ptanalyze -j 1 TRACE --csv FILE            220     140
  --json FILE         ptanalyze -j 1 TRACE --json FILE           232     150
  export --perfetto   ptanalyze export --perfetto FILE TRACE     300     300

(instructions per record of the trace). A budget is the highest figure
measured when it was set plus about 5 %, so that a change that makes the
read side slower fails here, not months later in a user's CI; the target is
the issue's. Traces the bench records differ in their timestamps and chunk
boundaries only, which moves the counts a little: on six traces (one recorded
on a loaded machine) --report gave 203.8 to 204.4 a record, --csv 229.3 to
230.1, --json 243.5 to 244.9, export --perfetto 284.8 to 285.9 (without
MALLOC_PERTURB_, which the counts run without: with it, 2 % more). The
budgets were lowered on 2026-11-28 to the figures of two traces then
(--report 182.2 and 182.1, --csv 209.0 and 208.9, --json 220.3 and
220.2, export --perfetto 284.1 and 284.2) plus about 5 %. Lower a budget when a change lowers its figure.

The trace: recorded by `bench-analyze --quick --keep DIR --runs 1` (8
threads, 1,000 names, random nesting to depth 10, a metric on every 4th
section, the flusher's RSS samples), or --trace FILE.

usage: check_instructions.py --ptanalyze BIN (--bench-analyze BIN | --trace FILE)
                             [--mode NAME ...] [--budget NAME=N ...] [--valgrind BIN]
(--budget: another budget for a mode, e.g. to see the check fail.)
Prints a table; exit 0 within budget, 1 past it, 2 on a usage error, 77
(skipped, for meson test) when valgrind is not installed.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

# mode: (arguments with TRACE and OUT placeholders, budget, issue 18's target), instructions a record
MODES = {
    "report": (["-j", "1", "{trace}", "--report", "--no-progress"], 192, 130),
    "csv": (["-j", "1", "{trace}", "--csv", "{out}", "--no-progress"], 220, 140),
    "json": (["-j", "1", "{trace}", "--json", "{out}", "--no-progress"], 232, 150),
    "perfetto": (["export", "--perfetto", "{out}", "{trace}"], 300, 300),
}


def records_of(ptanalyze, trace):
    """The trace's record count, as `ptanalyze info` states it."""
    out = subprocess.run([ptanalyze, "info", trace], capture_output=True, text=True, check=True).stdout
    m = re.search(r"^records:\s+(\d+)", out, re.M)
    if not m:
        raise RuntimeError(f"no 'records:' line in ptanalyze info {trace}")
    return int(m.group(1))


def instructions(valgrind, argv):
    """Instructions callgrind counted for argv (the whole run: loading, pass, output)."""
    env = dict(os.environ)
    # meson test sets MALLOC_PERTURB_, and glibc then fills every block it
    # hands out or takes back: 2 % more instructions, none of them ours
    env.pop("MALLOC_PERTURB_", None)
    r = subprocess.run([valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null"] + argv,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {r.returncode}\n{r.stderr[-2000:]}")
    m = re.search(r"Collected\s*:\s*(\d+)", r.stderr)
    if not m:
        raise RuntimeError(f"no 'Collected' line from callgrind:\n{r.stderr[-2000:]}")
    return int(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ptanalyze", required=True)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--bench-analyze", help="records the 10 M-record bench trace")
    src.add_argument("--trace", help="a trace already recorded by the bench")
    ap.add_argument("--mode", action="append", choices=sorted(MODES), help="only these (repeated; default: all)")
    ap.add_argument("--budget", action="append", default=[], metavar="NAME=N",
                    help="instructions a record allowed for mode NAME instead of the table's")
    ap.add_argument("--valgrind", default=shutil.which("valgrind"))
    a = ap.parse_args()
    budgets = {m: v[1] for m, v in MODES.items()}
    for b in a.budget:
        name, _, val = b.partition("=")
        if name not in MODES:
            ap.error(f"--budget {b}: no mode {name!r}")
        try:
            budgets[name] = float(val)
        except ValueError:
            ap.error(f"--budget {b}: not a number")
    if not a.valgrind:
        print("valgrind is not installed: the instruction budget is not checked (SKIP)")
        return 77
    with tempfile.TemporaryDirectory(prefix="ptz-instr-") as tmp:
        trace = a.trace
        if not trace:
            r = subprocess.run([a.bench_analyze, "--quick", "--keep", tmp, "--runs", "1"],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"bench-analyze: exit {r.returncode}\n{r.stderr[-2000:]}")
            trace = os.path.join(tmp, "trace-10000000.ptz")
        n = records_of(a.ptanalyze, trace)
        print(f"trace {trace}: {n:,} records")
        print(f"{'mode':<10} {'instructions':>16} {'a record':>9} {'budget':>7} {'target':>7}")
        over = []
        for mode in a.mode or list(MODES):
            args, _, target = MODES[mode]
            budget = budgets[mode]
            out = os.path.join(tmp, "out." + mode)
            argv = [a.ptanalyze] + [x.format(trace=trace, out=out) for x in args]
            ir = instructions(a.valgrind, argv)
            per = ir / n
            flag = "" if per <= budget else "  OVER BUDGET"
            print(f"{mode:<10} {ir:>16,} {per:>9.1f} {budget:>7g} {target:>7}{flag}", flush=True)
            if per > budget:
                over.append(f"{mode}: {per:.1f} instructions a record, budget {budget:g}")
            if os.path.exists(out):
                os.unlink(out)
    if over:
        print("past the budget (bench/check_instructions.py; callgrind_annotate shows where):\n  " +
              "\n  ".join(over))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
