/*
 * recorder/rec_flush.c - the flusher thread.
 *
 * One background thread (all signals blocked but SIGBUS, which the
 * writer's guard catches: fmt_writer.c) polls every ring of the
 * registry under rcu_read_lock. A ring is drained when it holds at least
 * 1/16 of its capacity or its oldest record may be about to be one flush
 * interval old (staleness bound, below);
 * draining copies slots into a chunk encoder (transcoding to delta ticks
 * and varints, doc/trace-format.md §4), releases the slots [C2], then
 * compresses and appends the chunk. Before an event chunk is appended, any
 * string, domain or thread not yet in the file is written in a meta chunk,
 * so tables precede the chunks that use them; the full tables are repeated
 * every REPEAT_BYTES of output so one bad chunk never strips every name.
 *
 * Poll interval is adaptive between 1 ms and flush_ms: it halves while
 * rings are found busy and doubles while idle. Producers never make a
 * syscall to wake it.
 *
 * Staleness bound (what a SIGKILL can cost, recorder.h): a ring's records
 * are at most now - clean_ns old, clean_ns being the poll that last left
 * it empty (or, for a ring the flusher has not seen yet, the previous
 * poll). A ring is drained once that age reaches flush_ms - FLUSH_MARGIN,
 * and the flusher never sleeps past the earliest such moment of a ring
 * holding records, nor longer than flush_ms - FLUSH_MARGIN when all are
 * empty. So every record is drained, then written, within one flush
 * interval (the margin absorbs the timed wait's late wake-up) plus the
 * time one pass takes to drain, compress and write, unless the flusher is
 * starved of CPU.
 *
 * Process counters (doc/trace-format.md §9): every PTZ_PROC_MS (alias
 * PTZ_RSS_MS; default 100 ms, 0 = none) while recording is enabled, the
 * flusher records, on its own ring like any thread (named
 * PT_FMT_FLUSHER_THREAD_NAME), the counters "process RSS" (bytes), the
 * process's user and system CPU time and context switches (one
 * getrusage(RUSAGE_SELF), µs resolution; the switches less the flusher's
 * own, from getrusage(RUSAGE_THREAD): its poll sleeps are ours, not the
 * program's), the system's CPU steal (/proc/stat), load and runnable
 * threads (/proc/loadavg), and once, the CPUs online. Steal is read at
 * most once a second (STEAL_PERIOD_NS). So every recording
 * process has a memory series and what tells contention from code, GPU or
 * not. The /proc reads are pread()s of descriptors opened at start (no
 * allocation, no stdio); the hot path never sees any of it. A file that
 * cannot be opened drops its counters for good (counted once); a failed
 * read or parse skips that counter at that sample (counted); recording
 * never fails for them, and the poll never sleeps past the next sample.
 *
 * Failure behaviour: a chunk that cannot be written (ENOSPC, EIO...) is
 * counted in io_lost_records and its error kept in last_io_error; draining
 * continues so producers keep recording (and losing) without blocking. At
 * stop, the tables and thread records go in ordinary meta chunks, then the
 * final meta chunk (a clock, the losses, the I/O error; bounded whatever the
 * thread count) is written into the space the writer keeps in reserve.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h> /* snprintf: the /proc paths, at start */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "recorder/rec_internal.h"
#include "recorder/rec_ring.h" /* the slot layout */

#define RAW_CAP (1u << 20)          /* raw payload per meta chunk */
/* Raw payload per event chunk. Most chunks are far smaller (one flush
 * interval of one thread, median ~60-90 KiB on the analyzer benchmark's
 * busy threads); the cap only splits a busy thread's drain after a stall.
 * It bounds what a reader buffers per chunk (raw plus stored), which
 * otherwise tracks the largest chunk of the file, and what one damaged
 * chunk takes with it. zstd's blocks are 128 KiB, so the ratio barely
 * changes. */
#define EVENTS_CAP (256u << 10)
#define REPEAT_BYTES (64ull << 20)  /* full tables repeated after this much output */
#define EXITED_MAX 4096             /* exited threads' records kept for a retry at most */
/* Raw payload bound of the final meta chunk (a clock, a loss and two error
 * records, ~130 bytes at most): the only chunk that may use the writer's
 * reserve (FINAL_RESERVE_BYTES, 256 KiB, in fmt_writer.c), which it must
 * fit whatever the number of threads, strings or losses (asserted in
 * final_meta(); tests/unit/test_recorder_final.c checks it on a trace). */
#define FINAL_META_MAX_BYTES 512u
/* Drain this much before a ring's records reach the flush interval's age
 * (an eighth of the interval): covers the timed wait's late wake-up. */
#define FLUSH_MARGIN_NS(flush_ns) ((flush_ns) / 8)

/* The process counters, in the order of a sample (doc/trace-format.md §9). */
enum proc_counter {
	PC_RSS,
	PC_CPU_USER,
	PC_CPU_SYSTEM,
	PC_CSW_VOLUNTARY,
	PC_CSW_INVOLUNTARY,
	PC_STEAL,
	PC_LOAD,
	PC_RUNNABLE,
	PC_CPUS, /* once, with the first sample */
	PC_N
};
static const char *const proc_name[PC_N] = {
	[PC_RSS] = PT_FMT_PROC_RSS,
	[PC_CPU_USER] = PT_FMT_PROC_CPU_USER,
	[PC_CPU_SYSTEM] = PT_FMT_PROC_CPU_SYSTEM,
	[PC_CSW_VOLUNTARY] = PT_FMT_PROC_CSW_VOLUNTARY,
	[PC_CSW_INVOLUNTARY] = PT_FMT_PROC_CSW_INVOLUNTARY,
	[PC_STEAL] = PT_FMT_PROC_STEAL,
	[PC_LOAD] = PT_FMT_PROC_LOAD,
	[PC_RUNNABLE] = PT_FMT_PROC_RUNNABLE,
	[PC_CPUS] = PT_FMT_PROC_CPUS,
};

/* The last thread record of a thread that exited (its ring is gone), kept
 * until a meta chunk holding it is written: a failed chunk would lose the
 * thread's end tick and exit name for good. */
struct exited_thread {
	uint32_t index, tid;
	uint64_t start_ticks, end_ticks;
	uint64_t attempt;       /* the meta chunk it was last encoded into */
	char name[32];
};

