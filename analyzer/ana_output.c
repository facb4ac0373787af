/*
 * analyzer/ana_output.c - derived figures and the report, CSV and JSON
 * outputs. Definitions: doc/analyzer-output.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyzer/ana.h"

uint64_t ana_gpu_busy_ns(const struct ana_result *res)
{
	uint64_t busy = 0;
	for (size_t i = 0; i < res->gpu.ndev; i++)
		ANA_SAT_ADD(busy, res->gpu.dev[i].busy_ns);
	return busy;
}

uint64_t ana_occupied_ns(const struct ana_result *res, const struct ana_agg *a)
{
	uint64_t gpu = a->gpu ? a->gpu->self.total_ns : 0;
	if (gpu) {
		const uint64_t busy = ana_gpu_busy_ns(res);
		gpu = gpu < busy ? gpu : busy;
	}
	return a->self_ns > gpu ? a->self_ns : gpu;
}

/* @num / @den ns as a rate in G per s; NAN (not available) where either is 0. */
static double gpu_rate(uint64_t num, uint64_t den)
{
	return num && den ? (double)num / (double)den : NAN;
}

/*
 * The GPU-time figures of a row (doc/analyzer-output.md §3.1): the one
 * place that says which GPU time each GPU rate and the breakdown use.
 * Self GPU time: the sum of the durations of the ranges the row's own
 * occurrences launched; inclusive GPU time: with those of its
 * descendants, a range inside an enclosing GPU range of the same stream
 * counted once, summed over streams (ana_gpu.c).
 */
static void ana_row_gpu(const struct ana_agg *a, struct ana_row *w)
{
	const struct ana_gpu *g = a->gpu;
	w->gpu_self_gbps = w->gpu_self_gflops = w->gpu_gbps = w->gpu_gflops = NAN;
	for (int d = 0; d < ANA_DIRS; d++)
		w->gpu_xfer_gbps[d] = NAN;
	w->bd_cpu_ns = a->total_ns;
	if (!g)
		return;
	const uint64_t self = g->self.total_ns, incl = g->incl_total_ns;
	w->gpu_self_gbps = gpu_rate(ana_gpu_timed_part(a, ana_sat_add(a->metric_self[ANA_READ],
								       a->metric_self[ANA_WRITTEN])), self);
	w->gpu_self_gflops = gpu_rate(ana_gpu_timed_part(a, a->metric_self[ANA_FLOPS]), self);
	w->gpu_gbps = gpu_rate(ana_sat_add(g->work[ANA_READ], g->work[ANA_WRITTEN]), incl);
	w->gpu_gflops = gpu_rate(g->work[ANA_FLOPS], incl);
	for (int d = 0; d < ANA_DIRS; d++)
		w->gpu_xfer_gbps[d] = gpu_rate(g->copy_dir_bytes[d], g->copy_dir_ns[d]);
	w->bd_gpu_ns = incl;
	/* a copy nested in a copy on the same stream counts in both copy
	 * sections' times but once in incl: the transfer part is capped by
	 * the GPU time it is a part of */
	w->bd_copy_ns = g->copy_ns < incl ? g->copy_ns : incl;
	w->bd_compute_ns = incl - w->bd_copy_ns;
	w->bd_launch_ns = g->launch_ns < a->total_ns ? g->launch_ns : a->total_ns;
}

/* The one-column rates (struct ana_row, show_*): over GPU time where GPU
 * sections declared the work, else over CPU time. */
static void row_show(struct ana_row *w)
{
	w->show_gbps_over_gpu = !isnan(w->gpu_gbps);
	w->show_gflops_over_gpu = !isnan(w->gpu_gflops);
	w->show_gbps = w->show_gbps_over_gpu ? w->gpu_gbps : w->gbps;
	w->show_gflops = w->show_gflops_over_gpu ? w->gpu_gflops : w->gflops;
}

void ana_row_compute(const struct ana_result *res, const struct ana_agg *a, struct ana_row *w)
{
	ana_row_stats(a, w);
	w->occupied_ns = ana_occupied_ns(res, a);
	if (!a->count)
		return;
	w->share = res->thread_span_sum_ns ? (double)a->total_ns / (double)res->thread_span_sum_ns : 0.0;
	if (a->est && !a->est->by_name) { /* a path inside sampled requests: its estimated share (§13) */
		struct ana_est_fig f;
		ana_est_figures(a, &f);
		w->share = res->thread_span_sum_ns ? f.total_ns / (double)res->thread_span_sum_ns : 0.0;
	}
}

void ana_row_stats(const struct ana_agg *a, struct ana_row *w)
{
	memset(w, 0, sizeof(*w));
	w->a = a;
	if (!a->count) {
		ana_row_gpu(a, w);
		row_show(w);
		return;
	}
	static const double q[] = { 0.50, 0.90, 0.99 };
	uint64_t p[3];
	ana_hist_quantiles(&a->hist, q, 3, a->count, a->min_ns, a->max_ns, p);
	w->p50 = p[0];
	w->p90 = p[1];
	w->p99 = p[2];
	w->mean = ana_moments_mean(&a->all, a->count);
	w->std = ana_moments_std(&a->all, a->count);
	struct ana_moments rest = ana_moments_without(&a->all, a->first_ns);
	w->rest_mean = ana_moments_mean(&rest, a->count - 1);
	w->rest_std = ana_moments_std(&rest, a->count - 1);
	w->first_over_rest = a->count > 1 && w->rest_mean > 0 ? (double)a->first_ns / w->rest_mean : 0.0;
	double t = (double)a->total_ns; /* rates use inclusive time: bytes/ns = GB/s */
	uint64_t bytes = a->metric_incl[ANA_READ] + a->metric_incl[ANA_WRITTEN];
	if (t > 0) {
		w->gbps = (double)bytes / t;
		w->gflops = (double)a->metric_incl[ANA_FLOPS] / t;
		for (int d = 0; d < ANA_DIRS; d++)
			w->xfer_gbps[d] = (double)ana_xfer_incl(a, d) / t;
	}
	w->intensity = bytes ? (double)a->metric_incl[ANA_FLOPS] / (double)bytes : 0.0;
	const struct ana_gpu *g = a->gpu;
	if (g) {
		const struct ana_gpu_dist *d = &g->self;
		w->gpu_p50 = ana_hist_quantile(&d->hist, 0.50, d->count, d->min_ns, d->max_ns);
		w->gpu_p99 = ana_hist_quantile(&d->hist, 0.99, d->count, d->min_ns, d->max_ns);
		w->gpu_mean = d->count ? (double)d->total_ns / (double)d->count : 0.0;
		w->gpu_lat_mean = d->lat.mean;
		w->gpu_over_cpu = t > 0 ? (double)g->incl_total_ns / t : 0.0;
	}
	ana_row_gpu(a, w);
	row_show(w);
}

/* ---------------------------------------------------------------- text */

/* Transfer directions (PT_H2D..PT_P2P, index dir - 1): the text's labels. */
static const char *const xfer_dir_name[ANA_DIRS] = { "H2D", "D2H", "D2D", "P2P" };
/* The CSV/JSON keys, h2d..p2p, spelled out: no formatting per row */
static const char *const xfer_bytes_key[ANA_DIRS] = { "h2d_bytes", "d2h_bytes", "d2d_bytes", "p2p_bytes" };
static const char *const xfer_count_key[ANA_DIRS] = { "h2d_count", "d2h_count", "d2d_count", "p2p_count" };
static const char *const xfer_gbps_key[ANA_DIRS] = { "h2d_gb_per_s", "d2h_gb_per_s", "d2d_gb_per_s",
						     "p2p_gb_per_s" };
static const char *const gpu_xfer_gbps_key[ANA_DIRS] = { "gpu_h2d_gb_per_s", "gpu_d2h_gb_per_s", "gpu_d2d_gb_per_s",
							 "gpu_p2p_gb_per_s" };

/* @v with @decimals and @unit, as snprintf(@buf, @n, "%.*f %s") writes it. */
static void fixed_unit(char *buf, size_t n, double v, int decimals, const char *unit)
{
	char b[40];
	const size_t k = ana_fmt_fixed(b, v, decimals);
	if (k + strlen(unit) + 2 > n || k >= sizeof(b) - 1) { /* not one of ours: printf */
		snprintf(buf, n, "%.*f %s", decimals, v, unit);
		return;
	}
	memcpy(buf, b, k);
	buf[k] = ' ';
	strcpy(buf + k + 1, unit);
}

static const char *dur(char *buf, size_t n, double ns)
{
	if (isnan(ns))
		snprintf(buf, n, "-"); /* not available (ana_moments_std) */
	else if (ns < 1e3)
		fixed_unit(buf, n, ns, 0, "ns");
	else if (ns < 1e6)
		fixed_unit(buf, n, ns / 1e3, 2, "us");
	else if (ns < 1e9)
		fixed_unit(buf, n, ns / 1e6, 2, "ms");
	else
		fixed_unit(buf, n, ns / 1e9, 3, "s");
	return buf;
}

const char *ana_fmt_dur(char *buf, size_t n, double ns)
{
	return dur(buf, n, ns);
}

/* dur() of a signed value ("-300 ns"). */
static const char *sdur(char *buf, size_t n, double ns)
{
	if (ns >= 0)
		return dur(buf, n, ns);
	buf[0] = '-';
	dur(buf + 1, n - 1, -ns);
	return buf;
}

static struct sort_ctx g_sort; /* qsort has no context argument in C11 */

struct sort_ctx {
	const struct ana_result *res;
	const struct ana_tree *tree; /* NULL: items are name ids */
	const struct ana_agg *flat;
	enum ana_sort sort;
};
static double sort_key(const struct ana_agg *a, enum ana_sort s)
{
	if (a->est && !a->est->by_name && s != ANA_SORT_FLOPS && s != ANA_SORT_NAME) {
		struct ana_est_fig f; /* a row inside sampled requests ranks by its estimates (§13) */
		ana_est_figures(a, &f);
		return s == ANA_SORT_TIME	? f.total_ns
		       : s == ANA_SORT_SELF	? f.self_ns
		       : s == ANA_SORT_COUNT ? f.count
					     : fmax(f.self_ns, (double)ana_occupied_ns(g_sort.res, a));
	}
	switch (s) {
	case ANA_SORT_SELF: return (double)a->self_ns;
	case ANA_SORT_FLOPS: return (double)a->metric_incl[ANA_FLOPS];
	case ANA_SORT_COUNT: return (double)a->count;
	case ANA_SORT_OCCUPIED: return (double)ana_occupied_ns(g_sort.res, a);
	default: return (double)a->total_ns;
	}
}

static const struct ana_agg *item_agg(uint32_t i)
{
	return g_sort.tree ? &g_sort.tree->n[i].agg : &g_sort.flat[i];
}
static uint32_t item_id(uint32_t i) { return g_sort.tree ? g_sort.tree->n[i].id : i; }

static int cmp_items(const void *pa, const void *pb)
{
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	if (g_sort.sort == ANA_SORT_NAME) {
		int c = strcmp(ana_name(g_sort.res, item_id(a)), ana_name(g_sort.res, item_id(b)));
		if (c)
			return c;
	} else {
		double ka = sort_key(item_agg(a), g_sort.sort), kb = sort_key(item_agg(b), g_sort.sort);
		if (ka != kb)
			return ka < kb ? 1 : -1;
	}
	return a < b ? -1 : a > b; /* stable, deterministic */
}

static void sorted(const struct ana_result *res, const struct ana_tree *tree, const struct ana_agg *flat,
		   enum ana_sort s, uint32_t *items, uint32_t n)
{
	g_sort = (struct sort_ctx){ res, tree, flat, s };
	qsort(items, n, sizeof(*items), cmp_items);
}

/*
 * Length of the unsafe sequence at @s[i] (@n bytes in all), 0 if none: a
 * C0 control or DEL; a C1 control, U+0080..U+009F, whether UTF-8 encoded
 * (C2 80..C2 9F) or a raw byte 0x80..0x9F outside a valid sequence (0x9B
 * is CSI to an 8-bit terminal); a bidirectional override or isolate,
 * U+202A..U+202E and U+2066..U+2069, which reorder what a terminal or
 * editor shows after them.
 */
static size_t unsafe_at(const unsigned char *s, size_t n, size_t i)
{
	const unsigned char c = s[i];
	if (c < 0x20 || c == 0x7f)
		return 1;
	if (c < 0x80)
		return 0;
	if (c == 0xc2 && i + 1 < n && s[i + 1] >= 0x80 && s[i + 1] <= 0x9f)
		return 2;
	if (c == 0xe2 && i + 2 < n &&
	    ((s[i + 1] == 0x80 && s[i + 2] >= 0xaa && s[i + 2] <= 0xae) ||
	     (s[i + 1] == 0x81 && s[i + 2] >= 0xa6 && s[i + 2] <= 0xa9)))
		return 3;
	if (c <= 0x9f) { /* a raw C1 byte unless it continues a valid sequence */
		size_t k = i;
		while (k > 0 && i - k < 3 && (s[k - 1] & 0xc0) == 0x80)
			k--;
		const unsigned char lead = k > 0 ? s[k - 1] : 0;
		const size_t want = lead >= 0xf0 && lead <= 0xf4 ? 4 : lead >= 0xe0 && lead <= 0xef ? 3
				   : lead >= 0xc2 && lead <= 0xdf ? 2 : 0;
		if (!want || i - (k - 1) >= want)
			return 1;
	}
	return 0;
}

/*
 * @s for text output: control bytes (below 0x20, and DEL), C1 controls and
 * bidirectional overrides (unsafe_at()) shown as '?', as the reader shows
 * the header's strings, so that a name holding a line break, a terminal
 * escape or a bidi override cannot break a table, drive the terminal or
 * reorder what follows. The copy lives in a buffer reused by the next
 * call: one per printf.
 */
const char *ana_text_safe(const char *s)
{
	static char *buf;
	static size_t cap;
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s), i = 0;
	while (i < n && !unsafe_at(u, n, i))
		i++;
	if (i == n)
		return s;
	if (n + 1 > cap) {
		char *b = realloc(buf, n + 1);
		if (!b)
			return "?";
		buf = b;
		cap = n + 1;
	}
	ana_text_safe_to(buf, n + 1, s);
	return buf;
}

char *ana_text_safe_to(char *dst, size_t cap, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s), o = 0;
	for (size_t i = 0; i < n && o + 1 < cap;) {
		const size_t k = unsafe_at(u, n, i);
		dst[o++] = k ? '?' : s[i];
		i += k ? k : 1;
	}
	if (cap)
		dst[o] = 0;
	return dst;
}

/* Levels 1..TEXT_MAX_INDENT are indented with spaces (2 a level); deeper
 * rows are indented 2 x TEXT_MAX_INDENT and show their level as "[N] "
 * before the name, so a name never disappears into its indent and a row
 * costs O(1), not O(depth). */
#define TEXT_MAX_INDENT 16

/* The name column of a text row at tree level @indent (0 = root). Return:
 * the spaces to print before a detail line under it. */
static int indent_label(char *name, size_t n, int indent, const char *lossy, const char *label)
{
	if (indent < TEXT_MAX_INDENT) {
		snprintf(name, n, "%*s%s%s", indent * 2, "", lossy, label);
		return indent * 2;
	}
	snprintf(name, n, "%*s[%d] %s%s", TEXT_MAX_INDENT * 2, "", indent + 1, lossy, label);
	return TEXT_MAX_INDENT * 2;
}

