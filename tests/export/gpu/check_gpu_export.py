#!/usr/bin/python3
"""tests/export/gpu/check_gpu_export.py - GPU ranges, flows, async ranges,
instants and the "ptz-gpu" thread in the Perfetto and Chrome JSON exports
(doc/export.md), on the trace gen_gpu_trace.c writes with chosen ticks.
TAP output. Run with /usr/bin/python3 (Debian's python3-protobuf).

usage: check_gpu_export.py SRC_DIR EXPORTER PTANALYZE GEN_GPU_TRACE TMPDIR

Perfetto (decoded with python3-protobuf from our .proto):
  - `protoc --decode` shows no unknown field; the offline trace-processor
    checker (tests/export/perfetto/pftrace_check.py) finds nothing at all;
  - tracks: exactly the thread tracks of "main" and "worker" ("ptz-gpu" has
    no sections, so no track), "GPU 0" / "GPU 1" under the process, the
    stream tracks under their device (two lanes for stream 8), two "async
    ranges" lanes, and the two "ptz-gpu" counters process-scoped in bytes;
  - slices rebuilt per track after sorting by (timestamp, file order) as
    the trace processor does: exact names, start, duration, depth, flow ids,
    terminating flow ids and debug annotations (gpu_start_offset_ns = -50 on
    the clamped range, gpu_start_snapped_ns = 1 on the one moved over 1 ns
    of jitter, begin_tid / end_tid, ptz.open_at_end), instants and counter
    values;
  - flows: each id on exactly one CPU BEGIN and one GPU BEGIN, the GPU one
    not earlier; none for the launch whose range was lost;
  - the same with a window (--since 0 --until 1000 ns): only ranges, flows
    and async ranges lying inside it.
Chrome JSON: thread names (GPU pseudo threads, no "ptz-gpu"), the X events
of every thread and pseudo thread, s/f flow pairs bound to the right
slices, b/e pairs with their ids, i events (the "ptz-gpu" thread's recorder
error among them, process-scoped with Perfetto's args), C events, no args
on X events.

Random traces (gen_gpu_trace --random SEED, which prints what they hold):
hundreds of GPU ranges that overlap, nest, partially overlap, start early
or 1 ns before the previous range of their stream ends, written in random
order, and async ranges across threads. Both exports must hold every range
exactly once at its clamped times (a start moved over jitter by at most
1 us and 1% of its range, and Perfetto saying by how much) on its device's
and stream's track(s), rebuilt as the trace processor nests them (so any
mis-nesting on a track shows as a wrong end); every async
lane at depth 0 only (no two ranges of a lane overlap); a flow for every
launch whose range exists; the unmatched ends counted; the checker finds
no error.
"""
import json
import os
import re
import subprocess
import sys
from collections import defaultdict

SRC, EXPORTER, PTANALYZE, GEN, TMP = sys.argv[1:6]
PROTO_DIR = os.path.join(SRC, "viewer-export/perfetto/protos")
PROTO = "perfetto_trace_subset.proto"
os.makedirs(TMP, exist_ok=True)
sys.path.insert(0, os.path.join(SRC, "tests/export/perfetto"))
import pftrace_check  # noqa: E402

pb = pftrace_check.compile_proto(SRC, TMP)
from tap import tap, finish  # noqa: E402

T0 = 1000000  # ns: the trace's start on CLOCK_MONOTONIC (gen_gpu_trace.c)
GPU_TID = 8388608  # first Chrome GPU pseudo thread (pfx_chrome.c)


def same(got, want, name):
    return tap(got == want, name, f"got:  {got!r}\nwant: {want!r}")


