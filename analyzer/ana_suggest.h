/*
 * analyzer/ana_suggest.h - optimization suggestions: rules with a trigger,
 * the evidence that fired it, and the time at stake, read off one analyzed
 * trace (doc/analyzer-output.md §9). Peers: nsys analyze has expert rules
 * for CUDA API use only; Tracy, uftrace, Caliper and Perfetto have none;
 * Intel Advisor and Nsight Compute classify kernels on a roofline measured
 * on the machine. The rules and their default triggers come from those
 * tools (shared/reference/analysis-anchors.md §5, §7, §9):
 *
 *  data-quality   (every run) losses, unmatched ends, sections open at the
 *                 end, recorder-counted misuse, damaged chunks, a torn
 *                 tail, gaps in a thread's chunk sequence, GPU timing
 *                 errors: figures that undercount; and,
 *                 with peaks of the recording host, more threads alive on
 *                 average (sum of thread spans / wall span) than 1.1 times
 *                 its CPUs: durations are wall-clock, so they may include
 *                 time spent waiting for a CPU.
 *  hot-section    a call path whose self time is at least hot_self_pct of
 *                 the sum of thread spans (nsys "large share", uftrace's
 *                 sort by self); or a section name whose paths together
 *                 reach it while none does alone (the flat, by-name row:
 *                 a helper called from everywhere, "death by a thousand
 *                 cuts").
 *  roofline       a path that declares FLOPs or bytes itself, on a
 *                 roofline of MEASURED peaks (struct ana_peaks: Williams,
 *                 Waterman and Patterson 2009; thresholds of Nsight
 *                 Compute's SOLBottleneck rule): attainable P(AI) =
 *                 min(pi, AI * beta), efficiency e = achieved / attainable;
 *                 memory-bound below the ridge pi / beta, compute-bound at
 *                 or above it; e >= 0.8 near the roof, e < 0.6 on neither
 *                 roof (latency or overhead bound), in between below the
 *                 roof (also any e < 0.8 when the profile lacks the roof
 *                 of a figure the section declares: "neither" is then
 *                 unknowable); a profile's missing one-core roof is its
 *                 all-core one, and an all-core roof is at least the
 *                 one-core one; a rate above the one-core roof is compared with the
 *                 all-core roof ("several cores"), and one above that too
 *                 is "above-roof" (declared bytes served from cache, or
 *                 declared FLOPs that overstate the work). Without peaks no
 *                 class is given (a note says how to measure them). A GPU
 *                 section (a path with GPU ranges of its own) is placed,
 *                 the same way, on the GPU's roofs (ptanalyze peaks --gpu:
 *                 FP64 or FP32 FMA and device-memory rates) with its own
 *                 declared work over its self GPU time; without GPU roofs
 *                 it is counted (roofline_gpu_paths) and left unclassified:
 *                 the CPU roofs do not bound a GPU.
 *  imbalance      a path run on two threads or more whose largest
 *                 per-thread inclusive total is above imbalance_ratio times
 *                 their mean (Hatchet's max/mean load imbalance).
 *  cold-first     a first occurrence far slower than the rest: modified
 *                 z-score (first - median) / (1.4826 MAD) above cold_z over
 *                 the path's sample of the other occurrences (Iglewicz and
 *                 Hoaglin 1993; hyperfine's SlowInitialRun uses 10), and at
 *                 least cold_ratio times their median.
 *  unstable       the occurrences after the first vary: coefficient of
 *                 variation (sample std / mean) above unstable_cv (pyperf's
 *                 check uses 10%).
 *  short-sections mean duration below short_ns: at that length the
 *                 recorder's own cost and the tick resolution weigh on
 *                 every figure (pyperf and hyperfine warn likewise).
 *  small-transfers at least 100 host/device transfers of one direction in
 *                 a section, averaging less than 64 KiB (the size below
 *                 which CUDA copies are latency-bound: nsys's 64 KB rule);
 *                 a copy section's GPU time and rate are given.
 *  slow-transfer  (needs link_gbps or the GPU's pinned copy rates in the
 *                 peaks) transfers averaging at least 64 KiB whose bytes
 *                 over the copy section's GPU time (else the section's
 *                 inclusive time, a lower bound of the copy's own rate)
 *                 reach less than half the link's measured (pinned) rate
 *                 (nsys's pageable-memory rule); with the GPU's measured
 *                 pageable rate, a GPU-time rate at most 1.25 times it is
 *                 called likely pageable host memory.
 *  gpu-idle       a device idle for long: time utilization (union of its
 *                 ranges over its active span) below gpu_util_pct, or gaps
 *                 of at least max(gap_ms, 1% of the span) between ranges
 *                 (nsys's gpu_gaps and gpu_time_util, whose 500 ms default
 *                 misses the gaps of a 200 ms step). For the longest gap,
 *                 the host sections that were running then (the innermost
 *                 open section of each CPU thread, by self time in the
 *                 gap), read from the trace a second time: why the device
 *                 starved, which nsys leaves to the user.
 *  launch-bound   a GPU section with at least 100 ranges whose mean GPU
 *                 time per range is under twice its mean self CPU time per
 *                 occurrence (the launch: the host cannot issue kernels as
 *                 fast as the GPU runs them) or under 10 us (small kernels,
 *                 where the fixed cost of a launch weighs on the device).
 *  transfer-dominated  a path whose inclusive GPU time is at least half
 *                 copies (the time breakdown's transfer part, §3.1), other
 *                 than a copy section with no GPU work below it (all
 *                 transfer by definition).
 *  memory-growth  a call path that runs at least twice and whose memory
 *                 series (the recorder's "process RSS", or any counter in
 *                 bytes: ana_mem.c) grows over its occurrences: the sum of
 *                 end - begin over them at least mem_growth_mib MiB and
 *                 mem_growth_pct % of the series' peak (a leak, or a cache
 *                 without bound; Valgrind massif and heaptrack rank
 *                 allocation sites by the bytes they keep, which a sampled
 *                 RSS cannot: the path is where the growth was seen). A path
 *                 is left out when a path below it fires with at least half
 *                 its growth (the innermost one tells more).
 *  batching       a call path called at least batch_calls times per
 *                 occurrence of its parent (a top-level path: per CPU
 *                 thread), with a median below batch_ns, that takes at
 *                 least half its parent's time: short calls back to back,
 *                 where the fixed cost of each call weighs (the original
 *                 proposal of issue 15; the CUDA guide's and the database
 *                 folklore's "batch the calls"). The pass keeps no gaps
 *                 between occurrences: half the parent's time in the child
 *                 bounds the gaps' mean by the calls' mean.
 *  caching        a call path called at least cache_calls times whose
 *                 declared metrics (bytes read, written, FLOPs) are the
 *                 same on every call (per-occurrence min == max > 0,
 *                 ana_agg.metric_min/max): a candidate for memoization,
 *                 if the inputs repeat too.
 *
 *  parallelization  the process used at most par_cpus CPUs on average (the
 *                 recorder's process CPU counters) on a machine with two or
 *                 more online, while a top-level path of at least par_pct
 *                 of the summed thread time ran on one CPU thread; not when
 *                 a GPU was busy for half the run or more (the work is on
 *                 the device), nor on a contended machine (more threads
 *                 would not get CPUs either). Stake: Amdahl, its time
 *                 spread over the CPUs online, t (1 - 1/N).
 *  algorithm      (issue 15's name) is the roofline class
 *                 compute-bound-near-roof, CPU or GPU: the hardware is
 *                 saturated, only fewer operations help; a class of the
 *                 roofline finding, not a rule of its own (one placement
 *                 on the roofline, one finding).
 *
 * Contention: with the process CPU counters, the data-quality kind
 * cpu-share says the process got less than half the CPU time its threads
 * spent in sections over the run (cpus_used / the threads' time in
 * sections per wall ns); a CPU section that would be latency-bound is then
 * classified on the CPU time the process got, never latency-bound.
 *
 * Grouping: an oversubscribed (else cpu-steal) data-quality finding is the
 * cause of every unstable finding (ana_finding.cause); the text lists those
 * under the cause, once.
 *
 * Every path rule but hot-section, cold-first and memory-growth (which have
 * triggers of their own) fires only on paths whose inclusive time is at least min_pct
 * of the sum of thread spans (the impact gate: a 50 ns section that varies
 * by 30% is not worth a line). Findings are ranked by the time at stake
 * (ana_finding.stake_ns), after the data-quality ones, which come first;
 * ties by rule, then by node index (the order paths first appeared).
 */
