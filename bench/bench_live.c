/*
 * bench/bench_live.c - what an incremental analysis update costs
 * (ptz/analysis.h, libptanalyze; issues 18 and 19), against the trace
 * size: a recorder writes a trace of N sections (three names, two levels,
 * metrics), pt_analysis_open() reads it whole once the trace is 1.2 s old
 * (a TSC trace's slope is fixed from its first second on, doc/trace-format.md
 * section 7; before, each new clock point makes an update read the file
 * again), then K times: 1,000 more sections, pt_flush(), and
 * pt_analysis_update() timed alone. Printed per N: the open (a full
 * reading), the median and largest update, how many updates read only
 * what was new, and the trace's size. Then the same with 100,000 call
 * paths (1,000 names under 100 parents, each path once): an update's
 * finish copies every path's aggregate, so its cost grows with the paths
 * (not with the records).
 *
 * Usage: bench-live [--quick] [--keep DIR]
 *   --quick: N = 10^4 and 10^5 (default 10^4, 10^5, 10^6, 10^7).
 * Prints one line per N; exit 0. CLOCK_MONOTONIC wall time of the update
 * call only (the flush and the recording are outside). A noisy machine:
 * quote medians.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ptz/analysis.h"
#include "ptz/recorder.h"

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void record(pt_recorder *r, long n)
{
	const uint32_t a = pt_intern(r, "step"), b = pt_intern(r, "solve"), c = pt_intern(r, "io");
	for (long i = 0; i < n; i++) {
		pt_begin(r, a);
		pt_begin(r, i % 3 ? b : c);
		pt_metric(r, PT_METRIC_FLOPS, 100);
		pt_end(r, i % 3 ? b : c);
		pt_end(r, a);
		if ((i & 0xffff) == 0xffff)
			pt_flush(r); /* the ring never overflows: every section is in the trace */
	}
}

/* 100,000 paths: parent p (100 of them) > child c (1,000 names), once each */
static void record_paths(pt_recorder *r)
{
	char name[32];
	for (int p = 0; p < 100; p++) {
		snprintf(name, sizeof(name), "parent-%d", p);
		const uint32_t pid = pt_intern(r, name);
		pt_begin(r, pid);
		for (int c = 0; c < 1000; c++) {
			snprintf(name, sizeof(name), "child-%d", c);
			const uint32_t cid = pt_intern(r, name);
			pt_begin(r, cid);
			pt_end(r, cid);
		}
		pt_end(r, pid);
		pt_flush(r);
	}
}

static int cmp_d(const void *x, const void *y)
{
	const double a = *(const double *)x, b = *(const double *)y;
	return (a > b) - (a < b);
}

int main(int argc, char **argv)
{
	bool quick = false;
	const char *dir = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0)
			quick = true;
		else if (strcmp(argv[i], "--keep") == 0 && i + 1 < argc)
			dir = argv[++i];
		else {
			fprintf(stderr, "usage: bench-live [--quick] [--keep DIR]\n");
			return 2;
		}
	}
	char tmpl[] = "/tmp/ptz-bench-live-XXXXXX";
	if (!dir && !(dir = mkdtemp(tmpl))) {
		perror("mkdtemp");
		return 1;
	}
	setenv("PTZ_RSS_MS", "100", 0);
	/* -1: the 100,000-path trace */
	const long sizes[] = { 10000, 100000, 1000000, 10000000, -1 };
	const int nsizes = quick ? 2 : 5, K = 21, NEW = 1000;
	printf("%-12s %10s %14s %14s %14s %12s\n", "sections", "open ms", "update median", "update max", "incremental",
	       "records");
	for (int s = 0; s < nsizes; s++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/live-%ld.ptz", dir, sizes[s]);
		struct pt_options o = { .flush_interval_ms = 100 };
		pt_recorder *r = pt_open(path, &o, sizeof(o));
		if (!r) {
			fprintf(stderr, "bench-live: cannot record %s\n", path);
			return 1;
		}
		const double opened = now_ms();
		if (sizes[s] < 0)
			record_paths(r);
		else
			record(r, sizes[s]);
		pt_flush(r);
		while (now_ms() - opened < 1200.0)
			usleep(10000);
		pt_analysis *a;
		double t0 = now_ms();
		int rc = pt_analysis_open(path, &a);
		const double open_ms = now_ms() - t0;
		if (rc < 0) {
			fprintf(stderr, "bench-live: %s\n", pt_analysis_errmsg(a));
			return 1;
		}
		double ms[64];
		for (int k = 0; k < K; k++) {
			record(r, NEW);
			pt_flush(r);
			t0 = now_ms();
			rc = pt_analysis_update(a);
			ms[k] = now_ms() - t0;
			if (rc < 0) {
				fprintf(stderr, "bench-live: %s\n", pt_analysis_errmsg(a));
				return 1;
			}
		}
		struct pt_analysis_totals t;
		pt_analysis_totals(a, &t, sizeof(t));
		struct pt_analysis_row row = { 0 };
		for (size_t i = 0; i < pt_analysis_rows(a, PT_ANALYSIS_FLAT); i++)
			if (pt_analysis_row(a, PT_ANALYSIS_FLAT, i, &row, sizeof(row)) == 0 &&
			    strcmp(row.name, "step") == 0)
				break;
		if (sizes[s] > 0 && row.count != (uint64_t)(sizes[s] + (long)K * NEW))
			fprintf(stderr, "bench-live: %llu steps analyzed, %ld recorded (records lost?)\n",
				(unsigned long long)row.count, sizes[s] + (long)K * NEW);
		qsort(ms, K, sizeof(ms[0]), cmp_d);
		struct pt_analysis_totals tt;
		pt_analysis_totals(a, &tt, sizeof(tt));
		char inc[32];
		snprintf(inc, sizeof(inc), "%llu/%d", (unsigned long long)t.incremental, K);
		char label[32];
		snprintf(label, sizeof(label), sizes[s] < 0 ? "100k paths" : "%ld", sizes[s]);
		printf("%-12s %10.2f %11.3f ms %11.3f ms %14s %12llu\n", label, open_ms, ms[K / 2], ms[K - 1], inc,
		       (unsigned long long)tt.records);
		fflush(stdout);
		pt_analysis_close(a);
		pt_close(r);
		if (dir == tmpl || strncmp(dir, "/tmp/ptz-bench-live-", 20) == 0)
			unlink(path);
	}
	if (strncmp(dir, "/tmp/ptz-bench-live-", 20) == 0)
		rmdir(dir);
	return 0;
}
