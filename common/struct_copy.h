/*
 * common/struct_copy.h - copy a caller's size-versioned struct in or out
 * (internal). The public structs a caller allocates travel with their
 * size, sizeof as the caller compiled it (ptz/recorder.h, "Size-versioned
 * structs"); fields are only ever appended, so every older layout is a
 * prefix of the library's. These are Linux's copy_struct_from_user() and
 * the copy-out of sched_getattr(), for memory the caller owns.
 */
#ifndef PTZ_COMMON_STRUCT_COPY_H
#define PTZ_COMMON_STRUCT_COPY_H

#include <errno.h>  /* E2BIG */
#include <stddef.h> /* size_t */
#include <string.h> /* memcpy, memset */

/**
 * copy_struct_in() - Read the caller's input struct into the library's.
 * @dst:       the library's struct; @dst_bytes = sizeof(*dst).
 * @src:       the caller's struct, @src_bytes long; may be NULL when
 *             @src_bytes is 0.
 *
 * The fields a smaller caller struct lacks read as zero, which every
 * versioned input struct defines as "the default". A larger caller struct
 * (built against newer headers) is accepted only if all the bytes this
 * library does not know are zero: a non-zero one asks for something this
 * library cannot do, and dropping it silently would lie to the caller.
 * Return: 0, or -E2BIG (then @dst is left unchanged).
 */
static inline int copy_struct_in(void *dst, size_t dst_bytes, const void *src, size_t src_bytes)
{
	const unsigned char *s = src;
	for (size_t i = dst_bytes; i < src_bytes; i++)
		if (s[i])
			return -E2BIG;
	size_t n = src_bytes < dst_bytes ? src_bytes : dst_bytes;
	if (n)
		memcpy(dst, src, n);
	memset((unsigned char *)dst + n, 0, dst_bytes - n);
	return 0;
}

/**
 * copy_struct_out() - Write the library's output struct into the caller's.
 * @dst:       the caller's struct, @dst_bytes long; may be NULL when
 *             @dst_bytes is 0.
 * @src:       the library's struct; @src_bytes = sizeof(*src).
 *
 * Writes at most @dst_bytes: an older caller's struct is never overrun.
 * The bytes of a larger caller struct past @src_bytes are zeroed, so the
 * fields this library does not know read as 0.
 */
static inline void copy_struct_out(void *dst, size_t dst_bytes, const void *src, size_t src_bytes)
{
	size_t n = src_bytes < dst_bytes ? src_bytes : dst_bytes;
	if (n)
		memcpy(dst, src, n);
	if (dst_bytes > n)
		memset((unsigned char *)dst + n, 0, dst_bytes - n);
}

#endif /* PTZ_COMMON_STRUCT_COPY_H */
