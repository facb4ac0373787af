"""examples/python/led_optimizer.py - the dense LED optimizer in numpy,
instrumented with the ptz module as the integration note does.

The problem (as examples/led_optimizer.c): a wall of n LEDs lights m
pixels; A (m x n, random positive, fixed seed) maps LED drive values to
pixel brightness. For every frame b (m pixels) find LED values x >= 0 that
minimize ||A x - b||^2 by projected gradient descent on the normal
equations, with AtA = A^T A computed once:

  optimize_frame_production        one frame
    validation                     shapes and finite values of b
    atb_calculation                atb = A^T b               (FLOPs: 2*m*n)
    optimization_loop              the solve
      gradient_descent_loop        the iterations
        einsum_operation           g = einsum("ij,j->i", AtA, x) - atb
        step_size_calculation      alpha = (g.g) / (g^T AtA g), then the step
          step_einsum_operation    den = einsum("i,ij,j->", g, AtA, g)

FLOPs: each section's count comes from ptz (operation_type/shape_info:
libptz's helpers, einsum counted as numpy.einsum_path's naive count) or,
for the few loops written here, one FLOP per +, -, *, /. Bytes: compulsory
traffic, every operand counted once per section at 8 bytes per double.

Independent totals: the program adds the same quantities, written out as
plain formulas of its own dimensions (2*n*n for "ij,j->i", 3*n*n for
"i,ij,j->", ...), into its own sums and prints them as its last line:
  led_optimizer.py: total_flops=N total_read_bytes=N total_written_bytes=N sections=N
tests/python/test_led_optimizer.py checks that the trace's report has
exactly these totals. _create_timing_breakdown_dict() fills the legacy
timing dict from get_timing_data(), as the integration note does.

Usage: led_optimizer.py [--trace PATH] [--small] [--no-profiling]
Exit status: 0, 1 when the trace cannot be created, 2 for usage.
"""
import argparse
import logging
import sys

import numpy as np

import ptz

SEED = 0x1ED0B7A5EED
SECTIONS = ("optimize_frame_production", "validation", "atb_calculation", "optimization_loop",
            "gradient_descent_loop", "einsum_operation", "step_size_calculation", "step_einsum_operation")


class Totals:
    """Running sums kept by the program itself, independently of the trace."""

    def __init__(self):
        self.flops = self.read_bytes = self.written_bytes = self.sections = 0

    def add(self, flops=0, read=0, written=0):
        self.flops += flops
        self.read_bytes += read
        self.written_bytes += written
        self.sections += 1


