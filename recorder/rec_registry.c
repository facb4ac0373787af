/*
 * recorder/rec_registry.c - the registry of rings: a thread's ring attached
 * at its first record and retired at its exit, rings folded into the
 * recorder's totals when they leave, pt_stats(), and the pt_thread_name()
 * table.
 *
 * Rings are heap objects linked into r->rings, an RCU list (urcu-bp). A
 * thread registers on its first record (rec_ring_for(): mutex-protected
 * cds_list_add_tail_rcu). At thread exit a pthread key destructor marks the
 * ring OWNER_EXITED; the flusher drains it a last time, unlinks it and frees
 * it after a grace period (synchronize_rcu). pt_close() (rec_open.c) unlinks
 * every ring, waits one grace period, then marks rings of live threads
 * OWNER_DETACHED (their threads free them on their next call or at exit)
 * and frees the others. pt_stats() reads the live rings under
 * rcu_read_lock and the totals of the folded ones under a seqcount
 * (fold_seq), so a ring being folded counts exactly once.
 *
 * Memory order tags: [X1]/[X2] owner_state ([X1'] in rec_open.c
 * pt_close(), [X3] in rec_flush.c).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h> /* sched_yield */
#include <stdio.h> /* snprintf */
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h> /* nanosleep */
#include <unistd.h>

#include "common/struct_copy.h" /* copy_struct_out */
#include "recorder/rec_internal.h"
#include "recorder/rec_ring.h" /* struct rec_slot: the ring's size */

/* A ring no real ring can match: its gen is never a recorder generation.
 * Threads whose ring was retired point here so late calls (from other TLS
 * destructors) take the slow path and are counted. */
struct rec_ring rec_dead_ring = { .gen = UINT64_MAX };

__thread struct rec_ring *rec_tls __attribute__((tls_model("initial-exec")));
pthread_key_t rec_ring_key;
int rec_grace;

static void ring_retire(void *p);

void rec_registry_init(struct pt_recorder *r)
{
	pthread_key_create(&rec_ring_key, ring_retire);
	CDS_INIT_LIST_HEAD(&r->rings);
}

static void count_after_exit(struct pt_recorder *r)
{
	atomic_fetch_add_explicit(&r->after_exit, 1, memory_order_relaxed);
}

void rec_ring_free(struct rec_ring *g)
{
	free(g->slots);
	free(g);
}

/*
 * Registers a ring for the calling thread in generation @gen.
 * Returns NULL (and the call is dropped) on allocation failure.
 */
static PT_COLD struct rec_ring *ring_attach(struct pt_recorder *r, uint64_t gen)
{
	struct rec_ring *old = rec_tls;
	if (old == &rec_dead_ring) {
		count_after_exit(r);
		return NULL;
	}
	if (old) {
		int st = atomic_load_explicit(&old->owner_state, memory_order_acquire); /* [X2] */
		if (st == OWNER_DETACHED) {
			/* its recorder closed: ours to free; the key must not keep
			 * it for ring_retire() if no new ring replaces it below */
			pthread_setspecific(rec_ring_key, NULL);
			rec_ring_free(old);
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
		rec_ring_free(g);
		return NULL;
	}
	g->index = atomic_fetch_add_explicit(&r->next_thread_index, 1, memory_order_relaxed);
	PT_TSAN_RELEASE(g); /* the ring's fields before its list link (rcu_assign_pointer) */
	cds_list_add_tail_rcu(&g->node, &r->rings);
	atomic_fetch_add_explicit(&r->threads, 1, memory_order_relaxed);
	pthread_mutex_unlock(&r->reg_lock);
	PT_TESTPOINT("ring registered");
	pthread_setspecific(rec_ring_key, g);
	rec_tls = g;
	rec_fork_resume_sections(r, g);
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
	rec_tls = &rec_dead_ring;
	if (!g)
		return;
	g->end_ticks = rec_ticks();
	pthread_getname_np(pthread_self(), g->exit_name, sizeof(g->exit_name));
	int expect = OWNER_ACTIVE;
	/* [X1] release: end_ticks, name and every slot store before the
	 * flusher sees the ring as exited. Pairs with [X3] in rec_flush.c. */
	if (!atomic_compare_exchange_strong_explicit(&g->owner_state, &expect, OWNER_EXITED,
						     memory_order_acq_rel, memory_order_acquire))
		rec_ring_free(g); /* OWNER_DETACHED: the recorder let go of it */
}

struct rec_ring *rec_ring_for(struct pt_recorder *r)
{
	struct rec_ring *g = rec_tls;
	uint64_t gen = atomic_load_explicit(&r->gen, memory_order_acquire);
	if (gen == 0 && !(atomic_load_explicit(&r->reopen, memory_order_relaxed) && (gen = rec_child_reopen(r))))
		return NULL; /* closed (or in a fork child that does not record) */
	if (g == &rec_dead_ring) {
		count_after_exit(r);
		return NULL;
	}
	if (g && g->gen == gen)
		return g;
	return ring_attach(r, gen);
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
	rec_global_init();
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
	out->parts = atomic_load_explicit(&r->parts, memory_order_relaxed);
	out->rotate_errors = atomic_load_explicit(&r->rotate_errors, memory_order_relaxed);
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

/* ---------------------------------------------------------------- thread names */

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
