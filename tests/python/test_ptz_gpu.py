"""tests/python/test_ptz_gpu.py - GPU sections of the ptz Python module on
the fake CUDA runtime (tests/gpu/fake_cudart.c), loaded by the recorder
from PTZ_CUDA_RUNTIME and scripted here through ctypes (the same file, so
the same library state).

Invariants covered:
  - use_gpu_events=True records one CUDA event pair per section on the
    stream given as an int handle, as an object with .ptr (CuPy) and with
    .cuda_stream (PyTorch), for section(), start()/stop() and a decorated
    function; the analyzer pairs each into a GPU range of that section;
  - no host synchronization by default (no synchronize() call); sync=True
    calls the stream's synchronize() at entry and exit;
  - enable_gpu_timing=False records the CPU section only (no event);
  - get_stats() reports GPU timing enabled;
  - log() gives a GPU section's GFLOP/s over its GPU time.
"""
import ctypes
import json
import logging
import os
import subprocess
import time
import unittest

import ptz

TMP = os.environ.get("PTZ_TEST_TMPDIR", "/tmp")
PTANALYZE = os.environ["PTANALYZE"]
fake = ctypes.CDLL(os.environ["FAKE_CUDART"])
fake.fake_set_device_count.argtypes = [ctypes.c_int, ctypes.c_int]
fake.fake_stream_create.argtypes = [ctypes.c_int]
fake.fake_stream_create.restype = ctypes.c_void_p
fake.fake_launch.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
fake.fake_launch.restype = ctypes.c_uint64
fake.fake_stream_record_calls.argtypes = [ctypes.c_void_p]
fake.fake_stream_record_calls.restype = ctypes.c_uint64


def tmp_path(name):
    d = os.path.join(TMP, "python-tests")
    os.makedirs(d, exist_ok=True)
    return os.path.join(d, name)


class CupyStream:
    def __init__(self, h):
        self.ptr = h


class TorchStream:
    def __init__(self, h):
        self.cuda_stream = h


class SyncStream:
    def __init__(self, h):
        self.ptr = h
        self.syncs = 0

    def synchronize(self):
        self.syncs += 1


def flat_rows(path):
    out = subprocess.run([PTANALYZE, path, "--json", "-", "--no-progress"], check=True,
                         stdout=subprocess.PIPE).stdout
    rep = json.loads(out)
    return {r["name"]: r for r in rep["flat"]}, rep


class TestGpu(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        fake.fake_set_device_count(1, 0)
        cls.s = fake.fake_stream_create(0)

    def warm(self, t):
        """GPU sections until the device's event pool exists (the first
        ones find it empty and are counted, doc/gpu-timing.md)."""
        deadline = time.monotonic() + 5
        while t._recorder_stats()["gpu_launched"] == 0 and time.monotonic() < deadline:
            with t.section("warm", use_gpu_events=True, stream=self.s):
                fake.fake_launch(self.s, 1000)
            time.sleep(0.001)
        self.assertGreater(t._recorder_stats()["gpu_launched"], 0)

    def test_streams_sections_start_stop_decorator(self):
        path = tmp_path("gpu.ptz")
        t = ptz.PerformanceTiming("gpu", path=path)
        try:
            self.warm(t)
            s = self.s
            before = fake.fake_stream_record_calls(s)
            kinds = {"int": s, "ptr": CupyStream(s), "cuda_stream": TorchStream(s)}
            for kind, obj in kinds.items():
                for _ in range(5):
                    with t.section("k-" + kind, use_gpu_events=True, stream=obj, flops=100):
                        fake.fake_launch(s, 200000)
            t.start("started", use_gpu_events=True, stream=TorchStream(s), read=64)
            fake.fake_launch(s, 100000)
            t.stop("started", flops=10)

            @t.section("gdec", use_gpu_events=True, stream=CupyStream(s))
            def kernel():
                fake.fake_launch(s, 50000)
                return 1

            self.assertEqual(kernel() + kernel(), 2)
            sync = SyncStream(s)
            with t.section("synced", use_gpu_events=True, stream=sync):
                fake.fake_launch(s, 1000)
            self.assertEqual(sync.syncs, 0)  # no host synchronization by default
            with t.section("synced", use_gpu_events=True, stream=sync, sync=True):
                fake.fake_launch(s, 1000)
            self.assertEqual(sync.syncs, 2)  # entry and exit
            # 15 + 1 + 2 + 2 sections, one event pair each
            self.assertEqual(fake.fake_stream_record_calls(s) - before, 2 * 20)
            self.assertTrue(t.get_stats()["gpu_timing_enabled"])
            # log(): a GPU section's GFLOP/s over its GPU time, not its launch
            # (once the CUDA thread has written the ranges)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                rs = t._recorder_stats()
                if rs["gpu_ranges"] + rs["gpu_dropped"] >= rs["gpu_launched"]:
                    break
                time.sleep(0.01)
            rows_now = t.get_timing_data()["sections"]
            line = [ln for ln in t.log(logging.getLogger("ptz-test")) if ln.startswith("k-int ")][0]
            want = rows_now["k-int"]["gpu_gflop_per_s"]
            self.assertIsNotNone(want)
            self.assertIn("%.3f GFLOP/s (GPU time)" % want, line)
            self.assertNotIn("%.3f GFLOP/s" % rows_now["k-int"]["gflop_per_s"], line)
        finally:
            t.close()
        rows, rep = flat_rows(path)
        for kind in ("int", "ptr", "cuda_stream"):
            r = rows["k-" + kind]
            self.assertEqual(r["count"], 5)
            self.assertEqual(r["gpu_count"], 5, kind)
            self.assertGreater(r["gpu_total_ns"], 0)
            self.assertEqual(r["self_flops"], 500)
        self.assertEqual(rows["started"]["gpu_count"], 1)
        self.assertEqual(rows["started"]["self_flops"], 10)
        self.assertEqual(rows["started"]["self_read_bytes"], 64)
        self.assertEqual(rows["gdec"]["gpu_count"], 2)
        self.assertEqual(rows["synced"]["gpu_count"], 2)
        self.assertEqual(rep["trace"]["recorder_errors"], 0)

    def test_gpu_timing_disabled(self):
        path = tmp_path("gpu-off.ptz")
        t = ptz.PerformanceTiming("gpu-off", path=path, enable_gpu_timing=False)
        try:
            self.assertFalse(t.gpu_timing_enabled)
            before = fake.fake_stream_record_calls(self.s)
            for _ in range(3):
                with t.section("cpu-only", use_gpu_events=True, stream=CupyStream(self.s)):
                    fake.fake_launch(self.s, 1000)
            t.start("cpu-start", use_gpu_events=True, stream=self.s)
            t.stop("cpu-start")
            self.assertEqual(fake.fake_stream_record_calls(self.s), before)
            self.assertFalse(t.get_stats()["gpu_timing_enabled"])
        finally:
            t.close()
        rows, rep = flat_rows(path)
        self.assertEqual(rows["cpu-only"]["count"], 3)
        self.assertEqual(rows["cpu-only"].get("gpu_count", 0), 0)
        self.assertEqual(rows["cpu-start"]["count"], 1)
        self.assertEqual(rep["trace"]["recorder_errors"], 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
