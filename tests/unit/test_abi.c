/*
 * tests/unit/test_abi.c - the size-versioned public structs (ptz/recorder.h,
 * "Types"), used as an application would: through libptz.so.
 *
 * Invariants covered:
 *  - the layouts only grow at the end: every field of the 0.3.0 (soname 1)
 *    layouts keeps its offset (static asserts on mirror structs);
 *  - an output struct from older headers is never overrun: pt_stats(),
 *    pt_reader_next_record(), pt_reader_next_records() (as a stride),
 *    pt_reader_next_chunk(), pt_reader_next_chunk_header() and
 *    pt_reader_thread() write exactly the size given, canaries after it
 *    intact, and what they write is the prefix of the full struct;
 *  - a larger output struct (newer headers) gets its unknown tail zeroed;
 *  - an input struct from older headers is read only up to its size: the
 *    fields it lacks take their defaults (pt_open() with a pt_options
 *    without process_name, pt_start()/pt_stop() with a pt_metrics without
 *    flops), whatever lies after it in memory;
 *  - a larger pt_options with non-zero bytes this library does not know is
 *    refused with E2BIG and creates no file; with a zero tail it opens;
 *  - a stride of 0 is EINVAL;
 *  - the protocol constants of ptz/format.h keep the values the format
 *    document gives them.
 */
#include "test_util.h"

#include <stdalign.h> /* alignas */

#include "ptz/recorder.h"

#define CANARY 0xA5

static int all_bytes(const void *p, size_t n, unsigned char v)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i] != v)
			return 0;
	return 1;
}

/* ---- layouts: mirrors of the 0.3.0 structs; a field moved or resized fails the build */

struct options_v0_3 {
	size_t ring_bytes;
	int zstd_level;
	unsigned flush_interval_ms;
	const char *process_name;
};
struct metrics_v0_3 {
	uint64_t read_bytes, written_bytes, flops;
};
struct stats_v0_3 {
	uint64_t records, lost_records, lost_sections, errors, chunks, bytes_written, threads;
	int last_io_error;
	uint64_t gpu_launched, gpu_ranges, gpu_dropped, gpu_early_starts;
	int gpu_state;
	int gpu_error;
};
struct record_v0_3 {
	uint64_t ticks, value, value2, value3, value4;
	uint32_t id, aux, kind, str_len;
	const char *str;
};
struct chunk_info_v0_3 {
	uint64_t offset, sequence, first_ticks, last_ticks;
	uint32_t thread, records;
};
struct thread_info_v0_3 {
	uint32_t index, tid;
	uint64_t start_ticks, end_ticks;
	const char *name;
};

#define SAME_OFFSET(cur, old, f) _Static_assert(offsetof(cur, f) == offsetof(old, f), #cur "." #f " moved")
#define GROWS_ONLY(cur, old) _Static_assert(sizeof(cur) >= sizeof(old), #cur " shrank")

