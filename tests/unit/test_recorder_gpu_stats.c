/*
 * tests/unit/test_recorder_gpu_stats.c - pt_stats()'s GPU counts against
 * the identity recorder.h states (struct pt_stats_info): every
 * pt_gpu_begin() whose CPU section is recorded ends in exactly one of
 * gpu_ranges and gpu_dropped; one whose section is skipped (full ring:
 * lost_sections; recording disabled) is in neither GPU count.
 *
 * GPU state is process-wide, so each scenario is its own process, named
 * by argv[1]:
 *   off   PTZ_GPU=0: every GPU half is dropped (GPU_OFF); a full ring once
 *         counted a call both as dropped and as a lost section, and calls
 *         made while disabled as dropped;
 *   on    the fake CUDA runtime (tests/gpu/fake_cudart.c, as the gpu tests
 *         load it): ranges, drops and lost sections with a full ring and
 *         while disabled.
 *
 * Invariants covered, in both:
 *  - while disabled, pt_gpu_begin()/pt_gpu_end() change no count;
 *  - after pt_close(): gpu_ranges + gpu_dropped = the GPU sections in the
 *    trace (BEGIN records of their id), and, every section here being a
 *    GPU section, + lost_sections = the calls made while enabled;
 *  - GPU_RANGE records and ERROR counts in the trace match pt_stats().
 */
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "tests/test_util.h"
#include "ptz/recorder.h"

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

static bool gpu_on; /* the scenario */

static void test_gpu_stats_identity(void **state)
{
	(void)state;
	const char *path = tu_path(gpu_on ? "gpu-stats-on.ptz" : "gpu-stats-off.ptz");
	struct pt_options o = { .ring_bytes = 4096 }; /* 256 slots */
	pt_recorder *r = pt_open(path, &o, sizeof(o));
	assert_non_null(r);
	uint32_t id = pt_intern(r, "gpu-k");
	uint64_t calls = 0;
	/* warm up: the event pool fills (GPU on), the flusher drains */
	for (int i = 0; i < 50; i++, calls++) {
		pt_gpu_begin(r, id, NULL);
		pt_gpu_end(r, id, NULL);
		sleep_ms(2);
	}
	sleep_ms(100);
	/* nested deeper than the ring holds: the inner sections are lost */
	enum { DEEP = 300 };
	for (int i = 0; i < DEEP; i++, calls++)
		pt_gpu_begin(r, id, NULL);
	for (int i = 0; i < DEEP; i++)
		pt_gpu_end(r, id, NULL);
	struct pt_stats_info a, b, st;
	pt_stats(r, &a, sizeof(a));
	assert_int_equal(a.gpu_state, gpu_on ? PT_GPU_ON : PT_GPU_OFF);
	assert_true(a.lost_sections > 0);
	assert_true(a.lost_sections < DEEP);
	/* while disabled: skipped, in no count */
	pt_set_enabled(r, false);
	for (int i = 0; i < 10; i++) {
		pt_gpu_begin(r, id, NULL);
		pt_gpu_end(r, id, NULL);
	}
	sleep_ms(100); /* GPU halves begun before may resolve meanwhile: compare the sums */
	pt_stats(r, &b, sizeof(b));
	assert_int_equal(b.lost_sections, a.lost_sections);
	assert_int_equal(b.gpu_launched, a.gpu_launched);
	if (!gpu_on)
		assert_int_equal(b.gpu_dropped, a.gpu_dropped);
	pt_set_enabled(r, true);
	for (int i = 0; i < 10; i++, calls++) {
		pt_gpu_begin(r, id, NULL);
		pt_gpu_end(r, id, NULL);
	}
	assert_int_equal(pt_close(r), 0); /* resolves every GPU half, or counts it unfinished */
	pt_stats(r, &st, sizeof(st));
	struct tu_trace tr;
	tu_read(path, &tr);
	uint64_t begins = 0, ranges = 0, dropped = 0;
	for (size_t k = 0; k < tr.nt; k++)
		for (size_t i = 0; i < tr.t[k].n; i++) {
			const struct pt_record *x = &tr.t[k].recs[i];
			begins += x->kind == PT_REC_BEGIN && x->id == id;
			ranges += x->kind == PT_REC_GPU_RANGE;
			if (x->kind == PT_REC_ERROR && x->aux >= PT_ERRC_GPU_POOL_EMPTY &&
			    x->aux <= PT_ERRC_GPU_UNFINISHED && x->aux != PT_ERRC_GPU_EARLY_START)
				dropped += x->value;
		}
	print_message("# %s: calls %llu, sections %llu, ranges %llu, dropped %llu, lost sections %llu\n",
		      gpu_on ? "on" : "off", (unsigned long long)calls, (unsigned long long)begins,
		      (unsigned long long)st.gpu_ranges, (unsigned long long)st.gpu_dropped,
		      (unsigned long long)st.lost_sections);
	assert_int_equal(st.lost_records, tr.lost_records);
	assert_int_equal(st.lost_sections, tr.lost_sections);
	assert_int_equal(st.gpu_ranges, ranges);
	assert_int_equal(st.gpu_dropped, dropped);
	assert_int_equal(st.gpu_ranges + st.gpu_dropped, begins);
	assert_int_equal(st.gpu_ranges + st.gpu_dropped + st.lost_sections, calls);
	if (gpu_on)
		assert_true(st.gpu_ranges > 0);
	else
		assert_int_equal(st.gpu_ranges, 0);
	tu_free(&tr);
	unlink(path);
}

int main(int argc, char **argv)
{
	if (argc != 2 || (strcmp(argv[1], "on") != 0 && strcmp(argv[1], "off") != 0)) {
		fprintf(stderr, "usage: %s on|off\n", argv[0]);
		return 2;
	}
	gpu_on = strcmp(argv[1], "on") == 0;
	/* before the first pt_gpu_begin() */
	setenv("PTZ_CUDA_RUNTIME", FAKE_CUDART_PATH, 1);
	if (!gpu_on)
		setenv("PTZ_GPU", "0", 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gpu_stats_identity),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
