/*
 * replay/replay.h - what a section is: the one set of rules by which every
 * reader of a trace (the analyzer, analyzer/ana_build.c; the Perfetto and
 * Chrome JSON exports, viewer-export/) turns a thread's records into
 * nested sections. Each consumer keeps its own frames (what it sums per
 * open section differs), and asks this header every question of nesting:
 * so the report, the CSV, the JSON and both viewers count the same
 * sections with the same bounds (doc/analyzer-output.md §1-2,
 * doc/export.md §1; tests/export/agree checks it on every golden, corrupt
 * and edge trace).
 *
 * Internal, header-only and inline: the analyzer calls these from its
 * fused decode loop, where a call would cost more than the rule (the
 * client-template pattern of lttng-ust's ring buffer, but with plain
 * functions over the consumer's frame array: offsetof() of the frame's id
 * field is a constant, so rp_end() compiles to the loop a consumer would
 * write itself).
 *
 * The rules, per thread, in record order:
 *
 *  1. Chunks. A chunk whose sequence is not the one after the thread's
 *     previous chunk follows lost chunks: the sections open before it are
 *     *cut by a gap* (their ENDs may be in the lost chunks); the consumer
 *     drops them from its stack (rp_chunk() returns true; rp_cut()).
 *
 *  2. Time never goes back on a thread. The writer clamps a tick below the
 *     previous one within a chunk (doc/trace-format.md §4.2); across chunks
 *     a TSC not synchronized between cores can still step back. The ticks
 *     of a timed or untimed fixed-layout record (BEGIN, END, END_TOP,
 *     METRIC, TRANSFER, COUNTER, LOSS, ERROR) below the largest such tick
 *     of the thread so far are raised to it (rp_ticks()): a section never
 *     ends before it begins, and a child never begins before its parent.
 *     Length-prefixed records (INSTANT, ASYNC_*, GPU_*) carry their own
 *     absolute ticks and are not changed. Since ticks never decrease within
 *     a chunk, a chunk whose first_ticks is at or above the thread's
 *     largest tick needs no clamping at all (rp_chunk_clamps()).
 *
 *  3. Depth. At most RP_MAX_DEPTH sections are open at once per thread. A
 *     BEGIN past that is *too deep*: not pushed, counted (rp_begin()); each
 *     END while such BEGINs are open closes the innermost of them, whatever
 *     its name (rp_end() returns RP_END_TOO_DEEP). A cut (rule 1) forgets
 *     them too.
 *
 *  4. END matching. An END of the innermost section's name closes it. An
 *     END of a name open deeper closes the nearest such section; the
 *     sections above it never ended and close at the same tick, as
 *     *misuse*. An END whose name is not open is *unmatched* and ignored.
 *     rp_end() returns how many frames close (0: unmatched).
 *
 *  5. Open at the end. Sections still open after the thread's last record
 *     are *open at the end*: not closed. The analyzer counts them; the
 *     Perfetto export draws them to the thread's last tick, flagged; the
 *     Chrome JSON leaves them out (doc/export.md §4).
 *
 *  6. Metrics and transfers belong to the innermost open section (none
 *     open: unattributed) and roll up, inclusively, into each enclosing one
 *     when it closes; sums saturate at 2^64 - 1 (struct rp_sums).
 *
 *  7. Window. With --since/--until, a section is kept when it lies wholly
 *     inside [since, until] in ticks (rp_kept()); the window's ticks come
 *     from ana_window_ticks()/pfx_window_ticks() (the trace's slope).
 *
 *  8. GPU launch. A GPU_LAUNCH marks the BEGIN that immediately follows it
 *     in the same chunk, when that BEGIN has the launch's section id: that
 *     section is the CPU half of the GPU range with the launch's seq
 *     (doc/trace-format.md §4.4; rp_launch_note(), rp_launch_of()).
 *
 *  9. Pairs. A GPU_LAUNCH and a GPU_RANGE pair by seq, an ASYNC_BEGIN and
 *     an ASYNC_END by async id: the k-th half of one side read under a key
 *     with the k-th half of the other side read under it; key 0 never
 *     pairs (replay/pair.h, not inline: it is not per record).
 *
 * Thread safety: none needed; one struct rp_thread (and struct rp_ns) per
 * thread being read, by one reader thread.
 */
#ifndef PTZ_REPLAY_H
#define PTZ_REPLAY_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */
#include <stdint.h>  /* uint*_t */
#include <string.h>  /* memcpy */

#include "ptz/format.h"                 /* enum pt_record_kind, struct pt_record */
#include "trace-format/fmt_internal.h" /* struct fmt_ns_conv */

/* Rule 3: sections open at once per thread (2^18; about 250 MB of the
 * analyzer's frames at the limit). */
#define RP_MAX_DEPTH (1u << 18)

