/*
 * analyzer/ana_public.c - include/ptz/analysis.h, the public analysis API
 * of libptanalyze, over the session API (ana_api.h: the live pass,
 * incremental) and the report writers. Its figures are the analyzer's own
 * (ana_row_compute()): nothing is computed here.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ptz/analysis.h"
#include "analyzer/ana_api.h"
#include "analyzer/ana_multi.h"

struct pt_analysis {
	struct ana_session *s; /* one trace; for a set, the first */
	/* a set (pt_analysis_open_set(), n > 1): a session per trace, and the
	 * view of them all (ana_multi.h) with its totals, built at each update */
	size_t n;
	struct ana_session **ss;
	char **paths;
	struct ana_multi m;
	bool have_m;
	struct pt_analysis_totals set_totals;
	char err[512];
	/* the rows of each view in order (built at the first pt_analysis_row() after an update) */
	struct ana_row_ref *rows[2];
	size_t nrows[2];
	bool have_rows[2];
	char *path_buf; /* the last row's path and name */
	size_t path_cap;
};

/* Copies the first @out_bytes bytes of @src (@src_bytes of them) into
 * @out, zeroing what lies past them (the size-versioned structs). */
static void copy_out(void *out, size_t out_bytes, const void *src, size_t src_bytes)
{
	memcpy(out, src, out_bytes < src_bytes ? out_bytes : src_bytes);
	if (out_bytes > src_bytes)
		memset((char *)out + src_bytes, 0, out_bytes - src_bytes);
}

static void drop_rows(pt_analysis *a)
{
	for (int v = 0; v < 2; v++) {
		free(a->rows[v]);
		a->rows[v] = NULL;
		a->nrows[v] = 0;
		a->have_rows[v] = false;
	}
}

/* The rows of @v, listed once per update. 0 or -ENOMEM. */
static int list_rows(pt_analysis *a, enum pt_analysis_view v)
{
	if (a->have_rows[v])
		return 0;
	const enum ana_view av = v == PT_ANALYSIS_TREE ? ANA_VIEW_TREE : ANA_VIEW_FLAT;
	struct ana_row_iter it;
	struct ana_row_ref row;
	size_t n = 0, cap = 0;
	struct ana_row_ref *rows = NULL;
	ana_rows_begin(a->s, av, &it);
	while (ana_rows_next(&it, &row) == 1) {
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 64;
			struct ana_row_ref *r = realloc(rows, nc * sizeof(*r));
			if (!r) {
				free(rows);
				return -ENOMEM;
			}
			rows = r;
			cap = nc;
		}
		rows[n++] = row;
	}
	a->rows[v] = rows;
	a->nrows[v] = n;
	a->have_rows[v] = true;
	return 0;
}

/* One trace's totals: its session's current result and update counts. */
static struct pt_analysis_totals totals_of(const struct ana_session *s)
{
	const struct ana_result *res = ana_session_result(s);
	struct ana_live_stats st;
	ana_session_stats(s, &st);
	return (struct pt_analysis_totals){
		.sections = res->sections,
		.records = res->records,
		.lost_records = res->lost_records,
		.lost_sections = res->lost_sections,
		.unmatched_ends = res->unmatched_ends,
		.open_at_end = res->open_at_end,
		.recorder_errors = res->misuse_errors,
		.wall_span_ns = res->end_ns - res->start_ns,
		.thread_span_sum_ns = res->thread_span_sum_ns,
		.updates = st.updates,
		.incremental = st.extended,
		.full = st.updates - st.extended,
	};
}

static void set_srcs_free(struct ana_multi_src *src, size_t n)
{
	for (size_t i = 0; src && i < n; i++)
		ana_multi_src_free(&src[i]);
	free(src);
}

/* The set's traces as the view's sources, from their sessions' current
 * results (which they point into); NULL on ENOMEM. Free with
 * set_srcs_free(). */
