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

#define PAIR_IDX(p) ((p) >> 16)
#define PAIR_COUNT(p) ((p)&0xffffu)

_Static_assert(ANA_HIST_OCTAVES * SUB <= 0x10000, "a bucket index fits a pair's 16 bits");
_Static_assert(ANA_HIST_OCTAVES <= 64, "one bit per octave in ana_hist_blk.wide");
_Static_assert(ANA_HIST_OCTAVES <= UINT8_MAX, "octaves fit ana_hist.olo and .nblk");
_Static_assert(ANA_HIST_SPARSE <= UINT16_MAX, "the pair counts fit ana_hist.nsp and .csp");
_Static_assert(ANA_HIST_HOT * sizeof(uint32_t) <= SUB * sizeof(uint16_t),
	       "an octave's pairs never cost more than its narrow block");
_Static_assert(ANA_HIST_HOT <= UINT16_MAX, "a sparse octave's counts fit a pair's 16 bits");

/*
 * Block table of a histogram: slot r holds octave olo + r's block, NULL
 * while that octave's buckets are pairs in sp. A block is uint16_t[SUB]
 * (narrow) until one of its counters would pass UINT16_MAX, then
 * uint32_t[SUB] (wide); bit o of @wide tells which. The table spans the
 * dense octaves only (a path's body is a few adjacent octaves), not all
 * ANA_HIST_OCTAVES: 8 bytes per octave spanned instead of 464 per histogram.
 */
struct ana_hist_blk {
	uint64_t wide;
	void *b[];
};

/* Octave @o's block, or NULL if @o is kept in sp. */
static inline void *octave_block(const struct ana_hist *h, uint32_t o)
{
	uint32_t r = o - h->olo; /* wraps below olo */
	return r < h->nblk ? h->blk->b[r] : NULL;
}

/* Extends the block table to cover octave @o (new slots NULL).
 * 0, or -1 out of memory (nothing changed). */
static int table_cover(struct ana_hist *h, uint32_t o)
{
	uint32_t lo = h->nblk ? h->olo : o, hi = h->nblk ? h->olo + h->nblk : o + 1;
	if (o >= lo && o < hi && h->nblk)
		return 0;
	if (o < lo)
		lo = o;
	if (o >= hi)
		hi = o + 1;
	struct ana_hist_blk *t = realloc(h->blk, sizeof(*t) + (hi - lo) * sizeof(t->b[0]));
	if (!t) {
		ana_nomem_note();
		return -1;
	}
	if (!h->blk)
		t->wide = 0;
	uint32_t at = h->nblk ? h->olo - lo : 0; /* where the old slots go */
	memmove(&t->b[at], &t->b[0], h->nblk * sizeof(t->b[0]));
	for (uint32_t r = 0; r < at; r++)
		t->b[r] = NULL;
	for (uint32_t r = at + h->nblk; r < hi - lo; r++)
		t->b[r] = NULL;
	h->blk = t;
	h->olo = (uint8_t)lo;
	h->nblk = (uint8_t)(hi - lo);
	return 0;
}

/* First sparse pair whose bucket index is >= @i (the pairs are sorted by
 * bucket, the bucket in the high half: one compare on the packed word). */
static uint32_t sp_lower(const struct ana_hist *h, uint32_t i)
{
	/* branch-free lower bound (the halving does not depend on the data,
	 * so nothing is mispredicted): the answer stays in [b, b + n] */
	const uint32_t *b = h->sp;
	uint32_t n = h->nsp, key = i << 16;
	if (n == 0)
		return 0;
	while (n > 1) {
		uint32_t half = n / 2;
		b = b[half] < key ? b + half : b;
		n -= half;
	}
	return (uint32_t)(b - h->sp) + (*b < key);
}

/* Next capacity of the pair list: 1.5x, as glibc sizes a chunk (16k + 8
 * usable bytes, so 4k + 2 pairs), at most ANA_HIST_SPARSE. */
static uint32_t sp_grow_to(uint32_t csp)
{
	uint32_t nc = csp ? csp + csp / 2 : 6;
	nc = ((nc + 1) & ~3u) + 2;
	return nc < ANA_HIST_SPARSE ? nc : ANA_HIST_SPARSE;
}

