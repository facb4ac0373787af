/*
 * analyzer/ana_pass.h - state of the one streaming pass over a trace,
 * shared by ana_build.c (sections, metrics, counters: the hot per-record
 * loop) and ana_gpu.c (GPU launches and ranges, async ranges, instants:
 * records that a trace without them never reaches). Private to analyzer/.
 */
#ifndef PTZ_ANA_PASS_H
#define PTZ_ANA_PASS_H

#include <stdbool.h> /* bool */
#include <stdint.h>  /* uint*_t */

#include "analyzer/ana.h"

/* Metric sums of an open section, slot by slot: slot k holds its sums only
 * while bit k of frame.mmask is set (set by the slot's first metric, its
 * own or a child's); a slot whose bit is clear is 0 and 0, never read, so
 * BEGIN writes one byte, not the 48 of the sums. */
struct frame_m {
	uint64_t metric_self[ANA_NMETRIC], metric_incl[ANA_NMETRIC];
};
/* Transfer sums, the same way, flagged by frame.has_x: a section with
 * metrics but no transfers (the common case) never touches them. */
struct frame_x {
	uint64_t xfer_self[ANA_DIRS], xfer_incl[ANA_DIRS], xfer_count[ANA_DIRS];
};

/* 256 bytes (the union): the stack's index is a shift, not a multiply by
 * 248, at each of the frame addresses a section computes. */
struct frame {
	union {
		struct {
			uint32_t node, id;
			uint32_t merged;          /* the node's path in the merged tree, or UINT32_MAX */
			uint64_t start, child_ticks;
			int32_t prev_same;        /* innermost open frame of the same name below this one, or -1 */
			bool lossy;
			uint8_t mmask; /* initialized slots of m (1 << k: slot k); 0 = no metric */
			bool has_x, has_pending;
			/* recursion-safe flat sums of kept same-name descendants whose own
			 * same-name ancestors were not kept (doc/analyzer-output.md §2) */
			uint64_t pending_ns;
			uint64_t pending_incl[ANA_NMETRIC], pending_xfer[ANA_DIRS];
			struct frame_m m;
			struct frame_x x;
		};
		uint8_t size_[256];
	};
};
_Static_assert(sizeof(struct frame) == 256, "a frame fills its 256 bytes");

struct flat_incl { /* recursion-safe inclusive sums per name, from the pass */
	uint64_t total_ns, metric_incl[ANA_NMETRIC], xfer_incl[ANA_DIRS];
};

/* An open section of the thread that has a GPU half (its GPU_LAUNCH came
 * just before its BEGIN): still open while ts->st[depth] is that frame. */
struct gpu_open {
	uint32_t depth, node; /* stack index of its frame, call-path node */
	uint32_t device;
	uint64_t start, stream; /* BEGIN tick (= launch tick), stream key */
};

/* Per name: recursion-safe inclusive GPU sums, and the last range that
 * added to them (a range counts once per name, however deep the recursion). */
struct gpu_flat {
	uint64_t count, total_ns, stamp;
};

/* What BEGIN needs of a call path: its thread-tree node and merged-tree
 * node by (parent node, name id), one slot of the thread's open-addressing
 * table (tstate.ph): one 8-byte compare finds the child of any parent,
 * whichever child came last (a loop of three or more children included). */
struct pslot {
	uint64_t key;    /* PSLOT_KEY(parent, id); PSLOT_EMPTY: no path */
	uint32_t node;   /* the path's thread-tree node */
	uint32_t merged; /* the path's node in the merged tree; UINT32_MAX = none (out of memory) */
};
#define PSLOT_KEY(parent, id) ((uint64_t)(parent) << 32 | (uint32_t)(id))
#define PSLOT_EMPTY UINT64_MAX /* parent UINT32_MAX: never a node (ana_tree_child() stops below it) */
/* Fibonacci hashing (Knuth, TAOCP vol. 3, 6.4): the top bits of key * 2^64/phi */
static inline uint32_t pslot_hash(uint64_t key, uint32_t shift)
{
	return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> shift);
}

/* Pending histogram adds by tree node (struct ana_hpend: one line each). */
struct ana_hpend_set {
	struct ana_hpend *p;
	uint32_t n;
};

