/*
 * tests/corrupt/test_corrupt.c - the corrupt-file corpus (STYLE §8 "corrupt";
 * zstd golden-decompression-errors, SQLite corrupt*.test).
 *
 * A deterministic trace (valid.ptz: one meta chunk, five event chunks of two
 * threads, known record counts, both stored and zstd payloads) is written
 * with the internal writer, then damaged in one way per file. Every file is
 * read with pt_reader_open() + PT_READER_ALL_CHUNKS iteration, generated
 * afresh in a temporary directory and, again, from the checked-in copies in
 * tests/data/corrupt/ (regenerate them with
 * `test-corrupt-corpus --write-corpus tests/data/corrupt`).
 *
 * Invariants covered (doc/trace-format.md):
 *  - no damaged file crashes the reader or trips ASan/UBSan;
 *  - pt_reader_open() returns exactly -PT_ETRUNCATED (file shorter than the
 *    header), -PT_ECORRUPT (bad file magic), -PT_EVERSION (major != 1 under
 *    a valid checksum), and 0 for everything else, header checksum included
 *    (§2, §6);
 *  - the exact number of chunks and records still delivered, of records
 *    that fail to decode, of problems after open and after iteration, and
 *    each problem's file offset and message (§6);
 *  - torn_tail_offset is set only when the file ends inside the last chunk
 *    (or < 64 bytes remain), corrupt_regions counts each skipped region (§6);
 *  - resynchronization on the chunk magic skips garbage and rejects a magic
 *    match whose header checksum fails (§3, §6);
 *  - the committed length bounds what is read; a zero or too large one
 *    falls back to the file size (§2, §5);
 *  - unknown length-prefixed record kinds are skipped, reserved ones decode,
 *    an overlong varint drops the rest of its chunk only (§4, §8);
 *  - per-thread sequence gaps are reported at the chunk after the gap (§6);
 *    a chunk repeated byte for byte is reported and skipped, one that goes
 *    back in sequence is reported and delivered;
 *  - an abandoned (never closed) trace reads completely (§5);
 *  - each checked-in corrupt file is exactly its defect applied to the
 *    checked-in valid.ptz, so the corpus cannot go stale.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <setjmp.h>
#include <cmocka.h>
#include <xxhash.h> /* XXH3_64bits: re-checksum edited payloads and headers */

#include "analyzer/ana.h" /* test_clock_zero_slope_window */
#include "ptz/recorder.h" /* PT_METRIC_READ_BYTES, PT_H2D */
#include "trace-format/fmt_internal.h"
#include "viewer-export/pfx.h"

#ifdef PT_CORPUS_DIR
#define PT_CORPUS_DIR_OR_EMPTY PT_CORPUS_DIR
#else
#define PT_CORPUS_DIR_OR_EMPTY ""
#endif

/* ==== The valid trace ==== */

enum chunk_ix { CK_META, CK_T0_SEQ0, CK_T1_SEQ0, CK_T0_SEQ1, CK_T1_SEQ1, CK_T0_SEQ2, CK_COUNT };

/* Records per chunk, in file order (meta: 1 domain, 4 strings, 2 threads, 2 clocks). */
static const uint32_t chunk_records[CK_COUNT] = { 9, 252, 240, 2, 82, 100 };
#define REC_TOTAL 685u
#define ZSTD_LEVEL 3

#define START_TICKS 1000u
#define START_MONO_NS 5000000u
#define START_REAL_NS 1700000000000000000ull
#define CLOCK1_TICKS 3000u
#define CLOCK1_NS 5001000u
#define CLOCK2_TICKS 2001000u
#define CLOCK2_NS 6000000u

/* CK_T0_SEQ1's whole raw payload: BEGIN dt=0 id=2, END_TOP dt=10. */
static const uint8_t small_payload[] = { PT_REC_BEGIN, 0x00, 0x02, FMT_TAG_END_TOP, 0x0a };
#define SMALL_FIRST_TICKS 30000u

static void append_chunk(struct fmt_writer *w, const struct fmt_enc *e, uint8_t kind, uint32_t thread,
			 uint64_t seq, enum chunk_ix ix)
{
	const struct fmt_chunk_hdr h = {
		.kind = kind,
		.thread = thread,
		.records = e->records,
		.sequence = seq,
		.first_ticks = e->first_ticks,
		.last_ticks = e->last_ticks,
	};
	assert_int_equal(e->records, chunk_records[ix]);
	assert_int_equal(fmt_writer_append(w, &h, e->buf, (size_t)(e->pos - e->buf), ZSTD_LEVEL), 0);
}

/* Writes the valid trace to @path. With @abandon the writer is dropped
 * without fmt_writer_close(), as a killed recorder would leave it. */
