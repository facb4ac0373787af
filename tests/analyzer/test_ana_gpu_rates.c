/*
 * tests/analyzer/test_ana_gpu_rates.c - rates over GPU time, the time
 * breakdown and rankings by occupied time (doc/analyzer-output.md §3.1,
 * §9.1; issue 16) on a trace written with the internal writer at chosen
 * ticks, so that every figure is exact.
 *
 * 1 tick = 1 ns; times are ns after T0 = 1 ms. Thread 0 "main":
 *   step[500, 8500000] {
 *     gemm[1000, 11000]          seq 1, dev 0, S1: GPU [20000, 2020000] (2 ms);
 *                                9e6 FLOPs, 72e6 bytes read (declared in gemm)
 *     copy[2100000, 2120000]     seq 2, dev 0, S2: GPU [2200000, 8200000] (6 ms);
 *                                64 MiB H2D (declared in copy)
 *   }
 *   big[9000000, 9450000]        seq 3, dev 0, S1: GPU [9100000, 209100000] (200 ms, 0.45 ms CPU)
 *   cpu[210000000, 240000000]    30 ms of CPU, 30e6 FLOPs
 * Thread 1 "ptz-gpu": the three ranges, written after main's chunk.
 *
 * Invariants covered (each failed before issue 16):
 *  - GPU rates are the declared work over GPU time: gemm 4.5 GFLOP/s and
 *    36 GB/s (not 900 and 7,200 over its 10 us launch), copy 64 MiB / 6 ms
 *    H2D; inclusive rates of step are its GPU sections' work over its
 *    inclusive GPU time; a rate with no GPU time is absent (NaN / null /
 *    empty / "-"), never infinite;
 *  - the breakdown: step's GPU time is the sum of its children's, transfer +
 *    compute = GPU, launch = the GPU sections' self CPU time <= CPU;
 *  - --bottlenecks ranks big (200 ms on the GPU, 0.45 ms on the CPU) first;
 *  - hot-section fires on big with a stake of its GPU time, at most the
 *    GPU busy time; roofline does not judge GPU sections against CPU roofs;
 *  - the text report, CSV and JSON carry the same figures; the call tree's
 *    one GB/s and GFLOP/s column shows a GPU section's rates over GPU time
 *    (starred), a CPU section's over CPU time.
 */
#include <jansson.h>
#include <math.h>

#include "tests/analyzer/ana_test_util.h"
#include "ptz/recorder.h"
#include "analyzer/ana_peaks.h"
#include "analyzer/ana_suggest.h"

#define T0 1000000ull
#define REAL_NS 1700000000000000000ull
#define MIB64 67108864ull

enum { ID_STEP = 1, ID_GEMM, ID_COPY, ID_BIG, ID_CPU, NIDS };
static const char *const names[NIDS] = { NULL, "step", "gemm", "copy", "big", "cpu" };
enum { S1 = 11, S2 = 12 };

/* Starts a trace at @path: the names, threads "main" (0) and "ptz-gpu"
 * (1), 1 tick = 1 ns. */
static void start_trace(struct tb *b, const char *path)
{
	const struct fmt_writer_hdr hd = {
		.clock_source = PT_CLOCK_TSC, .pid = 4242, .start_ticks = T0, .start_mono_ns = T0, .start_real_ns = REAL_NS,
		.process_name = "rates-test", .host = "testhost", .cmdline = "rates-test", .recorder_version = "ptz-test 1",
	};
	tb_start(b, path, &hd);
	for (uint32_t id = 1; id < NIDS; id++)
		assert_int_equal(fmt_enc_string(&b->e, id, 0, names[id], strlen(names[id])), 0);
	assert_int_equal(fmt_enc_thread(&b->e, 0, 300, T0, 0, "main", 4), 0);
	assert_int_equal(fmt_enc_thread(&b->e, 1, 301, T0, 0, PT_FMT_GPU_THREAD_NAME, strlen(PT_FMT_GPU_THREAD_NAME)),
			 0);
	assert_int_equal(fmt_enc_clock(&b->e, 0, 0, REAL_NS - T0, 1), 0);
	assert_int_equal(fmt_enc_clock(&b->e, 1000000000, 1000000000, REAL_NS - T0 + 1000000000, 1), 0);
	tb_flush(b, FMT_CHUNK_META, PT_FMT_META_THREAD);
}

