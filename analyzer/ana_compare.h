/*
 * analyzer/ana_compare.h - comparison of two analyzed traces, call path by
 * call path: which sections got slower, faster, or did not change beyond
 * noise, with a significance test that holds across hundreds of sections
 * (doc/analyzer-output.md §8). Peers: uftrace's --diff has no test,
 * Tracy's compare window takes one zone at a time and has no test,
 * google/benchmark's compare.py runs an uncorrected Mann-Whitney U per
 * benchmark.
 *
 * Per call path present in both traces (paths matched by their names, so
 * the two traces' string ids may differ):
 *  - samples: the path's reservoir of per-occurrence inclusive durations
 *    (ana_reservoir: every occurrence up to ANA_RESERVOIR_CAP, a stratified
 *    sample in time order beyond), without the first occurrence (warm-up:
 *    reported apart);
 *  - test: two-sided Mann-Whitney U (rank sum), exact distribution when
 *    there are no ties and the smaller side has at most ANA_CMP_EXACT_SMALL
 *    samples, else the normal approximation with tie and continuity
 *    corrections;
 *  - multiple testing: Benjamini-Hochberg false discovery rate over every
 *    tested path (q-values);
 *  - effect: relative change of the median, new / base - 1; its log has a
 *    bootstrap standard error (seeded: reproducible);
 *  - the threshold is protected: a regression (improvement) is a rejection
 *    of "the change is at most +noise" ("at least -noise"), a Wald test of
 *    the log ratio with the bootstrap standard error, one-sided, doubled
 *    for the direction; these p-values of every path, per call and total
 *    (count x duration), form one Benjamini-Hochberg family, so when no
 *    path moved beyond the threshold the chance of any regression or
 *    improvement is at most alpha (FDR = FWER under the global null), and
 *    the intervals shown are Benjamini-Yekutieli (2005) false coverage
 *    rate adjusted: level 1 - max(R, 1) alpha / M for R selected of M;
 *  - verdict: q >= alpha -> not significant; else threshold q < alpha ->
 *    regression or improvement (the adjusted interval lies entirely beyond
 *    the threshold), otherwise change within noise. Too few samples for the
 *    test to ever reach alpha (2 / C(n1 + n2, n1) >= alpha, or, for the
 *    normal approximation, its p at U = 0 >= alpha), or a
 *    significant path whose median is 0 on a side or in every resample (no
 *    relative change): unverified, with the change of the medians shown.
 * Paths are matched by timing domain and name: one name in two domains is
 * two paths.
 *
 * Caveat (documented): occurrences inside one run are not independent
 * (warm-up drift, autocorrelation), so p-values are optimistic; the noise
 * threshold is the guard against calling a tiny real shift a regression.
 */
#ifndef PTZ_ANA_COMPARE_H
#define PTZ_ANA_COMPARE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "analyzer/ana.h"

/* Exact Mann-Whitney distribution (no ties) when the smaller side has at
 * most this many samples, whatever the larger: the product that counts it
 * costs n1 * n1 * n2 additions, 1.3 M against a full reservoir (512). The
 * normal approximation is poor against a small side (1 against 401:
 * p >= 0.083 whatever the data, where the exact p reaches 0.005); with 50
 * or more on each side it is within about 1e-3 of the exact p. */
#define ANA_CMP_EXACT_SMALL 50u
/* Below this many samples on either side a verdict is "low confidence"
 * (google/benchmark's UTEST_OPTIMAL_REPETITIONS). */
#define ANA_CMP_LOW_N 9u
/* With one run a side the total's test judges count x the mean per call trimmed of this fraction of
 * its occurrences at each end (Yuen 1974): a few preempted occurrences cannot make a total regression,
 * while a tail that moved in more than this share of the calls still can. */
#define ANA_CMP_TRIM 0.05
/* A whole-run shift is looked for among at least this many tested paths. */
#define ANA_CMP_SHIFT_MIN 5u

