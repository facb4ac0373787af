/*
 * tests/analyzer/test_ana_definitions.c - libptanalyze's figures checked
 * against doc/analyzer-output.md on small traces with chosen ticks (1 tick
 * = 1 ns, trace time 0 at T0), each expected value worked out by hand in
 * the comment above its test:
 *  - self time under recursion and misuse closes (an END closing deeper
 *    sections), recursion-safe flat totals, first occurrence per path
 *    process-wide and per thread, rates, counters, unmatched ends and
 *    sections open at end;
 *  - a section open at the end of the trace (or dropped by a chunk
 *    sequence gap) is not counted, so a same-name section closed inside it
 *    adds its inclusive time to the flat total (§2 "counted");
 *  - a thread whose records are all untimed for the span (ERROR, LOSS,
 *    METRIC) has a span of 0, not a wrapped one;
 *  - the merged tree's rows keep the order of §5 when the trace is read in
 *    file order (a "ptz-gpu" thread);
 *  - CSV and JSON carry the same numbers.
 */
#include <jansson.h>
#include <math.h>

#include "tests/analyzer/ana_test_ops.h"
#include "ptz/recorder.h" /* PT_METRIC_*, PT_H2D */

#define T0 1000000ull
#define REAL_NS 1700000000000000000ull

enum { ID_A = 1, ID_B, ID_C, ID_D, ID_E, ID_K, ID_G, NIDS };
static const char *const names[NIDS] = { NULL, "A", "B", "C", "D", "E", "K", "G" };


struct thr {
	const char *name;
	const struct op *ops;
	size_t n;
	bool gap_before; /* skip one chunk sequence number before this thread's chunk */
};

static const struct ana_options all_opts = { .thread = -1 };

/* CLOCK_MONOTONIC ns at tick 1e9 (the clock records map tick 0 to 0 ns): 1 ns per tick unless changed */
static uint64_t g_ns_at_1e9 = 1000000000;

/* Writes @nt threads (one chunk each, in order; each later entry with the
 * same thread index is its next chunk) to @path. @tidx: thread index per entry. */
static void write_trace(const char *path, const struct thr *t, const uint32_t *tidx, size_t nt, uint32_t nthreads,
			const char *const *tnames)
{
	const struct fmt_writer_hdr hd = {
		.clock_source = PT_CLOCK_TSC,
		.pid = 77,
		.start_ticks = T0,
		.start_mono_ns = (uint64_t)((double)T0 * ((double)g_ns_at_1e9 / 1e9)),
		.start_real_ns = REAL_NS,
		.process_name = "ana-definitions",
		.host = "testhost",
		.cmdline = "ana-definitions",
		.recorder_version = "ptz-test 1",
	};
	struct tb b;
	tb_start(&b, path, &hd);
	assert_int_equal(fmt_enc_domain(&b.e, 1, "gpu", 3), 0);
	for (uint32_t id = 1; id < NIDS; id++)
		assert_int_equal(fmt_enc_string(&b.e, id, id == ID_K, names[id], strlen(names[id])), 0);
	for (uint32_t i = 0; i < nthreads; i++)
		assert_int_equal(fmt_enc_thread(&b.e, i, 500 + i, T0, 0, tnames[i], strlen(tnames[i])), 0);
	assert_int_equal(fmt_enc_clock(&b.e, 0, 0, REAL_NS - T0, 1), 0);
	assert_int_equal(fmt_enc_clock(&b.e, 1000000000, g_ns_at_1e9, REAL_NS - T0 + g_ns_at_1e9, 1), 0);
	tb_flush(&b, FMT_CHUNK_META, PT_FMT_META_THREAD);
	for (size_t k = 0; k < nt; k++) {
		if (t[k].gap_before)
			b.seq[tidx[k]]++;
		for (size_t i = 0; i < t[k].n; i++)
			op_encode(&b.e, &t[k].ops[i]);
		tb_flush(&b, FMT_CHUNK_EVENTS, tidx[k]);
	}
	tb_close(&b);
}

/* ==== Lookups ==== */

static const struct ana_tree *tree_of(const struct ana_result *r, int thread)
{
	return thread < 0 ? &r->merged : &r->threads[thread].tree;
}

