/*
 * tests/unit/test_format.c - trace format v1 encoder, decoder, writer, reader.
 *
 * Invariants covered:
 *  - every record kind round-trips through fmt_enc_* / fmt_dec_next exactly,
 *    for random streams over many seeds and for extreme values (0, 2^32-1,
 *    2^64-1, tick deltas of 0 and of 2^63);
 *  - END records of sections begun in the same chunk are encoded without an
 *    id (END_TOP) and still decode to the right id; ENDs of earlier chunks
 *    and mismatched ENDs keep their id;
 *  - unknown length-prefixed kinds are skipped; unknown fixed tags and
 *    truncated varints are -PT_ECORRUPT;
 *  - chunks written by fmt_writer are read back by pt_reader in order with
 *    their header fields; compressed and stored payloads both;
 *  - meta tables (strings, domains, threads) and the tick->ns mapping.
 */
#include <errno.h>
#include <fcntl.h>

#include "tests/test_util.h"
#include "trace-format/fmt_internal.h"

static uint64_t rng_state;
static uint64_t rnd(void)
{
	/* splitmix64 */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t extreme(void)
{
	static const uint64_t v[] = { 0, 1, 127, 128, 16383, 16384, UINT32_MAX, (uint64_t)UINT32_MAX + 1,
				      INT64_MAX, UINT64_MAX };
	return rnd() % 3 == 0 ? v[rnd() % PT_ARRAY_SIZE(v)] : rnd() >> (rnd() % 64);
}

/* Generates a random but well-formed stream into @recs (ticks ascending). */
static size_t gen_stream(struct pt_record *recs, size_t n, uint64_t start)
{
	uint64_t t = start;
	uint32_t stack[64];
	size_t depth = 0;
	static const char *names[] = { "a", "section", "", "ünïcode", "x\ny" };
	for (size_t i = 0; i < n; i++) {
		struct pt_record *r = &recs[i];
		memset(r, 0, sizeof(*r));
		uint64_t dt = rnd() % 5 == 0 ? extreme() >> 2 : rnd() % 5000;
		if (t + dt < t)
			dt = 0;
		unsigned k = (unsigned)(rnd() % 12);
		if (k < 3 && depth < 64) {
			t += dt;
			r->kind = PT_REC_BEGIN;
			r->id = (uint32_t)(rnd() % 3 == 0 ? extreme() : rnd() % 100);
			stack[depth++] = r->id;
		} else if (k < 6 && depth > 0) {
			t += dt;
			r->kind = PT_REC_END;
			/* mostly matching, sometimes a wrong id (misuse must survive) */
			r->id = rnd() % 10 ? stack[depth - 1] : (uint32_t)rnd();
			depth--;
		} else if (k == 6) {
			r->kind = PT_REC_METRIC;
			r->aux = (uint32_t)(1 + rnd() % 3);
			r->value = extreme();
		} else if (k == 7) {
			r->kind = PT_REC_TRANSFER;
			r->aux = (uint32_t)(1 + rnd() % 4);
			r->value = extreme();
		} else if (k == 8) {
			t += dt;
			r->kind = PT_REC_COUNTER;
			r->id = (uint32_t)rnd();
			r->value = extreme();
		} else if (k == 9) {
			t += dt;
			r->kind = PT_REC_LOSS;
			r->value = extreme();
			r->value2 = extreme();
		} else if (k == 10) {
			t += dt;
			r->kind = PT_REC_ERROR;
			r->aux = (uint32_t)(1 + rnd() % 5);
			r->value = extreme();
		} else {
			static const uint32_t lp[] = { PT_REC_STRING, PT_REC_DOMAIN, PT_REC_THREAD, PT_REC_CLOCK,
						       PT_REC_INSTANT, PT_REC_ASYNC_BEGIN, PT_REC_GPU_RANGE };
			r->kind = lp[rnd() % PT_ARRAY_SIZE(lp)];
			r->id = (uint32_t)extreme();
			const char *s = names[rnd() % PT_ARRAY_SIZE(names)];
			switch (r->kind) {
			case PT_REC_STRING:
				r->aux = (uint32_t)rnd();
				/* fallthrough */
			case PT_REC_DOMAIN:
				r->str = s;
				r->str_len = (uint32_t)strlen(s);
				r->ticks = t;
				break;
			case PT_REC_THREAD:
				r->value = (uint32_t)rnd();
				r->ticks = extreme();
				r->value2 = extreme();
				r->str = s;
				r->str_len = (uint32_t)strlen(s);
				break;
			case PT_REC_CLOCK:
				r->id = 0;
				r->ticks = extreme();
				r->value = extreme();
				r->value2 = extreme();
				r->aux = (uint32_t)rnd();
				break;
			default:
				r->aux = (uint32_t)rnd();
				r->value = extreme();
				r->value2 = extreme();
				r->ticks = extreme();
				break;
			}
			continue;
		}
		r->ticks = t;
	}
	return n;
}

static void assert_same(const struct pt_record *a, const struct pt_record *b, size_t i)
{
	/* METRIC and TRANSFER carry no time: they report the previous timed
	 * record's tick, or the chunk's first tick (§4.3), so not compared */
	int untimed = a->kind == PT_REC_METRIC || a->kind == PT_REC_TRANSFER || a->kind == PT_REC_STRING ||
		      a->kind == PT_REC_DOMAIN;
	if (a->kind != b->kind || a->id != b->id || a->aux != b->aux || a->value != b->value ||
	    a->value2 != b->value2 || (!untimed && a->ticks != b->ticks) || a->str_len != b->str_len ||
	    (a->str_len && memcmp(a->str, b->str, a->str_len) != 0))
		fail_msg("record %zu differs: kind %u/%u id %u/%u aux %u/%u value %llu/%llu value2 %llu/%llu "
			 "ticks %llu/%llu",
			 i, a->kind, b->kind, a->id, b->id, a->aux, b->aux, (unsigned long long)a->value,
			 (unsigned long long)b->value, (unsigned long long)a->value2, (unsigned long long)b->value2,
			 (unsigned long long)a->ticks, (unsigned long long)b->ticks);
}

/* Random stream @seed (gen_stream(), at most @max records) into @in and
 * encoded into @buf (64 bytes a record) by @e; returns its record count. */
static size_t encode_stream(uint64_t seed, struct pt_record *in, size_t max, uint8_t *buf, struct fmt_enc *e)
{
	rng_state = seed;
	uint64_t start = seed % 7 == 0 ? UINT64_MAX / 2 : rnd() >> 20;
	size_t n = gen_stream(in, (size_t)(rnd() % max) + 1, start);
	fmt_enc_reset(e, buf, max * 64);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(fmt_enc_record(e, &in[i]), 0);
	assert_int_equal(e->records, n);
	return n;
}

static void test_enc_dec_random_streams_roundtrip(void **state)
{
	(void)state;
	enum { N = 3000 };
	struct pt_record *in = calloc(N, sizeof(*in));
	uint8_t *buf = malloc(N * 64);
	for (uint64_t seed = 1; seed <= 200; seed++) {
		struct fmt_enc e;
		size_t n = encode_stream(seed, in, N, buf, &e);
		struct fmt_dec d;
		fmt_dec_init(&d, buf, (size_t)(e.pos - buf), e.first_ticks);
		struct pt_record out;
		for (size_t i = 0; i < n; i++) {
			assert_int_equal(fmt_dec_next(&d, &out), 1);
			assert_same(&in[i], &out, i);
		}
		assert_int_equal(fmt_dec_next(&d, &out), 0);
	}
	free(in);
	free(buf);
}

/* The analyzer's fused loop (the fast helpers while FMT_DEC_FAST_SLACK
 * bytes remain, fmt_dec_next() for the rest) decodes every random stream
 * as fmt_dec_next() alone does: varints of every length from 1 to 10
 * bytes (ids and amounts from extreme()), END_TOP and END, ticks. */
static void test_dec_fast_paths_match_next(void **state)
{
	(void)state;
	enum { N = 3000 };
	struct pt_record *in = calloc(N, sizeof(*in));
	uint8_t *buf = malloc(N * 64);
	size_t fast = 0, len_seen = 0;
	for (uint64_t seed = 1; seed <= 200; seed++) {
		struct fmt_enc e;
		size_t n = encode_stream(seed, in, N, buf, &e);
		struct fmt_dec d;
		struct fmt_fast fd;
		fmt_dec_init(&d, buf, (size_t)(e.pos - buf), e.first_ticks);
		fmt_fast_load(&fd, &d);
		for (size_t i = 0; i < n; i++) {
			struct pt_record r = { 0 };
			int ok = 0;
			if (d.end - fd.pos >= FMT_DEC_FAST_SLACK) {
				const uint8_t tag = fd.pos[0], *at = fd.pos;
				r.kind = tag == FMT_TAG_END_TOP ? PT_REC_END : tag;
				if (tag == PT_REC_BEGIN)
					ok = fmt_dec_fast_begin(&fd, d.stack, &r.id);
				else if (tag == PT_REC_METRIC)
					ok = fmt_dec_fast_metric(&fd, &r.aux, &r.value);
				else if (tag == FMT_TAG_END_TOP || tag == PT_REC_END)
					ok = fmt_dec_fast_end(&fd, d.stack, &r.id);
				if (ok) {
					r.ticks = fd.ticks;
					fast++;
					len_seen |= 1u << (fd.pos - at); /* the record's length in bytes */
				}
			}
			if (!ok) {
				fmt_fast_store(&fd, &d);
				assert_int_equal(fmt_dec_next(&d, &r), 1);
				fmt_fast_load(&fd, &d);
			}
			if (in[i].kind == PT_REC_METRIC || in[i].kind == PT_REC_TRANSFER)
				r.ticks = in[i].ticks; /* no tick of their own */
			assert_same(&in[i], &r, i);
		}
		fmt_fast_store(&fd, &d);
		struct pt_record out;
		assert_int_equal(fmt_dec_next(&d, &out), 0);
	}
	assert_true(fast > 100000);
	for (unsigned len = 2; len <= 12; len++) /* END_TOP (tag, dt) and METRIC (tag, aux, amount): varints of 1 to 10 bytes */
		if (!(len_seen >> len & 1))
			fail_msg("no record of %u bytes through the fast path", len);
	free(in);
	free(buf);
}

static void test_enc_end_top_omits_id(void **state)
{
	(void)state;
	uint8_t buf[256];
	struct fmt_enc e;
	fmt_enc_reset(&e, buf, sizeof(buf));
	fmt_enc_begin(&e, 100, 300000); /* id takes 3 bytes */
	fmt_enc_end(&e, 110, 300000);   /* END_TOP: tag + dt */
	fmt_enc_end(&e, 120, 7);        /* begun in an earlier chunk: keeps id */
	assert_int_equal(e.pos - buf, (1 + 1 + 3) + (1 + 1) + (1 + 1 + 1));
	assert_int_equal(buf[5], FMT_TAG_END_TOP);
	struct fmt_dec d;
	struct pt_record r;
	fmt_dec_init(&d, buf, (size_t)(e.pos - buf), e.first_ticks);
	assert_int_equal(fmt_dec_next(&d, &r), 1);
	assert_int_equal(r.ticks, 100);
	assert_int_equal(fmt_dec_next(&d, &r), 1);
	assert_int_equal(r.kind, PT_REC_END);
	assert_int_equal(r.id, 300000);
	assert_int_equal(r.ticks, 110);
	assert_int_equal(fmt_dec_next(&d, &r), 1);
	assert_int_equal(r.id, 7);
	assert_int_equal(r.ticks, 120);
}

static void test_dec_unknown_length_prefixed_kind_skipped(void **state)
{
	(void)state;
	uint8_t buf[64];
	struct fmt_enc e;
	fmt_enc_reset(&e, buf, sizeof(buf));
	fmt_enc_begin(&e, 5, 1);
	const uint8_t junk[] = { 0xff, 0xff, 0xff };
	assert_int_equal(fmt_enc_raw(&e, 0x7e, junk, sizeof(junk)), 0);
	fmt_enc_end(&e, 9, 1);
	struct fmt_dec d;
	struct pt_record r;
	fmt_dec_init(&d, buf, (size_t)(e.pos - buf), e.first_ticks);
	assert_int_equal(fmt_dec_next(&d, &r), 1);
	assert_int_equal(fmt_dec_next(&d, &r), 1);
	assert_int_equal(r.kind, PT_REC_END);
	assert_int_equal(r.id, 1);
	assert_int_equal(fmt_dec_next(&d, &r), 0);
}

static void test_dec_bad_input_is_corrupt(void **state)
{
	(void)state;
	struct fmt_dec d;
	struct pt_record r;
	const uint8_t unknown_fixed[] = { 0x3f, 0, 0 };
	fmt_dec_init(&d, unknown_fixed, sizeof(unknown_fixed), 0);
	assert_int_equal(fmt_dec_next(&d, &r), -PT_ECORRUPT);
	const uint8_t truncated_varint[] = { PT_REC_BEGIN, 0x80, 0x80 };
	fmt_dec_init(&d, truncated_varint, sizeof(truncated_varint), 0);
	assert_int_equal(fmt_dec_next(&d, &r), -PT_ECORRUPT);
	const uint8_t overlong[] = { PT_REC_BEGIN, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 1 };
	fmt_dec_init(&d, overlong, sizeof(overlong), 0);
	assert_int_equal(fmt_dec_next(&d, &r), -PT_ECORRUPT);
	const uint8_t end_top_empty[] = { FMT_TAG_END_TOP, 1 };
	fmt_dec_init(&d, end_top_empty, sizeof(end_top_empty), 0);
	assert_int_equal(fmt_dec_next(&d, &r), -PT_ECORRUPT);
	const uint8_t lp_too_long[] = { PT_REC_STRING, 50, 1, 0 };
	fmt_dec_init(&d, lp_too_long, sizeof(lp_too_long), 0);
	assert_int_equal(fmt_dec_next(&d, &r), -PT_ECORRUPT);
	const uint8_t tick_overflow[] = { PT_REC_BEGIN, 2, 1 };
	fmt_dec_init(&d, tick_overflow, sizeof(tick_overflow), UINT64_MAX - 1);
	assert_int_equal(fmt_dec_next(&d, &r), -PT_ECORRUPT);
}

static void test_chunk_hdr_roundtrip_and_rejects(void **state)
{
	(void)state;
	struct fmt_chunk_hdr h = { .kind = FMT_CHUNK_EVENTS, .comp = FMT_COMP_ZSTD, .thread = 3, .records = 10,
				   .raw_bytes = 100, .stored_bytes = 50, .sequence = 9, .first_ticks = 5,
				   .last_ticks = 8, .payload_xxh = 0x1234 };
	uint8_t b[PT_FMT_CHUNK_HEADER_BYTES];
	struct fmt_chunk_hdr o;
	const char *why = NULL;
	fmt_chunk_hdr_write(b, &h);
	assert_int_equal(fmt_chunk_hdr_parse(b, &o, &why), 0);
	assert_int_equal(o.thread, 3);
	assert_int_equal(o.sequence, 9);
	assert_int_equal(o.payload_xxh, 0x1234);
	b[20] ^= 1;
	assert_int_equal(fmt_chunk_hdr_parse(b, &o, &why), -PT_ECHECKSUM);
	h.raw_bytes = PT_FMT_MAX_CHUNK_RAW_BYTES + 1;
	fmt_chunk_hdr_write(b, &h);
	assert_int_equal(fmt_chunk_hdr_parse(b, &o, &why), -PT_ETOOBIG);
	h.raw_bytes = 100;
	h.records = 101;
	fmt_chunk_hdr_write(b, &h);
	assert_int_equal(fmt_chunk_hdr_parse(b, &o, &why), -PT_ECORRUPT);
}

/* Writes @n random records for each of @threads threads in chunks of at most
 * @per_chunk records; returns the streams for comparison. */
static void test_writer_reader_file_roundtrip(void **state)
{
	(void)state;
	const char *path = tu_path("roundtrip.ptz");
	struct fmt_writer_hdr hd = { .clock_source = PT_CLOCK_TSC, .pid = 4242, .start_ticks = 1000000,
				     .start_mono_ns = 5000000, .start_real_ns = 1700000000000000000ull,
				     .process_name = "proc", .host = "hostname", .cmdline = "./a --b",
				     .recorder_version = "test" };
	struct fmt_writer *w;
	assert_int_equal(fmt_writer_open(path, &hd, &w), 0);
	enum { THREADS = 3, N = 20000, PER = 1500 };
	struct pt_record *in[THREADS];
	uint8_t *buf = malloc(1 << 20);
	struct fmt_enc e;
	/* meta: strings, a domain, threads, two clocks (1 tick = 0.5 ns) */
	fmt_enc_reset(&e, buf, 1 << 20);
	fmt_enc_domain(&e, 1, "gpu", 3);
	fmt_enc_string(&e, 1, 0, "alpha", 5);
	fmt_enc_string(&e, 2, 1, "beta", 4);
	for (uint32_t t = 0; t < THREADS; t++)
		fmt_enc_thread(&e, t, 100 + t, 1000000, t == 1 ? 9999999 : 0, t ? "worker" : "main", t ? 6 : 4);
	fmt_enc_clock(&e, 1000000, 5000000, 0, 10);
	fmt_enc_clock(&e, 3000000, 6000000, 0, 10);
	struct fmt_chunk_hdr mh = { .kind = FMT_CHUNK_META, .thread = PT_FMT_META_THREAD, .records = e.records };
	assert_int_equal(fmt_writer_append(w, &mh, buf, (size_t)(e.pos - buf), 1), 0);
	uint64_t seq[THREADS] = { 0 };
	size_t pos[THREADS] = { 0 };
	for (uint32_t t = 0; t < THREADS; t++) {
		in[t] = calloc(N, sizeof(struct pt_record));
		rng_state = 77 + t;
		gen_stream(in[t], N, 1000000);
		/* event chunks carry only event kinds */
		for (size_t i = 0; i < N; i++)
			if (in[t][i].kind >= FMT_TAG_LEN_FIRST) {
				uint64_t tk = i ? in[t][i - 1].ticks : 1000000;
				memset(&in[t][i], 0, sizeof(in[t][i]));
				in[t][i].kind = PT_REC_METRIC;
				in[t][i].aux = 1;
				in[t][i].value = i;
				in[t][i].ticks = tk;
			}
	}
	/* interleave threads' chunks, as the flusher does */
	for (int left = THREADS; left;) {
		left = 0;
		for (uint32_t t = 0; t < THREADS; t++) {
			if (pos[t] == N)
				continue;
			left++;
			fmt_enc_reset(&e, buf, 1 << 20);
			size_t k = PER + t * 100;
			for (size_t i = 0; i < k && pos[t] < N; i++)
				assert_int_equal(fmt_enc_record(&e, &in[t][pos[t]++]), 0);
			struct fmt_chunk_hdr h = { .kind = FMT_CHUNK_EVENTS, .thread = t, .records = e.records,
						   .sequence = seq[t]++, .first_ticks = e.first_ticks,
						   .last_ticks = e.last_ticks };
			assert_int_equal(fmt_writer_append(w, &h, buf, (size_t)(e.pos - buf), t == 2 ? -5 : 3), 0);
		}
	}
	uint64_t committed = fmt_writer_committed(w);
	assert_int_equal(fmt_writer_close(w), 0);

	struct pt_reader *rd;
	assert_int_equal(pt_reader_open(path, &rd), 0);
	const struct pt_trace_info *info = pt_reader_info(rd);
	assert_int_equal(info->pid, 4242);
	assert_string_equal(info->process_name, "proc");
	assert_string_equal(info->host, "hostname");
	assert_string_equal(info->cmdline, "./a --b");
	assert_int_equal(info->closed, 1);
	assert_int_equal(info->committed_bytes, committed);
	assert_int_equal(info->file_bytes, committed);
	assert_int_equal(info->torn_tail_offset, UINT64_MAX);
	assert_int_equal(pt_reader_problem_count(rd), 0);
	assert_string_equal(pt_reader_string(rd, 1, NULL), "alpha");
	uint32_t dom = 0;
	assert_string_equal(pt_reader_string(rd, 2, &dom), "beta");
	assert_int_equal(dom, 1);
	assert_string_equal(pt_reader_domain(rd, 1), "gpu");
	assert_null(pt_reader_string(rd, 3, NULL));
	assert_int_equal(pt_reader_thread_count(rd), THREADS);
	struct pt_thread_info ti;
	assert_int_equal(pt_reader_thread(rd, 1, &ti, sizeof(ti)), 1);
	assert_int_equal(ti.tid, 101);
	assert_string_equal(ti.name, "worker");
	assert_int_equal(ti.end_ticks, 9999999);
	/* tick -> ns: 2 ticks per ns through (1e6, 5e6) and (3e6, 6e6) */
	assert_int_equal(pt_reader_ticks_to_ns(rd, 1000000), 5000000);
	assert_int_equal(pt_reader_ticks_to_ns(rd, 2000000), 5500000);
	assert_int_equal(pt_reader_ticks_to_ns(rd, 5000000), 7000000); /* extrapolated */
	assert_true(pt_reader_ns_per_tick(rd) == 0.5);
	for (uint32_t t = 0; t < THREADS; t++) {
		struct pt_chunk_info ci;
		struct pt_record r;
		size_t i = 0;
		uint64_t expect_seq = 0;
		pt_reader_rewind(rd);
		while (pt_reader_next_chunk(rd, t, &ci, sizeof(ci)) == 1) {
			assert_int_equal(ci.thread, t);
			assert_int_equal(ci.sequence, expect_seq++);
			while (pt_reader_next_record(rd, &r, sizeof(r)) == 1) {
				assert_true(i < N);
				assert_same(&in[t][i], &r, i);
				i++;
			}
		}
		assert_int_equal(i, N);
		free(in[t]);
	}
	pt_reader_close(rd);
	free(buf);
}

/* The batch call returns the same records as the one-at-a-time call, then
 * 0 at the end of each chunk, whatever the batch size. */
static void test_reader_next_records_batches_match(void **state)
{
	(void)state;
	const char *path = tu_path("roundtrip.ptz"); /* written by the file round trip above */
	for (size_t batch = 1; batch <= 300; batch += 37) {
		struct pt_reader *a, *b;
		assert_int_equal(pt_reader_open(path, &a), 0);
		assert_int_equal(pt_reader_open(path, &b), 0);
		struct pt_record ra, rb[300];
		size_t total = 0;
		while (pt_reader_next_chunk(a, PT_READER_ALL_CHUNKS, NULL, 0) == 1) {
			assert_int_equal(pt_reader_next_chunk(b, PT_READER_ALL_CHUNKS, NULL, 0), 1);
			int n;
			while ((n = pt_reader_next_records(b, rb, batch, sizeof(*rb))) > 0)
				for (int k = 0; k < n; k++) {
					assert_int_equal(pt_reader_next_record(a, &ra, sizeof(ra)), 1);
					assert_int_equal(ra.kind, rb[k].kind);
					assert_int_equal(ra.ticks, rb[k].ticks);
					assert_int_equal(ra.value, rb[k].value);
					assert_int_equal(ra.id, rb[k].id);
					total++;
				}
			assert_int_equal(n, 0);
			assert_int_equal(pt_reader_next_record(a, &ra, sizeof(ra)), 0);
		}
		assert_true(total > 60000);
		pt_reader_close(a);
		pt_reader_close(b);
	}
}

static void test_reader_open_missing_file_errno(void **state)
{
	(void)state;
	struct pt_reader *rd = (struct pt_reader *)1;
	assert_int_equal(pt_reader_open(tu_path("does-not-exist.ptz"), &rd), -ENOENT);
	assert_null(rd);
	assert_string_equal(pt_strerror(-PT_ECHECKSUM), "checksum mismatch");
	assert_string_equal(pt_strerror(-ENOENT), "No such file or directory");
}

static void test_reader_open_directory_is_errno(void **state)
{
	(void)state;
	struct pt_reader *rd = (struct pt_reader *)1;
	assert_int_equal(pt_reader_open(tu_tmpdir(), &rd), -EISDIR);
	assert_null(rd);
}

/* Pass 2 reads each chunk's header again (the index keeps 24 bytes a
 * chunk): a header damaged, or replaced by another valid one, after the
 * reader opened the file is reported at its offset and that chunk skipped;
 * the other chunks are read as indexed. */
static void test_reader_header_changed_after_open(void **state)
{
	(void)state;
	const char *path = tu_path("hdr-changed.ptz");
	struct fmt_writer_hdr hd = { .clock_source = PT_CLOCK_MONOTONIC, .pid = 1, .process_name = "p", .host = "h", .cmdline = "c",
				     .recorder_version = "test" };
	struct fmt_writer *w;
	assert_int_equal(fmt_writer_open(path, &hd, &w), 0);
	uint8_t buf[256];
	struct fmt_enc e;
	uint64_t off[4];
	for (uint64_t k = 0; k < 4; k++) {
		fmt_enc_reset(&e, buf, sizeof(buf));
		struct pt_record b = { .kind = PT_REC_BEGIN, .id = 1, .ticks = 100 * k + 1 };
		struct pt_record x = { .kind = PT_REC_END, .id = 1, .ticks = 100 * k + 50 };
		assert_int_equal(fmt_enc_record(&e, &b), 0);
		assert_int_equal(fmt_enc_record(&e, &x), 0);
		struct fmt_chunk_hdr h = { .kind = FMT_CHUNK_EVENTS, .thread = 0, .records = e.records, .sequence = k,
					   .first_ticks = e.first_ticks, .last_ticks = e.last_ticks };
		off[k] = fmt_writer_committed(w);
		assert_int_equal(fmt_writer_append(w, &h, buf, (size_t)(e.pos - buf), 0), 0);
	}
	assert_int_equal(fmt_writer_close(w), 0);
	struct pt_reader *rd;
	assert_int_equal(pt_reader_open(path, &rd), 0);
	assert_int_equal(pt_reader_problem_count(rd), 0);
	/* chunk 1: a byte of its header flipped; chunk 2: a valid header of
	 * another sequence (checksum recomputed) */
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	uint8_t hb[PT_FMT_CHUNK_HEADER_BYTES];
	assert_int_equal(pread(fd, hb, sizeof(hb), (off_t)off[1]), (ssize_t)sizeof(hb));
	hb[20] ^= 0x40;
	assert_int_equal(pwrite(fd, hb, sizeof(hb), (off_t)off[1]), (ssize_t)sizeof(hb));
	struct fmt_chunk_hdr h;
	const char *why;
	assert_int_equal(pread(fd, hb, sizeof(hb), (off_t)off[2]), (ssize_t)sizeof(hb));
	assert_int_equal(fmt_chunk_hdr_parse(hb, &h, &why), 0);
	h.sequence = 9;
	fmt_chunk_hdr_write(hb, &h);
	assert_int_equal(pwrite(fd, hb, sizeof(hb), (off_t)off[2]), (ssize_t)sizeof(hb));
	close(fd);
	struct pt_chunk_info ci;
	uint64_t seen[4];
	int n = 0;
	while (pt_reader_next_chunk(rd, PT_READER_ALL_CHUNKS, &ci, sizeof(ci)) == 1) {
		if (ci.thread == PT_FMT_META_THREAD)
			continue;
		assert_true(n < 4);
		seen[n++] = ci.sequence;
	}
	assert_int_equal(n, 2);
	assert_int_equal(seen[0], 0);
	assert_int_equal(seen[1], 3);
	assert_int_equal(pt_reader_info(rd)->damaged_chunks, 2);
	assert_int_equal(pt_reader_problem_count(rd), 2);
	uint64_t po;
	assert_non_null(strstr(pt_reader_problem(rd, 0, &po), "checksum"));
	assert_int_equal(po, off[1]);
	assert_non_null(strstr(pt_reader_problem(rd, 1, &po), "header changed since the file was opened"));
	assert_int_equal(po, off[2]);
	pt_reader_close(rd);
	unlink(path);
}

/* Crafted tables: a clock slope of 2^62 ns per tick, one point only, a
 * thread name starting with NUL. Under UBSan/ASan these caught undefined
 * float->int conversions and a leaked name. */
static void test_reader_crafted_tables_are_safe(void **state)
{
	(void)state;
	const char *path = tu_path("crafted.ptz");
	struct fmt_writer_hdr hd = { .clock_source = PT_CLOCK_TSC };
	struct fmt_writer *w;
	assert_int_equal(fmt_writer_open(path, &hd, &w), 0);
	uint8_t buf[256];
	struct fmt_enc e;
	fmt_enc_reset(&e, buf, sizeof(buf));
	fmt_enc_clock(&e, 0, 0, 0, 1);
	fmt_enc_clock(&e, 1, 1ull << 62, 0, 1);
	fmt_enc_thread(&e, 0, 10, 5, 0, "\0x", 2);
	fmt_enc_thread(&e, 0, 10, 5, 0, "\0y", 2);
	struct fmt_chunk_hdr mh = { .kind = FMT_CHUNK_META, .thread = PT_FMT_META_THREAD, .records = e.records };
	assert_int_equal(fmt_writer_append(w, &mh, buf, (size_t)(e.pos - buf), 1), 0);
	assert_int_equal(fmt_writer_close(w), 0);
	struct pt_reader *rd;
	assert_int_equal(pt_reader_open(path, &rd), 0);
	assert_int_equal(pt_reader_ticks_to_ns(rd, 100), UINT64_MAX); /* clamped, not undefined */
	assert_int_equal(pt_reader_ticks_to_ns(rd, 0), 0);
	pt_reader_close(rd);

	/* a single calibration point: 1 tick = 1 ns, clamped at 0 below it */
	path = tu_path("onepoint.ptz");
	assert_int_equal(fmt_writer_open(path, &hd, &w), 0);
	fmt_enc_reset(&e, buf, sizeof(buf));
	fmt_enc_clock(&e, 5000, 9000, 0, 1);
	mh.records = e.records;
	assert_int_equal(fmt_writer_append(w, &mh, buf, (size_t)(e.pos - buf), 1), 0);
	assert_int_equal(fmt_writer_close(w), 0);
	assert_int_equal(pt_reader_open(path, &rd), 0);
	assert_int_equal(pt_reader_ticks_to_ns(rd, 10), 4010);
	assert_int_equal(pt_reader_ticks_to_ns(rd, 6000), 10000);
	assert_true(pt_reader_problem_count(rd) >= 1); /* the single point is reported */
	pt_reader_close(rd);
}

/* A thread table listed out of index order, chunks of threads never
 * listed, and sequence gaps on two threads: pt_reader_thread() gives the
 * threads by ascending index (the table is kept sorted), and the gaps are
 * reported thread by thread in index order, each in file order. */
static void test_reader_thread_table_order_and_gaps(void **state)
{
	(void)state;
	const char *path = tu_path("threads.ptz");
	const struct fmt_writer_hdr hd = { .clock_source = PT_CLOCK_TSC, .pid = 1, .process_name = "p", .host = "h",
					   .cmdline = "c", .recorder_version = "t" };
	struct fmt_writer *w;
	assert_int_equal(fmt_writer_open(path, &hd, &w), 0);
	uint8_t *buf = malloc(1 << 16);
	struct fmt_enc e;
	enum { NT = 300 };
	fmt_enc_reset(&e, buf, 1 << 16);
	for (uint32_t k = 0; k < NT; k++) { /* indexes 3 * (NT - 1 - k) + 1: descending */
		uint32_t idx = 3 * (NT - 1 - k) + 1;
		char name[16];
		int n = snprintf(name, sizeof(name), "t%u", idx);
		assert_int_equal(fmt_enc_thread(&e, idx, 1000 + idx, 0, 0, name, (size_t)n), 0);
	}
	struct fmt_chunk_hdr mh = { .kind = FMT_CHUNK_META, .thread = PT_FMT_META_THREAD };
	assert_int_equal(fmt_enc_clock(&e, 0, 0, 0, 1), 0);
	assert_int_equal(fmt_enc_clock(&e, 1000000, 1000000, 1000000, 1), 0);
	mh.records = e.records;
	assert_int_equal(fmt_writer_append(w, &mh, buf, (size_t)(e.pos - buf), 1), 0);
	/* chunks: thread 7 sequences 0, 2 (gap); thread 2 (never listed) 0; thread 4 sequence 1 (earlier missing);
	 * thread 7 sequence 5 (gap) */
	const struct { uint32_t t; uint64_t seq; } ch[] = { { 7, 0 }, { 7, 2 }, { 2, 0 }, { 4, 1 }, { 7, 5 } };
	for (size_t i = 0; i < sizeof(ch) / sizeof(ch[0]); i++) {
		fmt_enc_reset(&e, buf, 1 << 16);
		fmt_enc_begin(&e, 10 * i + 1, 1);
		fmt_enc_end(&e, 10 * i + 2, 1);
		struct fmt_chunk_hdr h = { .kind = FMT_CHUNK_EVENTS, .thread = ch[i].t, .records = e.records,
					   .sequence = ch[i].seq, .first_ticks = e.first_ticks, .last_ticks = e.last_ticks };
		assert_int_equal(fmt_writer_append(w, &h, buf, (size_t)(e.pos - buf), 1), 0);
	}
	assert_int_equal(fmt_writer_close(w), 0);
	free(buf);

	struct pt_reader *rd;
	assert_int_equal(pt_reader_open(path, &rd), 0);
	assert_int_equal(pt_reader_thread_count(rd), NT + 1); /* and thread 2, from its chunk */
	uint32_t prev = 0;
	for (size_t i = 0; i < NT + 1; i++) {
		struct pt_thread_info ti;
		assert_int_equal(pt_reader_thread(rd, i, &ti, sizeof(ti)), 1);
		if (i)
			assert_true(ti.index > prev);
		prev = ti.index;
		if (ti.index == 2)
			assert_int_equal(ti.tid, 0);
		else
			assert_int_equal(ti.tid, 1000 + ti.index);
	}
	assert_int_equal(pt_reader_problem_count(rd), 3);
	uint64_t off;
	assert_string_equal(pt_reader_problem(rd, 0, &off), "thread 4: chunk sequence 1 follows 0 (earlier chunks missing)");
	assert_string_equal(pt_reader_problem(rd, 1, &off), "thread 7: chunk sequence 2 follows 0 (chunks missing)");
	assert_string_equal(pt_reader_problem(rd, 2, &off), "thread 7: chunk sequence 5 follows 2 (chunks missing)");
	pt_reader_close(rd);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_enc_dec_random_streams_roundtrip),
		cmocka_unit_test(test_dec_fast_paths_match_next),
		cmocka_unit_test(test_enc_end_top_omits_id),
		cmocka_unit_test(test_dec_unknown_length_prefixed_kind_skipped),
		cmocka_unit_test(test_dec_bad_input_is_corrupt),
		cmocka_unit_test(test_chunk_hdr_roundtrip_and_rejects),
		cmocka_unit_test(test_writer_reader_file_roundtrip),
		cmocka_unit_test(test_reader_next_records_batches_match),
		cmocka_unit_test(test_reader_open_missing_file_errno),
		cmocka_unit_test(test_reader_open_directory_is_errno),
		cmocka_unit_test(test_reader_header_changed_after_open),
		cmocka_unit_test(test_reader_crafted_tables_are_safe),
		cmocka_unit_test(test_reader_thread_table_order_and_gaps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
