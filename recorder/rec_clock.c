/*
 * recorder/rec_clock.c - tick source selection and clock triples.
 *
 * Ticks are the x86-64 TSC when it is invariant (CPUID 80000007H EDX[8],
 * or the kernel chose "tsc" as its clocksource, which it does only after
 * checking stability), aarch64 cntvct_el0, else CLOCK_MONOTONIC in ns.
 * PTZ_CLOCK=monotonic forces the fallback. No calibration happens here:
 * the recorder writes (ticks, CLOCK_MONOTONIC, CLOCK_REALTIME) triples over
 * time and the format library maps ticks to ns through them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "recorder/rec_internal.h"

int rec_clock_source = PT_CLOCK_MONOTONIC;

uint64_t rec_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t rec_ticks_slow(void) { return rec_mono_ns(); }

#if defined(__x86_64__)
static int tsc_invariant(void)
{
	unsigned a, b, c, d;
	if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000007u &&
	    __get_cpuid(0x80000007u, &a, &b, &c, &d) && (d & (1u << 8)))
		return 1;
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
	if (!f)
		return 0;
	char buf[32] = { 0 };
	int ok = fgets(buf, sizeof(buf), f) && strncmp(buf, "tsc", 3) == 0;
	fclose(f);
	return ok;
}
#endif

void rec_clock_init(void)
{
	const char *e = getenv("PTZ_CLOCK");
	int src = PT_CLOCK_MONOTONIC;
	if (!(e && strcmp(e, "monotonic") == 0)) {
#if defined(__x86_64__)
		if (tsc_invariant())
			src = PT_CLOCK_TSC;
#elif defined(__aarch64__)
		src = PT_CLOCK_CNTVCT;
#endif
	}
	__atomic_store_n(&rec_clock_source, src, __ATOMIC_RELAXED);
}

void rec_clock_triple(uint64_t *ticks, uint64_t *mono, uint64_t *real, uint32_t *bracket)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 7; i++) {
		uint64_t t0 = rec_ticks();
		uint64_t m = rec_mono_ns();
		uint64_t rl = real_ns();
		uint64_t t1 = rec_ticks();
		uint64_t w = t1 - t0;
		if (w < best) {
			best = w;
			*ticks = t0 + w / 2;
			*mono = m;
			*real = rl;
		}
	}
	*bracket = best > UINT32_MAX ? UINT32_MAX : (uint32_t)best;
}
