/*
 * tests/analyzer/test_ana_json_writer.c - the JSON report's member writer
 * (struct ana_jo, analyzer/ana.h) streams the bytes jansson's compact
 * dump wrote for the same values, builds the same values into a jansson
 * object (every case below is written both ways and the built object's
 * dump must equal the stream), and the document it makes is valid JSON
 * that reads back to those values.
 *
 * Invariants covered:
 *  - reals: for zero, negative zero, integers on both sides of 10^12,
 *    fractions, exponents of every sign and width, 2^53, subnormals, the
 *    largest double and 100,000 random bit patterns, ana_jo_real() gives
 *    json_dumps(json_real(v), JSON_ENCODE_ANY | JSON_REAL_PRECISION(12));
 *    NaN and the infinities give null;
 *  - integers: ana_jo_i64() gives jansson's json_integer() text over the
 *    int64 range ends; ana_jo_u64() writes values past INT64_MAX as bare
 *    digits (what ana_json_dumpf() made of ana_json_u64());
 *  - strings: ana_jo_str() gives jansson's escaping with every non-ASCII
 *    character as \uXXXX (controls, C1, bidi overrides, a lone 0xff byte
 *    repaired), for every byte alone and for plain strings as long as the
 *    16 KiB buffer, around its flushes;
 *  - ana_json_row() (built) of every row of small.ptz dumps to the line the
 *    streamed report holds for it;
 *  - the buffer's putc/puts/printf helpers (the CSV's), text short and
 *    longer than the buffer, byte for byte what stdio writes;
 *  - an object of 20,000 members and nested objects and arrays, through
 *    the 16 KiB buffer's flushes: valid JSON, every value read back, and
 *    a write failure is reported (err set), not ignored.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "tests/analyzer/ana_test_util.h"

/* What @fill writes into an object, as text; checked to be what @fill
 * builds into a jansson object, dumped (the two modes of struct ana_jo). */
static char *written(void (*fill)(struct ana_jo *o, const void *arg), const void *arg)
{
	char *buf = NULL, *bbuf = NULL;
	size_t len = 0, blen = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	struct ana_obuf *b = calloc(1, sizeof(*b));
	assert_non_null(b);
	b->out = f;
	struct ana_jo o = ana_jo_open(b, "{");
	fill(&o, arg);
	ana_jo_close(&o, "}");
	ana_obuf_flush(b);
	assert_int_equal(b->err, 0);
	free(b);
	fclose(f);

	int err = 0;
	json_t *obj = json_object();
	struct ana_jo bo = ana_jo_build(obj, &err);
	fill(&bo, arg);
	ana_jo_close(&bo, "}");
	assert_int_equal(err, 0);
	f = open_memstream(&bbuf, &blen);
	assert_non_null(f);
	assert_int_equal(ana_json_dumpf(obj, f, JSON_ENCODE_ANY | JSON_REAL_PRECISION(12)), 0);
	fclose(f);
	json_decref(obj);
	if (strcmp(buf, bbuf) != 0)
		fail_msg("streamed %.200s\nbuilt    %.200s", buf, bbuf);
	free(bbuf);
	return buf;
}

static void fill_real(struct ana_jo *o, const void *arg)
{
	ana_jo_real(o, "v", *(const double *)arg);
}

/* jansson's object {"v": @v} at the report's precision. */
static char *jansson_real(double v)
{
	json_t *o = json_object();
	json_object_set_new(o, "v", isfinite(v) ? json_real(v) : json_null());
	char *s = json_dumps(o, JSON_ENCODE_ANY | JSON_REAL_PRECISION(12));
	json_decref(o);
	return s;
}

static void check_real(double v)
{
	char *ours = written(fill_real, &v), *theirs = jansson_real(v);
	if (strcmp(ours, theirs) != 0)
		fail_msg("%.17g: ours %s, jansson %s", v, ours, theirs);
	free(ours);
	free(theirs);
}

