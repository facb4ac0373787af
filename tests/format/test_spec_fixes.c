/*
 * tests/format/test_spec_fixes.c - reader behaviour that the independent
 * reader (tests/format/ptz_spec_reader.py, written from doc/trace-format.md
 * alone) found to differ from the document:
 * - pt_reader_ticks_to_ns() as §7 states it: N_i + round((t - T_i) x dN / dT),
 *   the base point added as an integer and halves rounded away from zero. The
 *   reader summed N_i and the offset in a double and rounded halves up, so a
 *   negative half (before the first point) came out 1 ns late, and beyond 2^53
 *   ns (104 days of CLOCK_MONOTONIC uptime) or 2^53 ticks the last bits were
 *   lost.
 * - §4.4 THREAD merge: start_ticks is the smallest non-zero value; a later
 *   record with start_ticks 0 reset it to 0.
 */
#include "tests/test_util.h"
#include "trace-format/fmt_internal.h"

/* A trace whose only content is a meta chunk with these CLOCK points
 * (ticks, mono_ns); the header's start triple is 0 so it adds no point. */
static struct pt_reader *clock_trace(const char *name, const uint64_t (*pts)[2], size_t n)
{
	const char *path = tu_path(name);
	struct fmt_writer_hdr hd = { .clock_source = PT_CLOCK_TSC, .pid = 1, .process_name = "p", .host = "h", .cmdline = "c",
				     .recorder_version = "test" };
	struct fmt_writer *w;
	uint8_t buf[512];
	struct fmt_enc e;

	assert_int_equal(fmt_writer_open(path, &hd, &w), 0);
	fmt_enc_reset(&e, buf, sizeof(buf));
	for (size_t i = 0; i < n; i++)
		assert_int_equal(fmt_enc_clock(&e, pts[i][0], pts[i][1], 0, 1), 0);
	struct fmt_chunk_hdr h = { .kind = FMT_CHUNK_META, .thread = PT_FMT_META_THREAD, .records = e.records };
	assert_int_equal(fmt_writer_append(w, &h, buf, (size_t)(e.pos - buf), 0), 0);
	assert_int_equal(fmt_writer_close(w), 0);
	struct pt_reader *rd;
	assert_int_equal(pt_reader_open(path, &rd), 0);
	return rd;
}

/* Halves round away from zero: before the first point too. */
static void test_ticks_to_ns_rounds_halves_away_from_zero(void **state)
{
	(void)state;
	static const uint64_t pts[][2] = { { 1000, 5000000 }, { 3000, 5001000 } }; /* 0.5 ns per tick */
	struct pt_reader *rd = clock_trace("half.ptz", pts, 2);

	assert_int_equal(pt_reader_problem_count(rd), 0);
	assert_int_equal(pt_reader_ticks_to_ns(rd, 1001), 5000001); /* +0.5 -> +1 */
	assert_int_equal(pt_reader_ticks_to_ns(rd, 999), 4999999);  /* -0.5 -> -1 (was 5000000) */
	assert_int_equal(pt_reader_ticks_to_ns(rd, 3), 4999501);    /* -498.5 -> -499 (was 4999502) */
	assert_int_equal(pt_reader_ticks_to_ns(rd, 5001), 5002001); /* after the last point: +2000.5 */
	assert_int_equal(pt_reader_ticks_to_ns(rd, 0), 4999500);
	pt_reader_close(rd);
}

