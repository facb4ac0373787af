/*
 * tests/examples/nvtx_count.c - summarize a trace as the lines
 * examples/nvtx_demo expects ("expect LINE"), through the public reader
 * API only. Used by tests/examples/test_nvtx_demo.py.
 *
 * usage: nvtx_count TRACE
 *
 * Prints, one per line (names as "DOMAIN:NAME", the default domain empty):
 *   section D:N COUNT        BEGIN records per name
 *   instant D:N COUNT        INSTANT records per name
 *   async D:N PAIRS cross=C  ASYNC_BEGIN/ASYNC_END pairs matched by async
 *                            id, per name; C of them end on another thread
 *   thread NAME              each thread of the table
 *   domain NAME              each domain of the table
 * then the checks that must all be 0 for a clean NVTX recording:
 *   nesting_errors N   ENDs that do not close the innermost BEGIN's id
 *   open_sections N    BEGINs never ended
 *   async_unmatched N  ASYNC_BEGINs without END and ENDs without BEGIN
 *   async_duplicates N ASYNC_BEGINs reusing an async id
 *   lost N             records lost (LOSS records)
 *   errors N           ERROR record occurrences
 *   problems N         damaged regions the reader skipped
 * Exit: 0, or 1 if the trace cannot be read (message on stderr).
 */
#include <stdint.h> /* uint32_t, uint64_t */
#include <stdio.h>  /* printf */
#include <stdlib.h> /* calloc, qsort */
#include <string.h> /* memset */

#include "ptz/format.h" /* the public reader API */

struct tstack {
	uint32_t index, depth;
	uint32_t ids[4096];
};

struct async_ev {
	uint64_t id;
	uint32_t name, thread;
};

struct vec {
	struct async_ev *v;
	size_t n, cap;
};

static int push_ev(struct vec *a, struct async_ev e)
{
	if (a->n == a->cap) {
		size_t nc = a->cap ? a->cap * 2 : 256;
		struct async_ev *p = realloc(a->v, nc * sizeof(*p));
		if (!p)
			return -1;
		a->v = p;
		a->cap = nc;
	}
	a->v[a->n++] = e;
	return 0;
}

static int by_id(const void *x, const void *y)
{
	const struct async_ev *a = x, *b = y;
	return a->id < b->id ? -1 : a->id > b->id;
}

