/*
 * tests/unit/test_recorder_edges.c - recorder edge cases that once lost or
 * corrupted data, each pinned by a case that failed before its fix.
 *
 * Invariants covered:
 *  - a thread whose old ring (from a closed recorder) is freed when it
 *    re-attaches, and whose new ring cannot be allocated, exits cleanly (no
 *    use after free in the TLS destructor), and the dropped calls are
 *    counted in pt_stats() and in the trace's LOSS records;
 *  - pt_stop() searches the innermost 64 open sections, as documented, not
 *    the outermost 64;
 *  - pt_stop() of a recorded section closes the skipped sections opened
 *    above it and then the section itself (nesting stays intact);
 *  - PTZ_RING_BYTES, PTZ_FLUSH_MS and PTZ_ZSTD_LEVEL with bad values fall
 *    back to the defaults instead of huge or tiny settings;
 *  - names whose meta chunk failed to write (I/O error) are written again
 *    once writes succeed;
 *  - a GPU section begun when the ring has room for a BEGIN but not for
 *    its GPU_LAUNCH is dropped whole and counted, not recorded without
 *    its GPU half and without a count;
 *  - pt_stats() counts an exited thread's losses exactly once while the
 *    flusher (or pt_close()) moves them from its ring to the closed totals;
 *  - the END (or pt_stop()) of a section begun when the thread's ring could
 *    not be allocated counts as lost, not as a misuse error, when the ring
 *    exists by then;
 *  - the record a thread leaves at exit (end tick, exit name) is written
 *    again when the meta chunk holding it failed;
 *  - the final chunk (the only one that may use the writer's reserve) is
 *    small and holds no THREAD record whatever the number of live threads,
 *    every thread being announced in an earlier chunk; on a full disk it
 *    still carries the LOSS and I/O ERROR records.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "tests/test_util.h"
#include "ptz/recorder.h"
#include "recorder/rec_internal.h"

/* ---- failure injection (-Wl,--wrap=...) ---- */
int __real_posix_memalign(void **p, size_t align, size_t n);
int __wrap_posix_memalign(void **p, size_t align, size_t n);
static _Atomic int fail_memalign;
int __wrap_posix_memalign(void **p, size_t align, size_t n)
{
	if (atomic_load(&fail_memalign))
		return ENOMEM;
	return __real_posix_memalign(p, align, n);
}

int __real_posix_fallocate64(int fd, off_t off, off_t len);
int __wrap_posix_fallocate64(int fd, off_t off, off_t len);
static _Atomic int fail_fallocate;
int __wrap_posix_fallocate64(int fd, off_t off, off_t len)
{
	if (atomic_load(&fail_fallocate))
		return ENOSPC;
	return __real_posix_fallocate64(fd, off, len);
}

/* meta chunks fail while set (the flusher's table and thread records) */
int __real_fmt_writer_append(struct fmt_writer *w, const struct fmt_chunk_hdr *h, const uint8_t *raw, size_t len,
			     int level);
int __wrap_fmt_writer_append(struct fmt_writer *w, const struct fmt_chunk_hdr *h, const uint8_t *raw, size_t len,
			     int level);
static _Atomic int fail_meta;
/* every ordinary chunk fails while set: a full disk, only the writer's
 * reserve left for the final chunk (fmt_writer_append_final(), not wrapped) */
