/*
 * analyzer/ana_stats.c - histograms, running moments, reservoirs.
 *
 * Sources: Welford, "Note on a method for calculating corrected sums of
 * squares and products" (Technometrics 4, 1962) for the running update;
 * Chan, Golub, LeVeque, "Updating formulae and a pairwise algorithm for
 * computing sample variances" (1979) for merging; the reverse update
 * (removing one value) is Welford's step solved for the previous state.
 * Reservoir: Vitter, "Random sampling with a reservoir" (ACM TOMS 11, 1985),
 * algorithm R. Histogram buckets follow HdrHistogram's log-linear layout.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/ana.h"

#define PT_MIN_U32(a, b) ((a) < (b) ? (a) : (b))
#define PT_MAX_U32(a, b) ((a) > (b) ? (a) : (b))
#define unlikely_(x) __builtin_expect(!!(x), 0)
__extension__ typedef unsigned __int128 u128; /* GCC/Clang: the 64x64->128 product */

#define SUB (1u << ANA_SUB_BITS)

uint32_t ana_hist_index(uint64_t v)
{
	if (v < SUB)
		return (uint32_t)v;
	unsigned e = 63u - (unsigned)__builtin_clzll(v); /* >= ANA_SUB_BITS */
	unsigned shift = e - ANA_SUB_BITS;
	uint32_t sub = (uint32_t)(v >> shift) & (SUB - 1);
	return SUB + shift * SUB + sub;
}

uint64_t ana_hist_lower(uint32_t idx)
{
	if (idx < SUB)
		return idx;
	uint32_t k = idx - SUB, shift = k / SUB, sub = k % SUB;
	return (uint64_t)(SUB + sub) << shift;
}

uint64_t ana_hist_upper(uint32_t idx)
{
	if (idx < SUB)
		return (uint64_t)idx + 1;
	uint32_t shift = (idx - SUB) / SUB;
	uint64_t lo = ana_hist_lower(idx), w = 1ull << shift;
	return lo + w < lo ? UINT64_MAX : lo + w;
}

/* Makes [lo, lo+len) cover [a, b); grows with slack on the side that moved. */
static int hist_cover(struct ana_hist *h, uint32_t a, uint32_t b)
{
	if (h->len && a >= h->lo && b <= h->lo + h->len)
		return 0;
	uint32_t nlo = h->len ? PT_MIN_U32(h->lo, a) : a, nhi = h->len ? PT_MAX_U32(h->lo + h->len, b) : b;
	if (h->len) { /* slack: a path's durations drift; avoid a realloc per new bucket */
		if (nlo < h->lo)
			nlo = nlo > 32 ? nlo - 32 : 0;
		if (nhi > h->lo + h->len)
			nhi += 32;
	}
	uint32_t *c = calloc(nhi - nlo, sizeof(*c));
	if (!c)
		return -1;
	if (h->len)
		memcpy(c + (h->lo - nlo), h->cnt, h->len * sizeof(*c));
	free(h->cnt);
	h->cnt = c;
	h->lo = nlo;
	h->len = nhi - nlo;
	return 0;
}

void ana_hist_add(struct ana_hist *h, uint64_t v, uint32_t count)
{
	uint32_t i = ana_hist_index(v);
	if (unlikely_(i < h->lo || i >= h->lo + h->len) && hist_cover(h, i, i + 1))
		return;
	h->cnt[i - h->lo] += count;
}

void ana_hist_merge(struct ana_hist *dst, const struct ana_hist *src)
{
	if (!src->len || hist_cover(dst, src->lo, src->lo + src->len))
		return;
	for (uint32_t i = 0; i < src->len; i++)
		dst->cnt[src->lo - dst->lo + i] += src->cnt[i];
}

uint64_t ana_hist_quantile(const struct ana_hist *h, double q, uint64_t total, uint64_t lo, uint64_t hi)
{
	if (total == 0 || h->len == 0)
		return 0;
	/* nearest rank: the smallest value with at least ceil(q * n) values <= it */
	uint64_t rank = (uint64_t)ceil(q * (double)total);
	if (rank < 1)
		rank = 1;
	uint64_t seen = 0, v = hi;
	for (uint32_t i = 0; i < h->len; i++) {
		seen += h->cnt[i];
		if (seen >= rank) {
			uint64_t l = ana_hist_lower(h->lo + i), u = ana_hist_upper(h->lo + i);
			v = l + (u - 1 - l) / 2;
			break;
		}
	}
	return v < lo ? lo : v > hi ? hi : v;
}

void ana_hist_free(struct ana_hist *h)
{
	free(h->cnt);
	memset(h, 0, sizeof(*h));
}

void ana_welford_add(struct ana_welford *w, double x)
{
	w->n++;
	double d = x - w->mean;
	w->mean += d / (double)w->n;
	w->m2 += d * (x - w->mean);
}

void ana_welford_merge(struct ana_welford *a, const struct ana_welford *b)
{
	if (b->n == 0)
		return;
	if (a->n == 0) {
		*a = *b;
		return;
	}
	double n = (double)(a->n + b->n), d = b->mean - a->mean;
	a->mean += d * (double)b->n / n;
	a->m2 += b->m2 + d * d * (double)a->n * (double)b->n / n;
	a->n += b->n;
}

