#!/usr/bin/python3
"""tests/export/agree/check_agree.py SRC PTANALYZE GEN_EDGE GEN_REVIEW GEN_GPU TMP

One semantics (replay/replay.h): the text report, the CSV, the JSON, the
Perfetto export and the Chrome JSON count the same sections, with the same
bounds, on every trace of:
  - tests/data/golden/small.ptz (unmatched ENDs, a section open at the end,
    losses), whole and with a --since/--until window;
  - every file of the corrupt corpus (tests/data/corrupt/) that a reader
    can read anything from (damage, sequence gaps, truncation);
  - the traces recorded on a real GPU, tests/data/gpu/ (CUDA event times
    mapped to the host clock, ranges resolved out of launch order);
  - the edge traces: gen-edge-trace (1/3 ns a tick, thousands of sections
    ending in one ns, a thread without tid or name), gen-review-trace
    (ticks that go back across a thread's chunks, a window at a fractional
    tick, lost tids), gen-gpu-trace (CPU sections with GPU launches,
    fixed, random and nested-snap layouts).

For each trace, per thread and call path, from each output:
  - JSON (`--json`): threads[].tree rows, the reference;
  - CSV (`--csv`): the `tree` rows of that thread: count, total, min, max
    equal the JSON's exactly; the `all` rows equal the JSON's merged tree;
  - text report: every call-tree row (path from its indentation) has the
    JSON merged tree's count;
  - Perfetto: slices on the thread's track rebuilt as the trace processor
    does (sorted by timestamp, then file order), those whose END carries
    ptz.open_at_end or ptz.cut_by_gap (open, not sections) left out:
    count exactly, durations within rounding;
  - Chrome JSON: X events of the thread's tid nested by (ts, end): count
    exactly, durations within rounding (µs doubles).
Within rounding: the analyzer sums tick differences times the slope, the
exports subtract converted instants (ticks_to_ns), and Chrome prints µs:
1 ns a section, plus 1e-6 of the total.

And they pair the same halves (replay/pair.h, rule 9: check_pairs()) on the
GPU traces, the lost-tid trace (an async range across threads) and
gen-review-trace's `pairs` case (seqs and async ids used twice, the later
side read first), whose exact pairs are checked too.

PTZ_AGREE_TRACES (optional): more traces, separated by ':', that get the
checks of tests/data/gpu's: those a live GPU just recorded
(scripts/gpu-checks.sh).

Run with /usr/bin/python3 (Debian's python3-protobuf). Output is TAP.
"""
import csv
import glob
import io
import json
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict

SRC, PTANALYZE, GEN_EDGE, GEN_REVIEW, GEN_GPU, TMP = sys.argv[1:7]
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)
sys.path.insert(0, os.path.join(SRC, "tests/export/perfetto"))
import pftrace_check  # noqa: E402

pb = pftrace_check.compile_proto(SRC, TMP)
from tap import finish, tap  # noqa: E402


def ana(*args):
    return subprocess.run([PTANALYZE, *args, "--no-progress"], capture_output=True, timeout=120)


LOST_TID_BASE = 0x40000000  # doc/export.md §5: a thread whose tid was lost


def export_tid(t):
    return t["tid"] or LOST_TID_BASE + (t["index"] & 0x3FFFFFFF)


def json_rows(j):
    """{thread index: {path: (count, total, min, max)}}, and the merged tree {path: count}."""
    per = {}
    for th in j["threads"]:
        per[th["index"]] = {tuple(r["path"]): (r["count"], r["total_ns"], r["min_ns"], r["max_ns"])
                            for r in th["tree"]}
    merged = {tuple(r["path"]): (r["count"], r["total_ns"], r["min_ns"], r["max_ns"]) for r in j.get("tree", [])}
    return per, merged


def csv_rows(text, j):
    """The CSV's tree rows by thread index (its `thread` column is the index), and its `all` rows."""
    per, merged = defaultdict(dict), {}
    for r in csv.DictReader(io.StringIO(text)):
        if r["view"] != "tree":
            continue
        v = [int(r["count"]), int(r["total_ns"]), int(r["min_ns"]), int(r["max_ns"])]
        merge(merged if r["thread"] == "all" else per[int(r["thread"])], r["path"], v)
    return per, merged