static _Atomic int fail_disk_full;
int __wrap_fmt_writer_append(struct fmt_writer *w, const struct fmt_chunk_hdr *h, const uint8_t *raw, size_t len,
			     int level)
{
	if (atomic_load(&fail_disk_full))
		return -ENOSPC;
	if (atomic_load(&fail_meta) && h->kind == FMT_CHUNK_META)
		return -EIO;
	return __real_fmt_writer_append(w, h, raw, len, level);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

/* ---- ring re-attach with allocation failure ---- */

static void *reattach_thread(void *arg)
{
	(void)arg;
	struct pt_options o = { .ring_bytes = 64 << 10 };
	pt_recorder *r = pt_open(tu_path("reattach1.ptz"), &o, sizeof(o));
	assert_non_null(r);
	uint32_t id = pt_intern(r, "reattach");
	pt_begin(r, id); /* this thread's ring, in generation 1 */
	pt_end(r, id);
	assert_int_equal(pt_close(r), 0); /* the ring is now this thread's to free */
	r = pt_open(tu_path("reattach2.ptz"), &o, sizeof(o));
	assert_non_null(r);
	atomic_store(&fail_memalign, 1);
	pt_begin(r, id); /* frees the old ring, cannot allocate a new one */
	pt_end(r, id);   /* tries again, fails again */
	atomic_store(&fail_memalign, 0);
	return r; /* the TLS destructor runs now */
}

static void test_reattach_alloc_failure_counted_no_uaf(void **state)
{
	(void)state;
	pthread_t t;
	void *rv;
	assert_int_equal(pthread_create(&t, NULL, reattach_thread, NULL), 0);
	assert_int_equal(pthread_join(t, &rv), 0);
	pt_recorder *r = rv;
	struct pt_stats_info st;
	pt_stats(r, &st, sizeof(st));
	assert_int_equal(st.lost_records, 2);
	assert_int_equal(st.records, 0);
	assert_int_equal(pt_close(r), 0);
	pt_stats(r, &st, sizeof(st));
	assert_int_equal(st.lost_records, 2);
	struct tu_trace tr;
	tu_read(tu_path("reattach2.ptz"), &tr);
	assert_int_equal(tr.event_records, 0);
	assert_int_equal(tr.lost_records, 2);
	tu_free(&tr);
}

/* ---- the end of a section begun without a ring ---- */

static void *noring_thread(void *arg)
{
	pt_recorder *r = arg;
	uint32_t a = pt_intern(r, "noring-a");
	atomic_store(&fail_memalign, 1);
	pt_begin(r, a);              /* no ring: dropped, counted */
	pt_start(r, "noring-b", NULL, 0);
	atomic_store(&fail_memalign, 0);
	pt_stop(r, "noring-b", NULL, 0); /* the ring is allocated here */
	pt_end(r, a);
	pt_begin(r, a);              /* recorded */
	pt_end(r, a);
	pt_end(r, a);                /* a real misuse: counted as one */
	return NULL;
}

static void test_end_of_section_begun_without_ring(void **state)
{
	(void)state;
	const char *path = tu_path("noring.ptz");
	pt_recorder *r = pt_open(path, NULL, 0);
	assert_non_null(r);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, noring_thread, r), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	struct pt_stats_info st;
	assert_int_equal(pt_close(r), 0);
	pt_stats(r, &st, sizeof(st));
	assert_int_equal(st.lost_records, 4); /* two begins, their stop and end */
	assert_int_equal(st.errors, 1);       /* the last END only */
	struct tu_trace tr;
	tu_read(path, &tr);
	assert_int_equal(tr.lost_records, 4);
	assert_int_equal(tr.errors, 1);
	assert_int_equal(tr.nt, 1);
	assert_int_equal(tr.t[0].n, 3); /* BEGIN, END, ERROR */
	assert_int_equal(tr.t[0].recs[0].kind, PT_REC_BEGIN);
	assert_int_equal(tr.t[0].recs[1].kind, PT_REC_END);
	assert_int_equal(tr.t[0].recs[2].kind, PT_REC_ERROR);
	assert_int_equal(tr.t[0].recs[2].aux, PT_ERRC_END_UNDERFLOW);
	tu_free(&tr);
	unlink(path);
}

/* ---- a thread's exit record in a failed meta chunk ---- */

static _Atomic int exiter_go;

static void *exiter_thread(void *arg)
{
	pt_recorder *r = arg;
	pt_thread_name(r, 0, "exiter"); /* 0: the calling thread */
	uint32_t id = pt_intern(r, "exiter-work");
	pt_begin(r, id);
	pt_end(r, id);
	while (!atomic_load(&exiter_go))
		sleep_ms(1);
	return NULL;
}

static void test_exit_record_rewritten_after_failed_meta(void **state)
{
	(void)state;
	const char *path = tu_path("exit-meta.ptz");
	struct pt_options o = { .flush_interval_ms = 1 };
	pt_recorder *r = pt_open(path, &o, sizeof(o));
	assert_non_null(r);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, exiter_thread, r), 0);
	sleep_ms(100); /* its events and its first thread record (no end yet) are written */
	atomic_store(&fail_meta, 1);
	atomic_store(&exiter_go, 1);
	assert_int_equal(pthread_join(t, NULL), 0);
	sleep_ms(100); /* reaped: its last record goes into a meta chunk that fails */
	struct pt_stats_info st;
	pt_stats(r, &st, sizeof(st));
	assert_int_equal(st.last_io_error, EIO);
	atomic_store(&fail_meta, 0);
	uint32_t id = pt_intern(r, "after");
	for (int i = 0; i < 30; i++) { /* the flusher retries the tables (every 100 ms) */
		pt_begin(r, id);
		pt_end(r, id);
		sleep_ms(10);
	}
	assert_int_equal(pt_close(r), -EIO);
	struct tu_trace tr;
	tu_read(path, &tr);
	int found = 0;
	for (size_t i = 0; i < pt_reader_thread_count(tr.rd); i++) {
		struct pt_thread_info ti;
		assert_int_equal(pt_reader_thread(tr.rd, i, &ti, sizeof(ti)), 1);
		if (strcmp(ti.name, "exiter") == 0) {
			found = 1;
			assert_int_not_equal(ti.end_ticks, 0); /* its exit, not only its first record */
			assert_true(ti.end_ticks >= ti.start_ticks);
		}
	}
	assert_true(found);
	tu_free(&tr);
	unlink(path);
}

