/*
 * bench/bench_analyze.c - ptanalyze throughput and memory on recorder-made
 * traces (issue: >= 50 M records/s on one core; RSS at 100 M records within
 * 10% of RSS at 10 M).
 *
 * For each size, a child process records the trace with libptz (8 threads,
 * 1,000 names, random nesting to depth 10, a metric on every 4th section),
 * then another child runs the analysis (ana_run + the text report to
 * /dev/null) and reports its wall time, CPU time and peak RSS (wait4's
 * ru_maxrss), --runs times (default 3, each in a fresh child): the table
 * gives the median of each figure and the fastest CPU time, since one run
 * on a shared machine can be 20% off. Each run is followed by one with
 * ana_options.jobs = 2 (ptanalyze -j 2: the trace's threads read at once),
 * whose median wall time and records/s (wall) get a line of their own.
 * Children keep the measurements apart. Prints a table; not a test.
 *
 * usage: bench-analyze [--quick] [--keep DIR [--reuse]] [--runs N] [--shape walk|loops|wide]
 *                      [--gpu CUDART]
 *
 * --reuse: analyze the traces already in DIR (from an earlier --keep run)
 * instead of recording new ones, so two builds compare on the same files.
 *
 * --shape walk (default): a random walk over the call graph, up or down at
 * random (the branch predictor's worst case); --shape loops: the same graph
 * visited depth-first in a fixed order, like a program's loop nest; --shape
 * wide: 100,000 call paths a thread (1,000 top-level names, 100 below
 * each), visited at random, so that each thread's tree is larger than the
 * cache (the case of a program with many paths).
 *
 * --gpu CUDART: a trace with GPU sections, recorded with the CUDA runtime
 * CUDART (PTZ_CUDA_RUNTIME; the tests' fake one will do:
 * build/tests/gpu/libfake_cudart.so): a quarter of the walk's sections
 * opened at depth 3 are GPU sections on the thread's own stream, so the
 * trace has the recorder's "ptz-gpu" thread, whose ranges the analysis
 * pairs with launches made on the other threads (read in file order by
 * one thread, deferred and paired in file order by -j 2's readers).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analyzer/ana.h"
#include "ptz/recorder.h"

#define THREADS 8
#define NAMES 1000
#define MAX_DEPTH 10

static pt_recorder *R;
static uint32_t ids[NAMES];
static uint64_t per_thread_records;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t xs(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint64_t mix(uint64_t h, uint64_t k)
{
	h ^= k + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 31);
}

/*
 * A program's call graph, not noise: the section opened below a call path
 * is one of 2 names fixed by that path (same graph on every thread), so
 * the trace has at most 2^11 - 1 = 2,047 distinct call paths over the
 * 1,000 names, however long it runs (tests/analyzer checks memory with
 * 100,000 distinct paths separately).
 */
static int shape_loops; /* --shape loops: loop_nest() instead of the random walk */
static int shape_wide;  /* --shape wide: wide_visits(), 100,000 paths at random */
static const char *gpu_runtime; /* --gpu CUDART: GPU sections at depth 3 */
static void *streams[THREADS];  /* --gpu: one stream a thread, made by CUDART's cudaStreamCreateWithFlags */

/* Depth-first over the same call graph, in a fixed order: a program whose
 * loops visit every child of every path, every time (a metric on every
 * 4th section). Its branches repeat with a period of 2,046 sections. */
