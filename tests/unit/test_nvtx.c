/*
 * tests/unit/test_nvtx.c - libptz's NVTX injection, driven through the
 * export-table protocol by a fake NVTX client (this file plays the part of
 * an application module's nvtx3 instance), so it needs no NVTX headers.
 *
 * Built twice (tests/meson.build): 'nvtx-inject' with PTZ_TRACE set to a
 * temporary file, and 'nvtx-inject-no-trace' (-DNVTX_TEST_NO_TRACE) with
 * PTZ_TRACE unset.
 *
 * Invariants covered:
 *  - InitializeInjectionNvtx2() reports the NVTX version, fills exactly the
 *    CORE and CORE2 slots rec_nvtx.c implements, writes no id at or beyond
 *    the size the client reports nor through a NULL entry, returns 1; it
 *    returns 0 with no getter, no callback table or no known module.
 *  - It is idempotent and opens nothing: a second call (same or another
 *    module) installs the same handlers, and the trace file does not exist
 *    until the first handler call.
 *  - push returns the 0-based level, pop the level ended, -1 with nothing
 *    open, across domains and beyond the recorded depth (256 recorded);
 *    each push beyond it is a section lost whole: 44 in lost_sections and
 *    88 records in lost_records, in pt_stats() and in the trace's LOSS
 *    records, and nothing else is lost.
 *  - Domain and registered-string handles: non-NULL, equal for equal
 *    names (ASCII and wide), NULL domain = default domain; a domain stays
 *    usable after nvtxDomainDestroy.
 *  - Start/end ids are non-zero and distinct, and may end on another
 *    thread; marks are instants; a too-small or NULL attribute structure is
 *    "(unnamed)"; wide names are UTF-8; thread names (tid 0 = calling
 *    thread, another thread's tid, wide) land in the thread table.
 *  - The trace read back holds exactly those sections, instants, async
 *    pairs, thread names and domains, nested correctly, with no loss.
 *  - Without PTZ_TRACE: same levels, 0 range ids, NULL handles, nothing
 *    recorded and no file written.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <wchar.h>

#include "ptz/format.h"
#include "ptz/recorder.h"
#include "recorder/rec_nvtx_abi.h"
#include "tests/test_util.h"

#ifdef NVTX_TEST_NO_TRACE
#define TRACING 0
#else
#define TRACING 1
#endif

/* ------------------------------------------------ the fake NVTX client */

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
#define CORE_N REC_NVTX_CBID_CORE_SIZE
#define CORE2_N REC_NVTX_CBID_CORE2_SIZE

/* One module's NVTX instance: its function-pointer variables and, as
 * nvtx3 lays them out, tables of pointers to them (entry 0 unused, one
 * extra NULL entry at the end). */
struct client {
	rec_nvtx_fn core_fp[CORE_N], core2_fp[CORE2_N];
	rec_nvtx_fn *core_tab[CORE_N + 1], *core2_tab[CORE2_N + 1];
	unsigned core_size, core2_size; /* sizes reported to the tool */
	int know_core, know_core2;
	int offer_callbacks;
	uint32_t version_set;
};

static struct client *cur; /* the module whose getter is being called */

static void sentinel(void) {}

static void client_init(struct client *c)
{
	memset(c, 0, sizeof(*c));
	for (unsigned i = 1; i < CORE_N; i++)
		c->core_tab[i] = &c->core_fp[i];
	for (unsigned i = 1; i < CORE2_N; i++)
		c->core2_tab[i] = &c->core2_fp[i];
	c->core_size = CORE_N;
	c->core2_size = CORE2_N;
	c->know_core = c->know_core2 = c->offer_callbacks = 1;
}

static int get_module_function_table(uint32_t module, rec_nvtx_fn_table *out, unsigned *size)
{
	if (module == REC_NVTX_MODULE_CORE && cur->know_core) {
		*out = cur->core_tab;
		*size = cur->core_size;
		return 1;
	}
	if (module == REC_NVTX_MODULE_CORE2 && cur->know_core2) {
		*out = cur->core2_tab;
		*size = cur->core2_size;
		return 1;
	}
	return 0;
}

