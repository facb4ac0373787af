/*
 * tests/analyzer/test_ana_mem_rows.c - memory per section against a
 * scripted "process RSS" series (doc/analyzer-output.md §3.5).
 *
 * Invariants covered:
 *  - begin = the last sample at or before the BEGIN (the first sample when
 *    none precedes it), end = the last at or before the END, peak = the
 *    largest sample from the begin one to the end one, on another thread
 *    than the samples (attribution by time);
 *  - an occurrence ending before the first sample is not measured (null in
 *    JSON, empty in CSV); row figures: mean begin/end/change, total change,
 *    largest peak;
 *  - a pt_counter() named "... (bytes)" is a memory series too;
 *  - the flusher thread is left out of the sum of thread spans;
 *  - two series sampled at different times (process RSS and a program's
 *    "... (bytes)" counter, as a GPU trace's RSS and device memory), 20,000
 *    random nested sections mostly shorter than a sampling period: every
 *    name's figures of both series equal a brute-force reference of the
 *    rules above (the END path's fast case, both series between the same
 *    two samples, and the slow one);
 *  - suggest's memory-growth rule fires on a path whose RSS grows with
 *    each occurrence (evidence by hand), not on one whose RSS goes up and
 *    back down within each occurrence (flat from begin to end), nor on the
 *    path above the growing one; its triggers move with
 *    ana_sug_threshold_set().
 */
#include <math.h>

#include "tests/analyzer/ana_test_util.h"
#include "analyzer/ana_compare.h"
#include "analyzer/ana_suggest.h"

enum { S_RSS = 1, S_GROW, S_FLAT, S_EARLY, S_STRADDLE, S_TORCH };

static void write_scaled(const char *path, int64_t k)
{
	struct fmt_writer_hdr hd = { .clock_source = PT_CLOCK_MONOTONIC, .pid = 1, .process_name = "mem" };
	struct tb b;
	tb_start(&b, path, &hd);
	static const char *const names[] = { "", "process RSS", "grow", "flat", "early", "straddle", "torch (bytes)" };
	for (uint32_t i = 1; i < PT_ARRAY_SIZE(names); i++)
		fmt_enc_string(&b.e, i, 0, names[i], strlen(names[i]));
	fmt_enc_thread(&b.e, 0, 10, 0, 0, "main", 4);
	fmt_enc_thread(&b.e, 1, 11, 0, 0, PT_FMT_FLUSHER_THREAD_NAME, strlen(PT_FMT_FLUSHER_THREAD_NAME));
	tb_flush(&b, FMT_CHUNK_META, PT_FMT_META_THREAD);
	/* the flusher's samples: t = 100, 200 ... 500 */
	static const int64_t rss[] = { 1000, 5000, 3000, 3000, 2000 };
	for (int i = 0; i < 5; i++)
		fmt_enc_counter(&b.e, 100 * (uint64_t)(i + 1), S_RSS, k * rss[i]);
	tb_flush(&b, FMT_CHUNK_EVENTS, 1);
	fmt_enc_begin(&b.e, 10, S_EARLY); /* before the first sample: not measured */
	fmt_enc_end(&b.e, 50, S_EARLY);
	fmt_enc_begin(&b.e, 60, S_STRADDLE); /* begins before the first sample: begin = the first */
	fmt_enc_counter(&b.e, 120, S_TORCH, 10); /* the program's own, on its own thread */
	fmt_enc_end(&b.e, 150, S_STRADDLE);
	fmt_enc_begin(&b.e, 150, S_GROW); /* 1000 -> 3000, peak 5000 */
	fmt_enc_counter(&b.e, 320, S_TORCH, 70);
	fmt_enc_end(&b.e, 350, S_GROW);
	fmt_enc_begin(&b.e, 410, S_FLAT); /* no sample inside: 3000 throughout */
	fmt_enc_end(&b.e, 420, S_FLAT);
	fmt_enc_begin(&b.e, 450, S_GROW); /* 3000 -> 2000, peak 3000 */
	fmt_enc_end(&b.e, 550, S_GROW);
	tb_flush(&b, FMT_CHUNK_EVENTS, 0);
	tb_close(&b);
}

static void write_trace(const char *path) { write_scaled(path, 1); }

static const struct ana_agg *flat_row(const struct ana_result *res, uint32_t id)
{
	assert_true(id < res->nnames);
	return &res->by_name[id];
}

