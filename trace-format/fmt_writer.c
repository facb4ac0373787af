/*
 * trace-format/fmt_writer.c - append chunks to a .ptz file (§5 of
 * doc/trace-format.md).
 *
 * Crash consistency: file space is reserved with posix_fallocate() before
 * any page of it is mapped, so a full disk surfaces as an error code from
 * posix_fallocate, never as SIGBUS on a store. Each chunk is compressed
 * straight into a sliding MAP_SHARED window, its header written last, and
 * only then is the header's committed length advanced (a release store on
 * the permanently mapped first page). A process killed at any instant
 * therefore leaves a file whose committed prefix is complete: the page
 * cache holds every store made before the kill.
 *
 * Memory: the window (WINDOW_BYTES) is unmapped behind the write head, so
 * the trace never accumulates in the recorder's RSS.
 *
 * A reserve (FINAL_RESERVE_BYTES) is kept allocated past the end, so the
 * final tables and loss records can still be written after the disk filled.
 *
 * Not thread-safe: one writing thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#include "trace-format/fmt_internal.h"

#define WINDOW_BYTES (8u << 20)
#define GROW_BYTES (8u << 20)
#define FINAL_RESERVE_BYTES (256u << 10)

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the committed-length store assumes little-endian");

struct fmt_writer {
	int fd;
	uint8_t *hdr_map;   /* first page, mapped for the whole life */
	uint8_t *win;       /* current window, or NULL */
	uint64_t win_off;   /* file offset of win[0] */
	size_t win_len;
	uint64_t head;      /* next chunk offset == committed length */
	uint64_t alloc_end; /* bytes reserved by posix_fallocate */
	ZSTD_CCtx *cctx;
	long page;
	size_t store_below; /* payloads shorter than this are stored, not compressed */
};

static void put_str(uint8_t *h, size_t off, size_t field, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n > field - 2)
		n = field - 2;
	fmt_put16(h + off, (uint16_t)n);
	if (n)
		memcpy(h + off + 2, s, n);
}

static int reserve(struct fmt_writer *w, uint64_t end, int use_reserve)
{
	uint64_t want = end + (use_reserve ? 0 : FINAL_RESERVE_BYTES);
	if (want <= w->alloc_end)
		return 0;
	uint64_t new_end = (want + GROW_BYTES - 1) / GROW_BYTES * GROW_BYTES;
	int rc = posix_fallocate(w->fd, (off_t)w->alloc_end, (off_t)(new_end - w->alloc_end));
	if (rc != 0) {
		/* try the exact amount before giving up: the disk may be nearly full */
		rc = posix_fallocate(w->fd, (off_t)w->alloc_end, (off_t)(want - w->alloc_end));
		if (rc != 0)
			return -rc;
		new_end = want;
	}
	w->alloc_end = new_end;
	return 0;
}

/* Maps a window covering [off, off + len). 0 or -errno. */
static int window(struct fmt_writer *w, uint64_t off, size_t len)
{
	if (w->win && off >= w->win_off && off + len <= w->win_off + w->win_len)
		return 0;
	if (w->win) {
		munmap(w->win, w->win_len);
		w->win = NULL;
	}
	uint64_t start = off & ~(uint64_t)(w->page - 1);
	size_t need = (size_t)(off + len - start);
	size_t wl = need > WINDOW_BYTES ? (need + (size_t)w->page - 1) / (size_t)w->page * (size_t)w->page
					: WINDOW_BYTES;
	if (start + wl > w->alloc_end)
		wl = (size_t)(w->alloc_end - start);
	void *m = mmap(NULL, wl, PROT_READ | PROT_WRITE, MAP_SHARED, w->fd, (off_t)start);
	if (m == MAP_FAILED)
		return -errno;
	w->win = m;
	w->win_off = start;
	w->win_len = wl;
	return 0;
}

