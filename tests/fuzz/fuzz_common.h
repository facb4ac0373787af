/*
 * tests/fuzz/fuzz_common.h - what the libFuzzer targets of tests/fuzz share
 * (tests/fuzz/README.md).
 *
 * Inputs stay in memory: a trace is written to one memfd, created once, and
 * read through its /proc/self/fd path by the same entry points the CLI uses
 * (pt_reader_open, ana_run, pfx_write_*); outputs go to a stdio stream that
 * discards what it is given without a system call. Per input the cost is a
 * ftruncate and a pwrite: no file is created, nothing reaches a disk.
 */
#ifndef PTZ_FUZZ_COMMON_H
#define PTZ_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A stream that discards its output (opened once, never closed). */
FILE *fz_sink(void);

/*
 * fz_each_form() - Calls @fn with the path of a file holding @data, then,
 * if fz_fix_checksums() changes a copy of it, with the path of the
 * repaired copy: checksums guard every header and payload (doc/trace-format.md
 * §2, §3), so without the repair almost every mutation would stop at a
 * checksum check and never reach the decoder, the analyzer or the exports.
 * Aborts if the memfd cannot be written (not a finding of the code under test).
 */
void fz_each_form(const uint8_t *data, size_t size, void (*fn)(const char *path));

/*
 * fz_choice() - A number fixed by the current input (a hash of its bytes,
 * the same for both forms): a target that has several variants of its
 * work (options, windows, one output of several) runs the one it selects,
 * so that an input always reproduces the same run while mutations spread
 * over all of them. Running every variant on every input would divide the
 * executions per second by their number.
 */
uint64_t fz_choice(void);

/* The span from the first to the last tick that the event chunk headers of
 * the trace at @path announce, in ns (found without decoding a record); 0 if
 * none. The targets cut their --since/--until window from it. */
uint64_t fz_header_span_ns(const char *path);

/*
 * fz_fix_checksums() - Makes the checksums of the trace in @b hold: each
 * chunk that starts with the magic is delimited by the next magic (a stored
 * payload's sizes follow), and the header and payload checksums and the
 * committed length are recomputed. Returns 1 if it changed anything.
 */
int fz_fix_checksums(uint8_t *b, size_t n);

#endif /* PTZ_FUZZ_COMMON_H */
