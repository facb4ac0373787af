/*
 * recorder/rec_core.c - the public hot path (pt_begin, pt_end, pt_metric,
 * pt_transfer, pt_counter, instants, async ranges), the records written
 * off the hot path for the GPU and close (rec_emit() and kin), and the
 * by-title API (pt_start, pt_stop, the scope macros' helpers).
 *
 * Hot path (pt_begin/pt_end/pt_metric after a thread's first call): one TLS
 * load, one relaxed load of the recorder generation, one tick read, one
 * 16-byte slot store, one release store of head. No locks, syscalls,
 * allocation or string work. Everything else (first call on a thread,
 * recording disabled, recorder closed, ring nearly full) leaves through a
 * cold out-of-line function, which finds or makes the thread's ring with
 * rec_ring_for() (rec_registry.c).
 *
 * The ring's slot writes, publication and room checks are rec_ring.h's,
 * inlined here; its memory-order tags [P1]/[C1] (head) and [C2]/[P2]
 * (tail) are described there. Open/close: rec_open.c; the registry and
 * pt_stats(): rec_registry.c; fork(): rec_fork.c.
 */
#include <time.h> /* nanosleep: rec_close_emit() */

#include "common/struct_copy.h" /* copy_struct_in: metrics_in() */
#include "recorder/rec_internal.h"
#include "recorder/rec_ring.h"

/* Skips section @id whole (with everything begun inside it); a loss if @lost. */
static void skip_section(struct rec_ring *g, uint32_t id, bool lost)
{
	rec_ring_push_id(g, g->depth, id);
	g->skip_depth = 1;
	g->skip_lost = lost;
	if (lost) {
		rec_ring_bump(&g->lost_records, 1);
		rec_ring_bump(&g->lost_sections, 1);
	}
}

/*
 * Sections of this thread begun while it had no ring (its allocation
 * failed, or the thread is exiting), in recorder generation @gen: their
 * begin was counted as lost; their END (or pt_stop()) is too, even if a
 * ring exists by then, instead of a misuse error for an END with nothing
 * open.
 */
static _Thread_local struct {
	uint64_t gen;
	uint32_t open;
} noring;

void rec_noring_begin(struct pt_recorder *r)
{
	uint64_t gen = atomic_load_explicit(&r->gen, memory_order_relaxed);
	if (noring.gen != gen) {
		noring.gen = gen;
		noring.open = 0;
	}
	noring.open++;
}

/* true: this END closes a section begun without a ring (now counted) */
static bool noring_end(struct pt_recorder *r)
{
	if (!noring.open || noring.gen != atomic_load_explicit(&r->gen, memory_order_relaxed))
		return false;
	noring.open--;
	return true;
}

static PT_COLD void begin_slow(struct pt_recorder *r, uint32_t id)
{
	struct rec_ring *g = rec_ring_for(r);
	if (!g) {
		rec_noring_begin(r);
		return;
	}
	if (g->skip_depth) {
		/* skipped sections stay on the pt_stop() stack, above the recorded ones */
		rec_ring_push_id(g, g->depth + g->skip_depth, id);
		g->skip_depth++;
		if (g->skip_lost) {
			rec_ring_bump(&g->lost_records, 1);
			rec_ring_bump(&g->lost_sections, 1);
		}
		return;
	}
	if (!atomic_load_explicit(&r->enabled, memory_order_relaxed)) {
		skip_section(g, id, false);
		return;
	}
	uint64_t h = g->head_own;
	if (!rec_ring_room(g, h, rec_ring_need(g, 2 + REC_SLACK))) {
		skip_section(g, id, true);
		return;
	}
	rec_ring_put_begin(g, h, rec_ticks(), id);
	rec_ring_push_id(g, g->depth, id);
	g->depth++;
	rec_ring_publish(g, h + 1);
}

/* ---------------------------------------------------------------- hot path */

