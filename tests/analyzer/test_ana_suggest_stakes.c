/*
 * tests/analyzer/test_ana_suggest_stakes.c - a property of `ptanalyze
 * suggest` (issue 15): a finding's stake never exceeds the time it is a
 * part of, whatever the trace.
 *
 * Seeded random traces written with chosen ticks (1 tick = 1 ns): one or
 * two threads, up to eight names, top-level sections in phases (one name
 * repeated up to 3,000 times in a block, then another), each with up to
 * two nested children, two in three with the process CPU counters of a
 * flusher thread (parallelization, cpu-share) (a third of the blocks declare the same bytes on
 * every call: caching); durations drawn steady, bimodal, heavy-tailed or
 * with a step in the middle of the block (the phased programs that made
 * "unstable" extrapolate 8.7 s from a 512-value reservoir for a section
 * of 1.1 s); random bytes and FLOPs. Each trace is analyzed and suggested
 * on without roofs and with hand-set roofs. For every finding:
 *  - on a call path: stake <= the path's time, max(total CPU time,
 *    inclusive GPU time) (no GPU here: its total_ns);
 *  - hot-section by name: stake <= the name's recursion-safe total;
 *  - every finding: stake <= the sum of thread spans;
 *  - unstable in particular: stake <= the time of the occurrences after
 *    the first above their minimum, total - first - (count - 1) x min.
 */
#include <inttypes.h>
#include <math.h>

#include "tests/analyzer/ana_test_util.h"
#include "analyzer/ana_peaks.h"
#include "analyzer/ana_suggest.h"
#include "include/ptz/recorder.h"

#define NAMES 8
#define TRACES 40

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* splitmix64: a fixed, documented sequence for a seed */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static double unit(void)
{
	return (double)(rnd() >> 11) / 9007199254740992.0;
}

struct w {
	struct tb b;
	uint64_t t;
	uint32_t thread;
};

static void room(struct w *w)
{
	if (!fmt_enc_room(&w->b.e, 64 * FMT_MAX_RECORD_BYTES))
		tb_flush(&w->b, FMT_CHUNK_EVENTS, w->thread);
}

/* A duration of kind @kind around @base ns, for occurrence @k of @n. */
static uint64_t draw(int kind, uint64_t base, uint64_t k, uint64_t n)
{
	double d = (double)base;
	switch (kind) {
	case 0: d *= 1.0 + 0.01 * unit(); break;                       /* steady */
	case 1: d *= unit() < 0.5 ? 1.0 : 3.0; break;                   /* bimodal */
	case 2: d *= 1.0 / (1e-3 + unit()); break;                      /* heavy tail, up to 1000x */
	default: d *= (k < n / 2 ? 1.0 : 8.0) * (1.0 + 0.05 * unit()); /* a step at half the block */
	}
	return (uint64_t)d + 1;
}

/* One occurrence of @id lasting @d ns with @kids children; @fixed > 0: it declares @fixed bytes read
 * and nothing else (the same work on every call: caching), else random metrics. */
static void occurrence(struct w *w, uint32_t id, uint64_t d, int kids, uint64_t fixed)
{
	room(w);
	fmt_enc_begin(&w->b.e, w->t, id);
	if (fixed) {
		fmt_enc_metric(&w->b.e, PT_METRIC_READ_BYTES, fixed);
	} else {
		if (below(3) == 0)
			fmt_enc_metric(&w->b.e, PT_METRIC_READ_BYTES, 1 + below(1u << 20));
		if (below(3) == 0)
			fmt_enc_metric(&w->b.e, PT_METRIC_FLOPS, 1 + below(1u << 22));
	}
	uint64_t end = w->t + d;
	for (int c = 0; c < kids; c++) {
		const uint64_t cd = d / (uint64_t)(kids + 1);
		if (!cd)
			break;
		w->t += 1;
		const uint32_t cid = 1 + (uint32_t)below(NAMES);
		room(w);
		fmt_enc_begin(&w->b.e, w->t, cid);
		w->t += cd - 1;
		fmt_enc_end(&w->b.e, w->t, cid);
	}
	w->t = end;
	fmt_enc_end(&w->b.e, w->t, id);
	w->t += below(200); /* a gap outside any section */
}