static struct ana_multi_src *set_srcs(const pt_analysis *a)
{
	struct ana_multi_src *src = calloc(a->n, sizeof(*src));
	for (size_t i = 0; src && i < a->n; i++)
		if (ana_multi_src_result(ana_session_result(a->ss[i]), a->paths[i], &src[i])) {
			set_srcs_free(src, i);
			return NULL;
		}
	return src;
}

/* The set's view and totals from its sessions' current results. 0 or
 * -ENOMEM (the previous view stays). */
static int set_build(pt_analysis *a)
{
	struct ana_multi_src *src = set_srcs(a);
	struct pt_analysis_totals t = { 0 };
	for (size_t i = 0; i < a->n; i++) { /* summed; the wall span is the longest trace's */
		const struct pt_analysis_totals x = totals_of(a->ss[i]);
		t.sections += x.sections;
		t.records += x.records;
		t.lost_records += x.lost_records;
		t.lost_sections += x.lost_sections;
		t.unmatched_ends += x.unmatched_ends;
		t.open_at_end += x.open_at_end;
		t.recorder_errors += x.recorder_errors;
		t.wall_span_ns = x.wall_span_ns > t.wall_span_ns ? x.wall_span_ns : t.wall_span_ns;
		t.thread_span_sum_ns += x.thread_span_sum_ns;
		t.updates += x.updates;
		t.incremental += x.incremental;
		t.full += x.full;
	}
	struct ana_multi m;
	const int rc = src ? ana_multi_build(src, a->n, &m) : -ENOMEM;
	set_srcs_free(src, a->n); /* the view owns what it keeps */
	if (rc)
		return -ENOMEM;
	if (a->have_m)
		ana_multi_free(&a->m);
	a->m = m;
	a->have_m = true;
	a->set_totals = t;
	return 0;
}

int pt_analysis_open_set(const char *const *paths, size_t n, pt_analysis **out)
{
	if (!out)
		return -EINVAL;
	if (paths && n == 1)
		return pt_analysis_open(paths[0], out);
	pt_analysis *a = calloc(1, sizeof(*a));
	*out = a;
	if (!a)
		return -ENOMEM;
	if (!paths || n == 0) {
		snprintf(a->err, sizeof(a->err), "no traces");
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++)
		if (!paths[i]) {
			snprintf(a->err, sizeof(a->err), "trace %zu of the set: no path", i + 1);
			return -EINVAL;
		}
	a->ss = calloc(n, sizeof(*a->ss));
	a->paths = calloc(n, sizeof(*a->paths));
	if (!a->ss || !a->paths) {
		snprintf(a->err, sizeof(a->err), "out of memory");
		return -ENOMEM;
	}
	a->n = n;
	for (size_t i = 0; i < n; i++) {
		char msg[400] = "";
		if (!(a->paths[i] = strdup(paths[i]))) {
			snprintf(a->err, sizeof(a->err), "out of memory");
			return -ENOMEM;
		}
		int rc = ana_session_open(paths[i], NULL, &a->ss[i], msg, sizeof(msg));
		if (rc) {
			snprintf(a->err, sizeof(a->err), "%s: %s", paths[i], msg);
			return rc;
		}
	}
	a->s = a->ss[0];
	if (set_build(a)) {
		snprintf(a->err, sizeof(a->err), "out of memory");
		return -ENOMEM;
	}
	return 0;
}

int pt_analysis_open(const char *path, pt_analysis **out)
{
	if (!out)
		return -EINVAL;
	pt_analysis *a = calloc(1, sizeof(*a));
	*out = a;
	if (!a)
		return -ENOMEM;
	if (!path) {
		snprintf(a->err, sizeof(a->err), "no trace path");
		return -EINVAL;
	}
	int rc = ana_session_open(path, NULL, &a->s, a->err, sizeof(a->err));
	if (rc == 0)
		a->err[0] = 0;
	return rc;
}

