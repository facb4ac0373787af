/*
 * recorder/rec_internal.h - recorder internals: per-thread rings, the
 * registry, the flusher, clocks and the intern table.
 *
 * Ring (single producer = owning thread, single consumer = flusher): its
 * algorithm, overflow policy, slot layout and the [P1]/[C1] (head) and
 * [C2]/[P2] (tail) pairs are described in rec_ring.h, which holds the
 * code they describe; struct rec_ring below holds its state.
 *
 * Synchronization table (X = needs outside exclusion):
 *
 *                 | owner write | flusher drain | register | retire | close
 *   owner write   |      -      |               |          |   X(1) |
 *   flusher drain |             |      X(2)     |          |        |  X(2)
 *   register      |             |               |   mutex  |        |  mutex
 *
 *   (1) retire runs on the owner thread itself (TLS destructor).
 *   (2) only the flusher drains; pt_close() joins the flusher first.
 * The registry list is an RCU list (urcu-bp): writers hold rec->reg_lock,
 * readers (flusher, pt_stats) use rcu_read_lock. Rings are freed after
 * removal and a synchronize_rcu() (by the flusher, or by pt_close()): no
 * call_rcu worker exists, so fork() needs none paused.
 */
#ifndef PTZ_REC_INTERNAL_H
#define PTZ_REC_INTERNAL_H

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h> /* offsetof */
#include <stdint.h>

#include <urcu-bp.h>        /* must precede the cds headers: selects the flavor */
#include <urcu/rculfhash.h> /* cds_lfht */
#include <urcu/rculist.h>   /* cds_list_*_rcu */

#include "common/compiler.h"
#include "ptz/recorder.h"
#include "ptz/version.h" /* PT_VERSION_STRING */
#include "trace-format/fmt_internal.h"

#define REC_VERSION PT_VERSION_STRING
#define REC_SLACK 8         /* slots kept free beyond pending ENDs */
#define REC_STOP_STACK 64   /* open ids remembered for pt_stop() */
#define REC_DEFAULT_RING (8u << 20)
#define REC_DEFAULT_FLIGHT (64ull << 20) /* PT_MODE_FLIGHT's area (PTZ_FLIGHT_BYTES) */
#define REC_ROTATE_MIN_BYTES (1ull << 20) /* smallest PTZ_ROTATE_BYTES / pt_options.rotate_bytes */
#define REC_MIN_RING (4u << 10)
#define REC_MAX_RING (1u << 30)
#define REC_STORE_BELOW 4096 /* chunk payloads below this are not compressed */
#define REC_MAX_LEVEL 19     /* highest zstd level used (higher ones are clamped: rec_open.c) */
/* At pt_close() (and exit), the final drain compresses at the configured
 * level for REC_FINAL_SLOW_NS, then at most at REC_FINAL_FAST_LEVEL, so
 * that full rings at a high level do not hold the exit for seconds
 * (rec_flush.c chunk_level()). */
#define REC_FINAL_SLOW_NS 100000000u
#define REC_FINAL_FAST_LEVEL 1

struct rec_slot; /* rec_ring.h */

enum rec_owner_state {
	OWNER_ACTIVE = 0,   /* thread alive, ring in the registry */
	OWNER_EXITED = 1,   /* thread gone; flusher drains, unlinks and frees */
	OWNER_DETACHED = 2  /* recorder closed; the thread frees the ring */
};

/*
 * Cache-line groups are padded unions rather than alignas(64) members: the
 * urcu list macros compute container_of() of the list head (which lives in
 * struct pt_recorder), and a 64-byte-aligned type would make that pointer
 * formally misaligned. Rings are allocated with aligned_alloc(64), so each
 * group below starts on its own cache line (static-asserted).
 */
#define REC_LINE 64
struct rec_ring {
	/* --- owner-hot: written and read only by the owning thread --- */
	union {
		struct {
			uint64_t head_own;        /* owner's copy of head */
			uint64_t tail_cache;      /* owner's last view of tail */
			uint64_t gen;             /* recorder generation this ring belongs to */
			uint32_t depth;           /* recorded sections open */
			uint32_t skip_depth;      /* >0: inside a skipped section */
			bool skip_lost;           /* the skip is a loss (else: disabled) */
			/* pt_stop(): level k's id in [k % REC_STOP_STACK], tagged
			 * (uint64_t)k << 32 | id so that an entry overwritten by a
			 * deeper level is known to be stale */
			uint64_t open_ids[REC_STOP_STACK];
		};
		char owner_line_[9 * REC_LINE];
	};