static void build_trace(const char *path, int abandon)
{
	static const struct fmt_writer_hdr hd = {
		.clock_source = PT_CLOCK_TSC,
		.pid = 4242,
		.start_ticks = START_TICKS,
		.start_mono_ns = START_MONO_NS,
		.start_real_ns = START_REAL_NS,
		.process_name = "corrupt-gen",
		.host = "testhost",
		.cmdline = "test-corrupt-corpus --write-corpus",
		.recorder_version = "ptz-test 1",
	};
	static const char *const names[] = { NULL, "main", "step", "kernel", "inflight" };
	static uint8_t buf[1 << 16];
	struct fmt_writer *w;
	struct fmt_enc e;
	uint64_t t;

	assert_int_equal(fmt_writer_open(path, &hd, &w), 0);

	fmt_enc_reset(&e, buf, sizeof(buf));
	assert_int_equal(fmt_enc_domain(&e, 1, "gpu", 3), 0);
	for (uint32_t id = 1; id <= 4; id++)
		assert_int_equal(fmt_enc_string(&e, id, id == 3, names[id], strlen(names[id])), 0);
	assert_int_equal(fmt_enc_thread(&e, 0, 100, START_TICKS, 0, "main", 4), 0);
	assert_int_equal(fmt_enc_thread(&e, 1, 101, 1500, 60000, "worker", 6), 0);
	assert_int_equal(fmt_enc_clock(&e, CLOCK1_TICKS, CLOCK1_NS, START_REAL_NS + 1000, 20), 0);
	assert_int_equal(fmt_enc_clock(&e, CLOCK2_TICKS, CLOCK2_NS, START_REAL_NS + 1000000, 20), 0);
	append_chunk(w, &e, FMT_CHUNK_META, PT_FMT_META_THREAD, 0, CK_META);

	/* thread 0, seq 0: main { 100 x step { metric on even steps } } */
	fmt_enc_reset(&e, buf, sizeof(buf));
	fmt_enc_begin(&e, 10000, 1);
	for (uint32_t i = 0; i < 100; i++) {
		t = 10010 + i * 100;
		fmt_enc_begin(&e, t, 2);
		if (i % 2 == 0)
			fmt_enc_metric(&e, PT_METRIC_READ_BYTES, i * 64);
		fmt_enc_end(&e, t + 50, 2);
	}
	fmt_enc_end(&e, 20010, 1);
	append_chunk(w, &e, FMT_CHUNK_EVENTS, 0, 0, CK_T0_SEQ0);

	/* thread 1, seq 0: 60 x kernel { transfer, counter } */
	fmt_enc_reset(&e, buf, sizeof(buf));
	for (uint32_t i = 0; i < 60; i++) {
		t = 12000 + i * 150;
		fmt_enc_begin(&e, t, 3);
		fmt_enc_transfer(&e, PT_H2D, 4096);
		fmt_enc_counter(&e, t + 10, 4, -(int64_t)i);
		fmt_enc_end(&e, t + 100, 3);
	}
	append_chunk(w, &e, FMT_CHUNK_EVENTS, 1, 0, CK_T1_SEQ0);

	/* thread 0, seq 1: one section, too small for zstd to shrink */
	fmt_enc_reset(&e, buf, sizeof(buf));
	fmt_enc_begin(&e, SMALL_FIRST_TICKS, 2);
	fmt_enc_end(&e, SMALL_FIRST_TICKS + 10, 2);
	assert_int_equal(e.pos - e.buf, sizeof(small_payload));
	assert_memory_equal(e.buf, small_payload, sizeof(small_payload));
	append_chunk(w, &e, FMT_CHUNK_EVENTS, 0, 1, CK_T0_SEQ1);

	/* thread 1, seq 1: loss, 40 x kernel, error */
	fmt_enc_reset(&e, buf, sizeof(buf));
	fmt_enc_loss(&e, 40000, 7, 1);
	for (uint32_t i = 0; i < 40; i++) {
		t = 40010 + i * 200;
		fmt_enc_begin(&e, t, 3);
		fmt_enc_end(&e, t + 150, 3);
	}
	fmt_enc_error(&e, 48500, PT_ERRC_END_UNDERFLOW, 1);
	append_chunk(w, &e, FMT_CHUNK_EVENTS, 1, 1, CK_T1_SEQ1);

	/* thread 0, seq 2: 50 x step */
	fmt_enc_reset(&e, buf, sizeof(buf));
	for (uint32_t i = 0; i < 50; i++) {
		t = 50000 + i * 80;
		fmt_enc_begin(&e, t, 2);
		fmt_enc_end(&e, t + 40, 2);
	}
	append_chunk(w, &e, FMT_CHUNK_EVENTS, 0, 2, CK_T0_SEQ2);

	if (abandon)
		fmt_writer_abandon(w);
	else
		assert_int_equal(fmt_writer_close(w), 0);
}

/* ==== File images ==== */

struct img {
	uint8_t *b;
	size_t n;
};

static void img_free(struct img *im)
{
	free(im->b);
	im->b = NULL;
	im->n = 0;
}

static void img_load(const char *path, struct img *im)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fail_msg("%s: %s", path, strerror(errno));
	assert_int_equal(fstat(fd, &st), 0);
	im->n = (size_t)st.st_size;
	im->b = malloc(im->n ? im->n : 1);
	assert_non_null(im->b);
	assert_int_equal(pread(fd, im->b, im->n, 0), (ssize_t)im->n);
	close(fd);
}

static void img_store(const char *path, const struct img *im)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		fail_msg("%s: %s", path, strerror(errno));
	assert_int_equal(fwrite(im->b, 1, im->n, f), im->n);
	assert_int_equal(fclose(f), 0);
}

/* Replaces @del bytes at @off with @len bytes of @ins. */
static void img_splice(struct img *im, size_t off, size_t del, const void *ins, size_t len)
{
	assert_true(off + del <= im->n);
	uint8_t *b = malloc(im->n - del + len + 1);
	assert_non_null(b);
	memcpy(b, im->b, off);
	if (len)
		memcpy(b + off, ins, len);
	memcpy(b + off + len, im->b + off + del, im->n - off - del);
	free(im->b);
	im->b = b;
	im->n = im->n - del + len;
}

static uint64_t img_committed(const struct img *im) { return fmt_get64(im->b + FMT_OFF_COMMITTED); }
static void img_set_committed(struct img *im, uint64_t v) { fmt_put64(im->b + FMT_OFF_COMMITTED, v); }

static void img_flip(struct img *im, size_t off, unsigned bit)
{
	assert_true(off < im->n);
	im->b[off] ^= (uint8_t)(1u << bit);
}

static void chunk_get(const struct img *im, uint64_t off, struct fmt_chunk_hdr *h)
{
	const char *why = NULL;
	assert_true(off + PT_FMT_CHUNK_HEADER_BYTES <= im->n);
	assert_int_equal(fmt_chunk_hdr_parse(im->b + off, h, &why), 0);
}

/* Rewrites a chunk header with a valid self checksum (§3). */
static void chunk_put(struct img *im, uint64_t off, const struct fmt_chunk_hdr *h)
{
	fmt_chunk_hdr_write(im->b + off, h);
}

/* Deterministic junk (LCG), never starting with the chunk magic. */
static void junk(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
	if (n)
		p[0] = 0xaa;
}

/* ==== Layout of valid.ptz ==== */

struct layout {
	uint64_t off[CK_COUNT];
	struct fmt_chunk_hdr h[CK_COUNT];
	uint64_t end;
};

static uint64_t ck_len(const struct layout *l, enum chunk_ix i)
{
	return PT_FMT_CHUNK_HEADER_BYTES + l->h[i].stored_bytes;
}

/* Walks the chunk headers of a valid trace and checks the shape the
 * variants rely on (which chunks are compressed). */
static void layout_of(const struct img *im, struct layout *l)
{
	uint64_t off = PT_FMT_HEADER_BYTES;
	assert_true(im->n >= PT_FMT_HEADER_BYTES);
	assert_memory_equal(im->b, FMT_MAGIC, 8);
	for (int i = 0; i < CK_COUNT; i++) {
		l->off[i] = off;
		chunk_get(im, off, &l->h[i]);
		assert_int_equal(l->h[i].records, chunk_records[i]);
		assert_int_equal(l->h[i].sequence, i == CK_META ? 0 : (uint64_t)((i - 1) / 2));
		off += ck_len(l, (enum chunk_ix)i);
	}
	l->end = off;
	assert_int_equal(off, im->n);
	assert_int_equal(img_committed(im), im->n);
	assert_int_equal(fmt_get64(im->b + FMT_OFF_FLAGS), FMT_FLAG_CLOSED);
	assert_int_equal(l->h[CK_META].kind, FMT_CHUNK_META);
	assert_int_equal(l->h[CK_T0_SEQ0].comp, FMT_COMP_ZSTD);
	assert_int_equal(l->h[CK_T1_SEQ0].comp, FMT_COMP_ZSTD);
	assert_int_equal(l->h[CK_T0_SEQ1].comp, FMT_COMP_NONE);
	assert_int_equal(l->h[CK_T0_SEQ2].comp, FMT_COMP_ZSTD);
	assert_int_equal(l->h[CK_T0_SEQ1].first_ticks, SMALL_FIRST_TICKS);
	assert_memory_equal(im->b + l->off[CK_T0_SEQ1] + PT_FMT_CHUNK_HEADER_BYTES, small_payload,
			    sizeof(small_payload));
}

