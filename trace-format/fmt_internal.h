/*
 * trace-format/fmt_internal.h - encoder, chunk framing and file writer of
 * the .ptz format (internal to libptz; the recorder and tests use it).
 *
 * Layout facts cited as §N refer to doc/trace-format.md, which is normative.
 */
#ifndef PTZ_FMT_INTERNAL_H
#define PTZ_FMT_INTERNAL_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint*_t */
#include <string.h> /* memcpy */

#include "common/compiler.h"
#include "ptz/format.h"

/* §2 header field offsets. */
#define FMT_MAGIC "PTZTRACE"
#define FMT_OFF_VERSION_MAJOR 8
#define FMT_OFF_VERSION_MINOR 10
#define FMT_OFF_HEADER_BYTES 12
#define FMT_OFF_CLOCK_SOURCE 16
#define FMT_OFF_PID 20
#define FMT_OFF_START_TICKS 24
#define FMT_OFF_START_MONO 32
#define FMT_OFF_START_REAL 40
#define FMT_OFF_PROCESS 64   /* u16 length + 254 bytes */
#define FMT_OFF_HOST 320     /* u16 length + 254 bytes */
#define FMT_OFF_VERSION 576  /* u16 length + 62 bytes */
#define FMT_OFF_CMDLINE 640  /* u16 length + 3070 bytes */
#define FMT_SHORT_FIELD 256
#define FMT_VERSION_FIELD 64
#define FMT_CMDLINE_FIELD 3072
#define FMT_OFF_JOB 3712     /* 1.2: u16 length + 126 bytes: the batch job (SLURM_JOB_ID...) */
#define FMT_JOB_FIELD 128
#define FMT_OFF_RANK 3840    /* 1.2: u32, the process's rank in its job + 1; 0 = none */
#define FMT_OFF_RUN_ID 56    /* 1.3: u64, the run of a rotated trace (§11); 0 = not rotated */
#define FMT_OFF_PART 3844    /* 1.3: u32, the part's number in that run, from 1; 0 = not rotated */
#define FMT_OFF_HEADER_XXH 4000 /* XXH3-64 of bytes [0, 4000) */
#define FMT_OFF_COMMITTED 4032  /* u64, mutable */
#define FMT_OFF_FLAGS 4040      /* u64, mutable; bit 0 = closed */
#define FMT_FLAG_CLOSED 1u
#define FMT_FLAG_FLIGHT 2u      /* 1.2: the chunk area is circular (§10) */
#define FMT_FLAG_WINDOW 4u      /* 1.2: the chunks are a window of a longer run (§10) */
#define FMT_OFF_FLIGHT_BYTES 48 /* u64, static (checksummed): circular area size; 0 = stream */
#define FMT_OFF_LAPS 4048       /* u64, mutable: times a flight writer wrapped (informative) */

/* §3 chunk header. */
#define FMT_CHUNK_MAGIC "PTZC"
#define FMT_CHUNK_EVENTS 1
#define FMT_CHUNK_META 2
#define FMT_COMP_NONE 0
#define FMT_COMP_ZSTD 1
#define FMT_CK_OFF_KIND 4
#define FMT_CK_OFF_COMP 5
#define FMT_CK_OFF_HDRLEN 6
#define FMT_CK_OFF_THREAD 8
#define FMT_CK_OFF_RECORDS 12
#define FMT_CK_OFF_SEQ 16
#define FMT_CK_OFF_FIRST 24
#define FMT_CK_OFF_LAST 32
#define FMT_CK_OFF_RAW 40
#define FMT_CK_OFF_STORED 44
#define FMT_CK_OFF_PAYLOAD_XXH 48
#define FMT_CK_OFF_HEADER_XXH 56 /* XXH3-64 of bytes [0, 56) */

/* §4 wire tags that differ from enum pt_record_kind. */
#define FMT_TAG_END_TOP 0x08     /* END of the innermost section begun in this chunk */
#define FMT_TAG_LEN_FIRST 0x40   /* tags >= this carry a varint length */
#define FMT_MAX_RECORD_BYTES 40  /* longest fixed-layout record: tag + 3 varints */
#define FMT_CHUNK_STACK 256      /* in-chunk stack depth that END_TOP may refer to */

