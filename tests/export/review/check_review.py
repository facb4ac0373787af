#!/usr/bin/python3
"""tests/export/review/check_review.py SRC PTANALYZE GEN_REVIEW_TRACE TMP

Export review checks (doc/export.md), TAP:
  1. A failed export removes the partial regular file it wrote, and nothing
     else: an output that is a device (a copy of /dev/full, made with mknod
     in TMP; skipped where mknod is not permitted) or a symbolic link to one
     is left in place, with exit 1, for --chrome, --perfetto and --folded.
  2. Ticks that go back across a thread's chunks (gen_review_trace
     backwards): the Perfetto export, rebuilt per track as the trace
     processor does (sort by timestamp then file order, an END closes the
     innermost open slice), and the Chrome X events hold exactly the
     expected slices, nested, each BEGIN/END taken no earlier than the
     thread's previous one; pftrace_check.py finds nothing.
  3. --since at a fractional tick (gen_review_trace since: 2.5 ticks per
     ns, --since 1 ns = tick 2.5): the Perfetto and Chrome exports keep the
     sections the analyzer keeps (from tick 3 on), not the one starting at
     tick 2 (folded stacks come from the analyzer itself).
  4. Threads whose tid was lost (gen_review_trace lost-tid: index 1
     unnamed, index 5 named "io"): both exports give each the same made-up
     tid, 1073741824 + index (doc/export.md §5), and the same name, on its
     thread track, its slices and the async range begun on one thread and
     ended on the other.
Run with /usr/bin/python3 (Debian's python3-protobuf).
"""
import json
import os
import shutil
import stat
import subprocess
import sys
from collections import defaultdict

SRC, PTANALYZE, GEN, TMP = sys.argv[1:5]
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)
sys.path.insert(0, os.path.join(SRC, "tests/export/perfetto"))
import pftrace_check  # noqa: E402

pb = pftrace_check.compile_proto(SRC, TMP)

n = 0
failed = 0


def tap(ok, desc, detail=""):
    global n, failed
    n += 1
    print(("ok" if ok else "not ok") + f" {n} - {desc}")
    if not ok:
        failed += 1
        for line in str(detail).splitlines()[:20]:
            print("# " + line)
    return ok


def skip(desc, why):
    global n
    n += 1
    print(f"ok {n} - {desc} # SKIP {why}")


def run(*args):
    return subprocess.run([PTANALYZE, *args], capture_output=True, text=True, timeout=60)


def gen(case):
    path = os.path.join(TMP, case + ".ptz")
    r = subprocess.run([GEN, path, case], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return path


GOLDEN = os.path.join(SRC, "tests/data/golden/small.ptz")

# ==== 1. a failed export removes only a regular file it wrote ====
dev = os.path.join(TMP, "full")
try:
    os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 7))  # /dev/full: every write fails with ENOSPC
    fd = os.open(dev, os.O_WRONLY)
    try:
        os.write(fd, b"x")
        mknod_ok = False  # writes succeed: not what this check needs
    except OSError:
        mknod_ok = True
    os.close(fd)
except OSError:
    mknod_ok = False
link = os.path.join(TMP, "full-link")
for kind in ("chrome", "perfetto", "folded"):
    if not mknod_ok:
        skip(f"--{kind} to a device that fails writes: left in place", "mknod not permitted or not /dev/full")
        continue
    for out in (dev, link):
        if out == link:
            if os.path.lexists(link):
                os.unlink(link)
            os.symlink("full", link)
        r = run("export", "--" + kind, out, GOLDEN)
        st = os.lstat(out) if os.path.lexists(out) else None
        kept = st is not None and (stat.S_ISCHR(st.st_mode) if out == dev else stat.S_ISLNK(st.st_mode))
        tap(r.returncode == 1 and kept and "left in place" in r.stderr,
            f"--{kind} to {'a device' if out == dev else 'a symlink to a device'} that fails writes: exit 1, "
            "left in place", f"rc={r.returncode} exists={st is not None}\n{r.stderr}")
        if not os.path.exists(dev):  # the bug removed it: recreate for the next case
            os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
# a regular file that cannot be written in full is still removed (written through a full device is not
# possible for a regular file; an unreadable trace creates nothing, see export-chrome-folded)

