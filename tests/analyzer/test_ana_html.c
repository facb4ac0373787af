/*
 * tests/analyzer/test_ana_html.c - the HTML pages' data (analyzer/ana_html.c,
 * doc/analyzer-output.md §10), without a browser (tests/export/browser/
 * check_html.py renders them).
 *
 * Invariants covered:
 *  - names that are markup ("</script><script>alert(1)</script>", "<!--",
 *    "a&b>c") reach the page only \u-escaped: no "</script" or "<!--" of
 *    theirs in the file, and each JSON element, read back with jansson,
 *    holds them unchanged;
 *  - the report element is the --json report without per-thread rows, the
 *    compare element is compare --json with each side's total and self
 *    time per row, and the folded diff has the same self times;
 *  - a memory series of 5,000 samples is drawn from 2,000 points at most,
 *    in time order, holding its largest and smallest sample; so is a
 *    counter not in bytes, whose samples are read again from the trace
 *    (and left out, not wrong, when the trace cannot be read);
 *  - a failed write is an error (-1), never a silent short page.
 */
#include <math.h>
#include <string.h>

#include "tests/analyzer/ana_test_util.h"
#include "analyzer/ana_compare.h"
#include "analyzer/ana_html.h"
#include "analyzer/ana_suggest.h"
#include "viewer-export/pfx.h"

enum { S_EVIL = 1, S_COMMENT, S_AMP, S_HEAP, S_OUTER, S_QUEUE };
#define EVIL "</script><script>alert(1)</script>"
#define NSAMPLES 5000
#define SPIKE_AT 2345
#define DIP_AT 4321

static void write_trace(const char *path)
{
	struct fmt_writer_hdr hd = { .clock_source = PT_CLOCK_MONOTONIC, .pid = 1, .process_name = "<b>proc</b>" };
	struct tb b;
	tb_start(&b, path, &hd);
	static const char *const names[] = { "", EVIL, "<!--x", "a&b>c", "heap (bytes)", "outer", "queue depth" };
	for (uint32_t i = 1; i < PT_ARRAY_SIZE(names); i++)
		fmt_enc_string(&b.e, i, 0, names[i], strlen(names[i]));
	fmt_enc_thread(&b.e, 0, 10, 0, 0, "main", 4);
	tb_flush(&b, FMT_CHUNK_META, PT_FMT_META_THREAD);
	for (uint64_t i = 0; i < NSAMPLES; i++) {
		const int64_t v = i == SPIKE_AT ? 1 << 30 : i == DIP_AT ? 1 : (int64_t)(1 << 20) + (int64_t)(i % 7) * 4096;
		fmt_enc_counter(&b.e, 10 * i + 5, S_HEAP, v);
		/* a counter not in bytes: read again for the page; its spike and dip elsewhere */
		fmt_enc_counter(&b.e, 10 * i + 6, S_QUEUE, i == 1234 ? 999999 : i == 4000 ? -5 : (int64_t)(i % 13));
		if (i % 100 == 0) {
			fmt_enc_begin(&b.e, 10 * i, S_OUTER);
			for (uint32_t s = S_EVIL; s <= S_AMP; s++) {
				fmt_enc_begin(&b.e, 10 * i + s, s);
				fmt_enc_end(&b.e, 10 * i + s + 1 + (i / 100) % 3, s);
			}
			fmt_enc_end(&b.e, 10 * i + 9, S_OUTER);
		}
		if (i % 500 == 499)
			tb_flush(&b, FMT_CHUNK_EVENTS, 0);
	}
	tb_flush(&b, FMT_CHUNK_EVENTS, 0);
	tb_close(&b);
}