struct tstate {
	struct pslot *ph;     /* call paths by (parent, name id): 2^(64 - phshift) slots, at most half used */
	uint32_t phshift, phn; /* phn: slots used */
	struct frame *st;
	uint32_t depth, cap;
	struct rp_thread rp;  /* the nesting rules' state (replay/replay.h): chunk sequence, tick floor, too-deep BEGINs */
	/* rp.excess + (sroot != 0): the one field an END tests before its common
	 * case (ana_build.c sec_end()), so sampled requests cost other traces
	 * nothing; kept by end_hook_sync() */
	uint64_t end_hook;
	int32_t *open_top;    /* by name id: innermost open frame index, -1 = none */
	uint32_t nopen_top;
	struct flat_incl *fi; /* by name id */
	uint32_t nfi;
	struct ana_agg *flat; /* by name id, built from the tree at the end */
	uint32_t nflat;
	bool seen;
	uint64_t first_ticks, last_ticks;
	/* GPU (ana_gpu.c); empty in a trace without GPU_LAUNCH records */
	struct gpu_open *gs;  /* open GPU sections, outermost first */
	uint32_t ngs, cgs;
	struct gpu_flat *gf;  /* by name id */
	uint32_t ngf;
	uint32_t id_limit;    /* res->name_id_limit */
	struct ana_hpend_set hp; /* !merged_only: by thread-tree node, pending histogram adds */
	uint32_t *mem_cur;    /* by memory series: samples at or before this thread's last END (ana_mem.c) */
	/* [mem_lo, mem_hi) in ticks: the ticks at which every series' latest
	 * sample is the one at or before this thread's last END (from the
	 * latest of those samples to the earliest sample after it), whose
	 * values are mem_v (by series; series 0's also in mem_v0, one load
	 * less on the END path); mem_hi = 0 (as zeroed): none known
	 * (ana_mem_occ_fast()) */
	uint64_t mem_lo, mem_hi;
	int64_t mem_v0, *mem_v;
	/* sampled requests (ana_build.c, doc/analyzer-output.md §13); all 0 without them.
	 * sarm: a sampling COUNTER was the last record, read at depth sarm - 1
	 * (0 = none), of probability sarm_p: the BEGIN that follows at that
	 * depth is a sampled root. sroot: the open sampled request's root
	 * frame index + 1 (0 = none), of probability sp, numbered sreq. snest:
	 * sampled roots nested inside it (frame index, relative weight). */
	uint32_t sarm, sroot;
	double sarm_p, sp;
	uint64_t sreq;
	struct { uint32_t at; double w; } *snest;
	uint32_t nsnest, csnest;
	/* keep_all: the same estimates by name id, the recursion-safe total
	 * taking an occurrence only without a same-name section open below it */
	struct ana_est *sflat;
	uint32_t nsflat;
};

struct gpu_pass; /* ana_gpu.c */
/* A record of thread position @pos deferred by a reader thread (struct
 * ctx.dfr), read in the chunk at position @at of the reader's chunk index
 * (fmt_reader_chunk_pos()); a GPU_LAUNCH's node and cover
 * (ana_pass_gpu_launch_node()) with it. */
struct ana_deferred {
	size_t pos;
	size_t at;
	uint32_t node, cover;
	struct pt_record r;
};

/* The bytes of deferred records all reader threads of one pass may hold
 * (64 MiB: about 760,000 records); past it the pass is read again by one
 * thread, whose pairing holds only the halves waiting. So a trace of
 * millions of GPU sections costs -j memory bounded by this, never by its
 * length. A variable so that the tests can lower it. */
extern size_t ana_defer_budget;