struct flusher {
	struct pt_recorder *r;
	uint32_t self_tid;      /* the flusher thread's: its own ring holds the process counters */
	uint8_t *raw;           /* event chunk buffer */
	uint8_t *meta;          /* meta chunk buffer */
	struct fmt_enc enc, menc;
	uint64_t meta_seq;
	uint32_t str_next;      /* lowest string id possibly not yet emitted */
	uint32_t dom_next;      /* next domain id to emit */
	uint64_t last_repeat_bytes;
	/* the caps of an event and a meta chunk's raw payload, and the output
	 * after which every table is repeated: EVENTS_CAP, RAW_CAP and
	 * REPEAT_BYTES, or in flight mode an eighth, an eighth and a quarter
	 * of the area at most (doc/trace-format.md §10: the window, at least
	 * the area less two chunks, always holds a whole repetition) */
	size_t events_cap, meta_cap;
	uint64_t repeat_bytes;
	uint64_t t0_ticks, t0_ns;      /* a clock point at start: a trigger's window in ticks */
	uint64_t limited_reported;     /* rate-limited triggers already in an ERROR record */
	uint64_t next_clock_ns;
	uint64_t clock_step_ns;
	/* ring losses whose LOSS record could not be written (I/O error) and
	 * whose ring is gone: written with the final tables */
	uint64_t orphan_lost_records, orphan_lost_sections;
	uint64_t names_seen;    /* r->names_gen last acted on */
	uint64_t drain_age_ns;  /* flush_ms - FLUSH_MARGIN: the age at which a ring is drained */
	uint64_t prev_poll_ns;  /* the previous poll's time (0 before the first) */
	uint64_t next_due_ns;   /* this poll: the earliest moment a ring holding records is due */
	/* a meta chunk failed (I/O error): the strings, domains and threads it
	 * held are marked written, so the full tables are written again */
	bool meta_lost;
	uint64_t meta_attempt;  /* number of the meta chunk being filled */
	struct exited_thread *exited; /* not yet in a written meta chunk */
	size_t nexited, cexited;
	uint64_t meta_retry_ns; /* not before this CLOCK_MONOTONIC time */
	uint64_t stop_ns;       /* when chunk_level() first saw r->stop (CLOCK_MONOTONIC), 0 before */
	/* process counters (PTZ_PROC_MS; proc_sample()) */
	int rss_fd;             /* /proc/self/statm of this process, or -1 */
	int stat_fd;            /* /proc/stat (the "cpu" line's steal), or -1 */
	int loadavg_fd;         /* /proc/loadavg (load, runnable threads), or -1 */
	uint32_t proc_id[PC_N]; /* the counters' names, interned at the first sample */
	uint64_t rss_page;      /* page size, bytes */
	uint64_t clk_tck;       /* USER_HZ: /proc/stat's ticks per second */
	int64_t cpus_online;    /* sysconf(_SC_NPROCESSORS_ONLN) at start, or 0 */
	int64_t csw_last[2];    /* the last switches recorded (kept non-decreasing) */
	uint64_t next_rss_ns;   /* the next sample is due (CLOCK_MONOTONIC) */
	uint64_t next_steal_ns; /* the next steal reading is due (STEAL_PERIOD_NS) */
	uint64_t rss_retry_ns;  /* recording not enabled: the current retry step */
	uint64_t proc_failures;  /* reads that failed (skipped), files not opened */
	/* rotation (rotate()): the current part's opening, the output after
	 * which it rotates (fmt_writer_written()), the bytes of the parts
	 * already closed, the oldest part not deleted (rotate_keep) */
	uint64_t part_start_ns, part_limit, bytes_before;
	uint32_t oldest_part;
	/* a failed rotation while the part cannot grow either (a full disk):
	 * tried again at retry_ns if the part is still failed_written long */
	uint64_t retry_ns, failed_written;
};

int64_t (*rec_rss_read_hook)(void);
const char *rec_proc_dir_hook;

#define META_RETRY_NS 100000000u /* 100 ms between retries while writes fail */
/* Steal is read at most once a second, whatever the period: the kernel
 * builds all of /proc/stat for any read (a line per CPU, the interrupt
 * counts), 3.5 us on 2 CPUs and growing with the CPUs, where the other
 * reads cost 1.3-1.8 us each; a cumulative counter loses only resolution. */
#define STEAL_PERIOD_NS 1000000000u

/* The zstd level of the next chunk: the configured one, except once
 * pt_close() has waited REC_FINAL_SLOW_NS for the flusher (full rings at
 * level 19 held the exit 15 s and more): then REC_FINAL_FAST_LEVEL, unless
 * the level is lower. Checked per chunk, as the stop may come in the
 * middle of a pass over the rings. */
static int chunk_level(struct flusher *f)
{
	const int level = f->r->zstd_level;
	if (level <= REC_FINAL_FAST_LEVEL)
		return level;
	if (!f->stop_ns) {
		/* relaxed: only picks a level; the loop's acquire load of stop
		 * orders what the stop publishes */
		if (!atomic_load_explicit(&f->r->stop, memory_order_relaxed))
			return level;
		f->stop_ns = rec_mono_ns();
	}
	return rec_mono_ns() - f->stop_ns < REC_FINAL_SLOW_NS ? level : REC_FINAL_FAST_LEVEL;
}

static void io_error(struct pt_recorder *r, int rc, uint64_t lost)
{
	atomic_store_explicit(&r->last_io_error, -rc, memory_order_relaxed);
	atomic_fetch_add_explicit(&r->io_lost_records, lost, memory_order_relaxed);
}

static void account(struct flusher *f, uint64_t records)
{
	struct pt_recorder *r = f->r;
	atomic_fetch_add_explicit(&r->records_written, records, memory_order_relaxed);
	atomic_fetch_add_explicit(&r->chunks_written, 1, memory_order_relaxed);
	atomic_store_explicit(&r->bytes_written, f->bytes_before + PT_FMT_HEADER_BYTES + fmt_writer_written(r->w),
			      memory_order_relaxed);
}

static void meta_flush(struct flusher *f, int final)
{
	struct fmt_enc *m = &f->menc;
	if (m->records == 0)
		return;
	struct fmt_chunk_hdr h = {
		.kind = FMT_CHUNK_META,
		.thread = PT_FMT_META_THREAD,
		.records = m->records,
		.sequence = f->meta_seq,
		.first_ticks = m->first_ticks,
		.last_ticks = m->last_ticks,
	};
	size_t len = (size_t)(m->pos - m->buf);
	int rc = final ? fmt_writer_append_final(f->r->w, &h, m->buf, len, chunk_level(f))
		       : fmt_writer_append(f->r->w, &h, m->buf, len, chunk_level(f));
	uint64_t attempt = f->meta_attempt++;
	if (rc) {
		io_error(f->r, rc, 0); /* tables are written again later; not records */
		f->meta_lost = true;
		f->meta_retry_ns = rec_mono_ns() + META_RETRY_NS;
	} else {
		f->meta_seq++;
		account(f, 0);
		size_t k = 0; /* exited threads now on disk: forgotten */
		for (size_t i = 0; i < f->nexited; i++)
			if (f->exited[i].attempt != attempt)
				f->exited[k++] = f->exited[i];
		f->nexited = k;
	}
	fmt_enc_reset(m, f->meta, f->meta_cap);
}

/* Makes room for a meta record of @need bytes. */
static void meta_room(struct flusher *f, size_t need)
{
	if (!fmt_enc_room(&f->menc, need + 16))
		meta_flush(f, 0);
}

static void emit_clock(struct flusher *f)
{
	uint64_t t, mono, real;
	uint32_t br;
	rec_clock_triple(&t, &mono, &real, &br);
	meta_room(f, 64);
	fmt_enc_clock(&f->menc, t, mono, real, br);
}

/* @name: g->name, or g->exit_name once OWNER_EXITED was acquired */
static void emit_thread(struct flusher *f, struct rec_ring *g, uint64_t end_ticks, const char *name)
{
	char set[32];
	if (rec_thread_name_for(f->r, g->tid, set))
		name = set; /* pt_thread_name() wins over the pthread name */
	meta_room(f, 64 + sizeof(g->name));
	fmt_enc_thread(&f->menc, g->index, g->tid, g->start_ticks, end_ticks, name, strnlen(name, sizeof(g->name)));
}

static void emit_exited(struct flusher *f, struct exited_thread *e)
{
	meta_room(f, 64 + sizeof(e->name));
	fmt_enc_thread(&f->menc, e->index, e->tid, e->start_ticks, e->end_ticks, e->name,
		       strnlen(e->name, sizeof(e->name)));
	e->attempt = f->meta_attempt; /* after meta_room(), which may have flushed */
}

/* The last record of exited thread @g (end tick, exit name), kept for a
 * retry until written (EXITED_MAX of them at most; then sent once). */
static void emit_thread_exit(struct flusher *f, struct rec_ring *g)
{
	struct exited_thread e = { .index = g->index, .tid = g->tid, .start_ticks = g->start_ticks,
				   .end_ticks = g->end_ticks ? g->end_ticks : 1 };
	if (!rec_thread_name_for(f->r, g->tid, e.name)) /* pt_thread_name() wins */
		memcpy(e.name, g->exit_name[0] ? g->exit_name : g->name, sizeof(e.name));
	e.name[sizeof(e.name) - 1] = 0;
	if (f->nexited == f->cexited && f->cexited < EXITED_MAX) {
		size_t nc = f->cexited ? f->cexited * 2 : 16;
		struct exited_thread *p = realloc(f->exited, nc * sizeof(*p));
		if (p) {
			f->exited = p;
			f->cexited = nc;
		}
	}
	if (f->nexited < f->cexited) {
		f->exited[f->nexited] = e;
		emit_exited(f, &f->exited[f->nexited++]);
	} else {
		emit_exited(f, &e);
	}
}

