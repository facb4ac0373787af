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
 * Nesting: the rules of replay/replay.h, which the analyzer and the
 * Perfetto export follow too, so the export and the report count the same
 * sections (tests/export/agree): an END closes the nearest open section of
 * its name and the ones above it (none open: skipped); a chunk sequence
 * gap cuts the open stack (not written); a thread's ticks never go back
 * (X events nest); past RP_MAX_DEPTH sections are not written; sections
 * still open at the end are not written (the analyzer does not aggregate
 * them either); with --since/--until only sections lying entirely inside
 * the window are written, the window converted to ticks exactly as the
 * analyzer does (pfx_window_ticks(): the trace slope, since rounded up).
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
 * GPU ranges, async ranges and instants (format 1.1; layout shared with
 * the Perfetto export, viewer-export/pfx_ranges.h):
 *  - GPU ranges are X events on a pseudo thread per (device, stream, lane),
 *    tid PFX_GPU_TID_BASE + lane index, named "GPU n stream k" by
 *    thread_name metadata and sorted after the real threads. Their start
 *    is clamped to the launch (no args, as for sections: the raw offset is
 *    only in the Perfetto export).
 *  - Flows: an "s" event at the CPU section's start right after its X
 *    event, and an "f" event with "bp":"e" at the GPU range's start right
 *    after the range's X event, both named "gpu launch", cat "ptz.flow",
 *    id = the launch seq; written only when both ends are. "s" and "f"
 *    bind to the slice enclosing their timestamp on their thread: if a
 *    child of the CPU section starts at the same timestamp as the section,
 *    a consumer may start the arrow at that child (the Perfetto export has
 *    no such ambiguity: its flow ids sit on the events themselves).
 *  - Async ranges are "b"/"e" pairs (cat = the name's domain, id = the
 *    async id as a hex string, since JavaScript numbers lose bits above
 *    2^53), each on its writing thread; a range never ended gets its "e" at
 *    the trace's last tick with args {"ptz.open_at_end": true}; ends with
 *    no begin are counted by one process-scoped instant.
 *  - INSTANT records are thread-scoped "i" events.
 *  - A thread named "ptz-gpu" without sections gets no thread metadata;
 *    its counters are process-wide already, its instants, losses and
 *    errors are process-scoped ("s":"p", no tid).
 *
 * Threads: tid and name as in the Perfetto export (pfx_thread_tid(),
 * pfx_thread_name()): a thread whose tid was lost gets a made-up tid at or
 * above PFX_LOST_TID_BASE, never a real thread's nor a GPU pseudo thread's.
 *
 * LOSS and ERROR records are instants on their thread, "ptz: records lost"
 * and "ptz: recorder error", with the Perfetto export's error names
 * (pfx_errc_name()); those of the meta chunks (process-wide) are
 * process-scoped.
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

#include <xxhash.h>

#include "replay/replay.h"
#include "viewer-export/pfx.h"
#include "viewer-export/pfx_ranges.h"

/* GPU pseudo threads: above every real tid (Linux pid_max is at most 2^22)
 * and below the made-up tids of threads that lost theirs (pfx_thread_tid()). */
#define PFX_GPU_TID_BASE 8388608u
#define PFX_GPU_SORT_BASE 1048576

struct cframe {
	uint32_t id;
	uint64_t start_ticks;
	struct pfx_gpu_range *gpu; /* the GPU range its GPU_LAUNCH took, or NULL */
};

struct cw {
	struct rp_ns ns; /* ticks to ns for the file being written (out_ns()) */
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
	struct pfx_gpu gpu;
	size_t gpu_no_lane;          /* ranges of the window with no lane (pfx_gpu_keep) */
	uint64_t gpu_no_lane_ticks;  /* the first one's start */
	struct pfx_async async;
	bool routed; /* the thread being exported is a "ptz-gpu" thread */
	uint32_t file;    /* its index in a set (pfx_write_chrome_set()); 0 = ids as a one-trace export */
	int64_t ts_shift; /* ns added to every timestamp (struct pfx_set_place) */
};

