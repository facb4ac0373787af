/*
 * tests/export/gpu/gen_gpu_trace.c OUT.ptz [--random SEED] - writes a
 * format 1.1 trace with
 * GPU ranges, async ranges, instants and the recorder's "ptz-gpu" thread at
 * chosen ticks, for check_gpu_export.py (which holds the expected export of
 * every record below, so keep the two in step).
 *
 * 1 tick = 1 ns on CLOCK_MONOTONIC (clock records (0, 0) and (1e9, 1e9), the
 * header's start triple on the same line); times below are ns after
 * T0 = 1 ms, which is also the header's start.
 *
 * What it exercises (doc/export.md §3):
 *  - two devices, two streams on device 0 whose ranges overlap in time
 *    (seq 1 on stream 7 and seq 2 on stream 8), a range on device 1;
 *  - ranges written before their launch in file order (the first "ptz-gpu"
 *    chunk precedes the application's chunks);
 *  - a GPU start mapped 50 ns before its launch (seq 4: clamped, offset
 *    -50 ns kept);
 *  - a launch whose GPU half was lost (seq 5: no range, so no flow);
 *  - nested ranges on one stream (seq 7 inside seq 6; seq 11 inside seq 10,
 *    both starting at the same tick and written inner first) and a range
 *    starting exactly where another ends (seq 8 at seq 6's end: siblings);
 *  - a range that partially overlaps another on its stream (seq 9 on
 *    stream 8: a second lane), and one that overlaps the range before it
 *    by 1 ns, the boundary jitter of back-to-back kernels (seq 13 on
 *    device 1 stream 9: its start moves to that end, same lane);
 *  - a launch on a second thread (seq 9 from "worker"), whose section
 *    declares 400 FLOPs, 600 bytes read and a 1000-byte D2D transfer: its
 *    GPU range's rates over its 200 ns of GPU time (doc/export.md);
 *  - async ranges crossing threads (0x100 begun on main, ended on worker),
 *    overlapping (0x101 inside 0x100's time: lane 1; 0x104 when lane 0 is
 *    busy and lane 1 free again: lane 1), reusing lane 0 (0x102), an
 *    ASYNC_END with no begin (0x999) and a begin never ended (0x103);
 *  - instants on both application threads and on "ptz-gpu";
 *  - the "ptz-gpu" thread's counters (device memory, RSS) and an ERROR
 *    GPU_EARLY_START it writes.
 *
 * With --random SEED it writes a different trace instead: 400 launches
 * from two threads (nested CPU sections) on 2 devices x 3 streams whose
 * GPU ranges start from 30 ns before to 200 ns after their launch and last
 * 0 to 300 ns, so they overlap, nest, partially overlap and start early at
 * random (1 in 6 starts 1 ns before the previous range of its stream
 * ends: jitter); about 1 in 16 GPU halves lost; the ranges written in random
 * order in four "ptz-gpu" chunks, the first before any launch; 200 async
 * ranges across both threads, some never ended, and some ends without a
 * begin. It prints what the exports must hold as JSON on stdout: every
 * GPU range (name, seq, device, stream, clamped start and end in ns after
 * T0, raw start offset from the launch) and CPU launch (seq, thread,
 * start), every async range (name, begin, end, whether never ended) and
 * the number of unmatched ends, and the trace's last tick.
 *
 * With --staircase N: N "kernA" ranges on device 0 stream 7 only, the i-th
 * from 1000 i to 1000 (i + N) + 5000 ns (each overlaps every other
 * partially, by more than the jitter snap, so none nests: one lane each up
 * to PFX_GPU_MAX_LANES, the rest not drawn).
 *
 * With --snapnest: on device 0 stream 5, "kernA" from 100 to 1000 ns, then
 * "outer" from 999 to 3000 ns and "inner", inside it, from 999 to 1500 ns:
 * outer's start moves over the 1 ns of jitter to 1000, and inner, nested
 * in it, must move with it (it began before its parent: a mis-nested track).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace-format/fmt_internal.h"

#define T0 1000000ull

enum {
	ID_STEP = 1,
	ID_KERNA,
	ID_KERNB,
	ID_COPY,
	ID_MARK,
	ID_LOAD,
	ID_PHASE,
	ID_DEVMEM,
	ID_RSS,
	ID_NOTE,
	ID_OUTER,
	ID_WORK,
	NIDS
};
static const char *const names[NIDS] = {
	NULL,    "step",  "kernA", "kernB", "copy", "mark", "load", "phase", "device memory used (all processes)",
	"process RSS", "gpu timing note", "outer", "work",
};

enum { TH_MAIN, TH_WORKER, TH_GPU, NTH };
static const char *const tnames[NTH] = { "main", "worker", PT_FMT_GPU_THREAD_NAME };

enum { OP_B = 1, OP_E, OP_K, OP_ERR, OP_I, OP_AB, OP_AE, OP_LAUNCH, OP_GPU, OP_CUT, OP_M, OP_X };
struct op {
	uint8_t k;
	uint32_t id;
	uint64_t t;
	uint64_t a, b, c, d; /* per kind, see the macros */
};
#define B(t, id) { OP_B, (id), T0 + (t), 0, 0, 0, 0 }
#define E(t, id) { OP_E, (id), T0 + (t), 0, 0, 0, 0 }
#define K(t, id, v) { OP_K, (id), T0 + (t), (v), 0, 0, 0 }
#define ERR(t, code, n) { OP_ERR, (code), T0 + (t), (n), 0, 0, 0 }
#define I(t, id) { OP_I, (id), T0 + (t), 0, 0, 0, 0 }
#define AB(t, id, aid) { OP_AB, (id), T0 + (t), (aid), 0, 0, 0 }
#define AE(t, aid) { OP_AE, 0, T0 + (t), (aid), 0, 0, 0 }
/* GPU_LAUNCH then the BEGIN of its section, same tick */
#define LB(t, id, dev, stream, seq) { OP_LAUNCH, (id), T0 + (t), (dev), (stream), (seq), 0 }, B(t, id)
/* GPU_RANGE: launch tick, device, stream, seq, GPU start and end */
#define G(launch, id, dev, stream, seq, start, end) \
	{ OP_GPU, (id), T0 + (launch), (dev), (stream), (seq), ((uint64_t)(T0 + (start)) << 32) | (T0 + (end)) }
