/*
 * tests/analyzer/test_ana_api.c - the analysis session API (ana_api.h).
 *
 * Invariants covered:
 *  - a session opened on a trace still being written (after pt_flush())
 *    sees its sections; ana_session_update() after more sections and a
 *    flush sees the new counts (the full pass: figures as ana_run's);
 *  - the flat and tree iterators yield exactly the rows with occurrences,
 *    each once, with the report's keys (ana_row_json() = ana_json_row());
 *    ana_row_path() is the CSV's path ("a;b") for a tree row and the name
 *    for a flat row;
 *  - an unreadable path is an error with a message, *out NULL; an update
 *    that fails keeps the previous result.
 */
#include <stdlib.h>
#include <unistd.h>

#include "tests/test_util.h"
#include "ptz/recorder.h"
#include "analyzer/ana_api.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ana_session_open_update_rows),
		cmocka_unit_test(test_ana_session_open_missing_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
