/*
 * tests/unit/test_recorder_rotate.c - rotation in stream mode
 * (PTZ_ROTATE_BYTES, PTZ_ROTATE_SECONDS, PTZ_ROTATE_KEEP; recorder.h,
 * pt_open() "Rotation"; doc/trace-format.md §11) and the reading of a
 * rotated set as one trace (pt_reader_open_set(), pt_reader_open_trace()).
 *
 * Invariants covered:
 *  - two threads recording a million nested sections each, with
 *    consecutive counter values, into 1 MiB parts: at least 3 parts, named
 *    run.000001.ptz, ...; the set, given in shuffled order, reads with no
 *    problem and no loss, every value of every thread exactly once and in
 *    order, nesting intact across the part boundaries; pt_stats() counts
 *    the parts; each part alone reads with no problem, the first as a
 *    trace, the others as windows (format 1.3, run id and part number in
 *    the header); the base name opens the same set (pt_reader_open_trace());
 *  - PTZ_ROTATE_KEEP=2 (from the environment): exactly the two newest parts
 *    remain, whose set is a window holding an exact suffix of each thread's
 *    values;
 *  - PTZ_ROTATE_SECONDS: parts by age, every value exactly once;
 *  - bad values: rotate_bytes under 1 MiB is EINVAL; PTZ_ROTATE_BYTES under
 *    1M or not a size is ignored (no rotation, the path as given);
 *    PTZ_MODE=flight ignores PTZ_ROTATE_*;
 *  - a next part that cannot be created (a symlink at its name: ELOOP)
 *    leaves recording in the current part, is an ERROR record
 *    (PT_ERRC_ROTATE, ELOOP) in it and counted in pt_stats(); once the way
 *    is clear, the next threshold creates it, and nothing was lost;
 *  - a full disk (a 3 MiB tmpfs, as root): the program goes on, every
 *    record is written or counted as lost, the rotation failures are ERROR
 *    records;
 *  - sets: a missing middle part is a problem naming the part and file; a
 *    file of another run, a non-rotated file, or a part given twice is
 *    refused (-PT_ESET) with a message naming the file.
 */
#include <glob.h>
#include <pthread.h>
#include <sys/mount.h>
#include <time.h>

#include "tests/test_util.h"
#include "ptz/recorder.h"

#define NTHREADS 2

static pt_recorder *rec;
static uint32_t id_outer, id_inner, id_count;
static long per_thread;
static unsigned sleep_us_every_1k; /* slows the workers (age-based rotation) */