/* ==== Expectations ==== */

#define MAX_PROBLEMS 4

struct expect {
	int open_rc;
	const char *errmsg;        /* substring of pt_reader_errmsg() when open_rc < 0 */
	uint32_t chunks;           /* chunks delivered by iteration */
	uint64_t records;          /* records delivered */
	uint32_t decode_errors;    /* -PT_ECORRUPT from pt_reader_next_record() */
	size_t nproblems;          /* after iteration */
	size_t iter_problems;      /* of which recorded during iteration (the last ones) */
	struct {
		uint64_t off;
		const char *msg;   /* substring */
	} problem[MAX_PROBLEMS];
	uint64_t torn_tail_offset;
	uint64_t corrupt_regions;
	int closed;
	const struct pt_record *must_see; /* a record that must be delivered, or NULL */
};

struct ctx {
	const struct img *base;
	const struct layout *l;
	struct img out;
	struct expect ex;
};

static void ex_problem(struct ctx *c, uint64_t off, const char *msg)
{
	assert_true(c->ex.nproblems < MAX_PROBLEMS);
	c->ex.problem[c->ex.nproblems].off = off;
	c->ex.problem[c->ex.nproblems].msg = msg;
	c->ex.nproblems++;
}

static void ex_iter_problem(struct ctx *c, uint64_t off, const char *msg)
{
	ex_problem(c, off, msg);
	c->ex.iter_problems++;
}

/* Chunk @i is not delivered. */
static void ex_lose(struct ctx *c, enum chunk_ix i)
{
	c->ex.chunks--;
	c->ex.records -= chunk_records[i];
}

static void ex_open_fails(struct ctx *c, int rc, const char *msg)
{
	c->ex.open_rc = rc;
	c->ex.errmsg = msg;
	c->ex.chunks = 0;
	c->ex.records = 0;
}

/* Re-encodes a stored (comp = none) chunk after editing its payload:
 * @del bytes at payload offset @pos replaced by @ins; the header's sizes,
 * record count and both checksums and the committed length follow. */
static void payload_splice(struct ctx *c, enum chunk_ix i, size_t pos, size_t del, const void *ins, size_t len,
			   int32_t records_delta)
{
	uint64_t off = c->l->off[i];
	struct fmt_chunk_hdr h;
	chunk_get(&c->out, off, &h);
	assert_int_equal(h.comp, FMT_COMP_NONE);
	img_splice(&c->out, off + PT_FMT_CHUNK_HEADER_BYTES + pos, del, ins, len);
	h.raw_bytes = h.stored_bytes = (uint32_t)(h.raw_bytes - del + len);
	h.records = (uint32_t)((int64_t)h.records + records_delta);
	h.payload_xxh = XXH3_64bits(c->out.b + off + PT_FMT_CHUNK_HEADER_BYTES, h.stored_bytes);
	chunk_put(&c->out, off, &h);
	img_set_committed(&c->out, img_committed(&c->out) - del + len);
}

/* ==== The corpus: one function per defect ==== */

static void mk_valid(struct ctx *c) { (void)c; }

static void mk_empty(struct ctx *c)
{
	c->out.n = 0;
	ex_open_fails(c, -PT_ETRUNCATED, "file has 0 bytes");
}

static void mk_trunc_file_header(struct ctx *c)
{
	c->out.n = 2000;
	ex_open_fails(c, -PT_ETRUNCATED, "file has 2000 bytes, the header needs 4096");
}

static void mk_trunc_file_header_end(struct ctx *c)
{
	c->out.n = PT_FMT_HEADER_BYTES;
	c->ex.chunks = 0;
	c->ex.records = 0;
	ex_problem(c, PT_FMT_HEADER_BYTES, "file truncated @0x1000");
	/* the meta chunk is gone: only the header's triple is left */
	ex_problem(c, 0, "clock: fewer than two calibration points");
}

static void mk_trunc_chunk_header(struct ctx *c)
{
	const uint64_t at = c->l->off[CK_T0_SEQ1];
	c->out.n = at + 20;
	ex_lose(c, CK_T0_SEQ1);
	ex_lose(c, CK_T1_SEQ1);
	ex_lose(c, CK_T0_SEQ2);
	ex_problem(c, at + 20, "file truncated");
	ex_problem(c, at, "less than a chunk header");
	c->ex.torn_tail_offset = at;
}

static void mk_trunc_payload(struct ctx *c)
{
	const uint64_t at = c->l->off[CK_T1_SEQ1];
	const uint64_t cut = at + PT_FMT_CHUNK_HEADER_BYTES + c->l->h[CK_T1_SEQ1].stored_bytes / 2;
	c->out.n = cut;
	ex_lose(c, CK_T1_SEQ1);
	ex_lose(c, CK_T0_SEQ2);
	ex_problem(c, cut, "file truncated");
	ex_problem(c, at, "torn tail");
	c->ex.torn_tail_offset = at;
}

static void mk_trunc_chunk_boundary(struct ctx *c)
{
	c->out.n = c->l->off[CK_T0_SEQ2];
	ex_lose(c, CK_T0_SEQ2);
	ex_problem(c, c->out.n, "file truncated");
}

static void mk_bad_magic(struct ctx *c)
{
	c->out.b[0] = 'X';
	ex_open_fails(c, -PT_ECORRUPT, "bad magic");
}

static void mk_bad_version(struct ctx *c)
{
	fmt_put16(c->out.b + FMT_OFF_VERSION_MAJOR, 2);
	fmt_put64(c->out.b + FMT_OFF_HEADER_XXH, XXH3_64bits(c->out.b, FMT_OFF_HEADER_XXH));
	ex_open_fails(c, -PT_EVERSION, "format version 2.1");
}

static void mk_newer_minor(struct ctx *c)
{
	fmt_put16(c->out.b + FMT_OFF_VERSION_MINOR, 7);
	fmt_put64(c->out.b + FMT_OFF_HEADER_XXH, XXH3_64bits(c->out.b, FMT_OFF_HEADER_XXH));
}

static void mk_crc_mismatch_file_header(struct ctx *c)
{
	img_flip(&c->out, FMT_OFF_HOST + 2, 1); /* first byte of the host name */
	ex_problem(c, 0, "header @0x0: checksum mismatch");
}