/* Little-endian fixed-width access. */
static inline void fmt_put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void fmt_put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static inline void fmt_put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t fmt_get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t fmt_get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t fmt_get64(const uint8_t *p)
{
	return (uint64_t)fmt_get32(p) | (uint64_t)fmt_get32(p + 4) << 32;
}

/* LEB128 unsigned varint (§4.1); at most 10 bytes. */
static inline uint8_t *fmt_put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}
static inline uint64_t fmt_zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t fmt_unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

/*
 * struct fmt_enc - builds one chunk's raw payload (§4). Event chunks encode
 * ticks as deltas from the previous timed record (the first from
 * first_ticks) and END records whose section was begun in the same chunk
 * as the one-byte-id-less END_TOP. The chunk is self-contained: decoding
 * needs nothing from other chunks.
 */
struct fmt_enc {
	uint8_t *buf, *pos, *end; /* caller-owned buffer */
	uint64_t first_ticks, last_ticks, prev_ticks;
	uint32_t records;
	uint32_t depth;                    /* sections begun in this chunk and still open */
	uint32_t stack[FMT_CHUNK_STACK];   /* their ids, innermost last */
	int have_ticks;
};

/* Room left for at least one more fixed-layout record? */
static inline int fmt_enc_room(const struct fmt_enc *e, size_t need)
{
	return (size_t)(e->end - e->pos) >= need;
}
PT_INTERNAL void fmt_enc_reset(struct fmt_enc *e, uint8_t *buf, size_t cap);

/* Delta of @t from the previous timed record; clamps a backwards step to 0
 * (a thread's ticks never go back on an invariant TSC; §4.2). */
static inline uint64_t fmt_enc_dt(struct fmt_enc *e, uint64_t t)
{
	uint64_t dt;
	if (unlikely(!e->have_ticks)) {
		e->first_ticks = e->prev_ticks = t;
		e->have_ticks = 1;
	}
	dt = t >= e->prev_ticks ? t - e->prev_ticks : 0;
	e->prev_ticks += dt;
	e->last_ticks = e->prev_ticks;
	return dt;
}

static inline void fmt_enc_begin(struct fmt_enc *e, uint64_t t, uint32_t id)
{
	uint64_t dt = fmt_enc_dt(e, t);
	*e->pos++ = PT_REC_BEGIN;
	e->pos = fmt_put_varint(e->pos, dt);
	e->pos = fmt_put_varint(e->pos, id);
	if (e->depth < FMT_CHUNK_STACK)
		e->stack[e->depth] = id;
	e->depth++;
	e->records++;
}

static inline void fmt_enc_end(struct fmt_enc *e, uint64_t t, uint32_t id)
{
	uint64_t dt = fmt_enc_dt(e, t);
	if (e->depth > 0 && e->depth <= FMT_CHUNK_STACK && e->stack[e->depth - 1] == id) {
		*e->pos++ = FMT_TAG_END_TOP;
		e->pos = fmt_put_varint(e->pos, dt);
	} else {
		*e->pos++ = PT_REC_END;
		e->pos = fmt_put_varint(e->pos, dt);
		e->pos = fmt_put_varint(e->pos, id);
	}
	if (e->depth > 0)
		e->depth--;
	e->records++;
}

static inline void fmt_enc_pair(struct fmt_enc *e, uint8_t tag, uint64_t a, uint64_t b)
{
	*e->pos++ = tag;
	e->pos = fmt_put_varint(e->pos, a);
	e->pos = fmt_put_varint(e->pos, b);
	e->records++;
}

