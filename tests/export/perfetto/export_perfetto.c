/*
 * tests/export/perfetto/export_perfetto.c - test driver: export one trace
 * with pfx_write_perfetto(), as `ptanalyze export --perfetto` would.
 *
 *   export-perfetto TRACE OUT.pftrace [SINCE_NS [UNTIL_NS]]
 *
 * Exit 0 on success, 1 with "export-perfetto: TRACE: message" on failure.
 */
#include <stdio.h>
#include <stdlib.h>

#include "viewer-export/pfx.h"

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: export-perfetto TRACE OUT [SINCE_NS [UNTIL_NS]]\n");
		return 2;
	}
	struct pfx_opts o = { .since_ns = 0 };
	if (argc > 3)
		o.since_ns = strtoull(argv[3], NULL, 10);
	if (argc > 4)
		o.until_ns = strtoull(argv[4], NULL, 10);
	FILE *f = fopen(argv[2], "wb");
	if (!f) {
		perror(argv[2]);
		return 1;
	}
	char err[512];
	int rc = pfx_write_perfetto(argv[1], f, &o, err, sizeof(err));
	if (fclose(f) && !rc) {
		perror(argv[2]);
		return 1;
	}
	if (rc) {
		fprintf(stderr, "export-perfetto: %s: %s\n", argv[1], err);
		return 1;
	}
	return 0;
}
