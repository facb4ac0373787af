/*
 * ptz/recorder.h - record nested, named sections into a .ptz trace.
 *
 * Introduction
 * ------------
 * Application threads mark sections with pt_begin()/pt_end() (or the
 * PT_SECTION/PT_SCOPE macros), attach metrics to the innermost open section,
 * and sample counters. Each thread appends fixed-size records to its own
 * lock-free ring on the heap; a background flusher thread drains the rings,
 * transcodes and zstd-compresses them and appends chunks to an mmap'd file.
 *
 * Guarantees:
 *  - Null-safe: every call accepts r == NULL and does nothing (the interning
 *    calls still return the process-global id).
 *  - Never blocks, never allocates on the hot path after a thread's first
 *    record, never fails upward: what cannot be stored is counted
 *    (pt_stats()) and written into the trace as loss records.
 *  - Losses keep nesting intact: when a ring is nearly full, new sections are
 *    dropped whole (begin, metrics, end, and every section nested in them)
 *    while the ends of recorded sections always fit in reserved headroom.
 *  - One recorder is open per process at a time. Section ids are
 *    process-global, interned once, and stay valid across pt_close() and a
 *    later pt_open().
 *
 * Loading libptz with dlopen(): a plugin (a Python extension module, a
 * plugin host's module) may link libptz and be dlclose()d, with or without
 * pt_close() first. libptz.so is linked -z nodelete: it and liburcu stay
 * loaded until the process exits, so the flusher, liburcu's name-table
 * worker, the thread-exit handlers and a recorder left open keep running
 * in mapped code, and a later load finds the same library and recorder
 * (pt_open() fails with EBUSY while it is open; a PTZ_TRACE recorder is
 * finalized at exit). A plugin that links libptz.a is itself kept loaded
 * from its first pt_open(), pt_default() or name interning (dlclose()
 * leaves its code and data mapped; linking it -Wl,-z,nodelete says so
 * explicitly). Link one libptz per process: two copies are two recorders,
 * and two "%p" recorders would both take liburcu-bp's fork locks.
 *
 * Build with -DPT_DISABLE to compile PT_SECTION/PT_SCOPE to empty scopes
 * with the same break/continue meaning; the functions stay available.
 *
 * Environment (read by pt_open() and pt_default()):
 *   PTZ_TRACE       path template for pt_default(): %p = pid, %h = host name
 *                   (see pt_open()).
 *   PTZ_RING_BYTES  per-thread ring size in bytes (rounded up to a power of two).
 *   PTZ_ZSTD_LEVEL  zstd compression level (see pt_options.zstd_level).
 *   PTZ_FLUSH_MS    the flush interval: records are in the file within it
 *                   (pt_options.flush_interval_ms).
 *   PTZ_CLOCK       "monotonic" forces clock_gettime(CLOCK_MONOTONIC) ticks.
 *   PTZ_PROC_MS     period in ms of the process counters (default 100; 0 =
 *                   none): while recording is enabled, the flusher thread
 *                   ("ptz-flusher") records as counters the process's RSS
 *                   (bytes), user and system CPU time (ns, µs resolution)
 *                   and context switches, the system's CPU steal (read at
 *                   most once a second), 1-minute load (x 1000) and
 *                   runnable threads, and once the CPUs online
 *                   (doc/trace-format.md §9 names them). It reads
 *                   getrusage() and /proc through descriptors opened when
 *                   it starts; a failed read is skipped, never reported to
 *                   the program. Values above 3,600,000 (an hour) are
 *                   clamped.
 *   PTZ_RSS_MS      the older name of PTZ_PROC_MS, read when PTZ_PROC_MS is
 *                   unset or empty (PTZ_RSS_MS=0 turns every process
 *                   counter off).
 *   PTZ_MODE        "stream" (default: the file grows with the run) or
 *                   "flight" (pt_options.mode): a flight recorder whose file
 *                   keeps only the most recent PTZ_FLIGHT_BYTES of chunks.
 *   PTZ_FLIGHT_BYTES size of a flight file's chunk area (k/m/g suffixes;
 *                   default 64 MiB, at least 1 MiB; pt_options.flight_bytes).
 *   PTZ_ROTATE_BYTES stream mode: rotate to a new numbered part once the
 *                   current one holds this size (k/m/g suffixes; at least
 *                   1M; pt_options.rotate_bytes). See "Rotation" at pt_open().
 *   PTZ_ROTATE_SECONDS stream mode: rotate once a part is this many seconds
 *                   old (pt_options.rotate_seconds).
 *   PTZ_ROTATE_KEEP keep only the newest N parts (0 or unset: all;
 *                   pt_options.rotate_keep). With PTZ_MODE=flight the three
 *                   PTZ_ROTATE_* variables are ignored, said once on stderr.
 *   PTZ_SNAPSHOT_SIGNAL a signal (USR1, USR2, RTMIN+n or a number) that
 *                   makes the flusher write a snapshot (pt_snapshot()) at
 *                   its next poll; the handler only sets a flag. Installed
 *                   by pt_open(), the previous disposition restored by
 *                   pt_close(). Unset: none.
 *   PTZ_SNAPSHOT_PATH the files of signal and trigger snapshots, "%n" their
 *                   number from 1; default: the trace's path less ".ptz"
 *                   plus ".snapshot-%n.ptz".
 *   SLURM_JOB_ID (with SLURM_ARRAY_TASK_ID), PBS_JOBID, LSB_JOBID,
 *   FLUX_JOB_ID   the first one set is written in the trace header as the
 *                   batch job (pt_trace_info.job; 126 bytes at most);
 *   SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, RANK (torchrun)
 *                   the first one set, as the process's rank in it
 *                   (pt_trace_info.rank): what tells a job's traces apart.
 *   PTZ_TRIGGER_SECONDS, PTZ_TRIGGER_MIN_MS what pt_trigger() snapshots
 *                   (default the last 10 s) and its rate limit (default
 *                   one snapshot per 10000 ms).
 * Explicit struct pt_options fields win over the environment.
 */
#ifndef PTZ_RECORDER_H
#define PTZ_RECORDER_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */
#include <stdint.h>  /* uint32_t, uint64_t, int64_t */

#include "ptz/errors.h" /* PT_API */

