#!/usr/bin/env python3
"""tests/cli/check_flight.py PTANALYZE GEN_FLIGHT GEN_SNAPSHOT - every
consumer reads a flight file that wrapped and a snapshot of one
(doc/trace-format.md §10): the report, --json, info, and the Perfetto,
Chrome and folded exports exit 0 with no problem said; the JSON says what
the window is; the sections begun before the window are counted apart,
never as unmatched ENDs; the section open at the snapshot's cut is open at
its end; the Chrome export's slices nest and hold the window's sections."""
import json
import os
import subprocess
import sys
import tempfile

ptanalyze, gen_flight, gen_snap = (os.path.abspath(a) for a in sys.argv[1:4])
tmp = tempfile.mkdtemp(dir=os.environ.get("PTZ_TEST_TMPDIR"))
failed = 0
n = 0


def ok(cond, what):
    global failed, n
    n += 1
    print(("ok %d - %s" % (n, what)) if cond else ("not ok %d - %s" % (n, what)))
    if not cond:
        failed += 1


for kind, gen in (("flight", gen_flight), ("snapshot", gen_snap)):
    path = os.path.join(tmp, kind + ".ptz")
    subprocess.run([gen, path], check=True, cwd=tmp)
    rep = subprocess.run([ptanalyze, path, "--report", "--no-progress"], capture_output=True, text=True)
    ok(rep.returncode == 0 and rep.stderr == "", "%s: --report exits 0, says nothing on stderr" % kind)
    ok("window:" in rep.stdout, "%s: the report says it is a window" % kind)
    js = subprocess.run([ptanalyze, path, "--json", "-", "--no-progress"], capture_output=True, text=True)
    ok(js.returncode == 0, "%s: --json exits 0" % kind)
    tr = json.loads(js.stdout)["trace"]
    w = tr.get("window", {})
    ok(w.get("kind") == kind, "%s: trace.window.kind" % kind)
    ok(tr["unmatched_ends"] == 0 and tr["problems"] == [], "%s: no unmatched END, no problem" % kind)
    # the section left open at the cut, unless the burst overflowed the ring (slow builds): then said lost
    ok(w.get("began_before", -1) >= 0 and (tr["open_at_end"] == 1 or tr["lost_sections"] > 0),
       "%s: began before %s, open at end %s, lost sections %s" % (kind, w.get("began_before"), tr["open_at_end"],
                                                                  tr["lost_sections"]))
    if kind == "flight":
        ok(w.get("laps", 0) >= 2 and w.get("area_bytes") == 1 << 20, "flight: laps %s, area" % w.get("laps"))
    outs = {x: os.path.join(tmp, kind + "." + x) for x in ("pftrace", "json", "folded")}
    ex = subprocess.run([ptanalyze, "export", "--perfetto", outs["pftrace"], "--chrome", outs["json"], "--folded",
                         outs["folded"], path], capture_output=True, text=True)
    ok(ex.returncode == 0 and ex.stderr == "", "%s: exports exit 0 (%s)" % (kind, ex.stderr.strip()[:200]))
    ok(os.path.getsize(outs["pftrace"]) > 1000, "%s: Perfetto trace written" % kind)
    with open(outs["json"]) as f:
        ev = json.load(f)
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    slices = [e for e in ev if e.get("ph") == "X" and e.get("name") in ("outer", "inner")]
    ok(len(slices) > 1000, "%s: Chrome slices of the window (%d)" % (kind, len(slices)))
    with open(outs["folded"]) as f:
        stacks = {line.rsplit(" ", 1)[0] for line in f}
    ok("outer;inner" in stacks, "%s: folded stacks nest" % kind)
print("1..%d" % n)
sys.exit(1 if failed else 0)
