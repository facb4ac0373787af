/*
 * viewer-export/pfx.h - libptexport: traces for viewers (internal).
 *
 * Perfetto protobuf (ui.perfetto.dev), Chrome JSON (chrome://tracing,
 * speedscope) and folded stacks (flamegraph.pl, inferno, speedscope).
 * Timestamps are CLOCK_MONOTONIC ns from pt_reader_ticks_to_ns(), the one
 * conversion every consumer shares.
 */
#ifndef PTZ_PFX_H
#define PTZ_PFX_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analyzer/ana.h"
#include "analyzer/ana_compare.h"

struct pfx_opts {
	uint64_t since_ns, until_ns; /* relative to the trace start; until 0 = no limit */
	/* Called for file @file of the export once its records are written, with the reader that read them
	 * (its problems and pt_trace_info's damage counters, what it met decoding every chunk of the
	 * threads in the thread table and the meta chunks), before it is closed: a caller reports the
	 * damage the export met instead of reading the trace again. Not called for a file whose export
	 * failed. NULL: not called. */
	void (*file_read)(void *ctx, size_t file, struct pt_reader *rd);
	void *file_read_ctx;
};

/* Each returns 0, or a negative error with a message in @err. */
int pfx_write_perfetto(const char *trace_path, FILE *out, const struct pfx_opts *o, char *err, size_t errlen);
int pfx_write_chrome(const char *trace_path, FILE *out, const struct pfx_opts *o, char *err, size_t errlen);
/*
 * The @n >= 1 traces @paths (the processes of one job: MPI ranks, a
 * SLURM array, a service's workers) as one export, one process each, in
 * the order given (doc/export.md §6): each file's sections, counters, GPU
 * and async tracks exactly as its own export writes them, under its own
 * pid (made up, PFX_SET_PID_BASE + its index, when an earlier file has
 * that pid); timestamps on CLOCK_MONOTONIC when every file was recorded
 * on one host, else on the monotonic axis of the file that started first,
 * each file placed there by its header's realtime - monotonic offset
 * (struct pfx_set_place). @o's window applies to each file from
 * its own start. An unreadable file fails the export with a message that
 * names it. The one-trace functions above are these with @n = 1, byte for
 * byte.
 */
int pfx_write_perfetto_set(const char *const *paths, size_t n, FILE *out, const struct pfx_opts *o, char *err,
			   size_t errlen);
int pfx_write_chrome_set(const char *const *paths, size_t n, FILE *out, const struct pfx_opts *o, char *err,
			 size_t errlen);
/* Folded stacks from an analyzed trace: "a;b;c <self ns>" per call path. */
int pfx_write_folded(const struct ana_result *res, FILE *out, int thread);
/* Differential folded stacks of a comparison, flamegraph.pl's difffolded format: "a;b;c <base self ns>
 * <new self ns>" per call path of @c (ana_compare() of @base and @nw). 0, or -ENOMEM / -errno. */
int pfx_write_folded_diff(const struct ana_result *base, const struct ana_result *nw, const struct ana_cmp *c,
			  FILE *out);

#endif /* PTZ_PFX_H */
