#!/usr/bin/env python3
"""tests/export/chrome/check_exports.py PTANALYZE GEN_EDGE_TRACE DATA_DIR BUILD_ROOT

The Chrome JSON and folded-stack exports (doc/export.md), on:
  - tests/data/golden/small.ptz (unmatched ends, a section open at the end,
    losses, counters, a second timing domain),
  - the trace written by gen_edge_trace (1/3 ns per tick at a large
    CLOCK_MONOTONIC offset, thousands of nested sections ending in the same
    nanosecond, awkward names, a thread without tid or name),
  - the example workloads at --small size, when they were built.

Chrome JSON: parses with python's json; every X event has name, ph, ts, dur,
pid, tid; X events carry no args (so nothing varies per call); the
thread_name events name exactly the trace's threads (a thread whose tid was
lost: tid 1073741824 + index, "thread N (tid lost)", as in the Perfetto
export); per thread, events
nest exactly (ts + dur in double arithmetic, as consumers compute it); the
call paths rebuilt from that nesting have exactly the counts of the
analyzer's per-thread tree; with --since/--until, the per-name counts equal
the analyzer's flat counts under the same window; LOSS and ERROR records
are "i" events as in the Perfetto export (small.ptz: exactly those; every
trace: lost records, lost sections and misuse errors add up to the
analyzer's counts).
Folded: each line is 'path weight'; the weight per path equals self_ns of
the analyzer's merged tree (joined by ';', names sanitized as documented)
exactly, also per thread and within a window.
CLI: usage errors exit 2, unreadable traces 1 without creating the output,
damaged traces 1 with the output written, a torn tail 0 with a warning.
Output is TAP. Standard library only.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict

n = 0
failed = 0


def check(desc, ok, detail=""):
    global n, failed
    n += 1
    if ok:
        print(f"ok {n} - {desc}")
    else:
        failed += 1
        print(f"not ok {n} - {desc}")
        for line in str(detail).splitlines()[:20]:
            print(f"# {line}")
    return ok


def run(args, **kw):
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120, **kw)


def sanitize(name):
    """doc/export.md, folded stacks: ';' -> ':', control characters -> ' ', '' -> '(empty)'."""
    if name == "":
        return "(empty)"
    return "".join(":" if c == ";" else " " if (ord(c) < 0x20 or ord(c) == 0x7F) else c for c in name)


def analyzer_json(ana, trace, *extra):
    p = run([ana, trace, "--json", "-", *extra])
    if p.returncode not in (0,):
        raise RuntimeError(f"ptanalyze --json failed ({p.returncode}): {p.stderr.decode(errors='replace')}")
    # the analyzer writes names as UTF-8 with invalid bytes replaced
    return json.loads(p.stdout.decode("utf-8", errors="replace"))


def nest_paths(events):
    """Rebuild call paths of one thread's X events; returns (Counter of paths, errors).

    Events are written at each END, so a parent comes after its children in
    the file: that order breaks ties of equal ts and end (zero-length
    sections, sections ending in the same nanosecond)."""
    order = sorted(range(len(events)), key=lambda i: (events[i]["ts"], -(events[i]["ts"] + events[i]["dur"]), -i))
    stack = []  # (index, ts, end, path)
    paths = Counter()
    errors = []
    for i in order:
        e = events[i]
        ts, end = e["ts"], e["ts"] + e["dur"]
        while stack:
            j, pts, pend, _ = stack[-1]
            if pts <= ts and end <= pend and i < j:
                break
            if ts < pend and end > pend and i < j:
                errors.append(f"{e['name']!r} [{ts!r}, {end!r}] overlaps the end of {events[j]['name']!r} "
                              f"[{pts!r}, {pend!r}]")
            stack.pop()
        path = (stack[-1][3] if stack else ()) + (e["name"],)
        paths[path] += 1
        stack.append((i, ts, end, path))
    return paths, errors


def export_tid(t):
    """The tid both exports write for an analyzer thread row (doc/export.md §5): a lost one (0) is made up."""
    return t["tid"] or 0x40000000 + (t["index"] & 0x3FFFFFFF)


def check_chrome(ana, trace, label, tmp):
    out = os.path.join(tmp, label + ".json")
    p = run([ana, "export", "--chrome", out, trace])
    if not check(f"{label}: export --chrome exits 0, quiet", p.returncode == 0 and not p.stderr,
                 p.stderr.decode(errors="replace")):
        return None
    try:
        with open(out, encoding="utf-8") as f:
            ev = json.load(f)
    except (ValueError, UnicodeDecodeError) as ex:
        check(f"{label}: Chrome JSON parses", False, ex)
        return None
    check(f"{label}: Chrome JSON parses as an array", isinstance(ev, list))
    xs = [e for e in ev if e.get("ph") == "X"]
    bad = [e for e in xs if not all(k in e for k in ("name", "ph", "ts", "dur", "pid", "tid"))
           or not isinstance(e["ts"], (int, float)) or not isinstance(e["dur"], (int, float)) or e["dur"] < 0]
    check(f"{label}: {len(xs)} X events, each with name/ph/ts/dur/pid/tid", xs and not bad, bad[:3])
    withargs = [e for e in xs if "args" in e]
    cats = defaultdict(set)
    for e in xs:
        cats[e["name"]].add(e.get("cat"))
    check(f"{label}: no args on X events, one category per name",
          not withargs and all(len(c) == 1 for c in cats.values()), withargs[:3])

    rep = analyzer_json(ana, trace)
    want_threads = {}
    for t in rep["threads"]:
        want_threads[export_tid(t)] = t["name"] or f"thread {t['index']}" + ("" if t["tid"] else " (tid lost)")
    got_threads = {e["tid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "thread_name"}
    check(f"{label}: thread_name events name the trace's {len(want_threads)} threads",
          got_threads == want_threads, f"got {got_threads}\nwant {want_threads}")
    procs = [e for e in ev if e.get("ph") == "M" and e["name"] == "process_name"]
    check(f"{label}: one process_name, pid {rep['trace']['pid']}",
          len(procs) == 1 and procs[0]["args"]["name"] == rep["trace"]["process"]
          and all(e["pid"] == rep["trace"]["pid"] for e in ev if "pid" in e), procs)

    by_tid = defaultdict(list)
    for e in xs:
        by_tid[e["tid"]].append(e)
    for t in rep["threads"]:
        paths, errors = nest_paths(by_tid.get(export_tid(t), []))
        check(f"{label}: thread {t['index']}: X events nest exactly", not errors, "\n".join(errors[:5]))
        want = Counter({tuple(r["path"]): r["count"] for r in t["tree"] if r["count"]})
        diff = [(k, paths.get(k, 0), want.get(k, 0)) for k in set(paths) | set(want) if paths.get(k, 0) != want.get(k, 0)]
        check(f"{label}: thread {t['index']}: path counts equal the analyzer's tree ({sum(want.values())} sections)",
              not diff, "\n".join(f"{k}: export {a}, analyzer {b}" for k, a, b in diff[:10]))
    return ev, rep


# small.ptz's LOSS and ERROR records, as the Perfetto export shows them too:
# the meta chunk's loss process-scoped, the threads' on their thread
SMALL_INSTANTS = [
    ("ptz: recorder error", "t", 102, 1000.45, {"error": "end_underflow", "count": 2}),
    ("ptz: recorder error", "t", 102, 1000.46, {"error": "io", "errno": 5}),
    ("ptz: records lost", "p", None, 1000.0, {"records": 3, "sections": 1}),
    ("ptz: records lost", "t", 101, 1001.3, {"records": 5, "sections": 2}),
]


def check_losses(ev, rep, label):
    inst = sorted(((e["name"], e["s"], e.get("tid"), e["ts"], e.get("args")) for e in ev
                   if e.get("ph") == "i" and e["name"] in ("ptz: records lost", "ptz: recorder error")),
                  key=lambda x: (x[0], x[1] != "p", x[3]))
    if label == "small":
        check("small: loss and recorder-error instants, process- and thread-scoped", inst == SMALL_INSTANTS,
              f"got  {inst}\nwant {SMALL_INSTANTS}")
    lost = sum(a["records"] for n, *_, a in inst if n == "ptz: records lost")
    secs = sum(a["sections"] for n, *_, a in inst if n == "ptz: records lost")
    # the analyzer's misuse count leaves out I/O errors and GPU ones (doc/analyzer-output.md)
    misuse = sum(a.get("count", 0) for n, *_, a in inst
                 if n == "ptz: recorder error" and not a["error"].startswith("gpu_") and a["error"] != "io")
    t = rep["trace"]
    check(f"{label}: loss instants add up to {t['lost_records']} lost records and {t['lost_sections']} sections, "
          f"error instants to {t['recorder_errors']} misuse errors",
          (lost, secs, misuse) == (t["lost_records"], t["lost_sections"], t["recorder_errors"]),
          f"export {(lost, secs, misuse)}")


def check_window(ana, trace, label, tmp, rep_full):
    # the window is counted from the trace start (pt_open), which these traces
    # record just before their first section: the middle half of the span
    span = rep_full["trace"]["wall_span_ns"]
    since_s = round(span * 0.25) / 1e9
    until_s = round(span * 0.75) / 1e9
    if until_s <= since_s:
        return
    win = ["--since", repr(since_s), "--until", repr(until_s)]
    out = os.path.join(tmp, label + ".win.json")
    p = run([ana, trace, "--chrome", out, *win])
    if not check(f"{label}: --chrome with a window exits 0", p.returncode == 0, p.stderr.decode(errors="replace")):
        return
    with open(out, encoding="utf-8") as f:
        ev = json.load(f)
    got = Counter(e["name"] for e in ev if e.get("ph") == "X")
    rep = analyzer_json(ana, trace, *win)
    want = Counter({r["name"]: r["count"] for r in rep["flat"] if r["count"]})
    check(f"{label}: window {since_s:.6g}..{until_s:.6g} s: per-name counts equal the analyzer's flat counts "
          f"({sum(want.values())} of {sum(r['count'] for r in rep_full['flat'])})", got == want,
          f"export {dict(got)}\nanalyzer {dict(want)}")
    fold = os.path.join(tmp, label + ".win.folded")
    p = run([ana, trace, "--folded", fold, *win])
    check_folded_file(fold, rep["tree"], f"{label}: window: folded")


def folded_sums(path):
    sums = Counter()
    bad = []
    with open(path, "rb") as f:
        for line in f.read().decode("utf-8", errors="replace").split("\n"):
            if not line:
                continue
            m = re.fullmatch(r"(.+) (\d+)", line)
            if not m or int(m.group(2)) == 0:
                bad.append(line)
                continue
            sums[m.group(1)] += int(m.group(2))
    return sums, bad


def check_folded_file(path, tree_rows, desc):
    got, bad = folded_sums(path)
    want = Counter()
    for r in tree_rows:
        if r["self_ns"]:
            want[";".join(sanitize(x) for x in r["path"])] += r["self_ns"]
    diff = [(k, got.get(k, 0), want.get(k, 0)) for k in set(got) | set(want) if got.get(k, 0) != want.get(k, 0)]
    check(f"{desc}: {len(got)} paths, self time per path equals the analyzer's ({sum(want.values())} ns)",
          not diff and not bad, "\n".join([f"bad line {b!r}" for b in bad[:5]] +
                                          [f"{k!r}: folded {a}, analyzer {b}" for k, a, b in diff[:10]]))


def check_folded(ana, trace, label, tmp, rep):
    out = os.path.join(tmp, label + ".folded")
    p = run([ana, "export", "--folded", out, trace])
    if not check(f"{label}: export --folded exits 0, quiet", p.returncode == 0 and not p.stderr,
                 p.stderr.decode(errors="replace")):
        return
    check_folded_file(out, rep["tree"], f"{label}: folded (all threads)")
    for t in rep["threads"][:3]:
        p = run([ana, trace, "--folded", "-", "--thread", str(t["index"])])
        f = os.path.join(tmp, f"{label}.t{t['index']}.folded")
        with open(f, "wb") as fh:
            fh.write(p.stdout)
        repT = analyzer_json(ana, trace, "--thread", str(t["index"]))
        check_folded_file(f, repT["tree"], f"{label}: folded --thread {t['index']}")


def check_cli(ana, data, tmp):
    small = os.path.join(data, "golden", "small.ptz")
    out = os.path.join(tmp, "cli.json")
    usage = [
        (["export", small], "export: give at least one of"),
        (["export", small, "--chrome"], "unknown or incomplete option '--chrome'"),
        (["export", "--chrome", out], "no trace file given"),
        ([small, "--chrome", "-", "--folded", "-"], "only one export may go to stdout"),
        (["info", small, "--chrome", out], "info takes no export option"),
        ([small, "--chrome", out, "--csv", "-"], "export options do not combine with the report"),
        (["report", small, "--folded", out], "export options do not combine with the report"),
        ([small, "--chrome", out, "--thread", "1"], "--thread and --domain apply to --folded only"),
        ([small, "--chrome", out, "--since", "x"], "--since: expected seconds"),
        ([small, "--folded", out, "--since", "2", "--until", "1"], "--until must be later than --since"),
        ([os.path.join(tmp, "nosuch.ptz"), "--chrome", out, "--sort", "x"], "--sort: unknown key"),
        (["export", "--folded", out, small, small], "an export of several traces takes --perfetto and --chrome"),
        (["export", "--chrome", out, "--thread", "0", small, small], "an export of several traces takes"),
        (["export", "--chrome", "-", "--perfetto", "-", small, small], "only one export may go to stdout"),
        (["export", "--chrome", small, small, small], "output file '" + small + "' is a trace itself"),
    ]
    for args, msg in usage:
        if os.path.exists(out):
            os.unlink(out)
        p = run([ana, *args])
        err = p.stderr.decode(errors="replace")
        check(f"usage error exits 2: {' '.join(os.path.basename(a) for a in args)}",
              p.returncode == 2 and f"ptanalyze: {msg}" in err and "usage: ptanalyze" in err and not p.stdout
              and not os.path.exists(out), f"exit {p.returncode}\n{err}")
    p = run([ana, "--help"])
    h = p.stdout.decode()
    check("--help documents export, --perfetto, --chrome, --folded",
          all(s in h for s in ("ptanalyze export --perfetto", "--perfetto FILE", "--chrome FILE", "--folded FILE")))
    # unreadable: exit 1, the output is not created
    for bad in ("bad-magic.ptz", "empty.ptz"):
        path = os.path.join(data, "corrupt", bad)
        if os.path.exists(out):
            os.unlink(out)
        p = run([ana, "export", "--chrome", out, path])
        err = p.stderr.decode(errors="replace")
        check(f"unreadable {bad}: exit 1, 'ptanalyze: PATH: ...', no output file",
              p.returncode == 1 and err.startswith(f"ptanalyze: {path}: ") and not os.path.exists(out), err)
    # a set with an unreadable file: exit 1, the message names it, no output
    path = os.path.join(data, "corrupt", "bad-magic.ptz")
    for opt in ("--chrome", "--perfetto"):
        if os.path.exists(out):
            os.unlink(out)
        p = run([ana, "export", opt, out, small, path])
        err = p.stderr.decode(errors="replace")
        check(f"set with an unreadable file {opt}: exit 1, the file named, no output",
              p.returncode == 1 and path in err and not os.path.exists(out), err)
    # a set with a damaged file: written, exit 1, the problem with the file and its offset
    path = os.path.join(data, "corrupt", "crc-mismatch-payload-zstd.ptz")
    p = run([ana, "export", "--chrome", out, small, path])
    err = p.stderr.decode(errors="replace")
    check("set with a damaged file: written, exit 1, the problem with its file and offset",
          p.returncode == 1 and os.path.getsize(out) > 0
          and f"ptanalyze: {path}: error: chunk @0x10ab: payload checksum mismatch" in err, err)
    # damage inside: the export of the intact chunks is written, exit 1
    path = os.path.join(data, "corrupt", "crc-mismatch-payload-zstd.ptz")
    for opt in ("--chrome", "--folded"):
        p = run([ana, path, opt, out])
        err = p.stderr.decode(errors="replace")
        check(f"damaged trace {opt}: written, exit 1, the problem with its offset",
              p.returncode == 1 and os.path.getsize(out) > 0
              and f"ptanalyze: {path}: error: chunk @0x10ab: payload checksum mismatch" in err, err)
    path = os.path.join(data, "corrupt", "trunc-payload.ptz")
    p = run([ana, path, "--chrome", out, "--folded", os.path.join(tmp, "t.folded")])
    err = p.stderr.decode(errors="replace")
    check("torn tail: exit 0, warning names the offset",
          p.returncode == 0 and "warning: torn tail @0x12b5" in err and ": error: " not in err, err)
    p = run([ana, small, "--chrome", os.path.join(tmp, "nosuchdir", "x.json")])
    err = p.stderr.decode(errors="replace")
    check("unwritable output: exit 1", p.returncode == 1 and "cannot write Chrome JSON" in err, err)
    p = run([ana, small, "--chrome", "-"])
    try:
        ok = p.returncode == 0 and isinstance(json.loads(p.stdout), list)
    except ValueError:
        ok = False
    check("--chrome - writes the JSON to stdout", ok)


def check_chrome_set(ana, traces, tmp):
    """`ptanalyze export --chrome OUT A B ...` (doc/export.md §6): one JSON
    array; each file's events are exactly its own export's, in order,
    under its own pid (4194306 + its index when an earlier file has its
    pid), flow and async ids mapped one to one (the first file's
    unchanged), timestamps shifted by one amount per file: 0 when every
    file comes from one host, else onto CLOCK_REALTIME."""
    out = os.path.join(tmp, "set.json")
    p = run([ana, "export", "--chrome", out, *traces])
    if not check(f"set of {len(traces)}: export exits 0", p.returncode == 0, p.stderr.decode(errors="replace")):
        return
    ev = json.load(open(out, encoding="utf-8"))
    reps = [analyzer_json(ana, t) for t in traces]
    one_host = len({r["trace"]["host"] for r in reps}) == 1
    pos, seen_pids, all_pids = 0, [], []
    for k, t in enumerate(traces):
        single = os.path.join(tmp, f"set-{k}.json")
        p = run([ana, "export", "--chrome", single, t])
        one = json.load(open(single, encoding="utf-8"))
        pid = reps[k]["trace"]["pid"]
        want_pid = pid if pid not in seen_pids else 4194306 + k
        seen_pids.append(pid)
        all_pids.append(want_pid)
        got = ev[pos:pos + len(one)]
        bad, ids, shifts = [], {}, []
        for a, b in zip(one, got):
            a, b = dict(a), dict(b)
            if b.get("pid") != want_pid:
                bad.append(f"pid {b.get('pid')}, want {want_pid}")
            a.pop("pid", None)
            b.pop("pid", None)
            mag = abs(b.get("ts", 0))
            if "ts" in a:
                shifts.append(b.pop("ts") - a.pop("ts"))
            # equal up to double rounding at the set's magnitudes (µs as doubles: a file moved
            # years away, as these test traces' fixed 2023 clocks are from a real one, keeps
            # about 16 ns)
            if "dur" in a and abs(b.pop("dur") - a.pop("dur")) > max(1e-3, 4 * mag * 2 ** -52):
                bad.append(f"{a.get('name')}: dur differs")
            if "id" in a:
                if k == 0 and a["id"] != b["id"]:
                    bad.append(f"id {a['id']} -> {b['id']} in the first file")
                if ids.setdefault((a["ph"] in "sf", a["id"]), b["id"]) != b["id"]:
                    bad.append(f"id {a['id']} maps to two ids")
                a.pop("id")
                b.pop("id")
            if a != b:
                bad.append(f"{a} vs {b}")
        if len(set(ids.values())) != len(ids):
            bad.append("two ids map to one")
        ulp = 4 * max((abs(e.get("ts", 0)) for e in got), default=0) * 2 ** -52
        if shifts and (max(shifts) - min(shifts) > max(1e-3, ulp) or (one_host and max(abs(x) for x in shifts) > 0)):
            bad.append(f"timestamp shifts from {min(shifts)} to {max(shifts)} us")
        check(f"set: file {k} ({os.path.basename(t)}): its own export's {len(one)} events, pid {want_pid}, "
              f"{'no shift' if one_host else 'one shift'}", len(got) == len(one) and not bad and p.returncode == 0,
              "\n".join(bad[:6]))
        pos += len(one)
    check("set: nothing beyond the files' events, distinct pids", pos == len(ev) and len(set(all_pids)) == len(all_pids),
          f"{len(ev) - pos} left, pids {all_pids}")


def main():
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    ana, gen, data, build = (os.path.abspath(a) for a in sys.argv[1:])
    tmp = tempfile.mkdtemp(prefix="ptz-export-", dir=os.environ.get("PTZ_TEST_TMPDIR"))
    try:
        traces = [("small", os.path.join(data, "golden", "small.ptz"))]
        edge = os.path.join(tmp, "edge.ptz")
        p = run([gen, edge])
        if check("gen_edge_trace writes its trace", p.returncode == 0, p.stderr.decode(errors="replace")):
            traces.append(("edge", edge))
        for name, args in (("led_optimizer", ["--small"]), ("compress_corpus", ["--small"])):
            exe = os.path.join(build, "examples", name)
            if os.path.exists(exe):
                t = os.path.join(tmp, name + ".ptz")
                p = run([exe, *args, "--trace", t], cwd=tmp)
                if check(f"{name} --small writes a trace", p.returncode == 0, p.stderr.decode(errors="replace")):
                    traces.append((name, t))
            else:
                print(f"# {name} not built: skipped")
        for label, t in traces:
            r = check_chrome(ana, t, label, tmp)
            if r:
                check_losses(r[0], r[1], label)
                check_window(ana, t, label, tmp, r[1])
                check_folded(ana, t, label, tmp, r[1])
        # sanitized names reach the folded output, and the JSON keeps them
        edge_folded = os.path.join(tmp, "edge.folded")
        if os.path.exists(edge_folded):
            text = open(edge_folded, "rb").read().decode("utf-8", errors="replace")
            check("edge: folded names sanitized (';' -> ':', newline and tab -> ' ', '' -> '(empty)')",
                  "semi:colon" in text and "new line" in text and "tab here" in text and "(empty)" in text
                  and "\t" not in text, text[:300])
            ev = json.load(open(os.path.join(tmp, "edge.json"), encoding="utf-8"))
            names = {e["name"] for e in ev if e.get("ph") == "X"}
            check("edge: Chrome JSON keeps names exactly (';', newline, tab, quote, '', UTF-8)",
                  {"semi;colon", "new\nline", "tab\there", "quote\"q", "", "\u00fcn\u00ef"} <= names, sorted(names))
        bad = os.path.join(tmp, "bad-utf8.ptz")
        p = run([gen, bad, "--bad-utf8"])
        out = os.path.join(tmp, "bad-utf8.json")
        p2 = run([ana, bad, "--chrome", out])
        try:
            names = {e["name"] for e in json.load(open(out, encoding="utf-8")) if e.get("ph") == "X"}
        except (OSError, ValueError) as ex:
            names = {str(ex)}
        check("a name that is not UTF-8: valid JSON, the bad byte written as '?'",
              p.returncode == 0 and p2.returncode == 0 and "bad? byte" in names, sorted(names))
        pf = os.path.join(tmp, "bad-utf8.pftrace")
        p3 = run([ana, bad, "--perfetto", pf])
        raw = open(pf, "rb").read() if os.path.exists(pf) else b""
        check("a name that is not UTF-8: the Perfetto export repairs it as the Chrome JSON does",
              p3.returncode == 0 and b"bad? byte" in raw and b"bad\xff byte" not in raw, len(raw))
        # a set: small.ptz twice (one pid: the second is made up), the edge trace and the examples'
        paths = [t for _, t in traces]
        check_chrome_set(ana, [paths[0]] + paths[1:] + [paths[0]], tmp)
        check_cli(ana, data, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"1..{n}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
