/*
 * recorder/rec_gpu.c - GPU sections timed with CUDA event pairs.
 *
 * Threads and what each may call (doc/gpu-timing.md has the reasoning):
 *
 *   application thread   pt_gpu_begin/pt_gpu_end: cudaStreamIsCapturing,
 *                        cudaStreamGetDevice (or cudaGetDevice) the first
 *                        time it meets a stream, two cudaEventRecord. Takes
 *                        event pairs from a per-thread cache, refilled from
 *                        the device's pool with a trylock; never waits,
 *                        never creates events (event creation is the CUDA
 *                        thread's: doc/gpu-timing.md §1).
 *   CUDA thread          ("ptz-gpu", one per open recorder, started by the
 *                        first pt_gpu_begin) the only thread of ours that
 *                        calls anything else: sets its own capture mode
 *                        (thread-local), creates a device's whole pool of
 *                        events at its first use, resolves
 *                        pairs oldest-first per stream with cudaEventQuery,
 *                        takes clock anchors, samples device memory
 *                        (process RSS: the flusher, rec_flush.c), and
 *                        writes GPU_RANGE, COUNTER and ERROR
 *                        records into its own ring like any thread.
 *   flusher              never calls CUDA.
 *
 * Hand-off: a pair that was recorded goes from the application thread to
 * the CUDA thread through a liburcu wait-free concurrent queue (wfcqueue:
 * wait-free enqueue, one dequeuer). A pair returns to its device's pool only
 * after its end event completed and both elapsed times were read, so an
 * event is never re-recorded while pending. Pool size per device is
 * bounded (PTZ_GPU_EVENTS pairs, default 1024; at most 256 in flight on one
 * stream, so that our event records never fill a stream's command queue): an
 * empty pool drops the GPU
 * half, counted.
 *
 * Clock (per device): an anchor is an event recorded on a private
 * non-blocking stream and spin-queried, bracketed by two host tick reads;
 * the best of ANCHOR_TRIES by round trip is kept, its host time taken as
 * the bracket's midpoint. Anchors are chained by the elapsed time between
 * consecutive ones into a GPU clock g (ms, double), and host ticks are
 * fitted as h = a + b·g by least squares over the last ANCHOR_HIST
 * anchors, so b absorbs the drift between the two oscillators. A GPU start
 * maps to a + b·(g_anchor + elapsed(anchor, start)) with the newest anchor;
 * the end adds b·elapsed(start, end). Starts are not clamped.
 *
 * Process-wide state (the runtime, pools, stream queues) outlives a
 * recorder: pt_close() stops the CUDA thread after a bounded drain, and
 * pairs still pending then are kept (stale) and recycled by the next CUDA
 * thread once complete. Events and streams are never destroyed: the runtime
 * may be unloading at exit (as PyTorch's NCCL event cache does).
 *
 * Closing (pt_close() on one thread while others still call
 * pt_gpu_begin/pt_gpu_end), in three steps, so that every GPU half whose
 * CPU section is recorded is a range or a count, and every count is in the
 * trace:
 *   1. rec_gpu_stop(), recorder open: closing_gen = gen, so a
 *      pt_gpu_begin() that reads it takes no pair (CPU section only, the
 *      GPU half counted GPU_UNFINISHED) and the drain has an end; a pair
 *      taken before is still ended and handed off. The CUDA thread drains
 *      (resolves what completes within PTZ_GPU_DRAIN_MS), counts what it
 *      holds as unfinished and exits.
 *   2. pt_close() stores r->gen = 0: calls that read it record nothing and
 *      count nothing (a pair ended then is stale: counts nowhere).
 *   3. rec_gpu_close(): waits until no pt_gpu_begin/pt_gpu_end is running
 *      (gpu_inflight, a Dekker handshake with the gen store: [G1]/[G2]),
 *      so every call that saw the recorder open has counted and handed
 *      off; splices the hand-off queue once more and counts what it finds
 *      as unfinished; writes every count not yet written on the closing
 *      thread's ring (rec_close_emit()), before the final drain.
 *
 * ERROR records (write_drops()): drop_written[c] advances only by what was
 * written; a record that finds the ring full is tried again on a later
 * pass, and at stop the CUDA thread keeps passing (within the drain limit)
 * until its counts are written; what is left then is written at step 3.
 */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <urcu/wfcqueue.h>

#include "recorder/rec_cuda.h"
#include "recorder/rec_internal.h"
#include "recorder/rec_ring.h" /* SLOT_* kinds for rec_emit() */

#define GPU_MAX_DEV 16
#define GPU_CACHE 8         /* pairs per thread per device */
#define GPU_STACK 64        /* open GPU sections per thread */
#define GPU_CHUNK 32        /* pairs created per refill */
#define GPU_LOW 16          /* refill when a pool has fewer free pairs */
#define GPU_SDEV 4          /* streams whose device a thread remembers */
#define GPU_STREAM_PAIRS 256 /* pairs in flight on one stream (doc/gpu-timing.md §1) */
#define GPU_STREAM_SLOTS 512 /* streams counted; more share no cap */
#define ANCHOR_TRIES 5
#define ANCHOR_HIST 8
#define ANCHOR_SPIN_NS 5000000u  /* give up an anchor try after 5 ms */
#define SAMPLE_NS 100000000u     /* device memory every 100 ms */
#define NCODES (PT_ERRC_GPU_UNFINISHED + 1)

struct gpu_pair {
	struct cds_wfcq_node qnode;
	struct gpu_pair *next;   /* pool free list, or stream queue */
	rc_event start, end;
	rc_stream stream;
	uint64_t seq, launch_ticks, gen;
	uint32_t id, dev;
	uint32_t sslot;          /* stream_slots[] index + 1 it counts in; 0 none */
	bool stale;              /* from a closed recorder: recycle, do not write */
};

struct gpu_pool {
	pthread_mutex_t lock;
	struct gpu_pair *free;
	unsigned nfree, created;
	_Atomic bool want;       /* a thread found it empty, or first use */
	bool exhausted;          /* creation failed: stop trying */
};

/* CUDA-thread-only state, kept across recorders. */
struct gpu_stream_q {
	rc_stream s;
	struct gpu_pair *head, *tail;
	struct gpu_stream_q *next;
};
struct gpu_dev {
	bool init, anchored;
	rc_stream astream;
	rc_event aev, scratch[ANCHOR_TRIES];
	double g_anchor;                  /* g of aev, ms */
	int nh;                           /* anchors in history (ring) */
	double hg[ANCHOR_HIST], hh[ANCHOR_HIST];
	uint64_t h0;                      /* host ticks of the first anchor */
	double a, b;                      /* h - h0 = a + b*g */
	uint64_t last_anchor_ns, last_sample_ns;
	uint32_t mem_id;
	struct gpu_stream_q *streams;
};

/* A stream's device, remembered by the thread that launches on it, so that
 * pt_gpu_begin() makes one CUDA call fewer (cudaStreamGetDevice: 48 ns on
 * an H100 with CUDA 13, doc/gpu-timing.md §6.1). */
struct gpu_sdev {
	rc_stream s;
	int dev;
};