SAME_OFFSET(struct pt_options, struct options_v0_3, ring_bytes);
SAME_OFFSET(struct pt_options, struct options_v0_3, zstd_level);
SAME_OFFSET(struct pt_options, struct options_v0_3, flush_interval_ms);
SAME_OFFSET(struct pt_options, struct options_v0_3, process_name);
GROWS_ONLY(struct pt_options, struct options_v0_3);
SAME_OFFSET(struct pt_metrics, struct metrics_v0_3, read_bytes);
SAME_OFFSET(struct pt_metrics, struct metrics_v0_3, written_bytes);
SAME_OFFSET(struct pt_metrics, struct metrics_v0_3, flops);
GROWS_ONLY(struct pt_metrics, struct metrics_v0_3);
SAME_OFFSET(struct pt_stats_info, struct stats_v0_3, records);
SAME_OFFSET(struct pt_stats_info, struct stats_v0_3, lost_records);
SAME_OFFSET(struct pt_stats_info, struct stats_v0_3, lost_sections);
SAME_OFFSET(struct pt_stats_info, struct stats_v0_3, errors);
SAME_OFFSET(struct pt_stats_info, struct stats_v0_3, chunks);
SAME_OFFSET(struct pt_stats_info, struct stats_v0_3, bytes_written);
SAME_OFFSET(struct pt_stats_info, struct stats_v0_3, threads);
SAME_OFFSET(struct pt_stats_info, struct stats_v0_3, last_io_error);
SAME_OFFSET(struct pt_stats_info, struct stats_v0_3, gpu_launched);
SAME_OFFSET(struct pt_stats_info, struct stats_v0_3, gpu_ranges);
SAME_OFFSET(struct pt_stats_info, struct stats_v0_3, gpu_dropped);
SAME_OFFSET(struct pt_stats_info, struct stats_v0_3, gpu_early_starts);
SAME_OFFSET(struct pt_stats_info, struct stats_v0_3, gpu_state);
SAME_OFFSET(struct pt_stats_info, struct stats_v0_3, gpu_error);
GROWS_ONLY(struct pt_stats_info, struct stats_v0_3);
SAME_OFFSET(struct pt_record, struct record_v0_3, ticks);
SAME_OFFSET(struct pt_record, struct record_v0_3, value);
SAME_OFFSET(struct pt_record, struct record_v0_3, value2);
SAME_OFFSET(struct pt_record, struct record_v0_3, value3);
SAME_OFFSET(struct pt_record, struct record_v0_3, value4);
SAME_OFFSET(struct pt_record, struct record_v0_3, id);
SAME_OFFSET(struct pt_record, struct record_v0_3, aux);
SAME_OFFSET(struct pt_record, struct record_v0_3, kind);
SAME_OFFSET(struct pt_record, struct record_v0_3, str_len);
SAME_OFFSET(struct pt_record, struct record_v0_3, str);
GROWS_ONLY(struct pt_record, struct record_v0_3);
SAME_OFFSET(struct pt_chunk_info, struct chunk_info_v0_3, offset);
SAME_OFFSET(struct pt_chunk_info, struct chunk_info_v0_3, sequence);
SAME_OFFSET(struct pt_chunk_info, struct chunk_info_v0_3, first_ticks);
SAME_OFFSET(struct pt_chunk_info, struct chunk_info_v0_3, last_ticks);
SAME_OFFSET(struct pt_chunk_info, struct chunk_info_v0_3, thread);
SAME_OFFSET(struct pt_chunk_info, struct chunk_info_v0_3, records);
GROWS_ONLY(struct pt_chunk_info, struct chunk_info_v0_3);
SAME_OFFSET(struct pt_thread_info, struct thread_info_v0_3, index);
SAME_OFFSET(struct pt_thread_info, struct thread_info_v0_3, tid);
SAME_OFFSET(struct pt_thread_info, struct thread_info_v0_3, start_ticks);
SAME_OFFSET(struct pt_thread_info, struct thread_info_v0_3, end_ticks);
SAME_OFFSET(struct pt_thread_info, struct thread_info_v0_3, name);
GROWS_ONLY(struct pt_thread_info, struct thread_info_v0_3);

/* ---- older layouts: what the 0.1 headers declared */

/* 0.1's struct pt_stats_info: the first eight fields, 64 bytes on LP64 */
struct stats_v0_1 {
	uint64_t records, lost_records, lost_sections, errors, chunks, bytes_written, threads;
	int last_io_error;
};
/* 0.1's struct pt_record was 48 bytes (0.2 inserted value3/value4 before
 * id, which is why the soname went to 1): as a size, it is 48 */
#define RECORD_V0_1_BYTES 48u

/* A trace @name of @n sections, closed: its recorder (the handle stays
 * valid, its stats as pt_close() left them) and, in @st, those stats. */
static pt_recorder *record_closed(const char *name, int n, struct pt_stats_info *st)
{
	pt_recorder *r = pt_open(tu_path(name), NULL, 0);
	assert_non_null(r);
	uint32_t id = pt_intern(r, "abi");
	for (int i = 0; i < n; i++) {
		pt_begin(r, id);
		pt_end(r, id);
	}
	assert_int_equal(pt_close(r), 0);
	assert_int_equal(pt_stats(r, st, sizeof(*st)), 0);
	return r;
}

