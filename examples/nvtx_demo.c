/*
 * examples/nvtx_demo.c - an NVTX-annotated CPU program with no ptz code,
 * recorded by injection:
 *
 *   NVTX_INJECTION64_PATH=/path/to/libptz.so PTZ_TRACE=out.ptz ./nvtx_demo
 *
 * What it annotates (default sizes: --threads 4 --iters 50 --lib-calls 10):
 *   main thread  names itself twice with tid 0 (the last name wins), creates
 *                domain "demo" and registers "step" in it and "phase" in
 *                the default domain; starts one "job" range per worker
 *                (nvtxRangeStartA) that the worker ends; after the join,
 *                ends each worker's "dwork" range; one async "phase" range
 *                (nvtxRangeStartEx, registered message) begun and ended on
 *                main; a wide-character section "wide-é" and mark "wmark";
 *                calls nvtx_demo_lib_work() in libnvtx_demo_lib.so, a
 *                second NVTX module (its own injection init): "lib"
 *                sections with a "lib-mark" inside each.
 *   worker k     named "worker-k": by itself with gettid() (k % 3 == 0),
 *                by itself with tid 0 (k % 3 == 1), or by main with the tid
 *                the worker published, before the worker records anything
 *                (k % 3 == 2); one pop with nothing open (must return a
 *                negative value); starts "dwork" in domain "demo"
 *                (nvtxDomainRangeStartEx), ended by main; then per
 *                iteration:
 *                  push "outer"               (nvtxRangePushA, level 0)
 *                    push demo:"step"         (registered string, level 1)
 *                      push "inner"           (nvtxRangePushEx, level 2)
 *                        mark "tick"          (nvtxMarkA)
 *                    mark demo:"dmark"        (nvtxDomainMarkEx, ASCII)
 *                and ends its "job" range.
 *
 * Output: one "expect ..." line per fact the trace must show, in the form
 * tests/examples/nvtx_count prints them (section/instant counts per
 * "domain:name", async pairs and how many cross threads, thread names,
 * domains), then "levels tool" when every push/pop returned the levels a
 * tool reports (a pop with nothing open negative), "levels none" when NVTX
 * had no tool (every call returned NVTX_NO_PUSH_POP_TRACKING), else
 * "levels wrong N". tests/examples/test_nvtx_demo.py compares.
 *
 * Failure behaviour: a bad option ends with status 2 and a usage message; a
 * thread that cannot be created ends with status 1.
 */
#include <getopt.h>           /* getopt_long */
#include <nvtx3/nvToolsExt.h> /* header-only NVTX v3: the only tracing API used */
#include <pthread.h>          /* workers, barrier */
#include <stdatomic.h>        /* wrong-level counter */
#include <stdint.h>           /* uint32_t, uint64_t */
#include <stdio.h>            /* printf */
#include <stdlib.h>           /* strtol, calloc */
#include <string.h>           /* strcmp */
#include <sys/syscall.h>      /* SYS_gettid */
#include <unistd.h>           /* syscall */

#include "nvtx_demo_lib.h" /* the second NVTX module */

#define PROG "nvtx_demo"
#define MAX_THREADS 64

struct worker {
	pthread_t thread;
	int k;
	_Atomic uint32_t tid;        /* published before the first barrier */
	nvtxRangeId_t job;           /* begun by main, ended here */
	nvtxRangeId_t dwork;         /* begun here, ended by main */
};

static struct {
	int threads, iters, lib_calls;
	nvtxDomainHandle_t demo;
	nvtxStringHandle_t step;
	pthread_barrier_t named; /* workers published tids / main named them */
	atomic_int wrong;        /* push/pop results a tool must not give */
	atomic_int untracked;    /* results that were NVTX_NO_PUSH_POP_TRACKING */
	atomic_int checked;      /* push/pop results looked at */
} g;

static uint32_t os_tid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

/* Counts @got against the level a tool reports (@want; negative: any
 * negative value other than NVTX_NO_PUSH_POP_TRACKING). */
static void level(int got, int want)
{
	atomic_fetch_add(&g.checked, 1);
	if (got == NVTX_NO_PUSH_POP_TRACKING)
		atomic_fetch_add(&g.untracked, 1);
	else if (want < 0 ? got >= 0 : got != want)
		atomic_fetch_add(&g.wrong, 1);
}

static nvtxEventAttributes_t attr_ascii(const char *msg)
{
	nvtxEventAttributes_t a = { 0 };
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = msg;
	return a;
}

