/*
 * tests/unit/test_flight.c - flight-recorder files (doc/trace-format.md §10)
 * at the format level: fmt_writer with a circular area, pt_reader on it.
 *
 * Invariants covered:
 *  - a 1 MiB area wrapped many times holds a window that ends with the last
 *    chunk written and has no hole: the counter values (one global sequence
 *    across three threads) come back strictly consecutive, in write order,
 *    with no problem, no corrupt region, and every thread's chunk sequence
 *    consecutive from wherever it starts; the window fills at least the area
 *    less two chunks; the file never grows past the area; names defined in a
 *    meta chunk repeated inside the window resolve;
 *  - closed, the file keeps its area (no truncation) and says so (flight,
 *    window, laps);
 *  - a writer killed (SIGKILL) at random moments leaves a file that reads
 *    the same way: consecutive values, no problem;
 *  - a window (snapshot) file: each thread may start at any sequence
 *    without a problem, which a stream file still reports; a chunk copied
 *    with fmt_writer_append_stored() reads back identical;
 *  - a chunk larger than half the area is refused (-PT_ETOOBIG), an area
 *    under 1 MiB at open (-EINVAL).
 */
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <zstd.h>

#include "tests/test_util.h"
#include "trace-format/fmt_internal.h"

#define AREA (1u << 20)
#define NTHREADS 3
#define NAME_ID 7