	/* --- producer-published: owner writes, flusher/stats read --- */
	union {
		struct {
			_Atomic uint64_t head;          /* [P1] release / [C1] acquire */
			_Atomic uint64_t lost_records;  /* owner: relaxed load+store (single writer); readers relaxed */
			_Atomic uint64_t lost_sections; /* idem */
			_Atomic uint64_t errors;        /* idem */
			_Atomic int owner_state;        /* enum rec_owner_state; CAS by owner and pt_close */
		};
		char pub_line_[REC_LINE];
	};

	/* --- consumer: flusher writes; owner reads tail --- */
	union {
		struct {
			_Atomic uint64_t tail;    /* [C2] release / [P2] acquire */
			uint64_t tail_own;        /* flusher's copy */
			uint64_t seq;             /* next chunk sequence number */
			uint64_t reported_lost_records, reported_lost_sections;
			uint64_t clean_ns;        /* flusher's poll that last left it empty (0: none yet) */
			bool announced;           /* thread record written */
		};
		char cons_line_[REC_LINE];
	};

	/* --- immutable after registration, read by anyone: kept off the
	 * owner's line so the flusher reading them does not bounce it --- */
	struct rec_slot *slots;
	uint64_t mask;            /* capacity - 1 */
	uint64_t cap;
	uint32_t index, tid;
	uint64_t start_ticks;
	uint64_t end_ticks;       /* written by the owner before OWNER_EXITED (release) */
	char name[32];            /* at registration; immutable afterwards */
	char exit_name[32];       /* at exit, before OWNER_EXITED (release): names set later */
	struct cds_list_head node;
	struct rec_ring *reap_next; /* the flusher's list of unlinked rings awaiting a grace period */
};
_Static_assert(offsetof(struct rec_ring, head) % REC_LINE == 0, "producer group on its own line");
_Static_assert(offsetof(struct rec_ring, tail) % REC_LINE == 0, "consumer group on its own line");
_Static_assert(offsetof(struct rec_ring, slots) % REC_LINE == 0, "immutable group on its own line");

struct pt_recorder {
	/* read on every hot-path call */
	alignas(64) _Atomic uint64_t hot_gen; /* gen while open and enabled, else 0; relaxed: a stale
					       * value only delays the switch by one call */
	_Atomic uint64_t gen;                  /* gen while open, else 0 */
	alignas(64) pthread_mutex_t reg_lock;  /* registry writers, open/close */
	struct cds_list_head rings;            /* RCU list of struct rec_ring */
	uint64_t cur_gen;
	_Atomic bool enabled;
	_Atomic bool forked;                   /* a fork child's copy of a recorder open in the parent */
	_Atomic bool reopen;                   /* such a copy whose path has %p: opens at the first record */
	_Atomic bool fork_records;             /* open at a path with %p: the atfork handlers take the locks */

	/* pt_open()'s arguments, kept for a fork child's reopen (rec_open_lock) */
	char *path_tmpl;
	char path_now[4096];                   /* the file being written (the template expanded); pt_path() */
	struct pt_options opts;
	char opts_pname[256];

	/* settings */
	size_t ring_bytes;
	int zstd_level;
	unsigned flush_ms;
	uint64_t flight_bytes;        /* flight mode's area (PT_MODE_FLIGHT), 0 = stream */
	unsigned rss_ms;              /* PTZ_PROC_MS (alias PTZ_RSS_MS): process counters' period, 0 = none */
	/* rotation (stream mode; rec_flush.c rotate()): 0 = off */
	uint64_t rotate_bytes, rotate_ns;
	unsigned rotate_keep;         /* newest parts kept, 0 = all */
	uint64_t run_id;              /* non-zero while rotating: every part's header carries it */
	char path_base[4096];         /* the expanded path the parts are named after */
	/* path_now changes at a rotation (the flusher) while pt_path() reads
	 * it: both under path_lock (the flusher cannot take rec_open_lock,
	 * which pt_close() holds while it joins the flusher) */
	pthread_mutex_t path_lock;
	_Atomic uint64_t parts, rotate_errors; /* flusher writes, pt_stats() reads (relaxed: counts) */