static void *worker(void *arg)
{
	int64_t base = (int64_t)(uintptr_t)arg << 40;
	for (long i = 0; i < per_thread; i++) {
		pt_begin(rec, id_outer);
		pt_counter(rec, id_count, base | i);
		pt_begin(rec, id_inner);
		pt_metric(rec, PT_METRIC_FLOPS, (uint64_t)i);
		pt_end(rec, id_inner);
		pt_end(rec, id_outer);
		if (i % 50000 == 49999)
			pt_flush(rec); /* the flusher keeps up on a slow build: no loss */
		if (sleep_us_every_1k && i % 1000 == 999) {
			struct timespec ts = { 0, (long)sleep_us_every_1k * 1000 };
			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

static void record(long n)
{
	per_thread = n;
	id_outer = pt_intern(rec, "outer");
	id_inner = pt_intern(rec, "inner");
	id_count = pt_intern(rec, "iteration");
	pthread_t th[NTHREADS];
	for (uintptr_t t = 0; t < NTHREADS; t++)
		assert_int_equal(pthread_create(&th[t], NULL, worker, (void *)(t + 1)), 0);
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
}

/* The parts of base @name in @dir ("run" for run.NNNNNN.ptz), sorted by glob(). */
static size_t parts_of(const char *dir, const char *name, glob_t *g)
{
	char pat[4400];
	snprintf(pat, sizeof(pat), "%s/%s.[0-9][0-9][0-9][0-9][0-9][0-9].ptz", dir, name);
	memset(g, 0, sizeof(*g));
	if (glob(pat, 0, NULL, g) != 0)
		return 0;
	return g->gl_pathc;
}

static void print_problems(struct pt_reader *rd)
{
	for (size_t i = 0; i < pt_reader_problem_count(rd); i++) {
		uint64_t off;
		print_message("problem: %s\n", pt_reader_problem(rd, i, &off));
	}
}

/*
 * Checks the trace read into @tr: each worker's counter values consecutive
 * up to @n - 1, from 0 unless @window (then from any value: *@first gets
 * the smallest first value; a worker with no value left is not checked); nesting intact (in a window, ENDs of sections
 * begun before it allowed). Returns the values seen.
 */
static uint64_t check_values(struct tu_trace *tr, long n, int window, int64_t *first)
{
	uint64_t seen = 0;
	int workers = 0;
	if (first)
		*first = INT64_MAX;
	for (size_t k = 0; k < tr->nt; k++) {
		struct tu_thread *t = &tr->t[k];
		int64_t prev = -1, who = -1;
		for (size_t i = 0; i < t->n; i++) {
			const struct pt_record *r = &t->recs[i];
			if (r->kind != PT_REC_COUNTER || r->id != id_count)
				continue;
			const int64_t v = (int64_t)r->value & ((1ll << 40) - 1);
			who = (int64_t)r->value >> 40;
			if (prev >= 0)
				assert_int_equal(v, prev + 1);
			else if (!window)
				assert_int_equal(v, 0);
			else if (first && v < *first)
				*first = v;
			prev = v;
			seen++;
		}
		if (who < 0)
			continue; /* the flusher's ring: process counters */
		workers++;
		assert_int_equal(prev, n - 1);
		if (window) { /* sections begun before the window end in it unmatched */
			struct pt_record gap = { .kind = TU_GAP };
			t->recs = realloc(t->recs, (t->n + 1) * sizeof(*t->recs));
			memmove(t->recs + 1, t->recs, t->n * sizeof(*t->recs));
			gap.ticks = t->n ? t->recs[1].ticks : 0;
			t->recs[0] = gap;
			t->n++;
		}
		size_t open;
		const size_t sections = tu_check_nesting(t, &open);
		assert_int_equal(open, 0);
		if (!window)
			assert_int_equal(sections, 2 * (size_t)n);
	}
	if (window) /* a worker that finished early may have nothing left in the newest parts */
		assert_true(workers >= 1);
	else
		assert_int_equal(workers, NTHREADS);
	return seen;
}

static struct pt_recorder *open_rotating(const char *path, uint64_t bytes, unsigned secs, unsigned keep)
{
	struct pt_options o = { .rotate_bytes = bytes, .rotate_seconds = secs, .rotate_keep = keep };
	pt_recorder *r = pt_open(path, &o, sizeof(o));
	assert_non_null(r);
	return r;
}

static void test_rotate_bytes(void **state)
{
	(void)state;
	const char *dir = tu_path("bytes");
	assert_int_equal(mkdir(dir, 0700), 0);
	char base[4300], path[4400];
	snprintf(base, sizeof(base), "%s/run.ptz", dir);
	rec = open_rotating(base, 1u << 20, 0, 0);
	assert_true(pt_path(rec, path, sizeof(path)) > 0);
	snprintf(base, sizeof(base), "%s/run.000001.ptz", dir);
	assert_string_equal(path, base);
	const long n = 1000000; /* not scaled: at least three parts */
	record(n);
	struct pt_stats_info st;
	assert_int_equal(pt_flush(rec), 0);
	assert_int_equal(pt_stats(rec, &st, sizeof(st)), 0);
	assert_int_equal(pt_close(rec), 0);
	rec = NULL;
	assert_int_equal(st.lost_records, 0);
	assert_int_equal(st.rotate_errors, 0);
	snprintf(base, sizeof(base), "%s/run.ptz", dir);
	assert_int_equal(access(base, F_OK), -1); /* nothing at the base name itself */
	glob_t g;
	const size_t np = parts_of(dir, "run", &g);
	print_message("# %zu parts, %llu bytes\n", np, (unsigned long long)st.bytes_written);
	assert_true(np >= 3);
	assert_int_equal(st.parts, np);
	/* each part alone: a trace (the first) or a window, no problem */
	uint64_t run_id = 0, bytes = 0;
	for (size_t i = 0; i < np; i++) {
		struct pt_reader *rd;
		assert_int_equal(pt_reader_open(g.gl_pathv[i], &rd), 0);
		const struct pt_trace_info *in = pt_reader_info(rd);
		print_problems(rd);
		assert_int_equal(pt_reader_problem_count(rd), 0);
		assert_int_equal(in->version_minor, 3);
		assert_int_equal(in->part, i + 1);
		assert_int_equal(in->parts, 1);
		assert_int_equal(in->window, i > 0);
		assert_int_equal(in->closed, 1);
		assert_int_not_equal(in->run_id, 0);
		if (i == 0)
			run_id = in->run_id;
		assert_true(in->run_id == run_id);
		/* every name resolves in the part alone */
		assert_non_null(pt_reader_string(rd, id_outer, NULL));
		assert_non_null(pt_reader_string(rd, id_count, NULL));
		uint64_t rid;
		uint32_t part;
		assert_int_equal(pt_reader_peek_part(g.gl_pathv[i], &rid, &part), 0);
		assert_true(rid == run_id);
		assert_int_equal(part, i + 1);
		bytes += in->file_bytes;
		pt_reader_close(rd);
	}
	/* pt_stats() counted every part's bytes; pt_close() added the final chunks */
	assert_true(bytes >= st.bytes_written && bytes - st.bytes_written < (64u << 10));
	/* the set, in shuffled order: one trace */
	const char **shuffled = malloc(np * sizeof(*shuffled));
	for (size_t i = 0; i < np; i++) /* reversed, then the first and the middle swapped */
		shuffled[i] = g.gl_pathv[np - 1 - i];
	const char *tmp = shuffled[0];
	shuffled[0] = shuffled[np / 2];
	shuffled[np / 2] = tmp;
	struct pt_reader *rd;
	int rc = pt_reader_open_set(shuffled, np, &rd);
	if (rc)
		fail_msg("pt_reader_open_set: %d %s", rc, pt_reader_errmsg(rd));
	struct tu_trace tr;
	tu_read_reader(rd, &tr);
	print_problems(tr.rd);
	assert_int_equal(pt_reader_problem_count(tr.rd), 0);
	const struct pt_trace_info *in = pt_reader_info(tr.rd);
	assert_int_equal(in->parts, np);
	assert_int_equal(in->part, 1);
	assert_int_equal(in->last_part, np);
	assert_int_equal(in->window, 0);
	assert_int_equal(in->closed, 1);
	assert_int_equal(in->file_bytes, bytes);
	assert_int_equal(tr.lost_records, 0);
	assert_int_equal(check_values(&tr, n, 0, NULL), (uint64_t)n * NTHREADS);
	tu_free(&tr);
	/* the base name names the set */
	assert_int_equal(pt_reader_open_trace(base, &rd), 0);
	assert_int_equal(pt_reader_info(rd)->parts, np);
	assert_int_equal(pt_reader_problem_count(rd), 0);
	pt_reader_close(rd);

	/* a missing middle part: a problem naming it and the file after the gap */
	for (size_t i = 0, k = 0; i < np; i++)
		if (i != 1)
			shuffled[k++] = g.gl_pathv[i];
	assert_int_equal(pt_reader_open_set(shuffled, np - 1, &rd), 0);
	int named = 0;
	for (size_t i = 0; i < pt_reader_problem_count(rd); i++) {
		const char *m = pt_reader_problem(rd, i, NULL);
		print_message("# %s\n", m);
		named |= strstr(m, g.gl_pathv[2]) == m && strstr(m, "parts 2 to 2 missing") != NULL;
	}
	assert_true(named);
	pt_reader_close(rd);
	/* a part given twice */
	shuffled[0] = g.gl_pathv[0];
	shuffled[1] = g.gl_pathv[0];
	assert_int_equal(pt_reader_open_set(shuffled, 2, &rd), -PT_ESET);
	assert_non_null(strstr(pt_reader_errmsg(rd), "given twice"));
	pt_reader_close(rd);
	/* a file of no rotated run */
	const char *plain = tu_path("plain.ptz");
	pt_recorder *p = pt_open(plain, NULL, 0);
	assert_non_null(p);
	pt_begin(p, id_outer);
	pt_end(p, id_outer);
	assert_int_equal(pt_close(p), 0);
	shuffled[1] = plain;
	assert_int_equal(pt_reader_open_set(shuffled, 2, &rd), -PT_ESET);
	print_message("# %s\n", pt_reader_errmsg(rd));
	assert_true(strstr(pt_reader_errmsg(rd), plain) == pt_reader_errmsg(rd));
	assert_non_null(strstr(pt_reader_errmsg(rd), "not a part of a rotated trace"));
	pt_reader_close(rd);
	{
		uint64_t rid = 1;
		uint32_t part = 1;
		assert_int_equal(pt_reader_peek_part(plain, &rid, &part), 0);
		assert_true(rid == 0 && part == 0);
		struct pt_reader *one;
		assert_int_equal(pt_reader_open(plain, &one), 0);
		assert_int_equal(pt_reader_info(one)->version_minor, 1); /* not rotated: 1.1 as before */
		assert_true(pt_reader_info(one)->run_id == 0);
		pt_reader_close(one);
	}
	/* a part of another run */
	const char *dir2 = tu_path("other");
	assert_int_equal(mkdir(dir2, 0700), 0);
	snprintf(path, sizeof(path), "%s/run.ptz", dir2);
	rec = open_rotating(path, 1u << 20, 0, 0);
	record(10);
	assert_int_equal(pt_close(rec), 0);
	rec = NULL;
	snprintf(path, sizeof(path), "%s/run.000001.ptz", dir2);
	shuffled[1] = path;
	assert_int_equal(pt_reader_open_set(shuffled, 2, &rd), -PT_ESET);
	print_message("# %s\n", pt_reader_errmsg(rd));
	assert_true(strstr(pt_reader_errmsg(rd), path) == pt_reader_errmsg(rd));
	assert_non_null(strstr(pt_reader_errmsg(rd), "two runs"));
	pt_reader_close(rd);
	free(shuffled);
	globfree(&g);
}

/* pt_reader_open_trace() by a base name: a short one (the glob pattern's room), and one full of glob
 * characters, escaped in the pattern but not in the names glob(3) returns. */
static void test_base_names(void **state)
{
	(void)state;
	struct pt_reader *rd = NULL;
	assert_int_equal(pt_reader_open_trace("q", &rd), -ENOENT); /* nothing there, no part either */
	assert_null(rd);
	const char *dir = tu_path("globby");
	assert_int_equal(mkdir(dir, 0700), 0);
	char part[4300], base[4300];
	snprintf(part, sizeof(part), "%s/[[[[[[[*.000001.ptz", dir);
	snprintf(base, sizeof(base), "%s/[[[[[[[*.ptz", dir);
	FILE *f = fopen(part, "w");
	assert_non_null(f);
	fputs("not a trace", f);
	fclose(f);
	/* found as the trace's part (so not ENOENT), and refused: it is no trace */
	const int rc = pt_reader_open_trace(base, &rd);
	assert_true(rc < 0 && rc != -ENOENT);
	pt_reader_close(rd);
	unlink(part);
	rmdir(dir);
}

static void test_keep(void **state)
{
	(void)state;
	const char *dir = tu_path("keep");
	assert_int_equal(mkdir(dir, 0700), 0);
	char base[4300];
	snprintf(base, sizeof(base), "%s/run.ptz", dir);
	setenv("PTZ_ROTATE_BYTES", "1M", 1);
	setenv("PTZ_ROTATE_KEEP", "2", 1);
	rec = pt_open(base, NULL, 0);
	unsetenv("PTZ_ROTATE_BYTES");
	unsetenv("PTZ_ROTATE_KEEP");
	assert_non_null(rec);
	const long n = 1000000;
	record(n);
	struct pt_stats_info st;
	assert_int_equal(pt_stats(rec, &st, sizeof(st)), 0);
	assert_int_equal(pt_close(rec), 0);
	rec = NULL;
	assert_true(st.parts >= 3);
	glob_t g;
	assert_int_equal(parts_of(dir, "run", &g), 2);
	struct pt_reader *rd;
	assert_int_equal(pt_reader_open_set((const char *const *)g.gl_pathv, 2, &rd), 0);
	struct tu_trace tr;
	tu_read_reader(rd, &tr);
	print_problems(tr.rd);
	assert_int_equal(pt_reader_problem_count(tr.rd), 0);
	const struct pt_trace_info *in = pt_reader_info(tr.rd);
	assert_int_equal(in->window, 1);
	assert_int_equal(in->part + 1, in->last_part);
	assert_int_equal(in->last_part, st.parts);
	int64_t first;
	const uint64_t seen = check_values(&tr, n, 1, &first);
	assert_true(first > 0 && seen < (uint64_t)n * NTHREADS);
	tu_free(&tr);
	globfree(&g);
}

static void test_seconds(void **state)
{
	(void)state;
	const char *dir = tu_path("secs");
	assert_int_equal(mkdir(dir, 0700), 0);
	char base[4300];
	snprintf(base, sizeof(base), "%s/run.ptz", dir);
	rec = open_rotating(base, 0, 1, 0);
	sleep_us_every_1k = 12000; /* 200,000 sections, 1,000 per 12 ms: about 2.5 s */
	const long n = 200000;
	record(n);
	sleep_us_every_1k = 0;
	struct pt_stats_info st;
	assert_int_equal(pt_stats(rec, &st, sizeof(st)), 0);
	assert_int_equal(pt_close(rec), 0);
	rec = NULL;
	glob_t g;
	const size_t np = parts_of(dir, "run", &g);
	print_message("# %zu parts in %llu bytes\n", np, (unsigned long long)st.bytes_written);
	assert_true(np >= 3);
	assert_true(st.bytes_written < (1u << 20) * np); /* by age, not size */
	struct pt_reader *rd;
	assert_int_equal(pt_reader_open_trace(base, &rd), 0);
	struct tu_trace tr;
	tu_read_reader(rd, &tr);
	assert_int_equal(pt_reader_problem_count(tr.rd), 0);
	assert_int_equal(check_values(&tr, n, 0, NULL), (uint64_t)n * NTHREADS);
	tu_free(&tr);
	globfree(&g);
}

static void test_bad_values(void **state)
{
	(void)state;
	const char *path = tu_path("bad.ptz");
	struct pt_options o = { .rotate_bytes = 1000 };
	errno = 0;
	assert_null(pt_open(path, &o, sizeof(o)));
	assert_int_equal(errno, EINVAL);
	static const char *const bad[] = { "1000", "12x", "-1M" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("PTZ_ROTATE_BYTES", bad[i], 1);
		setenv("PTZ_ROTATE_SECONDS", "abc", 1);
		pt_recorder *r = pt_open(path, NULL, 0);
		assert_non_null(r);
		char now[4400];
		assert_true(pt_path(r, now, sizeof(now)) > 0);
		assert_string_equal(now, path); /* no rotation: the path as given */
		assert_int_equal(pt_close(r), 0);
		struct pt_reader *rd;
		assert_int_equal(pt_reader_open(path, &rd), 0);
		assert_true(pt_reader_info(rd)->run_id == 0);
		pt_reader_close(rd);
	}
	/* flight mode: rotation ignored */
	setenv("PTZ_ROTATE_BYTES", "2M", 1);
	setenv("PTZ_ROTATE_SECONDS", "1", 1);
	setenv("PTZ_MODE", "flight", 1);
	pt_recorder *r = pt_open(path, NULL, 0);
	unsetenv("PTZ_MODE");
	unsetenv("PTZ_ROTATE_BYTES");
	unsetenv("PTZ_ROTATE_SECONDS");
	assert_non_null(r);
	char now[4400];
	assert_true(pt_path(r, now, sizeof(now)) > 0);
	assert_string_equal(now, path);
	assert_int_equal(pt_close(r), 0);
	struct pt_reader *rd;
	assert_int_equal(pt_reader_open(path, &rd), 0);
	assert_true(pt_reader_info(rd)->flight && pt_reader_info(rd)->run_id == 0);
	pt_reader_close(rd);
}

/* ERROR records of @code in the meta chunks of @rd: their number, the last value. */
static int errors_in(struct pt_reader *rd, uint32_t code, uint64_t *last)
{
	int n = 0;
	struct pt_record r;
	pt_reader_rewind(rd);
	while (pt_reader_next_chunk(rd, PT_FMT_META_THREAD, NULL, 0) == 1)
		while (pt_reader_next_record(rd, &r, sizeof(r)) == 1)
			if (r.kind == PT_REC_ERROR && r.aux == code) {
				n++;
				*last = r.value;
			}
	pt_reader_rewind(rd);
	return n;
}

/* The next part cannot be created (a symlink is there: never followed,
 * ELOOP): recording goes on in the current part, the failure is an ERROR
 * record and a count; the next threshold tries again and succeeds once the
 * way is clear. */
static void test_next_part_refused(void **state)
{
	(void)state;
	const char *dir = tu_path("refused");
	assert_int_equal(mkdir(dir, 0700), 0);
	char base[4300], link2[4400];
	snprintf(base, sizeof(base), "%s/run.ptz", dir);
	snprintf(link2, sizeof(link2), "%s/run.000002.ptz", dir);
	assert_int_equal(symlink("/nonexistent/target", link2), 0);
	rec = open_rotating(base, 1u << 20, 0, 0);
	const long n = 400000;
	record(n);
	assert_int_equal(pt_flush(rec), 0);
	struct pt_stats_info st;
	assert_int_equal(pt_stats(rec, &st, sizeof(st)), 0);
	print_message("# %llu bytes, %llu rotation errors\n", (unsigned long long)st.bytes_written,
		      (unsigned long long)st.rotate_errors);
	assert_true(st.bytes_written > (2u << 20)); /* a part of more than 2 thresholds: retried */
	assert_true(st.rotate_errors >= 2);
	assert_int_equal(st.parts, 1);
	/* the way cleared: the next threshold opens part 2 */
	assert_int_equal(unlink(link2), 0);
	long more = n;
	per_thread = 0;
	record(more); /* values again from 0: checked below as a second run of each thread */
	struct pt_stats_info st2;
	assert_int_equal(pt_stats(rec, &st2, sizeof(st2)), 0);
	assert_int_equal(pt_close(rec), 0);
	rec = NULL;
	assert_true(st2.parts >= 2);
	assert_int_equal(st2.lost_records, 0);
	/* part 1 holds the failures, with the errno */
	snprintf(link2, sizeof(link2), "%s/run.000001.ptz", dir);
	struct pt_reader *rd;
	assert_int_equal(pt_reader_open(link2, &rd), 0);
	uint64_t last = 0;
	assert_int_equal(errors_in(rd, PT_ERRC_ROTATE, &last), (int)st.rotate_errors);
	assert_int_equal(last, ELOOP);
	pt_reader_close(rd);
	/* the whole set: no problem, nothing lost */
	assert_int_equal(pt_reader_open_trace(base, &rd), 0);
	struct tu_trace tr;
	tu_read_reader(rd, &tr);
	print_problems(tr.rd);
	assert_int_equal(pt_reader_problem_count(tr.rd), 0);
	assert_int_equal(tr.lost_records, 0);
	uint64_t counters = 0;
	for (size_t k = 0; k < tr.nt; k++) {
		tu_check_nesting(&tr.t[k], NULL);
		for (size_t i = 0; i < tr.t[k].n; i++)
			counters += tr.t[k].recs[i].kind == PT_REC_COUNTER && tr.t[k].recs[i].id == id_count;
	}
	assert_int_equal(counters, (uint64_t)(n + more) * NTHREADS);
	tu_free(&tr);
}

/* A full disk: parts and chunks that do not fit; the program goes on and
 * every record is either written or counted as lost. */
static void test_disk_full(void **state)
{
	(void)state;
	if (geteuid() != 0) {
		print_message("# SKIP not root: the full-disk case needs mount(2)\n");
		return;
	}
	const char *dir = tu_path("small-fs");
	mkdir(dir, 0700);
	if (mount("tmpfs", dir, "tmpfs", 0, "size=3m") != 0) {
		print_message("# SKIP mount tmpfs failed (%s)\n", strerror(errno));
		return;
	}
	char base[4300];
	snprintf(base, sizeof(base), "%s/run.ptz", dir);
	setenv("PTZ_PROC_MS", "0", 1); /* every event record is a worker's */
	rec = open_rotating(base, 1u << 20, 0, 0);
	unsetenv("PTZ_PROC_MS");
	const long n = 1000000; /* ~8 MB of trace into 3 MB */
	record(n);
	struct pt_stats_info st;
	pt_stats(rec, &st, sizeof(st));
	const int crc = pt_close(rec);
	rec = NULL;
	print_message("# parts %llu, rotation errors %llu, lost %llu, close %d\n", (unsigned long long)st.parts,
		      (unsigned long long)st.rotate_errors, (unsigned long long)st.lost_records, crc);
	assert_true(st.lost_records > 0);
	assert_int_equal(crc, -ENOSPC);
	struct pt_reader *rd;
	assert_int_equal(pt_reader_open_trace(base, &rd), 0);
	struct tu_trace tr;
	tu_read_reader(rd, &tr);
	uint64_t last = 0;
	/* a part that could not be created (the disk filled between two
	 * parts, not within one) is an ERROR record with ENOSPC */
	if (st.rotate_errors) {
		assert_true(errors_in(tr.rd, PT_ERRC_ROTATE, &last) > 0);
		assert_int_equal(last, ENOSPC);
	}
	assert_true(errors_in(tr.rd, PT_ERRC_IO, &last) > 0); /* the loss, and why */
	assert_int_equal(last, ENOSPC);
	/* every record written or counted as lost, exactly once: 6 records
	 * an iteration (2 BEGIN, a COUNTER, a METRIC, 2 END) */
	print_message("# written %llu lost %llu\n", (unsigned long long)tr.event_records,
		      (unsigned long long)tr.lost_records);
	assert_int_equal(tr.event_records + tr.lost_records, (uint64_t)n * NTHREADS * 6);
	for (size_t k = 0; k < tr.nt; k++) /* nesting holds between the gaps failed chunks leave */
		tu_check_nesting(&tr.t[k], NULL);
	tu_free(&tr);
	umount2(dir, MNT_DETACH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rotate_bytes),
		cmocka_unit_test(test_base_names),
		cmocka_unit_test(test_keep),
		cmocka_unit_test(test_seconds),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_next_part_refused),
		cmocka_unit_test(test_disk_full),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
