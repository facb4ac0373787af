/*
 * tests/unit/test_recorder_rss.c - the flusher samples the process
 * counters (doc/trace-format.md §9) for every recording process (no GPU
 * needed) on its own thread (PT_FMT_FLUSHER_THREAD_NAME).
 *
 * Invariants covered:
 *  - a CPU-only program's trace has a "process RSS" series, values > 0,
 *    on the "ptz-flusher" thread, with no section there;
 *  - through the test seam (rec_rss_read_hook) a scripted sequence of
 *    readings comes out as exactly those values, in order; a failed read
 *    (negative) is skipped, not recorded;
 *  - at a 10 ms period over a busy loop: every process counter is there
 *    (steal read once a second, the others at every sample),
 *    on the flusher's thread; the cumulative ones never decrease; user CPU
 *    grows by at least half the loop's CPU time; "system CPUs online" is
 *    one sample, sysconf's count; load and runnable threads are sane;
 *  - through rec_proc_dir_hook: steal, load and runnable threads are
 *    exactly what chosen stat and loadavg files say; missing or malformed
 *    files drop those counters only, recording goes on;
 *  - PTZ_PROC_MS=0, or PTZ_RSS_MS=0 with PTZ_PROC_MS unset: no counter at
 *    all; PTZ_PROC_MS wins over PTZ_RSS_MS.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/test_util.h"
#include "ptz/recorder.h"
#include "recorder/rec_internal.h"

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

/* The samples of the counter @want (NULL: every counter) in @path, and
 * the thread that holds them. */
static size_t counter_samples(const char *path, const char *want, int64_t *out, size_t cap, char *thread_name,
			      size_t *sections_there)
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
			if (want && (!name || strcmp(name, want) != 0))
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

/* The "process RSS" samples of @path, and the thread that holds them. */
static size_t rss_samples(const char *path, int64_t *out, size_t cap, char *thread_name, size_t *sections_there)
{
	return counter_samples(path, "process RSS", out, cap, thread_name, sections_there);
}

