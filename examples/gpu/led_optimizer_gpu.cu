/*
 * examples/gpu/led_optimizer_gpu.cu - the LED optimizer of
 * examples/led_optimizer.c on a CUDA GPU, instrumented with ptz GPU sections.
 *
 * The problem is the same: a wall of n LEDs lights m pixels through A (m x n,
 * dense, column major, random positive, the same fixed seed); for every frame
 * b find x >= 0 minimizing ||A x - b||^2 by projected gradient descent on the
 * normal equations. The data are generated exactly as the CPU version does.
 *
 * Streams and threads: the main thread uploads A and computes AtA = A^T A on
 * its own stream. Then --threads worker threads take batches of F frames
 * round-robin; each owns two non-blocking streams:
 *   copy stream     uploads the NEXT batch's B while this one is computed
 *                   (double buffer; CUDA events order the reuse of a buffer)
 *   compute stream  Atb, the iterations and the download of X
 * and waits for its batch's X at the end of the batch (an application would
 * hand the frame to the LEDs there).
 *
 * Sections (GPU sections, pt_gpu_begin()/pt_gpu_end(), time both the host
 * call and the GPU work queued on their stream; CPU sections time the host):
 *   upload A         GPU, main stream      H2D copy of A          transfer H2D
 *   precompute AtA   GPU, main stream      AtA = A^T A (GEMM)
 *   upload B         GPU, copy stream      H2D copy of a batch    transfer H2D
 *   frame batch      CPU, per batch, holds the sections below (and the
 *                    upload of the next batch):
 *     Atb            GPU  AtB = A^T B (GEMM)
 *     zero X         GPU  cudaMemsetAsync of X
 *     iterations     GPU  holds, per iteration:
 *       gradient     GPU  D2D copy G = AtB (transfer D2D), G = AtA X - G
 *                         (GEMM, beta = -1), then g = 0 where x = 0 and g > 0
 *       step size    GPU  H = AtA G (GEMM); per frame k: num = g.g, den = g.h,
 *                         alpha = num / den (one block per frame)
 *       project      GPU  X = max(0, X - G diag(alpha))
 *     download X     GPU  D2H copy of the batch's X               transfer D2H
 *     wait result    CPU  cudaStreamSynchronize of the compute stream
 *
 * FLOP model: GEMMs count 2*m*n*k (pt_flops_matmul); the kernels written here
 * count one FLOP per +, -, *, /; max(0, .) and the masking are comparisons.
 * On the GPU the step-size denominator g^T AtA g is computed as a GEMM
 * followed by a dot product (2 n^2 F + 2 n F FLOPs), not as the CPU version's
 * three-operand contraction (3 n^2 F): the counts follow what is computed.
 *   precompute AtA  2 n n m
 *   Atb             2 n F m
 *   gradient        2 n n F
 *   step size       2 n n F + 2 n F (g.g) + 2 n F (g.h) + F (divisions)
 *   project         2 n F
 * Byte model (compulsory device-memory traffic, each operand once, 8 bytes a
 * double):
 *   precompute AtA  reads A (m n)                   writes AtA (n n)
 *   Atb             reads A (m n) + B (m F)         writes AtB (n F)
 *   zero X                                          writes X (n F)
 *   gradient        reads AtA (n n), X, AtB (n F)   writes G (n F)
 *   step size       reads AtA (n n), G (n F) for the GEMM, G and H (n F each)
 *                   for the dots                    writes H (n F), alpha (F)
 *   project         reads X, G (n F each), alpha (F)   writes X (n F)
 * Copies carry transfers (pt_transfer), not read/written bytes.
 *
 * Independent totals: the program adds the same quantities, written as plain
 * formulas of its own dimensions, into per-thread sums and prints, last:
 *   led_optimizer_gpu: total_flops=N total_read_bytes=N total_written_bytes=N sections=N
 * preceded by
 *   led_optimizer_gpu: total_h2d_bytes=N total_d2h_bytes=N total_d2d_bytes=N gpu_sections=N
 *   led_optimizer_gpu: recorder lost_records=N lost_sections=N gpu_state=N
 *                      gpu_launched=N gpu_ranges=N gpu_dropped=N gpu_early_starts=N trace=PATH
 * examples/gpu/test_led_optimizer_gpu.py checks the trace's report against
 * them.
 *
 * GEMMs use cuBLAS when the build found it (PTZ_HAVE_CUBLAS), else a simple
 * kernel of this file (one thread per element of C).
 *
 * Failure behaviour: no CUDA device (cudaGetDeviceCount fails or finds none)
 * prints a message and exits 77, the code meson test reports as skipped
 * (--check-device does only that check and exits 0 when a device is there).
 * A CUDA or cuBLAS error, a recorder that cannot be opened, a bad option or a
 * failed allocation exit 1 (2 for usage) with a message on stderr.
 */
