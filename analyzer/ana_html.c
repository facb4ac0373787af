/*
 * analyzer/ana_html.c - the HTML page of a report or a comparison
 * (ana_html.h; the page's layout is analyzer/html/report.js).
 *
 * Writing order: the page's head and style, the data as JSON elements, then
 * Chart.js and the page script at the end of the body, so the script finds
 * the elements it reads. The JSON goes through a stdio cookie stream that
 * escapes '<', '>' and '&' as \u003c, \u003e, \u0026: JSON's own syntax
 * holds none of them, so only string contents change, and a JSON reader
 * decodes the same strings; an HTML parser, which ends a <script> element
 * at the first "</script" whatever the JSON means, never sees one. The
 * existing writers (ana_write_json(), ana_suggest_json(),
 * ana_compare_json()) are used as they are, through that stream: the page
 * holds exactly their documents.
 */
/* fopencookie(): _GNU_SOURCE, which the build defines */
#include "analyzer/ana_html.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* analyzer/html/ and Chart.js, from embed.py (ana_html_assets.c) */
extern const unsigned char ana_html_css[], ana_html_js[], ana_html_chartjs[];
extern const size_t ana_html_css_len, ana_html_js_len, ana_html_chartjs_len;

/* ---- the escaping stream ---- */

/*
 * The cookie: the page's stream and whether a write into it failed. The
 * write function never reports a failure to stdio: glibc's buffered
 * stream, told that a cookie write failed, crashed on the next fputs
 * (memcpy into its reset buffer); it notes the failure instead, drops the
 * rest, and esc_close() returns it.
 */
struct esc {
	FILE *out;
	int err;
};

static ssize_t esc_write(void *cookie, const char *buf, size_t n)
{
	struct esc *c = cookie;
	size_t from = 0;
	for (size_t i = 0; i < n && !c->err; i++) {
		const char *rep = buf[i] == '<' ? "\\u003c" : buf[i] == '>' ? "\\u003e" : buf[i] == '&' ? "\\u0026" : NULL;
		if (!rep)
			continue;
		if ((i > from && fwrite(buf + from, 1, i - from, c->out) != i - from) || fputs(rep, c->out) == EOF)
			c->err = 1;
		from = i + 1;
	}
	if (!c->err && n > from && fwrite(buf + from, 1, n - from, c->out) != n - from)
		c->err = 1;
	return (ssize_t)n;
}

/* A stream that writes into @c->out with '<', '>', '&' escaped; NULL on ENOMEM. */
static FILE *esc_open(struct esc *c, FILE *out)
{
	static const cookie_io_functions_t io = { .write = esc_write };
	c->out = out;
	c->err = 0;
	return fopencookie(c, "w", io);
}

/* Closes @f (flushing it into its stream), esc_open()'s stream on @c or NULL (it could not be
 * opened), after @failed writing through it; -1 if anything failed. */
static int esc_close(FILE *f, const struct esc *c, int failed)
{
	if (!f)
		return -1;
	failed |= ferror(f) != 0;
	failed |= fclose(f) != 0;
	return failed || c->err ? -1 : 0;
}

struct page {
	FILE *out;
	int err;
};

static void put(struct page *p, const char *s)
{
	if (fputs(s, p->out) == EOF)
		p->err = 1;
}

static void put_asset(struct page *p, const unsigned char *a, size_t n)
{
	if (fwrite(a, 1, n, p->out) != n)
		p->err = 1;
}

static void json_open(struct page *p, const char *id)
{
	put(p, "<script type=\"application/json\" id=\"");
	put(p, id);
	put(p, "\">\n");
}

/* A JSON element holding @j (a new reference, consumed; NULL = ENOMEM). */
static void json_elem(struct page *p, const char *id, json_t *j)
{
	struct esc c;
	FILE *e = j ? esc_open(&c, p->out) : NULL;
	json_open(p, id);
	if (esc_close(e, &c, !e || ana_json_dumpf(j, e, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(12))))
		p->err = 1;
	json_decref(j);
	put(p, "\n</script>\n");
}