/* A rate or ratio for a table column @width characters wide, @mark ("*"
 * or "") after it: the most decimals, at most two, with which it fits, so
 * an H200's 51479.50 GFLOP/s over GPU time reads 51479.5* in an 8-wide
 * column instead of pushing the row's end out of line; past the width in
 * whole numbers, two significant digits in %g's exponent form (CSV and
 * JSON keep every digit). */
static const char *rate_cell(char *b, size_t n, double v, int width, const char *mark)
{
	const size_t lm = strlen(mark);
	const int room = width - (int)lm;
	for (int dec = 2; dec >= 0; dec--) {
		char f[40];
		const size_t k = ana_fmt_fixed(f, v, dec); /* snprintf("%.*f")'s bytes */
		if (k + lm <= (size_t)width && k + lm < n) {
			memcpy(b, f, k);
			memcpy(b + k, mark, lm + 1);
			return b;
		}
	}
	snprintf(b, n, "%.*g%s", room >= 7 ? 2 : 1, v, mark);
	return b;
}

/* A text row's line under construction: printf's "%*s" and "%-*s" without
 * parsing a format per row (a call-tree row had 15 fields). */
struct text_line {
	char b[1024];
	size_t k;
};

/* @s in a field @width wide, right-aligned (@left: left-aligned), then
 * one space; longer values are not cut, as printf does not cut them. */
static void line_field(struct text_line *l, const char *s, int width, bool left)
{
	const size_t n = strlen(s), pad = (size_t)width > n ? (size_t)width - n : 0;
	if (l->k + n + pad + 2 > sizeof(l->b))
		return; /* cannot happen: names are at most 255 bytes, fields 32 */
	if (!left) {
		memset(l->b + l->k, ' ', pad);
		l->k += pad;
	}
	memcpy(l->b + l->k, s, n);
	l->k += n;
	if (left) {
		memset(l->b + l->k, ' ', pad);
		l->k += pad;
	}
	l->b[l->k++] = ' ';
}

#define HDR_FMT "%-40s %8s %10s %10s %6s %10s %10s %10s %10s %10s %10s %8s %8s %8s %6s\n"

static void text_row(FILE *out, const struct ana_result *res, const char *label, int indent, const struct ana_agg *a)
{
	struct ana_row w;
	ana_row_compute(res, a, &w);
	char name[256], b[10][32];
	int pad = indent_label(name, sizeof(name), indent, a->lossy ? "!" : "", label);
	char first_rest[16] = "-", gb[16] = "-", gf[16] = "-", ai[16] = "-";
	if (w.first_over_rest > 0)
		rate_cell(first_rest, sizeof(first_rest), w.first_over_rest, 8, "x");
	/* '*': over the row's GPU time (ana_row.show_*), legend under the header */
	if (w.show_gbps > 0)
		rate_cell(gb, sizeof(gb), w.show_gbps, 8, w.show_gbps_over_gpu ? "*" : "");
	if (w.show_gflops > 0)
		rate_cell(gf, sizeof(gf), w.show_gflops, 8, w.show_gflops_over_gpu ? "*" : "");
	if (w.intensity > 0)
		rate_cell(ai, sizeof(ai), w.intensity, 6, "");
	/* a path inside sampled requests: count, total, self and share are estimates, marked '~' (§13) */
	const bool est = a->est && !a->est->by_name;
	struct ana_est_fig f = { 0 };
	char cnt[32], tot[32], slf[32], share[48];
	size_t k;
	if (est) {
		ana_est_figures(a, &f);
		snprintf(cnt, sizeof(cnt), "~%.0f", f.count);
		snprintf(tot, sizeof(tot), "~%s", dur(b[0], 32, f.total_ns));
		snprintf(slf, sizeof(slf), "~%s", dur(b[1], 32, f.self_ns));
		fprintf(out, "%-40s %8s %10s %10s %5.1f%% %10s %10s %10s %10s %10s %10s %8s %8s %8s %6s\n", name, cnt, tot,
			slf, 100.0 * w.share, dur(b[2], 32, w.mean), dur(b[3], 32, w.std), dur(b[4], 32, (double)w.p50),
			dur(b[5], 32, (double)w.p90), dur(b[6], 32, (double)w.p99), dur(b[7], 32, (double)a->first_ns),
			first_rest, gb, gf, ai);
	} else if ((k = ana_fmt_fixed(share, 100.0 * w.share, 1)) >= 39) { /* too long for ana_fmt_fixed() */
		fprintf(out, "%-40s %8" PRIu64 " %10s %10s %5.1f%% %10s %10s %10s %10s %10s %10s %8s %8s %8s %6s\n", name,
			a->count, dur(b[0], 32, (double)a->total_ns), dur(b[1], 32, (double)a->self_ns), 100.0 * w.share,
			dur(b[2], 32, w.mean), dur(b[3], 32, w.std), dur(b[4], 32, (double)w.p50),
			dur(b[5], 32, (double)w.p90), dur(b[6], 32, (double)w.p99), dur(b[7], 32, (double)a->first_ns),
			first_rest, gb, gf, ai);
	} else { /* that format, field by field */
		struct text_line l = { .k = 0 };
		share[k] = '%';
		share[k + 1] = 0;
		snprintf(cnt, sizeof(cnt), "%" PRIu64, a->count);
		line_field(&l, name, 40, true);
		line_field(&l, cnt, 8, false);
		line_field(&l, dur(b[0], 32, (double)a->total_ns), 10, false);
		line_field(&l, dur(b[1], 32, (double)a->self_ns), 10, false);
		line_field(&l, share, 6, false); /* %5.1f%% */
		line_field(&l, dur(b[2], 32, w.mean), 10, false);
		line_field(&l, dur(b[3], 32, w.std), 10, false);
		line_field(&l, dur(b[4], 32, (double)w.p50), 10, false);
		line_field(&l, dur(b[5], 32, (double)w.p90), 10, false);
		line_field(&l, dur(b[6], 32, (double)w.p99), 10, false);
		line_field(&l, dur(b[7], 32, (double)a->first_ns), 10, false);
		line_field(&l, first_rest, 8, false);
		line_field(&l, gb, 8, false);
		line_field(&l, gf, 8, false);
		line_field(&l, ai, 6, false);
		l.b[l.k - 1] = '\n'; /* the last field's space */
		fwrite(l.b, 1, l.k, out);
	}
	if (est && f.interval)
		fprintf(out,
			"%*s  estimate, 95%% interval: count [%.0f, %.0f], total [%s, %s]; from %" PRIu64
			" sampled requests; per-call figures from the %" PRIu64 " recorded calls\n",
			pad, "", f.count_lo, f.count_hi, dur(b[0], 32, f.total_lo_ns), dur(b[1], 32, f.total_hi_ns),
			a->est->units, a->count);
	else if (est)
		fprintf(out,
			"%*s  estimate, no interval (sampled requests nested in sampled requests); from %" PRIu64
			" sampled requests; per-call figures from the %" PRIu64 " recorded calls\n",
			pad, "", a->est->units, a->count);
	else if (a->est)
		fprintf(out, "%*s  recorded figures: %" PRIu64 " of these calls lie in sampled requests, not extrapolated"
			     " with --since/--until/--domain (the call tree has the estimates)\n",
			pad, "", a->est->rec_count);
	for (int d = 0; d < ANA_DIRS; d++) {
		if (!ana_xfer_incl(a, d))
			continue;
		fprintf(out, "%*s  transfers %s: %" PRIu64 " bytes (%" PRIu64 " self), %.2f GB/s over the section", pad,
			"", xfer_dir_name[d], ana_xfer_incl(a, d), ana_xfer_self(a, d), w.xfer_gbps[d]);
		if (!isnan(w.gpu_xfer_gbps[d])) /* the copies' own rate: their bytes over their GPU time */
			fprintf(out, ", %.2f GB/s over GPU copy time", w.gpu_xfer_gbps[d]);
		fputc('\n', out);
	}
}

/* Prints one row of a report table: @label indented by @indent levels. */
typedef void (*row_fn)(FILE *out, const struct ana_result *res, const char *label, int indent,
		       const struct ana_agg *a);

/* One level of tree_print()'s walk: @node's children in --sort order. */
struct print_level {
	uint32_t *kids, n, i, shown;
	int indent;
};

/* Pushes @node's children, sorted, as the walk's next level; false without memory. */
static bool level_push(struct print_level **st, size_t *depth, size_t *cap, const struct ana_result *res,
		       const struct ana_tree *t, uint32_t node, enum ana_sort sort, int indent)
{
	const struct ana_node *n = &t->n[node];
	if (*depth == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		struct print_level *g = realloc(*st, nc * sizeof(*g));
		if (!g)
			return false;
		*st = g;
		*cap = nc;
	}
	uint32_t *kids = malloc((n->nchild ? n->nchild : 1) * sizeof(*kids));
	if (!kids)
		return false;
	if (n->nchild)
		memcpy(kids, n->child, n->nchild * sizeof(*kids));
	sorted(res, t, NULL, sort, kids, n->nchild);
	(*st)[(*depth)++] = (struct print_level){ kids, n->nchild, 0, 0, indent };
	return true;
}

/* The call tree's walk below @node: children in --sort order, hiding the
 * sections under --min-pct, at most --top of them per level, down to
 * --depth, each section printed by @row with its subtree one level deeper
 * (nodes without a section of their own only pass their subtree through).
 * @keep (NULL = every section) drops a section that still used up --top,
 * with its subtree, when it returns false. An explicit stack, not
 * recursion: a trace's nesting depth has no limit (a section never ended
 * in a loop nests every later one below it). */
static void tree_print(FILE *out, const struct ana_result *res, const struct ana_tree *t, uint32_t node,
		       const struct ana_report_opts *o, int indent, row_fn row, bool (*keep)(const struct ana_agg *))
{
	struct print_level *st = NULL;
	size_t depth = 0, cap = 0;
	bool ok = level_push(&st, &depth, &cap, res, t, node, o->sort, indent);
	while (ok && depth) {
		struct print_level *l = &st[depth - 1];
		if (l->i == l->n) {
			free(l->kids);
			depth--;
			continue;
		}
		uint32_t ci = l->kids[l->i++];
		const struct ana_node *c = &t->n[ci];
		if (!c->agg.count && !c->nchild)
			continue;
		struct ana_row w;
		ana_row_compute(res, &c->agg, &w);
		if (c->agg.count && 100.0 * w.share < o->min_pct)
			continue;
		if (o->top && l->shown++ >= (uint32_t)o->top) {
			l->i = l->n;
			continue;
		}
		if (c->agg.count && keep && !keep(&c->agg))
			continue;
		if (c->agg.count)
			row(out, res, ana_text_safe(ana_name(res, c->id)), l->indent, &c->agg);
		if (!o->depth || (int)c->depth < o->depth)
			ok = level_push(&st, &depth, &cap, res, t, ci, o->sort, c->agg.count ? l->indent + 1 : l->indent);
	}
	while (depth)
		free(st[--depth].kids);
	free(st);
}

static const struct ana_tree *view_tree(const struct ana_result *res, int thread, const struct ana_agg **flat,
					uint32_t *nflat)
{
	if (thread >= 0)
		for (size_t i = 0; i < res->nthreads; i++)
			if (res->threads[i].index == (uint32_t)thread) {
				*flat = res->by_name_thread[i];
				*nflat = res->threads[i].nflat;
				return &res->threads[i].tree;
			}
	*flat = res->by_name;
	*nflat = res->nnames;
	return &res->merged;
}

/* ---------------------------------------------------------------- text: GPU, async, instants */

static const char *plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

/* The GPU summary lines of the report header and of 'info' (only for a
 * trace with GPU records): the first line starts with @first, the others
 * with @next. */
static void gpu_summary_text(FILE *out, const struct ana_result *res, const char *first, const char *next)
{
	const struct ana_gpu_summary *g = &res->gpu;
	if (!res->has_gpu)
		return;
	fprintf(out, "%s%" PRIu64 " %s, %" PRIu64 " %s on %zu %s; %" PRIu64 " paired; unmatched: %" PRIu64 " %s, %" PRIu64 " %s\n",
		first, g->launches, plural(g->launches, "launch", "launches"), g->ranges,
		plural(g->ranges, "range", "ranges"), g->ndev, plural(g->ndev, "device", "devices"), g->paired,
		g->unmatched_launches, plural(g->unmatched_launches, "launch", "launches"), g->unmatched_ranges,
		plural(g->unmatched_ranges, "range", "ranges"));
	const char *sep = "";
	for (int k = 0; k < ANA_GPU_ERRC_N; k++) {
		uint32_t code = (uint32_t)k + ANA_GPU_ERRC_FIRST;
		if (code == PT_ERRC_GPU_EARLY_START || !g->errors[k])
			continue;
		if (!*sep)
			fprintf(out, "%sGPU halves not timed (CPU sections kept): ", next);
		fprintf(out, "%s%" PRIu64 " %s", sep, g->errors[k], ana_gpu_errc_name(code));
		sep = ", ";
	}
	if (*sep)
		fputc('\n', out);
	if (g->errors[PT_ERRC_GPU_EARLY_START - ANA_GPU_ERRC_FIRST])
		fprintf(out, "%sGPU ranges that started before their launch (kept), counted by the recorder: %" PRIu64 "\n",
			next, g->errors[PT_ERRC_GPU_EARLY_START - ANA_GPU_ERRC_FIRST]);
	if (g->off_reason)
		fprintf(out, "%s%s\n", next, ana_text_safe(ana_name(res, g->off_reason)));
}

#define GPU_HDR_FMT "%-30s %7s %9s %9s %9s %9s %9s %8s %8s %8s\n"

static void gpu_row(FILE *out, const struct ana_result *res, const char *label, int indent, const struct ana_agg *a)
{
	const struct ana_gpu *g = a->gpu;
	struct ana_row w;
	char name[256], b[8][32], ratio[16] = "-";
	ana_row_compute(res, a, &w);
	int pad = indent_label(name, sizeof(name), indent, "", label);
	if (w.gpu_over_cpu > 0)
		rate_cell(ratio, sizeof(ratio), w.gpu_over_cpu, 8, "");
	const struct ana_gpu_dist *d = &g->self;
	if (d->count) {
		dur(b[0], 32, (double)d->total_ns);
		dur(b[1], 32, w.gpu_mean);
		dur(b[2], 32, (double)w.gpu_p50);
		dur(b[3], 32, (double)w.gpu_p99);
	} else {
		for (int k = 0; k < 4; k++)
			snprintf(b[k], 32, "-");
	}
	char gb[16] = "-", gf[16] = "-";
	if (!isnan(w.gpu_gbps))
		rate_cell(gb, sizeof(gb), w.gpu_gbps, 8, "");
	if (!isnan(w.gpu_gflops))
		rate_cell(gf, sizeof(gf), w.gpu_gflops, 8, "");
	fprintf(out, "%-30s %7" PRIu64 " %9s %9s %9s %9s %9s %8s %8s %8s\n", name, d->count, b[0], b[1], b[2], b[3],
		dur(b[4], 32, (double)g->incl_total_ns), ratio, gb, gf);
	if (w.bd_gpu_ns)
		fprintf(out, "%*s  time: CPU %s (launch %s), GPU %s (transfer %s, compute %s)\n", pad, "",
			dur(b[0], 32, (double)w.bd_cpu_ns), dur(b[1], 32, (double)w.bd_launch_ns),
			dur(b[2], 32, (double)w.bd_gpu_ns), dur(b[3], 32, (double)w.bd_copy_ns),
			dur(b[4], 32, (double)w.bd_compute_ns));
	if (d->count)
		fprintf(out, "%*s  launch to GPU start: mean %s, min %s, max %s; %" PRIu64 " early start%s\n", pad, "",
			sdur(b[5], 32, w.gpu_lat_mean), sdur(b[6], 32, (double)d->lat_min_ns),
			sdur(b[7], 32, (double)d->lat_max_ns), d->early, d->early == 1 ? "" : "s");
}

