/*
 * tests/gpu/fake_cudart.c - a fake CUDA runtime for the GPU-less tests of
 * the recorder's CUDA path (simulation described in fake_cudart.h).
 *
 * Exports the runtime entry points recorder/rec_gpu.c dlsym()s, with the
 * CUDA 13 signatures (handles as void *, errors as int), plus the fake_*
 * scripting API. Built as a shared library the recorder dlopen()s through
 * PTZ_CUDA_RUNTIME, and linked by the test programs, which therefore share
 * its state. Nothing here is ever freed: like the real runtime's objects,
 * events and streams live until the process ends.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_cudart.h"

#define API __attribute__((visibility("default")))

/* The runtime entry points, with cuda_runtime_api.h's shapes (handles as
 * void *, cudaError_t and the capture enums as int), as rec_cuda.h has them. */
API int cudaGetDeviceCount(int *count);
API int cudaGetDevice(int *device);
API int cudaSetDevice(int device);
API int cudaStreamGetDevice(void *stream, int *device);
API int cudaStreamIsCapturing(void *stream, int *status);
API int cudaThreadExchangeStreamCaptureMode(int *mode);
API int cudaStreamCreateWithFlags(void **stream, unsigned flags);
API int cudaEventCreateWithFlags(void **event, unsigned flags);
API int cudaEventRecord(void *event, void *stream);
API int cudaEventQuery(void *event);
API int cudaEventElapsedTime(float *ms, void *start, void *end);
API int cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes);
API const char *cudaGetErrorName(int err);
API int cudaRuntimeGetVersion(int *version);
#define MAGIC_EV 0x45564e54u /* "EVNT" */
#define MAGIC_ST 0x5354524du /* "STRM" */
#define MAX_INJ 16

/* Host-time costs and delays (ns): [lo, hi) uniform. */
#define RECORD_COST_LO 400
#define RECORD_COST_HI 1200
#define EXEC_DELAY_LO 1000
#define EXEC_DELAY_HI 3000
#define VISIBLE_LO 500
#define VISIBLE_HI 2500
#define QUERY_COST_LO 100
#define QUERY_COST_HI 500
#define GPU_RES_NS 500 /* device timestamp resolution */

enum fn {
	F_GetDeviceCount,
	F_GetDevice,
	F_SetDevice,
	F_StreamGetDevice,
	F_StreamIsCapturing,
	F_ThreadExchangeStreamCaptureMode,
	F_StreamCreateWithFlags,
	F_EventCreateWithFlags,
	F_EventRecord,
	F_EventQuery,
	F_EventElapsedTime,
	F_MemGetInfo,
	F_GetErrorName,
	F_RuntimeGetVersion,
	F_N
};

static const char *const fn_names[F_N] = {
	"cudaGetDeviceCount", "cudaGetDevice", "cudaSetDevice", "cudaStreamGetDevice",
	"cudaStreamIsCapturing", "cudaThreadExchangeStreamCaptureMode", "cudaStreamCreateWithFlags",
	"cudaEventCreateWithFlags", "cudaEventRecord", "cudaEventQuery", "cudaEventElapsedTime",
	"cudaMemGetInfo", "cudaGetErrorName", "cudaRuntimeGetVersion",
};

struct stream {
	uint32_t magic;
	int dev;
	unsigned flags;
	bool logged;
	int capture;              /* 0 none, 1 active, 2 invalidated */
	uint64_t busy_until;      /* ns; work queued before ends then */
	uint64_t last_stamp;
	_Atomic uint64_t record_calls, stamps;
	struct stream *next;      /* all streams, for the legacy capture rule */
};

struct event {
	uint32_t magic;
	int dev;
	unsigned flags;
	bool recorded, captured;
	void *stream;             /* handle of the last record */
	uint64_t stamp, visible;  /* ns: executed at, visible to queries from */
	struct event *next;       /* all events: the runtime owns them, as a
				   * real context does (LSan sees them reachable
				   * even when the recorder drops a handle) */
};