int fmt_writer_open(const char *path, const struct fmt_writer_hdr *hd, struct fmt_writer **out)
{
	*out = NULL;
	struct fmt_writer *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->page = sysconf(_SC_PAGESIZE);
	w->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (w->fd < 0) {
		int e = -errno;
		free(w);
		return e;
	}
	struct stat st;
	int rc;
	if (fstat(w->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		goto fail;
	}
	w->cctx = ZSTD_createCCtx();
	if (!w->cctx) {
		rc = -ENOMEM;
		goto fail;
	}
	rc = reserve(w, PT_FMT_HEADER_BYTES, 0);
	if (rc)
		goto fail;
	w->hdr_map = mmap(NULL, PT_FMT_HEADER_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, w->fd, 0);
	if (w->hdr_map == MAP_FAILED) {
		w->hdr_map = NULL;
		rc = -errno;
		goto fail;
	}
	uint8_t *h = w->hdr_map;
	memset(h, 0, PT_FMT_HEADER_BYTES);
	memcpy(h, FMT_MAGIC, 8);
	fmt_put16(h + FMT_OFF_VERSION_MAJOR, PT_FMT_VERSION_MAJOR);
	fmt_put16(h + FMT_OFF_VERSION_MINOR, PT_FMT_VERSION_MINOR);
	fmt_put32(h + FMT_OFF_HEADER_BYTES, PT_FMT_HEADER_BYTES);
	fmt_put32(h + FMT_OFF_CLOCK_SOURCE, hd->clock_source);
	fmt_put32(h + FMT_OFF_PID, hd->pid);
	fmt_put64(h + FMT_OFF_START_TICKS, hd->start_ticks);
	fmt_put64(h + FMT_OFF_START_MONO, hd->start_mono_ns);
	fmt_put64(h + FMT_OFF_START_REAL, hd->start_real_ns);
	put_str(h, FMT_OFF_PROCESS, FMT_SHORT_FIELD, hd->process_name);
	put_str(h, FMT_OFF_HOST, FMT_SHORT_FIELD, hd->host);
	put_str(h, FMT_OFF_VERSION, FMT_VERSION_FIELD, hd->recorder_version);
	put_str(h, FMT_OFF_CMDLINE, FMT_CMDLINE_FIELD, hd->cmdline);
	fmt_put64(h + FMT_OFF_HEADER_XXH, XXH3_64bits(h, FMT_OFF_HEADER_XXH));
	w->head = PT_FMT_HEADER_BYTES;
	fmt_put64(h + FMT_OFF_COMMITTED, w->head);
	*out = w;
	return 0;
fail:
	if (w->hdr_map)
		munmap(w->hdr_map, PT_FMT_HEADER_BYTES);
	ZSTD_freeCCtx(w->cctx);
	close(w->fd);
	free(w);
	return rc;
}

static void commit(struct fmt_writer *w)
{
	/* [W1] release: the chunk's bytes before the committed length that
	 * covers them. Pairs with the reader's single read of the length at
	 * open (another process, through the page cache). */
	__atomic_store_n((uint64_t *)(void *)(w->hdr_map + FMT_OFF_COMMITTED), w->head, __ATOMIC_RELEASE);
}

void fmt_writer_store_below(struct fmt_writer *w, size_t bytes)
{
	w->store_below = bytes;
}

static int append(struct fmt_writer *w, const struct fmt_chunk_hdr *hin, const uint8_t *raw, size_t raw_len,
		  int level, int use_reserve)
{
	if (raw_len > PT_FMT_MAX_CHUNK_RAW_BYTES)
		return -PT_ETOOBIG;
	size_t bound = ZSTD_compressBound(raw_len);
	uint64_t start = w->head;
	int rc = reserve(w, start + PT_FMT_CHUNK_HEADER_BYTES + bound, use_reserve);
	if (rc)
		return rc;
	rc = window(w, start, PT_FMT_CHUNK_HEADER_BYTES + bound);
	if (rc)
		return rc;
	uint8_t *dst = w->win + (start - w->win_off);
	uint8_t *payload = dst + PT_FMT_CHUNK_HEADER_BYTES;
	struct fmt_chunk_hdr h = *hin;
	size_t stored = raw_len < w->store_below ? raw_len
						 : ZSTD_compressCCtx(w->cctx, payload, bound, raw, raw_len, level);
	if (ZSTD_isError(stored) || stored >= raw_len) {
		memcpy(payload, raw, raw_len);
		stored = raw_len;
		h.comp = FMT_COMP_NONE;
	} else {
		h.comp = FMT_COMP_ZSTD;
	}
	h.raw_bytes = (uint32_t)raw_len;
	h.stored_bytes = (uint32_t)stored;
	h.payload_xxh = XXH3_64bits(payload, stored);
	fmt_chunk_hdr_write(dst, &h);
	PT_TESTPOINT("chunk written, not committed");
	w->head = start + PT_FMT_CHUNK_HEADER_BYTES + stored;
	commit(w);
	return 0;
}

int fmt_writer_append(struct fmt_writer *w, const struct fmt_chunk_hdr *h, const uint8_t *raw, size_t raw_len,
		      int level)
{
	return append(w, h, raw, raw_len, level, 0);
}

int fmt_writer_append_final(struct fmt_writer *w, const struct fmt_chunk_hdr *h, const uint8_t *raw,
			    size_t raw_len, int level)
{
	return append(w, h, raw, raw_len, level, 1);
}

uint64_t fmt_writer_committed(const struct fmt_writer *w) { return w->head; }

int fmt_writer_close(struct fmt_writer *w)
{
	int rc = 0;
	if (!w)
		return 0;
	if (w->win)
		munmap(w->win, w->win_len);
	/* Shrink to the committed length before marking the file closed: a
	 * crash in between leaves a valid, merely unclosed, trace. */
	if (ftruncate(w->fd, (off_t)w->head) != 0)
		rc = -errno;
	uint64_t flags = FMT_FLAG_CLOSED;
	__atomic_store_n((uint64_t *)(void *)(w->hdr_map + FMT_OFF_FLAGS), flags, __ATOMIC_RELEASE);
	munmap(w->hdr_map, PT_FMT_HEADER_BYTES);
	if (close(w->fd) != 0 && rc == 0)
		rc = -errno;
	ZSTD_freeCCtx(w->cctx);
	free(w);
	return rc;
}

void fmt_writer_forget(struct fmt_writer *w)
{
	if (!w)
		return;
	close(w->fd);
	ZSTD_freeCCtx(w->cctx);
	free(w);
}

void fmt_writer_abandon(struct fmt_writer *w)
{
	if (!w)
		return;
	if (w->win)
		munmap(w->win, w->win_len);
	munmap(w->hdr_map, PT_FMT_HEADER_BYTES);
	close(w->fd);
	ZSTD_freeCCtx(w->cctx);
	free(w);
}
