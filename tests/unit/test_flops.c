/*
 * tests/unit/test_flops.c - the FLOP counting helpers of recorder.h.
 *
 * Invariants covered:
 *  - pt_flops_matmul() = 2·m·n·k, pt_flops_elementwise() = n·ops,
 *    pt_flops_spmm() = 2·nnz·cols, exactly, with 0 in any factor giving 0
 *    (also when the other factors alone would saturate) and products past
 *    2^64 − 1 saturating at UINT64_MAX; the largest exact products are not
 *    saturated.
 *  - pt_flops_einsum() = numpy.einsum_path's naive count
 *    (numpy/core/einsumfunc.py, numpy 1.24):
 *        size = product of the sizes of the distinct input indices
 *        f    = max(1, operands − 1)
 *               + 1 if Σ_operands |distinct indices of the operand| > |distinct indices|
 *                   (some index is shared by two or more operands)
 *        result = size · f
 *    on a table of specs whose values are worked out by hand below, for
 *    explicit and implicit output, upper case, spaces, repeated indices;
 *    saturating at UINT64_MAX.
 *  - pt_flops_einsum() returns 0 for malformed specs (bad characters,
 *    "..." ellipsis, a lone '-' or '>', two "->", an output index absent
 *    from the inputs), inconsistent or negative sizes, and NULL spec or
 *    NULL dims with subscripts.
 * tests/unit/check_einsum_numpy.py checks the same formula against numpy
 * itself.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "ptz/recorder.h"

#define SAT UINT64_MAX

static void test_pt_flops_matmul_exact(void **state)
{
	(void)state;
	assert_int_equal(pt_flops_matmul(1, 1, 1), 2);
	assert_int_equal(pt_flops_matmul(2, 3, 4), 48);
	assert_int_equal(pt_flops_matmul(1024, 1024, 1024), 2147483648ull);
	assert_int_equal(pt_flops_matmul(3, 5, 7), 210);
	assert_int_equal(pt_flops_matmul(7, 3, 5), 210);
}

static void test_pt_flops_matmul_zero(void **state)
{
	(void)state;
	assert_int_equal(pt_flops_matmul(0, 5, 5), 0);
	assert_int_equal(pt_flops_matmul(5, 0, 5), 0);
	assert_int_equal(pt_flops_matmul(5, 5, 0), 0);
	/* a zero factor wins over factors that alone would saturate */
	assert_int_equal(pt_flops_matmul(UINT64_MAX, UINT64_MAX, 0), 0);
	assert_int_equal(pt_flops_matmul(0, UINT64_MAX, UINT64_MAX), 0);
}

static void test_pt_flops_matmul_saturates(void **state)
{
	(void)state;
	/* 2·(2^63 − 1) = 2^64 − 2: the largest exact value, not saturated */
	assert_int_equal(pt_flops_matmul(UINT64_MAX / 2, 1, 1), UINT64_MAX - 1);
	/* 2·2^31·2^31·1 = 2^63: exact */
	assert_int_equal(pt_flops_matmul(1ull << 31, 1ull << 31, 1), 1ull << 63);
	/* 2·2^63 = 2^64: one past the range */
	assert_int_equal(pt_flops_matmul(1ull << 63, 1, 1), SAT);
	/* 2·2^32·2^31·1 = 2^64 */
	assert_int_equal(pt_flops_matmul(1ull << 32, 1ull << 31, 1), SAT);
	/* 2·2^21·2^21·2^21 = 2^64, overflow only in the last product */
	assert_int_equal(pt_flops_matmul(1ull << 21, 1ull << 21, 1ull << 21), SAT);
	assert_int_equal(pt_flops_matmul(UINT64_MAX, 1, 1), SAT);
	assert_int_equal(pt_flops_matmul(UINT64_MAX, UINT64_MAX, UINT64_MAX), SAT);
}

