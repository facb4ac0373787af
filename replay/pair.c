/*
 * replay/pair.c - rule 9 of replay/replay.h: the pairing of halves
 * (replay/pair.h), and the hash map it keeps them in.
 */
#include <string.h>
#include <stdlib.h>

#include "replay/pair.h"

/* ---------------------------------------------------------------- the map */

/* Fibonacci hashing: seq and async ids are consecutive integers. */
static inline size_t map_home(const struct rp_map *m, uint64_t key)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & (m->cap - 1);
}

static inline uint64_t map_key(const struct rp_map *m, size_t i)
{
	uint64_t k;
	memcpy(&k, m->slots + i * m->esize, sizeof(k));
	return k;
}

void rp_map_init(struct rp_map *m, size_t esize)
{
	memset(m, 0, sizeof(*m));
	m->esize = esize;
}

void *rp_map_find(const struct rp_map *m, uint64_t key)
{
	if (!m->count)
		return NULL;
	for (size_t i = map_home(m, key);; i = (i + 1) & (m->cap - 1)) {
		if (!m->used[i])
			return NULL;
		if (map_key(m, i) == key)
			return m->slots + i * m->esize;
	}
}

/* Doubles the capacity (16 at first) and reinserts every entry. 0 or -1. */
static int map_grow(struct rp_map *m)
{
	size_t cap = m->cap ? 2 * m->cap : 16;
	uint8_t *slots = malloc(cap * m->esize), *used = calloc(cap, 1);
	if (!slots || !used) {
		free(slots);
		free(used);
		return -1;
	}
	struct rp_map n = { .slots = slots, .used = used, .esize = m->esize, .cap = cap, .count = m->count,
			     .peak = m->peak };
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->used[i])
			continue;
		size_t j = map_home(&n, map_key(m, i));
		while (n.used[j])
			j = (j + 1) & (cap - 1);
		memcpy(n.slots + j * n.esize, m->slots + i * m->esize, m->esize);
		n.used[j] = 1;
	}
	free(m->slots);
	free(m->used);
	*m = n;
	return 0;
}

void *rp_map_add(struct rp_map *m, uint64_t key)
{
	if (2 * (m->count + 1) > m->cap && map_grow(m))
		return NULL;
	size_t i = map_home(m, key);
	while (m->used[i])
		i = (i + 1) & (m->cap - 1);
	uint8_t *e = m->slots + i * m->esize;
	memset(e, 0, m->esize);
	memcpy(e, &key, sizeof(key));
	m->used[i] = 1;
	if (++m->count > m->peak)
		m->peak = m->count;
	return e;
}

/*
 * Backward-shift deletion (Knuth 6.4, algorithm R): the entries after the
 * hole that could live in it (their home slot is not cyclically within
 * (hole, their slot]) move back, so every probe sequence stays unbroken.
 */
void rp_map_remove(struct rp_map *m, void *entry)
{
	size_t mask = m->cap - 1, hole = (size_t)((uint8_t *)entry - m->slots) / m->esize;
	for (size_t j = (hole + 1) & mask; m->used[j]; j = (j + 1) & mask) {
		size_t home = map_home(m, map_key(m, j));
		bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
		if (stays)
			continue;
		memcpy(m->slots + hole * m->esize, m->slots + j * m->esize, m->esize);
		hole = j;
	}
	m->used[hole] = 0;
	m->count--;
}

void rp_map_each(const struct rp_map *m, void (*fn)(void *ctx, const void *entry), void *ctx)
{
	for (size_t i = 0; i < m->cap; i++)
		if (m->used[i])
			fn(ctx, m->slots + i * m->esize);
}

void rp_map_free(struct rp_map *m)
{
	free(m->slots);
	free(m->used);
	size_t esize = m->esize;
	memset(m, 0, sizeof(*m));
	m->esize = esize;
}

/* ---------------------------------------------------------------- the pairs */

#define NODE_NONE UINT32_MAX

/* A key's queue of waiting halves, all of one side. */
struct pkey {
	uint64_t key;
	uint32_t head, tail; /* pool nodes, oldest first */
	uint8_t side;
};

void rp_pairs_init(struct rp_pairs *p, size_t payload)
{
	memset(p, 0, sizeof(*p));
	rp_map_init(&p->keys, sizeof(struct pkey));
	p->payload = payload;
	/* the next index, then the payload, 8-byte aligned */
	p->node = (sizeof(uint64_t) + payload + 7) & ~(size_t)7;
	p->free_head = NODE_NONE;
}

