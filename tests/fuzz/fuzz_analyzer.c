/*
 * tests/fuzz/fuzz_analyzer.c - libFuzzer targets "analyzer", "json",
 * "compare", "suggest" and "html": ana_run() and what ptanalyze prints from
 * its result, built five times with FUZZ_ANALYZER naming the target
 * (README.md here).
 *
 * Input: a .ptz file, read as it is and, repaired, with its checksums made
 * to hold (fz_each_form). Each input runs one variant, selected by
 * fz_choice():
 *  - analyzer: ana_run() with the default options, then the call-tree and
 *    flat text reports (bottlenecks), the info text and CSV, of all threads
 *    and of the first; or ana_run() with a --since/--until window over the
 *    middle third of the span, the plain report's percentile options and a
 *    --domain filter, then the call-tree and flat text reports;
 *  - json: ana_run() with the default options, then the JSON report of all
 *    threads or of the first (jansson builds every row: the slowest output);
 *  - compare: ptanalyze compare of the whole result with itself, or with
 *    the windowed one either way, text or JSON;
 *  - suggest: ptanalyze suggest of the whole or the windowed result,
 *    without or with roofs, text or JSON;
 *  - html: the report's page (with the suggestions, without or with
 *    roofs) of the whole or the windowed result, or the comparison page of
 *    the whole result and the windowed one (each page carries Chart.js,
 *    195 KiB: a target of its own keeps the others fast).
 * Outputs are discarded (fz_sink). The promise checked is
 * doc/trace-format.md §6: whatever the bytes, no crash, hang, leak or
 * ASan/UBSan report.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "analyzer/ana.h"
#include "analyzer/ana_compare.h"
#include "analyzer/ana_html.h"
#include "analyzer/ana_suggest.h"
#include "tests/fuzz/fuzz_common.h"

#define FUZZ_ANALYZER_TEXT 1
#define FUZZ_ANALYZER_JSON 2
#define FUZZ_ANALYZER_COMPARE 3
#define FUZZ_ANALYZER_SUGGEST 4
#define FUZZ_ANALYZER_HTML 5
#ifndef FUZZ_ANALYZER
#error "FUZZ_ANALYZER must be FUZZ_ANALYZER_TEXT, _JSON, _COMPARE, _SUGGEST or _HTML"
#endif

/* ana_run() of @path into @res: with the default options, or (@window) with
 * a window over the middle third of the span, merged percentiles only and
 * a --domain filter; @span: the trace's span in ns, which places the
 * window. true if @res holds a result to free. */
static bool run_span(const char *path, bool window, uint64_t span, struct ana_result *res)
{
	struct ana_options ao = { .thread = -1 };
	char err[512];
	if (window) {
		ao.since_ns = span / 3 ? span / 3 : 1;
		ao.until_ns = ao.since_ns + (span / 3 ? span / 3 : 1000000);
		ao.merged_percentiles_only = true;
		ao.no_flat_percentiles = true;
		ao.domain = "gpu";
	}
	memset(res, 0, sizeof(*res));
	if (ana_run(path, &ao, res, err, sizeof(err)) == 0)
		return true;
	if (res->rd)
		ana_result_free(res);
	return false;
}

static bool run(const char *path, bool window, struct ana_result *res)
{
	return run_span(path, window, window ? fz_header_span_ns(path) : 0, res);
}