struct inj {
	int fn, err;
	unsigned skip, count;
	void *stream;
};

static pthread_mutex_t lk = PTHREAD_MUTEX_INITIALIZER;
static int n_dev = 1, dev_err;
static double ppm[FAKE_MAX_DEV] = { 100, 100, 100, 100, 100, 100, 100, 100 };
static uint64_t t_base;                   /* host ns where the device clocks are pinned */
static double gpu_base[FAKE_MAX_DEV];     /* device clock at t_base, ns */
static struct stream legacy[FAKE_MAX_DEV];
static struct stream *all_streams;
static struct event *all_events;
static struct inj injs[MAX_INJ];
static unsigned event_limit;
static struct fake_stamp *logv;
static size_t log_n, log_cap;
static _Atomic int unloading;
static _Atomic uint64_t calls[F_N];
static _Atomic uint64_t events_created;
static _Atomic int last_mode = -1;

static __thread int cur_dev;
static __thread int capture_mode;
static __thread struct stream *per_thread[FAKE_MAX_DEV];
static __thread uint64_t rng;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Uniform in [lo, hi); per-thread xorshift64, seeded per thread. */
static uint64_t jitter(uint64_t lo, uint64_t hi)
{
	if (!rng) {
		static _Atomic uint64_t seeds = 0x9e3779b97f4a7c15u;
		rng = atomic_fetch_add_explicit(&seeds, 0x632be59bd9b4e019u, memory_order_relaxed) | 1;
	}
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return lo + rng % (hi - lo);
}

static void spin(uint64_t ns)
{
	uint64_t t = now_ns();
	while (now_ns() - t < ns)
		;
}

/* Pins the device clocks at first use: large offsets, unrelated to the host's. Under lk. */
static void pin(void)
{
	if (t_base)
		return;
	t_base = now_ns();
	for (int d = 0; d < FAKE_MAX_DEV; d++)
		gpu_base[d] = 1000000000000000.0 + d * 77777777777.0;
}

/* Device clock at host time @t in ns, unquantized. Under lk. */
static double gpu_exact(int dev, uint64_t t)
{
	pin();
	return gpu_base[dev] + (double)(int64_t)(t - t_base) * (1.0 + ppm[dev] * 1e-6);
}

/* Device clock at host time @t, at the device's resolution. Under lk. */
static int64_t gpu_at(int dev, uint64_t t)
{
	int64_t g = (int64_t)gpu_exact(dev, t);
	return g / GPU_RES_NS * GPU_RES_NS;
}

/* Counts the call; returns the error an unloading runtime gives, else 0. */
static int enter(int f)
{
	atomic_fetch_add_explicit(&calls[f], 1, memory_order_relaxed);
	return atomic_load_explicit(&unloading, memory_order_relaxed) ? FAKE_ERR_CUDART_UNLOADING : 0;
}

/* Injected error for this call of @f on @s (or @s2), 0 if none. Under lk. */
static int injected(int f, void *s, void *s2)
{
	for (int i = 0; i < MAX_INJ; i++) {
		struct inj *j = &injs[i];
		if (j->fn != f || !j->count || (j->stream && j->stream != s && j->stream != s2))
			continue;
		if (j->skip) {
			j->skip--;
			continue;
		}
		j->count--;
		return j->err;
	}
	return 0;
}

/* The stream a handle names for the calling thread; NULL if invalid. Under lk. */
static struct stream *stream_of(void *h)
{
	uintptr_t v = (uintptr_t)h;
	if (v == 0 || v == 1) {
		legacy[cur_dev].dev = cur_dev;
		legacy[cur_dev].magic = MAGIC_ST;
		return &legacy[cur_dev];
	}
	if (v == 2) {
		if (!per_thread[cur_dev]) {
			per_thread[cur_dev] = calloc(1, sizeof(struct stream));
			if (!per_thread[cur_dev])
				return NULL;
			per_thread[cur_dev]->magic = MAGIC_ST;
			per_thread[cur_dev]->dev = cur_dev;
			/* listed (the legacy capture rule; stays reachable for LSan) */
			per_thread[cur_dev]->next = all_streams;
			all_streams = per_thread[cur_dev];
		}
		return per_thread[cur_dev];
	}
	struct stream *s = h;
	return s->magic == MAGIC_ST ? s : NULL;
}

