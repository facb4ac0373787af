/*
 * recorder/rec_core.c - the public recorder API: lifecycle, the hot path,
 * and the thread registry.
 *
 * Hot path (pt_begin/pt_end/pt_metric after a thread's first call): one TLS
 * load, one relaxed load of the recorder generation, one tick read, one
 * 16-byte slot store, one release store of head. No locks, syscalls,
 * allocation or string work. Everything else (first call on a thread,
 * recording disabled, recorder closed, ring nearly full) leaves through a
 * cold out-of-line function.
 *
 * Registry: rings are heap objects linked into r->rings, an RCU list
 * (urcu-bp). A thread registers on its first record (mutex-protected
 * cds_list_add_tail_rcu). At thread exit a pthread key destructor marks the
 * ring OWNER_EXITED; the flusher drains it a last time, unlinks it and frees
 * it after a grace period (synchronize_rcu). pt_close() unlinks every ring, waits one grace period,
 * then marks rings of live threads OWNER_DETACHED (their threads free them
 * on their next call or at exit) and frees the others.
 *
 * Memory order tags: [P1]/[C1] head, [C2]/[P2] tail (see rec_ring.h),
 * [X1]/[X2] owner_state.
 */
#include <dlfcn.h> /* dladdr, dlopen: rec_pin_self() */
#include <errno.h>
#include <limits.h>
#include <sched.h> /* sched_yield */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zstd.h> /* ZSTD_minCLevel, ZSTD_maxCLevel */

#include "common/struct_copy.h"
#include "recorder/rec_internal.h"
#include "recorder/rec_ring.h"

static struct pt_recorder the_recorder = {
	.reg_lock = PTHREAD_MUTEX_INITIALIZER,
	.stop_lock = PTHREAD_MUTEX_INITIALIZER,
	.names_lock = PTHREAD_MUTEX_INITIALIZER,
	.snap_lock = PTHREAD_MUTEX_INITIALIZER,
};
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static bool is_open;
static uint64_t gen_counter;
static pthread_key_t ring_key;
static pthread_once_t global_once = PTHREAD_ONCE_INIT;

/* A ring no real ring can match: its gen is never a recorder generation.
 * Threads whose ring was retired point here so late calls (from other TLS
 * destructors) take the slow path and are counted. */
static struct rec_ring dead_ring = { .gen = UINT64_MAX };

static __thread struct rec_ring *rec_tls __attribute__((tls_model("initial-exec")));

/* ---------------------------------------------------------------- slow paths */

static void ring_retire(void *p);

/* ---------------------------------------------------------------- fork */

/*
 * fork() (recorder.h, pt_open()). The handlers are registered at the
 * first pt_open()/pt_stats(), and act only while a recorder whose path has
 * "%p" is open (fork_records): then the prepare handler takes liburcu-bp's
 * fork locks (urcu_bp_before_fork: grace-period and registry locks, all
 * signals blocked) and the recorder's own locks in their order (open ->
 * reg -> names -> intern table), each with a bounded wait. A lock still
 * held after FORK_LOCK_WAIT_NS (pt_close() flushing), or no such recorder,
 * makes the child "unsafe": it records nothing and touches no lock, as a
 * child always did before. No liburcu worker thread exists to pause: rings
 * are freed by the flusher after synchronize_rcu, not by call_rcu. (The
 * intern table's automatic resize has a worker; in a child it never runs
 * again, so the table keeps the size it had, which only lengthens its
 * chains.)
 *
 * In a safe child, the copy of the parent's descriptor is closed at once;
 * the copies of its rings and flusher state are freed when a new recorder
 * opens at the "%p" path, with the child's pid, on the child's first
 * record: a child that records nothing (fork + exec) creates no file. The
 * forking thread's open sections are begun again in the child's trace at
 * that moment, so its pt_end() calls close them.
 */
#define FORK_LOCK_WAIT_NS 200000000ull /* per lock: 0.2 s */

bool rec_fork_unsafe;

int rec_grace;
static struct {
	bool urcu, open, reg, names, intern;
} fork_held;
/* The forking thread's open sections, taken by the child handler: ids of
 * recorded levels [0, depth), then skipped ones; valid if every level was
 * still on the ring's pt_stop() stack. */
static struct {
	uint32_t depth, skip;
	bool skip_lost, valid;
	uint32_t ids[REC_STOP_STACK];
} fork_stack;
static _Thread_local bool fork_resume; /* this thread forked: re-begin fork_stack */
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static bool try_mutex(void *m) { return pthread_mutex_trylock(m) == 0; }
static bool try_intern(void *unused) { return (void)unused, rec_intern_fork_trylock(); }

/* Takes a lock through @try, waiting at most FORK_LOCK_WAIT_NS (measured). */
static bool lock_bounded(bool (*try)(void *), void *arg)
{
	const uint64_t t0 = rec_mono_ns();
	for (;;) {
		if (try(arg))
			return true;
		if (rec_mono_ns() - t0 >= FORK_LOCK_WAIT_NS)
			return false;
		struct timespec ts = { 0, 50000 };
		nanosleep(&ts, NULL);
	}
}

static void atfork_prepare(void)
{
	struct pt_recorder *r = &the_recorder;
	memset(&fork_held, 0, sizeof(fork_held));
	/* only for a recorder whose children record (a %p path): any other
	 * fork costs nothing and leaves the child not recording, as always;
	 * a child that could not take the locks cannot take them later either */
	if (rec_fork_unsafe || !atomic_load_explicit(&r->fork_records, memory_order_relaxed))
		return;
	urcu_bp_before_fork();
	fork_held.urcu = true;
	fork_held.open = lock_bounded(try_mutex, &open_lock);
	fork_held.reg = fork_held.open && lock_bounded(try_mutex, &r->reg_lock);
	fork_held.names = fork_held.reg && lock_bounded(try_mutex, &r->names_lock);
	fork_held.intern = fork_held.names && lock_bounded(try_intern, NULL);
}

/* Releases what atfork_prepare() took but liburcu's locks (the same in parent and child). */
static void fork_unlock(void)
{
	struct pt_recorder *r = &the_recorder;
	if (fork_held.intern)
		rec_intern_fork_unlock();
	if (fork_held.names)
		pthread_mutex_unlock(&r->names_lock);
	if (fork_held.reg)
		pthread_mutex_unlock(&r->reg_lock);
	if (fork_held.open)
		pthread_mutex_unlock(&open_lock);
}

static void atfork_parent(void)
{
	fork_unlock();
	if (fork_held.urcu)
		urcu_bp_after_fork_parent();
}

static void init_stop_cond(struct pt_recorder *r)
{
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->stop_cond, &ca);
	pthread_cond_init(&r->flush_cond, &ca);
	pthread_condattr_destroy(&ca);
}