static void mk_crc_mismatch_chunk_header(struct ctx *c)
{
	img_flip(&c->out, c->l->off[CK_T1_SEQ0] + FMT_CK_OFF_SEQ, 0);
	ex_lose(c, CK_T1_SEQ0);
	ex_problem(c, c->l->off[CK_T1_SEQ0], "chunk header checksum mismatch; skipped");
	ex_problem(c, c->l->off[CK_T1_SEQ1], "thread 1: chunk sequence 1 follows 0 (earlier chunks missing)");
	c->ex.corrupt_regions = 1;
}

static void mk_crc_mismatch_payload_zstd(struct ctx *c)
{
	const uint64_t at = c->l->off[CK_T0_SEQ0];
	img_flip(&c->out, at + PT_FMT_CHUNK_HEADER_BYTES + c->l->h[CK_T0_SEQ0].stored_bytes / 2, 3);
	ex_lose(c, CK_T0_SEQ0);
	ex_iter_problem(c, at, "payload checksum mismatch");
}

static void mk_crc_mismatch_payload_raw(struct ctx *c)
{
	const uint64_t at = c->l->off[CK_T0_SEQ1];
	img_flip(&c->out, at + PT_FMT_CHUNK_HEADER_BYTES + 1, 0);
	ex_lose(c, CK_T0_SEQ1);
	ex_iter_problem(c, at, "payload checksum mismatch");
}

static void mk_crc_mismatch_meta_payload(struct ctx *c)
{
	const uint64_t at = c->l->off[CK_META];
	img_flip(&c->out, at + PT_FMT_CHUNK_HEADER_BYTES + c->l->h[CK_META].stored_bytes / 2, 5);
	ex_lose(c, CK_META);
	/* reported once, when the tables are decoded at open; iteration skips
	 * the chunk without reporting it again */
	ex_problem(c, at, "payload checksum mismatch");
	ex_problem(c, 0, "clock: fewer than two calibration points");
}

static void mk_absurd_stored_length(struct ctx *c)
{
	const uint64_t at = c->l->off[CK_T1_SEQ0];
	struct fmt_chunk_hdr h = c->l->h[CK_T1_SEQ0];
	h.stored_bytes = 0xfffffff0u;
	chunk_put(&c->out, at, &h);
	ex_lose(c, CK_T1_SEQ0);
	ex_problem(c, at, "chunk size out of bounds; skipped");
	ex_problem(c, c->l->off[CK_T1_SEQ1], "thread 1: chunk sequence 1 follows 0 (earlier chunks missing)");
	c->ex.corrupt_regions = 1;
}

static void mk_overlong_length_mid(struct ctx *c)
{
	const uint64_t at = c->l->off[CK_T1_SEQ0];
	struct fmt_chunk_hdr h = c->l->h[CK_T1_SEQ0];
	h.stored_bytes = PT_FMT_MAX_CHUNK_RAW_BYTES; /* within bounds, past the end of the file */
	chunk_put(&c->out, at, &h);
	ex_lose(c, CK_T1_SEQ0);
	ex_problem(c, at, "chunk length runs into the next chunk; skipped");
	ex_problem(c, c->l->off[CK_T1_SEQ1], "thread 1: chunk sequence 1 follows 0 (earlier chunks missing)");
	c->ex.corrupt_regions = 1;
}

static void mk_overlong_length_last(struct ctx *c)
{
	const uint64_t at = c->l->off[CK_T0_SEQ2];
	struct fmt_chunk_hdr h = c->l->h[CK_T0_SEQ2];
	h.stored_bytes = 1u << 20;
	chunk_put(&c->out, at, &h);
	ex_lose(c, CK_T0_SEQ2);
	ex_problem(c, at, "torn tail");
	c->ex.torn_tail_offset = at;
}

static void mk_unknown_chunk_kind(struct ctx *c)
{
	const uint64_t at = c->l->off[CK_T1_SEQ1];
	struct fmt_chunk_hdr h = c->l->h[CK_T1_SEQ1];
	h.kind = 3;
	chunk_put(&c->out, at, &h);
	ex_lose(c, CK_T1_SEQ1);
	ex_problem(c, at, "unknown chunk kind; skipped");
	c->ex.corrupt_regions = 1;
}

static void mk_raw_size_mismatch(struct ctx *c)
{
	const uint64_t at = c->l->off[CK_T0_SEQ0];
	struct fmt_chunk_hdr h = c->l->h[CK_T0_SEQ0];
	h.raw_bytes++;
	chunk_put(&c->out, at, &h);
	ex_lose(c, CK_T0_SEQ0);
	ex_iter_problem(c, at, "zstd frame size disagrees with header");
}

static void mk_committed_beyond_eof(struct ctx *c)
{
	img_set_committed(&c->out, c->out.n + 4096);
	ex_problem(c, c->out.n, "file truncated");
}

static void mk_committed_zero(struct ctx *c)
{
	img_set_committed(&c->out, 0);
	ex_problem(c, FMT_OFF_COMMITTED, "committed length 0 invalid");
}

/* Not a defect: a reader that opened mid-write sees only the committed prefix. */
static void mk_committed_mid(struct ctx *c)
{
	img_set_committed(&c->out, c->l->off[CK_T0_SEQ1]);
	ex_lose(c, CK_T0_SEQ1);
	ex_lose(c, CK_T1_SEQ1);
	ex_lose(c, CK_T0_SEQ2);
}

static void mk_garbage_between_chunks(struct ctx *c)
{
	uint8_t g[1000];
	junk(g, sizeof(g), 1);
	memcpy(g + 100, FMT_CHUNK_MAGIC, 4); /* a false magic the checksum must reject */
	img_splice(&c->out, c->l->off[CK_T0_SEQ1], 0, g, sizeof(g));
	img_set_committed(&c->out, c->out.n);
	ex_problem(c, c->l->off[CK_T0_SEQ1], "bad chunk magic; skipped 1000 bytes to the next chunk");
	c->ex.corrupt_regions = 1;
}

static void mk_trailing_garbage(struct ctx *c)
{
	uint8_t g[200];
	junk(g, sizeof(g), 2);
	img_splice(&c->out, c->out.n, 0, g, sizeof(g));
	img_set_committed(&c->out, c->out.n);
	ex_problem(c, c->l->end, "bad chunk magic; skipped 200 bytes to the end");
	c->ex.corrupt_regions = 1;
}

static void mk_trailing_partial(struct ctx *c)
{
	uint8_t g[30];
	junk(g, sizeof(g), 3);
	img_splice(&c->out, c->out.n, 0, g, sizeof(g));
	img_set_committed(&c->out, c->out.n);
	ex_problem(c, c->l->end, "torn tail @0x");
	c->ex.torn_tail_offset = c->l->end;
}

