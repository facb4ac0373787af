/*
 * tests/analyzer/test_ana_gpu_rules.c - suggest's GPU roofline and GPU
 * rules (doc/analyzer-output.md §9.1, §9.2; issue 16) on a trace written
 * with the internal writer at chosen ticks (1 tick = 1 ns), every GPU
 * range of a known duration, one stream, none overlapping: the GPU busy
 * time is the sum of the ranges.
 *
 * Thread 0 "main", each section launching one range per occurrence,
 * CPU [t, t + cpu], GPU [t + cpu, t + cpu + gpu], the next at the range's
 * end + 1 us:
 *   five kernels, one occurrence each, 10 ms of GPU time, on hand-set GPU
 *   roofs of 1000 GFLOP/s (FP64; FP32 2000) and 100 GB/s (ridge 10 FLOP/B):
 *     cmp   9e9 FLOP, 1e8 B   900 GFLOP/s, AI 90:  compute-bound, e 0.9
 *     slow  7e9 FLOP, 1e8 B   700 GFLOP/s:         compute-bound, e 0.7
 *     mem   9e7 FLOP, 9e8 B   90 GB/s, AI 0.1:     memory-bound, e 0.9
 *     lat   1e8 FLOP, 1e8 B   10 GFLOP/s, AI 1:    e 0.1, on neither roof
 *     fast  1.2e9 B           120 GB/s:            above the GPU's roof
 *   launch-bound (>= 100 ranges; GPU per range < 2 x host per call, or < 10 us):
 *     tiny   200 x (CPU 20 us, GPU 8 us)    fires (ratio 0.4)
 *     shortk 200 x (CPU 2 us, GPU 9 us)     fires (ratio 4.5, but under 10 us)
 *     okk    200 x (CPU 10 us, GPU 21 us)   does not (ratio 2.1, 21 us)
 *     few     99 x (CPU 20 us, GPU 8 us)    does not (99 ranges)
 *   transfer-dominated (copies >= 50% of the GPU time):
 *     step  { up: 64 MiB H2D, GPU 6 ms; k: GPU 2 ms }   fires (75%, h2d)
 *     step2 { up2: 64 MiB H2D, GPU 3 ms; k2: GPU 4 ms } does not (43%)
 *     up, up2 alone (copy sections, all transfer): never
 *   slow-transfer with the pinned (50 GB/s) and pageable (10 GB/s) H2D
 *   rates of peaks --gpu and no link_gbps:
 *     up   11.18 GB/s over its GPU time: slow, likely pageable (<= 1.25 x 10)
 *     up2  22.37 GB/s: slow, not pageable
 *   small-transfers: many, 100 x 4 KiB H2D, GPU 1 ms: the copies' GPU time
 *   and rate in its evidence.
 * Thread 1 "ptz-gpu": the ranges.
 *
 * Each test fails before issue 16's GPU rules: GPU sections were never
 * classified, and launch-bound, transfer-dominated, the pageable evidence
 * and small-transfers' GPU time did not exist.
 */
#include <jansson.h>
#include <math.h>

#include "tests/analyzer/ana_test_util.h"
#include "ptz/recorder.h"
#include "analyzer/ana_peaks.h"
#include "analyzer/ana_suggest.h"

#define T0 1000000ull
#define REAL_NS 1700000000000000000ull
#define US 1000ull
#define MS 1000000ull
#define MIB64 67108864ull
#define STREAM 7

enum { N_CMP = 1, N_SLOW, N_MEM, N_LAT, N_FAST, N_TINY, N_SHORTK, N_OKK, N_FEW, N_STEP, N_UP, N_K, N_STEP2, N_UP2,
       N_K2, N_MANY, N_NAMES };
static const char *const names[N_NAMES] = {
	[N_CMP] = "cmp",     [N_SLOW] = "slow", [N_MEM] = "mem", [N_LAT] = "lat",   [N_FAST] = "fast", [N_TINY] = "tiny",
	[N_SHORTK] = "shortk", [N_OKK] = "okk", [N_FEW] = "few", [N_STEP] = "step", [N_UP] = "up",     [N_K] = "k",
	[N_STEP2] = "step2", [N_UP2] = "up2",   [N_K2] = "k2",   [N_MANY] = "many",
};

