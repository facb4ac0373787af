/*
 * tests/unit/test_macros.c - PT_SECTION / PT_SCOPE semantics, checked on a
 * real recorder whose trace is read back with the public reader API.
 *
 * Built twice (tests/meson.build): 'recorder-macros' normally and
 * 'recorder-macros-disabled' with -DPT_DISABLE. Both builds run the same
 * control-flow assertions; only the expected trace differs (empty under
 * PT_DISABLE, since the macros compile to plain one-iteration scopes).
 *
 * Invariants covered:
 *  - A PT_SECTION body runs exactly once and yields one BEGIN/END pair.
 *  - break and continue inside a PT_SECTION body leave the section only:
 *    control resumes right after the PT_SECTION statement, in the same
 *    iteration of an enclosing loop (or case of an enclosing switch), which
 *    is neither broken nor continued.
 *  - return from inside a PT_SECTION, return from a function holding a
 *    PT_SCOPE, goto out of a PT_SECTION, and leaving a block holding a
 *    PT_SCOPE all end the section before anything recorded afterwards.
 *  - Nested sections nest (END order is the reverse of BEGIN order).
 *  - Metrics given as designators (.flops = n, .read_bytes = b) land as
 *    METRIC records right after their own section's BEGIN, with the exact
 *    64-bit value, and are evaluated once per pass.
 *  - The name is interned once per call site: one pt_intern() call however
 *    many passes, and the same id (the process-global pt_intern() id,
 *    named by pt_reader_string()) on every pass.
 *  - A NULL recorder runs the body and records nothing.
 *  - Under PT_DISABLE: bodies run once with identical break/continue
 *    meaning, nothing is interned, and the macros record nothing, while
 *    pt_begin()/pt_end() still work.
 *
 * How the intern count is observed: this executable defines pt_intern()
 * itself (it links the shared libptz, so the definition here interposes)
 * and forwards to the library's with dlsym(RTLD_NEXT), counting calls made
 * for the names under test.
 */
#include <dlfcn.h> /* dlsym, RTLD_NEXT */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptz/format.h"
#include "ptz/recorder.h"
#include "tests/test_util.h"

#ifdef PT_DISABLE
#define MACROS_ON 0
#define REC(s) ""
#else
#define MACROS_ON 1
#define REC(s) s
#endif

/* ---------------------------------------------------- pt_intern() counter */

static const char *count_name; /* calls for this name are counted */
static unsigned intern_calls;

uint32_t pt_intern(pt_recorder *r, const char *name)
{
	static uint32_t (*real)(pt_recorder *, const char *);
	if (!real) {
		void *sym = dlsym(RTLD_NEXT, "pt_intern");
		if (!sym) {
			fprintf(stderr, "dlsym(pt_intern): %s\n", dlerror());
			abort();
		}
		memcpy(&real, &sym, sizeof(real)); /* object -> function pointer, POSIX-sanctioned */
	}
	if (count_name && name && strcmp(name, count_name) == 0)
		intern_calls++;
	return real(r, name);
}

/* ------------------------------------------------------------- fixtures */

struct mstate {
	pt_recorder *r;
	char path[4200];
};

static int setup_recorder(void **state)
{
	static unsigned seq;
	struct mstate *st = calloc(1, sizeof(*st));
	if (!st)
		return -1;
	snprintf(st->path, sizeof(st->path), "%s/macros-%u.ptz", tu_tmpdir(), seq++);
	const struct pt_options opt = { .ring_bytes = 1u << 16, .process_name = "test-macros" };
	st->r = pt_open(st->path, &opt, sizeof(opt));
	if (!st->r) {
		perror(st->path);
		free(st);
		return -1;
	}
	count_name = NULL;
	intern_calls = 0;
	*state = st;
	return 0;
}

static int teardown_recorder(void **state)
{
	struct mstate *st = *state;
	if (st) {
		pt_close(st->r); /* NULL-safe; already closed by expect_trace() */
		unlink(st->path);
		free(st);
	}
	return 0;
}

/* Removes the (by then empty) directory tu_tmpdir() created. */
static int teardown_group(void **state)
{
	(void)state;
	rmdir(tu_tmpdir());
	return 0;
}

/* --------------------------------------------------- trace read-back */

static int metric_aux_cmp(const void *a, const void *b)
{
	const struct pt_record *x = a, *y = b;
	return (x->aux > y->aux) - (x->aux < y->aux);
}