#ifndef PTZ_ANA_SUGGEST_H
#define PTZ_ANA_SUGGEST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "analyzer/ana.h"
#include "analyzer/ana_peaks.h"

enum ana_rule {
	ANA_R_DATA,
	ANA_R_HOT,
	ANA_R_ROOFLINE,
	ANA_R_IMBALANCE,
	ANA_R_COLD_FIRST,
	ANA_R_UNSTABLE,
	ANA_R_SHORT,
	ANA_R_SMALL_XFER,
	ANA_R_SLOW_XFER,
	ANA_R_GPU_IDLE,
	ANA_R_LAUNCH,    /* launch-bound */
	ANA_R_XFER_DOM,  /* transfer-dominated */
	ANA_R_MEM_GROWTH,
	ANA_R_BATCHING,
	ANA_R_CACHING,
	ANA_R_PARALLEL,  /* parallelization */
	ANA_R_N
};
/* The rule's id as printed and in JSON ("hot-section", ...). */
const char *ana_rule_key(enum ana_rule r);

/*
 * Priority of a finding (doc/analyzer-output.md §9): from the share of the run its stake is,
 * share = stake / sum of thread spans: critical >= 20 %, high >= 5 %, medium >= 1 %, low below;
 * one level lower (never below low) when the path's figures are affected by losses (lossy).
 * Data-quality findings have none (ANA_P_NONE): they come first whatever their size.
 */
