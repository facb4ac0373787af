/*
 * tests/fuzz/fuzz_decoder.c - libFuzzer target "decoder": the record decoder
 * of one raw chunk payload (doc/trace-format.md §4), without the file and
 * chunk framing around it (README.md here).
 *
 * Input: 8 bytes of first_ticks (little-endian), then a raw payload; an
 * input shorter than 8 bytes is a payload with first_ticks 0. Seeds are the
 * payloads of the golden, corrupt and seed traces (gen-stored-seeds
 * --payloads). Besides the promise of §6 (no crash, hang, leak or ASan/UBSan
 * report), three answers must agree, and abort() if they do not:
 *  1. fmt_dec_next() over the whole payload: the records, then the end or
 *     the damage, and the byte it stopped at;
 *  2. the analyzer's fused loop (fmt_dec_fast_begin/end/metric, the rest
 *     through fmt_dec_next(); analyzer/ana_build.c read_events_mode()):
 *     the same records, the same end, the same byte
 *     (trace-format/fmt_internal.h promises it);
 *  3. the records of 1 encoded again (fmt_enc_record()) and decoded: the
 *     same records, then a clean end.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptz/format.h"
#include "tests/fuzz/fuzz_common.h"
#include "trace-format/fmt_internal.h"

/* Inputs are small (run.sh's -max_len), but one can hold more records than
 * this (a run of one-byte records): those past it are decoded but not
 * compared. */
#define MAX_RECS 4096

static struct pt_record recs[MAX_RECS], again[MAX_RECS];

static void mismatch(const char *what, size_t i)
{
	fprintf(stderr, "fuzz-decoder: %s (record %zu)\n", what, i);
	abort();
}

static int timed(uint32_t kind)
{
	return kind != PT_REC_METRIC && kind != PT_REC_TRANSFER && kind != PT_REC_STRING && kind != PT_REC_DOMAIN;
}

/* Same record? Ticks only where the record has its own (a METRIC's is its
 * predecessor's, which a re-encoding may move). */
static int same(const struct pt_record *a, const struct pt_record *b, int ticks)
{
	return a->kind == b->kind && (!ticks || !timed(a->kind) || a->ticks == b->ticks) && a->value == b->value &&
	       a->value2 == b->value2 && a->value3 == b->value3 && a->value4 == b->value4 && a->id == b->id &&
	       a->aux == b->aux && a->str_len == b->str_len && (a->str == NULL) == (b->str == NULL) &&
	       (!a->str_len || memcmp(a->str, b->str, a->str_len) == 0);
}

/* 2: the fused loop, checked record by record against recs[]. */
static void fused(const uint8_t *p, size_t len, uint64_t first, size_t n, int rc1, const uint8_t *stop1)
{
	struct fmt_dec d;
	struct fmt_fast fd;
	size_t i = 0;
	int rc;
	fmt_dec_init(&d, p, len, first);
	fmt_fast_load(&fd, &d);
	for (;; i++) {
		if (d.end - fd.pos >= FMT_DEC_FAST_SLACK) {
			uint8_t tag = fd.pos[0];
			struct pt_record r = { .kind = tag == FMT_TAG_END_TOP ? PT_REC_END : tag };
			int ok = 0;
			if (tag == PT_REC_BEGIN)
				ok = fmt_dec_fast_begin(&fd, d.stack, &r.id);
			else if (tag == PT_REC_METRIC)
				ok = fmt_dec_fast_metric(&fd, &r.aux, &r.value);
			else if (tag == FMT_TAG_END_TOP || tag == PT_REC_END)
				ok = fmt_dec_fast_end(&fd, d.stack, &r.id);
			if (ok) {
				r.ticks = fd.ticks;
				if (i < n && i < MAX_RECS && !same(&r, &recs[i], 1))
					mismatch("fast path decodes another record than fmt_dec_next()", i);
				if (i >= n && i < MAX_RECS)
					mismatch("fast path decodes a record where fmt_dec_next() stopped", i);
				continue;
			}
		}
		struct pt_record r;
		fmt_fast_store(&fd, &d);
		rc = fmt_dec_next(&d, &r);
		fmt_fast_load(&fd, &d);
		if (rc <= 0)
			break;
		if (i < n && i < MAX_RECS && !same(&r, &recs[i], 1))
			mismatch("fused loop decodes another record than fmt_dec_next()", i);
	}
	if (n < MAX_RECS && (i != n || rc != rc1 || fd.pos != stop1))
		mismatch("fused loop stops elsewhere than fmt_dec_next()", i);
}

/* 3: recs[0..n) encoded and decoded again. */
static void round_trip(size_t n, size_t len)
{
	size_t cap = 2 * len + 2 * FMT_MAX_RECORD_BYTES; /* a 1.0 GPU_RANGE gains 2 bytes */
	uint8_t *buf = malloc(cap);
	if (!buf)
		abort();
	struct fmt_enc e;
	fmt_enc_reset(&e, buf, cap);
	for (size_t i = 0; i < n; i++)
		if (fmt_enc_record(&e, &recs[i]))
			mismatch("a decoded record does not encode", i);
	struct fmt_dec d;
	fmt_dec_init(&d, buf, (size_t)(e.pos - buf), e.first_ticks);
	size_t i = 0;
	int rc;
	while (i < n && (rc = fmt_dec_next(&d, &again[i])) == 1) {
		if (!same(&again[i], &recs[i], 1))
			mismatch("re-encoded record decodes differently", i);
		i++;
	}
	if (i != n || fmt_dec_next(&d, &again[0]) != 0)
		mismatch("re-encoded records do not decode to the same count and a clean end", i);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t first = 0;
	if (size >= 8) {
		first = fmt_get64(data);
		data += 8;
		size -= 8;
	}
	/* a copy of exactly @size bytes, so that ASan sees any read past the end */
	uint8_t *p = malloc(size ? size : 1);
	if (!p)
		abort();
	memcpy(p, data, size);

	struct fmt_dec d;
	struct pt_record r;
	size_t n = 0;
	int rc;
	fmt_dec_init(&d, p, size, first);
	while ((rc = fmt_dec_next(&d, n < MAX_RECS ? &recs[n] : &r)) == 1)
		n++;
	if (d.depth > 0 && d.depth <= FMT_CHUNK_STACK) /* touch the stack the decoder kept */
		(void)d.stack[d.depth - 1];
	fused(p, size, first, n, rc, d.pos);
	if (n <= MAX_RECS)
		round_trip(n, size);
	free(p);
	return 0;
}
