/*
 * bench/bench_compare.c - how often `ptanalyze compare` is wrong on real
 * recorded runs (issue 15's figures): A/A pairs that would fail a CI gate,
 * power for a +10% section, and families of paths all +4.9% under the 5%
 * threshold, each with one run a side and with 3 runs a side.
 *
 * Every run is a child process that records, through libptz, ten sections
 * w0..w9 of about 20 us each (a busy-wait on CLOCK_MONOTONIC), 100 times
 * each, in one of two shapes:
 *   phased       w0 x100, then w1 x100, ... (a program with phases: each
 *                section's occurrences in one block of time)
 *   interleaved  100 x (w0 w1 ... w9)
 * A "new" run may scale some sections' durations. Each comparison is the
 * analyzer's own (ana_run, ana_compare with the CLI's defaults: alpha 0.05,
 * noise 5%); "exit 3" means what --fail-on-regression would do: a per-call
 * or total regression anywhere.
 *
 * usage: bench-compare [--quick] [--load N] [--verbose]
 *   --quick   fewer pairs (a smoke run: 6 A/A, 4 power, 4 family pairs)
 *   --load N  N threads spinning beside the runs (a busy machine)
 *   --verbose for every comparison that would exit 3, its regressions (per
 *             call or of the total, with the interval) and any whole-run
 *             shift, on stderr
 *
 * Prints a table; not a test: the figures depend on the machine.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analyzer/ana.h"
#include "analyzer/ana_compare.h"
#include "ptz/recorder.h"

#define SECTIONS 10
#define REPS 100
#define BASE_NS 20000
#define MAX_RUNS 3

static char dir[] = "/tmp/ptz-bench-compare-XXXXXX";

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void spin(uint64_t ns)
{
	const uint64_t end = now_ns() + ns;
	while (now_ns() < end)
		;
}

/* Records one run at @path: @phased or interleaved, section s lasting BASE_NS * permille[s] / 1000. */
static int record(const char *path, int phased, const uint32_t *permille)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		pt_recorder *r = pt_open(path, NULL, 0);
		if (!r)
			_exit(1);
		uint32_t id[SECTIONS];
		for (int s = 0; s < SECTIONS; s++) {
			char nm[8];
			snprintf(nm, sizeof(nm), "w%d", s);
			id[s] = pt_intern(r, nm);
		}
		for (int a = 0; a < (phased ? SECTIONS : REPS); a++)
			for (int b = 0; b < (phased ? REPS : SECTIONS); b++) {
				const int s = phased ? a : b;
				pt_begin(r, id[s]);
				spin((uint64_t)BASE_NS * permille[s] / 1000);
				pt_end(r, id[s]);
			}
		_exit(pt_close(r) == 0 ? 0 : 1);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return -1;
	return 0;
}

struct outcome {
	int exit3;     /* a per-call or total regression anywhere */
	int w3_found;  /* w3 is a per-call regression */
};

/* One comparison of @k runs a side: base runs at 1000 permille, new runs at @nperm. */
static int verbose;

/* --verbose: why a comparison would exit 3 */
static void explain(const struct ana_result *base, const struct ana_cmp *c, int phased, int k)
{
	fprintf(stderr, "exit 3 (%s, %d a side)%s", phased ? "phased" : "interleaved", k,
		c->shift_found ? "" : ": no whole-run shift\n");
	if (c->shift_found)
		fprintf(stderr, ": whole-run shift %+.1f%% (%zu of %zu paths)\n", 100 * c->shift, c->shift_moved,
			c->shift_paths);
	for (size_t i = 0; i < c->nrows; i++) {
		const struct ana_cmp_row *r = &c->rows[i];
		const char *name = r->base_node != UINT32_MAX ? ana_name(base, base->merged.n[r->base_node].id) : "?";
		if (r->verdict == ANA_V_REGRESSION)
			fprintf(stderr, "  %s per call %+.1f%% [%+.1f%%, %+.1f%%] %s, p25 %+.1f%% p75 %+.1f%%\n", name,
				100 * (r->on_mean ? r->change_mean : r->change), 100 * r->ci_lo, 100 * r->ci_hi,
				r->on_mean ? "mean" : "median", 100 * r->q_change[1], 100 * r->q_change[3]);
		if (r->total_verdict == ANA_V_REGRESSION && r->verdict != ANA_V_REGRESSION)
			fprintf(stderr, "  %s total %+.1f%%, judged %+.1f%% [%+.1f%%, %+.1f%%]\n", name, 100 * r->total_change,
				100 * r->total_test_change, 100 * r->total_ci_lo, 100 * r->total_ci_hi);
	}
}