/* Exited threads whose record went into a meta chunk that failed, again. */
static void emit_exited_lost(struct flusher *f)
{
	for (size_t i = 0; i < f->nexited; i++)
		if (f->exited[i].attempt != f->meta_attempt)
			emit_exited(f, &f->exited[i]);
}

/* Emits strings/domains not yet in this file (all of them if @all). */
static void emit_tables(struct flusher *f, int all)
{
	uint64_t gen = f->r->cur_gen;
	uint32_t nd = rec_domain_count();
	for (uint32_t d = all ? 1 : f->dom_next; d < nd; d++) {
		const char *n = rec_domain_name(d);
		size_t len = strlen(n);
		meta_room(f, len + 16);
		fmt_enc_domain(&f->menc, d, n, len);
	}
	f->dom_next = nd;
	uint32_t next = rec_intern_next_id();
	uint32_t first_gap = 0;
	for (uint32_t id = all ? 1 : f->str_next; id < next; id++) {
		struct rec_str *s = rec_intern_get(id);
		if (!s) {
			if (!first_gap)
				first_gap = id; /* being published right now */
			continue;
		}
		if (!all && s->emitted_gen == gen)
			continue;
		size_t len = s->len > 65536 ? 65536 : s->len;
		meta_room(f, len + 24);
		fmt_enc_string(&f->menc, id, s->domain, s->name, len);
		s->emitted_gen = gen;
	}
	f->str_next = first_gap ? first_gap : next;
}

static void emit_repeat_if_due(struct flusher *f, uint64_t now_ns)
{
	uint64_t names = atomic_load_explicit(&f->r->names_gen, memory_order_acquire);
	if (names != f->names_seen) { /* pt_thread_name(): re-announce named threads */
		f->names_seen = names;
		struct rec_ring *g;
		char set[32];
		cds_list_for_each_entry_rcu(g, &f->r->rings, node) {
			PT_TSAN_ACQUIRE(g);
			if (g->announced && rec_thread_name_for(f->r, g->tid, set))
				emit_thread(f, g, 0, g->name);
		}
	}
	uint64_t out = fmt_writer_written(f->r->w); /* grows even where the committed length wraps */
	bool retry = f->meta_lost && now_ns >= f->meta_retry_ns;
	if (!retry && out - f->last_repeat_bytes < f->repeat_bytes)
		return;
	f->last_repeat_bytes = out;
	f->meta_lost = false; /* set again if this repeat fails too */
	emit_clock(f); /* a flight window then always holds two calibration points (§7, §10) */
	emit_tables(f, 1);
	struct rec_ring *g;
	cds_list_for_each_entry_rcu(g, &f->r->rings, node) {
		PT_TSAN_ACQUIRE(g);
		if (g->announced)
			emit_thread(f, g, 0, g->name);
	}
	emit_exited_lost(f);
}

/* After a failed rotation, while the current part cannot grow (a full
 * disk: no threshold would come), the next part is tried again this much
 * later: space freed meanwhile is used. */
#define ROTATE_RETRY_NS 1000000000u

/*
 * Rotation (recorder.h, pt_open() "Rotation"; doc/trace-format.md §11).
 * The current part gets the tables still pending and is finalized as
 * pt_close() finalizes a file (truncated, closed flag); the next part
 * starts with a clock triple, every string and domain and every live
 * thread, before any event chunk, so it decodes alone. Rings are not
 * touched: per-thread chunk sequences go on in the next part. The losses
 * and I/O errors counted for the whole run go only into the last part's
 * final chunk (a set read as one trace counts them once). A part that
 * cannot be created leaves recording in the current one, with an ERROR
 * record PT_ERRC_ROTATE (the errno); the next try is at the next
 * threshold. Called with the RCU read lock or reg_lock held (the rings are
 * walked), between two event chunks (the encoder empty).
 */
static void rotate(struct flusher *f, uint64_t now_ns)
{
	struct pt_recorder *r = f->r;
	meta_flush(f, 0);
	const uint32_t next = fmt_writer_part(r->w) + 1;
	char path[4096];
	rec_part_path(r->path_base, next, path, sizeof(path));
	uint64_t start[3];
	uint32_t br;
	rec_clock_triple(&start[0], &start[1], &start[2], &br);
	struct fmt_writer *nw;
	int rc = fmt_writer_open_part(r->w, path, next, start, &nw);
	f->part_start_ns = now_ns;
	if (rc) {
		atomic_fetch_add_explicit(&r->rotate_errors, 1, memory_order_relaxed);
		meta_room(f, 64);
		fmt_enc_error(&f->menc, rec_ticks(), PT_ERRC_ROTATE, (uint64_t)-rc);
		meta_flush(f, 0);
		f->part_limit = fmt_writer_written(r->w) + r->rotate_bytes;
		f->failed_written = fmt_writer_written(r->w);
		f->retry_ns = now_ns + ROTATE_RETRY_NS;
		return;
	}
	const uint64_t old_bytes = PT_FMT_HEADER_BYTES + fmt_writer_written(r->w);
	rc = fmt_writer_close(r->w); /* every chunk of it is committed already */
	if (rc)
		io_error(r, rc, 0); /* e.g. truncated under us: its chunks below its size stay readable */
	r->w = nw;
	f->bytes_before += old_bytes;
	f->part_limit = r->rotate_bytes;
	f->retry_ns = 0;
	f->meta_seq = 0;
	f->last_repeat_bytes = 0;
	f->meta_lost = false;
	pthread_mutex_lock(&r->path_lock);
	snprintf(r->path_now, sizeof(r->path_now), "%s", path);
	pthread_mutex_unlock(&r->path_lock);
	atomic_fetch_add_explicit(&r->parts, 1, memory_order_relaxed);
	emit_clock(f);
	emit_tables(f, 1);
	struct rec_ring *g;
	cds_list_for_each_entry_rcu(g, &r->rings, node) {
		PT_TSAN_ACQUIRE(g);
		if (g->announced)
			emit_thread(f, g, 0, g->name);
	}
	emit_exited_lost(f);
	meta_flush(f, 0);
	/* rotate_keep: the oldest parts go (one a rotation, more after a
	 * failed unlink); a part already gone is no error */
	while (r->rotate_keep && next - f->oldest_part >= r->rotate_keep) {
		rec_part_path(r->path_base, f->oldest_part, path, sizeof(path));
		(void)unlink(path);
		f->oldest_part++;
	}
}

/* Rotates when the current part is due by size or age (not while stopping:
 * the final drain stays in the part that holds the run's last chunks). */
static void rotate_if_due(struct flusher *f, uint64_t now_ns)
{
	struct pt_recorder *r = f->r;
	if (!r->run_id || atomic_load_explicit(&r->stop, memory_order_relaxed))
		return;
	const uint64_t out = fmt_writer_written(r->w);
	if ((r->rotate_bytes && out >= f->part_limit) || (r->rotate_ns && now_ns - f->part_start_ns >= r->rotate_ns) ||
	    (f->retry_ns && now_ns >= f->retry_ns && out == f->failed_written))
		rotate(f, now_ns);
}