static void write_trace(const char *path)
{
	struct tb b;
	start_trace(&b, path);

	struct fmt_enc *e = &b.e;
	fmt_enc_begin(e, T0 + 500, ID_STEP);
	assert_int_equal(fmt_enc_lp5(e, PT_REC_GPU_LAUNCH, ID_GEMM, 0, S1, 1, T0 + 1000), 0);
	fmt_enc_begin(e, T0 + 1000, ID_GEMM);
	fmt_enc_metric(e, PT_METRIC_FLOPS, 9000000);
	fmt_enc_metric(e, PT_METRIC_READ_BYTES, 72000000);
	fmt_enc_end(e, T0 + 11000, ID_GEMM);
	assert_int_equal(fmt_enc_lp5(e, PT_REC_GPU_LAUNCH, ID_COPY, 0, S2, 2, T0 + 2100000), 0);
	fmt_enc_begin(e, T0 + 2100000, ID_COPY);
	fmt_enc_transfer(e, PT_H2D, MIB64);
	fmt_enc_end(e, T0 + 2120000, ID_COPY);
	fmt_enc_end(e, T0 + 8500000, ID_STEP);
	assert_int_equal(fmt_enc_lp5(e, PT_REC_GPU_LAUNCH, ID_BIG, 0, S1, 3, T0 + 9000000), 0);
	fmt_enc_begin(e, T0 + 9000000, ID_BIG);
	fmt_enc_end(e, T0 + 9450000, ID_BIG);
	fmt_enc_begin(e, T0 + 210000000, ID_CPU);
	fmt_enc_metric(e, PT_METRIC_FLOPS, 30000000);
	fmt_enc_end(e, T0 + 240000000, ID_CPU);
	tb_flush(&b, FMT_CHUNK_EVENTS, 0);

	assert_int_equal(fmt_enc_gpu_range(e, ID_GEMM, 0, T0 + 20000, T0 + 2020000, T0 + 1000, 1, S1), 0);
	assert_int_equal(fmt_enc_gpu_range(e, ID_COPY, 0, T0 + 2200000, T0 + 8200000, T0 + 2100000, 2, S2), 0);
	assert_int_equal(fmt_enc_gpu_range(e, ID_BIG, 0, T0 + 9100000, T0 + 209100000, T0 + 9000000, 3, S1), 0);
	tb_flush(&b, FMT_CHUNK_EVENTS, 1);
	tb_close(&b);
}

static int setup(void **state)
{
	return ana_fixture_setup(state, "gpu-rates.ptz", write_trace);
}

/* The merged tree's row at @path ("step;gemm"). */
static const struct ana_agg *row_at(const struct ana_result *res, const char *path)
{
	char buf[64];
	snprintf(buf, sizeof(buf), "%s", path);
	uint32_t node = 0;
	for (char *s = strtok(buf, ";"); s; s = strtok(NULL, ";")) {
		uint32_t id = 0;
		for (uint32_t k = 1; k < NIDS; k++)
			if (strcmp(names[k], s) == 0)
				id = k;
		node = ana_tree_find(&res->merged, node, id);
		assert_true(node != UINT32_MAX);
	}
	return &res->merged.n[node].agg;
}

static bool near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * fabs(b);
}

