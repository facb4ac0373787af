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
 *  - snapshots (pt_snapshot()) taken while two threads record: each reads
 *    clean as a window, every thread's values exactly once and in order,
 *    nesting intact; one taken after the threads ends with their last
 *    values; an impossible path is -ENOENT, leaves no file, and is an
 *    ERROR record (PT_ERRC_SNAPSHOT, ENOENT) in the trace; the trace's own
 *    path is -EINVAL and leaves it in place;
 *  - a full disk (a 1 MiB tmpfs, as root): a snapshot that does not fit is
 *    -ENOSPC, leaves no file, is an ERROR record, and recording goes on; a
 *    flight area the disk cannot hold fails pt_open() with ENOSPC;
 *  - losses stay exact across snapshots: two threads recording into small
 *    rings of a stream trace while another thread snapshots it over and
 *    over (each snapshot stalls the flusher, so the rings overflow): the
 *    records in the file plus those the LOSS records count equal what was
 *    emitted, exactly, and a section is kept or lost whole;
 *  - PTZ_SNAPSHOT_SIGNAL=USR2: raise() gives a snapshot holding what was
 *    recorded before it; pt_close() restores the default disposition;
 *  - pt_trigger(): a snapshot of the last PTZ_TRIGGER_SECONDS only (a
 *    phase 1.3 s older left out), the reason an instant in it; a second
 *    call within PTZ_TRIGGER_MIN_MS is rate-limited and counted;
 *  - a process killed (SIGKILL) at random moments while recording leaves a
 *    window that reads with no problem, values in order, and where they
 *    skip (small rings overflow), LOSS records in the window saying so.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>

#include "tests/test_util.h"
#include "ptz/recorder.h"

#define AREA (1u << 20)
#define NTHREADS 2

static pt_recorder *rec;
static uint32_t id_outer, id_inner, id_count;
static long per_thread;
static long flush_every = 100000; /* 0: never (the loss test lets the rings overflow) */

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
		if (per_thread >= 0 && flush_every && i % flush_every == flush_every - 1)
			pt_flush(rec); /* a slow build's flusher keeps up: no loss, so exact suffixes */
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
	int sections = 0; /* a worker's chunk in the window: its names must be there too */
	for (size_t k = 0; k < tr.nt && !sections; k++)
		for (size_t i = 0; i < tr.t[k].n && !sections; i++)
			sections = tr.t[k].recs[i].kind == PT_REC_BEGIN || tr.t[k].recs[i].kind == PT_REC_END;
	if (n < 0 && !sections) { /* killed before the workers' first chunk (a loaded machine) */
		tu_free(&tr);
		return 0;
	}
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
	long n = 1000000; /* iterations a thread, not scaled: the area must wrap twice */
	record(n);
	struct pt_stats_info st;
	assert_int_equal(pt_flush(rec), 0); /* every chunk written, so counted */
	assert_int_equal(pt_stats(rec, &st, sizeof(st)), 0);
	assert_int_equal(pt_close(rec), 0);
	rec = NULL;
	assert_int_equal(st.lost_records, 0);
	struct stat sb;
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal((uint64_t)sb.st_size, PT_FMT_HEADER_BYTES + AREA);
	assert_true(st.bytes_written > (uint64_t)sb.st_size); /* it wrapped: all it wrote is counted */
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
		if (access(path, F_OK) != 0)
			continue; /* killed before pt_open() created it (a loaded machine) */
		check(path, -1);
	}
}

/* ERROR records of @code in the trace at @path: how many; their values
 * summed in *@sum; the last value in *@last. */
static int errors_of(const char *path, uint32_t code, uint64_t *sum, uint64_t *last)
{
	struct pt_reader *r;
	assert_int_equal(pt_reader_open(path, &r), 0);
	struct pt_chunk_info ci;
	struct pt_record rr;
	int n = 0;
	*sum = *last = 0;
	while (pt_reader_next_chunk(r, PT_READER_ALL_CHUNKS, &ci, sizeof(ci)) == 1)
		while (pt_reader_next_record(r, &rr, sizeof(rr)) == 1)
			if (rr.kind == PT_REC_ERROR && rr.aux == code) {
				n++;
				*sum += rr.value;
				*last = rr.value;
			}
	pt_reader_close(r);
	return n;
}

/* Values of thread tag @who's counters in a snapshot, checked consecutive,
 * and its nesting intact; returns how many, *first and *last. */
