/*
 * analyzer/ana_multi.h - many traces at once (issue 18): the processes of
 * one job (MPI ranks, a SLURM array, workers of a service) analyzed apart
 * and shown as one view: per call path, its count and time summed over
 * every process, and how the time spreads across them (max / mean, the
 * slowest process and its rank). doc/analyzer-output.md §12.
 *
 * Paths are matched across traces by their call path as the CSV writes it
 * (names joined by ';', ana_path_of()), so the traces' string ids need not
 * agree. Context: single-threaded; the results must stay alive while the
 * view is used (it keeps no pointer into them but their paths).
 */
#ifndef PTZ_ANA_MULTI_H
#define PTZ_ANA_MULTI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analyzer/ana.h"

struct ana_multi_row {
	char *path;              /* ';'-joined names (owned) */
	uint32_t depth;          /* 1 = top level */
	uint64_t count;          /* occurrences, summed over the traces (saturating) */
	uint64_t total_ns;       /* inclusive time, summed */
	uint64_t self_ns;        /* self time, summed */
	uint32_t traces;         /* traces that have the path */
	uint64_t max_total_ns;   /* the largest one trace's inclusive time */
	uint32_t max_trace;      /* index of that trace (the first on a tie) */
	uint64_t min_total_ns;   /* the smallest, over the traces that have the path */
	double max_over_mean;    /* max_total_ns / (the traces' totals summed / traces): 1 = even; NaN when 0 */
	/* Since: multi/2. The path's aggregate over every trace (ana_agg_merge() of each trace's
	 * merged-tree node): its histogram, exact moments, min and max, metric and transfer sums and
	 * GPU figures are those of one analysis of every occurrence in every trace, so the mean, std,
	 * min, max and sums are exact and the percentiles within ANA_HIST_REL_ERROR
	 * (doc/analyzer-output.md §12). Its first_* fields are left out of every output: each trace's
	 * first occurrence is on its own host's clock. Owned (ana_multi_free()). */
	struct ana_agg agg;
	/* Since: multi/2. Whether some trace has the path inside sampled requests
	 * (§13); then est_count and est_total_ns sum each trace's Horvitz-Thompson
	 * estimates (its recorded figures where it was not sampled), and the
	 * spread (max_total_ns, min_total_ns, slowest_trace, max_over_mean) is
	 * over the traces' estimated totals. NaN when not sampled. */
	bool sampled;
	double est_count, est_total_ns;
};

struct ana_multi {
	struct ana_multi_row *rows; /* by path string (a parent before its children) */
	size_t nrows;
	size_t ntraces;
	uint64_t span_sum_ns;       /* the traces' summed thread spans: the denominator of a row's share */
};

/*
 * One trace of the view: what the view reads of it, from an analysis
 * (ana_multi_src_result()) or from a JSON report with sketches written on
 * another machine (ana_multi_src_json(), `ptanalyze merge`). Free with
 * ana_multi_src_free().
 */
struct ana_multi_src {
	char *file;          /* as the user named it: the trace, or the report */
	char *process, *job; /* job "" when the recorder found none */
	uint32_t pid;
	bool has_rank;
	uint32_t rank;
	uint64_t span_sum_ns; /* the trace's thread_span_sum_ns */
	size_t npaths;        /* its merged call tree's paths (root excluded) */
	char **path;          /* each as ana_path_of() writes it */
	uint32_t *depth;
	const struct ana_agg **agg; /* into the result, or into @own */
	double *est_count, *est_total_ns; /* per path: its estimates inside sampled requests (§13), NaN if none */
	struct ana_agg *own;  /* the aggregates rebuilt from a report; NULL for a result */
};

/* ana_multi_src_result() - @res (ana_run(); it must outlive the source,
 * whose aggregates point into it) as the source named @file. 0 or -ENOMEM. */
int ana_multi_src_result(const struct ana_result *res, const char *file, struct ana_multi_src *src);

/*
 * ana_multi_src_json() - The report at @file (`ptanalyze TRACE --json`,
 * schema ptanalyze-report/1) as a source: each merged-tree row's count,
 * total, self, min, max, metric and transfer sums, GPU count and time, and
 * from its "sketch" its histogram buckets and exact moments
 * (doc/analyzer-output.md §12). The merged figures are then those of the
 * traces analyzed together (ana_multi_src_result()), bit for bit.
 * Return: 0; -EINVAL with a message in @err for a file that is not such a
 * report (not JSON, another schema, no sketches, a row or sketch that does
 * not hold together: bucket counts that do not add up to the row's count);
 * -ENOMEM.
 */
int ana_multi_src_json(const char *file, struct ana_multi_src *src, char *err, size_t errlen);
void ana_multi_src_free(struct ana_multi_src *src);

/* ana_multi_build() - The view of the @n >= 1 sources @src into @out (free
 * with ana_multi_free()). 0, or -ENOMEM (nothing to free). */
int ana_multi_build(const struct ana_multi_src *src, size_t n, struct ana_multi *out);
void ana_multi_free(struct ana_multi *m);

/*
 * ana_multi_text() - The view as text: one line per trace (file, process,
 * pid, job and rank when the recorder found them, thread span), then the
 * @top (20 if 0) paths with the largest summed time: total, count, share
 * of the summed thread spans, max / mean across the traces that have the
 * path, and the slowest trace.
 */
void ana_multi_text(FILE *out, const struct ana_multi *m, const struct ana_multi_src *src, int top);
/*
 * ana_multi_json() - The view as JSON, schema "ptanalyze-multi/2"
 * (doc/analyzer-output.md §12): traces[] and rows[] in path order. 0, or
 * -1 if @out failed.
 */
int ana_multi_json(FILE *out, const struct ana_multi *m, const struct ana_multi_src *src);

#endif /* PTZ_ANA_MULTI_H */
