/*
 * viewer-export/pfx_chrome.c - Chrome trace-event JSON (chrome://tracing,
 * ui.perfetto.dev, speedscope), written while the trace is read.
 *
 * Design: one pass per thread over the reader's chunk index, a stack of
 * open sections per thread, and one complete event ("ph":"X") written at
 * each END. The output is a JSON array written by hand ("[", ",\n", "]"),
 * each element dumped by jansson from one reused object, so memory is the
 * deepest stack, never the number of records. Events of a thread come in
 * END order (children before their parent); the trace-event format does
 * not require any order, and every consumer sorts by ts.
 *
 * Nesting follows the analyzer exactly (analyzer/ana_build.c,
 * doc/analyzer-output.md §2), so the export and the report count the same
 * sections:
 *  - an END that is not the innermost section closes the matching deeper
 *    section, and the sections above it at the same timestamp; an END
 *    whose name is not open at all is skipped;
 *  - a chunk sequence gap drops the thread's open stack;
 *  - sections still open at the end of the trace are dropped (the analyzer
 *    does not aggregate them either);
 *  - with --since/--until only sections lying entirely inside the window
 *    are written; the window is converted to ticks with the mean slope,
 *    as the analyzer does.
 *
 * Time: ts = pt_reader_ticks_to_ns(BEGIN) / 1000 in µs (CLOCK_MONOTONIC).
 * dur is not the rounded duration but end_us - ts_us computed in double,
 * which is exact (Sterbenz) and makes ts + dur == end_us bit for bit:
 * consumers (speedscope, the Perfetto importer) compute the end that way,
 * so a child that ends in the same nanosecond as its parent still ends
 * there instead of one ulp after it, which they would report as bad
 * nesting. Each number is printed with the fewest digits (15..17) that
 * read back to the same double.
 *
 * args: X events carry none. speedscope keys frames by name plus args and
 * Perfetto's flame views merge by name, so anything varying per call
 * (durations, metrics) would split identical frames; metrics stay in the
 * analyzer's report and the Perfetto export. The category is the
 * section's timing domain ("ptz" for the default domain): constant per
 * name.
 *
 * Failure behaviour: a damaged chunk is skipped by the reader (its
 * problems stay in the reader; callers report them); a write error or an
 * allocation failure returns a negative error with the message in @err,
 * leaving a truncated file.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viewer-export/pfx.h"

/* Linux pid_max is at most 2^22: tids at or above this never collide. */
#define PFX_SYNTH_TID_BASE 4194304u

struct cframe {
	uint32_t id;
	uint64_t start_ticks;
};

struct cw {
	struct pt_reader *rd;
	FILE *out;
	uint64_t events;
	uint64_t since_ticks, until_ticks;
	/* one reused event object: no allocation per section */
	json_t *x, *x_name, *x_cat, *x_ts, *x_dur, *x_tid;
	int pid;
	char *scratch_name, *scratch_cat; /* UTF-8 repairs (ana_utf8_clean) */
	char unknown[48];
	char *err;
	size_t errlen;
};

/* Fewest significant digits (15..17) that read back to @v exactly. */
static int round_trip_digits(double v)
{
	char buf[40];
	for (int p = 15; p < 17; p++) {
		snprintf(buf, sizeof(buf), "%.*g", p, v);
		if (strtod(buf, NULL) == v)
			return p;
	}
	return 17;
}

static int emit(struct cw *w, json_t *ev, int digits)
{
	if (fputs(w->events ? ",\n" : "[\n", w->out) == EOF ||
	    json_dumpf(ev, w->out, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(digits)) != 0) {
		snprintf(w->err, w->errlen, "write failed: %s", strerror(errno ? errno : EIO));
		return -EIO;
	}
	w->events++;
	return 0;
}


static const char *section_name(struct cw *w, uint32_t id, const char **cat)
{
	uint32_t domain = 0;
	const char *n = pt_reader_string(w->rd, id, &domain);
	const char *d = domain ? pt_reader_domain(w->rd, domain) : NULL;
	*cat = d && *d ? ana_utf8_clean(d, &w->scratch_cat) : "ptz";
	if (!*cat)
		*cat = "ptz";
	if (!n) {
		snprintf(w->unknown, sizeof(w->unknown), "(unknown id %" PRIu32 ")", id);
		return w->unknown;
	}
	n = ana_utf8_clean(n, &w->scratch_name);
	return n ? n : "(name not valid UTF-8)";
}

