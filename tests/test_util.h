/*
 * tests/test_util.h - helpers shared by the test suites: temp paths, and a
 * trace read back into per-thread record arrays with a nesting check.
 */
#ifndef PTZ_TEST_UTIL_H
#define PTZ_TEST_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <ftw.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ptz/format.h"

static char tu_dir_[4096];
static pid_t tu_dir_pid_;

static inline int tu_rm_one_(const char *p, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	if (type != FTW_DP)
		(void)unlink(p); /* best effort: go on */
	else if (rmdir(p) && errno == EBUSY && umount2(p, MNT_DETACH) == 0)
		(void)rmdir(p); /* a tmpfs a failed test left mounted (test_recorder.c) */
	return 0;
}

/* At exit of the process that made it (not of a forked child): the test's
 * directory and whatever its tests left there, unless PTZ_KEEP_TEST_FILES
 * is set (to look at them after a failure). */
static inline void tu_rm_tmpdir_(void)
{
	const char *keep = getenv("PTZ_KEEP_TEST_FILES");
	if (tu_dir_[0] && getpid() == tu_dir_pid_ && !(keep && *keep))
		nftw(tu_dir_, tu_rm_one_, 16, FTW_DEPTH | FTW_PHYS);
}

static inline const char *tu_tmpdir(void)
{
	char *dir = tu_dir_;
	if (!dir[0]) {
		const char *base = getenv("PTZ_TEST_TMPDIR");
		snprintf(dir, sizeof(tu_dir_), "%s/ptz-%s-XXXXXX", base && *base ? base : "/tmp",
#ifdef PT_TEST_NAME
			 PT_TEST_NAME
#else
			 "test"
#endif
		);
		if (!mkdtemp(dir)) {
			perror("mkdtemp");
			abort();
		}
		tu_dir_pid_ = getpid();
		atexit(tu_rm_tmpdir_);
	}
	return dir;
}

static inline char *tu_path(const char *name)
{
	static char p[8][4200];
	static int k;
	char *o = p[k++ & 7];
	snprintf(o, 4200, "%s/%s", tu_tmpdir(), name);
	return o;
}

static inline int tu_scale(int pct_of)
{
	const char *s = getenv("PTZ_STRESS_SCALE");
	int sc = s ? atoi(s) : 100;
	if (sc <= 0)
		sc = 100;
	long v = (long)pct_of * sc / 100;
	return v < 1 ? 1 : (int)v;
}

/* Kind of the marker tu_read() inserts where a thread's chunk sequence has
 * a gap (a chunk lost to an I/O error or damage): nesting restarts there. */
#define TU_GAP 0u

/* One thread's records, in file order (LOSS records are summed in tu_trace). */
struct tu_thread {
	uint32_t index;
	uint64_t next_seq, gaps;
	struct pt_record *recs;
	size_t n, cap;
	uint64_t lost_records, lost_sections, errors;
};

struct tu_trace {
	struct pt_reader *rd;
	struct tu_thread *t;
	size_t nt;
	uint64_t records;       /* every decoded record, meta included */
	uint64_t event_records; /* records of event chunks, LOSS records excepted */
	uint64_t lost_records, lost_sections; /* LOSS records, all chunks */
	uint64_t errors;        /* ERROR record counts except PT_ERRC_IO */
};

static inline struct tu_thread *tu_thread_get(struct tu_trace *tr, uint32_t index)
{
	for (size_t i = 0; i < tr->nt; i++)
		if (tr->t[i].index == index)
			return &tr->t[i];
	tr->t = realloc(tr->t, (tr->nt + 1) * sizeof(*tr->t));
	memset(&tr->t[tr->nt], 0, sizeof(*tr->t));
	tr->t[tr->nt].index = index;
	return &tr->t[tr->nt++];
}

