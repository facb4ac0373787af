/*
 * tests/fuzz/gen_stored_seeds.c - fuzzing seeds whose chunks are all stored
 * (comp = 0, doc/trace-format.md §3.3), so that libFuzzer's mutations land in
 * record bytes and reach the decoder, the analyzer and the exports instead of
 * a zstd frame that no longer decompresses.
 *
 * gen-stored-seeds --rewrite IN.ptz OUT.ptz
 *	copies IN with every zstd payload decompressed and stored (sizes and
 *	checksums recomputed, the header and the chunk order kept).
 * gen-stored-seeds --synth DIR
 *	writes DIR/stored-synth-{tsc,mono,spans}.ptz through the format writer
 *	with compression off: every record kind (BEGIN, END, END_TOP, METRIC,
 *	TRANSFER, COUNTER, LOSS, ERROR, INSTANT, ASYNC_BEGIN/END, GPU_LAUNCH,
 *	GPU_RANGE, STRING, DOMAIN, THREAD, CLOCK) on several threads, sections
 *	open across chunks, a process-wide LOSS in a meta chunk and a renamed,
 *	exited thread.
 *
 * gen-stored-seeds --deep N OUT.ptz
 *	one thread, one section name, N nested sections all ended (not a seed:
 *	it reproduces the O(N^2) size of the JSON, CSV and folded outputs,
 *	whose every row carries its whole path).
 *
 * gen-stored-seeds --payloads DIR IN.ptz...
 *	writes the raw payload of every chunk that IN's reader accepts as a
 *	fuzz-decoder input (8 bytes of first ticks, little-endian, then the
 *	payload) named DIR/seed-<XXH3 of the input>, so that a rerun adds
 *	nothing twice. An unreadable IN is skipped (the corrupt corpus has some).
 *
 * Exit status: 0, 1 on an I/O or format error (with a message), 2 on usage.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>
#include <zstd.h>

#include "ptz/format.h"
#include "ptz/recorder.h"
#include "trace-format/fmt_internal.h"

/* ==== --rewrite ==== */

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	uint8_t *b = malloc(cap);
	for (size_t got; b && (got = fread(b + n, 1, cap - n, f)) > 0;) {
		n += got;
		if (n == cap) {
			uint8_t *nb = realloc(b, cap *= 2);
			if (!nb)
				free(b);
			b = nb;
		}
	}
	fclose(f);
	*len = n;
	return b;
}

static int rewrite(const char *in, const char *out)
{
	size_t n;
	uint8_t *b = slurp(in, &n);
	if (!b || n < PT_FMT_HEADER_BYTES) {
		fprintf(stderr, "%s: unreadable or shorter than a header\n", in);
		free(b);
		return 1;
	}
	uint64_t committed = fmt_get64(b + FMT_OFF_COMMITTED);
	if (committed > n || committed < PT_FMT_HEADER_BYTES)
		committed = n;
	FILE *f = fopen(out, "wb");
	if (!f) {
		perror(out);
		free(b);
		return 1;
	}
	uint8_t *raw = malloc(PT_FMT_MAX_CHUNK_RAW_BYTES);
	uint64_t off = PT_FMT_HEADER_BYTES, wrote = PT_FMT_HEADER_BYTES;
	int rc = raw && fwrite(b, 1, PT_FMT_HEADER_BYTES, f) == PT_FMT_HEADER_BYTES ? 0 : 1;
	while (!rc && off + PT_FMT_CHUNK_HEADER_BYTES <= committed) {
		struct fmt_chunk_hdr h;
		const char *why = NULL;
		if (fmt_chunk_hdr_parse(b + off, &h, &why) ||
		    h.stored_bytes > committed - off - PT_FMT_CHUNK_HEADER_BYTES) {
			fprintf(stderr, "%s: chunk at %llu: %s\n", in, (unsigned long long)off,
				why ? why : "payload past the committed length");
			rc = 1;
			break;
		}
		const uint8_t *p = b + off + PT_FMT_CHUNK_HEADER_BYTES;
		if (h.comp == FMT_COMP_ZSTD) {
			size_t got = ZSTD_decompress(raw, PT_FMT_MAX_CHUNK_RAW_BYTES, p, h.stored_bytes);
			if (ZSTD_isError(got) || got != h.raw_bytes) {
				fprintf(stderr, "%s: chunk at %llu does not decompress\n", in, (unsigned long long)off);
				rc = 1;
				break;
			}
		} else {
			memcpy(raw, p, h.raw_bytes);
		}
		off += PT_FMT_CHUNK_HEADER_BYTES + h.stored_bytes;
		h.comp = FMT_COMP_NONE;
		h.stored_bytes = h.raw_bytes;
		h.payload_xxh = XXH3_64bits(raw, h.raw_bytes);
		uint8_t hdr[PT_FMT_CHUNK_HEADER_BYTES];
		fmt_chunk_hdr_write(hdr, &h);
		if (fwrite(hdr, 1, sizeof(hdr), f) != sizeof(hdr) || fwrite(raw, 1, h.raw_bytes, f) != h.raw_bytes)
			rc = 1;
		wrote += sizeof(hdr) + h.raw_bytes;
	}
	/* the new committed length, and the header checksum (which does not cover it) stays */
	uint8_t c[8];
	fmt_put64(c, wrote);
	if (!rc && (fseek(f, FMT_OFF_COMMITTED, SEEK_SET) || fwrite(c, 1, 8, f) != 8))
		rc = 1;
	if (fclose(f) && !rc)
		rc = 1;
	if (rc)
		fprintf(stderr, "%s: not rewritten\n", out);
	free(raw);
	free(b);
	return rc;
}

