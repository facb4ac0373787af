/*
 * viewer-export/pfx_ranges.h - GPU ranges and async ranges for the
 * exporters (internal to libptexport).
 *
 * Sections stream: each thread's are written while its records are read.
 * GPU ranges and async ranges cannot: a GPU range pairs with its launch by
 * `seq` in another thread's chunks and may come first in file order, an
 * async range may end on another thread, and both must be laid out on
 * tracks where they nest (doc/trace-format.md §4.4, doc/export.md). So both
 * exporters gather these records (under 100 bytes each; they are the one
 * part of an export whose memory grows with the trace), then lay them out
 * here, the same way for Perfetto and Chrome JSON:
 *
 *  - GPU ranges (struct pfx_gpu): read from the chunks of the threads named
 *    "ptz-gpu" (PT_FMT_GPU_THREAD_NAME), where the recorder writes them, before
 *    any thread is exported, so that a CPU section knows whether its GPU
 *    half exists when it is written. The start is clamped to the launch tick
 *    and the end to the clamped start (the raw start stays available for
 *    the exporters' annotation). Ranges are sorted by (device, stream,
 *    clamped start, end descending, seq) and each gets a lane of its stream:
 *    lane 0 normally; a range that does not nest with the ranges open in a
 *    lane (a partial overlap, which one CUDA stream should never produce)
 *    moves to the lowest lane where it nests, so a track never mis-nests
 *    (at most PFX_GPU_MAX_LANES lanes a stream: beyond, not drawn).
 *    Except for jitter: the recorder maps a start through the float
 *    milliseconds of cudaEventElapsedTime from an anchor and the end as the
 *    start plus another such elapsed time, so back-to-back kernels overlap
 *    by a few ns (seen: 1 ns). A start at most PFX_GPU_SNAP_NS and 1% of
 *    its range's length before the end of the range it overlaps in lane 0
 *    is moved to that end (kept in snap_ticks), so such a stream stays one
 *    track, and the ranges nested in it that began before its new start
 *    move with it (else they would begin before their parent); larger
 *    overlaps are kept as measured, on a second lane.
 *    A launch takes its range by replay/pair.h (pfx_gpu_launch()), the rule
 *    the analyzer pairs them by.
 *  - Async ranges (struct pfx_async): ASYNC_BEGIN / ASYNC_END records added
 *    while the threads are exported, paired by async id as the analyzer
 *    pairs them (replay/pair.h: the k-th begin of an id read with its k-th
 *    end read; id 0 never pairs; an end before its begin in ticks is moved
 *    to the begin). Ends with no begin are unmatched (kept by tick for a
 *    count); begins with no end are closed at the trace's last tick and
 *    flagged open_at_end. Ranges are sorted by (begin, end descending, async
 *    id) and each gets the lowest lane that is free at its begin (a lane is
 *    free once its last range has ended, end <= begin): overlapping ranges
 *    are never on one lane.
 *
 * Ticks are compared, never nanoseconds: pt_reader_ticks_to_ns() is
 * monotonic, so an order in ticks holds in ns, and ties that only the
 * rounding to ns creates are broken by the write order (ranges are written
 * in the sorted order above, each BEGIN immediately followed by its END).
 *
 * Failure: the functions return -ENOMEM (or a reader error); the set is
 * then only fit for its free function, which accepts a zeroed or partly
 * built set.
 */
#ifndef PTZ_PFX_RANGES_H
#define PTZ_PFX_RANGES_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */
#include <stdint.h>  /* uint*_t */

#include "ptz/format.h"   /* struct pt_reader, struct pt_record */
#include "replay/pair.h" /* rule 9: struct rp_pairs */

/* Largest overlap of back-to-back ranges on a stream taken for jitter: float
 * milliseconds have 24 bits, about 6 ns at 100 ms and 1 us at 16 s. */
#define PFX_GPU_SNAP_NS 1000u

/* Lanes of one (device, stream) at most: a range that nests in none of
 * them (more than this many ranges overlapping each other partially on one
 * stream, which a CUDA stream never produces; a crafted trace does) gets
 * none and is not drawn, but counted (pfx_gpu_keep()): so the layout
 * stays linear in the ranges (a staircase of N ranges, each overlapping
 * the last, took N^2/2 steps and N tracks: 65 s for 160,000). */
#define PFX_GPU_MAX_LANES 64u

