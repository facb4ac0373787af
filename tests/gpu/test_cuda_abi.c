/*
 * tests/gpu/test_cuda_abi.c - the CUDA runtime ABI values the recorder
 * (recorder/rec_cuda.h) and the fake runtime (fake_cudart.h) hard-code,
 * checked against the toolkit's own headers. Built only where
 * cuda_runtime_api.h is found; the checks are at compile time, the program
 * just reports TAP "ok". The entry points' shapes are checked too: each
 * rc_api field must accept the real function once handles are void *.
 */
#include <stdio.h>

#include <cuda_runtime_api.h>

#include "recorder/rec_cuda.h"
#include "tests/gpu/fake_cudart.h"

#define SAME(ours, theirs) _Static_assert((int)(ours) == (int)(theirs), #ours " != " #theirs)

SAME(RC_SUCCESS, cudaSuccess);
SAME(RC_ERR_MEMORY_ALLOCATION, cudaErrorMemoryAllocation);
SAME(RC_ERR_CUDART_UNLOADING, cudaErrorCudartUnloading);
SAME(RC_ERR_STUB_LIBRARY, cudaErrorStubLibrary);
SAME(RC_ERR_INSUFFICIENT_DRIVER, cudaErrorInsufficientDriver);
SAME(RC_ERR_NO_DEVICE, cudaErrorNoDevice);
SAME(RC_ERR_INVALID_HANDLE, cudaErrorInvalidResourceHandle);
SAME(RC_ERR_NOT_READY, cudaErrorNotReady);
SAME(RC_ERR_ILLEGAL_ADDRESS, cudaErrorIllegalAddress);
SAME(RC_ERR_CAPTURED_EVENT, cudaErrorCapturedEvent);
SAME(RC_CAPTURE_NONE, cudaStreamCaptureStatusNone);
SAME(RC_CAPTURE_MODE_THREAD_LOCAL, cudaStreamCaptureModeThreadLocal);
SAME(RC_STREAM_NON_BLOCKING, cudaStreamNonBlocking);
SAME(RC_EVENT_DEFAULT, cudaEventDefault);

SAME(FAKE_ERR_INVALID_VALUE, cudaErrorInvalidValue);
SAME(FAKE_ERR_MEMORY_ALLOCATION, cudaErrorMemoryAllocation);
SAME(FAKE_ERR_CUDART_UNLOADING, cudaErrorCudartUnloading);
SAME(FAKE_ERR_INSUFFICIENT_DRIVER, cudaErrorInsufficientDriver);
SAME(FAKE_ERR_NO_DEVICE, cudaErrorNoDevice);
SAME(FAKE_ERR_INVALID_DEVICE, cudaErrorInvalidDevice);
SAME(FAKE_ERR_INVALID_HANDLE, cudaErrorInvalidResourceHandle);
SAME(FAKE_ERR_NOT_READY, cudaErrorNotReady);
SAME(FAKE_ERR_ILLEGAL_ADDRESS, cudaErrorIllegalAddress);
SAME(FAKE_ERR_CAPTURE_INVALIDATED, cudaErrorStreamCaptureInvalidated);
SAME(FAKE_ERR_CAPTURE_IMPLICIT, cudaErrorStreamCaptureImplicit);
SAME(FAKE_ERR_CAPTURED_EVENT, cudaErrorCapturedEvent);

/* Handles are pointers, errors and enums int-sized: the casts rec_gpu.c's
 * dlsym() table relies on. */
_Static_assert(sizeof(cudaStream_t) == sizeof(rc_stream), "stream handle size");
_Static_assert(sizeof(cudaEvent_t) == sizeof(rc_event), "event handle size");
_Static_assert(sizeof(cudaError_t) == sizeof(rc_err), "error size");
_Static_assert(sizeof(enum cudaStreamCaptureStatus) == sizeof(int), "capture status size");
_Static_assert(sizeof(enum cudaStreamCaptureMode) == sizeof(int), "capture mode size");

int main(void)
{
	puts("1..1");
	puts("ok 1 - CUDA ABI constants of rec_cuda.h and fake_cudart.h match cuda_runtime_api.h");
	return 0;
}
