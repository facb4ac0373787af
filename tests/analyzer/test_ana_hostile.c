/*
 * tests/analyzer/test_ana_hostile.c - the analyzer bounded by what a trace
 * holds, never by what it claims, and never a smaller answer in silence
 * (issue 17, items 8 and 10).
 *
 * Invariants covered:
 *  - far_id: a trace whose one name has string id 2^24 - 1 gives the same
 *    report, CSV and JSON as the same trace with id 1, and its analysis
 *    peaks (a child's ru_maxrss) within 32 MiB of the id-1 one (it took
 *    1.3 GB and 14 s);
 *  - oom: with the k-th malloc, calloc, realloc or aligned_alloc of the
 *    analysis failing, for every k until one run makes no failing call,
 *    ana_run() either fails with -ENOMEM and says "out of memory", or
 *    gives exactly the figures of an unhindered run.
 */
#include <errno.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ptz/recorder.h> /* enum pt_metric_kind */

#include "tests/analyzer/ana_test_util.h"

void *__real_malloc(size_t size);
void *__wrap_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void *__wrap_realloc(void *p, size_t size);
void *__real_aligned_alloc(size_t align, size_t size);
void *__wrap_aligned_alloc(size_t align, size_t size);

static long calls, fail_at; /* fail the fail_at-th allocation (1-based); 0 = never */

static bool fail_now(void)
{
	return fail_at && ++calls == fail_at;
}

void *__wrap_malloc(size_t size) { return fail_now() ? NULL : __real_malloc(size); }
void *__wrap_calloc(size_t n, size_t size) { return fail_now() ? NULL : __real_calloc(n, size); }
void *__wrap_realloc(void *p, size_t size) { return fail_now() ? NULL : __real_realloc(p, size); }
void *__wrap_aligned_alloc(size_t align, size_t size)
{
	return fail_now() ? NULL : __real_aligned_alloc(align, size);
}

/* One name "work" with string id @id, three sections of it on thread 0. */
static void write_named(const char *path, uint32_t id)
{
	const struct fmt_writer_hdr hd = { .clock_source = 3, .pid = 1, .process_name = "far" };
	struct tb b;
	tb_start(&b, path, &hd);
	fmt_enc_string(&b.e, id, 0, "work", 4);
	fmt_enc_thread(&b.e, 0, 7, 0, 0, "t", 1);
	tb_flush(&b, FMT_CHUNK_META, PT_FMT_META_THREAD);
	uint64_t t = 1000;
	for (int i = 0; i < 3; i++) {
		fmt_enc_begin(&b.e, t, id);
		fmt_enc_end(&b.e, t += 100 + 10 * (uint64_t)i, id);
		t += 5;
	}
	tb_flush(&b, FMT_CHUNK_EVENTS, 0);
	tb_close(&b);
}

/* Text report, CSV and JSON of @path, concatenated. */
static char *all_outputs(const char *path)
{
	struct ana_result res;
	const struct ana_options opt = { .thread = -1, .merged_percentiles_only = true };
	ana_test_run(path, &opt, &res);
	const struct ana_report_opts o = { .sort = ANA_SORT_TIME };
	char *t = ana_test_output(ANA_OUT_TEXT, &res, &o), *c = ana_test_output(ANA_OUT_CSV, &res, &o),
	     *j = ana_test_output(ANA_OUT_JSON, &res, &o);
	char *all = NULL;
	assert_true(asprintf(&all, "%s\n--\n%s\n--\n%s", t, c, j) > 0);
	free(t);
	free(c);
	free(j);
	ana_result_free(&res);
	return all;
}

/* Peak resident KiB of a child that analyzes @path. */
static long child_peak_kib(const char *path)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct ana_result res;
		const struct ana_options opt = { .thread = -1, .merged_percentiles_only = true };
		char err[256];
		int rc = ana_run(path, &opt, &res, err, sizeof(err));
		if (rc == 0)
			ana_result_free(&res);
		_exit(rc == 0 ? 0 : 1);
	}
	int st;
	struct rusage ru;
	assert_int_equal(wait4(pid, &st, 0, &ru), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	return ru.ru_maxrss;
}