/* METRIC and TRANSFER carry no time (§4.3). */
static inline void fmt_enc_metric(struct fmt_enc *e, uint32_t kind, uint64_t v)
{
	fmt_enc_pair(e, PT_REC_METRIC, kind, v);
}
static inline void fmt_enc_transfer(struct fmt_enc *e, uint32_t dir, uint64_t bytes)
{
	fmt_enc_pair(e, PT_REC_TRANSFER, dir, bytes);
}
static inline void fmt_enc_timed3(struct fmt_enc *e, uint8_t tag, uint64_t t, uint64_t a, uint64_t b)
{
	uint64_t dt = fmt_enc_dt(e, t);
	*e->pos++ = tag;
	e->pos = fmt_put_varint(e->pos, dt);
	e->pos = fmt_put_varint(e->pos, a);
	e->pos = fmt_put_varint(e->pos, b);
	e->records++;
}
static inline void fmt_enc_counter(struct fmt_enc *e, uint64_t t, uint32_t id, int64_t v)
{
	fmt_enc_timed3(e, PT_REC_COUNTER, t, id, fmt_zigzag(v));
}
static inline void fmt_enc_loss(struct fmt_enc *e, uint64_t t, uint64_t records, uint64_t sections)
{
	fmt_enc_timed3(e, PT_REC_LOSS, t, records, sections);
}
static inline void fmt_enc_error(struct fmt_enc *e, uint64_t t, uint32_t code, uint64_t count)
{
	fmt_enc_timed3(e, PT_REC_ERROR, t, code, count);
}

/* Length-prefixed records (§4.4); return 0 or -PT_ETOOBIG if out of room. */
PT_INTERNAL int fmt_enc_string(struct fmt_enc *e, uint32_t id, uint32_t domain, const char *s, size_t len);
PT_INTERNAL int fmt_enc_domain(struct fmt_enc *e, uint32_t id, const char *s, size_t len);
PT_INTERNAL int fmt_enc_thread(struct fmt_enc *e, uint32_t index, uint32_t tid, uint64_t start_ticks,
			       uint64_t end_ticks, const char *name, size_t len);
PT_INTERNAL int fmt_enc_clock(struct fmt_enc *e, uint64_t ticks, uint64_t mono_ns, uint64_t real_ns,
			      uint32_t bracket_ticks);
/* INSTANT, ASYNC_BEGIN/END, GPU_LAUNCH: the five-varint layout of §4.4. */
PT_INTERNAL int fmt_enc_lp5(struct fmt_enc *e, uint8_t tag, uint32_t id, uint32_t aux, uint64_t value,
			    uint64_t value2, uint64_t ticks);
/* GPU_RANGE with the 1.1 trailing fields (§4.4). At most 72 bytes. */
PT_INTERNAL int fmt_enc_gpu_range(struct fmt_enc *e, uint32_t id, uint32_t device, uint64_t gpu_start,
				  uint64_t gpu_end, uint64_t launch_ticks, uint64_t seq, uint64_t stream);
/* Any length-prefixed record, for reserved kinds and tests (§4.4). */
PT_INTERNAL int fmt_enc_raw(struct fmt_enc *e, uint8_t tag, const uint8_t *payload, size_t len);
/* Encode one decoded record (tests, tools). */
PT_INTERNAL int fmt_enc_record(struct fmt_enc *e, const struct pt_record *rec);

/* Decoder over one raw payload (§4). */
struct fmt_dec {
	const uint8_t *pos, *end;
	uint64_t ticks;
	uint32_t depth;
	uint32_t stack[FMT_CHUNK_STACK];
};
PT_INTERNAL void fmt_dec_init(struct fmt_dec *d, const uint8_t *p, size_t len, uint64_t first_ticks);
/* 1 = record, 0 = end, -PT_ECORRUPT */
PT_INTERNAL int fmt_dec_next(struct fmt_dec *d, struct pt_record *out);

