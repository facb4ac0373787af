/*
 * trace-format/fmt_errors.c - pt_strerror() for both error ranges.
 */
#include <string.h>

#include "common/compiler.h"
#include "ptz/errors.h"

const char *pt_strerror(int err)
{
	static const char *const msgs[] = {
		[PT_ECORRUPT - PT_EBASE] = "corrupt trace data",
		[PT_EVERSION - PT_EBASE] = "unsupported trace format version",
		[PT_ETRUNCATED - PT_EBASE] = "trace truncated",
		[PT_ECHECKSUM - PT_EBASE] = "checksum mismatch",
		[PT_ETOOBIG - PT_EBASE] = "length out of bounds",
		[PT_ESTATE - PT_EBASE] = "call made in the wrong state",
		[PT_ESET - PT_EBASE] = "not the parts of one rotated trace",
	};
	if (err < 0)
		err = -err;
	if (err == 0)
		return "success";
	if (err >= PT_EBASE && err < PT_ELAST)
		return msgs[err - PT_EBASE];
	if (err < PT_EBASE) {
		/* strerror() is not thread-safe; strerrordesc_np (glibc 2.32) is */
		const char *s = strerrordesc_np(err);
		return s ? s : "unknown error";
	}
	return "unknown error";
}