static void mk_unknown_record_kind(struct ctx *c)
{
	static const uint8_t rec[] = { 0x7f, 3, 'x', 'y', 'z' };
	payload_splice(c, CK_T0_SEQ1, 3, 0, rec, sizeof(rec), 1);
}

static void mk_reserved_record_kind(struct ctx *c)
{
	static const struct pt_record instant = {
		.kind = PT_REC_INSTANT, .id = 2, .aux = 9, .value = 7, .value2 = 0, .ticks = SMALL_FIRST_TICKS + 5,
	};
	uint8_t buf[64];
	struct fmt_enc e;
	fmt_enc_reset(&e, buf, sizeof(buf));
	assert_int_equal(fmt_enc_record(&e, &instant), 0);
	payload_splice(c, CK_T0_SEQ1, 3, 0, buf, (size_t)(e.pos - buf), 1);
	c->ex.records++;
	c->ex.must_see = &instant;
}

static void mk_overlong_varint(struct ctx *c)
{
	/* BEGIN whose dt is an 11-byte varint (10 is the maximum) */
	static const uint8_t rec[] = { PT_REC_BEGIN, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
				       0x80, 0x80, 0x80, 0x00, 0x02 };
	payload_splice(c, CK_T0_SEQ1, 3, 0, rec, sizeof(rec), 1);
	c->ex.records--; /* the BEGIN before it is delivered, the END_TOP after it is not */
	c->ex.decode_errors = 1;
	ex_iter_problem(c, c->l->off[CK_T0_SEQ1], "payload does not decode at byte 4; rest of chunk dropped");
}

/* A clock table whose mean slope is 0 ns per tick (found by tests/fuzz):
 * the header's start time is 0 (so it is no calibration point) and the
 * second clock record repeats the first one's CLOCK_MONOTONIC time. The
 * reader takes it as it is; the window bounds derived from that slope
 * must saturate (test_clock_zero_slope_window). */
static void mk_clock_zero_slope(struct ctx *c)
{
	uint8_t ns1[10], ns2[10];
	const size_t n1 = (size_t)(fmt_put_varint(ns1, CLOCK1_NS) - ns1), n2 = (size_t)(fmt_put_varint(ns2, CLOCK2_NS) - ns2);
	const uint8_t *pay = c->out.b + c->l->off[CK_META] + PT_FMT_CHUNK_HEADER_BYTES;
	const uint8_t *at = memmem(pay, ck_len(c->l, CK_META) - PT_FMT_CHUNK_HEADER_BYTES, ns2, n2);
	assert_non_null(at);
	payload_splice(c, CK_META, (size_t)(at - pay), n2, ns1, n1, 0);
	fmt_put64(c->out.b + FMT_OFF_START_MONO, 0);
	fmt_put64(c->out.b + FMT_OFF_HEADER_XXH, XXH3_64bits(c->out.b, FMT_OFF_HEADER_XXH));
}

static void mk_sequence_gap(struct ctx *c)
{
	const uint64_t len = ck_len(c->l, CK_T0_SEQ1);
	img_splice(&c->out, c->l->off[CK_T0_SEQ1], len, NULL, 0);
	img_set_committed(&c->out, c->out.n);
	ex_lose(c, CK_T0_SEQ1);
	ex_problem(c, c->l->off[CK_T0_SEQ2] - len, "thread 0: chunk sequence 2 follows 0 (chunks missing)");
}

/* CK_T0_SEQ1 twice in a row, byte for byte (a duplicated block): the copy
 * is reported and skipped, its records delivered once. */
/* Writes a byte-for-byte copy of chunk @i right after it; returns its length. */
static uint64_t copy_after(struct ctx *c, enum chunk_ix i)
{
	const uint64_t off = c->l->off[i], len = ck_len(c->l, i);
	uint8_t *copy = malloc(len);
	assert_non_null(copy);
	memcpy(copy, c->out.b + off, len);
	img_splice(&c->out, off + len, 0, copy, len);
	free(copy);
	img_set_committed(&c->out, img_committed(&c->out) + len);
	return len;
}

static void mk_chunk_repeated(struct ctx *c)
{
	static char msg[96];
	const uint64_t off = c->l->off[CK_T0_SEQ1], len = copy_after(c, CK_T0_SEQ1);
	snprintf(msg, sizeof(msg), "thread 0: chunk sequence 1 repeats chunk @0x%llx exactly (skipped)",
		 (unsigned long long)off);
	ex_problem(c, off + len, msg);
}

/* CK_T0_SEQ1 followed by another chunk of sequence 1 whose payload differs
 * (one tick delta): not a repeat, so both are delivered, and the second
 * goes back in sequence. */
static void mk_chunk_out_of_order(struct ctx *c)
{
	const uint64_t off = c->l->off[CK_T0_SEQ1], len = copy_after(c, CK_T0_SEQ1);
	const uint8_t dt = 0x0b; /* END_TOP's delta 10 -> 11 in the first of the two */
	payload_splice(c, CK_T0_SEQ1, sizeof(small_payload) - 1, 1, &dt, 1, 0);
	c->ex.chunks++;
	c->ex.records += chunk_records[CK_T0_SEQ1];
	ex_problem(c, off + len, "thread 0: chunk sequence 1 follows 1 (out of order or repeated)");
}

struct variant {
	const char *name;
	void (*make)(struct ctx *c);
};

#define V(n, f) { n, f }
static const struct variant variants[] = {
	V("valid", mk_valid),
	V("chunk-repeated", mk_chunk_repeated),
	V("chunk-out-of-order", mk_chunk_out_of_order),
	V("empty", mk_empty),
	V("trunc-file-header", mk_trunc_file_header),
	V("trunc-file-header-end", mk_trunc_file_header_end),
	V("trunc-chunk-header", mk_trunc_chunk_header),
	V("trunc-payload", mk_trunc_payload),
	V("trunc-chunk-boundary", mk_trunc_chunk_boundary),
	V("bad-magic", mk_bad_magic),
	V("bad-version", mk_bad_version),
	V("newer-minor", mk_newer_minor),
	V("crc-mismatch-file-header", mk_crc_mismatch_file_header),
	V("crc-mismatch-chunk-header", mk_crc_mismatch_chunk_header),
	V("crc-mismatch-payload-zstd", mk_crc_mismatch_payload_zstd),
	V("crc-mismatch-payload-raw", mk_crc_mismatch_payload_raw),
	V("crc-mismatch-meta-payload", mk_crc_mismatch_meta_payload),
	V("absurd-stored-length", mk_absurd_stored_length),
	V("overlong-length-mid", mk_overlong_length_mid),
	V("overlong-length-last", mk_overlong_length_last),
	V("unknown-chunk-kind", mk_unknown_chunk_kind),
	V("raw-size-mismatch", mk_raw_size_mismatch),
	V("committed-beyond-eof", mk_committed_beyond_eof),
	V("committed-zero", mk_committed_zero),
	V("committed-mid", mk_committed_mid),
	V("garbage-between-chunks", mk_garbage_between_chunks),
	V("trailing-garbage", mk_trailing_garbage),
	V("trailing-partial", mk_trailing_partial),
	V("unknown-record-kind", mk_unknown_record_kind),
	V("reserved-record-kind", mk_reserved_record_kind),
	V("overlong-varint", mk_overlong_varint),
	V("sequence-gap", mk_sequence_gap),
	V("clock-zero-slope", mk_clock_zero_slope),
};
#define NVARIANTS PT_ARRAY_SIZE(variants)

