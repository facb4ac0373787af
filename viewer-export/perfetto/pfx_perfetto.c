/*
 * viewer-export/perfetto/pfx_perfetto.c - stream a .ptz trace out as a
 * Perfetto protobuf trace (ui.perfetto.dev, trace_processor).
 *
 * Output layout (the rules it obeys are cited from Perfetto's trace
 * processor, "TP", in tests/export/perfetto/README.md):
 *
 *   sequence 1 (process):  ProcessDescriptor track, uuid PFX_UUID_PROCESS,
 *                          first packet SEQ_INCREMENTAL_STATE_CLEARED; then
 *                          process-wide LOSS/ERROR as TYPE_INSTANT events
 *                          (event names in full, explicit track_uuid).
 *   sequence 2 + i (thread table position i), in table order:
 *     first packet: the thread's TrackDescriptor (real pid/tid, name; a
 *       lost tid and a missing name are made up by pfx_thread_tid() and
 *       pfx_thread_name(), as in the Chrome JSON) with
 *       flags CLEARED|NEEDS and TracePacketDefaults.track_event_defaults.
 *       track_uuid = the thread track, so events omit the uuid;
 *     then one packet per event, flags NEEDS:
 *       BEGIN  TYPE_SLICE_BEGIN, name_iid (InternedData.event_names in the
 *              same packet on the name's first use on the sequence;
 *              iid = string id + 1, since iid 0 means "unset");
 *       END    TYPE_SLICE_END with only type and timestamp (the track comes
 *              from the defaults; a name or category on an END would make
 *              TP match it against a different slice), plus, when the
 *              section carried metrics, debug_annotations that TP merges
 *              into the slice's args (SliceTracker::End binds the END's
 *              args to the slice it closes, "so all its args merge into one
 *              set");
 *       debug annotations (on any event, any sequence) carry name_iid: the
 *              packet that first uses a name on a sequence after CLEARED
 *              holds it in InternedData.debug_annotation_names (fixed iids,
 *              enum pfx_an), so a packet carrying annotations has flags
 *              NEEDS (written in full, names took ~40 % of an export);
 *       COUNTER the counter's TrackDescriptor (parent = thread track) just
 *              before its first value, then TYPE_COUNTER with counter_value;
 *       LOSS / ERROR  TYPE_INSTANT on the thread track with the counts as
 *              debug annotations;
 *       INSTANT TYPE_INSTANT on the thread track (interned name);
 *       GPU_LAUNCH marks the BEGIN right after it (same chunk, same id):
 *              that BEGIN goes through protobuf-c and carries flow_ids =
 *              [seq] when its GPU range is written too;
 *       ASYNC_BEGIN / ASYNC_END  gathered for the async sequence below;
 *       GPU_RANGE  ignored here: read from the "ptz-gpu" threads before
 *              any thread is written (pfx_gpu_collect()).
 *   the recorder's flusher thread: its COUNTERs (process RSS, CPU time,
 *     context switches; system steal, load, runnable threads) become
 *     process-scoped counter tracks as the "ptz-gpu" thread's do;
 *   the threads named "ptz-gpu" (the recorder's CUDA thread) get no thread
 *     track unless they hold sections: their COUNTERs become process-scoped
 *     counter tracks (parent = the process track; unit bytes when the name
 *     says memory, RSS or bytes) and their INSTANT, LOSS and ERROR records
 *     process-wide instants, all on sequence 1 like the meta chunk's.
 *   sequence 2 + nthreads (GPU), when the trace has GPU ranges: a plain
 *     track "GPU n" per device (parent = the process track) and a track
 *     "stream <key>" per stream and lane (parent = its device track, so the
 *     streams nest under it in the UI; pfx_ranges.h lays the ranges out),
 *     then each range as SLICE_BEGIN + SLICE_END with an explicit
 *     track_uuid, named like its section. A range whose CPU section was
 *     written carries terminating_flow_ids = [seq] on its BEGIN (flow ids
 *     are fixed64 and global; seq is unique in the trace, so it is the id).
 *     TP binds flows by timestamp, file order breaking ties (an id that
 *     terminates before it started is ignored), so a GPU start that maps
 *     before its launch is clamped to the launch and the raw offset kept as
 *     `gpu_start_offset_ns` (negative); this sequence comes after the
 *     threads, so at equal timestamps the CPU BEGIN is first in the file.
 *     A start moved over boundary jitter (pfx_ranges.h) carries
 *     `gpu_start_snapped_ns`.
 *   sequence 3 + nthreads (async), when the trace has async ranges: tracks
 *     "async ranges" (parent = the process track, one per lane: a range
 *     never shares a track with a range it overlaps; same-named siblings
 *     are drawn as one group by the UI), each range as SLICE_BEGIN (with
 *     begin_tid, and end_tid when it ended) + SLICE_END; a range never
 *     ended closes at the trace's last tick with `ptz.open_at_end`, as
 *     sections do. ASYNC_ENDs with no begin are skipped and counted by one
 *     process-wide instant "ptz: async ends without a begin" {count} at
 *     the first of them.
 *
 * Track uuids: PFX_UUID_* below.
 *
 * Clock: timestamps are CLOCK_MONOTONIC ns from pt_reader_ticks_to_ns()
 * with no timestamp_clock_id and no ClockSnapshot. TP then uses them as-is
 * (trace-file clock); a timestamp_clock_id of MONOTONIC without a snapshot
 * would drop every packet, and a truthful snapshot needs a BOOTTIME reading
 * that .ptz files do not hold. Merging with a system trace would need one.
 *
 * Slices follow the analyzer's nesting rules (analyzer/ana_build.c) so the
 * export and `ptanalyze` agree: an END that matches no open section is
 * dropped (never an END on an empty stack); an END matching a deeper
 * section closes the ones above it first, at the same timestamp; sections
 * open when a thread's records end, or at a chunk-sequence gap, get an END
 * at the thread's last timestamp carrying `ptz.open_at_end` (or
 * `ptz.cut_by_gap`) = true, so the trace stays valid and the UI shows where
 * the thread stopped; the analyzer counts these as open, not as sections.
 * Beyond depth PFX_MAX_DEPTH (TP's limit) sections are not written.
 * A BEGIN or END whose ticks are below the thread's previous BEGIN or END
 * (possible only across chunks, on a TSC not synchronized between cores:
 * the writer clamps within a chunk, doc/trace-format.md §4.2) is taken at
 * that previous tick, as the writer would have: TP sorts each track by
 * timestamp, so an END before its own BEGIN would close another slice and
 * leave its own open, mis-nesting the rest of the track.
 *
 * Window (pfx_opts, ns after the trace start): converted to ticks exactly as
 * the analyzer does (pfx_window_ticks()), and as in the analyzer a section
 * is written only if it lies fully inside [since, until]. A BEGIN is
 * written when read, so with an `until` a first pass over the thread finds
 * the sections still open when its records first pass `until` (a stack,
 * bounded by the depth) and the second pass skips them. Counters and instants are kept when their time is inside.
 *
 * Memory is constant in the number of sections, counters and instants:
 * per thread, one stack of open sections, a bitmap of interned names and
 * the list of counters seen; one output buffer; one reused packing buffer.
 * GPU ranges and async records are the exception: they are held, under 100
 * bytes each, to be paired and laid out (viewer-export/pfx_ranges.h).
 *
 * Failure: an I/O error on @out or a reader error stops the export with
 * -errno or -PT_E* and a message; what was written until then is a valid
 * prefix except for the open slices.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>
#include <xxhash.h>

#include "perfetto_trace_subset.pb-c.h" /* generated in this target's private dir */
#include "ptz/errors.h"
#include "ptz/format.h"
#include "replay/replay.h"
#include "viewer-export/perfetto/pfx_perfetto_enc.h"
#include "viewer-export/pfx.h"
#include "viewer-export/pfx_ranges.h"

#define PFX_MAX_DEPTH 512u /* TP's SliceTracker::kMaxDepth */
#define PFX_SEQ_PROCESS 1u
#define PFX_SEQ_THREAD0 2u
#define PFX_OUT_BYTES (64u << 10)

/* Track uuids: kind in bits 58..61 (small kinds keep varints short). */
#define PFX_UUID_PROCESS 1u
#define PFX_UUID_THREAD(index) ((2ull << 58) | (uint64_t)(index))
#define PFX_UUID_COUNTER(index, id) ((3ull << 58) | ((uint64_t)(index) << 24) | ((id) & 0xffffffu))
#define PFX_UUID_GPU_DEVICE(k) ((4ull << 58) | (uint64_t)(k))  /* k: position in pfx_gpu.devices */
#define PFX_UUID_GPU_LANE(i) ((5ull << 58) | (uint64_t)(i))    /* i: position in pfx_gpu.lanes */
#define PFX_UUID_ASYNC_LANE(lane) ((6ull << 58) | (uint64_t)(lane))
#define PFX_UUID_PCOUNTER(id) ((7ull << 58) | (uint64_t)(id)) /* process-scoped counter */