enum ana_verdict {
	ANA_V_REGRESSION,   /* significant, the CI of the change entirely above +noise */
	ANA_V_IMPROVEMENT,  /* significant, the CI entirely below -noise */
	ANA_V_WITHIN_NOISE, /* significant, but the CI reaches into [-noise, +noise] */
	ANA_V_NOT_SIGNIFICANT, /* q >= alpha: no change shown beyond chance */
	ANA_V_UNVERIFIED,   /* too few samples for any test to reach alpha */
	ANA_V_ONLY_BASE,    /* path absent from the new trace */
	ANA_V_ONLY_NEW,     /* path absent from the base trace */
	ANA_V_INHERITED,    /* a regression or improvement its children explain: its own time per call
			     * (self) moved within the noise (one cause, one regression) */
	ANA_V_N
};
/* "regression", "improvement", "within noise", "not significant", "unverified",
 * "only in base", "only in new", "inherited"; NULL for an out-of-range value. */
const char *ana_verdict_name(enum ana_verdict v);
/* The same as JSON keys and values: "regression", "improvement",
 * "within_noise", "not_significant", "unverified", "only_base", "only_new",
 * "inherited". */
const char *ana_verdict_key(enum ana_verdict v);

struct ana_cmp_opts {
	double alpha;       /* FDR level, (0, 1); 0 = 0.05 */
	double noise;       /* relative noise threshold, >= 0; < 0 = 0.05 (so 0 is allowed) */
	uint32_t bootstrap; /* bootstrap resamples; 0 = 1000 */
	uint64_t seed;      /* bootstrap random seed; 0 = a fixed constant */
	/* --gate-threshold: a relative change, > 0, against which a path too small to test (unverified for
	 * lack of samples, both sides present) is judged on its point estimate alone: above +gate a
	 * regression, below -gate an improvement, flagged threshold_only. 0 = off (the default: every
	 * verdict then rests on the test). The original proposal's CI gate ("any operation >= 10% slower
	 * fails") on sections run once. */
	double gate_threshold;
	/* Runs as the unit of evidence: every run of each side (@base and @nw of ana_compare() are
	 * runs[0] of theirs), at least 2 a side to take effect (else NULL / 0: one run a side). The rows
	 * are the call paths of runs[0]; each path's statistics come from its per-run summaries: the log
	 * of its median per call and of its total per run, compared between the sides by Welch's t test
	 * (the variation between runs, run-to-run drift included, is the noise). */
	const struct ana_result *const *base_runs, *const *new_runs;
	size_t nbase_runs, nnew_runs;
};

