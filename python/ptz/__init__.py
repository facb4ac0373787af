"""ptz: record nested, named sections into a .ptz trace from Python.

The PerformanceTiming API of the original proposal, over libptz::

    import ptz
    timing = ptz.PerformanceTiming("solver", path="run.ptz")
    with timing.section("einsum", flops=2 * n * m) as s:
        ...
        s.add_memory(read=a.nbytes, written=out.nbytes)
    timing.get_timing_data()["sections"]["einsum"]["total_ns"]

Recording (entering and leaving a section, a decorated call) is C
(ptz._ptz); each Python thread records on its own ring. Statistics are the
analyzer's (doc/analyzer-output.md), computed in process from the trace the
recorder is writing: every figure has the definition ``ptanalyze`` gives it.

Units: durations in ns (``*_ns``; ``duration`` alone is seconds, as in the
proposal), bytes, FLOPs; rates in GB/s (10**9 bytes) and GFLOP/s.

Errors: a stop() of a title that is not open, or an end without a begin, is
counted as a recorder error (get_stats()["error_count"]), never raised. Bad
arguments raise TypeError or ValueError; trace files that cannot be created,
written or read raise OSError.
"""
import atexit
import logging
import threading

from ._ptz import Timing as _Timing, Section, Decorated, flops, version

__all__ = ["PerformanceTiming", "get_profiler", "Section", "Decorated", "flops", "version"]

_SORT_KEYS = {
    "time": "total_ns",
    "total": "total_ns",
    "self": "self_ns",
    "flops": "flops",
    "count": "count",
    "calls": "count",
    "mean": "mean_ns",
    "bytes": None,  # read + written
    "name": None,
}

_open = []  # instances to close at exit (finalizes their traces)
_open_lock = threading.Lock()


def _add_legacy_keys(row):
    """The proposal's names next to the analyzer's (same figures, in seconds)."""
    row["duration"] = row["total_ns"] / 1e9  # total inclusive time, s
    row["calls"] = row["count"]
    row["average"] = (row["mean_ns"] or 0.0) / 1e9
    return row