struct range {
	uint32_t id;
	uint64_t gs, ge, launch, seq;
};

struct gw {
	struct tb b;
	uint64_t t, seq;
	struct range *r;
	size_t nr;
};

static void room(struct gw *w, uint32_t thread)
{
	if (!fmt_enc_room(&w->b.e, 64 * FMT_MAX_RECORD_BYTES))
		tb_flush(&w->b, FMT_CHUNK_EVENTS, thread);
}

/* One occurrence of GPU section @id: @cpu ns on the CPU, then its range of @gpu ns; FLOPs @fl and
 * bytes read @rd declared, @nx transfers of @xb bytes H2D. */
static void gsec(struct gw *w, uint32_t id, uint64_t cpu, uint64_t gpu, uint64_t fl, uint64_t rd, int nx, uint64_t xb)
{
	struct fmt_enc *e = &w->b.e;
	room(w, 0);
	const uint64_t seq = ++w->seq;
	assert_int_equal(fmt_enc_lp5(e, PT_REC_GPU_LAUNCH, id, 0, STREAM, seq, T0 + w->t), 0);
	fmt_enc_begin(e, T0 + w->t, id);
	if (fl)
		fmt_enc_metric(e, PT_METRIC_FLOPS, fl);
	if (rd)
		fmt_enc_metric(e, PT_METRIC_READ_BYTES, rd);
	for (int k = 0; k < nx; k++) {
		room(w, 0);
		fmt_enc_transfer(e, PT_H2D, xb);
	}
	fmt_enc_end(e, T0 + w->t + cpu, id);
	w->r = realloc(w->r, (w->nr + 1) * sizeof(*w->r));
	assert_non_null(w->r);
	w->r[w->nr++] = (struct range){ id, T0 + w->t + cpu, T0 + w->t + cpu + gpu, T0 + w->t, seq };
	w->t += cpu + gpu + 1 * US;
}

static void write_trace(const char *path)
{
	const struct fmt_writer_hdr hd = {
		.clock_source = PT_CLOCK_TSC, .pid = 4343, .start_ticks = T0, .start_mono_ns = T0, .start_real_ns = REAL_NS,
		.process_name = "gpu-rules", .host = "testhost", .cmdline = "gpu-rules", .recorder_version = "ptz-test 1",
	};
	struct gw w = { .t = 0 };
	tb_start(&w.b, path, &hd);
	for (uint32_t id = 1; id < N_NAMES; id++)
		assert_int_equal(fmt_enc_string(&w.b.e, id, 0, names[id], strlen(names[id])), 0);
	assert_int_equal(fmt_enc_thread(&w.b.e, 0, 400, T0, 0, "main", 4), 0);
	assert_int_equal(fmt_enc_thread(&w.b.e, 1, 401, T0, 0, PT_FMT_GPU_THREAD_NAME, strlen(PT_FMT_GPU_THREAD_NAME)),
			 0);
	assert_int_equal(fmt_enc_clock(&w.b.e, 0, 0, REAL_NS - T0, 1), 0);
	assert_int_equal(fmt_enc_clock(&w.b.e, 1000000000, 1000000000, REAL_NS - T0 + 1000000000, 1), 0);
	tb_flush(&w.b, FMT_CHUNK_META, PT_FMT_META_THREAD);

	w.t = 1 * US;
	gsec(&w, N_CMP, 10 * US, 10 * MS, 9000000000ull, 100000000ull, 0, 0);
	gsec(&w, N_SLOW, 10 * US, 10 * MS, 7000000000ull, 100000000ull, 0, 0);
	gsec(&w, N_MEM, 10 * US, 10 * MS, 90000000ull, 900000000ull, 0, 0);
	gsec(&w, N_LAT, 10 * US, 10 * MS, 100000000ull, 100000000ull, 0, 0);
	gsec(&w, N_FAST, 10 * US, 10 * MS, 0, 1200000000ull, 0, 0);
	for (int i = 0; i < 200; i++)
		gsec(&w, N_TINY, 20 * US, 8 * US, 0, 0, 0, 0);
	for (int i = 0; i < 200; i++)
		gsec(&w, N_SHORTK, 2 * US, 9 * US, 0, 0, 0, 0);
	for (int i = 0; i < 200; i++)
		gsec(&w, N_OKK, 10 * US, 21 * US, 0, 0, 0, 0);
	for (int i = 0; i < 99; i++)
		gsec(&w, N_FEW, 20 * US, 8 * US, 0, 0, 0, 0);
	const uint32_t par[2] = { N_STEP, N_STEP2 }, cp[2] = { N_UP, N_UP2 }, kn[2] = { N_K, N_K2 };
	const uint64_t cg[2] = { 6 * MS, 3 * MS }, kg[2] = { 2 * MS, 4 * MS };
	for (int s = 0; s < 2; s++) {
		room(&w, 0);
		fmt_enc_begin(&w.b.e, T0 + w.t, par[s]);
		w.t += 1 * US;
		gsec(&w, cp[s], 20 * US, cg[s], 0, 0, 1, MIB64);
		gsec(&w, kn[s], 10 * US, kg[s], 0, 0, 0, 0);
		fmt_enc_end(&w.b.e, T0 + w.t, par[s]);
		w.t += 1 * US;
	}
	gsec(&w, N_MANY, 50 * US, 1 * MS, 0, 0, 100, 4096);
	tb_flush(&w.b, FMT_CHUNK_EVENTS, 0);

	for (size_t k = 0; k < w.nr; k++) {
		room(&w, 1);
		const struct range *r = &w.r[k];
		assert_int_equal(fmt_enc_gpu_range(&w.b.e, r->id, 0, r->gs, r->ge, r->launch, r->seq, STREAM), 0);
	}
	tb_flush(&w.b, FMT_CHUNK_EVENTS, 1);
	tb_close(&w.b);
	free(w.r);
}

