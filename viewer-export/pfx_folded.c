/*
 * viewer-export/pfx_folded.c - folded stacks ("a;b;c 1234") from the
 * analyzer's call-path tree, for flamegraph.pl, inferno and speedscope.
 *
 * One line per call path whose self time is not zero, weight = the path's
 * self time in integer ns (doc/analyzer-output.md §2: inclusive time minus
 * the children's inclusive times), so each frame's width in a flame graph
 * is its inclusive time. Paths come depth-first, siblings in name-id order:
 * the output is deterministic. A path whose self time is zero adds nothing
 * to a flame graph and is left out (its descendants still carry it).
 *
 * Names are sanitized, because ';' separates frames and a line ends a
 * record: ';' becomes ':', and '\n', '\r' and the other ASCII control
 * characters become ' '; an empty name becomes "(empty)". Consumers split
 * the weight off at the last space, so spaces inside names are kept.
 *
 * A path deeper than ANA_PATH_MAX_NAMES (256) levels is written as the
 * CSV writes it: "[DEPTH] ..." then its innermost 256 names, so a line
 * costs O(256) and the output is linear in the paths, not quadratic in
 * the depth (a 4 KB trace 20,000 levels deep wrote 1.8 GB).
 *
 * Memory: the current path only (one name offset per depth), built while
 * the tree is walked with an explicit stack.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viewer-export/pfx.h"

struct path_buf {
	char *s;
	size_t len, cap;
};

static int path_append(struct path_buf *p, const char *name, int sep)
{
	if (!*name)
		name = "(empty)";
	size_t n = strlen(name);
	if (p->len + n + 2 > p->cap) {
		size_t nc = p->cap ? p->cap : 256;
		while (p->len + n + 2 > nc)
			nc *= 2;
		char *s = realloc(p->s, nc);
		if (!s)
			return -ENOMEM;
		p->s = s;
		p->cap = nc;
	}
	if (sep)
		p->s[p->len++] = ';';
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];
		p->s[p->len++] = c == ';' ? ':' : (c < 0x20 || c == 0x7f) ? ' ' : (char)c;
	}
	p->s[p->len] = '\0';
	return 0;
}

int pfx_write_folded(const struct ana_result *res, FILE *out, int thread)
{
	const struct ana_tree *t = &res->merged;
	if (thread >= 0) {
		t = NULL;
		for (size_t i = 0; i < res->nthreads; i++)
			if (res->threads[i].index == (uint32_t)thread)
				t = &res->threads[i].tree;
		if (!t)
			return -ENOENT;
	}
	if (t->count == 0)
		return 0;
	/* explicit DFS: node, next child to visit, path length before the node */
	struct dfs {
		uint32_t node, next;
		size_t len;
	} *st = malloc((size_t)(t->count > 0 ? t->count : 1) * sizeof(*st));
	struct path_buf p = { 0 };
	int rc = 0;
	if (!st)
		return -ENOMEM;
	uint32_t depth = 0;
	st[depth++] = (struct dfs){ 0, 0, 0 };
	while (depth && rc == 0) {
		struct dfs *d = &st[depth - 1];
		const struct ana_node *n = &t->n[d->node];
		if (d->next == n->nchild) {
			p.len = d->len;
			depth--;
			continue;
		}
		uint32_t c = n->child[d->next++];
		size_t before = p.len;
		if (path_append(&p, ana_name(res, t->n[c].id), before > 0)) {
			rc = -ENOMEM;
			break;
		}
		const struct ana_agg *a = &t->n[c].agg;
		/* deeper than ANA_PATH_MAX_NAMES: "[DEPTH] ..." and the innermost
		 * names, as the CSV's path; st[k] (k >= 1) is the node at depth
		 * k, its name at st[k].len + 1 */
		const char *line = p.s, *prefix = "";
		char pre[40];
		if (depth > ANA_PATH_MAX_NAMES) {
			snprintf(pre, sizeof(pre), "[%u] ...;", depth);
			prefix = pre;
			line = p.s + st[depth - (ANA_PATH_MAX_NAMES - 1)].len + 1;
		}
		if (a->self_ns && fprintf(out, "%s%s %" PRIu64 "\n", prefix, line, a->self_ns) < 0)
			rc = errno ? -errno : -EIO;
		st[depth++] = (struct dfs){ c, 0, before };
	}
	free(st);
	free(p.s);
	if (rc == 0 && (fflush(out) == EOF || ferror(out)))
		rc = errno ? -errno : -EIO;
	return rc;
}

/*
 * Differential folded stacks (flamegraph.pl's difffolded.pl output, which
 * flamegraph.pl draws as a differential flame graph): "a;b;c BASE NEW" per
 * call path of the comparison, BASE and NEW its self time in integer ns in
 * each trace (0 in the trace that lacks it), in the comparison's tree order.
 * Names are sanitized and deep paths cut as in pfx_write_folded(). A path
 * whose self time is 0 in both is left out.
 */
int pfx_write_folded_diff(const struct ana_result *base, const struct ana_result *nw, const struct ana_cmp *c,
			  FILE *out)
{
	struct path_buf p = { 0 };
	uint32_t chain[ANA_PATH_MAX_NAMES];
	int rc = 0;
	for (size_t i = 0; i < c->nrows && rc == 0; i++) {
		const struct ana_cmp_row *r = &c->rows[i];
		const uint64_t sb = r->base_node != UINT32_MAX ? base->merged.n[r->base_node].agg.self_ns : 0;
		const uint64_t sn = r->new_node != UINT32_MAX ? nw->merged.n[r->new_node].agg.self_ns : 0;
		if (!sb && !sn)
			continue;
		const struct ana_result *res = r->base_node != UINT32_MAX ? base : nw;
		const struct ana_tree *t = &res->merged;
		uint32_t node = r->base_node != UINT32_MAX ? r->base_node : r->new_node, n = 0;
		const uint32_t depth = t->n[node].depth;
		for (; node != 0 && n < ANA_PATH_MAX_NAMES; node = t->n[node].parent) /* innermost first */
			chain[n++] = node;
		p.len = 0;
		if (p.s)
			p.s[0] = '\0';
		for (uint32_t k = n; k-- > 0 && rc == 0;)
			if (path_append(&p, ana_name(res, t->n[chain[k]].id), k != n - 1))
				rc = -ENOMEM;
		if (rc == 0 && fprintf(out, "%s%.0u%s%s %" PRIu64 " %" PRIu64 "\n", depth > ANA_PATH_MAX_NAMES ? "[" : "",
				       depth > ANA_PATH_MAX_NAMES ? depth : 0, depth > ANA_PATH_MAX_NAMES ? "] ...;" : "",
				       p.s ? p.s : "", sb, sn) < 0)
			rc = errno ? -errno : -EIO;
	}
	free(p.s);
	if (rc == 0 && (fflush(out) == EOF || ferror(out)))
		rc = errno ? -errno : -EIO;
	return rc;
}