static uint64_t snap_values(const char *path, int64_t who, int64_t *first, int64_t *last)
{
	struct tu_trace tr;
	tu_read(path, &tr);
	for (size_t i = 0; i < pt_reader_problem_count(tr.rd); i++) {
		uint64_t off;
		print_message("problem: %s\n", pt_reader_problem(tr.rd, i, &off));
	}
	assert_int_equal(pt_reader_problem_count(tr.rd), 0);
	assert_true(pt_reader_info(tr.rd)->window);
	assert_false(pt_reader_info(tr.rd)->flight);
	assert_int_equal(pt_reader_info(tr.rd)->closed, 1);
	uint64_t n = 0;
	*first = *last = -1;
	for (size_t k = 0; k < tr.nt; k++) {
		const struct tu_thread *t = &tr.t[k];
		size_t open;
		tu_check_nesting(t, &open);
		for (size_t i = 0; i < t->n; i++) {
			const struct pt_record *r = &t->recs[i];
			if (r->kind != PT_REC_COUNTER || (int64_t)r->value >> 40 != who)
				continue;
			int64_t v = (int64_t)r->value & ((1ll << 40) - 1);
			if (*last >= 0)
				assert_int_equal(v, *last + 1); /* exactly once, in order */
			else
				*first = v;
			*last = v;
			n++;
		}
	}
	tu_free(&tr);
	return n;
}