static void test_reals(void **state)
{
	(void)state;
	static const double v[] = { 0.0, -0.0, 1.0, -1.0, 7.0, 12345.0, 999999999999.0, -999999999999.0,
				     1e12, -1e12, 1e12 + 1, 123456789012.5, 0.5, 0.1, -0.25, 1.0 / 3, 2.0 / 3,
				     1e-4, 1e-5, 1.5e-7, 1e20, -1e20, 1e100, 1e-100, 1e300, 4.9e-324, 2.2250738585072014e-308,
				     1.7976931348623157e308, 9007199254740992.0, 9007199254740993.0, 18446744073709551615.0,
				     9223372036854775807.0, -9223372036854775808.0, 3.14159265358979, 0.00390625,
				     100.0 / 7, 1e11, 1e11 + 0.5, 36.0, 4.5 };
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		check_real(v[i]);
	uint64_t s = 42;
	for (int i = 0; i < 100000; i++) { /* random bit patterns: every exponent, every mantissa */
		uint64_t bits = ana_rnd(&s);
		double d;
		memcpy(&d, &bits, sizeof(d));
		check_real(d);
		check_real((double)(int64_t)(bits >> (bits & 63))); /* integers of every size */
	}
	static const double nf[] = { NAN, INFINITY, -INFINITY };
	for (size_t i = 0; i < 3; i++) {
		char *ours = written(fill_real, &nf[i]);
		assert_string_equal(ours, "{\"v\": null}");
		free(ours);
	}
}

static void fill_ints(struct ana_jo *o, const void *arg)
{
	(void)arg;
	ana_jo_i64(o, "a", 0);
	ana_jo_i64(o, "b", -1);
	ana_jo_i64(o, "c", INT64_MIN);
	ana_jo_i64(o, "d", INT64_MAX);
	ana_jo_u64(o, "e", 0);
	ana_jo_u64(o, "f", (uint64_t)INT64_MAX + 1);
	ana_jo_u64(o, "g", UINT64_MAX);
	ana_jo_bool(o, "h", true);
	ana_jo_bool(o, "i", false);
	ana_jo_null(o, "j");
}

static void test_integers(void **state)
{
	(void)state;
	json_t *j = json_object();
	json_object_set_new(j, "a", json_integer(0));
	json_object_set_new(j, "b", json_integer(-1));
	json_object_set_new(j, "c", json_integer(INT64_MIN));
	json_object_set_new(j, "d", json_integer(INT64_MAX));
	json_object_set_new(j, "e", ana_json_u64(0));
	json_object_set_new(j, "f", ana_json_u64((uint64_t)INT64_MAX + 1));
	json_object_set_new(j, "g", ana_json_u64(UINT64_MAX));
	json_object_set_new(j, "h", json_true());
	json_object_set_new(j, "i", json_false());
	json_object_set_new(j, "j", json_null());
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_int_equal(ana_json_dumpf(j, f, JSON_ENCODE_ANY | JSON_REAL_PRECISION(12)), 0);
	fclose(f);
	json_decref(j);
	char *ours = written(fill_ints, NULL);
	assert_string_equal(ours, buf);
	assert_non_null(strstr(ours, "\"g\": 18446744073709551615"));
	free(ours);
	free(buf);
}

static void fill_str(struct ana_jo *o, const void *arg)
{
	ana_jo_str(o, "s", arg);
}

static void test_strings(void **state)
{
	(void)state;
	static const char *const s[] = { "", "plain", "quote \" backslash \\ slash /", "tab\tnl\nesc\x1b bel\a",
					 "c1 \xc2\x9b csi", "bidi \xe2\x80\xae override", "caf\xc3\xa9 \xf0\x9f\x94\xa5",
					 "lone \xff byte", "<script>alert(1)</script>" };
	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
		char *ours = written(fill_str, s[i]);
		for (const char *p = ours; *p; p++) /* every non-ASCII byte and control escaped */
			assert_true((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f);
		json_t *o = json_object();
		json_object_set_new(o, "s", ana_json_str(s[i]));
		char *theirs = json_dumps(o, JSON_ENCODE_ANY | JSON_ENSURE_ASCII);
		json_decref(o);
		assert_string_equal(ours, theirs);
		free(theirs);
		free(ours);
	}
}

/* Every byte alone between two letters (ana_jo_str() copies printable
 * ASCII but '"' and '\\' as it is, and hands the rest to jansson), and
 * plain strings about as long as the 16 KiB buffer, after a member that
 * leaves part of it filled: jansson's bytes each time. */
