/*
 * recorder/rec_open.c - the recorder's lifecycle: pt_open() (its options
 * and PTZ_* environment, the path template's %p and %h, the job identity
 * in the header), pt_close(), pt_default() (PTZ_TRACE), pt_path() and
 * pt_set_enabled(); the process-wide state they share (rec_the_recorder,
 * rec_open_lock) and the one-time setup (rec_global_init()).
 *
 * One recorder per process: pt_open() fills rec_the_recorder under
 * rec_open_lock, starts the flusher, then publishes the new generation
 * with a release store of gen (threads attach to it with an acquire load,
 * rec_ring_for()); pt_close() stores gen 0, has the flusher drain every
 * ring a last time and joins it, then hands the rings back (rec_registry.c
 * header). Environment mistakes are said once on stderr and the default
 * is used: the program goes on.
 *
 * Memory order tags: [X1'] owner_state (pairs with [X2], rec_registry.c).
 */
#include <dlfcn.h> /* dladdr, dlopen: rec_pin_self() */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h> /* getrandom: a rotated run's id */
#include <time.h>
#include <unistd.h>
#include <zstd.h> /* ZSTD_minCLevel, ZSTD_maxCLevel */

#include "common/struct_copy.h" /* copy_struct_in */
#include "recorder/rec_internal.h"

struct pt_recorder rec_the_recorder = {
	.reg_lock = PTHREAD_MUTEX_INITIALIZER,
	.stop_lock = PTHREAD_MUTEX_INITIALIZER,
	.names_lock = PTHREAD_MUTEX_INITIALIZER,
	.snap_lock = PTHREAD_MUTEX_INITIALIZER,
	.path_lock = PTHREAD_MUTEX_INITIALIZER,
};
pthread_mutex_t rec_open_lock = PTHREAD_MUTEX_INITIALIZER;
bool rec_is_open;
static uint64_t gen_counter;
static pthread_once_t global_once = PTHREAD_ONCE_INIT;

/*
 * Keeps the object that holds this code loaded until the process ends:
 * libptz.so (linked -z nodelete already) or, with libptz.a, the plugin or
 * program it was linked into. Called before libptz first starts a thread
 * or registers a handler that outlives the call (the flusher, liburcu's
 * resize worker, the ring key's thread-exit destructor, atexit): a
 * dlclose() of that object would leave them in unmapped code. dlopen()
 * with RTLD_NOLOAD never loads anything; the main program, which no
 * dlclose() unloads, is not found by its name, which is harmless.
 */
void rec_pin_self(void)
{
	Dl_info di;
	if (dladdr((void *)(uintptr_t)rec_pin_self, &di) && di.dli_fname && di.dli_fname[0] &&
	    !dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE))
		(void)dlerror();
}

void rec_stop_cond_init(struct pt_recorder *r)
{
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->stop_cond, &ca);
	pthread_cond_init(&r->flush_cond, &ca);
	pthread_condattr_destroy(&ca);
}

static void global_init(void)
{
	rec_pin_self();
	rec_stop_cond_init(&rec_the_recorder);
	rec_registry_init(&rec_the_recorder);
	rec_fork_init();
	rec_clock_init();
}

void rec_global_init(void)
{
	pthread_once(&global_once, global_init);
}

static void env_bad(const char *name, const char *e, const char *what)
{
	/* the program goes on, with the default; the mistake is not silent */
	fprintf(stderr, "ptz: ignoring %s=\"%s\": not %s; using the default\n", name, e, what);
}

/* A size in bytes: decimal or 0x hex, optional k/m/g suffix (KiB, MiB, GiB).
 * Unset, empty or 0 gives @dflt (as a zero struct pt_options field does);
 * anything invalid (sign, junk, overflow) gives @dflt with a warning. */
