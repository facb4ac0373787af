/*
 * tests/unit/test_recorder_sample.c - pt_begin_sampled(): sampled requests.
 *
 * Invariants covered:
 *  - 100,000 requests at p = 0.1: the requests chosen (the return value)
 *    are within 5 sigma of the binomial mean, and exactly they are in the
 *    trace: each root BEGIN immediately preceded, on its thread, by the
 *    COUNTER PT_FMT_SAMPLE_COUNTER of value round(p x 1e9), with its nested
 *    children, metrics and its pt_end(); no record of a request not chosen
 *    (its own child id never appears) nor of its children;
 *  - nothing counted as lost or as misuse, nesting intact;
 *  - p >= 1 records every request as pt_begin() (no counter);
 *  - p <= 0, NaN: never recorded, return 0, nothing counted; a p below
 *    1e-9 is written as 1 (never 0: a weight of infinity);
 *  - a NULL recorder returns 0.
 */
#include <math.h>
#include <stdlib.h>

#include "tests/test_util.h"
#include "ptz/recorder.h"

/* The name id of PT_FMT_SAMPLE_COUNTER in the trace, 0 if none. */
static uint32_t sample_id_of(struct tu_trace *tr)
{
	for (uint32_t id = 1; id <= pt_reader_max_string_id(tr->rd); id++) {
		uint32_t dom = 0;
		const char *n = pt_reader_string(tr->rd, id, &dom);
		if (n && dom == 0 && strcmp(n, PT_FMT_SAMPLE_COUNTER) == 0)
			return id;
	}
	return 0;
}

static void test_sampled_requests_p01(void **state)
{
	(void)state;
	setenv("PTZ_RING_BYTES", "33554432", 1); /* no loss whatever the flusher's pace */
	const char *path = tu_path("sampled.ptz");
	pt_recorder *r = pt_open(path, NULL, 0);
	assert_non_null(r);
	const uint32_t req = pt_intern(r, "s-request"), a = pt_intern(r, "s-child"), b = pt_intern(r, "s-grandchild");
	const uint32_t unseen = pt_intern(r, "s-only-in-unsampled");
	const int n = 100000;
	long chosen = 0;
	for (int i = 0; i < n; i++) {
		const int in = pt_begin_sampled(r, req, 0.1);
		assert_true(in == 0 || in == 1);
		chosen += in;
		pt_begin(r, in ? a : unseen); /* a request not chosen records nothing, whatever it does */
		pt_metric(r, PT_METRIC_FLOPS, 7);
		pt_begin(r, b);
		pt_end(r, b);
		pt_end(r, in ? a : unseen);
		pt_begin(r, b);
		pt_end(r, b);
		pt_end(r, req);
	}
	struct pt_stats_info st;
	assert_int_equal(pt_stats(r, &st, sizeof(st)), 0);
	assert_int_equal(st.lost_records, 0);
	assert_int_equal(st.lost_sections, 0);
	assert_int_equal(st.errors, 0);
	assert_int_equal(pt_close(r), 0);
	unsetenv("PTZ_RING_BYTES");
	/* binomial(100000, 0.1): mean 10,000, sigma 94.9 */
	const double sigma = sqrt(n * 0.1 * 0.9);
	assert_true(fabs((double)chosen - n * 0.1) <= 5 * sigma);

	struct tu_trace tr;
	tu_read(path, &tr);
	const uint32_t sid = sample_id_of(&tr);
	assert_int_not_equal(sid, 0);
	long roots = 0, counters = 0, children = 0, grand = 0, metrics = 0;
	for (size_t t = 0; t < tr.nt; t++) {
		const struct tu_thread *th = &tr.t[t];
		if (th->n && th->recs[0].kind == PT_REC_COUNTER && th->recs[0].id != sid)
			continue; /* the flusher's process counters */
		size_t open = 0;
		const size_t secs = tu_check_nesting(th, &open);
		assert_int_equal(open, 0);
		for (size_t i = 0; i < th->n; i++) {
			const struct pt_record *x = &th->recs[i];
			assert_int_not_equal(x->id == unseen && x->kind != PT_REC_METRIC, 1);
			if (x->kind == PT_REC_COUNTER && x->id == sid) {
				counters++;
				assert_int_equal((int64_t)x->value, 100000000); /* 0.1 x 1e9 */
				assert_true(i + 1 < th->n);
				assert_int_equal(th->recs[i + 1].kind, PT_REC_BEGIN); /* immediately before its BEGIN */
				assert_int_equal(th->recs[i + 1].id, req);
			} else if (x->kind == PT_REC_BEGIN) {
				if (x->id == req) {
					roots++;
					assert_true(i > 0 && th->recs[i - 1].kind == PT_REC_COUNTER && th->recs[i - 1].id == sid);
				}
				children += x->id == a;
				grand += x->id == b;
			} else if (x->kind == PT_REC_METRIC) {
				metrics++;
			}
		}
		if (roots)
			assert_int_equal(secs, (size_t)(4 * chosen));
	}
	assert_int_equal(roots, chosen);
	assert_int_equal(counters, chosen);
	assert_int_equal(children, chosen);
	assert_int_equal(grand, 2 * chosen);
	assert_int_equal(metrics, chosen);
	assert_int_equal(tr.lost_records, 0);
	assert_int_equal(tr.errors, 0);
	tu_free(&tr);
}

