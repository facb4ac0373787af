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

json_t *ana_html_series(const struct ana_result *res)
{
	json_t *root = json_object(), *all = json_array();
	int bad = !root || !all || json_object_set_new(root, "series", all);
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
	json_elem(&p, "ptz-series", ana_html_series(res));
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