static void test_pt_flops_elementwise_values(void **state)
{
	(void)state;
	assert_int_equal(pt_flops_elementwise(10, 3), 30);
	assert_int_equal(pt_flops_elementwise(1, 1), 1);
	assert_int_equal(pt_flops_elementwise(0, 5), 0);
	assert_int_equal(pt_flops_elementwise(5, 0), 0);
	assert_int_equal(pt_flops_elementwise(UINT64_MAX, 0), 0);
	assert_int_equal(pt_flops_elementwise(UINT64_MAX, 1), UINT64_MAX); /* exact, not saturated */
	/* 3·2^62 = 13835058055282163712 < 2^64 */
	assert_int_equal(pt_flops_elementwise(1ull << 62, 3), 13835058055282163712ull);
	/* (2^32 + 1)·(2^32 − 1) = 2^64 − 1 exactly */
	assert_int_equal(pt_flops_elementwise((1ull << 32) + 1, 4294967295u), UINT64_MAX);
}

static void test_pt_flops_elementwise_saturates(void **state)
{
	(void)state;
	assert_int_equal(pt_flops_elementwise(1ull << 62, 4), SAT); /* 2^64 */
	assert_int_equal(pt_flops_elementwise(UINT64_MAX, 2), SAT);
	assert_int_equal(pt_flops_elementwise((1ull << 32) + 2, 4294967295u), SAT); /* 2^64 + 2^32 − 2 */
	assert_int_equal(pt_flops_elementwise(UINT64_MAX, 4294967295u), SAT);
}

static void test_pt_flops_spmm_values(void **state)
{
	(void)state;
	assert_int_equal(pt_flops_spmm(100, 8), 1600);
	assert_int_equal(pt_flops_spmm(1, 1), 2);
	assert_int_equal(pt_flops_spmm(0, 8), 0);
	assert_int_equal(pt_flops_spmm(8, 0), 0);
	assert_int_equal(pt_flops_spmm(UINT64_MAX, 0), 0);
	assert_int_equal(pt_flops_spmm(1ull << 62, 1), 1ull << 63);
	assert_int_equal(pt_flops_spmm(UINT64_MAX / 2, 1), UINT64_MAX - 1);
}

static void test_pt_flops_spmm_saturates(void **state)
{
	(void)state;
	assert_int_equal(pt_flops_spmm(1ull << 62, 2), SAT); /* 2^64 */
	assert_int_equal(pt_flops_spmm(1ull << 63, 1), SAT);
	assert_int_equal(pt_flops_spmm(UINT64_MAX, 1), SAT);
	assert_int_equal(pt_flops_spmm(1ull << 32, 1ull << 32), SAT);
}

/* ------------------------------------------------------------- einsum */

struct einsum_case {
	const char *spec;
	int64_t dims[12];
	uint64_t flops;
};

/*
 * Each value worked by hand: size = product of the distinct index sizes;
 * f = max(1, operands − 1), + 1 when Σ per-operand distinct > distinct.
 */