/* ==== --synth ==== */

/* One trace being built: a writer, a chunk being encoded, per-thread sequences. */
struct synth {
	struct fmt_writer *w;
	struct fmt_enc e;
	uint8_t buf[16384];
	uint32_t thread; /* of the chunk being encoded */
	uint64_t seq[8], meta_seq;
	int failed;
};

static void chunk_start(struct synth *s, uint32_t thread)
{
	fmt_enc_reset(&s->e, s->buf, sizeof(s->buf));
	s->thread = thread;
}

static void chunk_flush(struct synth *s)
{
	int meta = s->thread == PT_FMT_META_THREAD;
	struct fmt_chunk_hdr h = {
		.kind = meta ? FMT_CHUNK_META : FMT_CHUNK_EVENTS,
		.thread = s->thread,
		.records = s->e.records,
		.sequence = meta ? s->meta_seq++ : s->seq[s->thread]++,
		.first_ticks = s->e.have_ticks ? s->e.first_ticks : 0,
		.last_ticks = s->e.have_ticks ? s->e.last_ticks : 0,
	};
	if (fmt_writer_append(s->w, &h, s->buf, (size_t)(s->e.pos - s->buf), 1))
		s->failed = 1;
}

static void rec(struct synth *s, uint32_t kind, uint64_t t, uint32_t id, uint32_t aux, uint64_t v, uint64_t v2)
{
	struct pt_record r = { .kind = kind, .ticks = t, .id = id, .aux = aux, .value = v, .value2 = v2 };
	if (fmt_enc_record(&s->e, &r))
		s->failed = 1;
}

static void str(struct synth *s, uint32_t kind, uint32_t id, uint32_t aux, const char *name)
{
	struct pt_record r = { .kind = kind, .id = id, .aux = aux, .str = name, .str_len = (uint32_t)strlen(name) };
	if (fmt_enc_record(&s->e, &r))
		s->failed = 1;
}

static void thread_rec(struct synth *s, uint32_t index, uint32_t tid, uint64_t start, uint64_t end, const char *name)
{
	struct pt_record r = { .kind = PT_REC_THREAD, .id = index, .value = tid, .ticks = start, .value2 = end,
			       .str = name, .str_len = (uint32_t)strlen(name) };
	if (fmt_enc_record(&s->e, &r))
		s->failed = 1;
}

static void gpu_range(struct synth *s, uint32_t id, uint32_t dev, uint64_t start, uint64_t end, uint64_t launch,
		      uint64_t seq, uint64_t stream)
{
	if (fmt_enc_gpu_range(&s->e, id, dev, start, end, launch, seq, stream))
		s->failed = 1;
}

enum { S_MAIN = 1, S_LOAD, S_PARSE, S_KERNEL, S_COPY, S_OTHER, C_QUEUE, A_REQ, I_MARK, I_GPUOFF, S_WORKER, S_DEEP };