/* Node of @path ("A;A;B") in @t, or UINT32_MAX. */
static uint32_t node_of(const struct ana_tree *t, const char *path)
{
	uint32_t node = 0;
	char buf[128];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *save = NULL, *tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
		uint32_t id = 0;
		for (uint32_t k = 1; k < NIDS; k++)
			if (strcmp(names[k], tok) == 0)
				id = k;
		uint32_t next = UINT32_MAX;
		for (uint32_t c = 0; c < t->n[node].nchild; c++)
			if (t->n[t->n[node].child[c]].id == id)
				next = t->n[node].child[c];
		if (next == UINT32_MAX)
			return UINT32_MAX;
		node = next;
	}
	return node;
}

static const struct ana_agg *tree_agg(const struct ana_result *r, int thread, const char *path)
{
	uint32_t n = node_of(tree_of(r, thread), path);
	if (n == UINT32_MAX)
		fail_msg("no row %s in view %d", path, thread);
	return &tree_of(r, thread)->n[n].agg;
}

static const struct ana_agg *flat_agg(const struct ana_result *r, int thread, uint32_t id)
{
	assert_true(id < r->nnames);
	return thread < 0 ? &r->by_name[id] : &r->by_name_thread[thread][id];
}

#define CHECK_ROW(a, cnt, tot, slf)                                                                           \
	do {                                                                                                  \
		const struct ana_agg *a_ = (a);                                                               \
		assert_int_equal(a_->count, (cnt));                                                           \
		assert_int_equal(a_->total_ns, (tot));                                                        \
		assert_int_equal(a_->self_ns, (slf));                                                         \
	} while (0)

/* The CSV row of @view/@thread/@path, as an array of at most 64 fields (no quoted fields here). */
static int csv_find(const char *csv, const char *view, const char *thread, const char *path, char f[64][64])
{
	char key[160];
	snprintf(key, sizeof(key), "\n%s,%s,%s,", view, thread, path);
	const char *p = strstr(csv, key);
	if (!p)
		return -1;
	p++;
	int n = 0;
	while (*p && *p != '\n' && n < 64) {
		size_t len = strcspn(p, ",\n");
		snprintf(f[n++], 64, "%.*s", (int)(len < 63 ? len : 63), p);
		p += len;
		if (*p == ',')
			p++;
	}
	return n;
}

/* Column index of @name in the CSV header. */
static int csv_col(const char *csv, const char *name)
{
	int i = 0;
	const char *p = csv;
	size_t nl = strlen(name);
	while (*p && *p != '\n') {
		size_t len = strcspn(p, ",\n");
		if (len == nl && strncmp(p, name, nl) == 0)
			return i;
		i++;
		p += len;
		if (*p == ',')
			p++;
	}
	fail_msg("no CSV column %s", name);
	return -1;
}

/* ana_test_output() out of line (inlined, GCC's -Wdangling-pointer takes
 * pointers into the returned text for pointers to its local). */
static __attribute__((noinline)) char *output(enum ana_test_out what, const struct ana_result *res)
{
	const struct ana_report_opts ro = { .thread = -1 };
	return ana_test_output(what, res, &ro);
}

/* ==== Recursion, misuse closes, first occurrence, rates, counters ==== */

/*
 * thread 0 "main" (ns after T0):
 *   A[100,1100] { A[200,700] { B[300,500] { A[350,450] {r300 w100 f800} } r400 }
 *                 C[800,...] closed by END A at 1100 (misuse: C counts one unmatched end) }
 *   END D at 1200 (nothing open: unmatched);
 *   counter K: 5 @1300, -2 @1400, 9 @1500 (last 9, min -2, max 9);
 *   E[1600,...] never ended (open at end).
 *   span = 1600 - 100 = 1500 (last BEGIN/END/COUNTER: BEGIN E at 1600)
 * thread 1 "worker": A[50,250] {H2D 500}; span 200.
 *
 * merged tree:  A      count 2, durations 200 (t1, starts 50) then 1000: total 1200;
 *                      self = 200 + (1000 - 500 - 300) = 400; first 200 (start 50), rest mean 1000
 *               A;A    500, self 500 - 200 = 300; read 700 write 100 flops 800 incl, self read 400
 *               A;A;B  200, self 100
 *               A;A;B;A 100, self 100
 *               A;C    300, self 300
 * per thread 0: A first = 1000 (start 100): no rest
 * merged flat A: count 4, total 1000 + 200 (outermost per thread), self 400 + 300 + 100 = 800,
 *               first 200 (start 50), rest 1000, 500, 100: mean 533.33
 * flat B: 1, 200, 100; flat C: 1, 300, 300
 * A;A gb_per_s = (700 + 100) / 500 = 1.6; gflop_per_s = 800 / 500 = 1.6; flop_per_byte = 1.0
 * A (merged) h2d 500 over 1200 ns = 0.416667 GB/s
 * share of A = 1200 / (1500 + 200)
 * unmatched ends 2; open at end 1.
 */