static void test_pt_stats_old_size_not_overrun(void **state)
{
	(void)state;
	struct pt_stats_info full;
	pt_recorder *r = record_closed("stats-old.ptz", 10, &full);
	assert_true(full.records >= 20 && full.chunks >= 1 && full.threads == 1);

	struct {
		struct stats_v0_1 s;
		unsigned char canary[64];
	} v1;
	memset(&v1, CANARY, sizeof(v1));
	assert_int_equal(pt_stats(r, (struct pt_stats_info *)(void *)&v1.s, sizeof(v1.s)), 0);
	assert_true(all_bytes(v1.canary, sizeof(v1.canary), CANARY));
	assert_int_equal(memcmp(&v1.s, &full, offsetof(struct stats_v0_1, last_io_error) + sizeof(int)), 0);

	/* 0.2's layout is 0.3's: the whole struct, not a byte more */
	struct {
		struct stats_v0_3 s;
		unsigned char canary[64];
	} v2;
	memset(&v2, CANARY, sizeof(v2));
	assert_int_equal(pt_stats(r, (struct pt_stats_info *)(void *)&v2.s, sizeof(v2.s)), 0);
	assert_true(all_bytes(v2.canary, sizeof(v2.canary), CANARY));
	assert_int_equal(v2.s.records, full.records);
	assert_int_equal(v2.s.gpu_state, full.gpu_state);

	/* size 0: nothing written; NULL recorder: zeros, only as many */
	memset(&v1, CANARY, sizeof(v1));
	assert_int_equal(pt_stats(r, (struct pt_stats_info *)(void *)&v1.s, 0), 0);
	assert_true(all_bytes(&v1, sizeof(v1), CANARY));
	assert_int_equal(pt_stats(NULL, (struct pt_stats_info *)(void *)&v1.s, sizeof(v1.s)), -EINVAL);
	assert_true(all_bytes(&v1.s, sizeof(v1.s), 0));
	assert_true(all_bytes(v1.canary, sizeof(v1.canary), CANARY));
}

static void test_pt_stats_newer_size_tail_zeroed(void **state)
{
	(void)state;
	struct pt_stats_info full;
	pt_recorder *r = record_closed("stats-new.ptz", 3, &full);
	struct {
		struct pt_stats_info s;
		uint64_t future[4]; /* fields of a newer struct pt_stats_info */
	} newer;
	struct {
		alignas(8) unsigned char bytes[sizeof(newer)];
		unsigned char canary[32];
	} buf;
	memset(&buf, CANARY, sizeof(buf));
	assert_int_equal(pt_stats(r, (struct pt_stats_info *)(void *)buf.bytes, sizeof(newer)), 0);
	memcpy(&newer, buf.bytes, sizeof(newer));
	assert_int_equal(memcmp(&newer.s, &full, sizeof(full)), 0);
	assert_true(all_bytes(newer.future, sizeof(newer.future), 0));
	assert_true(all_bytes(buf.canary, sizeof(buf.canary), CANARY));
}

/* The header's process name of the trace at @path. */
static void assert_process_name(const char *path, const char *want)
{
	struct pt_reader *rd = NULL;
	assert_int_equal(pt_reader_open(path, &rd), 0);
	assert_string_equal(pt_reader_info(rd)->process_name, want);
	pt_reader_close(rd);
}

/* /proc/self/comm without its newline: pt_open()'s default process name */
static const char *comm(void)
{
	static char name[64];
	FILE *f = fopen("/proc/self/comm", "re");
	assert_non_null(f);
	assert_non_null(fgets(name, sizeof(name), f));
	fclose(f);
	name[strcspn(name, "\n")] = 0;
	return name;
}

