/*
 * analyzer/ana_peaks_gpu.c - a CUDA device's roofs (ptanalyze peaks --gpu):
 * FP32/FP64 FMA throughput, device-memory bandwidth, pinned and pageable
 * host<->device copy bandwidth. Method and units: ana_peaks.h.
 *
 * The analyzer links no CUDA: the driver API is loaded at run time from
 * libcuda.so.1 (the driver's library, present wherever a GPU can run; the
 * toolkit is not needed), and the FMA kernels are PTX, compiled by the
 * driver's JIT for whatever device is there. Only the driver calls below
 * are used; their prototypes are CUDA's cuda.h (the _v2 entry points, which
 * the unversioned names map to since CUDA 3.2).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/ana_peaks.h"

typedef int cu_result;              /* CUresult; 0 = CUDA_SUCCESS */
typedef int cu_device;              /* CUdevice */
typedef void *cu_context;           /* CUcontext */
typedef void *cu_module;            /* CUmodule */
typedef void *cu_function;          /* CUfunction */
typedef unsigned long long cu_dptr; /* CUdeviceptr */
#define CU_ATTR_SM_COUNT 16         /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT */
#define CU_ERROR_NO_DEVICE 100      /* CUDA_ERROR_NO_DEVICE */
#define CU_ERROR_INVALID_DEVICE 101 /* CUDA_ERROR_INVALID_DEVICE */
#define CU_ERROR_OUT_OF_MEMORY 2    /* CUDA_ERROR_OUT_OF_MEMORY */

struct cu_api {
	cu_result (*Init)(unsigned flags);
	cu_result (*DeviceGet)(cu_device *d, int ordinal);
	cu_result (*DeviceGetName)(char *name, int len, cu_device d);
	cu_result (*DeviceGetAttribute)(int *v, int attr, cu_device d);
	cu_result (*PrimaryCtxRetain)(cu_context *c, cu_device d);
	cu_result (*PrimaryCtxRelease)(cu_device d);
	cu_result (*CtxSetCurrent)(cu_context c);
	cu_result (*CtxSynchronize)(void);
	cu_result (*ModuleLoadData)(cu_module *m, const void *image);
	cu_result (*ModuleUnload)(cu_module m);
	cu_result (*ModuleGetFunction)(cu_function *f, cu_module m, const char *name);
	cu_result (*LaunchKernel)(cu_function f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
				  unsigned bz, unsigned shmem, void *stream, void **params, void **extra);
	cu_result (*MemAlloc)(cu_dptr *p, size_t bytes);
	cu_result (*MemFree)(cu_dptr p);
	cu_result (*MemAllocHost)(void **p, size_t bytes);
	cu_result (*MemFreeHost)(void *p);
	cu_result (*MemcpyHtoD)(cu_dptr dst, const void *src, size_t bytes);
	cu_result (*MemcpyDtoH)(void *dst, cu_dptr src, size_t bytes);
	cu_result (*MemcpyDtoD)(cu_dptr dst, cu_dptr src, size_t bytes);
	cu_result (*GetErrorName)(cu_result e, const char **name);
};

/* 8 independent FMA chains per thread, 4 rounds per loop iteration: 32 FMAs
 * to 3 loop instructions. Each thread stores its sum once at the end, so
 * the chains are live and the store traffic is nothing beside the FMAs.
 * Register names must not be PTX's special registers (%tid, %ctaid, ...):
 * the driver rejects such a module as CUDA_ERROR_INVALID_PTX.
 * @T: f32 or f64; @R: the register prefix; @ONE: 1.0 in PTX hex notation. */
#define FMA_ROUND(T)                                                                                               \
	"fma.rn." T " %fa0, %fa0, %fm, %fc;\n fma.rn." T " %fa1, %fa1, %fm, %fc;\n fma.rn." T " %fa2, %fa2, %fm, %fc;\n"         \
	"fma.rn." T " %fa3, %fa3, %fm, %fc;\n fma.rn." T " %fa4, %fa4, %fm, %fc;\n fma.rn." T " %fa5, %fa5, %fm, %fc;\n"         \
	"fma.rn." T " %fa6, %fa6, %fm, %fc;\n fma.rn." T " %fa7, %fa7, %fm, %fc;\n"
