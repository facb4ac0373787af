/*
 * tests/analyzer/test_ana_api.c - the analysis session API (ana_api.h).
 *
 * Invariants covered:
 *  - a session opened on a trace still being written (after pt_flush())
 *    sees its sections; ana_session_update() after more sections and a
 *    flush sees the new counts;
 *  - the flat and tree iterators yield exactly the rows with occurrences,
 *    each once, with the report's keys (ana_row_json() = ana_json_row());
 *    ana_row_path() is the CSV's path ("a;b") for a tree row and the name
 *    for a flat row;
 *  - an unreadable path is an error with a message, *out NULL; an update
 *    that fails keeps the previous result;
 *  - incremental updates equal one full pass at every step: a live
 *    recorder's three threads (one starting late, names appearing late,
 *    recursion left open, metrics, transfers, memory samples) are cut at
 *    random moments, the file as it is then copied aside, and the
 *    session's result (which reads only what is new) written as the text
 *    report, CSV and JSON byte for byte equals ana_run()'s of the same
 *    copy; with CLOCK_MONOTONIC most updates read only what is new (with
 *    the TSC a new clock triple moves the slope, and the state starts
 *    over: counted, and equal too);
 *  - built with FAKE_CUDART_PATH (test analyzer-api-gpu, its own process:
 *    the fake CUDA runtime is loaded once), the same with GPU sections on
 *    two streams, async ranges and instants: the GPU pairing, device busy
 *    time and unmatched halves of each step equal ana_run()'s.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "tests/analyzer/ana_test_util.h"
#include "ptz/recorder.h"
#include "analyzer/ana_api.h"
#ifdef FAKE_CUDART_PATH
#include "tests/gpu/fake_cudart.h"
#endif

#ifndef FAKE_CUDART_PATH /* the CPU cases: not in the GPU build */
static uint64_t row_count(struct ana_session *s, enum ana_view v, const char *key)
{
	struct ana_row_iter it;
	struct ana_row_ref row;
	char *buf = NULL;
	size_t cap = 0;
	uint64_t count = 0;
	ana_rows_begin(s, v, &it);
	while (ana_rows_next(&it, &row) == 1) {
		const char *k = ana_row_path(s, &row, &buf, &cap);
		assert_non_null(k);
		if (strcmp(k, key) == 0) {
			assert_int_equal(count, 0); /* each row once */
			json_t *j = ana_row_json(s, &row);
			assert_non_null(j);
			assert_int_equal(json_integer_value(json_object_get(j, "count")), row.a->count);
			assert_true(json_is_integer(json_object_get(j, "p99_ns")));
			assert_int_equal(json_object_get(j, "path") != NULL, v == ANA_VIEW_TREE);
			json_decref(j);
			count = row.a->count;
		}
	}
	free(buf);
	return count;
}

static size_t rows_in(struct ana_session *s, enum ana_view v)
{
	struct ana_row_iter it;
	struct ana_row_ref row;
	size_t n = 0;
	ana_rows_begin(s, v, &it);
	while (ana_rows_next(&it, &row) == 1) {
		assert_true(row.a->count > 0);
		n++;
	}
	assert_int_equal(ana_rows_next(&it, &row), 0); /* stays at the end */
	return n;
}

static void record(pt_recorder *r, int n)
{
	uint32_t a = pt_intern(r, "a"), b = pt_intern(r, "b");
	for (int i = 0; i < n; i++) {
		pt_begin(r, a);
		pt_begin(r, b);
		pt_metric(r, PT_METRIC_FLOPS, 3);
		pt_end(r, b);
		pt_end(r, a);
	}
}

static void test_ana_session_open_update_rows(void **state)
{
	(void)state;
	setenv("PTZ_RSS_MS", "0", 1);
	const char *path = tu_path("session.ptz");
	struct pt_options o = { .flush_interval_ms = 60000 };
	pt_recorder *r = pt_open(path, &o, sizeof(o));
	assert_non_null(r);
	record(r, 10);
	assert_int_equal(pt_flush(r), 0);
	char err[256] = "";
	struct ana_session *s = NULL;
	assert_int_equal(ana_session_open(path, NULL, &s, err, sizeof(err)), 0);
	assert_non_null(s);
	assert_int_equal(row_count(s, ANA_VIEW_FLAT, "a"), 10);
	assert_int_equal(row_count(s, ANA_VIEW_FLAT, "b"), 10);
	assert_int_equal(row_count(s, ANA_VIEW_TREE, "a;b"), 10);
	assert_int_equal(rows_in(s, ANA_VIEW_FLAT), 2);
	assert_int_equal(rows_in(s, ANA_VIEW_TREE), 2);
	assert_int_equal(ana_session_result(s)->sections, 20);

	record(r, 990);
	assert_int_equal(row_count(s, ANA_VIEW_FLAT, "a"), 10); /* not updated yet */
	assert_int_equal(pt_flush(r), 0);
	assert_int_equal(ana_session_update(s, err, sizeof(err)), 0);
	assert_int_equal(row_count(s, ANA_VIEW_FLAT, "a"), 1000);
	assert_int_equal(row_count(s, ANA_VIEW_TREE, "a;b"), 1000);
	assert_int_equal(ana_session_result(s)->by_name[pt_intern(NULL, "a")].metric_incl[ANA_FLOPS], 3000);
	assert_int_equal(pt_close(r), 0);

	/* the file gone: the update fails, the previous result stays */
	assert_int_equal(unlink(path), 0);
	assert_true(ana_session_update(s, err, sizeof(err)) < 0);
	assert_true(err[0] != 0);
	assert_int_equal(row_count(s, ANA_VIEW_TREE, "a;b"), 1000);
	ana_session_close(s);
	ana_session_close(NULL);
}