struct ana_cmp_row {
	uint32_t base_node, new_node;  /* in base->merged / new->merged; UINT32_MAX = absent */
	uint32_t depth;                /* 1 = top-level section */
	uint64_t count_base, count_new;     /* occurrences (all) */
	uint64_t first_base_ns, first_new_ns; /* the first occurrence's duration */
	uint32_t n_base, n_new;        /* samples compared (reservoir minus the first occurrence) */
	double median_base, median_new; /* of the samples, ns; NaN with no sample */
	double change;                 /* median_new / median_base - 1; NaN if not defined */
	double ci_lo, ci_hi;           /* CI of @change at ana_cmp.ci_level (FCR-adjusted); NaN when not computed */
	double u;                      /* Mann-Whitney U of the base samples; NaN if not tested */
	double p, q;                   /* two-sided p, BH-adjusted q; NaN if not tested */
	bool exact;                    /* p from the exact distribution */
	bool low_confidence;           /* tested with fewer than ANA_CMP_LOW_N samples on a side */
	bool threshold_only;           /* regression/improvement from --gate-threshold alone: no test */
	int inherited_dir;             /* ANA_V_INHERITED: +1 from a regression, -1 from an improvement */
	double self_change;            /* per-call self time, new / base - 1 (self_ns / count); NaN if not defined */
	double change_vs_shift;        /* (1 + change) / (1 + shift) - 1 when a whole-run shift was found; else NaN */
	/* Beside the verdict's median per call: the exact mean of the occurrences after the first (the
	 * aggregate's power sums, §3) and its change; the call count's and the total time's change, new /
	 * base - 1 (NaN where a side has none). A path called 10x as often is a change of its total even
	 * when each call is not. */
	double mean_base, mean_new, change_mean, count_change, total_change;
	/* The change at the 10th, 25th, 50th, 75th and 90th percentiles of the samples (nearest rank),
	 * new / base - 1 (NaN without samples or a base quantile of 0); shape_changed: with at least
	 * ANA_CMP_LOW_N samples a side, the largest ratio new / base exceeds the smallest by more than
	 * twice the noise threshold, so no single ratio sums the change up (a bimodal section
	 * whose slow share grew: its median jumps from one mode to the other while p25 and p75 stay). */
	double q_change[5];
	bool shape_changed;
	enum ana_verdict verdict;
	/* The threshold test of the per-call change (tested rows whose q < alpha; NaN otherwise): the
	 * bootstrap standard error of log(median_new / median_base), the two-sided p of "the change lies
	 * within [-noise, +noise]" (1 for a tested row not bootstrapped) and its BH q in the family of
	 * every threshold test. [ci_lo, ci_hi] is at the comparison's ci_level. */
	double se_log, p_thr, q_thr;
	double df;      /* degrees of freedom of se_log: Welch-Satterthwaite over runs, or INFINITY (one run a side) */
	/* The per-call verdict judged the mean (change_mean) rather than the median: one run a side and the
	 * median jumped apart from its neighbours (its change beyond both p25's and p75's by more than twice
	 * the noise: a bimodal section whose median went from one mode to the other, issue 15, case 5; a
	 * shift with a stretched tail does not count); se_log is then the
	 * delta-method error of log(mean_new / mean_base) from the power sums, and [ci_lo, ci_hi] is of
	 * change_mean. */
	bool on_mean;
	double total_df;
	/* The total per run (count x duration, inclusive), judged by a threshold test of its own with the
	 * call count taken as exact (total_test_change below: one run a side, count x a trimmed mean per
	 * call with Yuen's error; runs as the unit, Welch on the per-run log totals). Tested when each side
	 * has at least 2 occurrences and a total above 0.
	 * total_verdict: ANA_V_REGRESSION / IMPROVEMENT (q < alpha; for a path in one run only: its share
	 * of that run at least the noise threshold, no test: total_share_only), ANA_V_INHERITED (some child's
	 * total moved that way and the path's own self total moved within the noise; or its call count is
	 * inherited from its parent that way and its mean time per call moved within the noise), ANA_V_NOT_SIGNIFICANT
	 * (tested, not beyond the threshold) or ANA_V_UNVERIFIED (not tested). */
	double total_se_log, total_p_thr, total_q_thr, total_ci_lo, total_ci_hi;
	/* The change the total's test judged, and of which [total_ci_lo, total_ci_hi] is the interval: one
	 * run a side, of count x the ANA_CMP_TRIM-trimmed mean per call (Yuen's trimmed mean, its standard
	 * error from the winsorized sample, total_df by Welch-Satterthwaite on h - 1 a side: a total that
	 * rests on a few preempted occurrences is not a verdict); with runs as the unit, total_change
	 * itself. NaN when not tested. */
	double total_test_change;
	enum ana_verdict total_verdict;
	bool total_share_only;
	int total_inherited_dir;
	bool total_from_parent; /* ANA_V_INHERITED total: from the parent's call count, not from children */
	/* The call count per run, a verdict of its own (doc/analyzer-output.md §8, "The call count"):
	 * ANA_V_REGRESSION = more calls, ANA_V_IMPROVEMENT = fewer calls, beyond the noise threshold.
	 * One run a side: the counts are taken as exact (count_exact; no test, no interval: a program whose
	 * work does not depend on timing calls a path as often in every run), judged on count_change.
	 * Runs as the unit: Welch's t on the per-run log counts (count_se_log, count_df), the threshold
	 * test count_p_thr, its own Benjamini-Hochberg family (count_q_thr; ana_cmp.count_family) and an
	 * interval at that family's level (count_ci_lo, count_ci_hi: of count_change). ANA_V_INHERITED: the
	 * parent's count moved that way (count_inherited_dir) and this path's calls per parent call moved
	 * within the noise (one cause, one change, decided from the root down). ANA_V_NOT_SIGNIFICANT:
	 * within the threshold (or not shown beyond it); ANA_V_UNVERIFIED: not judged (runs as the unit with
	 * fewer than 2 runs a side where it occurred); ANA_V_ONLY_BASE / ONLY_NEW for a path in one run.
	 * A change of the work, not of its speed: never counted by --fail-on-regression (the total, count
	 * x duration, judges the time). */
	double count_se_log, count_df, count_p_thr, count_q_thr, count_ci_lo, count_ci_hi;
	enum ana_verdict count_verdict;
	bool count_exact;
	/* The path has sampled requests on a side (pt_begin_sampled(), doc/analyzer-output.md §13):
	 * count_change and total_change are of the estimates (exact outside sampled requests,
	 * Horvitz-Thompson inside), and with one run a side the count and the total are tested with the
	 * estimates' variances (the count in the count family) rather than taken as exact. */
	bool sampled;
	int count_inherited_dir;
};

