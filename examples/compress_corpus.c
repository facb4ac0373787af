/*
 * examples/compress_corpus.c - compress real files with zstd on several
 * threads, instrumented with ptz.
 *
 * Phases (sections on the main thread unless said otherwise):
 *   scan          nftw() over the directories (default /usr/share/doc and
 *                 /usr/include; symlinks not followed), regular files only,
 *                 sorted by path so that a run is deterministic, then cut to
 *                 --max-files and --max-bytes (by stat size, in path order: a
 *                 file that would pass the byte budget is skipped and the
 *                 next ones still considered).
 *   compress      one per worker thread: the workers take files from a
 *                 shared queue (an atomic index into the sorted list); per
 *                 file:
 *       compress file   one file; its bytes roll up from its two phases,
 *                       so its rate is the file's end-to-end throughput:
 *           read        read the whole file into the thread's buffer;
 *                       .read_bytes = bytes actually read (pt_metric() once
 *                       known): the read rate
 *           zstd        compress it into the thread's output buffer;
 *                       .written_bytes = the compressed size returned by
 *                       ZSTD_compressCCtx() at level 3 (ZSTD_compress() with
 *                       a context reused per thread): the output rate
 *   summary       totals, overall ratio, best and worst compressing files.
 *
 * Independent totals: the program sums the read() counts and the
 * ZSTD_compressCCtx() return values itself, counts the sections it opens,
 * and prints
 *   compress_corpus: files=N total_read_bytes=N total_written_bytes=N sections=N
 * tests/examples/test_examples.py checks that the trace's report has exactly
 * these totals. A file that cannot be opened or read still has its three
 * sections, with the bytes it did read (0 if it could not be opened) and a
 * compressed size of 0; such files are counted and reported.
 *
 * Failure behaviour: a recorder that cannot be opened, a bad option or a
 * failed allocation ends the program with status 1 (2 for usage) and a
 * message on stderr.
 */
#include <errno.h>     /* errno */
#include <fcntl.h>     /* open */
#include <ftw.h>       /* nftw */
#include <getopt.h>    /* getopt_long */
#include <inttypes.h>  /* PRIu64 */
#include <pthread.h>   /* workers */
#include <stdatomic.h> /* the work queue's index */
#include <stdint.h>    /* uint64_t */
#include <stdio.h>     /* printf */
#include <stdlib.h>    /* malloc, qsort, strtoull */
#include <string.h>    /* strcmp, strerror */
#include <sys/stat.h>  /* struct stat */
#include <time.h>      /* clock_gettime */
#include <unistd.h>    /* read, close */
#include <zstd.h>      /* ZSTD_compressCCtx */

#include "ptz/recorder.h" /* the public API only */

#include "example_util.h" /* now_s, default_threads */

#define PROG "compress_corpus"
#define ZSTD_LEVEL 3
#define MAX_THREADS 256
#define MAX_DIRS 64

struct cfg {
	uint64_t max_files, max_bytes; /* 0 = no limit */
	int threads;
	const char *trace;
	const char *dirs[MAX_DIRS];
	int ndirs;
};

struct file {
	char *path;
	uint64_t stat_bytes;       /* st_size at scan time */
	uint64_t read_bytes;       /* what read() returned, summed */
	uint64_t compressed_bytes; /* ZSTD_compressCCtx()'s return value; 0 on error */
	int error;                 /* errno of a failed open/read, or -1 for a zstd error */
};

/* ------------------------------------------------------------- scan */

/* nftw() has no context argument: the list being built lives here. */
static struct file *scan_files;
static size_t scan_n, scan_cap;
static int scan_oom;

static int scan_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)ftw;
	if (type != FTW_F || !S_ISREG(sb->st_mode))
		return 0;
	if (scan_n == scan_cap) {
		size_t cap = scan_cap ? 2 * scan_cap : 1024;
		struct file *f = realloc(scan_files, cap * sizeof(*f));
		if (!f) {
			scan_oom = 1;
			return 1;
		}
		scan_files = f;
		scan_cap = cap;
	}
	char *p = strdup(path);
	if (!p) {
		scan_oom = 1;
		return 1;
	}
	scan_files[scan_n++] = (struct file){ .path = p, .stat_bytes = (uint64_t)sb->st_size };
	return 0;
}