# ==== 2. ticks going back across a thread's chunks ====
T = 1000000000 + 1000  # gen_review_trace.c: T0 + 1000, ticks = ns
EXPECTED = sorted([  # (start ns, dur ns, depth, name): each BEGIN/END at or after the thread's previous one
    (T, 2000, 0, "outer"),
    (T + 1000, 0, 1, "inner"),       # its END (T + 500) is taken at its BEGIN
    (T + 3000, 1000, 0, "outer"),
    (T + 3000, 500, 1, "early"),     # its BEGIN (T + 2500) is taken at its parent's
    (T + 5000, 1000, 0, "after"),
])


def perfetto_slices(path):
    """Slices per track as the trace processor nests them: sorted by (ts, file order), END closes the top."""
    t = pb.Trace()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    names, default_track, evs = {}, {}, []
    for i, p in enumerate(t.packet):
        sid = p.trusted_packet_sequence_id
        if p.HasField("trace_packet_defaults"):
            default_track[sid] = p.trace_packet_defaults.track_event_defaults.track_uuid
        if p.HasField("interned_data"):
            for e in p.interned_data.event_names:
                names[(sid, e.iid)] = e.name
        if p.HasField("track_event"):
            te = p.track_event
            track = te.track_uuid if te.HasField("track_uuid") else default_track.get(sid, 0)
            name = names.get((sid, te.name_iid)) if te.HasField("name_iid") else te.name
            evs.append((p.timestamp, i, track, te.type, name))
    out, bad, stacks = [], [], defaultdict(list)
    for ts, i, track, typ, name in sorted(evs):
        st = stacks[track]
        if typ == 1:
            st.append((ts, name, len(st)))
        elif typ == 2:
            if not st:
                bad.append(f"END with nothing open at {ts}")
                continue
            b, nm, depth = st.pop()
            out.append((b, ts - b, depth, nm))
    bad += [f"never ended: {s}" for st in stacks.values() for s in st]
    return sorted(out), bad, t


def chrome_slices(path):
    with open(path) as f:
        evs = [e for e in json.load(f) if e["ph"] == "X"]
    evs.sort(key=lambda e: (e["ts"], -e["dur"]))
    out, bad, st = [], [], []
    for e in evs:
        b, end = e["ts"], e["ts"] + e["dur"]
        while st and st[-1] <= b:
            st.pop()
        if st and end > st[-1]:
            bad.append(f"{e['name']} [{b}, {end}] overlaps its parent ending at {st[-1]}")
        out.append((round(b * 1000), round(e["dur"] * 1000), len(st), e["name"]))
        st.append(end)
    return sorted(out), bad


back = gen("backwards")
pf, cj = os.path.join(TMP, "back.pftrace"), os.path.join(TMP, "back.json")
r = run("export", "--perfetto", pf, "--chrome", cj, back)
tap(r.returncode == 0, "backwards: export exit 0", r.stderr)
got, bad, trace = perfetto_slices(pf)
tap(not bad and got == EXPECTED, "backwards: Perfetto slices nest as recorded, none ends before it begins",
    "\n".join(bad) + f"\ngot {got}\nexpected {EXPECTED}")
findings = [f for f in pftrace_check.check(trace, ptz=True) if f.severity != "warning"]
tap(not findings, "backwards: pftrace_check finds nothing", "\n".join(map(str, findings)))
got, bad = chrome_slices(cj)
tap(not bad and got == EXPECTED, "backwards: Chrome X events nest as recorded",
    "\n".join(bad) + f"\ngot {got}\nexpected {EXPECTED}")

# ==== 3. --since at a fractional tick ====
since = gen("since")
rj = run(since, "--since", "0.000000001", "--json", "-")
flat = {row["name"]: row["count"] for row in json.loads(rj.stdout)["flat"]} if rj.returncode == 0 else {}
tap(flat == {"plain": 1}, "since: the analyzer keeps only the section from tick 3", f"{rj.stderr}\n{flat}")
pf, cj = os.path.join(TMP, "since.pftrace"), os.path.join(TMP, "since.json")
r = run("export", "--since", "0.000000001", "--perfetto", pf, "--chrome", cj, since)
tap(r.returncode == 0, "since: export exit 0", r.stderr)
pnames = sorted(s[3] for s in perfetto_slices(pf)[0])
tap(pnames == ["plain"], "since: Perfetto keeps what the analyzer keeps", pnames)
cnames = sorted(s[3] for s in chrome_slices(cj)[0])
tap(cnames == ["plain"], "since: Chrome JSON keeps what the analyzer keeps", cnames)

