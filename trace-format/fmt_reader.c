/*
 * trace-format/fmt_reader.c - read .ptz files (doc/trace-format.md §2-§6).
 *
 * Pass 1 (pt_reader_open): walk chunk headers from the end of the file
 * header up to the committed length, keeping an index of chunk offsets,
 * and decode meta chunks into the string, domain, thread and clock
 * tables. A header that fails validation starts a resynchronization:
 * scan forward for the chunk magic and accept the first candidate whose
 * header checksum and bounds hold. A chunk that runs past the end of the
 * file is a torn tail. Pass 2 (pt_reader_next_chunk) reads and
 * decompresses event payloads one at a time through reused buffers.
 *
 * Allocation bounds: the chunk index grows with the number of valid
 * headers (each at least 64 bytes of file); payload buffers are capped by
 * PT_FMT_MAX_CHUNK_RAW_BYTES and ZSTD_compressBound of it; tables by the
 * entries the trace defines (hashed by id). Decompression is checked to yield exactly the
 * header's raw size, which is itself bounded.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#include "common/struct_copy.h"
#include "trace-format/fmt_internal.h"

/* The chunk index: 24 bytes a chunk (it grows with the file: ~100 KiB for
 * 100 M records), not the whole header; pt_reader_next_chunk() reads the
 * header again with the payload. */
struct rd_chunk {
	uint64_t off;
	uint64_t sequence;
	uint64_t payload_xxh;   /* the header's: tells an exact repeat (check_sequences) */
	uint32_t thread;        /* the header's thread field */
	uint32_t records : 30;  /* <= raw_bytes <= 16 MiB */
	uint32_t meta : 1;      /* kind: meta (1) or events (0) */
	uint32_t bad : 1;       /* payload failed once: skipped, not reported again */
};
struct rd_string {
	char *name;
	uint32_t id, domain;
};
/* Name and domain ids to their entry: open addressing, linear probing,
 * key 0 = empty (id 0 is never stored); at most half full. Tables are
 * sized by the names a trace defines, never by the largest id it uses
 * (one STRING record with id 2^24 - 1 once cost 6 GB). */
struct rd_idmap {
	uint32_t *key, *val;
	uint32_t cap, n;
};
struct rd_clock {
	uint64_t ticks, ns;
};
struct rd_problem {
	uint64_t off;
	char *msg;
};
/* One file of the trace: the file itself, or a part of a rotated run
 * (pt_reader_open_set(), doc/trace-format.md §11). */
struct rd_part {
	int fd;
	char *path;
	uint8_t *hdr;         /* its header, during open only */
	uint64_t file_bytes;
	uint64_t limit;       /* bytes of it that are read (§6.2) */
	uint64_t run_id;      /* 0: not a part of a rotated run (or header damaged) */
	uint32_t part;
	int header_ok;
	size_t first_chunk;   /* its first chunk's index in the chunk index */
};

struct pt_reader {
	int fd;            /* the current part's (use_part()) */
	char errmsg[512];
	struct pt_trace_info info;
	char process_name[FMT_SHORT_FIELD], host[FMT_SHORT_FIELD], version[FMT_VERSION_FIELD];
	char cmdline[FMT_CMDLINE_FIELD];
	char job[FMT_JOB_FIELD];
	uint64_t limit; /* bytes of the file that are read */
	/* Read window (rd_read()): bytes [win_off, win_off + win_len) of the
	 * file, read by one pread. Small chunks (a short trace, many threads'
	 * one-chunk streams) then cost one system call per window instead of
	 * two per chunk (header, payload). */
	uint8_t *win;
	uint64_t win_off;
	size_t win_len;

	struct rd_chunk *chunks;
	size_t nchunks, chunks_cap, cur;
	int have_chunk;
	uint8_t *stored, *raw;
	size_t stored_cap, raw_cap;
	ZSTD_DCtx *dctx;
	struct fmt_dec dec;
	uint64_t cur_off;
	int pending_corrupt; /* batch decode met damage after returning records */

	struct rd_string *strings; /* in the order defined; string_map finds them by id */
	uint32_t nstrings, strings_cap;
	uint32_t max_string;
	struct rd_idmap string_map;
	struct rd_string *domains; /* .domain unused */
	uint32_t ndomains, domains_cap;
	struct rd_idmap domain_map;
	int oom; /* a table entry could not be stored: pt_reader_open() fails (-ENOMEM) */
	struct pt_thread_info *threads;
	size_t nthreads, threads_cap;
	struct rd_clock *clocks;
	size_t nclocks, clocks_cap;
	double slope_all;
	int clock_built;   /* build_clock() ran: the header point is in clocks */
	struct rd_problem *problems;
	size_t nproblems, problems_cap;
	size_t problems_lost;  /* messages that could not be stored (ENOMEM) */
	char lost_msg[96];     /* says so: the last problem while problems_lost */
	/* the files read, by ascending part number; chunks are indexed part
	 * after part. fd and limit above are those of parts[part_now]. */
	struct rd_part *parts;
	size_t nparts, part_now;
	/* fmt_reader_dup(): a second cursor over another reader's tables
	 * (strings, threads, clock, parts and fd, read-only while both live);
	 * its own are the chunk index (a copy: iteration marks chunks bad),
	 * buffers, decompressor, decoder and problems. */
	const struct pt_reader *dup_of;
};

/* "FILE: " before a message of a set's reader (which file the offset is in); "" otherwise. */
static size_t part_prefix(struct pt_reader *r)
{
	if (r->nparts < 2)
		return 0;
	int n = snprintf(r->errmsg, sizeof(r->errmsg), "%s: ", r->parts[r->part_now].path);
	return n < 0 ? 0 : (size_t)n >= sizeof(r->errmsg) ? sizeof(r->errmsg) - 1 : (size_t)n;
}