static void head(struct page *p, const char *title)
{
	put(p, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	       /* nothing may be fetched: no network, no file; inline script and style only */
	       "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	       "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n"
	       "<link rel=\"icon\" href=\"data:,\">\n<title>");
	put(p, title);
	put(p, "</title>\n<style>\n");
	put_asset(p, ana_html_css, ana_html_css_len);
	put(p, "</style>\n</head>\n<body>\n<noscript>This page draws its report with JavaScript; "
	       "enable it, or read the same figures with ptanalyze --report or --json.</noscript>\n");
}

static void tail(struct page *p)
{
	put(p, "<script>\n");
	put_asset(p, ana_html_chartjs, ana_html_chartjs_len);
	put(p, "\n</script>\n<script>\n");
	put_asset(p, ana_html_js, ana_html_js_len);
	put(p, "\n</script>\n</body>\n</html>\n");
	if (fflush(p->out) || ferror(p->out))
		p->err = 1;
}

/*
 * The other counters (not in bytes: a program's pt_counter() figures, the
 * ptz-gpu thread's counts): the analysis keeps only their last, smallest
 * and largest value, so their samples are read again from @path, thread by
 * thread, and kept as the smallest and the largest sample of each of
 * ANA_HTML_SERIES_BINS equal runs of samples (the run of a sample known
 * from its index among the counter's samples, which the analysis
 * counted): memory is bounded by the counters, never by their samples.
 */
struct bin {
	uint64_t tmin, tmax; /* ticks of the smallest and the largest sample */
	int64_t vmin, vmax;
	bool used;
};
struct ctr {
	const struct ana_thread *t;
	const struct ana_counter *c;
	uint32_t trace_id;
	uint64_t seen, nb;
	struct bin *b;
};