static void loop_nest(uint64_t h, int depth, uint64_t *emitted, uint64_t *count)
{
	uint32_t id = ids[h % NAMES];
	pt_begin(R, id);
	++*emitted;
	if ((++*count & 3) == 0) {
		pt_metric(R, PT_METRIC_READ_BYTES, *count & 0xffff);
		++*emitted;
	}
	if (depth < MAX_DEPTH) {
		loop_nest(mix(h, 0), depth + 1, emitted, count);
		loop_nest(mix(h, 1), depth + 1, emitted, count);
	}
	pt_end(R, id);
	++*emitted;
	if ((*count & 1023) == 0) { /* keep the flusher ahead: a trace without losses */
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
}

/* --shape wide: one of 1,000 top-level sections, in it one of 100 others,
 * both at random (100,000 paths a thread, each tree larger than a core's
 * cache: every END a miss), a metric in every 4th visit. */
static void wide_visits(uintptr_t t)
{
	uint64_t s = 0x9e3779b97f4a7c15ull * (t + 1), emitted = 0;
	while (emitted < per_thread_records) {
		uint64_t x = xs(&s);
		uint32_t top = ids[x % NAMES], in = ids[(x >> 20) % 100];
		pt_begin(R, top);
		pt_begin(R, in);
		emitted += 2;
		if (((x >> 40) & 3) == 0) {
			pt_metric(R, PT_METRIC_READ_BYTES, (x >> 44) & 0xffff);
			emitted++;
		}
		pt_end(R, in);
		pt_end(R, top);
		emitted += 2;
		if ((emitted & 2047) < 5) { /* keep the flusher ahead: a trace without losses */
			struct timespec ts = { 0, 1000000 };
			nanosleep(&ts, NULL);
		}
	}
}

static void *producer(void *arg)
{
	if (shape_wide) {
		wide_visits((uintptr_t)arg);
		return NULL;
	}
	if (shape_loops) {
		uint64_t emitted = 0, count = 0;
		while (emitted < per_thread_records)
			for (uint64_t b = 0; b < 2 && emitted < per_thread_records; b++)
				loop_nest(mix(1, b), 1, &emitted, &count);
		return NULL;
	}
	uint64_t s = 0x9e3779b97f4a7c15ull * ((uintptr_t)arg + 1), emitted = 0;
	uint32_t stack[MAX_DEPTH];
	bool gpu[MAX_DEPTH] = { false };
	void *stream = streams[(uintptr_t)arg];
	uint64_t path[MAX_DEPTH + 1] = { 1 };
	int depth = 0;
	while (emitted < per_thread_records) {
		uint64_t x = xs(&s);
		/* walk: go deeper while below 3, then random up/down, capped at MAX_DEPTH */
		int open = depth < 3 || (depth < MAX_DEPTH && (x & 1));
		if (open) {
			uint64_t h = mix(path[depth], (x >> 8) & 1);
			uint32_t id = ids[h % NAMES];
			path[depth + 1] = h;
			gpu[depth] = gpu_runtime && depth == 3 && ((x >> 40) & 3) == 0;
			stack[depth++] = id;
			if (gpu[depth - 1])
				pt_gpu_begin(R, id, stream);
			else
				pt_begin(R, id);
			emitted++;
			if (((x >> 20) & 3) == 0) {
				pt_metric(R, PT_METRIC_READ_BYTES, (x >> 24) & 0xffff);
				emitted++;
			}
		} else if (gpu[--depth]) {
			pt_gpu_end(R, stack[depth], stream);
			emitted++;
		} else {
			pt_end(R, stack[depth]);
			emitted++;
		}
		if ((emitted & 2047) == 0) { /* keep the flusher ahead: a trace without losses */
			struct timespec ts = { 0, 1000000 };
			nanosleep(&ts, NULL);
		}
	}
	while (depth--)
		if (gpu[depth])
			pt_gpu_end(R, stack[depth], stream);
		else
			pt_end(R, stack[depth]);
	return NULL;
}

static int record(const char *path, uint64_t records)
{
	if (gpu_runtime) {
		setenv("PTZ_CUDA_RUNTIME", gpu_runtime, 1);
		void *rt = dlopen(gpu_runtime, RTLD_NOW);
		int (*create)(void **, unsigned) = NULL;
		if (rt) /* POSIX's way to a function from dlsym() (ISO C has no object-to-function cast) */
			*(void **)&create = dlsym(rt, "cudaStreamCreateWithFlags");
		for (int i = 0; i < THREADS; i++)
			if (!create || create(&streams[i], 1 /* cudaStreamNonBlocking */) != 0) {
				fprintf(stderr, "bench-analyze: %s: no cudaStreamCreateWithFlags, or it failed\n", gpu_runtime);
				return 1;
			}
	}
	R = pt_open(path, NULL, 0);
	if (!R) {
		perror("pt_open");
		return 1;
	}
	for (int i = 0; i < NAMES; i++) {
		char n[32];
		snprintf(n, sizeof(n), "section-%04d", i);
		ids[i] = pt_intern(R, n);
	}
	per_thread_records = records / THREADS;
	pthread_t t[THREADS];
	for (uintptr_t i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, producer, (void *)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	struct pt_stats_info st;
	pt_stats(R, &st, sizeof(st));
	pt_close(R);
	pt_stats(R, &st, sizeof(st));
	fprintf(stderr, "  recorded %s: %llu records, %llu lost", path, (unsigned long long)st.records,
		(unsigned long long)st.lost_records);
	if (gpu_runtime)
		fprintf(stderr, "; GPU: %llu launched, %llu ranges, %llu dropped", (unsigned long long)st.gpu_launched,
			(unsigned long long)st.gpu_ranges, (unsigned long long)st.gpu_dropped);
	fputc('\n', stderr);
	return 0;
}

struct result {
	double wall, cpu;
	uint64_t records;
	uint32_t paths;
	long maxrss_kb;
};

/* ana_options.jobs of the analysis child: 1, then 2 (ptanalyze -j 2), run by turns */
static unsigned bench_jobs = 1;

static int analyze(const char *path, struct result *out, int fd)
{
	/* as `ptanalyze --report` */
	struct ana_options ao = { .thread = -1, .merged_percentiles_only = true, .no_flat_percentiles = true,
				  .no_samples = true, .jobs = bench_jobs };
	struct ana_result res;
	char err[256];
	double t0 = now_s();
	int rc = ana_run(path, &ao, &res, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "ana_run: %s\n", err);
		return 1;
	}
	FILE *null = fopen("/dev/null", "w");
	struct ana_report_opts ro = { .thread = -1 };
	ana_report_text(null, &res, &ro);
	fclose(null);
	struct result r = { .wall = now_s() - t0, .records = res.records, .paths = res.merged.count - 1 };
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	r.cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
		ru.ru_stime.tv_usec / 1e6;
	ana_result_free(&res);
	if (write(fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
		return 1;
	(void)out;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Median of @v[0..n) (sorts @v). */
static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int in_child(int (*fn)(const char *, uint64_t), const char *path, uint64_t n)
{
	pid_t p = fork();
	if (p == 0)
		_exit(fn(path, n));
	int st;
	waitpid(p, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

int main(int argc, char **argv)
{
#ifndef __OPTIMIZE__
	fprintf(stderr, "bench-analyze: built without optimization; use the default debugoptimized build\n");
	return 2;
#endif
	int quick = 0, reuse = 0, runs = 3;
	const char *keep = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0) {
			quick = 1;
		} else if (strcmp(argv[i], "--keep") == 0 && i + 1 < argc) {
			keep = argv[++i];
		} else if (strcmp(argv[i], "--reuse") == 0) {
			reuse = 1;
		} else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc && atoi(argv[i + 1]) >= 1 &&
			   atoi(argv[i + 1]) <= 99) {
			runs = atoi(argv[++i]);
		} else if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc &&
			   (strcmp(argv[i + 1], "walk") == 0 || strcmp(argv[i + 1], "loops") == 0 ||
			    strcmp(argv[i + 1], "wide") == 0)) {
			shape_loops = strcmp(argv[++i], "loops") == 0;
			shape_wide = strcmp(argv[i], "wide") == 0;
		} else if (strcmp(argv[i], "--gpu") == 0 && i + 1 < argc) {
			gpu_runtime = argv[++i];
		} else {
			fprintf(stderr, "usage: bench-analyze [--quick] [--keep DIR [--reuse]] [--runs N] [--shape walk|loops|wide]"
					" [--gpu CUDART]\n");
			return 2;
		}
	}
	if (gpu_runtime && (shape_loops || shape_wide)) {
		fprintf(stderr, "bench-analyze: --gpu records the walk, not --shape loops or wide\n");
		return 2;
	}
	if (reuse && !keep) {
		fprintf(stderr, "bench-analyze: --reuse needs --keep DIR\n");
		return 2;
	}
	char tmpdir[] = "/tmp/ptz-bench-analyze-XXXXXX";
	const char *dir = keep;
	if (keep ? mkdir(keep, 0755) != 0 && errno != EEXIST : !mkdtemp(tmpdir)) {
		perror(keep ? keep : tmpdir);
		return 1;
	}
	if (!keep)
		dir = tmpdir;
	uint64_t sizes[2] = { quick ? 1000000 : 10000000, quick ? 10000000 : 100000000 };
	struct result r[2];
	for (int i = 0; i < 2; i++) {
		char path[256];
		snprintf(path, sizeof(path), "%s/trace-%llu.ptz", dir, (unsigned long long)sizes[i]);
		struct stat sb;
		if (!(reuse && stat(path, &sb) == 0) && in_child(record, path, sizes[i]))
			return 1;
		double wall[99], cpu[99], rss[99], wall2[99], rss2[99];
		for (int k = 0; k < 2 * runs; k++) { /* -j 1 and -j 2 by turns: side by side on a noisy machine */
			int fds[2];
			bench_jobs = k % 2 ? 2 : 1;
			if (pipe(fds))
				return 1;
			pid_t p = fork();
			if (p == 0) {
				close(fds[0]);
				_exit(analyze(path, NULL, fds[1]));
			}
			close(fds[1]);
			int st;
			struct rusage ru;
			wait4(p, &st, 0, &ru);
			if (read(fds[0], &r[i], sizeof(r[i])) != (ssize_t)sizeof(r[i]))
				return 1;
			close(fds[0]);
			if (k % 2) {
				wall2[k / 2] = r[i].wall;
				rss2[k / 2] = (double)ru.ru_maxrss;
				continue;
			}
			wall[k / 2] = r[i].wall;
			cpu[k / 2] = r[i].cpu;
			rss[k / 2] = (double)ru.ru_maxrss;
		}
		double cpu_min = cpu[0];
		for (int k = 1; k < runs; k++)
			cpu_min = cpu[k] < cpu_min ? cpu[k] : cpu_min;
		r[i].wall = median(wall, runs);
		r[i].cpu = median(cpu, runs);
		r[i].maxrss_kb = (long)median(rss, runs);
		const double w2 = median(wall2, runs), m2 = median(rss2, runs);
		stat(path, &sb);
		printf("%-10llu records  %u paths  file %7.1f MB  analysis (median of %d) wall %6.2f s  cpu %6.2f s  "
		       "%6.1f M records/s (cpu; fastest run %.1f M)  peak RSS %7.1f MB\n",
		       (unsigned long long)r[i].records, r[i].paths, sb.st_size / 1e6, runs, r[i].wall, r[i].cpu,
		       r[i].records / r[i].cpu / 1e6, r[i].records / cpu_min / 1e6, r[i].maxrss_kb / 1024.0);
		printf("%-10s -j 2: wall %6.2f s  %6.1f M records/s (wall)  %.2fx the -j 1 wall  peak RSS %7.1f MB\n", "",
		       w2, r[i].records / w2 / 1e6, r[i].wall / w2, m2 / 1024.0);
		if (!keep)
			unlink(path);
		else if (!reuse)
			fprintf(stderr, "  kept %s\n", path);
	}
	/* memory is bounded by paths: with --shape wide the smaller trace has
	 * not met each thread's 100,000 yet, so no target applies */
	printf("RSS ratio (larger / smaller trace): %.3f  (%s)\n", (double)r[1].maxrss_kb / (double)r[0].maxrss_kb,
	       shape_wide ? "--shape wide: the smaller trace has fewer paths, no target" : "target <= 1.10");
	if (!keep)
		rmdir(dir);
	return 0;
}