/* Applies variant @v to @base: c->out gets the file, c->ex what a reader must report. */
static void make_variant(const struct variant *v, const struct img *base, const struct layout *l, struct ctx *c)
{
	memset(c, 0, sizeof(*c));
	c->base = base;
	c->l = l;
	c->out.n = base->n;
	c->out.b = malloc(base->n);
	assert_non_null(c->out.b);
	memcpy(c->out.b, base->b, base->n);
	c->ex.chunks = CK_COUNT;
	c->ex.records = REC_TOTAL;
	c->ex.torn_tail_offset = UINT64_MAX;
	c->ex.closed = 1;
	v->make(c);
}

/* ==== Reading a file back ==== */

static int same_record(const struct pt_record *a, const struct pt_record *b)
{
	return a->kind == b->kind && a->id == b->id && a->aux == b->aux && a->value == b->value &&
	       a->value2 == b->value2 && a->ticks == b->ticks;
}

static void dump_problems(const struct pt_reader *r)
{
	for (size_t i = 0; i < pt_reader_problem_count(r); i++) {
		uint64_t off;
		const char *m = pt_reader_problem(r, i, &off);
		print_message("# problem %zu @%llu: %s\n", i, (unsigned long long)off, m);
	}
}

static void check_reader(const char *path, const struct expect *ex)
{
	struct pt_reader *r = NULL;
	struct pt_chunk_info ci;
	struct pt_record rec;
	uint32_t chunks = 0, errors = 0;
	uint64_t records = 0;
	int seen = 0, rc;

	rc = pt_reader_open(path, &r);
	assert_int_equal(rc, ex->open_rc);
	assert_non_null(r);
	if (rc < 0) {
		if (!strstr(pt_reader_errmsg(r), ex->errmsg))
			fail_msg("errmsg \"%s\" lacks \"%s\"", pt_reader_errmsg(r), ex->errmsg);
		pt_reader_close(r);
		return;
	}
	const struct pt_trace_info *info = pt_reader_info(r);
	if (pt_reader_problem_count(r) != ex->nproblems - ex->iter_problems)
		dump_problems(r);
	assert_int_equal(pt_reader_problem_count(r), ex->nproblems - ex->iter_problems);
	assert_int_equal(info->torn_tail_offset, ex->torn_tail_offset);
	assert_int_equal(info->corrupt_regions, ex->corrupt_regions);
	assert_int_equal(info->closed, ex->closed);
	assert_int_equal(pt_reader_next_record(r, &rec, sizeof(rec)), -PT_ESTATE);

	while ((rc = pt_reader_next_chunk(r, PT_READER_ALL_CHUNKS, &ci, sizeof(ci))) == 1) {
		chunks++;
		while ((rc = pt_reader_next_record(r, &rec, sizeof(rec))) == 1) {
			records++;
			seen |= ex->must_see && same_record(&rec, ex->must_see);
		}
		if (rc < 0) {
			assert_int_equal(rc, -PT_ECORRUPT);
			errors++;
		}
		assert_int_equal(pt_reader_next_record(r, &rec, sizeof(rec)), -PT_ESTATE);
	}
	assert_int_equal(rc, 0);
	assert_int_equal(chunks, ex->chunks);
	assert_int_equal(records, ex->records);
	assert_int_equal(errors, ex->decode_errors);
	assert_int_equal(seen, ex->must_see != NULL);
	assert_int_equal(info->torn_tail_offset, ex->torn_tail_offset);
	assert_int_equal(info->corrupt_regions, ex->corrupt_regions);

	int ok = pt_reader_problem_count(r) == ex->nproblems;
	for (size_t i = 0; ok && i < ex->nproblems; i++) {
		uint64_t off;
		const char *m = pt_reader_problem(r, i, &off);
		ok = m && off == ex->problem[i].off && strstr(m, ex->problem[i].msg);
		if (!ok)
			print_message("# expected problem %zu @%llu: ...%s...\n", i,
				      (unsigned long long)ex->problem[i].off, ex->problem[i].msg);
	}
	if (!ok) {
		dump_problems(r);
		fail_msg("problems differ");
	}
	assert_null(pt_reader_problem(r, ex->nproblems, NULL));
	pt_reader_close(r);
}

/* ==== Fixtures ==== */

static struct corpus {
	char dir[PATH_MAX];
	char base_path[PATH_MAX];
	struct img base;
	struct layout l;
	struct img ckd_base; /* checked-in valid.ptz */
	struct layout ckd_l;
	int have_ckd;
} corpus;

static void path_in(char *out, size_t cap, const char *dir, const char *name)
{
	int n = snprintf(out, cap, "%s/%s.ptz", dir, name);
	assert_true(n > 0 && (size_t)n < cap);
}

static int setup_corpus(void **state)
{
	const char *tmp = getenv("PTZ_TEST_TMPDIR");
	(void)state;
	snprintf(corpus.dir, sizeof(corpus.dir), "%s/ptz-corrupt-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(corpus.dir)) {
		print_error("mkdtemp %s: %s\n", corpus.dir, strerror(errno));
		return -1;
	}
	path_in(corpus.base_path, sizeof(corpus.base_path), corpus.dir, "base");
	build_trace(corpus.base_path, 0);
	img_load(corpus.base_path, &corpus.base);
	layout_of(&corpus.base, &corpus.l);
#ifdef PT_CORPUS_DIR
	char p[PATH_MAX];
	path_in(p, sizeof(p), PT_CORPUS_DIR, "valid");
	img_load(p, &corpus.ckd_base);
	layout_of(&corpus.ckd_base, &corpus.ckd_l);
	corpus.have_ckd = 1;
#endif
	return 0;
}

static int teardown_corpus(void **state)
{
	(void)state;
	unlink(corpus.base_path);
	rmdir(corpus.dir);
	img_free(&corpus.base);
	img_free(&corpus.ckd_base);
	return 0;
}

/* ==== Tests ==== */