/* tree_print()'s @keep for the GPU table: the section launched GPU ranges
 * or holds some below it. */
static bool has_gpu_rows(const struct ana_agg *a)
{
	return a->gpu && (a->gpu->self.count || a->gpu->incl_count);
}

/* Rows of the flat view in the report's order, after --min-pct and --top. */
static uint32_t flat_rows(const struct ana_result *res, const struct ana_agg *flat, uint32_t nflat,
			  const struct ana_report_opts *o, uint32_t **out)
{
	uint32_t *ids = malloc((nflat ? nflat : 1) * sizeof(*ids)), n = 0, shown = 0;
	*out = ids;
	if (!ids)
		return 0;
	for (uint32_t id = 0; id < nflat; id++)
		if (flat[id].count)
			ids[n++] = id;
	sorted(res, NULL, flat, o->sort, ids, n);
	for (uint32_t i = 0; i < n && (!o->top || shown < (uint32_t)o->top); i++) {
		struct ana_row w;
		ana_row_compute(res, &flat[ids[i]], &w);
		if (100.0 * w.share < o->min_pct)
			continue; /* hidden rows do not use up --top */
		ids[shown++] = ids[i];
	}
	return shown;
}

static void gpu_sections_text(FILE *out, const struct ana_result *res, const struct ana_report_opts *o,
			      const struct ana_tree *t, const struct ana_agg *flat, uint32_t nflat, const char *scope)
{
	bool any = false;
	if (o->flat) {
		for (uint32_t id = 0; id < nflat && !any; id++)
			any = flat[id].count && has_gpu_rows(&flat[id]);
	} else {
		for (uint32_t i = 1; i < t->count && !any; i++)
			any = t->n[i].agg.count && has_gpu_rows(&t->n[i].agg);
	}
	if (!any)
		return;
	fprintf(out,
		"\nGPU time by section (%s): ranges launched by the section itself; incl = with its\n"
		"descendants, a range inside an enclosing GPU range of the same stream counted once;\n"
		"GPU/CPU = incl / total CPU time; GB/s and GFLOP/s = the GPU sections' declared work / GPU incl\n",
		scope);
	fprintf(out, GPU_HDR_FMT, "name", "ranges", "GPU total", "GPU mean", "GPU p50", "GPU p99", "GPU incl",
		"GPU/CPU", "GB/s", "GFLOP/s");
	if (!o->flat) {
		tree_print(out, res, t, 0, o, 0, gpu_row, has_gpu_rows);
		return;
	}
	uint32_t *ids, n = flat_rows(res, flat, nflat, o, &ids);
	for (uint32_t i = 0; i < n; i++)
		if (has_gpu_rows(&flat[ids[i]]))
			gpu_row(out, res, ana_text_safe(ana_name(res, ids[i])), 0, &flat[ids[i]]);
	free(ids);
}

static void gpu_devices_text(FILE *out, const struct ana_result *res)
{
	const struct ana_gpu_summary *g = &res->gpu;
	if (!g->ndev)
		return;
	uint64_t wall = res->end_ns - res->start_ns;
	char b[5][32];
	fprintf(out,
		"\nGPU devices: instrumented GPU busy = union of the recorded GPU ranges / wall span (%s);\n"
		"it covers only the GPU sections recorded: it is not device utilization\n",
		dur(b[0], 32, (double)wall));
	fprintf(out, "%6s %7s %10s %10s %21s %7s %5s %11s %11s\n", "device", "ranges", "GPU sum", "busy",
		"instrumented GPU busy", "streams", "early", "latency p50", "latency p99");
	for (size_t i = 0; i < g->ndev; i++) {
		const struct ana_gpu_device *d = &g->dev[i];
		char pct[16];
		snprintf(pct, sizeof(pct), "%.1f%%", wall ? 100.0 * (double)d->busy_ns / (double)wall : 0.0);
		fprintf(out, "%6u %7" PRIu64 " %10s %10s %21s %7" PRIu64 " %5" PRIu64 " %11s %11s\n", d->device,
			d->ranges, dur(b[1], 32, (double)d->sum_ns), dur(b[2], 32, (double)d->busy_ns), pct, d->streams,
			d->lat.neg, sdur(b[3], 32, (double)ana_slat_quantile(&d->lat, 0.50)),
			sdur(b[4], 32, (double)ana_slat_quantile(&d->lat, 0.99)));
	}
}

/* The counters in bytes (ana_counter_is_bytes()): the recorder's process
 * RSS and device memory, and the program's " (bytes)" counters. */
static void gpu_memory_text(FILE *out, const struct ana_result *res)
{
	int header = 0;
	for (size_t i = 0; i < res->nthreads; i++)
		for (size_t k = 0; k < res->threads[i].ncounters; k++) {
			const struct ana_counter *c = &res->threads[i].counters[k];
			if (!ana_counter_is_bytes(res, &res->threads[i], c->id))
				continue;
			if (!header++)
				fprintf(out, "\nMemory counters, in bytes\n  %-41s %6s %7s %13s %13s %13s\n",
					"name", "thread", "samples", "last", "min", "max");
			fprintf(out, "  %-41s %6u %7" PRIu64 " %13" PRId64 " %13" PRId64 " %13" PRId64 "\n",
				ana_text_safe(ana_name(res, c->id)), res->threads[i].index, c->samples, c->last, c->min, c->max);
		}
}

static void async_text(FILE *out, const struct ana_result *res)
{
	if (!res->has_async)
		return;
	char b[5][32];
	fprintf(out, "\nAsync ranges by name (begin and end paired by async id, on any threads); unmatched: %" PRIu64
		     " begin%s, %" PRIu64 " end%s\n",
		res->async_unmatched_begins, res->async_unmatched_begins == 1 ? "" : "s", res->async_unmatched_ends,
		res->async_unmatched_ends == 1 ? "" : "s");
	fprintf(out, "%-34s %8s %10s %10s %10s %10s %10s\n", "name", "count", "total", "mean", "p50", "p99", "max");
	for (uint32_t id = 0; id < res->nasync; id++) {
		const struct ana_async *a = &res->async_by_name[id];
		if (!a->count)
			continue;
		fprintf(out, "%-34s %8" PRIu64 " %10s %10s %10s %10s %10s\n", id ? ana_text_safe(ana_name(res, id)) : "(unnamed)",
			a->count, dur(b[0], 32, (double)a->total_ns), dur(b[1], 32, (double)a->total_ns / (double)a->count),
			dur(b[2], 32, (double)ana_hist_quantile(&a->hist, 0.50, a->count, a->min_ns, a->max_ns)),
			dur(b[3], 32, (double)ana_hist_quantile(&a->hist, 0.99, a->count, a->min_ns, a->max_ns)),
			dur(b[4], 32, (double)a->max_ns));
	}
}

static void instants_text(FILE *out, const struct ana_result *res, int thread, const char *scope)
{
	const uint64_t *n = res->instants_by_name;
	uint32_t nn = res->ninstants;
	if (thread >= 0) {
		n = NULL;
		nn = 0;
		for (size_t i = 0; i < res->nthreads; i++)
			if (res->threads[i].index == (uint32_t)thread) {
				n = res->threads[i].instants;
				nn = res->threads[i].ninstants;
			}
	}
	int header = 0;
	for (uint32_t id = 0; id < nn; id++) {
		if (!n[id])
			continue;
		if (!header++)
			fprintf(out, "\nInstants by name (%s)\n  %-40s %10s\n", scope, "name", "count");
		fprintf(out, "  %-40s %10" PRIu64 "\n", id ? ana_text_safe(ana_name(res, id)) : "(unnamed)", n[id]);
	}
}

/* What a window trace (flight file, snapshot) holds, one line. */
static void window_text(FILE *out, const struct ana_result *res, const char *lead)
{
	const struct pt_trace_info *in = pt_reader_info(res->rd);
	char b[32];
	if (res->flight && in->laps == 0)
		fprintf(out, "%swindow: the whole run so far (flight recorder, never wrapped", lead);
	else if (in->run_id && in->part != in->last_part) /* older parts deleted (PTZ_ROTATE_KEEP) */
		fprintf(out, "%swindow: %s of the run (parts %u to %u of a rotated trace", lead,
			dur(b, sizeof(b), (double)(res->end_ns - res->start_ns)), in->part, in->last_part);
	else if (in->run_id) /* a part read alone */
		fprintf(out, "%swindow: %s of the run (part %u of a rotated trace", lead,
			dur(b, sizeof(b), (double)(res->end_ns - res->start_ns)), in->part);
	else
		fprintf(out, "%swindow: the last %s of the run (%s", lead,
			dur(b, sizeof(b), (double)(res->end_ns - res->start_ns)), res->flight ? "flight recorder" : "snapshot");
	if (res->flight)
		fprintf(out, ", %.1f MiB area, %" PRIu64 " laps", (double)in->flight_bytes / 1048576.0, in->laps);
	fprintf(out, "); %" PRIu64 " sections ended in it began before it (counted, not analyzed), %" PRIu64
		     " open at its end\n",
		res->before_window, res->open_at_end);
}