static const struct einsum_case einsum_cases[] = {
	/* matmul: i=2 j=3 k=4, size 24; 2 operands → 1; 2+2=4 > 3 → +1; 24·2 = 48 = 2·m·n·k */
	{ "ij,jk->ik", { 2, 3, 3, 4 }, 48 },
	/* implicit output (ik): same count, the output does not enter it */
	{ "ij,jk", { 2, 3, 3, 4 }, 48 },
	/* fully contracted: a=2 b=3 c=4, size 24; f = 1 + 1 (b shared); 48 */
	{ "ab,bc->", { 2, 3, 3, 4 }, 48 },
	/* Hadamard: i=3 j=4, size 12; 2 operands → 1; 2+2=4 > 2 → +1; 24 */
	{ "ij,ij->ij", { 3, 4, 3, 4 }, 24 },
	/* transpose: size 15; one operand → 1; 2 = 2, no share; 15 */
	{ "ij->ji", { 3, 5 }, 15 },
	/* full sum of one operand: size 15, f = 1: numpy's naive count does not
	 * add 1 for an index summed away within a single operand; 15 */
	{ "ij->", { 3, 5 }, 15 },
	/* diagonal: i=4, size 4; 1 operand, 1 distinct; 4 */
	{ "ii->i", { 4, 4 }, 4 },
	/* trace: i=5; 5 */
	{ "ii->", { 5, 5 }, 5 },
	/* implicit output of "ii" is empty (i repeated): still 5 */
	{ "ii", { 5, 5 }, 5 },
	/* dot product: i=7, size 7; f = 1 + 1 (i shared); 14 */
	{ "i,i->", { 7, 7 }, 14 },
	/* outer product: i=3 j=4, size 12; f = 1, 1+1 = 2 distinct, no share; 12 */
	{ "i,j->ij", { 3, 4 }, 12 },
	/* implicit outer product "ij": 12 */
	{ "i,j", { 3, 4 }, 12 },
	/* three operands: i=2 j=3 k=4, size 24; f = 3−1 = 2; 2+3+2=7 > 3 → +1; 24·3 = 72 */
	{ "ik,ijk,jk->", { 2, 4, 2, 3, 4, 3, 4 }, 72 },
	/* batched matmul: i=2 j=3 k=4 l=5, size 120; f = 1 + 1 (i, k shared); 240 */
	{ "ijk,ikl->ijl", { 2, 3, 4, 2, 4, 5 }, 240 },
	/* chain of three: i=2 j=3 k=4 l=5, size 120; f = 2 + 1; 360 */
	{ "ij,jk,kl->il", { 2, 3, 3, 4, 4, 5 }, 360 },
	/* chain of four: a..e all 2, size 32; f = 3 + 1; 128 */
	{ "ab,bc,cd,de->ae", { 2, 2, 2, 2, 2, 2, 2, 2 }, 128 },
	/* repeated index in one operand plus a shared one: i=2 j=3, size 6;
	 * per operand {i,j} + {j} = 3 > 2 → f = 1 + 1; 12 */
	{ "iij,j->i", { 2, 2, 3, 3 }, 12 },
	/* upper and lower case are different indices: A=2 b=3 C=5, size 30; f = 2; 60 */
	{ "Ab,bC->AC", { 2, 3, 3, 5 }, 60 },
	/* a=2 A=3, size 6; one operand; 6 */
	{ "aA->", { 2, 3 }, 6 },
	/* spaces are ignored, as numpy strips them: matmul again, 48 */
	{ " ij , jk -> ik ", { 2, 3, 3, 4 }, 48 },
	/* size-1 indices: size 1; f = 2; 2 */
	{ "ij,jk->ik", { 1, 1, 1, 1 }, 2 },
	/* an empty index: size 0; 0 (like numpy; indistinguishable from an error) */
	{ "ij,jk->ik", { 2, 0, 0, 4 }, 0 },
	/* i = 2^63 − 1 alone: size 2^63 − 1, f = 1; exact */
	{ "i->", { INT64_MAX }, (uint64_t)INT64_MAX },
	/* dot product of length 2^63 − 1: f = 2; 2^64 − 2, still exact */
	{ "i,i->", { INT64_MAX, INT64_MAX }, UINT64_MAX - 1 },
	/* three operands of length 2^63 − 1: f = 3; past 2^64, saturated */
	{ "i,i,i->", { INT64_MAX, INT64_MAX, INT64_MAX }, SAT },
	/* matmul i = j = 2^32, k = 1: size 2^64 already saturates */
	{ "ij,jk->ik", { 1ll << 32, 1ll << 32, 1ll << 32, 1 }, SAT },
	/* outer product 2^32 × 2^32 = 2^64, f = 1: saturated */
	{ "i,j->ij", { 1ll << 32, 1ll << 32 }, SAT },
	/* size 2^63 exact, f = 2 (shared i) pushes it to 2^64: saturated */
	{ "ij,i->j", { 1ll << 31, 1ll << 32, 1ll << 31 }, SAT },
};

static void test_pt_flops_einsum_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(einsum_cases) / sizeof(einsum_cases[0]); i++) {
		const struct einsum_case *c = &einsum_cases[i];
		const uint64_t got = pt_flops_einsum(c->spec, c->dims);
		if (got != c->flops)
			fail_msg("pt_flops_einsum(\"%s\") = %llu, expected %llu", c->spec, (unsigned long long)got,
				 (unsigned long long)c->flops);
	}
}

