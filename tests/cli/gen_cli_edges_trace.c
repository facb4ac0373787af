/*
 * tests/cli/gen_cli_edges_trace.c OUT.ptz - a real trace (the recorder's own
 * writer) for the CLI edge-case checks (check_cli_edges.sh): section names holding
 * CSV and JSON specials (comma, double quote, CR, LF, a control byte, DEL,
 * a byte that is not UTF-8), a recursion 600 levels deep (deeper than any
 * fixed path buffer), and enough sections on the main thread for payloads
 * large enough to be zstd-compressed (doc/trace-format.md §3.3), in several
 * chunks (bursts 30 ms apart, flushed every 10 ms).
 *
 * gen_cli_edges_trace OUT.ptz --noend N: a loop of N iterations whose section
 * "step" is never ended (a common bug), so every later one nests below
 * it: a call tree N levels deep, each level with a closed "inner".
 * gen_cli_edges_trace OUT.ptz --deep N: a recursion N levels deep, every
 * section ended.
 * gen_cli_edges_trace OUT.ptz --wide N: N distinct names ("w0" .. "wN-1"),
 * each one section at the top level: N call paths, N flat rows.
 * gen_cli_edges_trace OUT.ptz --cmp-base N | --cmp-new N: for ptanalyze
 * compare, N iterations of "iter" { "steady": 100 us; "slower": 200 us
 * (base) or 2 ms (new) }, each spent spinning on the thread's CPU clock: a
 * section lasts at least that long whatever the load, and preemption only
 * lengthens some of them, so the medians stay about 10x apart. (Sleeps do
 * not: on a loaded virtual machine a 200 us nanosleep was seen to take
 * 12 ms, which hid the difference.)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ptz/recorder.h>

static const char *const names[] = { "comma,name", "quote\"name", "line\nfeed", "carriage\rreturn",
				     "ctl\x01" "byte", "del\x7f" "byte", "bad\xff" "utf8", "plain" };
enum { NNAMES = sizeof(names) / sizeof(names[0]), DEEP = 600, BURSTS = 4, LOOPS = 5000 };

/* Spins until the calling thread has used @us microseconds of CPU time. */
static void spin_cpu_us(long us)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	do
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000 + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

int main(int argc, char **argv)
{
	int noend = argc == 4 && strcmp(argv[2], "--noend") == 0, deep = argc == 4 && strcmp(argv[2], "--deep") == 0;
	int wide = argc == 4 && strcmp(argv[2], "--wide") == 0;
	int cmp_base = argc == 4 && strcmp(argv[2], "--cmp-base") == 0, cmp_new = argc == 4 && strcmp(argv[2], "--cmp-new") == 0;
	if (argc != 2 && !noend && !deep && !wide && !cmp_base && !cmp_new) {
		fprintf(stderr, "usage: %s OUT.ptz [--noend N | --deep N | --wide N | --cmp-base N | --cmp-new N]\n",
			argv[0]);
		return 2;
	}
	const struct pt_options opt = { .ring_bytes = 64u << 20, .flush_interval_ms = 10, .process_name = "cli-edges-gen" };
	pt_recorder *r = pt_open(argv[1], &opt, sizeof(opt));
	if (!r) {
		perror(argv[1]);
		return 1;
	}
	if (noend) {
		uint32_t step = pt_intern(r, "step"), inner = pt_intern(r, "inner");
		for (long i = 0, n = atol(argv[3]); i < n; i++) {
			pt_begin(r, step); /* the bug: no pt_end(r, step) */
			pt_begin(r, inner);
			pt_end(r, inner);
		}
		return pt_close(r) ? 1 : 0;
	}
	if (cmp_base || cmp_new) {
		uint32_t iter = pt_intern(r, "iter"), steady = pt_intern(r, "steady"), slower = pt_intern(r, "slower");
		for (long i = 0, n = atol(argv[3]); i < n; i++) {
			pt_begin(r, iter);
			pt_begin(r, steady);
			spin_cpu_us(100);
			pt_end(r, steady);
			pt_begin(r, slower);
			spin_cpu_us(cmp_new ? 2000 : 200);
			pt_end(r, slower);
			pt_end(r, iter);
		}
		return pt_close(r) ? 1 : 0;
	}
	if (wide) {
		for (long i = 0, n = atol(argv[3]); i < n; i++) {
			char name[32];
			snprintf(name, sizeof(name), "w%ld", i);
			uint32_t id = pt_intern(r, name);
			pt_begin(r, id);
			pt_end(r, id);
		}
		return pt_close(r) ? 1 : 0;
	}
	if (deep) {
		uint32_t id = pt_intern(r, "rec");
		long n = atol(argv[3]);
		for (long i = 0; i < n; i++)
			pt_begin(r, id);
		for (long i = 0; i < n; i++)
			pt_end(r, id);
		return pt_close(r) ? 1 : 0;
	}
	uint32_t ids[NNAMES];
	for (int i = 0; i < NNAMES; i++)
		ids[i] = pt_intern(r, names[i]);
	uint32_t root = pt_intern(r, "root"), rec = pt_intern(r, "rec");
	pt_begin(r, root);
	for (int b = 0; b < BURSTS; b++) {
		for (int i = 0; i < LOOPS; i++) {
			pt_begin(r, ids[i % NNAMES]);
			pt_end(r, ids[i % NNAMES]);
		}
		nanosleep(&(struct timespec){ .tv_nsec = 30 * 1000 * 1000 }, NULL);
	}
	for (int d = 0; d < DEEP; d++)
		pt_begin(r, rec);
	for (int d = 0; d < DEEP; d++)
		pt_end(r, rec);
	pt_end(r, root);
	return pt_close(r) ? 1 : 0;
}