/* Appends the event chunk in f->enc for ring @g. */
static void event_flush(struct flusher *f, struct rec_ring *g)
{
	struct fmt_enc *e = &f->enc;
	uint64_t lr = atomic_load_explicit(&g->lost_records, memory_order_relaxed);
	uint64_t ls = atomic_load_explicit(&g->lost_sections, memory_order_relaxed);
	uint64_t new_lr = lr - g->reported_lost_records, new_ls = ls - g->reported_lost_sections;
	uint32_t loss_records = 0;
	if (new_lr || new_ls) {
		uint64_t t = e->have_ticks ? e->prev_ticks : rec_ticks();
		fmt_enc_loss(e, t, new_lr, new_ls);
		loss_records = 1;
	}
	if (e->records == 0)
		return;
	/* tables first: every id in this chunk was interned before its slot
	 * was published, so emit_tables() sees it */
	emit_tables(f, 0);
	if (!g->announced) {
		emit_thread(f, g, 0, g->name);
		g->announced = true;
	}
	meta_flush(f, 0);
	struct fmt_chunk_hdr h = {
		.kind = FMT_CHUNK_EVENTS,
		.thread = g->index,
		.records = e->records,
		.sequence = g->seq,
		.first_ticks = e->first_ticks,
		.last_ticks = e->last_ticks,
	};
	int rc = fmt_writer_append(f->r->w, &h, e->buf, (size_t)(e->pos - e->buf), chunk_level(f));
	if (rc) {
		/* the application's records are lost; the loss counts stay
		 * unreported and go into a later chunk */
		io_error(f->r, rc, e->records - loss_records);
	} else {
		account(f, e->records - loss_records);
		g->reported_lost_records = lr;
		g->reported_lost_sections = ls;
	}
	g->seq++; /* a failed chunk leaves a visible sequence gap */
	fmt_enc_reset(e, f->raw, f->events_cap);
	/* after each append, so a part exceeds its size by one chunk at
	 * most, not by a whole backlog's drain */
	if (f->r->run_id)
		rotate_if_due(f, rec_mono_ns());
}

/*
 * Drains ring @g. Returns the number of slots consumed.
 */
static uint64_t drain(struct flusher *f, struct rec_ring *g, uint64_t now_ns, int force)
{
	/* [C1] acquire: pairs with [P1] in rec_ring.h rec_ring_publish(); the
	 * slots below head are complete. */
	uint64_t head = atomic_load_explicit(&g->head, memory_order_acquire);
	uint64_t t = g->tail_own, n = head - t;
	int lost_pending = atomic_load_explicit(&g->lost_records, memory_order_relaxed) != g->reported_lost_records;
	if (n == 0 && !lost_pending) {
		g->clean_ns = now_ns;
		return 0;
	}
	if (g->clean_ns == 0) /* new since the last poll: no record is older than it */
		g->clean_ns = f->prev_poll_ns ? f->prev_poll_ns : now_ns;
	const uint64_t due = g->clean_ns + f->drain_age_ns; /* its oldest record's age reaches the bound */
	if (!force && n < g->cap / 16 && now_ns < due) {
		f->next_due_ns = PT_MIN(f->next_due_ns, due);
		return 0;
	}
	g->clean_ns = now_ns; /* what is published after the head load below is newer than now_ns */
	struct fmt_enc *e = &f->enc;
	/* Locals: g->slots and g->mask share a cache line with fields the
	 * owner writes on every record; stores through e->pos (uint8_t *) may
	 * alias them, so without locals they are reloaded for every slot. */
	const struct rec_slot *const slots = g->slots;
	const uint64_t mask = g->mask;
	while (t < head) {
		if (!fmt_enc_room(e, 2 * FMT_MAX_RECORD_BYTES)) {
			/* [C2] release: done reading these slots. Pairs with [P2]. */
			atomic_store_explicit(&g->tail, t, memory_order_release);
			event_flush(f, g);
		}
		const struct rec_slot *s = &slots[t & mask];
		switch (rec_slot_kind(s)) {
		case SLOT_BEGIN:
			fmt_enc_begin(e, s->a, s->id);
			break;
		case SLOT_END:
			fmt_enc_end(e, s->a, s->id);
			break;
		case SLOT_METRIC:
			fmt_enc_metric(e, rec_slot_arg(s), s->a);
			break;
		case SLOT_TRANSFER:
			fmt_enc_transfer(e, rec_slot_arg(s), s->a);
			break;
		/* multi-slot kinds: published together (one head store) */
		case SLOT_COUNTER:
			fmt_enc_counter(e, s->a, s->id, (int64_t)rec_slot_value(slots, mask, t, 1));
			t += REC_SLOTS_COUNTER - 1;
			break;
		case SLOT_ERROR:
			fmt_enc_error(e, s->a, rec_slot_arg(s), s->id);
			break;
		case SLOT_INSTANT:
			fmt_enc_lp5(e, PT_REC_INSTANT, s->id, 0, 0, 0, s->a);
			break;
		case SLOT_ASYNC_BEGIN:
		case SLOT_ASYNC_END:
			fmt_enc_lp5(e, rec_slot_kind(s) == SLOT_ASYNC_BEGIN ? PT_REC_ASYNC_BEGIN : PT_REC_ASYNC_END,
				    s->id, 0, rec_slot_value(slots, mask, t, 1), 0, s->a);
			t += REC_SLOTS_ASYNC - 1;
			break;
		case SLOT_GPU_LAUNCH:
			fmt_enc_lp5(e, PT_REC_GPU_LAUNCH, s->id, rec_slot_arg(s), rec_slot_value(slots, mask, t, 1),
				    rec_slot_value(slots, mask, t, 2), s->a);
			t += REC_SLOTS_GPU_LAUNCH - 1;
			break;
		case SLOT_GPU_RANGE:
			fmt_enc_gpu_range(e, s->id, rec_slot_arg(s), rec_slot_value(slots, mask, t, 1),
					  rec_slot_value(slots, mask, t, 2), s->a, rec_slot_value(slots, mask, t, 3),
					  rec_slot_value(slots, mask, t, 4));
			t += REC_SLOTS_GPU_RANGE - 1;
			break;
		default:
			break; /* cannot happen: the owner writes only the kinds above */
		}
		t++;
	}
	g->tail_own = t;
	/* [C2] release: pairs with [P2] in rec_ring.h rec_ring_room(). */
	atomic_store_explicit(&g->tail, t, memory_order_release);
	event_flush(f, g);
	return n;
}

/* Final pass over rings whose threads exited: drain, announce the exit,
 * unlink, and free them once a grace period has passed. The flusher waits
 * for the grace period itself (synchronize_rcu) rather than handing the
 * rings to call_rcu: a call_rcu worker thread would have to be paused
 * around every fork() for a child to record (recorder.h, pt_open()). */
static void reap(struct flusher *f, uint64_t now_ns)
{
	struct rec_ring *gone = NULL;
	struct pt_recorder *r = f->r;
	struct rec_ring *g, *tmp;
	int any = 0;
	urcu_bp_read_lock();
	cds_list_for_each_entry_rcu(g, &r->rings, node) {
		PT_TSAN_ACQUIRE(g);
		any |= atomic_load_explicit(&g->owner_state, memory_order_relaxed) == OWNER_EXITED;
	}
	urcu_bp_read_unlock();
	if (!any)
		return;
	pthread_mutex_lock(&r->reg_lock);
	cds_list_for_each_entry_safe(g, tmp, &r->rings, node) {
		/* [X3] acquire: pairs with [X1] in ring_retire(); the owner's last
		 * slots, end_ticks and name are visible. */
		if (atomic_load_explicit(&g->owner_state, memory_order_acquire) != OWNER_EXITED)
			continue;
		drain(f, g, now_ns, 1);
		emit_thread_exit(f, g);
		g->announced = true;
		f->orphan_lost_records += atomic_load_explicit(&g->lost_records, memory_order_relaxed) -
					  g->reported_lost_records;
		f->orphan_lost_sections += atomic_load_explicit(&g->lost_sections, memory_order_relaxed) -
					   g->reported_lost_sections;
		rec_fold_ring(r, g);
		g->reap_next = gone;
		gone = g;
	}
	pthread_mutex_unlock(&r->reg_lock);
	meta_flush(f, 0);
	if (!gone)
		return;
	urcu_bp_synchronize_rcu(); /* no pt_stats() walker still stands on them */
	PT_TSAN_ACQUIRE(&rec_grace);
	while (gone) {
		struct rec_ring *next = gone->reap_next;
		rec_ring_free(gone);
		gone = next;
	}
}

static void clock_if_due(struct flusher *f, uint64_t now_ns)
{
	if (now_ns < f->next_clock_ns)
		return;
	emit_clock(f);
	/* 10 ms, 100 ms, 1 s after open, then every second: a crashed short
	 * trace still has two calibration points */
	if (f->clock_step_ns < 1000000000u)
		f->clock_step_ns *= 10;
	f->next_clock_ns = now_ns + f->clock_step_ns;
	meta_flush(f, 0);
}