/* struct pfx_gpu_range.flags */
#define PFX_GPU_KEEP 1u    /* inside the export window: written */
#define PFX_GPU_LINKED 2u  /* its CPU section was written with flow id = seq */
#define PFX_GPU_NO_LANE 4u /* set by pfx_gpu_finish(): no lane (PFX_GPU_MAX_LANES), never drawn */

/** struct pfx_gpu_range - one GPU_RANGE record, laid out. */
struct pfx_gpu_range {
	uint64_t seq;          /* launch sequence (flow id); 0 in a 1.0 body */
	uint64_t ord;          /* position in the order read (pfx_gpu_add()) */
	uint64_t stream;       /* stream key */
	uint64_t launch_ticks; /* the CPU launch (BEGIN of its section) */
	uint64_t raw_start_ticks;
	uint64_t start_ticks; /* max(raw start, launch), plus snap_ticks */
	uint64_t end_ticks;   /* max(raw end, start_ticks) */
	uint64_t snap_ticks;  /* how far pfx_gpu_finish() moved the start */
	uint32_t device;
	uint32_t name_id;   /* section id */
	uint32_t lane;      /* index into pfx_gpu.lanes (set by pfx_gpu_finish; its stream's first lane for PFX_GPU_NO_LANE) */
	uint32_t flags;     /* PFX_GPU_*: NO_LANE set by pfx_gpu_finish(), the rest owned by the exporter */
	/* owned by the exporter: what the launching section declared itself
	 * (read, written, FLOPs; transfers by direction), for the range's rates
	 * over its GPU time (doc/analyzer-output.md §3.1, doc/export.md) */
	uint64_t m_self[3], x_self[4];
};

/** struct pfx_gpu_lane - one track of GPU ranges: a lane of a (device, stream). */
struct pfx_gpu_lane {
	uint64_t stream;
	uint32_t device;
	uint32_t device_index; /* index into pfx_gpu.devices */
	uint32_t lane;         /* 0 = the stream's own track */
};

/** struct pfx_gpu - the GPU ranges of a trace. Zero-initialize. */
struct pfx_gpu {
	struct pfx_gpu_range *r; /* sorted after pfx_gpu_finish() */
	size_t n, cap;
	struct pfx_gpu_lane *lanes; /* sorted by (device, stream, lane) */
	size_t nlanes;
	uint32_t *devices; /* distinct device ordinals, ascending */
	size_t ndevices;
	struct rp_pairs pairs; /* the ranges no launch has taken yet, by seq (replay/pair.h) */
	/* threads named "ptz-gpu": recorder index and whether they have sections */
	uint32_t *threads;
	bool *thread_sections;
	size_t nthreads;
};

/**
 * pfx_gpu_collect() - Read the GPU ranges of a trace and lay them out.
 * @g:  zeroed set; filled (free with pfx_gpu_free(), also on error).
 * @rd: open reader; its chunk iteration is rewound and used.
 *
 * Reads every chunk of the threads named PT_FMT_GPU_THREAD_NAME (a damaged
 * chunk is skipped by the reader, as everywhere), then runs
 * pfx_gpu_finish() with PFX_GPU_SNAP_NS in this trace's ticks. Also notes
 * whether those threads hold sections.
 * Return: 0; -ENOMEM; or a reader error (-errno) with pt_reader_errmsg().
 */
int pfx_gpu_collect(struct pfx_gpu *g, struct pt_reader *rd);

/*
 * pfx_gpu_add() - Add one GPU_RANGE record, clamped as above.
 * @g: the set; @r: a PT_REC_GPU_RANGE record (not checked).
 * Return: 0, or -ENOMEM with the set unchanged. Run pfx_gpu_finish() after
 * the last one.
 */
int pfx_gpu_add(struct pfx_gpu *g, const struct pt_record *r);

/*
 * pfx_gpu_finish() - Sort the ranges, assign their lanes (moving starts
 * that overlap by at most @snap_ticks and 1% of the range, see above) and
 * index them by seq.
 * Run once, after the last pfx_gpu_add().
 * Return: 0, or -ENOMEM (the set is then only fit for pfx_gpu_free()).
 */
int pfx_gpu_finish(struct pfx_gpu *g, uint64_t snap_ticks);