static const struct op rec0[] = {
	B(100, ID_A), B(200, ID_A), B(300, ID_B), B(350, ID_A), M(PT_METRIC_READ_BYTES, 300),
	M(PT_METRIC_WRITTEN_BYTES, 100), M(PT_METRIC_FLOPS, 800), E(450, ID_A), E(500, ID_B),
	M(PT_METRIC_READ_BYTES, 400), E(700, ID_A), B(800, ID_C), E(1100, ID_A), E(1200, ID_D),
	K(1300, ID_K, 5), K(1400, ID_K, -2), K(1500, ID_K, 9), B(1600, ID_E),
};
static const struct op rec1[] = { B(50, ID_A), X(PT_H2D, 500), E(250, ID_A) };

static void write_rec(const char *path)
{
	static const char *const tn[] = { "main", "worker" };
	const struct thr t[] = { { "main", rec0, PT_ARRAY_SIZE(rec0), false },
				 { "worker", rec1, PT_ARRAY_SIZE(rec1), false } };
	static const uint32_t ti[] = { 0, 1 };
	write_trace(path, t, ti, 2, 2, tn);
}

static void check_rec(const struct ana_result *r)
{
	assert_int_equal(r->unmatched_ends, 2);
	assert_int_equal(r->open_at_end, 1);
	assert_int_equal(r->threads[0].last_ns - r->threads[0].first_ns, 1500);
	assert_int_equal(r->thread_span_sum_ns, 1700);
	CHECK_ROW(tree_agg(r, -1, "A"), 2, 1200, 400);
	CHECK_ROW(tree_agg(r, -1, "A;A"), 1, 500, 300);
	CHECK_ROW(tree_agg(r, -1, "A;A;B"), 1, 200, 100);
	CHECK_ROW(tree_agg(r, -1, "A;A;B;A"), 1, 100, 100);
	CHECK_ROW(tree_agg(r, -1, "A;C"), 1, 300, 300);
	assert_int_equal(tree_agg(r, -1, "A")->first_ns, 200);
	assert_int_equal(tree_agg(r, -1, "A")->first_start_ns, T0 + 50);
	assert_int_equal(tree_agg(r, 0, "A")->first_ns, 1000);
	assert_int_equal(tree_agg(r, 0, "A")->first_start_ns, T0 + 100);
	CHECK_ROW(flat_agg(r, -1, ID_A), 4, 1200, 800);
	assert_int_equal(flat_agg(r, -1, ID_A)->first_ns, 200);
	CHECK_ROW(flat_agg(r, 0, ID_A), 3, 1000, 600);
	assert_int_equal(flat_agg(r, 0, ID_A)->first_ns, 1000);
	CHECK_ROW(flat_agg(r, -1, ID_B), 1, 200, 100);
	CHECK_ROW(flat_agg(r, -1, ID_C), 1, 300, 300);
	const struct ana_agg *aa = tree_agg(r, -1, "A;A");
	assert_int_equal(aa->metric_incl[ANA_READ], 700);
	assert_int_equal(aa->metric_self[ANA_READ], 400);
	assert_int_equal(flat_agg(r, -1, ID_A)->metric_incl[ANA_READ], 700);
	struct ana_row w;
	ana_row_compute(r, aa, &w);
	assert_true(fabs(w.gbps - 1.6) < 1e-12);
	assert_true(fabs(w.gflops - 1.6) < 1e-12);
	assert_true(fabs(w.intensity - 1.0) < 1e-12);
	ana_row_compute(r, tree_agg(r, -1, "A"), &w);
	assert_true(fabs(w.xfer_gbps[0] - 500.0 / 1200.0) < 1e-12);
	assert_true(fabs(w.share - 1200.0 / 1700.0) < 1e-12);
	assert_true(fabs(w.rest_mean - 1000.0) < 1e-9);
	assert_true(fabs(w.first_over_rest - 0.2) < 1e-12);
	ana_row_compute(r, flat_agg(r, -1, ID_A), &w);
	assert_true(fabs(w.rest_mean - 1600.0 / 3.0) < 1e-9);
	assert_int_equal(r->threads[0].ncounters, 1);
	const struct ana_counter *k = &r->threads[0].counters[0];
	assert_int_equal(k->samples, 3);
	assert_int_equal(k->last, 9);
	assert_int_equal(k->min, -2);
	assert_int_equal(k->max, 9);
}