static uint64_t rng = 0x1234567;
static uint64_t rnd(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static struct fmt_writer *open_w(const char *path, uint64_t flight, int window)
{
	struct fmt_writer_hdr hd = { .clock_source = PT_CLOCK_MONOTONIC, .pid = 1, .process_name = "flight",
				     .flight_bytes = flight, .window = window };
	struct fmt_writer *w;
	assert_int_equal(fmt_writer_open(path, &hd, &w), 0);
	return w;
}

/* Appends one event chunk of thread @t holding counters @*v, @*v + 1, ...
 * (1 to 600 of them, random values in the high bits so zstd keeps some). */
static void put_chunk(struct fmt_writer *w, uint32_t t, uint64_t *seq, uint64_t *v, uint8_t *buf, size_t cap)
{
	struct fmt_enc e;
	fmt_enc_reset(&e, buf, cap);
	size_t n = 1 + rnd() % 600;
	for (size_t i = 0; i < n; i++) {
		fmt_enc_counter(&e, *v * 10, NAME_ID, (int64_t)((rnd() << 24) | *v));
		++*v;
	}
	struct fmt_chunk_hdr h = { .kind = FMT_CHUNK_EVENTS, .thread = t, .records = e.records,
				   .sequence = seq[t]++, .first_ticks = e.first_ticks, .last_ticks = e.last_ticks };
	assert_int_equal(fmt_writer_append(w, &h, buf, (size_t)(e.pos - e.buf), 1), 0);
}

static void put_meta(struct fmt_writer *w, uint64_t *mseq, uint8_t *buf, size_t cap)
{
	struct fmt_enc e;
	fmt_enc_reset(&e, buf, cap);
	fmt_enc_string(&e, NAME_ID, 0, "queue depth", 11);
	for (uint32_t t = 0; t < NTHREADS; t++)
		fmt_enc_thread(&e, t, 100 + t, 0, 0, "worker", 6);
	struct fmt_chunk_hdr h = { .kind = FMT_CHUNK_META, .thread = PT_FMT_META_THREAD, .records = e.records,
				   .sequence = (*mseq)++ };
	assert_int_equal(fmt_writer_append(w, &h, buf, (size_t)(e.pos - e.buf), 1), 0);
}

/* Writes until @laps wraps (or forever when @laps is 0); returns the next value. */
static uint64_t write_flight(struct fmt_writer *w, uint64_t laps)
{
	static uint8_t buf[64 << 10];
	uint64_t seq[NTHREADS] = { 0 }, mseq = 0, v = 0;
	for (uint64_t i = 0; laps == 0 || fmt_writer_laps(w) < laps; i++) {
		if (i % 16 == 0) /* the tables, repeated well within a window (§10) */
			put_meta(w, &mseq, buf, sizeof(buf));
		put_chunk(w, (uint32_t)(rnd() % NTHREADS), seq, &v, buf, sizeof(buf));
	}
	return v;
}

/* Reads @path: asserts a clean window of consecutive values ending at
 * @last (UINT64_MAX: any end). Returns the number of values. */
static uint64_t check_window(const char *path, uint64_t last, int closed)
{
	struct pt_reader *r;
	assert_int_equal(pt_reader_open(path, &r), 0);
	const struct pt_trace_info *in = pt_reader_info(r);
	for (size_t i = 0; i < pt_reader_problem_count(r); i++) {
		uint64_t off;
		print_message("problem: %s @%llu\n", pt_reader_problem(r, i, &off), (unsigned long long)off);
	}
	assert_int_equal(pt_reader_problem_count(r), 0);
	assert_int_equal(in->corrupt_regions, 0);
	assert_true(in->flight);
	assert_true(in->window);
	assert_int_equal(in->flight_bytes, AREA);
	assert_int_equal(in->closed, closed);
	assert_true(in->file_bytes <= PT_FMT_HEADER_BYTES + AREA);
	uint32_t dom;
	const char *name = pt_reader_string(r, NAME_ID, &dom);
	assert_non_null(name);
	assert_string_equal(name, "queue depth");
	struct pt_chunk_info ci;
	struct pt_record rec;
	uint64_t first = UINT64_MAX, prev = 0, n = 0, bytes = 0;
	uint64_t tseq[NTHREADS];
	int seen[NTHREADS] = { 0 };
	int rc;
	while ((rc = pt_reader_next_chunk(r, PT_READER_ALL_CHUNKS, &ci, sizeof(ci))) == 1) {
		if (ci.thread != PT_FMT_META_THREAD) {
			assert_true(ci.thread < NTHREADS);
			if (seen[ci.thread])
				assert_int_equal(ci.sequence, tseq[ci.thread] + 1);
			seen[ci.thread] = 1;
			tseq[ci.thread] = ci.sequence;
		}
		while ((rc = pt_reader_next_record(r, &rec, sizeof(rec))) == 1) {
			if (rec.kind != PT_REC_COUNTER)
				continue;
			uint64_t v = rec.value & 0xffffff;
			if (first == UINT64_MAX)
				first = v;
			else
				assert_int_equal(v, (prev + 1) & 0xffffff);
			prev = v;
			n++;
		}
		assert_int_equal(rc, 0);
	}
	assert_int_equal(rc, 0);
	bytes = in->stored_bytes + in->chunks * PT_FMT_CHUNK_HEADER_BYTES;
	if (last != UINT64_MAX)
		assert_int_equal(prev, (last - 1) & 0xffffff);
	if (in->laps) /* full: at most the area less two largest chunks is not window */
		assert_true(bytes + 2 * (64 + ZSTD_COMPRESSBOUND(64 << 10)) >= AREA);
	pt_reader_close(r);
	return n;
}

static void test_wrap(void **state)
{
	(void)state;
	const char *path = tu_path("wrap.ptz");
	struct fmt_writer *w = open_w(path, AREA, 0);
	uint64_t v = write_flight(w, 7);
	uint64_t laps = fmt_writer_laps(w);
	assert_int_equal(laps, 7);
	/* unclosed: what a crash leaves */
	uint64_t open_n = check_window(path, v, 0);
	assert_true(open_n > 0 && open_n < v);
	assert_int_equal(fmt_writer_close(w), 0);
	uint64_t n = check_window(path, v, 1);
	assert_int_equal(n, open_n);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal((uint64_t)st.st_size, PT_FMT_HEADER_BYTES + AREA); /* the area kept */
	struct pt_reader *r;
	assert_int_equal(pt_reader_open(path, &r), 0);
	assert_int_equal(pt_reader_info(r)->laps, 7);
	assert_int_equal(pt_reader_info(r)->version_minor, 2);
	pt_reader_close(r);
}

/* The first lap, before any wrap: the whole run, nothing overwritten. */
static void test_first_lap(void **state)
{
	(void)state;
	const char *path = tu_path("lap0.ptz");
	struct fmt_writer *w = open_w(path, AREA, 0);
	static uint8_t buf[64 << 10];
	uint64_t seq[NTHREADS] = { 0 }, mseq = 0, v = 0;
	put_meta(w, &mseq, buf, sizeof(buf));
	for (int i = 0; i < 5; i++)
		put_chunk(w, (uint32_t)i % NTHREADS, seq, &v, buf, sizeof(buf));
	assert_int_equal(fmt_writer_close(w), 0);
	assert_int_equal(check_window(path, v, 1), v);
}

/* After every append of two laps: what a kill between appends leaves. */
static void test_every_state(void **state)
{
	(void)state;
	const char *path = tu_path("states.ptz");
	struct fmt_writer *w = open_w(path, AREA, 0);
	static uint8_t buf[64 << 10];
	uint64_t seq[NTHREADS] = { 0 }, mseq = 0, v = 0;
	for (uint64_t i = 0; fmt_writer_laps(w) < 3; i++) {
		if (i % 16 == 0)
			put_meta(w, &mseq, buf, sizeof(buf));
		put_chunk(w, (uint32_t)(rnd() % NTHREADS), seq, &v, buf, sizeof(buf));
		if (fmt_writer_laps(w) >= 1)
			check_window(path, v, 0);
	}
	assert_int_equal(fmt_writer_close(w), 0);
}

static void test_killed(void **state)
{
	(void)state;
	const char *path = tu_path("killed.ptz");
	for (int k = 0; k < tu_scale(12); k++) {
		unlink(path);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			rng += (uint64_t)k * 7919;
			struct fmt_writer *w = open_w(path, AREA, 0);
			write_flight(w, 0); /* until killed */
			_exit(1);
		}
		/* 20 to 120 ms: a few laps at most, a kill at any point of one */
		struct timespec ts = { 0, (long)(20 + rnd() % 100) * 1000000L };
		nanosleep(&ts, NULL);
		kill(pid, SIGKILL);
		int st;
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFSIGNALED(st));
		struct pt_reader *r;
		if (pt_reader_open(path, &r) == 0 && pt_reader_info(r)->chunks > 0) {
			pt_reader_close(r);
			check_window(path, UINT64_MAX, 0);
		} else if (r) {
			pt_reader_close(r);
		}
	}
}

