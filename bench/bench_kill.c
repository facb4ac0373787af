/*
 * bench/bench_kill.c - what a SIGKILL costs a recording process: the age of
 * the newest record of each thread that is in the file, at the kill
 * (bench/README.md, "bench-kill").
 *
 * Each trial forks a child that opens a recorder (default settings, or
 * PTZ_FLUSH_MS), records on a quiet thread (one section every 100 us,
 * sleeping between) and on 0, 1 or 2 busy threads (sections in a tight
 * loop); every record carries, as a metric, CLOCK_MONOTONIC at the moment
 * it was made (busy threads: every 64th section). The parent kills the
 * child at a random moment 30-80 ms after it started recording, reads the
 * trace back, and takes kill time - newest metric of each thread. Printed:
 * median, p99 and max over the trials, per scenario, for the quiet thread
 * and for the worst busy thread. The quiet thread's figure includes up to
 * one of its periods (~0.1-0.2 ms).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ptz/format.h"
#include "ptz/recorder.h"

#define BUSY_MAX 2
#define PROBE_US 100

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct shared {
	_Atomic int ready;
};

static pt_recorder *rec;
static uint32_t sec_id;

static void *busy(void *p)
{
	(void)p;
	for (uint64_t i = 0;; i++) {
		pt_begin(rec, sec_id);
		if ((i & 63) == 0)
			pt_metric(rec, PT_METRIC_FLOPS, mono_ns());
		pt_end(rec, sec_id);
	}
	return NULL;
}

static _Noreturn void child(const char *path, int nbusy, struct shared *sh)
{
	rec = pt_open(path, NULL, 0);
	if (!rec)
		_exit(3);
	sec_id = pt_intern(rec, "bench-kill");
	/* the quiet thread (this one) records first: thread index 0 */
	pt_begin(rec, sec_id);
	pt_metric(rec, PT_METRIC_FLOPS, mono_ns());
	pt_end(rec, sec_id);
	for (int b = 0; b < nbusy; b++) {
		pthread_t th;
		if (pthread_create(&th, NULL, busy, NULL))
			_exit(4);
	}
	atomic_store(&sh->ready, 1);
	for (;;) {
		pt_begin(rec, sec_id);
		pt_metric(rec, PT_METRIC_FLOPS, mono_ns());
		pt_end(rec, sec_id);
		struct timespec ts = { 0, PROBE_US * 1000 };
		nanosleep(&ts, NULL);
	}
}

/* Newest metric per thread index [0, BUSY_MAX]; 0 when none. */
static int newest(const char *path, uint64_t out[BUSY_MAX + 1])
{
	memset(out, 0, sizeof(uint64_t) * (BUSY_MAX + 1));
	struct pt_reader *rd;
	if (pt_reader_open(path, &rd) != 0) {
		fprintf(stderr, "bench-kill: %s: %s\n", path, pt_reader_errmsg(rd));
		pt_reader_close(rd);
		return -1;
	}
	struct pt_chunk_info ci;
	struct pt_record rec1;
	while (pt_reader_next_chunk(rd, PT_READER_ALL_CHUNKS, &ci, sizeof(ci)) == 1) {
		if (ci.thread > BUSY_MAX)
			continue;
		while (pt_reader_next_record(rd, &rec1, sizeof(rec1)) == 1)
			if (rec1.kind == PT_REC_METRIC && rec1.value > out[ci.thread])
				out[ci.thread] = rec1.value;
	}
	pt_reader_close(rd);
	return 0;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static void print_row(const char *scen, const char *who, uint64_t *v, int n)
{
	if (n == 0)
		return;
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	int p99 = (int)((n - 1) * 99 / 100);
	printf("%-22s %-6s %8.2f %8.2f %8.2f\n", scen, who, v[(n - 1) / 2] / 1e6, v[p99] / 1e6, v[n - 1] / 1e6);
}

int main(int argc, char **argv)
{
	int trials = 100;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0)
			trials = 20;
		else if (strcmp(argv[i], "--trials") == 0 && i + 1 < argc)
			trials = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: bench-kill [--quick] [--trials N]\n");
			return 2;
		}
	}
	if (trials < 1)
		trials = 1;
	const char *tmp = getenv("TMPDIR");
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/bench-kill-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	const char *fms = getenv("PTZ_FLUSH_MS");
	printf("bench-kill: kill time - newest record of a thread in the file, %d kills per scenario\n", trials);
	printf("flush interval %s ms, %ld CPUs online\n", fms && *fms ? fms : "10 (default)", sysconf(_SC_NPROCESSORS_ONLN));
	printf("%-22s %-6s %8s %8s %8s\n", "scenario", "thread", "median", "p99", "max");
	uint64_t *quiet = calloc((size_t)trials, sizeof(uint64_t)), *worst = calloc((size_t)trials, sizeof(uint64_t));
	if (!quiet || !worst)
		return 1;
	int failed = 0;
	for (int nbusy = 0; nbusy <= BUSY_MAX; nbusy++) {
		int n = 0;
		for (int t = 0; t < trials; t++) {
			char path[4200];
			snprintf(path, sizeof(path), "%s/kill-%d-%d.ptz", dir, nbusy, t);
			atomic_store(&sh->ready, 0);
			fflush(stdout);
			pid_t pid = fork();
			if (pid < 0)
				return 1;
			if (pid == 0)
				child(path, nbusy, sh);
			while (!atomic_load(&sh->ready)) {
				int st;
				if (waitpid(pid, &st, WNOHANG) == pid) {
					fprintf(stderr, "bench-kill: child exited early (status %d)\n", st);
					return 1;
				}
				struct timespec ts = { 0, 200000 };
				nanosleep(&ts, NULL);
			}
			const uint64_t ready_ns = mono_ns();
			uint64_t delay_us = 30000 + next_rand() % 50000;
			struct timespec ts = { 0, (long)delay_us * 1000 };
			nanosleep(&ts, NULL);
			uint64_t kill_ns = mono_ns();
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			uint64_t nw[BUSY_MAX + 1];
			if (newest(path, nw) != 0) {
				failed++;
				unlink(path);
				continue;
			}
			/* a thread with no record in the file lost at least the whole
			 * run since the child said it was ready */
			quiet[n] = nw[0] && nw[0] <= kill_ns ? kill_ns - nw[0] : kill_ns - ready_ns;
			worst[n] = 0;
			for (int b = 1; b <= nbusy; b++) {
				uint64_t s = nw[b] && nw[b] <= kill_ns ? kill_ns - nw[b] : kill_ns - ready_ns;
				if (s > worst[n])
					worst[n] = s;
			}
			n++;
			unlink(path);
		}
		char scen[64];
		snprintf(scen, sizeof(scen), nbusy ? "%d busy + 1 quiet" : "idle (1 quiet)", nbusy);
		print_row(scen, "quiet", quiet, n);
		if (nbusy)
			print_row(scen, "busy", worst, n);
	}
	rmdir(dir);
	free(quiet);
	free(worst);
	if (failed)
		printf("%d trials left no readable trace\n", failed);
	printf("(milliseconds)\n");
	return failed ? 1 : 0;
}
