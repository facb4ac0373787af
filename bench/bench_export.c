/*
 * bench/bench_export.c - Perfetto export throughput and memory, end to end
 * (issue 4: >= 5 M events/s on one core; memory constant in the number of
 * events).
 *
 * For each size, a child process records a trace with libptz (2 threads,
 * 100 names, nesting walk to depth 8, a metric on every 8th section, so 1
 * END in 8 goes through protobuf-c with debug annotations and the rest
 * through the hand encoder), then another child runs pfx_write_perfetto()
 * from the .ptz to a .pftrace file (reading, decoding, tick conversion,
 * encoding and writing included) and reports wall time, CPU time and peak
 * RSS. Events = slice BEGINs + ENDs written. Prints a table; not a test.
 *
 * usage: bench-export [--quick] [--keep]
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ptz/recorder.h"
#include "viewer-export/pfx.h"

#define THREADS 2
#define NAMES 100
#define MAX_DEPTH 8

static pt_recorder *R;
static uint32_t ids[NAMES];
static uint64_t per_thread_sections;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t xs(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *producer(void *arg)
{
	uint64_t s = 0x9e3779b97f4a7c15ull * ((uintptr_t)arg + 1), done = 0;
	uint32_t stack[MAX_DEPTH];
	int depth = 0;
	while (done < per_thread_sections) {
		uint64_t x = xs(&s);
		if (depth < 2 || (depth < MAX_DEPTH && (x & 1))) {
			stack[depth++] = ids[(x >> 8) % NAMES];
			pt_begin(R, stack[depth - 1]);
		} else {
			if (((x >> 20) & 7) == 0)
				pt_metric(R, PT_METRIC_FLOPS, (x >> 24) & 0xffff);
			pt_end(R, stack[--depth]);
			done++;
			if ((done & 1023) == 0) { /* keep the flusher ahead: no losses */
				struct timespec ts = { 0, 500000 };
				nanosleep(&ts, NULL);
			}
		}
	}
	while (depth)
		pt_end(R, stack[--depth]);
	return NULL;
}

static int record(const char *path, uint64_t sections)
{
	R = pt_open(path, NULL, 0);
	if (!R) {
		perror("pt_open");
		return 1;
	}
	for (int i = 0; i < NAMES; i++) {
		char n[32];
		snprintf(n, sizeof(n), "section-%03d", i);
		ids[i] = pt_intern(R, n);
	}
	per_thread_sections = sections / THREADS;
	pthread_t t[THREADS];
	for (uintptr_t i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, producer, (void *)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	struct pt_stats_info st;
	pt_close(R);
	pt_stats(R, &st, sizeof(st));
	fprintf(stderr, "  recorded %s: %llu records, %llu lost\n", path, (unsigned long long)st.records,
		(unsigned long long)st.lost_records);
	return 0;
}

struct result {
	double wall, cpu;
	long maxrss_kb;
	long long out_bytes;
};

static int export_child(const char *path, int fd)
{
	char out[300], err[256];
	snprintf(out, sizeof(out), "%s.pftrace", path);
	FILE *f = fopen(out, "wb");
	if (!f)
		return 1;
	struct pfx_opts o = { .since_ns = 0 };
	double t0 = now_s();
	int rc = pfx_write_perfetto(path, f, &o, err, sizeof(err));
	fclose(f);
	struct result r = { .wall = now_s() - t0 };
	if (rc) {
		fprintf(stderr, "pfx_write_perfetto: %s\n", err);
		return 1;
	}
	struct rusage ru;
	struct stat sb;
	getrusage(RUSAGE_SELF, &ru);
	r.cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
		ru.ru_stime.tv_usec / 1e6;
	r.maxrss_kb = ru.ru_maxrss;
	r.out_bytes = stat(out, &sb) ? -1 : (long long)sb.st_size;
	return write(fd, &r, sizeof(r)) == (ssize_t)sizeof(r) ? 0 : 1;
}

int main(int argc, char **argv)
{
#ifndef __OPTIMIZE__
	fprintf(stderr, "bench-export: built without optimization; use the default debugoptimized build\n");
	return 2;
#endif
	int quick = 0, keep = 0;
	for (int i = 1; i < argc; i++) {
		quick |= strcmp(argv[i], "--quick") == 0;
		keep |= strcmp(argv[i], "--keep") == 0;
	}
	char dir[] = "/tmp/ptz-bench-export-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	const uint64_t sizes[2] = { quick ? 500000 : 2000000, quick ? 2500000 : 10000000 }; /* sections */
	printf("%-12s %-10s %-9s %-9s %-12s %-10s %-11s\n", "sections", "events", "wall_s", "cpu_s", "M events/s",
	       "B/event", "maxrss_MB");
	for (int i = 0; i < 2; i++) {
		char path[256];
		snprintf(path, sizeof(path), "%s/trace-%llu.ptz", dir, (unsigned long long)sizes[i]);
		pid_t p = fork();
		if (p == 0)
			_exit(record(path, sizes[i]));
		int st;
		waitpid(p, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			return 1;
		int fds[2];
		if (pipe(fds))
			return 1;
		p = fork();
		if (p == 0) {
			close(fds[0]);
			_exit(export_child(path, fds[1]));
		}
		close(fds[1]);
		struct result r;
		waitpid(p, &st, 0);
		if (read(fds[0], &r, sizeof(r)) != (ssize_t)sizeof(r))
			return 1;
		close(fds[0]);
		const double events = 2.0 * (double)sizes[i];
		printf("%-12llu %-10.0f %-9.3f %-9.3f %-12.2f %-10.2f %-11.1f\n", (unsigned long long)sizes[i], events,
		       r.wall, r.cpu, events / r.wall / 1e6, (double)r.out_bytes / events, r.maxrss_kb / 1024.0);
		if (!keep) {
			char out[300];
			snprintf(out, sizeof(out), "%s.pftrace", path);
			unlink(out);
			unlink(path);
		}
	}
	if (!keep)
		rmdir(dir);
	else
		printf("kept in %s\n", dir);
	return 0;
}