int pt_analysis_update(pt_analysis *a)
{
	if (!a)
		return -EINVAL;
	if (!a->s) {
		snprintf(a->err, sizeof(a->err), "the trace was never opened");
		return -EINVAL;
	}
	if (a->n > 1) {
		for (size_t i = 0; i < a->n; i++) {
			char msg[400] = "";
			int rc = ana_session_update(a->ss[i], msg, sizeof(msg));
			if (rc) { /* the view stays the previous one */
				snprintf(a->err, sizeof(a->err), "%s: %s", a->paths[i], msg);
				return rc;
			}
		}
		if (set_build(a)) {
			snprintf(a->err, sizeof(a->err), "out of memory");
			return -ENOMEM;
		}
		a->err[0] = 0;
		return 0;
	}
	int rc = ana_session_update(a->s, a->err, sizeof(a->err));
	if (rc == 0) {
		drop_rows(a);
		a->err[0] = 0;
	}
	return rc;
}

const char *pt_analysis_errmsg(const pt_analysis *a)
{
	return a ? a->err : "out of memory";
}

size_t pt_analysis_rows(const pt_analysis *a, enum pt_analysis_view view)
{
	if (!a || !a->s || (view != PT_ANALYSIS_FLAT && view != PT_ANALYSIS_TREE))
		return 0;
	if (a->n > 1) /* a set: call paths only */
		return view == PT_ANALYSIS_TREE && a->have_m ? a->m.nrows : 0;
	if (list_rows((pt_analysis *)a, view)) /* the list is a cache: the analysis is unchanged */
		return 0;
	return a->nrows[view];
}

/* A row's figures from its aggregate @g and ana_row_compute()'s or
 * ana_row_stats()' @w (the names and depth are the caller's). */
static struct pt_analysis_row row_of(const struct ana_agg *g, const struct ana_row *w)
{
	return (struct pt_analysis_row){
		.count = g->count,
		.total_ns = g->total_ns,
		.self_ns = g->self_ns,
		.min_ns = g->min_ns,
		.max_ns = g->max_ns,
		.p50_ns = w->p50,
		.p90_ns = w->p90,
		.p99_ns = w->p99,
		.mean_ns = w->mean,
		.std_ns = w->std,
		.first_ns = g->first_ns,
		.rest_mean_ns = w->rest_mean,
		.rest_std_ns = w->rest_std,
		.share = w->share,
		.read_bytes = g->metric_incl[ANA_READ],
		.written_bytes = g->metric_incl[ANA_WRITTEN],
		.flops = g->metric_incl[ANA_FLOPS],
		.gb_per_s = w->gbps,
		.gflop_per_s = w->gflops,
		.gpu_count = g->gpu ? g->gpu->self.count : 0,
		.gpu_total_ns = g->gpu ? g->gpu->self.total_ns : 0,
	};
}

/* Row @i of a set's view: the path's aggregate over every trace (the
 * figures of ana_row_stats(), share over the traces' summed thread spans;
 * no first occurrence: each trace's is on its own clock). */
static int set_row(pt_analysis *a, enum pt_analysis_view view, size_t i, struct pt_analysis_row *out,
		   size_t out_bytes)
{
	if (view != PT_ANALYSIS_TREE || !a->have_m || i >= a->m.nrows)
		return -EINVAL;
	const struct ana_multi_row *mr = &a->m.rows[i];
	const struct ana_agg *g = &mr->agg;
	struct ana_row w;
	ana_row_stats(g, &w);
	const char *semi = strrchr(mr->path, ';');
	struct pt_analysis_row r = row_of(g, &w);
	r.name = semi ? semi + 1 : mr->path;
	r.path = mr->path;
	r.depth = mr->depth;
	r.count = mr->count; /* the view's (saturating) sums */
	r.total_ns = mr->total_ns;
	r.self_ns = mr->self_ns;
	r.first_ns = 0; /* each trace's first occurrence is on its own clock */
	r.rest_mean_ns = r.rest_std_ns = 0.0;
	r.share = a->m.span_sum_ns ? (double)mr->total_ns / (double)a->m.span_sum_ns : 0.0;
	copy_out(out, out_bytes, &r, sizeof(r));
	return 0;
}