static void test_ana_session_open_missing_file(void **state)
{
	(void)state;
	char err[256] = "";
	struct ana_session *s = (struct ana_session *)&err; /* must be reset */
	assert_true(ana_session_open(tu_path("missing.ptz"), NULL, &s, err, sizeof(err)) < 0);
	assert_null(s);
	assert_true(err[0] != 0);
	assert_true(ana_session_open(NULL, NULL, &s, err, sizeof(err)) == -EINVAL);
}
#endif

/* ---- incremental updates equal one full pass at every step ---- */

struct inc_worker {
	pt_recorder *r;
	atomic_int *stop;
	unsigned seed;
	void *stream; /* a fake CUDA stream: GPU sections, async ranges, instants */
};

static void *inc_work(void *arg)
{
	struct inc_worker *w = arg;
	static const char *const names[] = { "solve", "step", "io", "late-a", "late-b", "rec" };
	unsigned seed = w->seed;
	uint64_t n = 0;
	while (!atomic_load(w->stop)) {
		/* the last names are used only after a while: the string table grows */
		const int k = (int)(rand_r(&seed) % (n < 2000 ? 3 : 6));
		uint32_t id = pt_intern(w->r, names[k]);
		pt_begin(w->r, id);
		if (rand_r(&seed) % 3 == 0) {
			uint32_t in = pt_intern(w->r, names[rand_r(&seed) % 3]);
			pt_begin(w->r, in);
			pt_metric(w->r, PT_METRIC_FLOPS, 1 + rand_r(&seed) % 1000);
			if (rand_r(&seed) % 4 == 0)
				pt_transfer(w->r, 4096, PT_H2D);
			pt_end(w->r, in);
		}
		if (k == 5 && rand_r(&seed) % 8 == 0) { /* recursion, sometimes open across a cut */
			pt_begin(w->r, id);
			usleep(rand_r(&seed) % 2000);
			pt_end(w->r, id);
		}
		pt_metric(w->r, PT_METRIC_READ_BYTES, 64);
#ifdef FAKE_CUDART_PATH
		if (w->stream && rand_r(&seed) % 2) { /* a GPU section inside, its range paired later */
			uint32_t g = pt_intern(w->r, rand_r(&seed) % 2 ? "kernel" : "copy");
			pt_gpu_begin(w->r, g, w->stream);
			fake_launch(w->stream, 2000 + rand_r(&seed) % 50000);
			if (rand_r(&seed) % 4 == 0)
				pt_transfer(w->r, 1 << 20, PT_D2H);
			pt_gpu_end(w->r, g, w->stream);
		}
		if (w->stream && rand_r(&seed) % 16 == 0)
			pt_instant(w->r, pt_intern(w->r, "mark"));
		if (w->stream && rand_r(&seed) % 8 == 0) {
			static _Atomic uint64_t pending; /* an async range begun on one thread, ended on another */
			uint64_t a = atomic_exchange(&pending, 0);
			if (a)
				pt_async_end(w->r, a);
			else
				atomic_store(&pending, pt_async_begin(w->r, pt_intern(w->r, "request")));
		}
#endif
		pt_end(w->r, id);
		if (++n % 16 == 0) /* leave the 2-core CI machine to the other tests */
			usleep(w->stream ? 1000 : 200);
	}
	return NULL;
}

/* Output @what (0 text, 1 CSV, 2 JSON) of @res for every thread, as a string the caller frees. */
static char *output_of(const struct ana_result *res, int what)
{
	return ana_test_output((enum ana_test_out)what, res, &(struct ana_report_opts){ .thread = -1 });
}

