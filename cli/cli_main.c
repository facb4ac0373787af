/*
 * cli/cli_main.c - ptanalyze, the command-line analyzer.
 *
 * Exit codes: 0 = clean trace, or a torn tail recovered (warning names the
 * offset: every crashed production trace looks like that); 1 = damage
 * inside the file (the report of every intact chunk is still printed), the
 * trace cannot be read, --thread names no thread of it, or an output cannot
 * be written in full; 2 = usage error; 3 = compare --fail-on-regression
 * found a regression (and nothing else failed).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <limits.h>
#include <glob.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer/ana.h"
#include "analyzer/ana_compare.h"
#include "analyzer/ana_multi.h"
#include "analyzer/ana_html.h"
#include "analyzer/ana_peaks.h"
#include "analyzer/ana_suggest.h"
#include "cli/cli_top.h"
#include "ptz/version.h" /* PT_VERSION_STRING */
#include "viewer-export/pfx.h"

#define PROG "ptanalyze"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: " PROG " TRACE.ptz --report [options]     report (also: " PROG " report TRACE.ptz)\n"
		"       " PROG " report A.ptz B.ptz ...           many processes as one view: summed, with the\n"
		"                                          spread across them (--json FILE, --top N, filters);\n"
		"                                          a directory stands for its .ptz files\n"
		"       " PROG " merge A.json B.json ...          the same view from reports written elsewhere\n"
		"                                          (each: " PROG " TRACE --json FILE)\n"
		"       " PROG " info TRACE.ptz                   header, threads, losses, compression\n"
		"       " PROG " export --perfetto OUT TRACE.ptz  export for viewers (also: " PROG " TRACE.ptz --perfetto OUT)\n"
		"       " PROG " export --perfetto OUT A.ptz B.ptz ...  many processes in one timeline, one process each\n"
		"                                          (--perfetto, --chrome)\n"
		"       " PROG " compare BASE.ptz NEW.ptz         what got slower or faster, path by path, with a verdict\n"
		"                                          (runs a side: --base B1 --base B2 --new N1 --new N2)\n"
		"       " PROG " suggest TRACE.ptz                what to optimize first, with the evidence\n"
		"       " PROG " top TRACE.ptz                    live view of a trace being written (--interval S,\n"
		"                                          --iterations K, --once, --top N)\n"
		"       " PROG " peaks [--json FILE] [--gpu[=N]]  measure this machine's roofs (FLOP/s, memory GB/s;\n"
		"                                          --gpu: also CUDA device N's FMA, memory and copy rates)\n"
		"       " PROG " --help | --version\n"
		"\n"
		"Report options:\n"
		"  --report             print the call-tree report (the default action)\n"
		"  --flat               aggregate by section name instead of call path\n"
		"  --sort KEY           time (inclusive, default) | self | flops | count | name\n"
		"  --top N              at most N rows per tree level (N rows in --flat)\n"
		"  --depth N            call-tree depth limit (1 = top-level sections)\n"
		"  --min-pct P          hide rows below P%% of the sum of thread spans\n"
		"  --thread N           one thread (its recorder index, see 'info')\n"
		"  --domain NAME        sections of one timing domain ('' = default domain)\n"
		"  --bottlenecks N      also list the top N sections by occupied time (self CPU or GPU)\n"
		"  --since T, --until T keep sections lying within [T, T'] seconds from the trace start\n"
		"  --csv FILE           write every row (tree and flat, merged and per thread) as CSV; - = stdout\n"
		"  --json FILE          write the report as JSON; - = stdout\n"
		"  --no-thread-rows     --json without each thread's rows: the merged rows and their sketches,\n"
		"                       a report for merge (a third of the size on the bench's trace)\n"
		"  --html FILE          write the report, charts and suggestions as one self-contained HTML page\n"
		"                       (--peaks, --fp32, --threshold apply to its suggestions)\n"
		"  --no-progress        no progress bar (shown on a terminal for large traces)\n"
		"  -j N, --jobs N       analyze up to N traces of a set at once (report of several, compare runs),\n"
		"                       or one trace's threads (default: the online CPUs); the results are\n"
		"                       those of -j 1\n"
		"\n"
		"Guards for untrusted traces (every command that reads a trace; none by default):\n"
		"  --max-records N      refuse a trace whose chunk headers announce more than N records\n"
		"  --max-memory BYTES   stop with 'out of memory' past BYTES of data memory (suffix K, M, G)\n"
		"\n");
	fprintf(out, /* two strings: one would pass the 4095 bytes C requires compilers to take */
		"Export options (any of them, together; - = stdout for one of them; doc/export.md):\n"
		"  --perfetto FILE      Perfetto protobuf trace, for ui.perfetto.dev\n"
		"  --chrome FILE        Chrome trace-event JSON, for chrome://tracing, Perfetto and speedscope\n"
		"  --folded FILE        folded stacks 'a;b;c SELF_NS', for flamegraph.pl, inferno and speedscope\n"
		"  --since T, --until T apply to every export; --thread N and --domain NAME to --folded only\n"
		"\n"
		"Compare options (doc/analyzer-output.md section 8; --thread, --domain, --since, --until and\n"
		"--json FILE apply to both traces):\n"
		"  --base F, --new F    the runs of each side, repeated (compare --base b1 --base b2 --new n1\n"
		"                       --new n2): with 2 or more a side the runs are the unit of evidence\n"
		"  --noise PCT          changes within +-PCT%% are not regressions (default 5)\n"
		"  --gate-threshold PCT paths too few to test: a median change beyond +-PCT%% is a regression or\n"
		"                       improvement on the point estimate alone, marked \"threshold only\" (off)\n"
		"  --alpha A            false discovery rate across all paths, 0 < A < 1 (default 0.05)\n"
		"  --bootstrap N        resamples for the CI of the median change (default 1000)\n"
		"  --top N              at most N lines per verdict (default 20; all in --json)\n"
		"  --fail-on-regression exit 3 when any path regressed, per call or in total\n"
		"  --html FILE          the comparison as an HTML page, with a flame graph coloured by verdict\n"
		"  --folded-diff FILE   'a;b;c BASE_SELF_NS NEW_SELF_NS' per path, for flamegraph.pl (difffolded)\n"
		"\n"
		"Suggest options (doc/analyzer-output.md section 9; --since, --until, --domain, --top N (default\n"
		"20) and --json FILE apply):\n"
		"  --peaks FILE         roofs from 'ptanalyze peaks' (a ptz-machine/1 JSON file): roofline classes\n"
		"  --fp32               compare FLOP rates with the FP32 roofs (default FP64)\n"
		"  --min-priority P     leave out findings below P: low (default), medium, high, critical\n"
		"  --threshold KEY=V    change one trigger; keys: min_pct hot_self_pct cold_z cold_ratio cold_min_pct\n"
		"                       unstable_cv short_ns imbalance_ratio gpu_util_pct gap_ms mem_growth_mib\n"
		"                       mem_growth_pct batch_ns batch_calls cache_calls par_cpus par_pct\n"
		"\n"
		"Peaks options: --json FILE (default: stdout), --seconds S per figure (default 0.5).\n"
		"\n"
		"Rotated traces (PTZ_ROTATE_BYTES / _SECONDS: run.000001.ptz, run.000002.ptz, ...): give every part\n"
		"(" PROG " run.0*.ptz, in any order) or the name the recorder was given (" PROG " run.ptz): any command\n"
		"reads them as one trace; a part alone reads as a window of the run.\n"
		"\n"
		"Columns and formulas: doc/analyzer-output.md. Exit codes: 0 clean or torn tail recovered,\n"
		"1 damaged trace (intact chunks still reported), unreadable, no such --thread or output\n"
		"not written, 2 usage error, 3 compare --fail-on-regression found a regression.\n");
}

/* After a usage error: the commands in three lines and where the rest is
 * (the whole help is --help's, on stdout: on stderr it buried the message). */
static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, PROG ": ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	fprintf(stderr, "usage: " PROG " [report] TRACE.ptz [options] | info TRACE.ptz | export --perfetto OUT TRACE.ptz\n"
			"       " PROG " compare BASE.ptz NEW.ptz | suggest TRACE.ptz | peaks [--json FILE]\n"
			"Try '" PROG " --help' for every option.\n");
	return 2;
}

static const char *const commands[] = { "report", "info", "export", "compare", "suggest", "peaks", "top", "merge" };
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

/* Damerau-Levenshtein distance (adjacent swaps count 1) between two short
 * words; longer words than the commands are capped, which only raises it. */
static size_t edit_distance(const char *a, const char *b)
{
	enum { W = 16 };
	size_t d[W + 1][W + 1], n = strnlen(a, W), m = strnlen(b, W);
	for (size_t i = 0; i <= n; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= m; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= n; i++)
		for (size_t j = 1; j <= m; j++) {
			size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	return d[n][m];
}

/*
 * The first word, @word, is no command: a mistyped one ("repot") when it is
 * not an existing file and either lies within 2 edits of a command (then
 * named) or is followed by more words and looks like no path (no '/' or
 * '.'). Returns 2 after the usage error, 0 if it may be a trace.
 */
static int unknown_command(const char *word, int more)
{
	struct stat st;
	if (stat(word, &st) == 0)
		return 0;
	const char *near = NULL;
	size_t best = 3;
	for (size_t k = 0; k < NCOMMANDS; k++) {
		size_t dist = edit_distance(word, commands[k]);
		if (dist < best) {
			best = dist;
			near = commands[k];
		}
	}
	if (near) {
		char msg[128];
		snprintf(msg, sizeof(msg), "unknown command '%%s' (did you mean '%s'?)", near);
		return usage_error(msg, word);
	}
	if (more && !strpbrk(word, "/."))
		return usage_error("unknown command '%s' (commands: report info export compare suggest peaks top)", word);
	return 0;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

static int parse_seconds(const char *s, uint64_t *ns)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || end == s || !(v >= 0) || v > 1e9)
		return -1;
	*ns = (uint64_t)llround(v * 1e9);
	return 0;
}

