/*
 * examples/led_optimizer.c - a dense LED optimizer, instrumented with ptz.
 *
 * The problem: a wall of n LEDs lights m pixels; A (m x n, dense, column
 * major, random positive, fixed seed) maps LED drive values to pixel
 * brightness. For every frame b (m pixels) find LED values x >= 0 that
 * minimize ||A x - b||^2, by projected gradient descent on the normal
 * equations:
 *
 *   precompute  AtA = A^T A                       once, main thread (dgemm)
 *   per batch of F frames (columns of B, X):
 *     Atb       AtB = A^T B                       (dgemm, n x F)
 *     per iteration:
 *       gradient  G = AtA X - AtB                 (dgemm with beta = -1), then
 *                 g_if = 0 where x_if = 0 and g_if > 0 (those components
 *                 would be projected straight back: a comparison only)
 *       step size alpha_f = (g_f . g_f) / (g_f^T AtA g_f)
 *       project   X = max(0, X - G diag(alpha))
 *
 * The step-size denominator is computed for the whole batch as the literal
 * three-operand contraction
 *     den_k = sum_{i,j} G[i,k] * AtA[i,j] * G[j,k]        einsum "ik,ij,jk->k"
 * two multiplies and one add per (i, j, k) term, one accumulator per frame:
 * exactly 3*n*n*F FLOPs, which is numpy.einsum_path's naive count for that
 * spec and what pt_flops_einsum("ik,ij,jk->k", {n,F, n,n, n,F}) returns.
 * (numpy counts "ik,ijk,jk->" - AtA broadcast to one copy per frame - the
 * same 3*I*J*K; the spec used here says that AtA is shared.) The numerator
 * g_f . g_f is einsum "ik,ik->k": one multiply and one add per term, 2*n*F.
 *
 * FLOP model (what each section's .flops says):
 *   - BLAS products use pt_flops_matmul's 2*m*n*k convention; in the
 *     gradient that is exact: n products, n-1 adds and the subtraction of
 *     Atb per element. Scaling by alpha = 1 costs nothing.
 *   - the loops written here are counted one FLOP per +, -, *, /;
 *     max(0, .) and the gradient masking are comparisons, not counted.
 * Byte model (.read_bytes / .written_bytes): compulsory traffic, every
 * operand matrix or vector counted once per section at 8 bytes per double,
 * whatever the cache does:
 *   precompute AtA  reads A (m*n*8)                writes AtA (n*n*8)
 *   Atb             reads A (m*n*8) + B (m*F*8)    writes AtB (n*F*8)
 *   gradient        reads AtA (n*n*8), X, AtB      writes G (n*F*8)
 *                   (n*F*8 each)
 *   step size       reads G (n*F*8), AtA (n*n*8)   writes alpha (F*8)
 *   project         reads X, G (n*F*8 each),       writes X (n*F*8)
 *                   alpha (F*8)
 * "frame batch" and "iterations" carry no metrics of their own; the analyzer
 * rolls their children's metrics up into them.
 *
 * Independent totals: besides giving each section its metrics (FLOPs from
 * the pt_flops_* helpers), the program adds the same quantities, written
 * out as plain formulas of its own dimensions, into per-thread running sums
 * and prints their total on one line:
 *   led_optimizer: total_flops=N total_read_bytes=N total_written_bytes=N sections=N
 * tests/examples/test_examples.py checks that the trace's report has
 * exactly these totals.
 *
 * Threads: the main thread precomputes AtA (with OpenBLAS's own threads),
 * then --threads worker threads take batches round-robin (batch t, t+T, ...),
 * each with OpenBLAS limited to one thread so the workers do not
 * oversubscribe the cores. Frames are independent: results do not depend on
 * the thread count.
 *
 * Failure behaviour: a recorder that cannot be opened, a bad option or a
 * failed allocation ends the program with status 1 (2 for usage) and a
 * message on stderr.
 */
#include <cblas.h>    /* cblas_dgemm; openblas_set_num_threads */
#include <errno.h>    /* errno */
#include <getopt.h>   /* getopt_long */
#include <inttypes.h> /* PRIu64 */
#include <math.h>     /* sqrt */
#include <pthread.h>  /* workers */
#include <stdint.h>   /* uint64_t */
#include <stdio.h>    /* printf */
#include <stdlib.h>   /* malloc, strtol */
#include <string.h>   /* memcpy, strerror */
#include <time.h>     /* clock_gettime */

