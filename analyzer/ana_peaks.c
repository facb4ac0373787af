/*
 * analyzer/ana_peaks.c - machine peaks measured here (FMA chains, STREAM
 * triad) and the "ptz-machine/1" profile file (ana_peaks.h has the method
 * and its sources).
 */
#include "analyzer/ana_peaks.h"

#include <assert.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* A FLOP repetition lasts about @seconds / REP_SLICES: the best of at least
 * FLOP_MIN_REPS and usually about 16. Many short repetitions rather than a
 * few long ones: on a busy machine or a VM whose CPUs are taken away for
 * milliseconds at a time (steal), the best is the one no pause hit. */
#define REP_SLICES 16
#define FLOP_MIN_REPS 3u
#define MEM_MIN_REPS 2u /* one pass over 1 GiB may already take longer than @seconds */
#define MAX_REPS 1000u
#define MIB ((size_t)1 << 20)
#define TRIAD_FALLBACK_BYTES (64 * MIB) /* per array, when the cache size is unknown */
#define TRIAD_TOTAL_CAP_BYTES (1024 * MIB) /* the three arrays together */

void ana_peaks_seterr(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

double ana_peaks_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ==== FLOP kernels ==== */

/* Makes @x look used to the compiler, so the kernel that computed it is not
 * dead code (the FMA kernels are pure: without this, a caller that drops
 * their result may drop the call; Google Benchmark's DoNotOptimize). */
static inline void keep(double x)
{
	__asm__ __volatile__("" : : "g"(x));
}

/*
 * FMA_KERNEL() defines name(iters): NACC = 12 independent chains
 * x = x * m + a, iters rounds of one FMA per chain, returning the sum of
 * every lane so the chains are live (the caller passes it to keep()). With
 * 0 < m < 1 and a > 0 a chain moves from its start in [a, 12 a] towards
 * a / (1 - m) = 1 and never meets a denormal or an overflow, whose slow
 * paths would distort the rate. The chains are written out (X12) rather
 * than kept in an array: an array the compiler did not put in registers
 * would chain through memory. Each chain starts from its own value: twelve
 * equal chains are one to the compiler, which then issues a single FMA per
 * round (seen with GCC 12: the "peak" was 12 x one chain's latency-bound rate).
 */
#define NACC 12
#define X1_11(S, ...)                                                                                           \
	S(1, __VA_ARGS__) S(2, __VA_ARGS__) S(3, __VA_ARGS__) S(4, __VA_ARGS__) S(5, __VA_ARGS__) S(6, __VA_ARGS__) \
	S(7, __VA_ARGS__) S(8, __VA_ARGS__) S(9, __VA_ARGS__) S(10, __VA_ARGS__) S(11, __VA_ARGS__)
#define X12(S, ...) S(0, __VA_ARGS__) X1_11(S, __VA_ARGS__)
#define FMA_DECL_(k, T, set1, aval) T x##k = set1((aval) * (k + 1));
#define FMA_STEP_(k, fmadd) x##k = fmadd(x##k, m, a);
#define FMA_SUM_(k, add) s = add(s, x##k);
#define FMA_KERNEL(name, attr, T, set1, fmadd, add, hsum, mval, aval) \
	attr static double name(uint64_t iters)                        \
	{                                                              \
		const T m = set1(mval), a = set1(aval);                \
		X12(FMA_DECL_, T, set1, aval)                          \
		for (uint64_t i = 0; i < iters; i++) {                 \
			X12(FMA_STEP_, fmadd)                          \
		}                                                      \
		T s = x0;                                              \
		X1_11(FMA_SUM_, add)                                   \
		return (double)hsum(s);                                \
	}

#define M64 0.999999
#define A64 1e-6
#define M32 0.9999f
#define A32 1e-4f

static double id_d(double x)
{
	return x;
}
static float id_f(float x)
{
	return x;
}
static double add_d(double x, double y)
{
	return x + y;
}
static float add_f(float x, float y)
{
	return x + y;
}
/* Scalar fallback: fma() is exact-rounded by definition, so the compiler
 * must issue a fused operation (or libm's) even where it never contracts. */
FMA_KERNEL(fma64_generic, , double, id_d, fma, add_d, id_d, M64, A64)
FMA_KERNEL(fma32_generic, , float, id_f, fmaf, add_f, id_f, M32, A32)

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) static double hsum256_pd(__m256d v)
{
	const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
	return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}
