/*
 * tests/fuzz/fuzz_common.c - input and output plumbing of the libFuzzer
 * targets (fuzz_common.h).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <xxhash.h>

#include "ptz/format.h"
#include "tests/fuzz/fuzz_common.h"
#include "trace-format/fmt_internal.h"

static ssize_t sink_write(void *cookie, const char *buf, size_t len)
{
	(void)cookie;
	(void)buf;
	return (ssize_t)len;
}

FILE *fz_sink(void)
{
	static FILE *f;
	if (!f) {
		f = fopencookie(NULL, "w", (cookie_io_functions_t){ .write = sink_write });
		if (!f)
			abort();
		/* fully buffered: one sink_write() per 64 KiB, not per line */
		static char buf[1 << 16];
		setvbuf(f, buf, _IOFBF, sizeof(buf));
	}
	return f;
}

static int fuzz_fd = -1;
static uint64_t choice;

uint64_t fz_choice(void)
{
	return choice;
}

static char fuzz_path[64];

/* Replaces the memfd's contents with @data. 0 or -1. */
static int put_input(const uint8_t *data, size_t size)
{
	if (fuzz_fd < 0) {
		fuzz_fd = memfd_create("ptz-fuzz", MFD_CLOEXEC);
		if (fuzz_fd < 0)
			return -1;
		snprintf(fuzz_path, sizeof(fuzz_path), "/proc/self/fd/%d", fuzz_fd);
	}
	if (ftruncate(fuzz_fd, 0))
		return -1;
	size_t done = 0;
	while (done < size) {
		ssize_t n = pwrite(fuzz_fd, data + done, size - done, (off_t)done);
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

int fz_fix_checksums(uint8_t *b, size_t n)
{
	const size_t H = PT_FMT_CHUNK_HEADER_BYTES;
	int changed = 0;
	if (n < PT_FMT_HEADER_BYTES)
		return 0;
	uint64_t x = XXH3_64bits(b, FMT_OFF_HEADER_XXH);
	if (fmt_get64(b + FMT_OFF_HEADER_XXH) != x) {
		fmt_put64(b + FMT_OFF_HEADER_XXH, x);
		changed = 1;
	}
	if (fmt_get64(b + FMT_OFF_COMMITTED) != n) {
		fmt_put64(b + FMT_OFF_COMMITTED, n);
		changed = 1;
	}
	size_t off = PT_FMT_HEADER_BYTES;
	while (off + H <= n) {
		uint8_t *h = b + off;
		if (memcmp(h, FMT_CHUNK_MAGIC, 4) != 0) {
			off++;
			continue;
		}
		/* the payload runs to the next magic, or to the end of the file */
		const uint8_t *next = memmem(h + H, n - off - H, FMT_CHUNK_MAGIC, 4);
		size_t len = (next ? (size_t)(next - h) : n - off) - H;
		if (len > PT_FMT_MAX_CHUNK_RAW_BYTES)
			len = PT_FMT_MAX_CHUNK_RAW_BYTES;
		uint8_t old[PT_FMT_CHUNK_HEADER_BYTES];
		memcpy(old, h, H);
		fmt_put32(h + FMT_CK_OFF_STORED, (uint32_t)len);
		if (h[FMT_CK_OFF_COMP] == FMT_COMP_NONE)
			fmt_put32(h + FMT_CK_OFF_RAW, (uint32_t)len);
		if (fmt_get32(h + FMT_CK_OFF_RECORDS) > fmt_get32(h + FMT_CK_OFF_RAW))
			fmt_put32(h + FMT_CK_OFF_RECORDS, fmt_get32(h + FMT_CK_OFF_RAW));
		fmt_put64(h + FMT_CK_OFF_PAYLOAD_XXH, XXH3_64bits(h + H, len));
		fmt_put64(h + FMT_CK_OFF_HEADER_XXH, XXH3_64bits(h, FMT_CK_OFF_HEADER_XXH));
		changed |= memcmp(old, h, H) != 0;
		off += H + len;
	}
	return changed;
}

uint64_t fz_header_span_ns(const char *path)
{
	struct pt_reader *r;
	struct pt_chunk_info ci;
	uint64_t lo = UINT64_MAX, hi = 0;
	if (pt_reader_open(path, &r)) {
		pt_reader_close(r);
		return 0;
	}
	while (pt_reader_next_chunk_header(r, &ci, sizeof(ci)) == 1) {
		if (ci.thread == PT_FMT_META_THREAD)
			continue;
		uint64_t a = pt_reader_ticks_to_ns(r, ci.first_ticks), b = pt_reader_ticks_to_ns(r, ci.last_ticks);
		lo = a < lo ? a : lo;
		hi = b > hi ? b : hi;
	}
	pt_reader_close(r);
	return hi > lo ? hi - lo : 0;
}

static void run_one(const uint8_t *data, size_t size, void (*fn)(const char *path))
{
	if (put_input(data, size)) {
		perror("fuzz: memfd");
		abort();
	}
	fn(fuzz_path);
	fflush(fz_sink());
}

void fz_each_form(const uint8_t *data, size_t size, void (*fn)(const char *path))
{
	choice = XXH3_64bits(data, size);
	run_one(data, size, fn);
	uint8_t *copy = malloc(size ? size : 1);
	if (!copy)
		abort();
	memcpy(copy, data, size);
	if (fz_fix_checksums(copy, size))
		run_one(copy, size, fn);
	free(copy);
}