/* A window file (a snapshot): threads start mid-sequence, copied chunks. */
static void test_window_copy(void **state)
{
	(void)state;
	const char *src = tu_path("src.ptz"), *dst = tu_path("snap.ptz"), *plain = tu_path("plain.ptz");
	struct fmt_writer *w = open_w(src, AREA, 0);
	uint64_t v = write_flight(w, 2);
	assert_int_equal(fmt_writer_close(w), 0);
	/* copy every chunk of the window, as a snapshot does */
	struct pt_reader *r;
	assert_int_equal(pt_reader_open(src, &r), 0);
	struct fmt_writer *s = open_w(dst, 0, 1), *p = open_w(plain, 0, 0);
	struct pt_chunk_info ci;
	int fd = open(src, O_RDONLY);
	assert_true(fd >= 0);
	static uint8_t chunk[PT_FMT_CHUNK_HEADER_BYTES + (64 << 10) + 4096];
	while (pt_reader_next_chunk_header(r, &ci, sizeof(ci)) == 1) {
		assert_int_equal(pread(fd, chunk, PT_FMT_CHUNK_HEADER_BYTES, (off_t)ci.offset), PT_FMT_CHUNK_HEADER_BYTES);
		struct fmt_chunk_hdr h;
		const char *why;
		assert_int_equal(fmt_chunk_hdr_parse(chunk, &h, &why), 0);
		size_t len = PT_FMT_CHUNK_HEADER_BYTES + h.stored_bytes;
		assert_true(len <= sizeof(chunk));
		assert_int_equal(pread(fd, chunk, len, (off_t)ci.offset), (ssize_t)len);
		assert_int_equal(fmt_writer_append_stored(s, chunk, len), 0);
		assert_int_equal(fmt_writer_append_stored(p, chunk, len), 0);
	}
	close(fd);
	pt_reader_close(r);
	assert_int_equal(fmt_writer_close(s), 0);
	assert_int_equal(fmt_writer_close(p), 0);
	/* the window file: no problem, the same values */
	assert_int_equal(pt_reader_open(dst, &r), 0);
	assert_int_equal(pt_reader_problem_count(r), 0);
	assert_true(pt_reader_info(r)->window);
	assert_false(pt_reader_info(r)->flight);
	assert_int_equal(pt_reader_info(r)->version_minor, 2);
	uint64_t n = 0, last = 0;
	struct pt_record rec;
	while (pt_reader_next_chunk(r, PT_READER_ALL_CHUNKS, &ci, sizeof(ci)) == 1)
		while (pt_reader_next_record(r, &rec, sizeof(rec)) == 1)
			if (rec.kind == PT_REC_COUNTER) {
				if (n)
					assert_int_equal(rec.value & 0xffffff, (last + 1) & 0xffffff);
				last = rec.value & 0xffffff;
				n++;
			}
	assert_int_equal(last, (v - 1) & 0xffffff);
	pt_reader_close(r);
	/* the same chunks in a stream file: the missing starts are reported */
	assert_int_equal(pt_reader_open(plain, &r), 0);
	assert_false(pt_reader_info(r)->window);
	assert_int_equal(pt_reader_info(r)->version_minor, 1);
	size_t missing = 0;
	for (size_t i = 0; i < pt_reader_problem_count(r); i++)
		{
		uint64_t off;
		missing += strstr(pt_reader_problem(r, i, &off), "earlier chunks missing") != NULL;
	}
	assert_true(missing >= 1);
	pt_reader_close(r);
}

static void test_limits(void **state)
{
	(void)state;
	const char *path = tu_path("limits.ptz");
	struct fmt_writer_hdr hd = { .clock_source = PT_CLOCK_MONOTONIC, .flight_bytes = AREA - 4096 };
	struct fmt_writer *w;
	assert_int_equal(fmt_writer_open(path, &hd, &w), -EINVAL);
	w = open_w(path, AREA, 0);
	static uint8_t big[600 << 10];
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)rnd();
	struct fmt_chunk_hdr h = { .kind = FMT_CHUNK_EVENTS, .thread = 0, .records = 1 };
	assert_int_equal(fmt_writer_append(w, &h, big, sizeof(big), 1), -PT_ETOOBIG);
	assert_int_equal(fmt_writer_append(w, &h, big, 100 << 10, 1), 0);
	assert_int_equal(fmt_writer_close(w), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wrap),	    cmocka_unit_test(test_first_lap), cmocka_unit_test(test_every_state), cmocka_unit_test(test_killed),
		cmocka_unit_test(test_window_copy), cmocka_unit_test(test_limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