def merge(rows, key, v):
    o = rows.get(key)
    if o is None:
        rows[key] = list(v)
    else:
        o[0] += v[0]
        o[1] += v[1]
        o[2] = min(o[2], v[2])
        o[3] = max(o[3], v[3])


def joined(rows):
    """Keyed as the CSV writes a path: names joined by ';' (a name may hold one)."""
    out = {}
    for path, v in rows.items():
        merge(out, ";".join(path), v)
    return out


def visible(rows):
    """Paths as a reader of the output sees them: an ancestor that is no row (it never closed: open at
    the end, or cut by a gap) left out."""
    out = {}
    for path, v in rows.items():
        vis = tuple(path[k] for k in range(len(path)) if path[:k + 1] in rows)
        merge(out, vis, v)
    return out


# a call-tree row after its name column: count, total, self, share, ... (analyzer/ana_output.c HDR_FMT),
# 138 bytes whatever the name (names are padded in bytes, and may hold spaces or be empty)
TAIL = 138
ROW_TAIL = re.compile(rb"^ ([ ~\d]{8}) [ ~\d.]{6,7} (?:ns|us|ms|s) ")


def text_counts(text):
    """@text: bytes. The counts of the text report's call tree (all threads), in its order."""
    out, on = [], False
    for line in text.splitlines():
        if line.startswith(b"Call tree (all threads)"):
            on = True
            continue
        if on and not line.strip():
            break
        m = ROW_TAIL.match(line[-TAIL:]) if on and len(line) > TAIL else None
        if m:
            out.append(int(m.group(1).strip().lstrip(b"~")))
    return out


def perfetto_events(path):
    """The track events of a .pftrace sorted as the trace processor reads them (timestamp, then file
    order): (ts, track, type, name, annotations, flow_ids, terminating_flow_ids), and the thread
    tracks {uuid: thread index} and the track names {uuid: name}."""
    t = pb.Trace()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    threads, tnames = {}, {}
    for p in t.packet:
        if p.HasField("track_descriptor"):
            tnames[p.track_descriptor.uuid] = p.track_descriptor.name
            if p.track_descriptor.HasField("thread"):
                threads[p.track_descriptor.uuid] = p.track_descriptor.uuid & ((1 << 58) - 1)
    evs = [(ts, track, te.type, name, ann or {}, list(te.flow_ids), list(te.terminating_flow_ids))
           for ts, _i, track, te, name, ann in pftrace_check.track_events(t)]
    return evs, threads, tnames


def perfetto_slices(evs):
    """Every slice: (track, name, start, duration, annotations of its END, flow_ids,
    terminating_flow_ids and annotations of its BEGIN), in the order they begin."""
    stacks, out = defaultdict(list), []
    for ts, track, typ, name, ann, flows, terms in evs:
        if typ == 1:
            stacks[track].append(len(out))
            out.append([track, name, ts, None, None, flows, terms, ann])
        elif typ == 2 and stacks[track]:
            s = out[stacks[track].pop()]
            s[3], s[4] = ts - s[2], ann
    return out


def perfetto_rows(path):
    """{thread index: {path: [count, total, min, max]}} from the thread tracks' slices."""
    evs, threads, _ = perfetto_events(path)
    stacks = defaultdict(list)
    rows = defaultdict(dict)
    for ts, track, typ, name, ann, _f, _t in evs:
        if track not in threads or typ not in (1, 2):
            continue
        st = stacks[track]
        if typ == 1:
            st.append((name, ts))
            continue
        path = tuple(x for x, _ in st)
        _, t0 = st.pop()
        if ann.get("ptz.open_at_end") or ann.get("ptz.cut_by_gap"):
            continue
        add(rows[threads[track]], path, ts - t0)
    return rows


def add(rows, path, d):
    r = rows.get(path)
    if r is None:
        rows[path] = [1, d, d, d]
    else:
        r[0] += 1
        r[1] += d
        r[2] = min(r[2], d)
        r[3] = max(r[3], d)


