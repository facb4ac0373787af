/*
 * analyzer/ana.h - libptanalyze: rebuild nested sections from a .ptz trace
 * and compute per call path / per name statistics (internal library; the
 * definitions of every number are in doc/analyzer-output.md).
 *
 * One streaming pass: each thread has its own stack and call-path tree, so
 * memory is bounded by distinct paths x threads, never by record count.
 * The merged (all threads) tree is built afterwards by merging the
 * per-thread trees.
 */
#ifndef PTZ_ANA_H
#define PTZ_ANA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ptz/format.h"

/* ---- statistics building blocks (ana_stats.c) ---- */

/*
 * Log-linear histogram of durations in ns: values < 2^ANA_SUB_BITS are
 * exact; above, each power of two is split into 2^ANA_SUB_BITS equal
 * buckets, so a bucket's width is at most 2^-ANA_SUB_BITS of its lower
 * bound. Reporting a bucket's midpoint bounds the relative error of a
 * percentile by 2^-(ANA_SUB_BITS+1) = 0.39% (HdrHistogram's scheme).
 * Storage is lazy and sparse: up to ANA_HIST_SPARSE distinct buckets are
 * kept as (index, count) pairs in one small block (most call paths, seen a
 * few times); beyond, each power of two that holds a value gets its own
 * block of 2^ANA_SUB_BITS counters (O(1) adds; an outlier costs one block,
 * not the range up to it). At most ANA_HIST_OCTAVES blocks: memory per
 * path is bounded and stops growing once its distribution is seen.
 */
#define ANA_SUB_BITS 7
#define ANA_HIST_REL_ERROR (1.0 / (1u << (ANA_SUB_BITS + 1)))
#define ANA_HIST_SPARSE 16
#define ANA_HIST_OCTAVES (64 - ANA_SUB_BITS + 1) /* exact block + one per power of two */
struct ana_hist {
	uint32_t *sp;   /* sparse: nsp pairs {bucket index, count}; NULL once dense */
	uint32_t nsp;
	uint32_t **blk; /* dense: ANA_HIST_OCTAVES block pointers, blocks allocated on use */
};
void ana_hist_add(struct ana_hist *h, uint64_t v, uint32_t count);
void ana_hist_merge(struct ana_hist *dst, const struct ana_hist *src);
/* q in [0,1]; nearest-rank percentile's bucket midpoint, clamped to [lo, hi] */
uint64_t ana_hist_quantile(const struct ana_hist *h, double q, uint64_t total, uint64_t lo, uint64_t hi);
void ana_hist_free(struct ana_hist *h);
uint32_t ana_hist_index(uint64_t v);
uint64_t ana_hist_lower(uint32_t idx);
uint64_t ana_hist_upper(uint32_t idx); /* exclusive */
/* Welford running mean and M2 (sum of squared deviations), in double. */
struct ana_welford {
	uint64_t n;
	double mean, m2;
};
void ana_welford_add(struct ana_welford *w, double x);
void ana_welford_merge(struct ana_welford *a, const struct ana_welford *b); /* Chan et al. 1979 */
double ana_welford_std(const struct ana_welford *w);                       /* sample std (n-1) */
/* Statistics of all values but @x (which must be one of them): reverse Welford. */
struct ana_welford ana_welford_without(const struct ana_welford *w, double x);

/* Bounded uniform reservoir of per-occurrence durations (Vitter's algorithm
 * R), one per call path over the whole process: kept in the merged tree's
 * nodes only (per-thread and flat aggregates leave it empty). */
#define ANA_RESERVOIR_CAP 512
struct ana_reservoir {
	uint64_t seen;
	uint32_t n, cap;
	uint64_t *v;
};
void ana_reservoir_add(struct ana_reservoir *r, uint64_t v, uint64_t *rng);
void ana_reservoir_merge(struct ana_reservoir *dst, const struct ana_reservoir *src, uint64_t *rng);
void ana_reservoir_free(struct ana_reservoir *r);

/* ---- aggregates ---- */

enum { ANA_READ, ANA_WRITTEN, ANA_FLOPS, ANA_NMETRIC };
enum { ANA_DIRS = 4 }; /* PT_H2D..PT_P2P, index dir-1 */

/* Hot fields (touched by every END) first; metric and transfer sums after. */
struct ana_agg {
	uint64_t count;
	uint64_t total_ns;   /* inclusive */
	uint64_t self_ns;
	uint64_t min_ns, max_ns;
	uint64_t first_start_ns, first_ns; /* earliest occurrence by start time */
	struct ana_welford all;
	struct ana_hist hist;
	struct ana_reservoir res;
	uint64_t metric_self[ANA_NMETRIC], metric_incl[ANA_NMETRIC];
	uint64_t xfer_self[ANA_DIRS], xfer_incl[ANA_DIRS];
	uint64_t xfer_count[ANA_DIRS];
	uint64_t lossy;      /* occurrences open while records were lost */
};
void ana_agg_merge(struct ana_agg *dst, const struct ana_agg *src, uint64_t *rng);
void ana_agg_free(struct ana_agg *a);