static void test_pt_open_old_options_take_defaults(void **state)
{
	(void)state;
	/* the full struct names the process */
	const struct pt_options named = { .ring_bytes = 1 << 16, .process_name = "named" };
	pt_recorder *r = pt_open(tu_path("opt-full.ptz"), &named, sizeof(named));
	assert_non_null(r);
	assert_int_equal(pt_close(r), 0);
	assert_process_name(tu_path("opt-full.ptz"), "named");

	/* a struct that ends before process_name, and a name right after it
	 * in memory: the name is not the caller's, the default is taken */
	struct {
		struct {
			size_t ring_bytes;
			int zstd_level;
			unsigned flush_interval_ms;
		} o;
		const char *trap;
	} older = { { 1 << 16, 0, 0 }, "not-an-option" };
	_Static_assert(offsetof(__typeof__(older), trap) == offsetof(struct pt_options, process_name),
		       "the trap lies where process_name would be");
	r = pt_open(tu_path("opt-old.ptz"), (const struct pt_options *)(const void *)&older.o, sizeof(older.o));
	assert_non_null(r);
	uint32_t id = pt_intern(r, "x");
	pt_begin(r, id);
	pt_end(r, id);
	assert_int_equal(pt_close(r), 0);
	assert_process_name(tu_path("opt-old.ptz"), comm());

	/* size 0 with a struct: every field its default */
	r = pt_open(tu_path("opt-zero.ptz"), &named, 0);
	assert_non_null(r);
	assert_int_equal(pt_close(r), 0);
	assert_process_name(tu_path("opt-zero.ptz"), comm());
}

static void test_pt_open_newer_options_nonzero_tail_e2big(void **state)
{
	(void)state;
	struct {
		struct pt_options o;
		uint64_t future; /* a setting a newer library has */
	} newer;
	memset(&newer, 0, sizeof(newer));
	newer.o.process_name = "newer";
	newer.future = 1;
	const char *path = tu_path("opt-e2big.ptz");
	errno = 0;
	assert_null(pt_open(path, &newer.o, sizeof(newer)));
	assert_int_equal(errno, E2BIG);
	assert_int_equal(access(path, F_OK), -1); /* refused before any file */

	newer.future = 0; /* a newer caller that asks nothing new */
	pt_recorder *r = pt_open(path, &newer.o, sizeof(newer));
	assert_non_null(r);
	assert_int_equal(pt_close(r), 0);
	assert_process_name(path, "newer");
}

/* The metrics of the trace at @path: sums by kind. */
static void metric_sums(const char *path, uint64_t sums[4])
{
	struct tu_trace tr;
	tu_read(path, &tr);
	memset(sums, 0, 4 * sizeof(sums[0]));
	for (size_t t = 0; t < tr.nt; t++)
		for (size_t i = 0; i < tr.t[t].n; i++)
			if (tr.t[t].recs[i].kind == PT_REC_METRIC && tr.t[t].recs[i].aux < 4)
				sums[tr.t[t].recs[i].aux] += tr.t[t].recs[i].value;
	tu_free(&tr);
}

static void test_pt_start_stop_old_metrics_read_only_their_size(void **state)
{
	(void)state;
	const char *path = tu_path("metrics.ptz");
	pt_recorder *r = pt_open(path, NULL, 0);
	assert_non_null(r);
	/* read_bytes only, with flops-looking bytes right after it */
	const struct pt_metrics m = { .read_bytes = 100, .written_bytes = 7, .flops = 9 };
	pt_start(r, "a", &m, sizeof(m.read_bytes));
	pt_stop(r, "a", &m, offsetof(struct pt_metrics, flops));
	/* a newer struct: the tail this library cannot record is ignored */
	struct {
		struct pt_metrics m;
		uint64_t future;
	} newer = { { .flops = 5 }, 1 };
	pt_start(r, "b", &newer.m, sizeof(newer));
	pt_stop(r, "b", NULL, 0);
	assert_int_equal(pt_close(r), 0);
	uint64_t sums[4];
	metric_sums(path, sums);
	assert_int_equal(sums[PT_METRIC_READ_BYTES], 200);
	assert_int_equal(sums[PT_METRIC_WRITTEN_BYTES], 7);
	assert_int_equal(sums[PT_METRIC_FLOPS], 5);
}

/* ---- reader output structs */

struct rd_fixture {
	const char *path;
	struct pt_reader *rd;
};

static int setup_trace(void **state)
{
	static struct rd_fixture f;
	struct pt_stats_info st;
	record_closed("reader.ptz", 100, &st);
	f.path = tu_path("reader.ptz");
	f.rd = NULL;
	if (pt_reader_open(f.path, &f.rd) != 0)
		return -1;
	*state = &f;
	return 0;
}

