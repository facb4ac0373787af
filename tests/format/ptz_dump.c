/*
 * ptz_dump.c - print a trace's canonical dump through the public reader API.
 *
 * Usage: ptz-dump FILE.ptz
 *
 * The output is, line for line, what tests/format/ptz_spec_reader.py prints
 * from its own reading of doc/trace-format.md, so that check_spec_reader.sh
 * can diff the two. Only include/ptz/format.h is used. Problem messages are
 * informative (doc §6): each is printed as the list of phrases the document
 * names that it contains, in a fixed order.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptz/format.h"

#define MAX_DOMAINS 65536

/* The phrases of doc/trace-format.md, in the order ptz_spec_reader.py lists them. */
static const char *const phrases[] = {
	"process metadata ignored",
	"file truncated",
	"committed length",
	"bad chunk magic",
	"chunk header checksum mismatch",
	"unsupported chunk header length",
	"unknown chunk kind",
	"unknown compression",
	"chunk size out of bounds",
	"record count exceeds payload size",
	"chunk tick range reversed",
	"chunk length runs into the next chunk",
	"to the end",
	"torn tail",
	"event chunk with thread index",
	"payload unreadable",
	"payload checksum mismatch",
	"zstd frame size disagrees with header",
	"decompression failed",
	"payload does not decode at byte",
	"clock: fewer than two calibration points",
	"earlier chunks missing",
	"chunks missing",
	"out of order or repeated",
	"exactly (skipped)",
};

static void put_esc(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\\')
			fputs("\\\\", stdout);
		else if (c >= 0x20 && c < 0x7f)
			putchar(c);
		else
			printf("\\x%02x", c);
	}
}

static void put_str(const char *label, const char *s)
{
	printf("%s \"", label);
	put_esc(s, strlen(s));
	puts("\"");
}

/* The message as the list of document phrases it contains. */
static void put_problem(const char *msg)
{
	int n = 0;
	int earlier = strstr(msg, "earlier chunks missing") != NULL;

	for (size_t i = 0; i < sizeof(phrases) / sizeof(phrases[0]); i++) {
		if (!strstr(msg, phrases[i]) || (earlier && !strcmp(phrases[i], "chunks missing")))
			continue;
		printf("%s%s", n++ ? " + " : "", phrases[i]);
	}
	if (!n)
		printf("UNNAMED: %s", msg);
	putchar('\n');
}

static void put_chunk(const struct pt_reader *r, const struct pt_chunk_info *c)
{
	printf("chunk @%" PRIu64 " thread=%" PRIu32 " seq=%" PRIu64 " records=%" PRIu32 " first=%" PRIu64
	       " (%" PRIu64 " ns) last=%" PRIu64 " (%" PRIu64 " ns)\n",
	       c->offset, c->thread, c->sequence, c->records, c->first_ticks,
	       pt_reader_ticks_to_ns(r, c->first_ticks), c->last_ticks, pt_reader_ticks_to_ns(r, c->last_ticks));
}

static const char *rc_name(int rc)
{
	switch (rc) {
	case -PT_ECORRUPT: return "-PT_ECORRUPT";
	case -PT_EVERSION: return "-PT_EVERSION";
	case -PT_ETRUNCATED: return "-PT_ETRUNCATED";
	default: return NULL;
	}
}

