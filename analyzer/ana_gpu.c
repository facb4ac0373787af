/*
 * analyzer/ana_gpu.c - GPU sections, async ranges and instants
 * (doc/analyzer-output.md §3.1-3.3; record layouts: doc/trace-format.md §4.4).
 *
 * GPU sections. An application thread writes GPU_LAUNCH (section id,
 * device, stream, seq) just before the BEGIN of a section timed on a GPU;
 * the recorder's CUDA thread ("ptz-gpu") later writes the GPU_RANGE with
 * the same seq (GPU start and end in host ticks). Either may be read first.
 * They pair by replay/pair.h (rule 9, shared with the exports): the
 * half read first waits there until its partner arrives, so only the
 * halves still unmatched at that point of the pass are held (in file
 * order, the ranges in flight plus the flusher's lag; ana_build.c reads a
 * trace with a ptz-gpu thread in file order for this reason). Whatever is
 * left at the end is counted as a launch without a range or a range
 * without a launch.
 *
 * Attribution. The launch fixes the call-path node: the child named by the
 * section id under the thread's innermost open section, exactly the node
 * the BEGIN that follows will open (so BEGIN and END, the hot path, do no
 * GPU work at all). A paired range adds to that node's self distribution,
 * and its duration to the inclusive sums of the node and its ancestors,
 * stopping below the outermost enclosing open GPU section on the same
 * device and stream: that section's own range already covers this one
 * (nested GPU sections on one stream), so GPU time is never counted twice
 * up the tree. The flat by-name view counts a range once per name on that
 * stretch of the path (recursion-safe, like the CPU totals).
 *
 * Devices. Every range (paired or not) adds to its device: count, sum of
 * durations, launch-to-start latency, streams seen, and the union of the
 * ranges ("instrumented GPU busy"), kept exactly as sorted disjoint
 * intervals: 16 bytes per run of overlapping or touching ranges, at most
 * one per range. An exact union cannot be streamed in bounded memory here:
 * ranges of different streams arrive in resolution order, not start
 * order, so no interval is ever known to be final before the end.
 *
 * Async ranges pair ASYNC_BEGIN and ASYNC_END by their 64-bit async id,
 * by the same rule (the END may be read first, e.g. when its thread is
 * read first). Instants are counted per thread and name.
 *
 * Failure: an allocation failure drops the contribution of the record at
 * hand (a row misses a range, a launch stays unmatched); the pass goes on.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/ana.h"
#include "analyzer/ana_pass.h"

/* ---------------------------------------------------------------- pass state */

/* The counts of one kind of pair's halves left unpaired, by side. */
struct unpaired {
	uint64_t *a, *b;
};
#define UNPAIRED_GPU(res) ((struct unpaired){ &(res)->gpu.unmatched_launches, &(res)->gpu.unmatched_ranges })
#define UNPAIRED_ASYNC(res) ((struct unpaired){ &(res)->async_unmatched_begins, &(res)->async_unmatched_ends })

/* Counts one half unpaired (an rp_pairs_each() callback: @key and @half unused). */
static void count_unpaired(void *ctx, uint64_t key, enum rp_side side, const void *half)
{
	const struct unpaired *u = ctx;
	(void)key;
	(void)half;
	(*(side == RP_SIDE_A ? u->a : u->b))++;
}

/* What a GPU half keeps while it waits (replay/pair.h; side A the launch, B the range). */
struct gpu_half {
	uint64_t start, end, launch; /* range: GPU start, GPU end, launch tick */
	uint32_t pos, node, cover;   /* launch: thread position, node, covering depth */
	uint8_t kept;                /* range: inside the time window */
};

/* What an async half keeps (side A the begin, B the end). */
struct async_half {
	uint64_t ticks;
	uint32_t name;
};

struct gpu_pass {
	struct rp_pairs pend;  /* by seq: struct gpu_half */
	struct rp_pairs async; /* by async id: struct async_half */
	uint64_t stamp;        /* ranges attributed so far (struct gpu_flat.stamp) */
	uint64_t first_ticks, last_ticks; /* earliest GPU start, latest GPU end */
	bool any_range;
};