static void problem(struct pt_reader *r, uint64_t off, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	const size_t pre = part_prefix(r);
	vsnprintf(r->errmsg + pre, sizeof(r->errmsg) - pre, fmt, ap);
	va_end(ap);
	if (r->nproblems == r->problems_cap) {
		size_t nc = r->problems_cap ? r->problems_cap * 2 : 8;
		struct rd_problem *p = realloc(r->problems, nc * sizeof(*p));
		if (!p)
			goto lost;
		r->problems = p;
		r->problems_cap = nc;
	}
	char *m = strdup(r->errmsg);
	if (!m)
		goto lost;
	r->problems[r->nproblems].off = off;
	r->problems[r->nproblems].msg = m;
	r->nproblems++;
	return;
lost: /* never in silence: one more problem, kept without allocating */
	r->problems_lost++;
	snprintf(r->lost_msg, sizeof(r->lost_msg), "%zu problem(s) not recorded: out of memory", r->problems_lost);
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t nc = *cap ? *cap : 16;
	while (nc < need)
		nc *= 2;
	void *q = realloc(*p, nc * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = nc;
	return 0;
}

#define RD_WIN_BYTES (64u << 10)

/*
 * @len bytes at file offset @off, in place: *@out points into the read
 * window when it holds them, unless @fresh; otherwise a read of @len
 * bytes that is shorter than the window refills it with the window's
 * bytes from @off (up to r->limit: no byte past the part of the file
 * being read) and *@out points there; a longer one is read into @buf and
 * *@out points to @buf. *@out is valid until the next read. A header is
 * read @fresh when the point is to see the file as it is now
 * (reread_header(): the file changed under the reader); its payload then
 * comes from the same read. 0 or a negative errno.
 */
static int rd_view(struct pt_reader *r, void *buf, size_t len, uint64_t off, bool fresh, const uint8_t **out)
{
	if (!fresh && r->win_len && off >= r->win_off && len <= r->win_len && off - r->win_off <= r->win_len - len) {
		*out = r->win + (off - r->win_off);
		return 0;
	}
	*out = buf;
	uint64_t room = off < r->limit ? r->limit - off : 0;
	size_t want = room < RD_WIN_BYTES ? (size_t)room : RD_WIN_BYTES;
	if (len >= want || (!r->win && !(r->win = malloc(RD_WIN_BYTES))))
		return fmt_pread_full(r->fd, buf, len, off);
	r->win_len = 0;
	ssize_t n;
	do
		n = pread(r->fd, r->win, want, (off_t)off);
	while (n < 0 && errno == EINTR);
	if (n < (ssize_t)len) /* an error or a file now shorter: fmt_pread_full() says which */
		return fmt_pread_full(r->fd, buf, len, off);
	r->win_off = off;
	r->win_len = (size_t)n;
	*out = r->win;
	return 0;
}

/* rd_view() into @buf. */
static int rd_read(struct pt_reader *r, void *buf, size_t len, uint64_t off, bool fresh)
{
	const uint8_t *p;
	int rc = rd_view(r, buf, len, off, fresh, &p);
	if (rc == 0 && p != buf)
		memcpy(buf, p, len);
	return rc;
}

/* Makes part @i the one read (its descriptor and limit; the read window
 * belongs to the file it was read from). */
static void use_part(struct pt_reader *r, size_t i)
{
	if (i == r->part_now || i >= r->nparts)
		return;
	r->part_now = i;
	r->fd = r->parts[i].fd;
	r->limit = r->parts[i].limit;
	r->win_len = 0;
}

/* The part holding chunk @c (an index into r->chunks). */
static size_t part_of(const struct pt_reader *r, size_t c)
{
	size_t lo = 0, hi = r->nparts;
	while (hi - lo > 1) {
		const size_t mid = lo + (hi - lo) / 2;
		if (r->parts[mid].first_chunk <= c)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static void get_str(char *dst, size_t field, const uint8_t *h, size_t off)
{
	size_t n = fmt_get16(h + off);
	if (n > field - 2)
		n = field - 2;
	memcpy(dst, h + off + 2, n);
	dst[n] = 0;
	for (size_t i = 0; i < n; i++) /* keep reports printable */
		if ((unsigned char)dst[i] < 0x20)
			dst[i] = '?';
}

/* Reads and checks one chunk's payload into r->raw. 0 or <0 (problem recorded). */
static int load_payload(struct pt_reader *r, uint64_t off, const struct fmt_chunk_hdr *h)
{
	int rc;
	if ((rc = grow((void **)&r->stored, &r->stored_cap, h->stored_bytes ? h->stored_bytes : 1, 1)) ||
	    (rc = grow((void **)&r->raw, &r->raw_cap, h->raw_bytes ? h->raw_bytes : 1, 1)))
		return rc;
	const uint8_t *stored; /* in the read window, not copied, when it fits there */
	rc = rd_view(r, r->stored, h->stored_bytes, off + PT_FMT_CHUNK_HEADER_BYTES, false, &stored);
	if (rc) {
		problem(r, off, "chunk @0x%llx: payload unreadable: %s", (unsigned long long)off, pt_strerror(rc));
		return rc;
	}
	if (XXH3_64bits(stored, h->stored_bytes) != h->payload_xxh) {
		r->info.damaged_chunks++;
		problem(r, off, "chunk @0x%llx: payload checksum mismatch", (unsigned long long)off);
		return -PT_ECHECKSUM;
	}
	if (h->comp == FMT_COMP_NONE) {
		memcpy(r->raw, stored, h->stored_bytes);
		return 0;
	}
	unsigned long long fcs = ZSTD_getFrameContentSize(stored, h->stored_bytes);
	if (fcs != h->raw_bytes) {
		r->info.damaged_chunks++;
		problem(r, off, "chunk @0x%llx: zstd frame size disagrees with header", (unsigned long long)off);
		return -PT_ECORRUPT;
	}
	/* created on the first compressed payload: a trace of stored chunks
	 * (and every open that fails before one) never pays for it */
	if (!r->dctx && !(r->dctx = ZSTD_createDCtx()))
		return -ENOMEM;
	size_t n = ZSTD_decompressDCtx(r->dctx, r->raw, h->raw_bytes, stored, h->stored_bytes);
	if (ZSTD_isError(n) || n != h->raw_bytes) {
		r->info.damaged_chunks++;
		problem(r, off, "chunk @0x%llx: decompression failed: %s", (unsigned long long)off,
			ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short output");
		return -PT_ECORRUPT;
	}
	return 0;
}

static const char no_name[] = ""; /* names not pointing here are owned */

/* The position of @index in the thread table, which stays sorted by index:
 * the first entry not below it. */
static size_t thread_lower(const struct pt_reader *r, uint32_t index)
{
	size_t lo = 0, hi = r->nthreads;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (r->threads[mid].index < index)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The thread table's entry for @index, added if missing, in place (open
 * looks a thread up once per chunk, so a linear search made thousands of
 * threads cost chunks x threads). The pointer is valid until the next call. */
static struct pt_thread_info *thread_slot(struct pt_reader *r, uint32_t index)
{
	const size_t lo = thread_lower(r, index);
	if (lo < r->nthreads && r->threads[lo].index == index)
		return &r->threads[lo];
	if (grow((void **)&r->threads, &r->threads_cap, r->nthreads + 1, sizeof(*r->threads)))
		return NULL;
	memmove(&r->threads[lo + 1], &r->threads[lo], (r->nthreads - lo) * sizeof(*r->threads));
	r->nthreads++;
	struct pt_thread_info *t = &r->threads[lo];
	memset(t, 0, sizeof(*t));
	t->index = index;
	t->name = no_name;
	return t;
}

static char *dup_bytes(const char *s, size_t n)
{
	char *d = malloc(n + 1);
	if (!d)
		return NULL;
	memcpy(d, s, n);
	d[n] = 0;
	return d;
}

static uint32_t idmap_slot(const struct rd_idmap *m, uint32_t id)
{
	uint32_t i = (id * 2654435761u) & (m->cap - 1);
	while (m->key[i] && m->key[i] != id)
		i = (i + 1) & (m->cap - 1);
	return i;
}

/* The entry index of @id, or UINT32_MAX. */
static uint32_t idmap_get(const struct rd_idmap *m, uint32_t id)
{
	if (!m->cap)
		return UINT32_MAX;
	const uint32_t i = idmap_slot(m, id);
	return m->key[i] ? m->val[i] : UINT32_MAX;
}

/* Maps @id (not yet present, non-zero) to @val: 0 or -ENOMEM. */
static int idmap_put(struct rd_idmap *m, uint32_t id, uint32_t val)
{
	if (2 * (m->n + 1) > m->cap) {
		struct rd_idmap g = { .cap = m->cap ? m->cap * 2 : 64 };
		g.key = calloc(g.cap, sizeof(*g.key));
		g.val = malloc(g.cap * sizeof(*g.val));
		if (!g.key || !g.val) {
			free(g.key);
			free(g.val);
			return -ENOMEM;
		}
		for (uint32_t i = 0; i < m->cap; i++)
			if (m->key[i]) {
				const uint32_t k = idmap_slot(&g, m->key[i]);
				g.key[k] = m->key[i];
				g.val[k] = m->val[i];
			}
		g.n = m->n;
		free(m->key);
		free(m->val);
		*m = g;
	}
	const uint32_t i = idmap_slot(m, id);
	m->key[i] = id;
	m->val[i] = val;
	m->n++;
	return 0;
}

/* A name of the string or domain table: a NUL inside it is shown as '?'
 * (readers expose names as C strings, and a cut name would show two
 * different names the same; doc/trace-format.md §4.4). */
static char *dup_name(const char *s, size_t n)
{
	char *d = dup_bytes(s, n);
	for (size_t i = 0; d && i < n; i++)
		if (!d[i])
			d[i] = '?';
	return d;
}

/* Entry @id of @t (*@n entries of @cap, found through @m), added if new.
 * Return: 1 added (name and id set), 0 already there (the first one stays),
 * -ENOMEM. */
static int table_add(struct rd_string **t, uint32_t *n, uint32_t *cap, struct rd_idmap *m, uint32_t id,
		     const char *s, size_t len)
{
	if (idmap_get(m, id) != UINT32_MAX)
		return 0; /* repeated table entry */
	if (*n == *cap) {
		const uint32_t nc = *cap ? *cap * 2 : 64;
		struct rd_string *g = realloc(*t, (size_t)nc * sizeof(*g));
		if (!g)
			return -ENOMEM;
		*t = g;
		*cap = nc;
	}
	char *name = dup_name(s, len);
	if (!name || idmap_put(m, id, *n)) {
		free(name);
		return -ENOMEM;
	}
	(*t)[*n] = (struct rd_string){ .name = name, .id = id };
	(*n)++;
	return 1;
}

static void meta_record(struct pt_reader *r, const struct pt_record *rec)
{
	switch (rec->kind) {
	case PT_REC_STRING: {
		if (rec->id == 0 || rec->id >= PT_FMT_MAX_STRING_ID)
			return;
		const int rc = table_add(&r->strings, &r->nstrings, &r->strings_cap, &r->string_map, rec->id, rec->str,
					 rec->str_len);
		if (rc < 0)
			r->oom = 1;
		if (rc <= 0)
			return;
		r->strings[r->nstrings - 1].domain = rec->aux;
		if (rec->id + 1 > r->max_string)
			r->max_string = rec->id + 1;
		return;
	}
	case PT_REC_DOMAIN:
		if (rec->id == 0 || rec->id >= PT_FMT_MAX_STRING_ID)
			return;
		if (table_add(&r->domains, &r->ndomains, &r->domains_cap, &r->domain_map, rec->id, rec->str,
			      rec->str_len) < 0)
			r->oom = 1;
		return;
	case PT_REC_THREAD: {
		if (rec->id >= PT_FMT_MAX_STRING_ID)
			return; /* thread indexes are < 2^24 (§3.1); 0xfffffffe and 0xffffffff are iteration selectors */
		struct pt_thread_info *t = thread_slot(r, rec->id);
		if (!t) {
			r->oom = 1;
			return;
		}
		t->tid = (uint32_t)rec->value;
		if (rec->ticks && (!t->start_ticks || rec->ticks < t->start_ticks))
			t->start_ticks = rec->ticks; /* the smallest non-zero one (§4.4) */
		if (rec->value2)
			t->end_ticks = rec->value2;
		if (rec->str_len) { /* the last non-empty name wins (format 1.1) */
			char *n = dup_name(rec->str, rec->str_len);
			if (!n) {
				r->oom = 1;
				return;
			}
			if (t->name != no_name)
				free((void *)t->name);
			t->name = n;
		}
		return;
	}
	case PT_REC_CLOCK:
		if (grow((void **)&r->clocks, &r->clocks_cap, r->nclocks + 1, sizeof(*r->clocks))) {
			r->oom = 1;
			return;
		}
		r->clocks[r->nclocks].ticks = rec->ticks;
		r->clocks[r->nclocks].ns = rec->value;
		r->nclocks++;
		return;
	default:
		return;
	}
}

static void decode_meta(struct pt_reader *r, uint64_t off, const struct fmt_chunk_hdr *h)
{
	const int rc0 = load_payload(r, off, h);
	if (rc0 == -ENOMEM) {
		r->oom = 1;
		return;
	}
	if (rc0) {
		r->chunks[r->nchunks - 1].bad = 1; /* reported once, here */
		return;
	}
	struct fmt_dec d;
	struct pt_record rec;
	int rc;
	fmt_dec_init(&d, r->raw, h->raw_bytes, h->first_ticks);
	while ((rc = fmt_dec_next(&d, &rec)) == 1)
		meta_record(r, &rec);
	if (rc < 0) {
		r->info.damaged_chunks++;
		problem(r, off, "chunk @0x%llx: meta payload does not decode at byte %llu", (unsigned long long)off,
			(unsigned long long)(d.pos - r->raw));
	}
}

/* The chunk header at @off, read and parsed: 0; the read's error (*@why
 * NULL); or fmt_chunk_hdr_parse()'s -PT_E* (*@why names the defect). */
static int hdr_at(struct pt_reader *r, uint64_t off, struct fmt_chunk_hdr *h, const char **why, bool fresh)
{
	uint8_t hb[PT_FMT_CHUNK_HEADER_BYTES];
	*why = NULL;
	int rc = rd_read(r, hb, sizeof(hb), off, fresh);
	return rc ? rc : fmt_chunk_hdr_parse(hb, h, why);
}

/* Scans forward from @from for a valid chunk header. Returns its offset or @limit. */
static uint64_t resync(struct pt_reader *r, uint64_t from)
{
	enum { BLK = 1 << 16 };
	uint8_t *buf = malloc(BLK + 3);
	if (!buf) {
		r->oom = 1; /* not "the rest is damaged" */
		return r->limit;
	}
	uint64_t pos = from;
	while (pos + PT_FMT_CHUNK_HEADER_BYTES <= r->limit) {
		size_t n = (size_t)PT_MIN((uint64_t)BLK + 3, r->limit - pos);
		if (fmt_pread_full(r->fd, buf, n, pos))
			break;
		for (size_t i = 0; i + 4 <= n; i++) {
			if (memcmp(buf + i, FMT_CHUNK_MAGIC, 4) != 0)
				continue;
			struct fmt_chunk_hdr h;
			const char *why;
			uint64_t cand = pos + i;
			if (cand + PT_FMT_CHUNK_HEADER_BYTES > r->limit)
				break;
			if (hdr_at(r, cand, &h, &why, false) == 0) {
				free(buf);
				return cand;
			}
		}
		pos += n > 3 ? n - 3 : n;
	}
	free(buf);
	return r->limit;
}

static int cmp_clock(const void *a, const void *b)
{
	const struct rd_clock *x = a, *y = b;
	return x->ticks < y->ticks ? -1 : x->ticks > y->ticks;
}

static void build_clock(struct pt_reader *r)
{
	/* the header point once (fmt_reader_refresh() builds again) */
	if (!r->clock_built && r->info.clock_source != PT_CLOCK_MONOTONIC && r->info.start_mono_ns &&
	    !grow((void **)&r->clocks, &r->clocks_cap, r->nclocks + 1, sizeof(*r->clocks))) {
		r->clocks[r->nclocks].ticks = r->info.start_ticks;
		r->clocks[r->nclocks].ns = r->info.start_mono_ns;
		r->nclocks++;
	}
	if (r->nclocks > 1) /* none at all (no meta chunk): r->clocks is NULL, which qsort must not get */
		qsort(r->clocks, r->nclocks, sizeof(*r->clocks), cmp_clock);
	/* keep strictly increasing points: equal ticks or ns going back are noise */
	size_t k = 0;
	for (size_t i = 0; i < r->nclocks; i++) {
		if (k && (r->clocks[i].ticks <= r->clocks[k - 1].ticks || r->clocks[i].ns < r->clocks[k - 1].ns))
			continue;
		r->clocks[k++] = r->clocks[i];
	}
	r->nclocks = k;
	r->clock_built = 1;
	r->slope_all = 1.0;
	if (k >= 2) {
		/* from the first point to the first one a second or more after it
		 * (§7): a slope that new points no longer move once the trace is
		 * a second old, so an analysis of a trace still being written can
		 * go on from where it was (analyzer/ana.h, the live pass) */
		size_t e = 1;
		while (e < k - 1 && r->clocks[e].ns - r->clocks[0].ns < FMT_SLOPE_SPAN_NS)
			e++;
		r->slope_all = (double)(r->clocks[e].ns - r->clocks[0].ns) /
			       (double)(r->clocks[e].ticks - r->clocks[0].ticks);
	}
	else if (r->info.clock_source != PT_CLOCK_MONOTONIC)
		problem(r, 0, "clock: fewer than two calibration points; durations assume 1 tick = 1 ns");
}

/* §7 on segment [lo, lo + 1] of the kept points (n >= 2), by fmt_seg_ns(); the kept points have T_hi >
 * T_lo and N_hi >= N_lo. */
static inline uint64_t seg_ns(const struct rd_clock *c, size_t lo, uint64_t t)
{
	const size_t hi = lo + 1;
	return fmt_seg_ns(c[lo].ticks, c[lo].ns, (double)(c[hi].ns - c[lo].ns), (double)(c[hi].ticks - c[lo].ticks),
			  t);
}

/* The segment of the n >= 2 kept points that converts @t: the one containing it, clamped to the ends. */
static size_t seg_of(const struct rd_clock *c, size_t n, uint64_t t)
{
	size_t lo = 0, hi = n - 1;
	if (t <= c[0].ticks)
		return 0;
	if (t >= c[n - 1].ticks)
		return n - 2;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (c[mid].ticks <= t)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* n == 1: one point, 1 tick = 1 ns (a problem was recorded); exact. */
static uint64_t one_point_ns(const struct rd_clock *c, uint64_t t)
{
	return t >= c[0].ticks ? (t - c[0].ticks > UINT64_MAX - c[0].ns ? UINT64_MAX : c[0].ns + (t - c[0].ticks))
			       : (c[0].ticks - t > c[0].ns ? 0 : c[0].ns - (c[0].ticks - t));
}

uint64_t pt_reader_ticks_to_ns(const struct pt_reader *r, uint64_t t)
{
	if (r->info.clock_source == PT_CLOCK_MONOTONIC || r->nclocks == 0)
		return t;
	if (r->nclocks == 1)
		return one_point_ns(r->clocks, t);
	return seg_ns(r->clocks, seg_of(r->clocks, r->nclocks, t), t);
}

void fmt_ns_conv_init(struct fmt_ns_conv *k, const struct pt_reader *r)
{
	/* an empty range: the first call searches */
	*k = (struct fmt_ns_conv){ .r = r, .first = 1, .last = 0, .fast_first = 1, .fast_last = 0 };
	k->ident = r->info.clock_source == PT_CLOCK_MONOTONIC || r->nclocks == 0;
}

/* fmt_ns_conv()'s fast path on the segment's ticks: x(t) = (t - T_lo) x dn / dt.
 * A product of a non-decreasing conversion and non-negative factors,
 * rounded monotonically, is non-decreasing in t: so x(lim) < 2^62 with
 * N_lo + 2^62 in range proves x in [0, 2^62) and no overflow for every t in
 * [T_lo, lim]. The range is the segment's ticks from T_lo on (the first
 * segment also converts ticks before T_lo), up to the largest such lim
 * below its last tick (the last segment runs to UINT64_MAX), found by
 * halving the distance from T_lo; empty for a decreasing clock or N_lo
 * near 2^64. */
static void fast_range(struct fmt_ns_conv *k)
{
	k->fast_first = 1;
	k->fast_last = 0;
	if (!(k->dn >= 0) || !(k->dt > 0) || k->n_lo > UINT64_MAX - (1ull << 62) || k->last < k->t_lo)
		return;
	const uint64_t lo = k->first > k->t_lo ? k->first : k->t_lo;
	uint64_t span = k->last - k->t_lo;
	if (span > (uint64_t)INT64_MAX)
		span = (uint64_t)INT64_MAX;
	while ((double)(int64_t)span * k->dn / k->dt >= 4611686018427387904.0) /* 2^62; x(0) = 0 ends it */
		span /= 2;
	if (k->t_lo + span >= lo) {
		k->fast_first = lo;
		k->fast_last = k->t_lo + span;
	}
}

uint64_t fmt_ns_conv_slow(struct fmt_ns_conv *k, uint64_t t)
{
	if (t >= k->first && t <= k->last)
		return fmt_seg_ns(k->t_lo, k->n_lo, k->dn, k->dt, t);
	const struct pt_reader *r = k->r;
	if (r->info.clock_source == PT_CLOCK_MONOTONIC || r->nclocks < 2)
		return pt_reader_ticks_to_ns(r, t);
	const struct rd_clock *c = r->clocks;
	const size_t n = r->nclocks, lo = seg_of(c, n, t);
	/* the ticks seg_of() maps to lo: [T_lo, T_lo+1 - 1], open at the ends */
	k->first = lo == 0 ? 0 : c[lo].ticks;
	k->last = lo == n - 2 ? UINT64_MAX : c[lo + 1].ticks - 1;
	k->t_lo = c[lo].ticks;
	k->n_lo = c[lo].ns;
	k->dn = (double)(c[lo + 1].ns - c[lo].ns);
	k->dt = (double)(c[lo + 1].ticks - c[lo].ticks);
	fast_range(k);
	return seg_ns(c, lo, t);
}


double pt_reader_ns_per_tick(const struct pt_reader *r)
{
	return r->info.clock_source == PT_CLOCK_MONOTONIC ? 1.0 : r->slope_all;
}

static int add_chunk(struct pt_reader *r, uint64_t off, const struct fmt_chunk_hdr *h)
{
	if (grow((void **)&r->chunks, &r->chunks_cap, r->nchunks + 1, sizeof(*r->chunks)))
		return -ENOMEM;
	r->chunks[r->nchunks] = (struct rd_chunk){ .off = off, .sequence = h->sequence, .payload_xxh = h->payload_xxh,
						   .thread = h->thread, .records = h->records,
						   .meta = h->kind == FMT_CHUNK_META };
	r->nchunks++;
	r->info.chunks++;
	r->info.raw_bytes += h->raw_bytes;
	r->info.stored_bytes += h->stored_bytes;
	if (h->kind == FMT_CHUNK_EVENTS)
		r->info.event_chunks++;
	if (h->comp != FMT_COMP_NONE) {
		r->info.compressed_chunks++;
		r->info.compressed_raw_bytes += h->raw_bytes;
		r->info.compressed_stored_bytes += h->stored_bytes;
	}
	return 0;
}

/* Reports per-thread sequence gaps (lost or damaged chunks), thread by
 * thread in index order, each thread's in file order: one walk of the
 * chunks (a thread's position by binary search in the sorted table), the
 * gaps found sorted into that order, so thousands of threads cost
 * chunks x log(threads), not chunks x threads. A chunk that repeats the
 * thread's previous one exactly (same sequence, records and payload
 * checksum: a block of the file duplicated) is skipped, so its records
 * are not delivered twice (doc/trace-format.md §6.3). */
enum { GAP_MISSING, GAP_BACK, GAP_REPEAT };
struct seq_gap {
	size_t pos, chunk;      /* thread table position; chunk index (file order) */
	size_t prev;            /* the thread's previous chunk (index + 1; 0 = none) */
	int kind;
};

static int cmp_seq_gap(const void *a, const void *b)
{
	const struct seq_gap *x = a, *y = b;
	if (x->pos != y->pos)
		return x->pos < y->pos ? -1 : 1;
	return (x->chunk > y->chunk) - (x->chunk < y->chunk);
}

static void check_sequences(struct pt_reader *r)
{
	if (!r->nthreads)
		return;
	/* per thread: its previous chunk not skipped (index + 1; 0 = none),
	 * whose sequence + 1 the next one must carry */
	size_t *last = calloc(r->nthreads, sizeof(*last));
	struct seq_gap *gaps = NULL;
	size_t ngaps = 0, cgaps = 0;
	int oom = !last;
	if (oom)
		goto out;
	for (size_t i = 0; i < r->nchunks; i++) {
		struct rd_chunk *c = &r->chunks[i];
		if (c->meta)
			continue;
		const size_t lo = thread_lower(r, c->thread);
		if (lo == r->nthreads || r->threads[lo].index != c->thread)
			continue;
		const struct rd_chunk *p = last[lo] ? &r->chunks[last[lo] - 1] : NULL;
		/* a window (§10) starts each thread wherever its oldest kept chunk does */
		const uint64_t expect = p ? p->sequence + 1 : r->info.window ? c->sequence : 0;
		int kind = -1;
		if (p && c->sequence == p->sequence && c->records == p->records && c->payload_xxh == p->payload_xxh)
			kind = GAP_REPEAT;
		else if (c->sequence != expect)
			kind = p && c->sequence < expect ? GAP_BACK : GAP_MISSING;
		if (kind >= 0) {
			if (grow((void **)&gaps, &cgaps, ngaps + 1, sizeof(*gaps))) {
				oom = 1; /* the gaps so far are still reported (every skipped repeat has one) */
				break;
			}
			gaps[ngaps++] = (struct seq_gap){ lo, i, last[lo], kind };
		}
		if (kind == GAP_REPEAT) {
			c->bad = 1; /* skipped by iteration; reported here */
			continue;
		}
		last[lo] = i + 1;
	}
	if (ngaps)
		qsort(gaps, ngaps, sizeof(*gaps), cmp_seq_gap);
	for (size_t k = 0; k < ngaps; k++) {
		const struct seq_gap *g = &gaps[k];
		const struct rd_chunk *c = &r->chunks[g->chunk], *p = g->prev ? &r->chunks[g->prev - 1] : NULL;
		use_part(r, part_of(r, g->chunk)); /* a set's message names the chunk's file */
		if (g->kind == GAP_REPEAT)
			problem(r, c->off, "thread %u: chunk sequence %llu repeats chunk @0x%llx exactly (skipped)",
				c->thread, (unsigned long long)c->sequence, (unsigned long long)p->off);
		else
			problem(r, c->off, "thread %u: chunk sequence %llu follows %llu%s", c->thread,
				(unsigned long long)c->sequence, p ? (unsigned long long)p->sequence : 0ull,
				g->kind == GAP_BACK ? " (out of order or repeated)"
				: p		    ? " (chunks missing)"
						    : " (earlier chunks missing)");
	}
out:
	if (oom) { /* said, so that no gap passes unreported in silence; and a repeat
		    * left unmarked would be read twice: pt_reader_open() fails */
		problem(r, PT_FMT_HEADER_BYTES, "sequence check incomplete: out of memory (later gaps not reported)");
		r->oom = 1;
	}
	free(last);
	free(gaps);
}

/* Indexes the valid chunk at @off whose payload fits (§6.3 step 2). */
static int index_chunk(struct pt_reader *r, uint64_t off, const struct fmt_chunk_hdr *h)
{
	int rc = add_chunk(r, off, h);
	if (rc)
		return rc;
	if (h->kind == FMT_CHUNK_META)
		decode_meta(r, off, h);
	else if (h->thread == PT_FMT_META_THREAD || h->thread >= PT_FMT_MAX_STRING_ID)
		problem(r, off, "chunk @0x%llx: event chunk with thread index %u", (unsigned long long)off, h->thread);
	else
		thread_slot(r, h->thread);
	return 0;
}

/*
 * A flight file's older lap (§10): [@from, @end), the bytes past the head.
 * What is not a valid chunk there is what the writer overwrote or retired:
 * skipped without a problem, counted in overwritten_bytes.
 */
static int scan_old(struct pt_reader *r, uint64_t from, uint64_t end)
{
	uint64_t keep = r->limit;
	r->limit = end; /* resync()'s bound */
	/* a chunk at the head itself is the next one, written but not yet
	 * committed (newer than every other), or at a wrap the oldest, about
	 * to be retired: never taken */
	uint64_t off = from + PT_FMT_CHUNK_HEADER_BYTES <= end ? resync(r, from + 1) : end;
	r->info.overwritten_bytes += off - from;
	int rc = 0;
	while (off + PT_FMT_CHUNK_HEADER_BYTES <= end) {
		struct fmt_chunk_hdr h;
		const char *why;
		rc = hdr_at(r, off, &h, &why, false);
		if (rc && !why)
			break;
		rc = 0;
		if (!why && off + PT_FMT_CHUNK_HEADER_BYTES + h.stored_bytes <= end) {
			if ((rc = index_chunk(r, off, &h)))
				break;
			off += PT_FMT_CHUNK_HEADER_BYTES + h.stored_bytes;
			continue;
		}
		uint64_t next = resync(r, off + 1);
		r->info.overwritten_bytes += next - off;
		off = next;
	}
	if (rc == 0 && off < end)
		r->info.overwritten_bytes += end - off;
	r->limit = keep;
	return rc;
}

static int scan_from(struct pt_reader *r, uint64_t off);

static int scan(struct pt_reader *r)
{
	if (r->info.flight && r->info.laps) {
		uint64_t end = r->info.flight_bytes ? PT_FMT_HEADER_BYTES + r->info.flight_bytes : r->info.file_bytes;
		if (end > r->info.file_bytes)
			end = r->info.file_bytes;
		if (r->limit < end) {
			int rc = scan_old(r, r->limit, end);
			if (rc)
				return rc;
		}
	}
	return scan_from(r, PT_FMT_HEADER_BYTES);
}

/* The chunks from @off to r->limit (pass 1 of §6.3). */
static int scan_from(struct pt_reader *r, uint64_t off)
{
	while (off < r->limit) {
		struct fmt_chunk_hdr h;
		const char *why;
		if (off + PT_FMT_CHUNK_HEADER_BYTES > r->limit) {
			r->info.torn_tail_offset = off;
			problem(r, off, "torn tail @0x%llx: %llu bytes, less than a chunk header",
				(unsigned long long)off, (unsigned long long)(r->limit - off));
			break;
		}
		int rc = hdr_at(r, off, &h, &why, false);
		if (rc && !why)
			return rc;
		if (rc == 0) {
			uint64_t end = off + PT_FMT_CHUNK_HEADER_BYTES + h.stored_bytes;
			if (end <= r->limit) {
				if ((rc = index_chunk(r, off, &h)))
					return rc;
				off = end;
				continue;
			}
			/* A valid header whose payload runs past the end: a torn
			 * tail if nothing valid follows it. */
			uint64_t next = resync(r, off + 1);
			if (next >= r->limit) {
				r->info.torn_tail_offset = off;
				problem(r, off, "torn tail @0x%llx: chunk needs %llu bytes, %llu remain",
					(unsigned long long)off, (unsigned long long)(end - off),
					(unsigned long long)(r->limit - off));
				break;
			}
			why = "chunk length runs into the next chunk";
		}
		uint64_t next = resync(r, off + 1);
		r->info.corrupt_regions++;
		problem(r, off, "chunk @0x%llx: %s; skipped %llu bytes to %s", (unsigned long long)off, why,
			(unsigned long long)(next - off), next >= r->limit ? "the end" : "the next chunk");
		off = next;
	}
	return 0;
}

/* Writes the message of a failed open, "FILE: " first in a set. */
static void open_err(struct pt_reader *r, const struct rd_part *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = r->nparts > 1 ? snprintf(r->errmsg, sizeof(r->errmsg), "%s: ", p->path) : 0;
	if (n < 0 || (size_t)n >= sizeof(r->errmsg))
		n = 0;
	vsnprintf(r->errmsg + n, sizeof(r->errmsg) - (size_t)n, fmt, ap);
	va_end(ap);
}

/*
 * Opens @p->path and reads its header into @p->hdr (§6.1 steps 1 to 3):
 * 0; -errno (no message); -PT_ETRUNCATED, -PT_ECORRUPT or -PT_EVERSION
 * with the message in r->errmsg.
 */
static int part_open(struct pt_reader *r, struct rd_part *p)
{
	/* O_NONBLOCK: a FIFO without a writer would block open() forever; a
	 * regular file ignores the flag */
	p->fd = open(p->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (p->fd < 0)
		return -errno;
	struct stat st;
	if (fstat(p->fd, &st) != 0)
		return -errno;
	/* a pipe, FIFO or device cannot be read at offsets (chunks are
	 * indexed, then read thread by thread) */
	if (!S_ISREG(st.st_mode))
		return S_ISDIR(st.st_mode) ? -EISDIR : -ESPIPE;
	p->file_bytes = (uint64_t)st.st_size;
	if (!(p->hdr = malloc(PT_FMT_HEADER_BYTES)))
		return -ENOMEM;
	const int rc = p->file_bytes >= PT_FMT_HEADER_BYTES ? fmt_pread_full(p->fd, p->hdr, PT_FMT_HEADER_BYTES, 0) : 0;
	if (rc < 0 && rc > -PT_EBASE) /* not a short file: the OS said no (EISDIR, EIO...) */
		return rc;
	const uint8_t *h = p->hdr;
	if (p->file_bytes < PT_FMT_HEADER_BYTES || rc) {
		open_err(r, p, "header @0x0: file has %llu bytes, the header needs %u", (unsigned long long)p->file_bytes,
			 PT_FMT_HEADER_BYTES);
		return -PT_ETRUNCATED;
	}
	if (memcmp(h, FMT_MAGIC, 8) != 0) {
		open_err(r, p, "header @0x0: bad magic (not a .ptz trace)");
		return -PT_ECORRUPT;
	}
	p->header_ok = fmt_get64(h + FMT_OFF_HEADER_XXH) == XXH3_64bits(h, FMT_OFF_HEADER_XXH);
	if (p->header_ok && fmt_get16(h + FMT_OFF_VERSION_MAJOR) != PT_FMT_VERSION_MAJOR) {
		open_err(r, p, "header @0x0: format version %u.%u, this reader reads %u.x",
			 fmt_get16(h + FMT_OFF_VERSION_MAJOR), fmt_get16(h + FMT_OFF_VERSION_MINOR), PT_FMT_VERSION_MAJOR);
		return -PT_EVERSION;
	}
	if (p->header_ok) { /* 1.3 (§11); zero in older files */
		p->run_id = fmt_get64(h + FMT_OFF_RUN_ID);
		p->part = p->run_id ? fmt_get32(h + FMT_OFF_PART) : 0;
	}
	return 0;
}

static void add_clock_point(struct pt_reader *r, uint64_t ticks, uint64_t ns)
{
	if (grow((void **)&r->clocks, &r->clocks_cap, r->nclocks + 1, sizeof(*r->clocks))) {
		r->oom = 1;
		return;
	}
	r->clocks[r->nclocks].ticks = ticks;
	r->clocks[r->nclocks].ns = ns;
	r->nclocks++;
}

/*
 * Part @i's header (§6.1 steps 4 and 5), committed length (§6.2) and
 * chunks (§6.3). The first part's static fields are the trace's; a later
 * part adds its counts, and its start triple as a calibration point
 * (§7, §11). 0 or a read error.
 */
static int part_read(struct pt_reader *r, size_t i)
{
	struct rd_part *p = &r->parts[i];
	const uint8_t *h = p->hdr;
	r->part_now = i;
	r->fd = p->fd;
	r->win_len = 0;
	const uint64_t committed = fmt_get64(h + FMT_OFF_COMMITTED);
	const uint64_t flags = fmt_get64(h + FMT_OFF_FLAGS);
	if (i == 0) {
		r->info.version_major = fmt_get16(h + FMT_OFF_VERSION_MAJOR);
		r->info.version_minor = fmt_get16(h + FMT_OFF_VERSION_MINOR);
		if (p->header_ok) {
			r->info.clock_source = fmt_get32(h + FMT_OFF_CLOCK_SOURCE);
			r->info.pid = fmt_get32(h + FMT_OFF_PID);
			r->info.start_ticks = fmt_get64(h + FMT_OFF_START_TICKS);
			r->info.start_mono_ns = fmt_get64(h + FMT_OFF_START_MONO);
			r->info.start_real_ns = fmt_get64(h + FMT_OFF_START_REAL);
			get_str(r->process_name, sizeof(r->process_name), h, FMT_OFF_PROCESS);
			get_str(r->host, sizeof(r->host), h, FMT_OFF_HOST);
			get_str(r->version, sizeof(r->version), h, FMT_OFF_VERSION);
			get_str(r->cmdline, sizeof(r->cmdline), h, FMT_OFF_CMDLINE);
			get_str(r->job, sizeof(r->job), h, FMT_OFF_JOB);
			const uint32_t rk = fmt_get32(h + FMT_OFF_RANK);
			r->info.has_rank = rk != 0;
			r->info.rank = rk ? rk - 1 : 0;
			r->info.run_id = p->run_id;
			r->info.part = p->part;
		}
		r->info.committed_bytes = committed;
		r->info.file_bytes = p->file_bytes;
		r->info.closed = (flags & FMT_FLAG_CLOSED) != 0;
		r->info.flight = (flags & FMT_FLAG_FLIGHT) != 0;
		r->info.window = (flags & (FMT_FLAG_FLIGHT | FMT_FLAG_WINDOW)) != 0;
		if (r->info.flight) {
			r->info.laps = fmt_get64(h + FMT_OFF_LAPS);
			if (p->header_ok)
				r->info.flight_bytes = fmt_get64(h + FMT_OFF_FLIGHT_BYTES);
		}
	} else {
		r->info.committed_bytes += committed;
		r->info.file_bytes += p->file_bytes;
		r->info.closed &= (flags & FMT_FLAG_CLOSED) != 0;
		const uint64_t mono = fmt_get64(h + FMT_OFF_START_MONO);
		if (p->header_ok && r->info.clock_source != PT_CLOCK_MONOTONIC && mono)
			add_clock_point(r, fmt_get64(h + FMT_OFF_START_TICKS), mono);
		if (p->part != r->parts[i - 1].part + 1) { /* data lost, as a damaged region is (§11) */
			r->info.corrupt_regions++;
			problem(r, 0, "part %u of run %016llx: parts %u to %u missing before it (after %s)", p->part,
				(unsigned long long)p->run_id, r->parts[i - 1].part + 1, p->part - 1, r->parts[i - 1].path);
		}
	}
	r->info.last_part = p->part;
	if (!p->header_ok) {
		/* Static fields are untrustworthy; chunks are checked on their own. */
		r->info.header_damaged = 1;
		problem(r, 0, "header @0x0: checksum mismatch; process metadata ignored, chunks still read");
	}
	free(p->hdr);
	p->hdr = NULL;
	uint64_t limit = committed;
	if (limit < PT_FMT_HEADER_BYTES || limit > p->file_bytes) {
		if (limit > p->file_bytes && limit >= PT_FMT_HEADER_BYTES)
			problem(r, p->file_bytes, "file truncated @0x%llx: header commits %llu bytes, file has %llu",
				(unsigned long long)p->file_bytes, (unsigned long long)limit,
				(unsigned long long)p->file_bytes);
		else
			problem(r, FMT_OFF_COMMITTED, "header: committed length %llu invalid; reading the whole file",
				(unsigned long long)limit);
		limit = p->file_bytes;
	}
	p->limit = r->limit = limit;
	p->first_chunk = r->nchunks;
	return scan(r);
}

static int cmp_part(const void *a, const void *b)
{
	const struct rd_part *x = a, *y = b;
	return (x->part > y->part) - (x->part < y->part);
}

/* The files of a set, checked (§11): each a part of the same run, each
 * number once; sorted by number. 0, or -PT_ESET with the message. */
static int check_set(struct pt_reader *r)
{
	for (size_t i = 0; i < r->nparts; i++) {
		const struct rd_part *p = &r->parts[i];
		if (!p->header_ok) {
			open_err(r, p, "header checksum mismatch: which run and part it is cannot be told");
			return -PT_ESET;
		}
		if (!p->run_id) {
			open_err(r, p, "not a part of a rotated trace (no run id): read it alone");
			return -PT_ESET;
		}
		if (p->run_id != r->parts[0].run_id) {
			open_err(r, p, "part %u of run %016llx, not of run %016llx (%s): files of two runs", p->part,
				 (unsigned long long)p->run_id, (unsigned long long)r->parts[0].run_id, r->parts[0].path);
			return -PT_ESET;
		}
	}
	qsort(r->parts, r->nparts, sizeof(*r->parts), cmp_part);
	for (size_t i = 1; i < r->nparts; i++)
		if (r->parts[i].part == r->parts[i - 1].part) {
			open_err(r, &r->parts[i], "part %u given twice (also %s)", r->parts[i].part, r->parts[i - 1].path);
			return -PT_ESET;
		}
	return 0;
}

int pt_reader_open_set(const char *const *paths, size_t n, struct pt_reader **out)
{
	*out = NULL;
	if (!paths || n == 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!paths[i])
			return -EINVAL;
	struct pt_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->fd = -1;
	r->info.torn_tail_offset = UINT64_MAX;
	r->info.process_name = r->process_name;
	r->info.host = r->host;
	r->info.cmdline = r->cmdline;
	r->info.job = r->job;
	r->info.recorder_version = r->version;
	int rc = 0;
	if (!(r->parts = calloc(n, sizeof(*r->parts)))) {
		free(r);
		return -ENOMEM;
	}
	r->nparts = n;
	for (size_t i = 0; i < n; i++)
		r->parts[i].fd = -1;
	for (size_t i = 0; i < n && rc == 0; i++) {
		if (!(r->parts[i].path = strdup(paths[i])))
			rc = -ENOMEM;
		else
			rc = part_open(r, &r->parts[i]);
		if (rc < 0 && rc > -PT_EBASE && n > 1)
			/* a set's reader keeps the message: which file */
			open_err(r, &r->parts[i], "%s", pt_strerror(rc));
	}
	if (rc == 0 && n > 1)
		rc = check_set(r);
	if (rc) {
		if (rc > -PT_EBASE && n == 1) { /* -errno: no reader (format.h) */
			pt_reader_close(r);
			return rc;
		}
		*out = r; /* holds the message */
		return rc;
	}
	r->info.parts = (uint32_t)n;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = part_read(r, i);
	if (rc < 0) {
		snprintf(r->errmsg, sizeof(r->errmsg), "read error: %s", pt_strerror(rc));
		pt_reader_close(r);
		return rc;
	}
	build_clock(r);
	check_sequences(r);
	if (r->oom) { /* a smaller table would be a wrong answer */
		pt_reader_close(r);
		return -ENOMEM;
	}
	if (r->nproblems == 0)
		r->errmsg[0] = 0;
	*out = r;
	return 0;
}

int pt_reader_open(const char *path, struct pt_reader **out)
{
	*out = NULL;
	if (!path)
		return -EINVAL;
	return pt_reader_open_set(&path, 1, out);
}

int pt_reader_peek_part(const char *path, uint64_t *run_id, uint32_t *part)
{
	if (!path || !run_id || !part)
		return -EINVAL;
	*run_id = 0;
	*part = 0;
	struct pt_reader r = { .fd = -1 };
	struct rd_part p = { .fd = -1, .path = (char *)path };
	int rc = part_open(&r, &p);
	if (p.fd >= 0)
		close(p.fd);
	free(p.hdr);
	if (rc == 0) {
		*run_id = p.run_id;
		*part = p.part;
	}
	return rc;
}

/* The parts of the rotated trace named @base (the path given to the
 * recorder, §11): files "@base less .ptz".NNNNNN.ptz, from glob(3) with
 * @base's own glob characters escaped. Return: how many (*@out, to
 * globfree()), or 0. */
static size_t find_parts(const char *base, glob_t *out)
{
	static const char digits6[] = ".[0-9][0-9][0-9][0-9][0-9][0-9]*.ptz";
	size_t len = strlen(base);
	if (len >= 4 && strcmp(base + len - 4, ".ptz") == 0)
		len -= 4;
	char *pat = malloc(2 * len + sizeof(digits6)); /* every character escaped at worst */
	if (!pat)
		return 0;
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		if (strchr("*?[\\", base[i]))
			pat[o++] = '\\';
		pat[o++] = base[i];
	}
	memcpy(pat + o, digits6, sizeof(digits6));
	memset(out, 0, sizeof(*out));
	int rc = glob(pat, GLOB_NOSORT, NULL, out);
	free(pat);
	if (rc != 0) {
		globfree(out);
		return 0;
	}
	/* "*" lets seven digits and more in, and also other names: keep digits only (a match starts
	 * with @base's own @len characters, unescaped, then the '.') */
	size_t k = 0;
	for (size_t i = 0; i < out->gl_pathc; i++) {
		const char *q = out->gl_pathv[i] + len + 1, *end = out->gl_pathv[i] + strlen(out->gl_pathv[i]) - 4;
		bool digits = q < end;
		for (; q < end && digits; q++)
			digits = *q >= '0' && *q <= '9';
		if (digits)
			out->gl_pathv[k++] = out->gl_pathv[i];
		else
			free(out->gl_pathv[i]);
	}
	out->gl_pathc = k;
	if (!k)
		globfree(out);
	return k;
}

int pt_reader_open_trace(const char *name, struct pt_reader **out)
{
	*out = NULL;
	if (!name)
		return -EINVAL;
	struct stat st;
	glob_t g;
	size_t n;
	if (stat(name, &st) == 0 || errno != ENOENT || !(n = find_parts(name, &g)))
		return pt_reader_open(name, out);
	int rc = pt_reader_open_set((const char *const *)g.gl_pathv, n, out);
	globfree(&g);
	return rc;
}

int fmt_reader_dup(const struct pt_reader *src, struct pt_reader **out)
{
	*out = NULL;
	if (!src->clock_built || src->dup_of)
		return -EINVAL;
	struct pt_reader *r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	memcpy(r, src, sizeof(*r));
	r->dup_of = src;
	r->win = r->stored = r->raw = NULL;
	r->win_off = 0;
	r->win_len = r->stored_cap = r->raw_cap = 0;
	r->cur = 0;
	r->have_chunk = r->pending_corrupt = 0;
	r->cur_off = 0;
	r->problems = NULL;
	r->nproblems = r->problems_cap = r->problems_lost = 0;
	r->errmsg[0] = 0;
	r->chunks = r->nchunks ? malloc(r->nchunks * sizeof(*r->chunks)) : NULL;
	r->chunks_cap = r->nchunks;
	r->dctx = NULL; /* made at its first compressed chunk */
	if (r->nchunks && !r->chunks) {
		free(r);
		return -ENOMEM;
	}
	if (r->nchunks)
		memcpy(r->chunks, src->chunks, r->nchunks * sizeof(*r->chunks));
	*out = r;
	return 0;
}

/* What every reader owns, a duplicate (fmt_reader_dup()) included: its
 * chunk index, buffers, decompressor and problems. */
static void free_cursor(struct pt_reader *r)
{
	free(r->chunks);
	free(r->win);
	free(r->stored);
	free(r->raw);
	ZSTD_freeDCtx(r->dctx);
	for (size_t i = 0; i < r->nproblems; i++)
		free(r->problems[i].msg);
	free(r->problems);
}

void pt_reader_close(struct pt_reader *r)
{
	if (!r)
		return;
	free_cursor(r);
	if (r->dup_of) { /* the tables are its source's */
		free(r);
		return;
	}
	for (size_t i = 0; i < r->nparts; i++) {
		if (r->parts[i].fd >= 0)
			close(r->parts[i].fd);
		free(r->parts[i].path);
		free(r->parts[i].hdr);
	}
	free(r->parts);
	for (uint32_t i = 0; i < r->nstrings; i++)
		free(r->strings[i].name);
	free(r->strings);
	free(r->string_map.key);
	free(r->string_map.val);
	for (uint32_t i = 0; i < r->ndomains; i++)
		free(r->domains[i].name);
	free(r->domains);
	free(r->domain_map.key);
	free(r->domain_map.val);
	for (size_t i = 0; i < r->nthreads; i++)
		if (r->threads[i].name != no_name)
			free((char *)r->threads[i].name);
	free(r->threads);
	free(r->clocks);
	free(r);
}

const char *pt_reader_errmsg(const struct pt_reader *r) { return r ? r->errmsg : "no reader"; }
const struct pt_trace_info *pt_reader_info(const struct pt_reader *r) { return &r->info; }
size_t pt_reader_problem_count(const struct pt_reader *r) { return r->nproblems + (r->problems_lost > 0); }

const char *pt_reader_problem(const struct pt_reader *r, size_t i, uint64_t *offset)
{
	if (i == r->nproblems && r->problems_lost) {
		if (offset)
			*offset = 0;
		return r->lost_msg;
	}
	if (i >= r->nproblems)
		return NULL;
	if (offset)
		*offset = r->problems[i].off;
	return r->problems[i].msg;
}

size_t pt_reader_thread_count(const struct pt_reader *r) { return r->nthreads; }

int pt_reader_thread(const struct pt_reader *r, size_t i, struct pt_thread_info *out, size_t out_bytes)
{
	if (i >= r->nthreads)
		return 0;
	/* sorted by index (thread_slot()) */
	copy_struct_out(out, out_bytes, &r->threads[i], sizeof(r->threads[i]));
	return 1;
}

const char *pt_reader_string(const struct pt_reader *r, uint32_t id, uint32_t *domain)
{
	const uint32_t i = idmap_get(&r->string_map, id);
	if (i == UINT32_MAX)
		return NULL;
	if (domain)
		*domain = r->strings[i].domain;
	return r->strings[i].name;
}

size_t fmt_reader_string_count(const struct pt_reader *r) { return r->nstrings; }
uint32_t fmt_reader_string_id(const struct pt_reader *r, size_t i) { return r->strings[i].id; }

const char *pt_reader_domain(const struct pt_reader *r, uint32_t id)
{
	if (id == 0)
		return "";
	const uint32_t i = idmap_get(&r->domain_map, id);
	return i == UINT32_MAX ? NULL : r->domains[i].name;
}

uint32_t pt_reader_max_string_id(const struct pt_reader *r) { return r->max_string; }

void pt_reader_rewind(struct pt_reader *r)
{
	r->cur = 0;
	r->have_chunk = 0;
}

int fmt_reader_seek(struct pt_reader *r, uint64_t off)
{
	if (r->nparts != 1 || r->info.flight)
		return -EINVAL;
	size_t lo = 0, hi = r->nchunks;
	while (lo < hi) {
		const size_t mid = lo + (hi - lo) / 2;
		if (r->chunks[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	r->cur = lo;
	r->have_chunk = 0;
	return 0;
}

int fmt_reader_refresh(struct pt_reader *r)
{
	/* a rotated trace's next part is another file: only an open finds it */
	if (r->nparts != 1 || r->parts[0].run_id || r->info.flight || r->info.window || r->nproblems ||
	    r->problems_lost || r->oom || !r->parts[0].header_ok)
		return 1;
	struct rd_part *p = &r->parts[0];
	struct stat a, b;
	if (fstat(p->fd, &a) != 0 || stat(p->path, &b) != 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev)
		return 1; /* replaced (or gone): a new reader says what is there */
	uint8_t *h = malloc(PT_FMT_HEADER_BYTES);
	if (!h)
		return -ENOMEM;
	int rc = fmt_pread_full(p->fd, h, PT_FMT_HEADER_BYTES, 0);
	const bool same = rc == 0 && memcmp(h, FMT_MAGIC, 8) == 0 &&
			  fmt_get64(h + FMT_OFF_HEADER_XXH) == XXH3_64bits(h, FMT_OFF_HEADER_XXH) &&
			  fmt_get64(h + FMT_OFF_START_TICKS) == r->info.start_ticks &&
			  fmt_get64(h + FMT_OFF_START_MONO) == r->info.start_mono_ns &&
			  fmt_get64(h + FMT_OFF_START_REAL) == r->info.start_real_ns &&
			  fmt_get32(h + FMT_OFF_PID) == r->info.pid && fmt_get64(h + FMT_OFF_RUN_ID) == p->run_id;
	const uint64_t committed = fmt_get64(h + FMT_OFF_COMMITTED), flags = fmt_get64(h + FMT_OFF_FLAGS);
	free(h);
	if (!same || committed < r->limit || committed > (uint64_t)a.st_size)
		return 1; /* another trace, or shorter: read it anew */
	r->info.closed = (flags & FMT_FLAG_CLOSED) != 0;
	r->info.file_bytes = p->file_bytes = (uint64_t)a.st_size;
	r->info.committed_bytes = committed;
	pt_reader_rewind(r);
	if (committed == r->limit)
		return 0;
	const uint64_t from = r->limit;
	p->limit = r->limit = committed;
	r->win_len = 0;
	if ((rc = scan_from(r, from)))
		return rc;
	build_clock(r);
	check_sequences(r); /* none before (no problem): any it finds is in the new chunks */
	if (r->oom)
		return -ENOMEM;
	return 0;
}

static void chunk_info(const struct rd_chunk *c, const struct fmt_chunk_hdr *h, struct pt_chunk_info *out)
{
	out->offset = c->off;
	out->sequence = c->sequence;
	out->first_ticks = h ? h->first_ticks : 0;
	out->last_ticks = h ? h->last_ticks : 0;
	out->thread = c->meta ? PT_FMT_META_THREAD : c->thread;
	out->records = c->records;
}

/* Chunk @c's header, read again (the index keeps only part of it): 0, or
 * <0 with a problem recorded if it cannot be read or no longer is the
 * header pass 1 indexed there (the file changed under the reader). */
static int reread_header(struct pt_reader *r, const struct rd_chunk *c, struct fmt_chunk_hdr *h)
{
	const char *why;
	int rc = hdr_at(r, c->off, h, &why, true);
	if (rc && !why) {
		problem(r, c->off, "chunk @0x%llx: header unreadable: %s", (unsigned long long)c->off, pt_strerror(rc));
		return rc;
	}
	if (rc == 0 && (h->sequence != c->sequence || h->thread != c->thread || h->records != c->records ||
			(h->kind == FMT_CHUNK_META) != c->meta)) {
		rc = -PT_ECORRUPT;
		why = "header changed since the file was opened";
	}
	if (rc) {
		r->info.damaged_chunks++;
		problem(r, c->off, "chunk @0x%llx: %s", (unsigned long long)c->off, why);
	}
	return rc;
}

size_t fmt_reader_chunk_pos(const struct pt_reader *r)
{
	return r->cur ? r->cur - 1 : 0;
}

int pt_reader_next_chunk(struct pt_reader *r, uint32_t thread, struct pt_chunk_info *out, size_t out_bytes)
{
	r->have_chunk = 0;
	r->pending_corrupt = 0;
	while (r->cur < r->nchunks) {
		struct rd_chunk *c = &r->chunks[r->cur++];
		if (thread == PT_FMT_META_THREAD ? !c->meta
		    : thread != PT_READER_ALL_CHUNKS ? (c->meta || c->thread != thread) : 0)
			continue;
		if (c->bad)
			continue;
		use_part(r, part_of(r, r->cur - 1));
		struct fmt_chunk_hdr h;
		int rc = reread_header(r, c, &h);
		if (rc == 0)
			rc = load_payload(r, c->off, &h);
		if (rc && rc != -ENOMEM)
			c->bad = 1;
		if (rc == -ENOMEM || (rc < 0 && rc > -PT_EBASE && rc != -PT_ETRUNCATED))
			return rc;
		if (rc)
			continue; /* damaged chunk: problem recorded, go on */
		r->cur_off = c->off;
		fmt_dec_init(&r->dec, r->raw, h.raw_bytes, h.first_ticks);
		r->have_chunk = 1;
		if (out) {
			struct pt_chunk_info ci;
			chunk_info(c, &h, &ci);
			copy_struct_out(out, out_bytes, &ci, sizeof(ci));
		}
		return 1;
	}
	return 0;
}

int pt_reader_next_chunk_header(struct pt_reader *r, struct pt_chunk_info *out, size_t out_bytes)
{
	r->have_chunk = 0;
	if (r->cur >= r->nchunks)
		return 0;
	const struct rd_chunk *c = &r->chunks[r->cur++];
	use_part(r, part_of(r, r->cur - 1));
	struct fmt_chunk_hdr h;
	const char *why;
	/* the ticks come from the header itself; without it (unreadable now), 0 */
	struct pt_chunk_info ci;
	chunk_info(c, hdr_at(r, c->off, &h, &why, false) == 0 ? &h : NULL, &ci);
	copy_struct_out(out, out_bytes, &ci, sizeof(ci));
	return 1;
}

/* The open chunk's payload stopped decoding at r->dec.pos: counted, and
 * reported with the chunk's offset and the byte. */
static void chunk_damaged(struct pt_reader *r)
{
	r->info.damaged_chunks++;
	problem(r, r->cur_off, "chunk @0x%llx: payload does not decode at byte %llu; rest of chunk dropped",
		(unsigned long long)r->cur_off, (unsigned long long)(r->dec.pos - r->raw));
}

struct fmt_dec *fmt_reader_chunk_dec(struct pt_reader *r)
{
	return r->have_chunk && !r->pending_corrupt ? &r->dec : NULL;
}

void fmt_reader_chunk_done(struct pt_reader *r, int rc)
{
	if (rc < 0 && r->have_chunk)
		chunk_damaged(r);
	r->have_chunk = 0;
	r->pending_corrupt = 0;
}

int pt_reader_next_record(struct pt_reader *r, struct pt_record *out, size_t out_bytes)
{
	if (!r->have_chunk)
		return -PT_ESTATE;
	/* a caller built against these headers gets the record in place */
	struct pt_record tmp;
	int rc = fmt_dec_next(&r->dec, out_bytes == sizeof(tmp) ? out : &tmp);
	if (rc == 1 && out_bytes != sizeof(tmp))
		copy_struct_out(out, out_bytes, &tmp, sizeof(tmp));
	if (rc < 0) {
		chunk_damaged(r);
		r->have_chunk = 0;
	}
	if (rc == 0)
		r->have_chunk = 0;
	return rc;
}

int pt_reader_next_records(struct pt_reader *r, struct pt_record *out, size_t max, size_t rec_bytes)
{
	if (rec_bytes == 0)
		return -EINVAL;
	if (r->pending_corrupt) {
		r->pending_corrupt = 0;
		r->have_chunk = 0;
		return -PT_ECORRUPT;
	}
	if (!r->have_chunk)
		return -PT_ESTATE;
	size_t n = 0;
	/* a caller built against these headers gets the records in place;
	 * any other stride through one record copied out at a time */
	const bool in_place = rec_bytes == sizeof(struct pt_record);
	struct pt_record tmp;
	while (n < max) {
		int rc = fmt_dec_next(&r->dec, in_place ? &out[n] : &tmp);
		if (rc == 1) {
			if (!in_place)
				copy_struct_out((unsigned char *)out + n * rec_bytes, rec_bytes, &tmp, sizeof(tmp));
			n++;
			continue;
		}
		if (rc < 0) {
			chunk_damaged(r);
		}
		if (n > 0) { /* return what decoded; the end or the damage comes next call */
			if (rc < 0)
				r->pending_corrupt = 1;
			break;
		}
		r->have_chunk = 0;
		return rc; /* 0 = end of the chunk, or the damage */
	}
	return (int)n;
}
