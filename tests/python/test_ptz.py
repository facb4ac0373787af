"""tests/python/test_ptz.py - the ptz Python module (issue 19), CPU side.

Run by meson (suite 'python') with PYTHONPATH=<build>/python, PTANALYZE
set to the built ptanalyze and PTZ_TEST_TMPDIR a scratch directory. Every
test records into its own trace (one recorder per process: each test
closes its instance) and checks what the trace holds, through the module's
statistics and through ptanalyze itself.

Invariants covered:
  - sections as context managers, reused and nested; start/stop with
    metrics on either; decorators (section, profile_function bare and
    named, methods); FLOPs from operation_type through libptz's helpers;
    record_memory_transfer; counter; enable/disable; threads on their own
    rings;
  - misuse counted, never raised (stop of a title not open); bad arguments
    raise TypeError/ValueError; a second open recorder raises OSError;
  - null-safe patterns of the proposal;
  - get_timing_data() equals `ptanalyze --json` on the same trace, row by
    row (flat and tree); get_stats(); log() lines; export_csv() equal to
    `ptanalyze --csv` and read back; export_json() equal to --json.
"""
import contextlib
import csv
import glob
import io
import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
import unittest
from unittest import mock

import ptz

TMP = os.environ.get("PTZ_TEST_TMPDIR", "/tmp")
PTANALYZE = os.environ["PTANALYZE"]


def tmp_path(name):
    d = os.path.join(TMP, "python-tests")
    os.makedirs(d, exist_ok=True)
    return os.path.join(d, name)


def ptanalyze_json(path):
    out = subprocess.run([PTANALYZE, path, "--json", "-", "--no-progress"], check=True,
                         stdout=subprocess.PIPE).stdout
    return json.loads(out)


# keys the module adds next to the analyzer's (the proposal's names)
LEGACY = {"duration", "calls", "average"}

def same_row(test, mine, theirs, what, exact=True):
    """Row @mine (the module's) equals @theirs (ptanalyze's JSON), key by
    key; reals to the 12 significant digits the JSON report writes.

    exact=False, for two readings of a trace still being written: the
    flusher keeps adding clock triples, and every duration is ticks times
    the trace's mean ns-per-tick slope, every instant goes through the
    piecewise tick->ns mapping (doc/analyzer-output.md §1): a later
    reading may round each duration 1 ns apart and move the spans (share).
    A row's total sums `count` rounded durations and its self time also
    subtracts its children's (two an occurrence at most in these tests),
    so an integer ns figure may differ by 3 ns an occurrence (CI once saw
    3 ns over 50 occurrences), a real ns figure (mean, std, one duration)
    by 3 ns, each plus 10 ppm (the slope runs from the first clock triple
    to the last, a few ms apart here, so a new triple moves it by the
    clock reads' jitter over that span); other reals (rates over totals that
    moved that much) by 0.1 % (share excepted); every count, byte and
    FLOP figure must still be equal.
    The closed trace is then compared exactly."""
    # a JSON report's merged rows carry their histogram and sums for `ptanalyze merge`
    # (doc/analyzer-output.md §12): input to a merge, not a figure of the row
    mine = {k: v for k, v in mine.items() if k not in LEGACY and k != "sketch"}
    theirs = {k: v for k, v in theirs.items() if k != "sketch"}
    test.assertEqual(set(mine), set(theirs), what)
    for k, v in mine.items():
        w = theirs[k]
        msg = "%s %s" % (what, k)
        if exact:
            if isinstance(v, float):
                test.assertAlmostEqual(v, w, delta=abs(v) * 1e-11, msg=msg)
            else:
                test.assertEqual(v, w, msg)
        elif k == "share":
            continue
        elif isinstance(v, float) and k.endswith("_ns"):
            test.assertAlmostEqual(v, w, delta=abs(v) * 1e-5 + 3, msg=msg)
        elif isinstance(v, float):
            test.assertAlmostEqual(v, w, delta=abs(v) * 1e-3 + 1e-9, msg=msg)
        elif isinstance(v, int) and not isinstance(v, bool) and k.endswith("_ns"):
            test.assertLessEqual(abs(v - w), 3 * max(1, mine.get("count", 1)) + abs(v) * 1e-5, msg)
        else:
            test.assertEqual(v, w, msg)


class Base(unittest.TestCase):
    def setUp(self):
        self.path = tmp_path(self.id().rsplit(".", 1)[-1] + ".ptz")
        self.t = ptz.PerformanceTiming(self.id(), path=self.path)

    def tearDown(self):
        self.t.close()

    def rows(self):
        """Closes the trace and returns ptanalyze's flat rows by name."""
        self.t.close()
        rep = ptanalyze_json(self.path)
        return {r["name"]: r for r in rep["flat"]}, rep