/* Resident set size in bytes from /proc/self/statm (its second field, in
 * pages), or -1. */
static int64_t rss_read(struct flusher *f)
{
	if (rec_rss_read_hook)
		return rec_rss_read_hook();
	char b[128];
	if (f->rss_fd < 0)
		return -1;
	ssize_t n = pread(f->rss_fd, b, sizeof(b) - 1, 0);
	if (n <= 0)
		return -1;
	b[n] = 0;
	const char *p = b;
	while (*p >= '0' && *p <= '9') /* size */
		p++;
	if (*p++ != ' ' || *p < '0' || *p > '9')
		return -1;
	uint64_t pages = 0;
	for (; *p >= '0' && *p <= '9'; p++)
		pages = pages * 10 + (uint64_t)(*p - '0');
	return (int64_t)(pages * f->rss_page);
}

/* The start of the file behind @fd (at most @cap - 1 bytes) in @b,
 * NUL-terminated, or NULL (no descriptor, or the read failed). */
static const char *proc_pread(int fd, char *b, size_t cap)
{
	if (fd < 0)
		return NULL;
	ssize_t n = pread(fd, b, cap - 1, 0);
	if (n <= 0)
		return NULL;
	b[n] = 0;
	return b;
}

/* Skips spaces, then reads the decimal at *@p into *@v and moves *@p past
 * it; false (nothing moved) if no digit is there. */
static bool parse_u64(const char **p, uint64_t *v)
{
	const char *s = *p;
	while (*s == ' ')
		s++;
	if (*s < '0' || *s > '9')
		return false;
	uint64_t x = 0;
	for (; *s >= '0' && *s <= '9'; s++)
		x = x * 10 + (uint64_t)(*s - '0');
	*v = x;
	*p = s;
	return true;
}

/* The system's CPU steal in ns: /proc/stat's first line, "cpu" then user
 * nice system idle iowait irq softirq steal ... in USER_HZ ticks summed
 * over the CPUs (proc(5)); or -1. */
static int64_t steal_read(struct flusher *f)
{
	char b[256]; /* the first 8 fields take at most 5 + 8 x 21 bytes */
	const char *p = proc_pread(f->stat_fd, b, sizeof(b));
	if (!p || strncmp(p, "cpu ", 4) != 0)
		return -1;
	p += 3;
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		if (!parse_u64(&p, &v))
			return -1; /* a kernel before 2.6.11 has no steal field */
	const uint64_t hz = f->clk_tck;
	return (int64_t)(v / hz * 1000000000u + v % hz * 1000000000u / hz); /* no overflow, exact for HZ | 1e9 */
}

/* The 1-minute load x 1000 and the runnable threads (the kernel's
 * nr_running(), procs_running of /proc/stat) from /proc/loadavg, e.g.
 * "0.52 0.48 0.40 3/412 12345"; false on a failed read or parse. */
static bool loadavg_read(struct flusher *f, int64_t *load_milli, int64_t *runnable)
{
	char b[128];
	const char *p = proc_pread(f->loadavg_fd, b, sizeof(b));
	uint64_t ip, frac = 0, run;
	if (!p || !parse_u64(&p, &ip))
		return false;
	int d = 0;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++, d++)
			if (d < 3)
				frac = frac * 10 + (uint64_t)(*p - '0');
	for (; d < 3; d++)
		frac *= 10;
	for (int field = 0; field < 2; field++) { /* the 5- and 15-minute loads */
		while (*p == ' ')
			p++;
		while (*p && *p != ' ')
			p++;
	}
	if (!parse_u64(&p, &run) || *p != '/')
		return false;
	*load_milli = (int64_t)(ip * 1000 + frac);
	*runnable = (int64_t)run;
	return true;
}

static int64_t tv_ns(const struct timeval *tv)
{
	return (int64_t)tv->tv_sec * 1000000000 + (int64_t)tv->tv_usec * 1000;
}

/* What the samples cost the flusher, over the process's life (rec_proc_cost()). */
static _Atomic uint64_t proc_samples_total, proc_wall_ns_total;

void rec_proc_cost(uint64_t *samples, uint64_t *wall_ns)
{
	/* relaxed: two statistics, read after pt_close() joined the flusher */
	*samples = atomic_load_explicit(&proc_samples_total, memory_order_relaxed);
	*wall_ns = atomic_load_explicit(&proc_wall_ns_total, memory_order_relaxed);
}

/* One sample of every process counter that can be read (doc/trace-format.md
 * §9): a failed read skips its counter this time and is counted. */
static void proc_sample(struct flusher *f, uint64_t now_ns)
{
	struct pt_recorder *r = f->r;
	/* wall time (vDSO): a thread CPU clock is a syscall, as dear as a read */
	const uint64_t c0 = rec_mono_ns();
	int64_t v[PC_N];
	bool have[PC_N] = { false };
	v[PC_RSS] = rss_read(f);
	have[PC_RSS] = v[PC_RSS] >= 0;
	f->proc_failures += !have[PC_RSS];
	struct rusage own, self;
	/* the flusher's own first: a switch of it between the two calls is in
	 * @self only, so a difference may exceed the next one by 1: the
	 * switches are kept non-decreasing */
	if (getrusage(RUSAGE_THREAD, &own) == 0 && getrusage(RUSAGE_SELF, &self) == 0) {
		v[PC_CPU_USER] = tv_ns(&self.ru_utime);
		v[PC_CPU_SYSTEM] = tv_ns(&self.ru_stime);
		v[PC_CSW_VOLUNTARY] = PT_MAX((int64_t)(self.ru_nvcsw - own.ru_nvcsw), f->csw_last[0]);
		v[PC_CSW_INVOLUNTARY] = PT_MAX((int64_t)(self.ru_nivcsw - own.ru_nivcsw), f->csw_last[1]);
		f->csw_last[0] = v[PC_CSW_VOLUNTARY];
		f->csw_last[1] = v[PC_CSW_INVOLUNTARY];
		have[PC_CPU_USER] = have[PC_CPU_SYSTEM] = have[PC_CSW_VOLUNTARY] = have[PC_CSW_INVOLUNTARY] = true;
	} else {
		f->proc_failures++;
	}
	if (f->stat_fd >= 0 && now_ns >= f->next_steal_ns) {
		f->next_steal_ns = now_ns + STEAL_PERIOD_NS;
		v[PC_STEAL] = steal_read(f);
		have[PC_STEAL] = v[PC_STEAL] >= 0;
		f->proc_failures += !have[PC_STEAL];
	}
	if (f->loadavg_fd >= 0) {
		have[PC_LOAD] = have[PC_RUNNABLE] = loadavg_read(f, &v[PC_LOAD], &v[PC_RUNNABLE]);
		f->proc_failures += !have[PC_LOAD];
	}
	if (!f->proc_id[0]) { /* the first sample: names, and the CPU count once */
		for (int k = 0; k < PC_N; k++)
			f->proc_id[k] = pt_intern(r, proc_name[k]);
		v[PC_CPUS] = f->cpus_online;
		have[PC_CPUS] = f->cpus_online > 0;
	}
	for (int k = 0; k < PC_N; k++)
		if (have[k])
			pt_counter(r, f->proc_id[k], v[k]);
	const uint64_t c1 = rec_mono_ns();
	/* relaxed: statistics only (rec_proc_cost()); this thread is the only writer */
	atomic_fetch_add_explicit(&proc_samples_total, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&proc_wall_ns_total, c1 - c0, memory_order_relaxed);
}

/* The process counters' sample, if due. Only while recording is enabled
 * (a sample taken while disabled would be dropped by pt_counter()): the
 * first one is taken as soon as pt_open() has published the recorder. */