/* The meta tables: domains, strings, threads first seen from @base. */
static void meta_tables(struct synth *s, uint64_t base)
{
	chunk_start(s, PT_FMT_META_THREAD);
	str(s, PT_REC_DOMAIN, 1, 0, "gpu");
	str(s, PT_REC_DOMAIN, 2, 0, "io");
	str(s, PT_REC_STRING, S_MAIN, 0, "main");
	str(s, PT_REC_STRING, S_LOAD, 2, "load");
	str(s, PT_REC_STRING, S_PARSE, 2, "parse");
	str(s, PT_REC_STRING, S_KERNEL, 1, "kernel");
	str(s, PT_REC_STRING, S_COPY, 1, "copy");
	str(s, PT_REC_STRING, S_OTHER, 0, "other,\"q\"");
	str(s, PT_REC_STRING, C_QUEUE, 0, "queue depth");
	str(s, PT_REC_STRING, A_REQ, 0, "request");
	str(s, PT_REC_STRING, I_MARK, 0, "mark");
	str(s, PT_REC_STRING, I_GPUOFF, 0, "GPU timing off: no device");
	str(s, PT_REC_STRING, S_WORKER, 0, "work");
	str(s, PT_REC_STRING, S_DEEP, 0, "deep");
	thread_rec(s, 0, 100, base, 0, "main");
	thread_rec(s, 1, 101, base + 50, 0, "worker");
	thread_rec(s, 2, 102, base + 60, 0, PT_FMT_GPU_THREAD_NAME);
	chunk_flush(s);
}

static void clocks(struct synth *s, uint64_t base)
{
	chunk_start(s, PT_FMT_META_THREAD);
	/* 2.5 ticks per ns: ticks base..base+1e7 map to 1e9..1e9+4e6 ns */
	if (fmt_enc_clock(&s->e, base, 1000000000u, 1700000000000000000u, 40) ||
	    fmt_enc_clock(&s->e, base + 10000000u, 1004000000u, 1700000000004000000u, 30))
		s->failed = 1;
	chunk_flush(s);
}

/* One main-thread burst from @t: nested sections, metrics, transfers, a
 * GPU launch and every timed kind. Returns the next tick. */
static uint64_t main_burst(struct synth *s, uint64_t t, uint64_t gseq)
{
	rec(s, PT_REC_BEGIN, t, S_LOAD, 0, 0, 0);
	rec(s, PT_REC_METRIC, 0, 0, PT_METRIC_READ_BYTES, 4096, 0);
	rec(s, PT_REC_BEGIN, t += 100, S_PARSE, 0, 0, 0);
	rec(s, PT_REC_METRIC, 0, 0, PT_METRIC_FLOPS, 1000000, 0);
	rec(s, PT_REC_METRIC, 0, 0, PT_METRIC_WRITTEN_BYTES, 512, 0);
	rec(s, PT_REC_END, t += 400, S_PARSE, 0, 0, 0); /* END_TOP */
	rec(s, PT_REC_COUNTER, t += 10, C_QUEUE, 0, (uint64_t)-3, 0);
	rec(s, PT_REC_END, t += 50, S_LOAD, 0, 0, 0);
	/* a GPU section: launch, begin, a transfer, end */
	if (fmt_enc_lp5(&s->e, PT_REC_GPU_LAUNCH, S_KERNEL, 0, 7, gseq, t += 20))
		s->failed = 1;
	rec(s, PT_REC_BEGIN, t, S_KERNEL, 0, 0, 0);
	rec(s, PT_REC_TRANSFER, 0, 0, PT_H2D, 1 << 20, 0);
	rec(s, PT_REC_END, t += 30, S_KERNEL, 0, 0, 0);
	if (fmt_enc_lp5(&s->e, PT_REC_GPU_LAUNCH, S_COPY, 1, 2, gseq + 1, t += 5))
		s->failed = 1;
	rec(s, PT_REC_BEGIN, t, S_COPY, 0, 0, 0);
	rec(s, PT_REC_TRANSFER, 0, 0, PT_D2H, 4096, 0);
	rec(s, PT_REC_TRANSFER, 0, 0, PT_P2P, 77, 0);
	rec(s, PT_REC_END, t += 5, S_COPY, 0, 0, 0);
	if (fmt_enc_lp5(&s->e, PT_REC_INSTANT, I_MARK, 0, 0, 0, t += 1) ||
	    fmt_enc_lp5(&s->e, PT_REC_ASYNC_BEGIN, A_REQ, 0, 0xabcdef0123ull + gseq, 0, t += 1))
		s->failed = 1;
	rec(s, PT_REC_BEGIN, t += 3, S_OTHER, 0, 0, 0);
	rec(s, PT_REC_ERROR, t += 1, 0, PT_ERRC_END_UNDERFLOW, 2, 0);
	rec(s, PT_REC_END, t += 9, S_OTHER, 0, 0, 0);
	rec(s, PT_REC_COUNTER, t += 1, C_QUEUE, 0, 12, 0);
	return t + 100;
}

