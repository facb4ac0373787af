/*
 * tests/unit/test_ring.c - per-thread ring behaviour through the recorder.
 *
 * Invariants covered:
 *  - wrap-around: a 4 KiB ring (256 slots) carries many times its capacity
 *    in order; every record arrives exactly once (sequence numbers carried
 *    in metric values), and recorded + lost == emitted;
 *  - near-full dropping keeps nesting: with a tiny ring and deep nesting,
 *    every recorded section is well nested, and a dropped section takes its
 *    nested sections and metrics with it (no metric of a dropped section
 *    is ever attributed to its parent);
 *  - interning under concurrency: threads interning overlapping name sets
 *    get one id per (domain, name), never 0, identical across threads.
 */
#include <pthread.h>
#include <time.h>
#include <sched.h>

#include "tests/test_util.h"
#include "ptz/recorder.h"

static void test_ring_wraparound_in_order_exactly_once(void **state)
{
	(void)state;
	const char *path = tu_path("wrap.ptz");
	struct pt_options o = { .ring_bytes = 4096, .flush_interval_ms = 1 };
	pt_recorder *r = pt_open(path, &o, sizeof(o));
	assert_non_null(r);
	uint32_t id = pt_intern(r, "wrap");
	const uint64_t n = (uint64_t)tu_scale(20000);
	uint64_t lost = 0;
	for (uint64_t i = 1; i <= n; i++) {
		pt_begin(r, id);
		pt_metric(r, PT_METRIC_FLOPS, i);
		pt_end(r, id);
		if (i % 50 == 0) { /* 150 records, then let the 1 ms flusher drain */
			struct timespec ts = { 0, 1500000 };
			nanosleep(&ts, NULL);
			/* a flusher slowed down (ThreadSanitizer, a VM's steal) makes the ring drop: give it
			 * longer, so most sections are still recorded and the ring wraps many times (a CI run
			 * under TSan once kept fewer than 8 ring-fulls of records) */
			struct pt_stats_info now;
			pt_stats(r, &now, sizeof(now));
			if (now.lost_records > lost) {
				lost = now.lost_records;
				ts.tv_nsec = 20000000;
				nanosleep(&ts, NULL);
			}
		}
	}
	struct pt_stats_info st;
	assert_int_equal(pt_close(r), 0);
	pt_stats(r, &st, sizeof(st));
	struct tu_trace tr;
	tu_read(path, &tr);
	assert_int_equal(tr.nt, 1);
	const struct tu_thread *t = &tr.t[0];
	assert_int_equal(t->n + tr.lost_records, 3 * n);
	assert_int_equal(st.lost_records, tr.lost_records);
	assert_int_equal(st.lost_sections * 3, tr.lost_records);
	assert_true(t->n > 256 * 8); /* wrapped several times */
	/* every recorded section is begin, metric(seq), end; seqs strictly rise */
	uint64_t prev = 0;
	for (size_t i = 0; i < t->n; i += 3) {
		assert_int_equal(t->recs[i].kind, PT_REC_BEGIN);
		assert_int_equal(t->recs[i + 1].kind, PT_REC_METRIC);
		assert_int_equal(t->recs[i + 2].kind, PT_REC_END);
		assert_true(t->recs[i + 1].value > prev);
		prev = t->recs[i + 1].value;
	}
	tu_free(&tr);
}

/* Recursive nesting: section at depth d holds a metric worth d, then two children. */
static uint64_t emitted;
static void nest(pt_recorder *r, const uint32_t *ids, int d, int max)
{
	pt_begin(r, ids[d]);
	pt_metric(r, PT_METRIC_READ_BYTES, (uint64_t)d + 1);
	emitted += 3;
	if (d + 1 < max) {
		nest(r, ids, d + 1, max);
		nest(r, ids, d + 1, max);
	}
	pt_end(r, ids[d]);
}