#ifdef __cplusplus
extern "C" {
#endif

/* ==== Types ====
 *
 * Size-versioned structs. Every struct a caller allocates and passes by
 * pointer travels with its size, sizeof as the caller compiled it: here
 * struct pt_options (pt_open()), struct pt_metrics (pt_start(), pt_stop())
 * and struct pt_stats_info (pt_stats()); in ptz/format.h struct pt_record,
 * struct pt_chunk_info and struct pt_thread_info. The rules are those of
 * Linux's openat2(), clone3() and sched_getattr():
 *  - Fields are only ever added at the end of a struct, never removed,
 *    reordered or resized: each older layout is a prefix of the newer
 *    ones. The library reads or writes min(caller's size, its own size)
 *    bytes, so a struct from older headers is never overrun.
 *  - Input structs: fields past a smaller caller's size take their
 *    defaults (a zero field is the default in every input struct). A larger
 *    caller struct (newer headers, older library) is accepted when every
 *    byte this library does not know is zero, and otherwise refused with
 *    E2BIG: it asks for something this library cannot do. Initialize them
 *    whole ("= { 0 }", designated initializers or memset), so that padding
 *    and unset fields are zero. pt_start() and pt_stop(), which cannot fail
 *    upward, ignore such bytes instead (metrics this library cannot record).
 *  - Output structs: the library writes exactly the caller's size; in a
 *    larger caller struct the bytes past the library's own are zeroed, so
 *    the fields this library does not know read as 0.
 *  - Any size is accepted, 0 included (nothing read or written), except a
 *    stride of 0 for an array (EINVAL).
 * Since 0.3.0, whose library is libptz.so.1.
 * A size argument, rather than a size member the caller sets (as
 * perf_event_attr.size): an output struct cannot be passed with its size
 * left uninitialized, a call that omits the size does not compile, and an
 * array of records (pt_reader_next_records()) takes its stride from it.
 * So a struct grows in a minor release without a new soname (README "API
 * and ABI stability"). Structs the library allocates and hands out by
 * pointer (struct pt_trace_info) need no size: they grow at the end too,
 * and a caller reads the prefix it knows. struct pt__scope, which the
 * macros place in the caller's frame, is frozen: a change to it needs new
 * pt__scope_* entry points.
 */

/** typedef pt_recorder - an open recorder (opaque). */
typedef struct pt_recorder pt_recorder;

/**
 * struct pt_options - recorder settings; a zero field takes the default, as
 * does every field past the size given to pt_open() (size-versioned, see
 * Types).
 * @ring_bytes:        bytes of each thread's ring; rounded up to a power of
 *                     two, at least 4 KiB, at most 1 GiB; default 8 MiB
 *                     (524,288 records of 16 bytes: 13 ms of a 20 M
 *                     sections/s burst, more than the flusher's longest
 *                     idle poll).
 * @zstd_level:        zstd level, 1..19 (negative = zstd's fast levels);
 *                     default 1 (level 1 compresses ~470 MB/s on one core,
 *                     level 3 ~130 MB/s: the flusher must keep up with
 *                     tens of millions of records per second). A level
 *                     above 19 (zstd's "ultra" levels) is clamped to 19,
 *                     one below zstd's lowest to that, each with a line on
 *                     stderr; PTZ_ZSTD_LEVEL likewise. Exit stays bounded
 *                     whatever the level: once pt_close() (or the exit)
 *                     has waited 100 ms for the final drain, the rest is
 *                     compressed at level 1 (full 8 MiB rings at level 19:
 *                     seconds before, tenths of a second now).
 * @flush_interval_ms: how old, at most, a record is when the flusher has
 *                     written it, provided the flusher gets a CPU and
 *                     keeps up (plus the time one of its passes takes to
 *                     compress and write): what a SIGKILL costs each
 *                     thread. A starved flusher (busy threads outnumbering
 *                     cores) adds its wait for a CPU; producers outrunning
 *                     it put their ring's backlog at stake (README.md,
 *                     "Crashes"; bench/bench-kill measures it). Its poll
 *                     adapts between 1 ms and 7/8 of this; default 10.
 * @process_name:      name written in the header; default: the program's
 *                     name from /proc/self/comm. May be NULL.
 * @mode:              (since 0.4.0) enum pt_mode; 0 takes PTZ_MODE, else
 *                     stream.
 * @flight_bytes:      (since 0.4.0) flight mode: bytes of the file's chunk
 *                     area (the file is this plus its 4 KiB header, created
 *                     at full size by pt_open(), which fails with ENOSPC if
 *                     the disk cannot hold it). Rounded down to the page
 *                     size; below 1 MiB is EINVAL. 0 takes PTZ_FLIGHT_BYTES,
 *                     else 64 MiB. Ignored in stream mode.
 * @rotate_bytes:      (since 0.4.0) stream mode: start a new part once the
 *                     current one holds this many bytes (checked after
 *                     each chunk, so a part exceeds it by one chunk and
 *                     its tables at most, under 300 KiB). At least 1 MiB
 *                     (smaller is EINVAL). 0 takes PTZ_ROTATE_BYTES, else
 *                     no size limit. See "Rotation" at pt_open().
 * @rotate_seconds:    (since 0.4.0) stream mode: start a new part once the
 *                     current one is this many seconds old. 0 takes
 *                     PTZ_ROTATE_SECONDS, else no age limit.
 * @rotate_keep:       (since 0.4.0) with rotation: keep the newest this
 *                     many parts, deleting older ones as new ones start;
 *                     0 takes PTZ_ROTATE_KEEP, else every part is kept.
 *                     The three rotation fields are ignored in flight
 *                     mode.
 */
struct pt_options {
	size_t ring_bytes;
	int zstd_level;
	unsigned flush_interval_ms;
	const char *process_name;
	int mode;
	uint64_t flight_bytes;
	uint64_t rotate_bytes;
	unsigned rotate_seconds;
	unsigned rotate_keep;
};

/**
 * enum pt_mode - what the trace file keeps (pt_options.mode, PTZ_MODE).
 * @PT_MODE_STREAM: every record, the file growing with the run.
 * @PT_MODE_FLIGHT: a flight recorder: the file is a fixed circular area
 *                  (doc/trace-format.md section 10) holding the most recent
 *                  chunks, older ones overwritten; the tables are repeated
 *                  so that what is kept always decodes alone. Every reader
 *                  and export reads it as a window of the run: sections
 *                  that began before the window are counted apart, not as
 *                  errors. A SIGKILL leaves a readable window. Chunks are
 *                  kept under an eighth of the area, so at least about
 *                  seven eighths of it is always the window.
 */
enum pt_mode { PT_MODE_STREAM = 1, PT_MODE_FLIGHT = 2 };

/** enum pt_metric_kind - what pt_metric() adds to a section. */
enum pt_metric_kind {
	PT_METRIC_READ_BYTES = 1, /* bytes read from memory or storage */
	PT_METRIC_WRITTEN_BYTES,  /* bytes written */
	PT_METRIC_FLOPS           /* floating-point operations */
};

/** enum pt_direction - direction of a pt_transfer(), as CUDA names them. */
enum pt_direction {
	PT_H2D = 1, /* host to device */
	PT_D2H,     /* device to host */
	PT_D2D,     /* device to device, same device */
	PT_P2P      /* peer to peer, between devices */
};

/**
 * struct pt_metrics - metrics given to pt_start()/pt_stop() (size-versioned,
 * see Types); a zero field adds nothing.
 */
struct pt_metrics {
	uint64_t read_bytes, written_bytes, flops;
};

/**
 * struct pt_stats_info - what a recorder has done so far (size-versioned,
 * see Types: pt_stats() writes only the size it is given).
 * @records:       event records (sections, metrics, counters...) written
 *                 to the trace file; table and clock records not counted.
 * @lost_records:  records that could not be stored: full ring (every record
 *                 of a dropped section counts), records after a thread's
 *                 exit, records drained after an I/O error, calls made while
 *                 the thread's ring could not be allocated (ENOMEM).
 * @lost_sections: sections dropped whole (nested ones included), also NVTX
 *                 pushes the injection cannot record (nested deeper than
 *                 256 on their thread, or no memory for the thread's push
 *                 stack), each with its BEGIN and END in @lost_records.
 * @errors:        API misuse counted: pt_end() without an open section,
 *                 pt_stop() of a name not open, sections pt_stop() closed
 *                 implicitly.
 * @chunks:        chunks written (event and meta).
 * @bytes_written: bytes committed to the file, header included.
 * @threads:       threads that have recorded.
 *                 The recorder's own rings count like a thread's: with
 *                 process counters on (PTZ_PROC_MS, on by default), the
 *                 flusher's ring ("ptz-flusher") is in @threads once it
 *                 has taken a sample, and its counters are in @records,
 *                 as their chunks are in @chunks and @bytes_written
 *                 (about 71 records a second at the default period; with
 *                 PTZ_PROC_MS=0 the flusher records nothing). So is the
 *                 CUDA thread's ring ("ptz-gpu") once it records.
 * @last_io_error: errno of the last I/O failure, 0 if none. EIO when the
 *                 file was truncated by another process (truncate,
 *                 logrotate copytruncate): nothing more is written to it,
 *                 and every record drained from then on is in
 *                 @lost_records (the file cannot hold that loss).
 * @gpu_launched:  GPU halves recorded by pt_gpu_begin() (events queued).
 * @gpu_ranges:    GPU ranges resolved and handed to the flusher.
 * @gpu_dropped:   GPU halves not timed: pool empty, capturing, CUDA error,
 *                 GPU timing off, no memory for the thread's GPU state,
 *                 unfinished at close, or resolved but lost because the
 *                 CUDA thread's ring was full (GPU_QUEUE_FULL; that record
 *                 is in @lost_records too); each one's CPU section was
 *                 recorded.
 *                 A pt_gpu_begin() whose section is skipped whole has no
 *                 GPU half and is in neither GPU count: for lack of room it
 *                 is in @lost_sections, while recording is disabled or with
 *                 no open recorder it is counted nowhere. So, once every
 *                 GPU half is resolved (after pt_close()): gpu_ranges +
 *                 gpu_dropped = the pt_gpu_begin() calls whose CPU section
 *                 was recorded; where every section is a GPU section and
 *                 recording stays enabled, gpu_ranges + gpu_dropped +
 *                 lost_sections = pt_gpu_begin() calls made while open.
 *                 The four GPU counts are this recorder's: they restart
 *                 at 0 at pt_open() (and a fork child's reopen) and stay
 *                 as pt_close() left them until the next pt_open(). A GPU
 *                 section still open at pt_close() and ended after it is
 *                 in none of them and in no trace (its pt_gpu_end() makes
 *                 no CUDA call). Calls on other threads while pt_close()
 *                 runs keep these identities and the trace's counts: from
 *                 its start a pt_gpu_begin() times nothing (CPU section
 *                 only, GPU half counted GPU_UNFINISHED), a GPU half ended
 *                 after its drain is counted GPU_UNFINISHED, and
 *                 pt_close() waits for calls that saw it open before the
 *                 last ERROR records are written (at most PTZ_GPU_DRAIN_MS
 *                 + 1 s: a call stuck longer, in a hung driver or a
 *                 stopped thread, counts nowhere). A call racing with
 *                 pt_open() may count in either recorder.
 * @gpu_early_starts: ranges whose GPU start mapped before its host launch.
 * @gpu_state:     enum pt_gpu_state.
 * @gpu_error:     CUDA error code that turned GPU timing off, 0 if none.
 * @parts:         (since 0.4.0) with rotation (pt_open(), "Rotation"): the
 *                 parts created so far, the first included; 1 without
 *                 rotation; @bytes_written and @chunks count over all parts.
 * @rotate_errors: (since 0.4.0) new parts that could not be created
 *                 (recording went on in the current part; each is an
 *                 ERROR record PT_ERRC_ROTATE in the trace).
 */
struct pt_stats_info {
	uint64_t records, lost_records, lost_sections, errors, chunks, bytes_written, threads;
	int last_io_error;
	uint64_t gpu_launched, gpu_ranges, gpu_dropped, gpu_early_starts;
	int gpu_state;
	int gpu_error;
	uint64_t parts, rotate_errors;
};

/** enum pt_gpu_state - whether GPU timing works (pt_stats_info.gpu_state). */
enum pt_gpu_state {
	PT_GPU_UNUSED = 0, /* no pt_gpu_begin() yet: CUDA not loaded */
	PT_GPU_ON = 1,     /* runtime loaded, CUDA thread running */
	PT_GPU_OFF = 2     /* off: no runtime, no device, PTZ_GPU=0, fork, error */
};

/* ==== Lifecycle ==== */

/**
 * pt_open() - Create a trace file and start recording into it.
 * @path: file to create, exclusively (O_EXCL), mode exactly 0600 whatever
 *        the umask. A regular file already there that belongs to the
 *        effective user and has a single link (an earlier run's trace) is
 *        replaced: unlinked, then created anew (a process still writing it
 *        keeps its own copy). Anything else there is refused, never written
 *        into: a symlink (ELOOP; never followed), another user's file or a
 *        file with other hard links (EEXIST, said once on stderr), a
 *        directory or device (EINVAL or the open's errno). "%p" expands to
 *        the pid and "%h" to the host name made one file-name component:
 *        every byte but ASCII letters, digits, '.', '-' and '_' becomes '_'
 *        ('/' would leave the directory, control bytes reach terminals),
 *        and a name that is empty, "." or ".." becomes "host", "_" or "__".
 *        Must not be NULL.
 * @opt:  settings, or NULL for defaults and the environment.
 * @opt_bytes: sizeof(*@opt) as the caller compiled it (see Types); fields
 *        past it take their defaults. Ignored when @opt is NULL.
 *
 * Writes the header and a first clock triple; starts the flusher thread
 * (all signals blocked in it but SIGBUS). No calibration sleep.
 * SIGBUS: the first pt_open() of the process installs a SIGBUS handler
 * (sigaction, SA_SIGINFO) that catches only the faults of the flusher's
 * own stores into the mapped trace, which happen when another process
 * truncates the file: recording into it then ends with EIO (see
 * pt_stats()) and the program goes on. Every other SIGBUS (another
 * address or thread, or sent with kill()) goes to the disposition that
 * was installed before: its handler is called, or the default action
 * taken. It stays installed after pt_close(). A program that installs its
 * own SIGBUS handler afterwards replaces it: the guard then works only if
 * that handler calls the one it replaced for the faults it does not
 * handle (sanitizers do); otherwise a truncation of the trace reaches
 * that handler, or kills the program under SIG_DFL.
 * Rotation (stream mode, pt_options.rotate_bytes / rotate_seconds,
 * PTZ_ROTATE_*): the trace is written as numbered parts, @path being
 * their pattern: "run.ptz" gives run.000001.ptz, run.000002.ptz, ... (the
 * number, six digits or more, goes before a final ".ptz", else it and
 * ".ptz" are appended), so that a glob lists them in order; nothing is
 * created at @path itself. Each part is a complete trace (format 1.3,
 * doc/trace-format.md section 11): the flusher, the only thread that
 * writes, finalizes the current part as pt_close() finalizes a file, opens
 * the next and writes every table and a clock triple into it before any
 * event, so each part decodes alone; parts after the first are marked as
 * windows of the run (sections begun in an earlier part end there
 * unmatched, "began before the window"). All parts carry one random run id
 * and their number; per-thread chunk sequences continue across parts, so
 * `ptanalyze` (given the parts, or @path) and pt_reader_open_set() read
 * them as one trace, no record lost or repeated. pt_path() names the part
 * being written. With rotate_keep, the oldest parts beyond it are deleted
 * as new ones start. A part that cannot be created (ENOSPC, EACCES, ...)
 * never stops or blocks the program: recording goes on into the current
 * part, the failure is an ERROR record (PT_ERRC_ROTATE, its errno) in it
 * and is counted in pt_stats_info.rotate_errors, and the next part is
 * tried again at the next threshold (another rotate_bytes, or
 * rotate_seconds, later).
 * Context: any thread; blocking I/O; allocates. Not async-signal-safe.
 * fork() (without exec): a child never writes into the parent's file.
 * If @path has "%p", the handle the child inherits records into the
 * child's own trace at @path with the child's pid, opened (with @opt) at
 * the child's first record: a child that records nothing, as in fork +
 * exec, creates no file. The forking thread's sections open at the fork
 * are begun again in the child's trace at that first record, so its
 * pt_end() calls close them; a child's exit() finalizes a PTZ_TRACE
 * recorder (pt_default()), otherwise call pt_close() in the child. Without
 * "%p", the inherited handle is a no-op and pt_open() in the child fails
 * with EBUSY, as in the child of a parent whose recorder was closed (a
 * process that never called pt_open() or pt_stats() forks as if libptz
 * were not there: its children may open a recorder). Only
 * while a "%p" recorder is open do the atfork handlers do anything: they
 * call liburcu-bp's fork handlers (urcu_bp_before_fork() and its two
 * partners: a program that uses liburcu-bp itself must then not call them
 * around fork() too, or the fork deadlocks) and take the recorder's locks,
 * waiting at most 0.2 s for each; if one is still held (pt_close()
 * running), that child records nothing and none of its calls takes a
 * lock. Do not fork() from a signal handler while such a recorder is open:
 * if the handler interrupted the recorder inside liburcu, the fork can
 * block. A child that cannot open its trace says so once on stderr and
 * records nothing. Other threads of the parent are not in the child:
 * their rings are not copied into it.
 * Return: the recorder, or NULL with errno set: EBUSY while another recorder
 *         is open or in a child that inherited an open one (see fork()),
 *         EINVAL for a NULL path, EEXIST or ELOOP for a file refused at
 *         the path (see @path), E2BIG for an @opt larger than this
 *         library's struct pt_options whose extra bytes are not all zero
 *         (a setting this library does not have), or the errno of the failed
 *         open/posix_fallocate/mmap. The program goes on either way.
 */
PT_API pt_recorder *pt_open(const char *path, const struct pt_options *opt, size_t opt_bytes);

/**
 * pt_close() - Drain every ring, write the final tables and clock triple,
 * truncate the file to its committed length and mark it closed.
 * @r: recorder, or NULL (returns 0).
 *
 * Threads that still call in afterwards find a harmless no-op: the handle
 * stays valid memory. There is one recorder per process, so every
 * pt_open() returns the same handle: after a later pt_open(), calls through
 * a handle kept from an earlier one (pt_close() included) act on the
 * recorder now open.
 * A file found truncated by another process is left as it is (neither
 * truncated again nor marked closed).
 * Context: any thread but the flusher; blocks until the flusher has finished.
 * Return: 0, or -errno of the last I/O error met while recording (-EIO
 *         for a file truncated under the recorder).
 */
PT_API int pt_close(pt_recorder *r);

/**
 * pt_default() - The recorder configured by PTZ_TRACE, opened on first call.
 *
 * The recorder is finalized at exit (atexit). Later calls return the same
 * handle.
 * Context: any thread; the first call does I/O.
 * Return: the recorder, or NULL if PTZ_TRACE is unset/empty or the open
 *         failed (errno set; not retried).
 */
PT_API pt_recorder *pt_default(void);

/* ==== Naming ==== */

/**
 * pt_domain() - Intern a timing domain (a namespace for section names, like
 * an NVTX domain).
 * @r:    recorder or NULL; the table is process-global.
 * @name: NUL-terminated, copied; NULL or "" returns 0 (the default domain).
 * Context: any thread; lock-free lookup, takes a mutex when inserting.
 * Return: domain id; 0 on allocation failure, and in a child after a fork
 *         that found a recorder lock held (pt_open(), fork()).
 */
PT_API uint32_t pt_domain(pt_recorder *r, const char *name);

/**
 * pt_intern_in() - Intern section or counter name @name in @domain.
 * @r:      recorder or NULL; ids are process-global and stable across
 *          pt_close()/pt_open(). Used only to count a name that gets no id
 *          (see Return).
 * @domain: id from pt_domain(), 0 = default.
 * @name:   NUL-terminated, copied; NULL is treated as "".
 * Context: any thread; RCU hash-table lookup (liburcu cds_lfht); a mutex
 *          and an allocation only the first time a name is seen.
 * Return: id, never 0. A name that gets no id of its own, because the
 *         table is full (2^24 - 3 names: PT_FMT_MAX_STRING_ID less the two
 *         ids kept for this case) or an allocation failed, gets the id of
 *         "(unnamed)", which is never another name's id; each such call
 *         also records, through @r when it is open and recording is
 *         enabled, a sample of the counter "ptz: names interned as
 *         (unnamed)" (pt_counter() on the calling thread) whose value is
 *         the number of such calls in the process so far. In a child after
 *         a fork that found a recorder lock held, which does not record: a
 *         placeholder id, without touching the table, whose lock the fork
 *         may have copied held.
 */
PT_API uint32_t pt_intern_in(pt_recorder *r, uint32_t domain, const char *name);

/** pt_intern() - pt_intern_in(r, 0, name); works with r == NULL. */
PT_API uint32_t pt_intern(pt_recorder *r, const char *name);

/* ==== Hot path ==== */

/**
 * pt_begin() - Open section @id on the calling thread.
 * @r:  recorder from pt_open() or pt_default(); NULL makes this a no-op.
 * @id: section id from pt_intern().
 *
 * Context: any thread; wait-free, never blocks; allocates only on the
 *          thread's first record (ring registration). If the ring is nearly
 *          full the whole section is skipped and counted as lost
 *          (pt_stats()); while recording is disabled it is skipped, not
 *          counted. Not async-signal-safe, on any call: each thread's ring
 *          has one writer, and a signal handler that records (this or any
 *          recording call: pt_end(), pt_metric(), pt_counter(),
 *          pt_instant(), the macros...) on a thread whose own recording
 *          call it interrupted overwrites or is overwritten by that call's
 *          records, and the ring's head can go back: records are lost
 *          without being counted and nesting breaks. A handler may record
 *          only on a thread that cannot be inside a recording call when the
 *          signal arrives (one that never records otherwise, or that blocks
 *          the signal around its recording calls), and not on a thread's
 *          first call.
 */
PT_API void pt_begin(pt_recorder *r, uint32_t id);

/**
 * pt_end() - Close the innermost open section of the calling thread.
 * @r:  recorder or NULL.
 * @id: the id given to the matching pt_begin(); written as given, so the
 *      analyzer can report a mismatch.
 * Context: as pt_begin(); always has room for sections that were recorded.
 *          With no section open on the thread it counts an error.
 */
PT_API void pt_end(pt_recorder *r, uint32_t id);

/**
 * pt_begin_sampled() - Open section @id as the root of a sampled request:
 * record it, and everything begun inside it on this thread, with
 * probability @p; otherwise skip it whole.
 * @r:  recorder or NULL (no-op, returns 0).
 * @id: section id from pt_intern().
 * @p:  the probability of recording, in (0, 1]; rounded to a multiple of
 *      1e-9 (the value written to the trace), at least 1e-9. @p >= 1:
 *      exactly pt_begin() (always recorded, no weight: exact figures).
 *      @p <= 0 or NaN: never recorded (returns 0), not an error.
 *
 * The "enable for 1 % of requests" of always-on profiling, in a form the
 * analyzer can extrapolate from: each call decides independently
 * (Bernoulli, i.e. Poisson sampling of requests) with a per-thread
 * splitmix64 generator seeded from the clock and the thread, never rand();
 * the decision depends on nothing the program does, so the recorded
 * requests are a probability sample of all of them. A chosen section is
 * written as the COUNTER PT_FMT_SAMPLE_COUNTER ("ptz sample probability
 * (x1e9)", value round(@p x 1e9)) immediately followed, on this thread, by
 * its BEGIN (doc/trace-format.md §9.1); both fit or neither is written (a
 * full ring drops the section whole and counts it lost, as pt_begin()).
 * ptanalyze then reports counts and totals of the paths inside sampled
 * requests as estimates with 95 % intervals (doc/analyzer-output.md §13).
 * A section not chosen is skipped like one begun while recording is
 * disabled: it and every section, metric and transfer begun inside it on
 * this thread are not recorded and not counted as lost. Counters, instants
 * and other threads' work are not affected.
 *
 * Always end it with pt_end(r, @id), whatever this returned. Do not nest
 * a sampled request inside another one on the same thread: the analyzer
 * then multiplies the weights (its point estimates stay unbiased) but
 * gives those paths no interval.
 *
 * Context: as pt_begin(), plus one splitmix64 step; a chosen section adds
 * one interning lookup the first time in the process and two record slots.
 * Return: 1 if the section was chosen (recorded as pt_begin() records it,
 * and subject to its losses), 0 if it was skipped.
 * Since: 0.4.0.
 */
PT_API int pt_begin_sampled(pt_recorder *r, uint32_t id, double p);

/**
 * pt_metric() - Add @value of @kind to this thread's innermost open section.
 * @r:     recorder or NULL.
 * @kind:  enum pt_metric_kind.
 * @value: bytes or floating-point operations.
 * Context: as pt_begin(). Dropped and counted as lost when the ring is
 *          full or its section was dropped for lack of room; not recorded,
 *          and not counted, when its section was skipped because recording
 *          was disabled (pt_set_enabled()). With no section open, the
 *          analyzer attributes it to the thread; while recording is
 *          disabled such a thread-level metric is not recorded.
 */
PT_API void pt_metric(pt_recorder *r, enum pt_metric_kind kind, uint64_t value);

/**
 * pt_transfer() - Record a host/device transfer of @bytes in direction @dir,
 * attributed to the innermost open section.
 * @r: recorder or NULL. @bytes: bytes moved. @dir: enum pt_direction.
 * Context: as pt_metric(). With no section open, the analyzer attributes it
 *          to the thread (bytes and count by direction); while recording is
 *          disabled such a thread-level transfer is not recorded.
 */
PT_API void pt_transfer(pt_recorder *r, uint64_t bytes, enum pt_direction dir);

/**
 * pt_counter() - Record one timestamped sample of a named counter.
 * @r:     recorder or NULL.
 * @id:    counter name id from pt_intern().
 * @value: sample, signed.
 * Context: as pt_begin() (one tick read, two record slots). Not recorded,
 *          and not counted, while recording is disabled (pt_set_enabled()).
 * Units: a counter whose name ends in " (bytes)" (e.g. "torch allocated
 *          (bytes)", a framework's own allocator figure) holds bytes: the
 *          analyzer then shows it per section like the process RSS
 *          (doc/analyzer-output.md §3.5). Other counters have no unit.
 */
PT_API void pt_counter(pt_recorder *r, uint32_t id, int64_t value);

/**
 * pt_start() - Open a section by title (interned on every call: prefer
 * pt_begin() with a cached id, or PT_SECTION, in loops).
 * @r:    recorder or NULL.
 * @name: section title; NULL is treated as "".
 * @m:    metrics added to the section, or NULL.
 * @m_bytes: sizeof(*@m) as the caller compiled it (see Types); metrics past
 *        it add nothing, and bytes past this library's struct are ignored.
 *        Ignored when @m is NULL.
 * Context: as pt_begin(), plus an RCU hash lookup.
 */
PT_API void pt_start(pt_recorder *r, const char *name, const struct pt_metrics *m, size_t m_bytes);

/**
 * pt_stop() - Close the innermost open section titled @name, and every
 * section opened above it.
 * @r:    recorder or NULL.
 * @name: section title; NULL is treated as "".
 * @m:    metrics added to the section before it closes, or NULL.
 * @m_bytes: as for pt_start().
 * Context: as pt_start(). Sections closed implicitly count one error each
 *          (PT_ERRC_IMPLICIT_CLOSE); a name that is not open counts one
 *          error (PT_ERRC_STOP_NOT_OPEN) and closes nothing. Only the
 *          innermost 64 open sections are searched, and only down to the
 *          first level whose entry a deeper nesting (more than 64 levels
 *          above it) has overwritten since.
 */
PT_API void pt_stop(pt_recorder *r, const char *name, const struct pt_metrics *m, size_t m_bytes);

/* ==== Instants, async ranges, thread names ==== */

/**
 * pt_instant() - Record a point event named @id on the calling thread (an
 * NVTX mark).
 * @r:  recorder or NULL (no-op).
 * @id: name id from pt_intern() or pt_intern_in().
 * Context: as pt_counter(): any thread, wait-free, one tick read, one
 *          16-byte slot; counted as lost when the ring is full. Recorded
 *          even inside a skipped section (it is not part of one); not
 *          recorded, and not counted, while recording is disabled.
 * Since: 0.2.0.
 */
PT_API void pt_instant(pt_recorder *r, uint32_t id);

/**
 * pt_async_begin() - Open a range that is not nested in the calling
 * thread's sections and may end on another thread (NVTX start/end).
 * @r:  recorder or NULL.
 * @id: name id from pt_intern() or pt_intern_in().
 * Context: as pt_counter() (two slots) plus one relaxed atomic increment.
 *          While recording is disabled nothing is recorded, and the id
 *          returned makes pt_async_end() record nothing either, whenever
 *          it is called.
 * Return: the range's async id, unique in the process and never 0, to pass
 *         to pt_async_end(); 0 when @r is NULL or closed.
 * Since: 0.2.0.
 */
PT_API uint64_t pt_async_begin(pt_recorder *r, uint32_t id);

/**
 * pt_async_end() - Close the async range @async_id, from any thread.
 * @r:        recorder or NULL.
 * @async_id: a value returned by pt_async_begin(); 0 is ignored, and so is
 *            an id returned while recording was disabled (bit 63 set). An
 *            id that was never begun is written anyway; the analyzer
 *            counts it as unmatched.
 * Context: as pt_counter() (two slots), except that the end of a range
 *          begun while recording was enabled is recorded even if recording
 *          is disabled now (as the end of an open section is).
 * Since: 0.2.0.
 */
PT_API void pt_async_end(pt_recorder *r, uint64_t async_id);

/**
 * pt_thread_name() - Name a thread in the trace.
 * @r:    recorder or NULL.
 * @tid:  OS thread id (gettid()); 0 = the calling thread.
 * @name: NUL-terminated, copied (truncated to 31 bytes); NULL is ignored.
 * The name takes precedence over the pthread name the recorder reads when
 * a thread first records, whether @tid has recorded yet or not; the last
 * call for a tid wins. Names hold for the recorder open now: pt_open()
 * (and a fork child's reopen) forgets them.
 * Context: any thread; takes a mutex and may allocate (not for hot loops).
 * Since: 0.2.0.
 */
PT_API void pt_thread_name(pt_recorder *r, uint32_t tid, const char *name);

/* ==== GPU sections (CUDA) ==== */

/**
 * pt_gpu_begin() - Open section @id on the calling thread, and time the
 * GPU work queued on @cuda_stream from now until pt_gpu_end().
 * @r:           recorder or NULL (no-op).
 * @id:          section id from pt_intern().
 * @cuda_stream: the cudaStream_t the work is queued on. NULL (0) is the
 *               legacy default stream; applications built with
 *               --default-stream per-thread (or CUDA_API_PER_THREAD_DEFAULT_STREAM)
 *               must pass cudaStreamPerThread ((void *)0x2) explicitly,
 *               since 0 means the legacy stream to the recorder.
 *
 * The CPU section is recorded exactly as by pt_begin(). Its GPU half is a
 * pair of CUDA timing events recorded on @cuda_stream (cudaEventRecord),
 * taken from a per-thread cache that the recorder's CUDA thread refills
 * from a bounded per-device pool. The host never waits: when no event is
 * available (the pool is empty, which is also the case for the very first
 * sections on a device while its pool is being created), when the stream
 * is being captured into a CUDA graph, or when a CUDA call fails, only the
 * GPU half is skipped and counted (ERROR records GPU_POOL_EMPTY,
 * GPU_CAPTURING, GPU_CUDA; pt_stats() gpu_dropped); so is the GPU half of
 * a GPU section nested more than 64 deep in the thread's open GPU sections
 * (GPU_QUEUE_FULL). A GPU half is counted only when its CPU section is
 * recorded: a section skipped whole (full ring, recording disabled) has
 * none (struct pt_stats_info). The GPU range is
 * resolved later by the CUDA thread with cudaEventQuery (never a
 * synchronize) and mapped to host ticks (doc/gpu-timing.md).
 *
 * CUDA is loaded at run time: $PTZ_CUDA_RUNTIME (a path), else a CUDA
 * runtime already loaded in the process, else libcudart.so.13/.12/.11.0.
 * libptz never links CUDA. With no usable runtime or device, GPU timing is
 * off (reason recorded in the trace, pt_stats() gpu_state) and the call
 * records the CPU section only. PTZ_GPU=0 turns GPU timing off.
 *
 * Calls made on this thread: cudaStreamIsCapturing, cudaStreamGetDevice
 * (cudaGetDevice on runtimes older than 12.8) and cudaEventRecord. The
 * stream is identified in the trace by its handle's value. Never cudaSetDevice, never a
 * synchronizing call.
 * Context: any thread that may call CUDA; never blocks; the first call in
 *          the process loads the runtime (about 1 ms) and starts the CUDA
 *          thread. Not async-signal-safe.
 * Since: 0.2.0.
 */
PT_API void pt_gpu_begin(pt_recorder *r, uint32_t id, void *cuda_stream);

/**
 * pt_gpu_end() - Close the section opened by pt_gpu_begin() and end its
 * GPU timing.
 * @r:           recorder or NULL.
 * @id:          the id given to pt_gpu_begin().
 * @cuda_stream: the same stream as given to pt_gpu_begin(); a different
 *               stream drops the GPU half (GPU_CUDA) since elapsed times
 *               are only meaningful on one stream.
 * Context: as pt_gpu_begin(); one cudaEventRecord when the begin recorded
 *          a GPU half and its recorder is still the open one (not closed
 *          since: then the GPU half counts nowhere), else as pt_end(). GPU sections nest like any other
 *          section; the innermost open GPU section is the one ended.
 * Since: 0.2.0.
 */
PT_API void pt_gpu_end(pt_recorder *r, uint32_t id, void *cuda_stream);

/* ==== Introspection and control ==== */

/**
 * pt_stats() - Snapshot of the recorder's counters.
 * @r:   recorder, or NULL (fills @out with zeros).
 * @out: receives the counters; must not be NULL.
 * @out_bytes: sizeof(*@out) as the caller compiled it (see Types): exactly
 *       that many bytes are written, those past this library's struct
 *       zeroed.
 * Context: any thread (not async-signal-safe: a thread's first call may
 *          allocate its RCU and TLS state); RCU read side over the thread
 *          registry; takes no lock. The sums are consistent: while the
 *          flusher (or pt_close()) moves an exited thread's counters into
 *          the closed totals (a few stores under a sequence count), it
 *          retries, so they count once. It waits for such a move only if
 *          the moving thread was descheduled in it, and at most 1 s; then
 *          it returns the sum as read.
 * Return: 0; -EINVAL when @r is NULL.
 */
PT_API int pt_stats(pt_recorder *r, struct pt_stats_info *out, size_t out_bytes);

/**
 * pt_flush() - Make everything recorded so far readable in the trace file:
 * drain every thread's ring and commit the chunks.
 * @r: recorder, or NULL (returns 0).
 *
 * Wakes the flusher thread, whose next pass drains every ring whatever its
 * fill level and writes the chunks (tables first), advancing the file's
 * committed length; returns once that pass has ended. Records published
 * before the call, by any thread, are then in the file, readable by
 * pt_reader_open() and ptanalyze on the open trace. GPU ranges still being
 * resolved by the CUDA thread are not waited for (doc/gpu-timing.md): they
 * reach the file at a later pass. Each call costs one flusher pass: do
 * not call it per section.
 * Context: any thread but the recorder's own flusher; blocks, waiting at
 *          most 1 s for the pass (a flusher starved of CPU or writing a
 *          large backlog can take longer: the pass still happens, later).
 *          Takes the recorder's flusher lock; no allocation. Not
 *          async-signal-safe.
 * Return: 0: done, or nothing to do (@r NULL, recorder closed, closing,
 *         or a fork child's handle that has not reopened); -ETIMEDOUT
 *         when the pass did not end within 1 s; -EDEADLK when called on
 *         the flusher thread; -errno of the last I/O error met while
 *         recording, as pt_close() reports it (the records drained since
 *         are then counted as lost, pt_stats()).
 * Since: 0.3.0.
 */
PT_API int pt_flush(pt_recorder *r);

/**
 * pt_snapshot() - Write what the trace holds now, the rings drained into
 * it first, to a standalone trace file: in flight mode the retained window
 * (the way to take "the last minute" out of an always-on recorder), in
 * stream mode the whole trace so far.
 * @r:    recorder; NULL is -EINVAL.
 * @path: the snapshot's file, created as pt_open() creates its trace (mode
 *        0600; an existing file of the user replaced; another user's, or a
 *        symlink, refused); must not be NULL; shorter than 4096 bytes.
 *
 * The flusher thread writes it: its next pass drains every ring, then
 * copies the chunks as they are (no recompression) into a stream-layout
 * file marked as a window (doc/trace-format.md section 10). Every reader,
 * ptanalyze command and export reads it; sections open at the cut count as
 * open at its end, sections that began before the window as begun before
 * it, neither as errors. While it copies (a 64 MiB window: tens of ms,
 * bench/bench-flight), the flusher drains nothing: a burst that fills a
 * ring then is counted as lost, never blocks. A failure (full disk,
 * unwritable path) removes the partial file, is recorded in the trace as an
 * ERROR record (PT_ERRC_SNAPSHOT, the errno) and returned; recording goes
 * on.
 * Context: any thread but the flusher; blocks until the snapshot is
 *          written (at most 30 s); one snapshot at a time (callers queue).
 *          Not async-signal-safe: from a signal, use PTZ_SNAPSHOT_SIGNAL.
 * Return: 0 written; -EINVAL (@r or @path NULL, or @path the trace itself),
 *         -ENAMETOOLONG, -EBADF
 *         (recorder closed or closing, or a fork child's handle),
 *         -EDEADLK (on the flusher thread), -ETIMEDOUT, or the -errno of
 *         the file's creation or writing.
 * Since: 0.4.0.
 */
PT_API int pt_snapshot(pt_recorder *r, const char *path);

/**
 * pt_trigger() - Mark that something went wrong (a request slower than its
 * SLO, an error) and snapshot the seconds before it.
 * @r:      recorder; NULL is -EINVAL.
 * @reason: text, recorded as an instant named "trigger: <reason>" (cut to
 *          255 bytes) on the calling thread; must not be NULL. Each distinct
 *          text is an interned name: give a category ("slow request"), not
 *          a per-request id.
 *
 * Records the instant, then, unless a trigger was accepted less than
 * PTZ_TRIGGER_MIN_MS ago (default 10000 ms: the rate limit), asks the
 * flusher for a snapshot of the last PTZ_TRIGGER_SECONDS (default 10 s;
 * event chunks that ended earlier are left out, the tables kept) and
 * returns without waiting for it. The file is named as a signal snapshot's
 * (PTZ_SNAPSHOT_PATH with "%n" for its number, default the trace's path
 * less ".ptz" plus ".snapshot-N.ptz"). Rate-limited calls are counted in
 * an ERROR record (PT_ERRC_TRIGGER_LIMITED); a failed snapshot as in
 * pt_snapshot().
 * Context: any thread; never blocks on I/O (interns the name: a lock and
 *          an allocation the first time); not async-signal-safe.
 * Return: 1 a snapshot was scheduled, 0 rate-limited (the instant is
 *         still recorded), -EINVAL, -EBADF (recorder closed).
 * Since: 0.4.0.
 */
PT_API int pt_trigger(pt_recorder *r, const char *reason);

/**
 * pt_path() - The path of the trace file @r is writing: pt_open()'s @path
 * with "%p" and "%h" expanded (after a fork, the child's own file once it
 * has reopened); with rotation (pt_open(), "Rotation"), the part being
 * written at the time of the call (run.000003.ptz), which the flusher may
 * close and leave for the next one at any moment after.
 * @r:   recorder.
 * @buf: receives the path, NUL-terminated.
 * @cap: bytes at @buf (4096 is always enough).
 * Context: any thread; takes the recorder's open/close lock briefly. Not
 *          async-signal-safe.
 * Return: the path's length (without the NUL); -EINVAL for @r or @buf
 *         NULL; -EBADF when @r is not open (closed, or a fork child's
 *         handle that has not reopened); -ERANGE when @cap is too small
 *         (@buf untouched).
 * Since: 0.3.0.
 */
PT_API int pt_path(pt_recorder *r, char *buf, size_t cap);

/**
 * pt_set_enabled() - Turn recording on or off for all threads.
 * @r:  recorder or NULL (no-op).
 * @on: false: from now on nothing new is recorded, and nothing of it is
 *      counted as lost: no section (pt_begin(), pt_start(), the macros,
 *      pt_gpu_begin(): skipped whole, with their nested sections and
 *      metrics), no counter sample, no instant, no async range
 *      (pt_async_begin()), no metric or transfer made with no section
 *      open. What was begun while recording was on still completes:
 *      sections already open record their end and the metrics and
 *      transfers added to them, async ranges begun before record their
 *      pt_async_end(), and the GPU ranges of GPU sections begun before,
 *      with the ERROR records of their GPU halves not timed, are written.
 *      true: record again from the next call on.
 * Context: any thread; takes the recorder's open/close lock briefly (waits
 * while pt_open() or pt_close() runs), then threads see the change promptly
 * (a relaxed store they read at their next call). Not async-signal-safe.
 * pt_open() starts enabled; a fork child's own trace ("%p", pt_open())
 * starts with the setting its parent had at the fork.
 */
PT_API void pt_set_enabled(pt_recorder *r, bool on);

/* ==== FLOP counting helpers ==== */

/**
 * pt_flops_matmul() - FLOPs of C[m×n] = A[m×k]·B[k×n]: 2·m·n·k (one multiply
 * and one add per term; the convention of BLAS benchmarks such as HPL and of
 * numpy.einsum_path for two operands). Saturates at UINT64_MAX.
 */
PT_API uint64_t pt_flops_matmul(uint64_t m, uint64_t n, uint64_t k);

/**
 * pt_flops_einsum() - FLOPs of an einsum, counted exactly like
 * numpy.einsum_path's naive count (numpy/core/einsumfunc.py, _flop_count):
 * size × (max(1, n_operands − 1) + inner), where size is the product of the
 * sizes of all distinct input indices and inner is 1 when some index appears
 * in two or more operands (numpy: sum of each operand's distinct indices >
 * number of distinct indices), else 0. The output subscripts do not enter
 * the count: "ij->" counts 1·I·J, "ij,ij->ij" counts 2·I·J.
 * @spec: "ik,ijk,jk->" style; the "->out" part is optional (implicit output,
 *        as numpy); letters a-z and A-Z; spaces ignored; no "...".
 * @dims: each operand's subscript sizes in order, e.g. "ik,ijk,jk->" takes
 *        {I,K, I,J,K, J,K}; must hold one entry per subscript letter of the
 *        inputs. May be NULL only if the spec has no subscripts.
 * Return: the FLOP count; 0 for a malformed spec or inconsistent sizes
 *         (unlike numpy, a size-1 dimension is not broadcast); saturates at
 *         UINT64_MAX.
 */
PT_API uint64_t pt_flops_einsum(const char *spec, const int64_t *dims);

/**
 * pt_flops_elementwise() - n_elements × ops_per_element (saturating).
 */
PT_API uint64_t pt_flops_elementwise(uint64_t n_elements, unsigned ops_per_element);

/**
 * pt_flops_spmm() - FLOPs of a sparse (nnz non-zeros) times dense
 * (n_dense_cols columns) product: 2·nnz·cols, one multiply and one add per
 * stored non-zero and dense column (saturating).
 */
PT_API uint64_t pt_flops_spmm(uint64_t nnz, uint64_t n_dense_cols);

/* ==== Scope macros ====
 *
 * PT_SECTION(r, "name") { ... }
 * PT_SECTION(r, "name", .flops = f, .read_bytes = b) { ... }     (C)
 * PT_SECTION(r, "name", read_bytes, written_bytes, flops) { ... } (C++)
 *   A one-iteration for loop with a cleanup variable: the section ends when
 *   the body completes or is left by break, continue (both leave the
 *   section only), return or goto. Metrics are added at the start.
 *
 * PT_SCOPE(r, "name", ...);
 *   Opens a section that ends at the enclosing block's exit.
 *
 * "name" is interned once per call site (cached in a static); it must be the
 * same string every time that call site runs: use pt_start()/pt_stop() for
 * names computed at run time. In C++ designated metrics need C++20; C++17
 * takes them positionally.
 */

/* Internal to the macros; not API. Frozen: the macros put it in the
 * caller's frame, so the library may never read more of it (see Types). */
struct pt__scope {
	pt_recorder *r;
	uint32_t id;
	int once;
	uint64_t read_bytes, written_bytes, flops;
};
PT_API void pt__scope_begin(struct pt__scope *s);
PT_API void pt__scope_end(struct pt__scope *s);

#define PT__CAT2(a, b) a##b
#define PT__CAT(a, b) PT__CAT2(a, b)
/* __COUNTER__ (GCC, Clang): unique even for two uses on one line. */
#define PT__UNIQ(base) PT__CAT(base, __COUNTER__)

/* Interns once per call site; relaxed atomics because every thread that
 * races stores the same process-global id. */
#define PT__SITE_ID(pt__r_, pt__name_)                                                 \
	__extension__({                                                      \
		static uint32_t pt__site_id_;                                \
		uint32_t pt__v_ = __atomic_load_n(&pt__site_id_, __ATOMIC_RELAXED); \
		if (__builtin_expect(pt__v_ == 0, 0)) {                      \
			pt__v_ = pt_intern((pt__r_), (pt__name_));                     \
			__atomic_store_n(&pt__site_id_, pt__v_, __ATOMIC_RELAXED); \
		}                                                            \
		pt__v_;                                                      \
	})

#ifdef __cplusplus
} /* extern "C" */