/* Reads the whole trace open in @rd (tu_free() closes it). */
static inline void tu_read_reader(struct pt_reader *rd, struct tu_trace *tr)
{
	memset(tr, 0, sizeof(*tr));
	tr->rd = rd;
	int rc;
	struct pt_chunk_info ci;
	struct pt_record rec;
	while (pt_reader_next_chunk(tr->rd, PT_READER_ALL_CHUNKS, &ci, sizeof(ci)) == 1) {
		struct tu_thread *t = ci.thread == PT_FMT_META_THREAD ? NULL : tu_thread_get(tr, ci.thread);
		if (t && ci.sequence != t->next_seq) {
			struct pt_record gap = { .kind = TU_GAP };
			if (t->n == t->cap) {
				t->cap = t->cap ? t->cap * 2 : 1024;
				t->recs = realloc(t->recs, t->cap * sizeof(*t->recs));
			}
			if (t->n)
				gap.ticks = t->recs[t->n - 1].ticks;
			t->recs[t->n++] = gap;
			t->gaps++;
		}
		if (t)
			t->next_seq = ci.sequence + 1;
		while ((rc = pt_reader_next_record(tr->rd, &rec, sizeof(rec))) == 1) {
			tr->records++;
			if (rec.kind == PT_REC_LOSS) {
				tr->lost_records += rec.value;
				tr->lost_sections += rec.value2;
			}
			if (rec.kind == PT_REC_ERROR && rec.aux != PT_ERRC_IO)
				tr->errors += rec.value;
			/* LOSS records are the recorder's bookkeeping, summed above */
			if (!t || rec.kind == PT_REC_LOSS)
				continue;
			tr->event_records++;
			if (t->n == t->cap) {
				t->cap = t->cap ? t->cap * 2 : 1024;
				t->recs = realloc(t->recs, t->cap * sizeof(*t->recs));
			}
			rec.str = NULL;
			t->recs[t->n++] = rec;
		}
		assert_int_equal(rc, 0);
	}
}

/* Reads the whole trace; fails the test if the reader cannot open it. */
static inline void tu_read(const char *path, struct tu_trace *tr)
{
	struct pt_reader *rd;
	int rc = pt_reader_open(path, &rd);
	if (rc != 0)
		fail_msg("pt_reader_open(%s) = %d: %s", path, rc, pt_reader_errmsg(rd));
	tu_read_reader(rd, tr);
}

static inline void tu_free(struct tu_trace *tr)
{
	for (size_t i = 0; i < tr->nt; i++)
		free(tr->t[i].recs);
	free(tr->t);
	pt_reader_close(tr->rd);
	memset(tr, 0, sizeof(*tr));
}

/*
 * Checks that every END matches the innermost open BEGIN (same id) and
 * ticks never decrease; a TU_GAP marker restarts the stack: after it, an
 * END that finds the stack empty closes a section begun before the gap
 * (whose BEGIN was lost with the missing chunk) and is allowed. Returns the number of complete sections; fails the
 * test on a violation. Sections still open at the end count in *open_out.
 */
static inline size_t tu_check_nesting(const struct tu_thread *t, size_t *open_out)
{
	uint32_t stack[4096];
	size_t depth = 0, sections = 0;
	uint64_t last = 0;
	int after_gap = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct pt_record *r = &t->recs[i];
		if (r->ticks < last)
			fail_msg("thread %u record %zu: ticks go back", t->index, i);
		last = r->ticks;
		if (r->kind == TU_GAP) {
			depth = 0;
			after_gap = 1;
			continue;
		}
		if (r->kind == PT_REC_BEGIN) {
			if (depth == 4096)
				fail_msg("nesting too deep");
			stack[depth++] = r->id;
		} else if (r->kind == PT_REC_END) {
			if (depth == 0 && after_gap)
				continue;
			if (depth == 0)
				fail_msg("thread %u record %zu: END %u without BEGIN", t->index, i, r->id);
			if (stack[depth - 1] != r->id)
				fail_msg("thread %u record %zu: END %u closes %u", t->index, i, r->id, stack[depth - 1]);
			depth--;
			sections++;
		}
	}
	if (open_out)
		*open_out = depth;
	return sections;
}

#endif /* PTZ_TEST_UTIL_H */
