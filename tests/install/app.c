/* A user program built only from the installed headers and ptz.pc. */
#include <ptz/recorder.h>
#include <ptz/version.h> /* generated, installed with the others */
#include <stdio.h>

int main(int argc, char **argv)
{
	if (pt_version() != PT_VERSION_NUMBER) { /* the library installed with these headers */
		fprintf(stderr, "libptz %s, headers %s\n", pt_version_string(), PT_VERSION_STRING);
		return 1;
	}
	pt_recorder *r = pt_open(argc > 1 ? argv[1] : "app.ptz", NULL, 0);
	if (!r) {
		perror("pt_open");
		return 1;
	}
	for (int i = 0; i < 1000; i++) {
		PT_SECTION(r, "outer", .flops = pt_flops_matmul(2, 2, 2)) {
			PT_SCOPE(r, "inner");
		}
	}
	struct pt_stats_info st;
	pt_stats(r, &st, sizeof(st));
	return pt_close(r) == 0 ? 0 : 1;
}