/* Gives back the list's slack once pairs have moved into a block: most
 * of the list was a body octave's pairs before it went dense, and a list
 * only grows back with new distinct tail buckets. Kept as is if realloc
 * fails (nothing lost). */
static void sp_shrink(struct ana_hist *h)
{
	uint32_t nc = h->nsp ? sp_grow_to(h->nsp) : 0;
	if (2 * nc > h->csp)
		return;
	if (!nc) {
		free(h->sp);
		h->sp = NULL;
		h->csp = 0;
		return;
	}
	uint32_t *p = realloc(h->sp, nc * sizeof(*p));
	if (p) {
		h->sp = p;
		h->csp = (uint16_t)nc;
	}
}

/* Gives octave @o a narrow block and moves its sparse pairs (one run of the
 * sorted list, counts <= UINT16_MAX) into it. 0, or -1 out of memory (the
 * pairs stay; the table may have grown a NULL slot). */
static int octave_densify(struct ana_hist *h, uint32_t o)
{
	if (table_cover(h, o))
		return -1;
	uint16_t *b = calloc(SUB, sizeof(*b));
	if (!b) {
		ana_nomem_note();
		return -1;
	}
	h->blk->b[o - h->olo] = b;
	uint32_t first = sp_lower(h, o * SUB), last = sp_lower(h, (o + 1) * SUB);
	if (first == last)
		return 0;
	for (uint32_t k = first; k < last; k++)
		b[PAIR_IDX(h->sp[k]) % SUB] = (uint16_t)PAIR_COUNT(h->sp[k]);
	memmove(&h->sp[first], &h->sp[last], (h->nsp - last) * sizeof(*h->sp));
	h->nsp = (uint16_t)(h->nsp - (last - first));
	sp_shrink(h);
	return 0;
}

/* Widens octave @o's narrow block to 32-bit counters. 0, or -1 out of
 * memory (the block stays narrow). */
static int octave_widen(struct ana_hist *h, uint32_t o)
{
	void **slot = &h->blk->b[o - h->olo];
	const uint16_t *n = *slot;
	uint32_t *w = malloc(SUB * sizeof(*w));
	if (!w) {
		ana_nomem_note();
		return -1;
	}
	for (uint32_t j = 0; j < SUB; j++)
		w[j] = n[j];
	free(*slot);
	*slot = w;
	h->blk->wide |= 1ull << o;
	return 0;
}

/* @count values into counter @j of dense octave @o, widening its block if
 * the counter would pass UINT16_MAX (the values are left out if that
 * allocation fails). */
static void block_add(struct ana_hist *h, uint32_t o, uint32_t j, uint32_t count)
{
	if (!(h->blk->wide >> o & 1)) {
		uint16_t *c = (uint16_t *)h->blk->b[o - h->olo] + j;
		if ((uint64_t)*c + count <= UINT16_MAX) {
			*c = (uint16_t)(*c + count);
			return;
		}
		if (octave_widen(h, o))
			return;
	}
	((uint32_t *)h->blk->b[o - h->olo])[j] += count;
}

/* Sparse path: bucket @i of an octave without a block. The pairs stay
 * sorted by bucket, so an octave's pairs are one run (fewer than
 * ANA_HIST_HOT: each holds a value at least). The octave gets a block when
 * it would hold ANA_HIST_HOT values, or when the list is full (the octave
 * with the most pairs). Out of memory, the values are left out. */