static int cmp_path(const void *a, const void *b)
{
	return strcmp(((const struct file *)a)->path, ((const struct file *)b)->path);
}

/* ------------------------------------------------------------- workers */

struct queue {
	struct file *files;
	size_t n;
	atomic_size_t next; /* relaxed: it only hands out distinct indexes; the
			     * files[] slots are published by pthread_create and
			     * read back after pthread_join */
	pt_recorder *r;
};

struct worker {
	struct queue *q;
	int index;
	pthread_t tid;
	uint64_t sections;
	int failed;
};

/* Reads all of @path into *buf (grown as needed). Returns bytes read; sets
 * *err to an errno on failure (the bytes read before it still count). */
static uint64_t read_all(const char *path, char **buf, size_t *cap, uint64_t hint, int *err)
{
	*err = 0;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		*err = errno;
		return 0;
	}
	size_t len = 0;
	for (;;) {
		if (len == *cap || *cap < hint + 1) {
			size_t ncap = *cap ? *cap : 65536;
			while (ncap <= len || ncap < hint + 1)
				ncap *= 2;
			char *nb = realloc(*buf, ncap);
			if (!nb) {
				*err = ENOMEM;
				break;
			}
			*buf = nb;
			*cap = ncap;
		}
		ssize_t k = read(fd, *buf + len, *cap - len);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			*err = errno;
			break;
		}
		if (k == 0)
			break;
		len += (size_t)k;
	}
	close(fd);
	return len;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct queue *q = w->q;
	pt_recorder *r = q->r;
	char name[16];
	snprintf(name, sizeof(name), "zstd-worker-%d", w->index);
	pthread_setname_np(pthread_self(), name); /* before the first record: the trace keeps it */
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	char *in = NULL, *out = NULL;
	size_t in_cap = 0, out_cap = 0;
	if (!cctx) {
		w->failed = 1;
		return NULL;
	}
	PT_SECTION(r, "compress") {
		for (;;) {
			const size_t i = atomic_fetch_add_explicit(&q->next, 1, memory_order_relaxed);
			if (i >= q->n)
				break;
			struct file *f = &q->files[i];
			PT_SECTION(r, "compress file") {
				int err = 0;
				uint64_t nread = 0;
				PT_SECTION(r, "read") {
					nread = read_all(f->path, &in, &in_cap, f->stat_bytes, &err);
					pt_metric(r, PT_METRIC_READ_BYTES, nread);
				}
				uint64_t csize = 0;
				PT_SECTION(r, "zstd") {
					if (!err) {
						const size_t bound = ZSTD_compressBound((size_t)nread);
						if (bound > out_cap) {
							char *nb = realloc(out, bound);
							if (nb) {
								out = nb;
								out_cap = bound;
							}
						}
						if (bound <= out_cap) {
							const size_t z = ZSTD_compressCCtx(cctx, out, out_cap, in,
											   (size_t)nread, ZSTD_LEVEL);
							if (ZSTD_isError(z))
								err = -1;
							else
								csize = z;
						} else {
							err = ENOMEM;
						}
					}
					pt_metric(r, PT_METRIC_WRITTEN_BYTES, csize);
				}
				f->read_bytes = nread;
				f->compressed_bytes = csize;
				f->error = err;
			}
			w->sections += 3; /* compress file, read, zstd */
		}
	}
	w->sections++; /* compress */
	ZSTD_freeCCtx(cctx);
	free(in);
	free(out);
	return NULL;
}

/* ------------------------------------------------------------- main */

static void usage(FILE *out)
{
	fprintf(out,
		"usage: " PROG " [options] [DIR...]      (default DIRs: /usr/share/doc /usr/include)\n"
		"  --max-files N    at most N files (0 = no limit)             default 0\n"
		"  --max-bytes B    at most B bytes in all, by stat size        default 160 MiB\n"
		"  --threads T      worker threads                              default: CPUs - 1, 1 to 4\n"
		"  --trace PATH     trace file                                  default compress_corpus.ptz\n"
		"  --small          CI-sized run: --max-files 40 --max-bytes 2 MiB --threads 2\n");
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	if (*s == '-')
		return -1;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || end == s)
		return -1;
	*out = v;
	return 0;
}