# ==== expected (times in ns after T0) ====
# (track, name, start, dur, depth, flow ids, terminating flow ids, annotations)
CPU = {
    "main": [("step", 100, 900, 0, (), (), {}),
             ("kernA", 200, 100, 1, (1,), (), {}),
             ("kernB", 400, 50, 1, (2,), (), {}),
             ("copy", 500, 100, 1, (3,), (), {}),
             ("kernA", 1100, 100, 0, (4,), (), {}),
             ("kernB", 1300, 50, 0, (), (), {}),  # seq 5: GPU half lost, no flow
             ("outer", 2000, 200, 0, (6,), (), {}),
             ("kernA", 2010, 90, 1, (7,), (), {}),
             ("kernB", 2120, 10, 1, (8,), (), {})],
    "worker": [("work", 50, 30, 0, (), (), {}),
               # rates over the 5 ns CPU slice, as before; the GPU range's over its GPU time
               ("kernB", 590, 5, 0, (9,), (), {"read_bytes": 600, "flops": 400, "d2d_bytes": 1000,
                                                "gb_per_s": 120.0, "gflop_per_s": 80.0}),
               ("work", 1100, 150, 0, (), (), {}),
               ("outer", 1300, 30, 0, (10,), (), {}),
               ("copy", 1310, 10, 1, (11,), (), {}),
               ("kernA", 1500, 10, 0, (12,), (), {}),
               ("kernB", 1520, 10, 0, (13,), (), {})],
}
GPU = {
    "GPU 0/stream 7#0": [("kernA", 250, 250, 0, (), (1,), {}),
                         ("kernA", 1100, 80, 0, (), (4,), {"gpu_start_offset_ns": -50}),
                         ("outer", 2040, 110, 0, (), (6,), {}),
                         ("kernA", 2050, 40, 1, (), (7,), {}),
                         ("kernB", 2150, 20, 0, (), (8,), {})],
    "GPU 0/stream 8#0": [("kernB", 420, 280, 0, (), (2,), {})],
    "GPU 0/stream 8#1": [("kernB", 600, 200, 0, (), (9,), {"gpu_gb_per_s": 3.0, "gpu_gflop_per_s": 2.0,
                                                           "gpu_d2d_gb_per_s": 5.0})],
    "GPU 1/stream 7#0": [("copy", 520, 60, 0, (), (3,), {}),
                         ("outer", 1400, 100, 0, (), (10,), {}),  # same start as its child:
                         ("copy", 1400, 50, 1, (), (11,), {})],  # still one track, nested
    # seq 13 starts 1 ns before seq 12 ends: jitter, moved to that end
    "GPU 1/stream 9#0": [("kernA", 1600, 200, 0, (), (12,), {}),
                         ("kernB", 1800, 200, 0, (), (13,), {"gpu_start_snapped_ns": 1})],
}
ASYNC = {
    "async ranges#0": [("load", 150, 750, 0, (), (), {"begin_tid": 100, "end_tid": 101}),
                       ("phase", 950, 450, 0, (), (), {"begin_tid": 101, "end_tid": 101}),
                       ("phase", 1500, 700, 0, (), (), {"begin_tid": 100, "ptz.open_at_end": True})],
    "async ranges#1": [("load", 300, 400, 0, (), (), {"begin_tid": 100, "end_tid": 100}),
                       ("load", 800, 50, 0, (), (), {"begin_tid": 101, "end_tid": 101})],
}
INSTANTS = {
    "main": [("mark", 650, {})],
    "worker": [("mark", 820, {})],
    "process": [("gpu timing note", 10, {}),
                ("ptz: async ends without a begin", 1000, {"count": 1}),
                ("ptz: recorder error", 1210, {"error": "gpu_early_start", "count": 1})],
}
COUNTERS = {
    "device memory used (all processes)": [(260, 1073741824), (1220, 2147483648)],
    "process RSS": [(260, 50000000), (1220, 60000000)],
}


def window(exp, lo, hi):
    """Slices lying entirely inside [lo, hi]."""
    return {k: [s for s in v if s[1] >= lo and s[1] + s[2] <= hi] for k, v in exp.items()}


# ==== Perfetto ====
UNKNOWN = re.compile(r"^\s*[0-9]+:", re.M)


