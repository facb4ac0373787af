/*
 * tests/export/browser/gen_html_trace.c OUT.ptz [--slow] - a trace for the
 * HTML page checks (check_html.py), recorded through the public API.
 *
 * What it holds:
 *  - section names that are markup: "<script>alert(1)</script>",
 *    "</script><img src=x onerror=alert(2)>", "a & b \"q\" 'r'": a page
 *    that let a name reach the parser would run or fetch something;
 *  - a call tree three levels deep (step > kernel, step > io > <names>)
 *    with FLOPs and bytes declared, so the work columns are not empty;
 *  - a counter in bytes ("heap (bytes)"), a memory series on the page, and
 *    one not in bytes ("queue depth"), drawn from the samples read again;
 *  - durations set by spinning on CLOCK_MONOTONIC: "kernel" 200 us a call,
 *    300 us with --slow (a regression compare must find), every other
 *    section the same in both runs (not a regression).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <ptz/recorder.h>

static void spin_us(unsigned us)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000ll + (b.tv_nsec - a.tv_nsec) < (long long)us * 1000);
}

int main(int argc, char **argv)
{
	if (argc < 2 || (argc == 3 && strcmp(argv[2], "--slow")) || argc > 3) {
		fprintf(stderr, "usage: gen_html_trace OUT.ptz [--slow]\n");
		return 2;
	}
	const unsigned kernel_us = argc == 3 ? 300 : 200;
	pt_recorder *r = pt_open(argv[1], NULL, 0);
	if (!r) {
		perror(argv[1]);
		return 1;
	}
	const uint32_t step = pt_intern(r, "step"), kernel = pt_intern(r, "kernel"), io = pt_intern(r, "io");
	const uint32_t evil[3] = { pt_intern(r, "<script>alert(1)</script>"),
				   pt_intern(r, "</script><img src=x onerror=alert(2)>"),
				   pt_intern(r, "a & b \"q\" 'r'") };
	const uint32_t heap = pt_intern(r, "heap (bytes)"), queue = pt_intern(r, "queue depth");
	for (int i = 0; i < 40; i++) {
		pt_begin(r, step);
		pt_counter(r, heap, (int64_t)(1 << 20) * (1 + i % 8));
		pt_counter(r, queue, i % 5);
		pt_begin(r, kernel);
		pt_metric(r, PT_METRIC_FLOPS, 1000000);
		spin_us(kernel_us);
		pt_end(r, kernel);
		pt_begin(r, io);
		pt_metric(r, PT_METRIC_READ_BYTES, 1 << 16);
		for (int k = 0; k < 3; k++) {
			pt_begin(r, evil[k]);
			spin_us(30 + 10 * (unsigned)k);
			pt_end(r, evil[k]);
		}
		pt_end(r, io);
		pt_end(r, step);
	}
	return pt_close(r) ? 1 : 0;
}
