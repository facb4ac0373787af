/*
 * recorder/rec_nvtx.c - NVTX injection: record an unmodified NVTX-annotated
 * application into the PTZ_TRACE trace.
 *
 *   NVTX_INJECTION64_PATH=/path/libptz.so PTZ_TRACE=out.ptz ./app
 *
 * Each module of the application that includes the nvtx3 headers (the
 * executable, each of its shared libraries) initializes NVTX on its first
 * NVTX call: it dlopen()s $NVTX_INJECTION64_PATH (the same file is loaded
 * once per process) and calls InitializeInjectionNvtx2() with its own
 * export-table getter. That function only writes our handlers into the
 * module's CORE and CORE2 function tables (recorder/rec_nvtx_abi.h); it
 * keeps no state, allocates nothing, opens nothing and never touches
 * CUDA, so repeated calls, one per module or several for one module, are
 * harmless. NVTX turns the slots we leave unassigned into no-ops.
 *
 * The handlers record into pt_default(): the first handler call opens
 * $PTZ_TRACE (pthread_once), pt_default() finalizes it at exit, so the
 * trace is complete. With PTZ_TRACE unset, or an open that failed,
 * pt_default() is NULL and the handlers record nothing, intern nothing and
 * return what NVTX callers expect (levels from push/pop, 0 range ids,
 * NULL handles).
 *
 * Mapping (public recorder API, and rec_lost_section() for losses):
 *   nvtxMark*, nvtxDomainMarkEx             -> pt_instant()
 *   nvtxRangeStart*, nvtxDomainRangeStartEx -> pt_async_begin(); its async
 *                                              id is the nvtxRangeId_t
 *   nvtxRangeEnd, nvtxDomainRangeEnd        -> pt_async_end() (any thread)
 *   nvtxRangePush*, nvtxDomainRangePushEx   -> pt_begin() on the thread
 *   nvtxRangePop, nvtxDomainRangePop        -> pt_end() of the id pushed
 *   nvtxNameOsThread{A,W}                   -> pt_thread_name() (tid 0 =
 *                                              the calling thread)
 *   nvtxDomainCreate{A,W}                   -> pt_domain()
 *   nvtxDomainRegisterString{A,W}           -> pt_intern_in()
 *   nvtxInitialize                          -> opens the trace early
 * Names are interned in the event's domain (NULL handle = default domain
 * 0). Messages: ASCII, UNICODE (wchar_t converted to UTF-8, at most
 * NVTX_NAME_BYTES - 1 bytes) and REGISTERED; an event with no message, an
 * unknown message type or an attribute structure too small to hold its
 * message is named "(unnamed)". Categories, colors and payloads are not
 * recorded (NameCategory slots stay unassigned: no-ops).
 *
 * Handles are the recorder's ids themselves, cast to pointers: a domain
 * handle is its pt_domain() id, a registered-string handle its
 * pt_intern_in() id (never 0). So registration caches the interned id with
 * no allocation, the same name gives the same handle from any module or
 * thread, nothing is freed (nvtxDomainDestroy is a no-op: ids are
 * process-global), and a late call through a destroyed handle is harmless.
 *
 * Push/pop: NVTX lets a tool return the 0-based level of the range pushed
 * and popped, negative when pop finds nothing open. Each thread keeps one
 * stack of the ids it pushed (allocated once per thread), shared by all
 * domains because the recorder nests every section of a thread in one
 * stack: a pop in one domain closes the innermost range of the thread
 * whatever its domain, and levels count the ranges of all domains. Ranges
 * nested deeper than NVTX_STACK_MAX, or pushed while the thread's stack
 * cannot be allocated, keep the levels right but are not recorded: each
 * is counted as a section lost whole (lost_sections, its BEGIN and END in
 * lost_records, in pt_stats() and the trace's LOSS records) through
 * rec_lost_section(), the one internal recorder call made here.
 * A pop with nothing pushed through NVTX records nothing, so sections the
 * application opened itself with pt_begin() are never closed by NVTX.
 *
 * Thread safety: handlers run on any thread; the stack is thread-local and
 * every recorder call is thread-safe. Not async-signal-safe (nor is NVTX).
 */
#include <limits.h>  /* INT_MAX */
#include <pthread.h> /* pthread_once, pthread_key_create */
#include <stdbool.h> /* bool */
#include <stddef.h>  /* offsetof, size_t */
#include <stdint.h>  /* uint32_t, uint64_t, uintptr_t */
#include <stdlib.h>  /* calloc, free */
#include <wchar.h>   /* wchar_t */