void pt_begin(pt_recorder *r, uint32_t id)
{
	if (unlikely(!r))
		return;
	struct rec_ring *g = rec_tls;
	/* relaxed: a stale generation only sends this call to the slow path,
	 * which rechecks with acquire */
	if (unlikely(!g || g->gen != atomic_load_explicit(&r->hot_gen, memory_order_relaxed) || g->skip_depth ||
		     !rec_ticks_inline_ok())) {
		begin_slow(r, id);
		return;
	}
	uint64_t h = g->head_own;
	if (unlikely(!rec_ring_fits_cached(g, h, rec_ring_need(g, 2 + REC_SLACK)))) {
		begin_slow(r, id);
		return;
	}
	rec_ring_put_begin(g, h, rec_ticks_inline(), id);
	rec_ring_push_id(g, g->depth, id);
	g->depth++;
	rec_ring_publish(g, h + 1);
}

static PT_COLD void end_slow(struct pt_recorder *r, uint32_t id);

static inline void end_record(struct rec_ring *g, uint32_t id, uint64_t t)
{
	uint64_t h = g->head_own;
	/* room reserved at BEGIN: no check needed */
	rec_ring_put_end(g, h, t, id);
	g->depth--;
	rec_ring_publish(g, h + 1);
}

static void error_record(struct rec_ring *g, uint32_t code, uint32_t count)
{
	rec_ring_bump(&g->errors, count);
	uint64_t h = g->head_own;
	if (!rec_ring_room(g, h, rec_ring_need(g, 1))) {
		rec_ring_bump(&g->lost_records, 1);
		return;
	}
	rec_ring_put_record(g, h, SLOT_ERROR, code, rec_ticks(), count);
	rec_ring_publish(g, h + 1);
}

void pt_end(pt_recorder *r, uint32_t id)
{
	if (unlikely(!r))
		return;
	struct rec_ring *g = rec_tls;
	if (unlikely(!g || g->gen != atomic_load_explicit(&r->gen, memory_order_relaxed) || g->skip_depth ||
		     g->depth == 0 || !rec_ticks_inline_ok())) {
		end_slow(r, id);
		return;
	}
	end_record(g, id, rec_ticks_inline());
}

static PT_COLD void end_slow(struct pt_recorder *r, uint32_t id)
{
	struct rec_ring *g = rec_ring_for(r);
	if (!g) {
		noring_end(r); /* counted by rec_ring_for() */
		return;
	}
	if (g->skip_depth) {
		g->skip_depth--;
		if (g->skip_lost)
			rec_ring_bump(&g->lost_records, 1);
		return;
	}
	if (g->depth == 0) {
		if (noring_end(r))
			rec_ring_bump(&g->lost_records, 1);
		else
			error_record(g, PT_ERRC_END_UNDERFLOW, 1);
		return;
	}
	end_record(g, id, rec_ticks());
}

/* Recording is on (pt_set_enabled()): instants, counters and async ranges
 * begun while it is off are not recorded. Relaxed, as for hot_gen. */
static inline bool rec_enabled(const struct pt_recorder *r)
{
	return atomic_load_explicit(&r->enabled, memory_order_relaxed);
}

static PT_COLD void payload_slow(struct pt_recorder *r, uint32_t kind, uint64_t v)
{
	struct rec_ring *g = rec_ring_for(r);
	if (!g)
		return;
	if (g->skip_depth) {
		if (g->skip_lost)
			rec_ring_bump(&g->lost_records, 1);
		return;
	}
	/* recording disabled: a thread-level metric or transfer (no section
	 * open) is not recorded; one inside a section begun while enabled
	 * belongs to it and is */
	if (g->depth == 0 && !rec_enabled(r))
		return;
	uint64_t h = g->head_own;
	if (!rec_ring_room(g, h, rec_ring_need(g, 1))) {
		rec_ring_bump(&g->lost_records, 1);
		return;
	}
	rec_ring_put_payload(g, h, kind, v);
	rec_ring_publish(g, h + 1);
}