class TestPathTemplate(unittest.TestCase):
    def test_host_and_pid_expanded(self):
        """"%h" and "%p" in the path: the recorder expands both, and the
        statistics read the file it writes (t.path, from pt_path())."""
        t = ptz.PerformanceTiming("tmpl", path=tmp_path("tmpl-%h-%p.ptz"))
        try:
            self.assertNotIn("%", t.path)
            self.assertIn("-%d.ptz" % os.getpid(), t.path)
            host = socket.gethostname()
            if host and all(c.isalnum() or c in "-." for c in host):
                self.assertIn("tmpl-%s-" % host, t.path)
            self.assertTrue(os.path.isfile(t.path))
            with t.section("a"):
                pass
            self.assertEqual(t.get_timing_data()["sections"]["a"]["count"], 1)
        finally:
            t.close()
        os.unlink(t.path)


class TestTop(unittest.TestCase):
    def test_live_view_follows_the_writer(self):
        """`ptanalyze top` on a trace this process is writing: frames while
        it grows, the last one when close() finalizes it, with every call."""
        path = tmp_path("top-live.ptz")
        t = ptz.PerformanceTiming("top-live", path=path)
        proc = None
        try:
            with t.section("warm"):
                pass
            t.get_stats()  # flushed: the file has a thread and a name before top opens it
            proc = subprocess.Popen([PTANALYZE, "top", path, "--interval", "0.05", "--top", "5"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(40):
                with t.section("work"):
                    time.sleep(0.01)
        finally:
            t.close()
        out, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 0, err)
        frames = out.split("ptz top: ")[1:]
        self.assertGreaterEqual(len(frames), 3, out[-2000:])
        self.assertIn("- finalized", frames[-1].splitlines()[0])
        self.assertNotIn("finalized", frames[0].splitlines()[0])

        def all_calls(fr, name):
            for line in fr.splitlines():
                f = line.split()
                if f and f[0] == name:
                    return int(f[-7])  # ... all calls, then mean, p50, p99: two tokens each
            return 0

        seen = [all_calls(fr, "work") for fr in frames]
        self.assertEqual(seen[-1], 40)
        self.assertLess(min(seen), 40)  # it watched the trace grow
        self.assertEqual(seen, sorted(seen))

    def test_live_view_of_a_rotating_trace(self):
        """`ptanalyze top NAME.ptz` while the recorder rotates NAME into
        numbered parts (PTZ_ROTATE_BYTES): it follows the new parts, and
        its last frame counts what the finished parts hold."""
        path = tmp_path("top-rot.ptz")
        for f in glob.glob(tmp_path("top-rot.*.ptz")):
            os.unlink(f)
        with mock.patch.dict(os.environ, PTZ_ROTATE_BYTES="1M"):  # read by the open below
            t = ptz.PerformanceTiming("top-rot", path=path)
        proc = None
        try:
            with t.section("warm"):
                pass
            t.get_stats()  # the first part has a thread and a name before top opens it
            proc = subprocess.Popen([PTANALYZE, "top", path, "--interval", "0.05", "--top", "5"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            # until the recorder has rotated: on a loaded machine the flusher
            # can fall behind and drop records (counted), so no fixed count
            i = 0
            while i < 150000 or (len(glob.glob(tmp_path("top-rot.*.ptz"))) < 2 and i < 3000000):
                with t.section("work"):
                    t.counter("i", (i * 2654435761) & 0xFFFFFFFFFF)  # values zstd cannot fold away
                i += 1
                if i % 10000 == 0:
                    t.flush()
        finally:
            t.close()
        out, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 0, err)
        parts = sorted(glob.glob(tmp_path("top-rot.*.ptz")))
        self.assertGreaterEqual(len(parts), 2, parts)
        frames = out.split("ptz top: ")[1:]
        self.assertIn("- finalized", frames[-1].splitlines()[0])
        last = [int(l.split()[-7]) for l in frames[-1].splitlines() if l.split()[:1] == ["work"]]
        rep = ptanalyze_json(path)  # every part, read by the name they share
        want = [r["count"] for r in rep["flat"] if r["name"] == "work"]
        self.assertEqual(last, want)

    def test_usage(self):
        r = subprocess.run([PTANALYZE, "top"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(r.returncode, 2)
        r = subprocess.run([PTANALYZE, "top", "x.ptz", "--csv", "y.csv"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        self.assertEqual(r.returncode, 2)
        r = subprocess.run([PTANALYZE, "x.ptz", "--interval", "1"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("belong to top", r.stderr)
        r = subprocess.run([PTANALYZE, "top", tmp_path("missing.ptz"), "--once"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        self.assertEqual(r.returncode, 1)


class TestSections(Base):
    def test_with_section_metrics_and_nesting(self):
        for _ in range(10):
            with self.t.section("outer", read=100, written=50, flops=7) as s:
                with self.t.section("inner", flops=3):
                    pass
                s.add_memory(read=1, written=2)
                s.add_flops(4)
        rows, rep = self.rows()
        self.assertEqual(rows["outer"]["count"], 10)
        self.assertEqual(rows["inner"]["count"], 10)
        self.assertEqual(rows["outer"]["self_read_bytes"], 10 * 101)
        self.assertEqual(rows["outer"]["self_written_bytes"], 10 * 52)
        self.assertEqual(rows["outer"]["self_flops"], 10 * 11)
        self.assertEqual(rows["outer"]["flops"], 10 * 14)  # inclusive of inner
        paths = {tuple(r["path"]): r for r in rep["tree"]}
        self.assertEqual(paths[("outer", "inner")]["count"], 10)
        self.assertGreaterEqual(rows["outer"]["total_ns"], rows["inner"]["total_ns"])
        self.assertEqual(rep["trace"]["recorder_errors"], 0)

    def test_reused_section_object(self):
        s = self.t.section("reused", flops=2)
        for _ in range(5):
            with s:
                pass
        with s:
            with s:  # reentrant: nested occurrence of the same title
                pass
        rows, rep = self.rows()
        self.assertEqual(rows["reused"]["count"], 7)
        self.assertEqual(rows["reused"]["self_flops"], 14)
        self.assertEqual(s.title, "reused")

    def test_exception_leaves_the_section(self):
        with self.assertRaises(KeyError):
            with self.t.section("raises"):
                raise KeyError("x")
        with self.t.section("after"):
            pass
        rows, rep = self.rows()
        self.assertEqual(rows["raises"]["count"], 1)
        self.assertEqual([tuple(r["path"]) for r in rep["tree"] if r["name"] == "after"], [("after",)])

    def test_start_stop_metrics_on_either(self):
        self.t.start("phase", read=10, flops=1)
        self.t.start("sub", written=5)
        self.t.stop("sub", read=3)
        self.t.stop("phase", written=7, flops=2)
        rows, rep = self.rows()
        self.assertEqual(rows["phase"]["self_read_bytes"], 10)
        self.assertEqual(rows["phase"]["self_written_bytes"], 7)
        self.assertEqual(rows["phase"]["self_flops"], 3)
        self.assertEqual(rows["sub"]["self_written_bytes"], 5)
        self.assertEqual(rows["sub"]["self_read_bytes"], 3)
        self.assertEqual(rep["trace"]["recorder_errors"], 0)

    def test_stop_not_open_is_counted_never_raised(self):
        self.t.stop("never-started")
        self.t.stop("never-started", flops=5)
        self.t.start("a")
        self.t.stop("a")
        self.assertEqual(self.t.get_stats()["error_count"], 2)
        rows, rep = self.rows()
        self.assertEqual(rep["trace"]["recorder_errors"], 2)
        self.assertEqual(rows["a"]["count"], 1)

    def test_decorators(self):
        sec = self.t.section("decorated", flops=5)

        @sec
        def f(x, y=1):
            return x + y

        @self.t.profile_function
        def bare(x):
            return x * 2

        @self.t.profile_function(name="named")
        def g():
            return "g"

        @self.t.profile_function()
        def by_qualname():
            return 1

        class K:
            @self.t.profile_function
            def method(self, v):
                return v + 1

        self.assertEqual(f(1, y=2), 3)
        self.assertEqual(f(2), 3)
        self.assertEqual(bare(4), 8)
        self.assertEqual(g(), "g")
        self.assertEqual(by_qualname(), 1)
        self.assertEqual(K().method(1), 2)
        self.assertEqual(bare.__name__, "bare")
        self.assertEqual(bare.__wrapped__(3), 6)
        with self.assertRaises(ZeroDivisionError):
            self.t.profile_function(lambda: 1 / 0)()
        rows, _ = self.rows()
        self.assertEqual(rows["decorated"]["count"], 2)
        self.assertEqual(rows["decorated"]["self_flops"], 10)
        q = "TestSections.test_decorators.<locals>."
        self.assertEqual(rows[q + "bare"]["count"], 1)
        self.assertEqual(rows["named"]["count"], 1)
        self.assertEqual(rows[q + "by_qualname"]["count"], 1)
        self.assertEqual(rows[q + "K.method"]["count"], 1)
        self.assertEqual(rows[q + "<lambda>"]["count"], 1)

    def test_operation_type_flops(self):
        import numpy as np
        a, b = np.ones((3, 4, 5)), np.ones((4, 5))
        spec = "ijk,jk->i"
        with self.t.section("einsum", operation_type="einsum", shape_info=(spec, a.shape, b.shape)):
            np.einsum(spec, a, b)
        with self.t.section("mm", operation_type="matmul", shape_info=((8, 3), (3, 5))):
            pass
        with self.t.section("mm3", operation_type="matmul", shape_info=(8, 5, 3)):
            pass
        with self.t.section("ew", operation_type="elementwise", shape_info=((10, 10), 3)):
            pass
        with self.t.section("sp", operation_type="sparse_matmul", shape_info=(100, 7)):
            pass
        with self.t.section("both", flops=1, operation_type="elementwise", shape_info=10):
            pass
        # numpy's own naive count for the einsum
        naive = np.einsum_path(spec, a, b, optimize=False)[1]
        numpy_count = None
        for line in naive.splitlines():
            if "Naive FLOP count" in line:
                numpy_count = int(float(line.split(":")[1].strip()))
        self.assertEqual(ptz.flops("einsum", (spec, a.shape, b.shape)), numpy_count)
        rows, _ = self.rows()
        self.assertEqual(rows["einsum"]["self_flops"], numpy_count)
        self.assertEqual(rows["mm"]["self_flops"], 2 * 8 * 5 * 3)
        self.assertEqual(rows["mm3"]["self_flops"], 2 * 8 * 5 * 3)
        self.assertEqual(rows["ew"]["self_flops"], 300)
        self.assertEqual(rows["sp"]["self_flops"], 2 * 100 * 7)
        self.assertEqual(rows["both"]["self_flops"], 11)

    def test_transfer_and_counter(self):
        with self.t.section("copy"):
            self.t.record_memory_transfer(nbytes=1000, direction="cpu_to_gpu")
            self.t.record_memory_transfer(size_mb=2, direction="gpu_to_cpu")
            self.t.record_memory_transfer(nbytes=10)  # default: cpu_to_gpu
            self.t.record_memory_transfer(size_mb=0.5, direction="d2d")
        # 1.5 * 2**43 MiB = 1.5 * 2**63 bytes: past a long long, within the u64 the trace holds
        with self.t.section("huge-copy"):
            self.t.record_memory_transfer(size_mb=1.5 * 2 ** 43, direction="gpu_to_cpu")
        for bad in (2.0 ** 44, -1, float("nan"), float("inf")):
            with self.assertRaises(ValueError):
                self.t.record_memory_transfer(size_mb=bad)
        for v in (5, 7, -3, 2.9):
            self.t.counter("queue depth", v)  # a float is truncated toward zero
        rows, rep = self.rows()
        self.assertEqual(rows["copy"]["h2d_bytes"], 1010)
        self.assertEqual(rows["copy"]["d2h_bytes"], 2 * 1024 * 1024)
        self.assertEqual(rows["copy"]["d2d_bytes"], 512 * 1024)
        self.assertEqual(rows["huge-copy"]["d2h_bytes"], 3 * 2 ** 62)
        counters = {c["name"]: c for th in rep["threads"] for c in th["counters"]}
        c = counters["queue depth"]
        self.assertEqual((c["samples"], c["last"], c["min"], c["max"]), (4, 2, -3, 7))

    def test_enable_disable(self):
        with self.t.section("on"):
            pass
        self.t.disable()
        self.assertFalse(self.t.enabled)
        with self.t.section("off"):
            pass
        self.t.start("off2")
        self.t.stop("off2")
        self.t.enable()
        self.assertTrue(self.t.enabled)
        with self.t.section("on"):
            pass
        rows, rep = self.rows()
        self.assertEqual(rows["on"]["count"], 2)
        self.assertNotIn("off", rows)
        self.assertNotIn("off2", rows)
        self.assertEqual(rep["trace"]["recorder_errors"], 0)

    def test_threads_record_on_their_own_rings(self):
        n_threads, per = 4, 500
        barrier = threading.Barrier(n_threads)

        def work(k):
            barrier.wait()
            s = self.t.section("worker")
            for i in range(per):
                with s:
                    with self.t.section("leaf-%d" % k):
                        pass

        ths = [threading.Thread(target=work, args=(k,)) for k in range(n_threads)]
        for th in ths:
            th.start()
        for th in ths:
            th.join()
        rows, rep = self.rows()
        self.assertEqual(rows["worker"]["count"], n_threads * per)
        for k in range(n_threads):
            self.assertEqual(rows["leaf-%d" % k]["count"], per)
        workers = [th for th in rep["threads"] if any(r["name"] == "worker" for r in th["flat"])]
        self.assertEqual(len(workers), n_threads)
        self.assertEqual(rep["trace"]["recorder_errors"], 0)
        self.assertEqual(rep["trace"]["lost_records"], 0)


class TestNullSafe(unittest.TestCase):
    def test_none_instance_patterns(self):
        ENABLE_PROFILING = False
        timing = ptz.PerformanceTiming("x", path=tmp_path("never.ptz")) if ENABLE_PROFILING else None
        timing and timing.start("a", flops=1)
        timing and timing.stop("a")
        with (timing.section("b") if timing else contextlib.nullcontext()):
            pass
        self.assertIsNone(timing)

    def test_disabled_instance_creates_nothing(self):
        path = tmp_path("disabled.ptz")
        if os.path.exists(path):
            os.unlink(path)
        t = ptz.PerformanceTiming("off", path=path, enabled=False)
        try:
            self.assertFalse(t.enabled)
            with t.section("x", flops=3) as s:
                s.add_flops(1)
                s.add_memory(read=1)
            t.start("y")
            t.stop("y")
            t.stop("not-open")

            @t.profile_function
            def f():
                return 5

            self.assertEqual(f(), 5)
            t.record_memory_transfer(nbytes=5)
            t.counter("c", 1)
            self.assertFalse(os.path.exists(path))
            t.enable()  # now it records
            with t.section("z"):
                pass
        finally:
            t.close()
        rows = {r["name"]: r for r in ptanalyze_json(path)["flat"]}
        self.assertEqual(set(rows), {"z"})


class TestErrors(Base):
    def test_bad_arguments_raise(self):
        with self.assertRaises(TypeError):
            self.t.section(5)
        with self.assertRaises(TypeError):
            self.t.section("x", bogus=1)
        with self.assertRaises(ValueError):
            self.t.section("x", flops=-1)
        with self.assertRaises(ValueError):
            self.t.section("x", read=float("nan"))
        with self.assertRaises(ValueError):
            self.t.section("x", operation_type="fft", shape_info=(1,))
        with self.assertRaises(ValueError):
            self.t.section("x", operation_type="einsum")
        with self.assertRaises(ValueError):
            self.t.section("x", operation_type="einsum", shape_info=("ij,jk->ik", (2, 3), (4, 5)))
        with self.assertRaises(ValueError):
            self.t.section("x", shape_info=(1, 2))
        with self.assertRaises(TypeError):
            self.t.section("x", use_gpu_events=True, stream="s")
        with self.assertRaises(ValueError):
            self.t.section("x", sync=True)
        with self.assertRaises(ValueError):
            self.t.section("x", use_gpu_events=True, stream=5, sync=True)
        with self.assertRaises(ValueError):
            self.t.record_memory_transfer(nbytes=1, direction="sideways")
        with self.assertRaises(TypeError):
            self.t.record_memory_transfer()
        with self.assertRaises(TypeError):
            self.t.counter("c", "one")
        with self.assertRaises(TypeError):
            self.t.start()
        with self.assertRaises(TypeError):
            self.t.section("x")(42)  # decorating a non-callable
        with self.assertRaises(ValueError):
            self.t.log(sort_by="colour")
        rows, rep = self.rows()
        self.assertEqual(rows, {})  # nothing recorded by failed calls
        self.assertEqual(rep["trace"]["recorder_errors"], 0)

    def test_second_recorder_refused(self):
        with self.assertRaises(OSError):
            ptz.PerformanceTiming("second", path=tmp_path("second.ptz"))

    def test_unwritable_path(self):
        self.t.close()
        with self.assertRaises(OSError):
            ptz.PerformanceTiming("bad", path="/nonexistent-dir/x.ptz")


class TestRotation(unittest.TestCase):
    """PTZ_ROTATE_BYTES under the module: the trace rotates into numbered
    parts, and get_timing_data() reads them all (the name the parts share),
    not the first part alone."""

    def setUp(self):
        # restored after tearDown() closed the recorder (addCleanup order)
        self.enterContext(mock.patch.dict(os.environ, PTZ_ROTATE_BYTES="1M"))
        self.path = tmp_path("rot.ptz")
        self.t = ptz.PerformanceTiming("rotation", path=self.path)

    def tearDown(self):
        self.t.close()

    def test_statistics_over_every_part(self):
        n = 300000
        for i in range(n):
            with self.t.section("step"):
                self.t.counter("i", (i * 2654435761) & 0xFFFFFFFFFF)  # values zstd cannot fold away
        self.t.flush()
        parts = sorted(glob.glob(tmp_path("rot.*.ptz")))
        self.assertGreaterEqual(len(parts), 2, parts)
        self.assertFalse(os.path.exists(self.path))  # nothing at the name itself
        # every call is counted or reported lost, once, over all the parts:
        # recording never blocks, so a flusher starved on a busy machine
        # (CI runs suites side by side) drops records, and says how many
        data = self.t.get_timing_data()
        st = self.t.get_stats()
        self.assertEqual(data["sections"]["step"]["count"] + st["losses"]["lost_sections"], n)
        self.assertGreater(data["sections"]["step"]["count"], n // 2)


class TestFlight(unittest.TestCase):
    """PTZ_MODE=flight under the module: the file stays the area's size
    however much is recorded; snapshot() writes a window ptanalyze reads as
    one, with every section of the last iterations; trigger() is rate
    limited; snapshot() to an impossible path raises OSError."""

    def setUp(self):
        self.enterContext(mock.patch.dict(os.environ, PTZ_MODE="flight", PTZ_FLIGHT_BYTES="1M",
                                          PTZ_TRIGGER_MIN_MS="100000", PTZ_SNAPSHOT_PATH=tmp_path("trig-%n.ptz")))
        self.path = tmp_path("flight.ptz")
        self.t = ptz.PerformanceTiming("flight", path=self.path)

    def tearDown(self):
        self.t.close()

    def test_snapshot_and_trigger(self):
        n = 300000
        for i in range(n):
            with self.t.section("step"):
                # values zstd cannot fold away: 300,000 iterations fill the 1 MiB area more than once
                self.t.counter("i", (i * 2654435761) & 0xFFFFFFFFFF)
        self.assertEqual(os.path.getsize(self.path), 4096 + (1 << 20))
        snap = tmp_path("snap.ptz")
        self.t.snapshot(snap)
        rep = ptanalyze_json(snap)
        self.assertEqual(rep["trace"]["window"]["kind"], "snapshot")
        self.assertEqual(rep["trace"]["unmatched_ends"], 0)
        step = {r["name"]: r for r in rep["flat"]}["step"]
        self.assertGreater(step["count"], 1000)
        self.assertLess(step["count"], n)  # a window, not the run
        self.assertTrue(self.t.trigger("slow request"))
        self.assertFalse(self.t.trigger("again"))  # rate-limited
        with self.assertRaises(OSError):
            self.t.snapshot(tmp_path("no/such/dir/x.ptz"))
        self.t.close()
        with self.assertRaises(OSError):
            self.t.snapshot(snap)
        deadline = time.time() + 10
        trig = tmp_path("trig-1.ptz")
        while time.time() < deadline and not (os.path.exists(trig) and ptanalyze_json(trig)["trace"]["closed"]):
            time.sleep(0.05)
        self.assertEqual(ptanalyze_json(trig)["trace"]["window"]["kind"], "snapshot")
        rep = ptanalyze_json(self.path)
        self.assertEqual(rep["trace"]["window"]["kind"], "flight")
        self.assertGreaterEqual(rep["trace"]["window"]["laps"], 1)
        self.assertEqual(rep["trace"]["snapshots"], {"failed": 1, "last_errno": 2, "triggers_limited": 1})


class TestStatistics(Base):
    def record(self):
        for i in range(50):
            with self.t.section("step", flops=1000, read=4096):
                with self.t.section("einsum", flops=2000):
                    sum(range(200))
                with self.t.section("update", written=8192):
                    pass
        self.t.start("tail")
        self.t.stop("tail")
        self.t.stop("not-open")

    def test_get_timing_data_equals_ptanalyze_json(self):
        self.record()
        data = self.t.get_timing_data()
        # the same trace, read by the CLI while still open
        rep = ptanalyze_json(self.path)
        self.check_equal(data, rep, exact=False)
        self.assertEqual(data["sections"]["step"]["count"], 50)
        self.assertEqual(data["paths"]["step;einsum"]["flops"], 50 * 2000)
        self.assertEqual(data["trace"]["recorder_errors"], 1)
        # closed: both read the same final file, every figure identical
        self.t.close()
        self.check_equal(self.t.get_timing_data(), ptanalyze_json(self.path), exact=True)

    def check_equal(self, data, rep, exact):
        flat = {r["name"]: r for r in rep["flat"]}
        tree = {";".join(r["path"]): r for r in rep["tree"]}
        self.assertEqual(set(data["sections"]), set(flat))
        self.assertEqual(set(data["paths"]), set(tree))
        for name, row in data["sections"].items():
            same_row(self, row, flat[name], name, exact)
            self.assertEqual(row["duration"], row["total_ns"] / 1e9)
            self.assertEqual(row["calls"], row["count"])
        for p, row in data["paths"].items():
            same_row(self, row, tree[p], p, exact)
        for k in ("sections", "records", "lost_records", "recorder_errors"):
            self.assertEqual(data["trace"][k], rep["trace"][k], k)
        if exact:
            self.assertEqual(data["trace"], rep["trace"])

    def test_get_timing_data_sees_new_sections(self):
        with self.t.section("a"):
            pass
        self.assertEqual(self.t.get_timing_data()["sections"]["a"]["count"], 1)
        for _ in range(999):
            with self.t.section("a"):
                pass
        self.assertEqual(self.t.get_timing_data()["sections"]["a"]["count"], 1000)

    def test_queries_while_threads_record(self):
        stop = threading.Event()
        done = []

        def work():
            n = 0
            s = self.t.section("busy", flops=1)
            while not stop.is_set():
                with s:
                    n += 1
            done.append(n)

        ths = [threading.Thread(target=work) for _ in range(2)]
        for th in ths:
            th.start()
        seen = []
        try:
            for _ in range(20):
                row = self.t.get_timing_data()["sections"].get("busy")
                seen.append(row["count"] if row else 0)
        finally:
            stop.set()
            for th in ths:
                th.join()
        self.assertEqual(seen, sorted(seen))  # each query sees at least what the last one saw
        self.assertGreater(seen[-1], 0)
        self.t.flush()
        data = self.t.get_timing_data()
        # two threads in a tight loop can outrun the flusher: what a full
        # ring drops is counted as lost whole sections, never half of one
        busy = data["sections"]["busy"]
        self.assertEqual(busy["count"] + data["trace"]["lost_sections"], sum(done))
        self.assertEqual(busy["self_flops"], busy["count"])

    def test_get_stats(self):
        self.record()
        st = self.t.get_stats()
        self.assertEqual(st["section_count"], 50 * 3 + 1)
        self.assertEqual(st["error_count"], 1)
        self.assertFalse(st["gpu_timing_enabled"])  # no CUDA runtime here
        self.assertEqual(st["losses"], {"lost_records": 0, "lost_sections": 0})
        data = self.t.get_timing_data()
        top = data["sections"]["step"]["total_ns"] + data["sections"]["tail"]["total_ns"]
        self.assertAlmostEqual(st["total_duration"], top / 1e9, delta=1e-12)
        self.assertEqual(st["recorder"]["errors"], 1)

    def test_log_output(self):
        self.record()
        stream = io.StringIO()
        logger = logging.getLogger("ptz-test-log")
        logger.propagate = False
        logger.setLevel(logging.INFO)
        h = logging.StreamHandler(stream)
        logger.addHandler(h)
        try:
            lines = self.t.log(logger, include_percentages=True, sort_by="flops")
        finally:
            logger.removeHandler(h)
        out = stream.getvalue().splitlines()
        self.assertEqual(out, lines)
        self.assertIn("151 sections, 1 recorder errors, 0 records lost", out[0])
        names = [line.split()[0] for line in out[1:]]
        # by inclusive FLOPs: step (150,000) > einsum (100,000) > update, tail (0)
        self.assertEqual(names[:2], ["step", "einsum"])
        self.assertEqual(set(names), {"step", "einsum", "update", "tail"})
        data = self.t.get_timing_data()
        step = next(line for line in out if line.startswith("step "))
        self.assertIn("calls=50 ", step)
        self.assertIn("flops=150000", step)
        self.assertIn("%.1f%%" % (100 * data["sections"]["step"]["share"]), step)
        self.assertIn("GFLOP/s", step)
        plain = self.t.log(logger, include_percentages=False, sort_by="name")
        self.assertEqual([line.split()[0] for line in plain[1:]], sorted(names))
        self.assertNotIn("%", plain[1])

    def test_export_csv_round_trip(self):
        self.record()
        mine = tmp_path("export.csv")
        self.t.export_csv(mine)
        with open(mine, newline="") as f:
            rows = list(csv.DictReader(f))
        flat = {r["name"]: r for r in rows if r["view"] == "flat" and r["thread"] == "all"}
        data = self.t.get_timing_data()  # a later reading (same_row(exact=False) says why 1 ns)
        for name in ("step", "einsum", "update", "tail"):
            d = data["sections"][name]
            self.assertEqual(int(flat[name]["count"]), d["count"], name)
            self.assertEqual(int(flat[name]["flops"]), d["flops"], name)
            self.assertEqual(int(flat[name]["read_bytes"]), d["read_bytes"], name)
            self.assertLessEqual(abs(int(flat[name]["total_ns"]) - d["total_ns"]), 3 * d["count"] + d["total_ns"] * 1e-5, name)
        # closed, the CLI's CSV of the same file is the module's, byte for byte
        self.t.close()
        self.t.export_csv(mine)
        theirs = tmp_path("cli.csv")
        subprocess.run([PTANALYZE, self.path, "--csv", theirs, "--no-progress"], check=True)
        with open(theirs) as a, open(mine) as b:
            self.assertEqual(b.read(), a.read())

    def test_export_json_equals_cli(self):
        self.record()
        mine = tmp_path("export.json")
        self.t.export_json(mine)
        with open(mine) as f:
            doc = json.load(f)
        self.assertEqual(doc["schema"], "ptanalyze-report/1")
        rep = ptanalyze_json(self.path)  # the open trace, read again
        for a, b in zip(doc["flat"], rep["flat"]):
            same_row(self, a, b, a["name"], exact=False)
        for a, b in zip(doc["tree"], rep["tree"]):
            same_row(self, a, b, ";".join(a["path"]), exact=False)
        self.t.close()
        self.t.export_json(mine)
        with open(mine) as f:
            self.assertEqual(json.load(f), ptanalyze_json(self.path))

    def test_get_profiler_is_process_wide(self):
        self.t.close()
        os.environ["PTZ_TRACE"] = tmp_path("profiler-%p.ptz")
        try:
            p = ptz.get_profiler()
            self.assertIs(ptz.get_profiler(), p)
            self.assertEqual(p.path, tmp_path("profiler-%d.ptz" % os.getpid()))
            with p.section("via-profiler"):
                pass
            self.assertEqual(p.get_timing_data()["sections"]["via-profiler"]["count"], 1)
            p.close()
        finally:
            del os.environ["PTZ_TRACE"]


class TestSampling(Base):
    """sample=p (pt_begin_sampled()): requests recorded with probability p,
    the analyzer's estimates (doc/analyzer-output.md section 13)."""

    def test_section_sample_estimates(self):
        n, p = 4000, 0.25
        for _ in range(n):
            with self.t.section("request", sample=p):
                with self.t.section("work"):
                    pass
        rows, rep = self.rows()
        samp = rep["trace"]["sampling"]
        k = samp["requests"]
        sigma = (n * p * (1 - p)) ** 0.5  # binomial: 27.4
        self.assertLess(abs(k - n * p), 5 * sigma)
        self.assertEqual(samp["p_min"], p)
        paths = {tuple(r["path"]): r for r in rep["tree"]}
        for path in (("request",), ("request", "work")):
            row = paths[path]
            self.assertEqual(row["count"], k)  # the row's own figures: what was recorded
            est = row["estimate"]
            self.assertAlmostEqual(est["count"], k / p)
            half = 1.959963984540054 * (k * (1 - p)) ** 0.5 / p  # one occurrence per request
            self.assertAlmostEqual(est["count_hi"], k / p + half, delta=1e-6 * n)
            self.assertAlmostEqual(est["count_lo"], max(k / p - half, k), delta=1e-6 * n)
            self.assertLess(abs(est["count"] - n), 5 * half / 1.96)
            self.assertEqual(est["sampled_requests"], k)
        self.assertEqual(rep["trace"]["recorder_errors"], 0)
        self.assertEqual(rep["trace"]["lost_records"], 0)

    def test_many_traces_use_estimates(self):
        """`ptanalyze report A B` and `ptanalyze merge` of their reports
        (doc/analyzer-output.md section 12): a path inside sampled requests
        is summed over the traces by its estimates, not by what was
        recorded (1 in 4 calls here), and is marked; the others stay exact."""
        n, p = 2000, 0.25
        for _ in range(n):
            with self.t.section("request", sample=p):
                pass
        with self.t.section("exact"):
            pass
        _, rep = self.rows()
        one = {tuple(r["path"]): r for r in rep["tree"]}
        k = one[("request",)]["count"]
        out = subprocess.run([PTANALYZE, "report", self.path, self.path, "--json", "-"], capture_output=True,
                             text=True, check=True).stdout
        view = json.loads(out)
        rows = {r["path"]: r for r in view["rows"]}
        req, ex = rows["request"], rows["exact"]
        self.assertTrue(req["sampled"])
        self.assertEqual(req["count"], 2 * k)  # recorded
        self.assertAlmostEqual(req["est_count"], 2 * k / p)
        self.assertAlmostEqual(req["est_total_ns"], 2 * one[("request",)]["estimate"]["total_ns"], delta=1e-6)
        self.assertAlmostEqual(req["max_over_mean"], 1.0)
        self.assertFalse(ex["sampled"])
        self.assertIsNone(ex["est_count"])
        text = subprocess.run([PTANALYZE, "report", self.path, self.path], capture_output=True, text=True,
                              check=True).stdout
        self.assertIn("~%d " % round(2 * k / p), text)
        self.assertIn("~: inside sampled requests", text)
        # the same view from the two reports
        rep_json = tmp_path("sampled-report.json")
        subprocess.run([PTANALYZE, self.path, "--json", rep_json], capture_output=True, check=True)
        merged = json.loads(subprocess.run([PTANALYZE, "merge", rep_json, rep_json, "--json", "-"],
                                           capture_output=True, text=True, check=True).stdout)
        for t in merged["traces"] + view["traces"]:
            t.pop("file")
        self.assertEqual(merged, view)

    def test_log_marks_estimates(self):
        for _ in range(400):
            with self.t.section("req", sample=0.5):
                pass
        with self.t.section("exact"):
            pass
        lines = self.t.log(logger=logging.getLogger("ptz-test-sampling"))
        self.assertTrue(any(l.startswith("sampled: ") for l in lines), lines)
        req = [l for l in lines if l.startswith("req ")][0]
        self.assertIn("calls=~", req)
        self.assertIn("estimated", req)
        exact = [l for l in lines if l.startswith("exact ")][0]
        self.assertNotIn("~", exact)

    def test_start_sample_never_and_always(self):
        for _ in range(500):
            self.t.start("never", sample=0.0)
            self.t.start("inside")
            self.t.stop("inside")
            self.t.stop("never")
            self.t.start("always", sample=1.0, flops=2)
            self.t.stop("always")
        with self.assertRaises(ValueError):
            self.t.start("bad", sample=float("nan"))
        with self.assertRaises(ValueError):
            self.t.section("bad", sample=float("nan"))
        with self.assertRaises(TypeError):
            self.t.section("bad", sample="0.5")
        rows, rep = self.rows()
        self.assertNotIn("never", rows)
        self.assertNotIn("inside", rows)
        self.assertEqual(rows["always"]["count"], 500)
        self.assertEqual(rows["always"]["self_flops"], 1000)
        self.assertNotIn("estimate", rows["always"])
        self.assertNotIn("sampling", rep["trace"])
        self.assertEqual(rep["trace"]["recorder_errors"], 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