/*
 * Fused decoding (the analyzer's hot loop): a caller that decodes the
 * common section records itself, in its own loop, and hands every other
 * tag to fmt_dec_next(). The fast helpers below never read past
 * d->end: they are used only while FMT_DEC_FAST_SLACK bytes remain, which
 * covers the longest BEGIN, END, END_TOP or METRIC record (tag + two
 * 10-byte varints). They never report damage themselves: on anything
 * unusual (a varint longer than 10 bytes or above its field's range, a tick
 * overflow, END_TOP without a section begun in the chunk) they return 0
 * and leave the state unchanged, and fmt_dec_next() then decodes the same bytes
 * with the full checks (same records, same errors, same offsets).
 */
#define FMT_DEC_FAST_SLACK 24 /* >= 1 + 2 x 10: BEGIN, END, END_TOP, METRIC, TRANSFER */

/* A varint of at most 10 bytes at *p (no bounds check: see above); 0 if longer. */
static inline int fmt_fast_varint(const uint8_t **pp, uint64_t *out)
{
	const uint8_t *p = *pp;
	uint64_t v = p[0];
	if (v < 0x80) {
		*pp = p + 1;
		*out = v;
		return 1;
	}
	uint64_t b1 = p[1]; /* two bytes (names past 127, most metric amounts): no loop */
	if (b1 < 0x80) {
		*pp = p + 2;
		*out = (v & 0x7f) | b1 << 7;
		return 1;
	}
	v = (v & 0x7f) | (b1 & 0x7f) << 7;
	++p;
	for (int shift = 14; shift < 70; shift += 7) {
		uint8_t b = *++p;
		if (shift == 63 && b > 1)
			return 0;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (b < 0x80) {
			*pp = p + 1;
			*out = v;
			return 1;
		}
	}
	return 0;
}

/*
 * The decoder's moving parts, copied out of a struct fmt_dec for the fast
 * loop (fmt_fast_load/fmt_fast_store around every fmt_dec_next() call):
 * a local whose address never escapes stays in registers, while the
 * decoder itself sits in memory that every store of the caller might
 * alias. The in-chunk stack stays in the decoder (d->stack).
 */
struct fmt_fast {
	const uint8_t *pos;
	uint64_t ticks;
	uint32_t depth;
};
static inline void fmt_fast_load(struct fmt_fast *f, const struct fmt_dec *d)
{
	f->pos = d->pos;
	f->ticks = d->ticks;
	f->depth = d->depth;
}
static inline void fmt_fast_store(const struct fmt_fast *f, struct fmt_dec *d)
{
	d->pos = f->pos;
	d->ticks = f->ticks;
	d->depth = f->depth;
}

/* BEGIN (tag PT_REC_BEGIN at f->pos): 1 with *id, f->ticks advanced; 0 = use fmt_dec_next(). */
static inline int fmt_dec_fast_begin(struct fmt_fast *f, uint32_t *stack, uint32_t *id)
{
	const uint8_t *p = f->pos + 1;
	uint64_t dt, a;
	if (!fmt_fast_varint(&p, &dt) || !fmt_fast_varint(&p, &a) || a > UINT32_MAX || f->ticks + dt < f->ticks)
		return 0;
	f->pos = p;
	f->ticks += dt;
	if (f->depth < FMT_CHUNK_STACK)
		stack[f->depth] = (uint32_t)a;
	f->depth++;
	*id = (uint32_t)a;
	return 1;
}

/* END or END_TOP at f->pos: 1 with *id, f->ticks advanced; 0 = use fmt_dec_next(). */
static inline int fmt_dec_fast_end(struct fmt_fast *f, const uint32_t *stack, uint32_t *id)
{
	const uint8_t *p = f->pos + 1;
	uint64_t dt, a;
	if (!fmt_fast_varint(&p, &dt) || f->ticks + dt < f->ticks)
		return 0;
	if (f->pos[0] == FMT_TAG_END_TOP) {
		if (f->depth == 0 || f->depth > FMT_CHUNK_STACK)
			return 0;
		a = stack[f->depth - 1];
	} else if (!fmt_fast_varint(&p, &a) || a > UINT32_MAX) {
		return 0;
	}
	f->pos = p;
	f->ticks += dt;
	if (f->depth > 0)
		f->depth--;
	*id = (uint32_t)a;
	return 1;
}

