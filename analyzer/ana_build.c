/*
 * analyzer/ana_build.c - one streaming pass over a trace: rebuild nested
 * sections per thread and aggregate them by call path and by name.
 *
 * Per thread: a stack of open frames. BEGIN pushes the call-path node
 * child(top, id); END pops it and folds its duration, self time
 * (duration minus the children's durations), metrics and transfers into the
 * node's aggregate and into the flat by-name aggregate. A metric or
 * transfer belongs to the innermost open frame; at END the frame's
 * inclusive amounts roll up into its parent (doc/analyzer-output.md §2).
 *
 * Recursion: the flat by-name view is built from the finished tree; a
 * node adds its inclusive time only when no ancestor has its name (a
 * property of the path), so a section nested in itself is not counted
 * twice. Self time and counts always add.
 *
 * Misuse and damage: an END that does not match the innermost section
 * closes it if the name is open deeper (the frames above count as
 * unmatched), else it is counted and ignored; a per-thread chunk sequence
 * gap drops the open stack (its frames count as lost to the gap); frames
 * still open at the end are counted, not aggregated. A LOSS record marks
 * every frame open at that point: their rows are flagged.
 *
 * Reading order: one thread at a time (its tree stays hot in the cache),
 * except for a trace with the recorder's CUDA thread ("ptz-gpu") or more
 * than 64 threads (each thread's walk would rescan the chunk index), read in
 * file order so that GPU launches and ranges pair soon (ana_gpu.c); the
 * per-thread state makes every figure independent of the order, and the
 * merged tree is renumbered in thread order afterwards. With -j, such a
 * trace (at most 64 threads) is read thread by thread by reader threads
 * that defer the GPU records and pair them in file order after
 * (replay_deferred()). The format 1.1 kinds (GPU, async, instant) leave
 * the hot loop through one branch in on_record()'s default case; BEGIN
 * and END do no GPU work.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/ana.h"
#include "analyzer/ana_pass.h"
#include "trace-format/fmt_internal.h"

#define PT_NOINLINE_ __attribute__((noinline))

/* Adds @self and @incl to metric slot @k of open frame @f (initializing
 * the slot on its first amount: struct frame_m). */
static inline void frame_m_add(struct frame *f, int k, uint64_t self, uint64_t incl)
{
	if (f->mmask & (1u << k)) {
		ANA_SAT_ADD(f->m.metric_self[k], self);
		ANA_SAT_ADD(f->m.metric_incl[k], incl);
	} else {
		f->m.metric_self[k] = self;
		f->m.metric_incl[k] = incl;
		f->mmask |= (uint8_t)(1u << k);
	}
}

/* @f's inclusive metric sums in full, or NULL when it has none: the slots
 * never initialized are set to 0 (and marked) first. */
static inline const uint64_t *frame_m_incl(struct frame *f)
{
	if (!f->mmask)
		return NULL;
	for (int k = 0; k < ANA_NMETRIC; k++)
		if (!(f->mmask & (1u << k)))
			f->m.metric_incl[k] = f->m.metric_self[k] = 0;
	f->mmask = (1u << ANA_NMETRIC) - 1;
	return f->m.metric_incl;
}

static inline struct frame_x *frame_x(struct frame *f)
{
	if (!f->has_x) {
		memset(&f->x, 0, sizeof(f->x));
		f->has_x = true;
	}
	return &f->x;
}

