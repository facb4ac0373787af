/*
 * analyzer/ana_suggest.c - optimization suggestions (ana_suggest.h; the
 * rules, triggers and stakes are defined in doc/analyzer-output.md §9).
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/ana_compare.h"
#include "analyzer/ana_suggest.h"

static const char *const rule_key[ANA_R_N] = {
	"data-quality", "hot-section", "roofline", "imbalance", "cold-first",
	"unstable", "short-sections", "small-transfers", "slow-transfer", "gpu-idle",
	"launch-bound", "transfer-dominated",
	"memory-growth", "batching", "caching", "parallelization",
};

const char *ana_rule_key(enum ana_rule r)
{
	return (unsigned)r < ANA_R_N ? rule_key[r] : "?";
}

static const char *const roof_key[ANA_ROOF_NCLASS] = {
	"memory-bound-near-roof", "memory-bound-below-roof", "compute-bound-near-roof",
	"compute-bound-below-roof", "latency-bound", "above-roof",
};
static const char *const dq_key[ANA_DQ_NKIND] = {
	"lost-records", "unmatched-ends", "open-at-end", "misuse-errors", "damaged-chunks", "torn-tail",
	"gpu-errors", "sequence-gaps", "oversubscribed", "cpu-steal", "cpu-share",
};
static const char *const dir_key[ANA_DIRS] = { "h2d", "d2h", "d2d", "p2p" };
enum { DIR_H2D, DIR_D2H, DIR_D2D }; /* transfer direction indexes (PT_H2D - 1, ...), as dir_key */

const char *ana_class_key(enum ana_rule r, uint32_t cls)
{
	if (r == ANA_R_ROOFLINE && cls < ANA_ROOF_NCLASS)
		return roof_key[cls];
	if (r == ANA_R_DATA && cls < ANA_DQ_NKIND)
		return dq_key[cls];
	if ((r == ANA_R_SMALL_XFER || r == ANA_R_SLOW_XFER || r == ANA_R_XFER_DOM) && cls >= 1 && cls <= ANA_DIRS)
		return dir_key[cls - 1];
	return NULL;
}

/* Evidence names per rule, in ev[] order (doc/analyzer-output.md §9.2). */
static const char *const ev_key[ANA_R_N][ANA_SUG_EV + 1] = {
	/* oversubscribed: threads runnable (or alive) on average, CPUs, 1 = runnable (0 = alive);
	 * cpu-steal: the steal share, CPUs */
	[ANA_R_DATA] = { "count", "sections", "runnable" },
	[ANA_R_HOT] = { "self_ns", "self_share", "total_ns", "share", "count", "largest_path_self_ns", "gpu_self_ns",
			"occupied_ns", "occupied_share" },
	[ANA_R_ROOFLINE] = { "flops", "bytes", "total_ns", "intensity", "gflops", "gbps", "roof_gflops", "roof_gbps",
			     "efficiency", "gpu_ns" },
	[ANA_R_IMBALANCE] = { "threads", "max_ns", "mean_ns", "min_ns", "ratio" },
	[ANA_R_COLD_FIRST] = { "count", "first_ns", "rest_median_ns", "rest_mad_ns", "z", "ratio" },
	[ANA_R_UNSTABLE] = { "count", "rest_mean_ns", "rest_std_ns", "cv", "p50_ns", "p99_ns", "min_ns", "max_ns",
			     "iqr_over_median", "run_iqr_over_median" },
	[ANA_R_SHORT] = { "count", "mean_ns", "total_ns", "share", "p50_ns" },
	[ANA_R_SMALL_XFER] = { "transfers", "bytes", "mean_bytes", "total_ns", "gpu_ns", "gpu_gbps" },
	[ANA_R_SLOW_XFER] = { "transfers", "bytes", "mean_bytes", "total_ns", "gbps", "link_gbps", "ratio", "gpu_ns",
			      "pageable_gbps", "pageable_ratio" },
	[ANA_R_GPU_IDLE] = { "ranges", "span_ns", "busy_ns", "utilization", "gaps", "gap_ns", "longest_gap_ns",
			     "longest_gap_at_s" },
	[ANA_R_LAUNCH] = { "ranges", "count", "gpu_ns", "gpu_mean_ns", "launch_ns", "launch_mean_ns", "ratio",
			   "latency_mean_ns" },
	[ANA_R_XFER_DOM] = { "gpu_ns", "transfer_ns", "compute_ns", "transfer_share", "h2d_ns", "d2h_ns", "d2d_ns",
			     "p2p_ns", "total_ns" },
	[ANA_R_MEM_GROWTH] = { "occurrences", "delta_mean_bytes", "delta_total_bytes", "delta_min_bytes",
			       "delta_max_bytes", "peak_bytes", "series_peak_bytes", "peak_share", "period_ns",
			       "total_ns" },
	[ANA_R_BATCHING] = { "count", "parent_count", "calls_per_parent", "p50_ns", "min_ns", "total_ns",
			     "parent_total_ns", "parent_share" },
	[ANA_R_CACHING] = { "count", "total_ns", "mean_ns", "p50_ns", "read_bytes", "written_bytes", "flops" },
	[ANA_R_PARALLEL] = { "cpus_used", "cpus_online", "total_ns", "share", "threads", "wall_ns", "gpu_busy_share" },
};

const char *ana_evidence_key(enum ana_rule r, unsigned i)
{
	return (unsigned)r < ANA_R_N && i < ANA_SUG_EV ? ev_key[r][i] : NULL;
}

/* ---------------------------------------------------------------- triggers */

#define TH(field, dflt, lo, hi) { #field, offsetof(struct ana_sug_opts, field), dflt, lo, hi }
static const struct th {
	const char *key;
	size_t off;
	double dflt, lo, hi; /* accepted: lo < v <= hi (lo == 1: v >= 1; lo == -1: v >= 0) */
} ths[] = {
	TH(min_pct, 1, -1, 100),        TH(hot_self_pct, 10, 0, 100),  TH(cold_z, 10, 0, INFINITY),
	TH(cold_ratio, 2, 1, INFINITY), TH(cold_min_pct, 0.1, -1, 100), TH(unstable_cv, 0.10, 0, INFINITY),
	TH(short_ns, 1000, 0, INFINITY), TH(imbalance_ratio, 1.2, 1, INFINITY), TH(gpu_util_pct, 50, 0, 100),
	TH(gap_ms, 1, 0, INFINITY),     TH(mem_growth_mib, 64, 0, INFINITY), TH(mem_growth_pct, 10, -1, 100),
	TH(batch_ns, 50000, 0, INFINITY), TH(batch_calls, 10, 1, INFINITY), TH(cache_calls, 100, 1, INFINITY),
	TH(par_cpus, 1.25, 0, INFINITY), TH(par_pct, 20, 0, 100),
};
#define NTH (sizeof(ths) / sizeof(ths[0]))

const char *const ana_sug_threshold_keys[] = {
	"min_pct", "hot_self_pct", "cold_z", "cold_ratio", "cold_min_pct", "unstable_cv", "short_ns",
	"imbalance_ratio", "gpu_util_pct", "gap_ms", "mem_growth_mib", "mem_growth_pct", "batch_ns", "batch_calls",
	"cache_calls", "par_cpus", "par_pct", NULL,
};

static double *th_field(struct ana_sug_opts *o, const struct th *t)
{
	return (double *)((char *)o + t->off);
}

int ana_sug_threshold_set(struct ana_sug_opts *o, const char *key, double value)
{
	for (size_t i = 0; i < NTH; i++) {
		if (strcmp(key, ths[i].key))
			continue;
		bool ok = isfinite(value) && value <= ths[i].hi &&
			  (ths[i].lo == 1 ? value >= 1 : ths[i].lo == -1 ? value >= 0 : value > ths[i].lo);
		if (!ok)
			return -ERANGE;
		*th_field(o, &ths[i]) = value;
		o->set_mask |= 1u << i; /* an explicit 0 (min_pct, cold_min_pct) is not "the default" */
		return 0;
	}
	return -ENOENT;
}

static void fill_defaults(struct ana_sug_opts *o)
{
	for (size_t i = 0; i < NTH; i++)
		if (*th_field(o, &ths[i]) == 0 && !(o->set_mask & 1u << i))
			*th_field(o, &ths[i]) = ths[i].dflt;
}

/* ---------------------------------------------------------------- findings */

struct sctx {
	const struct ana_result *res;
	const struct ana_sug_opts *o;
	struct ana_sug *s;
	double span_sum;  /* sum of thread spans, ns: the share denominator */
	uint64_t *samp;   /* ANA_RESERVOIR_CAP values */
	double run_iqr;   /* unstable: the run's typical robust spread (run_spread()); NaN when unknown */
	double cpu_got;   /* cpu-share: CPUs used / CPUs its threads were in sections, when < 0.5; else NaN */
	bool busy;        /* oversubscribed, cpu-steal or cpu-share fired: the machine, not the program */
	int nomem;
};

static struct ana_finding *add(struct sctx *c, enum ana_rule r, uint32_t node, double stake)
{
	struct ana_sug *s = c->s;
	if ((s->n & (s->n - 1)) == 0 && s->n >= 16) { /* 16, 32, 64, ...: grow by doubling */
		struct ana_finding *f = realloc(s->f, 2 * s->n * sizeof(*f));
		if (!f) {
			c->nomem = 1;
			return NULL;
		}
		s->f = f;
	} else if (!s->f) {
		s->f = malloc(16 * sizeof(*s->f));
		if (!s->f) {
			c->nomem = 1;
			return NULL;
		}
	}
	struct ana_finding *f = &s->f[s->n++];
	memset(f, 0, sizeof(*f));
	f->rule = r;
	f->node = node;
	f->device = UINT32_MAX;
	f->thread = UINT32_MAX;
	f->cause = UINT32_MAX;
	f->contended_e = f->cpu_got = NAN;
	f->stake_ns = isfinite(stake) && stake > 0 ? stake : 0;
	for (unsigned i = 0; i < ANA_SUG_EV; i++)
		f->ev[i] = NAN;
	if (node != UINT32_MAX)
		f->lossy = c->res->merged.n[node].agg.lossy > 0;
	return f;
}

#define CPU_SHARE_LOW 0.5 /* cpu-share: CPUs used / CPUs its threads were in sections, below */

static void data_quality(struct sctx *c)
{
	const struct ana_result *res = c->res;
	uint64_t gpu_errors = 0, gaps = 0;
	for (int k = 0; k < ANA_GPU_ERRC_N; k++)
		gpu_errors += res->gpu.errors[k];
	for (size_t t = 0; t < res->nthreads; t++)
		gaps += res->threads[t].gaps;
	const struct pt_trace_info *in = pt_reader_info(res->rd);
	const uint64_t n[ANA_DQ_NKIND] = {
		[ANA_DQ_LOST] = res->lost_records,
		[ANA_DQ_UNMATCHED] = res->unmatched_ends,
		[ANA_DQ_OPEN] = res->open_at_end,
		[ANA_DQ_MISUSE] = res->misuse_errors,
		[ANA_DQ_CORRUPT] = in->corrupt_regions + in->damaged_chunks + (uint64_t)(in->header_damaged != 0),
		[ANA_DQ_GAPS] = gaps,
		[ANA_DQ_TORN] = (uint64_t)(res->torn_tail > 0),
		[ANA_DQ_GPU_ERRORS] = gpu_errors,
	};
	for (uint32_t k = 0; k < ANA_DQ_OVERSUB; k++) {
		if (!n[k] && !(k == ANA_DQ_LOST && res->lost_sections))
			continue;
		struct ana_finding *f = add(c, ANA_R_DATA, UINT32_MAX, 0);
		if (!f)
			return;
		f->cls = k;
		f->ev[0] = (double)n[k];
		if (k == ANA_DQ_LOST)
			f->ev[1] = (double)res->lost_sections;
	}
	/*
	 * Oversubscribed: more threads ready to run than CPUs, so durations include waits for a CPU.
	 * With the recorder's process counters (doc/trace-format.md §9): the system's runnable threads
	 * (the kernel's nr_running, sampled by the flusher) on average against the CPUs online; a thread
	 * blocked in pthread_join() or a read is not runnable. Without them (older traces): threads alive
	 * on average (summed thread spans / wall span) against the peaks' CPUs, an upper bound that
	 * counts blocked threads too (ev[2] says which: 1 runnable, 0 alive).
	 */
	struct ana_proc pr;
	ana_proc_summary(res, &pr);
	const struct ana_peaks *p = c->o->peaks;
	const double wall = (double)(res->end_ns - res->start_ns), alive = wall > 0 ? c->span_sum / wall : 0;
	double ready = -1, cpus = 0;
	if (pr.has_runnable && pr.cpus_online > 0) {
		ready = pr.runnable_mean;
		cpus = (double)pr.cpus_online;
	} else if (p && p->cpus && !c->s->peaks_other_host) {
		ready = alive;
		cpus = p->cpus;
	}
	if (ready >= 0 && ready > 1.1 * cpus) {
		struct ana_finding *f = add(c, ANA_R_DATA, UINT32_MAX, 0);
		if (!f)
			return;
		f->cls = ANA_DQ_OVERSUB;
		f->ev[0] = ready;
		f->ev[1] = cpus;
		f->ev[2] = pr.has_runnable && pr.cpus_online > 0;
	}
	/* cpu-steal: a hypervisor ran other guests on this VM's CPUs for more than 5% of their time */
	if (pr.has_steal && pr.steal_share > 0.05) {
		struct ana_finding *f = add(c, ANA_R_DATA, UINT32_MAX, 0);
		if (!f)
			return;
		f->cls = ANA_DQ_STEAL;
		f->ev[0] = pr.steal_share;
		f->ev[1] = (double)pr.cpus_online;
	}
	c->busy = (ready >= 0 && ready > 1.1 * cpus) || (pr.has_steal && pr.steal_share > 0.05);
	/*
	 * cpu-share (issue 15: "the process got 35 % of a CPU"): the process CPU counters, run-wide,
	 * against the CPUs its threads would use if every moment in a section ran: the CPU threads'
	 * time in top-level sections per wall ns. Under half: the threads waited, for a CPU (with
	 * oversubscribed or cpu-steal beside it) or blocked (I/O, locks, sleep) inside their sections.
	 */
	c->cpu_got = NAN;
	double in_sec = 0;
	for (size_t t = 0; t < res->nthreads; t++) {
		const struct ana_thread *th = &res->threads[t];
		if (th->gpu_thread || th->flusher_thread)
			continue;
		for (uint32_t i = 1; i < th->tree.count; i++)
			if (th->tree.n[i].parent == 0)
				in_sec += (double)th->tree.n[i].agg.total_ns;
	}
	const double need = wall > 0 ? in_sec / wall : 0;
	if (pr.has_cpu && need > 0 && pr.cpus_used < CPU_SHARE_LOW * need) {
		struct ana_finding *f = add(c, ANA_R_DATA, UINT32_MAX, 0);
		if (!f)
			return;
		f->cls = ANA_DQ_CPU_SHARE;
		c->cpu_got = pr.cpus_used / need;
		c->busy = true;
		f->ev[0] = c->cpu_got;
		f->ev[1] = pr.cpus_used;
		f->ev[2] = need;
	}
}