static int setup(void **state)
{
	return ana_fixture_setup(state, "gpu-rules.ptz", write_trace);
}

/* The merged tree's node of @id under the root, or under @parent's node when @parent != 0. */
static uint32_t node_of(const struct ana_result *res, uint32_t parent, uint32_t id)
{
	uint32_t p = parent ? ana_tree_find(&res->merged, 0, parent) : 0;
	assert_true(p != UINT32_MAX);
	uint32_t n = ana_tree_find(&res->merged, p, id);
	assert_true(n != UINT32_MAX);
	return n;
}

/* The finding of rule @r on node @node; NULL if none. */
static const struct ana_finding *finding(const struct ana_sug *s, enum ana_rule r, uint32_t node)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->f[i].rule == r && s->f[i].node == node)
			return &s->f[i];
	return NULL;
}

static bool near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * fabs(b);
}

/* The roofs of ptanalyze peaks --gpu, by hand: CPU figures too, so that a CPU roof is never what a GPU
 * section is placed on. */
static const struct ana_peaks gpu_peaks = {
	.gflops64_1 = 10, .gflops64_all = 20, .gflops32_1 = 20, .gflops32_all = 40, .gbps_1 = 10, .gbps_all = 20,
	.gpu_name = "Test GPU", .gpu_gflops64 = 1000, .gpu_gflops32 = 2000, .gpu_mem_gbps = 100,
	.gpu_h2d_pinned_gbps = 50, .gpu_h2d_pageable_gbps = 10, .gpu_d2h_pinned_gbps = 50, .gpu_d2h_pageable_gbps = 12,
};

static void run(const struct ana_result *res, const struct ana_peaks *pk, bool fp32, struct ana_sug *s)
{
	struct ana_sug_opts o = { .peaks = pk, .fp32 = fp32 };
	assert_int_equal(ana_sug_threshold_set(&o, "min_pct", 0), 0); /* the triggers alone decide */
	assert_int_equal(ana_suggest(res, &o, s), 0);
}