/* The valid trace reads back whole: tables, clock mapping, chunk fields. */
static void test_fmt_writer_close_trace_reads_back(void **state)
{
	struct pt_reader *r;
	struct pt_chunk_info ci;
	struct pt_record rec;
	struct pt_thread_info ti;
	uint32_t dom = 99;
	(void)state;

	assert_int_equal(pt_reader_open(corpus.base_path, &r), 0);
	const struct pt_trace_info *info = pt_reader_info(r);
	assert_int_equal(pt_reader_problem_count(r), 0);
	assert_string_equal(pt_reader_errmsg(r), "");
	assert_int_equal(info->version_major, 1);
	assert_int_equal(info->version_minor, 1); /* a stream trace uses no 1.2 feature (doc/trace-format.md §8) */
	assert_int_equal(info->clock_source, PT_CLOCK_TSC);
	assert_int_equal(info->pid, 4242);
	assert_int_equal(info->start_real_ns, START_REAL_NS);
	assert_string_equal(info->process_name, "corrupt-gen");
	assert_string_equal(info->host, "testhost");
	assert_string_equal(info->cmdline, "test-corrupt-corpus --write-corpus");
	assert_string_equal(info->recorder_version, "ptz-test 1");
	assert_int_equal(info->committed_bytes, corpus.base.n);
	assert_int_equal(info->file_bytes, corpus.base.n);
	assert_int_equal(info->chunks, CK_COUNT);
	assert_int_equal(info->event_chunks, CK_COUNT - 1);

	assert_string_equal(pt_reader_string(r, 3, &dom), "kernel");
	assert_int_equal(dom, 1);
	assert_string_equal(pt_reader_domain(r, 1), "gpu");
	assert_null(pt_reader_string(r, 5, NULL));
	assert_int_equal(pt_reader_max_string_id(r), 5);
	assert_int_equal(pt_reader_thread_count(r), 2);
	assert_int_equal(pt_reader_thread(r, 1, &ti, sizeof(ti)), 1);
	assert_int_equal(ti.index, 1);
	assert_int_equal(ti.tid, 101);
	assert_int_equal(ti.end_ticks, 60000);
	assert_string_equal(ti.name, "worker");

	/* §7: points (1000, 5.000 ms), (3000, 5.001 ms), (2001000, 6.000 ms): 0.5 ns/tick */
	assert_int_equal(pt_reader_ticks_to_ns(r, 1001000), 5500000);
	assert_int_equal(pt_reader_ticks_to_ns(r, 0), 4999500);
	assert_int_equal(pt_reader_ticks_to_ns(r, 3001000), 6500000);
	assert_true(pt_reader_ns_per_tick(r) == 0.5);

	for (int i = 0; i < CK_COUNT; i++) {
		uint32_t n = 0;
		uint64_t last_timed = 0;
		assert_int_equal(pt_reader_next_chunk(r, PT_READER_ALL_CHUNKS, &ci, sizeof(ci)), 1);
		assert_int_equal(ci.offset, corpus.l.off[i]);
		assert_int_equal(ci.records, chunk_records[i]);
		assert_int_equal(ci.thread, i == CK_META ? PT_FMT_META_THREAD : (uint32_t)(i + 1) % 2);
		while (pt_reader_next_record(r, &rec, sizeof(rec)) == 1) {
			if (n++ == 0 && i != CK_META)
				assert_int_equal(rec.ticks, ci.first_ticks);
			if (rec.kind != PT_REC_METRIC && rec.kind != PT_REC_TRANSFER)
				last_timed = rec.ticks;
		}
		assert_int_equal(n, chunk_records[i]);
		if (i != CK_META)
			assert_int_equal(last_timed, ci.last_ticks);
	}
	assert_int_equal(pt_reader_next_chunk(r, PT_READER_ALL_CHUNKS, &ci, sizeof(ci)), 0);

	/* per-thread selection */
	static const struct {
		uint32_t thread, chunks, records;
	} sel[] = { { 0, 3, 354 }, { 1, 2, 322 }, { PT_FMT_META_THREAD, 1, 9 } };
	for (size_t s = 0; s < PT_ARRAY_SIZE(sel); s++) {
		uint32_t chunks = 0, records = 0;
		pt_reader_rewind(r);
		while (pt_reader_next_chunk(r, sel[s].thread, &ci, sizeof(ci)) == 1) {
			chunks++;
			while (pt_reader_next_record(r, &rec, sizeof(rec)) == 1)
				records++;
		}
		assert_int_equal(chunks, sel[s].chunks);
		assert_int_equal(records, sel[s].records);
	}
	assert_int_equal(pt_reader_problem_count(r), 0);
	pt_reader_close(r);
}

/* §5: a writer that is never closed (a killed recorder) leaves a readable
 * file: committed length exact, closed flag clear, fallocated zero tail
 * beyond it. Without a committed length the zero tail is a corrupt region. */
static void test_fmt_writer_abandon_trace_reads_back(void **state)
{
	char p[PATH_MAX];
	struct img im;
	struct ctx c;
	(void)state;

	path_in(p, sizeof(p), corpus.dir, "unclosed");
	build_trace(p, 1);
	img_load(p, &im);
	assert_true(im.n > corpus.base.n);
	assert_int_equal(img_committed(&im), corpus.base.n);
	assert_int_equal(fmt_get64(im.b + FMT_OFF_FLAGS), 0);
	for (size_t i = corpus.base.n; i < im.n; i++)
		if (im.b[i] != 0)
			fail_msg("byte %zu past the committed length is not zero", i);

	make_variant(&variants[0], &im, &corpus.l, &c);
	c.ex.closed = 0;
	check_reader(p, &c.ex);
	img_free(&c.out);

	img_set_committed(&im, 0);
	img_store(p, &im);
	make_variant(&variants[0], &im, &corpus.l, &c);
	c.ex.closed = 0;
	ex_problem(&c, FMT_OFF_COMMITTED, "committed length 0 invalid");
	ex_problem(&c, corpus.base.n, "bad chunk magic; skipped");
	c.ex.corrupt_regions = 1;
	check_reader(p, &c.ex);
	img_free(&c.out);
	img_free(&im);
	unlink(p);
}

/* One corpus file, generated from this build's writer. */
static void test_pt_reader_open_generated_file(void **state)
{
	const struct variant *v = *state;
	char p[PATH_MAX];
	struct ctx c;

	make_variant(v, &corpus.base, &corpus.l, &c);
	path_in(p, sizeof(p), corpus.dir, v->name);
	img_store(p, &c.out);
	check_reader(p, &c.ex);
	unlink(p);
	img_free(&c.out);
}

/* The same file, checked in: the bytes must be the defect applied to the
 * checked-in valid.ptz, and the reader must report the same. */