static void test_rates_exact(void **state)
{
	const struct ana_result *res = &((struct ana_fixture *)*state)->res;
	struct ana_row w;
	ana_row_compute(res, row_at(res, "step;gemm"), &w);
	assert_true(near(w.gpu_gflops, 4.5) && near(w.gpu_gbps, 36.0));
	assert_true(near(w.gpu_self_gflops, 4.5) && near(w.gpu_self_gbps, 36.0));
	assert_true(near(w.gflops, 900.0) && near(w.gbps, 7200.0)); /* the CPU-time rates stay */
	assert_true(isnan(w.gpu_xfer_gbps[0]));
	/* a one-column view shows the GPU rates (the launch-time ones are no rate of anything) */
	assert_true(w.show_gflops_over_gpu && w.show_gbps_over_gpu);
	assert_true(near(w.show_gflops, 4.5) && near(w.show_gbps, 36.0));

	ana_row_compute(res, row_at(res, "step;copy"), &w);
	assert_true(near(w.gpu_xfer_gbps[PT_H2D - 1], (double)MIB64 / 6e6));
	assert_true(isnan(w.gpu_gbps) && isnan(w.gpu_gflops) && isnan(w.gpu_self_gbps)); /* declared none */

	/* step declares nothing itself: no self rate; inclusive = its GPU sections' work over 8 ms */
	ana_row_compute(res, row_at(res, "step"), &w);
	assert_true(isnan(w.gpu_self_gflops) && isnan(w.gpu_self_gbps));
	assert_true(near(w.gpu_gflops, 9e6 / 8e6) && near(w.gpu_gbps, 72e6 / 8e6));
	assert_true(near(w.gpu_xfer_gbps[PT_H2D - 1], (double)MIB64 / 6e6));

	/* a CPU section: no GPU rate at all, never infinite */
	ana_row_compute(res, row_at(res, "cpu"), &w);
	assert_true(isnan(w.gpu_gflops) && isnan(w.gpu_gbps) && isnan(w.gpu_self_gflops));
	assert_true(near(w.gflops, 1.0));
	assert_true(!w.show_gflops_over_gpu && near(w.show_gflops, 1.0));
}

static void test_breakdown_sums(void **state)
{
	const struct ana_result *res = &((struct ana_fixture *)*state)->res;
	struct ana_row s, g, c, b;
	ana_row_compute(res, row_at(res, "step"), &s);
	ana_row_compute(res, row_at(res, "step;gemm"), &g);
	ana_row_compute(res, row_at(res, "step;copy"), &c);
	ana_row_compute(res, row_at(res, "big"), &b);
	assert_int_equal(g.bd_cpu_ns, 10000);
	assert_int_equal(g.bd_gpu_ns, 2000000);
	assert_int_equal(g.bd_copy_ns, 0);
	assert_int_equal(g.bd_compute_ns, 2000000);
	assert_int_equal(g.bd_launch_ns, 10000);
	assert_int_equal(c.bd_gpu_ns, 6000000);
	assert_int_equal(c.bd_copy_ns, 6000000);
	assert_int_equal(c.bd_compute_ns, 0);
	assert_int_equal(c.bd_launch_ns, 20000);
	assert_int_equal(s.bd_cpu_ns, 8499500);
	assert_int_equal(s.bd_gpu_ns, g.bd_gpu_ns + c.bd_gpu_ns);
	assert_int_equal(s.bd_copy_ns, g.bd_copy_ns + c.bd_copy_ns);
	assert_int_equal(s.bd_compute_ns, g.bd_compute_ns + c.bd_compute_ns);
	assert_int_equal(s.bd_copy_ns + s.bd_compute_ns, s.bd_gpu_ns);
	assert_int_equal(s.bd_launch_ns, g.bd_launch_ns + c.bd_launch_ns); /* step launches nothing itself */
	assert_true(s.bd_launch_ns <= s.bd_cpu_ns);
	assert_int_equal(b.bd_gpu_ns, 200000000);
	assert_int_equal(b.bd_launch_ns, 450000);
	/* the flat rows (by name) hold the same figures here (no recursion) */
	struct ana_row f;
	ana_row_compute(res, &res->by_name[ID_STEP], &f);
	assert_int_equal(f.bd_gpu_ns, s.bd_gpu_ns);
	assert_int_equal(f.bd_copy_ns, s.bd_copy_ns);
	assert_int_equal(f.bd_launch_ns, s.bd_launch_ns);
	/* occupied: the larger of self CPU and self GPU (capped at the GPU busy time, 208 ms) */
	assert_int_equal(ana_gpu_busy_ns(res), 208000000);
	assert_int_equal(b.occupied_ns, 200000000);
	assert_int_equal(s.occupied_ns, 8499500 - 30000);
	assert_int_equal(g.occupied_ns, 2000000);
}

