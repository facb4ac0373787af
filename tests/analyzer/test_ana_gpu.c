/*
 * tests/analyzer/test_ana_gpu.c - the analyzer's GPU sections, async ranges
 * and instants (doc/analyzer-output.md §3.1-3.3) on traces written with the
 * internal writer at chosen ticks, so that every figure is known.
 *
 * 1 tick = 1 ns (clock records (0, 0) and (1e9, 1e9), the header's start
 * triple on the same line); times are ns after T0 = 1 ms.
 *
 * Invariants covered:
 *  - GPU_LAUNCH pairs with the GPU_RANGE of the same seq whichever comes
 *    first in the file; the pairing map holds only unmatched halves (its
 *    peak is the most unmatched at once in file order: 4 here, where
 *    reading thread by thread would hold 8); a launch without a range and
 *    a range without a launch are counted;
 *  - a range's duration goes to its section's node (self: count, total,
 *    mean, p50, p99, launch-to-start latency mean/min/max, early starts)
 *    and inclusively to the ancestors, except a range inside an enclosing
 *    GPU section of the same device and stream (counted once, in it); flat
 *    rows are recursion-safe (a range under rec;rec counts once for rec);
 *  - per device: ranges, sum, union of the ranges (two streams overlapping:
 *    union, exact; a brute-force union of 300 scrambled ranges), streams,
 *    early starts, latency p50/p99 (negative values included); the wall
 *    span covers the last GPU range;
 *  - ERROR codes 6..12 are counted per code and never as misuse, in event
 *    and meta chunks; the "GPU timing off" INSTANT is reported;
 *  - the ptz-gpu thread is left out of the sum of thread spans; its memory
 *    counters are bytes;
 *  - async ranges pair across threads by id in either order; unmatched
 *    begins and ends; per-name count, total, mean, p50, p99, max;
 *  - instants per name, all threads and per thread;
 *  - reading in file order (a "ptz-gpu" thread) and thread by thread (the
 *    same trace without that name) give the same rows; --thread and the
 *    time window;
 *  - the text report, the CSV and the JSON (read back with jansson) carry
 *    these exact numbers;
 *  - rp_map (open addressing, backward-shift deletion) against a plain
 *    array under random adds and removes.
 */
#include <jansson.h>
#include <math.h>

#include "tests/analyzer/ana_test_util.h"
#include "analyzer/ana_suggest.h"

#define T0 1000000ull
#define REAL_NS 1700000000000000000ull

enum { ID_STEP = 1, ID_GEMM, ID_LAYER, ID_COPY, ID_IDLE, ID_REC, ID_NVTX, ID_LOAD, ID_MARK, ID_DEVMEM, ID_RSS,
       ID_QUEUE, ID_OFF, NIDS };
static const char *const names[NIDS] = {
	NULL,     "step",  "gemm",  "layer", "copy",
	"idle",   "rec",   "nvtx-range", "load", "mark",
	"device memory used (all processes)", "process RSS", "queue", "GPU timing off: no CUDA runtime (test)",
};

enum { OP_B = 1, OP_E, OP_L, OP_R, OP_AB, OP_AE, OP_I, OP_K, OP_ERR, OP_CUT };
struct op {
	uint8_t k;
	uint32_t id;            /* section / name / counter id; error code */
	uint64_t t;             /* ticks: record time; GPU_RANGE: launch tick */
	uint64_t a, b;          /* LAUNCH: seq, stream; RANGE: GPU start, end; ASYNC: async id; K/ERR: value */
	uint64_t seq, stream;   /* RANGE */
	uint32_t dev;           /* LAUNCH, RANGE */
};
#define B(t, id) { OP_B, (id), T0 + (t), 0, 0, 0, 0, 0 }
#define E(t, id) { OP_E, (id), T0 + (t), 0, 0, 0, 0, 0 }
/* GPU_LAUNCH then BEGIN at the same tick, as pt_gpu_begin() writes them */
#define L(t, id, seq, dev, stream) { OP_L, (id), T0 + (t), (seq), (stream), 0, 0, (dev) }, B(t, id)
#define R(id, dev, s, e, launch, seq, stream) \
	{ OP_R, (id), T0 + (launch), T0 + (s), T0 + (e), (seq), (stream), (dev) }
#define AB(t, name, aid) { OP_AB, (name), T0 + (t), (aid), 0, 0, 0, 0 }
#define AE(t, aid) { OP_AE, 0, T0 + (t), (aid), 0, 0, 0, 0 }
#define I(t, id) { OP_I, (id), T0 + (t), 0, 0, 0, 0, 0 }
#define K(t, id, v) { OP_K, (id), T0 + (t), (v), 0, 0, 0, 0 }
#define ERR(t, code, n) { OP_ERR, (code), T0 + (t), (n), 0, 0, 0, 0 }
#define CUT { OP_CUT, 0, 0, 0, 0, 0, 0, 0 }

enum { S1 = 0x7f00aa00, S2 = 0x7f00bb00, S3 = 0x7f00cc00 }; /* stream handles */

/*
 * The GPU trace. Thread 0 "main":
 *   step[0,10000] {
 *     gemm[100,1100]     seq 1, dev 0, S1: GPU [200, 2200]   lat 100
 *     layer[1500,6000]   seq 2, dev 0, S1: GPU [2644, 5644]  lat 1144 {
 *       gemm[1600,2600]  seq 3, dev 0, S1: GPU [2700, 3700]  lat 1100 (inside layer's range: covered)
 *       copy[3000,3500]  seq 4, dev 0, S2: GPU [2900, 3900]  lat -100 (early start; other stream)
 *     }
 *     gemm[7000,7500]    seq 5: no range ever (launch without a range)
 *   }  idle[11000,12000]; async end 0xA4 at 900, begin 0xA2 at 1000, end 0xA1 at 5300;
 *   instants "mark" at 50 and 8000; counter "queue" 3 at 10500. Span 12000.
 * Thread 1 "worker":
 *   gemm[500,900]   seq 6, dev 1, S3: GPU [600, 1600]  lat 100
 *   gemm[2000,2400] seq 7, dev 1, S3: GPU [2500, 3000] lat 500
 *   rec[3200,4500] { rec[3300,4400] { gemm[3400,3600] seq 8, dev 1, S3: GPU [3700, 4200] lat 300 } }
 *   async begins 0xA1 at 300, 0xA4 at 400 (nvtx-range), 0xA3 at 6000 (load, never ended);
 *   async ends 0xA2 at 1500, 0xBAD at 4000 (never begun); instant "mark" at 700;
 *   ERROR end underflow x1 at 6100 (misuse). Span 6000 - 300 = 5700.
 * Thread 2 "ptz-gpu": ranges (seq 99 on dev 0, S1: [12500, 13000], launch
 *   12400, has no launch); device memory 1e6 @2000, 3e6 @5000, 2e6 @9000;
 *   RSS 50 MiB @9500; ERROR pool empty x3, CUDA x1, early start x1.
 * Meta: ERROR queue full x1.
 * File order: meta, gpu A (ranges 1, 6), main 0, worker 0, gpu B (3, 4, 2,
 * 7, 8, 99), main 1.
 */
static const struct op main_ops[] = {
	B(0, ID_STEP), I(50, ID_MARK),
	L(100, ID_GEMM, 1, 0, S1), AE(900, 0xA4), E(1100, ID_GEMM),
	AB(1000, ID_NVTX, 0xA2),
	L(1500, ID_LAYER, 2, 0, S1),
	L(1600, ID_GEMM, 3, 0, S1), E(2600, ID_GEMM),
	CUT,
	L(3000, ID_COPY, 4, 0, S2), E(3500, ID_COPY),
	AE(5300, 0xA1),
	E(6000, ID_LAYER),
	L(7000, ID_GEMM, 5, 0, S1), E(7500, ID_GEMM),
	I(8000, ID_MARK),
	E(10000, ID_STEP),
	K(10500, ID_QUEUE, 3),
	B(11000, ID_IDLE), E(12000, ID_IDLE),
};
static const struct op worker_ops[] = {
	AB(300, ID_NVTX, 0xA1), AB(400, ID_NVTX, 0xA4),
	L(500, ID_GEMM, 6, 1, S3), I(700, ID_MARK), E(900, ID_GEMM),
	AE(1500, 0xA2),
	L(2000, ID_GEMM, 7, 1, S3), E(2400, ID_GEMM),
	B(3200, ID_REC), B(3300, ID_REC), L(3400, ID_GEMM, 8, 1, S3), E(3600, ID_GEMM), AE(4000, 0xBAD),
	E(4400, ID_REC), E(4500, ID_REC),
	AB(6000, ID_LOAD, 0xA3),
	ERR(6100, PT_ERRC_END_UNDERFLOW, 1),
};
static const struct op gpu_a_ops[] = {
	R(ID_GEMM, 0, 200, 2200, 100, 1, S1), R(ID_GEMM, 1, 600, 1600, 500, 6, S3),
	K(2000, ID_DEVMEM, 1000000),
};
static const struct op gpu_b_ops[] = {
	R(ID_GEMM, 0, 2700, 3700, 1600, 3, S1), R(ID_COPY, 0, 2900, 3900, 3000, 4, S2),
	R(ID_LAYER, 0, 2644, 5644, 1500, 2, S1), R(ID_GEMM, 1, 2500, 3000, 2000, 7, S3),
	R(ID_GEMM, 1, 3700, 4200, 3400, 8, S3), R(ID_GEMM, 0, 12500, 13000, 12400, 99, S1),
	K(5000, ID_DEVMEM, 3000000), K(9000, ID_DEVMEM, 2000000), K(9500, ID_RSS, 52428800),
	ERR(9600, PT_ERRC_GPU_POOL_EMPTY, 3), ERR(9700, PT_ERRC_GPU_CUDA, 1), ERR(9800, PT_ERRC_GPU_EARLY_START, 1),
};
#define SPAN_MAIN 12000u
#define SPAN_WORKER 5700u
#define SPAN_GPU 9400u /* first record: range seq 1 (launch tick 100); last timed: RSS at 9500 */
#define WALL 13000u     /* to the end of range seq 99 */

