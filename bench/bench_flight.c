/*
 * bench/bench_flight.c - the flight recorder at length (bench/README.md,
 * "bench-flight"): a 64 MiB area (PTZ_FLIGHT_BYTES, or --area) under one
 * producer at a steady high rate for --seconds (default 600; --quick 5),
 * then snapshot latency, then SIGKILLs at random moments.
 *
 * 1. steady: every second, the file's size and the process RSS (statm):
 *    the file never above header + area, RSS flat once the rings are
 *    allocated; bytes written (pt_stats) against the file; losses.
 * 2. hot path: the begin/end pair in the flight recorder (its window
 *    full) and in stream recorders, one process, with two clock_gettime()
 *    reads beside them for scale (bench-recorder has the tick-read ratio).
 * 3. snapshot latency for a full window: pt_snapshot() return, and
 *    PTZ_SNAPSHOT_SIGNAL (SIGUSR2 raised) to a closed, readable file;
 *    median and max of 5 each; each snapshot checked to read clean.
 * 4. SIGKILL: --kills children (default 20) record in flight mode with a
 *    1 MiB area and are killed 50-250 ms in; each file must open with no
 *    problem.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ptz/format.h"
#include "ptz/recorder.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t file_size(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static uint64_t rss_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long a = 0, b = 0;
	if (f) {
		if (fscanf(f, "%lu %lu", &a, &b) != 2)
			b = 0;
		fclose(f);
	}
	return (uint64_t)b * (uint64_t)sysconf(_SC_PAGESIZE);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* 0 if @path opens as a closed trace with no problem. */
static int clean(const char *path, int want_closed)
{
	struct pt_reader *r;
	int rc = pt_reader_open(path, &r);
	if (rc) {
		pt_reader_close(r);
		return -1;
	}
	int bad = pt_reader_problem_count(r) != 0 || (want_closed && !pt_reader_info(r)->closed);
	pt_reader_close(r);
	return bad ? -1 : 0;
}

static void burst(pt_recorder *r, uint32_t id, long n)
{
	for (long i = 0; i < n; i++) {
		pt_begin(r, id);
		pt_end(r, id);
	}
}

/* ns per pair, median of 5 runs of @n */
static double pair_ns(pt_recorder *r, uint32_t id, long n)
{
	double v[5];
	for (int k = 0; k < 5; k++) {
		uint64_t t0 = mono_ns();
		burst(r, id, n);
		v[k] = (double)(mono_ns() - t0) / (double)n;
		pt_flush(r);
	}
	qsort(v, 5, sizeof(v[0]), cmp_dbl);
	return v[2];
}

static double ticks_ns(long n)
{
	double v[5];
	for (int k = 0; k < 5; k++) {
		uint64_t t0 = mono_ns(), s = 0;
		for (long i = 0; i < n; i++)
			s += mono_ns() ^ mono_ns();
		v[k] = (double)(mono_ns() - t0) / (double)n;
		if (s == 42)
			puts("");
	}
	qsort(v, 5, sizeof(v[0]), cmp_dbl);
	return v[2];
}