static int synth_one(const char *path, int tsc, int spans)
{
	const uint64_t base = tsc ? 5000000000ull : 1000000000ull;
	struct fmt_writer_hdr hd = {
		.clock_source = tsc ? PT_CLOCK_TSC : PT_CLOCK_MONOTONIC, .pid = 4242,
		.start_ticks = base, .start_mono_ns = tsc ? 1000000000u : base, .start_real_ns = 1700000000000000000ull,
		.process_name = "stored-synth", .host = "fuzzhost", .cmdline = "stored-synth --all-kinds",
		.recorder_version = "ptz-gen-stored",
	};
	struct synth *s = calloc(1, sizeof(*s));
	if (!s)
		return 1;
	int rc = fmt_writer_open(path, &hd, &s->w);
	if (rc) {
		fprintf(stderr, "%s: %s\n", path, strerror(-rc));
		free(s);
		return 1;
	}
	fmt_writer_store_below(s->w, SIZE_MAX); /* every payload stored */
	meta_tables(s, base);
	if (tsc)
		clocks(s, base);

	/* thread 0: "main" open across three chunks, a deep stack past 256 in one */
	uint64_t t = base + 10;
	chunk_start(s, 0);
	rec(s, PT_REC_BEGIN, t, S_MAIN, 0, 0, 0);
	t = main_burst(s, t + 5, 1);
	chunk_flush(s);
	chunk_start(s, 0);
	t = main_burst(s, t, 3);
	if (spans) {
		for (int i = 0; i < 260; i++)
			rec(s, PT_REC_BEGIN, t += 1, S_DEEP, 0, 0, 0);
		for (int i = 0; i < 260; i++)
			rec(s, PT_REC_END, t += 1, S_DEEP, 0, 0, 0); /* END past the stack, END_TOP below */
	}
	chunk_flush(s);
	/* the worker: an async end for main's request, a loss, an implicit close */
	chunk_start(s, 1);
	rec(s, PT_REC_BEGIN, base + 60, S_WORKER, 0, 0, 0);
	rec(s, PT_REC_LOSS, base + 70, 0, 0, 5, 1);
	if (fmt_enc_lp5(&s->e, PT_REC_ASYNC_END, 0, 0, 0xabcdef0123ull + 1, 0, base + 80))
		s->failed = 1;
	rec(s, PT_REC_BEGIN, base + 90, S_PARSE, 0, 0, 0);
	rec(s, PT_REC_ERROR, base + 95, 0, PT_ERRC_IMPLICIT_CLOSE, 1, 0);
	rec(s, PT_REC_END, base + 95, S_WORKER, 0, 0, 0); /* an END that is not END_TOP */
	rec(s, PT_REC_END, base + 96, S_PARSE, 0, 0, 0);
	rec(s, PT_REC_END, base + 97, S_PARSE, 0, 0, 0); /* one END too many */
	chunk_flush(s);
	/* the GPU thread: ranges (one early start, one before its launch in file order) */
	chunk_start(s, 2);
	rec(s, PT_REC_ERROR, base + 100, 0, PT_ERRC_GPU_EARLY_START, 1, 0);
	gpu_range(s, S_KERNEL, 0, base + 60, base + 400, base + 65, 1, 7);
	gpu_range(s, S_COPY, 1, base + 80, base + 90, base + 70, 2, 2);
	gpu_range(s, S_KERNEL, 0, t + 1000, t + 3000, t - 100, 3, 7); /* launched in the next chunk of main */
	rec(s, PT_REC_ERROR, base + 200, 0, PT_ERRC_GPU_UNFINISHED, 1, 0);
	if (fmt_enc_lp5(&s->e, PT_REC_INSTANT, I_GPUOFF, 0, 0, 0, base + 210))
		s->failed = 1;
	rec(s, PT_REC_ERROR, base + 210, 0, PT_ERRC_GPU_OFF, 1, 0);
	chunk_flush(s);
	/* main again: the end of "main"; with spans, a chunk of thread 3 unknown to the tables */
	chunk_start(s, 0);
	t = main_burst(s, t, 5);
	rec(s, PT_REC_END, t + 10, S_MAIN, 0, 0, 0);
	chunk_flush(s);
	if (spans) {
		chunk_start(s, 3);
		rec(s, PT_REC_BEGIN, base + 5, S_MAIN, 0, 0, 0);
		rec(s, PT_REC_COUNTER, base + 6, 9999, 0, 1, 0); /* a counter with no name */
		chunk_flush(s);
	}
	/* final meta: a process-wide loss, the worker renamed and exited */
	chunk_start(s, PT_FMT_META_THREAD);
	rec(s, PT_REC_LOSS, t + 20, 0, 0, 100, 3);
	thread_rec(s, 1, 101, 0, t + 30, "worker-renamed");
	if (tsc && fmt_enc_clock(&s->e, t + 40, 1000000000u + (t + 40 - base) * 2 / 5, 1700000000000000000ull, 20))
		s->failed = 1;
	chunk_flush(s);

	rc = fmt_writer_close(s->w);
	if (rc || s->failed) {
		fprintf(stderr, "%s: not written (%s)\n", path, rc ? strerror(-rc) : "record encoding failed");
		free(s);
		return 1;
	}
	free(s);
	return 0;
}