/* The file at @from as it is now, at @to (header first: what it commits is written by then). */
static void copy_file(const char *from, const char *to)
{
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	assert_non_null(in);
	assert_non_null(out);
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		assert_int_equal(fwrite(buf, 1, n, out), n);
	fclose(in);
	assert_int_equal(fclose(out), 0);
}

static void incremental_equals_full(const char *clock, bool gpu, struct ana_live_stats *st)
{
	if (clock)
		setenv("PTZ_CLOCK", clock, 1);
	else
		unsetenv("PTZ_CLOCK");
	setenv("PTZ_RSS_MS", "3", 1); /* memory series: each section measured against RSS samples */
	const char *path = tu_path(gpu ? "inc-gpu.ptz" : clock ? "inc-mono.ptz" : "inc-default.ptz");
	char cut[4096];
	snprintf(cut, sizeof(cut), "%s.cut", path);
	struct pt_options o = { .flush_interval_ms = 2 };
	pt_recorder *r = pt_open(path, &o, sizeof(o));
	assert_non_null(r);
	atomic_int stop = 0;
	struct inc_worker w[3] = { { r, &stop, 1, NULL }, { r, &stop, 2, NULL }, { r, &stop, 3, NULL } };
#ifdef FAKE_CUDART_PATH
	if (gpu) {
		w[0].stream = w[2].stream = fake_stream_create(0);
		w[1].stream = fake_stream_create(0);
	}
#else
	assert_false(gpu);
#endif
	pthread_t th[3];
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, inc_work, &w[i]), 0);
	if (gpu) { /* the recorder's "ptz-gpu" thread in the table before the first cut (see below) */
		pt_gpu_begin(r, pt_intern(r, "warm-up"), w[1].stream);
		pt_gpu_end(r, pt_intern(r, "warm-up"), w[1].stream);
		assert_int_equal(pt_flush(r), 0);
	}
	unsigned seed = 7;
	struct ana_session *s = NULL;
	char err[256] = "";
	const int steps = gpu ? 16 : 40; /* the fake runtime's polling is slow under ASan */
	int open_depth = 0;
#ifdef FAKE_CUDART_PATH
	unsigned phase_open = 0; /* odd: a phase open, phase-a or phase-b by turns */
#endif
	for (int step = 0; step < steps; step++) {
		if (step == steps / 3) /* a thread that starts late */
			assert_int_equal(pthread_create(&th[2], NULL, inc_work, &w[2]), 0);
		/* this thread: sections open across cuts that enclose closed ones of
		 * their name (their pending recursion-safe sums, doc §2) */
		const uint32_t rec = pt_intern(r, "rec");
		if (gpu) { /* (phase-a and phase-b alternate: 0 opens a, 1 closes it, 2 opens b...) */
			/* the phases below instead */
		} else if (rand_r(&seed) % 2 && open_depth < 4) {
			pt_begin(r, rec);
			pt_begin(r, rec);
			pt_end(r, rec);
			open_depth++;
		} else if (open_depth) {
			pt_end(r, rec);
			open_depth--;
		}
#ifdef FAKE_CUDART_PATH
		/* a section open across cuts whose GPU child's range pairs while it
		 * is open, the first time before any of its path closed */
		if (gpu && rand_r(&seed) % 2) {
			const uint32_t g = pt_intern(r, "gpu-child");
			if (phase_open % 2 == 0) {
				pt_begin(r, pt_intern(r, phase_open % 4 == 0 ? "phase-a" : "phase-b"));
				pt_gpu_begin(r, g, w[1].stream);
				fake_launch(w[1].stream, 1000);
				pt_gpu_end(r, g, w[1].stream);
			} else {
				pt_end(r, pt_intern(r, phase_open % 4 == 1 ? "phase-a" : "phase-b"));
			}
			phase_open++;
		}
#endif
		usleep(1000 + rand_r(&seed) % 20000);
		if (rand_r(&seed) % 2)
			assert_int_equal(pt_flush(r), 0);
		copy_file(path, cut);
		if (!s)
			assert_int_equal(ana_session_open(cut, NULL, &s, err, sizeof(err)), 0);
		else
			assert_int_equal(ana_session_update(s, err, sizeof(err)), 0);
		struct ana_options fo = { .thread = -1, .no_samples = true };
		struct ana_result full;
		assert_int_equal(ana_run(cut, &fo, &full, err, sizeof(err)), 0);
		for (int what = 0; what < 3; what++) {
			char *a = output_of(ana_session_result(s), what), *b = output_of(&full, what);
			if (strcmp(a, b) != 0) { /* both kept beside the cut, and their diff shown */
				char pa[4200], pb[4200], cmd[8600];
				snprintf(pa, sizeof(pa), "%s.incremental.%d", cut, what);
				snprintf(pb, sizeof(pb), "%s.full.%d", cut, what);
				FILE *fa = fopen(pa, "w"), *fb = fopen(pb, "w");
				if (fa && fb) {
					fputs(a, fa);
					fputs(b, fb);
				}
				if (fa)
					fclose(fa);
				if (fb)
					fclose(fb);
				fprintf(stderr, "step %d, output %d differs (incremental <, full pass >):\n", step, what);
				snprintf(cmd, sizeof(cmd), "diff '%s' '%s' | head -40 >&2", pa, pb);
				if (system(cmd) == -1)
					fprintf(stderr, "(no diff)\n");
				fail();
			}
			free(a);
			free(b);
		}
		ana_result_free(&full);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(pt_close(r), 0);
	ana_session_stats(s, st);
	fprintf(stderr, "# clock %s: %llu updates, %llu read only what was new, %llu rebuilt, %llu full passes\n",
		clock ? clock : "default", (unsigned long long)st->updates, (unsigned long long)st->extended,
		(unsigned long long)st->rebuilt, (unsigned long long)st->full);
	assert_int_equal(st->updates, steps);
	assert_int_equal(st->extended + st->rebuilt + st->full, steps);
	ana_session_close(s);
	unsetenv("PTZ_CLOCK");
	unsetenv("PTZ_RSS_MS");
}

