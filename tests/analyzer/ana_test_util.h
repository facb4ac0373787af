/*
 * tests/analyzer/ana_test_util.h - what the analyzer's cmocka tests share:
 * a trace builder over the internal format writer (one chunk at a time,
 * per-thread chunk sequences, zstd level 3), ana_run() and the outputs
 * (text report, CSV, JSON, info) in memory, failing the test on an error,
 * JSON lookups that fail the test on a missing key or a wrong type, and a
 * group fixture holding one trace written and analyzed once (all
 * threads).
 */
#ifndef PTZ_ANA_TEST_UTIL_H
#define PTZ_ANA_TEST_UTIL_H

#include <jansson.h>

#include "tests/test_util.h"
#include "analyzer/ana.h"
#include "trace-format/fmt_internal.h"

/* ==== Trace builder ==== */

/* @e encodes the next chunk into @buf; @seq: next chunk sequence of threads 0..3. */
struct tb {
	struct fmt_writer *w;
	struct fmt_enc e;
	uint8_t *buf;
	size_t cap;
	uint64_t seq[4];
};

/* Creates the trace @path with header @hd; the encoder starts empty. */
static inline void tb_start(struct tb *b, const char *path, const struct fmt_writer_hdr *hd)
{
	memset(b, 0, sizeof(*b));
	b->cap = 1 << 20;
	b->buf = malloc(b->cap);
	assert_non_null(b->buf);
	assert_int_equal(fmt_writer_open(path, hd, &b->w), 0);
	fmt_enc_reset(&b->e, b->buf, b->cap);
}

/* Appends what the encoder holds (nothing: no chunk) as a chunk of @kind
 * for @thread (PT_FMT_META_THREAD: sequence 0), then empties the encoder. */
static inline void tb_flush(struct tb *b, uint8_t kind, uint32_t thread)
{
	if (b->e.records) {
		const struct fmt_chunk_hdr h = {
			.kind = kind,
			.thread = thread,
			.records = b->e.records,
			.sequence = thread == PT_FMT_META_THREAD ? 0 : b->seq[thread]++,
			.first_ticks = b->e.first_ticks,
			.last_ticks = b->e.last_ticks,
		};
		assert_int_equal(fmt_writer_append(b->w, &h, b->buf, (size_t)(b->e.pos - b->buf), 3), 0);
	}
	fmt_enc_reset(&b->e, b->buf, b->cap);
}

static inline void tb_close(struct tb *b)
{
	assert_int_equal(fmt_writer_close(b->w), 0);
	free(b->buf);
}

/* ==== Analyzing ==== */

/* ana_run(); fails the test with the analyzer's message on an error. */
static inline void ana_test_run(const char *path, const struct ana_options *opt, struct ana_result *res)
{
	char err[256] = "";
	int rc = ana_run(path, opt, res, err, sizeof(err));
	if (rc)
		fail_msg("ana_run(%s) = %d: %s", path, rc, err);
}

/* What ana_test_output() captures. */
enum ana_test_out { ANA_OUT_TEXT, ANA_OUT_CSV, ANA_OUT_JSON, ANA_OUT_INFO };

/* Output @what of @res with @o (ANA_OUT_INFO: unused), as a string the
 * caller frees; fails the test if the CSV or JSON writer fails. */
static inline char *ana_test_output(enum ana_test_out what, const struct ana_result *res,
				    const struct ana_report_opts *o)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	switch (what) {
	case ANA_OUT_TEXT: ana_report_text(f, res, o); break;
	case ANA_OUT_CSV: assert_int_equal(ana_write_csv(f, res, o), 0); break;
	case ANA_OUT_JSON: assert_int_equal(ana_write_json(f, res, o), 0); break;
	case ANA_OUT_INFO: ana_info_text(f, res); break;
	}
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* The text report of @res with @o, as a string the caller frees. */
static inline char *ana_test_report(const struct ana_result *res, const struct ana_report_opts *o)
{
	return ana_test_output(ANA_OUT_TEXT, res, o);
}

/* ==== Reading the JSON back ==== */

/* Member @k of object @o; fails the test if there is none. */
static inline json_t *jget(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	if (!v)
		fail_msg("JSON: no key %s", k);
	return v;
}

/* Integer member @k of @o; fails the test if it is missing or not an integer. */
static inline json_int_t jint(json_t *o, const char *k)
{
	json_t *v = jget(o, k);
	if (!json_is_integer(v))
		fail_msg("JSON: %s is not an integer", k);
	return json_integer_value(v);
}

/* ==== Group fixture: one trace, analyzed once ==== */

struct ana_fixture {
	char path[4200];
	struct ana_result res;
};

/* Writes the temp file @name with @write, analyzes it (all threads) into
 * *@state, a struct ana_fixture. */
static inline int ana_fixture_setup(void **state, const char *name, void (*write)(const char *path))
{
	struct ana_fixture *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	snprintf(f->path, sizeof(f->path), "%s", tu_path(name));
	write(f->path);
	const struct ana_options o = { .thread = -1 };
	ana_test_run(f->path, &o, &f->res);
	*state = f;
	return 0;
}

static inline int ana_fixture_teardown(void **state)
{
	struct ana_fixture *f = *state;
	ana_result_free(&f->res);
	unlink(f->path);
	free(f);
	return 0;
}

#endif /* PTZ_ANA_TEST_UTIL_H */