def perfetto_model(t):
    """Tracks labelled by role, slices rebuilt per track, instants, counters."""
    desc = {}
    for p in t.packet:
        if p.HasField("track_descriptor"):
            d = p.track_descriptor
            desc[d.uuid] = d
    label = {}
    lanes = defaultdict(int)
    for uuid in sorted(desc):
        d = desc[uuid]
        if d.HasField("process"):
            label[uuid] = "process"
        elif d.HasField("thread"):
            label[uuid] = d.thread.thread_name
        elif d.HasField("counter"):
            label[uuid] = "counter:" + d.name
        elif d.parent_uuid in desc and desc[d.parent_uuid].name.startswith("GPU "):
            base = desc[d.parent_uuid].name + "/" + d.name
            label[uuid] = f"{base}#{lanes[base]}"
            lanes[base] += 1
        elif d.name == "async ranges":
            label[uuid] = f"async ranges#{lanes['async']}"
            lanes["async"] += 1
        else:
            label[uuid] = d.name
    evs = pftrace_check.track_events(t)
    stacks = defaultdict(list)
    slices = defaultdict(list)
    instants = defaultdict(list)
    counters = defaultdict(list)
    for ts, i, track, te, name, ann in evs:
        name = name or None
        lab = label.get(track, f"?{track}")
        if te.type == 1:
            s = [name, ts - T0, None, len(stacks[track]), tuple(te.flow_ids), tuple(te.terminating_flow_ids),
                 dict(ann)]
            stacks[track].append(s)
            slices[lab].append(s)
        elif te.type == 2:
            s = stacks[track].pop()
            s[2] = ts - T0 - s[1]
            s[6].update(ann)
        elif te.type == 3:
            instants[lab].append((name, ts - T0, ann))
        elif te.type == 4:
            counters[lab[len("counter:"):]].append((ts - T0, te.counter_value))
    slices = {k: [tuple(s) for s in v] for k, v in slices.items()}
    return desc, label, slices, instants, counters


def export_perfetto(trace, name, win=None):
    out = os.path.join(TMP, name + ".pftrace")
    r = subprocess.run([EXPORTER, trace, out] + ([str(win[0]), str(win[1])] if win else []), capture_output=True)
    if not tap(r.returncode == 0, f"{name}: export-perfetto", r.stderr.decode()):
        return None
    with open(out, "rb") as fh:
        data = fh.read()
    d = subprocess.run(["protoc", "-I", PROTO_DIR, "--decode=perfetto.protos.Trace", PROTO], input=data,
                       capture_output=True)
    tap(d.returncode == 0 and not UNKNOWN.search(d.stdout.decode()), f"{name}: protoc --decode, no unknown fields",
        d.stderr.decode())
    t = pb.Trace()
    t.ParseFromString(data)
    fs = pftrace_check.check(t, ptz=True)
    tap(not fs, f"{name}: trace-processor checker finds nothing",
        "\n".join(f"{x.severity} {x.rule} {x.packet} {x.msg}" for x in fs))
    return t


