/*
 * tests/unit/test_plugin_unload.c - a plugin that links libptz is loaded,
 * records, and is unloaded, many times (include/ptz/recorder.h, "Loading
 * libptz with dlopen()").
 *
 * The host links neither libptz nor liburcu: the plugin (plugin_rec.c,
 * PLUGIN_SHARED linking libptz.so, PLUGIN_STATIC holding libptz.a) brings
 * them in, so a dlclose() of the plugin can unload them. Each scenario runs
 * in a child process (a crash is its signal, a hang its alarm), which
 * sleeps after each dlclose() so that any thread left in unloaded code
 * runs there; another child reads the traces through the plugin's reader.
 * Scenarios: the recorder closed before each unload, left open across the
 * unloads, and opened by PTZ_TRACE (pt_default(), finalized at exit).
 * Invariants: no child dies; every trace holds every section recorded.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/test_util.h"

#define CYCLES 12
#define SECTIONS 3000
#define ALARM_S 60

typedef int (*record_fn)(const char *mode, const char *path, int n, void **handle);
typedef long (*count_fn)(const char *path, const char *name);

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

/* Loads @plugin into *@h and copies the address of @sym into *@fn (a
 * function pointer: ISO C has no conversion from void *). */
static void load(const char *plugin, const char *sym, void **h, void *fn)
{
	*h = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
	if (!*h) {
		fprintf(stderr, "dlopen %s: %s\n", plugin, dlerror());
		_exit(90);
	}
	void *f = dlsym(*h, sym);
	if (!f)
		_exit(91);
	memcpy(fn, &f, sizeof(f));
}

struct cycle {
	record_fn rec;
	const char *mode;
	const char *path;
	void **handle;
	int rc;
	pthread_barrier_t recorded, unloaded;
};

/* A thread of the host that calls into the plugin, and exits after the
 * plugin was unloaded: its thread-exit destructors (libptz's ring, liburcu's
 * registration) then run. */
static void *cycle_thread(void *p)
{
	struct cycle *c = p;
	c->rc = c->rec(c->mode, c->path, SECTIONS, c->handle);
	pthread_barrier_wait(&c->recorded);
	pthread_barrier_wait(&c->unloaded);
	return NULL;
}

/* In a child: CYCLES times load @plugin, record SECTIONS sections in @mode
 * (path @tmpl with the cycle number for "close") on a new thread, unload,
 * let that thread exit, sleep; then close an "open" recorder through one
 * more load, and exit(). */
static void cycles_child(const char *plugin, const char *mode, const char *tmpl)
{
	/* a crash is this child's death by its signal (not cmocka's handler) */
	const int fatal[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };
	for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		signal(fatal[i], SIG_DFL);
	alarm(ALARM_S);
	void *handle = NULL;
	for (int k = 0; k < CYCLES; k++) {
		char path[4200];
		snprintf(path, sizeof(path), tmpl, k);
		void *h;
		struct cycle c = { .mode = mode, .path = path, .handle = &handle };
		load(plugin, "plugin_record", &h, &c.rec);
		pthread_barrier_init(&c.recorded, NULL, 2);
		pthread_barrier_init(&c.unloaded, NULL, 2);
		pthread_t th;
		if (pthread_create(&th, NULL, cycle_thread, &c))
			_exit(94);
		pthread_barrier_wait(&c.recorded);
		if (c.rc) {
			fprintf(stderr, "cycle %d: plugin_record(%s) = %s\n", k, mode, strerror(c.rc));
			_exit(92);
		}
		dlclose(h);
		pthread_barrier_wait(&c.unloaded);
		pthread_join(th, NULL);
		pthread_barrier_destroy(&c.recorded);
		pthread_barrier_destroy(&c.unloaded);
		sleep_ms(30); /* three flush intervals: a thread left in the plugin's code runs there */
	}
	if (strcmp(mode, "open") == 0) {
		void *h;
		record_fn rec;
		load(plugin, "plugin_record", &h, &rec);
		if (rec(mode, NULL, -1, &handle))
			_exit(93);
		dlclose(h);
		sleep_ms(30);
	}
	exit(0); /* exit(), not _exit(): a PTZ_TRACE recorder is finalized here */
}

static void wait_ok(pid_t pid, const char *what)
{
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (WIFSIGNALED(st))
		fail_msg("%s: killed by signal %d (%s)", what, WTERMSIG(st), strsignal(WTERMSIG(st)));
	if (WEXITSTATUS(st) != 0)
		fail_msg("%s: exit status %d", what, WEXITSTATUS(st));
}

/* Runs the cycles in a child; then, in another child, checks that the
 * trace at @tmpl (cycle @k's path for "close") holds @want sections. */
static void run(const char *plugin, const char *mode, const char *name)
{
	char tmpl[4200];
	snprintf(tmpl, sizeof(tmpl), "%s/%s-%%d.ptz", tu_tmpdir(), name);
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (strcmp(mode, "env") == 0) {
			char p[4200];
			snprintf(p, sizeof(p), tmpl, 0);
			setenv("PTZ_TRACE", p, 1);
		}
		cycles_child(plugin, mode, tmpl);
	}
	wait_ok(pid, mode);
	const bool each = strcmp(mode, "close") == 0;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(ALARM_S);
		void *h;
		count_fn count;
		load(plugin, "plugin_count", &h, &count);
		for (int k = 0; k < (each ? CYCLES : 1); k++) {
			char path[4200];
			snprintf(path, sizeof(path), tmpl, k);
			long n = count(path, "plugin-work"), want = each ? SECTIONS : (long)CYCLES * SECTIONS;
			if (n != want) {
				fprintf(stderr, "%s: %ld sections, expected %ld\n", path, n, want);
				_exit(1);
			}
			unlink(path);
		}
		_exit(0);
	}
	wait_ok(pid, "reading the traces");
}

static void test_shared_closed(void **state) { (void)state; run(PLUGIN_SHARED, "close", "shared-close"); }
static void test_shared_open(void **state) { (void)state; run(PLUGIN_SHARED, "open", "shared-open"); }
static void test_shared_env(void **state) { (void)state; run(PLUGIN_SHARED, "env", "shared-env"); }
static void test_static_closed(void **state) { (void)state; run(PLUGIN_STATIC, "close", "static-close"); }
static void test_static_open(void **state) { (void)state; run(PLUGIN_STATIC, "open", "static-open"); }
static void test_static_env(void **state) { (void)state; run(PLUGIN_STATIC, "env", "static-env"); }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shared_closed),
		cmocka_unit_test(test_shared_open),
		cmocka_unit_test(test_shared_env),
		cmocka_unit_test(test_static_closed),
		cmocka_unit_test(test_static_open),
		cmocka_unit_test(test_static_env),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