__attribute__((target("avx2,fma"))) static float hsum256_ps(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	return _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps(s, s, 1)));
}
FMA_KERNEL(fma64_avx2, __attribute__((target("avx2,fma"))), __m256d, _mm256_set1_pd, _mm256_fmadd_pd,
	   _mm256_add_pd, hsum256_pd, M64, A64)
FMA_KERNEL(fma32_avx2, __attribute__((target("avx2,fma"))), __m256, _mm256_set1_ps, _mm256_fmadd_ps,
	   _mm256_add_ps, hsum256_ps, M32, A32)
FMA_KERNEL(fma64_avx512, __attribute__((target("avx512f"))), __m512d, _mm512_set1_pd, _mm512_fmadd_pd,
	   _mm512_add_pd, _mm512_reduce_add_pd, M64, A64)
FMA_KERNEL(fma32_avx512, __attribute__((target("avx512f"))), __m512, _mm512_set1_ps, _mm512_fmadd_ps,
	   _mm512_add_ps, _mm512_reduce_add_ps, M32, A32)
#endif

struct fma_isa {
	const char *name;            /* ana_peaks.isa */
	double (*k64)(uint64_t), (*k32)(uint64_t);
	unsigned lanes64, lanes32;   /* elements per FMA */
};

/* The widest kernel this CPU runs (the OS's support for the AVX state is
 * part of what __builtin_cpu_supports() checks in libgcc). */
static const struct fma_isa *pick_isa(void)
{
	static const struct fma_isa generic = { "generic", fma64_generic, fma32_generic, 1, 1 };
#if defined(__x86_64__)
	static const struct fma_isa avx512 = { "avx512f", fma64_avx512, fma32_avx512, 8, 16 };
	static const struct fma_isa avx2 = { "avx2+fma", fma64_avx2, fma32_avx2, 4, 8 };
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f"))
		return &avx512;
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		return &avx2;
#endif
	return &generic;
}

/* ==== Teams of threads ==== */

/*
 * A team runs one figure: member 0 is the calling thread, members 1..n-1
 * are threads started here. Each member prepares (the triad's first touch),
 * then every repetition is: barrier; the member times its work(); barrier;
 * member 0 turns the repetition into a rate (all the members' work over
 * first start to last end), keeps the best and decides whether to go on;
 * barrier; everyone reads that decision. The barriers order every access
 * to the shared fields below (pthread_barrier_wait() synchronizes memory,
 * POSIX XBD 4.12), so nothing else is needed.
 */
struct team;
struct slot {
	struct team *t;
	unsigned i;
	double start, end, work; /* s (CLOCK_MONOTONIC); work units of the last repetition */
};
struct team {
	unsigned n, min_reps;
	double seconds;
	void (*prep)(struct slot *s);   /* NULL: nothing to prepare */
	double (*work)(struct slot *s); /* one repetition: returns work units (FLOP, bytes) */
	double (*kernel)(uint64_t);     /* FLOP figures */
	uint64_t iters;
	double flop_per_iter;
	double *a, *b, *c;              /* triad figures: len doubles each */
	size_t len;
	struct slot *slot;
	pthread_barrier_t bar;
	pthread_mutex_t mu;             /* with cv: the start gate */
	pthread_cond_t cv;
	int gate;                       /* 0 wait, 1 run, -1 leave (a thread could not be started) */
	bool go;                        /* written by member 0 between barriers */
	double best;                    /* best rate, work units per second */
	double rates[MAX_REPS];         /* every repetition's rate (member 0), for the spread */
	unsigned nrates;
};

static void member_run(struct slot *s)
{
	struct team *t = s->t;
	double t0 = 0;
	unsigned reps = 0;
	if (t->prep)
		t->prep(s);
	pthread_barrier_wait(&t->bar);
	if (s->i == 0)
		t0 = ana_peaks_now_s();
	do {
		pthread_barrier_wait(&t->bar);
		s->start = ana_peaks_now_s();
		s->work = t->work(s);
		s->end = ana_peaks_now_s();
		pthread_barrier_wait(&t->bar);
		if (s->i == 0) {
			double first = s->start, last = s->end, work = 0;
			for (unsigned k = 0; k < t->n; k++) {
				first = fmin(first, t->slot[k].start);
				last = fmax(last, t->slot[k].end);
				work += t->slot[k].work;
			}
			if (last > first) {
				t->best = fmax(t->best, work / (last - first));
				if (t->nrates < MAX_REPS)
					t->rates[t->nrates++] = work / (last - first);
			}
			reps++;
			t->go = reps < t->min_reps || (reps < MAX_REPS && ana_peaks_now_s() - t0 < t->seconds);
		}
		pthread_barrier_wait(&t->bar);
	} while (t->go);
}

