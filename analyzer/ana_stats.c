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

#define unlikely_(x) __builtin_expect(!!(x), 0)
#define likely_(x) __builtin_expect(!!(x), 1)
#define PT_NOINLINE_STATS __attribute__((noinline))
__extension__ typedef unsigned __int128 u128; /* GCC/Clang: the 64x64->128 product */

#define SUB (1u << ANA_SUB_BITS)

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

#define SUBN (1u << ANA_SUB_BITS)

/* Gives octave @o a dense block and moves its sparse pairs into it.
 * 0, or -1 out of memory (nothing changed). */
static int octave_densify(struct ana_hist *h, uint32_t o)
{
	if (!h->blk && !(h->blk = calloc(ANA_HIST_OCTAVES, sizeof(*h->blk))))
		return -1;
	uint32_t *b = calloc(SUBN, sizeof(uint32_t));
	if (!b)
		return -1;
	uint32_t k = 0, n = 0;
	for (; k < h->nsp; k++) {
		uint32_t i = h->sp[2 * k];
		if (i / SUBN == o) {
			b[i % SUBN] += h->sp[2 * k + 1];
		} else {
			h->sp[2 * n] = i;
			h->sp[2 * n + 1] = h->sp[2 * k + 1];
			n++;
		}
	}
	h->nsp = n;
	h->blk[o] = b;
	return 0;
}

/* First sparse pair whose bucket index is >= @i (the pairs are sorted). */
static uint32_t sp_lower(const struct ana_hist *h, uint32_t i)
{
	uint32_t lo = 0, hi = h->nsp;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (h->sp[2 * mid] < i)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Sparse path: bucket @i of an octave without a block. The pairs stay
 * sorted by bucket, so an octave's pairs are one run. An octave gets a
 * block once it holds ANA_HIST_DENSE_AT distinct buckets (a block costs
 * as much as 64 pairs), or when the list is full (the octave with the
 * most pairs). */
static PT_NOINLINE_STATS void hist_add_sparse(struct ana_hist *h, uint32_t i, uint32_t count)
{
	uint32_t k = sp_lower(h, i);
	if (k < h->nsp && h->sp[2 * k] == i) {
		h->sp[2 * k + 1] += count;
		return;
	}
	uint32_t o = i / SUBN;
	uint32_t first = sp_lower(h, o * SUBN), last = sp_lower(h, (o + 1) * SUBN);
	if (last - first + 1 >= ANA_HIST_DENSE_AT) {
		if (octave_densify(h, o) == 0)
			h->blk[o][i % SUBN] += count;
		return;
	}
	if (h->nsp == h->csp) {
		if (h->csp < ANA_HIST_SPARSE) {
			uint32_t nc = h->csp ? 2 * h->csp : 4;
			uint32_t *p = realloc(h->sp, 2 * nc * sizeof(*p));
			if (!p)
				return;
			h->sp = p;
			h->csp = nc;
		} else {
			/* full: the octave with the most pairs (this one included) goes dense */
			uint32_t best = o, nbest = last - first + 1;
			for (uint32_t a = 0; a < h->nsp;) {
				uint32_t oa = h->sp[2 * a] / SUBN, b = sp_lower(h, (oa + 1) * SUBN);
				if (b - a > nbest) {
					nbest = b - a;
					best = oa;
				}
				a = b;
			}
			if (octave_densify(h, best))
				return;
			if (best == o) {
				h->blk[o][i % SUBN] += count;
				return;
			}
			k = sp_lower(h, i);
		}
	}
	memmove(&h->sp[2 * (k + 1)], &h->sp[2 * k], 2 * (h->nsp - k) * sizeof(*h->sp));
	h->sp[2 * k] = i;
	h->sp[2 * k + 1] = count;
	h->nsp++;
}

static inline void hist_add_idx(struct ana_hist *h, uint32_t i, uint32_t count)
{
	uint32_t *b;
	if (likely_(h->blk != NULL) && likely_((b = h->blk[i / SUBN]) != NULL)) {
		b[i % SUBN] += count;
		return;
	}
	hist_add_sparse(h, i, count);
}

void ana_hist_add(struct ana_hist *h, uint64_t v, uint32_t count)
{
	hist_add_idx(h, ana_hist_index(v), count);
}

void ana_hist_add_idx(struct ana_hist *h, const uint16_t *idx, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++)
		hist_add_idx(h, idx[k], 1);
}

