/*
 * analyzer/ana_multi.c - many traces as one view (ana_multi.h): every call
 * path of every trace, matched by its path string, its figures summed and
 * their spread across the traces.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/ana_multi.h"

/* One (path, trace, node) of the build, sorted by path then trace. */
struct entry {
	char *path;
	uint32_t trace, node;
};

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	int c = strcmp(x->path, y->path);
	return c ? c : (x->trace > y->trace) - (x->trace < y->trace);
}

/* Path order: a parent's path is a prefix of its children's, so plain string order puts a parent
 * before its children (not always right before: "a b" sorts between "a" and "a;b"). */
static int cmp_row(const void *a, const void *b)
{
	return strcmp(((const struct ana_multi_row *)a)->path, ((const struct ana_multi_row *)b)->path);
}

int ana_multi_build(const struct ana_result *const *res, size_t n, struct ana_multi *out)
{
	memset(out, 0, sizeof(*out));
	out->ntraces = n;
	size_t ne = 0, ce = 0;
	struct entry *e = NULL;
	char *buf = NULL;
	size_t cap = 0;
	int rc = 0;
	for (size_t t = 0; t < n && rc == 0; t++) {
		ANA_SAT_ADD(out->span_sum_ns, res[t]->thread_span_sum_ns);
		for (uint32_t k = 1; k < res[t]->merged.count && rc == 0; k++) {
			if (!res[t]->merged.n[k].agg.count)
				continue;
			const char *p = ana_path_of(res[t], &res[t]->merged, k, &buf, &cap);
			if (ne == ce) {
				size_t nc = ce ? 2 * ce : 256;
				struct entry *g = realloc(e, nc * sizeof(*g));
				if (!g) {
					rc = -ENOMEM;
					break;
				}
				e = g;
				ce = nc;
			}
			if (!p || !(e[ne].path = strdup(p))) {
				rc = -ENOMEM;
				break;
			}
			e[ne].trace = (uint32_t)t;
			e[ne].node = k;
			ne++;
		}
	}
	free(buf);
	if (rc == 0 && ne)
		qsort(e, ne, sizeof(*e), cmp_entry);
	out->rows = rc == 0 ? calloc(ne ? ne : 1, sizeof(*out->rows)) : NULL;
	if (!out->rows)
		rc = -ENOMEM;
	uint64_t rng = 0x6d756c7469; /* reservoir merges (read by no output of this view) */
	for (size_t i = 0; rc == 0 && i < ne;) {
		struct ana_multi_row *r = &out->rows[out->nrows++];
		size_t j = i;
		r->path = e[i].path;
		e[i].path = NULL; /* moved */
		r->min_total_ns = UINT64_MAX;
		for (; j < ne && (j == i || strcmp(e[j].path, r->path) == 0); j++) {
			const struct ana_node *nd = &res[e[j].trace]->merged.n[e[j].node];
			ana_agg_merge(&r->agg, &nd->agg, &rng);
			r->depth = nd->depth;
			ANA_SAT_ADD(r->count, nd->agg.count);
			ANA_SAT_ADD(r->total_ns, nd->agg.total_ns);
			ANA_SAT_ADD(r->self_ns, nd->agg.self_ns);
			r->traces++;
			if (nd->agg.total_ns > r->max_total_ns || r->traces == 1) {
				r->max_total_ns = nd->agg.total_ns;
				r->max_trace = e[j].trace;
			}
			if (nd->agg.total_ns < r->min_total_ns)
				r->min_total_ns = nd->agg.total_ns;
		}
		r->max_over_mean = r->total_ns ? (double)r->max_total_ns * r->traces / (double)r->total_ns : NAN;
		i = j;
	}
	for (size_t i = 0; i < ne; i++)
		free(e[i].path);
	free(e);
	if (rc == 0 && ana_nomem_take()) /* a histogram or GPU part that could not be merged */
		rc = -ENOMEM;
	if (rc) {
		ana_multi_free(out);
		return rc;
	}
	qsort(out->rows, out->nrows, sizeof(*out->rows), cmp_row);
	return 0;
}