static void set_injection_version(uint32_t v)
{
	cur->version_set = v;
}

static const struct rec_nvtx_etbl_callbacks etbl_callbacks = { sizeof(etbl_callbacks), get_module_function_table };
static const struct rec_nvtx_etbl_version_info etbl_version = { sizeof(etbl_version), 3, 0, set_injection_version };

static const void *get_export_table(uint32_t etid)
{
	if (etid == REC_NVTX_ETID_CALLBACKS)
		return cur->offer_callbacks ? &etbl_callbacks : NULL;
	if (etid == REC_NVTX_ETID_VERSIONINFO)
		return &etbl_version;
	return NULL;
}

static int attach(struct client *c)
{
	cur = c;
	return InitializeInjectionNvtx2(get_export_table);
}

/* The handler types, as nvtx3's *_impl_fntype (our ABI structs). */
typedef struct rec_nvtx_event_attr attr_t;
typedef struct rec_nvtx_domain *dom_t;
typedef struct rec_nvtx_string *str_t;
static struct client app; /* the module the handler tests call through */
#define CORE_FN(T, id) ((T)app.core_fp[REC_NVTX_CBID_CORE_##id])
#define CORE2_FN(T, id) ((T)app.core2_fp[REC_NVTX_CBID_CORE2_##id])
#define markA(s) CORE_FN(void (*)(const char *), MarkA)(s)
#define markW(s) CORE_FN(void (*)(const wchar_t *), MarkW)(s)
#define markEx(a) CORE_FN(void (*)(const attr_t *), MarkEx)(a)
#define startA(s) CORE_FN(uint64_t (*)(const char *), RangeStartA)(s)
#define startW(s) CORE_FN(uint64_t (*)(const wchar_t *), RangeStartW)(s)
#define startEx(a) CORE_FN(uint64_t (*)(const attr_t *), RangeStartEx)(a)
#define rend(id) CORE_FN(void (*)(uint64_t), RangeEnd)(id)
#define pushA(s) CORE_FN(int (*)(const char *), RangePushA)(s)
#define pushW(s) CORE_FN(int (*)(const wchar_t *), RangePushW)(s)
#define pushEx(a) CORE_FN(int (*)(const attr_t *), RangePushEx)(a)
#define pop() CORE_FN(int (*)(void), RangePop)()
#define nameA(t, s) CORE_FN(void (*)(uint32_t, const char *), NameOsThreadA)(t, s)
#define nameW(t, s) CORE_FN(void (*)(uint32_t, const wchar_t *), NameOsThreadW)(t, s)
#define dmark(d, a) CORE2_FN(void (*)(dom_t, const attr_t *), DomainMarkEx)(d, a)
#define dstart(d, a) CORE2_FN(uint64_t (*)(dom_t, const attr_t *), DomainRangeStartEx)(d, a)
#define dend(d, id) CORE2_FN(void (*)(dom_t, uint64_t), DomainRangeEnd)(d, id)
#define dpush(d, a) CORE2_FN(int (*)(dom_t, const attr_t *), DomainRangePushEx)(d, a)
#define dpop(d) CORE2_FN(int (*)(dom_t), DomainRangePop)(d)
#define regA(d, s) CORE2_FN(str_t (*)(dom_t, const char *), DomainRegisterStringA)(d, s)
#define regW(d, s) CORE2_FN(str_t (*)(dom_t, const wchar_t *), DomainRegisterStringW)(d, s)
#define dcreateA(s) CORE2_FN(dom_t (*)(const char *), DomainCreateA)(s)
#define dcreateW(s) CORE2_FN(dom_t (*)(const wchar_t *), DomainCreateW)(s)
#define ddestroy(d) CORE2_FN(void (*)(dom_t), DomainDestroy)(d)
#define nvinit(p) CORE2_FN(void (*)(const void *), Initialize)(p)

static attr_t ascii_attr(const char *s)
{
	attr_t a = { .version = 3, .size = sizeof(attr_t), .message_type = REC_NVTX_MESSAGE_ASCII };
	a.message.ascii = s;
	return a;
}