#include <cerrno>    /* errno */
#include <cinttypes> /* PRIu64 */
#include <cmath>     /* sqrt */
#include <cstdint>   /* uint64_t */
#include <cstdio>    /* printf */
#include <cstdlib>   /* malloc, strtol */
#include <cstring>   /* strcmp, strerror */
#include <ctime>     /* clock_gettime */
#include <getopt.h>  /* getopt_long */
#include <pthread.h> /* workers */

#include <cuda_runtime.h> /* streams, events, copies, kernels */
#ifdef PTZ_HAVE_CUBLAS
#include <cublas_v2.h> /* cublasDgemm */
#endif

#include "ptz/recorder.h" /* the public API only */

#include "../example_util.h" /* parse_pos, now_s */

#define PROG "led_optimizer_gpu"
#define SEED 0x1ed0b7a5eedULL
#define MAX_THREADS 64
#define EXIT_SKIP 77 /* meson test: skipped */

/* ------------------------------------------------------------- errors */

#include "cuda_check.h" /* CK */

#ifdef PTZ_HAVE_CUBLAS
#define CKB(call)                                                                                    \
	do {                                                                                         \
		const cublasStatus_t ckb_s_ = (call);                                                \
		if (ckb_s_ != CUBLAS_STATUS_SUCCESS) {                                               \
			fprintf(stderr, PROG ": line %d: %s: cuBLAS status %d\n", __LINE__, #call, \
				(int)ckb_s_);                                                        \
			exit(1);                                                                     \
		}                                                                                    \
	} while (0)
#endif

/* ------------------------------------------------------------- settings */

struct cfg {
	int m, n;          /* pixels, LEDs */
	int frames, batch; /* frames in all; frames solved together (F) */
	int iterations;    /* per batch */
	int threads;       /* worker threads, two streams each */
	const char *trace;
};

/* Running sums kept by the program itself, independently of the trace. */
struct totals {
	uint64_t flops, read_bytes, written_bytes, sections;
	uint64_t h2d_bytes, d2h_bytes, d2d_bytes, gpu_sections;
};

static void tally(struct totals *t, uint64_t flops, uint64_t read_bytes, uint64_t written_bytes)
{
	t->flops += flops;
	t->read_bytes += read_bytes;
	t->written_bytes += written_bytes;
	t->sections++;
}

static void add_totals(struct totals *to, const struct totals *from)
{
	to->flops += from->flops;
	to->read_bytes += from->read_bytes;
	to->written_bytes += from->written_bytes;
	to->sections += from->sections;
	to->h2d_bytes += from->h2d_bytes;
	to->d2h_bytes += from->d2h_bytes;
	to->d2d_bytes += from->d2d_bytes;
	to->gpu_sections += from->gpu_sections;
}

/* ------------------------------------------------------------- section ids */

/* Interned once in main(); ids are process-global. */
struct ids {
	uint32_t upload_a, precompute, upload_b, batch, atb, zero_x, iterations, gradient, step, project,
		download_x, wait;
};

/* A GPU section with its metrics: the metrics go to the section just opened. */
static void gpu_begin(pt_recorder *r, uint32_t id, cudaStream_t s, uint64_t flops, uint64_t rd, uint64_t wr,
		      struct totals *t)
{
	pt_gpu_begin(r, id, (void *)s);
	if (flops)
		pt_metric(r, PT_METRIC_FLOPS, flops);
	if (rd)
		pt_metric(r, PT_METRIC_READ_BYTES, rd);
	if (wr)
		pt_metric(r, PT_METRIC_WRITTEN_BYTES, wr);
	t->gpu_sections++;
}

static void gpu_end(pt_recorder *r, uint32_t id, cudaStream_t s) { pt_gpu_end(r, id, (void *)s); }

/* ------------------------------------------------------------- data */

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* uniform in (0, 1] */
static double unit(uint64_t *s) { return (double)((splitmix64(s) >> 11) + 1) * 0x1.0p-53; }

