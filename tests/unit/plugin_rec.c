/*
 * tests/unit/plugin_rec.c - a plugin that links libptz, for
 * test_plugin_unload.c: the host dlopen()s it, records through it and
 * dlclose()s it, many times. Built twice: linking the shared libptz, and
 * with libptz.a inside it.
 */
#include <errno.h>
#include <string.h>

#include "ptz/format.h"
#include "ptz/recorder.h"

#define PLUGIN_API __attribute__((visibility("default")))

PLUGIN_API int plugin_record(const char *mode, const char *path, int n, void **handle);
PLUGIN_API long plugin_count(const char *path, const char *name);

/*
 * Records @n sections named "plugin-work". @mode "close": into a recorder
 * opened at @path and closed before returning; "open": into *@handle,
 * opened at @path when NULL and left open (n < 0: closes it); "env": into
 * pt_default() (PTZ_TRACE).
 * Return: 0, or an errno value.
 */
int plugin_record(const char *mode, const char *path, int n, void **handle)
{
	pt_recorder *r;
	if (strcmp(mode, "env") == 0) {
		r = pt_default();
	} else if (strcmp(mode, "open") == 0) {
		if (!*handle)
			*handle = pt_open(path, NULL, 0);
		r = *handle;
		if (r && n < 0) {
			*handle = NULL;
			return pt_close(r) ? EIO : 0;
		}
	} else {
		r = pt_open(path, NULL, 0);
	}
	if (!r)
		return errno ? errno : EINVAL;
	uint32_t id = pt_intern(r, "plugin-work");
	for (int i = 0; i < n; i++) {
		pt_begin(r, id);
		pt_end(r, id);
	}
	if (strcmp(mode, "close") == 0)
		return pt_close(r) ? EIO : 0;
	return 0;
}

/* The number of BEGIN records of sections named @name in the trace at
 * @path; -1 if it cannot be read or has a damaged region. */
long plugin_count(const char *path, const char *name)
{
	struct pt_reader *rd;
	if (pt_reader_open(path, &rd) != 0) {
		pt_reader_close(rd);
		return -1;
	}
	uint32_t want = 0;
	for (uint32_t id = 1; id <= pt_reader_max_string_id(rd); id++) {
		const char *s = pt_reader_string(rd, id, NULL);
		if (s && strcmp(s, name) == 0)
			want = id;
	}
	long n = 0;
	struct pt_chunk_info ci;
	struct pt_record rec;
	while (pt_reader_next_chunk(rd, PT_READER_ALL_CHUNKS, &ci, sizeof(ci)) == 1)
		while (pt_reader_next_record(rd, &rec, sizeof(rec)) == 1)
			if (rec.kind == PT_REC_BEGIN && rec.id == want)
				n++;
	if (pt_reader_problem_count(rd))
		n = -1;
	pt_reader_close(rd);
	return n;
}
