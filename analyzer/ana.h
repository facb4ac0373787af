/*
 * analyzer/ana.h - libptanalyze: rebuild nested sections from a .ptz trace
 * and compute per call path / per name statistics (internal library; the
 * definitions of every number are in doc/analyzer-output.md).
 *
 * One streaming pass: each thread has its own stack and call-path tree, so
 * memory is bounded by distinct paths x threads, never by record count.
 * The merged (all threads) tree is built afterwards by merging the
 * per-thread trees. GPU ranges, async ranges and instants (format 1.1) are
 * paired and counted by ana_gpu.c; a trace without them carries none of
 * their state (NULL pointers, zero counts) and prints none of their output.
 */
#ifndef PTZ_ANA_H
#define PTZ_ANA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "ptz/format.h"
#include "replay/replay.h" /* what a section is: the nesting rules every reader shares */
#include "replay/pair.h"   /* rule 9: how halves pair (GPU launch and range, async begin and end) */

/* ---- statistics building blocks (ana_stats.c) ---- */

/*
 * Log-linear histogram of durations in ns: values < 2^ANA_SUB_BITS are
 * exact; above, each power of two is split into 2^ANA_SUB_BITS equal
 * buckets, so a bucket's width is at most 2^-ANA_SUB_BITS of its lower
 * bound. Reporting a bucket's midpoint bounds the relative error of a
 * percentile by 2^-(ANA_SUB_BITS+1) = 0.39% (HdrHistogram's scheme).
 * Storage is lazy and hybrid, per power of two: buckets of an octave that
 * holds fewer than ANA_HIST_HOT values are 4-byte pairs (16-bit bucket
 * index, 16-bit count) in one sorted list of at most ANA_HIST_SPARSE pairs
 * (a path seen a few times, and the sparse tails of every distribution);
 * an octave gets a dense block of 2^ANA_SUB_BITS counters (O(1) adds, for
 * the body of the distribution) once it would hold ANA_HIST_HOT values, or
 * when the list is full (the octave with the most pairs). A block's
 * counters are 16 bits (256 bytes) until one of them would pass 65,535;
 * then that block is widened to 32 bits (512 bytes). The table of block
 * pointers spans only the octaves from
 * the lowest to the highest dense one, and the list gives back its slack
 * when an octave's pairs move to a block. So an outlier costs 4 bytes, and
 * memory per path grows with the distinct values in its tails only,
 * bounded by ANA_HIST_OCTAVES blocks plus the list. Counts are exact in
 * every form (a 32-bit counter wraps past 2^32 - 1 values in one bucket,
 * as it always did). The buckets, hence every rank, do not depend on the
 * form.
 */
#define ANA_SUB_BITS 7
#define ANA_HIST_REL_ERROR (1.0 / (1u << (ANA_SUB_BITS + 1)))
#define ANA_HIST_SPARSE 512 /* pairs in the list at most (2 KiB) */
/* Values that make an octave dense however few buckets they fill: the
 * block's 256 bytes then cost at most 16 bytes per value it holds (a path's
 * blocks stay capped at one per octave), and the octave's adds skip the
 * list. Measured on the bench's 10 M-record trace (bench-analyze;
 * callgrind, --report), whose sections fill fewer than 32 buckets an
 * octave. Counting one bucket's values: 2,572.6 M instructions at 256,
 * 2,428.9 M at 32, 2,405.8 M at 16, 2,389.9 M at 8. Counting the octave's
 * (since 2026-11): 2,365.8 M -> 2,341.6 M at 16, the sparse adds 274,463 ->
 * 91,550, peak RSS 13.1 -> 13.6 MB. The same report byte for byte (the form
 * never changes a count). */
#define ANA_HIST_HOT 16
#define ANA_HIST_OCTAVES (64 - ANA_SUB_BITS + 1) /* exact block + one per power of two */
struct ana_hist_blk; /* block table: a bitmap of wide blocks and the block pointers (ana_stats.c) */
struct ana_hist {
	uint32_t *sp;          /* nsp pairs bucket index << 16 | count, sorted: buckets of octaves without a block */
	uint16_t nsp, csp;     /* pairs held, pairs allocated */
	uint8_t olo, nblk;     /* blk has a slot for each octave of [olo, olo + nblk) */
	struct ana_hist_blk *blk; /* NULL (nblk = 0), or the blocks of those octaves */
};
void ana_hist_add(struct ana_hist *h, uint64_t v, uint32_t count);
void ana_hist_merge(struct ana_hist *dst, const struct ana_hist *src);
/* q in [0,1]; nearest-rank percentile's bucket midpoint, clamped to [lo, hi] */
uint64_t ana_hist_quantile(const struct ana_hist *h, double q, uint64_t total, uint64_t lo, uint64_t hi);
void ana_hist_free(struct ana_hist *h);
/* Bucket index of @v (< ANA_HIST_OCTAVES * 2^ANA_SUB_BITS = 7,424: fits 16 bits). */
static inline uint32_t ana_hist_index(uint64_t v)
{
	/* Branch-free (durations straddle 2^ANA_SUB_BITS ns often enough to
	 * mispredict): s = max(octave, ANA_SUB_BITS) - ANA_SUB_BITS, and
	 * v >> s lies in [2^ANA_SUB_BITS, 2^(ANA_SUB_BITS+1)) for v above the
	 * exact block, so (s << ANA_SUB_BITS) + (v >> s) is the block's base
	 * plus the bucket; below it, s = 0 and the index is v itself. */
	unsigned s = (63u - ANA_SUB_BITS) - (unsigned)__builtin_clzll(v | (1u << ANA_SUB_BITS));
	return (s << ANA_SUB_BITS) + (uint32_t)(v >> s);
}
/* Adds one value to each of the @n buckets @idx (bucket indexes, as
 * ana_hist_index() gives): the histogram's blocks are loaded once for the
 * batch instead of once per value. */
void ana_hist_add_idx(struct ana_hist *h, const uint16_t *idx, uint32_t n);
/*
 * Histogram adds waiting for their path, one cache line per path (the
 * analyzer's --report pass): 31 bucket indexes, flushed together with
 * ana_hist_add_idx(). A path's histogram is scattered over a few blocks;
 * touching them once per 31 values instead of once per value is most of
 * the speed of a pass over many paths.
 */
#define ANA_HPEND 31
struct ana_hpend {
	uint16_t idx[ANA_HPEND];
	uint16_t n;
};
uint64_t ana_hist_lower(uint32_t idx);
uint64_t ana_hist_upper(uint32_t idx); /* exclusive */
/* The @rank-th smallest value (1 <= @rank <= values held) as its bucket's
 * midpoint clamped to [lo, hi]; 0 if the histogram is empty, @hi if it holds
 * fewer than @rank values. ana_hist_quantile() is this at rank ceil(q * total). */
uint64_t ana_hist_at_rank(const struct ana_hist *h, uint64_t rank, uint64_t lo, uint64_t hi);
/* ana_hist_at_rank() at each of the @n ranks @rank[] (ascending), into
 * @out[]: one walk of the buckets for all of them. */
void ana_hist_at_ranks(const struct ana_hist *h, const uint64_t *rank, uint32_t n, uint64_t lo, uint64_t hi,
		       uint64_t *out);
/* ana_hist_quantile() at each of the @n quantiles @q[] (ascending, in
 * [0,1]), into @out[]: one walk for up to ANA_HIST_MAX_RANKS of them. */
#define ANA_HIST_MAX_RANKS 8
void ana_hist_quantiles(const struct ana_hist *h, const double *q, uint32_t n, uint64_t total, uint64_t lo,
			uint64_t hi, uint64_t *out);
/* ana_hist_each() - Calls @fn(@arg, bucket index, count) for every
 * non-empty bucket of @h in index order (the buckets a JSON report's
 * sketch carries: ana_hist_add(ana_hist_lower(idx), count) rebuilds them). */
