/*
 * tests/unit/test_nvtx_abi.c - recorder/rec_nvtx_abi.h against the real
 * nvtx3 headers, and libptz's handlers driven by real nvtx3 client code.
 *
 * Built only where nvtx3/nvToolsExt.h is found (tests/meson.build).
 *
 * Invariants covered:
 *  - Compile time: every size, offset and id of our ABI copy (event
 *    attributes, message union, callback modules and ids, export-table ids
 *    and structures, the entry point's type) equals nvtx3's.
 *  - Run time: this executable statically injects libptz (nvtx3's
 *    InitializeInjectionNvtx2_fnptr, so no environment variable and no
 *    dlopen), and nvtx3's own code calls our handlers: push/pop levels,
 *    negative pop with nothing open, domain and registered-string handles,
 *    start/end ids; the trace holds the names with their domains, and an
 *    attribute structure built by nvtx3's macros (version, size, color,
 *    payload set) is read at the right offsets.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptz/format.h"
#include "ptz/recorder.h"
#include "recorder/rec_nvtx_abi.h"
#include "tests/test_util.h"

/* Static injection (nvtx3/nvtxDetail/nvtxInit.h): a normal definition of
 * the pointer nvtx3 checks when NVTX_INJECTION64_PATH is unset. */
#define NVTX_STATIC_INJECTION_IMPL
int (*InitializeInjectionNvtx2_fnptr)(rec_nvtx_get_export_table_fn) = InitializeInjectionNvtx2;

#include <nvtx3/nvToolsExt.h> /* after the definition above */

/* ------------------------------------------------------ compile time */