/* METRIC or TRANSFER at f->pos (no tick of their own): 1 with *aux and
 * *value; 0 = use fmt_dec_next(). */
static inline int fmt_dec_fast_metric(struct fmt_fast *f, uint32_t *aux, uint64_t *value)
{
	const uint8_t *p = f->pos + 1;
	uint64_t a;
	if (!fmt_fast_varint(&p, &a) || a > UINT32_MAX || !fmt_fast_varint(&p, value))
		return 0;
	f->pos = p;
	*aux = (uint32_t)a;
	return 1;
}

/* The span of clock points the duration slope is fitted over (§7): from
 * the first point to the first one at least this many ns after it. */
#define FMT_SLOPE_SPAN_NS 1000000000u

struct pt_reader;
/*
 * fmt_reader_chunk_dec() - The decoder of the chunk opened by
 * pt_reader_next_chunk(), positioned where pt_reader_next_records() would
 * go on; NULL when no chunk is open (or damage is pending). The caller
 * decodes with it and then calls fmt_reader_chunk_done().
 */
PT_INTERNAL struct fmt_dec *fmt_reader_chunk_dec(struct pt_reader *r);
/* The string table's entries, in the order the trace defines them:
 * fmt_reader_string_id() of 0 <= @i < fmt_reader_string_count() (a
 * consumer that keys tables by name builds them from these, sized by the
 * names defined, not by the largest id). */
PT_INTERNAL size_t fmt_reader_string_count(const struct pt_reader *r);
PT_INTERNAL uint32_t fmt_reader_string_id(const struct pt_reader *r, size_t i);
/* fmt_reader_chunk_done() - Closes the chunk after fused decoding; @rc < 0
 * (what fmt_dec_next() returned) records the damage exactly as
 * pt_reader_next_records() does (damaged_chunks, a problem naming the
 * chunk's offset and the byte). */
PT_INTERNAL void fmt_reader_chunk_done(struct pt_reader *r, int rc);
/* fmt_reader_chunk_pos() - The position in the reader's chunk index of the
 * chunk pt_reader_next_chunk() last opened: the order in which
 * pt_reader_next_chunk(r, PT_READER_ALL_CHUNKS, ...) visits chunks (file
 * order, part after part of a rotated trace), the same in a
 * fmt_reader_dup() copy. */
PT_INTERNAL size_t fmt_reader_chunk_pos(const struct pt_reader *r);

/*
 * fmt_reader_seek() - Moves the chunk cursor to the first chunk at file
 * offset @off or beyond (pt_reader_next_chunk() goes on from there), by
 * binary search of the index: the incremental analysis (analyzer/ana_api.h)
 * reads only what was committed since its last update. Meaningful only for
 * a reader of one part that is not a flight file (its index is in file
 * order); -EINVAL otherwise, the cursor unchanged. 0 on success.
 */
PT_INTERNAL int fmt_reader_seek(struct pt_reader *r, uint64_t off);

/* round(): halves away from zero, without the libm call. Exact for every
 * finite |x| < 2^63: i = trunc(x) is representable, x - i is exact
 * (Sterbenz for |x| >= 1; x itself below), and x is already whole from
 * 2^52 on. NaN and larger magnitudes go to round(). */
static inline double fmt_round_half_away(double x)
{
	if (__builtin_expect(!(x > -9.2e18 && x < 9.2e18), 0))
		return __builtin_round(x);
	int64_t i = (int64_t)x;
	double f = x - (double)i;
	i += f >= 0.5 ? 1 : f <= -0.5 ? -1 : 0;
	return (double)i;
}

/* @n + @d, @d a whole number of ns (a rounded double), saturated to
 * [0, UINT64_MAX]: crafted clock tables must not cause undefined
 * conversions. The base point is added as an integer (§7), so a CLOCK_MONOTONIC
 * value above 2^53 ns (104 days of uptime) keeps its last bit. */