/* ---- the final chunk with thousands of live threads ---- */

/* Threads that record one section, then stay alive across pt_close(). */
enum { MANY_THREADS = 2000 };
static pthread_mutex_t many_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t many_cond = PTHREAD_COND_INITIALIZER;
static int many_ready, many_go;

static void *many_thread(void *arg)
{
	pt_recorder *r = arg;
	uint32_t id = pt_intern(r, "many");
	pt_begin(r, id);
	pt_end(r, id);
	pthread_mutex_lock(&many_lock);
	many_ready++;
	pthread_cond_broadcast(&many_cond);
	while (!many_go)
		pthread_cond_wait(&many_cond, &many_lock);
	pthread_mutex_unlock(&many_lock);
	return NULL;
}

/* The last chunk of @path: its records counted by kind into @kinds[256],
 * its payload size returned. Every other chunk's THREAD records are marked
 * in @announced[] (indexed by thread index, @nann entries). */
static uint64_t read_final_chunk(const char *path, unsigned kinds[256], struct pt_record *loss,
				 struct pt_record *io, unsigned char *announced, size_t nann)
{
	struct pt_reader *rd;
	assert_int_equal(pt_reader_open(path, &rd), 0);
	struct pt_chunk_info ci, last = { 0 };
	struct pt_record rec;
	uint32_t *thread_ids = NULL; /* THREAD records of the chunk being read */
	size_t nthr = 0;
	while (pt_reader_next_chunk(rd, PT_READER_ALL_CHUNKS, &ci, sizeof(ci)) == 1) {
		/* the previous chunk was not the last: its THREAD records count */
		for (size_t i = 0; i < nthr; i++)
			if (thread_ids[i] < nann)
				announced[thread_ids[i]] = 1;
		nthr = 0;
		memset(kinds, 0, 256 * sizeof(*kinds));
		thread_ids = realloc(thread_ids, (ci.records + 1) * sizeof(*thread_ids));
		last = ci;
		int rc;
		while ((rc = pt_reader_next_record(rd, &rec, sizeof(rec))) == 1) {
			kinds[rec.kind & 0xff]++;
			if (rec.kind == PT_REC_THREAD)
				thread_ids[nthr++] = rec.id;
			if (rec.kind == PT_REC_LOSS)
				*loss = rec;
			if (rec.kind == PT_REC_ERROR && rec.aux == PT_ERRC_IO)
				*io = rec;
		}
		assert_int_equal(rc, 0);
	}
	free(thread_ids);
	assert_int_equal(pt_reader_problem_count(rd), 0);
	pt_reader_close(rd);
	assert_int_equal(last.thread, PT_FMT_META_THREAD);
	struct stat sb;
	assert_int_equal(stat(path, &sb), 0);
	return (uint64_t)sb.st_size - last.offset - PT_FMT_CHUNK_HEADER_BYTES;
}

/* Opens @path, starts MANY_THREADS threads that each record a section and
 * wait, closes the recorder while they live (with every ordinary chunk
 * failing from then on if @disk_full, after @lost sections of this thread),
 * then lets them exit. Returns pt_close()'s result. */