def chrome_rows(path, tid_index):
    """{thread index: {path: [count, total, min, max]}} from the X events of the threads' tids
    (durations in ns, from µs doubles), and whether the nesting is ambiguous: a zero-length event at
    the instant another one on its thread starts or ends (nested or not? X events cannot tell)."""
    with open(path) as f:
        evs = [e for e in json.load(f) if e.get("ph") == "X" and e.get("tid") in tid_index]
    by = defaultdict(list)
    for i, e in enumerate(evs):
        by[e["tid"]].append((e["ts"], e["ts"] + e["dur"], -len(by[e["tid"]]), e["name"]))
    rows = defaultdict(dict)
    ambiguous = False
    for es in by.values():
        bounds = [x[0] for x in es] + [x[1] for x in es]
        ambiguous |= any(bounds.count(x[0]) > 2 for x in es if x[0] == x[1])
    for tid, es in by.items():
        # events are written at each END, a parent after its children: the file order breaks ties
        # of equal start and end (zero-length sections, sections ending in the same ns)
        order = sorted(range(len(es)), key=lambda i: (es[i][0], -es[i][1], es[i][2]))
        st = []  # (position, start, end, path)
        for i in order:
            b, e, _, name = es[i]
            while st and not (st[-1][1] <= b and e <= st[-1][2] and i < st[-1][0]):
                st.pop()
            p = (st[-1][3] if st else ()) + (name,)
            st.append((i, b, e, p))
            add(rows[tid_index[tid]], p, round((e - b) * 1000))
    return rows, ambiguous


def leaf(rows):
    """Per section name (a window drops ancestors the analyzer still names in its paths)."""
    out = {}
    for path, r in rows.items():
        o = out.setdefault(path[-1:], [0, 0, None, None])
        o[0] += r[0]
        o[1] += r[1]
        o[2] = r[2] if o[2] is None else min(o[2], r[2])
        o[3] = r[3] if o[3] is None else max(o[3], r[3])
    return out


def compare(label, what, got, want, exact):
    """Per thread and path: count exactly; durations exactly, or within rounding."""
    diffs = []
    for th in sorted(set(got) | set(want)):
        g, w = got.get(th, {}), want.get(th, {})
        if set(g) != set(w):
            diffs.append(f"thread {th}: paths only in {what} {sorted(set(g) - set(w))[:4]}, "
                         f"only in JSON {sorted(set(w) - set(g))[:4]}")
            continue
        for path in g:
            a, b = g[path], w[path]
            if a[0] != b[0]:
                diffs.append(f"thread {th} {';'.join(path)}: count {a[0]} vs JSON {b[0]}")
                continue
            tol = 0 if exact else a[0] + 1e-6 * b[1]
            one = 0 if exact else 1 + 1e-6 * b[3]
            if abs(a[1] - b[1]) > tol or abs(a[2] - b[2]) > one or abs(a[3] - b[3]) > one:
                diffs.append(f"thread {th} {';'.join(path)}: total/min/max {a[1:]} vs JSON {list(b[1:])}")
    paths = sum(len(v) for v in want.values())
    sections = sum(r[0] for v in want.values() for r in v.values())
    tap(not diffs, f"{label}: {what} = JSON ({sections} sections on {paths} paths)", "\n".join(diffs))
    return sections