/* ------------------------------------------------------------- kernels */

#ifndef PTZ_HAVE_CUBLAS
/* C (rows x cols, ldc) = alpha op(A) B + beta C, column major; op(A) is A
 * (rows x k, lda) or, with trans_a, A^T where A is k x rows. One thread per
 * element of C: simple, not fast. */
__global__ void gemm_kernel(int trans_a, int rows, int cols, int k, double alpha, const double *A, int lda,
			    const double *B, int ldb, double beta, double *C, int ldc)
{
	const int i = blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.y;
	if (i >= rows || j >= cols)
		return;
	double s = 0.0;
	if (trans_a)
		for (int p = 0; p < k; p++)
			s += A[(size_t)i * lda + p] * B[(size_t)j * ldb + p];
	else
		for (int p = 0; p < k; p++)
			s += A[(size_t)p * lda + i] * B[(size_t)j * ldb + p];
	double *c = &C[(size_t)j * ldc + i];
	*c = alpha * s + (beta == 0.0 ? 0.0 : beta * *c);
}
#endif

/* g = 0 where x = 0 and g > 0: those components would be projected straight
 * back (comparisons only). */
__global__ void mask_kernel(size_t count, const double *X, double *G)
{
	for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < count; e += (size_t)gridDim.x * blockDim.x)
		if (X[e] <= 0.0 && G[e] > 0.0)
			G[e] = 0.0;
}

#define STEP_THREADS 256
/* One block per frame k: num = g.g, den = g.h, alpha_k = num / den. */
__global__ void step_kernel(int n, const double *G, const double *H, double *alpha)
{
	__shared__ double sn[STEP_THREADS], sd[STEP_THREADS];
	const int k = blockIdx.x;
	const double *g = G + (size_t)k * n, *h = H + (size_t)k * n;
	double num = 0.0, den = 0.0;
	for (int i = threadIdx.x; i < n; i += blockDim.x) {
		num += g[i] * g[i];
		den += g[i] * h[i];
	}
	sn[threadIdx.x] = num;
	sd[threadIdx.x] = den;
	__syncthreads();
	for (int w = blockDim.x / 2; w > 0; w /= 2) {
		if (threadIdx.x < w) {
			sn[threadIdx.x] += sn[threadIdx.x + w];
			sd[threadIdx.x] += sd[threadIdx.x + w];
		}
		__syncthreads();
	}
	if (threadIdx.x == 0)
		alpha[k] = sd[0] > 0.0 ? sn[0] / sd[0] : 0.0;
}

/* X = max(0, X - G diag(alpha)) */
__global__ void project_kernel(int n, size_t count, const double *G, const double *alpha, double *X)
{
	for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < count;
	     e += (size_t)gridDim.x * blockDim.x) {
		const double v = X[e] - alpha[e / (size_t)n] * G[e];
		X[e] = v > 0.0 ? v : 0.0;
	}
}

static unsigned grid_for(size_t count)
{
	const size_t g = (count + 255) / 256;
	return g > 1024 ? 1024u : (unsigned)g;
}

/* ------------------------------------------------------------- GEMM */

struct blas {
	cudaStream_t s;
#ifdef PTZ_HAVE_CUBLAS
	cublasHandle_t h;
#endif
};

static void blas_init(struct blas *b, cudaStream_t s)
{
	b->s = s;
#ifdef PTZ_HAVE_CUBLAS
	CKB(cublasCreate(&b->h));
	CKB(cublasSetStream(b->h, s));
#endif
}

static void blas_fini(struct blas *b)
{
#ifdef PTZ_HAVE_CUBLAS
	cublasDestroy(b->h);
#else
	(void)b;
#endif
}

/* C (rows x cols) = alpha op(A) B + beta C on b->s; see gemm_kernel. */
static void gemm(struct blas *b, int trans_a, int rows, int cols, int k, double alpha, const double *A, int lda,
		 const double *B, int ldb, double beta, double *C, int ldc)
{
#ifdef PTZ_HAVE_CUBLAS
	CKB(cublasDgemm(b->h, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, rows, cols, k, &alpha, A, lda, B,
			ldb, &beta, C, ldc));
#else
	const dim3 grid((unsigned)((rows + 127) / 128), (unsigned)cols);
	gemm_kernel<<<grid, 128, 0, b->s>>>(trans_a, rows, cols, k, alpha, A, lda, B, ldb, beta, C, ldc);
	CK(cudaGetLastError());
#endif
}