static double ratio(const struct file *f)
{
	return f->compressed_bytes ? (double)f->read_bytes / (double)f->compressed_bytes : 0.0;
}

static int cmp_ratio(const void *a, const void *b)
{
	const struct file *fa = *(const struct file *const *)a, *fb = *(const struct file *const *)b;
	const double ra = ratio(fa), rb = ratio(fb);
	if (ra != rb)
		return ra < rb ? 1 : -1;
	return strcmp(fa->path, fb->path);
}

int main(int argc, char **argv)
{
	struct cfg c = { .max_bytes = 160u << 20, .threads = default_threads(4, 1), /* main: scan ... summary */ .trace = PROG ".ptz" };
	enum { O_MAXFILES = 256, O_MAXBYTES, O_THREADS, O_TRACE, O_SMALL };
	static const struct option longopts[] = {
		{ "max-files", required_argument, NULL, O_MAXFILES },
		{ "max-bytes", required_argument, NULL, O_MAXBYTES },
		{ "threads", required_argument, NULL, O_THREADS },
		{ "trace", required_argument, NULL, O_TRACE },
		{ "small", no_argument, NULL, O_SMALL },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	/* --small first sets its sizes; explicit options given with it still win. */
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--small") == 0) {
			c.max_files = 40;
			c.max_bytes = 2u << 20;
			c.threads = 2;
		}
	int o, bad = 0;
	while ((o = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		uint64_t v = 0;
		switch (o) {
		case O_MAXFILES: bad |= parse_u64(optarg, &c.max_files); break;
		case O_MAXBYTES: bad |= parse_u64(optarg, &c.max_bytes); break;
		case O_THREADS:
			if (parse_u64(optarg, &v) || v < 1 || v > MAX_THREADS)
				bad = 1;
			c.threads = (int)v;
			break;
		case O_TRACE: c.trace = optarg; break;
		case O_SMALL: break;
		case 'h': usage(stdout); return 0;
		default: bad = 1; break;
		}
	}
	if (bad || argc - optind > MAX_DIRS) {
		fprintf(stderr, PROG ": bad option or value\n");
		usage(stderr);
		return 2;
	}
	for (int i = optind; i < argc; i++)
		c.dirs[c.ndirs++] = argv[i];
	if (!c.ndirs) {
		c.dirs[c.ndirs++] = "/usr/share/doc";
		c.dirs[c.ndirs++] = "/usr/include";
	}

#ifdef PT_DISABLE
	/* the uninstrumented build of bench/overhead.py: no recorder at all */
	pt_recorder *r = NULL;
#else
	/* --trace '' runs the instrumented code with a NULL recorder (every
	 * call a no-op): bench/overhead.py separates code-generation effects
	 * from the cost of recording this way */
	pt_recorder *r = *c.trace ? pt_open(c.trace, NULL, 0) : NULL;
	if (!r && *c.trace) {
		fprintf(stderr, PROG ": %s: cannot open trace: %s\n", c.trace, strerror(errno));
		return 1;
	}
#endif
	const double t0 = now_s();
	uint64_t sections = 0, scanned = 0, chosen_bytes = 0;
	size_t nfiles = 0;

	PT_SECTION(r, "scan") {
		for (int d = 0; d < c.ndirs && !scan_oom; d++)
			if (nftw(c.dirs[d], scan_one, 32, FTW_PHYS) != 0 && !scan_oom)
				fprintf(stderr, PROG ": %s: cannot walk it all: %s\n", c.dirs[d], strerror(errno));
		if (scan_n)
			qsort(scan_files, scan_n, sizeof(*scan_files), cmp_path);
		scanned = scan_n;
		for (size_t i = 0; i < scan_n; i++) {
			if (c.max_files && nfiles == c.max_files) {
				free(scan_files[i].path);
				continue;
			}
			if (c.max_bytes && chosen_bytes + scan_files[i].stat_bytes > c.max_bytes) {
				free(scan_files[i].path);
				continue;
			}
			chosen_bytes += scan_files[i].stat_bytes;
			scan_files[nfiles++] = scan_files[i];
		}
	}
	sections++;
	if (scan_oom) {
		fprintf(stderr, PROG ": out of memory while scanning\n");
		pt_close(r);
		return 1;
	}

	struct queue q = { .files = scan_files, .n = nfiles, .r = r };
	atomic_init(&q.next, 0);
	struct worker *w = calloc((size_t)c.threads, sizeof(*w));
	if (!w) {
		fprintf(stderr, PROG ": out of memory\n");
		pt_close(r);
		return 1;
	}
	int started = 0, failed = 0;
	for (int t = 0; t < c.threads; t++) {
		w[t].q = &q;
		w[t].index = t;
		if (pthread_create(&w[t].tid, NULL, worker_main, &w[t]) != 0) {
			fprintf(stderr, PROG ": pthread_create failed\n");
			failed = 1;
			break;
		}
		started++;
	}
	for (int t = 0; t < started; t++) {
		pthread_join(w[t].tid, NULL);
		failed |= w[t].failed;
		sections += w[t].sections;
	}
	if (failed || !started) {
		fprintf(stderr, PROG ": a worker failed (out of memory or thread creation)\n");
		pt_close(r);
		return 1;
	}

	uint64_t total_read = 0, total_written = 0, total_stat = 0, errors = 0;
	const struct file **by_ratio = malloc((nfiles ? nfiles : 1) * sizeof(*by_ratio));
	PT_SECTION(r, "summary") {
		for (size_t i = 0; i < nfiles; i++) {
			total_read += scan_files[i].read_bytes;
			total_written += scan_files[i].compressed_bytes;
			total_stat += scan_files[i].stat_bytes;
			errors += scan_files[i].error != 0;
			if (by_ratio)
				by_ratio[i] = &scan_files[i];
		}
		if (by_ratio && nfiles)
			qsort(by_ratio, nfiles, sizeof(*by_ratio), cmp_ratio);
	}
	sections++;
	const double t1 = now_s();

	struct pt_stats_info st;
	pt_stats(r, &st, sizeof(st));
	const int rc_close = pt_close(r);
	if (rc_close < 0) {
		fprintf(stderr, PROG ": %s: error while recording: %s\n", c.trace, strerror(-rc_close));
		return 1;
	}

	printf(PROG ": scanned %" PRIu64 " files, compressed %zu (%" PRIu64 " bytes by stat) on %d threads, zstd "
		    "level %d: %.3f s, %.1f MB/s\n",
	       scanned, nfiles, total_stat, c.threads, ZSTD_LEVEL, t1 - t0,
	       t1 > t0 ? (double)total_read / (t1 - t0) / 1e6 : 0.0);
	printf(PROG ": overall ratio %.3f, %" PRIu64 " files could not be read or compressed\n",
	       total_written ? (double)total_read / (double)total_written : 0.0, errors);
	if (by_ratio && nfiles) {
		const size_t show = nfiles < 3 ? nfiles : 3;
		for (size_t i = 0; i < show; i++)
			printf(PROG ": best  %8.2fx %10" PRIu64 " bytes %s\n", ratio(by_ratio[i]),
			       by_ratio[i]->read_bytes, by_ratio[i]->path);
		for (size_t i = nfiles - show; i < nfiles; i++)
			printf(PROG ": worst %8.2fx %10" PRIu64 " bytes %s\n", ratio(by_ratio[i]),
			       by_ratio[i]->read_bytes, by_ratio[i]->path);
	}
	printf(PROG ": recorder lost_records=%" PRIu64 " lost_sections=%" PRIu64 " trace=%s\n", st.lost_records,
	       st.lost_sections, c.trace);
	printf(PROG ": files=%zu total_read_bytes=%" PRIu64 " total_written_bytes=%" PRIu64 " sections=%" PRIu64 "\n",
	       nfiles, total_read, total_written, sections);
	for (size_t i = 0; i < nfiles; i++)
		free(scan_files[i].path);
	free(scan_files);
	free(by_ratio);
	free(w);
	return 0;
}