static double share(const struct sctx *c, double ns)
{
	return c->span_sum > 0 ? ns / c->span_sum : 0;
}

/* The self GPU time of @a capped at the GPU busy time (ana_occupied_ns()'s
 * GPU part): what a GPU stake may claim at most. */
static double gpu_self_capped(const struct sctx *c, const struct ana_agg *a)
{
	const uint64_t g = a->gpu ? a->gpu->self.total_ns : 0, busy = ana_gpu_busy_ns(c->res);
	return (double)(g < busy ? g : busy);
}

/* The impact gate's time (§9.1): the inclusive CPU time, or the time the
 * section occupies the GPU when that is larger (a GPU section's CPU time
 * is its launch: 0.45 ms for 200 ms of GPU work must not gate it out). */
static double gate_ns(const struct sctx *c, const struct ana_agg *a)
{
	return fmax((double)a->total_ns, (double)ana_occupied_ns(c->res, a));
}

/* A hot-section finding on @a (a path's row, or a name's flat row): its evidence; NULL on ENOMEM. */
static struct ana_finding *add_hot(struct sctx *c, uint32_t node, const struct ana_agg *a)
{
	/* ranked and staked by the time it occupies: CPU or GPU (ana_occupied_ns()) */
	const double occ = (double)ana_occupied_ns(c->res, a);
	struct ana_finding *f = add(c, ANA_R_HOT, node, occ);
	if (!f)
		return NULL;
	f->ev[6] = a->gpu ? (double)a->gpu->self.total_ns : 0;
	f->ev[7] = occ;
	f->ev[8] = share(c, occ);
	f->ev[0] = (double)a->self_ns;
	f->ev[1] = share(c, (double)a->self_ns);
	f->ev[2] = (double)a->total_ns; /* a flat row's: recursion-safe (§2) */
	f->ev[3] = share(c, (double)a->total_ns);
	f->ev[4] = (double)a->count;
	return f;
}

static void hot(struct sctx *c, uint32_t i, const struct ana_agg *a)
{
	if (100.0 * share(c, (double)ana_occupied_ns(c->res, a)) >= c->o->hot_self_pct)
		add_hot(c, i, a);
}

/* hot-section by name: names whose paths reach the trigger together, none of them alone. */
static void hot_names(struct sctx *c)
{
	const struct ana_result *res = c->res;
	const struct ana_tree *t = &res->merged;
	if (!res->by_name || !res->nnames)
		return;
	uint32_t *paths = calloc(res->nnames, sizeof(*paths));
	bool *alone = calloc(res->nnames, sizeof(*alone)); /* a path of the name fired on its own */
	uint64_t *largest = calloc(res->nnames, sizeof(*largest)); /* the largest self time of one path */
	if (!paths || !alone || !largest) {
		free(paths);
		free(alone);
		free(largest);
		c->nomem = 1;
		return;
	}
	for (uint32_t i = 1; i < t->count; i++) {
		const uint32_t id = t->n[i].id;
		if (id >= res->nnames || !t->n[i].agg.count)
			continue;
		paths[id]++;
		const uint64_t occ = ana_occupied_ns(res, &t->n[i].agg);
		alone[id] |= 100.0 * share(c, (double)occ) >= c->o->hot_self_pct;
		if (occ > largest[id])
			largest[id] = occ;
	}
	for (uint32_t id = 1; id < res->nnames && !c->nomem; id++) {
		const struct ana_agg *a = &res->by_name[id];
		if (!a->count || alone[id] || paths[id] < 2 ||
		    100.0 * share(c, (double)ana_occupied_ns(res, a)) < c->o->hot_self_pct)
			continue;
		struct ana_finding *f = add_hot(c, UINT32_MAX, a);
		if (!f)
			break;
		f->name_id = id;
		f->paths = paths[id];
		f->lossy = a->lossy > 0;
		f->ev[5] = (double)largest[id];
	}
	free(paths);
	free(alone);
	free(largest);
}

/* Roofs for a rate: one core, unless the section is faster than that (several cores). */
static void roofs(const struct sctx *c, double gflops, double gbps, double *pi, double *beta, bool *several)
{
	const struct ana_peaks *p = c->o->peaks;
	double pi1 = c->o->fp32 ? p->gflops32_1 : p->gflops64_1, pia = c->o->fp32 ? p->gflops32_all : p->gflops64_all;
	double b1 = p->gbps_1, ba = p->gbps_all;
	/* a profile may give one of the two: one core is a way to use all (at least), all bound one (at most) */
	pia = fmax(pia, pi1);
	ba = fmax(ba, b1);
	pi1 = pi1 > 0 ? pi1 : pia;
	b1 = b1 > 0 ? b1 : ba;
	*pi = pi1;
	*beta = b1;
	*several = false;
	if ((pi1 > 0 && gflops > 1.05 * pi1) || (b1 > 0 && gbps > 1.05 * b1)) {
		*several = true;
		*pi = pia;
		*beta = ba;
	}
}

/* One point to place on a roofline: what the path declares, the time its
 * rates are over, and the roofs it is held against (0: not in the profile). */
struct roof_pt {
	double fl, by;       /* declared FLOPs, bytes (read + written) */
	double t;            /* the time the rates are over, ns */
	double gflops, gbps; /* the achieved rates: fl / t, by / t (per ns = G per s) */
	double pi, beta;     /* the roofs, GFLOP/s and GB/s */
	bool several;        /* CPU: compared with the all-core roofs */
	bool top;            /* no higher roofs exist (all cores; the whole GPU): faster is above-roof */
	bool gpu;            /* the GPU's roofs, rates over GPU time */
	double cap;          /* the stake's cap: the time the stake is a part of */
};

/*
 * Classifies @pt on its roofline (doc/analyzer-output.md §9.2; Williams,
 * Waterman and Patterson, "Roofline", CACM 52(4), 2009: attainable
 * P(AI) = min(pi, AI x beta); the 80 / 60% thresholds of Nsight Compute's
 * SOLBottleneck rule) and adds the finding: the one place that says what
 * a class means, for CPU and GPU sections alike. Return: false when there
 * is no roof for what the path declares (no finding).
 */
static bool roof_place(struct sctx *c, uint32_t i, const struct ana_agg *a, const struct roof_pt *pt)
{
	const double fl = pt->fl, by = pt->by, pi = pt->pi, beta = pt->beta;
	double attain; /* GFLOP/s at the roof */
	bool memory, both = false; /* both: each figure it declares has its roof */
	double e;
	if (fl > 0 && by > 0 && pi > 0 && beta > 0) {
		both = true;
		const double ai = fl / by;
		memory = ai < pi / beta;
		attain = memory ? ai * beta : pi;
		e = pt->gflops / attain;
	} else if (fl > 0 && pi > 0) {
		memory = false;
		e = pt->gflops / pi;
		both = by == 0;
	} else if (by > 0 && beta > 0) {
		memory = true;
		e = pt->gbps / beta;
		both = fl == 0;
	} else {
		return false; /* no roof for what it declares */
	}
	uint32_t cls;
	if (e > 1.05 && pt->top)
		cls = ANA_ROOF_ABOVE;
	else if (e >= 0.8)
		cls = memory ? ANA_ROOF_MEM_NEAR : ANA_ROOF_COMP_NEAR;
	else if (e >= 0.6 || !both) /* with a roof unknown, "neither roof" cannot be told */
		cls = memory ? ANA_ROOF_MEM_BELOW : ANA_ROOF_COMP_BELOW;
	else
		cls = ANA_ROOF_LATENCY;
	/* contention (a cpu-share finding): a CPU section on neither roof is judged on the CPU time the
	 * process got, e / got, with the same thresholds: slowness the machine explains is not called
	 * latency-bound, and what is under 0.6 even of the time it got stays latency-bound */
	double e_got = NAN;
	if (cls == ANA_ROOF_LATENCY && !pt->gpu && c->cpu_got > 0) {
		e_got = e / c->cpu_got;
		if (e_got >= 0.8)
			cls = memory ? ANA_ROOF_MEM_NEAR : ANA_ROOF_COMP_NEAR;
		else if (e_got >= 0.6)
			cls = memory ? ANA_ROOF_MEM_BELOW : ANA_ROOF_COMP_BELOW;
	}
	/* at the roof the same work takes t * e: the stake is the rest, within the time it is a part of */
	struct ana_finding *f = add(c, ANA_R_ROOFLINE, i, e < 1 ? fmin(pt->t * (1 - e), pt->cap) : 0);
	if (!f)
		return true;
	f->cls = cls;
	f->contended_e = e_got;
	f->cpu_got = isnan(e_got) ? NAN : c->cpu_got;
	f->several_cores = pt->several;
	f->gpu_roofs = pt->gpu;
	f->ev[0] = fl;
	f->ev[1] = by;
	f->ev[2] = (double)a->total_ns;
	f->ev[3] = by > 0 ? fl / by : NAN;
	f->ev[4] = pt->gflops;
	f->ev[5] = pt->gbps;
	f->ev[6] = pi > 0 ? pi : NAN; /* the roofs used, also where the section declares no such figure */
	f->ev[7] = beta > 0 ? beta : NAN;
	f->ev[8] = e;
	f->ev[9] = pt->gpu ? pt->t : NAN;
	return true;
}

