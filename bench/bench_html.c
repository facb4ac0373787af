/*
 * bench/bench_html.c - size and generation time of `ptanalyze --html` on a
 * trace with many call paths (issue 21: 100,000 paths). Not a test.
 *
 * usage: bench-html [PATHS] [--keep DIR]
 *
 * Records, with libptz on one thread, a trace whose call tree has PATHS
 * distinct paths (default 100,000): 100 top-level sections, each with
 * PATHS/100 - 1 children named apart, every path entered 3 times, a metric
 * on each. Then, in this process, as `ptanalyze TRACE --report --html
 * PAGE` does it: the analysis (ana_run), the suggestions (ana_suggest) and
 * the page (ana_html_report), each timed (wall clock, median of 3), and the
 * page's size beside the `--json` report's. Prints one table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analyzer/ana.h"
#include "analyzer/ana_html.h"
#include "analyzer/ana_suggest.h"
#include "ptz/recorder.h"

#define TOP 100
#define REPEAT 3
#define RUNS 3

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int record(const char *path, unsigned paths)
{
	pt_recorder *r = pt_open(path, NULL, 0);
	if (!r) {
		perror(path);
		return -1;
	}
	const unsigned kids = paths / TOP - 1;
	uint32_t *top = malloc(TOP * sizeof(*top)), *kid = malloc((size_t)kids * sizeof(*kid));
	char name[64];
	for (unsigned i = 0; i < TOP; i++) {
		snprintf(name, sizeof(name), "phase %u", i);
		top[i] = pt_intern(r, name);
	}
	for (unsigned k = 0; k < kids; k++) {
		snprintf(name, sizeof(name), "kernel_%u", k);
		kid[k] = pt_intern(r, name);
	}
	for (int rep = 0; rep < REPEAT; rep++)
		for (unsigned i = 0; i < TOP; i++) {
			pt_begin(r, top[i]);
			for (unsigned k = 0; k < kids; k++) {
				pt_begin(r, kid[k]);
				pt_metric(r, PT_METRIC_FLOPS, 1000 + k);
				pt_end(r, kid[k]);
			}
			pt_end(r, top[i]);
		}
	free(top);
	free(kid);
	return pt_close(r);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static long fsize(const char *p)
{
	struct stat st;
	return stat(p, &st) ? -1 : (long)st.st_size;
}

int main(int argc, char **argv)
{
	unsigned paths = 100000;
	const char *keep = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--keep") && i + 1 < argc)
			keep = argv[++i];
		else if (atoi(argv[i]) >= 2 * TOP)
			paths = (unsigned)atoi(argv[i]);
		else {
			fprintf(stderr, "usage: bench-html [PATHS >= %d] [--keep DIR]\n", 2 * TOP);
			return 2;
		}
	}
	char dir[] = "/tmp/ptz-bench-html.XXXXXX", trace[600], page[600], json[600];
	const char *d = keep ? keep : mkdtemp(dir);
	if (!d) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(trace, sizeof(trace), "%s/paths.ptz", d);
	snprintf(page, sizeof(page), "%s/paths.html", d);
	snprintf(json, sizeof(json), "%s/paths.json", d);
	double t0 = now_s();
	if (record(trace, paths))
		return 1;
	printf("trace: %u call paths (%d top-level sections), %ld bytes, recorded in %.2f s\n", paths, TOP, fsize(trace),
	       now_s() - t0);
	double ta[RUNS], ts[RUNS], th[RUNS], tj[RUNS];
	for (int run = 0; run < RUNS; run++) {
		struct ana_result res;
		struct ana_options ao = { .thread = -1, .merged_percentiles_only = true };
		char err[512];
		t0 = now_s();
		if (ana_run(trace, &ao, &res, err, sizeof(err))) {
			fprintf(stderr, "ana_run: %s\n", err);
			return 1;
		}
		ta[run] = now_s() - t0;
		struct ana_sug s;
		struct ana_sug_opts so = { .trace_path = trace };
		t0 = now_s();
		if (ana_suggest(&res, &so, &s)) {
			fprintf(stderr, "ana_suggest failed\n");
			return 1;
		}
		ts[run] = now_s() - t0;
		FILE *f = fopen(page, "w");
		t0 = now_s();
		int bad = !f || ana_html_report(f, &res, &s, trace, "bench-html");
		bad |= f && fclose(f);
		th[run] = now_s() - t0;
		const struct ana_report_opts ro = { .thread = -1 };
		f = fopen(json, "w");
		t0 = now_s();
		bad |= !f || ana_write_json(f, &res, &ro);
		bad |= f && fclose(f);
		tj[run] = now_s() - t0;
		ana_suggest_free(&s);
		ana_result_free(&res);
		if (bad) {
			fprintf(stderr, "writing %s or %s failed\n", page, json);
			return 1;
		}
	}
	qsort(ta, RUNS, sizeof(double), cmp_d);
	qsort(ts, RUNS, sizeof(double), cmp_d);
	qsort(th, RUNS, sizeof(double), cmp_d);
	qsort(tj, RUNS, sizeof(double), cmp_d);
	printf("%-34s %10s\n", "median of 3 runs, one thread", "seconds");
	printf("%-34s %10.3f\n", "analysis (ana_run)", ta[1]);
	printf("%-34s %10.3f\n", "suggestions (ana_suggest)", ts[1]);
	printf("%-34s %10.3f\n", "HTML page (ana_html_report)", th[1]);
	printf("%-34s %10.3f\n", "JSON report, for scale", tj[1]);
	printf("page: %ld bytes (%.1f per path); --json report: %ld bytes\n", fsize(page), (double)fsize(page) / paths,
	       fsize(json));
	if (!keep) {
		unlink(trace);
		unlink(page);
		unlink(json);
		rmdir(d);
	} else {
		printf("kept in %s\n", d);
	}
	return 0;
}
