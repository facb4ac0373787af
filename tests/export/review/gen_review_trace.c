/*
 * tests/export/review/gen_review_trace.c OUT.ptz CASE - writes one small
 * trace with chosen ticks (1 tick = 1 ns, CLOCK_MONOTONIC source unless
 * said otherwise) for the export review checks (check_review.py).
 *
 * Cases:
 *  - backwards: a thread whose second chunk starts earlier than the first
 *    chunk ended (a TSC that is not synchronized across cores: the writer
 *    clamps ticks within a chunk, not across chunks), with an END earlier
 *    than its own BEGIN and a section that begins earlier than its parent;
 *  - since: 2.5 ticks per ns (TSC clock), a section starting one tick before
 *    --since 1 ns (tick 2.5) and one starting right after it, so a window's
 *    first tick must be rounded up as the analyzer does;
 *  - lost-tid: besides "worker", two threads whose tid was lost (tid 0 in
 *    the thread table): index 1 unnamed, index 5 named "io"; a section on
 *    each, and an async range begun on thread 1 and ended on thread 5, so
 *    both exports must make up the same tid for each, in the thread tracks,
 *    the slices and the async range's begin and end;
 *  - pairs: keys used twice (replay/pair.h, rule 9), on "worker", "helper"
 *    and "ptz-gpu", the ptz-gpu and helper chunks first in the file: seq 5
 *    launched twice and its two GPU ranges (200 ns, then 500 ns) read
 *    before either launch; seq 6 once (100 ns); seq 7 launched, never
 *    resolved; seq 8 resolved, never launched; a range with seq 0; async
 *    id 9 begun twice on worker and ended twice on helper (100 ns each,
 *    both ends read first); ids 0 and 12 begun, never ended; id 11 ended
 *    without a begin.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace-format/fmt_internal.h"

#define T0 1000000000ull   /* ticks at pt_open */
#define MONO0 T0           /* CLOCK_MONOTONIC ns at T0 (clock_source 3: ticks are ns) */

static uint8_t buf[1 << 16];
static uint64_t seq[8]; /* per thread index */

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

static const char *const names[] = { NULL, "outer", "inner", "early", "after", "plain", "gemm", "fetch" };
enum { NNAMES = sizeof(names) / sizeof(names[0]) };

static int meta(struct fmt_writer *w, struct fmt_enc *e, int tsc, int lost, int pairs)
{
	fmt_enc_reset(e, buf, sizeof(buf));
	for (uint32_t id = 1; id < NNAMES; id++)
		fmt_enc_string(e, id, 0, names[id], strlen(names[id]));
	fmt_enc_thread(e, 0, 4321, T0, 0, "worker", 6);
	if (lost) {
		fmt_enc_thread(e, 1, 0, T0, 0, "", 0);
		fmt_enc_thread(e, 5, 0, T0, 0, "io", 2);
	}
	if (pairs) {
		fmt_enc_thread(e, 1, 4322, T0, 0, "helper", 6);
		fmt_enc_thread(e, 2, 4323, T0, 0, PT_FMT_GPU_THREAD_NAME, strlen(PT_FMT_GPU_THREAD_NAME));
	}
	if (tsc) { /* 2.5 ticks per ns */
		fmt_enc_clock(e, T0, MONO0, 1700000000000000000ull, 1);
		fmt_enc_clock(e, T0 + 2500000000ull, MONO0 + 1000000000ull, 1700000001000000000ull, 1);
	}
	return flush(w, e, FMT_CHUNK_META, PT_FMT_META_THREAD);
}

static int case_backwards(struct fmt_writer *w, struct fmt_enc *e)
{
	const uint64_t t = T0 + 1000;
	fmt_enc_begin(e, t, 1);        /* outer */
	fmt_enc_begin(e, t + 1000, 2); /* inner */
	if (flush(w, e, FMT_CHUNK_EVENTS, 0))
		return 1;
	fmt_enc_end(e, t + 500, 2);    /* inner ends before it began */
	fmt_enc_end(e, t + 2000, 1);   /* outer */
	if (flush(w, e, FMT_CHUNK_EVENTS, 0))
		return 1;
	fmt_enc_begin(e, t + 3000, 1); /* outer */
	if (flush(w, e, FMT_CHUNK_EVENTS, 0))
		return 1;
	fmt_enc_begin(e, t + 2500, 3); /* early: begins before its parent */
	fmt_enc_end(e, t + 3500, 3);
	fmt_enc_end(e, t + 4000, 1);
	fmt_enc_begin(e, t + 5000, 4); /* after */
	fmt_enc_end(e, t + 6000, 4);
	return flush(w, e, FMT_CHUNK_EVENTS, 0);
}

static int case_since(struct fmt_writer *w, struct fmt_enc *e)
{
	/* --since 1 ns is tick 2.5: the analyzer keeps sections from tick 3 on,
	 * so "early" (tick 2) is outside and "plain" (tick 3) inside */
	fmt_enc_begin(e, T0 + 2, 3);
	fmt_enc_end(e, T0 + 2, 3);
	fmt_enc_begin(e, T0 + 3, 5);
	fmt_enc_end(e, T0 + 100, 5);
	return flush(w, e, FMT_CHUNK_EVENTS, 0);
}