/* Ticks and ns beyond 2^53 keep every bit. */
static void test_ticks_to_ns_exact_beyond_2_pow_53(void **state)
{
	(void)state;
	const uint64_t t0 = (1ull << 62) + 1, n0 = (1ull << 60) + 1;
	const uint64_t pts[][2] = { { t0, n0 }, { t0 + (1ull << 40), n0 + (1ull << 40) } }; /* 1 ns per tick */
	struct pt_reader *rd = clock_trace("big.ptz", pts, 2);

	assert_int_equal(pt_reader_ticks_to_ns(rd, t0), n0);
	assert_int_equal(pt_reader_ticks_to_ns(rd, t0 + 2), n0 + 2);
	assert_int_equal(pt_reader_ticks_to_ns(rd, t0 - 3), n0 - 3);
	assert_int_equal(pt_reader_ticks_to_ns(rd, t0 + (1ull << 40) + 5), n0 + (1ull << 40) + 5);
	assert_int_equal(pt_reader_ticks_to_ns(rd, t0 + (1ull << 62)), n0 + (1ull << 62)); /* far, no wrap */
	pt_reader_close(rd);

	/* one point: slope 1, exact, saturating at both ends */
	const uint64_t one[][2] = { { t0, n0 } };
	rd = clock_trace("one.ptz", one, 1);
	assert_int_equal(pt_reader_ticks_to_ns(rd, t0 + 2), n0 + 2);
	assert_int_equal(pt_reader_ticks_to_ns(rd, t0 - 7), n0 - 7);
	assert_int_equal(pt_reader_ticks_to_ns(rd, 0), 0);
	pt_reader_close(rd);
	const uint64_t hi[][2] = { { 10, UINT64_MAX - 5 } };
	rd = clock_trace("one-hi.ptz", hi, 1);
	assert_int_equal(pt_reader_ticks_to_ns(rd, 12), UINT64_MAX - 3);
	assert_int_equal(pt_reader_ticks_to_ns(rd, 1000), UINT64_MAX);
	pt_reader_close(rd);
}

/* Extrapolation far outside the points saturates instead of wrapping. */
static void test_ticks_to_ns_saturates(void **state)
{
	(void)state;
	static const uint64_t pts[][2] = { { 1000, 1000 }, { 1001, 1ull << 40 } }; /* ~2^40 ns per tick */
	struct pt_reader *rd = clock_trace("steep.ptz", pts, 2);

	assert_int_equal(pt_reader_ticks_to_ns(rd, UINT64_MAX), UINT64_MAX);
	assert_int_equal(pt_reader_ticks_to_ns(rd, 0), 0);
	pt_reader_close(rd);
}

/* A THREAD record with start_ticks 0 does not erase the start an earlier one gave. */
static void test_thread_start_is_smallest_nonzero(void **state)
{
	(void)state;
	const char *path = tu_path("threads.ptz");
	struct fmt_writer_hdr hd = { .clock_source = PT_CLOCK_MONOTONIC, .pid = 1, .process_name = "p", .host = "h", .cmdline = "c",
				     .recorder_version = "test" };
	struct fmt_writer *w;
	uint8_t buf[512];
	struct fmt_enc e;

	assert_int_equal(fmt_writer_open(path, &hd, &w), 0);
	fmt_enc_reset(&e, buf, sizeof(buf));
	assert_int_equal(fmt_enc_thread(&e, 0, 11, 500, 0, "main", 4), 0);
	assert_int_equal(fmt_enc_thread(&e, 0, 12, 0, 900, "renamed", 7), 0);
	assert_int_equal(fmt_enc_thread(&e, 0, 13, 700, 0, "", 0), 0);
	assert_int_equal(fmt_enc_thread(&e, 1, 21, 0, 0, "late", 4), 0);
	struct fmt_chunk_hdr h = { .kind = FMT_CHUNK_META, .thread = PT_FMT_META_THREAD, .records = e.records };
	assert_int_equal(fmt_writer_append(w, &h, buf, (size_t)(e.pos - buf), 0), 0);
	assert_int_equal(fmt_writer_close(w), 0);
	struct pt_reader *rd;
	struct pt_thread_info t;

	assert_int_equal(pt_reader_open(path, &rd), 0);
	assert_int_equal(pt_reader_thread_count(rd), 2);
	assert_int_equal(pt_reader_thread(rd, 0, &t, sizeof(t)), 1);
	assert_int_equal(t.index, 0);
	assert_int_equal(t.tid, 13);          /* the last record's */
	assert_int_equal(t.start_ticks, 500); /* smallest non-zero (was 0 after the second record, then 700) */
	assert_int_equal(t.end_ticks, 900);   /* the last non-zero */
	assert_string_equal(t.name, "renamed"); /* the last non-empty */
	assert_int_equal(pt_reader_thread(rd, 1, &t, sizeof(t)), 1);
	assert_int_equal(t.start_ticks, 0); /* no non-zero value: 0 */
	pt_reader_close(rd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ticks_to_ns_rounds_halves_away_from_zero),
		cmocka_unit_test(test_ticks_to_ns_exact_beyond_2_pow_53),
		cmocka_unit_test(test_ticks_to_ns_saturates),
		cmocka_unit_test(test_thread_start_is_smallest_nonzero),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