enum { M_READ, M_WRITTEN, M_FLOPS, NM };
enum { NDIR = 4 };

struct frame {
	uint64_t start_ticks;
	uint64_t start_ns; /* ns_of(start_ticks), pass 2 only */
	uint64_t ord;      /* BEGIN ordinal in the thread's records (pass-stable) */
	uint32_t id;
	bool emitted, has_m;
	struct pfx_gpu_range *gpu; /* the GPU range its GPU_LAUNCH took (pass 2), or NULL */
	struct rp_sums s;  /* replay/replay.h rule 6; zero unless has_m */
};

/* Counter ids whose track descriptor was written, in first-seen order. */
struct id_set {
	uint32_t *ids;
	size_t n, cap;
};

struct pctx {
	struct rp_ns ns; /* ticks to ns for the file being written (ns_of()) */
	struct pt_reader *rd;
	char *scratch_name; /* UTF-8 repairs of names (ana_utf8_clean): protobuf strings must be UTF-8 */
	const struct pt_trace_info *info;
	FILE *f;
	uint8_t *out;     /* PFX_OUT_BYTES */
	size_t nout;
	struct pfx_ts_enc tsk; /* the hot encoders' last timestamp varint */
	uint8_t *pk;      /* protobuf-c packing buffer */
	size_t pkcap;
	int err;          /* first error, sticky */
	char *msg;
	size_t msglen;

	uint64_t since_ticks, until_ticks; /* the window, as the analyzer converts it */
	bool until_set;
	int32_t pid;

	/* per thread */
	struct frame *st;
	uint32_t depth, cap, emitted_depth;
	uint64_t *interned; /* bitmap of string ids interned on this sequence */
	uint64_t an_seq;    /* bit iid: annotation name interned on this sequence */
	uint64_t an_proc;   /* the same for PFX_SEQ_PROCESS */
	uint32_t interned_words;
	uint32_t *interned_far; /* sorted: ids beyond PFX_INTERN_BITMAP_IDS (damaged traces) */
	uint32_t nfar, cfar;
	struct id_set counters; /* this thread's counters described so far */
	uint64_t *drop;     /* BEGIN ordinals pass 1 found open at `until` */
	size_t ndrop, dcap, kdrop;
	uint64_t ord, last_ticks; /* last_ticks: the thread's latest timed record's (rule 2: never back) */
	uint32_t seq;
	uint64_t track;
	uint32_t index, tid;
	bool routed;          /* a "ptz-gpu" or the flusher's thread: counters and instants go to the process */
	uint32_t export_tid;  /* the tid written for this thread: pfx_thread_tid() */

	/* whole trace */
	struct pfx_gpu gpu;
	size_t gpu_no_lane;          /* ranges of the window with no lane (pfx_gpu_keep) */
	uint64_t gpu_no_lane_ticks;  /* the first one's start */
	struct pfx_async async;
	struct id_set pcounters; /* process-scoped counters described so far */
	uint32_t nthreads;

	/* a set of traces (pfx_write_perfetto_set()): this file's place in it */
	uint32_t file;       /* 0 = the first: its sequence ids and uuids are those of a one-trace export */
	uint32_t seq_base;   /* added to every sequence id: the earlier files' sequences come before */
	int64_t ts_shift;    /* added to every timestamp (ns): 0, or the file's realtime - monotonic offset */
};

static int fail(struct pctx *c, int err, const char *fmt, const char *arg)
{
	if (!c->err) {
		c->err = err;
		snprintf(c->msg, c->msglen, fmt, arg);
	}
	return err;
}

/* A track uuid or flow id @x of file c->file of a set: itself for the
 * first file (a one-trace export is unchanged), else its 64-bit xxHash
 * seeded with the file's index, so ids of different files do not meet
 * (a collision has probability ~2^-64 a pair). Never 0 ("unset"). */
static inline uint64_t uu(const struct pctx *c, uint64_t x)
{
	if (!c->file)
		return x;
	const uint64_t h = XXH64(&x, sizeof(x), c->file);
	return h ? h : 1;
}

/* The process's start on the output's time axis (descriptors' timestamps). */
static inline uint64_t start_ns(const struct pctx *c)
{
	return c->info->start_mono_ns + (uint64_t)c->ts_shift;
}

/* ==== Output ==== */

static int out_flush(struct pctx *c)
{
	if (c->nout && !c->err && fwrite(c->out, 1, c->nout, c->f) != c->nout)
		fail(c, errno ? -errno : -EIO, "cannot write the trace: %s", strerror(errno ? errno : EIO));
	c->nout = 0;
	return c->err;
}

static inline uint8_t *out_room(struct pctx *c, size_t need)
{
	if (PFX_OUT_BYTES - c->nout < need)
		out_flush(c);
	return c->out + c->nout;
}

/* Packs @p with protobuf-c and writes it as one Trace.packet entry. */
static void put_packet(struct pctx *c, const Perfetto__Protos__TracePacket *p)
{
	size_t n = perfetto__protos__trace_packet__get_packed_size(p);
	if (n > c->pkcap) {
		size_t cap = n * 2;
		uint8_t *b = realloc(c->pk, cap);
		if (!b) {
			fail(c, -ENOMEM, "out of memory%s", "");
			return;
		}
		c->pk = b;
		c->pkcap = cap;
	}
	perfetto__protos__trace_packet__pack(p, c->pk);
	uint8_t *o = out_room(c, 11);
	uint8_t *e = o;
	*e++ = 0x0a;
	e = pfx_put_varint(e, n);
	c->nout += (size_t)(e - o);
	if (n > PFX_OUT_BYTES - c->nout) {
		out_flush(c);
		if (!c->err && fwrite(c->pk, 1, n, c->f) != n)
			fail(c, errno ? -errno : -EIO, "cannot write the trace: %s", strerror(errno ? errno : EIO));
		return;
	}
	memcpy(c->out + c->nout, c->pk, n);
	c->nout += n;
}

static void packet_init(Perfetto__Protos__TracePacket *p, uint32_t seq, uint64_t ts_ns, uint32_t flags)
{
	*p = (Perfetto__Protos__TracePacket)PERFETTO__PROTOS__TRACE_PACKET__INIT;
	p->optional_trusted_packet_sequence_id_case =
		PERFETTO__PROTOS__TRACE_PACKET__OPTIONAL_TRUSTED_PACKET_SEQUENCE_ID_TRUSTED_PACKET_SEQUENCE_ID;
	p->trusted_packet_sequence_id = seq;
	p->has_timestamp = 1;
	p->timestamp = ts_ns;
	if (flags) {
		p->has_sequence_flags = 1;
		p->sequence_flags = flags;
	}
}

/* ==== Names ==== */

/* @s repaired to UTF-8 as the Chrome JSON repairs it (a bad byte as '?'), valid until the next call;
 * "?" on ENOMEM. A protobuf string must be UTF-8: the UI shows a bad one as garbage. */
static const char *utf8_of(struct pctx *c, const char *s)
{
	const char *k = ana_utf8_clean(s, &c->scratch_name);
	return k ? k : "?";
}

/* The name of string @id, UTF-8 repaired (utf8_of(): valid until the next call), or "(unknown id N)"
 * in @tmp. */
static const char *name_of(struct pctx *c, uint32_t id, char *tmp, size_t n)
{
	const char *s = pt_reader_string(c->rd, id, NULL);
	if (s)
		return utf8_of(c, s);
	snprintf(tmp, n, "(unknown id %" PRIu32 ")", id);
	return tmp;
}

#define PFX_INTERN_BITMAP_IDS PT_FMT_MAX_STRING_ID