static struct gpu_pass *gp_of(struct ctx *c)
{
	if (c->gp)
		return c->gp;
	c->gp = calloc(1, sizeof(*c->gp));
	if (!c->gp)
		ana_nomem_note();
	if (c->gp) {
		rp_pairs_init(&c->gp->pend, sizeof(struct gpu_half));
		rp_pairs_init(&c->gp->async, sizeof(struct async_half));
	}
	return c->gp;
}

/* Name ids index arrays: a corrupt id beyond the string table's limit
 * shares slot 0 ("unknown") instead of sizing an array by it. */
static inline uint32_t name_slot(uint32_t id)
{
	return id < PT_FMT_MAX_STRING_ID ? id : 0;
}

/* Signed tick difference a - b in ns, with the trace slope; saturated at
 * the int64_t range (a crafted clock table's slope can pass it). */
static int64_t signed_ns(const struct ctx *c, uint64_t a, uint64_t b)
{
	double d = (double)(int64_t)(a - b) * c->ns_per_tick;
	d = d < 0 ? d - 0.5 : d + 0.5;
	if (!(d < 9223372036854774784.0)) /* the last double below 2^63 */
		return INT64_MAX;
	if (!(d > -9223372036854774784.0))
		return INT64_MIN;
	return (int64_t)d;
}

static struct ana_gpu *gpu_of(struct ana_agg *a)
{
	if (!a->gpu)
		a->gpu = calloc(1, sizeof(*a->gpu));
	if (!a->gpu)
		ana_nomem_note();
	return a->gpu;
}

/* ---------------------------------------------------------------- GPU ranges */

/* Thread @ts's recursion-safe GPU sums of name @id (grown as needed); NULL
 * when they cannot be grown. */
static struct gpu_flat *gpu_flat_of(struct tstate *ts, uint32_t id)
{
	uint32_t slot = name_slot(id);
	struct gpu_flat *gf = ana_grow_by_id(ts->gf, &ts->ngf, slot, sizeof(*ts->gf), ts->id_limit);
	if (!gf)
		return NULL;
	ts->gf = gf;
	return &gf[slot];
}

/* Section and flat attribution of a paired, kept range (see the top). */
static void gpu_attribute(struct ctx *c, uint32_t pos, uint32_t node, uint32_t cover, uint64_t start, uint64_t end,
			  uint64_t launch)
{
	if (node == UINT32_MAX || pos >= c->res->nthreads)
		return;
	struct ana_tree *t = &c->res->threads[pos].tree;
	struct tstate *ts = &c->ts[pos];
	uint64_t dur_ns = ana_ticks_ns(c, end > start ? end - start : 0);
	int64_t lat_ns = signed_ns(c, start, launch);
	struct ana_gpu *g;
	if (ana_in_domain(c, t->n[node].id) && (g = gpu_of(&t->n[node].agg)))
		ana_gpu_dist_add(&g->self, dur_ns, lat_ns);
	uint64_t stamp = ++c->gp->stamp;
	/* flat: the names at or above the covering section already hold this
	 * range inside the enclosing one (A(gpu) > B > A(gpu) on one stream
	 * counted the inner range twice for A): stamped first, from the
	 * covering section up, so that the walk below skips them */
	uint32_t x = node;
	while (x != 0 && t->n[x].depth > cover)
		x = t->n[x].parent;
	for (struct gpu_flat *gf; x != 0; x = t->n[x].parent)
		if (ana_in_domain(c, t->n[x].id) && (gf = gpu_flat_of(ts, t->n[x].id)))
			gf->stamp = stamp;
	for (x = node; x != 0 && t->n[x].depth > cover; x = t->n[x].parent) {
		uint32_t id = t->n[x].id;
		if (!ana_in_domain(c, id))
			continue;
		if ((g = gpu_of(&t->n[x].agg))) {
			g->incl_count++;
			g->incl_total_ns += dur_ns;
		}
		struct gpu_flat *gf = gpu_flat_of(ts, id);
		if (gf && gf->stamp != stamp) {
			gf->stamp = stamp;
			gf->count++;
			gf->total_ns += dur_ns;
		}
	}
}