void ana_multi_figures(const struct ana_multi_row *r, struct ana_multi_fig *f)
{
	const struct ana_agg *a = &r->agg;
	memset(f, 0, sizeof(*f));
	if (!a->count)
		return;
	f->mean = ana_moments_mean(&a->all, a->count);
	f->std = ana_moments_std(&a->all, a->count);
	f->p50 = ana_hist_quantile(&a->hist, 0.50, a->count, a->min_ns, a->max_ns);
	f->p90 = ana_hist_quantile(&a->hist, 0.90, a->count, a->min_ns, a->max_ns);
	f->p99 = ana_hist_quantile(&a->hist, 0.99, a->count, a->min_ns, a->max_ns);
	const double t = (double)a->total_ns; /* bytes / ns = GB/s, as a trace's rows (§3) */
	f->gbps = t > 0 ? (double)(a->metric_incl[ANA_READ] + a->metric_incl[ANA_WRITTEN]) / t : 0.0;
	f->gflops = t > 0 ? (double)a->metric_incl[ANA_FLOPS] / t : 0.0;
}

void ana_multi_free(struct ana_multi *m)
{
	for (size_t i = 0; m->rows && i < m->nrows; i++) {
		free(m->rows[i].path);
		ana_agg_free(&m->rows[i].agg);
	}
	free(m->rows);
	memset(m, 0, sizeof(*m));
}

/* "rank 3" / "job 1234 rank 3" / "" for trace @res, in @b. */
static const char *identity(const struct ana_result *res, char *b, size_t n)
{
	const struct pt_trace_info *in = pt_reader_info(res->rd);
	b[0] = 0;
	if (in->job[0] && in->has_rank)
		snprintf(b, n, "job %s rank %" PRIu32, ana_text_safe(in->job), in->rank);
	else if (in->job[0])
		snprintf(b, n, "job %s", ana_text_safe(in->job));
	else if (in->has_rank)
		snprintf(b, n, "rank %" PRIu32, in->rank);
	return b;
}

static const struct ana_multi_row *sort_rows; /* qsort has no context argument */

static int cmp_by_total(const void *a, const void *b)
{
	const struct ana_multi_row *x = &sort_rows[*(const size_t *)a], *y = &sort_rows[*(const size_t *)b];
	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	return strcmp(x->path, y->path);
}

void ana_multi_text(FILE *out, const struct ana_multi *m, const struct ana_result *const *res,
		    const char *const *files, int top)
{
	char a[32], b[32], id[192];
	fprintf(out, "traces: %zu, analyzed apart; paths matched by their names (doc/analyzer-output.md §12)\n",
		m->ntraces);
	for (size_t t = 0; t < m->ntraces; t++) {
		const struct pt_trace_info *in = pt_reader_info(res[t]->rd);
		fprintf(out, "  [%zu] %s  %s pid %" PRIu32 "%s%s  threads' span %s\n", t, ana_text_safe(files[t]),
			ana_text_safe(in->process_name), in->pid, identity(res[t], id, sizeof(id))[0] ? "  " : "", id,
			ana_fmt_dur(a, sizeof(a), (double)res[t]->thread_span_sum_ns));
	}
	fprintf(out, "paths: %zu\n", m->nrows);
	if (!m->nrows)
		return;
	size_t *idx = malloc(m->nrows * sizeof(*idx));
	if (!idx) {
		fprintf(out, "(rows not printed: out of memory)\n");
		return;
	}
	for (size_t i = 0; i < m->nrows; i++)
		idx[i] = i;
	sort_rows = m->rows;
	qsort(idx, m->nrows, sizeof(*idx), cmp_by_total);
	const size_t shown = top > 0 && (size_t)top < m->nrows ? (size_t)top : top > 0 ? m->nrows
											: m->nrows < 20 ? m->nrows : 20;
	fprintf(out, "\n%12s %12s %7s %10s %10s %10s %7s %9s  %-28s path\n", "total", "count", "share", "mean", "p50",
		"p99", "traces", "max/mean", "slowest (its total)");
	for (size_t j = 0; j < shown; j++) {
		const struct ana_multi_row *r = &m->rows[idx[j]];
		char slow[288], mean[32], p50[32], p99[32];
		struct ana_multi_fig f;
		ana_multi_figures(r, &f);
		snprintf(slow, sizeof(slow), "[%" PRIu32 "]%s%s (%s)", r->max_trace,
			 identity(res[r->max_trace], id, sizeof(id))[0] ? " " : "", id,
			 ana_fmt_dur(b, sizeof(b), (double)r->max_total_ns));
		fprintf(out, "%12s %12" PRIu64 " %6.1f%% %10s %10s %10s %7" PRIu32 " %9.3f  %-28s %s\n",
			ana_fmt_dur(a, sizeof(a), (double)r->total_ns), r->count,
			m->span_sum_ns ? 100.0 * (double)r->total_ns / (double)m->span_sum_ns : 0.0,
			ana_fmt_dur(mean, sizeof(mean), f.mean), ana_fmt_dur(p50, sizeof(p50), (double)f.p50),
			ana_fmt_dur(p99, sizeof(p99), (double)f.p99), r->traces, r->max_over_mean, slow,
			ana_text_safe(r->path));
	}
	if (shown < m->nrows)
		fprintf(out, "... and %zu more paths (--top, or --json for all)\n", m->nrows - shown);
	free(idx);
}