/* 1 if @id still needs interning on this sequence (and marks it), 0 if done, <0 on ENOMEM. */
static int intern_mark_far(struct pctx *c, uint32_t id)
{
	uint32_t lo = 0, hi = c->nfar;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (c->interned_far[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < c->nfar && c->interned_far[lo] == id)
		return 0;
	if (c->nfar == c->cfar) {
		uint32_t nc = c->cfar ? 2 * c->cfar : 64;
		uint32_t *b = realloc(c->interned_far, nc * sizeof(*b));
		if (!b)
			return fail(c, -ENOMEM, "out of memory%s", "");
		c->interned_far = b;
		c->cfar = nc;
	}
	memmove(&c->interned_far[lo + 1], &c->interned_far[lo], (c->nfar - lo) * sizeof(*c->interned_far));
	c->interned_far[lo] = id;
	c->nfar++;
	return 1;
}

/* True when @id is interned on this sequence already: intern_mark()'s
 * common answer, one bit test inlined (a call cost 30 instructions a BEGIN).
 * The bitmap never covers an id past PFX_INTERN_BITMAP_IDS. */
static inline bool interned_on_seq(const struct pctx *c, uint32_t id)
{
	const uint32_t w = id / 64;
	return w < c->interned_words && (c->interned[w] >> (id % 64) & 1);
}

static int intern_mark(struct pctx *c, uint32_t id)
{
	/* a bitmap for the ids a trace names (at most 2^24: 2 MiB); any larger
	 * id, only in a damaged or crafted trace, goes to a sorted list, so
	 * memory follows the ids seen, not their values */
	if (id >= PFX_INTERN_BITMAP_IDS)
		return intern_mark_far(c, id);
	uint32_t w = id / 64;
	if (w >= c->interned_words) {
		uint32_t nw = c->interned_words ? c->interned_words : 64;
		while (nw <= w)
			nw *= 2;
		uint64_t *b = realloc(c->interned, nw * sizeof(*b));
		if (!b)
			return fail(c, -ENOMEM, "out of memory%s", "");
		memset(b + c->interned_words, 0, (nw - c->interned_words) * sizeof(*b));
		c->interned = b;
		c->interned_words = nw;
	}
	uint64_t bit = 1ull << (id % 64);
	if (c->interned[w] & bit)
		return 0;
	c->interned[w] |= bit;
	return 1;
}

/*
 * Debug annotation names, interned like event names: each has a fixed iid
 * (its value here; 0 means unset), and a sequence's packet that first uses
 * a name after SEQ_INCREMENTAL_STATE_CLEARED carries it in
 * InternedData.debug_annotation_names. The trace processor flattens them
 * to arg keys "debug.<name>" with '.' replaced by '_' (doc/export.md §5).
 */
enum pfx_an {
	AN_NONE,
	AN_OPEN_AT_END,
	AN_CUT_BY_GAP,
	AN_READ_BYTES,
	AN_WRITTEN_BYTES,
	AN_FLOPS,
	AN_SELF_READ_BYTES,
	AN_SELF_WRITTEN_BYTES,
	AN_SELF_FLOPS,
	AN_H2D_BYTES,
	AN_D2H_BYTES,
	AN_D2D_BYTES,
	AN_P2P_BYTES,
	AN_GB_PER_S,
	AN_GFLOP_PER_S,
	AN_GPU_START_OFFSET_NS,
	AN_GPU_START_SNAPPED_NS,
	AN_GPU_GB_PER_S,
	AN_GPU_GFLOP_PER_S,
	AN_GPU_H2D_GB_PER_S,
	AN_GPU_D2H_GB_PER_S,
	AN_GPU_D2D_GB_PER_S,
	AN_GPU_P2P_GB_PER_S,
	AN_BEGIN_TID,
	AN_END_TID,
	AN_RECORDS_LOST,
	AN_SECTIONS_LOST,
	AN_ERROR,
	AN_ERRNO,
	AN_COUNT,
	AN_MAX_LANES_PER_STREAM,
	AN_END
};
_Static_assert(AN_END <= 64, "annotation names are tracked in a 64-bit mask per sequence");

static const char *const an_names[AN_END] = {
	[AN_OPEN_AT_END] = "ptz.open_at_end",
	[AN_CUT_BY_GAP] = "ptz.cut_by_gap",
	[AN_READ_BYTES] = "read_bytes",
	[AN_WRITTEN_BYTES] = "written_bytes",
	[AN_FLOPS] = "flops",
	[AN_SELF_READ_BYTES] = "self_read_bytes",
	[AN_SELF_WRITTEN_BYTES] = "self_written_bytes",
	[AN_SELF_FLOPS] = "self_flops",
	[AN_H2D_BYTES] = "h2d_bytes",
	[AN_D2H_BYTES] = "d2h_bytes",
	[AN_D2D_BYTES] = "d2d_bytes",
	[AN_P2P_BYTES] = "p2p_bytes",
	[AN_GB_PER_S] = "gb_per_s",
	[AN_GFLOP_PER_S] = "gflop_per_s",
	[AN_GPU_START_OFFSET_NS] = "gpu_start_offset_ns",
	[AN_GPU_START_SNAPPED_NS] = "gpu_start_snapped_ns",
	[AN_GPU_GB_PER_S] = "gpu_gb_per_s",
	[AN_GPU_GFLOP_PER_S] = "gpu_gflop_per_s",
	[AN_GPU_H2D_GB_PER_S] = "gpu_h2d_gb_per_s",
	[AN_GPU_D2H_GB_PER_S] = "gpu_d2h_gb_per_s",
	[AN_GPU_D2D_GB_PER_S] = "gpu_d2d_gb_per_s",
	[AN_GPU_P2P_GB_PER_S] = "gpu_p2p_gb_per_s",
	[AN_BEGIN_TID] = "begin_tid",
	[AN_END_TID] = "end_tid",
	[AN_RECORDS_LOST] = "records_lost",
	[AN_SECTIONS_LOST] = "sections_lost",
	[AN_ERROR] = "error",
	[AN_ERRNO] = "errno",
	[AN_COUNT] = "count",
	[AN_MAX_LANES_PER_STREAM] = "max_lanes_per_stream",
};

/* The InternedData entries of the annotation names a packet introduces. */
struct an_new {
	Perfetto__Protos__DebugAnnotationName n[16];
	Perfetto__Protos__DebugAnnotationName *p[16];
	size_t k;
};

/* Marks the names in @used (bit iid) interned on sequence @seq; those not
 * yet interned there go to @out, to ride in the packet that uses them. */
static void an_intern(struct pctx *c, uint32_t seq, uint64_t used, struct an_new *out)
{
	uint64_t *mask = seq == c->seq_base + PFX_SEQ_PROCESS ? &c->an_proc : &c->an_seq;
	uint64_t fresh = used & ~*mask;
	*mask |= used;
	out->k = 0;
	for (uint64_t iid = 1; fresh >> iid; iid++)
		if (fresh >> iid & 1) {
			Perfetto__Protos__DebugAnnotationName *d = &out->n[out->k];
			*d = (Perfetto__Protos__DebugAnnotationName)PERFETTO__PROTOS__DEBUG_ANNOTATION_NAME__INIT;
			d->has_iid = 1;
			d->iid = iid;
			d->name = (char *)an_names[iid];
			out->p[out->k++] = d;
		}
}

/* Adds @nw's entries to @in (NULL-safe when there are none). */
static void an_attach(Perfetto__Protos__InternedData *in, struct an_new *nw)
{
	in->n_debug_annotation_names = nw->k;
	in->debug_annotation_names = nw->k ? nw->p : NULL;
}

/* ==== Events ==== */

static inline uint64_t ns_of(const struct pctx *c, uint64_t ticks)
{
	return rp_ns((struct rp_ns *)&c->ns, ticks) + (uint64_t)c->ts_shift; /* a cache, not the context */
}

struct annots {
	Perfetto__Protos__DebugAnnotation a[16];
	Perfetto__Protos__DebugAnnotation *p[16];
	size_t n;
	uint64_t used; /* bit iid for each name */
};

/* One TrackEvent that the hand encoder does not cover, through protobuf-c. */
struct ev {
	Perfetto__Protos__TrackEvent__Type type;
	uint64_t track;       /* 0 = the sequence's default track */
	bool named;           /* name = string @name_id, interned on this sequence */
	uint32_t name_id;
	uint64_t flow, term;  /* flow_ids / terminating_flow_ids; 0 = none */
	const struct annots *an; /* may be NULL */
};

/* Writes @e at @ts on the current sequence, flags NEEDS (interned names,
 * defaults); the name's InternedData rides along on its first use. */
static void emit_ev(struct pctx *c, uint64_t ts, const struct ev *e)
{
	char tmp[48];
	Perfetto__Protos__EventName en = PERFETTO__PROTOS__EVENT_NAME__INIT;
	Perfetto__Protos__EventName *ens[1] = { &en };
	Perfetto__Protos__InternedData in = PERFETTO__PROTOS__INTERNED_DATA__INIT;
	Perfetto__Protos__TrackEvent te = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	Perfetto__Protos__TracePacket p;
	struct an_new nw = { .k = 0 };
	uint64_t flow = e->flow ? uu(c, e->flow) : 0, term = e->term ? uu(c, e->term) : 0;
	packet_init(&p, c->seq, ts, PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_NEEDS_INCREMENTAL_STATE);
	if (e->an && e->an->n) {
		an_intern(c, c->seq, e->an->used, &nw);
		if (nw.k) {
			an_attach(&in, &nw);
			p.interned_data = &in;
		}
	}
	if (e->named) {
		int k = intern_mark(c, e->name_id);
		if (k < 0)
			return;
		if (k) {
			en.has_iid = 1;
			en.iid = (uint64_t)e->name_id + 1;
			en.name = (char *)name_of(c, e->name_id, tmp, sizeof(tmp));
			in.n_event_names = 1;
			in.event_names = ens;
			p.interned_data = &in;
		}
		te.name_field_case = PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME_IID;
		te.name_iid = (uint64_t)e->name_id + 1;
	}
	te.has_type = 1;
	te.type = e->type;
	if (e->track) {
		te.has_track_uuid = 1;
		te.track_uuid = e->track;
	}
	if (flow) {
		te.n_flow_ids = 1;
		te.flow_ids = &flow;
	}
	if (term) {
		te.n_terminating_flow_ids = 1;
		te.terminating_flow_ids = &term;
	}
	if (e->an) {
		te.n_debug_annotations = e->an->n;
		te.debug_annotations = (Perfetto__Protos__DebugAnnotation **)e->an->p;
	}
	p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
	p.track_event = &te;
	put_packet(c, &p);
}

/* BEGIN of section @id on the thread's track; @flow != 0 starts that flow. */
static void emit_begin(struct pctx *c, uint64_t ts, uint32_t id, uint64_t flow)
{
	if (flow) {
		const struct ev e = { .type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN,
				      .named = true,
				      .name_id = id,
				      .flow = flow };
		emit_ev(c, ts, &e);
		return;
	}
	int k = interned_on_seq(c, id) ? 0 : intern_mark(c, id);
	if (k < 0)
		return;
	if (k == 0) { /* hot path: name already interned on this sequence */
		uint8_t *o = out_room(c, PFX_HOT_MAX_BYTES);
		c->nout += (size_t)(pfx_enc_slice(o, &c->tsk, ts, c->seq, (uint64_t)id + 1) - o);
		return;
	}
	char tmp[48];
	Perfetto__Protos__EventName en = PERFETTO__PROTOS__EVENT_NAME__INIT;
	Perfetto__Protos__EventName *ens[1] = { &en };
	Perfetto__Protos__InternedData in = PERFETTO__PROTOS__INTERNED_DATA__INIT;
	Perfetto__Protos__TrackEvent te = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	Perfetto__Protos__TracePacket p;
	en.has_iid = 1;
	en.iid = (uint64_t)id + 1;
	en.name = (char *)name_of(c, id, tmp, sizeof(tmp));
	in.n_event_names = 1;
	in.event_names = ens;
	te.has_type = 1;
	te.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN;
	te.name_field_case = PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME_IID;
	te.name_iid = (uint64_t)id + 1;
	packet_init(&p, c->seq, ts, PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_NEEDS_INCREMENTAL_STATE);
	p.interned_data = &in;
	p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
	p.track_event = &te;
	put_packet(c, &p);
}

static void annot_u(struct annots *an, enum pfx_an name, uint64_t v)
{
	Perfetto__Protos__DebugAnnotation *d = &an->a[an->n];
	*d = (Perfetto__Protos__DebugAnnotation)PERFETTO__PROTOS__DEBUG_ANNOTATION__INIT;
	d->name_field_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__NAME_FIELD_NAME_IID;
	d->name_iid = name;
	an->used |= 1ull << name;
	d->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_UINT_VALUE;
	d->uint_value = v;
	an->p[an->n] = d;
	an->n++;
}

static void annot_d(struct annots *an, enum pfx_an name, double v)
{
	annot_u(an, name, 0);
	an->a[an->n - 1].value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_DOUBLE_VALUE;
	an->a[an->n - 1].double_value = v;
}

static void annot_s(struct annots *an, enum pfx_an name, const char *v)
{
	annot_u(an, name, 0);
	an->a[an->n - 1].value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE;
	an->a[an->n - 1].string_value = (char *)v;
}

static void annot_i(struct annots *an, enum pfx_an name, int64_t v)
{
	annot_u(an, name, 0);
	an->a[an->n - 1].value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_INT_VALUE;
	an->a[an->n - 1].int_value = v;
}

static void annot_b(struct annots *an, enum pfx_an name, bool v)
{
	annot_u(an, name, 0);
	an->a[an->n - 1].value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_BOOL_VALUE;
	an->a[an->n - 1].bool_value = v;
}

/* An annotated END whose names are not all interned on the sequence yet:
 * through protobuf-c, with the new names' InternedData (once per name and
 * sequence; the hand encoder writes the rest). */
static void emit_end_interning(struct pctx *c, uint64_t end_ns, const struct pfx_annot *a, size_t n,
			       struct an_new *nw)
{
	Perfetto__Protos__DebugAnnotation d[16], *dp[16];
	Perfetto__Protos__InternedData in = PERFETTO__PROTOS__INTERNED_DATA__INIT;
	Perfetto__Protos__TrackEvent te = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	Perfetto__Protos__TracePacket p;
	for (size_t i = 0; i < n; i++) {
		d[i] = (Perfetto__Protos__DebugAnnotation)PERFETTO__PROTOS__DEBUG_ANNOTATION__INIT;
		d[i].name_field_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__NAME_FIELD_NAME_IID;
		d[i].name_iid = a[i].name_iid;
		switch (a[i].kind) {
		case PFX_A_BOOL:
			d[i].value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_BOOL_VALUE;
			d[i].bool_value = a[i].u != 0;
			break;
		case PFX_A_UINT:
			d[i].value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_UINT_VALUE;
			d[i].uint_value = a[i].u;
			break;
		case PFX_A_DOUBLE:
			d[i].value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_DOUBLE_VALUE;
			d[i].double_value = a[i].d;
			break;
		default:
			d[i].value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE;
			d[i].string_value = (char *)a[i].s;
			break;
		}
		dp[i] = &d[i];
	}
	an_attach(&in, nw);
	te.has_type = 1;
	te.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END;
	te.n_debug_annotations = n;
	te.debug_annotations = dp;
	packet_init(&p, c->seq, end_ns, PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_NEEDS_INCREMENTAL_STATE);
	p.interned_data = &in;
	p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
	p.track_event = &te;
	put_packet(c, &p);
}

/* END of @f at @end_ns; metrics (inclusive, plus self where it differs)
 * and the derived rates over the slice's duration; @mark (AN_OPEN_AT_END,
 * AN_CUT_BY_GAP or AN_NONE) flags an END the trace did not hold.
 * Hand-encoded (pfx_perfetto_enc.h) once its names are interned. */
static __attribute__((noinline)) void emit_end_annot(struct pctx *c, const struct frame *f, uint64_t end_ns,
						     enum pfx_an mark)
{
	static const enum pfx_an mnames[NM] = { AN_READ_BYTES, AN_WRITTEN_BYTES, AN_FLOPS };
	static const enum pfx_an snames[NM] = { AN_SELF_READ_BYTES, AN_SELF_WRITTEN_BYTES, AN_SELF_FLOPS };
	static const enum pfx_an xnames[NDIR] = { AN_H2D_BYTES, AN_D2H_BYTES, AN_D2D_BYTES, AN_P2P_BYTES };
	struct pfx_annot a[PFX_END_SMALL_N]; /* 13 at most: a mark, 3 + 3 metrics, 4 transfers, 2 rates */
	size_t n = 0;
	uint64_t used = 0; /* the names, as an_seq marks those interned */
#define ANNOT(name, ...) (used |= 1ull << (name), a[n++] = (struct pfx_annot){ .name_iid = (name), __VA_ARGS__ })
	if (mark)
		ANNOT(mark, .kind = PFX_A_BOOL, .u = 1);
	if (f->has_m) {
		uint64_t start_ns = f->start_ns;
		double dur = end_ns > start_ns ? (double)(end_ns - start_ns) : 0.0;
#pragma GCC unroll 4
		for (int k = 0; k < NM; k++) {
			if (f->s.m_incl[k])
				ANNOT(mnames[k], .kind = PFX_A_UINT, .u = f->s.m_incl[k]);
			if (f->s.m_self[k] != f->s.m_incl[k])
				ANNOT(snames[k], .kind = PFX_A_UINT, .u = f->s.m_self[k]);
		}
#pragma GCC unroll 4
		for (int k = 0; k < NDIR; k++)
			if (f->s.x_incl[k])
				ANNOT(xnames[k], .kind = PFX_A_UINT, .u = f->s.x_incl[k]);
		uint64_t bytes = f->s.m_incl[M_READ] + f->s.m_incl[M_WRITTEN];
		if (dur > 0 && bytes) /* bytes/ns = GB/s */
			ANNOT(AN_GB_PER_S, .kind = PFX_A_DOUBLE, .d = (double)bytes / dur);
		if (dur > 0 && f->s.m_incl[M_FLOPS])
			ANNOT(AN_GFLOP_PER_S, .kind = PFX_A_DOUBLE, .d = (double)f->s.m_incl[M_FLOPS] / dur);
	}
#undef ANNOT
	if (used & ~c->an_seq) {
		struct an_new nw;
		an_intern(c, c->seq, used, &nw);
		emit_end_interning(c, end_ns, a, n, &nw);
		return;
	}
	uint8_t *o = out_room(c, PFX_END_SMALL_MAX); /* booleans, amounts and rates, names below 128 */
	c->nout += (size_t)(pfx_enc_end_small(o, &c->tsk, end_ns, c->seq, a, n) - o);
}

/* The annotated END out of line (its 16 annotations' frame and saved
 * registers cost the plain END, most of them, 17 instructions a call). */
static inline void emit_end(struct pctx *c, const struct frame *f, uint64_t end_ns, enum pfx_an mark)
{
	if (!f->has_m && !mark) {
		uint8_t *o = out_room(c, PFX_HOT_MAX_BYTES);
		c->nout += (size_t)(pfx_enc_slice(o, &c->tsk, end_ns, c->seq, 0) - o);
		return;
	}
	emit_end_annot(c, f, end_ns, mark);
}

/* TYPE_INSTANT named @name on @track (0 = the sequence's default track). */
static void emit_instant(struct pctx *c, uint32_t seq, uint64_t track, uint64_t ts, const char *name,
			 const struct annots *an)
{
	Perfetto__Protos__InternedData in = PERFETTO__PROTOS__INTERNED_DATA__INIT;
	Perfetto__Protos__TrackEvent te = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	Perfetto__Protos__TracePacket p;
	struct an_new nw = { .k = 0 };
	te.has_type = 1;
	te.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT;
	te.name_field_case = PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME;
	te.name = (char *)name;
	if (track) {
		te.has_track_uuid = 1;
		te.track_uuid = track;
	}
	te.n_debug_annotations = an->n;
	te.debug_annotations = (Perfetto__Protos__DebugAnnotation **)an->p;
	/* interned annotation names need the sequence's state: NEEDS */
	packet_init(&p, seq, ts,
		    track && !an->n ? 0 : PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_NEEDS_INCREMENTAL_STATE);
	if (an->n) {
		an_intern(c, seq, an->used, &nw);
		if (nw.k) {
			an_attach(&in, &nw);
			p.interned_data = &in;
		}
	}
	p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
	p.track_event = &te;
	put_packet(c, &p);
}

static void emit_loss_or_error(struct pctx *c, uint32_t seq, uint64_t track, const struct pt_record *r)
{
	struct annots an = { .n = 0 };
	uint64_t ts = ns_of(c, r->ticks);
	if (r->kind == PT_REC_LOSS) {
		annot_u(&an, AN_RECORDS_LOST, r->value);
		annot_u(&an, AN_SECTIONS_LOST, r->value2);
		emit_instant(c, seq, track, ts, "ptz: records lost", &an);
	} else {
		annot_s(&an, AN_ERROR, pfx_errc_name(r->aux));
		annot_u(&an, (r->aux == PT_ERRC_IO || r->aux == PT_ERRC_SNAPSHOT || r->aux == PT_ERRC_ROTATE) ? AN_ERRNO : AN_COUNT, r->value);
		emit_instant(c, seq, track, ts, "ptz: recorder error", &an);
	}
}

/* TYPE_COUNTER @v on counter track @uuid (already described). */
static void counter_value(struct pctx *c, uint32_t seq, uint64_t ts, uint64_t uuid, int64_t v)
{
	Perfetto__Protos__TrackEvent te = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	Perfetto__Protos__TracePacket p;
	te.has_type = 1;
	te.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER;
	te.has_track_uuid = 1;
	te.track_uuid = uuid;
	te.counter_value_field_case = PERFETTO__PROTOS__TRACK_EVENT__COUNTER_VALUE_FIELD_COUNTER_VALUE;
	te.counter_value = v;
	packet_init(&p, seq, ts, 0);
	p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
	p.track_event = &te;
	put_packet(c, &p);
}

/* Adds counter @id to @set unless it is there already: returns 1 when @id is
 * new (TP needs its descriptor before the first value, in file order), 0
 * when it was known, -ENOMEM (recorded in @c) when the set cannot grow. */
static int first_seen(struct pctx *c, struct id_set *set, uint32_t id)
{
	for (size_t i = 0; i < set->n; i++)
		if (set->ids[i] == id)
			return 0;
	if (set->n == set->cap) {
		size_t nc = set->cap ? set->cap * 2 : 8;
		uint32_t *n = realloc(set->ids, nc * sizeof(*n));
		if (!n)
			return fail(c, -ENOMEM, "out of memory%s", "");
		set->ids = n;
		set->cap = nc;
	}
	set->ids[set->n++] = id;
	return 1;
}

/* The descriptor of track @uuid under @parent, named @name, a counter track
 * described by @cd (NULL: a plain track), in a packet of sequence @seq at
 * @ts with sequence @flags. */
static void emit_track(struct pctx *c, uint32_t seq, uint64_t ts, uint32_t flags, uint64_t uuid, uint64_t parent,
		       const char *name, Perfetto__Protos__CounterDescriptor *cd)
{
	Perfetto__Protos__TrackDescriptor td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
	Perfetto__Protos__TracePacket p;
	td.has_uuid = 1;
	td.uuid = uuid;
	td.has_parent_uuid = 1;
	td.parent_uuid = parent;
	td.static_or_dynamic_name_case = PERFETTO__PROTOS__TRACK_DESCRIPTOR__STATIC_OR_DYNAMIC_NAME_NAME;
	td.name = (char *)name;
	td.counter = cd;
	packet_init(&p, seq, ts, flags);
	p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR;
	p.track_descriptor = &td;
	put_packet(c, &p);
}

/* A COUNTER of an application thread: a counter track under its thread. */
static void emit_counter(struct pctx *c, uint64_t ts, uint32_t id, int64_t v)
{
	const uint64_t uuid = uu(c, PFX_UUID_COUNTER(c->index, id));
	const int seen = first_seen(c, &c->counters, id);
	if (seen < 0)
		return;
	if (seen) {
		char tmp[48], name[300];
		Perfetto__Protos__CounterDescriptor cd = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__INIT;
		snprintf(name, sizeof(name), "%s (tid %" PRIu32 ")", name_of(c, id, tmp, sizeof(tmp)), c->tid);
		emit_track(c, c->seq, ts, 0, uuid, c->track, utf8_of(c, name), &cd); /* a cut may split a character */
	}
	counter_value(c, c->seq, ts, uuid, v);
}

/* Whether a process-scoped counter's name says it counts bytes. */
static bool name_says_bytes(const char *s)
{
	static const char *const words[] = { "memory", "rss", "bytes" };
	for (const char *p = s; *p; p++)
		for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++) {
			size_t k = 0;
			while (words[w][k] && p[k] && (p[k] | 0x20) == words[w][k])
				k++;
			if (!words[w][k])
				return true;
		}
	return false;
}