/* p >= 1: every request, as pt_begin() writes it (no counter: exact). */
static void test_sampled_p1_records_all(void **state)
{
	(void)state;
	const char *path = tu_path("sampled-p1.ptz");
	pt_recorder *r = pt_open(path, NULL, 0);
	const uint32_t req = pt_intern(r, "s1-request"), a = pt_intern(r, "s1-child");
	for (int i = 0; i < 1000; i++) {
		assert_int_equal(pt_begin_sampled(r, req, i % 2 ? 1.0 : 7.5), 1);
		pt_begin(r, a);
		pt_end(r, a);
		pt_end(r, req);
	}
	assert_int_equal(pt_close(r), 0);
	struct tu_trace tr;
	tu_read(path, &tr);
	const uint32_t sid = sample_id_of(&tr);
	long roots = 0;
	for (size_t t = 0; t < tr.nt; t++)
		for (size_t i = 0; i < tr.t[t].n; i++) {
			const struct pt_record *x = &tr.t[t].recs[i];
			assert_false(sid && x->kind == PT_REC_COUNTER && x->id == sid);
			roots += x->kind == PT_REC_BEGIN && x->id == req;
		}
	assert_int_equal(roots, 1000);
	tu_free(&tr);
}

/* p <= 0 or NaN: never; a tiny p is still a probability (written as 1 per 1e9). */
static void test_sampled_bad_p_never_records(void **state)
{
	(void)state;
	assert_int_equal(pt_begin_sampled(NULL, 1, 0.5), 0);
	const char *path = tu_path("sampled-bad.ptz");
	pt_recorder *r = pt_open(path, NULL, 0);
	const uint32_t req = pt_intern(r, "sb-request"), a = pt_intern(r, "sb-child");
	const double bad[] = { 0.0, -0.0, -1.0, -INFINITY, NAN, 1e-300 * 0.0 };
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
		for (int i = 0; i < 1000; i++) {
			assert_int_equal(pt_begin_sampled(r, req, bad[k]), 0);
			pt_begin(r, a);
			pt_end(r, a);
			pt_end(r, req);
		}
	long tiny = 0;
	for (int i = 0; i < 1000; i++) {
		tiny += pt_begin_sampled(r, req, 1e-15);
		pt_end(r, req);
	}
	assert_true(tiny <= 1); /* P = 1e-9 each */
	struct pt_stats_info st;
	pt_stats(r, &st, sizeof(st));
	assert_int_equal(st.lost_records, 0);
	assert_int_equal(st.errors, 0);
	assert_int_equal(pt_close(r), 0);
	struct tu_trace tr;
	tu_read(path, &tr);
	for (size_t t = 0; t < tr.nt; t++)
		for (size_t i = 0; i < tr.t[t].n; i++) {
			const struct pt_record *x = &tr.t[t].recs[i];
			if (x->kind == PT_REC_BEGIN)
				assert_int_equal(tiny, 1); /* only the tiny-p one, if drawn */
			if (x->kind == PT_REC_COUNTER && x->id == sample_id_of(&tr))
				assert_int_equal((int64_t)x->value, 1);
		}
	tu_free(&tr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sampled_requests_p01),
		cmocka_unit_test(test_sampled_p1_records_all),
		cmocka_unit_test(test_sampled_bad_p_never_records),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
