/*
 * ptz/format.h - read .ptz trace files (format version 1).
 *
 * Introduction
 * ------------
 * A .ptz file is a fixed 4096-byte header followed by chunks. Each chunk is
 * a self-checksummed header plus one zstd frame of records; event chunks
 * hold one thread's records in order, meta chunks hold the string, domain,
 * thread and clock tables. The byte layout is normative in
 * doc/trace-format.md; this header is the reading API over it.
 *
 * The reader never trusts a length: every size is bounded before it is
 * allocated, decompression is capped at PT_FMT_MAX_CHUNK_RAW_BYTES, and a
 * damaged region is skipped by resynchronizing on the chunk magic. Every
 * intact chunk of a torn or corrupt file is still delivered; what was
 * skipped is listed by pt_reader_problem() with its file offset.
 *
 * A trace still being written is read up to the committed length found in
 * its header when pt_reader_open() ran.
 *
 * Time: records carry raw ticks; pt_reader_ticks_to_ns() is the one
 * conversion to CLOCK_MONOTONIC nanoseconds that every consumer uses.
 */
#ifndef PTZ_FORMAT_H
#define PTZ_FORMAT_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint8_t, uint32_t, uint64_t */

#include "ptz/errors.h" /* PT_API, PT_E* */

#ifdef __cplusplus
extern "C" {
#endif

/* ==== Constants ==== */

#define PT_FMT_VERSION_MAJOR 1
#define PT_FMT_VERSION_MINOR 3
#define PT_FMT_HEADER_BYTES 4096u
#define PT_FMT_CHUNK_HEADER_BYTES 64u
/* Upper bound of one chunk's decompressed payload (doc/trace-format.md §3). */
#define PT_FMT_MAX_CHUNK_RAW_BYTES (16u << 20)
/* Thread index of meta chunks (tables, process-wide losses). */
#define PT_FMT_META_THREAD 0xffffffffu
/* pt_reader_next_chunk() selector: every chunk, meta chunks included. */
#define PT_READER_ALL_CHUNKS 0xfffffffeu
/* Largest string or domain id a reader accepts (bounds its tables). */
#define PT_FMT_MAX_STRING_ID (1u << 24)
/*
 * Name of the recorder's CUDA thread in the THREAD table (doc/trace-format.md
 * §4.4): it writes the GPU_RANGE records, so readers that pair ranges with
 * their launches read a trace that has it in file order, and exporters give
 * it no thread track of its own.
 */
#define PT_FMT_GPU_THREAD_NAME "ptz-gpu"
/*
 * Name of the recorder's flusher thread in the THREAD table: it runs no
 * sections; its only records are the samples of the process counters
 * ("process RSS" in bytes, CPU time, context switches, the system's steal,
 * load and runnable threads: doc/trace-format.md §9; every PTZ_PROC_MS).
 * Readers leave it out of per-thread time shares, as the CUDA thread.
 */
#define PT_FMT_FLUSHER_THREAD_NAME "ptz-flusher"
/*
 * The names of the process counters the flusher samples (doc/trace-format.md
 * §9): the recorder writes them, the analyzer and the exports find them by
 * these names, so they are defined here once.
 */
#define PT_FMT_PROC_RSS "process RSS"                                    /* bytes */
#define PT_FMT_PROC_CPU_USER "process CPU user (ns)"                     /* cumulative */
#define PT_FMT_PROC_CPU_SYSTEM "process CPU system (ns)"                 /* cumulative */
#define PT_FMT_PROC_CSW_VOLUNTARY "process context switches voluntary"   /* cumulative */
#define PT_FMT_PROC_CSW_INVOLUNTARY "process context switches involuntary" /* cumulative */
#define PT_FMT_PROC_STEAL "system CPU steal (ns)"                        /* cumulative, all CPUs */
#define PT_FMT_PROC_LOAD "system load 1 min (x1000)"
#define PT_FMT_PROC_RUNNABLE "system runnable threads"
#define PT_FMT_PROC_CPUS "system CPUs online"                            /* once */
/*
 * The COUNTER that marks the BEGIN right after it, on the same thread, as
 * the root of a sampled request recorded with probability value / 1e9
 * (pt_begin_sampled(); doc/trace-format.md §9.1). An ordinary counter to
 * readers that do not know it.
 */
#define PT_FMT_SAMPLE_COUNTER "ptz sample probability (x1e9)"
#define PT_FMT_SAMPLE_ONE 1000000000 /* the value of probability 1 */

/**
 * enum pt_clock_source - what a trace's ticks count: the header's
 * clock_source field (pt_trace_info.clock_source, doc/trace-format.md §2).
 * Any other value is unknown to this reader; the tick mapping then goes by
 * the clock records alone (§7).
 */
enum pt_clock_source {
	PT_CLOCK_TSC = 1,      /* x86 time-stamp counter (rdtsc), invariant TSC only */
	PT_CLOCK_CNTVCT = 2,   /* aarch64 virtual counter cntvct_el0 */
	PT_CLOCK_MONOTONIC = 3 /* clock_gettime(CLOCK_MONOTONIC) in ns: ticks are ns */
};

/** enum pt_record_kind - decoded record kinds (doc/trace-format.md §4). */
enum pt_record_kind {
	PT_REC_BEGIN = 0x01,    /* id = section id */
	PT_REC_END = 0x02,      /* id = section id */
	PT_REC_METRIC = 0x03,   /* aux = enum pt_metric_kind, value = amount */
	PT_REC_TRANSFER = 0x04, /* aux = enum pt_direction, value = bytes */
	PT_REC_COUNTER = 0x05,  /* id = counter name id, value = (int64_t) sample */
	PT_REC_LOSS = 0x06,     /* value = records lost, value2 = sections lost (whole) */
	PT_REC_ERROR = 0x07,    /* aux = enum pt_error_code, value = occurrences */
	/* length-prefixed kinds: readers skip the ones they do not know */
	PT_REC_INSTANT = 0x40,     /* id = name id, aux = 0 */
	PT_REC_ASYNC_BEGIN = 0x41, /* id = name id, value = 64-bit async id */
	PT_REC_ASYNC_END = 0x42,   /* id = 0 or name id, value = 64-bit async id */
	PT_REC_GPU_RANGE = 0x43,   /* id = section id, aux = device, value = GPU start,
				      value2 = GPU end (both in host ticks, unclamped),
				      ticks = host ticks of the launch (its BEGIN),
				      value3 = launch sequence, value4 = stream key (1.1) */
	PT_REC_GPU_LAUNCH = 0x44,  /* 1.1: id = section id, aux = device, value = stream key,
				      value2 = launch sequence; precedes the BEGIN it marks */
	PT_REC_STRING = 0x80,      /* meta: id, aux = domain id, str = name */
	PT_REC_DOMAIN = 0x81,      /* meta: id = domain id, str = name */
	PT_REC_THREAD = 0x82,      /* meta: id = thread index, value = OS tid, ticks = first seen,
				      value2 = exit ticks (0 = still running), str = name */
	PT_REC_CLOCK = 0x83        /* meta: ticks, value = CLOCK_MONOTONIC ns,
				      value2 = CLOCK_REALTIME ns, aux = bracket width in ticks */
};

/** enum pt_error_code - what a PT_REC_ERROR record counts. */
enum pt_error_code {
	PT_ERRC_IMPLICIT_CLOSE = 1, /* pt_stop() closed sections above the one named */
	PT_ERRC_STOP_NOT_OPEN = 2,  /* pt_stop() named no open section */
	PT_ERRC_END_UNDERFLOW = 3,  /* pt_end() with no open section on the thread */
	PT_ERRC_AFTER_EXIT = 4,     /* records from a thread after its ring was retired */
	PT_ERRC_IO = 5,             /* I/O failure; value = errno of the failure */
	/* GPU timing (format 1.1); value = occurrences. The CPU section is
	 * recorded in every case; only its GPU half is missing. */
	PT_ERRC_GPU_POOL_EMPTY = 6, /* no timing event available: GPU half dropped */
	PT_ERRC_GPU_CAPTURING = 7,  /* stream was being captured into a graph: skipped */
	PT_ERRC_GPU_CUDA = 8,       /* a CUDA call failed: GPU half dropped */
	PT_ERRC_GPU_OFF = 9,        /* GPU timing is off (no runtime, no device, fork); the
				     * reason is an INSTANT named "GPU timing off: ..." */
	PT_ERRC_GPU_EARLY_START = 10, /* a GPU start mapped before its host launch
				       * (kept unclamped in the GPU_RANGE record) */
	PT_ERRC_GPU_QUEUE_FULL = 11, /* too many GPU sections awaiting resolution: dropped */
	PT_ERRC_GPU_UNFINISHED = 12, /* GPU work not complete (or the runtime unloading)
				      * when the recorder closed: never resolved */
	/* format 1.2: snapshots (pt_snapshot(), the snapshot signal, pt_trigger()) */
	PT_ERRC_SNAPSHOT = 13,       /* a snapshot failed; value = errno of the failure */
	PT_ERRC_TRIGGER_LIMITED = 14, /* pt_trigger() calls rate-limited: no snapshot; value = calls */
	/* format 1.3: rotation (recorder.h, pt_open() "Rotation") */
	PT_ERRC_ROTATE = 15           /* the next part of a rotated trace could not be created:
				       * recording went on in this part; value = errno */
};

/* ==== Types ====
 *
 * struct pt_record, struct pt_chunk_info and struct pt_thread_info are
 * size-versioned (the rules are in ptz/recorder.h, "Types"): the caller
 * passes sizeof as it compiled it, the reader writes exactly that many
 * bytes (zeroing those past its own struct), and fields are only ever
 * appended. struct pt_trace_info is the reader's own memory: it grows at
 * the end and a caller reads the prefix it knows.
 */

struct pt_reader;

/**
 * struct pt_record - one decoded record (size-versioned).
 * @ticks:   absolute tick value. METRIC and TRANSFER carry no time of their
 *           own: they report the preceding timed record of the same chunk,
 *           or the chunk's first tick when none precedes them (0 in a chunk
 *           without timed records). Attribute them by nesting, not time.
 * @value:   kind-specific 64-bit payload (see enum pt_record_kind).
 * @value2:  second payload word.
 * @value3:  third payload word (GPU_RANGE: launch sequence; else 0).
 * @value4:  fourth payload word (GPU_RANGE: stream key; else 0).
 * @id:      section, counter, string, domain or thread id.
 * @aux:     metric kind, direction, error code, domain, or clock bracket.
 * @kind:    enum pt_record_kind.
 * @str:     STRING, DOMAIN and THREAD records only: name bytes (not
 *           NUL-terminated), valid until the next call on the reader; NULL
 *           for every other kind.
 * @str_len: length of @str in bytes.
 */
struct pt_record {
	uint64_t ticks;
	uint64_t value;
	uint64_t value2;
	uint64_t value3;
	uint64_t value4;
	uint32_t id;
	uint32_t aux;
	uint32_t kind;
	uint32_t str_len;
	const char *str;
};

/** struct pt_trace_info - the file header and what the reader found. */
struct pt_trace_info {
	uint16_t version_major, version_minor;
	uint32_t clock_source;        /* enum pt_clock_source */
	uint32_t pid;
	uint64_t start_ticks;         /* tick at pt_open() */
	uint64_t start_mono_ns;       /* CLOCK_MONOTONIC at pt_open() */
	uint64_t start_real_ns;       /* CLOCK_REALTIME at pt_open() (Unix epoch) */
	const char *process_name;     /* NUL-terminated, owned by the reader */
	const char *host;
	const char *cmdline;          /* arguments separated by spaces */
	const char *recorder_version;
	uint64_t committed_bytes;     /* header's committed length when opened */
	uint64_t file_bytes;          /* size of the file when opened */
	int closed;                   /* 1 if pt_close() finalized the file */
	uint64_t chunks;              /* valid chunk headers found */
	uint64_t event_chunks;
	uint64_t raw_bytes;           /* sum of decompressed payload sizes */
	uint64_t stored_bytes;        /* sum of stored payload sizes */
	uint64_t torn_tail_offset;    /* file offset where a torn tail begins, or UINT64_MAX */
	uint64_t corrupt_regions;     /* damaged regions skipped (not counting a torn tail) */
	uint64_t damaged_chunks;      /* chunks whose payload failed its checksum,
				       * decompression or decoding (each counted once) */
	int header_damaged;           /* the file header failed its checksum */
	/* Since: 0.3.0. Of the chunks above, those stored zstd-compressed (comp = 1)
	 * and the sums of their payload sizes; the others are stored as is (small
	 * or incompressible payloads, doc/trace-format.md section 3.3). */
	uint64_t compressed_chunks;
	uint64_t compressed_raw_bytes;
	uint64_t compressed_stored_bytes;
	/* Since: 0.4.0 (format 1.2, doc/trace-format.md section 10). @window: the
	 * chunks are the most recent part of a longer run (a flight file or a
	 * snapshot): each thread starts at whatever chunk sequence it kept, and
	 * sections that began before the window end in it unmatched. @flight:
	 * a flight-recorder file (circular chunk area of @flight_bytes bytes;
	 * 0 when the header checksum failed), which wrapped @laps times;
	 * @overwritten_bytes: bytes of its area past the head that hold no
	 * readable chunk (overwritten or retired: not counted as damage). */
	int window;
	int flight;
	uint64_t flight_bytes;
	uint64_t laps;
	uint64_t overwritten_bytes;
	/* Since: 0.4.0 (format 1.2, doc/trace-format.md section 2). The batch job
	 * and the rank within it the recorder found in its environment (recorder.h,
	 * pt_open()): @job "" when none (NUL-terminated, owned by the reader);
	 * @rank valid when @has_rank. Both read as none when the header checksum
	 * failed. */
	const char *job;
	int has_rank;
	uint32_t rank;
	/* Since: 0.4.0 (format 1.3, doc/trace-format.md section 11). A rotated
	 * trace is written as numbered parts sharing one random @run_id (0:
	 * not rotated, or the header checksum failed). @part: the part number
	 * of the file, or of a set's first (oldest) file, from 1; @last_part
	 * that of its last file (= @part for one file; 0 when not rotated).
	 * @parts: files read: 1, or the files of pt_reader_open_set(). Of a
	 * set, the static fields above are its first file's, the sizes and
	 * counts are summed over the files, @closed is set only when every
	 * file is closed, and @window when the set does not start at part 1
	 * (older parts deleted, PTZ_ROTATE_KEEP). */
	uint64_t run_id;
	uint32_t part, last_part;
	uint32_t parts;
};

/** struct pt_chunk_info - one chunk, as its header describes it (size-versioned). */
struct pt_chunk_info {
	uint64_t offset;      /* file offset of the chunk header */
	uint64_t sequence;    /* per-thread sequence number, from 0 */
	uint64_t first_ticks;
	uint64_t last_ticks;
	uint32_t thread;      /* thread index, PT_FMT_META_THREAD for a meta chunk */
	uint32_t records;
};

/** struct pt_thread_info - a thread of the traced process (size-versioned). */
struct pt_thread_info {
	uint32_t index;       /* recorder-assigned, never reused */
	uint32_t tid;         /* OS thread id (gettid) */
	uint64_t start_ticks; /* first record's registration */
	uint64_t end_ticks;   /* thread exit, 0 if it never exited while recorded */
	const char *name;     /* NUL-terminated; "" if unnamed */
};

/* ==== Lifecycle ==== */

/**
 * pt_reader_open() - Open a .ptz trace and index its chunks.
 * @path: file path; must not be NULL.
 * @out:  receives the reader; on a -PT_E* failure it still receives one that
 *        holds the message (read pt_reader_errmsg(), then pt_reader_close());
 *        on a -errno failure it receives NULL. Must not be NULL.
 *
 * Reads the header, walks every chunk header up to the committed length
 * (resynchronizing on the chunk magic after damage) and decodes the meta
 * chunks (strings, domains, threads, clocks). Event payloads are read later,
 * by pt_reader_next_chunk(), through one buffer of at most
 * PT_FMT_MAX_CHUNK_RAW_BYTES plus its compressed size.
 *
 * Context: any thread; blocking file I/O; allocates.
 * Return: 0 on success, also when damaged regions were skipped (see
 *         pt_reader_problem_count()). A header that fails its checksum is
 *         such a problem, not a failure: its process metadata is ignored
 *         and every chunk, checked on its own, is still read. -errno if the
 *         file cannot be opened or read (*out = NULL): -EISDIR for a
 *         directory, -ESPIPE for a pipe, FIFO or device (the reader reads
 *         at offsets); -PT_ECORRUPT if the
 *         magic is not a .ptz magic, -PT_EVERSION for a major version other
 *         than PT_FMT_VERSION_MAJOR in a header whose checksum holds,
 *         -PT_ETRUNCATED if the file is shorter than its header (*out set,
 *         with the message).
 */
PT_API int pt_reader_open(const char *path, struct pt_reader **out);

/**
 * pt_reader_open_set() - Open the parts of one rotated trace as one trace.
 * @paths: @n file paths, in any order; none NULL.
 * @n:     number of paths, >= 1. With 1, the same as pt_reader_open().
 * @out:   as for pt_reader_open(). Must not be NULL.
 *
 * Every file must be a part of the same rotated run (the run id in its
 * header, doc/trace-format.md section 11). The parts are read by ascending
 * part number as one trace: their tables merged, their chunks iterated
 * part after part (per-thread chunk sequences continue across parts, so
 * sections open across a boundary nest as in one file), their clock
 * records one calibration. A missing part between two given ones is a
 * problem naming the part and the file after the gap (and the sequence
 * gaps it leaves are reported as in one file); a set that starts after
 * part 1 (older parts deleted) reads as a window (pt_trace_info.window).
 * Problem messages and pt_reader_errmsg() start with the file's path
 * ("run.000002.ptz: chunk @0x3f200: ..."), and a problem's offset is in
 * that file. pt_chunk_info.offset likewise.
 * Context: any thread; blocking file I/O; allocates; one descriptor per file.
 * Return: as pt_reader_open(), and -PT_ESET (*out set, with the message
 * naming the file) when a file is not a part of a rotated trace, its
 * header checksum fails (which run and part it is cannot be told), it
 * belongs to another run than the first file, or a part number is given
 * twice; -EINVAL for a NULL or empty @paths. With @n > 1, a file that
 * cannot be opened or read at all fails the whole set with its error,
 * and *out holds the message naming it.
 */
PT_API int pt_reader_open_set(const char *const *paths, size_t n, struct pt_reader **out);

/**
 * pt_reader_open_trace() - Open a trace by name: a file, or a rotated trace
 * by the path its recorder was given. The one opener of ptanalyze, the
 * analyzer and the exporters.
 * @name: a .ptz file; or, when no file is there, the base name of a rotated
 *        trace ("run.ptz" for run.000001.ptz, run.000002.ptz, ...: every
 *        file "NAME less .ptz".NNNNNN.ptz, six digits or more), whose parts
 *        are read with pt_reader_open_set(). Must not be NULL.
 * @out:  as for pt_reader_open().
 * Context: any thread; blocking file I/O; allocates.
 * Return: as pt_reader_open() or pt_reader_open_set(); -ENOENT when neither
 *         the file nor any part exists. Parts of several runs under one name
 *         (an older run's parts left beside the new ones) are -PT_ESET.
 */
PT_API int pt_reader_open_trace(const char *name, struct pt_reader **out);

/**
 * pt_reader_peek_part() - Which rotated run and part a file is, from its
 * header alone (no chunk is read): to group files into sets.
 * @path:   file path; must not be NULL.
 * @run_id: receives the run id, 0 when the file is not a part of a rotated
 *          trace or its header checksum fails; must not be NULL.
 * @part:   receives the part number (0 with @run_id 0); must not be NULL.
 * Context: any thread; blocking file I/O.
 * Return: 0, or the error pt_reader_open() would return for the file's
 *         header (-errno, -PT_ETRUNCATED, -PT_ECORRUPT, -PT_EVERSION).
 */
PT_API int pt_reader_peek_part(const char *path, uint64_t *run_id, uint32_t *part);

/**
 * pt_reader_close() - Free a reader.
 * @r: reader, or NULL (no-op).
 * Context: any thread.
 */
PT_API void pt_reader_close(struct pt_reader *r);

/* ==== Introspection ==== */

/**
 * pt_reader_errmsg() - The last error or problem, e.g.
 * "chunk @0x3f200: payload checksum mismatch".
 * @r: reader, or NULL.
 * Return: a NUL-terminated string owned by @r ("" if none; "no reader" for NULL).
 */
PT_API const char *pt_reader_errmsg(const struct pt_reader *r);

/**
 * pt_reader_info() - Header fields and what the reader found.
 * @r: reader; must not be NULL.
 * Return: pointer owned by @r, valid until pt_reader_close(); the counters
 *         (chunks, corrupt_regions, ...) grow while chunks are iterated.
 */
PT_API const struct pt_trace_info *pt_reader_info(const struct pt_reader *r);

/**
 * pt_reader_problem_count() - Number of damaged regions and failed chunks met
 * so far (at open and during iteration). When a problem's message could not
 * be stored (out of memory), the last problem says how many were not
 * recorded (offset 0), so none passes in silence.
 * @r: reader; must not be NULL.
 */
PT_API size_t pt_reader_problem_count(const struct pt_reader *r);

/**
 * pt_reader_problem() - One problem: its message and file offset.
 * @r:      reader; must not be NULL.
 * @i:      0 <= @i < pt_reader_problem_count().
 * @offset: receives the file offset (bytes); may be NULL.
 * Return: message owned by @r, or NULL when @i is out of range.
 */
PT_API const char *pt_reader_problem(const struct pt_reader *r, size_t i, uint64_t *offset);

/**
 * pt_reader_thread_count() / pt_reader_thread() - The thread table.
 * @r:   reader; must not be NULL.
 * @i:   position in the table, 0 <= @i < count (not the thread index).
 * @out: receives the entry; must not be NULL.
 * @out_bytes: sizeof(*@out) as the caller compiled it: exactly that many
 *       bytes are written, those past the reader's struct zeroed.
 * Return: count; for pt_reader_thread() 1 if filled, 0 if @i is out of range
 *         (@out untouched).
 * Threads that appear only in event chunks (their table entry was lost) are
 * listed with tid 0 and an empty name.
 */
PT_API size_t pt_reader_thread_count(const struct pt_reader *r);
PT_API int pt_reader_thread(const struct pt_reader *r, size_t i, struct pt_thread_info *out, size_t out_bytes);

/**
 * pt_reader_string() - Name of a section or counter id.
 * @r:      reader; must not be NULL.
 * @id:     string id from a record.
 * @domain: receives the id's timing domain (0 = default); may be NULL.
 * Return: NUL-terminated name owned by @r (a NUL byte inside the stored
 *         name shows as '?'), or NULL if the id is unknown (its table
 *         entry was lost with a damaged chunk). Found by hashing: the
 *         tables are sized by the names defined, not by their ids.
 */
PT_API const char *pt_reader_string(const struct pt_reader *r, uint32_t id, uint32_t *domain);

/**
 * pt_reader_domain() - Name of timing domain @id ("" for the default domain 0).
 * Return: NUL-terminated name owned by @r, or NULL if unknown.
 */
PT_API const char *pt_reader_domain(const struct pt_reader *r, uint32_t id);

/**
 * pt_reader_max_string_id() - One more than the largest string id seen.
 */
PT_API uint32_t pt_reader_max_string_id(const struct pt_reader *r);

/**
 * pt_reader_ticks_to_ns() - Convert ticks to CLOCK_MONOTONIC nanoseconds.
 * @r:     reader; must not be NULL.
 * @ticks: a tick value from a record or chunk of this trace.
 *
 * The mapping is piecewise linear through the trace's clock records
 * (ticks, CLOCK_MONOTONIC) sorted by ticks, extrapolated with the slope of
 * the nearest segment; with a single clock record the header's start triple
 * is the second point; with CLOCK_MONOTONIC ticks it is the identity.
 * Context: any thread; pure.
 * Return: nanoseconds on CLOCK_MONOTONIC.
 */
PT_API uint64_t pt_reader_ticks_to_ns(const struct pt_reader *r, uint64_t ticks);

/**
 * pt_reader_ns_per_tick() - Mean slope of the mapping over the trace, for
 * converting tick differences (durations) consistently with
 * pt_reader_ticks_to_ns(). 1.0 on a CLOCK_MONOTONIC trace.
 */
PT_API double pt_reader_ns_per_tick(const struct pt_reader *r);

/* ==== Iteration ====
 * Chunks come in file order. Per thread, the recorder writes chunks in
 * sequence order; a gap in pt_chunk_info.sequence means chunks were lost
 * (the reader also records a problem for it).
 */

/**
 * pt_reader_rewind() - Restart chunk iteration at the first chunk.
 */
PT_API void pt_reader_rewind(struct pt_reader *r);

/**
 * pt_reader_next_chunk() - Advance to the next event chunk and decompress it.
 * @r:      reader; must not be NULL.
 * @thread: only event chunks of this thread index; PT_FMT_META_THREAD for
 *          meta chunks only; PT_READER_ALL_CHUNKS for every chunk. Meta
 *          chunks carry the tables and process-wide LOSS/ERROR records.
 * @out:    receives the chunk's header fields; may be NULL.
 * @out_bytes: sizeof(*@out) as the caller compiled it (as for
 *          pt_reader_thread()); ignored when @out is NULL.
 *
 * A chunk whose payload fails its checksum or decompression is skipped and
 * recorded as a problem; iteration goes on with the next chunk.
 * Context: the thread using @r; blocking I/O.
 * Return: 1 = a chunk is current, 0 = no more chunks, -errno on a read error.
 */
PT_API int pt_reader_next_chunk(struct pt_reader *r, uint32_t thread, struct pt_chunk_info *out, size_t out_bytes);

/**
 * pt_reader_next_chunk_header() - Advance to the next chunk (any kind)
 * without reading its payload: its header fields only, from the index built
 * at open. No chunk becomes current for pt_reader_next_record().
 * @r:   reader; must not be NULL.
 * @out: receives the header fields; must not be NULL.
 * @out_bytes: sizeof(*@out) as the caller compiled it (as for
 *       pt_reader_thread()).
 * Context: the thread using @r; no I/O.
 * Return: 1 = filled, 0 = no more chunks.
 */
PT_API int pt_reader_next_chunk_header(struct pt_reader *r, struct pt_chunk_info *out, size_t out_bytes);

/**
 * pt_reader_next_record() - Decode the next record of the current chunk.
 * @r:   reader; must not be NULL.
 * @out: receives the record; must not be NULL.
 * @out_bytes: sizeof(*@out) as the caller compiled it (as for
 *       pt_reader_thread()).
 * Return: 1 = record, 0 = end of the chunk, -PT_ECORRUPT if the payload
 *         decodes wrongly (the rest of the chunk is dropped and a problem
 *         recorded), -PT_ESTATE if no chunk is current.
 */
PT_API int pt_reader_next_record(struct pt_reader *r, struct pt_record *out, size_t out_bytes);

/**
 * pt_reader_next_records() - Decode up to @max records of the current chunk
 * at once (the same records pt_reader_next_record() returns, without a call
 * per record).
 * @r:   reader; must not be NULL.
 * @out: array of @max records; must not be NULL. @str fields point into
 *       the chunk buffer, valid until the next call on the reader.
 * @max: capacity of @out, >= 1.
 * @rec_bytes: sizeof(*@out) as the caller compiled it: the array's stride,
 *       and the bytes written per record (as for pt_reader_thread()).
 * Return: number of records stored (0 = end of the chunk), or
 *         -PT_ECORRUPT / -PT_ESTATE as pt_reader_next_record(); records
 *         decoded before a corrupt one are returned first; -EINVAL when
 *         @rec_bytes is 0 (nothing decoded).
 */
PT_API int pt_reader_next_records(struct pt_reader *r, struct pt_record *out, size_t max, size_t rec_bytes);

#ifdef __cplusplus
}
#endif
#endif /* PTZ_FORMAT_H */