/* ana_test_output(), out of line: GCC 12 takes the memstream's buffer
 * pointer, inlined, for a local that dangles (-Wdangling-pointer). */
static __attribute__((noinline)) char *out_of(enum ana_test_out what, const struct ana_result *res,
					      const struct ana_report_opts *o)
{
	return ana_test_output(what, res, o);
}

/* Whether line @k of the report's bottlenecks names @name. */
static bool bottleneck_is(const char *text, int k, const char *name)
{
	const char *bn = strstr(text, "\nBottlenecks:");
	char want[64];
	snprintf(want, sizeof(want), "  %2d. %s ", k, name);
	return bn && strstr(bn, want) != NULL;
}

static void test_bottlenecks_rank_gpu(void **state)
{
	const struct ana_result *res = &((struct ana_fixture *)*state)->res;
	const struct ana_report_opts o = { .thread = -1, .bottlenecks = 5 };
	char *text = out_of(ANA_OUT_TEXT, res, &o);
	assert_true(bottleneck_is(text, 1, "big"));
	assert_true(bottleneck_is(text, 2, "cpu"));
	free(text);
}

static void test_suggest_occupied(void **state)
{
	const struct ana_result *res = &((struct ana_fixture *)*state)->res;
	const struct ana_peaks pk = { .gflops64_1 = 10, .gflops64_all = 10, .gbps_1 = 10, .gbps_all = 10 };
	struct ana_sug_opts o = { .peaks = &pk };
	/* gemm's 2 ms of GPU time is 0.8% of the summed thread time: under the default gate */
	assert_int_equal(ana_sug_threshold_set(&o, "min_pct", 0.5), 0);
	struct ana_sug s;
	assert_int_equal(ana_suggest(res, &o, &s), 0);
	const uint32_t big = ana_tree_find(&res->merged, 0, ID_BIG);
	const uint32_t step = ana_tree_find(&res->merged, 0, ID_STEP);
	const uint32_t gemm = ana_tree_find(&res->merged, step, ID_GEMM);
	const uint32_t cpu = ana_tree_find(&res->merged, 0, ID_CPU);
	const struct ana_finding *hot = NULL;
	bool roof_gemm = false, roof_cpu = false;
	for (size_t i = 0; i < s.n; i++) {
		const struct ana_finding *f = &s.f[i];
		if (f->rule == ANA_R_HOT && f->node == big)
			hot = f;
		roof_gemm |= f->rule == ANA_R_ROOFLINE && f->node == gemm;
		roof_cpu |= f->rule == ANA_R_ROOFLINE && f->node == cpu;
		/* every stake is a part of the CPU or the GPU time it is staked on */
		assert_true(f->stake_ns <= fmax((double)res->thread_span_sum_ns, (double)ana_gpu_busy_ns(res)));
	}
	assert_non_null(hot);
	assert_true(hot->stake_ns == 200e6);
	assert_true(hot->ev[6] == 200e6 && hot->ev[7] == 200e6);
	assert_true(hot->stake_ns <= (double)ana_gpu_busy_ns(res));
	/* the first non-data-quality finding: the largest stake */
	for (size_t i = 0; i < s.n; i++)
		if (s.f[i].rule != ANA_R_DATA) {
			assert_ptr_equal(&s.f[i], hot);
			break;
		}
	assert_false(roof_gemm); /* no GPU roofs: not judged on its launch time against the CPU's */
	assert_true(roof_cpu);
	assert_int_equal(s.roofline_gpu_paths, 1);
	ana_suggest_free(&s);
}

