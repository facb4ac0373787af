/*
 * analyzer/ana_html.h - the report and the comparison as one self-contained
 * HTML page (doc/analyzer-output.md §10): summary, charts (Chart.js, Debian
 * libjs-chart.js, inlined at build time), bottlenecks, suggestions, the call
 * tree as a sortable, filterable, collapsible table; for a comparison the
 * verdicts, their intervals and a differential flame graph coloured by
 * verdict.
 *
 * The page is the analyzer's JSON documents (the report of ana_write_json()
 * without per-thread rows, ana_suggest_json(), ana_compare_json()) embedded
 * in <script type="application/json"> elements, plus a script that lays
 * them out: every figure shown is one of theirs, and the size grows with
 * the call paths, never with the events. Every '<', '>' and '&' inside
 * the JSON is written as a \u escape (the same string to a JSON reader), so
 * no name can end the element; the page's script puts names into text
 * nodes only. It loads nothing: a Content-Security-Policy forbids any
 * request, and it opens from file://.
 */
#ifndef PTZ_ANA_HTML_H
#define PTZ_ANA_HTML_H

#include <stdio.h>

#include "analyzer/ana.h"
#include "analyzer/ana_compare.h"
#include "analyzer/ana_suggest.h"

/*
 * ana_html_report() - Writes the report page of @res to @out.
 * @sug:       findings of ana_suggest() on @res, or NULL (the page says none were computed).
 * @trace:     the trace's path as the user gave it: shown (it may hold any bytes), and read again for the
 *             samples of the counters not in bytes (ana_html_series()); one that cannot be read leaves
 *             them out of the charts.
 * @generator: who wrote the page, e.g. "ptanalyze 0.4.0" (shown).
 * Return: 0, or -1 if a write or an allocation failed (the page is then incomplete).
 */
int ana_html_report(FILE *out, const struct ana_result *res, const struct ana_sug *sug, const char *trace,
		    const char *generator);

/*
 * ana_html_compare() - Writes the comparison page of @c (ana_compare() of
 * @base and @nw) to @out; @base_path, @new_path and @generator as above.
 * Return: 0, or -1 if a write or an allocation failed.
 */
int ana_html_compare(FILE *out, const struct ana_result *base, const struct ana_result *nw, const struct ana_cmp *c,
		     const char *base_path, const char *new_path, const char *generator);

/*
 * ana_html_series() - The counters of @res over time, as the page draws
 * them: { "series": [{ counter, samples, period_ns, min_bytes, max_bytes,
 * points, t_s: [seconds from the trace start], v: [bytes] }] (the memory
 * series, §3.5), "counters": [{ counter, thread, samples, min, max,
 * points, t_s, v }] (every other counter with samples, read again from
 * @path, the trace @res was analyzed from; an empty array when @path is
 * NULL or there are more than ANA_HTML_MAX_COUNTERS of them; the key is
 * absent when the trace cannot be read again) }. A counter of more than
 * 2 x ANA_HTML_SERIES_BINS samples is drawn from the smallest and the
 * largest sample of each of ANA_HTML_SERIES_BINS equal runs of samples, in
 * time order, so that no peak is lost and the page stays bounded. A new
 * reference; NULL on ENOMEM.
 */
#define ANA_HTML_SERIES_BINS 1000
#define ANA_HTML_MAX_COUNTERS 64
json_t *ana_html_series(const struct ana_result *res, const char *path);

#endif /* PTZ_ANA_HTML_H */
