/*
 * tests/gpu/fake_cudart.h - scripting API of the fake CUDA runtime
 * (libfake_cudart.so) that the GPU tests load through PTZ_CUDA_RUNTIME.
 *
 * The library exports the CUDA runtime entry points recorder/rec_gpu.c
 * resolves with dlsym() (cudaEventRecord, cudaEventQuery, ...), simulating
 * one GPU per device, and the fake_* functions below, with which a test
 * program that links the same file steers it and reads back what the
 * recorder did to it. Same file, same handle: dlopen() of the absolute path
 * returns the already-loaded copy, so both sides share one state.
 *
 * Simulation (all times host CLOCK_MONOTONIC ns):
 *  - Device clock: gpu(t) = offset(dev) + (t - t0) * (1 + ppm(dev) * 1e-6),
 *    offset about 10^15 ns (unrelated to the host clock), ppm default 100.
 *    Timestamps have a 0.5 us resolution (cudaEventElapsedTime's).
 *  - Streams run their work in order: each has a "busy until" time.
 *    fake_launch() queues a kernel of N ns: it starts at
 *    max(now + launch delay, busy until) and pushes busy-until past its end.
 *  - cudaEventRecord spins 0.4-1.2 us of host time, then stamps the event at
 *    max(now + 1-3 us, busy until); the stamp becomes the stream's busy-until.
 *    cudaEventQuery (0.1-0.5 us) says cudaErrorNotReady (600) until the host
 *    clock passes the stamp plus a visibility latency of 0.5-2.5 us drawn at
 *    record time. cudaEventElapsedTime: (gpu(b) - gpu(a)) as float ms, 600 if
 *    either is incomplete, 400 if either was never recorded.
 *  - Stream capture: an event recorded on a capturing stream is captured
 *    (success, no stamp); queries and elapsed times on it fail with
 *    cudaErrorCapturedEvent (907). cudaStreamIsCapturing on the legacy
 *    stream fails with 906 while a blocking stream of its device captures.
 *  - Handles 0 and 0x1 are the legacy default stream, 0x2 the calling
 *    thread's per-thread default stream, of the calling thread's current
 *    device (cudaSetDevice/cudaGetDevice are per thread, default 0).
 *
 * Thread safety: every call may come from any thread (one mutex inside).
 * Counters are atomics, readable without the mutex, so a fork() child may
 * read them even if another thread of the parent held the mutex.
 */
#ifndef PTZ_FAKE_CUDART_H
#define PTZ_FAKE_CUDART_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint64_t */

#define FAKE_MAX_DEV 8

/* CUDA runtime ABI values the tests use (driver_types.h, CUDA 13.0). */
enum {
	FAKE_SUCCESS = 0,
	FAKE_ERR_INVALID_VALUE = 1,
	FAKE_ERR_MEMORY_ALLOCATION = 2,
	FAKE_ERR_CUDART_UNLOADING = 4,
	FAKE_ERR_INSUFFICIENT_DRIVER = 35,
	FAKE_ERR_NO_DEVICE = 100,
	FAKE_ERR_INVALID_DEVICE = 101,
	FAKE_ERR_INVALID_HANDLE = 400,
	FAKE_ERR_NOT_READY = 600,
	FAKE_ERR_ILLEGAL_ADDRESS = 700,
	FAKE_ERR_CAPTURE_INVALIDATED = 901,
	FAKE_ERR_CAPTURE_IMPLICIT = 906,
	FAKE_ERR_CAPTURED_EVENT = 907
};

/* One event record that produced a timestamp on a logged (test) stream. */
struct fake_stamp {
	void *stream;      /* handle the record named */
	void *event;
	uint64_t stamp_ns; /* true execution time, host CLOCK_MONOTONIC ns */
};

/**
 * fake_set_device_count() - Devices reported by cudaGetDeviceCount.
 * @n:   1..FAKE_MAX_DEV, or 0 for none (default 1).
 * @err: non-zero: cudaGetDeviceCount (and cudaSetDevice) fail with it
 *       instead, e.g. 35 = cudaErrorInsufficientDriver (no driver).
 */
void fake_set_device_count(int n, int err);

/** fake_set_skew_ppm() - GPU clock rate error of @dev (-1: all), in ppm. */
void fake_set_skew_ppm(int dev, double ppm);

/** fake_now_ns() - The host clock the fake uses (CLOCK_MONOTONIC ns). */
uint64_t fake_now_ns(void);

/**
 * fake_stream_create() - A blocking stream on @dev whose event records are
 * logged (fake_log_get()) and counted per stream.
 * Return: its handle (never 0, 1 or 2); NULL if @dev is out of range.
 */
void *fake_stream_create(int dev);

/**
 * fake_launch() - Queue a kernel of @ns nanoseconds on @stream (handles 0,
 * 1, 2 mean the calling thread's current device's default streams).
 * Return: the kernel's start time (host ns); 0 for an invalid stream or a
 *         capturing one (the kernel goes into the graph, not on the GPU).
 */
uint64_t fake_launch(void *stream, uint64_t ns);

/** fake_set_capture() - Capture status of @stream: 0 none, 1 active, 2 invalidated. */
void fake_set_capture(void *stream, int status);

/**
 * fake_inject() - Make calls of runtime function @fn (e.g. "cudaEventRecord")
 * fail with @err: the @skip matching calls go through, the next @count fail
 * (doing nothing). @stream, if not NULL, restricts matching calls to that
 * stream: the stream argument, or for event queries and elapsed times the
 * stream the event was last recorded on. Up to 16 injections at a time.
 */
void fake_inject(const char *fn, int err, unsigned skip, unsigned count, void *stream);

/** fake_set_event_limit() - cudaEventCreateWithFlags fails (2) once @n events exist; 0 = no limit. */
void fake_set_event_limit(unsigned n);

/** fake_set_unloading() - Every runtime call returns cudaErrorCudartUnloading (4). */
void fake_set_unloading(int on);

/** fake_set_record_delay() - cudaEventRecord() on @stream sleeps @ms first
 * (a call stuck in the driver); @ms 0 = none. */
void fake_set_record_delay(void *stream, unsigned ms);

/** fake_calls() - Calls of runtime function @fn so far; NULL = all functions. */
uint64_t fake_calls(const char *fn);

/** fake_stream_record_calls() - cudaEventRecord calls naming @stream (failed ones too). */
uint64_t fake_stream_record_calls(void *stream);

/** fake_stream_stamps() - Records on @stream that stamped an event (not captured, not failed). */
uint64_t fake_stream_stamps(void *stream);

/** fake_last_stamp() - True time of the last stamped record on @stream (0 if none). */
uint64_t fake_last_stamp(void *stream);

/** fake_log_count() / fake_log_get() - The stamps of logged streams, in record order. */
size_t fake_log_count(void);
int fake_log_get(size_t i, struct fake_stamp *out);

/** fake_events_created() - Events cudaEventCreateWithFlags created successfully. */
uint64_t fake_events_created(void);

/** fake_last_capture_mode() - Mode last set by cudaThreadExchangeStreamCaptureMode (-1: never). */
int fake_last_capture_mode(void);

#endif /* PTZ_FAKE_CUDART_H */