#include "ptz/recorder.h" /* the public API only */

#include "example_util.h" /* parse_pos, now_s, default_threads */

#define PROG "led_optimizer"
#define SEED 0x1ed0b7a5eedULL
#define MAX_THREADS 256

/* ------------------------------------------------------------- settings */

struct cfg {
	int m, n;          /* pixels, LEDs */
	int frames, batch; /* frames in all; frames solved together (F) */
	int iterations;    /* per batch */
	int threads;       /* worker threads */
	const char *trace;
};

/* Running sums kept by the program itself, independently of the trace. */
struct totals {
	uint64_t flops, read_bytes, written_bytes, sections;
};

static void tally(struct totals *t, uint64_t flops, uint64_t read_bytes, uint64_t written_bytes)
{
	t->flops += flops;
	t->read_bytes += read_bytes;
	t->written_bytes += written_bytes;
	t->sections++;
}

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

/* ------------------------------------------------------------- shared state */

struct problem {
	struct cfg c;
	pt_recorder *r;
	double *A;   /* m x n, column major, lda = m */
	double *AtA; /* n x n, full (symmetric) */
	double *B;   /* m x frames: frame f is column f */
	double *X;   /* n x frames: LED values, column f belongs to frame f */
	double *gnorm_first, *gnorm_last; /* per frame: g.g at the first and last iteration */
};

struct worker {
	const struct problem *p;
	int index;
	struct totals tot;
	pthread_t tid;
	int failed;
};

/* ------------------------------------------------------------- one batch */

