/*
 * tests/analyzer/test_ana_memory.c - the analyzer's memory is bounded by
 * distinct call paths (and threads), not by the number of records.
 *
 * Invariants covered:
 *  - 100,000 distinct call paths seen once: heap in use after ana_run()
 *    stays under 1 KiB per path, over all four views (tree and flat, per
 *    thread and merged): sparse histograms, one small reservoir block;
 *  - per-path state has caps (reservoir 512 values, histogram range), so
 *    more occurrences of the same paths cost at most the capped size;
 *  - 500 paths occurring 2,000x or 8,000x take the same memory (within
 *    10%): reservoirs are capped, histograms span only the buckets used.
 * Heap in use is glibc's mallinfo2().uordblks; sanitized builds (their own
 * allocator) do not register this test (tests/meson.build).
 */
#include <malloc.h>

#include "tests/test_util.h"
#include "analyzer/ana.h"
#include "trace-format/fmt_internal.h"

/* Writes one thread: @paths distinct top-level/child paths, each occurring
 * @reps times, with durations cycling through 40 values (a realistic
 * spread, so histograms have more than one bucket). */
static void write_trace(const char *path, uint32_t paths, uint32_t reps)
{
	struct fmt_writer_hdr hd = { .clock_source = PT_CLOCK_MONOTONIC, .pid = 1, .process_name = "mem" };
	struct fmt_writer *w;
	assert_int_equal(fmt_writer_open(path, &hd, &w), 0);
	size_t cap = 1 << 20;
	uint8_t *buf = malloc(cap);
	struct fmt_enc e;
	fmt_enc_reset(&e, buf, cap);
	/* names: 1000 parents x children -> distinct paths parent;child */
	uint32_t parents = paths < 1000 ? paths : 1000, children = (paths + parents - 1) / parents;
	for (uint32_t i = 1; i <= parents + children; i++) {
		char n[32];
		int len = snprintf(n, sizeof(n), "name-%u", i);
		if (!fmt_enc_room(&e, 64)) {
			struct fmt_chunk_hdr h = { .kind = FMT_CHUNK_META, .thread = PT_FMT_META_THREAD, .records = e.records };
			assert_int_equal(fmt_writer_append(w, &h, buf, (size_t)(e.pos - buf), 1), 0);
			fmt_enc_reset(&e, buf, cap);
		}
		fmt_enc_string(&e, i, 0, n, (size_t)len);
	}
	fmt_enc_thread(&e, 0, 7, 0, 0, "t", 1);
	struct fmt_chunk_hdr mh = { .kind = FMT_CHUNK_META, .thread = PT_FMT_META_THREAD, .records = e.records };
	assert_int_equal(fmt_writer_append(w, &mh, buf, (size_t)(e.pos - buf), 1), 0);
	fmt_enc_reset(&e, buf, cap);
	uint64_t t = 1000, seq = 0;
	for (uint32_t r = 0; r < reps; r++)
		for (uint32_t p = 0; p < paths; p++) {
			if (!fmt_enc_room(&e, 4 * FMT_MAX_RECORD_BYTES)) {
				struct fmt_chunk_hdr h = { .kind = FMT_CHUNK_EVENTS, .thread = 0, .records = e.records,
							   .sequence = seq++, .first_ticks = e.first_ticks,
							   .last_ticks = e.last_ticks };
				assert_int_equal(fmt_writer_append(w, &h, buf, (size_t)(e.pos - buf), 1), 0);
				fmt_enc_reset(&e, buf, cap);
			}
			uint32_t parent = 1 + p % parents, child = 1 + parents + p / parents;
			uint64_t d = 100 + 37 * ((r + p) % 40);
			fmt_enc_begin(&e, t, parent);
			fmt_enc_begin(&e, t + 1, child);
			fmt_enc_end(&e, t + 1 + d, child);
			fmt_enc_end(&e, t + 2 + d, parent);
			t += d + 10;
		}
	struct fmt_chunk_hdr h = { .kind = FMT_CHUNK_EVENTS, .thread = 0, .records = e.records, .sequence = seq,
				   .first_ticks = e.first_ticks, .last_ticks = e.last_ticks };
	assert_int_equal(fmt_writer_append(w, &h, buf, (size_t)(e.pos - buf), 1), 0);
	assert_int_equal(fmt_writer_close(w), 0);
	free(buf);
}

/* Heap bytes the analysis of @path keeps. */
static size_t analyzed_heap(const char *path, uint32_t *paths_out)
{
	malloc_trim(0);
	size_t before = mallinfo2().uordblks;
	struct ana_result res;
	struct ana_options o = { .thread = -1 };
	char err[256];
	assert_int_equal(ana_run(path, &o, &res, err, sizeof(err)), 0);
	size_t after = mallinfo2().uordblks;
	*paths_out = res.merged.count - 1;
	ana_result_free(&res);
	return after > before ? after - before : 0;
}

static void test_ana_run_100k_paths_bounded_per_path(void **state)
{
	(void)state;
	const char *a = tu_path("paths-1x.ptz"), *b = tu_path("paths-8x.ptz");
	write_trace(a, 50000, 1); /* 50,000 parent;child paths + 1,000 parents = 51,000 */
	write_trace(b, 50000, 8);
	uint32_t pa, pb;
	size_t ma = analyzed_heap(a, &pa), mb = analyzed_heap(b, &pb);
	print_message("# %u paths: %zu bytes after 1x (%zu per path), %zu after 8x (%zu per path)\n", pa, ma, ma / pa,
		      mb, mb / pb);
	assert_true(pa >= 50000);
	assert_int_equal(pa, pb);
	assert_true(ma / pa < 1024);
	/* capped: 4 views x (reservoir 512 x 8 B + a histogram range) per path */
	assert_true(mb / pb < 4 * (ANA_RESERVOIR_CAP * 8 + 8192));
	write_trace(a, 100000, 1);
	ma = analyzed_heap(a, &pa);
	print_message("# %u paths: %zu bytes (%zu per path)\n", pa, ma, ma / pa);
	assert_true(pa >= 100000);
	assert_true(ma / pa < 1024);
}

static void test_ana_run_memory_flat_in_record_count(void **state)
{
	(void)state;
	const char *a = tu_path("reps-2k.ptz"), *b = tu_path("reps-8k.ptz");
	write_trace(a, 500, 2000);
	write_trace(b, 500, 8000);
	uint32_t pa, pb;
	size_t ma = analyzed_heap(a, &pa), mb = analyzed_heap(b, &pb);
	print_message("# %u paths: %zu bytes at 2,000 occurrences each, %zu at 8,000\n", pa, ma, mb);
	assert_int_equal(pa, pb);
	assert_true(mb <= ma + ma / 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ana_run_100k_paths_bounded_per_path),
		cmocka_unit_test(test_ana_run_memory_flat_in_record_count),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