int ana_multi_json(FILE *out, const struct ana_multi *m, const struct ana_result *const *res,
		   const char *const *files)
{
	struct ana_jbuf b = { .out = out };
	struct ana_jo root = ana_jo_open(&b, "{");
	ana_jo_str(&root, "schema", "ptanalyze-multi/2");
	ana_jo_u64(&root, "span_sum_ns", m->span_sum_ns);
	struct ana_jo tr = ana_jo_child(&root, "traces", '[');
	for (size_t t = 0; t < m->ntraces; t++) {
		const struct pt_trace_info *in = pt_reader_info(res[t]->rd);
		struct ana_jo o = ana_jo_child(&tr, NULL, '{');
		ana_jo_str(&o, "file", files[t]);
		ana_jo_str(&o, "process", in->process_name);
		ana_jo_u64(&o, "pid", in->pid);
		if (in->job[0])
			ana_jo_str(&o, "job", in->job);
		else
			ana_jo_null(&o, "job");
		if (in->has_rank)
			ana_jo_u64(&o, "rank", in->rank);
		else
			ana_jo_null(&o, "rank");
		ana_jo_u64(&o, "thread_span_sum_ns", res[t]->thread_span_sum_ns);
		ana_jo_close(&o, "}");
	}
	ana_jo_close(&tr, "]");
	struct ana_jo rows = ana_jo_child(&root, "rows", '[');
	for (size_t i = 0; i < m->nrows; i++) {
		const struct ana_multi_row *r = &m->rows[i];
		struct ana_jo o = ana_jo_child(&rows, NULL, '{');
		ana_jo_str(&o, "path", r->path);
		ana_jo_u64(&o, "depth", r->depth);
		ana_jo_u64(&o, "count", r->count);
		ana_jo_u64(&o, "total_ns", r->total_ns);
		ana_jo_u64(&o, "self_ns", r->self_ns);
		ana_jo_u64(&o, "traces", r->traces);
		ana_jo_u64(&o, "max_total_ns", r->max_total_ns);
		ana_jo_u64(&o, "min_total_ns", r->min_total_ns);
		ana_jo_u64(&o, "slowest_trace", r->max_trace);
		ana_jo_real(&o, "max_over_mean", r->max_over_mean);
		struct ana_multi_fig f;
		ana_multi_figures(r, &f);
		const struct ana_agg *g = &r->agg;
		ana_jo_real(&o, "mean_ns", f.mean);
		ana_jo_real(&o, "std_ns", f.std);
		ana_jo_u64(&o, "min_ns", g->min_ns);
		ana_jo_u64(&o, "max_ns", g->max_ns);
		ana_jo_u64(&o, "p50_ns", f.p50);
		ana_jo_u64(&o, "p90_ns", f.p90);
		ana_jo_u64(&o, "p99_ns", f.p99);
		ana_jo_u64(&o, "read_bytes", g->metric_incl[ANA_READ]);
		ana_jo_u64(&o, "written_bytes", g->metric_incl[ANA_WRITTEN]);
		ana_jo_u64(&o, "flops", g->metric_incl[ANA_FLOPS]);
		ana_jo_real(&o, "gb_per_s", f.gbps);
		ana_jo_real(&o, "gflop_per_s", f.gflops);
		ana_jo_u64(&o, "gpu_count", g->gpu ? g->gpu->self.count : 0);
		ana_jo_u64(&o, "gpu_total_ns", g->gpu ? g->gpu->self.total_ns : 0);
		ana_jo_close(&o, "}");
	}
	ana_jo_close(&rows, "]");
	ana_jo_close(&root, "}\n");
	ana_jbuf_flush(&b);
	return b.err || fflush(out) ? -1 : 0;
}