struct ctx {
	struct ana_result *res;
	struct tstate *ts;
	double ns_per_tick;
	uint64_t ns_fast_lim; /* ana_ticks_ns()'s one-compare range: ana_ticks_ns_lim() */
	uint64_t since_ticks, until_ticks;
	uint64_t rng;
	uint32_t *domain_of; /* name id -> domain, for the filter */
	struct gpu_pass *gp; /* NULL until the first GPU, async or instant record */
	bool merged_only;    /* ana_options.merged_percentiles_only */
	bool samples;        /* !ana_options.no_samples: fill the merged paths' reservoirs */
	bool window;         /* the trace is a window (pt_trace_info.window): an END with no
			      * section open began before it, not a misuse */
	bool keep_all;       /* no --since/--until/--domain: every section is kept */
	bool need_tracking;  /* keep_all, but a dropped frame may enclose its name: run again tracking */
	struct ana_hpend_set mp; /* merged_only: by merged node, pending histogram adds */
	bool remap;          /* sparse ids: every name id goes through ana_remap_id() (ANA_MIN_NAME_IDS) */
	struct rp_map ids;  /* remap: the trace's id -> slot (struct ana_id_slot) */
	bool nomem;          /* an allocation failed: ana_run() fails, never a smaller answer */
	int read_rc;         /* the reader's error that ended the pass, or 0 */
	uint32_t nmem;       /* res->nmem: memory series to measure each kept occurrence against */
	uint32_t sample_id;  /* name id of PT_FMT_SAMPLE_COUNTER, 0 = not in the trace */
	/* -j within one trace (ana_build.c read_threads_parallel()): this ctx is
	 * one reader thread's copy. A record that needs state across threads
	 * (ASYNC, INSTANT, GPU_RANGE, a process-wide ERROR, and a GPU_LAUNCH
	 * once its node is known) is deferred: kept with its thread's position
	 * and its chunk's place in the file order (chunk_at), replayed in the
	 * serial pass's order once the threads are read, at most dfr_budget
	 * bytes of them.
	 * bail: a reader could not go on (the pass is then read again by one
	 * thread) */
	bool worker, bail;
	struct ana_deferred *dfr;
	size_t ndfr, cdfr, dfr_budget;
	size_t chunk_at;
};

struct ana_id_slot {
	uint64_t key; /* the trace's id */
	uint32_t slot;
};

/* The slot of the trace's name id @id (0 stays 0), made for an id the
 * string table does not define; 0 and c->nomem set on ENOMEM. Cold: only
 * a trace with a sparse id space calls it. */
__attribute__((noinline)) uint32_t ana_remap_id(struct ctx *c, uint32_t id);

/* The kinds whose id is a name id. */
static inline bool ana_kind_named(uint32_t kind)
{
	return kind == PT_REC_BEGIN || kind == PT_REC_END || kind == PT_REC_COUNTER ||
	       (kind >= PT_REC_INSTANT && kind <= PT_REC_GPU_LAUNCH);
}

/* ana_ticks_ns() beyond 2^63 ticks or ns, out of line (inlined, its
 * saturation made the compiler spill more in the hot loop: +3.5%
 * instructions per record). Saturated: a crafted clock table's slope can
 * take a duration past 2^64 ns. */
__attribute__((noinline, cold)) uint64_t ana_ticks_ns_big(double ns_per_tick, uint64_t ticks);

/* Duration in ticks to ns with the trace's slope (doc/analyzer-output.md §1). */
static inline uint64_t ana_ticks_ns(const struct ctx *c, uint64_t ticks)
{
	/* x86-64 converts signed 64-bit integers in one instruction, unsigned
	 * ones in about ten: same values, through the signed conversions while
	 * they fit (every real duration). Below c->ns_fast_lim both the ticks
	 * and x < 9.2e18 fit them (ana_ticks_ns_lim()): one compare. */
	if (__builtin_expect(ticks < c->ns_fast_lim, 1))
		return (uint64_t)(int64_t)((double)(int64_t)ticks * c->ns_per_tick + 0.5);
	if (__builtin_expect(ticks <= (uint64_t)INT64_MAX, 1)) {
		double x = (double)(int64_t)ticks * c->ns_per_tick + 0.5;
		if (__builtin_expect(x < 9.2e18, 1))
			return (uint64_t)(int64_t)x;
	}
	return ana_ticks_ns_big(c->ns_per_tick, ticks);
}

/* The ticks below which ana_ticks_ns() of slope @ns_per_tick takes its
 * one-compare path: at most 2^63, and (double)t * ns_per_tick + 0.5 <
 * 9.2e18 for every t below (the product and sum round monotonically, so
 * testing the largest t suffices); 0 for a NaN or infinite slope. */
uint64_t ana_ticks_ns_lim(double ns_per_tick);

/*
 * ana_grow_by_id() - Grows the zero-filled array @arr of *@n elements of
 * @esize bytes so that index @id exists; capacity doubles from 8 but never
 * exceeds @limit, so "index < *@n" also means "index < @limit".
 * Return: the array (*@n updated), or NULL when @id >= @limit or on ENOMEM
 * (then @arr and *@n are unchanged).
 */
void *ana_grow_by_id(void *arr, uint32_t *n, uint32_t id, size_t esize, uint32_t limit);

/* Whether sections named @id pass the --domain filter. */
static inline bool ana_in_domain(const struct ctx *c, uint32_t id)
{
	return c->res->domain_filter == UINT32_MAX ||
	       (c->domain_of && id < c->res->nnames && c->domain_of[id] == c->res->domain_filter);
}