struct ana_cmp {
	struct ana_cmp_row *rows; /* tree order: depth first, children by name, one-sided paths where they sit */
	size_t nrows;
	size_t count[ANA_V_N];    /* rows by verdict */
	size_t tested;            /* rows with a p-value (the BH family size) */
	double geomean;           /* geometric mean of median ratios over rows with both medians > 0; NaN if none */
	size_t ngeo;              /* rows in that mean */
	/* Whole-run shift (doc/analyzer-output.md §8): among the tested paths with both medians > 0 (at
	 * least ANA_CMP_SHIFT_MIN), the median of their changes; found when at least 3/4 of them are
	 * significant changes (q < alpha, beyond the noise) in that direction. */
	bool shift_found;
	double shift, shift_q1, shift_q3; /* median, lower and upper quartile of the changes */
	size_t shift_paths, shift_moved;  /* paths considered, paths that moved with the shift */
	struct ana_cmp_opts opts; /* with the defaults filled in */
	/* The threshold family (per-call and total tests), how many it selected (q < alpha), and the level
	 * of every interval: 1 - max(selected, 1) alpha / family (Benjamini and Yekutieli 2005). */
	size_t family, selected;
	double ci_level;
	/* Rows whose total regressed (improved) beyond the threshold, the call count or new work, and whose
	 * per-call verdict is not already that regression (improvement); inherited totals apart. */
	size_t total_regressions, total_improvements, total_inherited;
	size_t runs_base, runs_new; /* runs a side (1 and 1 unless ana_cmp_opts gave runs) */
	/* Rows whose call count moved beyond the threshold (more, fewer; ana_cmp_row.count_verdict), and
	 * those inherited from their parent's; with runs as the unit, the count tests' own BH family, how
	 * many it selected and its intervals' level (1 - max(R, 1) alpha / M; 1 - alpha when empty). */
	size_t count_more, count_fewer, count_inherited;
	size_t count_family, count_selected;
	double count_ci_level;
};

/*
 * ana_compare() - Compares every call path of @base's and @nw's merged
 * trees (ana_run() results with samples, i.e. without
 * ana_options.no_samples, any other options; so must every run in @opts be) into @out (zeroed here; free with
 * ana_compare_free()); @opts NULL: every default (a noise threshold of 5%).
 * Not thread-safe with other users of @base or @nw
 * (ana_name() is used). Cost: one sort per tested path (at most 2 x
 * ANA_RESERVOIR_CAP samples) plus opts.bootstrap resamples per path whose
 * q < alpha.
 * Return: 0, or -ENOMEM (@out then holds nothing to free), or -EINVAL for
 * an alpha outside (0, 1) or a result analyzed without samples.
 */