/* rp_end(): the END closed the innermost too-deep BEGIN (rule 3). */
#define RP_END_TOO_DEEP UINT32_MAX

/* Metric kinds (enum pt_metric_kind 1..3) and transfer directions
 * (enum pt_direction 1..4) a struct rp_sums holds. */
#define RP_NMETRIC 3
#define RP_NDIR 4

/* Saturating addition (rule 6). */
static inline uint64_t rp_sat_add(uint64_t a, uint64_t b)
{
	uint64_t s;
	return __builtin_add_overflow(a, b, &s) ? UINT64_MAX : s;
}
#define RP_SAT_ADD(x, v) ((x) = rp_sat_add((x), (v)))

/** struct rp_thread - the replay state of one thread. Zero-initialize. */
struct rp_thread {
	uint64_t next_seq;   /* the sequence the thread's next chunk should have */
	uint64_t mono;       /* rule 2: the largest tick of the thread's fixed-layout records so far */
	uint64_t excess;     /* rule 3: too-deep BEGINs still open */
	uint64_t launch_seq; /* rule 8: the GPU_LAUNCH just read, if launch_pending */
	uint32_t launch_id;
	bool launch_pending;
};

/*
 * Rule 1: a chunk of the thread with sequence @sequence begins. Returns
 * true when chunks were lost before it: the caller cuts its open stack
 * (and calls rp_cut()).
 */
static inline bool rp_chunk(struct rp_thread *t, uint64_t sequence)
{
	bool gap = sequence != t->next_seq;
	t->next_seq = sequence + 1;
	t->launch_pending = false; /* a launch and its BEGIN share a chunk */
	return gap;
}

/* Rule 1/3: the stack was cut; the too-deep BEGINs go with it. Returns how many there were. */
static inline uint64_t rp_cut(struct rp_thread *t)
{
	uint64_t n = t->excess;
	t->excess = 0;
	return n;
}

/* Rule 2: whether a chunk whose first timed tick is @first_ticks has records to clamp. */
static inline bool rp_chunk_clamps(const struct rp_thread *t, uint64_t first_ticks)
{
	return first_ticks < t->mono;
}

/* Rule 2, for a chunk that needed no clamping: @last_ticks is the decoder's T after it. */
static inline void rp_chunk_done(struct rp_thread *t, uint64_t last_ticks)
{
	if (last_ticks > t->mono)
		t->mono = last_ticks;
}

/* Rule 2: the ticks a record of kind @kind read at @ticks has. */
static inline uint64_t rp_ticks(struct rp_thread *t, uint32_t kind, uint64_t ticks)
{
	if (kind >= PT_REC_INSTANT) /* length-prefixed: absolute ticks of its own */
		return ticks;
	if (ticks < t->mono)
		return t->mono;
	t->mono = ticks;
	return ticks;
}

/*
 * Rule 3: a BEGIN with @depth sections on the stack. True: push it. False:
 * too deep, counted in t->excess (the caller counts it in its report).
 */
static inline bool rp_begin(struct rp_thread *t, uint32_t depth)
{
	if (__builtin_expect(depth < RP_MAX_DEPTH, 1))
		return true;
	t->excess++;
	return false;
}

/*
 * Rule 4: an END of section @id with @depth frames on the stack @st
 * (frames of @stride bytes, each with its uint32_t section id at byte
 * @id_off). Returns 0 (unmatched: ignored) or n >= 1: the top n frames
 * close at the END's tick, the n-th from the top being the one the END
 * ends and the n - 1 above it misuse. For a caller that handled rule 3
 * itself (t->excess == 0); others call rp_end().
 */
static inline __attribute__((always_inline)) uint32_t rp_end_match(const void *st, size_t stride, size_t id_off,
								   uint32_t depth, uint32_t id)
{
	const unsigned char *b = (const unsigned char *)st;
	for (uint32_t k = depth; k-- > 0;) {
		uint32_t fid;
		memcpy(&fid, b + (size_t)k * stride + id_off, sizeof(fid));
		if (__builtin_expect(fid == id, 1))
			return depth - k;
	}
	return 0;
}

/* Rules 3 and 4: as rp_end_match(), or RP_END_TOO_DEEP: the END closed the
 * innermost too-deep BEGIN (nothing on the stack changes). */
static inline __attribute__((always_inline)) uint32_t rp_end(struct rp_thread *t, const void *st, size_t stride,
							     size_t id_off, uint32_t depth, uint32_t id)
{
	if (__builtin_expect(t->excess != 0, 0)) {
		t->excess--;
		return RP_END_TOO_DEEP;
	}
	return rp_end_match(st, stride, id_off, depth, id);
}