	/* flusher */
	pthread_t flusher;
	bool flusher_running;
	_Atomic bool stop;
	pthread_mutex_t stop_lock;    /* with stop_cond: wakes the flusher's poll sleep at close only */
	pthread_cond_t stop_cond;     /* (producers never signal it) */
	/* pt_flush(): requests taken and passes done, both under stop_lock.
	 * pt_flush() takes a ticket (++flush_req) and signals stop_cond; the
	 * flusher's next pass drains every ring whatever its fill, then sets
	 * flush_done to the requests it saw before that pass and broadcasts
	 * flush_cond (also at its exit, whose final pass drains everything). */
	uint64_t flush_req, flush_done;
	pthread_cond_t flush_cond;    /* CLOCK_MONOTONIC, as stop_cond */
	/* Snapshots (rec_flush.c): pt_snapshot() holds snap_lock (one caller
	 * at a time), copies its path into snap_buf under stop_lock, takes a ticket
	 * (++snap_req) and waits on flush_cond for snap_done; the flusher's
	 * next pass drains every ring, writes the snapshot and sets snap_rc.
	 * The snapshot signal and pt_trigger() only set the atomics below;
	 * the flusher names their files (snap_tmpl, numbered by snap_seq). */
	pthread_mutex_t snap_lock;
	char snap_buf[4096];             /* pt_snapshot()'s path, copied */
	uint64_t snap_req, snap_done;
	int snap_rc;
	_Atomic bool snap_signalled;
	_Atomic uint64_t trig_since_ns;  /* a trigger's window start (CLOCK_MONOTONIC ns) + 1; 0 = none */
	_Atomic uint64_t trig_last_ns;   /* the last accepted trigger, for the rate limit */
	_Atomic uint64_t snapshots, snapshot_errors, triggers_limited;
	unsigned trigger_seconds, trigger_min_ms;
	uint64_t snap_seq;
	char snap_tmpl[4096];
	struct fmt_writer *w;
	_Atomic uint32_t next_thread_index;
	_Atomic uint64_t threads;
	_Atomic uint64_t records_written, chunks_written, bytes_written;
	_Atomic uint64_t io_lost_records;     /* drained but not written */
	_Atomic uint64_t after_exit;          /* records from retired threads */
	_Atomic uint64_t no_ring_lost;        /* calls dropped: their thread's ring could not be allocated */
	_Atomic uint64_t closed_lost;         /* lost/error counters of rings already freed */
	_Atomic uint64_t closed_lost_sections, closed_errors;
	/* Sequence count over moving a ring's counters into closed_* and
	 * unlinking it (rec_fold_ring()): odd while that runs, so pt_stats()
	 * never sees the ring in both places or in neither. */
	_Atomic uint32_t fold_seq;
	_Atomic int last_io_error;

	/* thread names set by pt_thread_name(), by OS tid (names_lock) */
	pthread_mutex_t names_lock;
	struct rec_tname *tnames;
	size_t ntnames, ctnames;
	_Atomic uint64_t names_gen;  /* bumped on every change; the flusher re-announces */
	_Atomic uint64_t next_async_id;
};

struct rec_tname {
	uint32_t tid;
	char name[32];
};

/* ---- open/close (rec_open.c) ---- */
/* The process's one recorder (pt_open() returns it), and the lock that
 * serializes its opening, closing, pt_set_enabled() and a fork child's
 * reopen; rec_is_open (under rec_open_lock) while a trace is being written. */
extern PT_INTERNAL struct pt_recorder rec_the_recorder;
extern PT_INTERNAL pthread_mutex_t rec_open_lock;
extern PT_INTERNAL bool rec_is_open;
/* The one-time setup (pinning, condition variables, the ring key and list,
 * the atfork handlers, the clock), done by the first pt_open() or pt_stats(). */
PT_INTERNAL void rec_global_init(void);
/* The file of part @part of a rotated trace named @base (recorder.h,
 * pt_open() "Rotation"): "run.ptz" -> "run.000001.ptz"; a @base without
 * ".ptz" gets ".000001.ptz" appended. */
PT_INTERNAL void rec_part_path(const char *base, uint32_t part, char *out, size_t cap);
/* pt_open()'s work, also a fork child's reopen: rec_open_lock held
 * (contract and return: rec_open.c). */
PT_INTERNAL int rec_open_locked(struct pt_recorder *r, const char *path, const struct pt_options *opt,
				bool enabled);