#define FMA_KERNEL(NAME, T, ONE, SZ)                                                                               \
	".visible .entry " NAME "(.param .u64 out, .param .u32 n, .param ." T " m, .param ." T " c)\n"           \
	"{\n"                                                                                                      \
	" .reg .pred %rp;\n .reg .b32 %ri, %rn, %rt, %rb, %rnt, %rg;\n .reg .b64 %ro, %roff;\n"                   \
	" .reg ." T " %fa<8>, %fm, %fc, %fs;\n"                                                                      \
	" ld.param.u64 %ro, [out];\n ld.param.u32 %rn, [n];\n ld.param." T " %fm, [m];\n ld.param." T " %fc, [c];\n"  \
	" mov.u32 %rt, %tid.x;\n mov.u32 %rb, %ctaid.x;\n mov.u32 %rnt, %ntid.x;\n"                           \
	" mad.lo.u32 %rg, %rb, %rnt, %rt;\n"                                                                 \
	" cvt.rn." T ".u32 %fa0, %rt;\n add." T " %fa1, %fa0, " ONE ";\n add." T " %fa2, %fa1, " ONE ";\n"             \
	" add." T " %fa3, %fa2, " ONE ";\n add." T " %fa4, %fa3, " ONE ";\n add." T " %fa5, %fa4, " ONE ";\n"            \
	" add." T " %fa6, %fa5, " ONE ";\n add." T " %fa7, %fa6, " ONE ";\n"                                           \
	" mov.u32 %ri, 0;\n"                                                                                        \
	"$Lloop_" NAME ":\n" FMA_ROUND(T) FMA_ROUND(T) FMA_ROUND(T) FMA_ROUND(T)                                   \
	" add.u32 %ri, %ri, 1;\n setp.lt.u32 %rp, %ri, %rn;\n @%rp bra $Lloop_" NAME ";\n"                               \
	" add." T " %fs, %fa0, %fa1;\n add." T " %fs, %fs, %fa2;\n add." T " %fs, %fs, %fa3;\n add." T " %fs, %fs, %fa4;\n"    \
	" add." T " %fs, %fs, %fa5;\n add." T " %fs, %fs, %fa6;\n add." T " %fs, %fs, %fa7;\n"                              \
	" mul.wide.u32 %roff, %rg, " SZ ";\n add.u64 %ro, %ro, %roff;\n st.global." T " [%ro], %fs;\n"                  \
	" ret;\n"                                                                                                  \
	"}\n"

/* The module, in pieces (ISO C caps a string literal at 4095 bytes), joined
 * by measure(). */
static const char *const ptx_parts[] = {
	".version 6.0\n.target sm_50\n.address_size 64\n",
	FMA_KERNEL("ptz_fma32", "f32", "0f3F800000", "4"),
	FMA_KERNEL("ptz_fma64", "f64", "0d3FF0000000000000", "8"),
};

enum { FMA_PER_ITER = 32, BLOCK = 256, BLOCKS_PER_SM = 8 };
#define COPY_BYTES ((size_t)256 << 20) /* host<->device */
#define D2D_BYTES ((size_t)1 << 30)    /* device memory */

struct run {
	struct cu_api api;
	char *err;
	size_t errlen;
};

/* -EIO (or -ENOMEM) with "WHAT: CUDA_ERROR_NAME (N)" for a failed call. */
static int cu_fail(struct run *x, const char *what, cu_result e)
{
	const char *name = NULL;
	if (!x->api.GetErrorName || x->api.GetErrorName(e, &name) || !name)
		name = "unknown error";
	ana_peaks_seterr(x->err, x->errlen, "%s: %s (%d)", what, name, e);
	return e == CU_ERROR_OUT_OF_MEMORY ? -ENOMEM : -EIO;
}
#define CU(x, call)                                          \
	do {                                                 \
		cu_result e_ = (call);                       \
		if (e_)                                      \
			return cu_fail((x), #call, e_);      \
	} while (0)

static int load_api(struct run *x)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		ana_peaks_seterr(x->err, x->errlen, "no CUDA driver: %s", dlerror());
		return -ENODEV;
	}
	static const struct {
		const char *name;
		size_t off;
	} syms[] = {
#define SYM(f, n) { n, offsetof(struct cu_api, f) }
		SYM(Init, "cuInit"),
		SYM(DeviceGet, "cuDeviceGet"),
		SYM(DeviceGetName, "cuDeviceGetName"),
		SYM(DeviceGetAttribute, "cuDeviceGetAttribute"),
		SYM(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
		SYM(PrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
		SYM(CtxSetCurrent, "cuCtxSetCurrent"),
		SYM(CtxSynchronize, "cuCtxSynchronize"),
		SYM(ModuleLoadData, "cuModuleLoadData"),
		SYM(ModuleUnload, "cuModuleUnload"),
		SYM(ModuleGetFunction, "cuModuleGetFunction"),
		SYM(LaunchKernel, "cuLaunchKernel"),
		SYM(MemAlloc, "cuMemAlloc_v2"),
		SYM(MemFree, "cuMemFree_v2"),
		SYM(MemAllocHost, "cuMemAllocHost_v2"),
		SYM(MemFreeHost, "cuMemFreeHost"),
		SYM(MemcpyHtoD, "cuMemcpyHtoD_v2"),
		SYM(MemcpyDtoH, "cuMemcpyDtoH_v2"),
		SYM(MemcpyDtoD, "cuMemcpyDtoD_v2"),
		SYM(GetErrorName, "cuGetErrorName"),
#undef SYM
	};
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		void *f = dlsym(lib, syms[i].name);
		if (!f) {
			ana_peaks_seterr(x->err, x->errlen, "libcuda.so.1 has no %s (driver too old)", syms[i].name);
			return -ENODEV; /* the library stays loaded: harmless, and dlclose of a driver is not */
		}
		memcpy((char *)&x->api + syms[i].off, &f, sizeof(f));
	}
	return 0;
}