static struct event *event_of(void *h)
{
	struct event *e = h;
	return e && e->magic == MAGIC_EV ? e : NULL;
}

static struct stream *new_stream(int dev, unsigned flags, bool logged)
{
	struct stream *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->magic = MAGIC_ST;
	s->dev = dev;
	s->flags = flags;
	s->logged = logged;
	s->next = all_streams;
	all_streams = s;
	return s;
}

static bool complete(const struct event *e, uint64_t now)
{
	return !e->recorded || (!e->captured && now >= e->visible);
}

/* ---------------------------------------------------------- runtime API */

API int cudaGetDeviceCount(int *count)
{
	int e = enter(F_GetDeviceCount);
	if (e)
		return e;
	pthread_mutex_lock(&lk);
	e = injected(F_GetDeviceCount, NULL, NULL);
	if (!e)
		e = dev_err;
	*count = e ? 0 : n_dev;
	pthread_mutex_unlock(&lk);
	return e;
}

API int cudaGetDevice(int *device)
{
	int e = enter(F_GetDevice);
	if (e)
		return e;
	*device = cur_dev;
	return 0;
}

API int cudaSetDevice(int device)
{
	int e = enter(F_SetDevice);
	if (e)
		return e;
	pthread_mutex_lock(&lk);
	e = injected(F_SetDevice, NULL, NULL);
	if (!e && dev_err)
		e = dev_err;
	if (!e && (device < 0 || device >= n_dev))
		e = FAKE_ERR_INVALID_DEVICE;
	pthread_mutex_unlock(&lk);
	if (!e)
		cur_dev = device;
	return e;
}

API int cudaStreamGetDevice(void *stream, int *device)
{
	int e = enter(F_StreamGetDevice);
	if (e)
		return e;
	pthread_mutex_lock(&lk);
	e = injected(F_StreamGetDevice, stream, NULL);
	struct stream *s = e ? NULL : stream_of(stream);
	if (!e && !s)
		e = FAKE_ERR_INVALID_HANDLE;
	if (!e)
		*device = s->dev;
	pthread_mutex_unlock(&lk);
	return e;
}

API int cudaStreamIsCapturing(void *stream, int *status)
{
	int e = enter(F_StreamIsCapturing);
	if (e)
		return e;
	pthread_mutex_lock(&lk);
	e = injected(F_StreamIsCapturing, stream, NULL);
	struct stream *s = e ? NULL : stream_of(stream);
	if (!e && !s)
		e = FAKE_ERR_INVALID_HANDLE;
	if (!e && s == &legacy[s->dev]) {
		/* the legacy stream syncs with every blocking stream: asking
		 * about it while one of them captures is an implicit capture */
		for (struct stream *o = all_streams; o; o = o->next)
			if (o->dev == s->dev && !(o->flags & 0x1) && o->capture)
				e = FAKE_ERR_CAPTURE_IMPLICIT;
	}
	if (!e)
		*status = s->capture;
	pthread_mutex_unlock(&lk);
	return e;
}

API int cudaThreadExchangeStreamCaptureMode(int *mode)
{
	int e = enter(F_ThreadExchangeStreamCaptureMode);
	if (e)
		return e;
	if (*mode < 0 || *mode > 2)
		return FAKE_ERR_INVALID_VALUE;
	int old = capture_mode;
	capture_mode = *mode;
	atomic_store_explicit(&last_mode, *mode, memory_order_relaxed);
	*mode = old;
	return 0;
}

