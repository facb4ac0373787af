/*
 * tests/compile/macros_usage.c - every C form of PT_SECTION / PT_SCOPE:
 * empty __VA_ARGS__ (no metrics), designated metrics in any order, PT_SCOPE
 * with and without metrics, break/continue/return inside a section, nesting,
 * and a section as an unbraced if branch.
 *
 * tests/compile/meson.build builds it with -std=gnu11 and with -std=c11
 * -Wpedantic, both -Wall -Wextra -Werror, each also with -DPT_DISABLE, so a
 * macro that stops compiling in one dialect fails the build. Run (suite
 * 'compile'), it checks that each body ran as often as its control flow
 * says, with a NULL recorder (nothing recorded, no file written); exit 0 on
 * success, 1 on a mismatch.
 */
#include "ptz/recorder.h"

#include <stdio.h> /* fprintf */

static double dot(pt_recorder *r, const double *a, const double *b, size_t n)
{
	double acc = 0;
	/* designated metrics, out of declaration order, computed at the site */
	PT_SECTION(r, "dot", .flops = pt_flops_elementwise(n, 2), .read_bytes = 2 * n * sizeof(*a))
	{
		for (size_t i = 0; i < n; i++)
			acc += a[i] * b[i];
		pt_metric(r, PT_METRIC_WRITTEN_BYTES, sizeof(acc));
	}
	return acc;
}

/* Empty __VA_ARGS__; break and continue leave the section only. */
static int loop_passes(pt_recorder *r, int n)
{
	int body = 0, after = 0;
	for (int i = 0; i < n; i++) {
		PT_SECTION(r, "no-metrics")
		{
			body++;
			if (i % 2)
				break;
			continue;
		}
		after++;
	}
	return body == n && after == n ? n : -1;
}

static int scoped(pt_recorder *r, int early)
{
	PT_SCOPE(r, "scope");
	PT_SCOPE(r, "scope-metrics", .written_bytes = 64, .flops = 1);
	if (early)
		return 1;
	{
		PT_SCOPE(r, "scope-inner", .read_bytes = 8);
		pt_counter(r, pt_intern(r, "early"), early);
	}
	return 2;
}

static int nested_return(pt_recorder *r, int choose)
{
	PT_SECTION(r, "outer", .flops = 1)
	{
		PT_SECTION(r, "inner", .read_bytes = 1, .written_bytes = 2, .flops = 3)
		{
			if (choose)
				return 3;
		}
		if (choose)
			PT_SECTION(r, "then") {}
		else
			return 4;
	}
	return 0;
}

int main(void)
{
	pt_recorder *r = NULL;
	const double a[3] = { 1, 2, 3 }, b[3] = { 4, 5, 6 };
	int bad = 0;
	if (dot(r, a, b, 3) != 32.0)
		bad |= 1;
	if (loop_passes(r, 4) != 4)
		bad |= 2;
	if (scoped(r, 1) != 1 || scoped(r, 0) != 2)
		bad |= 4;
	if (nested_return(r, 1) != 3 || nested_return(r, 0) != 4)
		bad |= 8;
	if (bad)
		fprintf(stderr, "macros_usage: control flow mismatch, mask %d\n", bad);
	return bad ? 1 : 0;
}