static PT_NOINLINE_STATS void hist_add_sparse(struct ana_hist *h, uint32_t i, uint32_t count)
{
	/* the octave's run: found by one search, walked to its end (fewer than
	 * ANA_HIST_HOT pairs) */
	uint32_t o = i / SUB, first = sp_lower(h, o * SUB), last = first, k = first;
	uint64_t held = count; /* the octave's values, this add's included */
	for (; last < h->nsp && PAIR_IDX(h->sp[last]) / SUB == o; last++) {
		held += PAIR_COUNT(h->sp[last]);
		k += PAIR_IDX(h->sp[last]) < i;
	}
	if (held >= ANA_HIST_HOT)
		goto dense; /* a hot octave: O(1) adds from now on */
	if (k < last && PAIR_IDX(h->sp[k]) == i) {
		h->sp[k] += count;
		return;
	}
	if (h->nsp == h->csp) {
		if (h->csp < ANA_HIST_SPARSE) {
			uint32_t nc = sp_grow_to(h->csp);
			uint32_t *p = realloc(h->sp, nc * sizeof(*p));
			if (!p) {
				ana_nomem_note();
				return;
			}
			h->sp = p;
			h->csp = (uint16_t)nc;
		} else {
			/* full: the octave with the most pairs (this one included) goes dense */
			uint32_t best = o, nbest = last - first + 1;
			for (uint32_t a = 0; a < h->nsp;) {
				uint32_t oa = PAIR_IDX(h->sp[a]) / SUB, b = sp_lower(h, (oa + 1) * SUB);
				if (b - a > nbest) {
					nbest = b - a;
					best = oa;
				}
				a = b;
			}
			if (best == o)
				goto dense;
			if (octave_densify(h, best))
				return;
			k = sp_lower(h, i);
		}
	}
	memmove(&h->sp[k + 1], &h->sp[k], (h->nsp - k) * sizeof(*h->sp));
	h->sp[k] = i << 16 | count;
	h->nsp++;
	return;
dense:
	if (octave_densify(h, o) == 0)
		block_add(h, o, i % SUB, count);
}

/* Everything but a fitting add into an existing block: a narrow counter
 * about to pass UINT16_MAX, or an octave without a block. */
static PT_NOINLINE_STATS void hist_add_slow(struct ana_hist *h, uint32_t i, uint32_t count)
{
	if (octave_block(h, i / SUB))
		block_add(h, i / SUB, i % SUB, count);
	else
		hist_add_sparse(h, i, count);
}

static inline void hist_add_idx(struct ana_hist *h, uint32_t i, uint32_t count)
{
	uint32_t o = i / SUB, r = o - h->olo;
	if (likely_(r < h->nblk)) {
		void *b = h->blk->b[r];
		if (likely_(b != NULL)) {
			if (h->blk->wide >> o & 1) {
				((uint32_t *)b)[i % SUB] += count;
				return;
			}
			uint16_t *c = (uint16_t *)b + i % SUB;
			if (likely_((uint64_t)*c + count <= UINT16_MAX)) {
				*c = (uint16_t)(*c + count);
				return;
			}
		}
	}
	hist_add_slow(h, i, count);
}

void ana_hist_add(struct ana_hist *h, uint64_t v, uint32_t count)
{
	hist_add_idx(h, ana_hist_index(v), count);
}

void ana_hist_add_idx(struct ana_hist *h, const uint16_t *idx, uint32_t n)
{
	/* The table, its span and bitmap in locals: the counter stores cannot
	 * change them (the compiler could not know that of the uint8_t span);
	 * reloaded after each slow add, which may. Histograms without a wide
	 * block (nearly all) get a loop without the width test. */
	for (uint32_t k = 0; k < n; k++) {
		const struct ana_hist_blk *t = h->blk;
		uint32_t olo = h->olo, nblk = h->nblk;
		uint64_t wide = t ? t->wide : 0;
		if (!wide) {
			for (; k < n; k++) {
				uint32_t i = idx[k], r = i / SUB - olo;
				if (unlikely_(r >= nblk) || unlikely_(t->b[r] == NULL))
					break;
				uint16_t *c = (uint16_t *)t->b[r] + i % SUB;
				if (unlikely_(++*c == 0)) { /* wrapped: back to UINT16_MAX, and widen */
					*c = UINT16_MAX;
					break;
				}
			}
		} else {
			for (; k < n; k++) {
				uint32_t i = idx[k], o = i / SUB, r = o - olo;
				if (unlikely_(r >= nblk) || unlikely_(t->b[r] == NULL))
					break;
				if (wide >> o & 1) {
					((uint32_t *)t->b[r])[i % SUB]++;
					continue;
				}
				uint16_t *c = (uint16_t *)t->b[r] + i % SUB;
				if (unlikely_(++*c == 0)) {
					*c = UINT16_MAX;
					break;
				}
			}
		}
		if (k < n)
			hist_add_slow(h, idx[k], 1);
	}
}

