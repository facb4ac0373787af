/*
 * tests/fuzz/fuzz_export.c - libFuzzer targets "perfetto" and "chrome": one
 * viewer export each (viewer-export/pfx.h), built twice with FUZZ_EXPORT
 * naming the writer (README.md here).
 *
 * Input: a .ptz file, read as it is and, repaired, with its checksums made
 * to hold (fz_each_form). Exercised: the export of the whole trace, then
 * of a --since/--until window over the middle third of the span the chunk
 * headers announce (found without decoding a record). Output is discarded
 * (fz_sink). The promise checked is doc/trace-format.md §6: whatever the
 * bytes, no crash, hang, leak or ASan/UBSan report.
 */
#include <stddef.h>
#include <stdint.h>

#include "ptz/format.h"
#include "tests/fuzz/fuzz_common.h"
#include "viewer-export/pfx.h"

#ifndef FUZZ_EXPORT
#error "FUZZ_EXPORT must name pfx_write_perfetto or pfx_write_chrome"
#endif

/* The span of the chunk headers' ticks, in ns; 0 if none. */
static uint64_t header_span_ns(const char *path)
{
	struct pt_reader *r;
	struct pt_chunk_info ci;
	uint64_t lo = UINT64_MAX, hi = 0;
	if (pt_reader_open(path, &r)) {
		pt_reader_close(r);
		return 0;
	}
	while (pt_reader_next_chunk_header(r, &ci) == 1) {
		if (ci.thread == PT_FMT_META_THREAD)
			continue;
		uint64_t a = pt_reader_ticks_to_ns(r, ci.first_ticks), b = pt_reader_ticks_to_ns(r, ci.last_ticks);
		lo = a < lo ? a : lo;
		hi = b > hi ? b : hi;
	}
	pt_reader_close(r);
	return hi > lo ? hi - lo : 0;
}

static void export(const char *path)
{
	struct pfx_opts po = { 0 };
	char err[512];
	FUZZ_EXPORT(path, fz_sink(), &po, err, sizeof(err));
	uint64_t span = header_span_ns(path);
	po.since_ns = span / 3 ? span / 3 : 1;
	po.until_ns = po.since_ns + (span / 3 ? span / 3 : 1000000);
	FUZZ_EXPORT(path, fz_sink(), &po, err, sizeof(err));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_each_form(data, size, export);
	return 0;
}
