#!/usr/bin/env python3
"""tests/examples/test_examples.py - run the instrumented examples and check
that ptanalyze's totals equal the totals each program computes on its own.

usage: test_examples.py BUILD_DIR

For each example (BUILD/examples/led_optimizer, BUILD/examples/compress_corpus):
  1. run it with --small, the trace in a temporary directory, and parse its
     totals line ("NAME: ... total_read_bytes=N total_written_bytes=N sections=N",
     plus total_flops=N for led_optimizer; compress_corpus records no FLOPs);
  2. run `ptanalyze TRACE --json OUT.json` and `--csv OUT.csv`;
  3. assert exact equality, in the JSON and in the CSV, of
       - the sum over depth-1 rows of the merged tree of the inclusive
         flops / read_bytes / written_bytes (metrics roll up to ancestors,
         so only top-level rows are summed),
       - the sum over all merged tree rows of self_flops / self_read_bytes /
         self_written_bytes,
       - the sum of count over all merged tree rows, against "sections",
     and the same for each thread's own tree and for the flat (by name)
     view's self sums and counts; plus the trace's lost_records == 0;
  4. run `ptanalyze suggest TRACE --peaks M --json S` with hand-set roofs and
     check its roofline and hot-section findings against the report's rows.
Prints one line per check and a final "N passed, N failed"; exits 1 on any
failure. Standard library only.
"""
import csv
import json
import os
import re
import subprocess
import sys
import tempfile

METRICS = ("flops", "read_bytes", "written_bytes")

passed = 0
failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name}{': ' + detail if detail else ''}")
    return ok


def check_eq(name, got, want):
    return check(name, got == want, f"got {got}, want {want}")


def run(cmd, cwd, timeout=300, env=None):
    try:
        p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return None
    return p


def parse_totals(prog, stdout):
    """The program's own totals: the last line that starts with 'PROG: ' and
    holds total_read_bytes=; every key=N pair of it."""
    line = None
    for ln in stdout.splitlines():
        if ln.startswith(prog + ": ") and " total_read_bytes=" in ln:
            line = ln
    if line is None:
        return None
    want = (r"^%s: (?:total_flops=(\d+)|files=(\d+)) total_read_bytes=(\d+) "
            r"total_written_bytes=(\d+) sections=(\d+)$" % re.escape(prog))
    m = re.match(want, line)
    if not m:
        return None
    return {
        "flops": int(m.group(1)) if m.group(1) is not None else 0,
        "files": int(m.group(2)) if m.group(2) is not None else None,
        "read_bytes": int(m.group(3)),
        "written_bytes": int(m.group(4)),
        "sections": int(m.group(5)),
    }


def sums(rows, get, depth_of):
    """(inclusive sums over depth-1 rows, self sums over all rows, count sum)"""
    top = {k: 0 for k in METRICS}
    self_ = {k: 0 for k in METRICS}
    count = 0
    for r in rows:
        count += int(get(r, "count"))
        for k in METRICS:
            self_[k] += int(get(r, "self_" + k))
            if depth_of is not None and depth_of(r) == 1:
                top[k] += int(get(r, k))
    return top, self_, count


# compress_corpus attributes each byte count to the phase that did the work
PHASES = {"compress_corpus": (("read", "read_bytes"), ("zstd", "written_bytes"))}


def check_rows(label, rows, get, depth_of, totals, flat=False, phases=()):
    top, self_, count = sums(rows, get, depth_of)
    for k in METRICS:
        if not flat:
            check_eq(f"{label}: sum of depth-1 {k} = program's total", top[k], totals[k])
        check_eq(f"{label}: sum of self_{k} over all rows = program's total", self_[k], totals[k])
    check_eq(f"{label}: sum of count = program's sections", count, totals["sections"])
    if flat and phases:
        # per phase: each byte count sits on the section that did the work
        by_name = {get(r, "name"): r for r in rows}
        for name, k in phases:
            row = by_name.get(name)
            check_eq(f"{label}: {name} carries all self_{k}", int(get(row, "self_" + k)) if row else None,
                     totals[k])