static int case_lost_tid(struct fmt_writer *w, struct fmt_enc *e)
{
	const uint64_t t = T0 + 100;
	fmt_enc_begin(e, t, 5); /* plain */
	fmt_enc_end(e, t + 50, 5);
	if (flush(w, e, FMT_CHUNK_EVENTS, 0))
		return 1;
	fmt_enc_begin(e, t + 100, 1); /* outer, on the unnamed thread */
	if (fmt_enc_lp5(e, PT_REC_ASYNC_BEGIN, 4, 0, 0x77, 0, t + 150))
		return 1;
	fmt_enc_end(e, t + 200, 1);
	if (flush(w, e, FMT_CHUNK_EVENTS, 1))
		return 1;
	fmt_enc_begin(e, t + 300, 2); /* inner, on "io" */
	if (fmt_enc_lp5(e, PT_REC_ASYNC_END, 4, 0, 0x77, 0, t + 350))
		return 1;
	fmt_enc_end(e, t + 400, 2);
	return flush(w, e, FMT_CHUNK_EVENTS, 5);
}

enum { GEMM = 6, FETCH = 7 };

/* A GPU section's CPU half: GPU_LAUNCH, then its BEGIN at the same tick, END 30 ns later. */
static int launch(struct fmt_enc *e, uint64_t t, uint64_t launch_seq)
{
	if (fmt_enc_lp5(e, PT_REC_GPU_LAUNCH, GEMM, 0, 1, launch_seq, t))
		return 1;
	fmt_enc_begin(e, t, GEMM);
	fmt_enc_end(e, t + 30, GEMM);
	return 0;
}

static int case_pairs(struct fmt_writer *w, struct fmt_enc *e)
{
	const uint64_t t = T0 + 1000;
	/* ptz-gpu: the ranges, read first; (launch, start, end, seq) */
	static const uint64_t gr[][4] = { { 50, 100, 300, 5 },     { 1050, 1100, 1600, 5 }, { 2050, 2100, 2200, 6 },
					  { 2900, 3000, 3100, 8 }, { 3150, 3200, 3300, 0 } };
	for (size_t i = 0; i < sizeof(gr) / sizeof(gr[0]); i++)
		if (fmt_enc_gpu_range(e, GEMM, 0, t + gr[i][1], t + gr[i][2], t + gr[i][0], gr[i][3], 1))
			return 1;
	if (flush(w, e, FMT_CHUNK_EVENTS, 2))
		return 1;
	/* helper: the async ends, read before their begins */
	fmt_enc_begin(e, t + 10, 5); /* plain */
	if (fmt_enc_lp5(e, PT_REC_ASYNC_END, 0, 0, 9, 0, t + 600) || fmt_enc_lp5(e, PT_REC_ASYNC_END, 0, 0, 9, 0, t + 1800) ||
	    fmt_enc_lp5(e, PT_REC_ASYNC_END, 0, 0, 11, 0, t + 1900))
		return 1;
	fmt_enc_end(e, t + 3500, 5);
	if (flush(w, e, FMT_CHUNK_EVENTS, 1))
		return 1;
	/* worker */
	if (launch(e, t + 50, 5) || fmt_enc_lp5(e, PT_REC_ASYNC_BEGIN, FETCH, 0, 9, 0, t + 500) ||
	    launch(e, t + 1050, 5) || fmt_enc_lp5(e, PT_REC_ASYNC_BEGIN, FETCH, 0, 9, 0, t + 1700) ||
	    launch(e, t + 2050, 6) || launch(e, t + 2500, 7) ||
	    fmt_enc_lp5(e, PT_REC_ASYNC_BEGIN, FETCH, 0, 0, 0, t + 2600) ||
	    fmt_enc_lp5(e, PT_REC_ASYNC_BEGIN, FETCH, 0, 12, 0, t + 2700))
		return 1;
	fmt_enc_begin(e, t + 3400, 5); /* the last tick: the end of the trace */
	fmt_enc_end(e, t + 4000, 5);
	return flush(w, e, FMT_CHUNK_EVENTS, 0);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s OUT.ptz backwards|since|lost-tid|pairs\n", argv[0]);
		return 2;
	}
	const int tsc = strcmp(argv[2], "since") == 0;
	/* lost-tid: the process's pid lost too (0), so both exports make one up alike */
	const struct fmt_writer_hdr hd = {
		.clock_source = tsc ? PT_CLOCK_TSC : PT_CLOCK_MONOTONIC,
		.pid = strcmp(argv[2], "lost-tid") == 0 ? 0 : 4242, .start_ticks = T0, .start_mono_ns = MONO0,
		.start_real_ns = 1700000000000000000ull, .process_name = "review-gen", .host = "testhost",
		.cmdline = "gen_review_trace", .recorder_version = "ptz-test 1",
	};
	struct fmt_writer *w;
	struct fmt_enc e;
	if (fmt_writer_open(argv[1], &hd, &w))
		return 1;
	const int lost = strcmp(argv[2], "lost-tid") == 0;
	const int pairs = strcmp(argv[2], "pairs") == 0;
	int rc = meta(w, &e, tsc, lost, pairs);
	if (rc == 0 && strcmp(argv[2], "backwards") == 0)
		rc = case_backwards(w, &e);
	else if (rc == 0 && lost)
		rc = case_lost_tid(w, &e);
	else if (rc == 0 && tsc)
		rc = case_since(w, &e);
	else if (rc == 0 && pairs)
		rc = case_pairs(w, &e);
	else if (rc == 0) {
		fprintf(stderr, "unknown case %s\n", argv[2]);
		rc = 2;
	}
	if (fmt_writer_close(w))
		return 1;
	return rc ? 1 : 0;
}