static const char *dom_name(const struct pt_reader *rd, uint32_t id, const char **name)
{
	uint32_t d = 0;
	*name = pt_reader_string(rd, id, &d);
	if (!*name)
		*name = "(unknown)";
	const char *dn = pt_reader_domain(rd, d);
	return dn ? dn : "(unknown)";
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: nvtx_count TRACE\n");
		return 1;
	}
	struct pt_reader *rd = NULL;
	int rc = pt_reader_open(argv[1], &rd);
	if (rc) {
		fprintf(stderr, "nvtx_count: %s: %s\n", argv[1], rd ? pt_reader_errmsg(rd) : "cannot open");
		pt_reader_close(rd);
		return 1;
	}
	uint32_t nid = pt_reader_max_string_id(rd) + 1;
	uint64_t *sections = calloc(nid, sizeof(*sections));
	uint64_t *instants = calloc(nid, sizeof(*instants));
	uint64_t *pairs = calloc(nid, sizeof(*pairs));
	uint64_t *cross = calloc(nid, sizeof(*cross));
	size_t nthreads = pt_reader_thread_count(rd) + 1, nst = 0;
	struct tstack *st = calloc(nthreads, sizeof(*st));
	struct vec begins = { 0 }, ends = { 0 };
	uint64_t nesting = 0, lost = 0, errors = 0;
	if (!sections || !instants || !pairs || !cross || !st) {
		fprintf(stderr, "nvtx_count: out of memory\n");
		return 1;
	}

	struct pt_chunk_info ci;
	struct pt_record rec;
	while ((rc = pt_reader_next_chunk(rd, PT_READER_ALL_CHUNKS, &ci, sizeof(ci))) == 1) {
		struct tstack *t = NULL;
		if (ci.thread != PT_FMT_META_THREAD) {
			for (size_t i = 0; i < nst; i++)
				if (st[i].index == ci.thread)
					t = &st[i];
			if (!t && nst < nthreads) {
				t = &st[nst++];
				t->index = ci.thread;
			}
		}
		while ((rc = pt_reader_next_record(rd, &rec, sizeof(rec))) == 1) {
			switch (rec.kind) {
			case PT_REC_BEGIN:
				if (rec.id < nid)
					sections[rec.id]++;
				if (t && t->depth < 4096)
					t->ids[t->depth++] = rec.id;
				break;
			case PT_REC_END:
				if (!t || !t->depth || t->ids[t->depth - 1] != rec.id)
					nesting++;
				if (t && t->depth)
					t->depth--;
				break;
			case PT_REC_INSTANT:
				if (rec.id < nid)
					instants[rec.id]++;
				break;
			case PT_REC_ASYNC_BEGIN:
			case PT_REC_ASYNC_END: {
				struct async_ev e = { rec.value, rec.id, ci.thread };
				if (push_ev(rec.kind == PT_REC_ASYNC_BEGIN ? &begins : &ends, e)) {
					fprintf(stderr, "nvtx_count: out of memory\n");
					return 1;
				}
				break;
			}
			case PT_REC_LOSS:
				lost += rec.value;
				break;
			case PT_REC_ERROR:
				errors += rec.value;
				break;
			default:
				break;
			}
		}
		if (rc < 0)
			break;
	}
	if (rc < 0) {
		fprintf(stderr, "nvtx_count: %s: %s\n", argv[1], pt_reader_errmsg(rd));
		return 1;
	}

	/* Pair async ranges by id: ends may precede their begins in file
	 * order (other threads' chunks), so sort both and merge. */
	qsort(begins.v, begins.n, sizeof(*begins.v), by_id);
	qsort(ends.v, ends.n, sizeof(*ends.v), by_id);
	uint64_t unmatched = 0, dups = 0;
	size_t i = 0, j = 0;
	while (i < begins.n || j < ends.n) {
		if (i + 1 < begins.n && begins.v[i].id == begins.v[i + 1].id) {
			dups++;
			i++;
			unmatched++;
			continue;
		}
		if (j == ends.n || (i < begins.n && begins.v[i].id < ends.v[j].id)) {
			unmatched++;
			i++;
		} else if (i == begins.n || ends.v[j].id < begins.v[i].id) {
			unmatched++;
			j++;
		} else {
			uint32_t n = begins.v[i].name;
			if (n < nid) {
				pairs[n]++;
				cross[n] += begins.v[i].thread != ends.v[j].thread;
			}
			i++;
			j++;
		}
	}

	for (uint32_t id = 1; id < nid; id++) {
		const char *name, *dom = dom_name(rd, id, &name);
		if (sections[id])
			printf("section %s:%s %llu\n", dom, name, (unsigned long long)sections[id]);
		if (instants[id])
			printf("instant %s:%s %llu\n", dom, name, (unsigned long long)instants[id]);
		if (pairs[id])
			printf("async %s:%s %llu cross=%llu\n", dom, name, (unsigned long long)pairs[id],
			       (unsigned long long)cross[id]);
	}
	for (size_t k = 0; k < pt_reader_thread_count(rd); k++) {
		struct pt_thread_info ti;
		if (pt_reader_thread(rd, k, &ti, sizeof(ti)) == 1)
			printf("thread %s\n", ti.name);
	}
	for (uint32_t d = 1; pt_reader_domain(rd, d); d++)
		printf("domain %s\n", pt_reader_domain(rd, d));
	uint64_t open = 0;
	for (size_t k = 0; k < nst; k++)
		open += st[k].depth;
	printf("nesting_errors %llu\n", (unsigned long long)nesting);
	printf("open_sections %llu\n", (unsigned long long)open);
	printf("async_unmatched %llu\n", (unsigned long long)unmatched);
	printf("async_duplicates %llu\n", (unsigned long long)dups);
	printf("lost %llu\n", (unsigned long long)lost);
	printf("errors %llu\n", (unsigned long long)errors);
	printf("problems %zu\n", pt_reader_problem_count(rd));

	free(sections);
	free(instants);
	free(pairs);
	free(cross);
	free(st);
	free(begins.v);
	free(ends.v);
	pt_reader_close(rd);
	return 0;
}
