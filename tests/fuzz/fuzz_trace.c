/*
 * tests/fuzz/fuzz_trace.c - libFuzzer harness for everything that reads a
 * .ptz trace (tests/fuzz/README.md; built with meson -Dfuzz=true).
 *
 * Each input is written to a memfd and read through its /proc/self/fd path,
 * as a trace file, by:
 *  - the reader API (include/ptz/format.h): open, header info, thread
 *    table, string and domain tables, clock mapping, every chunk header,
 *    every chunk and record of every selection (all chunks, meta only, per
 *    thread, one record and a batch at a time), every problem;
 *  - the analyzer (analyzer/ana.h): ana_run() with the default options, and
 *    with a --since/--until window, the merged-percentiles options of the
 *    plain report and a --domain filter; each result through the text report
 *    (call tree, flat, one thread), the info text, CSV and JSON; and
 *    ptanalyze compare of the whole result with itself and with the
 *    windowed one, both ways; ptanalyze suggest on both, with and without
 *    roofs (text and JSON);
 *  - the viewer exports (viewer-export/pfx.h): Perfetto protobuf and Chrome
 *    JSON, whole and windowed, and folded stacks (merged and one thread).
 * Outputs go to /dev/null. The promise checked is the one of
 * doc/trace-format.md §6: whatever the bytes, no tool crashes, hangs,
 * leaks or trips ASan/UBSan.
 *
 * Checksums guard every header and payload (§2, §3), so almost every
 * mutation would only reach the checksum checks. Each input that is not
 * already consistent is therefore read a second time as "repaired" by
 * fix_checksums(): each chunk that starts with the magic is delimited by
 * the next magic (a stored payload's sizes follow), and the header and
 * payload checksums and the committed length are recomputed, so that
 * mutated records, sizes and fields reach the decoder, the analyzer and
 * the exports.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <xxhash.h>

#include "analyzer/ana.h"
#include "analyzer/ana_compare.h"
#include "analyzer/ana_suggest.h"
#include "ptz/format.h"
#include "trace-format/fmt_internal.h"
#include "viewer-export/pfx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int fuzz_fd = -1;
static char fuzz_path[64];
static FILE *devnull;

/* Replaces the memfd's contents with @data. 0 or -1. */
static int put_input(const uint8_t *data, size_t size)
{
	if (fuzz_fd < 0) {
		fuzz_fd = memfd_create("ptz-fuzz", MFD_CLOEXEC);
		if (fuzz_fd < 0)
			return -1;
		snprintf(fuzz_path, sizeof(fuzz_path), "/proc/self/fd/%d", fuzz_fd);
		devnull = fopen("/dev/null", "w");
		if (!devnull)
			return -1;
	}
	if (ftruncate(fuzz_fd, 0))
		return -1;
	size_t done = 0;
	while (done < size) {
		ssize_t n = pwrite(fuzz_fd, data + done, size - done, (off_t)done);
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

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

/* The outputs of one analysis, as the CLI writes them. */
static void fuzz_outputs(const char *path, const struct ana_result *res, bool all)
{
	struct ana_report_opts ro = { .sort = ANA_SORT_TIME, .thread = -1 };
	int t0 = res->nthreads ? (int)res->threads[0].index : 0;

	ana_report_text(devnull, res, &ro);
	if (!all)
		return;
	ana_info_text(devnull, res);
	ana_write_csv(devnull, res, &ro);
	ana_write_json(devnull, res, &ro);
	ro.flat = true;
	ro.sort = ANA_SORT_SELF;
	ro.bottlenecks = 5;
	ana_report_text(devnull, res, &ro);
	if (res->nthreads) {
		ro.thread = t0;
		ro.flat = false;
		ro.sort = ANA_SORT_NAME;
		ro.top = 3;
		ro.depth = 2;
		ana_report_text(devnull, res, &ro);
		ana_write_csv(devnull, res, &ro);
		ana_write_json(devnull, res, &ro);
	}
	pfx_write_folded(res, devnull, -1);
	pfx_write_folded(res, devnull, t0);
	(void)path;
}

/* ptanalyze compare of two results, text and JSON. */
static void fuzz_compare(const struct ana_result *a, const struct ana_result *b)
{
	const struct ana_cmp_opts co = { .noise = -1, .bootstrap = 100 };
	struct ana_cmp c;
	if (ana_compare(a, b, &co, &c))
		return;
	ana_compare_text(devnull, a, b, &c, 5);
	ana_compare_json(devnull, a, b, &c);
	ana_compare_free(&c);
}

/* ptanalyze suggest of one result, without roofs and with roofs low enough to place every section. */
static void fuzz_suggest(const struct ana_result *res)
{
	static const struct ana_peaks roofs = { .host = "fuzz", .cpus = 1, .gflops64_1 = 1, .gflops64_all = 2,
						.gbps_1 = 1, .gbps_all = 2, .link_gbps = { 1, 1, 1, 1 } };
	const struct ana_sug_opts o[2] = { { .peaks = NULL }, { .peaks = &roofs } };
	for (int k = 0; k < 2; k++) {
		struct ana_sug s;
		if (ana_suggest(res, &o[k], &s))
			continue;
		ana_suggest_text(devnull, res, &s, 5);
		ana_suggest_json(devnull, res, &s);
		ana_suggest_free(&s);
	}
}

static void fuzz_analyzer_and_exports(const char *path)
{
	struct ana_options ao = { .thread = -1 };
	struct ana_result res;
	char err[512];
	uint64_t span = 0;

	/* 1: default options, every output */
	struct ana_result whole;
	bool have_whole = false;
	memset(&whole, 0, sizeof(whole));
	if (ana_run(path, &ao, &whole, err, sizeof(err)) == 0) {
		fuzz_outputs(path, &whole, true);
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
	memset(&res, 0, sizeof(res));
	if (ana_run(path, &ao, &res, err, sizeof(err)) == 0) {
		fuzz_outputs(path, &res, false);
		/* compare: the whole trace against itself and against the window, both ways */
		fuzz_suggest(&res);
		if (have_whole) {
			fuzz_suggest(&whole);
			fuzz_compare(&whole, &whole);
			fuzz_compare(&whole, &res);
			fuzz_compare(&res, &whole);
		}
	}
	if (res.rd)
		ana_result_free(&res);
	if (have_whole)
		ana_result_free(&whole);

	/* 3: the exports, whole and windowed */
	struct pfx_opts po = { 0 };
	pfx_write_perfetto(path, devnull, &po, err, sizeof(err));
	pfx_write_chrome(path, devnull, &po, err, sizeof(err));
	po.since_ns = ao.since_ns;
	po.until_ns = ao.until_ns;
	pfx_write_perfetto(path, devnull, &po, err, sizeof(err));
	pfx_write_chrome(path, devnull, &po, err, sizeof(err));
	fflush(devnull);
}

/* Makes the checksums of @b (a copy of the input) hold: see the top comment.
 * Returns 1 if it changed anything. */
static int fix_checksums(uint8_t *b, size_t n)
{
	const size_t H = PT_FMT_CHUNK_HEADER_BYTES;
	int changed = 0;
	if (n < PT_FMT_HEADER_BYTES)
		return 0;
	uint64_t x = XXH3_64bits(b, FMT_OFF_HEADER_XXH);
	if (fmt_get64(b + FMT_OFF_HEADER_XXH) != x) {
		fmt_put64(b + FMT_OFF_HEADER_XXH, x);
		changed = 1;
	}
	if (fmt_get64(b + FMT_OFF_COMMITTED) != n) {
		fmt_put64(b + FMT_OFF_COMMITTED, n);
		changed = 1;
	}
	size_t off = PT_FMT_HEADER_BYTES;
	while (off + H <= n) {
		uint8_t *h = b + off;
		if (memcmp(h, FMT_CHUNK_MAGIC, 4) != 0) {
			off++;
			continue;
		}
		/* the payload runs to the next magic, or to the end of the file */
		const uint8_t *next = memmem(h + H, n - off - H, FMT_CHUNK_MAGIC, 4);
		size_t len = (next ? (size_t)(next - h) : n - off) - H;
		if (len > PT_FMT_MAX_CHUNK_RAW_BYTES)
			len = PT_FMT_MAX_CHUNK_RAW_BYTES;
		uint8_t old[PT_FMT_CHUNK_HEADER_BYTES];
		memcpy(old, h, H);
		fmt_put32(h + FMT_CK_OFF_STORED, (uint32_t)len);
		if (h[FMT_CK_OFF_COMP] == FMT_COMP_NONE)
			fmt_put32(h + FMT_CK_OFF_RAW, (uint32_t)len);
		if (fmt_get32(h + FMT_CK_OFF_RECORDS) > fmt_get32(h + FMT_CK_OFF_RAW))
			fmt_put32(h + FMT_CK_OFF_RECORDS, fmt_get32(h + FMT_CK_OFF_RAW));
		fmt_put64(h + FMT_CK_OFF_PAYLOAD_XXH, XXH3_64bits(h + H, len));
		fmt_put64(h + FMT_CK_OFF_HEADER_XXH, XXH3_64bits(h, FMT_CK_OFF_HEADER_XXH));
		changed |= memcmp(old, h, H) != 0;
		off += H + len;
	}
	return changed;
}

static void fuzz_all(const uint8_t *data, size_t size)
{
	if (put_input(data, size)) {
		perror("fuzz_trace: memfd");
		abort();
	}
	fuzz_reader(fuzz_path);
	fuzz_analyzer_and_exports(fuzz_path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_all(data, size);
	uint8_t *copy = malloc(size ? size : 1);
	if (!copy)
		abort();
	memcpy(copy, data, size);
	if (fix_checksums(copy, size))
		fuzz_all(copy, size);
	free(copy);
	return 0;
}