/* ==== Writer ==== */

static void tb_open(struct tb *b, const char *path)
{
	const struct fmt_writer_hdr hd = {
		.clock_source = PT_CLOCK_TSC, .pid = 4343, .start_ticks = T0, .start_mono_ns = T0, .start_real_ns = REAL_NS,
		.process_name = "gpu-test", .host = "testhost", .cmdline = "gpu-test", .recorder_version = "ptz-test 1",
	};
	tb_start(b, path, &hd);
}

/* Strings, @nthreads threads named @tnames, clocks, and a meta ERROR queue full x1. */
static void tb_meta(struct tb *b, const char *const *tnames, uint32_t nthreads)
{
	for (uint32_t id = 1; id < NIDS; id++)
		assert_int_equal(fmt_enc_string(&b->e, id, 0, names[id], strlen(names[id])), 0);
	for (uint32_t t = 0; t < nthreads; t++)
		assert_int_equal(fmt_enc_thread(&b->e, t, 200 + t, T0, 0, tnames[t], strlen(tnames[t])), 0);
	assert_int_equal(fmt_enc_clock(&b->e, 0, 0, REAL_NS - T0, 1), 0);
	assert_int_equal(fmt_enc_clock(&b->e, 1000000000, 1000000000, REAL_NS - T0 + 1000000000, 1), 0);
	fmt_enc_error(&b->e, T0, PT_ERRC_GPU_QUEUE_FULL, 1);
	tb_flush(b, FMT_CHUNK_META, PT_FMT_META_THREAD);
}

/* Encodes ops[from..] into one chunk of @thread, up to the end or a CUT;
 * returns the index after it. */
static size_t tb_events(struct tb *b, uint32_t thread, const struct op *ops, size_t n, size_t from)
{
	size_t i = from;
	for (; i < n; i++) {
		const struct op *o = &ops[i];
		assert_true(fmt_enc_room(&b->e, 128));
		if (o->k == OP_CUT) {
			i++;
			break;
		}
		switch (o->k) {
		case OP_B: fmt_enc_begin(&b->e, o->t, o->id); break;
		case OP_E: fmt_enc_end(&b->e, o->t, o->id); break;
		case OP_L:
			assert_int_equal(fmt_enc_lp5(&b->e, PT_REC_GPU_LAUNCH, o->id, o->dev, o->b, o->a, o->t), 0);
			break;
		case OP_R:
			assert_int_equal(fmt_enc_gpu_range(&b->e, o->id, o->dev, o->a, o->b, o->t, o->seq, o->stream), 0);
			break;
		case OP_AB: assert_int_equal(fmt_enc_lp5(&b->e, PT_REC_ASYNC_BEGIN, o->id, 0, o->a, 0, o->t), 0); break;
		case OP_AE: assert_int_equal(fmt_enc_lp5(&b->e, PT_REC_ASYNC_END, o->id, 0, o->a, 0, o->t), 0); break;
		case OP_I: assert_int_equal(fmt_enc_lp5(&b->e, PT_REC_INSTANT, o->id, 0, 0, 0, o->t), 0); break;
		case OP_K: fmt_enc_counter(&b->e, o->t, o->id, (int64_t)o->a); break;
		case OP_ERR: fmt_enc_error(&b->e, o->t, o->id, o->a); break;
		default: fail();
		}
	}
	tb_flush(b, FMT_CHUNK_EVENTS, thread);
	return i;
}

/* The GPU trace; @gpu_name names thread 2 ("ptz-gpu" reads in file order). */
static void write_gpu(const char *path, const char *gpu_name)
{
	const char *const tnames[] = { "main", "worker", gpu_name };
	struct tb b;
	tb_open(&b, path);
	tb_meta(&b, tnames, 3);
	assert_int_equal(tb_events(&b, 2, gpu_a_ops, PT_ARRAY_SIZE(gpu_a_ops), 0), PT_ARRAY_SIZE(gpu_a_ops));
	size_t next = tb_events(&b, 0, main_ops, PT_ARRAY_SIZE(main_ops), 0);
	assert_true(next < PT_ARRAY_SIZE(main_ops));
	assert_int_equal(tb_events(&b, 1, worker_ops, PT_ARRAY_SIZE(worker_ops), 0), PT_ARRAY_SIZE(worker_ops));
	assert_int_equal(tb_events(&b, 2, gpu_b_ops, PT_ARRAY_SIZE(gpu_b_ops), 0), PT_ARRAY_SIZE(gpu_b_ops));
	assert_int_equal(tb_events(&b, 0, main_ops, PT_ARRAY_SIZE(main_ops), next), PT_ARRAY_SIZE(main_ops));
	tb_close(&b);
}

/* ==== Expected figures ==== */

/*
 * The documented percentile (doc/analyzer-output.md §3): the nearest-rank
 * value's log-linear bucket midpoint (exact below 128, then 128 buckets per
 * power of two), clamped to [min, max]. Written here from the definition.
 */
static uint64_t pct_of(const uint64_t *sorted, size_t n, double q)
{
	size_t rank = (size_t)ceil(q * (double)n);
	uint64_t v = sorted[(rank ? rank : 1) - 1], mid = v;
	if (v >= 128) {
		unsigned shift = (unsigned)(63 - __builtin_clzll(v)) - 7;
		uint64_t lo = v >> shift << shift, width = 1ull << shift;
		mid = lo + (width - 1) / 2;
	}
	return mid < sorted[0] ? sorted[0] : mid > sorted[n - 1] ? sorted[n - 1] : mid;
}

/* One row's expected GPU figures: self ranges (durations, latencies) and inclusive sums. */
struct xg {
	const char *key; /* tree path "step;layer" or flat name */
	uint64_t d[6];   /* self durations, sorted */
	int64_t lat[6];  /* their latencies */
	int n;
	uint64_t incl_count, incl_total;
};

static const struct xg x_tree_main[] = {
	{ "step", { 0 }, { 0 }, 0, 3, 6000 },
	{ "step;gemm", { 2000 }, { 100 }, 1, 1, 2000 },
	{ "step;layer", { 3000 }, { 1144 }, 1, 2, 4000 },
	{ "step;layer;gemm", { 1000 }, { 1100 }, 1, 1, 1000 },
	{ "step;layer;copy", { 1000 }, { -100 }, 1, 1, 1000 },
};
static const struct xg x_tree_worker[] = {
	{ "gemm", { 500, 1000 }, { 500, 100 }, 2, 2, 1500 },
	{ "rec", { 0 }, { 0 }, 0, 1, 500 },
	{ "rec;rec", { 0 }, { 0 }, 0, 1, 500 },
	{ "rec;rec;gemm", { 500 }, { 300 }, 1, 1, 500 },
};
static const struct xg x_flat_all[] = {
	{ "gemm", { 500, 500, 1000, 1000, 2000 }, { 500, 300, 100, 1100, 100 }, 5, 5, 5000 },
	{ "step", { 0 }, { 0 }, 0, 3, 6000 },
	{ "layer", { 3000 }, { 1144 }, 1, 2, 4000 },
	{ "copy", { 1000 }, { -100 }, 1, 1, 1000 },
	{ "rec", { 0 }, { 0 }, 0, 1, 500 }, /* once, not once per rec */
};
static const struct xg x_flat_main[] = {
	{ "gemm", { 1000, 2000 }, { 1100, 100 }, 2, 2, 3000 },
	{ "layer", { 3000 }, { 1144 }, 1, 2, 4000 },
};