int pt_analysis_row(pt_analysis *a, enum pt_analysis_view view, size_t i, struct pt_analysis_row *out,
		    size_t out_bytes)
{
	if (!a || !a->s || !out || (view != PT_ANALYSIS_FLAT && view != PT_ANALYSIS_TREE))
		return -EINVAL;
	if (a->n > 1)
		return set_row(a, view, i, out, out_bytes);
	if (list_rows(a, view))
		return -ENOMEM;
	if (i >= a->nrows[view])
		return -EINVAL;
	const struct ana_row_ref *ref = &a->rows[view][i];
	const struct ana_result *res = ana_session_result(a->s);
	const struct ana_agg *g = ref->a;
	struct ana_row w;
	ana_row_compute(res, g, &w);
	/* the path, then the name after it in the same buffer */
	const char *p = ana_row_path(a->s, ref, &a->path_buf, &a->path_cap);
	if (!p)
		return -ENOMEM;
	const char *name = ana_name(res, ref->id);
	const size_t lp = strlen(p) + 1, ln = strlen(name) + 1;
	if (lp + ln > a->path_cap) {
		char *b = realloc(a->path_buf, lp + ln);
		if (!b)
			return -ENOMEM;
		a->path_buf = b;
		a->path_cap = lp + ln;
	}
	memcpy(a->path_buf + lp, name, ln);
	struct pt_analysis_row r = row_of(g, &w);
	r.name = a->path_buf + lp;
	r.path = a->path_buf;
	r.depth = view == PT_ANALYSIS_TREE ? res->merged.n[ref->node].depth : 0;
	copy_out(out, out_bytes, &r, sizeof(r));
	return 0;
}

int pt_analysis_totals(const pt_analysis *a, struct pt_analysis_totals *out, size_t out_bytes)
{
	if (!a || !a->s || !out)
		return -EINVAL;
	if (a->n > 1) {
		copy_out(out, out_bytes, &a->set_totals, sizeof(a->set_totals));
		return 0;
	}
	const struct pt_analysis_totals t = totals_of(a->s);
	copy_out(out, out_bytes, &t, sizeof(t));
	return 0;
}

int pt_analysis_write(const pt_analysis *a, enum pt_analysis_format format, FILE *out)
{
	if (!a || !a->s || !out)
		return -EINVAL;
	int rc;
	if (a->n > 1) { /* `ptanalyze report A B ...` of the set; no CSV of it */
		struct ana_multi_src *src = set_srcs(a);
		rc = src ? 0 : -ENOMEM;
		if (rc == 0 && format == PT_ANALYSIS_TEXT)
			ana_multi_text(out, &a->m, src, 0);
		else if (rc == 0 && format == PT_ANALYSIS_JSON)
			rc = ana_multi_json(out, &a->m, src) ? -EIO : 0;
		else if (rc == 0)
			rc = format == PT_ANALYSIS_CSV ? -ENOTSUP : -EINVAL;
		set_srcs_free(src, a->n);
		if (rc)
			return rc;
		return fflush(out) != 0 || ferror(out) ? -EIO : 0;
	}
	const struct ana_result *res = ana_session_result(a->s);
	struct ana_report_opts o = { .thread = -1 };
	switch (format) {
	case PT_ANALYSIS_TEXT:
		ana_report_text(out, res, &o);
		rc = 0;
		break;
	case PT_ANALYSIS_CSV:
		rc = ana_write_csv(out, res, &o);
		break;
	case PT_ANALYSIS_JSON:
		rc = ana_write_json(out, res, &o);
		break;
	default:
		return -EINVAL;
	}
	if (fflush(out) != 0 || ferror(out))
		return -EIO;
	return rc < 0 ? -EIO : 0;
}

void pt_analysis_close(pt_analysis *a)
{
	if (!a)
		return;
	if (a->n > 1) {
		for (size_t i = 0; i < a->n; i++) {
			ana_session_close(a->ss[i]);
			free(a->paths[i]);
		}
		if (a->have_m)
			ana_multi_free(&a->m);
	} else {
		ana_session_close(a->s);
	}
	free(a->ss);
	free(a->paths);
	drop_rows(a);
	free(a->path_buf);
	free(a);
}