static void write_random(const char *path, unsigned nthreads)
{
	const struct fmt_writer_hdr hd = {
		.clock_source = PT_CLOCK_TSC, .pid = 11, .start_ticks = 0, .start_mono_ns = 0,
		.start_real_ns = 1700000000000000000ull, .process_name = "stakes", .host = "testhost",
		.cmdline = "stakes", .recorder_version = "ptz-test 1",
	};
	struct w w = { .t = 0 };
	uint64_t end = 0;
	tb_start(&w.b, path, &hd);
	static const char *const names[NAMES] = { "a", "b", "c", "d", "e", "f", "g", "h" };
	for (uint32_t id = 1; id <= NAMES; id++)
		assert_int_equal(fmt_enc_string(&w.b.e, id, 0, names[id - 1], 1), 0);
	for (uint32_t th = 0; th < nthreads; th++)
		assert_int_equal(fmt_enc_thread(&w.b.e, th, 600 + th, 0, 0, th ? "t1" : "t0", 2), 0);
	assert_int_equal(fmt_enc_thread(&w.b.e, 2, 602, 0, 0, PT_FMT_FLUSHER_THREAD_NAME,
					 strlen(PT_FMT_FLUSHER_THREAD_NAME)), 0);
	static const char *const proc[3] = { PT_FMT_PROC_CPU_USER, PT_FMT_PROC_CPU_SYSTEM, PT_FMT_PROC_CPUS };
	for (uint32_t k = 0; k < 3; k++)
		assert_int_equal(fmt_enc_string(&w.b.e, NAMES + 1 + k, 0, proc[k], strlen(proc[k])), 0);
	assert_int_equal(fmt_enc_clock(&w.b.e, 0, 0, 1700000000000000000ull, 1), 0);
	assert_int_equal(fmt_enc_clock(&w.b.e, 1000000000, 1000000000, 1700000001000000000ull, 1), 0);
	tb_flush(&w.b, FMT_CHUNK_META, PT_FMT_META_THREAD);
	for (uint32_t th = 0; th < nthreads; th++) {
		w.thread = th;
		w.t = below(1000);
		const unsigned phases = 1 + (unsigned)below(5);
		for (unsigned p = 0; p < phases; p++) {
			const uint32_t id = 1 + (uint32_t)below(NAMES);
			const uint64_t n = 1 + below(below(2) ? 3000 : 40);
			const int kind = (int)below(4);
			const uint64_t base = 50 + below(20000);
			const int kids = (int)below(3);
			const uint64_t fixed = below(3) == 0 ? 1 + below(1u << 20) : 0;
			for (uint64_t k = 0; k < n; k++)
				occurrence(&w, id, draw(kind, base, k, n), kids, fixed);
		}
		tb_flush(&w.b, FMT_CHUNK_EVENTS, th);
		end = w.t > end ? w.t : end;
	}
	/* two traces in three carry the process CPU counters (parallelization, cpu-share): 4 CPUs
	 * online, the process using 0.2 to 2.2 of them, sampled ten times over the run */
	if (below(3)) {
		const double used = 0.2 + 2.0 * unit();
		for (int i = 0; i <= 10; i++) {
			const uint64_t t = end / 10 * (uint64_t)i;
			if (i == 0)
				fmt_enc_counter(&w.b.e, t, NAMES + 3, 4);
			fmt_enc_counter(&w.b.e, t, NAMES + 1, (int64_t)((double)t * used));
			fmt_enc_counter(&w.b.e, t, NAMES + 2, 0);
		}
		tb_flush(&w.b, FMT_CHUNK_EVENTS, 2);
	}
	tb_close(&w.b);
}