struct gpu_tls {
	struct gpu_pair *cache[GPU_MAX_DEV][GPU_CACHE];
	uint8_t ncache[GPU_MAX_DEV];
	struct gpu_sdev sdev[GPU_SDEV];
	uint8_t nsdev, sdev_next;
	struct gpu_pair *open[GPU_STACK]; /* NULL: that section has no GPU half */
	uint32_t depth;
};

static struct rc_api api;
static void *lib;
static _Atomic int gpu_state;       /* enum pt_gpu_state */
static _Atomic int gpu_error;
static char off_reason[192];
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

static struct gpu_pool pools[GPU_MAX_DEV];
static struct gpu_dev devs[GPU_MAX_DEV];
static unsigned pool_bound = 1024;
static unsigned anchor_ms = 1000;
static bool anchor_quick;           /* default period: first anchors 100 ms apart */
static unsigned drain_ms = 2000;

static struct cds_wfcq_head q_head;
static struct cds_wfcq_tail q_tail;
static _Atomic uint64_t next_seq;
static _Atomic uint64_t n_launched, n_ranges, n_early;
static _Atomic uint64_t pending_pairs; /* handed off, not yet resolved or recycled */
static _Atomic uint64_t n_drop[NCODES];
static uint64_t drop_written[NCODES]; /* ctl_lock / CUDA thread: counts written as ERROR records */
static uint32_t off_id;              /* ctl_lock: interned off_reason, 0 if none yet */
/* Generation whose pt_close() has begun (rec_gpu_stop()); written under
 * ctl_lock, read relaxed by pt_gpu_begin(): a stale read only lets a begin
 * take a pair, which its end hands off and step 3 counts. */
static _Atomic uint64_t closing_gen;
/* pt_gpu_begin/pt_gpu_end calls running (step 3 above). Written by every
 * application thread, read by the closing thread: its own cache line. */
static alignas(64) _Atomic uint64_t gpu_inflight;

static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ctl_cond;
static pthread_t cuda_thr;
static bool thr_running;
static _Atomic uint64_t thr_gen;     /* recorder generation the CUDA thread serves */
static _Atomic bool thr_stop;
static uint64_t stopped_gen;         /* ctl_lock: generation pt_close() stopped */
static struct pt_recorder *thr_rec;
static double host_ticks_per_ms;
static uint64_t cal_ticks, cal_mono;
static int cal_src;                  /* ctl_lock: rec_clock_source of cal_ticks and of devs[]' anchors */

static pthread_key_t tls_key;
static __thread struct gpu_tls *gpu_tls;
/* In a fork child: the forking thread's cache, the parent's. Kept
 * reachable (leak checkers), never used or freed. Relaxed: this thread
 * only. */
static _Atomic(struct gpu_tls *) fork_parent_tls;

static inline void drop(uint32_t code)
{
	atomic_fetch_add_explicit(&n_drop[code], 1, memory_order_relaxed);
}

static const char *err_name(rc_err e)
{
	const char *n = api.GetErrorName ? api.GetErrorName(e) : NULL;
	return n ? n : "cudaError";
}

/* ---------------------------------------------------------------- loading */

static unsigned env_uint(const char *name, unsigned def, unsigned lo, unsigned hi)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return def;
	char *end;
	unsigned long x = strtoul(v, &end, 10);
	if (*end || x < lo || x > hi)
		return def;
	return (unsigned)x;
}

static void tls_free(void *p)
{
	struct gpu_tls *t = p;
	gpu_tls = NULL;
	if (!t)
		return;
	for (unsigned d = 0; d < GPU_MAX_DEV; d++) {
		if (!t->ncache[d])
			continue;
		pthread_mutex_lock(&pools[d].lock);
		for (unsigned i = 0; i < t->ncache[d]; i++) {
			t->cache[d][i]->next = pools[d].free;
			pools[d].free = t->cache[d][i];
			pools[d].nfree++;
		}
		pthread_mutex_unlock(&pools[d].lock);
	}
	free(t); /* pairs of sections still open are leaked (bounded) */
}

/* Switches GPU timing off for good; @why is kept for the trace. */
static void go_off(int err, const char *why)
{
	snprintf(off_reason, sizeof(off_reason), "GPU timing off: %s", why);
	atomic_store_explicit(&gpu_error, err, memory_order_relaxed);
	atomic_store_explicit(&gpu_state, PT_GPU_OFF, memory_order_release);
}

#define SYM(field, name, required)                                            \
	do {                                                                  \
		*(void **)&api.field = dlsym(lib, name);                      \
		if (!api.field && (required)) {                               \
			snprintf(why, sizeof(why), "%s not found in the CUDA runtime", name); \
			go_off(0, why);                                       \
			return;                                               \
		}                                                             \
	} while (0)

static const char *const names[] = { "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so" };

/* Loads the runtime and checks for a device; called once, under load_lock. */
static void load(void)
{
	char why[160];
	const char *off = getenv("PTZ_GPU");
	if (off && strcmp(off, "0") == 0)
		{ go_off(0, "disabled by PTZ_GPU=0"); return; }
	const char *path = getenv("PTZ_CUDA_RUNTIME");
	if (path && *path) {
		lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!lib) {
			snprintf(why, sizeof(why), "cannot load PTZ_CUDA_RUNTIME: %s", dlerror());
			{ go_off(0, why); return; }
		}
	} else {
		/* a runtime the application already loaded first: same instance */
		for (size_t i = 0; !lib && i < sizeof(names) / sizeof(names[0]); i++)
			lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
		for (size_t i = 0; !lib && i < sizeof(names) / sizeof(names[0]); i++)
			lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		if (!lib)
			{ go_off(0, "no CUDA runtime found (libcudart.so.13/.12/.11.0)"); return; }
	}
	SYM(GetDeviceCount, "cudaGetDeviceCount", 1);
	SYM(GetDevice, "cudaGetDevice", 1);
	SYM(SetDevice, "cudaSetDevice", 1);
	SYM(StreamGetDevice, "cudaStreamGetDevice", 0);
	SYM(StreamIsCapturing, "cudaStreamIsCapturing", 1);
	SYM(ThreadExchangeStreamCaptureMode, "cudaThreadExchangeStreamCaptureMode", 0);
	SYM(StreamCreateWithFlags, "cudaStreamCreateWithFlags", 1);
	SYM(EventCreateWithFlags, "cudaEventCreateWithFlags", 1);
	SYM(EventRecord, "cudaEventRecord", 1);
	SYM(EventQuery, "cudaEventQuery", 1);
	SYM(EventElapsedTime, "cudaEventElapsedTime", 1);
	SYM(MemGetInfo, "cudaMemGetInfo", 1);
	SYM(GetErrorName, "cudaGetErrorName", 0);
	SYM(RuntimeGetVersion, "cudaRuntimeGetVersion", 0);
	int n = 0;
	rc_err e = api.GetDeviceCount(&n);
	if (e != RC_SUCCESS) {
		snprintf(why, sizeof(why), "cudaGetDeviceCount: %s (%d)", err_name(e), e);
		{ go_off(e, why); return; }
	}
	if (n <= 0)
		{ go_off(RC_ERR_NO_DEVICE, "no CUDA device"); return; }
	pool_bound = env_uint("PTZ_GPU_EVENTS", 1024, 2, 1u << 20);
	anchor_ms = env_uint("PTZ_GPU_ANCHOR_MS", 1000, 0, 3600000);
	anchor_quick = !getenv("PTZ_GPU_ANCHOR_MS");
	drain_ms = env_uint("PTZ_GPU_DRAIN_MS", 2000, 0, 600000);
	for (unsigned d = 0; d < GPU_MAX_DEV; d++)
		pthread_mutex_init(&pools[d].lock, NULL);
	cds_wfcq_init(&q_head, &q_tail);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ctl_cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_key_create(&tls_key, tls_free);
	atomic_store_explicit(&gpu_state, PT_GPU_ON, memory_order_release);
}