enum ana_priority { ANA_P_NONE = -1, ANA_P_LOW, ANA_P_MEDIUM, ANA_P_HIGH, ANA_P_CRITICAL };
/* "low", "medium", "high", "critical"; NULL for ANA_P_NONE. */
const char *ana_priority_key(enum ana_priority p);

/*
 * Triggers. Every field 0 takes its default (the value in brackets);
 * ana_sug_threshold_set() sets one by its key, the CLI's
 * --threshold KEY=VALUE.
 */
struct ana_sug_opts {
	const struct ana_peaks *peaks; /* NULL: no roofline classes, no slow-transfer */
	/* The trace file @res was analyzed from, read again for gpu-idle's longest gaps: which host
	 * sections were running then (ana_finding.host). NULL: not attributed. */
	const char *trace_path;
	bool fp32;                     /* FLOP rates against the FP32 roofs, CPU and GPU (else FP64) */
	double min_pct;         /* [1] impact gate: inclusive time, % of the sum of thread spans */
	double hot_self_pct;    /* [10] hot-section: self time, % of the sum of thread spans */
	double cold_z;          /* [10] cold-first: modified z-score of the first occurrence */
	double cold_ratio;      /* [2] cold-first: first / median of the rest, at least */
	double cold_min_pct;    /* [0.1] cold-first: first - median, % of the sum of thread spans */
	double unstable_cv;     /* [0.10] unstable: std / mean of the rest, above */
	double short_ns;        /* [1000] short-sections: mean duration below, ns */
	double imbalance_ratio; /* [1.2] imbalance: max / mean per-thread inclusive total, above */
	double gpu_util_pct;    /* [50] gpu-idle: time utilization below, % */
	double gap_ms;          /* [1] gpu-idle: smallest gap, ms (or 1% of the span if longer) */
	double mem_growth_mib;  /* [64] memory-growth: total growth over the occurrences, MiB, at least */
	double mem_growth_pct;  /* [10] memory-growth: total growth, % of the series' peak, at least */
	double batch_ns;        /* [50000] batching: median duration below, ns */
	double batch_calls;     /* [10] batching: calls per occurrence of the parent, at least */
	double cache_calls;     /* [100] caching: occurrences, at least */
	double par_cpus;        /* [1.25] parallelization: CPUs the process used on average, at most */
	double par_pct;         /* [20] parallelization: the path's inclusive time, % of the sum of thread spans */
	enum ana_priority min_priority; /* findings below it are left out (counted); data quality stays.
					 * ANA_P_LOW (0, the default): all */
	uint32_t set_mask;      /* private: the fields ana_sug_threshold_set() set (an explicit 0 stays 0) */
};
/*
 * ana_sug_threshold_set() - Sets the threshold @key (a field name above
 * except peaks and fp32, e.g. "hot_self_pct") to @value. Return: 0;
 * -ENOENT for an unknown key; -ERANGE for a value that is not finite and
 * positive (or a percentage above 100, a cold_ratio, imbalance_ratio,
 * batch_calls or cache_calls below 1). min_pct, cold_min_pct and mem_growth_pct may be 0:
 * that gate is off.
 */
