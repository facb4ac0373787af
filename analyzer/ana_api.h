/*
 * analyzer/ana_api.h - the analysis of one trace as a small session API:
 * open a trace, update, iterate the rows, read them as the JSON report
 * does, close. The in-process statistics of the Python module (issue 19)
 * use it; its shape is the one the public include/ptz/analysis.h (issue
 * 18) is to take over.
 *
 * Updates are incremental: the session keeps the pass state and reads
 * only the chunks committed since the last update (ana.h, ana_live_update():
 * each result is exactly ana_run()'s for the file at that moment; it says
 * when it reads the whole file again, and which traces it always reads
 * whole).
 *
 * Every figure is the analyzer's own (ana_row_compute(), ana_json_row()):
 * the definitions of doc/analyzer-output.md, never recomputed here.
 * Context: a session is single-threaded: one caller at a time.
 */
#ifndef PTZ_ANA_API_H
#define PTZ_ANA_API_H
#include <stddef.h>  /* size_t */
#include <stdint.h>  /* uint32_t */
#include <stdio.h>   /* FILE */
#include <jansson.h> /* json_t */

#include "analyzer/ana.h"

struct ana_session;

/* ana_session_open() - A session over the trace at @path (which may still
 * be being written: the reader takes its committed chunks), analyzed once.
 * @opt may be NULL (defaults: every thread, every domain, percentiles per
 * thread too, no samples: the rows never read them). Return: 0 and *@out, or -errno / -PT_E* with a message in
 * @err (*@out NULL). */
int ana_session_open(const char *path, const struct ana_options *opt, struct ana_session **out, char *err,
		     size_t errlen);

/* ana_session_update() - The analysis of the file as it is now (what was
 * committed since the last update is read, see above). On error the
 * previous result stays. Return: 0, or -errno / -PT_E* with a message in
 * @err. */
int ana_session_update(struct ana_session *s, char *err, size_t errlen);

/* ana_session_stats() - How its updates were made (ana.h). */
void ana_session_stats(const struct ana_session *s, struct ana_live_stats *out);

/* ana_session_result() - The current result (valid until the next update
 * or close). */
const struct ana_result *ana_session_result(const struct ana_session *s);

/* Which rows an iterator walks: the flat rows (one per name, all threads,
 * recursion-safe) or the merged call tree's paths (all threads). */
enum ana_view { ANA_VIEW_FLAT, ANA_VIEW_TREE };

/* One row: @a its aggregate; @id its name id; @node its tree node
 * (ANA_VIEW_TREE) or 0. */
struct ana_row_ref {
	enum ana_view view;
	uint32_t id, node;
	const struct ana_agg *a;
};

struct ana_row_iter {
	const struct ana_session *s;
	enum ana_view view;
	uint32_t next;
};

/* ana_rows_begin() / ana_rows_next() - The rows of @view that have
 * occurrences, in name-id order (flat) or tree order (a parent before its
 * children). ana_rows_next(): 1 = *@out set, 0 = end. */
void ana_rows_begin(const struct ana_session *s, enum ana_view view, struct ana_row_iter *it);
int ana_rows_next(struct ana_row_iter *it, struct ana_row_ref *out);

/* ana_row_json() - @row as the JSON report's row object (ana_json_row():
 * name, path for tree rows, count, total_ns, p50_ns...). A new reference;
 * NULL on ENOMEM. */
json_t *ana_row_json(const struct ana_session *s, const struct ana_row_ref *row);

/* ana_row_path() - @row's call path as the CSV writes it (names joined by
 * ';', ana_path_of()); the flat row's name for a flat row. In *@buf, grown
 * as needed (the caller frees it); NULL on ENOMEM. */
const char *ana_row_path(const struct ana_session *s, const struct ana_row_ref *row, char **buf, size_t *cap);

/* ana_session_close() - Frees the session; NULL is allowed. */
void ana_session_close(struct ana_session *s);

#endif /* PTZ_ANA_API_H */
