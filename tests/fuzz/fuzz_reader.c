/*
 * tests/fuzz/fuzz_reader.c - libFuzzer target "reader": the chunk reader and
 * its public API (include/ptz/format.h), nothing above it (README.md here).
 *
 * Input: a .ptz file, read as it is and, repaired, with its checksums made
 * to hold (fz_each_form). Exercised: open (file header, committed length,
 * chunk framing and index, resynchronization on damage, torn tails,
 * sequence checks, meta chunks into the string, domain, thread and clock
 * tables), header info, the tables, every chunk header, every chunk
 * (decompression, payload checksum) and record of every selection (all
 * chunks, meta only, per thread; one record and a batch at a time), every
 * problem. The promise checked is doc/trace-format.md §6: whatever the
 * bytes, no crash, hang, leak or ASan/UBSan report.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ptz/format.h"
#include "tests/fuzz/fuzz_common.h"

/* Decodes every record of the current chunk, alternately one at a time and
 * in batches; touches each string. */
static void drain_chunk(struct pt_reader *r, int batch)
{
	struct pt_record rec[7];
	volatile uint64_t sink = 0;
	int rc;
	if (batch) {
		while ((rc = pt_reader_next_records(r, rec, 7, sizeof(*rec))) > 0)
			for (int i = 0; i < rc; i++)
				sink += rec[i].ticks + (rec[i].str_len ? (uint8_t)rec[i].str[rec[i].str_len - 1] : 0);
	} else {
		while ((rc = pt_reader_next_record(r, rec, sizeof(*rec))) == 1) {
			sink += rec->ticks + (rec->str_len ? (uint8_t)rec->str[rec->str_len - 1] : 0);
			sink += pt_reader_ticks_to_ns(r, rec->ticks);
			const char *s = pt_reader_string(r, rec->id, NULL);
			if (s)
				sink += strlen(s);
		}
	}
	(void)sink;
}

static void fuzz_reader(const char *path)
{
	struct pt_reader *r = NULL;
	struct pt_chunk_info ci;
	volatile size_t sink = 0;

	int rc = pt_reader_open(path, &r);
	sink += strlen(pt_reader_errmsg(r));
	if (rc) {
		pt_reader_close(r);
		return;
	}
	const struct pt_trace_info *in = pt_reader_info(r);
	sink += strlen(in->process_name) + strlen(in->host) + strlen(in->cmdline) + strlen(in->recorder_version);
	sink += (size_t)pt_reader_ns_per_tick(r);
	sink += pt_reader_ticks_to_ns(r, 0) + pt_reader_ticks_to_ns(r, UINT64_MAX) +
		pt_reader_ticks_to_ns(r, in->start_ticks);
	uint32_t maxid = pt_reader_max_string_id(r);
	for (uint32_t id = 0; id <= maxid && id < 4096; id++) {
		uint32_t dom = 0;
		const char *s = pt_reader_string(r, id, &dom);
		if (s)
			sink += strlen(s);
		s = pt_reader_domain(r, dom);
		if (s)
			sink += strlen(s);
	}
	size_t nthreads = pt_reader_thread_count(r);
	for (size_t i = 0; i <= nthreads; i++) {
		struct pt_thread_info ti;
		if (pt_reader_thread(r, i, &ti, sizeof(ti)))
			sink += strlen(ti.name) + ti.index;
	}
	while (pt_reader_next_chunk_header(r, &ci, sizeof(ci)) == 1)
		sink += ci.records;
	pt_reader_rewind(r);
	int batch = 0;
	while (pt_reader_next_chunk(r, PT_READER_ALL_CHUNKS, &ci, sizeof(ci)) == 1)
		drain_chunk(r, batch ^= 1);
	/* per selection: meta only, then each thread of the table */
	pt_reader_rewind(r);
	while (pt_reader_next_chunk(r, PT_FMT_META_THREAD, &ci, sizeof(ci)) == 1)
		drain_chunk(r, 1);
	for (size_t i = 0; i < nthreads && i < 8; i++) {
		struct pt_thread_info ti;
		if (!pt_reader_thread(r, i, &ti, sizeof(ti)))
			continue;
		pt_reader_rewind(r);
		while (pt_reader_next_chunk(r, ti.index, &ci, sizeof(ci)) == 1)
			drain_chunk(r, 0);
	}
	for (size_t i = 0; i <= pt_reader_problem_count(r); i++) {
		uint64_t off;
		const char *m = pt_reader_problem(r, i, &off);
		if (m)
			sink += strlen(m) + off;
	}
	(void)sink;
	pt_reader_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_each_form(data, size, fuzz_reader);
	return 0;
}
