#!/usr/bin/env python3
"""tests/cli/check_rotate.py PTANALYZE GEN_ROTATED - ptanalyze reads the parts
of a rotated trace (doc/trace-format.md section 11) as one trace. The same
workload recorded unrotated and into 1 MiB parts must give the same section
counts in the report, --json, --csv, info and the Chrome and folded exports,
and a clean Perfetto export, whether the parts are given as files (in any
order) or by the base name the recorder was given. Also: a part alone reads
as a window; parts 1 and 3 without 2 are read with the gap named; a subset
of the parts found under one name, or parts of two runs mixed, are said;
parts of two runs in a multi-trace report are two traces. Output is TAP."""
import csv
import glob
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

ptanalyze, gen = (os.path.abspath(a) for a in sys.argv[1:3])
tmp = tempfile.mkdtemp(dir=os.environ.get("PTZ_TEST_TMPDIR"))
failed = 0
n = 0
N = 40000  # iterations a thread (2 sections, 4 incompressible samples each), two threads: ~3 MB, 1 MiB parts


def ok(cond, what):
    global failed, n
    n += 1
    print(("ok %d - %s" % (n, what)) if cond else ("not ok %d - %s" % (n, what)))
    if not cond:
        failed += 1


def ana(*args):
    return subprocess.run([ptanalyze, *args], capture_output=True, text=True)


def record(path, rotate):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    subprocess.run([gen, path, str(rotate), str(N)], check=True, stdout=subprocess.DEVNULL)


def counts_json(args):
    r = ana(*args, "--json", "-", "--no-progress")
    if r.returncode != 0:
        return None, r
    d = json.loads(r.stdout)
    rows = {}

    def walk(nodes):
        for x in nodes:
            rows[";".join(x["path"]) if isinstance(x.get("path"), list) else x.get("name")] = x.get("count")
            walk(x.get("children", []))
    walk(d["tree"])
    return (d["trace"], rows), r


def counts_csv(args):
    r = ana(*args, "--csv", "-", "--no-progress")
    rows = {(x["view"], x["thread"], x["path"]): int(x["count"]) for x in csv.DictReader(io.StringIO(r.stdout))}
    return rows, r


def chrome_counts(path):
    with open(path) as f:
        ev = json.load(f)
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    c = {}
    for e in ev:
        if e.get("ph") in ("X", "B"):
            c[e["name"]] = c.get(e["name"], 0) + 1
    return c


plain = os.path.join(tmp, "plain", "plain.ptz")
base = os.path.join(tmp, "rot", "run.ptz")
record(plain, 0)
record(base, 1 << 20)
parts = sorted(glob.glob(os.path.join(tmp, "rot", "run.*.ptz")))
ok(len(parts) >= 3 and not os.path.exists(base), "the workload took %d parts, nothing at the base name" % len(parts))
shuffled = parts[::-1]

ref, r = counts_json([plain])
ok(ref is not None and ref[0]["sections"] == 4 * N, "unrotated: --json exits 0 with every section")
for label, args in (("parts, shuffled", shuffled), ("base name", [base]), ("report verb", ["report"] + parts)):
    got, r = counts_json(args)
    ok(got is not None and r.stderr == "", "%s: --json exits 0, nothing on stderr (%s)" % (label, r.stderr.strip()[:300]))
    if got is None:
        continue
    tr, rows = got
    ok(tr["sections"] == ref[0]["sections"] and rows == ref[1],
       "%s: sections %s and per-path counts equal the unrotated trace's" % (label, tr["sections"]))
    ok(tr["unmatched_ends"] == 0 and tr["open_at_end"] == 0 and tr["lost_records"] == 0 and tr["problems"] == [],
       "%s: no unmatched END, none open at the end, nothing lost, no problem" % label)
    ro = tr.get("rotation", {})
    ok(ro.get("first_part") == 1 and ro.get("last_part") == len(parts) and ro.get("files") == len(parts),
       "%s: trace.rotation names parts 1 to %d" % (label, len(parts)))