static inline uint64_t fmt_add_ns(uint64_t n, double d)
{
	if (d != d)
		return n;
	if (d >= 18446744073709551616.0)
		return UINT64_MAX;
	if (d <= -18446744073709551616.0)
		return 0;
	if (d >= 0) {
		uint64_t u = (uint64_t)d;
		return u > UINT64_MAX - n ? UINT64_MAX : n + u;
	}
	uint64_t u = (uint64_t)-d;
	return u > n ? 0 : n - u;
}

/* doc/trace-format.md §7 on the clock segment from (@t_lo, @n_lo), N_hi -
 * N_lo = @dn and T_hi - T_lo = @dt (as doubles): N_lo + round((t - T_lo) x
 * dn / dt), t - T_lo the exact difference (negative before T_lo), halves
 * away from zero. The one formula of pt_reader_ticks_to_ns() and struct
 * fmt_ns_conv. */
static inline uint64_t fmt_seg_ns(uint64_t t_lo, uint64_t n_lo, double dn, double dt, uint64_t t)
{
	double d;
	if (__builtin_expect(t >= t_lo && t - t_lo <= (uint64_t)INT64_MAX, 1))
		d = (double)(int64_t)(t - t_lo); /* the same value as through uint64_t, in one instruction */
	else
		d = t >= t_lo ? (double)(t - t_lo) : -(double)(t_lo - t);
	return fmt_add_ns(n_lo, fmt_round_half_away(d * dn / dt));
}

/*
 * struct fmt_ns_conv - pt_reader_ticks_to_ns() for one stream of ticks
 * (an exporter's thread, in record order): the clock segment found last
 * is tried first, so a conversion skips the search of the clock table.
 * The results are pt_reader_ticks_to_ns()'s bit for bit. The reader must
 * outlive it; one per thread of the caller.
 */
struct fmt_ns_conv {
	const struct pt_reader *r;
	uint64_t first, last;  /* ticks the cached segment converts (first > last: none yet) */
	uint64_t fast_first, fast_last; /* ticks of the segment the fast path converts (first > last: none) */
	uint64_t t_lo, n_lo;   /* the segment (fmt_seg_ns()) */
	double dn, dt;
	int ident;             /* ticks are ns (CLOCK_MONOTONIC, or no clock point) */
};
PT_INTERNAL void fmt_ns_conv_init(struct fmt_ns_conv *k, const struct pt_reader *r);
PT_INTERNAL uint64_t fmt_ns_conv_slow(struct fmt_ns_conv *k, uint64_t t);
static inline uint64_t fmt_ns_conv(struct fmt_ns_conv *k, uint64_t t)
{
	if (k->ident)
		return t;
	if (__builtin_expect(t >= k->fast_first && t <= k->fast_last, 1)) {
		/* fmt_seg_ns() where fmt_ns_conv_slow() proved every branch's
		 * outcome for the whole range: t >= t_lo, the product x in
		 * [0, 2^62), N_lo + round(x) without overflow; for such x,
		 * trunc + (fraction >= 0.5) is fmt_round_half_away(), and the
		 * whole number it gives converts to and from double exactly */
		const double x = (double)(int64_t)(t - k->t_lo) * k->dn / k->dt;
		uint64_t i = (uint64_t)(int64_t)x;
		i += x - (double)(int64_t)i >= 0.5;
		return k->n_lo + i;
	}
	return fmt_ns_conv_slow(k, t); /* the cached segment's other ticks, or another segment */
}

/*
 * fmt_reader_dup() - A second reader over @src's trace for another thread
 * (the analyzer's -j within one trace): it shares @src's string, thread and
 * clock tables, its parts (a rotated set's files: descriptors, paths,
 * limits, read only) and file descriptors, and has its own chunk index (a
 * copy of @src's: the same chunks, however the file grew since), cursor,
 * current part, buffers, decompressor and problems list. @src must outlive
 * it and must not be refreshed, iterated or closed while another thread
 * uses the duplicate; the duplicate is closed with pt_reader_close().
 * -EINVAL for a duplicate or a reader whose clock is not built; -ENOMEM.
 * 0 with *@out set.
 */