/* Whether a process-scoped counter's name says it counts ns ("process CPU user (ns)"). */
static bool name_says_ns(const char *s)
{
	const size_t n = strlen(s);
	return n > 5 && strcmp(s + n - 5, " (ns)") == 0;
}

/* A COUNTER of a "ptz-gpu" or the flusher's thread: a process-scoped counter
 * track (parent = the process track, named by the counter alone) on
 * sequence 1; unit bytes or ns when its name says so. */
static void emit_pcounter(struct pctx *c, uint64_t ts, uint32_t id, int64_t v)
{
	const uint64_t uuid = uu(c, PFX_UUID_PCOUNTER(id));
	const int seen = first_seen(c, &c->pcounters, id);
	if (seen < 0)
		return;
	if (seen) {
		char tmp[48];
		const char *name = name_of(c, id, tmp, sizeof(tmp));
		Perfetto__Protos__CounterDescriptor cd = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__INIT;
		if (name_says_bytes(name)) {
			cd.has_unit = 1;
			cd.unit = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__UNIT__UNIT_SIZE_BYTES;
		} else if (name_says_ns(name)) {
			cd.has_unit = 1;
			cd.unit = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__UNIT__UNIT_TIME_NS;
		}
		emit_track(c, c->seq_base + PFX_SEQ_PROCESS, ts, 0, uuid, uu(c, PFX_UUID_PROCESS), name, &cd);
	}
	counter_value(c, c->seq_base + PFX_SEQ_PROCESS, ts, uuid, v);
}