#include "common/compiler.h"      /* PT_ARRAY_SIZE, likely */
#include "ptz/recorder.h"         /* the public recorder API, the only one used */
#include "recorder/rec_internal.h" /* rec_lost_section() */
#include "recorder/rec_nvtx_abi.h" /* our copy of the NVTX ABI */

#define NVTX_UNNAMED "(unnamed)"
#define NVTX_NAME_BYTES 256u /* UTF-8 buffer for a wide-character name, NUL included */
#define NVTX_STACK_MAX 256u  /* recorded push/pop nesting per thread */

/* ---------------------------------------------------------------- names */

/*
 * wide_to_utf8() - Encode the NUL-terminated wide string @w as UTF-8 into
 * @buf (@cap bytes, >= 4), truncated at a character boundary. wchar_t is
 * UTF-32 on the platforms libptz supports; surrogates and values beyond
 * U+10FFFF become U+FFFD. Return: @buf, always NUL-terminated.
 */
static const char *wide_to_utf8(const wchar_t *w, char *buf, size_t cap)
{
	size_t n = 0;
	for (; *w; w++) {
		uint32_t c = (uint32_t)*w;
		unsigned char e[4];
		size_t k;
		if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
			c = 0xfffd;
		if (c < 0x80) {
			e[0] = (unsigned char)c;
			k = 1;
		} else if (c < 0x800) {
			e[0] = (unsigned char)(0xc0 | c >> 6);
			e[1] = (unsigned char)(0x80 | (c & 0x3f));
			k = 2;
		} else if (c < 0x10000) {
			e[0] = (unsigned char)(0xe0 | c >> 12);
			e[1] = (unsigned char)(0x80 | (c >> 6 & 0x3f));
			e[2] = (unsigned char)(0x80 | (c & 0x3f));
			k = 3;
		} else {
			e[0] = (unsigned char)(0xf0 | c >> 18);
			e[1] = (unsigned char)(0x80 | (c >> 12 & 0x3f));
			e[2] = (unsigned char)(0x80 | (c >> 6 & 0x3f));
			e[3] = (unsigned char)(0x80 | (c & 0x3f));
			k = 4;
		}
		if (n + k >= cap)
			break;
		for (size_t i = 0; i < k; i++)
			buf[n++] = (char)e[i];
	}
	buf[n] = '\0';
	return buf;
}

/* Handles are ids (see the top comment). */
static uint32_t domain_of(const struct rec_nvtx_domain *h)
{
	return (uint32_t)(uintptr_t)h;
}

static struct rec_nvtx_domain *domain_handle(uint32_t id)
{
	return (struct rec_nvtx_domain *)(uintptr_t)id;
}

static struct rec_nvtx_string *string_handle(uint32_t id)
{
	return (struct rec_nvtx_string *)(uintptr_t)id;
}

/*
 * attr_name() - Name id of the event described by @a in @domain.
 * @r: non-NULL recorder. @a: client's attributes, may be NULL.
 * Return: an interned id, never 0.
 */
static uint32_t attr_name(pt_recorder *r, uint32_t domain, const struct rec_nvtx_event_attr *a)
{
	char buf[NVTX_NAME_BYTES];
	if (a && a->size >= REC_NVTX_EVENT_ATTR_MIN_SIZE) {
		switch (a->message_type) {
		case REC_NVTX_MESSAGE_ASCII:
			if (a->message.ascii)
				return pt_intern_in(r, domain, a->message.ascii);
			break;
		case REC_NVTX_MESSAGE_UNICODE:
			if (a->message.unicode)
				return pt_intern_in(r, domain, wide_to_utf8(a->message.unicode, buf, sizeof(buf)));
			break;
		case REC_NVTX_MESSAGE_REGISTERED:
			if (a->message.registered)
				return (uint32_t)(uintptr_t)a->message.registered;
			break;
		default:
			break;
		}
	}
	return pt_intern_in(r, domain, NVTX_UNNAMED);
}

static uint32_t ascii_name(pt_recorder *r, const char *s)
{
	return pt_intern_in(r, 0, s ? s : NVTX_UNNAMED);
}

static uint32_t wide_name(pt_recorder *r, const wchar_t *w)
{
	char buf[NVTX_NAME_BYTES];
	return pt_intern_in(r, 0, w ? wide_to_utf8(w, buf, sizeof(buf)) : NVTX_UNNAMED);
}

/* ------------------------------------------------------------ push/pop */