struct ana_node {
	uint32_t id;       /* section name id (0 = root) */
	uint32_t parent;   /* node index; root's parent is itself */
	uint32_t depth;    /* root = 0 */
	uint32_t nchild, cchild;
	uint32_t *child;   /* node indexes, sorted by name id */
	uint32_t last_child;
	uint32_t last_id, last_node; /* last child looked up: its name id and node (fast path) */
	uint32_t merged;   /* per-thread trees: this path's node in the merged tree */
	struct ana_agg agg;
};

struct ana_tree {
	struct ana_node *n;
	uint32_t count, cap;
};
uint32_t ana_tree_child(struct ana_tree *t, uint32_t parent, uint32_t id); /* finds or adds; UINT32_MAX on ENOMEM */
void ana_tree_free(struct ana_tree *t);

struct ana_counter {
	uint32_t id;
	uint64_t samples;
	int64_t last, min, max;
	uint64_t last_ns;
};

struct ana_thread {
	uint32_t index, tid;
	char name[32];
	struct ana_tree tree;
	uint64_t first_ns, last_ns; /* span of its records */
	uint64_t sections, records;
	uint64_t lost_records, lost_sections;
	uint64_t unmatched_ends, open_at_end, gaps;
	uint64_t misuse_errors;     /* ERROR records written by the recorder */
	uint64_t unattributed[ANA_NMETRIC];
	struct ana_counter *counters;
	size_t ncounters;
};

struct ana_options {
	uint64_t since_ns, until_ns;  /* relative to the trace start; until 0 = no limit */
	int thread;                   /* -1 = all */
	const char *domain;           /* NULL = all */
	void (*progress)(void *ctx, uint64_t done_bytes, uint64_t total_bytes);
	void *progress_ctx;
};

struct ana_result {
	struct pt_reader *rd;        /* owned */
	struct ana_thread *threads;
	size_t nthreads;
	struct ana_tree merged;      /* all threads */
	struct ana_agg *by_name;     /* flat, all threads, recursion-safe; indexed by name id */
	uint32_t nnames;
	struct ana_agg **by_name_thread; /* per thread flat; [thread][id] */
	uint64_t start_ns, end_ns;   /* wall span of the records */
	uint64_t thread_span_sum_ns; /* sum of thread spans: the share denominator */
	uint64_t records, sections;
	uint64_t lost_records, lost_sections, process_lost_records;
	uint64_t unmatched_ends, open_at_end, misuse_errors;
	uint32_t domain_filter;      /* UINT32_MAX = none */
	uint64_t total_records_hint; /* event records announced by chunk headers (progress) */
	int corrupt;                 /* damaged regions inside the file */
	int torn_tail;
};

/* Opens and analyzes @path. 0, -errno, or -PT_E* (message in *err, static or owned by res). */
int ana_run(const char *path, const struct ana_options *opt, struct ana_result *res, char *err, size_t errlen);
void ana_result_free(struct ana_result *res);

/* @s if it is valid UTF-8, else a copy in *@scratch (freed and replaced on
 * each call; the caller frees the last) with each invalid byte, overlong
 * form, surrogate or code point above U+10FFFF replaced by '?'. NULL only
 * when that copy cannot be allocated. */
const char *ana_utf8_clean(const char *s, char **scratch);

/* Name of a section id (or "(unknown id N)"); pointer valid until next call. */
const char *ana_name(const struct ana_result *res, uint32_t id);

/* ---- derived figures (doc/analyzer-output.md §3) ---- */
struct ana_row {
	const struct ana_agg *a;
	uint64_t p50, p90, p99;
	double mean, std, share, first_over_rest, rest_mean, rest_std;
	double gbps, gflops, intensity;
	double xfer_gbps[ANA_DIRS];
};
void ana_row_compute(const struct ana_result *res, const struct ana_agg *a, struct ana_row *row);

/* ---- outputs ---- */
enum ana_sort { ANA_SORT_TIME, ANA_SORT_SELF, ANA_SORT_FLOPS, ANA_SORT_COUNT, ANA_SORT_NAME };
struct ana_report_opts {
	enum ana_sort sort;
	int top;        /* 0 = all */
	int depth;      /* 0 = unlimited */
	double min_pct; /* rows below this share are hidden */
	bool flat;
	int bottlenecks; /* 0 = none */
	int thread;      /* -1 = merged */
};
void ana_report_text(FILE *out, const struct ana_result *res, const struct ana_report_opts *o);
int ana_write_csv(FILE *out, const struct ana_result *res, const struct ana_report_opts *o);
int ana_write_json(FILE *out, const struct ana_result *res, const struct ana_report_opts *o);
void ana_info_text(FILE *out, const struct ana_result *res);

#endif /* PTZ_ANA_H */
