/*
 * analyzer/ana_compare.c - two traces compared path by path: Mann-Whitney
 * U, Benjamini-Hochberg, bootstrap CI of the median change, verdicts
 * (ana_compare.h has the method and its sources).
 */
#include "analyzer/ana_compare.h"

#include <errno.h>
#include <jansson.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DEF_ALPHA 0.05
#define DEF_NOISE 0.05
#define DEF_BOOT 1000u
#define DEF_SEED 0x70747a636d70ull /* "ptzcmp" */

const char *ana_verdict_name(enum ana_verdict v)
{
	static const char *const names[ANA_V_N] = { "regression", "improvement", "within noise", "not significant",
						    "unverified", "only in base", "only in new", "inherited" };
	return (unsigned)v < ANA_V_N ? names[v] : NULL;
}

const char *ana_verdict_key(enum ana_verdict v)
{
	static const char *const keys[ANA_V_N] = { "regression", "improvement", "within_noise", "not_significant",
						   "unverified", "only_base", "only_new", "inherited" };
	return (unsigned)v < ANA_V_N ? keys[v] : NULL;
}

/* ---- statistics ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* A value of the pooled sample, tagged with its side (0 = x, 1 = y). */
struct tagged {
	uint64_t v;
	uint32_t side;
};

static int cmp_tagged(const void *a, const void *b)
{
	return cmp_u64(&((const struct tagged *)a)->v, &((const struct tagged *)b)->v);
}

/*
 * P(U <= u) and P(U >= u) under H0 for sample sizes m, n, no ties. The
 * number of arrangements with U = k is the coefficient of q^k in the
 * Gaussian binomial [m + n choose m]_q (Mann and Whitney 1947 count the
 * same numbers by the recursion N(m, n, k) = N(m - 1, n, k - n) +
 * N(m, n - 1, k); Andrews, "The Theory of Partitions", 1976, §3.2 gives
 * the product), built as the product over i = 1..m of
 * (1 - q^(n + i)) / (1 - q^i), m the smaller size: O(m * mn) additions,
 * where the recursion took O(n * m * mn), so the exact distribution now
 * serves any n against a small side (1 against 401 took the normal
 * approximation, whose p cannot go below 0.083 there).
 * Both tails are summed from the low end (P(U >= u) = P(U <= mn - u), by
 * symmetry), where the coefficients are built without cancellation.
 */
static int mwu_exact(uint32_t m, uint32_t n, double u, double *le, double *ge)
{
	if (m > n) { /* [m + n choose m]_q = [m + n choose n]_q: the shorter product */
		uint32_t t = m;
		m = n;
		n = t;
	}
	const size_t mn = (size_t)m * n;
	double *c = calloc(mn + n + m + 1, sizeof(*c)); /* room for (1 - q^(n + i)) before dividing */
	if (!c)
		return -1;
	c[0] = 1;
	size_t deg = 0; /* of [n + i - 1 choose i - 1]_q: (i - 1) n */
	for (uint32_t i = 1; i <= m; i++) {
		const size_t s = (size_t)n + i, top = deg + s;
		for (size_t k = top; k >= s; k--) /* times (1 - q^s) */
			c[k] -= c[k - s];
		for (size_t k = i; k <= top; k++) /* over (1 - q^i): exact, the quotient is a polynomial */
			c[k] += c[k - i];
		deg += n;
		for (size_t k = deg + 1; k <= top; k++)
			c[k] = 0; /* the quotient's degree; rounding can leave dust above it */
	}
	double total = 0, lo = 0, hi = 0; /* sum of c[k]: all, for k <= u, for k <= mn - u */
	for (size_t k = 0; k <= mn; k++) {
		total += c[k];
		if ((double)k <= u)
			lo += c[k];
		if ((double)k <= (double)mn - u)
			hi += c[k];
	}
	free(c);
	*le = lo / total;
	*ge = hi / total;
	return 0;
}

double ana_mwu(const uint64_t *x, uint32_t nx, const uint64_t *y, uint32_t ny, double *u, bool *exact,
	       double *p_min)
{
	const size_t n = (size_t)nx + ny;
	struct tagged *a = malloc(n * sizeof(*a));
	if (!a)
		return NAN;
	for (uint32_t i = 0; i < nx; i++)
		a[i] = (struct tagged){ x[i], 0 };
	for (uint32_t j = 0; j < ny; j++)
		a[nx + j] = (struct tagged){ y[j], 1 };
	qsort(a, n, sizeof(*a), cmp_tagged);
	double rx = 0, ties = 0; /* rank sum of x (average ranks), sum of t^3 - t */
	for (size_t i = 0; i < n;) {
		size_t j = i;
		uint32_t in_x = 0;
		while (j < n && a[j].v == a[i].v)
			in_x += a[j++].side == 0;
		const double t = (double)(j - i), rank = (double)(i + 1 + j) / 2.0; /* ranks i+1..j */
		rx += rank * in_x;
		ties += t * t * t - t;
		i = j;
	}
	free(a);
	const double mn = (double)nx * ny;
	*u = rx - (double)nx * (nx + 1) / 2.0;
	*exact = ties == 0 && (nx < ny ? nx : ny) <= ANA_CMP_EXACT_SMALL;
	if (*exact) {
		double le, ge;
		if (mwu_exact(nx, ny, *u, &le, &ge))
			return NAN;
		if (p_min) /* U = 0 or mn: one arrangement of C(n, nx) */
			*p_min = fmin(1.0, 2.0 * exp(lgamma((double)nx + 1) + lgamma((double)ny + 1) - lgamma((double)n + 1)));
		double p = 2.0 * (le < ge ? le : ge);
		return p < 1.0 ? p : 1.0;
	}
	const double nn = (double)n;
	const double var = mn / 12.0 * ((nn + 1.0) - ties / (nn * (nn - 1.0)));
	if (!(var > 0)) {
		if (p_min)
			*p_min = 1.0;
		return 1.0; /* every value equal */
	}
	if (p_min) /* the farthest U from mn / 2 (0 or mn) */
		*p_min = fmin(1.0, erfc(fmax(0.0, (mn / 2.0 - 0.5) / sqrt(var)) / M_SQRT2));
	double z = (fabs(*u - mn / 2.0) - 0.5) / sqrt(var);
	if (z < 0)
		z = 0;
	double p = erfc(z / M_SQRT2);
	return p < 1.0 ? p : 1.0;
}

struct pidx {
	double p;
	size_t i;
};

static int cmp_pidx(const void *a, const void *b)
{
	double x = ((const struct pidx *)a)->p, y = ((const struct pidx *)b)->p;
	return (x > y) - (x < y);
}

int ana_bh(const double *p, size_t m, double *q)
{
	struct pidx *s = malloc((m ? m : 1) * sizeof(*s));
	if (!s)
		return -1;
	size_t k = 0;
	for (size_t i = 0; i < m; i++) {
		q[i] = NAN;
		if (!isnan(p[i]))
			s[k++] = (struct pidx){ p[i], i };
	}
	qsort(s, k, sizeof(*s), cmp_pidx);
	double run = 1.0; /* min over j >= i of p_(j) k / j, from the largest p down */
	for (size_t j = k; j-- > 0;) {
		double v = s[j].p * (double)k / (double)(j + 1);
		if (v < run)
			run = v;
		q[s[j].i] = run;
	}
	free(s);
	return 0;
}

/* The k-th smallest (0-based) of @v[0..n), by quickselect (Hoare's
 * FIND with a median-of-three pivot); reorders @v. */
static uint64_t select_k(uint64_t *v, uint32_t n, uint32_t k)
{
	uint32_t lo = 0, hi = n - 1;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		uint64_t a = v[lo], b = v[mid], c = v[hi];
		uint64_t piv = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
		uint32_t i = lo, j = hi;
		while (i <= j) {
			while (v[i] < piv)
				i++;
			while (v[j] > piv)
				j--;
			if (i <= j) {
				uint64_t t = v[i];
				v[i] = v[j];
				v[j] = t;
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			return v[k];
	}
	return v[k];
}

double ana_median(uint64_t *v, uint32_t n)
{
	uint64_t hi = select_k(v, n, n / 2);
	if (n % 2)
		return (double)hi;
	uint64_t lo = v[0]; /* the largest of the lower half */
	for (uint32_t i = 1; i < n / 2; i++)
		if (v[i] > lo)
			lo = v[i];
	return ((double)lo + (double)hi) / 2.0;
}

uint32_t ana_block_len(uint32_t n)
{
	return n ? (uint32_t)ceil(cbrt((double)n)) : 1;
}

/* One circular block bootstrap resample (Politis and Romano 1992) of the @n ordered values @x into
 * @out: blocks of @len consecutive values (wrapping past the end) from uniform starts, until n. */
static void block_resample(const uint64_t *x, uint32_t n, uint32_t len, uint64_t *out, uint64_t *rng)
{
	for (uint32_t j = 0; j < n;) {
		uint32_t at = (uint32_t)(((ana_u128)ana_rnd(rng) * n) >> 64);
		for (uint32_t k = 0; k < len && j < n; k++, j++) {
			out[j] = x[at];
			at = at + 1 == n ? 0 : at + 1;
		}
	}
}

int ana_boot_se_log(const uint64_t *x, uint32_t nx, const uint64_t *y, uint32_t ny, uint32_t b, uint64_t *rng,
		    double *se)
{
	uint64_t *s = malloc(((size_t)(nx > ny ? nx : ny)) * sizeof(*s));
	if (!s)
		return -1;
	/* Welford's running mean and sum of squared deviations of the kept log ratios */
	uint32_t k = 0;
	double mean = 0, m2 = 0;
	const uint32_t lx = ana_block_len(nx), ly = ana_block_len(ny);
	for (uint32_t i = 0; i < b; i++) {
		block_resample(x, nx, lx, s, rng);
		double mx = ana_median(s, nx);
		block_resample(y, ny, ly, s, rng);
		double my = ana_median(s, ny);
		if (!(mx > 0 && my > 0))
			continue;
		const double v = log(my / mx), dv = v - mean;
		mean += dv / ++k;
		m2 += dv * (v - mean);
	}
	*se = k >= 2 ? sqrt(m2 / (k - 1)) : NAN;
	free(s);
	return 0;
}

double ana_norm_upper(double z)
{
	return 0.5 * erfc(z / M_SQRT2);
}

double ana_norm_quantile_upper(double tail)
{
	/* P(Z > z) falls from 1 to 0: halve [-40, 40] until the ends meet (at most ~70 steps) */
	double lo = -40, hi = 40;
	for (int i = 0; i < 200 && hi - lo > 0; i++) {
		const double mid = 0.5 * (lo + hi);
		if (mid <= lo || mid >= hi)
			break;
		if (ana_norm_upper(mid) > tail)
			lo = mid;
		else
			hi = mid;
	}
	return 0.5 * (lo + hi);
}

/* The continued fraction of the incomplete beta function (Numerical Recipes §6.4, modified Lentz). */
static double beta_cf(double a, double b, double x)
{
	const double tiny = 1e-300;
	double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
	d = fabs(d) < tiny ? tiny : d;
	d = 1.0 / d;
	double h = d;
	for (int m = 1; m <= 10000; m++) {
		const int m2 = 2 * m;
		double aa = m * (b - m) * x / ((a - 1.0 + m2) * (a + m2));
		d = 1.0 + aa * d;
		d = fabs(d) < tiny ? tiny : d;
		c = 1.0 + aa / c;
		c = fabs(c) < tiny ? tiny : c;
		d = 1.0 / d;
		h *= d * c;
		aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + 1.0 + m2));
		d = 1.0 + aa * d;
		d = fabs(d) < tiny ? tiny : d;
		c = 1.0 + aa / c;
		c = fabs(c) < tiny ? tiny : c;
		d = 1.0 / d;
		const double del = d * c;
		h *= del;
		if (fabs(del - 1.0) < 1e-16)
			break;
	}
	return h;
}

/* The regularized incomplete beta function I_x(a, b), 0 <= x <= 1. */
static double beta_inc(double a, double b, double x)
{
	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	const double lbt = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
	if (x < (a + 1.0) / (a + b + 2.0))
		return exp(lbt) * beta_cf(a, b, x) / a;
	return 1.0 - exp(lbt) * beta_cf(b, a, 1.0 - x) / b;
}

double ana_t_upper(double t, double df)
{
	if (isnan(t) || !(df > 0))
		return NAN;
	if (isinf(df))
		return ana_norm_upper(t);
	if (isinf(t))
		return t > 0 ? 0.0 : 1.0;
	const double half = 0.5 * beta_inc(0.5 * df, 0.5, df / (df + t * t));
	return t >= 0 ? half : 1.0 - half;
}

