#!/usr/bin/env python3
"""bench/overhead.py - always-on overhead of ptz on the real example workloads.

Runs each example and its PT_DISABLE build (no recorder at all) alternately,
N times each (order rotated every round so drift hits all alike), timing
whole runs (process start to exit: pt_open, recording, flush and pt_close
included). A third variant runs the instrumented binary with a NULL
recorder (--trace ''): same machine code, nothing recorded, so a gap
between it and PT_DISABLE is code generation, not recording. Prints the
medians and the overhead as the median of the paired ratios
recording / PT_DISABLE (one pair per round: the two runs are minutes
closer in time than the whole series, so slow drift of a shared machine
cancels), with a 95% bootstrap confidence interval of that median
(percentile method, 10,000 resamples of the rounds, seeded).
Target: overhead below 1%. Not a test: figures only.

usage: bench/overhead.py BUILD_DIR [--runs N] [--example NAME ...]
"""
import argparse, os, random, statistics, subprocess, sys, tempfile, time

def run(cmd):
    """(wall seconds, CPU seconds: user + sys of the whole process, flusher included)"""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        raise SystemExit(f"{cmd[0]} failed with status {status}")
    return wall, ru.ru_utime + ru.ru_stime

def boot_ci(rng, r):
    """95% percentile-bootstrap CI of the median of the paired ratios r"""
    meds = sorted(statistics.median([rng.choice(r) for _ in r]) for _ in range(10000))
    return meds[249], meds[9749]

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--example", action="append")
    a = ap.parse_args()
    examples = a.example or ["led_optimizer", "compress_corpus"]
    rng = random.Random(12345)
    tmp = tempfile.mkdtemp(prefix="ptz-overhead-")
    print(f"ptz always-on overhead: {a.runs} interleaved runs each; wall = whole-process wall time,")
    print("cpu = whole-process user+sys time (flusher included); ratio = median of per-round recording / PT_DISABLE")
    print(f"{'example':16} {'time':4} {'recording':>10} {'NULL rec.':>10} {'PT_DISABLE':>11} {'ratio':>7} {'95% CI':>17} {'overhead':>9}")
    for ex in examples:
        on = os.path.join(a.build, "examples", ex)
        off = on + "_disabled"
        if not (os.path.exists(on) and os.path.exists(off)):
            print(f"{ex:18} not built"); continue
        trace = os.path.join(tmp, ex + ".ptz")
        cmd_on, cmd_null, cmd_off = [on, "--trace", trace], [on, "--trace", ""], [off, "--trace", trace]
        run(cmd_on); run(cmd_off)  # warm the page cache and the dynamic loader
        t_on, t_null, t_off = [], [], []
        for i in range(a.runs):
            trio = [(cmd_on, t_on), (cmd_null, t_null), (cmd_off, t_off)]
            trio = trio[i % 3:] + trio[:i % 3]
            for cmd, acc in trio:
                acc.append(run(cmd))
        for k, label in ((0, "wall"), (1, "cpu")):
            on_k = [x[k] for x in t_on]
            null_k = [x[k] for x in t_null]
            off_k = [x[k] for x in t_off]
            m_on, m_null, m_off = (statistics.median(v) for v in (on_k, null_k, off_k))
            pairs = [x / y for x, y in zip(on_k, off_k)]
            r = statistics.median(pairs)
            lo, hi = boot_ci(rng, pairs)
            print(f"{ex:16} {label:4} {m_on:9.3f}s {m_null:9.3f}s {m_off:10.3f}s {r:7.4f} [{lo:.4f}, {hi:.4f}] {100*(r-1):+8.2f}%")
        if os.path.exists(trace):
            os.unlink(trace)
    os.rmdir(tmp)
    print("target: overhead below 1% (ratio < 1.01); a CI containing 1.0 means no measurable overhead")

if __name__ == "__main__":
    sys.exit(main())