static void test_rec_api(void **state)
{
	(void)state;
	const char *path = tu_path("defs-rec.ptz");
	write_rec(path);
	struct ana_result r;
	ana_test_run(path, &all_opts, &r);
	check_rec(&r);
	ana_result_free(&r);
	/* the pass-based flat sums (a window wider than the trace) agree */
	struct ana_options o = all_opts;
	o.until_ns = 1000000;
	ana_test_run(path, &o, &r);
	check_rec(&r);
	ana_result_free(&r);
	o = all_opts;
	o.merged_percentiles_only = true;
	ana_test_run(path, &o, &r);
	CHECK_ROW(flat_agg(&r, -1, ID_A), 4, 1200, 800);
	ana_result_free(&r);
	unlink(path);
}

/* The same figures in the CSV and in the JSON. */
static void test_rec_csv_json(void **state)
{
	(void)state;
	const char *path = tu_path("defs-rec2.ptz");
	write_rec(path);
	struct ana_result r;
	ana_test_run(path, &all_opts, &r);
	char *csv = output(ANA_OUT_CSV, &r);
	char f[64][64];
	int ccount = csv_col(csv, "count"), ctotal = csv_col(csv, "total_ns"), cself = csv_col(csv, "self_ns");
	int cfirst = csv_col(csv, "first_ns"), crest = csv_col(csv, "rest_mean_ns"), cgb = csv_col(csv, "gb_per_s");
	int ch2d = csv_col(csv, "h2d_gb_per_s");
	assert_true(csv_find(csv, "tree", "all", "A;A;B;A", f) > 0);
	assert_string_equal(f[ctotal], "100");
	assert_true(csv_find(csv, "flat", "all", "A", f) > 0);
	assert_string_equal(f[ccount], "4");
	assert_string_equal(f[ctotal], "1200");
	assert_string_equal(f[cself], "800");
	assert_string_equal(f[cfirst], "200");
	assert_string_equal(f[crest], "533");
	assert_true(csv_find(csv, "flat", "0", "A", f) > 0);
	assert_string_equal(f[ctotal], "1000");
	assert_string_equal(f[cfirst], "1000");
	assert_true(csv_find(csv, "tree", "all", "A;A", f) > 0);
	assert_string_equal(f[cgb], "1.600000");
	assert_true(csv_find(csv, "tree", "all", "A", f) > 0);
	assert_string_equal(f[ch2d], "0.416667");
	free(csv);

	char *js = output(ANA_OUT_JSON, &r);
	json_error_t je;
	json_t *root = json_loads(js, 0, &je);
	assert_non_null(root);
	json_t *tr = jget(root, "trace");
	assert_int_equal(jint(tr, "unmatched_ends"), 2);
	assert_int_equal(jint(tr, "open_at_end"), 1);
	assert_int_equal(jint(tr, "thread_span_sum_ns"), 1700);
	json_t *flat = jget(root, "flat");
	bool seen = false;
	for (size_t i = 0; i < json_array_size(flat); i++) {
		json_t *row = json_array_get(flat, i);
		if (strcmp(json_string_value(jget(row, "name")), "A"))
			continue;
		seen = true;
		assert_int_equal(jint(row, "total_ns"), 1200);
		assert_int_equal(jint(row, "self_ns"), 800);
		assert_int_equal(jint(row, "first_ns"), 200);
	}
	assert_true(seen);
	json_t *th0 = json_array_get(jget(root, "threads"), 0);
	assert_int_equal(jint(th0, "span_ns"), 1500);
	json_t *k = json_array_get(jget(th0, "counters"), 0);
	assert_int_equal(jint(k, "last"), 9);
	assert_int_equal(jint(k, "min"), -2);
	assert_int_equal(jint(k, "max"), 9);
	json_decref(root);
	free(js);
	ana_result_free(&r);
	unlink(path);
}

