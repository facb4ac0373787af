/*
 * tests/unit/test_recorder_flight.c - the recorder in flight mode
 * (PT_MODE_FLIGHT, PTZ_MODE=flight; doc/trace-format.md §10).
 *
 * Invariants covered:
 *  - threads recording millions of records into a 1 MiB area: the file is
 *    exactly the header plus the area, wrapped several times, and reads with
 *    no problem; each thread's window (if the window still holds any of its
 *    chunks) is an exact suffix of what it recorded
 *    (its counter values consecutive up to the last one, none lost: the
 *    rings hold the whole run), its nesting intact once the sections begun
 *    before the window have ended; every name (sections, counter, threads)
 *    resolves in the window alone, though first written long before it;
 *  - pt_stats() counts every byte written, far more than the file holds;
 *  - PTZ_MODE / PTZ_FLIGHT_BYTES: the area's size; a bad value warns and
 *    takes the default; pt_options: an area under 1 MiB or an unknown mode
 *    is EINVAL;
 *  - a process killed (SIGKILL) at random moments while recording leaves a
 *    window that reads with no problem, values in order, and where they
 *    skip (small rings overflow), LOSS records in the window saying so.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "tests/test_util.h"
#include "ptz/recorder.h"

#define AREA (1u << 20)
#define NTHREADS 2

static pt_recorder *rec;
static uint32_t id_outer, id_inner, id_count;
static long per_thread;

static void *worker(void *arg)
{
	int64_t base = (int64_t)(uintptr_t)arg << 40;
	for (long i = 0; per_thread < 0 || i < per_thread; i++) {
		pt_begin(rec, id_outer);
		pt_counter(rec, id_count, base | i);
		pt_begin(rec, id_inner);
		pt_metric(rec, PT_METRIC_FLOPS, (uint64_t)i);
		pt_end(rec, id_inner);
		pt_end(rec, id_outer);
	}
	return NULL;
}

static pt_recorder *open_flight(const char *path, uint64_t area, size_t ring)
{
	struct pt_options o = { .mode = PT_MODE_FLIGHT, .flight_bytes = area, .ring_bytes = ring };
	pt_recorder *r = pt_open(path, &o, sizeof(o));
	assert_non_null(r);
	return r;
}

static void record(long n)
{
	per_thread = n;
	id_outer = pt_intern(rec, "outer");
	id_inner = pt_intern(rec, "inner");
	id_count = pt_intern(rec, "iteration");
	pthread_t th[NTHREADS];
	for (uintptr_t t = 0; t < NTHREADS; t++)
		assert_int_equal(pthread_create(&th[t], NULL, worker, (void *)(t + 1)), 0);
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
}

/* Checks a window read from @path; @n: values each thread recorded (-1:
 * unknown, killed). Returns the values seen. */
static uint64_t check(const char *path, long n)
{
	struct tu_trace tr;
	tu_read(path, &tr);
	const struct pt_trace_info *in = pt_reader_info(tr.rd);
	for (size_t i = 0; i < pt_reader_problem_count(tr.rd); i++) {
		uint64_t off;
		print_message("problem: %s\n", pt_reader_problem(tr.rd, i, &off));
	}
	assert_int_equal(pt_reader_problem_count(tr.rd), 0);
	assert_true(in->flight && in->window);
	/* every name resolves in the window alone */
	uint32_t dom, count = 0, names = 0;
	for (uint32_t id = 0; id <= pt_reader_max_string_id(tr.rd); id++) {
		const char *s = pt_reader_string(tr.rd, id, &dom);
		if (!s)
			continue;
		names += !strcmp(s, "outer") + !strcmp(s, "inner");
		if (!strcmp(s, "iteration"))
			count = id;
	}
	assert_int_equal(names, 2);
	assert_int_not_equal(count, 0);
	uint64_t seen = 0, gaps = 0;
	int workers = 0;
	for (size_t k = 0; k < tr.nt; k++) {
		const struct tu_thread *t = &tr.t[k];
		int64_t prev = -1, who = -1;
		for (size_t i = 0; i < t->n; i++) {
			const struct pt_record *r = &t->recs[i];
			if (r->kind != PT_REC_COUNTER || r->id != count)
				continue;
			int64_t v = (int64_t)r->value & ((1ll << 40) - 1);
			who = (int64_t)r->value >> 40;
			if (prev >= 0 && n >= 0)
				assert_int_equal(v, prev + 1);
			else if (prev >= 0) { /* killed, with small rings: losses, each one said */
				assert_true(v > prev);
				gaps += v != prev + 1;
			}
			prev = v;
			seen++;
		}
		if (who < 0)
			continue; /* the flusher's ring (process counters) or a thread with nothing kept */
		workers++;
		if (n >= 0)
			assert_int_equal(prev, n - 1); /* the window ends with the last one */
		size_t open;
		tu_check_nesting(t, &open);
		assert_true(open <= 2);
		/* the thread's name, written once at its start, is in the window */
		struct pt_thread_info ti;
		for (size_t j = 0; j < pt_reader_thread_count(tr.rd); j++) {
			assert_int_equal(pt_reader_thread(tr.rd, j, &ti, sizeof(ti)), 1);
			if (ti.index == t->index)
				assert_true(ti.tid != 0);
		}
	}
	/* a thread that ended early may have nothing left in the window; the
	 * last one to write has */
	assert_true(workers >= 1);
	if (gaps)
		assert_true(tr.lost_records > 0);
	tu_free(&tr);
	return seen;
}