static json_t *counter_json(const struct ana_result *res, const struct ctr *k)
{
	json_t *o = json_object(), *t = json_array(), *v = json_array();
	int bad = !o || !t || !v;
	size_t points = 0;
	for (uint64_t i = 0; i < k->nb && !bad; i++) {
		const struct bin *b = &k->b[i];
		if (!b->used)
			continue;
		const bool two = b->tmin != b->tmax || b->vmin != b->vmax;
		const uint64_t tk[2] = { b->tmin < b->tmax ? b->tmin : b->tmax, b->tmin < b->tmax ? b->tmax : b->tmin };
		const int64_t vk[2] = { b->tmin < b->tmax ? b->vmin : b->vmax, b->tmin < b->tmax ? b->vmax : b->vmin };
		for (int j = 0; j < 1 + two; j++) {
			const uint64_t ns = pt_reader_ticks_to_ns(res->rd, tk[j]);
			bad |= json_array_append_new(t, json_real(ns > res->start_ns ? (double)(ns - res->start_ns) / 1e9 : 0.0)) ||
			       json_array_append_new(v, json_integer(vk[j]));
			points++;
		}
	}
	if (!bad) {
		char th[64];
		snprintf(th, sizeof(th), "%u %s", k->t->index, k->t->name);
		bad |= json_object_set_new(o, "counter", ana_json_str(ana_name(res, k->c->id))) ||
		       json_object_set_new(o, "thread", ana_json_str(th)) ||
		       json_object_set_new(o, "samples", ana_json_u64(k->c->samples)) ||
		       json_object_set_new(o, "min", json_integer(k->c->min)) ||
		       json_object_set_new(o, "max", json_integer(k->c->max)) ||
		       json_object_set_new(o, "points", json_integer((json_int_t)points));
		bad |= json_object_set(o, "t_s", t) || json_object_set(o, "v", v);
	}
	json_decref(t);
	json_decref(v);
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* The counters' array, or NULL on ENOMEM or a trace that cannot be read again (then left out). */
static json_t *counters_json(const struct ana_result *res, const char *path)
{
	size_t n = 0;
	for (size_t i = 0; i < res->nthreads; i++)
		for (size_t k = 0; k < res->threads[i].ncounters; k++)
			n += res->threads[i].counters[k].samples &&
			     !ana_counter_is_bytes(res, &res->threads[i], res->threads[i].counters[k].id);
	json_t *arr = json_array();
	if (!arr || !n || n > ANA_HTML_MAX_COUNTERS)
		return arr; /* none, or more than a page can show: the table of their figures only */
	struct ctr *cs = calloc(n, sizeof(*cs));
	struct pt_reader *rd = NULL;
	int bad = !cs || pt_reader_open_trace(path, &rd) != 0;
	n = 0;
	for (size_t i = 0; i < res->nthreads && !bad; i++)
		for (size_t k = 0; k < res->threads[i].ncounters && !bad; k++) {
			const struct ana_counter *c = &res->threads[i].counters[k];
			if (!c->samples || ana_counter_is_bytes(res, &res->threads[i], c->id))
				continue;
			struct ctr *x = &cs[n++];
			x->t = &res->threads[i];
			x->c = c;
			x->trace_id = ana_trace_id(res, c->id);
			x->nb = c->samples > 2 * ANA_HTML_SERIES_BINS ? ANA_HTML_SERIES_BINS : c->samples;
			x->b = calloc(x->nb, sizeof(*x->b));
			bad |= !x->b;
		}
	for (size_t first = 0; first < n && !bad;) { /* one thread at a time: its counters are cs[first, last) */
		size_t last = first;
		while (last < n && cs[last].t == cs[first].t)
			last++;
		struct pt_chunk_info ci;
		struct pt_record r;
		pt_reader_rewind(rd);
		while (pt_reader_next_chunk(rd, cs[first].t->index, &ci, sizeof(ci)) == 1)
			while (pt_reader_next_record(rd, &r, sizeof(r)) == 1) {
				if (r.kind != PT_REC_COUNTER)
					continue;
				for (size_t k = first; k < last; k++) {
					struct ctr *x = &cs[k];
					if (x->trace_id != r.id)
						continue;
					/* a sample past those the analysis counted (a window) goes to the last run */
					const uint64_t idx = x->seen < x->c->samples ? x->seen : x->c->samples - 1;
					struct bin *b = &x->b[idx * x->nb / x->c->samples];
					const int64_t v = (int64_t)r.value;
					x->seen++;
					if (!b->used || v < b->vmin) {
						b->vmin = v;
						b->tmin = r.ticks;
					}
					if (!b->used || v > b->vmax) {
						b->vmax = v;
						b->tmax = r.ticks;
					}
					b->used = true;
				}
			}
		first = last;
	}
	for (size_t k = 0; k < n && !bad; k++) {
		json_t *o = counter_json(res, &cs[k]);
		bad |= !o || json_array_append_new(arr, o);
	}
	for (size_t k = 0; cs && k < n; k++)
		free(cs[k].b);
	free(cs);
	pt_reader_close(rd);
	if (bad) {
		json_decref(arr);
		return NULL;
	}
	return arr;
}

json_t *ana_html_series(const struct ana_result *res, const char *path)
{
	json_t *root = json_object(), *all = json_array();
	int bad = !root || !all || json_object_set_new(root, "series", all);
	json_t *ctrs = path ? counters_json(res, path) : json_array();
	if (!bad && ctrs) /* none when the trace cannot be read again: the page then lists their figures */
		bad |= json_object_set_new(root, "counters", ctrs);
	else
		json_decref(ctrs);
	for (uint32_t k = 0; !bad && k < res->nmem; k++) {
		const struct ana_mem_series *m = &res->mem[k];
		json_t *s = json_object(), *t = json_array(), *v = json_array();
		bad |= !s || !t || !v || json_array_append_new(all, s);
		if (bad) {
			json_decref(t);
			json_decref(v);
			break;
		}
		const char *name = ana_name(res, m->id);
		bad |= json_object_set_new(s, "counter", ana_json_str(name));
		bad |= json_object_set_new(s, "samples", ana_json_u64(m->n));
		bad |= json_object_set_new(s, "period_ns", ana_json_u64(m->period_ns));
		bad |= json_object_set_new(s, "min_bytes", json_integer(m->min));
		bad |= json_object_set_new(s, "max_bytes", json_integer(m->max));
		/* every sample, or the smallest and largest of each of ANA_HTML_SERIES_BINS runs, in time order */
		const size_t bins = m->n > 2 * ANA_HTML_SERIES_BINS ? ANA_HTML_SERIES_BINS : m->n;
		size_t points = 0;
		for (size_t b = 0; b < bins && !bad; b++) {
			size_t lo = m->n * b / bins, hi = m->n * (b + 1) / bins, imin = lo, imax = lo;
			for (size_t i = lo; i < hi; i++) {
				imin = m->v[i] < m->v[imin] ? i : imin;
				imax = m->v[i] > m->v[imax] ? i : imax;
			}
			const size_t pick[2] = { imin < imax ? imin : imax, imin < imax ? imax : imin };
			for (int j = 0; j < 2 - (imin == imax); j++) {
				const uint64_t ns = pt_reader_ticks_to_ns(res->rd, m->t[pick[j]]);
				const double sec = ns > res->start_ns ? (double)(ns - res->start_ns) / 1e9 : 0.0;
				bad |= json_array_append_new(t, json_real(sec)) || json_array_append_new(v, json_integer(m->v[pick[j]]));
				points++;
			}
		}
		bad |= json_object_set_new(s, "points", json_integer((json_int_t)points));
		bad |= json_object_set_new(s, "t_s", t);
		bad |= json_object_set_new(s, "v", v);
	}
	if (bad) {
		json_decref(root);
		return NULL;
	}
	return root;
}

/* The "meta" element's common part: kind and generator. */
static json_t *meta_new(const char *kind, const char *generator)
{
	json_t *m = json_object();
	if (m && (json_object_set_new(m, "kind", json_string(kind)) ||
		  json_object_set_new(m, "generator", ana_json_str(generator)))) {
		json_decref(m);
		return NULL;
	}
	return m;
}

int ana_html_report(FILE *out, const struct ana_result *res, const struct ana_sug *sug, const char *trace,
		    const char *generator)
{
	struct page p = { out, 0 };
	head(&p, "ptz report");
	json_t *meta = meta_new("report", generator);
	if (meta && json_object_set_new(meta, "trace", ana_json_str(trace)))
		p.err = 1;
	json_elem(&p, "ptz-meta", meta);

	/* the --json report, merged rows only (struct ana_report_opts.no_thread_rows) */
	const struct ana_report_opts ro = { .sort = ANA_SORT_TIME, .thread = -1, .no_thread_rows = true };
	struct esc c;
	FILE *e = esc_open(&c, out);
	json_open(&p, "ptz-report");
	if (esc_close(e, &c, !e || ana_write_json(e, res, &ro)))
		p.err = 1;
	put(&p, "</script>\n");
	if (sug) {
		e = esc_open(&c, out);
		json_open(&p, "ptz-suggest");
		if (esc_close(e, &c, !e || ana_suggest_json(e, res, sug)))
			p.err = 1;
		put(&p, "</script>\n");
	}
	json_elem(&p, "ptz-series", ana_html_series(res, trace));
	tail(&p);
	return p.err ? -1 : 0;
}

int ana_html_compare(FILE *out, const struct ana_result *base, const struct ana_result *nw, const struct ana_cmp *c,
		     const char *base_path, const char *new_path, const char *generator)
{
	struct page p = { out, 0 };
	head(&p, "ptz comparison");
	json_t *meta = meta_new("compare", generator);
	const struct ana_result *side[2] = { base, nw };
	static const char *const key[2][3] = { { "base", "base_process", "base_wall_span_ns" },
					       { "new", "new_process", "new_wall_span_ns" } };
	const char *path[2] = { base_path, new_path };
	for (int k = 0; k < 2 && meta; k++) {
		const struct pt_trace_info *in = pt_reader_info(side[k]->rd);
		if (json_object_set_new(meta, key[k][0], ana_json_str(path[k])) ||
		    json_object_set_new(meta, key[k][1], ana_json_str(in->process_name)) ||
		    json_object_set_new(meta, key[k][2], ana_json_u64(side[k]->end_ns - side[k]->start_ns)))
			p.err = 1;
	}
	json_elem(&p, "ptz-meta", meta);
	struct esc ec;
	FILE *e = esc_open(&ec, out);
	json_open(&p, "ptz-compare");
	if (esc_close(e, &ec, !e || ana_compare_json(e, base, nw, c)))
		p.err = 1;
	put(&p, "</script>\n");
	tail(&p);
	return p.err ? -1 : 0;
}