static void solve_batch(const struct problem *p, int f0, int F, double *AtB, double *G, double *alpha,
			double *num, double *den, struct totals *tot)
{
	pt_recorder *r = p->r;
	const int m = p->c.m, n = p->c.n;
	const uint64_t M = (uint64_t)m, N = (uint64_t)n, FF = (uint64_t)F;
	const double *A = p->A, *AtA = p->AtA, *B = p->B + (size_t)f0 * (size_t)m;
	double *X = p->X + (size_t)f0 * (size_t)n;
	const size_t nF = (size_t)n * (size_t)F;
	const int64_t den_dims[] = { n, F, n, n, n, F }; /* "ik,ij,jk->k" */
	const int64_t num_dims[] = { n, F, n, F };       /* "ik,ik->k" */

	PT_SECTION(r, "frame batch") {
		memset(X, 0, nF * sizeof(*X));

		const uint64_t atb_rd = M * N * 8 + M * FF * 8, atb_wr = N * FF * 8;
		PT_SECTION(r, "Atb", .flops = pt_flops_matmul(N, FF, M), .read_bytes = atb_rd, .written_bytes = atb_wr) {
			cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, n, F, m, 1.0, A, m, B, m, 0.0, AtB, n);
		}
		tally(tot, 2 * N * FF * M, atb_rd, atb_wr);

		PT_SECTION(r, "iterations") {
			for (int it = 0; it < p->c.iterations; it++) {
				const uint64_t gr_rd = N * N * 8 + 2 * N * FF * 8, gr_wr = N * FF * 8;
				PT_SECTION(r, "gradient", .flops = pt_flops_matmul(N, FF, N), .read_bytes = gr_rd,
					   .written_bytes = gr_wr) {
					memcpy(G, AtB, nF * sizeof(*G));
					cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, F, n, 1.0, AtA, n, X, n,
						    -1.0, G, n);
					for (size_t e = 0; e < nF; e++) /* comparisons only */
						if (X[e] <= 0.0 && G[e] > 0.0)
							G[e] = 0.0;
				}
				tally(tot, 2 * N * N * FF, gr_rd, gr_wr);

				const uint64_t st_flops = pt_flops_einsum("ik,ik->k", num_dims) +
							  pt_flops_einsum("ik,ij,jk->k", den_dims) +
							  pt_flops_elementwise(FF, 1);
				const uint64_t st_rd = N * FF * 8 + N * N * 8, st_wr = FF * 8;
				PT_SECTION(r, "step size", .flops = st_flops, .read_bytes = st_rd, .written_bytes = st_wr) {
					for (int k = 0; k < F; k++) { /* g_k . g_k: 2 FLOPs a term */
						const double *g = G + (size_t)k * (size_t)n;
						double s = 0.0;
						for (int i = 0; i < n; i++)
							s += g[i] * g[i];
						num[k] = s;
					}
					/* den_k = sum_ij G[i,k] AtA[i,j] G[j,k]: 3 FLOPs a term, one
					 * accumulator per frame (k innermost: F independent chains). */
					for (int k = 0; k < F; k++)
						den[k] = 0.0;
					for (int i = 0; i < n; i++) {
						const double *row = AtA + (size_t)i * (size_t)n; /* symmetric: row i = column i */
						for (int j = 0; j < n; j++) {
							const double a = row[j];
							for (int k = 0; k < F; k++)
								den[k] += G[(size_t)k * (size_t)n + (size_t)i] * a *
									  G[(size_t)k * (size_t)n + (size_t)j];
						}
					}
					for (int k = 0; k < F; k++) /* 1 FLOP each */
						alpha[k] = den[k] > 0.0 ? num[k] / den[k] : 0.0;
				}
				tally(tot, 2 * N * FF + 3 * N * N * FF + FF, st_rd, st_wr);
				for (int k = 0; k < F; k++) {
					if (it == 0)
						p->gnorm_first[f0 + k] = num[k];
					p->gnorm_last[f0 + k] = num[k];
				}

				const uint64_t pr_rd = 2 * N * FF * 8 + FF * 8, pr_wr = N * FF * 8;
				PT_SECTION(r, "project", .flops = pt_flops_elementwise(N * FF, 2), .read_bytes = pr_rd,
					   .written_bytes = pr_wr) {
					for (int k = 0; k < F; k++) {
						double *x = X + (size_t)k * (size_t)n;
						const double *g = G + (size_t)k * (size_t)n, a = alpha[k];
						for (int i = 0; i < n; i++) { /* one *, one -; the clamp is a comparison */
							const double v = x[i] - a * g[i];
							x[i] = v > 0.0 ? v : 0.0;
						}
					}
				}
				tally(tot, 2 * N * FF, pr_rd, pr_wr);
			}
		}
		tally(tot, 0, 0, 0); /* "iterations" */
	}
	tally(tot, 0, 0, 0); /* "frame batch" */
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	const struct problem *p = w->p;
	char name[16];
	snprintf(name, sizeof(name), "led-worker-%d", w->index);
	pthread_setname_np(pthread_self(), name); /* before the first record: the trace keeps it */
	const size_t nB = (size_t)p->c.n * (size_t)p->c.batch;
	double *AtB = malloc(nB * sizeof(double)), *G = malloc(nB * sizeof(double));
	double *small = malloc(3 * (size_t)p->c.batch * sizeof(double));
	if (!AtB || !G || !small) {
		w->failed = 1;
	} else {
		const int nbatches = (p->c.frames + p->c.batch - 1) / p->c.batch;
		for (int b = w->index; b < nbatches; b += p->c.threads) {
			const int f0 = b * p->c.batch;
			const int F = p->c.frames - f0 < p->c.batch ? p->c.frames - f0 : p->c.batch;
			solve_batch(p, f0, F, AtB, G, small, small + p->c.batch, small + 2 * p->c.batch, &w->tot);
		}
	}
	free(AtB);
	free(G);
	free(small);
	return NULL;
}

/* ------------------------------------------------------------- main */

static void usage(FILE *out)
{
	fprintf(out,
		"usage: " PROG " [options]\n"
		"  --pixels M       pixels per frame (rows of A)            default 4096\n"
		"  --leds N         LEDs (columns of A)                     default 384\n"
		"  --frames K       frames to solve                         default 128\n"
		"  --batch F        frames solved together                  default 4\n"
		"  --iterations I   projected-gradient iterations per batch default 40\n"
		"  --threads T      worker threads                          default: CPUs, at most 4\n"
		"  --trace PATH     trace file                              default led_optimizer.ptz\n"
		"  --small          CI-sized run: 256 pixels, 48 LEDs, 12 frames, 10 iterations, 2 threads\n");
}

