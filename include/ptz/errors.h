/*
 * ptz/errors.h - error codes shared by every ptz library.
 *
 * Introduction
 * ------------
 * Functions that can fail return an int: 0 (or a count) on success,
 * -errno for an operating-system failure, and -PT_E* for a failure that
 * belongs to ptz itself. PT_E* values start at 1024 so the two ranges never
 * overlap (the convention of lttng-ust and apk-tools). pt_strerror() names
 * both ranges.
 */
#ifndef PTZ_ERRORS_H
#define PTZ_ERRORS_H

#ifdef __cplusplus
extern "C" {
#endif

#ifndef PT_API
#define PT_API __attribute__((visibility("default")))
#endif

/* ==== Types ==== */

/** enum pt_error - ptz's own error codes, returned negated. */
enum pt_error {
	PT_EBASE = 1024,
	PT_ECORRUPT = 1024,   /* a structure in the file failed validation */
	PT_EVERSION = 1025,   /* the file's major version is not readable here */
	PT_ETRUNCATED = 1026, /* the file ends inside a structure */
	PT_ECHECKSUM = 1027,  /* XXH3 checksum mismatch */
	PT_ETOOBIG = 1028,    /* a length exceeds the format's documented bound */
	PT_ESTATE = 1029,     /* call made in the wrong state (e.g. no current chunk) */
	PT_ESET = 1030,       /* since 0.4.0: files given as one rotated trace are not
			       * parts of one run (pt_reader_open_set()) */
	PT_ELAST = 1031
};

/**
 * pt_strerror() - Describe an error code.
 * @err: a return value of a ptz function: 0, -errno or -PT_E*; the sign is ignored.
 *
 * Context: any thread, async-signal-safe (returns a static string).
 * Return: a static, NUL-terminated English description; never NULL.
 */
PT_API const char *pt_strerror(int err);

#ifdef __cplusplus
}
#endif
#endif /* PTZ_ERRORS_H */