/*
 * ana_pass_ext() - One INSTANT, ASYNC_BEGIN/END, GPU_RANGE or GPU_LAUNCH
 * record of thread @th (an element of res->threads), read in the normal
 * pass. Off the hot path: on_record() reaches it only for these kinds.
 * Allocation failures drop the record's contribution (never the pass).
 */
void ana_pass_ext(struct ctx *c, struct ana_thread *th, struct tstate *ts, const struct pt_record *r);

/*
 * ana_pass_gpu_launch_node() - The thread-local half of a GPU_LAUNCH @r of
 * thread @th read at the state @ts: the call-path node its BEGIN will open
 * (created if new; UINT32_MAX when the tree cannot grow) into *@node, the
 * node depth of the outermost open GPU section on the same device and
 * stream into *@cover (0: none), and @r pushed as an open GPU section.
 * ana_pass_gpu_launch_pair() - The rest, which needs state across
 * threads: counts the launch and pairs it (replay/pair.h) as thread
 * position @pos's at @node, @cover. ana_pass_ext() does both at once; a
 * reader thread of -j does the first and defers the second (ana_build.c).
 */
void ana_pass_gpu_launch_node(struct tstate *ts, struct ana_thread *th, const struct pt_record *r, uint32_t *node,
			      uint32_t *cover);
void ana_pass_gpu_launch_pair(struct ctx *c, uint32_t pos, const struct pt_record *r, uint32_t node, uint32_t cover);

/*
 * ana_pass_gpu_only() - A record of a thread that --thread did not select,
 * in a trace read in file order: only what the GPU summary needs is taken
 * (GPU_LAUNCH and GPU_RANGE for the pairing and the devices, GPU ERROR
 * codes, the "GPU timing off" INSTANT); nothing enters any thread's views.
 */
void ana_pass_gpu_only(struct ctx *c, const struct pt_record *r);

/* ana_pass_gpu_error() - An ERROR record with a GPU code (6..12): counted
 * per code, never as misuse. */
void ana_pass_gpu_error(struct ctx *c, const struct pt_record *r);

/* True for ERROR codes 6..12 (GPU halves not timed, early starts). */
static inline bool ana_is_gpu_errc(uint32_t code)
{
	return code >= ANA_GPU_ERRC_FIRST && code < ANA_GPU_ERRC_FIRST + ANA_GPU_ERRC_N;
}

/* True for the ERROR codes that count the program's misuse of the API
 * (pt_stats()' errors): not I/O, GPU timing or snapshot bookkeeping. */
static inline bool ana_is_misuse_errc(uint32_t code)
{
	return !ana_is_gpu_errc(code) && code != PT_ERRC_IO && code != PT_ERRC_SNAPSHOT &&
	       code != PT_ERRC_TRIGGER_LIMITED && code != PT_ERRC_ROTATE;
}

/*
 * ana_pass_finish() - After the pass, before the trees are merged: counts
 * the launches, ranges and async halves left unmatched, totals each
 * device's busy union, widens the wall span to the GPU ranges, and sums
 * instants over threads. Frees the pass's maps (the result keeps no pointer
 * into them).
 */
void ana_pass_finish(struct ctx *c);

/*
 * ana_pass_finish_copy() - ana_pass_finish() for the live pass (ana.h):
 * into @o, a copy of c->res's scalars being finished, it copies the GPU
 * devices and async aggregates and finishes them, counting what c->gp
 * leaves over without changing it: the pass goes on. Called between the
 * threads' finish and the merges, as ana_pass_finish(). 0 or -ENOMEM
 * (what was copied is in @o, for ana_result_free()).
 */
int ana_pass_finish_copy(struct ctx *c, struct ana_result *o);

/* ana_pass_gp_free() - Frees the pass's GPU pairing state (c->gp) without
 * finishing it: a pass given up. */
void ana_pass_gp_free(struct ctx *c);

/* ana_pass_flat_gpu() - The recursion-safe inclusive GPU sums of thread
 * state @ts into the flat aggregate @fa of name @id (called by
 * flat_from_tree()). */
void ana_pass_flat_gpu(struct tstate *ts, uint32_t id, struct ana_agg *fa);

/* ana_pass_free_tstate() - Frees the GPU parts of @ts. */
void ana_pass_free_tstate(struct tstate *ts);

