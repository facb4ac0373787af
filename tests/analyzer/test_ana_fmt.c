/*
 * tests/analyzer/test_ana_fmt.c - ana_fmt_fixed() writes exactly what
 * printf("%.0f") to printf("%.6f") write (the CSV's numeric columns, the
 * text report's durations), and
 * ana_fmt_g12() what printf("%.12g") writes (the JSON's reals), on the
 * values that could trip their fast paths.
 *
 * Invariants covered: byte equality with snprintf() for
 *  - 2,000,000 random values spread over 1e-16 .. 1e17 (both paths, and
 *    the 1e15 boundary of the fast path; for %.12g the style-e path of
 *    1e-15 .. 1e-4 and its lower bound);
 *  - exact binary ties: k + 0.5 for %.0f (half to even, both parities) and
 *    odd multiples of 2^-e for %.(e-1)f (0.0078125: a tie at the 6th
 *    decimal), each met by every decimal count;
 *  - values a hair (one ulp) either side of those ties and of each
 *    decimal boundary m / 10^6, where the fraction times 10^6 rounds;
 *  - fractions just below 1 that carry into the integer part (0.9999996);
 *  - integers up to 2^53 and beyond, 0 and -0.0 at every decimal count,
 *    negatives, inf, -inf, NaN;
 *  - for %.12g also: 12-digit decimal ties exact in binary (k + 0.5 with
 *    k of 11 digits), values that round up into the next decade
 *    (9.99999999999951 x 10^k), each decade's bounds from 1e-16, 1e-4 and
 *    1e12 (the fast path's bounds, where %g changes style), 1e-15 (the
 *    style-e path's), and negatives.
 */
#include "tests/analyzer/ana_test_util.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

static long checked;

static void same(double v)
{
	/* 0 and 6 (the CSV's) every time, 1 to 5 (the text's durations) in turn */
	const int ds[] = { 0, 6, 1 + (int)(checked % 5) };
	for (size_t di = 0; di < sizeof(ds) / sizeof(ds[0]); di++) {
		const int d = ds[di];
		char want[512], got[40];
		int n = snprintf(want, sizeof(want), "%.*f", d, v);
		if (n >= 40) /* longer than any CSV value: ana_fmt_fixed() truncates it, as its doc says */
			continue;
		size_t g = ana_fmt_fixed(got, v, d);
		if (g != (size_t)n || memcmp(got, want, g) != 0) {
			print_error("%.17g with %d decimals: got \"%.*s\", printf \"%s\"\n", v, d, (int)g, got, want);
			fail();
		}
		checked++;
	}
	char want[64], got[40];
	int n = snprintf(want, sizeof(want), "%.12g", v);
	size_t g = ana_fmt_g12(got, v);
	if (g != (size_t)n || memcmp(got, want, g) != 0) {
		print_error("%.17g with %%.12g: got \"%.*s\", printf \"%s\"\n", v, (int)g, got, want);
		fail();
	}
	checked++;
}

static double rnd01(void)
{
	return ((double)rand() * (RAND_MAX + 1.0) + rand()) / ((RAND_MAX + 1.0) * (RAND_MAX + 1.0));
}

static void test_random(void **state)
{
	(void)state;
	srand(7);
	for (int i = 0; i < 2000000; i++) {
		double e = -16 + 33 * rnd01(); /* 1e-16 .. 1e17 */
		const double x = pow(10, e);
		same(i & 1 ? -x : x);
	}
}

static void test_ties_and_edges(void **state)
{
	(void)state;
	for (int k = 0; k < 4000; k++) {
		const double t0 = k + 0.5;
		same(t0);
		same(nextafter(t0, 0));
		same(nextafter(t0, INFINITY));
		for (int e = 2; e <= 7; e++) { /* odd multiples of 2^-e: ties at decimal e - 1 */
			const double te = (2 * k + 1) / (double)(1 << e) + (k % 3);
			for (int r = 0; r < 5; r++) { /* each of the rotating decimal counts meets it */
				same(te);
				same(nextafter(te, 0));
				same(nextafter(te, INFINITY));
			}
		}
		const double b = k * 1e-6 + (k % 7) * 1000.0; /* decimal boundaries */
		same(b);
		same(nextafter(b, 0));
		same(nextafter(b, INFINITY));
		const double h = (k + 0.5) * 1e-6 + (k % 5); /* decimal halves, inexact in binary */
		same(h);
		same(nextafter(h, 0));
		same(nextafter(h, INFINITY));
	}
	const double edges[] = { 0.0,        -0.0,       1.0,         0.9999996,   0.9999994,   999999.9999995,
				 1e15,       nextafter(1e15, 0), 1e15 + 0.5, 9007199254740991.0, 9007199254740992.0,
				 1.8e19,     1e300,      DBL_MIN,     -DBL_MIN,    -0.4,        -2.5,
				 -1234.5678, INFINITY,   -INFINITY,   NAN,         -NAN,        4503599627370495.5 };
	for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++)
		same(edges[i]);
	for (int r = 0; r < 5; r++) { /* zero and negative zero at every decimal count (zero's own path) */
		same(0.0);
		same(-0.0);
	}
	for (uint64_t i = 1; i < (1ull << 53); i = i * 3 + 1)
		same((double)i);
	for (int k = -16; k <= 13; k++) {
		const double p = pow(10, k);
		const double near[] = { p, nextafter(p, 0), nextafter(p, INFINITY), 9.99999999999951 * p,
					9.99999999999949 * p, 9.999999999995 * p, 1.000000000005 * p, 1.23456789012345 * p };
		for (size_t i = 0; i < sizeof(near) / sizeof(near[0]); i++) {
			same(near[i]);
			same(-near[i]);
		}
	}
	for (int k = 0; k < 3000; k++) { /* 12-digit ties exact in binary */
		const double t = 12345678901.0 + 7919.0 * k + 0.5;
		same(t);
		same(nextafter(t, 0));
		same(nextafter(t, INFINITY));
		same(t / 1024); /* exact: 2^-10 keeps the tie at the same digit count plus binary places */
	}
	assert_true(checked > 4000000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random),
		cmocka_unit_test(test_ties_and_edges),
	};
	return cmocka_run_group_tests_name(PT_TEST_NAME, tests, NULL, NULL);
}
