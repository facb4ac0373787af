/*
 * recorder/rec_nvtx_abi.h - our own copy of the NVTX v3 injection ABI: the
 * structures, callback ids and export-table ids that an NVTX client (the
 * header-only nvtx3 implementation compiled into each application module)
 * and an injection library (libptz, recorder/rec_nvtx.c) exchange.
 *
 * Why a copy: libptz builds without the CUDA toolkit, so it cannot include
 * nvtx3/nvToolsExt.h. The layouts below follow nvtx3 (CUDA 13.0, NVTX
 * load sequence version 2): nvToolsExt.h (nvtxEventAttributes_v2,
 * nvtxMessageValue_t, NVTX_NO_PUSH_POP_TRACKING) and nvtxDetail/nvtxTypes.h
 * (NvtxCallbackModule, NvtxCallbackIdCore, NvtxCallbackIdCore2,
 * NvtxExportTableID, NvtxExportTableCallbacks, NvtxExportTableVersionInfo).
 * They are frozen ABI: NVTX only appends ids and fields. Where the nvtx3
 * headers are installed, tests/unit/test_nvtx_abi.c static-asserts every
 * size, offset and id here against them.
 *
 * Protocol (nvtx3/nvtxDetail/nvtxInit.h, nvtxImpl.h): on its first NVTX call a
 * module dlopen()s $NVTX_INJECTION64_PATH, calls the exported
 * InitializeInjectionNvtx2() with its get-export-table function, and the
 * tool writes its handlers through the module's function tables. Every
 * module that includes NVTX does this once, so the entry point runs once
 * per module.
 */
#ifndef PTZ_REC_NVTX_ABI_H
#define PTZ_REC_NVTX_ABI_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint16_t, uint32_t, uint64_t, int32_t, int64_t */
#include <wchar.h>  /* wchar_t */

#include "ptz/errors.h" /* PT_API */