/* Eight 16-bit counters, as one SSE2 register (GCC's vector extension:
 * the -O2 build does not vectorize the plain loop, which took 20 M
 * instructions of --csv's merges on the bench trace). */
typedef uint16_t v8u16 __attribute__((vector_size(16), may_alias, aligned(2)));
_Static_assert(SUB % 8 == 0, "a block is whole vectors");

/* Adds narrow block @a into narrow block @d when no sum passes
 * UINT16_MAX (true), or changes nothing (false). */
static bool narrow_add(uint16_t *d, const uint16_t *a)
{
	v8u16 sum[SUB / 8], over = { 0 };
	for (uint32_t i = 0; i < SUB / 8; i++) {
		const v8u16 x = *(const v8u16 *)(d + 8 * i), y = *(const v8u16 *)(a + 8 * i);
		sum[i] = x + y; /* wraps in the lane that overflows: then below x */
		over |= (v8u16)(sum[i] < x);
	}
	for (uint32_t i = 0; i < 8; i++)
		if (over[i])
			return false;
	memcpy(d, sum, sizeof(sum));
	return true;
}

void ana_hist_merge(struct ana_hist *dst, const struct ana_hist *src)
{
	for (uint32_t k = 0; k < src->nsp; k++)
		hist_add_idx(dst, PAIR_IDX(src->sp[k]), PAIR_COUNT(src->sp[k]));
	for (uint32_t r = 0; r < src->nblk; r++) {
		const void *b = src->blk->b[r];
		uint32_t o = src->olo + r;
		if (!b || (!octave_block(dst, o) && octave_densify(dst, o)))
			continue;
		const bool wide = src->blk->wide >> o & 1;
		uint32_t j = 0;
		if (wide && !(dst->blk->wide >> o & 1) && octave_widen(dst, o))
			continue; /* out of memory: left out, as block_add() leaves them */
		if (dst->blk->wide >> o & 1) { /* into 32-bit counters: vector adds, as block_add() adds them */
			uint32_t *d = dst->blk->b[o - dst->olo];
			if (wide) {
				const uint32_t *a = b;
				for (uint32_t i = 0; i < SUB; i++)
					d[i] += a[i];
			} else {
				const uint16_t *a = b;
				for (uint32_t i = 0; i < SUB; i++)
					d[i] += a[i];
			}
			continue;
		}
		if (!wide) { /* both narrow */
			uint16_t *d = dst->blk->b[o - dst->olo];
			const uint16_t *a = b;
			if (narrow_add(d, a))
				continue;
			for (; j < SUB && (uint32_t)d[j] + a[j] <= UINT16_MAX; j++) /* until a sum would not fit */
				d[j] = (uint16_t)(d[j] + a[j]);
		}
		for (; j < SUB; j++) {
			uint32_t c = wide ? ((const uint32_t *)b)[j] : ((const uint16_t *)b)[j];
			if (c)
				block_add(dst, o, j, c);
		}
	}
}

void ana_hist_quantiles(const struct ana_hist *h, const double *q, uint32_t n, uint64_t total, uint64_t lo,
			uint64_t hi, uint64_t *out)
{
	uint64_t rank[ANA_HIST_MAX_RANKS];
	if (total == 0 || n > ANA_HIST_MAX_RANKS) {
		for (uint32_t i = 0; i < n; i++)
			out[i] = total == 0 ? 0 : ana_hist_quantile(h, q[i], total, lo, hi);
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		/* nearest rank: the smallest value with at least ceil(q * n) values <= it */
		rank[i] = (uint64_t)ceil(q[i] * (double)total);
		if (rank[i] < 1)
			rank[i] = 1;
	}
	ana_hist_at_ranks(h, rank, n, lo, hi, out);
}

uint64_t ana_hist_quantile(const struct ana_hist *h, double q, uint64_t total, uint64_t lo, uint64_t hi)
{
	uint64_t v;
	ana_hist_quantiles(h, &q, 1, total, lo, hi, &v);
	return v;
}