/* ----------------------------------------------------------- CUDA thread */

/*
 * Pairs in flight per stream, capped at GPU_STREAM_PAIRS: with 1,024 pairs
 * queued behind a 500 ms kernel on one stream, cudaEventRecord blocked
 * until the kernel ended (the stream's command queue was full); with 256
 * it never did (doc/gpu-timing.md §6.1). A fixed open-addressing table of
 * counters keyed by the stream handle + 1 (0: free), filled with a CAS and
 * never emptied (a handle reused by a new stream is the same queue to us);
 * when it is full a stream goes uncounted, bounded by the pool alone.
 */
static struct {
	_Atomic uintptr_t key;
	_Atomic uint32_t n;
} stream_slots[GPU_STREAM_SLOTS];

/* Takes one in-flight place on stream @s: the slot index + 1 (0 when the
 * table is full: uncounted), or UINT32_MAX when the stream has its cap. */
static uint32_t stream_take(rc_stream s)
{
	const uintptr_t key = (uintptr_t)s + 1;
	size_t h = (size_t)(((uint64_t)key * 0x9e3779b97f4a7c15ull) >> 40) % GPU_STREAM_SLOTS;
	for (unsigned k = 0; k < GPU_STREAM_SLOTS; k++, h = (h + 1) % GPU_STREAM_SLOTS) {
		uintptr_t cur = atomic_load_explicit(&stream_slots[h].key, memory_order_acquire);
		if (cur == 0) {
			uintptr_t zero = 0;
			if (atomic_compare_exchange_strong_explicit(&stream_slots[h].key, &zero, key,
								    memory_order_acq_rel, memory_order_acquire))
				cur = key;
			else
				cur = zero; /* another thread took it: for @s too? */
		}
		if (cur != key)
			continue;
		if (atomic_fetch_add_explicit(&stream_slots[h].n, 1, memory_order_relaxed) >= GPU_STREAM_PAIRS) {
			atomic_fetch_sub_explicit(&stream_slots[h].n, 1, memory_order_relaxed);
			return UINT32_MAX;
		}
		return (uint32_t)h + 1;
	}
	return 0;
}

/* Gives back @p's in-flight place (any thread; before the pair is reused). */
static void stream_give(struct gpu_pair *p)
{
	if (p->sslot)
		atomic_fetch_sub_explicit(&stream_slots[p->sslot - 1].n, 1, memory_order_relaxed);
	p->sslot = 0;
}

static void pool_put(struct gpu_pair *p)
{
	struct gpu_pool *pl = &pools[p->dev];
	pthread_mutex_lock(&pl->lock);
	p->next = pl->free;
	pl->free = p;
	pl->nfree++;
	pthread_mutex_unlock(&pl->lock);
}

static bool dev_init(unsigned d)
{
	struct gpu_dev *g = &devs[d];
	if (g->init)
		return true;
	if (api.SetDevice((int)d) != RC_SUCCESS)
		return false;
	if (api.StreamCreateWithFlags(&g->astream, RC_STREAM_NON_BLOCKING) != RC_SUCCESS)
		return false;
	if (api.EventCreateWithFlags(&g->aev, RC_EVENT_DEFAULT) != RC_SUCCESS)
		return false;
	for (int k = 0; k < ANCHOR_TRIES; k++)
		if (api.EventCreateWithFlags(&g->scratch[k], RC_EVENT_DEFAULT) != RC_SUCCESS)
			return false;
	g->init = true;
	return true;
}

/* Creates pairs for pools that asked, up to the bound. */
static void refill(void)
{
	for (unsigned d = 0; d < GPU_MAX_DEV; d++) {
		struct gpu_pool *pl = &pools[d];
		if (!atomic_load_explicit(&pl->want, memory_order_acquire) || pl->exhausted)
			continue;
		atomic_store_explicit(&pl->want, false, memory_order_relaxed);
		if (!dev_init(d)) {
			pl->exhausted = true;
			continue;
		}
		pthread_mutex_lock(&pl->lock);
		unsigned nfree = pl->nfree, created = pl->created;
		pthread_mutex_unlock(&pl->lock);
		if (nfree >= GPU_LOW || created >= pool_bound)
			continue;
		/* The first fill makes the whole pool (PTZ_GPU_EVENTS pairs, 2048
		 * events by default, a few ms on this thread): growing it on
		 * demand lost 15 - 54% of the GPU halves of a program launching
		 * 24 sections a millisecond on an H100, filling it at once 0.2%
		 * (doc/gpu-timing.md §6.1). Later refills (after a creation
		 * failed part way) grow geometrically. */
		unsigned n = created ? PT_MIN(PT_MAX(GPU_CHUNK, created), pool_bound - created) : pool_bound;
		api.SetDevice((int)d);
		for (unsigned i = 0; i < n; i++) {
			struct gpu_pair *p = calloc(1, sizeof(*p));
			if (!p)
				break;
			if (api.EventCreateWithFlags(&p->start, RC_EVENT_DEFAULT) != RC_SUCCESS ||
			    api.EventCreateWithFlags(&p->end, RC_EVENT_DEFAULT) != RC_SUCCESS) {
				free(p); /* an event created alone is leaked: never destroyed */
				pl->exhausted = true;
				break;
			}
			cds_wfcq_node_init(&p->qnode);
			p->dev = d;
			pthread_mutex_lock(&pl->lock);
			pl->created++;
			pthread_mutex_unlock(&pl->lock);
			pool_put(p);
		}
	}
}

static void fit(struct gpu_dev *g)
{
	int n = PT_MIN(g->nh, ANCHOR_HIST);
	if (n < 2) {
		g->b = host_ticks_per_ms;
		g->a = g->hh[0] - g->b * g->hg[0];
		return;
	}
	double mg = 0, mh = 0;
	for (int i = 0; i < n; i++) {
		mg += g->hg[i];
		mh += g->hh[i];
	}
	mg /= n;
	mh /= n;
	double sgg = 0, sgh = 0;
	for (int i = 0; i < n; i++) {
		sgg += (g->hg[i] - mg) * (g->hg[i] - mg);
		sgh += (g->hg[i] - mg) * (g->hh[i] - mh);
	}
	g->b = sgg > 0 ? sgh / sgg : host_ticks_per_ms;
	g->a = mh - g->b * mg;
}