/* rp_end() and rp_end_match() over a consumer's frame array @st whose frames have a uint32_t field `id`. */
#define RP_END(t, st, depth, sec) rp_end((t), (st), sizeof(*(st)), offsetof(__typeof__(*(st)), id), (depth), (sec))
#define RP_END_MATCH(st, depth, sec) rp_end_match((st), sizeof(*(st)), offsetof(__typeof__(*(st)), id), (depth), (sec))

/* Rule 7: whether a section from @start to @end (ticks) is inside the window [@since, @until]. */
static inline bool rp_kept(uint64_t since, uint64_t until, uint64_t start, uint64_t end)
{
	return start >= since && end <= until;
}

/* Rule 8: a GPU_LAUNCH record @r was read; it marks the next record if that is its BEGIN. */
static inline void rp_launch_note(struct rp_thread *t, const struct pt_record *r)
{
	t->launch_pending = true;
	t->launch_id = r->id;
	t->launch_seq = r->value2;
}

/*
 * Rule 8: call for every record after rp_launch_note() could have been
 * called for the one before (the pending mark lasts one record). Returns
 * the launch seq of a BEGIN that a GPU_LAUNCH marks, else 0 (seq 0 is a
 * format 1.0 body: no pairing).
 */
static inline uint64_t rp_launch_of(struct rp_thread *t, uint32_t kind, uint32_t id)
{
	if (__builtin_expect(!t->launch_pending, 1))
		return 0;
	t->launch_pending = false;
	return kind == PT_REC_BEGIN && id == t->launch_id ? t->launch_seq : 0;
}

/** struct rp_sums - rule 6: what a section declared itself and inclusively. */
struct rp_sums {
	uint64_t m_self[RP_NMETRIC], m_incl[RP_NMETRIC]; /* by enum pt_metric_kind - 1 */
	uint64_t x_self[RP_NDIR], x_incl[RP_NDIR];       /* bytes by enum pt_direction - 1 */
	uint64_t x_count[RP_NDIR];                       /* transfers by direction, self */
};

/* Rule 6: whether a METRIC (@kind PT_REC_METRIC) or TRANSFER with @aux counts (a known metric kind or direction). */
static inline bool rp_sums_aux_ok(uint32_t kind, uint32_t aux)
{
	return aux >= 1 && aux <= (kind == PT_REC_METRIC ? RP_NMETRIC : RP_NDIR);
}

/* Rule 6: a METRIC (@kind PT_REC_METRIC) or TRANSFER of @aux and @value into @s. False: @aux out of range, ignored. */
static inline bool rp_sums_add(struct rp_sums *s, uint32_t kind, uint32_t aux, uint64_t value)
{
	if (kind == PT_REC_METRIC) {
		if (aux < 1 || aux > RP_NMETRIC)
			return false;
		RP_SAT_ADD(s->m_self[aux - 1], value);
		RP_SAT_ADD(s->m_incl[aux - 1], value);
		return true;
	}
	if (aux < 1 || aux > RP_NDIR)
		return false;
	RP_SAT_ADD(s->x_self[aux - 1], value);
	RP_SAT_ADD(s->x_incl[aux - 1], value);
	s->x_count[aux - 1]++;
	return true;
}

/* Rule 6: a closed section's inclusive sums @child go up into its enclosing one's @parent. */
static inline void rp_sums_roll_up(struct rp_sums *parent, const struct rp_sums *child)
{
#pragma GCC unroll 4 /* in full: the loop counters were a third of the roll-up */
	for (int k = 0; k < RP_NMETRIC; k++)
		RP_SAT_ADD(parent->m_incl[k], child->m_incl[k]);
#pragma GCC unroll 4
	for (int k = 0; k < RP_NDIR; k++)
		RP_SAT_ADD(parent->x_incl[k], child->x_incl[k]);
}

/*
 * Time. A consumer converting a thread's ticks to CLOCK_MONOTONIC ns in
 * record order (the exports) uses one struct rp_ns per thread of its own:
 * pt_reader_ticks_to_ns() bit for bit, with the clock segment of the last
 * conversion tried first (the table search and a libm call were a quarter
 * of an export's instructions).
 */
struct rp_ns {
	struct fmt_ns_conv k;
};
static inline void rp_ns_init(struct rp_ns *n, const struct pt_reader *rd)
{
	fmt_ns_conv_init(&n->k, rd);
}
static inline uint64_t rp_ns(struct rp_ns *n, uint64_t ticks)
{
	return fmt_ns_conv(&n->k, ticks);
}

/*
 * Decoding. struct rp_dec gives the records of the chunk that
 * pt_reader_next_chunk() just positioned, exactly as pt_reader_next_record()
 * would (the same records, the same damage at the same byte, counted by the
 * reader), but decodes BEGIN, END, END_TOP and METRIC itself with
 * trace-format's fused helpers (fmt_internal.h), as the analyzer's loop
 * does: the call and the generic decoder cost an export about 100
 * instructions a record.
 */
