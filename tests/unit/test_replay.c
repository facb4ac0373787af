/*
 * tests/unit/test_replay.c - the nesting rules of replay/replay.h, one by one.
 *
 * Invariants covered (rule numbers of replay/replay.h):
 *  1. a chunk whose sequence is not the next one reports a gap; a cut
 *     forgets the too-deep BEGINs; a new chunk ends a pending launch mark;
 *  2. fixed-layout ticks below the thread's largest are raised to it,
 *     length-prefixed records keep theirs; rp_chunk_clamps() says exactly
 *     when a chunk has something to raise, rp_chunk_done() moves the floor;
 *  3. RP_MAX_DEPTH frames fit; the next BEGIN is counted, and the next
 *     END closes it whatever its name;
 *  4. an END closes the nearest frame of its name and those above it;
 *     an END of a name not open closes nothing; frames of any layout;
 *  6. sums saturate, unknown kinds are refused, inclusive sums roll up;
 *  7. the window keeps a section lying wholly inside it, bounds included;
 *  8. a launch marks only the BEGIN of its id right after it;
 *  time: struct rp_ns gives pt_reader_ticks_to_ns() bit for bit, for
 *     ticks before, between, on and after 40 clock points whose slopes
 *     make halves common (round half away from zero), in runs and jumps,
 *     and on a CLOCK_MONOTONIC trace; and on a clock table built to hit
 *     the fast path's bounds (products past 2^62 inside a segment, ns near
 *     2^64, a clock going back, a flat one, 2^53-sized values).
 * The agreement of the analyzer and the exports under these rules is
 * tests/export/agree/check_agree.py's.
 */
#include "test_util.h"

#include "replay/replay.h"

#include <math.h>
#include <stdlib.h>

struct wide { /* a frame with its id away from the start */
	uint64_t start;
	char pad[13];
	uint32_t id;
	uint64_t more[3];
};

static void test_chunks(void **state)
{
	(void)state;
	struct rp_thread t = { 0 };
	assert_false(rp_chunk(&t, 0));
	assert_false(rp_chunk(&t, 1));
	assert_true(rp_chunk(&t, 3)); /* chunk 2 lost */
	assert_false(rp_chunk(&t, 4));
	assert_true(rp_chunk(&t, 4)); /* repeated */
	t.excess = 5;
	assert_int_equal(rp_cut(&t), 5);
	assert_int_equal(t.excess, 0);
	struct pt_record l = { .kind = PT_REC_GPU_LAUNCH, .id = 7, .value2 = 99 };
	rp_launch_note(&t, &l);
	rp_chunk(&t, 5); /* a launch and its BEGIN share a chunk */
	assert_int_equal(rp_launch_of(&t, PT_REC_BEGIN, 7), 0);
}

static void test_ticks(void **state)
{
	(void)state;
	struct rp_thread t = { 0 };
	assert_int_equal(rp_ticks(&t, PT_REC_BEGIN, 1000), 1000);
	assert_int_equal(rp_ticks(&t, PT_REC_BEGIN, 2000), 2000);
	assert_int_equal(rp_ticks(&t, PT_REC_END, 500), 2000);      /* raised */
	assert_int_equal(rp_ticks(&t, PT_REC_COUNTER, 1500), 2000); /* any fixed-layout record */
	assert_int_equal(rp_ticks(&t, PT_REC_METRIC, 0), 2000);
	assert_int_equal(rp_ticks(&t, PT_REC_INSTANT, 10), 10);     /* absolute ticks of its own */
	assert_int_equal(rp_ticks(&t, PT_REC_GPU_RANGE, 1), 1);
	assert_int_equal(t.mono, 2000);
	assert_true(rp_chunk_clamps(&t, 1999));
	assert_false(rp_chunk_clamps(&t, 2000));
	rp_chunk_done(&t, 1800); /* never lowers the floor */
	assert_int_equal(t.mono, 2000);
	rp_chunk_done(&t, 2600);
	assert_int_equal(t.mono, 2600);
	assert_int_equal(rp_ticks(&t, PT_REC_END, 2601), 2601);
}