static inline void payload(struct pt_recorder *r, uint32_t kind, uint64_t v)
{
	if (unlikely(!r))
		return;
	struct rec_ring *g = rec_tls;
	/* hot_gen, not gen: while recording is disabled (hot_gen 0) the slow
	 * path decides. Relaxed: a stale value only delays the switch by a
	 * call, as in pt_begin() */
	if (unlikely(!g || g->gen != atomic_load_explicit(&r->hot_gen, memory_order_relaxed) || g->skip_depth)) {
		payload_slow(r, kind, v);
		return;
	}
	uint64_t h = g->head_own;
	if (unlikely(!rec_ring_fits_cached(g, h, rec_ring_need(g, 1)))) {
		payload_slow(r, kind, v);
		return;
	}
	rec_ring_put_payload(g, h, kind, v);
	rec_ring_publish(g, h + 1);
}

void pt_metric(pt_recorder *r, enum pt_metric_kind kind, uint64_t value)
{
	payload(r, SLOT_METRIC | (uint32_t)kind << 8, value);
}

void pt_transfer(pt_recorder *r, uint64_t bytes, enum pt_direction dir)
{
	payload(r, SLOT_TRANSFER | (uint32_t)dir << 8, bytes);
}

void pt_counter(pt_recorder *r, uint32_t id, int64_t value)
{
	if (unlikely(!r) || !rec_enabled(r))
		return;
	struct rec_ring *g = rec_ring_for(r);
	if (!g)
		return;
	/* a counter is not part of any section: recorded even inside a
	 * skipped one, if the ring has room */
	uint64_t h = g->head_own;
	if (!rec_ring_room(g, h, rec_ring_need(g, REC_SLOTS_COUNTER))) {
		rec_ring_bump(&g->lost_records, 1);
		return;
	}
	rec_ring_put_record(g, h, SLOT_COUNTER, 0, rec_ticks(), id);
	rec_ring_put_value(g, h + 1, (uint64_t)value);
	rec_ring_publish(g, h + REC_SLOTS_COUNTER);
}

/* ------------------------------------------------------- sampled requests */

/*
 * pt_begin_sampled(): the decision is a splitmix64 step (Steele, Lea and
 * Flood 2014) on a per-thread state seeded from the clock and the state's
 * own address (distinct per thread), never rand() (a lock, and shared
 * state that would correlate threads). Neither depends on the program's
 * work, so the recorded requests are a probability sample. The uniform
 * draw in [0, 1e9) is Lemire's multiply-shift, so P(chosen) = v / 1e9
 * exactly up to 2^-34, with v the very value written to the trace.
 */
__extension__ typedef unsigned __int128 sample_u128;
static _Thread_local uint64_t sample_state;