static char g_ctx[160];
#define EQ(a, b)                                                                                              \
	do {                                                                                                  \
		long long a_ = (long long)(a), b_ = (long long)(b);                                           \
		if (a_ != b_)                                                                                 \
			fail_msg("%s: %s = %lld, expected %lld", g_ctx, #a, a_, b_);                          \
	} while (0)

static uint32_t node_of(const struct ana_result *res, const struct ana_tree *t, const char *path)
{
	uint32_t node = 0;
	char buf[256], *save = NULL;
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *part = strtok_r(buf, ";", &save); part; part = strtok_r(NULL, ";", &save)) {
		uint32_t next = UINT32_MAX;
		for (uint32_t i = 0; i < t->n[node].nchild; i++)
			if (strcmp(ana_name(res, t->n[t->n[node].child[i]].id), part) == 0)
				next = t->n[node].child[i];
		if (next == UINT32_MAX)
			fail_msg("no call path %s", path);
		node = next;
	}
	return node;
}

static uint32_t id_of(const char *name)
{
	for (uint32_t id = 1; id < NIDS; id++)
		if (strcmp(names[id], name) == 0)
			return id;
	fail_msg("no id for %s", name);
	return 0;
}

static void check_gpu_agg(const struct ana_result *res, const struct ana_agg *a, const struct xg *x, const char *what)
{
	snprintf(g_ctx, sizeof(g_ctx), "%s %s", what, x->key);
	if (!a->gpu)
		fail_msg("%s: no GPU figures", g_ctx);
	const struct ana_gpu_dist *d = &a->gpu->self;
	uint64_t total = 0, early = 0;
	int64_t lmin = 0, lmax = 0;
	double lsum = 0;
	for (int i = 0; i < x->n; i++) {
		total += x->d[i];
		lsum += (double)x->lat[i];
		early += x->lat[i] < 0;
		if (i == 0 || x->lat[i] < lmin)
			lmin = x->lat[i];
		if (i == 0 || x->lat[i] > lmax)
			lmax = x->lat[i];
	}
	EQ(d->count, x->n);
	EQ(d->total_ns, total);
	EQ(a->gpu->incl_count, x->incl_count);
	EQ(a->gpu->incl_total_ns, x->incl_total);
	EQ(d->early, early);
	struct ana_row w;
	ana_row_compute(res, a, &w);
	if (x->n) {
		EQ(d->min_ns, x->d[0]);
		EQ(d->max_ns, x->d[x->n - 1]);
		EQ(d->lat_min_ns, lmin);
		EQ(d->lat_max_ns, lmax);
		EQ(w.gpu_p50, pct_of(x->d, (size_t)x->n, 0.50));
		EQ(w.gpu_p99, pct_of(x->d, (size_t)x->n, 0.99));
		if (fabs(w.gpu_mean - (double)total / x->n) > 1e-9 || fabs(w.gpu_lat_mean - lsum / x->n) > 1e-9)
			fail_msg("%s: GPU mean %.3f, latency mean %.3f", g_ctx, w.gpu_mean, w.gpu_lat_mean);
	}
	if (fabs(w.gpu_over_cpu - (double)x->incl_total / (double)a->total_ns) > 1e-12)
		fail_msg("%s: GPU/CPU %.6f", g_ctx, w.gpu_over_cpu);
}

static const struct ana_tree *thread_tree(const struct ana_result *res, uint32_t index)
{
	for (size_t i = 0; i < res->nthreads; i++)
		if (res->threads[i].index == index)
			return &res->threads[i].tree;
	fail_msg("no thread %u", index);
	return NULL;
}

/* Every row's GPU figures of the GPU trace, read either way. */
static void check_rows(const struct ana_result *res, const char *mode)
{
	char what[64];
	for (size_t i = 0; i < PT_ARRAY_SIZE(x_tree_main); i++) {
		const struct ana_tree *t = thread_tree(res, 0);
		snprintf(what, sizeof(what), "%s thread 0 tree", mode);
		check_gpu_agg(res, &t->n[node_of(res, t, x_tree_main[i].key)].agg, &x_tree_main[i], what);
		snprintf(what, sizeof(what), "%s merged tree", mode);
		check_gpu_agg(res, &res->merged.n[node_of(res, &res->merged, x_tree_main[i].key)].agg, &x_tree_main[i],
			      what);
	}
	for (size_t i = 0; i < PT_ARRAY_SIZE(x_tree_worker); i++) {
		const struct ana_tree *t = thread_tree(res, 1);
		snprintf(what, sizeof(what), "%s thread 1 tree", mode);
		check_gpu_agg(res, &t->n[node_of(res, t, x_tree_worker[i].key)].agg, &x_tree_worker[i], what);
		snprintf(what, sizeof(what), "%s merged tree", mode);
		check_gpu_agg(res, &res->merged.n[node_of(res, &res->merged, x_tree_worker[i].key)].agg,
			      &x_tree_worker[i], what);
	}
	snprintf(what, sizeof(what), "%s flat", mode);
	for (size_t i = 0; i < PT_ARRAY_SIZE(x_flat_all); i++)
		check_gpu_agg(res, &res->by_name[id_of(x_flat_all[i].key)], &x_flat_all[i], what);
	snprintf(what, sizeof(what), "%s thread 0 flat", mode);
	for (size_t i = 0; i < PT_ARRAY_SIZE(x_flat_main); i++)
		check_gpu_agg(res, &res->by_name_thread[0][id_of(x_flat_main[i].key)], &x_flat_main[i], what);
	/* no GPU figures where nothing was launched */
	snprintf(g_ctx, sizeof(g_ctx), "%s idle", mode);
	assert_null(res->merged.n[node_of(res, &res->merged, "idle")].agg.gpu);
	assert_null(res->by_name[ID_IDLE].gpu);
	/* the CPU side is untouched: step;gemm ran twice (1000 + 500 ns) */
	const struct ana_agg *g = &res->merged.n[node_of(res, &res->merged, "step;gemm")].agg;
	EQ(g->count, 2);
	EQ(g->total_ns, 1500);
	EQ(res->by_name[ID_GEMM].count, 6);
	EQ(res->by_name[ID_GEMM].total_ns, 1000 + 500 + 1000 + 400 + 400 + 200);
}

/* ==== Fixture ==== */

static void write_gpu_file(const char *path)
{
	write_gpu(path, PT_FMT_GPU_THREAD_NAME);
}

static int setup_gpu(void **state)
{
	return ana_fixture_setup(state, "gpu.ptz", write_gpu_file);
}

/* ==== Tests: API ==== */

static void test_ana_gpu_pairing_and_totals(void **state)
{
	const struct ana_fixture *g = *state;
	const struct ana_result *r = &g->res;
	snprintf(g_ctx, sizeof(g_ctx), "totals");
	assert_true(r->has_gpu);
	assert_true(r->has_async);
	assert_true(r->has_instants);
	assert_true(r->gpu.file_order);
	EQ(r->gpu.launches, 8);
	EQ(r->gpu.ranges, 8);
	EQ(r->gpu.paired, 7);
	EQ(r->gpu.unmatched_launches, 1); /* seq 5 */
	EQ(r->gpu.unmatched_ranges, 1);   /* seq 99 */
	EQ(r->gpu.pending_peak, 4);       /* after worker's chunk: seqs 2, 3, 7, 8 */
	/* GPU error codes: counted per code, never as misuse */
	EQ(r->gpu.errors[PT_ERRC_GPU_POOL_EMPTY - ANA_GPU_ERRC_FIRST], 3);
	EQ(r->gpu.errors[PT_ERRC_GPU_CAPTURING - ANA_GPU_ERRC_FIRST], 0);
	EQ(r->gpu.errors[PT_ERRC_GPU_CUDA - ANA_GPU_ERRC_FIRST], 1);
	EQ(r->gpu.errors[PT_ERRC_GPU_EARLY_START - ANA_GPU_ERRC_FIRST], 1);
	EQ(r->gpu.errors[PT_ERRC_GPU_QUEUE_FULL - ANA_GPU_ERRC_FIRST], 1); /* from the meta chunk */
	EQ(r->misuse_errors, 1);                                          /* worker's end underflow */
	EQ(r->gpu.off_reason, 0);
	/* spans: the ptz-gpu thread is not in the share denominator; the wall span covers seq 99 */
	EQ(r->threads[2].gpu_thread, 1);
	EQ(r->threads[0].last_ns - r->threads[0].first_ns, SPAN_MAIN);
	EQ(r->threads[1].last_ns - r->threads[1].first_ns, SPAN_WORKER);
	EQ(r->threads[2].last_ns - r->threads[2].first_ns, SPAN_GPU);
	EQ(r->thread_span_sum_ns, SPAN_MAIN + SPAN_WORKER);
	EQ(r->start_ns, T0);
	EQ(r->end_ns, T0 + WALL);
	EQ(r->sections, 12);
	EQ(r->records, 25 + 20 + 15);
	EQ(r->unmatched_ends, 0);
	EQ(r->open_at_end, 0);
}

