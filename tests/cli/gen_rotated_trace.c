/*
 * tests/cli/gen_rotated_trace.c PATH ROTATE_BYTES N - two threads record N
 * iterations each (an "outer" section holding an "inner" one, a counter, four
 * pseudo-random samples of another, a metric) into PATH, rotated into parts of ROTATE_BYTES (0: one file).
 * The same N gives the same sections whatever the rotation: what
 * tests/cli/check_rotate.py compares. pt_flush() every 20,000 iterations
 * keeps the flusher ahead, so nothing is lost on a slow build. Exit 0, or 1
 * with a message.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptz/recorder.h"

static pt_recorder *rec;
static long per_thread;
static uint32_t id_outer, id_inner, id_count, id_noise;

static void *worker(void *arg)
{
	uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(uintptr_t)arg; /* xorshift64: the same values every run */
	for (long i = 0; i < per_thread; i++) {
		pt_begin(rec, id_outer);
		pt_counter(rec, id_count, i);
		for (int k = 0; k < 4; k++) { /* incompressible samples: ~40 bytes an iteration, parts in few sections */
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			pt_counter(rec, id_noise, (int64_t)x);
		}
		pt_begin(rec, id_inner);
		pt_metric(rec, PT_METRIC_FLOPS, 1000);
		pt_end(rec, id_inner);
		pt_end(rec, id_outer);
		if (i % 20000 == 19999)
			pt_flush(rec);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: gen-rotated-trace PATH ROTATE_BYTES N\n");
		return 2;
	}
	struct pt_options o = { .rotate_bytes = strtoull(argv[2], NULL, 10) };
	per_thread = atol(argv[3]);
	rec = pt_open(argv[1], &o, sizeof(o));
	if (!rec) {
		fprintf(stderr, "gen-rotated-trace: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	id_outer = pt_intern(rec, "outer");
	id_inner = pt_intern(rec, "inner");
	id_count = pt_intern(rec, "iteration");
	id_noise = pt_intern(rec, "noise");
	pthread_t th[2];
	for (int t = 0; t < 2; t++)
		pthread_create(&th[t], NULL, worker, (void *)(uintptr_t)(t + 1));
	for (int t = 0; t < 2; t++)
		pthread_join(th[t], NULL);
	struct pt_stats_info st;
	pt_stats(rec, &st, sizeof(st));
	int rc = pt_close(rec);
	if (rc || st.lost_records) {
		fprintf(stderr, "gen-rotated-trace: close %d, %llu records lost\n", rc, (unsigned long long)st.lost_records);
		return 1;
	}
	printf("%llu\n", (unsigned long long)st.parts);
	return 0;
}
