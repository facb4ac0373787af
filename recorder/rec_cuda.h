/*
 * recorder/rec_cuda.h - the few CUDA runtime calls the recorder makes, as
 * our own types and a table of function pointers filled by dlsym().
 *
 * libptz is built without CUDA headers and never links libcudart: the
 * runtime is loaded at run time (rec_gpu.c). The constants below are the
 * CUDA runtime's ABI values; tests/gpu/test_cuda_abi.c static-asserts them
 * against cuda_runtime_api.h where the toolkit is installed.
 */
#ifndef PTZ_REC_CUDA_H
#define PTZ_REC_CUDA_H

#include <stddef.h>

typedef int rc_err;          /* cudaError_t */
typedef void *rc_event;      /* cudaEvent_t */
typedef void *rc_stream;     /* cudaStream_t */

enum {
	RC_SUCCESS = 0,                    /* cudaSuccess */
	RC_ERR_MEMORY_ALLOCATION = 2,      /* cudaErrorMemoryAllocation */
	RC_ERR_CUDART_UNLOADING = 4,       /* cudaErrorCudartUnloading */
	RC_ERR_STUB_LIBRARY = 34,          /* cudaErrorStubLibrary */
	RC_ERR_INSUFFICIENT_DRIVER = 35,   /* cudaErrorInsufficientDriver */
	RC_ERR_NO_DEVICE = 100,            /* cudaErrorNoDevice */
	RC_ERR_INVALID_HANDLE = 400,       /* cudaErrorInvalidResourceHandle */
	RC_ERR_NOT_READY = 600,            /* cudaErrorNotReady */
	RC_ERR_ILLEGAL_ADDRESS = 700,      /* cudaErrorIllegalAddress */
	RC_ERR_CAPTURE_IMPLICIT = 906,     /* cudaErrorStreamCaptureImplicit */
	RC_ERR_CAPTURED_EVENT = 907        /* cudaErrorCapturedEvent */
};

enum {
	RC_CAPTURE_NONE = 0,               /* cudaStreamCaptureStatusNone */
	RC_CAPTURE_MODE_THREAD_LOCAL = 1,  /* cudaStreamCaptureModeThreadLocal */
	RC_STREAM_NON_BLOCKING = 0x1,      /* cudaStreamNonBlocking */
	RC_EVENT_DEFAULT = 0x0             /* cudaEventDefault: timing enabled */
};

/* Runtime entry points; the ones marked optional may be NULL (older
 * runtimes). Signatures follow cuda_runtime_api.h (CUDA 11.0 - 13.0). */
struct rc_api {
	rc_err (*GetDeviceCount)(int *count);
	rc_err (*GetDevice)(int *device);
	rc_err (*SetDevice)(int device);                     /* CUDA thread only */
	rc_err (*StreamGetDevice)(rc_stream s, int *device); /* optional: 12.8 */
	rc_err (*StreamIsCapturing)(rc_stream s, int *status);
	rc_err (*ThreadExchangeStreamCaptureMode)(int *mode); /* optional: 10.1 */
	rc_err (*StreamCreateWithFlags)(rc_stream *s, unsigned flags);
	rc_err (*EventCreateWithFlags)(rc_event *e, unsigned flags);
	rc_err (*EventRecord)(rc_event e, rc_stream s);
	rc_err (*EventQuery)(rc_event e);
	rc_err (*EventElapsedTime)(float *ms, rc_event start, rc_event end);
	rc_err (*MemGetInfo)(size_t *free_bytes, size_t *total_bytes);
	const char *(*GetErrorName)(rc_err err);             /* optional */
	rc_err (*RuntimeGetVersion)(int *version);           /* optional */
};

#endif /* PTZ_REC_CUDA_H */
