/*
 * tests/analyzer/test_ana_jobs.c - one trace read by several threads
 * (ana_options.jobs, ptanalyze -j): the same result as one thread.
 *
 * Invariants covered:
 *  - a live recorder's trace (four threads and the flusher's: nesting,
 *    recursion, misuse, metrics, transfers, counters, RSS samples every
 *    2 ms) gives the text report, CSV and JSON of jobs = 1 byte for byte
 *    with jobs = 2, 3 and 8, for the merged-only report as for per-thread
 *    percentiles, and with a --since/--until window; and it was read in
 *    parallel (ana_result.readers > 1);
 *  - async ranges begun on one thread and ended on another, instants:
 *    still read in parallel (the readers defer them and replay them in
 *    thread order), with the same output;
 *  - a trace recorded on a real GPU (tests/data/gpu, PT_GPU_TRACE: GPU
 *    launches on two threads, their ranges on the recorder's CUDA thread,
 *    which the serial pass reads in file order): read in parallel, the
 *    GPU records deferred and paired in file order after, with the same
 *    output (pairs, waiting peak, GPU rows); past the deferred records'
 *    budget, a --thread filter or reservoirs: read in file order by one
 *    thread, with the same output;
 *  - a damaged copy of the trace is read by one thread (readers = 1),
 *    with the same output;
 *  - a trace read for compare (reservoirs), a thread filter or jobs 0 is
 *    read by one thread.
 * In the 'tsan' suite: the readers must share nothing but what they only
 * read.
 *
 * Built with FAKE_CUDART_PATH (test analyzer-jobs-gpu, its own process):
 * a trace with GPU sections on the fake CUDA runtime, rotated into parts
 * of 1 MiB, read by 3 and 2 readers (each a duplicate reader over every
 * part): the deferred GPU records are replayed in the order of the chunk
 * index (part after part), not by file offset, which starts again in
 * each part; the same output as one thread.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "tests/analyzer/ana_test_util.h"
#ifdef FAKE_CUDART_PATH
#include "tests/gpu/fake_cudart.h"
#endif
#include "ptz/recorder.h"
#include "analyzer/ana.h"
#include "analyzer/ana_pass.h"

#ifndef FAKE_CUDART_PATH /* the CPU cases: not in the GPU build */
struct worker {
	pt_recorder *r;
	unsigned seed;
	int n;
	bool async;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	static const char *const names[] = { "solve", "step", "io", "rec", "pack" };
	unsigned seed = w->seed;
	for (int i = 0; i < w->n; i++) {
		uint32_t id = pt_intern(w->r, names[rand_r(&seed) % 5]);
		pt_begin(w->r, id);
		if (rand_r(&seed) % 2) {
			uint32_t in = pt_intern(w->r, names[rand_r(&seed) % 5]);
			pt_begin(w->r, in);
			pt_metric(w->r, PT_METRIC_FLOPS, 1 + rand_r(&seed) % 1000);
			if (rand_r(&seed) % 4 == 0)
				pt_transfer(w->r, 4096, PT_H2D);
			if (rand_r(&seed) % 50 == 0)
				pt_end(w->r, pt_intern(w->r, "never-begun")); /* misuse: unmatched */
			pt_end(w->r, in);
		}
		if (rand_r(&seed) % 64 == 0)
			pt_counter(w->r, pt_intern(w->r, "queue"), (int64_t)(rand_r(&seed) % 100));
		if (w->async && i % 100 == 0) { /* begun here, ended by the next worker with async set */
			static _Atomic uint64_t pending;
			uint64_t a = atomic_exchange(&pending, 0);
			if (a)
				pt_async_end(w->r, a);
			else
				atomic_store(&pending, pt_async_begin(w->r, pt_intern(w->r, "request")));
			pt_instant(w->r, pt_intern(w->r, "mark"));
		}
		pt_metric(w->r, PT_METRIC_READ_BYTES, 64);
		pt_end(w->r, id);
		if (i % 512 == 0)
			usleep(300); /* a few RSS samples land between the sections */
	}
	return NULL;
}