/* ==== Descriptors ==== */

static void emit_process(struct pctx *c)
{
	const struct pt_trace_info *in = c->info;
	char *cmd = strdup(in->cmdline ? utf8_of(c, in->cmdline) : ""); /* a copy: process_name reuses the scratch */
	char *args[64];
	size_t nargs = 0;
	if (!cmd) {
		fail(c, -ENOMEM, "out of memory%s", "");
		return;
	}
	for (char *save = NULL, *t = strtok_r(cmd, " ", &save); t && nargs < 64; t = strtok_r(NULL, " ", &save))
		args[nargs++] = t;
	Perfetto__Protos__ProcessDescriptor pd = PERFETTO__PROTOS__PROCESS_DESCRIPTOR__INIT;
	Perfetto__Protos__TrackDescriptor td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
	Perfetto__Protos__TracePacket p;
	pd.has_pid = 1;
	pd.pid = c->pid;
	pd.n_cmdline = nargs;
	pd.cmdline = args;
	char pname[512];
	pd.process_name = (char *)utf8_of(c, pfx_process_name(in, "ptz process", pname, sizeof(pname)));
	td.has_uuid = 1;
	td.uuid = uu(c, PFX_UUID_PROCESS);
	td.process = &pd;
	packet_init(&p, c->seq_base + PFX_SEQ_PROCESS, start_ns(c),
		    PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_INCREMENTAL_STATE_CLEARED);
	p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR;
	p.track_descriptor = &td;
	put_packet(c, &p);
	free(cmd);
}

