/*
 * tests/unit/test_recorder_fork.c - the recorder across fork() (without exec).
 *
 * A child after fork() does not record (include/ptz/recorder.h, pt_open):
 * the handle it inherits is a no-op, pt_open() in it fails with EBUSY, and
 * none of its calls may block on a lock that another thread of the parent
 * held at the fork (the child has only the forking thread, and a copy of
 * the lock as it was). Invariants covered:
 *  - forks while parent threads record and loop on the recorder's locks
 *    (intern table, open lock, thread names): every child calls the whole
 *    API through the inherited handle and pt_open() (EBUSY) and exits
 *    within the timeout; nothing it did reaches the parent's file, which
 *    holds exactly the parent's records;
 *  - the same when the parent closed its recorder before forking.
 *
 * Children leave with _exit() and a status the parent checks; each child
 * arms alarm() and the parent waits with a deadline, so a deadlock fails
 * the test instead of hanging it. Not in the 'tsan' suite: ThreadSanitizer
 * does not support fork() in a multithreaded process.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/test_util.h"
#include "ptz/recorder.h"

#define CHILD_ALARM_S 30 /* a child still running after this dies of SIGALRM */
#define WAIT_S 40        /* the parent's deadline per child */

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
	nanosleep(&ts, NULL);
}

/* fork() with the TAP output flushed (a child must not repeat it) and, in
 * the child, an alarm that turns a deadlock into a death by SIGALRM. */
static pid_t fork_child(void)
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		alarm(CHILD_ALARM_S);
	return pid;
}

/* Waits for @pid at most WAIT_S seconds; fails on a signal, a timeout (the
 * child is killed) or a non-zero exit status. */
static void wait_child_ok(pid_t pid)
{
	int status = 0;
	for (long waited_us = 0;; waited_us += 2000) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		assert_int_equal(w, 0);
		if (waited_us >= WAIT_S * 1000000L) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			fail_msg("child %d still running after %d s: deadlock", (int)pid, WAIT_S);
		}
		sleep_us(2000);
	}
	if (WIFSIGNALED(status))
		fail_msg("child %d killed by signal %d%s", (int)pid, WTERMSIG(status),
			 WTERMSIG(status) == SIGALRM ? " (alarm: deadlock)" : "");
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) != 0)
		fail_msg("child %d exited with status %d", (int)pid, WEXITSTATUS(status));
}

/* True if the trace at @path holds a string @s or a thread named @s. */
static bool trace_has_name(const char *path, const char *s)
{
	struct pt_reader *rd;
	assert_int_equal(pt_reader_open(path, &rd), 0);
	bool found = false;
	for (uint32_t id = 1; id <= pt_reader_max_string_id(rd); id++) {
		const char *v = pt_reader_string(rd, id, NULL);
		if (v && strcmp(v, s) == 0)
			found = true;
	}
	for (size_t i = 0; i < pt_reader_thread_count(rd); i++) {
		struct pt_thread_info ti;
		if (pt_reader_thread(rd, i, &ti) == 1 && strcmp(ti.name, s) == 0)
			found = true;
	}
	pt_reader_close(rd);
	return found;
}

static void sections(pt_recorder *r, uint32_t id, int n)
{
	for (int i = 0; i < n; i++) {
		pt_begin(r, id);
		pt_end(r, id);
	}
}

#define PARENT_N 300
#define FORKS 20

/*
 * gcc 12's AddressSanitizer allocator is not fork-safe: a child forked while
 * another thread was inside malloc can hang in its first malloc (LLVM 17's
 * sanitizers lock the allocator around fork). glibc's malloc is fork-safe.
 * So under ASan no fork happens while the churn thread creates, runs or
 * joins a thread (allocations); the recorders allocate only before the
 * first fork, and the locker never allocates.
 */
#if defined(__SANITIZE_ADDRESS__)
static pthread_mutex_t alloc_gate = PTHREAD_MUTEX_INITIALIZER;
#define ALLOC_GATE_LOCK() pthread_mutex_lock(&alloc_gate)
#define ALLOC_GATE_UNLOCK() pthread_mutex_unlock(&alloc_gate)
#else
#define ALLOC_GATE_LOCK() ((void)0)
#define ALLOC_GATE_UNLOCK() ((void)0)
#endif

#define LOCKER_NAMES 64

struct load {
	pt_recorder *r;
	_Atomic bool stop;
	_Atomic uint64_t spins;
	_Atomic int started;  /* recorder threads past their first (allocating) section */
};

static void *load_recorder(void *p)
{
	struct load *l = p;
	uint32_t id = pt_intern(l->r, "load");
	pt_begin(l->r, id);
	pt_end(l->r, id);
	atomic_fetch_add(&l->started, 1);
	while (!atomic_load(&l->stop)) {
		for (int i = 0; i < 256; i++) {
			pt_begin(l->r, id);
			pt_metric(l->r, PT_METRIC_FLOPS, 1);
			pt_end(l->r, id);
		}
		sched_yield();
	}
	return NULL;
}

/* Takes every lock it can reach in a loop, without allocating (names,
 * domain and thread name exist before the loop): the intern lock
 * (pt_domain), the open lock (pt_set_enabled), the names lock
 * (pt_thread_name), and the RCU read side (pt_intern lookups). */