ref_csv, _ = counts_csv([plain])
got_csv, r = counts_csv(parts)
ok(r.returncode == 0 and got_csv == ref_csv, "--csv: every row's count equals the unrotated trace's")
rep = ana(*parts, "--report", "--no-progress")
ok(rep.returncode == 0 and "rotated trace: parts 1 to %d" % len(parts) in rep.stdout, "--report says it read the parts")
info = ana("info", *shuffled)
ok(info.returncode == 0 and "parts 1 to %d read as one trace" % len(parts) in info.stdout
   and "(%d sections)" % (4 * N) in info.stdout, "info reads the parts as one trace")

outs = {}
for label, src in (("plain", [plain]), ("rot", shuffled)):
    o = {x: os.path.join(tmp, label + "." + x) for x in ("pftrace", "json", "folded")}
    ex = ana("export", "--perfetto", o["pftrace"], "--chrome", o["json"], "--folded", o["folded"], *src)
    ok(ex.returncode == 0 and ex.stderr == "", "%s: exports exit 0 (%s)" % (label, ex.stderr.strip()[:300]))
    outs[label] = o
ok(chrome_counts(outs["rot"]["json"]) == chrome_counts(outs["plain"]["json"]) and
   chrome_counts(outs["rot"]["json"]).get("outer") == 2 * N,
   "Chrome export: slices per name equal the unrotated trace's (%s)" % chrome_counts(outs["rot"]["json"]))


def folded_paths(p):
    with open(p) as f:
        return sorted(line.rsplit(" ", 1)[0] for line in f if line.strip())


ok(folded_paths(outs["rot"]["folded"]) == folded_paths(outs["plain"]["folded"]), "folded export: the same stacks")
sz = [os.path.getsize(outs[k]["pftrace"]) for k in ("plain", "rot")]
ok(sz[1] > 0 and abs(sz[1] - sz[0]) < 0.1 * sz[0], "Perfetto export: %d bytes, unrotated %d" % (sz[1], sz[0]))
ex = ana("export", "--perfetto", os.path.join(tmp, "x.pftrace"), base)
ok(ex.returncode == 0, "export by the base name exits 0")

# a part alone: a window of the run
alone = ana(parts[1], "--json", "-", "--no-progress")
tr = json.loads(alone.stdout)["trace"] if alone.returncode == 0 else {}
ok(alone.returncode == 0 and tr.get("window", {}).get("began_before", 0) >= 0 and tr.get("unmatched_ends") == 0
   and tr.get("problems") == [], "part 2 alone: a window, no unmatched END, no problem")

# parts 1 and 3 without 2 (copied apart): read, the gap named
gap = os.path.join(tmp, "gap")
os.makedirs(gap)
for p in (parts[0], parts[2]):
    shutil.copy(p, gap)
g = ana(*sorted(glob.glob(os.path.join(gap, "*.ptz"))), "--no-progress")
ok("part 3 of run" in g.stderr and "parts 2 to 2 missing" in g.stderr and
   os.path.join(gap, os.path.basename(parts[2])) in g.stderr, "parts 1 and 3: the missing part 2 is named")
ok(g.returncode == 1 and any("error: " in l and "part 3 of run" in l for l in g.stderr.splitlines()),
   "parts 1 and 3: a part lost is an error, exit 1, as damage is")

# a subset of the parts found under the name: said, exit 1
sub = ana(parts[1], parts[2])
ok(sub.returncode == 1 and "give all of its parts" in sub.stderr, "a subset of the parts: exit 1, said")

# two runs: parts of each grouped, a report of two traces
other = os.path.join(tmp, "rot2", "run.ptz")
record(other, 1 << 20)
parts2 = sorted(glob.glob(os.path.join(tmp, "rot2", "run.*.ptz")))
m = ana("report", *(parts + parts2), "--json", "-", "--no-progress")
d = json.loads(m.stdout) if m.returncode == 0 else {}
ok(m.returncode == 0 and len(d.get("traces", [])) == 2, "two runs' parts: a report of two traces")
mixed = os.path.join(tmp, "mixed")
os.makedirs(mixed)
shutil.copy(parts[0], os.path.join(mixed, "run.000001.ptz"))
shutil.copy(parts2[1], os.path.join(mixed, "run.000002.ptz"))
mx = ana(os.path.join(mixed, "run.ptz"))
ok(mx.returncode == 1 and "files of two runs" in mx.stderr, "a base name over parts of two runs: exit 1, said")

print("1..%d" % n)
shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if failed else 0)