static void test_far_id(void **state)
{
	(void)state;
	char *near = tu_path("near.ptz"), *far = tu_path("far.ptz");
	write_named(near, 1);
	write_named(far, PT_FMT_MAX_STRING_ID - 1);
	char *a = all_outputs(near), *b = all_outputs(far);
	assert_string_equal(a, b);
	assert_non_null(strstr(a, "work"));
	const long kn = child_peak_kib(near), kf = child_peak_kib(far);
	print_message("# peak RSS: id 1 %ld KiB, id 2^24-1 %ld KiB\n", kn, kf);
	assert_true(kf <= kn + 32 * 1024);
	free(a);
	free(b);
}

/* Two threads, nesting, recursion, a metric, a counter, an instant, a gap,
 * a section open at the end, misuse: most of the pass's allocations. */
static void write_busy(const char *path)
{
	const struct fmt_writer_hdr hd = { .clock_source = 3, .pid = 1, .process_name = "busy" };
	struct tb b;
	tb_start(&b, path, &hd);
	const char *names[] = { "", "a", "b", "c", "ctr", "inst" };
	for (uint32_t i = 1; i < 6; i++)
		fmt_enc_string(&b.e, i, 0, names[i], strlen(names[i]));
	fmt_enc_thread(&b.e, 0, 7, 0, 0, "t0", 2);
	fmt_enc_thread(&b.e, 1, 8, 0, 0, "t1", 2);
	tb_flush(&b, FMT_CHUNK_META, PT_FMT_META_THREAD);
	for (uint32_t th = 0; th < 2; th++) {
		uint64_t t = 1000;
		for (int i = 0; i < 40; i++) {
			fmt_enc_begin(&b.e, t++, 1);
			fmt_enc_begin(&b.e, t++, 1 + (uint32_t)(i % 3));
			fmt_enc_metric(&b.e, PT_METRIC_FLOPS, 1000 + (uint64_t)i);
			fmt_enc_counter(&b.e, t++, 4, i);
			fmt_enc_lp5(&b.e, PT_REC_INSTANT, 5, 0, 0, 0, t++);
			fmt_enc_end(&b.e, t += 10 + (uint64_t)i, 1 + (uint32_t)(i % 3));
			fmt_enc_end(&b.e, t += 3, 1);
		}
		fmt_enc_end(&b.e, t++, 3); /* unmatched */
		fmt_enc_begin(&b.e, t++, 2); /* open at the end */
		tb_flush(&b, FMT_CHUNK_EVENTS, th);
	}
	tb_close(&b);
}

static void test_oom(void **state)
{
	(void)state;
	char *path = tu_path("busy.ptz");
	write_busy(path);
	char *want = all_outputs(path);
	const struct ana_options opt = { .thread = -1, .merged_percentiles_only = true };
	long k, failed = 0;
	for (k = 1;; k++) {
		struct ana_result res;
		char err[256] = "";
		calls = 0;
		fail_at = k;
		int rc = ana_run(path, &opt, &res, err, sizeof(err));
		fail_at = 0;
		const bool hit = calls >= k;
		if (rc) {
			if (rc != -ENOMEM || !strstr(err, "memory"))
				fail_msg("allocation %ld failing: ana_run = %d (%s), not -ENOMEM", k, rc, err);
			failed++;
			ana_result_free(&res);
		} else {
			const struct ana_report_opts o = { .sort = ANA_SORT_TIME };
			char *t = ana_test_output(ANA_OUT_TEXT, &res, &o), *c = ana_test_output(ANA_OUT_CSV, &res, &o),
			     *j = ana_test_output(ANA_OUT_JSON, &res, &o);
			char *got = NULL;
			assert_true(asprintf(&got, "%s\n--\n%s\n--\n%s", t, c, j) > 0);
			if (strcmp(got, want) != 0)
				fail_msg("allocation %ld failing: ana_run succeeded with other figures", k);
			free(t);
			free(c);
			free(j);
			free(got);
			ana_result_free(&res);
		}
		if (!hit)
			break;
	}
	print_message("# %ld allocations, %ld runs failed with ENOMEM\n", k - 1, failed);
	assert_true(k > 10);
	free(want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_far_id),
		cmocka_unit_test(test_oom),
	};
	return cmocka_run_group_tests_name(PT_TEST_NAME, tests, NULL, NULL);
}