def check_perfetto(trace):
    t = export_perfetto(trace, "gpu")
    if t is None:
        return
    desc, label, slices, instants, counters = perfetto_model(t)
    threads = sorted((d.thread.tid, d.thread.thread_name) for d in desc.values() if d.HasField("thread"))
    same(threads, [(100, "main"), (101, "worker")], "perfetto: thread tracks main and worker, none for ptz-gpu")
    procs = [u for u, d in desc.items() if d.HasField("process")]
    same(len(procs), 1, "perfetto: one process track")
    proc = procs[0]
    gpus = sorted((d.name, d.parent_uuid == proc) for d in desc.values() if d.name.startswith("GPU "))
    same(gpus, [("GPU 0", True), ("GPU 1", True)], "perfetto: a GPU track per device under the process")
    streams = sorted((desc[d.parent_uuid].name, d.name) for d in desc.values()
                     if d.name.startswith("stream ") and d.parent_uuid in desc)
    same(streams, [("GPU 0", "stream 7"), ("GPU 0", "stream 8"), ("GPU 0", "stream 8"), ("GPU 1", "stream 7"),
                   ("GPU 1", "stream 9")],
         "perfetto: stream tracks under their device (stream 8 has an overlap lane)")
    asyncs = [d for d in desc.values() if d.name == "async ranges"]
    same([d.parent_uuid == proc for d in asyncs], [True, True], "perfetto: two async lanes under the process")
    ctr = sorted((d.name, d.parent_uuid == proc, d.counter.unit) for d in desc.values() if d.HasField("counter"))
    same(ctr, [("device memory used (all processes)", True, 3), ("process RSS", True, 3)],
         "perfetto: ptz-gpu counters are process-scoped, UNIT_SIZE_BYTES")
    same(len(desc), len({d.uuid for d in desc.values()}), "perfetto: unique track uuids")
    for lab, want in list(CPU.items()) + list(GPU.items()) + list(ASYNC.items()):
        same(slices.get(lab), want, f"perfetto: slices of {lab}")
    same(sorted(k for k in slices), sorted(list(CPU) + list(GPU) + list(ASYNC)), "perfetto: no other slice tracks")
    same(dict(instants), INSTANTS, "perfetto: instants (threads, process: ptz-gpu's, the error, unmatched ends)")
    same(dict(counters), COUNTERS, "perfetto: counter values")
    src = {f: (lab, s[1]) for lab, v in slices.items() for s in v for f in s[4]}
    dst = {f: (lab, s[1]) for lab, v in slices.items() for s in v for f in s[5]}
    nsrc = sum(len(s[4]) for v in slices.values() for s in v)
    ndst = sum(len(s[5]) for v in slices.values() for s in v)
    ids = [1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13]
    same((sorted(src), nsrc, sorted(dst), ndst), (ids, len(ids), ids, len(ids)),
         "perfetto: flow ids = launch seqs, each once per end, none for the lost GPU half")
    bad = [f for f in src if src[f][0] not in CPU or not dst[f][0].startswith("GPU") or dst[f][1] < src[f][1]]
    same(bad, [], "perfetto: flows go from a CPU slice to a GPU slice starting no earlier")

    # window [0, 1000] ns after the start
    t = export_perfetto(trace, "gpu-window-0-1000", (0, 1000))
    if t is None:
        return
    _, _, slices, instants, _ = perfetto_model(t)
    wg = {k: v for k, v in window(GPU, 0, 1000).items() if v}
    wa = {k: v for k, v in window(ASYNC, 0, 1000).items() if v}
    wc = window(CPU, 0, 1000)
    # a CPU section keeps its flow only if its GPU range is kept too
    kept = {f for v in wg.values() for s in v for f in s[5]}
    wc = {k: [s[:4] + (tuple(f for f in s[4] if f in kept),) + s[5:] for s in v] for k, v in wc.items()}
    same({k: slices.get(k) for k in wg}, wg, "perfetto window: GPU ranges inside it")
    same({k: slices.get(k) for k in wa}, wa, "perfetto window: async ranges inside it")
    same({k: slices.get(k) for k in wc}, wc, "perfetto window: CPU sections, flows only to kept ranges")
    same(sorted(kept), [1, 2, 3, 9], "perfetto window: flows 1, 2, 3, 9")
    same(instants.get("process"), [("gpu timing note", 10, {}), ("ptz: async ends without a begin", 1000, {"count": 1})],
         "perfetto window: process instants inside it")


# ==== Chrome JSON ====
def us_to_ns(v):
    return round(v * 1000) - T0