static void test_mem_rows_scripted(void **state)
{
	struct ana_result *res = &((struct ana_fixture *)*state)->res;
	assert_int_equal(res->nmem, 2);
	uint32_t s = ana_mem_rss(res);
	assert_int_equal(s, 0);
	assert_int_equal(res->mem[s].n, 5);
	assert_int_equal(res->mem[s].period_ns, 100);
	struct ana_mem_fig f;
	assert_true(ana_mem_fig(flat_row(res, S_GROW), s, &f));
	assert_int_equal(f.n, 2);
	assert_true(f.begin == 2000.0 && f.end == 2500.0);
	assert_true(f.delta == 500.0 && f.delta_total == 1000.0);
	assert_int_equal(f.peak, 5000);
	assert_int_equal(f.dmin, -1000);
	assert_int_equal(f.dmax, 2000);
	assert_true(ana_mem_fig(flat_row(res, S_FLAT), s, &f));
	assert_true(f.begin == 3000.0 && f.end == 3000.0 && f.delta == 0.0);
	assert_int_equal(f.peak, 3000);
	assert_true(ana_mem_fig(flat_row(res, S_STRADDLE), s, &f));
	assert_true(f.begin == 1000.0 && f.end == 1000.0);
	assert_false(ana_mem_fig(flat_row(res, S_EARLY), s, &f));
	/* the program's own byte counter: 10 at 120, 70 at 320 */
	assert_true(ana_mem_fig(flat_row(res, S_GROW), 1, &f));
	assert_int_equal(f.n, 2);
	assert_true(f.begin == 40.0 && f.end == 70.0); /* (10 + 70) / 2, (70 + 70) / 2 */
	assert_int_equal(f.peak, 70);
	/* the flusher runs no sections: its span is not in the share denominator */
	assert_int_equal(res->thread_span_sum_ns, 540);
}

/* Reference figures of one name and series (struct ana_mem_row's, by hand). */
struct ref_row {
	uint64_t n;
	int64_t sum_begin, sum_end, peak, dmin, dmax;
};

/* The rules of §3.5 for occurrence [@b, @e] against samples @t/@v (@n, ascending) into @r. */
static void ref_occ(struct ref_row *r, const uint64_t *t, const int64_t *v, size_t n, uint64_t b, uint64_t e)
{
	size_t k = 0;
	while (k < n && t[k] <= e)
		k++;
	if (k == 0)
		return; /* ended before the first sample: not measured */
	size_t ie = k - 1, ib = 0;
	for (size_t i = 0; i < n && t[i] <= b; i++)
		ib = i; /* the last at or before b, else the first */
	if (ib > ie)
		ib = ie;
	int64_t peak = v[ib];
	for (size_t i = ib; i <= ie; i++)
		peak = v[i] > peak ? v[i] : peak;
	const int64_t d = v[ie] - v[ib];
	if (!r->n || peak > r->peak)
		r->peak = peak;
	if (!r->n || d < r->dmin)
		r->dmin = d;
	if (!r->n || d > r->dmax)
		r->dmax = d;
	r->n++;
	r->sum_begin += v[ib];
	r->sum_end += v[ie];
}

enum { NS = 200, ND = 260, NSEC = 20000 };

