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
};

/* Each returns 0, or a negative error with a message in @err. */
int pfx_write_perfetto(const char *trace_path, FILE *out, const struct pfx_opts *o, char *err, size_t errlen);
int pfx_write_chrome(const char *trace_path, FILE *out, const struct pfx_opts *o, char *err, size_t errlen);
/* Folded stacks from an analyzed trace: "a;b;c <self ns>" per call path. */
int pfx_write_folded(const struct ana_result *res, FILE *out, int thread);
/* Differential folded stacks of a comparison, flamegraph.pl's difffolded format: "a;b;c <base self ns>
 * <new self ns>" per call path of @c (ana_compare() of @base and @nw). 0, or -ENOMEM / -errno. */
int pfx_write_folded_diff(const struct ana_result *base, const struct ana_result *nw, const struct ana_cmp *c,
			  FILE *out);

#endif /* PTZ_PFX_H */