def check_chrome(trace):
    out = os.path.join(TMP, "gpu.json")
    r = subprocess.run([PTANALYZE, "export", "--chrome", out, trace], capture_output=True)
    if not tap(r.returncode == 0 and not r.stderr, "chrome: export --chrome exits 0, quiet", r.stderr.decode()):
        return
    with open(out, encoding="utf-8") as fh:
        ev = json.load(fh)
    tnames = {e["tid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    same(tnames, {100: "main", 101: "worker", GPU_TID: "GPU 0 stream 7", GPU_TID + 1: "GPU 0 stream 8",
                  GPU_TID + 2: "GPU 0 stream 8 (overlap 1)", GPU_TID + 3: "GPU 1 stream 7",
                  GPU_TID + 4: "GPU 1 stream 9"},
         "chrome: thread names, GPU pseudo threads, no ptz-gpu")
    same([e for e in ev if e.get("tid") == 102], [], "chrome: nothing on the ptz-gpu thread")
    xs = [e for e in ev if e["ph"] == "X"]
    same([e for e in xs if "args" in e], [], "chrome: no args on X events")
    lab = {100: "main", 101: "worker", GPU_TID: "GPU 0/stream 7#0", GPU_TID + 1: "GPU 0/stream 8#0",
           GPU_TID + 2: "GPU 0/stream 8#1", GPU_TID + 3: "GPU 1/stream 7#0", GPU_TID + 4: "GPU 1/stream 9#0"}
    got = defaultdict(list)
    for e in xs:
        got[lab.get(e["tid"], e["tid"])].append((e["name"], us_to_ns(e["ts"]), us_to_ns(e["ts"] + e["dur"])))
    want = {k: sorted((s[0], s[1], s[1] + s[2]) for s in v) for k, v in list(CPU.items()) + list(GPU.items())}
    same({k: sorted(v) for k, v in got.items()}, want, "chrome: X events of threads and GPU pseudo threads")
    # flows: s at the CPU section's start on its thread, f (bp e) at the GPU range's start
    fl = defaultdict(dict)
    for e in ev:
        if e["ph"] in ("s", "f"):
            fl[e["id"]][e["ph"]] = (lab.get(e["tid"]), us_to_ns(e["ts"]), e.get("bp"), e["name"], e["cat"])
    wantfl = {}
    for k, v in CPU.items():
        for s in v:
            for f in s[4]:
                wantfl.setdefault(f, {})["s"] = (k, s[1], None, "gpu launch", "ptz.flow")
    for k, v in GPU.items():
        for s in v:
            for f in s[5]:
                wantfl.setdefault(f, {})["f"] = (k, s[1], "e", "gpu launch", "ptz.flow")
    same(dict(fl), wantfl, "chrome: s/f flow pairs (id = seq, f with bp e) at the slices' starts")
    # every s/f lies at the start of an X event on its thread, which it binds to
    starts = {(e["tid"], e["ts"]) for e in xs}
    same([e for e in ev if e["ph"] in ("s", "f") and (e["tid"], e["ts"]) not in starts], [],
         "chrome: every flow event sits at an X event's start")
    asy = defaultdict(list)
    for e in ev:
        if e["ph"] in ("b", "e"):
            asy[e["id"]].append((e["ph"], e["name"], e["cat"], e["tid"], us_to_ns(e["ts"]), e.get("args")))
    same(dict(asy), {
        "0x100": [("b", "load", "ptz", 100, 150, None), ("e", "load", "ptz", 101, 900, None)],
        "0x101": [("b", "load", "ptz", 100, 300, None), ("e", "load", "ptz", 100, 700, None)],
        "0x104": [("b", "load", "ptz", 101, 800, None), ("e", "load", "ptz", 101, 850, None)],
        "0x102": [("b", "phase", "ptz", 101, 950, None), ("e", "phase", "ptz", 101, 1400, None)],
        "0x103": [("b", "phase", "ptz", 100, 1500, None),
                  ("e", "phase", "ptz", 100, 2200, {"ptz.open_at_end": True})],
    }, "chrome: async b/e pairs by id (crossing threads, open one closed at the end, unmatched end skipped)")
    inst = sorted((e["name"], e["s"], e.get("tid"), us_to_ns(e["ts"]), e.get("args")) for e in ev if e["ph"] == "i")
    same(inst, [("gpu timing note", "p", None, 10, None), ("mark", "t", 100, 650, None),
                ("mark", "t", 101, 820, None), ("ptz: async ends without a begin", "p", None, 1000, {"count": 1}),
                ("ptz: recorder error", "p", None, 1210, {"error": "gpu_early_start", "count": 1})],
         "chrome: instants (thread-scoped; ptz-gpu's, its recorder error and the unmatched-end count "
         "process-scoped, as in Perfetto)")
    ctr = defaultdict(list)
    for e in ev:
        if e["ph"] == "C":
            ctr[e["name"]].append((us_to_ns(e["ts"]), e["args"]["value"]))
    same(dict(ctr), COUNTERS, "chrome: counters process-wide")