static uint64_t xs(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void test_mem_rows_two_series_random(void **state)
{
	(void)state;
	enum { X_RSS = 1, X_DEV, X_D0 }; /* names d0..d3: one a depth, so no recursion */
	static const char *const names[] = { "", "process RSS", "device (bytes)", "d0", "d1", "d2", "d3" };
	const char *path = tu_path("mem-rows-random.ptz");
	const struct fmt_writer_hdr hd = { .clock_source = PT_CLOCK_MONOTONIC, .pid = 1, .process_name = "mem" };
	struct tb b;
	tb_start(&b, path, &hd);
	for (uint32_t i = 1; i < PT_ARRAY_SIZE(names); i++)
		fmt_enc_string(&b.e, i, 0, names[i], strlen(names[i]));
	fmt_enc_thread(&b.e, 0, 10, 0, 0, "main", 4);
	fmt_enc_thread(&b.e, 1, 11, 0, 0, PT_FMT_FLUSHER_THREAD_NAME, strlen(PT_FMT_FLUSHER_THREAD_NAME));
	fmt_enc_thread(&b.e, 2, 12, 0, 0, "sampler", 7);
	tb_flush(&b, FMT_CHUNK_META, PT_FMT_META_THREAD);
	uint64_t rng = 0x9e3779b97f4a7c15ull, rt[NS], dt[ND];
	int64_t rv[NS], dv[ND];
	for (int i = 0; i < NS; i++) { /* RSS every ~1000 ticks, from 500 */
		rt[i] = 500 + 1000 * (uint64_t)i + xs(&rng) % 300;
		rv[i] = 100000 + (int64_t)(xs(&rng) % 50000);
		fmt_enc_counter(&b.e, rt[i], X_RSS, rv[i]);
	}
	tb_flush(&b, FMT_CHUNK_EVENTS, 1);
	for (int i = 0; i < ND; i++) { /* device memory every ~770 ticks, from 900: other times */
		dt[i] = 900 + 770 * (uint64_t)i + xs(&rng) % 200;
		dv[i] = (int64_t)(xs(&rng) % 1000000);
		fmt_enc_counter(&b.e, dt[i], X_DEV, dv[i]);
	}
	tb_flush(&b, FMT_CHUNK_EVENTS, 2);
	struct ref_row ref[4][2];
	memset(ref, 0, sizeof(ref));
	uint64_t t = 10, start[4];
	int depth = 0, sections = 0;
	while (sections < NSEC || depth > 0) { /* a random walk, depth 0..4, steps of 1..24 ticks, a long one now and then */
		const uint64_t x = xs(&rng);
		t += 1 + x % 24 + (x % 97 == 0 ? 3000 : 0);
		if (depth < 4 && sections < NSEC && (depth == 0 || (x >> 8) % 2)) {
			start[depth] = t;
			fmt_enc_begin(&b.e, t, X_D0 + (uint32_t)depth);
			depth++;
			sections++;
		} else {
			depth--;
			fmt_enc_end(&b.e, t, X_D0 + (uint32_t)depth);
			ref_occ(&ref[depth][0], rt, rv, NS, start[depth], t);
			ref_occ(&ref[depth][1], dt, dv, ND, start[depth], t);
		}
		if (!fmt_enc_room(&b.e, 4 * FMT_MAX_RECORD_BYTES))
			tb_flush(&b, FMT_CHUNK_EVENTS, 0);
	}
	tb_flush(&b, FMT_CHUNK_EVENTS, 0);
	tb_close(&b);
	assert_true(t > rt[NS - 1] && t > dt[ND - 1]); /* the sections outlast both series */

	struct ana_result res;
	const struct ana_options o = { .thread = -1 };
	ana_test_run(path, &o, &res);
	assert_int_equal(res.nmem, 2);
	const uint32_t srss = ana_mem_rss(&res), sdev = 1 - srss;
	for (int d = 0; d < 4; d++)
		for (int k = 0; k < 2; k++) {
			const struct ref_row *r = &ref[d][k];
			struct ana_mem_fig f;
			assert_true(r->n > 100); /* the premise: both series measure most occurrences */
			assert_true(ana_mem_fig(flat_row(&res, X_D0 + (uint32_t)d), k ? sdev : srss, &f));
			if (f.n != r->n || f.begin != (double)r->sum_begin / (double)r->n ||
			    f.end != (double)r->sum_end / (double)r->n ||
			    f.delta_total != (double)(r->sum_end - r->sum_begin) || f.peak != r->peak || f.dmin != r->dmin ||
			    f.dmax != r->dmax)
				fail_msg("d%d, %s: n %llu begin %.3f end %.3f peak %lld dmin %lld dmax %lld; want n %llu "
					 "begin %.3f end %.3f peak %lld dmin %lld dmax %lld",
					 d, k ? "device" : "RSS", (unsigned long long)f.n, f.begin, f.end, (long long)f.peak,
					 (long long)f.dmin, (long long)f.dmax, (unsigned long long)r->n,
					 (double)r->sum_begin / (double)r->n, (double)r->sum_end / (double)r->n,
					 (long long)r->peak, (long long)r->dmin, (long long)r->dmax);
		}
	ana_result_free(&res);
	unlink(path);
}

static void test_mem_outputs(void **state)
{
	struct ana_result *res = &((struct ana_fixture *)*state)->res;
	struct ana_report_opts o = { .thread = -1, .flat = true };
	char *txt = ana_test_report(res, &o);
	assert_non_null(strstr(txt, "Memory by name: process RSS, 5 samples"));
	assert_non_null(strstr(txt, "Memory by name: torch (bytes)"));
	free(txt);
	char *csv = ana_test_output(ANA_OUT_CSV, res, &o);
	assert_non_null(strstr(csv, ",rss_occurrences,rss_begin_bytes,rss_end_bytes,rss_delta_bytes,"));
	assert_non_null(strstr(csv, ",2,2000,2500,500,1000,-1000,2000,5000\n")); /* grow */
	assert_non_null(strstr(csv, ",0,,,,,,,\n"));                          /* early: not measured */
	free(csv);
	char *js = ana_test_output(ANA_OUT_JSON, res, &o);
	json_error_t je;
	json_t *j = json_loads(js, 0, &je);
	assert_non_null(j);
	json_t *flat = jget(j, "flat");
	size_t i;
	json_t *row;
	int seen = 0;
	json_array_foreach(flat, i, row)
	{
		const char *n = json_string_value(jget(row, "name"));
		if (strcmp(n, "grow") == 0) {
			assert_int_equal(jint(row, "rss_peak_bytes"), 5000);
			assert_true(json_real_value(jget(row, "rss_delta_bytes")) == 500.0);
			assert_int_equal(json_array_size(jget(row, "memory")), 2);
			seen++;
		} else if (strcmp(n, "early") == 0) {
			assert_true(json_is_null(jget(row, "rss_begin_bytes")));
			seen++;
		}
	}
	assert_int_equal(seen, 2);
	assert_int_equal(json_array_size(jget(j, "memory_series")), 2);
	json_decref(j);
	free(js);
}

/* compare: peak RSS 5000 -> 10000 bytes, grow's total change 1000 -> 2000 */
static void test_mem_compare(void **state)
{
	struct ana_result *base = &((struct ana_fixture *)*state)->res, nw;
	const char *path = tu_path("mem-rows-2x.ptz");
	write_scaled(path, 2);
	const struct ana_options o = { .thread = -1 };
	ana_test_run(path, &o, &nw);
	struct ana_cmp c;
	struct ana_cmp_opts co = { 0 };
	assert_int_equal(ana_compare(base, &nw, &co, &c), 0);
	char *txt = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&txt, &len);
	ana_compare_text(f, base, &nw, &c, 0);
	fclose(f);
	assert_non_null(strstr(txt, "peak RSS: 4.88 KiB -> 9.77 KiB (+4.88 KiB)"));
	assert_non_null(strstr(txt, "+1000 B -> +1.95 KiB"));
	free(txt);
	f = open_memstream(&txt, &len);
	assert_int_equal(ana_compare_json(f, base, &nw, &c), 0);
	fclose(f);
	json_error_t je;
	json_t *j = json_loads(txt, 0, &je);
	assert_non_null(j);
	json_t *m = jget(j, "memory");
	assert_int_equal(jint(m, "peak_rss_base_bytes"), 5000);
	assert_int_equal(jint(m, "peak_rss_new_bytes"), 10000);
	assert_true(json_array_size(jget(m, "rows")) > 0);
	json_decref(j);
	free(txt);
	ana_compare_free(&c);
	ana_result_free(&nw);
	unlink(path);
}