static int compare_once(int phased, int k, const uint32_t *nperm, struct outcome *out)
{
	static const uint32_t one[SECTIONS] = { 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000 };
	struct ana_result res[2 * MAX_RUNS];
	const struct ana_result *ptrs[2 * MAX_RUNS];
	const struct ana_options o = { .thread = -1, .merged_percentiles_only = true, .no_flat_percentiles = true };
	int rc = 0, done = 0;
	/* base and new runs alternate, so a drift of the machine falls on both sides alike */
	for (int i = 0; i < 2 * k && rc == 0; i++, done++) {
		char path[256], err[256];
		const int side = i % 2, slot = side * k + i / 2;
		snprintf(path, sizeof(path), "%s/run%d.ptz", dir, i);
		if (record(path, phased, side ? nperm : one) || ana_run(path, &o, &res[slot], err, sizeof(err))) {
			fprintf(stderr, "bench-compare: run %d failed\n", i);
			rc = -1;
			break;
		}
		ptrs[slot] = &res[slot];
		unlink(path);
	}
	if (rc == 0) {
		struct ana_cmp_opts co = { .noise = -1 };
		if (k >= 2) {
			co.base_runs = ptrs;
			co.nbase_runs = (size_t)k;
			co.new_runs = ptrs + k;
			co.nnew_runs = (size_t)k;
		}
		struct ana_cmp c;
		rc = ana_compare(&res[0], &res[k], &co, &c);
		if (rc == 0) {
			out->exit3 = c.count[ANA_V_REGRESSION] + c.total_regressions > 0;
			if (verbose && out->exit3)
				explain(&res[0], &c, phased, k);
			out->w3_found = 0;
			for (size_t i = 0; i < c.nrows; i++) {
				const struct ana_cmp_row *r = &c.rows[i];
				if (r->base_node != UINT32_MAX && r->verdict == ANA_V_REGRESSION &&
				    strcmp(ana_name(&res[0], res[0].merged.n[r->base_node].id), "w3") == 0)
					out->w3_found = 1;
			}
			ana_compare_free(&c);
		}
	}
	for (int i = 0; i < done; i++)
		ana_result_free(&res[i % 2 * k + i / 2]);
	return rc;
}

static atomic_int stop_load;

static void *load_thread(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&stop_load, memory_order_relaxed))
		spin(1000000);
	return NULL;
}

int main(int argc, char **argv)
{
	int quick = 0, load = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0)
			quick = 1;
		else if (strcmp(argv[i], "--load") == 0 && i + 1 < argc)
			load = atoi(argv[++i]);
		else if (strcmp(argv[i], "--verbose") == 0)
			verbose = 1;
		else {
			fprintf(stderr, "usage: bench-compare [--quick] [--load N] [--verbose]\n");
			return 2;
		}
	}
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	setenv("PTZ_RSS_MS", "0", 0);
	pthread_t lt[64];
	load = load < 0 ? 0 : load > 64 ? 64 : load;
	for (int i = 0; i < load; i++)
		pthread_create(&lt[i], NULL, load_thread, NULL);
	const int n_aa = quick ? 6 : 30, n_pow = quick ? 4 : 20, n_fam = quick ? 4 : 20;
	uint32_t aa[SECTIONS], pow10[SECTIONS], fam[SECTIONS];
	for (int s = 0; s < SECTIONS; s++) {
		aa[s] = 1000;
		pow10[s] = s == 3 ? 1100 : 1000;
		fam[s] = 1049;
	}
	printf("bench-compare: %d sections x %d x ~%d us per run; %d load threads; %ld CPUs online\n", SECTIONS, REPS,
	       BASE_NS / 1000, load, sysconf(_SC_NPROCESSORS_ONLN));
	printf("%-12s %-5s  %-22s %-24s %-26s\n", "workload", "runs", "A/A pairs exit 3", "+10% w3 found",
	       "+4.9% family exit 3");
	printf("%-12s %-5s  %-22s %-24s %-26s\n", "", "a side", "(goal <= 5%)", "(goal >= 18 of 20)", "(goal <= 5%)");
	int failed = 0;
	for (int phased = 1; phased >= 0 && !failed; phased--)
		for (int k = 1; k <= MAX_RUNS && !failed; k += 2) {
			int e_aa = 0, f_pow = 0, e_fam = 0;
			struct outcome oc;
			for (int i = 0; i < n_aa && !failed; i++) {
				failed = compare_once(phased, k, aa, &oc) != 0;
				e_aa += oc.exit3;
			}
			for (int i = 0; i < n_pow && !failed; i++) {
				failed = compare_once(phased, k, pow10, &oc) != 0;
				f_pow += oc.w3_found;
			}
			for (int i = 0; i < n_fam && !failed; i++) {
				failed = compare_once(phased, k, fam, &oc) != 0;
				e_fam += oc.exit3;
			}
			if (failed)
				break;
			char a[32], b[32], c[32];
			snprintf(a, sizeof(a), "%d of %d (%.0f%%)", e_aa, n_aa, 100.0 * e_aa / n_aa);
			snprintf(b, sizeof(b), "%d of %d", f_pow, n_pow);
			snprintf(c, sizeof(c), "%d of %d (%.0f%%)", e_fam, n_fam, 100.0 * e_fam / n_fam);
			printf("%-12s %-5d  %-22s %-24s %-26s\n", phased ? "phased" : "interleaved", k, a, b, c);
			fflush(stdout);
		}
	atomic_store(&stop_load, 1);
	for (int i = 0; i < load; i++)
		pthread_join(lt[i], NULL);
	rmdir(dir);
	return failed ? 1 : 0;
}
