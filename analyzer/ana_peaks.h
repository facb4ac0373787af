/*
 * analyzer/ana_peaks.h - measured machine peaks, the roofs of the roofline
 * that `ptanalyze suggest` classifies sections on (Williams, Waterman and
 * Patterson, "Roofline: an insightful visual performance model for
 * multicore architectures", CACM 52(4), 2009). The roofs are measured on
 * the machine, never taken from a datasheet or hard-coded, as the Empirical
 * Roofline Toolkit (LBNL; Lo et al., PMBS 2014) does: a datasheet peak is one
 * this code may never reach (turbo, AVX frequency offsets, a VM's share).
 *
 * Method (ana_peaks.c):
 *  - FLOP peak: 12 independent chains of vector FMAs, acc = acc * m + a,
 *    per thread. An FMA has a latency of about 4 cycles and 2 issue ports on
 *    current x86 cores (Intel optimization manual; Agner Fog's instruction
 *    tables), so 8 chains keep both busy; 12 leave margin for 5-cycle
 *    cores. Kernels: AVX-512F (8 doubles / 16 floats per FMA), AVX2 + FMA
 *    (4 / 8), chosen at run time with __builtin_cpu_supports() on x86-64;
 *    elsewhere, or on x86-64 without them, scalar fma() / fmaf() from
 *    <math.h> ("generic"; on such an x86-64 that is a libm call, so the
 *    figure is well under the hardware's). One FMA lane counts 2 FLOPs.
 *  - Memory bandwidth: STREAM's triad a[i] = b[i] + s * c[i] on doubles
 *    (McCalpin, "Memory bandwidth and machine balance in current high
 *    performance computers", IEEE TCCA Newsletter, 1995;
 *    www.cs.virginia.edu/stream), 24 bytes counted per element as STREAM
 *    does: the write-allocate read of a[i] that a cache without streaming
 *    stores also performs is NOT counted, so the bus may carry up to 4/3 of
 *    the figure. Each array is at least 4x the last-level cache (STREAM's
 *    rule; the largest cache of /sys/devices/system/cpu/cpu0/cache, or 64
 *    MiB each when unknown), the three together capped at 1 GiB (a cap that
 *    wins over the 4x rule on caches over 85 MiB). The arrays are fresh
 *    mappings whose pages are touched before timing, each thread its own
 *    slice (first touch: on a NUMA machine the slice sits on its node).
 *  - All cores: one thread per CPU the process may run on (its affinity
 *    mask: taskset, a container's cpuset; every online CPU,
 *    sysconf(_SC_NPROCESSORS_ONLN), if the mask cannot be read; at most
 *    4096), not pinned, released together by
 *    a barrier; a repetition's rate is the work of all threads over the
 *    time from the first thread's start to the last thread's end
 *    (CLOCK_MONOTONIC), not over the slowest thread's own time: threads
 *    that did not run at the same time (seen on a VM whose CPUs are taken
 *    away: one thread started after the other had finished) would count
 *    as parallel.
 *  - An all-core figure is at least the one-core one (one busy core is
 *    one way to use all of them): a lower all-core rate measured a machine
 *    whose other CPUs were busy or taken away (a VM's steal), not a roof.
 *  - Each figure is the best of repetitions (at least 3 for FLOPs, 2 for
 *    memory) run until about @seconds have passed.
 * GPU (ana_peaks_gpu.c, ptanalyze peaks --gpu): through the CUDA driver API,
 * loaded at run time (libcuda.so.1; the analyzer links no CUDA), kernels
 * given as PTX and compiled by the driver for the device at hand:
 *  - FP32 / FP64 FMA throughput: every thread runs 8 independent FMA chains
 *    (a = a * m + c), 32 FMAs per loop iteration, on 8 blocks of 256
 *    threads per SM (the occupancy that hides the FMA latency); an FMA
 *    counts 2 FLOPs. Timed over the whole grid with the host clock after a
 *    context synchronize; the loop count is calibrated so a run lasts about
 *    @seconds / 3; best of 3.
 *  - Device memory: cuMemcpyDtoD of a 1 GiB buffer, 2 x bytes per second
 *    (each byte read once and written once, STREAM's "copy" accounting).
 *  - Links: synchronous cuMemcpyHtoD / cuMemcpyDtoH of 256 MiB from
 *    page-locked (cuMemAllocHost) and from pageable (malloc, pages touched
 *    first) host memory, bytes / s, best of 3. The pinned figures also fill
 *    link_gbps h2d and d2h, and the device-to-device copy's bytes / s d2d.
 * Without the GPU option the link figures only come from a file.
 *
 * File format "ptz-machine/1" (one JSON object; ana_peaks_write_json()):
 *   {"schema": "ptz-machine/1", "host": "...", "cpu": "...", "isa": "...", "cpus": N,
 *    "fp64_gflops": {"one_core": x, "all_cores": y}, "fp32_gflops": {...},
 *    "memory_gbps": {"one_core": x, "all_cores": y},
 *    "link_gbps": {"h2d": x, "d2h": x, "d2d": x, "p2p": x},
 *    "gpu_name": "...",
 *    "gpu": {"fp64_gflops": x, "fp32_gflops": x, "memory_gbps": x, "h2d_pinned_gbps": x,
 *            "h2d_pageable_gbps": x, "d2h_pinned_gbps": x, "d2h_pageable_gbps": x}}
 * Every member but "schema" is optional; an unknown figure is left out.
 */