/*
 * Closes the recorder, reads its trace back and renders the event records as
 * "B:name E:name M<kind>:value ..." (metric kinds are enum pt_metric_kind).
 * The metrics that follow one BEGIN are rendered sorted by kind: their
 * relative order is not part of the contract. Each BEGIN/END id must be the
 * process-global id pt_intern() returns for its name, and the trace must
 * hold no loss, error or other event records.
 */
static void expect_trace(struct mstate *st, const char *expected)
{
	assert_int_equal(pt_close(st->r), 0);
	st->r = NULL;

	struct tu_trace tr;
	tu_read(st->path, &tr);
	assert_int_equal(pt_reader_problem_count(tr.rd), 0);
	assert_true(tr.nt <= 1); /* every test records from the main thread only */
	assert_int_equal(tr.lost_records, 0);
	assert_int_equal(tr.errors, 0);

	char got[4096] = "";
	size_t len = 0;
	const char *saved = count_name; /* the check below must not count */
	count_name = NULL;
	for (size_t t = 0; t < tr.nt; t++) {
		struct pt_record *recs = tr.t[t].recs;
		size_t n = tr.t[t].n;
		for (size_t i = 0; i < n; i++) {
			const struct pt_record *rec = &recs[i];
			if (rec->kind == PT_REC_METRIC) {
				size_t j = i;
				while (j < n && recs[j].kind == PT_REC_METRIC)
					j++;
				qsort(&recs[i], j - i, sizeof(*recs), metric_aux_cmp);
			}
			const char *sep = len ? " " : "";
			if (rec->kind == PT_REC_BEGIN || rec->kind == PT_REC_END) {
				uint32_t dom = 99;
				const char *name = pt_reader_string(tr.rd, rec->id, &dom);
				assert_non_null(name);
				assert_int_equal(dom, 0);
				assert_int_equal(rec->id, pt_intern(NULL, name));
				len += (size_t)snprintf(got + len, sizeof(got) - len, "%s%c:%s", sep,
							rec->kind == PT_REC_BEGIN ? 'B' : 'E', name);
			} else if (rec->kind == PT_REC_METRIC) {
				len += (size_t)snprintf(got + len, sizeof(got) - len, "%sM%u:%llu", sep,
							(unsigned)rec->aux, (unsigned long long)rec->value);
			} else {
				len += (size_t)snprintf(got + len, sizeof(got) - len, "%s?kind%u", sep,
							(unsigned)rec->kind);
			}
			assert_true(len < sizeof(got));
		}
	}
	count_name = saved;
	size_t open = 0;
	for (size_t t = 0; t < tr.nt; t++)
		tu_check_nesting(&tr.t[t], &open);
	assert_int_equal(open, 0);
	tu_free(&tr);
	assert_string_equal(got, expected);
}

/* --------------------------------------------------------------- cases */

static void test_section_body_completes(void **state)
{
	struct mstate *st = *state;
	int ran = 0;
	PT_SECTION(st->r, "body")
	{
		ran++;
	}
	assert_int_equal(ran, 1);
	expect_trace(st, REC("B:body E:body"));
}

/* break leaves PT_SECTION's own one-iteration loop: the statement after the
 * PT_SECTION runs in the same iteration, and the enclosing loop goes on. */
static void test_section_break_leaves_section_only(void **state)
{
	struct mstate *st = *state;
	int iters = 0, entered = 0, past_break = 0, after = 0;
	for (int i = 0; i < 3; i++) {
		iters++;
		PT_SECTION(st->r, "brk")
		{
			entered++;
			if (i < 100)
				break;
			past_break++;
		}
		after++;
	}
	assert_int_equal(iters, 3);
	assert_int_equal(entered, 3);
	assert_int_equal(past_break, 0);
	assert_int_equal(after, 3);
	expect_trace(st, REC("B:brk E:brk B:brk E:brk B:brk E:brk"));
}

/* continue likewise leaves the section only: it does not skip the rest of
 * the enclosing loop's iteration. */
static void test_section_continue_leaves_section_only(void **state)
{
	struct mstate *st = *state;
	int iters = 0, entered = 0, past_continue = 0, after = 0;
	int i = 0;
	while (i < 3) {
		iters++;
		PT_SECTION(st->r, "cont")
		{
			entered++;
			if (i < 100)
				continue;
			past_continue++;
		}
		after++;
		i++;
	}
	assert_int_equal(iters, 3);
	assert_int_equal(entered, 3);
	assert_int_equal(past_continue, 0);
	assert_int_equal(after, 3);
	expect_trace(st, REC("B:cont E:cont B:cont E:cont B:cont E:cont"));
}