/* Value @v at ranks @i.. of @n that @seen values reach; the next rank's index. */
static uint32_t ranks_at(const uint64_t *rank, uint32_t i, uint32_t n, uint64_t seen, uint64_t v, uint64_t *out)
{
	do
		out[i++] = v;
	while (i < n && seen >= rank[i]);
	return i;
}

/* Bucket @idx's midpoint, clamped to [lo, hi]. */
static PT_NOINLINE_STATS uint64_t bucket_value(uint32_t idx, uint64_t lo, uint64_t hi)
{
	uint64_t l = ana_hist_lower(idx), u = ana_hist_upper(idx), v = l + (u - 1 - l) / 2;
	return v < lo ? lo : v > hi ? hi : v;
}

/* The ranks @i.. of @n that dense octave @o's block @b (counters of type
 * @T) reaches, *@seen values before it: the block's sum first (the walk
 * skips every block below the next rank in a few vector adds), then its
 * counters up to the rank. The next rank's index. */
#define BLOCK_RANKS(name, T)                                                                                         \
	static uint32_t name(const void *b, uint32_t o, const uint64_t *rank, uint32_t i, uint32_t n, uint64_t *seen, \
			     uint64_t lo, uint64_t hi, uint64_t *out)                                                 \
	{                                                                                                            \
		const T *c = b;                                                                                      \
		uint64_t sum = 0, s = *seen;                                                                         \
		for (uint32_t j = 0; j < SUB; j++)                                                                   \
			sum += c[j];                                                                                 \
		if (s + sum < rank[i]) {                                                                             \
			*seen = s + sum;                                                                             \
			return i;                                                                                    \
		}                                                                                                    \
		uint64_t next = rank[i];                                                                             \
		for (uint32_t g = 0; g < SUB && i < n; g += 8) {                                                     \
			/* eight counters at once while the next rank lies beyond them */                           \
			const uint64_t gs = (uint64_t)c[g] + c[g + 1] + c[g + 2] + c[g + 3] + c[g + 4] + c[g + 5] +  \
					    c[g + 6] + c[g + 7];                                                     \
			if (s + gs < next) {                                                                         \
				s += gs;                                                                             \
				continue;                                                                            \
			}                                                                                            \
			for (uint32_t j = g; j < g + 8; j++) {                                                       \
				s += c[j];                                                                           \
				if (s >= next) {                                                                     \
					i = ranks_at(rank, i, n, s, bucket_value(o * SUB + j, lo, hi), out);         \
					if (i == n)                                                                  \
						break;                                                               \
					next = rank[i];                                                              \
				}                                                                                    \
			}                                                                                            \
		}                                                                                                    \
		*seen = *seen + sum;                                                                                 \
		return i;                                                                                            \
	}
BLOCK_RANKS(block_ranks16, uint16_t)
BLOCK_RANKS(block_ranks32, uint32_t)

void ana_hist_at_ranks(const struct ana_hist *h, const uint64_t *rank, uint32_t n, uint64_t lo, uint64_t hi,
		       uint64_t *out)
{
	uint32_t i = 0;
	if (!h->blk && h->nsp == 0) {
		for (; i < n; i++)
			out[i] = 0;
		return;
	}
	uint64_t seen = 0;
	/* buckets in index order: the sorted sparse pairs interleaved with the
	 * dense blocks (a bucket is in one or the other, never both) */
	const uint32_t *pairs = h->sp; /* sorted by bucket */
	uint32_t k = 0;
	for (uint32_t o = 0; o < ANA_HIST_OCTAVES && i < n; o++) {
		const void *b = octave_block(h, o);
		if (b) {
			i = h->blk->wide >> o & 1 ? block_ranks32(b, o, rank, i, n, &seen, lo, hi, out)
						  : block_ranks16(b, o, rank, i, n, &seen, lo, hi, out);
			continue;
		}
		for (; k < h->nsp && PAIR_IDX(pairs[k]) / SUB == o && i < n; k++) {
			seen += PAIR_COUNT(pairs[k]);
			if (seen >= rank[i])
				i = ranks_at(rank, i, n, seen, bucket_value(PAIR_IDX(pairs[k]), lo, hi), out);
		}
	}
	for (; i < n; i++) /* fewer values than the rank */
		out[i] = hi < lo ? lo : hi;
}