/* ------------------------------------------------------------- shared state */

struct problem {
	struct cfg c;
	struct ids id;
	pt_recorder *r;
	double *h_B, *h_X;          /* pinned host: m x frames, n x frames */
	const double *d_A, *d_AtA; /* device, read-only once computed */
};

struct worker {
	const struct problem *p;
	int index;
	struct totals tot;
	pthread_t tid;
};

static void upload_b(const struct problem *p, struct worker *w, cudaStream_t s, double *d_dst, int f0, int F)
{
	const size_t bytes = (size_t)p->c.m * (size_t)F * sizeof(double);
	gpu_begin(p->r, p->id.upload_b, s, 0, 0, 0, &w->tot);
	CK(cudaMemcpyAsync(d_dst, p->h_B + (size_t)f0 * (size_t)p->c.m, bytes, cudaMemcpyHostToDevice, s));
	pt_transfer(p->r, bytes, PT_H2D);
	gpu_end(p->r, p->id.upload_b, s);
	tally(&w->tot, 0, 0, 0);
	w->tot.h2d_bytes += bytes;
}

static void *worker_main(void *arg)
{
	struct worker *w = (struct worker *)arg;
	const struct problem *p = w->p;
	pt_recorder *r = p->r;
	const struct ids *id = &p->id;
	const int m = p->c.m, n = p->c.n, Fmax = p->c.batch, T = p->c.threads;
	const uint64_t M = (uint64_t)m, N = (uint64_t)n;
	char name[16];
	snprintf(name, sizeof(name), "led-gpu-%d", w->index);
	pthread_setname_np(pthread_self(), name); /* before the first record: the trace keeps it */

	cudaStream_t s_copy, s_comp;
	CK(cudaStreamCreateWithFlags(&s_copy, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&s_comp, cudaStreamNonBlocking));
	cudaEvent_t uploaded[2], consumed[2]; /* ordering only: no timing */
	for (int i = 0; i < 2; i++) {
		CK(cudaEventCreateWithFlags(&uploaded[i], cudaEventDisableTiming));
		CK(cudaEventCreateWithFlags(&consumed[i], cudaEventDisableTiming));
	}
	struct blas b;
	blas_init(&b, s_comp);
	const size_t mF = (size_t)m * (size_t)Fmax, nF_max = (size_t)n * (size_t)Fmax;
	double *d_B[2], *d_AtB, *d_G, *d_H, *d_X, *d_alpha;
	CK(cudaMalloc(&d_B[0], mF * sizeof(double)));
	CK(cudaMalloc(&d_B[1], mF * sizeof(double)));
	CK(cudaMalloc(&d_AtB, nF_max * sizeof(double)));
	CK(cudaMalloc(&d_G, nF_max * sizeof(double)));
	CK(cudaMalloc(&d_H, nF_max * sizeof(double)));
	CK(cudaMalloc(&d_X, nF_max * sizeof(double)));
	CK(cudaMalloc(&d_alpha, (size_t)Fmax * sizeof(double)));

	const int nbatches = (p->c.frames + Fmax - 1) / Fmax;
	int buf = 0;
	if (w->index < nbatches) { /* the first batch's B, before the loop */
		const int f0 = w->index * Fmax;
		upload_b(p, w, s_copy, d_B[0], f0, p->c.frames - f0 < Fmax ? p->c.frames - f0 : Fmax);
		CK(cudaEventRecord(uploaded[0], s_copy));
	}
	for (int bi = w->index; bi < nbatches; bi += T, buf ^= 1) {
		const int f0 = bi * Fmax;
		const int F = p->c.frames - f0 < Fmax ? p->c.frames - f0 : Fmax;
		const uint64_t FF = (uint64_t)F;
		const size_t nF = (size_t)n * (size_t)F;

		pt_begin(r, id->batch);
		/* Prefetch the next batch into the other buffer once the compute
		 * stream is done with it (its Atb of two batches ago). */
		if (bi + T < nbatches) {
			const int nf0 = (bi + T) * Fmax;
			CK(cudaStreamWaitEvent(s_copy, consumed[buf ^ 1], 0));
			upload_b(p, w, s_copy, d_B[buf ^ 1], nf0, p->c.frames - nf0 < Fmax ? p->c.frames - nf0 : Fmax);
			CK(cudaEventRecord(uploaded[buf ^ 1], s_copy));
		}
		CK(cudaStreamWaitEvent(s_comp, uploaded[buf], 0));

		const uint64_t atb_rd = M * N * 8 + M * FF * 8, atb_wr = N * FF * 8;
		gpu_begin(r, id->atb, s_comp, pt_flops_matmul(N, FF, M), atb_rd, atb_wr, &w->tot);
		gemm(&b, 1, n, F, m, 1.0, p->d_A, m, d_B[buf], m, 0.0, d_AtB, n);
		gpu_end(r, id->atb, s_comp);
		tally(&w->tot, 2 * N * FF * M, atb_rd, atb_wr);
		CK(cudaEventRecord(consumed[buf], s_comp));

		gpu_begin(r, id->zero_x, s_comp, 0, 0, N * FF * 8, &w->tot);
		CK(cudaMemsetAsync(d_X, 0, nF * sizeof(double), s_comp));
		gpu_end(r, id->zero_x, s_comp);
		tally(&w->tot, 0, 0, N * FF * 8);

		gpu_begin(r, id->iterations, s_comp, 0, 0, 0, &w->tot);
		for (int it = 0; it < p->c.iterations; it++) {
			const uint64_t gr_rd = N * N * 8 + 2 * N * FF * 8, gr_wr = N * FF * 8;
			gpu_begin(r, id->gradient, s_comp, pt_flops_matmul(N, FF, N), gr_rd, gr_wr, &w->tot);
			CK(cudaMemcpyAsync(d_G, d_AtB, nF * sizeof(double), cudaMemcpyDeviceToDevice, s_comp));
			pt_transfer(r, nF * sizeof(double), PT_D2D);
			gemm(&b, 0, n, F, n, 1.0, p->d_AtA, n, d_X, n, -1.0, d_G, n);
			mask_kernel<<<grid_for(nF), 256, 0, s_comp>>>(nF, d_X, d_G);
			CK(cudaGetLastError());
			gpu_end(r, id->gradient, s_comp);
			tally(&w->tot, 2 * N * N * FF, gr_rd, gr_wr);
			w->tot.d2d_bytes += nF * sizeof(double);

			const int64_t dot_dims[] = { n, F, n, F }; /* "ik,ik->k" */
			const uint64_t st_flops = pt_flops_matmul(N, FF, N) + 2 * pt_flops_einsum("ik,ik->k", dot_dims) +
						  pt_flops_elementwise(FF, 1);
			const uint64_t st_rd = N * N * 8 + 3 * N * FF * 8, st_wr = N * FF * 8 + FF * 8;
			gpu_begin(r, id->step, s_comp, st_flops, st_rd, st_wr, &w->tot);
			gemm(&b, 0, n, F, n, 1.0, p->d_AtA, n, d_G, n, 0.0, d_H, n);
			step_kernel<<<(unsigned)F, STEP_THREADS, 0, s_comp>>>(n, d_G, d_H, d_alpha);
			CK(cudaGetLastError());
			gpu_end(r, id->step, s_comp);
			tally(&w->tot, 2 * N * N * FF + 2 * N * FF + 2 * N * FF + FF, st_rd, st_wr);

			const uint64_t pr_rd = 2 * N * FF * 8 + FF * 8, pr_wr = N * FF * 8;
			gpu_begin(r, id->project, s_comp, pt_flops_elementwise(N * FF, 2), pr_rd, pr_wr, &w->tot);
			project_kernel<<<grid_for(nF), 256, 0, s_comp>>>(n, nF, d_G, d_alpha, d_X);
			CK(cudaGetLastError());
			gpu_end(r, id->project, s_comp);
			tally(&w->tot, 2 * N * FF, pr_rd, pr_wr);
		}
		gpu_end(r, id->iterations, s_comp);
		tally(&w->tot, 0, 0, 0);

		gpu_begin(r, id->download_x, s_comp, 0, 0, 0, &w->tot);
		CK(cudaMemcpyAsync(p->h_X + (size_t)f0 * (size_t)n, d_X, nF * sizeof(double), cudaMemcpyDeviceToHost,
				   s_comp));
		pt_transfer(r, nF * sizeof(double), PT_D2H);
		gpu_end(r, id->download_x, s_comp);
		tally(&w->tot, 0, 0, 0);
		w->tot.d2h_bytes += nF * sizeof(double);

		pt_begin(r, id->wait);
		CK(cudaStreamSynchronize(s_comp));
		pt_end(r, id->wait);
		tally(&w->tot, 0, 0, 0);

		pt_end(r, id->batch);
		tally(&w->tot, 0, 0, 0);
	}
	CK(cudaStreamSynchronize(s_copy));
	CK(cudaStreamSynchronize(s_comp));
	blas_fini(&b);
	cudaFree(d_B[0]);
	cudaFree(d_B[1]);
	cudaFree(d_AtB);
	cudaFree(d_G);
	cudaFree(d_H);
	cudaFree(d_X);
	cudaFree(d_alpha);
	for (int i = 0; i < 2; i++) {
		cudaEventDestroy(uploaded[i]);
		cudaEventDestroy(consumed[i]);
	}
	cudaStreamDestroy(s_copy);
	cudaStreamDestroy(s_comp);
	return NULL;
}