static void test_ana_gpu_rows(void **state)
{
	const struct ana_fixture *g = *state;
	check_rows(&g->res, "file order");
}

static void test_ana_gpu_devices(void **state)
{
	const struct ana_fixture *g = *state;
	const struct ana_result *r = &g->res;
	snprintf(g_ctx, sizeof(g_ctx), "devices");
	EQ(r->gpu.ndev, 2);
	const struct ana_gpu_device *d0 = &r->gpu.dev[0], *d1 = &r->gpu.dev[1];
	EQ(d0->device, 0);
	EQ(d0->ranges, 5);
	EQ(d0->sum_ns, 2000 + 1000 + 1000 + 3000 + 500);
	/* [200,2200] + [2644,5644] (holding 2700-3700 on S1 and 2900-3900 on S2) + [12500,13000] */
	EQ(d0->busy_ns, 2000 + 3000 + 500);
	EQ(d0->streams, 2);
	EQ(d0->lat.neg, 1);
	EQ(d0->lat.min_ns, -100);
	EQ(d0->lat.max_ns, 1144);
	/* latencies -100, 100, 100, 1100, 1144 */
	EQ(ana_slat_quantile(&d0->lat, 0.50), 100);
	EQ(ana_slat_quantile(&d0->lat, 0.99), 1144);
	EQ(ana_slat_quantile(&d0->lat, 0.20), -100);
	assert_true(fabs(d0->lat.w.mean - 2344.0 / 5) < 1e-9);
	EQ(d1->device, 1);
	EQ(d1->ranges, 3);
	EQ(d1->sum_ns, 2000);
	EQ(d1->busy_ns, 2000);
	EQ(d1->streams, 1);
	EQ(d1->lat.neg, 0);
	EQ(ana_slat_quantile(&d1->lat, 0.50), 300);
	EQ(ana_slat_quantile(&d1->lat, 0.99), 500);
	/* the union stays, without slack (suggest's gpu-idle reads it); the stream set is released */
	EQ(d0->niv, 3);
	EQ(d0->civ, 3);
	EQ(d0->iv[0], T0 + 200);
	EQ(d0->iv[5], T0 + 13000);
	EQ(d0->stream_set.count, 0);
}

static void test_ana_gpu_async_and_instants(void **state)
{
	const struct ana_fixture *g = *state;
	const struct ana_result *r = &g->res;
	snprintf(g_ctx, sizeof(g_ctx), "async");
	EQ(r->async_unmatched_begins, 1); /* 0xA3 */
	EQ(r->async_unmatched_ends, 1);   /* 0xBAD */
	EQ(r->async_pending_peak, 3);
	assert_true(r->nasync > ID_NVTX);
	const struct ana_async *a = &r->async_by_name[ID_NVTX];
	/* 0xA4 400..900 (end read first), 0xA2 1000..1500, 0xA1 300..5300: across threads */
	EQ(a->count, 3);
	EQ(a->total_ns, 6000);
	EQ(a->min_ns, 500);
	EQ(a->max_ns, 5000);
	uint64_t sorted[] = { 500, 500, 5000 };
	EQ(ana_hist_quantile(&a->hist, 0.5, a->count, a->min_ns, a->max_ns), pct_of(sorted, 3, 0.5));
	EQ(ana_hist_quantile(&a->hist, 0.99, a->count, a->min_ns, a->max_ns), 5000);
	for (uint32_t id = 0; id < r->nasync; id++)
		if (id != ID_NVTX)
			EQ(r->async_by_name[id].count, 0);
	snprintf(g_ctx, sizeof(g_ctx), "instants");
	assert_true(r->ninstants > ID_MARK);
	EQ(r->instants_by_name[ID_MARK], 3);
	EQ(r->threads[0].instants[ID_MARK], 2);
	EQ(r->threads[1].instants[ID_MARK], 1);
	EQ(r->threads[2].ninstants, 0);
	/* memory counters of the GPU thread are bytes; "queue" of main is not */
	assert_true(ana_counter_is_bytes(r, &r->threads[2], ID_DEVMEM));
	assert_true(ana_counter_is_bytes(r, &r->threads[2], ID_RSS));
	assert_false(ana_counter_is_bytes(r, &r->threads[0], ID_QUEUE));
	EQ(r->threads[2].ncounters, 2);
	EQ(r->threads[2].counters[0].last, 2000000);
	EQ(r->threads[2].counters[0].min, 1000000);
	EQ(r->threads[2].counters[0].max, 3000000);
}

/* The same trace read thread by thread (thread 2 not named ptz-gpu): the
 * same rows and devices; the pending map then holds every launch of the
 * application threads before the ranges are read (8), and thread 2 counts
 * in the span sum. */
static void test_ana_gpu_thread_order_same_rows(void **state)
{
	(void)state;
	const char *path = tu_path("gpu-thread-order.ptz");
	write_gpu(path, "resolver");
	struct ana_result r;
	const struct ana_options o = { .thread = -1 };
	ana_test_run(path, &o, &r);
	snprintf(g_ctx, sizeof(g_ctx), "thread order");
	assert_false(r.gpu.file_order);
	EQ(r.gpu.pending_peak, 8);
	EQ(r.gpu.paired, 7);
	EQ(r.gpu.unmatched_launches, 1);
	EQ(r.gpu.unmatched_ranges, 1);
	EQ(r.thread_span_sum_ns, SPAN_MAIN + SPAN_WORKER + SPAN_GPU);
	EQ(r.gpu.dev[0].busy_ns, 5500);
	EQ(r.async_unmatched_begins, 1);
	EQ(r.async_unmatched_ends, 1);
	EQ(r.async_by_name[ID_NVTX].total_ns, 6000);
	assert_false(ana_counter_is_bytes(&r, &r.threads[2], ID_DEVMEM));
	check_rows(&r, "thread order");
	/* merged tree rows in the same order either way (threads in index order) */
	struct ana_result f;
	ana_test_run(tu_path("gpu.ptz"), &o, &f);
	EQ(f.merged.count, r.merged.count);
	for (uint32_t n = 0; n < f.merged.count; n++) {
		snprintf(g_ctx, sizeof(g_ctx), "merged node %u", n);
		EQ(f.merged.n[n].id, r.merged.n[n].id);
		EQ(f.merged.n[n].parent, r.merged.n[n].parent);
		EQ(f.merged.n[n].agg.count, r.merged.n[n].agg.count);
		EQ(f.merged.n[n].agg.res.seen, r.merged.n[n].agg.res.seen);
	}
	ana_result_free(&f);
	ana_result_free(&r);
	unlink(path);
}

/* --thread 1: the worker's rows only; the GPU summary and devices still
 * cover the whole trace (the other threads' launches are paired, not
 * attributed). */
static void test_ana_gpu_one_thread(void **state)
{
	const struct ana_fixture *g = *state;
	struct ana_result r;
	const struct ana_options o = { .thread = 1 };
	ana_test_run(g->path, &o, &r);
	snprintf(g_ctx, sizeof(g_ctx), "--thread 1");
	EQ(r.sections, 5);
	EQ(r.records, 20);
	EQ(r.gpu.launches, 8);
	EQ(r.gpu.ranges, 8);
	EQ(r.gpu.paired, 7);
	EQ(r.gpu.unmatched_launches, 1);
	EQ(r.gpu.unmatched_ranges, 1);
	EQ(r.gpu.pending_peak, 4);
	EQ(r.threads[0].sections, 0);
	EQ(r.threads[0].ninstants, 0);
	EQ(r.instants_by_name[ID_MARK], 1);
	/* async halves of the worker only: 0xA1, 0xA4 (ended on main), 0xA3; 0xA2 (begun on main), 0xBAD */
	EQ(r.async_unmatched_begins, 3);
	EQ(r.async_unmatched_ends, 2);
	EQ(r.gpu.errors[PT_ERRC_GPU_POOL_EMPTY - ANA_GPU_ERRC_FIRST], 3);
	EQ(r.gpu.ndev, 2);
	EQ(r.threads[2].ncounters, 0);
	for (size_t i = 0; i < PT_ARRAY_SIZE(x_tree_worker); i++)
		check_gpu_agg(&r, &r.merged.n[node_of(&r, &r.merged, x_tree_worker[i].key)].agg, &x_tree_worker[i],
			      "--thread 1");
	ana_result_free(&r);
}