void ana_info_text(FILE *out, const struct ana_result *res)
{
	const struct pt_trace_info *in = pt_reader_info(res->rd);
	char b[3][32];
	static const char *const clocks[] = { [PT_CLOCK_TSC] = "x86 TSC", [PT_CLOCK_CNTVCT] = "aarch64 cntvct",
					      [PT_CLOCK_MONOTONIC] = "CLOCK_MONOTONIC" };
	const uint32_t src = in->clock_source;
	fprintf(out, "process:      %s (pid %u)\n", in->process_name[0] ? in->process_name : "?", in->pid);
	fprintf(out, "host:         %s\n", in->host);
	fprintf(out, "command line: %s\n", in->cmdline);
	if (in->job[0] || in->has_rank) {
		fprintf(out, "job:          %s", in->job[0] ? ana_text_safe(in->job) : "-");
		if (in->has_rank)
			fprintf(out, ", rank %u", in->rank);
		fprintf(out, "\n");
	}
	if (in->run_id && in->parts > 1)
		fprintf(out, "rotated:      run %016" PRIx64 ", parts %u to %u read as one trace (%u files)\n", in->run_id,
			in->part, in->last_part, in->parts);
	else if (in->run_id)
		fprintf(out, "rotated:      run %016" PRIx64 ", part %u read alone%s\n", in->run_id, in->part,
			in->part > 1 ? " (a window of the run)" : "");
	if (res->rotate_failures)
		fprintf(out, "rotation:     %" PRIu64 " new parts not created (last: %s); recording went on in the "
			     "part before\n",
			res->rotate_failures, strerror(res->rotate_errno));
	fprintf(out, "recorder:     %s, format %u.%u, %s\n", in->recorder_version, in->version_major,
		in->version_minor, in->closed ? "closed cleanly" : "not closed (crashed or still recording)");
	fprintf(out, "clock:        %s, %.4f ns/tick\n", src < sizeof(clocks) / sizeof(clocks[0]) && clocks[src] ? clocks[src] : "unknown",
		pt_reader_ns_per_tick(res->rd));
	time_t secs = (time_t)(in->start_real_ns / 1000000000u);
	struct tm tm;
	char when[64] = "?";
	if (gmtime_r(&secs, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	fprintf(out, "started:      %s\n", when);
	fprintf(out, "span:         %s (wall), %s summed over threads\n",
		dur(b[0], 32, (double)(res->end_ns - res->start_ns)), dur(b[1], 32, (double)res->thread_span_sum_ns));
	fprintf(out, "size:         %" PRIu64 " bytes, %" PRIu64 " chunks, payload %" PRIu64 " -> %" PRIu64 " bytes\n",
		in->file_bytes, in->chunks, in->raw_bytes, in->stored_bytes);
	/* one ratio over every chunk says 1.0x for a trace of small chunks, which the
	 * recorder stores without trying zstd (doc/trace-format.md 3.3): each kind apart */
	fprintf(out, "compression:  zstd %" PRIu64 " of %" PRIu64 " chunks", in->compressed_chunks, in->chunks);
	if (in->compressed_chunks)
		fprintf(out, ", %" PRIu64 " -> %" PRIu64 " bytes (%.1fx)", in->compressed_raw_bytes,
			in->compressed_stored_bytes,
			in->compressed_stored_bytes ?
				(double)in->compressed_raw_bytes / (double)in->compressed_stored_bytes : 0.0);
	fprintf(out, "; ");
	fprintf(out, "%" PRIu64 " stored as is, %" PRIu64 " bytes (small or incompressible)\n",
		in->chunks - in->compressed_chunks, in->stored_bytes - in->compressed_stored_bytes);
	fprintf(out, "records:      %" PRIu64 " (%" PRIu64 " sections), %.2f bytes/record on disk\n", res->records,
		res->sections, res->records ? (double)in->file_bytes / (double)res->records : 0.0);
	fprintf(out, "losses:       %" PRIu64 " records, %" PRIu64 " sections\n", res->lost_records,
		res->lost_sections);
	fprintf(out, "errors:       %" PRIu64 " unmatched ends, %" PRIu64 " sections open at end, %" PRIu64
		     " counted by the recorder\n",
		res->unmatched_ends, res->open_at_end, res->misuse_errors);
	if (res->window)
		window_text(out, res, "              ");
	if (res->too_deep)
		fprintf(out, "too deep:     %" PRIu64 " sections nested deeper than %u levels not analyzed (limit)\n",
			res->too_deep, ANA_MAX_DEPTH);
	if (res->saturated)
		fprintf(out, "saturated:    some sums reached 2^64-1 and stopped there: 18446744073709551615 means at least that\n");
	gpu_summary_text(out, res, "gpu:          ", "              ");
	fprintf(out, "threads:      %zu\n", res->nthreads);
	for (size_t i = 0; i < res->nthreads; i++) {
		const struct ana_thread *t = &res->threads[i];
		fprintf(out, "  #%-4u tid %-8u %-16s %10" PRIu64 " records %8" PRIu64 " sections  span %s%s\n",
			t->index, t->tid, t->name[0] ? ana_text_safe(t->name) : "-", t->records, t->sections,
			dur(b[2], 32, (double)(t->last_ns - t->first_ns)),
			t->lost_records ? "  (losses)" : "");
	}
	for (size_t i = 0; i < pt_reader_problem_count(res->rd); i++)
		fprintf(out, "problem:      %s\n", pt_reader_problem(res->rd, i, NULL));
}

void ana_report_text(FILE *out, const struct ana_result *res, const struct ana_report_opts *o)
{
	const struct pt_trace_info *in = pt_reader_info(res->rd);
	char b[4][32];
	fprintf(out, "process %s (pid %u) on %s", in->process_name[0] ? in->process_name : "?", in->pid, in->host);
	if (in->job[0])
		fprintf(out, ", job %s", ana_text_safe(in->job));
	if (in->has_rank)
		fprintf(out, ", rank %u", in->rank);
	fprintf(out, "; %zu threads; wall span %s; sum of thread spans %s\n", res->nthreads,
		dur(b[0], 32, (double)(res->end_ns - res->start_ns)), dur(b[1], 32, (double)res->thread_span_sum_ns));
	fprintf(out, "sections %" PRIu64 ", records %" PRIu64 ", lost %" PRIu64 " records / %" PRIu64
		     " sections; errors: %" PRIu64 " unmatched ends, %" PRIu64 " open at end, %" PRIu64
		     " recorder-counted\n",
		res->sections, res->records, res->lost_records, res->lost_sections, res->unmatched_ends,
		res->open_at_end, res->misuse_errors);
	if (res->window)
		window_text(out, res, "");
	if (res->snapshot_failures || res->triggers_limited)
		fprintf(out, "snapshots: %" PRIu64 " failed (last: %s); %" PRIu64 " triggers rate-limited\n",
			res->snapshot_failures, res->snapshot_failures ? strerror(res->snapshot_errno) : "-",
			res->triggers_limited);
	if (in->run_id && in->parts > 1)
		fprintf(out, "rotated trace: parts %u to %u of run %016" PRIx64 "\n", in->part, in->last_part, in->run_id);
	if (res->rotate_failures)
		fprintf(out, "rotation: %" PRIu64 " new parts not created (last: %s); recording went on in the part "
			     "before\n",
			res->rotate_failures, strerror(res->rotate_errno));
	if (res->lost_records)
		fprintf(out, "rows marked ! were open while records were lost: their self time includes lost children\n");
	if (res->saturated)
		fprintf(out, "warning: some sums reached 2^64-1 and stopped there (saturated): a figure at that value, or"
			     " derived from one, is a lower bound\n");
	const struct ana_sampling *sm = &res->sampling;
	if (sm->requests) {
		if (sm->p_min == sm->p_max)
			fprintf(out, "sampled: %" PRIu64 " requests recorded at p = %.9g, standing for ~%.0f; ", sm->requests,
				sm->p_min, sm->est_requests);
		else
			fprintf(out, "sampled: %" PRIu64 " requests recorded at p = %.9g to %.9g, standing for ~%.0f; ",
				sm->requests, sm->p_min, sm->p_max, sm->est_requests);
		fprintf(out, "counts, totals and shares marked ~ are estimates with 95%% intervals (Horvitz-Thompson)\n");
	}
	if (sm->nested || sm->invalid || sm->orphan)
		fprintf(out, "sampling: %" PRIu64 " sampled requests nested in others (no interval under them), %" PRIu64
			     " invalid and %" PRIu64 " stray sampling counters ignored\n",
			sm->nested, sm->invalid, sm->orphan);
	if (res->too_deep)
		fprintf(out, "%" PRIu64 " sections nested deeper than %u levels were not analyzed (limit); the sections"
			     " enclosing them count their time as self time\n",
			res->too_deep, ANA_MAX_DEPTH);
	gpu_summary_text(out, res, "GPU: ", "");
	ana_proc_text(out, res); /* only for a trace with process counters */
	for (size_t i = 0; i < res->nthreads; i++) {
		const uint64_t *u = res->threads[i].unattributed;
		if (u[ANA_READ] | u[ANA_WRITTEN] | u[ANA_FLOPS])
			fprintf(out, "thread %u: metrics recorded outside any section: %" PRIu64 " bytes read, %" PRIu64
				     " written, %" PRIu64 " FLOPs\n",
				res->threads[i].index, u[ANA_READ], u[ANA_WRITTEN], u[ANA_FLOPS]);
		const uint64_t *x = res->threads[i].unattributed_xfer, *xc = res->threads[i].unattributed_xfer_count;
		if (xc[0] | xc[1] | xc[2] | xc[3]) {
			fprintf(out, "thread %u: transfers recorded outside any section:", res->threads[i].index);
			for (int d = 0, sep = 0; d < ANA_DIRS; d++)
				if (xc[d])
					fprintf(out, "%s %s %" PRIu64 " bytes (%" PRIu64 ")", sep++ ? "," : "", xfer_dir_name[d],
						x[d], xc[d]);
			fputc('\n', out);
		}
	}
	const struct ana_agg *flat;
	uint32_t nflat;
	const struct ana_tree *t = view_tree(res, o->thread, &flat, &nflat);
	static const char *sorts[] = { "total", "self", "flops", "count", "name" };
	char scope[32] = "all threads";
	if (o->thread >= 0)
		snprintf(scope, sizeof(scope), "thread %d", o->thread);
	fprintf(out, "\n%s (%s), sorted by %s; share = total / sum of thread spans; percentiles within %.1f%%\n",
		o->flat ? "Sections by name, recursion-safe totals" : "Call tree", scope, sorts[o->sort],
		100.0 * ANA_HIST_REL_ERROR);
	if (res->has_gpu)
		fprintf(out, "GB/s and GFLOP/s marked * are over GPU time (the GPU sections' declared work / GPU incl): "
			     "a GPU section's CPU time is only its launch\n");
	fprintf(out, HDR_FMT, "name", "count", "total", "self", "share", "mean", "std", "p50", "p90", "p99", "first",
		"1st/rest", "GB/s", "GFLOP/s", "FLOP/B");
	if (!o->flat) {
		tree_print(out, res, t, 0, o, 0, text_row, NULL);
	} else {
		uint32_t *ids, n = flat_rows(res, flat, nflat, o, &ids);
		for (uint32_t i = 0; i < n; i++)
			text_row(out, res, ana_text_safe(ana_name(res, ids[i])), 0, &flat[ids[i]]);
		free(ids);
	}
	if (o->bottlenecks) {
		uint32_t *ids = malloc((nflat ? nflat : 1) * sizeof(*ids)), n = 0;
		for (uint32_t id = 0; ids && id < nflat; id++)
			if (flat[id].count)
				ids[n++] = id;
		sorted(res, NULL, flat, ANA_SORT_OCCUPIED, ids, n);
		fprintf(out, "\nBottlenecks: top %d by occupied time = max(self CPU time, self GPU time); CPU share of the"
			     " sum of thread spans%s\n",
			o->bottlenecks, res->has_gpu ? ", GPU share of the GPU busy time" : "");
		const uint64_t busy = ana_gpu_busy_ns(res);
		for (uint32_t i = 0; i < n && i < (uint32_t)o->bottlenecks; i++) {
			const struct ana_agg *a = &flat[ids[i]];
			const uint64_t gpu = a->gpu ? a->gpu->self.total_ns : 0;
			if (a->est && !a->est->by_name) { /* inside sampled requests: estimates (§13) */
				struct ana_est_fig f;
				ana_est_figures(a, &f);
				char occ[40], slf[40];
				snprintf(occ, sizeof(occ), "~%s", dur(b[0], 32, fmax(f.self_ns, (double)ana_occupied_ns(res, a))));
				snprintf(slf, sizeof(slf), "~%s", dur(b[2], 32, f.self_ns));
				fprintf(out, "  %2u. %-40s %10s  CPU self %10s %5.1f%%", i + 1,
					ana_text_safe(ana_name(res, ids[i])), occ, slf,
					res->thread_span_sum_ns ? 100.0 * f.self_ns / (double)res->thread_span_sum_ns : 0.0);
				if (gpu)
					fprintf(out, "  GPU self %10s (recorded)", dur(b[1], 32, (double)gpu));
				fprintf(out, "  (~%.0f calls, estimated)\n", f.count);
				continue;
			}
			fprintf(out, "  %2u. %-40s %10s  CPU self %10s %5.1f%%", i + 1, ana_text_safe(ana_name(res, ids[i])),
				dur(b[0], 32, (double)ana_occupied_ns(res, a)), dur(b[2], 32, (double)a->self_ns),
				res->thread_span_sum_ns ? 100.0 * (double)a->self_ns / (double)res->thread_span_sum_ns : 0.0);
			if (gpu)
				fprintf(out, "  GPU self %10s %5.1f%%", dur(b[1], 32, (double)gpu),
					busy ? 100.0 * (double)(gpu < busy ? gpu : busy) / (double)busy : 0.0);
			fprintf(out, "  (%" PRIu64 " calls)\n", a->count);
		}
		free(ids);
	}
	int header = 0, width = 32; /* wider for a longer name (the process counters' reach 36) */
	for (size_t i = 0; i < res->nthreads; i++)
		for (size_t k = 0; k < res->threads[i].ncounters; k++) {
			const uint32_t id = res->threads[i].counters[k].id;
			const size_t len = strlen(ana_name(res, id));
			if (len > (size_t)width && len <= 48 && !ana_counter_is_bytes(res, &res->threads[i], id))
				width = (int)len;
		}
	for (size_t i = 0; i < res->nthreads; i++)
		for (size_t k = 0; k < res->threads[i].ncounters; k++) {
			const struct ana_counter *c = &res->threads[i].counters[k];
			if (ana_counter_is_bytes(res, &res->threads[i], c->id))
				continue; /* in the memory table, with their unit */
			if (!header++)
				fprintf(out, "\nCounters\n  %-*s %6s %10s %14s %14s %14s\n", width, "name", "thread", "samples",
					"last", "min", "max");
			fprintf(out, "  %-*s %6u %10" PRIu64 " %14" PRId64 " %14" PRId64 " %14" PRId64 "\n", width,
				ana_text_safe(ana_name(res, c->id)), res->threads[i].index, c->samples, c->last, c->min, c->max);
		}
	/* GPU, async ranges, instants: only for a trace that has them */
	if (res->has_gpu) {
		gpu_sections_text(out, res, o, t, flat, nflat, scope);
		gpu_devices_text(out, res);
	}
	gpu_memory_text(out, res);
	ana_mem_text(out, res, o); /* memory per section (ana_mem.c) */
	async_text(out, res);
	if (res->has_instants)
		instants_text(out, res, o->thread, scope);
}

/* ---------------------------------------------------------------- JSON integers past INT64_MAX */

/* jansson's integers are int64_t: a u64 figure past INT64_MAX (a
 * saturated sum, FLOPs past 9.2e18) would come out negative. Such a value
 * is held as a string with this marker and written by ana_json_dumpf() as
 * its exact decimal digits, which JSON allows (RFC 8259 §6 sets no range;
 * readers with 64-bit unsigned or arbitrary-precision integers, e.g.
 * Python's json, get it exactly). The marker holds a control byte (shown
 * by jansson as \u0001) and a per-process nonce, so no name can pose as one. */
static char u64_marker[40];

static const char *u64_mark(void)
{
	if (!u64_marker[0])
		snprintf(u64_marker, sizeof(u64_marker), "\001u64-%016llx:",
			 (unsigned long long)((uintptr_t)&u64_marker ^ (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull));
	return u64_marker;
}

json_t *ana_json_u64(uint64_t v)
{
	if (v <= (uint64_t)INT64_MAX)
		return json_integer((json_int_t)v);
	char b[64];
	snprintf(b, sizeof(b), "%s%" PRIu64, u64_mark(), v);
	return json_string(b);
}

bool ana_json_u64_get(const json_t *j, uint64_t *out)
{
	if (json_is_integer(j)) {
		json_int_t v = json_integer_value(j);
		if (v < 0)
			return false;
		*out = (uint64_t)v;
		return true;
	}
	if (!json_is_string(j) || !u64_marker[0])
		return false;
	const char *s = json_string_value(j);
	const size_t ml = strlen(u64_marker);
	if (strncmp(s, u64_marker, ml) != 0)
		return false;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s + ml, &end, 10);
	if (errno || *end || end == s + ml)
		return false;
	*out = v;
	return true;
}

int ana_json_dumpf(const json_t *j, FILE *out, size_t flags)
{
	/* Every non-ASCII character as a \uXXXX escape: names are untrusted,
	 * and a C1 control (U+009B opens a terminal sequence) or a bidi
	 * override (U+202E) must not reach a terminal or an editor raw when
	 * the file is read as text; every JSON reader decodes the same string. */
	char *s = json_dumps(j, flags | JSON_ENSURE_ASCII);
	if (!s)
		return -1;
	int rc = 0;
	if (!u64_marker[0]) { /* no large value was made */
		rc = fputs(s, out) == EOF ? -1 : 0;
		free(s);
		return rc;
	}
	char quoted[48]; /* the marker as jansson writes it, with its opening quote */
	snprintf(quoted, sizeof(quoted), "\"\\u0001%s", u64_marker + 1);
	const size_t ql = strlen(quoted);
	const char *p = s, *m;
	while (rc == 0 && (m = strstr(p, quoted))) {
		const char *d = m + ql, *e = d;
		while (*e >= '0' && *e <= '9')
			e++;
		if (*e != '"' || e == d) { /* not one of ours: as it is */
			rc = fwrite(p, 1, (size_t)(d - p), out) == (size_t)(d - p) ? 0 : -1;
			p = d;
			continue;
		}
		if (fwrite(p, 1, (size_t)(m - p), out) != (size_t)(m - p) ||
		    fwrite(d, 1, (size_t)(e - d), out) != (size_t)(e - d))
			rc = -1;
		p = e + 1;
	}
	if (rc == 0 && fputs(p, out) == EOF)
		rc = -1;
	free(s);
	return rc;
}

/* ---------------------------------------------------------------- CSV */

/* The decimal digits of @v, written backwards ending at @end; their start. */
static char *u64_digits(char *end, uint64_t v)
{
	/* two digits a division (the CSV and JSON write ~30 integers a row) */
	static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
				    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
				    "8081828384858687888990919293949596979899";
	while (v >= 100) {
		const uint64_t q = v / 100;
		end -= 2;
		memcpy(end, pairs + 2 * (v - q * 100), 2);
		v = q;
	}
	if (v >= 10) {
		end -= 2;
		memcpy(end, pairs + 2 * v, 2);
	} else {
		*--end = (char)('0' + v);
	}
	return end;
}

/* u64_digits() of a signed value: a '-' before the digits of its magnitude. */
static char *i64_digits(char *end, int64_t v)
{
	char *p = u64_digits(end, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
	if (v < 0)
		*--p = '-';
	return p;
}

size_t ana_fmt_fixed(char buf[40], double v, int decimals)
{
	/* the fast path (see ana.h): the integer part ip and the fraction v - ip
	 * are exact for 0 <= v < 2^53; the fraction times 10^decimals (< 10^6) is
	 * within half an ulp, 2^-34 < 6e-11, of the exact product */
	static const uint64_t p10[] = { 1, 10, 100, 1000, 10000, 100000, 1000000 };
	if (v == 0 && !signbit(v) && decimals >= 0 && decimals <= 6) { /* most rates of most rows */
		memcpy(buf, "0.000000", 8);
		return decimals ? 2 + (size_t)decimals : 1;
	}
	if (v >= 0 && v < 1e15 && !signbit(v) && decimals >= 0 && decimals <= 6) {
		uint64_t ip = (uint64_t)v, f = 0;
		const double fr = v - (double)ip;
		if (decimals == 0) {
			if (fr > 0.5 || (fr == 0.5 && (ip & 1))) /* exact: half to even */
				ip++;
		} else {
			const double y = fr * (double)p10[decimals];
			f = (uint64_t)y;
			const double d = y - (double)f;
			if (d > 0.5 - 1e-9 && d < 0.5 + 1e-9)
				goto slow; /* too near a half to decide here */
			if (d > 0.5 && ++f == p10[decimals]) {
				f = 0;
				ip++;
			}
		}
		char t[40], *e = t + sizeof(t);
		if (decimals) {
			for (int k = 0; k < decimals; k++, f /= 10)
				*--e = (char)('0' + f % 10);
			*--e = '.';
		}
		char *p = u64_digits(e, ip);
		const size_t n = (size_t)(t + sizeof(t) - p);
		memcpy(buf, p, n);
		return n;
	}
slow:;
	const int n = snprintf(buf, 40, "%.*f", decimals, v);
	return n < 0 ? 0 : (size_t)n < 40 ? (size_t)n : 39;
}

/* ana_fmt_g12()'s fast path for 1e-4 <= v < 1e12; 0 where it cannot decide. */
/* %.12g's twelve significant digits of @y (in [1e11, 1e12): v times a
 * power of ten, within 1e-3 of exact) into @dg, and the carry of a round
 * up into the next decade into *@e10: false when @y lies too near a half
 * to decide here. */
static inline __attribute__((always_inline)) bool g12_digits(double y, int *e10, char dg[12])
{
	uint64_t m = (uint64_t)y;
	const double d = y - (double)m; /* exact */
	if (d > 0.5 - 1e-3 && d < 0.5 + 1e-3)
		return false;
	m += d > 0.5;
	if (m == 1000000000000ull) { /* rounded up into the next decade */
		m = 100000000000ull;
		++*e10;
	}
	if (m < 100000000000ull || m >= 1000000000000ull)
		return false;
	for (int k = 11; k >= 0; k--, m /= 10)
		dg[k] = (char)('0' + m % 10);
	return true;
}

/* g12_fast() below 1e-4, down to 1e-15 (a JSON report's shares of short
 * sections: each went through snprintf(), ~1,000 instructions): %g's
 * style e, "d.ddddddddddde-XX" without trailing zeros. y = v * 10^(11 -
 * e10) takes two roundings (10^16, then an exact power of at most 10^11),
 * within 2^-52 * 1e12 < 2.3e-4 of exact, so the same 1e-3 margin around a
 * half decides. @p10: 10^0 .. 10^16, exact. 0 when it cannot decide. */
static size_t g12_small(char *buf, double v, const double *p10)
{
	int e10 = -5; /* 10^e10 <= v < 10^(e10 + 1), found below */
	while (e10 > -15 && v < 1.0 / p10[-e10])
		e10--;
	double y = v * 1e16 * p10[11 - e10 - 16];
	if (y >= 1e12) {
		if (e10 == -5) /* not for v below 1e-4 (its product stays below 1e12), but p10 has no 10^-1 */
			return 0;
		e10++;
		y = v * 1e16 * p10[11 - e10 - 16];
	} else if (y < 1e11) {
		if (e10 == -15)
			return 0;
		e10--;
		y = v * 1e16 * p10[11 - e10 - 16];
	}
	char dg[12];
	if (!(y >= 1e11 && y < 1e12) || !g12_digits(y, &e10, dg) || e10 > -5) /* 1e-4 rounded: style f */
		return 0;
	int last = 11;
	while (last > 0 && dg[last] == '0')
		last--;
	size_t n = 0;
	buf[n++] = dg[0];
	if (last > 0) {
		buf[n++] = '.';
		memcpy(buf + n, dg + 1, (size_t)last);
		n += (size_t)last;
	}
	const int x = -e10; /* 5 .. 15: two digits, as printf writes at least */
	buf[n++] = 'e';
	buf[n++] = '-';
	buf[n++] = (char)('0' + x / 10);
	buf[n++] = (char)('0' + x % 10);
	return n;
}

static size_t g12_fast(char *buf, double v)
{
	static const double p10[] = { 1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,
				      1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16 }; /* exact */
	if (v >= 1e-15 && v < 1e-4)
		return g12_small(buf, v, p10);
	if (!(v >= 1e-4 && v < 1e12))
		return 0;
	/* e10: the decimal exponent, so that y = v * 10^(11 - e10) has 12 integer digits */
	int e10 = 11;
	while (e10 > -4 && v < (e10 >= 0 ? p10[e10] : 1.0 / p10[-e10]))
		e10--;
	double y = v * p10[11 - e10]; /* one rounding: within 2^-53 * 1e12 < 1.2e-4 of exact */
	if (y >= 1e12) {
		e10++;
		y = v * p10[11 - e10];
	} else if (y < 1e11) {
		if (e10 == -4)
			return 0;
		e10--;
		y = v * p10[11 - e10];
	}
	/* %g with precision 12 and -4 <= X < 12: style f with 11 - X decimals,
	 * trailing zeros and a bare point removed */
	char dg[12];
	if (!g12_digits(y, &e10, dg) || e10 >= 12)
		return 0;
	int last = 11; /* the last significant digit kept */
	while (last > 0 && last > e10 && dg[last] == '0')
		last--;
	size_t n = 0;
	if (e10 >= 0) {
		memcpy(buf, dg, (size_t)e10 + 1);
		n = (size_t)e10 + 1;
		if (last > e10) {
			buf[n++] = '.';
			memcpy(buf + n, dg + e10 + 1, (size_t)(last - e10));
			n += (size_t)(last - e10);
		}
	} else {
		buf[n++] = '0';
		buf[n++] = '.';
		for (int k = e10 + 1; k < 0; k++)
			buf[n++] = '0';
		memcpy(buf + n, dg, (size_t)last + 1);
		n += (size_t)last + 1;
	}
	return n;
}

size_t ana_fmt_g12(char buf[40], double v)
{
	size_t n = v < 0 ? g12_fast(buf + 1, -v) : g12_fast(buf, v);
	if (n && v < 0) { /* printf writes the sign, then the magnitude */
		buf[0] = '-';
		n++;
	}
	if (n)
		return n;
	const int r = snprintf(buf, 40, "%.12g", v);
	return r < 0 ? 0 : (size_t)r < 40 ? (size_t)r : 39;
}

void ana_csv_u64(struct ana_obuf *out, uint64_t v)
{
	char b[24], *p = u64_digits(b + sizeof(b), v);
	*--p = ',';
	ana_obuf_put(out, p, (size_t)(b + sizeof(b) - p));
}

void ana_csv_i64(struct ana_obuf *out, int64_t v)
{
	char b[24], *p = i64_digits(b + sizeof(b), v);
	*--p = ',';
	ana_obuf_put(out, p, (size_t)(b + sizeof(b) - p));
}

static void csv_fixed(struct ana_obuf *out, double v, int decimals)
{
	char b[41];
	b[0] = ',';
	ana_obuf_put(out, b, 1 + ana_fmt_fixed(b + 1, v, decimals));
}

void ana_csv_f0(struct ana_obuf *out, double v)
{
	csv_fixed(out, v, 0);
}

void ana_csv_f6(struct ana_obuf *out, double v)
{
	csv_fixed(out, v, 6);
}

static void csv_str(struct ana_obuf *out, const char *s)
{
	/* A field a spreadsheet would read as a formula (=, +, -, @, or a tab
	 * or CR first: OWASP CSV injection) is quoted with a single quote
	 * first, which spreadsheets show as text and strip. */
	const bool formula = *s && strchr("=+-@\t\r", *s);
	/* RFC 4180: quote fields holding a comma, quote, CR or LF; double quotes */
	if (!formula && !strpbrk(s, ",\"\r\n")) {
		ana_obuf_puts(out, s);
		return;
	}
	ana_obuf_putc(out, '"');
	if (formula)
		ana_obuf_putc(out, '\'');
	for (; *s; s++) {
		if (*s == '"')
			ana_obuf_putc(out, '"');
		ana_obuf_putc(out, *s);
	}
	ana_obuf_putc(out, '"');
}

static const char *const csv_cols =
	"view,thread,path,depth,name,domain,count,total_ns,self_ns,share,mean_ns,std_ns,min_ns,max_ns,p50_ns,"
	"p90_ns,p99_ns,first_ns,first_start_ns,rest_mean_ns,rest_std_ns,first_over_rest,read_bytes,written_bytes,"
	"flops,self_read_bytes,self_written_bytes,self_flops,gb_per_s,gflop_per_s,flop_per_byte,h2d_bytes,"
	"d2h_bytes,d2d_bytes,p2p_bytes,h2d_gb_per_s,d2h_gb_per_s,d2d_gb_per_s,p2p_gb_per_s,lossy";

/* Appended to every row when the trace holds GPU records (doc/analyzer-output.md §5). */
static const char *const csv_gpu_cols =
	",gpu_count,gpu_total_ns,gpu_mean_ns,gpu_min_ns,gpu_max_ns,gpu_p50_ns,gpu_p99_ns,gpu_incl_count,"
	"gpu_incl_total_ns,gpu_over_cpu,gpu_launch_latency_mean_ns,gpu_launch_latency_min_ns,"
	"gpu_launch_latency_max_ns,gpu_early_starts,gpu_gb_per_s,gpu_gflop_per_s,gpu_self_gb_per_s,"
	"gpu_self_gflop_per_s,gpu_h2d_gb_per_s,gpu_d2h_gb_per_s,gpu_d2d_gb_per_s,gpu_p2p_gb_per_s,occupied_ns,"
	"time_cpu_ns,time_gpu_ns,time_transfer_ns,time_compute_ns,time_launch_ns";

/* A GPU rate: empty where not available (no GPU time, nothing declared). */
static void csv_rate(struct ana_obuf *out, double v)
{
	if (isfinite(v))
		ana_csv_f6(out, v);
	else
		ana_obuf_putc(out, ',');
}

static void csv_gpu(struct ana_obuf *out, const struct ana_agg *a, const struct ana_row *w)
{
	static const struct ana_gpu none;
	const struct ana_gpu *g = a && a->gpu ? a->gpu : &none;
	const struct ana_gpu_dist *d = &g->self;
	ana_csv_u64(out, d->count);
	ana_csv_u64(out, d->total_ns);
	ana_csv_f0(out, w ? w->gpu_mean : 0.0);
	ana_csv_u64(out, d->min_ns);
	ana_csv_u64(out, d->max_ns);
	ana_csv_u64(out, w ? w->gpu_p50 : 0);
	ana_csv_u64(out, w ? w->gpu_p99 : 0);
	ana_csv_u64(out, g->incl_count);
	ana_csv_u64(out, g->incl_total_ns);
	ana_csv_f6(out, w ? w->gpu_over_cpu : 0.0);
	ana_csv_f0(out, d->count ? w->gpu_lat_mean : 0.0);
	ana_csv_i64(out, d->lat_min_ns);
	ana_csv_i64(out, d->lat_max_ns);
	ana_csv_u64(out, d->early);
	if (!w) {
		ana_obuf_puts(out, ",,,,,,,,,0,0,0,0,0,0");
		return;
	}
	csv_rate(out, w->gpu_gbps);
	csv_rate(out, w->gpu_gflops);
	csv_rate(out, w->gpu_self_gbps);
	csv_rate(out, w->gpu_self_gflops);
	for (int k = 0; k < ANA_DIRS; k++)
		csv_rate(out, w->gpu_xfer_gbps[k]);
	const uint64_t tail[] = { w->occupied_ns, w->bd_cpu_ns,     w->bd_gpu_ns,
				  w->bd_copy_ns,   w->bd_compute_ns, w->bd_launch_ns };
	for (size_t k = 0; k < sizeof(tail) / sizeof(tail[0]); k++)
		ana_csv_u64(out, tail[k]);
}

/*
 * @node's call path in *@buf (grown as needed): its names from the root's
 * child down, joined by ';', or for a node deeper than @keep levels
 * "[DEPTH] ..." and its innermost @keep names. Only those names are
 * visited, never the whole chain: a row costs O(@keep) however deep.
 * NULL when *@buf cannot be grown.
 */
static const char *path_tail(const struct ana_result *res, const struct ana_tree *t, uint32_t node, uint32_t keep,
			     char **buf, size_t *cap)
{
	uint32_t depth = t->n[node].depth, k = depth < keep ? depth : keep;
	char prefix[32] = "";
	if (depth > keep)
		snprintf(prefix, sizeof(prefix), "[%u] ...", depth);
	size_t plen = strlen(prefix);
	size_t len = plen ? plen + 1 : 0; /* the prefix and its ';' */
	uint32_t x = node;
	for (uint32_t i = 0; i < k; i++, x = t->n[x].parent)
		len += strlen(ana_name(res, t->n[x].id)) + 1; /* a name and its ';' (the last: the NUL) */
	if (!len)
		len = 1;
	if (len > *cap) {
		char *b = realloc(*buf, len);
		if (!b)
			return NULL;
		*buf = b;
		*cap = len;
	}
	size_t o = len - 1; /* written from the end, innermost name first */
	(*buf)[o] = 0;
	x = node;
	for (uint32_t i = 0; i < k; i++, x = t->n[x].parent) {
		const char *name = ana_name(res, t->n[x].id); /* one at a time: its buffer is reused */
		size_t n = strlen(name);
		o -= n;
		memcpy(*buf + o, name, n);
		if (o)
			(*buf)[--o] = ';';
	}
	memcpy(*buf, prefix, plen); /* o == plen here */
	return *buf;
}

const char *ana_path_of(const struct ana_result *res, const struct ana_tree *t, uint32_t node, char **buf,
			size_t *cap)
{
	return path_tail(res, t, node, ANA_PATH_MAX_NAMES, buf, cap);
}

const char *ana_path_short(const struct ana_result *res, const struct ana_tree *t, uint32_t node, char **buf,
			   size_t *cap)
{
	return path_tail(res, t, node, t->n[node].depth <= ANA_PATH_SHORT_DEPTH ? ANA_PATH_SHORT_DEPTH : ANA_PATH_SHORT_TAIL,
			 buf, cap);
}

/* A std in integer ns; empty when not available (NaN: ana_moments_std). */
static void csv_std(struct ana_obuf *out, double v)
{
	if (isnan(v))
		ana_obuf_putc(out, ',');
	else
		ana_csv_f0(out, v);
}

/* The sampling columns (§13) of row @a (NULL: none): empty without an
 * estimate; a flat row's only its sampled_recorded_count. */
static const char *const csv_est_cols = ",est_count,est_count_lo,est_count_hi,est_total_ns,est_total_lo_ns,"
					 "est_total_hi_ns,est_self_ns,sampled_requests,sampled_recorded_count";
static void csv_est(struct ana_obuf *out, const struct ana_agg *a)
{
	if (!a || !a->est) {
		ana_obuf_puts(out, ",,,,,,,,,");
		return;
	}
	if (a->est->by_name) {
		ana_obuf_printf(out, ",,,,,,,,,%" PRIu64, a->est->rec_count);
		return;
	}
	struct ana_est_fig f;
	ana_est_figures(a, &f);
	ana_csv_f0(out, f.count);
	if (f.interval) {
		ana_csv_f0(out, f.count_lo);
		ana_csv_f0(out, f.count_hi);
		ana_csv_f0(out, f.total_ns);
		ana_csv_f0(out, f.total_lo_ns);
		ana_csv_f0(out, f.total_hi_ns);
	} else {
		ana_obuf_puts(out, ",,");
		ana_csv_f0(out, f.total_ns);
		ana_obuf_puts(out, ",,");
	}
	ana_csv_f0(out, f.self_ns);
	ana_csv_u64(out, a->est->units);
	ana_csv_u64(out, a->est->rec_count);
}

static void csv_row(struct ana_obuf *out, const struct ana_result *res, const char *view, const char *thread,
		    const char *path, uint32_t depth, uint32_t id, const struct ana_agg *a)
{
	struct ana_row w;
	ana_row_compute(res, a, &w);
	uint32_t dom = 0;
	ana_string(res, id, &dom);
	const char *dn = pt_reader_domain(res->rd, dom);
	ana_obuf_puts(out, view);
	ana_obuf_putc(out, ',');
	ana_obuf_puts(out, thread);
	ana_obuf_putc(out, ',');
	csv_str(out, path);
	ana_csv_u64(out, depth);
	ana_obuf_putc(out, ',');
	csv_str(out, ana_name(res, id));
	ana_obuf_putc(out, ',');
	csv_str(out, dn ? dn : "");
	ana_csv_u64(out, a->count);
	ana_csv_u64(out, a->total_ns);
	ana_csv_u64(out, a->self_ns);
	ana_csv_f6(out, w.share);
	ana_csv_f0(out, w.mean);
	csv_std(out, w.std);
	const uint64_t mid[] = { a->min_ns, a->max_ns, w.p50, w.p90, w.p99, a->first_ns, a->first_start_ns };
	for (size_t k = 0; k < sizeof(mid) / sizeof(mid[0]); k++)
		ana_csv_u64(out, mid[k]);
	ana_csv_f0(out, w.rest_mean);
	csv_std(out, w.rest_std);
	ana_csv_f6(out, w.first_over_rest);
	for (int k = 0; k < ANA_NMETRIC; k++)
		ana_csv_u64(out, a->metric_incl[k]);
	for (int k = 0; k < ANA_NMETRIC; k++)
		ana_csv_u64(out, a->metric_self[k]);
	ana_csv_f6(out, w.gbps);
	ana_csv_f6(out, w.gflops);
	ana_csv_f6(out, w.intensity);
	for (int d = 0; d < ANA_DIRS; d++)
		ana_csv_u64(out, ana_xfer_incl(a, d));
	for (int d = 0; d < ANA_DIRS; d++)
		ana_csv_f6(out, w.xfer_gbps[d]);
	ana_obuf_puts(out, a->lossy ? ",1" : ",0");
	if (res->has_gpu)
		csv_gpu(out, a, &w);
	ana_mem_csv(out, res, a);
	if (res->saturated)
		ana_obuf_printf(out, ",%d", ana_agg_saturated(a) ? 1 : 0);
	if (res->sampling.requests)
		csv_est(out, a);
	ana_obuf_putc(out, '\n');
}

/*
 * A row of view "async" (one per name, thread "all") or "instant" (per
 * name, thread "all" and per thread): count and, for async ranges, the
 * duration figures in the section columns of the same meaning; every
 * other numeric column is 0.
 */
static void csv_misc_row(struct ana_obuf *out, const struct ana_result *res, const char *view, const char *thread, uint32_t id,
			 uint64_t count, const struct ana_async *a)
{
	const char *name = id ? ana_name(res, id) : "(unnamed)";
	uint32_t dom = 0;
	const char *dn = id && ana_string(res, id, &dom) ? pt_reader_domain(res->rd, dom) : NULL;
	ana_obuf_printf(out, "%s,%s,", view, thread);
	csv_str(out, name);
	ana_obuf_puts(out, ",1,");
	csv_str(out, name);
	ana_obuf_putc(out, ',');
	csv_str(out, dn ? dn : "");
	if (a)
		ana_obuf_printf(out,
			",%" PRIu64 ",%" PRIu64 ",0,0.000000,%.0f,0,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64,
			a->count, a->total_ns, (double)a->total_ns / (double)a->count, a->min_ns, a->max_ns,
			ana_hist_quantile(&a->hist, 0.50, a->count, a->min_ns, a->max_ns),
			ana_hist_quantile(&a->hist, 0.90, a->count, a->min_ns, a->max_ns),
			ana_hist_quantile(&a->hist, 0.99, a->count, a->min_ns, a->max_ns));
	else
		ana_obuf_printf(out, ",%" PRIu64 ",0,0,0.000000,0,0,0,0,0,0,0", count);
	/* first_ns .. first_over_rest, 3 + 3 metrics, 3 rates, 4 + 4 transfers, lossy */
	ana_obuf_puts(out,
		      ",0,0,0,0,0.000000,0,0,0,0,0,0,0.000000,0.000000,0.000000,0,0,0,0,0.000000,0.000000,0.000000,0.000000,0");
	if (res->has_gpu)
		csv_gpu(out, NULL, NULL);
	ana_mem_csv(out, res, NULL);
	if (res->saturated)
		ana_obuf_puts(out, ",0");
	if (res->sampling.requests)
		csv_est(out, NULL);
	ana_obuf_putc(out, '\n');
}

static int csv_tree(struct ana_obuf *out, const struct ana_result *res, const struct ana_tree *t, const char *thread)
{
	char *buf = NULL;
	size_t cap = 0;
	for (uint32_t i = 1; i < t->count; i++) {
		if (!t->n[i].agg.count)
			continue;
		const char *path = ana_path_of(res, t, i, &buf, &cap);
		if (!path) {
			free(buf);
			errno = ENOMEM;
			return -1;
		}
		csv_row(out, res, "tree", thread, path, t->n[i].depth, t->n[i].id, &t->n[i].agg);
	}
	free(buf);
	return 0;
}

static int write_csv(struct ana_obuf *out, const struct ana_result *res)
{
	ana_obuf_printf(out, "%s%s%s%s%s\n", csv_cols, res->has_gpu ? csv_gpu_cols : "", ana_mem_csv_cols(res),
		res->saturated ? ",saturated" : "", res->sampling.requests ? csv_est_cols : "");
	if (csv_tree(out, res, &res->merged, "all"))
		return -1;
	for (uint32_t id = 0; id < res->nnames; id++)
		if (res->by_name[id].count)
			csv_row(out, res, "flat", "all", ana_name(res, id), 1, id, &res->by_name[id]);
	for (size_t i = 0; i < res->nthreads; i++) {
		char th[16];
		snprintf(th, sizeof(th), "%u", res->threads[i].index);
		if (csv_tree(out, res, &res->threads[i].tree, th))
			return -1;
		for (uint32_t id = 0; id < res->threads[i].nflat; id++)
			if (res->by_name_thread[i][id].count)
				csv_row(out, res, "flat", th, ana_name(res, id), 1, id, &res->by_name_thread[i][id]);
	}
	for (uint32_t id = 0; id < res->nasync; id++)
		if (res->async_by_name[id].count)
			csv_misc_row(out, res, "async", "all", id, 0, &res->async_by_name[id]);
	for (uint32_t id = 0; id < res->ninstants; id++)
		if (res->instants_by_name[id])
			csv_misc_row(out, res, "instant", "all", id, res->instants_by_name[id], NULL);
	for (size_t i = 0; i < res->nthreads; i++) {
		char th[16];
		snprintf(th, sizeof(th), "%u", res->threads[i].index);
		for (uint32_t id = 0; id < res->threads[i].ninstants; id++)
			if (res->threads[i].instants[id])
				csv_misc_row(out, res, "instant", th, id, res->threads[i].instants[id], NULL);
	}
	return 0;
}

int ana_write_csv(FILE *out, const struct ana_result *res, const struct ana_report_opts *o)
{
	(void)o;
	struct ana_obuf *b = malloc(sizeof(*b)); /* 16 KiB: not on the stack */
	if (!b) {
		errno = ENOMEM;
		return -1;
	}
	b->out = out;
	b->err = 0;
	b->n = 0;
	int rc = write_csv(b, res);
	ana_obuf_flush(b);
	if (b->err || ferror(out))
		rc = -1;
	free(b);
	return rc;
}

/* ---------------------------------------------------------------- JSON */

/*
 * @s if it is valid UTF-8 (JSON strings must be), else a copy in *@scratch
 * with each invalid byte replaced by '?'; NULL only when that copy cannot
 * be allocated. Names are the program's own bytes: nothing checked them.
 */
const char *ana_utf8_clean(const char *s, char **scratch)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), i = 0;
	char *o = NULL;
	while (i < n) {
		unsigned c = p[i];
		size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
		int ok = len && i + len <= n;
		for (size_t k = 1; ok && k < len; k++)
			ok = (p[i + k] & 0xc0) == 0x80;
		if (ok && len > 1) { /* overlong forms, surrogates, > U+10FFFF */
			uint32_t cp = c & (0x7f >> len);
			for (size_t k = 1; k < len; k++)
				cp = (cp << 6) | (p[i + k] & 0x3f);
			static const uint32_t min_cp[5] = { 0, 0, 0x80, 0x800, 0x10000 };
			ok = cp >= min_cp[len] && cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff);
		}
		if (!ok && !o) {
			free(*scratch);
			*scratch = o = malloc(n + 1);
			if (!o)
				return NULL;
			memcpy(o, s, n + 1);
		}
		if (!ok)
			o[i] = '?';
		i += ok ? len : 1;
	}
	return o ? o : s;
}