/* GFLOP/s of kernel @f (FP32 or FP64 FMA chains) over @sms SMs: the loop
 * count calibrated so one run lasts about @seconds / 3, best of 3. */
static int fma_rate(struct run *x, cu_function f, bool dbl, int sms, double seconds, cu_dptr out, double *gflops)
{
	const unsigned blocks = (unsigned)sms * BLOCKS_PER_SM;
	const double threads = (double)blocks * BLOCK;
	uint32_t n = 256;
	float m32 = 0.999999f, c32 = 1e-6f;
	double m64 = 0.999999, c64 = 1e-6;
	void *params[4] = { &out, &n, dbl ? (void *)&m64 : (void *)&m32, dbl ? (void *)&c64 : (void *)&c32 };
	*gflops = 0;
	for (int rep = -1; rep < 3; rep++) { /* rep -1: calibration (and JIT warm-up) */
		const double t0 = ana_peaks_now_s();
		CU(x, x->api.LaunchKernel(f, blocks, 1, 1, BLOCK, 1, 1, 0, NULL, params, NULL));
		CU(x, x->api.CtxSynchronize());
		const double dt = ana_peaks_now_s() - t0;
		if (rep < 0) {
			const double want = seconds / 3 > 0.01 ? seconds / 3 : 0.01;
			const double scaled = dt > 0 ? n * want / dt : 1e9;
			n = scaled > 1e9 ? 1000000000u : scaled < 256 ? 256u : (uint32_t)scaled;
			continue;
		}
		const double g = 2.0 * FMA_PER_ITER * (double)n * threads / dt / 1e9;
		if (g > *gflops)
			*gflops = g;
	}
	return 0;
}

/* GB/s of a synchronous copy of kind @k of @bytes, best of 3 after one warm-up. */
enum copy_kind { H2D, D2H, D2D };
static int copy_rate(struct run *x, enum copy_kind k, void *host, cu_dptr a, cu_dptr b, size_t bytes, double *gbps)
{
	*gbps = 0;
	for (int rep = -1; rep < 3; rep++) {
		const double t0 = ana_peaks_now_s();
		switch (k) {
		case H2D: CU(x, x->api.MemcpyHtoD(a, host, bytes)); break;
		case D2H: CU(x, x->api.MemcpyDtoH(host, a, bytes)); break;
		case D2D:
			CU(x, x->api.MemcpyDtoD(b, a, bytes));
			CU(x, x->api.CtxSynchronize()); /* device-to-device copies may return before they finish */
			break;
		}
		const double dt = ana_peaks_now_s() - t0;
		const double g = dt > 0 ? (double)bytes / dt / 1e9 : 0;
		if (rep >= 0 && g > *gbps)
			*gbps = g;
	}
	return 0;
}