PT_INTERNAL int fmt_reader_dup(const struct pt_reader *src, struct pt_reader **out);

/*
 * fmt_reader_refresh() - Brings @r up to its file as it is now: the chunks
 * committed since it was opened or last refreshed are indexed (their meta
 * records read), the clock and sequence checks run again; then @r is what
 * pt_reader_open() of the file would give, at the cost of what is new (the
 * incremental analysis, analyzer/ana.h). Only for a reader of one file
 * that is not part of a rotated trace (its next part is another file), a
 * flight file or a window, and that found no problem (a fresh open says
 * the same as before then). The cursor is rewound. Return: 0; 1 when it
 * cannot (another reader kind, a problem, the file replaced, shorter, or
 * another trace: open it anew), @r unchanged; < 0 a read error or
 * -ENOMEM (@r then holds part of the new chunks: close it).
 */
PT_INTERNAL int fmt_reader_refresh(struct pt_reader *r);

/* Chunk framing (§3). */
struct fmt_chunk_hdr {
	uint8_t kind, comp;
	uint32_t thread, records, raw_bytes, stored_bytes;
	uint64_t sequence, first_ticks, last_ticks, payload_xxh;
};
PT_INTERNAL void fmt_chunk_hdr_write(uint8_t out[PT_FMT_CHUNK_HEADER_BYTES], const struct fmt_chunk_hdr *h);
/* 0, or -PT_ECORRUPT / -PT_ECHECKSUM / -PT_ETOOBIG with *why set */
/* pread() of exactly @len bytes at @off, retried on EINTR and short reads:
 * 0, -errno, or -PT_ETRUNCATED at end of file (the reader, and the writer
 * reading its own chunks back for a snapshot). */
PT_INTERNAL int fmt_pread_full(int fd, void *buf, size_t len, uint64_t off);
PT_INTERNAL int fmt_chunk_hdr_parse(const uint8_t in[PT_FMT_CHUNK_HEADER_BYTES], struct fmt_chunk_hdr *h,
				    const char **why);

/*
 * struct fmt_writer - appends chunks to a .ptz file through a sliding mmap
 * window over space reserved with posix_fallocate (§5). Not thread-safe:
 * one writer thread (the flusher) at a time.
 */
struct fmt_writer_hdr {
	uint32_t clock_source, pid;
	uint64_t start_ticks, start_mono_ns, start_real_ns;
	const char *process_name, *host, *cmdline, *recorder_version;
	/* 1.2 (§10): > 0 makes a flight file whose chunks live in a circular
	 * area of this many bytes after the header (at least
	 * FMT_FLIGHT_MIN_BYTES, rounded down to the page size); 0 = stream */
	uint64_t flight_bytes;
	int window; /* the file holds a window of a longer run (a snapshot) */
	const char *job;     /* 1.2: batch job id, or NULL */
	uint32_t rank_plus1; /* 1.2: rank in the job + 1; 0 = none */
	uint64_t run_id;     /* 1.3 (§11): a rotated run's id (non-zero), 0 = not rotated */
	uint32_t part;       /* 1.3: the part's number in the run, from 1 (with run_id) */
};
/* Smallest flight area. A chunk whose bound (64 + ZSTD_compressBound(raw))
 * exceeds half the area is refused (-PT_ETOOBIG): the flusher keeps its
 * chunks under an eighth of it. */
#define FMT_FLIGHT_MIN_BYTES (1u << 20)
struct fmt_writer;
/* Creates @path (O_CREAT|O_TRUNC|O_NOFOLLOW|O_CLOEXEC, 0600). 0 or -errno. */
PT_INTERNAL int fmt_writer_open(const char *path, const struct fmt_writer_hdr *hdr, struct fmt_writer **out);
/* Compresses @raw (@raw_len bytes) at @level and appends the chunk; the
 * committed length advances only after the whole chunk is in place.
 * @scratch must hold ZSTD_compressBound(PT_FMT_MAX_CHUNK_RAW_BYTES) bytes or
 * be NULL (the writer then uses its own). 0, -errno (ENOSPC...) or -PT_ETOOBIG. */