struct rp_dec {
	struct pt_reader *rd;
	struct fmt_dec *d; /* NULL: through pt_reader_next_record() */
	struct fmt_fast f;
	/* one past the last position the fast helpers may start at (d->end -
	 * FMT_DEC_FAST_SLACK + 1, as an integer: an address is never below the
	 * slack); 0 without d, so one compare tests both */
	uintptr_t fast_end;
};

static inline void rp_dec_start(struct rp_dec *x, struct pt_reader *rd)
{
	x->rd = rd;
	x->d = fmt_reader_chunk_dec(rd);
	x->f = (struct fmt_fast){ NULL, 0, 0 };
	x->fast_end = 0;
	if (x->d) {
		fmt_fast_load(&x->f, x->d);
		x->fast_end = (uintptr_t)x->d->end - FMT_DEC_FAST_SLACK + 1;
	}
}

static inline void rp_dec_fill(struct pt_record *r, uint32_t kind, uint32_t id, uint32_t aux, uint64_t value,
			       uint64_t ticks)
{
	r->kind = kind;
	r->id = id;
	r->aux = aux;
	r->value = value;
	r->value2 = r->value3 = r->value4 = 0;
	r->ticks = ticks;
	r->str = NULL;
	r->str_len = 0;
}

/* A BEGIN, END or METRIC decoded by the fused helpers, its fields into
 * *@kind .. *@ticks (those of a pt_record; the others are 0): true. False:
 * no decoder, fewer than FMT_DEC_FAST_SLACK bytes left, another tag, or
 * something the helpers decline; nothing was consumed (rp_dec_slow()). */
static inline bool rp_dec_fast(struct rp_dec *x, uint32_t *kind, uint32_t *id, uint32_t *aux, uint64_t *value,
			       uint64_t *ticks)
{
	if ((uintptr_t)x->f.pos >= x->fast_end) /* no chunk decoder, or the slack is not left */
		return false;
	const uint8_t tag = x->f.pos[0];
	if (tag == PT_REC_BEGIN) {
		if (!fmt_dec_fast_begin(&x->f, x->d->stack, id))
			return false;
		*kind = PT_REC_BEGIN;
		*aux = 0;
		*value = 0;
	} else if (tag == PT_REC_END || tag == FMT_TAG_END_TOP) {
		if (!fmt_dec_fast_end(&x->f, x->d->stack, id))
			return false;
		*kind = PT_REC_END;
		*aux = 0;
		*value = 0;
	} else if (tag == PT_REC_METRIC && fmt_dec_fast_metric(&x->f, aux, value)) {
		*kind = PT_REC_METRIC;
		*id = 0;
	} else {
		return false;
	}
	*ticks = x->f.ticks;
	return true;
}

/* The next record through the generic decoder (or the reader, without a
 * chunk decoder), as rp_dec_next() returns it. */
static inline int rp_dec_slow(struct rp_dec *x, struct pt_record *r)
{
	if (__builtin_expect(!x->d, 0))
		return pt_reader_next_record(x->rd, r, sizeof(*r));
	fmt_fast_store(&x->f, x->d);
	int rc = fmt_dec_next(x->d, r);
	fmt_fast_load(&x->f, x->d);
	if (rc <= 0)
		fmt_reader_chunk_done(x->rd, rc);
	return rc;
}

/* 1: a record in *@r; 0: the chunk's end; < 0: damage, the rest of the chunk is gone (the reader counted it). */
static inline int rp_dec_next(struct rp_dec *x, struct pt_record *r)
{
	uint32_t kind, id, aux;
	uint64_t value, ticks;
	if (rp_dec_fast(x, &kind, &id, &aux, &value, &ticks)) {
		rp_dec_fill(r, kind, id, aux, value, ticks);
		return 1;
	}
	return rp_dec_slow(x, r);
}

/*
 * rp_dec_next_rec() - rp_dec_next() for a consumer that keeps the fields of
 * BEGIN, END and METRIC in locals: those records set only *@kind, *@id,
 * *@aux, *@value and *@ticks (registers once inlined, where the 64-byte
 * *@r would be stored and read back); every other record fills *@r as
 * rp_dec_next() does, and the five fields from it.
 */
static inline int rp_dec_next_rec(struct rp_dec *x, struct pt_record *r, uint32_t *kind, uint32_t *id,
				  uint32_t *aux, uint64_t *value, uint64_t *ticks)
{
	if (rp_dec_fast(x, kind, id, aux, value, ticks))
		return 1;
	int rc = rp_dec_slow(x, r);
	*kind = r->kind;
	*id = r->id;
	*aux = r->aux;
	*value = r->value;
	*ticks = r->ticks;
	return rc;
}

#endif /* PTZ_REPLAY_H */