/* Writes the X event of a section that ran from @f->start_ticks to @end_ticks. */
static int emit_section(struct cw *w, const struct cframe *f, uint64_t end_ticks)
{
	if (f->start_ticks < w->since_ticks || end_ticks > w->until_ticks)
		return 0;
	uint64_t b_ns = pt_reader_ticks_to_ns(w->rd, f->start_ticks);
	uint64_t e_ns = pt_reader_ticks_to_ns(w->rd, end_ticks);
	if (e_ns < b_ns)
		e_ns = b_ns;
	double ts = (double)b_ns / 1000.0, end = (double)e_ns / 1000.0;
	double dur = end - ts;
	const char *cat;
	const char *name = section_name(w, f->id, &cat);
	if (json_string_set(w->x_name, name) || json_string_set(w->x_cat, cat)) {
		snprintf(w->err, w->errlen, "out of memory");
		return -ENOMEM;
	}
	json_real_set(w->x_ts, ts);
	json_real_set(w->x_dur, dur);
	int d1 = round_trip_digits(ts), d2 = round_trip_digits(dur);
	return emit(w, w->x, d1 > d2 ? d1 : d2);
}

/* Takes @value (NULL = its allocation failed). */
static int emit_meta(struct cw *w, const char *what, uint32_t tid, const char *key, json_t *value)
{
	json_t *ev = json_pack("{s:s, s:s, s:i, s:I, s:{s:o}}", "name", what, "ph", "M", "pid", w->pid, "tid",
			       (json_int_t)tid, "args", key, value);
	if (!ev) {
		snprintf(w->err, w->errlen, "out of memory");
		return -ENOMEM;
	}
	int rc = emit(w, ev, 17);
	json_decref(ev);
	return rc;
}

/* A counter sample ("ph":"C"): one process-scoped track per counter name. */
static int emit_counter(struct cw *w, const struct pt_record *r)
{
	const char *name = pt_reader_string(w->rd, r->id, NULL);
	if (!name) {
		snprintf(w->unknown, sizeof(w->unknown), "(unknown counter %" PRIu32 ")", r->id);
		name = w->unknown;
	} else if (!(name = ana_utf8_clean(name, &w->scratch_name))) {
		snprintf(w->err, w->errlen, "out of memory");
		return -ENOMEM;
	}
	double ts = (double)pt_reader_ticks_to_ns(w->rd, r->ticks) / 1000.0;
	json_t *ev = json_pack("{s:s, s:s, s:s, s:f, s:i, s:{s:I}}", "name", name, "cat", "ptz", "ph", "C", "ts", ts,
			       "pid", w->pid, "args", "value", (json_int_t)(int64_t)r->value);
	if (!ev) {
		snprintf(w->err, w->errlen, "out of memory");
		return -ENOMEM;
	}
	int rc = emit(w, ev, round_trip_digits(ts));
	json_decref(ev);
	return rc;
}

/* A LOSS record: a thread-scoped instant, so the gap is visible on the timeline. */
static int emit_loss(struct cw *w, uint32_t tid, const struct pt_record *r)
{
	double ts = (double)pt_reader_ticks_to_ns(w->rd, r->ticks) / 1000.0;
	json_t *ev = json_pack("{s:s, s:s, s:s, s:s, s:f, s:i, s:I, s:{s:I, s:I}}", "name", "ptz: records lost", "cat",
			       "ptz", "ph", "i", "s", "t", "ts", ts, "pid", w->pid, "tid", (json_int_t)tid, "args",
			       "records", (json_int_t)r->value, "sections", (json_int_t)r->value2);
	if (!ev) {
		snprintf(w->err, w->errlen, "out of memory");
		return -ENOMEM;
	}
	int rc = emit(w, ev, round_trip_digits(ts));
	json_decref(ev);
	return rc;
}

static int export_thread(struct cw *w, const struct pt_thread_info *ti, uint32_t tid)
{
	struct cframe *st = NULL;
	uint32_t depth = 0, cap = 0;
	uint64_t next_seq = 0;
	struct pt_chunk_info ci;
	struct pt_record r;
	int rc = 0, more;
	json_integer_set(w->x_tid, tid);
	pt_reader_rewind(w->rd);
	while (rc == 0 && (more = pt_reader_next_chunk(w->rd, ti->index, &ci)) == 1) {
		if (ci.sequence != next_seq)
			depth = 0; /* chunks lost: the open stack is unreliable */
		next_seq = ci.sequence + 1;
		while (rc == 0 && pt_reader_next_record(w->rd, &r) == 1) {
			switch (r.kind) {
			case PT_REC_BEGIN:
				if (depth == cap) {
					uint32_t nc = cap ? cap * 2 : 64;
					struct cframe *s = realloc(st, nc * sizeof(*s));
					if (!s) {
						snprintf(w->err, w->errlen, "out of memory");
						rc = -ENOMEM;
						break;
					}
					st = s;
					cap = nc;
				}
				st[depth++] = (struct cframe){ r.id, r.ticks };
				break;
			case PT_REC_END: {
				int k = (int)depth - 1;
				while (k >= 0 && st[k].id != r.id)
					k--;
				if (k < 0)
					break; /* not open: skipped, as the analyzer does */
				while (rc == 0 && (int)depth > k)
					rc = emit_section(w, &st[--depth], r.ticks);
				break;
			}
			case PT_REC_COUNTER:
				if (r.ticks >= w->since_ticks && r.ticks <= w->until_ticks)
					rc = emit_counter(w, &r);
				break;
			case PT_REC_LOSS:
				if (r.ticks >= w->since_ticks && r.ticks <= w->until_ticks)
					rc = emit_loss(w, tid, &r);
				break;
			default:
				break;
			}
		}
	}
	if (rc == 0 && more < 0) {
		snprintf(w->err, w->errlen, "%s", pt_reader_errmsg(w->rd));
		rc = more;
	}
	free(st); /* sections still open at the end are dropped */
	return rc;
}

