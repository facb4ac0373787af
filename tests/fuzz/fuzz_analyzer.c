/*
 * tests/fuzz/fuzz_analyzer.c - libFuzzer target "analyzer": ana_run() and
 * everything ptanalyze prints from its result (README.md here).
 *
 * Input: a .ptz file, read as it is and, repaired, with its checksums made
 * to hold (fz_each_form). Exercised: ana_run() with the default options
 * and with a --since/--until window over the middle third, the plain
 * report's percentile options and a --domain filter; each result through
 * the text report (call tree, flat, one thread), the info text, CSV and
 * JSON; ptanalyze compare of the whole result with itself and with the
 * windowed one, both ways (text and JSON); ptanalyze suggest on both,
 * without and with roofs (text and JSON). Outputs are discarded
 * (fz_sink). The promise checked is doc/trace-format.md §6: whatever the
 * bytes, no crash, hang, leak or ASan/UBSan report.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "analyzer/ana.h"
#include "analyzer/ana_compare.h"
#include "analyzer/ana_suggest.h"
#include "tests/fuzz/fuzz_common.h"

/* The outputs of one analysis, as the CLI writes them. */
static void outputs(const struct ana_result *res, bool all)
{
	FILE *out = fz_sink();
	struct ana_report_opts ro = { .sort = ANA_SORT_TIME, .thread = -1 };

	ana_report_text(out, res, &ro);
	if (!all)
		return;
	ana_info_text(out, res);
	ana_write_csv(out, res, &ro);
	ana_write_json(out, res, &ro);
	ro.flat = true;
	ro.sort = ANA_SORT_SELF;
	ro.bottlenecks = 5;
	ana_report_text(out, res, &ro);
	if (res->nthreads) {
		ro.thread = (int)res->threads[0].index;
		ro.flat = false;
		ro.sort = ANA_SORT_NAME;
		ro.top = 3;
		ro.depth = 2;
		ana_report_text(out, res, &ro);
		ana_write_csv(out, res, &ro);
		ana_write_json(out, res, &ro);
	}
}

/* ptanalyze compare of two results, text and JSON. */
static void compare(const struct ana_result *a, const struct ana_result *b)
{
	const struct ana_cmp_opts co = { .noise = -1, .bootstrap = 100 };
	struct ana_cmp c;
	if (ana_compare(a, b, &co, &c))
		return;
	ana_compare_text(fz_sink(), a, b, &c, 5);
	ana_compare_json(fz_sink(), a, b, &c);
	ana_compare_free(&c);
}

/* ptanalyze suggest of one result, without roofs and with roofs low enough to place every section. */
static void suggest(const struct ana_result *res)
{
	static const struct ana_peaks roofs = { .host = "fuzz", .cpus = 1, .gflops64_1 = 1, .gflops64_all = 2,
						.gbps_1 = 1, .gbps_all = 2, .link_gbps = { 1, 1, 1, 1 } };
	const struct ana_sug_opts o[2] = { { .peaks = NULL }, { .peaks = &roofs } };
	for (int k = 0; k < 2; k++) {
		struct ana_sug s;
		if (ana_suggest(res, &o[k], &s))
			continue;
		ana_suggest_text(fz_sink(), res, &s, 5);
		ana_suggest_json(fz_sink(), res, &s);
		ana_suggest_free(&s);
	}
}

static void analyze(const char *path)
{
	struct ana_options ao = { .thread = -1 };
	struct ana_result whole, win;
	char err[512];
	uint64_t span = 0;
	bool have_whole = false;

	/* 1: default options, every output */
	memset(&whole, 0, sizeof(whole));
	if (ana_run(path, &ao, &whole, err, sizeof(err)) == 0) {
		outputs(&whole, true);
		span = whole.end_ns > whole.start_ns ? whole.end_ns - whole.start_ns : 0;
		have_whole = true;
	} else if (whole.rd) {
		ana_result_free(&whole);
	}

	/* 2: a --since/--until window over the middle third, the plain
	 * report's options, and a --domain filter */
	ao.since_ns = span / 3 ? span / 3 : 1;
	ao.until_ns = ao.since_ns + (span / 3 ? span / 3 : 1000000);
	ao.merged_percentiles_only = true;
	ao.no_flat_percentiles = true;
	ao.domain = "gpu";
	memset(&win, 0, sizeof(win));
	if (ana_run(path, &ao, &win, err, sizeof(err)) == 0) {
		outputs(&win, false);
		suggest(&win);
		if (have_whole) {
			suggest(&whole);
			compare(&whole, &whole);
			compare(&whole, &win);
			compare(&win, &whole);
		}
	}
	if (win.rd)
		ana_result_free(&win);
	if (have_whole)
		ana_result_free(&whole);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_each_form(data, size, analyze);
	return 0;
}
