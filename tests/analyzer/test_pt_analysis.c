/*
 * tests/analyzer/test_pt_analysis.c - the public analysis API
 * (include/ptz/analysis.h, libptanalyze.so), linked as a user links it:
 * the shared library, and nothing of the analyzer's internals.
 *
 * Invariants covered:
 *  - open on a trace still being written: the flat and tree rows have the
 *    recorded counts, names, paths, depths and metrics; every row's figures
 *    equal the JSON report's row that pt_analysis_write() writes (one
 *    definition: the report's own);
 *  - update after more sections reads only what is new (totals say so) and
 *    gives the new counts; the text and CSV reports are ptanalyze's;
 *  - size-versioned structs: a caller's shorter struct gets its prefix, a
 *    longer one zeros past the library's;
 *  - errors: a missing file (-ENOENT, message), NULL arguments and an
 *    index out of range (-EINVAL), a failed update keeps the analysis;
 *  - a set of traces (pt_analysis_open_set()): its call-path rows sum
 *    the traces' counts and times and equal its JSON view's rows; a trace
 *    given twice keeps its own mean, std and percentiles with twice the
 *    count and total; no flat rows, no CSV (-ENOTSUP); a missing member
 *    is named in the message.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "tests/test_util.h"
#include "ptz/analysis.h"
#include "ptz/recorder.h"

static void record(pt_recorder *r, int n)
{
	uint32_t a = pt_intern(r, "outer"), b = pt_intern(r, "inner");
	for (int i = 0; i < n; i++) {
		pt_begin(r, a);
		pt_metric(r, PT_METRIC_READ_BYTES, 1000);
		pt_begin(r, b);
		pt_metric(r, PT_METRIC_FLOPS, 7);
		pt_end(r, b);
		pt_end(r, a);
	}
}

static json_t *report_json(pt_analysis *a)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(pt_analysis_write(a, PT_ANALYSIS_JSON, f), 0);
	fclose(f);
	json_error_t e;
	json_t *j = json_loads(buf, 0, &e);
	free(buf);
	assert_non_null(j);
	return j;
}

static void check_real(const json_t *row, const char *key, double v)
{
	const json_t *x = json_object_get(row, key);
	if (isnan(v)) {
		assert_true(!x || json_is_null(x));
		return;
	}
	assert_non_null(x);
	const double want = json_number_value(x);
	assert_true(fabs(v - want) <= 1e-9 * fabs(want) + 1e-9);
}

/* Every row of @view equals its JSON row (flat: by name; tree: by path). */
static void rows_equal_json(pt_analysis *a, enum pt_analysis_view view)
{
	json_t *rep = report_json(a);
	const json_t *rows = json_object_get(rep, view == PT_ANALYSIS_FLAT ? "flat" : "tree");
	assert_true(json_is_array(rows));
	assert_int_equal(pt_analysis_rows(a, view), json_array_size(rows));
	for (size_t i = 0; i < pt_analysis_rows(a, view); i++) {
		struct pt_analysis_row r;
		assert_int_equal(pt_analysis_row(a, view, i, &r, sizeof(r)), 0);
		const json_t *j = NULL;
		for (size_t k = 0; k < json_array_size(rows) && !j; k++) {
			const json_t *c = json_array_get(rows, k);
			if (view == PT_ANALYSIS_FLAT) {
				if (strcmp(json_string_value(json_object_get(c, "name")), r.name) == 0)
					j = c;
				continue;
			}
			const json_t *p = json_object_get(c, "path");
			char path[512] = "";
			for (size_t q = 0; q < json_array_size(p); q++)
				snprintf(path + strlen(path), sizeof(path) - strlen(path), "%s%s", q ? ";" : "",
					 json_string_value(json_array_get(p, q)));
			if (strcmp(path, r.path) == 0)
				j = c;
		}
		assert_non_null(j);
		assert_int_equal(r.count, json_integer_value(json_object_get(j, "count")));
		assert_int_equal(r.total_ns, json_integer_value(json_object_get(j, "total_ns")));
		assert_int_equal(r.self_ns, json_integer_value(json_object_get(j, "self_ns")));
		assert_int_equal(r.min_ns, json_integer_value(json_object_get(j, "min_ns")));
		assert_int_equal(r.max_ns, json_integer_value(json_object_get(j, "max_ns")));
		assert_int_equal(r.p50_ns, json_integer_value(json_object_get(j, "p50_ns")));
		assert_int_equal(r.p90_ns, json_integer_value(json_object_get(j, "p90_ns")));
		assert_int_equal(r.p99_ns, json_integer_value(json_object_get(j, "p99_ns")));
		assert_int_equal(r.first_ns, json_integer_value(json_object_get(j, "first_ns")));
		assert_int_equal(r.read_bytes, json_integer_value(json_object_get(j, "read_bytes")));
		assert_int_equal(r.written_bytes, json_integer_value(json_object_get(j, "written_bytes")));
		assert_int_equal(r.flops, json_integer_value(json_object_get(j, "flops")));
		check_real(j, "mean_ns", r.mean_ns);
		check_real(j, "std_ns", r.std_ns);
		check_real(j, "rest_mean_ns", r.rest_mean_ns);
		check_real(j, "rest_std_ns", r.rest_std_ns);
		check_real(j, "share", r.share);
		check_real(j, "gb_per_s", r.gb_per_s);
		check_real(j, "gflop_per_s", r.gflop_per_s);
		if (view == PT_ANALYSIS_TREE)
			assert_int_equal(r.depth, json_array_size(json_object_get(j, "path")));
		else
			assert_int_equal(r.depth, 0);
	}
	json_decref(rep);
}