/* First child of @p whose name id is >= @id (children sorted by id). */
static inline uint32_t child_lower(const struct ana_node *p, uint32_t id)
{
	const uint32_t *ci = p->child_id;
	uint32_t lo = 0, hi = p->nchild;
	if (hi <= 8) { /* most nodes: a short scan of one line */
		while (lo < hi && ci[lo] < id)
			lo++;
		return lo;
	}
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (ci[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

uint32_t ana_tree_find(const struct ana_tree *t, uint32_t parent, uint32_t id)
{
	const struct ana_node *p = &t->n[parent];
	uint32_t lo = child_lower(p, id);
	return lo < p->nchild && p->child_id[lo] == id ? p->child[lo] : UINT32_MAX;
}

uint32_t ana_tree_child(struct ana_tree *t, uint32_t parent, uint32_t id)
{
	struct ana_node *p = &t->n[parent];
	uint32_t lo = child_lower(p, id);
	if (lo < p->nchild && p->child_id[lo] == id)
		return p->child[lo];
	if (t->count == t->cap) {
		if (ana_nomem_seen())
			return UINT32_MAX; /* the run fails anyway */
		uint32_t nc = t->cap ? t->cap * 2 : 64;
		struct ana_node *n = realloc(t->n, nc * sizeof(*n));
		if (!n) {
			ana_nomem_note();
			return UINT32_MAX;
		}
		t->n = n;
		t->cap = nc;
		p = &t->n[parent];
	}
	if (p->nchild == p->cchild) {
		uint32_t nc = p->cchild ? p->cchild * 2 : 4;
		uint32_t *c = realloc(p->child, nc * sizeof(*c));
		if (!c) {
			ana_nomem_note();
			return UINT32_MAX;
		}
		p->child = c;
		uint32_t *ci = realloc(p->child_id, nc * sizeof(*ci));
		if (!ci) {
			ana_nomem_note();
			return UINT32_MAX; /* child grown, cchild not: consistent */
		}
		p->child_id = ci;
		p->cchild = nc;
	}
	uint32_t idx = t->count++;
	struct ana_node *n = &t->n[idx];
	memset(n, 0, sizeof(*n));
	n->id = id;
	n->parent = parent;
	n->depth = t->n[parent].depth + 1;
	memmove(&p->child[lo + 1], &p->child[lo], (p->nchild - lo) * sizeof(*p->child));
	memmove(&p->child_id[lo + 1], &p->child_id[lo], (p->nchild - lo) * sizeof(*p->child_id));
	p->child[lo] = idx;
	p->child_id[lo] = id;
	p->nchild++;
	return idx;
}

static int tree_init(struct ana_tree *t)
{
	t->cap = 2; /* grows by doubling: a thread of one section costs two nodes, not 64 */
	t->n = calloc(t->cap, sizeof(*t->n));
	if (!t->n)
		return -ENOMEM;
	t->count = 1; /* root */
	return 0;
}

void ana_tree_free(struct ana_tree *t)
{
	for (uint32_t i = 0; i < t->count; i++) {
		free(t->n[i].child);
		free(t->n[i].child_id);
		ana_agg_free(&t->n[i].agg);
	}
	free(t->n);
	memset(t, 0, sizeof(*t));
}

static PT_NOINLINE_ int32_t *open_top_grow(struct tstate *ts, uint32_t id);
static inline int32_t *open_top_of(struct tstate *ts, uint32_t id)
{
	if (__builtin_expect(id < ts->nopen_top, 1))
		return &ts->open_top[id];
	return open_top_grow(ts, id);
}

uint64_t ana_ticks_ns_lim(double ns_per_tick)
{
	const uint64_t top = (uint64_t)INT64_MAX + 1;
	if (!(ns_per_tick == ns_per_tick) || ns_per_tick - ns_per_tick != 0)
		return 0; /* NaN or infinite: every tick count takes the checked path */
	if (ns_per_tick <= 0) /* 0: x = 0.5; below (no slope the reader builds): checked */
		return ns_per_tick == 0 ? top : 0;
	const double t = 9.0e18 / ns_per_tick;
	uint64_t lim = t >= 9.2e18 ? top : (uint64_t)t;
	while (lim && !((double)(int64_t)(lim - 1) * ns_per_tick + 0.5 < 9.2e18))
		lim -= lim / 1024 + 1;
	return lim;
}

uint64_t ana_ticks_ns_big(double ns_per_tick, uint64_t ticks)
{
	return ana_sat_u64((double)ticks * ns_per_tick + 0.5);
}

void *ana_grow_by_id(void *arr, uint32_t *n, uint32_t id, size_t esize, uint32_t limit)
{
	if (id < *n)
		return arr;
	if (id >= limit)
		return NULL; /* no name has it: bounded by the trace's names (ana.h) */
	uint32_t nc = *n ? *n : 8;
	while (nc <= id)
		nc *= 2;
	if (nc > limit)
		nc = limit;
	uint8_t *p = realloc(arr, (size_t)nc * esize);
	if (!p) {
		ana_nomem_note();
		return NULL;
	}
	memset(p + (size_t)*n * esize, 0, (size_t)(nc - *n) * esize);
	*n = nc;
	return p;
}

/* id >= ts->id_limit (no name has it): NULL, recursion not tracked */
static int32_t *open_top_grow(struct tstate *ts, uint32_t id)
{
	uint32_t old = ts->nopen_top;
	int32_t *p = ana_grow_by_id(ts->open_top, &ts->nopen_top, id, sizeof(*p), ts->id_limit);
	if (!p)
		return NULL;
	for (uint32_t i = old; i < ts->nopen_top; i++)
		p[i] = -1; /* no open frame */
	ts->open_top = p;
	return &ts->open_top[id];
}

static PT_NOINLINE_ struct flat_incl *fi_grow(struct tstate *ts, uint32_t id);
static inline struct flat_incl *fi_of(struct tstate *ts, uint32_t id)
{
	if (__builtin_expect(id < ts->nfi, 1))
		return &ts->fi[id];
	return fi_grow(ts, id);
}

static struct flat_incl *fi_grow(struct tstate *ts, uint32_t id)
{
	struct flat_incl *p = ana_grow_by_id(ts->fi, &ts->nfi, id, sizeof(*p), ts->id_limit);
	if (!p)
		return NULL;
	ts->fi = p;
	return &ts->fi[id];
}

/* Hands recursion-safe inclusive sums up to the nearest open same-name
 * frame (which, if kept, will count itself instead), or into the total.
 * @incl (ANA_NMETRIC) and @xfer (ANA_DIRS) may be NULL: all zero. */
static inline void flat_pass_up(struct tstate *ts, uint32_t id, int32_t prev_same, uint64_t ns, const uint64_t *incl,
				const uint64_t *xfer)
{
	if (prev_same >= 0) {
		struct frame *a = &ts->st[prev_same];
		if (!a->has_pending) {
			a->has_pending = true;
			a->pending_ns = 0;
			memset(a->pending_incl, 0, sizeof(a->pending_incl));
			memset(a->pending_xfer, 0, sizeof(a->pending_xfer));
		}
		ANA_SAT_ADD(a->pending_ns, ns);
		for (int k = 0; incl && k < ANA_NMETRIC; k++)
			ANA_SAT_ADD(a->pending_incl[k], incl[k]);
		for (int k = 0; xfer && k < ANA_DIRS; k++)
			ANA_SAT_ADD(a->pending_xfer[k], xfer[k]);
		return;
	}
	struct flat_incl *fi = fi_of(ts, id);
	if (!fi)
		return;
	ANA_SAT_ADD(fi->total_ns, ns);
	for (int k = 0; incl && k < ANA_NMETRIC; k++)
		ANA_SAT_ADD(fi->metric_incl[k], incl[k]);
	for (int k = 0; xfer && k < ANA_DIRS; k++)
		ANA_SAT_ADD(fi->xfer_incl[k], xfer[k]);
}

/* No flat row for an id no name has (>= ts->id_limit): NULL. */
static struct ana_agg *flat_of(struct tstate *ts, uint32_t id)
{
	struct ana_agg *f = ana_grow_by_id(ts->flat, &ts->nflat, id, sizeof(*f), ts->id_limit);
	if (!f)
		return NULL;
	ts->flat = f;
	return &ts->flat[id];
}

static PT_NOINLINE_ int hpend_grow(struct ana_hpend_set *s, uint32_t i)
{
	uint64_t nc = s->n ? s->n : 8; /* 64-bit: doubling past 2^31 must not wrap; 8 (one section's
					* thread): 100,000 threads of 256 lines each took 1.6 GB */
	while (nc <= i)
		nc *= 2;
	if (nc > UINT32_MAX)
		return -1;
	struct ana_hpend *p = aligned_alloc(64, (size_t)nc * sizeof(*p)); /* one line per path */
	if (!p) {
		ana_nomem_note();
		return -1;
	}
	if (s->n)
		memcpy(p, s->p, (size_t)s->n * sizeof(*p));
	memset(p + s->n, 0, (size_t)(nc - s->n) * sizeof(*p));
	free(s->p);
	s->p = p;
	s->n = nc;
	return 0;
}

/* Node @i's full pending line into its histogram (out of line: the node's
 * address is computed once every ANA_HPEND adds, not on each). */
static PT_NOINLINE_ void hpend_full(struct ana_tree *t, uint32_t i, struct ana_hpend *p)
{
	ana_hist_add_idx(&t->n[i].agg.hist, p->idx, ANA_HPEND);
	p->n = 0;
}

/* Duration @v into the histogram of node @i of @t, through the node's pending line. */
static inline void hpend_add(struct ana_hpend_set *s, uint32_t i, uint64_t v, struct ana_tree *t)
{
	if (__builtin_expect(i >= s->n, 0) && hpend_grow(s, i)) {
		ana_hist_add(&t->n[i].agg.hist, v, 1);
		return;
	}
	struct ana_hpend *p = &s->p[i];
	p->idx[p->n++] = (uint16_t)ana_hist_index(v);
	if (__builtin_expect(p->n == ANA_HPEND, 0))
		hpend_full(t, i, p);
}

/* Every pending add into the histograms of tree @t's nodes (end of the pass). */
static void hpend_flush(struct ana_hpend_set *s, struct ana_tree *t)
{
	for (uint32_t i = 0; i < s->n && i < t->count; i++)
		ana_hist_add_idx(&t->n[i].agg.hist, s->p[i].idx, s->p[i].n);
	free(s->p);
	s->p = NULL;
	s->n = 0;
}

/*
 * The pass's options as one argument of the always-inline section
 * functions: read_events() passes a constant for the common case (no
 * filter, merged percentiles only: `ptanalyze --report`), so its loop has
 * no test of either; other callers pass pass_mode(c).
 */
enum { MODE_KEEP_ALL = 1, MODE_MERGED_ONLY = 2, MODE_REMAP = 4, MODE_SAMPLES = 8 };
static inline unsigned pass_mode(const struct ctx *c)
{
	return (c->keep_all ? MODE_KEEP_ALL : 0) | (c->merged_only ? MODE_MERGED_ONLY : 0) |
	       (c->remap ? MODE_REMAP : 0) | (c->samples ? MODE_SAMPLES : 0);
}

uint32_t ana_remap_id(struct ctx *c, uint32_t id)
{
	if (!id)
		return 0;
	const struct ana_id_slot *e = rp_map_find(&c->ids, id);
	if (e)
		return e->slot;
	/* an id the string table does not define: the next slot */
	struct ana_result *res = c->res;
	if (res->nslots == UINT32_MAX) {
		c->nomem = true;
		return 0;
	}
	uint32_t *m = realloc(res->slot_id, ((size_t)res->nslots + 1) * sizeof(*m));
	if (!m) {
		c->nomem = true;
		return 0;
	}
	res->slot_id = m;
	struct ana_id_slot *n = rp_map_add(&c->ids, id);
	if (!n) {
		ana_nomem_note();
		c->nomem = true;
		return 0;
	}
	n->slot = res->nslots;
	m[res->nslots] = id;
	return res->nslots++;
}

/* The name-id mapping for the trace of c->res (ANA_MIN_NAME_IDS): none
 * for a dense id space, else a slot per defined name in id order. */
static int cmp_u32(const void *a, const void *b)
{
	const uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

static int ids_setup(struct ctx *c)
{
	struct ana_result *res = c->res;
	const size_t n = fmt_reader_string_count(res->rd);
	res->nnames = pt_reader_max_string_id(res->rd);
	if ((uint64_t)res->nnames <= 2 * (uint64_t)n + ANA_MIN_NAME_IDS) {
		res->name_id_limit = res->nnames + 1 > ANA_MIN_NAME_IDS ? res->nnames + 1 : ANA_MIN_NAME_IDS;
		return 0;
	}
	c->remap = true;
	rp_map_init(&c->ids, sizeof(struct ana_id_slot));
	res->slot_id = malloc((n + 1) * sizeof(*res->slot_id));
	if (!res->slot_id)
		return -ENOMEM;
	res->slot_id[0] = 0;
	for (size_t i = 0; i < n; i++)
		res->slot_id[i + 1] = fmt_reader_string_id(res->rd, i);
	qsort(res->slot_id + 1, n, sizeof(*res->slot_id), cmp_u32);
	for (size_t i = 1; i <= n; i++) {
		struct ana_id_slot *e = rp_map_add(&c->ids, res->slot_id[i]);
		if (!e) {
			ana_nomem_note();
			return -ENOMEM;
		}
		e->slot = (uint32_t)i;
	}
	res->nslots = (uint32_t)n + 1;
	res->nnames = res->nslots;
	res->name_id_limit = PT_FMT_MAX_STRING_ID; /* slots: as many as the ids met */
	return 0;
}

/*
 * Sampled requests (doc/analyzer-output.md §13, doc/trace-format.md §9.1).
 * A COUNTER named PT_FMT_SAMPLE_COUNTER arms the thread (ts->sarm); the
 * BEGIN that follows it at the same depth is a sampled root, and every
 * section closed on the thread until the root closes adds to its call
 * path's struct ana_est, summed per request and folded per request
 * (ana_est_fold()). Off the hot path: the record after a sampling COUNTER
 * is decoded by the general path (sample_follow(), on_record()), so the
 * fused BEGIN tests nothing, and an END inside a request leaves through
 * the test of ts->end_hook that the depth limit already needed.
 */
static PT_NOINLINE_ void sample_counter(struct ctx *c, struct tstate *ts, const struct pt_record *r)
{
	struct ana_sampling *sm = &c->res->sampling;
	const int64_t v = (int64_t)r->value;
	if (ts->sarm)
		sm->orphan++; /* the previous one was not followed by a BEGIN */
	ts->sarm = 0;
	if (v < 1 || v > PT_FMT_SAMPLE_ONE) {
		sm->invalid++;
		return;
	}
	ts->sarm = ts->depth + 1;
	ts->sarm_p = (double)v / PT_FMT_SAMPLE_ONE;
}

/* The BEGIN just pushed (frame ts->depth - 1) while the thread is armed. */
static PT_NOINLINE_ void sample_begin(struct ctx *c, struct tstate *ts)
{
	struct ana_sampling *sm = &c->res->sampling;
	const uint32_t armed = ts->sarm, i = ts->depth - 1;
	ts->sarm = 0;
	if (armed != ts->depth) { /* not at the COUNTER's depth (a crafted trace): not its weight */
		sm->orphan++;
		return;
	}
	const double p = ts->sarm_p;
	sm->p_min = !sm->requests || p < sm->p_min ? p : sm->p_min;
	sm->p_max = p > sm->p_max ? p : sm->p_max;
	sm->requests++;
	sm->est_requests += 1.0 / p;
	if (!ts->sroot) {
		ts->sroot = i + 1;
		ts->sp = p;
		ts->sreq++;
		ts->end_hook = ts->rp.excess + 1;
		return;
	}
	/* nested in an open sampled request: its subtree weighs 1 / (p_outer p) */
	sm->nested++;
	if (ts->nsnest == ts->csnest) {
		const uint32_t nc = ts->csnest ? ts->csnest * 2 : 4;
		void *n = realloc(ts->snest, nc * sizeof(*ts->snest));
		if (!n) {
			ana_nomem_note();
			return;
		}
		ts->snest = n;
		ts->csnest = nc;
	}
	const double w = ts->nsnest ? ts->snest[ts->nsnest - 1].w : 1.0;
	ts->snest[ts->nsnest].at = i;
	ts->snest[ts->nsnest++].w = w / p;
}

/* One occurrence (duration @dur_ns, 0 when it does not count in the total,
 * self @self_ns, weight @w relative to its request) into @e. */
static void est_add(struct ana_est *e, const struct tstate *ts, double w, uint64_t dur_ns, uint64_t self_ns)
{
	if (e->cur_req != ts->sreq) { /* another request: the last one's sums are complete */
		ana_est_fold(e);
		e->cur_req = ts->sreq;
		e->cur_p = ts->sp;
	}
	e->cur_n += w;
	e->cur_t += w * (double)dur_ns;
	e->cur_s += w * (double)self_ns;
	ANA_SAT_ADD(e->rec_count, 1);
	ANA_SAT_ADD(e->rec_total_ns, dur_ns);
	ANA_SAT_ADD(e->rec_self_ns, self_ns);
	e->nested |= w != 1.0;
}

/* The frame just popped (ts->st[ts->depth], still intact) closed at @end
 * inside the open sampled request: into its path's estimate if the
 * section is kept (as close_top() decides). */
static void sample_closed(struct ctx *c, struct ana_thread *th, struct tstate *ts, uint64_t end, unsigned mode)
{
	const uint32_t i = ts->depth;
	const struct frame *f = &ts->st[i];
	const uint64_t dur = end >= f->start ? end - f->start : 0;
	const uint64_t dur_ns = ana_ticks_ns(c, dur),
		       self_ns = ana_ticks_ns(c, dur >= f->child_ticks ? dur - f->child_ticks : 0);
	const double w = ts->nsnest ? ts->snest[ts->nsnest - 1].w : 1.0;
	const bool kept = (mode & MODE_KEEP_ALL) ||
			  (f->start >= c->since_ticks && end <= c->until_ticks && ana_in_domain(c, f->id));
	struct ana_agg *a = &th->tree.n[f->node].agg;
	if (kept && !a->est && !(a->est = calloc(1, sizeof(*a->est))))
		ana_nomem_note();
	if (kept && a->est)
		est_add(a->est, ts, w, dur_ns, self_ns);
	if (kept && (mode & MODE_KEEP_ALL)) { /* by name (flat rows): with nothing filtered, ancestors are the enclosing */
		struct ana_est *fe = ana_grow_by_id(ts->sflat, &ts->nsflat, f->id, sizeof(*fe), ts->id_limit);
		if (fe) {
			ts->sflat = fe;
			bool outermost = true;
			for (uint32_t k = 0; k < i && outermost; k++)
				outermost = ts->st[k].id != f->id;
			/* an occurrence inside a same-name one counts, its time does not (§2) */
			est_add(&fe[f->id], ts, w, outermost ? dur_ns : 0, self_ns);
		}
	}
	if (ts->nsnest && ts->snest[ts->nsnest - 1].at == i)
		ts->nsnest--;
	if (i + 1 == ts->sroot) {
		ts->sroot = 0;
		ts->end_hook = ts->rp.excess;
	}
}

/* c->sample_id: the (analyzer's) id of PT_FMT_SAMPLE_COUNTER in the
 * default domain, 0 if the trace does not define it. */
static void sample_setup(struct ctx *c)
{
	struct pt_reader *rd = c->res->rd;
	const size_t n = fmt_reader_string_count(rd);
	for (size_t i = 0; i < n; i++) {
		const uint32_t id = fmt_reader_string_id(rd, i);
		uint32_t dom = 0;
		const char *s = pt_reader_string(rd, id, &dom);
		if (!s || dom != 0 || strcmp(s, PT_FMT_SAMPLE_COUNTER) != 0)
			continue;
		if (!c->remap) {
			c->sample_id = id;
		} else {
			const struct ana_id_slot *e = rp_map_find(&c->ids, id);
			c->sample_id = e ? e->slot : 0;
		}
		return;
	}
}

/* Closed frame @f into @a, node f->node of thread tree @t. */
static inline __attribute__((always_inline)) void agg_add(struct tstate *ts, struct ana_tree *t, struct ana_agg *a,
							 const struct frame *f, uint64_t dur_ns, uint64_t self_ns,
							 unsigned mode)
{
	if (a->count == 0 || dur_ns < a->min_ns)
		a->min_ns = dur_ns;
	if (dur_ns > a->max_ns)
		a->max_ns = dur_ns;
	if (a->count == 0 || f->start < a->first_start_ns) {
		a->first_start_ns = f->start; /* ticks while building; ns after */
		a->first_ns = dur_ns;
	}
	a->count++;
	/* durations: plain adds (a path's occurrences on one thread do not
	 * overlap, so they sum to at most the thread's span); the merges of
	 * threads and the metric and transfer sums saturate */
	a->total_ns += dur_ns;
	a->self_ns += self_ns;
	ana_moments_add_sq(&a->all, dur_ns); /* s1 is total_ns: finish_agg() */
	if (!(mode & MODE_MERGED_ONLY))
		hpend_add(&ts->hp, f->node, dur_ns, t);
	a->lossy += f->lossy;
	if (f->mmask) { /* sections that declare no metric (most) pay nothing here */
		a->metric_occ++;
		#pragma GCC unroll 4 /* ANA_NMETRIC in full: -3 % instructions a record */
		for (int k = 0; k < ANA_NMETRIC; k++) {
			if (!(f->mmask & (1u << k))) { /* 0 and 0: the sums stay, the range takes 0 */
				a->metric_min[k] = 0;
				continue;
			}
			const uint64_t v = f->m.metric_self[k];
			ANA_SAT_ADD(a->metric_self[k], v);
			ANA_SAT_ADD(a->metric_incl[k], f->m.metric_incl[k]);
			if (a->metric_occ == 1 || v < a->metric_min[k]) /* the per-occurrence range */
				a->metric_min[k] = v;
			if (v > a->metric_max[k])
				a->metric_max[k] = v;
		}
	}
	if (f->has_x) {
		struct ana_xfer *x = ana_agg_xfer(a); /* out of memory: left out, noted */
		for (int k = 0; x && k < ANA_DIRS; k++) {
			ANA_SAT_ADD(x->self[k], f->x.xfer_self[k]);
			ANA_SAT_ADD(x->incl[k], f->x.xfer_incl[k]);
			ANA_SAT_ADD(x->count[k], f->x.xfer_count[k]);
		}
	}
}

/* Pops the top frame, closing it at @end, into its call-path node. */
static inline __attribute__((always_inline)) void close_top(struct ctx *c, struct ana_thread *th, struct tstate *ts,
							  uint64_t end, unsigned mode)
{
	struct frame *f = &ts->st[--ts->depth];
	uint64_t dur = end >= f->start ? end - f->start : 0;
	uint64_t self = dur >= f->child_ticks ? dur - f->child_ticks : 0;
	uint64_t dur_ns = ana_ticks_ns(c, dur), self_ns = self == dur ? dur_ns : ana_ticks_ns(c, self); /* a leaf: one conversion */
	if (ts->depth > 0) {
		struct frame *p = &ts->st[ts->depth - 1];
		p->child_ticks += dur;
		if (f->mmask) {
			#pragma GCC unroll 4 /* ANA_NMETRIC in full */
			for (int k = 0; k < ANA_NMETRIC; k++)
				if (f->mmask & (1u << k))
					frame_m_add(p, k, 0, f->m.metric_incl[k]);
		}
		if (f->has_x) {
			struct frame_x *px = frame_x(p);
			for (int k = 0; k < ANA_DIRS; k++)
				ANA_SAT_ADD(px->xfer_incl[k], f->x.xfer_incl[k]);
		}
		p->lossy |= f->lossy;
	}
	uint32_t id = f->id;
	th->sections++;
	if (!(mode & MODE_KEEP_ALL)) { /* recursion-safe flat sums: from the tree when every section is kept */
		int32_t *top = open_top_of(ts, id);
		if (top)
			*top = f->prev_same;
		if (!(f->start >= c->since_ticks && end <= c->until_ticks && ana_in_domain(c, id))) {
			/* not kept: kept same-name descendants count on their own */
			if (f->has_pending)
				flat_pass_up(ts, id, f->prev_same, f->pending_ns, f->pending_incl, f->pending_xfer);
			return;
		}
		/* kept: its own inclusive time covers any pending descendants */
		flat_pass_up(ts, id, f->prev_same, dur_ns, frame_m_incl(f),
			     f->has_x ? f->x.xfer_incl : NULL);
	}
	struct ana_node *n = &th->tree.n[f->node];
	agg_add(ts, &th->tree, &n->agg, f, dur_ns, self_ns, mode);
	/* memory series: measured against the samples around it (none: the
	 * fast test fails at once, on mem_hi = 0) */
	if (!ana_mem_occ_fast(c, ts, &n->agg, f->start, end) && __builtin_expect(c->nmem != 0, 0))
		ana_mem_occ(c, ts, &n->agg, f->start, end);
	if (f->merged != UINT32_MAX) { /* per path, process-wide: its histogram and its sample */
		if (mode & MODE_MERGED_ONLY)
			hpend_add(&c->mp, f->merged, dur_ns, &c->res->merged);
		if (mode & MODE_SAMPLES) /* only ana_compare() reads them */
			ana_reservoir_add(&c->res->merged.n[f->merged].agg.res, dur_ns, &c->rng);
	}
}

/* close_top() out of line, for the sections that misuse closes. */
static PT_NOINLINE_ void close_top_misuse(struct ctx *c, struct ana_thread *th, struct tstate *ts, uint64_t end)
{
	close_top(c, th, ts, end, pass_mode(c));
}

/*
 * An END that does not close the innermost open section (depth > 0): replay/replay.h rule 4 gave
 * @n, the frames it closes (RP_END_MATCH()). With n >= 2 the n - 1 above the one it ends never
 * ended and close here, as misuse (and, with @sampled, into the estimates of the open sampled
 * request); with n = 0 the END is unmatched.
 * Return: true when the innermost section is now the one the END closes.
 */
static PT_NOINLINE_ bool end_unwind(struct ctx *c, struct ana_thread *th, struct tstate *ts, uint32_t n,
				    uint64_t ticks, bool sampled)
{
	if (n == 0) {
		th->unmatched_ends++;
		return false;
	}
	while (--n > 0) { /* sections never ended: closed here */
		th->unmatched_ends++;
		close_top_misuse(c, th, ts, ticks);
		if (sampled && ts->sroot)
			sample_closed(c, th, ts, ticks, pass_mode(c));
	}
	return true;
}

/* sec_end() while a sampled request is open on the thread (its root is on
 * the stack, so depth > 0): the same matching, and each section it closes
 * goes into its path's estimate too. Out of line: other traces never
 * come here. */
static void sec_end_sampled(struct ctx *c, struct ana_thread *th, struct tstate *ts, uint32_t id,
					 uint64_t ticks)
{
	const unsigned mode = pass_mode(c);
	uint32_t n = RP_END_MATCH(ts->st, ts->depth, id);
	if (n != 1 && !end_unwind(c, th, ts, n, ticks, true))
		return;
	close_top_misuse(c, th, ts, ticks);
	if (ts->sroot) /* a misuse close may have closed the root already */
		sample_closed(c, th, ts, ticks, mode);
}

/* sec_end() when ts->end_hook is set. */
static PT_NOINLINE_ void sec_end_hooked(struct ctx *c, struct ana_thread *th, struct tstate *ts, uint32_t id,
					uint64_t ticks)
{
	if (ts->rp.excess) { /* closes the innermost section too deep to analyze (replay/replay.h rule 3) */
		(void)RP_END(&ts->rp, ts->st, ts->depth, id);
		ts->end_hook--;
	} else {
		sec_end_sampled(c, th, ts, id, ticks);
	}
}

/* The slot index mask of a path table hashed with @shift (2^(64 - shift) slots). */
static inline uint32_t ph_mask(uint32_t shift)
{
	return (uint32_t)(((uint64_t)1 << (64 - shift)) - 1);
}

/* The empty slot where @key goes in table @t (@shift; not full). */
static uint32_t ph_free_slot(const struct pslot *t, uint32_t shift, uint64_t key)
{
	uint32_t i = pslot_hash(key, shift);
	while (t[i].key != PSLOT_EMPTY)
		i = (i + 1) & ph_mask(shift);
	return i;
}

/* Doubles table ts->ph (or makes its first 16 slots): 0, or -1 out of memory (noted). */
static int ph_grow(struct tstate *ts)
{
	uint32_t bits = ts->ph ? 64 - ts->phshift + 1 : 4;
	if (bits > 32) { /* 2^31 paths on one thread (the tree runs out of memory first) */
		ana_nomem_note();
		return -1;
	}
	struct pslot *p = malloc(((size_t)1 << bits) * sizeof(*p));
	if (!p) {
		ana_nomem_note();
		return -1;
	}
	const uint32_t shift = 64 - bits;
	for (size_t i = 0; i < ((size_t)1 << bits); i++)
		p[i].key = PSLOT_EMPTY;
	for (size_t i = 0; ts->ph && i <= ph_mask(ts->phshift); i++)
		if (ts->ph[i].key != PSLOT_EMPTY)
			p[ph_free_slot(p, shift, ts->ph[i].key)] = ts->ph[i];
	free(ts->ph);
	ts->ph = p;
	ts->phshift = shift;
	return 0;
}

/*
 * The call path (@parent, @id) that BEGIN did not find in ts->ph: its
 * thread-tree node (made if new), its merged-tree node (made if new),
 * into the table at slot @i, the empty slot that ended the search.
 * Return: the slot, or NULL out of memory (noted; the BEGIN is dropped).
 */
static PT_NOINLINE_ const struct pslot *ph_add(struct ctx *c, struct ana_thread *th, struct tstate *ts,
					       uint32_t parent, uint32_t id, uint32_t i)
{
	uint32_t node = ana_tree_child(&th->tree, parent, id);
	if (node == UINT32_MAX)
		return NULL;
	uint32_t mp = ts->depth ? ts->st[ts->depth - 1].merged : 0; /* the parent's path in the merged tree */
	uint32_t merged = mp == UINT32_MAX ? UINT32_MAX : ana_tree_child(&c->res->merged, mp, id);
	const uint64_t key = PSLOT_KEY(parent, id);
	if (!ts->ph || ts->phn + 1 > ((size_t)ph_mask(ts->phshift) + 1) / 2) { /* at most half full */
		if (ph_grow(ts))
			return NULL;
		i = ph_free_slot(ts->ph, ts->phshift, key);
	}
	ts->phn++;
	ts->ph[i] = (struct pslot){ .key = key, .node = node, .merged = merged };
	return &ts->ph[i];
}

/* The stack full: grows it, or past ANA_MAX_DEPTH counts the section as
 * too deep (0: pushed by the caller; -1: not, counted or out of memory). */
static PT_NOINLINE_ int stack_grow(struct ana_thread *th, struct tstate *ts)
{
	if (!rp_begin(&ts->rp, ts->cap)) { /* replay/replay.h rule 3: too deep, counted in rp.excess */
		ts->sarm = 0; /* not pushed: no sampled root */
		ts->end_hook++;
		th->too_deep++;
		return -1;
	}
	if (ana_nomem_seen())
		return -1; /* the run fails anyway: no failing realloc per BEGIN */
	uint32_t nc = ts->cap ? ts->cap * 2 : 4; /* per-thread state starts small (100,000 threads) */
	struct frame *s = realloc(ts->st, nc * sizeof(*s));
	if (!s) {
		ana_nomem_note();
		return -1;
	}
	ts->st = s;
	ts->cap = nc;
	return 0;
}

/* BEGIN of section @id at @ticks: pushes child(top, id). */
static inline __attribute__((always_inline)) void sec_begin(struct ctx *c, struct ana_thread *th, struct tstate *ts,
							  uint32_t id, uint64_t ticks, unsigned mode)
{
	if (__builtin_expect(ts->depth == ts->cap, 0) && stack_grow(th, ts))
		return;
	uint32_t parent = ts->depth ? ts->st[ts->depth - 1].node : 0;
	/* the path's nodes: one probe of the thread's table, nearly always */
	const uint64_t key = PSLOT_KEY(parent, id);
	const struct pslot *ps;
	if (__builtin_expect(ts->ph != NULL, 1)) {
		const uint32_t mask = ph_mask(ts->phshift);
		uint32_t i = pslot_hash(key, ts->phshift);
		for (;;) {
			ps = &ts->ph[i];
			if (__builtin_expect(ps->key == key, 1))
				break;
			if (ps->key == PSLOT_EMPTY) {
				ps = ph_add(c, th, ts, parent, id, i);
				break;
			}
			i = (i + 1) & mask;
		}
	} else {
		ps = ph_add(c, th, ts, parent, id, 0);
	}
	if (__builtin_expect(ps == NULL, 0))
		return;
	const uint32_t node = ps->node, merged = ps->merged;
	struct frame *f = &ts->st[ts->depth];
	f->node = node;
	f->merged = merged;
	f->id = id;
	f->start = ticks;
	f->child_ticks = 0;
	f->lossy = f->has_x = f->has_pending = false;
	f->mmask = 0;
	f->prev_same = -1;
	if (!(mode & MODE_KEEP_ALL)) {
		int32_t *top = open_top_of(ts, id);
		if (top) {
			f->prev_same = *top;
			*top = (int32_t)ts->depth;
		}
	}
	ts->depth++;
}

/* ERROR records of snapshots (PT_ERRC_SNAPSHOT: one failure, its errno;
 * PT_ERRC_TRIGGER_LIMITED: calls): counted for the report, not misuse. */
static void snapshot_errc(struct ana_result *res, const struct pt_record *r)
{
	if (r->aux == PT_ERRC_SNAPSHOT) {
		res->snapshot_failures++;
		res->snapshot_errno = (int)r->value;
	} else if (r->aux == PT_ERRC_TRIGGER_LIMITED) {
		ANA_SAT_ADD(res->triggers_limited, r->value);
	} else if (r->aux == PT_ERRC_ROTATE) { /* a rotated trace's next part not created */
		res->rotate_failures++;
		res->rotate_errno = (int)r->value;
	}
}

/* END of section @id at @ticks: closes the innermost section, or the
 * sections above a deeper one of that name (misuse), or counts it. */
static inline __attribute__((always_inline)) void sec_end(struct ctx *c, struct ana_thread *th, struct tstate *ts,
							uint32_t id, uint64_t ticks, unsigned mode)
{
	if (__builtin_expect(ts->end_hook != 0, 0)) { /* too deep, or inside a sampled request */
		sec_end_hooked(c, th, ts, id, ticks);
		return;
	}
	if (ts->depth == 0) {
		if (c->window)
			th->before_window++;
		else
			th->unmatched_ends++;
		return;
	}
	/* replay/replay.h rule 4; its common case (the innermost section's name: n = 1) tested first */
	if (__builtin_expect(ts->st[ts->depth - 1].id != id, 0) &&
	    !end_unwind(c, th, ts, RP_END_MATCH(ts->st, ts->depth, id), ticks, false))
		return;
	close_top(c, th, ts, ticks, mode);
}

/* METRIC of kind @aux (enum pt_metric_kind), amount @value: into the innermost open section. */
static inline __attribute__((always_inline)) void sec_metric(struct ana_thread *th, struct tstate *ts, uint32_t aux,
							   uint64_t value)
{
	if (aux < 1 || aux > ANA_NMETRIC)
		return;
	if (ts->depth) {
		frame_m_add(&ts->st[ts->depth - 1], (int)aux - 1, value, value);
	} else {
		ANA_SAT_ADD(th->unattributed[aux - 1], value);
	}
}

/* Any record at @ticks: the thread's first tick. */
static inline void first_seen(struct tstate *ts, uint64_t ticks)
{
	if (__builtin_expect(!ts->seen, 0)) {
		ts->seen = true;
		ts->first_ticks = ticks;
	}
}

/* A BEGIN or END at @ticks: the thread's first and last timed ticks. */
static inline void timed_seen(struct tstate *ts, uint64_t ticks)
{
	first_seen(ts, ticks);
	ts->last_ticks = ticks;
}

size_t ana_defer_budget = (size_t)64 << 20;

/* A reader thread's record that needs state across threads (struct ctx.dfr): kept for
 * replay_deferred(). Out of memory, or past the reader's share of
 * ana_defer_budget, the pass is read again by one thread. */
static PT_NOINLINE_ void defer(struct ctx *c, const struct ana_thread *th, const struct pt_record *r, uint32_t node,
			       uint32_t cover)
{
	if (c->ndfr == c->cdfr) {
		size_t nc = c->cdfr ? 2 * c->cdfr : 256;
		if (nc * sizeof(struct ana_deferred) > c->dfr_budget) {
			c->bail = true;
			return;
		}
		struct ana_deferred *d = realloc(c->dfr, nc * sizeof(*d));
		if (!d) {
			c->bail = true;
			return;
		}
		c->dfr = d;
		c->cdfr = nc;
	}
	c->dfr[c->ndfr++] = (struct ana_deferred){ .pos = (size_t)(th - c->res->threads), .at = c->chunk_at,
						   .node = node, .cover = cover, .r = *r };
}

static void on_record(struct ctx *c, struct ana_thread *th, struct tstate *ts, const struct pt_record *r)
{
	struct pt_record mapped;
	if (c->remap && ana_kind_named(r->kind)) {
		mapped = *r;
		mapped.id = ana_remap_id(c, r->id);
		r = &mapped;
	}
	if (r->kind == PT_REC_BEGIN || r->kind == PT_REC_END || r->kind == PT_REC_COUNTER)
		timed_seen(ts, r->ticks);
	else
		first_seen(ts, r->ticks);
	th->records++;
	if (__builtin_expect(ts->sarm != 0, 0) && r->kind != PT_REC_BEGIN) {
		c->res->sampling.orphan++; /* a sampling COUNTER weighs only the BEGIN right after it */
		ts->sarm = 0;
	}
	switch (r->kind) {
	case PT_REC_BEGIN:
		sec_begin(c, th, ts, r->id, r->ticks, pass_mode(c));
		if (__builtin_expect(ts->sarm != 0, 0)) /* right after a sampling COUNTER (read_events_mode()) */
			sample_begin(c, ts);
		return;
	case PT_REC_END:
		sec_end(c, th, ts, r->id, r->ticks, pass_mode(c));
		return;
	case PT_REC_METRIC:
		sec_metric(th, ts, r->aux, r->value);
		return;
	case PT_REC_TRANSFER:
		if (r->aux < 1 || r->aux > ANA_DIRS)
			return;
		if (!ts->depth) {
			ANA_SAT_ADD(th->unattributed_xfer[r->aux - 1], r->value);
			th->unattributed_xfer_count[r->aux - 1]++;
			return;
		}
		{
			struct frame_x *m = frame_x(&ts->st[ts->depth - 1]);
			ANA_SAT_ADD(m->xfer_self[r->aux - 1], r->value);
			ANA_SAT_ADD(m->xfer_incl[r->aux - 1], r->value);
			m->xfer_count[r->aux - 1]++;
		}
		return;
	case PT_REC_COUNTER: {
		if (__builtin_expect(r->id == c->sample_id, 0) && r->id) { /* marks the next BEGIN, no series */
			sample_counter(c, ts, r);
			return;
		}
		struct ana_counter *k = NULL;
		for (size_t i = 0; i < th->ncounters; i++)
			if (th->counters[i].id == r->id)
				k = &th->counters[i];
		if (!k) {
			struct ana_counter *n = realloc(th->counters, (th->ncounters + 1) * sizeof(*n));
			if (!n) {
				ana_nomem_note();
				return;
			}
			th->counters = n;
			k = &th->counters[th->ncounters++];
			memset(k, 0, sizeof(*k));
			k->id = r->id;
			k->min = INT64_MAX;
			k->max = INT64_MIN;
		}
		int64_t v = (int64_t)r->value;
		k->last = v;
		k->last_ns = r->ticks; /* ticks while building; ns after (thread_finish()) */
		if (!k->samples++) {
			k->first = v;
			k->first_ns = k->last_ns;
		}
		k->sum += (double)v;
		if (v < k->min)
			k->min = v;
		if (v > k->max)
			k->max = v;
		return;
	}
	case PT_REC_LOSS:
		th->records--;
		ANA_SAT_ADD(th->lost_records, r->value);
		ANA_SAT_ADD(th->lost_sections, r->value2);
		if (ts->depth) /* the innermost: closing hands the mark to each enclosing one */
			ts->st[ts->depth - 1].lossy = true;
		return;
	case PT_REC_ERROR:
		if (ana_is_misuse_errc(r->aux))
			ANA_SAT_ADD(th->misuse_errors, r->value);
		else if (__builtin_expect(c->worker, 0))
			defer(c, th, r, 0, 0); /* process-wide figures: in the serial order, after */
		else if (ana_is_gpu_errc(r->aux))
			ana_pass_gpu_error(c, r); /* GPU halves not timed: not misuse */
		else
			snapshot_errc(c->res, r);
		return;
	default:
		/* INSTANT, ASYNC, GPU: never reached by a trace without them */
		if (r->kind >= PT_REC_INSTANT && r->kind <= PT_REC_GPU_LAUNCH) {
			if (__builtin_expect(!c->worker, 1)) {
				ana_pass_ext(c, th, ts, r);
			} else { /* paired across threads: in the serial order, after; the span now */
				uint32_t node = 0, cover = 0;
				if (r->ticks > ts->last_ticks)
					ts->last_ticks = r->ticks;
				if (r->kind == PT_REC_GPU_LAUNCH) /* its node is the stack's: now */
					ana_pass_gpu_launch_node(ts, th, r, &node, &cover);
				defer(c, th, r, node, cover);
			}
		}
		return;
	}
}

/*
 * Whether a frame about to be dropped (open at the end, or a sequence gap)
 * may enclose a closed section of its own name: a node below the dropped
 * chain ts->st[0..depth) with an aggregated occurrence and the name of a
 * chain node above it. Such an occurrence is not enclosed by a counted one
 * of its name, so it must add its inclusive time to the flat total, which
 * the tree (flat_incl_from_tree()) cannot tell: the pass must track
 * same-name frames instead. One walk of the subtree of the outermost
 * dropped frame; on ENOMEM, true (the pass then tracks: exact, slower).
 */
static bool dropped_may_enclose_same_name(const struct tstate *ts, const struct ana_tree *t)
{
	uint32_t nid = 1;
	for (uint32_t i = 0; i < ts->depth; i++)
		if (ts->st[i].id < ts->id_limit && ts->st[i].id >= nid)
			nid = ts->st[i].id + 1;
	uint32_t *on_chain = calloc(nid, sizeof(*on_chain));
	struct walk { uint32_t node, pos; int64_t chain; } *stk = malloc((size_t)t->count * sizeof(*stk));
	bool found = !on_chain || !stk;
	uint32_t sp = 0;
	if (!found) {
		const struct ana_node *r = &t->n[ts->st[0].node];
		if (r->id < nid)
			on_chain[r->id]++;
		stk[sp++] = (struct walk){ ts->st[0].node, 0, 0 };
	}
	while (sp && !found) {
		struct walk *w = &stk[sp - 1];
		const struct ana_node *n = &t->n[w->node];
		if (w->pos == n->nchild) {
			if (w->chain >= 0 && n->id < nid)
				on_chain[n->id]--;
			sp--;
			continue;
		}
		uint32_t k = n->child[w->pos++];
		const struct ana_node *ch = &t->n[k];
		int64_t chain = w->chain >= 0 && (uint64_t)w->chain + 1 < ts->depth && ts->st[w->chain + 1].node == k
					? w->chain + 1
					: -1;
		if (ch->agg.count && ch->id < nid && on_chain[ch->id])
			found = true;
		if (chain >= 0 && ch->id < nid)
			on_chain[ch->id]++;
		stk[sp++] = (struct walk){ k, 0, chain };
	}
	free(on_chain);
	free(stk);
	return found;
}

/*
 * Drops every open frame of @ts (a sequence gap, or the end of the trace),
 * counting them in *@counter. A dropped frame is not aggregated, hence not
 * "counted" (doc/analyzer-output.md §2): the recursion-safe sums of its
 * kept same-name descendants go on up, to an enclosing same-name frame or
 * into the name's total, as for a frame the window drops.
 */
static void drop_stack(struct ctx *c, struct ana_thread *th, struct tstate *ts, uint64_t *counter);

/* The pending recursion-safe flat sums of @ts's open frames go up as if
 * each were dropped unclosed, innermost first (doc/analyzer-output.md §2):
 * into an enclosing frame of its name, else into the name's total. The
 * frames stay open (drop_stack() pops them; the live pass puts them back). */
static void pending_pass_up(struct tstate *ts)
{
	for (uint32_t i = ts->depth; i-- > 0;) {
		const struct frame *f = &ts->st[i];
		if (f->has_pending)
			flat_pass_up(ts, f->id, f->prev_same, f->pending_ns, f->pending_incl, f->pending_xfer);
	}
}

static void drop_stack(struct ctx *c, struct ana_thread *th, struct tstate *ts, uint64_t *counter)
{
	*counter += ts->depth + rp_cut(&ts->rp);
	ts->sarm = ts->sroot = ts->nsnest = 0; /* a sampled request dropped open: its closed sections stay */
	ts->end_hook = 0;
	if (c->keep_all) {
		if (ts->depth && !c->need_tracking && dropped_may_enclose_same_name(ts, &th->tree))
			c->need_tracking = true; /* ana_run() runs the pass again, tracking */
		ts->depth = 0;
		return;
	}
	pending_pass_up(ts);
	for (uint32_t i = 0; i < ts->depth; i++) {
		int32_t *top = open_top_of(ts, ts->st[i].id);
		if (top)
			*top = -1;
	}
	ts->depth = 0;
}

int ana_tree_walk_outermost(const struct ana_tree *t, uint32_t id_limit,
			    void (*visit)(void *arg, const struct ana_node *n), void *arg)
{
	if (t->count < 2)
		return 0;
	uint32_t nid = 1; /* ids in the tree bound the table, not the id limit (crafted ids) */
	for (uint32_t i = 1; i < t->count; i++)
		if (t->n[i].id < id_limit && t->n[i].id >= nid)
			nid = t->n[i].id + 1;
	uint32_t *on_path = calloc(nid, sizeof(*on_path));
	uint32_t *stk = malloc((size_t)t->count * sizeof(*stk)), *pos = malloc((size_t)t->count * sizeof(*pos));
	if (!on_path || !stk || !pos) {
		free(on_path);
		free(stk);
		free(pos);
		ana_nomem_note();
		return -ENOMEM;
	}
	uint32_t sp = 0;
	stk[sp] = 0; /* the root: no name */
	pos[sp++] = 0;
	while (sp) {
		const struct ana_node *n = &t->n[stk[sp - 1]];
		if (pos[sp - 1] == n->nchild) { /* done with n: off the path */
			if (stk[sp - 1] && n->id < id_limit)
				on_path[n->id]--;
			sp--;
			continue;
		}
		uint32_t k = n->child[pos[sp - 1]++];
		const struct ana_node *ch = &t->n[k];
		if (ch->id < id_limit) {
			if (!on_path[ch->id]) /* no same-name frame open above it */
				visit(arg, ch);
			on_path[ch->id]++;
		}
		stk[sp] = k;
		pos[sp++] = 0;
	}
	free(on_path);
	free(stk);
	free(pos);
	return 0;
}

static void flat_incl_visit(void *arg, const struct ana_node *n)
{
	if (n->agg.count) /* into the name's total */
		flat_pass_up(arg, n->id, -1, n->agg.total_ns, n->agg.metric_incl, n->agg.xfer ? n->agg.xfer->incl : NULL);
}

/*
 * The recursion-safe inclusive sums per name when every section is kept
 * (no --since, --until or --domain): an occurrence counts when no
 * enclosing occurrence has its name, and with nothing filtered out the
 * enclosing occurrences are the path's ancestors; so each node whose path
 * does not hold its name above it adds its inclusive totals, which are
 * the sums of the very values flat_pass_up() would have added one by one.
 */
static int flat_incl_from_tree(struct tstate *ts, const struct ana_tree *t)
{
	return ana_tree_walk_outermost(t, ts->id_limit, flat_incl_visit, ts);
}

/*
 * Flat by-name aggregates (doc/analyzer-output.md §2): counts, self time
 * and distributions merge from every node of the finished tree; the
 * inclusive sums come from the pass (flat_pass_up), where an occurrence
 * counts its inclusive time only if no kept occurrence of the same name
 * encloses it, so recursion is not counted twice, also within a window;
 * or, when nothing is filtered, from the tree (flat_incl_from_tree()).
 */
static void flat_from_tree(struct ctx *c, const struct ana_tree *t, struct tstate *ts)
{
	if (c->keep_all)
		flat_incl_from_tree(ts, t); /* ENOMEM: inclusive flat sums stay 0 */

	for (uint32_t i = 1; i < t->count; i++) {
		const struct ana_node *n = &t->n[i];
		if (!n->agg.count)
			continue;
		struct ana_agg *fa = flat_of(ts, n->id);
		if (fa)
			ana_agg_merge(fa, &n->agg, &c->rng);
	}
	for (uint32_t id = 0; id < ts->nflat; id++) {
		struct ana_agg *fa = &ts->flat[id];
		if (!fa->count)
			continue;
		const struct flat_incl *fi = id < ts->nfi ? &ts->fi[id] : NULL;
		fa->total_ns = fi ? fi->total_ns : 0;
		for (int k = 0; k < ANA_NMETRIC; k++)
			fa->metric_incl[k] = fi ? fi->metric_incl[k] : 0;
		bool xf = fa->xfer != NULL; /* the recursion-safe sums: allocated where one is not 0 */
		for (int k = 0; fi && k < ANA_DIRS; k++)
			xf |= fi->xfer_incl[k] != 0;
		struct ana_xfer *fx = xf ? ana_agg_xfer(fa) : NULL;
		for (int k = 0; fx && k < ANA_DIRS; k++)
			fx->incl[k] = fi ? fi->xfer_incl[k] : 0;
		if (fa->gpu || id < ts->ngf)
			ana_pass_flat_gpu(ts, id, fa);
		if (fa->est && id < ts->nsflat && c->keep_all) { /* the name's own estimates, not its paths' sum */
			struct ana_est *fe = &ts->sflat[id];
			ana_est_fold(fe);
			*fa->est = *fe;
		} else if (fa->est) { /* filtered: recorded figures only (§13) */
			fa->est->by_name = true;
		}
	}
}

/*
 * Pairs every node of @src with the node of the same call path in @dst
 * (made there if missing) and hands each pair to @visit, in @src's node
 * order: the order its paths first appeared, a node always after its
 * parent (ana_tree_child() numbers a new node past every existing one), so
 * @dst's new paths are numbered in the documented order
 * (doc/analyzer-output.md §5) however the pass read the chunks, and one
 * array maps the nodes, with no recursion (nesting depth has no limit: a
 * section never ended in a loop nests every later one below it). A path
 * whose node cannot be made in @dst is left out with its subtree; without
 * memory for the map, only the roots are paired.
 */
static void pair_nodes(struct ana_tree *dst, struct ana_tree *src,
		       void (*visit)(struct ana_tree *dst, struct ana_tree *src, uint32_t s, uint32_t d, void *arg),
		       void *arg)
{
	visit(dst, src, 0, 0, arg);
	uint32_t *map = malloc((src->count ? src->count : 1) * sizeof(*map));
	if (!map) {
		ana_nomem_note();
		return;
	}
	map[0] = 0;
	for (uint32_t i = 1; i < src->count; i++) {
		uint32_t p = map[src->n[i].parent]; /* parent < i */
		map[i] = p == UINT32_MAX ? UINT32_MAX : ana_tree_child(dst, p, src->n[i].id);
		if (map[i] != UINT32_MAX)
			visit(dst, src, i, map[i], arg);
	}
	free(map);
}

static void merge_visit(struct ana_tree *dst, struct ana_tree *src, uint32_t s, uint32_t d, void *rng)
{
	ana_agg_merge(&dst->n[d].agg, &src->n[s].agg, rng);
}

/* Adds thread tree @src's aggregates into @dst, path by path. */
static void merge_tree(struct ana_tree *dst, struct ana_tree *src, uint64_t *rng)
{
	pair_nodes(dst, src, merge_visit, rng);
}

static void finish_agg(struct ctx *c, struct ana_agg *a)
{
	if (a->est) /* the thread's last request of this path */
		ana_est_fold(a->est);
	/* a path's occurrences on one thread never overlap: their sum, total_ns,
	 * is at most the thread's span and is the moments' s1 exactly */
	a->all.s1 = a->total_ns;
	/* first_start_ns held ticks while building */
	a->first_start_ns = a->count ? pt_reader_ticks_to_ns(c->res->rd, a->first_start_ns) : 0;
}

/* Process-wide records of the current meta chunk: losses and errors. */
static void read_meta(struct ctx *c, struct pt_record *batch, size_t max)
{
	struct ana_result *res = c->res;
	int n;
	while ((n = pt_reader_next_records(res->rd, batch, max, sizeof(*batch))) > 0)
		for (int k = 0; k < n; k++) {
			const struct pt_record *r = &batch[k];
			if (r->kind == PT_REC_LOSS) {
				ANA_SAT_ADD(res->process_lost_records, r->value);
				ANA_SAT_ADD(res->lost_sections, r->value2);
			} else if (r->kind == PT_REC_ERROR && ana_is_gpu_errc(r->aux)) {
				ana_pass_gpu_error(c, r);
			} else if (r->kind == PT_REC_ERROR && ana_is_misuse_errc(r->aux)) {
				ANA_SAT_ADD(res->misuse_errors, r->value);
			} else if (r->kind == PT_REC_ERROR) {
				snapshot_errc(res, r);
			}
		}
}

/* Reads the records after a sampling COUNTER through on_record() while the
 * thread stays armed (the BEGIN it weighs, normally the next one): the
 * last fmt_dec_next() result, 1 if none was needed. */
static PT_NOINLINE_ int sample_follow(struct ctx *c, struct ana_thread *th, struct tstate *ts, struct fmt_dec *d)
{
	int rc = 1;
	struct pt_record r;
	while (ts->sarm && (rc = fmt_dec_next(d, &r)) > 0)
		on_record(c, th, ts, &r);
	return rc;
}

/* The thread's first record, through on_record() (and the BEGIN after it
 * if it is a sampling COUNTER): fmt_dec_next()'s 1, 0 or -PT_ECORRUPT. */
static PT_NOINLINE_ int first_record(struct ctx *c, struct ana_thread *th, struct tstate *ts, struct fmt_dec *d)
{
	struct pt_record r;
	int rc = fmt_dec_next(d, &r);
	if (rc <= 0)
		return rc;
	on_record(c, th, ts, &r);
	return ts->sarm != 0 ? sample_follow(c, th, ts, d) : rc;
}

/*
 * Replays the current event chunk @ci of thread @th: the fused decoder and
 * aggregator. BEGIN, END, END_TOP and METRIC are decoded here, straight
 * into sec_begin()/sec_end()/sec_metric() (no pt_record in between); every
 * other tag, and
 * any record the fast helpers decline (damage included), goes through
 * fmt_dec_next() and on_record(), so both paths see the same records and
 * the reader reports damage at the same byte (trace-format/fmt_internal.h).
 */
static inline __attribute__((always_inline)) void read_events_mode(struct ctx *c, struct ana_thread *th,
								   struct tstate *ts, struct fmt_dec *d, unsigned mode)
{
	/* records decoded here (BEGIN and END, METRIC), counted once at the
	 * end; the thread's last timed tick is stored before on_record() and
	 * at the end, when a BEGIN or END came since (a METRIC has no tick) */
	uint64_t timed = 0, untimed = 0, timed_stored = 0;
	int rc = 1;
	struct fmt_fast fd;
	/* the BEGIN a sampling COUNTER weighs goes through on_record() (below):
	 * also when the COUNTER ended the thread's last chunk */
	if (__builtin_expect(ts->sarm != 0, 0) && (rc = sample_follow(c, th, ts, d)) <= 0)
		goto done;
	/* the thread's first record goes through on_record(), which marks the
	 * thread seen (its first tick): the fast paths need not test it */
	if (__builtin_expect(!ts->seen, 0) && (rc = first_record(c, th, ts, d)) <= 0)
		goto done;
	fmt_fast_load(&fd, d);
	/* end - pos >= FMT_DEC_FAST_SLACK as one compare (an address is never
	 * below the slack, so the subtraction cannot wrap) */
	const uintptr_t fast_until = (uintptr_t)d->end - FMT_DEC_FAST_SLACK;
	for (;;) {
		if ((uintptr_t)fd.pos <= fast_until) {
			uint8_t tag = fd.pos[0];
			uint32_t id;
			if (tag == PT_REC_BEGIN) {
				if (fmt_dec_fast_begin(&fd, d->stack, &id)) {
					timed++;
					if (mode & MODE_REMAP)
						id = ana_remap_id(c, id);
					sec_begin(c, th, ts, id, fd.ticks, mode);
					continue;
				}
			} else if (tag == FMT_TAG_END_TOP || tag == PT_REC_END) { /* before METRIC: as many as BEGINs */
				if (fmt_dec_fast_end(&fd, d->stack, &id)) {
					timed++;
					if (mode & MODE_REMAP)
						id = ana_remap_id(c, id);
					sec_end(c, th, ts, id, fd.ticks, mode);
					continue;
				}
			} else if (tag == PT_REC_METRIC) {
				uint32_t aux;
				uint64_t value;
				if (fmt_dec_fast_metric(&fd, &aux, &value)) {
					untimed++;
					sec_metric(th, ts, aux, value);
					continue;
				}
			}
		}
		if (timed != timed_stored) { /* fd.ticks: the latest BEGIN or END's */
			ts->last_ticks = fd.ticks;
			timed_stored = timed;
		}
		struct pt_record r;
		fmt_fast_store(&fd, d);
		rc = fmt_dec_next(d, &r);
		fmt_fast_load(&fd, d);
		if (rc <= 0)
			break;
		on_record(c, th, ts, &r);
		/* after a sampling COUNTER, the next record here too (the BEGIN it
		 * weighs: sample_begin()), so the fast paths test nothing */
		if (__builtin_expect(ts->sarm != 0, 0)) {
			fmt_fast_store(&fd, d);
			rc = sample_follow(c, th, ts, d);
			fmt_fast_load(&fd, d);
			if (rc <= 0)
				break;
		}
	}
done:
	th->records += timed + untimed;
	fmt_reader_chunk_done(c->res->rd, rc);
	if (rc < 0) /* the rest of the chunk is gone: its open frames are unreliable */
		th->gaps++;
}

/* A chunk that starts below the thread's latest tick (a TSC that stepped
 * back between cores): every record through on_record(), its ticks raised
 * by replay/replay.h rule 2. Rare, so not fused. */
static PT_NOINLINE_ void read_events_clamped(struct ctx *c, struct ana_thread *th, struct tstate *ts,
					      struct fmt_dec *d)
{
	struct pt_record r;
	int rc;
	while ((rc = fmt_dec_next(d, &r)) > 0) {
		r.ticks = rp_ticks(&ts->rp, r.kind, r.ticks);
		on_record(c, th, ts, &r);
	}
	fmt_reader_chunk_done(c->res->rd, rc);
	if (rc < 0) /* the rest of the chunk is gone: its open frames are unreliable */
		th->gaps++;
}

static PT_NOINLINE_ void read_events(struct ctx *c, struct ana_thread *th, struct tstate *ts,
				      const struct pt_chunk_info *ci)
{
	c->chunk_at = fmt_reader_chunk_pos(c->res->rd); /* the order of what a reader thread defers */
	if (rp_chunk(&ts->rp, ci->sequence)) { /* replay/replay.h rule 1: chunks lost */
		th->gaps++;
		drop_stack(c, th, ts, &th->open_at_end);
	}
	struct fmt_dec *d = fmt_reader_chunk_dec(c->res->rd);
	if (!d)
		return;
	if (__builtin_expect(rp_chunk_clamps(&ts->rp, ci->first_ticks), 0)) {
		read_events_clamped(c, th, ts, d);
		return;
	}
	unsigned mode = pass_mode(c);
	if (mode == (MODE_KEEP_ALL | MODE_MERGED_ONLY))
		read_events_mode(c, th, ts, d, MODE_KEEP_ALL | MODE_MERGED_ONLY);
	else
		read_events_mode(c, th, ts, d, mode);
	rp_chunk_done(&ts->rp, d->ticks); /* rule 2: its ticks never went below the thread's */
}

/*
 * In file order the merged tree's nodes were numbered in the order paths
 * appeared across threads; the documented order (threads in index order,
 * each in record order) is the one merge_tree() gives. @dst was built that
 * way; this moves each path's reservoir (the only thing the pass kept in
 * the merged tree) from @src into @dst's node of the same path.
 */
static void move_visit(struct ana_tree *dst, struct ana_tree *src, uint32_t s, uint32_t d, void *hist)
{
	struct ana_reservoir tmp = dst->n[d].agg.res;
	dst->n[d].agg.res = src->n[s].agg.res;
	src->n[s].agg.res = tmp;
	if (*(bool *)hist) { /* merged-only percentiles were also kept there */
		struct ana_hist th = dst->n[d].agg.hist;
		dst->n[d].agg.hist = src->n[s].agg.hist;
		src->n[s].agg.hist = th;
	}
}

static void move_reservoirs(struct ana_tree *dst, struct ana_tree *src, bool hist)
{
	pair_nodes(dst, src, move_visit, &hist);
}

/* Every chunk from the reader's cursor on, in file order (run_pass()
 * says why; the incremental analysis reads what was committed since its
 * last update this way). *@done counts the event records (progress),
 * *@next is set past each chunk's offset. The reader's last result: 0 at
 * the end, < 0 an error that ended the reading. */
static int read_file_order(struct ctx *c, const struct ana_options *opt, uint64_t *done, uint64_t *next)
{
	struct ana_result *res = c->res;
	struct pt_chunk_info ci;
	struct pt_record batch[256];
	int rc;
	size_t last = 0;
	while ((rc = pt_reader_next_chunk(res->rd, PT_READER_ALL_CHUNKS, &ci, sizeof(ci))) == 1) {
		*next = ci.offset + 1;
		if (ana_nomem_seen() || c->nomem)
			break; /* the run fails: no use reading on */
		if (ci.thread == PT_FMT_META_THREAD) {
			read_meta(c, batch, 256);
			continue;
		}
		last = ana_thread_pos(res, ci.thread, last);
		if (last == res->nthreads)
			continue;
		struct ana_thread *th = &res->threads[last];
		*done += ci.records;
		if (opt->progress && (*done & ~(uint64_t)0xffff) != ((*done - ci.records) & ~(uint64_t)0xffff))
			opt->progress(opt->progress_ctx, *done, res->total_records_hint);
		if (opt->thread < 0 || (uint32_t)opt->thread == th->index)
			read_events(c, th, &c->ts[last], &ci);
		else /* --thread: the GPU summary still covers the whole trace */
			while ((rc = pt_reader_next_records(res->rd, batch, 256, sizeof(*batch))) > 0)
				for (int k = 0; k < rc; k++) {
					if (c->remap && ana_kind_named(batch[k].kind))
						batch[k].id = ana_remap_id(c, batch[k].id);
					ana_pass_gpu_only(c, &batch[k]);
				}
	}
	return rc;
}

/* Everything before the chunks are read, @res->rd open: the context
 * @c, names, domains, threads and their trees, memory series, the window.
 * 0, or -ENOMEM with the message in @err (nothing of @c left to free; the
 * caller frees @res). */
static int pass_setup(struct ctx *c, struct ana_result *res, const struct ana_options *opt, bool track, char *err,
		      size_t errlen)
{
	int rc;
	*c = (struct ctx){ .res = res, .rng = 0x5eed, .merged_only = opt->merged_percentiles_only, .samples = !opt->no_samples };
	res->has_samples = !opt->no_samples;
	const struct pt_trace_info *info = pt_reader_info(res->rd);
	c->ns_per_tick = pt_reader_ns_per_tick(res->rd);
	c->ns_fast_lim = ana_ticks_ns_lim(c->ns_per_tick);
	c->window = info->window != 0;
	res->window = c->window;
	res->flight = info->flight != 0;
	if (ids_setup(c)) {
		rp_map_free(&c->ids);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	sample_setup(c);
	if (opt->domain) {
		res->domain_filter = 0;
		if (*opt->domain) {
			res->domain_filter = UINT32_MAX - 1; /* matches nothing unless found */
			for (uint32_t d = 1; d < 4096; d++) {
				const char *n = pt_reader_domain(res->rd, d);
				if (n && strcmp(n, opt->domain) == 0) {
					res->domain_filter = d;
					break;
				}
			}
		}
		c->domain_of = calloc(res->nnames ? res->nnames : 1, sizeof(*c->domain_of));
		for (uint32_t id = 1; c->domain_of && id < res->nnames; id++)
			ana_string(res, id, &c->domain_of[id]);
		c->nomem |= !c->domain_of;
	}
	/* threads, by table order */
	res->nthreads = pt_reader_thread_count(res->rd);
	res->threads = calloc(res->nthreads ? res->nthreads : 1, sizeof(*res->threads));
	c->ts = calloc(res->nthreads ? res->nthreads : 1, sizeof(*c->ts));
	if (!res->threads || !c->ts) {
		free(c->ts);
		rp_map_free(&c->ids);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < res->nthreads; i++)
		c->ts[i].id_limit = res->name_id_limit;
	for (size_t i = 0; i < res->nthreads; i++) {
		struct pt_thread_info ti;
		pt_reader_thread(res->rd, i, &ti, sizeof(ti));
		res->threads[i].index = ti.index;
		res->threads[i].tid = ti.tid;
		snprintf(res->threads[i].name, sizeof(res->threads[i].name), "%s", ti.name);
		res->threads[i].gpu_thread = strcmp(ti.name, PT_FMT_GPU_THREAD_NAME) == 0;
		res->gpu.file_order |= res->threads[i].gpu_thread;
		res->threads[i].flusher_thread = strcmp(ti.name, PT_FMT_FLUSHER_THREAD_NAME) == 0;
		if (tree_init(&res->threads[i].tree)) {
			free(c->ts);
			rp_map_free(&c->ids);
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
	}
	if (tree_init(&res->merged)) {
		free(c->ts);
		rp_map_free(&c->ids);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* memory series (counters in bytes) before the pass: an END needs the
	 * samples around it, from whatever thread took them (ana_mem.c) */
	rc = ana_mem_prepass(c);
	if (rc == -ENOMEM)
		c->nomem = true; /* fails at the end, after the usual cleanup */
	else if (rc < 0)
		c->read_rc = rc;
	rc = 0;
	/* progress is counted in records, from the chunk headers */
	{
		struct pt_chunk_info hi;
		pt_reader_rewind(res->rd);
		while (pt_reader_next_chunk_header(res->rd, &hi, sizeof(hi)) == 1)
			if (hi.thread != PT_FMT_META_THREAD)
				res->total_records_hint += hi.records;
		pt_reader_rewind(res->rd);
	}
	/* time window in ticks (the trace slope; doc/analyzer-output.md §4) */
	uint64_t t0 = info->start_ticks;
	/* the first tick at or after --since (a section starting before it is outside) */
	c->since_ticks = opt->since_ns ? ana_window_ticks(t0, opt->since_ns, c->ns_per_tick, true) : 0;
	c->until_ticks = opt->until_ns ? ana_window_ticks(t0, opt->until_ns, c->ns_per_tick, false) : UINT64_MAX;
	c->keep_all = !track && c->since_ticks == 0 && c->until_ticks == UINT64_MAX && res->domain_filter == UINT32_MAX;
	return 0;
}

/* Thread @th's part of the result, its pass state @ts done (open frames
 * dropped): span, the totals it adds to c->res, its tree's aggregates
 * finished (ticks to ns) and its flat rows into ts->flat. */
static void thread_finish(struct ctx *c, struct ana_thread *th, struct tstate *ts)
{
	struct ana_result *res = c->res;
	for (size_t k = 0; k < th->ncounters; k++) { /* the samples' instants held ticks while building */
		th->counters[k].first_ns = pt_reader_ticks_to_ns(res->rd, th->counters[k].first_ns);
		th->counters[k].last_ns = pt_reader_ticks_to_ns(res->rd, th->counters[k].last_ns);
	}
	if (ts->seen) {
		th->first_ns = pt_reader_ticks_to_ns(res->rd, ts->first_ticks);
		/* no BEGIN, END or COUNTER (only ERROR, LOSS, METRIC...): span 0 */
		th->last_ns = pt_reader_ticks_to_ns(res->rd, ts->last_ticks > ts->first_ticks ? ts->last_ticks
											 : ts->first_ticks);
		if (th->first_ns < res->start_ns)
			res->start_ns = th->first_ns;
		if (th->last_ns > res->end_ns)
			res->end_ns = th->last_ns;
		if (!th->gpu_thread && !th->flusher_thread) /* the recorder's threads run no sections */
			res->thread_span_sum_ns += th->last_ns - th->first_ns;
	}
	res->records += th->records;
	res->sections += th->sections;
	ANA_SAT_ADD(res->lost_records, th->lost_records);
	ANA_SAT_ADD(res->lost_sections, th->lost_sections);
	res->unmatched_ends += th->unmatched_ends;
	res->before_window += th->before_window;
	res->open_at_end += th->open_at_end;
	res->too_deep += th->too_deep;
	ANA_SAT_ADD(res->misuse_errors, th->misuse_errors);
	for (uint32_t n = 0; n < th->tree.count; n++)
		finish_agg(c, &th->tree.n[n].agg);
	if (res->has_gpu) /* before the merges: the merged tree and flat rows sum these */
		ana_gpu_breakdown_tree(&th->tree);
	flat_from_tree(c, &th->tree, ts);
	if (res->has_gpu)
		ana_gpu_breakdown_flat(&th->tree, ts->flat, ts->nflat);
}

/* The flat rows: each thread's (ts->flat, moved into
 * res->by_name_thread; ts->flat is then empty) and all threads' (by_name,
 * @maxid names). True when out of memory (ts->flat freed, nothing moved). */
static bool flats_to_result(struct ctx *c, uint32_t maxid)
{
	struct ana_result *res = c->res;
	res->nnames = maxid;
	res->by_name = calloc(maxid ? maxid : 1, sizeof(*res->by_name));
	res->by_name_thread = calloc(res->nthreads ? res->nthreads : 1, sizeof(*res->by_name_thread));
	bool nomem = !res->by_name || !res->by_name_thread;
	for (size_t i = 0; i < res->nthreads; i++) {
		/* each thread's own names: 100,000 threads of one name each
		 * made 100,000 tables of every name */
		struct ana_agg *bt = nomem ? NULL : calloc(c->ts[i].nflat ? c->ts[i].nflat : 1, sizeof(struct ana_agg));
		nomem |= !bt;
		if (bt) {
			res->by_name_thread[i] = bt;
			res->threads[i].nflat = c->ts[i].nflat;
		}
		for (uint32_t id = 0; id < c->ts[i].nflat; id++) {
			if (!bt) { /* out of memory: freed, ana_run() fails */
				ana_agg_free(&c->ts[i].flat[id]);
				continue;
			}
			/* ownership moves to the result */
			bt[id] = c->ts[i].flat[id];
			ana_agg_merge(&res->by_name[id], &c->ts[i].flat[id], &c->rng);
			if (res->by_name[id].est && bt[id].est) /* ana_agg_merge() does not carry the flag */
				res->by_name[id].est->by_name |= bt[id].est->by_name;
		}
		free(c->ts[i].flat);
		c->ts[i].flat = NULL;
		c->ts[i].nflat = 0;
	}
	return nomem;
}

/* res->saturated, corrupt and torn_tail of a finished result. */
static void result_flags(struct ana_result *res)
{
	const struct pt_trace_info *info = pt_reader_info(res->rd);
	/* a saturated sum shows in the merged rows (each at least its thread's) or the totals */
	res->saturated = res->lost_records == UINT64_MAX || res->lost_sections == UINT64_MAX ||
			 res->misuse_errors == UINT64_MAX;
	for (uint32_t i = 1; i < res->merged.count && !res->saturated; i++)
		res->saturated = ana_agg_saturated(&res->merged.n[i].agg);
	for (uint32_t id = 0; id < res->nnames && !res->saturated; id++)
		res->saturated = ana_agg_saturated(&res->by_name[id]);
	for (size_t i = 0; i < res->nthreads && !res->saturated; i++)
		for (int k = 0; k < ANA_NMETRIC; k++)
			res->saturated |= res->threads[i].unattributed[k] == UINT64_MAX;
	/* damage inside the file, as opposed to a torn tail (a crashed writer) */
	res->corrupt = info->corrupt_regions > 0 || info->damaged_chunks > 0 || info->header_damaged;
	res->torn_tail = info->torn_tail_offset != UINT64_MAX;
}

/* Frees what thread pass state @ts holds. */
static void tstate_free(struct tstate *ts)
{
	free(ts->flat);
	free(ts->st);
	free(ts->ph);
	free(ts->open_top);
	free(ts->fi);
	free(ts->mem_cur);
	free(ts->mem_v);
	free(ts->snest);
	free(ts->sflat);
	ana_pass_free_tstate(ts);
}

/*
 * Every chunk of thread @th into its state @ts, in order. @done counts the
 * records read (atomically: -j's readers share it); @progress: this caller
 * reports them to opt->progress every 65,536. Stops early when an
 * allocation failed (the run fails: no use reading on, each failing growth
 * costs a syscall) or a reader bailed. Return: the reader's last result
 * (< 0 an error).
 */
static int read_thread(struct ctx *c, struct ana_thread *th, struct tstate *ts, const struct ana_options *opt,
		       uint64_t *done, bool progress)
{
	struct pt_reader *rd = c->res->rd;
	struct pt_chunk_info ci;
	int rc;
	pt_reader_rewind(rd);
	while ((rc = pt_reader_next_chunk(rd, th->index, &ci, sizeof(ci))) == 1) {
		if (ana_nomem_seen() || c->nomem || c->bail)
			break;
		const uint64_t d = __atomic_add_fetch(done, ci.records, __ATOMIC_RELAXED);
		if (progress && (d & ~(uint64_t)0xffff) != ((d - ci.records) & ~(uint64_t)0xffff))
			opt->progress(opt->progress_ctx, d, c->res->total_records_hint);
		read_events(c, th, ts, &ci);
	}
	return rc;
}

/*
 * -j within one trace (ana_options.jobs): the threads of a trace are
 * independent until the finish, so reader threads each
 * take the next unread thread and replay it into its own ana_thread and
 * tstate, as the serial loop would. What they share is given to each its
 * own: a reader (fmt_reader_dup(): the same chunk index), and the pass's
 * merged tree, which holds only the merged-only histograms (no reservoirs
 * here: ana_compare() reads those). The finish rebuilds the merged tree in
 * thread order from the threads' trees (as after a file-order pass) and
 * adds each reader's histograms into it: counts add exactly, so every
 * figure is the serial pass's. Records that need state across threads
 * (async, instant, GPU ranges, a process-wide ERROR, and a GPU launch
 * once its node is found on the thread's stack) are deferred and replayed
 * in the serial pass's order (replay_deferred()); damage, a reader error
 * or deferred records past their budget (ana_defer_budget) stop them all:
 * the pass is then read again by one thread.
 */
struct pworker {
	struct ctx c;          /* the pass's, with .res = &res, worker set, its own pending merged adds */
	struct ana_result res; /* the pass's, shallow: its own reader and merged tree */
	const struct ana_options *opt;
	size_t *next;          /* the next thread position to read (shared, atomic) */
	uint64_t *done;        /* records read (shared), for progress */
	int *stop;             /* one of them bailed (shared, atomic) */
	bool progress;         /* this one reports progress */
	bool nomem, failed;
};

static void *pworker_run(void *arg)
{
	struct pworker *w = arg;
	struct ctx *c = &w->c;
	struct ana_result *res = &w->res;
	int rc = 0;
	while (!__atomic_load_n(w->stop, __ATOMIC_RELAXED)) {
		size_t i = __atomic_fetch_add(w->next, 1, __ATOMIC_RELAXED);
		if (i >= res->nthreads)
			break;
		rc = read_thread(c, &res->threads[i], &c->ts[i], w->opt, w->done, w->progress);
		if (rc < 0 || c->bail || ana_nomem_seen() || c->nomem || pt_reader_problem_count(res->rd)) {
			__atomic_store_n(w->stop, 1, __ATOMIC_RELAXED);
			break;
		}
	}
	hpend_flush(&c->mp, &res->merged);
	w->nomem = ana_nomem_take() || c->nomem;
	w->failed = rc < 0 || c->bail || pt_reader_problem_count(res->rd) != 0;
	return NULL;
}

/* Adds a reader's merged-only histogram of a path into the rebuilt merged tree's node. */
static void hist_merge_visit(struct ana_tree *dst, struct ana_tree *src, uint32_t s, uint32_t d, void *arg)
{
	(void)arg;
	if (s != 0)
		ana_hist_merge(&dst->n[d].agg.hist, &src->n[s].agg.hist);
}

/* File order of two deferred records: by their chunk's place in the
 * reader's chunk index (file order, part after part), then (one chunk, so
 * one reader's array) by their place in it, which is record order. */
static int file_order_cmp(const void *a, const void *b)
{
	const struct ana_deferred *x = *(const struct ana_deferred *const *)a, *y = *(const struct ana_deferred *const *)b;
	if (x->at != y->at)
		return x->at < y->at ? -1 : 1;
	return x < y ? -1 : x > y;
}

/*
 * The records the readers deferred (struct ctx.dfr: ASYNC, INSTANT,
 * GPU_RANGE, GPU_LAUNCH, process-wide ERROR), through what the serial pass
 * does with them, in the serial pass's order: for a trace read thread by
 * thread, thread by thread, each in record order (each thread was read by
 * one reader, which kept its records in order); for a trace the serial
 * pass reads in file order (one with a "ptz-gpu" thread), in file order.
 * So the GPU and async pairings (which halves wait, the peaks), the
 * instants and the process-wide counts are the serial pass's. 0, or -1
 * out of memory.
 */
static int replay_deferred(struct ctx *c, const struct pworker *w, size_t nw)
{
	struct ana_result *res = c->res;
	size_t n = 0;
	for (size_t k = 0; k < nw; k++)
		n += w[k].c.ndfr;
	if (!n)
		return 0;
	size_t *at = calloc(res->nthreads + 1, sizeof(*at));
	const struct ana_deferred **order = malloc(n * sizeof(*order));
	if (!at || !order) {
		free(at);
		free(order);
		return -1;
	}
	if (res->gpu.file_order) {
		size_t i = 0;
		for (size_t k = 0; k < nw; k++)
			for (size_t j = 0; j < w[k].c.ndfr; j++)
				order[i++] = &w[k].c.dfr[j];
		qsort(order, n, sizeof(*order), file_order_cmp);
	} else {
		for (size_t k = 0; k < nw; k++) /* counting sort by thread position: stable */
			for (size_t i = 0; i < w[k].c.ndfr; i++)
				at[w[k].c.dfr[i].pos + 1]++;
		for (size_t t = 0; t < res->nthreads; t++)
			at[t + 1] += at[t];
		for (size_t k = 0; k < nw; k++)
			for (size_t i = 0; i < w[k].c.ndfr; i++)
				order[at[w[k].c.dfr[i].pos]++] = &w[k].c.dfr[i];
	}
	for (size_t i = 0; i < n; i++) {
		const struct ana_deferred *d = order[i];
		if (d->r.kind == PT_REC_ERROR) {
			if (ana_is_gpu_errc(d->r.aux))
				ana_pass_gpu_error(c, &d->r);
			else
				snapshot_errc(res, &d->r);
		} else if (d->r.kind == PT_REC_GPU_LAUNCH) {
			ana_pass_gpu_launch_pair(c, (uint32_t)d->pos, &d->r, d->node, d->cover);
		} else {
			ana_pass_ext(c, &res->threads[d->pos], &c->ts[d->pos], &d->r);
		}
	}
	free(at);
	free(order);
	return 0;
}

/* The readers' merged trees, kept for run_pass()'s finish (parallel_merge()). */
struct ptrees {
	struct ana_tree *t;
	size_t n;
};

/*
 * Reads every thread of @c's trace with @opt->jobs reader threads. Return:
 * 0 read (the readers' merged trees in @out); 1 not here (read serially:
 * one job, one thread, or what the pass does not split); 2 read again by
 * one thread (a reader bailed, met damage or a read error; the pass's
 * state is spent).
 */
/* Whether read_threads_parallel() may split @c's pass (its 1 otherwise):
 * two readers or more, and nothing it does not split (sparse ids, sampled
 * requests, reservoirs, --thread, damage seen, a flight recording). */
static bool parallel_fits(const struct ctx *c, const struct ana_options *opt)
{
	const struct ana_result *res = c->res;
	size_t nw = opt->jobs < res->nthreads ? opt->jobs : res->nthreads;
	return !(nw < 2 || c->remap || c->sample_id || c->samples || opt->thread >= 0 ||
		 pt_reader_problem_count(res->rd) || pt_reader_info(res->rd)->flight);
}

static int read_threads_parallel(struct ctx *c, const struct ana_options *opt, uint64_t *done, struct ptrees *out)
{
	struct ana_result *res = c->res;
	size_t nw = opt->jobs < res->nthreads ? opt->jobs : res->nthreads;
	if (!parallel_fits(c, opt))
		return 1;
	struct pworker *w = calloc(nw, sizeof(*w));
	pthread_t *tid = calloc(nw, sizeof(*tid));
	struct ana_tree *trees = calloc(nw, sizeof(*trees)); /* out->t: the readers' merged trees */
	size_t next = 0, started = 0;
	int stop = 0, ret = 0;
	if (!w || !tid || !trees) {
		free(w);
		free(tid);
		free(trees);
		return 1;
	}
	for (size_t k = 0; k < nw; k++) {
		w[k].res = *res;
		w[k].res.rd = NULL;
		w[k].c = *c;
		w[k].c.res = &w[k].res;
		w[k].c.worker = true;
		w[k].c.dfr = NULL;
		w[k].c.ndfr = w[k].c.cdfr = 0;
		w[k].c.dfr_budget = ana_defer_budget / nw;
		memset(&w[k].c.mp, 0, sizeof(w[k].c.mp));
		w[k].opt = opt;
		w[k].next = &next;
		w[k].done = done;
		w[k].stop = &stop;
		w[k].progress = k == 0 && opt->progress;
		if (tree_init(&w[k].res.merged) || fmt_reader_dup(res->rd, &w[k].res.rd) ||
		    pthread_create(&tid[k], NULL, pworker_run, &w[k])) {
			ret = started ? 2 : 1;
			__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
			pt_reader_close(w[k].res.rd);
			ana_tree_free(&w[k].res.merged);
			break;
		}
		started++;
	}
	for (size_t k = 0; k < started; k++) {
		pthread_join(tid[k], NULL);
		c->need_tracking |= w[k].c.need_tracking;
		c->nomem |= w[k].nomem;
		if (w[k].failed)
			ret = 2;
		pt_reader_close(w[k].res.rd);
	}
	free(tid);
	if (ret == 0 && replay_deferred(c, w, started))
		ret = 2; /* out of memory: one thread reads it again */
	for (size_t k = 0; k < started; k++) {
		free(w[k].c.dfr);
		trees[k] = w[k].res.merged;
	}
	free(w);
	if (ret) {
		for (size_t k = 0; k < started; k++)
			ana_tree_free(&trees[k]);
		free(trees);
		return ret;
	}
	out->t = trees;
	out->n = started;
	return 0;
}

/* The finish of a parallel read: each reader's histograms into the rebuilt merged tree. */
static void parallel_merge(struct ana_tree *merged, struct ptrees *p)
{
	for (size_t k = 0; k < p->n; k++) {
		pair_nodes(merged, &p->t[k], hist_merge_visit, NULL);
		ana_tree_free(&p->t[k]);
	}
	free(p->t);
	p->t = NULL;
	p->n = 0;
}

/* One pass; @track: follow same-name frames (flat sums from the pass) even
 * when every section is kept. *@retrack: the tree cannot give the flat
 * sums (drop_stack()): run again with @track. *@serial: the parallel read
 * (read_threads_parallel()) met what it does not split: run again with one thread. */
static int run_pass(const char *path, const struct ana_options *opt, struct ana_result *res, char *err,
		    size_t errlen, bool track, bool *retrack, bool *serial)
{
	memset(res, 0, sizeof(*res));
	res->domain_filter = UINT32_MAX;
	(void)ana_nomem_take(); /* a failure of an earlier call is not this one's */
	int rc = pt_reader_open_trace(path, &res->rd);
	if (rc) {
		snprintf(err, errlen, "%s",
			 res->rd       ? pt_reader_errmsg(res->rd)
			 : rc == -ESPIPE ? "not a regular file (a pipe, FIFO or device): traces are read at offsets"
					 : pt_strerror(rc));
		return rc;
	}
	struct ctx c;
	rc = pass_setup(&c, res, opt, track, err, errlen);
	if (rc)
		return rc;

	struct pt_chunk_info ci;
	struct pt_record batch[256];
	uint64_t done = 0, next_off = 0;
	struct ptrees ptrees = { NULL, 0 };
	/* thread order rescans the chunk index once per thread: with many
	 * threads (100,000 one-chunk threads took minutes), file order */
	const bool file_order = res->gpu.file_order || res->nthreads > 64;
	/* -j: reader threads, one thread of the trace each at a time, also for
	 * a trace the serial pass reads in file order for its GPU records
	 * (they are deferred and replayed in file order: replay_deferred()) */
	const bool par = res->nthreads <= 64 && parallel_fits(&c, opt);
	if (!file_order || par) {
		/* Meta chunks first (process-wide losses and errors), then one
		 * thread at a time through the reader's chunk index: only that
		 * thread's tree is hot in the cache, instead of every thread's at
		 * once. */
		while ((rc = pt_reader_next_chunk(res->rd, PT_FMT_META_THREAD, &ci, sizeof(ci))) == 1)
			read_meta(&c, batch, 256);
		int prc = rc >= 0 && par ? read_threads_parallel(&c, opt, &done, &ptrees) : 1;
		if (prc == 2 || (prc == 1 && file_order))
			*serial = true; /* ana_run() reads it again with one thread */
		for (size_t i = 0; i < res->nthreads && rc >= 0 && prc == 1 && !file_order; i++) {
			struct ana_thread *th = &res->threads[i];
			if (opt->thread >= 0 && (uint32_t)opt->thread != th->index)
				continue;
			rc = read_thread(&c, th, &c.ts[i], opt, &done, opt->progress != NULL);
		}
	} else {
		/*
		 * A trace with the recorder's CUDA thread (or many threads): every chunk in file
		 * order, so that a GPU_LAUNCH and the GPU_RANGE with its seq
		 * (written by different threads, close together in the file)
		 * meet soon and the pending set stays as small as the file
		 * allows (doc/analyzer-output.md §3.1). Per-thread state is
		 * separate, so every figure is the same as in thread order; the
		 * merged tree is renumbered in thread order at the end.
		 */
		rc = read_file_order(&c, opt, &done, &next_off);
	}
	if (rc < 0) /* the reader could not go on (ENOMEM, a read error): no partial answer */
		c.read_rc = rc;
	hpend_flush(&c.mp, &res->merged);
	for (size_t i = 0; i < res->nthreads; i++)
		hpend_flush(&c.ts[i].hp, &res->threads[i].tree);
	if (opt->progress)
		opt->progress(opt->progress_ctx, res->total_records_hint, res->total_records_hint);
	/* totals, spans, merged views */
	res->start_ns = UINT64_MAX;
	for (size_t i = 0; i < res->nthreads; i++) {
		struct ana_thread *th = &res->threads[i];
		struct tstate *ts = &c.ts[i];
		drop_stack(&c, th, ts, &th->open_at_end);
		thread_finish(&c, th, ts);
	}
	ANA_SAT_ADD(res->lost_records, res->process_lost_records);
	if (res->start_ns == UINT64_MAX)
		res->start_ns = res->end_ns = 0;
	ana_pass_finish(&c);
	struct ana_tree pass_merged = { 0 };
	if (file_order || ptrees.t) { /* the merged tree in thread order (a parallel read's: empty) */
		pass_merged = res->merged;
		if (tree_init(&res->merged)) {
			res->merged = pass_merged; /* keeps the file order */
			pass_merged.n = NULL;
		}
	}
	/* flat tables cover the ids that have rows (each thread's grew to the
	 * ids it saw), not every id the string table defines: one STRING
	 * record with id 2^24 - 1 made every table 5 GB */
	uint32_t maxid = 0;
	for (size_t i = 0; i < res->nthreads; i++) {
		merge_tree(&res->merged, &res->threads[i].tree, &c.rng);
		if (c.ts[i].nflat > maxid)
			maxid = c.ts[i].nflat;
	}
	if (pass_merged.n) {
		move_reservoirs(&res->merged, &pass_merged, c.merged_only);
		ana_tree_free(&pass_merged);
	}
	res->readers = ptrees.t ? (unsigned)ptrees.n : 1;
	if (ptrees.t)
		parallel_merge(&res->merged, &ptrees);
	bool nomem = flats_to_result(&c, maxid);
	for (size_t i = 0; i < res->nthreads; i++)
		tstate_free(&c.ts[i]);
	free(c.ts);
	rp_map_free(&c.ids);
	if (c.read_rc && c.read_rc != -ENOMEM) {
		free(c.domain_of);
		snprintf(err, errlen, "%s", pt_strerror(c.read_rc));
		return c.read_rc;
	}
	if (nomem || c.nomem || c.read_rc || ana_nomem_take()) { /* a smaller answer would be a wrong one */
		free(c.domain_of);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* flat percentiles: every path of a name, from the merged tree */
	if (c.merged_only && !opt->no_flat_percentiles)
		for (uint32_t i = 1; i < res->merged.count; i++) {
			const struct ana_node *n = &res->merged.n[i];
			if (n->id < maxid && n->agg.count)
				ana_hist_merge(&res->by_name[n->id].hist, &n->agg.hist);
		}
	free(c.domain_of);
	if (ana_nomem_take()) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	result_flags(res);
	*retrack = c.need_tracking;
	return 0;
}

bool ana_window_outside(struct pt_reader *rd, const struct ana_options *opt, char *msg, size_t len)
{
	if (!opt->since_ns)
		return false;
	struct pt_chunk_info ci;
	uint64_t lo = UINT64_MAX, hi = 0; /* ticks */
	pt_reader_rewind(rd);
	while (pt_reader_next_chunk_header(rd, &ci, sizeof(ci)) == 1) {
		if (ci.thread == PT_FMT_META_THREAD || !ci.records)
			continue;
		lo = ci.first_ticks < lo ? ci.first_ticks : lo;
		hi = ci.last_ticks > hi ? ci.last_ticks : hi;
	}
	pt_reader_rewind(rd);
	/* the bound as ana_run() cuts it (ana_window_ticks(), the trace slope) */
	const uint64_t t0 = pt_reader_info(rd)->start_ticks;
	const double npt = pt_reader_ns_per_tick(rd);
	if (lo > hi || ana_window_ticks(t0, opt->since_ns, npt, true) <= hi)
		return false;
	char until[48] = "";
	if (opt->until_ns)
		snprintf(until, sizeof(until), ", --until %.9g s", opt->until_ns / 1e9);
	snprintf(msg, len,
		 "the window (--since %.9g s%s) starts after the last event: the trace's events lie from %.9g s to "
		 "%.9g s after its start; nothing to show",
		 opt->since_ns / 1e9, until, lo > t0 ? (double)(lo - t0) * npt / 1e9 : 0.0,
		 hi > t0 ? (double)(hi - t0) * npt / 1e9 : 0.0);
	return true;
}

int ana_run(const char *path, const struct ana_options *opt, struct ana_result *res, char *err, size_t errlen)
{
	bool retrack = false, serial = false;
	struct ana_options one;
	int rc = run_pass(path, opt, res, err, errlen, false, &retrack, &serial);
	if (serial) { /* the parallel read met what it does not split: one thread */
		ana_result_free(res);
		one = *opt;
		one.jobs = 1;
		opt = &one;
		retrack = false;
		rc = run_pass(path, opt, res, err, errlen, false, &retrack, &serial);
	}
	if (rc == 0 && retrack) {
		/* a section dropped unclosed encloses a closed one of its name */
		ana_result_free(res);
		rc = run_pass(path, opt, res, err, errlen, true, &retrack, &serial);
	}
	return rc;
}

void ana_result_free(struct ana_result *res)
{
	if (!res->threads) /* ana_run() failed before the thread table */
		res->nthreads = 0;
	for (size_t i = 0; i < res->nthreads; i++) {
		ana_tree_free(&res->threads[i].tree);
		free(res->threads[i].counters);
		if (res->by_name_thread && res->by_name_thread[i]) {
			for (uint32_t id = 0; id < res->threads[i].nflat; id++)
				ana_agg_free(&res->by_name_thread[i][id]);
			free(res->by_name_thread[i]);
		}
	}
	free(res->by_name_thread);
	for (size_t i = 0; i < res->nthreads; i++)
		free(res->threads[i].instants);
	free(res->threads);
	for (size_t d = 0; d < res->gpu.ndev; d++) {
		ana_slat_free(&res->gpu.dev[d].lat);
		free(res->gpu.dev[d].iv);
		rp_map_free(&res->gpu.dev[d].stream_set);
	}
	free(res->gpu.dev);
	for (uint32_t id = 0; id < res->nasync; id++)
		ana_hist_free(&res->async_by_name[id].hist);
	free(res->async_by_name);
	free(res->instants_by_name);
	ana_tree_free(&res->merged);
	if (res->by_name)
		for (uint32_t id = 0; id < res->nnames; id++)
			ana_agg_free(&res->by_name[id]);
	free(res->by_name);
	free(res->slot_id);
	ana_mem_free(res);
	pt_reader_close(res->rd);
	memset(res, 0, sizeof(*res));
}

const char *ana_name(const struct ana_result *res, uint32_t id)
{
	static __thread char buf[48];
	const char *n = ana_string(res, id, NULL);
	if (n)
		return n;
	snprintf(buf, sizeof(buf), "(unknown id %u)", ana_trace_id(res, id));
	return buf;
}

/* ---------------------------------------------------------------- the live pass
 *
 * The incremental analysis of a trace still being written (ana_api.c's
 * session; ana.h says what is kept and when it starts over). The pass
 * state of ana_run() is kept between updates: an update reads only the
 * chunks committed since the last one, in file order, into it, then
 * finishes a copy of it (live_result()); the state itself goes on.
 */

struct ana_live {
	struct ana_options opt;
	struct ctx c;
	struct ana_result r;      /* the pass's state; r.rd is the newest result's reader (borrowed) */
	bool have;                /* c and r hold a state */
	bool never;               /* the trace has what the live pass does not keep: always ana_run() */
	bool order_wait;          /* ana_run() pairs in another order (live_order_differs()): ana_run()
				   * until a "ptz-gpu" thread or a 65th thread makes it read in file order */
	uint64_t next;            /* the chunks at file offsets below it are in the state */
	struct pt_trace_info key; /* the trace it read (start triple, pid, run) */
	struct ana_live_stats st;
};

int ana_live_open(const struct ana_options *opt, struct ana_live **out)
{
	struct ana_live *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->opt = *opt;
	/* what the live pass keeps: every thread, domain and time; no
	 * samples (ana_compare() reads them, no row prints them); percentiles
	 * per thread; no progress */
	l->never = opt->thread >= 0 || opt->domain || opt->since_ns || opt->until_ns || !opt->no_samples ||
		   opt->merged_percentiles_only;
	l->opt.progress = NULL;
	*out = l;
	return 0;
}

static void live_drop(struct ana_live *l)
{
	if (!l->have)
		return;
	for (size_t i = 0; i < l->r.nthreads; i++)
		tstate_free(&l->c.ts[i]);
	free(l->c.ts);
	free(l->c.domain_of);
	rp_map_free(&l->c.ids);
	ana_pass_gp_free(&l->c); /* the GPU and async pairing state */
	l->r.rd = NULL; /* the result's */
	ana_result_free(&l->r);
	memset(&l->c, 0, sizeof(l->c));
	l->have = false;
}

void ana_live_close(struct ana_live *l)
{
	if (!l)
		return;
	live_drop(l);
	free(l);
}

void ana_live_stats(const struct ana_live *l, struct ana_live_stats *out)
{
	*out = l->st;
}

/* Whether reader @rd's trace is one the live pass can follow: one file,
 * not a flight file or window, undamaged, dense name ids, no sampled
 * requests. */
static bool live_reader_ok(struct pt_reader *rd)
{
	const struct pt_trace_info *in = pt_reader_info(rd);
	if (in->parts > 1 || in->flight || in->window || in->header_damaged || in->corrupt_regions ||
	    in->damaged_chunks || in->torn_tail_offset != UINT64_MAX)
		return false;
	const size_t n = fmt_reader_string_count(rd);
	if ((uint64_t)pt_reader_max_string_id(rd) > 2 * (uint64_t)n + ANA_MIN_NAME_IDS)
		return false; /* sparse ids: the slots would be renumbered */
	for (size_t i = 0; i < n; i++) {
		uint32_t dom = 0;
		const char *s = pt_reader_string(rd, fmt_reader_string_id(rd, i), &dom);
		if (s && dom == 0 && strcmp(s, PT_FMT_SAMPLE_COUNTER) == 0)
			return false;
	}
	return true;
}

/* Whether the state holds what only a reading in file order pairs as
 * ana_run() does (GPU, async, instant records) while ana_run() reads this
 * trace thread by thread (no "ptz-gpu" thread, at most 64 threads): the
 * pending peaks would differ. */
static bool live_order_differs(const struct ana_live *l)
{
	const struct ana_result *r = &l->r;
	return (l->c.gp || r->has_gpu || r->has_async || r->has_instants || r->gpu.ndev) && !r->gpu.file_order &&
	       r->nthreads <= 64;
}

/* The largest tick of a record the state holds. */
static uint64_t live_max_ticks(const struct ana_live *l)
{
	uint64_t m = 0;
	for (size_t i = 0; i < l->r.nthreads; i++)
		if (l->c.ts[i].seen && l->c.ts[i].last_ticks > m)
			m = l->c.ts[i].last_ticks;
	return m;
}

/* Reads the chunks of @rd from l->next on into the state (*@done: their
 * event records). 0; 1 when the state cannot be finished as ana_run()'s
 * (l->never or l->order_wait says why); < 0 a read error or -ENOMEM. */
static int live_read(struct ana_live *l, struct pt_reader *rd, uint64_t *done)
{
	struct ctx *c = &l->c;
	int rc = fmt_reader_seek(rd, l->next);
	if (rc == 0)
		rc = read_file_order(c, &l->opt, done, &l->next);
	if (rc >= 0 && !c->need_tracking && !c->nomem && !c->read_rc && !ana_nomem_seen() && !live_order_differs(l))
		return 0;
	l->never = c->need_tracking;
	l->order_wait = rc >= 0 && live_order_differs(l);
	return l->never || l->order_wait ? 1 : rc < 0 ? rc : -ENOMEM;
}

/* A fresh state from @rd: the setup of ana_run() and every chunk. 0, 1
 * (not a trace the live pass can follow: l->never, or not yet:
 * l->order_wait), or < 0 (a read error, -ENOMEM). */
static int live_build(struct ana_live *l, struct pt_reader *rd, char *err, size_t errlen)
{
	live_drop(l);
	l->next = 0;
	if (!live_reader_ok(rd)) {
		l->never = true;
		return 1;
	}
	(void)ana_nomem_take();
	memset(&l->r, 0, sizeof(l->r));
	l->r.domain_filter = UINT32_MAX;
	l->r.rd = rd;
	/* tracking: the flat sums come from the pass, so a section open at
	 * the end that encloses a closed one of its name needs no second
	 * reading (drop_stack()); every figure is the same either way */
	int rc = pass_setup(&l->c, &l->r, &l->opt, true, err, errlen);
	if (rc) {
		l->r.rd = NULL;
		ana_result_free(&l->r);
		return rc;
	}
	l->have = true;
	l->key = *pt_reader_info(rd);
	if (l->c.remap || l->c.sample_id) {
		l->never = true;
		live_drop(l);
		return 1;
	}
	uint64_t done = 0; /* pass_setup() counted them from the chunk headers */
	return live_read(l, rd, &done); /* on failure the caller drops the state */
}

/* Reads the chunks of @rd committed since the state's last reading: 0, 1
 * (the state cannot take them: build it again), or < 0. */
static int live_extend(struct ana_live *l, struct pt_reader *rd)
{
	const struct pt_trace_info *in = pt_reader_info(rd);
	struct ana_result *res = &l->r;
	struct ctx *c = &l->c;
	if (!live_reader_ok(rd) || in->start_ticks != l->key.start_ticks || in->start_mono_ns != l->key.start_mono_ns ||
	    in->start_real_ns != l->key.start_real_ns || in->pid != l->key.pid || in->run_id != l->key.run_id ||
	    in->clock_source != l->key.clock_source || in->committed_bytes < l->key.committed_bytes ||
	    pt_reader_ns_per_tick(rd) != c->ns_per_tick)
		return 1; /* another trace, or every duration converts differently now */
	const size_t nt = pt_reader_thread_count(rd);
	if (nt < res->nthreads)
		return 1;
	struct pt_thread_info ti;
	for (size_t i = 0; i < nt; i++) {
		pt_reader_thread(rd, i, &ti, sizeof(ti));
		const bool gpu = strcmp(ti.name, PT_FMT_GPU_THREAD_NAME) == 0,
			   flusher = strcmp(ti.name, PT_FMT_FLUSHER_THREAD_NAME) == 0;
		if (i < res->nthreads && (ti.index != res->threads[i].index || ti.tid != res->threads[i].tid ||
					  gpu != res->threads[i].gpu_thread || flusher != res->threads[i].flusher_thread))
			return 1;
	}
	/* from here on the state takes the new reader */
	res->rd = rd;
	l->key = *in;
	const uint32_t maxs = pt_reader_max_string_id(rd);
	if (maxs > res->nnames)
		res->nnames = maxs;
	if (res->nnames + 1 > res->name_id_limit)
		res->name_id_limit = res->nnames + 1;
	if (nt > res->nthreads) {
		struct ana_thread *th = realloc(res->threads, nt * sizeof(*th));
		if (th)
			res->threads = th;
		struct tstate *ts = th ? realloc(c->ts, nt * sizeof(*ts)) : NULL;
		if (ts)
			c->ts = ts;
		if (!th || !ts)
			return -ENOMEM;
		for (size_t i = res->nthreads; i < nt; i++) {
			memset(&res->threads[i], 0, sizeof(res->threads[i]));
			memset(&c->ts[i], 0, sizeof(c->ts[i]));
			pt_reader_thread(rd, i, &ti, sizeof(ti));
			res->threads[i].index = ti.index;
			res->threads[i].tid = ti.tid;
			res->threads[i].flusher_thread = strcmp(ti.name, PT_FMT_FLUSHER_THREAD_NAME) == 0;
			res->threads[i].gpu_thread = strcmp(ti.name, PT_FMT_GPU_THREAD_NAME) == 0;
			res->gpu.file_order |= res->threads[i].gpu_thread;
			if (tree_init(&res->threads[i].tree))
				return -ENOMEM;
			res->nthreads = i + 1;
		}
	}
	for (size_t i = 0; i < nt; i++) { /* names may come later (pt_thread_name()) */
		pt_reader_thread(rd, i, &ti, sizeof(ti));
		snprintf(res->threads[i].name, sizeof(res->threads[i].name), "%s", ti.name);
		c->ts[i].id_limit = res->name_id_limit;
	}
	int rc = c->nmem || res->nmem ? ana_mem_extend(c, l->next, live_max_ticks(l)) : 0;
	if (rc)
		return rc;
	uint64_t done = 0;
	rc = live_read(l, rd, &done);
	res->total_records_hint += done;
	return rc;
}

/* @dst: a copy of tree @src, node for node (same numbering). 0 or -ENOMEM
 * (what was made is in @dst, for ana_tree_free()). */
static int tree_clone(struct ana_tree *dst, const struct ana_tree *src, uint64_t *rng)
{
	memset(dst, 0, sizeof(*dst));
	if (!(dst->n = calloc(src->count ? src->count : 1, sizeof(*dst->n))))
		return -ENOMEM;
	dst->cap = src->count ? src->count : 1;
	for (uint32_t i = 0; i < src->count; i++) {
		const struct ana_node *s = &src->n[i];
		struct ana_node *d = &dst->n[i];
		dst->count = i + 1;
		d->id = s->id;
		d->parent = s->parent;
		d->depth = s->depth;
		if (s->nchild) {
			d->child = malloc(s->nchild * sizeof(*d->child));
			d->child_id = malloc(s->nchild * sizeof(*d->child_id));
			if (!d->child || !d->child_id)
				return -ENOMEM;
			memcpy(d->child, s->child, s->nchild * sizeof(*d->child));
			memcpy(d->child_id, s->child_id, s->nchild * sizeof(*d->child_id));
			d->nchild = d->cchild = s->nchild;
		}
		/* into an empty aggregate: a copy. A node never closed yet (count
		 * 0) is left empty, as every output and merge skips it: the GPU
		 * time an open section's children already had stays in the pass */
		ana_agg_merge(&d->agg, &s->agg, rng);
	}
	return ana_nomem_seen() ? -ENOMEM : 0;
}

/* The result of the state as ana_run() would give it for the file as read
 * (run_pass()'s finish, on copies: the state goes on). 0 or -ENOMEM (@o
 * freed). */
static int live_result(struct ana_live *l, struct ana_result *o)
{
	struct ctx *c = &l->c;
	struct ana_result *r = &l->r;
	for (size_t i = 0; i < r->nthreads; i++)
		hpend_flush(&c->ts[i].hp, &r->threads[i].tree);
	*o = *r; /* the scalars; every pointer is replaced below */
	o->threads = calloc(r->nthreads ? r->nthreads : 1, sizeof(*o->threads));
	o->nthreads = 0;
	memset(&o->merged, 0, sizeof(o->merged));
	o->by_name = NULL;
	o->by_name_thread = NULL;
	o->mem = NULL;
	o->nmem = 0;
	o->gpu.dev = NULL; /* ana_pass_finish_copy() copies these */
	o->gpu.ndev = 0;
	o->async_by_name = NULL;
	o->nasync = 0;
	o->instants_by_name = NULL;
	o->ninstants = 0;
	int rc = !o->threads || ana_mem_copy(o, r) ? -ENOMEM : 0;
	for (size_t i = 0; i < r->nthreads && rc == 0; i++) {
		struct ana_thread *th = &o->threads[i];
		*th = r->threads[i];
		th->instants = NULL;
		th->counters = NULL;
		o->nthreads = i + 1;
		if (th->ninstants) {
			if (!(th->instants = malloc(th->ninstants * sizeof(*th->instants)))) {
				rc = -ENOMEM;
				break;
			}
			memcpy(th->instants, r->threads[i].instants, th->ninstants * sizeof(*th->instants));
		}
		if (tree_clone(&th->tree, &r->threads[i].tree, &c->rng)) {
			rc = -ENOMEM;
			break;
		}
		if (th->ncounters && !(th->counters = malloc(th->ncounters * sizeof(*th->counters)))) {
			rc = -ENOMEM;
			break;
		}
		if (th->ncounters)
			memcpy(th->counters, r->threads[i].counters, th->ncounters * sizeof(*th->counters));
	}
	if (rc) {
		o->rd = NULL;
		ana_result_free(o);
		return rc;
	}
	/* run_pass()'s finish, on the copies */
	c->res = o;
	o->start_ns = UINT64_MAX;
	for (size_t i = 0; i < o->nthreads; i++) {
		struct ana_thread *th = &o->threads[i];
		struct tstate *ts = &c->ts[i];
		/* drop_stack() on a copy: the open frames' pending flat sums go
		 * up into ts->fi and the frames below, which are put back after */
		th->open_at_end += ts->depth + ts->rp.excess;
		struct frame *st = NULL;
		struct flat_incl *fi = NULL;
		const uint32_t nfi = ts->nfi;
		if ((ts->depth && !(st = malloc(ts->depth * sizeof(*st)))) ||
		    (nfi && !(fi = malloc(nfi * sizeof(*fi))))) {
			free(st);
			rc = -ENOMEM;
			break;
		}
		if (ts->depth)
			memcpy(st, ts->st, ts->depth * sizeof(*st));
		if (nfi)
			memcpy(fi, ts->fi, nfi * sizeof(*fi));
		pending_pass_up(ts);
		thread_finish(c, th, ts);
		if (ts->depth)
			memcpy(ts->st, st, ts->depth * sizeof(*st));
		if (nfi)
			memcpy(ts->fi, fi, nfi * sizeof(*fi));
		if (ts->nfi > nfi) /* grown by the names of open frames only */
			memset(ts->fi + nfi, 0, (ts->nfi - nfi) * sizeof(*ts->fi));
		free(st);
		free(fi);
	}
	ANA_SAT_ADD(o->lost_records, o->process_lost_records);
	if (o->start_ns == UINT64_MAX)
		o->start_ns = o->end_ns = 0;
	c->res = r; /* the source of the copy; the finish goes to o */
	rc = rc ? rc : ana_pass_finish_copy(c, o);
	c->res = o;
	uint32_t maxid = 0;
	rc = rc ? rc : tree_init(&o->merged);
	for (size_t i = 0; i < o->nthreads && rc == 0; i++) {
		merge_tree(&o->merged, &o->threads[i].tree, &c->rng);
		if (c->ts[i].nflat > maxid)
			maxid = c->ts[i].nflat;
	}
	bool nomem = rc || flats_to_result(c, maxid);
	c->res = r;
	if (nomem || ana_nomem_take()) {
		o->rd = NULL;
		ana_result_free(o);
		return -ENOMEM;
	}
	result_flags(o);
	return 0;
}

int ana_live_update(struct ana_live *l, const char *path, struct ana_result *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	l->st.updates++;
	if (l->never)
		goto full;
	/* the last result's reader, brought up to the file in place (the
	 * caller frees that result without it); else a new one */
	struct pt_reader *rd = NULL;
	bool own = false;
	int rc = l->have && l->r.rd ? fmt_reader_refresh(l->r.rd) : 1;
	if (rc == 0) {
		rd = l->r.rd;
	} else {
		if (rc < 0) /* the shared reader holds part of what failed: the state goes */
			live_drop(l);
		rc = pt_reader_open_trace(path, &rd);
		if (rc) {
			pt_reader_close(rd);
			goto full; /* ana_run() says why */
		}
		own = true;
	}
	if (l->order_wait) { /* until ana_run() reads this trace in file order */
		bool file_order = pt_reader_thread_count(rd) > 64;
		for (size_t i = 0; i < pt_reader_thread_count(rd) && !file_order; i++) {
			struct pt_thread_info ti;
			pt_reader_thread(rd, i, &ti, sizeof(ti));
			file_order = strcmp(ti.name, PT_FMT_GPU_THREAD_NAME) == 0;
		}
		if (!file_order) {
			if (own)
				pt_reader_close(rd);
			goto full;
		}
		l->order_wait = false;
	}
	rc = l->have ? live_extend(l, rd) : 1;
	const bool extended = rc == 0;
	if (rc)
		rc = l->never || l->order_wait ? 1 : live_build(l, rd, err, errlen);
	if (rc == 0)
		rc = live_result(l, out);
	if (rc == 0) {
		out->rd = rd; /* the state borrows it until the next update */
		if (extended)
			l->st.extended++;
		else
			l->st.rebuilt++;
		return 0;
	}
	live_drop(l); /* it may hold part of what failed */
	if (own)
		pt_reader_close(rd);
	if (rc < 0 && rc != -ENOMEM) {
		snprintf(err, errlen, "%s", pt_strerror(rc));
		return rc;
	}
full:
	l->st.full++;
	return ana_run(path, &l->opt, out, err, errlen);
}