static attr_t reg_attr(const struct rec_nvtx_string *s)
{
	attr_t a = { .version = 3, .size = sizeof(attr_t), .message_type = REC_NVTX_MESSAGE_REGISTERED };
	a.message.registered = s;
	return a;
}

static const char *trace_path(void)
{
	return tu_path("nvtx.ptz");
}

static int file_exists(const char *p)
{
	struct stat sb;
	return stat(p, &sb) == 0;
}

/* ------------------------------------------------------------- init */

static const unsigned core_ids[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 14, 15 };
static const unsigned core2_ids[] = { 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15 };

static int in(const unsigned *ids, size_t n, unsigned id)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] == id)
			return 1;
	return 0;
}

static void test_init_fills_exact_slots(void **state)
{
	(void)state;
	client_init(&app);
	assert_int_equal(attach(&app), 1);
	assert_int_equal(app.version_set, REC_NVTX_VERSION);
	for (unsigned i = 0; i < CORE_N; i++)
		assert_int_equal(app.core_fp[i] != NULL, in(core_ids, N_OF(core_ids), i));
	for (unsigned i = 0; i < CORE2_N; i++)
		assert_int_equal(app.core2_fp[i] != NULL, in(core2_ids, N_OF(core2_ids), i));
	/* opening the trace is left to the first handler call */
	assert_false(file_exists(trace_path()));
}

static void test_init_idempotent_across_modules(void **state)
{
	(void)state;
	struct client lib, saved;
	memcpy(&saved, &app, sizeof(saved));
	client_init(&lib);
	assert_int_equal(attach(&lib), 1); /* a second module */
	assert_memory_equal(lib.core_fp, app.core_fp, sizeof(app.core_fp));
	assert_memory_equal(lib.core2_fp, app.core2_fp, sizeof(app.core2_fp));
	assert_int_equal(attach(&lib), 1); /* the same module again */
	assert_int_equal(attach(&app), 1);
	assert_memory_equal(lib.core_fp, saved.core_fp, sizeof(saved.core_fp));
	assert_memory_equal(lib.core2_fp, saved.core2_fp, sizeof(saved.core2_fp));
	assert_memory_equal(app.core_fp, saved.core_fp, sizeof(saved.core_fp));
	assert_memory_equal(app.core2_fp, saved.core2_fp, sizeof(saved.core2_fp));
	assert_false(file_exists(trace_path()));
}

static void test_init_respects_short_tables(void **state)
{
	(void)state;
	struct client old;
	client_init(&old);
	old.core_size = 8;  /* an older client: ids 1..7 only */
	old.core2_size = 5; /* ids 1..4 */
	old.core_tab[3] = NULL; /* MarkW slot absent */
	for (unsigned i = 0; i < CORE_N; i++)
		old.core_fp[i] = sentinel;
	for (unsigned i = 0; i < CORE2_N; i++)
		old.core2_fp[i] = sentinel;
	assert_int_equal(attach(&old), 1);
	for (unsigned i = 0; i < CORE_N; i++) {
		int written = i < 8 && i != 3 && in(core_ids, N_OF(core_ids), i);
		assert_int_equal(old.core_fp[i] != sentinel, written);
	}
	for (unsigned i = 0; i < CORE2_N; i++)
		assert_int_equal(old.core2_fp[i] != sentinel, i < 5 && in(core2_ids, N_OF(core2_ids), i));
}

static void test_init_refuses_unusable_clients(void **state)
{
	(void)state;
	struct client c;
	assert_int_equal(InitializeInjectionNvtx2(NULL), 0);
	client_init(&c);
	c.offer_callbacks = 0;
	assert_int_equal(attach(&c), 0);
	client_init(&c);
	c.know_core = c.know_core2 = 0;
	assert_int_equal(attach(&c), 0);
	client_init(&c);
	c.know_core = 0; /* CORE2 alone is enough to attach */
	assert_int_equal(attach(&c), 1);
	assert_non_null(c.core2_fp[REC_NVTX_CBID_CORE2_DomainMarkEx]);
	assert_null(c.core_fp[REC_NVTX_CBID_CORE_MarkA]);
}