static int measure(struct run *x, struct ana_peaks *p, cu_device dev, double seconds, cu_dptr *d1, cu_dptr *d2,
		   void **pinned, void **pageable, cu_module *mod)
{
	int sms = 0;
	CU(x, x->api.DeviceGetAttribute(&sms, CU_ATTR_SM_COUNT, dev));
	char ptx[8192];
	size_t len = 0;
	for (size_t i = 0; i < sizeof(ptx_parts) / sizeof(ptx_parts[0]); i++) {
		const size_t n = strlen(ptx_parts[i]);
		if (len + n >= sizeof(ptx))
			return -EINVAL; /* not reached: the pieces are fixed */
		memcpy(ptx + len, ptx_parts[i], n);
		len += n;
	}
	ptx[len] = 0;
	CU(x, x->api.ModuleLoadData(mod, ptx));
	cu_function f32, f64;
	CU(x, x->api.ModuleGetFunction(&f32, *mod, "ptz_fma32"));
	CU(x, x->api.ModuleGetFunction(&f64, *mod, "ptz_fma64"));
	CU(x, x->api.MemAlloc(d1, D2D_BYTES));
	CU(x, x->api.MemAlloc(d2, D2D_BYTES));
	int rc;
	if ((rc = fma_rate(x, f32, false, sms, seconds, *d1, &p->gpu_gflops32)) ||
	    (rc = fma_rate(x, f64, true, sms, seconds, *d1, &p->gpu_gflops64)))
		return rc;
	double copy = 0;
	if ((rc = copy_rate(x, D2D, NULL, *d1, *d2, D2D_BYTES, &copy)))
		return rc;
	p->gpu_mem_gbps = 2 * copy; /* read once + written once */
	p->link_gbps[2] = copy;     /* PT_D2D - 1: bytes copied per second, as a transfer's rate */
	CU(x, x->api.MemAllocHost(pinned, COPY_BYTES));
	memset(*pinned, 1, COPY_BYTES);
	*pageable = malloc(COPY_BYTES);
	if (!*pageable) {
		ana_peaks_seterr(x->err, x->errlen, "out of memory (%zu bytes of host memory)", COPY_BYTES);
		return -ENOMEM;
	}
	memset(*pageable, 1, COPY_BYTES); /* pages present: the copy measures the link, not page faults */
	if ((rc = copy_rate(x, H2D, *pinned, *d1, 0, COPY_BYTES, &p->gpu_h2d_pinned_gbps)) ||
	    (rc = copy_rate(x, H2D, *pageable, *d1, 0, COPY_BYTES, &p->gpu_h2d_pageable_gbps)) ||
	    (rc = copy_rate(x, D2H, *pinned, *d1, 0, COPY_BYTES, &p->gpu_d2h_pinned_gbps)) ||
	    (rc = copy_rate(x, D2H, *pageable, *d1, 0, COPY_BYTES, &p->gpu_d2h_pageable_gbps)))
		return rc;
	p->link_gbps[0] = p->gpu_h2d_pinned_gbps; /* PT_H2D - 1 */
	p->link_gbps[1] = p->gpu_d2h_pinned_gbps; /* PT_D2H - 1 */
	return 0;
}

int ana_peaks_measure_gpu(struct ana_peaks *p, int device, double seconds, char *err, size_t errlen)
{
	struct run x = { .err = err, .errlen = errlen };
	ana_peaks_seterr(err, errlen, "%s", "");
	int rc = load_api(&x);
	if (rc)
		return rc;
	cu_result e = x.api.Init(0);
	if (e) {
		rc = cu_fail(&x, "cuInit", e);
		return e == CU_ERROR_NO_DEVICE ? -ENODEV : rc;
	}
	cu_device dev;
	if ((e = x.api.DeviceGet(&dev, device))) {
		rc = cu_fail(&x, "cuDeviceGet", e);
		return e == CU_ERROR_INVALID_DEVICE || e == CU_ERROR_NO_DEVICE ? -ENODEV : rc;
	}
	char name[sizeof(p->gpu_name)];
	if ((e = x.api.DeviceGetName(name, (int)sizeof(name), dev)))
		return cu_fail(&x, "cuDeviceGetName", e);
	cu_context ctx;
	if ((e = x.api.PrimaryCtxRetain(&ctx, dev)))
		return cu_fail(&x, "cuDevicePrimaryCtxRetain", e);
	if ((e = x.api.CtxSetCurrent(ctx))) {
		x.api.PrimaryCtxRelease(dev);
		return cu_fail(&x, "cuCtxSetCurrent", e);
	}
	struct ana_peaks q = *p;
	memcpy(q.gpu_name, name, sizeof(name));
	q.gpu_name[sizeof(q.gpu_name) - 1] = 0;
	cu_dptr d1 = 0, d2 = 0;
	void *pinned = NULL, *pageable = NULL;
	cu_module mod = NULL;
	rc = measure(&x, &q, dev, seconds, &d1, &d2, &pinned, &pageable, &mod);
	free(pageable);
	if (pinned)
		x.api.MemFreeHost(pinned);
	if (d2)
		x.api.MemFree(d2);
	if (d1)
		x.api.MemFree(d1);
	if (mod)
		x.api.ModuleUnload(mod);
	x.api.CtxSetCurrent(NULL);
	x.api.PrimaryCtxRelease(dev);
	if (!rc)
		*p = q;
	return rc;
}