/* (Re)creates @r's stop_cond and flush_cond on CLOCK_MONOTONIC. */
PT_INTERNAL void rec_stop_cond_init(struct pt_recorder *r);
/* Makes the object holding libptz (libptz.so, or what libptz.a was linked
 * into) stay loaded until exit, whatever dlclose() is called: before the
 * first thread or handler of ours that outlives a call. */
PT_INTERNAL void rec_pin_self(void);

/* ---- fork (rec_fork.c) ---- */
/* rec_fork_unsafe is true in a child
 * whose parent did not take every recorder lock before the fork (no "%p"
 * recorder was open, or a lock was held past the bounded wait): nothing
 * records there, and the entry points return before any lock, which
 * another thread of the parent may have held. Written once by the atfork
 * child handler, before the child has threads. */
extern PT_INTERNAL bool rec_fork_unsafe;
/* Registers the atfork handlers once (at the first pt_open() or
 * pt_stats(); a process that only interns names forks as if libptz were not
 * there, and its children may open a recorder). */
PT_INTERNAL void rec_fork_init(void);
/* In a fork child, the first record through the copy of a recorder whose
 * path had %p opens the child's own trace. Return: the new generation, or
 * 0 (a failure is said once on stderr; the child records nothing). */
PT_INTERNAL uint64_t rec_child_reopen(struct pt_recorder *r);
/* Called with the calling thread's new ring @g: if this thread forked with
 * sections open, begins them again on @g (or counts their ENDs as lost);
 * nothing otherwise. */
PT_INTERNAL void rec_fork_resume_sections(struct pt_recorder *r, struct rec_ring *g);

/* ---- registry (rec_registry.c) ---- */
/* The calling thread's ring (NULL before its first record); &rec_dead_ring
 * once its ring was retired at thread exit. Initial-exec: the hot path
 * reads it with one TLS load. */
extern PT_INTERNAL __thread struct rec_ring *rec_tls __attribute__((tls_model("initial-exec")));
/* A ring no real ring can match: its gen is never a recorder generation.
 * Threads whose ring was retired point here so late calls (from other TLS
 * destructors) take the slow path and are counted. */
extern PT_INTERNAL struct rec_ring rec_dead_ring;
/* The ring key: its destructor retires the thread's ring at exit. */
extern PT_INTERNAL pthread_key_t rec_ring_key;
/* ThreadSanitizer's view of an RCU grace period (it does not model
 * liburcu's): a reader of the ring registry other than the flusher
 * (pt_stats()) releases &rec_grace before rcu_read_unlock(); whoever frees
 * unlinked rings acquires it after synchronize_rcu(). Annotation only. */
extern PT_INTERNAL int rec_grace;
/* Creates the ring key and @r's empty ring list (rec_global_init()). */
PT_INTERNAL void rec_registry_init(struct pt_recorder *r);
/* Returns the calling thread's ring for the open recorder, registering one
 * at its first record (or its first after a reopen), or NULL: recorder
 * closed, thread exiting (counted in after_exit), allocation failed
 * (counted in no_ring_lost). Cold: the hot path's slow paths call it. */
PT_INTERNAL PT_COLD struct rec_ring *rec_ring_for(struct pt_recorder *r);
PT_INTERNAL void rec_ring_free(struct rec_ring *g);

/*
 * rec_fold_ring() - Adds ring @g's lost/error counters to @r's closed_*
 * totals and unlinks @g from @r->rings (cds_list_del_rcu: readers may
 * still stand on it), inside @r->fold_seq's odd section.
 * Context: @r->reg_lock held (one writer at a time).
 */
void rec_fold_ring(pt_recorder *r, struct rec_ring *g);

/* Test seam: called inside rec_fold_ring()'s odd section; a no-op (weak)
 * unless a test defines it. */
void rec_test_fold_hook(void);

/* ---- clocks (rec_clock.c) ---- */
extern PT_INTERNAL int rec_clock_source; /* enum pt_clock_source */
PT_INTERNAL void rec_clock_init(void);
PT_INTERNAL uint64_t rec_ticks_slow(void);
PT_INTERNAL uint64_t rec_mono_ns(void);
/* Bracketed (ticks, CLOCK_MONOTONIC, CLOCK_REALTIME), best of several reads. */
PT_INTERNAL void rec_clock_triple(uint64_t *ticks, uint64_t *mono, uint64_t *real, uint32_t *bracket);