static const struct pt_analysis_row *find(pt_analysis *a, enum pt_analysis_view v, const char *key,
					  struct pt_analysis_row *r)
{
	for (size_t i = 0; i < pt_analysis_rows(a, v); i++) {
		assert_int_equal(pt_analysis_row(a, v, i, r, sizeof(*r)), 0);
		if (strcmp(v == PT_ANALYSIS_TREE ? r->path : r->name, key) == 0)
			return r;
	}
	return NULL;
}

static void test_open_rows_update(void **state)
{
	(void)state;
	const char *path = tu_path("public.ptz");
	struct pt_options o = { .flush_interval_ms = 60000 };
	pt_recorder *r = pt_open(path, &o, sizeof(o));
	assert_non_null(r);
	record(r, 10);
	assert_int_equal(pt_flush(r), 0);

	pt_analysis *a = NULL;
	assert_int_equal(pt_analysis_open(path, &a), 0);
	assert_string_equal(pt_analysis_errmsg(a), "");
	struct pt_analysis_row row;
	assert_non_null(find(a, PT_ANALYSIS_FLAT, "outer", &row));
	assert_int_equal(row.count, 10);
	assert_int_equal(row.read_bytes, 10000);
	assert_int_equal(row.flops, 70); /* inclusive: its child's */
	assert_non_null(find(a, PT_ANALYSIS_TREE, "outer;inner", &row));
	assert_string_equal(row.name, "inner");
	assert_int_equal(row.depth, 2);
	assert_int_equal(row.count, 10);
	assert_true(row.min_ns <= row.p50_ns && row.p50_ns <= row.max_ns);
	rows_equal_json(a, PT_ANALYSIS_FLAT);
	rows_equal_json(a, PT_ANALYSIS_TREE);

	record(r, 990);
	assert_int_equal(pt_flush(r), 0);
	assert_int_equal(pt_analysis_update(a), 0);
	assert_non_null(find(a, PT_ANALYSIS_FLAT, "inner", &row));
	assert_int_equal(row.count, 1000);
	struct pt_analysis_totals t;
	assert_int_equal(pt_analysis_totals(a, &t, sizeof(t)), 0);
	assert_int_equal(t.sections, 2000);
	assert_int_equal(t.updates, 2);
	assert_int_equal(t.incremental + t.full, 2);
	assert_true(t.wall_span_ns > 0 && t.thread_span_sum_ns > 0);
	rows_equal_json(a, PT_ANALYSIS_FLAT);
	rows_equal_json(a, PT_ANALYSIS_TREE);
	/* the text and CSV reports: ptanalyze's headers */
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_int_equal(pt_analysis_write(a, PT_ANALYSIS_TEXT, f), 0);
	assert_int_equal(pt_analysis_write(a, PT_ANALYSIS_CSV, f), 0);
	assert_int_equal(pt_analysis_write(a, (enum pt_analysis_format)7, f), -EINVAL);
	fclose(f);
	assert_non_null(strstr(buf, "Call tree (all threads)"));
	assert_non_null(strstr(buf, "outer;inner"));
	free(buf);
	assert_int_equal(pt_close(r), 0);

	/* size-versioned: a shorter struct gets its prefix, a longer one zeros */
	struct {
		struct pt_analysis_row row;
		uint64_t more[4];
	} big;
	memset(&big, 0xab, sizeof(big));
	assert_int_equal(pt_analysis_row(a, PT_ANALYSIS_FLAT, 0, (struct pt_analysis_row *)&big, sizeof(big)), 0);
	for (int k = 0; k < 4; k++)
		assert_int_equal(big.more[k], 0);
	struct pt_analysis_row small;
	memset(&small, 0xcd, sizeof(small));
	const size_t prefix = offsetof(struct pt_analysis_row, count) + sizeof(small.count);
	assert_int_equal(pt_analysis_row(a, PT_ANALYSIS_FLAT, 0, &small, prefix), 0);
	assert_true(small.count > 0);
	assert_int_equal(small.total_ns, 0xcdcdcdcdcdcdcdcdull); /* past the prefix: untouched */

	/* errors */
	assert_int_equal(pt_analysis_row(a, PT_ANALYSIS_FLAT, pt_analysis_rows(a, PT_ANALYSIS_FLAT), &row,
					 sizeof(row)),
			 -EINVAL);
	assert_int_equal(pt_analysis_row(NULL, PT_ANALYSIS_FLAT, 0, &row, sizeof(row)), -EINVAL);
	assert_int_equal(pt_analysis_rows(NULL, PT_ANALYSIS_TREE), 0);
	assert_int_equal(pt_analysis_totals(a, NULL, 0), -EINVAL);
	assert_int_equal(unlink(path), 0);
	assert_true(pt_analysis_update(a) < 0); /* the file is gone: the analysis stays */
	assert_true(pt_analysis_errmsg(a)[0] != 0);
	assert_non_null(find(a, PT_ANALYSIS_FLAT, "inner", &row));
	assert_int_equal(row.count, 1000);
	pt_analysis_close(a);
	pt_analysis_close(NULL);
}