void ana_hist_each(const struct ana_hist *h, void (*fn)(void *arg, uint32_t idx, uint32_t count), void *arg);
/* Welford running mean and M2 (sum of squared deviations), in double. */
struct ana_welford {
	uint64_t n;
	double mean, m2;
};
void ana_welford_add(struct ana_welford *w, double x);
void ana_welford_merge(struct ana_welford *a, const struct ana_welford *b); /* Chan et al. 1979 */
double ana_welford_std(const struct ana_welford *w);                       /* sample std (n-1) */
/* Statistics of all values but @x (which must be one of them): reverse Welford. */
struct ana_welford ana_welford_without(const struct ana_welford *w, double x);

/*
 * Exact power sums of integer durations in ns, for the mean and the sample
 * standard deviation of an aggregate (whose count is n). Sums of integers
 * are exact and associative, so the figures are rounded once, at the end,
 * and do not depend on the order of merging (threads, file order); an add
 * is a multiply and two 128-bit additions, with no division (Welford's
 * update divides on every value and rounds on every step). s2 saturates at
 * 2^128 - 1 (sum of squares beyond 3.4e38 ns^2, e.g. one section longer
 * than 584 years): the std is then NaN ("not available").
 */
__extension__ typedef unsigned __int128 ana_u128;
struct ana_moments {
	ana_u128 s1, s2; /* sum of x, sum of x^2 */
};
/* ana_moments_add() without s1, for sums kept elsewhere (a thread's node:
 * its total_ns, copied in when the thread is finished). */
static inline void ana_moments_add_sq(struct ana_moments *m, uint64_t x)
{
	if (__builtin_expect(__builtin_add_overflow(m->s2, (ana_u128)x * x, &m->s2), 0))
		m->s2 = ~(ana_u128)0;
}
static inline void ana_moments_add(struct ana_moments *m, uint64_t x)
{
	m->s1 += x;
	ana_moments_add_sq(m, x);
}
void ana_moments_merge(struct ana_moments *a, const struct ana_moments *b);
/* A 128-bit sum in decimal (a JSON report's sketch: JSON numbers are
 * doubles), in @buf; returns where it starts in @buf. ana_u128_parse():
 * the inverse; 0, or -1 for anything but 1 to 39 digits below 2^128. */
const char *ana_u128_str(ana_u128 v, char buf[40]);
int ana_u128_parse(const char *s, ana_u128 *out);
/* Mean of the @n values (0 if none). */
double ana_moments_mean(const struct ana_moments *m, uint64_t n);
/* Sample std (n - 1) of the @n values: sqrt((sum (x - mean)^2) / (n - 1)),
 * the numerator computed exactly in integers as D - r^2/n with
 * q = floor(s1 / n), r = s1 mod n, D = s2 - q s1 - q r = sum (x - q)^2;
 * 0 for n < 2, NaN if s2 saturated. */
double ana_moments_std(const struct ana_moments *m, uint64_t n);
/* The sums of the same values without @x (one of them): exact, unless s2
 * had saturated: then it stays saturated (std NaN) even where the rest
 * alone would fit. */
struct ana_moments ana_moments_without(const struct ana_moments *m, uint64_t x);

/* Bounded, time-ordered sample of per-occurrence durations, one per call
 * path over the whole process: kept in the merged tree's nodes only
 * (per-thread and flat aggregates leave it empty). Stratified: the
 * occurrences are cut into consecutive blocks of 2^shift (1 while they fit
 * in ANA_RESERVOIR_CAP), and each block keeps one of its occurrences drawn
 * uniformly (the j-th of a block replaces the block's value with
 * probability 1/j: Vitter's algorithm R with a sample of 1, the draw by
 * Lemire's multiply-shift); when the array is full, adjacent blocks pair up
 * and keep one of their two values at random, and the blocks double. So the
 * sample is uniform over the occurrences (each has probability 1 / 2^shift,
 * but for the last block, not yet full), v[i] comes from block i (time order
 * is kept, which compare's block bootstrap needs), and a period in the
 * durations (every other call slow) cannot alias into it as it would into
 * every k-th value. The first ANA_RESERVOIR_CAP occurrences are all kept,
 * in order. */
#define ANA_RESERVOIR_CAP 512
struct ana_reservoir {
	uint64_t seen;
	uint32_t n, cap;
	uint64_t *v;
	uint32_t shift; /* blocks of 2^shift occurrences */
};
/* splitmix64 (Steele, Lea and Flood 2014) on state *@s: seeded, so reports
 * are reproducible. */
static inline uint64_t ana_rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}
/* ana_reservoir_add() starting a block when the array is full: grows it
 * below ANA_RESERVOIR_CAP, else pairs the blocks up; then appends (out of
 * line). */
void ana_reservoir_add_grow(struct ana_reservoir *r, uint64_t v, uint64_t *rng);
/* Offers duration @v (ns) to @r; @rng is the pass's splitmix64 state. Inline:
 * an append at a block's start, else one draw. */
static inline void ana_reservoir_add(struct ana_reservoir *r, uint64_t v, uint64_t *rng)
{
	const uint64_t j = r->seen++ & (((uint64_t)1 << r->shift) - 1); /* position in its block */
	if (j == 0) {
		if (r->n < r->cap)
			r->v[r->n++] = v;
		else
			ana_reservoir_add_grow(r, v, rng);
	} else if ((uint64_t)(((ana_u128)ana_rnd(rng) * (j + 1)) >> 64) == 0 && r->n) { /* n: unless ENOMEM */
		r->v[r->n - 1] = v; /* the (j+1)-th of the block, with probability 1 / (j + 1) */
	}
}
/* Appends @src's occurrences after @dst's: both brought to blocks of the
 * larger size (groups of blocks keep one value at random), then doubled
 * until they fit; a merged sample is stratified by position within each
 * part, which is what a merge of threads' or runs' samples needs. */
void ana_reservoir_merge(struct ana_reservoir *dst, const struct ana_reservoir *src, uint64_t *rng);
void ana_reservoir_free(struct ana_reservoir *r);

/* Arrays indexed by name id (flat rows, recursion tracking, GPU, async and
 * instant tables) cover ids below ana_result.name_id_limit: the trace's
 * largest string id + 1, at least ANA_MIN_NAME_IDS (so a trace whose string
 * table was lost still gets flat rows). Sections with a larger id (a
 * damaged or crafted trace) keep their call-path rows, shown as
 * "(unknown id N)", but get no flat row: memory stays bounded by the
 * trace's names, not by the values of its ids. */
#define ANA_MIN_NAME_IDS 4096u
/* Sections open at once on one thread that are analyzed: replay/replay.h
 * rule 3 (a BEGIN deeper is counted in ana_thread.too_deep, not analyzed;
 * each END while such sections are open closes the innermost of them;
 * those left open count as open at the end). A legitimate recursion this
 * deep is rare; a never-ended section in a loop reaches it (a 10 KB file
 * held 22 million levels: 9 GB before this limit). About 250 MB at the
 * limit. */
#define ANA_MAX_DEPTH RP_MAX_DEPTH
/* Ids are used as they are while the largest is below twice the names
 * defined plus ANA_MIN_NAME_IDS; above that (a sparse or crafted id space)
 * the pass maps every id it meets to a dense slot, in id order for the
 * defined names (ana_result.slot_id maps back), so the tables stay sized by
 * the names in use whatever their ids (issue 17: one name with id 2^24 - 1
 * cost 1.3 GB and 14 s). */

/* ---- aggregates ---- */
struct ana_agg;
/* ana_agg_saturated() - Whether a sum of @a (times, metrics, transfers) is at UINT64_MAX. */
bool ana_agg_saturated(const struct ana_agg *a);

/* Sums of u64 figures saturate at UINT64_MAX instead of wrapping (two LOSS
 * records of 2^64 - 1 made "lost 18446744073709551614"); the outputs flag a
 * figure at UINT64_MAX as saturated (doc/analyzer-output.md §1). An add and
 * a conditional move. */
#define ana_sat_add rp_sat_add /* replay/replay.h rule 6 */
#define ANA_SAT_ADD(x, v) ((x) = ana_sat_add((x), (v)))

enum { ANA_READ, ANA_WRITTEN, ANA_FLOPS, ANA_NMETRIC };
enum { ANA_DIRS = 4 }; /* PT_H2D..PT_P2P, index dir-1 */