#define SAME_OFFSET(ours, field, theirs, tfield) \
	_Static_assert(offsetof(ours, field) == offsetof(theirs, tfield), #ours "." #field)
#define SAME_SIZE(ours, theirs) _Static_assert(sizeof(ours) == sizeof(theirs), "sizeof " #ours)
#define SAME_VALUE(ours, theirs) _Static_assert((long long)(ours) == (long long)(theirs), #ours)
#define SAME_TYPE(ours, theirs) _Static_assert(__builtin_types_compatible_p(ours, theirs), #ours)

SAME_SIZE(struct rec_nvtx_event_attr, nvtxEventAttributes_t);
SAME_OFFSET(struct rec_nvtx_event_attr, version, nvtxEventAttributes_t, version);
SAME_OFFSET(struct rec_nvtx_event_attr, size, nvtxEventAttributes_t, size);
SAME_OFFSET(struct rec_nvtx_event_attr, category, nvtxEventAttributes_t, category);
SAME_OFFSET(struct rec_nvtx_event_attr, color_type, nvtxEventAttributes_t, colorType);
SAME_OFFSET(struct rec_nvtx_event_attr, color, nvtxEventAttributes_t, color);
SAME_OFFSET(struct rec_nvtx_event_attr, payload_type, nvtxEventAttributes_t, payloadType);
SAME_OFFSET(struct rec_nvtx_event_attr, reserved0, nvtxEventAttributes_t, reserved0);
SAME_OFFSET(struct rec_nvtx_event_attr, payload, nvtxEventAttributes_t, payload);
SAME_OFFSET(struct rec_nvtx_event_attr, message_type, nvtxEventAttributes_t, messageType);
SAME_OFFSET(struct rec_nvtx_event_attr, message, nvtxEventAttributes_t, message);
SAME_SIZE(union rec_nvtx_payload, ((nvtxEventAttributes_t *)0)->payload);
SAME_SIZE(union rec_nvtx_message, nvtxMessageValue_t);
SAME_VALUE(REC_NVTX_EVENT_ATTR_MIN_SIZE, NVTX_EVENT_ATTRIB_STRUCT_SIZE);
SAME_VALUE(REC_NVTX_VERSION, NVTX_VERSION);
SAME_VALUE(REC_NVTX_NO_PUSH_POP_TRACKING, NVTX_NO_PUSH_POP_TRACKING);

SAME_VALUE(REC_NVTX_MESSAGE_UNKNOWN, NVTX_MESSAGE_UNKNOWN);
SAME_VALUE(REC_NVTX_MESSAGE_ASCII, NVTX_MESSAGE_TYPE_ASCII);
SAME_VALUE(REC_NVTX_MESSAGE_UNICODE, NVTX_MESSAGE_TYPE_UNICODE);
SAME_VALUE(REC_NVTX_MESSAGE_REGISTERED, NVTX_MESSAGE_TYPE_REGISTERED);

SAME_VALUE(REC_NVTX_MODULE_CORE, NVTX_CB_MODULE_CORE);
SAME_VALUE(REC_NVTX_MODULE_CUDA, NVTX_CB_MODULE_CUDA);
SAME_VALUE(REC_NVTX_MODULE_OPENCL, NVTX_CB_MODULE_OPENCL);
SAME_VALUE(REC_NVTX_MODULE_CUDART, NVTX_CB_MODULE_CUDART);
SAME_VALUE(REC_NVTX_MODULE_CORE2, NVTX_CB_MODULE_CORE2);
SAME_VALUE(REC_NVTX_MODULE_SYNC, NVTX_CB_MODULE_SYNC);

#define CORE_ID(x) SAME_VALUE(REC_NVTX_CBID_CORE_##x, NVTX_CBID_CORE_##x)
CORE_ID(MarkEx);
CORE_ID(MarkA);
CORE_ID(MarkW);
CORE_ID(RangeStartEx);
CORE_ID(RangeStartA);
CORE_ID(RangeStartW);
CORE_ID(RangeEnd);
CORE_ID(RangePushEx);
CORE_ID(RangePushA);
CORE_ID(RangePushW);
CORE_ID(RangePop);
CORE_ID(NameCategoryA);
CORE_ID(NameCategoryW);
CORE_ID(NameOsThreadA);
CORE_ID(NameOsThreadW);
CORE_ID(SIZE);

#define CORE2_ID(x) SAME_VALUE(REC_NVTX_CBID_CORE2_##x, NVTX_CBID_CORE2_##x)
CORE2_ID(DomainMarkEx);
CORE2_ID(DomainRangeStartEx);
CORE2_ID(DomainRangeEnd);
CORE2_ID(DomainRangePushEx);
CORE2_ID(DomainRangePop);
CORE2_ID(DomainResourceCreate);
CORE2_ID(DomainResourceDestroy);
CORE2_ID(DomainNameCategoryA);
CORE2_ID(DomainNameCategoryW);
CORE2_ID(DomainRegisterStringA);
CORE2_ID(DomainRegisterStringW);
CORE2_ID(DomainCreateA);
CORE2_ID(DomainCreateW);
CORE2_ID(DomainDestroy);
CORE2_ID(Initialize);
CORE2_ID(SIZE);

SAME_VALUE(REC_NVTX_ETID_CALLBACKS, NVTX_ETID_CALLBACKS);
SAME_VALUE(REC_NVTX_ETID_RESERVED0, NVTX_ETID_RESERVED0);
SAME_VALUE(REC_NVTX_ETID_VERSIONINFO, NVTX_ETID_VERSIONINFO);

SAME_SIZE(struct rec_nvtx_etbl_callbacks, NvtxExportTableCallbacks);
SAME_OFFSET(struct rec_nvtx_etbl_callbacks, struct_size, NvtxExportTableCallbacks, struct_size);
SAME_OFFSET(struct rec_nvtx_etbl_callbacks, get_module_function_table, NvtxExportTableCallbacks,
	    GetModuleFunctionTable);
SAME_SIZE(struct rec_nvtx_etbl_version_info, NvtxExportTableVersionInfo);
SAME_OFFSET(struct rec_nvtx_etbl_version_info, struct_size, NvtxExportTableVersionInfo, struct_size);
SAME_OFFSET(struct rec_nvtx_etbl_version_info, version, NvtxExportTableVersionInfo, version);
SAME_OFFSET(struct rec_nvtx_etbl_version_info, reserved0, NvtxExportTableVersionInfo, reserved0);
SAME_OFFSET(struct rec_nvtx_etbl_version_info, set_injection_nvtx_version, NvtxExportTableVersionInfo,
	    SetInjectionNvtxVersion);

/* Function types: GCC makes an enum compatible with its underlying
 * unsigned int, so even GetModuleFunctionTable's NvtxCallbackModule
 * parameter matches our uint32_t. */
SAME_SIZE(NvtxCallbackModule, uint32_t);
SAME_TYPE(rec_nvtx_fn, NvtxFunctionPointer);
SAME_TYPE(rec_nvtx_fn_table, NvtxFunctionTable);
SAME_TYPE(rec_nvtx_get_export_table_fn, NvtxGetExportTableFunc_t);
SAME_TYPE(__typeof__(&InitializeInjectionNvtx2), NvtxInitializeInjectionNvtxFunc_t);
SAME_TYPE(__typeof__(((struct rec_nvtx_etbl_callbacks *)0)->get_module_function_table),
	  __typeof__(((NvtxExportTableCallbacks *)0)->GetModuleFunctionTable));
SAME_TYPE(__typeof__(((struct rec_nvtx_etbl_version_info *)0)->set_injection_nvtx_version),
	  __typeof__(((NvtxExportTableVersionInfo *)0)->SetInjectionNvtxVersion));

/* --------------------------------------------------------- run time */

static const char *trace_path(void)
{
	return tu_path("nvtx-abi.ptz");
}

static void test_real_client_levels_and_handles(void **state)
{
	(void)state;
	assert_true(nvtxRangePop() < 0); /* nothing open; also runs nvtx3's init */
	assert_int_equal(nvtxRangePushA("x"), 0);
	nvtxEventAttributes_t y = { 0 };
	y.version = NVTX_VERSION;
	y.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	y.messageType = NVTX_MESSAGE_TYPE_ASCII;
	y.message.ascii = "y";
	assert_int_equal(nvtxRangePushEx(&y), 1);
	assert_int_equal(nvtxRangePop(), 1);
	assert_int_equal(nvtxRangePop(), 0);
	assert_true(nvtxRangePop() < 0);
	assert_true(nvtxRangePop() != NVTX_NO_PUSH_POP_TRACKING);

	nvtxDomainHandle_t d = nvtxDomainCreateA("abi");
	assert_non_null(d);
	nvtxStringHandle_t s = nvtxDomainRegisterStringA(d, "reg");
	assert_non_null(s);
	assert_true(s == nvtxDomainRegisterStringA(d, "reg"));
	nvtxEventAttributes_t r = { 0 };
	r.version = NVTX_VERSION;
	r.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	r.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	r.message.registered = s;
	assert_int_equal(nvtxDomainRangePushEx(d, &r), 0);
	assert_int_equal(nvtxDomainRangePop(d), 0);

	nvtxRangeId_t a = nvtxRangeStartA("as"), b = nvtxDomainRangeStartEx(d, &r);
	assert_true(a != 0 && b != 0 && a != b);
	nvtxRangeEnd(a);
	nvtxDomainRangeEnd(d, b);

	/* every field set, as an application fills it */
	nvtxEventAttributes_t m = { 0 };
	m.version = NVTX_VERSION;
	m.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	m.category = 7;
	m.colorType = NVTX_COLOR_ARGB;
	m.color = 0xff00ff00u;
	m.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
	m.payload.dValue = 2.5;
	m.messageType = NVTX_MESSAGE_TYPE_ASCII;
	m.message.ascii = "ex-mark";
	nvtxDomainMarkEx(d, &m);
	nvtxMarkA("mk");
	nvtxNameOsThreadA(0, "abi-main");
}

static void test_real_client_trace(void **state)
{
	(void)state;
	assert_int_equal(pt_close(pt_default()), 0);
	struct tu_trace tr;
	tu_read(trace_path(), &tr);
	assert_int_equal(tr.nt, 1);
	assert_int_equal(tr.lost_records, 0);
	assert_int_equal(tr.errors, 0);
	char got[1024] = "";
	size_t len = 0;
	for (size_t i = 0; i < tr.t[0].n; i++) {
		const struct pt_record *rec = &tr.t[0].recs[i];
		const char *k = rec->kind == PT_REC_BEGIN		? "B"
				: rec->kind == PT_REC_END		? "E"
				: rec->kind == PT_REC_INSTANT		? "I"
				: rec->kind == PT_REC_ASYNC_BEGIN	? "AB"
				: rec->kind == PT_REC_ASYNC_END		? "AE"
									: NULL;
		if (!k)
			continue;
		uint32_t dom = 0;
		const char *s = rec->kind == PT_REC_ASYNC_END ? "" : pt_reader_string(tr.rd, rec->id, &dom);
		assert_non_null(s);
		len += (size_t)snprintf(got + len, sizeof(got) - len, "%s%s:%s:%s", len ? " " : "", k,
					pt_reader_domain(tr.rd, dom), s);
		assert_true(len < sizeof(got));
	}
	assert_string_equal(got, "B::x B::y E::y E::x B:abi:reg E:abi:reg AB::as AB:abi:reg AE:: AE:: "
				 "I:abi:ex-mark I::mk");
	struct pt_thread_info ti;
	assert_int_equal(pt_reader_thread(tr.rd, 0, &ti, sizeof(ti)), 1);
	assert_string_equal(ti.name, "abi-main");
	tu_free(&tr);
	unlink(trace_path());
	rmdir(tu_tmpdir());
}

int main(void)
{
	unsetenv("NVTX_INJECTION64_PATH"); /* it would win over the static injection */
	setenv("PTZ_TRACE", trace_path(), 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_client_levels_and_handles),
		cmocka_unit_test(test_real_client_trace),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