static void atfork_child(void)
{
	struct pt_recorder *r = &the_recorder;
	if (fork_held.urcu)
		urcu_bp_after_fork_child(); /* the registry keeps this thread only */
	const bool safe = fork_held.intern; /* false too when no %p recorder was open */
	rec_fork_unsafe = !safe;
	/* open: a %p recorder open here, or a reopen still pending (a child
	 * that forks before its first record passes it on) */
	const bool open = safe && ((is_open && !atomic_load_explicit(&r->forked, memory_order_relaxed)) ||
				   atomic_load_explicit(&r->reopen, memory_order_relaxed));
	struct rec_ring *g = rec_tls;
	if (!open) {
		fork_resume = false;
	} else if (g && g != &dead_ring && g->gen == atomic_load_explicit(&r->gen, memory_order_relaxed)) {
		fork_stack.valid = false;
		fork_stack.depth = fork_stack.skip = 0;
		uint32_t total = g->depth + g->skip_depth;
		fork_stack.depth = g->depth;
		fork_stack.skip = g->skip_depth;
		fork_stack.skip_lost = g->skip_lost;
		fork_stack.valid = total <= REC_STOP_STACK;
		for (uint32_t k = 0; fork_stack.valid && k < total; k++) {
			uint64_t e = g->open_ids[k % REC_STOP_STACK];
			fork_stack.valid = e >> 32 == k;
			fork_stack.ids[k] = (uint32_t)e;
		}
		fork_resume = total > 0;
	} else if (g) {
		fork_resume = false; /* no ring of the open recorder: nothing open on it */
	} /* else no ring yet: a pending fork_stack of this thread's own fork stays */
	/* never write into the parent's file: the handle is a no-op until (and
	 * unless) it reopens; the parent's rings, flusher state and writer stay
	 * as the fork copied them */
	atomic_store_explicit(&r->hot_gen, 0, memory_order_relaxed);
	atomic_store_explicit(&r->gen, 0, memory_order_relaxed);
	if (safe && g && g != &dead_ring)
		pthread_setspecific(ring_key, NULL); /* the ring may be freed at reopen: no retire of it */
	rec_tls = NULL;
	if (safe) {
		fork_unlock();
		r->flusher_running = false;
		pthread_mutex_init(&r->stop_lock, NULL); /* the parent's flusher may have held them */
		pthread_mutex_init(&r->snap_lock, NULL);
		init_stop_cond(r);
		/* the parent's descriptor, closed now while its number is surely
		 * still the copy's (a child may close and reuse fds before its
		 * first record); the mappings stay, unused */
		fmt_writer_forget(r->w);
		r->w = NULL;
	}
	atomic_store_explicit(&r->forked, true, memory_order_relaxed);
	atomic_store_explicit(&r->fork_records, open, memory_order_relaxed); /* a grandchild records too */
	atomic_store_explicit(&r->reopen, open, memory_order_relaxed);
	rec_gpu_atfork_child();
}

static void fork_init(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

void rec_fork_init(void)
{
	pthread_once(&fork_once, fork_init);
}

/*
 * Keeps the object that holds this code loaded until the process ends:
 * libptz.so (linked -z nodelete already) or, with libptz.a, the plugin or
 * program it was linked into. Called before libptz first starts a thread
 * or registers a handler that outlives the call (the flusher, liburcu's
 * resize worker, the ring key's thread-exit destructor, atexit): a
 * dlclose() of that object would leave them in unmapped code. dlopen()
 * with RTLD_NOLOAD never loads anything; the main program, which no
 * dlclose() unloads, is not found by its name, which is harmless.
 */
void rec_pin_self(void)
{
	Dl_info di;
	if (dladdr((void *)(uintptr_t)rec_pin_self, &di) && di.dli_fname && di.dli_fname[0] &&
	    !dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE))
		(void)dlerror();
}

static void global_init(void)
{
	rec_pin_self();
	init_stop_cond(&the_recorder);
	pthread_key_create(&ring_key, ring_retire);
	rec_fork_init();
	rec_clock_init();
	CDS_INIT_LIST_HEAD(&the_recorder.rings);
}

static void count_after_exit(struct pt_recorder *r)
{
	atomic_fetch_add_explicit(&r->after_exit, 1, memory_order_relaxed);
}

static void free_ring(struct rec_ring *g)
{
	free(g->slots);
	free(g);
}

void rec_ring_free(struct rec_ring *g)
{
	free_ring(g);
}

static uint64_t child_reopen(struct pt_recorder *r);
static void pt_set_enabled_locked(pt_recorder *r, bool on);
static void fork_resume_sections(struct pt_recorder *r, struct rec_ring *g);

/*
 * Registers a ring for the calling thread in generation @gen.
 * Returns NULL (and the call is dropped) on allocation failure.
 */
static PT_COLD struct rec_ring *ring_attach(struct pt_recorder *r, uint64_t gen)
{
	struct rec_ring *old = rec_tls;
	if (old == &dead_ring) {
		count_after_exit(r);
		return NULL;
	}
	if (old) {
		int st = atomic_load_explicit(&old->owner_state, memory_order_acquire); /* [X2] */
		if (st == OWNER_DETACHED) {
			/* its recorder closed: ours to free; the key must not keep
			 * it for ring_retire() if no new ring replaces it below */
			pthread_setspecific(ring_key, NULL);
			free_ring(old);
		}
		rec_tls = NULL;
	}
	struct rec_ring *g;
	if (posix_memalign((void **)&g, REC_LINE, sizeof(*g)) != 0)
		goto no_memory;
	memset(g, 0, sizeof(*g));
	size_t cap = r->ring_bytes / sizeof(struct rec_slot);
	g->slots = malloc(cap * sizeof(struct rec_slot));
	if (!g->slots) {
		free(g);
		goto no_memory;
	}
	g->cap = cap;
	g->mask = cap - 1;
	g->gen = gen;
	g->tid = (uint32_t)syscall(SYS_gettid);
	pthread_getname_np(pthread_self(), g->name, sizeof(g->name));
	g->start_ticks = rec_ticks();
	pthread_mutex_lock(&r->reg_lock);
	if (atomic_load_explicit(&r->gen, memory_order_relaxed) != gen) {
		/* closed while we were allocating */
		pthread_mutex_unlock(&r->reg_lock);
		free_ring(g);
		return NULL;
	}
	g->index = atomic_fetch_add_explicit(&r->next_thread_index, 1, memory_order_relaxed);
	PT_TSAN_RELEASE(g); /* the ring's fields before its list link (rcu_assign_pointer) */
	cds_list_add_tail_rcu(&g->node, &r->rings);
	atomic_fetch_add_explicit(&r->threads, 1, memory_order_relaxed);
	pthread_mutex_unlock(&r->reg_lock);
	PT_TESTPOINT("ring registered");
	pthread_setspecific(ring_key, g);
	rec_tls = g;
	if (unlikely(fork_resume))
		fork_resume_sections(r, g);
	return g;
no_memory:
	/* the call is dropped, and counted: no silent loss */
	atomic_fetch_add_explicit(&r->no_ring_lost, 1, memory_order_relaxed);
	return NULL;
}

/* TLS destructor: the thread is exiting. */
static void ring_retire(void *p)
{
	struct rec_ring *g = p;
	rec_tls = &dead_ring;
	if (!g)
		return;
	g->end_ticks = rec_ticks();
	pthread_getname_np(pthread_self(), g->exit_name, sizeof(g->exit_name));
	int expect = OWNER_ACTIVE;
	/* [X1] release: end_ticks, name and every slot store before the
	 * flusher sees the ring as exited. Pairs with [X3] in rec_flush.c. */
	if (!atomic_compare_exchange_strong_explicit(&g->owner_state, &expect, OWNER_EXITED,
						     memory_order_acq_rel, memory_order_acquire))
		free_ring(g); /* OWNER_DETACHED: the recorder let go of it */
}

/* Returns the calling thread's ring for the open recorder, or NULL. */
static PT_COLD struct rec_ring *ring_for(struct pt_recorder *r)
{
	struct rec_ring *g = rec_tls;
	uint64_t gen = atomic_load_explicit(&r->gen, memory_order_acquire);
	if (gen == 0 && !(atomic_load_explicit(&r->reopen, memory_order_relaxed) && (gen = child_reopen(r))))
		return NULL; /* closed (or in a fork child that does not record) */
	if (g == &dead_ring) {
		count_after_exit(r);
		return NULL;
	}
	if (g && g->gen == gen)
		return g;
	return ring_attach(r, gen);
}

/* Skips section @id whole (with everything begun inside it); a loss if @lost. */
static void skip_section(struct rec_ring *g, uint32_t id, bool lost)
{
	rec_ring_push_id(g, g->depth, id);
	g->skip_depth = 1;
	g->skip_lost = lost;
	if (lost) {
		rec_ring_bump(&g->lost_records, 1);
		rec_ring_bump(&g->lost_sections, 1);
	}
}

/*
 * Sections of this thread begun while it had no ring (its allocation
 * failed, or the thread is exiting), in recorder generation @gen: their
 * begin was counted as lost; their END (or pt_stop()) is too, even if a
 * ring exists by then, instead of a misuse error for an END with nothing
 * open.
 */
