/*
 * trace-format/fmt_codec.c - record payload encoder and decoder (§4 of
 * doc/trace-format.md).
 *
 * The decoder is the trust boundary for payload bytes: every varint is
 * bounded to 10 bytes, every length-prefixed record must fit in the
 * payload, and END_TOP must refer to a section begun in the same chunk.
 * Any violation returns -PT_ECORRUPT and the caller drops the rest of the
 * chunk; nothing is read outside [pos, end).
 */
#include <string.h>

#include "trace-format/fmt_internal.h"

void fmt_enc_reset(struct fmt_enc *e, uint8_t *buf, size_t cap)
{
	e->buf = e->pos = buf;
	e->end = buf + cap;
	e->first_ticks = e->last_ticks = e->prev_ticks = 0;
	e->records = 0;
	e->depth = 0;
	e->have_ticks = 0;
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Writes tag, varint(len), then returns the payload start, or NULL. */
static uint8_t *enc_lp_start(struct fmt_enc *e, uint8_t tag, size_t len)
{
	size_t need = 1 + varint_len(len) + len;
	if ((size_t)(e->end - e->pos) < need)
		return NULL;
	*e->pos++ = tag;
	e->pos = fmt_put_varint(e->pos, len);
	e->records++;
	return e->pos;
}

int fmt_enc_raw(struct fmt_enc *e, uint8_t tag, const uint8_t *payload, size_t len)
{
	uint8_t *p = enc_lp_start(e, tag, len);
	if (!p)
		return -PT_ETOOBIG;
	if (len)
		memcpy(p, payload, len);
	e->pos = p + len;
	return 0;
}

/* Builds the fields in a small buffer, then one length-prefixed record. */
static int enc_lp_fields(struct fmt_enc *e, uint8_t tag, const uint64_t *f, int nf, const char *s,
			 size_t slen)
{
	uint8_t tmp[10 * 7];
	uint8_t *p = tmp;
	for (int i = 0; i < nf; i++)
		p = fmt_put_varint(p, f[i]);
	size_t head = (size_t)(p - tmp);
	uint8_t *out = enc_lp_start(e, tag, head + slen);
	if (!out)
		return -PT_ETOOBIG;
	memcpy(out, tmp, head);
	if (slen)
		memcpy(out + head, s, slen);
	e->pos = out + head + slen;
	return 0;
}

int fmt_enc_lp5(struct fmt_enc *e, uint8_t tag, uint32_t id, uint32_t aux, uint64_t value, uint64_t value2,
		uint64_t ticks)
{
	uint64_t f[5] = { id, aux, value, value2, ticks };
	return enc_lp_fields(e, tag, f, 5, NULL, 0);
}

int fmt_enc_gpu_range(struct fmt_enc *e, uint32_t id, uint32_t device, uint64_t gpu_start, uint64_t gpu_end,
		      uint64_t launch_ticks, uint64_t seq, uint64_t stream)
{
	uint64_t f[7] = { id, device, gpu_start, gpu_end, launch_ticks, seq, stream };
	return enc_lp_fields(e, PT_REC_GPU_RANGE, f, 7, NULL, 0);
}

int fmt_enc_string(struct fmt_enc *e, uint32_t id, uint32_t domain, const char *s, size_t len)
{
	uint64_t f[2] = { id, domain };
	return enc_lp_fields(e, PT_REC_STRING, f, 2, s, len);
}

int fmt_enc_domain(struct fmt_enc *e, uint32_t id, const char *s, size_t len)
{
	uint64_t f[1] = { id };
	return enc_lp_fields(e, PT_REC_DOMAIN, f, 1, s, len);
}

int fmt_enc_thread(struct fmt_enc *e, uint32_t index, uint32_t tid, uint64_t start_ticks, uint64_t end_ticks,
		   const char *name, size_t len)
{
	uint64_t f[4] = { index, tid, start_ticks, end_ticks };
	return enc_lp_fields(e, PT_REC_THREAD, f, 4, name, len);
}

int fmt_enc_clock(struct fmt_enc *e, uint64_t ticks, uint64_t mono_ns, uint64_t real_ns, uint32_t bracket)
{
	uint64_t f[4] = { ticks, mono_ns, real_ns, bracket };
	return enc_lp_fields(e, PT_REC_CLOCK, f, 4, NULL, 0);
}

int fmt_enc_record(struct fmt_enc *e, const struct pt_record *r)
{
	if (r->kind < FMT_TAG_LEN_FIRST && !fmt_enc_room(e, FMT_MAX_RECORD_BYTES))
		return -PT_ETOOBIG;
	switch (r->kind) {
	case PT_REC_BEGIN:
		fmt_enc_begin(e, r->ticks, r->id);
		return 0;
	case PT_REC_END:
		fmt_enc_end(e, r->ticks, r->id);
		return 0;
	case PT_REC_METRIC:
		fmt_enc_metric(e, r->aux, r->value);
		return 0;
	case PT_REC_TRANSFER:
		fmt_enc_transfer(e, r->aux, r->value);
		return 0;
	case PT_REC_COUNTER:
		fmt_enc_counter(e, r->ticks, r->id, (int64_t)r->value);
		return 0;
	case PT_REC_LOSS:
		fmt_enc_loss(e, r->ticks, r->value, r->value2);
		return 0;
	case PT_REC_ERROR:
		fmt_enc_error(e, r->ticks, r->aux, r->value);
		return 0;
	case PT_REC_STRING:
		return fmt_enc_string(e, r->id, r->aux, r->str, r->str_len);
	case PT_REC_DOMAIN:
		return fmt_enc_domain(e, r->id, r->str, r->str_len);
	case PT_REC_THREAD:
		return fmt_enc_thread(e, r->id, (uint32_t)r->value, r->ticks, r->value2, r->str, r->str_len);
	case PT_REC_CLOCK:
		return fmt_enc_clock(e, r->ticks, r->value, r->value2, r->aux);
	default:
		if (r->kind >= FMT_TAG_LEN_FIRST && r->kind <= 0xff) {
			/* 0x40-0x44 and unknown kinds: id, aux, value, value2, ticks
			 * as varints; GPU_RANGE appends sequence and stream (§4.4) */
			uint64_t f[7] = { r->id, r->aux, r->value, r->value2, r->ticks, r->value3, r->value4 };
			return enc_lp_fields(e, (uint8_t)r->kind, f, r->kind == PT_REC_GPU_RANGE ? 7 : 5, NULL, 0);
		}
		return -PT_ECORRUPT;
	}
}

void fmt_dec_init(struct fmt_dec *d, const uint8_t *p, size_t len, uint64_t first_ticks)
{
	d->pos = p;
	d->end = p + len;
	d->ticks = first_ticks;
	d->depth = 0;
}

static int get_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;
	for (int shift = 0; shift < 70; shift += 7) {
		if (p >= end)
			return -PT_ECORRUPT;
		uint8_t b = *p++;
		if (shift == 63 && b > 1)
			return -PT_ECORRUPT;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*pp = p;
			*out = v;
			return 0;
		}
	}
	return -PT_ECORRUPT;
}