int main(int argc, char **argv)
{
	unsigned seconds = 600, kills = 20;
	uint64_t area = 64u << 20;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			seconds = 5, kills = 8, area = 4u << 20; /* wraps within the 5 s */
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--kills") && i + 1 < argc)
			kills = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--area") && i + 1 < argc)
			area = strtoull(argv[++i], NULL, 0) << 20;
		else if (!strcmp(argv[i], "--record") && i + 1 < argc) { /* part 4's child */
			struct pt_options o = { .mode = PT_MODE_FLIGHT, .flight_bytes = 1u << 20 };
			pt_recorder *r = pt_open(argv[++i], &o, sizeof(o));
			if (!r)
				return 1;
			uint32_t id = pt_intern(r, "work");
			for (;;)
				burst(r, id, 1000);
		} else {
			fprintf(stderr, "usage: bench-flight [--quick] [--seconds N] [--kills N] [--area MiB]\n");
			return 2;
		}
	}
	char dir[] = "/tmp/bench-flight-XXXXXX";
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	char path[256], snap[256], sigtmpl[256];
	snprintf(path, sizeof(path), "%s/flight.ptz", dir);
	snprintf(sigtmpl, sizeof(sigtmpl), "%s/sig-%%n.ptz", dir);
	setenv("PTZ_SNAPSHOT_SIGNAL", "USR2", 1);
	setenv("PTZ_SNAPSHOT_PATH", sigtmpl, 1);
	struct pt_options o = { .mode = PT_MODE_FLIGHT, .flight_bytes = area };
	pt_recorder *r = pt_open(path, &o, sizeof(o));
	if (!r) {
		perror("pt_open");
		return 1;
	}
	uint32_t id = pt_intern(r, "work");
	printf("bench-flight: %llu MiB area, %u s steady\n", (unsigned long long)(area >> 20), seconds);

	/* 1. steady */
	uint64_t max_file = 0, rss_min = UINT64_MAX, rss_max = 0, pairs = 0;
	const uint64_t end = mono_ns() + (uint64_t)seconds * 1000000000u;
	uint64_t next = mono_ns() + 1000000000u;
	while (mono_ns() < end) {
		burst(r, id, 100000);
		pairs += 100000;
		if (mono_ns() >= next) {
			next += 1000000000u;
			uint64_t fs = file_size(path), rs = rss_bytes();
			max_file = fs > max_file ? fs : max_file;
			if (pairs > 2000000) { /* after the first seconds: the ring is allocated */
				rss_min = rs < rss_min ? rs : rss_min;
				rss_max = rs > rss_max ? rs : rss_max;
			}
		}
	}
	struct pt_stats_info st;
	pt_flush(r);
	pt_stats(r, &st, sizeof(st));
	printf("1. steady: %.1f M pairs/s for %u s; file max %llu bytes (area + header %llu): %s\n",
	       (double)pairs / seconds / 1e6, seconds, (unsigned long long)max_file,
	       (unsigned long long)(area + 4096), max_file <= area + 4096 ? "never above" : "ABOVE");
	printf("   RSS %.1f-%.1f MiB after the first 2 M pairs; written %.1f MiB (%.1fx the area); lost %llu of %llu"
	       " records\n",
	       rss_min / 1048576.0, rss_max / 1048576.0, st.bytes_written / 1048576.0,
	       (double)st.bytes_written / (double)area, (unsigned long long)st.lost_records,
	       (unsigned long long)(st.records + st.lost_records));

	/* 2. hot path, flight vs stream, alternated */
	char spath[256];
	snprintf(spath, sizeof(spath), "%s/stream.ptz", dir);
	double fl[3], sm[3], tk[3];
	for (int k = 0; k < 3; k++) {
		tk[k] = ticks_ns(1000000);
		fl[k] = pair_ns(r, id, 1000000);
	}
	/* 3. snapshot latency, while this recorder's window is full */
	uint64_t lat[5], sig[5];
	int bad = 0;
	for (int k = 0; k < 5; k++) {
		burst(r, id, 2000000);
		snprintf(snap, sizeof(snap), "%s/snap-%d.ptz", dir, k);
		uint64_t t0 = mono_ns();
		int rc = pt_snapshot(r, snap);
		lat[k] = mono_ns() - t0;
		bad += rc != 0 || clean(snap, 1) != 0;
		char want[300];
		snprintf(want, sizeof(want), "%s/sig-%d.ptz", dir, k + 1);
		burst(r, id, 2000000);
		t0 = mono_ns();
		raise(SIGUSR2);
		while (clean(want, 1) != 0 && mono_ns() - t0 < 10000000000ull)
			usleep(200);
		sig[k] = mono_ns() - t0;
		bad += clean(want, 1) != 0;
	}
	uint64_t snap_bytes = file_size(snap);
	qsort(lat, 5, sizeof(lat[0]), cmp_u64);
	qsort(sig, 5, sizeof(sig[0]), cmp_u64);
	pt_close(r);
	for (int k = 0; k < 3; k++) {
		struct pt_options so = { .mode = PT_MODE_STREAM };
		pt_recorder *s = pt_open(spath, &so, sizeof(so));
		uint32_t sid = pt_intern(s, "work");
		sm[k] = pair_ns(s, sid, 1000000);
		pt_close(s);
		unlink(spath);
	}
	printf("2. begin+end pair, wall ns, median of 5 x 1 M, 3 rounds: flight %.1f %.1f %.1f, stream %.1f %.1f %.1f"
	       " (clock_gettime pair %.1f %.1f %.1f)\n",
	       fl[0], fl[1], fl[2], sm[0], sm[1], sm[2], tk[0], tk[1], tk[2]);
	printf("3. snapshot of a full window (%.1f MiB file): pt_snapshot() median %.1f ms max %.1f ms;"
	       " SIGUSR2 to a closed readable file median %.1f ms max %.1f ms; %d bad\n",
	       snap_bytes / 1048576.0, lat[2] / 1e6, lat[4] / 1e6, sig[2] / 1e6, sig[4] / 1e6, bad);

	/* 4. SIGKILL */
	unsigned readable = 0;
	srand(7);
	for (unsigned k = 0; k < kills; k++) {
		char kp[256];
		snprintf(kp, sizeof(kp), "%s/kill.ptz", dir);
		unlink(kp);
		pid_t pid = fork();
		if (pid == 0) {
			execl("/proc/self/exe", "bench-flight", "--record", kp, (char *)NULL);
			_exit(127);
		}
		usleep(50000 + (useconds_t)(rand() % 200000));
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		readable += clean(kp, 0) == 0;
	}
	printf("4. SIGKILL at random moments (1 MiB area): %u of %u readable with no problem\n", readable, kills);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	return bad || readable != kills || max_file > area + 4096;
}