void ana_hist_merge(struct ana_hist *dst, const struct ana_hist *src)
{
	for (uint32_t k = 0; k < src->nsp; k++)
		hist_add_idx(dst, src->sp[2 * k], src->sp[2 * k + 1]);
	if (!src->blk)
		return;
	for (uint32_t o = 0; o < ANA_HIST_OCTAVES; o++) {
		if (!src->blk[o])
			continue;
		if ((!dst->blk || !dst->blk[o]) && octave_densify(dst, o))
			continue;
		for (uint32_t j = 0; j < SUBN; j++)
			dst->blk[o][j] += src->blk[o][j];
	}
}

uint64_t ana_hist_quantile(const struct ana_hist *h, double q, uint64_t total, uint64_t lo, uint64_t hi)
{
	if (total == 0)
		return 0;
	/* nearest rank: the smallest value with at least ceil(q * n) values <= it */
	uint64_t rank = (uint64_t)ceil(q * (double)total);
	if (rank < 1)
		rank = 1;
	return ana_hist_at_rank(h, rank, lo, hi);
}

uint64_t ana_hist_at_rank(const struct ana_hist *h, uint64_t rank, uint64_t lo, uint64_t hi)
{
	if (!h->blk && h->nsp == 0)
		return 0;
	uint64_t seen = 0, v = hi;
	int found = 0;
	uint32_t idx = 0;
	/* buckets in index order: the sorted sparse pairs interleaved with the
	 * dense blocks (a bucket is in one or the other, never both) */
	const uint32_t *pairs = h->sp; /* sorted by bucket */
	uint32_t k = 0;
	for (uint32_t o = 0; o < ANA_HIST_OCTAVES && !found; o++) {
		if (h->blk && h->blk[o]) {
			for (uint32_t j = 0; j < SUBN && !found; j++) {
				seen += h->blk[o][j];
				if (seen >= rank) {
					idx = o * SUBN + j;
					found = 1;
				}
			}
			continue;
		}
		for (; k < h->nsp && pairs[2 * k] / SUBN == o && !found; k++) {
			seen += pairs[2 * k + 1];
			if (seen >= rank) {
				idx = pairs[2 * k];
				found = 1;
			}
		}
	}
	if (found) {
		uint64_t l = ana_hist_lower(idx), u = ana_hist_upper(idx);
		v = l + (u - 1 - l) / 2;
	}
	return v < lo ? lo : v > hi ? hi : v;
}