/*
 * The calling thread's NVTX push stack. nvtx_depth counts every open push
 * (also beyond NVTX_STACK_MAX); nvtx_ids[level] is the section id begun at
 * that level, 0 when nothing was recorded there (entries at and above
 * nvtx_depth are always 0: pop clears what it ends). The ids live on the
 * heap, allocated on the thread's first recorded push and freed at its
 * exit by the key's destructor: libptz has an initial-exec TLS variable
 * (rec_tls, rec_registry.c), which puts all of its TLS in the static TLS surplus when
 * NVTX dlopen()s it (DF_STATIC_TLS), and that surplus is small and shared
 * (glibc.rtld.optional_static_tls: 512 bytes by default), so this file
 * keeps 12 bytes there.
 */
static __thread uint32_t nvtx_depth;
static __thread uint32_t *nvtx_ids;
static pthread_once_t nvtx_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t nvtx_key;
static bool nvtx_key_ok; /* written once under nvtx_key_once */

/* Runs on the exiting thread. Clearing the TLS pointer first keeps a pop
 * from a later key destructor (another library's) off freed memory: it
 * then records nothing, and a push allocates afresh (destructors rerun). */
static void nvtx_ids_free(void *ids)
{
	nvtx_ids = NULL;
	free(ids);
}

static void nvtx_key_init(void)
{
	nvtx_key_ok = pthread_key_create(&nvtx_key, nvtx_ids_free) == 0;
}

/* Return: this thread's id stack, NULL if it cannot be had (then sections
 * are counted in the depth and as lost sections, not recorded). */
static uint32_t *thread_ids(void)
{
	if (likely(nvtx_ids != NULL))
		return nvtx_ids;
	pthread_once(&nvtx_key_once, nvtx_key_init);
	if (!nvtx_key_ok)
		return NULL;
	uint32_t *ids = calloc(NVTX_STACK_MAX, sizeof(*ids));
	if (ids && pthread_setspecific(nvtx_key, ids) != 0) {
		free(ids);
		ids = NULL;
	}
	nvtx_ids = ids;
	return ids;
}

/* Opens section @id (0: record nothing). Return: the 0-based level. */
static int push(pt_recorder *r, uint32_t id)
{
	uint32_t level = nvtx_depth;
	if (level == UINT32_MAX)
		return INT_MAX; /* 4 billion open ranges: stop counting */
	nvtx_depth = level + 1;
	if (id) {
		uint32_t *ids = level < NVTX_STACK_MAX ? thread_ids() : NULL;
		if (ids) {
			ids[level] = id;
			pt_begin(r, id);
		} else {
			/* no slot to remember its id for the pop: counted as
			 * a section lost whole (pt_stats(), trace LOSS) */
			rec_lost_section(r);
		}
	}
	return level > INT_MAX ? INT_MAX : (int)level;
}

/* Closes the innermost range pushed on this thread.
 * Return: its 0-based level, or -1 when none is open. */
static int pop(void)
{
	if (!nvtx_depth)
		return -1;
	uint32_t level = --nvtx_depth;
	if (level < NVTX_STACK_MAX && nvtx_ids && nvtx_ids[level]) {
		pt_end(pt_default(), nvtx_ids[level]); /* NULL after the exit-time close: no-op */
		nvtx_ids[level] = 0;
	}
	return level > INT_MAX ? INT_MAX : (int)level;
}

/* ------------------------------------------------------ CORE handlers */

static void nvtx_mark_ex(const struct rec_nvtx_event_attr *a)
{
	pt_recorder *r = pt_default();
	if (r)
		pt_instant(r, attr_name(r, 0, a));
}

static void nvtx_mark_a(const char *msg)
{
	pt_recorder *r = pt_default();
	if (r)
		pt_instant(r, ascii_name(r, msg));
}

static void nvtx_mark_w(const wchar_t *msg)
{
	pt_recorder *r = pt_default();
	if (r)
		pt_instant(r, wide_name(r, msg));
}

static uint64_t nvtx_range_start_ex(const struct rec_nvtx_event_attr *a)
{
	pt_recorder *r = pt_default();
	return r ? pt_async_begin(r, attr_name(r, 0, a)) : 0;
}

static uint64_t nvtx_range_start_a(const char *msg)
{
	pt_recorder *r = pt_default();
	return r ? pt_async_begin(r, ascii_name(r, msg)) : 0;
}

static uint64_t nvtx_range_start_w(const wchar_t *msg)
{
	pt_recorder *r = pt_default();
	return r ? pt_async_begin(r, wide_name(r, msg)) : 0;
}