/* Tick @ticks on the output's time axis, ns. */
static inline uint64_t out_ns(const struct cw *w, uint64_t ticks)
{
	return rp_ns((struct rp_ns *)&w->ns, ticks) + (uint64_t)w->ts_shift; /* a cache, not the context */
}

/* A flow or async id @x of file w->file of a set: itself for the first
 * file, else its xxHash seeded with the file's index, cut to 53 bits
 * (JSON readers hold numbers as doubles), so files do not share ids. */
static inline uint64_t set_id(const struct cw *w, uint64_t x)
{
	return w->file ? XXH64(&x, sizeof(x), w->file) >> 11 : x;
}

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

/* Names are untrusted: every non-ASCII character is written as a \uXXXX
 * escape (JSON_ENSURE_ASCII), so C1 controls and bidi overrides never
 * reach a terminal raw; viewers decode the same string. */
static int emit(struct cw *w, json_t *ev, int digits)
{
	if (fputs(w->events ? ",\n" : "[\n", w->out) == EOF ||
	    json_dumpf(ev, w->out, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(digits)) != 0) {
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

/* Writes the X event of @id from @start_ticks to @end_ticks (the reused
 * object's tid is the caller's). */
static int emit_x(struct cw *w, uint32_t id, uint64_t start_ticks, uint64_t end_ticks)
{
	uint64_t b_ns = out_ns(w, start_ticks);
	uint64_t e_ns = out_ns(w, end_ticks);
	if (e_ns < b_ns)
		e_ns = b_ns;
	double ts = (double)b_ns / 1000.0, end = (double)e_ns / 1000.0;
	double dur = end - ts;
	const char *cat;
	const char *name = section_name(w, id, &cat);
	if (json_string_set(w->x_name, name) || json_string_set(w->x_cat, cat)) {
		snprintf(w->err, w->errlen, "out of memory");
		return -ENOMEM;
	}
	json_real_set(w->x_ts, ts);
	json_real_set(w->x_dur, dur);
	int d1 = round_trip_digits(ts), d2 = round_trip_digits(dur);
	return emit(w, w->x, d1 > d2 ? d1 : d2);
}

/* Writes @ev with @digits significant digits and releases it (NULL = its
 * allocation failed: -ENOMEM). */
static int emit_owned(struct cw *w, json_t *ev, int digits)
{
	if (!ev) {
		snprintf(w->err, w->errlen, "out of memory");
		return -ENOMEM;
	}
	int rc = emit(w, ev, digits);
	json_decref(ev);
	return rc;
}

/* Takes @ev (NULL = its allocation failed); @ts in µs sets the digits. */
static int emit_new(struct cw *w, json_t *ev, double ts)
{
	return emit_owned(w, ev, round_trip_digits(ts));
}

static double ts_us(const struct cw *w, uint64_t ticks)
{
	return (double)out_ns(w, ticks) / 1000.0;
}

/* One end of a CPU-to-GPU flow ("s" or "f"), id = the launch seq. */
static int emit_flow(struct cw *w, const char *ph, uint64_t seq, uint64_t ticks, uint32_t tid)
{
	const double ts = ts_us(w, ticks);
	json_t *ev = *ph == 's'
			     ? json_pack("{s:s, s:s, s:s, s:I, s:f, s:i, s:I}", "name", "gpu launch", "cat",
					 "ptz.flow", "ph", ph, "id", (json_int_t)set_id(w, seq), "ts", ts, "pid", w->pid, "tid",
					 (json_int_t)tid)
			     : json_pack("{s:s, s:s, s:s, s:s, s:I, s:f, s:i, s:I}", "name", "gpu launch", "cat",
					 "ptz.flow", "ph", ph, "bp", "e", "id", (json_int_t)set_id(w, seq), "ts", ts, "pid", w->pid,
					 "tid", (json_int_t)tid);
	return emit_new(w, ev, ts);
}

/* Writes the X event of a section that ran from @f->start_ticks to
 * @end_ticks, and the start of its flow to its GPU range if it has one. */
static int emit_section(struct cw *w, const struct cframe *f, uint64_t end_ticks)
{
	if (!rp_kept(w->since_ticks, w->until_ticks, f->start_ticks, end_ticks)) /* replay/replay.h rule 7 */
		return 0;
	int rc = emit_x(w, f->id, f->start_ticks, end_ticks);
	struct pfx_gpu_range *g = f->gpu; /* its launch's alone (pfx_gpu_launch()) */
	if (rc || !g || !(g->flags & PFX_GPU_KEEP))
		return rc;
	g->flags |= PFX_GPU_LINKED;
	return emit_flow(w, "s", g->seq, f->start_ticks, (uint32_t)json_integer_value(w->x_tid));
}

/* Takes @value (NULL = its allocation failed). */
static int emit_meta(struct cw *w, const char *what, uint32_t tid, const char *key, json_t *value)
{
	json_t *ev = json_pack("{s:s, s:s, s:i, s:I, s:{s:o}}", "name", what, "ph", "M", "pid", w->pid, "tid",
			       (json_int_t)tid, "args", key, value);
	return emit_owned(w, ev, 17);
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
	double ts = ts_us(w, r->ticks);
	json_t *ev = json_pack("{s:s, s:s, s:s, s:f, s:i, s:{s:I}}", "name", name, "cat", "ptz", "ph", "C", "ts", ts,
			       "pid", w->pid, "args", "value", (json_int_t)(int64_t)r->value);
	return emit_new(w, ev, ts);
}

/* A LOSS or ERROR record: a thread-scoped instant, so the gap or the
 * misuse shows on the timeline (process-scoped for a "ptz-gpu" thread),
 * named as in the Perfetto export: "ptz: records lost" {records, sections},
 * "ptz: recorder error" {error, count} ({error, errno} for PT_ERRC_IO). */
static int emit_loss_or_error(struct cw *w, uint32_t tid, const struct pt_record *r)
{
	const double ts = ts_us(w, r->ticks);
	const bool loss = r->kind == PT_REC_LOSS;
	const char *name = loss ? "ptz: records lost" : "ptz: recorder error";
	json_t *args = loss ? json_pack("{s:I, s:I}", "records", (json_int_t)r->value, "sections", (json_int_t)r->value2)
			    : json_pack("{s:s, s:I}", "error", pfx_errc_name(r->aux),
					(r->aux == PT_ERRC_IO || r->aux == PT_ERRC_SNAPSHOT || r->aux == PT_ERRC_ROTATE) ? "errno" : "count", (json_int_t)r->value);
	if (!args)
		return emit_new(w, NULL, ts);
	json_t *ev = w->routed ? json_pack("{s:s, s:s, s:s, s:s, s:f, s:i, s:o}", "name", name, "cat", "ptz", "ph", "i",
					   "s", "p", "ts", ts, "pid", w->pid, "args", args)
			       : json_pack("{s:s, s:s, s:s, s:s, s:f, s:i, s:I, s:o}", "name", name, "cat", "ptz", "ph",
					   "i", "s", "t", "ts", ts, "pid", w->pid, "tid", (json_int_t)tid, "args", args);
	return emit_new(w, ev, ts);
}

/* The LOSS and ERROR records of the meta chunks (the recorder's
 * process-wide counts): process-scoped instants, as in the Perfetto export. */
static int emit_process_records(struct cw *w)
{
	struct pt_chunk_info ci;
	struct pt_record r;
	int rc = 0, more;
	w->routed = true;
	pt_reader_rewind(w->rd);
	while (rc == 0 && (more = pt_reader_next_chunk(w->rd, PT_FMT_META_THREAD, &ci, sizeof(ci))) == 1)
		while (rc == 0 && pt_reader_next_record(w->rd, &r, sizeof(r)) == 1)
			if ((r.kind == PT_REC_LOSS || r.kind == PT_REC_ERROR) && r.ticks >= w->since_ticks &&
			    r.ticks <= w->until_ticks)
				rc = emit_loss_or_error(w, 0, &r);
	w->routed = false;
	if (rc == 0 && more < 0) {
		snprintf(w->err, w->errlen, "%s", pt_reader_errmsg(w->rd));
		rc = more;
	}
	return rc;
}

/* An INSTANT record: "i" on its thread (process-scoped for "ptz-gpu"). */
static int emit_instant(struct cw *w, uint32_t tid, const struct pt_record *r)
{
	const double ts = ts_us(w, r->ticks);
	const char *cat;
	const char *name = section_name(w, r->id, &cat);
	json_t *ev = w->routed ? json_pack("{s:s, s:s, s:s, s:s, s:f, s:i}", "name", name, "cat", cat, "ph", "i", "s",
					   "p", "ts", ts, "pid", w->pid)
			       : json_pack("{s:s, s:s, s:s, s:s, s:f, s:i, s:I}", "name", name, "cat", cat, "ph", "i",
					   "s", "t", "ts", ts, "pid", w->pid, "tid", (json_int_t)tid);
	return emit_new(w, ev, ts);
}

static int export_thread(struct cw *w, const struct pt_thread_info *ti, uint32_t tid)
{
	struct cframe *st = NULL;
	uint32_t depth = 0, cap = 0;
	struct rp_thread rt = { 0 }; /* replay/replay.h: the nesting rules the analyzer follows */
	struct pfx_gpu_range *launch_g = NULL; /* the range the GPU_LAUNCH just read took (rule 9) */
	struct pt_chunk_info ci;
	struct pt_record r;
	int rc = 0, more;
	json_integer_set(w->x_tid, tid);
	pt_reader_rewind(w->rd);
	while (rc == 0 && (more = pt_reader_next_chunk(w->rd, ti->index, &ci, sizeof(ci))) == 1) {
		if (rp_chunk(&rt, ci.sequence)) { /* rule 1: chunks lost, the open stack is cut (not written) */
			depth = 0;
			rp_cut(&rt);
		}
		struct rp_dec dec;
		rp_dec_start(&dec, w->rd);
		while (rc == 0 && rp_dec_next(&dec, &r) == 1) {
			const uint64_t launch_seq = rp_launch_of(&rt, r.kind, r.id); /* rule 8 */
			r.ticks = rp_ticks(&rt, r.kind, r.ticks);                  /* rule 2: X events nest */
			switch (r.kind) {
			case PT_REC_BEGIN:
				if (!rp_begin(&rt, depth)) /* rule 3: too deep, not written */
					break;
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
				st[depth++] = (struct cframe){ r.id, r.ticks, launch_seq ? launch_g : NULL };
				break;
			case PT_REC_END: {
				uint32_t n = RP_END(&rt, st, depth, r.id); /* rules 3, 4 */
				if (n == RP_END_TOO_DEEP)
					break;
				while (rc == 0 && n-- > 0) /* 0: not open, skipped */
					rc = emit_section(w, &st[--depth], r.ticks);
				break;
			}
			case PT_REC_COUNTER:
				if (r.ticks >= w->since_ticks && r.ticks <= w->until_ticks)
					rc = emit_counter(w, &r);
				break;
			case PT_REC_LOSS:
			case PT_REC_ERROR:
				if (r.ticks >= w->since_ticks && r.ticks <= w->until_ticks)
					rc = emit_loss_or_error(w, tid, &r);
				break;
			case PT_REC_INSTANT:
				if (r.ticks >= w->since_ticks && r.ticks <= w->until_ticks)
					rc = emit_instant(w, tid, &r);
				break;
			case PT_REC_GPU_LAUNCH:
				rp_launch_note(&rt, &r);
				launch_g = pfx_gpu_launch(&w->gpu, r.value2); /* rule 9 (replay/pair.h) */
				break;
			case PT_REC_ASYNC_BEGIN:
			case PT_REC_ASYNC_END:
				if (pfx_async_add(&w->async, &r, tid)) {
					snprintf(w->err, w->errlen, "out of memory");
					rc = -ENOMEM;
				}
				break;
			default: /* GPU_RANGE: read by pfx_gpu_collect() */
				break;
			}
		}
	}
	if (rc == 0 && more < 0) {
		snprintf(w->err, w->errlen, "%s", pt_reader_errmsg(w->rd));
		rc = more;
	}
	free(st); /* rule 5: sections still open at the end are not written */
	return rc;
}

/* The GPU ranges inside the window: metadata per lane, then per range its
 * X event and the end of its flow. */
static int emit_gpu(struct cw *w)
{
	const struct pfx_gpu *g = &w->gpu;
	bool *used = calloc(g->nlanes + 1, sizeof(bool));
	int rc = 0;
	if (!used) {
		snprintf(w->err, w->errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < g->n; i++)
		if (g->r[i].flags & PFX_GPU_KEEP)
			used[g->r[i].lane] = true;
	for (size_t i = 0; rc == 0 && i < g->nlanes; i++) {
		if (!used[i])
			continue;
		const struct pfx_gpu_lane *l = &g->lanes[i];
		char name[96], lane[24] = "";
		if (l->lane)
			snprintf(lane, sizeof(lane), " (overlap %" PRIu32 ")", l->lane);
		if (l->stream <= UINT32_MAX)
			snprintf(name, sizeof(name), "GPU %" PRIu32 " stream %" PRIu64 "%s", l->device, l->stream, lane);
		else
			snprintf(name, sizeof(name), "GPU %" PRIu32 " stream 0x%" PRIx64 "%s", l->device, l->stream, lane);
		rc = emit_meta(w, "thread_name", PFX_GPU_TID_BASE + (uint32_t)i, "name", json_string(name));
		if (rc == 0)
			rc = emit_meta(w, "thread_sort_index", PFX_GPU_TID_BASE + (uint32_t)i, "sort_index",
				       json_integer(PFX_GPU_SORT_BASE + (json_int_t)i));
	}
	for (size_t i = 0; rc == 0 && i < g->n; i++) {
		const struct pfx_gpu_range *r = &g->r[i];
		if (!(r->flags & PFX_GPU_KEEP))
			continue;
		json_integer_set(w->x_tid, PFX_GPU_TID_BASE + r->lane);
		rc = emit_x(w, r->name_id, r->start_ticks, r->end_ticks);
		if (rc == 0 && (r->flags & PFX_GPU_LINKED))
			rc = emit_flow(w, "f", r->seq, r->start_ticks, PFX_GPU_TID_BASE + r->lane);
	}
	free(used);
	/* ranges with no lane (PFX_GPU_MAX_LANES): not drawn, counted in one
	 * instant at the first */
	if (rc == 0 && w->gpu_no_lane) {
		const double ts = ts_us(w, w->gpu_no_lane_ticks);
		rc = emit_new(w,
			      json_pack("{s:s, s:s, s:s, s:s, s:f, s:i, s:{s:I, s:i}}", "name",
					"ptz: GPU ranges not drawn (overlapping on one stream beyond its lanes)", "cat",
					"ptz", "ph", "i", "s", "p", "ts", ts, "pid", w->pid, "args", "count",
					(json_int_t)w->gpu_no_lane, "max_lanes_per_stream", (int)PFX_GPU_MAX_LANES),
			      ts);
	}
	return rc;
}

/* The async ranges inside the window as "b"/"e" pairs, then the count of
 * ASYNC_ENDs without a begin. */
static int emit_async(struct cw *w)
{
	struct pfx_async *a = &w->async;
	int rc = pfx_async_finish(a, pfx_trace_end_ticks(w->rd));
	if (rc) {
		snprintf(w->err, w->errlen, "out of memory");
		return rc;
	}
	for (size_t i = 0; rc == 0 && i < a->n; i++) {
		const struct pfx_async_range *r = &a->r[i];
		if (r->begin_ticks < w->since_ticks || r->end_ticks > w->until_ticks)
			continue;
		char id[24];
		snprintf(id, sizeof(id), "0x%" PRIx64, w->file ? XXH64(&r->async_id, sizeof(r->async_id), w->file) : r->async_id);
		const char *cat;
		const char *name = section_name(w, r->name_id, &cat);
		const double b = ts_us(w, r->begin_ticks), e = ts_us(w, r->end_ticks);
		rc = emit_new(w,
			      json_pack("{s:s, s:s, s:s, s:s, s:f, s:i, s:I}", "name", name, "cat", cat, "ph", "b", "id",
					id, "ts", b, "pid", w->pid, "tid", (json_int_t)r->begin_thread),
			      b);
		if (rc)
			break;
		rc = emit_new(w,
			      r->open_at_end
				      ? json_pack("{s:s, s:s, s:s, s:s, s:f, s:i, s:I, s:{s:b}}", "name", name, "cat", cat,
						  "ph", "e", "id", id, "ts", e, "pid", w->pid, "tid",
						  (json_int_t)r->end_thread, "args", "ptz.open_at_end", 1)
				      : json_pack("{s:s, s:s, s:s, s:s, s:f, s:i, s:I}", "name", name, "cat", cat, "ph",
						  "e", "id", id, "ts", e, "pid", w->pid, "tid", (json_int_t)r->end_thread),
			      e);
	}
	uint64_t n = 0, first = 0;
	for (size_t i = 0; i < a->nunmatched; i++) {
		const uint64_t t = a->unmatched_end_ticks[i];
		if (t >= w->since_ticks && t <= w->until_ticks && !n++)
			first = t;
	}
	if (rc == 0 && n) {
		const double ts = ts_us(w, first);
		rc = emit_new(w,
			      json_pack("{s:s, s:s, s:s, s:s, s:f, s:i, s:{s:I}}", "name",
					"ptz: async ends without a begin", "cat", "ptz", "ph", "i", "s", "p", "ts", ts,
					"pid", w->pid, "args", "count", (json_int_t)n),
			      ts);
	}
	return rc;
}

/* Writes the events of the trace at @path as file @pl->file of the array
 * (w->events carries over: one array for the set). */
static int chrome_file(struct cw *w, const char *path, const struct pfx_opts *o, const struct pfx_set_place *pl)
{
	int rc = pt_reader_open_trace(path, &w->rd);
	if (rc == 0)
		rp_ns_init(&w->ns, w->rd);
	if (rc) {
		snprintf(w->err, w->errlen, "%s", w->rd ? pt_reader_errmsg(w->rd) : pt_strerror(rc));
		goto out;
	}
	const struct pt_trace_info *info = pt_reader_info(w->rd);
	pfx_window_ticks(w->rd, o ? o->since_ns : 0, o ? o->until_ns : 0, &w->since_ticks, &w->until_ticks);
	w->file = pl->file;
	w->pid = pl->pid;
	w->ts_shift = pl->ts_shift;
	if (json_object_set_new(w->x, "pid", json_integer(w->pid))) {
		snprintf(w->err, w->errlen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	rc = pfx_gpu_collect(&w->gpu, w->rd); /* before any thread: CPU sections link to it */
	if (rc) {
		snprintf(w->err, w->errlen, "%s", rc == -ENOMEM ? "out of memory" : pt_reader_errmsg(w->rd));
		goto out;
	}
	w->gpu_no_lane = pfx_gpu_keep(&w->gpu, w->since_ticks, w->until_ticks, &w->gpu_no_lane_ticks);
	char pbuf[512];
	const char *pname = pfx_process_name(info, "ptz trace", pbuf, sizeof(pbuf));
	pname = ana_utf8_clean(pname, &w->scratch_name);
	rc = emit_meta(w, "process_name", 0, "name", pname ? json_string(pname) : NULL);
	if (rc == 0)
		rc = emit_process_records(w);
	size_t nthreads = pt_reader_thread_count(w->rd);
	for (size_t i = 0; rc == 0 && i < nthreads; i++) {
		struct pt_thread_info ti;
		char name[PFX_THREAD_NAME_BYTES];
		pt_reader_thread(w->rd, i, &ti, sizeof(ti));
		const uint32_t tid = pfx_thread_tid(&ti); /* the Perfetto export's too */
		const char *tname = ana_utf8_clean(pfx_thread_name(&ti, name), &w->scratch_name);
		bool sections = true;
		w->routed = pfx_gpu_thread(&w->gpu, ti.index, &sections);
		if (sections) /* a "ptz-gpu" thread without sections: no empty thread */
			rc = emit_meta(w, "thread_name", tid, "name", tname ? json_string(tname) : NULL);
		if (rc == 0 && sections) /* keeps the recorder's thread order in chrome://tracing and Perfetto */
			rc = emit_meta(w, "thread_sort_index", tid, "sort_index", json_integer(ti.index));
		if (rc == 0)
			rc = export_thread(w, &ti, tid);
	}
	w->routed = false;
	if (rc == 0 && w->gpu.n)
		rc = emit_gpu(w);
	if (rc == 0 && w->async.ready)
		rc = emit_async(w);
	if (rc == 0 && o && o->file_read)
		o->file_read(o->file_read_ctx, pl->file, w->rd);
out:
	pfx_gpu_free(&w->gpu); /* emptied, ready for the next file */
	pfx_async_free(&w->async);
	w->gpu_no_lane = 0;
	pt_reader_close(w->rd);
	w->rd = NULL;
	return rc;
}

int pfx_write_chrome_set(const char *const *paths, size_t n, FILE *out, const struct pfx_opts *o, char *err,
			 size_t errlen)
{
	struct cw w = { .out = out, .err = err, .errlen = errlen };
	struct pfx_set_place *place = calloc(n ? n : 1, sizeof(*place));
	int rc = 0;
	w.x = json_object();
	w.x_name = json_string("");
	w.x_cat = json_string("ptz");
	w.x_ts = json_real(0);
	w.x_dur = json_real(0);
	w.x_tid = json_integer(0);
	if (!place || !w.x || !w.x_name || !w.x_cat || !w.x_ts || !w.x_dur || !w.x_tid ||
	    json_object_set(w.x, "name", w.x_name) || json_object_set(w.x, "cat", w.x_cat) ||
	    json_object_set_new(w.x, "ph", json_string("X")) || json_object_set(w.x, "ts", w.x_ts) ||
	    json_object_set(w.x, "dur", w.x_dur) || json_object_set_new(w.x, "pid", json_integer(0)) ||
	    json_object_set(w.x, "tid", w.x_tid)) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	size_t bad = 0;
	rc = pfx_set_places(paths, n, place, &bad, err, errlen);
	for (size_t k = 0; k < n && rc == 0; k++)
		if ((rc = chrome_file(&w, paths[k], o, &place[k])) && n > 1)
			pfx_set_name_file(err, errlen, paths[k]);
	if (rc == 0 && (fputs(w.events ? "\n]\n" : "[\n]\n", out) == EOF || fflush(out) == EOF || ferror(out))) {
		snprintf(err, errlen, "write failed: %s", strerror(errno ? errno : EIO));
		rc = -EIO;
	}
out:
	free(place);
	json_decref(w.x);
	json_decref(w.x_name);
	json_decref(w.x_cat);
	json_decref(w.x_ts);
	json_decref(w.x_dur);
	json_decref(w.x_tid);
	free(w.scratch_name);
	free(w.scratch_cat);
	return rc;
}

int pfx_write_chrome(const char *trace_path, FILE *out, const struct pfx_opts *o, char *err, size_t errlen)
{
	return pfx_write_chrome_set(&trace_path, 1, out, o, err, errlen);
}