#ifndef PTZ_ANA_PEAKS_H
#define PTZ_ANA_PEAKS_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint32_t */
#include <stdio.h>  /* FILE */

#include "analyzer/ana.h" /* ANA_DIRS */

#ifdef __cplusplus
extern "C" {
#endif

/* The "schema" of a machine profile file. */
#define ANA_PEAKS_SCHEMA "ptz-machine/1"

/* ==== Types ==== */

/*
 * struct ana_peaks - One machine's peaks. Every figure is 0 when unknown;
 * a known figure is positive and finite.
 */
struct ana_peaks {
	char host[256]; /* gethostname() of the measuring machine; "" unknown */
	char cpu[128];  /* /proc/cpuinfo "model name" of the first CPU; "" unknown */
	char isa[16];   /* FLOP kernel used: "avx512f", "avx2+fma", "generic"; "" unknown */
	uint32_t cpus;  /* CPUs the all-core figures used (the affinity mask; 0 = unknown) */
	/* FP64 FMA peak, GFLOP/s (10^9 FLOP/s, an FMA lane = 2 FLOP): one core, all cores */
	double gflops64_1, gflops64_all;
	double gflops32_1, gflops32_all; /* FP32, the same */
	/* STREAM-triad memory bandwidth, GB/s (10^9 bytes/s, 24 bytes per element): one core, all cores */
	double gbps_1, gbps_all;
	/* Host<->device link bandwidth, GB/s (10^9 bytes/s), by direction: index PT_H2D - 1 .. PT_P2P - 1
	 * (H2D, D2H, D2D, P2P). Never measured here (no CUDA in the analyzer): only read from a file. */
	double link_gbps[ANA_DIRS];
	/* One CUDA device, measured by ana_peaks_measure_gpu() (ptanalyze peaks --gpu); 0 / "" unknown. */
	char gpu_name[128];           /* cuDeviceGetName() */
	double gpu_gflops64, gpu_gflops32; /* FMA throughput over all SMs, GFLOP/s (an FMA = 2 FLOP) */
	double gpu_mem_gbps;          /* device-memory bandwidth: a device-to-device copy, bytes read + written / s, GB/s */
	double gpu_h2d_pinned_gbps, gpu_h2d_pageable_gbps; /* host-to-device copies from page-locked / pageable memory */
	double gpu_d2h_pinned_gbps, gpu_d2h_pageable_gbps; /* device-to-host, the same */
	/* Repeatability of the six CPU figures (fp64 one core, all cores; fp32 the same; memory the
	 * same): each figure is the best of its repetitions; its spread is best / median repetition - 1
	 * (0.05: the best repetition was 5% faster than the median one). 0 = unknown (a profile from before, or one repetition). */
	double spread[6];
#define ANA_PEAKS_SPREAD_WARN 0.10 /* a spread above this: the machine was not quiet (said by peaks, suggest) */
	/* Runnable threads of other programs when the measurement began (/proc/loadavg's count less this
	 * process's one); -1 = unknown (also read from a profile that does not say it). */
	double busy_runnable;
};

/* ==== Measuring ==== */

/*
 * ana_peaks_measure() - Measures this machine's FLOP and memory peaks.
 * @p:       Filled in (zeroed first): host, cpu, isa, cpus and the six FLOP and memory figures;
 *           link_gbps stays 0. Not NULL.
 * @seconds: Time spent repeating each of the six figures, s, > 0 (the CLI's default is 0.5;
 *           tests pass ~0.02). Each figure is the best repetition. The whole call lasts about
 *           6 x @seconds, plus touching up to 2 x 1 GiB of fresh pages and a short calibration.
 * @err:     Receives a message on error ("" on success); may be NULL if @errlen is 0.
 * @errlen:  Size of @err in bytes.
 *
 * Context: any thread, one measurement at a time (the repetitions' rates live in static
 *          storage); not async-signal-safe. Starts and joins one thread per usable CPU but
 *          one, for each all-core figure, and maps up to 1 GiB (unmapped before returning).
 *          Also fills spread[] (each figure's best / median repetition - 1) and busy_runnable.
 *          The figures are only as good as the machine is quiet: other load lowers them.
 * Return: 0; -ENOMEM (the arrays could not be mapped); or the negated error of
 *         pthread_create() (e.g. -EAGAIN) or of the barrier's initialisation. On error @p holds
 *         the figures measured before the failure, the others 0.
 */
int ana_peaks_measure(struct ana_peaks *p, double seconds, char *err, size_t errlen);

/*
 * ana_peaks_measure_gpu() - Measures CUDA device @device's roofs into @p's gpu_* figures and
 * link_gbps (h2d, d2h: pinned; d2d), leaving the CPU figures as they are.
 * @p:       Not NULL.
 * @device:  CUDA device ordinal, >= 0 (as CUDA_VISIBLE_DEVICES numbers them).
 * @seconds: Time for each FMA figure, s, > 0; the copies take what 3 x 256 MiB x 4 and
 *           3 x 1 GiB copies take.
 * @err:     Receives a message on error ("" on success); may be NULL if @errlen is 0.
 * @errlen:  Size of @err.
 *
 * Context: any thread; loads libcuda.so.1 (never unloaded), retains the device's primary
 *          context (released before returning), allocates 2 GiB of device memory and 512 MiB
 *          of host memory (256 MiB of it page-locked), freed before returning.
 * Return: 0; -ENODEV (no CUDA driver, or no such device: the message says which);
 *         -ENOMEM (an allocation failed); -EIO (another CUDA error, named in the message).
 */
int ana_peaks_measure_gpu(struct ana_peaks *p, int device, double seconds, char *err, size_t errlen);

/* ==== The profile file ==== */

/*
 * ana_peaks_write_json() - Writes @p as one JSON object, schema "ptz-machine/1" (the format in
 * the introduction), two-space indented, members in that order, followed by a newline. Figures
 * that are not positive finite numbers (0: unknown), empty strings and cpus = 0 are left out; a
 * group with no figure is left out. Strings that are not UTF-8 are written with '?' for every
 * byte over 0x7f. Numbers carry 17 significant digits, so ana_peaks_load() reads back the same doubles.
 * @f: Open for writing; flushed here, not closed. Not NULL.
 * @p: The peaks. Not NULL.
 *
 * Context: any thread; allocates (jansson).
 * Return: 0, or -EIO if writing or flushing @f failed (what reached @f is then partial), or
 *         -ENOMEM.
 */
int ana_peaks_write_json(FILE *f, const struct ana_peaks *p);

/*
 * ana_peaks_load() - Reads a machine profile, written by ana_peaks_write_json() or by hand.
 * @path:   The file. Not NULL.
 * @p:      Receives the peaks (figures absent from the file are 0); unchanged on error. Not NULL.
 * @err:    Receives a message on error, "PATH:LINE: KEY: problem" ("PATH: problem" when the
 *          problem has no line, e.g. the file cannot be opened, or the key's line cannot be
 *          found: the line is found by searching the text for the key under its group);
 *          "" on success. May be NULL if @errlen is 0.
 * @errlen: Size of @err in bytes.
 *
 * Rules: "schema" must be "ptz-machine/1"; every other member is optional, and unknown members
 * are ignored; "fp64_gflops", "fp32_gflops", "memory_gbps" and "link_gbps", where present, are
 * objects whose known members ("one_core", "all_cores"; "h2d", "d2h", "d2d", "p2p") are positive
 * finite numbers (integers allowed); "host", "cpu", "isa" are strings (longer ones are
 * truncated); "cpus" an integer in [0, 2^32 - 1]; at least one FP64, FP32 or memory figure is
 * present (link figures alone are not a machine profile). Duplicate keys are rejected.
 *
 * Context: any thread; allocates (jansson); reads the whole file.
 * Return: 0; -errno if the file cannot be opened or read (-ENOENT, -EACCES, ...); -EINVAL if it
 *         is not JSON, not an object, has a missing or wrong schema, a member of the wrong type,
 *         a figure that is not a positive finite number, or no FP64/FP32/memory figure; -ENOMEM.
 */
int ana_peaks_load(const char *path, struct ana_peaks *p, char *err, size_t errlen);

/* ==== Shared by ana_peaks.c and ana_peaks_gpu.c ==== */

/* ana_peaks_seterr() - vsnprintf() of @fmt into @err (@errlen bytes); nothing when @err is NULL or
 * @errlen 0. */
void ana_peaks_seterr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* ana_peaks_now_s() - CLOCK_MONOTONIC in seconds: the clock every figure is timed with. */
double ana_peaks_now_s(void);

#ifdef __cplusplus
}
#endif

#endif /* PTZ_ANA_PEAKS_H */
