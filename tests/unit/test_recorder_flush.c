/*
 * tests/unit/test_recorder_flush.c - pt_flush(): what was recorded before
 * the call is in the open trace file when it returns.
 *
 * Invariants covered:
 *  - with a flush interval of 60 s (so the flusher would not drain the
 *    small rings on its own), the open trace holds none of the sections
 *    before pt_flush() and every one of them, from two threads (one still
 *    running), right after it: nested correctly, readable by the reader
 *    on the file that is still being written;
 *  - repeated calls each make the records since the previous one readable;
 *  - NULL, a closed recorder: 0, nothing done; the trace still closes
 *    whole after flushes.
 */
#include <pthread.h>
#include <stdlib.h>

#include "tests/test_util.h"
#include "ptz/recorder.h"

/* BEGIN records of section @name in @path, over every thread. */
static size_t begins(const char *path, const char *name)
{
	struct tu_trace tr;
	tu_read(path, &tr);
	size_t n = 0;
	for (size_t i = 0; i < tr.nt; i++) {
		size_t open = 0;
		tu_check_nesting(&tr.t[i], &open);
		for (size_t k = 0; k < tr.t[i].n; k++) {
			const struct pt_record *r = &tr.t[i].recs[k];
			if (r->kind != PT_REC_BEGIN)
				continue;
			const char *s = pt_reader_string(tr.rd, r->id, NULL);
			n += s && strcmp(s, name) == 0;
		}
	}
	tu_free(&tr);
	return n;
}

struct worker {
	pt_recorder *r;
	pthread_barrier_t recorded, release;
};

/* Records 300 "worker" sections, then waits (alive, its ring registered)
 * until the main thread has checked the file. */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint32_t id = pt_intern(w->r, "worker");
	for (int i = 0; i < 300; i++) {
		pt_begin(w->r, id);
		pt_end(w->r, id);
	}
	pthread_barrier_wait(&w->recorded);
	pthread_barrier_wait(&w->release);
	return NULL;
}

static pt_recorder *open_slow(const char *path)
{
	setenv("PTZ_RSS_MS", "0", 1);
	struct pt_options o = { .flush_interval_ms = 60000 };
	pt_recorder *r = pt_open(path, &o, sizeof(o));
	assert_non_null(r);
	return r;
}

static void test_pt_flush_open_trace_holds_every_thread(void **state)
{
	(void)state;
	const char *path = tu_path("flush-threads.ptz");
	pt_recorder *r = open_slow(path);
	struct worker w = { .r = r };
	pthread_barrier_init(&w.recorded, NULL, 2);
	pthread_barrier_init(&w.release, NULL, 2);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, worker_main, &w), 0);
	uint32_t outer = pt_intern(r, "outer"), inner = pt_intern(r, "inner");
	for (int i = 0; i < 1000; i++) {
		pt_begin(r, outer);
		pt_begin(r, inner);
		pt_end(r, inner);
		pt_end(r, outer);
	}
	pthread_barrier_wait(&w.recorded);
	/* the rings hold far less than 1/16 of their capacity and the
	 * interval is a minute: nothing drained yet (checks the test) */
	assert_int_equal(begins(path, "outer"), 0);
	assert_int_equal(begins(path, "worker"), 0);
	assert_int_equal(pt_flush(r), 0);
	assert_int_equal(begins(path, "outer"), 1000);
	assert_int_equal(begins(path, "inner"), 1000);
	assert_int_equal(begins(path, "worker"), 300);
	pthread_barrier_wait(&w.release);
	pthread_join(th, NULL);
	assert_int_equal(pt_close(r), 0);
	assert_int_equal(begins(path, "outer"), 1000);
	assert_int_equal(begins(path, "worker"), 300);
	pthread_barrier_destroy(&w.recorded);
	pthread_barrier_destroy(&w.release);
}

static void test_pt_flush_repeated_calls(void **state)
{
	(void)state;
	const char *path = tu_path("flush-repeat.ptz");
	pt_recorder *r = open_slow(path);
	uint32_t id = pt_intern(r, "step");
	for (size_t round = 1; round <= 20; round++) {
		pt_begin(r, id);
		pt_metric(r, PT_METRIC_FLOPS, 10);
		pt_end(r, id);
		assert_int_equal(pt_flush(r), 0);
		assert_int_equal(begins(path, "step"), round);
	}
	assert_int_equal(pt_flush(r), 0); /* nothing new: still 0 */
	assert_int_equal(pt_close(r), 0);
	assert_int_equal(begins(path, "step"), 20);
}

static void test_pt_flush_null_and_closed(void **state)
{
	(void)state;
	assert_int_equal(pt_flush(NULL), 0);
	const char *path = tu_path("flush-closed.ptz");
	pt_recorder *r = open_slow(path);
	assert_int_equal(pt_close(r), 0);
	assert_int_equal(pt_flush(r), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pt_flush_open_trace_holds_every_thread),
		cmocka_unit_test(test_pt_flush_repeated_calls),
		cmocka_unit_test(test_pt_flush_null_and_closed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