static struct ana_gpu_device *device_of(struct ana_result *res, uint32_t device)
{
	size_t i = 0;
	while (i < res->gpu.ndev && res->gpu.dev[i].device < device)
		i++;
	if (i < res->gpu.ndev && res->gpu.dev[i].device == device)
		return &res->gpu.dev[i];
	struct ana_gpu_device *d = realloc(res->gpu.dev, (res->gpu.ndev + 1) * sizeof(*d));
	if (!d) {
		ana_nomem_note();
		return NULL;
	}
	res->gpu.dev = d;
	memmove(&d[i + 1], &d[i], (res->gpu.ndev - i) * sizeof(*d));
	res->gpu.ndev++;
	memset(&d[i], 0, sizeof(d[i]));
	d[i].device = device;
	rp_map_init(&d[i].stream_set, sizeof(uint64_t));
	return &d[i];
}

/*
 * Adds [s, e) (ticks, s < e) to the device's sorted disjoint intervals,
 * merging every interval it overlaps or touches. Ranges mostly arrive in
 * increasing order, so the common case appends. On ENOMEM the interval is
 * left out (the busy time reads low).
 */
static void busy_add(struct ana_gpu_device *d, uint64_t s, uint64_t e)
{
	uint64_t *iv = d->iv;
	size_t n = d->niv;
	if (n == 0 || s > iv[2 * n - 1]) { /* after the last one */
		if (n == d->civ) {
			size_t nc = d->civ ? 2 * d->civ : 64;
			uint64_t *p = realloc(d->iv, 2 * nc * sizeof(*p));
			if (!p) {
				ana_nomem_note();
				return;
			}
			d->iv = iv = p;
			d->civ = nc;
		}
		iv[2 * n] = s;
		iv[2 * n + 1] = e;
		d->niv++;
		return;
	}
	/* lo: first interval ending at or after s (ends ascend); it exists */
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (iv[2 * mid + 1] < s)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* past: first interval starting after e; [lo, past) all meet [s, e) */
	size_t a = lo, past = n;
	while (a < past) {
		size_t mid = (a + past) / 2;
		if (iv[2 * mid] <= e)
			a = mid + 1;
		else
			past = mid;
	}
	if (past == lo) { /* meets none: insert before lo */
		if (n == d->civ) {
			size_t nc = 2 * d->civ;
			uint64_t *p = realloc(d->iv, 2 * nc * sizeof(*p));
			if (!p) {
				ana_nomem_note();
				return;
			}
			d->iv = iv = p;
			d->civ = nc;
		}
		memmove(&iv[2 * lo + 2], &iv[2 * lo], 2 * (n - lo) * sizeof(*iv));
		iv[2 * lo] = s;
		iv[2 * lo + 1] = e;
		d->niv++;
		return;
	}
	uint64_t ns = iv[2 * lo] < s ? iv[2 * lo] : s, ne = iv[2 * (past - 1) + 1] > e ? iv[2 * (past - 1) + 1] : e;
	iv[2 * lo] = ns;
	iv[2 * lo + 1] = ne;
	memmove(&iv[2 * lo + 2], &iv[2 * past], 2 * (n - past) * sizeof(*iv));
	d->niv -= past - lo - 1;
}

static void device_add(struct ctx *c, const struct pt_record *r)
{
	struct ana_gpu_device *d = device_of(c->res, r->aux);
	if (!d)
		return;
	uint64_t start = r->value, end = r->value2;
	d->ranges++;
	d->sum_ns += ana_ticks_ns(c, end > start ? end - start : 0);
	ana_slat_add(&d->lat, signed_ns(c, start, r->ticks));
	if (!rp_map_find(&d->stream_set, r->value4)) {
		if (rp_map_add(&d->stream_set, r->value4))
			d->streams++;
		else
			ana_nomem_note();
	}
	if (end > start)
		busy_add(d, start, end);
}