/* One anchor on device @d; false on a CUDA error (then @err is set). */
static bool take_anchor(unsigned d, rc_err *err)
{
	struct gpu_dev *g = &devs[d];
	*err = api.SetDevice((int)d);
	if (*err != RC_SUCCESS)
		return false;
	int best = -1;
	uint64_t bt0 = 0, bt1 = 0;
	for (int k = 0; k < ANCHOR_TRIES; k++) {
		uint64_t t0 = rec_ticks(), m0 = rec_mono_ns();
		*err = api.EventRecord(g->scratch[k], g->astream);
		if (*err != RC_SUCCESS)
			return false;
		rc_err q;
		while ((q = api.EventQuery(g->scratch[k])) == RC_ERR_NOT_READY)
			if (rec_mono_ns() - m0 > ANCHOR_SPIN_NS)
				break;
		uint64_t t1 = rec_ticks();
		if (q == RC_ERR_NOT_READY)
			continue; /* device busy: this try is useless */
		if (q != RC_SUCCESS) {
			*err = q;
			return false;
		}
		if (best < 0 || t1 - t0 < bt1 - bt0) {
			best = k;
			bt0 = t0;
			bt1 = t1;
		}
	}
	*err = RC_SUCCESS;
	if (best < 0)
		return true; /* try again next round */
	uint64_t mid = bt0 + (bt1 - bt0) / 2;
	double gnew = 0;
	if (g->anchored) {
		float ms;
		*err = api.EventElapsedTime(&ms, g->aev, g->scratch[best]);
		if (*err != RC_SUCCESS)
			return false;
		gnew = g->g_anchor + ms;
	} else {
		g->h0 = mid;
	}
	rc_event tmp = g->aev;
	g->aev = g->scratch[best];
	g->scratch[best] = tmp;
	g->g_anchor = gnew;
	int slot = g->nh % ANCHOR_HIST;
	g->hg[slot] = gnew;
	g->hh[slot] = (double)(int64_t)(mid - g->h0);
	g->nh++;
	g->anchored = true;
	/* host tick rate for a single-anchor map (fit()), refined as time
	 * passes: read here, where a map is made, not on every poll */
	uint64_t t1, m1, re;
	uint32_t br;
	rec_clock_triple(&t1, &m1, &re, &br);
	if (host_ticks_per_ms == 0 && m1 - cal_mono < 2000000u) {
		/* the first estimate needs 2 ms since ensure_thread()'s reading:
		 * waited here, on this thread, never on the application's */
		struct timespec ts = { 0, (long)(2000000u - (m1 - cal_mono)) };
		nanosleep(&ts, NULL);
		rec_clock_triple(&t1, &m1, &re, &br);
	}
	if (host_ticks_per_ms == 0 || m1 - cal_mono > 20000000u)
		host_ticks_per_ms = (double)(t1 - cal_ticks) * 1e6 / (double)(m1 - cal_mono);
	fit(g);
	g->last_anchor_ns = rec_mono_ns();
	return true;
}

/* With the default period the second and third anchors come 100 and
 * 200 ms after the first, so the slope is fitted within the first 0.3 s;
 * then every PTZ_GPU_ANCHOR_MS. A period set in the environment is kept
 * as given. */
static uint64_t anchor_period(const struct gpu_dev *g)
{
	uint64_t ms = anchor_ms;
	if (anchor_quick && g->nh < 3 && ms > 100u * (unsigned)g->nh)
		ms = 100u * (unsigned)g->nh;
	return ms * 1000000u;
}

static struct gpu_stream_q *stream_q(struct gpu_dev *g, rc_stream s)
{
	struct gpu_stream_q *q;
	for (q = g->streams; q; q = q->next)
		if (q->s == s)
			return q;
	q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	q->s = s;
	q->next = g->streams;
	g->streams = q;
	return q;
}

/* Moves every handed-off pair to its stream's queue, in launch order; a
 * loss counts for generation @gen only. It makes no CUDA call, so it runs
 * even once the runtime is unloading. */
static void take_handoffs(uint64_t gen)
{
	struct cds_wfcq_node *node, *n;
	enum cds_wfcq_ret ret;
	struct cds_wfcq_head h;
	struct cds_wfcq_tail t;
	cds_wfcq_init(&h, &t);
	ret = __cds_wfcq_splice_blocking(&h, &t, &q_head, &q_tail);
	if (ret == CDS_WFCQ_RET_SRC_EMPTY)
		return;
	__cds_wfcq_for_each_blocking_safe(&h, &t, node, n) {
		struct gpu_pair *p = caa_container_of(node, struct gpu_pair, qnode);
		/* [H2] the pair's fields, written before [H1] in pt_gpu_end();
		 * the ordering is wfcqueue's (liburcu, invisible to TSan) */
		PT_TSAN_ACQUIRE(p);
		cds_wfcq_node_init(&p->qnode);
		p->next = NULL;
		struct gpu_stream_q *q = stream_q(&devs[p->dev], p->stream);
		if (!q) { /* out of memory: the pair is lost, counted */
			if (!p->stale && p->gen == gen)
				drop(PT_ERRC_GPU_QUEUE_FULL);
			stream_give(p); /* the pair is never reused; its place is */
			atomic_fetch_sub_explicit(&pending_pairs, 1, memory_order_relaxed);
			continue; /* its events may be pending: never re-used */
		}
		if (q->tail)
			q->tail->next = p;
		else
			q->head = p;
		q->tail = p;
	}
}

static void emit_range(struct pt_recorder *r, struct gpu_dev *g, struct gpu_pair *p, float off_ms, float dur_ms)
{
	double gs = g->g_anchor + off_ms;
	double hs = g->a + g->b * gs;
	double he = hs + g->b * (dur_ms > 0 ? dur_ms : 0);
	int64_t s = (int64_t)g->h0 + (int64_t)llround(hs);
	int64_t e = (int64_t)g->h0 + (int64_t)llround(he);
	uint64_t us = s > 0 ? (uint64_t)s : 0, ue = e > s ? (uint64_t)e : us;
	uint64_t v[4] = { us, ue, p->seq, (uint64_t)(uintptr_t)p->stream };
	if (!rec_emit(r, SLOT_GPU_RANGE, p->id, p->dev, p->launch_ticks, v, 4)) {
		/* resolved, but this thread's ring is full (a burst of ranges
		 * resolved in one pass): the range is lost, counted as a GPU
		 * half not timed, not as a range (its record is in
		 * lost_records too) */
		drop(PT_ERRC_GPU_QUEUE_FULL);
		return;
	}
	atomic_fetch_add_explicit(&n_ranges, 1, memory_order_relaxed);
	if (us < p->launch_ticks) {
		atomic_fetch_add_explicit(&n_early, 1, memory_order_relaxed);
		drop(PT_ERRC_GPU_EARLY_START);
	}
}

/* Resolves completed pairs, oldest first per stream. Returns false when the
 * runtime is unloading (nothing more can be resolved). */
