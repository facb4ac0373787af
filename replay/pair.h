/*
 * replay/pair.h - rule 9 of replay/replay.h: how the two halves of a
 * thing written apart pair. One implementation, used by the analyzer
 * (analyzer/ana_gpu.c: GPU sections and async ranges) and the exports
 * (viewer-export/pfx_ranges.c: the flow from a section to its GPU range,
 * async ranges), so the report and both viewers pair the same halves.
 *
 * The halves (doc/trace-format.md §4.4):
 *  - a GPU_LAUNCH (side A, an application thread) and the GPU_RANGE
 *    (side B, the "ptz-gpu" thread) with the same `seq`;
 *  - an ASYNC_BEGIN (side A) and an ASYNC_END (side B, any thread) with
 *    the same async id.
 *
 * The rule. Halves pair by key, whichever side is read first: the k-th
 * half of one side read under a key pairs with the k-th half of the other
 * side read under it (halves of one side wait in the order they were read,
 * first in, first out). Key 0 never pairs (a 1.0 GPU_RANGE body has no
 * seq; pt_async_begin() never returns 0). What still waits at the end is
 * unpaired: a launch without a range, a range without a launch, a begin
 * open at the end, an end without a begin.
 *
 * The recorder writes each key once per side, so there the pairs do not
 * depend on the order of reading. A crafted or merged trace can repeat a
 * key: within one thread the order read is record order for every reader,
 * so the pairs are the same for every reader whenever each side of a key
 * lies on one thread (the analyzer reads a trace with a "ptz-gpu" thread
 * in file order, the exports thread by thread).
 *
 * Memory: only the halves waiting, whatever the trace's length; read in
 * file order, that is the GPU work in flight plus the flusher's lag.
 * Single-threaded: one struct rp_pairs per pass.
 */
#ifndef PTZ_REPLAY_PAIR_H
#define PTZ_REPLAY_PAIR_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */
#include <stdint.h>  /* uint*_t */

/*
 * Open-addressing hash map from a 64-bit key to a fixed-size entry whose
 * first 8 bytes hold the key: linear probing, power-of-two capacity, load
 * at most 1/2, deletion by backward shift (no tombstones). Memory: at
 * most 4 slots per key at the peak number of live keys (@peak); it never
 * shrinks. Single-threaded.
 *
 * Why not liburcu's cds_lfht: its readers are single-threaded, only the
 * recorder may link liburcu (doc/style.md §1), and an RCU table would add
 * read-side locking, one allocation per entry and deferred frees for
 * nothing. This one stores entries inline (one allocation per growth).
 */
struct rp_map {
	uint8_t *slots; /* cap entries of esize bytes */
	uint8_t *used;  /* cap occupancy flags */
	size_t esize, cap, count, peak;
};
/* @esize: bytes per entry, at least 8 (the key). */
void rp_map_init(struct rp_map *m, size_t esize);
/* The entry of @key, or NULL. */
void *rp_map_find(const struct rp_map *m, uint64_t key);
/* Adds @key (which must be absent): a zeroed entry with its key set, or NULL on ENOMEM. */
void *rp_map_add(struct rp_map *m, uint64_t key);
/* Removes @entry, a pointer returned by rp_map_find()/rp_map_add() since the last change. */
void rp_map_remove(struct rp_map *m, void *entry);
/* Calls @fn on every entry, in slot order. */
void rp_map_each(const struct rp_map *m, void (*fn)(void *ctx, const void *entry), void *ctx);
/* Frees the storage; the map stays usable (empty, same esize). */
void rp_map_free(struct rp_map *m);

/* The two sides of a pair. */
enum rp_side {
	RP_SIDE_A = 0, /* GPU_LAUNCH; ASYNC_BEGIN */
	RP_SIDE_B = 1, /* GPU_RANGE; ASYNC_END */
};

/* rp_pairs_meet()'s outcome. */
enum rp_meet {
	RP_PAIRED = 1,  /* the half paired: its partner's payload copied out */
	RP_WAITS = 0,   /* the half waits for its partner */
	RP_NO_KEY = -1, /* key 0: never pairs, not stored (count it unpaired) */
	RP_NOMEM = -2,  /* out of memory: the half is dropped (count it unpaired) */
};

/** struct rp_pairs - the halves waiting, by key. Initialize with rp_pairs_init(). */
struct rp_pairs {
	struct rp_map keys; /* key -> its queue of waiting halves (one side) */
	uint8_t *pool;      /* waiting halves: a next index and the payload */
	size_t payload;     /* bytes of payload per half */
	size_t node;        /* bytes per pool node */
	uint32_t npool, cpool, free_head;
	size_t waiting, peak; /* halves waiting now, and at most so far */
};

/* @payload: bytes the consumer keeps with a waiting half (0 allowed). */
void rp_pairs_init(struct rp_pairs *p, size_t payload);

/*
 * rp_pairs_meet() - One half is read: pair it with the first half of the
 * other side waiting under @key, or queue it behind the halves of its own
 * side waiting there.
 * @p:       the pairs
 * @key:     seq or async id
 * @side:    RP_SIDE_A or RP_SIDE_B
 * @half:    @p->payload bytes kept while it waits (may be NULL when 0)
 * @partner: out, @p->payload bytes: the partner's payload when paired
 * Return: enum rp_meet.
 */
enum rp_meet rp_pairs_meet(struct rp_pairs *p, uint64_t key, enum rp_side side, const void *half, void *partner);

/*
 * rp_pairs_take() - rp_pairs_meet() for a reader that has read every half
 * of the other side already (the exports read all GPU ranges first): the
 * half pairs as rp_pairs_meet() would pair it, but is not stored when no
 * partner waits (none can come), so it costs no memory.
 * Return: RP_PAIRED (@partner filled), RP_WAITS (no partner; not stored) or
 *         RP_NO_KEY.
 */
enum rp_meet rp_pairs_take(struct rp_pairs *p, uint64_t key, enum rp_side side, void *partner);

/* Calls @fn on every half still waiting: its key, side and payload, in no
 * set order (sort if the order matters). */
void rp_pairs_each(const struct rp_pairs *p,
		   void (*fn)(void *ctx, uint64_t key, enum rp_side side, const void *half), void *ctx);

/* Frees everything; @p is then as after rp_pairs_init() with the same payload. */
void rp_pairs_free(struct rp_pairs *p);

/* An async range's name: its ASYNC_BEGIN's name id; the END's when the
 * begin's is 0 (an END may carry 0 or a name id, doc/trace-format.md §4.4). */
static inline uint32_t rp_async_name(uint32_t begin_id, uint32_t end_id)
{
	return begin_id ? begin_id : end_id;
}

#endif /* PTZ_REPLAY_PAIR_H */