/* The sequence's first packet: thread track, CLEARED|NEEDS, defaults. */
static void emit_thread(struct pctx *c, const struct pt_thread_info *ti)
{
	char tmp[PFX_THREAD_NAME_BYTES], name[64];
	snprintf(name, sizeof(name), "%s", pfx_thread_name(ti, tmp)); /* repaired below: a cut may split a character */
	Perfetto__Protos__ThreadDescriptor thd = PERFETTO__PROTOS__THREAD_DESCRIPTOR__INIT;
	Perfetto__Protos__TrackDescriptor td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
	Perfetto__Protos__TrackEventDefaults ted = PERFETTO__PROTOS__TRACK_EVENT_DEFAULTS__INIT;
	Perfetto__Protos__TracePacketDefaults dfl = PERFETTO__PROTOS__TRACE_PACKET_DEFAULTS__INIT;
	Perfetto__Protos__TracePacket p;
	thd.has_pid = 1;
	thd.pid = c->pid;
	thd.has_tid = 1;
	thd.tid = c->export_tid;
	thd.thread_name = (char *)utf8_of(c, name);
	td.has_uuid = 1;
	td.uuid = c->track;
	td.thread = &thd;
	ted.has_track_uuid = 1;
	ted.track_uuid = c->track;
	dfl.track_event_defaults = &ted;
	packet_init(&p, c->seq, start_ns(c),
		    PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_INCREMENTAL_STATE_CLEARED |
			    PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_NEEDS_INCREMENTAL_STATE);
	p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR;
	p.track_descriptor = &td;
	p.trace_packet_defaults = &dfl;
	put_packet(c, &p);
}

/* ==== GPU and async sequences (layout: pfx_ranges.h) ==== */

static inline bool in_window(const struct pctx *c, uint64_t ticks)
{
	return ticks >= c->since_ticks && ticks <= c->until_ticks;
}


/* A plain track descriptor on the current sequence; @first carries the
 * sequence's CLEARED|NEEDS flags. */
static void emit_plain_track(struct pctx *c, uint64_t uuid, uint64_t parent, const char *name, bool first)
{
	emit_track(c, c->seq, start_ns(c),
		   first ? PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_INCREMENTAL_STATE_CLEARED |
				   PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_NEEDS_INCREMENTAL_STATE
			 : 0,
		   uuid, parent, name, NULL);
}

static void new_sequence(struct pctx *c, uint32_t seq)
{
	c->seq = seq;
	c->an_seq = 0;
	if (c->interned)
		memset(c->interned, 0, c->interned_words * sizeof(*c->interned));
	c->nfar = 0;
}

/* Marks the GPU ranges inside the window (before any CPU section is written,
 * which links to a range only if it is kept). */
static void gpu_keep(struct pctx *c)
{
	c->gpu_no_lane = pfx_gpu_keep(&c->gpu, c->since_ticks, c->until_ticks, &c->gpu_no_lane_ticks);
}

/* The rates of GPU range @r over its GPU time, as the analyzer's
 * gpu_self_* figures (doc/analyzer-output.md §3.1): what its launching
 * section declared itself over the measured range (end - raw start, the
 * duration the analyzer uses); none where the range has no duration. */
static void gpu_rate_annots(struct pctx *c, struct annots *an, const struct pfx_gpu_range *r)
{
	static const enum pfx_an xnames[NDIR] = { AN_GPU_H2D_GB_PER_S, AN_GPU_D2H_GB_PER_S, AN_GPU_D2D_GB_PER_S,
						   AN_GPU_P2P_GB_PER_S };
	const uint64_t s = ns_of(c, r->raw_start_ticks), e = ns_of(c, r->end_ticks);
	if (e <= s)
		return;
	const double dur = (double)(e - s);
	const uint64_t bytes = r->m_self[M_READ] + r->m_self[M_WRITTEN];
	if (bytes)
		annot_d(an, AN_GPU_GB_PER_S, (double)bytes / dur);
	if (r->m_self[M_FLOPS])
		annot_d(an, AN_GPU_GFLOP_PER_S, (double)r->m_self[M_FLOPS] / dur);
	for (int k = 0; k < NDIR; k++)
		if (r->x_self[k])
			annot_d(an, xnames[k], (double)r->x_self[k] / dur);
}

static void emit_gpu(struct pctx *c)
{
	const struct pfx_gpu *g = &c->gpu;
	bool *lane_used = calloc(g->nlanes + 1, sizeof(bool));
	bool *dev_used = calloc(g->ndevices + 1, sizeof(bool));
	bool any = false;
	if (!lane_used || !dev_used) {
		fail(c, -ENOMEM, "out of memory%s", "");
		goto out;
	}
	for (size_t i = 0; i < g->n; i++)
		if (g->r[i].flags & PFX_GPU_KEEP) {
			lane_used[g->r[i].lane] = true;
			dev_used[g->lanes[g->r[i].lane].device_index] = true;
			any = true;
		}
	if (!any)
		goto out;
	new_sequence(c, c->seq_base + PFX_SEQ_THREAD0 + c->nthreads);
	bool first = true;
	char name[64];
	for (size_t k = 0; k < g->ndevices; k++)
		if (dev_used[k]) {
			snprintf(name, sizeof(name), "GPU %" PRIu32, g->devices[k]);
			emit_plain_track(c, uu(c, PFX_UUID_GPU_DEVICE(k)), uu(c, PFX_UUID_PROCESS), name, first);
			first = false;
		}
	for (size_t i = 0; i < g->nlanes; i++)
		if (lane_used[i]) {
			const struct pfx_gpu_lane *l = &g->lanes[i];
			if (l->stream <= UINT32_MAX) /* ids from cudaStreamGetId are small */
				snprintf(name, sizeof(name), "stream %" PRIu64, l->stream);
			else /* a handle's value */
				snprintf(name, sizeof(name), "stream 0x%" PRIx64, l->stream);
			emit_plain_track(c, uu(c, PFX_UUID_GPU_LANE(i)), uu(c, PFX_UUID_GPU_DEVICE(l->device_index)), name, false);
		}
	for (size_t i = 0; i < g->n && !c->err; i++) {
		const struct pfx_gpu_range *r = &g->r[i];
		if (!(r->flags & PFX_GPU_KEEP))
			continue;
		struct annots an = { .n = 0 };
		if (r->raw_start_ticks < r->launch_ticks) /* clamped: keep the measured offset */
			annot_i(&an, AN_GPU_START_OFFSET_NS,
				(int64_t)(ns_of(c, r->raw_start_ticks) - ns_of(c, r->launch_ticks)));
		if (r->snap_ticks) /* moved to the end of the range before it (jitter) */
			annot_u(&an, AN_GPU_START_SNAPPED_NS,
				ns_of(c, r->start_ticks) - ns_of(c, r->start_ticks - r->snap_ticks));
		gpu_rate_annots(c, &an, r);
		const struct ev b = { .type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN,
				      .track = uu(c, PFX_UUID_GPU_LANE(r->lane)),
				      .named = true,
				      .name_id = r->name_id,
				      .term = (r->flags & PFX_GPU_LINKED) ? r->seq : 0,
				      .an = &an };
		const struct ev e = { .type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END,
				      .track = uu(c, PFX_UUID_GPU_LANE(r->lane)) };
		emit_ev(c, ns_of(c, r->start_ticks), &b);
		emit_ev(c, ns_of(c, r->end_ticks), &e);
	}
out:
	free(lane_used);
	free(dev_used);
	/* ranges with no lane (PFX_GPU_MAX_LANES): not drawn, counted in one
	 * instant at the first */
	if (c->gpu_no_lane && !c->err) {
		struct annots an = { .n = 0 };
		annot_u(&an, AN_COUNT, c->gpu_no_lane);
		annot_u(&an, AN_MAX_LANES_PER_STREAM, PFX_GPU_MAX_LANES);
		emit_instant(c, c->seq_base + PFX_SEQ_PROCESS, uu(c, PFX_UUID_PROCESS), ns_of(c, c->gpu_no_lane_ticks),
			     "ptz: GPU ranges not drawn (overlapping on one stream beyond its lanes)", &an);
	}
}