static _Thread_local struct {
	uint64_t gen;
	uint32_t open;
} noring;

static void noring_begin(struct pt_recorder *r)
{
	uint64_t gen = atomic_load_explicit(&r->gen, memory_order_relaxed);
	if (noring.gen != gen) {
		noring.gen = gen;
		noring.open = 0;
	}
	noring.open++;
}

/* true: this END closes a section begun without a ring (now counted) */
static bool noring_end(struct pt_recorder *r)
{
	if (!noring.open || noring.gen != atomic_load_explicit(&r->gen, memory_order_relaxed))
		return false;
	noring.open--;
	return true;
}

static PT_COLD void begin_slow(struct pt_recorder *r, uint32_t id)
{
	struct rec_ring *g = ring_for(r);
	if (!g) {
		noring_begin(r);
		return;
	}
	if (g->skip_depth) {
		/* skipped sections stay on the pt_stop() stack, above the recorded ones */
		rec_ring_push_id(g, g->depth + g->skip_depth, id);
		g->skip_depth++;
		if (g->skip_lost) {
			rec_ring_bump(&g->lost_records, 1);
			rec_ring_bump(&g->lost_sections, 1);
		}
		return;
	}
	if (!atomic_load_explicit(&r->enabled, memory_order_relaxed)) {
		skip_section(g, id, false);
		return;
	}
	uint64_t h = g->head_own;
	if (!rec_ring_room(g, h, rec_ring_need(g, 2 + REC_SLACK))) {
		skip_section(g, id, true);
		return;
	}
	rec_ring_put_begin(g, h, rec_ticks(), id);
	rec_ring_push_id(g, g->depth, id);
	g->depth++;
	rec_ring_publish(g, h + 1);
}

/* ---------------------------------------------------------------- hot path */

void pt_begin(pt_recorder *r, uint32_t id)
{
	if (unlikely(!r))
		return;
	struct rec_ring *g = rec_tls;
	/* relaxed: a stale generation only sends this call to the slow path,
	 * which rechecks with acquire */
	if (unlikely(!g || g->gen != atomic_load_explicit(&r->hot_gen, memory_order_relaxed) || g->skip_depth ||
		     !rec_ticks_inline_ok())) {
		begin_slow(r, id);
		return;
	}
	uint64_t h = g->head_own;
	if (unlikely(!rec_ring_fits_cached(g, h, rec_ring_need(g, 2 + REC_SLACK)))) {
		begin_slow(r, id);
		return;
	}
	rec_ring_put_begin(g, h, rec_ticks_inline(), id);
	rec_ring_push_id(g, g->depth, id);
	g->depth++;
	rec_ring_publish(g, h + 1);
}

static PT_COLD void end_slow(struct pt_recorder *r, uint32_t id);

static inline void end_record(struct rec_ring *g, uint32_t id, uint64_t t)
{
	uint64_t h = g->head_own;
	/* room reserved at BEGIN: no check needed */
	rec_ring_put_end(g, h, t, id);
	g->depth--;
	rec_ring_publish(g, h + 1);
}

static void error_record(struct rec_ring *g, uint32_t code, uint32_t count)
{
	rec_ring_bump(&g->errors, count);
	uint64_t h = g->head_own;
	if (!rec_ring_room(g, h, rec_ring_need(g, 1))) {
		rec_ring_bump(&g->lost_records, 1);
		return;
	}
	rec_ring_put_record(g, h, SLOT_ERROR, code, rec_ticks(), count);
	rec_ring_publish(g, h + 1);
}

void pt_end(pt_recorder *r, uint32_t id)
{
	if (unlikely(!r))
		return;
	struct rec_ring *g = rec_tls;
	if (unlikely(!g || g->gen != atomic_load_explicit(&r->gen, memory_order_relaxed) || g->skip_depth ||
		     g->depth == 0 || !rec_ticks_inline_ok())) {
		end_slow(r, id);
		return;
	}
	end_record(g, id, rec_ticks_inline());
}

static PT_COLD void end_slow(struct pt_recorder *r, uint32_t id)
{
	struct rec_ring *g = ring_for(r);
	if (!g) {
		noring_end(r); /* counted by ring_for() */
		return;
	}
	if (g->skip_depth) {
		g->skip_depth--;
		if (g->skip_lost)
			rec_ring_bump(&g->lost_records, 1);
		return;
	}
	if (g->depth == 0) {
		if (noring_end(r))
			rec_ring_bump(&g->lost_records, 1);
		else
			error_record(g, PT_ERRC_END_UNDERFLOW, 1);
		return;
	}
	end_record(g, id, rec_ticks());
}

/* Recording is on (pt_set_enabled()): instants, counters and async ranges
 * begun while it is off are not recorded. Relaxed, as for hot_gen. */
static inline bool rec_enabled(const struct pt_recorder *r)
{
	return atomic_load_explicit(&r->enabled, memory_order_relaxed);
}

static PT_COLD void payload_slow(struct pt_recorder *r, uint32_t kind, uint64_t v)
{
	struct rec_ring *g = ring_for(r);
	if (!g)
		return;
	if (g->skip_depth) {
		if (g->skip_lost)
			rec_ring_bump(&g->lost_records, 1);
		return;
	}
	/* recording disabled: a thread-level metric or transfer (no section
	 * open) is not recorded; one inside a section begun while enabled
	 * belongs to it and is */
	if (g->depth == 0 && !rec_enabled(r))
		return;
	uint64_t h = g->head_own;
	if (!rec_ring_room(g, h, rec_ring_need(g, 1))) {
		rec_ring_bump(&g->lost_records, 1);
		return;
	}
	rec_ring_put_payload(g, h, kind, v);
	rec_ring_publish(g, h + 1);
}

static inline void payload(struct pt_recorder *r, uint32_t kind, uint64_t v)
{
	if (unlikely(!r))
		return;
	struct rec_ring *g = rec_tls;
	/* hot_gen, not gen: while recording is disabled (hot_gen 0) the slow
	 * path decides. Relaxed: a stale value only delays the switch by a
	 * call, as in pt_begin() */
	if (unlikely(!g || g->gen != atomic_load_explicit(&r->hot_gen, memory_order_relaxed) || g->skip_depth)) {
		payload_slow(r, kind, v);
		return;
	}
	uint64_t h = g->head_own;
	if (unlikely(!rec_ring_fits_cached(g, h, rec_ring_need(g, 1)))) {
		payload_slow(r, kind, v);
		return;
	}
	rec_ring_put_payload(g, h, kind, v);
	rec_ring_publish(g, h + 1);
}

void pt_metric(pt_recorder *r, enum pt_metric_kind kind, uint64_t value)
{
	payload(r, SLOT_METRIC | (uint32_t)kind << 8, value);
}

void pt_transfer(pt_recorder *r, uint64_t bytes, enum pt_direction dir)
{
	payload(r, SLOT_TRANSFER | (uint32_t)dir << 8, bytes);
}

void pt_counter(pt_recorder *r, uint32_t id, int64_t value)
{
	if (unlikely(!r) || !rec_enabled(r))
		return;
	struct rec_ring *g = ring_for(r);
	if (!g)
		return;
	/* a counter is not part of any section: recorded even inside a
	 * skipped one, if the ring has room */
	uint64_t h = g->head_own;
	if (!rec_ring_room(g, h, rec_ring_need(g, REC_SLOTS_COUNTER))) {
		rec_ring_bump(&g->lost_records, 1);
		return;
	}
	rec_ring_put_record(g, h, SLOT_COUNTER, 0, rec_ticks(), id);
	rec_ring_put_value(g, h + 1, (uint64_t)value);
	rec_ring_publish(g, h + REC_SLOTS_COUNTER);
}

/* ------------------------------------------- instants, async ranges, GPU */

/* rec_emit() on ring @g; with no room, false, counted as a lost record
 * only if @count. */