/* ------------------------------------------------------------- main */

static void usage(FILE *out)
{
	fprintf(out,
		"usage: " PROG " [options]\n"
		"  --pixels M       pixels per frame (rows of A)            default 4096\n"
		"  --leds N         LEDs (columns of A)                     default 384\n"
		"  --frames K       frames to solve                         default 256\n"
		"  --batch F        frames solved together                  default 16\n"
		"  --iterations I   projected-gradient iterations per batch default 40\n"
		"  --threads T      worker threads (two streams each)       default 2\n"
		"  --trace PATH     trace file ('' = NULL recorder)         default " PROG ".ptz\n"
		"  --small          CI-sized run: 256 pixels, 48 LEDs, 12 frames, batches of 4, 10 iterations,\n"
		"                   2 threads\n"
		"  --check-device   exit 0 if a CUDA device is usable, else 77\n");
}

/* Exits 77 when no device can be used (no driver, no GPU). */
static void require_device(void)
{
	int count = 0; /* cudaGetDeviceCount leaves it unchanged on error */
	const cudaError_t e = cudaGetDeviceCount(&count);
	if (e != cudaSuccess || count < 1) {
		fprintf(stderr, PROG ": no usable CUDA device (cudaGetDeviceCount: %s, %d devices): skipped\n",
			e != cudaSuccess ? cudaGetErrorName(e) : "cudaSuccess", count);
		exit(EXIT_SKIP);
	}
}