#define CUT { OP_CUT, 0, 0, 0, 0, 0, 0 }
/* METRIC of kind k (enum pt_metric_kind), TRANSFER of direction d: amount v */
#define M(k, v) { OP_M, 0, 0, (k), (v), 0, 0 }
#define X(d, v) { OP_X, 0, 0, (d), (v), 0, 0 }

static const struct op main_ops[] = {
	B(100, ID_STEP),
	AB(150, ID_LOAD, 0x100),
	LB(200, ID_KERNA, 0, 7, 1), E(300, ID_KERNA),
	AB(300, ID_LOAD, 0x101),
	LB(400, ID_KERNB, 0, 8, 2), E(450, ID_KERNB),
	LB(500, ID_COPY, 1, 7, 3), E(600, ID_COPY),
	I(650, ID_MARK),
	AE(700, 0x101),
	E(1000, ID_STEP),
	LB(1100, ID_KERNA, 0, 7, 4), E(1200, ID_KERNA),
	CUT,
	LB(1300, ID_KERNB, 0, 7, 5), E(1350, ID_KERNB),
	AB(1500, ID_PHASE, 0x103),
	LB(2000, ID_OUTER, 0, 7, 6),
	LB(2010, ID_KERNA, 0, 7, 7), E(2100, ID_KERNA),
	LB(2120, ID_KERNB, 0, 7, 8), E(2130, ID_KERNB),
	E(2200, ID_OUTER),
};
static const struct op worker_ops[] = {
	B(50, ID_WORK), E(80, ID_WORK),
	LB(590, ID_KERNB, 0, 8, 9), M(3, 400), M(1, 600), X(3, 1000), E(595, ID_KERNB), /* FLOPs, read, D2D */
	AB(800, ID_LOAD, 0x104),
	I(820, ID_MARK),
	AE(850, 0x104),
	AE(900, 0x100),
	AB(950, ID_PHASE, 0x102),
	AE(1000, 0x999),
	B(1100, ID_WORK), E(1250, ID_WORK),
	LB(1300, ID_OUTER, 1, 7, 10),
	LB(1310, ID_COPY, 1, 7, 11), E(1320, ID_COPY),
	E(1330, ID_OUTER),
	AE(1400, 0x102),
	LB(1500, ID_KERNA, 1, 9, 12), E(1510, ID_KERNA),
	LB(1520, ID_KERNB, 1, 9, 13), E(1530, ID_KERNB),
};
static const struct op gpu_ops[] = {
	I(10, ID_NOTE),
	G(500, ID_COPY, 1, 7, 3, 520, 580),
	G(200, ID_KERNA, 0, 7, 1, 250, 500),
	K(260, ID_DEVMEM, 1073741824), K(260, ID_RSS, 50000000),
	CUT,
	G(400, ID_KERNB, 0, 8, 2, 420, 700),
	G(590, ID_KERNB, 0, 8, 9, 600, 800),
	G(1100, ID_KERNA, 0, 7, 4, 1050, 1180),
	ERR(1210, PT_ERRC_GPU_EARLY_START, 1),
	K(1220, ID_DEVMEM, 2147483648), K(1220, ID_RSS, 60000000),
	CUT,
	G(2010, ID_KERNA, 0, 7, 7, 2050, 2090),
	G(2000, ID_OUTER, 0, 7, 6, 2040, 2150),
	G(2120, ID_KERNB, 0, 7, 8, 2150, 2170),
	G(1310, ID_COPY, 1, 7, 11, 1400, 1450),
	G(1300, ID_OUTER, 1, 7, 10, 1400, 1500),
	G(1520, ID_KERNB, 1, 9, 13, 1799, 2000),
	G(1500, ID_KERNA, 1, 9, 12, 1600, 1800),
};