static bool emit_on(struct rec_ring *g, uint32_t kind, uint32_t id, uint32_t hi, uint64_t t, const uint64_t *v,
		    unsigned n, bool count)
{
	uint64_t h = g->head_own;
	/* room for the record and every pending END */
	if (!rec_ring_room(g, h, rec_ring_need(g, 1 + n))) {
		if (count)
			rec_ring_bump(&g->lost_records, 1);
		return false;
	}
	rec_ring_put_record(g, h, kind, hi, t ? t : rec_ticks(), id);
	for (unsigned i = 0; i < n; i++)
		rec_ring_put_value(g, h + 1 + i, v[i]);
	rec_ring_publish(g, h + 1 + n);
	return true;
}

bool rec_emit(struct pt_recorder *r, uint32_t kind, uint32_t id, uint32_t hi, uint64_t t, const uint64_t *v,
	      unsigned n)
{
	struct rec_ring *g = ring_for(r);
	return g && emit_on(g, kind, id, hi, t, v, n, true);
}

uint64_t rec_begin_gpu(struct pt_recorder *r, uint32_t id, uint32_t dev, uint64_t stream, uint64_t seq)
{
	struct rec_ring *g = ring_for(r);
	if (!g) {
		noring_begin(r);
		return 0;
	}
	if (g->skip_depth) {
		begin_slow(r, id); /* counts or skips exactly as pt_begin() */
		return 0;
	}
	/* skipped here, not by begin_slow(): it rechecks with less room
	 * needed and could record the section, its GPU half lost uncounted */
	if (!atomic_load_explicit(&r->enabled, memory_order_relaxed)) {
		skip_section(g, id, false);
		return 0;
	}
	uint64_t h = g->head_own;
	if (!rec_ring_room(g, h, rec_ring_need(g, 2 + REC_SLACK + REC_SLOTS_GPU_LAUNCH))) {
		skip_section(g, id, true); /* drops the section whole, counted */
		return 0;
	}
	uint64_t t = rec_ticks();
	rec_ring_put_record(g, h, SLOT_GPU_LAUNCH, dev, t, id);
	rec_ring_put_value(g, h + 1, stream);
	rec_ring_put_value(g, h + 2, seq);
	rec_ring_put_begin(g, h + REC_SLOTS_GPU_LAUNCH, t, id);
	rec_ring_push_id(g, g->depth, id);
	g->depth++;
	rec_ring_publish(g, h + REC_SLOTS_GPU_LAUNCH + 1);
	return t;
}

bool rec_begin_cpu(struct pt_recorder *r, uint32_t id)
{
	const struct rec_ring *g0 = rec_tls;
	const uint32_t d0 = g0 ? g0->depth : 0;
	pt_begin(r, id);
	/* recorded: pt_begin() opened a section on this thread's ring, so its
	 * depth grew and it is not skipping (a skipped BEGIN leaves
	 * skip_depth >= 1; no ring, a closed recorder or an exited thread
	 * leave rec_tls as it was, or the dead ring). Not by reading r->gen
	 * again: pt_close() may store 0 after the BEGIN was written, and that
	 * section would be in the trace with its GPU half counted nowhere. */
	const struct rec_ring *g = rec_tls;
	if (!g || g == &dead_ring || g->skip_depth)
		return false;
	return g == g0 ? g->depth == d0 + 1 : g->depth >= 1; /* a new ring: fork_resume_sections() may open some */
}

void rec_lost_section(struct pt_recorder *r)
{
	struct rec_ring *g;
	if (unlikely(!r) || !(g = ring_for(r)))
		return;
	/* counted as begin_slow() counts a skipped section: not while
	 * recording is disabled, nor inside a section skipped for that */
	if (g->skip_depth ? !g->skip_lost : !rec_enabled(r))
		return;
	rec_ring_bump(&g->lost_records, 2); /* its BEGIN and its END */
	rec_ring_bump(&g->lost_sections, 1);
}

bool rec_gpu_error(struct pt_recorder *r, uint32_t code, uint32_t count)
{
	/* GPU halves not timed: counted in the trace, not as misuse (no bump
	 * of the ring's error counter, unlike error_record()). A failure is
	 * not a lost record: the caller keeps the count and tries again. */
	struct rec_ring *g = ring_for(r);
	return g && emit_on(g, SLOT_ERROR, count, code, 0, NULL, 0, false);
}