static void set_blas_threads(int n)
{
#ifdef HAVE_OPENBLAS_SET_NUM_THREADS
	openblas_set_num_threads(n);
#else
	(void)n;
#endif
}

int main(int argc, char **argv)
{
	struct cfg c = { .m = 4096, .n = 384, .frames = 128, .batch = 4, .iterations = 40, .threads = default_threads(4, 0),
			 .trace = PROG ".ptz" };
	enum { O_PIXELS = 256, O_LEDS, O_FRAMES, O_BATCH, O_ITER, O_THREADS, O_TRACE, O_SMALL };
	static const struct option longopts[] = {
		{ "pixels", required_argument, NULL, O_PIXELS },
		{ "leds", required_argument, NULL, O_LEDS },
		{ "frames", required_argument, NULL, O_FRAMES },
		{ "batch", required_argument, NULL, O_BATCH },
		{ "iterations", required_argument, NULL, O_ITER },
		{ "threads", required_argument, NULL, O_THREADS },
		{ "trace", required_argument, NULL, O_TRACE },
		{ "small", no_argument, NULL, O_SMALL },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	/* --small first sets its sizes; explicit options given with it still win. */
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--small") == 0)
			c = (struct cfg){ .m = 256, .n = 48, .frames = 12, .batch = 4, .iterations = 10, .threads = 2,
					  .trace = c.trace };
	int o, bad = 0;
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
		case 'h': usage(stdout); return 0;
		default: bad = 1; break;
		}
	}
	if (bad || optind != argc) {
		fprintf(stderr, PROG ": bad option or value\n");
		usage(stderr);
		return 2;
	}
	if ((uint64_t)c.m * (uint64_t)c.n > (1u << 28)) {
		fprintf(stderr, PROG ": A would be larger than 2 GiB\n");
		return 2;
	}

	struct problem p = { .c = c };
	const size_t mn = (size_t)c.m * (size_t)c.n, nn = (size_t)c.n * (size_t)c.n;
	p.A = malloc(mn * sizeof(double));
	p.AtA = malloc(nn * sizeof(double));
	p.B = malloc((size_t)c.m * (size_t)c.frames * sizeof(double));
	p.X = malloc((size_t)c.n * (size_t)c.frames * sizeof(double));
	p.gnorm_first = malloc((size_t)c.frames * sizeof(double));
	p.gnorm_last = malloc((size_t)c.frames * sizeof(double));
	struct worker *w = calloc((size_t)c.threads, sizeof(*w));
	if (!p.A || !p.AtA || !p.B || !p.X || !p.gnorm_first || !p.gnorm_last || !w) {
		fprintf(stderr, PROG ": out of memory\n");
		return 1;
	}
	/* Light transport: every LED lights every pixel a little. Target frames
	 * are random images of about the brightness that x ~ U(0, 1) gives, so
	 * the best x has many LEDs at zero: the projection matters. */
	uint64_t s = SEED;
	for (size_t e = 0; e < mn; e++)
		p.A[e] = unit(&s);
	for (int f = 0; f < c.frames; f++) {
		uint64_t fs = SEED ^ (0x632be59bd9b4e019ULL * (uint64_t)(f + 1));
		for (int i = 0; i < c.m; i++)
			p.B[(size_t)f * (size_t)c.m + (size_t)i] = unit(&fs) * 0.5 * (double)c.n;
	}

#ifdef PT_DISABLE
	/* the uninstrumented build of bench/overhead.py: no recorder at all */
	pt_recorder *r = NULL;
#else
	/* --trace '' runs the instrumented code with a NULL recorder (every
	 * call a no-op): bench/overhead.py separates code-generation effects
	 * from the cost of recording this way */
	pt_recorder *r = *c.trace ? pt_open(c.trace, NULL, 0) : NULL;
	if (!r && *c.trace) {
		fprintf(stderr, PROG ": %s: cannot open trace: %s\n", c.trace, strerror(errno));
		return 1;
	}