class LEDOptimizer:
    def __init__(self, A, iterations, timing=None):
        self.A = A
        self.m, self.n = A.shape
        self.AtA = A.T @ A
        self.iterations = iterations
        self.timing = timing
        self.totals = Totals()

    def _section(self, title, **kw):
        # the proposal's null-safe pattern: no profiler, no sections
        return self.timing.section(title, **kw) if self.timing else _Null()

    def optimize_frame_production(self, b):
        m, n, tot = self.m, self.n, self.totals
        A, AtA = self.A, self.AtA
        with self._section("optimize_frame_production"):
            with self._section("validation"):
                if b.shape != (m,) or not np.all(np.isfinite(b)):
                    raise ValueError("frame must be %d finite pixel values" % m)
            tot.add()

            atb_rd, atb_wr = m * n * 8 + m * 8, n * 8
            with self._section("atb_calculation", operation_type="matmul", shape_info=(n, 1, m),
                               read=atb_rd, written=atb_wr):
                atb = A.T @ b
            tot.add(2 * n * 1 * m, atb_rd, atb_wr)

            x = np.zeros(n)
            with self._section("optimization_loop"):
                with self._section("gradient_descent_loop"):
                    for _ in range(self.iterations):
                        g_rd, g_wr = n * n * 8 + 2 * n * 8, n * 8
                        with self._section("einsum_operation", operation_type="einsum",
                                           shape_info=("ij,j->i", AtA.shape, x.shape), read=g_rd,
                                           written=g_wr) as s:
                            g = np.einsum("ij,j->i", AtA, x) - atb
                            s.add_flops(n)  # the subtraction of atb
                            g[(x <= 0.0) & (g > 0.0)] = 0.0  # comparisons only
                        tot.add(2 * n * n + n, g_rd, g_wr)

                        st_rd, st_wr = 2 * n * 8, n * 8
                        with self._section("step_size_calculation", read=st_rd, written=st_wr) as s:
                            d_rd = 2 * n * 8 + n * n * 8
                            with self._section("step_einsum_operation", operation_type="einsum",
                                               shape_info=("i,ij,j->", g.shape, AtA.shape, g.shape),
                                               read=d_rd, written=8):
                                den = np.einsum("i,ij,j->", g, AtA, g)
                            tot.add(3 * n * n, d_rd, 8)
                            num = g @ g
                            alpha = num / den if den > 0.0 else 0.0
                            np.maximum(x - alpha * g, 0.0, out=x)
                            s.add_flops(2 * n + 1 + 2 * n)  # g.g, the division, x - alpha*g
                        tot.add(2 * n + 1 + 2 * n, st_rd, st_wr)
                tot.add()  # gradient_descent_loop
            tot.add()  # optimization_loop
        tot.add()  # optimize_frame_production
        return x, self._create_timing_breakdown_dict()

    def _create_timing_breakdown_dict(self):
        """The legacy per-section timing dict (seconds, total so far), read
        inline from get_timing_data() as the integration note does."""
        if not self.timing:
            return {}
        data = self.timing.get_timing_data()["sections"]
        return {name: data[name]["duration"] for name in SECTIONS if name in data}


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def add_flops(self, n):
        pass


def main(argv=None):
    ap = argparse.ArgumentParser(description="Dense LED optimizer in numpy, instrumented with ptz.")
    ap.add_argument("--trace", default="led_optimizer_py.ptz", help="trace file (default: %(default)s)")
    ap.add_argument("--small", action="store_true", help="a CI-sized problem")
    ap.add_argument("--no-profiling", action="store_true", help="timing = None (the null-safe pattern)")
    a = ap.parse_args(argv)
    m, n, frames, iters = (600, 120, 4, 15) if a.small else (4000, 800, 12, 40)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        timing = None if a.no_profiling else ptz.PerformanceTiming("led_optimizer.py", path=a.trace)
    except OSError as e:
        print("led_optimizer.py: %s: %s" % (a.trace, e), file=sys.stderr)
        return 1
    rng = np.random.default_rng(SEED)
    A = rng.random((m, n)) + 0.01
    opt = LEDOptimizer(A, iters, timing)
    residual_first = residual_last = 0.0
    breakdown = {}
    for f in range(frames):
        x_true = rng.random(n)
        b = A @ x_true
        x, breakdown = opt.optimize_frame_production(b)
        r = float(np.linalg.norm(A @ x - b) / np.linalg.norm(b))
        residual_first = r if f == 0 else residual_first
        residual_last = r
    print("led_optimizer.py: %d frames of %d pixels, %d LEDs, %d iterations; relative residual %.4f (first "
          "frame %.4f)" % (frames, m, n, iters, residual_last, residual_first))
    if timing:
        print("timing breakdown (s): " + ", ".join("%s=%.6f" % kv for kv in breakdown.items()))
        timing.log(logging.getLogger("led_optimizer"), include_percentages=True, sort_by="flops")
        timing.close()
    t = opt.totals
    print("led_optimizer.py: total_flops=%d total_read_bytes=%d total_written_bytes=%d sections=%d"
          % (t.flops, t.read_bytes, t.written_bytes, t.sections))
    return 0


if __name__ == "__main__":
    sys.exit(main())