static size_t env_size(const char *name, size_t dflt)
{
	const char *e = getenv(name);
	if (!e || !*e)
		return dflt;
	const char *p = e;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p < '0' || *p > '9') { /* strtoull would take "-1" as 2^64 - 1 */
		env_bad(name, e, "a positive size");
		return dflt;
	}
	char *end;
	errno = 0;
	unsigned long long v = strtoull(p, &end, 0);
	unsigned shift = 0;
	if (*end == 'k' || *end == 'K')
		shift = 10, end++;
	else if (*end == 'm' || *end == 'M')
		shift = 20, end++;
	else if (*end == 'g' || *end == 'G')
		shift = 30, end++;
	if (errno || *end || v > (SIZE_MAX >> shift)) {
		env_bad(name, e, "a positive size");
		return dflt;
	}
	return v ? (size_t)(v << shift) : dflt;
}

/* An int in [@lo, @hi]; unset, empty or 0 gives @dflt, invalid @dflt with a warning. */
static int env_int(const char *name, int dflt, long lo, long hi)
{
	const char *e = getenv(name);
	if (!e || !*e)
		return dflt;
	char *end;
	errno = 0;
	long v = strtol(e, &end, 10);
	if (errno || end == e || *end || v < lo || v > hi) {
		env_bad(name, e, "a number in range");
		return dflt;
	}
	return v ? (int)v : dflt;
}

/* PTZ_PROC_MS, or its older name PTZ_RSS_MS when it is unset: as env_int(),
 * except that 0 means "no process counters" (env_int() takes 0 for the
 * default); clamped to an hour. */
static unsigned env_proc_ms(void)
{
	const char *name = "PTZ_PROC_MS";
	const char *e = getenv(name);
	if (!e || !*e) {
		name = "PTZ_RSS_MS";
		e = getenv(name);
	}
	if (!e || !*e)
		return 100;
	char *end;
	errno = 0;
	long v = strtol(e, &end, 10);
	if (errno || end == e || *end || v < 0) {
		env_bad(name, e, "a number in range");
		return 100;
	}
	return v > 3600000 ? 3600000u : (unsigned)v;
}

/*
 * A zstd level in [ZSTD_minCLevel(), REC_MAX_LEVEL]; one outside is clamped
 * with a note on stderr naming @from (the program goes on, the mistake is
 * not silent). Above 19, zstd's "ultra" levels use windows of up to 128 MiB
 * and compress at a few hundred KB/s: no recorder keeps up with that.
 */
static int clamp_level(int v, const char *from)
{
	int c = v > REC_MAX_LEVEL ? REC_MAX_LEVEL : v < ZSTD_minCLevel() ? ZSTD_minCLevel() : v;
	if (c != v)
		fprintf(stderr, "ptz: zstd level %d (%s) is outside %d..%d; using %d\n", v, from, ZSTD_minCLevel(),
			REC_MAX_LEVEL, c);
	return c;
}

static size_t pow2_ring(size_t bytes)
{
	if (bytes < REC_MIN_RING)
		bytes = REC_MIN_RING;
	if (bytes > REC_MAX_RING)
		bytes = REC_MAX_RING;
	size_t p = REC_MIN_RING;
	while (p < bytes)
		p <<= 1;
	return p;
}

static void read_cmdline(char *buf, size_t cap)
{
	buf[0] = 0;
	FILE *f = fopen("/proc/self/cmdline", "re");
	if (!f)
		return;
	size_t n = fread(buf, 1, cap - 1, f);
	fclose(f);
	for (size_t i = 0; i + 1 < n; i++)
		if (buf[i] == 0)
			buf[i] = ' ';
	buf[n] = 0;
}

static void read_comm(char *buf, size_t cap)
{
	buf[0] = 0;
	FILE *f = fopen("/proc/self/comm", "re");
	if (!f)
		return;
	if (fgets(buf, (int)cap, f))
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

/*
 * The host name as one file-name component for %h, into @out[@cap]: every
 * byte other than an ASCII letter, digit, '.', '-' or '_' becomes '_' (a
 * '/' would leave the trace directory, control bytes end up in file names
 * and terminals); a name that is empty, "." or ".." (which would name a
 * directory) becomes "host", "_" or "__". gethostname() failing gives "host".
 */
static void host_component(char *out, size_t cap)
{
	if (gethostname(out, cap) != 0)
		out[0] = 0;
	out[cap - 1] = 0;
	size_t n = strlen(out);
	for (size_t i = 0; i < n; i++) {
		const unsigned char c = (unsigned char)out[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		      c == '-' || c == '_'))
			out[i] = '_';
	}
	if (n == 0)
		snprintf(out, cap, "host");
	else if (strcmp(out, ".") == 0 || strcmp(out, "..") == 0)
		memset(out, '_', n);
}

