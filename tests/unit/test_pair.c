/*
 * tests/unit/test_pair.c - rule 9 of replay/replay.h: how halves pair
 * (replay/pair.h), against a reference written the plain way.
 *
 * Invariants covered:
 *  - the k-th half of one side read under a key pairs with the k-th half
 *    of the other side read under it, whichever side comes first, under
 *    200,000 random meets over few keys (so keys repeat on both sides and
 *    queues grow long): every partner's payload is the reference's, the
 *    halves waiting and their peak are the reference's at every step, and
 *    rp_pairs_each() gives exactly the halves the reference still holds;
 *  - key 0 never pairs and is never stored;
 *  - rp_pairs_take() pairs as rp_pairs_meet() would and stores nothing
 *    when no partner waits;
 *  - out of memory (the pool's realloc or the map's calloc failing at
 *    the n-th growth, for every growth in turn):
 *    the half at hand is dropped (RP_NOMEM), nothing else changes, and the
 *    pairs go on matching the reference for the halves that were stored;
 *  - rp_map (open addressing, backward-shift deletion) is checked in
 *    tests/analyzer/test_ana_gpu.c.
 */
#include "test_util.h"

#include "replay/pair.h"

#include <stdlib.h>
#include <string.h>

void *__real_realloc(void *p, size_t size);
void *__wrap_realloc(void *p, size_t size);
void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);

/* While armed: calls to realloc (the pool grows) and calloc (the map grows)
 * counted together; the fail_at-th fails (1-based; 0 = none). */
static int armed;
static long alloc_calls, alloc_fail_at;

void *__wrap_realloc(void *p, size_t size)
{
	if (armed && ++alloc_calls == alloc_fail_at)
		return NULL;
	return __real_realloc(p, size);
}

void *__wrap_calloc(size_t n, size_t size)
{
	if (armed && ++alloc_calls == alloc_fail_at)
		return NULL;
	return __real_calloc(n, size);
}

/* The reference: per key, a queue of (side, payload), all of one side. */
enum { NKEYS = 13, MAXQ = 1 << 16 };
struct ref_q {
	int side;
	uint64_t v[MAXQ];
	size_t head, n;
};
static struct ref_q ref[NKEYS];
static size_t ref_waiting, ref_peak;

/* The reference's answer for (key, side, v): 1 and *partner when paired, 0 when it waits. */
static int ref_meet(uint64_t key, int side, uint64_t v, uint64_t *partner)
{
	struct ref_q *q = &ref[key];
	if (q->n && q->side != side) {
		*partner = q->v[q->head % MAXQ];
		q->head++;
		q->n--;
		ref_waiting--;
		return 1;
	}
	q->side = side;
	assert_true(q->n < MAXQ);
	q->v[(q->head + q->n++) % MAXQ] = v;
	if (++ref_waiting > ref_peak)
		ref_peak = ref_waiting;
	return 0;
}

static void ref_reset(void)
{
	memset(ref, 0, sizeof(ref));
	ref_waiting = ref_peak = 0;
}

/* The payload: a half's serial number and a pattern, so a torn copy shows. */
struct half {
	uint64_t serial;
	uint32_t check;
	uint8_t side;
};

static struct half mk(uint64_t serial, int side)
{
	return (struct half){ serial, (uint32_t)(serial * 2654435761u) ^ 0xa5a5a5a5u, (uint8_t)side };
}

struct seen {
	size_t n[NKEYS][2];
	uint64_t serial_sum;
};

static void collect(void *ctx, uint64_t key, enum rp_side side, const void *h)
{
	struct seen *s = ctx;
	struct half x;
	memcpy(&x, h, sizeof(x));
	assert_true(key > 0 && key < NKEYS);
	assert_int_equal(x.side, side);
	assert_int_equal(x.check, mk(x.serial, side).check);
	s->n[key][side]++;
	s->serial_sum += x.serial;
}

static void check_leftovers(const struct rp_pairs *p)
{
	struct seen s = { 0 };
	rp_pairs_each(p, collect, &s);
	uint64_t want_sum = 0;
	for (uint64_t k = 1; k < NKEYS; k++) {
		const struct ref_q *q = &ref[k];
		assert_int_equal(s.n[k][q->side], q->n);
		assert_int_equal(s.n[k][!q->side], 0);
		for (size_t i = 0; i < q->n; i++)
			want_sum += q->v[(q->head + i) % MAXQ];
	}
	assert_int_equal(s.serial_sum, want_sum);
}

/* Random meets; with @fail_at, the fail_at-th growth fails. Returns the
 * halves dropped (RP_NOMEM). */