static uint8_t buf[1 << 16];
static uint64_t seqs[NTH];

static int flush(struct fmt_writer *w, struct fmt_enc *e, uint8_t kind, uint32_t thread)
{
	const struct fmt_chunk_hdr h = {
		.kind = kind,
		.thread = thread,
		.records = e->records,
		.sequence = thread == PT_FMT_META_THREAD ? 0 : seqs[thread]++,
		.first_ticks = e->first_ticks,
		.last_ticks = e->last_ticks,
	};
	int rc = fmt_writer_append(w, &h, buf, (size_t)(e->pos - buf), 3);
	fmt_enc_reset(e, buf, sizeof(buf));
	return rc;
}

/* Encodes ops[*from..] of @thread up to the end or a CUT as one chunk. */
static int events(struct fmt_writer *w, uint32_t thread, const struct op *ops, size_t n, size_t *from)
{
	struct fmt_enc e;
	int rc = 0;
	fmt_enc_reset(&e, buf, sizeof(buf));
	for (; *from < n && rc == 0; (*from)++) {
		const struct op *o = &ops[*from];
		switch (o->k) {
		case OP_CUT: (*from)++; goto out;
		case OP_B: fmt_enc_begin(&e, o->t, o->id); break;
		case OP_E: fmt_enc_end(&e, o->t, o->id); break;
		case OP_M: fmt_enc_metric(&e, (uint32_t)o->a, o->b); break;
		case OP_X: fmt_enc_transfer(&e, (uint32_t)o->a, o->b); break;
		case OP_K: fmt_enc_counter(&e, o->t, o->id, (int64_t)o->a); break;
		case OP_ERR: fmt_enc_error(&e, o->t, o->id, o->a); break;
		case OP_I: rc = fmt_enc_lp5(&e, PT_REC_INSTANT, o->id, 0, 0, 0, o->t); break;
		case OP_AB: rc = fmt_enc_lp5(&e, PT_REC_ASYNC_BEGIN, o->id, 0, o->a, 0, o->t); break;
		case OP_AE: rc = fmt_enc_lp5(&e, PT_REC_ASYNC_END, o->id, 0, o->a, 0, o->t); break;
		case OP_LAUNCH:
			rc = fmt_enc_lp5(&e, PT_REC_GPU_LAUNCH, o->id, (uint32_t)o->a, o->b, o->c, o->t);
			break;
		case OP_GPU:
			rc = fmt_enc_gpu_range(&e, o->id, (uint32_t)o->a, o->d >> 32, o->d & 0xffffffffu, o->t, o->c,
					       o->b);
			break;
		default: rc = -1; break;
		}
	}
out:
	if (rc)
		return rc;
	return flush(w, &e, FMT_CHUNK_EVENTS, thread);
}