# ==== 4. a thread whose tid was lost: one made-up tid in both exports ====
lost = gen("lost-tid")
pf, cj = os.path.join(TMP, "lost.pftrace"), os.path.join(TMP, "lost.json")
r = run("export", "--perfetto", pf, "--chrome", cj, lost)
tap(r.returncode == 0, "lost-tid: export exit 0", r.stderr)
LOST = 1073741824  # doc/export.md §5: 2^30 + the recorder index
WANT_THREADS = {4321: "worker", LOST + 1: "thread 1 (tid lost)", LOST + 5: "io"}
WANT_SLICES = {("plain", 4321), ("outer", LOST + 1), ("inner", LOST + 5)}
WANT_ASYNC = [("after", LOST + 1, LOST + 5)]  # name, begin tid, end tid
t = pb.Trace()
with open(pf, "rb") as f:
    t.ParseFromString(f.read())
ptids, pslices, pasync, track_tid, default_track, names, an_names = {}, set(), [], {}, {}, {}, {}
ppids = set()
for p in t.packet:
    sid = p.trusted_packet_sequence_id
    if p.HasField("track_descriptor") and p.track_descriptor.HasField("process"):
        ppids.add(p.track_descriptor.process.pid)
    if p.HasField("track_descriptor") and p.track_descriptor.HasField("thread"):
        ppids.add(p.track_descriptor.thread.pid)
    if p.HasField("track_descriptor") and p.track_descriptor.HasField("thread"):
        th = p.track_descriptor.thread
        ptids[th.tid] = th.thread_name
        track_tid[p.track_descriptor.uuid] = th.tid
    if p.HasField("trace_packet_defaults"):
        default_track[sid] = p.trace_packet_defaults.track_event_defaults.track_uuid
    if p.HasField("interned_data"):
        names.update({(sid, e.iid): e.name for e in p.interned_data.event_names})
        an_names.update({(sid, e.iid): e.name for e in p.interned_data.debug_annotation_names})
    if p.HasField("track_event") and p.track_event.type == 1:  # TYPE_SLICE_BEGIN
        te = p.track_event
        track = te.track_uuid if te.HasField("track_uuid") else default_track.get(sid, 0)
        name = names.get((sid, te.name_iid))
        if track in track_tid:
            pslices.add((name, track_tid[track]))
        else:  # the async range: its tids are annotations
            a = {an_names.get((sid, d.name_iid)): d.uint_value for d in te.debug_annotations}
            pasync.append((name, a.get("begin_tid"), a.get("end_tid")))
tap(ptids == WANT_THREADS, "lost-tid: Perfetto thread tracks: tids 1073741824 + index, names made up alike",
    f"got {ptids}\nwant {WANT_THREADS}")
tap(pslices == WANT_SLICES and pasync == WANT_ASYNC,
    "lost-tid: Perfetto slices on those tracks, the async range's begin_tid / end_tid the same tids",
    f"got {pslices} {pasync}\nwant {WANT_SLICES} {WANT_ASYNC}")
with open(cj) as f:
    ev = json.load(f)
ctids = {e["tid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
tap(ctids == WANT_THREADS, "lost-tid: Chrome thread_name events: the Perfetto export's tids and names",
    f"got {ctids}\nwant {WANT_THREADS}")
LOST_PID = 4194305  # doc/export.md §1: above Linux's largest pid_max
tap(ppids == {LOST_PID} and {e["pid"] for e in ev if "pid" in e} == {LOST_PID},
    "lost-tid: a pid lost too: the same made-up pid in both exports",
    f"perfetto {ppids}, chrome {sorted({e.get('pid') for e in ev})}")
cslices = {(e["name"], e["tid"]) for e in ev if e["ph"] == "X"}
casync = [(b["name"], b["tid"], e["tid"]) for b in ev if b["ph"] == "b" for e in ev if e["ph"] == "e"]
tap(cslices == WANT_SLICES and casync == WANT_ASYNC, "lost-tid: Chrome X events and the async b/e on the same tids",
    f"got {cslices} {casync}\nwant {WANT_SLICES} {WANT_ASYNC}")

print(f"1..{n}")
sys.exit(1 if failed else 0)