def check(trace, label, window=None):
    extra = []
    if window:
        extra = ["--since", window[0], "--until", window[1]]
    rj = ana(trace, "--json", "-", *extra)
    try:
        j = json.loads(rj.stdout)
    except ValueError:
        tap(rj.returncode == 1 and not rj.stdout, f"{label}: unreadable, exit 1 and no report",
            rj.stderr.decode())
        return 0
    rc = rj.returncode
    rcsv, rtxt = ana(trace, "--csv", "-", *extra), ana(trace, "--report", *extra)
    tap(rcsv.returncode == rc and rtxt.returncode == rc, f"{label}: --csv, --report exit as --json ({rc})",
        f"{rcsv.returncode} {rtxt.returncode}: {rtxt.stderr.decode()}")
    per, merged = json_rows(j)
    # the CSV writes names as recorded; the JSON replaces each invalid UTF-8 byte by '?'
    cper, cmerged = csv_rows(rcsv.stdout.decode(errors="replace").replace("\ufffd", "?"), j)
    total = compare(label, "CSV", cper, {k: joined(v) for k, v in per.items()}, True)
    compare(label, "CSV (all threads)", {0: cmerged}, {0: joined(merged)}, True)
    # the text tree shows the paths that closed (visible()); its counts, as a multiset
    txt, want = sorted(text_counts(rtxt.stdout)), sorted(v[0] for v in visible(merged).values())
    tap(txt == want, f"{label}: text report's call tree = JSON ({len(txt)} rows, {sum(txt)} sections)",
        f"text {txt[:30]}\nJSON {want[:30]}")

    pf, cj = os.path.join(TMP, label + ".pftrace"), os.path.join(TMP, label + ".json")
    re_ = subprocess.run([PTANALYZE, "export", "--perfetto", pf, "--chrome", cj, trace, *extra],
                         capture_output=True, timeout=120)
    if not tap(re_.returncode == rc and os.path.exists(pf) and os.path.exists(cj),
               f"{label}: export exits as --json ({rc}) and writes both", re_.stderr.decode()):
        return total
    tid_index = {export_tid(t): t["index"] for t in j["threads"]}
    prow, (crow, ambiguous) = perfetto_rows(pf), chrome_rows(cj, tid_index)
    # Chrome leaves open sections out (doc/export.md §4): what they enclose is nested without them
    want, cwant = per, {k: visible(v) for k, v in per.items()}
    if window:
        prow = {k: leaf(v) for k, v in prow.items()}
        crow = {k: leaf(v) for k, v in crow.items()}
        want = cwant = {k: leaf(v) for k, v in per.items()}
    elif ambiguous:  # compared by name (corrupt-clock-zero-slope: every tick is one instant)
        crow = {k: leaf(v) for k, v in crow.items()}
        cwant = {k: leaf(v) for k, v in per.items()}
    nonempty = lambda rows: {k: v for k, v in rows.items() if v}  # noqa: E731
    compare(label, "Perfetto", nonempty(prow), nonempty(want), False)
    compare(label, "Chrome JSON", nonempty(crow), nonempty(cwant), False)
    return total


def flows_by_name(starts, ends):
    """{CPU section name: [GPU ranges reached, their total ns]}: each flow start (ts, id, name) binds
    to the next flow end (ts, id, ns) of its id, in time order, as the viewers bind them."""
    out, open_ = {}, defaultdict(list)
    for ts, kind, fid, x in sorted([(ts, 0, i, n) for ts, i, n in starts] + [(ts, 1, i, d) for ts, i, d in ends]):
        if kind == 0:
            open_[fid].append(x)
        elif open_[fid]:
            o = out.setdefault(open_[fid].pop(0), [0, 0])
            o[0] += 1
            o[1] += x
    return out


def same_sums(got, want):
    """Per name: counts exactly, totals within rounding (1 ns a range)."""
    return got.keys() == want.keys() and all(
        got[k][0] == want[k][0] and (want[k][1] is None or abs(got[k][1] - want[k][1]) <= want[k][0])
        for k in want)