static void test_depth(void **state)
{
	(void)state;
	struct rp_thread t = { 0 };
	assert_true(rp_begin(&t, 0));
	assert_true(rp_begin(&t, RP_MAX_DEPTH - 1));
	assert_false(rp_begin(&t, RP_MAX_DEPTH));
	assert_false(rp_begin(&t, RP_MAX_DEPTH));
	assert_int_equal(t.excess, 2);
	struct wide st[2] = { { .id = 1 }, { .id = 2 } };
	assert_int_equal(RP_END(&t, st, 2, 2), RP_END_TOO_DEEP); /* the innermost too-deep one, any name */
	assert_int_equal(RP_END(&t, st, 2, 9), RP_END_TOO_DEEP);
	assert_int_equal(RP_END(&t, st, 2, 2), 1); /* then the stack again */
}

static void test_end_matching(void **state)
{
	(void)state;
	struct rp_thread t = { 0 };
	struct wide st[4] = { { .id = 1 }, { .id = 2 }, { .id = 1 }, { .id = 3 } };
	assert_int_equal(RP_END(&t, st, 4, 3), 1); /* the innermost */
	assert_int_equal(RP_END(&t, st, 4, 1), 2); /* the nearest 1, with 3 above it */
	assert_int_equal(RP_END(&t, st, 4, 2), 3);
	assert_int_equal(RP_END(&t, st, 4, 4), 0); /* not open */
	assert_int_equal(RP_END(&t, st, 0, 1), 0); /* nothing open */
	assert_int_equal(RP_END(&t, st, 2, 1), 2); /* only the frames on the stack count */
	uint32_t ids[3] = { 5, 6, 7 };           /* bare ids: stride 4, offset 0 */
	assert_int_equal(rp_end_match(ids, sizeof(ids[0]), 0, 3, 5), 3);
}

static void test_sums(void **state)
{
	(void)state;
	struct rp_sums c = { 0 }, p = { 0 };
	assert_true(rp_sums_add(&c, PT_REC_METRIC, 1, 100));
	assert_true(rp_sums_add(&c, PT_REC_METRIC, 3, UINT64_MAX - 1));
	assert_true(rp_sums_add(&c, PT_REC_METRIC, 3, 5)); /* saturates */
	assert_false(rp_sums_add(&c, PT_REC_METRIC, 0, 1));
	assert_false(rp_sums_add(&c, PT_REC_METRIC, 4, 1));
	assert_true(rp_sums_add(&c, PT_REC_TRANSFER, 4, 64));
	assert_false(rp_sums_add(&c, PT_REC_TRANSFER, 5, 1));
	assert_true(rp_sums_aux_ok(PT_REC_TRANSFER, 4));
	assert_false(rp_sums_aux_ok(PT_REC_METRIC, 4));
	assert_int_equal(c.m_self[0], 100);
	assert_true(c.m_incl[2] == UINT64_MAX);
	assert_int_equal(c.x_self[3], 64);
	assert_int_equal(c.x_count[3], 1);
	assert_true(rp_sums_add(&p, PT_REC_METRIC, 1, 1));
	rp_sums_roll_up(&p, &c);
	assert_int_equal(p.m_self[0], 1); /* self stays */
	assert_int_equal(p.m_incl[0], 101);
	assert_true(p.m_incl[2] == UINT64_MAX);
	assert_int_equal(p.x_incl[3], 64);
	assert_int_equal(p.x_self[3], 0);
}

static void test_window_and_launch(void **state)
{
	(void)state;
	assert_true(rp_kept(10, 20, 10, 20));
	assert_false(rp_kept(10, 20, 9, 20));
	assert_false(rp_kept(10, 20, 10, 21));
	struct rp_thread t = { 0 };
	struct pt_record l = { .kind = PT_REC_GPU_LAUNCH, .id = 7, .value2 = 99 };
	assert_int_equal(rp_launch_of(&t, PT_REC_BEGIN, 7), 0);
	rp_launch_note(&t, &l);
	assert_int_equal(rp_launch_of(&t, PT_REC_BEGIN, 7), 99);
	assert_int_equal(rp_launch_of(&t, PT_REC_BEGIN, 7), 0); /* one record only */
	rp_launch_note(&t, &l);
	assert_int_equal(rp_launch_of(&t, PT_REC_BEGIN, 8), 0); /* another section */
	assert_int_equal(rp_launch_of(&t, PT_REC_BEGIN, 7), 0);
	rp_launch_note(&t, &l);
	assert_int_equal(rp_launch_of(&t, PT_REC_METRIC, 7), 0); /* not right after */
	assert_int_equal(rp_launch_of(&t, PT_REC_BEGIN, 7), 0);
}