static int close_with_many_threads(const char *path, bool disk_full, int lost)
{
	struct pt_options o = { .ring_bytes = 4096, .flush_interval_ms = 1 };
	pt_recorder *r = pt_open(path, &o, sizeof(o));
	assert_non_null(r);
	many_ready = many_go = 0;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 256 << 10);
	static pthread_t t[MANY_THREADS];
	for (int i = 0; i < MANY_THREADS; i++)
		assert_int_equal(pthread_create(&t[i], &at, many_thread, r), 0);
	pthread_attr_destroy(&at);
	pthread_mutex_lock(&many_lock);
	while (many_ready < MANY_THREADS)
		pthread_cond_wait(&many_cond, &many_lock);
	pthread_mutex_unlock(&many_lock);
	if (disk_full) {
		struct pt_stats_info st = { 0 };
		for (int i = 0; i < 1000 && st.records < 2 * MANY_THREADS; i++) {
			sleep_ms(5);
			pt_stats(r, &st, sizeof(st));
		}
		assert_int_equal(st.records, 2 * MANY_THREADS); /* written before the disk fills */
		atomic_store(&fail_disk_full, 1);
		uint32_t id = pt_intern(r, "lost-on-full-disk");
		for (int i = 0; i < lost; i++) {
			pt_begin(r, id);
			pt_end(r, id);
		}
	}
	int rc = pt_close(r); /* the threads are still alive */
	atomic_store(&fail_disk_full, 0);
	pthread_mutex_lock(&many_lock);
	many_go = 1;
	pthread_cond_broadcast(&many_cond);
	pthread_mutex_unlock(&many_lock);
	for (int i = 0; i < MANY_THREADS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	return rc;
}

/* The final chunk, the only one that may use the writer's 256 KiB reserve,
 * holds no THREAD record: with ~10,000 live threads it outgrew the reserve
 * and, on a full disk, the losses it carries were dropped with it. Every
 * thread still has its THREAD record, in an earlier chunk. */
static void test_final_chunk_small_with_many_threads(void **state)
{
	(void)state;
	const char *path = tu_path("many-threads.ptz");
	assert_int_equal(close_with_many_threads(path, false, 0), 0);
	unsigned kinds[256];
	struct pt_record loss = { 0 }, io = { 0 };
	static unsigned char announced[MANY_THREADS + 8];
	uint64_t payload = read_final_chunk(path, kinds, &loss, &io, announced, sizeof(announced));
	assert_int_equal(kinds[PT_REC_THREAD], 0);
	assert_int_equal(kinds[PT_REC_CLOCK], 1);
	assert_true(payload <= 512);
	struct pt_reader *rd;
	assert_int_equal(pt_reader_open(path, &rd), 0);
	size_t nthreads = pt_reader_thread_count(rd);
	assert_int_equal(nthreads, MANY_THREADS);
	for (size_t i = 0; i < nthreads; i++) {
		struct pt_thread_info ti;
		assert_int_equal(pt_reader_thread(rd, i, &ti, sizeof(ti)), 1);
		assert_true(ti.index < sizeof(announced));
		assert_true(announced[ti.index]);
	}
	pt_reader_close(rd);
	unlink(path);
}

/* A full disk (every ordinary chunk fails) with thousands of live threads:
 * the final chunk still carries the losses and the I/O error. */
static void test_final_chunk_keeps_losses_on_full_disk(void **state)
{
	(void)state;
	const char *path = tu_path("many-threads-full.ptz");
	enum { LOST = 50 };
	assert_int_equal(close_with_many_threads(path, true, LOST), -ENOSPC);
	unsigned kinds[256];
	struct pt_record loss = { 0 }, io = { 0 };
	static unsigned char announced[MANY_THREADS + 8];
	uint64_t payload = read_final_chunk(path, kinds, &loss, &io, announced, sizeof(announced));
	assert_true(payload <= 512);
	assert_int_equal(kinds[PT_REC_THREAD], 0);
	assert_int_equal(kinds[PT_REC_LOSS], 1);
	assert_int_equal(loss.value, 2 * LOST); /* the sections drained after the disk filled */
	assert_int_equal(kinds[PT_REC_ERROR], 1);
	assert_int_equal(io.value, ENOSPC);
	unlink(path);
}

/* ---- pt_stop() beyond 64 open sections ---- */