/* ==== Uncounted outer sections and flat totals ==== */

/*
 * thread 0: A[0,...] { A[100,300] } never ended: the outer A is open at
 * the end, not aggregated, so it is not "counted" (§2): the inner A is the
 * outermost counted A and adds its inclusive time. Flat A: count 1,
 * total 200, self 200 (total >= self always).
 */
static const struct op open0[] = { B(0, ID_A), B(100, ID_A), E(300, ID_A) };

static void check_open_outer(const char *path, const struct ana_options *o)
{
	struct ana_result r;
	ana_test_run(path, o, &r);
	assert_int_equal(r.open_at_end, 1);
	CHECK_ROW(tree_agg(&r, -1, "A;A"), 1, 200, 200);
	CHECK_ROW(flat_agg(&r, -1, ID_A), 1, 200, 200);
	CHECK_ROW(flat_agg(&r, 0, ID_A), 1, 200, 200);
	ana_result_free(&r);
}

static void test_flat_outer_open_at_end(void **state)
{
	(void)state;
	static const char *const tn[] = { "main" };
	const struct thr t[] = { { "main", open0, PT_ARRAY_SIZE(open0), false } };
	static const uint32_t ti[] = { 0 };
	const char *path = tu_path("defs-open.ptz");
	write_trace(path, t, ti, 1, 1, tn);
	check_open_outer(path, &all_opts); /* flat sums from the tree */
	struct ana_options o = all_opts;
	o.until_ns = 1000000; /* from the pass: everything is in the window */
	check_open_outer(path, &o);
	unlink(path);
}

/*
 * The same with a chunk sequence gap dropping the stack: chunk 0 holds
 * A[0,...] { A[100,300] }, chunk 2 (1 missing) holds B[1000,1100].
 * Flat A: count 1, total 200, self 200.
 */
static const struct op gap_b[] = { B(1000, ID_B), E(1100, ID_B) };

static void test_flat_outer_dropped_by_gap(void **state)
{
	(void)state;
	static const char *const tn[] = { "main" };
	const struct thr t[] = { { "main", open0, PT_ARRAY_SIZE(open0), false },
				 { "main", gap_b, PT_ARRAY_SIZE(gap_b), true } };
	static const uint32_t ti[] = { 0, 0 };
	const char *path = tu_path("defs-gap.ptz");
	write_trace(path, t, ti, 2, 1, tn);
	struct ana_options o = all_opts;
	for (int pass = 0; pass < 2; pass++) {
		struct ana_result r;
		ana_test_run(path, &o, &r);
		assert_int_equal(r.threads[0].gaps, 1);
		assert_int_equal(r.open_at_end, 1);
		CHECK_ROW(flat_agg(&r, -1, ID_B), 1, 100, 100);
		CHECK_ROW(flat_agg(&r, -1, ID_A), 1, 200, 200);
		ana_result_free(&r);
		o.until_ns = 1000000;
	}
	unlink(path);
}

/* ==== Thread spans ==== */

/*
 * thread 0: A[0,1000]; thread 1 holds only an ERROR record (pt_stop
 * misuse) at 500, and a LOSS at 600: no BEGIN, END or COUNTER, so its span
 * is 0 (it must not wrap). Sum of spans 1000; share of A = 1.
 */
static const struct op span0[] = { B(0, ID_A), E(1000, ID_A) };
static const struct op span1[] = { ERR(500, PT_ERRC_END_UNDERFLOW, 1), L(600, 2, 0) };