static int teardown_trace(void **state)
{
	struct rd_fixture *f = *state;
	pt_reader_close(f->rd);
	return 0;
}

/* The first event chunk's records, full size, into @out (at most @max). */
static size_t first_chunk_records(struct pt_reader *rd, struct pt_record *out, size_t max)
{
	pt_reader_rewind(rd);
	struct pt_chunk_info ci;
	size_t n = 0;
	while (pt_reader_next_chunk(rd, PT_READER_ALL_CHUNKS, &ci, sizeof(ci)) == 1) {
		if (ci.thread == PT_FMT_META_THREAD)
			continue;
		while (n < max && pt_reader_next_record(rd, &out[n], sizeof(out[n])) == 1)
			n++;
		break;
	}
	return n;
}

/* Positions @rd on the first event chunk; @ci (full size) receives it. */
static void to_first_event_chunk(struct pt_reader *rd, struct pt_chunk_info *ci)
{
	pt_reader_rewind(rd);
	while (pt_reader_next_chunk(rd, PT_READER_ALL_CHUNKS, ci, sizeof(*ci)) == 1)
		if (ci->thread != PT_FMT_META_THREAD)
			return;
	fail_msg("no event chunk");
}

static void test_pt_reader_next_record_old_size_not_overrun(void **state)
{
	struct rd_fixture *f = *state;
	struct pt_record full[256];
	size_t n = first_chunk_records(f->rd, full, 256);
	assert_true(n >= 2);
	struct pt_chunk_info ci;
	to_first_event_chunk(f->rd, &ci);
	for (size_t i = 0; i < n; i++) {
		struct {
			alignas(8) unsigned char rec[RECORD_V0_1_BYTES];
			unsigned char canary[64];
		} old;
		memset(&old, CANARY, sizeof(old));
		assert_int_equal(pt_reader_next_record(f->rd, (struct pt_record *)(void *)old.rec, sizeof(old.rec)), 1);
		assert_true(all_bytes(old.canary, sizeof(old.canary), CANARY));
		assert_int_equal(memcmp(old.rec, &full[i], sizeof(old.rec)), 0);
	}

	/* a newer, larger record: the reader's fields, then zeros */
	to_first_event_chunk(f->rd, &ci);
	struct {
		struct pt_record rec;
		uint64_t future[3];
	} newer;
	memset(&newer, CANARY, sizeof(newer));
	assert_int_equal(pt_reader_next_record(f->rd, &newer.rec, sizeof(newer)), 1);
	assert_int_equal(newer.rec.kind, full[0].kind);
	assert_int_equal(newer.rec.ticks, full[0].ticks);
	assert_true(all_bytes(newer.future, sizeof(newer.future), 0));
}

static void test_pt_reader_next_records_old_stride_not_overrun(void **state)
{
	struct rd_fixture *f = *state;
	struct pt_record full[256];
	size_t n = first_chunk_records(f->rd, full, 256);
	assert_true(n >= 8);
	struct pt_chunk_info ci;
	to_first_event_chunk(f->rd, &ci);
	enum { MAX = 8 };
	struct {
		alignas(8) unsigned char recs[MAX * RECORD_V0_1_BYTES];
		unsigned char canary[64];
	} old;
	memset(&old, CANARY, sizeof(old));
	assert_int_equal(pt_reader_next_records(f->rd, (struct pt_record *)(void *)old.recs, MAX, RECORD_V0_1_BYTES), MAX);
	assert_true(all_bytes(old.canary, sizeof(old.canary), CANARY));
	for (size_t i = 0; i < MAX; i++)
		assert_int_equal(memcmp(old.recs + i * RECORD_V0_1_BYTES, &full[i], RECORD_V0_1_BYTES), 0);
	/* the next batch goes on where this one stopped, full size */
	struct pt_record next;
	assert_int_equal(pt_reader_next_records(f->rd, &next, 1, sizeof(next)), 1);
	assert_int_equal(memcmp(&next, &full[MAX], offsetof(struct pt_record, str)), 0);
	/* no stride: nothing decoded */
	assert_int_equal(pt_reader_next_records(f->rd, &next, 1, 0), -EINVAL);
	assert_int_equal(pt_reader_next_records(f->rd, &next, 1, sizeof(next)), 1);
	assert_int_equal(next.ticks, full[MAX + 1].ticks);
}