static bool resolve(struct pt_recorder *r, uint64_t gen)
{
	for (unsigned d = 0; d < GPU_MAX_DEV; d++) {
		struct gpu_dev *g = &devs[d];
		if (!g->streams)
			continue;
		if (!g->anchored) {
			rc_err e;
			if (!take_anchor(d, &e) && e == RC_ERR_CUDART_UNLOADING)
				return false;
			if (!g->anchored)
				continue;
		}
		api.SetDevice((int)d);
		for (struct gpu_stream_q *q = g->streams; q; q = q->next) {
			struct gpu_pair *p;
			while ((p = q->head) != NULL) {
				rc_err e = api.EventQuery(p->end);
				if (e == RC_SUCCESS && p->stale) /* its end may never have been recorded */
					e = api.EventQuery(p->start);
				if (e == RC_ERR_NOT_READY)
					break; /* stream order: the later ones are not done either */
				if (e == RC_ERR_CUDART_UNLOADING)
					return false;
				float dur = 0, off = 0;
				if (e == RC_SUCCESS) {
					e = api.EventElapsedTime(&dur, p->start, p->end);
					if (e == RC_SUCCESS)
						e = api.EventElapsedTime(&off, g->aev, p->start);
				}
				if (!p->stale && p->gen == gen) {
					if (e == RC_SUCCESS)
						emit_range(r, g, p, off, dur);
					else /* recorded into a graph capture: not a time */
						drop(e == RC_ERR_CAPTURED_EVENT ? PT_ERRC_GPU_CAPTURING : PT_ERRC_GPU_CUDA);
				}
				q->head = p->next;
				if (!q->head)
					q->tail = NULL;
				atomic_fetch_sub_explicit(&pending_pairs, 1, memory_order_relaxed);
				stream_give(p);
				pool_put(p);
			}
		}
	}
	return true;
}

static void sample(struct pt_recorder *r, uint64_t now)
{
	for (unsigned d = 0; d < GPU_MAX_DEV; d++) {
		struct gpu_dev *g = &devs[d];
		if (!g->init || now - g->last_sample_ns < SAMPLE_NS)
			continue;
		g->last_sample_ns = now;
		size_t fr = 0, total = 0;
		if (api.SetDevice((int)d) != RC_SUCCESS || api.MemGetInfo(&fr, &total) != RC_SUCCESS)
			continue;
		if (!g->mem_id) {
			char name[64];
			snprintf(name, sizeof(name), "device memory used (all processes), GPU %u", d);
			g->mem_id = pt_intern(r, name);
		}
		pt_counter(r, g->mem_id, (int64_t)(total - fr));
	}
}

/*
 * ERROR records for GPU losses counted and not yet written. drop_written[c]
 * advances only by the records written: one that finds the ring full
 * stops this pass and is tried again on the next one, not counted as a
 * lost record each time (rec_gpu_error()). @final (pt_close(), step 3):
 * written with rec_close_emit(), which waits for room; a record it cannot
 * write is counted lost there, and marked written here (never retried).
 * The GPU-off reason instant goes with its ERROR, once that is written.
 * Returns false when a record found the ring full (not @final).
 */
static bool write_drops(struct pt_recorder *r, bool final)
{
	for (uint32_t c = PT_ERRC_GPU_POOL_EMPTY; c < NCODES; c++) {
		uint64_t dlt = atomic_load_explicit(&n_drop[c], memory_order_relaxed) - drop_written[c];
		while (dlt) {
			uint32_t k = dlt > UINT32_MAX ? UINT32_MAX : (uint32_t)dlt;
			bool ok = final ? rec_close_emit(r, SLOT_ERROR, k, c) : rec_gpu_error(r, c, k);
			if (!ok && !final)
				return false; /* ring full: the next pass goes on from here */
			drop_written[c] += k;
			dlt -= k;
			if (ok && c == PT_ERRC_GPU_OFF &&
			    atomic_load_explicit(&gpu_state, memory_order_acquire) == PT_GPU_OFF) {
				/* the reason, in every trace that lost GPU halves;
				 * written with them even while recording is disabled
				 * (not pt_instant()) */
				if (final) {
					if (off_id)
						rec_close_emit(r, SLOT_INSTANT, off_id, 0);
				} else {
					rec_emit(r, SLOT_INSTANT, pt_intern(r, off_reason), 0, 0, NULL, 0);
				}
			}
		}
	}
	return true;
}

/* Counts the pairs of generation @gen in the stream queues as unfinished
 * and marks every queued pair stale (recycled by a later CUDA thread once
 * complete, writing nothing). CUDA thread, or ctl_lock with none running. */
static void count_unfinished(uint64_t gen)
{
	uint64_t unfinished = 0;
	for (unsigned d = 0; d < GPU_MAX_DEV; d++)
		for (struct gpu_stream_q *q = devs[d].streams; q; q = q->next)
			for (struct gpu_pair *p = q->head; p; p = p->next) {
				if (!p->stale && p->gen == gen)
					unfinished++;
				p->stale = true;
			}
	atomic_fetch_add_explicit(&n_drop[PT_ERRC_GPU_UNFINISHED], unfinished, memory_order_relaxed);
}

static void *cuda_main(void *arg)
{
	struct pt_recorder *r = arg;
	uint64_t gen = atomic_load_explicit(&thr_gen, memory_order_acquire);
	pt_thread_name(r, 0, PT_FMT_GPU_THREAD_NAME);
	if (api.ThreadExchangeStreamCaptureMode) {
		/* our queries must never invalidate another thread's capture */
		int mode = RC_CAPTURE_MODE_THREAD_LOCAL;
		api.ThreadExchangeStreamCaptureMode(&mode);
	}
	bool unloading = false;
	uint64_t stop_deadline = 0;
	for (;;) {
		uint64_t now = rec_mono_ns();
		if (!unloading) {
			refill();
			take_handoffs(gen);
			for (unsigned d = 0; d < GPU_MAX_DEV; d++) {
				struct gpu_dev *g = &devs[d];
				rc_err e;
				if (g->init && (!g->anchored ||
						(anchor_ms && now - g->last_anchor_ns >= anchor_period(g))) &&
				    !take_anchor(d, &e) && e == RC_ERR_CUDART_UNLOADING)
					unloading = true;
			}
			if (!unloading && !resolve(r, gen))
				unloading = true;
			if (!unloading)
				sample(r, now);
		}
		/* an ERROR that found this thread's ring full: the flusher makes
		 * room within its poll interval, the next pass writes it (counts
		 * made since by other threads do not hold the stop back) */
		bool unwritten = !write_drops(r, false);
		bool stopping = atomic_load_explicit(&thr_stop, memory_order_acquire);
		uint64_t left = atomic_load_explicit(&pending_pairs, memory_order_relaxed);
		if (stopping) {
			if (!stop_deadline)
				stop_deadline = now + (uint64_t)drain_ms * 1000000u;
			if ((left == 0 && !unwritten) || unloading || now >= stop_deadline)
				break;
		}
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		long wait_ns = left || stopping || unwritten ? 1000000 : 10000000;
		ts.tv_nsec += wait_ns;
		ts.tv_sec += ts.tv_nsec / 1000000000;
		ts.tv_nsec %= 1000000000;
		pthread_mutex_lock(&ctl_lock);
		if (!atomic_load_explicit(&thr_stop, memory_order_relaxed) || stopping)
			pthread_cond_timedwait(&ctl_cond, &ctl_lock, &ts);
		pthread_mutex_unlock(&ctl_lock);
	}
	/* what is still pending stays queued (stale) for a later thread; only
	 * this recorder's are its unfinished ones (an older recorder's pair
	 * ended after its pt_close() is stale already, see pt_gpu_end()).
	 * Spliced even when the runtime is unloading (no CUDA call): a pair
	 * handed off after this thread last took them is counted too. */
	take_handoffs(gen);
	count_unfinished(gen);
	write_drops(r, false); /* what does not fit is written by rec_gpu_close() */
	return NULL;
}