int ana_sug_threshold_set(struct ana_sug_opts *o, const char *key, double value);
/* Keys accepted by ana_sug_threshold_set(), NULL-terminated. */
extern const char *const ana_sug_threshold_keys[];

/* Classes of a roofline finding (ana_finding.cls). */
enum ana_roof_class {
	ANA_ROOF_MEM_NEAR,    /* memory-bound, e >= 0.8 */
	ANA_ROOF_MEM_BELOW,   /* memory-bound, 0.6 <= e < 0.8 */
	ANA_ROOF_COMP_NEAR,   /* compute-bound, e >= 0.8 */
	ANA_ROOF_COMP_BELOW,  /* compute-bound, 0.6 <= e < 0.8 */
	ANA_ROOF_LATENCY,     /* e < 0.6 on either side: neither roof */
	ANA_ROOF_ABOVE,       /* faster than the all-core roof */
	ANA_ROOF_NCLASS
};
/* Kinds of a data-quality finding (ana_finding.cls). */
enum ana_data_kind {
	ANA_DQ_LOST, ANA_DQ_UNMATCHED, ANA_DQ_OPEN, ANA_DQ_MISUSE, ANA_DQ_CORRUPT, ANA_DQ_TORN,
	ANA_DQ_GPU_ERRORS, ANA_DQ_GAPS, ANA_DQ_OVERSUB, ANA_DQ_STEAL,
	ANA_DQ_CPU_SHARE, /* the process got under half the CPU time its threads spent in sections */
	ANA_DQ_NKIND
};
/* The class or kind key of finding class @cls of rule @r ("memory-bound-near-roof", "lost-records",
 * ...); NULL for rules without classes. */
const char *ana_class_key(enum ana_rule r, uint32_t cls);

/* gpu-idle: what a CPU thread was doing during the device's longest gap, as the innermost open
 * section (its self time within the gap), the largest first. */
#define ANA_SUG_HOST 4
struct ana_host_share {
	uint32_t thread; /* thread index */
	uint32_t id;     /* section name id */
	double ns;       /* time within the gap with this section innermost on that thread */
};

