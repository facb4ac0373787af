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
 * Creation (§5 step 1): the file is created exclusively (O_EXCL, never
 * through a symlink) and set to mode 0600 whatever the umask. A file already
 * at the path is replaced (unlinked, then created anew) only if it is a
 * regular file of the effective user with a single link: another user's
 * file, or one linked elsewhere, is refused (-EEXIST) rather than written
 * into. The header is written with pwrite() before any page is mapped.
 *
 * Truncation by another process (truncate -s 0, logrotate copytruncate):
 * the mapped pages past the new end of file fault with SIGBUS on the next
 * store. Every store into a mapping (the chunk, its header, the committed
 * length) is made inside a guard: a process-wide SIGBUS handler, installed
 * at the first fmt_writer_open() with sigaction(), siglongjmp()s out of a
 * BUS_ADRERR fault that hits the mapping the calling thread is guarding
 * (a thread-local pointer, set only around those stores). The append then
 * fails with -EIO and the writer is dead: every later append fails at once
 * and close neither truncates nor marks the file. A SIGBUS that is not
 * ours (another address, another thread, outside the guard, sent by
 * kill()) is passed on to the handler installed before ours: an SA_SIGINFO
 * or plain handler is called (SA_RESETHAND honoured), SIG_DFL and a fault
 * under SIG_IGN get the default action (restored, then the signal raised
 * again), a sent signal under SIG_IGN is ignored. The handler uses only
 * async-signal-safe calls and an initial-exec TLS pointer. A shrink the
 * stores did not fault on (it only cut a page already being written) is
 * caught by an fstat() before each commit and at close, with the same
 * outcome. A program that installs its own SIGBUS handler after the first
 * writer opened replaces the guard unless that handler chains to ours.
 *
 * Not thread-safe: one writing thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h> /* atomic_signal_fence */
#include <stdbool.h>
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
	int dead;           /* -EIO once the file shrank under us: nothing more is written */
	uint64_t written;   /* bytes appended since open */
	uint64_t flags;     /* FMT_FLAG_FLIGHT / FMT_FLAG_WINDOW, kept at close */
	/* flight mode (doc/trace-format.md §10): the circular area is
	 * [PT_FMT_HEADER_BYTES, area_end); the previous lap's chunks still
	 * intact are [old, old_end) (old == old_end: none) */
	uint64_t area_end, old, old_end, laps;
	/* the header's fields, for a snapshot's file (strings owned) */
	struct fmt_writer_hdr hd;
};

/* ---- SIGBUS guard (see the top of this file) ---- */

struct fmt_guard {
	sigjmp_buf jb;
	uintptr_t lo[2], hi[2]; /* the mappings being stored into: [lo, hi) */
};

/* The guard of the calling thread's stores, or NULL. initial-exec: the
 * handler reads it, and a dynamic TLS access could allocate. */
static __thread struct fmt_guard *guard_cur __attribute__((tls_model("initial-exec")));
static struct sigaction guard_prev; /* written once, before our handler is installed */
static pthread_once_t guard_once = PTHREAD_ONCE_INIT;

static void guard_default(int sig)
{
	struct sigaction d;
	memset(&d, 0, sizeof(d));
	d.sa_handler = SIG_DFL;
	sigemptyset(&d.sa_mask);
	sigaction(sig, &d, NULL);
}

/* Hands a SIGBUS that is not ours to the disposition found at install. */
static void guard_chain(int sig, siginfo_t *si, void *uc)
{
	const struct sigaction *p = &guard_prev;
	if (p->sa_flags & SA_SIGINFO) {
		void (*fn)(int, siginfo_t *, void *) = p->sa_sigaction;
		if (p->sa_flags & SA_RESETHAND)
			guard_default(sig);
		fn(sig, si, uc);
		return;
	}
	if (p->sa_handler == SIG_IGN && si->si_code <= 0)
		return; /* sent by a process, and ignored as it would have been */
	if (p->sa_handler == SIG_DFL || p->sa_handler == SIG_IGN) {
		/* the default action (a fault under SIG_IGN too, as the kernel
		 * does): pending while this handler runs, taken on return */
		guard_default(sig);
		raise(sig);
		return;
	}
	void (*fn)(int) = p->sa_handler;
	if (p->sa_flags & SA_RESETHAND)
		guard_default(sig);
	fn(sig);
}