static void test_wrap(void **state)
{
	(void)state;
	const char *path = tu_path("flight.ptz");
	rec = open_flight(path, AREA, 64u << 20);
	long n = tu_scale(100) * 6000L; /* 600,000 iterations a thread at 100 % */
	record(n);
	struct pt_stats_info st;
	assert_int_equal(pt_stats(rec, &st, sizeof(st)), 0);
	assert_int_equal(pt_close(rec), 0);
	rec = NULL;
	assert_int_equal(st.lost_records, 0);
	struct stat sb;
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal((uint64_t)sb.st_size, PT_FMT_HEADER_BYTES + AREA);
	assert_true(st.bytes_written > 2 * (uint64_t)sb.st_size); /* it wrapped */
	struct pt_reader *r;
	assert_int_equal(pt_reader_open(path, &r), 0);
	assert_true(pt_reader_info(r)->laps >= 2);
	assert_int_equal(pt_reader_info(r)->closed, 1);
	pt_reader_close(r);
	uint64_t seen = check(path, n);
	assert_true(seen > 0 && seen < (uint64_t)n * NTHREADS);
}

static void test_env(void **state)
{
	(void)state;
	const char *path = tu_path("env.ptz");
	setenv("PTZ_MODE", "flight", 1);
	setenv("PTZ_FLIGHT_BYTES", "2M", 1);
	pt_recorder *r = pt_open(path, NULL, 0);
	assert_non_null(r);
	assert_int_equal(pt_close(r), 0);
	struct stat sb;
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal((uint64_t)sb.st_size, PT_FMT_HEADER_BYTES + (2u << 20));
	setenv("PTZ_FLIGHT_BYTES", "100k", 1); /* too small: warned, the default */
	r = pt_open(path, NULL, 0);
	assert_non_null(r);
	assert_int_equal(pt_close(r), 0);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal((uint64_t)sb.st_size, PT_FMT_HEADER_BYTES + (64u << 20));
	setenv("PTZ_MODE", "stream", 1);
	r = pt_open(path, NULL, 0);
	assert_non_null(r);
	assert_int_equal(pt_close(r), 0);
	struct pt_reader *rd;
	assert_int_equal(pt_reader_open(path, &rd), 0);
	assert_false(pt_reader_info(rd)->flight);
	assert_false(pt_reader_info(rd)->window);
	pt_reader_close(rd);
	unsetenv("PTZ_MODE");
	unsetenv("PTZ_FLIGHT_BYTES");
	struct pt_options o = { .mode = PT_MODE_FLIGHT, .flight_bytes = AREA - 1 };
	errno = 0;
	assert_null(pt_open(path, &o, sizeof(o)));
	assert_int_equal(errno, EINVAL);
	o = (struct pt_options){ .mode = 7 };
	errno = 0;
	assert_null(pt_open(path, &o, sizeof(o)));
	assert_int_equal(errno, EINVAL);
}

static void test_killed(void **state)
{
	(void)state;
	const char *path = tu_path("killed.ptz");
	unsigned seed = 12345;
	for (int k = 0; k < tu_scale(8); k++) {
		unlink(path);
		/* a fresh process (exec): a fork child of a process that has
		 * opened a recorder may not open one (recorder.h, pt_open()) */
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			execl("/proc/self/exe", "test-recorder-flight", "--record", path, (char *)NULL);
			_exit(127);
		}
		struct timespec ts = { 0, (long)(100 + rand_r(&seed) % 300) * 1000000L };
		nanosleep(&ts, NULL);
		kill(pid, SIGKILL);
		int st;
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFSIGNALED(st));
		check(path, -1);
	}
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--record")) { /* test_killed's child */
		rec = open_flight(argv[2], AREA, 1u << 20);
		record(-1); /* until killed */
		return 1;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wrap),
		cmocka_unit_test(test_env),
		cmocka_unit_test(test_killed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