/* Starts the CUDA thread for recorder @r if it is not running for it. */
static PT_COLD void ensure_thread(struct pt_recorder *r, uint64_t gen)
{
	pthread_mutex_lock(&ctl_lock);
	/* not for a recorder being closed: its CUDA thread already stopped */
	if (!thr_running && !atomic_load_explicit(&thr_stop, memory_order_relaxed) && gen != stopped_gen &&
	    atomic_load_explicit(&r->gen, memory_order_acquire) == gen) {
		if (cal_ticks && cal_src != rec_clock_source) {
			/* PTZ_CLOCK changed at this pt_open() (it is read at each):
			 * the calibration and every device's anchors and fit are in
			 * the old ticks. No CUDA thread runs here (ctl_lock,
			 * !thr_running): devs[] is ours to reset; each device
			 * anchors again on the new thread's first pass. */
			cal_ticks = 0;
			for (unsigned d = 0; d < GPU_MAX_DEV; d++) {
				devs[d].anchored = false;
				devs[d].nh = 0;
			}
		}
		if (!cal_ticks) {
			cal_src = rec_clock_source;
			uint64_t re;
			uint32_t br;
			rec_clock_triple(&cal_ticks, &cal_mono, &re, &br);
			/* TSC: estimated by the CUDA thread at its first anchor,
			 * 2 ms or more after this reading (take_anchor()), so the
			 * application's first pt_gpu_begin() never sleeps */
			host_ticks_per_ms = rec_clock_source == PT_CLOCK_MONOTONIC ? 1e6 : 0;
		}
		thr_rec = r;
		atomic_store_explicit(&thr_gen, gen, memory_order_release);
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		int rc = pthread_create(&cuda_thr, NULL, cuda_main, r);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (rc == 0) {
			pthread_setname_np(cuda_thr, PT_FMT_GPU_THREAD_NAME);
			thr_running = true;
		} else {
			atomic_store_explicit(&thr_gen, 0, memory_order_relaxed);
		}
	}
	pthread_mutex_unlock(&ctl_lock);
}

/* ---------------------------------------------------------------- API */

static PT_COLD void first_use(void)
{
	pthread_mutex_lock(&load_lock);
	if (atomic_load_explicit(&gpu_state, memory_order_acquire) == PT_GPU_UNUSED) {
		load();
	}
	pthread_mutex_unlock(&load_lock);
}

static PT_COLD struct gpu_tls *tls_get(void)
{
	struct gpu_tls *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	pthread_setspecific(tls_key, t);
	gpu_tls = t;
	return t;
}

/* Asks the CUDA thread for more pairs; when this thread found none at all,
 * also wakes it from its idle wait (a futex wake at most, never a wait). */
static void ask_refill(struct gpu_pool *pl, bool empty)
{
	if (!atomic_exchange_explicit(&pl->want, true, memory_order_acq_rel) && empty)
		pthread_cond_signal(&ctl_cond);
}

/* Takes a pair for device @d from the thread's cache, refilling it from the
 * pool without waiting; NULL when none is free. */
static struct gpu_pair *pair_get(struct gpu_tls *t, unsigned d)
{
	if (t->ncache[d])
		return t->cache[d][--t->ncache[d]];
	struct gpu_pool *pl = &pools[d];
	if (pthread_mutex_trylock(&pl->lock) == 0) {
		while (pl->free && t->ncache[d] < GPU_CACHE / 2) {
			t->cache[d][t->ncache[d]++] = pl->free;
			pl->free = pl->free->next;
			pl->nfree--;
		}
		bool low = pl->nfree < GPU_LOW;
		pthread_mutex_unlock(&pl->lock);
		if (low)
			ask_refill(pl, t->ncache[d] == 0);
	} else {
		ask_refill(pl, false);
	}
	return t->ncache[d] ? t->cache[d][--t->ncache[d]] : NULL;
}

static void pair_unget(struct gpu_tls *t, struct gpu_pair *p)
{
	if (t->ncache[p->dev] < GPU_CACHE)
		t->cache[p->dev][t->ncache[p->dev]++] = p;
	else
		pool_put(p);
}

static inline void push_open(struct gpu_tls *t, struct gpu_pair *p)
{
	if (t && t->depth < GPU_STACK)
		t->open[t->depth] = p;
	if (t)
		t->depth++;
}

/*
 * [G1] Entry of pt_gpu_begin/pt_gpu_end: the increment, then a seq_cst
 * fence before the call reads r->gen (or hot_gen) anywhere. Pairs with
 * [G2] in rec_gpu_close() (store r->gen = 0, fence, read gpu_inflight):
 * of the two fences, if ours comes first the closing thread sees this
 * call in flight and waits for its exit; else this call reads gen 0 and
 * counts nothing. Relaxed increment: the fence orders it.
 */