static uint8_t buf[1 << 16];
static uint64_t pt_t[64], pt_n[64]; /* the clock points written, the header's first */
static int npt;
static bool ref_off; /* the reader drops or mends points of a clock table this bad: no reference */

/* doc/trace-format.md §7 with libm's round(), on the points written: the reference. */
static uint64_t ref_ns(uint64_t t)
{
	int lo = 0;
	while (lo + 2 < npt && t >= pt_t[lo + 1])
		lo++;
	double dt = t >= pt_t[lo] ? (double)(t - pt_t[lo]) : -(double)(pt_t[lo] - t);
	double x = round(dt * (double)(pt_n[lo + 1] - pt_n[lo]) / (double)(pt_t[lo + 1] - pt_t[lo]));
	if (x >= 0)
		return x >= 18446744073709551616.0 || (uint64_t)x > UINT64_MAX - pt_n[lo] ? UINT64_MAX
										      : pt_n[lo] + (uint64_t)x;
	return (uint64_t)-x > pt_n[lo] ? 0 : pt_n[lo] - (uint64_t)-x;
}

/* A trace with @npoints CLOCK points (TSC), or none (CLOCK_MONOTONIC);
 * with @pts, those points (ticks, ns) after the header's, else random ones. */
static struct pt_reader *clock_trace_of(const char *name, int npoints, const uint64_t (*pts)[2], uint64_t *tick_max)
{
	const char *path = tu_path(name);
	const struct fmt_writer_hdr hd = { .clock_source = npoints ? PT_CLOCK_TSC : PT_CLOCK_MONOTONIC, .pid = 1,
					   .start_ticks = 1000, .start_mono_ns = 5000, .process_name = "rp" };
	struct fmt_writer *w;
	struct fmt_enc e;
	assert_int_equal(fmt_writer_open(path, &hd, &w), 0);
	fmt_enc_reset(&e, buf, sizeof(buf));
	uint64_t t = 1000, ns = 5000;
	unsigned seed = 5;
	npt = 1;
	pt_t[0] = t;
	pt_n[0] = ns;
	for (int i = 0; i < npoints; i++) {
		t += 1 + rand_r(&seed) % 100000;
		ns += rand_r(&seed) % 4 == 0 ? t % 7 : (uint64_t)(1 + rand_r(&seed) % 70000); /* slopes from ~0 to ~1.4 */
		if (pts) {
			t = pts[i][0];
			ns = pts[i][1];
		}
		assert_int_equal(fmt_enc_clock(&e, t, ns, ns + 1000000, 1), 0);
		pt_t[npt] = t;
		pt_n[npt++] = ns;
	}
	*tick_max = t + 200000;
	const struct fmt_chunk_hdr h = { .kind = FMT_CHUNK_META, .thread = PT_FMT_META_THREAD, .records = e.records,
					 .first_ticks = e.first_ticks, .last_ticks = e.last_ticks };
	assert_int_equal(fmt_writer_append(w, &h, buf, (size_t)(e.pos - buf), 3), 0);
	assert_int_equal(fmt_writer_close(w), 0);
	struct pt_reader *rd = NULL;
	assert_int_equal(pt_reader_open_trace(path, &rd), 0);
	return rd;
}

static struct pt_reader *clock_trace(const char *name, int npoints, uint64_t *tick_max)
{
	return clock_trace_of(name, npoints, NULL, tick_max);
}