class PerformanceTiming(_Timing):
    """PerformanceTiming(name, path=None, enable_gpu_timing=True, enabled=True)

    The recorder of this process. ``path``: the .ptz trace to create ("%p" is
    the pid, "%h" the host name made one file-name component); None takes
    $PTZ_TRACE, else ``ptz-<pid>.ptz`` in the current directory. ``path``
    (the attribute) is the file written, templates expanded. A trace left there by an earlier run of ours is replaced.
    ``enabled=False`` creates no file until enable(); until then every call is
    a no-op costing tens of ns. ``enable_gpu_timing=False`` records
    use_gpu_events sections on the CPU only. One recorder per process: a
    second open instance raises OSError (EBUSY); share get_profiler().
    The trace is finalized by close(), or at interpreter exit.

    Raises OSError when the trace cannot be created.
    """

    def __init__(self, name, path=None, enable_gpu_timing=True, enabled=True):
        super().__init__(name, path, enable_gpu_timing, enabled)
        with _open_lock:
            _open.append(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def get_timing_data(self):
        """Statistics of everything recorded so far, as a dict.

        Flushes the recorder (pt_flush(): blocks up to 1 s) and analyzes the
        trace. Keys:
          "sections": {name: row}, one row per section title over every
              thread (recursion-safe totals): the flat rows of
              ``ptanalyze --json``;
          "paths": {"outer;inner": row}, one row per call path (names joined
              by ';' as the CSV's path column): the tree rows;
          "trace": the report's trace object (sections, records, losses,
              recorder_errors, spans...).
        A row has the analyzer's keys (doc/analyzer-output.md §6): count,
        total_ns, self_ns, mean_ns, std_ns, min_ns, max_ns, p50_ns, p90_ns,
        p99_ns, first_ns, rest_mean_ns, rest_std_ns, read_bytes,
        written_bytes, flops, gb_per_s, gflop_per_s, the h2d/d2h transfer
        bytes and rates, and the gpu_* keys when the trace has GPU ranges;
        plus the proposal's "duration" (total_ns in s), "calls" (count) and
        "average" (mean_ns in s). Figures not available are None.
        Cost: the flush, then only what was committed since the last query
        is read (the incremental analysis, analyzer/ana.h: about 0.2 ms
        after 1,000 new sections, whatever the trace holds; GPU sections
        included); a rotated trace is read whole at each query.
        Raises OSError if the trace cannot be flushed or read.
        """
        rep = self._report()
        for row in rep["sections"].values():
            _add_legacy_keys(row)
        for row in rep["paths"].values():
            _add_legacy_keys(row)
        return rep

    def get_stats(self):
        """Totals: section_count (sections recorded, all threads),
        total_duration (s: inclusive time of the outermost sections, summed
        over threads), error_count (recorder errors: stops of titles not
        open, implicit closes), gpu_timing_enabled (enable_gpu_timing and a
        working CUDA runtime seen), losses (records and sections the
        recorder could not store), and the recorder's counters under
        "recorder" (pt_stats()). Flushes and analyzes as get_timing_data().
        """
        rep = self._report()
        rs = self._recorder_stats()
        tr = rep["trace"]
        top = sum(r["total_ns"] for p, r in rep["paths"].items() if r.get("depth") == 1)
        return {
            "section_count": tr["sections"],
            "total_duration": top / 1e9,
            "error_count": tr["recorder_errors"],
            "gpu_timing_enabled": bool(self.gpu_timing_enabled and rs["gpu_state"] == 1),
            "losses": {"lost_records": tr["lost_records"], "lost_sections": tr["lost_sections"]},
            "recorder": rs,
        }

    def log(self, logger=None, include_percentages=True, sort_by="time", level=logging.INFO):
        """Log the statistics, one line per section title, through `logger`
        (a logging.Logger; None = the "ptz" logger) at `level`.

        Each line: title, calls, total, mean, p50, p99, and when recorded,
        GFLOP/s and GB/s (over GPU time, marked "(GPU time)", where GPU
        sections declared the work: their CPU time is only the launch); with include_percentages, the share of the traced
        time (the analyzer's `share`, doc/analyzer-output.md §3). A title
        inside sampled requests (section(..., sample=p)) shows its estimated
        calls and total, marked "~", with the total's 95% interval and
        "estimated" (doc/analyzer-output.md §13); mean and percentiles are
        those of the recorded calls; sorting uses the estimates. sort_by:
        "time" (total), "self", "flops", "count", "mean", "bytes" or "name";
        largest first (name: alphabetical). Returns the lines logged.
        ValueError for an unknown sort_by.
        """
        if sort_by not in _SORT_KEYS:
            raise ValueError("sort_by must be one of %s, not %r" % (", ".join(sorted(_SORT_KEYS)), sort_by))
        if logger is None:
            logger = logging.getLogger("ptz")
        rep = self.get_timing_data()
        rows = list(rep["sections"].values())
        key = _SORT_KEYS[sort_by]
        if sort_by == "name":
            rows.sort(key=lambda r: r["name"])
        elif sort_by == "bytes":
            rows.sort(key=lambda r: -(r["read_bytes"] + r["written_bytes"]))
        else:
            est_key = {"total_ns": "total_ns", "self_ns": "self_ns", "count": "count"}.get(key)
            rows.sort(key=lambda r: -((r["estimate"][est_key] if est_key and "estimate" in r else r[key]) or 0))
        lines = ["ptz %s: %d sections, %d recorder errors, %d records lost" % (
            self.name, rep["trace"]["sections"], rep["trace"]["recorder_errors"], rep["trace"]["lost_records"])]
        samp = rep["trace"].get("sampling")
        if samp and samp["requests"]:
            lines.append("sampled: %d requests recorded (p %g to %g); calls and totals marked ~ are estimates" % (
                samp["requests"], samp["p_min"], samp["p_max"]))
        for r in rows:
            est = r.get("estimate")
            if est:
                interval = ("[%s, %s] (95%%)" % (_dur(est["total_lo_ns"]), _dur(est["total_hi_ns"]))
                            if est["total_lo_ns"] is not None else "(no interval)")
                parts = ["%-32s calls=~%-7.0f total=~%s %s estimated; mean=%s p50=%s p99=%s" % (
                    r["name"], est["count"], _dur(est["total_ns"]), interval, _dur(r["mean_ns"]),
                    _dur(r["p50_ns"]), _dur(r["p99_ns"]))]
            else:
                parts = ["%-32s calls=%-8d total=%s mean=%s p50=%s p99=%s" % (
                    r["name"], r["count"], _dur(r["total_ns"]), _dur(r["mean_ns"]), _dur(r["p50_ns"]),
                    _dur(r["p99_ns"]))]
            if include_percentages and r["share"] is not None:
                parts.append("%5.1f%%" % (100.0 * r["share"]))
            # one rate per figure, as the text report's call tree
            # (ana_row.show_*): over GPU time where GPU sections declared the
            # work (a GPU section's CPU time is only its launch), else CPU time
            if r["flops"]:
                parts.append("flops=%d" % r["flops"])
                rate, gpu = _shown_rate(r, "gflop_per_s")
                if rate is not None:
                    parts.append("%.3f GFLOP/s%s" % (rate, " (GPU time)" if gpu else ""))
            if r["read_bytes"] or r["written_bytes"]:
                parts.append("bytes=%d" % (r["read_bytes"] + r["written_bytes"]))
                rate, gpu = _shown_rate(r, "gb_per_s")
                if rate is not None:
                    parts.append("%.3f GB/s%s" % (rate, " (GPU time)" if gpu else ""))
            if r.get("gpu_count"):
                parts.append("gpu=%s x%d" % (_dur(r["gpu_total_ns"]), r["gpu_count"]))
            lines.append(" ".join(parts))
        for line in lines:
            logger.log(level, "%s", line)
        return lines

    def close(self):
        """Finalize the trace and stop recording (see ptz._ptz.Timing.close)."""
        try:
            super().close()
        finally:
            with _open_lock:
                if self in _open:
                    _open.remove(self)


def _shown_rate(row, key):
    """(rate, over_gpu): row["gpu_" + key] when the analyzer gave one (GPU
    sections of the subtree declared the work), else row[key] (CPU time)."""
    g = row.get("gpu_" + key)
    return (g, True) if g is not None else (row.get(key), False)


def _dur(ns):
    if ns is None:
        return "-"
    ns = float(ns)
    if ns < 1e3:
        return "%.0f ns" % ns
    if ns < 1e6:
        return "%.2f us" % (ns / 1e3)
    if ns < 1e9:
        return "%.2f ms" % (ns / 1e6)
    return "%.3f s" % (ns / 1e9)


_profiler = None
_profiler_lock = threading.Lock()


def get_profiler(name=None, path=None, enable_gpu_timing=True, enabled=True):
    """The process-wide PerformanceTiming, made at the first call with these
    arguments (name None: "ptz"); later calls return the same instance and
    ignore the arguments. Raises OSError as PerformanceTiming does."""
    global _profiler
    with _profiler_lock:
        if _profiler is None:
            _profiler = PerformanceTiming(name or "ptz", path=path, enable_gpu_timing=enable_gpu_timing,
                                          enabled=enabled)
        return _profiler


@atexit.register
def _close_all():
    for t in list(_open):
        try:
            t.close()
        except OSError:
            pass
