/*
 * examples/gpu/cuda_check.h - CK(call): a CUDA runtime call that fails
 * ends the program with exit status 1, naming the program (PROG, defined
 * before this header), the source line, the call and the error. Shared by
 * examples/gpu/led_optimizer_gpu.cu and bench/gpu_check.cu.
 */
#ifndef PTZ_CUDA_CHECK_H
#define PTZ_CUDA_CHECK_H

#include <cstdio>  /* fprintf */
#include <cstdlib> /* exit */

#include <cuda_runtime.h> /* cudaError_t, cudaGetErrorString, cudaGetErrorName */

static inline void die_cuda(cudaError_t e, const char *what, int line)
{
	fprintf(stderr, PROG ": line %d: %s: %s (%s)\n", line, what, cudaGetErrorString(e), cudaGetErrorName(e));
	exit(1);
}
#define CK(call)                                         \
	do {                                             \
		const cudaError_t ck_e_ = (call);        \
		if (ck_e_ != cudaSuccess)                \
			die_cuda(ck_e_, #call, __LINE__); \
	} while (0)

#endif /* PTZ_CUDA_CHECK_H */