static bool proc_if_due(struct flusher *f, uint64_t now_ns)
{
	struct pt_recorder *r = f->r;
	const uint64_t period = (uint64_t)r->rss_ms * 1000000u;
	if (!period || now_ns < f->next_rss_ns)
		return false;
	if (!atomic_load_explicit(&r->hot_gen, memory_order_relaxed)) {
		/* not yet published, or disabled: try again after 1, 2, 4... ms,
		 * at most a period (no busy poll while disabled) */
		f->rss_retry_ns = f->rss_retry_ns ? PT_MIN(2 * f->rss_retry_ns, period) : PT_MIN(1000000u, period);
		f->next_rss_ns = now_ns + f->rss_retry_ns;
		return false;
	}
	f->rss_retry_ns = 0;
	f->next_rss_ns = now_ns + period;
	proc_sample(f, now_ns);
	return true;
}

static void final_meta(struct flusher *f)
{
	struct pt_recorder *r = f->r;
	/* pending tables, and every table again if a meta chunk was lost, go
	 * in ordinary chunks: the final one, which may use the reserve, keeps
	 * the losses and must stay small */
	meta_flush(f, 0);
	if (f->meta_lost) {
		emit_tables(f, 1);
		emit_exited_lost(f);
		meta_flush(f, 0);
	}
	emit_tables(f, 0);
	uint64_t ring_lr = f->orphan_lost_records, ring_ls = f->orphan_lost_sections;
	struct rec_ring *g;
	urcu_bp_read_lock();
	cds_list_for_each_entry_rcu(g, &r->rings, node) {
		PT_TSAN_ACQUIRE(g);
		emit_thread(f, g, 0, g->name);
		ring_lr += atomic_load_explicit(&g->lost_records, memory_order_relaxed) - g->reported_lost_records;
		ring_ls += atomic_load_explicit(&g->lost_sections, memory_order_relaxed) - g->reported_lost_sections;
	}
	urcu_bp_read_unlock();
	/* the thread records, one per live thread (tens of thousands are
	 * possible), go in ordinary chunks too: in the final one they could
	 * outgrow the reserve, and on a full disk the losses would go with them */
	meta_flush(f, 0);
	emit_clock(f);
	uint64_t t = rec_ticks();
	uint64_t io = atomic_load_explicit(&r->io_lost_records, memory_order_relaxed);
	uint64_t ae = atomic_load_explicit(&r->after_exit, memory_order_relaxed);
	uint64_t nr = atomic_load_explicit(&r->no_ring_lost, memory_order_relaxed);
	meta_room(f, 64);
	if (io || ae || nr || ring_lr || ring_ls)
		fmt_enc_loss(&f->menc, t, io + ae + nr + ring_lr, ring_ls);
	if (ae)
		fmt_enc_error(&f->menc, t, PT_ERRC_AFTER_EXIT, ae);
	int err = atomic_load_explicit(&r->last_io_error, memory_order_relaxed);
	if (err)
		fmt_enc_error(&f->menc, t, PT_ERRC_IO, (uint64_t)err);
	/* one clock, one loss and two error records whatever the thread count */
	assert((size_t)(f->menc.pos - f->menc.buf) <= FINAL_META_MAX_BYTES);
	meta_flush(f, 1);
}

/* True on the flusher thread: pt_flush() there would wait for itself. */
static __thread bool in_flusher;

/* pt_flush() and pt_snapshot(), with stop_lock held: takes a ticket
 * (++*@req), wakes the flusher and waits on flush_cond until its passes
 * have answered it (*@done) or @wait_ns have passed. True if answered. */
static bool await_pass(struct pt_recorder *r, uint64_t *req, const uint64_t *done, uint64_t wait_ns)
{
	const uint64_t ticket = ++*req;
	pthread_cond_signal(&r->stop_cond);
	const uint64_t deadline = rec_mono_ns() + wait_ns;
	struct timespec ts = { (time_t)(deadline / 1000000000u), (long)(deadline % 1000000000u) };
	int rc = 0;
	while (*done < ticket && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&r->flush_cond, &r->stop_lock, &ts);
	return *done >= ticket;
}

/* ---- snapshots (recorder.h: pt_snapshot(), pt_trigger(), PTZ_SNAPSHOT_SIGNAL) ---- */

/* How long pt_snapshot() waits for the flusher: a 64 MiB window copies in
 * well under a second; a stalled disk is not waited on forever. */
#define SNAP_WAIT_NS (30ull * 1000000000u)

/* The file of the next signal or trigger snapshot: PTZ_SNAPSHOT_PATH with
 * "%n" for its number, or the trace's path less ".ptz" plus
 * ".snapshot-N.ptz". */
static void snap_name(struct pt_recorder *r, char *buf, size_t cap)
{
	uint64_t n = ++r->snap_seq;
	const char *t = getenv("PTZ_SNAPSHOT_PATH");
	char tmpl[4000]; /* room for the number in @buf (4096) */
	if (t && *t) {
		snprintf(tmpl, sizeof(tmpl), "%s", t);
	} else {
		size_t len = strlen(r->path_now);
		if (len >= 4 && strcmp(r->path_now + len - 4, ".ptz") == 0)
			len -= 4;
		snprintf(tmpl, sizeof(tmpl), "%.*s.snapshot-%%n.ptz", (int)len, r->path_now);
	}
	const char *pc = strstr(tmpl, "%n");
	if (pc)
		snprintf(buf, cap, "%.*s%llu%s", (int)(pc - tmpl), tmpl, (unsigned long long)n, pc + 2);
	else
		snprintf(buf, cap, "%s.%llu", tmpl, (unsigned long long)n);
}

/*
 * Writes a snapshot of the trace to @path: what the file holds (a flight
 * file's window), the rings having just been drained into it; event chunks
 * ending before @since_ns (CLOCK_MONOTONIC; 0 = none) left out. A failure
 * is an ERROR record (PT_ERRC_SNAPSHOT, the errno) in the trace, and the
 * program goes on. 0 or -errno.
 */
static int snapshot_now(struct flusher *f, const char *path, uint64_t since_ns)
{
	struct pt_recorder *r = f->r;
	meta_flush(f, 0); /* tables pending since the drain */
	uint64_t since_ticks = 0;
	if (since_ns) {
		uint64_t t, mono, real;
		uint32_t br;
		rec_clock_triple(&t, &mono, &real, &br);
		double slope = mono > f->t0_ns ? (double)(t - f->t0_ticks) / (double)(mono - f->t0_ns) : 1.0;
		uint64_t back = mono > since_ns ? (uint64_t)((double)(mono - since_ns) * slope) : 0;
		since_ticks = t > back ? t - back : 1;
	}
	uint64_t chunks;
	int rc = fmt_writer_snapshot(r->w, path, since_ticks, &chunks);
	if (rc) {
		atomic_fetch_add_explicit(&r->snapshot_errors, 1, memory_order_relaxed);
		meta_room(f, 64);
		fmt_enc_error(&f->menc, rec_ticks(), PT_ERRC_SNAPSHOT, (uint64_t)-rc);
		meta_flush(f, 0);
	} else {
		atomic_fetch_add_explicit(&r->snapshots, 1, memory_order_relaxed);
	}
	return rc;
}

static struct pt_recorder *_Atomic snap_rec; /* the open recorder, for the signal handler */
static int snap_signo;                       /* the snapshot signal installed, or 0 */
static struct sigaction snap_prev;

/* Async-signal-safe: sets a flag the flusher reads at its next poll. */
static void snap_handler(int sig)
{
	(void)sig;
	struct pt_recorder *r = atomic_load_explicit(&snap_rec, memory_order_relaxed);
	if (r)
		atomic_store_explicit(&r->snap_signalled, true, memory_order_relaxed);
}

