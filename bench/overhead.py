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

--instructions: the same comparison in instructions, for machines whose
timing noise (a shared virtual machine: hypervisor steal, neighbours)
is larger than 1%. Each variant runs once under valgrind's callgrind, which
counts every instruction of every thread (recorder, flusher, zstd, the
kernel's work excluded), deterministically. OPENBLAS_NUM_THREADS=1 keeps
the BLAS thread pool's spinning out of the count, and PTZ_FLUSH_MS=500
stands in for the default 20 ms: valgrind runs the program ~50x slower,
so at 20 ms the flusher would wake ~50x more often per unit of work than
it does natively and write that many more, smaller chunks. Instructions
are not time (cache misses, the flusher's parallelism), but a recorder that
added 1% of time without adding instructions would have to stall on memory.

usage: bench/overhead.py BUILD_DIR [--runs N] [--example NAME ...] [--instructions]
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

def instructions(cmd, tmp):
    """instructions executed by all threads of cmd, counted by callgrind"""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PTZ_FLUSH_MS="500")
    out = os.path.join(tmp, "callgrind.out")
    p = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"] + cmd, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise SystemExit(f"valgrind {cmd[0]} failed with status {p.returncode}")
    if os.path.exists(out):
        os.unlink(out)
    for line in p.stderr.splitlines():
        if "Collected :" in line:
            return int(line.split(":")[-1])
    raise SystemExit("no instruction count in valgrind's output")

def built(build, examples, tmp):
    """(name, instrumented binary, PT_DISABLE binary, trace path) of each example that is built"""
    for ex in examples:
        on = os.path.join(build, "examples", ex)
        off = on + "_disabled"
        if os.path.exists(on) and os.path.exists(off):
            yield ex, on, off, os.path.join(tmp, ex + ".ptz")
        else:
            print(f"{ex:18} not built")

def main_instructions(a, examples):
    tmp = tempfile.mkdtemp(prefix="ptz-overhead-")
    print("ptz always-on overhead in instructions (valgrind callgrind, all threads; OPENBLAS_NUM_THREADS=1, PTZ_FLUSH_MS=500)")
    print(f"{'example':16} {'recording':>15} {'NULL rec.':>15} {'PT_DISABLE':>15} {'ratio':>8} {'overhead':>9}")
    for ex, on, off, trace in built(a.build, examples, tmp):
        i_on = instructions([on, "--trace", trace], tmp)
        i_null = instructions([on, "--trace", ""], tmp)
        i_off = instructions([off, "--trace", trace], tmp)
        r = i_on / i_off
        print(f"{ex:16} {i_on:15,d} {i_null:15,d} {i_off:15,d} {r:8.5f} {100*(r-1):+8.3f}%")
        if os.path.exists(trace):
            os.unlink(trace)
    os.rmdir(tmp)
    print("target: overhead below 1% (ratio < 1.01)")

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--example", action="append")
    ap.add_argument("--instructions", action="store_true")
    a = ap.parse_args()
    examples = a.example or ["led_optimizer", "compress_corpus"]
    if a.instructions:
        return main_instructions(a, examples)
    rng = random.Random(12345)
    tmp = tempfile.mkdtemp(prefix="ptz-overhead-")
    print(f"ptz always-on overhead: {a.runs} interleaved runs each; wall = whole-process wall time,")
    print("cpu = whole-process user+sys time (flusher included); ratio = median of per-round recording / PT_DISABLE")
    print(f"{'example':16} {'time':4} {'recording':>10} {'NULL rec.':>10} {'PT_DISABLE':>11} {'ratio':>7} {'95% CI':>17} {'overhead':>9}")
    for ex, on, off, trace in built(a.build, examples, tmp):
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