static void test_strings_every_byte(void **state)
{
	(void)state;
	for (int c = 1; c < 256; c++) {
		const char s[] = { 'a', (char)c, 'b', 0 };
		char *ours = written(fill_str, s);
		json_t *o = json_object();
		json_object_set_new(o, "s", ana_json_str(s));
		char *theirs = json_dumps(o, JSON_ENCODE_ANY | JSON_ENSURE_ASCII);
		json_decref(o);
		if (strcmp(ours, theirs) != 0)
			fail_msg("byte 0x%02x: ours %s, jansson %s", c, ours, theirs);
		free(theirs);
		free(ours);
	}
}

static void fill_two_str(struct ana_jo *o, const void *arg)
{
	ana_jo_str(o, "a", "0123456789");
	ana_jo_str(o, "s", arg);
	ana_jo_str(o, "z", "tail");
}

static void test_long_plain_strings(void **state)
{
	(void)state;
	const size_t cap = sizeof(((struct ana_obuf *)0)->buf);
	const size_t lens[] = { cap - 40, cap - 24, cap - 23, cap - 22, cap - 3, cap - 2, cap - 1, cap, cap + 1, 3 * cap };
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		char *s = malloc(lens[i] + 1);
		assert_non_null(s);
		for (size_t k = 0; k < lens[i]; k++)
			s[k] = (char)('a' + k % 26);
		s[lens[i]] = 0;
		char *ours = written(fill_two_str, s);
		json_t *o = json_object();
		json_object_set_new(o, "a", json_string("0123456789"));
		json_object_set_new(o, "s", json_string(s));
		json_object_set_new(o, "z", json_string("tail"));
		char *theirs = json_dumps(o, JSON_ENCODE_ANY | JSON_ENSURE_ASCII | JSON_PRESERVE_ORDER);
		json_decref(o);
		assert_string_equal(ours, theirs);
		free(theirs);
		free(ours);
		free(s);
	}
}

static void fill_many(struct ana_jo *o, const void *arg)
{
	(void)arg;
	char key[32];
	for (int i = 0; i < 20000; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		switch (i % 4) {
		case 0:
			ana_jo_u64(o, key, (uint64_t)i * 1000003u);
			break;
		case 1:
			ana_jo_real(o, key, i / 7.0);
			break;
		case 2:
			ana_jo_str(o, key, "x\xe2\x80\xae");
			break;
		default: {
			struct ana_jo a = ana_jo_child(o, key, '[');
			ana_jo_i64(&a, NULL, 1);
			struct ana_jo in = ana_jo_child(&a, NULL, '{');
			ana_jo_i64(&in, "n", -i);
			ana_jo_close(&in, "}");
			ana_jo_close(&a, "]");
		}
		}
	}
}

static void test_many_members(void **state)
{
	(void)state;
	char *ours = written(fill_many, NULL);
	assert_true(strlen(ours) > 4 * sizeof(((struct ana_obuf *)0)->buf)); /* several flushes */
	json_error_t e;
	json_t *j = json_loads(ours, 0, &e);
	if (!j)
		fail_msg("not JSON: %s at %d", e.text, e.position);
	assert_int_equal(json_object_size(j), 20000);
	char key[32];
	for (int i = 0; i < 20000; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		json_t *v = json_object_get(j, key);
		assert_non_null(v);
		switch (i % 4) {
		case 0:
			assert_int_equal(json_integer_value(v), (json_int_t)i * 1000003);
			break;
		case 1:
			assert_true(fabs(json_number_value(v) - i / 7.0) <= 1e-11 * (i / 7.0 + 1));
			break;
		case 2:
			assert_string_equal(json_string_value(v), "x\xe2\x80\xae");
			break;
		default:
			assert_int_equal(json_integer_value(json_array_get(v, 0)), 1);
			assert_int_equal(json_integer_value(json_object_get(json_array_get(v, 1), "n")), -i);
		}
	}
	json_decref(j);
	free(ours);
}

static void test_write_error(void **state)
{
	(void)state;
	FILE *f = fopen("/dev/full", "w"); /* every write: ENOSPC */
	assert_non_null(f);
	setvbuf(f, NULL, _IONBF, 0);
	struct ana_obuf *b = calloc(1, sizeof(*b));
	assert_non_null(b);
	b->out = f;
	struct ana_jo o = ana_jo_open(b, "{");
	for (int i = 0; i < 5000; i++) /* past the buffer: a flush that fails */
		ana_jo_u64(&o, "key", (uint64_t)i);
	ana_jo_close(&o, "}");
	ana_obuf_flush(b);
	assert_int_equal(b->err, 1);
	free(b);
	fclose(f);
}