static void test_span_thread_without_timed_records(void **state)
{
	(void)state;
	static const char *const tn[] = { "main", "quiet" };
	const struct thr t[] = { { "main", span0, PT_ARRAY_SIZE(span0), false },
				 { "quiet", span1, PT_ARRAY_SIZE(span1), false } };
	static const uint32_t ti[] = { 0, 1 };
	const char *path = tu_path("defs-span.ptz");
	write_trace(path, t, ti, 2, 2, tn);
	struct ana_result r;
	ana_test_run(path, &all_opts, &r);
	assert_int_equal(r.misuse_errors, 1);
	assert_int_equal(r.threads[1].last_ns - r.threads[1].first_ns, 0);
	assert_int_equal(r.thread_span_sum_ns, 1000);
	struct ana_row w;
	ana_row_compute(&r, tree_agg(&r, -1, "A"), &w);
	assert_true(fabs(w.share - 1.0) < 1e-12);
	char *js = output(ANA_OUT_JSON, &r);
	json_error_t je;
	json_t *root = json_loads(js, 0, &je);
	assert_non_null(root);
	assert_int_equal(jint(jget(root, "trace"), "thread_span_sum_ns"), 1000);
	assert_int_equal(jint(json_array_get(jget(root, "threads"), 1), "span_ns"), 0);
	json_decref(root);
	free(js);
	ana_result_free(&r);
	unlink(path);
}

/* ==== Row order in file order ==== */

/*
 * thread 0 "main": C[0,100], A[200,300] { B[210,220] }, then B[400,500];
 * thread 1 "ptz-gpu" (the recorder's CUDA thread: the trace is read in
 * file order) records nothing but a counter. §5: merged tree rows come in
 * the order their call path first appears: C, A, A;B, B; the text report
 * breaks ties (here: --sort count, all 1) by first appearance too.
 */
static const struct op ord0[] = { B(0, ID_C), E(100, ID_C), B(200, ID_A), B(210, ID_B), E(220, ID_B), E(300, ID_A),
				  B(400, ID_B), E(500, ID_B) };
static const struct op ord1[] = { K(50, ID_K, 1) };

static void test_merged_row_order_file_order(void **state)
{
	(void)state;
	static const char *const tn[] = { "main", PT_FMT_GPU_THREAD_NAME };
	const struct thr t[] = { { "main", ord0, PT_ARRAY_SIZE(ord0), false },
				 { PT_FMT_GPU_THREAD_NAME, ord1, PT_ARRAY_SIZE(ord1), false } };
	static const uint32_t ti[] = { 0, 1 };
	static const char *const want[] = { "\ntree,all,C,", "\ntree,all,A,", "\ntree,all,A;B,", "\ntree,all,B," };
	const char *path = tu_path("defs-order.ptz");
	write_trace(path, t, ti, 2, 2, tn);
	struct ana_result r;
	ana_test_run(path, &all_opts, &r);
	assert_true(r.gpu.file_order);
	char *csv = output(ANA_OUT_CSV, &r);
	size_t prev = 0;
	for (size_t i = 0; i < PT_ARRAY_SIZE(want); i++) {
		const char *p = strstr(csv, want[i]);
		size_t at = p ? (size_t)(p - csv) : 0;
		if (!p || at < prev)
			fail_msg("CSV merged tree row %s missing or out of order", want[i] + 1);
		prev = at;
	}
	free(csv);
	ana_result_free(&r);
	unlink(path);
}

/* ==== Window with a slope that is not 1 ==== */

/*
 * 0.37 ns per tick. A[270,400] ticks after T0 starts at 99.9 ns, B[271,400]
 * at 100.27 ns: --since 100 ns keeps B only (§4: a section counts only when
 * it lies within the window; 100 / 0.37 = 270.27 ticks).
 */
static const struct op win0[] = { B(270, ID_A), E(400, ID_A), B(271, ID_B), E(400, ID_B) };

static void test_window_since_not_before(void **state)
{
	(void)state;
	static const char *const tn[] = { "main" };
	const struct thr t[] = { { "main", win0, PT_ARRAY_SIZE(win0), false } };
	static const uint32_t ti[] = { 0 };
	const char *path = tu_path("defs-win.ptz");
	g_ns_at_1e9 = 370000000;
	write_trace(path, t, ti, 1, 1, tn);
	g_ns_at_1e9 = 1000000000;
	struct ana_options o = all_opts;
	o.since_ns = 100;
	struct ana_result r;
	ana_test_run(path, &o, &r);
	assert_int_equal(flat_agg(&r, -1, ID_B)->count, 1);
	assert_int_equal(flat_agg(&r, -1, ID_A)->count, 0);
	ana_result_free(&r);
	unlink(path);
}

/* ==== Transfers with no section open ==== */