bool rec_close_emit(struct pt_recorder *r, uint32_t kind, uint32_t id, uint32_t hi)
{
	/* r->gen is 0 now: ring_for() would refuse. The closing thread's ring
	 * of the generation being closed is still registered and drained by
	 * rec_flusher_stop(); only this thread writes it. */
	struct rec_ring *g = rec_tls;
	if (!g || g == &dead_ring || g->gen != r->cur_gen)
		return false;
	/* a full ring is drained by the flusher within its poll interval
	 * (at most flush_ms; it goes again at once while a ring is >= 1/4
	 * full): wait for it rather than lose a count, bounded */
	const uint64_t deadline = rec_mono_ns() + ((uint64_t)r->flush_ms * 4 + 1000) * 1000000u;
	while (!emit_on(g, kind, id, hi, 0, NULL, 0, false)) {
		if (rec_mono_ns() >= deadline) {
			rec_ring_bump(&g->lost_records, 1);
			return false;
		}
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	return true;
}

void pt_instant(pt_recorder *r, uint32_t id)
{
	if (unlikely(!r) || !rec_enabled(r))
		return;
	rec_emit(r, SLOT_INSTANT, id, 0, 0, NULL, 0);
}

/* Marks the async id of a range begun while recording was disabled: its
 * pt_async_end() records nothing either. Never reached by the counter. */
#define ASYNC_UNRECORDED (1ull << 63)

uint64_t pt_async_begin(pt_recorder *r, uint32_t id)
{
	if (unlikely(!r) || (atomic_load_explicit(&r->gen, memory_order_relaxed) == 0 &&
			     !(atomic_load_explicit(&r->reopen, memory_order_relaxed) && child_reopen(r))))
		return 0;
	uint64_t aid = atomic_fetch_add_explicit(&r->next_async_id, 1, memory_order_relaxed) + 1;
	if (!rec_enabled(r))
		return aid | ASYNC_UNRECORDED;
	rec_emit(r, SLOT_ASYNC_BEGIN, id, 0, 0, &aid, 1);
	return aid;
}

void pt_async_end(pt_recorder *r, uint64_t async_id)
{
	/* a range begun while enabled ends even if recording is off now, as
	 * an open section does */
	if (unlikely(!r) || async_id == 0 || (async_id & ASYNC_UNRECORDED))
		return;
	rec_emit(r, SLOT_ASYNC_END, 0, 0, 0, &async_id, 1);
}

void pt_thread_name(pt_recorder *r, uint32_t tid, const char *name)
{
	if (!r || !name || rec_fork_unsafe) /* names_lock may be held by a thread that is not here */
		return;
	if (tid == 0)
		tid = (uint32_t)syscall(SYS_gettid);
	pthread_mutex_lock(&r->names_lock);
	size_t i = 0;
	while (i < r->ntnames && r->tnames[i].tid != tid)
		i++;
	if (i == r->ntnames) {
		if (r->ntnames == r->ctnames) {
			size_t nc = r->ctnames ? r->ctnames * 2 : 16;
			struct rec_tname *p = realloc(r->tnames, nc * sizeof(*p));
			if (!p) {
				pthread_mutex_unlock(&r->names_lock);
				return;
			}
			r->tnames = p;
			r->ctnames = nc;
		}
		r->ntnames++;
		r->tnames[i].tid = tid;
	}
	snprintf(r->tnames[i].name, sizeof(r->tnames[i].name), "%s", name);
	atomic_fetch_add_explicit(&r->names_gen, 1, memory_order_release);
	pthread_mutex_unlock(&r->names_lock);
}

bool rec_thread_name_for(struct pt_recorder *r, uint32_t tid, char out[32])
{
	bool found = false;
	pthread_mutex_lock(&r->names_lock);
	for (size_t i = 0; i < r->ntnames; i++)
		if (r->tnames[i].tid == tid) {
			memcpy(out, r->tnames[i].name, 32);
			found = true;
			break;
		}
	pthread_mutex_unlock(&r->names_lock);
	return found;
}

/* ---------------------------------------------------------------- by title */

static void add_metrics(pt_recorder *r, const struct pt_metrics *m)
{
	if (m->read_bytes)
		pt_metric(r, PT_METRIC_READ_BYTES, m->read_bytes);
	if (m->written_bytes)
		pt_metric(r, PT_METRIC_WRITTEN_BYTES, m->written_bytes);
	if (m->flops)
		pt_metric(r, PT_METRIC_FLOPS, m->flops);
}

/* The caller's metrics, @m_bytes of them (recorder.h, Types): the fields
 * it lacks add nothing; bytes past ours are metrics this library cannot
 * record, ignored because the call cannot fail upward. */
static struct pt_metrics metrics_in(const struct pt_metrics *m, size_t m_bytes)
{
	struct pt_metrics v = { 0 };
	if (m) /* cannot fail: at most our size is read */
		(void)copy_struct_in(&v, sizeof(v), m, PT_MIN(m_bytes, sizeof(v)));
	return v;
}

void pt_start(pt_recorder *r, const char *name, const struct pt_metrics *m, size_t m_bytes)
{
	if (!r)
		return;
	pt_begin(r, pt_intern(r, name));
	const struct pt_metrics v = metrics_in(m, m_bytes);
	add_metrics(r, &v);
}

void pt_stop(pt_recorder *r, const char *name, const struct pt_metrics *m, size_t m_bytes)
{
	if (!r)
		return;
	struct rec_ring *g = ring_for(r);
	if (!g) {
		noring_end(r);
		return;
	}
	/* levels [0, depth) are recorded sections, [depth, total) skipped
	 * ones (always innermost); the search stops at the first level whose
	 * entry a deeper level has overwritten */
	uint32_t id = rec_intern_lookup(0, name);
	uint32_t total = g->depth + g->skip_depth;
	uint32_t low = total > REC_STOP_STACK ? total - REC_STOP_STACK : 0;
	uint32_t found = UINT32_MAX;
	for (uint32_t k = total; id && k-- > low;) {
		uint64_t e = g->open_ids[k % REC_STOP_STACK];
		if (e >> 32 != k)
			break;
		if ((uint32_t)e == id) {
			found = k;
			break;
		}
	}
	if (found == UINT32_MAX) {
		if (g->depth + g->skip_depth == 0 && noring_end(r))
			rec_ring_bump(&g->lost_records, 1); /* begun without a ring */
		else
			error_record(g, PT_ERRC_STOP_NOT_OPEN, 1);
		return;
	}
	uint32_t implicit = total - found - 1;
	if (implicit)
		error_record(g, PT_ERRC_IMPLICIT_CLOSE, implicit);
	for (uint32_t i = 0; i < implicit; i++)
		pt_end(r, (uint32_t)g->open_ids[(g->depth + g->skip_depth - 1) % REC_STOP_STACK]);
	const struct pt_metrics v = metrics_in(m, m_bytes);
	add_metrics(r, &v);
	pt_end(r, id);
}

void pt__scope_begin(struct pt__scope *s)
{
	pt_begin(s->r, s->id);
	if (s->read_bytes | s->written_bytes | s->flops) {
		struct pt_metrics m = { s->read_bytes, s->written_bytes, s->flops };
		add_metrics(s->r, &m);
	}
}

void pt__scope_end(struct pt__scope *s) { pt_end(s->r, s->id); }

/* ---------------------------------------------------------------- lifecycle */

static void env_bad(const char *name, const char *e, const char *what)
{
	/* the program goes on, with the default; the mistake is not silent */
	fprintf(stderr, "ptz: ignoring %s=\"%s\": not %s; using the default\n", name, e, what);
}

/* A size in bytes: decimal or 0x hex, optional k/m/g suffix (KiB, MiB, GiB).
 * Unset, empty or 0 gives @dflt (as a zero struct pt_options field does);
 * anything invalid (sign, junk, overflow) gives @dflt with a warning. */
static size_t env_size(const char *name, size_t dflt)
{
	const char *e = getenv(name);
	if (!e || !*e)
		return dflt;
	const char *p = e;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p < '0' || *p > '9') { /* strtoull would take "-1" as 2^64 - 1 */
		env_bad(name, e, "a positive size");
		return dflt;
	}
	char *end;
	errno = 0;
	unsigned long long v = strtoull(p, &end, 0);
	unsigned shift = 0;
	if (*end == 'k' || *end == 'K')
		shift = 10, end++;
	else if (*end == 'm' || *end == 'M')
		shift = 20, end++;
	else if (*end == 'g' || *end == 'G')
		shift = 30, end++;
	if (errno || *end || v > (SIZE_MAX >> shift)) {
		env_bad(name, e, "a positive size");
		return dflt;
	}
	return v ? (size_t)(v << shift) : dflt;
}

/* An int in [@lo, @hi]; unset, empty or 0 gives @dflt, invalid @dflt with a warning. */
static int env_int(const char *name, int dflt, long lo, long hi)
{
	const char *e = getenv(name);
	if (!e || !*e)
		return dflt;
	char *end;
	errno = 0;
	long v = strtol(e, &end, 10);
	if (errno || end == e || *end || v < lo || v > hi) {
		env_bad(name, e, "a number in range");
		return dflt;
	}
	return v ? (int)v : dflt;
}

/* PTZ_PROC_MS, or its older name PTZ_RSS_MS when it is unset: as env_int(),
 * except that 0 means "no process counters" (env_int() takes 0 for the
 * default); clamped to an hour. */
static unsigned env_proc_ms(void)
{
	const char *name = "PTZ_PROC_MS";
	const char *e = getenv(name);
	if (!e || !*e) {
		name = "PTZ_RSS_MS";
		e = getenv(name);
	}
	if (!e || !*e)
		return 100;
	char *end;
	errno = 0;
	long v = strtol(e, &end, 10);
	if (errno || end == e || *end || v < 0) {
		env_bad(name, e, "a number in range");
		return 100;
	}
	return v > 3600000 ? 3600000u : (unsigned)v;
}

/*
 * A zstd level in [ZSTD_minCLevel(), REC_MAX_LEVEL]; one outside is clamped
 * with a note on stderr naming @from (the program goes on, the mistake is
 * not silent). Above 19, zstd's "ultra" levels use windows of up to 128 MiB
 * and compress at a few hundred KB/s: no recorder keeps up with that.
 */
static int clamp_level(int v, const char *from)
{
	int c = v > REC_MAX_LEVEL ? REC_MAX_LEVEL : v < ZSTD_minCLevel() ? ZSTD_minCLevel() : v;
	if (c != v)
		fprintf(stderr, "ptz: zstd level %d (%s) is outside %d..%d; using %d\n", v, from, ZSTD_minCLevel(),
			REC_MAX_LEVEL, c);
	return c;
}

static size_t pow2_ring(size_t bytes)
{
	if (bytes < REC_MIN_RING)
		bytes = REC_MIN_RING;
	if (bytes > REC_MAX_RING)
		bytes = REC_MAX_RING;
	size_t p = REC_MIN_RING;
	while (p < bytes)
		p <<= 1;
	return p;
}

static void read_cmdline(char *buf, size_t cap)
{
	buf[0] = 0;
	FILE *f = fopen("/proc/self/cmdline", "re");
	if (!f)
		return;
	size_t n = fread(buf, 1, cap - 1, f);
	fclose(f);
	for (size_t i = 0; i + 1 < n; i++)
		if (buf[i] == 0)
			buf[i] = ' ';
	buf[n] = 0;
}

