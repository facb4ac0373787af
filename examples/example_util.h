/*
 * examples/example_util.h - helpers the example programs share (C and
 * CUDA C++). Not part of ptz: the examples use only ptz/recorder.h.
 */
#ifndef PTZ_EXAMPLE_UTIL_H
#define PTZ_EXAMPLE_UTIL_H

#include <errno.h>  /* errno */
#include <sched.h>  /* sched_getaffinity, CPU_COUNT (_GNU_SOURCE) */
#include <stdlib.h> /* strtol */
#include <time.h>   /* clock_gettime */
#include <unistd.h> /* sysconf */

/* An option's integer in [1, @hi]: 0 with *@out set, or -1 (not a number, or out of range). */
static inline int parse_pos(const char *s, int hi, int *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < 1 || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

/* CLOCK_MONOTONIC in seconds (the examples' own timings, independent of ptz). */
static inline double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The default worker count: the CPUs this process may run on (its affinity
 * mask, else the online CPUs), less @main_cpus when the main thread records
 * sections around the workers' run (it then counts as alive all along), in
 * [1, @most]. More threads alive than CPUs would make the demo's first
 * finding its own oversubscription. */
static inline int default_threads(int most, int main_cpus)
{
	cpu_set_t set;
	long n = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : sysconf(_SC_NPROCESSORS_ONLN);
	n -= main_cpus;
	return n < 1 ? 1 : n > most ? most : (int)n;
}

#endif /* PTZ_EXAMPLE_UTIL_H */
