/*
 * tests/analyzer/gen_hostile_trace.c OUT.ptz MODE [N] - small, checksum-valid
 * traces that claim or imply much more than they hold (issue 17, items 8-11),
 * written with the internal format writer, for the analyzer's bounds checks
 * (tests/analyzer/check_hostile.sh):
 *
 *   farid ID   one name "work" with string id ID (1 or 2^24-1), three sections
 *              of it on thread 0: the same report whatever the id
 *   deep N     one thread, N BEGINs of one name and no END (zstd makes it tiny)
 *   threads N  N threads, each one chunk of one section
 *   wide N     one thread, N sections nested N deep and closed: a stack N deep
 *   bomb N     one thread, N chunks of 16 MiB raw payload (about 1.6 M
 *              sections each) that zstd shrinks to a few KiB
 *   sums       two LOSS records of 2^64-1, and ten sections with 1e18 FLOPs
 *              each (the FLOP helpers saturate at UINT64_MAX by design)
 *   names      one section for each hostile name (CSV formula starts, C1
 *              controls, bidi overrides, a NUL inside two different names)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ptz/recorder.h> /* enum pt_metric_kind */

#include "trace-format/fmt_internal.h"

struct gen {
	struct fmt_writer *w;
	struct fmt_enc e;
	uint8_t *buf;
	size_t cap;
	uint64_t seq, t;
};

static void die(const char *what)
{
	fprintf(stderr, "gen-hostile-trace: %s failed\n", what);
	exit(1);
}

static void flush(struct gen *g, uint8_t kind, uint32_t thread, uint64_t seq)
{
	if (g->e.records) {
		const struct fmt_chunk_hdr h = { .kind = kind, .thread = thread, .records = g->e.records,
						 .sequence = seq, .first_ticks = g->e.first_ticks,
						 .last_ticks = g->e.last_ticks };
		if (fmt_writer_append(g->w, &h, g->buf, (size_t)(g->e.pos - g->buf), 19))
			die("fmt_writer_append");
	}
	fmt_enc_reset(&g->e, g->buf, g->cap);
}

/* Room for @need more bytes in thread 0's current chunk, else a new chunk. */
static void room(struct gen *g, size_t need)
{
	if (!fmt_enc_room(&g->e, need)) {
		flush(g, FMT_CHUNK_EVENTS, 0, g->seq++);
	}
}

