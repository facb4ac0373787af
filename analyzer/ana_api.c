/*
 * analyzer/ana_api.c - the session API of ana_api.h over the live pass
 * (ana.h: ana_live_update(), incremental) and the JSON report's row
 * builder.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/ana_api.h"

struct ana_session {
	char *path;
	struct ana_options opt;
	struct ana_live *live;
	struct ana_result res; /* its reader is borrowed by the live pass until the next update */
	bool have;
};

int ana_session_open(const char *path, const struct ana_options *opt, struct ana_session **out, char *err,
		     size_t errlen)
{
	*out = NULL;
	if (!path) {
		snprintf(err, errlen, "no trace path");
		return -EINVAL;
	}
	struct ana_session *s = calloc(1, sizeof(*s));
	if (!s || !(s->path = strdup(path))) {
		free(s);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (opt) {
		s->opt = *opt;
	} else {
		s->opt.thread = -1;
		s->opt.no_samples = true; /* the rows never read them (compare and suggest do) */
	}
	if (ana_live_open(&s->opt, &s->live)) {
		ana_session_close(s);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	int rc = ana_session_update(s, err, errlen);
	if (rc < 0) {
		ana_session_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

int ana_session_update(struct ana_session *s, char *err, size_t errlen)
{
	struct ana_result next;
	memset(&next, 0, sizeof(next));
	int rc = ana_live_update(s->live, s->path, &next, err, errlen);
	if (rc < 0) {
		ana_result_free(&next);
		return rc;
	}
	if (s->have && s->res.rd == next.rd)
		s->res.rd = NULL; /* refreshed in place: the new result's now */
	if (s->have)
		ana_result_free(&s->res);
	s->res = next;
	s->have = true;
	return 0;
}

void ana_session_stats(const struct ana_session *s, struct ana_live_stats *out)
{
	ana_live_stats(s->live, out);
}

const struct ana_result *ana_session_result(const struct ana_session *s)
{
	return &s->res;
}

void ana_rows_begin(const struct ana_session *s, enum ana_view view, struct ana_row_iter *it)
{
	it->s = s;
	it->view = view;
	it->next = view == ANA_VIEW_TREE ? 1 : 0; /* node 0 is the root */
}

int ana_rows_next(struct ana_row_iter *it, struct ana_row_ref *out)
{
	const struct ana_result *res = &it->s->res;
	if (it->view == ANA_VIEW_TREE) {
		for (; it->next < res->merged.count; it->next++) {
			const struct ana_node *n = &res->merged.n[it->next];
			if (!n->agg.count)
				continue;
			*out = (struct ana_row_ref){ ANA_VIEW_TREE, n->id, it->next, &n->agg };
			it->next++;
			return 1;
		}
		return 0;
	}
	for (; it->next < res->nnames; it->next++) {
		const struct ana_agg *a = &res->by_name[it->next];
		if (!a->count)
			continue;
		*out = (struct ana_row_ref){ ANA_VIEW_FLAT, it->next, 0, a };
		it->next++;
		return 1;
	}
	return 0;
}

json_t *ana_row_json(const struct ana_session *s, const struct ana_row_ref *row)
{
	const struct ana_tree *t = row->view == ANA_VIEW_TREE ? &s->res.merged : NULL;
	return ana_json_row(&s->res, NULL, t, row->node, row->id, row->a);
}

const char *ana_row_path(const struct ana_session *s, const struct ana_row_ref *row, char **buf, size_t *cap)
{
	if (row->view == ANA_VIEW_TREE)
		return ana_path_of(&s->res, &s->res.merged, row->node, buf, cap);
	const char *name = ana_name(&s->res, row->id);
	size_t n = strlen(name) + 1;
	if (n > *cap) {
		char *b = realloc(*buf, n);
		if (!b)
			return NULL;
		*buf = b;
		*cap = n;
	}
	memcpy(*buf, name, n);
	return *buf;
}

void ana_session_close(struct ana_session *s)
{
	if (!s)
		return;
	ana_live_close(s->live); /* first: it borrows the result's reader */
	if (s->have)
		ana_result_free(&s->res);
	free(s->path);
	free(s);
}