static void progress(void *ctx, uint64_t done, uint64_t total)
{
	(void)ctx;
	int pct = total ? (int)(100.0 * (double)done / (double)total) : 100;
	fprintf(stderr, "\r" PROG ": reading %3d%%", pct);
	if (done >= total)
		fprintf(stderr, "\r                         \r");
}

/* True when @path names the file or device @st describes. */
static int same_node(const struct stat *st, const char *path)
{
	struct stat b;
	return stat(path, &b) == 0 && st->st_dev == b.st_dev && st->st_ino == b.st_ino;
}

/*
 * The parts of the rotated trace named @base (pt_reader_open_trace()):
 * "@base less .ptz".NNNNNN.ptz, six digits or more, into @g (globfree()
 * it when the count is not 0). Return: how many.
 */
static size_t trace_parts(const char *base, glob_t *g)
{
	size_t len = strlen(base);
	if (len >= 4 && strcmp(base + len - 4, ".ptz") == 0)
		len -= 4;
	char *pat = malloc(2 * len + 48);
	if (!pat)
		return 0;
	size_t o = 0;
	for (size_t i = 0; i < len; i++) { /* the base's own glob characters stand for themselves */
		if (strchr("*?[\\", base[i]))
			pat[o++] = '\\';
		pat[o++] = base[i];
	}
	strcpy(pat + o, ".[0-9][0-9][0-9][0-9][0-9][0-9]*.ptz");
	memset(g, 0, sizeof(*g));
	const int rc = glob(pat, 0, NULL, g);
	free(pat);
	if (rc)
		return 0;
	size_t k = 0; /* "*": digits only */
	for (size_t i = 0; i < g->gl_pathc; i++) {
		const char *d = g->gl_pathv[i] + len + 1, *end = g->gl_pathv[i] + strlen(g->gl_pathv[i]) - 4;
		while (d < end && *d >= '0' && *d <= '9')
			d++;
		if (d == end)
			g->gl_pathv[k++] = g->gl_pathv[i];
		else
			free(g->gl_pathv[i]);
	}
	g->gl_pathc = k;
	if (!k)
		globfree(g);
	return k;
}

/* True when @out names the file @trace, or one of its parts when @trace
 * names a rotated trace (opening it for writing would destroy the trace). */
static int same_file(const char *trace, const char *out)
{
	struct stat a;
	if (!strcmp(out, "-"))
		return 0;
	if (stat(trace, &a) == 0)
		return same_node(&a, out);
	glob_t g;
	int same = 0;
	const size_t n = trace_parts(trace, &g);
	for (size_t i = 0; i < n && !same; i++)
		same = stat(g.gl_pathv[i], &a) == 0 && same_node(&a, out);
	if (n)
		globfree(&g);
	return same;
}

/*
 * The trace (or, for merge, report) arguments of a set, expanded: a
 * directory stands for its files ending in @ext (".ptz", ".json"), a
 * pattern that names no file itself (quoted, so the shell left it) for
 * the files it matches (glob(3)), each in name order; other arguments
 * stay. @argv (whose set is @argv[@first, @first + *@n)) is replaced by a
 * new array, the same up to @first, owned by this function (static: the
 * process's arguments). 0, or 1 after a message (a directory
 * or pattern with no such file, or no memory).
 */
static int expand_sets(char ***argv, int first, int *n, const char *ext)
{
	static char **keep;
	static glob_t gs[64];
	static size_t ngs;
	size_t cap = (size_t)first + (size_t)*n + 1, nout = (size_t)first;
	char **out = malloc(cap * sizeof(*out));
	if (!out) {
		fprintf(stderr, PROG ": out of memory\n");
		return 1;
	}
	memcpy(out, *argv, (size_t)first * sizeof(*out)); /* the command and options, unchanged */
	for (int i = first; i < first + *n; i++) {
		const char *a = (*argv)[i];
		struct stat st;
		const bool dir = stat(a, &st) == 0 && S_ISDIR(st.st_mode);
		const bool pattern = !dir && stat(a, &st) != 0 && strpbrk(a, "*?[");
		size_t from = 0, count = 1;
		glob_t *g = NULL;
		if (dir || pattern) {
			if (ngs == 64) {
				free(out);
				fprintf(stderr, PROG ": more than 64 directories or patterns given\n");
				return 1;
			}
			g = &gs[ngs];
			char *pat = malloc(2 * strlen(a) + strlen(ext) + 4);
			if (!pat) {
				free(out);
				fprintf(stderr, PROG ": out of memory\n");
				return 1;
			}
			size_t o = 0;
			for (const char *c = a; *c; c++) { /* a directory's own glob characters stand for themselves */
				if (dir && strchr("*?[\\", *c))
					pat[o++] = '\\';
				pat[o++] = *c;
			}
			if (dir)
				o += (size_t)sprintf(pat + o, "%s*%s", o && pat[o - 1] == '/' ? "" : "/", ext);
			pat[o] = 0;
			const int rc = glob(pat, 0, NULL, g);
			free(pat);
			if (rc || !g->gl_pathc) {
				if (!rc)
					globfree(g);
				fprintf(stderr, PROG ": %s: %s\n", a,
					dir ? (strcmp(ext, ".ptz") ? "no .json file in this directory"
								   : "no .ptz file in this directory")
					    : "no file matches this pattern");
				free(out);
				return 1;
			}
			ngs++;
			count = g->gl_pathc;
		}
		if (nout + count + 1 > cap) { /* and the closing NULL */
			cap = (nout + count + 1) * 2;
			char **b = realloc(out, cap * sizeof(*out));
			if (!b) {
				free(out);
				fprintf(stderr, PROG ": out of memory\n");
				return 1;
			}
			out = b;
		}
		for (size_t k = from; k < count; k++)
			out[nout++] = g ? g->gl_pathv[k] : (*argv)[i];
	}
	if (nout >= INT_MAX) {
		free(out);
		fprintf(stderr, PROG ": too many files\n");
		return 1;
	}
	out[nout] = NULL;
	free(keep);
	keep = out;
	*argv = out;
	*n = (int)nout - first;
	return 0;
}

/*
 * The parts of one rotated run among the trace arguments @args[0..*@n)
 * become one argument, the run's base name ("run.ptz" for run.000001.ptz
 * ...), which every command opens as one trace (pt_reader_open_trace());
 * a part given alone stays a file (read as a window of its run). The
 * parts given must be every part found under that name, so that the name
 * means them. Rewrites @args in place; 0, or 1 after a message.
 */
static int group_parts(char **args, int *n)
{
	uint64_t *ids = calloc((size_t)*n + 1, sizeof(*ids));
	if (!ids) {
		fprintf(stderr, PROG ": out of memory\n");
		return 1;
	}
	for (int i = 0; i < *n; i++) {
		uint32_t part;
		if (pt_reader_peek_part(args[i], &ids[i], &part))
			ids[i] = 0; /* the command says why it cannot read it */
	}
	int out = 0, bad = 0;
	for (int i = 0; i < *n && !bad; i++) {
		if (ids[i] == UINT64_MAX)
			continue; /* grouped with an earlier one */
		int members = 1;
		for (int j = i + 1; ids[i] && j < *n; j++)
			members += ids[j] == ids[i];
		if (members == 1) {
			args[out++] = args[i];
			continue;
		}
		/* the base name: a member's name less ".NNNNNN.ptz" */
		static char bases[64][4096];
		char *base = out < 64 ? bases[out] : NULL;
		const char *a = args[i];
		size_t len = strlen(a), d = len >= 4 ? len - 4 : 0;
		while (d > 0 && a[d - 1] >= '0' && a[d - 1] <= '9')
			d--;
		if (!base) {
			fprintf(stderr, PROG ": more than 64 rotated traces given at once\n");
			bad = 1;
			break;
		}
		if (len < 4 || strcmp(a + len - 4, ".ptz") || len - 4 - d < 6 || d == 0 || a[d - 1] != '.' ||
		    d >= sizeof(bases[0]) - 4) {
			fprintf(stderr, PROG ": %s: a part of a rotated trace not named NAME.NNNNNN.ptz: give it alone, "
					"or restore the parts' names\n", a);
			bad = 1;
			break;
		}
		snprintf(base, sizeof(bases[0]), "%.*s.ptz", (int)(d - 1), a);
		glob_t g;
		const size_t found = trace_parts(base, &g);
		struct stat st;
		int same = found == (size_t)members && stat(base, &st) != 0;
		for (int j = i; same && j < *n; j++) {
			if (ids[j] != ids[i])
				continue;
			int hit = 0;
			for (size_t k = 0; k < found && !hit; k++)
				hit = stat(g.gl_pathv[k], &st) == 0 && same_node(&st, args[j]);
			same = hit;
		}
		if (found)
			globfree(&g);
		if (!same) {
			fprintf(stderr, PROG ": %s: %d parts of one rotated run given, but %s names %zu file(s)%s: give "
					"all of its parts (or one part alone)\n", a, members, base, found,
				stat(base, &st) == 0 ? " and is a file itself" : "");
			bad = 1;
			break;
		}
		for (int j = i + 1; j < *n; j++)
			if (ids[j] == ids[i])
				ids[j] = UINT64_MAX;
		args[out++] = base;
	}
	free(ids);
	*n = out;
	return bad;
}

/* "-" when @out names what stdout already is (/dev/stdout, or the file or
 * device stdout goes to), else @out: such an output is written as "-", so
 * that two outputs cannot share stdout unnoticed (one overwrote the other)
 * and the text report stays off it. */
static const char *as_stdout(const char *out)
{
	struct stat a;
	if (!out || strcmp(out, "-") == 0)
		return out;
	return fstat(STDOUT_FILENO, &a) == 0 && same_node(&a, out) ? "-" : out;
}

/* The text on stdout (report, info) reached it whole; else a message and 1. */
static int stdout_ok(void)
{
	if (fflush(stdout) == 0 && !ferror(stdout))
		return 0;
	fprintf(stderr, PROG ": cannot write to standard output: %s\n", strerror(errno ? errno : EIO));
	return 1;
}