/*
 * One GPU half meets its partner (replay/pair.h): paired, a range inside
 * the time window is attributed to its launch's section; else it waits.
 * Unpaired now: seq 0 (a 1.0 body: nothing to pair with) and a half the
 * pairs could not store (ENOMEM).
 */
static void gpu_meet(struct ctx *c, uint64_t seq, enum rp_side side, const struct gpu_half *h)
{
	struct ana_result *res = c->res;
	struct gpu_half o;
	const enum rp_meet m = rp_pairs_meet(&c->gp->pend, seq, side, h, &o);
	if (m == RP_PAIRED) {
		const struct gpu_half *l = side == RP_SIDE_A ? h : &o, *g = side == RP_SIDE_A ? &o : h;
		res->gpu.paired++;
		if (g->kept)
			gpu_attribute(c, l->pos, l->node, l->cover, g->start, g->end, g->launch);
		return;
	}
	if (m == RP_WAITS)
		return;
	if (m == RP_NOMEM)
		ana_nomem_note();
	count_unpaired(&UNPAIRED_GPU(res), seq, side, h);
}

static void gpu_range(struct ctx *c, const struct pt_record *r)
{
	struct ana_result *res = c->res;
	struct gpu_pass *gp = gp_of(c);
	res->has_gpu = true;
	res->gpu.ranges++;
	if (!gp)
		return;
	uint64_t start = r->value, end = r->value2, seq = r->value3;
	if (!gp->any_range || start < gp->first_ticks)
		gp->first_ticks = start;
	if (!gp->any_range || end > gp->last_ticks)
		gp->last_ticks = end;
	gp->any_range = true;
	bool kept = start >= c->since_ticks && end <= c->until_ticks;
	if (kept)
		device_add(c, r);
	gpu_meet(c, seq, RP_SIDE_B,
		 &(struct gpu_half){ .start = start, .end = end, .launch = r->ticks, .kept = kept });
}

static void gpu_pair_launch(struct ctx *c, uint64_t seq, uint32_t pos, uint32_t node, uint32_t cover);

void ana_pass_gpu_launch_node(struct tstate *ts, struct ana_thread *th, const struct pt_record *r, uint32_t *node,
			      uint32_t *cover)
{
	uint32_t parent = ts->depth ? ts->st[ts->depth - 1].node : 0;
	*node = ana_tree_child(&th->tree, parent, r->id); /* the node its BEGIN opens */
	*cover = 0;
	/* open GPU sections: drop those closed since (the stack holds another
	 * frame at their depth now); the outermost on this device and stream covers this one */
	uint32_t k = 0;
	while (k < ts->ngs && ts->gs[k].depth < ts->depth && ts->st[ts->gs[k].depth].node == ts->gs[k].node &&
	       ts->st[ts->gs[k].depth].start == ts->gs[k].start)
		k++;
	ts->ngs = k;
	for (k = 0; k < ts->ngs; k++)
		if (ts->gs[k].device == r->aux && ts->gs[k].stream == r->value) {
			*cover = ts->gs[k].depth + 1; /* node depth of that section */
			break;
		}
	if (*node != UINT32_MAX) {
		if (ts->ngs == ts->cgs) {
			uint32_t nc = ts->cgs ? 2 * ts->cgs : 8;
			struct gpu_open *g = realloc(ts->gs, nc * sizeof(*g));
			if (!g)
				ana_nomem_note();
			if (g) {
				ts->gs = g;
				ts->cgs = nc;
			}
		}
		if (ts->ngs < ts->cgs)
			ts->gs[ts->ngs++] = (struct gpu_open){ .depth = ts->depth, .node = *node, .device = r->aux,
							       .start = r->ticks, .stream = r->value };
	}
}

void ana_pass_gpu_launch_pair(struct ctx *c, uint32_t pos, const struct pt_record *r, uint32_t node, uint32_t cover)
{
	c->res->has_gpu = true;
	c->res->gpu.launches++;
	if (gp_of(c))
		gpu_pair_launch(c, r->value2, pos, node, cover);
}