PT_INTERNAL int fmt_writer_append(struct fmt_writer *w, const struct fmt_chunk_hdr *h, const uint8_t *raw,
				  size_t raw_len, int level);
/* Like fmt_writer_append but may use the reserve kept for final records. */
PT_INTERNAL int fmt_writer_append_final(struct fmt_writer *w, const struct fmt_chunk_hdr *h,
					const uint8_t *raw, size_t raw_len, int level);
PT_INTERNAL uint64_t fmt_writer_committed(const struct fmt_writer *w);
/* Bytes appended since open (chunk headers and stored payloads): grows in
 * flight mode too, where the committed length wraps. */
PT_INTERNAL uint64_t fmt_writer_written(const struct fmt_writer *w);
/* Flight mode: times the area wrapped; and bytes of older chunks retired
 * (made unreadable) to make room, headers included. 0 in stream mode. */
PT_INTERNAL uint64_t fmt_writer_laps(const struct fmt_writer *w);
/* Appends a chunk already encoded (@chunk: a valid 64-byte header then
 * its stored payload, @len bytes in all) as it is: a snapshot's copy.
 * 0 or -errno. */
PT_INTERNAL int fmt_writer_append_stored(struct fmt_writer *w, const uint8_t *chunk, size_t len);
/* Writes a window file at @path (created as fmt_writer_open() does; window
 * flag set, §10): @w's chunks in write order (in flight mode the older lap
 * first), copied as they are, leaving out event chunks whose last tick is
 * below @since_ticks (0: none left out; meta chunks are always copied).
 * Reads @w's file with pread(): call it on the thread that appends to @w.
 * *@chunks: chunks copied. 0, or -errno (the partial file is removed);
 * -EINVAL when @path is @w's own file. */
/* The next part of @w's rotated run (§11): a new stream file at @path
 * (created as fmt_writer_open() does) whose header is @w's with part
 * number @part, the window flag when @part > 1, and the start triple
 * @start (ticks, CLOCK_MONOTONIC ns, CLOCK_REALTIME ns) of the part's
 * opening. @w is left as it is (close it after). 0 or -errno; -EINVAL
 * when @w has no run id or is a flight writer. */
PT_INTERNAL int fmt_writer_open_part(const struct fmt_writer *w, const char *path, uint32_t part,
				     const uint64_t start[3], struct fmt_writer **out);
/* The part number in @w's header (0: not a part of a rotated run). */
PT_INTERNAL uint32_t fmt_writer_part(const struct fmt_writer *w);
PT_INTERNAL int fmt_writer_snapshot(struct fmt_writer *w, const char *path, uint64_t since_ticks, uint64_t *chunks);
/* Payloads shorter than @bytes are stored (comp = 0) without trying zstd,
 * whose fixed cost per call (7-20 us for a 0.5-2 KiB payload on the
 * reference VM, bench in doc/trace-format.md §3) outweighs the bytes it
 * would save. Default 0: every payload is tried. */
PT_INTERNAL void fmt_writer_store_below(struct fmt_writer *w, size_t bytes);
/* Marks the file closed, truncates to the committed length (stream mode;
 * a flight file keeps its circular area), unmaps, closes.
 * 0 or -errno. Frees @w in every case. NULL-safe. */
PT_INTERNAL int fmt_writer_close(struct fmt_writer *w);
/* Drops the mapping and descriptor without finalizing (a crash, in tests). */
PT_INTERNAL void fmt_writer_abandon(struct fmt_writer *w);
/* In a fork child, the copy of a writer another thread of the parent may
 * have been using at the fork: closes the descriptor and frees the heap
 * parts, but leaves the file's mappings alone (a window being moved at the
 * fork can leave @w naming an address the child has since reused). */
PT_INTERNAL void fmt_writer_forget(struct fmt_writer *w);

#endif /* PTZ_FMT_INTERNAL_H */
