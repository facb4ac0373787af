/*
 * tests/export/perfetto/test_pfx_encode.c - the hand encoder of the hot
 * Perfetto packets (viewer-export/perfetto/pfx_perfetto_enc.h) against its
 * oracle, protobuf-c packing the same TracePacket from our .proto.
 *
 * Invariants covered:
 *  - a BEGIN (interned name) and a bare END are byte-identical to
 *    protobuf-c's output, framed as one Trace.packet (0x0a, varint length),
 *    for timestamps, sequence ids and iids at every varint length boundary;
 *  - the encoded length never exceeds PFX_HOT_MAX_BYTES;
 *  - an END with debug annotations (interned names at every varint length
 *    boundary of the iid; bool, uint, double, string values, in the
 *    writer's order) is byte-identical to protobuf-c's, and its size is
 *    what pfx_end_annot_size() announces, also past 127 bytes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "perfetto_trace_subset.pb-c.h" /* generated in this test's private dir */
#include "viewer-export/perfetto/pfx_perfetto_enc.h"

static size_t oracle(uint8_t *buf, uint64_t ts, uint32_t seq, uint64_t iid)
{
	Perfetto__Protos__TrackEvent te = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	Perfetto__Protos__TracePacket p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	te.has_type = 1;
	te.type = iid ? PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN
		      : PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END;
	if (iid) {
		te.name_field_case = PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME_IID;
		te.name_iid = iid;
	}
	p.has_timestamp = 1;
	p.timestamp = ts;
	p.optional_trusted_packet_sequence_id_case =
		PERFETTO__PROTOS__TRACE_PACKET__OPTIONAL_TRUSTED_PACKET_SEQUENCE_ID_TRUSTED_PACKET_SEQUENCE_ID;
	p.trusted_packet_sequence_id = seq;
	p.has_sequence_flags = 1;
	p.sequence_flags = PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_NEEDS_INCREMENTAL_STATE;
	p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
	p.track_event = &te;
	uint8_t body[128];
	size_t n = perfetto__protos__trace_packet__get_packed_size(&p);
	assert_true(n <= sizeof(body));
	assert_int_equal(perfetto__protos__trace_packet__pack(&p, body), n);
	uint8_t *e = buf;
	*e++ = 0x0a;
	e = pfx_put_varint(e, n);
	memcpy(e, body, n);
	return (size_t)(e - buf) + n;
}

static const uint64_t vals[] = { 0, 1, 127, 128, 16383, 16384, 1000000, (1ull << 32) - 1, 1ull << 32,
				 1ull << 56, (1ull << 63) - 1, 1ull << 63, UINT64_MAX };

static void test_enc_slice_matches_protobuf_c(void **state)
{
	(void)state;
	static const uint32_t seqs[] = { 1, 2, 127, 128, 70000, UINT32_MAX };
	for (size_t a = 0; a < sizeof(vals) / sizeof(vals[0]); a++)
		for (size_t s = 0; s < sizeof(seqs) / sizeof(seqs[0]); s++)
			for (size_t b = 0; b < sizeof(vals) / sizeof(vals[0]); b++) {
				uint8_t want[256], got[PFX_HOT_MAX_BYTES + 16];
				memset(got, 0xee, sizeof(got));
				size_t n = oracle(want, vals[a], seqs[s], vals[b]);
				struct pfx_ts_enc k = { 0 };
				uint8_t *e = pfx_enc_slice(got, &k, vals[a], seqs[s], vals[b]);
				assert_true((size_t)(e - got) <= PFX_HOT_MAX_BYTES);
				assert_int_equal((size_t)(e - got), n);
				assert_memory_equal(got, want, n);
			}
}