static void read_comm(char *buf, size_t cap)
{
	buf[0] = 0;
	FILE *f = fopen("/proc/self/comm", "re");
	if (!f)
		return;
	if (fgets(buf, (int)cap, f))
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

/*
 * The host name as one file-name component for %h, into @out[@cap]: every
 * byte other than an ASCII letter, digit, '.', '-' or '_' becomes '_' (a
 * '/' would leave the trace directory, control bytes end up in file names
 * and terminals); a name that is empty, "." or ".." (which would name a
 * directory) becomes "host", "_" or "__". gethostname() failing gives "host".
 */
static void host_component(char *out, size_t cap)
{
	if (gethostname(out, cap) != 0)
		out[0] = 0;
	out[cap - 1] = 0;
	size_t n = strlen(out);
	for (size_t i = 0; i < n; i++) {
		const unsigned char c = (unsigned char)out[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		      c == '-' || c == '_'))
			out[i] = '_';
	}
	if (n == 0)
		snprintf(out, cap, "host");
	else if (strcmp(out, ".") == 0 || strcmp(out, "..") == 0)
		memset(out, '_', n);
}

/* Expands %p (pid) and %h (host, host_component()) into @out. */
/*
 * The batch job and rank of this process, from the first of these set
 * (recorder.h, pt_open()): job SLURM_JOB_ID (with "_" SLURM_ARRAY_TASK_ID
 * when set), PBS_JOBID, LSB_JOBID, FLUX_JOB_ID; rank SLURM_PROCID,
 * OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, RANK (torchrun). Writes the
 * job ("" if none) into @job; returns rank + 1, 0 if none (a value that is
 * not a number below 2^32 - 1 counts as none).
 */
