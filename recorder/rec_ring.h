/*
 * recorder/rec_ring.h - a thread's ring: the slot layout, the owner's typed
 * puts and publication, the flusher's slot accessors. All static inline:
 * this is the hot path (rec_core.c pt_begin()/pt_end()/pt_metric()).
 *
 * Algorithm (single producer = owning thread, single consumer = flusher).
 * Free-running uint64_t indices: head (next slot the owner writes) and tail
 * (next slot the flusher reads); invariant 0 <= head - tail <= capacity
 * (struct rec_ring, rec_internal.h, which also has the synchronization
 * table). The owner writes a record's slots at head_own, head_own + 1, ...
 * with plain stores (the rec_ring_put_*() functions), then makes them
 * visible with one release store of head, rec_ring_publish() [P1]; the
 * flusher loads head with acquire [C1], copies the slots out, and frees
 * them with a release store of tail [C2] (rec_flush.c drain()); the owner
 * reloads tail with acquire [P2], rec_ring_room(), only when its cached
 * copy says the ring is too full. A record of several slots is published
 * by one head store, so the flusher always sees it whole.
 *
 * Overflow policy (losses keep nesting intact): the owner tracks `depth`,
 * the number of recorded sections still open. A BEGIN is admitted only if,
 * after it, the ring still has room for every pending END (depth + 1) plus
 * REC_SLACK; otherwise the section is dropped whole: skip_depth counts the
 * dropped section and everything begun inside it, whose records are counted
 * in lost_records/lost_sections and never written. END of a recorded
 * section always fits because its slot was reserved at BEGIN; every other
 * record asks for room for itself plus depth.
 *
 * Slot layout (struct rec_slot, 16 bytes; the flusher transcodes each
 * record to its doc/trace-format.md §4 record). A record is one head slot
 * and, for some kinds, value slots after it (only their `a` is used; their
 * tag and id are 0):
 *
 *   kind (tag & 0xff) | a            | arg (tag >> 8) | id    | value slots
 *   ------------------+--------------+----------------+-------+------------------------
 *   SLOT_BEGIN        | ticks        | 0              | id    | -
 *   SLOT_END          | ticks        | 0              | id    | -
 *   SLOT_METRIC       | value        | metric kind    | 0     | -
 *   SLOT_TRANSFER     | bytes        | direction      | 0     | -
 *   SLOT_COUNTER      | ticks        | 0              | id    | value
 *   SLOT_ERROR        | ticks        | error code     | count | -
 *   SLOT_INSTANT      | ticks        | 0              | id    | -
 *   SLOT_ASYNC_BEGIN  | ticks        | 0              | id    | async id
 *   SLOT_ASYNC_END    | ticks        | 0              | 0     | async id
 *   SLOT_GPU_LAUNCH   | ticks        | device         | id    | stream, seq; then the
 *                     |              |                |       | section's SLOT_BEGIN, same ticks
 *   SLOT_GPU_RANGE    | launch ticks | device         | id    | GPU start, GPU end (host
 *                     |              |                |       | ticks), seq, stream
 *
 * Only the owning thread calls the rec_ring_*() functions below (they
 * touch the owner-hot group of struct rec_ring); only the flusher calls
 * rec_slot_kind(), rec_slot_arg() and rec_slot_value() on slots below a
 * head it loaded [C1].
 */
#ifndef PTZ_REC_RING_H
#define PTZ_REC_RING_H

#include <stdatomic.h> /* atomic_load_explicit, atomic_store_explicit */
#include <stdbool.h>   /* bool */
#include <stdint.h>    /* uint32_t, uint64_t */

#include "common/compiler.h"       /* likely */
#include "recorder/rec_internal.h" /* struct rec_ring, REC_STOP_STACK */

/* Slot kinds (ring only): the layout table above says what each carries. */
enum rec_slot_kind {
	SLOT_BEGIN = 1,
	SLOT_END = 2,
	SLOT_METRIC = 3,
	SLOT_TRANSFER = 4,
	SLOT_COUNTER = 5,
	SLOT_ERROR = 7,
	SLOT_INSTANT = 8,
	SLOT_ASYNC_BEGIN = 9,
	SLOT_ASYNC_END = 10,
	SLOT_GPU_LAUNCH = 11,
	SLOT_GPU_RANGE = 12
};
/* Slots taken by each multi-slot kind (the flusher consumes them together). */
#define REC_SLOTS_COUNTER 2
#define REC_SLOTS_ASYNC 2
#define REC_SLOTS_GPU_LAUNCH 3
#define REC_SLOTS_GPU_RANGE 5