int main(int argc, char **argv)
{
	struct cfg c = { 4096, 384, 256, 16, 40, 2, PROG ".ptz" };
	enum { O_PIXELS = 256, O_LEDS, O_FRAMES, O_BATCH, O_ITER, O_THREADS, O_TRACE, O_SMALL, O_CHECK };
	static const struct option longopts[] = {
		{ "pixels", required_argument, NULL, O_PIXELS },
		{ "leds", required_argument, NULL, O_LEDS },
		{ "frames", required_argument, NULL, O_FRAMES },
		{ "batch", required_argument, NULL, O_BATCH },
		{ "iterations", required_argument, NULL, O_ITER },
		{ "threads", required_argument, NULL, O_THREADS },
		{ "trace", required_argument, NULL, O_TRACE },
		{ "small", no_argument, NULL, O_SMALL },
		{ "check-device", no_argument, NULL, O_CHECK },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	/* --small first sets its sizes; explicit options given with it still win. */
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--small") == 0)
			c = cfg{ 256, 48, 12, 4, 10, 2, c.trace };
	int o, bad = 0, check_only = 0;
	while ((o = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (o) {
		case O_PIXELS: bad |= parse_pos(optarg, 1 << 20, &c.m); break;
		case O_LEDS: bad |= parse_pos(optarg, 1 << 14, &c.n); break;
		case O_FRAMES: bad |= parse_pos(optarg, 1 << 20, &c.frames); break;
		case O_BATCH: bad |= parse_pos(optarg, 1 << 12, &c.batch); break;
		case O_ITER: bad |= parse_pos(optarg, 1 << 20, &c.iterations); break;
		case O_THREADS: bad |= parse_pos(optarg, MAX_THREADS, &c.threads); break;
		case O_TRACE: c.trace = optarg; break;
		case O_SMALL: break;
		case O_CHECK: check_only = 1; break;
		case 'h': usage(stdout); return 0;
		default: bad = 1; break;
		}
	}
	if (bad || optind != argc) {
		fprintf(stderr, PROG ": bad option or value\n");
		usage(stderr);
		return 2;
	}
	if ((uint64_t)c.m * (uint64_t)c.n > (1u << 28) || (uint64_t)c.m * (uint64_t)c.frames > (1u << 28)) {
		fprintf(stderr, PROG ": A or B would be larger than 2 GiB\n");
		return 2;
	}
	require_device();
	if (check_only)
		return 0;

	struct problem p;
	memset(&p, 0, sizeof(p));
	p.c = c;
	const size_t mn = (size_t)c.m * (size_t)c.n, nn = (size_t)c.n * (size_t)c.n;
	const size_t mK = (size_t)c.m * (size_t)c.frames, nK = (size_t)c.n * (size_t)c.frames;
	double *h_A = NULL, *d_A = NULL, *d_AtA = NULL;
	CK(cudaMallocHost(&h_A, mn * sizeof(double)));
	CK(cudaMallocHost(&p.h_B, mK * sizeof(double)));
	CK(cudaMallocHost(&p.h_X, nK * sizeof(double)));
	CK(cudaMalloc(&d_A, mn * sizeof(double)));
	CK(cudaMalloc(&d_AtA, nn * sizeof(double)));
	p.d_A = d_A;
	p.d_AtA = d_AtA;
	struct worker *w = (struct worker *)calloc((size_t)c.threads, sizeof(*w));
	if (!w) {
		fprintf(stderr, PROG ": out of memory\n");
		return 1;
	}
	/* The same light transport and target frames as examples/led_optimizer.c. */
	uint64_t s = SEED;
	for (size_t e = 0; e < mn; e++)
		h_A[e] = unit(&s);
	for (int f = 0; f < c.frames; f++) {
		uint64_t fs = SEED ^ (0x632be59bd9b4e019ULL * (uint64_t)(f + 1));
		for (int i = 0; i < c.m; i++)
			p.h_B[(size_t)f * (size_t)c.m + (size_t)i] = unit(&fs) * 0.5 * (double)c.n;
	}

	pt_recorder *r = *c.trace ? pt_open(c.trace, NULL, 0) : NULL;
	if (!r && *c.trace) {
		fprintf(stderr, PROG ": %s: cannot open trace: %s\n", c.trace, strerror(errno));
		return 1;
	}
	p.r = r;
	p.id.upload_a = pt_intern(r, "upload A");
	p.id.precompute = pt_intern(r, "precompute AtA");
	p.id.upload_b = pt_intern(r, "upload B");
	p.id.batch = pt_intern(r, "frame batch");
	p.id.atb = pt_intern(r, "Atb");
	p.id.zero_x = pt_intern(r, "zero X");
	p.id.iterations = pt_intern(r, "iterations");
	p.id.gradient = pt_intern(r, "gradient");
	p.id.step = pt_intern(r, "step size");
	p.id.project = pt_intern(r, "project");
	p.id.download_x = pt_intern(r, "download X");
	p.id.wait = pt_intern(r, "wait result");

	const double t0 = now_s();
	const uint64_t M = (uint64_t)c.m, N = (uint64_t)c.n;
	struct totals tot;
	memset(&tot, 0, sizeof(tot));
	cudaStream_t s_main;
	CK(cudaStreamCreateWithFlags(&s_main, cudaStreamNonBlocking));
	struct blas b;
	blas_init(&b, s_main);

	gpu_begin(r, p.id.upload_a, s_main, 0, 0, 0, &tot);
	CK(cudaMemcpyAsync(d_A, h_A, mn * sizeof(double), cudaMemcpyHostToDevice, s_main));
	pt_transfer(r, mn * sizeof(double), PT_H2D);
	gpu_end(r, p.id.upload_a, s_main);
	tally(&tot, 0, 0, 0);
	tot.h2d_bytes += mn * sizeof(double);

	gpu_begin(r, p.id.precompute, s_main, pt_flops_matmul(N, N, M), M * N * 8, N * N * 8, &tot);
	gemm(&b, 1, c.n, c.n, c.m, 1.0, d_A, c.m, d_A, c.m, 0.0, d_AtA, c.n);
	gpu_end(r, p.id.precompute, s_main);
	tally(&tot, 2 * N * N * M, M * N * 8, N * N * 8);
	CK(cudaStreamSynchronize(s_main)); /* the workers' streams read AtA */

	int started = 0;
	for (int t = 0; t < c.threads; t++) {
		w[t].p = &p;
		w[t].index = t;
		if (pthread_create(&w[t].tid, NULL, worker_main, &w[t]) != 0) {
			fprintf(stderr, PROG ": pthread_create failed\n");
			break;
		}
		started++;
	}
	for (int t = 0; t < started; t++) {
		pthread_join(w[t].tid, NULL);
		add_totals(&tot, &w[t].tot);
	}
	const double t1 = now_s();
	if (started < c.threads)
		return 1;

	/* Every GPU half is resolved (a range) or dropped once the streams
	 * are idle; give the recorder's CUDA thread up to 2 s to get there, so
	 * that the figures printed are final. */
	struct pt_stats_info st;
	pt_stats(r, &st, sizeof(st));
	for (int i = 0; r && i < 2000 && st.gpu_ranges + st.gpu_dropped < tot.gpu_sections; i++) {
		const struct timespec ms = { 0, 1000000 };
		nanosleep(&ms, NULL);
		pt_stats(r, &st, sizeof(st));
	}
	const int rc_close = pt_close(r);
	if (rc_close < 0) {
		fprintf(stderr, PROG ": %s: error while recording: %s\n", c.trace, strerror(-rc_close));
		return 1;
	}

	/* Check the solution (after pt_close: not part of the traced work):
	 * relative residual ||A X - B|| / ||B|| (x = 0 gives 1) and the share
	 * of LEDs held at zero, on the host in plain loops. */
	double res2 = 0, b2 = 0;
	size_t zeros = 0;
	double *col = (double *)malloc((size_t)c.m * sizeof(double));
	if (!col) {
		fprintf(stderr, PROG ": out of memory\n");
		return 1;
	}
	for (int f = 0; f < c.frames; f++) {
		const double *x = p.h_X + (size_t)f * (size_t)c.n, *bf = p.h_B + (size_t)f * (size_t)c.m;
		for (int i = 0; i < c.m; i++)
			col[i] = -bf[i];
		for (int j = 0; j < c.n; j++) {
			const double *a = h_A + (size_t)j * (size_t)c.m;
			if (x[j] == 0.0) {
				zeros++;
				continue;
			}
			for (int i = 0; i < c.m; i++)
				col[i] += a[i] * x[j];
		}
		for (int i = 0; i < c.m; i++) {
			res2 += col[i] * col[i];
			b2 += bf[i] * bf[i];
		}
	}
	free(col);

	printf(PROG ": %d pixels x %d LEDs, %d frames in batches of %d, %d iterations, %d threads x 2 streams, "
		    "GEMM by %s: %.3f s\n",
	       c.m, c.n, c.frames, c.batch, c.iterations, c.threads,
#ifdef PTZ_HAVE_CUBLAS
	       "cuBLAS",
#else
	       "a simple kernel",
#endif
	       t1 - t0);
	printf(PROG ": relative residual %.4f (x = 0: 1), LEDs at zero %.1f%%\n", b2 > 0 ? sqrt(res2 / b2) : 0.0,
	       100.0 * (double)zeros / ((double)c.n * c.frames));
	printf(PROG ": recorder lost_records=%" PRIu64 " lost_sections=%" PRIu64 " gpu_state=%d gpu_launched=%" PRIu64
		    " gpu_ranges=%" PRIu64 " gpu_dropped=%" PRIu64 " gpu_early_starts=%" PRIu64 " trace=%s\n",
	       st.lost_records, st.lost_sections, st.gpu_state, st.gpu_launched, st.gpu_ranges, st.gpu_dropped,
	       st.gpu_early_starts, c.trace);
	printf(PROG ": total_h2d_bytes=%" PRIu64 " total_d2h_bytes=%" PRIu64 " total_d2d_bytes=%" PRIu64
		    " gpu_sections=%" PRIu64 "\n",
	       tot.h2d_bytes, tot.d2h_bytes, tot.d2d_bytes, tot.gpu_sections);
	printf(PROG ": total_flops=%" PRIu64 " total_read_bytes=%" PRIu64 " total_written_bytes=%" PRIu64
		    " sections=%" PRIu64 "\n",
	       tot.flops, tot.read_bytes, tot.written_bytes, tot.sections);

	blas_fini(&b);
	cudaStreamDestroy(s_main);
	cudaFree(d_A);
	cudaFree(d_AtA);
	cudaFreeHost(h_A);
	cudaFreeHost(p.h_B);
	cudaFreeHost(p.h_X);
	free(w);
	return 0;
}