/* Both halves at once, as a reader of -j does them apart (ana_build.c). */
static void gpu_launch(struct ctx *c, struct ana_thread *th, struct tstate *ts, const struct pt_record *r)
{
	uint32_t node, cover;
	ana_pass_gpu_launch_node(ts, th, r, &node, &cover);
	ana_pass_gpu_launch_pair(c, (uint32_t)(th - c->res->threads), r, node, cover);
}

/* The launch @seq of thread position @pos (UINT32_MAX: a thread not
 * analyzed) at @node, covered up to depth @cover: pairs it or waits. */
static void gpu_pair_launch(struct ctx *c, uint64_t seq, uint32_t pos, uint32_t node, uint32_t cover)
{
	gpu_meet(c, seq, RP_SIDE_A, &(struct gpu_half){ .pos = pos, .node = node, .cover = cover });
}

void ana_pass_gpu_error(struct ctx *c, const struct pt_record *r)
{
	c->res->has_gpu = true;
	c->res->gpu.errors[r->aux - ANA_GPU_ERRC_FIRST] += r->value;
}

/* The INSTANT that says why GPU timing is off (pt_gpu_begin(), format.h). */
static void off_reason(struct ctx *c, const struct pt_record *r)
{
	static const char prefix[] = "GPU timing off";
	const char *n = ana_string(c->res, r->id, NULL);
	if (n && strncmp(n, prefix, sizeof(prefix) - 1) == 0) {
		c->res->has_gpu = true;
		c->res->gpu.off_reason = r->id;
	}
}

/* ---------------------------------------------------------------- async, instants */

static void async_pair(struct ctx *c, uint32_t name, uint64_t begin, uint64_t end)
{
	struct ana_result *res = c->res;
	if (begin < c->since_ticks || end > c->until_ticks || !ana_in_domain(c, name))
		return;
	uint32_t slot = name_slot(name);
	struct ana_async *a = ana_grow_by_id(res->async_by_name, &res->nasync, slot, sizeof(*a), res->name_id_limit + 1);
	if (!a)
		return;
	res->async_by_name = a;
	a += slot;
	uint64_t dur_ns = ana_ticks_ns(c, end > begin ? end - begin : 0);
	if (a->count == 0 || dur_ns < a->min_ns)
		a->min_ns = dur_ns;
	if (dur_ns > a->max_ns)
		a->max_ns = dur_ns;
	a->count++;
	a->total_ns += dur_ns;
	ana_hist_add(&a->hist, dur_ns, 1);
}

static void async_meet(struct ctx *c, const struct pt_record *r)
{
	struct ana_result *res = c->res;
	struct gpu_pass *gp = gp_of(c);
	const bool begin = r->kind == PT_REC_ASYNC_BEGIN;
	res->has_async = true;
	if (!gp)
		return;
	const struct async_half h = { .ticks = r->ticks, .name = r->id };
	struct async_half o;
	const enum rp_meet m = rp_pairs_meet(&gp->async, r->value, begin ? RP_SIDE_A : RP_SIDE_B, &h, &o);
	if (m == RP_PAIRED) {
		const struct async_half *b = begin ? &h : &o, *e = begin ? &o : &h;
		async_pair(c, rp_async_name(b->name, e->name), b->ticks, e->ticks);
		return;
	}
	if (m == RP_WAITS)
		return;
	if (m == RP_NOMEM)
		ana_nomem_note();
	/* async id 0 (pt_async_begin() never returns it) or no memory: unpaired */
	count_unpaired(&UNPAIRED_ASYNC(res), r->value, begin ? RP_SIDE_A : RP_SIDE_B, &h);
}

static void instant(struct ctx *c, struct ana_thread *th, const struct pt_record *r)
{
	c->res->has_instants = true;
	off_reason(c, r);
	if (r->ticks < c->since_ticks || r->ticks > c->until_ticks || !ana_in_domain(c, r->id))
		return;
	uint32_t slot = name_slot(r->id);
	uint64_t *n = ana_grow_by_id(th->instants, &th->ninstants, slot, sizeof(*n), c->res->name_id_limit + 1);
	if (!n)
		return;
	th->instants = n;
	n[slot]++;
}