API int cudaStreamCreateWithFlags(void **stream, unsigned flags)
{
	int e = enter(F_StreamCreateWithFlags);
	if (e)
		return e;
	pthread_mutex_lock(&lk);
	e = injected(F_StreamCreateWithFlags, NULL, NULL);
	struct stream *s = e ? NULL : new_stream(cur_dev, flags, false);
	if (!e && !s)
		e = FAKE_ERR_MEMORY_ALLOCATION;
	pthread_mutex_unlock(&lk);
	if (!e)
		*stream = s;
	return e;
}

API int cudaEventCreateWithFlags(void **event, unsigned flags)
{
	int e = enter(F_EventCreateWithFlags);
	if (e)
		return e;
	pthread_mutex_lock(&lk);
	e = injected(F_EventCreateWithFlags, NULL, NULL);
	if (!e && event_limit && atomic_load_explicit(&events_created, memory_order_relaxed) >= event_limit)
		e = FAKE_ERR_MEMORY_ALLOCATION;
	struct event *ev = NULL;
	if (!e) {
		ev = calloc(1, sizeof(*ev));
		if (!ev)
			e = FAKE_ERR_MEMORY_ALLOCATION;
	}
	if (!e) {
		ev->magic = MAGIC_EV;
		ev->dev = cur_dev;
		ev->flags = flags;
		ev->next = all_events;
		all_events = ev;
		atomic_fetch_add_explicit(&events_created, 1, memory_order_relaxed);
		*event = ev;
	}
	pthread_mutex_unlock(&lk);
	return e;
}

static _Atomic(void *) delay_stream;
static _Atomic unsigned delay_ms;

API int cudaEventRecord(void *event, void *stream)
{
	int e = enter(F_EventRecord);
	if (e)
		return e;
	unsigned d = atomic_load_explicit(&delay_ms, memory_order_relaxed);
	if (d && stream && stream == atomic_load_explicit(&delay_stream, memory_order_acquire)) { /* stuck in the driver */
		struct timespec ts = { d / 1000, (long)(d % 1000) * 1000000 };
		nanosleep(&ts, NULL);
	}
	spin(jitter(RECORD_COST_LO, RECORD_COST_HI));
	pthread_mutex_lock(&lk);
	struct stream *s = stream_of(stream);
	if (s)
		atomic_fetch_add_explicit(&s->record_calls, 1, memory_order_relaxed);
	e = injected(F_EventRecord, stream, NULL);
	struct event *ev = event_of(event);
	if (!e && (!s || !ev || ev->dev != s->dev))
		e = FAKE_ERR_INVALID_HANDLE;
	if (!e && s->capture == 2)
		e = FAKE_ERR_CAPTURE_INVALIDATED;
	if (!e) {
		ev->recorded = true;
		ev->stream = stream;
		ev->captured = s->capture == 1;
		if (!ev->captured) {
			uint64_t now = now_ns(), t = now + jitter(EXEC_DELAY_LO, EXEC_DELAY_HI);
			if (t < s->busy_until)
				t = s->busy_until;
			s->busy_until = t;
			ev->stamp = t;
			ev->visible = t + jitter(VISIBLE_LO, VISIBLE_HI);
			s->last_stamp = t;
			atomic_fetch_add_explicit(&s->stamps, 1, memory_order_relaxed);
			if (s->logged) {
				if (log_n == log_cap) {
					size_t nc = log_cap ? log_cap * 2 : 1024;
					struct fake_stamp *nv = realloc(logv, nc * sizeof(*nv));
					if (nv) {
						logv = nv;
						log_cap = nc;
					}
				}
				if (log_n < log_cap)
					logv[log_n++] = (struct fake_stamp){ stream, event, t };
			}
		}
	}
	pthread_mutex_unlock(&lk);
	return e;
}