static void test_cpu_only_program_has_rss(void **state)
{
	(void)state;
	unsetenv("PTZ_RSS_MS");
	unsetenv("PTZ_PROC_MS");
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
	unsetenv("PTZ_PROC_MS");
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

/* Every counter of the trace at @path: none. */
static void assert_no_counter(const char *path)
{
	int64_t v[8];
	char tn[32];
	size_t secs;
	assert_int_equal(counter_samples(path, NULL, v, 8, tn, &secs), 0);
}

/* Records "work" for 250 ms with the environment as set. */
static void record_idle(const char *path)
{
	pt_recorder *r = pt_open(path, NULL, 0);
	assert_non_null(r);
	uint32_t id = pt_intern(r, "work");
	pt_begin(r, id);
	sleep_ms(250);
	pt_end(r, id);
	assert_int_equal(pt_close(r), 0);
}

static void test_rss_off(void **state)
{
	(void)state;
	unsetenv("PTZ_PROC_MS");
	setenv("PTZ_RSS_MS", "0", 1);
	const char *path = tu_path("rss-off.ptz");
	record_idle(path);
	unsetenv("PTZ_RSS_MS");
	int64_t v[8];
	char tn[32];
	size_t secs;
	assert_int_equal(rss_samples(path, v, 8, tn, &secs), 0);
	assert_no_counter(path); /* the old name turns every process counter off */
}

static void test_proc_ms_off_and_precedence(void **state)
{
	(void)state;
	setenv("PTZ_PROC_MS", "0", 1);
	setenv("PTZ_RSS_MS", "20", 1);
	const char *path = tu_path("proc-off.ptz");
	record_idle(path);
	assert_no_counter(path);

	setenv("PTZ_PROC_MS", "20", 1); /* the new name wins over the old one */
	setenv("PTZ_RSS_MS", "0", 1);
	path = tu_path("proc-on.ptz");
	record_idle(path);
	unsetenv("PTZ_PROC_MS");
	unsetenv("PTZ_RSS_MS");
	int64_t v[64];
	char tn[32];
	size_t secs;
	assert_true(counter_samples(path, "process CPU user (ns)", v, 64, tn, &secs) >= 2);
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	assert_int_equal(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts), 0);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static const char *const cumulative[] = {
	"process CPU user (ns)", "process CPU system (ns)", "process context switches voluntary",
	"process context switches involuntary", "system CPU steal (ns)",
};

static void test_counters_over_busy_loop(void **state)
{
	(void)state;
	unsetenv("PTZ_RSS_MS");
	setenv("PTZ_PROC_MS", "10", 1);
	uint64_t s0, c0;
	rec_proc_cost(&s0, &c0);
	const char *path = tu_path("proc-busy.ptz");
	pt_recorder *r = pt_open(path, NULL, 0);
	assert_non_null(r);
	uint32_t id = pt_intern(r, "busy");
	sleep_ms(30); /* samples before the loop */
	pt_begin(r, id);
	const uint64_t busy_ns = 120000000u, t0 = thread_cpu_ns();
	volatile uint64_t x = 1;
	while (thread_cpu_ns() - t0 < busy_ns)
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005ull + 1;
	pt_end(r, id);
	sleep_ms(30); /* and after it */
	assert_int_equal(pt_close(r), 0);
	unsetenv("PTZ_PROC_MS");
	uint64_t s1, c1;
	rec_proc_cost(&s1, &c1);
	print_message("# %" PRIu64 " samples, %.2f us per sample (mean, wall)\n", s1 - s0,
		      s1 > s0 ? (double)(c1 - c0) / 1e3 / (double)(s1 - s0) : 0.0);

	int64_t v[512];
	char tn[32];
	size_t secs;
	for (size_t c = 0; c < PT_ARRAY_SIZE(cumulative); c++) {
		size_t n = counter_samples(path, cumulative[c], v, 512, tn, &secs);
		print_message("# %s: %zu samples, %" PRId64 " -> %" PRId64 "\n", cumulative[c], n, n ? v[0] : 0,
			      n ? v[n < 512 ? n - 1 : 511] : 0);
		/* >= 180 ms at 10 ms, however loaded the machine; steal once a second */
		assert_true(n >= (strcmp(cumulative[c], "system CPU steal (ns)") == 0 ? 1u : 5u));
		assert_string_equal(tn, PT_FMT_FLUSHER_THREAD_NAME);
		assert_int_equal(secs, 0);
		for (size_t i = 1; i < n && i < 512; i++)
			assert_true(v[i] >= v[i - 1]);
		assert_true(v[0] >= 0);
		if (c == 0) /* the loop's CPU time is user time, but for what the kernel bills otherwise */
			assert_true(v[n - 1] - v[0] >= (int64_t)busy_ns / 2);
	}
	size_t n = counter_samples(path, "system CPUs online", v, 512, tn, &secs);
	assert_int_equal(n, 1);
	assert_int_equal(v[0], sysconf(_SC_NPROCESSORS_ONLN));
	n = counter_samples(path, "system load 1 min (x1000)", v, 512, tn, &secs);
	assert_true(n >= 5);
	for (size_t i = 0; i < n && i < 512; i++)
		assert_true(v[i] >= 0);
	n = counter_samples(path, "system runnable threads", v, 512, tn, &secs);
	assert_true(n >= 5);
	for (size_t i = 0; i < n && i < 512; i++)
		assert_true(v[i] >= 1); /* the flusher itself runs while it reads */
	n = counter_samples(path, "process RSS", v, 512, tn, &secs);
	assert_true(n >= 5);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

/* Records 100 ms at a 10 ms period with the flusher reading @dir's files. */
static void record_with_proc_dir(const char *path, const char *dir)
{
	unsetenv("PTZ_RSS_MS");
	setenv("PTZ_PROC_MS", "10", 1);
	rec_proc_dir_hook = dir;
	record_idle(path);
	rec_proc_dir_hook = NULL;
	unsetenv("PTZ_PROC_MS");
}

static void test_proc_files_exact(void **state)
{
	(void)state;
	const char *dir = tu_path("proc");
	assert_int_equal(mkdir(dir, 0700), 0);
	char p[4300];
	snprintf(p, sizeof(p), "%s/stat", dir);
	write_file(p, "cpu  3270905 137520 1674157 2173362 8624 0 12466 4321 0 0\n"
		      "cpu0 1 2 3 4 5 6 7 8 9 10\nintr 1 2 3\nprocs_running 9\n");
	snprintf(p, sizeof(p), "%s/loadavg", dir);
	write_file(p, "5.56 2.50 2.51 8/178 20985\n");
	const char *path = tu_path("proc-exact.ptz");
	record_with_proc_dir(path, dir);
	int64_t v[256];
	char tn[32];
	size_t secs;
	const int64_t tick_ns = 1000000000 / sysconf(_SC_CLK_TCK);
	size_t n = counter_samples(path, "system CPU steal (ns)", v, 256, tn, &secs);
	assert_true(n >= 1); /* read once a second */
	for (size_t i = 0; i < n && i < 256; i++)
		assert_int_equal(v[i], 4321 * tick_ns);
	n = counter_samples(path, "system load 1 min (x1000)", v, 256, tn, &secs);
	assert_true(n >= 2);
	for (size_t i = 0; i < n && i < 256; i++)
		assert_int_equal(v[i], 5560);
	n = counter_samples(path, "system runnable threads", v, 256, tn, &secs);
	assert_true(n >= 2);
	for (size_t i = 0; i < n && i < 256; i++)
		assert_int_equal(v[i], 8);

	/* one load digit, three, none: x1000 each time */
	static const struct { const char *text; int64_t milli; } loads[] = {
		{ "0.5 0.1 0.1 1/10 7\n", 500 }, { "12.345 0 0 2/10 7\n", 12345 }, { "3 0 0 1/10 7\n", 3000 },
	};
	for (size_t k = 0; k < PT_ARRAY_SIZE(loads); k++) {
		write_file(p, loads[k].text);
		path = tu_path("proc-load.ptz");
		record_with_proc_dir(path, dir);
		n = counter_samples(path, "system load 1 min (x1000)", v, 256, tn, &secs);
		assert_true(n >= 2);
		assert_int_equal(v[0], loads[k].milli);
	}

	/* malformed files: those counters skipped, the others recorded */
	write_file(p, "garbage\n");
	snprintf(p, sizeof(p), "%s/stat", dir);
	write_file(p, "cpu  1 2 3\n"); /* no steal field */
	path = tu_path("proc-bad.ptz");
	record_with_proc_dir(path, dir);
	assert_int_equal(counter_samples(path, "system CPU steal (ns)", v, 256, tn, &secs), 0);
	assert_int_equal(counter_samples(path, "system load 1 min (x1000)", v, 256, tn, &secs), 0);
	assert_int_equal(counter_samples(path, "system runnable threads", v, 256, tn, &secs), 0);
	assert_true(counter_samples(path, "process CPU user (ns)", v, 256, tn, &secs) >= 2);
	assert_true(counter_samples(path, "process RSS", v, 256, tn, &secs) >= 2);

	/* no such files (no /proc): the same */
	path = tu_path("proc-none.ptz");
	record_with_proc_dir(path, tu_path("no-such-dir"));
	assert_int_equal(counter_samples(path, "system CPU steal (ns)", v, 256, tn, &secs), 0);
	assert_int_equal(counter_samples(path, "system runnable threads", v, 256, tn, &secs), 0);
	assert_true(counter_samples(path, "process context switches voluntary", v, 256, tn, &secs) >= 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpu_only_program_has_rss),
		cmocka_unit_test(test_hook_gives_exact_values),
		cmocka_unit_test(test_rss_off),
		cmocka_unit_test(test_proc_ms_off_and_precedence),
		cmocka_unit_test(test_counters_over_busy_loop),
		cmocka_unit_test(test_proc_files_exact),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