static inline uint8_t *node_at(const struct rp_pairs *p, uint32_t i)
{
	return p->pool + (size_t)i * p->node;
}

static inline uint32_t node_next(const struct rp_pairs *p, uint32_t i)
{
	uint32_t n;
	memcpy(&n, node_at(p, i), sizeof(n));
	return n;
}

static inline void node_set_next(struct rp_pairs *p, uint32_t i, uint32_t next)
{
	memcpy(node_at(p, i), &next, sizeof(next));
}

/* A free node (the free list first, then the pool grown), or NODE_NONE. */
static uint32_t node_alloc(struct rp_pairs *p)
{
	if (p->free_head != NODE_NONE) {
		uint32_t i = p->free_head;
		p->free_head = node_next(p, i);
		return i;
	}
	if (p->npool == p->cpool) {
		if (p->cpool >= NODE_NONE / 2)
			return NODE_NONE;
		uint32_t nc = p->cpool ? 2 * p->cpool : 16;
		uint8_t *q = realloc(p->pool, (size_t)nc * p->node);
		if (!q)
			return NODE_NONE;
		p->pool = q;
		p->cpool = nc;
	}
	return p->npool++;
}

static void node_release(struct rp_pairs *p, uint32_t i)
{
	node_set_next(p, i, p->free_head);
	p->free_head = i;
}

/* Pops the oldest half waiting in @e into @partner. */
static void pop_oldest(struct rp_pairs *p, struct pkey *e, void *partner)
{
	const uint32_t h = e->head;
	if (p->payload)
		memcpy(partner, node_at(p, h) + sizeof(uint64_t), p->payload);
	e->head = node_next(p, h);
	node_release(p, h);
	p->waiting--;
	if (e->head == NODE_NONE)
		rp_map_remove(&p->keys, e);
}

/* rp_pairs_take(); *@e: @key's entry when the half would wait behind its
 * own side there (NULL: no half waits under @key). */
static enum rp_meet take(struct rp_pairs *p, uint64_t key, enum rp_side side, void *partner, struct pkey **e)
{
	*e = NULL;
	if (key == 0)
		return RP_NO_KEY;
	struct pkey *k = rp_map_find(&p->keys, key);
	if (k && k->side != (uint8_t)side) { /* the oldest half of the other side */
		pop_oldest(p, k, partner);
		return RP_PAIRED;
	}
	*e = k;
	return RP_WAITS;
}

enum rp_meet rp_pairs_take(struct rp_pairs *p, uint64_t key, enum rp_side side, void *partner)
{
	struct pkey *e;
	return take(p, key, side, partner, &e);
}

enum rp_meet rp_pairs_meet(struct rp_pairs *p, uint64_t key, enum rp_side side, const void *half, void *partner)
{
	struct pkey *e;
	const enum rp_meet m = take(p, key, side, partner, &e);
	if (m != RP_WAITS)
		return m;
	const uint32_t n = node_alloc(p);
	if (n == NODE_NONE)
		return RP_NOMEM;
	if (!e) {
		if (!(e = rp_map_add(&p->keys, key))) {
			node_release(p, n);
			return RP_NOMEM;
		}
		e->side = (uint8_t)side;
		e->head = n;
	} else { /* behind the halves of its side already waiting */
		node_set_next(p, e->tail, n);
	}
	e->tail = n;
	node_set_next(p, n, NODE_NONE);
	if (p->payload)
		memcpy(node_at(p, n) + sizeof(uint64_t), half, p->payload);
	if (++p->waiting > p->peak)
		p->peak = p->waiting;
	return RP_WAITS;
}

struct each_ctx {
	const struct rp_pairs *p;
	void (*fn)(void *ctx, uint64_t key, enum rp_side side, const void *half);
	void *ctx;
};

static void each_key(void *ctx, const void *entry)
{
	const struct each_ctx *x = ctx;
	const struct pkey *e = entry;
	for (uint32_t i = e->head; i != NODE_NONE; i = node_next(x->p, i))
		x->fn(x->ctx, e->key, (enum rp_side)e->side, node_at(x->p, i) + sizeof(uint64_t));
}

void rp_pairs_each(const struct rp_pairs *p,
		   void (*fn)(void *ctx, uint64_t key, enum rp_side side, const void *half), void *ctx)
{
	struct each_ctx x = { p, fn, ctx };
	rp_map_each(&p->keys, each_key, &x);
}

void rp_pairs_free(struct rp_pairs *p)
{
	rp_map_free(&p->keys);
	free(p->pool);
	rp_pairs_init(p, p->payload);
}