/* "ij,jk->ik" is a matmul: the two helpers agree. */
static void test_pt_flops_einsum_matches_matmul(void **state)
{
	(void)state;
	for (int64_t m = 1; m <= 7; m += 3)
		for (int64_t n = 1; n <= 9; n += 4)
			for (int64_t k = 1; k <= 5; k += 2) {
				const int64_t dims[] = { m, k, k, n };
				assert_int_equal(pt_flops_einsum("ij,jk->ik", dims),
						 pt_flops_matmul((uint64_t)m, (uint64_t)n, (uint64_t)k));
			}
}

/* No subscripts: one scalar (or several) and size 1; dims may be NULL. */
static void test_pt_flops_einsum_scalars(void **state)
{
	(void)state;
	assert_int_equal(pt_flops_einsum("", NULL), 1);
	assert_int_equal(pt_flops_einsum("->", NULL), 1);
	assert_int_equal(pt_flops_einsum(",->", NULL), 1); /* 2 operands → f = 1, nothing shared */
}

static void test_pt_flops_einsum_malformed(void **state)
{
	(void)state;
	static const struct einsum_case bad[] = {
		{ "ij,jk->ix", { 2, 3, 3, 4 }, 0 },   /* output index x in no input */
		{ "->ij", { 0 }, 0 },                 /* output indices, no input indices */
		{ "ij-ik", { 2, 3 }, 0 },             /* '-' without '>' */
		{ "ij,jk>ik", { 2, 3, 3, 4 }, 0 },    /* '>' without '-' */
		{ "ij->i->j", { 2, 3 }, 0 },          /* two "->" */
		{ "ij->ij-", { 2, 3 }, 0 },           /* stray '-' in the output */
		{ "-ij", { 2, 3 }, 0 },               /* '-' first */
		{ "i1,1k->ik", { 2, 3, 3, 4 }, 0 },   /* digits */
		{ "...ij,jk->ik", { 2, 3, 3, 4 }, 0 }, /* ellipsis unsupported */
		{ "ij;jk", { 2, 3, 3, 4 }, 0 },       /* wrong separator */
		{ "i_j->", { 2, 3 }, 0 },             /* underscore */
		{ "ij,jk->ik", { 2, 3, 4, 5 }, 0 },   /* j = 3 and 4: inconsistent */
		{ "ii->i", { 2, 3 }, 0 },             /* i = 2 and 3 in one operand */
		/* j = 1 and 3: also inconsistent here, where numpy would broadcast
		 * the size-1 dimension (header: "0 for ... inconsistent sizes") */
		{ "ij,jk->ik", { 2, 1, 3, 4 }, 0 },
		{ "ij->", { -1, 3 }, 0 },             /* negative size */
		{ "ij->", { 2, INT64_MIN }, 0 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const uint64_t got = pt_flops_einsum(bad[i].spec, bad[i].dims);
		if (got != 0)
			fail_msg("pt_flops_einsum(\"%s\") = %llu, expected 0", bad[i].spec, (unsigned long long)got);
	}
	assert_int_equal(pt_flops_einsum(NULL, NULL), 0);
	const int64_t dims[] = { 2, 3 };
	assert_int_equal(pt_flops_einsum(NULL, dims), 0);
	assert_int_equal(pt_flops_einsum("ij->", NULL), 0); /* subscripts need dims */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pt_flops_matmul_exact),
		cmocka_unit_test(test_pt_flops_matmul_zero),
		cmocka_unit_test(test_pt_flops_matmul_saturates),
		cmocka_unit_test(test_pt_flops_elementwise_values),
		cmocka_unit_test(test_pt_flops_elementwise_saturates),
		cmocka_unit_test(test_pt_flops_spmm_values),
		cmocka_unit_test(test_pt_flops_spmm_saturates),
		cmocka_unit_test(test_pt_flops_einsum_table),
		cmocka_unit_test(test_pt_flops_einsum_matches_matmul),
		cmocka_unit_test(test_pt_flops_einsum_scalars),
		cmocka_unit_test(test_pt_flops_einsum_malformed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