static size_t oracle_end(uint8_t *buf, uint64_t ts, uint32_t seq, const struct pfx_annot *a, size_t n)
{
	Perfetto__Protos__DebugAnnotation d[16], *dp[16];
	Perfetto__Protos__TrackEvent te = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	Perfetto__Protos__TracePacket p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
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
	te.has_type = 1;
	te.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END;
	te.n_debug_annotations = n;
	te.debug_annotations = dp;
	p.has_timestamp = 1;
	p.timestamp = ts;
	p.optional_trusted_packet_sequence_id_case =
		PERFETTO__PROTOS__TRACE_PACKET__OPTIONAL_TRUSTED_PACKET_SEQUENCE_ID_TRUSTED_PACKET_SEQUENCE_ID;
	p.trusted_packet_sequence_id = seq;
	p.has_sequence_flags = 1;
	p.sequence_flags = PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_NEEDS_INCREMENTAL_STATE;
	p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
	p.track_event = &te;
	uint8_t body[2048];
	size_t len = perfetto__protos__trace_packet__get_packed_size(&p);
	assert_true(len <= sizeof(body));
	assert_int_equal(perfetto__protos__trace_packet__pack(&p, body), len);
	uint8_t *e = buf;
	*e++ = 0x0a;
	e = pfx_put_varint(e, len);
	memcpy(e, body, len);
	return (size_t)(e - buf) + len;
}

static void test_enc_end_annot_matches_protobuf_c(void **state)
{
	(void)state;
	static const char long_s[] = "a string value long enough to take the annotation, the track event and the "
				     "packet past 127 bytes, so every length prefix needs two bytes";
	const struct pfx_annot all[] = {
		{ .name_iid = 1, .kind = PFX_A_BOOL, .u = 1 },
		{ .name_iid = 3, .kind = PFX_A_UINT, .u = 0 },
		{ .name_iid = 127, .kind = PFX_A_UINT, .u = UINT64_MAX },
		{ .name_iid = 128, .kind = PFX_A_UINT, .u = 128 },
		{ .name_iid = 16383, .kind = PFX_A_DOUBLE, .d = 3.25 },
		{ .name_iid = 16384, .kind = PFX_A_DOUBLE, .d = -0.0 },
		{ .name_iid = UINT64_MAX, .kind = PFX_A_DOUBLE, .d = 1e300 },
		{ .name_iid = 2, .kind = PFX_A_STRING, .s = "end_underflow" },
		{ .name_iid = 1ull << 32, .kind = PFX_A_STRING, .s = "" },
		{ .name_iid = 14, .kind = PFX_A_UINT, .u = 1ull << 40 },
		{ .name_iid = 30, .kind = PFX_A_STRING, .s = long_s },
	};
	const size_t nall = sizeof(all) / sizeof(all[0]);
	size_t longest = 0;
	for (size_t a = 0; a < sizeof(vals) / sizeof(vals[0]); a++)
		for (size_t n = 0; n <= nall; n++)
			for (size_t first = 0; first + n <= nall; first += n ? n : 1) {
				uint8_t want[4096], got[4096];
				size_t wn = oracle_end(want, vals[a], 7, all + first, n);
				size_t sz = pfx_end_annot_size(vals[a], 7, all + first, n);
				uint8_t *e = pfx_enc_end_annot(got, vals[a], 7, all + first, n);
				assert_int_equal((size_t)(e - got), wn);
				assert_int_equal(sz, wn);
				assert_memory_equal(got, want, wn);
				if (wn > longest)
					longest = wn;
				if (!n)
					break;
			}
	assert_true(longest > 2 + 127); /* two-byte lengths were covered */
}

/* A section END's annotations (booleans, amounts of every varint length,
 * rates; names below 128), 0 to PFX_END_SMALL_N of them in every
 * rotation: pfx_enc_end_small() writes protobuf-c's bytes, within
 * PFX_END_SMALL_MAX. */