/*
 * pfx_gpu_keep() - Flags PFX_GPU_KEEP on the ranges that lie within
 * [@since, @until] (ticks) and have a lane; before any CPU section is
 * written, which links to a range only if it is kept.
 * @first_no_lane: receives the start tick of the first range of the window
 *                 that has no lane (PFX_GPU_NO_LANE), if any.
 * Return: how many ranges of the window have no lane (the exporters count
 * them in one instant at @first_no_lane).
 */
size_t pfx_gpu_keep(struct pfx_gpu *g, uint64_t since, uint64_t until, uint64_t *first_no_lane);

/*
 * pfx_gpu_launch() - The GPU range a GPU_LAUNCH pairs with, after
 * pfx_gpu_finish(): by replay/pair.h, as the analyzer pairs them (the
 * k-th launch of a seq read takes the k-th range of that seq read).
 * Call once per GPU_LAUNCH record, in the order the export reads them.
 * @seq: the launch's seq; 0 (a 1.0 body) never pairs.
 * Return: the range, owned by @g (the caller may change its flags and
 *         metric fields); NULL if no range is left for @seq.
 */
struct pfx_gpu_range *pfx_gpu_launch(struct pfx_gpu *g, uint64_t seq);

/*
 * pfx_gpu_thread() - Whether thread @index (recorder index) is a "ptz-gpu"
 * thread, after pfx_gpu_collect().
 * @has_sections: receives whether it holds BEGIN records; may be NULL;
 *                left alone when the thread is not a "ptz-gpu" thread.
 */
bool pfx_gpu_thread(const struct pfx_gpu *g, uint32_t index, bool *has_sections);

/* Frees what @g holds and zeroes it; @g zeroed or partly built is fine. */
void pfx_gpu_free(struct pfx_gpu *g);

/** struct pfx_async_range - one paired ASYNC_BEGIN / ASYNC_END. */
struct pfx_async_range {
	uint64_t async_id;
	uint64_t begin_ticks, end_ticks; /* end_ticks >= begin_ticks */
	uint32_t name_id;                /* from the begin */
	uint32_t begin_thread, end_thread; /* caller's thread tags (end = begin's when open) */
	uint32_t lane;
	bool open_at_end; /* never ended: closed at the trace's last tick */
};

/** struct pfx_async - the async ranges of a trace. Zero-initialize. */
struct pfx_async {
	struct rp_pairs pairs; /* the halves waiting, by async id (replay/pair.h) */
	bool ready;            /* pairs initialized: a record was added */
	struct pfx_async_range *r; /* as paired; sorted by (begin, end desc, id) after pfx_async_finish() */
	size_t n, cap;
	uint32_t nlanes;
	uint64_t *unmatched_end_ticks; /* ASYNC_ENDs with no begin; ascending after pfx_async_finish() */
	size_t nunmatched, ucap;
};

/*
 * pfx_async_add() - Add one ASYNC_BEGIN or ASYNC_END record, in the
 * order the export reads them: it pairs with a half waiting or waits.
 * @thread: the caller's tag for the writing thread (both exporters pass the
 *          tid they write), returned in the range.
 * Return: 0, or -ENOMEM (the set is then only fit for pfx_async_free()).
 */
int pfx_async_add(struct pfx_async *a, const struct pt_record *r, uint32_t thread);

/*
 * pfx_async_finish() - Close the begins still waiting, sort the ranges and
 * assign lanes; run once, after the last pfx_async_add().
 * @end_ticks: the trace's last tick; begins never ended close there (or at
 *             their own tick if later).
 * Return: 0, or -ENOMEM (the set is then only fit for pfx_async_free()).
 */
int pfx_async_finish(struct pfx_async *a, uint64_t end_ticks);

/* Frees what @a holds and zeroes it; @a zeroed or partly built is fine. */
void pfx_async_free(struct pfx_async *a);

/*
 * pfx_window_ticks() - The export window (struct pfx_opts: ns after the
 * trace start; until 0 = no limit) in ticks, exactly as the analyzer
 * converts it (analyzer/ana_build.c, doc/analyzer-output.md §4): with the
 * mean slope from the header's start_ticks, the first tick at or after
 * `since` (0 when since is 0) and the last tick at or before `until`
 * (UINT64_MAX when until is 0). A record is inside when its ticks are in
 * [*since, *until], so the exports keep the sections the report counts.
 */
void pfx_window_ticks(struct pt_reader *rd, uint64_t since_ns, uint64_t until_ns, uint64_t *since, uint64_t *until);