static nvtxEventAttributes_t attr_registered(nvtxStringHandle_t s)
{
	nvtxEventAttributes_t a = { 0 };
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	a.message.registered = s;
	return a;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	char name[32];
	snprintf(name, sizeof(name), "worker-%d", w->k);
	atomic_store(&w->tid, os_tid());
	pthread_barrier_wait(&g.named);
	pthread_barrier_wait(&g.named); /* main has named the k % 3 == 2 ones */
	if (w->k % 3 == 0)
		nvtxNameOsThreadA(os_tid(), name);
	else if (w->k % 3 == 1)
		nvtxNameOsThreadA(0, name);

	level(nvtxRangePop(), -1); /* nothing open */

	/* the same domain and string again, from another thread: same names */
	nvtxDomainHandle_t demo = nvtxDomainCreateA("demo");
	nvtxStringHandle_t step = nvtxDomainRegisterStringA(demo, "step");
	nvtxEventAttributes_t a_dwork = attr_ascii("dwork");
	w->dwork = nvtxDomainRangeStartEx(demo, &a_dwork);

	nvtxEventAttributes_t a_step = attr_registered(step);
	nvtxEventAttributes_t a_inner = attr_ascii("inner");
	nvtxEventAttributes_t a_dmark = attr_ascii("dmark");
	for (int i = 0; i < g.iters; i++) {
		level(nvtxRangePushA("outer"), 0);
		level(nvtxDomainRangePushEx(demo, &a_step), 1);
		level(nvtxRangePushEx(&a_inner), 2);
		nvtxMarkA("tick");
		level(nvtxRangePop(), 2);
		level(nvtxDomainRangePop(demo), 1);
		nvtxDomainMarkEx(demo, &a_dmark);
		level(nvtxRangePop(), 0);
	}
	nvtxRangeEnd(w->job);
	return NULL;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: " PROG " [--threads N (1..%d, default 4)] [--iters N (default 50)]"
		     " [--lib-calls N (default 10)]\n"
		     "Run with NVTX_INJECTION64_PATH=/path/libptz.so PTZ_TRACE=out.ptz to record it.\n",
		MAX_THREADS);
}

static int parse(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "iters", required_argument, NULL, 'i' },
		{ "lib-calls", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	g.threads = 4;
	g.iters = 50;
	g.lib_calls = 10;
	int o;
	while ((o = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		char *end = NULL;
		long v = optarg ? strtol(optarg, &end, 10) : 0;
		if (optarg && (*end || v < 0 || v > 1000000))
			o = '?';
		switch (o) {
		case 't': g.threads = (int)v; break;
		case 'i': g.iters = (int)v; break;
		case 'l': g.lib_calls = (int)v; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (optind != argc || g.threads < 1 || g.threads > MAX_THREADS) {
		usage(stderr);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (parse(argc, argv))
		return 2;
	nvtxInitialize(NULL);
	nvtxNameOsThreadA(0, "demo-early"); /* renamed below: the last name wins */
	nvtxNameOsThreadA(0, "demo-main");
	g.demo = nvtxDomainCreateA("demo");
	g.step = nvtxDomainRegisterStringA(g.demo, "step");
	nvtxStringHandle_t phase = nvtxDomainRegisterStringA(NULL, "phase");
	nvtxEventAttributes_t a_phase = attr_registered(phase);
	nvtxRangeId_t phase_id = nvtxRangeStartEx(&a_phase);

	struct worker *w = calloc((size_t)g.threads, sizeof(*w));
	if (!w || pthread_barrier_init(&g.named, NULL, (unsigned)g.threads + 1)) {
		fprintf(stderr, PROG ": out of memory\n");
		return 1;
	}
	for (int k = 0; k < g.threads; k++) {
		w[k].k = k;
		w[k].job = nvtxRangeStartA("job");
		if (pthread_create(&w[k].thread, NULL, worker_main, &w[k])) {
			fprintf(stderr, PROG ": cannot create thread %d\n", k);
			return 1;
		}
	}
	pthread_barrier_wait(&g.named); /* every worker has published its tid */
	for (int k = 0; k < g.threads; k++) {
		if (k % 3 == 2) {
			char name[32];
			snprintf(name, sizeof(name), "worker-%d", k);
			nvtxNameOsThreadA(atomic_load(&w[k].tid), name);
		}
	}
	pthread_barrier_wait(&g.named);
	for (int k = 0; k < g.threads; k++)
		pthread_join(w[k].thread, NULL);
	for (int k = 0; k < g.threads; k++)
		nvtxDomainRangeEnd(g.demo, w[k].dwork);

	level(nvtxRangePushW(L"wide-\u00e9"), 0);
	nvtxMarkW(L"wmark");
	level(nvtxRangePop(), 0);
	int lib = nvtx_demo_lib_work(g.lib_calls);
	nvtxRangeEnd(phase_id);
	pthread_barrier_destroy(&g.named);
	free(w);

	long n = (long)g.threads * g.iters;
	printf("expect section :outer %ld\n", n);
	printf("expect section demo:step %ld\n", n);
	printf("expect section :inner %ld\n", n);
	printf("expect section :wide-\xc3\xa9 1\n");
	if (g.lib_calls)
		printf("expect section :lib %d\n", g.lib_calls);
	printf("expect instant :tick %ld\n", n);
	printf("expect instant demo:dmark %ld\n", n);
	printf("expect instant :wmark 1\n");
	if (g.lib_calls)
		printf("expect instant :lib-mark %d\n", g.lib_calls);
	printf("expect async :job %d cross=%d\n", g.threads, g.threads);
	printf("expect async demo:dwork %d cross=%d\n", g.threads, g.threads);
	printf("expect async :phase 1 cross=0\n");
	printf("expect thread demo-main\n");
	for (int k = 0; k < g.threads; k++)
		printf("expect thread worker-%d\n", k);
	printf("expect domain demo\n");

	int checked = atomic_load(&g.checked), untracked = atomic_load(&g.untracked);
	int wrong = atomic_load(&g.wrong);
	if (untracked == checked && (lib == -1 || g.lib_calls == 0))
		printf("levels none\n");
	else if (untracked == 0 && wrong == 0 && lib == 0)
		printf("levels tool\n");
	else
		printf("levels wrong %d\n", wrong + untracked + (lib > 0 ? lib : 0));
	return 0;
}