/* CSV field @col of the row whose path is @path. */
static char *csv_field(char *csv, const char *path, const char *col)
{
	static char out[64];
	char *save = NULL, *hdr = strtok_r(csv, "\n", &save);
	int want = -1, k = 0;
	for (const char *p = hdr; p; p = strchr(p, ','), p = p ? p + 1 : NULL, k++) {
		size_t n = strcspn(p, ",");
		if (strlen(col) == n && strncmp(p, col, n) == 0)
			want = k;
	}
	assert_true(want >= 0);
	for (char *line = strtok_r(NULL, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *f[128];
		int nf = 0;
		for (char *p = line; p && nf < 128; p = strchr(p, ','), p = p ? p + 1 : NULL)
			f[nf++] = p;
		if (nf > want && strncmp(f[0], "tree,", 5) == 0 && strncmp(f[2], path, strlen(path)) == 0 &&
		    f[2][strlen(path)] == ',') {
			size_t n = strcspn(f[want], ",");
			snprintf(out, sizeof(out), "%.*s", (int)n, f[want]);
			return out;
		}
	}
	fail_msg("CSV: no row %s", path);
	return NULL;
}

static json_t *json_row(json_t *rows, const char *name)
{
	size_t i;
	json_t *r;
	json_array_foreach(rows, i, r)
		if (strcmp(json_string_value(json_object_get(r, "name")), name) == 0)
			return r;
	fail_msg("JSON: no row %s", name);
	return NULL;
}

static void test_outputs_agree(void **state)
{
	const struct ana_result *res = &((struct ana_fixture *)*state)->res;
	const struct ana_report_opts o = { .thread = -1 };
	char *text = out_of(ANA_OUT_TEXT, res, &o);
	assert_non_null(strstr(text, "over the section, 11.18 GB/s over GPU copy time\n"));
	const char *gt = strstr(text, "\nGPU time by section");
	assert_non_null(gt);
	const char *gl = strstr(gt, "\n  gemm ");
	assert_non_null(gl);
	char line[256];
	snprintf(line, sizeof(line), "%.*s", (int)strcspn(gl + 1, "\n"), gl + 1);
	assert_non_null(strstr(line, "    36.00     4.50"));
	assert_non_null(strstr(gt, "time: CPU 8.50 ms (launch 30.00 us), GPU 8.00 ms (transfer 6.00 ms, compute 2.00 ms)"));
	const char *bl = strstr(gt, "\nbig ");
	assert_non_null(bl);
	snprintf(line, sizeof(line), "%.*s", (int)strcspn(bl + 1, "\n"), bl + 1);
	assert_non_null(strstr(line, "        -        -")); /* declared nothing: no rate */
	/* the call tree's GB/s and GFLOP/s: over GPU time, starred, for a GPU
	 * section (not 7,200 and 900 over its 10 us launch); over CPU time for
	 * a CPU section; the legend says so */
	assert_non_null(strstr(text, "GB/s and GFLOP/s marked * are over GPU time"));
	const char *ct = strstr(text, "\nCall tree");
	assert_non_null(ct);
	gl = strstr(ct, "\n  gemm ");
	assert_true(gl && gl < gt);
	snprintf(line, sizeof(line), "%.*s", (int)strcspn(gl + 1, "\n"), gl + 1);
	assert_non_null(strstr(line, "   36.00*    4.50* "));
	gl = strstr(ct, "\ncpu ");
	assert_true(gl && gl < gt);
	snprintf(line, sizeof(line), "%.*s", (int)strcspn(gl + 1, "\n"), gl + 1);
	assert_non_null(strstr(line, "        -     1.00      -"));
	free(text);

	char *csv = out_of(ANA_OUT_CSV, res, &o);
	char *c2 = strdup(csv), *c3 = strdup(csv), *c4 = strdup(csv), *c5 = strdup(csv), *c6 = strdup(csv);
	assert_string_equal(csv_field(csv, "step;gemm", "gpu_gflop_per_s"), "4.500000");
	assert_string_equal(csv_field(c2, "step;gemm", "gpu_gb_per_s"), "36.000000");
	assert_string_equal(csv_field(c3, "step;copy", "gpu_h2d_gb_per_s"), "11.184811");
	assert_string_equal(csv_field(c4, "big", "gpu_gb_per_s"), "");
	assert_string_equal(csv_field(c5, "step", "time_transfer_ns"), "6000000");
	assert_string_equal(csv_field(c6, "big", "occupied_ns"), "200000000");
	free(csv);
	free(c2);
	free(c3);
	free(c4);
	free(c5);
	free(c6);

	char *js = out_of(ANA_OUT_JSON, res, &o);
	json_error_t err;
	json_t *root = json_loads(js, 0, &err);
	assert_non_null(root);
	json_t *rows = jget(root, "tree");
	json_t *g = json_row(rows, "gemm");
	assert_true(near(json_real_value(jget(g, "gpu_gflop_per_s")), 4.5));
	assert_true(near(json_real_value(jget(g, "gpu_gb_per_s")), 36.0));
	assert_true(near(json_real_value(jget(g, "gpu_self_gb_per_s")), 36.0));
	assert_true(near(json_real_value(jget(g, "gflop_per_s")), 900.0));
	json_t *c = json_row(rows, "copy");
	assert_true(near(json_real_value(jget(c, "gpu_h2d_gb_per_s")), (double)MIB64 / 6e6));
	assert_true(json_is_null(jget(c, "gpu_gb_per_s")));
	json_t *st = jget(json_row(rows, "step"), "time");
	assert_int_equal(jint(st, "cpu_ns"), 8499500);
	assert_int_equal(jint(st, "gpu_ns"), 8000000);
	assert_int_equal(jint(st, "transfer_ns"), 6000000);
	assert_int_equal(jint(st, "compute_ns"), 2000000);
	assert_int_equal(jint(st, "launch_ns"), 30000);
	assert_int_equal(jint(json_row(rows, "big"), "occupied_ns"), 200000000);
	json_decref(root);
	free(js);
}

/* Four occurrences of gemm, each declaring 9e6 FLOPs; only the first and
 * the third have a GPU range (2 ms each), the other GPU halves dropped. */
static void write_trace_dropped(const char *path)
{
	struct tb b;
	start_trace(&b, path);
	struct fmt_enc *e = &b.e;
	for (uint64_t k = 0; k < 4; k++) {
		const uint64_t t = T0 + k * 10000000;
		if (k % 2 == 0)
			assert_int_equal(fmt_enc_lp5(e, PT_REC_GPU_LAUNCH, ID_GEMM, 0, S1, k + 1, t), 0);
		fmt_enc_begin(e, t, ID_GEMM);
		fmt_enc_metric(e, PT_METRIC_FLOPS, 9000000);
		fmt_enc_end(e, t + 10000, ID_GEMM);
	}
	tb_flush(&b, FMT_CHUNK_EVENTS, 0);
	for (uint64_t k = 0; k < 4; k += 2) {
		const uint64_t t = T0 + k * 10000000;
		assert_int_equal(fmt_enc_gpu_range(e, ID_GEMM, 0, t + 20000, t + 2020000, t, k + 1, S1), 0);
	}
	tb_flush(&b, FMT_CHUNK_EVENTS, 1);
	tb_close(&b);
}

/* GPU halves dropped: the rates count the timed occurrences' work only
 * (2 x 9e6 FLOPs over 4 ms = 4.5 GFLOP/s, not 36e6 over 4 ms = 9). */
static void test_rates_dropped_halves(void **state)
{
	(void)state;
	void *st = NULL;
	assert_int_equal(ana_fixture_setup(&st, "gpu-rates-dropped.ptz", write_trace_dropped), 0);
	const struct ana_result *res = &((struct ana_fixture *)st)->res;
	struct ana_row w;
	ana_row_compute(res, row_at(res, "gemm"), &w);
	assert_int_equal(w.a->count, 4);
	assert_int_equal(w.a->gpu->self.count, 2);
	assert_true(near(w.gpu_self_gflops, 4.5));
	assert_true(near(w.gpu_gflops, 4.5));
	ana_fixture_teardown(&st);
}

/* Rates and ratios too wide for their columns at two decimals (an H200's
 * 51 TFLOP/s over GPU time, 2,048 FLOP/B, a first call 2e7 times the rest,
 * 5e8 GFLOP/s declared over CPU time): fewer decimals, then %g, so that
 * every row ends where its header does.
 *   gemm[1000, 11000]  seq 1, S1: GPU [20000, 2020000] (2 ms); 2048 x 50270000
 *                      FLOPs and 50270000 bytes read: 51476.48 GFLOP/s over GPU time
 *   cpu[3000000, 23000000], cpu[23000100, 23000101]: 1e16 FLOPs in all */
static void write_trace_wide(const char *path)
{
	struct tb b;
	start_trace(&b, path);
	struct fmt_enc *e = &b.e;
	assert_int_equal(fmt_enc_lp5(e, PT_REC_GPU_LAUNCH, ID_GEMM, 0, S1, 1, T0 + 1000), 0);
	fmt_enc_begin(e, T0 + 1000, ID_GEMM);
	fmt_enc_metric(e, PT_METRIC_FLOPS, 2048ull * 50270000);
	fmt_enc_metric(e, PT_METRIC_READ_BYTES, 50270000);
	fmt_enc_end(e, T0 + 11000, ID_GEMM);
	fmt_enc_begin(e, T0 + 3000000, ID_CPU);
	fmt_enc_metric(e, PT_METRIC_FLOPS, 10000000000000000ull);
	fmt_enc_end(e, T0 + 23000000, ID_CPU);
	fmt_enc_begin(e, T0 + 23000100, ID_CPU);
	fmt_enc_end(e, T0 + 23000101, ID_CPU);
	tb_flush(&b, FMT_CHUNK_EVENTS, 0);
	assert_int_equal(fmt_enc_gpu_range(e, ID_GEMM, 0, T0 + 20000, T0 + 2020000, T0 + 1000, 1, S1), 0);
	tb_flush(&b, FMT_CHUNK_EVENTS, 1);
	tb_close(&b);
}

/* The line of @text after the one starting with @head, whose first token
 * is @name; its length and the header's into *@len and *@hlen. */
static const char *table_line(const char *text, const char *head, const char *name, size_t *len, size_t *hlen)
{
	const char *t = strstr(text, head);
	assert_non_null(t);
	const char *h = strstr(t, "\nname ");
	assert_non_null(h);
	*hlen = strcspn(h + 1, "\n");
	char key[32];
	snprintf(key, sizeof(key), "\n%s ", name);
	const char *l = strstr(h, key);
	assert_non_null(l);
	*len = strcspn(l + 1, "\n");
	return l + 1;
}

static void test_wide_rates_fit(void **state)
{
	(void)state;
	void *st = NULL;
	assert_int_equal(ana_fixture_setup(&st, "gpu-rates-wide.ptz", write_trace_wide), 0);
	const struct ana_result *res = &((struct ana_fixture *)st)->res;
	const struct ana_report_opts o = { .thread = -1 };
	char *text = out_of(ANA_OUT_TEXT, res, &o);
	size_t len, hlen;
	char line[256];
	const char *l = table_line(text, "\nCall tree", "gemm", &len, &hlen);
	snprintf(line, sizeof(line), "%.*s", (int)len, l);
	assert_int_equal(len, hlen);
	assert_string_equal(line + len - 34, "        -   25.14* 51476.5* 2048.0");
	l = table_line(text, "\nCall tree", "cpu", &len, &hlen);
	snprintf(line, sizeof(line), "%.*s", (int)len, l);
	assert_int_equal(len, hlen);
	assert_string_equal(line + len - 34, "   2e+07x        -    5e+08      -");
	l = table_line(text, "\nGPU time by section", "gemm", &len, &hlen);
	snprintf(line, sizeof(line), "%.*s", (int)len, l);
	assert_int_equal(len, hlen);
	assert_string_equal(line + len - 27, "   200.00    25.14 51476.48");
	free(text);
	ana_fixture_teardown(&st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rates_exact),
		cmocka_unit_test(test_breakdown_sums),
		cmocka_unit_test(test_bottlenecks_rank_gpu),
		cmocka_unit_test(test_suggest_occupied),
		cmocka_unit_test(test_outputs_agree),
		cmocka_unit_test(test_rates_dropped_halves),
		cmocka_unit_test(test_wide_rates_fit),
	};
	return cmocka_run_group_tests(tests, setup, ana_fixture_teardown);
}