/*
 * The batch job and rank of this process, from the first of these set
 * (recorder.h, pt_open()): job SLURM_JOB_ID (with "_" SLURM_ARRAY_TASK_ID
 * when set), PBS_JOBID, LSB_JOBID, FLUX_JOB_ID; rank SLURM_PROCID,
 * OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, RANK (torchrun). Writes the
 * job ("" if none) into @job; returns rank + 1, 0 if none (a value that is
 * not a number below 2^32 - 1 counts as none).
 */
static uint32_t job_identity(char *job, size_t cap)
{
	static const char *const jobs[] = { "SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "FLUX_JOB_ID" };
	static const char *const ranks[] = { "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "RANK" };
	job[0] = 0;
	for (size_t i = 0; i < PT_ARRAY_SIZE(jobs); i++) {
		const char *v = getenv(jobs[i]);
		if (v && *v) {
			const char *task = i == 0 ? getenv("SLURM_ARRAY_TASK_ID") : NULL;
			snprintf(job, cap, "%.100s%s%.20s", v, task && *task ? "_" : "", task && *task ? task : "");
			break;
		}
	}
	for (size_t i = 0; i < PT_ARRAY_SIZE(ranks); i++) {
		const char *v = getenv(ranks[i]);
		if (!v || !*v)
			continue;
		char *end;
		errno = 0;
		unsigned long long n = strtoull(v, &end, 10);
		if (errno || *end || v[0] == '-' || n >= UINT32_MAX)
			return 0;
		return (uint32_t)n + 1;
	}
	return 0;
}

void rec_part_path(const char *base, uint32_t part, char *out, size_t cap)
{
	size_t len = strlen(base);
	const bool ext = len >= 4 && strcmp(base + len - 4, ".ptz") == 0;
	if (ext)
		len -= 4;
	snprintf(out, cap, "%.*s.%06u.ptz", (int)len, base, part);
}

/* A rotated run's id: random, never 0 (0 means "not rotated"). */
static uint64_t new_run_id(void)
{
	uint64_t id = 0;
	if (getrandom(&id, sizeof(id), GRND_NONBLOCK) != (ssize_t)sizeof(id)) {
		/* no entropy yet (early boot): time and pid, mixed */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		id = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^ ((uint64_t)getpid() << 40) ^ rec_mono_ns();
		id ^= id >> 29;
		id *= 0xbf58476d1ce4e5b9ull;
		id ^= id >> 32;
	}
	return id ? id : 1;
}

/* Rotation settings (recorder.h, pt_open() "Rotation") into @r from @o
 * and PTZ_ROTATE_*; @mode the recorder's. 0, or -EINVAL for an explicit
 * rotate_bytes below the minimum. */
static int rotation_settings(struct pt_recorder *r, const struct pt_options *o, int mode)
{
	static const char *const vars[] = { "PTZ_ROTATE_BYTES", "PTZ_ROTATE_SECONDS", "PTZ_ROTATE_KEEP" };
	r->rotate_bytes = r->rotate_ns = 0;
	r->rotate_keep = 0;
	r->run_id = 0;
	if (mode != PT_MODE_STREAM) {
		for (size_t i = 0; i < PT_ARRAY_SIZE(vars); i++) {
			const char *e = getenv(vars[i]);
			if (e && *e) {
				fprintf(stderr, "ptz: ignoring %s=\"%s\": rotation is for stream mode, not flight\n",
					vars[i], e);
				break; /* one line */
			}
		}
		return 0;
	}
	if (o->rotate_bytes && o->rotate_bytes < REC_ROTATE_MIN_BYTES)
		return -EINVAL;
	r->rotate_bytes = o->rotate_bytes;
	if (!r->rotate_bytes) {
		r->rotate_bytes = env_size("PTZ_ROTATE_BYTES", 0);
		if (r->rotate_bytes && r->rotate_bytes < REC_ROTATE_MIN_BYTES) {
			env_bad("PTZ_ROTATE_BYTES", getenv("PTZ_ROTATE_BYTES"), "at least 1M");
			r->rotate_bytes = 0; /* the default: no size limit */
		}
	}
	const unsigned secs = o->rotate_seconds ? o->rotate_seconds
						: (unsigned)env_int("PTZ_ROTATE_SECONDS", 0, 0, INT_MAX);
	r->rotate_ns = (uint64_t)secs * 1000000000u;
	r->rotate_keep = o->rotate_keep ? o->rotate_keep : (unsigned)env_int("PTZ_ROTATE_KEEP", 0, 0, INT_MAX);
	if (r->rotate_bytes || r->rotate_ns)
		r->run_id = new_run_id();
	return 0;
}

/* Expands %p (pid) and %h (host, host_component()) into @out. */
static int expand_path(const char *in, char *out, size_t cap)
{
	size_t o = 0;
	for (const char *p = in; *p; p++) {
		char tmp[256];
		const char *ins = NULL;
		if (p[0] == '%' && p[1] == 'p') {
			snprintf(tmp, sizeof(tmp), "%d", (int)getpid());
			ins = tmp;
		} else if (p[0] == '%' && p[1] == 'h') {
			host_component(tmp, sizeof(tmp));
			ins = tmp;
		}
		if (ins) {
			size_t n = strlen(ins);
			if (o + n >= cap)
				return -ENAMETOOLONG;
			memcpy(out + o, ins, n);
			o += n;
			p++;
		} else {
			if (o + 1 >= cap)
				return -ENAMETOOLONG;
			out[o++] = *p;
		}
	}
	out[o] = 0;
	return 0;
}

/*
 * Opens @path (a template: %p, %h) with @opt into @r, rec_open_lock held and
 * the recorder not open, recording if @enabled (pt_set_enabled()); keeps
 * @path and @opt for a fork child's reopen.
 * Return: 0 or -errno.
 */
int rec_open_locked(struct pt_recorder *r, const char *path, const struct pt_options *opt, bool enabled)
{
	rec_clock_init(); /* PTZ_CLOCK is read at every open */
	/* the name table before fork_records is set below: a fork from now on
	 * copies it whole, never its creation half done (rec_intern.c) */
	if (!rec_intern_init())
		return -ENOMEM;
	char fpath[4096];
	int rc = expand_path(path, fpath, sizeof(fpath));
	if (rc)
		return rc;
	struct pt_options o = opt ? *opt : (struct pt_options){ 0 };
	if (path != r->path_tmpl) { /* kept for a fork child (rec_child_reopen()) */
		char *t = strdup(path);
		if (!t)
			return -ENOMEM;
		free(r->path_tmpl);
		r->path_tmpl = t;
		r->opts = o;
		r->opts.process_name = NULL;
		if (o.process_name) {
			snprintf(r->opts_pname, sizeof(r->opts_pname), "%s", o.process_name);
			r->opts.process_name = r->opts_pname;
		}
	}
	r->ring_bytes = pow2_ring(o.ring_bytes ? o.ring_bytes : env_size("PTZ_RING_BYTES", REC_DEFAULT_RING));
	r->zstd_level = o.zstd_level ? clamp_level(o.zstd_level, "pt_options.zstd_level")
				     : clamp_level(env_int("PTZ_ZSTD_LEVEL", 1, INT_MIN, INT_MAX), "PTZ_ZSTD_LEVEL");
	r->flush_ms = o.flush_interval_ms ? o.flush_interval_ms : (unsigned)env_int("PTZ_FLUSH_MS", 10, 0, INT_MAX);
	if (r->flush_ms > 10000)
		r->flush_ms = 10000;
	r->rss_ms = env_proc_ms();
	/* snapshots (rec_flush.c): pt_trigger()'s window and rate limit, the
	 * signal's and triggers' file names */
	r->trigger_seconds = (unsigned)env_int("PTZ_TRIGGER_SECONDS", 10, 0, 86400);
	r->trigger_min_ms = (unsigned)env_int("PTZ_TRIGGER_MIN_MS", 10000, 0, 86400000);
	int mode = o.mode;
	if (!mode) {
		const char *m = getenv("PTZ_MODE");
		mode = m && strcmp(m, "flight") == 0 ? PT_MODE_FLIGHT : PT_MODE_STREAM;
		if (m && *m && strcmp(m, "flight") != 0 && strcmp(m, "stream") != 0)
			env_bad("PTZ_MODE", m, "\"stream\" or \"flight\"");
	}
	if (mode != PT_MODE_STREAM && mode != PT_MODE_FLIGHT)
		return -EINVAL;
	r->flight_bytes = 0;
	if (mode == PT_MODE_FLIGHT) {
		r->flight_bytes = o.flight_bytes;
		if (o.flight_bytes && o.flight_bytes < FMT_FLIGHT_MIN_BYTES)
			return -EINVAL;
		if (!r->flight_bytes) {
			r->flight_bytes = env_size("PTZ_FLIGHT_BYTES", REC_DEFAULT_FLIGHT);
			if (r->flight_bytes < FMT_FLIGHT_MIN_BYTES) {
				env_bad("PTZ_FLIGHT_BYTES", getenv("PTZ_FLIGHT_BYTES"), "at least 1M");
				r->flight_bytes = REC_DEFAULT_FLIGHT;
			}
		}
	}

	rc = rotation_settings(r, &o, mode);
	if (rc)
		return rc;
	atomic_store_explicit(&r->parts, 1, memory_order_relaxed);
	atomic_store_explicit(&r->rotate_errors, 0, memory_order_relaxed);
	if (r->run_id) { /* the first part: the path names the run (rec_part_path()) */
		snprintf(r->path_base, sizeof(r->path_base), "%s", fpath);
		rec_part_path(r->path_base, 1, fpath, sizeof(fpath));
	}

	char pname[256], host[256], cmd[3072];
	if (o.process_name)
		snprintf(pname, sizeof(pname), "%s", o.process_name);
	else
		read_comm(pname, sizeof(pname));
	if (gethostname(host, sizeof(host)) != 0)
		host[0] = 0;
	host[sizeof(host) - 1] = 0;
	read_cmdline(cmd, sizeof(cmd));
	char job[128];
	uint32_t rank_plus1 = job_identity(job, sizeof(job));
	struct fmt_writer_hdr hd = {
		.clock_source = (uint32_t)rec_clock_source,
		.pid = (uint32_t)getpid(),
		.process_name = pname,
		.host = host,
		.cmdline = cmd,
		.recorder_version = REC_VERSION,
		.flight_bytes = r->flight_bytes,
		.job = job,
		.rank_plus1 = rank_plus1,
		.run_id = r->run_id,
		.part = r->run_id ? 1 : 0,
	};
	uint32_t bracket;
	rec_clock_triple(&hd.start_ticks, &hd.start_mono_ns, &hd.start_real_ns, &bracket);
	rc = fmt_writer_open(fpath, &hd, &r->w);
	/* before the flusher starts: it names snapshots after it */
	pthread_mutex_lock(&r->path_lock);
	snprintf(r->path_now, sizeof(r->path_now), "%s", fpath); /* fits: both 4096 */
	pthread_mutex_unlock(&r->path_lock);
	if (rc == -EEXIST) /* refused, not a failure of the system: say why */
		fprintf(stderr,
			"ptz: not writing a trace into %s: that file belongs to another user or has other links "
			"(remove it or choose another path)\n",
			fpath);
	if (rc)
		return rc;
	/* the flusher's small chunks (a quiet thread, every flush interval)
	 * are stored raw: zstd's per-call cost would dominate an idle process */
	fmt_writer_store_below(r->w, REC_STORE_BELOW);
	atomic_store_explicit(&r->stop, false, memory_order_relaxed);
	atomic_store_explicit(&r->next_thread_index, 0, memory_order_relaxed);
	atomic_store_explicit(&r->threads, 0, memory_order_relaxed);
	atomic_store_explicit(&r->records_written, 0, memory_order_relaxed);
	atomic_store_explicit(&r->chunks_written, 0, memory_order_relaxed);
	atomic_store_explicit(&r->bytes_written, PT_FMT_HEADER_BYTES, memory_order_relaxed);
	atomic_store_explicit(&r->io_lost_records, 0, memory_order_relaxed);
	atomic_store_explicit(&r->after_exit, 0, memory_order_relaxed);
	atomic_store_explicit(&r->no_ring_lost, 0, memory_order_relaxed);
	atomic_store_explicit(&r->closed_lost, 0, memory_order_relaxed);
	atomic_store_explicit(&r->closed_lost_sections, 0, memory_order_relaxed);
	atomic_store_explicit(&r->closed_errors, 0, memory_order_relaxed);
	atomic_store_explicit(&r->last_io_error, 0, memory_order_relaxed);
	atomic_store_explicit(&r->enabled, enabled, memory_order_relaxed);
	/* pt_thread_name() names belong to the trace they were given for: a
	 * later recorder (or a fork child's, whose threads have other tids)
	 * starts with none */
	pthread_mutex_lock(&r->names_lock);
	r->ntnames = 0;
	pthread_mutex_unlock(&r->names_lock);
	rec_gpu_open(); /* the GPU counts are this recorder's from here */
	r->cur_gen = ++gen_counter;
	rc = rec_flusher_start(r);
	if (rc) {
		fmt_writer_close(r->w);
		r->w = NULL;
		unlink(fpath);
		return rc;
	}
	/* release: settings and writer before threads may attach (they load
	 * gen with acquire in rec_ring_for()) */
	atomic_store_explicit(&r->gen, r->cur_gen, memory_order_release);
	atomic_store_explicit(&r->hot_gen, enabled ? r->cur_gen : 0, memory_order_release);
	atomic_store_explicit(&r->fork_records, strstr(path, "%p") != NULL, memory_order_relaxed);
	rec_is_open = true;
	return 0;
}

int pt_path(pt_recorder *r, char *buf, size_t cap)
{
	if (!r || !buf)
		return -EINVAL;
	if (rec_fork_unsafe)
		return -EBADF;
	pthread_mutex_lock(&rec_open_lock);
	int rc;
	if (!rec_is_open || atomic_load_explicit(&r->forked, memory_order_relaxed)) {
		rc = -EBADF;
	} else {
		pthread_mutex_lock(&r->path_lock); /* a rotation changes it (rec_flush.c) */
		const size_t n = strlen(r->path_now);
		rc = n < cap ? (int)n : -ERANGE;
		if (rc >= 0)
			memcpy(buf, r->path_now, n + 1);
		pthread_mutex_unlock(&r->path_lock);
	}
	pthread_mutex_unlock(&rec_open_lock);
	return rc;
}

pt_recorder *pt_open(const char *path, const struct pt_options *opt, size_t opt_bytes)
{
	if (!path) {
		errno = EINVAL;
		return NULL;
	}
	struct pt_options o; /* the caller's, @opt_bytes of it (recorder.h, Types) */
	if (opt) {
		int rc = copy_struct_in(&o, sizeof(o), opt, opt_bytes);
		if (rc) {
			errno = -rc;
			return NULL;
		}
		opt = &o;
	}
	if (rec_fork_unsafe) { /* a child whose fork found a recorder lock held (recorder.h) */
		errno = EBUSY;
		return NULL;
	}
	rec_global_init();
	struct pt_recorder *r = &rec_the_recorder;
	pthread_mutex_lock(&rec_open_lock);
	if (rec_is_open || r->forked) {
		pthread_mutex_unlock(&rec_open_lock);
		errno = EBUSY;
		return NULL;
	}
	int rc = rec_open_locked(r, path, opt, true);
	pthread_mutex_unlock(&rec_open_lock);
	if (rc) {
		errno = -rc;
		return NULL;
	}
	return r;
}

int pt_close(pt_recorder *r)
{
	if (!r || rec_fork_unsafe) /* a fork child's copy: nothing to close, rec_open_lock may be held */
		return 0;
	pthread_mutex_lock(&rec_open_lock);
	if (!rec_is_open || r->forked) {
		/* a fork child's copy that has not recorded: it never will now */
		atomic_store_explicit(&r->reopen, false, memory_order_relaxed);
		pthread_mutex_unlock(&rec_open_lock);
		return 0;
	}
	atomic_store_explicit(&r->fork_records, false, memory_order_relaxed); /* forks from now on: no locks taken */
	/* GPU work still in flight is resolved (bounded wait) and written
	 * while the recorder is still open; from here on pt_gpu_begin()
	 * times nothing new. */
	const bool gpu = rec_gpu_stop(r);
	if (gpu)
		(void)rec_ring_for(r); /* for rec_gpu_close()'s ERROR records (rec_close_emit()) */
	/* New calls become no-ops; the registry is frozen under reg_lock so
	 * no ring joins after the final drain. */
	pthread_mutex_lock(&r->reg_lock);
	atomic_store_explicit(&r->hot_gen, 0, memory_order_relaxed);
	atomic_store_explicit(&r->gen, 0, memory_order_release);
	pthread_mutex_unlock(&r->reg_lock);
	/* GPU halves counted by calls that still saw the recorder open:
	 * written on this thread's ring before the final drain */
	if (gpu)
		rec_gpu_close(r);
	rec_flusher_stop(r); /* final drain, final tables, joins */

	/* Unlink every ring, wait one grace period so no pt_stats() walker
	 * still holds one, then hand each to its thread (OWNER_DETACHED) or,
	 * if the thread already exited, free it here. */
	pthread_mutex_lock(&r->reg_lock);
	struct rec_ring *g, *tmp, **gone = NULL;
	size_t ngone = 0, cgone = 0;
	cds_list_for_each_entry_safe(g, tmp, &r->rings, node) {
		/* the node's links stay untouched until the grace period ends: a
		 * reader may be standing on it; its totals stay for pt_stats() */
		rec_fold_ring(r, g);
		if (ngone == cgone) {
			size_t nc = cgone ? cgone * 2 : 16;
			struct rec_ring **p = realloc(gone, nc * sizeof(*p));
			if (!p)
				continue; /* out of memory: leak it, never free early */
			gone = p;
			cgone = nc;
		}
		gone[ngone++] = g;
	}
	pthread_mutex_unlock(&r->reg_lock);
	urcu_bp_synchronize_rcu();
	PT_TSAN_ACQUIRE(&rec_grace);
	for (size_t i = 0; i < ngone; i++) {
		g = gone[i];
		int expect = OWNER_ACTIVE;
		/* [X1'] from now on the owner frees it; if it already exited
		 * (it won the race with us), we do. */
		if (!atomic_compare_exchange_strong_explicit(&g->owner_state, &expect, OWNER_DETACHED,
							     memory_order_acq_rel, memory_order_acquire))
			rec_ring_free(g);
	}
	free(gone);
	int rc = -atomic_load_explicit(&r->last_io_error, memory_order_relaxed);
	int crc = fmt_writer_close(r->w);
	r->w = NULL;
	if (!rc && crc)
		rc = crc;
	rec_is_open = false;
	pthread_mutex_unlock(&rec_open_lock);
	return rc;
}

static pthread_once_t default_once = PTHREAD_ONCE_INIT;
static pt_recorder *default_recorder;

static void default_close(void)
{
	pt_recorder *r = default_recorder;
	default_recorder = NULL;
	pt_close(r);
}

static void default_open(void)
{
	const char *p = getenv("PTZ_TRACE");
	if (!p || !*p)
		return;
	default_recorder = pt_open(p, NULL, 0);
	if (default_recorder)
		atexit(default_close);
}

pt_recorder *pt_default(void)
{
	pthread_once(&default_once, default_open);
	return default_recorder;
}

static void pt_set_enabled_locked(pt_recorder *r, bool on)
{
	atomic_store_explicit(&r->enabled, on, memory_order_relaxed);
	if (rec_is_open && !r->forked)
		atomic_store_explicit(&r->hot_gen, on ? r->cur_gen : 0, memory_order_relaxed);
}

void pt_set_enabled(pt_recorder *r, bool on)
{
	if (!r || rec_fork_unsafe)
		return;
	pthread_mutex_lock(&rec_open_lock);
	pt_set_enabled_locked(r, on);
	pthread_mutex_unlock(&rec_open_lock);
}