API int cudaEventQuery(void *event)
{
	int e = enter(F_EventQuery);
	if (e)
		return e;
	spin(jitter(QUERY_COST_LO, QUERY_COST_HI));
	pthread_mutex_lock(&lk);
	struct event *ev = event_of(event);
	e = injected(F_EventQuery, ev ? ev->stream : NULL, NULL);
	if (!e && !ev)
		e = FAKE_ERR_INVALID_HANDLE;
	if (!e && ev->recorded && ev->captured)
		e = FAKE_ERR_CAPTURED_EVENT;
	if (!e && !complete(ev, now_ns()))
		e = FAKE_ERR_NOT_READY;
	pthread_mutex_unlock(&lk);
	return e;
}

API int cudaEventElapsedTime(float *ms, void *start, void *end)
{
	int e = enter(F_EventElapsedTime);
	if (e)
		return e;
	pthread_mutex_lock(&lk);
	struct event *a = event_of(start), *b = event_of(end);
	e = injected(F_EventElapsedTime, a ? a->stream : NULL, b ? b->stream : NULL);
	if (!e && (!a || !b || !a->recorded || !b->recorded || (a->flags & 0x2) || (b->flags & 0x2) ||
		   a->dev != b->dev))
		e = FAKE_ERR_INVALID_HANDLE;
	if (!e && (a->captured || b->captured))
		e = FAKE_ERR_CAPTURED_EVENT;
	uint64_t now = now_ns();
	if (!e && (!complete(a, now) || !complete(b, now)))
		e = FAKE_ERR_NOT_READY;
	if (!e)
		*ms = (float)((double)(gpu_at(b->dev, b->stamp) - gpu_at(a->dev, a->stamp)) / 1e6);
	pthread_mutex_unlock(&lk);
	return e;
}

API int cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
	int e = enter(F_MemGetInfo);
	if (e)
		return e;
	*total_bytes = (size_t)80 << 30;
	*free_bytes = (size_t)79 << 30;
	return 0;
}

API const char *cudaGetErrorName(int err)
{
	enter(F_GetErrorName);
	switch (err) {
	case 0: return "cudaSuccess";
	case 1: return "cudaErrorInvalidValue";
	case 2: return "cudaErrorMemoryAllocation";
	case 4: return "cudaErrorCudartUnloading";
	case 34: return "cudaErrorStubLibrary";
	case 35: return "cudaErrorInsufficientDriver";
	case 100: return "cudaErrorNoDevice";
	case 101: return "cudaErrorInvalidDevice";
	case 400: return "cudaErrorInvalidResourceHandle";
	case 600: return "cudaErrorNotReady";
	case 700: return "cudaErrorIllegalAddress";
	case 901: return "cudaErrorStreamCaptureInvalidated";
	case 906: return "cudaErrorStreamCaptureImplicit";
	case 907: return "cudaErrorCapturedEvent";
	default: return "unrecognized error code";
	}
}

API int cudaRuntimeGetVersion(int *version)
{
	int e = enter(F_RuntimeGetVersion);
	if (e)
		return e;
	*version = 13000;
	return 0;
}

/* ------------------------------------------------------- scripting API */

API void fake_set_device_count(int n, int err)
{
	pthread_mutex_lock(&lk);
	n_dev = n < 0 ? 0 : n > FAKE_MAX_DEV ? FAKE_MAX_DEV : n;
	dev_err = err;
	pthread_mutex_unlock(&lk);
}

API void fake_set_skew_ppm(int dev, double p)
{
	pthread_mutex_lock(&lk);
	/* re-pin every clock at now so each stays continuous */
	uint64_t now = now_ns();
	double g[FAKE_MAX_DEV];
	for (int d = 0; d < FAKE_MAX_DEV; d++)
		g[d] = gpu_exact(d, now);
	t_base = now;
	for (int d = 0; d < FAKE_MAX_DEV; d++) {
		gpu_base[d] = g[d];
		if (dev < 0 || d == dev)
			ppm[d] = p;
	}
	pthread_mutex_unlock(&lk);
}

API uint64_t fake_now_ns(void)
{
	return now_ns();
}

