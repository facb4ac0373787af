/*
 * tests/compile/macros_usage_cxx20.cc - C++20 designated metrics, which
 * recorder.h documents ("In C++ designated metrics need C++20"):
 * PT_SECTION(r, "n", .flops = f) and PT_SCOPE(r, "n", .read_bytes = b).
 * Built with -std=c++20 -Wall -Wextra -Wpedantic -Werror, with and without
 * -DPT_DISABLE, when tests/compile/meson.build finds that it compiles.
 */
#include "ptz/recorder.h"

static double dot(pt_recorder *r, const double *a, const double *b, size_t n)
{
	double acc = 0;
	PT_SECTION(r, "dot", .read_bytes = 2 * n * sizeof(*a), .flops = pt_flops_elementwise(n, 2))
	{
		PT_SCOPE(r, "dot-scope", .flops = 1);
		for (size_t i = 0; i < n; i++)
			acc += a[i] * b[i];
		pt_metric(r, PT_METRIC_WRITTEN_BYTES, sizeof(acc));
	}
	PT_SECTION(r, "none") {}
	return acc;
}

int main()
{
	const double a[2] = { 1, 2 }, b[2] = { 3, 4 };
	return dot(nullptr, a, b, 2) == 11.0 ? 0 : 1;
}