/*
 * ana_mem_prepass() - Before the pass: finds the memory series (counters in
 * bytes, by name) and reads their samples, from the recorder's own threads
 * ("ptz-flusher", "ptz-gpu") or, when a name ends in " (bytes)" (a
 * pt_counter() of the program's), from every thread: such a trace is
 * decoded twice. Sets res->mem, res->nmem and c->nmem. 0 or -ENOMEM (or
 * the reader's error).
 */
int ana_mem_prepass(struct ctx *c);
/* ana_mem_occ() - Occurrence [@b, @e] (ticks) of @a, on thread state @ts:
 * its figures against every series (c->nmem > 0). */
__attribute__((noinline)) void ana_mem_occ(struct ctx *c, struct tstate *ts, struct ana_agg *a, uint64_t b,
					   uint64_t e);
/* ana_mem_fold() - @w's pending occurrences (pn, pv) into its figures. */
void ana_mem_fold(struct ana_mem_row *w);
/* ana_mem_fold0() - @a's pending occurrences of series 0 (mem_pn, mem_pv;
 * a->mem is set when there are any) into a->mem->row[0]. */
void ana_mem_fold0(struct ana_agg *a);

/* One occurrence whose begin, end and peak are all @v into @w
 * (ana_mem_occ_fast()): counted as pending while @v stays the same (a
 * row's sections between two samples: nearly all), so an END pays a
 * compare and an increment, not six updates of the figures. */
static inline void ana_mem_row_fast(struct ana_mem_row *w, int64_t v)
{
	if (__builtin_expect(w->pn != 0 && w->pv != v, 0))
		ana_mem_fold(w);
	w->pv = v;
	w->pn++;
}

/*
 * ana_mem_occ_fast() - ana_mem_occ() for its common case, inlined into the
 * END path: the occurrence [@b, @e] lies within the ticks where every
 * series stays at the sample that the thread's last slow call found
 * ([mem_lo, mem_hi)), so for each series begin = end = peak = that
 * sample's value. False (nothing done) otherwise: the caller then calls
 * ana_mem_occ() if the trace has memory series (c->nmem > 0; without
 * them mem_hi stays 0, so this is false at once). Through the call every section cost about 100
 * instructions more (callgrind, bench trace: one series), 280 with two
 * (a GPU trace's process RSS and device memory); most sections are
 * shorter than the sampling period. The occurrences wait as pending
 * (ana_mem_row_fast()); folded in at any time, before or after the slow
 * path's, they give the same figures: sums, minima and maxima do not
 * depend on the order.
 */
static inline bool ana_mem_occ_fast(const struct ctx *c, const struct tstate *ts, struct ana_agg *a, uint64_t b,
				    uint64_t e)
{
	if (b < ts->mem_lo || e >= ts->mem_hi || !a->mem)
		return false;
	/* series 0 pending in the agg itself: on a trace of many paths the
	 * row behind a->mem is a cache miss per END (--report on 100,000
	 * paths visited at random took 18 % less time without it). The value
	 * is stored only when it changes: with none pending the fold does
	 * nothing, and an equal value needs no store */
	if (__builtin_expect(a->mem_pv != ts->mem_v0, 0)) {
		ana_mem_fold0(a);
		a->mem_pv = ts->mem_v0;
	}
	a->mem_pn++;
	if (__builtin_expect(c->nmem > 1, 0)) /* a GPU trace: process RSS and device memory */
		for (uint32_t s = 1; s < c->nmem; s++)
			ana_mem_row_fast(&a->mem->row[s], ts->mem_v[s]);
	return true;
}

/*
 * ana_mem_extend() - The incremental analysis (ana_live_update()): adds
 * the samples of the chunks at file offsets @from and beyond to the memory
 * series. Every sample must come after tick @after (the last record the
 * pass state holds: an occurrence already measured must not gain a sample
 * at or before its END) and after its series' last one. Return: 0 (done),
 * 1 when that does not hold or the set of series changed (nothing changed
 * that the caller keeps: it analyzes the trace again), -ENOMEM.
 */
int ana_mem_extend(struct ctx *c, uint64_t from, uint64_t after);
/* ana_mem_copy() - @src's memory series into @dst (a copy). 0 or -ENOMEM
 * (what was copied is in @dst, for ana_mem_free()). */
int ana_mem_copy(struct ana_result *dst, const struct ana_result *src);
/* ana_mem_free() - Frees res->mem. */
void ana_mem_free(struct ana_result *res);

#endif /* PTZ_ANA_PASS_H */
