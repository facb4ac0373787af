/*
 * viewer-export/perfetto/pfx_perfetto_enc.h - hand encoder for the two hot
 * TracePackets of the Perfetto writer: a slice BEGIN whose name is already
 * interned on the sequence, and a slice END without annotations.
 *
 * A third form, an END with debug annotations (the section's metrics)
 * whose names are already interned on the sequence, is hand-encoded too:
 * every ancestor of a section with metrics carries the rolled-up amounts,
 * so in compute-heavy traces these are common.
 *
 * Every other packet goes through protobuf-c. These are most of a
 * trace, and protobuf-c's generic packer (get_packed_size + pack, each a
 * walk over the descriptors) costs several times more than writing the
 * ~12 bytes directly. protobuf-c stays the oracle: test_pfx_encode.c packs
 * the same messages with it and requires identical bytes, so a change here
 * that drifts from the schema fails the suite.
 *
 * Layout (field numbers from protos/perfetto_trace_subset.proto), in the
 * order protobuf-c writes them (ascending field number):
 *   Trace.packet (1, LEN) {
 *     TracePacket.timestamp (8, varint)
 *     TracePacket.trusted_packet_sequence_id (10, varint)
 *     TracePacket.track_event (11, LEN) {
 *       TrackEvent.type (9, varint)        SLICE_BEGIN = 1 / SLICE_END = 2
 *       TrackEvent.name_iid (10, varint)   BEGIN only
 *     }
 *     TracePacket.sequence_flags (13, varint) = SEQ_NEEDS_INCREMENTAL_STATE
 *   }
 * and for the annotated END, TrackEvent starts with its debug_annotations
 * (4, LEN) { name_iid (1, varint); value: bool_value 2 | uint_value 3 |
 * double_value 5 (fixed64 LE) | string_value 6 } before type (9).
 *
 * Annotation names are interned (InternedData.debug_annotation_names, 3):
 * this encoder writes only the name_iid; the packet that first uses a name
 * on a sequence carries its InternedData and goes through protobuf-c, as
 * the BEGIN of a name not yet interned does.
 */
#ifndef PTZ_PFX_PERFETTO_ENC_H
#define PTZ_PFX_PERFETTO_ENC_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint8_t, uint64_t */
#include <string.h> /* memcpy, strlen */

/* Longest packet these write, Trace.packet framing included. */
#define PFX_HOT_MAX_BYTES 48

static inline uint8_t *pfx_put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* Bytes of @v as a varint: one per started 7 bits (1 for 0), by the
 * count of leading zero bits (a load: the division by 7 was a sixth of an
 * export's encoding instructions). */
static inline size_t pfx_varint_len(uint64_t v)
{
	static const uint8_t by_clz[64] = { 10, 9, 9, 9, 9, 9, 9, 9, 8, 8, 8, 8, 8, 8, 8, 7, 7, 7, 7, 7, 7, 7,
					    6,  6, 6, 6, 6, 6, 6, 5, 5, 5, 5, 5, 5, 5, 4, 4, 4, 4, 4, 4, 4, 3,
					    3,  3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1 };
	return by_clz[__builtin_clzll(v | 1)];
}

/*
 * struct pfx_ts_enc - The varint of the last timestamp the hot encoders
 * wrote (a cache; zeroed = empty). A slice's timestamp is a varint of 6 to
 * 9 bytes that differs from the one before in its low bits only: when
 * every bit from 14 up is the same, its groups from the third byte up are
 * the cached ones, and only the two low bytes are new (pfx_put_ts()).
 */
struct pfx_ts_enc {
	uint64_t ts;   /* the value cached */
	uint64_t word; /* its first 8 varint bytes, little-endian (len >= 3) */
	unsigned len;  /* its length, 3 to 8; 0 = nothing cached */
};

/* @w's 8 bytes at @p, little-endian (protobuf's byte order): one store on
 * a little-endian host. */
static inline void pfx_put_le64(uint8_t *p, uint64_t w)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	memcpy(p, &w, 8);
#else
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(w >> (8 * i));
#endif
}

/* @ts as a varint at @p, which must have 8 bytes of room past it whatever
 * the varint's length (the fast path stores a whole word), through @k. */
static inline uint8_t *pfx_put_ts(uint8_t *p, struct pfx_ts_enc *k, uint64_t ts)
{
	if ((ts ^ k->ts) < (1u << 14) && k->len != 0) {
		const uint64_t w = (k->word & ~(uint64_t)0xffff) | (ts & 0x7f) | 0x80 | ((ts >> 7 & 0x7f) | 0x80) << 8;
		pfx_put_le64(p, w);
		k->ts = ts;
		k->word = w;
		return p + k->len;
	}
	uint8_t *e = pfx_put_varint(p, ts);
	const unsigned len = (unsigned)(e - p);
	k->len = 0;
	if (len >= 3 && len <= 8) { /* a third byte: bits 14 and up decide the length */
		uint64_t w = 0;
		for (unsigned i = 0; i < len; i++)
			w |= (uint64_t)p[i] << (8 * i);
		k->ts = ts;
		k->word = w;
		k->len = len;
	}
	return e;
}

