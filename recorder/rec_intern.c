/*
 * recorder/rec_intern.c - process-global intern table for section/counter
 * names and timing domains.
 *
 * Lookup is lock-free: a liburcu RCU hash table (cds_lfht, urcu-bp flavor)
 * keyed by XXH3 of (domain, name). Insertion takes a mutex, rechecks, then
 * publishes in this order: the id->string slot [I1] (release), then the hash
 * node. A thread can only learn an id through the table or through its own
 * earlier insertion, so anyone holding an id (and the flusher, which sees
 * ids through ring records published after they were obtained) finds its
 * slot filled. Strings are never freed: ids stay valid across
 * pt_close()/pt_open() for the life of the process.
 *
 * Names that get no id (table full, allocation failure): two entries are
 * kept out of the hash table, in static storage: "(unnamed)", the id every
 * such name gets, so it never aliases a real name, and the name of the
 * counter that tells how many there were (pt_intern_in(), recorder.h).
 * Each takes the next id the first time it is needed, like any name;
 * ordinary names stop two ids short of the format's bound
 * (rec_intern_limit), so both always find one. rec_intern_get() serves
 * them from here.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "recorder/rec_internal.h"

#define SEG_BITS 12
#define SEG_SIZE (1u << SEG_BITS)
#define MAX_SEGS (PT_FMT_MAX_STRING_ID / SEG_SIZE)
#define MAX_DOMAINS 4096

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct cds_lfht *table;
typedef _Atomic(struct rec_str *) str_slot;
static _Atomic(str_slot *) segs[MAX_SEGS]; /* written under lock (release), read with acquire */
static _Atomic uint32_t next_id = 1;                  /* [I2] release after the slot */
static char *domains[MAX_DOMAINS];
static _Atomic uint32_t ndomains = 1;                 /* id 0 = default domain */

/* Ids ordinary names may take: [1, rec_intern_limit). Lowered only by
 * tests, before the first intern (rec_internal.h). */
uint32_t rec_intern_limit = PT_FMT_MAX_STRING_ID - 2;

/* The entries for names that get no id: [SPECIAL_COUNT] names the counter,
 * [SPECIAL_UNNAMED] is "(unnamed)". Static: a failed allocation must not
 * take them away. special_id[k] is 0 until entry k has an id; written
 * once under the lock, [I5] release, read with acquire [I6]. */
enum { SPECIAL_COUNT, SPECIAL_UNNAMED, NSPECIAL };
static const char *const special_name[NSPECIAL] = { "ptz: names interned as (unnamed)", "(unnamed)" };
static union { /* room for the name; not an array: that is not ISO C (flexible member) */
	struct rec_str s;
	char bytes[sizeof(struct rec_str) + 40];
} special_count, special_unnamed;
static struct rec_str *const special[NSPECIAL] = { &special_count.s, &special_unnamed.s };
static _Atomic uint32_t special_id[NSPECIAL];
static _Atomic uint64_t unnamed_count; /* names given the id of "(unnamed)" */

static void init(void)
{
	rec_pin_self(); /* the table's resize worker runs in liburcu, loaded with us */
	table = cds_lfht_new(1024, 1024, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING, NULL);
}

/* The table's creation takes liburcu's locks and starts its resize
 * worker: done at pt_open(), before a fork can copy them held (a child
 * copies an open recorder's table, created), and otherwise at the first
 * name lookup, when no fork takes the recorder's locks (rec_fork.c). */
bool rec_intern_init(void)
{
	pthread_once(&once, init);
	return table != NULL;
}

struct key {
	uint32_t domain;
	const char *name;
	size_t len;
};

static int match(struct cds_lfht_node *node, const void *k)
{
	const struct rec_str *s = caa_container_of(node, struct rec_str, node);
	const struct key *key = k;
	return s->domain == key->domain && s->len == key->len && memcmp(s->name, key->name, key->len) == 0;
}

static unsigned long hash_key(const struct key *k)
{
	return (unsigned long)XXH3_64bits_withSeed(k->name, k->len, k->domain);
}

static uint32_t find(const struct key *k, unsigned long h)
{
	struct cds_lfht_iter it;
	uint32_t id = 0;
	urcu_bp_read_lock();
	cds_lfht_lookup(table, h, match, k, &it);
	struct cds_lfht_node *n = cds_lfht_iter_get_node(&it);
	if (n) {
		PT_TSAN_ACQUIRE(n);
		id = caa_container_of(n, struct rec_str, node)->id;
	}
	urcu_bp_read_unlock();
	return id;
}

static uint32_t insert(const struct key *k, unsigned long h)
{
	pthread_mutex_lock(&lock);
	uint32_t id = find(k, h);
	if (id)
		goto out;
	id = atomic_load_explicit(&next_id, memory_order_relaxed); /* writers hold the lock */
	if (id >= rec_intern_limit) {
		id = 0;
		goto out;
	}
	struct rec_str *s = calloc(1, sizeof(*s) + k->len + 1);
	unsigned seg = id >> SEG_BITS;
	str_slot *slots = atomic_load_explicit(&segs[seg], memory_order_relaxed); /* lock held */
	if (s && !slots) {
		slots = calloc(SEG_SIZE, sizeof(*slots));
		/* release: the zeroed segment before its pointer (pairs with [I3]) */
		if (slots)
			atomic_store_explicit(&segs[seg], slots, memory_order_release);
	}
	if (!s || !slots) {
		free(s);
		id = 0;
		goto out;
	}
	s->id = id;
	s->domain = k->domain;
	s->len = k->len;
	memcpy(s->name, k->name, k->len);
	/* [I1] release: the string's bytes before its slot pointer.
	 * Pairs with [I3] in rec_intern_get(). */
	atomic_store_explicit(&slots[id & (SEG_SIZE - 1)], s, memory_order_release);
	/* [I2] release: the slot before the count that covers it. Pairs with
	 * [I4] in rec_intern_next_id(). */
	atomic_store_explicit(&next_id, id + 1, memory_order_release);
	cds_lfht_node_init(&s->node);
	PT_TSAN_RELEASE(&s->node); /* node contents before cds_lfht_add publishes it */
	urcu_bp_read_lock();
	cds_lfht_add(table, h, &s->node);
	urcu_bp_read_unlock();
out:
	pthread_mutex_unlock(&lock);
	return id;
}