/* ==== --random ==== */

static uint64_t rng;
static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

#define R_LAUNCHES 400
#define R_ASYNC 200
static struct op r_ops[NTH][8 * R_LAUNCHES];
static size_t r_n[NTH];

static void r_put(uint32_t th, struct op o)
{
	r_ops[th][r_n[th]++] = o;
}

static const char *const r_names[] = { "kernA", "kernB", "copy", "outer" };
static const uint32_t r_ids[] = { ID_KERNA, ID_KERNB, ID_COPY, ID_OUTER };

/* Writes the random trace's ops and prints the expectation. */
static void r_script(void)
{
	struct op gpu[R_LAUNCHES];
	size_t ngpu = 0;
	uint64_t seq = 1, last = 0, last_end[2][3] = { { 0 } };
	printf("{\"launch\": [");
	for (uint32_t th = 0; th < 2; th++) {
		uint64_t t = 1000 + th * 7;
		uint32_t stack[8], depth = 0;
		for (int i = 0; i < R_LAUNCHES / 2; i++) {
			/* close 0..depth sections, then open one with a launch */
			for (uint32_t k = rnd(depth + 1); k > 0; k--) {
				t += 1 + rnd(40);
				r_put(th, (struct op)E(t, stack[--depth]));
			}
			if (depth == 8) {
				t += 1 + rnd(40);
				r_put(th, (struct op)E(t, stack[--depth]));
			}
			t += 1 + rnd(40);
			const uint32_t which = rnd(4), dev = rnd(2), stream = 1 + rnd(3);
			r_put(th, (struct op){ OP_LAUNCH, r_ids[which], T0 + t, dev, stream, seq, 0 });
			r_put(th, (struct op)B(t, r_ids[which]));
			stack[depth++] = r_ids[which];
			printf("%s[%" PRIu64 ", %u, %" PRIu64 "]", seq == 1 ? "" : ", ", seq, th, t);
			if (rnd(16)) { /* else the GPU half is lost */
				uint64_t start = t + 170 - rnd(200); /* -30 .. +170 */
				uint64_t end = start + rnd(300);
				uint64_t *prev = &last_end[dev][stream - 1];
				if (rnd(6) == 0 && *prev > t) { /* back to back, 1 ns of jitter */
					start = *prev - 1;
					end = start + 100 + rnd(200);
				}
				*prev = end;
				gpu[ngpu++] = (struct op)G(t, r_ids[which], dev, stream, seq, start, end);
			}
			seq++;
		}
		while (depth) {
			t += 1 + rnd(40);
			r_put(th, (struct op)E(t, stack[--depth]));
		}
		last = t > last ? t : last;
	}
	printf("],\n \"end\": %" PRIu64 ",\n \"gpu\": [", last);
	for (size_t i = ngpu; i > 1; i--) { /* shuffle: file order is resolution order, any */
		size_t j = rnd((uint32_t)i);
		struct op x = gpu[i - 1];
		gpu[i - 1] = gpu[j];
		gpu[j] = x;
	}
	for (size_t i = 0; i < ngpu; i++) {
		const struct op *o = &gpu[i];
		const uint64_t launch = o->t - T0, raw = (o->d >> 32) - T0, end = (o->d & 0xffffffffu) - T0;
		const uint64_t start = raw > launch ? raw : launch;
		const char *name = "";
		for (size_t k = 0; k < 4; k++)
			if (r_ids[k] == o->id)
				name = r_names[k];
		printf("%s[\"%s\", %" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %" PRId64 "]",
		       i ? ", " : "", name, o->c, o->a, o->b, start, end > start ? end : start,
		       (int64_t)raw - (int64_t)launch);
		if (i && ngpu >= 4 && i % (ngpu / 4) == 0)
			r_put(TH_GPU, (struct op)CUT);
		r_put(TH_GPU, *o);
	}
	/* async: begins at random ticks in [0, 8000), ends up to 2000 later, on either thread */
	printf("],\n \"async\": [");
	uint64_t unmatched = 0;
	struct op abuf[2][2 * R_ASYNC + 16];
	size_t an[2] = { 0, 0 };
	for (uint32_t i = 0; i < R_ASYNC; i++) {
		const uint64_t b = rnd(8000), e = b + rnd(2000);
		const uint32_t id = rnd(2) ? ID_LOAD : ID_PHASE, open = rnd(20) == 0;
		uint32_t bt = rnd(2), et = rnd(2);
		abuf[bt][an[bt]++] = (struct op)AB(b, id, 0x1000 + i);
		if (!open)
			abuf[et][an[et]++] = (struct op)AE(e, 0x1000 + i);
		printf("%s[\"%s\", %" PRIu64 ", %" PRIu64 ", %u]", i ? ", " : "", id == ID_LOAD ? "load" : "phase", b,
		       open ? 0 : e, open);
	}
	for (uint32_t i = 0; i < 5; i++, unmatched++)
		abuf[i & 1][an[i & 1]++] = (struct op)AE(rnd(8000), 0x9000 + i);
	printf("],\n \"unmatched\": %" PRIu64 "}\n", unmatched);
	/* async records carry absolute ticks: append them to the threads' last chunk */
	for (uint32_t th = 0; th < 2; th++)
		for (size_t i = 0; i < an[th]; i++)
			r_put(th, abuf[th][i]);
}