static void emit_async(struct pctx *c)
{
	struct pfx_async *a = &c->async;
	bool *lane_used = NULL;
	int rc = pfx_async_finish(a, pfx_trace_end_ticks(c->rd));
	if (rc) {
		fail(c, rc, "out of memory%s", "");
		return;
	}
	lane_used = calloc((size_t)a->nlanes + 1, sizeof(bool));
	if (!lane_used) {
		fail(c, -ENOMEM, "out of memory%s", "");
		return;
	}
	bool any = false;
	for (size_t i = 0; i < a->n; i++) {
		const struct pfx_async_range *r = &a->r[i];
		if (in_window(c, r->begin_ticks) && in_window(c, r->end_ticks))
			any = lane_used[r->lane] = true;
	}
	if (any) {
		new_sequence(c, c->seq_base + PFX_SEQ_THREAD0 + c->nthreads + 1);
		bool first = true;
		for (uint32_t l = 0; l < a->nlanes; l++)
			if (lane_used[l]) {
				emit_plain_track(c, uu(c, PFX_UUID_ASYNC_LANE(l)), uu(c, PFX_UUID_PROCESS), "async ranges", first);
				first = false;
			}
		for (size_t i = 0; i < a->n && !c->err; i++) {
			const struct pfx_async_range *r = &a->r[i];
			const uint64_t b_ns = ns_of(c, r->begin_ticks), e_ns = ns_of(c, r->end_ticks);
			if (!in_window(c, r->begin_ticks) || !in_window(c, r->end_ticks))
				continue;
			struct annots ab = { .n = 0 }, ae = { .n = 0 };
			annot_u(&ab, AN_BEGIN_TID, r->begin_thread);
			if (r->open_at_end)
				annot_b(&ae, AN_OPEN_AT_END, true);
			else
				annot_u(&ab, AN_END_TID, r->end_thread);
			const struct ev b = { .type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN,
					      .track = uu(c, PFX_UUID_ASYNC_LANE(r->lane)),
					      .named = true,
					      .name_id = r->name_id,
					      .an = &ab };
			const struct ev e = { .type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END,
					      .track = uu(c, PFX_UUID_ASYNC_LANE(r->lane)),
					      .an = ae.n ? &ae : NULL };
			emit_ev(c, b_ns, &b);
			emit_ev(c, e_ns, &e);
		}
	}
	free(lane_used);
	/* ASYNC_ENDs with no begin: skipped, counted in one instant at the first */
	uint64_t n = 0, first_ns = 0;
	for (size_t i = 0; i < a->nunmatched; i++) {
		const uint64_t t = a->unmatched_end_ticks[i];
		if (in_window(c, t) && !n++)
			first_ns = ns_of(c, t);
	}
	if (n && !c->err) {
		struct annots an = { .n = 0 };
		annot_u(&an, AN_COUNT, n);
		emit_instant(c, c->seq_base + PFX_SEQ_PROCESS, uu(c, PFX_UUID_PROCESS), first_ns, "ptz: async ends without a begin", &an);
	}
}

/* ==== Per-thread nesting (replay/replay.h rules, as the analyzer) ==== */

/* The frame's sums, zeroed at their first use. */
static inline struct frame *frame_m(struct frame *f)
{
	if (!f->has_m) {
		memset(&f->s, 0, sizeof(f->s));
		f->has_m = true;
	}
	return f;
}

/* Pops the top frame, closed at @end_ns (ns_of() of its end; pass 2 only); @emit = pass 2.
 * Inlined: the call and its saved registers were 18 instructions an END. */
static inline __attribute__((always_inline)) void close_top(struct pctx *c, uint64_t end_ns, bool emit,
							  enum pfx_an mark)
{
	struct frame *f = &c->st[--c->depth];
	if (c->depth && f->has_m) /* rule 6: inclusive amounts roll up into the parent */
		rp_sums_roll_up(&frame_m(&c->st[c->depth - 1])->s, &f->s);
	if (f->gpu && f->has_m) { /* its GPU range's rates use what it declared itself */
		memcpy(f->gpu->m_self, f->s.m_self, sizeof(f->gpu->m_self));
		memcpy(f->gpu->x_self, f->s.x_self, sizeof(f->gpu->x_self));
	}
	if (emit && f->emitted) {
		c->emitted_depth--;
		emit_end(c, f, end_ns, mark);
	}
}

static void close_all(struct pctx *c, bool emit, enum pfx_an mark)
{
	const uint64_t end_ns = emit && c->depth ? ns_of(c, c->last_ticks) : 0;
	while (c->depth)
		close_top(c, end_ns, emit, mark);
}

static struct frame *push(struct pctx *c)
{
	if (c->depth == c->cap) {
		uint32_t nc = c->cap ? c->cap * 2 : 64;
		struct frame *s = realloc(c->st, nc * sizeof(*s));
		if (!s) {
			fail(c, -ENOMEM, "out of memory%s", "");
			return NULL;
		}
		c->st = s;
		c->cap = nc;
	}
	return &c->st[c->depth++];
}

/*
 * One pass over a thread's records. Pass 1 (@emit false, only with an
 * `until`) stops at the first timed record after `until` and stores the
 * BEGIN ordinals of the sections open there in c->drop. Pass 2 writes.
 */
static int thread_pass(struct pctx *c, bool emit)
{
	struct pt_chunk_info ci;
	struct pt_record r;
	struct rp_thread rt = { 0 }; /* replay/replay.h: the nesting rules the analyzer follows */
	struct pfx_gpu_range *launch_g = NULL; /* the range the GPU_LAUNCH just read took (rule 9) */
	int rc;
	c->depth = c->emitted_depth = 0;
	c->ord = 0;
	c->last_ticks = 0;
	c->kdrop = 0;
	pt_reader_rewind(c->rd);
	while ((rc = pt_reader_next_chunk(c->rd, c->index, &ci, sizeof(ci))) == 1) {
		if (rp_chunk(&rt, ci.sequence)) { /* rule 1: chunks lost, the open stack is cut */
			close_all(c, emit, AN_CUT_BY_GAP);
			rp_cut(&rt);
		}
		struct rp_dec dec;
		rp_dec_start(&dec, c->rd);
		/* BEGIN, END and METRIC in these locals (registers); r for the rest */
		uint32_t kind, id, aux;
		uint64_t value, ticks;
		while ((rc = rp_dec_next_rec(&dec, &r, &kind, &id, &aux, &value, &ticks)) == 1) {
			const bool timed = kind != PT_REC_METRIC && kind != PT_REC_TRANSFER;
			const uint64_t launch_seq = rp_launch_of(&rt, kind, id); /* rule 8 */
			uint64_t ns = 0;
			ticks = rp_ticks(&rt, kind, ticks); /* rule 2: never back in time on the track */
			if (timed && kind < PT_REC_INSTANT) {
				if (emit) /* pass 1 writes nothing */
					ns = ns_of(c, ticks);
				if (!emit && ticks > c->until_ticks) {
					c->ndrop = 0;
					for (uint32_t i = 0; i < c->depth; i++) {
						if (c->ndrop == c->dcap) {
							size_t nc = c->dcap ? c->dcap * 2 : 64;
							uint64_t *d = realloc(c->drop, nc * sizeof(*d));
							if (!d)
								return fail(c, -ENOMEM, "out of memory%s", "");
							c->drop = d;
							c->dcap = nc;
						}
						c->drop[c->ndrop++] = c->st[i].ord;
					}
					return 0;
				}
				c->last_ticks = ticks; /* the latest: rule 2 never goes back */
			}
			switch (kind) {
			case PT_REC_BEGIN: {
				if (!rp_begin(&rt, c->depth)) /* rule 3: too deep, not drawn */
					break;
				struct frame *f = push(c);
				if (!f)
					return c->err;
				f->id = id;
				f->start_ticks = ticks;
				f->start_ns = ns;
				f->ord = c->ord++;
				f->has_m = false;
				f->emitted = false;
				f->gpu = launch_seq ? launch_g : NULL;
				if (!emit)
					break;
				bool dropped = false;
				while (c->kdrop < c->ndrop && c->drop[c->kdrop] < f->ord)
					c->kdrop++;
				if (c->kdrop < c->ndrop && c->drop[c->kdrop] == f->ord)
					dropped = true;
				if (!dropped && in_window(c, ticks) && c->emitted_depth < PFX_MAX_DEPTH) {
					/* the section a GPU_LAUNCH marks starts the flow to
					 * its GPU range (its launch's alone: pfx_gpu_launch()),
					 * if that range is written too */
					struct pfx_gpu_range *g = f->gpu && (f->gpu->flags & PFX_GPU_KEEP) ? f->gpu : NULL;
					f->emitted = true;
					c->emitted_depth++;
					emit_begin(c, ns, id, g ? g->seq : 0);
					if (g)
						g->flags |= PFX_GPU_LINKED;
				}
				break;
			}
			case PT_REC_END: {
				uint32_t n = RP_END(&rt, c->st, c->depth, id); /* rules 3, 4 */
				if (n == RP_END_TOO_DEEP)
					break;
				while (n-- > 0) /* 0: matches no open section, dropped */
					close_top(c, ns, emit, AN_NONE);
				break;
			}
			case PT_REC_METRIC:
			case PT_REC_TRANSFER: /* rule 6 */
				if (c->depth && rp_sums_aux_ok(kind, aux))
					rp_sums_add(&frame_m(&c->st[c->depth - 1])->s, kind, aux, value);
				break;
			case PT_REC_COUNTER:
				if (emit && in_window(c, ticks)) {
					if (c->routed)
						emit_pcounter(c, ns, id, (int64_t)value);
					else
						emit_counter(c, ns, id, (int64_t)value);
				}
				break;
			case PT_REC_LOSS:
			case PT_REC_ERROR:
				r.ticks = ticks; /* the kinds read from r: rule 2's tick */
				if (emit && in_window(c, ticks)) {
					if (c->routed)
						emit_loss_or_error(c, c->seq_base + PFX_SEQ_PROCESS, uu(c, PFX_UUID_PROCESS), &r);
					else
						emit_loss_or_error(c, c->seq, 0, &r);
				}
				break;
			case PT_REC_INSTANT:
				ns = ns_of(c, ticks);
				if (emit && in_window(c, ticks)) {
					if (c->routed) {
						char tmp[48];
						const struct annots none = { .n = 0 };
						emit_instant(c, c->seq_base + PFX_SEQ_PROCESS, uu(c, PFX_UUID_PROCESS), ns,
							     name_of(c, id, tmp, sizeof(tmp)), &none);
					} else {
						const struct ev e = { .type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT,
								      .named = true,
								      .name_id = id };
						emit_ev(c, ns, &e);
					}
				}
				break;
			case PT_REC_GPU_LAUNCH:
				r.ticks = ticks;
				rp_launch_note(&rt, &r);
				/* rule 9 (replay/pair.h): the launch takes its range, once (pass 2) */
				launch_g = emit ? pfx_gpu_launch(&c->gpu, r.value2) : NULL;
				break;
			case PT_REC_ASYNC_BEGIN:
			case PT_REC_ASYNC_END:
				r.ticks = ticks;
				if (emit && pfx_async_add(&c->async, &r, c->export_tid))
					return fail(c, -ENOMEM, "out of memory%s", "");
				break;
			default: /* GPU_RANGE: read by pfx_gpu_collect(); reserved kinds */
				break;
			}
			if (c->err)
				return c->err;
		}
		if (rc < 0 && rc != -PT_ECORRUPT)
			break;
	}
	if (rc < 0)
		return fail(c, rc, "%s", pt_reader_errmsg(c->rd));
	if (!emit) {
		c->ndrop = 0; /* never passed `until`: nothing to drop */
		return 0;
	}
	close_all(c, emit, AN_OPEN_AT_END);
	return c->err;
}