int ana_compare(const struct ana_result *base, const struct ana_result *nw, const struct ana_cmp_opts *opts,
		struct ana_cmp *out);
void ana_compare_free(struct ana_cmp *c);

/*
 * ana_compare_text() - The comparison as text: method, verdict counts, the
 * geometric mean, then one line per path, regressions first, each group by
 * decreasing |change|; @top > 0 keeps that many lines per verdict. A path
 * deeper than 8 levels shows as "[depth] ...;" and its innermost 4 names.
 */
void ana_compare_text(FILE *out, const struct ana_result *base, const struct ana_result *nw,
		      const struct ana_cmp *c, int top);
/*
 * ana_compare_json() - The comparison as JSON, schema "ptanalyze-compare/3"
 * (doc/analyzer-output.md §8): every row, in ana_cmp order, with raw
 * numbers (ns, ratios; null for NaN), its name and the index of its
 * parent's row (-1 at the top), so the output grows linearly with the
 * paths however deep they are. Return: 0, or -1 if @out failed.
 */
int ana_compare_json(FILE *out, const struct ana_result *base, const struct ana_result *nw,
		     const struct ana_cmp *c);

/* ---- the statistics, exposed for tests ---- */

/*
 * ana_rank_index() - 0-based index, among @k >= 1 sorted values, of the
 * nearest-rank quantile @q_permille / 1000 (0 < q <= 1): the ceil(q k)-th
 * smallest (doc/analyzer-output.md §3), in integers, since q k in floating
 * point can land just above an integer and take the next rank.
 */
static inline uint32_t ana_rank_index(uint32_t q_permille, uint32_t k)
{
	uint64_t r = ((uint64_t)q_permille * k + 999) / 1000; /* ceil(q k) */
	return r ? (uint32_t)r - 1 : 0;
}

/*
 * ana_mwu() - Two-sided Mann-Whitney U test of @x (@nx values) against @y
 * (@ny values), both >= 1 value. *@u = U of @x: the number of pairs
 * (x_i, y_j) with x_i > y_j, plus half the ties. Exact when there is no
 * tie and min(nx, ny) <= ANA_CMP_EXACT_SMALL (*@exact true): p = min(1,
 * 2 min(P(U <= u), P(U >= u))) under the null distribution; otherwise the normal
 * approximation z = (|U - nx ny / 2| - 1/2) / sigma with sigma^2 = nx ny /
 * 12 ((n + 1) - sum(t^3 - t) / (n (n - 1))) over tie groups of size t
 * (Mann and Whitney 1947; tie correction as in scipy.stats.mannwhitneyu),
 * p = erfc(z / sqrt 2); 1 when every value is equal.
 * *@p_min (may be NULL): the smallest p the method used can give for these
 * sizes and ties (U = 0 or nx ny): under alpha, the test can reject.
 * Return: p in [0, 1], or NaN on ENOMEM.
 */
double ana_mwu(const uint64_t *x, uint32_t nx, const uint64_t *y, uint32_t ny, double *u, bool *exact,
	       double *p_min);

/*
 * ana_bh() - Benjamini-Hochberg (1995) adjusted p-values: with p sorted
 * ascending p_(1..m), q_(i) = min(1, min over j >= i of p_(j) m / j), written
 * to @q in the order of @p. NaN entries are left out of the family (their
 * q is NaN). Return: 0, or -1 on ENOMEM.
 */
int ana_bh(const double *p, size_t m, double *q);

/* ana_samples_without_first() - Copies @a's reservoir into @v (room for
 * ANA_RESERVOIR_CAP values) without one value equal to the first
 * occurrence's duration (the first occurrence itself whenever the
 * reservoir holds every occurrence); returns the number copied. */
uint32_t ana_samples_without_first(const struct ana_agg *a, uint64_t *v);

