/*
 * bench/bench_fork.c - what the recorder adds to fork() (bench/README.md).
 *
 * Times fork() as the parent sees it (from the call to its return: page
 * tables and the atfork handlers), interleaved round by round, in three
 * configurations of one process:
 *   none      no recorder open (libptz used: its atfork handlers run)
 *   open-%p   a recorder open at a "%p" path, two threads recording
 *   open      the same at a path without "%p"
 * The children exit at once (nothing recorded, no file). Then, for
 * open-%p, the cost a recording child pays once: its first pt_begin(),
 * which opens its own trace (file, preallocation, flusher thread), and its
 * pt_close(), timed in the child and sent back through a pipe.
 * Prints medians and 90th percentiles in microseconds.
 * Usage: bench-fork [--rounds N] [--forks-only] (default 200 rounds, at
 * least 10; --forks-only: no recording child, whose trace writes would
 * also slow the other rounds' forks on a small machine).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ptz/recorder.h>

enum { C_NONE, C_PID, C_PLAIN, C_N };
static const char *const cname[C_N] = { "none", "open-%p", "open" };

static _Atomic bool stop;

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void *worker(void *p)
{
	pt_recorder *r = p;
	uint32_t id = pt_intern(r, "work");
	while (!atomic_load(&stop)) {
		for (int i = 0; i < 1000; i++) {
			pt_begin(r, id);
			pt_end(r, id);
		}
		struct timespec ts = { 0, 100000 };
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* One fork as the parent sees it; the child exits at once, or, when
 * @fd >= 0, times its first record and its close and writes both (ns). */
static uint64_t one_fork(pt_recorder *r, int fd)
{
	uint64_t t0 = now_ns();
	pid_t pid = fork();
	uint64_t t1 = now_ns();
	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (pid == 0) {
		if (fd >= 0) {
			uint32_t id = pt_intern(r, "child");
			uint64_t c[2], a = now_ns();
			pt_begin(r, id);
			c[0] = now_ns() - a;
			pt_end(r, id);
			a = now_ns();
			pt_close(r);
			c[1] = now_ns() - a;
			_exit(write(fd, c, sizeof(c)) == sizeof(c) ? 0 : 1);
		}
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	return t1 - t0;
}

static void print_row(const char *name, uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(uint64_t), cmp_u64);
	printf("%-26s %10.1f %10.1f\n", name, (double)v[n / 2] / 1e3, (double)v[n * 9 / 10] / 1e3);
}

int main(int argc, char **argv)
{
	int rounds = 200, forks_only = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (strcmp(argv[i], "--forks-only") == 0)
			forks_only = 1;
		else
			rounds = 0;
	}
	if (rounds < 10) {
		fprintf(stderr, "usage: %s [--rounds N>=10] [--forks-only]\n", argv[0]);
		return 2;
	}
	char dir[] = "/tmp/ptz-bench-fork-XXXXXX";
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	char pid_path[256], plain_path[256];
	snprintf(pid_path, sizeof(pid_path), "%s/t-%%p.ptz", dir);
	snprintf(plain_path, sizeof(plain_path), "%s/plain.ptz", dir);
	uint64_t *t[C_N], *first = calloc((size_t)rounds, sizeof(uint64_t)), *closes = calloc((size_t)rounds, sizeof(uint64_t));
	for (int c = 0; c < C_N; c++)
		t[c] = calloc((size_t)rounds, sizeof(uint64_t));
	int pfd[2];
	if (pipe(pfd)) {
		perror("pipe");
		return 1;
	}
	pt_intern(NULL, "warm"); /* libptz used: its atfork handlers are registered */
	for (int i = 0; i < rounds; i++)
		for (int k = 0; k <= C_N; k++) {
			int c = (i + k) % (C_N + 1); /* interleaved, rotating order; C_N = a recording child */
			if (c == C_N && forks_only)
				continue;
			if (c == C_NONE) {
				t[c][i] = one_fork(NULL, -1);
				continue;
			}
			pt_recorder *r = pt_open(c == C_PLAIN ? plain_path : pid_path, NULL, 0);
			if (!r) {
				perror("pt_open");
				return 1;
			}
			atomic_store(&stop, false);
			pthread_t th[2];
			for (int j = 0; j < 2; j++)
				pthread_create(&th[j], NULL, worker, r);
			struct timespec ts = { 0, 2000000 };
			nanosleep(&ts, NULL);
			if (c < C_N) {
				t[c][i] = one_fork(r, -1);
			} else {
				uint64_t v[2] = { 0, 0 };
				one_fork(r, pfd[1]);
				if (read(pfd[0], v, sizeof(v)) != sizeof(v)) {
					fprintf(stderr, "the recording child failed\n");
					return 1;
				}
				first[i] = v[0];
				closes[i] = v[1];
			}
			atomic_store(&stop, true);
			for (int j = 0; j < 2; j++)
				pthread_join(th[j], NULL);
			pt_close(r);
		}
	printf("fork() in the parent (call to return), %d interleaved rounds, microseconds\n", rounds);
	printf("%-26s %10s %10s\n", "", "median", "p90");
	for (int c = 0; c < C_N; c++)
		print_row(cname[c], t[c], rounds);
	if (!forks_only) {
		printf("recording child (open-%%p), once:\n");
		print_row("  first pt_begin (opens)", first, rounds);
		print_row("  pt_close", closes, rounds);
	}
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : 1;
}