/* Roofs of one core 10 GFLOP/s and 10 GB/s, all cores 20 and 20 (FP64). */
static const struct ana_peaks roofs = {
	.host = "testhost",
	.gflops64_1 = 10, .gflops64_all = 20, .gflops32_1 = 20, .gflops32_all = 40,
	.gbps_1 = 10, .gbps_all = 20,
};

static void check(const struct ana_result *res, const struct ana_sug *s, unsigned trace)
{
	const double span = (double)res->thread_span_sum_ns;
	for (size_t i = 0; i < s->n; i++) {
		const struct ana_finding *f = &s->f[i];
		const char *rule = ana_rule_key(f->rule);
		if (!(f->stake_ns >= 0) || f->stake_ns > span * (1 + 1e-12))
			fail_msg("trace %u: %s stake %.0f ns, sum of thread spans %.0f ns", trace, rule, f->stake_ns, span);
		if (f->node != UINT32_MAX) {
			const struct ana_agg *a = &res->merged.n[f->node].agg;
			double bound = (double)a->total_ns;
			if (a->gpu && (double)a->gpu->incl_total_ns > bound)
				bound = (double)a->gpu->incl_total_ns;
			if (f->stake_ns > bound * (1 + 1e-12))
				fail_msg("trace %u: %s stake %.0f ns on a path of %.0f ns (count %" PRIu64 ")", trace,
					 rule, f->stake_ns, bound, a->count);
			if (f->rule == ANA_R_UNSTABLE) {
				const double rest = (double)a->total_ns - (double)a->first_ns -
						    (double)(a->count - 1) * (double)a->min_ns;
				if (f->stake_ns > rest * (1 + 1e-12) + 1)
					fail_msg("trace %u: unstable stake %.0f ns, rest above its minimum %.0f ns",
						 trace, f->stake_ns, rest);
			}
		} else if (f->rule == ANA_R_HOT && f->name_id) {
			const double total = (double)res->by_name[f->name_id].total_ns;
			if (f->stake_ns > total * (1 + 1e-12))
				fail_msg("trace %u: hot-section by name stake %.0f ns, name total %.0f ns", trace,
					 f->stake_ns, total);
		}
	}
}

static void test_stakes_within_their_time(void **state)
{
	(void)state;
	unsigned unstable = 0, findings = 0, batching = 0, caching = 0, parallel = 0;
	for (unsigned t = 0; t < TRACES; t++) {
		rng_state = 0x5eed0000u + t;
		char path[4200];
		snprintf(path, sizeof(path), "%s", tu_path("stakes.ptz"));
		write_random(path, 1 + (unsigned)below(2));
		struct ana_result res;
		const struct ana_options o = { .thread = -1 };
		ana_test_run(path, &o, &res);
		for (int with_roofs = 0; with_roofs < 2; with_roofs++) {
			struct ana_sug_opts so = { .peaks = with_roofs ? &roofs : NULL };
			struct ana_sug s;
			assert_int_equal(ana_suggest(&res, &so, &s), 0);
			check(&res, &s, t);
			for (size_t i = 0; i < s.n; i++)
				unstable += s.f[i].rule == ANA_R_UNSTABLE;
			for (size_t i = 0; i < s.n; i++) {
				batching += s.f[i].rule == ANA_R_BATCHING;
				caching += s.f[i].rule == ANA_R_CACHING;
				parallel += s.f[i].rule == ANA_R_PARALLEL;
			}
			findings += (unsigned)s.n;
			ana_suggest_free(&s);
		}
		ana_result_free(&res);
		unlink(path);
	}
	/* the property was exercised: the random traces do fire the rules */
	print_message("# %u findings, %u unstable, %u batching, %u caching, %u parallelization, over %u traces\n",
		      findings, unstable, batching, caching, parallel, TRACES);
	assert_true(unstable >= 10);
	assert_true(batching >= 5);
	assert_true(caching >= 5);
	assert_true(parallel >= 3);
	assert_true(findings >= 100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stakes_within_their_time),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