/*
 * thread 0 "main": H2D 4096 before any section; A[100,200] {D2H 100};
 *                  then H2D 1000, P2P 7 and r64 with nothing open.
 * thread 1 "worker": A[0,10], every transfer inside a section (none).
 * Unattributed on thread 0: H2D 5096 bytes in 2 transfers, P2P 7 in 1,
 * read 64; A keeps its own D2H 100 and nothing else.
 */
static const struct op ux0[] = { X(PT_H2D, 4096), B(100, ID_A), X(PT_D2H, 100), E(200, ID_A),
				 X(PT_H2D, 1000), X(PT_P2P, 7), M(PT_METRIC_READ_BYTES, 64) };
static const struct op ux1[] = { B(0, ID_A), X(PT_D2D, 9), E(10, ID_A) };

static void test_unattributed_transfers(void **state)
{
	(void)state;
	const char *path = tu_path("defs-unattributed.ptz");
	static const char *const tn[] = { "main", "worker" };
	const struct thr t[] = { { "main", ux0, PT_ARRAY_SIZE(ux0), false },
				 { "worker", ux1, PT_ARRAY_SIZE(ux1), false } };
	static const uint32_t ti[] = { 0, 1 };
	write_trace(path, t, ti, 2, 2, tn);
	struct ana_result r;
	ana_test_run(path, &all_opts, &r);
	const struct ana_thread *t0 = &r.threads[0], *t1 = &r.threads[1];
	assert_int_equal(t0->unattributed_xfer[PT_H2D - 1], 5096);
	assert_int_equal(t0->unattributed_xfer_count[PT_H2D - 1], 2);
	assert_int_equal(t0->unattributed_xfer[PT_D2H - 1], 0);
	assert_int_equal(t0->unattributed_xfer_count[PT_D2H - 1], 0);
	assert_int_equal(t0->unattributed_xfer[PT_P2P - 1], 7);
	assert_int_equal(t0->unattributed_xfer_count[PT_P2P - 1], 1);
	assert_int_equal(t0->unattributed[ANA_READ], 64);
	for (int d = 0; d < ANA_DIRS; d++)
		assert_int_equal(t1->unattributed_xfer_count[d], 0);
	const struct ana_agg *a = tree_agg(&r, -1, "A");
	assert_int_equal(ana_xfer_incl(a, PT_D2H - 1), 100);
	assert_int_equal(ana_xfer_incl(a, PT_H2D - 1), 0);
	assert_int_equal(ana_xfer_incl(a, PT_D2D - 1), 9);

	char *text = output(ANA_OUT_TEXT, &r);
	assert_non_null(strstr(text, "\nthread 0: transfers recorded outside any section: H2D 5096 bytes (2), "
				     "P2P 7 bytes (1)\n"));
	assert_null(strstr(text, "thread 1: transfers"));
	free(text);

	char *js = output(ANA_OUT_JSON, &r);
	json_error_t jerr;
	json_t *root = json_loads(js, 0, &jerr);
	if (!root)
		fail_msg("JSON: line %d: %s", jerr.line, jerr.text);
	json_t *th = json_object_get(root, "threads");
	json_t *ux = json_object_get(json_array_get(th, 0), "unattributed_transfers");
	assert_non_null(ux);
	assert_int_equal(json_integer_value(json_object_get(ux, "h2d_bytes")), 5096);
	assert_int_equal(json_integer_value(json_object_get(ux, "h2d_count")), 2);
	assert_int_equal(json_integer_value(json_object_get(ux, "d2h_bytes")), 0);
	assert_int_equal(json_integer_value(json_object_get(ux, "p2p_bytes")), 7);
	assert_int_equal(json_integer_value(json_object_get(ux, "p2p_count")), 1);
	assert_null(json_object_get(json_array_get(th, 1), "unattributed_transfers"));
	json_decref(root);
	free(js);
	ana_result_free(&r);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rec_api),
		cmocka_unit_test(test_rec_csv_json),
		cmocka_unit_test(test_flat_outer_open_at_end),
		cmocka_unit_test(test_flat_outer_dropped_by_gap),
		cmocka_unit_test(test_span_thread_without_timed_records),
		cmocka_unit_test(test_merged_row_order_file_order),
		cmocka_unit_test(test_window_since_not_before),
		cmocka_unit_test(test_unattributed_transfers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