#if defined(__x86_64__)
#include <x86intrin.h>
static inline uint64_t rec_ticks(void)
{
	if (likely(rec_clock_source == PT_CLOCK_TSC))
		return __rdtsc();
	return rec_ticks_slow();
}
#elif defined(__aarch64__)
static inline uint64_t rec_ticks(void)
{
	if (likely(rec_clock_source == PT_CLOCK_CNTVCT)) {
		uint64_t v;
		__asm__ __volatile__("isb; mrs %0, cntvct_el0" : "=r"(v)::"memory");
		return v;
	}
	return rec_ticks_slow();
}
#else
static inline uint64_t rec_ticks(void) { return rec_ticks_slow(); }
#endif

/* Hot path only: true when the tick source can be read inline, so pt_begin()
 * and pt_end() make no call and need no stack frame; otherwise they take the
 * cold path, which uses rec_ticks(). */
#if defined(__x86_64__)
static inline bool rec_ticks_inline_ok(void) { return likely(rec_clock_source == PT_CLOCK_TSC); }
static inline uint64_t rec_ticks_inline(void) { return __rdtsc(); }
#elif defined(__aarch64__)
static inline bool rec_ticks_inline_ok(void) { return likely(rec_clock_source == PT_CLOCK_CNTVCT); }
static inline uint64_t rec_ticks_inline(void)
{
	uint64_t v;
	__asm__ __volatile__("isb; mrs %0, cntvct_el0" : "=r"(v)::"memory");
	return v;
}
#else
static inline bool rec_ticks_inline_ok(void) { return false; }
static inline uint64_t rec_ticks_inline(void) { return 0; }
#endif

/* ---- intern table (rec_intern.c) ---- */
struct rec_str {
	struct cds_lfht_node node;
	struct rcu_head rcu;
	uint64_t emitted_gen; /* flusher only */
	uint32_t id, domain;
	size_t len;
	char name[];
};
/* Test seam: ordinary names take ids below this (default
 * PT_FMT_MAX_STRING_ID - 2: two ids stay for "(unnamed)" and its counter,
 * rec_intern.c); a test lowers it before its first intern to fill the
 * table in a few calls. */
extern PT_INTERNAL uint32_t rec_intern_limit;
PT_INTERNAL uint32_t rec_intern_next_id(void);  /* acquire */
PT_INTERNAL struct rec_str *rec_intern_get(uint32_t id); /* NULL if not yet published */
PT_INTERNAL uint32_t rec_domain_count(void);
PT_INTERNAL const char *rec_domain_name(uint32_t id);
PT_INTERNAL uint32_t rec_intern_lookup(uint32_t domain, const char *name); /* 0 if absent */
/* Creates the intern table if it is not yet (pt_open(), before a fork can
 * catch its creation's locks held); false if it could not be. */
PT_INTERNAL bool rec_intern_init(void);
/* The intern table's insertion lock around fork(): trylock (true if taken), unlock. */
PT_INTERNAL bool rec_intern_fork_trylock(void);
PT_INTERNAL void rec_intern_fork_unlock(void);

/* ---- the hot path's helpers and records written off it (rec_core.c) ---- */
/* Writes slot kind @kind (id @id, b>>8 = @hi) with ticks @t, followed by
 * @n value slots, as one unit, on the calling thread's ring. Not part of a
 * section: written even inside a skipped one. false (counted as a lost
 * record) when there is no room or no open recorder. */
PT_INTERNAL bool rec_emit(struct pt_recorder *r, uint32_t kind, uint32_t id, uint32_t hi, uint64_t t,
			  const uint64_t *v, unsigned n);
/* Opens section @id preceded by its GPU_LAUNCH (device @dev, stream key
 * @stream, launch sequence @seq), both with one tick read, as one unit.
 * Returns that tick, or 0 when the section was skipped (full ring, disabled,
 * inside a skipped section, no recorder): then nothing GPU may follow. */
PT_INTERNAL uint64_t rec_begin_gpu(struct pt_recorder *r, uint32_t id, uint32_t dev, uint64_t stream,
				   uint64_t seq);
/* pt_begin(r, @id); true if the section was recorded (false: skipped for
 * lack of room or while disabled, no ring, no open recorder). For a GPU
 * section whose GPU half is not timed: only then is that half counted. */
