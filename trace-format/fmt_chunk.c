/*
 * trace-format/fmt_chunk.c - chunk header framing (§3 of doc/trace-format.md).
 *
 * The header checksums itself (XXH3-64 over its first 56 bytes), so a reader
 * that resynchronizes on the magic never trusts a length from a random
 * match: a candidate header is used only if its checksum holds and its
 * sizes are within the documented bounds.
 */
#include <errno.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#include "trace-format/fmt_internal.h"

void fmt_chunk_hdr_write(uint8_t o[PT_FMT_CHUNK_HEADER_BYTES], const struct fmt_chunk_hdr *h)
{
	memcpy(o, FMT_CHUNK_MAGIC, 4);
	o[FMT_CK_OFF_KIND] = h->kind;
	o[FMT_CK_OFF_COMP] = h->comp;
	fmt_put16(o + FMT_CK_OFF_HDRLEN, PT_FMT_CHUNK_HEADER_BYTES);
	fmt_put32(o + FMT_CK_OFF_THREAD, h->thread);
	fmt_put32(o + FMT_CK_OFF_RECORDS, h->records);
	fmt_put64(o + FMT_CK_OFF_SEQ, h->sequence);
	fmt_put64(o + FMT_CK_OFF_FIRST, h->first_ticks);
	fmt_put64(o + FMT_CK_OFF_LAST, h->last_ticks);
	fmt_put32(o + FMT_CK_OFF_RAW, h->raw_bytes);
	fmt_put32(o + FMT_CK_OFF_STORED, h->stored_bytes);
	fmt_put64(o + FMT_CK_OFF_PAYLOAD_XXH, h->payload_xxh);
	fmt_put64(o + FMT_CK_OFF_HEADER_XXH, XXH3_64bits(o, FMT_CK_OFF_HEADER_XXH));
}

int fmt_chunk_hdr_parse(const uint8_t in[PT_FMT_CHUNK_HEADER_BYTES], struct fmt_chunk_hdr *h, const char **why)
{
	if (memcmp(in, FMT_CHUNK_MAGIC, 4) != 0) {
		*why = "bad chunk magic";
		return -PT_ECORRUPT;
	}
	if (fmt_get64(in + FMT_CK_OFF_HEADER_XXH) != XXH3_64bits(in, FMT_CK_OFF_HEADER_XXH)) {
		*why = "chunk header checksum mismatch";
		return -PT_ECHECKSUM;
	}
	h->kind = in[FMT_CK_OFF_KIND];
	h->comp = in[FMT_CK_OFF_COMP];
	h->thread = fmt_get32(in + FMT_CK_OFF_THREAD);
	h->records = fmt_get32(in + FMT_CK_OFF_RECORDS);
	h->sequence = fmt_get64(in + FMT_CK_OFF_SEQ);
	h->first_ticks = fmt_get64(in + FMT_CK_OFF_FIRST);
	h->last_ticks = fmt_get64(in + FMT_CK_OFF_LAST);
	h->raw_bytes = fmt_get32(in + FMT_CK_OFF_RAW);
	h->stored_bytes = fmt_get32(in + FMT_CK_OFF_STORED);
	h->payload_xxh = fmt_get64(in + FMT_CK_OFF_PAYLOAD_XXH);
	if (fmt_get16(in + FMT_CK_OFF_HDRLEN) != PT_FMT_CHUNK_HEADER_BYTES) {
		*why = "unsupported chunk header length";
		return -PT_ECORRUPT;
	}
	if (h->kind != FMT_CHUNK_EVENTS && h->kind != FMT_CHUNK_META) {
		*why = "unknown chunk kind";
		return -PT_ECORRUPT;
	}
	if (h->comp != FMT_COMP_NONE && h->comp != FMT_COMP_ZSTD) {
		*why = "unknown compression";
		return -PT_ECORRUPT;
	}
	if (h->raw_bytes > PT_FMT_MAX_CHUNK_RAW_BYTES ||
	    h->stored_bytes > ZSTD_compressBound(PT_FMT_MAX_CHUNK_RAW_BYTES) ||
	    (h->comp == FMT_COMP_NONE && h->stored_bytes != h->raw_bytes)) {
		*why = "chunk size out of bounds";
		return -PT_ETOOBIG;
	}
	if (h->records > h->raw_bytes) { /* every record takes at least one byte */
		*why = "record count exceeds payload size";
		return -PT_ECORRUPT;
	}
	if (h->last_ticks < h->first_ticks) {
		*why = "chunk tick range reversed";
		return -PT_ECORRUPT;
	}
	return 0;
}

int fmt_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	uint8_t *b = buf;
	while (len) {
		ssize_t n = pread(fd, b, len, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -PT_ETRUNCATED;
		b += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}