/* --------------------------------------------------------- handlers */

struct helper {
	pthread_barrier_t b;
	uint32_t tid;
	uint64_t end_id;
};

/* Published its tid, waits until main named it, ends main's range, marks. */
static void *helper_main(void *arg)
{
	struct helper *h = arg;
	h->tid = (uint32_t)syscall(SYS_gettid);
	pthread_barrier_wait(&h->b);
	pthread_barrier_wait(&h->b);
	rend(h->end_id);
	markA("helper-mark");
	return NULL;
}

/* A thread that names itself with a wide name and tid 0. */
static void *wide_main(void *arg)
{
	(void)arg;
	nameW(0, L"wide-\u00fc");
	markA("wide-thread-mark");
	return NULL;
}

static void test_push_pop_levels(void **state)
{
	(void)state;
	assert_int_equal(pop(), -1);
	attr_t b = ascii_attr("b");
	assert_int_equal(pushA("a"), 0);
	assert_int_equal(pushEx(&b), 1);
	assert_int_equal(pushW(L"c\u00e9"), 2);
	assert_int_equal(pop(), 2);
	assert_int_equal(pop(), 1);
	assert_int_equal(pop(), 0);
	assert_int_equal(pop(), -1);
	/* deeper than the 256 recorded levels: levels keep counting */
	for (int i = 0; i < 300; i++)
		assert_int_equal(pushA("deep"), i);
	for (int i = 299; i >= 0; i--)
		assert_int_equal(pop(), i);
	assert_int_equal(pop(), -1);
}

static void test_domains_and_strings(void **state)
{
	(void)state;
	nvinit(NULL);
	dom_t d = dcreateA("dom");
	assert_true(d == dcreateA("dom"));
	assert_true(d == dcreateW(L"dom"));
	assert_null(dcreateA(NULL));
	assert_null(dcreateA(""));
	str_t s = regA(d, "s");
	assert_true(s == regA(d, "s"));
	assert_true(s == regW(d, L"s"));
	str_t s0 = regA(NULL, "s");
	if (TRACING) {
		assert_non_null(d);
		assert_non_null(s);
		assert_non_null(s0);
		assert_true(s0 != s); /* same text, other domain */
		assert_true(d != dcreateA("other"));
	} else {
		assert_null(d);
		assert_null(s);
		assert_null(s0);
	}
	attr_t rs = reg_attr(s), rs0 = reg_attr(s0), m = ascii_attr("m");
	/* push levels are per thread, across domains */
	assert_int_equal(dpush(d, &rs), 0);
	assert_int_equal(pushEx(&rs0), 1);
	dmark(d, &m);
	assert_int_equal(pop(), 1);
	assert_int_equal(dpop(d), 0);
	assert_int_equal(dpop(d), -1);
	ddestroy(d);
	attr_t after = ascii_attr("after-destroy");
	dmark(d, &after); /* still the domain "dom" */
	attr_t small = ascii_attr("never-read");
	small.size = 16;
	markEx(&small);
	markEx(NULL);
	attr_t unknown = ascii_attr("never-read");
	unknown.message_type = 99;
	markEx(&unknown);
}