static void test_stop_searches_innermost_64(void **state)
{
	(void)state;
	const char *path = tu_path("deep-stop.ptz");
	pt_recorder *r = pt_open(path, NULL, 0);
	assert_non_null(r);
	char name[16];
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "deep-%d", i);
		pt_start(r, name, NULL, 0);
	}
	struct pt_stats_info st;
	pt_stop(r, "deep-99", NULL, 0); /* the innermost: found, nothing implicit */
	pt_stats(r, &st, sizeof(st));
	assert_int_equal(st.errors, 0);
	pt_stop(r, "deep-50", NULL, 0); /* 48 sections above it closed implicitly */
	pt_stats(r, &st, sizeof(st));
	assert_int_equal(st.errors, 48);
	pt_stop(r, "deep-49", NULL, 0); /* the innermost again: nothing implicit */
	pt_stats(r, &st, sizeof(st));
	assert_int_equal(st.errors, 48);
	pt_stop(r, "deep-40", NULL, 0); /* 41..48 implicit */
	pt_stats(r, &st, sizeof(st));
	assert_int_equal(st.errors, 48 + 8);
	/* levels 0..35 were overwritten by levels 64..99: not searched, and
	 * the stale entry of closed deep-64 matches nothing */
	pt_stop(r, "deep-64", NULL, 0);
	pt_stats(r, &st, sizeof(st));
	assert_int_equal(st.errors, 48 + 8 + 1);
	pt_stop(r, "deep-0", NULL, 0);
	pt_stats(r, &st, sizeof(st));
	assert_int_equal(st.errors, 48 + 8 + 2);
	pt_stop(r, "deep-36", NULL, 0); /* the outermost still remembered: 37..39 implicit */
	pt_stats(r, &st, sizeof(st));
	assert_int_equal(st.errors, 48 + 8 + 2 + 3);
	assert_int_equal(pt_close(r), 0);
	struct tu_trace tr;
	tu_read(path, &tr);
	assert_int_equal(tr.nt, 1);
	size_t open = 99;
	assert_int_equal(tu_check_nesting(&tr.t[0], &open), 64);
	assert_int_equal(open, 36); /* deep-0..deep-35 were never closed */
	tu_free(&tr);
}

/* ---- pt_stop() across skipped sections ---- */

static void test_stop_closes_outer_across_skipped(void **state)
{
	(void)state;
	const char *path = tu_path("skip-stop.ptz");
	pt_recorder *r = pt_open(path, NULL, 0);
	assert_non_null(r);
	uint32_t outer = pt_intern(r, "skip-outer");
	pt_start(r, "skip-outer", NULL, 0); /* recorded */
	pt_set_enabled(r, false);
	pt_start(r, "skip-inner", NULL, 0); /* skipped */
	pt_set_enabled(r, true);
	pt_stop(r, "skip-outer", NULL, 0); /* closes skip-inner (implicitly), then skip-outer */
	pt_start(r, "skip-after", NULL, 0); /* a sibling of skip-outer, not its child */
	pt_stop(r, "skip-after", NULL, 0);
	struct pt_stats_info st;
	pt_stats(r, &st, sizeof(st));
	assert_int_equal(st.errors, 1); /* the implicit close */
	assert_int_equal(st.lost_records, 0); /* disabled is not lost */
	assert_int_equal(pt_close(r), 0);
	struct tu_trace tr;
	tu_read(path, &tr);
	assert_int_equal(tr.nt, 1);
	size_t open = 9;
	assert_int_equal(tu_check_nesting(&tr.t[0], &open), 2);
	assert_int_equal(open, 0);
	assert_int_equal(tr.t[0].recs[0].kind, PT_REC_BEGIN);
	assert_int_equal(tr.t[0].recs[0].id, outer);
	assert_int_equal(tr.t[0].recs[1].kind, PT_REC_ERROR);
	assert_int_equal(tr.t[0].recs[2].kind, PT_REC_END);
	assert_int_equal(tr.t[0].recs[2].id, outer);
	tu_free(&tr);
}

/* ---- environment knobs with bad values ---- */

static pt_recorder *open_with_env(const char *ring, const char *flush, const char *zstd)
{
	setenv("PTZ_RING_BYTES", ring, 1);
	setenv("PTZ_FLUSH_MS", flush, 1);
	setenv("PTZ_ZSTD_LEVEL", zstd, 1);
	pt_recorder *r = pt_open(tu_path("env.ptz"), NULL, 0);
	unsetenv("PTZ_RING_BYTES");
	unsetenv("PTZ_FLUSH_MS");
	unsetenv("PTZ_ZSTD_LEVEL");
	assert_non_null(r);
	return r;
}