static size_t run(unsigned seed, long steps, long fail_at)
{
	struct rp_pairs p;
	rp_pairs_init(&p, sizeof(struct half));
	ref_reset();
	alloc_calls = 0;
	alloc_fail_at = fail_at;
	armed = 1;
	srand(seed);
	size_t nomem = 0;
	for (long i = 0; i < steps; i++) {
		/* phases: one side favored, then the other, so queues grow and drain */
		const int bias = (i / 5000) % 3;
		const int side = bias == 2 ? rand() % 2 : (rand() % 4 != 0) ^ bias;
		const uint64_t key = (uint64_t)(rand() % NKEYS); /* 0 included */
		const struct half h = mk((uint64_t)i + 1, side);
		struct half o;
		const enum rp_meet m = rp_pairs_meet(&p, key, (enum rp_side)side, &h, &o);
		if (key == 0) {
			assert_int_equal(m, RP_NO_KEY);
			continue;
		}
		if (m == RP_NOMEM) { /* dropped: the reference never sees it */
			nomem++;
			continue;
		}
		uint64_t want;
		const int paired = ref_meet(key, side, h.serial, &want);
		assert_int_equal(m, paired ? RP_PAIRED : RP_WAITS);
		if (paired) {
			assert_int_equal(o.serial, want);
			assert_int_equal(o.side, !side);
			assert_int_equal(o.check, mk(want, !side).check);
		}
		assert_int_equal(p.waiting, ref_waiting);
		assert_int_equal(p.peak, ref_peak);
		if (i % 20011 == 0)
			check_leftovers(&p);
	}
	armed = 0;
	check_leftovers(&p);
	rp_pairs_free(&p);
	assert_int_equal(p.waiting, 0);
	return nomem;
}

static void test_matches_reference(void **state)
{
	(void)state;
	run(1, 200000, 0);
	run(2, 50000, 0);
}

static void test_out_of_memory(void **state)
{
	(void)state;
	/* each growth of the pool or the map fails in turn: exactly that half is dropped */
	assert_int_equal(run(3, 20000, 0), 0);
	const long growths = alloc_calls;
	assert_true(growths >= 6); /* the pool and the map both grew */
	for (long n = 1; n <= growths; n++)
		assert_int_equal(run(3, 20000, n), 1);
}

static void test_key_zero_and_take(void **state)
{
	(void)state;
	struct rp_pairs p;
	rp_pairs_init(&p, sizeof(uint32_t));
	uint32_t v = 7, o = 0;
	assert_int_equal(rp_pairs_meet(&p, 0, RP_SIDE_A, &v, &o), RP_NO_KEY);
	assert_int_equal(rp_pairs_meet(&p, 0, RP_SIDE_B, &v, &o), RP_NO_KEY);
	assert_int_equal(p.waiting, 0);
	/* ranges read first (side B), then launches take them in order */
	for (uint32_t i = 1; i <= 3; i++)
		assert_int_equal(rp_pairs_meet(&p, 5, RP_SIDE_B, &i, &o), RP_WAITS);
	v = 9;
	assert_int_equal(rp_pairs_meet(&p, 6, RP_SIDE_B, &v, &o), RP_WAITS);
	assert_int_equal(rp_pairs_take(&p, 0, RP_SIDE_A, &o), RP_NO_KEY);
	assert_int_equal(rp_pairs_take(&p, 7, RP_SIDE_A, &o), RP_WAITS); /* nothing under 7: not stored */
	assert_int_equal(rp_pairs_take(&p, 5, RP_SIDE_B, &o), RP_WAITS); /* its own side waits there */
	assert_int_equal(p.waiting, 4);
	for (uint32_t i = 1; i <= 3; i++) {
		assert_int_equal(rp_pairs_take(&p, 5, RP_SIDE_A, &o), RP_PAIRED);
		assert_int_equal(o, i);
	}
	assert_int_equal(rp_pairs_take(&p, 5, RP_SIDE_A, &o), RP_WAITS);
	assert_int_equal(rp_pairs_take(&p, 6, RP_SIDE_A, &o), RP_PAIRED);
	assert_int_equal(o, 9);
	assert_int_equal(p.waiting, 0);
	assert_int_equal(p.peak, 4);
	assert_int_equal(p.keys.count, 0);
	/* a payload of 0 bytes */
	struct rp_pairs z;
	rp_pairs_init(&z, 0);
	assert_int_equal(rp_pairs_meet(&z, 3, RP_SIDE_A, NULL, NULL), RP_WAITS);
	assert_int_equal(rp_pairs_meet(&z, 3, RP_SIDE_B, NULL, NULL), RP_PAIRED);
	rp_pairs_free(&z);
	rp_pairs_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matches_reference),
		cmocka_unit_test(test_out_of_memory),
		cmocka_unit_test(test_key_zero_and_take),
	};
	return cmocka_run_group_tests_name(PT_TEST_NAME, tests, NULL, NULL);
}
