/*
 * tests/unit/flops_cli.c - print pt_flops_einsum(SPEC, DIMS), for
 * tests/unit/check_einsum_numpy.py.
 *
 * Usage: flops-cli SPEC [DIM...]
 *   DIMs are the sizes of the input subscripts in order, e.g.
 *   flops-cli 'ik,ijk,jk->' I K I J K J K; with no DIM, dims is NULL.
 * Prints the count in decimal and a newline (0 = malformed or inconsistent,
 * as pt_flops_einsum() reports it) and exits 0; exits 2 on a usage error
 * (missing SPEC, a DIM that is not a decimal int64, more than 256 DIMs).
 */
#include <errno.h>    /* errno, ERANGE */
#include <inttypes.h> /* PRIu64 */
#include <stdint.h>   /* int64_t, uint64_t */
#include <stdio.h>    /* printf, fprintf */
#include <stdlib.h>   /* strtoll */

#include "ptz/recorder.h"

#define MAX_DIMS 256

int main(int argc, char **argv)
{
	int64_t dims[MAX_DIMS];
	if (argc < 2 || argc - 2 > MAX_DIMS) {
		fprintf(stderr, "usage: flops-cli SPEC [DIM...] (at most %d DIMs)\n", MAX_DIMS);
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		char *end;
		errno = 0;
		const long long v = strtoll(argv[i], &end, 10);
		if (errno == ERANGE || end == argv[i] || *end) {
			fprintf(stderr, "flops-cli: %s: not a decimal int64\n", argv[i]);
			return 2;
		}
		dims[i - 2] = (int64_t)v;
	}
	printf("%" PRIu64 "\n", pt_flops_einsum(argv[1], argc > 2 ? dims : NULL));
	return 0;
}
