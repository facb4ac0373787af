/*
 * tests/format/gen_flight_trace.c OUT.ptz - a flight-recorder trace
 * (doc/trace-format.md §10) that wrapped a 1 MiB area several times, for
 * the spec reader and the exports; built with -DGEN_SNAPSHOT it writes
 * instead a snapshot of such a recorder (a window file) to OUT.ptz.
 * Sections nest two deep, so a window may begin with ENDs of sections
 * begun before it; one section is left open at the cut.
 */
#include <stdio.h>
#include <string.h>

#include "ptz/recorder.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s OUT.ptz\n", argv[0]);
		return 2;
	}
	char path[4200];
#ifdef GEN_SNAPSHOT
	snprintf(path, sizeof(path), "%s.flight", argv[1]);
#else
	snprintf(path, sizeof(path), "%s", argv[1]);
#endif
	struct pt_options o = { .mode = PT_MODE_FLIGHT, .flight_bytes = 1u << 20, .ring_bytes = 64u << 20 };
	pt_recorder *r = pt_open(path, &o, sizeof(o));
	if (!r) {
		perror("pt_open");
		return 1;
	}
	uint32_t outer = pt_intern(r, "outer"), inner = pt_intern(r, "inner"), n = pt_intern(r, "n");
	for (int64_t i = 0; i < 1500000; i++) {
		pt_begin(r, outer);
		pt_counter(r, n, i);
		pt_begin(r, inner);
		pt_metric(r, PT_METRIC_READ_BYTES, (uint64_t)i & 4095);
		pt_end(r, inner);
		pt_end(r, outer);
		if (i % 100000 == 99999)
			pt_flush(r); /* no ring overflow on a slow machine: the open section below is kept */
	}
	pt_begin(r, outer); /* open at the cut */
#ifdef GEN_SNAPSHOT
	if (pt_snapshot(r, argv[1]) != 0) {
		fprintf(stderr, "pt_snapshot failed\n");
		return 1;
	}
#endif
	int rc = pt_close(r);
#ifdef GEN_SNAPSHOT
	remove(path);
#endif
	return rc ? 1 : 0;
}