def test_example(build, prog, tmp):
    exe = os.path.join(build, "examples", prog)
    ana = os.path.join(build, "cli", "ptanalyze")
    if not os.path.exists(exe):
        print(f"skip {prog}: {exe} was not built (for led_optimizer: OpenBLAS not found)")
        return
    trace = os.path.join(tmp, prog + ".ptz")
    p = run([exe, "--small", "--trace", trace], cwd=tmp)
    if not check(f"{prog} --small exits 0", p is not None and p.returncode == 0,
                 "timed out" if p is None else f"status {p.returncode}: {p.stderr.strip()}"):
        return
    sys.stdout.write("".join(f"     | {ln}\n" for ln in p.stdout.splitlines()))
    totals = parse_totals(prog, p.stdout)
    if not check(f"{prog}: totals line parsed", totals is not None, "no totals line in:\n" + p.stdout):
        return
    check(f"{prog}: non-trivial totals", totals["read_bytes"] > 0 and totals["sections"] > 0
          and (prog != "led_optimizer" or totals["flops"] > 0), str(totals))
    check(f"{prog}: prints recorder lost_records=0", re.search(r"\blost_records=0\b", p.stdout) is not None)

    out_json = os.path.join(tmp, prog + ".json")
    out_csv = os.path.join(tmp, prog + ".csv")
    for flag, out in (("--json", out_json), ("--csv", out_csv)):
        q = run([ana, trace, flag, out, "--no-progress"], cwd=tmp)
        check(f"{prog}: ptanalyze {flag} exits 0", q is not None and q.returncode == 0,
              "timed out" if q is None else f"status {q.returncode}: {q.stderr.strip()}")

    # ---- JSON
    try:
        with open(out_json) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        check(f"{prog}: JSON readable", False, str(e))
        doc = None
    if doc is not None:
        tr = doc.get("trace", {})
        check_eq(f"{prog}: JSON trace.lost_records", tr.get("lost_records"), 0)
        check_eq(f"{prog}: JSON trace.lost_sections", tr.get("lost_sections"), 0)
        check_eq(f"{prog}: JSON trace.closed", tr.get("closed"), True)
        check_eq(f"{prog}: JSON trace.sections = program's sections", tr.get("sections"), totals["sections"])
        jget = lambda r, k: r[k]  # noqa: E731
        jdepth = lambda r: r["depth"]  # noqa: E731
        check_rows(f"{prog}: JSON merged tree", doc.get("tree", []), jget, jdepth, totals)
        check_rows(f"{prog}: JSON flat", doc.get("flat", []), jget, None, totals, flat=True,
                   phases=PHASES.get(prog, ()))
        threads = doc.get("threads", [])
        per_thread = []
        for t in threads:
            per_thread.extend(t.get("tree", []))
        check_rows(f"{prog}: JSON per-thread trees", per_thread, jget, jdepth, totals)
        check_eq(f"{prog}: JSON sum of threads[].sections", sum(t.get("sections", 0) for t in threads),
                 totals["sections"])

    # ---- CSV
    try:
        with open(out_csv, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        check(f"{prog}: CSV readable", False, str(e))
        rows = None
    if rows is not None:
        cget = lambda r, k: r[k]  # noqa: E731
        cdepth = lambda r: int(r["depth"])  # noqa: E731
        merged = [r for r in rows if r["view"] == "tree" and r["thread"] == "all"]
        check(f"{prog}: CSV has merged tree rows", len(merged) > 0)
        check_rows(f"{prog}: CSV merged tree (view=tree, thread=all)", merged, cget, cdepth, totals)
        flat = [r for r in rows if r["view"] == "flat" and r["thread"] == "all"]
        check_rows(f"{prog}: CSV flat (view=flat, thread=all)", flat, cget, None, totals, flat=True,
                   phases=PHASES.get(prog, ()))
        per_thread = [r for r in rows if r["view"] == "tree" and r["thread"] != "all"]
        check_rows(f"{prog}: CSV per-thread trees", per_thread, cget, cdepth, totals)
        if doc is not None:
            check_eq(f"{prog}: CSV merged rows = JSON merged rows", len(merged), len(doc.get("tree", [])))

    if doc is not None:
        check_suggest(ana, prog, trace, tmp, doc)


def check_suggest(ana, prog, trace, tmp, doc):
    """ptanalyze suggest on the real trace, with hand-set roofs: every row that
    declares FLOPs or bytes itself and passes the 1% impact gate gets exactly one
    roofline finding, whose evidence equals the report's own figures for the row
    (a GPU section's: its own declared work over its own GPU time, on the GPU's
    roofs, which the profile then has); every hot-section finding is a row with
    self share >= 10%."""
    peaks = os.path.join(tmp, "machine.json")
    machine = {"schema": "ptz-machine/1", "host": doc["trace"]["host"], "cpus": 1,
               "fp64_gflops": {"one_core": 1000.0, "all_cores": 4000.0},
               "memory_gbps": {"one_core": 1000.0, "all_cores": 4000.0}}
    gpu = any(r.get("gpu_count") for r in doc["tree"])
    if gpu:  # far above any device: every GPU section is latency-bound on them
        machine["gpu"] = {"fp64_gflops": 1e7, "fp32_gflops": 1e7, "memory_gbps": 1e7}
    with open(peaks, "w") as f:
        json.dump(machine, f)
    out = os.path.join(tmp, prog + ".suggest.json")
    q = run([ana, "suggest", trace, "--peaks", peaks, "--json", out, "--no-progress"], cwd=tmp)
    if not check(f"{prog}: ptanalyze suggest exits 0", q is not None and q.returncode == 0,
                 "timed out" if q is None else f"status {q.returncode}: {q.stderr.strip()}"):
        return
    with open(out) as f:
        sug = json.load(f)
    check_eq(f"{prog}: suggest schema", sug.get("schema"), "ptanalyze-suggest/1")
    span = doc["trace"]["thread_span_sum_ns"]
    rows = {tuple(r["path"]): r for r in doc["tree"]}
    # gate: the larger of the inclusive CPU time and the occupied time; GPU
    # sections (GPU ranges of their own) are placed on the GPU's roofs, never
    # on the CPU's (doc/analyzer-output.md §9)
    def gated(r):
        return ((r["self_flops"] or r["self_read_bytes"] or r["self_written_bytes"])
                and max(r["total_ns"], r.get("occupied_ns") or 0) >= 0.01 * span)
    want = sorted(tuple(r["path"]) for r in doc["tree"] if gated(r))
    roof = [x for x in sug["findings"] if x["rule"] == "roofline"]
    check_eq(f"{prog}: suggest: one roofline finding per row declaring metrics (gated)",
             sorted(tuple(x["path"]) for x in roof), want)
    check(f"{prog}: suggest: roofline rows found", len(want) > 0)
    if gpu:
        check(f"{prog}: suggest: GPU sections on the GPU's roofs",
              any(x.get("roofs") == "gpu" for x in roof), repr([x.get("roofs") for x in roof]))
    bad = []
    for x in roof:
        r, ev = rows[tuple(x["path"])], x["evidence"]
        if r.get("gpu_count"):
            # its own work over its own GPU time (the GPU ranges it launched); the rates are the
            # report's gpu_self_* (the work of its timed occurrences only, doc §3.1)
            nbytes, t = r["self_read_bytes"] + r["self_written_bytes"], r["gpu_total_ns"]
            if (x.get("roofs") != "gpu" or ev["flops"] != r["self_flops"] or ev["bytes"] != nbytes
                    or ev["gpu_ns"] != t or x["class"] != "latency-bound"):
                bad.append((x["path"], x.get("roofs"), x["class"], ev, r["self_flops"], nbytes, t))
            for k, want_rate in (("gbps", r["gpu_self_gb_per_s"]), ("gflops", r["gpu_self_gflop_per_s"])):
                if (ev[k] is None) != (want_rate is None) or (
                        want_rate is not None and abs(ev[k] - want_rate) > 1e-9 * max(1.0, want_rate)):
                    bad.append((x["path"], k, ev[k], want_rate))
            continue
        nbytes = r["read_bytes"] + r["written_bytes"]
        if ev["flops"] != r["flops"] or ev["bytes"] != nbytes or ev["total_ns"] != r["total_ns"]:
            bad.append((x["path"], ev, r["flops"], nbytes, r["total_ns"]))
        elif abs(ev["gbps"] - nbytes / r["total_ns"]) > 1e-9 * max(1.0, ev["gbps"]):
            bad.append((x["path"], "gbps", ev["gbps"]))
        elif "efficiency_on_cpu_got" in x:
            # the process got too little CPU (a cpu-share finding: a busy
            # machine, as under the test suite): a section on neither roof is
            # classed on e / share with the same thresholds (doc §9)
            eg = x["efficiency_on_cpu_got"]
            cls = "-near-roof" if eg >= 0.8 else "-below-roof" if eg >= 0.6 else "latency-bound"
            if abs(eg - ev["efficiency"] / x["cpu_got"]) > 1e-9 * max(1.0, eg) or not x["class"].endswith(cls):
                bad.append((x["path"], x["class"], eg, x["cpu_got"]))
        elif x["class"] != "latency-bound":  # roofs of 1,000 GFLOP/s and GB/s: far above a real run
            bad.append((x["path"], x["class"]))
    check(f"{prog}: suggest: roofline evidence equals the report's figures", not bad, repr(bad[:3]))
    byname = [x for x in sug["findings"] if x["rule"] == "hot-section" and x.get("by_name")]
    flat = {r["name"]: r for r in doc.get("flat", [])}
    check(f"{prog}: suggest: by-name hot sections match the report's flat rows",
          all(x["name"] in flat and flat[x["name"]]["self_ns"] == x["evidence"]["self_ns"]
              and flat[x["name"]]["self_ns"] >= 0.10 * span for x in byname), repr(byname[:3]))
    hot = [x for x in sug["findings"] if x["rule"] == "hot-section" and not x.get("by_name")]
    occ = {p: r.get("occupied_ns", r["self_ns"]) for p, r in rows.items()}
    check(f"{prog}: suggest: hot sections occupy >= 10% of the thread time",
          all(occ[tuple(x["path"])] >= 0.10 * span for x in hot)
          and sorted(tuple(x["path"]) for x in hot)
          == sorted(p for p, o in occ.items() if o >= 0.10 * span), repr(hot[:3]))


# The examples' sizes without --small (which fixes 2 threads), for the default thread count; and
# runs long enough (about 1 s) for suggest to see 4 workers on 2 CPUs as oversubscribed.
SMALL_SIZES = {
    "led_optimizer": ["--pixels", "256", "--leds", "48", "--frames", "12", "--iterations", "10"],
    "compress_corpus": ["--max-files", "40", "--max-bytes", "2097152"],
}
BUSY_SIZES = {
    "led_optimizer": ["--frames", "48"],
    "compress_corpus": ["--max-bytes", "33554432"],
}
# CPUs the main thread keeps: compress_corpus's records "scan" before the workers and
# "summary" after them, so it is alive all along; led_optimizer's records nothing after.
MAIN_CPUS = {"led_optimizer": 0, "compress_corpus": 1}


def check_default_threads(build, prog, tmp):
    """Without --threads, an example starts one worker per CPU it may run on
    (less the main thread's, MAIN_CPUS), 1 to 4 (./ptz.sh demo's first finding
    was its own oversubscription: 4 workers on 2 CPUs): under this process's
    affinity and pinned to one CPU; and, on 2 CPUs or more, suggest finds no
    oversubscription in a run of about a second."""
    exe = os.path.join(build, "examples", prog)
    ana = os.path.join(build, "cli", "ptanalyze")
    if not os.path.exists(exe):
        return
    cpus = sorted(os.sched_getaffinity(0))
    trace = os.path.join(tmp, prog + ".default.ptz")
    for pinned, want in ((None, max(1, min(4, len(cpus) - MAIN_CPUS[prog]))), ({cpus[0]}, 1)):
        def pin(mask=pinned):
            if mask:
                os.sched_setaffinity(0, mask)
        try:
            p = subprocess.run([exe, "--trace", trace] + SMALL_SIZES[prog], cwd=tmp, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, timeout=300, preexec_fn=pin)
        except subprocess.TimeoutExpired:
            p = None
        m = re.search(r"\b(\d+) threads\b", p.stdout) if p is not None and p.returncode == 0 else None
        where = f"{len(cpus)} CPUs" if pinned is None else "pinned to 1 CPU"
        check_eq(f"{prog}: default worker threads on {where}", int(m.group(1)) if m else None, want)
    if len(cpus) < 2:
        print(f"skip {prog}: one CPU, where the main thread beside one worker is oversubscription")
        return
    # the trace recorded under this process's own affinity: every CPU it has. Without the process
    # counters (PTZ_PROC_MS=0), suggest judges the program's own threads (alive, against the peaks'
    # CPUs); with them it judges the machine's runnable threads, which the tests running beside this
    # one raise: a finding about the machine, not about the example's choice of workers.
    run([exe, "--trace", trace] + BUSY_SIZES[prog], cwd=tmp, env=dict(os.environ, PTZ_PROC_MS="0"))
    q = run([ana, trace, "--json", "-", "--no-progress"], cwd=tmp)
    host = json.loads(q.stdout)["trace"]["host"] if q is not None and q.returncode == 0 else ""
    peaks = os.path.join(tmp, "machine-cpus.json")
    with open(peaks, "w") as f:
        json.dump({"schema": "ptz-machine/1", "host": host, "cpus": len(cpus),
                   "fp64_gflops": {"one_core": 1000.0, "all_cores": 4000.0},
                   "memory_gbps": {"one_core": 1000.0, "all_cores": 4000.0}}, f)
    q = run([ana, "suggest", trace, "--peaks", peaks, "--json", "-", "--no-progress"], cwd=tmp)
    found = [x.get("class") for x in json.loads(q.stdout)["findings"]] if q is not None and q.returncode == 0 else None
    check(f"{prog}: suggest on {len(cpus)} CPUs finds no oversubscription by default",
          found is not None and "oversubscribed" not in found, repr(found))


def main():
    if len(sys.argv) != 2:
        print("usage: test_examples.py BUILD_DIR", file=sys.stderr)
        return 2
    build = os.path.abspath(sys.argv[1])
    if not check("ptanalyze built", os.path.exists(os.path.join(build, "cli", "ptanalyze"))):
        print(f"{passed} passed, {failed} failed")
        return 1
    with tempfile.TemporaryDirectory(prefix="ptz-examples-") as tmp:
        for prog in ("led_optimizer", "compress_corpus"):
            test_example(build, prog, tmp)
            check_default_threads(build, prog, tmp)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
