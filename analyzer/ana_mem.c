/*
 * analyzer/ana_mem.c - memory per section: each kept occurrence of a
 * section measured against the memory series (counters in bytes) by time
 * (doc/analyzer-output.md §3.5; the definitions are in ana.h).
 *
 * The series are read before the pass (ana_mem_prepass()): a process's
 * RSS is sampled on the flusher thread while its sections run on the
 * application threads, so an END must find the samples around it whatever
 * order the chunks are read in. Samples are few (10 a second) and sections
 * may be millions: per END and series, a cursor that only moves forward on
 * one thread (ENDs of a thread come in time order) finds the end sample,
 * the begin sample is the same one unless a sample lies inside the section
 * (then a binary search), and the peak is a range maximum from a sparse
 * table of block maxima (O(ANA_MEM_BLOCK) per occurrence however long it
 * is). A trace without memory series pays one predictable branch per END.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/ana.h"
#include "analyzer/ana_compare.h"
#include "analyzer/ana_pass.h"
#include "trace-format/fmt_internal.h"

static const char bytes_suffix[] = " (bytes)";

bool ana_counter_name_is_bytes(const char *n, bool gpu_thread)
{
	static const char dev_mem[] = "device memory used";
	if (!n)
		return false;
	size_t len = strlen(n), sl = sizeof(bytes_suffix) - 1;
	if (len > sl && strcmp(n + len - sl, bytes_suffix) == 0)
		return true;
	if (strcmp(n, PT_FMT_PROC_RSS) == 0)
		return true;
	return gpu_thread && strncmp(n, dev_mem, sizeof(dev_mem) - 1) == 0;
}

bool ana_counter_is_bytes(const struct ana_result *res, const struct ana_thread *t, uint32_t id)
{
	/* "process RSS" on any thread: the flusher's, or (older traces) the CUDA thread's */
	return ana_counter_name_is_bytes(ana_string(res, id, NULL), t->gpu_thread);
}

uint32_t ana_mem_rss(const struct ana_result *res)
{
	for (uint32_t s = 0; s < res->nmem; s++)
		if (res->mem[s].rss)
			return s;
	return UINT32_MAX;
}

/* ---------------------------------------------------------------- the samples */

struct sample {
	uint64_t t;
	int64_t v;
};

static int cmp_sample(const void *a, const void *b)
{
	const struct sample *x = a, *y = b;
	return (x->t > y->t) - (x->t < y->t);
}