void ana_hist_free(struct ana_hist *h)
{
	free(h->sp);
	if (h->blk)
		for (uint32_t o = 0; o < ANA_HIST_OCTAVES; o++)
			free(h->blk[o]);
	free(h->blk);
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

void ana_moments_merge(struct ana_moments *a, const struct ana_moments *b)
{
	ana_u128 t = a->s2 + b->s2;
	a->s1 += b->s1;
	a->s2 = t < b->s2 ? ~(ana_u128)0 : t;
}

double ana_moments_mean(const struct ana_moments *m, uint64_t n)
{
	return n ? (double)((long double)m->s1 / (long double)n) : 0.0;
}

double ana_moments_std(const struct ana_moments *m, uint64_t n)
{
	if (n < 2)
		return 0.0;
	if (m->s2 == ~(ana_u128)0)
		return NAN;
	ana_u128 q = m->s1 / n, r = m->s1 % n;
	/* q s1 <= s1^2 / n <= s2 (Cauchy-Schwarz), so neither step wraps */
	ana_u128 d = m->s2 - q * m->s1 - q * r;
	long double m2 = (long double)d - (long double)r * (long double)r / (long double)n;
	return m2 > 0 ? (double)sqrtl(m2 / (long double)(n - 1)) : 0.0;
}

struct ana_moments ana_moments_without(const struct ana_moments *m, uint64_t x)
{
	struct ana_moments r = *m;
	r.s1 -= x;
	if (m->s2 != ~(ana_u128)0)
		r.s2 -= (ana_u128)x * x;
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

/* Widens the duration range [*min_ns, *max_ns] of an aggregate of @count
 * values (whose max is 0 while empty) to take in [@lo_ns, @hi_ns]. */
static void dur_range_add(uint64_t *min_ns, uint64_t *max_ns, uint64_t count, uint64_t lo_ns, uint64_t hi_ns)
{
	if (count == 0 || lo_ns < *min_ns)
		*min_ns = lo_ns;
	if (hi_ns > *max_ns)
		*max_ns = hi_ns;
}

void ana_agg_merge(struct ana_agg *d, const struct ana_agg *s, uint64_t *rng)
{
	if (s->count == 0)
		return;
	dur_range_add(&d->min_ns, &d->max_ns, d->count, s->min_ns, s->max_ns);
	if (d->count == 0 || s->first_start_ns < d->first_start_ns) {
		d->first_start_ns = s->first_start_ns;
		d->first_ns = s->first_ns;
	}
	d->count += s->count;
	d->total_ns += s->total_ns;
	d->self_ns += s->self_ns;
	ana_moments_merge(&d->all, &s->all);
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
	if (unlikely_(s->gpu != NULL)) {
		if (!d->gpu && !(d->gpu = calloc(1, sizeof(*d->gpu))))
			return;
		ana_gpu_dist_merge(&d->gpu->self, &s->gpu->self);
		d->gpu->incl_count += s->gpu->incl_count;
		d->gpu->incl_total_ns += s->gpu->incl_total_ns;
	}
}

void ana_agg_free(struct ana_agg *a)
{
	ana_hist_free(&a->hist);
	ana_reservoir_free(&a->res);
	if (a->gpu) {
		ana_hist_free(&a->gpu->self.hist);
		free(a->gpu);
		a->gpu = NULL;
	}
}

void ana_gpu_dist_add(struct ana_gpu_dist *d, uint64_t dur_ns, int64_t lat_ns)
{
	dur_range_add(&d->min_ns, &d->max_ns, d->count, dur_ns, dur_ns);
	if (d->count == 0 || lat_ns < d->lat_min_ns)
		d->lat_min_ns = lat_ns;
	if (d->count == 0 || lat_ns > d->lat_max_ns)
		d->lat_max_ns = lat_ns;
	d->count++;
	d->total_ns += dur_ns;
	ana_hist_add(&d->hist, dur_ns, 1);
	ana_welford_add(&d->lat, (double)lat_ns);
	d->early += lat_ns < 0;
}

void ana_gpu_dist_merge(struct ana_gpu_dist *d, const struct ana_gpu_dist *s)
{
	if (s->count == 0)
		return;
	dur_range_add(&d->min_ns, &d->max_ns, d->count, s->min_ns, s->max_ns);
	if (d->count == 0 || s->lat_min_ns < d->lat_min_ns)
		d->lat_min_ns = s->lat_min_ns;
	if (d->count == 0 || s->lat_max_ns > d->lat_max_ns)
		d->lat_max_ns = s->lat_max_ns;
	d->count += s->count;
	d->total_ns += s->total_ns;
	ana_hist_merge(&d->hist, &s->hist);
	ana_welford_merge(&d->lat, &s->lat);
	d->early += s->early;
}

/* |v| of a negative value, INT64_MIN included. */
static inline uint64_t neg_mag(int64_t v)
{
	return (uint64_t)0 - (uint64_t)v;
}

void ana_slat_add(struct ana_slat *s, int64_t v)
{
	if (s->n == 0 || v < s->min_ns)
		s->min_ns = v;
	if (s->n == 0 || v > s->max_ns)
		s->max_ns = v;
	s->n++;
	ana_welford_add(&s->w, (double)v);
	if (v < 0) {
		s->neg++;
		ana_hist_add(&s->negh, neg_mag(v), 1);
	} else {
		ana_hist_add(&s->pos, (uint64_t)v, 1);
	}
}

/*
 * Nearest-rank percentile of signed values: the negative ones come first,
 * largest magnitude first, so rank k <= neg is the (neg - k + 1)-th
 * smallest magnitude negated; above, rank k - neg of the non-negative ones.
 * Same bucket midpoints and error bound as ana_hist_quantile(), clamped to
 * [min, max].
 */
int64_t ana_slat_quantile(const struct ana_slat *s, double q)
{
	if (s->n == 0)
		return 0;
	uint64_t rank = (uint64_t)ceil(q * (double)s->n);
	if (rank < 1)
		rank = 1;
	int64_t v;
	if (rank <= s->neg) {
		uint64_t lo = s->max_ns < 0 ? neg_mag(s->max_ns) : 0, hi = neg_mag(s->min_ns);
		uint64_t m = ana_hist_at_rank(&s->negh, s->neg - rank + 1, lo, hi);
		v = m > (uint64_t)INT64_MAX ? INT64_MIN : -(int64_t)m;
	} else {
		uint64_t hi = (uint64_t)s->max_ns;
		v = (int64_t)ana_hist_at_rank(&s->pos, rank - s->neg, 0, hi);
	}
	return v < s->min_ns ? s->min_ns : v > s->max_ns ? s->max_ns : v;
}

void ana_slat_free(struct ana_slat *s)
{
	ana_hist_free(&s->pos);
	ana_hist_free(&s->negh);
}
