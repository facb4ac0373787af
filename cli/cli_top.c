/*
 * cli/cli_top.c - `ptanalyze top TRACE.ptz`: a live view of a trace that a
 * program is still writing (issue 18), refreshed in the terminal: the
 * section names that took the most time since the last refresh.
 *
 * Each refresh analyzes the trace as it is now through the session API
 * (analyzer/ana_api.h: ana_session_update(), which reads only what was
 * committed since the last refresh, see that header) and shows, per section
 * name (all threads, recursion-safe totals, doc/analyzer-output.md §2):
 * calls in the interval and per second, the interval's busy share, and the
 * name's totals, mean and p50/p99 so far. The interval is measured on the
 * trace's own clock (its last event), not the terminal's, so a program that
 * records nothing new shows an interval of 0 and no rates. The view ends
 * when the writer finalizes the trace (pt_close()), after --iterations
 * frames, or on SIGINT/SIGTERM; exit 0 then, 1 if the trace cannot be read.
 * On a terminal each frame replaces the last; otherwise frames follow one
 * another, separated by a blank line.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "analyzer/ana.h"
#include "analyzer/ana_api.h"
#include "cli/cli_top.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* Sleeps @s seconds, waking early on a signal that asked to stop. */
static void nap(double s)
{
	const double step = 0.05;
	for (double left = s; left > 0 && !stop_requested; left -= step) {
		const double d = left < step ? left : step;
		struct timespec ts = { (time_t)d, (long)((d - (double)(time_t)d) * 1e9) };
		nanosleep(&ts, NULL);
	}
}

struct top_row {
	uint32_t id;
	uint64_t dcount, dtotal; /* since the last frame */
};

static int cmp_row(const void *a, const void *b)
{
	const struct top_row *x = a, *y = b;
	if (x->dtotal != y->dtotal)
		return x->dtotal < y->dtotal ? 1 : -1;
	if (x->dcount != y->dcount)
		return x->dcount < y->dcount ? 1 : -1;
	return (x->id > y->id) - (x->id < y->id);
}

/*
 * One frame of @res: header, then the @top names with the most time since
 * the last frame (@prev: name -> [count, total_ns] of that frame, updated
 * here; a jansson object, the one hash table the analyzer already links).
 * @dt_ns: the trace-clock time since the last frame (the whole span at the
 * first). Return: 0, or -1 on ENOMEM.
 */
static int frame(FILE *out, const char *path, const struct ana_result *res, json_t *prev, uint64_t dt_ns, int top,
		 unsigned n)
{
	const struct pt_trace_info *info = pt_reader_info(res->rd);
	char b[6][32];
	fprintf(out, "ptz top: %s (%s, pid %" PRIu32 ")%s\n", path, ana_text_safe(info->process_name), info->pid,
		info->closed ? " - finalized" : "");
	fprintf(out, "frame %u: %s recorded, %" PRIu64 " sections, %" PRIu64 " records lost; interval %s of trace time\n",
		n, ana_fmt_dur(b[0], sizeof(b[0]), (double)(res->end_ns - res->start_ns)), res->sections,
		res->lost_records, ana_fmt_dur(b[1], sizeof(b[1]), (double)dt_ns));
	struct top_row *rows = malloc((res->nnames ? res->nnames : 1) * sizeof(*rows));
	if (!rows)
		return -1;
	uint32_t k = 0;
	for (uint32_t id = 1; id < res->nnames; id++) {
		const struct ana_agg *a = &res->by_name[id];
		if (!a->count)
			continue;
		const char *name = ana_text_safe(ana_name(res, id));
		json_t *was = json_object_get(prev, name);
		const uint64_t c0 = was ? (uint64_t)json_integer_value(json_array_get(was, 0)) : 0;
		const uint64_t t0 = was ? (uint64_t)json_integer_value(json_array_get(was, 1)) : 0;
		rows[k++] = (struct top_row){ id, a->count >= c0 ? a->count - c0 : 0,
					      a->total_ns >= t0 ? a->total_ns - t0 : 0 };
		json_t *now = json_pack("[I, I]", (json_int_t)(a->count & INT64_MAX), (json_int_t)(a->total_ns & INT64_MAX));
		if (!now || json_object_set_new(prev, name, now)) {
			free(rows);
			return -1;
		}
	}
	qsort(rows, k, sizeof(*rows), cmp_row);
	fprintf(out, "\n%-32s %10s %10s %7s %10s %10s %10s %10s %10s\n", "name", "calls", "calls/s", "busy", "total",
		"all calls", "mean", "p50", "p99");
	const uint32_t shown = top > 0 && (uint32_t)top < k ? (uint32_t)top : k;
	for (uint32_t i = 0; i < shown; i++) {
		const struct ana_agg *a = &res->by_name[rows[i].id];
		struct ana_row w;
		ana_row_compute(res, a, &w);
		char rate[24] = "-", busy[16] = "-";
		if (dt_ns) {
			snprintf(rate, sizeof(rate), "%.1f", (double)rows[i].dcount * 1e9 / (double)dt_ns);
			/* the interval's time in this name over the interval: above 100% with several threads */
			snprintf(busy, sizeof(busy), "%.1f%%", 100.0 * (double)rows[i].dtotal / (double)dt_ns);
		}
		fprintf(out, "%-32.32s %10" PRIu64 " %10s %7s %10s %10" PRIu64 " %10s %10s %10s\n",
			ana_text_safe(ana_name(res, rows[i].id)), rows[i].dcount, rate, busy,
			ana_fmt_dur(b[2], sizeof(b[2]), (double)a->total_ns), a->count,
			ana_fmt_dur(b[3], sizeof(b[3]), w.mean), ana_fmt_dur(b[4], sizeof(b[4]), (double)w.p50),
			ana_fmt_dur(b[5], sizeof(b[5]), (double)w.p99));
	}
	if (shown < k)
		fprintf(out, "... and %u more names (--top N)\n", k - shown);
	free(rows);
	return 0;
}

int cli_top(const char *path, const struct cli_top_opts *o)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	const struct ana_options ao = { .thread = -1, .merged_percentiles_only = false };
	struct ana_session *s = NULL;
	char err[512];
	int rc = ana_session_open(path, &ao, &s, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "ptanalyze: top: %s: %s\n", path, err);
		return 1;
	}
	json_t *prev = json_object();
	const int tty = isatty(fileno(stdout)) && !o->plain;
	uint64_t last_end = 0;
	int code = prev ? 0 : 1;
	for (unsigned n = 1; code == 0; n++) {
		const struct ana_result *res = ana_session_result(s);
		const uint64_t dt = n == 1 ? res->end_ns - res->start_ns : res->end_ns > last_end ? res->end_ns - last_end : 0;
		last_end = res->end_ns;
		if (tty)
			fputs("\033[H\033[J", stdout); /* home, clear to the end: the frame replaces the last */
		else if (n > 1)
			fputc('\n', stdout);
		if (frame(stdout, path, res, prev, dt, o->top > 0 ? o->top : 20, n)) {
			fprintf(stderr, "ptanalyze: top: out of memory\n");
			code = 1;
			break;
		}
		fflush(stdout);
		if (pt_reader_info(res->rd)->closed || (o->iterations && n >= o->iterations) || stop_requested)
			break;
		nap(o->interval_s);
		if (stop_requested)
			break;
		rc = ana_session_update(s, err, sizeof(err));
		if (rc) {
			fprintf(stderr, "ptanalyze: top: %s: %s\n", path, err);
			code = 1;
		}
	}
	json_decref(prev);
	ana_session_close(s);
	if (ferror(stdout))
		code = 1;
	return code;
}