static FILE *open_out(const char *path)
{
	if (strcmp(path, "-") == 0)
		return stdout;
	return fopen(path, "w");
}

/* Closes @f, an output of open_out() (NULL: it could not be opened) whose
 * writing @failed or not, and names @path and @what on a failure; 1 if
 * anything failed. */
static int close_out(FILE *f, const char *path, const char *what, int failed)
{
	if (f && f != stdout)
		failed |= fclose(f) != 0;
	if (failed)
		fprintf(stderr, PROG ": %s: cannot write %s: %s\n", path, what, strerror(errno ? errno : EIO));
	return failed;
}

enum { OPT_REPORT = 256, OPT_FLAT, OPT_SORT, OPT_TOP, OPT_DEPTH, OPT_MINPCT, OPT_THREAD, OPT_DOMAIN,
       OPT_BOTTLENECKS, OPT_SINCE, OPT_UNTIL, OPT_CSV, OPT_JSON, OPT_NOPROGRESS, OPT_VERSION, OPT_PERFETTO,
       OPT_CHROME, OPT_FOLDED, OPT_NOISE, OPT_GATE, OPT_ALPHA, OPT_BOOTSTRAP, OPT_FAILREG, OPT_PEAKS, OPT_MINPRIO, OPT_FP32,
       OPT_THRESHOLD, OPT_SECONDS, OPT_MAXRECORDS, OPT_MAXMEMORY, OPT_GPU, OPT_HTML, OPT_FOLDED_DIFF,
       OPT_INTERVAL, OPT_ITERATIONS, OPT_ONCE, OPT_BASE, OPT_NEW, OPT_NOTHREADROWS };

/* compare --base / --new: runs a side at most (the usage message says 64) */
#define CMP_MAX_RUNS 64