double ana_t_quantile_upper(double tail, double df)
{
	/* P(T > t) falls from 1 to 0: halve until the ends meet; wide ends for 1 degree of freedom */
	double lo = -1e7, hi = 1e7;
	for (int i = 0; i < 400 && hi - lo > 0; i++) {
		const double mid = 0.5 * (lo + hi);
		if (mid <= lo || mid >= hi)
			break;
		if (ana_t_upper(mid, df) > tail)
			lo = mid;
		else
			hi = mid;
	}
	return 0.5 * (lo + hi);
}

/* P(T_df > (a - b) / se), with se = 0 read as a certain outcome: 0 when a > b, else 1. */
static double upper_of(double a, double b, double se, double df)
{
	if (se > 0)
		return ana_t_upper((a - b) / se, df);
	return a > b ? 0.0 : 1.0;
}

double ana_thr_p_df(double d, double se, double df, double noise)
{
	if (isnan(d) || isnan(se) || !(df > 0))
		return 1.0;
	const double up = log1p(noise);
	const double pu = upper_of(d, up, se, df);
	const double pd = noise < 1 ? upper_of(log1p(-noise), d, se, df) : 1.0;
	return fmin(1.0, 2.0 * fmin(pu, pd));
}

double ana_thr_p(double d, double se, double noise)
{
	return ana_thr_p_df(d, se, INFINITY, noise);
}

/* ---- matching the two trees ---- */

/* A child of a paired node: its timing domain's name ("" = default), its
 * name (NULL: unknown id, never matched) and its node. */
struct kid {
	const char *domain, *name;
	uint32_t node;
};

/* By domain, then name: sections of one name in two domains are two paths. */
static int kid_key_cmp(const struct kid *x, const struct kid *y)
{
	int c = strcmp(x->domain, y->domain);
	return c ? c : strcmp(x->name, y->name);
}

static int cmp_kid(const void *a, const void *b)
{
	const struct kid *x = a, *y = b;
	if (!x->name || !y->name) /* unknown names last, by node */
		return x->name ? -1 : y->name ? 1 : (x->node > y->node) - (x->node < y->node);
	int c = kid_key_cmp(x, y);
	return c ? c : (x->node > y->node) - (x->node < y->node);
}

/* The children of @node in @t, sorted by name, in a new array (*@n of them); NULL on ENOMEM. */
static struct kid *kids_of(const struct ana_result *res, const struct ana_tree *t, uint32_t node, uint32_t *n)
{
	const struct ana_node *p = &t->n[node];
	*n = p->nchild;
	struct kid *k = malloc((p->nchild ? p->nchild : 1) * sizeof(*k));
	if (!k)
		return NULL;
	for (uint32_t i = 0; i < p->nchild; i++) {
		uint32_t dom = 0;
		const char *name = ana_string(res, p->child_id[i], &dom);
		const char *dname = dom ? pt_reader_domain(res->rd, dom) : "";
		k[i] = (struct kid){ dname ? dname : "?", name, p->child[i] };
	}
	qsort(k, p->nchild, sizeof(*k), cmp_kid);
	return k;
}

struct pair {
	uint32_t b, n; /* nodes; UINT32_MAX = absent */
};

struct builder {
	const struct ana_result *base, *nw;
	struct ana_cmp *c;
	size_t crows;
	struct pair *st; /* DFS stack */
	size_t nst, cst;
};

static int push(struct builder *bd, uint32_t b, uint32_t n)
{
	if (bd->nst == bd->cst) {
		size_t nc = bd->cst ? bd->cst * 2 : 256;
		struct pair *s = realloc(bd->st, nc * sizeof(*s));
		if (!s)
			return -1;
		bd->st = s;
		bd->cst = nc;
	}
	bd->st[bd->nst++] = (struct pair){ b, n };
	return 0;
}

static struct ana_cmp_row *add_row(struct builder *bd)
{
	struct ana_cmp *c = bd->c;
	if (c->nrows == bd->crows) {
		size_t nc = bd->crows ? bd->crows * 2 : 256;
		struct ana_cmp_row *r = realloc(c->rows, nc * sizeof(*r));
		if (!r)
			return NULL;
		c->rows = r;
		bd->crows = nc;
	}
	struct ana_cmp_row *r = &c->rows[c->nrows++];
	memset(r, 0, sizeof(*r));
	r->median_base = r->median_new = r->change = r->ci_lo = r->ci_hi = NAN;
	r->u = r->p = r->q = r->self_change = r->change_vs_shift = NAN;
	r->mean_base = r->mean_new = r->change_mean = r->count_change = r->total_change = NAN;
	r->count_se_log = r->count_p_thr = r->count_q_thr = r->count_ci_lo = r->count_ci_hi = NAN;
	r->count_df = INFINITY;
	r->count_verdict = ANA_V_UNVERIFIED;
	for (int k = 0; k < 5; k++)
		r->q_change[k] = NAN;
	return r;
}

/* Pushes the children of the pair (@b, @n) in reverse name order (so they
 * pop in name order), matched by name where both sides have them. */
static int push_children(struct builder *bd, uint32_t b, uint32_t n)
{
	uint32_t kb = 0, kn = 0;
	struct kid *xb = NULL, *xn = NULL;
	if (b != UINT32_MAX && !(xb = kids_of(bd->base, &bd->base->merged, b, &kb)))
		return -1;
	if (n != UINT32_MAX && !(xn = kids_of(bd->nw, &bd->nw->merged, n, &kn))) {
		free(xb);
		return -1;
	}
	/* merge join from the end */
	uint32_t i = kb, j = kn;
	int rc = 0;
	while (rc == 0 && (i > 0 || j > 0)) {
		int d;
		if (i == 0)
			d = -1;
		else if (j == 0)
			d = 1;
		else if (!xb[i - 1].name || !xn[j - 1].name)
			d = xb[i - 1].name ? -1 : 1; /* unknown names sort last: take them first */
		else
			d = kid_key_cmp(&xb[i - 1], &xn[j - 1]);
		if (d > 0)
			rc = push(bd, xb[--i].node, UINT32_MAX);
		else if (d < 0)
			rc = push(bd, UINT32_MAX, xn[--j].node);
		else {
			i--;
			j--;
			rc = push(bd, xb[i].node, xn[j].node);
		}
	}
	free(xb);
	free(xn);
	return rc;
}

uint32_t ana_samples_without_first(const struct ana_agg *a, uint64_t *v)
{
	uint32_t n = 0;
	bool dropped = a->count == 0;
	for (uint32_t i = 0; i < a->res.n && n < ANA_RESERVOIR_CAP; i++) {
		if (!dropped && a->res.v[i] == a->first_ns) {
			dropped = true;
			continue;
		}
		v[n++] = a->res.v[i];
	}
	return n;
}

/* Whether any two-sided test on n1 vs n2 values can reach @alpha: the
 * smallest exact p, 2 / C(n1 + n2, n1), is below it. */
static bool testable(uint32_t n1, uint32_t n2, double alpha)
{
	if (n1 == 0 || n2 == 0)
		return false;
	double lc = lgamma((double)n1 + n2 + 1) - lgamma((double)n1 + 1) - lgamma((double)n2 + 1);
	return log(2.0) - lc < log(alpha);
}

/*
 * A path with sampled requests (pt_begin_sampled(), doc/analyzer-output.md §13): its call count and
 * total as the report estimates them (exact outside sampled requests, Horvitz-Thompson inside) into
 * @n and @t, and the estimates' variances into @vn and @vt (NaN for a path in nested sampled requests,
 * which has no interval). Else false, and the recorded figures with variance 0.
 */
static bool path_figures(const struct ana_agg *a, double *n, double *vn, double *t, double *vt)
{
	if (!a->est || !a->est->units) {
		*n = (double)a->count;
		*t = (double)a->total_ns;
		*vn = *vt = 0;
		return false;
	}
	struct ana_est_fig f;
	ana_est_figures(a, &f);
	*n = f.count;
	*t = f.total_ns;
	*vn = a->est->nested ? NAN : a->est->v_n;
	*vt = a->est->nested ? NAN : a->est->v_t;
	return true;
}

/* Fills the statistics of a row present in both trees; @vb, @vn scratch of ANA_RESERVOIR_CAP. */
static int fill_pair(struct ana_cmp_row *r, const struct ana_agg *ab, const struct ana_agg *an, uint64_t *vb,
		     uint64_t *vn, double alpha, double noise)
{
	r->n_base = ana_samples_without_first(ab, vb);
	r->n_new = ana_samples_without_first(an, vn);
	if (r->n_base > 0 && r->n_new > 0 && testable(r->n_base, r->n_new, alpha)) {
		bool ex;
		double p_min;
		r->p = ana_mwu(vb, r->n_base, vn, r->n_new, &r->u, &ex, &p_min);
		if (isnan(r->p))
			return -1;
		if (p_min >= alpha) { /* ties and a small side: the approximation cannot reach alpha */
			r->p = r->u = NAN;
		} else {
			r->exact = ex;
			r->low_confidence = r->n_base < ANA_CMP_LOW_N || r->n_new < ANA_CMP_LOW_N;
		}
	}
	/* the change at five quantiles: a shift or a scaling moves them alike, a change of shape does not */
	static const uint32_t qpm[5] = { 100, 250, 500, 750, 900 };
	for (int k = 0; k < 5; k++)
		r->q_change[k] = NAN;
	if (r->n_base && r->n_new) {
		qsort(vb, r->n_base, sizeof(*vb), cmp_u64);
		qsort(vn, r->n_new, sizeof(*vn), cmp_u64);
		double lo = INFINITY, hi = -INFINITY;
		for (int k = 0; k < 5; k++) {
			const double b = (double)vb[ana_rank_index(qpm[k], r->n_base)];
			const double n = (double)vn[ana_rank_index(qpm[k], r->n_new)];
			if (b > 0) {
				r->q_change[k] = n / b - 1.0;
				lo = fmin(lo, r->q_change[k]);
				hi = fmax(hi, r->q_change[k]);
			}
		}
		/* judged on enough samples only: a handful has no shape to compare */
		r->shape_changed = r->n_base >= ANA_CMP_LOW_N && r->n_new >= ANA_CMP_LOW_N && lo > -1 &&
				   (1 + hi) / (1 + lo) - 1 > 2 * noise; /* ratios: a 10x scaling with jitter is no shape change */
	}
	/* medians (ana_median reorders: the bootstrap does not care about order) */
	struct ana_moments rb = ana_moments_without(&ab->all, ab->first_ns), rn = ana_moments_without(&an->all, an->first_ns);
	r->mean_base = ab->count > 1 ? ana_moments_mean(&rb, ab->count - 1) : (double)ab->first_ns;
	r->mean_new = an->count > 1 ? ana_moments_mean(&rn, an->count - 1) : (double)an->first_ns;
	r->change_mean = r->mean_base > 0 ? r->mean_new / r->mean_base - 1.0 : NAN;
	double nb, vnb, tb, vtb, nn, vnn, tn, vtn; /* estimates where the paths were sampled */
	r->sampled = path_figures(ab, &nb, &vnb, &tb, &vtb) | path_figures(an, &nn, &vnn, &tn, &vtn);
	r->count_change = nb > 0 ? nn / nb - 1.0 : NAN;
	r->total_change = tb > 0 ? tn / tb - 1.0 : NAN;
	r->median_base = r->n_base ? ana_median(vb, r->n_base) : (ab->count ? (double)ab->first_ns : NAN);
	r->median_new = r->n_new ? ana_median(vn, r->n_new) : (an->count ? (double)an->first_ns : NAN);
	if (r->median_base > 0 && !isnan(r->median_new))
		r->change = r->median_new / r->median_base - 1.0;
	return 0;
}

/* The direction of a verdict: +1 regression, -1 improvement, the inherited direction, 0 otherwise. */
static int verdict_dir(enum ana_verdict v, int inherited_dir)
{
	return v == ANA_V_REGRESSION ? 1 : v == ANA_V_IMPROVEMENT ? -1 : v == ANA_V_INHERITED ? inherited_dir : 0;
}

/* new / base - 1 of two sums; 0 when both are 0, NaN when only the base is. */
static double rel_change(double b, double n)
{
	return b > 0 ? n / b - 1.0 : b == 0 && n == 0 ? 0.0 : NAN;
}