uint64_t ana_hist_at_rank(const struct ana_hist *h, uint64_t rank, uint64_t lo, uint64_t hi)
{
	uint64_t v;
	ana_hist_at_ranks(h, &rank, 1, lo, hi, &v);
	return v;
}

void ana_hist_each(const struct ana_hist *h, void (*fn)(void *arg, uint32_t idx, uint32_t count), void *arg)
{
	uint32_t k = 0;
	for (uint32_t o = 0; o < ANA_HIST_OCTAVES; o++) { /* as ana_hist_at_rank() walks them */
		const void *b = octave_block(h, o);
		if (b) {
			const bool wide = h->blk->wide >> o & 1;
			for (uint32_t j = 0; j < SUB; j++) {
				const uint32_t c = wide ? ((const uint32_t *)b)[j] : ((const uint16_t *)b)[j];
				if (c)
					fn(arg, o * SUB + j, c);
			}
			continue;
		}
		for (; k < h->nsp && PAIR_IDX(h->sp[k]) / SUB == o; k++)
			fn(arg, PAIR_IDX(h->sp[k]), PAIR_COUNT(h->sp[k]));
	}
}

const char *ana_u128_str(ana_u128 v, char buf[40])
{
	char *p = buf + 39;
	*p = 0;
	do {
		*--p = (char)('0' + (unsigned)(v % 10));
		v /= 10;
	} while (v);
	return p;
}

int ana_u128_parse(const char *s, ana_u128 *out)
{
	ana_u128 v = 0;
	if (!s || !*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (~(ana_u128)0 - (ana_u128)(*s - '0')) / 10)
			return -1; /* not a decimal, or beyond 2^128 - 1 */
		v = v * 10 + (ana_u128)(*s - '0');
	}
	*out = v;
	return 0;
}

