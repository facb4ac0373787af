"""bench/gpu_python_check.py - the ptz Python module on a real GPU, with
PyTorch and CuPy streams (issue 19: "use_gpu_events=True ... on a real GPU
when one is available"). The unit tests (tests/python/test_ptz_gpu.py) run
the same API on the fake CUDA runtime; this is the check for a machine with
a GPU, torch and cupy, run by hand (CI has no GPU).

usage: python3 bench/gpu_python_check.py PTANALYZE OUTDIR
       (PYTHONPATH holding the built ptz package)

Every check prints "PASS name: ..." or "FAIL name: ..."; exit 1 on a FAIL.
Reference GPU times come from the libraries' own CUDA events (torch.cuda.Event,
cupy.cuda.Event) recorded on the same stream right around each section, so
the reference range holds ptz's range and nothing else:
  - GPU time: ptz's gpu_total_ns within 2 % + 10 us a section of the
    reference events' elapsed time;
  - launch is not GPU time: without sync, a section's CPU time (the launch)
    is under a fifth of its GPU time for a 4096^3 FP32 matmul;
  - sync=True: the CPU time covers the GPU work (>= 95 % of GPU time);
  - GFLOP/s from GPU time: gpu_gflop_per_s == flops / gpu_total_ns;
  - get_timing_data(), taken before close(), equals `ptanalyze --json` on
    the closed trace: counts exactly, times within 1e-6 relative (the
    finished trace's clock calibration has one more point, doc/trace-format.md
    §7; the H100 run differed by at most 4 ns in 9 ms);
  - two threads on two streams: every section paired, none lost.
"""
import json
import os
import subprocess
import sys
import threading
import time

import torch
import cupy as cp

import ptz

PTANALYZE, OUT = sys.argv[1], sys.argv[2]
fails = []


def check(name, ok, detail):
    print("%s %s: %s" % ("PASS" if ok else "FAIL", name, detail), flush=True)
    if not ok:
        fails.append(name)


def close_to(ptz_ns, ref_ns, n):
    return abs(ptz_ns - ref_ns) <= 0.02 * ref_ns + 10e3 * n


torch.backends.cuda.matmul.allow_tf32 = False
N = 4096
MM_FLOPS = 2 * N ** 3
x = torch.randn(N, N, device="cuda")
ts = torch.cuda.Stream()
for _ in range(3):  # cuBLAS handle and workspace before any timing
    with torch.cuda.stream(ts):
        x @ x
torch.cuda.synchronize()
a = cp.ones((2048, 2048), dtype=cp.float32)
cs = cp.cuda.Stream(non_blocking=True)
with cs:
    cp.einsum("ij,jk->ik", a, a)
cs.synchronize()

path = os.path.join(OUT, "python-gpu.ptz")
t = ptz.PerformanceTiming("gpu-python-check", path=path)

# The device's event pool is made off the hot path: the first GPU sections
# find it empty (counted, doc/gpu-timing.md). Warm until one is timed.
deadline = time.monotonic() + 10
warm = 0
while t._recorder_stats()["gpu_launched"] == 0 and time.monotonic() < deadline:
    with t.section("warm", use_gpu_events=True, stream=ts):
        with torch.cuda.stream(ts):
            x + 1
    warm += 1
    time.sleep(0.001)
check("gpu-on", t._recorder_stats()["gpu_launched"] > 0,
      "GPU timing on after %d warm sections; recorder %s" % (warm, t._recorder_stats()))

# A. PyTorch stream (.cuda_stream), no sync: launch time is not GPU time.
ITER = 30
ref_mm = []
for _ in range(ITER):
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(ts):
        e0.record(ts)
        with t.section("torch-matmul", use_gpu_events=True, stream=ts, flops=MM_FLOPS):
            y = x @ x
        e1.record(ts)
    ref_mm.append((e0, e1))
ts.synchronize()
ref_mm_ns = sum(e0.elapsed_time(e1) for e0, e1 in ref_mm) * 1e6

# B. CuPy stream (.ptr), einsum with FLOPs from operation_type.
ref_es = []
with cs:
    for _ in range(20):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record(cs)
        with t.section("cupy-einsum", use_gpu_events=True, stream=cs, operation_type="einsum",
                       shape_info=("ij,jk->ik", (2048, 2048), (2048, 2048))):
            b = cp.einsum("ij,jk->ik", a, a)
        e1.record(cs)
        ref_es.append((e0, e1))
cs.synchronize()
ref_es_ns = sum(cp.cuda.get_elapsed_time(e0, e1) for e0, e1 in ref_es) * 1e6

# C. sync=True: the proposal's optional synchronization.
for _ in range(5):
    with torch.cuda.stream(ts):
        with t.section("torch-matmul-sync", use_gpu_events=True, stream=ts, sync=True, flops=MM_FLOPS):
            y = x @ x

# D. start/stop on the legacy default stream (int 0) and a decorator on CuPy's.
for _ in range(5):
    t.start("default-stream", use_gpu_events=True, stream=0, read=x.numel() * 4)
    y = x @ x
    t.stop("default-stream", flops=MM_FLOPS)


@t.section("cupy-decorated", use_gpu_events=True, stream=cs)
def cupy_kernel():
    with cs:
        return cp.einsum("ij,jk->ik", a, a)


for _ in range(7):
    cupy_kernel()
torch.cuda.synchronize()
cs.synchronize()

# E. Two threads, each on its own stream and ring.
def worker(k, out):
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for _ in range(50):
            with t.section("thread-%d" % k, use_gpu_events=True, stream=s):
                x.mul(2.0)
    s.synchronize()
    out[k] = True