def check_pairs(trace, label):
    """Rule 9 (replay/pair.h): the report and both exports pair the same GPU launches with the same GPU
    ranges and the same async begins with the same ends:
      - per section name, the JSON's gpu_count and gpu_total_ns = the GPU slices the Perfetto flows from
        that name's slices reach, with their measured length (the drawn one plus the start moved to the
        launch, gpu_start_offset_ns, or past the range before, gpu_start_snapped_ns: doc/export.md §4);
        the Chrome flows reach GPU events of the drawn lengths;
      - per async name, the count and total of the ranges that ended; the begins never ended and the
        ends without a begin, counted alike."""
    j = json.loads(ana(trace, "--json", "-").stdout)
    gpu_want = {}
    for th in j["threads"]:
        for r in th["tree"]:
            if r.get("gpu_count"):
                o = gpu_want.setdefault(r["path"][-1], [0, 0])
                o[0] += r["gpu_count"]
                o[1] += r["gpu_total_ns"]
    a = j.get("async", {})
    async_want = {r["name"]: [r["count"], r["total_ns"]] for r in a.get("by_name", [])}
    async_want["(never ended)"] = [a.get("unmatched_begins", 0), None]
    async_want["(ends without a begin)"] = [a.get("unmatched_ends", 0), None]

    pf, cj = os.path.join(TMP, label + "-pairs.pftrace"), os.path.join(TMP, label + "-pairs.json")
    r = subprocess.run([PTANALYZE, "export", "--perfetto", pf, "--chrome", cj, trace], capture_output=True,
                       timeout=120)
    if not tap(r.returncode == 0, f"{label}: export", r.stderr.decode()):
        return
    evs, _threads, tnames = perfetto_events(pf)
    sl = perfetto_slices(evs)
    starts = [(s[2], f, s[1]) for s in sl for f in s[5]]
    ends = [(s[2], f, s[3] + s[7].get("gpu_start_snapped_ns", 0) - s[7].get("gpu_start_offset_ns", 0))
            for s in sl for f in s[6]]
    drawn = flows_by_name(starts, [(s[2], f, s[3]) for s in sl for f in s[6]])
    async_got = {"(never ended)": [0, None], "(ends without a begin)": [0, None]}
    for s in sl:
        if tnames.get(s[0]) != "async ranges":
            continue
        if s[4].get("ptz.open_at_end"):
            async_got["(never ended)"][0] += 1
            continue
        o = async_got.setdefault(s[1], [0, 0])
        o[0] += 1
        o[1] += s[3]
    for ts, track, typ, name, ann, _f, _t in evs:
        if typ == 3 and name == "ptz: async ends without a begin":
            async_got["(ends without a begin)"][0] += ann.get("count", 0)
    tap(same_sums(flows_by_name(starts, ends), gpu_want),
        f"{label}: Perfetto flows reach the GPU ranges the report pairs ({sum(v[0] for v in gpu_want.values())})",
        f"{flows_by_name(starts, ends)}\nJSON {gpu_want}")
    tap(same_sums(async_got, async_want), f"{label}: Perfetto async ranges = the report's pairs",
        f"{async_got}\nJSON {async_want}")

    with open(cj) as f:
        ce = json.load(f)
    us = lambda x: round(x * 1000)  # noqa: E731
    # a flow's ends bind to slices starting at its instant; where several do (a GPU section's child
    # launched at its start tick), the pair is the CPU and GPU slice of one name (a range is named
    # after its section)
    xs = defaultdict(list)
    for e in ce:
        if e.get("ph") == "X":
            xs[(e["tid"], e["ts"])].append(e)
    fl = sorted((e for e in ce if e.get("ph") in ("s", "f")), key=lambda e: (e["ts"], e["ph"] != "s"))
    cflows, open_ = {}, defaultdict(list)
    for e in fl:
        if e["ph"] == "s":
            open_[e["id"]].append(e)
            continue
        s0 = open_[e["id"]].pop(0)
        gpu = {x["name"]: x for x in reversed(xs[(e["tid"], e["ts"])])}
        name = next(x["name"] for x in xs[(s0["tid"], s0["ts"])] if x["name"] in gpu)
        o = cflows.setdefault(name, [0, 0])
        o[0] += 1
        o[1] += us(gpu[name]["dur"])
    casync = {"(never ended)": [0, None], "(ends without a begin)": [0, None]}
    begun = {}
    for e in sorted((e for e in ce if e.get("ph") in ("b", "e")), key=lambda e: (e["ts"], e["ph"] != "b")):
        if e["ph"] == "b":
            begun.setdefault(e["id"], []).append(e)
            continue
        b = begun[e["id"]].pop(0)
        if e.get("args", {}).get("ptz.open_at_end"):
            casync["(never ended)"][0] += 1
            continue
        o = casync.setdefault(b["name"], [0, 0])
        o[0] += 1
        o[1] += us(e["ts"] - b["ts"])
    for e in ce:
        if e.get("ph") == "i" and e.get("name") == "ptz: async ends without a begin":
            casync["(ends without a begin)"][0] += e["args"]["count"]
    tap(same_sums(cflows, drawn), f"{label}: Chrome flows reach the GPU ranges Perfetto's do",
        f"{cflows}\nPerfetto {drawn}")
    tap(same_sums(casync, async_want), f"{label}: Chrome async ranges = the report's pairs",
        f"{casync}\nJSON {async_want}")
    return j


def gen(exe, name, *args):
    out = os.path.join(TMP, name + ".ptz")
    r = subprocess.run([exe, out, *args], capture_output=True, text=True)
    if r.returncode != 0:
        tap(False, f"{name}: generate", r.stderr)
        return None
    return out


