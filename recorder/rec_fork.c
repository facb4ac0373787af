/*
 * recorder/rec_fork.c - fork(): the atfork handlers, a child's reopen at
 * its first record (rec_child_reopen()), and the forking thread's open
 * sections begun again in the child (rec_fork_resume_sections()).
 *
 * fork() with a recorder open (recorder.h, pt_open()). The handlers are registered at the
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
#include <pthread.h>
#include <stdio.h> /* fprintf: a child's failed reopen */
#include <string.h>
#include <time.h> /* nanosleep */
#include <unistd.h> /* getpid */

#include "recorder/rec_internal.h"
#include "recorder/rec_ring.h"

#define FORK_LOCK_WAIT_NS 200000000ull /* per lock: 0.2 s */

bool rec_fork_unsafe;

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
	struct pt_recorder *r = &rec_the_recorder;
	memset(&fork_held, 0, sizeof(fork_held));
	/* only for a recorder whose children record (a %p path): any other
	 * fork costs nothing and leaves the child not recording, as always;
	 * a child that could not take the locks cannot take them later either */
	if (rec_fork_unsafe || !atomic_load_explicit(&r->fork_records, memory_order_relaxed))
		return;
	urcu_bp_before_fork();
	fork_held.urcu = true;
	fork_held.open = lock_bounded(try_mutex, &rec_open_lock);
	fork_held.reg = fork_held.open && lock_bounded(try_mutex, &r->reg_lock);
	fork_held.names = fork_held.reg && lock_bounded(try_mutex, &r->names_lock);
	fork_held.intern = fork_held.names && lock_bounded(try_intern, NULL);
}

/* Releases what atfork_prepare() took but liburcu's locks (the same in parent and child). */
static void fork_unlock(void)
{
	struct pt_recorder *r = &rec_the_recorder;
	if (fork_held.intern)
		rec_intern_fork_unlock();
	if (fork_held.names)
		pthread_mutex_unlock(&r->names_lock);
	if (fork_held.reg)
		pthread_mutex_unlock(&r->reg_lock);
	if (fork_held.open)
		pthread_mutex_unlock(&rec_open_lock);
}

static void atfork_parent(void)
{
	fork_unlock();
	if (fork_held.urcu)
		urcu_bp_after_fork_parent();
}

static void atfork_child(void)
{
	struct pt_recorder *r = &rec_the_recorder;
	if (fork_held.urcu)
		urcu_bp_after_fork_child(); /* the registry keeps this thread only */
	const bool safe = fork_held.intern; /* false too when no %p recorder was open */
	rec_fork_unsafe = !safe;
	/* open: a %p recorder open here, or a reopen still pending (a child
	 * that forks before its first record passes it on) */
	const bool open = safe && ((rec_is_open && !atomic_load_explicit(&r->forked, memory_order_relaxed)) ||
				   atomic_load_explicit(&r->reopen, memory_order_relaxed));
	struct rec_ring *g = rec_tls;
	if (!open) {
		fork_resume = false;
	} else if (g && g != &rec_dead_ring && g->gen == atomic_load_explicit(&r->gen, memory_order_relaxed)) {
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
	if (safe && g && g != &rec_dead_ring)
		pthread_setspecific(rec_ring_key, NULL); /* the ring may be freed at reopen: no retire of it */
	rec_tls = NULL;
	if (safe) {
		fork_unlock();
		r->flusher_running = false;
		pthread_mutex_init(&r->stop_lock, NULL); /* the parent's flusher may have held them */
		pthread_mutex_init(&r->snap_lock, NULL);
		pthread_mutex_init(&r->path_lock, NULL);
		rec_stop_cond_init(r);
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
 * In a fork child, the first record through the copy of a recorder whose
 * path had %p: opens the child's own trace (atfork_child() decided it may).
 * A failure is said once on stderr; the child then records nothing (there
 * is no file to count the loss in).
 * Return: the new generation, or 0.
 */
uint64_t rec_child_reopen(struct pt_recorder *r)
{
	pthread_mutex_lock(&rec_open_lock);
	if (atomic_load_explicit(&r->reopen, memory_order_relaxed)) {
		/* the copies of the parent's recorder state: no thread here uses
		 * them (the registry was consistent: the fork held reg_lock) */
		struct rec_ring *g, *tmp;
		cds_list_for_each_entry_safe(g, tmp, &r->rings, node)
			rec_ring_free(g);
		CDS_INIT_LIST_HEAD(&r->rings);
		rec_flusher_forget();
		atomic_store_explicit(&r->forked, false, memory_order_relaxed);
		rec_is_open = false;
		/* pt_set_enabled(false) in the parent (or here) holds in the child */
		int rc = rec_open_locked(r, r->path_tmpl, &r->opts,
					 atomic_load_explicit(&r->enabled, memory_order_relaxed));
		if (rc)
			fprintf(stderr, "ptz: fork child %d: cannot open a trace at %s: %s; not recording\n", (int)getpid(),
				r->path_tmpl, strerror(-rc));
		atomic_store_explicit(&r->reopen, false, memory_order_relaxed);
	}
	pthread_mutex_unlock(&rec_open_lock);
	return atomic_load_explicit(&r->gen, memory_order_acquire);
}

/*
 * The forking thread's first ring in the child: its sections open at the
 * fork begin again now, with their ids, so that its later pt_end() calls
 * close them; sections it was skipping stay skipped. If their ids are not
 * all known (deeper than REC_STOP_STACK) or the ring has no room, their
 * ENDs are counted as lost instead, like those of sections begun without a
 * ring. Called with every new ring (rec_registry.c ring_attach()): nothing
 * unless this thread forked with sections open (fork_resume).
 */
void rec_fork_resume_sections(struct pt_recorder *r, struct rec_ring *g)
{
	if (likely(!fork_resume))
		return;
	fork_resume = false;
	const uint32_t d = fork_stack.depth, total = d + fork_stack.skip;
	uint64_t h = g->head_own;
	if (!fork_stack.valid || !rec_ring_room(g, h, 2 * (uint64_t)d + 1 + REC_SLACK)) {
		for (uint32_t k = 0; k < total; k++)
			rec_noring_begin(r);
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