/* C++: a destructor closes the section. The metrics are a braced aggregate,
 * so they may be positional (read_bytes, written_bytes, flops; any prefix)
 * or, from C++20, designated; the default member initializers keep
 * -Wmissing-field-initializers quiet for the fields left out. */
struct pt__cxx_metrics {
	uint64_t read_bytes = 0, written_bytes = 0, flops = 0;
};
struct pt__cxx_scope {
	pt__scope s;
	pt__cxx_scope(pt_recorder *r, uint32_t id, const pt__cxx_metrics &m)
	{
		s.r = r;
		s.id = id;
		s.once = 1;
		s.read_bytes = m.read_bytes;
		s.written_bytes = m.written_bytes;
		s.flops = m.flops;
		pt__scope_begin(&s);
	}
	~pt__cxx_scope() { pt__scope_end(&s); }
	pt__cxx_scope(const pt__cxx_scope &) = delete;
	pt__cxx_scope &operator=(const pt__cxx_scope &) = delete;
};
#define PT__SECTION_IMPL(var, pt__r_, pt__name_, ...)                                          \
	for (pt__cxx_scope var((pt__r_), PT__SITE_ID(pt__r_, pt__name_), pt__cxx_metrics{ __VA_ARGS__ }); \
	     var.s.once; var.s.once = 0)
