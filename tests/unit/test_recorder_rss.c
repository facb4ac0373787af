/*
 * tests/unit/test_recorder_rss.c - the flusher samples the process RSS for
 * every recording process (no GPU needed), as the counter "process RSS"
 * on its own thread (PT_FMT_FLUSHER_THREAD_NAME).
 *
 * Invariants covered:
 *  - a CPU-only program's trace has a "process RSS" series, values > 0,
 *    on the "ptz-flusher" thread, with no section there;
 *  - through the test seam (rec_rss_read_hook) a scripted sequence of
 *    readings comes out as exactly those values, in order; a failed read
 *    (negative) is skipped, not recorded;
 *  - PTZ_RSS_MS=0: no sample at all.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "tests/test_util.h"
#include "ptz/recorder.h"
#include "recorder/rec_internal.h"

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

/* The "process RSS" samples of @path, and the thread that holds them. */
static size_t rss_samples(const char *path, int64_t *out, size_t cap, char *thread_name, size_t *sections_there)
{
	struct tu_trace tr;
	tu_read(path, &tr);
	size_t n = 0;
	*sections_there = 0;
	thread_name[0] = 0;
	for (size_t i = 0; i < tr.nt; i++) {
		const struct tu_thread *t = &tr.t[i];
		bool has = false;
		for (size_t k = 0; k < t->n; k++) {
			const struct pt_record *r = &t->recs[k];
			if (r->kind != PT_REC_COUNTER)
				continue;
			const char *name = pt_reader_string(tr.rd, r->id, NULL);
			if (!name || strcmp(name, "process RSS") != 0)
				continue;
			has = true;
			if (n < cap)
				out[n] = (int64_t)r->value;
			n++;
		}
		if (!has)
			continue;
		for (size_t k = 0; k < pt_reader_thread_count(tr.rd); k++) {
			struct pt_thread_info ti;
			if (pt_reader_thread(tr.rd, k, &ti, sizeof(ti)) == 1 && ti.index == t->index)
				snprintf(thread_name, 32, "%s", ti.name);
		}
		for (size_t k = 0; k < t->n; k++)
			*sections_there += t->recs[k].kind == PT_REC_BEGIN;
	}
	tu_free(&tr);
	return n;
}

static void test_cpu_only_program_has_rss(void **state)
{
	(void)state;
	unsetenv("PTZ_RSS_MS");
	const char *path = tu_path("rss-real.ptz");
	pt_recorder *r = pt_open(path, NULL, 0);
	assert_non_null(r);
	uint32_t id = pt_intern(r, "work");
	for (int i = 0; i < 5; i++) {
		pt_begin(r, id);
		char *p = malloc(1 << 20);
		memset(p, i, 1 << 20);
		sleep_ms(60);
		free(p);
		pt_end(r, id);
	}
	assert_int_equal(pt_close(r), 0);
	int64_t v[64];
	char tn[32];
	size_t secs;
	size_t n = rss_samples(path, v, 64, tn, &secs);
	print_message("# %zu RSS samples, first %" PRId64 " bytes, on \"%s\"\n", n, n ? v[0] : 0, tn);
	assert_true(n >= 2); /* 300 ms at 100 ms */
	for (size_t i = 0; i < n && i < 64; i++)
		assert_true(v[i] > 0);
	assert_string_equal(tn, PT_FMT_FLUSHER_THREAD_NAME);
	assert_int_equal(secs, 0);
}

/* Scripted readings: 1 MiB, 2 MiB, a failed read, 5 MiB, 3 MiB, then 3 MiB on. */
static const int64_t script[] = { 1 << 20, 2 << 20, -1, 5 << 20, 3 << 20 };
static int script_at;
static int64_t scripted(void)
{
	int i = __atomic_fetch_add(&script_at, 1, __ATOMIC_RELAXED);
	return i < (int)PT_ARRAY_SIZE(script) ? script[i] : 3 << 20;
}

static void test_hook_gives_exact_values(void **state)
{
	(void)state;
	setenv("PTZ_RSS_MS", "20", 1);
	script_at = 0;
	rec_rss_read_hook = scripted;
	const char *path = tu_path("rss-script.ptz");
	pt_recorder *r = pt_open(path, NULL, 0);
	assert_non_null(r);
	while (__atomic_load_n(&script_at, __ATOMIC_RELAXED) < (int)PT_ARRAY_SIZE(script) + 1)
		sleep_ms(5);
	assert_int_equal(pt_close(r), 0);
	rec_rss_read_hook = NULL;
	unsetenv("PTZ_RSS_MS");
	int64_t v[256];
	char tn[32];
	size_t secs;
	size_t n = rss_samples(path, v, 256, tn, &secs);
	int reads = __atomic_load_n(&script_at, __ATOMIC_RELAXED);
	print_message("# %zu samples of %d reads\n", n, reads);
	assert_int_equal(n, (size_t)reads - 1); /* the failed read is not a sample */
	const int64_t want[] = { 1 << 20, 2 << 20, 5 << 20, 3 << 20, 3 << 20 };
	for (size_t i = 0; i < n; i++)
		assert_int_equal(v[i], i < PT_ARRAY_SIZE(want) ? want[i] : 3 << 20);
}

static void test_rss_off(void **state)
{
	(void)state;
	setenv("PTZ_RSS_MS", "0", 1);
	const char *path = tu_path("rss-off.ptz");
	pt_recorder *r = pt_open(path, NULL, 0);
	assert_non_null(r);
	uint32_t id = pt_intern(r, "work");
	pt_begin(r, id);
	sleep_ms(250);
	pt_end(r, id);
	assert_int_equal(pt_close(r), 0);
	unsetenv("PTZ_RSS_MS");
	int64_t v[8];
	char tn[32];
	size_t secs;
	assert_int_equal(rss_samples(path, v, 8, tn, &secs), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpu_only_program_has_rss),
		cmocka_unit_test(test_hook_gives_exact_values),
		cmocka_unit_test(test_rss_off),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