static void test_env_bad_values_take_defaults(void **state)
{
	(void)state;
	/* "-1" was read as 2^64 - 1: 1 GiB rings and a 10 s flush interval;
	 * "1k" as zstd level 1024 */
	pt_recorder *r = open_with_env("-1", "-5", "1k");
	assert_int_equal(r->ring_bytes, REC_DEFAULT_RING);
	assert_int_equal(r->flush_ms, 10);
	assert_int_equal(r->zstd_level, 1);
	assert_int_equal(pt_close(r), 0);
	/* trailing junk was ignored: "4096 bytes" gave 4 KiB rings */
	r = open_with_env("4096 bytes", "7ms", "fast");
	assert_int_equal(r->ring_bytes, REC_DEFAULT_RING);
	assert_int_equal(r->flush_ms, 10);
	assert_int_equal(r->zstd_level, 1);
	assert_int_equal(pt_close(r), 0);
	/* a suffix it did not know was dropped: "16G" gave 4 KiB rings */
	r = open_with_env("16G", "99999999999999999999", "99999999999");
	assert_int_equal(r->ring_bytes, REC_MAX_RING); /* clamped, as documented */
	assert_int_equal(r->flush_ms, 10);
	assert_int_equal(r->zstd_level, 1);
	assert_int_equal(pt_close(r), 0);
	/* valid values still work */
	r = open_with_env("64k", "20000", "-5");
	assert_int_equal(r->ring_bytes, 64 << 10);
	assert_int_equal(r->flush_ms, 10000); /* clamped */
	assert_int_equal(r->zstd_level, -5);
	assert_int_equal(pt_close(r), 0);
	r = open_with_env("0x2000", "3", "19");
	assert_int_equal(r->ring_bytes, 8192);
	assert_int_equal(r->flush_ms, 3);
	assert_int_equal(r->zstd_level, 19);
	assert_int_equal(pt_close(r), 0);
}

/* ---- a failed meta chunk does not lose its names ---- */

static void test_failed_meta_chunk_names_rewritten(void **state)
{
	(void)state;
	const char *path = tu_path("meta-lost.ptz");
	struct pt_options o = { .flush_interval_ms = 1, .zstd_level = -1 };
	pt_recorder *r = pt_open(path, &o, sizeof(o));
	assert_non_null(r);
	atomic_store(&fail_fallocate, 1); /* the file cannot grow past its first reservation */
	uint32_t fill = pt_intern(r, "meta-fill");
	uint64_t x = 88172645463325252ull;
	struct pt_stats_info st = { 0 };
	for (int i = 0; i < 20000000 && !st.last_io_error; i++) {
		pt_begin(r, fill);
		x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* incompressible */
		pt_metric(r, PT_METRIC_WRITTEN_BYTES, x);
		pt_end(r, fill);
		if ((i & 1023) == 0) {
			pt_stats(r, &st, sizeof(st));
			sleep_ms(0);
		}
	}
	assert_int_equal(st.last_io_error, ENOSPC);
	/* Fill the space left below the writer's first reservation (8 MiB,
	 * 256 KiB of it kept for the final chunk) with small chunks, so that
	 * the meta chunk below cannot fit whatever the timing. */
	const uint64_t usable = (8u << 20) - (256u << 10);
	for (int k = 0; k < 20000 && st.bytes_written < usable - (64u << 10); k++) {
		for (int i = 0; i < 200; i++) {
			pt_begin(r, fill);
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			pt_metric(r, PT_METRIC_WRITTEN_BYTES, x);
			pt_end(r, fill);
		}
		sleep_ms(1);
		pt_stats(r, &st, sizeof(st));
	}
	assert_true(st.bytes_written >= usable - (64u << 10));
	/* names first seen while writes fail, in one meta chunk of ~300 KB
	 * (over 64 KiB compressed): it fails */
	uint32_t late = pt_intern(r, "meta-late-name");
	char big[1001];
	for (int n = 0; n < 300; n++) {
		for (int i = 0; i < 1000; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			big[i] = (char)('!' + x % 90);
		}
		big[1000] = 0;
		pt_intern(r, big);
	}
	/* the fill is drained (or lost) */
	uint64_t seen0 = 0;
	for (int quiet = 0, i = 0; quiet < 3 && i < 500; i++) {
		sleep_ms(10);
		pt_stats(r, &st, sizeof(st));
		quiet = st.records + st.lost_records == seen0 ? quiet + 1 : 0;
		seen0 = st.records + st.lost_records;
	}
	pt_begin(r, late); /* its chunk (written or not) comes after the failed meta chunk */
	pt_end(r, late);
	for (int i = 0; i < 200 && st.records + st.lost_records < seen0 + 2; i++) {
		sleep_ms(5);
		pt_stats(r, &st, sizeof(st));
	}
	assert_int_equal(st.records + st.lost_records, seen0 + 2);
	/* the disk has room again: later sections using the name are written */
	atomic_store(&fail_fallocate, 0);
	pt_begin(r, late);
	pt_end(r, late);
	sleep_ms(50);
	assert_int_equal(pt_close(r), -ENOSPC);
	struct tu_trace tr;
	tu_read(path, &tr);
	int seen = 0;
	for (size_t k = 0; k < tr.nt; k++)
		for (size_t i = 0; i < tr.t[k].n; i++)
			seen += tr.t[k].recs[i].kind == PT_REC_BEGIN && tr.t[k].recs[i].id == late;
	assert_true(seen >= 1);
	const char *name = pt_reader_string(tr.rd, late, NULL);
	assert_non_null(name);
	assert_string_equal(name, "meta-late-name");
	tu_free(&tr);
}

