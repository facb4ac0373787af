/*
 * bench/bench_exit.c - how long exit() takes when every thread's ring is
 * full: the atexit pt_close() of pt_default() drains them (issue 17 item 7:
 * 15-24 s at zstd levels 19-22 before the final drain was bounded).
 *
 *   PTZ_TRACE=/tmp/exit.ptz PTZ_ZSTD_LEVEL=19 build/bench/bench-exit [THREADS]
 *
 * THREADS (default 4) threads each record 300,000 two-level sections
 * (1.2 M records, more than an 8 MiB ring holds), then wait: their rings
 * stay live, so the final drain at exit has them full (at level 19 the
 * flusher cannot keep up while they record). Prints, on stderr, what was
 * written before exit and the seconds from exit() to the end of the
 * recorder's atexit handler.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <ptz/recorder.h>

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double t_exit;
static int filled;

static void report(void)
{
	fprintf(stderr, "exit drain: %.3f s\n", mono_s() - t_exit);
}

static void *work(void *arg)
{
	pt_recorder *r = arg;
	const uint32_t outer = pt_intern(r, "outer"), inner = pt_intern(r, "inner");
	for (long i = 0; i < 300000; i++) {
		pt_begin(r, outer);
		pt_begin(r, inner);
		pt_end(r, inner);
		pt_end(r, outer);
	}
	__atomic_fetch_add(&filled, 1, __ATOMIC_RELEASE);
	for (;;)
		pause(); /* the ring stays this thread's: exit() drains it */
	return NULL;
}

int main(int argc, char **argv)
{
	const int n = argc > 1 ? atoi(argv[1]) : 4;
	if (n < 1 || n > 64) {
		fprintf(stderr, "usage: PTZ_TRACE=FILE [PTZ_ZSTD_LEVEL=N] bench-exit [THREADS 1..64]\n");
		return 2;
	}
	atexit(report); /* registered first: runs after pt_default()'s pt_close() */
	pt_recorder *r = pt_default();
	if (!r) {
		fprintf(stderr, "bench-exit: set PTZ_TRACE (pt_default() opened nothing)\n");
		return 2;
	}
	pthread_t t[64];
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, work, r) != 0)
			return 1;
	while (__atomic_load_n(&filled, __ATOMIC_ACQUIRE) < n)
		usleep(1000);
	struct pt_stats_info st;
	pt_stats(r, &st, sizeof(st));
	fprintf(stderr, "before exit: %llu records written, %llu lost, %llu bytes\n", (unsigned long long)st.records,
		(unsigned long long)st.lost_records, (unsigned long long)st.bytes_written);
	t_exit = mono_s();
	exit(0);
}