/*
 * GPU ranges attributed to a row (doc/analyzer-output.md §3.1). @self is
 * the distribution of the ranges launched by the row's own sections (their
 * GPU halves); @incl_* add the ranges launched by its descendants, except
 * those already inside an enclosing GPU range of the same device and
 * stream (counted once, in the enclosing one). Allocated on the first
 * range, so a trace without GPU records pays one NULL pointer per row.
 */
struct ana_gpu_dist {
	uint64_t count, total_ns, min_ns, max_ns; /* GPU end - GPU start */
	struct ana_hist hist;                     /* durations, ns */
	struct ana_welford lat;                   /* GPU start - launch tick, signed ns */
	int64_t lat_min_ns, lat_max_ns;
	uint64_t early;                           /* ranges with lat < 0 (early starts) */
};
/* Adds one range: duration @dur_ns, launch-to-start latency @lat_ns (may be
 * negative). A histogram bucket that cannot be allocated is left out. */
void ana_gpu_dist_add(struct ana_gpu_dist *d, uint64_t dur_ns, int64_t lat_ns);
/* Adds @src's ranges into @dst (counts, sums, extremes, histogram, moments). */
void ana_gpu_dist_merge(struct ana_gpu_dist *dst, const struct ana_gpu_dist *src);
struct ana_gpu {
	struct ana_gpu_dist self;
	uint64_t incl_count, incl_total_ns;
	/*
	 * Inclusive over the row's subtree, summed after the pass by
	 * ana_gpu_breakdown_tree()/_flat() (doc/analyzer-output.md §3.1): a
	 * "GPU section" is a row with ranges of its own (self.count > 0), a
	 * "copy section" one of those that declared transfer bytes itself.
	 * @work: metrics declared by the GPU sections themselves (their
	 * metric_self), the numerator of the inclusive GPU rates, so that
	 * bytes a CPU section declares are never divided by GPU time;
	 * @copy_ns: GPU time of the copy sections (the breakdown's transfer
	 * time), by direction in @copy_dir_ns (a section that declared two
	 * directions counts in both) with their bytes in @copy_dir_bytes;
	 * @launch_ns: self CPU time of the GPU sections (launch overhead).
	 */
	uint64_t work[ANA_NMETRIC];
	uint64_t copy_ns, copy_dir_ns[ANA_DIRS], copy_dir_bytes[ANA_DIRS];
	uint64_t launch_ns;
};
struct ana_tree;
struct ana_agg;
/* ana_gpu_breakdown_tree() - Fills the inclusive breakdown sums of struct
 * ana_gpu for every row of @t (children are numbered after their parent:
 * one reverse sweep). ana_gpu_breakdown_flat() - the same for the flat
 * rows @flat[0..@nflat) of tree @t's thread: a name adds the inclusive
 * sums of its outermost paths only (recursion-safe, §2). Allocation
 * failures are noted (ana_nomem_note()). */
void ana_gpu_breakdown_tree(struct ana_tree *t);
/* ana_gpu_timed_part() - The part of @v (work a row's own occurrences
 * declared: FLOPs, bytes, transfer bytes) that belongs to its occurrences
 * with a GPU range: @v x ranges / occurrences, assuming each occurrence
 * declares the same (exact when all are timed, the usual case). GPU rates
 * divide this by the ranges' time, so an occurrence whose GPU half was
 * dropped (pool empty, capture, error: counted) does not inflate them
 * (doc/analyzer-output.md §3.1). */
uint64_t ana_gpu_timed_part(const struct ana_agg *a, uint64_t v);
void ana_gpu_breakdown_flat(const struct ana_tree *t, struct ana_agg *flat, uint32_t nflat);

/*
 * Sampled requests (pt_begin_sampled(), doc/analyzer-output.md §13): a
 * call path's occurrences inside them, and the Horvitz-Thompson estimates
 * over the whole population of requests. The sampling unit is the
 * request: a path's count n_i, inclusive total t_i and self time s_i are
 * summed within request i first (cur_*), then folded with its
 * probability p_i: N = sum n_i / p_i, V(N) = sum (1 - p_i) / p_i^2 n_i^2,
 * and the same for t and s (Horvitz and Thompson 1952; Sarndal, Swensson
 * and Wretman 1992, Poisson sampling). Allocated on the first occurrence
 * inside a sampled request: other rows pay one NULL pointer.
 */
struct ana_est {
	uint64_t units;                          /* sampled requests that hold the path */
	uint64_t rec_count, rec_total_ns, rec_self_ns; /* the recorded occurrences inside them */
	double n_hat, t_hat, s_hat;              /* their estimates: count, total, self (ns) */
	double v_n, v_t, v_s;                    /* variance estimates of those */
	double p_min, p_max;                     /* over the units */
	bool nested;                             /* inside a sampled request nested in another: no interval */
	bool by_name;                            /* a flat row of a filtered pass: recorded sums only (§13) */
	/* the pass (one thread): the current request's sums, folded when
	 * another request reaches the path, and at the end of the pass */
	uint64_t cur_req;
	double cur_p, cur_n, cur_t, cur_s;
};
/* Folds @e's current request into its estimates (idempotent). */
void ana_est_fold(struct ana_est *e);
/* The figures a report shows for a row with an estimate: the row's
 * occurrences outside sampled requests exactly, plus the estimates of
 * those inside; a 95 % normal interval, its lower end never below what
 * was recorded; @interval false where none is given (nested sampling). */
struct ana_est_fig {
	double count, count_lo, count_hi;
	double total_ns, total_lo_ns, total_hi_ns;
	double self_ns;
	bool interval;
};
void ana_est_figures(const struct ana_agg *a, struct ana_est_fig *out);

/* Hot fields (touched by every END) first; metric and transfer sums after. */
/* Host/device transfers of a row, by direction (PT_H2D..PT_P2P, index
 * dir - 1): bytes in the row's sections themselves, bytes including their
 * descendants', and TRANSFER records. Allocated at a row's first transfer:
 * rows without any (nearly all) pay a pointer, not 96 bytes a node. */
struct ana_xfer {
	uint64_t self[ANA_DIRS], incl[ANA_DIRS], count[ANA_DIRS];
};
struct ana_agg {
	uint64_t count;
	uint64_t total_ns;   /* inclusive */
	uint64_t self_ns;
	uint64_t min_ns, max_ns;
	uint64_t first_start_ns, first_ns; /* earliest occurrence by start time */
	uint64_t lossy;      /* occurrences open while records were lost */
	struct ana_mem *mem; /* NULL until an occurrence is measured (memory series, ana_mem.c); owned */
	/* and mem_pn more occurrences of series 0 with begin = end = peak = mem_pv, not yet in
	 * mem->row[0] (ana_mem_occ_fast(); here, beside count, so that an END touches no other
	 * line for them); ana_mem_fig() and ana_mem_merge() count them */
	uint64_t mem_pn;
	int64_t mem_pv;
	struct ana_moments all; /* durations, n = count (a thread's node: s1 is total_ns, set when the thread is finished) */
	struct ana_hist hist;
	struct ana_reservoir res;
	uint64_t metric_self[ANA_NMETRIC], metric_incl[ANA_NMETRIC];
	/* the smallest and largest per-occurrence self metric over the metric_occ occurrences that declared
	 * any metric (kept in the pass only for them: the others pay nothing): metric_occ == count and
	 * min == max > 0 say every call declared the same work (suggest's caching) */
	uint64_t metric_min[ANA_NMETRIC], metric_max[ANA_NMETRIC];
	uint64_t metric_occ;
	struct ana_xfer *xfer; /* NULL until a transfer is attributed (ana_agg_xfer()); owned */
	struct ana_gpu *gpu; /* NULL until a GPU range is attributed; owned */
	struct ana_est *est; /* NULL unless occurrences lie inside sampled requests; owned */
};
/* Adds @s into @d. A GPU part that cannot be allocated is left out. */
void ana_agg_merge(struct ana_agg *dst, const struct ana_agg *src, uint64_t *rng);
/* @a's transfer sums, allocated (zero) at the first call; NULL out of memory (noted). */
struct ana_xfer *ana_agg_xfer(struct ana_agg *a);
/* @a's transfer figures in direction index @d (0 when it has none). */
static inline uint64_t ana_xfer_incl(const struct ana_agg *a, int d)
{
	return a->xfer ? a->xfer->incl[d] : 0;
}
static inline uint64_t ana_xfer_self(const struct ana_agg *a, int d)
{
	return a->xfer ? a->xfer->self[d] : 0;
}
static inline uint64_t ana_xfer_count(const struct ana_agg *a, int d)
{
	return a->xfer ? a->xfer->count[d] : 0;
}
void ana_agg_free(struct ana_agg *a);