done = {}
ths = [threading.Thread(target=worker, args=(k, done)) for k in range(2)]
for th in ths:
    th.start()
for th in ths:
    th.join()

# F. Overhead on the real runtime: a section with and without an event pair.
def cost(gpu):
    n = 20000
    t0 = time.perf_counter_ns()
    for _ in range(n):
        with t.section("cost-gpu" if gpu else "cost-cpu", use_gpu_events=gpu, stream=ts):
            pass
    return (time.perf_counter_ns() - t0) / n


cost(True)
c_gpu = sorted(cost(True) for _ in range(5))[2]
c_cpu = sorted(cost(False) for _ in range(5))[2]
ts.synchronize()
print("figure: section with CUDA event pair %.2f us, without %.2f us (medians of 5 x 20000)" % (
    c_gpu / 1e3, c_cpu / 1e3), flush=True)

data = t.get_timing_data()
stats = t.get_stats()
t.close()

rep = json.loads(subprocess.run([PTANALYZE, path, "--json", "-", "--no-progress"], check=True,
                                stdout=subprocess.PIPE).stdout)
rows = {r["name"]: r for r in rep["flat"]}
with open(os.path.join(OUT, "python-gpu-report.txt"), "w") as f:
    f.write(subprocess.run([PTANALYZE, path, "--report", "--no-progress"], stdout=subprocess.PIPE,
                           text=True).stdout)

mm = rows["torch-matmul"]
check("torch-count", mm["count"] == ITER and mm["gpu_count"] == ITER,
      "count %d, gpu_count %s" % (mm["count"], mm.get("gpu_count")))
check("torch-gpu-time", close_to(mm["gpu_total_ns"], ref_mm_ns, ITER),
      "ptz GPU %.3f ms vs torch events %.3f ms" % (mm["gpu_total_ns"] / 1e6, ref_mm_ns / 1e6))
check("launch-not-gpu", mm["total_ns"] < 0.2 * mm["gpu_total_ns"],
      "CPU (launch) %.3f ms vs GPU %.3f ms" % (mm["total_ns"] / 1e6, mm["gpu_total_ns"] / 1e6))
g = mm.get("gpu_gflop_per_s")
want = MM_FLOPS * ITER / mm["gpu_total_ns"]
check("gflops-from-gpu-time", g is not None and abs(g - want) <= 1e-6 * want,
      "gpu_gflop_per_s %s vs flops/gpu_total_ns %.1f (CPU-time rate %s)" % (g, want, mm.get("gflop_per_s")))

es = rows["cupy-einsum"]
check("cupy-count", es["count"] == 20 and es["gpu_count"] == 20,
      "count %d, gpu_count %s" % (es["count"], es.get("gpu_count")))
check("cupy-gpu-time", close_to(es["gpu_total_ns"], ref_es_ns, 20),
      "ptz GPU %.3f ms vs cupy events %.3f ms" % (es["gpu_total_ns"] / 1e6, ref_es_ns / 1e6))
check("einsum-flops", es["self_flops"] == 20 * 2 * 2048 ** 3,
      "self_flops %d (numpy's count for ij,jk->ik: 2*2048^3 a call)" % es["self_flops"])

sy = rows["torch-matmul-sync"]
check("sync-covers-gpu", sy["gpu_count"] == 5 and sy["total_ns"] >= 0.95 * sy["gpu_total_ns"],
      "CPU %.3f ms vs GPU %.3f ms" % (sy["total_ns"] / 1e6, sy.get("gpu_total_ns", 0) / 1e6))
ds = rows["default-stream"]
check("start-stop-default-stream", ds["count"] == 5 and ds["gpu_count"] == 5 and
      ds["self_flops"] == 5 * MM_FLOPS and ds["self_read_bytes"] == 5 * N * N * 4,
      "count %d gpu_count %s flops %d read %d" % (ds["count"], ds.get("gpu_count"), ds["self_flops"],
                                                  ds["self_read_bytes"]))
cd = rows["cupy-decorated"]
check("decorator-cupy", cd["count"] == 7 and cd["gpu_count"] == 7,
      "count %d gpu_count %s" % (cd["count"], cd.get("gpu_count")))
for k in range(2):
    r = rows["thread-%d" % k]
    check("thread-%d" % k, done.get(k) and r["count"] == 50 and r["gpu_count"] == 50,
          "count %d gpu_count %s" % (r["count"], r.get("gpu_count")))
check("no-recorder-errors", rep["trace"]["recorder_errors"] == 0 and rep["trace"]["lost_records"] == 0,
      "recorder_errors %d lost_records %d" % (rep["trace"]["recorder_errors"], rep["trace"]["lost_records"]))
check("stats", stats["gpu_timing_enabled"] and stats["error_count"] == 0,
      "gpu_timing_enabled %s error_count %d" % (stats["gpu_timing_enabled"], stats["error_count"]))

same = []
for name in ("torch-matmul", "cupy-einsum", "torch-matmul-sync", "default-stream", "cupy-decorated"):
    d, r = data["sections"][name], rows[name]
    for key in ("count", "total_ns", "gpu_count", "gpu_total_ns", "self_flops"):
        a, b = d.get(key), r.get(key)
        if a != b and (key.endswith("count") or key == "self_flops" or a is None or b is None
                       or abs(a - b) > 1e-6 * max(a, b)):
            same.append("%s.%s %s != %s" % (name, key, d.get(key), r.get(key)))
check("get_timing_data-equals-json", not same, "; ".join(same) or "5 sections x 5 figures equal")

print("%d checks failed" % len(fails) if fails else "all checks passed", flush=True)
sys.exit(1 if fails else 0)