/*
 * pfx_enc_slice() - Encode one framed BEGIN (@name_iid != 0) or END
 * (@name_iid == 0) packet at @p, which must have PFX_HOT_MAX_BYTES of room;
 * the timestamp through the cache @k (pfx_put_ts()).
 * Return: the end of what was written.
 */
static inline uint8_t *pfx_enc_slice(uint8_t *p, struct pfx_ts_enc *k, uint64_t ts_ns, uint32_t seq,
				     uint64_t name_iid)
{
	/* at most PFX_HOT_MAX_BYTES - 2 bytes of packet, so each length is one
	 * byte, set once what it counts is written (no varint_len()) */
	uint8_t *const pkt = p + 1;
	*p = 0x0a; /* Trace.packet, LEN */
	p += 2;
	*p++ = 0x40; /* timestamp */
	p = pfx_put_ts(p, k, ts_ns);
	*p++ = 0x50; /* trusted_packet_sequence_id */
	p = pfx_put_varint(p, seq);
	*p++ = 0x5a; /* track_event, LEN */
	uint8_t *const te = p++;
	*p++ = 0x48; /* TrackEvent.type */
	*p++ = name_iid ? 1 : 2;
	if (name_iid) {
		*p++ = 0x50; /* TrackEvent.name_iid */
		p = pfx_put_varint(p, name_iid);
	}
	*te = (uint8_t)(p - te - 1);
	*p++ = 0x68; /* sequence_flags */
	*p++ = 2;    /* SEQ_NEEDS_INCREMENTAL_STATE */
	*pkt = (uint8_t)(p - pkt - 1);
	return p;
}

enum pfx_annot_kind { PFX_A_BOOL, PFX_A_UINT, PFX_A_DOUBLE, PFX_A_STRING };

/* One top-level DebugAnnotation whose name is interned on the sequence. */
struct pfx_annot {
	uint64_t name_iid; /* DebugAnnotationName.iid, != 0 */
	enum pfx_annot_kind kind;
	uint64_t u;    /* PFX_A_BOOL (0/1), PFX_A_UINT */
	double d;      /* PFX_A_DOUBLE */
	const char *s; /* PFX_A_STRING */
};

static inline size_t pfx_len_field(size_t len)
{
	return 1 + pfx_varint_len(len) + len;
}

static inline size_t pfx_annot_body(const struct pfx_annot *a)
{
	size_t v;
	switch (a->kind) {
	case PFX_A_BOOL: v = 2; break;
	case PFX_A_UINT: v = 1 + pfx_varint_len(a->u); break;
	case PFX_A_DOUBLE: v = 9; break;
	default: v = pfx_len_field(strlen(a->s)); break;
	}
	return 1 + pfx_varint_len(a->name_iid) + v;
}

/* The sizes of an annotated END packet, each computed once (pfx_end_plan()). */
struct pfx_end_plan {
	size_t body[32]; /* each annotation's DebugAnnotation body */
	size_t te_len, pkt;
};

/* Plans the END packet of @n <= 32 annotations @a at @ts_ns on sequence @seq. Return: its framed size. */
static inline size_t pfx_end_plan(struct pfx_end_plan *pl, uint64_t ts_ns, uint32_t seq, const struct pfx_annot *a,
				  size_t n)
{
	size_t te = 2;
	for (size_t i = 0; i < n; i++) {
		pl->body[i] = pfx_annot_body(&a[i]);
		te += pfx_len_field(pl->body[i]);
	}
	pl->te_len = te;
	pl->pkt = 1 + pfx_varint_len(ts_ns) + 1 + pfx_varint_len(seq) + pfx_len_field(te) + 2;
	return 1 + pfx_varint_len(pl->pkt) + pl->pkt;
}

/* Framed size of pfx_enc_end_annot()'s packet. */
static inline size_t pfx_end_annot_size(uint64_t ts_ns, uint32_t seq, const struct pfx_annot *a, size_t n)
{
	struct pfx_end_plan pl;
	return pfx_end_plan(&pl, ts_ns, seq, a, n);
}

/* @d as a fixed64. */
static inline uint8_t *pfx_put_double(uint8_t *p, double d)
{
	uint64_t bits;
	memcpy(&bits, &d, sizeof(bits));
	pfx_put_le64(p, bits);
	return p + 8;
}

static inline uint8_t *pfx_put_str(uint8_t *p, uint8_t tag, const char *s)
{
	size_t len = strlen(s);
	*p++ = tag;
	p = pfx_put_varint(p, len);
	memcpy(p, s, len);
	return p + len;
}

/*
 * pfx_enc_end_planned() - Encode one framed END packet carrying the @n
 * debug annotations @a that pfx_end_plan() planned as @pl, at @p, which
 * must have the room pfx_end_plan() returned.
 * Return: the end of what was written.
 */