struct ana_node {
	uint32_t id;       /* section name id (0 = root) */
	uint32_t parent;   /* node index; root's parent is itself */
	uint32_t depth;    /* root = 0 */
	uint32_t nchild, cchild;
	uint32_t *child;   /* node indexes, sorted by name id */
	uint32_t *child_id; /* their name ids, same order: searched without touching the children */
	struct ana_agg agg;
};

struct ana_tree {
	struct ana_node *n;
	uint32_t count, cap;
};
uint32_t ana_tree_child(struct ana_tree *t, uint32_t parent, uint32_t id); /* finds or adds; UINT32_MAX on ENOMEM */
/* The child of @parent named @id, or UINT32_MAX if it has none (never adds). */
uint32_t ana_tree_find(const struct ana_tree *t, uint32_t parent, uint32_t id);
void ana_tree_free(struct ana_tree *t);
/* ana_tree_walk_outermost() - Calls @visit(@arg, node), depth first, for
 * every node of @t whose name id is below @id_limit and whose path holds no
 * node of the same name above it: the outermost occurrence of a name on
 * its path, whose inclusive sums make the name's recursion-safe total
 * (doc/analyzer-output.md §2). One walk with a count of each name on the
 * current path. 0, or -ENOMEM (noted, nothing visited). */
int ana_tree_walk_outermost(const struct ana_tree *t, uint32_t id_limit,
			    void (*visit)(void *arg, const struct ana_node *n), void *arg);

struct ana_counter {
	uint32_t id;
	uint64_t samples;
	int64_t first, last, min, max;
	uint64_t first_ns, last_ns; /* CLOCK_MONOTONIC of the first and last samples */
	double sum;                 /* of the samples: their mean (process counters, ana_proc.c) */
};

struct ana_thread {
	uint32_t index, tid;
	char name[32];
	bool gpu_thread;            /* named "ptz-gpu": the recorder's CUDA thread */
	bool flusher_thread;        /* named "ptz-flusher": the recorder's flusher (process RSS samples) */
	struct ana_tree tree;
	uint64_t first_ns, last_ns; /* span of its records */
	uint64_t sections, records;
	uint64_t lost_records, lost_sections;
	uint64_t unmatched_ends, open_at_end, gaps;
	uint64_t before_window;      /* window traces: ENDs of sections begun before the window */
	uint64_t too_deep;           /* sections nested deeper than ANA_MAX_DEPTH: not analyzed */
	uint32_t nflat;              /* entries of ana_result.by_name_thread[this thread]: its names */
	uint64_t misuse_errors;     /* ERROR records written by the recorder */
	uint64_t unattributed[ANA_NMETRIC];
	/* transfers recorded with no section open: bytes and count by direction */
	uint64_t unattributed_xfer[ANA_DIRS], unattributed_xfer_count[ANA_DIRS];
	struct ana_counter *counters;
	size_t ncounters;
	uint64_t *instants;         /* INSTANT records by name id (NULL if none) */
	uint32_t ninstants;         /* entries in @instants */
};

/* ---- memory per section (ana_mem.c; doc/analyzer-output.md §3.5) ----
 *
 * A memory series is a counter in bytes (ana_counter_is_bytes()): the
 * recorder's "process RSS" (flusher, or the CUDA thread of older traces),
 * "device memory used ..." (CUDA thread), or a pt_counter() whose name ends
 * in " (bytes)". Its samples, from every thread, are read before the pass
 * (sorted by tick), and every kept occurrence [b, e] of a section gets,
 * per series: begin = the last sample at or before b (the first sample,
 * if none precedes b), end = the last sample at or before e, peak = the
 * largest sample from the begin one to the end one. An occurrence that
 * ends before the first sample is not measured. Sampling error: begin and
 * end may be off by the change over one sampling period, and a peak
 * shorter than the period can be missed.
 */
struct ana_result;
__extension__ typedef __int128 ana_i128;
#define ANA_MEM_MAX_SERIES 16  /* series kept at most (the rest are ignored) */
#define ANA_MEM_BLOCK 64       /* samples per block of the range-maximum table */
struct ana_mem_series {
	uint32_t id, trace_id;  /* the counter's name id (analyzer's, the trace's) */
	bool rss;               /* "process RSS" */
	size_t n;               /* samples */
	uint64_t *t;            /* their ticks, ascending */
	int64_t *v;             /* their values, bytes */
	int64_t *tab;           /* sparse table of block maxima: levels x nb */
	uint32_t nb, levels;
	uint64_t period_ns;     /* median interval between samples: the sampling error's scale */
	int64_t min, max;       /* over the samples */
};
struct ana_mem_row {             /* one series' figures over a row's occurrences */
	uint64_t n;                  /* occurrences measured */
	ana_i128 sum_begin, sum_end; /* exact sums */
	int64_t peak;                /* largest peak of an occurrence */
	int64_t dmin, dmax;          /* smallest and largest end - begin */
	/* and pn more, each with begin = end = peak = pv (the END path's
	 * fast case, ana_mem_occ_fast()), not yet in the figures above:
	 * ana_mem_fig() and ana_mem_merge() add them (ana_mem_fold()); for
	 * series 0 they wait in the row's agg instead (ana_agg.mem_pn) */
	uint64_t pn;
	int64_t pv;
};
struct ana_mem {
	uint32_t n;               /* = ana_result.nmem */
	struct ana_mem_row row[]; /* by series */
};
/* Derived figures of series @s in @a: false when none of its occurrences was measured. */
struct ana_mem_fig {
	uint64_t n;
	double begin, end, delta;  /* means, bytes */
	double delta_total;        /* sum of end - begin over the occurrences */
	int64_t peak, dmin, dmax;
};
bool ana_mem_fig(const struct ana_agg *a, uint32_t s, struct ana_mem_fig *out);
/* Adds @src's memory figures into @dst (ana_agg_merge()). */
void ana_mem_merge(struct ana_agg *dst, const struct ana_agg *src);
/* The series of "process RSS", or UINT32_MAX. */
uint32_t ana_mem_rss(const struct ana_result *res);

/* ---- GPU, async ranges, instants (ana_gpu.c; doc/analyzer-output.md §3.1-3.3) ---- */

/* Latency distribution that may go negative: |v| of negative values and
 * non-negative values in two histograms, p50/p99 by signed rank. */
struct ana_slat {
	uint64_t n, neg;
	int64_t min_ns, max_ns;
	struct ana_welford w;
	struct ana_hist pos, negh;
};
void ana_slat_add(struct ana_slat *s, int64_t v);
/* q in [0,1]: the nearest-rank percentile as a bucket midpoint (negative
 * values by magnitude), clamped to [min, max]; 0 when empty. */
int64_t ana_slat_quantile(const struct ana_slat *s, double q);
void ana_slat_free(struct ana_slat *s); /* frees the histograms */

/* One device (GPU ordinal) as its recorded ranges show it. */
struct ana_gpu_device {
	uint32_t device;
	uint64_t ranges;
	uint64_t sum_ns;       /* sum of range durations (overlaps count twice) */
	uint64_t busy_ns;      /* union of the ranges: "instrumented GPU busy" time */
	uint64_t streams;      /* distinct stream keys */
	struct ana_slat lat;   /* launch to GPU start, signed ns; lat.neg = early starts */
	/* disjoint busy intervals [start, end) in ticks, sorted (16 bytes each,
	 * one per run of overlapping or touching ranges; kept after the pass:
	 * ana_suggest()'s gpu-idle reads the gaps), and the stream set (private) */
	uint64_t *iv;
	size_t niv, civ;
	struct rp_map stream_set;
};