/* PTZ_SNAPSHOT_SIGNAL: USR1, USR2, SIGUSR2, a number, RTMIN+n; 0 if unset or bad (warned). */
static int snap_signal_env(void)
{
	const char *e = getenv("PTZ_SNAPSHOT_SIGNAL");
	if (!e || !*e)
		return 0;
	const char *n = strncmp(e, "SIG", 3) == 0 ? e + 3 : e;
	int sig = 0;
	if (strcmp(n, "USR1") == 0)
		sig = SIGUSR1;
	else if (strcmp(n, "USR2") == 0)
		sig = SIGUSR2;
	else if (strncmp(n, "RTMIN+", 6) == 0 && atoi(n + 6) >= 0 && SIGRTMIN + atoi(n + 6) <= SIGRTMAX)
		sig = SIGRTMIN + atoi(n + 6);
	else if (atoi(n) > 0 && atoi(n) < NSIG && atoi(n) != SIGKILL && atoi(n) != SIGSTOP && atoi(n) != SIGBUS &&
		 atoi(n) != SIGSEGV)
		sig = atoi(n);
	if (!sig)
		fprintf(stderr, "ptz: ignoring PTZ_SNAPSHOT_SIGNAL=\"%s\": not USR1, USR2, RTMIN+n or a signal number\n", e);
	return sig;
}

int pt_snapshot(pt_recorder *r, const char *path)
{
	if (!r || !path)
		return -EINVAL;
	if (rec_fork_unsafe)
		return -EBADF;
	if (in_flusher)
		return -EDEADLK;
	if (strlen(path) >= sizeof(r->snap_buf))
		return -ENAMETOOLONG;
	pthread_mutex_lock(&r->snap_lock);
	pthread_mutex_lock(&r->stop_lock);
	if (atomic_load_explicit(&r->gen, memory_order_relaxed) == 0 ||
	    atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		pthread_mutex_unlock(&r->stop_lock);
		pthread_mutex_unlock(&r->snap_lock);
		return -EBADF;
	}
	snprintf(r->snap_buf, sizeof(r->snap_buf), "%s", path);
	const int out = await_pass(r, &r->snap_req, &r->snap_done, SNAP_WAIT_NS) ? r->snap_rc : -ETIMEDOUT;
	pthread_mutex_unlock(&r->stop_lock);
	pthread_mutex_unlock(&r->snap_lock);
	return out;
}

int pt_trigger(pt_recorder *r, const char *reason)
{
	if (!r || !reason)
		return -EINVAL;
	if (rec_fork_unsafe || atomic_load_explicit(&r->gen, memory_order_acquire) == 0)
		return -EBADF;
	char name[256];
	snprintf(name, sizeof(name), "trigger: %s", reason);
	pt_instant(r, pt_intern(r, name));
	const uint64_t now = rec_mono_ns();
	uint64_t last = atomic_load_explicit(&r->trig_last_ns, memory_order_relaxed);
	if ((last && now - last < (uint64_t)r->trigger_min_ms * 1000000u) ||
	    !atomic_compare_exchange_strong_explicit(&r->trig_last_ns, &last, now, memory_order_relaxed,
						     memory_order_relaxed)) {
		atomic_fetch_add_explicit(&r->triggers_limited, 1, memory_order_relaxed);
		return 0;
	}
	const uint64_t back = (uint64_t)r->trigger_seconds * 1000000000u;
	atomic_store_explicit(&r->trig_since_ns, (now > back ? now - back : 1) + 1, memory_order_relaxed);
	pthread_mutex_lock(&r->stop_lock); /* wake the flusher now rather than at its next poll */
	pthread_cond_signal(&r->stop_cond);
	pthread_mutex_unlock(&r->stop_lock);
	return 1;
}

/* The flusher's part, after a pass drained every ring (@force): the
 * pt_snapshot() request @want (if @asked), the signal's, the trigger's. */
static void snapshots_pass(struct flusher *f, bool asked, uint64_t want, bool sig, uint64_t trig)
{
	struct pt_recorder *r = f->r;
	char path[4096];
	if (asked) {
		int rc = snapshot_now(f, r->snap_buf, 0);
		pthread_mutex_lock(&r->stop_lock);
		r->snap_rc = rc;
		r->snap_done = want;
		pthread_cond_broadcast(&r->flush_cond);
		pthread_mutex_unlock(&r->stop_lock);
	}
	if (sig) {
		snap_name(r, path, sizeof(path));
		(void)snapshot_now(f, path, 0);
	}
	if (trig) {
		snap_name(r, path, sizeof(path));
		(void)snapshot_now(f, path, trig - 1);
	}
	uint64_t lim = atomic_load_explicit(&r->triggers_limited, memory_order_relaxed);
	if (lim != f->limited_reported) {
		meta_room(f, 64);
		fmt_enc_error(&f->menc, rec_ticks(), PT_ERRC_TRIGGER_LIMITED, lim - f->limited_reported);
		f->limited_reported = lim;
	}
}


/* Answers the pt_flush() requests up to @want: their rings were drained
 * and the chunks committed by the pass that just ended. */
static void flush_answer(struct pt_recorder *r, uint64_t want)
{
	pthread_mutex_lock(&r->stop_lock);
	if (want > r->flush_done)
		r->flush_done = want;
	pthread_cond_broadcast(&r->flush_cond);
	pthread_mutex_unlock(&r->stop_lock);
}

static void *flusher_main(void *arg)
{
	in_flusher = true;
	struct flusher *f = arg;
	struct pt_recorder *r = f->r;
	/* A fault while SIGBUS is blocked kills the process whatever the
	 * handler (the kernel resets it): the writer's guard needs it open,
	 * here only (a SIGBUS sent to the process may then land here; the
	 * guard passes it on to the program's disposition). */
	sigset_t bus;
	sigemptyset(&bus);
	sigaddset(&bus, SIGBUS);
	pthread_sigmask(SIG_UNBLOCK, &bus, NULL);
	/* the name its ring (registered at the first process counters' sample) takes */
	pthread_setname_np(pthread_self(), PT_FMT_FLUSHER_THREAD_NAME);
	f->self_tid = (uint32_t)syscall(SYS_gettid);
	unsigned sleep_us = 1000;
	const uint64_t flush_ns = (uint64_t)r->flush_ms * 1000000u;
	f->drain_age_ns = flush_ns - FLUSH_MARGIN_NS(flush_ns);
	/* the longest sleep: a record made just after a poll that found every
	 * ring empty is seen at the next, and then due at once */
	const unsigned max_us = (unsigned)(f->drain_age_ns / 1000u);
	f->clock_step_ns = 10000000u; /* first periodic triple 10 ms after open */
	f->next_clock_ns = rec_mono_ns() + f->clock_step_ns;
	f->part_start_ns = rec_mono_ns();
	f->part_limit = r->rotate_bytes;
	f->oldest_part = 1;
	emit_clock(f);
	emit_tables(f, 1);
	meta_flush(f, 0);
	{
		uint64_t real;
		uint32_t br;
		rec_clock_triple(&f->t0_ticks, &f->t0_ns, &real, &br);
	}
	for (;;) {
		int stopping = atomic_load_explicit(&r->stop, memory_order_acquire);
		/* pt_flush() requests made before this pass: under stop_lock,
		 * which the requester took after publishing its records, so the
		 * head loads below see them */
		pthread_mutex_lock(&r->stop_lock);
		const uint64_t flush_want = r->flush_req, snap_want = r->snap_req;
		const bool asked = snap_want != r->snap_done;
		pthread_mutex_unlock(&r->stop_lock);
		const bool sig = atomic_exchange_explicit(&r->snap_signalled, false, memory_order_relaxed);
		const uint64_t trig = atomic_exchange_explicit(&r->trig_since_ns, 0, memory_order_relaxed);
		/* a snapshot holds what the rings held when it was asked for */
		const bool flushing = flush_want != r->flush_done || asked || sig || trig;
		uint64_t now = rec_mono_ns();
		uint64_t busiest = 0, drained = 0;
		f->next_due_ns = UINT64_MAX;
		/* before the drain: the sample goes out in this pass, and its ring
		 * first, so that no chunk of a record made after the sample is in
		 * the file before it (a reader of the running trace, the
		 * incremental analysis, would see the sample late) */
		const bool sampled = !stopping && proc_if_due(f, now);
		urcu_bp_read_lock();
		struct rec_ring *g;
		if (sampled)
			cds_list_for_each_entry_rcu(g, &r->rings, node) {
				PT_TSAN_ACQUIRE(g); /* a ring just attached: its fields as published */
				if (g->tid == f->self_tid)
					drained += drain(f, g, now, 1);
			}
		cds_list_for_each_entry_rcu(g, &r->rings, node) {
			PT_TSAN_ACQUIRE(g);
			uint64_t head = atomic_load_explicit(&g->head, memory_order_relaxed);
			uint64_t fill = (head - g->tail_own) * 16 / g->cap;
			busiest = PT_MAX(busiest, fill);
			drained += drain(f, g, now, stopping || flushing);
			rotate_if_due(f, now);
		}
		emit_repeat_if_due(f, now);
		rotate_if_due(f, now);
		urcu_bp_read_unlock();
		reap(f, now);
		clock_if_due(f, now);
		f->prev_poll_ns = now;
		if (flushing) /* every chunk of this pass is committed: wake pt_flush() */
			flush_answer(r, flush_want);
		if (asked || sig || trig || atomic_load_explicit(&r->triggers_limited, memory_order_relaxed) !=
						   f->limited_reported)
			snapshots_pass(f, asked, snap_want, sig, trig);
		if (stopping)
			break;
		if (busiest >= 4) /* a ring was >= 1/4 full: go again at once */
			continue;
		sleep_us = busiest >= 1 || drained ? PT_MAX(sleep_us / 2, 1000u) : PT_MIN(sleep_us * 2, max_us);
		/* wake when a ring holding records becomes due, if sooner */
		uint64_t wake = rec_mono_ns() + (uint64_t)sleep_us * 1000u;
		if (f->next_due_ns < wake)
			wake = f->next_due_ns;
		if (r->rss_ms && f->next_rss_ns < wake) /* the next process counters' sample */
			wake = f->next_rss_ns;
		/* a timed wait that pt_close() can cut short */
		struct timespec ts = { (time_t)(wake / 1000000000u), (long)(wake % 1000000000u) };
		pthread_mutex_lock(&r->stop_lock);
		if (!atomic_load_explicit(&r->stop, memory_order_relaxed) && r->flush_req == r->flush_done &&
		    r->snap_req == r->snap_done && !atomic_load_explicit(&r->trig_since_ns, memory_order_relaxed))
			pthread_cond_timedwait(&r->stop_cond, &r->stop_lock, &ts);
		pthread_mutex_unlock(&r->stop_lock);
	}
	final_meta(f);
	/* the final pass drained every ring: every request is answered */
	pthread_mutex_lock(&r->stop_lock);
	const uint64_t last = r->flush_req;
	pthread_mutex_unlock(&r->stop_lock);
	flush_answer(r, last);
	return NULL;
}