/* Every stake is a part of the time it is drawn from: per rule, the cap doc §9.1 gives. */
static void check_stakes(const struct ana_result *res, const struct ana_sug *s)
{
	const double busy = (double)ana_gpu_busy_ns(res);
	for (size_t i = 0; i < s->n; i++) {
		const struct ana_finding *f = &s->f[i];
		if (f->node == UINT32_MAX)
			continue;
		const struct ana_agg *a = &res->merged.n[f->node].agg;
		struct ana_row w;
		ana_row_compute(res, a, &w);
		const double self_gpu = fmin(a->gpu ? (double)a->gpu->self.total_ns : 0, busy);
		if (f->rule == ANA_R_ROOFLINE && f->gpu_roofs)
			assert_true(f->stake_ns <= self_gpu);
		if (f->rule == ANA_R_LAUNCH)
			assert_true(f->stake_ns <= (double)w.occupied_ns && f->stake_ns <= (double)a->self_ns);
		if (f->rule == ANA_R_XFER_DOM)
			assert_true(f->stake_ns <= (double)w.bd_copy_ns && f->stake_ns <= busy);
		assert_true(f->stake_ns <= fmax((double)a->total_ns, fmin((double)w.bd_gpu_ns, busy)));
	}
}

static void test_gpu_roofline_classes(void **state)
{
	const struct ana_result *res = &((struct ana_fixture *)*state)->res;
	struct ana_sug s;
	run(res, &gpu_peaks, false, &s);
	const struct { uint32_t id; uint32_t cls; double e; } want[] = {
		{ N_CMP, ANA_ROOF_COMP_NEAR, 0.9 }, { N_SLOW, ANA_ROOF_COMP_BELOW, 0.7 }, { N_MEM, ANA_ROOF_MEM_NEAR, 0.9 },
		{ N_LAT, ANA_ROOF_LATENCY, 0.1 },   { N_FAST, ANA_ROOF_ABOVE, 1.2 },
	};
	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
		const struct ana_finding *f = finding(&s, ANA_R_ROOFLINE, node_of(res, 0, want[k].id));
		assert_non_null(f);
		assert_true(f->gpu_roofs);
		assert_false(f->several_cores);
		assert_int_equal(f->cls, want[k].cls);
		assert_true(near(f->ev[8], want[k].e));
		assert_true(f->ev[6] == 1000 && f->ev[7] == 100); /* the GPU's roofs, never the CPU's 10 / 20 */
		assert_true(f->ev[9] == 10e6);                     /* over its GPU time, not its 10 us launch */
		assert_true(f->ev[2] == 10e3);                     /* total_ns stays the CPU time */
		/* at the roof the work takes t x e of GPU time: the rest is at stake */
		assert_true(near(f->stake_ns, want[k].e < 1 ? 10e6 * (1 - want[k].e) : 0) || (want[k].e >= 1 && f->stake_ns == 0));
	}
	const struct ana_finding *c = finding(&s, ANA_R_ROOFLINE, node_of(res, 0, N_CMP));
	assert_true(near(c->ev[4], 900) && near(c->ev[5], 10) && near(c->ev[3], 90));
	assert_int_equal(s.roofline_gpu_paths, 0);
	check_stakes(res, &s);
	ana_suggest_free(&s);

	/* --fp32: the GPU's FP32 roof (2000): cmp at 900 GFLOP/s, AI 90 above the ridge 20, is at 45% */
	run(res, &gpu_peaks, true, &s);
	c = finding(&s, ANA_R_ROOFLINE, node_of(res, 0, N_CMP));
	assert_non_null(c);
	assert_true(c->ev[6] == 2000);
	assert_int_equal(c->cls, ANA_ROOF_LATENCY);
	ana_suggest_free(&s);

	/* a profile with the GPU's memory roof only: cmp is judged on its bytes alone, and with its FLOP
	 * roof unknown it is "below", never "latency-bound" */
	const struct ana_peaks mem_only = { .gbps_1 = 10, .gpu_mem_gbps = 100 };
	run(res, &mem_only, false, &s);
	c = finding(&s, ANA_R_ROOFLINE, node_of(res, 0, N_CMP));
	assert_non_null(c);
	assert_int_equal(c->cls, ANA_ROOF_MEM_BELOW);
	assert_true(isnan(c->ev[6]) && c->ev[7] == 100 && near(c->ev[8], 0.1));
	assert_int_equal(s.roofline_gpu_paths, 0);
	ana_suggest_free(&s);
}