# ==== random traces ====
def check_random(seed):
    trace = os.path.join(TMP, f"random-{seed}.ptz")
    r = subprocess.run([GEN, trace, "--random", str(seed)], capture_output=True)
    if not tap(r.returncode == 0, f"random {seed}: gen_gpu_trace --random", r.stderr.decode()):
        return
    x = json.loads(r.stdout)
    tname = {0: "main", 1: "worker"}
    linked = {g[1] for g in x["gpu"]}
    # by seq: track, name, clamped start, end, raw offset (if clamped)
    want_gpu = {g[1]: (f"GPU {g[2]}/stream {g[3]}", g[0], g[4], g[5], g[6] if g[6] < 0 else None) for g in x["gpu"]}

    def gpu_diffs(got, annotated):
        """got: seq -> (track, name, start, end, offset, snapped annotation).
        A start may move over jitter, by at most 1 us and 1% of the range
        (pfx_ranges.h), and then (if @annotated) says by how much; all else
        is exact."""
        bad = []
        if set(got) != set(want_gpu):
            bad.append(f"seqs only exported {sorted(set(got) - set(want_gpu))[:5]}, "
                       f"only in the trace {sorted(set(want_gpu) - set(got))[:5]}")
        for seq in sorted(set(got) & set(want_gpu)):
            g, w = got[seq], want_gpu[seq]
            moved = g[2] - w[2]
            ok = g[:2] == w[:2] and g[3] == w[3] and 0 <= moved <= min(1000, (w[3] - w[2]) / 100)
            if annotated:
                ok = ok and g[4] == w[4] and g[5] == (moved or None)
            if not ok:
                bad.append(f"seq {seq}: exported {g}, in the trace {w}")
        return bad

    want_flows = sorted((seq, tname[th], t) for seq, th, t in x["launch"] if seq in linked)
    want_async = sorted((a[0], a[1], max(x["end"], a[1]) if a[3] else a[2], bool(a[3])) for a in x["async"])

    out = os.path.join(TMP, f"random-{seed}.pftrace")
    e = subprocess.run([EXPORTER, trace, out], capture_output=True)
    if tap(e.returncode == 0, f"random {seed}: export-perfetto", e.stderr.decode()):
        t = pb.Trace()
        with open(out, "rb") as fh:
            t.ParseFromString(fh.read())
        fs = [f for f in pftrace_check.check(t, ptz=True) if f.severity != "warning"]
        tap(not fs, f"random {seed}: trace-processor checker finds no error",
            "\n".join(f"{f.severity} {f.rule} {f.packet} {f.msg}" for f in fs))
        _, _, slices, instants, _ = perfetto_model(t)
        got = {s[5][0]: (lab.split("#")[0], s[0], s[1], s[1] + s[2], s[6].get("gpu_start_offset_ns"),
                         s[6].get("gpu_start_snapped_ns"))
               for lab, v in slices.items() if lab.startswith("GPU ") for s in v if s[5]}
        nslices = sum(len(v) for lab, v in slices.items() if lab.startswith("GPU "))
        bad = gpu_diffs(got, True)
        snapped = sum(1 for v in got.values() if v[5])
        same((bad, nslices), ([], len(want_gpu)),
             f"random {seed}: perfetto GPU ranges once each, clamped, nested as written, with their flow "
             f"({nslices}, {snapped} starts moved over jitter)")
        gotf = sorted((f, lab, s[1]) for lab, v in slices.items() if lab in ("main", "worker") for s in v
                      for f in s[4])
        same(gotf, want_flows, f"random {seed}: perfetto flow on each launch whose range exists")
        gota = sorted((s[0], s[1], s[1] + s[2], bool(s[6].get("ptz.open_at_end")))
                      for lab, v in slices.items() if lab.startswith("async") for s in v)
        same(gota, want_async, f"random {seed}: perfetto async ranges paired by id")
        same([s for lab, v in slices.items() if lab.startswith("async") for s in v if s[3]], [],
             f"random {seed}: perfetto async lanes never nest ({sum(1 for k in slices if k.startswith('async'))} lanes)")
        same([i[2] for i in instants.get("process", []) if i[0] == "ptz: async ends without a begin"],
             [{"count": x["unmatched"]}], f"random {seed}: perfetto unmatched ends counted")

    out = os.path.join(TMP, f"random-{seed}.json")
    e = subprocess.run([PTANALYZE, "export", "--chrome", out, trace], capture_output=True)
    if not tap(e.returncode == 0 and not e.stderr, f"random {seed}: export --chrome", e.stderr.decode()):
        return
    with open(out, encoding="utf-8") as fh:
        ev = json.load(fh)
    tn = {e["tid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    xs = [e for e in ev if e["ph"] == "X"]
    fstart = {e["id"]: (e["tid"], e["ts"]) for e in ev if e["ph"] == "f"}
    xat = defaultdict(list)
    for e in xs:
        xat[(e["tid"], e["ts"])].append(e)
    got = {}
    for seq, at in fstart.items():
        for e in xat.get(at, []):  # the X event the f binds to: same name, as long as the trace says
            t = re.sub(r"^(GPU \d+) (stream \d+).*", r"\1/\2", tn[e["tid"]])
            w = want_gpu.get(seq)
            if w and e["name"] == w[1] and us_to_ns(e["ts"] + e["dur"]) == w[3]:
                got[seq] = (t, e["name"], us_to_ns(e["ts"]), us_to_ns(e["ts"] + e["dur"]), None, None)
    bad = gpu_diffs(got, False)
    same((bad, sum(1 for e in xs if e["tid"] >= GPU_TID)), ([], len(want_gpu)),
         f"random {seed}: chrome GPU X events, each at its f event")
    bad = []
    by_tid = defaultdict(list)
    for e in xs:
        by_tid[e["tid"]].append((e["ts"], e["ts"] + e["dur"]))
    for tid, v in by_tid.items():
        stack = []
        for b, en in sorted(v, key=lambda p: (p[0], -p[1])):
            while stack and stack[-1] <= b:
                stack.pop()
            if stack and en > stack[-1]:
                bad.append((tn.get(tid), b, en, stack[-1]))
            stack.append(en)
    same(bad, [], f"random {seed}: chrome X events nest on every thread and pseudo thread")
    fl = defaultdict(dict)
    for e in ev:
        if e["ph"] in ("s", "f"):
            fl[e["id"]][e["ph"]] = (e["tid"], us_to_ns(e["ts"]))
    gotf = sorted((i, tn[v["s"][0]], v["s"][1]) for i, v in fl.items() if "s" in v)
    same((gotf, sorted(i for i, v in fl.items() if set(v) == {"s", "f"})),
         (want_flows, sorted(linked)), f"random {seed}: chrome s/f pairs for each launch whose range exists")
    pairs = defaultdict(dict)
    for e in ev:
        if e["ph"] in ("b", "e"):
            pairs[e["id"]][e["ph"]] = e
    gota = sorted((p["b"]["name"], us_to_ns(p["b"]["ts"]), us_to_ns(p["e"]["ts"]), "args" in p["e"])
                  for p in pairs.values())
    same(gota, want_async, f"random {seed}: chrome async b/e pairs")


def gen_and_export(name, gen_args):
    """Writes TMP/name.ptz with gen_gpu_trace GEN_ARGS and exports it: the
    Perfetto trace (checked by the trace-processor rules; None if any step
    failed) and the Chrome events (None if that export failed), each step a
    TAP line prefixed with name."""
    trace = os.path.join(TMP, name + ".ptz")
    r = subprocess.run([GEN, trace] + gen_args, capture_output=True)
    if not tap(r.returncode == 0, f"{name}: gen_gpu_trace {' '.join(gen_args)}", r.stderr.decode()):
        return None, None
    t = None
    out = os.path.join(TMP, name + ".pftrace")
    e = subprocess.run([EXPORTER, trace, out], capture_output=True)
    if tap(e.returncode == 0, f"{name}: export-perfetto", e.stderr.decode()):
        t = pb.Trace()
        with open(out, "rb") as fh:
            t.ParseFromString(fh.read())
        fs = [f for f in pftrace_check.check(t, ptz=True) if f.severity != "warning"]
        tap(not fs, f"{name}: trace-processor checker finds no error",
            "\n".join(f"{f.severity} {f.rule} {f.packet} {f.msg}" for f in fs))
    out = os.path.join(TMP, name + ".json")
    e = subprocess.run([PTANALYZE, "export", "--chrome", out, trace], capture_output=True)
    if not tap(e.returncode == 0 and not e.stderr, f"{name}: export --chrome", e.stderr.decode()):
        return t, None
    with open(out, encoding="utf-8") as fh:
        return t, json.load(fh)


# ==== more ranges overlapping on one stream than it has lanes ====
def check_staircase(n=1000, lanes=64):
    """n ranges on one stream, each overlapping every other partially: the
    first `lanes` (PFX_GPU_MAX_LANES) get a lane each, the rest are not drawn
    but counted in one process instant at the first of them (the layout
    searched every lane for every range: quadratic, and a track per range)."""
    want_instant = ("ptz: GPU ranges not drawn (overlapping on one stream beyond its lanes)", lanes * 1000,
                    {"count": n - lanes, "max_lanes_per_stream": lanes})
    t, ev = gen_and_export("staircase", ["--staircase", str(n)])
    if t is not None:
        _, _, slices, instants, _ = perfetto_model(t)
        gpu = {lab: v for lab, v in slices.items() if lab.startswith("GPU ")}
        same((len(gpu), sorted(len(v) for v in gpu.values())[-1:], sorted(s[1] for v in gpu.values() for s in v),
              [i for i in instants.get("process", []) if i[0] == want_instant[0]]),
             (lanes, [1], [1000 * i for i in range(lanes)], [want_instant]),
             f"staircase: perfetto draws {lanes} lanes of one range each, counts the other {n - lanes}")
    if ev is None:
        return
    xs = sorted(us_to_ns(x["ts"]) for x in ev if x["ph"] == "X" and x["tid"] >= GPU_TID)
    ins = [(x["name"], us_to_ns(x["ts"]), x["args"]) for x in ev if x["ph"] == "i" and "not drawn" in x["name"]]
    same((xs, len({x["tid"] for x in ev if x["ph"] == "X"}), ins),
         ([1000 * i for i in range(lanes)], lanes, [want_instant]),
         f"staircase: chrome draws {lanes} lanes of one range each, counts the other {n - lanes}")


# ==== a range nested in one whose start moved over jitter ====
def check_snapnest():
    """kernA [100, 1000], outer [999, 3000], inner (kernB) [999, 1500] on one
    stream: outer's start moves to 1000 (1 ns of jitter) and inner moves with
    it, one level below; it began before its parent, and Perfetto paired the
    track's ENDs with the wrong slices (kernA lasted 2,900 ns)."""
    t, ev = gen_and_export("snapnest", ["--snapnest"])
    if t is not None:
        _, _, slices, _, _ = perfetto_model(t)
        got = sorted((s[0], s[1], s[2], s[3], s[6].get("gpu_start_snapped_ns"))
                     for lab, v in slices.items() if lab.startswith("GPU ") for s in v)
        same(got, [("kernA", 100, 900, 0, None), ("kernB", 1000, 500, 1, 1), ("outer", 1000, 2000, 0, 1)],
             "snapnest: perfetto: inner moved with its snapped parent, nested one level below it")
    if ev is None:
        return
    xs = sorted((x["name"], us_to_ns(x["ts"]), us_to_ns(x["ts"] + x["dur"])) for x in ev if x["ph"] == "X")
    same(xs, [("kernA", 100, 1000), ("kernB", 1000, 1500), ("outer", 1000, 3000)],
         "snapnest: chrome: inner inside its snapped parent")


def check_report_agrees(trace):
    """The analyzer's self GPU rates of worker;kernB are the same definition
    as its GPU range slices' (doc/analyzer-output.md §3.1): what the section
    declared itself over the GPU time of its ranges, here seq 9 (600 bytes
    read, 400 FLOPs, 1000 D2D over 200 ns) and seq 13 (nothing over 201 ns,
    raw start 1799), and the CPU rate over its CPU time (5 + 10 ns)."""
    out = os.path.join(TMP, "gpu-report.json")
    r = subprocess.run([PTANALYZE, trace, "--json", out], capture_output=True)
    if not tap(r.returncode == 0, "ptanalyze --json", r.stderr.decode()):
        return
    with open(out, encoding="utf-8") as fh:
        rep = json.load(fh)
    worker = [t for t in rep["threads"] if t["name"] == "worker"][0]
    row = [x for x in worker["tree"] if x["name"] == "kernB" and x["depth"] == 1][0]
    want = {"gpu_self_gb_per_s": 600 / 401, "gpu_self_gflop_per_s": 400 / 401, "gpu_d2d_gb_per_s": 1000 / 401,
            "gb_per_s": 600 / 15}
    got = {k: row[k] for k in want}
    same({k: round(v / want[k], 9) for k, v in got.items()}, {k: 1.0 for k in want},
         f"report: kernB's GPU rates over its ranges' GPU time, its CPU rate over CPU time ({got})")


def main():
    print("TAP version 13")
    trace = os.path.join(TMP, "gpu.ptz")
    r = subprocess.run([GEN, trace], capture_output=True)
    if tap(r.returncode == 0, "gen_gpu_trace", r.stderr.decode()):
        check_perfetto(trace)
        check_chrome(trace)
        check_report_agrees(trace)
    for seed in (1, 2, 3):
        check_random(seed)
    check_staircase()
    check_snapnest()
    return finish()


if __name__ == "__main__":
    sys.exit(main())