static void *member_main(void *arg)
{
	struct slot *s = arg;
	struct team *t = s->t;
	pthread_mutex_lock(&t->mu);
	while (!t->gate)
		pthread_cond_wait(&t->cv, &t->mu);
	const int gate = t->gate;
	pthread_mutex_unlock(&t->mu);
	if (gate > 0)
		member_run(s);
	return NULL;
}

/* Runs @t on t->n members; t->best receives the best rate. 0, or -errno. */
static int team_run(struct team *t, char *err, size_t errlen)
{
	const unsigned n = t->n;
	pthread_t *tid = calloc(n, sizeof(*tid));
	t->slot = calloc(n, sizeof(*t->slot));
	t->best = 0;
	t->nrates = 0;
	t->gate = 0;
	if (!tid || !t->slot) {
		free(tid);
		free(t->slot);
		t->slot = NULL;
		ana_peaks_seterr(err, errlen, "out of memory for %u threads", n);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < n; i++)
		t->slot[i] = (struct slot){ .t = t, .i = i };
	int rc = pthread_barrier_init(&t->bar, NULL, n);
	if (rc) {
		free(tid);
		free(t->slot);
		t->slot = NULL;
		ana_peaks_seterr(err, errlen, "pthread_barrier_init(%u): %s", n, strerror(rc));
		return -rc;
	}
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->cv, NULL);
	unsigned started = 1;
	for (; started < n && !rc; started++)
		rc = pthread_create(&tid[started], NULL, member_main, &t->slot[started]);
	if (rc) {
		started--; /* the failed one */
		ana_peaks_seterr(err, errlen, "pthread_create (thread %u of %u): %s", started, n, strerror(rc));
	}
	pthread_mutex_lock(&t->mu);
	t->gate = rc ? -1 : 1;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
	if (!rc)
		member_run(&t->slot[0]);
	for (unsigned i = 1; i < started; i++)
		pthread_join(tid[i], NULL);
	pthread_cond_destroy(&t->cv);
	pthread_mutex_destroy(&t->mu);
	pthread_barrier_destroy(&t->bar);
	free(tid);
	free(t->slot);
	t->slot = NULL;
	return -rc;
}