/* ---------------------------------------------------------------- entry points */

void ana_pass_ext(struct ctx *c, struct ana_thread *th, struct tstate *ts, const struct pt_record *r)
{
	/* these kinds carry absolute ticks: they extend the thread's span */
	if (r->ticks > ts->last_ticks)
		ts->last_ticks = r->ticks;
	switch (r->kind) {
	case PT_REC_GPU_LAUNCH: gpu_launch(c, th, ts, r); break;
	case PT_REC_GPU_RANGE: gpu_range(c, r); break;
	case PT_REC_ASYNC_BEGIN:
	case PT_REC_ASYNC_END: async_meet(c, r); break;
	case PT_REC_INSTANT: instant(c, th, r); break;
	default: break;
	}
}

void ana_pass_gpu_only(struct ctx *c, const struct pt_record *r)
{
	if (r->kind == PT_REC_GPU_LAUNCH) { /* paired, so that its range is not left over; attributed nowhere */
		c->res->has_gpu = true;
		c->res->gpu.launches++;
		if (gp_of(c))
			gpu_pair_launch(c, r->value2, UINT32_MAX, UINT32_MAX, 0);
	} else if (r->kind == PT_REC_GPU_RANGE)
		gpu_range(c, r);
	else if (r->kind == PT_REC_ERROR && ana_is_gpu_errc(r->aux))
		ana_pass_gpu_error(c, r);
	else if (r->kind == PT_REC_INSTANT)
		off_reason(c, r);
}

void ana_pass_gp_free(struct ctx *c)
{
	if (!c->gp)
		return;
	rp_pairs_free(&c->gp->pend);
	rp_pairs_free(&c->gp->async);
	free(c->gp);
	c->gp = NULL;
}

/* What the pairing state @gp leaves over, into @res: unmatched halves,
 * the pending peaks, the wall span widened to the GPU ranges. @gp stays. */
static void gp_leftovers(const struct gpu_pass *gp, struct ana_result *res)
{
	rp_pairs_each(&gp->pend, count_unpaired, &UNPAIRED_GPU(res));
	rp_pairs_each(&gp->async, count_unpaired, &UNPAIRED_ASYNC(res));
	res->gpu.pending_peak = gp->pend.peak;
	res->async_pending_peak = gp->async.peak;
	if (gp->any_range) { /* the wall span covers every GPU range */
		uint64_t s = pt_reader_ticks_to_ns(res->rd, gp->first_ticks);
		uint64_t e = pt_reader_ticks_to_ns(res->rd, gp->last_ticks);
		if (res->start_ns == 0 && res->end_ns == 0) {
			res->start_ns = s;
			res->end_ns = e;
		}
		if (s < res->start_ns)
			res->start_ns = s;
		if (e > res->end_ns)
			res->end_ns = e;
	}
}

/* The devices' busy time and the instants over threads, into c->res. */
static void finish_devices_instants(struct ctx *c)
{
	struct ana_result *res = c->res;
	for (size_t i = 0; i < res->gpu.ndev; i++) {
		struct ana_gpu_device *d = &res->gpu.dev[i];
		uint64_t busy = 0;
		for (size_t k = 0; k < d->niv; k++)
			busy += d->iv[2 * k + 1] - d->iv[2 * k];
		d->busy_ns = ana_ticks_ns(c, busy);
		/* the intervals stay (suggest's gpu-idle reads the gaps), without their slack */
		if (!d->niv) {
			free(d->iv);
			d->iv = NULL;
			d->civ = 0;
		} else {
			uint64_t *iv = realloc(d->iv, 2 * d->niv * sizeof(*iv));
			if (iv) { /* a failed shrink keeps the larger block */
				d->iv = iv;
				d->civ = d->niv;
			}
		}
		rp_map_free(&d->stream_set);
	}
	for (size_t i = 0; i < res->nthreads; i++) {
		const struct ana_thread *th = &res->threads[i];
		uint64_t *n = th->ninstants ? ana_grow_by_id(res->instants_by_name, &res->ninstants, th->ninstants - 1,
							 sizeof(*n), res->name_id_limit + 1)
					    : NULL;
		if (!n)
			continue;
		res->instants_by_name = n;
		for (uint32_t id = 0; id < th->ninstants; id++)
			n[id] += th->instants[id];
	}
}