static inline uint8_t *pfx_enc_end_planned(uint8_t *p, uint64_t ts_ns, uint32_t seq, const struct pfx_annot *a,
					   size_t n, const struct pfx_end_plan *pl)
{
	*p++ = 0x0a;
	p = pfx_put_varint(p, pl->pkt);
	*p++ = 0x40;
	p = pfx_put_varint(p, ts_ns);
	*p++ = 0x50;
	p = pfx_put_varint(p, seq);
	*p++ = 0x5a;
	p = pfx_put_varint(p, pl->te_len);
	for (size_t i = 0; i < n; i++) {
		*p++ = 0x22; /* TrackEvent.debug_annotations */
		p = pfx_put_varint(p, pl->body[i]);
		*p++ = 0x08; /* DebugAnnotation.name_iid */
		p = pfx_put_varint(p, a[i].name_iid);
		switch (a[i].kind) {
		case PFX_A_BOOL:
			*p++ = 0x10;
			*p++ = (uint8_t)(a[i].u != 0);
			break;
		case PFX_A_UINT:
			*p++ = 0x18;
			p = pfx_put_varint(p, a[i].u);
			break;
		case PFX_A_DOUBLE:
			*p++ = 0x29;
			p = pfx_put_double(p, a[i].d);
			break;
		default:
			p = pfx_put_str(p, 0x32, a[i].s);
			break;
		}
	}
	*p++ = 0x48;
	*p++ = 2; /* TYPE_SLICE_END */
	*p++ = 0x68;
	*p++ = 2; /* SEQ_NEEDS_INCREMENTAL_STATE */
	return p;
}

/*
 * pfx_enc_end_annot() - Encode one framed END packet carrying @n <= 32
 * debug annotations at @p, which must have pfx_end_annot_size() bytes of
 * room. Return: the end of what was written.
 */
static inline uint8_t *pfx_enc_end_annot(uint8_t *p, uint64_t ts_ns, uint32_t seq, const struct pfx_annot *a,
					 size_t n)
{
	struct pfx_end_plan pl;
	pfx_end_plan(&pl, ts_ns, seq, a, n);
	return pfx_enc_end_planned(p, ts_ns, seq, a, n, &pl);
}

/* Sets the length byte at @at to the bytes after it up to @end (< 2^14);
 * past 127 it takes two bytes, and those bytes move up by one. The new end. */
static inline uint8_t *pfx_len_after(uint8_t *at, uint8_t *end)
{
	const size_t len = (size_t)(end - at - 1);
	if (__builtin_expect(len < 0x80, 1)) {
		*at = (uint8_t)len;
		return end;
	}
	memmove(at + 2, at + 1, len);
	at[0] = (uint8_t)(len | 0x80);
	at[1] = (uint8_t)(len >> 7);
	return end + 1;
}

/* Annotations pfx_enc_end_small() takes at most, and the room it needs. */
#define PFX_END_SMALL_N 16
#define PFX_END_SMALL_MAX (PFX_HOT_MAX_BYTES + 2 + PFX_END_SMALL_N * 15)

/*
 * pfx_enc_end_small() - pfx_enc_end_annot() for the annotations a section's
 * END carries: @n <= PFX_END_SMALL_N, each PFX_A_BOOL, PFX_A_UINT or
 * PFX_A_DOUBLE with a name_iid below 128. Each is then at most 15 bytes
 * (its length one byte) and written in one pass; the track event's and the
 * packet's lengths are set after what they count, one byte each when under
 * 128 (nearly always), else the bytes after them move up by one. No
 * planning pass. @p must have PFX_END_SMALL_MAX bytes of room; the
 * timestamp goes through the cache @k (pfx_put_ts()).
 * Return: the end of what was written.
 */
static inline uint8_t *pfx_enc_end_small(uint8_t *p, struct pfx_ts_enc *k, uint64_t ts_ns, uint32_t seq,
					 const struct pfx_annot *a, size_t n)
{
	uint8_t *const pkt = p + 1, *q = p + 2;
	*p = 0x0a;
	*q++ = 0x40;
	q = pfx_put_ts(q, k, ts_ns);
	*q++ = 0x50;
	q = pfx_put_varint(q, seq);
	*q++ = 0x5a;
	uint8_t *const te = q++;
	for (size_t i = 0; i < n; i++) {
		uint8_t *len = q + 1;
		q[0] = 0x22; /* TrackEvent.debug_annotations */
		q[2] = 0x08; /* DebugAnnotation.name_iid */
		q[3] = (uint8_t)a[i].name_iid;
		q += 4;
		if (a[i].kind == PFX_A_UINT) {
			*q++ = 0x18;
			q = pfx_put_varint(q, a[i].u);
		} else if (a[i].kind == PFX_A_DOUBLE) {
			*q++ = 0x29;
			q = pfx_put_double(q, a[i].d);
		} else {
			*q++ = 0x10;
			*q++ = (uint8_t)(a[i].u != 0);
		}
		*len = (uint8_t)(q - len - 1);
	}
	*q++ = 0x48;
	*q++ = 2; /* TYPE_SLICE_END */
	q = pfx_len_after(te, q);
	*q++ = 0x68;
	*q++ = 2; /* SEQ_NEEDS_INCREMENTAL_STATE */
	return pfx_len_after(pkt, q);
}

#endif /* PTZ_PFX_PERFETTO_ENC_H */