/* Inside a switch case, break leaves the section, not the switch. */
static void test_section_break_inside_switch(void **state)
{
	struct mstate *st = *state;
	int after_section = 0, other_case = 0;
	for (int k = 1; k <= 2; k++) {
		switch (k) {
		case 1:
			PT_SECTION(st->r, "sw")
			{
				break;
			}
			after_section++;
			break;
		default:
			other_case++;
			break;
		}
	}
	assert_int_equal(after_section, 1);
	assert_int_equal(other_case, 1);
	expect_trace(st, REC("B:sw E:sw"));
}

/* PT_SECTION is a single statement: it can be an if branch without braces. */
static void test_section_as_if_branch(void **state)
{
	struct mstate *st = *state;
	int then = 0, other = 0;
	for (int c = 0; c < 2; c++) {
		if (c)
			PT_SECTION(st->r, "then")
			{
				then++;
			}
		else
			other++;
	}
	assert_int_equal(then, 1);
	assert_int_equal(other, 1);
	expect_trace(st, REC("B:then E:then"));
}

static int return_from_section(pt_recorder *r, int *past)
{
	(void)r; /* only the macros use it: unused under PT_DISABLE */
	PT_SECTION(r, "ret")
	{
		return 7;
	}
	*past = 1;
	return 0;
}

static void test_section_return_ends_section(void **state)
{
	struct mstate *st = *state;
	int past = 0;
	assert_int_equal(return_from_section(st->r, &past), 7);
	assert_int_equal(past, 0);
	pt_begin(st->r, pt_intern(st->r, "marker"));
	pt_end(st->r, pt_intern(st->r, "marker"));
	/* the marker's own pt_begin/pt_end record even under PT_DISABLE */
#ifdef PT_DISABLE
	expect_trace(st, "B:marker E:marker");
#else
	expect_trace(st, "B:ret E:ret B:marker E:marker");
#endif
}

static void test_section_goto_ends_section(void **state)
{
	struct mstate *st = *state;
	int past = 0, out = 0;
	PT_SECTION(st->r, "goto")
	{
		goto leave;
	}
	past = 1;
leave:
	out = 1;
	PT_SECTION(st->r, "after") {}
	assert_int_equal(past, 0);
	assert_int_equal(out, 1);
	expect_trace(st, REC("B:goto E:goto B:after E:after"));
}

static int scope_function(pt_recorder *r, int early, int *inner_ran)
{
	(void)r;
	PT_SCOPE(r, "scope");
	if (early)
		return 1;
	PT_SECTION(r, "in-scope")
	{
		(*inner_ran)++;
	}
	return 2;
}

static void test_scope_return_ends_section(void **state)
{
	struct mstate *st = *state;
	int inner_ran = 0;
	assert_int_equal(scope_function(st->r, 1, &inner_ran), 1);
	assert_int_equal(inner_ran, 0);
	assert_int_equal(scope_function(st->r, 0, &inner_ran), 2);
	assert_int_equal(inner_ran, 1);
	expect_trace(st, REC("B:scope E:scope B:scope B:in-scope E:in-scope E:scope"));
}

static void test_scope_ends_at_block_exit(void **state)
{
	struct mstate *st = *state;
	int ran = 0;
	{
		PT_SCOPE(st->r, "block");
		PT_SECTION(st->r, "inside") {}
		ran++;
	}
	PT_SECTION(st->r, "outside") {}
	for (int i = 0; i < 2; i++) {
		PT_SCOPE(st->r, "iter");
		if (i == 0)
			continue; /* leaves the loop body's block: ends "iter" */
		ran++;
	}
	assert_int_equal(ran, 2);
	expect_trace(st, REC("B:block B:inside E:inside E:block B:outside E:outside B:iter E:iter B:iter E:iter"));
}

static void test_section_nested(void **state)
{
	struct mstate *st = *state;
	int depth3 = 0, after_inner = 0;
	PT_SECTION(st->r, "outer")
	{
		PT_SECTION(st->r, "mid")
		{
			PT_SECTION(st->r, "leaf")
			{
				depth3++;
			}
		}
		PT_SECTION(st->r, "mid2")
		{
			break; /* leaves mid2 only; outer goes on */
		}
		after_inner++;
	}
	assert_int_equal(depth3, 1);
	assert_int_equal(after_inner, 1);
	expect_trace(st, REC("B:outer B:mid B:leaf E:leaf E:mid B:mid2 E:mid2 E:outer"));
}