/* ---- a GPU section that does not fit is dropped whole, and counted ---- */

static struct rec_ring *my_ring(pt_recorder *r)
{
	uint32_t tid = (uint32_t)gettid();
	struct rec_ring *g, *mine = NULL;
	urcu_bp_read_lock();
	cds_list_for_each_entry_rcu(g, &r->rings, node)
		if (g->tid == tid)
			mine = g;
	urcu_bp_read_unlock();
	return mine;
}

static void test_gpu_begin_without_room_is_dropped_whole(void **state)
{
	(void)state;
	const char *path = tu_path("gpu-room.ptz");
	struct pt_options o = { .ring_bytes = 4096 }; /* 256 slots */
	pt_recorder *r = pt_open(path, &o, sizeof(o));
	assert_non_null(r);
	uint32_t id = pt_intern(r, "gpu-room"), mark = pt_intern(r, "gpu-room-fill");
	pt_instant(r, mark);
	struct pt_stats_info st = { 0 };
	for (int i = 0; i < 400 && st.records == 0; i++) {
		sleep_ms(5);
		pt_stats(r, &st, sizeof(st));
	}
	assert_int_equal(st.records, 1); /* drained: the ring is announced */
	/* Hold the flusher: a changed thread name makes it look up the names
	 * of announced threads, under names_lock, which we hold. */
	pthread_mutex_lock(&r->names_lock);
	atomic_fetch_add(&r->names_gen, 1);
	struct rec_ring *g = my_ring(r);
	assert_non_null(g);
	/* held once half a ring of data stays undrained for 50 ms */
	uint64_t tail0 = atomic_load(&g->tail) + 1;
	for (int i = 0; i < 100 && atomic_load(&g->tail) != tail0; i++) {
		while (atomic_load(&g->head) - atomic_load(&g->tail) < g->cap / 2)
			pt_instant(r, mark);
		tail0 = atomic_load(&g->tail);
		sleep_ms(50);
	}
	assert_int_equal(atomic_load(&g->tail), tail0);
	/* leave 11 free slots: a BEGIN needs 2 + REC_SLACK = 10, a GPU begin 13 */
	while (g->cap - (atomic_load(&g->head) - atomic_load(&g->tail)) > 11)
		pt_instant(r, mark);
	assert_int_equal(g->cap - (atomic_load(&g->head) - atomic_load(&g->tail)), 11);
	assert_int_equal(rec_begin_gpu(r, id, 0, 0, 1), 0); /* skipped: no GPU half may follow */
	pt_end(r, id); /* as pt_gpu_end() does for a skipped section */
	pthread_mutex_unlock(&r->names_lock);
	pt_stats(r, &st, sizeof(st));
	assert_int_equal(st.lost_sections, 1);
	assert_int_equal(st.lost_records, 2);
	assert_int_equal(st.errors, 0);
	assert_int_equal(pt_close(r), 0);
	struct tu_trace tr;
	tu_read(path, &tr);
	assert_int_equal(tr.lost_sections, 1);
	for (size_t i = 0; i < tr.t[0].n; i++)
		assert_int_not_equal(tr.t[0].recs[i].id, id);
	tu_free(&tr);
}

/* ---- event chunk size ---- */

/* One busy thread drained rarely (large ring, 10 s flush interval): its
 * drain is split into event chunks of at most 256 KiB raw (the bound on
 * what a reader buffers per chunk), and every record arrives. */
