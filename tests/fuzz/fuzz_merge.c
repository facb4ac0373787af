/*
 * tests/fuzz/fuzz_merge.c - libFuzzer target "merge": `ptanalyze merge`'s
 * reader of JSON reports (ana_multi_src_json(), analyzer/ana_multi.h), the
 * one place that reads a report back (README.md here).
 *
 * Input: the bytes of a JSON report (seeds: the golden report, whose merged
 * rows carry sketches). Exercised: the report read as a source; when it is
 * accepted, the view of it beside itself (ana_multi_build(): every path in
 * two traces, so every sketch is merged into another) written as text and as
 * JSON. Output is discarded (fz_sink). The promise checked: whatever the
 * bytes, no crash, hang, leak or ASan/UBSan report, and a report the reader
 * accepts holds together (a merged row's count is twice the source's).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "analyzer/ana_multi.h"
#include "tests/fuzz/fuzz_common.h"

static void merge(const char *path)
{
	struct ana_multi_src s[2];
	char err[512];
	if (ana_multi_src_json(path, &s[0], err, sizeof(err)))
		return;
	s[1] = s[0]; /* the same report twice: read-only in the build */
	struct ana_multi m;
	if (ana_multi_build(s, 2, &m) == 0) {
		uint64_t sum = 0;
		for (size_t k = 0; k < s[0].npaths; k++)
			sum += s[0].agg[k]->count;
		uint64_t got = 0;
		for (size_t i = 0; i < m.nrows; i++)
			got += m.rows[i].count;
		if (got != 2 * sum) /* each path in both traces: every count twice */
			abort();
		ana_multi_text(fz_sink(), &m, s, 0);
		ana_multi_json(fz_sink(), &m, s);
		ana_multi_free(&m);
	}
	ana_multi_src_free(&s[0]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_each_form(data, size, merge);
	return 0;
}
