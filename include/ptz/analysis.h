/*
 * ptz/analysis.h - the analysis of a ptz trace in process, incremental
 * (libptanalyze; compile and link with `pkg-config --cflags --libs
 * ptz-analysis`).
 *
 * Open a trace (a file a program may still be writing: the committed
 * chunks are read, doc/trace-format.md section 6), iterate its rows with
 * the figures of doc/analyzer-output.md, update, and write the report as
 * `ptanalyze --report`, `--csv` or `--json` would:
 *
 *     pt_analysis *a;
 *     if (pt_analysis_open("run.ptz", &a) < 0) { ... pt_analysis_errmsg(a) ... }
 *     struct pt_analysis_row row;
 *     for (size_t i = 0; i < pt_analysis_rows(a, PT_ANALYSIS_FLAT); i++)
 *         if (pt_analysis_row(a, PT_ANALYSIS_FLAT, i, &row, sizeof(row)) == 0)
 *             printf("%s %llu calls\n", row.name, (unsigned long long)row.count);
 *     pt_analysis_update(a);   // later: only what was committed since is read
 *     pt_analysis_close(a);
 *
 * Every figure is the one `ptanalyze` gives for the file as it is at the
 * last open or update: pt_analysis_update() reads only the chunks
 * committed since the last one (it keeps the analysis's state; its
 * results equal a full reading byte for byte, tested). It reads the whole
 * file again when that cannot hold: a trace whose clock slope is not yet
 * fixed (its first second), a memory sample that came in late, a file
 * replaced by another trace; and at every update for traces it does not
 * follow incrementally (rotated parts, flight files, damage, sparse name
 * ids, sampled requests): doc/analyzer-output.md section 1, "Incremental
 * reading". pt_analysis_totals() counts which.
 *
 * Sizes: the structs are size-versioned as ptz/recorder.h's are: the
 * caller passes sizeof as it compiled it, the library writes exactly that
 * many bytes, zeroing those past its own struct; fields are only appended.
 *
 * Thread and signal context: one pt_analysis is used by one thread at a
 * time (calls on different objects may run concurrently); none of these
 * functions is async-signal-safe (they allocate and read files).
 *
 * Errors: functions returning int return 0 on success, -errno or -PT_E*
 * (ptz/errors.h, pt_strerror()) on failure, with a message for
 * pt_analysis_errmsg().
 */
#ifndef PTZ_ANALYSIS_H
#define PTZ_ANALYSIS_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint64_t */
#include <stdio.h>  /* FILE */

#include "ptz/errors.h" /* PT_API, PT_E*, pt_strerror() */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pt_analysis pt_analysis;

/** enum pt_analysis_view - which rows: by section name, or by call path. */
enum pt_analysis_view {
	PT_ANALYSIS_FLAT = 0, /* one row per section name over every thread, recursion-safe totals */
	PT_ANALYSIS_TREE = 1  /* one row per call path over every thread, a parent before its children */
};

/** enum pt_analysis_format - the report pt_analysis_write() writes. */
enum pt_analysis_format {
	PT_ANALYSIS_TEXT = 0, /* `ptanalyze TRACE --report` */
	PT_ANALYSIS_CSV = 1,  /* `ptanalyze TRACE --csv -` (schema ptanalyze-csv, doc/analyzer-output.md) */
	PT_ANALYSIS_JSON = 2  /* `ptanalyze TRACE --json -` */
};

/**
 * struct pt_analysis_row - one row (size-versioned). Durations in ns;
 * doc/analyzer-output.md sections 2 and 6 define each figure (a JSON row's
 * key of the same name). A figure that does not apply is NAN (rates).
 * @name:    the section name (NUL-terminated, valid until the next
 *           pt_analysis_row(), update or close).
 * @path:    the call path, names joined by ';' as the CSV writes it
 *           (tree rows); the name for a flat row. Same lifetime as @name.
 * @depth:   tree rows: 1 for an outermost section; flat rows: 0.
 * @count:   occurrences (sections closed).
 * @total_ns, @self_ns: inclusive and self time, summed.
 * @min_ns, @max_ns, @p50_ns, @p90_ns, @p99_ns: the distribution of one
 *           occurrence's duration; percentiles within the histogram's
 *           0.39 % (nearest rank, bucket midpoint).
 * @mean_ns, @std_ns: mean and sample standard deviation (n - 1) of a
 *           duration, from exact integer power sums.
 * @first_ns: the duration of the first occurrence (earliest start).
 * @rest_mean_ns, @rest_std_ns: the same over the other occurrences (0
 *           with one occurrence).
 * @share:   @total_ns over the sum of the threads' spans (0..1).
 * @read_bytes, @written_bytes, @flops: declared metrics, inclusive.
 * @gb_per_s, @gflop_per_s: (read + written) bytes and FLOPs over the
 *           inclusive CPU time, in 1e9 per second; NAN when none declared.
 * @gpu_count, @gpu_total_ns: GPU ranges timed on the row's own GPU
 *           sections (CUDA event pairs) and their summed GPU time; 0 in a
 *           trace without them.
 */
struct pt_analysis_row {
	const char *name;
	const char *path;
	uint32_t depth;
	uint64_t count;
	uint64_t total_ns, self_ns;
	uint64_t min_ns, max_ns, p50_ns, p90_ns, p99_ns;
	double mean_ns, std_ns;
	uint64_t first_ns;
	double rest_mean_ns, rest_std_ns;
	double share;
	uint64_t read_bytes, written_bytes, flops;
	double gb_per_s, gflop_per_s;
	uint64_t gpu_count, gpu_total_ns;
};