#define PT__SCOPE_IMPL(var, pt__r_, pt__name_, ...) \
	pt__cxx_scope var((pt__r_), PT__SITE_ID(pt__r_, pt__name_), pt__cxx_metrics{ __VA_ARGS__ })
#define PT__TAIL
#else
/* The metrics fields come last in struct pt__scope so that C designators
 * after .once are in declaration order; the trailing empty argument keeps
 * __VA_ARGS__ non-empty under -std=c11 -Wpedantic. */
#define PT__SECTION_IMPL(var, pt__r_, pt__name_, ...)                                          \
	for (struct pt__scope var __attribute__((cleanup(pt__scope_end))) =             \
		     { .r = (pt__r_), .id = PT__SITE_ID(pt__r_, pt__name_), .once = 1, __VA_ARGS__ };     \
	     var.once && (pt__scope_begin(&var), 1); var.once = 0)
#define PT__SCOPE_IMPL(var, pt__r_, pt__name_, ...)                                            \
	struct pt__scope var __attribute__((cleanup(pt__scope_end))) =                 \
		{ .r = (pt__r_), .id = PT__SITE_ID(pt__r_, pt__name_), .once = 1, __VA_ARGS__ };        \
	pt__scope_begin(&var)
#define PT__TAIL
#endif

#if defined(PT_DISABLE)
/* The arguments stay in an unevaluated sizeof: no code, no side effects,
 * but variables that only feed the macros are not reported unused. */