void ana_pass_finish(struct ctx *c)
{
	if (c->gp) {
		gp_leftovers(c->gp, c->res);
		ana_pass_gp_free(c);
	}
	finish_devices_instants(c);
}

int ana_pass_finish_copy(struct ctx *c, struct ana_result *o)
{
	const struct ana_result *r = c->res;
	o->gpu.dev = NULL;
	o->gpu.ndev = 0;
	o->async_by_name = NULL;
	o->nasync = 0;
	o->instants_by_name = NULL;
	o->ninstants = 0;
	if (r->gpu.ndev && !(o->gpu.dev = calloc(r->gpu.ndev, sizeof(*o->gpu.dev))))
		return -ENOMEM;
	for (size_t i = 0; i < r->gpu.ndev; i++) {
		const struct ana_gpu_device *s = &r->gpu.dev[i];
		struct ana_gpu_device *d = &o->gpu.dev[i];
		*d = *s;
		memset(&d->lat.pos, 0, sizeof(d->lat.pos));
		memset(&d->lat.negh, 0, sizeof(d->lat.negh));
		memset(&d->stream_set, 0, sizeof(d->stream_set)); /* the finish frees it: not copied */
		d->iv = NULL;
		d->civ = 0;
		o->gpu.ndev = i + 1;
		ana_hist_merge(&d->lat.pos, &s->lat.pos);
		ana_hist_merge(&d->lat.negh, &s->lat.negh);
		if (s->niv) {
			if (!(d->iv = malloc(2 * s->niv * sizeof(*d->iv))))
				return -ENOMEM;
			memcpy(d->iv, s->iv, 2 * s->niv * sizeof(*d->iv));
			d->civ = s->niv;
		}
	}
	if (r->nasync) {
		if (!(o->async_by_name = calloc(r->nasync, sizeof(*o->async_by_name))))
			return -ENOMEM;
		o->nasync = r->nasync;
		for (uint32_t id = 0; id < r->nasync; id++) {
			o->async_by_name[id] = r->async_by_name[id];
			memset(&o->async_by_name[id].hist, 0, sizeof(o->async_by_name[id].hist));
			ana_hist_merge(&o->async_by_name[id].hist, &r->async_by_name[id].hist);
		}
	}
	if (ana_nomem_seen())
		return -ENOMEM;
	if (c->gp)
		gp_leftovers(c->gp, o);
	c->res = o;
	finish_devices_instants(c);
	c->res = (struct ana_result *)r;
	return ana_nomem_seen() ? -ENOMEM : 0;
}

void ana_pass_flat_gpu(struct tstate *ts, uint32_t id, struct ana_agg *fa)
{
	const struct gpu_flat *gf = id < ts->ngf ? &ts->gf[id] : NULL;
	if (!fa->gpu && (!gf || !gf->count))
		return;
	if (!fa->gpu && !(fa->gpu = calloc(1, sizeof(*fa->gpu)))) {
		ana_nomem_note();
		return;
	}
	/* the merge from the tree summed every node's inclusive figures */
	fa->gpu->incl_count = gf ? gf->count : 0;
	fa->gpu->incl_total_ns = gf ? gf->total_ns : 0;
}

void ana_pass_free_tstate(struct tstate *ts)
{
	free(ts->gs);
	free(ts->gf);
	ts->gs = NULL;
	ts->gf = NULL;
	ts->ngs = ts->cgs = ts->ngf = 0;
}

/* ---------------------------------------------------------------- labels */

const char *ana_gpu_errc_name(uint32_t code)
{
	static const char *const names[ANA_GPU_ERRC_N] = {
		"pool empty", "stream capturing", "CUDA call failed", "GPU timing off",
		"early start",  "queue full",       "unfinished at close",
	};
	return code >= ANA_GPU_ERRC_FIRST && code - ANA_GPU_ERRC_FIRST < ANA_GPU_ERRC_N
		       ? names[code - ANA_GPU_ERRC_FIRST]
		       : NULL;
}