/* pt_flush()'s bound on its wait for the flusher's pass (recorder.h). */
#define FLUSH_WAIT_NS 1000000000u

int pt_flush(pt_recorder *r)
{
	if (!r || rec_fork_unsafe || in_flusher)
		return in_flusher ? -EDEADLK : 0;
	pthread_mutex_lock(&r->stop_lock);
	/* gen is 0 while closed (and in a fork child until its reopen), and
	 * set only once the flusher runs; stop is set, under this lock,
	 * before the flusher's final pass, which drains everything anyway */
	if (atomic_load_explicit(&r->gen, memory_order_relaxed) == 0 ||
	    atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		pthread_mutex_unlock(&r->stop_lock);
		return 0;
	}
	const bool done = await_pass(r, &r->flush_req, &r->flush_done, FLUSH_WAIT_NS);
	pthread_mutex_unlock(&r->stop_lock);
	if (!done)
		return -ETIMEDOUT;
	int err = atomic_load_explicit(&r->last_io_error, memory_order_relaxed);
	return err ? -err : 0;
}

static struct flusher *the_flusher;

static void proc_close(struct flusher *f)
{
	const int fds[] = { f->rss_fd, f->stat_fd, f->loadavg_fd };
	for (size_t i = 0; i < PT_ARRAY_SIZE(fds); i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

int rec_flusher_start(struct pt_recorder *r)
{
	struct flusher *f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->r = r;
	f->raw = malloc(EVENTS_CAP);
	f->meta = malloc(RAW_CAP);
	if (!f->raw || !f->meta) {
		free(f->raw);
		free(f->meta);
		free(f);
		return -ENOMEM;
	}
	f->events_cap = EVENTS_CAP;
	f->meta_cap = RAW_CAP;
	f->repeat_bytes = REPEAT_BYTES;
	if (r->flight_bytes) {
		f->events_cap = PT_MIN(f->events_cap, r->flight_bytes / 8);
		f->meta_cap = PT_MIN(f->meta_cap, r->flight_bytes / 8);
		f->repeat_bytes = PT_MIN(f->repeat_bytes, r->flight_bytes / 4);
	}
	fmt_enc_reset(&f->enc, f->raw, f->events_cap);
	fmt_enc_reset(&f->menc, f->meta, f->meta_cap);
	f->str_next = 1;
	f->dom_next = 1;
	/* this process's own statm: opened here, so a fork child's flusher
	 * (started by its reopen) reads the child's; a file that does not
	 * open (no /proc) drops its counters, counted once */
	f->rss_fd = f->stat_fd = f->loadavg_fd = -1;
	if (r->rss_ms) {
		const char *dir = rec_proc_dir_hook ? rec_proc_dir_hook : "/proc";
		char path[256];
		f->rss_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
		snprintf(path, sizeof(path), "%s/stat", dir);
		f->stat_fd = open(path, O_RDONLY | O_CLOEXEC);
		snprintf(path, sizeof(path), "%s/loadavg", dir);
		f->loadavg_fd = open(path, O_RDONLY | O_CLOEXEC);
		f->proc_failures = (uint64_t)(f->rss_fd < 0) + (f->stat_fd < 0) + (f->loadavg_fd < 0);
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		f->cpus_online = n > 0 ? n : 0;
	}
	long page = sysconf(_SC_PAGESIZE);
	f->rss_page = page > 0 ? (uint64_t)page : 4096u;
	long hz = sysconf(_SC_CLK_TCK);
	f->clk_tck = hz > 0 ? (uint64_t)hz : 100u;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&r->flusher, NULL, flusher_main, f);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		proc_close(f);
		free(f->raw);
		free(f->meta);
		free(f);
		return -rc;
	}
	the_flusher = f;
	r->flusher_running = true;
	atomic_store_explicit(&r->snap_signalled, false, memory_order_relaxed);
	atomic_store_explicit(&r->trig_since_ns, 0, memory_order_relaxed);
	atomic_store_explicit(&r->trig_last_ns, 0, memory_order_relaxed);
	r->snap_seq = 0;
	atomic_store_explicit(&snap_rec, r, memory_order_relaxed);
	int sig = snap_signal_env();
	if (sig) { /* a flag for the flusher, nothing more, in the handler */
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = snap_handler;
		sa.sa_flags = SA_RESTART;
		sigemptyset(&sa.sa_mask);
		if (sigaction(sig, &sa, &snap_prev) == 0)
			snap_signo = sig;
	}
	return 0;
}

void rec_flusher_forget(void)
{
	struct flusher *f = the_flusher;
	the_flusher = NULL;
	if (!f)
		return;
	proc_close(f); /* the parent's descriptors */
	free(f->exited);
	free(f->raw);
	free(f->meta);
	free(f);
}

void rec_flusher_stop(struct pt_recorder *r)
{
	if (!r->flusher_running)
		return;
	pthread_mutex_lock(&r->stop_lock);
	atomic_store_explicit(&r->stop, true, memory_order_release);
	pthread_cond_signal(&r->stop_cond);
	pthread_mutex_unlock(&r->stop_lock);
	pthread_join(r->flusher, NULL);
	r->flusher_running = false;
	if (snap_signo) { /* the program's own disposition again */
		sigaction(snap_signo, &snap_prev, NULL);
		snap_signo = 0;
	}
	atomic_store_explicit(&snap_rec, NULL, memory_order_relaxed);
	struct flusher *f = the_flusher;
	the_flusher = NULL;
	proc_close(f);
	free(f->exited);
	free(f->raw);
	free(f->meta);
	free(f);
}