static void roofline(struct sctx *c, uint32_t i, const struct ana_agg *a)
{
	if (!a->metric_self[ANA_FLOPS] && !a->metric_self[ANA_READ] && !a->metric_self[ANA_WRITTEN])
		return; /* declares nothing itself: its children's rows carry the class */
	c->s->roofline_paths++;
	const struct ana_peaks *p = c->o->peaks;
	if (a->gpu && a->gpu->self.count) {
		/* a GPU section: the CPU roofs do not bound a GPU (the old 1,988
		 * GFLOP/s "above-roof" kernels judged on their launch time). It
		 * is placed on the GPU's roofs with its own declared work over
		 * its self GPU time (the row's gpu_self_* rates, ana_row_gpu()),
		 * or, without a GPU roof for what it declares, counted and left
		 * unclassified */
		struct ana_row w;
		ana_row_compute(c->res, a, &w);
		const struct roof_pt pt = {
			.fl = (double)a->metric_self[ANA_FLOPS],
			.by = (double)a->metric_self[ANA_READ] + (double)a->metric_self[ANA_WRITTEN],
			.t = (double)a->gpu->self.total_ns,
			.gflops = w.gpu_self_gflops,
			.gbps = w.gpu_self_gbps,
			.pi = p ? (c->o->fp32 ? p->gpu_gflops32 : p->gpu_gflops64) : 0,
			.beta = p ? p->gpu_mem_gbps : 0,
			.top = true, /* the FMA and copy rates of the whole device */
			.gpu = true,
			.cap = gpu_self_capped(c, a),
		};
		if (!(pt.t > 0) || !roof_place(c, i, a, &pt))
			c->s->roofline_gpu_paths++;
		return;
	}
	if (!p) {
		c->s->roofline_no_peaks = true;
		return;
	}
	/* inclusive work (its sub-sections' run within its time), but only of the kinds it declares
	 * itself: a FLOP kernel whose child declares bytes is not memory-bound on those bytes */
	const bool own_bytes = a->metric_self[ANA_READ] || a->metric_self[ANA_WRITTEN];
	struct roof_pt pt = {
		.fl = a->metric_self[ANA_FLOPS] ? (double)a->metric_incl[ANA_FLOPS] : 0,
		.by = own_bytes ? (double)a->metric_incl[ANA_READ] + (double)a->metric_incl[ANA_WRITTEN] : 0, /* no wrap */
		.t = (double)a->total_ns,
	};
	if (pt.t <= 0)
		return;
	pt.gflops = pt.fl / pt.t; /* per ns = G per s */
	pt.gbps = pt.by / pt.t;
	roofs(c, pt.gflops, pt.gbps, &pt.pi, &pt.beta, &pt.several); /* each 0 (not in the profile) or positive */
	pt.top = pt.several;
	pt.cap = pt.t;
	roof_place(c, i, a, &pt);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Median of sorted @v[0..n). */
static double median_sorted(const uint64_t *v, uint32_t n)
{
	return n % 2 ? (double)v[n / 2] : ((double)v[n / 2 - 1] + (double)v[n / 2]) / 2;
}

/* |2 @x - @m2|, saturated at UINT64_MAX (a crafted trace's durations near 2^64 ns) */
static uint64_t abs_dev2(uint64_t x, ana_u128 m2)
{
	const ana_u128 x2 = 2 * (ana_u128)x, d = x2 >= m2 ? x2 - m2 : m2 - x2;
	return d > UINT64_MAX ? UINT64_MAX : (uint64_t)d;
}

/* Robust spread of @a's durations: (p75 - p25) / p50 from its histogram (within 0.4%); NaN if p50 is 0. */
static double iqr_over_median(const struct ana_agg *a)
{
	const double p25 = (double)ana_hist_quantile(&a->hist, 0.25, a->count, a->min_ns, a->max_ns);
	const double p50 = (double)ana_hist_quantile(&a->hist, 0.50, a->count, a->min_ns, a->max_ns);
	const double p75 = (double)ana_hist_quantile(&a->hist, 0.75, a->count, a->min_ns, a->max_ns);
	return p50 > 0 ? (p75 - p25) / p50 : NAN;
}

static int cmp_dbl(const void *a, const void *b)
{
	const double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/*
 * The run's typical robust spread, for unstable: the median of iqr_over_median() over the paths with
 * 10 occurrences or more (at least 3 of them, else NaN). On a loaded machine every section jitters
 * (preemption, frequency, cache misses from the neighbours): a section is unstable for its own
 * reasons only when it spreads well beyond the others (issue 15: the CV rule alone fired on all
 * 39 sections of a fixed-work program on a busy VM). -1 on ENOMEM.
 */
static int run_spread(struct sctx *c)
{
	const struct ana_tree *t = &c->res->merged;
	double *v = malloc((t->count ? t->count : 1) * sizeof(*v));
	if (!v)
		return -1;
	uint32_t n = 0;
	for (uint32_t i = 1; i < t->count; i++) {
		const struct ana_agg *a = &t->n[i].agg;
		const double s = a->count >= 10 ? iqr_over_median(a) : NAN;
		if (!isnan(s))
			v[n++] = s;
	}
	c->run_iqr = NAN;
	if (n >= 3) {
		qsort(v, n, sizeof(*v), cmp_dbl);
		c->run_iqr = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	}
	free(v);
	return 0;
}

/* cold-first and unstable: both read the occurrences after the first. */
static void distribution(struct sctx *c, uint32_t i, const struct ana_agg *a)
{
	if (a->count < 3)
		return;
	const struct ana_sug_opts *o = c->o;
	const bool may_cold = (double)a->first_ns - (double)a->min_ns >= o->cold_min_pct / 100.0 * c->span_sum &&
			      a->first_ns > a->min_ns; /* the median of the rest is at least min_ns */
	const bool may_unstable = a->count >= 10 && 100.0 * share(c, (double)a->total_ns) >= o->min_pct;
	if (!may_cold && !may_unstable)
		return;
	uint32_t n = ana_samples_without_first(a, c->samp);
	if (n < 2)
		return;
	uint64_t *v = c->samp;
	qsort(v, n, sizeof(*v), cmp_u64);
	const double med = median_sorted(v, n);
	const double first = (double)a->first_ns;
	/* the sample's mean excess over its lower quartile (nearest rank): what running every occurrence as
	 * fast as the quick quarter would save, per occurrence */
	const double q1 = (double)v[(n + 3) / 4 - 1];
	double above = 0;
	for (uint32_t k = (n + 3) / 4; k < n; k++) /* sorted: the values after q1's rank are not below it */
		above += (double)v[k] - q1;
	above /= n;
	/* cold-first: modified z-score of the first occurrence against the rest */
	if (first > med && first - med >= o->cold_min_pct / 100.0 * c->span_sum && first >= o->cold_ratio * med) {
		uint64_t *d = c->samp + ANA_RESERVOIR_CAP; /* absolute deviations, doubled: exact integers */
		const ana_u128 m2 = n % 2 ? 2 * (ana_u128)v[n / 2] : (ana_u128)v[n / 2 - 1] + v[n / 2]; /* 2 x median */
		for (uint32_t k = 0; k < n; k++)
			d[k] = abs_dev2(v[k], m2);
		qsort(d, n, sizeof(*d), cmp_u64);
		const double mad = median_sorted(d, n) / 2;
		const double z = mad > 0 ? (first - med) / (1.4826 * mad) : INFINITY;
		if (z > o->cold_z) {
			struct ana_finding *f = add(c, ANA_R_COLD_FIRST, i, first - med);
			if (!f)
				return;
			f->ev[0] = (double)a->count;
			f->ev[1] = first;
			f->ev[2] = med;
			f->ev[3] = mad;
			f->ev[4] = z;
			f->ev[5] = med > 0 ? first / med : INFINITY;
		}
	}
	/* unstable: spread of the rest, from exact moments */
	if (!may_unstable)
		return;
	struct ana_moments rest = ana_moments_without(&a->all, a->first_ns);
	const double mean = ana_moments_mean(&rest, a->count - 1), sd = ana_moments_std(&rest, a->count - 1);
	if (!(mean > 0) || !(sd / mean > o->unstable_cv))
		return;
	/* the machine, not the code: no more spread than twice the run's typical section (once the run's
	 * sections do spread: on a quiet machine, where most do not, the CV decides alone) */
	const double iqr = iqr_over_median(a);
	if (c->run_iqr > 0 && !(iqr > 2 * c->run_iqr))
		return;
	/* stake: the time spent above the lower quartile, the sample's mean excess times the occurrences,
	 * never more than what those occurrences spent above their minimum, exactly (a q1 is >= min):
	 * a 512-value sample extrapolated to millions can overshoot the time it is a part of */
	const double rest_above_min =
		(double)a->total_ns - (double)a->first_ns - (double)(a->count - 1) * (double)a->min_ns;
	struct ana_finding *f = add(c, ANA_R_UNSTABLE, i, fmin(above * (double)(a->count - 1), rest_above_min));
	if (!f)
		return;
	f->ev[0] = (double)a->count;
	f->ev[1] = mean;
	f->ev[2] = sd;
	f->ev[3] = sd / mean;
	f->ev[4] = (double)ana_hist_quantile(&a->hist, 0.50, a->count, a->min_ns, a->max_ns);
	f->ev[5] = (double)ana_hist_quantile(&a->hist, 0.99, a->count, a->min_ns, a->max_ns);
	f->ev[6] = (double)a->min_ns;
	f->ev[7] = (double)a->max_ns;
	f->ev[8] = iqr;
	f->ev[9] = c->run_iqr;
}

/* short-sections: the median, not the mean, against short_ns: a few preempted occurrences (a
 * loaded machine) lift the mean of 100,000 sections of 120 ns above 1 us, not their median */
static void short_sections(struct sctx *c, uint32_t i, const struct ana_agg *a)
{
	const double mean = ana_moments_mean(&a->all, a->count);
	const double p50 = (double)ana_hist_quantile(&a->hist, 0.50, a->count, a->min_ns, a->max_ns);
	if (!(p50 < c->o->short_ns) || 100.0 * share(c, (double)a->total_ns) < c->o->min_pct)
		return;
	struct ana_finding *f = add(c, ANA_R_SHORT, i, (double)a->total_ns);
	if (!f)
		return;
	f->ev[0] = (double)a->count;
	f->ev[1] = mean;
	f->ev[2] = (double)a->total_ns;
	f->ev[3] = share(c, (double)a->total_ns);
	f->ev[4] = p50;
}

#define XFER_SMALL_BYTES 65536.0 /* CUDA: host-to-device copies up to 64 KiB are staged; below, latency rules */
#define XFER_MANY 100
/* slow-transfer: a GPU-time rate at most this many times the measured pageable rate is "likely pageable"
 * (a pageable copy is staged through a pinned buffer by the driver: it cannot beat that rate by much) */
#define XFER_PAGEABLE_NEAR 1.25

/* The measured rate of a copy of direction @d (DIR_H2D ..) from pinned host memory: the
 * profile's link rate (peaks --gpu fills it with the pinned figure; a hand-written file may give it
 * alone), else the GPU group's pinned figure. 0: unknown. */
static double link_gbps(const struct ana_peaks *p, int d)
{
	if (p->link_gbps[d] > 0)
		return p->link_gbps[d];
	return d == DIR_H2D ? p->gpu_h2d_pinned_gbps : d == DIR_D2H ? p->gpu_d2h_pinned_gbps : 0;
}

/* The measured rate of a copy of direction @d from pageable host memory (H2D, D2H); 0: unknown. */
static double pageable_gbps(const struct ana_peaks *p, int d)
{
	return d == DIR_H2D ? p->gpu_h2d_pageable_gbps : d == DIR_D2H ? p->gpu_d2h_pageable_gbps : 0;
}

static void transfers(struct sctx *c, uint32_t i, const struct ana_agg *a)
{
	if (100.0 * share(c, gate_ns(c, a)) < c->o->min_pct)
		return;
	/* a copy section (a GPU section that declared its bytes): the copy's
	 * rate is over its own GPU time, the stake a part of that time */
	const double gpu = a->gpu && a->gpu->self.count ? gpu_self_capped(c, a) : 0;
	const struct ana_peaks *p = c->o->peaks;
	for (int d = 0; d < ANA_DIRS; d++) {
		const double n = (double)ana_xfer_count(a, d), by = (double)ana_xfer_self(a, d);
		if (!n)
			continue;
		const double mean = by / n, t = gpu > 0 ? gpu : (double)a->total_ns;
		const double link = p ? link_gbps(p, d) : 0;
		struct ana_finding *f = NULL;
		if (n >= XFER_MANY && mean < XFER_SMALL_BYTES) {
			f = add(c, ANA_R_SMALL_XFER, i, fmax((double)a->total_ns, gpu));
			if (f && gpu > 0) { /* the copies' own time and rate, as the report's GPU columns */
				f->ev[4] = gpu;
				f->ev[5] = by / gpu;
			}
		} else if (link > 0 && mean >= XFER_SMALL_BYTES && t > 0 && by / t < 0.5 * link) {
			f = add(c, ANA_R_SLOW_XFER, i, t - by / link);
			if (f) {
				const double pg = pageable_gbps(p, d);
				f->ev[4] = by / t;
				f->ev[5] = link;
				f->ev[6] = by / t / link;
				if (gpu > 0)
					f->ev[7] = gpu;
				if (pg > 0) {
					f->ev[8] = pg;
					f->ev[9] = by / t / pg;
				}
				/* only a rate over the copy's own GPU time says how the copy ran;
				 * over the section's CPU time it is a lower bound */
				f->pageable = gpu > 0 && pg > 0 && by / t <= XFER_PAGEABLE_NEAR * pg;
			}
		}
		if (!f)
			continue;
		f->cls = (uint32_t)d + 1;
		f->ev[0] = n;
		f->ev[1] = by;
		f->ev[2] = mean;
		f->ev[3] = (double)a->total_ns; /* the CPU time; a copy's GPU time is gpu_ns */
	}
}

#define LAUNCH_MANY 100        /* ranges: fewer are not a pattern batching would pay off on */
#define LAUNCH_RATIO 2.0       /* GPU time per range under this many times the host's time per launch */
#define LAUNCH_SHORT_NS 10000.0 /* or under 10 us: a small kernel, whose fixed launch cost weighs on the GPU */

/*
 * launch-bound: a GPU section whose ranges are short against their launch.
 * Its self CPU time per occurrence is the host's cost of one launch (the
 * breakdown's launch time, §3.1): when the GPU runs a range in less than
 * twice that, the host issues work about as fast as the device consumes
 * it, and the device waits for the host between ranges (Nsight Systems'
 * user guide on CUDA graphs: short kernels are bound by launch overhead;
 * the CUDA C++ Best Practices Guide's advice to batch small kernels). The
 * stake is that launch time: the section's self CPU time, a part of its
 * CPU time and at most its occupied time.
 */
static void launch_bound(struct sctx *c, uint32_t i, const struct ana_agg *a)
{
	const struct ana_gpu *g = a->gpu;
	if (!g || g->self.count < LAUNCH_MANY || !a->count || 100.0 * share(c, gate_ns(c, a)) < c->o->min_pct)
		return;
	const double gpu_mean = (double)g->self.total_ns / (double)g->self.count,
		     host_mean = (double)a->self_ns / (double)a->count;
	if (!(gpu_mean < LAUNCH_RATIO * host_mean) && !(gpu_mean < LAUNCH_SHORT_NS))
		return;
	const double occ = (double)ana_occupied_ns(c->res, a);
	struct ana_finding *f = add(c, ANA_R_LAUNCH, i, fmin((double)a->self_ns, occ));
	if (!f)
		return;
	f->ev[0] = (double)g->self.count;
	f->ev[1] = (double)a->count;
	f->ev[2] = (double)g->self.total_ns;
	f->ev[3] = gpu_mean;
	f->ev[4] = (double)a->self_ns;
	f->ev[5] = host_mean;
	f->ev[6] = host_mean > 0 ? gpu_mean / host_mean : INFINITY;
	f->ev[7] = g->self.lat.n ? g->self.lat.mean : NAN;
}

#define XFER_DOM_SHARE 0.5 /* transfer-dominated: copies' share of the GPU time, at least */

/*
 * transfer-dominated: a path whose GPU time is mostly copies (the time
 * breakdown of ana_row_gpu(): transfer = the copy sections' GPU time,
 * inclusive, within the row's GPU time). A copy section with no GPU work
 * below it is all transfer by definition and is left to small-transfers
 * and slow-transfer. Gated on the transfer time; the stake is that time,
 * a part of the row's GPU time, capped at the GPU busy time.
 */
static void transfer_dominated(struct sctx *c, uint32_t i, const struct ana_agg *a)
{
	const struct ana_gpu *g = a->gpu;
	if (!g || !g->copy_ns)
		return;
	bool copy_section = false;
	for (int d = 0; d < ANA_DIRS; d++)
		copy_section |= g->self.count && ana_xfer_self(a, d);
	if (copy_section && g->incl_total_ns <= g->self.total_ns)
		return;
	struct ana_row w;
	ana_row_compute(c->res, a, &w);
	const double busy = (double)ana_gpu_busy_ns(c->res), xfer = fmin((double)w.bd_copy_ns, busy);
	if (!(w.bd_gpu_ns > 0) || (double)w.bd_copy_ns < XFER_DOM_SHARE * (double)w.bd_gpu_ns ||
	    100.0 * share(c, xfer) < c->o->min_pct)
		return;
	struct ana_finding *f = add(c, ANA_R_XFER_DOM, i, xfer);
	if (!f)
		return;
	int top = 0; /* the direction with the most copy time names the class */
	for (int d = 1; d < ANA_DIRS; d++)
		if (g->copy_dir_ns[d] > g->copy_dir_ns[top])
			top = d;
	f->cls = (uint32_t)top + 1;
	f->ev[0] = (double)w.bd_gpu_ns;
	f->ev[1] = (double)w.bd_copy_ns;
	f->ev[2] = (double)w.bd_compute_ns;
	f->ev[3] = (double)w.bd_copy_ns / (double)w.bd_gpu_ns;
	for (int d = 0; d < ANA_DIRS; d++)
		f->ev[4 + d] = (double)g->copy_dir_ns[d];
	f->ev[8] = (double)a->total_ns;
}

/* imbalance: each merged path's inclusive totals per (CPU) thread */
static void imbalance(struct sctx *c)
{
	const struct ana_result *res = c->res;
	const struct ana_tree *m = &res->merged;
	struct acc { double max, sum, min; uint32_t n, argmax; } *acc = calloc(m->count, sizeof(*acc));
	uint32_t *map = NULL;
	size_t cap = 0;
	if (!acc) {
		c->nomem = 1;
		return;
	}
	for (size_t ti = 0; ti < res->nthreads; ti++) {
		const struct ana_thread *th = &res->threads[ti];
		const struct ana_tree *t = &th->tree;
		if (th->gpu_thread || !t->count)
			continue;
		if (t->count > cap) {
			uint32_t *nm = realloc(map, t->count * sizeof(*nm));
			if (!nm) {
				c->nomem = 1;
				break;
			}
			map = nm;
			cap = t->count;
		}
		map[0] = 0;
		for (uint32_t i = 1; i < t->count; i++) { /* a node comes after its parent */
			const uint32_t p = map[t->n[i].parent];
			map[i] = p == UINT32_MAX ? UINT32_MAX : ana_tree_find(m, p, t->n[i].id);
			const struct ana_agg *a = &t->n[i].agg;
			if (map[i] == UINT32_MAX || !a->count)
				continue;
			struct acc *x = &acc[map[i]];
			const double v = (double)a->total_ns;
			if (!x->n || v > x->max) {
				x->max = v;
				x->argmax = th->index;
			}
			if (!x->n || v < x->min)
				x->min = v;
			x->sum += v;
			x->n++;
		}
	}
	for (uint32_t i = 1; i < m->count && !c->nomem; i++) {
		const struct acc *x = &acc[i];
		if (x->n < 2 || 100.0 * share(c, (double)m->n[i].agg.total_ns) < c->o->min_pct)
			continue;
		const double mean = x->sum / x->n;
		if (!(mean > 0) || !(x->max / mean > c->o->imbalance_ratio))
			continue;
		struct ana_finding *f = add(c, ANA_R_IMBALANCE, i, x->max - mean);
		if (!f)
			break;
		f->thread = x->argmax;
		f->ev[0] = x->n;
		f->ev[1] = x->max;
		f->ev[2] = mean;
		f->ev[3] = x->min;
		f->ev[4] = x->max / mean;
	}
	free(acc);
	free(map);
}

static void gpu_idle(struct sctx *c)
{
	const struct ana_result *res = c->res;
	/* seconds as --since counts them: from the trace start (pt_open()), not from the first record */
	const double origin = (double)pt_reader_ticks_to_ns(res->rd, pt_reader_info(res->rd)->start_ticks);
	for (size_t k = 0; k < res->gpu.ndev; k++) {
		const struct ana_gpu_device *d = &res->gpu.dev[k];
		if (d->niv == 0 || d->ranges < 2)
			continue;
		const double t0 = (double)pt_reader_ticks_to_ns(res->rd, d->iv[0]),
			     t1 = (double)pt_reader_ticks_to_ns(res->rd, d->iv[2 * d->niv - 1]);
		const double span = t1 - t0;
		if (!(span > 0))
			continue;
		const double min_gap = fmax(c->o->gap_ms * 1e6, 0.01 * span);
		double gaps = 0, gap_ns = 0, longest = 0, longest_at = 0;
		uint64_t lg[2] = { 0, 0 }; /* the longest gap, ticks */
		for (size_t j = 1; j < d->niv; j++) {
			const double a = (double)pt_reader_ticks_to_ns(res->rd, d->iv[2 * j - 1]),
				     b = (double)pt_reader_ticks_to_ns(res->rd, d->iv[2 * j]);
			if (b - a < min_gap)
				continue;
			gaps++;
			gap_ns += b - a;
			if (b - a > longest) {
				longest = b - a;
				longest_at = (a - origin) / 1e9;
				lg[0] = d->iv[2 * j - 1];
				lg[1] = d->iv[2 * j];
			}
		}
		const double util = (double)d->busy_ns / span;
		if (!gaps && !(100.0 * util < c->o->gpu_util_pct))
			continue;
		struct ana_finding *f = add(c, ANA_R_GPU_IDLE, UINT32_MAX, gaps ? gap_ns : span - (double)d->busy_ns);
		if (!f)
			return;
		f->device = d->device;
		f->ev[0] = (double)d->ranges;
		f->ev[1] = span;
		f->ev[2] = (double)d->busy_ns;
		f->ev[3] = util;
		f->ev[4] = gaps;
		f->ev[5] = gap_ns;
		f->ev[6] = gaps ? longest : NAN;
		f->ev[7] = gaps ? longest_at : NAN;
		f->gap_ticks[0] = lg[0];
		f->gap_ticks[1] = lg[1];
	}
}

/*
 * memory-growth: per memory series, the paths with >= 2 measured
 * occurrences whose total change (the sum of end - begin, ana_mem.c) is at
 * least mem_growth_mib MiB and mem_growth_pct % of the series' peak; a
 * path is left out when a path below it fires with at least half its
 * growth (its ancestors see the same growth again). Memory has no time at
 * stake: the stake is the path's time (gate_ns(), the inclusive time or
 * the time it occupies the GPU), as small-transfers', so a leak in the
 * main loop ranks above one in a rare call.
 */
static void memory_growth(struct sctx *c)
{
	const struct ana_result *res = c->res;
	const struct ana_tree *t = &res->merged;
	if (!res->nmem || t->count < 2)
		return;
	double *grow = malloc(t->count * sizeof(*grow));
	bool *below = malloc(t->count * sizeof(*below)); /* a path below it fired with half its growth */
	if (!grow || !below) {
		free(grow);
		free(below);
		c->nomem = 1;
		return;
	}
	const double min_bytes = c->o->mem_growth_mib * 1048576.0;
	for (uint32_t s = 0; s < res->nmem && !c->nomem; s++) {
		const struct ana_mem_series *m = &res->mem[s];
		const double share_of = c->o->mem_growth_pct / 100.0 * (double)(m->max > 0 ? m->max : 0);
		struct ana_mem_fig fig;
		for (uint32_t i = 0; i < t->count; i++) {
			below[i] = false;
			grow[i] = 0;
			if (i && ana_mem_fig(&t->n[i].agg, s, &fig) && fig.n >= 2 && fig.delta_total >= min_bytes &&
			    fig.delta_total >= share_of && fig.delta_total > 0)
				grow[i] = fig.delta_total;
		}
		for (uint32_t i = 1; i < t->count; i++) {
			if (!(grow[i] > 0))
				continue;
			for (uint32_t p = t->n[i].parent; p != 0; p = t->n[p].parent)
				if (grow[p] > 0 && grow[i] >= 0.5 * grow[p])
					below[p] = true;
		}
		for (uint32_t i = 1; i < t->count && !c->nomem; i++) {
			if (!(grow[i] > 0) || below[i])
				continue;
			const struct ana_agg *a = &t->n[i].agg;
			ana_mem_fig(a, s, &fig);
			struct ana_finding *f = add(c, ANA_R_MEM_GROWTH, i, gate_ns(c, a));
			if (!f)
				break;
			f->series = s;
			f->ev[0] = (double)fig.n;
			f->ev[1] = fig.delta;
			f->ev[2] = fig.delta_total;
			f->ev[3] = (double)fig.dmin;
			f->ev[4] = (double)fig.dmax;
			f->ev[5] = (double)fig.peak;
			f->ev[6] = (double)m->max;
			f->ev[7] = m->max > 0 ? fig.delta_total / (double)m->max : NAN;
			f->ev[8] = m->period_ns ? (double)m->period_ns : NAN;
			f->ev[9] = (double)a->total_ns;
		}
	}
	free(grow);
	free(below);
}

#define BATCH_PARENT_SHARE 0.5 /* batching: the child's share of its parent's time, at least */

/* The CPU threads of @res that lived (a span): the "parent occurrences" of a top-level path. */
static uint32_t cpu_threads(const struct ana_result *res)
{
	uint32_t n = 0;
	for (size_t t = 0; t < res->nthreads; t++)
		n += !res->threads[t].gpu_thread && res->threads[t].last_ns > res->threads[t].first_ns;
	return n;
}

/*
 * batching: many short calls back to back (issue 15's proposal). The pass keeps no gap between
 * consecutive occurrences, so "back to back" is read off the parent: at least batch_calls calls per
 * parent occurrence (a top-level path: per CPU thread, whose span is the parent's time), a median
 * below batch_ns, and at least half the parent's time spent in them, which bounds the mean gap
 * between two calls by the mean call. Stake: each call but one per parent occurrence pays a fixed
 * cost of at most its fastest occurrence (min_ns), which a batched call pays once; at most the
 * path's inclusive time.
 */
static void batching(struct sctx *c, uint32_t i, const struct ana_agg *a, uint32_t nthreads)
{
	const struct ana_tree *t = &c->res->merged;
	const uint32_t p = t->n[i].parent;
	const double pcount = p ? (double)t->n[p].agg.count : (double)nthreads,
		     ptime = p ? (double)t->n[p].agg.total_ns : c->span_sum;
	if (!(pcount > 0) || !(ptime > 0) || (double)a->count < c->o->batch_calls * pcount ||
	    (double)a->total_ns < BATCH_PARENT_SHARE * ptime || 100.0 * share(c, (double)a->total_ns) < c->o->min_pct)
		return;
	const double p50 = (double)ana_hist_quantile(&a->hist, 0.50, a->count, a->min_ns, a->max_ns);
	if (!(p50 < c->o->batch_ns))
		return;
	const double saved = ((double)a->count - pcount) * (double)a->min_ns;
	struct ana_finding *f = add(c, ANA_R_BATCHING, i, fmin(saved, (double)a->total_ns));
	if (!f)
		return;
	f->ev[0] = (double)a->count;
	f->ev[1] = pcount;
	f->ev[2] = (double)a->count / pcount;
	f->ev[3] = p50;
	f->ev[4] = (double)a->min_ns;
	f->ev[5] = (double)a->total_ns;
	f->ev[6] = ptime;
	f->ev[7] = (double)a->total_ns / ptime;
}

/*
 * caching: at least cache_calls calls whose declared work (bytes read, written, FLOPs: the section's
 * own metrics) is the same on every call, min == max per kind and some kind above 0 (issue 15's
 * proposal: identical declared metrics). Equal work does not prove equal inputs, so the text says
 * "a candidate". Stake: memoized, only the first call would run: the inclusive time less one mean
 * call, (count - 1) / count of it.
 */
static void caching(struct sctx *c, uint32_t i, const struct ana_agg *a)
{
	if ((double)a->count < c->o->cache_calls || 100.0 * share(c, (double)a->total_ns) < c->o->min_pct)
		return;
	if (a->metric_occ != a->count)
		return; /* some calls declared nothing */
	bool some = false;
	for (int k = 0; k < ANA_NMETRIC; k++) {
		if (a->metric_min[k] != a->metric_max[k] || a->metric_self[k] == UINT64_MAX)
			return; /* varies (or saturated: the sums say nothing) */
		some |= a->metric_max[k] > 0;
	}
	if (!some)
		return;
	const double n = (double)a->count;
	struct ana_finding *f = add(c, ANA_R_CACHING, i, (double)a->total_ns * (n - 1) / n);
	if (!f)
		return;
	f->ev[0] = n;
	f->ev[1] = (double)a->total_ns;
	f->ev[2] = (double)a->total_ns / n;
	f->ev[3] = (double)ana_hist_quantile(&a->hist, 0.50, a->count, a->min_ns, a->max_ns);
	f->ev[4] = (double)a->metric_max[ANA_READ];
	f->ev[5] = (double)a->metric_max[ANA_WRITTEN];
	f->ev[6] = (double)a->metric_max[ANA_FLOPS];
}

#define PAR_GPU_BUSY 0.5 /* parallelization: a GPU busy this share of the wall span or more: not fired */

/*
 * parallelization (issue 15's proposal: low concurrency): the process used at most par_cpus CPUs on
 * average (its CPU counters, run-wide) on a machine with two or more online, and a top-level path of
 * at least par_pct of the summed thread time ran on one CPU thread. Not on a busy machine
 * (oversubscribed, cpu-steal, cpu-share: more threads would wait for CPUs too), nor when a GPU was
 * busy half the wall span or more (the work is on the device: CPU threads will not speed it).
 * Stake: Amdahl, the path's time spread over the N CPUs online, t (1 - 1/N): at most t.
 */
static void parallelization(struct sctx *c)
{
	const struct ana_result *res = c->res;
	struct ana_proc pr;
	ana_proc_summary(res, &pr);
	const double wall = (double)(res->end_ns - res->start_ns);
	if (c->busy || !pr.has_cpu || pr.cpus_online < 2 || !(pr.cpus_used <= c->o->par_cpus) || !(wall > 0))
		return;
	double gpu_busy = 0;
	for (size_t k = 0; k < res->gpu.ndev; k++)
		gpu_busy = fmax(gpu_busy, (double)res->gpu.dev[k].busy_ns / wall);
	if (gpu_busy >= PAR_GPU_BUSY)
		return;
	const struct ana_tree *m = &res->merged;
	for (uint32_t i = 1; i < m->count && !c->nomem; i++) {
		const struct ana_agg *a = &m->n[i].agg;
		if (m->n[i].parent != 0 || !a->count || 100.0 * share(c, (double)a->total_ns) < c->o->par_pct)
			continue;
		uint32_t threads = 0, last = UINT32_MAX;
		for (size_t t = 0; t < res->nthreads; t++) {
			const struct ana_thread *th = &res->threads[t];
			const uint32_t j = th->gpu_thread ? UINT32_MAX : ana_tree_find(&th->tree, 0, m->n[i].id);
			if (j != UINT32_MAX && th->tree.n[j].agg.count) {
				threads++;
				last = th->index;
			}
		}
		if (threads != 1)
			continue;
		const double n = (double)pr.cpus_online;
		struct ana_finding *f = add(c, ANA_R_PARALLEL, i, (double)a->total_ns * (1 - 1 / n));
		if (!f)
			return;
		f->thread = last;
		f->ev[0] = pr.cpus_used;
		f->ev[1] = n;
		f->ev[2] = (double)a->total_ns;
		f->ev[3] = share(c, (double)a->total_ns);
		f->ev[4] = threads;
		f->ev[5] = wall;
		f->ev[6] = res->gpu.ndev ? gpu_busy : NAN;
	}
}

/* ---- gpu-idle: the host sections running during the gaps (one more read of the trace) ---- */

#define HOST_GAPS 8 /* the gpu-idle findings, by stake, whose longest gap is attributed */

struct hframe {
	uint32_t id;
	uint64_t start;              /* ticks */
	double child_ns[HOST_GAPS];  /* overlap of its closed children with each gap */
};

struct hthread {
	uint64_t key;                /* thread index (rp_map entry) */
	struct rp_thread rt;         /* replay/replay.h: the nesting rules every reader follows */
	uint64_t last;               /* the last BEGIN or END tick of the thread */
	struct hframe *st;
	size_t depth, cap;
	double top_ns[HOST_GAPS];    /* overlap of its outermost sections with each gap */
	bool done;                   /* its end handled (an index listed twice counts once) */
};

struct hshare {
	uint64_t key;                /* thread << 32 | id */
	double ns;
};

struct hpass {
	struct pt_reader *rd;
	uint32_t ng;
	uint64_t ga[HOST_GAPS], gb[HOST_GAPS], gmax; /* the gaps, ticks; the latest end */
	struct rp_map shares[HOST_GAPS];
	int nomem;
};

/* The overlap of [s, e] with gap @g, in ns. */
static double gap_overlap(const struct hpass *h, uint32_t g, uint64_t s, uint64_t e)
{
	const uint64_t a = s > h->ga[g] ? s : h->ga[g], b = e < h->gb[g] ? e : h->gb[g];
	return b > a ? (double)(pt_reader_ticks_to_ns(h->rd, b) - pt_reader_ticks_to_ns(h->rd, a)) : 0;
}

/* Closes the top frame of @t at @end: its self time in each gap goes to its name. */
static void hclose(struct hpass *h, struct hthread *t, uint64_t end)
{
	const struct hframe *f = &t->st[--t->depth];
	for (uint32_t g = 0; g < h->ng; g++) {
		const double o = gap_overlap(h, g, f->start, end), self = o - f->child_ns[g];
		if (t->depth)
			t->st[t->depth - 1].child_ns[g] += o;
		else
			t->top_ns[g] += o;
		if (!(self > 0))
			continue;
		const uint64_t key = t->key << 32 | f->id;
		struct hshare *x = rp_map_find(&h->shares[g], key);
		if (!x && !(x = rp_map_add(&h->shares[g], key))) {
			ana_nomem_note();
			h->nomem = 1;
			return;
		}
		x->ns += self;
	}
}

/* The records of one chunk of thread @t (the current chunk of the reader). */
static void host_chunk(struct hpass *h, struct hthread *t)
{
	struct pt_record r;
	while (!h->nomem && pt_reader_next_record(h->rd, &r, sizeof(r)) == 1) {
		r.ticks = rp_ticks(&t->rt, r.kind, r.ticks); /* rule 2 */
		if (r.kind == PT_REC_BEGIN || r.kind == PT_REC_END)
			t->last = r.ticks;
		if (r.kind == PT_REC_BEGIN) {
			if (!rp_begin(&t->rt, (uint32_t)t->depth)) /* rule 3 */
				continue;
			if (t->depth == t->cap) {
				size_t nc = t->cap ? 2 * t->cap : 16;
				struct hframe *n = realloc(t->st, nc * sizeof(*n));
				if (!n) {
					h->nomem = 1;
					return;
				}
				t->st = n;
				t->cap = nc;
			}
			struct hframe *f = &t->st[t->depth++];
			memset(f, 0, sizeof(*f));
			f->id = r.id;
			f->start = r.ticks;
		} else if (r.kind == PT_REC_END) {
			/* rules 3, 4: the nearest open section of that name; the sections above it end too */
			uint32_t n = RP_END(&t->rt, t->st, (uint32_t)t->depth, r.id);
			if (n == RP_END_TOO_DEEP)
				continue;
			while (n-- > 0 && !h->nomem)
				hclose(h, t, r.ticks);
		}
	}
}

static int cmp_share(const void *a, const void *b)
{
	const struct ana_host_share *x = a, *y = b;
	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

struct top_ctx {
	struct ana_host_share *top;
	uint32_t *n;
};

static void keep_top(void *ctx, const void *entry)
{
	struct top_ctx *t = ctx;
	const struct hshare *x = entry;
	const struct ana_host_share c = { .thread = (uint32_t)(x->key >> 32), .id = (uint32_t)x->key, .ns = x->ns };
	if (*t->n < ANA_SUG_HOST)
		t->top[(*t->n)++] = c;
	else if (cmp_share(&c, &t->top[ANA_SUG_HOST - 1]) < 0)
		t->top[ANA_SUG_HOST - 1] = c;
	else
		return;
	qsort(t->top, *t->n, sizeof(*t->top), cmp_share);
}

static void free_stack(void *ctx, const void *entry)
{
	(void)ctx;
	free(((const struct hthread *)entry)->st);
}

/*
 * Attributes the longest gap of the first HOST_GAPS gpu-idle findings of
 * @s (ranked) with one read of @path in file order: a stack per CPU thread
 * (the ptz-gpu thread and threads the analysis did not keep are left out),
 * each closed section's self overlap with each gap to its (thread, name);
 * a gap in a thread's chunk sequence closes its open sections at the last
 * tick seen, as does the end of its records; chunks that start after every
 * gap are not decoded (they only tell that the thread lived on). Return: 0,
 * or a negative errno / PT_E* (the findings stay unattributed).
 */
static int host_during_gaps(const struct ana_result *res, const char *path, struct ana_sug *s)
{
	struct hpass h = { .ng = 0 };
	struct ana_finding *fs[HOST_GAPS];
	for (size_t i = 0; i < s->n && h.ng < HOST_GAPS; i++) {
		struct ana_finding *f = &s->f[i];
		if (f->rule != ANA_R_GPU_IDLE || f->gap_ticks[1] <= f->gap_ticks[0])
			continue;
		fs[h.ng] = f;
		h.ga[h.ng] = f->gap_ticks[0];
		h.gb[h.ng] = f->gap_ticks[1];
		h.gmax = h.gb[h.ng] > h.gmax ? h.gb[h.ng] : h.gmax;
		h.ng++;
	}
	if (!h.ng)
		return 0;
	int rc = pt_reader_open_trace(path, &h.rd);
	if (rc) {
		pt_reader_close(h.rd);
		return rc;
	}
	struct rp_map threads;
	rp_map_init(&threads, sizeof(struct hthread));
	for (uint32_t g = 0; g < h.ng; g++)
		rp_map_init(&h.shares[g], sizeof(struct hshare));
	for (size_t t = 0; t < res->nthreads && !h.nomem; t++)
		if (!res->threads[t].gpu_thread && !rp_map_find(&threads, res->threads[t].index) &&
		    !rp_map_add(&threads, res->threads[t].index)) {
			ana_nomem_note();
			h.nomem = 1;
		}
	struct pt_chunk_info ci;
	while (!h.nomem && (rc = pt_reader_next_chunk(h.rd, PT_READER_ALL_CHUNKS, &ci, sizeof(ci))) == 1) {
		struct hthread *t = ci.thread == PT_FMT_META_THREAD ? NULL : rp_map_find(&threads, ci.thread);
		if (!t)
			continue;
		if (rp_chunk(&t->rt, ci.sequence)) { /* rule 1, records missing: what was open ends at the last tick seen */
			rp_cut(&t->rt);
			while (t->depth && !h.nomem)
				hclose(&h, t, t->last);
		}
		if (ci.first_ticks >= h.gmax) { /* past every gap: the thread lived on, nothing more to learn */
			t->last = ci.first_ticks > t->last ? ci.first_ticks : t->last;
			rp_chunk_done(&t->rt, ci.last_ticks);
			continue;
		}
		host_chunk(&h, t);
	}
	rc = rc < 0 ? rc : 0;
	/* the end of each thread's records: what is still open ends at its last tick; then the
	 * time each thread lived through each gap with no section open */
	double none[HOST_GAPS] = { 0 }, ga_ns[HOST_GAPS], gb_ns[HOST_GAPS];
	for (uint32_t g = 0; g < h.ng; g++) {
		ga_ns[g] = (double)pt_reader_ticks_to_ns(h.rd, h.ga[g]);
		gb_ns[g] = (double)pt_reader_ticks_to_ns(h.rd, h.gb[g]);
	}
	for (size_t t = 0; t < res->nthreads && !h.nomem; t++) {
		const struct ana_thread *th = &res->threads[t];
		struct hthread *x = th->gpu_thread ? NULL : rp_map_find(&threads, th->index);
		if (!x || x->done)
			continue;
		x->done = true;
		while (x->depth && !h.nomem)
			hclose(&h, x, x->last);
		for (uint32_t g = 0; g < h.ng; g++) {
			const double alive = fmin(gb_ns[g], (double)th->last_ns) - fmax(ga_ns[g], (double)th->first_ns);
			if (alive > x->top_ns[g])
				none[g] += alive - x->top_ns[g];
		}
	}
	if (!rc && !h.nomem)
		for (uint32_t g = 0; g < h.ng; g++) {
			struct top_ctx tc = { fs[g]->host, &fs[g]->nhost };
			fs[g]->nhost = 0;
			rp_map_each(&h.shares[g], keep_top, &tc);
			fs[g]->host_none_ns = none[g];
			fs[g]->host_read = true;
		}
	rp_map_each(&threads, free_stack, NULL);
	for (uint32_t g = 0; g < h.ng; g++)
		rp_map_free(&h.shares[g]);
	rp_map_free(&threads);
	pt_reader_close(h.rd);
	return rc ? rc : h.nomem ? -ENOMEM : 0;
}

/* Ranking: data-quality first (in kind order), then the largest stake; ties by rule, then tree order. */
static int cmp_finding(const void *pa, const void *pb)
{
	const struct ana_finding *a = pa, *b = pb;
	bool da = a->rule == ANA_R_DATA, db = b->rule == ANA_R_DATA;
	if (da != db)
		return da ? -1 : 1;
	if (da)
		return (a->cls > b->cls) - (a->cls < b->cls);
	if (a->stake_ns != b->stake_ns)
		return a->stake_ns > b->stake_ns ? -1 : 1;
	if (a->rule != b->rule)
		return a->rule < b->rule ? -1 : 1;
	if (a->node != b->node)
		return a->node < b->node ? -1 : 1;
	if (a->name_id != b->name_id)
		return a->name_id < b->name_id ? -1 : 1;
	if (a->series != b->series)
		return a->series < b->series ? -1 : 1;
	return (a->device > b->device) - (a->device < b->device);
}

const char *ana_priority_key(enum ana_priority p)
{
	static const char *const k[] = { "low", "medium", "high", "critical" };
	return p >= ANA_P_LOW && p <= ANA_P_CRITICAL ? k[p] : NULL;
}

/* Share, Amdahl bound and priority of every finding (ana_finding, enum ana_priority); then leaves out
 * those below o.min_priority (the array stays ranked). */
static void prioritize(const struct ana_result *res, struct ana_sug *s)
{
	const double span = (double)res->thread_span_sum_ns;
	size_t o = 0;
	for (size_t i = 0; i < s->n; i++) {
		struct ana_finding *f = &s->f[i];
		if (f->rule == ANA_R_DATA) {
			f->priority = ANA_P_NONE;
			f->share = f->potential_speedup = NAN;
		} else {
			f->share = span > 0 ? fmin(f->stake_ns / span, 1.0) : 0.0;
			f->potential_speedup = f->share < 1 ? 1.0 / (1.0 - f->share) : NAN;
			int p = f->share >= 0.20 ? ANA_P_CRITICAL : f->share >= 0.05 ? ANA_P_HIGH
				: f->share >= 0.01 ? ANA_P_MEDIUM : ANA_P_LOW;
			if (f->lossy && p > ANA_P_LOW)
				p--;
			f->priority = (enum ana_priority)p;
			if (f->priority < s->o.min_priority) {
				s->below_priority++;
				continue;
			}
		}
		s->f[o++] = *f;
	}
	s->n = o;
}

/* Keeps the ANA_SUG_MAX_PER_RULE largest stakes of each rule (the array is ranked). */
static void cap_rules(struct ana_sug *s)
{
	size_t kept[ANA_R_N] = { 0 }, o = 0;
	for (size_t i = 0; i < s->n; i++) {
		enum ana_rule r = s->f[i].rule;
		if (kept[r] == ANA_SUG_MAX_PER_RULE) {
			s->left_out[r]++;
			continue;
		}
		kept[r]++;
		s->f[o++] = s->f[i];
	}
	s->n = o;
}

/*
 * Symptoms under their cause (issue 15: "oversubscription explains many unstable findings; say it
 * once"): on a machine with more runnable threads than CPUs (oversubscribed), else one whose
 * hypervisor took CPU time (cpu-steal), durations vary for the machine's reasons, so every unstable
 * finding points at that data-quality finding (not cpu-share alone: its threads may have blocked in
 * their own code, which is the code's reason). On the ranked, kept findings (indexes are final).
 */
static void group_causes(struct ana_sug *s)
{
	uint32_t cause = UINT32_MAX;
	for (size_t i = 0; i < s->n && s->f[i].rule == ANA_R_DATA; i++)
		if ((s->f[i].cls == ANA_DQ_OVERSUB || s->f[i].cls == ANA_DQ_STEAL) && cause == UINT32_MAX)
			cause = (uint32_t)i; /* oversubscribed ranks first when both fired */
	for (size_t i = 0; i < s->n && cause != UINT32_MAX; i++)
		if (s->f[i].rule == ANA_R_UNSTABLE)
			s->f[i].cause = cause;
}

int ana_suggest(const struct ana_result *res, const struct ana_sug_opts *o, struct ana_sug *out)
{
	memset(out, 0, sizeof(*out));
	if (!res->has_samples)
		return -EINVAL; /* cold-first and unstable would see no occurrence */
	if (o)
		out->o = *o;
	fill_defaults(&out->o);
	struct sctx c = {
		.res = res,
		.o = &out->o,
		.s = out,
		.span_sum = (double)res->thread_span_sum_ns,
		.samp = malloc(2 * ANA_RESERVOIR_CAP * sizeof(uint64_t)),
	};
	if (!c.samp)
		return -ENOMEM;
	const struct ana_peaks *p = out->o.peaks;
	const char *host = pt_reader_info(res->rd)->host;
	out->peaks_other_host = p && p->host[0] && host && host[0] && strcmp(p->host, host) != 0;

	data_quality(&c);
	if (run_spread(&c))
		c.nomem = 1;
	const struct ana_tree *t = &res->merged;
	const uint32_t nthreads = cpu_threads(res);
	for (uint32_t i = 1; i < t->count && !c.nomem; i++) {
		const struct ana_agg *a = &t->n[i].agg;
		if (!a->count)
			continue;
		hot(&c, i, a);
		if (100.0 * share(&c, gate_ns(&c, a)) >= out->o.min_pct)
			roofline(&c, i, a);
		distribution(&c, i, a);
		short_sections(&c, i, a);
		transfers(&c, i, a);
		launch_bound(&c, i, a);
		transfer_dominated(&c, i, a);
		batching(&c, i, a, nthreads);
		caching(&c, i, a);
	}
	if (!c.nomem)
		hot_names(&c);
	if (!c.nomem)
		imbalance(&c);
	if (!c.nomem)
		gpu_idle(&c);
	if (!c.nomem)
		memory_growth(&c);
	if (!c.nomem)
		parallelization(&c);
	free(c.samp);
	if (c.nomem) {
		ana_suggest_free(out);
		return -ENOMEM;
	}
	if (out->n)
		qsort(out->f, out->n, sizeof(*out->f), cmp_finding);
	cap_rules(out);
	prioritize(res, out);
	group_causes(out);
	if (out->o.trace_path)
		host_during_gaps(res, out->o.trace_path, out); /* unreadable now: left unattributed */
	return 0;
}

void ana_suggest_free(struct ana_sug *s)
{
	free(s->f);
	s->f = NULL;
	s->n = 0;
}

/* ---------------------------------------------------------------- text */

static const char *bytes_str(char *b, size_t n, double v)
{
	if (v < 1e3)
		snprintf(b, n, "%.0f B", v);
	else if (v < 1e6)
		snprintf(b, n, "%.1f kB", v / 1e3);
	else if (v < 1e9)
		snprintf(b, n, "%.1f MB", v / 1e6);
	else
		snprintf(b, n, "%.2f GB", v / 1e9);
	return b;
}

static void text_data(FILE *out, const struct ana_finding *f)
{
	const unsigned long long n = (unsigned long long)f->ev[0];
	switch (f->cls) {
	case ANA_DQ_LOST:
		fprintf(out, "%llu records lost (%llu sections): the recorder's rings were full. Rows marked '!' "
			     "undercount;\n      a larger ring (PTZ_RING_KB) or fewer, longer sections keep them.\n",
			n, (unsigned long long)f->ev[1]);
		break;
	case ANA_DQ_UNMATCHED:
		fprintf(out, "%llu section end%s matched no open section: a pt_end() without its pt_begin(), or "
			     "ends out of order\n      (the report closes the sections above it). Check the "
			     "instrumentation of early returns.\n", n, n == 1 ? "" : "s");
		break;
	case ANA_DQ_OPEN:
		fprintf(out, "%llu section%s still open at the end of the trace (or at a gap), not counted:\n"
			     "      a crash, a thread that never ended %s, or a missing pt_end().\n",
			n, n == 1 ? "" : "s", n == 1 ? "it" : "them");
		break;
	case ANA_DQ_MISUSE:
		fprintf(out, "the recorder counted %llu misuse%s (ends without a begin, nesting too deep, ...): "
			     "'info' lists them.\n", n, n == 1 ? "" : "s");
		break;
	case ANA_DQ_CORRUPT:
		fprintf(out, "%llu damaged region%s in the file: their records are missing from every figure "
			     "(offsets on stderr).\n", n, n == 1 ? "" : "s");
		break;
	case ANA_DQ_TORN:
		fprintf(out, "the trace ends in a torn chunk (the recorder crashed or is still writing): the "
			     "last records are missing.\n");
		break;
	case ANA_DQ_OVERSUB:
		if (f->ev[2] == 1)
			fprintf(out, "%.1f threads runnable on average on the machine (the kernel's count, sampled "
				     "every 100 ms) on %.0f CPUs:\n      durations are wall-clock, so they include time "
				     "spent waiting for a CPU (rates and roofline\n      efficiencies read low; "
				     "'unstable' findings may be the machine, not the code).\n", f->ev[0], f->ev[1]);
		else
			fprintf(out, "%.1f threads alive on average (summed thread spans / wall span) on %.0f CPUs: "
				     "durations are wall-clock,\n      so they may include time spent waiting for a CPU "
				     "(rates and roofline efficiencies read low).\n", f->ev[0], f->ev[1]);
		break;
	case ANA_DQ_STEAL:
		fprintf(out, "the hypervisor took %.1f%% of the %.0f CPUs' time for other guests (steal): "
			     "durations include time\n      this machine did not run at all; compare runs only on a "
			     "quiet host.\n", 100 * f->ev[0], f->ev[1]);
		break;
	case ANA_DQ_CPU_SHARE:
		fprintf(out, "the process got %.0f%% of the CPU time its threads spent in sections, over the run (the "
			     "process CPU\n      counters are run-wide): %.2f CPUs used on average, %.2f threads in a section "
			     "on average.\n      The rest they waited: for a CPU (a busy machine) or blocked inside their "
			     "sections (I/O, locks,\n      sleep); durations include it, and roofline classes are judged on the "
			     "time the process got.\n", 100 * f->ev[0], f->ev[1], f->ev[2]);
		break;
	case ANA_DQ_GAPS:
		fprintf(out, "%llu gap%s in the threads' chunk sequences (chunks missing or damaged): the records "
			     "between are missing,\n      and the sections open across a gap are not counted.\n",
			n, n == 1 ? "" : "s");
		break;
	case ANA_DQ_GPU_ERRORS:
		fprintf(out, "%llu GPU range%s not timed (event pool empty, CUDA errors): GPU figures "
			     "undercount; 'info' lists the causes.\n", n, n == 1 ? " was" : "s were");
		break;
	}
}

/* A rate for the text: three significant digits, whole numbers from 1000 up (a GPU's 33346 GFLOP/s
 * reads better as 33346 than as 3.33e+04). */
static const char *rate_str(char *b, size_t n, double v)
{
	snprintf(b, n, v >= 1000 ? "%.0f" : "%.3g", v);
	return b;
}

static void text_roofline(FILE *out, const struct ana_finding *f, bool fp32)
{
	char a[48], b[48], r1[24], r2[24];
	const double *e = f->ev;
	const char *roofs = f->gpu_roofs ? "GPU" : f->several_cores ? "all-core" : "one-core";
	fprintf(out, "%s", roof_key[f->cls]);
	if (f->several_cores)
		fprintf(out, " (faster than one core: compared with the all-core roofs)");
	if (f->gpu_roofs)
		fprintf(out, " (GPU section: its declared work over its GPU time %s, on the GPU's roofs)",
			ana_fmt_dur(a, sizeof(a), e[9]));
	fprintf(out, "\n      ");
	if (e[0] > 0 && e[1] > 0 && !isnan(e[6]) && !isnan(e[7])) /* both declared and both roofs: the ridge */
		fprintf(out, "declared intensity %.3g FLOP/B %s the ridge %.3g FLOP/B; ", e[3],
			e[3] < e[6] / e[7] ? "below" : "at or above", e[6] / e[7]);
	if (e[0] > 0)
		fprintf(out, "%s GFLOP/s", rate_str(r1, sizeof(r1), e[4]));
	if (e[0] > 0 && e[1] > 0)
		fprintf(out, ", ");
	if (e[1] > 0)
		fprintf(out, "%s GB/s", rate_str(r2, sizeof(r2), e[5]));
	const bool use_pi = e[0] > 0 && !isnan(e[6]), use_beta = e[1] > 0 && !isnan(e[7]);
	fprintf(out, " = %.*f%% of the attainable %s roof (%s%s%s)\n", e[8] < 0.01 ? 2 : 0, 100.0 * e[8], roofs,
		use_pi ? (snprintf(a, sizeof(a), "%s %s GFLOP/s", rate_str(r1, sizeof(r1), e[6]), fp32 ? "FP32" : "FP64"), a)
		       : "",
		use_pi && use_beta ? ", " : "", use_beta ? (snprintf(b, sizeof(b), "%s GB/s", rate_str(r2, sizeof(r2), e[7])), b) : "");
	if (!isnan(f->contended_e))
		fprintf(out, "      the process got %.0f%% of the CPU time its threads spent in sections (cpu-share): on "
			     "that time\n      %.*f%% of the roof, and it is classed by that%s\n",
			100 * f->cpu_got, f->contended_e < 0.01 ? 2 : 0, 100 * f->contended_e,
			f->cls == ANA_ROOF_LATENCY ? " (still under 60%: latency-bound)" : ", not called latency-bound");
	if ((e[0] > 0 && !use_pi) || (e[1] > 0 && !use_beta))
		fprintf(out, "      (the profile has no %s%s roof: judged on the other alone)\n", f->gpu_roofs ? "GPU " : "",
			e[0] > 0 && !use_pi ? "FLOP/s" : "memory");
	if (f->stake_ns > 0) {
		char t1[32], t2[32];
		const double t = f->gpu_roofs ? e[9] : e[2]; /* the time the rates are over */
		fprintf(out, "      at the roof: %s instead of %s%s\n", ana_fmt_dur(t1, sizeof(t1), t * e[8]),
			ana_fmt_dur(t2, sizeof(t2), t), f->gpu_roofs ? " of GPU time" : "");
	}
	static const char *const advice[ANA_ROOF_NCLASS] = {
		"near the bandwidth roof: only moving fewer bytes helps (fuse passes, reuse data while in cache, "
		"smaller types)",
		"memory-bound, below the roof: better access patterns (unit stride, prefetch, fewer TLB misses) or "
		"more threads",
		"near the compute roof: only a better algorithm (fewer FLOPs) helps",
		"compute-bound, below the roof: vectorize (SIMD, FMA), use a tuned library, or more threads",
		"on neither roof: latency, overhead, I/O or synchronization bound; more independent work per call, "
		"fewer calls, less waiting",
		"faster than the measured roofs: the declared bytes are served from cache (a cache-aware roofline "
		"would place it), or the declared FLOPs/bytes overstate the work",
	};
	/* the same classes on a GPU (Nsight Compute's speed-of-light sections): what moves a kernel there */
	static const char *const gpu_advice[ANA_ROOF_NCLASS] = {
		"near the device-memory roof: only moving fewer bytes helps (fuse kernels, keep data in shared "
		"memory or registers, smaller types)",
		"memory-bound, below the roof: coalesce the accesses (adjacent threads, adjacent addresses), use "
		"shared memory, more bytes in flight (occupancy)",
		"near the compute roof: only fewer FLOPs, or other units (tensor cores, lower precision), help",
		"compute-bound, below the roof: raise occupancy and instruction-level parallelism, avoid divergence, "
		"or use a tuned library (cuBLAS, CUTLASS)",
		"on neither roof: too little parallel work or too short a kernel (launch, tail and synchronization "
		"bound); more threads per launch, fuse kernels, fewer synchronizations",
		"faster than the measured roofs: the declared bytes are served from L2 or shared memory, or the "
		"declared FLOPs/bytes overstate the work",
	};
	fprintf(out, "      -> %s.\n", (f->gpu_roofs ? gpu_advice : advice)[f->cls]);
}

static void text_finding(FILE *out, const struct ana_result *res, const struct ana_sug *s, const struct ana_finding *f)
{
	char a[32], b[32], d[32];
	const double *e = f->ev;
	switch (f->rule) {
	case ANA_R_DATA:
		text_data(out, f);
		return;
	case ANA_R_HOT:
		fprintf(out, "self time %s = %.1f%% of the summed thread time (trigger %g%%); inclusive %s, %.0f "
			     "occurrence%s\n",
			ana_fmt_dur(a, sizeof(a), e[0]), 100 * e[1], s->o.hot_self_pct, ana_fmt_dur(b, sizeof(b), e[2]), e[4],
			e[4] == 1 ? "" : "s");
		if (e[6] > 0) /* a GPU section: ranked by the time it occupies */
			fprintf(out, "      GPU self time %s: occupies %s = %.1f%% of the summed thread time\n",
				ana_fmt_dur(a, sizeof(a), e[6]), ana_fmt_dur(b, sizeof(b), e[7]), 100 * e[8]);
		if (f->node == UINT32_MAX)
			fprintf(out, "      the largest of its %u paths holds %s (%.0f%% of the name's self time); none "
				     "reaches the trigger alone\n      -> optimize the section itself, or call it less "
				     "(batch the calls, cache its results).\n",
				f->paths, ana_fmt_dur(a, sizeof(a), e[5]), e[0] > 0 ? 100 * e[5] / e[0] : 0.0);
		else
			fprintf(out, "      -> its own code, not its sub-sections, takes the time: add sections inside it "
				     "to see where, or optimize its body.\n");
		return;
	case ANA_R_ROOFLINE:
		text_roofline(out, f, s->o.fp32);
		return;
	case ANA_R_IMBALANCE:
		fprintf(out, "on %.0f threads: thread #%u spends %s in it, the mean is %s (max/mean %.2f, trigger "
			     "%g), the least %s\n",
			e[0], f->thread, ana_fmt_dur(a, sizeof(a), e[1]), ana_fmt_dur(b, sizeof(b), e[2]), e[4], s->o.imbalance_ratio,
			ana_fmt_dur(d, sizeof(d), e[3]));
		fprintf(out, "      -> split the work evenly (smaller chunks, dynamic scheduling, work stealing); "
			     "the others wait for the slowest.\n");
		return;
	case ANA_R_COLD_FIRST:
		fprintf(out, "first occurrence %s, %.1fx the median %s of the other %.0f (modified z-score %.3g, "
			     "trigger %g)\n",
			ana_fmt_dur(a, sizeof(a), e[1]), e[5], ana_fmt_dur(b, sizeof(b), e[2]), e[0] - 1, e[4], s->o.cold_z);
		fprintf(out, "      -> warm-up: page faults, cold caches, lazy initialization or JIT. Allocate and "
			     "touch memory ahead, or keep the state\n         warm across calls; benchmarks should "
			     "leave the first call out (the report's 'rest' columns do).\n");
		return;
	case ANA_R_UNSTABLE:
		fprintf(out, "after the first: mean %s, std %s (CV %.0f%%, trigger %.0f%%); all: p50 %s, p99 %s, max %s\n",
			ana_fmt_dur(a, sizeof(a), e[1]), ana_fmt_dur(b, sizeof(b), e[2]), 100 * e[3], 100 * s->o.unstable_cv,
			ana_fmt_dur(d, sizeof(d), e[4]), ana_fmt_dur((char[32]){ 0 }, 32, e[5]), ana_fmt_dur((char[32]){ 0 }, 32, e[7]));
		fprintf(out, "      -> durations vary: data-dependent work, contention, page faults, frequency "
			     "changes or preemption.\n         Judge it by percentiles, not the mean; 'compare' tests "
			     "medians.\n");
		return;
	case ANA_R_SHORT:
		fprintf(out, "median %s (mean %s) over %.0f occurrences (trigger: median below %s), %.1f%% of the "
			     "summed thread time\n",
			ana_fmt_dur(a, sizeof(a), e[4]), ana_fmt_dur(b, sizeof(b), e[1]), e[0],
			ana_fmt_dur(d, sizeof(d), s->o.short_ns), 100 * e[3]);
		fprintf(out, "      -> at this length the recorder's own cost per begin/end pair (bench-recorder "
			     "measures it) and the tick\n         resolution weigh on each figure: time the enclosing "
			     "loop instead and count iterations with a metric.\n");
		return;
	case ANA_R_SMALL_XFER:
		fprintf(out, "%.0f %s transfers averaging %s (%s in all) in %s\n", e[0], dir_key[f->cls - 1],
			bytes_str(a, sizeof(a), e[2]), bytes_str(b, sizeof(b), e[1]), ana_fmt_dur(d, sizeof(d), e[3]));
		if (!isnan(e[4]))
			fprintf(out, "      the copies' GPU time %s: %.3g GB/s\n", ana_fmt_dur(a, sizeof(a), e[4]), e[5]);
		fprintf(out, "      -> each small copy pays the launch latency: batch them into fewer, larger "
			     "copies from pinned buffers.\n");
		return;
	case ANA_R_SLOW_XFER:
		fprintf(out, "%.0f %s transfers averaging %s: %.3g GB/s over the %s, %.0f%% of the "
			     "link's %.3g GB/s\n",
			e[0], dir_key[f->cls - 1], bytes_str(a, sizeof(a), e[2]), e[4],
			isnan(e[7]) ? "section's time" : "copies' GPU time", 100 * e[6], e[5]);
		if (!isnan(e[8]))
			fprintf(out, "      the measured rate from pageable memory is %.3g GB/s: this copy runs at %.2fx "
				     "it%s\n", e[8], e[9],
				f->pageable ? ", likely from pageable host memory" :
				isnan(e[7]) ? " over the section's time (a lower bound)" : "");
		if (f->pageable)
			fprintf(out, "      -> allocate the host buffer page-locked (cudaHostAlloc, cudaMallocHost, or "
				     "cudaHostRegister on an\n         existing one): the driver then copies it directly, "
				     "and async copies overlap with work.\n");
		else
			fprintf(out, "      -> pageable host memory halves copy rates and makes async copies synchronous: "
				     "allocate with cudaHostAlloc\n         (or cudaHostRegister), and overlap copies with "
				     "work on other streams.\n");
		return;
	case ANA_R_LAUNCH:
		fprintf(out, "%.0f GPU ranges averaging %s of GPU time, each launched by %s of host time (self CPU "
			     "time per call,\n      %.0f calls): GPU / host %.2f (trigger below %g, or ranges under %s)",
			e[0], ana_fmt_dur(a, sizeof(a), e[3]), ana_fmt_dur(b, sizeof(b), e[5]), e[1], e[6], LAUNCH_RATIO,
			ana_fmt_dur(d, sizeof(d), LAUNCH_SHORT_NS));
		if (!isnan(e[7]))
			fprintf(out, "; launch to GPU start %s", ana_fmt_dur(a, sizeof(a), e[7]));
		fprintf(out, "\n      -> %s: fuse small kernels into fewer, larger ones, batch the\n         work "
			     "per launch, capture the sequence in a CUDA graph (one launch), or keep work this small on "
			     "the CPU.\n",
			e[6] < LAUNCH_RATIO ? "the host launches about as fast as the GPU runs them"
					    : "ranges this short pay a launch's fixed cost on the device too");
		return;
	case ANA_R_XFER_DOM:
		fprintf(out, "copies take %s of its %s GPU time (%.0f%%, trigger %.0f%%), compute %s; the most "
			     "in %s copies (%s)\n",
			ana_fmt_dur(a, sizeof(a), e[1]), ana_fmt_dur(b, sizeof(b), e[0]), 100 * e[3], 100 * XFER_DOM_SHARE,
			ana_fmt_dur(d, sizeof(d), e[2]), dir_key[f->cls - 1], ana_fmt_dur((char[32]){ 0 }, 32, e[3 + f->cls]));
		if (f->cls == DIR_D2D + 1)
			fprintf(out, "      -> device-to-device copies: work in place or swap buffers instead of copying, "
				     "or fuse the copy into the\n         kernel that reads it.\n");
		else
			fprintf(out, "      -> overlap copies with compute (cudaMemcpyAsync from pinned memory on other "
				     "streams than the kernels),\n         keep data resident on the device across "
				     "steps, and move fewer bytes.\n");
		return;
	case ANA_R_GPU_IDLE:
		fprintf(out, "busy %.0f%% of its active span %s (trigger below %g%%)", 100 * e[3],
			ana_fmt_dur(a, sizeof(a), e[1]), s->o.gpu_util_pct);
		if (e[4] > 0)
			fprintf(out, "; %.0f gap%s of %s, the longest %s at %.6f s", e[4], e[4] == 1 ? "" : "s",
				ana_fmt_dur(b, sizeof(b), e[5]), ana_fmt_dur(d, sizeof(d), e[6]), e[7]);
		fprintf(out, "\n");
		if (f->host_read) {
			fprintf(out, "      during the longest gap, the CPU threads ran (innermost section, self time):\n");
			for (uint32_t k = 0; k < f->nhost; k++)
				fprintf(out, "        thread #%u %s: %s (%.0f%% of the gap)\n", f->host[k].thread,
					ana_text_safe(ana_name(res, f->host[k].id)), ana_fmt_dur(a, sizeof(a), f->host[k].ns),
					100 * f->host[k].ns / e[6]);
			fprintf(out, "        no section open: %s summed over the CPU threads\n",
				ana_fmt_dur(a, sizeof(a), f->host_none_ns));
		}
		fprintf(out, "      -> the host did not feed the device: queue work ahead (streams, CUDA graphs), move "
			     "host work off\n         the launching thread; 'report --since/--until' around a gap "
			     "shows the rest.\n");
		return;
	case ANA_R_MEM_GROWTH: {
		char g[32], h[32];
		const struct ana_mem_series *m = &res->mem[f->series];
		fprintf(out, "%s grows by %s per occurrence on average, %s over %.0f occurrences\n      = %.0f%% of "
			     "its peak %s (trigger %g MiB and %g%%); per occurrence %s to %s, ",
			ana_text_safe(ana_name(res, m->id)), ana_fmt_bytes(a, sizeof(a), e[1], true),
			ana_fmt_bytes(b, sizeof(b), e[2], true), e[0], 100 * e[7], ana_fmt_bytes(d, sizeof(d), e[6], false),
			s->o.mem_growth_mib, s->o.mem_growth_pct, ana_fmt_bytes(g, sizeof(g), e[3], true),
			ana_fmt_bytes(h, sizeof(h), e[4], true));
		fprintf(out, "sampled every %s\n", ana_fmt_dur(a, sizeof(a), e[8]));
		fprintf(out, "      -> memory grows with each call and is not given back: free what it allocates, "
			     "reuse buffers\n         across calls (a pool, an arena), or bound the cache; a sampled "
			     "series sees the growth\n         where it was sampled, so a shorter section inside may "
			     "be the cause.\n");
		fprintf(out, "      ranked by its inclusive time %s (memory has no time at stake)\n",
			ana_fmt_dur(a, sizeof(a), f->stake_ns));
		return;
	}
	case ANA_R_BATCHING:
		fprintf(out, "%.0f calls, %.1f per occurrence of its %s (trigger %g), median %s (trigger below %s), "
			     "fastest %s;\n      %.0f%% of the %s's time %s: short calls back to back\n",
			e[0], e[2], f->node != UINT32_MAX && res->merged.n[f->node].parent ? "parent" : "thread",
			s->o.batch_calls, ana_fmt_dur(a, sizeof(a), e[3]), ana_fmt_dur(b, sizeof(b), s->o.batch_ns),
			ana_fmt_dur(d, sizeof(d), e[4]), 100 * e[7],
			f->node != UINT32_MAX && res->merged.n[f->node].parent ? "parent" : "threads",
			ana_fmt_dur((char[32]){ 0 }, 32, e[6]));
		fprintf(out, "      -> each call pays a fixed cost (call, setup, locking, a system call, a launch): "
			     "pass many items per call\n"
			     "         (a batch API, vectored I/O, a bulk insert) so the cost "
			     "is paid once per batch.\n"
			     "         At stake: every call but one per %s at the fastest "
			     "call's time, an upper bound of that cost.\n",
			f->node != UINT32_MAX && res->merged.n[f->node].parent ? "parent" : "thread");
		return;
	case ANA_R_PARALLEL:
		fprintf(out, "the process used %.2f CPUs on average of %.0f online (trigger at most %g), and this path, "
			     "%.1f%% of the summed\n      thread time (trigger %g%%), ran on one thread (#%u)",
			e[0], e[1], s->o.par_cpus, 100 * e[3], s->o.par_pct, f->thread);
		if (!isnan(e[6]))
			fprintf(out, "; the busiest GPU was busy %.0f%% of the run", 100 * e[6]);
		fprintf(out, "\n      -> split its work across threads (a parallel loop, a task pool, a pipeline "
			     "of stages):\n         spread over the %.0f CPUs it would take %s at best (Amdahl).\n",
			e[1], ana_fmt_dur(a, sizeof(a), e[2] / e[1]));
		return;
	case ANA_R_CACHING: {
		char g[32], h[32];
		fprintf(out, "%.0f calls (trigger %g) each declaring the same work: read %s, written %s, %.4g FLOPs; "
			     "mean %s, median %s\n",
			e[0], s->o.cache_calls, bytes_str(g, sizeof(g), e[4]), bytes_str(h, sizeof(h), e[5]), e[6],
			ana_fmt_dur(a, sizeof(a), e[2]), ana_fmt_dur(b, sizeof(b), e[3]));
		fprintf(out, "      -> a candidate for memoization: if the inputs repeat too, keep the result of the "
			     "first call\n"
			     "         (a cache keyed by the inputs) instead of computing it again; equal "
			     "declared work does\n"
			     "         not prove equal inputs.\n");
		return;
	}
	default:
		(void)res;
		fprintf(out, "\n");
	}
}

/* The "roofs:" line's GPU part: the GPU group of the profile (ptanalyze peaks --gpu), where present. */
static void text_gpu_roofs(FILE *out, const struct ana_peaks *p, bool fp32)
{
	const double pi = fp32 ? p->gpu_gflops32 : p->gpu_gflops64;
	const double cp[4] = { p->gpu_h2d_pinned_gbps, p->gpu_h2d_pageable_gbps, p->gpu_d2h_pinned_gbps,
			       p->gpu_d2h_pageable_gbps };
	if (!(pi > 0) && !(p->gpu_mem_gbps > 0) && !(cp[0] > 0) && !(cp[1] > 0) && !(cp[2] > 0) && !(cp[3] > 0))
		return;
	char r[6][24], name[sizeof(p->gpu_name)];
	const double v[6] = { pi, p->gpu_mem_gbps, cp[0], cp[1], cp[2], cp[3] };
	for (int k = 0; k < 6; k++)
		v[k] > 0 ? (void)rate_str(r[k], sizeof(r[k]), v[k]) : (void)snprintf(r[k], sizeof(r[k]), "-");
	ana_text_safe_to(name, sizeof(name), p->gpu_name);
	fprintf(out, "          GPU %s: %s %s GFLOP/s, memory %s GB/s; copies H2D %s / %s, D2H %s / %s GB/s "
		     "(pinned / pageable)\n",
		name[0] ? name : "(unnamed)", fp32 ? "FP32" : "FP64", r[0], r[1], r[2], r[3], r[4], r[5]);
}

/* The findings whose cause is finding @ci, once, under it: rank, priority, rule, path and stake. */
static void text_symptoms(FILE *out, const struct ana_result *res, const struct ana_sug *s, size_t ci, char **buf,
			  size_t *cap)
{
	size_t n = 0;
	for (size_t i = 0; i < s->n; i++)
		n += s->f[i].cause == ci;
	if (!n)
		return;
	fprintf(out, "      it explains %zu finding%s, listed here once (durations vary with the machine, not the "
		     "code):\n", n, n == 1 ? "" : "s");
	for (size_t i = 0; i < s->n; i++) {
		const struct ana_finding *f = &s->f[i];
		if (f->cause != ci)
			continue;
		char t[32];
		const char *path = f->node != UINT32_MAX ? ana_path_short(res, &res->merged, f->node, buf, cap) : NULL;
		fprintf(out, "      %2zu. %s [%s] %s%s: at stake %s, %.1f%%\n", i + 1,
			f->priority != ANA_P_NONE ? ana_priority_key(f->priority) : "-", rule_key[f->rule],
			path ? ana_text_safe(path) : "-", f->lossy ? " !" : "", ana_fmt_dur(t, sizeof(t), f->stake_ns),
			100 * f->share);
	}
}

void ana_suggest_text(FILE *out, const struct ana_result *res, const struct ana_sug *s, int top)
{
	const struct ana_sug_opts *o = &s->o;
	fprintf(out, "suggestions (rules and triggers: doc/analyzer-output.md section 9; --threshold KEY=VALUE)\n");
	fprintf(out, "triggers: impact gate %g%% of the summed thread time, hot self %g%%, cold-first z %g and %gx, "
		     "unstable CV %g%%,\n          short below %g ns, imbalance max/mean %g, GPU busy below %g%% or "
		     "gaps of %g ms,\n          memory growth %g MiB and %g%% of the peak, batching %g calls "
		     "per parent below %g ns,\n          caching %g calls, parallelization at most %g CPUs and %g%%\n",
		o->min_pct, o->hot_self_pct, o->cold_z, o->cold_ratio, 100 * o->unstable_cv, o->short_ns,
		o->imbalance_ratio, o->gpu_util_pct, o->gap_ms, o->mem_growth_mib, o->mem_growth_pct, o->batch_calls,
		o->batch_ns, o->cache_calls, o->par_cpus, o->par_pct);
	const struct ana_peaks *p = o->peaks;
	if (p) {
		char r[4][24];
		const double v[4] = { o->fp32 ? p->gflops32_1 : p->gflops64_1, o->fp32 ? p->gflops32_all : p->gflops64_all,
				      p->gbps_1, p->gbps_all };
		for (int k = 0; k < 4; k++)
			v[k] > 0 ? snprintf(r[k], sizeof(r[k]), "%.3g", v[k]) : snprintf(r[k], sizeof(r[k]), "-");
		/* the peaks file and the trace are untrusted: their strings go through ana_text_safe_to() */
		char ph[sizeof(p->host)], pc[sizeof(p->cpu)], th[256];
		ana_text_safe_to(ph, sizeof(ph), p->host);
		ana_text_safe_to(pc, sizeof(pc), p->cpu);
		fprintf(out, "roofs:    measured on %s%s%s: %s %s / %s GFLOP/s, memory %s / %s GB/s (one core / all "
			     "cores)\n",
			ph[0] ? ph : "an unnamed host", pc[0] ? ", " : "", pc, o->fp32 ? "FP32" : "FP64", r[0], r[1],
			r[2], r[3]);
		double worst = 0;
		for (int k = 0; k < 6; k++)
			worst = fmax(worst, p->spread[k]);
		if (worst > 0)
			fprintf(out, "          repeatability: the best repetition beat the median one by at most %.1f%%%s\n",
				100 * worst, worst > ANA_PEAKS_SPREAD_WARN ? " (not a quiet machine: the roofs may read low)" : "");
		if (p->busy_runnable > 0.5 * p->cpus && p->cpus)
			fprintf(out, "warning:  %.0f other runnable threads on %u CPUs when the roofs were measured: they may "
				     "read low\n", p->busy_runnable, p->cpus);
		text_gpu_roofs(out, p, o->fp32);
		if (s->peaks_other_host)
			fprintf(out, "warning:  the roofs were measured on '%s', the trace was recorded on '%s'\n", ph,
				ana_text_safe_to(th, sizeof(th), pt_reader_info(res->rd)->host));
	}
	size_t shown = 0, hidden = 0;
	char *buf = NULL;
	size_t cap = 0;
	for (size_t i = 0; i < s->n; i++) {
		const struct ana_finding *f = &s->f[i];
		if (f->cause != UINT32_MAX)
			continue; /* listed under its cause */
		if (f->rule != ANA_R_DATA && top > 0 && shown >= (size_t)top) {
			hidden++;
			continue;
		}
		shown += f->rule != ANA_R_DATA;
		fprintf(out, "\n%2zu. ", i + 1);
		if (f->priority != ANA_P_NONE)
			fprintf(out, "%s ", ana_priority_key(f->priority));
		fprintf(out, "[%s] ", rule_key[f->rule]);
		if (f->node != UINT32_MAX) {
			const char *path = ana_path_short(res, &res->merged, f->node, &buf, &cap);
			fprintf(out, "%s%s", path ? ana_text_safe(path) : "(out of memory)", f->lossy ? " !" : "");
		} else if (f->rule == ANA_R_HOT) {
			fprintf(out, "%s (by name, over %u paths)%s", ana_text_safe(ana_name(res, f->name_id)), f->paths,
				f->lossy ? " !" : "");
		} else if (f->rule == ANA_R_DATA) {
			fprintf(out, "%s", dq_key[f->cls]);
		} else if (f->rule == ANA_R_GPU_IDLE) {
			fprintf(out, "device %u", f->device);
		}
		if (f->rule == ANA_R_ROOFLINE)
			fprintf(out, ": ");
		else
			fprintf(out, "\n      ");
		text_finding(out, res, s, f);
		text_symptoms(out, res, s, i, &buf, &cap);
		if (f->stake_ns > 0 && f->rule != ANA_R_ROOFLINE && f->rule != ANA_R_MEM_GROWTH) {
			char t[32];
			fprintf(out, "      at stake: %s, %.1f%% of the summed thread time", ana_fmt_dur(t, sizeof(t), f->stake_ns),
				100 * f->share);
			if (!isnan(f->potential_speedup))
				fprintf(out, ": the whole run at most %.3gx faster if all of it went (Amdahl)",
					f->potential_speedup);
			fputc('\n', out);
		}
	}
	free(buf);
	if (s->n == 0)
		fprintf(out, "\nno findings: no rule fired at these triggers.\n");
	if (hidden)
		fprintf(out, "\n%zu more finding%s (--top N shows N).\n", hidden, hidden == 1 ? "" : "s");
	if (s->below_priority)
		fprintf(out, "%llu finding%s below --min-priority %s left out.\n", (unsigned long long)s->below_priority,
			s->below_priority == 1 ? "" : "s", ana_priority_key(s->o.min_priority));
	for (int r = 0; r < ANA_R_N; r++)
		if (s->left_out[r])
			fprintf(out, "%llu more %s findings with smaller stakes left out (at most %d a rule).\n",
				(unsigned long long)s->left_out[r], rule_key[r], ANA_SUG_MAX_PER_RULE);
	if (s->roofline_no_peaks)
		fprintf(out, "\nroofline: %u section%s declare FLOPs or bytes; to place them on a roofline, measure "
			     "this machine's\npeaks with 'ptanalyze peaks --json machine.json' (on the machine that "
			     "recorded the trace), then add\n--peaks machine.json.\n",
			s->roofline_paths, s->roofline_paths == 1 ? "" : "s");
	if (s->roofline_gpu_paths)
		fprintf(out, "\nroofline: %u GPU section%s declare FLOPs or bytes; their rates are over GPU time (see "
			     "the report's GPU table),\nbut the peaks profile has no GPU roof for what they declare: "
			     "they are not placed on the CPU's.\nMeasure the GPU's with 'ptanalyze peaks --gpu --json "
			     "machine.json' on the machine with the GPU.\n",
			s->roofline_gpu_paths, s->roofline_gpu_paths == 1 ? "" : "s");
}

/* ---------------------------------------------------------------- JSON */

static json_t *num_or_null(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/* A peaks figure: 0 is "unknown" (ana_peaks.h). */
static json_t *fig_or_null(double v)
{
	return v > 0 && isfinite(v) ? json_real(v) : json_null();
}

int ana_suggest_json(FILE *out, const struct ana_result *res, const struct ana_sug *s)
{
	const struct ana_sug_opts *o = &s->o;
	const struct ana_peaks *p = o->peaks;
	/* each value is handed to its parent as soon as it is made: on a failure, freeing root frees all */
	json_t *root = json_object(), *th = json_object(), *lo = json_object(), *fs = json_array();
	int bad = !root || json_object_set_new(root, "schema", json_string("ptanalyze-suggest/1")) ||
		  json_object_set_new(root, "thresholds", th) || json_object_set_new(root, "left_out", lo) ||
		  json_object_set_new(root, "findings", fs);
	for (size_t i = 0; i < NTH && !bad; i++)
		bad = json_object_set_new(th, ths[i].key, json_real(*(const double *)((const char *)o + ths[i].off)));
	for (int r = 0; r < ANA_R_N && !bad; r++)
		bad = json_object_set_new(lo, rule_key[r], json_integer((json_int_t)s->left_out[r]));
	bad = bad || json_object_set_new(root, "min_priority", json_string(ana_priority_key(o->min_priority))) ||
	      json_object_set_new(root, "below_priority", json_integer((json_int_t)s->below_priority));
	if (!bad && p)
		bad = json_object_set_new(
			root, "peaks",
			json_pack("{s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:b}", "host", p->host, "cpu",
				  p->cpu, "precision", o->fp32 ? "fp32" : "fp64", "gflops_one_core",
				  fig_or_null(o->fp32 ? p->gflops32_1 : p->gflops64_1), "gflops_all_cores",
				  fig_or_null(o->fp32 ? p->gflops32_all : p->gflops64_all), "gbps_one_core",
				  fig_or_null(p->gbps_1), "gbps_all_cores", fig_or_null(p->gbps_all), "link_gbps_h2d",
				  fig_or_null(p->link_gbps[0]), "link_gbps_d2h", fig_or_null(p->link_gbps[1]), "link_gbps_d2d",
				  fig_or_null(p->link_gbps[2]), "link_gbps_p2p", fig_or_null(p->link_gbps[3]), "other_host",
				  s->peaks_other_host));
	else if (!bad)
		bad = json_object_set_new(root, "peaks", json_null());
	if (!bad && p) { /* the GPU group (ptanalyze peaks --gpu): added after the CPU figures */
		json_t *pk = json_object_get(root, "peaks");
		bad = json_object_set_new(pk, "gpu_name", p->gpu_name[0] ? ana_json_str(p->gpu_name) : json_null()) ||
		      json_object_set_new(pk, "gpu_gflops", fig_or_null(o->fp32 ? p->gpu_gflops32 : p->gpu_gflops64)) ||
		      json_object_set_new(pk, "gpu_gbps", fig_or_null(p->gpu_mem_gbps)) ||
		      json_object_set_new(pk, "gpu_h2d_pinned_gbps", fig_or_null(p->gpu_h2d_pinned_gbps)) ||
		      json_object_set_new(pk, "gpu_h2d_pageable_gbps", fig_or_null(p->gpu_h2d_pageable_gbps)) ||
		      json_object_set_new(pk, "gpu_d2h_pinned_gbps", fig_or_null(p->gpu_d2h_pinned_gbps)) ||
		      json_object_set_new(pk, "gpu_d2h_pageable_gbps", fig_or_null(p->gpu_d2h_pageable_gbps));
	}
	bad = bad || json_object_set_new(root, "roofline_paths", json_integer(s->roofline_paths)) ||
	      json_object_set_new(root, "roofline_needs_peaks", json_boolean(s->roofline_no_peaks)) ||
	      json_object_set_new(root, "roofline_gpu_paths", json_integer(s->roofline_gpu_paths));
	for (size_t i = 0; i < s->n && !bad; i++) {
		const struct ana_finding *f = &s->f[i];
		json_t *j = json_object();
		const char *cls = ana_class_key(f->rule, f->cls);
		if (!j || json_array_append_new(fs, j)) { /* a failed append frees j */
			bad = 1;
			break;
		}
		bad = json_object_set_new(j, "rule", json_string(rule_key[f->rule])) ||
		      json_object_set_new(j, "class", cls ? json_string(cls) : json_null()) ||
		      json_object_set_new(j, "stake_ns", json_real(f->stake_ns)) ||
		      json_object_set_new(j, "priority", f->priority == ANA_P_NONE ? json_null()
										 : json_string(ana_priority_key(f->priority))) ||
		      json_object_set_new(j, "share", num_or_null(f->share)) ||
		      json_object_set_new(j, "potential_speedup", num_or_null(f->potential_speedup));
		if (!bad && f->node != UINT32_MAX) {
			uint32_t elided;
			json_t *path = ana_json_path(res, NULL, &res->merged, f->node, &elided);
			bad = json_object_set_new(j, "path", path) ||
			      (elided && json_object_set_new(j, "path_elided", json_integer(elided))) ||
			      json_object_set_new(j, "name", json_incref(json_array_get(path, json_array_size(path) - 1))) ||
			      json_object_set_new(j, "depth", json_integer(res->merged.n[f->node].depth)) ||
			      json_object_set_new(j, "lossy", json_boolean(f->lossy));
		}
		if (!bad && f->rule == ANA_R_HOT && f->node == UINT32_MAX)
			bad = json_object_set_new(j, "name", ana_json_str(ana_name(res, f->name_id))) ||
			      json_object_set_new(j, "by_name", json_true()) ||
			      json_object_set_new(j, "paths", json_integer(f->paths));
		if (!bad && f->rule == ANA_R_IMBALANCE)
			bad = json_object_set_new(j, "thread", json_integer(f->thread));
		if (!bad && f->rule == ANA_R_GPU_IDLE)
			bad = json_object_set_new(j, "device", json_integer(f->device));
		if (!bad && f->rule == ANA_R_MEM_GROWTH)
			bad = json_object_set_new(j, "counter", ana_json_str(ana_name(res, res->mem[f->series].id)));
		if (!bad && f->rule == ANA_R_GPU_IDLE && f->host_read) {
			json_t *hs = json_array();
			bad = json_object_set_new(j, "host_during_gap", hs) ||
			      json_object_set_new(j, "host_none_ns", json_real(f->host_none_ns));
			for (uint32_t k = 0; k < f->nhost && !bad; k++)
				bad = json_array_append_new(hs, json_pack("{s:I, s:o, s:f}", "thread",
									  (json_int_t)f->host[k].thread, "name",
									  ana_json_str(ana_name(res, f->host[k].id)), "ns",
									  f->host[k].ns));
		}
		if (!bad && f->rule == ANA_R_ROOFLINE && !isnan(f->contended_e))
			bad = json_object_set_new(j, "cpu_got", json_real(f->cpu_got)) ||
			      json_object_set_new(j, "efficiency_on_cpu_got", json_real(f->contended_e));
		if (!bad && f->rule == ANA_R_PARALLEL)
			bad = json_object_set_new(j, "thread", json_integer(f->thread));
		if (!bad && f->rule == ANA_R_ROOFLINE)
			bad = json_object_set_new(j, "roofs",
						  json_string(f->gpu_roofs ? "gpu" : f->several_cores ? "all-cores" : "one-core"));
		if (!bad && f->rule == ANA_R_SLOW_XFER)
			bad = json_object_set_new(j, "likely_pageable", json_boolean(f->pageable));
		if (!bad && f->cause != UINT32_MAX)
			bad = json_object_set_new(j, "cause", json_integer(f->cause));
		if (bad)
			break;
		json_t *ev = json_object(); /* last: the figures after what they are about */
		bad = json_object_set_new(j, "evidence", ev); /* frees ev on a failure */
		for (unsigned k = 0; k < ANA_SUG_EV && ev_key[f->rule][k] && !bad; k++)
			bad = json_object_set_new(ev, ev_key[f->rule][k], num_or_null(f->ev[k]));
	}
	if (bad) {
		json_decref(root);
		return -ENOMEM;
	}
	int rc = ana_json_dumpf(root, out, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
	json_decref(root);
	if (rc || fputc('\n', out) == EOF || ferror(out))
		return -EIO;
	return 0;
}