/* The id of special entry @k, given the next id the first time. Never 0:
 * ordinary names leave two ids free for the two entries. */
static uint32_t special_get(unsigned k)
{
	uint32_t id = atomic_load_explicit(&special_id[k], memory_order_acquire);
	if (id)
		return id;
	pthread_mutex_lock(&lock);
	id = atomic_load_explicit(&special_id[k], memory_order_relaxed); /* lock held */
	if (!id) {
		id = atomic_load_explicit(&next_id, memory_order_relaxed);
		assert(id < PT_FMT_MAX_STRING_ID); /* rec_intern_limit leaves room */
		struct rec_str *s = special[k];
		s->id = id;
		s->len = strlen(special_name[k]);
		memcpy(s->name, special_name[k], s->len + 1);
		/* [I5] release: the entry before its id. Pairs with [I6] in
		 * rec_intern_get(). */
		atomic_store_explicit(&special_id[k], id, memory_order_release);
		/* [I2] release, as in insert() */
		atomic_store_explicit(&next_id, id + 1, memory_order_release);
	}
	pthread_mutex_unlock(&lock);
	return id;
}

/* The placeholder id (never 0) of a child whose fork could not take the
 * table's lock (rec_fork_unsafe): it, or liburcu's registry lock, may have
 * been held by a thread that is not in the child. Such a child records
 * nothing. */
static uint32_t fork_child_id(void)
{
	uint32_t u = atomic_load_explicit(&special_id[SPECIAL_UNNAMED], memory_order_relaxed);
	return u ? u : 1;
}

static uint32_t intern(uint32_t domain, const char *name)
{
	if (rec_fork_unsafe)
		return fork_child_id();
	pthread_once(&once, init);
	if (!name)
		name = "";
	struct key k = { domain, name, strlen(name) };
	unsigned long h = hash_key(&k);
	uint32_t id = find(&k, h);
	if (!id)
		id = insert(&k, h);
	return id; /* 0: table full or no memory */
}

/* intern(); a name that gets no id of its own gets the id of "(unnamed)",
 * counted: the count is sampled on @r (recorder.h, pt_intern_in()). */
static uint32_t intern_counted(pt_recorder *r, uint32_t domain, const char *name)
{
	uint32_t id = intern(domain, name);
	if (id)
		return id;
	id = special_get(SPECIAL_UNNAMED);
	uint32_t counter = special_get(SPECIAL_COUNT);
	uint64_t n = atomic_fetch_add_explicit(&unnamed_count, 1, memory_order_relaxed) + 1;
	pt_counter(r, counter, (int64_t)n);
	return id;
}

uint32_t rec_intern_lookup(uint32_t domain, const char *name)
{
	if (rec_fork_unsafe)
		return fork_child_id();
	pthread_once(&once, init);
	if (!name)
		name = "";
	struct key k = { domain, name, strlen(name) };
	return find(&k, hash_key(&k));
}

uint32_t pt_intern_in(pt_recorder *r, uint32_t domain, const char *name)
{
	return intern_counted(r, domain, name);
}

uint32_t pt_intern(pt_recorder *r, const char *name)
{
	return intern_counted(r, 0, name);
}

uint32_t pt_domain(pt_recorder *r, const char *name)
{
	(void)r;
	if (!name || !*name || rec_fork_unsafe)
		return 0;
	pthread_mutex_lock(&lock);
	uint32_t n = atomic_load_explicit(&ndomains, memory_order_relaxed), id = 0;
	for (uint32_t i = 1; i < n; i++)
		if (strcmp(domains[i], name) == 0) {
			id = i;
			goto out;
		}
	if (n < MAX_DOMAINS && (domains[n] = strdup(name))) {
		id = n;
		/* release: the name before the count (pairs with rec_domain_count) */
		atomic_store_explicit(&ndomains, n + 1, memory_order_release);
	}
out:
	pthread_mutex_unlock(&lock);
	return id;
}

bool rec_intern_fork_trylock(void)
{
	return pthread_mutex_trylock(&lock) == 0;
}

void rec_intern_fork_unlock(void)
{
	pthread_mutex_unlock(&lock);
}

uint32_t rec_domain_count(void) { return atomic_load_explicit(&ndomains, memory_order_acquire); }
const char *rec_domain_name(uint32_t id) { return domains[id]; }

uint32_t rec_intern_next_id(void)
{
	/* [I4] acquire: pairs with [I2]. */
	return atomic_load_explicit(&next_id, memory_order_acquire);
}

struct rec_str *rec_intern_get(uint32_t id)
{
	/* [I6] acquire: pairs with [I5] in special_get(). */
	for (unsigned k = 0; k < NSPECIAL; k++)
		if (id == atomic_load_explicit(&special_id[k], memory_order_acquire))
			return special[k];
	if (id >= PT_FMT_MAX_STRING_ID)
		return NULL;
	str_slot *seg = atomic_load_explicit(&segs[id >> SEG_BITS], memory_order_acquire);
	if (!seg)
		return NULL;
	/* [I3] acquire: pairs with [I1]. */
	return atomic_load_explicit(&seg[id & (SEG_SIZE - 1)], memory_order_acquire);
}
