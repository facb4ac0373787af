/*
 * recorder/rec_flops.c - FLOP counting helpers (formulas in recorder.h).
 *
 * pt_flops_einsum() follows numpy.einsum_path's naive cost
 * (numpy/core/einsumfunc.py: _flop_count(idx_contraction, inner,
 * num_terms, size_dictionary)): overall_size = product of the sizes of all
 * distinct indices of the inputs; op_factor = max(1, num_terms - 1), plus 1
 * when inner, where inner = (sum over operands of their number of distinct
 * indices) > (number of distinct indices overall), i.e. some index is
 * shared by two or more operands. The output spec does not enter the
 * count; it is only validated.
 */
#include <ctype.h>
#include <string.h>

#include "recorder/rec_internal.h"

static uint64_t mul_sat(uint64_t a, uint64_t b)
{
	uint64_t r;
	if (__builtin_mul_overflow(a, b, &r))
		return UINT64_MAX;
	return r;
}

uint64_t pt_flops_matmul(uint64_t m, uint64_t n, uint64_t k) { return mul_sat(mul_sat(mul_sat(2, m), n), k); }

uint64_t pt_flops_elementwise(uint64_t n_elements, unsigned ops_per_element)
{
	return mul_sat(n_elements, ops_per_element);
}

uint64_t pt_flops_spmm(uint64_t nnz, uint64_t n_dense_cols) { return mul_sat(mul_sat(2, nnz), n_dense_cols); }

static int letter_index(char c)
{
	if (c >= 'a' && c <= 'z')
		return c - 'a';
	if (c >= 'A' && c <= 'Z')
		return 26 + (c - 'A');
	return -1;
}

uint64_t pt_flops_einsum(const char *spec, const int64_t *dims)
{
	if (!spec)
		return 0;
	int64_t size[52];
	int seen[52] = { 0 };
	int per_op[52];
	int operands = 0, sum_distinct = 0, distinct = 0, k = 0;
	const char *p = spec;
	for (;;) { /* inputs */
		int op_seen = 0;
		memset(per_op, 0, sizeof(per_op));
		while (*p && *p != ',' && *p != '-') {
			if (isspace((unsigned char)*p)) {
				p++;
				continue;
			}
			int li = letter_index(*p);
			if (li < 0 || !dims)
				return 0;
			int64_t d = dims[k++];
			if (d < 0)
				return 0;
			if (seen[li] && size[li] != d)
				return 0; /* inconsistent sizes for one index */
			if (!seen[li]) {
				seen[li] = 1;
				size[li] = d;
				distinct++;
			}
			if (!per_op[li]) {
				per_op[li] = 1;
				op_seen++;
			}
			p++;
		}
		operands++;
		sum_distinct += op_seen;
		if (*p == ',') {
			p++;
			continue;
		}
		break;
	}
	if (*p == '-') {
		if (p[1] != '>')
			return 0;
		for (p += 2; *p; p++) {
			if (isspace((unsigned char)*p))
				continue;
			int li = letter_index(*p);
			if (li < 0 || !seen[li])
				return 0; /* output index must appear in an input */
		}
	} else if (*p) {
		return 0;
	}
	uint64_t overall = 1;
	for (int i = 0; i < 52; i++)
		if (seen[i])
			overall = mul_sat(overall, (uint64_t)size[i]);
	uint64_t op_factor = operands > 1 ? (uint64_t)operands - 1 : 1;
	if (sum_distinct > distinct)
		op_factor += 1;
	return mul_sat(overall, op_factor);
}