int pfx_write_chrome(const char *trace_path, FILE *out, const struct pfx_opts *o, char *err, size_t errlen)
{
	struct cw w = { .out = out, .err = err, .errlen = errlen };
	int rc = pt_reader_open(trace_path, &w.rd);
	if (rc) {
		snprintf(err, errlen, "%s", w.rd ? pt_reader_errmsg(w.rd) : pt_strerror(rc));
		pt_reader_close(w.rd);
		return rc;
	}
	const struct pt_trace_info *info = pt_reader_info(w.rd);
	double ns_per_tick = pt_reader_ns_per_tick(w.rd);
	uint64_t t0 = info->start_ticks;
	w.since_ticks = o && o->since_ns ? t0 + (uint64_t)((double)o->since_ns / ns_per_tick) : 0;
	w.until_ticks = o && o->until_ns ? t0 + (uint64_t)((double)o->until_ns / ns_per_tick) : UINT64_MAX;
	w.pid = (int)info->pid;
	w.x = json_object();
	w.x_name = json_string("");
	w.x_cat = json_string("ptz");
	w.x_ts = json_real(0);
	w.x_dur = json_real(0);
	w.x_tid = json_integer(0);
	if (!w.x || !w.x_name || !w.x_cat || !w.x_ts || !w.x_dur || !w.x_tid ||
	    json_object_set(w.x, "name", w.x_name) || json_object_set(w.x, "cat", w.x_cat) ||
	    json_object_set_new(w.x, "ph", json_string("X")) || json_object_set(w.x, "ts", w.x_ts) ||
	    json_object_set(w.x, "dur", w.x_dur) || json_object_set_new(w.x, "pid", json_integer(w.pid)) ||
	    json_object_set(w.x, "tid", w.x_tid)) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	const char *pname = info->process_name && *info->process_name ? info->process_name : "ptz trace";
	pname = ana_utf8_clean(pname, &w.scratch_name);
	rc = emit_meta(&w, "process_name", 0, "name", pname ? json_string(pname) : NULL);
	size_t nthreads = pt_reader_thread_count(w.rd);
	for (size_t i = 0; rc == 0 && i < nthreads; i++) {
		struct pt_thread_info ti;
		char name[64];
		pt_reader_thread(w.rd, i, &ti);
		uint32_t tid = ti.tid ? ti.tid : PFX_SYNTH_TID_BASE + ti.index;
		const char *tname = name;
		if (ti.name && *ti.name)
			tname = ana_utf8_clean(ti.name, &w.scratch_name);
		else
			snprintf(name, sizeof(name), "thread %" PRIu32, ti.index);
		rc = emit_meta(&w, "thread_name", tid, "name", tname ? json_string(tname) : NULL);
		if (rc == 0) /* keeps the recorder's thread order in chrome://tracing and Perfetto */
			rc = emit_meta(&w, "thread_sort_index", tid, "sort_index", json_integer(ti.index));
		if (rc == 0)
			rc = export_thread(&w, &ti, tid);
	}
	if (rc == 0 && (fputs(w.events ? "\n]\n" : "[\n]\n", out) == EOF || fflush(out) == EOF || ferror(out))) {
		snprintf(err, errlen, "write failed: %s", strerror(errno ? errno : EIO));
		rc = -EIO;
	}
out:
	json_decref(w.x);
	json_decref(w.x_name);
	json_decref(w.x_cat);
	json_decref(w.x_ts);
	json_decref(w.x_dur);
	json_decref(w.x_tid);
	free(w.scratch_name);
	free(w.scratch_cat);
	pt_reader_close(w.rd);
	return rc;
}