#define GET(var)                                            \
	do {                                                \
		if (get_varint(&d->pos, d->end, &(var)) < 0) \
			return -PT_ECORRUPT;                \
	} while (0)

static int add_dt(struct fmt_dec *d, uint64_t dt)
{
	if (d->ticks + dt < d->ticks)
		return -PT_ECORRUPT;
	d->ticks += dt;
	return 0;
}

static int dec_lp(struct fmt_dec *d, uint8_t tag, struct pt_record *o)
{
	uint64_t len, f[7] = { 0 };
	GET(len);
	if (len > (uint64_t)(d->end - d->pos))
		return -PT_ECORRUPT;
	const uint8_t *p = d->pos, *end = d->pos + len;
	d->pos = end;
	int nf;
	switch (tag) {
	case PT_REC_STRING: nf = 2; break;
	case PT_REC_DOMAIN: nf = 1; break;
	case PT_REC_THREAD: nf = 4; break;
	case PT_REC_CLOCK: nf = 4; break;
	case PT_REC_INSTANT:
	case PT_REC_ASYNC_BEGIN:
	case PT_REC_ASYNC_END:
	case PT_REC_GPU_RANGE:
	case PT_REC_GPU_LAUNCH: nf = 5; break;
	default:
		return 2; /* unknown length-prefixed kind: skipped (§6) */
	}
	for (int i = 0; i < nf; i++)
		if (get_varint(&p, end, &f[i]) < 0)
			return -PT_ECORRUPT;
	/* GPU_RANGE 1.1 appends sequence and stream; a 1.0 body stops before */
	if (tag == PT_REC_GPU_RANGE)
		for (int i = nf; i < 7 && p < end; i++)
			if (get_varint(&p, end, &f[i]) < 0)
				return -PT_ECORRUPT;
	o->kind = tag;
	o->ticks = d->ticks;
	switch (tag) {
	case PT_REC_STRING:
		if (f[0] > UINT32_MAX || f[1] > UINT32_MAX)
			return -PT_ECORRUPT;
		o->id = (uint32_t)f[0];
		o->aux = (uint32_t)f[1];
		break;
	case PT_REC_DOMAIN:
		if (f[0] > UINT32_MAX)
			return -PT_ECORRUPT;
		o->id = (uint32_t)f[0];
		break;
	case PT_REC_THREAD:
		if (f[0] > UINT32_MAX || f[1] > UINT32_MAX)
			return -PT_ECORRUPT;
		o->id = (uint32_t)f[0];
		o->value = f[1];
		o->ticks = f[2];
		o->value2 = f[3];
		break;
	case PT_REC_CLOCK:
		o->ticks = f[0];
		o->value = f[1];
		o->value2 = f[2];
		o->aux = f[3] > UINT32_MAX ? UINT32_MAX : (uint32_t)f[3];
		break;
	default:
		if (f[0] > UINT32_MAX || f[1] > UINT32_MAX)
			return -PT_ECORRUPT;
		o->id = (uint32_t)f[0];
		o->aux = (uint32_t)f[1];
		o->value = f[2];
		o->value2 = f[3];
		o->ticks = f[4];
		o->value3 = f[5];
		o->value4 = f[6];
		break;
	}
	if (tag == PT_REC_STRING || tag == PT_REC_DOMAIN || tag == PT_REC_THREAD) {
		o->str = (const char *)p;
		o->str_len = (uint32_t)(end - p);
	}
	return 1;
}