PT_INTERNAL bool rec_begin_cpu(struct pt_recorder *r, uint32_t id);
/* Copies the pt_thread_name() override for @tid into @out[32]; false if none. */
PT_INTERNAL bool rec_thread_name_for(struct pt_recorder *r, uint32_t tid, char out[32]);
/* Writes an ERROR record of @count GPU halves of @code on the calling
 * thread's ring. false when there is no room or no open recorder: then
 * nothing is counted (not in lost_records), the caller keeps the count
 * and tries again later (rec_gpu.c write_drops()). */
PT_INTERNAL bool rec_gpu_error(struct pt_recorder *r, uint32_t code, uint32_t count);
/* pt_close() only, after r->gen is 0 and before the final drain: writes
 * a record of kind @kind (id @id, b>>8 = @hi, no value slots) on the
 * calling thread's ring of the generation being closed, waiting for the
 * flusher to make room (bounded: 4 flush intervals + 1 s). false when this
 * thread has no such ring (nothing counted) or the wait ran out (counted
 * in lost_records). */
PT_INTERNAL bool rec_close_emit(struct pt_recorder *r, uint32_t kind, uint32_t id, uint32_t hi);
/* Counts a section begun while the thread has no ring (its BEGIN is lost):
 * its END, or pt_stop(), is counted as lost too instead of an error. */
PT_INTERNAL void rec_noring_begin(struct pt_recorder *r);

/* Counts one section of the calling thread lost whole (lost_sections, and
 * its BEGIN and END in lost_records; in the trace's LOSS records), as a
 * section skipped for lack of room is; nothing while recording is disabled
 * or no recorder is open. For sections a caller cannot record at all
 * (rec_nvtx.c: pushes deeper than its id stack, or with no stack). */
PT_INTERNAL void rec_lost_section(struct pt_recorder *r);

/* ---- GPU timing (rec_gpu.c) ---- */
/* pt_close(), recorder still open: from now on pt_gpu_begin() times no new
 * GPU half (counted GPU_UNFINISHED); resolves what is pending (bounded
 * drain), stops the CUDA thread, writes the ERROR records it can. true if
 * GPU sections were used in this process (then rec_gpu_close() follows). */
PT_INTERNAL bool rec_gpu_stop(struct pt_recorder *r);
/* pt_close(), after r->gen is 0 (store before the call), before the final
 * drain: waits for the pt_gpu_begin()/pt_gpu_end() calls still running,
 * counts the GPU halves handed off since the CUDA thread stopped as
 * GPU_UNFINISHED, and writes every count not yet written
 * (rec_close_emit()). */
PT_INTERNAL void rec_gpu_close(struct pt_recorder *r);
PT_INTERNAL void rec_gpu_atfork_child(void);
/* pt_open() (and a fork child's reopen), rec_open_lock held, before the new
 * generation is published: the GPU counts of pt_stats() and the trace's
 * GPU ERROR records start from zero for the new recorder. */
PT_INTERNAL void rec_gpu_open(void);
PT_INTERNAL void rec_gpu_stats(struct pt_stats_info *out);

/* ---- flusher (rec_flush.c) ---- */
/* Test seam: when set (before pt_open()), the flusher takes each "process
 * RSS" sample from this function instead of /proc/self/statm; a negative
 * value is a failed read (skipped, as a real one). Flusher thread. */
extern PT_INTERNAL int64_t (*rec_rss_read_hook)(void);
/* Test seam: when set (before pt_open()), the directory whose "stat" and
 * "loadavg" the flusher reads instead of /proc's (a missing file drops its
 * counters, as on a system without /proc). */
extern PT_INTERNAL const char *rec_proc_dir_hook;
/* The process counters' samples taken by every flusher of this process so
 * far, and the time (CLOCK_MONOTONIC, ns) they took: what a sample costs
 * (tests, bench). Any thread; exact once the flusher is joined. */
PT_INTERNAL void rec_proc_cost(uint64_t *samples, uint64_t *wall_ns);
PT_INTERNAL int rec_flusher_start(struct pt_recorder *r);
PT_INTERNAL void rec_flusher_stop(struct pt_recorder *r);
/* In a fork child: frees the copy of the parent's flusher state (its thread is not here). */
PT_INTERNAL void rec_flusher_forget(void);

#endif /* PTZ_REC_INTERNAL_H */