static int export_thread(struct pctx *c, size_t pos, const struct pt_thread_info *ti)
{
	c->seq = c->seq_base + PFX_SEQ_THREAD0 + (uint32_t)pos;
	c->index = ti->index;
	c->tid = ti->tid;
	c->track = uu(c, PFX_UUID_THREAD(ti->index));
	c->counters.n = 0;
	c->ndrop = 0;
	c->export_tid = pfx_thread_tid(ti); /* the Chrome JSON's too; a lost tid is made up there */
	bool sections = true;
	c->routed = pfx_gpu_thread(&c->gpu, ti->index, &sections);
	/* the recorder's flusher samples the process (RSS, CPU time, switches) and the system (steal,
	 * load): process-scoped counter tracks, not "process RSS (tid N)" under a thread of no sections */
	c->routed |= strcmp(ti->name, PT_FMT_FLUSHER_THREAD_NAME) == 0;
	if (c->interned)
		memset(c->interned, 0, c->interned_words * sizeof(*c->interned));
	c->nfar = 0;
	c->an_seq = 0;
	if (sections) /* a "ptz-gpu" thread without sections gets no track */
		emit_thread(c, ti);
	if (c->until_set) {
		int rc = thread_pass(c, false);
		if (rc)
			return rc;
	}
	return thread_pass(c, true);
}

/* Writes the trace at @path as file @place->file of the output: its process
 * and thread sequences after the earlier files' (c->seq_base), its uuids
 * and flow ids apart from theirs (uu()). The output buffer, the packing
 * and name scratch buffers stay for the next file; the rest is freed. */
static void export_file(struct pctx *c, const char *path, const struct pfx_opts *o, const struct pfx_set_place *place)
{
	int rc = pt_reader_open_trace(path, &c->rd);
	if (rc == 0)
		rp_ns_init(&c->ns, c->rd);
	if (rc) {
		fail(c, rc, "%s", c->rd ? pt_reader_errmsg(c->rd) : strerror(-rc));
		goto done;
	}
	c->info = pt_reader_info(c->rd);
	c->file = place->file;
	c->pid = place->pid;
	c->ts_shift = place->ts_shift;
	c->an_proc = 0;
	c->until_set = o && o->until_ns;
	pfx_window_ticks(c->rd, o ? o->since_ns : 0, o ? o->until_ns : 0, &c->since_ticks, &c->until_ticks);

	emit_process(c);
	rc = pfx_gpu_collect(&c->gpu, c->rd); /* before any thread: CPU sections link to it */
	if (rc)
		fail(c, rc, "%s", rc == -ENOMEM ? "out of memory" : pt_reader_errmsg(c->rd));
	gpu_keep(c);
	/* process-wide LOSS / ERROR records from the meta chunks */
	{
		struct pt_chunk_info ci;
		struct pt_record r;
		while (!c->err && (rc = pt_reader_next_chunk(c->rd, PT_FMT_META_THREAD, &ci, sizeof(ci))) == 1)
			while (!c->err && pt_reader_next_record(c->rd, &r, sizeof(r)) == 1)
				if ((r.kind == PT_REC_LOSS || r.kind == PT_REC_ERROR) && in_window(c, r.ticks))
					emit_loss_or_error(c, c->seq_base + PFX_SEQ_PROCESS, uu(c, PFX_UUID_PROCESS), &r);
		if (rc < 0)
			fail(c, rc, "%s", pt_reader_errmsg(c->rd));
	}
	const size_t nthreads = pt_reader_thread_count(c->rd);
	c->nthreads = (uint32_t)nthreads;
	for (size_t i = 0; i < nthreads && !c->err; i++) {
		struct pt_thread_info ti;
		if (pt_reader_thread(c->rd, i, &ti, sizeof(ti)) == 1)
			export_thread(c, i, &ti);
	}
	if (!c->err && c->gpu.n)
		emit_gpu(c);
	if (!c->err && c->async.ready)
		emit_async(c);
	/* the process, its threads, the GPU and the async sequences: the next file's come after */
	c->seq_base += PFX_SEQ_THREAD0 + c->nthreads + 2;
	if (!c->err && o && o->file_read)
		o->file_read(o->file_read_ctx, place->file, c->rd);
done:
	c->depth = c->emitted_depth = 0;
	c->counters.n = c->pcounters.n = 0;
	c->ndrop = c->kdrop = 0;
	pfx_gpu_free(&c->gpu); /* emptied, ready for the next file */
	pfx_async_free(&c->async);
	c->gpu_no_lane = 0;
	pt_reader_close(c->rd);
	c->rd = NULL;
	c->info = NULL;
}

int pfx_write_perfetto_set(const char *const *paths, size_t n, FILE *out, const struct pfx_opts *o, char *err,
			   size_t errlen)
{
	struct pctx c = { .f = out, .msg = err, .msglen = errlen };
	static char dummy[1];
	if (!c.msg || !c.msglen) {
		c.msg = dummy;
		c.msglen = sizeof(dummy);
	}
	c.msg[0] = '\0';
	struct pfx_set_place *place = calloc(n ? n : 1, sizeof(*place));
	c.out = malloc(PFX_OUT_BYTES);
	if (!place || !c.out) {
		fail(&c, -ENOMEM, "out of memory%s", "");
		goto done;
	}
	size_t bad = 0;
	int rc = pfx_set_places(paths, n, place, &bad, c.msg, c.msglen);
	if (rc) {
		c.err = rc;
		goto done;
	}
	for (size_t k = 0; k < n && !c.err; k++) {
		export_file(&c, paths[k], o, &place[k]);
		if (c.err && n > 1)
			pfx_set_name_file(c.msg, c.msglen, paths[k]);
	}
	out_flush(&c);
	if (!c.err && fflush(out))
		fail(&c, errno ? -errno : -EIO, "cannot write the trace: %s", strerror(errno ? errno : EIO));
done:
	free(place);
	free(c.scratch_name);
	free(c.out);
	free(c.pk);
	free(c.st);
	free(c.interned);
	free(c.interned_far);
	free(c.counters.ids);
	free(c.pcounters.ids);
	free(c.drop);
	return c.err;
}

int pfx_write_perfetto(const char *trace_path, FILE *out, const struct pfx_opts *o, char *err, size_t errlen)
{
	return pfx_write_perfetto_set(&trace_path, 1, out, o, err, errlen);
}