#ifndef FAKE_CUDART_PATH
static void test_incremental_equals_full_monotonic(void **state)
{
	(void)state;
	struct ana_live_stats st;
	incremental_equals_full("monotonic", false, &st);
	/* the slope is 1: the state starts over only for a late memory sample
	 * (a few here; a loaded machine can delay more of them) */
	assert_true(st.extended >= 10);
	assert_int_equal(st.full, 0);
}

/* A rotated trace: the session, opened while one part exists, sees the
 * later parts (a new file each: the reader of the first cannot), and its
 * outputs equal ana_run()'s. */
static void test_session_follows_rotation(void **state)
{
	(void)state;
	const char *path = tu_path("rot.ptz");
	struct pt_options o = { .flush_interval_ms = 5, .rotate_seconds = 1 };
	pt_recorder *r = pt_open(path, &o, sizeof(o));
	assert_non_null(r);
	record(r, 100);
	assert_int_equal(pt_flush(r), 0);
	char err[256] = "";
	struct ana_session *s = NULL;
	assert_int_equal(ana_session_open(path, NULL, &s, err, sizeof(err)), 0);
	assert_int_equal(ana_session_result(s)->sections, 200);
	for (int step = 0; step < 3; step++) { /* past a rotation */
		for (int k = 0; k < 6; k++) {
			record(r, 50);
			usleep(100000);
		}
		assert_int_equal(pt_flush(r), 0);
		assert_int_equal(ana_session_update(s, err, sizeof(err)), 0);
		struct ana_options fo = { .thread = -1, .no_samples = true };
		struct ana_result full;
		assert_int_equal(ana_run(path, &fo, &full, err, sizeof(err)), 0);
		assert_int_equal(ana_session_result(s)->sections, full.sections);
		assert_int_equal(full.sections, 200 + (uint64_t)(step + 1) * 600);
		for (int what = 0; what < 3; what++) {
			char *a = output_of(ana_session_result(s), what), *b = output_of(&full, what);
			assert_string_equal(a, b);
			free(a);
			free(b);
		}
		ana_result_free(&full);
	}
	assert_true(pt_reader_info(ana_session_result(s)->rd)->parts >= 2);
	assert_int_equal(pt_close(r), 0);
	ana_session_close(s);
}

static void test_incremental_equals_full_default_clock(void **state)
{
	(void)state;
	struct ana_live_stats st;
	incremental_equals_full(NULL, false, &st);
	assert_int_equal(st.full, 0);
}
#endif

#ifdef FAKE_CUDART_PATH
static void test_incremental_equals_full_gpu(void **state)
{
	(void)state;
	struct ana_live_stats st;
	incremental_equals_full("monotonic", true, &st);
	/* a "ptz-gpu" thread from the first cut on: ana_run() reads in file
	 * order, as the live pass does (before it, GPU records would be paired
	 * in thread order by ana_run(), and the session would give its result) */
	assert_true(st.extended >= 5);
	assert_int_equal(st.full, 0);
}

int main(void)
{
	setenv("PTZ_CUDA_RUNTIME", FAKE_CUDART_PATH, 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_incremental_equals_full_gpu),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ana_session_open_update_rows),
		cmocka_unit_test(test_ana_session_open_missing_file),
		cmocka_unit_test(test_incremental_equals_full_monotonic),
		cmocka_unit_test(test_incremental_equals_full_default_clock),
		cmocka_unit_test(test_session_follows_rotation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
