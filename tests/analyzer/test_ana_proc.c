/*
 * tests/analyzer/test_ana_proc.c - the "Process:" line and the JSON
 * "process" object (doc/analyzer-output.md §3.6) from the recorder's
 * process counters (doc/trace-format.md §9), on traces written with the
 * internal writer at chosen ticks and values, so that every figure is
 * exact.
 *
 * 1 tick = 1 ns; times are s after T0. Thread 0 "main": work[0, 2 s], and
 * its own counter "system load 1 min (x1000)" = 99999 (a program's, not
 * the recorder's: the flusher's wins). Thread 1 "ptz-flusher", samples at
 * 0, 0.5, 1, 1.5, 2 s:
 *   CPU user 1e9 -> 4e9 ns (1.5 CPUs), system 2e9 -> 3e9 (0.5 CPUs);
 *   switches voluntary 100 -> 300 (100/s), involuntary 10 -> 50 (20/s);
 *   steal at 0, 1, 2 s: 7e9 -> 7.4e9 ns over 4 CPUs (5%);
 *   load x1000 1000, 2000, 3000, 2000, 2000 (mean 2.00);
 *   runnable 1, 2, 3, 2, 2 (mean 2.00); CPUs online 4, once at 0.
 *
 * Invariants covered:
 *  - the text report's one "Process:" line after the header, with exactly
 *    these figures; the JSON "process" object with the same;
 *  - a counter with one sample gives no rate (that part of the line and
 *    its JSON key are absent / null), levels still have their mean;
 *    without "system CPUs online" there is no "of N" and no steal share;
 *  - the Counters table's name column widens to the longest of these
 *    names (36 characters), and stays 32 wide otherwise;
 *  - a trace without these counters prints no "Process:" line and has no
 *    "process" key (its output is what it was).
 */
#include <jansson.h>
#include <math.h>

#include "tests/analyzer/ana_test_util.h"
#include "ptz/recorder.h"

#define T0 1000000ull
#define S 1000000000ull
#define REAL_NS 1700000000000000000ull

enum { ID_WORK = 1, ID_USER, ID_SYS, ID_VCSW, ID_IVCSW, ID_STEAL, ID_LOAD, ID_RUN, ID_CPUS, NIDS };
static const char *const names[NIDS] = {
	NULL,
	"work",
	"process CPU user (ns)",
	"process CPU system (ns)",
	"process context switches voluntary",
	"process context switches involuntary",
	"system CPU steal (ns)",
	"system load 1 min (x1000)",
	"system runnable threads",
	"system CPUs online",
};

/* What write_trace() writes on the flusher's thread. */
enum shape { FULL, ONE_SAMPLE, NO_CPUS, NONE };

