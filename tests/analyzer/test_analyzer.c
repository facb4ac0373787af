/*
 * tests/analyzer/test_analyzer.c - libptanalyze against traces written with
 * the internal writer at chosen ticks, so that every figure is known.
 *
 * The traces map 1 tick = 1 ns (clock source 1 with clock records (0, 0) and
 * (1e9, 1e9) and the header's start triple on the same line), start at
 * T0 = 1 ms of ticks, and are built from small scripts of records whose
 * expected statistics are worked out by hand in the tables below.
 *
 * Invariants covered (analyzer/ana.h, analyzer/ana_build.c):
 *  - nesting and recursion (A > A > B) rebuild the right call paths; counts,
 *    inclusive total_ns, self_ns (total minus the children), min/max;
 *  - share = total / sum of thread spans, a thread's span being its last
 *    BEGIN/END/COUNTER tick minus its first record's tick;
 *  - first occurrence = the one that started earliest, across threads too;
 *    rest mean and sample std of the other occurrences;
 *  - flat by-name totals are recursion-safe (only the outermost A counts),
 *    self time and counts always add, and so are a flat row's inclusive
 *    metrics and transfers;
 *  - metrics and transfers belong to the innermost open section (self) and
 *    roll up to every ancestor (inclusive); GB/s = inclusive (read +
 *    written) bytes / inclusive ns, GFLOP/s = flops / ns, FLOP/B, and the
 *    per-direction transfer rates;
 *  - counters per thread (samples, last, min, max);
 *  - an END with nothing open and an END closing deeper frames count as
 *    unmatched; sections open at the end are counted, never aggregated;
 *    a per-thread chunk sequence gap drops the open stack (open at end);
 *    a LOSS record flags every section open at that point (and only them);
 *    LOSS in a meta chunk counts as process-wide loss; ERROR records count
 *    except I/O errors; a metric with nothing open is unattributed;
 *  - percentiles lie within ANA_HIST_REL_ERROR of the true nearest-rank
 *    percentile (1000 occurrences over two threads and several chunks),
 *    and are exact below 2^ANA_SUB_BITS ns;
 *  - a histogram gives a sorted array's ranks in every storage form (16-bit
 *    pairs, 16-bit and 32-bit blocks, a full pair list), and its counts stay
 *    exact when one passes 65,535 by single adds, batches, large adds or
 *    merges;
 *  - --since/--until keep only sections lying fully inside the window,
 *    measured from the header's start tick, ends included; a recursive
 *    section whose outer occurrence the window drops is outermost in the
 *    window's flat total;
 *  - --thread analyzes one thread; the merged view equals the sum of the
 *    per-thread views; --domain keeps one timing domain;
 *  - the text report's figures, '!' flags, transfers, bottlenecks and
 *    counters; --depth, --top (rows shown, not rows hidden) and --min-pct;
 *  - the CSV (read back with an RFC 4180 reader: a name holding a comma and
 *    a double quote) and the JSON (read back with jansson) carry the same
 *    numbers as the API;
 *  - tests/data/golden/small.ptz is what the generator writes today
 *    (`test-analyzer --write-golden DIR` regenerates it; see
 *    scripts/update-golden.sh).
 */
#include <jansson.h>
#include <math.h>

#include "analyzer/ana_pass.h" /* ana_ticks_ns(), ana_ticks_ns_lim() */
#include "tests/analyzer/ana_test_ops.h"
#include "ptz/recorder.h" /* PT_METRIC_*, PT_H2D, PT_D2H */

/* ==== Trace scripts ==== */

#define T0 1000000ull                     /* header start tick: trace time 0 */
#define REAL_NS 1700000000000000000ull    /* 2023-11-14 22:13:20 UTC */

enum {
	ID_A = 1,
	ID_B,
	ID_C,
	ID_KERN,
	ID_LOSSY,
	ID_E,
	ID_OPEN,
	ID_D,
	ID_MEM,
	ID_QUEUE,
	ID_P,
	ID_S,
	NIDS
};
#define KERN "kern, \"q\"" /* CSV must quote it */
static const char *const names[NIDS] = { NULL,   "A",    "B",        "C",     KERN, "lossy", "E",
					 "open", "D",    "mem_used", "queue", "P",  "S" };


enum { RD = PT_METRIC_READ_BYTES, WR = PT_METRIC_WRITTEN_BYTES, FL = PT_METRIC_FLOPS };
enum { H2D = PT_H2D, D2H = PT_D2H };

/*
 * The basic trace (also tests/data/golden/small.ptz). Times are ns after T0.
 *
 * thread 0 "main":   A[0,3000] { A[100,1000] { B[200,700] {r1000 w500 f4000} r200 }
 *                                C[1500,2500] {H2D 3000, D2H 1000} }
 *                    counters; END D at 3400 (nothing open: unmatched);
 *                    3 x KERN (250, 150, 200); "open" begun at 7000, never ended.
 *                    span 8000 (last record: a counter at 8000)
 * thread 1 "worker-1": A[50,1050] { B[150,450] {f2000} }
 *                    lossy[1100,2100] { B[1200,1400] LOSS(5, 2)@1300 }
 *                    B[2200,2300]; counter; E[3000,3700]. span 3700 - 50 = 3650
 * thread 2 "worker-2": E[20,420]; r64 with nothing open (unattributed);
 *                    2 ERROR records (one I/O: not counted);
 *                    A[500,900] { C[600,...] } closed by END A at 900
 *                    (C closed there too, unmatched); END E at 1000
 *                    (nothing open: unmatched); E[1100,1300]. span 1280
 * meta: LOSS(3, 1) process-wide.
 */
static const struct op th0_ops[] = {
	B(0, ID_A),
	B(100, ID_A),
	B(200, ID_B), M(RD, 1000), M(WR, 500), M(FL, 4000), E(700, ID_B),
	M(RD, 200), E(1000, ID_A),
	B(1500, ID_C), CUT, X(H2D, 3000), X(D2H, 1000), E(2500, ID_C),
	E(3000, ID_A),
	K(3100, ID_MEM, 10), K(3200, ID_MEM, -5), K(3300, ID_MEM, 7),
	E(3400, ID_D),
	B(4000, ID_KERN), E(4250, ID_KERN), B(5000, ID_KERN), E(5150, ID_KERN), B(6000, ID_KERN), E(6200, ID_KERN),
	B(7000, ID_OPEN),
	K(8000, ID_QUEUE, 3),
};
static const struct op th1_ops[] = {
	B(50, ID_A), B(150, ID_B), M(FL, 2000), E(450, ID_B), E(1050, ID_A),
	B(1100, ID_LOSSY), B(1200, ID_B), L(1300, 5, 2), E(1400, ID_B), E(2100, ID_LOSSY),
	B(2200, ID_B), E(2300, ID_B),
	K(2500, ID_QUEUE, 42),
	B(3000, ID_E), E(3700, ID_E),
};
static const struct op th2_ops[] = {
	B(20, ID_E), E(420, ID_E),
	M(RD, 64),
	ERR(450, PT_ERRC_END_UNDERFLOW, 2), ERR(460, PT_ERRC_IO, 5),
	B(500, ID_A), B(600, ID_C), E(900, ID_A),
	E(1000, ID_E),
	B(1100, ID_E), E(1300, ID_E),
};
#define SPAN0 8000u
#define SPAN1 3650u
#define SPAN2 1280u
#define SPAN_SUM (SPAN0 + SPAN1 + SPAN2)

static void tb_open(struct tb *b, const char *path, const char *cmdline)
{
	const struct fmt_writer_hdr hd = {
		.clock_source = PT_CLOCK_TSC,
		.pid = 4242,
		.start_ticks = T0,
		.start_mono_ns = T0, /* on the identity line */
		.start_real_ns = REAL_NS,
		.process_name = "ana-test",
		.host = "testhost",
		.cmdline = cmdline,
		.recorder_version = "ptz-test 1",
	};
	tb_start(b, path, &hd);
}

/* Meta chunk: the string table (KERN in domain "gpu"), threads, clocks and
 * a process-wide LOSS of 3 records / 1 section. */
static void tb_meta(struct tb *b, uint32_t nthreads)
{
	static const char *const tnames[] = { "main", "worker-1", "worker-2" };
	assert_int_equal(fmt_enc_domain(&b->e, 1, "gpu", 3), 0);
	for (uint32_t id = 1; id < NIDS; id++)
		assert_int_equal(fmt_enc_string(&b->e, id, id == ID_KERN, names[id], strlen(names[id])), 0);
	for (uint32_t t = 0; t < nthreads; t++)
		assert_int_equal(fmt_enc_thread(&b->e, t, 100 + t, T0, 0, tnames[t], strlen(tnames[t])), 0);
	assert_int_equal(fmt_enc_clock(&b->e, 0, 0, REAL_NS - T0, 1), 0);
	assert_int_equal(fmt_enc_clock(&b->e, 1000000000, 1000000000, REAL_NS - T0 + 1000000000, 1), 0);
	fmt_enc_loss(&b->e, T0, 3, 1);
	tb_flush(b, FMT_CHUNK_META, PT_FMT_META_THREAD);
}

/* Encodes ops[from..] into chunks of @thread up to the end or a CUT; returns
 * the index after it. */
static size_t tb_events(struct tb *b, uint32_t thread, const struct op *ops, size_t n, size_t from)
{
	size_t i = from;
	for (; i < n; i++) {
		const struct op *o = &ops[i];
		if (o->k == OP_CUT) {
			i++;
			break;
		}
		op_encode(&b->e, o);
	}
	tb_flush(b, FMT_CHUNK_EVENTS, thread);
	return i;
}

/* Writes the basic trace. File order: t0 seq 0, t1, t2, t0 seq 1 (so the
 * sections A and C of thread 0 span two chunks, their ENDs carry ids). */
static void write_basic(const char *path)
{
	struct tb b;
	tb_open(&b, path, "ana-test --basic");
	tb_meta(&b, 3);
	size_t next0 = tb_events(&b, 0, th0_ops, PT_ARRAY_SIZE(th0_ops), 0);
	assert_true(next0 < PT_ARRAY_SIZE(th0_ops));
	assert_int_equal(tb_events(&b, 1, th1_ops, PT_ARRAY_SIZE(th1_ops), 0), PT_ARRAY_SIZE(th1_ops));
	assert_int_equal(tb_events(&b, 2, th2_ops, PT_ARRAY_SIZE(th2_ops), 0), PT_ARRAY_SIZE(th2_ops));
	assert_int_equal(tb_events(&b, 0, th0_ops, PT_ARRAY_SIZE(th0_ops), next0), PT_ARRAY_SIZE(th0_ops));
	tb_close(&b);
}

/* ==== Expected rows ==== */

/*
 * One expected row. Durations are listed earliest start first, so d[0] is
 * the first occurrence; count, min, max, mean, std, first, rest mean/std and
 * the percentiles follow from them. total is explicit (flat rows under
 * recursion count only the outermost occurrence).
 */
struct xr {
	const char *key; /* tree: path "A;A;B"; flat: name */
	uint64_t d[8];
	int nd;
	uint64_t total, self;
	uint64_t incl[3], selfm[3];   /* read, written, flops */
	uint64_t xfer[2], xfer_self[2]; /* H2D, D2H */
	int lossy;
};

/* merged call tree */
static const struct xr x_tree_all[] = {
	{ "A", { 3000, 1000, 400 }, 3, 4400, 1900, { 1200, 500, 6000 }, { 0 }, { 3000, 1000 }, { 0 }, 0 },
	{ "A;A", { 900 }, 1, 900, 400, { 1200, 500, 4000 }, { 200, 0, 0 }, { 0 }, { 0 }, 0 },
	{ "A;A;B", { 500 }, 1, 500, 500, { 1000, 500, 4000 }, { 1000, 500, 4000 }, { 0 }, { 0 }, 0 },
	{ "A;C", { 300, 1000 }, 2, 1300, 1300, { 0 }, { 0 }, { 3000, 1000 }, { 3000, 1000 }, 0 },
	{ "A;B", { 300 }, 1, 300, 300, { 0, 0, 2000 }, { 0, 0, 2000 }, { 0 }, { 0 }, 0 },
	{ KERN, { 250, 150, 200 }, 3, 600, 600, { 0 }, { 0 }, { 0 }, { 0 }, 0 },
	{ "lossy", { 1000 }, 1, 1000, 800, { 0 }, { 0 }, { 0 }, { 0 }, 1 },
	{ "lossy;B", { 200 }, 1, 200, 200, { 0 }, { 0 }, { 0 }, { 0 }, 1 },
	{ "B", { 100 }, 1, 100, 100, { 0 }, { 0 }, { 0 }, { 0 }, 0 },
	{ "E", { 400, 200, 700 }, 3, 1300, 1300, { 0 }, { 0 }, { 0 }, { 0 }, 0 },
};
/* merged flat */
static const struct xr x_flat_all[] = {
	{ "A", { 3000, 900, 1000, 400 }, 4, 4400, 2300, { 1200, 500, 6000 }, { 200, 0, 0 }, { 3000, 1000 }, { 0 }, 0 },
	{ "B", { 300, 500, 200, 100 }, 4, 1100, 1100, { 1000, 500, 6000 }, { 1000, 500, 6000 }, { 0 }, { 0 }, 1 },
	{ "C", { 300, 1000 }, 2, 1300, 1300, { 0 }, { 0 }, { 3000, 1000 }, { 3000, 1000 }, 0 },
	{ KERN, { 250, 150, 200 }, 3, 600, 600, { 0 }, { 0 }, { 0 }, { 0 }, 0 },
	{ "lossy", { 1000 }, 1, 1000, 800, { 0 }, { 0 }, { 0 }, { 0 }, 1 },
	{ "E", { 400, 200, 700 }, 3, 1300, 1300, { 0 }, { 0 }, { 0 }, { 0 }, 0 },
};
static const struct xr x_tree_t0[] = {
	{ "A", { 3000 }, 1, 3000, 1100, { 1200, 500, 4000 }, { 0 }, { 3000, 1000 }, { 0 }, 0 },
	{ "A;A", { 900 }, 1, 900, 400, { 1200, 500, 4000 }, { 200, 0, 0 }, { 0 }, { 0 }, 0 },
	{ "A;A;B", { 500 }, 1, 500, 500, { 1000, 500, 4000 }, { 1000, 500, 4000 }, { 0 }, { 0 }, 0 },
	{ "A;C", { 1000 }, 1, 1000, 1000, { 0 }, { 0 }, { 3000, 1000 }, { 3000, 1000 }, 0 },
	{ KERN, { 250, 150, 200 }, 3, 600, 600, { 0 }, { 0 }, { 0 }, { 0 }, 0 },
};
static const struct xr x_flat_t0[] = {
	{ "A", { 3000, 900 }, 2, 3000, 1500, { 1200, 500, 4000 }, { 200, 0, 0 }, { 3000, 1000 }, { 0 }, 0 },
	{ "B", { 500 }, 1, 500, 500, { 1000, 500, 4000 }, { 1000, 500, 4000 }, { 0 }, { 0 }, 0 },
	{ "C", { 1000 }, 1, 1000, 1000, { 0 }, { 0 }, { 3000, 1000 }, { 3000, 1000 }, 0 },
	{ KERN, { 250, 150, 200 }, 3, 600, 600, { 0 }, { 0 }, { 0 }, { 0 }, 0 },
};
static const struct xr x_tree_t1[] = {
	{ "A", { 1000 }, 1, 1000, 700, { 0, 0, 2000 }, { 0 }, { 0 }, { 0 }, 0 },
	{ "A;B", { 300 }, 1, 300, 300, { 0, 0, 2000 }, { 0, 0, 2000 }, { 0 }, { 0 }, 0 },
	{ "lossy", { 1000 }, 1, 1000, 800, { 0 }, { 0 }, { 0 }, { 0 }, 1 },
	{ "lossy;B", { 200 }, 1, 200, 200, { 0 }, { 0 }, { 0 }, { 0 }, 1 },
	{ "B", { 100 }, 1, 100, 100, { 0 }, { 0 }, { 0 }, { 0 }, 0 },
	{ "E", { 700 }, 1, 700, 700, { 0 }, { 0 }, { 0 }, { 0 }, 0 },
};
static const struct xr x_flat_t1[] = {
	{ "A", { 1000 }, 1, 1000, 700, { 0, 0, 2000 }, { 0 }, { 0 }, { 0 }, 0 },
	{ "B", { 300, 200, 100 }, 3, 600, 600, { 0, 0, 2000 }, { 0, 0, 2000 }, { 0 }, { 0 }, 1 },
	{ "lossy", { 1000 }, 1, 1000, 800, { 0 }, { 0 }, { 0 }, { 0 }, 1 },
	{ "E", { 700 }, 1, 700, 700, { 0 }, { 0 }, { 0 }, { 0 }, 0 },
};
static const struct xr x_tree_t2[] = {
	{ "E", { 400, 200 }, 2, 600, 600, { 0 }, { 0 }, { 0 }, { 0 }, 0 },
	{ "A", { 400 }, 1, 400, 100, { 0 }, { 0 }, { 0 }, { 0 }, 0 },
	{ "A;C", { 300 }, 1, 300, 300, { 0 }, { 0 }, { 0 }, { 0 }, 0 },
};
static const struct xr x_flat_t2[] = {
	{ "E", { 400, 200 }, 2, 600, 600, { 0 }, { 0 }, { 0 }, { 0 }, 0 },
	{ "A", { 400 }, 1, 400, 100, { 0 }, { 0 }, { 0 }, { 0 }, 0 },
	{ "C", { 300 }, 1, 300, 300, { 0 }, { 0 }, { 0 }, { 0 }, 0 },
};