/*
 * One cause, one regression, for the per-call verdict, the total and the call count: a regression
 * (improvement) some of whose child rows regressed (improved) too, directly or through an inherited
 * row, and whose own part moved within the noise threshold, owes its change to them:
 * ANA_V_INHERITED. The call count goes the other way, from the root down: a path whose count moved with
 * its parent's (the same calls per parent call) inherits the parent's count verdict, and then its total,
 * when its time per call moved within the noise, is the parent's change too (not passed up again). The own part is the time per call (self_ns / count) for the per-call verdict and
 * the self total (self_ns) for the total. Before the walk, a path in one run only keeps its "new work"
 * ("gone") total verdict only when it is a top-level path or its parent, present in both runs, has a
 * total that moved beyond the threshold that way: a renamed section whose parent kept its time is not
 * a regression. Rows are in tree order (a parent before its children), so a walk from the end decides
 * children first. Return: 0, or -1 on ENOMEM.
 */
static int inherit(const struct ana_result *base, const struct ana_result *nw, struct ana_cmp *c)
{
	/* per row: the directions its children moved in (bits 0, 1: per call up, down; bits 2, 3: total) */
	uint8_t *kids = calloc(c->nrows ? c->nrows : 1, 1);
	int64_t *brow = malloc((base->merged.count ? base->merged.count : 1) * sizeof(*brow));
	int64_t *nrow = malloc((nw->merged.count ? nw->merged.count : 1) * sizeof(*nrow));
	int64_t *prow = malloc((c->nrows ? c->nrows : 1) * sizeof(*prow));
	if (!kids || !brow || !nrow || !prow) {
		free(kids);
		free(brow);
		free(nrow);
		free(prow);
		return -1;
	}
	for (uint32_t k = 0; k < base->merged.count; k++)
		brow[k] = -1;
	for (uint32_t k = 0; k < nw->merged.count; k++)
		nrow[k] = -1;
	for (size_t i = 0; i < c->nrows; i++) { /* parents come first: their rows are known */
		const struct ana_cmp_row *r = &c->rows[i];
		const uint32_t bp = r->base_node != UINT32_MAX ? base->merged.n[r->base_node].parent : 0;
		const uint32_t np = r->new_node != UINT32_MAX ? nw->merged.n[r->new_node].parent : 0;
		prow[i] = r->base_node != UINT32_MAX ? (bp ? brow[bp] : -1) : (np ? nrow[np] : -1);
		if (r->base_node != UINT32_MAX)
			brow[r->base_node] = (int64_t)i;
		if (r->new_node != UINT32_MAX)
			nrow[r->new_node] = (int64_t)i;
	}
	const double noise = c->opts.noise;
	/* the call count, from the root down: a path called 10x as often because its parent is called 10x
	 * as often (the same calls per parent call) is its parent's change */
	for (size_t i = 0; i < c->nrows; i++) {
		struct ana_cmp_row *r = &c->rows[i];
		const int d = verdict_dir(r->count_verdict, 0);
		const struct ana_cmp_row *pr = prow[i] >= 0 ? &c->rows[prow[i]] : NULL;
		if (!d || !pr || verdict_dir(pr->count_verdict, pr->count_inherited_dir) != d)
			continue;
		/* the change of the calls per parent call (with runs as the unit, of the geometric means) */
		const double own = c->runs_base > 1 ? (1.0 + r->count_change) / (1.0 + pr->count_change) - 1.0
						    : rel_change((double)r->count_base / (double)pr->count_base,
								 (double)r->count_new / (double)pr->count_new);
		if (!(fabs(own) <= noise))
			continue;
		r->count_verdict = ANA_V_INHERITED;
		r->count_inherited_dir = d;
	}
	for (size_t i = 0; i < c->nrows; i++) {
		struct ana_cmp_row *r = &c->rows[i];
		if (!r->total_share_only || r->depth <= 1)
			continue;
		const struct ana_cmp_row *pr = prow[i] >= 0 ? &c->rows[prow[i]] : NULL;
		if (!pr || pr->base_node == UINT32_MAX || pr->new_node == UINT32_MAX ||
		    pr->total_verdict != r->total_verdict) {
			r->total_verdict = ANA_V_UNVERIFIED;
			r->total_share_only = false;
		}
	}
	for (size_t i = c->nrows; i-- > 0;) {
		struct ana_cmp_row *r = &c->rows[i];
		const bool both = r->base_node != UINT32_MAX && r->new_node != UINT32_MAX;
		int dir = 0, tdir = verdict_dir(r->total_verdict, 0);
		if (both) {
			const struct ana_agg *ab = &base->merged.n[r->base_node].agg, *an = &nw->merged.n[r->new_node].agg;
			r->self_change = rel_change(ab->count ? (double)ab->self_ns / (double)ab->count : NAN,
						    an->count ? (double)an->self_ns / (double)an->count : NAN);
			dir = verdict_dir(r->verdict, 0);
			if (dir && !r->threshold_only && (kids[i] & (dir > 0 ? 1 : 2)) && fabs(r->self_change) <= noise) {
				r->verdict = ANA_V_INHERITED;
				r->inherited_dir = dir;
			}
			dir = verdict_dir(r->verdict, r->inherited_dir);
			const double self_total = rel_change((double)ab->self_ns, (double)an->self_ns);
			/* the mean time per call, all occurrences (with runs as the unit, of the geometric means) */
			const double per_call = (1.0 + r->total_change) / (1.0 + r->count_change) - 1.0;
			if (tdir && r->count_verdict == ANA_V_INHERITED && r->count_inherited_dir == tdir &&
			    fabs(per_call) <= noise) {
				/* called more (less) only because its parent is, each call as before: the parent's
				 * change, which is not passed back up to it */
				r->total_verdict = ANA_V_INHERITED;
				r->total_inherited_dir = tdir;
				r->total_from_parent = true;
				tdir = 0;
			} else if (tdir && (kids[i] & (tdir > 0 ? 4 : 8)) && fabs(self_total) <= noise) {
				r->total_verdict = ANA_V_INHERITED;
				r->total_inherited_dir = tdir;
			}
		}
		if (prow[i] >= 0)
			kids[prow[i]] |= (dir > 0 ? 1 : dir < 0 ? 2 : 0) | (tdir > 0 ? 4 : tdir < 0 ? 8 : 0);
	}
	free(kids);
	free(brow);
	free(nrow);
	free(prow);
	return 0;
}