static inline void inflight_enter(void)
{
	atomic_fetch_add_explicit(&gpu_inflight, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
}

/* [G3] release: this call's counts and hand-off before its exit. Pairs
 * with [G4] in rec_gpu_close(). */
static inline void inflight_exit(void)
{
	atomic_fetch_sub_explicit(&gpu_inflight, 1, memory_order_release);
}

/* Special handles whose device is the calling thread's current one:
 * 0 (legacy default stream), cudaStreamLegacy (1), cudaStreamPerThread (2). */
static inline bool stream_is_current(rc_stream s)
{
	return (uintptr_t)s <= 2;
}

/* The device of stream @s: remembered by this thread, else asked of CUDA
 * (cudaStreamGetDevice, or cudaGetDevice before CUDA 12.8) and remembered.
 * Handles naming the current device are asked every time (the thread may
 * have called cudaSetDevice). False on a CUDA error or a device out of range. */
static bool stream_device(struct gpu_tls *t, rc_stream s, int *dev)
{
	if (!stream_is_current(s))
		for (unsigned i = 0; i < t->nsdev; i++)
			if (t->sdev[i].s == s) {
				*dev = t->sdev[i].dev;
				return true;
			}
	rc_err e = api.StreamGetDevice ? api.StreamGetDevice(s, dev) : api.GetDevice(dev);
	if (e != RC_SUCCESS || *dev < 0 || *dev >= GPU_MAX_DEV)
		return false;
	if (!stream_is_current(s) && api.StreamGetDevice) {
		unsigned i = t->nsdev < GPU_SDEV ? t->nsdev++ : t->sdev_next++ % GPU_SDEV;
		t->sdev[i] = (struct gpu_sdev){ s, *dev };
	}
	return true;
}

static void stream_forget(struct gpu_tls *t, rc_stream s)
{
	for (unsigned i = 0; i < t->nsdev; i++)
		if (t->sdev[i].s == s)
			t->sdev[i].s = NULL; /* NULL is never looked up: stream_is_current() */
}

static void gpu_begin(pt_recorder *r, uint32_t id, void *cuda_stream)
{
	int st = atomic_load_explicit(&gpu_state, memory_order_acquire);
	if (unlikely(st == PT_GPU_UNUSED)) {
		if (atomic_load_explicit(&r->gen, memory_order_relaxed) == 0)
			return; /* closed: nothing to record, nothing to load */
		first_use();
		st = atomic_load_explicit(&gpu_state, memory_order_acquire);
	}
	struct gpu_tls *t = gpu_tls;
	/* Each call counts once, or not at all (pt_stats_info.gpu_dropped): a
	 * GPU half not timed is counted only if its CPU section was recorded;
	 * a skipped section (full ring: lost_sections; disabled; closed) has
	 * no GPU half to count. */
	uint32_t why;
	if (st != PT_GPU_ON) {
		why = PT_ERRC_GPU_OFF;
		goto cpu_only;
	}
	uint64_t gen = atomic_load_explicit(&r->gen, memory_order_acquire);
	if (unlikely(gen == 0)) {
		pt_begin(r, id);
		push_open(t, NULL); /* keeps pt_gpu_end() paired */
		return;
	}
	if (unlikely(gen == atomic_load_explicit(&closing_gen, memory_order_relaxed))) {
		/* pt_close() has begun: no new GPU half (the drain would chase
		 * it), counted as not finished at close */
		why = PT_ERRC_GPU_UNFINISHED;
		goto cpu_only;
	}
	if (unlikely(atomic_load_explicit(&thr_gen, memory_order_acquire) != gen))
		ensure_thread(r, gen);
	if (unlikely(!t) && !(t = tls_get())) {
		why = PT_ERRC_GPU_QUEUE_FULL; /* no memory for this thread's state */
		goto cpu_only;
	}
	rc_stream s = cuda_stream;
	int capt = RC_CAPTURE_NONE, dev = 0;
	/* Asked every time (72 ns on an H100, CUDA 13): recording an event
	 * into a capture in cudaStreamCaptureModeGlobal invalidated the
	 * application's capture on a real device (doc/gpu-timing.md §4). */
	rc_err e = api.StreamIsCapturing(s, &capt);
	if (e != RC_SUCCESS && e != RC_ERR_CAPTURE_IMPLICIT) {
		why = PT_ERRC_GPU_CUDA;
		goto cpu_only;
	}
	if (e != RC_SUCCESS || capt != RC_CAPTURE_NONE) {
		/* cudaErrorStreamCaptureImplicit: the legacy stream while
		 * another stream captures, also a capture in progress */
		why = PT_ERRC_GPU_CAPTURING;
		goto cpu_only;
	}
	if (!stream_device(t, s, &dev)) {
		why = PT_ERRC_GPU_CUDA;
		goto cpu_only;
	}
	if (t->depth >= GPU_STACK) {
		/* no slot to keep its pair for pt_gpu_end(): a pair taken here
		 * would never be ended, resolved, counted or returned */
		why = PT_ERRC_GPU_QUEUE_FULL;
		goto cpu_only;
	}
	struct gpu_pair *p = pair_get(t, (unsigned)dev);
	if (!p) {
		why = PT_ERRC_GPU_POOL_EMPTY;
		goto cpu_only;
	}
	uint32_t slot = stream_take(s);
	if (slot == UINT32_MAX) { /* this stream's share of the pool is in flight */
		pair_unget(t, p);
		why = PT_ERRC_GPU_POOL_EMPTY;
		goto cpu_only;
	}
	p->sslot = slot;
	uint64_t seq = atomic_fetch_add_explicit(&next_seq, 1, memory_order_relaxed) + 1;
	uint64_t tick = rec_begin_gpu(r, id, (uint32_t)dev, (uint64_t)(uintptr_t)s, seq);
	if (!tick) { /* the section itself was skipped (full ring, disabled) */
		stream_give(p);
		pair_unget(t, p);
		push_open(t, NULL);
		return;
	}
	e = api.EventRecord(p->start, s);
	if (e != RC_SUCCESS) {
		/* a remembered device may be stale (the handle of a destroyed
		 * stream reused on another device): look it up again next time */
		stream_forget(t, s);
		drop(PT_ERRC_GPU_CUDA);
		stream_give(p);
		pair_unget(t, p);
		push_open(t, NULL);
		return;
	}
	p->stream = s;
	p->seq = seq;
	p->launch_ticks = tick;
	p->gen = gen;
	p->id = id;
	p->stale = false;
	push_open(t, p);
	return;
cpu_only:
	if (rec_begin_cpu(r, id))
		drop(why);
	push_open(t, NULL);
}

void pt_gpu_begin(pt_recorder *r, uint32_t id, void *cuda_stream)
{
	if (unlikely(!r))
		return;
	inflight_enter();
	gpu_begin(r, id, cuda_stream);
	inflight_exit();
}

static void gpu_end(pt_recorder *r, uint32_t id, void *cuda_stream)
{
	struct gpu_tls *t = gpu_tls;
	struct gpu_pair *p = NULL;
	if (t && t->depth) {
		t->depth--;
		if (t->depth < GPU_STACK)
			p = t->open[t->depth];
	}
	if (p && p->gen != atomic_load_explicit(&r->gen, memory_order_relaxed)) {
		/* its recorder closed (and maybe another opened) since the
		 * begin: the GPU half belongs to a trace already written and
		 * counts nowhere; the pair is recycled once its start event
		 * completed, writing nothing */
		pt_end(r, id);
		p->stale = true;
		atomic_fetch_add_explicit(&pending_pairs, 1, memory_order_relaxed);
		PT_TSAN_RELEASE(p); /* [H1], as below */
		cds_wfcq_enqueue(&q_head, &q_tail, &p->qnode);
		return;
	}
	if (p) {
		rc_err e = RC_ERR_INVALID_HANDLE;
		if (p->stream == (rc_stream)cuda_stream &&
		    atomic_load_explicit(&gpu_state, memory_order_relaxed) == PT_GPU_ON)
			e = api.EventRecord(p->end, p->stream);
		pt_end(r, id);
		if (e != RC_SUCCESS) {
			/* the start event may still be pending: the CUDA thread
			 * recycles the pair once it completed, writing nothing */
			drop(PT_ERRC_GPU_CUDA);
			p->stale = true;
		} else {
			atomic_fetch_add_explicit(&n_launched, 1, memory_order_relaxed);
		}
		atomic_fetch_add_explicit(&pending_pairs, 1, memory_order_relaxed);
		/* [H1] hand-off: the pair's fields before the enqueue (the
		 * ordering is wfcqueue's). Pairs with [H2] in take_handoffs(). */
		PT_TSAN_RELEASE(p);
		cds_wfcq_enqueue(&q_head, &q_tail, &p->qnode);
		return;
	}
	pt_end(r, id);
}

void pt_gpu_end(pt_recorder *r, uint32_t id, void *cuda_stream)
{
	if (unlikely(!r))
		return;
	inflight_enter();
	gpu_end(r, id, cuda_stream);
	inflight_exit();
}

/* ---------------------------------------------------------------- lifecycle */

bool rec_gpu_stop(struct pt_recorder *r)
{
	if (atomic_load_explicit(&gpu_state, memory_order_acquire) == PT_GPU_UNUSED)
		return false; /* no GPU section in this process yet: nothing to stop */
	pthread_mutex_lock(&ctl_lock);
	stopped_gen = atomic_load_explicit(&r->gen, memory_order_relaxed);
	atomic_store_explicit(&closing_gen, stopped_gen, memory_order_relaxed);
	bool running = thr_running;
	if (running) {
		atomic_store_explicit(&thr_stop, true, memory_order_release);
		pthread_cond_signal(&ctl_cond);
	}
	pthread_mutex_unlock(&ctl_lock);
	if (running) {
		pthread_join(cuda_thr, NULL);
		pthread_mutex_lock(&ctl_lock);
		thr_running = false;
		thr_rec = NULL;
		atomic_store_explicit(&thr_gen, 0, memory_order_relaxed);
		atomic_store_explicit(&thr_stop, false, memory_order_release);
		pthread_mutex_unlock(&ctl_lock);
	}
	/* losses counted since the thread's last write (or with GPU off),
	 * while the recorder is open: pt_intern() and rec_ring_for() work */
	pthread_mutex_lock(&ctl_lock);
	if (atomic_load_explicit(&gpu_state, memory_order_acquire) == PT_GPU_OFF)
		off_id = pt_intern(r, off_reason);
	write_drops(r, false);
	pthread_mutex_unlock(&ctl_lock);
	return true;
}

void rec_gpu_close(struct pt_recorder *r)
{
	/* [G2] pt_close() stored r->gen = 0 before this call; the fence
	 * orders that store before the read of gpu_inflight. Pairs with [G1]. */
	atomic_thread_fence(memory_order_seq_cst);
	/* [G4] acquire: the counts and hand-offs of the calls that saw the
	 * recorder open. Pairs with [G3]. They never block (a trylock, a
	 * first-use load, ensure_thread(), which step 1 made refuse), so
	 * this ends; not under ctl_lock, which ensure_thread() takes. */
	/* Bounded all the same: a call stuck in the driver (a hung GPU) or a
	 * stopped thread must not hang pt_close(). Past PTZ_GPU_DRAIN_MS + 1 s
	 * the close goes on: the hand-off queue takes concurrent pushes, and
	 * what such a call hands off later counts nowhere (recorder.h). */
	for (uint64_t waits = 0; atomic_load_explicit(&gpu_inflight, memory_order_acquire) != 0 &&
				  waits < ((uint64_t)drain_ms + 1000) * 10;
	     waits++) {
		struct timespec ts = { 0, 100000 }; /* 0.1 ms */
		nanosleep(&ts, NULL);
	}
	const uint64_t gen = r->cur_gen;
	pthread_mutex_lock(&ctl_lock);
	/* No CUDA thread runs (rec_gpu_stop() joined it, ensure_thread()
	 * refuses a closed recorder): devs[]' stream queues are ours. The
	 * queue exists only once the runtime loaded (state ON); in a fork
	 * child (OFF) it may hold a node a parent thread was enqueueing. */
	if (atomic_load_explicit(&gpu_state, memory_order_acquire) == PT_GPU_ON) {
		take_handoffs(gen);
		count_unfinished(gen);
	}
	write_drops(r, true);
	pthread_mutex_unlock(&ctl_lock);
}

void rec_gpu_open(void)
{
	/* pt_close() joined the previous recorder's CUDA thread and the new
	 * one starts only after the new generation is published: nothing
	 * writes drop_written now. Calls racing with pt_close()/pt_open() on
	 * other threads may still count in either recorder. */
	pthread_mutex_lock(&ctl_lock);
	atomic_store_explicit(&n_launched, 0, memory_order_relaxed);
	atomic_store_explicit(&n_ranges, 0, memory_order_relaxed);
	atomic_store_explicit(&n_early, 0, memory_order_relaxed);
	for (uint32_t c = 0; c < NCODES; c++) {
		atomic_store_explicit(&n_drop[c], 0, memory_order_relaxed);
		drop_written[c] = 0;
	}
	atomic_store_explicit(&closing_gen, 0, memory_order_relaxed);
	pthread_mutex_unlock(&ctl_lock);
}

void rec_gpu_atfork_child(void)
{
	/* the CUDA thread does not exist here, and the runtime must not be
	 * used in a child of a process that initialized it */
	thr_running = false;
	if (atomic_load_explicit(&gpu_state, memory_order_relaxed) != PT_GPU_OFF)
		go_off(0, "fork");
	/* The forking thread's cache and open pairs are the parent's: never
	 * returned here. Its exit would run tls_free(), which locks a pool
	 * mutex another parent thread may have held at the fork (the child
	 * hung for good); the pools are not used here again (GPU off), so
	 * their mutexes are reinitialized too. */
	if (gpu_tls)
		pthread_setspecific(tls_key, NULL);
	atomic_store_explicit(&fork_parent_tls, gpu_tls, memory_order_relaxed);
	gpu_tls = NULL;
	for (unsigned d = 0; d < GPU_MAX_DEV; d++)
		pthread_mutex_init(&pools[d].lock, NULL);
	/* a thread that is not here (the CUDA thread) may have held it; the
	 * child's pt_close() takes it to write the drop counts */
	pthread_mutex_init(&ctl_lock, NULL);
	/* the parent's GPU halves lost so far are the parent's: a child's own
	 * trace counts only its own */
	for (uint32_t c = PT_ERRC_GPU_POOL_EMPTY; c < NCODES; c++)
		drop_written[c] = atomic_load_explicit(&n_drop[c], memory_order_relaxed);
	/* calls of other parent threads in flight at the fork never exit
	 * here: the child's pt_close() must not wait for them */
	atomic_store_explicit(&gpu_inflight, 0, memory_order_relaxed);
}

void rec_gpu_stats(struct pt_stats_info *out)
{
	out->gpu_launched = atomic_load_explicit(&n_launched, memory_order_relaxed);
	out->gpu_ranges = atomic_load_explicit(&n_ranges, memory_order_relaxed);
	out->gpu_early_starts = atomic_load_explicit(&n_early, memory_order_relaxed);
	uint64_t d = 0;
	for (uint32_t c = PT_ERRC_GPU_POOL_EMPTY; c < NCODES; c++)
		if (c != PT_ERRC_GPU_EARLY_START)
			d += atomic_load_explicit(&n_drop[c], memory_order_relaxed);
	out->gpu_dropped = d;
	out->gpu_state = atomic_load_explicit(&gpu_state, memory_order_acquire);
	out->gpu_error = atomic_load_explicit(&gpu_error, memory_order_relaxed);
}