/* A window keeps the ranges lying inside it (ends included). */
static void test_ana_gpu_window(void **state)
{
	const struct ana_fixture *g = *state;
	struct ana_result r;
	const struct ana_options o = { .thread = -1, .since_ns = 0, .until_ns = 3000 };
	ana_test_run(g->path, &o, &r);
	snprintf(g_ctx, sizeof(g_ctx), "window [0, 3000]");
	/* kept: seq 1 [200,2200], seq 6 [600,1600], seq 7 [2500,3000] */
	EQ(r.gpu.dev[0].ranges, 1);
	EQ(r.gpu.dev[1].ranges, 2);
	EQ(r.gpu.dev[0].busy_ns, 2000);
	EQ(r.gpu.paired, 7); /* pairing is not windowed */
	const struct ana_agg *a = &r.merged.n[node_of(&r, &r.merged, "gemm")].agg;
	EQ(a->gpu->self.count, 2);
	EQ(a->gpu->self.total_ns, 1500);
	a = &r.merged.n[node_of(&r, &r.merged, "step;layer")].agg;
	EQ(a->gpu ? a->gpu->self.count : 0, 0);
	EQ(r.async_by_name[ID_NVTX].count, 2); /* 0xA1 ends at 5300 */
	EQ(r.instants_by_name[ID_MARK], 2);     /* 50 and 700 */
	ana_result_free(&r);
}

/*
 * Busy union, exactly: 300 ranges on device 3 over 4 streams, scrambled
 * order (ranges only: all without a launch), some overlapping, touching,
 * nested or empty; against a brute-force union over a bitmap of the ticks.
 */
static void test_ana_gpu_busy_union_exact(void **state)
{
	(void)state;
	enum { NR = 300, SPAN = 40000 };
	static uint8_t covered[SPAN];
	struct op *ops = calloc(NR + 1, sizeof(*ops));
	assert_non_null(ops);
	uint64_t x = 12345, sum = 0;
	memset(covered, 0, sizeof(covered));
	for (int i = 0; i < NR; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t s = (x >> 33) % (SPAN - 600), len = (x >> 20) % 500;
		if (i % 37 == 0)
			len = 0; /* empty range: no busy time */
		ops[i] = (struct op)R(ID_GEMM, 3, s, s + len, s, 0, (x >> 7) % 4);
		for (uint64_t t = s; t < s + len; t++)
			covered[t] = 1;
		sum += len;
	}
	ops[NR] = (struct op)K(SPAN, ID_QUEUE, 1);
	uint64_t busy = 0;
	for (int t = 0; t < SPAN; t++)
		busy += covered[t];
	const char *const tnames[] = { PT_FMT_GPU_THREAD_NAME };
	const char *path = tu_path("union.ptz");
	struct tb b;
	tb_open(&b, path);
	tb_meta(&b, tnames, 1);
	size_t at = 0;
	while (at <= NR) /* several chunks */
		at = tb_events(&b, 0, ops, at + 64 < NR + 1 ? at + 64 : NR + 1, at);
	tb_close(&b);
	struct ana_result r;
	const struct ana_options o = { .thread = -1 };
	ana_test_run(path, &o, &r);
	snprintf(g_ctx, sizeof(g_ctx), "union");
	EQ(r.gpu.ndev, 1);
	EQ(r.gpu.dev[0].device, 3);
	EQ(r.gpu.dev[0].ranges, NR);
	EQ(r.gpu.dev[0].sum_ns, sum);
	EQ(r.gpu.dev[0].busy_ns, busy);
	EQ(r.gpu.dev[0].streams, 4);
	EQ(r.gpu.unmatched_ranges, NR); /* seq 0: nothing to pair with */
	ana_result_free(&r);
	free(ops);
	unlink(path);
}

/* ==== Tests: outputs ==== */

static void has_line(const char *text, const char *line)
{
	char want[512];
	snprintf(want, sizeof(want), "\n%s\n", line);
	if (!strstr(text, want))
		fail_msg("report lacks the line\n[%s]\nreport:\n%s", line, text);
}

/* Whether the report's section titled @title (up to the next blank line) holds @what. */
static bool in_section(const char *text, const char *title, const char *what)
{
	const char *s = strstr(text, title);
	if (!s)
		fail_msg("report has no section '%s'", title);
	const char *e = strstr(s, "\n\n");
	size_t n = e ? (size_t)(e - s) : strlen(s);
	return memmem(s, n, what, strlen(what)) != NULL;
}

static void test_ana_gpu_report_text(void **state)
{
	const struct ana_fixture *g = *state;
	struct ana_report_opts o = { .sort = ANA_SORT_TIME, .thread = -1 };
	char *t = ana_test_report(&g->res, &o);
	/* header: GPU summary, losses by code, misuse errors unchanged (1) */
	has_line(t, "sections 12, records 60, lost 0 records / 0 sections; errors: 0 unmatched ends, 0 open at end, "
		    "1 recorder-counted");
	has_line(t, "GPU: 8 launches, 8 ranges on 2 devices; 7 paired; unmatched: 1 launch, 1 range");
	has_line(t, "GPU halves not timed (CPU sections kept): 3 pool empty, 1 CUDA call failed, 1 queue full");
	has_line(t, "GPU ranges that started before their launch (kept), counted by the recorder: 1");
	/* GPU time by section, in the call tree's order (step, rec, gemm; idle has none) */
	has_line(t, "name                            ranges GPU total  GPU mean   GPU p50   GPU p99  GPU incl  GPU/CPU     GB/s  GFLOP/s");
	has_line(t, "step                                 0         -         -         -         -   6.00 us     0.60        -        -");
	has_line(t, "  layer                              1   3.00 us   3.00 us   3.00 us   3.00 us   4.00 us     0.89        -        -");
	has_line(t, "    launch to GPU start: mean 1.14 us, min 1.14 us, max 1.14 us; 0 early starts");
	has_line(t, "    copy                             1   1.00 us   1.00 us   1.00 us   1.00 us   1.00 us     2.00        -        -");
	has_line(t, "      launch to GPU start: mean -100 ns, min -100 ns, max -100 ns; 1 early start");
	has_line(t, "  gemm                               1   2.00 us   2.00 us   2.00 us   2.00 us   2.00 us     1.33        -        -");
	has_line(t, "rec                                  0         -         -         -         -    500 ns     0.38        -        -");
	has_line(t, "gemm                                 2   1.50 us    750 ns    500 ns   1.00 us   1.50 us     1.88        -        -");
	has_line(t, "  launch to GPU start: mean 300 ns, min 100 ns, max 500 ns; 0 early starts");
	assert_false(in_section(t, "\nGPU time by section", "\nidle "));
	/* devices: busy / wall span 13.00 us */
	has_line(t, "device  ranges    GPU sum       busy instrumented GPU busy streams early latency p50 latency p99");
	has_line(t, "     0       5    7.50 us    5.50 us                 42.3%       2     1      100 ns     1.14 us");
	has_line(t, "     1       3    2.00 us    2.00 us                 15.4%       1     0      300 ns      500 ns");
	/* the GPU thread's memory, in bytes, and not in the plain counters table */
	has_line(t, "  device memory used (all processes)             2       3       2000000       1000000       3000000");
	has_line(t, "  process RSS                                    2       1      52428800      52428800      52428800");
	has_line(t, "  queue                                 0          1              3              3              3");
	assert_false(in_section(t, "\nCounters\n", "process RSS"));
	assert_false(in_section(t, "\nCounters\n", "device memory"));
	/* async ranges and instants */
	has_line(t, "Async ranges by name (begin and end paired by async id, on any threads); unmatched: 1 begin, 1 end");
	has_line(t, "nvtx-range                                3    6.00 us    2.00 us     500 ns    5.00 us    5.00 us");
	has_line(t, "Instants by name (all threads)");
	has_line(t, "  mark                                              3");
	free(t);
	/* flat by name: gemm over both threads, rec once */
	o.flat = true;
	t = ana_test_report(&g->res, &o);
	has_line(t, "gemm                                 5   5.00 us   1.00 us   1.00 us   2.00 us   5.00 us     1.43        -        -");
	has_line(t, "  launch to GPU start: mean 420 ns, min 100 ns, max 1.10 us; 0 early starts");
	has_line(t, "rec                                  0         -         -         -         -    500 ns     0.38        -        -");
	free(t);
	/* one thread: its rows and instants only */
	o = (struct ana_report_opts){ .sort = ANA_SORT_TIME, .thread = 0 };
	t = ana_test_report(&g->res, &o);
	has_line(t, "Instants by name (thread 0)");
	has_line(t, "  mark                                              2");
	assert_false(in_section(t, "\nGPU time by section", "\nrec "));
	assert_true(in_section(t, "\nGPU time by section", "\nstep "));
	free(t);
}

/* ptanalyze info shows the same GPU summary. */
static void test_ana_gpu_info_text(void **state)
{
	const struct ana_fixture *g = *state;
	char *buf = ana_test_output(ANA_OUT_INFO, &g->res, NULL);
	has_line(buf, "gpu:          8 launches, 8 ranges on 2 devices; 7 paired; unmatched: 1 launch, 1 range");
	has_line(buf, "              GPU halves not timed (CPU sections kept): 3 pool empty, 1 CUDA call failed, "
		      "1 queue full");
	has_line(buf, "  #2    tid 202      ptz-gpu                  15 records        0 sections  span 9.40 us");
	free(buf);
}

