/*
 * tests/unit/test_version.c - ptz/version.h against meson's version.
 *
 * Invariants covered:
 *  - PT_VERSION_STRING is meson.project_version(), and MAJOR/MINOR/PATCH
 *    are its three parts; PT_VERSION_NUMBER is their PT_VERSION_ENCODE();
 *  - PT_SOVERSION is the soname meson gives libptz.so;
 *  - the libptz a program runs with says the same at run time
 *    (pt_version(), pt_version_string()), and writes it into a trace's
 *    header as the recorder version.
 * Built with -DPT_MESON_VERSION and -DPT_MESON_SOVERSION (tests/meson.build).
 */
#include "test_util.h"

#include "ptz/recorder.h"
#include "ptz/version.h"

static void test_version_h_matches_meson(void **state)
{
	(void)state;
	assert_string_equal(PT_VERSION_STRING, PT_MESON_VERSION);
	int major = -1, minor = -1, patch = -1;
	assert_int_equal(sscanf(PT_MESON_VERSION, "%d.%d.%d", &major, &minor, &patch), 3);
	assert_int_equal(PT_VERSION_MAJOR, major);
	assert_int_equal(PT_VERSION_MINOR, minor);
	assert_int_equal(PT_VERSION_PATCH, patch);
	assert_int_equal(PT_VERSION_NUMBER, major * 10000 + minor * 100 + patch);
	assert_int_equal(PT_SOVERSION, PT_MESON_SOVERSION);
#if PT_VERSION_NUMBER != PT_VERSION_ENCODE(PT_VERSION_MAJOR, PT_VERSION_MINOR, PT_VERSION_PATCH)
	fail_msg("PT_VERSION_NUMBER must be usable in #if");
#endif
}

static void test_pt_version_runtime_matches_header(void **state)
{
	(void)state;
	assert_int_equal(pt_version(), PT_VERSION_NUMBER);
	assert_non_null(pt_version_string());
	assert_string_equal(pt_version_string(), PT_VERSION_STRING);
}

static void test_trace_recorder_version_is_pt_version(void **state)
{
	(void)state;
	char *path = tu_path("version.ptz");
	pt_recorder *r = pt_open(path, NULL, 0);
	assert_non_null(r);
	assert_int_equal(pt_close(r), 0);
	struct pt_reader *rd = NULL;
	assert_int_equal(pt_reader_open(path, &rd), 0);
	assert_string_equal(pt_reader_info(rd)->recorder_version, PT_VERSION_STRING);
	pt_reader_close(rd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_version_h_matches_meson),
		cmocka_unit_test(test_pt_version_runtime_matches_header),
		cmocka_unit_test(test_trace_recorder_version_is_pt_version),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