int main(int argc, char **argv)
{
	struct pt_reader *r = NULL;
	int rc;

	if (argc != 2) {
		fputs("usage: ptz-dump FILE.ptz\n", stderr);
		return 2;
	}
	rc = pt_reader_open(argv[1], &r);
	if (rc) {
		if (rc_name(rc))
			printf("open %s\n", rc_name(rc));
		else
			printf("open %d\n", rc);
		pt_reader_close(r);
		return 0;
	}
	const struct pt_trace_info *in = pt_reader_info(r);

	puts("open 0");
	printf("version %u.%u\n", in->version_major, in->version_minor);
	printf("clock_source %" PRIu32 " pid %" PRIu32 "\n", in->clock_source, in->pid);
	printf("start ticks=%" PRIu64 " mono_ns=%" PRIu64 " real_ns=%" PRIu64 "\n", in->start_ticks,
	       in->start_mono_ns, in->start_real_ns);
	put_str("process_name", in->process_name);
	put_str("host", in->host);
	put_str("recorder_version", in->recorder_version);
	put_str("cmdline", in->cmdline);
	printf("committed_bytes %" PRIu64 " file_bytes %" PRIu64 " closed %d header_damaged %d\n", in->committed_bytes,
	       in->file_bytes, in->closed, in->header_damaged);
	if (in->run_id) /* 1.3, §2 and §11 */
		printf("run_id %016" PRIx64 " part %" PRIu32 "\n", in->run_id, in->part);
	if (in->job[0] || in->has_rank) /* 1.2, §2 */
	{
		printf("job \"");
		put_esc(in->job, strlen(in->job));
		printf("\" rank %s%u\n", in->has_rank ? "" : "none ", in->rank);
	}
	if (in->window) /* 1.2, §10 */
		printf("window flight %d flight_bytes %" PRIu64 " laps %" PRIu64 " overwritten_bytes %" PRIu64 "\n",
		       in->flight, in->flight_bytes, in->laps, in->overwritten_bytes);
	printf("chunks %" PRIu64 " event_chunks %" PRIu64 " raw_bytes %" PRIu64 " stored_bytes %" PRIu64 "\n",
	       in->chunks, in->event_chunks, in->raw_bytes, in->stored_bytes);
	printf("compressed_chunks %" PRIu64 " raw_bytes %" PRIu64 " stored_bytes %" PRIu64 "\n", in->compressed_chunks,
	       in->compressed_raw_bytes, in->compressed_stored_bytes);
	if (in->torn_tail_offset == UINT64_MAX)
		printf("torn_tail none corrupt_regions %" PRIu64 "\n", in->corrupt_regions);
	else
		printf("torn_tail %" PRIu64 " corrupt_regions %" PRIu64 "\n", in->torn_tail_offset,
		       in->corrupt_regions);
	printf("ns_per_tick %.17g\n", pt_reader_ns_per_tick(r));
	printf("problems_at_open %zu\n", pt_reader_problem_count(r));

	struct pt_chunk_info c;

	puts("index");
	while (pt_reader_next_chunk_header(r, &c, sizeof(c)) == 1) {
		fputs("  ", stdout);
		put_chunk(r, &c);
	}
	pt_reader_rewind(r);

	size_t nt = pt_reader_thread_count(r);
	struct pt_thread_info *th = calloc(nt ? nt : 1, sizeof(*th));

	if (!th)
		return 1;
	for (size_t i = 0; i < nt; i++)
		pt_reader_thread(r, i, &th[i], sizeof(th[i]));
	printf("threads %zu\n", nt);
	for (size_t i = 0; i < nt; i++) {
		printf("  thread %" PRIu32 " tid=%" PRIu32 " start=%" PRIu64 " end=%" PRIu64 " name=\"", th[i].index,
		       th[i].tid, th[i].start_ticks, th[i].end_ticks);
		put_esc(th[i].name, strlen(th[i].name));
		puts("\"");
	}
	free(th);

	unsigned char *dom_seen = calloc(MAX_DOMAINS, 1);
	uint64_t nrec = 0;

	if (!dom_seen)
		return 1;
	dom_seen[0] = 1;
	for (;;) {
		rc = pt_reader_next_chunk(r, PT_READER_ALL_CHUNKS, &c, sizeof(c));
		if (rc < 0) {
			printf("next_chunk %d\n", rc);
			break;
		}
		if (rc == 0)
			break;
		put_chunk(r, &c);
		struct pt_record rec;

		while ((rc = pt_reader_next_record(r, &rec, sizeof(rec))) == 1) {
			printf("  rec 0x%02" PRIx32 " t=%" PRIu64 " ns=%" PRIu64 " id=%" PRIu32 " aux=%" PRIu32
			       " v=%" PRIu64 " v2=%" PRIu64 " v3=%" PRIu64 " v4=%" PRIu64 " str=",
			       rec.kind, rec.ticks, pt_reader_ticks_to_ns(r, rec.ticks), rec.id, rec.aux, rec.value,
			       rec.value2, rec.value3, rec.value4);
			if (rec.str) {
				putchar('"');
				put_esc(rec.str, rec.str_len);
				puts("\"");
			} else {
				puts("-");
			}
			if (rec.kind == PT_REC_DOMAIN && rec.id < MAX_DOMAINS)
				dom_seen[rec.id] = 1;
			nrec++;
		}
		if (rc == -PT_ECORRUPT)
			puts("  error -PT_ECORRUPT");
		else if (rc != 0)
			printf("  error %d\n", rc);
	}
	printf("records %" PRIu64 "\n", nrec);

	puts("strings");
	for (uint32_t id = 1; id < pt_reader_max_string_id(r); id++) {
		uint32_t dom = 0;
		const char *s = pt_reader_string(r, id, &dom);

		if (!s)
			continue;
		if (dom < MAX_DOMAINS)
			dom_seen[dom] = 1;
		printf("  string %" PRIu32 " domain=%" PRIu32 " \"", id, dom);
		put_esc(s, strlen(s));
		puts("\"");
	}
	puts("domains");
	for (uint32_t id = 0; id < MAX_DOMAINS; id++) {
		if (!dom_seen[id])
			continue;
		const char *s = pt_reader_domain(r, id);

		printf("  domain %" PRIu32 " ", id);
		if (s) {
			putchar('"');
			put_esc(s, strlen(s));
			puts("\"");
		} else {
			puts("(null)");
		}
	}
	free(dom_seen);

	size_t np = pt_reader_problem_count(r);

	printf("problems %zu\n", np);
	for (size_t i = 0; i < np; i++) {
		uint64_t off = 0;
		const char *m = pt_reader_problem(r, i, &off);

		printf("  @%" PRIu64 " ", off);
		put_problem(m ? m : "");
	}
	pt_reader_close(r);
	return 0;
}