static void test_gpu_roofline_without_gpu_roofs(void **state)
{
	const struct ana_result *res = &((struct ana_fixture *)*state)->res;
	/* CPU roofs only: the five kernels stay unclassified and counted, on either precision */
	const struct ana_peaks cpu_only = { .gflops64_1 = 10, .gflops64_all = 20, .gbps_1 = 10, .gbps_all = 20,
					    .link_gbps = { 50, 50, 0, 0 } };
	for (int fp32 = 0; fp32 < 2; fp32++) {
		struct ana_sug s;
		run(res, &cpu_only, fp32, &s);
		for (size_t i = 0; i < s.n; i++)
			assert_int_not_equal(s.f[i].rule, ANA_R_ROOFLINE);
		assert_int_equal(s.roofline_paths, 5);
		assert_int_equal(s.roofline_gpu_paths, 5);
		assert_false(s.roofline_no_peaks);
		ana_suggest_free(&s);
	}
	/* a GPU FP64 roof but --fp32, and no GPU memory roof: no GPU roof for what any kernel declares,
	 * and the CPU's memory roof is never used for them */
	const struct ana_peaks fp64_only = { .gbps_1 = 10, .gpu_gflops64 = 1000 };
	struct ana_sug s;
	run(res, &fp64_only, true, &s);
	for (size_t i = 0; i < s.n; i++)
		assert_int_not_equal(s.f[i].rule, ANA_R_ROOFLINE);
	assert_int_equal(s.roofline_gpu_paths, 5);
	ana_suggest_free(&s);
	/* no peaks at all */
	run(res, NULL, false, &s);
	assert_int_equal(s.roofline_gpu_paths, 5);
	ana_suggest_free(&s);
}

static void test_launch_bound(void **state)
{
	const struct ana_result *res = &((struct ana_fixture *)*state)->res;
	struct ana_sug s;
	run(res, &gpu_peaks, false, &s);
	const struct ana_finding *f = finding(&s, ANA_R_LAUNCH, node_of(res, 0, N_TINY));
	assert_non_null(f);
	assert_true(f->ev[0] == 200 && f->ev[1] == 200);
	assert_true(f->ev[2] == 200 * 8e3 && f->ev[3] == 8e3);
	assert_true(f->ev[4] == 200 * 20e3 && f->ev[5] == 20e3);
	assert_true(near(f->ev[6], 0.4));
	assert_true(f->ev[7] == 20e3); /* launched at the section's start, run at its end */
	assert_true(f->stake_ns == 200 * 20e3); /* the launches' host time */
	/* under 10 us per range, though the host launches faster than the GPU runs them */
	f = finding(&s, ANA_R_LAUNCH, node_of(res, 0, N_SHORTK));
	assert_non_null(f);
	assert_true(near(f->ev[6], 4.5));
	assert_true(f->stake_ns == 200 * 2e3);
	/* near misses: 21 us against 10 us of host time (2.1x, not under 10 us); 99 ranges */
	assert_null(finding(&s, ANA_R_LAUNCH, node_of(res, 0, N_OKK)));
	assert_null(finding(&s, ANA_R_LAUNCH, node_of(res, 0, N_FEW)));
	for (size_t i = 0; i < s.n; i++)
		if (s.f[i].rule == ANA_R_LAUNCH)
			assert_true(s.f[i].node == node_of(res, 0, N_TINY) || s.f[i].node == node_of(res, 0, N_SHORTK));
	check_stakes(res, &s);
	ana_suggest_free(&s);
	/* the impact gate: tiny's 4 ms is under 10% of the summed thread time */
	struct ana_sug_opts o = { .peaks = &gpu_peaks };
	assert_int_equal(ana_sug_threshold_set(&o, "min_pct", 10), 0);
	assert_int_equal(ana_suggest(res, &o, &s), 0);
	assert_null(finding(&s, ANA_R_LAUNCH, node_of(res, 0, N_TINY)));
	ana_suggest_free(&s);
}