static void nvtx_range_end(uint64_t id)
{
	pt_async_end(pt_default(), id); /* NULL recorder or id 0: no-op */
}

static int nvtx_range_push_ex(const struct rec_nvtx_event_attr *a)
{
	pt_recorder *r = pt_default();
	return push(r, r ? attr_name(r, 0, a) : 0);
}

static int nvtx_range_push_a(const char *msg)
{
	pt_recorder *r = pt_default();
	return push(r, r ? ascii_name(r, msg) : 0);
}

static int nvtx_range_push_w(const wchar_t *msg)
{
	pt_recorder *r = pt_default();
	return push(r, r ? wide_name(r, msg) : 0);
}

static int nvtx_range_pop(void)
{
	return pop();
}

static void nvtx_name_os_thread_a(uint32_t tid, const char *name)
{
	pt_recorder *r = pt_default();
	if (r && name)
		pt_thread_name(r, tid, name);
}

static void nvtx_name_os_thread_w(uint32_t tid, const wchar_t *name)
{
	char buf[NVTX_NAME_BYTES];
	pt_recorder *r = pt_default();
	if (r && name)
		pt_thread_name(r, tid, wide_to_utf8(name, buf, sizeof(buf)));
}

/* ----------------------------------------------------- CORE2 handlers */

static void nvtx_domain_mark_ex(struct rec_nvtx_domain *d, const struct rec_nvtx_event_attr *a)
{
	pt_recorder *r = pt_default();
	if (r)
		pt_instant(r, attr_name(r, domain_of(d), a));
}

static uint64_t nvtx_domain_range_start_ex(struct rec_nvtx_domain *d, const struct rec_nvtx_event_attr *a)
{
	pt_recorder *r = pt_default();
	return r ? pt_async_begin(r, attr_name(r, domain_of(d), a)) : 0;
}

static void nvtx_domain_range_end(struct rec_nvtx_domain *d, uint64_t id)
{
	(void)d;
	pt_async_end(pt_default(), id);
}

static int nvtx_domain_range_push_ex(struct rec_nvtx_domain *d, const struct rec_nvtx_event_attr *a)
{
	pt_recorder *r = pt_default();
	return push(r, r ? attr_name(r, domain_of(d), a) : 0);
}

static int nvtx_domain_range_pop(struct rec_nvtx_domain *d)
{
	(void)d; /* one stack per thread for all domains (top comment) */
	return pop();
}

static struct rec_nvtx_string *nvtx_domain_register_string_a(struct rec_nvtx_domain *d, const char *s)
{
	pt_recorder *r = pt_default();
	return r ? string_handle(pt_intern_in(r, domain_of(d), s ? s : NVTX_UNNAMED)) : NULL;
}

static struct rec_nvtx_string *nvtx_domain_register_string_w(struct rec_nvtx_domain *d, const wchar_t *s)
{
	char buf[NVTX_NAME_BYTES];
	pt_recorder *r = pt_default();
	if (!r)
		return NULL;
	return string_handle(pt_intern_in(r, domain_of(d), s ? wide_to_utf8(s, buf, sizeof(buf)) : NVTX_UNNAMED));
}

/* Return: the domain's handle; NULL (the default domain) for NULL or "",
 * with no recorder, or when the domain table is full. */
static struct rec_nvtx_domain *nvtx_domain_create_a(const char *name)
{
	pt_recorder *r = pt_default();
	return r ? domain_handle(pt_domain(r, name)) : NULL;
}

static struct rec_nvtx_domain *nvtx_domain_create_w(const wchar_t *name)
{
	char buf[NVTX_NAME_BYTES];
	pt_recorder *r = pt_default();
	if (!r || !name)
		return NULL;
	return domain_handle(pt_domain(r, wide_to_utf8(name, buf, sizeof(buf))));
}

static void nvtx_domain_destroy(struct rec_nvtx_domain *d)
{
	(void)d; /* ids are process-global: the handle stays valid (top comment) */
}

/* nvtxInitialize(): the application asks for the expensive part now, so
 * open the trace here rather than in its first timed range. */
static void nvtx_initialize(const void *reserved)
{
	(void)reserved;
	(void)pt_default();
}

/* ------------------------------------------------------------ the tables */

struct nvtx_slot {
	uint32_t cbid;
	rec_nvtx_fn fn;
};

/* Casts to void (*)(void), the generic function pointer type that
 * -Wcast-function-type accepts; the client casts each slot back. */
#define SLOT(id, f) { (id), (rec_nvtx_fn)(f) }