/* A count or a size: digits, for a size an optional K, M or G (binary). */
static int parse_u64(const char *s, int suffix, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -1;
	unsigned shift = 0;
	if (suffix && *end && !end[1])
		shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 64;
	else if (*end)
		return -1;
	if (shift == 64 || (shift && v > (UINT64_MAX >> shift)) || v == 0)
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

/* --max-records: the records that @path's chunk headers announce (read
 * before any record is decoded, so a decompression bomb costs nothing).
 * 0: within @max, or the trace cannot be opened (the command says why); 1:
 * refused, said. */
static int guard_records(const char *path, uint64_t max)
{
	struct pt_reader *rd;
	if (pt_reader_open_trace(path, &rd))
		return 0;
	uint64_t n = 0;
	struct pt_chunk_info ci;
	while (pt_reader_next_chunk_header(rd, &ci, sizeof(ci)) == 1)
		if (ci.thread != PT_FMT_META_THREAD)
			n += ci.records;
	pt_reader_close(rd);
	if (n <= max)
		return 0;
	fprintf(stderr, PROG ": %s: the trace holds %llu records (its chunk headers say), more than --max-records %llu\n",
		path, (unsigned long long)n, (unsigned long long)max);
	return 1;
}

/* The one warning for a trace its recorder did not close. */
static void warn_unclosed(const char *path, const struct pt_trace_info *in)
{
	if (in->flight)
		fprintf(stderr, PROG ": %s: warning: flight trace was not closed (the recorder crashed or is still "
				"writing); read its window as of the head at byte %llu\n",
			path, (unsigned long long)in->committed_bytes);
	else
		fprintf(stderr, PROG ": %s: warning: trace was not closed (the recorder crashed or is still "
				"writing); read up to its committed length, %llu bytes\n",
			path, (unsigned long long)in->committed_bytes);
}

/* Prints the reader's problems the way every command does; 1 if the trace is damaged inside. */
static int report_problems(const char *path, struct pt_reader *rd)
{
	const struct pt_trace_info *in = pt_reader_info(rd);
	int corrupt = in->corrupt_regions > 0 || in->damaged_chunks > 0 || in->header_damaged;
	for (size_t i = 0; i < pt_reader_problem_count(rd); i++) {
		uint64_t off;
		const char *m = pt_reader_problem(rd, i, &off);
		fprintf(stderr, PROG ": %s: %s: %s\n", path, corrupt ? "error" : "warning", m);
	}
	if (!in->closed && !corrupt)
		warn_unclosed(path, in);
	return corrupt;
}

/*
 * The damage an export met, reported from its reader (pfx_opts.file_read):
 * a trace is then read once, not once more to find it. The exporters read
 * the meta chunks and every chunk of every thread in the reader's thread
 * table, which lists the thread of every event chunk (a lost entry is
 * listed with tid 0), so the problems are those of a full reading. Each
 * file once, by the first export that reads it.
 */
struct read_report {
	const char *const *paths;
	unsigned char *done; /* by file: reported */
	int corrupt;         /* some file is damaged */
};

static void on_file_read(void *ctx, size_t file, struct pt_reader *rd)
{
	struct read_report *x = ctx;
	if (x->done[file])
		return;
	x->done[file] = 1;
	x->corrupt |= report_problems(x->paths[file], rd);
}

enum { EXP_PERFETTO, EXP_CHROME, EXP_FOLDED, EXP_N };
static const char *const exp_what[EXP_N] = { "Perfetto trace", "Chrome JSON", "folded stacks" };

/*
 * Whether @path still names the regular file open as @f (fstat before
 * fclose in @st): only such a file is removed after a failed export. A
 * device (/dev/full), a FIFO or a symbolic link named as the output (even
 * one to a regular file: the link is what unlink() would remove) is left
 * alone: removing it would destroy something the export did not create.
 */
static int own_regular_file(const char *path, const struct stat *st)
{
	struct stat l;
	return S_ISREG(st->st_mode) && lstat(path, &l) == 0 && S_ISREG(l.st_mode) && l.st_dev == st->st_dev &&
	       l.st_ino == st->st_ino;
}

/* Writes one export to @out_path ("-" = stdout); a failed regular file is removed. */
static int export_one(int kind, const char *const *paths, size_t npaths, const char *out_path,
		      const struct pfx_opts *po, const struct ana_result *res, int thread)
{
	const char *path = paths[0];
	FILE *f = open_out(out_path);
	char err[512] = "";
	struct stat st;
	if (!f) {
		fprintf(stderr, PROG ": %s: cannot write %s: %s\n", out_path, exp_what[kind], strerror(errno));
		return 1;
	}
	if (fstat(fileno(f), &st))
		st.st_mode = 0; /* unknown: never removed */
	int rc;
	if (kind == EXP_PERFETTO)
		rc = pfx_write_perfetto_set(paths, npaths, f, po, err, sizeof(err));
	else if (kind == EXP_CHROME)
		rc = pfx_write_chrome_set(paths, npaths, f, po, err, sizeof(err));
	else if ((rc = pfx_write_folded(res, f, thread)) == -ENOENT)
		snprintf(err, sizeof(err), "no thread with index %d (see 'info')", thread);
	else if (rc)
		snprintf(err, sizeof(err), "%s", strerror(-rc));
	if (f != stdout && fclose(f) && !rc) {
		rc = -errno;
		snprintf(err, sizeof(err), "%s", strerror(errno));
	}
	if (rc) {
		if (npaths > 1) /* the message names the file */
			fprintf(stderr, PROG ": %s: cannot write %s from %zu traces: %s\n", out_path, exp_what[kind],
				npaths, err);
		else
			fprintf(stderr, PROG ": %s: cannot write %s from %s: %s\n", out_path, exp_what[kind], path, err);
		if (f != stdout && own_regular_file(out_path, &st))
			unlink(out_path);
		else if (f != stdout)
			fprintf(stderr, PROG ": %s: left in place (a device, FIFO or symbolic link, "
					"not a regular file)\n", out_path);
		return 1;
	}
	return 0;
}

/*
 * ptanalyze export: the exporters read the trace themselves and take every
 * intact chunk; the damage they met is found again here (a reader pass
 * decoding every chunk, much cheaper than writing any export) so that
 * exit codes and messages are those of the report.
 */
static int run_export(const char *path, const char *const outs[EXP_N], const struct ana_options *ao)
{
	struct pt_reader *rd = NULL;
	int rc = pt_reader_open_trace(path, &rd);
	if (rc) {
		fprintf(stderr, PROG ": %s: %s\n", path, rd ? pt_reader_errmsg(rd) : pt_strerror(rc));
		pt_reader_close(rd);
		return 1;
	}
	char wmsg[320];
	if (ana_window_outside(rd, ao, wmsg, sizeof(wmsg))) {
		fprintf(stderr, PROG ": %s: %s\n", path, wmsg);
		pt_reader_close(rd);
		return 1;
	}
	unsigned char done1 = 0;
	struct read_report rr = { .paths = &path, .done = &done1 };
	const struct pfx_opts po = { .since_ns = ao->since_ns, .until_ns = ao->until_ns, .file_read = on_file_read,
				     .file_read_ctx = &rr };
	struct ana_result res;
	int failed = 0, analyzed = 0;
	memset(&res, 0, sizeof(res));
	for (int k = 0; k < EXP_N && !failed; k++) {
		if (!outs[k])
			continue;
		if (k == EXP_FOLDED) {
			char err[512];
			if (ana_run(path, ao, &res, err, sizeof(err))) {
				fprintf(stderr, PROG ": %s: %s\n", path, err);
				failed = 1;
				break;
			}
			analyzed = 1;
		}
		failed = export_one(k, &path, 1, outs[k], &po, &res, ao->thread);
	}
	/* said by an exporter's reader (on_file_read()), else (--folded alone) by the analysis's */
	int corrupt = 0;
	if (!failed)
		corrupt = done1 ? rr.corrupt : report_problems(path, res.rd);
	if (analyzed)
		ana_result_free(&res);
	pt_reader_close(rd);
	return failed || corrupt ? 1 : 0;
}

/*
 * ptanalyze export of several traces (the processes of one job): one
 * Perfetto trace or Chrome JSON with one process per file
 * (pfx_write_perfetto_set()). Each file's damage and not-closed state is
 * reported as for one trace; a window outside one file is a warning, outside
 * every file an error. Exit 0, or 1.
 */
static int run_export_set(const char *const *paths, size_t n, const char *const outs[EXP_N],
			  const struct ana_options *ao)
{
	int outside = 0;
	for (size_t t = 0; t < n; t++) {
		struct pt_reader *rd = NULL;
		if (pt_reader_open_trace(paths[t], &rd)) {
			fprintf(stderr, PROG ": %s: %s\n", paths[t], rd ? pt_reader_errmsg(rd) : "cannot read");
			pt_reader_close(rd);
			return 1;
		}
		char wmsg[320];
		if (ana_window_outside(rd, ao, wmsg, sizeof(wmsg))) {
			fprintf(stderr, PROG ": %s: warning: %s\n", paths[t], wmsg);
			outside++;
		}
		pt_reader_close(rd);
	}
	if ((size_t)outside == n) {
		fprintf(stderr, PROG ": the window is outside every trace: nothing to export\n");
		return 1;
	}
	/* each file's damage as its export reads it (on_file_read()) */
	struct read_report rr = { .paths = paths, .done = calloc(n, 1) };
	if (!rr.done) {
		fprintf(stderr, PROG ": out of memory\n");
		return 1;
	}
	const struct pfx_opts po = { .since_ns = ao->since_ns, .until_ns = ao->until_ns, .file_read = on_file_read,
				     .file_read_ctx = &rr };
	int failed = 0;
	for (int k = 0; k < EXP_N && !failed; k++)
		if (outs[k] && export_one(k, paths, n, outs[k], &po, NULL, -1))
			failed = 1;
	free(rr.done);
	return failed || rr.corrupt ? 1 : 0;
}

/* Prints the reader's problems and the not-closed warning of one analyzed trace; 1 if damaged. */
static int trace_warnings(const char *path, const struct ana_result *res)
{
	const struct pt_trace_info *in = pt_reader_info(res->rd);
	for (size_t i = 0; i < pt_reader_problem_count(res->rd); i++) {
		uint64_t off;
		const char *m = pt_reader_problem(res->rd, i, &off);
		fprintf(stderr, PROG ": %s: %s: %s\n", path, res->corrupt ? "error" : "warning", m);
	}
	if (!in->closed && !res->corrupt)
		warn_unclosed(path, in);
	return res->corrupt ? 1 : 0;
}

static int check_side(const char *path, const struct ana_options *ao, struct ana_result *res);

/* Analyzes one side of a comparison; 0, or 1 with a message. */
static int analyze_side(const char *path, struct ana_options *ao, struct ana_result *res, int show_progress)
{
	char err[512];
	ao->progress = NULL;
	if (show_progress) {
		struct stat st;
		if (stat(path, &st) == 0 && st.st_size > (64l << 20))
			ao->progress = progress;
	}
	if (ana_run(path, ao, res, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s: %s\n", path, err);
		if (res->rd)
			ana_result_free(res);
		return 1;
	}
	return check_side(path, ao, res);
}

/* What analyze_side() checks once the analysis of @path is in @res: the
 * --thread exists, the window is not past the trace. 0, or 1 with a
 * message (@res freed). */
static int check_side(const char *path, const struct ana_options *ao, struct ana_result *res)
{
	char err[512];
	size_t ti = 0;
	while (ao->thread >= 0 && ti < res->nthreads && res->threads[ti].index != (uint32_t)ao->thread)
		ti++;
	if (ao->thread >= 0 && ti == res->nthreads) {
		fprintf(stderr, PROG ": %s: no thread with index %d (see 'info')\n", path, ao->thread);
		ana_result_free(res);
		return 1;
	}
	if (ana_window_outside(res->rd, ao, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s: %s\n", path, err);
		ana_result_free(res);
		return 1;
	}
	return 0;
}

/*
 * Analyzes the @n traces @paths into res[0..n) with the same options, ptrs[i] = &res[i]: a damaged
 * trace is reported (its intact chunks analyzed, *@code = 1) and the others still read; the first
 * that cannot be read at all stops it (analyze_side() said why). Return: how many were analyzed (to
 * free), @n when all were.
 */
/* -j N: analyses of a set run at once (default: the online CPUs, at most 64) */
static unsigned g_jobs = 1;

/* The analyses of a set, shared by the -j workers: each takes the next file. */
struct jobs {
	const char *const *paths;
	size_t n;
	const struct ana_options *ao;
	struct ana_result *res;
	int *rc;
	char (*err)[512];
	atomic_size_t next;
};

static void *job_worker(void *arg)
{
	struct jobs *j = arg;
	for (size_t i; (i = atomic_fetch_add(&j->next, 1)) < j->n;) {
		struct ana_options o = *j->ao;
		o.progress = NULL; /* several at once: no one bar */
		o.jobs = 1;        /* the traces share the CPUs, not each trace's threads */
		j->rc[i] = ana_run(j->paths[i], &o, &j->res[i], j->err[i], sizeof(j->err[i]));
	}
	return NULL;
}

/*
 * ana_run() of each of @paths[0..@n) into @res, on @jobs threads: each
 * analysis is independent (ana_run() shares nothing between calls), so the
 * results are those of one at a time. 0, or -1 if no thread could start
 * (then nothing ran: the caller runs them one at a time).
 */
static int run_jobs(const char *const *paths, size_t n, const struct ana_options *ao, struct ana_result *res,
		    int *rc, char (*err)[512], unsigned jobs)
{
	struct jobs j = { .paths = paths, .n = n, .ao = ao, .res = res, .rc = rc, .err = err };
	atomic_init(&j.next, 0);
	pthread_t tid[64];
	unsigned started = 0;
	if (jobs > 64)
		jobs = 64;
	for (; started + 1 < jobs && started + 1 < n; started++)
		if (pthread_create(&tid[started], NULL, job_worker, &j))
			break;
	if (!started)
		return -1;
	job_worker(&j); /* this thread is one of the workers */
	for (unsigned k = 0; k < started; k++)
		pthread_join(tid[k], NULL);
	return 0;
}

static size_t analyze_all(const char *const *paths, size_t n, struct ana_options *ao, struct ana_result *res,
			  const struct ana_result **ptrs, int show_progress, int *code)
{
	int *rc = g_jobs > 1 && n > 1 ? calloc(n, sizeof(*rc)) : NULL;
	char (*err)[512] = rc ? calloc(n, sizeof(*err)) : NULL;
	if (err && run_jobs(paths, n, ao, res, rc, err, g_jobs) == 0) {
		/* in file order, as one at a time: the first failure stops, its message first */
		size_t i = 0;
		for (; i < n; i++) {
			if (rc[i] || check_side(paths[i], ao, &res[i])) {
				if (rc[i]) {
					fprintf(stderr, PROG ": %s: %s\n", paths[i], err[i]);
					if (res[i].rd)
						ana_result_free(&res[i]);
				}
				*code = 1;
				for (size_t k = i + 1; k < n; k++) /* analyzed, never to be used */
					if (!rc[k] && res[k].rd)
						ana_result_free(&res[k]);
				break;
			}
			*code |= trace_warnings(paths[i], &res[i]);
			ptrs[i] = &res[i];
		}
		free(rc);
		free(err);
		return i;
	}
	free(rc);
	free(err);
	for (size_t i = 0; i < n; i++) {
		if (analyze_side(paths[i], ao, &res[i], show_progress)) {
			*code = 1;
			return i;
		}
		*code |= trace_warnings(paths[i], &res[i]);
		ptrs[i] = &res[i];
	}
	return n;
}

/*
 * ptanalyze [report] A.ptz B.ptz ...: every trace analyzed with the same options and shown as one
 * view (analyzer/ana_multi.h): text on stdout, unless --json - ; exit 1 if a trace cannot be read or is
 * damaged, or the JSON cannot be written.
 */
/* The view of @n sources: JSON to @json (if given), the text to stdout unless the JSON went there.
 * 0, or 1 with a message. */
static int multi_out(const struct ana_multi_src *src, size_t n, const char *json, int top)
{
	struct ana_multi m;
	int code = 0;
	if (ana_multi_build(src, n, &m)) {
		fprintf(stderr, PROG ": out of memory\n");
		return 1;
	}
	if (json) {
		FILE *f = open_out(json);
		if (close_out(f, json, "JSON", !f || ana_multi_json(f, &m, src)))
			code = 1;
	}
	if (!json || strcmp(json, "-"))
		ana_multi_text(stdout, &m, src, top);
	ana_multi_free(&m);
	return code;
}

/*
 * ptanalyze merge R1.json R2.json ...: the view of several traces from
 * their JSON reports (each `ptanalyze TRACE --json`, written where the
 * trace is), merged by their sketches: the same view, figure for figure, as
 * `ptanalyze report` of the traces (doc/analyzer-output.md §12). Exit 0; 1
 * for a file that is not such a report (named, with the reason) or an
 * output that cannot be written.
 */
static int run_merge(const char *const *files, size_t n, const char *json, int top)
{
	struct ana_multi_src *src = calloc(n, sizeof(*src));
	size_t nsrc = 0;
	int code = 0;
	if (!src) {
		fprintf(stderr, PROG ": out of memory\n");
		return 1;
	}
	for (; nsrc < n; nsrc++) {
		char err[512];
		if (ana_multi_src_json(files[nsrc], &src[nsrc], err, sizeof(err))) {
			fprintf(stderr, PROG ": %s: %s\n", files[nsrc], err);
			code = 1;
			break;
		}
	}
	if (!code)
		code = multi_out(src, n, json, top);
	for (size_t i = 0; i < nsrc; i++)
		ana_multi_src_free(&src[i]);
	free(src);
	int out = stdout_ok();
	return out ? out : code;
}

static int run_multi(const char *const *files, size_t n, struct ana_options *ao, const char *json, int top,
		     int show_progress)
{
	struct ana_result *res = calloc(n, sizeof(*res));
	const struct ana_result **ptrs = calloc(n, sizeof(*ptrs));
	int code = 0;
	size_t done = 0;
	if (!res || !ptrs) {
		fprintf(stderr, PROG ": out of memory\n");
		code = 1;
	} else {
		done = analyze_all(files, n, ao, res, ptrs, show_progress, &code);
	}
	struct ana_multi_src *src = done == n ? calloc(n, sizeof(*src)) : NULL;
	size_t nsrc = 0;
	while (src && nsrc < n && ana_multi_src_result(ptrs[nsrc], files[nsrc], &src[nsrc]) == 0)
		nsrc++;
	if (done == n && nsrc == n) {
		if (multi_out(src, n, json, top))
			code = 1;
	} else if (done == n) {
		fprintf(stderr, PROG ": out of memory\n");
		code = 1;
	}
	for (size_t i = 0; i < nsrc; i++)
		ana_multi_src_free(&src[i]);
	free(src);
	for (size_t i = 0; i < done; i++)
		ana_result_free(&res[i]);
	free(res);
	free(ptrs);
	int out = stdout_ok();
	return out ? out : code;
}

/*
 * ptanalyze compare BASE NEW, or --base B1 --base B2 ... --new N1 --new N2 ...: every trace analyzed
 * with the same options, compared path by path (analyzer/ana_compare.h; with 2 or more runs a side,
 * the runs are the unit). Text on stdout unless --json - ; exit 1 if a trace cannot be read, names no
 * such --thread, is damaged, or an output cannot be written; else 3 with --fail-on-regression and a
 * regression; else 0.
 */
static int run_compare(const char *const *bpaths, size_t nb, const char *const *npaths, size_t nn,
		       struct ana_options *ao, const struct ana_cmp_opts *co_in, int top, const char *const outs[3],
		       int fail_on_regression, int show_progress)
{
	const char *json = outs[0], *html = outs[1], *folded_diff = outs[2];
	struct ana_result *runs = calloc(nb + nn, sizeof(*runs));
	const struct ana_result **ptrs = calloc(nb + nn, sizeof(*ptrs));
	if (!runs || !ptrs) {
		free(runs);
		free(ptrs);
		fprintf(stderr, PROG ": compare: out of memory\n");
		return 1;
	}
	ao->merged_percentiles_only = true; /* the comparison reads the reservoirs, not the histograms */
	ao->no_flat_percentiles = true;
	int code = 0;
	size_t done = analyze_all(bpaths, nb, ao, runs, ptrs, show_progress, &code);
	if (done == nb)
		done += analyze_all(npaths, nn, ao, runs + nb, ptrs + nb, show_progress, &code);
	struct ana_result *b = &runs[0], *n = &runs[nb];
	struct ana_cmp_opts co = *co_in;
	if (nb >= 2 && nn >= 2) {
		co.base_runs = ptrs;
		co.nbase_runs = nb;
		co.new_runs = ptrs + nb;
		co.nnew_runs = nn;
	}
	struct ana_cmp c;
	int rc = done < nb + nn ? 0 : ana_compare(b, n, &co, &c);
	if (done < nb + nn) {
		/* a trace could not be read: said above */
	} else if (rc) {
		fprintf(stderr, PROG ": compare: %s\n", strerror(-rc));
		code = 1;
	} else {
		if (json) {
			FILE *f = open_out(json);
			if (close_out(f, json, "JSON", !f || ana_compare_json(f, b, n, &c)))
				code = 1;
		}
		if (html) {
			FILE *f = open_out(html);
			if (close_out(f, html, "HTML page",
				      !f || ana_html_compare(f, b, n, &c, bpaths[0], npaths[0], PROG " " PT_VERSION_STRING)))
				code = 1;
		}
		if (folded_diff) {
			FILE *f = open_out(folded_diff);
			if (close_out(f, folded_diff, "differential folded stacks", !f || pfx_write_folded_diff(b, n, &c, f)))
				code = 1;
		}
		if ((!json || strcmp(json, "-")) && (!html || strcmp(html, "-")) && (!folded_diff || strcmp(folded_diff, "-"))) {
			for (size_t i = 0; i < nb; i++)
				printf("base: %s\n", bpaths[i]);
			for (size_t i = 0; i < nn; i++)
				printf("new:  %s\n", npaths[i]);
			ana_compare_text(stdout, b, n, &c, top > 0 ? top : 20);
		}
		if (code == 0 && fail_on_regression && c.count[ANA_V_REGRESSION] + c.total_regressions > 0)
			code = 3; /* a slower call or a total per run that grew (call count, new work) */
		ana_compare_free(&c);
	}
	for (size_t i = 0; i < done; i++)
		ana_result_free(&runs[i]);
	free(runs);
	free(ptrs);
	int out = stdout_ok();
	return out ? out : code;
}

/*
 * The report's page (--html): the suggestions of ana_suggest() on @res with
 * the suggest options given (@peaks loaded, or NULL), then the page. A
 * failed suggestion pass leaves them out of the page, said on stderr. 1 if
 * the page cannot be written in full, with a message.
 */
static int write_html_report(const char *html, const char *path, const struct ana_result *res,
			     const struct ana_sug_opts *so, const struct ana_peaks *peaks)
{
	struct ana_sug s;
	struct ana_sug_opts o = *so;
	o.peaks = peaks;
	o.trace_path = path;
	int rc = ana_suggest(res, &o, &s);
	if (rc)
		fprintf(stderr, PROG ": suggest: %s (the page has no suggestions)\n", strerror(-rc));
	FILE *f = open_out(html);
	int failed = close_out(f, html, "HTML page",
			       !f || ana_html_report(f, res, rc ? NULL : &s, path, PROG " " PT_VERSION_STRING));
	if (!rc)
		ana_suggest_free(&s);
	return failed;
}

/*
 * ptanalyze suggest TRACE: the rules of analyzer/ana_suggest.h over one
 * analyzed trace. Text on stdout unless --json - ; exit codes as the
 * report's.
 */
static int run_suggest(const char *path, struct ana_options *ao, const struct ana_sug_opts *so, int top,
		       const char *json, int show_progress)
{
	struct ana_result res;
	ao->merged_percentiles_only = true; /* the rules read merged rows and per-thread totals only */
	ao->no_flat_percentiles = true;
	if (analyze_side(path, ao, &res, show_progress))
		return 1;
	int code = trace_warnings(path, &res);
	struct ana_sug s;
	struct ana_sug_opts o = *so;
	o.trace_path = path; /* gpu-idle reads the trace again for the host sections of its longest gaps */
	int rc = ana_suggest(&res, &o, &s);
	if (rc) {
		fprintf(stderr, PROG ": suggest: %s\n", strerror(-rc));
		ana_result_free(&res);
		return 1;
	}
	if (json) {
		FILE *f = open_out(json);
		if (close_out(f, json, "JSON", !f || ana_suggest_json(f, &res, &s)))
			code = 1;
	}
	if (!json || strcmp(json, "-"))
		ana_suggest_text(stdout, &res, &s, top > 0 ? top : 20);
	ana_suggest_free(&s);
	ana_result_free(&res);
	int out = stdout_ok();
	return out ? out : code;
}

/*
 * ptanalyze peaks: measures this machine's roofs; JSON to @json ("-" or
 * NULL: stdout), a summary on stderr. The output is opened before the
 * measurement (a path that cannot be written costs no measurement) but
 * not truncated until there is something to write: a failed or
 * interrupted run leaves an existing profile as it was, and removes only
 * a file it created itself.
 */
/* A measurement failed: says why, leaves an existing profile as it was and
 * removes one this run created (@created: its path, or NULL). Returns 1. */
static int peaks_failed(const char *what, const char *err, int fd, const char *created)
{
	fprintf(stderr, PROG ": %s: %s\n", what, err);
	if (fd >= 0)
		close(fd);
	if (created)
		unlink(created);
	return 1;
}

static int run_peaks(const char *json, double seconds, int gpu_dev)
{
	struct ana_peaks p;
	char err[512];
	int fd = -1, created = 0;
	if (json && strcmp(json, "-")) {
		fd = open(json, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		created = fd >= 0;
		if (fd < 0 && errno == EEXIST)
			fd = open(json, O_WRONLY | O_CLOEXEC);
		if (fd < 0) {
			fprintf(stderr, PROG ": %s: cannot write the machine profile: %s\n", json, strerror(errno));
			return 1;
		}
	}
	fprintf(stderr, PROG ": measuring FLOP/s and memory bandwidth, one core then all cores (%g s a figure, "
			"a few seconds in all)...\n",
		seconds);
	int rc = ana_peaks_measure(&p, seconds, err, sizeof(err));
	if (rc)
		return peaks_failed("peaks", err, fd, created ? json : NULL);
	fprintf(stderr, PROG ": %s (%s, %u CPUs): FP64 %.3g / %.3g GFLOP/s, FP32 %.3g / %.3g GFLOP/s, memory "
			"%.3g / %.3g GB/s (one core / all cores)\n",
		p.host, p.isa, p.cpus, p.gflops64_1, p.gflops64_all, p.gflops32_1, p.gflops32_all, p.gbps_1, p.gbps_all);
	{ /* how far to trust them: each figure is the best repetition; the median one ran this much lower */
		double worst = 0;
		for (int k = 0; k < 6; k++)
			worst = fmax(worst, p.spread[k]);
		fprintf(stderr, PROG ": repeatability: the best repetition beat the median one by at most %.1f%%\n",
			100 * worst);
		if (p.busy_runnable > 0.5 * p.cpus)
			fprintf(stderr, PROG ": warning: %.0f other runnable threads on %u CPUs when the measurement began: "
					"the roofs may read low; measure on a quiet machine\n",
				p.busy_runnable, p.cpus);
		if (worst > ANA_PEAKS_SPREAD_WARN)
			fprintf(stderr, PROG ": warning: repetitions spread over %.0f%%: the machine was not quiet; the best "
					"is kept, but rerun when it is\n",
				100 * worst);
	}
	if (gpu_dev >= 0) {
		fprintf(stderr, PROG ": measuring CUDA device %d: FMA throughput, memory and copy bandwidth...\n", gpu_dev);
		rc = ana_peaks_measure_gpu(&p, gpu_dev, seconds, err, sizeof(err));
		if (rc)
			return peaks_failed("peaks --gpu", err, fd, created ? json : NULL);
		fprintf(stderr, PROG ": %s: FP64 %.4g GFLOP/s, FP32 %.4g GFLOP/s, memory %.4g GB/s; H2D %.3g GB/s pinned, "
				"%.3g pageable; D2H %.3g pinned, %.3g pageable\n",
			p.gpu_name, p.gpu_gflops64, p.gpu_gflops32, p.gpu_mem_gbps, p.gpu_h2d_pinned_gbps,
			p.gpu_h2d_pageable_gbps, p.gpu_d2h_pinned_gbps, p.gpu_d2h_pageable_gbps);
	}
	struct stat st;
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ftruncate(fd, 0)) {
		fprintf(stderr, PROG ": %s: cannot write the machine profile: %s\n", json, strerror(errno));
		close(fd);
		return 1;
	}
	FILE *f = fd >= 0 ? fdopen(fd, "w") : stdout;
	int bad = !f || ana_peaks_write_json(f, &p) != 0;
	if (f && f != stdout)
		bad |= fclose(f) != 0;
	else if (!f)
		close(fd);
	if (bad) {
		fprintf(stderr, PROG ": %s: cannot write the machine profile: %s\n", json ? json : "stdout",
			strerror(errno ? errno : EIO));
		return 1;
	}
	return stdout_ok();
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ "report", no_argument, NULL, OPT_REPORT },
		{ "flat", no_argument, NULL, OPT_FLAT },
		{ "sort", required_argument, NULL, OPT_SORT },
		{ "top", required_argument, NULL, OPT_TOP },
		{ "depth", required_argument, NULL, OPT_DEPTH },
		{ "min-pct", required_argument, NULL, OPT_MINPCT },
		{ "thread", required_argument, NULL, OPT_THREAD },
		{ "domain", required_argument, NULL, OPT_DOMAIN },
		{ "bottlenecks", required_argument, NULL, OPT_BOTTLENECKS },
		{ "since", required_argument, NULL, OPT_SINCE },
		{ "until", required_argument, NULL, OPT_UNTIL },
		{ "csv", required_argument, NULL, OPT_CSV },
		{ "json", required_argument, NULL, OPT_JSON },
		{ "no-progress", no_argument, NULL, OPT_NOPROGRESS },
		{ "no-thread-rows", no_argument, NULL, OPT_NOTHREADROWS },
		{ "perfetto", required_argument, NULL, OPT_PERFETTO },
		{ "chrome", required_argument, NULL, OPT_CHROME },
		{ "folded", required_argument, NULL, OPT_FOLDED },
		{ "noise", required_argument, NULL, OPT_NOISE },
		{ "gate-threshold", required_argument, NULL, OPT_GATE },
		{ "alpha", required_argument, NULL, OPT_ALPHA },
		{ "bootstrap", required_argument, NULL, OPT_BOOTSTRAP },
		{ "fail-on-regression", no_argument, NULL, OPT_FAILREG },
		{ "base", required_argument, NULL, OPT_BASE },
		{ "new", required_argument, NULL, OPT_NEW },
		{ "peaks", required_argument, NULL, OPT_PEAKS },
		{ "min-priority", required_argument, NULL, OPT_MINPRIO },
		{ "fp32", no_argument, NULL, OPT_FP32 },
		{ "threshold", required_argument, NULL, OPT_THRESHOLD },
		{ "seconds", required_argument, NULL, OPT_SECONDS },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "iterations", required_argument, NULL, OPT_ITERATIONS },
		{ "once", no_argument, NULL, OPT_ONCE },
		{ "gpu", optional_argument, NULL, OPT_GPU },
		{ "max-records", required_argument, NULL, OPT_MAXRECORDS },
		{ "max-memory", required_argument, NULL, OPT_MAXMEMORY },
		{ "jobs", required_argument, NULL, 'j' },
		{ "html", required_argument, NULL, OPT_HTML },
		{ "folded-diff", required_argument, NULL, OPT_FOLDED_DIFF },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t max_records = 0, max_memory = 0;
	struct ana_options ao = { .thread = -1 };
	struct ana_report_opts ro = { .sort = ANA_SORT_TIME, .thread = -1 };
	const char *csv = NULL, *json = NULL, *html = NULL, *folded_diff = NULL;
	const char *outs[EXP_N] = { NULL, NULL, NULL };
	int show_progress = isatty(2), c, report_flag = 0, nexports = 0, until_set = 0;
	struct ana_cmp_opts co = { .noise = -1 };
	int fail_on_regression = 0, cmp_only = 0, report_only = 0; /* options of one command only seen */
	const char *base_runs[CMP_MAX_RUNS], *new_runs[CMP_MAX_RUNS];
	size_t nbase_runs = 0, nnew_runs = 0;
	struct ana_sug_opts so = { 0 };
	struct ana_peaks peaks;
	const char *peaks_path = NULL;
	int sug_only = 0, seconds_set = 0, gpu_dev = -1, top_only = 0;
	struct cli_top_opts topo = { .interval_s = 1.0 };
	double seconds = 0.5;
	opterr = 0;
	{
		const long cpus = sysconf(_SC_NPROCESSORS_ONLN); /* -j's default */
		g_jobs = cpus > 1 ? (unsigned)(cpus < 64 ? cpus : 64) : 1;
	}
	while ((c = getopt_long(argc, argv, "hj:", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return 0;
		case OPT_VERSION:
			printf(PROG " " PT_VERSION_STRING " (reads .ptz format %d.x)\n", PT_FMT_VERSION_MAJOR);
			return 0;
		case OPT_REPORT:
			report_flag = 1;
			break;
		case OPT_FLAT:
			report_only = 1;
			ro.flat = true;
			break;
		case OPT_SORT: {
			report_only = 1;
			static const char *keys[] = { "time", "self", "flops", "count", "name" };
			int k = -1;
			for (int i = 0; i < 5; i++)
				if (strcmp(optarg, keys[i]) == 0)
					k = i;
			if (k < 0)
				return usage_error("--sort: unknown key '%s'", optarg);
			ro.sort = (enum ana_sort)k;
			break;
		}
		case OPT_TOP:
			if (parse_int(optarg, 1, 1 << 30, &ro.top))
				return usage_error("--top: expected a positive integer, got '%s'", optarg);
			break;
		case OPT_DEPTH:
			report_only = 1;
			if (parse_int(optarg, 1, 1 << 20, &ro.depth))
				return usage_error("--depth: expected a positive integer, got '%s'", optarg);
			break;
		case OPT_MINPCT: {
			report_only = 1;
			char *end;
			ro.min_pct = strtod(optarg, &end);
			if (*end || end == optarg || !(ro.min_pct >= 0 && ro.min_pct <= 100))
				return usage_error("--min-pct: expected a percentage 0..100, got '%s'", optarg);
			break;
		}
		case OPT_THREAD:
			if (parse_int(optarg, 0, 1 << 30, &ro.thread))
				return usage_error("--thread: expected a thread index, got '%s'", optarg);
			ao.thread = ro.thread;
			break;
		case OPT_DOMAIN:
			ao.domain = optarg;
			break;
		case OPT_BOTTLENECKS:
			report_only = 1;
			if (parse_int(optarg, 1, 1 << 20, &ro.bottlenecks))
				return usage_error("--bottlenecks: expected a positive integer, got '%s'", optarg);
			break;
		case OPT_SINCE:
			if (parse_seconds(optarg, &ao.since_ns))
				return usage_error("--since: expected seconds, got '%s'", optarg);
			break;
		case OPT_UNTIL:
			if (parse_seconds(optarg, &ao.until_ns))
				return usage_error("--until: expected seconds, got '%s'", optarg);
			until_set = 1;
			break;
		case OPT_CSV:
			report_only = 1;
			csv = optarg;
			break;
		case OPT_JSON:
			json = optarg;
			break;
		case OPT_HTML:
			html = optarg;
			break;
		case OPT_FOLDED_DIFF:
			folded_diff = optarg;
			cmp_only = 1;
			break;
		case OPT_NOPROGRESS:
			show_progress = 0;
			break;
		case OPT_NOTHREADROWS:
			ro.no_thread_rows = true;
			break;
		case OPT_NOISE: {
			char *end;
			co.noise = strtod(optarg, &end) / 100.0;
			if (*end || end == optarg || !(co.noise >= 0 && co.noise <= 10))
				return usage_error("--noise: expected a percentage 0..1000, got '%s'", optarg);
			cmp_only = 1;
			break;
		}
		case OPT_GATE: {
			char *end;
			co.gate_threshold = strtod(optarg, &end) / 100.0;
			if (*end || end == optarg || !(co.gate_threshold > 0 && co.gate_threshold <= 10))
				return usage_error("--gate-threshold: expected a percentage above 0, up to 1000, got '%s'",
						   optarg);
			cmp_only = 1;
			break;
		}
		case OPT_ALPHA: {
			char *end;
			co.alpha = strtod(optarg, &end);
			if (*end || end == optarg || !(co.alpha > 0 && co.alpha < 1))
				return usage_error("--alpha: expected a number between 0 and 1, got '%s'", optarg);
			cmp_only = 1;
			break;
		}
		case OPT_BOOTSTRAP: {
			int b;
			if (parse_int(optarg, 100, 1000000, &b))
				return usage_error("--bootstrap: expected an integer 100..1000000, got '%s'", optarg);
			co.bootstrap = (uint32_t)b;
			cmp_only = 1;
			break;
		}
		case OPT_FAILREG:
			fail_on_regression = 1;
			cmp_only = 1;
			break;
		case OPT_BASE:
		case OPT_NEW: {
			const char **side = c == OPT_BASE ? base_runs : new_runs;
			size_t *n = c == OPT_BASE ? &nbase_runs : &nnew_runs;
			if (*n == CMP_MAX_RUNS)
				return usage_error("%s", "at most 64 runs a side (--base, --new)");
			side[(*n)++] = optarg;
			cmp_only = 1;
			break;
		}
		case OPT_PEAKS:
			peaks_path = optarg;
			sug_only = 1;
			break;
		case OPT_FP32:
			so.fp32 = true;
			sug_only = 1;
			break;
		case OPT_MINPRIO: {
			int p = ANA_P_LOW;
			while (p <= ANA_P_CRITICAL && strcmp(optarg, ana_priority_key((enum ana_priority)p)) != 0)
				p++;
			if (p > ANA_P_CRITICAL)
				return usage_error("--min-priority: expected low, medium, high or critical, got '%s'", optarg);
			so.min_priority = (enum ana_priority)p;
			sug_only = 1;
			break;
		}
		case OPT_THRESHOLD: {
			const char *eq = strchr(optarg, '=');
			char key[64], *end;
			if (!eq || (size_t)(eq - optarg) >= sizeof(key))
				return usage_error("--threshold: expected KEY=VALUE, got '%s'", optarg);
			memcpy(key, optarg, (size_t)(eq - optarg));
			key[eq - optarg] = 0;
			double v = strtod(eq + 1, &end);
			int trc = *end || end == eq + 1 ? -ERANGE : ana_sug_threshold_set(&so, key, v);
			if (trc == -ENOENT)
				return usage_error("--threshold: unknown key in '%s' (see --help)", optarg);
			if (trc)
				return usage_error("--threshold: value out of range in '%s'", optarg);
			sug_only = 1;
			break;
		}
		case OPT_MAXRECORDS:
			if (parse_u64(optarg, 0, &max_records))
				return usage_error("--max-records: expected a positive count, got '%s'", optarg);
			break;
		case 'j': {
			char *end;
			long j = strtol(optarg, &end, 10);
			if (*end || end == optarg || j < 1 || j > 64)
				return usage_error("-j: expected 1..64 analyses at once, got '%s'", optarg);
			g_jobs = (unsigned)j;
			break;
		}
		case OPT_MAXMEMORY:
			if (parse_u64(optarg, 1, &max_memory))
				return usage_error("--max-memory: expected a positive size in bytes (K, M, G), got '%s'", optarg);
			break;
		case OPT_GPU: {
			char *end;
			long d = optarg ? strtol(optarg, &end, 10) : 0;
			if (optarg && (*end || end == optarg || d < 0 || d > 1023))
				return usage_error("--gpu: expected a CUDA device number 0..1023, got '%s'", optarg);
			gpu_dev = (int)d;
			break;
		}
		case OPT_INTERVAL: {
			char *end;
			topo.interval_s = strtod(optarg, &end);
			if (*end || end == optarg || !(topo.interval_s >= 0.01 && topo.interval_s <= 3600))
				return usage_error("--interval: expected seconds, 0.01..3600, got '%s'", optarg);
			top_only = 1;
			break;
		}
		case OPT_ITERATIONS: {
			int it;
			if (parse_int(optarg, 1, 1000000000, &it))
				return usage_error("--iterations: expected 1 or more, got '%s'", optarg);
			topo.iterations = (unsigned)it;
			top_only = 1;
			break;
		}
		case OPT_ONCE:
			topo.iterations = 1;
			top_only = 1;
			break;
		case OPT_SECONDS: {
			char *end;
			seconds = strtod(optarg, &end);
			if (*end || end == optarg || !(seconds >= 0.001 && seconds <= 60))
				return usage_error("--seconds: expected 0.001..60, got '%s'", optarg);
			seconds_set = 1;
			break;
		}
		case OPT_PERFETTO:
		case OPT_CHROME:
		case OPT_FOLDED:
			nexports += !outs[c - OPT_PERFETTO];
			outs[c - OPT_PERFETTO] = optarg;
			break;
		default:
			return usage_error("unknown or incomplete option '%s'", argv[optind - 1]);
		}
	}
	const char *cmd = "report", *path = NULL;
	ao.jobs = g_jobs; /* one trace's threads read at once too (doc/analyzer-output.md §1) */
	int rest = argc - optind;
	int known = 0;
	for (size_t k = 0; rest >= 1 && k < NCOMMANDS; k++)
		known |= strcmp(argv[optind], commands[k]) == 0;
	if (known) {
		report_flag |= strcmp(argv[optind], "report") == 0;
		cmd = argv[optind++];
		rest--;
	} else if (rest >= 1 && unknown_command(argv[optind], rest > 1)) {
		return 2;
	}
	if (seconds_set && strcmp(cmd, "peaks"))
		return usage_error("%s", "--seconds belongs to peaks");
	if (top_only && strcmp(cmd, "top"))
		return usage_error("%s", "--interval, --iterations and --once belong to top");
	if (strcmp(cmd, "top") == 0) {
		if (rest != 1)
			return usage_error("%s", rest ? "top: expected one trace file" : "no trace file given");
		if (report_only || report_flag || nexports || cmp_only || sug_only || csv || json || html || ao.domain ||
		    ao.thread >= 0 || ao.since_ns || until_set || max_records)
			return usage_error("%s", "top takes only --top N, --interval S, --iterations K and --once");
		topo.top = ro.top;
		return cli_top(argv[optind], &topo);
	}
	if (gpu_dev >= 0 && strcmp(cmd, "peaks"))
		return usage_error("%s", "--gpu belongs to peaks");
	/* a set's directories and quoted patterns stand for their files */
	if (rest >= 1 && (!strcmp(cmd, "report") || !strcmp(cmd, "export") || !strcmp(cmd, "merge"))) {
		if (expand_sets(&argv, optind, &rest, strcmp(cmd, "merge") ? ".ptz" : ".json"))
			return 1;
		argc = optind + rest;
	}
	/* the parts of a rotated trace, given as files, are one trace */
	if (rest > 1) {
		if (group_parts(argv + optind, &rest))
			return 1;
		argc = optind + rest;
	}
	if (max_memory) { /* every allocation past it fails: the analyzer then says "out of memory" (exit 1) */
		const struct rlimit rl = { .rlim_cur = max_memory, .rlim_max = max_memory };
		if (setrlimit(RLIMIT_DATA, &rl)) {
			fprintf(stderr, PROG ": --max-memory: %s\n", strerror(errno));
			return 1;
		}
	}
	if (max_records && strcmp(cmd, "peaks"))
		for (int k = optind; k < argc; k++)
			if (guard_records(argv[k], max_records))
				return 1;
	if (strcmp(cmd, "peaks") == 0) {
		if (rest != 0)
			return usage_error("%s", "peaks: takes no trace file (it measures this machine)");
		if (report_only || report_flag || nexports || cmp_only || sug_only || csv || html || ao.domain ||
		    ao.thread >= 0 || ao.since_ns || until_set || ro.top)
			return usage_error("%s", "peaks takes only --json FILE, --seconds S and --gpu[=N]");
		return run_peaks(json, seconds, gpu_dev);
	}
	if (strcmp(cmd, "suggest") == 0) {
		if (rest != 1)
			return usage_error("%s", rest ? "suggest: expected one trace file" : "no trace file given");
		if (until_set && ao.until_ns <= ao.since_ns)
			return usage_error("%s", "--until must be later than --since");
		if (report_only || report_flag || nexports || cmp_only || ao.thread >= 0)
			return usage_error("%s", "suggest takes no report, export, compare or --thread option");
		if (html)
			return usage_error("%s", "suggest has no --html: the report's page holds the suggestions "
						 "(" PROG " TRACE.ptz --report --html FILE)");
		if (json && same_file(argv[optind], json))
			return usage_error("output file '%s' is the trace itself", json);
		if (json && peaks_path && strcmp(json, "-") && (!strcmp(json, peaks_path) || same_file(peaks_path, json)))
			return usage_error("output file '%s' is the --peaks file", json);
		if (peaks_path) {
			char err[512];
			if (ana_peaks_load(peaks_path, &peaks, err, sizeof(err))) {
				fprintf(stderr, PROG ": %s\n", err);
				return 1;
			}
			so.peaks = &peaks;
		}
		return run_suggest(argv[optind], &ao, &so, ro.top, json, show_progress);
	}
	if (sug_only && (!html || strcmp(cmd, "report")))
		return usage_error("%s", "--peaks, --fp32, --min-priority and --threshold belong to suggest (and to the "
					 "report's --html)");
	if (strcmp(cmd, "compare") == 0) {
		if (nbase_runs || nnew_runs) {
			if (rest != 0 || !nbase_runs || !nnew_runs)
				return usage_error("%s", "compare: --base and --new name every trace (at least one each), "
							 "or give two trace files, BASE.ptz NEW.ptz");
			if ((nbase_runs >= 2) != (nnew_runs >= 2))
				return usage_error("%s", "compare: runs as the unit need at least 2 runs a side (--base "
							 "twice or more, and --new twice or more), or one each");
		} else if (rest != 2) {
			return usage_error("%s", "compare: expected two trace files, BASE.ptz NEW.ptz");
		} else {
			base_runs[nbase_runs++] = argv[optind];
			new_runs[nnew_runs++] = argv[optind + 1];
		}
		if (until_set && ao.until_ns <= ao.since_ns)
			return usage_error("%s", "--until must be later than --since");
		if (report_only || report_flag || nexports)
			return usage_error("%s", "compare takes no report or export option (--flat, --sort, --depth, "
						 "--min-pct, --bottlenecks, --csv, --report, exports)");
		const char *couts[3] = { as_stdout(json), as_stdout(html), as_stdout(folded_diff) };
		for (int k = 0; k < 3; k++) {
			for (size_t t = 0; couts[k] && t < nbase_runs + nnew_runs; t++)
				if (same_file(t < nbase_runs ? base_runs[t] : new_runs[t - nbase_runs], couts[k]))
					return usage_error("output file '%s' is a trace itself", couts[k]);
			for (int j = k + 1; couts[k] && j < 3; j++)
				if (couts[j] && (strcmp(couts[k], couts[j]) == 0 || same_file(couts[k], couts[j])))
					return usage_error(strcmp(couts[k], "-") ? "two outputs name the file '%s'"
										: "only one output may go to stdout ('%s')",
							   couts[k]);
		}
		const char *const cmp_outs[3] = { json, html, folded_diff };
		return run_compare(base_runs, nbase_runs, new_runs, nnew_runs, &ao, &co, ro.top, cmp_outs,
				   fail_on_regression, show_progress);
	}
	if (cmp_only)
		return usage_error("%s", "--noise, --gate-threshold, --alpha, --bootstrap, --fail-on-regression, --folded-diff, "
					 "--base and --new belong to compare");
	if (strcmp(cmd, "merge") == 0) { /* reports of many traces: one view (analyzer/ana_multi.h) */
		if (report_only || nexports || csv || html || sug_only || ao.thread >= 0 || ao.domain || ao.since_ns ||
		    until_set)
			return usage_error("%s", "merge takes --json FILE and --top N (each report was filtered when "
						 "it was written)");
		if (!rest)
			return usage_error("%s", "merge: give the JSON reports (ptanalyze TRACE --json FILE)");
		json = as_stdout(json);
		for (int t = 0; json && strcmp(json, "-") && t < rest; t++)
			if (same_file(argv[optind + t], json))
				return usage_error("output file '%s' is a report to merge", json);
		return run_merge((const char *const *)argv + optind, (size_t)rest, json, ro.top);
	}
	if (rest >= 2 && strcmp(cmd, "report") == 0) { /* many traces: one view (analyzer/ana_multi.h) */
		if (report_only || nexports || csv || html || sug_only)
			return usage_error("%s", "a report of several traces takes --json FILE, --top N and the filters "
						 "(--thread, --domain, --since, --until); give one trace for the rest");
		if (until_set && ao.until_ns <= ao.since_ns)
			return usage_error("%s", "--until must be later than --since");
		json = as_stdout(json);
		for (int t = 0; json && strcmp(json, "-") && t < rest; t++)
			if (same_file(argv[optind + t], json))
				return usage_error("output file '%s' is a trace itself", json);
		return run_multi((const char *const *)argv + optind, (size_t)rest, &ao, json, ro.top, show_progress);
	}
	if (rest >= 2 && strcmp(cmd, "export") == 0) { /* many traces: one process each */
		if (outs[EXP_FOLDED] || report_flag || csv || json || html || ao.thread >= 0 || ao.domain)
			return usage_error("%s", "an export of several traces takes --perfetto and --chrome (and --since, "
						 "--until); give one trace for --folded, --thread and --domain");
		if (!nexports)
			return usage_error("%s", "export: give at least one of --perfetto, --chrome FILE");
		if (until_set && ao.until_ns <= ao.since_ns)
			return usage_error("%s", "--until must be later than --since");
		int stdouts = 0;
		for (int k = 0; k < EXP_N; k++) {
			outs[k] = as_stdout(outs[k]);
			stdouts += outs[k] && strcmp(outs[k], "-") == 0;
			for (int t = 0; outs[k] && strcmp(outs[k], "-") && t < rest; t++)
				if (same_file(argv[optind + t], outs[k]))
					return usage_error("output file '%s' is a trace itself", outs[k]);
		}
		if (stdouts > 1)
			return usage_error("%s", "only one export may go to stdout ('-')");
		if (outs[EXP_PERFETTO] && outs[EXP_CHROME] && strcmp(outs[EXP_PERFETTO], "-") &&
		    (strcmp(outs[EXP_PERFETTO], outs[EXP_CHROME]) == 0 || same_file(outs[EXP_PERFETTO], outs[EXP_CHROME])))
			return usage_error("two outputs name the file '%s'", outs[EXP_PERFETTO]);
		return run_export_set((const char *const *)argv + optind, (size_t)rest, outs, &ao);
	}
	if (rest != 1)
		return usage_error("%s", rest ? "expected exactly one trace file (or 'report' or 'export' of several)"
					      : "no trace file given");
	path = argv[optind];
	/* until_ns 0 means "no limit" to the analyzer: an explicit --until 0 is an empty window */
	if (until_set && ao.until_ns <= ao.since_ns)
		return usage_error("%s", "--until must be later than --since");
	if (strcmp(cmd, "export") == 0 && !nexports)
		return usage_error("%s", "export: give at least one of --perfetto, --chrome, --folded FILE");
	csv = as_stdout(csv);
	json = as_stdout(json);
	html = as_stdout(html);
	for (int k = 0; k < EXP_N; k++)
		outs[k] = as_stdout(outs[k]);
	if (strcmp(cmd, "info") == 0 && (report_only || report_flag || csv || json || html || ro.top))
		return usage_error("%s", "info takes no report option (--report, --csv, --json, --html, --flat, --sort, "
					 "--top, --depth, --min-pct, --bottlenecks)");
	if ((csv && !strcmp(csv, "-")) + (json && !strcmp(json, "-")) + (html && !strcmp(html, "-")) > 1)
		return usage_error("%s", "only one of --csv, --json and --html may go to stdout ('-')");
	const char *const outputs[] = { csv, json, html, outs[0], outs[1], outs[2] };
	const size_t noutputs = sizeof(outputs) / sizeof(outputs[0]);
	for (size_t k = 0; k < noutputs; k++) {
		if (!outputs[k])
			continue;
		if (same_file(path, outputs[k]))
			return usage_error("output file '%s' is the trace itself", outputs[k]);
		for (size_t j = k + 1; j < noutputs && strcmp(outputs[k], "-"); j++) /* one would overwrite the other */
			if (outputs[j] && (strcmp(outputs[k], outputs[j]) == 0 || same_file(outputs[k], outputs[j])))
				return usage_error("two outputs name the file '%s'", outputs[k]);
	}
	if (nexports) {
		int stdouts = 0;
		for (int k = 0; k < EXP_N; k++)
			stdouts += outs[k] && strcmp(outs[k], "-") == 0;
		if (strcmp(cmd, "info") == 0)
			return usage_error("%s", "info takes no export option");
		if (report_flag || csv || json || html)
			return usage_error("%s", "export options do not combine with the report (report, --report, --csv, "
						 "--json, --html)");
		if (stdouts > 1)
			return usage_error("%s", "only one export may go to stdout ('-')");
		if (!outs[EXP_FOLDED] && (ao.thread >= 0 || ao.domain))
			return usage_error("%s", "--thread and --domain apply to --folded only");
		return run_export(path, outs, &ao);
	}
	if (show_progress) {
		FILE *f = fopen(path, "rb");
		if (f) {
			fseek(f, 0, SEEK_END);
			if (ftell(f) > (64l << 20))
				ao.progress = progress;
			fclose(f);
		}
	}

	if (html && peaks_path) {
		if (!strcmp(html, peaks_path) || same_file(peaks_path, html))
			return usage_error("output file '%s' is the --peaks file", html);
		char perr[512];
		if (ana_peaks_load(peaks_path, &peaks, perr, sizeof(perr))) {
			fprintf(stderr, PROG ": %s\n", perr);
			return 1;
		}
	}
	struct ana_result res;
	char err[512];
	/* per-thread percentiles only where an output prints per-thread rows */
	if (ro.no_thread_rows && (!json || csv || ro.thread >= 0))
		return usage_error("%s", "--no-thread-rows goes with --json FILE alone (not --csv, not --thread)");
	ao.merged_percentiles_only = (!csv && !json && ro.thread < 0) || ro.no_thread_rows; /* the page has merged rows only */
	ao.no_flat_percentiles = !ro.flat && !html; /* the call tree prints no flat row's percentiles; the page does */
	ao.no_samples = !html; /* the samples serve compare and suggest (the page runs it), never a report */
	int rc = ana_run(path, &ao, &res, err, sizeof(err));
	if (rc) {
		fprintf(stderr, PROG ": %s: %s\n", path, err);
		if (res.rd)
			ana_result_free(&res);
		return 1;
	}
	const struct pt_trace_info *in = pt_reader_info(res.rd);
	int code = res.corrupt ? 1 : 0;
	size_t ti = 0; /* --thread N names a thread of the trace, or nothing is printed */
	while (ro.thread >= 0 && ti < res.nthreads && res.threads[ti].index != (uint32_t)ro.thread)
		ti++;
	if (ro.thread >= 0 && ti == res.nthreads) {
		fprintf(stderr, PROG ": %s: no thread with index %d (see 'info')\n", path, ro.thread);
		code = 1;
	} else if (strcmp(cmd, "info") && ana_window_outside(res.rd, &ao, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s: %s\n", path, err);
		code = 1;
	} else if (strcmp(cmd, "info") == 0) {
		ana_info_text(stdout, &res);
	} else {
		if (csv) {
			FILE *f = open_out(csv);
			if (close_out(f, csv, "CSV", !f || ana_write_csv(f, &res, &ro))) {
				ana_result_free(&res);
				return 1;
			}
		}
		if (json) {
			FILE *f = open_out(json);
			if (close_out(f, json, "JSON", !f || ana_write_json(f, &res, &ro))) {
				ana_result_free(&res);
				return 1;
			}
		}
		if (html && write_html_report(html, path, &res, &so, peaks_path ? &peaks : NULL)) {
			ana_result_free(&res);
			return 1;
		}
		if ((!csv || strcmp(csv, "-")) && (!json || strcmp(json, "-")) && (!html || strcmp(html, "-")))
			ana_report_text(stdout, &res, &ro);
	}
	/* problems go to stderr with offsets: they never hide in the report */
	for (size_t i = 0; i < pt_reader_problem_count(res.rd); i++) {
		uint64_t off;
		const char *m = pt_reader_problem(res.rd, i, &off);
		fprintf(stderr, PROG ": %s: %s: %s\n", path, res.corrupt ? "error" : "warning", m);
	}
	if (!in->closed && !res.corrupt)
		warn_unclosed(path, in);
	ana_result_free(&res);
	return stdout_ok() || code;
}