static void conversions_agree(struct pt_reader *rd, uint64_t tick_max)
{
	struct rp_ns k;
	rp_ns_init(&k, rd);
	unsigned seed = 9;
	uint64_t t = 0;
	for (int i = 0; i < 200000; i++) {
		if (rand_r(&seed) % 64 == 0) /* a jump anywhere, also before the first point and past the last */
			t = (uint64_t)rand_r(&seed) * (tick_max / RAND_MAX + 1) % (tick_max + 1);
		else
			t += rand_r(&seed) % 50; /* a thread's run of records */
		uint64_t want = pt_reader_ticks_to_ns(rd, t), got = rp_ns(&k, t);
		if (npt > 1 && !ref_off && want != ref_ns(t))
			fail_msg("tick %llu: pt_reader_ticks_to_ns %llu, the formula with round() %llu",
				 (unsigned long long)t, (unsigned long long)want, (unsigned long long)ref_ns(t));
		if (got != want)
			fail_msg("tick %llu: %llu, pt_reader_ticks_to_ns %llu", (unsigned long long)t,
				 (unsigned long long)got, (unsigned long long)want);
	}
	assert_int_equal(rp_ns(&k, UINT64_MAX), pt_reader_ticks_to_ns(rd, UINT64_MAX));
	assert_int_equal(rp_ns(&k, 0), pt_reader_ticks_to_ns(rd, 0));
	/* around each point, and far past the last (the last segment runs to UINT64_MAX) */
	for (int p = 0; p < npt; p++)
		for (uint64_t d = 0; d < 64; d++) {
			const uint64_t ts[] = { pt_t[p] + d, pt_t[p] - d, pt_t[p] + (d << 40), pt_t[p] + (UINT64_MAX >> d) };
			for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
				if (rp_ns(&k, ts[i]) != pt_reader_ticks_to_ns(rd, ts[i]))
					fail_msg("tick %llu: %llu, pt_reader_ticks_to_ns %llu", (unsigned long long)ts[i],
						 (unsigned long long)rp_ns(&k, ts[i]),
						 (unsigned long long)pt_reader_ticks_to_ns(rd, ts[i]));
		}
}

static void test_time(void **state)
{
	(void)state;
	uint64_t tmax;
	struct pt_reader *rd = clock_trace("rp-clock.ptz", 40, &tmax);
	conversions_agree(rd, tmax);
	pt_reader_close(rd);
	rd = clock_trace("rp-mono.ptz", 0, &tmax);
	npt = 0;
	conversions_agree(rd, tmax);
	struct rp_ns k;
	rp_ns_init(&k, rd);
	assert_int_equal(rp_ns(&k, 123456789), 123456789); /* ticks are ns */
	pt_reader_close(rd);
	/* clocks where the fast path's bounds matter: steep slopes whose product
	 * passes 2^62 inside a segment, N near 2^64 (saturation), a clock going
	 * back (the ns difference wraps), a flat one, and 2^53-sized values */
	static const uint64_t pts[][2] = {
		{ 2000, 1000000 },
		{ 3000, 4000000000000000000ull },  /* 4e15 ns a tick */
		{ 4000, 18000000000000000000ull }, /* near 2^64 */
		{ 5000, 17000000000000000000ull }, /* back */
		{ 6000, 17000000000000000000ull }, /* flat */
		{ 1ull << 53, (1ull << 53) + 12345 },
		{ (1ull << 53) + 7, (1ull << 54) + 3 },
		{ 1ull << 62, 18446744073709000000ull }, /* the last: saturates past it */
	};
	const int n = (int)(sizeof(pts) / sizeof(pts[0]));
	rd = clock_trace_of("rp-extreme.ptz", n, pts, &tmax);
	ref_off = true;
	conversions_agree(rd, 7000);
	conversions_agree(rd, 1ull << 63);
	ref_off = false;
	pt_reader_close(rd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chunks),	      cmocka_unit_test(test_ticks),
		cmocka_unit_test(test_depth),	      cmocka_unit_test(test_end_matching),
		cmocka_unit_test(test_sums),	      cmocka_unit_test(test_window_and_launch),
		cmocka_unit_test(test_time),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