/* ana_median() - The median of @n >= 1 values (the mean of the two middle
 * ones for even @n); reorders @v. */
double ana_median(uint64_t *v, uint32_t n);

/*
 * ana_boot_se_log() - Bootstrap standard error (Efron and Tibshirani 1993,
 * §6.2) of log(median(y) / median(x)) over @b resamples of each side,
 * splitmix64 seeded by *@rng; resamples with a median of 0 on a side are
 * left out. @x and @y are in time order (the reservoir keeps it), and each
 * resample is a circular block bootstrap (Politis and Romano 1992) with
 * blocks of ana_block_len(n) consecutive values, so short runs of similar
 * durations (autocorrelation over a few samples) stay together and widen
 * the error instead of passing for independent samples; streaks much
 * longer than a block (phases, drift) need runs as the unit. *@se: the
 * standard deviation of the kept log ratios, NaN when fewer than 2 were
 * kept. Return: 0, or -1 on ENOMEM.
 */
/* The block length for @n values: ceil(n^(1/3)), the order that minimizes
 * the error of a block bootstrap's variance estimate (Hall, Horowitz and
 * Jing 1995); 8 for a full reservoir, 1 for 1 value. */
uint32_t ana_block_len(uint32_t n);
int ana_boot_se_log(const uint64_t *x, uint32_t nx, const uint64_t *y, uint32_t ny, uint32_t b, uint64_t *rng,
		    double *se);

/* ana_norm_upper() - P(Z > @z) for a standard normal Z (erfc; +-infinity allowed). */
double ana_norm_upper(double z);
/* ana_norm_quantile_upper() - The z with P(Z > z) = @tail, 0 < @tail < 1 (bisection on
 * ana_norm_upper(), to double precision). */
double ana_norm_quantile_upper(double tail);

/*
 * ana_thr_p() - Two-sided p of the threshold test: log ratio @d with
 * standard error @se >= 0 against "the ratio lies within [1 - @noise,
 * 1 + @noise]": 2 min(P(Z > (d - log(1 + noise)) / se), P(Z > (log(1 -
 * noise) - d) / se)), at most 1 (the doubled one-sided p, for the
 * direction is chosen after looking). se = 0: 0 beyond the threshold, 1
 * within it. @noise >= 1: no improvement can pass -noise.
 */
double ana_thr_p(double d, double se, double noise);
/* ana_thr_p() with Student's t on @df degrees of freedom in place of the normal (INFINITY: normal). */
double ana_thr_p_df(double d, double se, double df, double noise);

/*
 * ana_t_upper() - P(T > @t) for Student's t with @df > 0 degrees of freedom (INFINITY: the normal),
 * from the regularized incomplete beta function, P(T > t) = I_x(df / 2, 1 / 2) / 2 with x = df /
 * (df + t^2) for t >= 0 (Abramowitz and Stegun 26.7.1), by its continued fraction (Press et al.,
 * Numerical Recipes, 3rd ed., §6.4, modified Lentz), to about 1e-15.
 */
double ana_t_upper(double t, double df);
/* ana_t_quantile_upper() - The t with P(T > t) = @tail on @df degrees of freedom (bisection). */
double ana_t_quantile_upper(double tail, double df);

/* Memory in a comparison (ana_mem.c; doc/analyzer-output.md §8): peak RSS
 * of each run and, per path measured in either, the RSS change per
 * occurrence, total change and peak, base -> new; the paths whose total
 * change moved most first (@top, 20 if 0). Nothing without an RSS series. */
void ana_mem_compare_text(FILE *out, const struct ana_result *base, const struct ana_result *nw,
			  const struct ana_cmp *c, int top);
/* The same as a JSON object: peak_rss_base_bytes, peak_rss_new_bytes, rows. */
json_t *ana_mem_compare_json(const struct ana_result *base, const struct ana_result *nw, const struct ana_cmp *c);

#endif /* PTZ_ANA_COMPARE_H */