static void test_transfer_dominated(void **state)
{
	const struct ana_result *res = &((struct ana_fixture *)*state)->res;
	struct ana_sug s;
	run(res, &gpu_peaks, false, &s);
	const struct ana_finding *f = finding(&s, ANA_R_XFER_DOM, node_of(res, 0, N_STEP));
	assert_non_null(f);
	assert_int_equal(f->cls, PT_H2D);
	assert_string_equal(ana_class_key(ANA_R_XFER_DOM, f->cls), "h2d");
	assert_true(f->ev[0] == 8e6 && f->ev[1] == 6e6 && f->ev[2] == 2e6 && near(f->ev[3], 0.75));
	assert_true(f->ev[4] == 6e6 && f->ev[5] == 0 && f->ev[6] == 0 && f->ev[7] == 0);
	assert_true(f->stake_ns == 6e6);
	/* near miss: 3 ms of copies in 7 ms; the copy sections alone are all transfer by definition */
	assert_null(finding(&s, ANA_R_XFER_DOM, node_of(res, 0, N_STEP2)));
	assert_null(finding(&s, ANA_R_XFER_DOM, node_of(res, N_STEP, N_UP)));
	assert_null(finding(&s, ANA_R_XFER_DOM, node_of(res, N_STEP2, N_UP2)));
	assert_null(finding(&s, ANA_R_XFER_DOM, node_of(res, 0, N_MANY)));
	check_stakes(res, &s);
	ana_suggest_free(&s);
}

static void test_transfers_gpu_evidence(void **state)
{
	const struct ana_result *res = &((struct ana_fixture *)*state)->res;
	struct ana_sug s;
	/* no link_gbps: the GPU group's pinned H2D rate is the link's */
	run(res, &gpu_peaks, false, &s);
	const struct ana_finding *f = finding(&s, ANA_R_SLOW_XFER, node_of(res, N_STEP, N_UP));
	assert_non_null(f);
	assert_true(near(f->ev[4], (double)MIB64 / 6e6) && f->ev[5] == 50 && f->ev[7] == 6e6);
	assert_true(f->ev[8] == 10 && near(f->ev[9], (double)MIB64 / 6e6 / 10));
	assert_true(f->pageable);
	assert_true(near(f->stake_ns, 6e6 - (double)MIB64 / 50)); /* within its GPU time */
	/* near miss: twice the rate, well above the pageable one: slow, but not called pageable */
	f = finding(&s, ANA_R_SLOW_XFER, node_of(res, N_STEP2, N_UP2));
	assert_non_null(f);
	assert_true(near(f->ev[9], (double)MIB64 / 3e6 / 10));
	assert_false(f->pageable);
	/* small-transfers: the copies' GPU time and rate */
	f = finding(&s, ANA_R_SMALL_XFER, node_of(res, 0, N_MANY));
	assert_non_null(f);
	assert_true(f->ev[0] == 100 && f->ev[4] == 1e6 && near(f->ev[5], 409600 / 1e6));
	assert_string_equal(ana_evidence_key(ANA_R_SMALL_XFER, 4), "gpu_ns");
	assert_string_equal(ana_evidence_key(ANA_R_SLOW_XFER, 8), "pageable_gbps");
	ana_suggest_free(&s);
	/* without the pageable figure: never called pageable */
	struct ana_peaks pinned_only = gpu_peaks;
	pinned_only.gpu_h2d_pageable_gbps = 0;
	run(res, &pinned_only, false, &s);
	f = finding(&s, ANA_R_SLOW_XFER, node_of(res, N_STEP, N_UP));
	assert_non_null(f);
	assert_false(f->pageable);
	assert_true(isnan(f->ev[8]) && isnan(f->ev[9]));
	ana_suggest_free(&s);
}