int fmt_dec_next(struct fmt_dec *d, struct pt_record *o)
{
	uint64_t a, b, dt;
	for (;;) {
		if (d->pos >= d->end)
			return 0;
		uint8_t tag = *d->pos++;
		o->str = NULL;
		o->str_len = 0;
		o->value = o->value2 = o->value3 = o->value4 = 0;
		o->aux = o->id = 0;
		switch (tag) {
		case PT_REC_BEGIN:
			GET(dt);
			GET(a);
			if (a > UINT32_MAX || add_dt(d, dt) < 0)
				return -PT_ECORRUPT;
			if (d->depth < FMT_CHUNK_STACK)
				d->stack[d->depth] = (uint32_t)a;
			d->depth++;
			o->kind = PT_REC_BEGIN;
			o->id = (uint32_t)a;
			o->ticks = d->ticks;
			return 1;
		case PT_REC_END:
		case FMT_TAG_END_TOP:
			GET(dt);
			if (tag == PT_REC_END) {
				GET(a);
				if (a > UINT32_MAX)
					return -PT_ECORRUPT;
			} else {
				if (d->depth == 0 || d->depth > FMT_CHUNK_STACK)
					return -PT_ECORRUPT;
				a = d->stack[d->depth - 1];
			}
			if (add_dt(d, dt) < 0)
				return -PT_ECORRUPT;
			if (d->depth > 0)
				d->depth--;
			o->kind = PT_REC_END;
			o->id = (uint32_t)a;
			o->ticks = d->ticks;
			return 1;
		case PT_REC_METRIC:
		case PT_REC_TRANSFER:
			GET(a);
			GET(b);
			if (a > UINT32_MAX)
				return -PT_ECORRUPT;
			o->kind = tag;
			o->aux = (uint32_t)a;
			o->value = b;
			o->ticks = d->ticks;
			return 1;
		case PT_REC_COUNTER:
		case PT_REC_LOSS:
		case PT_REC_ERROR:
			GET(dt);
			GET(a);
			GET(b);
			if (add_dt(d, dt) < 0)
				return -PT_ECORRUPT;
			o->kind = tag;
			o->ticks = d->ticks;
			if (tag == PT_REC_COUNTER) {
				if (a > UINT32_MAX)
					return -PT_ECORRUPT;
				o->id = (uint32_t)a;
				o->value = (uint64_t)fmt_unzigzag(b);
			} else if (tag == PT_REC_LOSS) {
				o->value = a;
				o->value2 = b;
			} else {
				if (a > UINT32_MAX)
					return -PT_ECORRUPT;
				o->aux = (uint32_t)a;
				o->value = b;
			}
			return 1;
		default:
			if (tag >= FMT_TAG_LEN_FIRST) {
				int rc = dec_lp(d, tag, o);
				if (rc == 2)
					continue; /* unknown kind skipped */
				return rc;
			}
			return -PT_ECORRUPT;
		}
	}
}