static int synth(const char *dir)
{
	static const struct {
		const char *name;
		int tsc, spans;
	} files[] = { { "stored-synth-tsc.ptz", 1, 0 }, { "stored-synth-mono.ptz", 0, 0 }, { "stored-synth-spans.ptz", 1, 1 } };
	int rc = 0;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", dir, files[i].name);
		rc |= synth_one(path, files[i].tsc, files[i].spans);
	}
	return rc;
}

static int deep(const char *path, long n)
{
	struct fmt_writer_hdr hd = { .clock_source = PT_CLOCK_MONOTONIC, .pid = 1, .start_ticks = 1000, .start_mono_ns = 1000,
				     .process_name = "stored-deep" };
	struct synth *s = calloc(1, sizeof(*s));
	if (!s || n < 1 || n > 1000000 || fmt_writer_open(path, &hd, &s->w)) {
		fprintf(stderr, "%s: not written\n", path);
		free(s);
		return 1;
	}
	fmt_writer_store_below(s->w, SIZE_MAX);
	chunk_start(s, PT_FMT_META_THREAD);
	str(s, PT_REC_STRING, 1, 0, "a");
	thread_rec(s, 0, 1, 1000, 0, "t");
	chunk_flush(s);
	uint64_t t = 1000;
	chunk_start(s, 0);
	for (long i = 0; i < 2 * n; i++) {
		if (!fmt_enc_room(&s->e, FMT_MAX_RECORD_BYTES)) {
			chunk_flush(s);
			chunk_start(s, 0);
		}
		rec(s, i < n ? PT_REC_BEGIN : PT_REC_END, t++, 1, 0, 0, 0);
	}
	chunk_flush(s);
	int rc = fmt_writer_close(s->w) || s->failed;
	free(s);
	return rc;
}

/* ==== --payloads ==== */

static int payloads(const char *dir, char **in, int n)
{
	int rc = 0;
	uint8_t *buf = NULL;
	size_t cap = 0;
	for (int k = 0; k < n; k++) {
		struct pt_reader *r;
		struct pt_chunk_info ci;
		if (pt_reader_open(in[k], &r)) {
			pt_reader_close(r);
			continue;
		}
		while (pt_reader_next_chunk(r, PT_READER_ALL_CHUNKS, &ci, sizeof(ci)) == 1) {
			const struct fmt_dec *d = fmt_reader_chunk_dec(r);
			if (!d)
				continue;
			size_t len = (size_t)(d->end - d->pos);
			if (len + 8 > cap) {
				free(buf);
				buf = malloc(cap = len + 8);
				if (!buf) {
					pt_reader_close(r);
					return 1;
				}
			}
			fmt_put64(buf, d->ticks);
			memcpy(buf + 8, d->pos, len);
			fmt_reader_chunk_done(r, 0);
			char path[4096];
			snprintf(path, sizeof(path), "%s/seed-%016llx", dir,
				 (unsigned long long)XXH3_64bits(buf, len + 8));
			FILE *f = fopen(path, "wb");
			if (!f || fwrite(buf, 1, len + 8, f) != len + 8) {
				perror(path);
				rc = 1;
			}
			if (f && fclose(f))
				rc = 1;
		}
		pt_reader_close(r);
	}
	free(buf);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "--payloads") == 0)
		return payloads(argv[2], argv + 3, argc - 3);
	if (argc == 4 && strcmp(argv[1], "--deep") == 0)
		return deep(argv[3], atol(argv[2]));
	if (argc == 4 && strcmp(argv[1], "--rewrite") == 0)
		return rewrite(argv[2], argv[3]);
	if (argc == 3 && strcmp(argv[1], "--synth") == 0)
		return synth(argv[2]);
	fprintf(stderr, "usage: %s --rewrite IN.ptz OUT.ptz | --synth DIR | --deep N OUT.ptz | --payloads DIR IN.ptz...\n", argv[0]);
	return 2;
}