void ana_hist_free(struct ana_hist *h)
{
	free(h->sp);
	for (uint32_t r = 0; r < h->nblk; r++)
		free(h->blk->b[r]);
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

static int res_push(struct ana_reservoir *r, uint64_t v)
{
	if (r->n == r->cap) {
		uint32_t nc = r->cap ? r->cap * 2 : 8;
		if (nc > ANA_RESERVOIR_CAP)
			nc = ANA_RESERVOIR_CAP;
		uint64_t *p = realloc(r->v, nc * sizeof(*p));
		if (!p) {
			ana_nomem_note();
			return -1;
		}
		r->v = p;
		r->cap = nc;
	}
	r->v[r->n++] = v;
	return 0;
}

/* Keeps one value of each group of 2^@k consecutive ones (uniformly: the
 * groups hold blocks of equal size, the last one possibly short), in place. */
static void res_thin(struct ana_reservoir *r, uint32_t k, uint64_t *rng)
{
	if (!k)
		return;
	const uint32_t g = 1u << k;
	uint32_t m = 0;
	for (uint32_t i = 0; i < r->n; i += g) {
		uint32_t w = r->n - i < g ? r->n - i : g;
		r->v[m++] = r->v[i + (uint32_t)(((ana_u128)ana_rnd(rng) * w) >> 64)];
	}
	r->n = m;
	r->shift += k;
}

void ana_reservoir_add_grow(struct ana_reservoir *r, uint64_t v, uint64_t *rng)
{
	if (r->n == ANA_RESERVOIR_CAP) /* full: blocks pair up, the new value starts a doubled block */
		res_thin(r, 1, rng);
	res_push(r, v); /* the value is left out if the array cannot grow */
}

void ana_reservoir_merge(struct ana_reservoir *dst, const struct ana_reservoir *src, uint64_t *rng)
{
	if (src->seen == 0)
		return;
	/* src's blocks as dst's: the larger size for both */
	struct ana_reservoir s = { .v = malloc((src->n ? src->n : 1) * sizeof(uint64_t)), .n = src->n,
				   .cap = src->n, .shift = src->shift, .seen = src->seen };
	if (!s.v) {
		ana_nomem_note();
		return;
	}
	memcpy(s.v, src->v, src->n * sizeof(uint64_t));
	if (dst->shift < s.shift)
		res_thin(dst, s.shift - dst->shift, rng);
	else
		res_thin(&s, dst->shift - s.shift, rng);
	while (dst->n + s.n > ANA_RESERVOIR_CAP) {
		res_thin(dst, 1, rng);
		res_thin(&s, 1, rng);
	}
	for (uint32_t i = 0; i < s.n; i++)
		res_push(dst, s.v[i]);
	free(s.v);
	dst->seen += src->seen;
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

bool ana_agg_saturated(const struct ana_agg *a)
{
	bool s = a->total_ns == UINT64_MAX || a->self_ns == UINT64_MAX;
	for (int k = 0; k < ANA_NMETRIC; k++)
		s |= a->metric_self[k] == UINT64_MAX || a->metric_incl[k] == UINT64_MAX;
	for (int k = 0; a->xfer && k < ANA_DIRS; k++)
		s |= a->xfer->self[k] == UINT64_MAX || a->xfer->incl[k] == UINT64_MAX || a->xfer->count[k] == UINT64_MAX;
	return s;
}

struct ana_xfer *ana_agg_xfer(struct ana_agg *a)
{
	if (!a->xfer && !(a->xfer = calloc(1, sizeof(*a->xfer))))
		ana_nomem_note();
	return a->xfer;
}

void ana_agg_merge(struct ana_agg *d, const struct ana_agg *s, uint64_t *rng)
{
	if (s->count == 0)
		return;
	dur_range_add(&d->min_ns, &d->max_ns, d->count, s->min_ns, s->max_ns);
	for (int k = 0; s->metric_occ && k < ANA_NMETRIC; k++)
		dur_range_add(&d->metric_min[k], &d->metric_max[k], d->metric_occ, s->metric_min[k], s->metric_max[k]);
	ANA_SAT_ADD(d->metric_occ, s->metric_occ);
	if (d->count == 0 || s->first_start_ns < d->first_start_ns) {
		d->first_start_ns = s->first_start_ns;
		d->first_ns = s->first_ns;
	}
	d->count += s->count;
	ANA_SAT_ADD(d->total_ns, s->total_ns);
	ANA_SAT_ADD(d->self_ns, s->self_ns);
	ana_moments_merge(&d->all, &s->all);
	ana_hist_merge(&d->hist, &s->hist);
	ana_reservoir_merge(&d->res, &s->res, rng);
	for (int k = 0; k < ANA_NMETRIC; k++) {
		ANA_SAT_ADD(d->metric_self[k], s->metric_self[k]);
		ANA_SAT_ADD(d->metric_incl[k], s->metric_incl[k]);
	}
	struct ana_xfer *dx = s->xfer ? ana_agg_xfer(d) : NULL; /* out of memory: left out, noted */
	for (int k = 0; dx && k < ANA_DIRS; k++) {
		ANA_SAT_ADD(dx->self[k], s->xfer->self[k]);
		ANA_SAT_ADD(dx->incl[k], s->xfer->incl[k]);
		ANA_SAT_ADD(dx->count[k], s->xfer->count[k]);
	}
	d->lossy += s->lossy;
	if (unlikely_(s->gpu != NULL)) {
		if (!d->gpu && !(d->gpu = calloc(1, sizeof(*d->gpu)))) {
			ana_nomem_note();
			return;
		}
		ana_gpu_dist_merge(&d->gpu->self, &s->gpu->self);
		d->gpu->incl_count += s->gpu->incl_count;
		ANA_SAT_ADD(d->gpu->incl_total_ns, s->gpu->incl_total_ns);
		for (int k = 0; k < ANA_NMETRIC; k++)
			ANA_SAT_ADD(d->gpu->work[k], s->gpu->work[k]);
		for (int k = 0; k < ANA_DIRS; k++) {
			ANA_SAT_ADD(d->gpu->copy_dir_ns[k], s->gpu->copy_dir_ns[k]);
			ANA_SAT_ADD(d->gpu->copy_dir_bytes[k], s->gpu->copy_dir_bytes[k]);
		}
		ANA_SAT_ADD(d->gpu->copy_ns, s->gpu->copy_ns);
		ANA_SAT_ADD(d->gpu->launch_ns, s->gpu->launch_ns);
	}
	if (unlikely_(s->mem != NULL)) /* memory per section (ana_mem.c) */
		ana_mem_merge(d, s);
	if (unlikely_(s->est != NULL)) { /* sampled requests: distinct units, so every sum adds */
		if (!d->est && !(d->est = calloc(1, sizeof(*d->est)))) {
			ana_nomem_note();
			return;
		}
		struct ana_est *e = d->est;
		const struct ana_est *x = s->est;
		e->p_min = !e->units || x->p_min < e->p_min ? x->p_min : e->p_min;
		e->p_max = x->p_max > e->p_max ? x->p_max : e->p_max;
		e->units += x->units;
		ANA_SAT_ADD(e->rec_count, x->rec_count);
		ANA_SAT_ADD(e->rec_total_ns, x->rec_total_ns);
		ANA_SAT_ADD(e->rec_self_ns, x->rec_self_ns);
		e->n_hat += x->n_hat;
		e->t_hat += x->t_hat;
		e->s_hat += x->s_hat;
		e->v_n += x->v_n;
		e->v_t += x->v_t;
		e->v_s += x->v_s;
		e->nested |= x->nested;
	}
}

void ana_est_fold(struct ana_est *e)
{
	const double p = e->cur_p;
	if (!(p > 0.0))
		return;
	const double w = 1.0 / p, f = (1.0 - p) * w * w;
	e->p_min = !e->units || p < e->p_min ? p : e->p_min;
	e->p_max = p > e->p_max ? p : e->p_max;
	e->units++;
	e->n_hat += w * e->cur_n;
	e->t_hat += w * e->cur_t;
	e->s_hat += w * e->cur_s;
	e->v_n += f * e->cur_n * e->cur_n;
	e->v_t += f * e->cur_t * e->cur_t;
	e->v_s += f * e->cur_s * e->cur_s;
	e->cur_p = e->cur_n = e->cur_t = e->cur_s = 0.0;
}

/* z of a two-sided 95 % normal interval */
#define ANA_EST_Z 1.959963984540054

void ana_est_figures(const struct ana_agg *a, struct ana_est_fig *o)
{
	const struct ana_est *e = a->est;
	const double exact_n = (double)(a->count - e->rec_count), exact_t = (double)(a->total_ns - e->rec_total_ns);
	const double hn = ANA_EST_Z * sqrt(e->v_n), ht = ANA_EST_Z * sqrt(e->v_t);
	o->count = exact_n + e->n_hat;
	o->total_ns = exact_t + e->t_hat;
	o->self_ns = (double)(a->self_ns - e->rec_self_ns) + e->s_hat;
	o->interval = !e->nested;
	/* the recorded occurrences are real: the truth is at least them */
	o->count_lo = fmax(o->count - hn, (double)a->count);
	o->count_hi = o->count + hn;
	o->total_lo_ns = fmax(o->total_ns - ht, (double)a->total_ns);
	o->total_hi_ns = o->total_ns + ht;
	if (!o->interval)
		o->count_lo = o->count_hi = o->total_lo_ns = o->total_hi_ns = NAN;
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
	free(a->xfer);
	a->xfer = NULL;
	free(a->mem);
	a->mem = NULL;
	a->mem_pn = 0;
	free(a->est);
	a->est = NULL;
}

void ana_gpu_dist_add(struct ana_gpu_dist *d, uint64_t dur_ns, int64_t lat_ns)
{
	dur_range_add(&d->min_ns, &d->max_ns, d->count, dur_ns, dur_ns);
	if (d->count == 0 || lat_ns < d->lat_min_ns)
		d->lat_min_ns = lat_ns;
	if (d->count == 0 || lat_ns > d->lat_max_ns)
		d->lat_max_ns = lat_ns;
	d->count++;
	ANA_SAT_ADD(d->total_ns, dur_ns);
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
	ANA_SAT_ADD(d->total_ns, s->total_ns);
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

static __thread bool nomem_noted;

void ana_nomem_note(void) { nomem_noted = true; }
bool ana_nomem_seen(void) { return nomem_noted; }

bool ana_nomem_take(void)
{
	const bool was = nomem_noted;
	nomem_noted = false;
	return was;
}