struct view {
	const char *thread; /* "all" or the index */
	int index;          /* -1 = merged */
	const struct xr *tree, *flat;
	size_t ntree, nflat;
};
static const struct view views[] = {
	{ "all", -1, x_tree_all, x_flat_all, PT_ARRAY_SIZE(x_tree_all), PT_ARRAY_SIZE(x_flat_all) },
	{ "0", 0, x_tree_t0, x_flat_t0, PT_ARRAY_SIZE(x_tree_t0), PT_ARRAY_SIZE(x_flat_t0) },
	{ "1", 1, x_tree_t1, x_flat_t1, PT_ARRAY_SIZE(x_tree_t1), PT_ARRAY_SIZE(x_flat_t1) },
	{ "2", 2, x_tree_t2, x_flat_t2, PT_ARRAY_SIZE(x_tree_t2), PT_ARRAY_SIZE(x_flat_t2) },
};

/* Figures derived by hand from an expected row. */
struct xd {
	uint64_t min, max, p50, p90, p99;
	double mean, std, rest_mean, rest_std, first_over_rest, share, gbps, gflops, intensity, xgbps[2];
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted @v: the ceil(pct/100 * n)-th value. */
static uint64_t nearest_rank(const uint64_t *v, size_t n, unsigned pct)
{
	size_t rank = (pct * n + 99) / 100;
	return v[rank ? rank - 1 : 0];
}

static void mean_std(const uint64_t *v, size_t n, double *mean, double *std)
{
	double s = 0, q = 0;
	for (size_t i = 0; i < n; i++)
		s += (double)v[i];
	*mean = n ? s / (double)n : 0.0;
	for (size_t i = 0; i < n; i++)
		q += ((double)v[i] - *mean) * ((double)v[i] - *mean);
	*std = n > 1 ? sqrt(q / (double)(n - 1)) : 0.0;
}

static void derive(const struct xr *x, uint64_t span_sum, struct xd *o)
{
	uint64_t s[8];
	memcpy(s, x->d, sizeof(s));
	qsort(s, (size_t)x->nd, sizeof(*s), cmp_u64);
	o->min = s[0];
	o->max = s[x->nd - 1];
	o->p50 = nearest_rank(s, (size_t)x->nd, 50);
	o->p90 = nearest_rank(s, (size_t)x->nd, 90);
	o->p99 = nearest_rank(s, (size_t)x->nd, 99);
	mean_std(x->d, (size_t)x->nd, &o->mean, &o->std);
	mean_std(x->d + 1, (size_t)x->nd - 1, &o->rest_mean, &o->rest_std);
	o->first_over_rest = x->nd > 1 ? (double)x->d[0] / o->rest_mean : 0.0;
	o->share = (double)x->total / (double)span_sum;
	double t = (double)x->total;
	o->gbps = (double)(x->incl[0] + x->incl[1]) / t;
	o->gflops = (double)x->incl[2] / t;
	o->intensity = x->incl[0] + x->incl[1] ? (double)x->incl[2] / (double)(x->incl[0] + x->incl[1]) : 0.0;
	o->xgbps[0] = (double)x->xfer[0] / t;
	o->xgbps[1] = (double)x->xfer[1] / t;
}

/* The row being checked, named in every failure message of the checkers. */
static char g_ctx[160];

#define assert_near(a, b, tol)                                                                                \
	do {                                                                                                  \
		double a_ = (a), b_ = (b);                                                                    \
		if (!(fabs(a_ - b_) <= (tol)))                                                                \
			fail_msg("%s: %s = %.9g, expected %.9g (+-%g)", g_ctx, #a, a_, b_, (double)(tol));   \
	} while (0)
#define EQ(a, b)                                                                                              \
	do {                                                                                                  \
		uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                                              \
		if (a_ != b_)                                                                                 \
			fail_msg("%s: %s = %llu, expected %llu", g_ctx, #a, (unsigned long long)a_,           \
				 (unsigned long long)b_);                                                     \
	} while (0)
#define STREQ(a, b)                                                                                           \
	do {                                                                                                  \
		const char *a_ = (a), *b_ = (b);                                                              \
		if (!a_ || strcmp(a_, b_) != 0)                                                               \
			fail_msg("%s: %s = '%s', expected '%s'", g_ctx, #a, a_ ? a_ : "(null)", b_);          \
	} while (0)
#define REL(x) (1e-9 * fabs(x) + 1e-9)

/* A percentile is within ANA_HIST_REL_ERROR of the true one. */
static void check_pct(const char *what, uint64_t got, uint64_t want)
{
	double err = fabs((double)got - (double)want);
	if (err > ANA_HIST_REL_ERROR * (double)want)
		fail_msg("%s: %s: percentile %llu, true %llu: error beyond %.4f%%", g_ctx, what, (unsigned long long)got,
			 (unsigned long long)want, 100.0 * ANA_HIST_REL_ERROR);
}

/* ==== Looking rows up in a result ==== */

static uint32_t id_of(const struct ana_result *res, const char *name)
{
	/* every defined id: nnames covers only the ids with flat rows */
	for (uint32_t id = 1; id < pt_reader_max_string_id(res->rd); id++) {
		const char *n = pt_reader_string(res->rd, id, NULL);
		if (n && strcmp(n, name) == 0)
			return id;
	}
	fail_msg("no string id for '%s'", name);
	return 0;
}

/* Tree node for "A;A;B", or UINT32_MAX. */
static uint32_t node_of(const struct ana_result *res, const struct ana_tree *t, const char *path)
{
	uint32_t node = 0;
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", path);
	char *save = NULL;
	for (char *part = strtok_r(buf, ";", &save); part; part = strtok_r(NULL, ";", &save)) {
		uint32_t id = id_of(res, part), next = UINT32_MAX;
		for (uint32_t i = 0; i < t->n[node].nchild; i++)
			if (t->n[t->n[node].child[i]].id == id)
				next = t->n[node].child[i];
		if (next == UINT32_MAX)
			return UINT32_MAX;
		node = next;
	}
	return node;
}

static const struct ana_tree *tree_of(const struct ana_result *res, int index)
{
	if (index < 0)
		return &res->merged;
	for (size_t i = 0; i < res->nthreads; i++)
		if ((int)res->threads[i].index == index)
			return &res->threads[i].tree;
	fail_msg("no thread %d", index);
	return NULL;
}

static const struct ana_agg *flat_of(const struct ana_result *res, int index)
{
	if (index < 0)
		return res->by_name;
	for (size_t i = 0; i < res->nthreads; i++)
		if ((int)res->threads[i].index == index)
			return res->by_name_thread[i];
	fail_msg("no thread %d", index);
	return NULL;
}

static const struct ana_agg *tree_agg(const struct ana_result *res, int index, const char *path)
{
	const struct ana_tree *t = tree_of(res, index);
	uint32_t n = node_of(res, t, path);
	if (n == UINT32_MAX)
		fail_msg("thread %d: no call path %s", index, path);
	return &t->n[n].agg;
}

static const struct ana_agg *flat_agg(const struct ana_result *res, int index, const char *name)
{
	return &flat_of(res, index)[id_of(res, name)];
}

/* Checks an aggregate and its derived row against @x. */
static void check_agg(const struct ana_result *res, const struct ana_agg *a, const struct xr *x, const char *what)
{
	struct xd d;
	struct ana_row w;
	derive(x, res->thread_span_sum_ns, &d);
	ana_row_compute(res, a, &w);
	snprintf(g_ctx, sizeof(g_ctx), "%s", what);
	EQ(a->count, (uint64_t)x->nd);
	EQ(a->total_ns, x->total);
	EQ(a->self_ns, x->self);
	EQ(a->min_ns, d.min);
	EQ(a->max_ns, d.max);
	EQ(a->first_ns, x->d[0]);
	for (int k = 0; k < 3; k++) {
		EQ(a->metric_incl[k], x->incl[k]);
		EQ(a->metric_self[k], x->selfm[k]);
	}
	for (int k = 0; k < 2; k++) {
		EQ(ana_xfer_incl(a, k), x->xfer[k]);
		EQ(ana_xfer_self(a, k), x->xfer_self[k]);
	}
	EQ(a->lossy > 0, x->lossy);
	assert_near(w.mean, d.mean, REL(d.mean));
	assert_near(w.std, d.std, REL(d.std) + 1e-6);
	assert_near(w.rest_mean, d.rest_mean, REL(d.rest_mean) + 1e-6);
	assert_near(w.rest_std, d.rest_std, REL(d.rest_std) + 1e-6);
	assert_near(w.first_over_rest, d.first_over_rest, REL(d.first_over_rest));
	assert_near(w.share, d.share, 1e-15);
	assert_near(w.gbps, d.gbps, 1e-15);
	assert_near(w.gflops, d.gflops, 1e-15);
	assert_near(w.intensity, d.intensity, 1e-15);
	assert_near(w.xfer_gbps[0], d.xgbps[0], 1e-15);
	assert_near(w.xfer_gbps[1], d.xgbps[1], 1e-15);
	check_pct("p50", w.p50, d.p50);
	check_pct("p90", w.p90, d.p90);
	check_pct("p99", w.p99, d.p99);
}

static const struct ana_options all_opts = { .thread = -1 };

/* ==== Fixture: the basic trace, analyzed once ==== */

static int setup_basic(void **state)
{
	return ana_fixture_setup(state, "basic.ptz", write_basic);
}

/* ==== API ==== */

static void test_ana_run_totals(void **state)
{
	const struct ana_fixture *b = *state;
	const struct ana_result *r = &b->res;
	assert_int_equal(r->nthreads, 3);
	assert_int_equal(r->start_ns, T0);
	assert_int_equal(r->end_ns, T0 + SPAN0);
	assert_int_equal(r->thread_span_sum_ns, SPAN_SUM);
	assert_int_equal(r->sections, 17);
	assert_int_equal(r->records, 51);
	assert_int_equal(r->lost_records, 8);       /* 5 in thread 1, 3 process-wide */
	assert_int_equal(r->lost_sections, 3);
	assert_int_equal(r->process_lost_records, 3);
	assert_int_equal(r->unmatched_ends, 3);
	assert_int_equal(r->open_at_end, 1);
	assert_int_equal(r->misuse_errors, 2);      /* the I/O error is not misuse */
	assert_false(r->corrupt);
	assert_false(r->torn_tail);
	assert_int_equal(pt_reader_problem_count(r->rd), 0);

	static const struct {
		uint32_t tid;
		const char *name;
		uint64_t first, last, sections, records, lost, lost_sec, unmatched, open, errors;
	} xt[] = {
		{ 100, "main", T0, T0 + 8000, 7, 26, 0, 0, 1, 1, 0 },
		{ 101, "worker-1", T0 + 50, T0 + 3700, 6, 14, 5, 2, 0, 0, 0 },
		{ 102, "worker-2", T0 + 20, T0 + 1300, 4, 11, 0, 0, 2, 0, 2 },
	};
	for (size_t i = 0; i < 3; i++) {
		const struct ana_thread *t = &r->threads[i];
		assert_int_equal(t->index, i);
		assert_int_equal(t->tid, xt[i].tid);
		assert_string_equal(t->name, xt[i].name);
		assert_int_equal(t->first_ns, xt[i].first);
		assert_int_equal(t->last_ns, xt[i].last);
		assert_int_equal(t->sections, xt[i].sections);
		assert_int_equal(t->records, xt[i].records);
		assert_int_equal(t->lost_records, xt[i].lost);
		assert_int_equal(t->lost_sections, xt[i].lost_sec);
		assert_int_equal(t->unmatched_ends, xt[i].unmatched);
		assert_int_equal(t->open_at_end, xt[i].open);
		assert_int_equal(t->misuse_errors, xt[i].errors);
		assert_int_equal(t->gaps, 0);
		/* a metric with nothing open: thread 2's r64 */
		assert_int_equal(t->unattributed[ANA_READ], i == 2 ? 64 : 0);
		assert_int_equal(t->unattributed[ANA_WRITTEN], 0);
		assert_int_equal(t->unattributed[ANA_FLOPS], 0);
	}
}

static void test_ana_run_tree_and_flat_rows(void **state)
{
	const struct ana_fixture *b = *state;
	char what[128];
	for (size_t v = 0; v < PT_ARRAY_SIZE(views); v++) {
		for (size_t i = 0; i < views[v].ntree; i++) {
			snprintf(what, sizeof(what), "tree %s %s", views[v].thread, views[v].tree[i].key);
			check_agg(&b->res, tree_agg(&b->res, views[v].index, views[v].tree[i].key), &views[v].tree[i], what);
		}
		for (size_t i = 0; i < views[v].nflat; i++) {
			snprintf(what, sizeof(what), "flat %s %s", views[v].thread, views[v].flat[i].key);
			check_agg(&b->res, flat_agg(&b->res, views[v].index, views[v].flat[i].key), &views[v].flat[i], what);
		}
	}
}

/* Every row with a count is one of the expected rows: nothing extra. */
static void test_ana_run_no_unexpected_rows(void **state)
{
	const struct ana_fixture *b = *state;
	for (size_t v = 0; v < PT_ARRAY_SIZE(views); v++) {
		const struct ana_tree *t = tree_of(&b->res, views[v].index);
		size_t rows = 0;
		for (uint32_t n = 1; n < t->count; n++)
			rows += t->n[n].agg.count > 0;
		assert_int_equal(rows, views[v].ntree);
		const struct ana_agg *f = flat_of(&b->res, views[v].index);
		rows = 0;
		for (uint32_t id = 0; id < b->res.nnames; id++)
			rows += f[id].count > 0;
		assert_int_equal(rows, views[v].nflat);
	}
	/* the section still open at the end has a node but no occurrence */
	uint32_t n = node_of(&b->res, &b->res.merged, "open");
	assert_int_not_equal(n, UINT32_MAX);
	assert_int_equal(b->res.merged.n[n].agg.count, 0);
	assert_int_equal(b->res.by_name[ID_OPEN].count, 0);
	/* the unmatched END D made no row */
	assert_int_equal(node_of(&b->res, &b->res.merged, "D"), UINT32_MAX);
}

/* The merged tree is the per-thread trees added up. */
static void test_ana_run_merged_is_sum_of_threads(void **state)
{
	const struct ana_fixture *b = *state;
	const struct ana_tree *m = &b->res.merged;
	char path[512];
	for (uint32_t n = 1; n < m->count; n++) {
		/* rebuild the path of node n */
		uint32_t chain[32];
		int k = 0;
		for (uint32_t x = n; x != 0; x = m->n[x].parent)
			chain[k++] = x;
		path[0] = 0;
		while (k-- > 0) {
			if (path[0])
				strcat(path, ";");
			strcat(path, ana_name(&b->res, m->n[chain[k]].id));
		}
		uint64_t count = 0, total = 0, self = 0, fl = 0;
		for (size_t i = 0; i < b->res.nthreads; i++) {
			uint32_t tn = node_of(&b->res, &b->res.threads[i].tree, path);
			if (tn == UINT32_MAX)
				continue;
			const struct ana_agg *a = &b->res.threads[i].tree.n[tn].agg;
			count += a->count;
			total += a->total_ns;
			self += a->self_ns;
			fl += a->metric_incl[ANA_FLOPS];
		}
		assert_int_equal(m->n[n].agg.count, count);
		assert_int_equal(m->n[n].agg.total_ns, total);
		assert_int_equal(m->n[n].agg.self_ns, self);
		assert_int_equal(m->n[n].agg.metric_incl[ANA_FLOPS], fl);
	}
}

static void write_pct(const char *path);

/* A damaged or crafted trace with section ids far beyond its string
 * table (here 2^32 - 1, 9,488,095 and 2^24 + 5, nested and recursive):
 * the analysis finishes with bounded memory (arrays indexed by name id
 * stop at ana_result.name_id_limit; once, 2^32 - 1 made a doubling loop
 * spin forever and 9,488,095 asked for 2.7 GB of flat rows per thread),
 * the sections keep their call-path rows, and the named ones their flat
 * rows. */
static void test_ana_run_huge_ids(void **state)
{
	(void)state;
	const char *path = tu_path("huge-ids.ptz");
	static const uint32_t big[] = { UINT32_MAX, 9488095u, (1u << 24) + 5 };
	struct tb b;
	tb_open(&b, path, "huge ids");
	tb_meta(&b, 1);
	uint64_t t = T0;
	for (int rep = 0; rep < 3; rep++) {
		fmt_enc_begin(&b.e, t += 10, ID_A);
		for (int k = 0; k < 3; k++) {
			fmt_enc_begin(&b.e, t += 10, big[k]);
			fmt_enc_begin(&b.e, t += 10, big[k]); /* recursion */
			fmt_enc_end(&b.e, t += 100, big[k]);
			fmt_enc_end(&b.e, t += 10, big[k]);
		}
		fmt_enc_end(&b.e, t += 10, ID_A);
	}
	tb_flush(&b, FMT_CHUNK_EVENTS, 0);
	tb_close(&b);
	struct ana_options mo = all_opts;
	const struct ana_report_opts ro = { .sort = ANA_SORT_TIME, .thread = -1 };
	for (int mode = 0; mode < 2; mode++) {
		mo.merged_percentiles_only = mode;
		struct ana_result r;
		ana_test_run(path, &mo, &r);
		assert_int_equal(r.sections, 3 * 7);
		assert_true(r.name_id_limit >= ANA_MIN_NAME_IDS && r.name_id_limit < (1u << 20));
		assert_int_equal(r.by_name[ID_A].count, 3);
		assert_true(r.nnames <= r.name_id_limit);
		/* every big id: two call-path nodes (outer, recursive inner), 3 each */
		uint32_t found = 0;
		for (uint32_t n = 1; n < r.merged.count; n++)
			for (int k = 0; k < 3; k++)
				if (r.merged.n[n].id == big[k]) {
					assert_int_equal(r.merged.n[n].agg.count, 3);
					found++;
				}
		assert_int_equal(found, 6);
		char *csv = ana_test_output(ANA_OUT_CSV, &r, &ro);
		char *txt = ana_test_report(&r, &ro);
		assert_non_null(strstr(csv, "(unknown id 4294967295)"));
		assert_non_null(strstr(txt, "(unknown id 9488095)"));
		free(csv);
		free(txt);
		ana_result_free(&r);
	}
	unlink(path);
}

/* A string table that defines one far id (2^24 - 1, the largest the
 * format allows) that no section uses: the flat tables cover the ids that
 * have rows, not every id defined (they were sized by the largest one:
 * 304 B x 2^24 = 5 GB per thread and for the merged view, then a crash
 * when calloc failed), and the far name still reads back. */
static void test_ana_run_far_string_id(void **state)
{
	(void)state;
	const char *path = tu_path("far-string.ptz");
	const uint32_t far = (1u << 24) - 1;
	struct tb b;
	tb_open(&b, path, "far string id");
	tb_meta(&b, 3);
	assert_int_equal(fmt_enc_string(&b.e, far, 0, "far", 3), 0);
	tb_flush(&b, FMT_CHUNK_META, PT_FMT_META_THREAD);
	for (uint32_t th = 0; th < 3; th++) {
		fmt_enc_begin(&b.e, T0 + 10, ID_A);
		fmt_enc_end(&b.e, T0 + 110, ID_A);
		tb_flush(&b, FMT_CHUNK_EVENTS, th);
	}
	tb_close(&b);
	struct ana_result r;
	ana_test_run(path, &all_opts, &r);
	assert_int_equal(r.nthreads, 3);
	assert_true(r.name_id_limit > far);
	assert_true(r.nnames <= ANA_MIN_NAME_IDS); /* ids with rows: A's, not far's */
	assert_int_equal(r.by_name[ID_A].count, 3);
	for (uint32_t th = 0; th < 3; th++)
		assert_int_equal(r.by_name_thread[th][ID_A].count, 1);
	assert_string_equal(ana_name(&r, far), "far");
	const struct ana_report_opts ro = { .sort = ANA_SORT_TIME, .thread = -1 };
	char *json = ana_test_output(ANA_OUT_JSON, &r, &ro);
	assert_non_null(strstr(json, "\"name\": \"A\""));
	free(json);
	ana_result_free(&r);
	unlink(path);
}

/* THREAD records whose index is no thread index (>= 2^24: 0xfffffffe is
 * the reader's every-chunk selector, 0xffffffff the meta chunks' one) are
 * ignored: they made a thread that read every chunk of every thread (each
 * section counted twice) or the meta chunks. */
static void test_ana_run_thread_record_bad_index(void **state)
{
	(void)state;
	const char *path = tu_path("ghost-thread.ptz");
	struct tb b;
	tb_open(&b, path, "ghost thread");
	tb_meta(&b, 1);
	assert_int_equal(fmt_enc_thread(&b.e, PT_READER_ALL_CHUNKS, 555, T0, 0, "ghost", 5), 0);
	assert_int_equal(fmt_enc_thread(&b.e, PT_FMT_META_THREAD, 556, T0, 0, "ghost2", 6), 0);
	assert_int_equal(fmt_enc_thread(&b.e, 1u << 24, 557, T0, 0, "ghost3", 6), 0);
	tb_flush(&b, FMT_CHUNK_META, PT_FMT_META_THREAD);
	fmt_enc_begin(&b.e, T0 + 10, ID_A);
	fmt_enc_end(&b.e, T0 + 110, ID_A);
	tb_flush(&b, FMT_CHUNK_EVENTS, 0);
	tb_close(&b);
	struct ana_result r;
	ana_test_run(path, &all_opts, &r);
	assert_int_equal(r.nthreads, 1);
	assert_int_equal(r.sections, 1);
	assert_int_equal(r.by_name[ID_A].count, 1);
	assert_int_equal(r.end_ns - r.start_ns, 100);
	ana_result_free(&r);
	unlink(path);
}

/* merged_percentiles_only (the --report path): every merged and flat
 * figure equals the default mode's; per-thread histograms stay empty;
 * with no_flat_percentiles too, so do the flat ones. */
static void same_rows(const struct ana_result *a, const struct ana_result *b, const struct ana_agg *x,
		      const struct ana_agg *y)
{
	struct ana_row rx, ry;
	ana_row_compute(a, x, &rx);
	ana_row_compute(b, y, &ry);
	assert_int_equal(x->count, y->count);
	assert_int_equal(x->total_ns, y->total_ns);
	assert_int_equal(x->self_ns, y->self_ns);
	assert_int_equal(rx.p50, ry.p50);
	assert_int_equal(rx.p90, ry.p90);
	assert_int_equal(rx.p99, ry.p99);
	assert_true(rx.std == ry.std);
}

static void check_modes(const char *path)
{
	struct ana_result d, m;
	struct ana_options mo = all_opts;
	mo.merged_percentiles_only = true;
	ana_test_run(path, &all_opts, &d);
	ana_test_run(path, &mo, &m);
	assert_int_equal(d.merged.count, m.merged.count);
	for (uint32_t n = 1; n < d.merged.count; n++)
		same_rows(&d, &m, &d.merged.n[n].agg, &m.merged.n[n].agg);
	assert_int_equal(d.nnames, m.nnames);
	for (uint32_t id = 0; id < d.nnames; id++)
		same_rows(&d, &m, &d.by_name[id], &m.by_name[id]);
	for (size_t i = 0; i < m.nthreads; i++)
		for (uint32_t n = 1; n < m.threads[i].tree.count; n++) {
			const struct ana_hist *h = &m.threads[i].tree.n[n].agg.hist;
			assert_true(h->nsp == 0 && h->blk == NULL);
		}
	/* no_flat_percentiles (--report without --flat): the call tree is the
	 * same; flat rows keep every figure but their histograms, never built */
	struct ana_result t;
	mo.no_flat_percentiles = true;
	ana_test_run(path, &mo, &t);
	assert_int_equal(d.merged.count, t.merged.count);
	for (uint32_t n = 1; n < d.merged.count; n++)
		same_rows(&d, &t, &d.merged.n[n].agg, &t.merged.n[n].agg);
	assert_int_equal(d.nnames, t.nnames);
	int flat_pct = 0;
	for (uint32_t id = 0; id < d.nnames; id++) {
		assert_int_equal(d.by_name[id].count, t.by_name[id].count);
		assert_int_equal(d.by_name[id].total_ns, t.by_name[id].total_ns);
		assert_int_equal(d.by_name[id].self_ns, t.by_name[id].self_ns);
		assert_true(t.by_name[id].hist.nsp == 0 && t.by_name[id].hist.blk == NULL);
		flat_pct += d.by_name[id].count && (m.by_name[id].hist.nsp || m.by_name[id].hist.blk);
	}
	assert_true(flat_pct > 0); /* without the option, they were built */
	ana_result_free(&t);
	ana_result_free(&d);
	ana_result_free(&m);
}

static void test_ana_run_merged_percentiles_only(void **state)
{
	const struct ana_fixture *b = *state;
	check_modes(b->path); /* recursion, three threads, a window-free run */
	const char *path = tu_path("pct-modes.ptz");
	write_pct(path);      /* 2 threads, wide distributions: dense and sparse octaves */
	check_modes(path);
	unlink(path);
}

/* The hybrid histogram: sparse pairs, dense octaves, and both at once give
 * the same ranks as a sorted array of the values. */
static void test_ana_hist_hybrid_ranks(void **state)
{
	(void)state;
	enum { N = 20000 };
	static uint64_t v[N];
	struct ana_hist h = { 0 }, g = { 0 }, mg = { 0 };
	uint64_t x = 88172645463325252ull;
	for (int i = 0; i < N; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		/* a dense body around 50 us and a long sparse tail up to seconds */
		v[i] = i % 50 ? 40000 + x % 20000 : 1000 + (x % 4000000000ull);
		ana_hist_add(&h, v[i], 1);
		ana_hist_add(i % 2 ? &g : &mg, v[i], 1);
	}
	ana_hist_merge(&mg, &g);
	assert_non_null(h.blk);            /* the body went dense */
	assert_true(h.nsp > 0);            /* the tail stayed sparse */
	qsort(v, N, sizeof(v[0]), cmp_u64);
	for (uint64_t rank = 1; rank <= N; rank += 97) {
		uint64_t want = v[rank - 1];
		uint64_t i = ana_hist_index(want), lo = ana_hist_lower((uint32_t)i), up = ana_hist_upper((uint32_t)i);
		uint64_t mid = lo + (up - 1 - lo) / 2;
		assert_int_equal(ana_hist_at_rank(&h, rank, 0, UINT64_MAX), mid);
		assert_int_equal(ana_hist_at_rank(&mg, rank, 0, UINT64_MAX), mid);
	}
	ana_hist_free(&h);
	ana_hist_free(&g);
	ana_hist_free(&mg);
}

/* ---- histogram storage forms: 16-bit pairs and blocks, widening ---- */

#define HB (ANA_HIST_OCTAVES << ANA_SUB_BITS) /* bucket indexes */

static uint64_t bucket_mid(uint32_t i)
{
	uint64_t lo = ana_hist_lower(i), up = ana_hist_upper(i);
	return lo + (up - 1 - lo) / 2;
}

/* The bucket index (branch-free in ana_hist_index()) agrees with the
 * buckets' bounds at both edges of every bucket, 0 and UINT64_MAX included. */
static void test_ana_hist_index_edges(void **state)
{
	(void)state;
	assert_int_equal(ana_hist_index(0), 0);
	assert_int_equal(ana_hist_index(UINT64_MAX), HB - 1);
	for (uint32_t i = 0; i < HB; i++) {
		uint64_t lo = ana_hist_lower(i), up = ana_hist_upper(i);
		assert_int_equal(ana_hist_index(lo), i);
		assert_int_equal(ana_hist_index(up - 1), i);
		if (i + 1 < HB)
			assert_int_equal(ana_hist_index(up), i + 1);
	}
}

/* @h holds exactly @ref[i] values in each bucket i: the first and the last
 * rank of every non-empty bucket land in it (that pins every cumulative
 * count), and rank total + 1 finds nothing (no value more). */
static void check_ref(const struct ana_hist *h, const uint64_t *ref)
{
	uint64_t cum = 0;
	for (uint32_t i = 0; i < HB; i++) {
		if (!ref[i])
			continue;
		assert_int_equal(ana_hist_at_rank(h, cum + 1, 0, UINT64_MAX), bucket_mid(i));
		cum += ref[i];
		assert_int_equal(ana_hist_at_rank(h, cum, 0, UINT64_MAX), bucket_mid(i));
	}
	assert_true(cum > 0);
	assert_int_equal(ana_hist_at_rank(h, cum + 1, 0, UINT64_MAX), UINT64_MAX);
}

/* @count values @v into @h, one ana_hist_add() each (@by_one), or in
 * batches of ANA_HPEND through ana_hist_add_idx() (the --report path). */
static void add_n(struct ana_hist *h, uint64_t *ref, uint64_t v, uint32_t count, bool by_one)
{
	uint32_t i = ana_hist_index(v);
	ref[i] += count;
	if (by_one) {
		for (uint32_t k = 0; k < count; k++)
			ana_hist_add(h, v, 1);
		return;
	}
	uint16_t idx[ANA_HPEND];
	for (uint32_t k = 0; k < ANA_HPEND; k++)
		idx[k] = (uint16_t)i;
	for (uint32_t left = count; left;) {
		uint32_t n = left < ANA_HPEND ? left : ANA_HPEND;
		ana_hist_add_idx(h, idx, n);
		left -= n;
	}
}

/* A few values over many octaves, kept sparse: a bucket that changes form
 * must not disturb the others. */
static void add_scatter(struct ana_hist *h, uint64_t *ref)
{
	static const uint64_t v[] = { 3, 200, 1000, 1001, 5000, 70000, 1u << 20, 123456789, 1ull << 40 };
	for (size_t k = 0; k < sizeof(v) / sizeof(v[0]); k++)
		add_n(h, ref, v[k], 1 + (uint32_t)k, true);
}

/* Makes the octave of @v dense (more than ANA_HIST_HOT values), with
 * small counts. */
static void make_dense(struct ana_hist *h, uint64_t *ref, uint64_t v)
{
	uint32_t base = ana_hist_index(v) & ~((1u << ANA_SUB_BITS) - 1);
	for (uint32_t j = 0; j < 2 * ANA_HIST_HOT + 4; j++)
		add_n(h, ref, ana_hist_lower(base + 2 * j % (1u << ANA_SUB_BITS)), 1 + j % 3, true);
	assert_non_null(h->blk);
}

/* A bucket passing 65,535 while its octave is sparse (a pair's 16-bit
 * count): by single adds, by batches, by one add with a large count into a
 * new and into an existing pair. Every bucket's count stays exact. */
static void test_ana_hist_pair_count_overflow(void **state)
{
	(void)state;
	static uint64_t ref[HB];
	const uint64_t v = 777777; /* a sparse octave of its own */
	for (int way = 0; way < 4; way++) {
		struct ana_hist h = { 0 };
		memset(ref, 0, sizeof(ref));
		add_scatter(&h, ref);
		if (way == 0 || way == 1) {
			add_n(&h, ref, v, 65535, way == 0); /* fits */
			check_ref(&h, ref);
			add_n(&h, ref, v, 1, way == 0);     /* passes */
			add_n(&h, ref, v, 4464, way == 0);
		} else if (way == 2) {
			add_n(&h, ref, v, 60000, true);
			ana_hist_add(&h, v, 20000);
			ref[ana_hist_index(v)] += 20000;
		} else {
			ana_hist_add(&h, v, 1000000); /* a new bucket whose count does not fit a pair */
			ref[ana_hist_index(v)] += 1000000;
		}
		check_ref(&h, ref);
		add_n(&h, ref, v + 1000, 3, true); /* its octave, after the change of form */
		add_n(&h, ref, v, 70000, way % 2 == 0);
		check_ref(&h, ref);
		ana_hist_free(&h);
	}
}

/* A counter of a dense octave passing 65,535 (its block goes from 16-bit
 * to 32-bit counters): by single adds, by batches of ANA_HPEND (the last
 * increment of a batch, and one in its middle), and by one large add. */
static void test_ana_hist_block_count_overflow(void **state)
{
	(void)state;
	static uint64_t ref[HB];
	const uint64_t v = 50000, w = 50100; /* the same octave */
	for (int way = 0; way < 4; way++) {
		struct ana_hist h = { 0 };
		memset(ref, 0, sizeof(ref));
		add_scatter(&h, ref);
		make_dense(&h, ref, v);
		uint32_t have = (uint32_t)ref[ana_hist_index(v)];
		if (way == 0 || way == 1) {
			add_n(&h, ref, v, 65535 - have, way == 0); /* up to the 16-bit maximum */
			check_ref(&h, ref);
			add_n(&h, ref, v, 1, way == 0);
		} else if (way == 2) {
			/* batches whose middle value wraps the counter */
			add_n(&h, ref, v, 65535 - have - 15, true);
			uint16_t idx[ANA_HPEND];
			for (uint32_t k = 0; k < ANA_HPEND; k++)
				idx[k] = (uint16_t)ana_hist_index(k % 2 ? w : v);
			ana_hist_add_idx(&h, idx, ANA_HPEND); /* v: 16 more */
			ref[ana_hist_index(v)] += 16;
			ref[ana_hist_index(w)] += 15;
		} else {
			ana_hist_add(&h, v, 3000000);
			ref[ana_hist_index(v)] += 3000000;
		}
		check_ref(&h, ref);
		/* the widened block takes every kind of add */
		add_n(&h, ref, v, 100, true);
		add_n(&h, ref, w, 100, false);
		ana_hist_add(&h, w, 70000);
		ref[ana_hist_index(w)] += 70000;
		check_ref(&h, ref);
		ana_hist_free(&h);
	}
}

/* Merges whose sums pass 65,535: pair + pair, narrow + narrow blocks,
 * wide into narrow, wide into sparse, narrow and pairs into wide. */
static void test_ana_hist_merge_count_overflow(void **state)
{
	(void)state;
	static uint64_t ra[HB], rb[HB];
	const uint64_t s = 3333333, d = 50000; /* a sparse and a dense octave */
	for (int way = 0; way < 5; way++) {
		struct ana_hist a = { 0 }, b = { 0 };
		memset(ra, 0, sizeof(ra));
		memset(rb, 0, sizeof(rb));
		add_scatter(&a, ra);
		add_scatter(&b, rb);
		switch (way) {
		case 0: /* pair + pair */
			add_n(&a, ra, s, 40000, true);
			add_n(&b, rb, s, 40000, true);
			break;
		case 1: /* narrow + narrow: the fast loop stops at the sum that does not fit */
			make_dense(&a, ra, d);
			make_dense(&b, rb, d);
			add_n(&a, ra, d, 40000, false);
			add_n(&b, rb, d, 40000, false);
			add_n(&a, ra, d + 300, 60000, false); /* later in the block */
			add_n(&b, rb, d + 300, 6000, false);
			break;
		case 2: /* wide into narrow */
			make_dense(&a, ra, d);
			make_dense(&b, rb, d);
			add_n(&b, rb, d, 70000, false);
			break;
		case 3: /* wide into sparse: a pair of a, then 16 bits are not enough */
			add_n(&a, ra, d, 5, true);
			make_dense(&b, rb, d);
			add_n(&b, rb, d, 70000, false);
			break;
		default: /* pairs and a narrow block into wide */
			make_dense(&a, ra, d);
			add_n(&a, ra, d, 70000, false);
			make_dense(&b, rb, d);
			add_n(&b, rb, d + 100, 65000, false);
			add_n(&b, rb, s, 65535, true);
			add_n(&a, ra, s, 1, true);
			break;
		}
		ana_hist_merge(&a, &b);
		for (uint32_t i = 0; i < HB; i++)
			ra[i] += rb[i];
		check_ref(&a, ra);
		check_ref(&b, rb); /* the source is unchanged */
		ana_hist_merge(&b, &a); /* and the other way round */
		for (uint32_t i = 0; i < HB; i++)
			rb[i] += ra[i];
		check_ref(&b, rb);
		ana_hist_free(&a);
		ana_hist_free(&b);
	}
}

/* An octave stays pairs while it holds fewer than ANA_HIST_HOT values,
 * however they spread over its buckets, and gets its block with the
 * ANA_HIST_HOT-th: all in distinct buckets, all in one, or added in bulk.
 * The ranks are the same before and after. */
static void test_ana_hist_dense_at_hot(void **state)
{
	(void)state;
	const uint64_t base = 1u << 20; /* octave 20: buckets 2^13 ns wide */
	for (int form = 0; form < 3; form++) {
		struct ana_hist h = { 0 };
		for (uint32_t k = 0; k + 1 < ANA_HIST_HOT; k++) {
			uint64_t v = form == 0 ? base + ((uint64_t)k << 13) : base;
			if (form < 2)
				ana_hist_add(&h, v, 1);
			else if (k == 0)
				ana_hist_add(&h, v, ANA_HIST_HOT - 1);
		}
		assert_null(h.blk);
		assert_int_equal(h.nsp, form == 0 ? ANA_HIST_HOT - 1 : 1);
		uint64_t lo = ana_hist_at_rank(&h, 1, 0, UINT64_MAX), hi = ana_hist_at_rank(&h, ANA_HIST_HOT - 1, 0, UINT64_MAX);
		ana_hist_add(&h, base + (127ull << 13), 1); /* the octave's last bucket */
		assert_non_null(h.blk);
		assert_int_equal(h.nsp, 0);
		assert_int_equal(ana_hist_at_rank(&h, 1, 0, UINT64_MAX), lo);
		assert_int_equal(ana_hist_at_rank(&h, ANA_HIST_HOT - 1, 0, UINT64_MAX), hi);
		assert_int_equal(ana_hist_at_rank(&h, ANA_HIST_HOT, 0, UINT64_MAX), bucket_mid(ana_hist_index(base + (127ull << 13))));
		ana_hist_free(&h);
	}
}

/* More distinct buckets than the pair list holds, over most octaves, each
 * octave short of ANA_HIST_HOT values: the full list sends its biggest
 * octaves to blocks. Every rank equals a sorted array's, for a histogram
 * built by adds, by batches and by merging three parts. */
static void test_ana_hist_many_buckets_ranks(void **state)
{
	(void)state;
	enum { NDIST = 45 * 13, N = NDIST + 90 };
	static uint64_t v[N];
	struct ana_hist h = { 0 }, b = { 0 }, p[3] = { { 0 } };
	uint64_t x = 0x9e3779b97f4a7c15ull;
	uint16_t idx[ANA_HPEND];
	uint32_t ni = 0;
	for (int i = 0; i < N; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		/* 13 distinct buckets in each octave of 2^7 .. 2^52 ns, the octaves
		 * interleaved (585 pairs wanted), then two repeats an octave (15
		 * values: each octave short of ANA_HIST_HOT) */
		unsigned e = 7 + (unsigned)(i % 45), j = 6 * (unsigned)(i / 45), w = e - ANA_SUB_BITS;
		uint64_t in_bucket = (x >> 8) & ((1ull << w) - 1);
		v[i] = i < NDIST ? (1ull << e) + ((uint64_t)j << w) + in_bucket : v[i - NDIST];
		ana_hist_add(&h, v[i], 1);
		ana_hist_add(&p[i % 3], v[i], 1);
		idx[ni++] = (uint16_t)ana_hist_index(v[i]);
		if (ni == ANA_HPEND || i == N - 1) {
			ana_hist_add_idx(&b, idx, ni);
			ni = 0;
		}
	}
	assert_non_null(h.blk);
	assert_true(h.nsp > ANA_HIST_SPARSE / 2 && h.nsp <= ANA_HIST_SPARSE);
	ana_hist_merge(&p[0], &p[1]);
	ana_hist_merge(&p[0], &p[2]);
	qsort(v, N, sizeof(v[0]), cmp_u64);
	for (uint64_t rank = 1; rank <= N; rank++) {
		uint64_t mid = bucket_mid(ana_hist_index(v[rank - 1]));
		assert_int_equal(ana_hist_at_rank(&h, rank, 0, UINT64_MAX), mid);
		assert_int_equal(ana_hist_at_rank(&b, rank, 0, UINT64_MAX), mid);
		assert_int_equal(ana_hist_at_rank(&p[0], rank, 0, UINT64_MAX), mid);
	}
	assert_int_equal(ana_hist_at_rank(&h, N + 1, 0, UINT64_MAX), UINT64_MAX);
	/* many ranks in one walk, repeats and one past the end included, in
	 * narrow and wide blocks and pairs: each as its own walk gives it */
	const uint64_t many[] = { 1, 2, 2, 37, 300, 301, N / 2, N - 1, N, N, N + 1, N + 7 };
	uint64_t got[PT_ARRAY_SIZE(many)];
	for (int k = 0; k < 6; k++) {
		const struct ana_hist *hk = k % 3 == 0 ? &h : k % 3 == 1 ? &b : &p[0];
		const uint64_t lo = k < 3 ? 0 : 1000, hi = k < 3 ? UINT64_MAX : 1ull << 50; /* clamped or not */
		ana_hist_at_ranks(hk, many, PT_ARRAY_SIZE(many), lo, hi, got);
		for (size_t i = 0; i < PT_ARRAY_SIZE(many); i++)
			assert_int_equal(got[i], ana_hist_at_rank(hk, many[i], lo, hi));
	}
	const double q[] = { 0.0, 0.25, 0.5, 0.9, 0.99, 1.0 };
	uint64_t qv[PT_ARRAY_SIZE(q)];
	ana_hist_quantiles(&h, q, PT_ARRAY_SIZE(q), N, 0, UINT64_MAX, qv);
	for (size_t i = 0; i < PT_ARRAY_SIZE(q); i++)
		assert_int_equal(qv[i], ana_hist_quantile(&h, q[i], N, 0, UINT64_MAX));
	ana_hist_free(&h);
	ana_hist_free(&b);
	for (int k = 0; k < 3; k++)
		ana_hist_free(&p[k]);
}

static void test_ana_run_counters(void **state)
{
	const struct ana_fixture *b = *state;
	const struct ana_thread *t0 = &b->res.threads[0], *t1 = &b->res.threads[1], *t2 = &b->res.threads[2];
	assert_int_equal(t0->ncounters, 2);
	assert_int_equal(t0->counters[0].id, ID_MEM);
	assert_int_equal(t0->counters[0].samples, 3);
	assert_int_equal(t0->counters[0].last, 7);
	assert_int_equal(t0->counters[0].min, -5);
	assert_int_equal(t0->counters[0].max, 10);
	assert_int_equal(t0->counters[1].id, ID_QUEUE);
	assert_int_equal(t0->counters[1].samples, 1);
	assert_int_equal(t0->counters[1].last, 3);
	assert_int_equal(t1->ncounters, 1);
	assert_int_equal(t1->counters[0].id, ID_QUEUE);
	assert_int_equal(t1->counters[0].last, 42);
	assert_int_equal(t1->counters[0].min, 42);
	assert_int_equal(t1->counters[0].max, 42);
	assert_int_equal(t2->ncounters, 0);
}

/*
 * Regression: flat rows are recursion-safe for time (only the outermost A
 * adds to the total), so their inclusive metrics and transfers must be too
 * (doc/analyzer-output.md §2, fixed in b47a325): otherwise
 * GB/s = inclusive bytes / inclusive ns divides the bytes of A and of the
 * inner A (which are already inside the outer A's) by the outer A's time
 * alone. Thread 0: outer A holds r1200 w500 f4000 in all, the inner A the
 * same amounts: the flat row of A must read 1200/500/4000, not twice that.
 */
static void test_ana_run_flat_metrics_recursion_safe(void **state)
{
	const struct ana_fixture *b = *state;
	const struct ana_agg *a0 = flat_agg(&b->res, 0, "A"), *a = flat_agg(&b->res, -1, "A");
	snprintf(g_ctx, sizeof(g_ctx), "flat A");
	assert_int_equal(a0->metric_incl[ANA_READ], 1200);
	assert_int_equal(a0->metric_incl[ANA_WRITTEN], 500);
	assert_int_equal(a0->metric_incl[ANA_FLOPS], 4000);
	assert_int_equal(a->metric_incl[ANA_READ], 1200);
	assert_int_equal(a->metric_incl[ANA_WRITTEN], 500);
	assert_int_equal(a->metric_incl[ANA_FLOPS], 6000);
	struct ana_row w;
	ana_row_compute(&b->res, a, &w);
	assert_near(w.gbps, 1700.0 / 4400.0, 1e-15);
	assert_near(w.gflops, 6000.0 / 4400.0, 1e-15);
}

/*
 * A per-thread chunk sequence gap drops the thread's open stack: those
 * sections count as open at end and are not aggregated; an END after the
 * gap whose BEGIN was before it is unmatched; sections after the gap start
 * a fresh call path. Thread 0: seq 0 = A[0, ...] { B[100,200] }, seq 2 =
 * C[1000,1100], END A at 1200; seq 1 is missing.
 */
static void test_ana_run_sequence_gap_drops_stack(void **state)
{
	(void)state;
	static const struct op ops0[] = { B(0, ID_A), B(100, ID_B), E(200, ID_B) };
	static const struct op ops2[] = { B(1000, ID_C), E(1100, ID_C), E(1200, ID_A) };
	const char *path = tu_path("gap.ptz");
	struct tb b;
	tb_open(&b, path, "ana-test --gap");
	tb_meta(&b, 1);
	tb_events(&b, 0, ops0, PT_ARRAY_SIZE(ops0), 0);
	b.seq[0]++; /* seq 1 never written */
	tb_events(&b, 0, ops2, PT_ARRAY_SIZE(ops2), 0);
	tb_close(&b);
	struct ana_result r;
	ana_test_run(path, &all_opts, &r);
	assert_int_equal(r.threads[0].gaps, 1);
	assert_int_equal(r.open_at_end, 1);
	assert_int_equal(r.unmatched_ends, 1);
	assert_int_equal(r.sections, 2);
	assert_false(r.corrupt);
	assert_true(pt_reader_problem_count(r.rd) >= 1);
	assert_int_equal(tree_agg(&r, -1, "A;B")->count, 1);
	assert_int_equal(tree_agg(&r, -1, "A")->count, 0);
	assert_int_equal(tree_agg(&r, -1, "C")->count, 1);
	assert_int_equal(tree_agg(&r, -1, "C")->total_ns, 100);
	assert_int_equal(node_of(&r, &r.merged, "A;C"), UINT32_MAX);
	assert_int_equal(r.thread_span_sum_ns, 1200);
	ana_result_free(&r);
	unlink(path);
}

/* A thread whose last BEGIN and END are decoded by the fused loop and
 * followed by more than FMT_DEC_FAST_SLACK bytes of METRIC records (no tick
 * of their own): its span still ends at that END, which the loop stores
 * before it hands the tail of the chunk to on_record(). */
static void test_ana_run_span_ends_at_fast_end(void **state)
{
	(void)state;
	static const struct op ops[] = {
		B(0, ID_A), E(100, ID_A), B(200, ID_B), E(300, ID_B),
		M(RD, 1), M(RD, 1), M(RD, 1), M(RD, 1), M(RD, 1), M(RD, 1), M(RD, 1), M(RD, 1),
		M(RD, 1), M(RD, 1), M(RD, 1), M(RD, 1), M(RD, 1), M(RD, 1), M(RD, 1), M(RD, 1),
	};
	const char *path = tu_path("fast-span.ptz");
	struct tb b;
	tb_open(&b, path, "ana-test --fast-span");
	tb_meta(&b, 1);
	tb_events(&b, 0, ops, PT_ARRAY_SIZE(ops), 0);
	tb_close(&b);
	struct ana_result r;
	ana_test_run(path, &all_opts, &r);
	assert_int_equal(r.records, PT_ARRAY_SIZE(ops));
	assert_int_equal(r.threads[0].unattributed[ANA_READ], 16);
	assert_int_equal(r.thread_span_sum_ns, 300);
	assert_int_equal(r.threads[0].last_ns - r.threads[0].first_ns, 300);
	ana_result_free(&r);
	unlink(path);
}

/* ==== Options: thread, window, domain ==== */

static void test_ana_run_one_thread(void **state)
{
	const struct ana_fixture *b = *state;
	struct ana_options o = all_opts;
	struct ana_result r;
	o.thread = 1;
	ana_test_run(b->path, &o, &r);
	assert_int_equal(r.thread_span_sum_ns, SPAN1);
	assert_int_equal(r.sections, 6);
	assert_int_equal(r.records, 14);
	assert_int_equal(r.unmatched_ends, 0);
	assert_int_equal(r.open_at_end, 0);
	assert_int_equal(r.threads[0].sections, 0);
	assert_int_equal(r.threads[2].sections, 0);
	/* the merged view and thread 1's view are thread 1's rows, share over its span */
	char what[64];
	for (size_t i = 0; i < PT_ARRAY_SIZE(x_tree_t1); i++) {
		snprintf(what, sizeof(what), "--thread 1: tree %s", x_tree_t1[i].key);
		check_agg(&r, tree_agg(&r, -1, x_tree_t1[i].key), &x_tree_t1[i], what);
		check_agg(&r, tree_agg(&r, 1, x_tree_t1[i].key), &x_tree_t1[i], what);
	}
	for (size_t i = 0; i < PT_ARRAY_SIZE(x_flat_t1); i++) {
		snprintf(what, sizeof(what), "--thread 1: flat %s", x_flat_t1[i].key);
		check_agg(&r, flat_agg(&r, -1, x_flat_t1[i].key), &x_flat_t1[i], what);
	}
	assert_int_equal(r.by_name[ID_KERN].count, 0);
	assert_int_equal(r.by_name[ID_C].count, 0);
	ana_result_free(&r);
}

/* Sections lying fully in [since, until] (ns after the header's start
 * tick, ends included); the spans, the share denominator, are unchanged. */
static void test_ana_run_window(void **state)
{
	const struct ana_fixture *b = *state;
	struct ana_options o = all_opts;
	struct ana_result r;
	o.since_ns = 1000;
	o.until_ns = 3000;
	ana_test_run(b->path, &o, &r);
	static const struct xr tree[] = {
		{ "A;C", { 1000 }, 1, 1000, 1000, { 0 }, { 0 }, { 3000, 1000 }, { 3000, 1000 }, 0 },
		{ "lossy", { 1000 }, 1, 1000, 800, { 0 }, { 0 }, { 0 }, { 0 }, 1 },
		{ "lossy;B", { 200 }, 1, 200, 200, { 0 }, { 0 }, { 0 }, { 0 }, 1 },
		{ "B", { 100 }, 1, 100, 100, { 0 }, { 0 }, { 0 }, { 0 }, 0 },
		{ "E", { 200 }, 1, 200, 200, { 0 }, { 0 }, { 0 }, { 0 }, 0 },
	};
	static const struct xr flat[] = {
		{ "C", { 1000 }, 1, 1000, 1000, { 0 }, { 0 }, { 3000, 1000 }, { 3000, 1000 }, 0 },
		{ "lossy", { 1000 }, 1, 1000, 800, { 0 }, { 0 }, { 0 }, { 0 }, 1 },
		{ "B", { 200, 100 }, 2, 300, 300, { 0 }, { 0 }, { 0 }, { 0 }, 1 },
		{ "E", { 200 }, 1, 200, 200, { 0 }, { 0 }, { 0 }, { 0 }, 0 },
	};
	char what[64];
	for (size_t i = 0; i < PT_ARRAY_SIZE(tree); i++) {
		snprintf(what, sizeof(what), "window tree %s", tree[i].key);
		check_agg(&r, tree_agg(&r, -1, tree[i].key), &tree[i], what);
	}
	for (size_t i = 0; i < PT_ARRAY_SIZE(flat); i++) {
		snprintf(what, sizeof(what), "window flat %s", flat[i].key);
		check_agg(&r, flat_agg(&r, -1, flat[i].key), &flat[i], what);
	}
	assert_int_equal(tree_agg(&r, -1, "A")->count, 0);
	assert_int_equal(tree_agg(&r, -1, "A;A")->count, 0);
	assert_int_equal(r.by_name[ID_A].count, 0);
	assert_int_equal(r.by_name[ID_KERN].count, 0);
	assert_int_equal(r.thread_span_sum_ns, SPAN_SUM);
	ana_result_free(&r);

	/* ends are included: [0, 3000] holds thread 0's outer A, [1500, ...] C at 1500 */
	o.since_ns = 0;
	o.until_ns = 3000;
	ana_test_run(b->path, &o, &r);
	assert_int_equal(tree_agg(&r, -1, "A")->count, 3);
	assert_int_equal(tree_agg(&r, -1, "A")->total_ns, 4400);
	assert_int_equal(tree_agg(&r, -1, "E")->count, 2); /* thread 1's E ends at 3700 */
	ana_result_free(&r);
	o.since_ns = 1500;
	o.until_ns = 0; /* no limit */
	ana_test_run(b->path, &o, &r);
	assert_int_equal(tree_agg(&r, -1, "A;C")->count, 1);
	assert_int_equal(tree_agg(&r, -1, KERN)->count, 3);
	assert_int_equal(tree_agg(&r, -1, "E")->count, 1); /* 3000..3700; 1100..1300 starts too early */
	ana_result_free(&r);
	o.since_ns = 1501;
	ana_test_run(b->path, &o, &r);
	assert_int_equal(tree_agg(&r, -1, "A;C")->count, 0);
	ana_result_free(&r);
}

/*
 * With a window that cuts off an outer A, the inner A (fully inside) is the
 * outermost A that the window keeps: its time belongs in the flat total.
 * [100, 1000]: thread 0's inner A (900 ns, inside the outer A 0..3000) and
 * thread 2's A (400 ns): flat A = 2 occurrences, 1300 ns, and the inner A's
 * inclusive metrics. Counting the inner A as nested (its outer A is open on
 * the stack, though outside the window) leaves the window's flat A with
 * 400 ns and no metrics while A ran through the whole window.
 */
static void test_ana_run_window_flat_recursion(void **state)
{
	const struct ana_fixture *b = *state;
	struct ana_options o = all_opts;
	struct ana_result r;
	o.since_ns = 100;
	o.until_ns = 1000;
	ana_test_run(b->path, &o, &r);
	snprintf(g_ctx, sizeof(g_ctx), "--since 100ns --until 1000ns, flat A");
	EQ(tree_agg(&r, -1, "A;A")->count, 1);
	EQ(tree_agg(&r, -1, "A;A")->total_ns, 900);
	EQ(tree_agg(&r, -1, "A")->total_ns, 400);
	EQ(r.by_name[ID_A].count, 2);
	EQ(r.by_name[ID_A].self_ns, 400 + 100);
	EQ(r.by_name[ID_A].total_ns, 900 + 400);
	EQ(r.by_name[ID_A].metric_incl[ANA_READ], 1200); /* the inner A's r1000 + r200 */
	EQ(r.by_name[ID_A].metric_incl[ANA_FLOPS], 4000);
	ana_result_free(&r);
}

/*
 * The two ways flat inclusive sums are computed give the same figures:
 * with nothing filtered they come from the finished tree (a node counts
 * when no ancestor has its name), with a window from the pass (an
 * occurrence counts when no enclosing kept occurrence has its name). A
 * window wider than the trace keeps everything, so every flat row of every
 * view must be equal. The trace is random and deeply recursive (4 names,
 * A, B, C and KERN,
 * depth up to 12, metrics and transfers on a third of the sections, two
 * threads, several chunks each), so recursion chains such as A;B;A;A;C;A
 * are common.
 */
static void write_recursive(const char *path)
{
	struct tb b;
	tb_open(&b, path, "ana-test --recursive");
	tb_meta(&b, 2);
	uint64_t rng = 0x2545f4914f6cdd1dull;
	for (uint32_t t = 0; t < 2; t++) {
		uint32_t stack[12], depth = 0;
		uint64_t tick = T0 + 10;
		for (int i = 0; i < 6000; i++) {
			rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
			tick += 1 + rng % 97;
			if (depth < 12 && (depth == 0 || (rng >> 8) % 5 < 3)) {
				uint32_t id = ID_A + (uint32_t)((rng >> 16) % 4); /* ids 1..4 */
				fmt_enc_begin(&b.e, tick, id);
				stack[depth++] = id;
				if ((rng >> 24) % 3 == 0)
					fmt_enc_metric(&b.e, 1 + (uint32_t)((rng >> 28) % 3), (rng >> 32) % 5000);
				if ((rng >> 40) % 3 == 0)
					fmt_enc_transfer(&b.e, 1 + (uint32_t)((rng >> 44) % 2), (rng >> 48) % 9000);
			} else {
				fmt_enc_end(&b.e, tick, stack[--depth]);
			}
			if (i % 1000 == 999)
				tb_flush(&b, FMT_CHUNK_EVENTS, t);
		}
		while (depth)
			fmt_enc_end(&b.e, ++tick, stack[--depth]);
		tb_flush(&b, FMT_CHUNK_EVENTS, t);
	}
	tb_close(&b);
}

/* same_rows() plus the inclusive metric and transfer sums. */
static void same_flat(const struct ana_result *a, const struct ana_result *b, const struct ana_agg *x,
		      const struct ana_agg *y, uint32_t id)
{
	snprintf(g_ctx, sizeof(g_ctx), "flat id %u", id);
	same_rows(a, b, x, y);
	for (int k = 0; k < ANA_NMETRIC; k++)
		EQ(x->metric_incl[k], y->metric_incl[k]);
	for (int k = 0; k < ANA_DIRS; k++)
		EQ(ana_xfer_incl(x, k), ana_xfer_incl(y, k));
}

static void test_ana_run_flat_incl_two_ways(void **state)
{
	(void)state;
	char path[4200];
	snprintf(path, sizeof(path), "%s", tu_path("recursive.ptz"));
	write_recursive(path);
	struct ana_options o = all_opts;
	struct ana_result all, win;
	ana_test_run(path, &o, &all);
	o.until_ns = 1000000000; /* far past the last tick: a window that keeps everything */
	ana_test_run(path, &o, &win);
	assert_true(all.sections > 5000);
	uint64_t recursive = 0; /* rows whose inclusive total is less than the sum over their paths */
	for (uint32_t id = 1; id < 5; id++) {
		same_flat(&all, &win, &all.by_name[id], &win.by_name[id], id);
		for (size_t t = 0; t < all.nthreads; t++)
			same_flat(&all, &win, &all.by_name_thread[t][id], &win.by_name_thread[t][id], id);
		uint64_t paths = 0;
		for (uint32_t n = 1; n < all.merged.count; n++)
			if (all.merged.n[n].id == id)
				paths += all.merged.n[n].agg.total_ns;
		recursive += all.by_name[id].total_ns < paths;
		assert_true(all.by_name[id].total_ns <= paths);
	}
	EQ(recursive, 4); /* every name recursed: the check above was not vacuous */
	ana_result_free(&all);
	ana_result_free(&win);
}

static void test_ana_run_domain(void **state)
{
	const struct ana_fixture *b = *state;
	struct ana_options o = all_opts;
	struct ana_result r;
	o.domain = "gpu";
	ana_test_run(b->path, &o, &r);
	for (uint32_t id = 1; id < r.nnames; id++)
		assert_int_equal(r.by_name[id].count, id == ID_KERN ? 3 : 0);
	check_agg(&r, tree_agg(&r, -1, KERN), &x_tree_all[5], "domain gpu");
	ana_result_free(&r);
	o.domain = ""; /* the default domain: everything but KERN */
	ana_test_run(b->path, &o, &r);
	assert_int_equal(r.by_name[ID_KERN].count, 0);
	assert_int_equal(r.by_name[ID_A].count, 4);
	ana_result_free(&r);
	o.domain = "nosuch";
	ana_test_run(b->path, &o, &r);
	for (uint32_t id = 1; id < r.nnames; id++)
		assert_int_equal(r.by_name[id].count, 0);
	ana_result_free(&r);
}

/* ==== Percentiles ==== */

#define NP 1000u
static uint64_t p_dur(uint32_t i) { return 1000u + 13u * (uint64_t)i * i; } /* 1 us .. 13 ms */

/* P: 1000 occurrences, alternately on threads 0 and 1 (thread 1 starts
 * 5 ns later), in scrambled order, in chunks of about 150 sections cut
 * between a BEGIN and its END. S: durations 1..100 ns on
 * thread 0 (exact buckets). */
static void write_pct(const char *path)
{
	struct tb b;
	size_t cap = 2 * NP + 400;
	struct op *ops[2] = { calloc(cap, sizeof(struct op)), calloc(cap, sizeof(struct op)) };
	size_t n[2] = { 0, 0 };
	uint64_t cur[2] = { 0, 5 };
	assert_non_null(ops[0]);
	assert_non_null(ops[1]);
	for (uint32_t j = 0; j < NP; j++) {
		uint32_t i = (j * 379u) % NP, t = j % 2;
		ops[t][n[t]++] = (struct op)B(cur[t], ID_P);
		if (j % 150 == 149) /* this section's END goes to the next chunk */
			ops[t][n[t]++] = (struct op)CUT;
		ops[t][n[t]++] = (struct op)E(cur[t] + p_dur(i), ID_P);
		cur[t] += p_dur(i) + 10;
	}
	for (uint32_t v = 1; v <= 100; v++) {
		ops[0][n[0]++] = (struct op)B(cur[0], ID_S);
		ops[0][n[0]++] = (struct op)E(cur[0] + v, ID_S);
		cur[0] += v + 10;
	}
	tb_open(&b, path, "ana-test --percentiles");
	tb_meta(&b, 2);
	size_t pos[2] = { 0, 0 };
	while (pos[0] < n[0] || pos[1] < n[1])
		for (uint32_t t = 0; t < 2; t++)
			if (pos[t] < n[t])
				pos[t] = tb_events(&b, t, ops[t], n[t], pos[t]);
	tb_close(&b);
	free(ops[0]);
	free(ops[1]);
}

static void test_ana_hist_quantile_within_error(void **state)
{
	(void)state;
	const char *path = tu_path("pct.ptz");
	snprintf(g_ctx, sizeof(g_ctx), "percentile trace");
	write_pct(path);
	struct ana_result r;
	ana_test_run(path, &all_opts, &r);
	uint64_t *v = malloc(NP * sizeof(*v));
	assert_non_null(v);
	for (uint32_t i = 0; i < NP; i++)
		v[i] = p_dur(i);
	double mean, std;
	mean_std(v, NP, &mean, &std);
	const struct ana_agg *p = &r.by_name[ID_P];
	struct ana_row w;
	ana_row_compute(&r, p, &w);
	assert_int_equal(p->count, NP);
	assert_int_equal(p->min_ns, p_dur(0));
	assert_int_equal(p->max_ns, p_dur(NP - 1));
	assert_int_equal(p->first_ns, p_dur(0)); /* thread 0's first, 5 ns before thread 1's */
	assert_near(w.mean, mean, 1e-9 * mean);
	assert_near(w.std, std, 1e-9 * std);
	uint64_t sum = 0;
	for (uint32_t i = 0; i < NP; i++)
		sum += v[i];
	assert_int_equal(p->total_ns, sum);
	assert_near(w.rest_mean, (double)(sum - p_dur(0)) / (NP - 1), 1e-6);
	check_pct("P p50", w.p50, nearest_rank(v, NP, 50)); /* v is sorted: p_dur grows */
	check_pct("P p90", w.p90, nearest_rank(v, NP, 90));
	check_pct("P p99", w.p99, nearest_rank(v, NP, 99));
	/* same for each thread's half and for every percentile 1..100 of the merged histogram */
	for (unsigned q = 1; q <= 100; q++) {
		uint64_t got = ana_hist_quantile(&p->hist, q / 100.0, p->count, p->min_ns, p->max_ns);
		char what[32];
		snprintf(what, sizeof(what), "P p%u", q);
		check_pct(what, got, nearest_rank(v, NP, q));
	}
	for (uint32_t t = 0; t < 2; t++) {
		uint64_t h[NP / 2];
		size_t k = 0;
		for (uint32_t j = t; j < NP; j += 2)
			h[k++] = p_dur((j * 379u) % NP);
		qsort(h, k, sizeof(*h), cmp_u64);
		ana_row_compute(&r, &r.by_name_thread[t][ID_P], &w);
		check_pct("thread P p50", w.p50, nearest_rank(h, k, 50));
		check_pct("thread P p90", w.p90, nearest_rank(h, k, 90));
		check_pct("thread P p99", w.p99, nearest_rank(h, k, 99));
	}
	/* below 2^ANA_SUB_BITS ns the buckets are exact */
	ana_row_compute(&r, &r.by_name[ID_S], &w);
	assert_int_equal(r.by_name[ID_S].count, 100);
	assert_int_equal(w.p50, 50);
	assert_int_equal(w.p90, 90);
	assert_int_equal(w.p99, 99);
	assert_int_equal(r.unmatched_ends, 0);
	assert_int_equal(r.open_at_end, 0);
	assert_int_equal(r.sections, NP + 100);
	free(v);
	ana_result_free(&r);
	unlink(path);
}

/* ==== CSV ==== */

struct csv {
	char **f;     /* fields, row-major */
	size_t *nf;   /* fields per row */
	size_t *first; /* index of each row's first field */
	size_t rows, nfields;
};

/* RFC 4180: fields separated by commas, records by LF or CRLF; a quoted
 * field may hold commas, CR, LF and doubled quotes. */
static void csv_load(const char *path, struct csv *c)
{
	memset(c, 0, sizeof(*c));
	FILE *in = fopen(path, "rb");
	assert_non_null(in);
	size_t cap = 0, fcap = 0, rcap = 0, len = 0;
	char *cur = NULL;
	int ch, quoted = 0, in_q = 0, field_open = 0;
	size_t row_start = 0;
#define PUSH_CHAR(x)                                                   \
	do {                                                           \
		if (len + 2 > cap) {                                   \
			cap = cap ? cap * 2 : 64;                      \
			cur = realloc(cur, cap);                       \
			assert_non_null(cur);                          \
		}                                                      \
		cur[len++] = (char)(x);                                \
	} while (0)
#define END_FIELD()                                                         \
	do {                                                                \
		if (c->nfields == fcap) {                                   \
			fcap = fcap ? fcap * 2 : 256;                       \
			c->f = realloc(c->f, fcap * sizeof(*c->f));         \
			assert_non_null(c->f);                              \
		}                                                           \
		PUSH_CHAR(0);                                               \
		c->f[c->nfields++] = strdup(cur);                           \
		len = 0;                                                    \
		quoted = 0;                                                 \
		field_open = 0;                                             \
	} while (0)
#define END_ROW()                                                                         \
	do {                                                                              \
		if (c->rows == rcap) {                                                    \
			rcap = rcap ? rcap * 2 : 64;                                      \
			c->nf = realloc(c->nf, rcap * sizeof(*c->nf));                    \
			c->first = realloc(c->first, rcap * sizeof(*c->first));          \
			assert_non_null(c->nf);                                           \
			assert_non_null(c->first);                                        \
		}                                                                         \
		c->first[c->rows] = row_start;                                            \
		c->nf[c->rows++] = c->nfields - row_start;                                \
		row_start = c->nfields;                                                   \
	} while (0)
	while ((ch = fgetc(in)) != EOF) {
		if (in_q) {
			if (ch == '"') {
				int nx = fgetc(in);
				if (nx == '"') {
					PUSH_CHAR('"');
					continue;
				}
				in_q = 0;
				if (nx == EOF)
					break;
				ch = nx;
			} else {
				PUSH_CHAR(ch);
				continue;
			}
		}
		if (ch == '"' && !field_open && len == 0 && !quoted) {
			in_q = quoted = field_open = 1;
		} else if (ch == ',') {
			END_FIELD();
		} else if (ch == '\r') {
			continue;
		} else if (ch == '\n') {
			END_FIELD();
			END_ROW();
		} else {
			if (quoted)
				fail_msg("%s: character after a closing quote", path);
			field_open = 1;
			PUSH_CHAR(ch);
		}
	}
	assert_false(in_q);
	if (field_open || len || c->nfields > row_start) {
		END_FIELD();
		END_ROW();
	}
#undef PUSH_CHAR
#undef END_FIELD
#undef END_ROW
	free(cur);
	fclose(in);
}

static void csv_free(struct csv *c)
{
	for (size_t i = 0; i < c->nfields; i++)
		free(c->f[i]);
	free(c->f);
	free(c->nf);
	free(c->first);
}

static const char *csv_at(const struct csv *c, size_t row, const char *col)
{
	for (size_t k = 0; k < c->nf[0]; k++)
		if (strcmp(c->f[k], col) == 0) {
			assert_true(k < c->nf[row]);
			return c->f[c->first[row] + k];
		}
	fail_msg("CSV has no column %s", col);
	return NULL;
}

static uint64_t csv_u64(const struct csv *c, size_t row, const char *col)
{
	const char *s = csv_at(c, row, col);
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (*s == 0 || *end)
		fail_msg("CSV %s = '%s' is not an integer", col, s);
	return v;
}

static double csv_dbl(const struct csv *c, size_t row, const char *col)
{
	const char *s = csv_at(c, row, col);
	char *end;
	double v = strtod(s, &end);
	if (*s == 0 || *end)
		fail_msg("CSV %s = '%s' is not a number", col, s);
	return v;
}

/* Row of (view, thread, key) where key is the path (tree) or the name (flat). */
static size_t csv_find(const struct csv *c, const char *view, const char *thread, const char *key)
{
	size_t found = 0;
	for (size_t r = 1; r < c->rows; r++)
		if (strcmp(csv_at(c, r, "view"), view) == 0 && strcmp(csv_at(c, r, "thread"), thread) == 0 &&
		    strcmp(csv_at(c, r, strcmp(view, "tree") == 0 ? "path" : "name"), key) == 0) {
			if (found)
				fail_msg("CSV: two rows for %s %s %s", view, thread, key);
			found = r;
		}
	if (!found)
		fail_msg("CSV: no row for %s %s %s", view, thread, key);
	return found;
}

static const char *last_name(const char *path)
{
	const char *s = strrchr(path, ';');
	return s ? s + 1 : path;
}

static void check_csv_row(const struct csv *c, size_t r, const struct xr *x, uint64_t span_sum, int tree)
{
	struct xd d;
	derive(x, span_sum, &d);
	snprintf(g_ctx, sizeof(g_ctx), "CSV %s %s %s", csv_at(c, r, "view"), csv_at(c, r, "thread"), x->key);
	STREQ(csv_at(c, r, "name"), tree ? last_name(x->key) : x->key);
	STREQ(csv_at(c, r, "domain"), strcmp(last_name(x->key), KERN) == 0 ? "gpu" : "");
	if (tree) {
		size_t depth = 1;
		for (const char *p = x->key; *p; p++)
			depth += *p == ';';
		EQ(csv_u64(c, r, "depth"), depth);
	}
	EQ(csv_u64(c, r, "count"), (uint64_t)x->nd);
	EQ(csv_u64(c, r, "total_ns"), x->total);
	EQ(csv_u64(c, r, "self_ns"), x->self);
	EQ(csv_u64(c, r, "min_ns"), d.min);
	EQ(csv_u64(c, r, "max_ns"), d.max);
	EQ(csv_u64(c, r, "first_ns"), x->d[0]);
	check_pct("CSV p50", csv_u64(c, r, "p50_ns"), d.p50);
	check_pct("CSV p90", csv_u64(c, r, "p90_ns"), d.p90);
	check_pct("CSV p99", csv_u64(c, r, "p99_ns"), d.p99);
	assert_near(csv_dbl(c, r, "share"), d.share, 5e-7);
	assert_near(csv_dbl(c, r, "mean_ns"), d.mean, 0.5 + 1e-6);
	assert_near(csv_dbl(c, r, "std_ns"), d.std, 0.5 + 1e-6);
	assert_near(csv_dbl(c, r, "rest_mean_ns"), d.rest_mean, 0.5 + 1e-6);
	assert_near(csv_dbl(c, r, "rest_std_ns"), d.rest_std, 0.5 + 1e-6);
	assert_near(csv_dbl(c, r, "first_over_rest"), d.first_over_rest, 5e-7);
	static const char *const mcol[] = { "read_bytes", "written_bytes", "flops" };
	static const char *const scol[] = { "self_read_bytes", "self_written_bytes", "self_flops" };
	for (int k = 0; k < 3; k++) {
		EQ(csv_u64(c, r, mcol[k]), x->incl[k]);
		EQ(csv_u64(c, r, scol[k]), x->selfm[k]);
	}
	assert_near(csv_dbl(c, r, "gb_per_s"), d.gbps, 5e-7);
	assert_near(csv_dbl(c, r, "gflop_per_s"), d.gflops, 5e-7);
	assert_near(csv_dbl(c, r, "flop_per_byte"), d.intensity, 5e-7);
	EQ(csv_u64(c, r, "h2d_bytes"), x->xfer[0]);
	EQ(csv_u64(c, r, "d2h_bytes"), x->xfer[1]);
	EQ(csv_u64(c, r, "d2d_bytes"), 0);
	EQ(csv_u64(c, r, "p2p_bytes"), 0);
	assert_near(csv_dbl(c, r, "h2d_gb_per_s"), d.xgbps[0], 5e-7);
	assert_near(csv_dbl(c, r, "d2h_gb_per_s"), d.xgbps[1], 5e-7);
	EQ(csv_u64(c, r, "lossy"), (uint64_t)x->lossy);
}

static void test_ana_write_csv_reads_back(void **state)
{
	const struct ana_fixture *b = *state;
	const char *path = tu_path("basic.csv");
	struct ana_report_opts ro = { .sort = ANA_SORT_TIME, .thread = -1 };
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(ana_write_csv(f, &b->res, &ro), 0);
	assert_int_equal(fclose(f), 0);

	struct csv c;
	csv_load(path, &c);
	assert_true(c.rows > 1);
	assert_int_equal(c.nf[0], 40);
	assert_string_equal(c.f[0], "view");
	size_t expected_rows = 0;
	for (size_t v = 0; v < PT_ARRAY_SIZE(views); v++) {
		for (size_t i = 0; i < views[v].ntree; i++)
			check_csv_row(&c, csv_find(&c, "tree", views[v].thread, views[v].tree[i].key),
				      &views[v].tree[i], SPAN_SUM, 1);
		for (size_t i = 0; i < views[v].nflat; i++)
			check_csv_row(&c, csv_find(&c, "flat", views[v].thread, views[v].flat[i].key),
				      &views[v].flat[i], SPAN_SUM, 0);
		expected_rows += views[v].ntree + views[v].nflat;
	}
	assert_int_equal(c.rows, 1 + expected_rows); /* header + rows with a count, no more */
	for (size_t r = 0; r < c.rows; r++)
		assert_int_equal(c.nf[r], 40);
	/* the quoting itself: "kern, ""q""" */
	FILE *in = fopen(path, "r");
	char line[4096];
	int quoted = 0;
	while (fgets(line, sizeof(line), in))
		quoted |= strstr(line, ",\"kern, \"\"q\"\"\",") != NULL;
	fclose(in);
	assert_true(quoted);
	csv_free(&c);
	unlink(path);
}

/* ==== JSON ==== */

static uint64_t ju(json_t *o, const char *k)
{
	return (uint64_t)jint(o, k);
}
static double jd(json_t *o, const char *k)
{
	json_t *v = jget(o, k);
	if (!json_is_number(v))
		fail_msg("JSON: %s is not a number", k);
	return json_number_value(v);
}

static json_t *json_find(json_t *rows, const char *key, int tree)
{
	size_t i;
	json_t *r, *found = NULL;
	json_array_foreach(rows, i, r) {
		char k[512] = "";
		if (tree) {
			size_t j;
			json_t *p;
			json_array_foreach(jget(r, "path"), j, p) {
				if (j)
					strcat(k, ";");
				strcat(k, json_string_value(p));
			}
		} else {
			snprintf(k, sizeof(k), "%s", json_string_value(jget(r, "name")));
		}
		if (strcmp(k, key) == 0) {
			if (found)
				fail_msg("JSON: two rows for %s", key);
			found = r;
		}
	}
	if (!found)
		fail_msg("JSON: no row for %s", key);
	return found;
}

static void check_json_row(json_t *r, const struct xr *x, uint64_t span_sum, int tree)
{
	struct xd d;
	derive(x, span_sum, &d);
	snprintf(g_ctx, sizeof(g_ctx), "JSON %s", x->key);
	STREQ(json_string_value(jget(r, "name")), tree ? last_name(x->key) : x->key);
	STREQ(json_string_value(jget(r, "domain")), strcmp(last_name(x->key), KERN) == 0 ? "gpu" : "");
	EQ(ju(r, "count"), (uint64_t)x->nd);
	EQ(ju(r, "total_ns"), x->total);
	EQ(ju(r, "self_ns"), x->self);
	EQ(ju(r, "min_ns"), d.min);
	EQ(ju(r, "max_ns"), d.max);
	EQ(ju(r, "first_ns"), x->d[0]);
	check_pct("JSON p50", ju(r, "p50_ns"), d.p50);
	check_pct("JSON p90", ju(r, "p90_ns"), d.p90);
	check_pct("JSON p99", ju(r, "p99_ns"), d.p99);
	assert_near(jd(r, "share"), d.share, REL(d.share));
	assert_near(jd(r, "mean_ns"), d.mean, REL(d.mean));
	assert_near(jd(r, "std_ns"), d.std, REL(d.std) + 1e-6);
	assert_near(jd(r, "rest_mean_ns"), d.rest_mean, REL(d.rest_mean) + 1e-6);
	assert_near(jd(r, "rest_std_ns"), d.rest_std, REL(d.rest_std) + 1e-6);
	assert_near(jd(r, "first_over_rest"), d.first_over_rest, REL(d.first_over_rest));
	static const char *const mcol[] = { "read_bytes", "written_bytes", "flops" };
	static const char *const scol[] = { "self_read_bytes", "self_written_bytes", "self_flops" };
	for (int k = 0; k < 3; k++) {
		EQ(ju(r, mcol[k]), x->incl[k]);
		EQ(ju(r, scol[k]), x->selfm[k]);
	}
	assert_near(jd(r, "gb_per_s"), d.gbps, REL(d.gbps));
	assert_near(jd(r, "gflop_per_s"), d.gflops, REL(d.gflops));
	assert_near(jd(r, "flop_per_byte"), d.intensity, REL(d.intensity));
	EQ(ju(r, "h2d_bytes"), x->xfer[0]);
	EQ(ju(r, "d2h_bytes"), x->xfer[1]);
	assert_near(jd(r, "h2d_gb_per_s"), d.xgbps[0], REL(d.xgbps[0]));
	assert_near(jd(r, "d2h_gb_per_s"), d.xgbps[1], REL(d.xgbps[1]));
	EQ(json_is_true(jget(r, "lossy")), x->lossy);
	if (tree) {
		size_t depth = 1;
		for (const char *p = x->key; *p; p++)
			depth += *p == ';';
		EQ(ju(r, "depth"), depth);
	}
}

static void test_ana_write_json_reads_back(void **state)
{
	const struct ana_fixture *b = *state;
	const char *path = tu_path("basic.json");
	struct ana_report_opts ro = { .sort = ANA_SORT_TIME, .thread = -1 };
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(ana_write_json(f, &b->res, &ro), 0);
	assert_int_equal(fclose(f), 0);

	json_error_t jerr;
	json_t *root = json_load_file(path, 0, &jerr);
	if (!root)
		fail_msg("%s:%d: %s", path, jerr.line, jerr.text);
	assert_string_equal(json_string_value(jget(root, "schema")), "ptanalyze-report/1");
	json_t *tr = jget(root, "trace");
	assert_string_equal(json_string_value(jget(tr, "process")), "ana-test");
	assert_string_equal(json_string_value(jget(tr, "host")), "testhost");
	assert_int_equal(ju(tr, "pid"), 4242);
	assert_true(json_is_true(jget(tr, "closed")));
	assert_int_equal(ju(tr, "start_realtime_ns"), REAL_NS);
	assert_int_equal(ju(tr, "start_ns"), T0);
	assert_int_equal(ju(tr, "wall_span_ns"), SPAN0);
	assert_int_equal(ju(tr, "thread_span_sum_ns"), SPAN_SUM);
	assert_int_equal(ju(tr, "sections"), 17);
	assert_int_equal(ju(tr, "records"), 51);
	assert_int_equal(ju(tr, "lost_records"), 8);
	assert_int_equal(ju(tr, "lost_sections"), 3);
	assert_int_equal(ju(tr, "unmatched_ends"), 3);
	assert_int_equal(ju(tr, "open_at_end"), 1);
	assert_int_equal(ju(tr, "recorder_errors"), 2);
	assert_near(jd(tr, "percentile_relative_error"), ANA_HIST_REL_ERROR, 1e-12);
	assert_true(json_is_false(jget(tr, "torn_tail")));
	assert_true(json_is_false(jget(tr, "corrupt")));
	assert_int_equal(json_array_size(jget(tr, "problems")), 0);

	json_t *threads = jget(root, "threads");
	assert_int_equal(json_array_size(threads), 3);
	static const struct {
		const char *name;
		uint64_t tid, span, sections, records, lost;
	} xt[] = { { "main", 100, SPAN0, 7, 26, 0 }, { "worker-1", 101, SPAN1, 6, 14, 5 }, { "worker-2", 102, SPAN2, 4, 11, 0 } };
	for (size_t i = 0; i < 3; i++) {
		json_t *t = json_array_get(threads, i);
		assert_int_equal(ju(t, "index"), i);
		assert_string_equal(json_string_value(jget(t, "name")), xt[i].name);
		assert_int_equal(ju(t, "tid"), xt[i].tid);
		assert_int_equal(ju(t, "span_ns"), xt[i].span);
		assert_int_equal(ju(t, "sections"), xt[i].sections);
		assert_int_equal(ju(t, "records"), xt[i].records);
		assert_int_equal(ju(t, "lost_records"), xt[i].lost);
	}
	json_t *c0 = jget(json_array_get(threads, 0), "counters");
	assert_int_equal(json_array_size(c0), 2);
	json_t *mem = json_array_get(c0, 0);
	assert_string_equal(json_string_value(jget(mem, "name")), "mem_used");
	assert_int_equal(ju(mem, "samples"), 3);
	assert_int_equal(json_integer_value(jget(mem, "last")), 7);
	assert_int_equal(json_integer_value(jget(mem, "min")), -5);
	assert_int_equal(json_integer_value(jget(mem, "max")), 10);
	json_t *q1 = json_array_get(jget(json_array_get(threads, 1), "counters"), 0);
	assert_string_equal(json_string_value(jget(q1, "name")), "queue");
	assert_int_equal(json_integer_value(jget(q1, "last")), 42);
	assert_int_equal(json_array_size(jget(json_array_get(threads, 2), "counters")), 0);

	for (size_t v = 0; v < PT_ARRAY_SIZE(views); v++) {
		json_t *holder = views[v].index < 0 ? root : json_array_get(threads, (size_t)views[v].index);
		json_t *tree = jget(holder, "tree"), *flat = jget(holder, "flat");
		assert_int_equal(json_array_size(tree), views[v].ntree);
		assert_int_equal(json_array_size(flat), views[v].nflat);
		for (size_t i = 0; i < views[v].ntree; i++)
			check_json_row(json_find(tree, views[v].tree[i].key, 1), &views[v].tree[i], SPAN_SUM, 1);
		for (size_t i = 0; i < views[v].nflat; i++)
			check_json_row(json_find(flat, views[v].flat[i].key, 0), &views[v].flat[i], SPAN_SUM, 0);
	}
	json_decref(root);
	unlink(path);
}

/* ==== Text report: the figures a reader sees ==== */

/* The line of the report whose name column (after indentation and "!") is @name. */
static const char *report_line(const char *text, const char *name, int lossy, char *line, size_t n)
{
	for (const char *p = text; *p;) {
		const char *e = strchr(p, '\n');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		const char *s = p;
		while (*s == ' ' && s < p + l)
			s++;
		char want[128];
		snprintf(want, sizeof(want), "%s%s ", lossy ? "!" : "", name);
		if ((size_t)(p + l - s) > strlen(want) && strncmp(s, want, strlen(want)) == 0 && l < n) {
			memcpy(line, p, l);
			line[l] = 0;
			return line;
		}
		p = e ? e + 1 : p + l;
	}
	fail_msg("report has no row for %s%s:\n%s", lossy ? "!" : "", name, text);
	return NULL;
}

static void test_ana_report_text_rows(void **state)
{
	const struct ana_fixture *b = *state;
	struct ana_report_opts o = { .sort = ANA_SORT_TIME, .thread = -1, .bottlenecks = 3 };
	char *t = ana_test_report(&b->res, &o), line[512];
	assert_non_null(strstr(t, "sections 17, records 51, lost 8 records / 3 sections; errors: 3 unmatched ends, "
				  "1 open at end, 2 recorder-counted\n"));
	assert_non_null(strstr(t, "rows marked ! were open while records were lost"));
	/* lossy rows are flagged, the others are not */
	report_line(t, "lossy", 1, line, sizeof(line));
	report_line(t, "B", 1, line, sizeof(line)); /* lossy;B */
	report_line(t, "A", 0, line, sizeof(line));
	/* A: 3 calls, 4.40 us total, 1.90 us self, 34.0% of 12.93 us, first 3.00 us, 3000/700 = 4.29x */
	report_line(t, "A", 0, line, sizeof(line));
	assert_non_null(strstr(line, "       3    4.40 us    1.90 us  34.0%"));
	assert_non_null(strstr(line, "4.29x"));
	/* A;A;B: GB/s 1500/500 = 3.00, GFLOP/s 8.00, FLOP/B 2.67 */
	assert_non_null(strstr(t, "3.00     8.00   2.67\n"));
	/* A;C: the transfers under it */
	assert_non_null(strstr(t, "transfers H2D: 3000 bytes (3000 self), 2.31 GB/s over the section\n"));
	assert_non_null(strstr(t, "transfers D2H: 1000 bytes (1000 self), 0.77 GB/s over the section\n"));
	/* bottlenecks by flat self time: A 2300, C 1300, E 1300 (C first: lower id) */
	assert_non_null(strstr(t, "   1. A "));
	assert_non_null(strstr(t, "   2. C "));
	assert_non_null(strstr(t, "   3. E "));
	/* counters */
	assert_non_null(strstr(t, "\nCounters\n"));
	report_line(t, "mem_used", 0, line, sizeof(line));
	assert_non_null(strstr(line, " 0          3              7             -5             10"));
	free(t);
	/* one thread */
	o.thread = 2;
	t = ana_test_report(&b->res, &o);
	report_line(t, "E", 0, line, sizeof(line));
	assert_non_null(strstr(line, "       2     600 ns     600 ns"));
	assert_null(strstr(t, "lossy"));
	free(t);
}

/* Table rows of a report: lines after the column header up to the first
 * blank line, transfer lines left out. */
static int table_rows(const char *text, char rows[][64], int max)
{
	const char *p = strstr(text, "\nname ");
	int n = 0;
	if (!p)
		return 0;
	p = strchr(p + 1, '\n') + 1;
	while (*p && *p != '\n' && n < max) {
		const char *e = strchr(p, '\n');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		if (!strstr(p, "transfers ") || strstr(p, "transfers ") > p + l) {
			const char *s = p;
			while (*s == ' ')
				s++;
			size_t k = 0;
			while (s + k < p + l && !(s[k] == ' ' && s[k + 1] == ' ') && k < 63)
				k++;
			memcpy(rows[n], s, k);
			rows[n++][k] = 0;
		}
		p = e ? e + 1 : p + l;
	}
	return n;
}

/* --depth, --top and --min-pct in the tree; --top N in --flat shows the
 * first N rows that pass --min-pct, as in the tree (hidden rows do not use
 * up the limit). */
static void test_ana_report_text_limits(void **state)
{
	const struct ana_fixture *b = *state;
	char rows[32][64];
	struct ana_report_opts o = { .sort = ANA_SORT_TIME, .thread = -1, .depth = 1 };
	char *t = ana_test_report(&b->res, &o);
	assert_int_equal(table_rows(t, rows, 32), 5); /* A, E, lossy, KERN, B */
	assert_string_equal(rows[0], "A");
	assert_string_equal(rows[1], "E");
	assert_string_equal(rows[2], "!lossy");
	assert_string_equal(rows[3], KERN);
	assert_string_equal(rows[4], "B");
	free(t);
	o = (struct ana_report_opts){ .sort = ANA_SORT_NAME, .thread = -1, .top = 2, .min_pct = 9 };
	t = ana_test_report(&b->res, &o);
	assert_int_equal(table_rows(t, rows, 32), 3); /* A { C (10.1%); A;A 7.0% hidden }, E */
	assert_string_equal(rows[0], "A");
	assert_string_equal(rows[1], "C");
	assert_string_equal(rows[2], "E");
	free(t);
	/* flat by name: A 34.0%, B 8.5% (hidden), C 10.1%, E 10.1%, ... */
	o.flat = true;
	t = ana_test_report(&b->res, &o);
	int n = table_rows(t, rows, 32);
	if (n != 2)
		fail_msg("--flat --sort name --top 2 --min-pct 9 shows %d row(s) (first: %s), expected A and C", n,
			 n ? rows[0] : "none");
	assert_string_equal(rows[0], "A");
	assert_string_equal(rows[1], "C");
	free(t);
}

/* ==== Golden trace ==== */

#ifdef PT_GOLDEN_DIR
/* The checked-in small.ptz decodes to exactly what the generator writes
 * today (records, tables, header), so it cannot go stale. Payload bytes
 * are not compared: another zstd may compress differently. */
static void test_golden_trace_is_generated(void **state)
{
	(void)state;
	const char *fresh = tu_path("small.ptz");
	write_basic(fresh);
	struct tu_trace a, g;
	tu_read(fresh, &a);
	tu_read(PT_GOLDEN_DIR "/small.ptz", &g);
	const struct pt_trace_info *ia = pt_reader_info(a.rd), *ig = pt_reader_info(g.rd);
	assert_int_equal(ia->clock_source, ig->clock_source);
	assert_int_equal(ia->start_ticks, ig->start_ticks);
	assert_int_equal(ia->start_mono_ns, ig->start_mono_ns);
	assert_int_equal(ia->start_real_ns, ig->start_real_ns);
	assert_int_equal(ia->pid, ig->pid);
	assert_string_equal(ia->process_name, ig->process_name);
	assert_string_equal(ia->host, ig->host);
	assert_string_equal(ia->cmdline, ig->cmdline);
	assert_string_equal(ia->recorder_version, ig->recorder_version);
	assert_int_equal(ia->chunks, ig->chunks);
	assert_int_equal(a.records, g.records);
	assert_int_equal(a.lost_records, g.lost_records);
	assert_int_equal(a.nt, g.nt);
	for (size_t i = 0; i < a.nt; i++) {
		assert_int_equal(a.t[i].index, g.t[i].index);
		assert_int_equal(a.t[i].n, g.t[i].n);
		for (size_t k = 0; k < a.t[i].n; k++) {
			const struct pt_record *x = &a.t[i].recs[k], *y = &g.t[i].recs[k];
			if (x->kind != y->kind || x->ticks != y->ticks || x->id != y->id || x->aux != y->aux ||
			    x->value != y->value || x->value2 != y->value2)
				fail_msg("small.ptz is stale at thread %zu record %zu: run scripts/update-golden.sh", i, k);
		}
	}
	assert_int_equal(pt_reader_thread_count(a.rd), pt_reader_thread_count(g.rd));
	for (size_t i = 0; i < pt_reader_thread_count(a.rd); i++) {
		struct pt_thread_info x, y;
		pt_reader_thread(a.rd, i, &x, sizeof(x));
		pt_reader_thread(g.rd, i, &y, sizeof(y));
		assert_int_equal(x.index, y.index);
		assert_int_equal(x.tid, y.tid);
		assert_string_equal(x.name, y.name);
	}
	for (uint32_t id = 0; id < NIDS; id++) {
		const char *x = pt_reader_string(a.rd, id, NULL), *y = pt_reader_string(g.rd, id, NULL);
		if (x || y) {
			assert_non_null(x);
			assert_non_null(y);
			assert_string_equal(x, y);
		}
	}
	tu_free(&a);
	tu_free(&g);
	unlink(fresh);
}
#endif

/* --write-golden DIR: writes DIR/small.ptz (scripts/update-golden.sh then
 * renders the expected outputs with the built ptanalyze). */
static int write_golden(const char *dir)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/small.ptz", dir);
	write_basic(p);
	printf("wrote %s\n", p);
	return 0;
}

/* ana_utf8_clean(), shared by the JSON report and the Chrome export:
 * valid UTF-8 comes back as is (no copy); each bad byte, overlong form,
 * surrogate or code point above U+10FFFF becomes '?', the rest is kept. */
/*
 * Exact moments (ana.h): values 1e12 + k (k = 0..999, a long section with
 * sub-ns jitter relative to its length) have mean 1e12 + 499.5 and sample
 * variance n(n+1)/12 = 83416.67 exactly; a double running sum of squares
 * (1e24 scale, ulp 1.3e8) could not resolve that. Merging in any split or
 * order gives the same bits; removing one value gives the rest's figures;
 * a saturated sum of squares gives NaN, not a wrong std.
 */
static void test_ana_moments_exact(void **state)
{
	(void)state;
	struct ana_moments all = { 0 }, a = { 0 }, b = { 0 };
	const uint64_t base = 1000000000000ull;
	for (uint64_t k = 0; k < 1000; k++) {
		ana_moments_add(&all, base + k);
		ana_moments_add(k % 3 ? &a : &b, base + (999 - k));
	}
	assert_true(ana_moments_mean(&all, 1000) == 1000000000499.5);
	double want = sqrt(1000.0 * 1001.0 / 12.0);
	assert_true(fabs(ana_moments_std(&all, 1000) - want) <= 1e-12 * want);
	struct ana_moments ab = a, ba = b;
	ana_moments_merge(&ab, &b);
	ana_moments_merge(&ba, &a);
	assert_true(ab.s1 == all.s1 && ab.s2 == all.s2 && ba.s1 == all.s1 && ba.s2 == all.s2);
	/* without the largest value: 1e12 + 0..998 */
	struct ana_moments rest = ana_moments_without(&all, base + 999);
	assert_true(ana_moments_mean(&rest, 999) == 1000000000499.0);
	double want_rest = sqrt(999.0 * 1000.0 / 12.0);
	assert_true(fabs(ana_moments_std(&rest, 999) - want_rest) <= 1e-12 * want_rest);
	/* small cases: one value has std 0; two values 1 and 4 have std 2.1213 */
	struct ana_moments two = { 0 };
	ana_moments_add(&two, 1);
	assert_true(ana_moments_std(&two, 1) == 0.0 && ana_moments_mean(&two, 1) == 1.0);
	ana_moments_add(&two, 4);
	assert_true(fabs(ana_moments_std(&two, 2) - sqrt(4.5)) < 1e-15);
	/* saturation: (2^64 - 1)^2 twice exceeds 2^128 */
	struct ana_moments big = { 0 };
	ana_moments_add(&big, UINT64_MAX);
	assert_false(isnan(ana_moments_std(&big, 1)));
	ana_moments_add(&big, UINT64_MAX);
	assert_true(isnan(ana_moments_std(&big, 2)));
}

/*
 * Reservoir (stratified, time-ordered, ana.h): after 10^6 values 0..N-1 it
 * holds one value of each block of 2048, in order; the first 512 values are
 * all kept while they fit; and the sample is uniform: the counts per tenth of
 * the stream pass a chi-square test (9 degrees of freedom, 27.88 = the
 * 0.1% critical value) for each of 20 seeds, and the mean over all seeds
 * is within 4 standard errors of N/2. A sampler biased to early or late
 * values within blocks (a wrong replacement probability) fails the mean;
 * every k-th value fails the alternating stream.
 */
static void test_ana_reservoir_uniform(void **state)
{
	(void)state;
	const uint64_t N = 1000000;
	double sum = 0;
	uint32_t total = 0;
	for (uint64_t seed = 1; seed <= 20; seed++) {
		struct ana_reservoir r = { 0 };
		uint64_t rng = seed * 0x9e3779b97f4a7c15ull;
		for (uint64_t v = 0; v < N; v++) {
			ana_reservoir_add(&r, v, &rng);
			if (v == ANA_RESERVOIR_CAP - 1)
				for (uint32_t i = 0; i < r.n; i++)
					assert_int_equal(r.v[i], i); /* all of the first 512, in order */
		}
		assert_int_equal(r.seen, N);
		/* blocks of 2048 (the smallest power of 2 with N / 2^k <= 512): ceil(N / 2048) of them */
		assert_int_equal(r.shift, 11);
		assert_int_equal(r.n, (N + 2047) / 2048);
		uint32_t tenth[10] = { 0 };
		for (uint32_t i = 0; i < r.n; i++) {
			/* time order: one value from each block, distinct by construction */
			assert_true(r.v[i] >= (uint64_t)i << 11 && r.v[i] < (uint64_t)(i + 1) << 11);
			tenth[r.v[i] * 10 / N]++;
			sum += (double)r.v[i];
			total++;
		}
		double chi2 = 0, e = r.n / 10.0;
		for (int k = 0; k < 10; k++)
			chi2 += (tenth[k] - e) * (tenth[k] - e) / e;
		assert_true(chi2 < 27.88);
		ana_reservoir_free(&r);
	}
	double mean = sum / total, se = (double)N / sqrt(12.0 * total);
	assert_true(fabs(mean - (double)N / 2) < 4 * se);
	/* a period in the durations does not alias: every other occurrence slow (1), the rest fast (0);
	 * every k-th value would keep one kind only. Each block keeps either kind with probability 1/2. */
	struct ana_reservoir r = { 0 };
	uint64_t rng = 7;
	for (uint64_t v = 0; v < N; v++)
		ana_reservoir_add(&r, v & 1, &rng);
	uint32_t slow = 0;
	for (uint32_t i = 0; i < r.n; i++)
		slow += (uint32_t)r.v[i];
	/* binomial(489, 1/2): within 4 standard deviations (11) of 244.5 */
	assert_true(fabs((double)slow - r.n / 2.0) < 4 * sqrt(r.n / 4.0));
	ana_reservoir_free(&r);
	/* merging two samples: blocks of the larger size, then doubled to fit; seen adds up */
	struct ana_reservoir a = { 0 }, b = { 0 };
	for (uint64_t v = 0; v < 3000; v++)
		ana_reservoir_add(&a, v, &rng);
	for (uint64_t v = 0; v < 700; v++)
		ana_reservoir_add(&b, 1000000 + v, &rng);
	ana_reservoir_merge(&a, &b, &rng);
	assert_int_equal(a.seen, 3700);
	assert_true(a.n <= ANA_RESERVOIR_CAP && a.n >= ANA_RESERVOIR_CAP / 2);
	for (uint32_t i = 1; i < a.n; i++)
		assert_true(a.v[i] > a.v[i - 1]); /* still in order: a's, then b's */
	ana_reservoir_free(&a);
	ana_reservoir_free(&b);
}

/* ana_ticks_ns() without its one-compare range: the checked conversion. */
static uint64_t ticks_ns_checked(double npt, uint64_t t)
{
	if (t <= (uint64_t)INT64_MAX) {
		double x = (double)(int64_t)t * npt + 0.5;
		if (x < 9.2e18)
			return (uint64_t)(int64_t)x;
	}
	return ana_ticks_ns_big(npt, t);
}

/* ana_ticks_ns()'s one-compare range (ana_ticks_ns_lim()) gives the checked
 * conversion's values on both sides of its end, for slopes from a GHz
 * TSC's to crafted ones, and no range for a NaN or infinite slope. */
static void test_ana_ticks_ns_fast_range(void **state)
{
	(void)state;
	const uint64_t top = (uint64_t)INT64_MAX + 1;
	const double slopes[] = { 0.3852, 1.0, 0.5, 1e-6, 3.0, 1e9, 1e18, 0.0 };
	for (size_t i = 0; i < sizeof(slopes) / sizeof(slopes[0]); i++) {
		struct ctx c = { .ns_per_tick = slopes[i], .ns_fast_lim = ana_ticks_ns_lim(slopes[i]) };
		const uint64_t lim = c.ns_fast_lim;
		assert_true(lim <= top);
		if (lim)
			assert_true((double)(int64_t)(lim - 1) * slopes[i] + 0.5 < 9.2e18);
		/* the range is not needlessly short: it reaches past 9e18 ns */
		assert_true(lim == top || (double)lim * slopes[i] > 8.9e18);
		const uint64_t t[] = { 0, 1, 2, 1000, lim - 2, lim - 1, lim, lim + 1, (uint64_t)INT64_MAX, top, UINT64_MAX };
		for (size_t k = 0; k < sizeof(t) / sizeof(t[0]); k++)
			assert_int_equal(ana_ticks_ns(&c, t[k]), ticks_ns_checked(slopes[i], t[k]));
	}
	assert_int_equal(ana_ticks_ns_lim(NAN), 0);
	assert_int_equal(ana_ticks_ns_lim(INFINITY), 0);
	assert_int_equal(ana_ticks_ns_lim(-1.0), 0);
}

static void test_ana_utf8_clean_repairs(void **state)
{
	(void)state;
	char *scratch = NULL;
	const char *ok = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80";
	assert_ptr_equal(ana_utf8_clean(ok, &scratch), ok);
	assert_null(scratch);
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "a\xff" "b", "a?b" },           /* invalid byte */
		{ "x\xc0\xafy", "x??y" },        /* overlong '/' */
		{ "s\xed\xa0\x80t", "s???t" },   /* surrogate U+D800 */
		{ "\xf4\x90\x80\x80", "????" }, /* above U+10FFFF */
		{ "cut\xe2\x82", "cut??" },      /* truncated sequence */
	};
	for (size_t i = 0; i < PT_ARRAY_SIZE(cases); i++)
		assert_string_equal(ana_utf8_clean(cases[i].in, &scratch), cases[i].out);
	free(scratch);
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--write-golden") == 0)
		return write_golden(argv[2]);
	if (argc != 1) {
		fprintf(stderr, "usage: %s [--write-golden DIR]\n", argv[0]);
		return 2;
	}
	/* one group (one TAP plan): the basic trace is written and analyzed once */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ana_run_totals),
		cmocka_unit_test(test_ana_moments_exact),
		cmocka_unit_test(test_ana_reservoir_uniform),
		cmocka_unit_test(test_ana_run_tree_and_flat_rows),
		cmocka_unit_test(test_ana_run_no_unexpected_rows),
		cmocka_unit_test(test_ana_run_merged_is_sum_of_threads),
		cmocka_unit_test(test_ana_run_counters),
		cmocka_unit_test(test_ana_run_merged_percentiles_only),
		cmocka_unit_test(test_ana_run_huge_ids),
		cmocka_unit_test(test_ana_run_far_string_id),
		cmocka_unit_test(test_ana_run_thread_record_bad_index),
		cmocka_unit_test(test_ana_hist_hybrid_ranks),
		cmocka_unit_test(test_ana_hist_index_edges),
		cmocka_unit_test(test_ana_hist_pair_count_overflow),
		cmocka_unit_test(test_ana_hist_block_count_overflow),
		cmocka_unit_test(test_ana_hist_merge_count_overflow),
		cmocka_unit_test(test_ana_hist_dense_at_hot),
		cmocka_unit_test(test_ana_hist_many_buckets_ranks),
		cmocka_unit_test(test_ana_run_flat_metrics_recursion_safe),
		cmocka_unit_test(test_ana_run_sequence_gap_drops_stack),
		cmocka_unit_test(test_ana_run_span_ends_at_fast_end),
		cmocka_unit_test(test_ana_run_one_thread),
		cmocka_unit_test(test_ana_run_window),
		cmocka_unit_test(test_ana_run_window_flat_recursion),
		cmocka_unit_test(test_ana_run_flat_incl_two_ways),
		cmocka_unit_test(test_ana_run_domain),
		cmocka_unit_test(test_ana_write_csv_reads_back),
		cmocka_unit_test(test_ana_write_json_reads_back),
		cmocka_unit_test(test_ana_report_text_rows),
		cmocka_unit_test(test_ana_report_text_limits),
		cmocka_unit_test(test_ana_hist_quantile_within_error),
		cmocka_unit_test(test_ana_utf8_clean_repairs),
		cmocka_unit_test(test_ana_ticks_ns_fast_range),
#ifdef PT_GOLDEN_DIR
		cmocka_unit_test(test_golden_trace_is_generated),
#endif
	};
	int failed = cmocka_run_group_tests(tests, setup_basic, ana_fixture_teardown);
	rmdir(tu_tmpdir());
	return failed ? 1 : 0;
}