static char *sug_text(const struct ana_result *res, const struct ana_sug *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	ana_suggest_text(f, res, s, 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static json_t *sug_json(const struct ana_result *res, const struct ana_sug *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(ana_suggest_json(f, res, s), 0);
	assert_int_equal(fclose(f), 0);
	json_error_t err;
	json_t *root = json_loads(buf, 0, &err);
	free(buf);
	assert_non_null(root);
	return root;
}

/* The JSON finding of @rule on the path ending in @name. */
static json_t *jfinding(json_t *root, const char *rule, const char *name)
{
	size_t i;
	json_t *f;
	json_array_foreach(jget(root, "findings"), i, f)
		if (strcmp(json_string_value(jget(f, "rule")), rule) == 0 && json_object_get(f, "name") &&
		    strcmp(json_string_value(jget(f, "name")), name) == 0)
			return f;
	fail_msg("JSON: no %s finding on %s", rule, name);
	return NULL;
}

static void test_text_and_json(void **state)
{
	const struct ana_result *res = &((struct ana_fixture *)*state)->res;
	struct ana_sug s;
	run(res, &gpu_peaks, false, &s);
	char *t = sug_text(res, &s);
	assert_non_null(strstr(t, "\n          GPU Test GPU: FP64 1000 GFLOP/s, memory 100 GB/s; copies H2D 50 / 10, "
				  "D2H 50 / 12 GB/s (pinned / pageable)\n"));
	assert_non_null(strstr(t, "] cmp: compute-bound-near-roof (GPU section: its declared work over its GPU time "
				  "10.00 ms, on the GPU's roofs)\n"));
	assert_non_null(strstr(t, "= 90% of the attainable GPU roof (1000 FP64 GFLOP/s, 100 GB/s)\n"));
	assert_non_null(strstr(t, "at the roof: 9.00 ms instead of 10.00 ms of GPU time\n"));
	assert_non_null(strstr(t, "[launch-bound] tiny\n"));
	assert_non_null(strstr(t, "[transfer-dominated] step\n"));
	assert_non_null(strstr(t, "likely from pageable host memory"));
	assert_null(strstr(t, "no GPU roof for what they declare"));
	free(t);

	json_t *root = sug_json(res, &s);
	json_t *pk = jget(root, "peaks");
	assert_string_equal(json_string_value(jget(pk, "gpu_name")), "Test GPU");
	assert_true(json_real_value(jget(pk, "gpu_gflops")) == 1000 && json_real_value(jget(pk, "gpu_gbps")) == 100);
	assert_true(json_real_value(jget(pk, "gpu_h2d_pageable_gbps")) == 10);
	json_t *f = jfinding(root, "roofline", "mem");
	assert_string_equal(json_string_value(jget(f, "roofs")), "gpu");
	assert_string_equal(json_string_value(jget(f, "class")), "memory-bound-near-roof");
	assert_true(json_real_value(jget(jget(f, "evidence"), "gpu_ns")) == 10e6);
	f = jfinding(root, "launch-bound", "tiny");
	assert_true(json_is_null(jget(f, "class")));
	assert_true(json_real_value(jget(jget(f, "evidence"), "gpu_mean_ns")) == 8e3);
	assert_true(json_real_value(jget(jget(f, "evidence"), "launch_mean_ns")) == 20e3);
	f = jfinding(root, "transfer-dominated", "step");
	assert_string_equal(json_string_value(jget(f, "class")), "h2d");
	assert_true(json_real_value(jget(jget(f, "evidence"), "transfer_share")) == 0.75);
	assert_true(json_is_true(jget(jfinding(root, "slow-transfer", "up"), "likely_pageable")));
	assert_true(json_is_false(jget(jfinding(root, "slow-transfer", "up2"), "likely_pageable")));
	assert_true(json_real_value(jget(jget(jfinding(root, "small-transfers", "many"), "evidence"), "gpu_ns")) == 1e6);
	assert_int_equal(jint(jget(root, "left_out"), "launch-bound"), 0);
	json_decref(root);
	ana_suggest_free(&s);

	/* without GPU roofs the note says how to measure them */
	const struct ana_peaks cpu_only = { .gbps_1 = 10 };
	run(res, &cpu_only, false, &s);
	t = sug_text(res, &s);
	assert_non_null(strstr(t, "no GPU roof for what they declare"));
	assert_non_null(strstr(t, "ptanalyze peaks --gpu"));
	assert_null(strstr(t, "\n          GPU "));
	free(t);
	ana_suggest_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gpu_roofline_classes),
		cmocka_unit_test(test_gpu_roofline_without_gpu_roofs),
		cmocka_unit_test(test_launch_bound),
		cmocka_unit_test(test_transfer_dominated),
		cmocka_unit_test(test_transfers_gpu_evidence),
		cmocka_unit_test(test_text_and_json),
	};
	return cmocka_run_group_tests(tests, setup, ana_fixture_teardown);
}