static void *load_locker(void *p)
{
	struct load *l = p;
	char name[32];
	uint32_t ids[LOCKER_NAMES];
	for (uint32_t k = 0; k < LOCKER_NAMES; k++) {
		snprintf(name, sizeof(name), "locker-%u", k);
		ids[k] = pt_intern(l->r, name);
	}
	pt_domain(l->r, "load-domain");
	pt_thread_name(l->r, 0, "locker");
	for (uint32_t k = 0; !atomic_load(&l->stop); k++) {
		snprintf(name, sizeof(name), "locker-%u", k % LOCKER_NAMES);
		if (pt_intern(l->r, name) != ids[k % LOCKER_NAMES])
			abort();
		pt_domain(l->r, "load-domain");
		pt_set_enabled(l->r, true);
		pt_thread_name(l->r, 0, "locker");
		atomic_fetch_add(&l->spins, 1);
	}
	return NULL;
}


/* Every call of the API through the inherited handle; returns the exit status. */
static int noop_child(pt_recorder *r)
{
	uint32_t C = pt_intern(r, "child-only-name");
	if (C == 0)
		return 2;
	for (int i = 0; i < 10000; i++) {
		pt_begin(r, C);
		pt_metric(r, PT_METRIC_READ_BYTES, 64);
		pt_transfer(r, 64, PT_H2D);
		pt_end(r, C);
	}
	pt_counter(r, C, 7);
	pt_instant(r, C);
	pt_async_end(r, pt_async_begin(r, C));
	pt_start(r, "child-start-name", NULL);
	pt_stop(r, "child-start-name", NULL);
	pt_gpu_begin(r, C, NULL);
	pt_gpu_end(r, C, NULL);
	pt_thread_name(r, 0, "child-thread-name");
	pt_set_enabled(r, false);
	pt_set_enabled(r, true);
	struct pt_stats_info st;
	if (pt_stats(r, &st) != 0 || st.records != 0 || st.threads != 0)
		return 3;
	if (pt_close(r) != 0)
		return 4;
	return 0;
}


/* A child's own pt_open(): refused at once, nothing created. */
static int open_child(void)
{
	char path[64];
	snprintf(path, sizeof(path), "fork-child-%d.ptz", (int)getpid());
	errno = 0;
	pt_recorder *c = pt_open(tu_path(path), NULL);
	if (c || errno != EBUSY)
		return 5;
	struct stat sb;
	return stat(tu_path(path), &sb) == 0 ? 6 : 0;
}

static void fork_under_load(struct load *l)
{
	pthread_t rec[2], locker;
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&rec[i], NULL, load_recorder, l), 0);
	assert_int_equal(pthread_create(&locker, NULL, load_locker, l), 0);
	while (atomic_load(&l->spins) < 100 || atomic_load(&l->started) < 2)
		sleep_us(1000);
	for (int k = 0; k < FORKS; k++) {
		sleep_us(500 + 997 * k % 3000);
		ALLOC_GATE_LOCK();
		pid_t pid = fork_child();
		if (pid == 0) {
			int st = noop_child(l->r);
			_exit(st ? st : open_child());
		}
		ALLOC_GATE_UNLOCK();
		wait_child_ok(pid);
	}
	atomic_store(&l->stop, true);
	for (int i = 0; i < 2; i++)
		pthread_join(rec[i], NULL);
	pthread_join(locker, NULL);
}

static void test_fork_child_noop_while_parent_records(void **state)
{
	(void)state;
	const char *path = tu_path("fork-parent.ptz");
	struct load l = { .r = pt_open(path, NULL) };
	assert_non_null(l.r);
	uint32_t P = pt_intern(l.r, "parent");
	sections(l.r, P, PARENT_N);
	fork_under_load(&l);
	sections(l.r, P, PARENT_N);
	assert_int_equal(pt_close(l.r), 0);
	assert_false(trace_has_name(path, "child-only-name"));
	assert_false(trace_has_name(path, "child-start-name"));
	assert_false(trace_has_name(path, "child-thread-name"));
	/* the main thread's sections, every one (the load threads may fill
	 * their rings on a busy machine: losses there are counted, not errors) */
	struct tu_trace tr;
	tu_read(path, &tr);
	assert_int_equal(tr.errors, 0);
	size_t parent = 0;
	for (size_t i = 0; i < tr.nt; i++)
		for (size_t k = 0; k < tr.t[i].n; k++)
			parent += tr.t[i].recs[k].id == P && tr.t[i].recs[k].kind == PT_REC_BEGIN;
	assert_int_equal(parent, 2 * PARENT_N);
	tu_free(&tr);
}

static void test_fork_child_noop_after_parent_closed(void **state)
{
	(void)state;
	const char *path = tu_path("fork-closed.ptz");
	struct load l = { .r = pt_open(path, NULL) };
	assert_non_null(l.r);
	uint32_t P = pt_intern(l.r, "parent");
	sections(l.r, P, PARENT_N);
	assert_int_equal(pt_close(l.r), 0);
	off_t size = 0;
	struct stat sb;
	assert_int_equal(stat(path, &sb), 0);
	size = sb.st_size;
	fork_under_load(&l); /* the threads call into a closed recorder */
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_size, size);
	assert_false(trace_has_name(path, "child-only-name"));
	/* the parent can open again */
	pt_recorder *r = pt_open(tu_path("fork-closed-2.ptz"), NULL);
	assert_non_null(r);
	assert_int_equal(pt_close(r), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fork_child_noop_while_parent_records),
		cmocka_unit_test(test_fork_child_noop_after_parent_closed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