/* ---------------------------------------------------------------- breakdown (after the pass) */

uint64_t ana_gpu_timed_part(const struct ana_agg *a, uint64_t v)
{
	const uint64_t timed = a->gpu ? a->gpu->self.count : 0;
	if (!v || timed >= a->count)
		return v;
	/* v * timed / count without overflow: timed < count, so the result
	 * fits; a double's 53 bits are exact below 2^53 and within 2^-52 above */
	return (uint64_t)((double)v * ((double)timed / (double)a->count));
}

/* Adds @s's inclusive breakdown sums into @d. */
static void breakdown_add(struct ana_gpu *d, const struct ana_gpu *s)
{
	for (int k = 0; k < ANA_NMETRIC; k++)
		ANA_SAT_ADD(d->work[k], s->work[k]);
	for (int k = 0; k < ANA_DIRS; k++) {
		ANA_SAT_ADD(d->copy_dir_ns[k], s->copy_dir_ns[k]);
		ANA_SAT_ADD(d->copy_dir_bytes[k], s->copy_dir_bytes[k]);
	}
	ANA_SAT_ADD(d->copy_ns, s->copy_ns);
	ANA_SAT_ADD(d->launch_ns, s->launch_ns);
}

static void breakdown_clear(struct ana_gpu *g)
{
	memset(g->work, 0, sizeof(g->work));
	memset(g->copy_dir_ns, 0, sizeof(g->copy_dir_ns));
	memset(g->copy_dir_bytes, 0, sizeof(g->copy_dir_bytes));
	g->copy_ns = g->launch_ns = 0;
}

void ana_gpu_breakdown_tree(struct ana_tree *t)
{
	for (uint32_t i = t->count; i-- > 1;) {
		struct ana_agg *a = &t->n[i].agg;
		struct ana_gpu *g = a->gpu;
		if (!g)
			continue;
		/* the children (numbered after @i) have added theirs already */
		if (g->self.count) { /* a GPU section: its own part */
			bool copy = false;
			for (int k = 0; k < ANA_NMETRIC; k++)
				ANA_SAT_ADD(g->work[k], ana_gpu_timed_part(a, a->metric_self[k]));
			for (int k = 0; k < ANA_DIRS; k++)
				if (ana_xfer_self(a, k)) {
					copy = true;
					ANA_SAT_ADD(g->copy_dir_ns[k], g->self.total_ns);
					ANA_SAT_ADD(g->copy_dir_bytes[k], ana_gpu_timed_part(a, ana_xfer_self(a, k)));
				}
			if (copy)
				ANA_SAT_ADD(g->copy_ns, g->self.total_ns);
			ANA_SAT_ADD(g->launch_ns, a->self_ns);
		}
		uint32_t p = t->n[i].parent;
		if (p == 0 || p == i)
			continue;
		struct ana_gpu *pg = gpu_of(&t->n[p].agg);
		if (pg)
			breakdown_add(pg, g);
	}
}

/* @arg: the flat rows, by name id */
static void breakdown_flat_visit(void *arg, const struct ana_node *n)
{
	struct ana_agg *fa = &((struct ana_agg *)arg)[n->id];
	if (n->agg.gpu && fa->count) {
		struct ana_gpu *fg = gpu_of(fa);
		if (fg)
			breakdown_add(fg, n->agg.gpu);
	}
}

void ana_gpu_breakdown_flat(const struct ana_tree *t, struct ana_agg *flat, uint32_t nflat)
{
	for (uint32_t id = 0; id < nflat; id++)
		if (flat[id].gpu)
			breakdown_clear(flat[id].gpu); /* the merge from the tree summed every path */
	/* a node adds its subtree's sums unless a node of its name encloses
	 * it, as the flat CPU totals (ENOMEM: noted, the sums stay 0) */
	ana_tree_walk_outermost(t, nflat, breakdown_flat_visit, flat);
}