static const char *record(const char *name, bool async)
{
	setenv("PTZ_RSS_MS", "2", 1);
	const char *path = tu_path(name);
	struct pt_options o = { .flush_interval_ms = 2 };
	pt_recorder *r = pt_open(path, &o, sizeof(o));
	assert_non_null(r);
	struct worker w[4];
	pthread_t th[4];
	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){ r, 11u + (unsigned)i, 3000 + 1000 * i, async && i >= 1 };
		assert_int_equal(pthread_create(&th[i], NULL, work, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	assert_int_equal(pt_close(r), 0);
	unsetenv("PTZ_RSS_MS");
	return path;
}

#endif

/* Output @what (0 text, 1 CSV, 2 JSON) of @res for every thread, as a string the caller frees. */
static char *output_of(const struct ana_result *res, int what)
{
	return ana_test_output((enum ana_test_out)what, res, &(struct ana_report_opts){ .thread = -1 });
}

/* The thread count of the trace run() analyzed last. */
static size_t last_nthreads;

/* ana_run() of @path with @o and jobs = @jobs: its outputs (text, CSV, JSON) and readers. */
static unsigned run(const char *path, struct ana_options o, unsigned jobs, char *out[3])
{
	struct ana_result res;
	char err[256];
	o.jobs = jobs;
	assert_int_equal(ana_run(path, &o, &res, err, sizeof(err)), 0);
	for (int k = 0; k < 3; k++)
		out[k] = output_of(&res, k);
	unsigned readers = res.readers;
	last_nthreads = res.nthreads;
	ana_result_free(&res);
	return readers;
}

/* jobs @jobs gives jobs 1's outputs; returns its readers. */
static unsigned same_as_one(const char *path, struct ana_options o, unsigned jobs)
{
	char *one[3], *many[3];
	assert_int_equal(run(path, o, 1, one), 1);
	unsigned readers = run(path, o, jobs, many);
	for (int k = 0; k < 3; k++) {
		if (strcmp(one[k], many[k]) != 0)
			fail_msg("jobs %u: output %d differs from jobs 1 (%zu vs %zu bytes)", jobs, k, strlen(many[k]),
				 strlen(one[k]));
		free(one[k]);
		free(many[k]);
	}
	return readers;
}

#ifndef FAKE_CUDART_PATH
static void test_parallel_equals_serial(void **state)
{
	(void)state;
	const char *path = record("jobs.ptz", false);
	struct ana_options o = { .thread = -1, .no_samples = true };
	o.merged_percentiles_only = true; /* ptanalyze --report */
	for (unsigned j = 2; j <= 8; j *= 2) {
		unsigned readers = same_as_one(path, o, j);
		/* at most one per thread: the 4 workers' and the flusher's, which
		 * on a loaded machine may have written no record of its own */
		assert_true(last_nthreads == 4 || last_nthreads == 5);
		assert_int_equal(readers, j < last_nthreads ? j : last_nthreads);
	}
	assert_int_equal(same_as_one(path, o, 3), 3);
	o.merged_percentiles_only = false; /* per-thread percentiles: --csv, --json */
	assert_int_equal(same_as_one(path, o, 3), 3);
	o.since_ns = 1000000; /* a window */
	o.until_ns = 40000000;
	assert_int_equal(same_as_one(path, o, 2), 2);
}

static void test_cross_thread_records_deferred(void **state)
{
	(void)state;
	const char *path = record("jobs-async.ptz", true);
	struct ana_options o = { .thread = -1, .no_samples = true, .merged_percentiles_only = true };
	assert_int_equal(same_as_one(path, o, 3), 3); /* async ranges across threads, instants: deferred */
	o.merged_percentiles_only = false;
	assert_int_equal(same_as_one(path, o, 2), 2);
}

static void test_gpu_trace_parallel(void **state)
{
	(void)state;
	struct ana_options o = { .thread = -1, .no_samples = true, .merged_percentiles_only = true };
	struct ana_result res;
	char err[256];
	o.jobs = 1;
	assert_int_equal(ana_run(PT_GPU_TRACE, &o, &res, err, sizeof(err)), 0);
	/* the premise: GPU launches paired across threads, halves waiting in file order */
	assert_true(res.gpu.file_order);
	assert_true(res.gpu.paired > 1000);
	assert_true(res.gpu.pending_peak > 1);
	assert_int_equal(res.gpu.unmatched_launches + res.gpu.unmatched_ranges, 0);
	ana_result_free(&res);
	assert_int_equal(same_as_one(PT_GPU_TRACE, o, 2), 2);
	assert_int_equal(same_as_one(PT_GPU_TRACE, o, 4), 4);
	o.merged_percentiles_only = false;
	assert_int_equal(same_as_one(PT_GPU_TRACE, o, 3), 3);
	o.since_ns = 20000000; /* a window: ranges outside it are paired, not attributed */
	o.until_ns = 60000000;
	assert_int_equal(same_as_one(PT_GPU_TRACE, o, 3), 3);
	/* the deferred records past their budget (ana_defer_budget): read again by one thread */
	const size_t budget = ana_defer_budget;
	ana_defer_budget = 3 * 256 * sizeof(struct ana_deferred); /* one reader's first 256 fit, not 512 */
	assert_int_equal(same_as_one(PT_GPU_TRACE, o, 3), 1);
	ana_defer_budget = budget;
	o = (struct ana_options){ .thread = -1 }; /* reservoirs (compare) */
	assert_int_equal(same_as_one(PT_GPU_TRACE, o, 3), 1);
	o.no_samples = true;
	o.thread = 3;
	assert_int_equal(same_as_one(PT_GPU_TRACE, o, 3), 1);
}

static void test_damage_read_serially(void **state)
{
	(void)state;
	const char *path = record("jobs-dmg.ptz", false);
	FILE *f = fopen(path, "r+b");
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	long size = ftell(f);
	for (long off = size / 3; off < size - 64; off += size / 5) { /* a byte in a few chunks flipped */
		assert_int_equal(fseek(f, off, SEEK_SET), 0);
		int b = fgetc(f);
		assert_int_equal(fseek(f, off, SEEK_SET), 0);
		fputc(b ^ 0x5a, f);
	}
	assert_int_equal(fclose(f), 0);
	struct ana_options o = { .thread = -1, .no_samples = true, .merged_percentiles_only = true };
	struct ana_result res;
	char err[256];
	o.jobs = 3;
	assert_int_equal(ana_run(path, &o, &res, err, sizeof(err)), 0);
	assert_true(pt_reader_problem_count(res.rd) > 0); /* the premise: the copy is damaged */
	ana_result_free(&res);
	assert_int_equal(same_as_one(path, o, 3), 1);
}

static void test_what_is_read_serially(void **state)
{
	(void)state;
	const char *path = record("jobs-serial.ptz", false);
	struct ana_options o = { .thread = -1 }; /* reservoirs (compare) */
	assert_int_equal(same_as_one(path, o, 4), 1);
	o.no_samples = true;
	o.thread = 1; /* one thread */
	assert_int_equal(same_as_one(path, o, 4), 1);
	o.thread = -1;
	assert_int_equal(same_as_one(path, o, 0), 1);
}

#endif

#ifdef FAKE_CUDART_PATH
struct gpu_worker {
	pt_recorder *r;
	void *stream;
	uint64_t seed;
};

static void *gpu_work(void *arg)
{
	struct gpu_worker *w = arg;
	const uint32_t outer = pt_intern(w->r, "outer"), noise = pt_intern(w->r, "noise"),
		       kernel = pt_intern(w->r, "kernel");
	uint64_t x = w->seed;
	for (int i = 0; i < 40000; i++) {
		pt_begin(w->r, outer);
		for (int k = 0; k < 4; k++) { /* incompressible: parts fill in a few thousand sections */
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			pt_counter(w->r, noise, (int64_t)x);
		}
		if (i % 8 == 0) {
			pt_gpu_begin(w->r, kernel, w->stream);
			fake_launch(w->stream, 500 + x % 2000);
			pt_gpu_end(w->r, kernel, w->stream);
		}
		pt_end(w->r, outer);
		if (i % 3000 == 2999)
			pt_flush(w->r);
	}
	return NULL;
}

static void test_rotated_gpu_trace_parallel(void **state)
{
	(void)state;
	const char *path = tu_path("jobs-gpu-rotated.ptz");
	struct pt_options po = { .flush_interval_ms = 2, .rotate_bytes = 1 << 20 };
	pt_recorder *r = pt_open(path, &po, sizeof(po));
	assert_non_null(r);
	struct gpu_worker w[2] = { { r, fake_stream_create(0), 0x9e3779b97f4a7c15ull },
				   { r, fake_stream_create(0), 0xbf58476d1ce4e5b9ull } };
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, gpu_work, &w[i]), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	assert_int_equal(pt_close(r), 0);
	struct ana_options o = { .thread = -1, .no_samples = true, .merged_percentiles_only = true };
	struct ana_result res;
	char err[256];
	o.jobs = 1;
	assert_int_equal(ana_run(path, &o, &res, err, sizeof(err)), 0);
	/* the premise: parts, and GPU halves paired across threads in file order */
	assert_true(pt_reader_info(res.rd)->parts >= 2);
	assert_true(res.gpu.file_order);
	assert_true(res.gpu.paired >= 100);
	ana_result_free(&res);
	assert_int_equal(same_as_one(path, o, 3), 3);
	o.merged_percentiles_only = false;
	assert_int_equal(same_as_one(path, o, 2), 2);
}

int main(void)
{
	setenv("PTZ_CUDA_RUNTIME", FAKE_CUDART_PATH, 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rotated_gpu_trace_parallel),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parallel_equals_serial),
		cmocka_unit_test(test_cross_thread_records_deferred),
		cmocka_unit_test(test_gpu_trace_parallel),
		cmocka_unit_test(test_damage_read_serially),
		cmocka_unit_test(test_what_is_read_serially),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