static uint32_t job_identity(char *job, size_t cap)
{
	static const char *const jobs[] = { "SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "FLUX_JOB_ID" };
	static const char *const ranks[] = { "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "RANK" };
	job[0] = 0;
	for (size_t i = 0; i < PT_ARRAY_SIZE(jobs); i++) {
		const char *v = getenv(jobs[i]);
		if (v && *v) {
			const char *task = i == 0 ? getenv("SLURM_ARRAY_TASK_ID") : NULL;
			snprintf(job, cap, "%.100s%s%.20s", v, task && *task ? "_" : "", task && *task ? task : "");
			break;
		}
	}
	for (size_t i = 0; i < PT_ARRAY_SIZE(ranks); i++) {
		const char *v = getenv(ranks[i]);
		if (!v || !*v)
			continue;
		char *end;
		errno = 0;
		unsigned long long n = strtoull(v, &end, 10);
		if (errno || *end || v[0] == '-' || n >= UINT32_MAX)
			return 0;
		return (uint32_t)n + 1;
	}
	return 0;
}

static int expand_path(const char *in, char *out, size_t cap)
{
	size_t o = 0;
	for (const char *p = in; *p; p++) {
		char tmp[256];
		const char *ins = NULL;
		if (p[0] == '%' && p[1] == 'p') {
			snprintf(tmp, sizeof(tmp), "%d", (int)getpid());
			ins = tmp;
		} else if (p[0] == '%' && p[1] == 'h') {
			host_component(tmp, sizeof(tmp));
			ins = tmp;
		}
		if (ins) {
			size_t n = strlen(ins);
			if (o + n >= cap)
				return -ENAMETOOLONG;
			memcpy(out + o, ins, n);
			o += n;
			p++;
		} else {
			if (o + 1 >= cap)
				return -ENAMETOOLONG;
			out[o++] = *p;
		}
	}
	out[o] = 0;
	return 0;
}

/*
 * Opens @path (a template: %p, %h) with @opt into @r, open_lock held and
 * the recorder not open, recording if @enabled (pt_set_enabled()); keeps
 * @path and @opt for a fork child's reopen.
 * Return: 0 or -errno.
 */
static int open_locked(struct pt_recorder *r, const char *path, const struct pt_options *opt, bool enabled)
{
	rec_clock_init(); /* PTZ_CLOCK is read at every open */
	/* the name table before fork_records is set below: a fork from now on
	 * copies it whole, never its creation half done (rec_intern.c) */
	if (!rec_intern_init())
		return -ENOMEM;
	char fpath[4096];
	int rc = expand_path(path, fpath, sizeof(fpath));
	if (rc)
		return rc;
	struct pt_options o = opt ? *opt : (struct pt_options){ 0 };
	if (path != r->path_tmpl) { /* kept for a fork child (child_reopen()) */
		char *t = strdup(path);
		if (!t)
			return -ENOMEM;
		free(r->path_tmpl);
		r->path_tmpl = t;
		r->opts = o;
		r->opts.process_name = NULL;
		if (o.process_name) {
			snprintf(r->opts_pname, sizeof(r->opts_pname), "%s", o.process_name);
			r->opts.process_name = r->opts_pname;
		}
	}
	r->ring_bytes = pow2_ring(o.ring_bytes ? o.ring_bytes : env_size("PTZ_RING_BYTES", REC_DEFAULT_RING));
	r->zstd_level = o.zstd_level ? clamp_level(o.zstd_level, "pt_options.zstd_level")
				     : clamp_level(env_int("PTZ_ZSTD_LEVEL", 1, INT_MIN, INT_MAX), "PTZ_ZSTD_LEVEL");
	r->flush_ms = o.flush_interval_ms ? o.flush_interval_ms : (unsigned)env_int("PTZ_FLUSH_MS", 10, 0, INT_MAX);
	if (r->flush_ms > 10000)
		r->flush_ms = 10000;
	r->rss_ms = env_proc_ms();
	/* snapshots (rec_flush.c): pt_trigger()'s window and rate limit, the
	 * signal's and triggers' file names */
	r->trigger_seconds = (unsigned)env_int("PTZ_TRIGGER_SECONDS", 10, 0, 86400);
	r->trigger_min_ms = (unsigned)env_int("PTZ_TRIGGER_MIN_MS", 10000, 0, 86400000);
	int mode = o.mode;
	if (!mode) {
		const char *m = getenv("PTZ_MODE");
		mode = m && strcmp(m, "flight") == 0 ? PT_MODE_FLIGHT : PT_MODE_STREAM;
		if (m && *m && strcmp(m, "flight") != 0 && strcmp(m, "stream") != 0)
			env_bad("PTZ_MODE", m, "\"stream\" or \"flight\"");
	}
	if (mode != PT_MODE_STREAM && mode != PT_MODE_FLIGHT)
		return -EINVAL;
	r->flight_bytes = 0;
	if (mode == PT_MODE_FLIGHT) {
		r->flight_bytes = o.flight_bytes;
		if (o.flight_bytes && o.flight_bytes < FMT_FLIGHT_MIN_BYTES)
			return -EINVAL;
		if (!r->flight_bytes) {
			r->flight_bytes = env_size("PTZ_FLIGHT_BYTES", REC_DEFAULT_FLIGHT);
			if (r->flight_bytes < FMT_FLIGHT_MIN_BYTES) {
				env_bad("PTZ_FLIGHT_BYTES", getenv("PTZ_FLIGHT_BYTES"), "at least 1M");
				r->flight_bytes = REC_DEFAULT_FLIGHT;
			}
		}
	}

	char pname[256], host[256], cmd[3072];
	if (o.process_name)
		snprintf(pname, sizeof(pname), "%s", o.process_name);
	else
		read_comm(pname, sizeof(pname));
	if (gethostname(host, sizeof(host)) != 0)
		host[0] = 0;
	host[sizeof(host) - 1] = 0;
	read_cmdline(cmd, sizeof(cmd));
	char job[128];
	uint32_t rank_plus1 = job_identity(job, sizeof(job));
	struct fmt_writer_hdr hd = {
		.clock_source = (uint32_t)rec_clock_source,
		.pid = (uint32_t)getpid(),
		.process_name = pname,
		.host = host,
		.cmdline = cmd,
		.recorder_version = REC_VERSION,
		.flight_bytes = r->flight_bytes,
		.job = job,
		.rank_plus1 = rank_plus1,
	};
	uint32_t bracket;
	rec_clock_triple(&hd.start_ticks, &hd.start_mono_ns, &hd.start_real_ns, &bracket);
	rc = fmt_writer_open(fpath, &hd, &r->w);
	/* before the flusher starts: it names snapshots after it */
	snprintf(r->path_now, sizeof(r->path_now), "%s", fpath); /* fits: both 4096 */
	if (rc == -EEXIST) /* refused, not a failure of the system: say why */
		fprintf(stderr,
			"ptz: not writing a trace into %s: that file belongs to another user or has other links "
			"(remove it or choose another path)\n",
			fpath);
	if (rc)
		return rc;
	/* the flusher's small chunks (a quiet thread, every flush interval)
	 * are stored raw: zstd's per-call cost would dominate an idle process */
	fmt_writer_store_below(r->w, REC_STORE_BELOW);
	atomic_store_explicit(&r->stop, false, memory_order_relaxed);
	atomic_store_explicit(&r->next_thread_index, 0, memory_order_relaxed);
	atomic_store_explicit(&r->threads, 0, memory_order_relaxed);
	atomic_store_explicit(&r->records_written, 0, memory_order_relaxed);
	atomic_store_explicit(&r->chunks_written, 0, memory_order_relaxed);
	atomic_store_explicit(&r->bytes_written, PT_FMT_HEADER_BYTES, memory_order_relaxed);
	atomic_store_explicit(&r->io_lost_records, 0, memory_order_relaxed);
	atomic_store_explicit(&r->after_exit, 0, memory_order_relaxed);
	atomic_store_explicit(&r->no_ring_lost, 0, memory_order_relaxed);
	atomic_store_explicit(&r->closed_lost, 0, memory_order_relaxed);
	atomic_store_explicit(&r->closed_lost_sections, 0, memory_order_relaxed);
	atomic_store_explicit(&r->closed_errors, 0, memory_order_relaxed);
	atomic_store_explicit(&r->last_io_error, 0, memory_order_relaxed);
	atomic_store_explicit(&r->enabled, enabled, memory_order_relaxed);
	/* pt_thread_name() names belong to the trace they were given for: a
	 * later recorder (or a fork child's, whose threads have other tids)
	 * starts with none */
	pthread_mutex_lock(&r->names_lock);
	r->ntnames = 0;
	pthread_mutex_unlock(&r->names_lock);
	rec_gpu_open(); /* the GPU counts are this recorder's from here */
	r->cur_gen = ++gen_counter;
	rc = rec_flusher_start(r);
	if (rc) {
		fmt_writer_close(r->w);
		r->w = NULL;
		unlink(fpath);
		return rc;
	}
	/* release: settings and writer before threads may attach (they load
	 * gen with acquire in ring_for()) */
	atomic_store_explicit(&r->gen, r->cur_gen, memory_order_release);
	atomic_store_explicit(&r->hot_gen, enabled ? r->cur_gen : 0, memory_order_release);
	atomic_store_explicit(&r->fork_records, strstr(path, "%p") != NULL, memory_order_relaxed);
	is_open = true;
	return 0;
}

int pt_path(pt_recorder *r, char *buf, size_t cap)
{
	if (!r || !buf)
		return -EINVAL;
	if (rec_fork_unsafe)
		return -EBADF;
	pthread_mutex_lock(&open_lock);
	int rc;
	if (!is_open || atomic_load_explicit(&r->forked, memory_order_relaxed)) {
		rc = -EBADF;
	} else {
		const size_t n = strlen(r->path_now);
		rc = n < cap ? (int)n : -ERANGE;
		if (rc >= 0)
			memcpy(buf, r->path_now, n + 1);
	}
	pthread_mutex_unlock(&open_lock);
	return rc;
}

pt_recorder *pt_open(const char *path, const struct pt_options *opt, size_t opt_bytes)
{
	if (!path) {
		errno = EINVAL;
		return NULL;
	}
	struct pt_options o; /* the caller's, @opt_bytes of it (recorder.h, Types) */
	if (opt) {
		int rc = copy_struct_in(&o, sizeof(o), opt, opt_bytes);
		if (rc) {
			errno = -rc;
			return NULL;
		}
		opt = &o;
	}
	if (rec_fork_unsafe) { /* a child whose fork found a recorder lock held (recorder.h) */
		errno = EBUSY;
		return NULL;
	}
	pthread_once(&global_once, global_init);
	struct pt_recorder *r = &the_recorder;
	pthread_mutex_lock(&open_lock);
	if (is_open || r->forked) {
		pthread_mutex_unlock(&open_lock);
		errno = EBUSY;
		return NULL;
	}
	int rc = open_locked(r, path, opt, true);
	pthread_mutex_unlock(&open_lock);
	if (rc) {
		errno = -rc;
		return NULL;
	}
	return r;
}

/*
 * In a fork child, the first record through the copy of a recorder whose
 * path had %p: opens the child's own trace (atfork_child() decided it may).
 * A failure is said once on stderr; the child then records nothing (there
 * is no file to count the loss in).
 * Return: the new generation, or 0.
 */
static PT_COLD uint64_t child_reopen(struct pt_recorder *r)
{
	pthread_mutex_lock(&open_lock);
	if (atomic_load_explicit(&r->reopen, memory_order_relaxed)) {
		/* the copies of the parent's recorder state: no thread here uses
		 * them (the registry was consistent: the fork held reg_lock) */
		struct rec_ring *g, *tmp;
		cds_list_for_each_entry_safe(g, tmp, &r->rings, node)
			free_ring(g);
		CDS_INIT_LIST_HEAD(&r->rings);
		rec_flusher_forget();
		atomic_store_explicit(&r->forked, false, memory_order_relaxed);
		is_open = false;
		/* pt_set_enabled(false) in the parent (or here) holds in the child */
		int rc = open_locked(r, r->path_tmpl, &r->opts, atomic_load_explicit(&r->enabled, memory_order_relaxed));
		if (rc)
			fprintf(stderr, "ptz: fork child %d: cannot open a trace at %s: %s; not recording\n", (int)getpid(),
				r->path_tmpl, strerror(-rc));
		atomic_store_explicit(&r->reopen, false, memory_order_relaxed);
	}
	pthread_mutex_unlock(&open_lock);
	return atomic_load_explicit(&r->gen, memory_order_acquire);
}

/*
 * The forking thread's first ring in the child: its sections open at the
 * fork begin again now, with their ids, so that its later pt_end() calls
 * close them; sections it was skipping stay skipped. If their ids are not
 * all known (deeper than REC_STOP_STACK) or the ring has no room, their
 * ENDs are counted as lost instead, like those of sections begun without a
 * ring.
 */
static void fork_resume_sections(struct pt_recorder *r, struct rec_ring *g)
{
	fork_resume = false;
	const uint32_t d = fork_stack.depth, total = d + fork_stack.skip;
	uint64_t h = g->head_own;
	if (!fork_stack.valid || !rec_ring_room(g, h, 2 * (uint64_t)d + 1 + REC_SLACK)) {
		for (uint32_t k = 0; k < total; k++)
			noring_begin(r);
		return;
	}
	const uint64_t t = rec_ticks();
	for (uint32_t k = 0; k < d; k++) {
		rec_ring_put_begin(g, h + k, t, fork_stack.ids[k]);
		rec_ring_push_id(g, k, fork_stack.ids[k]);
	}
	for (uint32_t k = d; k < total; k++)
		rec_ring_push_id(g, k, fork_stack.ids[k]);
	g->depth = d;
	g->skip_depth = fork_stack.skip;
	g->skip_lost = fork_stack.skip_lost;
	rec_ring_publish(g, h + d);
}

int pt_close(pt_recorder *r)
{
	if (!r || rec_fork_unsafe) /* a fork child's copy: nothing to close, open_lock may be held */
		return 0;
	pthread_mutex_lock(&open_lock);
	if (!is_open || r->forked) {
		/* a fork child's copy that has not recorded: it never will now */
		atomic_store_explicit(&r->reopen, false, memory_order_relaxed);
		pthread_mutex_unlock(&open_lock);
		return 0;
	}
	atomic_store_explicit(&r->fork_records, false, memory_order_relaxed); /* forks from now on: no locks taken */
	/* GPU work still in flight is resolved (bounded wait) and written
	 * while the recorder is still open; from here on pt_gpu_begin()
	 * times nothing new. */
	const bool gpu = rec_gpu_stop(r);
	if (gpu)
		(void)ring_for(r); /* for rec_gpu_close()'s ERROR records (rec_close_emit()) */
	/* New calls become no-ops; the registry is frozen under reg_lock so
	 * no ring joins after the final drain. */
	pthread_mutex_lock(&r->reg_lock);
	atomic_store_explicit(&r->hot_gen, 0, memory_order_relaxed);
	atomic_store_explicit(&r->gen, 0, memory_order_release);
	pthread_mutex_unlock(&r->reg_lock);
	/* GPU halves counted by calls that still saw the recorder open:
	 * written on this thread's ring before the final drain */
	if (gpu)
		rec_gpu_close(r);
	rec_flusher_stop(r); /* final drain, final tables, joins */

	/* Unlink every ring, wait one grace period so no pt_stats() walker
	 * still holds one, then hand each to its thread (OWNER_DETACHED) or,
	 * if the thread already exited, free it here. */
	pthread_mutex_lock(&r->reg_lock);
	struct rec_ring *g, *tmp, **gone = NULL;
	size_t ngone = 0, cgone = 0;
	cds_list_for_each_entry_safe(g, tmp, &r->rings, node) {
		/* the node's links stay untouched until the grace period ends: a
		 * reader may be standing on it; its totals stay for pt_stats() */
		rec_fold_ring(r, g);
		if (ngone == cgone) {
			size_t nc = cgone ? cgone * 2 : 16;
			struct rec_ring **p = realloc(gone, nc * sizeof(*p));
			if (!p)
				continue; /* out of memory: leak it, never free early */
			gone = p;
			cgone = nc;
		}
		gone[ngone++] = g;
	}
	pthread_mutex_unlock(&r->reg_lock);
	urcu_bp_synchronize_rcu();
	PT_TSAN_ACQUIRE(&rec_grace);
	for (size_t i = 0; i < ngone; i++) {
		g = gone[i];
		int expect = OWNER_ACTIVE;
		/* [X1'] from now on the owner frees it; if it already exited
		 * (it won the race with us), we do. */
		if (!atomic_compare_exchange_strong_explicit(&g->owner_state, &expect, OWNER_DETACHED,
							     memory_order_acq_rel, memory_order_acquire))
			free_ring(g);
	}
	free(gone);
	int rc = -atomic_load_explicit(&r->last_io_error, memory_order_relaxed);
	int crc = fmt_writer_close(r->w);
	r->w = NULL;
	if (!rc && crc)
		rc = crc;
	is_open = false;
	pthread_mutex_unlock(&open_lock);
	return rc;
}

static pthread_once_t default_once = PTHREAD_ONCE_INIT;
static pt_recorder *default_recorder;

static void default_close(void)
{
	pt_recorder *r = default_recorder;
	default_recorder = NULL;
	pt_close(r);
}

static void default_open(void)
{
	const char *p = getenv("PTZ_TRACE");
	if (!p || !*p)
		return;
	default_recorder = pt_open(p, NULL, 0);
	if (default_recorder)
		atexit(default_close);
}

pt_recorder *pt_default(void)
{
	pthread_once(&default_once, default_open);
	return default_recorder;
}

static void pt_set_enabled_locked(pt_recorder *r, bool on)
{
	atomic_store_explicit(&r->enabled, on, memory_order_relaxed);
	if (is_open && !r->forked)
		atomic_store_explicit(&r->hot_gen, on ? r->cur_gen : 0, memory_order_relaxed);
}

void pt_set_enabled(pt_recorder *r, bool on)
{
	if (!r || rec_fork_unsafe)
		return;
	pthread_mutex_lock(&open_lock);
	pt_set_enabled_locked(r, on);
	pthread_mutex_unlock(&open_lock);
}

__attribute__((weak)) void rec_test_fold_hook(void)
{
}

void rec_fold_ring(pt_recorder *r, struct rec_ring *g)
{
	/* seqcount writer (Boehm, "Can seqlocks get along with programming
	 * language memory models?", 2012): odd, release fence, the moves,
	 * even with release */
	uint32_t s = atomic_load_explicit(&r->fold_seq, memory_order_relaxed);
	atomic_store_explicit(&r->fold_seq, s + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_fetch_add_explicit(&r->closed_lost, atomic_load_explicit(&g->lost_records, memory_order_relaxed),
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&r->closed_lost_sections, atomic_load_explicit(&g->lost_sections, memory_order_relaxed),
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&r->closed_errors, atomic_load_explicit(&g->errors, memory_order_relaxed),
				  memory_order_relaxed);
	rec_test_fold_hook();
	cds_list_del_rcu(&g->node);
	atomic_store_explicit(&r->fold_seq, s + 2, memory_order_release);
}

/* How long pt_stats() waits for a fold to end (a few stores, unless the
 * folding thread is descheduled) before it settles for a best-effort sum. */
#define STATS_WAIT_NS 1000000000ull

static int stats_fill(pt_recorder *r, struct pt_stats_info *out)
{
	memset(out, 0, sizeof(*out));
	if (!r)
		return -EINVAL;
	if (r->forked)
		return 0;
	pthread_once(&global_once, global_init);
	uint64_t lost, lost_sec, errs, waited_ns = 0;
	for (unsigned spins = 0;;) {
		/* seqcount reader: the closed_* totals and the live rings from
		 * one moment, so a ring being folded counts exactly once */
		uint32_t s1 = atomic_load_explicit(&r->fold_seq, memory_order_acquire);
		if ((s1 & 1) && waited_ns < STATS_WAIT_NS) {
			if (++spins > 64) { /* the folder may share this core, or be descheduled */
				struct timespec ts = { 0, 20000 };
				nanosleep(&ts, NULL);
				waited_ns += 20000;
			} else if (spins > 16) {
				sched_yield();
			}
			continue;
		}
		lost = atomic_load_explicit(&r->closed_lost, memory_order_relaxed);
		lost_sec = atomic_load_explicit(&r->closed_lost_sections, memory_order_relaxed);
		errs = atomic_load_explicit(&r->closed_errors, memory_order_relaxed);
		urcu_bp_read_lock();
		struct rec_ring *g;
		cds_list_for_each_entry_rcu(g, &r->rings, node) {
			PT_TSAN_ACQUIRE(g);
			lost += atomic_load_explicit(&g->lost_records, memory_order_relaxed);
			lost_sec += atomic_load_explicit(&g->lost_sections, memory_order_relaxed);
			errs += atomic_load_explicit(&g->errors, memory_order_relaxed);
		}
		PT_TSAN_RELEASE(&rec_grace); /* these reads before a later free (see rec_grace) */
		urcu_bp_read_unlock();
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&r->fold_seq, memory_order_relaxed) == s1 || (s1 & 1))
			break; /* consistent, or best effort (see above) */
	}
	lost += atomic_load_explicit(&r->after_exit, memory_order_relaxed) +
		atomic_load_explicit(&r->no_ring_lost, memory_order_relaxed) +
		atomic_load_explicit(&r->io_lost_records, memory_order_relaxed);
	out->records = atomic_load_explicit(&r->records_written, memory_order_relaxed);
	out->lost_records = lost;
	out->lost_sections = lost_sec;
	out->errors = errs;
	out->chunks = atomic_load_explicit(&r->chunks_written, memory_order_relaxed);
	out->bytes_written = atomic_load_explicit(&r->bytes_written, memory_order_relaxed);
	out->threads = atomic_load_explicit(&r->threads, memory_order_relaxed);
	out->last_io_error = atomic_load_explicit(&r->last_io_error, memory_order_relaxed);
	rec_gpu_stats(out);
	return 0;
}

int pt_stats(pt_recorder *r, struct pt_stats_info *out, size_t out_bytes)
{
	struct pt_stats_info st; /* written whole, then @out_bytes of it (recorder.h, Types) */
	int rc = stats_fill(r, &st);
	copy_struct_out(out, out_bytes, &st, sizeof(st));
	return rc;
}