#ifdef __cplusplus
extern "C" {
#endif

/* The NVTX API version these layouts follow (NVTX_VERSION); given to the
 * client through SetInjectionNvtxVersion. */
#define REC_NVTX_VERSION 3u

/* Push with no tool attached returns this (NVTX_NO_PUSH_POP_TRACKING). */
#define REC_NVTX_NO_PUSH_POP_TRACKING (-2)

/* ==== Event attributes (nvtxEventAttributes_v2) ==== */

/** enum rec_nvtx_message_type - nvtxMessageType_t. */
enum rec_nvtx_message_type {
	REC_NVTX_MESSAGE_UNKNOWN = 0,
	REC_NVTX_MESSAGE_ASCII = 1,     /* message.ascii: NUL-terminated char string */
	REC_NVTX_MESSAGE_UNICODE = 2,   /* message.unicode: NUL-terminated wchar_t string */
	REC_NVTX_MESSAGE_REGISTERED = 3 /* message.registered: nvtxDomainRegisterString handle */
};

/* Opaque handles the tool hands out (nvtxDomainHandle_t,
 * nvtxStringHandle_t); their meaning is the tool's (rec_nvtx.c). */
struct rec_nvtx_domain;
struct rec_nvtx_string;

/** union rec_nvtx_message - nvtxMessageValue_t. */
union rec_nvtx_message {
	const char *ascii;
	const wchar_t *unicode;
	const struct rec_nvtx_string *registered;
};

/** union rec_nvtx_payload - nvtxEventAttributes_v2.payload (union payload_t). */
union rec_nvtx_payload {
	uint64_t ull_value;
	int64_t ll_value;
	double d_value;
	uint32_t ui_value;
	int32_t i_value;
	float f_value;
};

/**
 * struct rec_nvtx_event_attr - nvtxEventAttributes_t (version 2 layout,
 * unchanged in NVTX 3; 48 bytes on LP64).
 * @version:      NVTX_VERSION of the client (1..3 share this layout).
 * @size:         sizeof the client's structure; a tool reads only fields
 *                that lie within it.
 * @category:     user category id (0 = none).
 * @color_type:   nvtxColorType_t (0 unknown, 1 ARGB).
 * @color:        ARGB color.
 * @payload_type: nvtxPayloadType_t.
 * @reserved0:    padding.
 * @payload:      numeric payload.
 * @message_type: enum rec_nvtx_message_type.
 * @message:      the event's name.
 */
struct rec_nvtx_event_attr {
	uint16_t version;
	uint16_t size;
	uint32_t category;
	int32_t color_type;
	uint32_t color;
	int32_t payload_type;
	int32_t reserved0;
	union rec_nvtx_payload payload;
	int32_t message_type;
	union rec_nvtx_message message;
};

/* Smallest @size whose structure holds @message: older or foreign clients
 * with a shorter structure get no name read from beyond it. */
#define REC_NVTX_EVENT_ATTR_MIN_SIZE \
	(offsetof(struct rec_nvtx_event_attr, message) + sizeof(union rec_nvtx_message))

/* ==== Callback modules and ids (nvtxTypes.h) ==== */

/** enum rec_nvtx_module - NvtxCallbackModule (only those used here). */
enum rec_nvtx_module {
	REC_NVTX_MODULE_CORE = 1,  /* non-domain API (nvtxMarkA, nvtxRangePushA, ...) */
	REC_NVTX_MODULE_CUDA = 2,
	REC_NVTX_MODULE_OPENCL = 3,
	REC_NVTX_MODULE_CUDART = 4,
	REC_NVTX_MODULE_CORE2 = 5, /* domains, registered strings, nvtxInitialize */
	REC_NVTX_MODULE_SYNC = 6
};

/** enum rec_nvtx_cbid_core - NvtxCallbackIdCore. */
enum rec_nvtx_cbid_core {
	REC_NVTX_CBID_CORE_MarkEx = 1,
	REC_NVTX_CBID_CORE_MarkA = 2,
	REC_NVTX_CBID_CORE_MarkW = 3,
	REC_NVTX_CBID_CORE_RangeStartEx = 4,
	REC_NVTX_CBID_CORE_RangeStartA = 5,
	REC_NVTX_CBID_CORE_RangeStartW = 6,
	REC_NVTX_CBID_CORE_RangeEnd = 7,
	REC_NVTX_CBID_CORE_RangePushEx = 8,
	REC_NVTX_CBID_CORE_RangePushA = 9,
	REC_NVTX_CBID_CORE_RangePushW = 10,
	REC_NVTX_CBID_CORE_RangePop = 11,
	REC_NVTX_CBID_CORE_NameCategoryA = 12,
	REC_NVTX_CBID_CORE_NameCategoryW = 13,
	REC_NVTX_CBID_CORE_NameOsThreadA = 14,
	REC_NVTX_CBID_CORE_NameOsThreadW = 15,
	REC_NVTX_CBID_CORE_SIZE = 16
};

/** enum rec_nvtx_cbid_core2 - NvtxCallbackIdCore2. */
enum rec_nvtx_cbid_core2 {
	REC_NVTX_CBID_CORE2_DomainMarkEx = 1,
	REC_NVTX_CBID_CORE2_DomainRangeStartEx = 2,
	REC_NVTX_CBID_CORE2_DomainRangeEnd = 3,
	REC_NVTX_CBID_CORE2_DomainRangePushEx = 4,
	REC_NVTX_CBID_CORE2_DomainRangePop = 5,
	REC_NVTX_CBID_CORE2_DomainResourceCreate = 6,
	REC_NVTX_CBID_CORE2_DomainResourceDestroy = 7,
	REC_NVTX_CBID_CORE2_DomainNameCategoryA = 8,
	REC_NVTX_CBID_CORE2_DomainNameCategoryW = 9,
	REC_NVTX_CBID_CORE2_DomainRegisterStringA = 10,
	REC_NVTX_CBID_CORE2_DomainRegisterStringW = 11,
	REC_NVTX_CBID_CORE2_DomainCreateA = 12,
	REC_NVTX_CBID_CORE2_DomainCreateW = 13,
	REC_NVTX_CBID_CORE2_DomainDestroy = 14,
	REC_NVTX_CBID_CORE2_Initialize = 15,
	REC_NVTX_CBID_CORE2_SIZE = 16
};

/* ==== Export tables ==== */

/** enum rec_nvtx_etid - NvtxExportTableID. */
enum rec_nvtx_etid {
	REC_NVTX_ETID_CALLBACKS = 1,  /* struct rec_nvtx_etbl_callbacks */
	REC_NVTX_ETID_RESERVED0 = 2,
	REC_NVTX_ETID_VERSIONINFO = 3 /* struct rec_nvtx_etbl_version_info */
};

/* NvtxFunctionPointer: an uncallable generic function pointer, cast to the
 * slot's real type by the client. */
typedef void (*rec_nvtx_fn)(void);

/* NvtxFunctionTable: an array, indexed by callback id, of pointers to the
 * client's function-pointer variables; entry 0 is unused. */
typedef rec_nvtx_fn **rec_nvtx_fn_table;

/**
 * struct rec_nvtx_etbl_callbacks - NvtxExportTableCallbacks.
 * @struct_size: sizeof the client's structure.
 * @get_module_function_table: stores @module's table in *out_table and in
 *   *out_size the module's callback-id count (NVTX_CBID_<module>_SIZE of
 *   the client; the table has one more, NULL, entry), so a tool may write
 *   ids 1 .. *out_size - 1 only; returns 0 for a module the client does
 *   not know.
 */
struct rec_nvtx_etbl_callbacks {
	size_t struct_size;
	int (*get_module_function_table)(uint32_t module, rec_nvtx_fn_table *out_table,
					 unsigned int *out_size);
};

/**
 * struct rec_nvtx_etbl_version_info - NvtxExportTableVersionInfo.
 * @struct_size:               sizeof the client's structure.
 * @version:                   the client's NVTX_VERSION.
 * @reserved0:                 padding.
 * @set_injection_nvtx_version: the tool reports the NVTX version it
 *                             implements (currently ignored by clients).
 */
struct rec_nvtx_etbl_version_info {
	size_t struct_size;
	uint32_t version;
	uint32_t reserved0;
	void (*set_injection_nvtx_version)(uint32_t version);
};

/* NvtxGetExportTableFunc_t: returns the table with id @etid or NULL. */
typedef const void *(*rec_nvtx_get_export_table_fn)(uint32_t etid);

/**
 * InitializeInjectionNvtx2() - NVTX injection entry point (the one symbol
 * libptz exports besides its public API; not declared in include/ptz/).
 * @get_export_table: the calling module's export-table getter; NULL fails.
 *
 * Writes libptz's handlers into the calling module's CORE and CORE2
 * function tables (recorder/rec_nvtx.c lists them). Opens nothing: the
 * handlers record into pt_default(), which opens $PTZ_TRACE on the first
 * handler call and is finalized at exit; without PTZ_TRACE they record
 * nothing. Idempotent: calling it again for the same or another module only
 * (re)writes that module's table.
 * Context: any thread, possibly during static initialization of the
 *          module; no allocation, no I/O, never touches CUDA.
 * Return: 1 when at least one handler was installed; 0 when the client
 *         offers no usable callback table (NVTX then unloads the library
 *         and turns every call into a no-op).
 */
PT_API int InitializeInjectionNvtx2(rec_nvtx_get_export_table_fn get_export_table);

#ifdef __cplusplus
}
#endif
#endif /* PTZ_REC_NVTX_ABI_H */
