"""bench/bench_python.py - what a section costs from Python, side by side in
one run (issue 19), and how long in-process statistics take.

Usage: PYTHONPATH=build/python python3 bench/bench_python.py [--libptz PATH]
       [--quick]

Prints medians over interleaved rounds (ns per iteration of a loop of
100,000, loop overhead included in every row alike):
  - `with contextlib.nullcontext()`                 the baseline
  - `with timing.section("name", flops=n)`          goal <= 2x baseline
  - `with s` (a reused section object)              goal <= 1x baseline
  - an empty function, undecorated and decorated    goal <= 2x
  - the same function behind functools.partial: a C wrapper that records
    nothing, the floor of any decorator written in C (CPython 3.11+
    inlines a Python-to-Python call; a call from C builds a new
    interpreter frame)
  - the ctypes route: pt_begin/pt_end by id through ctypes on libptz.so,
    and a hand-written context manager over it (what a user without the
    module writes)
  - get_timing_data() after 1,000, 1,000, 100,000 and 1,000 new sections
    (ms: the flush, the incremental analysis of what is new, and the dict;
    goal <= 1 ms after 1,000 new sections, whatever the trace holds)
The trace goes to a temporary directory, removed at the end.
"""
import argparse
import contextlib
import ctypes
import ctypes.util
import functools
import os
import statistics
import sys
import tempfile
import time

import ptz