static void test_ring_near_full_drops_whole_sections(void **state)
{
	(void)state;
	const char *path = tu_path("nearfull.ptz");
	/* 256 slots, long flush interval: the ring overflows within a burst */
	struct pt_options o = { .ring_bytes = 4096, .flush_interval_ms = 50 };
	pt_recorder *r = pt_open(path, &o, sizeof(o));
	uint32_t ids[12];
	for (int d = 0; d < 12; d++) {
		char name[16];
		snprintf(name, sizeof(name), "depth-%d", d);
		ids[d] = pt_intern(r, name);
	}
	emitted = 0;
	int reps = tu_scale(20);
	for (int i = 0; i < reps; i++)
		nest(r, ids, 0, 10); /* 1023 sections per tree */
	assert_int_equal(pt_close(r), 0);
	struct pt_stats_info st;
	pt_stats(r, &st, sizeof(st));
	assert_true(st.lost_sections > 0);
	struct tu_trace tr;
	tu_read(path, &tr);
	const struct tu_thread *t = &tr.t[0];
	assert_int_equal(t->n + tr.lost_records, emitted);
	size_t open = 1;
	size_t sections = tu_check_nesting(t, &open);
	assert_int_equal(open, 0);
	assert_int_equal(sections + st.lost_sections, emitted / 3);
	/* a metric always belongs to the section it was recorded in */
	uint32_t stack[64];
	int depth = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct pt_record *x = &t->recs[i];
		if (x->kind == PT_REC_BEGIN)
			stack[depth++] = x->id;
		else if (x->kind == PT_REC_END)
			depth--;
		else if (x->kind == PT_REC_METRIC) {
			assert_true(depth > 0);
			assert_int_equal(stack[depth - 1], ids[x->value - 1]);
		}
	}
	tu_free(&tr);
}

enum { INTERN_THREADS = 4, INTERN_NAMES = 2003 }; /* prime: each stride is a permutation */
static uint32_t got[INTERN_THREADS][INTERN_NAMES];
static uint32_t dom;

static void *intern_worker(void *arg)
{
	uintptr_t k = (uintptr_t)arg;
	for (int i = 0; i < INTERN_NAMES; i++) {
		/* each thread walks the names in a different order */
		int j = (int)((i * (2 * k + 1) + k * 7) % INTERN_NAMES);
		char name[32];
		snprintf(name, sizeof(name), "concurrent-%d", j);
		got[k][j] = (j & 1) ? pt_intern_in(NULL, dom, name) : pt_intern(NULL, name);
	}
	return NULL;
}

static void test_intern_concurrent_one_id_per_name(void **state)
{
	(void)state;
	dom = pt_domain(NULL, "concurrency-domain");
	assert_int_not_equal(dom, 0);
	assert_int_equal(pt_domain(NULL, "concurrency-domain"), dom);
	pthread_t t[INTERN_THREADS];
	for (uintptr_t k = 0; k < INTERN_THREADS; k++)
		pthread_create(&t[k], NULL, intern_worker, (void *)k);
	for (int k = 0; k < INTERN_THREADS; k++)
		pthread_join(t[k], NULL);
	for (int j = 0; j < INTERN_NAMES; j++) {
		assert_int_not_equal(got[0][j], 0);
		for (int k = 1; k < INTERN_THREADS; k++)
			assert_int_equal(got[k][j], got[0][j]);
		for (int i = 0; i < j; i++) /* distinct names, distinct ids */
			if (got[0][i] == got[0][j])
				fail_msg("names %d and %d share id %u", i, j, got[0][j]);
	}
	/* same name in another domain is another id */
	assert_int_not_equal(pt_intern_in(NULL, dom, "concurrent-0"), pt_intern(NULL, "concurrent-0"));
	/* and the table is what a trace carries */
	const char *path = tu_path("intern.ptz");
	pt_recorder *r = pt_open(path, NULL, 0);
	pt_begin(r, got[0][1]);
	pt_end(r, got[0][1]);
	pt_close(r);
	struct tu_trace tr;
	tu_read(path, &tr);
	uint32_t d = 0;
	assert_string_equal(pt_reader_string(tr.rd, got[0][1], &d), "concurrent-1");
	assert_int_equal(d, dom);
	assert_string_equal(pt_reader_domain(tr.rd, dom), "concurrency-domain");
	tu_free(&tr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_wraparound_in_order_exactly_once),
		cmocka_unit_test(test_ring_near_full_drops_whole_sections),
		cmocka_unit_test(test_intern_concurrent_one_id_per_name),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