static void guard_handler(int sig, siginfo_t *si, void *uc)
{
	struct fmt_guard *g = guard_cur;
	if (g && si->si_code == BUS_ADRERR) {
		const uintptr_t a = (uintptr_t)si->si_addr;
		for (int i = 0; i < 2; i++)
			if (a >= g->lo[i] && a < g->hi[i]) {
				guard_cur = NULL;
				siglongjmp(g->jb, 1); /* to guarded_store(): restores the signal mask */
			}
	}
	const int saved = errno;
	guard_chain(sig, si, uc);
	errno = saved;
}

static void guard_install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = guard_handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	/* read the old disposition first: guard_prev is complete before any
	 * SIGBUS can reach guard_handler() */
	if (sigaction(SIGBUS, NULL, &guard_prev) == 0)
		sigaction(SIGBUS, &sa, NULL);
}

static void put_str(uint8_t *h, size_t off, size_t field, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n > field - 2)
		n = field - 2;
	fmt_put16(h + off, (uint16_t)n);
	if (n)
		memcpy(h + off + 2, s, n);
}

/* Whether the file is still at least @len bytes long (not truncated by
 * another process); on a shrink the writer is dead. 0 or -EIO. */
static int check_size(struct fmt_writer *w, uint64_t len)
{
	struct stat st;
	if (fstat(w->fd, &st) == 0 && (uint64_t)st.st_size < len)
		w->dead = -EIO;
	return w->dead;
}

static int reserve(struct fmt_writer *w, uint64_t end, int use_reserve)
{
	uint64_t want = end + (use_reserve ? 0 : FINAL_RESERVE_BYTES);
	if (want <= w->alloc_end)
		return 0;
	/* posix_fallocate() would extend a file truncated under us back to a
	 * hole-filled one: stop instead */
	if (check_size(w, w->alloc_end))
		return w->dead;
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

/*
 * Creates @path exclusively, mode exactly 0600 (§5 step 1). An existing
 * regular file of the effective user with one link is unlinked first (a
 * rerun overwriting its own trace); a symlink is -ELOOP, another kind of
 * file -EINVAL, another user's file or one with other links -EEXIST.
 * Return: the descriptor, or -errno.
 */
static int create_file(const char *path)
{
	for (int tries = 0; tries < 8; tries++) {
		int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0) {
			struct stat st;
			/* the umask may have taken bits off 0600; a file system
			 * without modes may refuse fchmod(): fine if it shows
			 * no access for group and others */
			if (fchmod(fd, 0600) != 0 && (fstat(fd, &st) != 0 || (st.st_mode & 077))) {
				int e = -errno;
				close(fd);
				unlink(path);
				return e ? e : -EPERM;
			}
			return fd;
		}
		if (errno != EEXIST)
			return -errno;
		struct stat st;
		if (lstat(path, &st) != 0) {
			if (errno == ENOENT)
				continue; /* removed meanwhile: create it */
			return -errno;
		}
		if (S_ISLNK(st.st_mode))
			return -ELOOP;
		if (!S_ISREG(st.st_mode))
			return -EINVAL;
		if (st.st_uid != geteuid() || st.st_nlink != 1)
			return -EEXIST;
		/* our own earlier trace: a process still writing it keeps its
		 * (now unlinked) file, where O_TRUNC would have cut it */
		if (unlink(path) != 0 && errno != ENOENT)
			return -errno;
	}
	return -EEXIST;
}

static void free_hd(struct fmt_writer *w)
{
	free((char *)w->hd.process_name);
	free((char *)w->hd.host);
	free((char *)w->hd.cmdline);
	free((char *)w->hd.recorder_version);
	free((char *)w->hd.job);
}