static void write_shape(const char *path, enum shape shape)
{
	struct tb b;
	const struct fmt_writer_hdr hd = {
		.clock_source = PT_CLOCK_TSC, .pid = 4242, .start_ticks = T0, .start_mono_ns = T0, .start_real_ns = REAL_NS,
		.process_name = "proc-test", .host = "testhost", .cmdline = "proc-test", .recorder_version = "ptz-test 1",
	};
	tb_start(&b, path, &hd);
	struct fmt_enc *e = &b.e;
	for (uint32_t id = 1; id < NIDS; id++)
		assert_int_equal(fmt_enc_string(e, id, 0, names[id], strlen(names[id])), 0);
	assert_int_equal(fmt_enc_thread(e, 0, 300, T0, 0, "main", 4), 0);
	assert_int_equal(fmt_enc_thread(e, 1, 301, T0, 0, PT_FMT_FLUSHER_THREAD_NAME,
					strlen(PT_FMT_FLUSHER_THREAD_NAME)),
			 0);
	assert_int_equal(fmt_enc_clock(e, 0, 0, REAL_NS - T0, 1), 0);
	assert_int_equal(fmt_enc_clock(e, 10 * S, 10 * S, REAL_NS - T0 + 10 * S, 1), 0);
	tb_flush(&b, FMT_CHUNK_META, PT_FMT_META_THREAD);

	fmt_enc_begin(e, T0, ID_WORK);
	if (shape != NONE)
		fmt_enc_counter(e, T0 + 1, ID_LOAD, 99999); /* the program's own, not the recorder's */
	fmt_enc_end(e, T0 + 2 * S, ID_WORK);
	tb_flush(&b, FMT_CHUNK_EVENTS, 0);

	if (shape != NONE) {
		static const int64_t load[] = { 1000, 2000, 3000, 2000, 2000 }, run[] = { 1, 2, 3, 2, 2 };
		const int n = shape == ONE_SAMPLE ? 1 : 5;
		for (int i = 0; i < n; i++) {
			const uint64_t t = T0 + (uint64_t)i * S / 2;
			if (i == 0 && shape != NO_CPUS)
				fmt_enc_counter(e, t, ID_CPUS, 4);
			fmt_enc_counter(e, t, ID_USER, (int64_t)(S + (uint64_t)i * 3 * S / 4));
			fmt_enc_counter(e, t, ID_SYS, (int64_t)(2 * S + (uint64_t)i * S / 4));
			fmt_enc_counter(e, t, ID_VCSW, 100 + i * 50);
			fmt_enc_counter(e, t, ID_IVCSW, 10 + i * 10);
			if (i % 2 == 0)
				fmt_enc_counter(e, t, ID_STEAL, (int64_t)(7 * S + (uint64_t)i * S / 10));
			fmt_enc_counter(e, t, ID_LOAD, load[i]);
			fmt_enc_counter(e, t, ID_RUN, run[i]);
		}
		tb_flush(&b, FMT_CHUNK_EVENTS, 1);
	}
	tb_close(&b);
}

static void analyze(enum shape shape, const char *name, struct ana_result *res)
{
	const char *path = tu_path(name);
	write_shape(path, shape);
	const struct ana_options o = { .thread = -1 };
	ana_test_run(path, &o, res);
}

static bool near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * fabs(b);
}

/* The report's line starting with "Process:", or NULL (into @line). */
static const char *process_line(const char *txt, char *line, size_t cap)
{
	const char *p = strstr(txt, "\nProcess:");
	if (!p)
		return NULL;
	p++;
	size_t n = strcspn(p, "\n");
	assert_true(n < cap);
	memcpy(line, p, n);
	line[n] = 0;
	return line;
}

static json_t *report_json(const struct ana_result *res)
{
	const struct ana_report_opts o = { .thread = -1 };
	char *txt = ana_test_output(ANA_OUT_JSON, res, &o);
	json_error_t err;
	json_t *j = json_loads(txt, 0, &err);
	free(txt);
	assert_non_null(j);
	return j;
}