static void test_open_errors(void **state)
{
	(void)state;
	pt_analysis *a = NULL;
	assert_int_equal(pt_analysis_open(tu_path("missing.ptz"), &a), -ENOENT);
	assert_non_null(a);
	assert_true(strlen(pt_analysis_errmsg(a)) > 0);
	assert_int_equal(pt_analysis_rows(a, PT_ANALYSIS_FLAT), 0);
	assert_int_equal(pt_analysis_update(a), -EINVAL);
	pt_analysis_close(a);
	assert_int_equal(pt_analysis_open(NULL, &a), -EINVAL);
	pt_analysis_close(a);
	assert_int_equal(pt_analysis_open("x.ptz", NULL), -EINVAL);
	assert_string_equal(pt_analysis_errmsg(NULL), "out of memory");
}

static void record_file(const char *path, int n)
{
	struct pt_options o = { .flush_interval_ms = 60000 };
	pt_recorder *r = pt_open(path, &o, sizeof(o));
	assert_non_null(r);
	record(r, n);
	assert_int_equal(pt_close(r), 0);
}

static void test_set(void **state)
{
	(void)state;
	const char *pa = tu_path("set-a.ptz"), *pb = tu_path("set-b.ptz");
	record_file(pa, 10);
	record_file(pb, 30);
	const char *ab[] = { pa, pb }, *aa[] = { pa, pa };
	pt_analysis *a = NULL, *one = NULL, *twice = NULL;
	assert_int_equal(pt_analysis_open_set(ab, 2, &a), 0);
	assert_int_equal(pt_analysis_rows(a, PT_ANALYSIS_FLAT), 0);
	assert_int_equal(pt_analysis_rows(a, PT_ANALYSIS_TREE), 2);
	struct pt_analysis_row row;
	assert_non_null(find(a, PT_ANALYSIS_TREE, "outer;inner", &row));
	assert_string_equal(row.name, "inner");
	assert_int_equal(row.depth, 2);
	assert_int_equal(row.count, 40);
	assert_int_equal(row.flops, 40 * 7);
	assert_int_equal(row.first_ns, 0);
	struct pt_analysis_totals t;
	assert_int_equal(pt_analysis_totals(a, &t, sizeof(t)), 0);
	assert_int_equal(t.sections, 80);
	assert_int_equal(t.updates, 2); /* one open per trace */
	/* the rows are the JSON view's (schema ptanalyze-multi/2) */
	json_t *rep = report_json(a);
	assert_string_equal(json_string_value(json_object_get(rep, "schema")), "ptanalyze-multi/2");
	const json_t *rows = json_object_get(rep, "rows");
	assert_int_equal(json_array_size(rows), 2);
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(pt_analysis_row(a, PT_ANALYSIS_TREE, i, &row, sizeof(row)), 0);
		const json_t *j = json_array_get(rows, i);
		assert_string_equal(json_string_value(json_object_get(j, "path")), row.path);
		assert_int_equal(json_integer_value(json_object_get(j, "count")), row.count);
		assert_int_equal(json_integer_value(json_object_get(j, "total_ns")), row.total_ns);
		assert_int_equal(json_integer_value(json_object_get(j, "p50_ns")), row.p50_ns);
		check_real(j, "mean_ns", row.mean_ns);
	}
	json_decref(rep);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_int_equal(pt_analysis_write(a, PT_ANALYSIS_CSV, f), -ENOTSUP);
	assert_int_equal(pt_analysis_write(a, PT_ANALYSIS_TEXT, f), 0);
	fclose(f);
	assert_non_null(strstr(buf, "set-b.ptz"));
	free(buf);
	assert_int_equal(pt_analysis_update(a), 0);
	assert_non_null(find(a, PT_ANALYSIS_TREE, "outer", &row));
	assert_int_equal(row.count, 40);
	pt_analysis_close(a);

	/* one trace given twice: its own distribution, twice the count */
	assert_int_equal(pt_analysis_open(pa, &one), 0);
	assert_int_equal(pt_analysis_open_set(aa, 2, &twice), 0);
	struct pt_analysis_row r1, r2;
	assert_non_null(find(one, PT_ANALYSIS_TREE, "outer;inner", &r1));
	assert_non_null(find(twice, PT_ANALYSIS_TREE, "outer;inner", &r2));
	assert_int_equal(r2.count, 2 * r1.count);
	assert_int_equal(r2.total_ns, 2 * r1.total_ns);
	assert_int_equal(r2.min_ns, r1.min_ns);
	assert_int_equal(r2.max_ns, r1.max_ns);
	assert_int_equal(r2.p50_ns, r1.p50_ns);
	assert_int_equal(r2.p99_ns, r1.p99_ns);
	assert_true(fabs(r2.mean_ns - r1.mean_ns) <= 1e-9 * r1.mean_ns);
	/* the sample std (n - 1) of the doubled sample: r1's times sqrt((n - 1) / n * 2n / (2n - 1)) */
	const double n = (double)r1.count, want = r1.std_ns * sqrt((n - 1) / n * 2 * n / (2 * n - 1));
	assert_true(fabs(r2.std_ns - want) <= 1e-6 * (want + 1));
	pt_analysis_close(one);
	pt_analysis_close(twice);

	/* a member that cannot be read is named */
	const char *bad[] = { pa, tu_path("set-missing.ptz") };
	assert_int_equal(pt_analysis_open_set(bad, 2, &a), -ENOENT);
	assert_non_null(strstr(pt_analysis_errmsg(a), "set-missing.ptz"));
	assert_int_equal(pt_analysis_rows(a, PT_ANALYSIS_TREE), 0);
	pt_analysis_close(a);
	assert_int_equal(pt_analysis_open_set(NULL, 2, &a), -EINVAL);
	pt_analysis_close(a);
}

int main(void)
{
	setenv("PTZ_RSS_MS", "0", 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_rows_update),
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_set),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