/* Splits one CSV line (no quoted fields in this trace) into @f; returns the count. */
static int csv_split(char *line, char **f, int max)
{
	int n = 0;
	for (char *p = line; n < max;) {
		f[n++] = p;
		char *c = strchr(p, ',');
		if (!c)
			break;
		*c = 0;
		p = c + 1;
	}
	return n;
}

static void test_ana_gpu_csv(void **state)
{
	const struct ana_fixture *g = *state;
	const struct ana_report_opts o = { .thread = -1 };
	char *buf = ana_test_output(ANA_OUT_CSV, &g->res, &o);
	char *save = NULL, *line = strtok_r(buf, "\n", &save);
	char *hdr[80];
	int nh = csv_split(line, hdr, 80);
	static const char *const gcols[] = { "gpu_count", "gpu_total_ns", "gpu_mean_ns", "gpu_min_ns", "gpu_max_ns",
					     "gpu_p50_ns", "gpu_p99_ns", "gpu_incl_count", "gpu_incl_total_ns",
					     "gpu_over_cpu", "gpu_launch_latency_mean_ns", "gpu_launch_latency_min_ns",
					     "gpu_launch_latency_max_ns", "gpu_early_starts" };
	/* + the GPU-rate and breakdown columns (test_ana_gpu_rates.c), then the memory columns: the
	 * trace's "process RSS" (on ptz-gpu, as older recorders wrote it) */
	assert_int_equal(nh, 40 + (int)PT_ARRAY_SIZE(gcols) + 14 + 8);
	assert_string_equal(hdr[39], "lossy"); /* the old columns first, unchanged */
	for (size_t k = 0; k < PT_ARRAY_SIZE(gcols); k++)
		assert_string_equal(hdr[40 + k], gcols[k]);
	assert_string_equal(hdr[40 + PT_ARRAY_SIZE(gcols) + 14], "rss_occurrences");
	int seen = 0, async_rows = 0, instant_rows = 0;
	while ((line = strtok_r(NULL, "\n", &save))) {
		char *v[80];
		int n = csv_split(line, v, 80);
		assert_int_equal(n, nh);
		/* view, thread, path */
		if (!strcmp(v[0], "tree") && !strcmp(v[1], "all") && !strcmp(v[2], "step;layer;copy")) {
			seen |= 1;
			static const char *const want[] = { "1", "1000", "1000", "1000", "1000", "1000", "1000", "1",
							    "1000", "2.000000", "-100", "-100", "-100", "1" };
			for (size_t k = 0; k < PT_ARRAY_SIZE(want); k++)
				if (strcmp(v[40 + k], want[k]))
					fail_msg("copy: %s = %s, expected %s", gcols[k], v[40 + k], want[k]);
		} else if (!strcmp(v[0], "flat") && !strcmp(v[1], "all") && !strcmp(v[2], "gemm")) {
			seen |= 2;
			static const char *const want[] = { "5", "5000", "1000", "500", "2000", "1001", "2000", "5",
							    "5000", "1.428571", "420", "100", "1100", "0" };
			for (size_t k = 0; k < PT_ARRAY_SIZE(want); k++)
				if (strcmp(v[40 + k], want[k]))
					fail_msg("flat gemm: %s = %s, expected %s", gcols[k], v[40 + k], want[k]);
		} else if (!strcmp(v[0], "flat") && !strcmp(v[1], "all") && !strcmp(v[2], "idle")) {
			seen |= 4; /* no GPU: zeros */
			for (size_t k = 0; k < PT_ARRAY_SIZE(gcols); k++)
				if (strcmp(v[40 + k], "0") && strcmp(v[40 + k], "0.000000"))
					fail_msg("idle: %s = %s, expected 0", gcols[k], v[40 + k]);
		} else if (!strcmp(v[0], "async")) {
			async_rows++;
			assert_string_equal(v[2], "nvtx-range");
			assert_string_equal(v[6], "3");    /* count */
			assert_string_equal(v[7], "6000"); /* total_ns */
			assert_string_equal(v[10], "2000"); /* mean_ns */
			assert_string_equal(v[12], "500");  /* min_ns */
			assert_string_equal(v[13], "5000"); /* max_ns */
			assert_string_equal(v[14], "500");  /* p50_ns */
			assert_string_equal(v[16], "5000"); /* p99_ns */
		} else if (!strcmp(v[0], "instant")) {
			instant_rows++;
			assert_string_equal(v[2], "mark");
			assert_string_equal(v[6], !strcmp(v[1], "all") ? "3" : !strcmp(v[1], "0") ? "2" : "1");
		}
	}
	assert_int_equal(seen, 7);
	assert_int_equal(async_rows, 1);
	assert_int_equal(instant_rows, 3); /* all, thread 0, thread 1 */
	free(buf);
}

static json_t *jrow(json_t *rows, const char *name, int depth)
{
	size_t i;
	json_t *r;
	json_array_foreach(rows, i, r)
	{
		json_t *p = json_object_get(r, "path");
		const char *n = json_string_value(json_object_get(r, "name"));
		if (n && !strcmp(n, name) && (depth < 0 || (int)json_array_size(p) == depth))
			return r;
	}
	fail_msg("no JSON row %s", name);
	return NULL;
}

static void test_ana_gpu_json(void **state)
{
	const struct ana_fixture *g = *state;
	const struct ana_report_opts o = { .thread = -1 };
	char *buf = ana_test_output(ANA_OUT_JSON, &g->res, &o);
	json_error_t je;
	json_t *root = json_loads(buf, 0, &je);
	if (!root)
		fail_msg("JSON does not parse: %s at line %d", je.text, je.line);
	assert_string_equal(json_string_value(json_object_get(root, "schema")), "ptanalyze-report/1");
	json_t *tr = json_object_get(root, "trace");
	assert_int_equal(jint(tr, "recorder_errors"), 1);
	assert_int_equal(jint(tr, "wall_span_ns"), WALL);
	assert_int_equal(jint(tr, "thread_span_sum_ns"), SPAN_MAIN + SPAN_WORKER);
	json_t *gj = json_object_get(root, "gpu");
	assert_non_null(gj);
	assert_int_equal(jint(gj, "launches"), 8);
	assert_int_equal(jint(gj, "ranges"), 8);
	assert_int_equal(jint(gj, "paired"), 7);
	assert_int_equal(jint(gj, "unmatched_launches"), 1);
	assert_int_equal(jint(gj, "unmatched_ranges"), 1);
	assert_int_equal(jint(gj, "pending_peak"), 4);
	json_t *e = json_object_get(gj, "errors");
	assert_int_equal(jint(e, "pool_empty"), 3);
	assert_int_equal(jint(e, "cuda_call_failed"), 1);
	assert_int_equal(jint(e, "early_start"), 1);
	assert_int_equal(jint(e, "queue_full"), 1);
	assert_int_equal(jint(e, "unfinished_at_close"), 0);
	assert_true(json_is_null(json_object_get(gj, "timing_off_reason")));
	json_t *devs = json_object_get(gj, "devices");
	assert_int_equal(json_array_size(devs), 2);
	json_t *d0 = json_array_get(devs, 0);
	assert_int_equal(jint(d0, "device"), 0);
	assert_int_equal(jint(d0, "ranges"), 5);
	assert_int_equal(jint(d0, "gpu_time_sum_ns"), 7500);
	assert_int_equal(jint(d0, "busy_ns"), 5500);
	assert_true(fabs(json_real_value(json_object_get(d0, "instrumented_gpu_busy")) - 5500.0 / WALL) < 1e-12);
	assert_int_equal(jint(d0, "streams"), 2);
	assert_int_equal(jint(d0, "early_starts"), 1);
	assert_int_equal(jint(d0, "launch_latency_min_ns"), -100);
	assert_int_equal(jint(d0, "launch_latency_max_ns"), 1144);
	assert_int_equal(jint(d0, "launch_latency_p50_ns"), 100);
	assert_int_equal(jint(d0, "launch_latency_p99_ns"), 1144);
	assert_true(fabs(json_real_value(json_object_get(d0, "launch_latency_mean_ns")) - 468.8) < 1e-9);
	/* rows */
	json_t *copy = jrow(json_object_get(root, "tree"), "copy", 3);
	assert_int_equal(jint(copy, "gpu_count"), 1);
	assert_int_equal(jint(copy, "gpu_total_ns"), 1000);
	assert_int_equal(jint(copy, "gpu_launch_latency_min_ns"), -100);
	assert_int_equal(jint(copy, "gpu_early_starts"), 1);
	json_t *step = jrow(json_object_get(root, "tree"), "step", 1);
	assert_int_equal(jint(step, "gpu_count"), 0);
	assert_int_equal(jint(step, "gpu_incl_count"), 3);
	assert_int_equal(jint(step, "gpu_incl_total_ns"), 6000);
	json_t *gemm = jrow(json_object_get(root, "flat"), "gemm", -1);
	assert_int_equal(jint(gemm, "gpu_count"), 5);
	assert_int_equal(jint(gemm, "gpu_p50_ns"), 1001);
	assert_int_equal(jint(gemm, "gpu_p99_ns"), 2000);
	json_t *idle = jrow(json_object_get(root, "flat"), "idle", -1);
	assert_int_equal(jint(idle, "gpu_count"), 0); /* every row has the keys */
	json_t *rec = jrow(json_object_get(root, "flat"), "rec", -1);
	assert_int_equal(jint(rec, "gpu_incl_count"), 1);
	/* async, instants */
	json_t *as = json_object_get(root, "async");
	assert_int_equal(jint(as, "unmatched_begins"), 1);
	assert_int_equal(jint(as, "unmatched_ends"), 1);
	json_t *nv = json_array_get(json_object_get(as, "by_name"), 0);
	assert_string_equal(json_string_value(json_object_get(nv, "name")), "nvtx-range");
	assert_int_equal(jint(nv, "count"), 3);
	assert_int_equal(jint(nv, "total_ns"), 6000);
	assert_int_equal(jint(nv, "p50_ns"), 500);
	assert_int_equal(jint(nv, "p99_ns"), 5000);
	assert_int_equal(jint(nv, "max_ns"), 5000);
	json_t *in = json_array_get(json_object_get(root, "instants"), 0);
	assert_string_equal(json_string_value(json_object_get(in, "name")), "mark");
	assert_int_equal(jint(in, "count"), 3);
	json_t *threads = json_object_get(root, "threads");
	json_t *t0i = json_array_get(json_object_get(json_array_get(threads, 0), "instants"), 0);
	assert_int_equal(jint(t0i, "count"), 2);
	/* the GPU thread's counters carry their unit; others have none */
	json_t *gc = json_object_get(json_array_get(threads, 2), "counters");
	assert_string_equal(json_string_value(json_object_get(json_array_get(gc, 0), "unit")), "bytes");
	assert_int_equal(jint(json_array_get(gc, 0), "max"), 3000000);
	json_t *mc = json_object_get(json_array_get(threads, 0), "counters");
	assert_null(json_object_get(json_array_get(mc, 0), "unit"));
	json_decref(root);
	free(buf);
}