static void test_pt_reader_chunk_and_thread_old_size_not_overrun(void **state)
{
	struct rd_fixture *f = *state;
	struct pt_chunk_info full;
	to_first_event_chunk(f->rd, &full);

	/* a chunk info that ends before last_ticks */
	struct {
		struct pt_chunk_info ci;
		unsigned char canary[64];
	} old;
	const size_t old_bytes = offsetof(struct pt_chunk_info, last_ticks);
	pt_reader_rewind(f->rd);
	int rc;
	do {
		memset(&old, CANARY, sizeof(old));
		rc = pt_reader_next_chunk(f->rd, PT_READER_ALL_CHUNKS, &old.ci, old_bytes);
	} while (rc == 1 && old.ci.offset != full.offset);
	assert_int_equal(rc, 1);
	assert_int_equal(old.ci.sequence, full.sequence);
	assert_true(all_bytes((unsigned char *)&old + old_bytes, sizeof(old) - old_bytes, CANARY));

	pt_reader_rewind(f->rd);
	memset(&old, CANARY, sizeof(old));
	assert_int_equal(pt_reader_next_chunk_header(f->rd, &old.ci, old_bytes), 1);
	assert_true(all_bytes((unsigned char *)&old + old_bytes, sizeof(old) - old_bytes, CANARY));

	struct pt_thread_info tfull;
	assert_true(pt_reader_thread_count(f->rd) >= 1);
	assert_int_equal(pt_reader_thread(f->rd, 0, &tfull, sizeof(tfull)), 1);
	struct {
		struct pt_thread_info ti;
		unsigned char canary[64];
	} told;
	const size_t told_bytes = offsetof(struct pt_thread_info, name);
	memset(&told, CANARY, sizeof(told));
	assert_int_equal(pt_reader_thread(f->rd, 0, &told.ti, told_bytes), 1);
	assert_int_equal(told.ti.tid, tfull.tid);
	assert_true(all_bytes((unsigned char *)&told + told_bytes, sizeof(told) - told_bytes, CANARY));

	struct {
		struct pt_thread_info ti;
		uint64_t future[2];
	} tnew;
	memset(&tnew, CANARY, sizeof(tnew));
	assert_int_equal(pt_reader_thread(f->rd, 0, &tnew.ti, sizeof(tnew)), 1);
	assert_string_equal(tnew.ti.name, tfull.name);
	assert_true(all_bytes(tnew.future, sizeof(tnew.future), 0));
}

/* ---- protocol constants (doc/trace-format.md §2, §4.4) */

static void test_format_constants_match_spec(void **state)
{
	(void)state;
	assert_int_equal(PT_CLOCK_TSC, 1);
	assert_int_equal(PT_CLOCK_CNTVCT, 2);
	assert_int_equal(PT_CLOCK_MONOTONIC, 3);
	assert_string_equal(PT_FMT_GPU_THREAD_NAME, "ptz-gpu");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pt_stats_old_size_not_overrun),
		cmocka_unit_test(test_pt_stats_newer_size_tail_zeroed),
		cmocka_unit_test(test_pt_open_old_options_take_defaults),
		cmocka_unit_test(test_pt_open_newer_options_nonzero_tail_e2big),
		cmocka_unit_test(test_pt_start_stop_old_metrics_read_only_their_size),
		cmocka_unit_test_setup_teardown(test_pt_reader_next_record_old_size_not_overrun, setup_trace,
						teardown_trace),
		cmocka_unit_test_setup_teardown(test_pt_reader_next_records_old_stride_not_overrun, setup_trace,
						teardown_trace),
		cmocka_unit_test_setup_teardown(test_pt_reader_chunk_and_thread_old_size_not_overrun, setup_trace,
						teardown_trace),
		cmocka_unit_test(test_format_constants_match_spec),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
