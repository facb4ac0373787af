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
 *  8. a launch marks only the BEGIN of its id right after it.
 * The agreement of the analyzer and the exports under these rules is
 * tests/export/agree/check_agree.py's.
 */
#include "test_util.h"

#include "replay/replay.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chunks),	      cmocka_unit_test(test_ticks),
		cmocka_unit_test(test_depth),	      cmocka_unit_test(test_end_matching),
		cmocka_unit_test(test_sums),	      cmocka_unit_test(test_window_and_launch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
