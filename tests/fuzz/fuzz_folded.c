/*
 * tests/fuzz/fuzz_folded.c - libFuzzer target "folded": the folded-stacks
 * export (pfx_write_folded(), viewer-export/pfx_folded.c) of an analyzed
 * trace (README.md here).
 *
 * Input: a .ptz file, read as it is and, repaired, with its checksums made
 * to hold (fz_each_form). Exercised: ana_run() with the options of
 * ptanalyze export --folded, with or (fz_choice) without a --domain
 * filter, then the folded stacks of every thread merged, or of the first
 * thread, or of a thread that does not exist. Output is discarded
 * (fz_sink). The analyzer's own outputs are the "analyzer" target's. The
 * promise checked is doc/trace-format.md §6: whatever the bytes, no crash,
 * hang, leak or ASan/UBSan report.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "analyzer/ana.h"
#include "tests/fuzz/fuzz_common.h"
#include "viewer-export/pfx.h"

static void folded(const char *path)
{
	const uint64_t k = fz_choice();
	struct ana_options ao = { .thread = -1, .merged_percentiles_only = true, .no_flat_percentiles = true };
	struct ana_result res;
	char err[512];
	memset(&res, 0, sizeof(res));
	ao.domain = k & 1 ? "gpu" : NULL;
	if (ana_run(path, &ao, &res, err, sizeof(err)) == 0) {
		switch ((k >> 1) % 4) {
		case 0:
			pfx_write_folded(&res, fz_sink(), 1 << 30); /* no such thread: -ENOENT */
			break;
		case 1:
			if (res.nthreads) {
				pfx_write_folded(&res, fz_sink(), (int)res.threads[0].index);
				break;
			}
			/* fall through */
		default:
			pfx_write_folded(&res, fz_sink(), -1);
		}
	}
	if (res.rd)
		ana_result_free(&res);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_each_form(data, size, folded);
	return 0;
}