#if FUZZ_ANALYZER == FUZZ_ANALYZER_TEXT
static void analyze(const char *path)
{
	FILE *out = fz_sink();
	struct ana_result res;
	struct ana_report_opts ro = { .sort = ANA_SORT_TIME, .thread = -1 };
	bool window = fz_choice() & 1;
	if (!run(path, window, &res))
		return;
	ana_report_text(out, &res, &ro);
	ro.flat = true;
	ro.sort = ANA_SORT_SELF;
	ro.bottlenecks = 5;
	ana_report_text(out, &res, &ro);
	if (!window) {
		ana_info_text(out, &res);
		ana_write_csv(out, &res, &ro);
		if (res.nthreads) {
			ro.thread = (int)res.threads[0].index;
			ro.flat = false;
			ro.sort = ANA_SORT_NAME;
			ro.top = 3;
			ro.depth = 2;
			ana_report_text(out, &res, &ro);
			ana_write_csv(out, &res, &ro);
		}
	}
	ana_result_free(&res);
}
#elif FUZZ_ANALYZER == FUZZ_ANALYZER_JSON
static void analyze(const char *path)
{
	struct ana_result res;
	struct ana_report_opts ro = { .sort = ANA_SORT_TIME, .thread = -1 };
	if (!run(path, false, &res))
		return;
	if ((fz_choice() & 1) && res.nthreads) {
		ro.thread = (int)res.threads[0].index;
		ro.sort = ANA_SORT_NAME;
		ro.top = 3;
		ro.depth = 2;
	}
	ana_write_json(fz_sink(), &res, &ro);
	ana_result_free(&res);
}
#elif FUZZ_ANALYZER == FUZZ_ANALYZER_COMPARE
/* ptanalyze compare of @a and @b, text or JSON; @runs: runs as the unit, [a, b] against [b, a]. */
static void compare(const struct ana_result *a, const struct ana_result *b, bool json, bool runs)
{
	/* 20 resamples take every path of the bootstrap (its cost is linear in
	 * them: 100 made it a third of the time) */
	struct ana_cmp_opts co = { .noise = -1, .bootstrap = 20 };
	const struct ana_result *base_runs[2] = { a, b }, *new_runs[2] = { b, a };
	if (runs) {
		co.base_runs = base_runs;
		co.new_runs = new_runs;
		co.nbase_runs = co.nnew_runs = 2;
	}
	struct ana_cmp c;
	if (ana_compare(a, b, &co, &c))
		return;
	if (json)
		ana_compare_json(fz_sink(), a, b, &c);
	else
		ana_compare_text(fz_sink(), a, b, &c, 5);
	ana_compare_free(&c);
}

static void analyze(const char *path)
{
	const uint64_t k = fz_choice();
	struct ana_result whole, win;
	if (!run(path, false, &whole))
		return;
	switch (k % 3) {
	case 0:
		compare(&whole, &whole, k & 4, k & 8);
		break;
	default:
		/* the span from the whole analysis: no third open of the trace */
		if (run_span(path, true, whole.end_ns - whole.start_ns, &win)) {
			if (k % 3 == 1)
				compare(&whole, &win, k & 4, k & 8);
			else
				compare(&win, &whole, k & 4, k & 8);
			ana_result_free(&win);
		}
	}
	ana_result_free(&whole);
}
#elif FUZZ_ANALYZER == FUZZ_ANALYZER_HTML
static void analyze(const char *path)
{
	static const struct ana_peaks peaks = { .host = "fuzz", .cpus = 1, .gflops64_1 = 1, .gflops64_all = 2,
						.gbps_1 = 1, .gbps_all = 2, .link_gbps = { 1, 1, 1, 1 } };
	const uint64_t k = fz_choice();
	struct ana_result whole, win;
	if (!run(path, false, &whole))
		return;
	/* the span from the whole analysis: no third open of the trace */
	bool have_win = (k % 3) && run_span(path, true, whole.end_ns - whole.start_ns, &win);
	if (k % 3 == 2 && have_win) {
		const struct ana_cmp_opts co = { .noise = -1, .bootstrap = 20 };
		struct ana_cmp c;
		if (ana_compare(&whole, &win, &co, &c) == 0) {
			ana_html_compare(fz_sink(), &whole, &win, &c, "base.ptz", "new.ptz", "fuzz");
			ana_compare_free(&c);
		}
	} else {
		const struct ana_result *res = have_win ? &win : &whole;
		const struct ana_sug_opts o = { .peaks = (k & 4) ? &peaks : NULL };
		struct ana_sug s;
		if (ana_suggest(res, &o, &s) == 0) {
			ana_html_report(fz_sink(), res, &s, "fuzz.ptz", "fuzz");
			ana_suggest_free(&s);
		}
	}
	if (have_win)
		ana_result_free(&win);
	ana_result_free(&whole);
}
#else
/* ptanalyze suggest of @res, without roofs or with roofs low enough to
 * place every section, text or JSON. */
static void suggest(const struct ana_result *res, bool roofs, bool json)
{
	static const struct ana_peaks peaks = { .host = "fuzz", .cpus = 1, .gflops64_1 = 1, .gflops64_all = 2,
						.gbps_1 = 1, .gbps_all = 2, .link_gbps = { 1, 1, 1, 1 } };
	const struct ana_sug_opts o = { .peaks = roofs ? &peaks : NULL };
	struct ana_sug s;
	if (ana_suggest(res, &o, &s))
		return;
	if (json)
		ana_suggest_json(fz_sink(), res, &s);
	else
		ana_suggest_text(fz_sink(), res, &s, 5);
	ana_suggest_free(&s);
}

static void analyze(const char *path)
{
	const uint64_t k = fz_choice();
	struct ana_result res;
	if (!run(path, k & 4, &res))
		return;
	suggest(&res, k & 1, k & 2);
	ana_result_free(&res);
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_each_form(data, size, analyze);
	return 0;
}
