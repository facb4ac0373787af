/*
 * tests/unit/test_recorder_file.c - where and how pt_open() creates the
 * trace file, and the settings it clamps.
 *
 * Invariants covered:
 *  - the file is created mode 0600 whatever the umask (0 and 0277);
 *  - our own earlier trace at the path is replaced, not truncated in place:
 *    a descriptor still open on it keeps its bytes, the new file is 0600;
 *  - a file of another user (0666, uid 65534; as root, and as a non-root
 *    user in a forked child) or one with two hard links is refused with
 *    EEXIST and left untouched;
 *  - "%h" expands to the host name made one safe file-name component
 *    ('/' and control bytes become '_', "." and ".." and "" are replaced;
 *    gethostname() is wrapped: -Wl,--wrap=gethostname), and pt_path()
 *    gives that file (-ERANGE short, -EBADF once closed);
 *  - zstd levels above 19 (pt_options and PTZ_ZSTD_LEVEL) are clamped to
 *    19, lower ones below zstd's minimum to it; the rest kept;
 *  - the batch job and rank from the environment (SLURM_JOB_ID with
 *    SLURM_ARRAY_TASK_ID, PBS_JOBID...; SLURM_PROCID before RANK...) land in
 *    the header; rank 0 is a rank, "-1" and 2^32 - 1 are none; a long id is
 *    cut to the field; with neither, the file stays 1.1;
 *  - pt_close() of a recorder whose four 8 MiB rings are full at level 19
 *    returns within 1.5 s (the final drain switches to level 1 after
 *    100 ms; it took 2.5-4 s before).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <zstd.h>

#include "tests/test_util.h"
#include "recorder/rec_internal.h"

/* ---- gethostname() seam ---- */
int __real_gethostname(char *name, size_t len);
int __wrap_gethostname(char *name, size_t len);
static const char *fake_host; /* NULL: the real one */
int __wrap_gethostname(char *name, size_t len)
{
	if (!fake_host)
		return __real_gethostname(name, len);
	snprintf(name, len, "%s", fake_host);
	return 0;
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void assert_content(const char *path, const char *text)
{
	char buf[256] = { 0 };
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_true(read(fd, buf, sizeof(buf) - 1) >= 0);
	close(fd);
	assert_string_equal(buf, text);
}

/* pt_open() + pt_close() of @path; the mode of what it created, or -errno. */
static int open_close_mode(const char *path)
{
	pt_recorder *r = pt_open(path, NULL, 0);
	if (!r)
		return -errno;
	assert_int_equal(pt_close(r), 0);
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_uid, geteuid());
	return (int)(st.st_mode & 07777);
}

static void test_open_mode_0600_whatever_umask(void **state)
{
	(void)state;
	mode_t old = umask(0);
	assert_int_equal(open_close_mode(tu_path("umask0.ptz")), 0600);
	umask(0277); /* would leave 0400 */
	assert_int_equal(open_close_mode(tu_path("umask277.ptz")), 0600);
	umask(old);
}

static void test_open_replaces_own_file(void **state)
{
	(void)state;
	const char *path = tu_path("own.ptz");
	write_file(path, "old trace", 0644);
	int keep = open(path, O_RDONLY); /* a reader (or an earlier run) still on it */
	assert_true(keep >= 0);
	struct stat before, after;
	assert_int_equal(fstat(keep, &before), 0);
	assert_int_equal(open_close_mode(path), 0600);
	assert_int_equal(stat(path, &after), 0);
	assert_true(after.st_ino != before.st_ino); /* a new file */
	char buf[32] = { 0 };
	assert_int_equal(pread(keep, buf, sizeof(buf) - 1, 0), 9); /* the old one not truncated */
	assert_string_equal(buf, "old trace");
	close(keep);
	/* and it reads as a trace */
	struct pt_reader *rd;
	assert_int_equal(pt_reader_open(path, &rd), 0);
	pt_reader_close(rd);
	/* a rerun replaces it again */
	assert_int_equal(open_close_mode(path), 0600);
}

