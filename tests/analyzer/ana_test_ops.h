/*
 * tests/analyzer/ana_test_ops.h - CPU trace fixtures as op tables, shared by
 * test_analyzer.c and test_ana_definitions.c (test_ana_gpu.c has its own,
 * with GPU and async ops). An op is one record; B(), E(), K(), L() and
 * ERR() take ticks relative to T0, which the including file defines.
 */
#ifndef PTZ_ANA_TEST_OPS_H
#define PTZ_ANA_TEST_OPS_H

#include "tests/analyzer/ana_test_util.h"

enum { OP_B = 1, OP_E, OP_M, OP_X, OP_K, OP_L, OP_ERR, OP_CUT };
struct op {
	uint8_t k;
	uint32_t id; /* section or counter id; metric kind; direction; error code */
	uint64_t t;  /* ticks (absolute) */
	int64_t v;
	uint64_t v2;
};
#define B(t, id) { OP_B, (id), T0 + (t), 0, 0 }
#define E(t, id) { OP_E, (id), T0 + (t), 0, 0 }
#define M(kind, v) { OP_M, (kind), 0, (v), 0 }
#define X(dir, v) { OP_X, (dir), 0, (v), 0 }
#define K(t, id, v) { OP_K, (id), T0 + (t), (v), 0 }
#define L(t, recs, secs) { OP_L, 0, T0 + (t), (recs), (secs) }
#define ERR(t, code, n) { OP_ERR, (code), T0 + (t), (n), 0 }
#define CUT { OP_CUT, 0, 0, 0, 0 } /* next chunk of the same thread */

/* Encodes op @o (not a CUT) into @e. */
static inline void op_encode(struct fmt_enc *e, const struct op *o)
{
	assert_true(fmt_enc_room(e, FMT_MAX_RECORD_BYTES));
	switch (o->k) {
	case OP_B: fmt_enc_begin(e, o->t, o->id); break;
	case OP_E: fmt_enc_end(e, o->t, o->id); break;
	case OP_M: fmt_enc_metric(e, o->id, (uint64_t)o->v); break;
	case OP_X: fmt_enc_transfer(e, o->id, (uint64_t)o->v); break;
	case OP_K: fmt_enc_counter(e, o->t, o->id, o->v); break;
	case OP_L: fmt_enc_loss(e, o->t, (uint64_t)o->v, o->v2); break;
	case OP_ERR: fmt_enc_error(e, o->t, o->id, (uint64_t)o->v); break;
	default: fail();
	}
}

#endif /* PTZ_ANA_TEST_OPS_H */
