"""tests/python/test_led_optimizer.py - examples/python/led_optimizer.py at
CI size: the trace's report has exactly the totals the program computes
itself, from its own dimensions, and its timing breakdown (filled from
get_timing_data()) gives the sections' total durations.

Invariants covered:
  - the sums over ptanalyze --json's flat rows of self FLOPs, self bytes
    read and written equal the program's total_flops, total_read_bytes,
    total_written_bytes; the trace's section count equals its sections;
    nothing lost, no recorder error;
  - every section of the integration note is in the trace, nested as the
    note shows, and its breakdown entry equals its total_ns in seconds;
  - with --no-profiling (timing = None) it runs, prints the same totals
    and writes no trace.
"""
import json
import os
import re
import subprocess
import sys
import unittest

PTANALYZE = os.environ["PTANALYZE"]
TMP = os.path.join(os.environ.get("PTZ_TEST_TMPDIR", "/tmp"), "python-tests")
PROG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python",
                    "led_optimizer.py")
TOTALS = re.compile(r"^led_optimizer\.py: total_flops=(\d+) total_read_bytes=(\d+) total_written_bytes=(\d+) "
                    r"sections=(\d+)$", re.M)


def run(*args):
    p = subprocess.run([sys.executable, PROG, "--small"] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, check=True)
    out = p.stdout.decode()
    m = TOTALS.search(out)
    assert m, out
    return out, p.stderr.decode(), tuple(int(v) for v in m.groups())


class TestLedOptimizer(unittest.TestCase):
    def test_report_totals_equal_the_programs(self):
        os.makedirs(TMP, exist_ok=True)
        trace = os.path.join(TMP, "led_optimizer_py.ptz")
        out, err, (flops, rd, wr, sections) = run("--trace", trace)
        rep = json.loads(subprocess.run([PTANALYZE, trace, "--json", "-", "--no-progress"], check=True,
                                        stdout=subprocess.PIPE).stdout)
        flat = rep["flat"]
        self.assertGreater(flops, 0)
        self.assertEqual(sum(r["self_flops"] for r in flat), flops)
        self.assertEqual(sum(r["self_read_bytes"] for r in flat), rd)
        self.assertEqual(sum(r["self_written_bytes"] for r in flat), wr)
        self.assertEqual(rep["trace"]["sections"], sections)
        self.assertEqual(rep["trace"]["lost_records"], 0)
        self.assertEqual(rep["trace"]["recorder_errors"], 0)
        paths = {";".join(r["path"]) for r in rep["tree"]}
        self.assertIn("optimize_frame_production;optimization_loop;gradient_descent_loop;"
                      "step_size_calculation;step_einsum_operation", paths)
        self.assertIn("optimize_frame_production;atb_calculation", paths)
        self.assertIn("optimize_frame_production;validation", paths)
        rows = {r["name"]: r for r in flat}
        line = next(l for l in out.splitlines() if l.startswith("timing breakdown (s): "))
        got = dict(kv.split("=") for kv in line.split(": ", 1)[1].split(", "))
        self.assertEqual(len(got), 8)
        for name, v in got.items():
            self.assertAlmostEqual(float(v), rows[name]["total_ns"] / 1e9, delta=1e-6, msg=name)
        # log() wrote one line per section title (through logging, on stderr)
        self.assertIn("ptz led_optimizer.py: %d sections, 0 recorder errors" % sections, err)
        self.assertEqual(sum(1 for l in err.splitlines() if "calls=" in l), 8)

    def test_without_profiling(self):
        _, _, with_t = run("--trace", os.path.join(TMP, "led_optimizer_py-2.ptz"))
        nothing = os.path.join(TMP, "led-none.ptz")
        if os.path.exists(nothing):
            os.unlink(nothing)
        out, _, totals = run("--no-profiling", "--trace", nothing)
        self.assertEqual(totals, with_t)
        self.assertFalse(os.path.exists(nothing))
        self.assertNotIn("timing breakdown", out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