static void test_open_refuses_hard_linked_file(void **state)
{
	(void)state;
	const char *path = tu_path("linked.ptz"), *other = tu_path("linked-other");
	write_file(other, "precious", 0600);
	assert_int_equal(link(other, path), 0);
	errno = 0;
	assert_null(pt_open(path, NULL, 0));
	assert_int_equal(errno, EEXIST);
	assert_content(path, "precious");
	assert_content(other, "precious");
}

static void test_open_refuses_other_users_file(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip(); /* needs chown(); the non-root case is the next test */
	const char *path = tu_path("foreign.ptz");
	write_file(path, "theirs", 0666);
	assert_int_equal(chown(path, 65534, 65534), 0);
	errno = 0;
	assert_null(pt_open(path, NULL, 0));
	assert_int_equal(errno, EEXIST);
	assert_content(path, "theirs");
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_uid, 65534);
	assert_int_equal(st.st_mode & 07777, 0666);
}

/* As a non-root user (uid 65534 in a forked child, set by root): root's
 * 0666 file in a world-writable sticky directory under /tmp (the build
 * directory's parents may keep that user out) is refused; a new file is
 * ours, 0600. First of the tests: a child of a process that has opened a
 * recorder may not open one (recorder.h, fork()). */
static void test_open_refuses_other_users_file_non_root(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip(); /* setresuid() needs root */
	char dir[] = "/tmp/ptz-recorder-file-XXXXXX";
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 01777), 0); /* like /tmp */
	char path[4300], mine[4300];
	snprintf(path, sizeof(path), "%s/root.ptz", dir);
	snprintf(mine, sizeof(mine), "%s/nobody.ptz", dir);
	write_file(path, "root's", 0666);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(10);
		errno = 0;
		if (pt_open(path, NULL, 0) || errno != EEXIST)
			_exit(11);
		pt_recorder *r = pt_open(mine, NULL, 0);
		if (!r)
			_exit(12);
		if (pt_close(r))
			_exit(13);
		struct stat st;
		if (stat(mine, &st) || st.st_uid != 65534 || (st.st_mode & 07777) != 0600)
			_exit(14);
		_exit(0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_content(path, "root's");
	unlink(path);
	unlink(mine);
	rmdir(dir);
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* pt_open(@tmpl) with gethostname() saying @host: the file must be @want. */
static void check_host(const char *host, const char *tmpl, const char *want)
{
	fake_host = host;
	pt_recorder *r = pt_open(tu_path(tmpl), NULL, 0);
	fake_host = NULL;
	assert_non_null(r);
	/* pt_path(): the file written, as expanded; -ERANGE one byte short */
	char got[4096], want_path[4096];
	snprintf(want_path, sizeof(want_path), "%s", tu_path(want));
	const int n = pt_path(r, got, sizeof(got));
	assert_int_equal(n, (int)strlen(want_path));
	assert_string_equal(got, want_path);
	assert_int_equal(pt_path(r, got, (size_t)n), -ERANGE);
	assert_int_equal(pt_path(r, got, (size_t)n + 1), n);
	assert_int_equal(pt_path(NULL, got, sizeof(got)), -EINVAL);
	assert_int_equal(pt_close(r), 0);
	assert_int_equal(pt_path(r, got, sizeof(got)), -EBADF);
	struct stat st;
	if (stat(tu_path(want), &st) != 0)
		fail_msg("host \"%s\": no file %s", host, want);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(unlink(tu_path(want)), 0);
}

static void test_host_expansion_is_one_safe_component(void **state)
{
	(void)state;
	assert_int_equal(mkdir(tu_path("a"), 0700), 0);
	assert_int_equal(mkdir(tu_path("a/b"), 0700), 0);
	check_host("../../escaped", "a/b/%h.ptz", "a/b/.._.._escaped.ptz");
	struct stat st;
	assert_int_not_equal(stat(tu_path("escaped.ptz"), &st), 0); /* nothing outside */
	check_host("esc\033[2Jbel\007", "a/%h.ptz", "a/esc__2Jbel_.ptz");
	check_host("tab\there new\nline\177", "a/%h.ptz", "a/tab_here_new_line_.ptz");
	check_host("\xc2\x9b" "c1", "a/%h.ptz", "a/__c1.ptz"); /* C1 CSI, UTF-8 */
	check_host("/", "a/%h.ptz", "a/_.ptz");
	/* a directory name as a whole component */
	check_host("..", "a/%h", "a/__");
	check_host(".", "a/%h", "a/_");
	check_host("", "a/%h", "a/host");
	/* a real name keeps its dots and dashes */
	check_host("node-7.example.org", "a/t-%h-%h.ptz", "a/t-node-7.example.org-node-7.example.org.ptz");
}

/* r->zstd_level after pt_open() with option @opt_level and PTZ_ZSTD_LEVEL=@env (NULL: unset). */
static int level_after_open(int opt_level, const char *env)
{
	if (env)
		setenv("PTZ_ZSTD_LEVEL", env, 1);
	else
		unsetenv("PTZ_ZSTD_LEVEL");
	struct pt_options o = { .zstd_level = opt_level };
	pt_recorder *r = pt_open(tu_path("level.ptz"), &o, sizeof(o));
	unsetenv("PTZ_ZSTD_LEVEL");
	assert_non_null(r);
	int level = r->zstd_level;
	assert_int_equal(pt_close(r), 0);
	return level;
}

static void test_zstd_level_clamped_to_documented_range(void **state)
{
	(void)state;
	assert_int_equal(level_after_open(22, NULL), 19);
	assert_int_equal(level_after_open(20, NULL), 19);
	assert_int_equal(level_after_open(19, NULL), 19);
	assert_int_equal(level_after_open(3, NULL), 3);
	assert_int_equal(level_after_open(-5, NULL), -5);
	assert_int_equal(level_after_open(INT_MIN, NULL), ZSTD_minCLevel());
	assert_int_equal(level_after_open(0, "22"), 19);
	assert_int_equal(level_after_open(0, "1000000"), 19);
	assert_int_equal(level_after_open(0, "7"), 7);
	assert_int_equal(level_after_open(0, "-3"), -3);
	assert_int_equal(level_after_open(0, "junk"), 1); /* not a number: the default */
	assert_int_equal(level_after_open(0, NULL), 1);
	assert_int_equal(level_after_open(4, "22"), 4); /* the option wins */
}

static pt_recorder *R;
static _Atomic int filled;
static _Atomic bool release_threads;

static void *filler(void *arg)
{
	(void)arg;
	uint32_t a = pt_intern(R, "fill-a"), b = pt_intern(R, "fill-b");
	for (int i = 0; i < 300000; i++) { /* 1.2 M records: more than an 8 MiB ring holds */
		pt_begin(R, a);
		pt_begin(R, b);
		pt_end(R, b);
		pt_end(R, a);
	}
	atomic_fetch_add(&filled, 1);
	while (!atomic_load(&release_threads)) /* the ring stays live until pt_close() */
		usleep(1000);
	return NULL;
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CLOSE_BOUND_S 4.5 /* our transcoding is instrumented */
#else
#define CLOSE_BOUND_S 1.5
#endif
#define FILLERS 4

/* Four full 8 MiB rings at level 19: pt_close() took 2.5-4 s on a loaded
 * 2-vCPU VM before the final drain switched to a fast level after 100 ms;
 * 0.2-0.7 s after. */
static void test_close_bounded_at_high_level(void **state)
{
	(void)state;
	struct pt_options o = { .zstd_level = 19, .ring_bytes = 8u << 20 };
	R = pt_open(tu_path("slow.ptz"), &o, sizeof(o));
	assert_non_null(R);
	pthread_t t[FILLERS];
	atomic_store(&filled, 0);
	atomic_store(&release_threads, false);
	for (int i = 0; i < FILLERS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, filler, NULL), 0);
	while (atomic_load(&filled) < FILLERS)
		usleep(1000);
	const double t0 = mono_s();
	assert_int_equal(pt_close(R), 0);
	const double took = mono_s() - t0;
	atomic_store(&release_threads, true);
	for (int i = 0; i < FILLERS; i++)
		pthread_join(t[i], NULL);
	print_message("# pt_close() with %d full rings at level 19: %.3f s\n", FILLERS, took);
	assert_true(took < CLOSE_BOUND_S);
	/* every record counted: recorded + lost = emitted */
	struct pt_stats_info st;
	assert_int_equal(pt_stats(R, &st, sizeof(st)), 0);
	assert_int_equal(st.records + st.lost_records, FILLERS * 1200000u);
	struct tu_trace tr;
	tu_read(tu_path("slow.ptz"), &tr);
	assert_int_equal(tr.event_records, st.records);
	tu_free(&tr);
}

/* Opens, closes and reads the header's job and rank under the current environment. */
static void job_of(const char *path, char *job, size_t cap, int *has_rank, uint32_t *rank, int *minor)
{
	pt_recorder *r = pt_open(path, NULL, 0);
	assert_non_null(r);
	assert_int_equal(pt_close(r), 0);
	struct pt_reader *rd;
	assert_int_equal(pt_reader_open(path, &rd), 0);
	const struct pt_trace_info *in = pt_reader_info(rd);
	snprintf(job, cap, "%s", in->job);
	*has_rank = in->has_rank;
	*rank = in->rank;
	*minor = in->version_minor;
	pt_reader_close(rd);
}

static void test_job_and_rank(void **state)
{
	(void)state;
	static const char *const vars[] = { "SLURM_JOB_ID", "SLURM_ARRAY_TASK_ID", "PBS_JOBID", "LSB_JOBID",
					    "FLUX_JOB_ID", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
					    "PMIX_RANK", "RANK" };
	for (size_t i = 0; i < PT_ARRAY_SIZE(vars); i++)
		unsetenv(vars[i]);
	const char *path = tu_path("job.ptz");
	char job[200];
	int has, minor;
	uint32_t rank;
	job_of(path, job, sizeof(job), &has, &rank, &minor);
	assert_string_equal(job, "");
	assert_false(has);
	assert_int_equal(minor, 1); /* nothing of 1.2 used: a 1.1 file */
	setenv("SLURM_JOB_ID", "777", 1);
	setenv("SLURM_ARRAY_TASK_ID", "3", 1);
	setenv("SLURM_PROCID", "5", 1);
	setenv("RANK", "9", 1); /* SLURM_PROCID comes first */
	job_of(path, job, sizeof(job), &has, &rank, &minor);
	assert_string_equal(job, "777_3");
	assert_true(has);
	assert_int_equal(rank, 5);
	assert_int_equal(minor, 2);
	unsetenv("SLURM_JOB_ID");
	unsetenv("SLURM_ARRAY_TASK_ID");
	unsetenv("SLURM_PROCID");
	setenv("PBS_JOBID", "42.server", 1);
	job_of(path, job, sizeof(job), &has, &rank, &minor); /* torchrun's RANK */
	assert_string_equal(job, "42.server");
	assert_true(has);
	assert_int_equal(rank, 9);
	setenv("RANK", "0", 1);
	job_of(path, job, sizeof(job), &has, &rank, &minor);
	assert_true(has); /* rank 0 is a rank */
	assert_int_equal(rank, 0);
	setenv("RANK", "-1", 1);
	job_of(path, job, sizeof(job), &has, &rank, &minor);
	assert_false(has); /* not a rank: none */
	setenv("RANK", "4294967295", 1);
	job_of(path, job, sizeof(job), &has, &rank, &minor);
	assert_false(has);
	unsetenv("RANK");
	char long_id[300];
	memset(long_id, 'j', sizeof(long_id) - 1);
	long_id[sizeof(long_id) - 1] = 0;
	setenv("PBS_JOBID", long_id, 1);
	job_of(path, job, sizeof(job), &has, &rank, &minor);
	assert_true(strlen(job) >= 100 && strlen(job) <= 126); /* cut, never past the field */
	unsetenv("PBS_JOBID");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_refuses_other_users_file_non_root), /* first: forks */
		cmocka_unit_test(test_open_mode_0600_whatever_umask),
		cmocka_unit_test(test_open_replaces_own_file),
		cmocka_unit_test(test_open_refuses_hard_linked_file),
		cmocka_unit_test(test_open_refuses_other_users_file),
		cmocka_unit_test(test_host_expansion_is_one_safe_component),
		cmocka_unit_test(test_zstd_level_clamped_to_documented_range),
		cmocka_unit_test(test_close_bounded_at_high_level),
		cmocka_unit_test(test_job_and_rank),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
