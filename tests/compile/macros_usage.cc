/*
 * tests/compile/macros_usage.cc - the C++ forms of PT_SECTION / PT_SCOPE:
 * no metrics, positional metrics (read_bytes, written_bytes, flops; any
 * prefix of them), PT_SCOPE with and without metrics, break/continue/return
 * inside a section, and a section left by an exception.
 *
 * tests/compile/meson.build builds it with -std=c++17 and -std=c++20, both
 * -Wall -Wextra -Wpedantic -Werror, each also with -DPT_DISABLE. Run (suite
 * 'compile'), it checks each body ran as often as its control flow says,
 * with a NULL recorder; exit 0 on success, 1 on a mismatch.
 */
#include "ptz/recorder.h"

#include <cstdio>    // std::fprintf
#include <stdexcept> // std::runtime_error

static double dot(pt_recorder *r, const double *a, const double *b, size_t n)
{
	double acc = 0;
	PT_SECTION(r, "dot", 2 * n * sizeof(*a), 0, pt_flops_elementwise(n, 2))
	{
		for (size_t i = 0; i < n; i++)
			acc += a[i] * b[i];
		pt_metric(r, PT_METRIC_WRITTEN_BYTES, sizeof(acc));
	}
	return acc;
}

// No metrics; break and continue leave the section only.
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
	PT_SCOPE(r, "scope-read", 64u);
	PT_SCOPE(r, "scope-rw", 1, 2);
	if (early)
		return 1;
	{
		PT_SCOPE(r, "scope-inner", 1, 2, 3);
		pt_counter(r, pt_intern(r, "early"), early);
	}
	return 2;
}

static int thrown(pt_recorder *r)
{
	try {
		PT_SECTION(r, "throws", 8)
		{
			throw std::runtime_error("leave the section");
		}
	} catch (const std::runtime_error &) {
		return 5;
	}
	return 0;
}

static int nested_return(pt_recorder *r, int choose)
{
	PT_SECTION(r, "outer", 0, 0, 1)
	{
		PT_SECTION(r, "inner", 1, 2, 3)
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

int main()
{
	pt_recorder *r = nullptr;
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
	if (thrown(r) != 5)
		bad |= 16;
	if (bad)
		std::fprintf(stderr, "macros_usage: control flow mismatch, mask %d\n", bad);
	return bad ? 1 : 0;
}