struct rec_slot {
	uint64_t a;   /* ticks, or a value: by kind (table above) */
	uint32_t tag; /* enum rec_slot_kind in bits 0-7, its argument in bits 8-31 */
	uint32_t id;  /* a string id, or ERROR's count */
};
_Static_assert(sizeof(struct rec_slot) == 16, "a slot is 16 bytes");

/* ---------------------------------------------------------------- owner */

/* Slots a record of @n slots needs free (the overflow policy above): its
 * own and one for each pending END. A 64-bit sum, as the checks compute. */
static inline uint64_t rec_ring_need(const struct rec_ring *g, uint64_t n)
{
	return g->depth + n;
}

/* True if @need slots fit after head @h by the owner's cached tail (no
 * shared load: the hot path's check). */
static inline bool rec_ring_fits_cached(const struct rec_ring *g, uint64_t h, uint64_t need)
{
	return h - g->tail_cache + need <= g->cap;
}

/* True if @need slots fit after head @h, reloading tail when the cached
 * copy says they do not. */
static inline bool rec_ring_room(struct rec_ring *g, uint64_t h, uint64_t need)
{
	if (likely(rec_ring_fits_cached(g, h, need)))
		return true;
	/* [P2] acquire: the flusher finished reading slots before it moved
	 * tail. Pairs with [C2] in rec_flush.c drain(). */
	g->tail_cache = atomic_load_explicit(&g->tail, memory_order_acquire);
	return rec_ring_fits_cached(g, h, need);
}

/* Adds @n to one of the ring's loss/error counters (owner only). */
static inline void rec_ring_bump(_Atomic uint64_t *c, uint64_t n)
{
	/* single writer (the owner): a relaxed load+store is an increment
	 * that readers see whole (no torn 64-bit values) */
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n, memory_order_relaxed);
}

/* Makes every slot below @h visible to the flusher: the one commit of
 * each record, after its puts. */
static inline void rec_ring_publish(struct rec_ring *g, uint64_t h)
{
	g->head_own = h;
	/* [P1] release: slot contents before head. Pairs with [C1] in
	 * rec_flush.c drain(). */
	atomic_store_explicit(&g->head, h, memory_order_release);
}

/* Remembers @id as open at nesting level @level (0 = outermost) for pt_stop(). */
static inline void rec_ring_push_id(struct rec_ring *g, uint32_t level, uint32_t id)
{
	g->open_ids[level % REC_STOP_STACK] = (uint64_t)level << 32 | id;
}

/*
 * The puts: each writes one slot at index @h (masked here) with plain
 * stores, seen by nobody until rec_ring_publish() moves head past it. The
 * caller has checked the room (rec_ring_room()), or reserved it (END).
 */
static inline void rec_ring_put(struct rec_ring *g, uint64_t h, uint64_t a, uint32_t tag, uint32_t id)
{
	struct rec_slot *s = &g->slots[h & g->mask];
	s->a = a;
	s->tag = tag;
	s->id = id;
}

/* The head slot of a record of @kind with argument @arg (kinds with an
 * argument: METRIC, TRANSFER, ERROR, GPU_LAUNCH, GPU_RANGE). */
static inline void rec_ring_put_record(struct rec_ring *g, uint64_t h, uint32_t kind, uint32_t arg, uint64_t a,
				       uint32_t id)
{
	rec_ring_put(g, h, a, kind | arg << 8, id);
}

static inline void rec_ring_put_begin(struct rec_ring *g, uint64_t h, uint64_t ticks, uint32_t id)
{
	rec_ring_put(g, h, ticks, SLOT_BEGIN, id);
}

static inline void rec_ring_put_end(struct rec_ring *g, uint64_t h, uint64_t ticks, uint32_t id)
{
	rec_ring_put(g, h, ticks, SLOT_END, id);
}

/* A METRIC or TRANSFER: @tag is its kind | argument << 8, made by the caller. */
static inline void rec_ring_put_payload(struct rec_ring *g, uint64_t h, uint32_t tag, uint64_t v)
{
	rec_ring_put(g, h, v, tag, 0);
}

/* A value slot after a record's head slot. */
static inline void rec_ring_put_value(struct rec_ring *g, uint64_t h, uint64_t v)
{
	rec_ring_put(g, h, v, 0, 0);
}

/* ---------------------------------------------------------------- flusher */

static inline uint32_t rec_slot_kind(const struct rec_slot *s) { return s->tag & 0xff; }
static inline uint32_t rec_slot_arg(const struct rec_slot *s) { return s->tag >> 8; }

/* Value slot @k (1 = the first after the head slot) of the record whose
 * head slot is at index @t of @slots (a ring of @mask + 1 slots). */
static inline uint64_t rec_slot_value(const struct rec_slot *slots, uint64_t mask, uint64_t t, unsigned k)
{
	return slots[(t + k) & mask].a;
}

#endif /* PTZ_REC_RING_H */