/* Evidence values per finding; their names, per rule, in ana_evidence_key(). */
#define ANA_SUG_EV 10
struct ana_finding {
	enum ana_rule rule;
	uint32_t cls;      /* enum ana_roof_class, enum ana_data_kind, or the transfer direction (PT_H2D..) */
	uint32_t node;     /* node of the merged tree; UINT32_MAX: the whole trace, a device, or a name */
	uint32_t name_id;  /* hot-section by name (node UINT32_MAX): the section name id; else 0 */
	uint32_t paths;    /* hot-section by name: the call paths holding the name */
	uint32_t device;   /* gpu-idle: the device ordinal */
	uint32_t thread;   /* imbalance: index of the slowest thread */
	uint32_t series;   /* memory-growth: the memory series (index into ana_result.mem) */
	bool lossy;        /* the path's figures are affected by losses */
	bool several_cores; /* roofline: compared with the all-core roofs */
	bool gpu_roofs;    /* roofline: a GPU section placed on the GPU's roofs (rates over its GPU time) */
	bool pageable;     /* slow-transfer: at or below the measured pageable rate (likely pageable memory) */
	/* roofline: a CPU section judged on the CPU time the process got (a cpu-share finding): its
	 * efficiency over that share, cpu_got; else NaN */
	double contended_e, cpu_got;
	double stake_ns;   /* the time at stake (rank key; its definition per rule in §9) */
	/* stake_ns / the sum of thread spans (at most 1), and the speedup of the whole run if all of the
	 * stake went, by Amdahl's law: 1 / (1 - share) (NaN for data quality, and for a share of 1) */
	double share, potential_speedup;
	enum ana_priority priority;
	double ev[ANA_SUG_EV]; /* evidence, named by ana_evidence_key(rule, i); unused ones NaN */
	/* gpu-idle with trace_path and a gap: the longest gap [gap_ticks[0], gap_ticks[1]), the largest
	 * host shares in it, and the CPU-thread time in it with no section open (summed over threads) */
	uint64_t gap_ticks[2];
	struct ana_host_share host[ANA_SUG_HOST];
	uint32_t nhost;
	double host_none_ns;
	bool host_read;    /* the attribution was made (else host, host_none_ns are empty) */
	/* a symptom explained by another finding (an unstable path on an oversubscribed machine): the
	 * index of that finding in ana_sug.f; UINT32_MAX: none. Set after ranking, on the kept findings */
	uint32_t cause;
};
/* Name of evidence value @i of rule @r ("self_ns", "share", ...); NULL past the last one. */
const char *ana_evidence_key(enum ana_rule r, unsigned i);

/* At most this many findings of one rule are kept (the largest stakes); the rest are counted. */
#define ANA_SUG_MAX_PER_RULE 256

struct ana_sug {
	struct ana_finding *f;   /* ranked */
	size_t n;
	uint64_t left_out[ANA_R_N]; /* findings of each rule past ANA_SUG_MAX_PER_RULE */
	uint32_t roofline_paths;    /* paths that declare FLOPs or bytes (and pass the gate) */
	bool roofline_no_peaks;     /* some did, but no peaks were given */
	uint32_t roofline_gpu_paths; /* of roofline_paths, GPU sections left unclassified: no GPU roof for
				      * what they declare (the peaks have no GPU figures, or no peaks) */
	bool peaks_other_host;      /* the peaks were measured on another host than the trace's */
	uint64_t below_priority;    /* findings left out under o.min_priority */
	struct ana_sug_opts o;      /* the triggers used, defaults filled in */
};

/*
 * ana_suggest() - Runs every rule over @res (analyzed with any options
 * but ana_options.no_samples: cold-first and unstable read the samples;
 * merged percentiles are enough) with triggers @o (NULL: defaults) into
 * *@out. @res must outlive *@out (findings name its nodes). Return: 0, or
 * -ENOMEM (then *@out holds nothing to free), or -EINVAL for a result
 * analyzed without samples. Not thread-safe on one @res.
 */
int ana_suggest(const struct ana_result *res, const struct ana_sug_opts *o, struct ana_sug *out);
void ana_suggest_free(struct ana_sug *s);

/* The findings as text: a header with the triggers, every data-quality finding, then at most @top others
 * (0 = all), in rank order. */
void ana_suggest_text(FILE *out, const struct ana_result *res, const struct ana_sug *s, int top);
/* Every finding as JSON, schema "ptanalyze-suggest/1" (doc/analyzer-output.md §9). 0, or -EIO/-ENOMEM. */
int ana_suggest_json(FILE *out, const struct ana_result *res, const struct ana_sug *s);

#endif /* PTZ_ANA_SUGGEST_H */