/* GPU error codes 6..12 (PT_ERRC_GPU_POOL_EMPTY..PT_ERRC_GPU_UNFINISHED) */
#define ANA_GPU_ERRC_FIRST PT_ERRC_GPU_POOL_EMPTY
#define ANA_GPU_ERRC_N (PT_ERRC_GPU_UNFINISHED - PT_ERRC_GPU_POOL_EMPTY + 1)
/* Short label of GPU error code @code (6..12), e.g. "pool empty"; NULL otherwise. */
const char *ana_gpu_errc_name(uint32_t code);

struct ana_gpu_summary {
	uint64_t launches, ranges;  /* GPU_LAUNCH and GPU_RANGE records read */
	uint64_t paired;            /* ranges matched with their launch (by seq) */
	uint64_t unmatched_launches, unmatched_ranges; /* left over at the end (and duplicates) */
	uint64_t errors[ANA_GPU_ERRC_N]; /* ERROR record counts by code - ANA_GPU_ERRC_FIRST */
	uint32_t off_reason;        /* name id of the "GPU timing off..." INSTANT, 0 = none */
	size_t pending_peak;        /* most launches and ranges waiting for their other half at once */
	bool file_order;            /* chunks read in file order (a ptz-gpu thread exists) */
	struct ana_gpu_device *dev; /* by device ordinal, ascending */
	size_t ndev;
};

struct ana_async {
	uint64_t count, total_ns, min_ns, max_ns;
	struct ana_hist hist;
};

struct ana_options {
	uint64_t since_ns, until_ns;  /* relative to the trace start; until 0 = no limit */
	int thread;                   /* -1 = all */
	const char *domain;           /* NULL = all */
	/* true: durations go into each call path's merged (all threads)
	 * histogram only, so per-thread rows and per-thread flat rows have no
	 * percentiles (0): what the merged report prints needs no more, and
	 * histograms are most of the analyzer's memory (one per path per
	 * thread otherwise). false (the default): per thread too, as CSV,
	 * JSON and --thread print. Every other figure is the same either way. */
	bool merged_percentiles_only;
	/* With merged_percentiles_only: true leaves the flat (by name) rows
	 * without percentiles (0), as the call-tree report prints none of
	 * them; their histograms (one per name, merged from every path of the
	 * name after the pass) are then never built. */
	bool no_flat_percentiles;
	/* true: do not keep each call path's sample of per-occurrence
	 * durations (ana_agg.res, merged paths), which ana_compare() and
	 * ana_suggest()'s distribution rules read and no report prints: the
	 * report's pass is spared its cost (about 4 instructions an END).
	 * false (the default): kept. ana_result.has_samples says which. */
	bool no_samples;
	void (*progress)(void *ctx, uint64_t done_bytes, uint64_t total_bytes);
	void *progress_ctx;
	/* Threads that read the trace's threads at once (ptanalyze -j): 0 or 1
	 * = one. The result is the same byte for byte whatever the value
	 * (doc/analyzer-output.md §1, "Reading in parallel"); the pass reads
	 * in parallel only a trace of one file read thread by thread, without
	 * sparse ids, sampled requests, a thread filter or reservoirs
	 * (no_samples); the ASYNC, INSTANT and process-wide ERROR records are
	 * replayed in thread order after, and a GPU record or damage sends
	 * the pass back to one reader. progress is then called from one of
	 * those threads. */
	unsigned jobs;
};

/* Sampled requests of the trace (doc/analyzer-output.md §13). */
struct ana_sampling {
	uint64_t requests;           /* sampled roots recorded (BEGINs with their counter) */
	double est_requests;         /* sum of 1 / p over them: the requests they stand for */
	double p_min, p_max;
	uint64_t nested;             /* sampled roots inside another sampled request */
	uint64_t invalid;            /* sampling counters with a value outside [1, 1e9]: ignored */
	uint64_t orphan;             /* sampling counters not followed by a BEGIN: ignored */
};

struct ana_result {
	struct pt_reader *rd;        /* owned */
	struct ana_thread *threads;
	size_t nthreads;
	struct ana_tree merged;      /* all threads */
	struct ana_agg *by_name;     /* flat, all threads, recursion-safe; indexed by name id */
	uint32_t nnames;
	struct ana_agg **by_name_thread; /* per thread flat; [thread][id] */
	uint64_t start_ns, end_ns;   /* wall span of the records */
	uint64_t thread_span_sum_ns; /* sum of thread spans: the share denominator */
	uint64_t records, sections;
	uint64_t lost_records, lost_sections, process_lost_records;
	uint64_t unmatched_ends, open_at_end, misuse_errors;
	/* a window of a longer run (flight file or snapshot, pt_trace_info.window):
	 * @before_window sections ended in it that began before it (their time
	 * before the window is not known: counted, not analyzed); @open_at_end
	 * then counts the sections open at the cut */
	bool window, flight;
	uint64_t before_window;
	/* snapshots that failed (the last one's errno) and pt_trigger() calls
	 * rate-limited, as the recorder's ERROR records say */
	uint64_t snapshot_failures, triggers_limited;
	int snapshot_errno;
	/* parts of a rotated trace that could not be created (PT_ERRC_ROTATE;
	 * the last one's errno): recording went on in the part before */
	uint64_t rotate_failures;
	int rotate_errno;
	uint64_t too_deep;           /* sum of the threads' (ANA_MAX_DEPTH) */
	unsigned readers;            /* threads that read the trace's threads (ana_options.jobs; 1 = serial) */
	bool saturated;              /* a sum reached UINT64_MAX (ana_sat_add()): the outputs flag it */
	bool has_samples;            /* !ana_options.no_samples: the merged paths' reservoirs are filled */
	uint32_t domain_filter;      /* UINT32_MAX = none */
	uint32_t name_id_limit;      /* name-id-indexed arrays stop here (see ANA_MIN_NAME_IDS) */
	uint32_t *slot_id;           /* NULL: name ids are the trace's; else slot -> the trace's id */
	uint32_t nslots;
	uint64_t total_records_hint; /* event records announced by chunk headers (progress) */
	int corrupt;                 /* damaged regions inside the file */
	int torn_tail;
	/* GPU, async ranges and instants: all zero / NULL in a trace without them */
	bool has_gpu, has_async, has_instants;
	struct ana_gpu_summary gpu;
	struct ana_async *async_by_name; /* indexed by name id, nasync entries */
	uint32_t nasync;
	uint64_t async_unmatched_begins, async_unmatched_ends;
	size_t async_pending_peak;
	uint64_t *instants_by_name;  /* all threads, indexed by name id, ninstants entries */
	uint32_t ninstants;
	struct ana_mem_series *mem;  /* memory series (ana_mem.c), nmem of them; NULL if none */
	uint32_t nmem;
	struct ana_sampling sampling; /* all zero in a trace without sampled requests */
};

/* @x as uint64_t, saturated: UINT64_MAX from 2^64 up and for NaN, 0 for
 * x <= 0, where the conversion itself would be undefined. Any tick or ns
 * value derived from a (possibly crafted) clock slope goes through it. */
static inline uint64_t ana_sat_u64(double x)
{
	if (!(x < 18446744073709549568.0)) /* 2^64 - 2^11, the last double below 2^64; also NaN */
		return UINT64_MAX;
	return x > 0.0 ? (uint64_t)x : 0;
}

/*
 * ana_window_ticks() - A window bound: @ns after the trace start as a tick
 * value, t0 + @ns / @ns_per_tick (the trace slope, doc/analyzer-output.md
 * §4), rounded up if @up (a section starting before --since is outside),
 * else down. A crafted clock table can give a slope of 0, or one so small
 * that the quotient passes 2^64 ticks: the bound then saturates at
 * UINT64_MAX instead of an undefined conversion (or a wrapped sum).
 * Shared with the exports (viewer-export/pfx_ranges.c), which must cut the
 * same window.
 */
static inline uint64_t ana_window_ticks(uint64_t t0, uint64_t ns, double ns_per_tick, bool up)
{
	const double t = (double)ns / ns_per_tick;
	uint64_t k = ana_sat_u64(t);
	if (k == UINT64_MAX) /* t >= 2^64 or NaN: a converted t < 2^64 is at most 2^64 - 2^11 */
		return UINT64_MAX;
	k += up && (double)k < t;
	return k > UINT64_MAX - t0 ? UINT64_MAX : t0 + k;
}

