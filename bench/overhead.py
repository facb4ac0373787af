#!/usr/bin/env python3
"""bench/overhead.py - always-on overhead of ptz on the real example workloads.

Runs each example and its PT_DISABLE build (no recorder at all) alternately,
N times each (order swapped every round so drift hits both alike), timing
whole runs (process start to exit: pt_open, recording, flush and pt_close
included). Prints the median of each, the ratio of medians, and a 95%
bootstrap confidence interval of that ratio (percentile method, 10,000
resamples, seeded). Target: overhead below 1%. Not a test: figures only.

usage: bench/overhead.py BUILD_DIR [--runs N] [--example NAME ...]
"""
import argparse, os, random, statistics, subprocess, sys, tempfile, time

def run(cmd):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--example", action="append")
    a = ap.parse_args()
    examples = a.example or ["led_optimizer", "compress_corpus"]
    rng = random.Random(12345)
    tmp = tempfile.mkdtemp(prefix="ptz-overhead-")
    print(f"ptz always-on overhead: {a.runs} interleaved runs each, whole-process wall time")
    print(f"{'example':18} {'median on':>10} {'median off':>11} {'ratio':>7} {'95% CI':>17} {'overhead':>9}")
    for ex in examples:
        on = os.path.join(a.build, "examples", ex)
        off = on + "_disabled"
        if not (os.path.exists(on) and os.path.exists(off)):
            print(f"{ex:18} not built"); continue
        trace = os.path.join(tmp, ex + ".ptz")
        cmd_on, cmd_off = [on, "--trace", trace], [off, "--trace", trace]
        run(cmd_on); run(cmd_off)  # warm the page cache and the dynamic loader
        t_on, t_off = [], []
        for i in range(a.runs):
            pair = [(cmd_on, t_on), (cmd_off, t_off)]
            if i % 2:
                pair.reverse()
            for cmd, acc in pair:
                acc.append(run(cmd))
        m_on, m_off = statistics.median(t_on), statistics.median(t_off)
        ratios = []
        for _ in range(10000):
            s_on = [rng.choice(t_on) for _ in t_on]
            s_off = [rng.choice(t_off) for _ in t_off]
            ratios.append(statistics.median(s_on) / statistics.median(s_off))
        ratios.sort()
        lo, hi = ratios[249], ratios[9749]
        r = m_on / m_off
        print(f"{ex:18} {m_on:9.3f}s {m_off:10.3f}s {r:7.4f} [{lo:.4f}, {hi:.4f}] {100*(r-1):+8.2f}%")
        if os.path.exists(trace):
            os.unlink(trace)
    os.rmdir(tmp)
    print("target: overhead below 1% (ratio < 1.01); a CI containing 1.0 means no measurable overhead")

if __name__ == "__main__":
    sys.exit(main())