static uint64_t sample_next(void)
{
	if (unlikely(!sample_state))
		sample_state = rec_ticks() ^ ((uint64_t)(uintptr_t)&sample_state * 0x9e3779b97f4a7c15ull) ^ 1;
	uint64_t z = (sample_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The id of PT_FMT_SAMPLE_COUNTER, interned on the first chosen section
 * (ids are process-global and stable: a relaxed cache is enough; two
 * threads interning at once get the same id). */
static _Atomic uint32_t sample_name_id;

static uint32_t sample_counter_id(struct pt_recorder *r)
{
	uint32_t id = atomic_load_explicit(&sample_name_id, memory_order_relaxed);
	if (unlikely(!id)) {
		id = pt_intern(r, PT_FMT_SAMPLE_COUNTER);
		atomic_store_explicit(&sample_name_id, id, memory_order_relaxed);
	}
	return id;
}

/* @p in parts per 1e9, as the trace holds it: 0 for p <= 0 or NaN, at
 * least 1 for p > 0, PT_FMT_SAMPLE_ONE for p >= 1. */
static uint64_t sample_ppb(double p)
{
	if (!(p > 0.0))
		return 0;
	if (p >= 1.0)
		return PT_FMT_SAMPLE_ONE;
	const uint64_t v = (uint64_t)(p * 1e9 + 0.5);
	return v < 1 ? 1 : v > PT_FMT_SAMPLE_ONE ? PT_FMT_SAMPLE_ONE : v;
}

int pt_begin_sampled(pt_recorder *r, uint32_t id, double p)
{
	if (unlikely(!r))
		return 0;
	const uint64_t v = sample_ppb(p);
	if (v == PT_FMT_SAMPLE_ONE) {
		pt_begin(r, id); /* certain: an ordinary section, exact figures */
		return 1;
	}
	/* drawn first, whatever happens next: the decision stays independent */
	const bool in = v && (uint64_t)(((sample_u128)sample_next() * PT_FMT_SAMPLE_ONE) >> 64) < v;
	const uint32_t cid = in ? sample_counter_id(r) : 0;
	struct rec_ring *g = rec_ring_for(r);
	if (!g) {
		rec_noring_begin(r); /* as pt_begin() without a ring */
		return in;
	}
	if (g->skip_depth) {
		begin_slow(r, id); /* inside a skipped section: skipped with it, as pt_begin() */
		return in;
	}
	if (!in || !rec_enabled(r)) {
		skip_section(g, id, false); /* not chosen: not a loss */
		return in;
	}
	/* the COUNTER and the BEGIN together or neither: a weight without its
	 * section would attach to whatever section comes next */
	uint64_t h = g->head_own;
	if (!rec_ring_room(g, h, rec_ring_need(g, REC_SLOTS_COUNTER + 2 + REC_SLACK))) {
		skip_section(g, id, true);
		return 1;
	}
	const uint64_t t = rec_ticks();
	rec_ring_put_record(g, h, SLOT_COUNTER, 0, t, cid);
	rec_ring_put_value(g, h + 1, v);
	rec_ring_put_begin(g, h + REC_SLOTS_COUNTER, t, id);
	rec_ring_push_id(g, g->depth, id);
	g->depth++;
	rec_ring_publish(g, h + REC_SLOTS_COUNTER + 1);
	return 1;
}

/* ------------------------------------------- instants, async ranges, GPU */

/* rec_emit() on ring @g; with no room, false, counted as a lost record
 * only if @count. */
static bool emit_on(struct rec_ring *g, uint32_t kind, uint32_t id, uint32_t hi, uint64_t t, const uint64_t *v,
		    unsigned n, bool count)
{
	uint64_t h = g->head_own;
	/* room for the record and every pending END */
	if (!rec_ring_room(g, h, rec_ring_need(g, 1 + n))) {
		if (count)
			rec_ring_bump(&g->lost_records, 1);
		return false;
	}
	rec_ring_put_record(g, h, kind, hi, t ? t : rec_ticks(), id);
	for (unsigned i = 0; i < n; i++)
		rec_ring_put_value(g, h + 1 + i, v[i]);
	rec_ring_publish(g, h + 1 + n);
	return true;
}

bool rec_emit(struct pt_recorder *r, uint32_t kind, uint32_t id, uint32_t hi, uint64_t t, const uint64_t *v,
	      unsigned n)
{
	struct rec_ring *g = rec_ring_for(r);
	return g && emit_on(g, kind, id, hi, t, v, n, true);
}

uint64_t rec_begin_gpu(struct pt_recorder *r, uint32_t id, uint32_t dev, uint64_t stream, uint64_t seq)
{
	struct rec_ring *g = rec_ring_for(r);
	if (!g) {
		rec_noring_begin(r);
		return 0;
	}
	if (g->skip_depth) {
		begin_slow(r, id); /* counts or skips exactly as pt_begin() */
		return 0;
	}
	/* skipped here, not by begin_slow(): it rechecks with less room
	 * needed and could record the section, its GPU half lost uncounted */
	if (!atomic_load_explicit(&r->enabled, memory_order_relaxed)) {
		skip_section(g, id, false);
		return 0;
	}
	uint64_t h = g->head_own;
	if (!rec_ring_room(g, h, rec_ring_need(g, 2 + REC_SLACK + REC_SLOTS_GPU_LAUNCH))) {
		skip_section(g, id, true); /* drops the section whole, counted */
		return 0;
	}
	uint64_t t = rec_ticks();
	rec_ring_put_record(g, h, SLOT_GPU_LAUNCH, dev, t, id);
	rec_ring_put_value(g, h + 1, stream);
	rec_ring_put_value(g, h + 2, seq);
	rec_ring_put_begin(g, h + REC_SLOTS_GPU_LAUNCH, t, id);
	rec_ring_push_id(g, g->depth, id);
	g->depth++;
	rec_ring_publish(g, h + REC_SLOTS_GPU_LAUNCH + 1);
	return t;
}

bool rec_begin_cpu(struct pt_recorder *r, uint32_t id)
{
	const struct rec_ring *g0 = rec_tls;
	const uint32_t d0 = g0 ? g0->depth : 0;
	pt_begin(r, id);
	/* recorded: pt_begin() opened a section on this thread's ring, so its
	 * depth grew and it is not skipping (a skipped BEGIN leaves
	 * skip_depth >= 1; no ring, a closed recorder or an exited thread
	 * leave rec_tls as it was, or the dead ring). Not by reading r->gen
	 * again: pt_close() may store 0 after the BEGIN was written, and that
	 * section would be in the trace with its GPU half counted nowhere. */
	const struct rec_ring *g = rec_tls;
	if (!g || g == &rec_dead_ring || g->skip_depth)
		return false;
	return g == g0 ? g->depth == d0 + 1 : g->depth >= 1; /* a new ring: rec_fork_resume_sections() may open some */
}

void rec_lost_section(struct pt_recorder *r)
{
	struct rec_ring *g;
	if (unlikely(!r) || !(g = rec_ring_for(r)))
		return;
	/* counted as begin_slow() counts a skipped section: not while
	 * recording is disabled, nor inside a section skipped for that */
	if (g->skip_depth ? !g->skip_lost : !rec_enabled(r))
		return;
	rec_ring_bump(&g->lost_records, 2); /* its BEGIN and its END */
	rec_ring_bump(&g->lost_sections, 1);
}

bool rec_gpu_error(struct pt_recorder *r, uint32_t code, uint32_t count)
{
	/* GPU halves not timed: counted in the trace, not as misuse (no bump
	 * of the ring's error counter, unlike error_record()). A failure is
	 * not a lost record: the caller keeps the count and tries again. */
	struct rec_ring *g = rec_ring_for(r);
	return g && emit_on(g, SLOT_ERROR, count, code, 0, NULL, 0, false);
}

bool rec_close_emit(struct pt_recorder *r, uint32_t kind, uint32_t id, uint32_t hi)
{
	/* r->gen is 0 now: rec_ring_for() would refuse. The closing thread's ring
	 * of the generation being closed is still registered and drained by
	 * rec_flusher_stop(); only this thread writes it. */
	struct rec_ring *g = rec_tls;
	if (!g || g == &rec_dead_ring || g->gen != r->cur_gen)
		return false;
	/* a full ring is drained by the flusher within its poll interval
	 * (at most flush_ms; it goes again at once while a ring is >= 1/4
	 * full): wait for it rather than lose a count, bounded */
	const uint64_t deadline = rec_mono_ns() + ((uint64_t)r->flush_ms * 4 + 1000) * 1000000u;
	while (!emit_on(g, kind, id, hi, 0, NULL, 0, false)) {
		if (rec_mono_ns() >= deadline) {
			rec_ring_bump(&g->lost_records, 1);
			return false;
		}
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	return true;
}

void pt_instant(pt_recorder *r, uint32_t id)
{
	if (unlikely(!r) || !rec_enabled(r))
		return;
	rec_emit(r, SLOT_INSTANT, id, 0, 0, NULL, 0);
}

/* Marks the async id of a range begun while recording was disabled: its
 * pt_async_end() records nothing either. Never reached by the counter. */
#define ASYNC_UNRECORDED (1ull << 63)

uint64_t pt_async_begin(pt_recorder *r, uint32_t id)
{
	if (unlikely(!r) || (atomic_load_explicit(&r->gen, memory_order_relaxed) == 0 &&
			     !(atomic_load_explicit(&r->reopen, memory_order_relaxed) && rec_child_reopen(r))))
		return 0;
	uint64_t aid = atomic_fetch_add_explicit(&r->next_async_id, 1, memory_order_relaxed) + 1;
	if (!rec_enabled(r))
		return aid | ASYNC_UNRECORDED;
	rec_emit(r, SLOT_ASYNC_BEGIN, id, 0, 0, &aid, 1);
	return aid;
}

void pt_async_end(pt_recorder *r, uint64_t async_id)
{
	/* a range begun while enabled ends even if recording is off now, as
	 * an open section does */
	if (unlikely(!r) || async_id == 0 || (async_id & ASYNC_UNRECORDED))
		return;
	rec_emit(r, SLOT_ASYNC_END, 0, 0, 0, &async_id, 1);
}

/* ---------------------------------------------------------------- by title */

static void add_metrics(pt_recorder *r, const struct pt_metrics *m)
{
	if (m->read_bytes)
		pt_metric(r, PT_METRIC_READ_BYTES, m->read_bytes);
	if (m->written_bytes)
		pt_metric(r, PT_METRIC_WRITTEN_BYTES, m->written_bytes);
	if (m->flops)
		pt_metric(r, PT_METRIC_FLOPS, m->flops);
}

/* The caller's metrics, @m_bytes of them (recorder.h, Types): the fields
 * it lacks add nothing; bytes past ours are metrics this library cannot
 * record, ignored because the call cannot fail upward. */
static struct pt_metrics metrics_in(const struct pt_metrics *m, size_t m_bytes)
{
	struct pt_metrics v = { 0 };
	if (m) /* cannot fail: at most our size is read */
		(void)copy_struct_in(&v, sizeof(v), m, PT_MIN(m_bytes, sizeof(v)));
	return v;
}

void pt_start(pt_recorder *r, const char *name, const struct pt_metrics *m, size_t m_bytes)
{
	if (!r)
		return;
	pt_begin(r, pt_intern(r, name));
	const struct pt_metrics v = metrics_in(m, m_bytes);
	add_metrics(r, &v);
}

void pt_stop(pt_recorder *r, const char *name, const struct pt_metrics *m, size_t m_bytes)
{
	if (!r)
		return;
	struct rec_ring *g = rec_ring_for(r);
	if (!g) {
		noring_end(r);
		return;
	}
	/* levels [0, depth) are recorded sections, [depth, total) skipped
	 * ones (always innermost); the search stops at the first level whose
	 * entry a deeper level has overwritten */
	uint32_t id = rec_intern_lookup(0, name);
	uint32_t total = g->depth + g->skip_depth;
	uint32_t low = total > REC_STOP_STACK ? total - REC_STOP_STACK : 0;
	uint32_t found = UINT32_MAX;
	for (uint32_t k = total; id && k-- > low;) {
		uint64_t e = g->open_ids[k % REC_STOP_STACK];
		if (e >> 32 != k)
			break;
		if ((uint32_t)e == id) {
			found = k;
			break;
		}
	}
	if (found == UINT32_MAX) {
		if (g->depth + g->skip_depth == 0 && noring_end(r))
			rec_ring_bump(&g->lost_records, 1); /* begun without a ring */
		else
			error_record(g, PT_ERRC_STOP_NOT_OPEN, 1);
		return;
	}
	uint32_t implicit = total - found - 1;
	if (implicit)
		error_record(g, PT_ERRC_IMPLICIT_CLOSE, implicit);
	for (uint32_t i = 0; i < implicit; i++)
		pt_end(r, (uint32_t)g->open_ids[(g->depth + g->skip_depth - 1) % REC_STOP_STACK]);
	const struct pt_metrics v = metrics_in(m, m_bytes);
	add_metrics(r, &v);
	pt_end(r, id);
}

void pt__scope_begin(struct pt__scope *s)
{
	pt_begin(s->r, s->id);
	if (s->read_bytes | s->written_bytes | s->flops) {
		struct pt_metrics m = { s->read_bytes, s->written_bytes, s->flops };
		add_metrics(s->r, &m);
	}
}

void pt__scope_end(struct pt__scope *s) { pt_end(s->r, s->id); }