double ana_welford_std(const struct ana_welford *w)
{
	return w->n > 1 ? sqrt(w->m2 / (double)(w->n - 1)) : 0.0;
}

struct ana_welford ana_welford_without(const struct ana_welford *w, double x)
{
	struct ana_welford r = { 0, 0.0, 0.0 };
	if (w->n <= 1)
		return r;
	r.n = w->n - 1;
	r.mean = ((double)w->n * w->mean - x) / (double)r.n;
	r.m2 = w->m2 - (x - w->mean) * (x - r.mean);
	if (r.m2 < 0 || r.n == 1)
		r.m2 = r.n == 1 ? 0.0 : 0.0 > r.m2 ? 0.0 : r.m2;
	return r;
}

static uint64_t rnd(uint64_t *s)
{
	/* splitmix64: seeded, so reports are reproducible */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int res_push(struct ana_reservoir *r, uint64_t v)
{
	if (r->n == r->cap) {
		uint32_t nc = r->cap ? r->cap * 2 : 8;
		if (nc > ANA_RESERVOIR_CAP)
			nc = ANA_RESERVOIR_CAP;
		uint64_t *p = realloc(r->v, nc * sizeof(*p));
		if (!p)
			return -1;
		r->v = p;
		r->cap = nc;
	}
	r->v[r->n++] = v;
	return 0;
}

void ana_reservoir_add(struct ana_reservoir *r, uint64_t v, uint64_t *rng)
{
	r->seen++;
	if (r->n < ANA_RESERVOIR_CAP) {
		res_push(r, v);
		return;
	}
	/* uniform in [0, seen) by Lemire's multiply-shift (no 64-bit division) */
	uint64_t j = (uint64_t)(((u128)rnd(rng) * r->seen) >> 64);
	if (j < ANA_RESERVOIR_CAP)
		r->v[j] = v;
}

void ana_reservoir_merge(struct ana_reservoir *dst, const struct ana_reservoir *src, uint64_t *rng)
{
	if (src->seen == 0)
		return;
	if (dst->n + src->n <= ANA_RESERVOIR_CAP && dst->n == dst->seen && src->n == src->seen) {
		for (uint32_t i = 0; i < src->n; i++)
			res_push(dst, src->v[i]);
		dst->seen += src->seen;
		return;
	}
	/* keep each side in proportion to how many values it stands for */
	uint64_t total = dst->seen + src->seen;
	uint32_t want_src = (uint32_t)((double)ANA_RESERVOIR_CAP * (double)src->seen / (double)total + 0.5);
	if (want_src > src->n)
		want_src = src->n;
	uint32_t want_dst = ANA_RESERVOIR_CAP - want_src;
	if (want_dst > dst->n)
		want_dst = dst->n;
	/* partial Fisher-Yates on dst to keep a random subset */
	for (uint32_t i = 0; i < want_dst; i++) {
		uint32_t j = i + (uint32_t)(rnd(rng) % (dst->n - i));
		uint64_t t = dst->v[i];
		dst->v[i] = dst->v[j];
		dst->v[j] = t;
	}
	dst->n = want_dst;
	uint64_t *tmp = malloc((src->n ? src->n : 1) * sizeof(*tmp));
	if (tmp) {
		memcpy(tmp, src->v, src->n * sizeof(*tmp));
		for (uint32_t i = 0; i < want_src; i++) {
			uint32_t j = i + (uint32_t)(rnd(rng) % (src->n - i));
			uint64_t t = tmp[i];
			tmp[i] = tmp[j];
			tmp[j] = t;
			res_push(dst, tmp[i]);
		}
		free(tmp);
	}
	dst->seen = total;
}

void ana_reservoir_free(struct ana_reservoir *r)
{
	free(r->v);
	memset(r, 0, sizeof(*r));
}

void ana_agg_merge(struct ana_agg *d, const struct ana_agg *s, uint64_t *rng)
{
	if (s->count == 0)
		return;
	if (d->count == 0 || s->min_ns < d->min_ns)
		d->min_ns = s->min_ns;
	if (s->max_ns > d->max_ns)
		d->max_ns = s->max_ns;
	if (d->count == 0 || s->first_start_ns < d->first_start_ns) {
		d->first_start_ns = s->first_start_ns;
		d->first_ns = s->first_ns;
	}
	d->count += s->count;
	d->total_ns += s->total_ns;
	d->self_ns += s->self_ns;
	ana_welford_merge(&d->all, &s->all);
	ana_hist_merge(&d->hist, &s->hist);
	ana_reservoir_merge(&d->res, &s->res, rng);
	for (int k = 0; k < ANA_NMETRIC; k++) {
		d->metric_self[k] += s->metric_self[k];
		d->metric_incl[k] += s->metric_incl[k];
	}
	for (int k = 0; k < ANA_DIRS; k++) {
		d->xfer_self[k] += s->xfer_self[k];
		d->xfer_incl[k] += s->xfer_incl[k];
		d->xfer_count[k] += s->xfer_count[k];
	}
	d->lossy += s->lossy;
}

void ana_agg_free(struct ana_agg *a)
{
	ana_hist_free(&a->hist);
	ana_reservoir_free(&a->res);
}
