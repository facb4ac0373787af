/*
 * viewer-export/pfx_ranges.c - GPU ranges and async ranges laid out on
 * tracks for the exporters. The rules are in pfx_ranges.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/ana.h" /* ana_window_ticks(), ana_sat_u64() */
#include "ptz/errors.h"
#include "viewer-export/pfx_ranges.h"

static int grow(void **p, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 64;
	void *q = realloc(*p, nc * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = nc;
	return 0;
}

/* ==== GPU ranges ==== */

int pfx_gpu_add(struct pfx_gpu *g, const struct pt_record *r)
{
	if (grow((void **)&g->r, &g->cap, g->n, sizeof(*g->r)))
		return -ENOMEM;
	struct pfx_gpu_range *x = &g->r[g->n++];
	*x = (struct pfx_gpu_range){ 0 }; /* the exporter's fields (m_self, x_self) start empty */
	x->ord = g->n - 1;
	x->seq = r->value3;
	x->stream = r->value4;
	x->launch_ticks = r->ticks;
	x->raw_start_ticks = r->value;
	x->start_ticks = r->value > r->ticks ? r->value : r->ticks;
	x->end_ticks = r->value2 > x->start_ticks ? r->value2 : x->start_ticks;
	x->device = r->aux;
	x->name_id = r->id;
	x->snap_ticks = 0;
	x->lane = 0;
	x->flags = 0;
	return 0;
}

static int cmp_u64(uint64_t a, uint64_t b)
{
	return (a > b) - (a < b);
}

/* (device, stream, start, end descending, seq, launch): a total order on
 * distinct records, so the layout does not depend on qsort. */
static int cmp_gpu(const void *pa, const void *pb)
{
	const struct pfx_gpu_range *a = pa, *b = pb;
	int c;
	if ((c = cmp_u64(a->device, b->device)) || (c = cmp_u64(a->stream, b->stream)) ||
	    (c = cmp_u64(a->start_ticks, b->start_ticks)) || (c = cmp_u64(b->end_ticks, a->end_ticks)) ||
	    (c = cmp_u64(a->seq, b->seq)) || (c = cmp_u64(a->launch_ticks, b->launch_ticks)) ||
	    (c = cmp_u64(a->name_id, b->name_id)))
		return c;
	return cmp_u64(a->raw_start_ticks, b->raw_start_ticks);
}

/* The open ranges of one lane of the current stream, outermost first. */
struct nest_open {
	uint64_t start, end; /* start as laid out (after any snap) */
};
struct nest_lane {
	struct nest_open *o;
	size_t n, cap;
};

/*
 * Whether @x nests in lane @l once its start moves to the end of the open
 * ranges it overlaps, by at most @snap_ticks and 1% of its length in all
 * (jitter, pfx_ranges.h).
 * If so, moves it and pops those ranges; else changes nothing, so the
 * lane stays right for the ranges after @x, which start no earlier.
 */
static bool snap_lane0(struct nest_lane *l, struct pfx_gpu_range *x, uint64_t snap_ticks)
{
	const uint64_t len = x->end_ticks - x->start_ticks;
	uint64_t s = x->start_ticks;
	size_t n = l->n;
	while (n && l->o[n - 1].end < x->end_ticks) {
		const uint64_t e = l->o[n - 1].end;
		const uint64_t moved = e - x->start_ticks; /* in all, if it moves to e */
		if (e > s && (moved > snap_ticks || moved * 100 > len))
			return false; /* a real partial overlap */
		s = e > s ? e : s;
		n--;
	}
	x->snap_ticks += s - x->start_ticks;
	x->start_ticks = s;
	l->n = n;
	return true;
}

int pfx_gpu_finish(struct pfx_gpu *g, uint64_t snap_ticks)
{
	int rc = -ENOMEM;
	struct nest_lane *nl = NULL; /* nl[0..nalloc) initialized, [0..nnl) in use */
	size_t nnl = 0, nalloc = 0, nlcap = 0;
	uint32_t *by_ord = NULL;
	free(g->lanes);
	free(g->devices);
	rp_pairs_free(&g->pairs);
	rp_pairs_init(&g->pairs, sizeof(uint32_t));
	g->lanes = NULL;
	g->devices = NULL;
	g->nlanes = g->ndevices = 0;
	if (!g->n)
		return 0;
	if (g->n > UINT32_MAX)
		return -ENOMEM;
	qsort(g->r, g->n, sizeof(*g->r), cmp_gpu);
	size_t lcap = 0, dcap = 0;
	uint32_t first_lane = 0; /* the current stream's lane 0 in g->lanes */
	for (size_t i = 0; i < g->n; i++) {
		struct pfx_gpu_range *x = &g->r[i];
		const bool new_dev = i == 0 || x->device != g->r[i - 1].device;
		if (new_dev || x->stream != g->r[i - 1].stream) {
			if (new_dev) {
				if (grow((void **)&g->devices, &dcap, g->ndevices, sizeof(*g->devices)))
					goto out;
				g->devices[g->ndevices++] = x->device;
			}
			first_lane = (uint32_t)g->nlanes;
			nnl = 0;
		}
		/* lowest lane where x nests: pop what ended by x's start, then
		 * the innermost open range must contain x's end */
		size_t k = 0;
		for (; k < nnl; k++) {
			struct nest_lane *l = &nl[k];
			while (l->n && l->o[l->n - 1].end <= x->start_ticks)
				l->n--;
			if (!l->n || l->o[l->n - 1].end >= x->end_ticks) {
				/* nests; if its parent's start was moved (jitter), it
				 * moves with it, else it would begin before its parent
				 * and the track mis-nest */
				const uint64_t ps = l->n ? l->o[l->n - 1].start : 0;
				if (ps > x->start_ticks) {
					x->snap_ticks += ps - x->start_ticks;
					x->start_ticks = ps;
					if (x->end_ticks < ps)
						x->end_ticks = ps;
				}
				break;
			}
			if (k == 0 && snap_lane0(l, x, snap_ticks))
				break;
		}
		x->flags &= ~PFX_GPU_NO_LANE;
		if (k == nnl && nnl == PFX_GPU_MAX_LANES) { /* nests nowhere: not drawn */
			x->flags |= PFX_GPU_NO_LANE;
			x->lane = first_lane;
			continue;
		}
		if (k == nnl) {
			if (nnl == nalloc) {
				if (grow((void **)&nl, &nlcap, nalloc, sizeof(*nl)))
					goto out;
				memset(&nl[nalloc++], 0, sizeof(*nl));
			}
			nl[nnl++].n = 0;
			if (grow((void **)&g->lanes, &lcap, g->nlanes, sizeof(*g->lanes)))
				goto out;
			g->lanes[g->nlanes++] = (struct pfx_gpu_lane){
				.stream = x->stream,
				.device = x->device,
				.device_index = (uint32_t)g->ndevices - 1,
				.lane = (uint32_t)k,
			};
		}
		struct nest_lane *l = &nl[k];
		if (grow((void **)&l->o, &l->cap, l->n, sizeof(*l->o)))
			goto out;
		l->o[l->n++] = (struct nest_open){ x->start_ticks, x->end_ticks };
		x->lane = first_lane + (uint32_t)k;
	}
	/* replay/pair.h: the ranges wait for their launches, in the order read */
	if (!(by_ord = malloc(g->n * sizeof(*by_ord))))
		goto out;
	for (size_t i = 0; i < g->n; i++)
		by_ord[g->r[i].ord] = (uint32_t)i;
	for (size_t k = 0; k < g->n; k++)
		if (rp_pairs_meet(&g->pairs, g->r[by_ord[k]].seq, RP_SIDE_B, &by_ord[k], NULL) == RP_NOMEM)
			goto out;
	rc = 0;
out:
	free(by_ord);
	for (size_t k = 0; k < nalloc; k++)
		free(nl[k].o);
	free(nl);
	return rc;
}

size_t pfx_gpu_keep(struct pfx_gpu *g, uint64_t since, uint64_t until, uint64_t *first_no_lane)
{
	size_t no_lane = 0;
	for (size_t i = 0; i < g->n; i++) {
		struct pfx_gpu_range *r = &g->r[i];
		if (r->start_ticks < since || r->end_ticks > until)
			continue;
		if (!(r->flags & PFX_GPU_NO_LANE))
			r->flags |= PFX_GPU_KEEP;
		else if (!no_lane++)
			*first_no_lane = r->start_ticks;
	}
	return no_lane;
}

struct pfx_gpu_range *pfx_gpu_launch(struct pfx_gpu *g, uint64_t seq)
{
	uint32_t i;
	if (!g->n || rp_pairs_take(&g->pairs, seq, RP_SIDE_A, &i) != RP_PAIRED)
		return NULL;
	return &g->r[i];
}

bool pfx_gpu_thread(const struct pfx_gpu *g, uint32_t index, bool *has_sections)
{
	for (size_t i = 0; i < g->nthreads; i++)
		if (g->threads[i] == index) {
			if (has_sections)
				*has_sections = g->thread_sections[i];
			return true;
		}
	return false;
}

int pfx_gpu_collect(struct pfx_gpu *g, struct pt_reader *rd)
{
	const size_t nth = pt_reader_thread_count(rd);
	for (size_t i = 0; i < nth; i++) {
		struct pt_thread_info ti;
		if (pt_reader_thread(rd, i, &ti, sizeof(ti)) != 1 || strcmp(ti.name, PT_FMT_GPU_THREAD_NAME) != 0)
			continue;
		uint32_t *t = realloc(g->threads, (g->nthreads + 1) * sizeof(*t));
		if (!t)
			return -ENOMEM;
		g->threads = t;
		bool *s = realloc(g->thread_sections, (g->nthreads + 1) * sizeof(*s));
		if (!s)
			return -ENOMEM;
		g->thread_sections = s;
		g->threads[g->nthreads] = ti.index;
		g->thread_sections[g->nthreads] = false;
		g->nthreads++;
	}
	for (size_t t = 0; t < g->nthreads; t++) {
		struct pt_record r;
		int rc;
		pt_reader_rewind(rd);
		while ((rc = pt_reader_next_chunk(rd, g->threads[t], NULL, 0)) == 1) {
			while ((rc = pt_reader_next_record(rd, &r, sizeof(r))) == 1) {
				if (r.kind == PT_REC_GPU_RANGE) {
					if (pfx_gpu_add(g, &r))
						return -ENOMEM;
				} else if (r.kind == PT_REC_BEGIN) {
					g->thread_sections[t] = true;
				}
			}
			if (rc < 0 && rc != -PT_ECORRUPT)
				break; /* a damaged chunk only loses its rest */
		}
		if (rc < 0)
			return rc;
	}
	pt_reader_rewind(rd);
	const double ns_per_tick = pt_reader_ns_per_tick(rd);
	/* ticks in PFX_GPU_SNAP_NS; a crafted slope near 0 saturates instead of overflowing */
	const double snap = ns_per_tick > 0 ? PFX_GPU_SNAP_NS / ns_per_tick : 0;
	return pfx_gpu_finish(g, ana_sat_u64(snap));
}

void pfx_gpu_free(struct pfx_gpu *g)
{
	free(g->r);
	free(g->lanes);
	free(g->devices);
	rp_pairs_free(&g->pairs);
	free(g->threads);
	free(g->thread_sections);
	memset(g, 0, sizeof(*g));
}

/* ==== Async ranges ==== */

/* Pairs what async halves keep while they wait (replay/pair.h). */
struct async_half {
	uint64_t ticks;
	uint32_t name_id, thread;
};

/* The range of begin @b and end @e; @e NULL: never ended, open at the end
 * (its end is set by pfx_async_finish(), when the trace's last tick is known). */
static int push_range(struct pfx_async *a, uint64_t async_id, const struct async_half *b, const struct async_half *e)
{
	if (grow((void **)&a->r, &a->cap, a->n, sizeof(*a->r)))
		return -ENOMEM;
	a->r[a->n++] = (struct pfx_async_range){
		.async_id = async_id,
		.begin_ticks = b->ticks,
		.end_ticks = e && e->ticks > b->ticks ? e->ticks : b->ticks,
		.name_id = rp_async_name(b->name_id, e ? e->name_id : 0),
		.begin_thread = b->thread,
		.end_thread = e ? e->thread : b->thread,
		.open_at_end = !e,
	};
	return 0;
}

static int push_unmatched_end(struct pfx_async *a, uint64_t ticks)
{
	if (grow((void **)&a->unmatched_end_ticks, &a->ucap, a->nunmatched, sizeof(*a->unmatched_end_ticks)))
		return -ENOMEM;
	a->unmatched_end_ticks[a->nunmatched++] = ticks;
	return 0;
}

int pfx_async_add(struct pfx_async *a, const struct pt_record *r, uint32_t thread)
{
	if (!a->ready) {
		rp_pairs_init(&a->pairs, sizeof(struct async_half));
		a->ready = true;
	}
	const bool begin = r->kind == PT_REC_ASYNC_BEGIN;
	const struct async_half h = { .ticks = r->ticks, .name_id = r->id, .thread = thread };
	struct async_half o;
	switch (rp_pairs_meet(&a->pairs, r->value, begin ? RP_SIDE_A : RP_SIDE_B, &h, &o)) {
	case RP_PAIRED: return begin ? push_range(a, r->value, &h, &o) : push_range(a, r->value, &o, &h);
	case RP_WAITS: return 0;
	case RP_NO_KEY: /* never pairs: a begin open at the end, an end without a begin */
		return begin ? push_range(a, 0, &h, NULL) : push_unmatched_end(a, r->ticks);
	default: return -ENOMEM;
	}
}

static int cmp_ticks(const void *pa, const void *pb)
{
	return cmp_u64(*(const uint64_t *)pa, *(const uint64_t *)pb);
}

/* (begin, end descending, async id, ...): the layout and write order; total,
 * so the output does not depend on qsort */
static int cmp_arange(const void *pa, const void *pb)
{
	const struct pfx_async_range *a = pa, *b = pb;
	int c;
	if ((c = cmp_u64(a->begin_ticks, b->begin_ticks)) || (c = cmp_u64(b->end_ticks, a->end_ticks)) ||
	    (c = cmp_u64(a->async_id, b->async_id)) || (c = cmp_u64(a->name_id, b->name_id)) ||
	    (c = cmp_u64(a->begin_thread, b->begin_thread)) || (c = cmp_u64(a->end_thread, b->end_thread)))
		return c;
	return cmp_u64(a->open_at_end, b->open_at_end);
}

/* Binary min-heaps for the lane allocation: busy lanes by (end, lane) and
 * free lanes by number. */
struct heap {
	uint64_t *k; /* busy: end ticks; free: the lane */
	uint32_t *v; /* the lane */
	size_t n;
};

static bool heap_less(const struct heap *h, size_t i, size_t j)
{
	return h->k[i] < h->k[j] || (h->k[i] == h->k[j] && h->v[i] < h->v[j]);
}

static void heap_swap(struct heap *h, size_t i, size_t j)
{
	uint64_t k = h->k[i];
	uint32_t v = h->v[i];
	h->k[i] = h->k[j];
	h->v[i] = h->v[j];
	h->k[j] = k;
	h->v[j] = v;
}

/* The caller guarantees room (both heaps hold at most one entry per lane). */
static void heap_push(struct heap *h, uint64_t k, uint32_t v)
{
	size_t i = h->n++;
	h->k[i] = k;
	h->v[i] = v;
	while (i && heap_less(h, i, (i - 1) / 2)) {
		heap_swap(h, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void heap_pop(struct heap *h)
{
	h->n--;
	h->k[0] = h->k[h->n];
	h->v[0] = h->v[h->n];
	for (size_t i = 0;;) {
		size_t m = i, l = 2 * i + 1, r = l + 1;
		if (l < h->n && heap_less(h, l, m))
			m = l;
		if (r < h->n && heap_less(h, r, m))
			m = r;
		if (m == i)
			break;
		heap_swap(h, i, m);
		i = m;
	}
}

struct leftover_ctx {
	struct pfx_async *a;
	int rc;
};

/* A half still waiting at the end: a begin open at the end, or an end without a begin. */
static void async_leftover(void *ctx, uint64_t key, enum rp_side side, const void *half)
{
	struct leftover_ctx *x = ctx;
	const struct async_half *h = half;
	if (x->rc)
		return;
	x->rc = side == RP_SIDE_A ? push_range(x->a, key, h, NULL) : push_unmatched_end(x->a, h->ticks);
}

int pfx_async_finish(struct pfx_async *a, uint64_t end_ticks)
{
	struct heap busy = { 0 }, freel = { 0 };
	struct leftover_ctx x = { a, 0 };
	a->nlanes = 0;
	rp_pairs_each(&a->pairs, async_leftover, &x);
	rp_pairs_free(&a->pairs);
	for (size_t i = 0; i < a->n; i++) /* the begins never ended close at the trace's last tick */
		if (a->r[i].open_at_end && end_ticks > a->r[i].begin_ticks)
			a->r[i].end_ticks = end_ticks;
	if (!x.rc && a->nunmatched)
		qsort(a->unmatched_end_ticks, a->nunmatched, sizeof(*a->unmatched_end_ticks), cmp_ticks);
	if (x.rc || !a->n)
		goto out;
	x.rc = -ENOMEM;
	busy.k = malloc(a->n * sizeof(*busy.k));
	busy.v = malloc(a->n * sizeof(*busy.v));
	freel.k = malloc(a->n * sizeof(*freel.k));
	freel.v = malloc(a->n * sizeof(*freel.v));
	if (!busy.k || !busy.v || !freel.k || !freel.v)
		goto out;
	qsort(a->r, a->n, sizeof(*a->r), cmp_arange);
	for (size_t i = 0; i < a->n; i++) {
		struct pfx_async_range *r = &a->r[i];
		while (busy.n && busy.k[0] <= r->begin_ticks) { /* ended by now: free */
			heap_push(&freel, busy.v[0], busy.v[0]);
			heap_pop(&busy);
		}
		if (freel.n) {
			r->lane = freel.v[0];
			heap_pop(&freel);
		} else {
			r->lane = a->nlanes++;
		}
		heap_push(&busy, r->end_ticks, r->lane);
	}
	x.rc = 0;
out:
	free(busy.k);
	free(busy.v);
	free(freel.k);
	free(freel.v);
	return x.rc;
}

void pfx_async_free(struct pfx_async *a)
{
	rp_pairs_free(&a->pairs);
	free(a->r);
	free(a->unmatched_end_ticks);
	memset(a, 0, sizeof(*a));
}

void pfx_window_ticks(struct pt_reader *rd, uint64_t since_ns, uint64_t until_ns, uint64_t *since, uint64_t *until)
{
	const uint64_t t0 = pt_reader_info(rd)->start_ticks;
	const double ns_per_tick = pt_reader_ns_per_tick(rd);
	/* the analyzer's bounds (saturated on a crafted clock table); since
	 * rounded up: a section starting before `since` is outside */
	*since = since_ns ? ana_window_ticks(t0, since_ns, ns_per_tick, true) : 0;
	*until = until_ns ? ana_window_ticks(t0, until_ns, ns_per_tick, false) : UINT64_MAX;
}

uint64_t pfx_trace_end_ticks(struct pt_reader *rd)
{
	struct pt_chunk_info ci;
	uint64_t end = 0;
	pt_reader_rewind(rd);
	while (pt_reader_next_chunk_header(rd, &ci, sizeof(ci)) == 1)
		if (ci.thread != PT_FMT_META_THREAD && ci.records && ci.last_ticks > end)
			end = ci.last_ticks;
	pt_reader_rewind(rd);
	return end;
}

const char *pfx_errc_name(uint32_t code)
{
	switch (code) {
	case PT_ERRC_IMPLICIT_CLOSE: return "implicit_close";
	case PT_ERRC_STOP_NOT_OPEN: return "stop_not_open";
	case PT_ERRC_END_UNDERFLOW: return "end_underflow";
	case PT_ERRC_AFTER_EXIT: return "after_exit";
	case PT_ERRC_IO: return "io";
	case PT_ERRC_GPU_POOL_EMPTY: return "gpu_pool_empty";
	case PT_ERRC_GPU_CAPTURING: return "gpu_capturing";
	case PT_ERRC_GPU_CUDA: return "gpu_cuda";
	case PT_ERRC_GPU_OFF: return "gpu_off";
	case PT_ERRC_GPU_EARLY_START: return "gpu_early_start";
	case PT_ERRC_GPU_QUEUE_FULL: return "gpu_queue_full";
	case PT_ERRC_GPU_UNFINISHED: return "gpu_unfinished";
	case PT_ERRC_SNAPSHOT: return "snapshot";
	case PT_ERRC_TRIGGER_LIMITED: return "trigger_limited";
	case PT_ERRC_ROTATE: return "rotate";
	default: return "unknown";
	}
}

/* ==== Threads ==== */

uint32_t pfx_thread_tid(const struct pt_thread_info *ti)
{
	return ti->tid ? ti->tid : PFX_LOST_TID_BASE + (ti->index & (PFX_LOST_TID_BASE - 1));
}

const char *pfx_thread_name(const struct pt_thread_info *ti, char buf[PFX_THREAD_NAME_BYTES])
{
	if (ti->name && *ti->name)
		return ti->name;
	snprintf(buf, PFX_THREAD_NAME_BYTES, "thread %" PRIu32 "%s", ti->index, ti->tid ? "" : " (tid lost)");
	return buf;
}

/* ==== A set of traces ==== */

struct pid_at {
	int32_t pid;
	uint32_t file;
};

static int cmp_pid_at(const void *a, const void *b)
{
	const struct pid_at *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->file > y->file) - (x->file < y->file);
}

int pfx_set_places(const char *const *paths, size_t n, struct pfx_set_place *place, size_t *bad, char *msg,
		   size_t msglen)
{
	struct pid_at *pa = calloc(n ? n : 1, sizeof(*pa));
	char *host0 = NULL;
	bool one_host = true;
	uint64_t first_real = UINT64_MAX;
	size_t first = 0;
	int rc = pa ? 0 : -ENOMEM;
	if (rc)
		snprintf(msg, msglen, "out of memory");
	for (size_t k = 0; k < n && !rc; k++) {
		struct pt_reader *rd = NULL;
		rc = pt_reader_open_trace(paths[k], &rd);
		if (rc) {
			*bad = k;
			const char *m = rd ? pt_reader_errmsg(rd) : pt_strerror(rc);
			if (n > 1) /* which file; a one-trace export's caller names it */
				snprintf(msg, msglen, "%s: %s", paths[k], m);
			else
				snprintf(msg, msglen, "%s", m);
			pt_reader_close(rd);
			break;
		}
		const struct pt_trace_info *in = pt_reader_info(rd);
		const char *host = in->host ? in->host : "";
		if (k == 0 && !(host0 = strdup(host))) {
			rc = -ENOMEM;
			snprintf(msg, msglen, "out of memory");
		}
		one_host &= !host0 || strcmp(host0, host) == 0;
		place[k].file = (uint32_t)k;
		place[k].pid = pfx_process_pid(in);
		place[k].ts_shift = (int64_t)(in->start_real_ns - in->start_mono_ns);
		if (in->start_real_ns < first_real) { /* the first to start (the first file on a tie) */
			first_real = in->start_real_ns;
			first = k;
		}
		pa[k] = (struct pid_at){ place[k].pid, (uint32_t)k };
		pt_reader_close(rd);
	}
	if (!rc) {
		/* a pid an earlier file has: made up, so that the viewer keeps the processes apart */
		qsort(pa, n, sizeof(*pa), cmp_pid_at);
		for (size_t j = 1; j < n; j++)
			if (pa[j].pid == pa[j - 1].pid)
				place[pa[j].file].pid = (int32_t)(PFX_SET_PID_BASE + pa[j].file);
		/* several hosts: each file moved by its realtime - monotonic offset less that of the
		 * file that started first, so that every file lies on that file's monotonic axis as
		 * CLOCK_REALTIME places it; the numbers stay uptime-sized (a Chrome JSON ts in µs as
		 * a double keeps ns precision there, not at 1.7e15 µs of realtime) */
		const int64_t base = n ? place[first].ts_shift : 0;
		for (size_t k = 0; k < n; k++)
			place[k].ts_shift = one_host ? 0 : place[k].ts_shift - base;
	}
	free(host0);
	free(pa);
	return rc;
}

void pfx_set_name_file(char *msg, size_t msglen, const char *path)
{
	if (!msglen || strstr(msg, path)) /* pfx_set_places() named it already */
		return;
	char *m = strdup(msg);
	if (m) {
		snprintf(msg, msglen, "%s: %s", path, m);
		free(m);
	}
}

const char *pfx_process_name(const struct pt_trace_info *info, const char *fallback, char *buf, size_t len)
{
	const char *name = info->process_name && *info->process_name ? info->process_name : fallback;
	const char *job = info->job ? info->job : "";
	if (job[0] && info->has_rank)
		snprintf(buf, len, "%s (job %s rank %" PRIu32 ")", name, job, info->rank);
	else if (info->has_rank)
		snprintf(buf, len, "%s (rank %" PRIu32 ")", name, info->rank);
	else if (job[0])
		snprintf(buf, len, "%s (job %s)", name, job);
	else
		return name;
	return buf;
}