/**
 * struct pt_analysis_totals - the trace's totals and how the analysis was
 * made (size-versioned).
 * @sections, @records: sections closed and event records read.
 * @lost_records, @lost_sections: what the recorder could not store.
 * @unmatched_ends, @open_at_end: ENDs with no open section; sections still
 *           open at the end of what was read (a running program's outer
 *           sections).
 * @recorder_errors: API misuse the recorder counted (pt_stats()' errors).
 * @wall_span_ns: first to last event; @thread_span_sum_ns: the threads'
 *           spans summed (the denominator of a row's share).
 * @updates: pt_analysis_open() and pt_analysis_update() calls that
 *           succeeded; @incremental: of them, those that read only what
 *           was new; @full: those that read the whole file (the others).
 */
struct pt_analysis_totals {
	uint64_t sections, records;
	uint64_t lost_records, lost_sections;
	uint64_t unmatched_ends, open_at_end;
	uint64_t recorder_errors;
	uint64_t wall_span_ns, thread_span_sum_ns;
	uint64_t updates, incremental, full;
};

/**
 * pt_analysis_open() - Open and analyze the trace at @path.
 * @path: a .ptz file, or the name shared by a rotated trace's parts; must
 *        not be NULL.
 * @out:  receives the analysis; on failure it receives one that holds the
 *        message (read pt_analysis_errmsg(), then pt_analysis_close()), or
 *        NULL when even that could not be allocated (-ENOMEM). Must not be
 *        NULL.
 * Return: 0; -EINVAL (a NULL argument), -ENOENT and other -errno (the file
 * cannot be opened or read), -PT_ECORRUPT / -PT_ETRUNCATED / -PT_EVERSION
 * (not a trace this library reads), -ENOMEM.
 */
PT_API int pt_analysis_open(const char *path, pt_analysis **out);

/**
 * pt_analysis_open_set() - Open and analyze @n traces as one view: the
 * processes of one job (MPI ranks, a SLURM array, a service's workers), as
 * `ptanalyze report A.ptz B.ptz ...` shows them (doc/analyzer-output.md
 * section 12). @paths: @n paths, none NULL (@n = 1 is pt_analysis_open()).
 * A set's rows are its call paths (PT_ANALYSIS_TREE; PT_ANALYSIS_FLAT has
 * none), matched across traces by their names: each row's figures are
 * those of one analysis of every occurrence in every trace (sums, mean,
 * std, min, max exact; percentiles within 0.39 %), its share over the
 * traces' summed thread spans, and no first occurrence (@first_ns,
 * @rest_mean_ns and @rest_std_ns are 0: each trace's is on its own clock).
 * pt_analysis_update() updates every trace, each incrementally; on a
 * failure the view stays the previous one (the traces updated before the
 * one that failed show their new figures at the next success).
 * pt_analysis_totals() sums the traces' (@wall_span_ns: the longest one's;
 * @updates, @incremental and @full: over the traces).
 * pt_analysis_write() writes the text and JSON (schema ptanalyze-multi/2)
 * of `ptanalyze report`; CSV gives -ENOTSUP.
 * Return: as pt_analysis_open(); the message names the file that failed.
 */
PT_API int pt_analysis_open_set(const char *const *paths, size_t n, pt_analysis **out);

/**
 * pt_analysis_update() - Bring the analysis up to the file as it is now:
 * the chunks committed since the last open or update are read (see the
 * top). Rows and totals read before are replaced. On failure the previous
 * analysis stays, and the message says why.
 * Return: 0, or an error of pt_analysis_open().
 */
PT_API int pt_analysis_update(pt_analysis *a);

/** pt_analysis_errmsg() - The message of the last failure ("" after a
 * success); @a may be NULL ("out of memory"). Valid until the next call. */
PT_API const char *pt_analysis_errmsg(const pt_analysis *a);

/** pt_analysis_rows() - How many rows @view has (rows with occurrences). */
PT_API size_t pt_analysis_rows(const pt_analysis *a, enum pt_analysis_view view);

/**
 * pt_analysis_row() - Row @i (0 <= @i < pt_analysis_rows()) of @view into
 * @out (@out_bytes = sizeof(*@out) as the caller compiled it). Flat rows
 * come in name-id order (the order names were first interned), tree rows
 * with a parent before its children.
 * Return: 0; -EINVAL (NULL, or @i out of range); -ENOMEM.
 */
PT_API int pt_analysis_row(pt_analysis *a, enum pt_analysis_view view, size_t i, struct pt_analysis_row *out,
			   size_t out_bytes);

/** pt_analysis_totals() - The totals into @out (@out_bytes = sizeof as
 * compiled). Return: 0 or -EINVAL. */
PT_API int pt_analysis_totals(const pt_analysis *a, struct pt_analysis_totals *out, size_t out_bytes);

/**
 * pt_analysis_write() - The report of the current analysis in @format to
 * @out, as ptanalyze writes it (every thread, all rows).
 * Return: 0; -EINVAL; -ENOTSUP (CSV of a set); -EIO when writing failed
 * (errno as the stream left it); -ENOMEM.
 */
PT_API int pt_analysis_write(const pt_analysis *a, enum pt_analysis_format format, FILE *out);

/** pt_analysis_close() - Free @a; NULL is allowed. */
PT_API void pt_analysis_close(pt_analysis *a);

#ifdef __cplusplus
}
#endif

#endif /* PTZ_ANALYSIS_H */