#ifdef __cplusplus
#define PT__OFF_USE(pt__r_, pt__name_, ...) \
	((void)sizeof(pt__r_), (void)sizeof(pt__name_), (void)sizeof(pt__cxx_metrics{ __VA_ARGS__ }))
#else
#define PT__OFF_USE(pt__r_, pt__name_, ...) \
	((void)sizeof(pt__r_), (void)sizeof(pt__name_), \
	 (void)sizeof((struct pt__scope){ .r = 0, .id = 0, .once = 1, __VA_ARGS__ }))
#endif
/* One PT__UNIQ() per expansion: every __COUNTER__ read is a new number. */
#define PT__OFF_SECTION(var, ...) for (int var = (PT__OFF_USE(__VA_ARGS__, PT__TAIL), 1); var; var = 0)
#define PT_SECTION(...) PT__OFF_SECTION(PT__UNIQ(pt__off_), __VA_ARGS__)
#define PT_SCOPE(...) PT__OFF_USE(__VA_ARGS__, PT__TAIL)
#else
#define PT_SECTION(...) PT__SECTION_IMPL(PT__UNIQ(pt__sec_), __VA_ARGS__, PT__TAIL)
#define PT_SCOPE(...) PT__SCOPE_IMPL(PT__UNIQ(pt__scp_), __VA_ARGS__, PT__TAIL)
#endif

#endif /* PTZ_RECORDER_H */