int main(int argc, char **argv)
{
	const bool random = argc == 4 && !strcmp(argv[2], "--random");
	const bool stair = argc == 4 && !strcmp(argv[2], "--staircase");
	const bool snapnest = argc == 3 && !strcmp(argv[2], "--snapnest");
	if (argc != 2 && !random && !stair && !snapnest) {
		fprintf(stderr, "usage: %s OUT.ptz [--random SEED | --staircase N | --snapnest]\n", argv[0]);
		return 2;
	}
	if (random) {
		rng = strtoull(argv[3], NULL, 10) * 0x9E3779B97F4A7C15ull | 1;
		r_script();
	}
	const struct fmt_writer_hdr hd = {
		.clock_source = PT_CLOCK_TSC, .pid = 4242, .start_ticks = T0, .start_mono_ns = T0,
		.start_real_ns = 1700000000000000000ull, .process_name = "gpu-gen", .host = "testhost",
		.cmdline = "gen_gpu_trace", .recorder_version = "ptz-test 1",
	};
	struct fmt_writer *w;
	struct fmt_enc e;
	if (fmt_writer_open(argv[1], &hd, &w))
		return 1;
	fmt_enc_reset(&e, buf, sizeof(buf));
	for (uint32_t id = 1; id < NIDS; id++)
		fmt_enc_string(&e, id, 0, names[id], strlen(names[id]));
	for (uint32_t t = 0; t < NTH; t++)
		fmt_enc_thread(&e, t, 100 + t, T0, 0, tnames[t], strlen(tnames[t]));
	fmt_enc_clock(&e, 0, 0, 1700000000000000000ull - T0, 1);
	fmt_enc_clock(&e, 1000000000, 1000000000, 1700000000000000000ull - T0 + 1000000000, 1);
	if (flush(w, &e, FMT_CHUNK_META, PT_FMT_META_THREAD))
		return 1;
	if (snapnest) {
		fmt_enc_reset(&e, buf, sizeof(buf));
		if (fmt_enc_gpu_range(&e, ID_KERNA, 0, T0 + 100, T0 + 1000, T0 + 100, 1, 5) ||
		    fmt_enc_gpu_range(&e, ID_OUTER, 0, T0 + 999, T0 + 3000, T0 + 999, 2, 5) ||
		    fmt_enc_gpu_range(&e, ID_KERNB, 0, T0 + 999, T0 + 1500, T0 + 999, 3, 5) ||
		    flush(w, &e, FMT_CHUNK_EVENTS, TH_GPU))
			return 1;
		return fmt_writer_close(w) ? 1 : 0;
	}
	if (stair) {
		const uint64_t n = strtoull(argv[3], NULL, 10);
		fmt_enc_reset(&e, buf, sizeof(buf));
		for (uint64_t i = 0; i < n; i++) {
			if (!fmt_enc_room(&e, 80)) {
				if (flush(w, &e, FMT_CHUNK_EVENTS, TH_GPU))
					return 1;
				fmt_enc_reset(&e, buf, sizeof(buf));
			}
			const uint64_t t = T0 + 1000 * i;
			if (fmt_enc_gpu_range(&e, ID_KERNA, 0, t, t + 1000 * n + 5000, t, i + 1, 7))
				return 1;
		}
		if (flush(w, &e, FMT_CHUNK_EVENTS, TH_GPU))
			return 1;
		return fmt_writer_close(w) ? 1 : 0;
	}
	if (random) { /* file order: gpu 0, main, gpu 1, worker, gpu 2, gpu 3 */
		size_t f[NTH] = { 0, 0, 0 };
		if (events(w, TH_GPU, r_ops[TH_GPU], r_n[TH_GPU], &f[TH_GPU]) ||
		    events(w, TH_MAIN, r_ops[TH_MAIN], r_n[TH_MAIN], &f[TH_MAIN]) ||
		    events(w, TH_GPU, r_ops[TH_GPU], r_n[TH_GPU], &f[TH_GPU]) ||
		    events(w, TH_WORKER, r_ops[TH_WORKER], r_n[TH_WORKER], &f[TH_WORKER]))
			return 1;
		while (f[TH_GPU] < r_n[TH_GPU])
			if (events(w, TH_GPU, r_ops[TH_GPU], r_n[TH_GPU], &f[TH_GPU]))
				return 1;
		return fmt_writer_close(w) ? 1 : 0;
	}
	/* file order: gpu 0, main 0, worker, gpu 1, main 1, gpu 2 */
	size_t m = 0, wk = 0, g = 0;
	const size_t nm = sizeof(main_ops) / sizeof(main_ops[0]), nw = sizeof(worker_ops) / sizeof(worker_ops[0]),
		     ng = sizeof(gpu_ops) / sizeof(gpu_ops[0]);
	if (events(w, TH_GPU, gpu_ops, ng, &g) || events(w, TH_MAIN, main_ops, nm, &m) ||
	    events(w, TH_WORKER, worker_ops, nw, &wk) || events(w, TH_GPU, gpu_ops, ng, &g) ||
	    events(w, TH_MAIN, main_ops, nm, &m) || events(w, TH_GPU, gpu_ops, ng, &g))
		return 1;
	if (m != nm || wk != nw || g != ng)
		return 1;
	return fmt_writer_close(w) ? 1 : 0;
}