/* The text of <script type="application/json" id="@id"> in @page, parsed; NULL if there is none. */
static json_t *element(const char *page, const char *id)
{
	char open[128];
	snprintf(open, sizeof(open), "<script type=\"application/json\" id=\"%s\">", id);
	const char *s = strstr(page, open);
	if (!s)
		return NULL;
	s += strlen(open);
	const char *e = strstr(s, "</script>");
	assert_non_null(e);
	json_error_t je;
	json_t *j = json_loadb(s, (size_t)(e - s), 0, &je);
	if (!j)
		fail_msg("element %s: %s at %d", id, je.text, je.position);
	return j;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static char *page_of(const struct ana_result *res, const struct ana_sug *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(ana_html_report(f, res, s, "/tmp/<i>t</i>.ptz", "test"), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static void test_html_report_escapes_names(void **state)
{
	struct ana_result *res = &((struct ana_fixture *)*state)->res;
	struct ana_sug s;
	const struct ana_sug_opts so = { 0 };
	assert_int_equal(ana_suggest(res, &so, &s), 0);
	char *page = page_of(res, &s);
	/* every "</script" closes one of the page's own elements: 4 JSON ones, Chart.js and the page script
	 * (each opened at the start of a line; the page script's comments name "<script" elsewhere) */
	assert_int_equal(count(page, "</script"), 6);
	assert_int_equal(count(page, "\n<script"), 6);
	assert_null(strstr(page, "<!--"));
	assert_null(strstr(page, "<b>"));
	assert_null(strstr(page, "<i>"));
	assert_non_null(strstr(page, "\\u003c/script\\u003e\\u003cscript\\u003ealert(1)"));
	assert_non_null(strstr(page, "a\\u0026b\\u003ec"));

	json_t *meta = element(page, "ptz-meta"), *rep = element(page, "ptz-report");
	json_t *sug = element(page, "ptz-suggest"), *ser = element(page, "ptz-series");
	assert_non_null(meta);
	assert_string_equal(json_string_value(jget(meta, "trace")), "/tmp/<i>t</i>.ptz");
	assert_string_equal(json_string_value(jget(meta, "kind")), "report");
	assert_string_equal(json_string_value(jget(rep, "schema")), "ptanalyze-report/1");
	assert_string_equal(json_string_value(jget(jget(rep, "trace"), "process")), "<b>proc</b>");
	/* the --json report's merged rows, names unchanged; the threads without their rows */
	char *full = ana_test_output(ANA_OUT_JSON, res, &(struct ana_report_opts){ .thread = -1 });
	json_error_t je;
	json_t *want = json_loads(full, 0, &je);
	assert_non_null(want);
	assert_true(json_equal(jget(rep, "tree"), jget(want, "tree")));
	assert_true(json_equal(jget(rep, "flat"), jget(want, "flat")));
	json_t *th = json_array_get(jget(rep, "threads"), 0);
	assert_null(json_object_get(th, "tree"));
	assert_null(json_object_get(th, "flat"));
	assert_non_null(json_object_get(json_array_get(jget(want, "threads"), 0), "tree"));
	int evil = 0;
	size_t i;
	json_t *r;
	json_array_foreach(jget(rep, "tree"), i, r)
		evil += strcmp(json_string_value(jget(r, "name")), EVIL) == 0;
	assert_int_equal(evil, 1);
	assert_string_equal(json_string_value(jget(sug, "schema")), "ptanalyze-suggest/1");
	assert_int_equal(json_array_size(jget(ser, "series")), 1);
	json_decref(want);
	free(full);
	json_decref(meta);
	json_decref(rep);
	json_decref(sug);
	json_decref(ser);
	free(page);
	ana_suggest_free(&s);
}

static void test_html_series_downsampled(void **state)
{
	struct ana_result *res = &((struct ana_fixture *)*state)->res;
	json_t *j = ana_html_series(res, ((struct ana_fixture *)*state)->path);
	assert_non_null(j);
	json_t *s = json_array_get(jget(j, "series"), 0);
	assert_string_equal(json_string_value(jget(s, "counter")), "heap (bytes)");
	assert_int_equal(jint(s, "samples"), NSAMPLES);
	json_t *t = jget(s, "t_s"), *v = jget(s, "v");
	const size_t n = json_array_size(t);
	assert_int_equal(n, json_array_size(v));
	assert_int_equal(jint(s, "points"), (json_int_t)n);
	assert_true(n > ANA_HTML_SERIES_BINS && n <= 2 * ANA_HTML_SERIES_BINS);
	int spike = 0, dip = 0;
	for (size_t i = 0; i < n; i++) {
		const json_int_t x = json_integer_value(json_array_get(v, i));
		spike += x == 1 << 30;
		dip += x == 1;
		if (i)
			assert_true(json_real_value(json_array_get(t, i)) >= json_real_value(json_array_get(t, i - 1)));
	}
	assert_int_equal(spike, 1);
	assert_int_equal(dip, 1);
	/* the spike's time: sample SPIKE_AT at tick 10 * SPIKE_AT + 5, 1 ns a tick, from the trace start */
	for (size_t i = 0; i < n; i++)
		if (json_integer_value(json_array_get(v, i)) == 1 << 30)
			assert_true(fabs(json_real_value(json_array_get(t, i)) -
					 (double)(10 * SPIKE_AT + 5 - res->start_ns) / 1e9) < 1e-12);
	/* the counter not in bytes, read again from the trace */
	json_t *cs = json_array_get(jget(j, "counters"), 0);
	assert_int_equal(json_array_size(jget(j, "counters")), 1);
	assert_string_equal(json_string_value(jget(cs, "counter")), "queue depth");
	assert_string_equal(json_string_value(jget(cs, "thread")), "0 main");
	assert_int_equal(jint(cs, "samples"), NSAMPLES);
	t = jget(cs, "t_s");
	v = jget(cs, "v");
	const size_t m = json_array_size(v);
	assert_true(m > ANA_HTML_SERIES_BINS && m <= 2 * ANA_HTML_SERIES_BINS && m == json_array_size(t));
	spike = dip = 0;
	for (size_t i = 0; i < m; i++) {
		const json_int_t x = json_integer_value(json_array_get(v, i));
		spike += x == 999999;
		dip += x == -5;
		if (x == 999999)
			assert_true(fabs(json_real_value(json_array_get(t, i)) - (double)(10 * 1234 + 6 - res->start_ns) / 1e9) <
				    1e-12);
		if (i)
			assert_true(json_real_value(json_array_get(t, i)) >= json_real_value(json_array_get(t, i - 1)));
	}
	assert_int_equal(spike, 1);
	assert_int_equal(dip, 1);
	json_decref(j);
	/* a trace that cannot be read again: no counters key, the rest as before */
	j = ana_html_series(res, "/nonexistent/trace.ptz");
	assert_non_null(j);
	assert_null(json_object_get(j, "counters"));
	assert_int_equal(json_array_size(jget(j, "series")), 1);
	json_decref(j);
}

static void test_html_compare_and_folded_diff(void **state)
{
	struct ana_result *res = &((struct ana_fixture *)*state)->res;
	struct ana_cmp c;
	assert_int_equal(ana_compare(res, res, NULL, &c), 0);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_int_equal(ana_html_compare(f, res, res, &c, "a<.ptz", "b>.ptz", "test"), 0);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(count(buf, "</script"), 4);
	json_t *cmp = element(buf, "ptz-compare"), *meta = element(buf, "ptz-meta");
	assert_string_equal(json_string_value(jget(meta, "base")), "a<.ptz");
	assert_int_equal(json_array_size(jget(cmp, "rows")), c.nrows);
	char *fd = NULL;
	size_t fdlen = 0;
	f = open_memstream(&fd, &fdlen);
	assert_int_equal(pfx_write_folded_diff(res, res, &c, f), 0);
	assert_int_equal(fclose(f), 0);
	size_t i, lines = 0;
	json_t *r;
	json_array_foreach(jget(cmp, "rows"), i, r) {
		const struct ana_agg *a = &res->merged.n[c.rows[i].base_node].agg;
		assert_int_equal(jint(r, "total_base_ns"), (json_int_t)a->total_ns);
		assert_int_equal(jint(r, "total_new_ns"), (json_int_t)a->total_ns);
		assert_int_equal(jint(r, "self_base_ns"), (json_int_t)a->self_ns);
		assert_int_equal(jint(r, "self_new_ns"), (json_int_t)a->self_ns);
		if (!a->self_ns)
			continue;
		char line[256];
		const json_int_t parent = jint(r, "parent");
		if (parent < 0)
			snprintf(line, sizeof(line), "%s %llu %llu\n", json_string_value(jget(r, "name")),
				 (unsigned long long)a->self_ns, (unsigned long long)a->self_ns);
		else /* the names below "outer" (';' in none of them) */
			snprintf(line, sizeof(line), "outer;%s %llu %llu\n", json_string_value(jget(r, "name")),
				 (unsigned long long)a->self_ns, (unsigned long long)a->self_ns);
		if (!strstr(fd, line))
			fail_msg("folded diff lacks '%s' in:\n%s", line, fd);
		lines++;
	}
	assert_int_equal(count(fd, "\n"), lines);
	free(fd);
	json_decref(cmp);
	json_decref(meta);
	free(buf);
	ana_compare_free(&c);
}

static void test_html_write_error(void **state)
{
	struct ana_result *res = &((struct ana_fixture *)*state)->res;
	FILE *f = fopen("/dev/full", "w"); /* every write fails with ENOSPC */
	assert_non_null(f);
	assert_int_equal(ana_html_report(f, res, NULL, "t.ptz", "test"), -1);
	fclose(f);
}

static int setup(void **state) { return ana_fixture_setup(state, "html.ptz", write_trace); }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_html_report_escapes_names),
		cmocka_unit_test(test_html_series_downsampled),
		cmocka_unit_test(test_html_compare_and_folded_diff),
		cmocka_unit_test(test_html_write_error),
	};
	return cmocka_run_group_tests(tests, setup, ana_fixture_teardown);
}