/* ---- JSON members, streamed or built (ana.h: struct ana_jo) ---- */

void ana_obuf_flush(struct ana_obuf *b)
{
	if (b->n && fwrite(b->buf, 1, b->n, b->out) != b->n)
		b->err = 1;
	b->n = 0;
}

void ana_obuf_printf(struct ana_obuf *b, const char *fmt, ...)
{
	char t[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(t, sizeof(t), fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->err = 1;
		return;
	}
	if ((size_t)n < sizeof(t)) {
		ana_obuf_put(b, t, (size_t)n);
		return;
	}
	char *h = malloc((size_t)n + 1);
	if (!h) {
		b->err = 1;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(h, (size_t)n + 1, fmt, ap);
	va_end(ap);
	ana_obuf_put(b, h, (size_t)n);
	free(h);
}

void ana_obuf_put_full(struct ana_obuf *b, const char *s, size_t n)
{
	ana_obuf_flush(b);
	if (n > sizeof(b->buf)) {
		if (fwrite(s, 1, n, b->out) != n)
			b->err = 1;
		return;
	}
	memcpy(b->buf, s, n);
	b->n = n;
}

static void jo_put(struct ana_jo *o, const char *s, size_t n)
{
	ana_obuf_put(o->b, s, n);
}

struct ana_jo ana_jo_open(struct ana_obuf *b, const char *open)
{
	struct ana_jo o = { .b = b, .first = true, .err = &b->err };
	jo_put(&o, open, strlen(open));
	return o;
}

struct ana_jo ana_jo_build(json_t *obj, int *err)
{
	struct ana_jo o = { .obj = obj, .first = true, .err = err };
	if (!obj)
		*err = 1;
	return o;
}

void ana_jo_close(struct ana_jo *o, const char *close)
{
	if (o->b)
		jo_put(o, close, strlen(close));
}

/* `"key": ` of an object's member, or the separator before an array's
 * element (@key NULL); bytes only. */
static void jo_key(struct ana_jo *o, const char *key)
{
	if (!o->first)
		ana_obuf_put(o->b, ", ", 2);
	o->first = false;
	if (key) {
		ana_obuf_putc(o->b, '"');
		ana_obuf_put(o->b, key, strlen(key));
		ana_obuf_put(o->b, "\": ", 3);
	}
}

/* jo_key() then @vn bytes @v: a member (or an array's element) as one
 * write into the buffer when it has room (a report has ~550,000 of them). */
static inline __attribute__((always_inline)) void jo_member(struct ana_jo *o, const char *key, size_t kn, const char *v,
							    size_t vn)
{
	struct ana_obuf *b = o->b;
	if (__builtin_expect(kn + vn + 8 > sizeof(b->buf) - b->n, 0)) {
		jo_key(o, key);
		jo_put(o, v, vn);
		return;
	}
	char *d = b->buf + b->n;
	if (!o->first) {
		d[0] = ',';
		d[1] = ' ';
		d += 2;
	}
	o->first = false;
	if (key) {
		*d++ = '"';
		memcpy(d, key, kn);
		d += kn;
		memcpy(d, "\": ", 3);
		d += 3;
	}
	memcpy(d, v, vn);
	b->n = (size_t)(d + vn - b->buf);
}

/* Object mode: @v (a new reference, consumed, also on failure, as jansson's
 * *_set_new() do; NULL = ENOMEM) as member @key, or appended (@key NULL). */
static void jo_set(struct ana_jo *o, const char *key, json_t *v)
{
	if (!v || (key ? json_object_set_new(o->obj, key, v) : json_array_append_new(o->obj, v)))
		*o->err = 1;
}

struct ana_jo ana_jo_child(struct ana_jo *o, const char *key, char kind)
{
	if (o->b) {
		jo_key(o, key);
		return ana_jo_open(o->b, kind == '[' ? "[" : "{");
	}
	json_t *c = kind == '[' ? json_array() : json_object();
	jo_set(o, key, c);
	/* borrowed: the parent holds it (or, on a failure, nothing is built) */
	return (struct ana_jo){ .obj = *o->err ? NULL : c, .first = true, .err = o->err };
}

void ana_jo_u64_n(struct ana_jo *o, const char *key, size_t klen, uint64_t v)
{
	if (!o->b) {
		jo_set(o, key, ana_json_u64(v));
		return;
	}
	char b[24], *p = u64_digits(b + sizeof(b), v);
	jo_member(o, key, klen, p, (size_t)(b + sizeof(b) - p));
}

void ana_jo_i64_n(struct ana_jo *o, const char *key, size_t klen, int64_t v)
{
	if (!o->b) {
		jo_set(o, key, json_integer(v));
		return;
	}
	char b[24], *p = i64_digits(b + sizeof(b), v);
	jo_member(o, key, klen, p, (size_t)(b + sizeof(b) - p));
}

void ana_jo_real_n(struct ana_jo *o, const char *key, size_t klen, double v)
{
	if (!o->b) {
		jo_set(o, key, isfinite(v) ? json_real(v) : json_null());
		return;
	}
	if (!isfinite(v)) {
		jo_member(o, key, klen, "null", 4);
		return;
	}
	char b[40];
	if (v > -1e12 && v < 1e12 && v == (double)(int64_t)v && (v != 0 || !signbit(v))) { /* range first: the cast */
		/* an integer of at most 12 digits: "%.12g" prints its digits, then ".0" (the
		 * common case: counts, zero rates, whole bytes; printf of a double costs ~1,000
		 * instructions) */
		char *p = i64_digits(b + sizeof(b) - 2, (int64_t)v);
		b[sizeof(b) - 2] = '.';
		b[sizeof(b) - 1] = '0';
		jo_member(o, key, klen, p, (size_t)(b + sizeof(b) - p));
		return;
	}
	/* jansson's jsonp_dtostr() at JSON_REAL_PRECISION(12), in the C locale */
	int n = (int)ana_fmt_g12(b, v);
	if (n <= 0 || n >= (int)sizeof(b) - 3) {
		jo_key(o, key); /* as before: the member's key, no value */
		*o->err = 1;
		return;
	}
	size_t len = (size_t)n;
	char *e = memchr(b, 'e', len);
	if (!e && !memchr(b, '.', len)) {
		b[len++] = '.';
		b[len++] = '0';
	}
	if (e) { /* "1e+20" -> "1e20", "1e-05" -> "1e-5" */
		char *d = e + 1, *z;
		if (*d == '-')
			d++;
		for (z = (*d == '+') ? d + 1 : d; *z == '0' && z + 1 < b + len; z++)
			;
		memmove(d, z, (size_t)(b + len - z));
		len -= (size_t)(z - d);
	}
	jo_member(o, key, klen, b, len);
}

void ana_jo_bool_n(struct ana_jo *o, const char *key, size_t klen, bool v)
{
	if (!o->b) {
		jo_set(o, key, json_boolean(v));
		return;
	}
	jo_member(o, key, klen, v ? "true" : "false", v ? 4 : 5);
}

void ana_jo_null_n(struct ana_jo *o, const char *key, size_t klen)
{
	if (!o->b) {
		jo_set(o, key, json_null());
		return;
	}
	jo_member(o, key, klen, "null", 4);
}

char *ana_json_encode(const char *s)
{
	json_t *j = ana_json_str(s);
	char *t = j ? json_dumps(j, JSON_ENCODE_ANY | JSON_ENSURE_ASCII) : NULL;
	json_decref(j);
	return t;
}

void ana_jo_str(struct ana_jo *o, const char *key, const char *s)
{
	if (!o->b) {
		jo_set(o, key, ana_json_str(s));
		return;
	}
	jo_key(o, key);
	/* printable ASCII but '"' and '\\' (most names): its bytes, quoted, as
	 * jansson writes them; anything else through ana_json_encode() */
	size_t n = 0;
	while (s[n] >= 0x20 && s[n] < 0x7f && s[n] != '"' && s[n] != '\\')
		n++;
	if (!s[n]) {
		ana_obuf_putc(o->b, '"');
		ana_obuf_put(o->b, s, n);
		ana_obuf_putc(o->b, '"');
		return;
	}
	char *t = ana_json_encode(s);
	if (t)
		jo_put(o, t, strlen(t));
	else
		*o->err = 1;
	free(t);
}

/* A JSON string of @s, repaired by ana_utf8_clean(): jansson rejects
 * invalid UTF-8 (json_string returns NULL), and a name must never vanish
 * from a row or a path. */
static json_t *jstr(const char *s)
{
	char *scratch = NULL;
	const char *c = ana_utf8_clean(s, &scratch);
	json_t *j = json_string(c ? c : "?");
	free(scratch);
	return j ? j : json_string("?");
}

/*
 * Name @id as a JSON string shared by every row and path that holds it
 * (@cache: one slot per name id, or NULL): a path repeats its ancestors'
 * names, so a tree D levels deep holds ~D^2/2 of them; one string each
 * made that memory, and the time to build it, 10x what the text is.
 * Return: a new reference.
 */
static json_t *jname(json_t **cache, const struct ana_result *res, uint32_t id)
{
	if (!cache || id >= res->nnames)
		return jstr(ana_name(res, id));
	if (!cache[id])
		cache[id] = jstr(ana_name(res, id));
	return json_incref(cache[id]);
}

json_t *ana_json_str(const char *s)
{
	return jstr(s);
}

/*
 * Names and domains of the JSON report as encoded JSON text (quotes and
 * escapes included), made once per id: a path repeats its ancestors'
 * names, so a tree D levels deep holds ~D^2/2 of them.
 */
struct jnames {
	char **name;   /* streamed: one per name id below res->nnames, or NULL (encoded on each use) */
	char *dom[64]; /* streamed: the first domains */
	json_t **jname; /* built: one string per name id below res->nnames, or NULL */
};

/* Writes *@slot as member @key (NULL: element) of streamed @o, encoding @s
 * into it first if empty (@slot NULL: encoded for this use only). */
static void jo_enc(struct ana_jo *o, const char *key, char **slot, const char *s)
{
	char *t = slot ? *slot : NULL;
	if (!t) {
		t = ana_json_encode(s);
		if (!t) {
			*o->err = 1;
			return;
		}
		if (slot)
			*slot = t;
	}
	jo_key(o, key);
	jo_put(o, t, strlen(t));
	if (!slot)
		free(t);
}

static void jo_name(struct ana_jo *o, const char *key, struct jnames *jn, const struct ana_result *res, uint32_t id)
{
	if (o->b)
		jo_enc(o, key, jn->name && id < res->nnames ? &jn->name[id] : NULL, ana_name(res, id));
	else
		jo_set(o, key, jname(jn->jname, res, id));
}

static void jo_domain(struct ana_jo *o, struct jnames *jn, const struct ana_result *res, uint32_t dom)
{
	const char *dn = pt_reader_domain(res->rd, dom);
	if (o->b)
		jo_enc(o, "domain", dom < 64 ? &jn->dom[dom] : NULL, dn ? dn : "");
	else
		jo_set(o, "domain", jstr(dn ? dn : ""));
}

static void jnames_free(struct jnames *jn, const struct ana_result *res)
{
	for (uint32_t i = 0; jn->name && i < res->nnames; i++)
		free(jn->name[i]);
	free(jn->name);
	for (int i = 0; i < 64; i++)
		free(jn->dom[i]);
}

/* The names of @node's call path in @t into the array writer @pa,
 * outermost first, at most its innermost ANA_PATH_MAX_NAMES (ana.h:
 * ana_json_path()). Returns the number of outer names left out. */
static uint32_t jo_path(struct ana_jo *pa, struct jnames *jn, const struct ana_result *res, const struct ana_tree *t,
			uint32_t node)
{
	uint32_t depth = t->n[node].depth, k = depth < ANA_PATH_MAX_NAMES ? depth : ANA_PATH_MAX_NAMES;
	uint32_t ids[ANA_PATH_MAX_NAMES];
	uint32_t x = node;
	for (uint32_t q = k; q > 0; x = t->n[x].parent) /* the innermost k names, outermost first */
		ids[--q] = t->n[x].id;
	for (uint32_t q = 0; q < k; q++)
		jo_name(pa, NULL, jn, res, ids[q]);
	return depth - k;
}

json_t *ana_json_path(const struct ana_result *res, json_t **names, const struct ana_tree *t, uint32_t node,
		      uint32_t *elided)
{
	int err = 0;
	struct jnames jn = { .jname = names };
	json_t *p = json_array();
	struct ana_jo pa = ana_jo_build(p, &err);
	uint32_t e = p ? jo_path(&pa, &jn, res, t, node) : 0;
	if (elided)
		*elided = e;
	if (err) {
		json_decref(p);
		return NULL;
	}
	return p;
}

/*
 * The members of one row of the JSON report (doc/analyzer-output.md §6)
 * into @r, streamed or built (struct ana_jo): the same keys and values
 * either way. @jn: the names' caches.
 */
static void jo_row(struct ana_jo *r, struct jnames *jn, const struct ana_result *res, const struct ana_tree *t,
		   uint32_t node, uint32_t id, const struct ana_agg *a)
{
	struct ana_row w;
	ana_row_compute(res, a, &w);
	jo_name(r, "name", jn, res, id);
	uint32_t dom = 0;
	ana_string(res, id, &dom);
	jo_domain(r, jn, res, dom);
	if (t) {
		struct ana_jo pa = ana_jo_child(r, "path", '[');
		const uint32_t elided = jo_path(&pa, jn, res, t, node);
		ana_jo_close(&pa, "]");
		if (elided)
			ana_jo_i64(r, "path_elided", elided);
		ana_jo_i64(r, "depth", t->n[node].depth);
	}
#define JI(k, v) ana_jo_u64(r, k, v)
#define JR(k, v) ana_jo_real(r, k, v) /* NaN std: null */
	JI("count", a->count);
	JI("total_ns", a->total_ns);
	JI("self_ns", a->self_ns);
	JR("share", w.share);
	JR("mean_ns", w.mean);
	JR("std_ns", w.std);
	JI("min_ns", a->min_ns);
	JI("max_ns", a->max_ns);
	JI("p50_ns", w.p50);
	JI("p90_ns", w.p90);
	JI("p99_ns", w.p99);
	JI("first_ns", a->first_ns);
	JI("first_start_ns", a->first_start_ns);
	JR("rest_mean_ns", w.rest_mean);
	JR("rest_std_ns", w.rest_std);
	JR("first_over_rest", w.first_over_rest);
	JI("read_bytes", a->metric_incl[ANA_READ]);
	JI("written_bytes", a->metric_incl[ANA_WRITTEN]);
	JI("flops", a->metric_incl[ANA_FLOPS]);
	JI("self_read_bytes", a->metric_self[ANA_READ]);
	JI("self_written_bytes", a->metric_self[ANA_WRITTEN]);
	JI("self_flops", a->metric_self[ANA_FLOPS]);
	JR("gb_per_s", w.gbps);
	JR("gflop_per_s", w.gflops);
	JR("flop_per_byte", w.intensity);
	for (int d = 0; d < ANA_DIRS; d++) {
		JI(xfer_bytes_key[d], ana_xfer_incl(a, d));
		JR(xfer_gbps_key[d], w.xfer_gbps[d]);
	}
	ana_jo_bool(r, "lossy", a->lossy > 0);
	if (res->saturated) /* on every row of a result with a saturated sum */
		ana_jo_bool(r, "saturated", ana_agg_saturated(a));
	if (res->has_gpu) { /* the same keys on every row of a trace with GPU records */
		static const struct ana_gpu none;
		const struct ana_gpu *g = a->gpu ? a->gpu : &none;
		const struct ana_gpu_dist *d = &g->self;
		JI("gpu_count", d->count);
		JI("gpu_total_ns", d->total_ns);
		JR("gpu_mean_ns", w.gpu_mean);
		JI("gpu_min_ns", d->min_ns);
		JI("gpu_max_ns", d->max_ns);
		JI("gpu_p50_ns", w.gpu_p50);
		JI("gpu_p99_ns", w.gpu_p99);
		JI("gpu_incl_count", g->incl_count);
		JI("gpu_incl_total_ns", g->incl_total_ns);
		JR("gpu_over_cpu", w.gpu_over_cpu);
		JR("gpu_launch_latency_mean_ns", d->count ? w.gpu_lat_mean : 0.0);
		ana_jo_i64(r, "gpu_launch_latency_min_ns", d->lat_min_ns); /* signed */
		ana_jo_i64(r, "gpu_launch_latency_max_ns", d->lat_max_ns);
		JI("gpu_early_starts", d->early);
		/* rates over GPU time and the time breakdown (§3.1): null where not available */
		JR("gpu_gb_per_s", w.gpu_gbps);
		JR("gpu_gflop_per_s", w.gpu_gflops);
		JR("gpu_self_gb_per_s", w.gpu_self_gbps);
		JR("gpu_self_gflop_per_s", w.gpu_self_gflops);
		for (int k = 0; k < ANA_DIRS; k++)
			JR(gpu_xfer_gbps_key[k], w.gpu_xfer_gbps[k]);
		JI("occupied_ns", w.occupied_ns);
		struct ana_jo bd = ana_jo_child(r, "time", '{');
		ana_jo_u64(&bd, "cpu_ns", w.bd_cpu_ns);
		ana_jo_u64(&bd, "gpu_ns", w.bd_gpu_ns);
		ana_jo_u64(&bd, "transfer_ns", w.bd_copy_ns);
		ana_jo_u64(&bd, "compute_ns", w.bd_compute_ns);
		ana_jo_u64(&bd, "launch_ns", w.bd_launch_ns);
		ana_jo_close(&bd, "}");
	}
#undef JI
#undef JR
	ana_mem_json_row(r, res, a); /* memory per section (ana_mem.c) */
	if (a->est && a->est->by_name) { /* §13: a filtered flat row is not extrapolated */
		ana_jo_u64(r, "sampled_recorded_count", a->est->rec_count);
	} else if (a->est) {
		struct ana_est_fig f;
		ana_est_figures(a, &f);
		struct ana_jo e = ana_jo_child(r, "estimate", '{');
		ana_jo_real(&e, "count", f.count);
		ana_jo_real(&e, "count_lo", f.count_lo); /* null: no interval */
		ana_jo_real(&e, "count_hi", f.count_hi);
		ana_jo_real(&e, "total_ns", f.total_ns);
		ana_jo_real(&e, "total_lo_ns", f.total_lo_ns);
		ana_jo_real(&e, "total_hi_ns", f.total_hi_ns);
		ana_jo_real(&e, "self_ns", f.self_ns);
		ana_jo_real(&e, "confidence", f.interval ? 0.95 : NAN);
		ana_jo_u64(&e, "sampled_requests", a->est->units);
		ana_jo_u64(&e, "recorded_count", a->est->rec_count);
		ana_jo_real(&e, "p_min", a->est->p_min);
		ana_jo_real(&e, "p_max", a->est->p_max);
		ana_jo_close(&e, "}");
	}
}

/* One row of the JSON report, streamed to @out (one line). */
static void jw_row(struct ana_obuf *out, struct jnames *jn, const struct ana_result *res, const struct ana_tree *t,
		   uint32_t node, uint32_t id, const struct ana_agg *a)
{
	struct ana_jo o = ana_jo_open(out, "{");
	jo_row(&o, jn, res, t, node, id, a);
	ana_jo_close(&o, "}");
}

json_t *ana_json_row(const struct ana_result *res, json_t **names, const struct ana_tree *t, uint32_t node,
		     uint32_t id, const struct ana_agg *a)
{
	int err = 0;
	struct jnames jn = { .jname = names };
	json_t *obj = json_object();
	struct ana_jo o = ana_jo_build(obj, &err);
	if (obj)
		jo_row(&o, &jn, res, t, node, id, a);
	if (err) {
		json_decref(obj);
		return NULL;
	}
	return obj;
}

#define JSET(o, k, v) json_object_set_new((o), (k), (v))
#define JINT(v) ana_json_u64(v)

static json_t *json_gpu(const struct ana_result *res)
{
	const struct ana_gpu_summary *g = &res->gpu;
	json_t *j = json_object();
	JSET(j, "launches", JINT(g->launches));
	JSET(j, "ranges", JINT(g->ranges));
	JSET(j, "paired", JINT(g->paired));
	JSET(j, "unmatched_launches", JINT(g->unmatched_launches));
	JSET(j, "unmatched_ranges", JINT(g->unmatched_ranges));
	JSET(j, "pending_peak", JINT(g->pending_peak));
	json_t *e = json_object();
	for (int k = 0; k < ANA_GPU_ERRC_N; k++) {
		char key[32];
		snprintf(key, sizeof(key), "%s", ana_gpu_errc_name((uint32_t)k + ANA_GPU_ERRC_FIRST));
		for (char *p = key; *p; p++)
			*p = *p == ' ' ? '_' : *p >= 'A' && *p <= 'Z' ? (char)(*p - 'A' + 'a') : *p;
		JSET(e, key, JINT(g->errors[k]));
	}
	JSET(j, "errors", e);
	JSET(j, "timing_off_reason", g->off_reason ? jstr(ana_name(res, g->off_reason)) : json_null());
	uint64_t wall = res->end_ns - res->start_ns;
	json_t *devs = json_array();
	for (size_t i = 0; i < g->ndev; i++) {
		const struct ana_gpu_device *d = &g->dev[i];
		json_t *o = json_object();
		JSET(o, "device", JINT(d->device));
		JSET(o, "ranges", JINT(d->ranges));
		JSET(o, "gpu_time_sum_ns", JINT(d->sum_ns));
		JSET(o, "busy_ns", JINT(d->busy_ns));
		JSET(o, "instrumented_gpu_busy", json_real(wall ? (double)d->busy_ns / (double)wall : 0.0));
		JSET(o, "streams", JINT(d->streams));
		JSET(o, "early_starts", JINT(d->lat.neg));
		JSET(o, "launch_latency_mean_ns", json_real(d->lat.w.mean));
		JSET(o, "launch_latency_min_ns", json_integer(d->lat.min_ns)); /* signed */
		JSET(o, "launch_latency_max_ns", json_integer(d->lat.max_ns));
		JSET(o, "launch_latency_p50_ns", json_integer(ana_slat_quantile(&d->lat, 0.50)));
		JSET(o, "launch_latency_p99_ns", json_integer(ana_slat_quantile(&d->lat, 0.99)));
		json_array_append_new(devs, o);
	}
	JSET(j, "devices", devs);
	return j;
}

static json_t *json_async(const struct ana_result *res)
{
	json_t *j = json_object();
	JSET(j, "unmatched_begins", JINT(res->async_unmatched_begins));
	JSET(j, "unmatched_ends", JINT(res->async_unmatched_ends));
	JSET(j, "pending_peak", JINT(res->async_pending_peak));
	json_t *rows = json_array();
	for (uint32_t id = 0; id < res->nasync; id++) {
		const struct ana_async *a = &res->async_by_name[id];
		if (!a->count)
			continue;
		json_t *o = json_object();
		JSET(o, "name", jstr(id ? ana_name(res, id) : "(unnamed)"));
		JSET(o, "count", JINT(a->count));
		JSET(o, "total_ns", JINT(a->total_ns));
		JSET(o, "mean_ns", json_real((double)a->total_ns / (double)a->count));
		JSET(o, "min_ns", JINT(a->min_ns));
		JSET(o, "max_ns", JINT(a->max_ns));
		JSET(o, "p50_ns", JINT(ana_hist_quantile(&a->hist, 0.50, a->count, a->min_ns, a->max_ns)));
		JSET(o, "p99_ns", JINT(ana_hist_quantile(&a->hist, 0.99, a->count, a->min_ns, a->max_ns)));
		json_array_append_new(rows, o);
	}
	JSET(j, "by_name", rows);
	return j;
}

static json_t *json_instants(const struct ana_result *res, const uint64_t *n, uint32_t nn)
{
	json_t *a = json_array();
	for (uint32_t id = 0; id < nn; id++) {
		if (!n[id])
			continue;
		json_t *o = json_object();
		JSET(o, "name", jstr(id ? ana_name(res, id) : "(unnamed)"));
		JSET(o, "count", JINT(n[id]));
		json_array_append_new(a, o);
	}
	return a;
}

/*
 * The JSON document is written as it is made, a row at a time: a row is
 * built, dumped and freed, so memory stays at one row's objects however
 * many call paths the trace has (the whole document built first took
 * 2.2 GB for 400,000 rows, 11x the analysis itself). jansson dumps every
 * value; only the punctuation between them is written here. Each row is
 * one line.
 */
struct jw {
	struct ana_obuf b;
};

static void jw_raw(struct jw *w, const char *s)
{
	ana_obuf_put(&w->b, s, strlen(s));
}

/* Dumps @v (a new reference, consumed; NULL = ENOMEM). */
static void jw_val(struct jw *w, json_t *v)
{
	ana_obuf_flush(&w->b);
	if (!v || ana_json_dumpf(v, w->b.out, JSON_ENCODE_ANY | JSON_REAL_PRECISION(12)))
		w->b.err = 1;
	json_decref(v);
}

/* Before a member or an element: a comma unless *@first, a line break,
 * @indent spaces. */
static void jw_sep(struct jw *w, const char *indent, bool *first)
{
	jw_raw(w, *first ? "\n" : ",\n");
	*first = false;
	jw_raw(w, indent);
}

/* `"key": ` of a member, after jw_sep(). */
static void jw_key(struct jw *w, const char *key, const char *indent, bool *first)
{
	jw_sep(w, indent, first);
	jw_val(w, json_string(key));
	jw_raw(w, ": ");
}

/* Every member of object @o (consumed), as keys of the object being written. */
static void jw_members(struct jw *w, json_t *o, const char *indent, bool *first)
{
	const char *k;
	json_t *v;
	if (!o) {
		w->b.err = 1;
		return;
	}
	json_object_foreach(o, k, v) {
		jw_key(w, k, indent, first);
		jw_val(w, json_incref(v));
	}
	json_decref(o);
}

/* The end of an array or object whose elements were indented by @indent
 * (one space deeper than its own line): @close alone when it is empty. */
static void jw_close(struct jw *w, const char *indent, bool first, const char *close)
{
	if (!first) {
		jw_raw(w, "\n");
		jw_raw(w, indent + 1);
	}
	jw_raw(w, close);
}

static void sketch_bucket(void *arg, uint32_t idx, uint32_t count)
{
	struct ana_jo *h = arg;
	ana_jo_u64(h, NULL, idx);
	ana_jo_u64(h, NULL, count);
}

/* A merged-tree row's mergeable sketch (doc/analyzer-output.md §12):
 * "sketch": { "hist": [bucket, count, ...], "s1": "...", "s2": "..." }. */
static void jo_sketch(struct ana_jo *r, const struct ana_agg *a)
{
	char b1[40], b2[40];
	struct ana_jo sk = ana_jo_child(r, "sketch", '{');
	struct ana_jo h = ana_jo_child(&sk, "hist", '[');
	ana_hist_each(&a->hist, sketch_bucket, &h);
	ana_jo_close(&h, "]");
	ana_jo_str(&sk, "s1", ana_u128_str(a->all.s1, b1));
	ana_jo_str(&sk, "s2", ana_u128_str(a->all.s2, b2));
	ana_jo_close(&sk, "}");
}

/* @sketch: each row carries its mergeable sketch (the merged tree's rows) */
static void jw_tree(struct jw *w, const struct ana_result *res, struct jnames *names, const struct ana_tree *t,
		    const char *indent, bool sketch)
{
	bool first = true;
	jw_raw(w, "[");
	for (uint32_t i = 1; i < t->count && !w->b.err; i++)
		if (t->n[i].agg.count) {
			jw_sep(w, indent, &first);
			struct ana_jo o = ana_jo_open(&w->b, "{");
			jo_row(&o, names, res, t, i, t->n[i].id, &t->n[i].agg);
			if (sketch)
				jo_sketch(&o, &t->n[i].agg);
			ana_jo_close(&o, "}");
		}
	jw_close(w, indent, first, "]");
}

static void jw_flat(struct jw *w, const struct ana_result *res, struct jnames *names, const struct ana_agg *flat,
		    uint32_t nflat, const char *indent)
{
	bool first = true;
	jw_raw(w, "[");
	for (uint32_t id = 0; id < nflat && !w->b.err; id++)
		if (flat[id].count) {
			jw_sep(w, indent, &first);
			jw_row(&w->b, names, res, NULL, 0, id, &flat[id]);
		}
	jw_close(w, indent, first, "]");
}

json_t *ana_json_trace(const struct ana_result *res)
{
	const struct pt_trace_info *in = pt_reader_info(res->rd);
	json_t *tr = json_object();
	if (!tr)
		return NULL;
	json_object_set_new(tr, "process", jstr(in->process_name));
	json_object_set_new(tr, "pid", json_integer(in->pid));
	json_object_set_new(tr, "host", jstr(in->host));
	json_object_set_new(tr, "cmdline", jstr(in->cmdline));
	if (in->job[0]) /* the batch job and rank (doc/analyzer-output.md) */
		json_object_set_new(tr, "job", jstr(in->job));
	if (in->has_rank)
		json_object_set_new(tr, "rank", json_integer(in->rank));
	if (in->run_id) { /* a rotated trace (doc/analyzer-output.md): which parts were read */
		char id[24];
		snprintf(id, sizeof(id), "%016" PRIx64, in->run_id);
		json_t *ro = json_object();
		json_object_set_new(ro, "run_id", json_string(id));
		json_object_set_new(ro, "first_part", json_integer(in->part));
		json_object_set_new(ro, "last_part", json_integer(in->last_part));
		json_object_set_new(ro, "files", json_integer(in->parts));
		if (res->rotate_failures) {
			json_object_set_new(ro, "failed", ana_json_u64(res->rotate_failures));
			json_object_set_new(ro, "last_errno", json_integer(res->rotate_errno));
		}
		json_object_set_new(tr, "rotation", ro);
	}
	json_object_set_new(tr, "closed", json_boolean(in->closed));
	json_object_set_new(tr, "start_realtime_ns", ana_json_u64(in->start_real_ns));
	json_object_set_new(tr, "start_ns", ana_json_u64(res->start_ns));
	json_object_set_new(tr, "wall_span_ns", ana_json_u64((res->end_ns - res->start_ns)));
	json_object_set_new(tr, "thread_span_sum_ns", ana_json_u64(res->thread_span_sum_ns));
	json_object_set_new(tr, "sections", ana_json_u64(res->sections));
	json_object_set_new(tr, "records", ana_json_u64(res->records));
	json_object_set_new(tr, "lost_records", ana_json_u64(res->lost_records));
	json_object_set_new(tr, "lost_sections", ana_json_u64(res->lost_sections));
	json_object_set_new(tr, "unmatched_ends", ana_json_u64(res->unmatched_ends));
	json_object_set_new(tr, "open_at_end", ana_json_u64(res->open_at_end));
	if (res->window) { /* a window of a longer run (doc/analyzer-output.md) */
		json_t *w = json_object();
		json_object_set_new(w, "kind", json_string(res->flight ? "flight" : in->run_id ? "rotated" : "snapshot"));
		json_object_set_new(w, "began_before", ana_json_u64(res->before_window));
		if (res->flight) {
			json_object_set_new(w, "area_bytes", ana_json_u64(in->flight_bytes));
			json_object_set_new(w, "laps", ana_json_u64(in->laps));
			json_object_set_new(w, "overwritten_bytes", ana_json_u64(in->overwritten_bytes));
		}
		json_object_set_new(tr, "window", w);
	}
	if (res->snapshot_failures || res->triggers_limited) {
		json_t *sn = json_object();
		json_object_set_new(sn, "failed", ana_json_u64(res->snapshot_failures));
		if (res->snapshot_failures)
			json_object_set_new(sn, "last_errno", json_integer(res->snapshot_errno));
		json_object_set_new(sn, "triggers_limited", ana_json_u64(res->triggers_limited));
		json_object_set_new(tr, "snapshots", sn);
	}
	if (res->sampling.requests || res->sampling.invalid || res->sampling.orphan) { /* §13 */
		const struct ana_sampling *sm = &res->sampling;
		json_t *o = json_object();
		json_object_set_new(o, "requests", ana_json_u64(sm->requests));
		json_object_set_new(o, "estimated_requests", json_real(sm->est_requests));
		json_object_set_new(o, "p_min", sm->requests ? json_real(sm->p_min) : json_null());
		json_object_set_new(o, "p_max", sm->requests ? json_real(sm->p_max) : json_null());
		json_object_set_new(o, "nested", ana_json_u64(sm->nested));
		json_object_set_new(o, "invalid_counters", ana_json_u64(sm->invalid));
		json_object_set_new(o, "stray_counters", ana_json_u64(sm->orphan));
		json_object_set_new(o, "confidence", json_real(0.95));
		json_object_set_new(o, "method", json_string("Horvitz-Thompson, Poisson sampling of requests"));
		json_object_set_new(tr, "sampling", o);
	}
	if (res->too_deep)
		json_object_set_new(tr, "too_deep", ana_json_u64(res->too_deep));
	if (res->saturated)
		json_object_set_new(tr, "saturated", json_true());
	json_object_set_new(tr, "recorder_errors", ana_json_u64(res->misuse_errors));
	json_object_set_new(tr, "percentile_relative_error", json_real(ANA_HIST_REL_ERROR));
	json_object_set_new(tr, "torn_tail", json_boolean(res->torn_tail));
	json_object_set_new(tr, "corrupt", json_boolean(res->corrupt));
	json_t *probs = json_array();
	for (size_t i = 0; i < pt_reader_problem_count(res->rd); i++) {
		uint64_t off;
		const char *m = pt_reader_problem(res->rd, i, &off);
		json_t *p = json_object();
		json_object_set_new(p, "offset", ana_json_u64(off));
		json_object_set_new(p, "message", jstr(m));
		json_array_append_new(probs, p);
	}
	json_object_set_new(tr, "problems", probs);
	return tr;
}

int ana_write_json(FILE *out, const struct ana_result *res, const struct ana_report_opts *o)
{
	struct jw w = { .b = { .out = out } };
	bool first = true;
	struct jnames jn = { .name = calloc(res->nnames ? res->nnames : 1, sizeof(char *)) }; /* NULL: not shared */
	struct jnames *names = &jn;
	jw_raw(&w, "{");
	jw_key(&w, "schema", " ", &first);
	jw_val(&w, json_string("ptanalyze-report/1"));
	json_t *tr = ana_json_trace(res);
	jw_key(&w, "trace", " ", &first);
	jw_val(&w, tr);
	jw_key(&w, "threads", " ", &first);
	jw_raw(&w, "[");
	bool tfirst = true;
	for (size_t i = 0; i < res->nthreads && !w.b.err; i++) {
		const struct ana_thread *t = &res->threads[i];
		json_t *j = json_object();
		json_object_set_new(j, "index", json_integer(t->index));
		json_object_set_new(j, "tid", json_integer(t->tid));
		json_object_set_new(j, "name", jstr(t->name));
		json_object_set_new(j, "span_ns", ana_json_u64((t->last_ns - t->first_ns)));
		json_object_set_new(j, "sections", ana_json_u64(t->sections));
		json_object_set_new(j, "records", ana_json_u64(t->records));
		json_object_set_new(j, "lost_records", ana_json_u64(t->lost_records));
		json_object_set_new(j, "unattributed_read_bytes", ana_json_u64(t->unattributed[ANA_READ]));
		json_object_set_new(j, "unattributed_written_bytes",
				    ana_json_u64(t->unattributed[ANA_WRITTEN]));
		json_object_set_new(j, "unattributed_flops", ana_json_u64(t->unattributed[ANA_FLOPS]));
		const uint64_t *xc = t->unattributed_xfer_count;
		if (xc[0] | xc[1] | xc[2] | xc[3]) { /* absent when none (older readers unaffected) */
			json_t *ux = json_object();
			for (int d = 0; d < ANA_DIRS; d++) {
				json_object_set_new(ux, xfer_bytes_key[d], ana_json_u64(t->unattributed_xfer[d]));
				json_object_set_new(ux, xfer_count_key[d], ana_json_u64(xc[d]));
			}
			json_object_set_new(j, "unattributed_transfers", ux);
		}
		jw_sep(&w, "  ", &tfirst);
		jw_raw(&w, "{");
		bool kfirst = true;
		jw_members(&w, j, "   ", &kfirst);
		if (!o || !o->no_thread_rows) {
			jw_key(&w, "tree", "   ", &kfirst);
			jw_tree(&w, res, names, &t->tree, "    ", false);
			jw_key(&w, "flat", "   ", &kfirst);
			jw_flat(&w, res, names, res->by_name_thread[i], res->threads[i].nflat, "    ");
		}
		json_t *cs = json_array();
		for (size_t k = 0; k < t->ncounters; k++) {
			json_t *c = json_object();
			json_object_set_new(c, "name", jstr(ana_name(res, t->counters[k].id)));
			json_object_set_new(c, "samples", ana_json_u64(t->counters[k].samples));
			json_object_set_new(c, "last", json_integer(t->counters[k].last));
			json_object_set_new(c, "min", json_integer(t->counters[k].min));
			json_object_set_new(c, "max", json_integer(t->counters[k].max));
			if (ana_counter_is_bytes(res, t, t->counters[k].id))
				json_object_set_new(c, "unit", json_string("bytes"));
			json_array_append_new(cs, c);
		}
		jw_key(&w, "counters", "   ", &kfirst);
		jw_val(&w, cs);
		if (res->has_instants) {
			jw_key(&w, "instants", "   ", &kfirst);
			jw_val(&w, json_instants(res, t->instants, t->ninstants));
		}
		jw_close(&w, "   ", kfirst, "}");
	}
	jw_close(&w, "  ", tfirst, "]");
	jw_key(&w, "tree", " ", &first);
	jw_tree(&w, res, names, &res->merged, "  ", true);
	jw_key(&w, "flat", " ", &first);
	jw_flat(&w, res, names, res->by_name, res->nnames, "  ");
	if (res->nmem) {
		jw_key(&w, "memory_series", " ", &first);
		jw_val(&w, ana_mem_json_series(res));
	}
	if (res->has_gpu) {
		jw_key(&w, "gpu", " ", &first);
		jw_val(&w, json_gpu(res));
	}
	if (res->has_async) {
		jw_key(&w, "async", " ", &first);
		jw_val(&w, json_async(res));
	}
	if (res->has_instants) {
		jw_key(&w, "instants", " ", &first);
		jw_val(&w, json_instants(res, res->instants_by_name, res->ninstants));
	}
	json_t *proc = ana_proc_json(res); /* NULL: no process counters, no key */
	if (proc) {
		jw_key(&w, "process", " ", &first);
		jw_val(&w, proc);
	}
	jw_close(&w, " ", first, "}\n");
	ana_obuf_flush(&w.b);
	int rc = w.b.err ? -1 : 0;
	jnames_free(&jn, res);
	return rc;
}