static void test_pt_reader_open_checked_in_file(void **state)
{
	const struct variant *v = *state;
	char p[PATH_MAX];
	struct img im;
	struct ctx c;

	if (!corpus.have_ckd)
		skip();
	make_variant(v, &corpus.ckd_base, &corpus.ckd_l, &c);
	path_in(p, sizeof(p), PT_CORPUS_DIR_OR_EMPTY, v->name);
	img_load(p, &im);
	assert_int_equal(im.n, c.out.n);
	if (im.n && memcmp(im.b, c.out.b, im.n) != 0)
		fail_msg("%s is stale: regenerate with --write-corpus", p);
	check_reader(p, &c.ex);
	img_free(&im);
	img_free(&c.out);
}

/* Sections the analyzer keeps from @path in the window [@since_ns, @until_ns]. */
static uint64_t window_sections(const char *path, uint64_t since_ns, uint64_t until_ns)
{
	struct ana_options ao = { .thread = -1, .since_ns = since_ns, .until_ns = until_ns };
	struct ana_result res;
	char err[256];
	assert_int_equal(ana_run(path, &ao, &res, err, sizeof(err)), 0);
	uint64_t n = 0; /* occurrences on every call path but the root (res.sections counts those read) */
	for (uint32_t i = 1; i < res.merged.count; i++)
		n += res.merged.n[i].agg.count;
	ana_result_free(&res);
	return n;
}

/* An export of @path (@kind 0 = Perfetto, 1 = Chrome JSON) in the window up to @until_ns; the caller frees it. */
static char *window_export(const char *path, int kind, uint64_t until_ns, size_t *len)
{
	const struct pfx_opts po = { .until_ns = until_ns };
	char *buf = NULL, err[256];
	FILE *f = open_memstream(&buf, len);
	assert_non_null(f);
	if (kind == 0)
		assert_int_equal(pfx_write_perfetto(path, f, &po, err, sizeof(err)), 0);
	else
		assert_int_equal(pfx_write_chrome(path, f, &po, err, sizeof(err)), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* clock-zero-slope.ptz (found by tests/fuzz): a mean slope of 0 ns per
 * tick puts every tick at the trace start, so --until 1 s keeps every
 * section and --since 1 ns none, in the analyzer and in both exports. The
 * window bounds, --since / slope in ticks, were converted from an infinite
 * double (undefined: UBSan's float-cast-overflow; 0 on x86-64, which
 * turned --until into "nothing after the start" and --since into "all"):
 * they now saturate (ana_window_ticks()). */
static void test_clock_zero_slope_window(void **state)
{
	const struct variant *v = &variants[NVARIANTS - 1];
	char p[2][PATH_MAX];
	struct ctx c;
	(void)state;

	assert_string_equal(v->name, "clock-zero-slope");
	make_variant(v, &corpus.base, &corpus.l, &c);
	path_in(p[0], sizeof(p[0]), corpus.dir, v->name);
	img_store(p[0], &c.out);
	img_free(&c.out);
	path_in(p[1], sizeof(p[1]), PT_CORPUS_DIR_OR_EMPTY, v->name);
	for (int i = 0; i < 2; i++) {
		if (i == 1 && !corpus.have_ckd)
			break;
		struct pt_reader *r;
		assert_int_equal(pt_reader_open(p[i], &r), 0);
		assert_true(pt_reader_ns_per_tick(r) == 0.0);
		pt_reader_close(r);

		const uint64_t all = window_sections(p[i], 0, 0);
		assert_true(all > 0);
		assert_int_equal(window_sections(p[i], 0, 1000000000), all);
		assert_int_equal(window_sections(p[i], 1, 0), 0);
		for (int kind = 0; kind < 2; kind++) {
			size_t n_all, n_win;
			char *whole = window_export(p[i], kind, 0, &n_all);
			char *win = window_export(p[i], kind, 1000000000, &n_win);
			if (n_all != n_win || memcmp(whole, win, n_all) != 0)
				fail_msg("%s: %s export up to 1 s differs from the whole one (%zu vs %zu bytes)", p[i],
					 kind ? "Chrome" : "Perfetto", n_win, n_all);
			free(whole);
			free(win);
		}
	}
	unlink(p[0]);
}

/* ==== Generator and runner ==== */

/* --write-corpus DIR: writes valid.ptz and every defect next to it and
 * prints what a reader must report for each. */
static int write_corpus(const char *dir)
{
	char p[PATH_MAX];
	struct img base;
	struct layout l;
	struct ctx c;

	path_in(p, sizeof(p), dir, "valid");
	build_trace(p, 0);
	img_load(p, &base);
	layout_of(&base, &l);
	printf("%-28s %6s %8s %6s %7s %5s %8s %7s %s\n", "file", "bytes", "open", "chunks", "records", "errs",
	       "problems", "corrupt", "torn_tail");
	for (size_t i = 0; i < NVARIANTS; i++) {
		make_variant(&variants[i], &base, &l, &c);
		path_in(p, sizeof(p), dir, variants[i].name);
		img_store(p, &c.out);
		char torn[24] = "-";
		if (c.ex.torn_tail_offset != UINT64_MAX)
			snprintf(torn, sizeof(torn), "%llu", (unsigned long long)c.ex.torn_tail_offset);
		printf("%-28s %6zu %8d %6u %7llu %5u %4zu/%-3zu %7llu %s\n", variants[i].name, c.out.n, c.ex.open_rc,
		       c.ex.chunks, (unsigned long long)c.ex.records, c.ex.decode_errors,
		       c.ex.nproblems - c.ex.iter_problems, c.ex.nproblems, (unsigned long long)c.ex.corrupt_regions,
		       torn);
		img_free(&c.out);
	}
	img_free(&base);
	return 0;
}

int main(int argc, char **argv)
{
	static struct CMUnitTest tests[3 + 2 * NVARIANTS];
	static char names[2 * NVARIANTS][96];
	size_t n = 0;

	if (argc == 3 && strcmp(argv[1], "--write-corpus") == 0)
		return write_corpus(argv[2]);
	if (argc != 1) {
		fprintf(stderr, "usage: %s [--write-corpus DIR]\n", argv[0]);
		return 2;
	}
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_fmt_writer_close_trace_reads_back);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_fmt_writer_abandon_trace_reads_back);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_clock_zero_slope_window);
	for (size_t i = 0; i < NVARIANTS; i++) {
		snprintf(names[2 * i], sizeof(names[0]), "test_pt_reader_open_generated_file(%s)", variants[i].name);
		snprintf(names[2 * i + 1], sizeof(names[0]), "test_pt_reader_open_checked_in_file(%s)",
			 variants[i].name);
		tests[n++] = (struct CMUnitTest){ names[2 * i], test_pt_reader_open_generated_file, NULL, NULL,
						  (void *)&variants[i] };
		tests[n++] = (struct CMUnitTest){ names[2 * i + 1], test_pt_reader_open_checked_in_file, NULL, NULL,
						  (void *)&variants[i] };
	}
	return _cmocka_run_group_tests("corrupt-corpus", tests, n, setup_corpus, teardown_corpus);
}