static void test_figures_exact(void **state)
{
	(void)state;
	struct ana_result res;
	analyze(FULL, "proc-full.ptz", &res);
	struct ana_proc p;
	ana_proc_summary(&res, &p);
	assert_true(p.any && p.has_cpu && p.has_csw && p.has_steal && p.has_load && p.has_runnable);
	assert_int_equal(p.span_ns, 2 * S);
	assert_int_equal(p.cpus_online, 4);
	assert_int_equal(p.cpu_user_ns, 3 * S);
	assert_int_equal(p.cpu_system_ns, S);
	assert_true(near(p.cpus_user, 1.5) && near(p.cpus_system, 0.5) && near(p.cpus_used, 2.0));
	assert_true(near(p.vcsw_per_s, 100.0) && near(p.ivcsw_per_s, 20.0));
	assert_true(near(p.steal_share, 0.05));
	assert_true(near(p.load_mean, 2.0) && near(p.runnable_mean, 2.0));

	const struct ana_report_opts o = { .thread = -1 };
	char *txt = ana_test_report(&res, &o);
	char line[512];
	assert_non_null(process_line(txt, line, sizeof(line)));
	assert_string_equal(line, "Process: 2.00 CPUs of 4 (user 1.50, system 0.50) over 2.000 s; context switches "
				  "100.0/s voluntary, 20.0/s involuntary; steal 5.00%; load 2.00 mean (1 min); "
				  "runnable threads 2.00 mean");
	/* right after the header (and the GPU summary, none here), before the tree */
	assert_non_null(strstr(txt, " recorder-counted\nProcess: "));
	/* the Counters table's name column widens to the longest name (36) */
	assert_non_null(strstr(txt, "\n  name                                 thread    samples"));
	assert_non_null(strstr(txt, "\n  process context switches involuntary      1          5             50"));
	assert_non_null(strstr(txt, "\n  system CPUs online                        1          1              4"));
	free(txt);

	json_t *j = report_json(&res);
	json_t *po = jget(j, "process");
	assert_int_equal(jint(po, "span_ns"), 2 * S);
	assert_int_equal(jint(po, "cpus_online"), 4);
	assert_int_equal(jint(po, "cpu_user_ns"), 3 * S);
	assert_int_equal(jint(po, "cpu_system_ns"), S);
	assert_true(near(json_real_value(jget(po, "cpus_used")), 2.0));
	assert_true(near(json_real_value(jget(po, "voluntary_switches_per_s")), 100.0));
	assert_true(near(json_real_value(jget(po, "involuntary_switches_per_s")), 20.0));
	assert_true(near(json_real_value(jget(po, "steal_share")), 0.05));
	assert_true(near(json_real_value(jget(po, "load_1min_mean")), 2.0));
	assert_true(near(json_real_value(jget(po, "runnable_threads_mean")), 2.0));
	json_decref(j);
	ana_result_free(&res);
}

static void test_one_sample_no_rates(void **state)
{
	(void)state;
	struct ana_result res;
	analyze(ONE_SAMPLE, "proc-one.ptz", &res);
	const struct ana_report_opts o = { .thread = -1 };
	char *txt = ana_test_report(&res, &o);
	char line[512];
	assert_non_null(process_line(txt, line, sizeof(line)));
	assert_string_equal(line, "Process: load 1.00 mean (1 min); runnable threads 1.00 mean");
	free(txt);
	json_t *j = report_json(&res);
	json_t *po = jget(j, "process");
	assert_true(json_is_null(jget(po, "cpus_used")));
	assert_true(json_is_null(jget(po, "span_ns")));
	assert_true(json_is_null(jget(po, "voluntary_switches_per_s")));
	assert_true(json_is_null(jget(po, "steal_share")));
	assert_int_equal(jint(po, "cpus_online"), 4);
	json_decref(j);
	ana_result_free(&res);
}

static void test_no_cpu_count(void **state)
{
	(void)state;
	struct ana_result res;
	analyze(NO_CPUS, "proc-nocpus.ptz", &res);
	const struct ana_report_opts o = { .thread = -1 };
	char *txt = ana_test_report(&res, &o);
	char line[512];
	assert_non_null(process_line(txt, line, sizeof(line)));
	assert_string_equal(line, "Process: 2.00 CPUs (user 1.50, system 0.50) over 2.000 s; context switches "
				  "100.0/s voluntary, 20.0/s involuntary; load 2.00 mean (1 min); runnable threads "
				  "2.00 mean");
	free(txt);
	json_t *j = report_json(&res);
	json_t *po = jget(j, "process");
	assert_true(json_is_null(jget(po, "cpus_online")));
	assert_true(json_is_null(jget(po, "steal_share")));
	json_decref(j);
	ana_result_free(&res);
}

static void test_without_counters_unchanged(void **state)
{
	(void)state;
	struct ana_result res;
	analyze(NONE, "proc-none.ptz", &res);
	struct ana_proc p;
	ana_proc_summary(&res, &p);
	assert_false(p.any);
	const struct ana_report_opts o = { .thread = -1 };
	char *txt = ana_test_report(&res, &o);
	assert_null(strstr(txt, "Process:"));
	free(txt);
	json_t *j = report_json(&res);
	assert_null(json_object_get(j, "process"));
	json_decref(j);
	ana_result_free(&res);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_figures_exact),
		cmocka_unit_test(test_one_sample_no_rates),
		cmocka_unit_test(test_no_cpu_count),
		cmocka_unit_test(test_without_counters_unchanged),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