static int cmp_dbl_asc(const void *a, const void *b)
{
	const double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/*
 * Whole-run shift: when most tested paths moved together (a slower machine, another compiler flag),
 * say so and give each path's change relative to it. Among the tested rows with both medians > 0
 * (at least ANA_CMP_SHIFT_MIN): the median of their changes (nearest rank on the sorted ratios) is
 * the shift; it is "found" when at least three quarters of them are significant changes beyond the
 * noise threshold in the shift's direction (their verdict regression, improvement or inherited that
 * way). Return: 0, or -1 on ENOMEM.
 */
static int whole_run_shift(struct ana_cmp *c)
{
	for (size_t i = 0; i < c->nrows; i++)
		c->rows[i].change_vs_shift = NAN;
	c->shift = c->shift_q1 = c->shift_q3 = NAN;
	double *v = malloc((c->nrows ? c->nrows : 1) * sizeof(*v));
	if (!v)
		return -1;
	size_t n = 0;
	for (size_t i = 0; i < c->nrows; i++) {
		const struct ana_cmp_row *r = &c->rows[i];
		if (!isnan(r->p) && r->median_base > 0 && r->median_new > 0)
			v[n++] = r->median_new / r->median_base;
	}
	c->shift_paths = n;
	if (n >= ANA_CMP_SHIFT_MIN) {
		qsort(v, n, sizeof(*v), cmp_dbl_asc);
		const double ratio = v[ana_rank_index(500, (uint32_t)n)];
		c->shift = ratio - 1.0;
		c->shift_q1 = v[ana_rank_index(250, (uint32_t)n)] - 1.0;
		c->shift_q3 = v[ana_rank_index(750, (uint32_t)n)] - 1.0;
		const int dir = c->shift > c->opts.noise ? 1 : c->shift < -c->opts.noise ? -1 : 0;
		for (size_t i = 0; dir && i < c->nrows; i++) {
			const struct ana_cmp_row *r = &c->rows[i];
			if (isnan(r->p) || !(r->median_base > 0 && r->median_new > 0))
				continue;
			const int d = r->verdict == ANA_V_REGRESSION ? 1 : r->verdict == ANA_V_IMPROVEMENT ? -1
				      : r->verdict == ANA_V_INHERITED ? r->inherited_dir : 0;
			c->shift_moved += d == dir;
		}
		c->shift_found = dir != 0 && 4 * c->shift_moved >= 3 * n;
		for (size_t i = 0; c->shift_found && i < c->nrows; i++) {
			struct ana_cmp_row *r = &c->rows[i];
			if (!isnan(r->change))
				r->change_vs_shift = (1.0 + r->change) / ratio - 1.0;
		}
	}
	free(v);
	return 0;
}

/* The share of its run that the path @node of @res takes (inclusive time over the sum of thread spans,
 * the report's share); NaN for an absent path or a run without span. */
static double run_share(const struct ana_result *res, uint32_t node)
{
	if (node == UINT32_MAX || !res->thread_span_sum_ns)
		return NAN;
	return (double)res->merged.n[node].agg.total_ns / (double)res->thread_span_sum_ns;
}

/*
 * For each node of @ref's merged tree, the node of @run's with the same call path (names and domains,
 * matched as the rows are: kids_of()), UINT32_MAX where @run lacks it. Nodes are numbered parent
 * first, so one walk in node order maps each child under its mapped parent, by binary search in that
 * parent's sorted children (computed once each). NULL on ENOMEM.
 */
static uint32_t *map_paths(const struct ana_result *ref, const struct ana_result *run)
{
	const struct ana_tree *rt = &ref->merged, *ut = &run->merged;
	uint32_t *map = malloc((rt->count ? rt->count : 1) * sizeof(*map));
	struct kid **kids = calloc(ut->count ? ut->count : 1, sizeof(*kids));
	uint32_t *nkids = calloc(ut->count ? ut->count : 1, sizeof(*nkids));
	bool bad = !map || !kids || !nkids;
	for (uint32_t i = 0; !bad && i < rt->count; i++) {
		map[i] = UINT32_MAX;
		if (i == 0) {
			map[0] = ut->count ? 0 : UINT32_MAX;
			continue;
		}
		const uint32_t up = map[rt->n[i].parent];
		if (up == UINT32_MAX)
			continue;
		if (!kids[up] && !(kids[up] = kids_of(run, ut, up, &nkids[up]))) {
			bad = true;
			break;
		}
		uint32_t dom = 0;
		const char *name = ana_string(ref, rt->n[i].id, &dom);
		const char *dname = dom ? pt_reader_domain(ref->rd, dom) : "";
		if (!name)
			continue; /* an unknown id is never matched */
		const struct kid key = { dname ? dname : "?", name, 0 };
		uint32_t lo = 0, hi = nkids[up];
		while (lo < hi) { /* the first child not below the key (unknown names sort last) */
			const uint32_t mid = lo + (hi - lo) / 2;
			if (kids[up][mid].name && kid_key_cmp(&kids[up][mid], &key) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < nkids[up] && kids[up][lo].name && kid_key_cmp(&kids[up][lo], &key) == 0)
			map[i] = kids[up][lo].node;
	}
	for (uint32_t k = 0; kids && k < ut->count; k++)
		free(kids[k]);
	free(kids);
	free(nkids);
	if (bad) {
		free(map);
		return NULL;
	}
	return map;
}

/* Mean and sample variance of @n >= 2 values. */
static void mean_var(const double *v, size_t n, double *mean, double *var)
{
	double m = 0, s = 0;
	for (size_t i = 0; i < n; i++)
		m += v[i];
	m /= (double)n;
	for (size_t i = 0; i < n; i++)
		s += (v[i] - m) * (v[i] - m);
	*mean = m;
	*var = s / (double)(n - 1);
}

/*
 * Welch's t on the per-run values @x (@nx >= 2) and @y (@ny >= 2): *@d = mean(y) - mean(x), *@se =
 * sqrt(s_x^2 / nx + s_y^2 / ny), *@df the Welch-Satterthwaite degrees of freedom (INFINITY when se is
 * 0: every run gave the same value on each side). Return: the two-sided p of d = 0.
 */
static double welch(const double *x, size_t nx, const double *y, size_t ny, double *d, double *se, double *df)
{
	double mx, vx, my, vy;
	mean_var(x, nx, &mx, &vx);
	mean_var(y, ny, &my, &vy);
	const double a = vx / (double)nx, b = vy / (double)ny;
	*d = my - mx;
	*se = sqrt(a + b);
	*df = *se > 0 ? (a + b) * (a + b) / (a * a / (double)(nx - 1) + b * b / (double)(ny - 1)) : INFINITY;
	if (!(*se > 0))
		return *d == 0 ? 1.0 : 0.0;
	return fmin(1.0, 2.0 * ana_t_upper(fabs(*d) / *se, *df));
}

/*
 * Yuen's (1974) trimmed mean of the @n >= 1 values @v (in time order; @s: scratch of @n, sorted here)
 * and the square of its standard error: trim g = floor(ANA_CMP_TRIM n) values off each end, h = n - 2g
 * kept; the error from the winsorized sample (the g values at each end set to the nearest kept one),
 * se^2 = (n - 1) s_w^2 / (h (h - 1)) (Tukey and McLaughlin 1963; Wilcox, Introduction to Robust
 * Estimation and Hypothesis Testing, 4th ed., §4.3), where s_w^2 is the larger of the winsorized
 * sample's variance and its long-run variance by batch means (the series in time order cut into b =
 * floor(n / m) batches of m = ceil(sqrt n), m times the variance of the batch means; Flegal and Jones
 * 2010): durations disturbed in a stretch of time (a phase that met a busy core) widen the error
 * instead of passing for independent draws. *@df: the degrees of freedom of that variance, h - 1, or
 * b - 1 when the batch means gave it; NaN (and *@se2 NaN) when h = 1.
 */
static double trimmed_mean(const uint64_t *v, uint32_t n, uint64_t *s, double *se2, double *df)
{
	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_u64);
	const uint32_t g = (uint32_t)floor(ANA_CMP_TRIM * (double)n), h = n - 2 * g;
	const uint64_t lo = s[g], hi = s[n - g - 1];
	double tm = 0, wm = 0, ws = 0;
	for (uint32_t i = g; i < n - g; i++)
		tm += (double)s[i];
	tm /= (double)h;
	*se2 = *df = NAN;
	if (h < 2)
		return tm;
#define WINS(x) ((double)((x) < lo ? lo : (x) > hi ? hi : (x)))
	for (uint32_t i = 0; i < n; i++)
		wm += WINS(v[i]);
	wm /= (double)n;
	for (uint32_t i = 0; i < n; i++)
		ws += (WINS(v[i]) - wm) * (WINS(v[i]) - wm);
	double var = ws / (double)(n - 1);
	*df = (double)(h - 1);
	const uint32_t m = (uint32_t)ceil(sqrt((double)n)), b = n / m;
	if (b >= 2) {
		double bm = 0, bs = 0;
		for (uint32_t j = 0; j < b; j++) {
			double x = 0;
			for (uint32_t i = j * m; i < (j + 1) * m; i++)
				x += WINS(v[i]);
			bm += x / (double)m;
		}
		bm /= (double)b;
		for (uint32_t j = 0; j < b; j++) {
			double x = 0;
			for (uint32_t i = j * m; i < (j + 1) * m; i++)
				x += WINS(v[i]);
			bs += (x / (double)m - bm) * (x / (double)m - bm);
		}
		const double lrv = (double)m * bs / (double)(b - 1);
		if (lrv > var) {
			var = lrv;
			*df = (double)(b - 1);
		}
	}
#undef WINS
	*se2 = var * (double)(n - 1) / ((double)h * (double)(h - 1));
	return tm;
}

/* A path's occurrences (the reservoir: every one up to ANA_RESERVOIR_CAP, else a stratified sample in
 * time order, first occurrence included) into @v; returns how many. */
static uint32_t samples_all(const struct ana_agg *a, uint64_t *v)
{
	const uint32_t n = a->res.n < ANA_RESERVOIR_CAP ? a->res.n : ANA_RESERVOIR_CAP;
	memcpy(v, a->res.v, n * sizeof(*v));
	return n;
}

/* Per-run summaries of one side for the path of @ref_node in @runs[0]: the log of its median per call
 * (samples after the first; the first occurrence when it is the only one), of its total as the test
 * judges it (@ltot: count x the ANA_CMP_TRIM-trimmed mean per call, as with one run a side) and as it is
 * (@lsum: total_ns; as many as @ltot), and of its call count, for the runs where it occurred. @vb:
 * scratch of 2 ANA_RESERVOIR_CAP. */
static void side_logs(const struct ana_result *const *runs, size_t k, uint32_t *const *maps, uint32_t ref_node,
		      uint64_t *vb, double *lmed, size_t *nmed, double *ltot, double *lsum, size_t *ntot, double *lcnt,
		      size_t *ncnt)
{
	*nmed = *ntot = *ncnt = 0;
	for (size_t i = 0; i < k; i++) {
		const uint32_t node = i ? maps[i][ref_node] : ref_node;
		if (node == UINT32_MAX)
			continue;
		const struct ana_agg *a = &runs[i]->merged.n[node].agg;
		if (!a->count)
			continue;
		double cnt, vn, tot, vt; /* a sampled path: its estimates (the runs' variation holds the sampling's) */
		(void)path_figures(a, &cnt, &vn, &tot, &vt);
		lcnt[(*ncnt)++] = log(cnt);
		const uint32_t n = ana_samples_without_first(a, vb);
		const double med = n ? ana_median(vb, n) : (double)a->first_ns;
		if (med > 0)
			lmed[(*nmed)++] = log(med);
		double se2, df;
		const uint32_t na = samples_all(a, vb);
		const double tm = na ? trimmed_mean(vb, na, vb + ANA_RESERVOIR_CAP, &se2, &df) : 0;
		if (a->total_ns && tm > 0) {
			lsum[*ntot] = log(tot);
			ltot[(*ntot)++] = log(cnt * tm);
		}
	}
}

/*
 * Runs as the unit (ana_cmp_opts.base_runs, new_runs): each row in both first runs gets its per-call
 * and total statistics from the per-run summaries: Welch's t on the log medians (p for the BH family
 * of "changed at all", se_log, df, the medians as geometric means over runs) and on the log totals.
 * A row needs 2 runs a side where it occurred; else it is untested (unverified). Return: 0, or -1 on
 * ENOMEM.
 */
static int runs_fill(struct ana_cmp *c, uint64_t *vb)
{
	const struct ana_cmp_opts *o = &c->opts;
	const size_t kb = o->nbase_runs, kn = o->nnew_runs;
	uint32_t **mb = calloc(kb, sizeof(*mb)), **mn = calloc(kn, sizeof(*mn));
	double *buf = malloc(8 * (kb + kn) * sizeof(*buf));
	int rc = mb && mn && buf ? 0 : -1;
	for (size_t i = 1; rc == 0 && i < kb; i++)
		rc = (mb[i] = map_paths(o->base_runs[0], o->base_runs[i])) ? 0 : -1;
	for (size_t i = 1; rc == 0 && i < kn; i++)
		rc = (mn[i] = map_paths(o->new_runs[0], o->new_runs[i])) ? 0 : -1;
	for (size_t i = 0; rc == 0 && i < c->nrows; i++) {
		struct ana_cmp_row *r = &c->rows[i];
		r->total_df = r->df = INFINITY;
		r->total_se_log = r->total_p_thr = r->total_test_change = r->se_log = NAN;
		r->total_verdict = ANA_V_UNVERIFIED;
		if (r->base_node == UINT32_MAX || r->new_node == UINT32_MAX)
			continue;
		double *bm = buf, *bt = buf + kb, *bs = buf + 2 * kb, *bc = buf + 3 * kb;
		double *nm = buf + 4 * kb, *nt = nm + kn, *ns = nm + 2 * kn, *nc = nm + 3 * kn;
		size_t nbm, nbt, nbc, nnm, nnt, nnc;
		side_logs(o->base_runs, kb, mb, r->base_node, vb, bm, &nbm, bt, bs, &nbt, bc, &nbc);
		side_logs(o->new_runs, kn, mn, r->new_node, vb, nm, &nnm, nt, ns, &nnt, nc, &nnc);
		r->p = r->u = NAN;
		r->exact = false;
		r->n_base = (uint32_t)nbm;
		r->n_new = (uint32_t)nnm;
		if (nbm >= 2 && nnm >= 2) {
			double d;
			r->p = welch(bm, nbm, nm, nnm, &d, &r->se_log, &r->df);
			double mbv, vbv, mnv, vnv;
			mean_var(bm, nbm, &mbv, &vbv);
			mean_var(nm, nnm, &mnv, &vnv);
			r->median_base = exp(mbv);
			r->median_new = exp(mnv);
			r->change = expm1(d);
			r->low_confidence = nbm < 3 || nnm < 3;
		}
		if (nbt >= 2 && nnt >= 2) {
			double d;
			(void)welch(bt, nbt, nt, nnt, &d, &r->total_se_log, &r->total_df);
			r->total_test_change = expm1(d);
			r->total_p_thr = ana_thr_p_df(d, r->total_se_log, r->total_df, o->noise);
			double msb, vsb, msn, vsn; /* the totals as they are: the change of their geometric means */
			mean_var(bs, nbt, &msb, &vsb);
			mean_var(ns, nnt, &msn, &vsn);
			r->total_change = expm1(msn - msb);
			r->total_verdict = ANA_V_NOT_SIGNIFICANT;
		}
		if (nbc >= 2 && nnc >= 2) { /* the call count: counts_judged() */
			double d;
			(void)welch(bc, nbc, nc, nnc, &d, &r->count_se_log, &r->count_df);
			r->count_change = expm1(d);
			r->count_p_thr = ana_thr_p_df(d, r->count_se_log, r->count_df, o->noise);
		}
	}
	for (size_t i = 1; mb && i < kb; i++)
		free(mb[i]);
	for (size_t i = 1; mn && i < kn; i++)
		free(mn[i]);
	free(mb);
	free(mn);
	free(buf);
	return rc;
}

/* The squared relative error of the ratio of two totals as they are (the central limit theorem for a
 * sum of n durations): n_b s_b^2 / T_b^2 + n_n s_n^2 / T_n^2, s from the exact power sums; NaN when a
 * sum of squares saturated. Both totals above 0. */
static double sum_rel_var(const struct ana_agg *ab, const struct ana_agg *an)
{
	const double xb = ana_moments_std(&ab->all, ab->count), xn = ana_moments_std(&an->all, an->count);
	const double tb = (double)ab->total_ns, tn = (double)an->total_ns;
	return (double)ab->count * xb * xb / (tb * tb) + (double)an->count * xn * xn / (tn * tn);
}

/*
 * One run a side, a row with sampled requests on a side: its count and total are the Horvitz-Thompson
 * estimates, random through the sampling, so each gets a Wald threshold test of its log ratio with the
 * estimates' variances (delta method, var(log X) = var(X) / X^2): the count's (count_p_thr, in the
 * count family, counts_judged()) and the total's, whose error also holds the durations' own (the
 * recorded sum's n s^2, relative). The trimmed-total test is not made: the sampling error dominates.
 */
static void sampled_tested(struct ana_cmp_row *r, const struct ana_agg *ab, const struct ana_agg *an, double noise)
{
	double nb, vnb, tb, vtb, nn, vnn, tn, vtn;
	(void)path_figures(ab, &nb, &vnb, &tb, &vtb);
	(void)path_figures(an, &nn, &vnn, &tn, &vtn);
	if (!(nb > 0 && nn > 0 && tb > 0 && tn > 0) || isnan(vnb) || isnan(vnn))
		return; /* nested sampling: no variance, not tested */
	const double se_n = sqrt(vnb / (nb * nb) + vnn / (nn * nn));
	r->count_se_log = se_n;
	r->count_p_thr = ana_thr_p(log(nn / nb), se_n, noise);
	const double dur = sum_rel_var(ab, an);
	r->total_se_log = sqrt(vtb / (tb * tb) + vtn / (tn * tn) + (isnan(dur) ? 0 : dur));
	r->total_test_change = r->total_change;
	r->total_p_thr = ana_thr_p(log(tn / tb), r->total_se_log, noise);
	r->total_verdict = ANA_V_NOT_SIGNIFICANT;
}

/*
 * The total per run of each row (count x duration): the threshold test's inputs for a row in both runs
 * (at least 2 occurrences and a total above 0 a side), and for a row in one run only, the "new work"
 * (or "gone") candidates: a share of that run at least the noise threshold, kept by prune_share_only().
 * One run a side (the count taken as exact), two tests must both reject "within the noise" in the same
 * direction: the total as it is (a Wald test with the sum's variance n s^2 from the power sums, as the
 * central limit theorem gives it) and the count times the ANA_CMP_TRIM-trimmed mean per call, with
 * Yuen's error of each trimmed mean (trimmed_mean(): long-run variance by batch means) and the
 * Welch-Satterthwaite degrees of freedom (Yuen 1974). The first alone lets a total that rests on a
 * handful of occurrences (a section preempted once on a busy machine: its total +600 % with every
 * other call unchanged) pass for a regression, since the normal approximation of a sum fails when one
 * value dominates it; the second alone would judge a change of the tail beyond the trim as no change.
 * @vb: scratch of 2 ANA_RESERVOIR_CAP values. Return: 0.
 */
static int totals_tested(const struct ana_result *base, const struct ana_result *nw, struct ana_cmp *c, uint64_t *vb)
{
	const double noise = c->opts.noise;
	for (size_t i = 0; i < c->nrows; i++) {
		struct ana_cmp_row *r = &c->rows[i];
		r->total_q_thr = r->total_ci_lo = r->total_ci_hi = NAN;
		if (c->runs_base < 2) { /* else runs_fill() set them */
			r->total_se_log = r->total_p_thr = r->total_test_change = NAN;
			r->total_df = INFINITY;
			r->total_verdict = ANA_V_UNVERIFIED;
		}
		if (r->base_node == UINT32_MAX || r->new_node == UINT32_MAX) {
			const bool in_b = r->base_node != UINT32_MAX;
			const double share = in_b ? run_share(base, r->base_node) : run_share(nw, r->new_node);
			if (share > 0 && share >= noise) {
				r->total_verdict = in_b ? ANA_V_IMPROVEMENT : ANA_V_REGRESSION;
				r->total_share_only = true;
			}
			continue;
		}
		if (c->runs_base > 1)
			continue; /* runs_fill() */
		const struct ana_agg *ab = &base->merged.n[r->base_node].agg, *an = &nw->merged.n[r->new_node].agg;
		if (ab->count < 2 || an->count < 2 || !ab->total_ns || !an->total_ns)
			continue;
		if (r->sampled) {
			sampled_tested(r, ab, an, noise);
			continue;
		}
		double sb2, sn2, fb, fn;
		const uint32_t nb = samples_all(ab, vb);
		const double mb = nb >= 2 ? trimmed_mean(vb, nb, vb + ANA_RESERVOIR_CAP, &sb2, &fb) : NAN;
		const uint32_t nn = samples_all(an, vb);
		const double mn = nn >= 2 ? trimmed_mean(vb, nn, vb + ANA_RESERVOIR_CAP, &sn2, &fn) : NAN;
		if (!(mb > 0 && mn > 0) || isnan(sb2) || isnan(sn2))
			continue;
		/* the trimmed total */
		const double eb = sb2 / (mb * mb), en = sn2 / (mn * mn); /* squared relative errors */
		const double d = log((double)an->count * mn / ((double)ab->count * mb));
		const double se = sqrt(eb + en);
		const double df = se > 0 ? (eb + en) * (eb + en) / (eb * eb / fb + en * en / fn) : INFINITY;
		const double p_trim = ana_thr_p_df(d, se, df, noise);
		/* the total as it is: the sum's variance n s^2 from the exact power sums */
		const double tb = (double)ab->total_ns, tn = (double)an->total_ns;
		const double se_sum = sqrt(sum_rel_var(ab, an));
		const double p_sum = isnan(se_sum) ? 1.0 : ana_thr_p(log(tn / tb), se_sum, noise);
		/* both must pass (an intersection-union test, p = the larger: Berger 1982); the binding one's
		 * change and error make the interval, so the interval and the verdict agree */
		if (p_trim >= p_sum || (d > 0) != (tn > tb)) {
			r->total_test_change = expm1(d);
			r->total_se_log = se;
			r->total_df = df;
			r->total_p_thr = (d > 0) != (tn > tb) ? 1.0 : p_trim;
		} else {
			r->total_test_change = r->total_change;
			r->total_se_log = se_sum;
			r->total_df = INFINITY;
			r->total_p_thr = p_sum;
		}
		r->total_verdict = ANA_V_NOT_SIGNIFICANT;
	}
	return 0;
}

/*
 * Whether the median jumped apart from its neighbours: the change at p50 lies beyond the changes at
 * both p25 and p75 by more than twice the noise threshold (as ratios), on a row whose shape changed.
 * That is a bimodal section whose slow share moved (its median goes from one mode to the other while
 * p25 and p75 stay), where no per-call ratio of medians means anything. A shift with a stretched tail
 * is not: preemption on a busy machine moves p75 or p90 more than p25 and p50 (a +50% section whose
 * p90 went +1,700%; a 10x section whose p75 went +2,900%), the median still sits between its
 * neighbours, and the mean, dragged by either run's outliers, would misstate the change.
 */
static bool median_jumped(const struct ana_cmp_row *r, double noise)
{
	if (!r->shape_changed)
		return false;
	const double q25 = r->q_change[1], q50 = r->q_change[2], q75 = r->q_change[3];
	if (isnan(q25) || isnan(q50) || isnan(q75))
		return false;
	const double lo = fmin(q25, q75), hi = fmax(q25, q75);
	return lo > -1 && q50 > -1 && ((1 + q50) / (1 + hi) - 1 > 2 * noise || (1 + lo) / (1 + q50) - 1 > 2 * noise);
}

/* The log of the change the per-call verdict judges: of the means (on_mean) or of the medians. */
static double effect_log(const struct ana_cmp_row *r)
{
	return r->on_mean ? log(r->mean_new / r->mean_base) : log(r->median_new / r->median_base);
}

/*
 * The threshold family: every row's per-call p_thr and total p_thr, one Benjamini-Hochberg family
 * (ana_bh()); the selected ones (q < alpha) are regressions or improvements in the direction of their
 * change, and every interval is drawn at the false-coverage-rate adjusted level 1 - max(R, 1) alpha / M
 * (Benjamini and Yekutieli 2005, with R selected of M): a row not selected has p > R alpha / M, so
 * its interval reaches into the noise band, and a selected one's lies beyond it. Return: 0, or -1 on
 * ENOMEM.
 */
static int threshold_family(struct ana_cmp *c)
{
	const double alpha = c->opts.alpha;
	double *p = malloc((2 * c->nrows + 1) * sizeof(*p)), *q = malloc((2 * c->nrows + 1) * sizeof(*q));
	if (!p || !q) {
		free(p);
		free(q);
		return -1;
	}
	for (size_t i = 0; i < c->nrows; i++) {
		p[2 * i] = c->rows[i].p_thr;
		p[2 * i + 1] = c->rows[i].total_p_thr;
	}
	if (ana_bh(p, 2 * c->nrows, q)) {
		free(p);
		free(q);
		return -1;
	}
	c->family = c->selected = 0;
	for (size_t i = 0; i < 2 * c->nrows; i++) {
		c->family += !isnan(p[i]);
		c->selected += q[i] < alpha;
	}
	c->ci_level = c->family ? 1.0 - (double)(c->selected ? c->selected : 1) * alpha / (double)c->family : 1.0 - alpha;
	const double tail = (1.0 - c->ci_level) / 2.0, z = ana_norm_quantile_upper(tail);
	for (size_t i = 0; i < c->nrows; i++) {
		struct ana_cmp_row *r = &c->rows[i];
		r->q_thr = q[2 * i];
		r->total_q_thr = q[2 * i + 1];
		if (!isnan(r->p_thr) && !isnan(r->se_log)) { /* significant (q < alpha): bootstrapped or from runs */
			const double d = effect_log(r);
			const double zz = isinf(r->df) ? z : ana_t_quantile_upper(tail, r->df);
			r->ci_lo = expm1(d - zz * r->se_log);
			r->ci_hi = expm1(d + zz * r->se_log);
			if (r->q_thr < alpha)
				r->verdict = d > 0 ? ANA_V_REGRESSION : ANA_V_IMPROVEMENT;
		}
		if (!isnan(r->total_se_log)) { /* the change the total's test judged, both totals above 0 */
			const double d = log1p(r->total_test_change);
			const double zz = isinf(r->total_df) ? z : ana_t_quantile_upper(tail, r->total_df);
			r->total_ci_lo = expm1(d - zz * r->total_se_log);
			r->total_ci_hi = expm1(d + zz * r->total_se_log);
			if (r->total_q_thr < alpha)
				r->total_verdict = d > 0 ? ANA_V_REGRESSION : ANA_V_IMPROVEMENT;
		}
	}
	free(p);
	free(q);
	return 0;
}

/*
 * The call count's verdict of every row (ana_cmp_row.count_verdict). One run a side: the counts are
 * exact, so count_change beyond the noise threshold is more (fewer) calls, with no test. Runs as the
 * unit: runs_fill() gave each row in 2 runs a side its threshold test on the per-run log counts; they
 * form their own Benjamini-Hochberg family (kept apart from the time family: a count verdict never
 * sets the exit code, and p-values of 1 from paths called as often in every run would only dilute the
 * time tests), selected at q < alpha, with intervals at 1 - max(R, 1) alpha / M (Benjamini and
 * Yekutieli 2005). Inheritance from the parent: inherit(). Return: 0, or -1 on ENOMEM.
 */
static int counts_judged(struct ana_cmp *c)
{
	const double alpha = c->opts.alpha, noise = c->opts.noise;
	c->count_family = c->count_selected = 0;
	c->count_ci_level = 1.0 - alpha;
	double *q = NULL, *p = NULL;
	if (c->nrows) { /* runs as the unit: every row tested; one run a side: the sampled ones */
		p = malloc(c->nrows * sizeof(*p));
		q = malloc(c->nrows * sizeof(*q));
		if (!p || !q) {
			free(p);
			free(q);
			return -1;
		}
		for (size_t i = 0; i < c->nrows; i++)
			p[i] = c->rows[i].count_p_thr;
		if (ana_bh(p, c->nrows, q)) {
			free(p);
			free(q);
			return -1;
		}
		for (size_t i = 0; i < c->nrows; i++) {
			c->count_family += !isnan(p[i]);
			c->count_selected += q[i] < alpha;
		}
		if (c->count_family)
			c->count_ci_level = 1.0 - (double)(c->count_selected ? c->count_selected : 1) * alpha /
							(double)c->count_family;
	}
	const double tail = (1.0 - c->count_ci_level) / 2.0;
	for (size_t i = 0; i < c->nrows; i++) {
		struct ana_cmp_row *r = &c->rows[i];
		if (r->base_node == UINT32_MAX || r->new_node == UINT32_MAX) {
			r->count_verdict = r->base_node == UINT32_MAX ? ANA_V_ONLY_NEW : ANA_V_ONLY_BASE;
			continue;
		}
		if (c->runs_base < 2 && !r->sampled) {
			r->count_exact = true;
			r->count_verdict = r->count_change > noise	  ? ANA_V_REGRESSION
					   : r->count_change < -noise ? ANA_V_IMPROVEMENT
								      : ANA_V_NOT_SIGNIFICANT;
			continue;
		}
		if (isnan(r->count_p_thr)) {
			r->count_verdict = ANA_V_UNVERIFIED;
			continue;
		}
		r->count_q_thr = q[i];
		const double d = log1p(r->count_change);
		const double t = isinf(r->count_df) ? ana_norm_quantile_upper(tail) : ana_t_quantile_upper(tail, r->count_df);
		r->count_ci_lo = expm1(d - t * r->count_se_log);
		r->count_ci_hi = expm1(d + t * r->count_se_log);
		r->count_verdict = !(q[i] < alpha) ? ANA_V_NOT_SIGNIFICANT : d > 0 ? ANA_V_REGRESSION : ANA_V_IMPROVEMENT;
	}
	free(p);
	free(q);
	return 0;
}

int ana_compare(const struct ana_result *base, const struct ana_result *nw, const struct ana_cmp_opts *opts,
		struct ana_cmp *out)
{
	memset(out, 0, sizeof(*out));
	struct ana_cmp_opts o = opts ? *opts : (struct ana_cmp_opts){ .noise = -1 }; /* NULL: every default */
	if (o.alpha == 0)
		o.alpha = DEF_ALPHA;
	if (!(o.alpha > 0 && o.alpha < 1))
		return -EINVAL;
	bool samples = base->has_samples && nw->has_samples; /* the per-occurrence durations are there */
	for (size_t i = 0; i < o.nbase_runs; i++)
		samples &= o.base_runs[i]->has_samples;
	for (size_t i = 0; i < o.nnew_runs; i++)
		samples &= o.new_runs[i]->has_samples;
	if (!samples)
		return -EINVAL;
	if (!(o.noise >= 0))
		o.noise = DEF_NOISE;
	if (o.bootstrap == 0)
		o.bootstrap = DEF_BOOT;
	if (o.seed == 0)
		o.seed = DEF_SEED;
	out->opts = o;
	struct builder bd = { .base = base, .nw = nw, .c = out };
	uint64_t *vb = malloc(2 * ANA_RESERVOIR_CAP * sizeof(*vb));
	int rc = vb ? 0 : -1;
	const bool have_b = base->merged.count > 0, have_n = nw->merged.count > 0;
	if (rc == 0 && (have_b || have_n))
		rc = push_children(&bd, have_b ? 0 : UINT32_MAX, have_n ? 0 : UINT32_MAX);
	while (rc == 0 && bd.nst > 0) {
		struct pair pr = bd.st[--bd.nst];
		struct ana_cmp_row *r = add_row(&bd);
		if (!r) {
			rc = -1;
			break;
		}
		r->base_node = pr.b;
		r->new_node = pr.n;
		const struct ana_agg *ab = pr.b != UINT32_MAX ? &base->merged.n[pr.b].agg : NULL;
		const struct ana_agg *an = pr.n != UINT32_MAX ? &nw->merged.n[pr.n].agg : NULL;
		r->depth = ab ? base->merged.n[pr.b].depth : nw->merged.n[pr.n].depth;
		if (ab) {
			r->count_base = ab->count;
			r->first_base_ns = ab->first_ns;
		}
		if (an) {
			r->count_new = an->count;
			r->first_new_ns = an->first_ns;
		}
		if (ab && an)
			rc = fill_pair(r, ab, an, vb, vb + ANA_RESERVOIR_CAP, o.alpha, o.noise);
		r->verdict = !an ? ANA_V_ONLY_BASE : !ab ? ANA_V_ONLY_NEW : isnan(r->p) ? ANA_V_UNVERIFIED : ANA_V_NOT_SIGNIFICANT;
		if (rc == 0)
			rc = push_children(&bd, pr.b, pr.n);
	}
	free(bd.st);
	out->runs_base = out->runs_new = 1;
	if (rc == 0 && o.nbase_runs >= 2 && o.nnew_runs >= 2) {
		out->runs_base = o.nbase_runs;
		out->runs_new = o.nnew_runs;
		rc = runs_fill(out, vb);
	}
	/* the BH family: every tested row */
	double *p = NULL, *q = NULL;
	if (rc == 0 && out->nrows) {
		p = malloc(out->nrows * sizeof(*p));
		q = malloc(out->nrows * sizeof(*q));
		if (!p || !q)
			rc = -1;
	}
	if (rc == 0 && out->nrows) {
		for (size_t i = 0; i < out->nrows; i++) {
			p[i] = out->rows[i].p;
			out->tested += !isnan(p[i]);
		}
		rc = ana_bh(p, out->nrows, q);
	}
	uint64_t rng = o.seed;
	double logsum = 0;
	for (size_t i = 0; rc == 0 && i < out->nrows; i++) {
		struct ana_cmp_row *r = &out->rows[i];
		r->q = q[i];
		r->p_thr = r->q_thr = NAN;
		if (out->runs_base < 2) {
			r->se_log = NAN;
			r->df = INFINITY;
		}
		if (r->median_base > 0 && r->median_new > 0) {
			logsum += log(r->median_new / r->median_base);
			out->ngeo++;
		}
		if (isnan(r->p))
			continue;
		r->p_thr = 1.0; /* tested: in the threshold family; not significant: no evidence of any change */
		if (!(r->q < o.alpha))
			continue;
		/* significant: is the change beyond the threshold? (the standard error of its log) */
		r->verdict = ANA_V_WITHIN_NOISE;
		const struct ana_agg *ab = &base->merged.n[r->base_node].agg, *an = &nw->merged.n[r->new_node].agg;
		uint32_t nb = ana_samples_without_first(ab, vb), nn = ana_samples_without_first(an, vb + ANA_RESERVOIR_CAP);
		if (out->runs_base < 2 && median_jumped(r, o.noise) && ab->count > 2 && an->count > 2 &&
		    r->mean_base > 0 &&
		    r->mean_new > 0) {
			/* the median jumps between modes: the mean per call (the time spent) decides */
			const struct ana_moments mb = ana_moments_without(&ab->all, ab->first_ns);
			const struct ana_moments mn = ana_moments_without(&an->all, an->first_ns);
			const double sb = ana_moments_std(&mb, ab->count - 1), sn = ana_moments_std(&mn, an->count - 1);
			r->on_mean = true;
			r->se_log = sqrt(sb * sb / ((double)(ab->count - 1) * r->mean_base * r->mean_base) +
					 sn * sn / ((double)(an->count - 1) * r->mean_new * r->mean_new));
		} else if (out->runs_base < 2 && /* runs: the error is the runs' (runs_fill()) */
			   ana_boot_se_log(vb, nb, vb + ANA_RESERVOIR_CAP, nn, o.bootstrap, &rng, &r->se_log)) {
			rc = -1;
			break;
		}
		if (isnan(r->se_log) || !(r->median_base > 0 && r->median_new > 0)) {
			r->verdict = ANA_V_UNVERIFIED; /* a median of 0: no relative change */
			r->p_thr = NAN;
			continue;
		}
		r->p_thr = ana_thr_p_df(effect_log(r), r->se_log, r->df, o.noise);
	}
	if (rc == 0)
		rc = totals_tested(base, nw, out, vb);
	if (rc == 0)
		rc = threshold_family(out);
	if (rc == 0)
		rc = counts_judged(out);
	free(p);
	free(q);
	free(vb);
	if (rc) {
		ana_compare_free(out);
		return -ENOMEM;
	}
	/* --gate-threshold: paths with too few occurrences for any test, on the point estimate alone */
	for (size_t i = 0; o.gate_threshold > 0 && i < out->nrows; i++) {
		struct ana_cmp_row *r = &out->rows[i];
		if (r->verdict != ANA_V_UNVERIFIED || !isnan(r->p) || isnan(r->change))
			continue;
		if (r->change > o.gate_threshold)
			r->verdict = ANA_V_REGRESSION;
		else if (r->change < -o.gate_threshold)
			r->verdict = ANA_V_IMPROVEMENT;
		r->threshold_only = r->verdict != ANA_V_UNVERIFIED;
	}
	if (inherit(base, nw, out) || whole_run_shift(out)) {
		ana_compare_free(out);
		return -ENOMEM;
	}
	for (size_t i = 0; i < out->nrows; i++) {
		const struct ana_cmp_row *r = &out->rows[i];
		out->count[r->verdict]++;
		if (r->total_verdict == ANA_V_INHERITED)
			out->total_inherited++;
		else if (r->total_verdict == ANA_V_REGRESSION && r->verdict != ANA_V_REGRESSION)
			out->total_regressions++;
		else if (r->total_verdict == ANA_V_IMPROVEMENT && r->verdict != ANA_V_IMPROVEMENT)
			out->total_improvements++;
		out->count_more += r->count_verdict == ANA_V_REGRESSION;
		out->count_fewer += r->count_verdict == ANA_V_IMPROVEMENT;
		out->count_inherited += r->count_verdict == ANA_V_INHERITED;
	}
	out->geomean = out->ngeo ? exp(logsum / (double)out->ngeo) : NAN;
	return 0;
}

void ana_compare_free(struct ana_cmp *c)
{
	free(c->rows);
	memset(c, 0, sizeof(*c));
}

/* ---- outputs ---- */

/* Display order of the verdict groups. */
static const enum ana_verdict group_order[ANA_V_N] = { ANA_V_REGRESSION, ANA_V_IMPROVEMENT, ANA_V_INHERITED,
							ANA_V_WITHIN_NOISE, ANA_V_UNVERIFIED, ANA_V_NOT_SIGNIFICANT,
							ANA_V_ONLY_BASE, ANA_V_ONLY_NEW };

static const struct ana_cmp_row *sort_rows; /* qsort has no context argument */

static int cmp_by_change(const void *a, const void *b)
{
	const struct ana_cmp_row *x = &sort_rows[*(const size_t *)a], *y = &sort_rows[*(const size_t *)b];
	double cx = isnan(x->change) ? -1 : fabs(x->change), cy = isnan(y->change) ? -1 : fabs(y->change);
	if (cx != cy)
		return cx < cy ? 1 : -1;
	size_t i = *(const size_t *)a, j = *(const size_t *)b; /* stable: tree order */
	return (i > j) - (i < j);
}

/* The row's call path from the tree that has it, shortened past
 * ANA_PATH_SHORT_DEPTH levels; NULL on ENOMEM. */
static const char *row_path(const struct ana_result *base, const struct ana_result *nw, const struct ana_cmp_row *r,
			    char **buf, size_t *cap)
{
	const struct ana_result *res = r->base_node != UINT32_MAX ? base : nw;
	const uint32_t node = r->base_node != UINT32_MAX ? r->base_node : r->new_node;
	return ana_path_short(res, &res->merged, node, buf, cap);
}

static const char *pct(char *b, size_t n, double v)
{
	if (isnan(v))
		snprintf(b, n, "-");
	else
		snprintf(b, n, "%+.1f%%", 100.0 * v);
	return b;
}

static const char *plural_s(size_t n)
{
	return n == 1 ? "" : "s";
}

/* @ns with its sign ("+1.20 ms", "-300 ns"); "-" for NaN. */
static const char *signed_dur(char *b, size_t n, double ns)
{
	char d[24];
	if (isnan(ns))
		snprintf(b, n, "-");
	else
		snprintf(b, n, "%s%s", ns < 0 ? "-" : ns > 0 ? "+" : "", ana_fmt_dur(d, sizeof(d), fabs(ns)));
	return b;
}

/* The row's share of its run: inclusive time / sum of thread spans (§3); NaN if absent or empty. */
/* The interval of a tested total, "[lo, hi]", after "trimmed +Y% " when the change the test judged (one
 * run a side: the trimmed total) differs from the total's own change by more than 1%. */
static const char *total_ci(char *b, size_t n, const struct ana_cmp_row *r)
{
	char lo[16], hi[16], tc[16], tr[40] = "";
	if (fabs((1.0 + r->total_test_change) / (1.0 + r->total_change) - 1.0) > 0.01)
		snprintf(tr, sizeof(tr), "trimmed %s ", pct(tc, sizeof(tc), r->total_test_change));
	snprintf(b, n, "%s[%s, %s]", tr, pct(lo, sizeof(lo), r->total_ci_lo), pct(hi, sizeof(hi), r->total_ci_hi));
	return b;
}

/* What the call count's verdict says, after the counts on a row's line: ", more calls", ", fewer calls
 * [lo, hi]" (with runs as the unit), ", more calls, as its parent" (inherited); "" when it did not move. */
static void count_note(char *b, size_t n, const struct ana_cmp_row *r)
{
	const int d = verdict_dir(r->count_verdict, r->count_inherited_dir);
	char lo[16], hi[16], ci[40] = "";
	if (d && !r->count_exact && r->count_verdict != ANA_V_INHERITED)
		snprintf(ci, sizeof(ci), " [%s, %s]", pct(lo, sizeof(lo), r->count_ci_lo), pct(hi, sizeof(hi), r->count_ci_hi));
	snprintf(b, n, "%s%s%s", !d ? "" : d > 0 ? ", more calls" : ", fewer calls", ci,
		 r->count_verdict == ANA_V_INHERITED ? ", as its parent" : "");
}

void ana_compare_text(FILE *out, const struct ana_result *base, const struct ana_result *nw,
		      const struct ana_cmp *c, int top)
{
	const struct ana_cmp_opts *o = &c->opts;
	if (c->runs_base > 1)
		fprintf(out,
			"method: runs as the unit: %zu base and %zu new runs; per call path, Welch's t test of the\n"
			"        per-run log medians per call (first occurrence left out) and of the log totals per\n"
			"        run, so the variation between runs (run-to-run drift) is the noise; Benjamini-\n"
			"        Hochberg FDR at %g; a regression or improvement moved beyond the noise threshold\n"
			"        +-%.1f%%: one BH family of %zu per-call and total threshold tests, so with no path\n"
			"        beyond the threshold P(any verdict) <= %g; intervals at %.4g%%, false-coverage-rate\n"
			"        adjusted (Benjamini-Yekutieli) for %zu selected; \"n\" counts runs\n",
			c->runs_base, c->runs_new, o->alpha, 100.0 * o->noise, c->family, o->alpha, 100.0 * c->ci_level,
			c->selected);
	else
		fprintf(out,
			"method: two-sided Mann-Whitney U on each call path's per-occurrence inclusive durations\n"
			"        (first occurrence left out; up to %u samples a path), Benjamini-Hochberg FDR at %g;\n"
			"        a regression or improvement moved beyond the noise threshold +-%.1f%%: a Wald test of\n"
			"        the log ratio (bootstrap standard error, %u resamples), one BH family of %zu per-call\n"
			"        and total tests, so with no path beyond the threshold P(any verdict) <= %g; intervals\n"
			"        at %.4g%%, false-coverage-rate adjusted (Benjamini-Yekutieli) for %zu selected;\n"
			"        one run a side: the intervals hold the variation within each run, not between runs\n"
			"        (give several with --base and --new)\n",
			ANA_RESERVOIR_CAP, o->alpha, 100.0 * o->noise, o->bootstrap, c->family, o->alpha,
			100.0 * c->ci_level, c->selected);
	fprintf(out, "        verdicts judge the median per call and the total (count x duration) per run\n");
	if (c->runs_base > 1)
		fprintf(out, "        the call count: Welch's t on the per-run log counts, its own BH family of %zu, intervals\n"
			     "        at %.4g%%; a change of the work, not counted by --fail-on-regression\n",
			c->count_family, 100.0 * c->count_ci_level);
	else
		fprintf(out, "        the call count: taken as exact (one run a side), more or fewer calls beyond the noise\n"
			     "        threshold; a change of the work, not counted by --fail-on-regression\n");
	if (o->gate_threshold > 0)
		fprintf(out, "        paths with too few occurrences to test: judged on the median change alone against\n"
			     "        --gate-threshold +-%.1f%% (\"threshold only\": no test, no error rate)\n",
			100.0 * o->gate_threshold);
	size_t both = c->nrows - c->count[ANA_V_ONLY_BASE] - c->count[ANA_V_ONLY_NEW];
	fprintf(out, "paths:   %zu in both (%zu tested), %zu only in base, %zu only in new\n", both, c->tested,
		c->count[ANA_V_ONLY_BASE], c->count[ANA_V_ONLY_NEW]);
	fprintf(out, "verdict: %zu regression%s, %zu improvement%s, %zu within noise, %zu not significant, %zu unverified\n",
		c->count[ANA_V_REGRESSION], plural_s(c->count[ANA_V_REGRESSION]), c->count[ANA_V_IMPROVEMENT],
		plural_s(c->count[ANA_V_IMPROVEMENT]), c->count[ANA_V_WITHIN_NOISE], c->count[ANA_V_NOT_SIGNIFICANT],
		c->count[ANA_V_UNVERIFIED]);
	if (c->count[ANA_V_INHERITED])
		fprintf(out, "         %zu inherited: regressions or improvements whose children changed and whose own\n"
			     "         time per call (self) moved within the noise: not counted again\n",
			c->count[ANA_V_INHERITED]);
	if (c->total_regressions || c->total_improvements || c->total_inherited)
		fprintf(out, "totals:  %zu regression%s and %zu improvement%s of the total per run (the call count or\n"
			     "         new work) beyond the per-call verdicts, %zu inherited (from children, or from\n"
			     "         the parent's call count)\n",
			c->total_regressions, plural_s(c->total_regressions), c->total_improvements,
			plural_s(c->total_improvements), c->total_inherited);
	if (c->count_more || c->count_fewer || c->count_inherited)
		fprintf(out, "calls:   %zu path%s called more often and %zu less often beyond the threshold, %zu more\n"
			     "         inherited from their parents (the same calls per parent call)\n",
			c->count_more, plural_s(c->count_more), c->count_fewer, c->count_inherited);
	if (c->ngeo)
		fprintf(out, "geometric mean of median ratios (new / base): %.4f over %zu path%s\n", c->geomean, c->ngeo,
			plural_s(c->ngeo));
	if (c->shift_found) {
		char s1[16], s2[16], s3[16];
		fprintf(out,
			"whole-run shift: %zu of %zu tested paths moved together, median %s (middle half %s to %s):\n"
			"         machine- or build-wide; \"vs shift\" is each path's change relative to it\n",
			c->shift_moved, c->shift_paths, pct(s1, sizeof(s1), c->shift), pct(s2, sizeof(s2), c->shift_q1),
			pct(s3, sizeof(s3), c->shift_q3));
	}
	if (!c->nrows)
		return;
	size_t *idx = malloc(c->nrows * sizeof(*idx));
	char *pb = NULL;
	size_t pcap = 0;
	if (!idx) {
		fprintf(out, "(rows not printed: out of memory)\n");
		return;
	}
	char lvl[24];
	snprintf(lvl, sizeof(lvl), "%.4g%% CI", 100.0 * c->ci_level);
	fprintf(out, "\n%-15s %8s %10s  %-19s %8s  %11s  %-23s ", "verdict", "change", "per call", lvl, "q",
		"n base/new", "median base -> new");
	if (c->shift_found)
		fprintf(out, "%8s  ", "vs shift");
	fprintf(out, "path\n");
	for (int g = 0; g < ANA_V_N; g++) {
		enum ana_verdict v = group_order[g];
		size_t k = 0;
		for (size_t i = 0; i < c->nrows; i++)
			if (c->rows[i].verdict == v)
				idx[k++] = i;
		sort_rows = c->rows;
		qsort(idx, k, sizeof(*idx), cmp_by_change);
		size_t shown = top > 0 && (size_t)top < k ? (size_t)top : k;
		for (size_t j = 0; j < shown; j++) {
			const struct ana_cmp_row *r = &c->rows[idx[j]];
			char ch[16], lo[16], hi[16], ci[40] = "-", q[16] = "-", nn[32], mb[16], mn[16], med[40], pc[32];
			if (!isnan(r->ci_lo))
				snprintf(ci, sizeof(ci), "[%s, %s]", pct(lo, sizeof(lo), r->ci_lo), pct(hi, sizeof(hi), r->ci_hi));
			else if (r->threshold_only)
				snprintf(ci, sizeof(ci), "threshold only (n=%" PRIu64 ")",
					 r->count_base < r->count_new ? r->count_base : r->count_new);
			if (!isnan(r->q))
				snprintf(q, sizeof(q), "%.2g", r->q);
			snprintf(nn, sizeof(nn), "%u/%u%s", r->n_base, r->n_new, r->low_confidence ? "*" : "");
			snprintf(med, sizeof(med), "%s -> %s", ana_fmt_dur(mb, sizeof(mb), r->median_base),
				 ana_fmt_dur(mn, sizeof(mn), r->median_new));
			const char *path = row_path(base, nw, r, &pb, &pcap);
			fprintf(out, "%-15s %8s %10s  %-19s %8s  %11s  %-23s ", ana_verdict_name(v),
				pct(ch, sizeof(ch), r->on_mean ? r->change_mean : r->change),
				signed_dur(pc, sizeof(pc),
					   r->on_mean ? r->mean_new - r->mean_base : r->median_new - r->median_base),
				ci, q, nn, med);
			if (c->shift_found)
				fprintf(out, "%8s  ", pct(lo, sizeof(lo), r->change_vs_shift));
			fprintf(out, "%s", path ? path : "?");
			if (r->shape_changed) { /* no one ratio sums it up */
				char q1[16], q2[16], q3[16];
				fprintf(out, "  (shape changed: p25 %s, p50 %s, p75 %s%s)", pct(q1, sizeof(q1), r->q_change[1]),
					pct(q2, sizeof(q2), r->q_change[2]), pct(q3, sizeof(q3), r->q_change[3]),
					r->on_mean ? "; change and verdict of the mean" : "");
			}
			/* the total per run: its own verdict when it moved beyond the threshold (the call count),
			 * else the call count when it moved */
			const int td = verdict_dir(r->total_verdict, 0);
			const bool moved_count = verdict_dir(r->count_verdict, r->count_inherited_dir) != 0;
			char cn[48];
			count_note(cn, sizeof(cn), r);
			if (td && !r->total_share_only && (td != verdict_dir(r->verdict, 0) || moved_count)) {
				char tc[16], tci[72];
				fprintf(out, "  (total %s %s: %s of the total; calls %" PRIu64 " -> %" PRIu64 "%s)",
					pct(tc, sizeof(tc), r->total_change), total_ci(tci, sizeof(tci), r),
					ana_verdict_name(r->total_verdict), r->count_base, r->count_new, cn);
			} else if (r->total_verdict == ANA_V_INHERITED) {
				char tc[16];
				char calls[96] = "";
				if (moved_count)
					snprintf(calls, sizeof(calls), "; calls %" PRIu64 " -> %" PRIu64 "%s", r->count_base,
						 r->count_new, cn);
				fprintf(out, "  (total %s, inherited from its %s%s)", pct(tc, sizeof(tc), r->total_change),
					r->total_from_parent ? "parent's call count" : "children", calls);
			} else if (moved_count) {
				char tc[16];
				fprintf(out, "  (calls %" PRIu64 " -> %" PRIu64 "%s, total %s)", r->count_base, r->count_new, cn,
					pct(tc, sizeof(tc), r->total_change));
			}
			if (v == ANA_V_ONLY_BASE || v == ANA_V_ONLY_NEW) { /* what it weighs in the run that has it */
				const bool b = v == ANA_V_ONLY_BASE;
				const struct ana_result *res = b ? base : nw;
				const uint32_t node = b ? r->base_node : r->new_node;
				fprintf(out, "  (total %s, %.1f%% of the %s run%s)",
					ana_fmt_dur(mb, sizeof(mb), (double)res->merged.n[node].agg.total_ns),
					100.0 * run_share(res, node), b ? "base" : "new",
					!r->total_share_only ? "" : b ? ": gone, an improvement of the total"
								      : ": new work, a regression of the total");
			}
			fputc('\n', out);
		}
		if (shown < k)
			fprintf(out, "%-15s ... and %zu more (--top)\n", ana_verdict_name(v), k - shown);
	}
	if (c->total_regressions || c->total_improvements) { /* what the per-call rows do not say */
		fprintf(out, "\ntotals per run beyond the threshold (not already a per-call verdict):\n");
		for (size_t i = 0; i < c->nrows; i++) {
			const struct ana_cmp_row *r = &c->rows[i];
			const int d = verdict_dir(r->total_verdict, 0);
			if (!d || verdict_dir(r->verdict, 0) == d)
				continue;
			char tc[16], ci[72] = "share of its run", tb[16], tn[16];
			if (!r->total_share_only)
				total_ci(ci, sizeof(ci), r);
			const struct ana_agg *ab = r->base_node != UINT32_MAX ? &base->merged.n[r->base_node].agg : NULL;
			const struct ana_agg *an = r->new_node != UINT32_MAX ? &nw->merged.n[r->new_node].agg : NULL;
			const char *path = row_path(base, nw, r, &pb, &pcap);
			fprintf(out, "%-15s %8s  %-19s  calls %" PRIu64 " -> %" PRIu64 ", total %s -> %s  %s\n",
				ana_verdict_name(r->total_verdict), pct(tc, sizeof(tc), r->total_change), ci, r->count_base,
				r->count_new, ana_fmt_dur(tb, sizeof(tb), ab ? (double)ab->total_ns : 0),
				ana_fmt_dur(tn, sizeof(tn), an ? (double)an->total_ns : 0), path ? path : "?");
		}
	}
	if (c->count_more || c->count_fewer) { /* the work that changed, wherever its rows stand */
		fprintf(out, "\ncall counts beyond the threshold (not inherited from a parent; not counted by\n"
			     "--fail-on-regression):\n");
		for (size_t i = 0; i < c->nrows; i++) {
			const struct ana_cmp_row *r = &c->rows[i];
			const int d = verdict_dir(r->count_verdict, 0);
			if (!d)
				continue;
			char cc[16], cl[16], chh[16], ci[48] = "exact counts";
			if (!r->count_exact)
				snprintf(ci, sizeof(ci), "[%s, %s]", pct(cl, sizeof(cl), r->count_ci_lo),
					 pct(chh, sizeof(chh), r->count_ci_hi));
			const char *path = row_path(base, nw, r, &pb, &pcap);
			fprintf(out, "%-15s %8s  %-19s  calls %" PRIu64 " -> %" PRIu64 "  %s\n",
				d > 0 ? "more calls" : "fewer calls", pct(cc, sizeof(cc), r->count_change), ci,
				r->count_base, r->count_new, path ? path : "?");
		}
	}
	bool low = false;
	for (size_t i = 0; i < c->nrows; i++)
		low |= c->rows[i].low_confidence;
	if (low)
		fprintf(out, "\n* fewer than %u samples on a side: low confidence. Occurrences within one run are not\n"
			     "  independent, so p-values are optimistic: the noise threshold guards the verdicts.\n",
			ANA_CMP_LOW_N);
	ana_mem_compare_text(out, base, nw, c, top); /* memory change (ana_mem.c) */
	free(idx);
	free(pb);
}

/* A JSON number, or null for NaN (JSON has no NaN). */
static json_t *jnum(double v)
{
	return isnan(v) || isinf(v) ? json_null() : json_real(v);
}

/* What an inherited verdict @v came from (@dir: +1 a regression, -1 an improvement), or null. */
static json_t *jinherited(enum ana_verdict v, int dir)
{
	return v != ANA_V_INHERITED ? json_null()
				     : json_string(ana_verdict_key(dir > 0 ? ANA_V_REGRESSION : ANA_V_IMPROVEMENT));
}

/* The call count's verdict as a JSON value: "more_calls", "fewer_calls", "inherited",
 * "not_significant", "unverified", "only_base" or "only_new". */
static const char *count_key(enum ana_verdict v)
{
	return v == ANA_V_REGRESSION ? "more_calls" : v == ANA_V_IMPROVEMENT ? "fewer_calls" : ana_verdict_key(v);
}

/* The row's own name, UTF-8-repaired. */
static json_t *jname_of(const struct ana_result *res, uint32_t node, char **scratch)
{
	const char *n = ana_utf8_clean(ana_name(res, res->merged.n[node].id), scratch);
	return json_string(n ? n : "?");
}

int ana_compare_json(FILE *out, const struct ana_result *base, const struct ana_result *nw,
		     const struct ana_cmp *c)
{
	const struct ana_cmp_opts *o = &c->opts;
	json_t *root = json_object(), *counts = json_object(), *rows = json_array();
	int bad = !root || !counts || !rows;
	bad |= json_object_set_new(root, "schema", json_string("ptanalyze-compare/3"));
	json_t *m = json_pack("{s:s, s:s, s:s, s:f, s:f, s:I, s:I, s:I, s:I, s:o}", "test", "mann-whitney-u",
			      "effect", "median",
			      "correction", "benjamini-hochberg", "alpha", o->alpha, "noise", o->noise, "bootstrap",
			      (json_int_t)o->bootstrap, "seed", (json_int_t)(o->seed & INT64_MAX), "samples_max",
			      (json_int_t)ANA_RESERVOIR_CAP, "exact_small_n", (json_int_t)ANA_CMP_EXACT_SMALL,
			      "gate_threshold", o->gate_threshold > 0 ? json_real(o->gate_threshold) : json_null());
	bad |= !m || json_object_set_new(m, "threshold_test", json_string("wald-log-ratio-bootstrap-se")) ||
	       json_object_set_new(m, "interval", json_string("benjamini-yekutieli-fcr")) ||
	       json_object_set_new(m, "ci_level", json_real(c->ci_level)) ||
	       json_object_set_new(m, "family", json_integer((json_int_t)c->family)) ||
	       json_object_set_new(m, "selected", json_integer((json_int_t)c->selected)) ||
	       json_object_set_new(m, "unit", json_string(c->runs_base > 1 ? "run" : "occurrence")) ||
	       json_object_set_new(m, "runs_base", json_integer((json_int_t)c->runs_base)) ||
	       json_object_set_new(m, "runs_new", json_integer((json_int_t)c->runs_new)) ||
	       json_object_set_new(m, "total_test",
				   json_string(c->runs_base > 1 ? "welch-log-trimmed-total" : "yuen-trimmed-total-and-sum")) ||
	       json_object_set_new(m, "total_trim", json_real(ANA_CMP_TRIM)) ||
	       json_object_set_new(m, "count_test", json_string(c->runs_base > 1 ? "welch-log-count" : "exact")) ||
	       json_object_set_new(m, "count_family", json_integer((json_int_t)c->count_family)) ||
	       json_object_set_new(m, "count_selected", json_integer((json_int_t)c->count_selected)) ||
	       json_object_set_new(m, "count_ci_level", json_real(c->count_ci_level)) ||
	       json_object_set_new(root, "method", m);
	for (int v = 0; v < ANA_V_N; v++)
		bad |= json_object_set_new(counts, ana_verdict_key(v), json_integer((json_int_t)c->count[v]));
	bad |= json_object_set_new(counts, "total_regression", json_integer((json_int_t)c->total_regressions)) ||
	       json_object_set_new(counts, "total_improvement", json_integer((json_int_t)c->total_improvements)) ||
	       json_object_set_new(counts, "total_inherited", json_integer((json_int_t)c->total_inherited)) ||
	       json_object_set_new(counts, "more_calls", json_integer((json_int_t)c->count_more)) ||
	       json_object_set_new(counts, "fewer_calls", json_integer((json_int_t)c->count_fewer)) ||
	       json_object_set_new(counts, "count_inherited", json_integer((json_int_t)c->count_inherited));
	bad |= json_object_set_new(root, "counts", counts);
	bad |= json_object_set_new(root, "tested", json_integer((json_int_t)c->tested));
	bad |= json_object_set_new(root, "geomean", jnum(c->geomean));
	bad |= json_object_set_new(root, "geomean_paths", json_integer((json_int_t)c->ngeo));
	json_t *sh = json_pack("{s:b, s:o, s:o, s:o, s:I, s:I}", "found", c->shift_found, "change", jnum(c->shift),
			       "q1", jnum(c->shift_q1), "q3", jnum(c->shift_q3), "paths", (json_int_t)c->shift_paths,
			       "moved", (json_int_t)c->shift_moved);
	bad |= !sh || json_object_set_new(root, "shift", sh);
	/* row index of each node, for the parent links (rows are in tree order: a parent's row comes first) */
	int64_t *brow = malloc((base->merged.count ? base->merged.count : 1) * sizeof(*brow));
	int64_t *nrow = malloc((nw->merged.count ? nw->merged.count : 1) * sizeof(*nrow));
	char *scratch = NULL;
	bad |= !brow || !nrow;
	for (size_t i = 0; !bad && i < c->nrows; i++) {
		const struct ana_cmp_row *r = &c->rows[i];
		const bool in_b = r->base_node != UINT32_MAX;
		const struct ana_result *res = in_b ? base : nw;
		const uint32_t node = in_b ? r->base_node : r->new_node;
		if (in_b)
			brow[r->base_node] = (int64_t)i;
		if (r->new_node != UINT32_MAX)
			nrow[r->new_node] = (int64_t)i;
		const uint32_t par = res->merged.n[node].parent;
		const int64_t parent = par == 0 ? -1 : in_b ? brow[par] : nrow[par];
		json_t *j = json_pack("{s:o, s:I, s:I, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:o, s:o, s:o, s:o, "
				      "s:o, s:o, s:b, s:b}",
				      "name", jname_of(res, node, &scratch), "parent", (json_int_t)parent, "depth",
				      (json_int_t)r->depth, "verdict", ana_verdict_key(r->verdict), "count_base",
				      (json_int_t)r->count_base, "count_new", (json_int_t)r->count_new, "first_base_ns",
				      (json_int_t)r->first_base_ns, "first_new_ns", (json_int_t)r->first_new_ns, "n_base",
				      (json_int_t)r->n_base, "n_new", (json_int_t)r->n_new, "median_base_ns",
				      jnum(r->median_base), "median_new_ns", jnum(r->median_new), "change", jnum(r->change),
				      "ci_low", jnum(r->ci_lo), "ci_high", jnum(r->ci_hi), "u", jnum(r->u), "p", jnum(r->p),
				      "q", jnum(r->q), "exact", r->exact, "low_confidence", r->low_confidence);
		/* inclusive and self time of each side (0 where the path is absent): the differential
		 * flame graph's widths (ana_html.c, --folded-diff), the sums every report row has */
		const struct ana_agg *ab = in_b ? &base->merged.n[r->base_node].agg : NULL;
		const struct ana_agg *an = r->new_node != UINT32_MAX ? &nw->merged.n[r->new_node].agg : NULL;
		bad |= !j || json_object_set_new(j, "threshold_only", json_boolean(r->threshold_only)) ||
		       json_object_set_new(j, "inherited_from", jinherited(r->verdict, r->inherited_dir)) ||
		       json_object_set_new(j, "self_change", jnum(r->self_change)) ||
		       json_object_set_new(j, "mean_base_ns", jnum(r->mean_base)) ||
		       json_object_set_new(j, "mean_new_ns", jnum(r->mean_new)) ||
		       json_object_set_new(j, "change_mean", jnum(r->change_mean)) ||
		       json_object_set_new(j, "count_change", jnum(r->count_change)) ||
		       json_object_set_new(j, "q_change", json_pack("[o, o, o, o, o]", jnum(r->q_change[0]),
								   jnum(r->q_change[1]), jnum(r->q_change[2]),
								   jnum(r->q_change[3]), jnum(r->q_change[4]))) ||
		       json_object_set_new(j, "shape_changed", json_boolean(r->shape_changed)) ||
		       json_object_set_new(j, "total_change", jnum(r->total_change)) ||
		       json_object_set_new(j, "change_vs_shift", jnum(r->change_vs_shift)) ||
		       json_object_set_new(j, "share_base", jnum(run_share(base, r->base_node))) ||
		       json_object_set_new(j, "share_new", jnum(run_share(nw, r->new_node))) ||
		       json_object_set_new(j, "total_base_ns", ana_json_u64(ab ? ab->total_ns : 0)) ||
		       json_object_set_new(j, "total_new_ns", ana_json_u64(an ? an->total_ns : 0)) ||
		       json_object_set_new(j, "self_base_ns", ana_json_u64(ab ? ab->self_ns : 0)) ||
		       json_object_set_new(j, "self_new_ns", ana_json_u64(an ? an->self_ns : 0)) ||
		       json_object_set_new(j, "effect", json_string(r->on_mean ? "mean" : "median")) ||
		       json_object_set_new(j, "se_log", jnum(r->se_log)) ||
		       json_object_set_new(j, "df", jnum(r->df)) ||
		       json_object_set_new(j, "total_df", jnum(r->total_df)) ||
		       json_object_set_new(j, "p_threshold", jnum(r->p_thr)) ||
		       json_object_set_new(j, "q_threshold", jnum(r->q_thr)) ||
		       json_object_set_new(j, "total_verdict", json_string(ana_verdict_key(r->total_verdict))) ||
		       json_object_set_new(j, "total_inherited_from", jinherited(r->total_verdict, r->total_inherited_dir)) ||
		       json_object_set_new(j, "total_share_only", json_boolean(r->total_share_only)) ||
		       json_object_set_new(j, "total_inherited_via",
					   r->total_verdict != ANA_V_INHERITED ? json_null()
					   : json_string(r->total_from_parent ? "parent_count" : "children")) ||
		       json_object_set_new(j, "total_ci_low", jnum(r->total_ci_lo)) ||
		       json_object_set_new(j, "total_ci_high", jnum(r->total_ci_hi)) ||
		       json_object_set_new(j, "total_se_log", jnum(r->total_se_log)) ||
		       json_object_set_new(j, "total_test_change", jnum(r->total_test_change)) ||
		       json_object_set_new(j, "total_p_threshold", jnum(r->total_p_thr)) ||
		       json_object_set_new(j, "total_q_threshold", jnum(r->total_q_thr)) ||
		       json_object_set_new(j, "count_verdict", json_string(count_key(r->count_verdict))) ||
		       json_object_set_new(j, "count_inherited_from",
					   r->count_verdict != ANA_V_INHERITED
						   ? json_null()
						   : json_string(r->count_inherited_dir > 0 ? "more_calls" : "fewer_calls")) ||
		       json_object_set_new(j, "count_exact", json_boolean(r->count_exact)) ||
		       json_object_set_new(j, "sampled", json_boolean(r->sampled)) ||
		       json_object_set_new(j, "count_ci_low", jnum(r->count_ci_lo)) ||
		       json_object_set_new(j, "count_ci_high", jnum(r->count_ci_hi)) ||
		       json_object_set_new(j, "count_se_log", jnum(r->count_se_log)) ||
		       json_object_set_new(j, "count_df", jnum(r->count_df)) ||
		       json_object_set_new(j, "count_p_threshold", jnum(r->count_p_thr)) ||
		       json_object_set_new(j, "count_q_threshold", jnum(r->count_q_thr));
		bad |= !j || json_array_append_new(rows, j);
	}
	free(brow);
	free(nrow);
	free(scratch);
	bad |= json_object_set_new(root, "rows", rows);
	if (ana_mem_rss(base) != UINT32_MAX || ana_mem_rss(nw) != UINT32_MAX)
		bad |= json_object_set_new(root, "memory", ana_mem_compare_json(base, nw, c));
	bad = bad || ana_json_dumpf(root, out, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10)) ||
	      fputc('\n', out) == EOF || fflush(out);
	json_decref(root);
	return bad ? -1 : 0;
}