int fmt_writer_open(const char *path, const struct fmt_writer_hdr *hd, struct fmt_writer **out)
{
	*out = NULL;
	pthread_once(&guard_once, guard_install);
	struct fmt_writer *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->page = sysconf(_SC_PAGESIZE);
	w->fd = create_file(path);
	if (w->fd < 0) {
		int e = w->fd;
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
	if (hd->flight_bytes) {
		uint64_t area = hd->flight_bytes / (uint64_t)w->page * (uint64_t)w->page;
		if (area < FMT_FLIGHT_MIN_BYTES) {
			rc = -EINVAL;
			goto fail;
		}
		w->area_end = PT_FMT_HEADER_BYTES + area;
		w->flags = FMT_FLAG_FLIGHT | FMT_FLAG_WINDOW;
		/* the whole area now: a full disk is an error at open, never
		 * later (and the file never changes size again) */
		rc = -posix_fallocate(w->fd, 0, (off_t)w->area_end);
		if (rc == 0)
			w->alloc_end = w->area_end;
	} else {
		w->flags = hd->window ? FMT_FLAG_WINDOW : 0;
		rc = reserve(w, PT_FMT_HEADER_BYTES, 0);
	}
	if (rc)
		goto fail;
	/* built here and written with pwrite(): a store into the mapping on
	 * the caller's thread could fault (file truncated meanwhile) outside
	 * the flusher's guard */
	uint8_t *h = calloc(1, PT_FMT_HEADER_BYTES);
	if (!h) {
		rc = -ENOMEM;
		goto fail;
	}
	memcpy(h, FMT_MAGIC, 8);
	fmt_put16(h + FMT_OFF_VERSION_MAJOR, PT_FMT_VERSION_MAJOR);
	/* the lowest version whose features the file uses: 1.3 for a part of
	 * a rotated run (§11), 1.2 for a window, flight file, job or rank,
	 * else 1.1 (a plain stream trace reads as 1.1, §8) */
	fmt_put16(h + FMT_OFF_VERSION_MINOR,
		  hd->run_id ? 3 : w->flags || hd->rank_plus1 || (hd->job && *hd->job) ? 2 : 1);
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
	if (w->area_end)
		fmt_put64(h + FMT_OFF_FLIGHT_BYTES, w->area_end - PT_FMT_HEADER_BYTES);
	if (hd->job && *hd->job)
		put_str(h, FMT_OFF_JOB, FMT_JOB_FIELD, hd->job);
	fmt_put32(h + FMT_OFF_RANK, hd->rank_plus1);
	if (hd->run_id) {
		fmt_put64(h + FMT_OFF_RUN_ID, hd->run_id);
		fmt_put32(h + FMT_OFF_PART, hd->part);
	}
	fmt_put64(h + FMT_OFF_HEADER_XXH, XXH3_64bits(h, FMT_OFF_HEADER_XXH));
	w->head = PT_FMT_HEADER_BYTES;
	fmt_put64(h + FMT_OFF_COMMITTED, w->head);
	fmt_put64(h + FMT_OFF_FLAGS, w->flags);
	ssize_t n = pwrite(w->fd, h, PT_FMT_HEADER_BYTES, 0);
	free(h);
	if (n != (ssize_t)PT_FMT_HEADER_BYTES) {
		rc = n < 0 ? -errno : -EIO;
		goto fail;
	}
	w->hdr_map = mmap(NULL, PT_FMT_HEADER_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, w->fd, 0);
	if (w->hdr_map == MAP_FAILED) {
		w->hdr_map = NULL;
		rc = -errno;
		goto fail;
	}
	w->hd = *hd;
	w->hd.process_name = strdup(hd->process_name ? hd->process_name : "");
	w->hd.host = strdup(hd->host ? hd->host : "");
	w->hd.cmdline = strdup(hd->cmdline ? hd->cmdline : "");
	w->hd.recorder_version = strdup(hd->recorder_version ? hd->recorder_version : "");
	w->hd.job = strdup(hd->job ? hd->job : "");
	if (!w->hd.process_name || !w->hd.host || !w->hd.cmdline || !w->hd.recorder_version || !w->hd.job) {
		rc = -ENOMEM;
		goto fail;
	}
	*out = w;
	return 0;
fail:
	free_hd(w);
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

/*
 * Flight mode (§10): retires the previous lap's chunks that start below
 * @limit, oldest first, by zeroing their magic, so that no header of a
 * chunk about to be overwritten stays valid over bytes that are no longer
 * its payload (a reader, or a crash midway, then sees only junk there,
 * never a chunk that fails its payload checksum). Stores under the SIGBUS
 * guard. 0 or -EIO.
 */
static int retire(struct fmt_writer *w, uint64_t limit)
{
	struct fmt_guard g;
	g.lo[0] = g.hi[0] = g.lo[1] = g.hi[1] = 0;
	if (sigsetjmp(g.jb, 1)) {
		if (w->win)
			munmap(w->win, w->win_len);
		w->win = NULL;
		w->dead = -EIO;
		guard_cur = NULL;
		return w->dead;
	}
	while (w->old < w->old_end && w->old < limit) {
		atomic_signal_fence(memory_order_seq_cst);
		guard_cur = NULL; /* window() may unmap what the guard covers */
		int rc = window(w, w->old, PT_FMT_CHUNK_HEADER_BYTES);
		if (rc)
			return rc;
		g.lo[0] = (uintptr_t)w->win;
		g.hi[0] = g.lo[0] + w->win_len;
		guard_cur = &g;
		atomic_signal_fence(memory_order_seq_cst);
		uint8_t *p = w->win + (w->old - w->win_off);
		struct fmt_chunk_hdr h;
		const char *why;
		if (fmt_chunk_hdr_parse(p, &h, &why) != 0) {
			/* not the chunk we wrote (the file was written by
			 * someone else): nothing of that lap is trusted */
			w->old = w->old_end;
			break;
		}
		memset(p, 0, 4);
		w->old += PT_FMT_CHUNK_HEADER_BYTES + h.stored_bytes;
	}
	if (w->old >= w->old_end)
		w->old = w->old_end;
	atomic_signal_fence(memory_order_seq_cst);
	guard_cur = NULL;
	return 0;
}

/* Flight mode: makes [head, head + @need) free for the next chunk,
 * wrapping to the start of the area when it does not fit before its end. */
static int flight_room(struct fmt_writer *w, uint64_t need)
{
	if (need > (w->area_end - PT_FMT_HEADER_BYTES) / 2)
		return -PT_ETOOBIG;
	if (w->head + need > w->area_end) {
		/* what is left of the lap before the last one lies past the
		 * head: older than the whole last lap, retired before the
		 * reader could take it for the oldest part of the window */
		int rc = w->old < w->old_end ? retire(w, w->area_end) : 0;
		if (rc)
			return rc;
		w->old = PT_FMT_HEADER_BYTES;
		w->old_end = w->head;
		w->head = PT_FMT_HEADER_BYTES;
		w->laps++;
		/* committed = the area's start before anything there is
		 * retired: a reader (or a crash) then takes the last lap for
		 * the older part, never junk for the newer one. pwrite(): the
		 * same page cache page as the mapping, no store to guard. */
		uint8_t b[8], l[8];
		fmt_put64(b, w->head);
		fmt_put64(l, w->laps);
		if (pwrite(w->fd, l, sizeof(l), FMT_OFF_LAPS) != (ssize_t)sizeof(l) ||
		    pwrite(w->fd, b, 8, FMT_OFF_COMMITTED) != 8)
			return w->dead = -EIO;
	}
	/* nothing of an older lap below the new chunk's end: no guard to set up */
	return w->old < w->old_end && w->old < w->head + need ? retire(w, w->head + need) : 0;
}

static int append(struct fmt_writer *w, const struct fmt_chunk_hdr *hin, const uint8_t *raw, size_t raw_len,
		  int level, int use_reserve)
{
	if (raw_len > PT_FMT_MAX_CHUNK_RAW_BYTES)
		return -PT_ETOOBIG;
	if (w->dead)
		return w->dead;
	size_t bound = ZSTD_compressBound(raw_len);
	int rc;
	if (w->area_end) {
		rc = flight_room(w, PT_FMT_CHUNK_HEADER_BYTES + bound);
		if (rc)
			return rc;
	} else {
		rc = reserve(w, w->head + PT_FMT_CHUNK_HEADER_BYTES + bound, use_reserve);
		if (rc)
			return rc;
	}
	uint64_t start = w->head;
	rc = window(w, start, PT_FMT_CHUNK_HEADER_BYTES + bound);
	if (rc)
		return rc;
	uint8_t *dst = w->win + (start - w->win_off);
	uint8_t *payload = dst + PT_FMT_CHUNK_HEADER_BYTES;
	struct fmt_guard g;
	g.lo[0] = (uintptr_t)w->win;
	g.hi[0] = g.lo[0] + w->win_len;
	g.lo[1] = (uintptr_t)w->hdr_map;
	g.hi[1] = g.lo[1] + PT_FMT_HEADER_BYTES;
	if (sigsetjmp(g.jb, 1)) {
		/* a store faulted: the file is shorter than the mapping. Nothing
		 * set after sigsetjmp() is read here. */
		munmap(w->win, w->win_len);
		w->win = NULL;
		w->dead = -EIO;
		return w->dead;
	}
	guard_cur = &g;
	atomic_signal_fence(memory_order_seq_cst); /* the guard before the stores it covers */
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
	const uint64_t end = start + PT_FMT_CHUNK_HEADER_BYTES + stored;
	/* a shrink that cut only the page being written faults on nothing:
	 * the chunk would be committed past the end of the file */
	if (check_size(w, end) == 0) {
		w->head = end;
		w->written += PT_FMT_CHUNK_HEADER_BYTES + stored;
		commit(w);
	}
	atomic_signal_fence(memory_order_seq_cst); /* the stores before the guard ends */
	guard_cur = NULL;
	return w->dead;
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
uint64_t fmt_writer_written(const struct fmt_writer *w) { return w->written; }
uint64_t fmt_writer_laps(const struct fmt_writer *w) { return w->laps; }

int fmt_writer_append_stored(struct fmt_writer *w, const uint8_t *chunk, size_t len)
{
	if (w->dead)
		return w->dead;
	if (len < PT_FMT_CHUNK_HEADER_BYTES)
		return -EINVAL;
	int rc = w->area_end ? flight_room(w, len) : reserve(w, w->head + len, 0);
	if (rc)
		return rc;
	uint64_t start = w->head;
	/* pwrite(), not the mapping: one copy, and no SIGBUS to guard */
	for (size_t done = 0; done < len;) {
		ssize_t n = pwrite(w->fd, chunk + done, len - done, (off_t)(start + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	if (check_size(w, start + len))
		return w->dead;
	w->head = start + len;
	w->written += len;
	/* pwrite() too (same page cache page as the mapping): no store
	 * outside the guard; after the chunk's bytes, so a crash between
	 * leaves them uncommitted */
	uint8_t b[8];
	fmt_put64(b, w->head);
	if (pwrite(w->fd, b, sizeof(b), FMT_OFF_COMMITTED) != (ssize_t)sizeof(b))
		return w->dead = -EIO;
	return 0;
}

int fmt_writer_close(struct fmt_writer *w)
{
	int rc = 0;
	if (!w)
		return 0;
	if (w->win)
		munmap(w->win, w->win_len);
	/* A file truncated under us (writer dead, or shorter than what was
	 * committed) is left as it is: truncating would extend it again. */
	if (w->dead || check_size(w, w->area_end ? w->area_end : w->head)) {
		rc = w->dead;
	} else {
		/* Shrink to the committed length before marking the file closed:
		 * a crash in between leaves a valid, merely unclosed, trace. A
		 * flight file keeps its area: the older chunks lie past the head. */
		if (!w->area_end && ftruncate(w->fd, (off_t)w->head) != 0)
			rc = -errno;
		/* pwrite(), not a store into the mapping: this runs on the
		 * caller's thread, outside any guard (same page cache page) */
		uint8_t flags[8];
		fmt_put64(flags, FMT_FLAG_CLOSED | w->flags);
		if (pwrite(w->fd, flags, sizeof(flags), FMT_OFF_FLAGS) != (ssize_t)sizeof(flags) && rc == 0)
			rc = -EIO;
	}
	munmap(w->hdr_map, PT_FMT_HEADER_BYTES);
	if (close(w->fd) != 0 && rc == 0)
		rc = -errno;
	ZSTD_freeCCtx(w->cctx);
	free_hd(w);
	free(w);
	return rc;
}

void fmt_writer_forget(struct fmt_writer *w)
{
	if (!w)
		return;
	close(w->fd);
	ZSTD_freeCCtx(w->cctx);
	free_hd(w);
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
	free_hd(w);
	free(w);
}

int fmt_writer_open_part(const struct fmt_writer *w, const char *path, uint32_t part, const uint64_t start[3],
			 struct fmt_writer **out)
{
	*out = NULL;
	if (!w->hd.run_id || w->area_end)
		return -EINVAL; /* only a rotating stream writer has parts */
	struct fmt_writer_hdr hd = w->hd;
	hd.part = part;
	hd.window = part > 1; /* read alone, a later part is a window of the run (§10, §11) */
	hd.start_ticks = start[0];
	hd.start_mono_ns = start[1];
	hd.start_real_ns = start[2];
	int rc = fmt_writer_open(path, &hd, out);
	if (rc == 0)
		(*out)->store_below = w->store_below;
	return rc;
}

uint32_t fmt_writer_part(const struct fmt_writer *w) { return w->hd.part; }

/* Reads the chunk at @off of @w's file into *@buf (grown as needed):
 * its length, 0 if no valid chunk is there, or -errno. */
static ssize_t read_chunk(struct fmt_writer *w, uint64_t off, uint8_t **buf, size_t *cap, struct fmt_chunk_hdr *h)
{
	uint8_t hb[PT_FMT_CHUNK_HEADER_BYTES];
	if (fmt_pread_full(w->fd, hb, sizeof(hb), off))
		return -EIO;
	const char *why;
	if (fmt_chunk_hdr_parse(hb, h, &why) != 0)
		return 0;
	size_t len = PT_FMT_CHUNK_HEADER_BYTES + h->stored_bytes;
	if (len > *cap) {
		uint8_t *nb = realloc(*buf, len);
		if (!nb)
			return -ENOMEM;
		*buf = nb;
		*cap = len;
	}
	int rc = fmt_pread_full(w->fd, *buf, len, off);
	if (rc)
		return rc == -PT_ETRUNCATED ? -EIO : rc;
	return (ssize_t)len;
}

int fmt_writer_snapshot(struct fmt_writer *w, const char *path, uint64_t since_ticks, uint64_t *chunks)
{
	*chunks = 0;
	if (w->dead)
		return w->dead;
	struct stat a, b; /* the trace itself: creating would unlink the file being written */
	if (stat(path, &a) == 0 && fstat(w->fd, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		return -EINVAL;
	struct fmt_writer_hdr hd = w->hd;
	hd.flight_bytes = 0;
	hd.window = 1;
	hd.run_id = 0; /* a snapshot is no part of a rotated run (§11) */
	hd.part = 0;
	struct fmt_writer *s;
	int rc = fmt_writer_open(path, &hd, &s);
	if (rc)
		return rc;
	uint8_t *buf = NULL;
	size_t cap = 0;
	/* the older lap first (flight mode), then the chunks below the head */
	const uint64_t from[2] = { w->old, PT_FMT_HEADER_BYTES }, to[2] = { w->old_end, w->head };
	for (int part = 0; part < 2 && rc == 0; part++) {
		for (uint64_t off = from[part]; off < to[part];) {
			struct fmt_chunk_hdr h;
			ssize_t len = read_chunk(w, off, &buf, &cap, &h);
			if (len <= 0) {
				rc = len < 0 ? (int)len : -PT_ECORRUPT; /* not what this writer wrote */
				break;
			}
			off += (uint64_t)len;
			/* meta chunks always: the tables, clocks and losses */
			if (h.kind == FMT_CHUNK_EVENTS && h.last_ticks < since_ticks && h.records)
				continue;
			if ((rc = fmt_writer_append_stored(s, buf, (size_t)len)))
				break;
			++*chunks;
		}
	}
	free(buf);
	int crc = fmt_writer_close(s);
	if (rc == 0)
		rc = crc;
	if (rc)
		unlink(path); /* a partial snapshot would pass for a whole one */
	return rc;
}