static int cmp_u64(const void *a, const void *b)
{
	const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

struct collect {
	struct sample *s;
	size_t n, cap;
};

static int collect_add(struct collect *c, uint64_t t, int64_t v)
{
	if (c->n == c->cap) {
		size_t nc = c->cap ? c->cap * 2 : 256;
		struct sample *p = realloc(c->s, nc * sizeof(*p));
		if (!p)
			return -ENOMEM;
		c->s = p;
		c->cap = nc;
	}
	c->s[c->n++] = (struct sample){ t, v };
	return 0;
}

/* Sorts @c into series @m, and builds its range-maximum table. */
static int series_build(struct ctx *c, struct ana_mem_series *m, struct collect *col)
{
	if (col->n) /* col->s is NULL when the series has no sample: qsort(NULL, 0) is undefined */
		qsort(col->s, col->n, sizeof(*col->s), cmp_sample);
	m->n = col->n;
	m->t = malloc((col->n ? col->n : 1) * sizeof(*m->t));
	m->v = malloc((col->n ? col->n : 1) * sizeof(*m->v));
	if (!m->t || !m->v)
		return -ENOMEM;
	m->min = INT64_MAX;
	m->max = INT64_MIN;
	for (size_t i = 0; i < col->n; i++) {
		m->t[i] = col->s[i].t;
		m->v[i] = col->s[i].v;
		m->min = PT_MIN(m->min, m->v[i]);
		m->max = PT_MAX(m->max, m->v[i]);
	}
	if (!m->n)
		m->min = m->max = 0;
	/* the sampling period: the median interval (a pause of recording
	 * does not make it look coarser) */
	if (m->n >= 2) {
		uint64_t *d = malloc((m->n - 1) * sizeof(*d));
		if (!d)
			return -ENOMEM;
		for (size_t i = 1; i < m->n; i++)
			d[i - 1] = m->t[i] - m->t[i - 1];
		qsort(d, m->n - 1, sizeof(*d), cmp_u64);
		m->period_ns = ana_sat_u64((double)d[(m->n - 1) / 2] * c->ns_per_tick + 0.5);
		free(d);
	}
	/* block maxima, then a sparse table over them: tab[k * nb + j] is the
	 * largest of blocks j .. j + 2^k - 1 */
	m->nb = (uint32_t)((m->n + ANA_MEM_BLOCK - 1) / ANA_MEM_BLOCK);
	m->levels = 1;
	while (m->nb >> m->levels)
		m->levels++;
	const size_t cells = (size_t)m->nb * m->levels;
	m->tab = malloc((cells ? cells : 1) * sizeof(*m->tab));
	if (!m->tab)
		return -ENOMEM;
	for (uint32_t j = 0; j < m->nb; j++) {
		int64_t x = INT64_MIN;
		for (size_t i = (size_t)j * ANA_MEM_BLOCK; i < m->n && i < (size_t)(j + 1) * ANA_MEM_BLOCK; i++)
			x = PT_MAX(x, m->v[i]);
		m->tab[j] = x;
	}
	for (uint32_t k = 1; k < m->levels; k++)
		for (uint32_t j = 0; j + (1u << k) <= m->nb; j++)
			m->tab[(size_t)k * m->nb + j] = PT_MAX(m->tab[(size_t)(k - 1) * m->nb + j],
							       m->tab[(size_t)(k - 1) * m->nb + j + (1u << (k - 1))]);
	return 0;
}

/* The largest sample of @m at indexes [l, r]. */
static int64_t range_max(const struct ana_mem_series *m, size_t l, size_t r)
{
	size_t bl = l / ANA_MEM_BLOCK, br = r / ANA_MEM_BLOCK;
	int64_t x = INT64_MIN;
	if (bl == br) {
		for (size_t i = l; i <= r; i++)
			x = PT_MAX(x, m->v[i]);
		return x;
	}
	for (size_t i = l; i < (bl + 1) * ANA_MEM_BLOCK; i++)
		x = PT_MAX(x, m->v[i]);
	for (size_t i = br * ANA_MEM_BLOCK; i <= r; i++)
		x = PT_MAX(x, m->v[i]);
	if (bl + 1 < br) {
		size_t lo = bl + 1, len = br - lo;
		unsigned k = 63u - (unsigned)__builtin_clzll(len);
		x = PT_MAX(x, m->tab[(size_t)k * m->nb + lo]);
		x = PT_MAX(x, m->tab[(size_t)k * m->nb + br - ((size_t)1 << k)]);
	}
	return x;
}

/* Samples of @m in [lo, hi) at or before tick @t: the first index past them. */
static size_t upper(const struct ana_mem_series *m, size_t lo, size_t hi, uint64_t t)
{
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->t[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The memory series of the trace (counters in bytes, by name; "process
 * RSS" first) into @m, their number returned; *@all_threads: a series
 * whose samples any thread may take (a pt_counter() " (bytes)"). */
static uint32_t series_find(struct ctx *c, struct ana_mem_series *m, bool *all_threads)
{
	struct ana_result *res = c->res;
	struct pt_reader *rd = res->rd;
	bool has_gpu = false;
	*all_threads = false;
	for (size_t i = 0; i < res->nthreads; i++)
		has_gpu |= res->threads[i].gpu_thread;
	uint32_t nm = 0;
	const size_t ns = fmt_reader_string_count(rd);
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < ns && nm < ANA_MEM_MAX_SERIES; i++) {
			uint32_t tid = fmt_reader_string_id(rd, i);
			const char *n = pt_reader_string(rd, tid, NULL);
			if (!n || !ana_counter_name_is_bytes(n, has_gpu))
				continue;
			bool rss = strcmp(n, PT_FMT_PROC_RSS) == 0;
			if (rss != (pass == 0))
				continue;
			uint32_t id = tid;
			if (c->remap) {
				const struct ana_id_slot *e = rp_map_find(&c->ids, tid);
				if (!e)
					continue;
				id = e->slot;
			}
			memset(&m[nm], 0, sizeof(m[nm]));
			m[nm].id = id;
			m[nm].trace_id = tid;
			m[nm].rss = rss;
			nm++;
			*all_threads |= !rss && strncmp(n, "device memory used", 18) != 0;
		}
	return nm;
}

/* Whether thread @t's chunks may hold samples of the series. */
static bool series_source(const struct ana_thread *t, bool all_threads)
{
	return all_threads || strcmp(t->name, PT_FMT_FLUSHER_THREAD_NAME) == 0 ||
	       strcmp(t->name, PT_FMT_GPU_THREAD_NAME) == 0;
}

/* The samples of the @nm series @m in the current event chunk of the
 * reader, into @col. 0 or -ENOMEM. */
static int collect_chunk(struct pt_reader *rd, const struct ana_mem_series *m, uint32_t nm, struct collect *col)
{
	struct pt_record batch[256];
	int k, rc = 0;
	while ((k = pt_reader_next_records(rd, batch, 256, sizeof(*batch))) > 0)
		for (int j = 0; j < k; j++) {
			if (batch[j].kind != PT_REC_COUNTER)
				continue;
			for (uint32_t s = 0; s < nm; s++)
				if (batch[j].id == m[s].trace_id &&
				    collect_add(&col[s], batch[j].ticks, (int64_t)batch[j].value))
					rc = -ENOMEM;
		}
	return rc;
}

int ana_mem_prepass(struct ctx *c)
{
	struct ana_result *res = c->res;
	struct pt_reader *rd = res->rd;
	bool all_threads;
	struct ana_mem_series m[ANA_MEM_MAX_SERIES];
	const uint32_t nm = series_find(c, m, &all_threads);
	if (!nm)
		return 0;
	struct collect col[ANA_MEM_MAX_SERIES];
	memset(col, 0, sizeof(col));
	struct pt_chunk_info ci;
	int rc = 0;
	for (size_t i = 0; i <= res->nthreads && rc >= 0; i++) {
		uint32_t sel;
		if (all_threads) {
			if (i > 0)
				break;
			sel = PT_READER_ALL_CHUNKS;
		} else {
			if (i == res->nthreads)
				break;
			if (!series_source(&res->threads[i], false))
				continue;
			sel = res->threads[i].index;
		}
		pt_reader_rewind(rd);
		while (rc >= 0 && (rc = pt_reader_next_chunk(rd, sel, &ci, sizeof(ci))) == 1)
			if (ci.thread != PT_FMT_META_THREAD)
				rc = collect_chunk(rd, m, nm, col) < 0 ? -ENOMEM : rc;
	}
	pt_reader_rewind(rd);
	if (rc >= 0) {
		res->mem = calloc(nm, sizeof(*res->mem));
		if (!res->mem)
			rc = -ENOMEM;
	}
	for (uint32_t s = 0; s < nm; s++) {
		if (rc >= 0) {
			res->mem[s] = m[s];
			res->nmem = s + 1;
			if (series_build(c, &res->mem[s], &col[s]))
				rc = -ENOMEM;
		}
		free(col[s].s);
	}
	if (rc < 0)
		return rc;
	c->nmem = res->nmem;
	return 0;
}

void ana_mem_free(struct ana_result *res)
{
	for (uint32_t s = 0; s < res->nmem; s++) {
		free(res->mem[s].t);
		free(res->mem[s].v);
		free(res->mem[s].tab);
	}
	free(res->mem);
	res->mem = NULL;
	res->nmem = 0;
}

int ana_mem_extend(struct ctx *c, uint64_t from, uint64_t after)
{
	struct ana_result *res = c->res;
	struct pt_reader *rd = res->rd;
	bool all_threads;
	struct ana_mem_series m[ANA_MEM_MAX_SERIES];
	const uint32_t nm = series_find(c, m, &all_threads);
	if (nm != res->nmem)
		return 1;
	for (uint32_t s = 0; s < nm; s++)
		if (m[s].trace_id != res->mem[s].trace_id || m[s].rss != res->mem[s].rss)
			return 1;
	if (!nm)
		return 0;
	struct collect col[ANA_MEM_MAX_SERIES];
	memset(col, 0, sizeof(col));
	struct pt_chunk_info ci;
	int rc = fmt_reader_seek(rd, from);
	size_t last = 0;
	while (rc >= 0 && (rc = pt_reader_next_chunk(rd, PT_READER_ALL_CHUNKS, &ci, sizeof(ci))) == 1) {
		if (ci.thread == PT_FMT_META_THREAD)
			continue;
		last = ana_thread_pos(res, ci.thread, last);
		if (last < res->nthreads && series_source(&res->threads[last], all_threads))
			rc = collect_chunk(rd, m, nm, col) < 0 ? -ENOMEM : rc;
	}
	bool in_order = true;
	for (uint32_t s = 0; s < nm && rc >= 0; s++) {
		struct ana_mem_series *x = &res->mem[s];
		if (!col[s].n)
			continue;
		qsort(col[s].s, col[s].n, sizeof(*col[s].s), cmp_sample);
		/* an occurrence already measured is measured against the samples at
		 * or before its END: none may come in at or before those */
		if (col[s].s[0].t <= after || (x->n && col[s].s[0].t < x->t[x->n - 1])) {
			in_order = false;
			break;
		}
	}
	for (uint32_t s = 0; s < nm && rc >= 0 && in_order; s++) {
		struct ana_mem_series *x = &res->mem[s];
		if (!col[s].n)
			continue;
		struct collect all = { 0 };
		for (size_t i = 0; i < x->n && rc >= 0; i++)
			rc = collect_add(&all, x->t[i], x->v[i]);
		for (size_t i = 0; i < col[s].n && rc >= 0; i++)
			rc = collect_add(&all, col[s].s[i].t, col[s].s[i].v);
		if (rc >= 0) {
			free(x->t);
			free(x->v);
			free(x->tab);
			x->t = NULL;
			x->v = NULL;
			x->tab = NULL;
			x->period_ns = 0;
			rc = series_build(c, x, &all);
		}
		free(all.s);
	}
	for (uint32_t s = 0; s < nm; s++)
		free(col[s].s);
	if (rc < 0)
		return rc;
	if (!in_order)
		return 1;
	/* the threads' cached intervals may end at a series' old last sample */
	for (size_t i = 0; i < res->nthreads; i++)
		c->ts[i].mem_hi = 0;
	return 0;
}

int ana_mem_copy(struct ana_result *dst, const struct ana_result *src)
{
	dst->mem = NULL;
	dst->nmem = 0;
	if (!src->nmem)
		return 0;
	if (!(dst->mem = calloc(src->nmem, sizeof(*dst->mem))))
		return -ENOMEM;
	for (uint32_t s = 0; s < src->nmem; s++) {
		const struct ana_mem_series *x = &src->mem[s];
		struct ana_mem_series *y = &dst->mem[s];
		*y = *x;
		y->t = malloc((x->n ? x->n : 1) * sizeof(*y->t));
		y->v = malloc((x->n ? x->n : 1) * sizeof(*y->v));
		const size_t cells = (size_t)x->nb * x->levels;
		y->tab = malloc((cells ? cells : 1) * sizeof(*y->tab));
		dst->nmem = s + 1;
		if (!y->t || !y->v || !y->tab)
			return -ENOMEM;
		memcpy(y->t, x->t, x->n * sizeof(*y->t));
		memcpy(y->v, x->v, x->n * sizeof(*y->v));
		memcpy(y->tab, x->tab, cells * sizeof(*y->tab));
	}
	return 0;
}

/* ---------------------------------------------------------------- per occurrence */

static struct ana_mem *mem_of(struct ana_agg *a, uint32_t n)
{
	if (!a->mem) {
		a->mem = calloc(1, sizeof(*a->mem) + n * sizeof(a->mem->row[0]));
		if (!a->mem) {
			ana_nomem_note();
			return NULL;
		}
		a->mem->n = n;
		for (uint32_t s = 0; s < n; s++) /* no occurrence yet: any first one replaces these */
			a->mem->row[s] = (struct ana_mem_row){ .peak = INT64_MIN, .dmin = INT64_MAX, .dmax = INT64_MIN };
	}
	return a->mem;
}

/* @count occurrences, each from @vb to @ve with peak @peak, into @w. */
static inline void row_add(struct ana_mem_row *w, int64_t vb, int64_t ve, int64_t peak, uint64_t count)
{
	int64_t d = ve - vb; /* byte counts: far from overflowing */
	if (!w->n || peak > w->peak)
		w->peak = peak;
	if (!w->n || d < w->dmin)
		w->dmin = d;
	if (!w->n || d > w->dmax)
		w->dmax = d;
	w->n += count;
	w->sum_begin += (ana_i128)vb * (ana_i128)count; /* |v| < 2^63, count < 2^64: fits */
	w->sum_end += (ana_i128)ve * (ana_i128)count;
}

void ana_mem_occ(struct ctx *c, struct tstate *ts, struct ana_agg *a, uint64_t b, uint64_t e)
{
	const struct ana_result *res = c->res;
	if ((!ts->mem_cur && !(ts->mem_cur = calloc(c->nmem, sizeof(*ts->mem_cur)))) ||
	    (!ts->mem_v && !(ts->mem_v = calloc(c->nmem, sizeof(*ts->mem_v))))) {
		ana_nomem_note();
		return;
	}
	struct ana_mem *am = NULL;
	uint64_t lo = 0, hi = UINT64_MAX; /* the interval ana_mem_occ_fast() tests next: every series' */
	for (uint32_t s = 0; s < c->nmem; s++) {
		const struct ana_mem_series *m = &res->mem[s];
		/* k: samples at or before e, from this thread's cursor */
		size_t k = ts->mem_cur[s];
		if (k > m->n || (k > 0 && m->t[k - 1] > e)) /* an END earlier than the last (damage, misuse) */
			k = upper(m, 0, k > m->n ? m->n : k, e);
		else if (k + 8 < m->n && m->t[k + 8] <= e) /* far ahead: no walk over every sample */
			k = upper(m, k + 8, m->n, e);
		else
			while (k < m->n && m->t[k] <= e)
				k++;
		ts->mem_cur[s] = (uint32_t)k;
		if (k == 0) { /* ended before the first sample: not measured (nor fast, next time) */
			lo = UINT64_MAX;
			hi = 0;
			continue;
		}
		lo = m->t[k - 1] > lo ? m->t[k - 1] : lo;
		if (k < m->n && m->t[k] < hi)
			hi = m->t[k];
		ts->mem_v[s] = m->v[k - 1];
		size_t ie = k - 1, ib = ie;
		if (m->t[ie] > b) { /* a sample inside: the last at or before b, else the first */
			size_t u = upper(m, 0, ie, b);
			ib = u ? u - 1 : 0;
		}
		if (!am && !(am = mem_of(a, c->nmem))) {
			ts->mem_hi = 0; /* the cursors moved: no interval known (the run fails anyway) */
			return;
		}
		row_add(&am->row[s], m->v[ib], m->v[ie], range_max(m, ib, ie), 1);
	}
	ts->mem_lo = lo;
	ts->mem_hi = hi;
	ts->mem_v0 = ts->mem_v[0];
}

void ana_mem_fold(struct ana_mem_row *w)
{
	if (!w->pn)
		return;
	row_add(w, w->pv, w->pv, w->pv, w->pn);
	w->pn = 0;
}

void ana_mem_fold0(struct ana_agg *a)
{
	if (!a->mem_pn)
		return;
	row_add(&a->mem->row[0], a->mem_pv, a->mem_pv, a->mem_pv, a->mem_pn);
	a->mem_pn = 0;
}

/* Series @s of @a with every pending occurrence in (a copy). */
static struct ana_mem_row row_folded(const struct ana_agg *a, uint32_t s)
{
	struct ana_mem_row w = a->mem->row[s];
	ana_mem_fold(&w);
	if (s == 0 && a->mem_pn)
		row_add(&w, a->mem_pv, a->mem_pv, a->mem_pv, a->mem_pn);
	return w;
}

void ana_mem_merge(struct ana_agg *dst, const struct ana_agg *src)
{
	const struct ana_mem *sm = src->mem;
	struct ana_mem *dm = mem_of(dst, sm->n);
	if (!dm)
		return;
	for (uint32_t s = 0; s < sm->n && s < dm->n; s++) {
		/* @dst's pending ones stay pending: they add in any order */
		struct ana_mem_row xf = row_folded(src, s);
		const struct ana_mem_row *x = &xf;
		struct ana_mem_row *w = &dm->row[s];
		if (!x->n)
			continue;
		if (!w->n || x->peak > w->peak)
			w->peak = x->peak;
		if (!w->n || x->dmin < w->dmin)
			w->dmin = x->dmin;
		if (!w->n || x->dmax > w->dmax)
			w->dmax = x->dmax;
		w->n += x->n;
		w->sum_begin += x->sum_begin;
		w->sum_end += x->sum_end;
	}
}

bool ana_mem_fig(const struct ana_agg *a, uint32_t s, struct ana_mem_fig *f)
{
	memset(f, 0, sizeof(*f));
	if (!a || !a->mem || s >= a->mem->n)
		return false;
	struct ana_mem_row wf = row_folded(a, s);
	if (!wf.n)
		return false;
	const struct ana_mem_row *w = &wf;
	f->n = w->n;
	f->begin = (double)w->sum_begin / (double)w->n;
	f->end = (double)w->sum_end / (double)w->n;
	f->delta_total = (double)(w->sum_end - w->sum_begin);
	f->delta = f->delta_total / (double)w->n;
	f->peak = w->peak;
	f->dmin = w->dmin;
	f->dmax = w->dmax;
	return true;
}

/* ---------------------------------------------------------------- outputs */

const char *ana_fmt_bytes(char *buf, size_t n, double v, bool sign)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double a = fabs(v);
	int u = 0;
	while (a >= 1024.0 && u < 4) {
		a /= 1024.0;
		u++;
	}
	const char *s = v < 0 ? "-" : sign && v > 0 ? "+" : "";
	if (u == 0)
		snprintf(buf, n, "%s%.0f %s", s, a, unit[u]);
	else
		snprintf(buf, n, "%s%.2f %s", s, a, unit[u]);
	return buf;
}

struct mem_item {
	uint32_t i;   /* node, or name id */
	double key;   /* delta_total */
};

static int cmp_item(const void *a, const void *b)
{
	const struct mem_item *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? 1 : -1; /* largest growth first */
	return (x->i > y->i) - (x->i < y->i);
}

void ana_mem_text(FILE *out, const struct ana_result *res, const struct ana_report_opts *o)
{
	if (!res->nmem)
		return;
	const struct ana_tree *t = &res->merged;
	const struct ana_agg *flat = res->by_name;
	uint32_t nflat = res->nnames;
	if (o->thread >= 0)
		for (size_t i = 0; i < res->nthreads; i++)
			if (res->threads[i].index == (uint32_t)o->thread) {
				t = &res->threads[i].tree;
				flat = res->by_name_thread[i];
				nflat = res->threads[i].nflat;
			}
	const uint32_t nrows = o->flat ? nflat : t->count;
	struct mem_item *it = malloc((nrows ? nrows : 1) * sizeof(*it));
	if (!it)
		return;
	char *buf = NULL;
	size_t cap = 0;
	for (uint32_t s = 0; s < res->nmem; s++) {
		const struct ana_mem_series *m = &res->mem[s];
		uint32_t n = 0;
		struct ana_mem_fig f;
		for (uint32_t i = o->flat ? 0 : 1; i < nrows; i++)
			if (ana_mem_fig(o->flat ? &flat[i] : &t->n[i].agg, s, &f))
				it[n++] = (struct mem_item){ i, f.delta_total };
		if (!n)
			continue;
		qsort(it, n, sizeof(*it), cmp_item);
		char b[6][32], every[48] = ""; /* one sample: no period */
		if (m->n >= 2)
			snprintf(every, sizeof(every), " every %s", ana_fmt_dur(b[0], 32, (double)m->period_ns));
		fprintf(out,
			"\nMemory by %s: %s, %zu sample%s%s (min %s, max %s); begin/end: the last sample at or"
			" before, within one period's change; a peak shorter than the period can be missed\n",
			o->flat ? "name" : "call path", ana_text_safe(ana_name(res, m->id)), m->n, m->n == 1 ? "" : "s",
			every,
			ana_fmt_bytes(b[1], 32, (double)m->min, false), ana_fmt_bytes(b[2], 32, (double)m->max, false));
		fprintf(out, "  %-40s %9s %11s %11s %12s %12s %11s\n", "name", "measured", "begin", "end", "change",
			"total change", "peak");
		uint32_t top = o->top > 0 ? (uint32_t)o->top : 20;
		for (uint32_t r = 0; r < n && r < top; r++) {
			const struct ana_agg *a = o->flat ? &flat[it[r].i] : &t->n[it[r].i].agg;
			ana_mem_fig(a, s, &f);
			const char *label = o->flat ? ana_name(res, it[r].i) : ana_path_short(res, t, it[r].i, &buf, &cap);
			fprintf(out, "  %-40s %9" PRIu64 " %11s %11s %12s %12s %11s\n", ana_text_safe(label ? label : "?"),
				f.n, ana_fmt_bytes(b[0], 32, f.begin, false), ana_fmt_bytes(b[1], 32, f.end, false),
				ana_fmt_bytes(b[2], 32, f.delta, true), ana_fmt_bytes(b[3], 32, f.delta_total, true),
				ana_fmt_bytes(b[4], 32, (double)f.peak, false));
		}
		if (n > top)
			fprintf(out, "  (%u more rows; --top N shows more)\n", n - top);
	}
	free(buf);
	free(it);
}

const char *ana_mem_csv_cols(const struct ana_result *res)
{
	return ana_mem_rss(res) == UINT32_MAX ? ""
					      : ",rss_occurrences,rss_begin_bytes,rss_end_bytes,rss_delta_bytes,"
						"rss_delta_total_bytes,rss_delta_min_bytes,rss_delta_max_bytes,rss_peak_bytes";
}

void ana_mem_csv(struct ana_obuf *out, const struct ana_result *res, const struct ana_agg *a)
{
	uint32_t s = ana_mem_rss(res);
	if (s == UINT32_MAX)
		return;
	struct ana_mem_fig f;
	if (!ana_mem_fig(a, s, &f)) {
		ana_obuf_puts(out, ",0,,,,,,,"); /* not measured: empty, not 0 bytes */
		return;
	}
	ana_csv_u64(out, f.n);
	ana_csv_f0(out, f.begin);
	ana_csv_f0(out, f.end);
	ana_csv_f0(out, f.delta);
	ana_csv_f0(out, f.delta_total);
	ana_csv_i64(out, f.dmin);
	ana_csv_i64(out, f.dmax);
	ana_csv_i64(out, f.peak);
}

static json_t *jreal(double v) { return isfinite(v) ? json_real(v) : json_null(); }

void ana_mem_json_row(struct ana_jo *o, const struct ana_result *res, const struct ana_agg *a)
{
	if (!res->nmem)
		return;
	struct ana_mem_fig f;
	uint32_t rs = ana_mem_rss(res);
	if (rs != UINT32_MAX) { /* the same keys on every row of a trace with an RSS series; null: not measured */
		bool ok = ana_mem_fig(a, rs, &f);
		ana_jo_i64(o, "rss_occurrences", (int64_t)f.n);
		ana_jo_real(o, "rss_begin_bytes", ok ? f.begin : NAN);
		ana_jo_real(o, "rss_end_bytes", ok ? f.end : NAN);
		ana_jo_real(o, "rss_delta_bytes", ok ? f.delta : NAN);
		ana_jo_real(o, "rss_delta_total_bytes", ok ? f.delta_total : NAN);
		if (ok)
			ana_jo_i64(o, "rss_peak_bytes", f.peak);
		else
			ana_jo_null(o, "rss_peak_bytes");
	}
	struct ana_jo arr = ana_jo_child(o, "memory", '[');
	for (uint32_t s = 0; s < res->nmem; s++) {
		if (!ana_mem_fig(a, s, &f))
			continue;
		struct ana_jo m = ana_jo_child(&arr, NULL, '{');
		ana_jo_str(&m, "counter", ana_name(res, res->mem[s].id));
		ana_jo_i64(&m, "occurrences", (int64_t)f.n);
		ana_jo_real(&m, "begin_bytes", f.begin);
		ana_jo_real(&m, "end_bytes", f.end);
		ana_jo_real(&m, "delta_bytes", f.delta);
		ana_jo_real(&m, "delta_total_bytes", f.delta_total);
		ana_jo_i64(&m, "delta_min_bytes", f.dmin);
		ana_jo_i64(&m, "delta_max_bytes", f.dmax);
		ana_jo_i64(&m, "peak_bytes", f.peak);
		ana_jo_close(&m, "}");
	}
	ana_jo_close(&arr, "]");
}

json_t *ana_mem_json_series(const struct ana_result *res)
{
	json_t *arr = json_array();
	for (uint32_t s = 0; s < res->nmem; s++) {
		const struct ana_mem_series *m = &res->mem[s];
		json_t *o = json_object();
		json_object_set_new(o, "counter", ana_json_str(ana_name(res, m->id)));
		json_object_set_new(o, "samples", ana_json_u64(m->n));
		json_object_set_new(o, "period_ns", ana_json_u64(m->period_ns));
		json_object_set_new(o, "min_bytes", json_integer(m->min));
		json_object_set_new(o, "max_bytes", json_integer(m->max));
		json_array_append_new(arr, o);
	}
	return arr;
}

/* ---------------------------------------------------------------- compare */

struct mem_cmp_item {
	size_t row;
	double key; /* |total change new - base| */
};

static int cmp_mci(const void *a, const void *b)
{
	const struct mem_cmp_item *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? 1 : -1;
	return (x->row > y->row) - (x->row < y->row);
}

/* Figures of RSS series @s of merged node @node of @res (none for UINT32_MAX). */
static bool node_fig(const struct ana_result *res, uint32_t s, uint32_t node, struct ana_mem_fig *f)
{
	if (s == UINT32_MAX || node == UINT32_MAX) {
		memset(f, 0, sizeof(*f));
		return false;
	}
	return ana_mem_fig(&res->merged.n[node].agg, s, f);
}

void ana_mem_compare_text(FILE *out, const struct ana_result *base, const struct ana_result *nw,
			  const struct ana_cmp *c, int top)
{
	const uint32_t sb = ana_mem_rss(base), sn = ana_mem_rss(nw);
	if (sb == UINT32_MAX && sn == UINT32_MAX)
		return;
	char b[4][32];
	fprintf(out, "\nMemory (process RSS; sampled, doc/analyzer-output.md §3.5):\n  peak RSS: %s -> %s",
		sb == UINT32_MAX ? "-" : ana_fmt_bytes(b[0], 32, (double)base->mem[sb].max, false),
		sn == UINT32_MAX ? "-" : ana_fmt_bytes(b[1], 32, (double)nw->mem[sn].max, false));
	if (sb != UINT32_MAX && sn != UINT32_MAX)
		fprintf(out, " (%s)", ana_fmt_bytes(b[2], 32, (double)nw->mem[sn].max - (double)base->mem[sb].max, true));
	fputc('\n', out);
	struct mem_cmp_item *it = malloc((c->nrows ? c->nrows : 1) * sizeof(*it));
	if (!it)
		return;
	size_t n = 0;
	for (size_t i = 0; i < c->nrows; i++) {
		struct ana_mem_fig fb, fn;
		bool hb = node_fig(base, sb, c->rows[i].base_node, &fb), hn = node_fig(nw, sn, c->rows[i].new_node, &fn);
		if (hb || hn)
			it[n++] = (struct mem_cmp_item){ i, fabs(fn.delta_total - fb.delta_total) };
	}
	qsort(it, n, sizeof(*it), cmp_mci);
	size_t shown = top > 0 && (size_t)top < n ? (size_t)top : n < 20 ? n : 20;
	if (shown)
		fprintf(out, "  %-26s %-26s %-26s %s\n", "change per occurrence", "total change", "peak", "path");
	char *buf = NULL;
	size_t cap = 0;
	for (size_t j = 0; j < shown; j++) {
		const struct ana_cmp_row *r = &c->rows[it[j].row];
		struct ana_mem_fig fb, fn;
		bool hb = node_fig(base, sb, r->base_node, &fb), hn = node_fig(nw, sn, r->new_node, &fn);
		char d1[64], d2[64], d3[64];
		snprintf(d1, sizeof(d1), "%s -> %s", hb ? ana_fmt_bytes(b[0], 32, fb.delta, true) : "-",
			 hn ? ana_fmt_bytes(b[1], 32, fn.delta, true) : "-");
		snprintf(d2, sizeof(d2), "%s -> %s", hb ? ana_fmt_bytes(b[0], 32, fb.delta_total, true) : "-",
			 hn ? ana_fmt_bytes(b[1], 32, fn.delta_total, true) : "-");
		snprintf(d3, sizeof(d3), "%s -> %s", hb ? ana_fmt_bytes(b[0], 32, (double)fb.peak, false) : "-",
			 hn ? ana_fmt_bytes(b[1], 32, (double)fn.peak, false) : "-");
		const bool in_b = r->base_node != UINT32_MAX;
		const struct ana_result *res = in_b ? base : nw;
		const char *path = ana_path_short(res, &res->merged, in_b ? r->base_node : r->new_node, &buf, &cap);
		fprintf(out, "  %-26s %-26s %-26s %s\n", d1, d2, d3, ana_text_safe(path ? path : "?"));
	}
	if (shown < n)
		fprintf(out, "  ... and %zu more (--top)\n", n - shown);
	free(buf);
	free(it);
}

json_t *ana_mem_compare_json(const struct ana_result *base, const struct ana_result *nw, const struct ana_cmp *c)
{
	const uint32_t sb = ana_mem_rss(base), sn = ana_mem_rss(nw);
	json_t *o = json_object(), *rows = json_array();
	json_object_set_new(o, "peak_rss_base_bytes", sb == UINT32_MAX ? json_null() : json_integer(base->mem[sb].max));
	json_object_set_new(o, "peak_rss_new_bytes", sn == UINT32_MAX ? json_null() : json_integer(nw->mem[sn].max));
	for (size_t i = 0; i < c->nrows; i++) {
		struct ana_mem_fig fb, fn;
		bool hb = node_fig(base, sb, c->rows[i].base_node, &fb), hn = node_fig(nw, sn, c->rows[i].new_node, &fn);
		if (!hb && !hn)
			continue;
		json_t *r = json_object();
		json_object_set_new(r, "row", json_integer((json_int_t)i)); /* index into "rows" */
		json_object_set_new(r, "rss_delta_base_bytes", hb ? jreal(fb.delta) : json_null());
		json_object_set_new(r, "rss_delta_new_bytes", hn ? jreal(fn.delta) : json_null());
		json_object_set_new(r, "rss_delta_total_base_bytes", hb ? jreal(fb.delta_total) : json_null());
		json_object_set_new(r, "rss_delta_total_new_bytes", hn ? jreal(fn.delta_total) : json_null());
		json_object_set_new(r, "rss_peak_base_bytes", hb ? json_integer(fb.peak) : json_null());
		json_object_set_new(r, "rss_peak_new_bytes", hn ? json_integer(fn.peak) : json_null());
		json_array_append_new(rows, r);
	}
	json_object_set_new(o, "rows", rows);
	return o;
}