def per_iter_ns(fn, n):
    t0 = time.perf_counter_ns()
    fn(n)
    return (time.perf_counter_ns() - t0) / n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--libptz", help="libptz.so for the ctypes route (default: the one ptz._ptz loaded)")
    ap.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    a = ap.parse_args()
    rounds, n = (3, 20000) if a.quick else (11, 100000)
    os.environ.setdefault("PTZ_RSS_MS", "0")
    tmp = tempfile.mkdtemp(prefix="ptz-bench-py-")
    path = os.path.join(tmp, "bench.ptz")
    timing = ptz.PerformanceTiming("bench", path=path)

    libpath = a.libptz
    if not libpath:  # the libptz.so.N the extension was linked with (same recorder)
        for line in open("/proc/self/maps"):
            if "libptz.so" in line:
                libpath = line.split()[-1]
                break
    lib = ctypes.CDLL(libpath)
    lib.pt_intern.restype = ctypes.c_uint32
    lib.pt_intern.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.pt_begin.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    lib.pt_end.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    lib.pt_open.restype = ctypes.c_void_p
    lib.pt_open.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]

    def nullctx(k):
        nc = contextlib.nullcontext()
        for _ in range(k):
            with nc:
                pass

    def nullctx_new(k):
        for _ in range(k):
            with contextlib.nullcontext():
                pass

    def section_new(k):
        for _ in range(k):
            with timing.section("name", flops=1000):
                pass

    def section_title_only(k):
        for _ in range(k):
            with timing.section("name"):
                pass

    reused = timing.section("reused", flops=1000)

    def section_reused(k):
        for _ in range(k):
            with reused:
                pass

    def empty():
        pass

    dec = timing.profile_function(name="empty")(lambda: None)

    def call_plain(k):
        f = empty
        for _ in range(k):
            f()

    def call_decorated(k):
        f = dec
        for _ in range(k):
            f()

    part = functools.partial(empty)

    def call_partial(k):
        f = part
        for _ in range(k):
            f()

    rows = [
        ("with contextlib.nullcontext() (new each time)", nullctx_new),
        ("with nc (one nullcontext reused)", nullctx),
        ('with timing.section("name", flops=n)', section_new),
        ('with timing.section("name")', section_title_only),
        ("with s (reused section object)", section_reused),
        ("empty function, undecorated", call_plain),
        ("empty function, @profile_function", call_decorated),
        ("empty function, functools.partial (records nothing)", call_partial),
    ]
    res = {name: [] for name, _ in rows}
    for _ in range(rounds):
        for name, fn in rows:
            res[name].append(per_iter_ns(fn, n))
    med = {k: statistics.median(v) for k, v in res.items()}
    low = {k: min(v) for k, v in res.items()}

    st = timing.get_stats()
    timing.close()

    # get_timing_data() on a fresh trace: after 1,000 new sections, 1,000
    # more, 100,000 more, then 1,000 more (each query flushes, then the
    # session reads only what was committed since the last one)
    timing = ptz.PerformanceTiming("bench-stats", path=os.path.join(tmp, "stats.ptz"))
    gtd = []
    for new in (1000, 1000, 100000, 1000):
        s = timing.section("gtd")
        for _ in range(new):
            with s:
                pass
        t0 = time.perf_counter_ns()
        data = timing.get_timing_data()
        gtd.append((new, data["sections"]["gtd"]["count"], (time.perf_counter_ns() - t0) / 1e6))
    timing.close()

    # the ctypes route (its own recorder: one per process)
    lib.pt_close.argtypes = [ctypes.c_void_p]
    rec = lib.pt_open(os.path.join(tmp, "ctypes.ptz").encode(), None, 0)
    cid = lib.pt_intern(rec, b"name")
    begin, end = lib.pt_begin, lib.pt_end

    def ctypes_by_id(k):
        for _ in range(k):
            begin(rec, cid)
            end(rec, cid)

    class CtypesSection:
        __slots__ = ("id",)

        def __init__(self, title):
            self.id = lib.pt_intern(rec, title.encode())

        def __enter__(self):
            begin(rec, self.id)
            return self

        def __exit__(self, *exc):
            end(rec, self.id)
            return False

    def ctypes_cm(k):
        for _ in range(k):
            with CtypesSection("name"):
                pass

    crow = [("ctypes: pt_begin/pt_end by id", ctypes_by_id),
            ("ctypes: hand-written context manager", ctypes_cm),
            ("with contextlib.nullcontext() (new each time), again", nullctx_new)]
    cres = {name: [] for name, _ in crow}
    for _ in range(rounds):
        for name, fn in crow:
            cres[name].append(per_iter_ns(fn, n))
    lib.pt_close(rec)
    cmed = {k: statistics.median(v) for k, v in cres.items()}
    clow = {k: min(v) for k, v in cres.items()}

    base = med["with contextlib.nullcontext() (new each time)"]
    print("ptz %s, Python %s, %d rounds of %d iterations, medians (ns per iteration)"
          % (ptz.version, sys.version.split()[0], rounds, n))
    print("(min: the fastest round, for a loaded machine; ratios are of medians)")
    print("%-55s %10s %8s %8s" % ("", "median ns", "x base", "min ns"))
    for name, _ in rows:
        print("%-55s %10.1f %8.2f %8.1f" % (name, med[name], med[name] / base, low[name]))
    dplain = med["empty function, undecorated"]
    print("%-55s %10s %8.2f" % ("decorated / undecorated", "", med["empty function, @profile_function"] / dplain))
    dpart = med["empty function, functools.partial (records nothing)"]
    print("%-55s %10s %8.2f" % ("C-wrapper floor: partial / undecorated", "", dpart / dplain))
    print("%-55s %10.1f" % ("recording: decorated - partial (ns)", med["empty function, @profile_function"] - dpart))
    cbase = cmed["with contextlib.nullcontext() (new each time), again"]
    for name, _ in crow:
        print("%-55s %10.1f %8.2f %8.1f" % (name, cmed[name], cmed[name] / cbase, clow[name]))
    for new, total, ms in gtd:
        print("%-55s %10.3f ms" % ("get_timing_data() after %d new (%d in trace)" % (new, total), ms))
    print("(module's trace: %d sections recorded, %d lost)" % (st["section_count"], st["losses"]["lost_sections"]))
    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    os.rmdir(tmp)


if __name__ == "__main__":
    main()