static void meta(struct gen *g, uint32_t nthreads, const char *const *names, const uint32_t *ids, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		size_t len = ids[i] == 7 || ids[i] == 8 ? 6 : strlen(names[i]); /* 7, 8: NUL inside */
		if (!fmt_enc_room(&g->e, len + 64))
			flush(g, FMT_CHUNK_META, PT_FMT_META_THREAD, 0);
		fmt_enc_string(&g->e, ids[i], 0, names[i], len);
	}
	for (uint32_t i = 0; i < nthreads; i++) {
		if (!fmt_enc_room(&g->e, 64))
			flush(g, FMT_CHUNK_META, PT_FMT_META_THREAD, 0);
		fmt_enc_thread(&g->e, i, 100 + i, 0, 0, "t", 1);
	}
	flush(g, FMT_CHUNK_META, PT_FMT_META_THREAD, 0);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s OUT.ptz farid ID | deep N | threads N | wide N | bomb N | sums | names\n",
			argv[0]);
		return 2;
	}
	const char *mode = argv[2];
	unsigned long long n = argc > 3 ? strtoull(argv[3], NULL, 0) : 0;
	struct fmt_writer_hdr hd = { .clock_source = 3, .pid = 1, .process_name = "hostile", .host = "gen" };
	struct gen g = { .cap = PT_FMT_MAX_CHUNK_RAW_BYTES, .t = 1000 };
	g.buf = malloc(g.cap);
	if (!g.buf || fmt_writer_open(argv[1], &hd, &g.w))
		die("open");
	fmt_enc_reset(&g.e, g.buf, g.cap);
	static const char *const work[] = { "work" };
	if (strcmp(mode, "farid") == 0) {
		const uint32_t id = (uint32_t)n;
		meta(&g, 1, work, &id, 1);
		for (int i = 0; i < 3; i++) {
			fmt_enc_begin(&g.e, g.t, id);
			fmt_enc_end(&g.e, g.t += 100 + 10 * (uint64_t)i, id);
			g.t += 5;
		}
	} else if (strcmp(mode, "deep") == 0 || strcmp(mode, "wide") == 0) {
		const uint32_t id = 1;
		meta(&g, 1, work, &id, 1);
		for (unsigned long long i = 0; i < n; i++) {
			room(&g, 64);
			fmt_enc_begin(&g.e, g.t++, id);
		}
		if (mode[0] == 'w')
			for (unsigned long long i = 0; i < n; i++) {
				room(&g, 64);
				fmt_enc_end(&g.e, g.t++, id);
			}
	} else if (strcmp(mode, "threads") == 0) {
		const uint32_t id = 1;
		meta(&g, (uint32_t)n, work, &id, 1);
		for (uint32_t th = 0; th < n; th++) {
			fmt_enc_begin(&g.e, g.t, id);
			fmt_enc_end(&g.e, g.t + 10, id);
			flush(&g, FMT_CHUNK_EVENTS, th, 0);
		}
	} else if (strcmp(mode, "bomb") == 0) {
		const uint32_t id = 1;
		meta(&g, 1, work, &id, 1);
		for (unsigned long long c = 0; c < n; c++) {
			while (fmt_enc_room(&g.e, 64)) {
				fmt_enc_begin(&g.e, g.t, id);
				fmt_enc_end(&g.e, g.t + 1, id);
			}
			flush(&g, FMT_CHUNK_EVENTS, 0, g.seq++);
		}
	} else if (strcmp(mode, "sums") == 0) {
		static const char *const nm[] = { "flops", "other" };
		static const uint32_t ids[] = { 1, 2 };
		meta(&g, 1, nm, ids, 2);
		fmt_enc_loss(&g.e, g.t++, UINT64_MAX, UINT64_MAX);
		fmt_enc_loss(&g.e, g.t++, UINT64_MAX, 1);
		for (int i = 0; i < 10; i++) {
			fmt_enc_begin(&g.e, g.t, 1);
			fmt_enc_metric(&g.e, PT_METRIC_FLOPS, 1000000000000000000ull);
			fmt_enc_end(&g.e, g.t += 100, 1);
		}
		fmt_enc_begin(&g.e, g.t, 2);
		fmt_enc_metric(&g.e, PT_METRIC_FLOPS, UINT64_MAX);
		fmt_enc_end(&g.e, g.t += 100, 2);
	} else if (strcmp(mode, "names") == 0) {
		static const char *const nm[] = {
			"=HYPERLINK(\"http://x\")", "+1+1", "-2-2", "@SUM(A1)", "\tTAB", "\rCR",
			"nul\0aaa", "nul\0bbb",          /* ids 7, 8: 6 bytes each, the NUL inside */
			"c1\xc2\x9b" "31m", "raw\x9b" "31m", "bidi\xe2\x80\xae" "txt.exe", "iso\xe2\x81\xa6" "x",
			"esc\x1b[31m",
		};
		uint32_t ids[sizeof(nm) / sizeof(nm[0])];
		for (uint32_t i = 0; i < sizeof(nm) / sizeof(nm[0]); i++)
			ids[i] = i + 1;
		meta(&g, 1, nm, ids, sizeof(nm) / sizeof(nm[0]));
		for (uint32_t i = 0; i < sizeof(nm) / sizeof(nm[0]); i++) {
			fmt_enc_begin(&g.e, g.t, ids[i]);
			fmt_enc_end(&g.e, g.t += 100 + i, ids[i]);
		}
	} else {
		fprintf(stderr, "gen-hostile-trace: unknown mode %s\n", mode);
		return 2;
	}
	flush(&g, FMT_CHUNK_EVENTS, 0, g.seq++);
	if (fmt_writer_close(g.w))
		die("close");
	free(g.buf);
	return 0;
}