#endif
	p.r = r;
	const double t0 = now_s();
	const uint64_t M = (uint64_t)c.m, N = (uint64_t)c.n;
	struct totals main_tot = { 0 };

	set_blas_threads(c.threads);
	PT_SECTION(r, "precompute AtA", .flops = pt_flops_matmul(N, N, M), .read_bytes = M * N * 8,
		   .written_bytes = N * N * 8) {
		cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, c.n, c.n, c.m, 1.0, p.A, c.m, p.A, c.m, 0.0,
			    p.AtA, c.n);
	}
	tally(&main_tot, 2 * N * N * M, M * N * 8, N * N * 8);

	set_blas_threads(1);
	int started = 0, failed = 0;
	for (int t = 0; t < c.threads; t++) {
		w[t] = (struct worker){ .p = &p, .index = t };
		if (pthread_create(&w[t].tid, NULL, worker_main, &w[t]) != 0) {
			fprintf(stderr, PROG ": pthread_create failed\n");
			failed = 1;
			break;
		}
		started++;
	}
	struct totals tot = main_tot;
	for (int t = 0; t < started; t++) {
		pthread_join(w[t].tid, NULL);
		failed |= w[t].failed;
		tot.flops += w[t].tot.flops;
		tot.read_bytes += w[t].tot.read_bytes;
		tot.written_bytes += w[t].tot.written_bytes;
		tot.sections += w[t].tot.sections;
	}
	const double t1 = now_s();

	struct pt_stats_info st;
	pt_stats(r, &st, sizeof(st));
	const int rc_close = pt_close(r);
	if (failed) {
		fprintf(stderr, PROG ": a worker failed (out of memory or thread creation)\n");
		return 1;
	}
	if (rc_close < 0) {
		fprintf(stderr, PROG ": %s: error while recording: %s\n", c.trace, strerror(-rc_close));
		return 1;
	}

	/* Check the solution (after pt_close: not part of the traced work):
	 * relative residual ||A X - B|| / ||B|| (x = 0 gives 1), the share of
	 * LEDs held at zero, and how much the projected gradient shrank. */
	set_blas_threads(c.threads);
	double *R = malloc((size_t)c.m * (size_t)c.frames * sizeof(double));
	double res2 = 0, b2 = 0, shrink = 0;
	size_t zeros = 0;
	if (R) {
		memcpy(R, p.B, (size_t)c.m * (size_t)c.frames * sizeof(double));
		cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, c.m, c.frames, c.n, 1.0, p.A, c.m, p.X, c.n,
			    -1.0, R, c.m);
		for (size_t e = 0; e < (size_t)c.m * (size_t)c.frames; e++) {
			res2 += R[e] * R[e];
			b2 += p.B[e] * p.B[e];
		}
		free(R);
	}
	for (size_t e = 0; e < (size_t)c.n * (size_t)c.frames; e++)
		zeros += p.X[e] == 0.0;
	for (int f = 0; f < c.frames; f++)
		shrink += p.gnorm_first[f] > 0 ? sqrt(p.gnorm_last[f] / p.gnorm_first[f]) : 0.0;

	printf(PROG ": %d pixels x %d LEDs, %d frames in batches of %d, %d iterations, %d threads: %.3f s\n", c.m,
	       c.n, c.frames, c.batch, c.iterations, c.threads, t1 - t0);
	printf(PROG ": relative residual %.4f (x = 0: 1), LEDs at zero %.1f%%, projected gradient shrank to %.3g "
	       "of its first value (mean over frames)\n",
	       b2 > 0 ? sqrt(res2 / b2) : 0.0, 100.0 * (double)zeros / ((double)c.n * c.frames),
	       shrink / c.frames);
	printf(PROG ": recorder lost_records=%" PRIu64 " lost_sections=%" PRIu64 " trace=%s\n", st.lost_records,
	       st.lost_sections, c.trace);
	printf(PROG ": total_flops=%" PRIu64 " total_read_bytes=%" PRIu64 " total_written_bytes=%" PRIu64
		    " sections=%" PRIu64 "\n",
	       tot.flops, tot.read_bytes, tot.written_bytes, tot.sections);
	free(p.A);
	free(p.AtA);
	free(p.B);
	free(p.X);
	free(p.gnorm_first);
	free(p.gnorm_last);
	free(w);
	return 0;
}
