/*
 * tests/unit/test_reader_oom.c - pt_reader_open() under allocation
 * failure (calloc, realloc and strdup wrapped with -Wl,--wrap=, failing
 * the k-th call of one of them for every k until one open makes no
 * failing call).
 *
 * Invariant covered (doc/trace-format.md §6.3, pt_reader_problem_count()):
 * a gap or a repeated chunk is never passed over in silence. With every
 * allocation possible, the reader reports the trace's gap and its repeated
 * chunk; with any one allocation failing, pt_reader_open() either fails
 * (-ENOMEM) or still reports both, or says that its sequence check is
 * incomplete, or that problems were not recorded.
 */
#include <errno.h>
#include <stdbool.h>

#include "tests/test_util.h"
#include "trace-format/fmt_internal.h"

void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void *__wrap_realloc(void *p, size_t size);
char *__real_strdup(const char *s);
char *__wrap_strdup(const char *s);

enum { F_CALLOC, F_REALLOC, F_STRDUP, F_N };
static const char *const fname[F_N] = { "calloc", "realloc", "strdup" };
static int which;             /* the function whose calls are counted and failed */
static long calls, fail_at;   /* fail its fail_at-th call (1-based); 0 = never */

static bool fail_now(int f)
{
	return fail_at && f == which && ++calls == fail_at;
}

void *__wrap_calloc(size_t n, size_t size)
{
	return fail_now(F_CALLOC) ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t size)
{
	return fail_now(F_REALLOC) ? NULL : __real_realloc(p, size);
}

char *__wrap_strdup(const char *s)
{
	return fail_now(F_STRDUP) ? NULL : __real_strdup(s);
}

/* Thread 0: sequences 0, 2 (a gap); thread 1: sequence 0 twice, byte for
 * byte (a repeat). */
static void write_trace(const char *path)
{
	const struct fmt_writer_hdr hd = { .clock_source = PT_CLOCK_MONOTONIC, .pid = 1, .process_name = "oom" };
	struct fmt_writer *w;
	assert_int_equal(fmt_writer_open(path, &hd, &w), 0);
	uint8_t buf[256];
	struct fmt_enc e;
	fmt_enc_reset(&e, buf, sizeof(buf));
	assert_int_equal(fmt_enc_string(&e, 1, 0, "s", 1), 0);
	assert_int_equal(fmt_enc_thread(&e, 0, 10, 0, 0, "a", 1), 0);
	assert_int_equal(fmt_enc_thread(&e, 1, 11, 0, 0, "b", 1), 0);
	struct fmt_chunk_hdr mh = { .kind = FMT_CHUNK_META, .thread = PT_FMT_META_THREAD, .records = e.records };
	assert_int_equal(fmt_writer_append(w, &mh, buf, (size_t)(e.pos - buf), 0), 0);
	static const struct {
		uint32_t thread;
		uint64_t seq;
	} ck[] = { { 0, 0 }, { 1, 0 }, { 1, 0 }, { 0, 2 } };
	for (size_t i = 0; i < PT_ARRAY_SIZE(ck); i++) {
		fmt_enc_reset(&e, buf, sizeof(buf));
		fmt_enc_begin(&e, 100, 1);
		fmt_enc_end(&e, 200, 1);
		struct fmt_chunk_hdr h = { .kind = FMT_CHUNK_EVENTS, .thread = ck[i].thread, .records = e.records,
					   .sequence = ck[i].seq, .first_ticks = e.first_ticks,
					   .last_ticks = e.last_ticks };
		assert_int_equal(fmt_writer_append(w, &h, buf, (size_t)(e.pos - buf), 0), 0);
	}
	assert_int_equal(fmt_writer_close(w), 0);
}

static bool has_problem(const struct pt_reader *r, const char *what)
{
	for (size_t i = 0; i < pt_reader_problem_count(r); i++)
		if (strstr(pt_reader_problem(r, i, NULL), what))
			return true;
	return false;
}

static void test_reader_gaps_never_silent_under_oom(void **state)
{
	(void)state;
	const char *path = tu_path("oom.ptz");
	write_trace(path);
	for (which = 0; which < F_N; which++) {
		long k = 1, opened = 0, said = 0;
		for (;; k++) {
			calls = 0;
			fail_at = k;
			struct pt_reader *r = NULL;
			int rc = pt_reader_open(path, &r);
			fail_at = 0;
			if (rc == 0) {
				opened++;
				const bool gap = has_problem(r, "thread 0: chunk sequence 2 follows 0 (chunks missing)");
				const bool rep = has_problem(r, "thread 1: chunk sequence 0 repeats chunk @");
				const bool inc = has_problem(r, "sequence check incomplete: out of memory") ||
						 has_problem(r, "not recorded: out of memory");
				said += inc;
				if (!(gap && rep) && !inc)
					fail_msg("%s %ld failing: gap %d, repeat %d, and no out-of-memory problem",
						 fname[which], k, gap, rep);
			} else {
				assert_int_equal(rc, -ENOMEM);
			}
			pt_reader_close(r);
			if (calls < k) /* this open made fewer calls: none failed */
				break;
		}
		print_message("# %s: %ld calls in pt_reader_open(); %ld opens with one failing, %ld said out of memory\n",
			      fname[which], k - 1, opened - 1, said);
		assert_true(k > 1);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reader_gaps_never_silent_under_oom),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