/*
 * GPU timing off: no ranges or launches, an ERROR GPU_OFF (not misuse) and
 * the reason INSTANT on the application thread. The header says so; there
 * is no device table and no GPU section table.
 */
static void test_ana_gpu_timing_off(void **state)
{
	(void)state;
	static const struct op ops[] = {
		B(0, ID_GEMM), I(10, ID_OFF), ERR(20, PT_ERRC_GPU_OFF, 4), E(100, ID_GEMM),
	};
	const char *const tnames[] = { "main" };
	const char *path = tu_path("off.ptz");
	struct tb b;
	tb_open(&b, path);
	tb_meta(&b, tnames, 1);
	tb_events(&b, 0, ops, PT_ARRAY_SIZE(ops), 0);
	tb_close(&b);
	struct ana_result r;
	const struct ana_options o = { .thread = -1 };
	ana_test_run(path, &o, &r);
	snprintf(g_ctx, sizeof(g_ctx), "timing off");
	assert_true(r.has_gpu);
	EQ(r.gpu.off_reason, ID_OFF);
	EQ(r.gpu.errors[PT_ERRC_GPU_OFF - ANA_GPU_ERRC_FIRST], 4);
	EQ(r.misuse_errors, 0);
	EQ(r.gpu.ndev, 0);
	struct ana_report_opts ro = { .sort = ANA_SORT_TIME, .thread = -1 };
	char *t = ana_test_report(&r, &ro);
	has_line(t, "GPU: 0 launches, 0 ranges on 0 devices; 0 paired; unmatched: 0 launches, 0 ranges");
	has_line(t, "GPU halves not timed (CPU sections kept): 4 GPU timing off, 1 queue full");
	has_line(t, "GPU timing off: no CUDA runtime (test)");
	assert_null(strstr(t, "GPU time by section"));
	assert_null(strstr(t, "GPU devices"));
	free(t);
	ana_result_free(&r);
	unlink(path);
}

/* A trace with none of the new records: none of the new output. */
static void test_ana_gpu_absent_adds_nothing(void **state)
{
	(void)state;
	static const struct op ops[] = { B(0, ID_STEP), K(50, ID_QUEUE, 1), E(100, ID_STEP) };
	const char *const tnames[] = { "main" };
	const char *path = tu_path("plain.ptz");
	struct tb b;
	tb_open(&b, path);
	for (uint32_t id = 1; id < NIDS; id++) /* meta without the GPU error record */
		assert_int_equal(fmt_enc_string(&b.e, id, 0, names[id], strlen(names[id])), 0);
	assert_int_equal(fmt_enc_thread(&b.e, 0, 200, T0, 0, tnames[0], strlen(tnames[0])), 0);
	tb_flush(&b, FMT_CHUNK_META, PT_FMT_META_THREAD);
	tb_events(&b, 0, ops, PT_ARRAY_SIZE(ops), 0);
	tb_close(&b);
	struct ana_result r;
	const struct ana_options o = { .thread = -1 };
	ana_test_run(path, &o, &r);
	assert_false(r.has_gpu || r.has_async || r.has_instants || r.gpu.file_order);
	assert_null(r.by_name[ID_STEP].gpu);
	struct ana_report_opts ro = { .sort = ANA_SORT_TIME, .thread = -1 };
	char *t = ana_test_report(&r, &ro), *buf = NULL;
	assert_null(strstr(t, "GPU"));
	assert_null(strstr(t, "Async"));
	assert_null(strstr(t, "Instants"));
	free(t);
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_int_equal(ana_write_json(f, &r, &ro), 0);
	assert_int_equal(ana_write_csv(f, &r, &ro), 0);
	fclose(f);
	assert_null(strstr(buf, "\"gpu\":"));
	assert_null(strstr(buf, "\"gpu_count\""));
	assert_null(strstr(buf, ",gpu_"));
	assert_null(strstr(buf, "\"async\""));
	assert_null(strstr(buf, "\"instants\""));
	assert_null(strstr(buf, "\"unit\""));
	free(buf);
	ana_result_free(&r);
	unlink(path);
}

/* A GPU section nested in one of its own name on the same stream, with a
 * CPU section between (layer(gpu) > step > layer(gpu), stream S1): the
 * inner range lies inside the outer one, so the flat row of "layer" holds
 * the outer range only (it held both: 2 ranges, 1,200 ns), while "step",
 * between them, holds the inner one, and the tree rows each their own. */
static void test_ana_gpu_flat_covered_same_name(void **state)
{
	(void)state;
	static const struct op ops[] = {
		L(100, ID_LAYER, 1, 0, S1), B(200, ID_STEP), L(250, ID_LAYER, 2, 0, S1), E(500, ID_LAYER),
		E(600, ID_STEP), E(1200, ID_LAYER),
	};
	static const struct op gops[] = {
		R(ID_LAYER, 0, 150, 1150, 100, 1, S1), R(ID_LAYER, 0, 300, 500, 250, 2, S1),
	};
	const char *const tnames[] = { "main", PT_FMT_GPU_THREAD_NAME };
	const char *path = tu_path("covered.ptz");
	struct tb b;
	tb_open(&b, path);
	tb_meta(&b, tnames, 2);
	tb_events(&b, 0, ops, PT_ARRAY_SIZE(ops), 0);
	tb_events(&b, 1, gops, PT_ARRAY_SIZE(gops), 0);
	tb_close(&b);
	struct ana_result r;
	const struct ana_options o = { .thread = -1 };
	ana_test_run(path, &o, &r);
	assert_int_equal(r.gpu.paired, 2);
	const struct ana_gpu *fl = r.by_name[ID_LAYER].gpu, *fs = r.by_name[ID_STEP].gpu;
	assert_non_null(fl);
	assert_non_null(fs);
	assert_int_equal(fl->incl_count, 1);
	assert_int_equal(fl->incl_total_ns, 1000);
	assert_int_equal(fs->incl_count, 1);
	assert_int_equal(fs->incl_total_ns, 200);
	const struct ana_tree *t = &r.merged;
	const struct ana_agg *outer = &t->n[node_of(&r, t, "layer")].agg,
			     *mid = &t->n[node_of(&r, t, "layer;step")].agg,
			     *inner = &t->n[node_of(&r, t, "layer;step;layer")].agg;
	assert_int_equal(outer->gpu->incl_count, 1);
	assert_int_equal(outer->gpu->incl_total_ns, 1000);
	assert_int_equal(mid->gpu->incl_count, 1);
	assert_int_equal(mid->gpu->incl_total_ns, 200);
	assert_int_equal(inner->gpu->incl_count, 1);
	assert_int_equal(inner->gpu->incl_total_ns, 200);
	ana_result_free(&r);
	unlink(path);
}