static void test_section_metrics_designated(void **state)
{
	struct mstate *st = *state;
	int ran = 0;
	const uint64_t big = (1ull << 40) + 3; /* needs all 64 bits of the record */
	(void)big; /* only the macro reads it: unused under PT_DISABLE */
	PT_SECTION(st->r, "m", .flops = 100, .read_bytes = 64)
	{
		ran++;
	}
	PT_SECTION(st->r, "outer-w", .written_bytes = 5)
	{
		PT_SECTION(st->r, "inner-f", .flops = big)
		{
			ran++;
		}
		PT_SCOPE(st->r, "scope-rwf", .read_bytes = 1, .written_bytes = 2, .flops = 3);
		ran++;
	}
	assert_int_equal(ran, 3);
	/* M1 = PT_METRIC_READ_BYTES, M2 = PT_METRIC_WRITTEN_BYTES, M3 = PT_METRIC_FLOPS */
	expect_trace(st, REC("B:m M1:64 M3:100 E:m "
			     "B:outer-w M2:5 B:inner-f M3:1099511627779 E:inner-f "
			     "B:scope-rwf M1:1 M2:2 M3:3 E:scope-rwf E:outer-w"));
}

/* The metric expressions are evaluated once per pass (under PT_DISABLE not
 * at all, as with assert() under NDEBUG: the macro compiles to an empty
 * scope). */
static void test_section_metrics_evaluated_once(void **state)
{
	struct mstate *st = *state;
	uint64_t evals = 0;
	int ran = 0;
	for (int i = 0; i < 3; i++)
		PT_SECTION(st->r, "eval", .flops = ++evals)
		{
			ran++;
		}
	assert_int_equal(ran, 3);
	assert_int_equal(evals, MACROS_ON ? 3 : 0);
	expect_trace(st, REC("B:eval M3:1 E:eval B:eval M3:2 E:eval B:eval M3:3 E:eval"));
}

static void test_section_interned_once_per_site(void **state)
{
	struct mstate *st = *state;
	count_name = "site";
	intern_calls = 0;
	int ran = 0;
	for (int i = 0; i < 5; i++)
		PT_SECTION(st->r, "site")
		{
			ran++;
		}
	assert_int_equal(ran, 5);
	/* the site cached its id: one pt_intern() call for five passes, none
	 * when the macros are compiled out */
	assert_int_equal(intern_calls, MACROS_ON ? 1 : 0);
	count_name = NULL;
	expect_trace(st, REC("B:site E:site B:site E:site B:site E:site B:site E:site B:site E:site"));
}

static void test_section_null_recorder_runs_body(void **state)
{
	struct mstate *st = *state;
	pt_recorder *const nr = NULL;
	int ran = 0, after = 0;
	for (int i = 0; i < 2; i++) {
		PT_SECTION(nr, "null", .flops = 9)
		{
			ran++;
			if (i == 1)
				break;
			PT_SCOPE(nr, "null-scope", .read_bytes = 1);
			PT_SECTION(nr, "null-inner") {}
		}
		after++;
	}
	assert_int_equal(ran, 2);
	assert_int_equal(after, 2);
	(void)nr;
	/* st->r is open but was never named: nothing at all is recorded */
	expect_trace(st, "");
}

/* Under PT_DISABLE only the macros vanish: pt_begin()/pt_end() record. */
static void test_section_mixed_with_functions(void **state)
{
	struct mstate *st = *state;
	const uint32_t id = pt_intern(st->r, "manual");
	pt_begin(st->r, id);
	PT_SECTION(st->r, "macro", .read_bytes = 8) {}
	pt_end(st->r, id);
#ifdef PT_DISABLE
	expect_trace(st, "B:manual E:manual");
#else
	expect_trace(st, "B:manual B:macro M1:8 E:macro E:manual");
#endif
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup_recorder, teardown_recorder)
	const struct CMUnitTest tests[] = {
		T(test_section_body_completes),
		T(test_section_break_leaves_section_only),
		T(test_section_continue_leaves_section_only),
		T(test_section_break_inside_switch),
		T(test_section_as_if_branch),
		T(test_section_return_ends_section),
		T(test_section_goto_ends_section),
		T(test_scope_return_ends_section),
		T(test_scope_ends_at_block_exit),
		T(test_section_nested),
		T(test_section_metrics_designated),
		T(test_section_metrics_evaluated_once),
		T(test_section_interned_once_per_site),
		T(test_section_null_recorder_runs_body),
		T(test_section_mixed_with_functions),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, teardown_group);
}