static void test_enc_end_small_matches_protobuf_c(void **state)
{
	(void)state;
	const struct pfx_annot kinds[] = {
		{ .name_iid = 1, .kind = PFX_A_BOOL, .u = 1 },
		{ .name_iid = 3, .kind = PFX_A_UINT, .u = 0 },
		{ .name_iid = 127, .kind = PFX_A_UINT, .u = UINT64_MAX },
		{ .name_iid = 4, .kind = PFX_A_UINT, .u = 127 },
		{ .name_iid = 5, .kind = PFX_A_UINT, .u = 128 },
		{ .name_iid = 13, .kind = PFX_A_DOUBLE, .d = 3.25 },
		{ .name_iid = 14, .kind = PFX_A_DOUBLE, .d = -0.0 },
		{ .name_iid = 2, .kind = PFX_A_BOOL, .u = 0 },
		{ .name_iid = 6, .kind = PFX_A_UINT, .u = 1ull << 40 },
		{ .name_iid = 7, .kind = PFX_A_DOUBLE, .d = 1e300 },
	};
	const size_t nk = sizeof(kinds) / sizeof(kinds[0]);
	struct pfx_annot a[PFX_END_SMALL_N];
	size_t longest = 0;
	for (size_t v = 0; v < sizeof(vals) / sizeof(vals[0]); v++)
		for (size_t n = 0; n <= PFX_END_SMALL_N; n++)
			for (size_t rot = 0; rot < nk; rot++) {
				uint8_t want[4096], got[PFX_END_SMALL_MAX + 64];
				for (size_t i = 0; i < n; i++)
					a[i] = kinds[(rot + i) % nk];
				const uint32_t seq = (uint32_t)(rot * 40503u);
				size_t wn = oracle_end(want, vals[v], seq, a, n);
				memset(got, 0xee, sizeof(got));
				struct pfx_ts_enc k = { 0 };
				uint8_t *e = pfx_enc_end_small(got, &k, vals[v], seq, a, n);
				assert_int_equal((size_t)(e - got), wn);
				assert_true(wn <= PFX_END_SMALL_MAX);
				assert_memory_equal(got, want, wn);
				if (wn > longest)
					longest = wn;
			}
	assert_true(longest > 2 + 127); /* two-byte packet and track-event lengths were covered */
}

/* A run of slices and annotated ENDs through one timestamp cache, the
 * timestamps near and far from the one before (same high groups, a carry
 * into them, every varint length, back and forth): each packet is
 * protobuf-c's, whichever path pfx_put_ts() took, and both were taken. */
static void test_enc_ts_cache_matches_protobuf_c(void **state)
{
	(void)state;
	const struct pfx_annot an[] = {
		{ .name_iid = 3, .kind = PFX_A_UINT, .u = 4096 },
		{ .name_iid = 13, .kind = PFX_A_DOUBLE, .d = 2.5 },
	};
	struct pfx_ts_enc k = { 0 };
	uint64_t ts = 5000000000000ull, x = 0x9e3779b97f4a7c15ull;
	unsigned near = 0, far = 0;
	for (int i = 0; i < 20000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		switch (x % 8) {
		case 0: ts = x >> (x % 64); break;              /* anywhere, any length */
		case 1: ts += 16384 - (ts & 16383); break;      /* a carry into bit 14 */
		case 2: ts -= ts > 300 ? 300 : 0; break;        /* back a little */
		default: ts += (x >> 32) % 3000; break;         /* the next slice, close */
		}
		const int hit = (ts ^ k.ts) < (1u << 14) && k.len != 0;
		near += hit;
		far += !hit;
		uint8_t want[512], got[PFX_END_SMALL_MAX + 16];
		size_t wn;
		uint8_t *e;
		memset(got, 0xee, sizeof(got));
		if (x % 3 == 0) {
			wn = oracle_end(want, ts, 9, an, 2);
			e = pfx_enc_end_small(got, &k, ts, 9, an, 2);
		} else {
			wn = oracle(want, ts, 9, x % 3 == 1 ? 0 : 77);
			e = pfx_enc_slice(got, &k, ts, 9, x % 3 == 1 ? 0 : 77);
		}
		assert_int_equal((size_t)(e - got), wn);
		assert_memory_equal(got, want, wn);
	}
	assert_true(near > 5000 && far > 2000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_enc_slice_matches_protobuf_c),
		cmocka_unit_test(test_enc_end_annot_matches_protobuf_c),
		cmocka_unit_test(test_enc_end_small_matches_protobuf_c),
		cmocka_unit_test(test_enc_ts_cache_matches_protobuf_c),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