/*
 * memory-growth. RSS sampled every 100 ns (1 tick = 1 ns) on the flusher:
 * up to t = 1000, BASE at even hundreds and BASE + 512 MiB at odd ones
 * ("steady", 5 occurrences [200i + 50, 200i + 250], each sees it go up and
 * back: change 0, peak BASE + 512 MiB, the series' peak); then BASE + 16 MiB
 * x m at t = 1000 + 100m, m = 0..11. "leak", 10 occurrences [1150 + 100k,
 * 1250 + 100k] back to back, each from sample m = k + 1 to m = k + 2: +16 MiB
 * each, +160 MiB in all = 20.8% of the peak; "outer", 2 occurrences around 5
 * leaks each, +80 MiB each: the same 160 MiB, left to leak.
 */
enum { G_RSS = 1, G_STEADY, G_OUTER, G_LEAK };
#define MIB (1ll << 20)
#define BASE (256 * MIB)

static void write_growth(const char *path)
{
	struct fmt_writer_hdr hd = { .clock_source = PT_CLOCK_MONOTONIC, .pid = 1, .process_name = "growth" };
	struct tb b;
	tb_start(&b, path, &hd);
	static const char *const names[] = { "", "process RSS", "steady", "outer", "leak" };
	for (uint32_t i = 1; i < PT_ARRAY_SIZE(names); i++)
		fmt_enc_string(&b.e, i, 0, names[i], strlen(names[i]));
	fmt_enc_thread(&b.e, 0, 10, 0, 0, "main", 4);
	fmt_enc_thread(&b.e, 1, 11, 0, 0, PT_FMT_FLUSHER_THREAD_NAME, strlen(PT_FMT_FLUSHER_THREAD_NAME));
	tb_flush(&b, FMT_CHUNK_META, PT_FMT_META_THREAD);
	for (uint64_t t = 0; t <= 2100; t += 100)
		fmt_enc_counter(&b.e, t, G_RSS, t < 1000 ? BASE + (t % 200 ? 512 * MIB : 0)
							   : BASE + 16 * MIB * (int64_t)((t - 1000) / 100));
	tb_flush(&b, FMT_CHUNK_EVENTS, 1);
	for (uint64_t i = 0; i < 5; i++) {
		fmt_enc_begin(&b.e, 200 * i + 50, G_STEADY);
		fmt_enc_end(&b.e, 200 * i + 250, G_STEADY);
	}
	for (uint64_t j = 0; j < 2; j++) {
		fmt_enc_begin(&b.e, 1150 + 500 * j, G_OUTER);
		for (uint64_t k = 5 * j; k < 5 * j + 5; k++) {
			fmt_enc_begin(&b.e, 1150 + 100 * k, G_LEAK);
			fmt_enc_end(&b.e, 1250 + 100 * k, G_LEAK);
		}
		fmt_enc_end(&b.e, 1650 + 500 * j, G_OUTER);
	}
	tb_flush(&b, FMT_CHUNK_EVENTS, 0);
	tb_close(&b);
}