/* rp_map against a plain array: random adds, finds and removes with
 * colliding keys (multiples of a power of two), growth, backward shifts. */
static void test_rp_map_matches_reference(void **state)
{
	(void)state;
	enum { NK = 4000 };
	struct ent {
		uint64_t key, val;
	};
	struct rp_map m;
	rp_map_init(&m, sizeof(struct ent));
	static uint8_t live[NK];
	memset(live, 0, sizeof(live));
	uint64_t x = 99, nlive = 0, peak = 0;
	for (int step = 0; step < 60000; step++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		uint32_t k = (uint32_t)((x >> 33) % NK);
		uint64_t key = (uint64_t)k << 12; /* same low bits: a weak hash would collide */
		struct ent *e = rp_map_find(&m, key);
		assert_int_equal(e != NULL, live[k]);
		if (e) {
			assert_int_equal(e->val, (uint64_t)k * 3);
			if ((x >> 20) & 1) {
				rp_map_remove(&m, e);
				live[k] = 0;
				nlive--;
			}
		} else {
			e = rp_map_add(&m, key);
			assert_non_null(e);
			assert_int_equal(e->key, key);
			e->val = (uint64_t)k * 3;
			live[k] = 1;
			if (++nlive > peak)
				peak = nlive;
		}
		assert_int_equal(m.count, nlive);
	}
	assert_int_equal(m.peak, peak);
	for (uint32_t k = 0; k < NK; k++) {
		struct ent *e = rp_map_find(&m, (uint64_t)k << 12);
		assert_int_equal(e != NULL, live[k]);
	}
	rp_map_free(&m);
	/* key 0 is a key like any other (stream handle 0: the legacy stream) */
	rp_map_init(&m, sizeof(uint64_t));
	assert_non_null(rp_map_add(&m, 0));
	assert_non_null(rp_map_find(&m, 0));
	assert_null(rp_map_find(&m, 1));
	rp_map_free(&m);
}

/* gpu-idle (ana_suggest.h) on the fixture's devices. Device 0: the union of its ranges is
 * [200, 2200] [2644, 5644] [12500, 13000], busy 5,500 of a 12,800 span (43%); device 1: [600, 1600]
 * [2500, 3000] [3700, 4200], busy 2,000 of 3,600 (56%). No gap reaches 1 ms. */
static void test_ana_gpu_suggest_idle(void **state)
{
	const struct ana_fixture *g = *state;
	const struct ana_result *res = &g->res;
	struct ana_sug s;
	assert_int_equal(ana_suggest(res, NULL, &s), 0);
	const struct ana_finding *d0 = NULL, *d1 = NULL;
	for (size_t i = 0; i < s.n; i++)
		if (s.f[i].rule == ANA_R_GPU_IDLE)
			*(s.f[i].device == 0 ? &d0 : &d1) = &s.f[i];
	assert_non_null(d0);
	assert_null(d1); /* 56% busy, no gap of 1 ms */
	assert_true(d0->ev[0] == 5 && d0->ev[1] == 12800 && d0->ev[2] == 5500);
	assert_true(fabs(d0->ev[3] - 5500.0 / 12800) < 1e-12 && d0->ev[4] == 0 && d0->ev[5] == 0);
	assert_true(isnan(d0->ev[6]) && d0->stake_ns == 12800 - 5500);
	/* the GPU error counts (pool empty 3, CUDA 1, early start 1, queue full 1) are a data-quality finding */
	bool gpu_errors = false;
	for (size_t i = 0; i < s.n; i++)
		gpu_errors |= s.f[i].rule == ANA_R_DATA && s.f[i].cls == ANA_DQ_GPU_ERRORS && s.f[i].ev[0] > 0;
	assert_true(gpu_errors);
	ana_suggest_free(&s);

	/* gaps of 100 ns and more: the gap floor is then 1% of each span (128 and 36 ns) */
	struct ana_sug_opts o = { 0 };
	assert_int_equal(ana_sug_threshold_set(&o, "gap_ms", 0.0001), 0);
	assert_int_equal(ana_sug_threshold_set(&o, "gpu_util_pct", 10), 0);
	assert_int_equal(ana_suggest(res, &o, &s), 0);
	d0 = d1 = NULL;
	for (size_t i = 0; i < s.n; i++)
		if (s.f[i].rule == ANA_R_GPU_IDLE)
			*(s.f[i].device == 0 ? &d0 : &d1) = &s.f[i];
	assert_non_null(d0);
	assert_non_null(d1);
	assert_true(d0->ev[4] == 2 && d0->ev[5] == 444 + 6856 && d0->ev[6] == 6856 && d0->stake_ns == 7300);
	/* seconds from the trace start (pt_open(): start_ticks T0), as --since counts them */
	assert_true(fabs(d0->ev[7] - 5644e-9) < 1e-15);
	assert_true(d1->ev[4] == 2 && d1->ev[5] == 900 + 700 && d1->ev[6] == 900);
	assert_true(d0 < d1); /* ranked by stake: 7,300 ns before 1,600 */
	assert_false(d0->host_read); /* no trace_path: no second read */
	ana_suggest_free(&s);

	/* the host during device 0's longest gap [5644, 12500): on main, step [0, 10000] overlaps 4,356, of
	 * which layer (to 6000) 356 and gemm [7000, 7500] 500: step's self 3,500; idle [11000, 12000] 1,000;
	 * main lives to 12000: 6,356 of the gap, 5,356 in sections, 1,000 in none; the worker's sections all
	 * ended by 4500, its span ends at 6000: 356 with none. The ptz-gpu thread is not a host thread. */
	o.trace_path = g->path;
	assert_int_equal(ana_suggest(res, &o, &s), 0);
	d0 = NULL;
	for (size_t i = 0; i < s.n; i++)
		if (s.f[i].rule == ANA_R_GPU_IDLE && s.f[i].device == 0)
			d0 = &s.f[i];
	assert_non_null(d0);
	assert_true(d0->host_read);
	assert_int_equal(d0->gap_ticks[0], T0 + 5644);
	assert_int_equal(d0->gap_ticks[1], T0 + 12500);
	assert_int_equal(d0->nhost, 4);
	static const struct { uint32_t id; double ns; } want[] = {
		{ ID_STEP, 3500 }, { ID_IDLE, 1000 }, { ID_GEMM, 500 }, { ID_LAYER, 356 } };
	for (int k = 0; k < 4; k++) {
		assert_int_equal(d0->host[k].thread, 0);
		assert_int_equal(d0->host[k].id, want[k].id);
		assert_true(d0->host[k].ns == want[k].ns);
	}
	assert_true(d0->host_none_ns == 1000 + 356);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	ana_suggest_text(f, res, &s, 0);
	assert_int_equal(ana_suggest_json(f, res, &s), 0);
	assert_int_equal(fclose(f), 0);
	assert_non_null(strstr(buf, "        thread #0 step: 3.50 us (51% of the gap)\n"));
	assert_non_null(strstr(buf, "\"host_none_ns\": 1356"));
	free(buf);
	ana_suggest_free(&s);
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--write") == 0) { /* a trace to look at with ptanalyze */
		write_gpu(argv[2], PT_FMT_GPU_THREAD_NAME);
		return 0;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ana_gpu_pairing_and_totals),
		cmocka_unit_test(test_ana_gpu_rows),
		cmocka_unit_test(test_ana_gpu_devices),
		cmocka_unit_test(test_ana_gpu_async_and_instants),
		cmocka_unit_test(test_ana_gpu_thread_order_same_rows),
		cmocka_unit_test(test_ana_gpu_one_thread),
		cmocka_unit_test(test_ana_gpu_window),
		cmocka_unit_test(test_ana_gpu_busy_union_exact),
		cmocka_unit_test(test_ana_gpu_report_text),
		cmocka_unit_test(test_ana_gpu_info_text),
		cmocka_unit_test(test_ana_gpu_csv),
		cmocka_unit_test(test_ana_gpu_json),
		cmocka_unit_test(test_ana_gpu_timing_off),
		cmocka_unit_test(test_ana_gpu_absent_adds_nothing),
		cmocka_unit_test(test_ana_gpu_flat_covered_same_name),
		cmocka_unit_test(test_rp_map_matches_reference),
		cmocka_unit_test(test_ana_gpu_suggest_idle),
	};
	int failed = cmocka_run_group_tests(tests, setup_gpu, ana_fixture_teardown);
	rmdir(tu_tmpdir());
	return failed ? 1 : 0;
}