static void *snapper(void *arg)
{
	const char *dir = arg;
	for (int k = 0; k < 4; k++) {
		char p[4200];
		snprintf(p, sizeof(p), "%s/snap-%d.ptz", dir, k);
		assert_int_equal(pt_snapshot(rec, p), 0);
		struct timespec ts = { 0, 5000000 };
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/* Snapshots taken while two threads record: each a clean window. */
static void test_snapshot_concurrent(void **state)
{
	(void)state;
	const char *path = tu_path("snapped.ptz");
	rec = open_flight(path, AREA, 64u << 20);
	pthread_t s;
	assert_int_equal(pthread_create(&s, NULL, snapper, (void *)tu_tmpdir()), 0);
	long n = tu_scale(100) * 3000L;
	record(n);
	pthread_join(s, NULL);
	char p[4200];
	snprintf(p, sizeof(p), "%s/snap-last.ptz", tu_tmpdir());
	assert_int_equal(pt_snapshot(rec, p), 0); /* after the threads: ends with their last values */
	struct pt_stats_info st;
	assert_int_equal(pt_stats(rec, &st, sizeof(st)), 0);
	assert_int_equal(st.lost_records, 0);
	for (int k = 0; k < 4; k++) {
		snprintf(p, sizeof(p), "%s/snap-%d.ptz", tu_tmpdir(), k);
		for (int64_t who = 1; who <= NTHREADS; who++) {
			int64_t a, b;
			snap_values(p, who, &a, &b);
			assert_true(b < n);
		}
	}
	snprintf(p, sizeof(p), "%s/snap-last.ptz", tu_tmpdir());
	int present = 0;
	for (int64_t who = 1; who <= NTHREADS; who++) {
		int64_t a, b;
		if (snap_values(p, who, &a, &b)) {
			assert_int_equal(b, n - 1);
			present++;
		}
	}
	assert_true(present >= 1);
	/* a path that cannot be created: an error, recording goes on, the
	 * failure in the trace */
	snprintf(p, sizeof(p), "%s/no/such/dir/x.ptz", tu_tmpdir());
	assert_int_equal(pt_snapshot(rec, p), -ENOENT);
	assert_int_equal(access(p, F_OK), -1);
	pt_counter(rec, id_count, 1);
	assert_int_equal(pt_snapshot(rec, path), -EINVAL); /* the trace itself: it would be unlinked */
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(pt_snapshot(NULL, p), -EINVAL);
	assert_int_equal(pt_snapshot(rec, NULL), -EINVAL);
	assert_int_equal(pt_close(rec), 0);
	assert_int_equal(pt_snapshot(rec, p), -EBADF);
	rec = NULL;
	uint64_t sum, last; /* both failures recorded: ENOENT, then EINVAL */
	assert_int_equal(errors_of(path, PT_ERRC_SNAPSHOT, &sum, &last), 2);
	assert_int_equal(sum, ENOENT + EINVAL);
	assert_int_equal(last, EINVAL);
}

static atomic_int snapping;

static void *snap_loop(void *arg)
{
	const char *dir = arg;
	for (int k = 0; atomic_load(&snapping); k++) {
		char p[4200];
		snprintf(p, sizeof(p), "%s/loss-snap.ptz", dir);
		assert_int_equal(pt_snapshot(rec, p), 0);
	}
	return NULL;
}

/* Losses stay exact across snapshots (issue 20: recorded + lost = emitted): a snapshot stalls the
 * flusher while it copies, the producers' 4 KiB rings overflow, and every record is either in the file
 * or counted by a LOSS record of its thread. */
static void test_losses_exact_across_snapshots(void **state)
{
	(void)state;
	const char *path = tu_path("lossy.ptz");
	struct pt_options o = { .mode = PT_MODE_STREAM, .ring_bytes = 4096 };
	rec = pt_open(path, &o, sizeof(o));
	assert_non_null(rec);
	atomic_store(&snapping, 1);
	pthread_t s;
	assert_int_equal(pthread_create(&s, NULL, snap_loop, (void *)tu_tmpdir()), 0);
	flush_every = 0; /* the stalled flusher lets the small rings overflow */
	record(tu_scale(100) * 3000L);
	flush_every = 100000;
	atomic_store(&snapping, 0);
	pthread_join(s, NULL);
	struct pt_stats_info st;
	assert_int_equal(pt_stats(rec, &st, sizeof(st)), 0);
	assert_int_equal(pt_close(rec), 0);
	rec = NULL;
	struct tu_trace tr;
	tu_read(path, &tr);
	assert_int_equal(pt_reader_problem_count(tr.rd), 0);
	int workers = 0;
	uint64_t kept_all = 0, begins_all = 0;
	for (size_t k = 0; k < tr.nt; k++) {
		const struct tu_thread *t = &tr.t[k];
		uint64_t kept = 0, begins = 0;
		int64_t who = -1, prev = -1;
		for (size_t i = 0; i < t->n; i++) {
			const struct pt_record *r = &t->recs[i];
			if (r->kind == PT_REC_COUNTER && r->id == id_count) {
				who = (int64_t)r->value >> 40;
				const int64_t v = (int64_t)r->value & ((1ll << 40) - 1);
				assert_true(v > prev); /* in order, never twice */
				prev = v;
			}
			begins += r->kind == PT_REC_BEGIN;
			kept += r->kind == PT_REC_BEGIN || r->kind == PT_REC_END || r->kind == PT_REC_METRIC ||
				(r->kind == PT_REC_COUNTER && r->id == id_count);
		}
		if (who < 0)
			continue;
		workers++;
		size_t open; /* a section is kept or lost whole: every kept BEGIN has its END */
		tu_check_nesting(t, &open);
		assert_int_equal(open, 0);
		kept_all += kept;
		begins_all += begins;
	}
	assert_int_equal(workers, NTHREADS);
	/* recorded + lost = emitted, six records an iteration, two sections */
	const uint64_t emitted = 6 * NTHREADS * (uint64_t)per_thread;
	assert_true(tr.lost_records > 0); /* the rings did overflow: the loss path is what is checked */
	assert_int_equal(kept_all + tr.lost_records, emitted);
	assert_int_equal(tr.lost_sections, 2 * NTHREADS * (uint64_t)per_thread - begins_all);
	assert_int_equal(tr.lost_records, st.lost_records);
	print_message("# losses across snapshots: %llu of %llu records\n", (unsigned long long)tr.lost_records,
		      (unsigned long long)emitted);
	tu_free(&tr);
	char p[4200];
	snprintf(p, sizeof(p), "%s/loss-snap.ptz", tu_tmpdir());
	unlink(p);
}

/* Waits up to 5 s for a closed trace at @path. */
static int wait_closed(const char *path)
{
	for (int i = 0; i < 500; i++) {
		struct pt_reader *r;
		if (pt_reader_open(path, &r) == 0) {
			int closed = pt_reader_info(r)->closed;
			pt_reader_close(r);
			if (closed)
				return 1;
		} else if (r) {
			pt_reader_close(r);
		}
		struct timespec ts = { 0, 10000000 };
		nanosleep(&ts, NULL);
	}
	return 0;
}

static void test_signal(void **state)
{
	(void)state;
	char tmpl[4200], want[4200];
	snprintf(tmpl, sizeof(tmpl), "%s/sig-%%n.ptz", tu_tmpdir());
	snprintf(want, sizeof(want), "%s/sig-1.ptz", tu_tmpdir());
	setenv("PTZ_SNAPSHOT_SIGNAL", "USR2", 1);
	setenv("PTZ_SNAPSHOT_PATH", tmpl, 1);
	rec = open_flight(tu_path("sig.ptz"), AREA, 1u << 20);
	uint32_t id = pt_intern(rec, "iteration");
	for (int i = 0; i < 1000; i++)
		pt_counter(rec, id, (1ll << 40) | i); /* published before the signal: in the snapshot */
	assert_int_equal(raise(SIGUSR2), 0);
	assert_true(wait_closed(want));
	int64_t a, b;
	assert_int_equal(snap_values(want, 1, &a, &b), 1000);
	assert_int_equal(pt_close(rec), 0);
	rec = NULL;
	struct sigaction sa;
	assert_int_equal(sigaction(SIGUSR2, NULL, &sa), 0);
	assert_true(sa.sa_handler == SIG_DFL); /* the program's disposition again */
	unsetenv("PTZ_SNAPSHOT_SIGNAL");
	unsetenv("PTZ_SNAPSHOT_PATH");
}

static void test_trigger(void **state)
{
	(void)state;
	char tmpl[4200], want[4200];
	snprintf(tmpl, sizeof(tmpl), "%s/trig-%%n.ptz", tu_tmpdir());
	snprintf(want, sizeof(want), "%s/trig-1.ptz", tu_tmpdir());
	setenv("PTZ_SNAPSHOT_PATH", tmpl, 1);
	setenv("PTZ_TRIGGER_SECONDS", "1", 1);
	setenv("PTZ_TRIGGER_MIN_MS", "100000", 1);
	const char *path = tu_path("trig.ptz");
	rec = open_flight(path, AREA, 1u << 20);
	uint32_t id = pt_intern(rec, "iteration");
	for (int i = 0; i < 500; i++) /* phase 1: more than a second before the trigger */
		pt_counter(rec, id, (1ll << 40) | i);
	assert_int_equal(pt_flush(rec), 0);
	struct timespec ts = { 1, 300000000 };
	nanosleep(&ts, NULL);
	for (int i = 500; i < 800; i++) /* phase 2: within it */
		pt_counter(rec, id, (1ll << 40) | i);
	assert_int_equal(pt_trigger(rec, "request over SLO"), 1);
	assert_int_equal(pt_trigger(rec, "again"), 0); /* rate-limited */
	assert_int_equal(pt_trigger(rec, NULL), -EINVAL);
	assert_true(wait_closed(want));
	int64_t a, b;
	assert_int_equal(snap_values(want, 1, &a, &b), 300); /* phase 2 only */
	assert_int_equal(a, 500);
	/* the reason, as an instant, in the snapshot */
	struct pt_reader *r;
	assert_int_equal(pt_reader_open(want, &r), 0);
	int found = 0;
	uint32_t dom;
	for (uint32_t i = 0; i <= pt_reader_max_string_id(r); i++) {
		const char *s = pt_reader_string(r, i, &dom);
		found += s && !strcmp(s, "trigger: request over SLO");
	}
	assert_int_equal(found, 1);
	pt_reader_close(r);
	assert_int_equal(pt_close(rec), 0);
	rec = NULL;
	/* the limited call counted in the trace */
	uint64_t limited, last;
	errors_of(path, PT_ERRC_TRIGGER_LIMITED, &limited, &last);
	assert_int_equal(limited, 1);
	unsetenv("PTZ_SNAPSHOT_PATH");
	unsetenv("PTZ_TRIGGER_SECONDS");
	unsetenv("PTZ_TRIGGER_MIN_MS");
}

/* A full disk: a snapshot that does not fit fails with ENOSPC, leaves no
 * file, is an ERROR record in the trace, and recording goes on; a flight
 * area the disk cannot hold fails pt_open() (it is allocated whole). */
static void test_snapshot_disk_full(void **state)
{
	(void)state;
	if (geteuid() != 0) { /* as test_recorder.c: CI runs as root */
		print_message("# SKIP not root: the full-disk case needs mount(2)\n");
		return;
	}
	const char *dir = tu_path("small-fs");
	mkdir(dir, 0700);
	if (mount("tmpfs", dir, "tmpfs", 0, "size=1m") != 0) {
		print_message("# SKIP mount tmpfs failed (%s)\n", strerror(errno));
		return;
	}
	char in[4300];
	snprintf(in, sizeof(in), "%s/flight.ptz", dir);
	struct pt_options o = { .mode = PT_MODE_FLIGHT, .flight_bytes = 4u << 20 };
	errno = 0;
	assert_null(pt_open(in, &o, sizeof(o)));
	assert_int_equal(errno, ENOSPC);
	const char *path = tu_path("big-window.ptz");
	rec = open_flight(path, 4u << 20, 64u << 20);
	record(400000); /* a window of megabytes */
	snprintf(in, sizeof(in), "%s/snap.ptz", dir);
	assert_int_equal(pt_snapshot(rec, in), -ENOSPC);
	assert_int_equal(access(in, F_OK), -1); /* the partial file removed */
	pt_counter(rec, id_count, 1); /* recording goes on */
	assert_int_equal(pt_close(rec), 0);
	rec = NULL;
	umount2(dir, MNT_DETACH);
	uint64_t sum, last;
	assert_int_equal(errors_of(path, PT_ERRC_SNAPSHOT, &sum, &last), 1);
	assert_int_equal(last, ENOSPC);
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
		cmocka_unit_test(test_snapshot_concurrent),
		cmocka_unit_test(test_losses_exact_across_snapshots),
		cmocka_unit_test(test_signal),
		cmocka_unit_test(test_trigger),
		cmocka_unit_test(test_snapshot_disk_full),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