static void test_event_chunks_capped(void **state)
{
	(void)state;
	const char *path = tu_path("chunk-cap.ptz");
	struct pt_options o = { .ring_bytes = 32u << 20, .flush_interval_ms = 10000 };
	pt_recorder *r = pt_open(path, &o, sizeof(o));
	assert_non_null(r);
	uint32_t id = pt_intern(r, "s");
	enum { N = 400000 }; /* ~1.3 MB of payload */
	for (int i = 0; i < N; i++) {
		pt_begin(r, id);
		pt_end(r, id);
	}
	assert_int_equal(pt_close(r), 0);
	FILE *fp = fopen(path, "rb");
	assert_non_null(fp);
	uint8_t hb[PT_FMT_CHUNK_HEADER_BYTES];
	uint64_t off = PT_FMT_HEADER_BYTES, records = 0, events = 0, max_raw = 0;
	while (fseek(fp, (long)off, SEEK_SET) == 0 && fread(hb, 1, sizeof(hb), fp) == sizeof(hb)) {
		struct fmt_chunk_hdr h;
		const char *why;
		assert_int_equal(fmt_chunk_hdr_parse(hb, &h, &why), 0);
		if (h.kind == FMT_CHUNK_EVENTS) {
			events++;
			records += h.records;
			if (h.raw_bytes > max_raw)
				max_raw = h.raw_bytes;
		}
		off += PT_FMT_CHUNK_HEADER_BYTES + h.stored_bytes;
	}
	fclose(fp);
	assert_true(events >= 5);           /* the drain was split */
	assert_true(max_raw <= 256u << 10);
	assert_true(max_raw > 200u << 10);  /* and the chunks were filled */
	assert_int_equal(records, 2 * N);
	unlink(path);
}

/* ---- pt_stats() while an exited thread's ring is folded ---- */

/* rec_internal.h's test seam, inside the fold's odd section: held open
 * long enough that pt_stats() calls land inside it. */
static _Atomic int fold_delay_ms, folds_started, folds_seen;
void rec_test_fold_hook(void)
{
	int ms = atomic_load(&fold_delay_ms);
	if (ms) {
		atomic_fetch_add(&folds_started, 1);
		sleep_ms(ms);
		atomic_fetch_add(&folds_seen, 1);
	}
}

static void *lossy_thread(void *arg)
{
	pt_recorder *r = arg;
	uint32_t id = pt_intern(r, "fold");
	for (int i = 0; i < 200000; i++) {
		pt_begin(r, id);
		pt_end(r, id);
	}
	return NULL;
}

/* A thread fills its small ring (losses counted in it) and exits; while
 * the flusher folds the ring's counters into the closed totals (held open
 * 30 ms by the seam), and after pt_close(), pt_stats() reads the same
 * total: before the fold ran under a sequence count, a call inside it saw
 * the ring both still linked and already added (twice its losses). */
static void test_stats_exact_while_ring_folds(void **state)
{
	(void)state;
	const char *path = tu_path("fold.ptz");
	struct pt_options o = { .ring_bytes = 4096, .flush_interval_ms = 10 };
	pt_recorder *r = pt_open(path, &o, sizeof(o));
	assert_non_null(r);
	atomic_store(&fold_delay_ms, 30);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, lossy_thread, r), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	/* the thread's counters are final: every read must give one value */
	struct pt_stats_info st;
	uint64_t lost = UINT64_MAX;
	int inside = 0;
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		int ended_before = atomic_load(&folds_seen);
		pt_stats(r, &st, sizeof(st));
		inside += !ended_before && atomic_load(&folds_started); /* the call overlapped the fold */
		if (lost == UINT64_MAX)
			lost = st.lost_records;
		assert_int_equal(st.lost_records, lost);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (atomic_load(&folds_seen) == 0 && now.tv_sec - t0.tv_sec < 5);
	assert_true(lost > 0);
	assert_int_equal(atomic_load(&folds_seen), 1);
	assert_true(inside > 0);
	atomic_store(&fold_delay_ms, 0);
	assert_int_equal(pt_close(r), 0);
	pt_stats(r, &st, sizeof(st));
	assert_int_equal(st.lost_records, lost);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reattach_alloc_failure_counted_no_uaf),
		cmocka_unit_test(test_stop_searches_innermost_64),
		cmocka_unit_test(test_stop_closes_outer_across_skipped),
		cmocka_unit_test(test_env_bad_values_take_defaults),
		cmocka_unit_test(test_failed_meta_chunk_names_rewritten),
		cmocka_unit_test(test_gpu_begin_without_room_is_dropped_whole),
		cmocka_unit_test(test_event_chunks_capped),
		cmocka_unit_test(test_stats_exact_while_ring_folds),
		cmocka_unit_test(test_end_of_section_begun_without_ring),
		cmocka_unit_test(test_exit_record_rewritten_after_failed_meta),
		cmocka_unit_test(test_final_chunk_small_with_many_threads),
		cmocka_unit_test(test_final_chunk_keeps_losses_on_full_disk),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