/*
 * ana_window_outside() - whether the window of @opt (--since/--until, ns
 * from the trace start) starts after the last event of the trace @rd
 * holds (its time from the chunk headers: no payload is read). Then a
 * message naming the window and the events' span goes into @msg (@len
 * bytes) and true is returned: every output would be empty, and the CLI
 * says so and exits 1 instead of writing empty reports and exports. A
 * window before the first event is not one: that time is part of the
 * trace (the program ran, in no section), and an empty answer is right.
 * False when no --since is set or the trace has no events. Rewinds @rd.
 */
bool ana_window_outside(struct pt_reader *rd, const struct ana_options *opt, char *msg, size_t len);
/* ana_thread_pos() - The position in res->threads (sorted by index, as
 * the reader's table) of the thread of index @index, or res->nthreads when
 * it has none; @last, the previous answer, is tried first (a thread's
 * chunks come in runs). */
static inline size_t ana_thread_pos(const struct ana_result *res, uint32_t index, size_t last)
{
	if (last < res->nthreads && res->threads[last].index == index)
		return last;
	size_t lo = 0, hi = res->nthreads;
	while (lo < hi) {
		const size_t mid = lo + (hi - lo) / 2;
		if (res->threads[mid].index < index)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < res->nthreads && res->threads[lo].index == index ? lo : res->nthreads;
}

/* Opens and analyzes @path. 0, -errno, or -PT_E* (message in *err, static or owned by res). */
int ana_run(const char *path, const struct ana_options *opt, struct ana_result *res, char *err, size_t errlen);
void ana_result_free(struct ana_result *res);

/*
 * The live pass: incremental analysis of a trace still being written
 * (ana_api.h's session builds on it). ana_live_update() gives exactly what
 * ana_run() gives for the file as it is at that moment (tested at random
 * cut points), but reads only the chunks committed since its last update:
 * it keeps ana_run()'s pass state and finishes a copy of it. It starts
 * over (one full reading, then incremental again) when:
 *   - the trace's ns-per-tick slope changed (pt_reader_ns_per_tick(): a
 *     new clock triple moves it, so every duration converts differently);
 *     never with PT_CLOCK_MONOTONIC, whose slope is 1;
 *   - the file is another trace (start triple, pid or run id), shrank, or
 *     a thread of the table changed;
 *   - a memory sample came in at or before a record it had read (an END
 *     already measured would see it), or the set of memory series changed.
 * It gives the result of ana_run() itself (the full pass at each update)
 * for what it does not keep: options other than every thread, domain and
 * time with no samples; several parts (rotation), flight files and
 * windows; damage; a sparse name-id space; sampled requests; GPU, async
 * or instant records in a trace that ana_run() reads thread by thread (no
 * "ptz-gpu" thread and at most 64 threads: its pending peaks depend on
 * that order, the live pass reads in file order). Its pass
 * tracks same-name sections (as ana_run() does when a section open at the
 * end encloses a closed one of its name), so that case needs no second
 * reading; the figures are the same either way.
 * Context: one caller at a time per live pass.
 */
struct ana_live;
struct ana_live_stats {
	uint64_t updates;  /* ana_live_update() calls */
	uint64_t extended; /* of them, read only what was new */
	uint64_t rebuilt;  /* read the whole file into a new state */
	uint64_t full;     /* gave ana_run()'s result (the cases above) */
};
/* ana_live_open() - A live pass with @opt (copied; must not be NULL),
 * holding no state yet. 0 or -ENOMEM. */
int ana_live_open(const struct ana_options *opt, struct ana_live **out);
/* ana_live_update() - The analysis of the trace at @path as it is now into
 * @out (free with ana_result_free(); @out owns its reader, which the live
 * pass borrows until its next update, so free @out only after that update
 * or ana_live_close()). The reader may be the previous result's, brought
 * up to the file in place (fmt_reader_refresh(): the file is not read
 * again from its start): free the previous result without it (its rd set
 * to NULL) when it is @out's. Return and @err as ana_run()'s. */
int ana_live_update(struct ana_live *l, const char *path, struct ana_result *out, char *err, size_t errlen);
/* ana_live_stats() - How the updates so far were made. */
void ana_live_stats(const struct ana_live *l, struct ana_live_stats *out);
/* ana_live_close() - Frees @l; NULL is allowed. */
void ana_live_close(struct ana_live *l);

/* @s if it is valid UTF-8, else a copy in *@scratch (freed and replaced on
 * each call; the caller frees the last) with each invalid byte, overlong
 * form, surrogate or code point above U+10FFFF replaced by '?'. NULL only
 * when that copy cannot be allocated. */
const char *ana_utf8_clean(const char *s, char **scratch);

/* ana_nomem_note() - An allocation of the analysis failed where no result
 * is at hand (a histogram, a reservoir, a map): ana_run() then fails with
 * -ENOMEM instead of giving a smaller answer. ana_nomem_take() - Whether one
 * was noted on this thread since the last call; clears it. */
void ana_nomem_note(void);
bool ana_nomem_seen(void); /* noted and not yet taken: the pass stops at the next chunk */
bool ana_nomem_take(void);

/* Name of a section id (or "(unknown id N)"); pointer valid until next call. */
const char *ana_name(const struct ana_result *res, uint32_t id);
/* The trace's id of the analyzer's name id @id (they differ for a sparse id
 * space: ANA_MIN_NAME_IDS). */
static inline uint32_t ana_trace_id(const struct ana_result *res, uint32_t id)
{
	return res->slot_id && id < res->nslots ? res->slot_id[id] : id;
}
/* pt_reader_string() of the analyzer's name id @id. */
static inline const char *ana_string(const struct ana_result *res, uint32_t id, uint32_t *domain)
{
	return pt_reader_string(res->rd, ana_trace_id(res, id), domain);
}

/*
 * ana_path_of() - @node's call path in tree @t of @res, as the CSV's `path`
 * column holds it (doc/analyzer-output.md §5): its names from the root's
 * child down, joined by ';'; a path deeper than ANA_PATH_MAX_NAMES levels
 * (a runaway recursion, a section never ended in a loop) as "[DEPTH] ..."
 * and its innermost ANA_PATH_MAX_NAMES names, so that a file of D such
 * rows grows as D, not D^2/2 (200,000 levels took over 200 GB). In *@buf,
 * grown as needed (the caller frees it). NULL when it cannot grow.
 */
#define ANA_PATH_MAX_NAMES 256
const char *ana_path_of(const struct ana_result *res, const struct ana_tree *t, uint32_t node, char **buf,
			size_t *cap);
/*
 * ana_path_short() - ana_path_of() for text: a path deeper than
 * ANA_PATH_SHORT_DEPTH levels prints as "[DEPTH] ..." and its innermost
 * ANA_PATH_SHORT_TAIL names, so one line stays readable however deep the
 * nesting (and a report of many deep paths stays linear in their depth).
 */
#define ANA_PATH_SHORT_DEPTH 8
#define ANA_PATH_SHORT_TAIL 4
const char *ana_path_short(const struct ana_result *res, const struct ana_tree *t, uint32_t node, char **buf,
			   size_t *cap);
/* ana_json_str() - @s as a JSON string, repaired by ana_utf8_clean()
 * (jansson rejects invalid UTF-8): "?" if it cannot be made. A new
 * reference; NULL only on ENOMEM. */
json_t *ana_json_str(const char *s);
/* ana_json_path() - @node's call path in tree @t as a JSON array of its
 * names, outermost first (the report's "path", doc/analyzer-output.md §6),
 * at most its innermost ANA_PATH_MAX_NAMES names: *@elided (may be NULL)
 * gets the number of outer names left out (0 for a path of at most
 * ANA_PATH_MAX_NAMES levels). @names: a cache of one string per name id
 * shared across paths (as the report keeps), or NULL. A new reference;
 * NULL on ENOMEM. */
json_t *ana_json_path(const struct ana_result *res, json_t **names, const struct ana_tree *t, uint32_t node,
		      uint32_t *elided);
/* ana_json_row() - One row of the JSON report (doc/analyzer-output.md §6)
 * as a jansson object, from the code that streams the report's rows: @t
 * and @node a call path's node, or @t NULL for the flat row of name @id;
 * @a its aggregate; @names as for ana_json_path(). Large u64 values are
 * ana_json_u64() strings. A new reference; NULL on ENOMEM. */
json_t *ana_json_row(const struct ana_result *res, json_t **names, const struct ana_tree *t, uint32_t node,
		     uint32_t id, const struct ana_agg *a);
/* ana_text_safe() - @s for text output: control bytes (below 0x20, and
 * DEL) as '?', so that a name holding a line break or a terminal escape
 * cannot break a table or drive the terminal. The copy lives in a buffer
 * reused by the next call (one per printf); "?" if it cannot grow. */
const char *ana_text_safe(const char *s);
/* ana_json_u64() - @v as a JSON integer, exact past INT64_MAX too (jansson's
 * json_int_t is signed): such a value is a marked string until
 * ana_json_dumpf() writes its digits. A new reference; NULL on ENOMEM. */
json_t *ana_json_u64(uint64_t v);
/* ana_json_dumpf() - json_dumpf() that writes ana_json_u64()'s large values
 * as bare decimal integers. 0 or -1. */
int ana_json_dumpf(const json_t *j, FILE *out, size_t flags);
/*
 * JSON object members, streamed or built (ana_output.c): the JSON
 * report's rows are written member by member, either straight to a
 * stream (ana_jo_open(): no jansson object per value; building, dumping
 * and freeing ~60 of them per row was 87 % of a small report's
 * instructions and most of its allocations) or into a jansson object
 * (ana_jo_build(): for callers that want the values, e.g. the analysis
 * session API), from the same code, so both hold the same keys and
 * values. Streamed bytes are those jansson's compact dump (no
 * JSON_INDENT) gives: `{"key": value, ...}`, reals as "%.12g" with ".0"
 * added where it would read as an integer and the exponent's '+' and
 * leading zeros removed (its jsonp_dtostr()), NaN and infinities as null,
 * u64 past INT64_MAX as bare digits (built: ana_json_u64()). Strings go
 * through jansson (ana_jo_str()), the one place that escapes them. A
 * @key NULL appends an element to an array. *err is set on a write or
 * allocation failure: the document is then incomplete.
 */
struct ana_obuf { /* the output, buffered: one fwrite per 16 KiB, not per value (CSV, JSON) */
	FILE *out;
	int err;       /* set when a write to @out failed */
	size_t n;      /* bytes held in @buf */
	char buf[16384];
};
void ana_obuf_flush(struct ana_obuf *b); /* writes what is buffered to @b->out */
void ana_obuf_put_full(struct ana_obuf *b, const char *s, size_t n); /* ana_obuf_put() past the room */
/* printf() into @b (rare lines; @err set when it cannot be formatted) */
void ana_obuf_printf(struct ana_obuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* @n bytes of @s into @b (to @b->out once it is full). */
static inline void ana_obuf_put(struct ana_obuf *b, const char *s, size_t n)
{
	if (__builtin_expect(n > sizeof(b->buf) - b->n, 0)) {
		ana_obuf_put_full(b, s, n);
		return;
	}
	memcpy(b->buf + b->n, s, n);
	b->n += n;
}
static inline void ana_obuf_puts(struct ana_obuf *b, const char *s)
{
	ana_obuf_put(b, s, strlen(s));
}
static inline void ana_obuf_putc(struct ana_obuf *b, char c)
{
	if (__builtin_expect(b->n == sizeof(b->buf), 0))
		ana_obuf_flush(b);
	b->buf[b->n++] = c;
}
struct ana_jo {
	struct ana_obuf *b; /* streamed to, or NULL: building @obj */
	json_t *obj;        /* the object or array being built (borrowed) */
	bool first;         /* no member written yet */
	int *err;
};
/* `{` (or @open) to @b, and a writer of the members that follow. */
struct ana_jo ana_jo_open(struct ana_obuf *b, const char *open);
/* A writer of members into @obj (a jansson object or array; NULL: *@err set). */
struct ana_jo ana_jo_build(json_t *obj, int *err);
/* `}` (or @close) when streamed; nothing when built. */
void ana_jo_close(struct ana_jo *o, const char *close);
/* A nested object (@kind '{') or array ('[') as member @key (NULL: element). */
struct ana_jo ana_jo_child(struct ana_jo *o, const char *key, char kind);
/* Members @key (NULL: an array's element): the value as JSON. Each is a
 * macro over its _n function that passes strlen(@key) along, which GCC
 * computes at compile time for the literal keys of nearly every call (a
 * report writes ~550,000 members: a strlen() call each was 4 % of --json's
 * writing). */
static inline size_t ana_jo_klen(const char *key)
{
	return key ? __builtin_strlen(key) : 0;
}
void ana_jo_u64_n(struct ana_jo *o, const char *key, size_t klen, uint64_t v);
void ana_jo_i64_n(struct ana_jo *o, const char *key, size_t klen, int64_t v);
void ana_jo_real_n(struct ana_jo *o, const char *key, size_t klen, double v); /* null unless finite */
void ana_jo_bool_n(struct ana_jo *o, const char *key, size_t klen, bool v);
void ana_jo_null_n(struct ana_jo *o, const char *key, size_t klen);
#define ana_jo_u64(o, key, v) ana_jo_u64_n((o), (key), ana_jo_klen(key), (v))
#define ana_jo_i64(o, key, v) ana_jo_i64_n((o), (key), ana_jo_klen(key), (v))
#define ana_jo_real(o, key, v) ana_jo_real_n((o), (key), ana_jo_klen(key), (v))
#define ana_jo_bool(o, key, v) ana_jo_bool_n((o), (key), ana_jo_klen(key), (v))
#define ana_jo_null(o, key) ana_jo_null_n((o), (key), ana_jo_klen(key))
void ana_jo_str(struct ana_jo *o, const char *key, const char *s); /* repaired (ana_utf8_clean), escaped by jansson */
/* ana_json_encode() - @s as JSON string text with its quotes, every
 * non-ASCII character escaped (as ana_json_dumpf() writes names): malloc'd,
 * NULL on ENOMEM. */
char *ana_json_encode(const char *s);
/* ana_json_u64_get() - The value of @j if it is an ana_json_u64() figure
 * (an integer >= 0, or a large value's marked string): true and *@out set;
 * false otherwise. */
bool ana_json_u64_get(const json_t *j, uint64_t *out);
/* ana_json_trace() - The JSON report's "trace" object (process, spans,
 * sections, losses, problems...). A new reference; NULL on ENOMEM. */
json_t *ana_json_trace(const struct ana_result *res);
/* ana_text_safe_to() - ana_text_safe() of @s into @dst (@cap bytes, cut to
 * fit), for a line that shows more than one untrusted string; returns @dst. */
char *ana_text_safe_to(char *dst, size_t cap, const char *s);
/* ana_fmt_dur() - @ns as "812 ns", "3.25 us", "1.50 ms" or "2.000 s" in
 * @buf of @n bytes ("-" for NaN); returns @buf. */
const char *ana_fmt_dur(char *buf, size_t n, double ns);
/* ana_fmt_bytes() - @v bytes as "812 B", "3.25 KiB", "1.50 MiB", "2.00 GiB"
 * (binary units; a "+" before a positive value with @sign) in @buf. */
const char *ana_fmt_bytes(char *buf, size_t n, double v, bool sign);

/* ---- derived figures (doc/analyzer-output.md §3) ---- */
struct ana_row {
	const struct ana_agg *a;
	uint64_t p50, p90, p99;
	double mean, std, share, first_over_rest, rest_mean, rest_std;
	double gbps, gflops, intensity;
	double xfer_gbps[ANA_DIRS];
	/* GPU (a->gpu != NULL): self distribution, and inclusive GPU time / inclusive CPU time */
	uint64_t gpu_p50, gpu_p99;
	double gpu_mean, gpu_lat_mean, gpu_over_cpu;
	/*
	 * Rates over GPU time (doc/analyzer-output.md §3.1), NAN where the
	 * time is 0 or the row declares nothing (never infinite):
	 * gpu_self_*: the row's own metric_self over its self GPU time;
	 * gpu_gbps/gpu_gflops: the GPU sections' declared work in the
	 * subtree (ana_gpu.work) over the inclusive GPU time;
	 * gpu_xfer_gbps[d]: the copy sections' bytes of direction d over
	 * their GPU time (copy_dir_bytes / copy_dir_ns).
	 */
	double gpu_self_gbps, gpu_self_gflops, gpu_gbps, gpu_gflops;
	double gpu_xfer_gbps[ANA_DIRS];
	/*
	 * The rate a one-column view shows (the text report's GB/s and
	 * GFLOP/s, the Python module's log()): the GPU rate (gpu_gbps,
	 * gpu_gflops) where the row's subtree has GPU sections that declared
	 * that work, flagged *_over_gpu; else the CPU-time rate (gbps,
	 * gflops), all of whose work CPU sections then declared. A GPU
	 * section's CPU time is its launch, so its work over CPU time is no
	 * rate of anything (an H100 matmul read 3.2 PFLOP/s that way).
	 */
	double show_gbps, show_gflops;
	bool show_gbps_over_gpu, show_gflops_over_gpu;
	/* Time breakdown (§3.1): CPU = total_ns; GPU = inclusive GPU time
	 * summed over streams; transfer = copy_ns (part of GPU); compute =
	 * GPU - transfer; launch = launch_ns (part of CPU). */
	uint64_t bd_cpu_ns, bd_gpu_ns, bd_copy_ns, bd_compute_ns, bd_launch_ns;
	/* ana_occupied_ns() of the row: what rankings and stakes use */
	uint64_t occupied_ns;
};
void ana_row_compute(const struct ana_result *res, const struct ana_agg *a, struct ana_row *row);
/* ana_row_stats() - The figures of @a that need no trace around it: all of
 * struct ana_row but share and occupied_ns (left 0), which ana_row_compute()
 * adds from the result. A view of several traces (ana_multi.c) uses it. */
void ana_row_stats(const struct ana_agg *a, struct ana_row *row);
/*
 * ana_gpu_busy_ns() - The instrumented GPU busy time: the sum over
 * devices of the union of their ranges (ana_gpu_device.busy_ns). 0
 * without GPU ranges.
 * ana_occupied_ns() - The time row @a occupies, the one rule that every
 * ranking (--bottlenecks, the report's --sort self) and the suggest
 * rules' stakes use (doc/analyzer-output.md §3.1): max(self CPU time,
 * self GPU time), the self GPU time capped at ana_gpu_busy_ns() (ranges
 * summed over streams may exceed what the device was busy), so the
 * figure never exceeds the CPU or GPU time it is a part of. A CPU
 * section's is its self time.
 */
uint64_t ana_gpu_busy_ns(const struct ana_result *res);
uint64_t ana_occupied_ns(const struct ana_result *res, const struct ana_agg *a);

/* ---- outputs ---- */
/* ANA_SORT_OCCUPIED: by ana_occupied_ns() (--bottlenecks; not a --sort key) */
enum ana_sort { ANA_SORT_TIME, ANA_SORT_SELF, ANA_SORT_FLOPS, ANA_SORT_COUNT, ANA_SORT_NAME, ANA_SORT_OCCUPIED };
struct ana_report_opts {
	enum ana_sort sort;
	int top;        /* 0 = all */
	int depth;      /* 0 = unlimited */
	double min_pct; /* rows below this share are hidden */
	bool flat;
	int bottlenecks; /* 0 = none */
	int thread;      /* -1 = merged */
	/* ana_write_json(): leave out each thread's "tree" and "flat" rows (the HTML page shows the
	 * merged rows only; its size then grows with the call paths, not with paths x threads) */
	bool no_thread_rows;
};
void ana_report_text(FILE *out, const struct ana_result *res, const struct ana_report_opts *o);
int ana_write_csv(FILE *out, const struct ana_result *res, const struct ana_report_opts *o);
int ana_write_json(FILE *out, const struct ana_result *res, const struct ana_report_opts *o);
void ana_info_text(FILE *out, const struct ana_result *res);
/* True for a counter that holds bytes: "process RSS" (the flusher's, or the
 * CUDA thread's in older traces), "device memory used (all processes), GPU
 * n" of the CUDA thread, and any counter whose name ends in " (bytes)". */
bool ana_counter_is_bytes(const struct ana_result *res, const struct ana_thread *t, uint32_t id);
/* ana_counter_is_bytes() by name alone, @gpu_thread: the CUDA thread holds it. */
bool ana_counter_name_is_bytes(const char *name, bool gpu_thread);
/* Memory per section in text: one table per series, the rows of the view
 * (call tree, or --flat) with the largest growth first (ana_mem.c). */
void ana_mem_text(FILE *out, const struct ana_result *res, const struct ana_report_opts *o);
/*
 * ana_fmt_fixed() - printf("%.*f", @decimals, @v) in the C locale, byte for
 * byte (round half to even on the exact binary value, "-0" and "nan" as
 * glibc writes them), into @buf; @decimals is 0 to 6 for the fast path (the
 * CSV's columns, the text's durations), any other count through snprintf().
 * Most values take a fast path (~60 instructions where printf of a double
 * costs ~1,300): a non-negative value below 1e15 is split into its integer
 * part and its exact fraction; the fraction times 10^decimals is off by at
 * most 6e-11 from the exact product, so its rounding is decided unless it
 * lies within 1e-9 of a half, where snprintf() decides.
 * Return: the length written (no NUL is added); @buf holds 40 bytes.
 */
size_t ana_fmt_fixed(char buf[40], double v, int decimals);
/*
 * ana_fmt_g12() - printf("%.12g", @v) in the C locale, byte for byte (the
 * JSON's reals: jansson's precision 12), into @buf; the fast path covers
 * 1e-4 <= v < 1e12 (v times a power of ten is within 1.2e-4 of exact,
 * decided unless within 1e-3 of a half), snprintf() the rest.
 * Return: the length written (no NUL is added).
 */
size_t ana_fmt_g12(char buf[40], double v);
/* ",%" PRIu64, ",%" PRId64, ",%.0f", ",%.6f" of one CSV field, to @out. */
void ana_csv_u64(struct ana_obuf *out, uint64_t v);
void ana_csv_i64(struct ana_obuf *out, int64_t v);
void ana_csv_f0(struct ana_obuf *out, double v);
void ana_csv_f6(struct ana_obuf *out, double v);

/* CSV: the columns appended when the trace has a "process RSS" series
 * (with a leading comma, "" otherwise), and a row's values. */
const char *ana_mem_csv_cols(const struct ana_result *res);
void ana_mem_csv(struct ana_obuf *out, const struct ana_result *res, const struct ana_agg *a);
/* JSON: a row's memory keys (rss_* and "memory") as members of @o, and
 * the series table. */
void ana_mem_json_row(struct ana_jo *o, const struct ana_result *res, const struct ana_agg *a);
json_t *ana_mem_json_series(const struct ana_result *res);

/* ---- process counters (ana_proc.c; doc/analyzer-output.md §3.6) ----
 *
 * The recorder's process counters (doc/trace-format.md §9) summed up over
 * the span of their samples: CPUs used, switches per second, steal share,
 * mean load and runnable threads. A figure is absent (false) when its
 * counter is not in the trace, or a rate has fewer than two samples.
 */
struct ana_proc {
	bool any;                        /* the trace has one of the counters */
	bool has_cpu, has_csw, has_steal, has_load, has_runnable;
	uint64_t span_ns;                /* the CPU counters' first to last sample */
	int64_t cpus_online;             /* "system CPUs online", 0 = not recorded */
	int64_t cpu_user_ns, cpu_system_ns; /* over the span */
	double cpus_used, cpus_user, cpus_system; /* CPU time / span */
	double vcsw_per_s, ivcsw_per_s;
	double steal_share;              /* steal / (its span x CPUs online) */
	double load_mean, runnable_mean; /* of the samples (load: x1000 undone) */
};
void ana_proc_summary(const struct ana_result *res, struct ana_proc *out);
/* The report's "Process:" line; nothing for a trace without the counters. */
void ana_proc_text(FILE *out, const struct ana_result *res);
/* The JSON report's "process" object, or NULL for a trace without the counters. */
json_t *ana_proc_json(const struct ana_result *res);

#endif /* PTZ_ANA_H */
