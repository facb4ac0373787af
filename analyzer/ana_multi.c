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

int ana_multi_build(const struct ana_multi_src *src, size_t n, struct ana_multi *out)
{
	memset(out, 0, sizeof(*out));
	out->ntraces = n;
	size_t ne = 0, ce = 0;
	struct entry *e = NULL;
	int rc = 0;
	for (size_t t = 0; t < n && rc == 0; t++) {
		ANA_SAT_ADD(out->span_sum_ns, src[t].span_sum_ns);
		for (uint32_t k = 0; k < src[t].npaths && rc == 0; k++) {
			if (!src[t].agg[k]->count)
				continue;
			const char *p = src[t].path[k];
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
		uint64_t spread_sum = 0; /* the totals the spread is over (estimated where sampled) */
		for (; j < ne && (j == i || strcmp(e[j].path, r->path) == 0); j++) {
			const struct ana_multi_src *sj = &src[e[j].trace];
			const struct ana_agg *ag = sj->agg[e[j].node];
			ana_agg_merge(&r->agg, ag, &rng);
			r->depth = sj->depth[e[j].node];
			ANA_SAT_ADD(r->count, ag->count);
			ANA_SAT_ADD(r->total_ns, ag->total_ns);
			ANA_SAT_ADD(r->self_ns, ag->self_ns);
			r->traces++;
			/* a sampled trace's share of the path is its estimate (§13) */
			const bool est = !isnan(sj->est_count[e[j].node]);
			const double ec = est ? sj->est_count[e[j].node] : (double)ag->count;
			const double et = est ? sj->est_total_ns[e[j].node] : (double)ag->total_ns;
			const uint64_t t = est ? ana_sat_u64(et + 0.5) : ag->total_ns;
			r->sampled |= est;
			r->est_count += ec;
			r->est_total_ns += et;
			if (t > r->max_total_ns || r->traces == 1) {
				r->max_total_ns = t;
				r->max_trace = e[j].trace;
			}
			if (t < r->min_total_ns)
				r->min_total_ns = t;
			ANA_SAT_ADD(spread_sum, t);
		}
		r->max_over_mean = spread_sum ? (double)r->max_total_ns * r->traces / (double)spread_sum : NAN;
		if (!r->sampled)
			r->est_count = r->est_total_ns = NAN;
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

void ana_multi_free(struct ana_multi *m)
{
	for (size_t i = 0; m->rows && i < m->nrows; i++) {
		free(m->rows[i].path);
		ana_agg_free(&m->rows[i].agg);
	}
	free(m->rows);
	memset(m, 0, sizeof(*m));
}

/* "rank 3" / "job 1234 rank 3" / "" for trace @s, in @b. */
static const char *identity(const struct ana_multi_src *s, char *b, size_t n)
{
	b[0] = 0;
	if (s->job[0] && s->has_rank)
		snprintf(b, n, "job %s rank %" PRIu32, ana_text_safe(s->job), s->rank);
	else if (s->job[0])
		snprintf(b, n, "job %s", ana_text_safe(s->job));
	else if (s->has_rank)
		snprintf(b, n, "rank %" PRIu32, s->rank);
	return b;
}

static const struct ana_multi_row *sort_rows; /* qsort has no context argument */

/* The total a row is ranked and shown by: its estimate inside sampled requests (§13). */
static double row_total(const struct ana_multi_row *r)
{
	return r->sampled ? r->est_total_ns : (double)r->total_ns;
}

static int cmp_by_total(const void *a, const void *b)
{
	const struct ana_multi_row *x = &sort_rows[*(const size_t *)a], *y = &sort_rows[*(const size_t *)b];
	const double tx = row_total(x), ty = row_total(y);
	if (tx != ty)
		return tx < ty ? 1 : -1;
	return strcmp(x->path, y->path);
}

void ana_multi_text(FILE *out, const struct ana_multi *m, const struct ana_multi_src *src, int top)
{
	char a[32], b[32], id[192];
	fprintf(out, "traces: %zu, analyzed apart; paths matched by their names (doc/analyzer-output.md §12)\n",
		m->ntraces);
	for (size_t t = 0; t < m->ntraces; t++)
		fprintf(out, "  [%zu] %s  %s pid %" PRIu32 "%s%s  threads' span %s\n", t, ana_text_safe(src[t].file),
			ana_text_safe(src[t].process), src[t].pid, identity(&src[t], id, sizeof(id))[0] ? "  " : "", id,
			ana_fmt_dur(a, sizeof(a), (double)src[t].span_sum_ns));
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
	bool any_sampled = false;
	fprintf(out, "\n%12s %12s %7s %10s %10s %10s %7s %9s  %-28s path\n", "total", "count", "share", "mean", "p50",
		"p99", "traces", "max/mean", "slowest (its total)");
	for (size_t j = 0; j < shown; j++) {
		const struct ana_multi_row *r = &m->rows[idx[j]];
		char slow[288], mean[32], p50[32], p99[32];
		struct ana_row f;
		ana_row_stats(&r->agg, &f);
		snprintf(slow, sizeof(slow), "[%" PRIu32 "]%s%s (%s)", r->max_trace,
			 identity(&src[r->max_trace], id, sizeof(id))[0] ? " " : "", id,
			 ana_fmt_dur(b, sizeof(b), (double)r->max_total_ns));
		char tot[40], cnt[40];
		if (r->sampled) { /* estimates (§13): marked */
			snprintf(tot, sizeof(tot), "~%s", ana_fmt_dur(a, sizeof(a), r->est_total_ns));
			snprintf(cnt, sizeof(cnt), "~%.0f", r->est_count);
			any_sampled = true;
		} else {
			snprintf(tot, sizeof(tot), "%s", ana_fmt_dur(a, sizeof(a), (double)r->total_ns));
			snprintf(cnt, sizeof(cnt), "%" PRIu64, r->count);
		}
		const double shown_ns = row_total(r);
		fprintf(out, "%12s %12s %6.1f%% %10s %10s %10s %7" PRIu32 " %9.3f  %-28s %s\n", tot, cnt,
			m->span_sum_ns ? 100.0 * shown_ns / (double)m->span_sum_ns : 0.0,
			ana_fmt_dur(mean, sizeof(mean), f.mean), ana_fmt_dur(p50, sizeof(p50), (double)f.p50),
			ana_fmt_dur(p99, sizeof(p99), (double)f.p99), r->traces, r->max_over_mean, slow,
			ana_text_safe(r->path));
	}
	if (shown < m->nrows)
		fprintf(out, "... and %zu more paths (--top, or --json for all)\n", m->nrows - shown);
	if (any_sampled)
		fprintf(out, "~: inside sampled requests in some trace: total and count are Horvitz-Thompson estimates "
			     "(doc/analyzer-output.md §13);\n   mean and percentiles are over the recorded calls\n");
	free(idx);
}

int ana_multi_json(FILE *out, const struct ana_multi *m, const struct ana_multi_src *src)
{
	struct ana_obuf b = { .out = out };
	struct ana_jo root = ana_jo_open(&b, "{");
	ana_jo_str(&root, "schema", "ptanalyze-multi/2");
	ana_jo_u64(&root, "span_sum_ns", m->span_sum_ns);
	struct ana_jo tr = ana_jo_child(&root, "traces", '[');
	for (size_t t = 0; t < m->ntraces; t++) {
		const struct ana_multi_src *in = &src[t];
		struct ana_jo o = ana_jo_child(&tr, NULL, '{');
		ana_jo_str(&o, "file", in->file);
		ana_jo_str(&o, "process", in->process);
		ana_jo_u64(&o, "pid", in->pid);
		if (in->job[0])
			ana_jo_str(&o, "job", in->job);
		else
			ana_jo_null(&o, "job");
		if (in->has_rank)
			ana_jo_u64(&o, "rank", in->rank);
		else
			ana_jo_null(&o, "rank");
		ana_jo_u64(&o, "thread_span_sum_ns", in->span_sum_ns);
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
		struct ana_row f;
		ana_row_stats(&r->agg, &f);
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
		ana_jo_bool(&o, "sampled", r->sampled);
		ana_jo_real(&o, "est_count", r->est_count); /* null when not sampled */
		ana_jo_real(&o, "est_total_ns", r->est_total_ns);
		ana_jo_close(&o, "}");
	}
	ana_jo_close(&rows, "]");
	ana_jo_close(&root, "}\n");
	ana_obuf_flush(&b);
	return b.err || fflush(out) ? -1 : 0;
}

/* ==== Sources: an analyzed trace, or a JSON report with sketches ==== */

void ana_multi_src_free(struct ana_multi_src *s)
{
	for (size_t k = 0; s->path && k < s->npaths; k++)
		free(s->path[k]);
	for (size_t k = 0; s->own && k < s->npaths; k++)
		ana_agg_free(&s->own[k]);
	free(s->path);
	free(s->depth);
	free(s->agg);
	free(s->est_count);
	free(s->est_total_ns);
	free(s->own);
	free(s->file);
	free(s->process);
	free(s->job);
	memset(s, 0, sizeof(*s));
}

/* The arrays of @s for @n paths (zeroed), and its strings; -ENOMEM (nothing held). */
static int src_alloc(struct ana_multi_src *s, const char *file, const char *process, const char *job, size_t n,
		     bool own)
{
	s->npaths = n;
	s->file = strdup(file);
	s->process = strdup(process ? process : "");
	s->job = strdup(job ? job : "");
	s->path = calloc(n ? n : 1, sizeof(*s->path));
	s->depth = calloc(n ? n : 1, sizeof(*s->depth));
	s->agg = calloc(n ? n : 1, sizeof(*s->agg));
	s->own = own ? calloc(n ? n : 1, sizeof(*s->own)) : NULL;
	s->est_count = malloc((n ? n : 1) * sizeof(double));
	s->est_total_ns = malloc((n ? n : 1) * sizeof(double));
	if (!s->file || !s->process || !s->job || !s->path || !s->depth || !s->agg || (own && !s->own) ||
	    !s->est_count || !s->est_total_ns) {
		ana_multi_src_free(s);
		return -ENOMEM;
	}
	for (size_t k = 0; k < n; k++)
		s->est_count[k] = s->est_total_ns[k] = NAN;
	return 0;
}

int ana_multi_src_result(const struct ana_result *res, const char *file, struct ana_multi_src *s)
{
	const struct pt_trace_info *in = pt_reader_info(res->rd);
	memset(s, 0, sizeof(*s));
	if (src_alloc(s, file, in->process_name, in->job, res->merged.count ? res->merged.count - 1 : 0, false))
		return -ENOMEM;
	s->pid = in->pid;
	s->has_rank = in->has_rank;
	s->rank = in->rank;
	s->span_sum_ns = res->thread_span_sum_ns;
	char *buf = NULL;
	size_t cap = 0;
	for (uint32_t k = 1; k < res->merged.count; k++) {
		const char *p = ana_path_of(res, &res->merged, k, &buf, &cap);
		if (!p || !(s->path[k - 1] = strdup(p))) {
			free(buf);
			ana_multi_src_free(s);
			return -ENOMEM;
		}
		s->depth[k - 1] = res->merged.n[k].depth;
		s->agg[k - 1] = &res->merged.n[k].agg;
		if (res->merged.n[k].agg.est && !res->merged.n[k].agg.est->by_name) { /* as the report's row (§13) */
			struct ana_est_fig f;
			ana_est_figures(&res->merged.n[k].agg, &f);
			s->est_count[k - 1] = f.count;
			s->est_total_ns[k - 1] = f.total_ns;
		}
	}
	free(buf);
	return 0;
}

/* A u64 member @key of @o (an ana_json_u64() figure); false if absent or not one. */
static bool get_u64(const json_t *o, const char *key, uint64_t *v)
{
	const json_t *j = json_object_get(o, key);
	return j && ana_json_u64_get(j, v);
}

struct hist_fill {
	struct ana_hist *h;
	uint64_t n;
};

/* The row's sketch into @a: its histogram (bucket, count pairs in ascending
 * buckets) and moments. 0, or a message in @why. */
static int sketch_read(const json_t *row, struct ana_agg *a, const char **why)
{
	const json_t *sk = json_object_get(row, "sketch"), *h = sk ? json_object_get(sk, "hist") : NULL;
	const char *s1 = sk ? json_string_value(json_object_get(sk, "s1")) : NULL;
	const char *s2 = sk ? json_string_value(json_object_get(sk, "s2")) : NULL;
	if (!sk) {
		*why = "no sketch (a report from before sketches, or not ptanalyze's)";
		return -EINVAL;
	}
	if (!json_is_array(h) || json_array_size(h) % 2 || ana_u128_parse(s1, &a->all.s1) ||
	    ana_u128_parse(s2, &a->all.s2)) {
		*why = "a damaged sketch";
		return -EINVAL;
	}
	uint64_t n = 0, prev = 0;
	for (size_t i = 0; i < json_array_size(h); i += 2) {
		uint64_t idx, c;
		if (!ana_json_u64_get(json_array_get(h, i), &idx) || !ana_json_u64_get(json_array_get(h, i + 1), &c) ||
		    idx >= (uint64_t)ANA_HIST_OCTAVES << ANA_SUB_BITS || c == 0 || c > UINT32_MAX ||
		    (i && idx <= prev)) {
			*why = "a damaged sketch histogram";
			return -EINVAL;
		}
		prev = idx;
		ana_hist_add(&a->hist, ana_hist_lower((uint32_t)idx), (uint32_t)c);
		n += c;
	}
	if (n != a->count) {
		*why = "its sketch's histogram does not hold its count";
		return -EINVAL;
	}
	return ana_nomem_take() ? -ENOMEM : 0;
}

int ana_multi_src_json(const char *file, struct ana_multi_src *s, char *err, size_t errlen)
{
	static const char *const metric_key[ANA_NMETRIC][2] = {
		[ANA_READ] = { "read_bytes", "self_read_bytes" },
		[ANA_WRITTEN] = { "written_bytes", "self_written_bytes" },
		[ANA_FLOPS] = { "flops", "self_flops" },
	};
	static const char *const xfer_key[ANA_DIRS] = { "h2d_bytes", "d2h_bytes", "d2d_bytes", "p2p_bytes" };
	memset(s, 0, sizeof(*s));
	json_error_t je;
	json_t *doc = json_load_file(file, JSON_REJECT_DUPLICATES, &je);
	if (!doc) {
		snprintf(err, errlen, "not a JSON report: %s (line %d)", je.text, je.line);
		return -EINVAL;
	}
	const json_t *tr = json_object_get(doc, "trace"), *tree = json_object_get(doc, "tree");
	const char *schema = json_string_value(json_object_get(doc, "schema"));
	uint64_t pid = 0, span = 0, rank = 0;
	if (!schema || strcmp(schema, "ptanalyze-report/1") || !json_is_object(tr) || !json_is_array(tree) ||
	    !get_u64(tr, "pid", &pid) || !get_u64(tr, "thread_span_sum_ns", &span)) {
		snprintf(err, errlen, "not a report of ptanalyze TRACE --json (schema ptanalyze-report/1)");
		json_decref(doc);
		return -EINVAL;
	}
	const json_t *jr = json_object_get(tr, "rank");
	const bool has_rank = jr && !json_is_null(jr);
	if ((has_rank && !ana_json_u64_get(jr, &rank)) || pid > UINT32_MAX || rank > UINT32_MAX) {
		snprintf(err, errlen, "a damaged trace object");
		json_decref(doc);
		return -EINVAL;
	}
	if (src_alloc(s, file, json_string_value(json_object_get(tr, "process")),
		      json_string_value(json_object_get(tr, "job")), json_array_size(tree), true)) {
		snprintf(err, errlen, "out of memory");
		json_decref(doc);
		return -ENOMEM;
	}
	s->pid = (uint32_t)pid;
	s->has_rank = has_rank;
	s->rank = (uint32_t)rank;
	s->span_sum_ns = span;
	int rc = 0;
	const char *why = NULL;
	size_t k = 0;
	for (; k < s->npaths && !rc; k++) {
		const json_t *row = json_array_get(tree, k), *path = json_object_get(row, "path");
		struct ana_agg *a = &s->own[k];
		s->agg[k] = a;
		uint64_t depth = 0, elided = 0;
		json_t *el = json_object_get(row, "path_elided");
		if (!json_is_array(path) || !json_array_size(path) || !get_u64(row, "depth", &depth) ||
		    depth > UINT32_MAX || (el && !ana_json_u64_get(el, &elided)) ||
		    elided + json_array_size(path) != depth || !get_u64(row, "count", &a->count) || !a->count ||
		    !get_u64(row, "total_ns", &a->total_ns) || !get_u64(row, "self_ns", &a->self_ns) ||
		    !get_u64(row, "min_ns", &a->min_ns) || !get_u64(row, "max_ns", &a->max_ns)) {
			why = "a damaged row";
			rc = -EINVAL;
			break;
		}
		s->depth[k] = (uint32_t)depth;
		for (int m = 0; m < ANA_NMETRIC && !rc; m++)
			if (!get_u64(row, metric_key[m][0], &a->metric_incl[m]) ||
			    !get_u64(row, metric_key[m][1], &a->metric_self[m]))
				rc = -EINVAL;
		for (int d = 0; d < ANA_DIRS && !rc; d++) {
			uint64_t v = 0;
			if (!get_u64(row, xfer_key[d], &v))
				rc = -EINVAL;
			else if (v && !ana_agg_xfer(a))
				rc = -ENOMEM;
			else if (v)
				a->xfer->incl[d] = v;
		}
		uint64_t gc = 0, gt = 0;
		if (!rc && get_u64(row, "gpu_count", &gc) && get_u64(row, "gpu_total_ns", &gt) && gc) {
			if (!(a->gpu = calloc(1, sizeof(*a->gpu)))) {
				rc = -ENOMEM;
				break;
			}
			a->gpu->self.count = gc;
			a->gpu->self.total_ns = gt;
		}
		if (rc) {
			why = "a damaged row";
			break;
		}
		rc = sketch_read(row, a, &why);
		if (rc)
			break;
		const json_t *est = json_object_get(row, "estimate"); /* §13: a path inside sampled requests */
		if (est) {
			const json_t *ec = json_object_get(est, "count"), *et = json_object_get(est, "total_ns");
			if (!json_is_number(ec) || !json_is_number(et)) {
				why = "a damaged estimate";
				rc = -EINVAL;
				break;
			}
			s->est_count[k] = json_number_value(ec);
			s->est_total_ns[k] = json_number_value(et);
		}
		/* the path string as ana_path_of() writes it: "[depth] ...;" when elided, names by ';' */
		size_t len = elided ? 32 : 1;
		for (size_t i = 0; i < json_array_size(path); i++) {
			const char *nm = json_string_value(json_array_get(path, i));
			if (!nm) {
				why = "a damaged row";
				rc = -EINVAL;
				break;
			}
			len += strlen(nm) + 1;
		}
		char *p = rc ? NULL : malloc(len);
		if (!rc && !p)
			rc = -ENOMEM;
		if (rc)
			break;
		size_t o = elided ? (size_t)snprintf(p, len, "[%" PRIu64 "] ...", depth) : 0;
		for (size_t i = 0; i < json_array_size(path); i++) {
			const char *nm = json_string_value(json_array_get(path, i));
			if (i || elided)
				p[o++] = ';';
			memcpy(p + o, nm, strlen(nm));
			o += strlen(nm);
		}
		p[o] = 0;
		s->path[k] = p;
	}
	if (rc) {
		if (rc == -ENOMEM)
			snprintf(err, errlen, "out of memory");
		else
			snprintf(err, errlen, "tree row %zu: %s", k, why ? why : "a damaged row");
		ana_multi_src_free(s);
	}
	json_decref(doc);
	return rc;
}