static const struct nvtx_slot core_slots[] = {
	SLOT(REC_NVTX_CBID_CORE_MarkEx, nvtx_mark_ex),
	SLOT(REC_NVTX_CBID_CORE_MarkA, nvtx_mark_a),
	SLOT(REC_NVTX_CBID_CORE_MarkW, nvtx_mark_w),
	SLOT(REC_NVTX_CBID_CORE_RangeStartEx, nvtx_range_start_ex),
	SLOT(REC_NVTX_CBID_CORE_RangeStartA, nvtx_range_start_a),
	SLOT(REC_NVTX_CBID_CORE_RangeStartW, nvtx_range_start_w),
	SLOT(REC_NVTX_CBID_CORE_RangeEnd, nvtx_range_end),
	SLOT(REC_NVTX_CBID_CORE_RangePushEx, nvtx_range_push_ex),
	SLOT(REC_NVTX_CBID_CORE_RangePushA, nvtx_range_push_a),
	SLOT(REC_NVTX_CBID_CORE_RangePushW, nvtx_range_push_w),
	SLOT(REC_NVTX_CBID_CORE_RangePop, nvtx_range_pop),
	SLOT(REC_NVTX_CBID_CORE_NameOsThreadA, nvtx_name_os_thread_a),
	SLOT(REC_NVTX_CBID_CORE_NameOsThreadW, nvtx_name_os_thread_w),
};

static const struct nvtx_slot core2_slots[] = {
	SLOT(REC_NVTX_CBID_CORE2_DomainMarkEx, nvtx_domain_mark_ex),
	SLOT(REC_NVTX_CBID_CORE2_DomainRangeStartEx, nvtx_domain_range_start_ex),
	SLOT(REC_NVTX_CBID_CORE2_DomainRangeEnd, nvtx_domain_range_end),
	SLOT(REC_NVTX_CBID_CORE2_DomainRangePushEx, nvtx_domain_range_push_ex),
	SLOT(REC_NVTX_CBID_CORE2_DomainRangePop, nvtx_domain_range_pop),
	SLOT(REC_NVTX_CBID_CORE2_DomainRegisterStringA, nvtx_domain_register_string_a),
	SLOT(REC_NVTX_CBID_CORE2_DomainRegisterStringW, nvtx_domain_register_string_w),
	SLOT(REC_NVTX_CBID_CORE2_DomainCreateA, nvtx_domain_create_a),
	SLOT(REC_NVTX_CBID_CORE2_DomainCreateW, nvtx_domain_create_w),
	SLOT(REC_NVTX_CBID_CORE2_DomainDestroy, nvtx_domain_destroy),
	SLOT(REC_NVTX_CBID_CORE2_Initialize, nvtx_initialize),
};

/*
 * install() - Write @n handlers into the client's table for @module.
 * Only ids below the size the client reports are written, and only through
 * non-NULL entries: an older client with a shorter table keeps the rest.
 * Return: handlers written (0 if the client does not know @module).
 */
static unsigned install(const struct rec_nvtx_etbl_callbacks *cb, uint32_t module,
			const struct nvtx_slot *slots, size_t n)
{
	rec_nvtx_fn_table table = NULL;
	unsigned size = 0, written = 0;
	if (!cb->get_module_function_table(module, &table, &size) || !table)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (slots[i].cbid >= size || !table[slots[i].cbid])
			continue;
		*table[slots[i].cbid] = slots[i].fn;
		written++;
	}
	return written;
}

int InitializeInjectionNvtx2(rec_nvtx_get_export_table_fn get_export_table)
{
	if (!get_export_table)
		return 0;
	const struct rec_nvtx_etbl_version_info *vi = get_export_table(REC_NVTX_ETID_VERSIONINFO);
	if (vi && vi->struct_size >= offsetof(struct rec_nvtx_etbl_version_info, set_injection_nvtx_version) +
					    sizeof(vi->set_injection_nvtx_version) &&
	    vi->set_injection_nvtx_version)
		vi->set_injection_nvtx_version(REC_NVTX_VERSION);
	const struct rec_nvtx_etbl_callbacks *cb = get_export_table(REC_NVTX_ETID_CALLBACKS);
	if (!cb || cb->struct_size < sizeof(*cb) || !cb->get_module_function_table)
		return 0;
	unsigned n = install(cb, REC_NVTX_MODULE_CORE, core_slots, PT_ARRAY_SIZE(core_slots));
	n += install(cb, REC_NVTX_MODULE_CORE2, core2_slots, PT_ARRAY_SIZE(core2_slots));
	return n ? 1 : 0;
}
