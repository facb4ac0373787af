/*
 * tests/export/chrome/gen_edge_trace.c OUT.ptz [--bad-utf8] - writes a trace
 * with chosen ticks for the Chrome JSON and folded-stack checks
 * (check_exports.py).
 *
 * What it exercises:
 *  - 1/3 ns per tick at a large CLOCK_MONOTONIC offset (uptime ~5.8 days):
 *    ends one tick apart round to the same nanosecond, so nested sections
 *    end "together" and the exported ts + dur must still nest exactly;
 *  - thousands of randomly nested sections (deterministic PRNG), zero-length
 *    ones included;
 *  - names with ';', a newline, a tab, a quote, an empty name, UTF-8 and a
 *    with --bad-utf8, a byte that is not UTF-8 (the analyzer's JSON, which
 *    the check compares against, cannot carry that name);
 *  - an END with nothing open, an END that closes a deeper section, and a
 *    section still open at the end;
 *  - a thread with no tid and no name (tid 0, "").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace-format/fmt_internal.h"

#define T0 3000000000000ull        /* ticks at pt_open */
#define MONO0 500000000000000ull   /* CLOCK_MONOTONIC ns at T0 */

static const char *names[] = { NULL, "main", "semi;colon", "new\nline", "tab\there", "quote\"q",
			       "", "\xc3\xbcn\xc3\xaf", "plain byte", "leaf", "loop", "open" };
enum { NNAMES = sizeof(names) / sizeof(names[0]) };

static uint8_t buf[1 << 20];
static uint64_t seq[2];

static int flush(struct fmt_writer *w, struct fmt_enc *e, uint8_t kind, uint32_t thread)
{
	const struct fmt_chunk_hdr h = {
		.kind = kind,
		.thread = thread,
		.records = e->records,
		.sequence = thread == PT_FMT_META_THREAD ? 0 : seq[thread]++,
		.first_ticks = e->first_ticks,
		.last_ticks = e->last_ticks,
	};
	int rc = fmt_writer_append(w, &h, buf, (size_t)(e->pos - buf), 3);
	fmt_enc_reset(e, buf, sizeof(buf));
	return rc;
}

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

/*
 * Random nested sections. A first child starts 0..2 ticks after its parent,
 * a last child ends 0..2 ticks before it (often the same ns: ends tie);
 * a later sibling starts at least 3 ticks (1 ns) after the previous one
 * ended, so that a zero-length section never shares its nanosecond with
 * the start of its next sibling: in ns, the export could not tell it from a
 * child of that sibling, and the check rebuilds paths from the export.
 */
static void tree(struct fmt_enc *e, uint64_t *t, int depth)
{
	int kids = depth < 5 ? (int)rnd(4) : 0;
	for (int i = 0; i < kids; i++) {
		uint32_t id = 2 + rnd(NNAMES - 3); /* not "main", not "open" */
		*t += (i ? 3 : 0) + rnd(3);
		fmt_enc_begin(e, *t, id);
		tree(e, t, depth + 1);
		*t += rnd(3);
		fmt_enc_end(e, *t, id);
	}
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "--bad-utf8"))) {
		fprintf(stderr, "usage: %s OUT.ptz [--bad-utf8]\n", argv[0]);
		return 2;
	}
	if (argc == 3)
		names[8] = "bad\xff byte";
	const struct fmt_writer_hdr hd = {
		.clock_source = PT_CLOCK_TSC, .pid = 777, .start_ticks = T0, .start_mono_ns = MONO0,
		.start_real_ns = 1700000000000000000ull, .process_name = "edge-gen", .host = "testhost",
		.cmdline = "gen_edge_trace", .recorder_version = "ptz-test 1",
	};
	struct fmt_writer *w;
	struct fmt_enc e;
	if (fmt_writer_open(argv[1], &hd, &w))
		return 1;
	fmt_enc_reset(&e, buf, sizeof(buf));
	fmt_enc_domain(&e, 1, "gpu", 3);
	for (uint32_t id = 1; id < NNAMES; id++)
		fmt_enc_string(&e, id, id == 9, names[id], strlen(names[id]));
	fmt_enc_thread(&e, 0, 300, T0, 0, "main", 4);
	fmt_enc_thread(&e, 1, 0, T0, 0, "", 0);
	/* 3 ticks per ns */
	fmt_enc_clock(&e, T0, MONO0, 1700000000000000000ull, 1);
	fmt_enc_clock(&e, T0 + 3000000000ull, MONO0 + 1000000000ull, 1700000001000000000ull, 1);
	if (flush(w, &e, FMT_CHUNK_META, PT_FMT_META_THREAD))
		return 1;
	for (uint32_t th = 0; th < 2; th++) {
		uint64_t t = T0 + 10;
		fmt_enc_end(&e, t, 10);         /* nothing open: skipped */
		fmt_enc_begin(&e, ++t, 1);      /* main */
		for (int round = 0; round < 40; round++) {
			t += 3;
			fmt_enc_begin(&e, t, 10);       /* loop */
			tree(&e, &t, 0);
			fmt_enc_end(&e, t, 10);
			if (round % 10 == 9 && flush(w, &e, FMT_CHUNK_EVENTS, th))
				return 1;
		}
		/* leaf left open inside loop: the END of loop closes it too */
		t += 3;
		fmt_enc_begin(&e, t, 10);
		fmt_enc_begin(&e, ++t, 9);
		fmt_enc_end(&e, ++t, 10);
		fmt_enc_end(&e, ++t, 1);        /* main */
		fmt_enc_begin(&e, t + 5, 11);   /* open at the end */
		if (flush(w, &e, FMT_CHUNK_EVENTS, th))
			return 1;
	}
	return fmt_writer_close(w) ? 1 : 0;
}