/* The buffer's put helpers (the CSV writes through them): characters,
 * strings and printf() text, short and longer than printf's stack copy
 * (256) or the whole buffer, in order across its flushes. */
static void test_obuf_puts_and_printf(void **state)
{
	(void)state;
	char *buf = NULL, *want = NULL;
	size_t len = 0, wlen = 0;
	FILE *f = open_memstream(&buf, &len), *w = open_memstream(&want, &wlen);
	assert_non_null(f);
	assert_non_null(w);
	struct ana_obuf *b = calloc(1, sizeof(*b));
	assert_non_null(b);
	b->out = f;
	char *big = malloc(40001);
	assert_non_null(big);
	for (size_t k = 0; k < 40000; k++)
		big[k] = (char)('a' + k % 26);
	big[40000] = 0;
	for (int i = 0; i < 3000; i++) {
		const size_t n = (size_t)i * 37 % 700; /* 0 .. 699 bytes of it */
		ana_obuf_printf(b, "%d,%.*s;", i, (int)n, big);
		fprintf(w, "%d,%.*s;", i, (int)n, big);
		ana_obuf_putc(b, (char)('A' + i % 26));
		fputc('A' + i % 26, w);
		ana_obuf_puts(b, i % 100 ? "|" : big); /* now and then longer than the buffer */
		fputs(i % 100 ? "|" : big, w);
	}
	ana_obuf_flush(b);
	assert_int_equal(b->err, 0);
	fclose(f);
	fclose(w);
	assert_int_equal(len, wlen);
	assert_memory_equal(buf, want, len);
	free(big);
	free(b);
	free(buf);
	free(want);
}

/* ana_json_row() of every merged and flat row of small.ptz, dumped, is the
 * line the streamed report holds for it. */
static void test_rows_built_equal_streamed(void **state)
{
	(void)state;
	struct ana_result res;
	const struct ana_options ao = { .thread = -1 };
	char err[256];
	assert_int_equal(ana_run(PT_GOLDEN_DIR "/small.ptz", &ao, &res, err, sizeof(err)), 0);
	char *rep = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&rep, &len);
	const struct ana_report_opts ro = { .thread = -1 };
	assert_int_equal(ana_write_json(f, &res, &ro), 0);
	fclose(f);
	int rows = 0;
	for (int flat = 0; flat < 2; flat++) {
		uint32_t n = flat ? res.nnames : res.merged.count;
		for (uint32_t i = flat ? 0 : 1; i < n; i++) {
			const struct ana_agg *a = flat ? &res.by_name[i] : &res.merged.n[i].agg;
			if (!a->count)
				continue;
			json_t *row = flat ? ana_json_row(&res, NULL, NULL, 0, i, a)
					   : ana_json_row(&res, NULL, &res.merged, i, res.merged.n[i].id, a);
			assert_non_null(row);
			char *line = NULL;
			size_t ll = 0;
			FILE *lf = open_memstream(&line, &ll);
			assert_int_equal(ana_json_dumpf(row, lf, JSON_ENCODE_ANY | JSON_REAL_PRECISION(12)), 0);
			fclose(lf);
			json_decref(row);
			if (!flat) { /* the report's merged rows go on with their sketch (merge's input) */
				char *want = NULL;
				line[strlen(line) - 1] = 0; /* the row's closing brace */
				assert_true(asprintf(&want, "%s, \"sketch\": {\"hist\": [", line) > 0);
				free(line);
				line = want;
			}
			if (!strstr(rep, line))
				fail_msg("built row not in the report: %s", line);
			free(line);
			rows++;
		}
	}
	assert_true(rows >= 10);
	free(rep);
	ana_result_free(&res);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reals),
		cmocka_unit_test(test_integers),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_strings_every_byte),
		cmocka_unit_test(test_long_plain_strings),
		cmocka_unit_test(test_many_members),
		cmocka_unit_test(test_write_error),
		cmocka_unit_test(test_obuf_puts_and_printf),
		cmocka_unit_test(test_rows_built_equal_streamed),
	};
	cmocka_set_message_output(CM_OUTPUT_TAP);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