/*
 * pfx_trace_end_ticks() - The largest last_ticks of the trace's event
 * chunks (from the index: no I/O); 0 if there are none. Rewinds @rd.
 */
uint64_t pfx_trace_end_ticks(struct pt_reader *rd);

/*
 * pfx_errc_name() - The name both exports give an ERROR record's code
 * (PT_ERRC_*, the record's aux): "implicit_close", ..., "gpu_unfinished";
 * "unknown" for a code this build does not know.
 */
const char *pfx_errc_name(uint32_t code);

/* ==== Threads: one identity in both exports ==== */

/* The pid both exports write for a trace whose pid was lost (0): above Linux's largest pid_max
 * (2^22), so it never merges with a real process. */
#define PFX_LOST_PID 4194305
/* pfx_process_pid() - The pid both exports write: the trace's, or PFX_LOST_PID. */
static inline int32_t pfx_process_pid(const struct pt_trace_info *info)
{
	return info->pid ? (int32_t)info->pid : PFX_LOST_PID;
}

/* The made-up tids start here (doc/export.md §5): 2^30. */
#define PFX_LOST_TID_BASE 0x40000000u
/* Room pfx_thread_name() needs for the names it makes up. */
#define PFX_THREAD_NAME_BYTES 40

/*
 * pfx_thread_tid() - The tid both exports write for thread @ti: its OS tid,
 * or, when the reader has 0 (its thread-table entry was damaged or lost),
 * PFX_LOST_TID_BASE + its recorder index modulo 2^30. Such a made-up tid
 * lies in [2^30, 2^31): above Linux's largest pid_max (2^22), so it never
 * merges with a real thread (the trace processor reads tid 0 as the idle
 * task), above the Chrome export's GPU pseudo threads, and a positive int32
 * for every JSON reader. Distinct indexes below 2^30 get distinct tids.
 */
uint32_t pfx_thread_tid(const struct pt_thread_info *ti);

/*
 * pfx_thread_name() - The name both exports give thread @ti: its recorded
 * name, else "thread N" (N its recorder index), or "thread N (tid lost)"
 * when its tid was lost too, made up in @buf (PFX_THREAD_NAME_BYTES).
 * Return: @ti->name or @buf; never NULL.
 */
const char *pfx_thread_name(const struct pt_thread_info *ti, char buf[PFX_THREAD_NAME_BYTES]);

/* ==== A set of traces: one process each in one export ==== */

/* The made-up pids of a set's files whose pid an earlier file has:
 * PFX_SET_PID_BASE + the file's index, above PFX_LOST_PID. */
#define PFX_SET_PID_BASE (PFX_LOST_PID + 1)

/* Where file @file of a set goes in the output (both exports). */
struct pfx_set_place {
	uint32_t file;    /* its index in the set */
	int32_t pid;      /* pfx_process_pid(), or PFX_SET_PID_BASE + file when an earlier file has that pid
			   * (pid reuse, or the same pid on two hosts): each file stays one process */
	int64_t ts_shift; /* ns added to its timestamps: 0 when every file was recorded on one host (their
			   * CLOCK_MONOTONIC agree); else its start_real_ns - start_mono_ns less that of the
			   * file that started first (smallest start_real_ns): every file on that file's
			   * monotonic axis, placed there by CLOCK_REALTIME (the hosts' monotonic clocks do
			   * not agree, their realtime clocks do to NTP's precision) */
};

/*
 * pfx_set_places() - The placement of the @n >= 1 traces @paths in one
 * export, in @place (@n entries). Each file's header is read (and closed).
 * Return: 0; or the reader's error for the file *@bad with a message
 * naming it in @msg.
 */
int pfx_set_places(const char *const *paths, size_t n, struct pfx_set_place *place, size_t *bad, char *msg,
		   size_t msglen);

/* pfx_process_name() - The process name both exports write: the trace's
 * (or @fallback when it has none), with the job and rank the recorder
 * found ("app (job 77 rank 3)"), so that the ranks of a job, all one
 * program, tell apart in the viewer; made in @buf when it adds them.
 * Not yet UTF-8 repaired. */
const char *pfx_process_name(const struct pt_trace_info *info, const char *fallback, char *buf, size_t len);

/* pfx_set_name_file() - Prefixes the message @msg of a set's export that
 * failed on the file @path with "@path: " (unless it names it already). */
void pfx_set_name_file(char *msg, size_t msglen, const char *path);

#endif /* PTZ_PFX_RANGES_H */