golden = os.path.join(SRC, "tests/data/golden/small.ptz")
sections = check(golden, "golden")
check(golden, "golden-window", ("0.000000", "0.000004"))
for path in sorted(glob.glob(os.path.join(SRC, "tests/data/corrupt/*.ptz"))):
    sections += check(path, "corrupt-" + os.path.basename(path)[:-4])
cases = [(GEN_EDGE, "edge"), (GEN_EDGE, "edge-bad-utf8", "--bad-utf8"),
         (GEN_REVIEW, "review-backwards", "backwards"), (GEN_REVIEW, "review-since", "since"),
         (GEN_REVIEW, "review-lost-tid", "lost-tid"), (GEN_GPU, "gpu"), (GEN_GPU, "gpu-random", "--random", "7"),
         (GEN_GPU, "gpu-snapnest", "--snapnest")]
for exe, name, *args in cases:
    p = gen(exe, name, *args)
    if p:
        sections += check(p, name)
back = os.path.join(TMP, "review-backwards.ptz")
if os.path.exists(back):
    # ticks going back across chunks (gen_review_trace.c case_backwards): the analyzer too takes a BEGIN or
    # END no earlier than the thread's previous record, so "early" lasts 500 ns from its parent's start
    j = json.loads(ana(back, "--json", "-").stdout)
    got = {tuple(r["path"]): (r["count"], r["total_ns"]) for r in j["threads"][0]["tree"]}
    want = {("outer",): (2, 3000), ("outer", "inner"): (1, 0), ("outer", "early"): (1, 500), ("after",): (1, 1000)}
    tap(got == want, "review-backwards: the analyzer raises ticks that go back to the thread's latest",
        f"{got}\nwant {want}")
for exe, name, *args in [(GEN_GPU, "gpu"), (GEN_GPU, "gpu-random", "--random", "7"),
                         (GEN_REVIEW, "review-lost-tid", "lost-tid"), (GEN_REVIEW, "review-pairs", "pairs")]:
    p = os.path.join(TMP, name + ".ptz")
    if name == "review-pairs":
        p = gen(exe, name, *args)
    j = check_pairs(p, name) if p else None
    if name == "review-pairs" and j:
        # gen_review_trace.c case_pairs: seq 5 launched twice and resolved twice (200 ns, then 500 ns), seq 6
        # once (100 ns); seq 7 never resolved, seq 8 never launched, a 1.0-style range with seq 0; async
        # id 9 begun twice and ended twice on another thread (100 ns each, the ends read first), ids 0
        # and 12 never ended, id 11 ended without a begin
        g, a = j["gpu"], j["async"]
        got = (g["paired"], g["unmatched_launches"], g["unmatched_ranges"], a["unmatched_begins"],
               a["unmatched_ends"], [(r["name"], r["count"], r["total_ns"]) for r in a["by_name"]],
               sorted((r["path"][-1], r["gpu_count"], r["gpu_total_ns"], r["gpu_max_ns"])
                      for r in j["threads"][0]["tree"] if r["gpu_count"]))
        want = (3, 1, 2, 2, 1, [("fetch", 2, 200)], [("gemm", 3, 800, 500)])
        tap(got == want, "review-pairs: the k-th launch or begin of a key pairs with its k-th range or end",
            f"{got}\nwant {want}")
# traces recorded on a real GPU (tests/data/gpu/README.md), and any given in PTZ_AGREE_TRACES
real = sorted(glob.glob(os.path.join(SRC, "tests/data/gpu/*.ptz")))
tap(len(real) > 0, "tests/data/gpu holds real GPU traces", str(real))
for path in real + list(filter(None, os.environ.get("PTZ_AGREE_TRACES", "").split(":"))):
    name = "real-" + os.path.basename(path)
    sections += check(path, name)
    j = check_pairs(path, name)
    if j is not None:
        g = j["gpu"]
        tap(g["paired"] > 0 and g["unmatched_launches"] == 0 and g["unmatched_ranges"] == 0,
            f"{name}: every GPU launch paired with its range", repr(g))
tap(sections > 1000, f"the traces hold {sections} sections in all (the check is not empty)")
sys.exit(finish())