static void test_ranges_marks_threads(void **state)
{
	(void)state;
	nameA(0, "early-name");
	nameA(0, "nvtx-main"); /* the last name wins */
	attr_t dr = ascii_attr("dr");
	dom_t d = dcreateA("dom");
	uint64_t r1 = startA("r1"), r2 = startW(L"r2"), r3 = dstart(d, &dr);
	attr_t r4a = ascii_attr("r4");
	uint64_t r4 = startEx(&r4a);
	if (TRACING) {
		assert_true(r1 && r2 && r3 && r4);
		assert_true(r1 != r2 && r1 != r3 && r2 != r3 && r4 != r1 && r4 != r2 && r4 != r3);
	} else {
		assert_true(r1 == 0 && r2 == 0 && r3 == 0 && r4 == 0);
	}
	markA("ma");
	markW(L"mw\u00e9");
	attr_t mx = ascii_attr("mx");
	markEx(&mx);
	rend(r2);
	dend(d, r3);
	rend(r4);
	rend(0); /* ignored */

	struct helper h = { .end_id = r1 };
	pthread_t t;
	assert_int_equal(pthread_barrier_init(&h.b, NULL, 2), 0);
	assert_int_equal(pthread_create(&t, NULL, helper_main, &h), 0);
	pthread_barrier_wait(&h.b);
	nameA(h.tid, "helper"); /* before the helper records anything */
	pthread_barrier_wait(&h.b);
	assert_int_equal(pthread_join(t, NULL), 0);
	pthread_barrier_destroy(&h.b);
	assert_int_equal(pthread_create(&t, NULL, wide_main, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	nameA(0, NULL); /* ignored */
	nameW(0, NULL);
}

/* ------------------------------------------------------ the trace */

struct tally {
	const char *kind, *name; /* "dom:name" */
	unsigned want, got;
};

static struct tally *find_tally(struct tally *t, size_t n, const char *kind, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(t[i].kind, kind) == 0 && strcmp(t[i].name, name) == 0)
			return &t[i];
	return NULL;
}

static void test_trace_contents(void **state)
{
	(void)state;
	if (!TRACING) {
		/* nothing was opened: no recorder, no file anywhere in the
		 * test's directory (PTZ_TRACE unset) */
		assert_null(pt_default());
		DIR *dir = opendir(tu_tmpdir());
		assert_non_null(dir);
		struct dirent *e;
		int files = 0;
		while ((e = readdir(dir)))
			files += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
		closedir(dir);
		assert_int_equal(files, 0);
		return;
	}
	pt_recorder *r = pt_default();
	assert_non_null(r);
	assert_int_equal(pt_close(r), 0);
	struct pt_stats_info st;
	assert_int_equal(pt_stats(r, &st, sizeof(st)), 0);
	assert_int_equal(st.lost_sections, 300 - 256); /* test_push_pop_levels()' deepest pushes */
	assert_int_equal(st.lost_records, 2 * (300 - 256));

	struct tally t[] = {
		{ "B", ":a", 1, 0 },
		{ "B", ":b", 1, 0 },
		{ "B", ":c\xc3\xa9", 1, 0 },
		{ "B", ":deep", 256, 0 },
		{ "B", "dom:s", 1, 0 },
		{ "B", ":s", 1, 0 },
		{ "I", "dom:m", 1, 0 },
		{ "I", "dom:after-destroy", 1, 0 },
		{ "I", ":(unnamed)", 3, 0 },
		{ "I", ":ma", 1, 0 },
		{ "I", ":mw\xc3\xa9", 1, 0 },
		{ "I", ":mx", 1, 0 },
		{ "I", ":helper-mark", 1, 0 },
		{ "I", ":wide-thread-mark", 1, 0 },
		{ "A", ":r1", 1, 0 }, /* ended on the helper thread */
		{ "A", ":r2", 1, 0 },
		{ "A", "dom:dr", 1, 0 },
		{ "A", ":r4", 1, 0 },
		{ "E", "", 4, 0 }, /* ASYNC_END records */
		{ "X", "", 1, 0 }, /* ASYNC_END on another thread than its begin */
	};
	struct tu_trace tr;
	tu_read(trace_path(), &tr);
	assert_int_equal(tr.lost_records, 2 * (300 - 256));
	assert_int_equal(tr.lost_sections, 300 - 256);
	assert_int_equal(tr.errors, 0);
	assert_int_equal(pt_reader_problem_count(tr.rd), 0);
	uint64_t begin_thread[8] = { 0 }, begin_id[8] = { 0 };
	size_t nbegin = 0;
	uint64_t end_ids[8], end_thread[8];
	size_t nend = 0;
	for (size_t k = 0; k < tr.nt; k++) {
		size_t open = 0;
		tu_check_nesting(&tr.t[k], &open);
		assert_int_equal(open, 0);
		for (size_t i = 0; i < tr.t[k].n; i++) {
			const struct pt_record *rec = &tr.t[k].recs[i];
			const char *kind = rec->kind == PT_REC_BEGIN		? "B"
					   : rec->kind == PT_REC_INSTANT	? "I"
					   : rec->kind == PT_REC_ASYNC_BEGIN ? "A"
					   : rec->kind == PT_REC_ASYNC_END	? "E"
									: NULL;
			if (!kind)
				continue;
			char name[256] = "";
			if (rec->kind != PT_REC_ASYNC_END) {
				uint32_t dom = 0;
				const char *s = pt_reader_string(tr.rd, rec->id, &dom);
				assert_non_null(s);
				snprintf(name, sizeof(name), "%s:%s", pt_reader_domain(tr.rd, dom), s);
			}
			struct tally *x = find_tally(t, N_OF(t), kind, name);
			if (!x)
				fail_msg("unexpected %s record %s", kind, name);
			x->got++;
			if (rec->kind == PT_REC_ASYNC_BEGIN) {
				assert_true(nbegin < 8);
				begin_id[nbegin] = rec->value;
				begin_thread[nbegin++] = tr.t[k].index;
			} else if (rec->kind == PT_REC_ASYNC_END) {
				assert_true(nend < 8);
				end_ids[nend] = rec->value;
				end_thread[nend++] = tr.t[k].index;
			}
		}
	}
	for (size_t i = 0; i < nend; i++)
		for (size_t j = 0; j < nbegin; j++)
			if (begin_id[j] == end_ids[i] && begin_thread[j] != end_thread[i])
				find_tally(t, N_OF(t), "X", "")->got++;
	for (size_t i = 0; i < N_OF(t); i++)
		if (t[i].got != t[i].want)
			fail_msg("%s %s: %u records, want %u", t[i].kind, t[i].name, t[i].got, t[i].want);

	/* thread names: the test thread (last name), the helper (named by
	 * tid from this thread), the wide-named thread */
	int seen_main = 0, seen_helper = 0, seen_wide = 0;
	for (size_t i = 0; i < pt_reader_thread_count(tr.rd); i++) {
		struct pt_thread_info ti;
		assert_int_equal(pt_reader_thread(tr.rd, i, &ti, sizeof(ti)), 1);
		seen_main += strcmp(ti.name, "nvtx-main") == 0;
		seen_helper += strcmp(ti.name, "helper") == 0;
		seen_wide += strcmp(ti.name, "wide-\xc3\xbc") == 0;
	}
	assert_int_equal(seen_main, 1);
	assert_int_equal(seen_helper, 1);
	assert_int_equal(seen_wide, 1);
	/* domains: "dom" and "other", created through NVTX */
	assert_string_equal(pt_reader_domain(tr.rd, 1), "dom");
	assert_string_equal(pt_reader_domain(tr.rd, 2), "other");
	assert_null(pt_reader_domain(tr.rd, 3));
	tu_free(&tr);
	unlink(trace_path());
}

static int teardown_group(void **state)
{
	(void)state;
	rmdir(tu_tmpdir());
	return 0;
}

int main(void)
{
	unsetenv("NVTX_INJECTION64_PATH");
	if (TRACING)
		setenv("PTZ_TRACE", trace_path(), 1);
	else
		unsetenv("PTZ_TRACE");
	/* the recorder writes nothing outside PTZ_TRACE: run in the empty
	 * temporary directory the no-trace case inspects */
	if (chdir(tu_tmpdir()) != 0)
		return 1;
	/* in order: the init checks must run before any handler call */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_fills_exact_slots),
		cmocka_unit_test(test_init_idempotent_across_modules),
		cmocka_unit_test(test_init_respects_short_tables),
		cmocka_unit_test(test_init_refuses_unusable_clients),
		cmocka_unit_test(test_push_pop_levels),
		cmocka_unit_test(test_domains_and_strings),
		cmocka_unit_test(test_ranges_marks_threads),
		cmocka_unit_test(test_trace_contents),
	};
	return cmocka_run_group_tests(tests, NULL, teardown_group);
}
