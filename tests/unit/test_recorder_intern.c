/*
 * tests/unit/test_recorder_intern.c - the intern table when a name gets no
 * id of its own. The table is process-global, so this file runs alone in
 * its process with the table's limit lowered (rec_intern_limit, the test
 * seam in rec_internal.h) to fill it in a few calls instead of 2^24.
 *
 * Invariants covered:
 *  - once the table is full, a new name gets the id of "(unnamed)", never
 *    the id of a real name, and names interned before keep their ids;
 *  - "(unnamed)" is written in the trace under that id;
 *  - each such call records a sample of the counter "ptz: names interned
 *    as (unnamed)" (the count so far) through an open recorder, none
 *    through NULL (still counted), none while recording is disabled.
 */
#include <stdbool.h>
#include <stdint.h>

#include "tests/test_util.h"
#include "ptz/recorder.h"
#include "recorder/rec_internal.h"

enum { LIMIT = 40 }; /* ordinary names take ids 1..39 */

static void test_intern_full_table_gives_unnamed(void **state)
{
	(void)state;
	const char *path = tu_path("intern-full.ptz");
	pt_recorder *r = pt_open(path, NULL, 0);
	assert_non_null(r);
	uint32_t ids[LIMIT];
	char name[32];
	for (unsigned i = 1; i < LIMIT; i++) {
		snprintf(name, sizeof(name), "name-%u", i);
		ids[i] = pt_intern(r, name);
		assert_int_equal(ids[i], i);
	}
	uint32_t a = pt_intern(r, "brand-new-a");    /* full: counted, sample 1 */
	uint32_t b = pt_intern(NULL, "brand-new-b"); /* counted, no sample */
	pt_set_enabled(r, false);
	uint32_t c = pt_intern(r, "brand-new-c");    /* counted, no sample while disabled */
	pt_set_enabled(r, true);
	uint32_t d = pt_intern_in(r, 0, "brand-new-d"); /* sample 4 */
	assert_int_equal(a, b);
	assert_int_equal(a, c);
	assert_int_equal(a, d);
	assert_true(a >= LIMIT && a < PT_FMT_MAX_STRING_ID); /* no real name's id */
	for (unsigned i = 1; i < LIMIT; i++) {             /* the names before keep theirs */
		snprintf(name, sizeof(name), "name-%u", i);
		assert_int_equal(pt_intern(r, name), ids[i]);
	}
	pt_begin(r, a);
	pt_end(r, a);
	assert_int_equal(pt_close(r), 0);

	struct tu_trace tr;
	tu_read(path, &tr);
	assert_string_equal(pt_reader_string(tr.rd, a, NULL), "(unnamed)");
	assert_string_equal(pt_reader_string(tr.rd, ids[1], NULL), "name-1");
	assert_int_equal(tr.nt, 1);
	const struct tu_thread *t = &tr.t[0];
	int64_t samples[8];
	unsigned ns = 0, sections = 0;
	uint32_t counter = 0;
	for (size_t i = 0; i < t->n; i++) {
		if (t->recs[i].kind == PT_REC_COUNTER) {
			assert_true(ns < 8);
			counter = t->recs[i].id;
			samples[ns++] = (int64_t)t->recs[i].value;
		}
		sections += t->recs[i].kind == PT_REC_BEGIN && t->recs[i].id == a;
	}
	assert_int_equal(sections, 1);
	assert_int_equal(ns, 2);
	assert_int_equal(samples[0], 1);
	assert_int_equal(samples[1], 4);
	assert_int_not_equal(counter, a);
	assert_true(counter >= LIMIT && counter < PT_FMT_MAX_STRING_ID);
	assert_string_equal(pt_reader_string(tr.rd, counter, NULL), "ptz: names interned as (unnamed)");
	tu_free(&tr);
	unlink(path);
}

int main(void)
{
	rec_intern_limit = LIMIT; /* before any intern */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_intern_full_table_gives_unnamed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
