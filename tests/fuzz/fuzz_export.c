/*
 * tests/fuzz/fuzz_export.c - libFuzzer targets "perfetto" and "chrome": one
 * viewer export each (viewer-export/pfx.h), built twice with FUZZ_EXPORT
 * naming the writer (README.md here).
 *
 * Input: a .ptz file, read as it is and, repaired, with its checksums made
 * to hold (fz_each_form). Exercised: the export of the whole trace or
 * (fz_choice) of a --since/--until window over the middle third of the span
 * the chunk headers announce; of the trace alone or (fz_choice) twice, as a
 * set of two processes (doc/export.md §6: a made-up pid, ids moved apart). Output is discarded (fz_sink). The promise
 * checked is doc/trace-format.md §6: whatever the bytes, no crash, hang,
 * leak or ASan/UBSan report.
 */
#include <stddef.h>
#include <stdint.h>

#include "tests/fuzz/fuzz_common.h"
#include "viewer-export/pfx.h"

#ifndef FUZZ_EXPORT
#error "FUZZ_EXPORT must name pfx_write_perfetto_set or pfx_write_chrome_set"
#endif

static void export(const char *path)
{
	struct pfx_opts po = { 0 };
	char err[512];
	if (fz_choice() & 1) {
		uint64_t span = fz_header_span_ns(path);
		po.since_ns = span / 3 ? span / 3 : 1;
		po.until_ns = po.since_ns + (span / 3 ? span / 3 : 1000000);
	}
	const char *const set[2] = { path, path };
	FUZZ_EXPORT(set, fz_choice() & 2 ? 2 : 1, fz_sink(), &po, err, sizeof(err));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_each_form(data, size, export);
	return 0;
}