static int cmp_rate(const void *a, const void *b)
{
	const double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The spread of @t's repetitions: best / median - 1 (ana_peaks.spread); 0 with fewer than 2. */
static double team_spread(struct team *t)
{
	if (t->nrates < 2)
		return 0;
	qsort(t->rates, t->nrates, sizeof(t->rates[0]), cmp_rate);
	const unsigned n = t->nrates;
	const double med = n % 2 ? t->rates[n / 2] : (t->rates[n / 2 - 1] + t->rates[n / 2]) / 2;
	return med > 0 ? t->best / med - 1 : 0;
}

/* ==== FLOP figures ==== */

static double flop_work(struct slot *s)
{
	keep(s->t->kernel(s->t->iters));
	return (double)s->t->iters * s->t->flop_per_iter;
}

/* Rounds of @k that last about @rep_s on this core: grown by 4x until a
 * run lasts a quarter of that, then scaled (which also warms the core up:
 * an AVX-512 unit powers up and the clock settles during the first runs). */
static uint64_t flop_calibrate(double (*k)(uint64_t), double rep_s)
{
	uint64_t it = 256;
	for (;;) {
		const double t0 = ana_peaks_now_s();
		keep(k(it));
		const double dt = ana_peaks_now_s() - t0;
		if (dt >= rep_s / 4 || it >= (UINT64_C(1) << 40)) {
			const double want = (double)it * rep_s / fmax(dt, 1e-9);
			return want < 1 ? 1 : (uint64_t)want;
		}
		it *= 4;
	}
}

/* FLOP peak of @k (@lanes elements per FMA) on @n members, GFLOP/s into *@out, its spread into *@spread. */
static int flop_figure(double (*k)(uint64_t), unsigned lanes, unsigned n, double seconds, double *out, double *spread,
		       char *err, size_t errlen)
{
	static struct team t; /* MAX_REPS rates: off the stack; one figure at a time (ana_peaks_measure()) */
	t = (struct team){
		.n = n,
		.min_reps = FLOP_MIN_REPS,
		.seconds = seconds,
		.work = flop_work,
		.kernel = k,
		.iters = flop_calibrate(k, seconds / REP_SLICES),
		.flop_per_iter = 2.0 * NACC * lanes,
	};
	const int rc = team_run(&t, err, errlen);
	*out = rc ? 0 : t.best * 1e-9;
	*spread = rc ? 0 : team_spread(&t);
	return rc;
}

/* ==== Memory figures ==== */

/* Bytes of the largest data or unified cache of cpu0 (one socket's last
 * level), 0 if sysfs does not say. */
static size_t llc_bytes(void)
{
	size_t best = 0;
	for (int i = 0; i < 16; i++) {
		char path[96], type[32] = "";
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
		FILE *f = fopen(path, "r");
		if (!f)
			continue; /* indexes need not be dense */
		const bool got = fscanf(f, "%31s", type) == 1;
		fclose(f);
		if (!got || !strcmp(type, "Instruction"))
			continue;
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		f = fopen(path, "r");
		if (!f)
			continue;
		unsigned long v = 0;
		char unit = 0;
		const int nf = fscanf(f, "%lu%c", &v, &unit);
		fclose(f);
		if (nf < 1)
			continue;
		size_t bytes = v;
		if (nf == 2 && (unit == 'K' || unit == 'k'))
			bytes = v << 10;
		else if (nf == 2 && unit == 'M')
			bytes = v << 20;
		else if (nf == 2 && unit == 'G')
			bytes = v << 30;
		if (bytes > best)
			best = bytes;
	}
	return best;
}

/* Elements per triad array: max(4 x LLC, 64 MiB) bytes (64 MiB alone when
 * the LLC is unknown), the three arrays at most TRIAD_TOTAL_CAP_BYTES, a
 * multiple of 64 bytes. */
static size_t triad_len(void)
{
	const size_t llc = llc_bytes();
	size_t bytes = llc && llc <= SIZE_MAX / 4 && 4 * llc > TRIAD_FALLBACK_BYTES ? 4 * llc : TRIAD_FALLBACK_BYTES;
	if (bytes > TRIAD_TOTAL_CAP_BYTES / 3)
		bytes = TRIAD_TOTAL_CAP_BYTES / 3;
	return bytes / 64 * 64 / sizeof(double);
}

static void triad_slice(const struct slot *s, size_t *lo, size_t *hi)
{
	const size_t len = s->t->len, n = s->t->n;
	*lo = len / n * s->i + (s->i < len % n ? s->i : len % n);
	*hi = *lo + len / n + (s->i < len % n);
}

/* First touch: the member's own slice, so its pages sit on its NUMA node. */
static void triad_prep(struct slot *s)
{
	size_t lo, hi;
	triad_slice(s, &lo, &hi);
	for (size_t j = lo; j < hi; j++) {
		s->t->a[j] = 0.0;
		s->t->b[j] = 1.0;
		s->t->c[j] = 2.0;
	}
}

static double triad_work(struct slot *s)
{
	size_t lo, hi;
	triad_slice(s, &lo, &hi);
	double *restrict a = s->t->a;
	const double *restrict b = s->t->b, *restrict c = s->t->c;
	const double q = 3.0; /* STREAM's scalar */
	for (size_t j = lo; j < hi; j++)
		a[j] = b[j] + q * c[j];
	return 24.0 * (double)(hi - lo); /* STREAM's count: read b, read c, write a */
}

/* @bytes of fresh anonymous pages, NULL if none. mmap() rather than malloc():
 * the pages are untouched until triad_prep() whatever the allocator does
 * (glibc's MALLOC_PERTURB_, which meson test sets, fills a malloc()ed block). */
static double *triad_array(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* STREAM-triad bandwidth on @n members, GB/s into *@out; the arrays are
 * mapped here (untouched until triad_prep()) and unmapped. */
static int mem_figure(unsigned n, double seconds, double *out, double *spread, char *err, size_t errlen)
{
	const size_t len = triad_len(), bytes = len * sizeof(double);
	static struct team t; /* as flop_figure()'s */
	t = (struct team){
		.n = n,
		.min_reps = MEM_MIN_REPS,
		.seconds = seconds,
		.prep = triad_prep,
		.work = triad_work,
		.len = len,
		.a = triad_array(bytes),
		.b = triad_array(bytes),
		.c = triad_array(bytes),
	};
	int rc;
	if (!t.a || !t.b || !t.c) {
		ana_peaks_seterr(err, errlen, "out of memory for the triad's 3 x %zu MiB", bytes / MIB);
		rc = -ENOMEM;
	} else {
		rc = team_run(&t, err, errlen);
	}
	double *const arr[] = { t.a, t.b, t.c };
	for (int i = 0; i < 3; i++)
		if (arr[i])
			munmap(arr[i], bytes);
	*out = rc ? 0 : t.best * 1e-9;
	*spread = rc ? 0 : team_spread(&t);
	return rc;
}

/* ==== Measuring ==== */

/* Runnable threads on the machine now, less this one (/proc/loadavg's 4th field, "3/412"); -1 unknown. */
static double runnable_others(void)
{
	FILE *f = fopen("/proc/loadavg", "r");
	double l1, l5, l15;
	long run = -1, all;
	if (f) {
		if (fscanf(f, "%lf %lf %lf %ld/%ld", &l1, &l5, &l15, &run, &all) != 5)
			run = -1;
		fclose(f);
	}
	return run < 1 ? -1 : (double)(run - 1);
}

/* The first "model name" of /proc/cpuinfo into @cpu (left "" if none). */
static void cpu_model(char *cpu, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		const char *colon = strchr(line, ':');
		if (strncmp(line, "model name", 10) || !colon)
			continue;
		colon++;
		colon += strspn(colon, " \t");
		snprintf(cpu, len, "%.*s", (int)strcspn(colon, "\n"), colon);
		break;
	}
	fclose(f);
}

int ana_peaks_measure(struct ana_peaks *p, double seconds, char *err, size_t errlen)
{
	assert(p && seconds > 0);
	memset(p, 0, sizeof(*p));
	ana_peaks_seterr(err, errlen, "%s", "");
	if (gethostname(p->host, sizeof(p->host)))
		p->host[0] = 0;
	p->host[sizeof(p->host) - 1] = 0; /* a truncated name need not be terminated */
	cpu_model(p->cpu, sizeof(p->cpu));
	cpu_set_t set; /* the CPUs this process may run on (taskset, a container's cpuset), else every online one */
	const long online = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : sysconf(_SC_NPROCESSORS_ONLN);
	const unsigned n = online < 1 ? 1u : online > 4096 ? 4096u : (unsigned)online;
	const struct fma_isa *isa = pick_isa();
	snprintf(p->isa, sizeof(p->isa), "%s", isa->name);
	p->busy_runnable = runnable_others();
	int rc = flop_figure(isa->k64, isa->lanes64, 1, seconds, &p->gflops64_1, &p->spread[0], err, errlen);
	if (!rc)
		rc = flop_figure(isa->k64, isa->lanes64, n, seconds, &p->gflops64_all, &p->spread[1], err, errlen);
	if (!rc)
		rc = flop_figure(isa->k32, isa->lanes32, 1, seconds, &p->gflops32_1, &p->spread[2], err, errlen);
	if (!rc)
		rc = flop_figure(isa->k32, isa->lanes32, n, seconds, &p->gflops32_all, &p->spread[3], err, errlen);
	if (!rc)
		rc = mem_figure(1, seconds, &p->gbps_1, &p->spread[4], err, errlen);
	if (!rc)
		rc = mem_figure(n, seconds, &p->gbps_all, &p->spread[5], err, errlen);
	if (!rc) {
		p->cpus = n;
		/* one busy core is one way to use them all: an all-core figure below the one-core one
		 * measured a machine whose other CPUs were taken away (a VM's steal), not a roof */
		p->gflops64_all = fmax(p->gflops64_all, p->gflops64_1);
		p->gflops32_all = fmax(p->gflops32_all, p->gflops32_1);
		p->gbps_all = fmax(p->gbps_all, p->gbps_1);
	}
	return rc;
}

/* ==== The profile file ==== */

/* The figure groups of the file, in file order, and where they live. */
/* The keys of ana_peaks.spread[], in its order ("spread" object of the file). */
static const char *const spread_key[6] = { "fp64_one_core", "fp64_all_cores", "fp32_one_core", "fp32_all_cores",
					   "memory_one_core", "memory_all_cores" };

static const struct group {
	const char *name;
	size_t n;
	const char *key[8];
	size_t off[8]; /* offsetof(struct ana_peaks, the double) */
} groups[] = {
	{ "fp64_gflops", 2, { "one_core", "all_cores" },
	  { offsetof(struct ana_peaks, gflops64_1), offsetof(struct ana_peaks, gflops64_all) } },
	{ "fp32_gflops", 2, { "one_core", "all_cores" },
	  { offsetof(struct ana_peaks, gflops32_1), offsetof(struct ana_peaks, gflops32_all) } },
	{ "memory_gbps", 2, { "one_core", "all_cores" },
	  { offsetof(struct ana_peaks, gbps_1), offsetof(struct ana_peaks, gbps_all) } },
	{ "link_gbps", ANA_DIRS, { "h2d", "d2h", "d2d", "p2p" },
	  { offsetof(struct ana_peaks, link_gbps[0]), offsetof(struct ana_peaks, link_gbps[1]),
	    offsetof(struct ana_peaks, link_gbps[2]), offsetof(struct ana_peaks, link_gbps[3]) } },
	{ "gpu", 7,
	  { "fp64_gflops", "fp32_gflops", "memory_gbps", "h2d_pinned_gbps", "h2d_pageable_gbps", "d2h_pinned_gbps",
	    "d2h_pageable_gbps" },
	  { offsetof(struct ana_peaks, gpu_gflops64), offsetof(struct ana_peaks, gpu_gflops32),
	    offsetof(struct ana_peaks, gpu_mem_gbps), offsetof(struct ana_peaks, gpu_h2d_pinned_gbps),
	    offsetof(struct ana_peaks, gpu_h2d_pageable_gbps), offsetof(struct ana_peaks, gpu_d2h_pinned_gbps),
	    offsetof(struct ana_peaks, gpu_d2h_pageable_gbps) } },
};
#define NGROUPS (sizeof(groups) / sizeof(groups[0]))
#define LINK_GROUP 3 /* groups[] index: not enough alone for a profile */
#define GPU_GROUP 4

static double *figure(struct ana_peaks *p, size_t off)
{
	return (double *)((char *)p + off);
}
static double figure_of(const struct ana_peaks *p, size_t off)
{
	return *(const double *)((const char *)p + off);
}

static bool known(double v)
{
	return v > 0 && isfinite(v);
}

/* @s as a JSON string: as it is when it is UTF-8, else with every byte
 * over 0x7f replaced by '?' (a host or CPU name in another encoding). */
static json_t *json_text(const char *s, size_t max)
{
	const size_t n = strnlen(s, max);
	json_t *v = json_stringn(s, n);
	if (v)
		return v;
	char buf[256];
	size_t i = 0;
	for (; i < n && i < sizeof(buf); i++)
		buf[i] = (unsigned char)s[i] > 0x7f ? '?' : s[i];
	return json_stringn(buf, i);
}

/* Sets @key of @o to the new reference @v; false (and @v released) on failure. */
static bool set_new(json_t *o, const char *key, json_t *v)
{
	return v && json_object_set_new(o, key, v) == 0;
}

int ana_peaks_write_json(FILE *f, const struct ana_peaks *p)
{
	json_t *root = json_object();
	bool ok = root && set_new(root, "schema", json_string(ANA_PEAKS_SCHEMA));
	const struct {
		const char *key, *v;
		size_t max;
	} strs[] = { { "host", p->host, sizeof(p->host) }, { "cpu", p->cpu, sizeof(p->cpu) },
		     { "isa", p->isa, sizeof(p->isa) } };
	/* "gpu_name" goes just before the "gpu" group (below) */
	for (size_t i = 0; ok && i < sizeof(strs) / sizeof(strs[0]); i++)
		if (strs[i].v[0])
			ok = set_new(root, strs[i].key, json_text(strs[i].v, strs[i].max));
	if (ok && p->cpus)
		ok = set_new(root, "cpus", json_integer(p->cpus));
	for (size_t g = 0; ok && g < NGROUPS; g++) {
		if (g == GPU_GROUP && p->gpu_name[0])
			ok = set_new(root, "gpu_name", json_text(p->gpu_name, sizeof(p->gpu_name)));
		json_t *o = ok ? json_object() : NULL;
		ok = o != NULL;
		for (size_t k = 0; ok && k < groups[g].n; k++) {
			const double v = figure_of(p, groups[g].off[k]);
			if (known(v))
				ok = set_new(o, groups[g].key[k], json_real(v));
		}
		if (ok && json_object_size(o))
			ok = set_new(root, groups[g].name, o);
		else
			json_decref(o);
	}
	/* how far the figures can be trusted: each one's spread, and the machine's load at the start */
	json_t *sp = ok ? json_object() : NULL;
	ok = sp != NULL;
	for (size_t k = 0; ok && k < 6; k++)
		if (p->spread[k] > 0 && isfinite(p->spread[k]))
			ok = set_new(sp, spread_key[k], json_real(p->spread[k]));
	if (ok && json_object_size(sp))
		ok = set_new(root, "spread", sp);
	else
		json_decref(sp);
	if (ok && p->busy_runnable >= 0 && isfinite(p->busy_runnable))
		ok = set_new(root, "busy_runnable", json_real(p->busy_runnable));
	if (!ok) {
		json_decref(root);
		return -ENOMEM;
	}
	int rc = json_dumpf(root, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
	json_decref(root);
	if (rc || fputc('\n', f) == EOF || fflush(f) || ferror(f))
		return -EIO;
	return 0;
}

/* The first `"key"` (blanks) `:` in [@s, @end), NULL if none. */
static const char *find_key(const char *s, const char *end, const char *key)
{
	const size_t kl = strlen(key);
	for (; s + kl + 2 < end; s++) {
		if (s[0] != '"' || memcmp(s + 1, key, kl) || s[kl + 1] != '"')
			continue;
		const char *q = s + kl + 2;
		while (q < end && (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n'))
			q++;
		if (q < end && *q == ':')
			return s;
	}
	return NULL;
}

/* The line (from 1) of member @key of @group (NULL: top level) in @text,
 * found by searching the text: the first @key after the first @group. The
 * parser keeps no positions; 0 if not found (a key written with escapes). */
static int key_line(const char *text, size_t len, const char *group, const char *key)
{
	const char *end = text + len, *at = text;
	if (group && !(at = find_key(text, end, group)))
		return 0;
	if (!(at = find_key(at, end, key)))
		return 0;
	int line = 1;
	for (const char *c = text; c < at; c++)
		line += *c == '\n';
	return line;
}

static const char *json_kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number";
	case JSON_TRUE: return "true";
	case JSON_FALSE: return "false";
	case JSON_NULL: return "null";
	}
	return "?";
}

/* What ana_peaks_load() is reading: for messages. */
struct src {
	const char *path, *text;
	size_t len;
	char *err;
	size_t errlen;
};

/* "PATH:LINE: GROUP.KEY: what" (no ":LINE" when the key is not found); returns -EINVAL. */
static int bad(const struct src *s, const char *group, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int bad(const struct src *s, const char *group, const char *key, const char *fmt, ...)
{
	char what[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	const int line = key_line(s->text, s->len, group, key);
	char at[24] = "";
	if (line)
		snprintf(at, sizeof(at), ":%d", line);
	ana_peaks_seterr(s->err, s->errlen, "%s%s: %s%s%s: %s", s->path, at, group ? group : "", group ? "." : "", key, what);
	return -EINVAL;
}

/* Optional string member @key of @root into @dst, truncated to @len - 1
 * bytes at a UTF-8 character boundary (so it writes back as it was read). */
static int load_str(const struct src *s, json_t *root, const char *key, char *dst, size_t len)
{
	json_t *v = json_object_get(root, key);
	if (!v)
		return 0;
	if (!json_is_string(v))
		return bad(s, NULL, key, "%s, not a string", json_kind(v));
	const char *str = json_string_value(v);
	size_t n = strlen(str);
	if (n >= len) {
		n = len - 1;
		while (n && ((unsigned char)str[n] & 0xc0) == 0x80)
			n--; /* str[n] continues a character: cut before it */
	}
	memcpy(dst, str, n);
	dst[n] = 0;
	return 0;
}

static int load_doc(const struct src *s, json_t *root, struct ana_peaks *q)
{
	if (!json_is_object(root)) {
		ana_peaks_seterr(s->err, s->errlen, "%s: %s, not a JSON object", s->path, json_kind(root));
		return -EINVAL;
	}
	json_t *v = json_object_get(root, "schema");
	if (!v) {
		ana_peaks_seterr(s->err, s->errlen, "%s: schema: missing (a machine profile has \"schema\": \"%s\")", s->path,
		       ANA_PEAKS_SCHEMA);
		return -EINVAL;
	}
	if (!json_is_string(v) || strcmp(json_string_value(v), ANA_PEAKS_SCHEMA))
		return bad(s, NULL, "schema", "%s%s%s, not \"%s\"", json_is_string(v) ? "\"" : "",
			   json_is_string(v) ? json_string_value(v) : json_kind(v), json_is_string(v) ? "\"" : "",
			   ANA_PEAKS_SCHEMA);
	int rc;
	if ((rc = load_str(s, root, "host", q->host, sizeof(q->host))) ||
	    (rc = load_str(s, root, "cpu", q->cpu, sizeof(q->cpu))) ||
	    (rc = load_str(s, root, "isa", q->isa, sizeof(q->isa))) ||
	    (rc = load_str(s, root, "gpu_name", q->gpu_name, sizeof(q->gpu_name))))
		return rc;
	if ((v = json_object_get(root, "cpus"))) {
		if (!json_is_integer(v))
			return bad(s, NULL, "cpus", "%s, not an integer", json_kind(v));
		if (json_integer_value(v) < 0 || json_integer_value(v) > UINT32_MAX)
			return bad(s, NULL, "cpus", "%" JSON_INTEGER_FORMAT " is not in [0, 4294967295]",
				   json_integer_value(v));
		q->cpus = (uint32_t)json_integer_value(v);
	}
	bool any = false;
	for (size_t g = 0; g < NGROUPS; g++) {
		json_t *o = json_object_get(root, groups[g].name);
		if (!o)
			continue;
		if (!json_is_object(o))
			return bad(s, NULL, groups[g].name, "%s, not an object", json_kind(o));
		for (size_t k = 0; k < groups[g].n; k++) {
			if (!(v = json_object_get(o, groups[g].key[k])))
				continue;
			if (!json_is_number(v))
				return bad(s, groups[g].name, groups[g].key[k], "%s, not a positive finite number",
					   json_kind(v));
			const double x = json_number_value(v);
			if (!known(x))
				return bad(s, groups[g].name, groups[g].key[k], "%g is not a positive finite number",
					   x);
			*figure(q, groups[g].off[k]) = x;
			any |= g != LINK_GROUP;
		}
	}
	q->busy_runnable = -1;
	if ((v = json_object_get(root, "busy_runnable"))) {
		if (!json_is_number(v) || !(json_number_value(v) >= 0) || !isfinite(json_number_value(v)))
			return bad(s, NULL, "busy_runnable", "not a finite number >= 0");
		q->busy_runnable = json_number_value(v);
	}
	if ((v = json_object_get(root, "spread"))) {
		if (!json_is_object(v))
			return bad(s, NULL, "spread", "%s, not an object", json_kind(v));
		for (size_t k = 0; k < 6; k++) {
			json_t *x = json_object_get(v, spread_key[k]);
			if (!x)
				continue;
			if (!json_is_number(x) || !(json_number_value(x) >= 0) || !isfinite(json_number_value(x)))
				return bad(s, "spread", spread_key[k], "not a finite number >= 0");
			q->spread[k] = json_number_value(x);
		}
	}
	if (!any) {
		ana_peaks_seterr(s->err, s->errlen, "%s: no figure: a machine profile needs at least one of %s, %s, %s, %s",
		       s->path, groups[0].name, groups[1].name, groups[2].name, groups[GPU_GROUP].name);
		return -EINVAL;
	}
	return 0;
}

int ana_peaks_load(const char *path, struct ana_peaks *p, char *err, size_t errlen)
{
	ana_peaks_seterr(err, errlen, "%s", "");
	FILE *f = fopen(path, "rb");
	if (!f) {
		const int e = errno;
		ana_peaks_seterr(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	char *text = NULL;
	size_t len = 0, cap = 0;
	int rc = 0;
	for (;;) {
		if (len == cap) {
			char *t = cap < SIZE_MAX / 2 ? realloc(text, cap = cap ? 2 * cap : 4096) : NULL;
			if (!t) {
				rc = -ENOMEM;
				ana_peaks_seterr(err, errlen, "%s: out of memory", path);
				break;
			}
			text = t;
		}
		len += fread(text + len, 1, cap - len, f);
		if (len < cap) {
			if (ferror(f)) {
				rc = -(errno ? errno : EIO);
				ana_peaks_seterr(err, errlen, "%s: %s", path, strerror(-rc));
			}
			break;
		}
	}
	fclose(f);
	if (!rc) {
		json_error_t je;
		json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
		const struct src s = { path, text, len, err, errlen };
		struct ana_peaks q = { .host = "" };
		if (!root) {
			ana_peaks_seterr(err, errlen, "%s:%d:%d: not JSON: %s", path, je.line, je.column, je.text);
			rc = -EINVAL;
		} else if (!(rc = load_doc(&s, root, &q))) {
			*p = q;
		}
		json_decref(root);
	}
	free(text);
	return rc;
}