/* The memory-growth findings of @res at @o: how many, and the one on "leak" in *@leak (if any). */
static size_t growth_findings(const struct ana_result *res, const struct ana_sug_opts *o, struct ana_sug *s,
			      const struct ana_finding **leak)
{
	assert_int_equal(ana_suggest(res, o, s), 0);
	size_t n = 0;
	*leak = NULL;
	for (size_t i = 0; i < s->n; i++) {
		const struct ana_finding *f = &s->f[i];
		if (f->rule != ANA_R_MEM_GROWTH)
			continue;
		n++;
		assert_int_not_equal(f->node, UINT32_MAX);
		uint32_t id = res->merged.n[f->node].id;
		assert_int_equal(id, G_LEAK); /* never steady (flat), never outer (leak explains it) */
		*leak = f;
	}
	return n;
}

static void test_mem_growth_rule(void **state)
{
	(void)state;
	const char *path = tu_path("mem-growth.ptz");
	write_growth(path);
	struct ana_result res;
	const struct ana_options ao = { .thread = -1 };
	ana_test_run(path, &ao, &res);
	uint32_t rs = ana_mem_rss(&res);
	assert_int_not_equal(rs, UINT32_MAX);
	assert_int_equal(res.mem[rs].max, BASE + 512 * MIB);
	/* the figures the rule reads: steady flat, outer and leak +160 MiB */
	struct ana_mem_fig fig;
	assert_true(ana_mem_fig(&res.by_name[G_STEADY], rs, &fig));
	assert_true(fig.n == 5 && fig.delta_total == 0 && fig.peak == BASE + 512 * MIB);
	assert_true(ana_mem_fig(&res.by_name[G_OUTER], rs, &fig));
	assert_true(fig.n == 2 && fig.delta_total == 160.0 * MIB);

	struct ana_sug s;
	const struct ana_finding *f;
	assert_int_equal(growth_findings(&res, NULL, &s, &f), 1);
	assert_non_null(f);
	assert_int_equal(f->series, rs);
	assert_true(f->ev[0] == 10);                       /* occurrences */
	assert_true(f->ev[1] == 16.0 * MIB);               /* mean change */
	assert_true(f->ev[2] == 160.0 * MIB);              /* total change */
	assert_true(f->ev[3] == 16.0 * MIB && f->ev[4] == 16.0 * MIB);
	assert_true(f->ev[5] == (double)(BASE + 16 * 11 * MIB)); /* its peak: the last sample it ends at */
	assert_true(f->ev[6] == (double)(BASE + 512 * MIB));
	assert_true(fabs(f->ev[7] - 160.0 / 768.0) < 1e-12);
	assert_true(f->ev[8] == 100);                      /* period, ns */
	assert_true(f->ev[9] == 1000 && f->stake_ns == 1000); /* inclusive time: the stake */
	assert_string_equal(ana_evidence_key(ANA_R_MEM_GROWTH, 2), "delta_total_bytes");
	assert_string_equal(ana_rule_key(ANA_R_MEM_GROWTH), "memory-growth");

	/* text and JSON */
	char *txt = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&txt, &len);
	ana_suggest_text(out, &res, &s, 0);
	fclose(out);
	assert_non_null(strstr(txt, "memory growth 64 MiB and 10% of the peak, batching"));
	assert_non_null(strstr(txt, "[memory-growth] outer;leak"));
	assert_non_null(strstr(txt, "process RSS grows by +16.00 MiB per occurrence on average, +160.00 MiB over 10 "
				    "occurrences\n      = 21% of its peak 768.00 MiB (trigger 64 MiB and 10%)"));
	/* memory has no time at stake (the finding ranks last here: equal stakes, then rule order) */
	assert_null(strstr(strstr(txt, "[memory-growth]"), "at stake:"));
	free(txt);
	out = open_memstream(&txt, &len);
	assert_int_equal(ana_suggest_json(out, &res, &s), 0);
	fclose(out);
	json_error_t je;
	json_t *j = json_loads(txt, 0, &je);
	assert_non_null(j);
	assert_true(json_real_value(jget(jget(j, "thresholds"), "mem_growth_mib")) == 64);
	json_t *fj = NULL, *x;
	size_t i;
	json_array_foreach(jget(j, "findings"), i, x)
		if (strcmp(json_string_value(jget(x, "rule")), "memory-growth") == 0)
			fj = x;
	assert_non_null(fj);
	assert_string_equal(json_string_value(jget(fj, "counter")), "process RSS");
	assert_string_equal(json_string_value(jget(fj, "name")), "leak");
	assert_true(json_real_value(jget(jget(fj, "evidence"), "delta_total_bytes")) == 160.0 * MIB);
	assert_true(json_real_value(jget(jget(fj, "evidence"), "period_ns")) == 100);
	json_decref(j);
	free(txt);
	ana_suggest_free(&s);

	/* triggers: 160 MiB < 200 MiB; 20.8% < 25%; both gates passed at 160 MiB and 20% */
	struct ana_sug_opts o = { 0 };
	assert_int_equal(ana_sug_threshold_set(&o, "mem_growth_mib", 200), 0);
	assert_int_equal(growth_findings(&res, &o, &s, &f), 0);
	ana_suggest_free(&s);
	o = (struct ana_sug_opts){ 0 };
	assert_int_equal(ana_sug_threshold_set(&o, "mem_growth_pct", 25), 0);
	assert_int_equal(growth_findings(&res, &o, &s, &f), 0);
	ana_suggest_free(&s);
	o = (struct ana_sug_opts){ 0 };
	assert_int_equal(ana_sug_threshold_set(&o, "mem_growth_mib", 160), 0);
	assert_int_equal(ana_sug_threshold_set(&o, "mem_growth_pct", 20), 0);
	assert_int_equal(growth_findings(&res, &o, &s, &f), 1);
	ana_suggest_free(&s);
	o = (struct ana_sug_opts){ 0 };
	assert_int_equal(ana_sug_threshold_set(&o, "mem_growth_pct", 0), 0); /* that gate off */
	assert_int_equal(ana_sug_threshold_set(&o, "mem_growth_pct", 101), -ERANGE);
	assert_int_equal(ana_sug_threshold_set(&o, "mem_growth_mib", 0), -ERANGE);
	assert_int_equal(growth_findings(&res, &o, &s, &f), 1);
	ana_suggest_free(&s);
	ana_result_free(&res);
	unlink(path);
}

static int setup(void **state) { return ana_fixture_setup(state, "mem-rows.ptz", write_trace); }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mem_rows_scripted),
		cmocka_unit_test(test_mem_rows_two_series_random),
		cmocka_unit_test(test_mem_outputs),
		cmocka_unit_test(test_mem_compare),
		cmocka_unit_test(test_mem_growth_rule),
	};
	return cmocka_run_group_tests(tests, setup, ana_fixture_teardown);
}