API void *fake_stream_create(int dev)
{
	if (dev < 0 || dev >= FAKE_MAX_DEV)
		return NULL;
	pthread_mutex_lock(&lk);
	struct stream *s = new_stream(dev, 0, true);
	pthread_mutex_unlock(&lk);
	return s;
}

API uint64_t fake_launch(void *stream, uint64_t ns)
{
	pthread_mutex_lock(&lk);
	struct stream *s = stream_of(stream);
	uint64_t start = 0;
	if (s && !s->capture) {
		start = now_ns() + jitter(EXEC_DELAY_LO, EXEC_DELAY_HI);
		if (start < s->busy_until)
			start = s->busy_until;
		s->busy_until = start + ns;
	}
	pthread_mutex_unlock(&lk);
	return start;
}

API void fake_set_capture(void *stream, int status)
{
	pthread_mutex_lock(&lk);
	struct stream *s = stream_of(stream);
	if (s)
		s->capture = status;
	pthread_mutex_unlock(&lk);
}

API void fake_inject(const char *fn, int err, unsigned skip, unsigned count, void *stream)
{
	int f = -1;
	for (int i = 0; i < F_N; i++)
		if (strcmp(fn, fn_names[i]) == 0)
			f = i;
	if (f < 0)
		abort(); /* a typo in a test must not pass silently */
	pthread_mutex_lock(&lk);
	for (int i = 0; i < MAX_INJ; i++)
		if (!injs[i].count) {
			injs[i] = (struct inj){ f, err, skip, count, stream };
			break;
		}
	pthread_mutex_unlock(&lk);
}

API void fake_set_event_limit(unsigned n)
{
	pthread_mutex_lock(&lk);
	event_limit = n;
	pthread_mutex_unlock(&lk);
}

API void fake_set_unloading(int on)
{
	atomic_store_explicit(&unloading, on, memory_order_relaxed);
}

API void fake_set_record_delay(void *stream, unsigned ms)
{
	atomic_store_explicit(&delay_ms, ms, memory_order_relaxed);
	atomic_store_explicit(&delay_stream, stream, memory_order_release);
}

API uint64_t fake_calls(const char *fn)
{
	uint64_t n = 0;
	int found = 0;
	for (int i = 0; i < F_N; i++)
		if (!fn || strcmp(fn, fn_names[i]) == 0) {
			n += atomic_load_explicit(&calls[i], memory_order_relaxed);
			found = 1;
		}
	if (!found)
		abort();
	return n;
}

API uint64_t fake_stream_record_calls(void *stream)
{
	pthread_mutex_lock(&lk);
	struct stream *s = stream_of(stream); /* the special handles too */
	pthread_mutex_unlock(&lk);
	return s ? atomic_load_explicit(&s->record_calls, memory_order_relaxed) : 0;
}

API uint64_t fake_stream_stamps(void *stream)
{
	pthread_mutex_lock(&lk);
	struct stream *s = stream_of(stream); /* the special handles too */
	pthread_mutex_unlock(&lk);
	return s ? atomic_load_explicit(&s->stamps, memory_order_relaxed) : 0;
}

API uint64_t fake_last_stamp(void *stream)
{
	pthread_mutex_lock(&lk);
	struct stream *s = stream_of(stream);
	uint64_t t = s ? s->last_stamp : 0;
	pthread_mutex_unlock(&lk);
	return t;
}

API size_t fake_log_count(void)
{
	pthread_mutex_lock(&lk);
	size_t n = log_n;
	pthread_mutex_unlock(&lk);
	return n;
}

API int fake_log_get(size_t i, struct fake_stamp *out)
{
	pthread_mutex_lock(&lk);
	int ok = i < log_n;
	if (ok)
		*out = logv[i];
	pthread_mutex_unlock(&lk);
	return ok;
}

API uint64_t fake_events_created(void)
{
	return atomic_load_explicit(&events_created, memory_order_relaxed);
}

API int fake_last_capture_mode(void)
{
	return atomic_load_explicit(&last_mode, memory_order_relaxed);
}
