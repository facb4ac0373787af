/*
 * tests/gpu/test_gpu_real.c - GPU sections with the machine's own CUDA
 * runtime: no PTZ_CUDA_RUNTIME, so the recorder searches for
 * libcudart.so.13/.12/.11.0/libcudart.so itself (recorder/rec_gpu.c). This
 * program does not link the fake runtime.
 *
 * The outcome is predicted by repeating that search here after pt_close()
 * (not before: the recorder must find the runtime on its own):
 *  - no runtime loadable: GPU timing off, reason "no CUDA runtime found",
 *    gpu_error 0;
 *  - cudaGetDeviceCount fails with e (35 = cudaErrorInsufficientDriver on a
 *    machine with the toolkit and no driver): off, gpu_error == e, and the
 *    reason INSTANT names the error and its number;
 *  - zero devices: off, "no CUDA device", gpu_error 100;
 *  - a device: GPU timing on, and every GPU half launched on the legacy
 *    stream (no work queued) is resolved by pt_close.
 * In every case each CPU section is in the trace, and the ERROR records
 * add up to pt_stats' gpu_dropped.
 */
#include <dlfcn.h>
#include <time.h>

#include "tests/test_util.h"
#include "ptz/recorder.h"

#define N_OUTER 10

static void test_real_runtime(void **state)
{
	(void)state;
	unsetenv("PTZ_CUDA_RUNTIME");
	unsetenv("PTZ_GPU");
	const char *path = tu_path("real.ptz");
	pt_recorder *r = pt_open(path, NULL, 0);
	assert_non_null(r);
	uint32_t A = pt_intern(r, "outer"), B = pt_intern(r, "inner");
	for (int i = 0; i < N_OUTER; i++) {
		pt_gpu_begin(r, A, NULL);
		pt_gpu_begin(r, B, NULL);
		pt_gpu_end(r, B, NULL);
		pt_gpu_end(r, A, NULL);
		struct timespec ts = { 0, 2000000 };
		nanosleep(&ts, NULL);
	}
	assert_int_equal(pt_close(r), 0);
	struct pt_stats_info st;
	pt_stats(r, &st, sizeof(st));

	/* the recorder's search, in its order */
	static const char *const names[] = { "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0",
					     "libcudart.so" };
	void *lib = NULL;
	const char *found = NULL;
	for (size_t i = 0; !lib && i < sizeof(names) / sizeof(names[0]); i++)
		if ((lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL)))
			found = names[i];
	int want_state = PT_GPU_OFF, want_err = 0, n = 0;
	char want_reason[160] = "no CUDA runtime found";
	if (lib) {
		int (*count)(int *);
		const char *(*name)(int);
		*(void **)&count = dlsym(lib, "cudaGetDeviceCount"); /* POSIX dlsym idiom */
		*(void **)&name = dlsym(lib, "cudaGetErrorName");
		assert_non_null(count);
		assert_non_null(name);
		int e = count(&n);
		if (e != 0) {
			want_err = e;
			snprintf(want_reason, sizeof(want_reason), "cudaGetDeviceCount: %s (%d)", name(e), e);
		} else if (n <= 0) {
			want_err = 100;
			snprintf(want_reason, sizeof(want_reason), "no CUDA device");
		} else {
			want_state = PT_GPU_ON;
		}
	}
	print_message("# runtime: %s, expected: %s\n", found ? found : "none",
		      want_state == PT_GPU_ON ? "GPU timing on" : want_reason);
	assert_int_equal(st.gpu_state, want_state);
	assert_int_equal(st.gpu_error, want_err);

	struct tu_trace tr;
	tu_read(path, &tr);
	uint64_t begins = 0, ends = 0, launches = 0, ranges = 0, off = 0, gpu_errs = 0, instants = 0;
	const char *reason = NULL;
	for (size_t k = 0; k < tr.nt; k++)
		for (size_t i = 0; i < tr.t[k].n; i++) {
			const struct pt_record *x = &tr.t[k].recs[i];
			begins += x->kind == PT_REC_BEGIN && (x->id == A || x->id == B);
			ends += x->kind == PT_REC_END && (x->id == A || x->id == B);
			launches += x->kind == PT_REC_GPU_LAUNCH;
			ranges += x->kind == PT_REC_GPU_RANGE;
			if (x->kind == PT_REC_INSTANT) {
				instants++;
				reason = pt_reader_string(tr.rd, x->id, NULL);
			}
		}
	/* ERROR records may sit in any thread's chunks or in meta chunks */
	pt_reader_rewind(tr.rd);
	struct pt_chunk_info ci;
	struct pt_record rec;
	while (pt_reader_next_chunk(tr.rd, PT_READER_ALL_CHUNKS, &ci, sizeof(ci)) == 1)
		while (pt_reader_next_record(tr.rd, &rec, sizeof(rec)) == 1)
			if (rec.kind == PT_REC_ERROR && rec.aux >= PT_ERRC_GPU_POOL_EMPTY &&
			    rec.aux != PT_ERRC_GPU_EARLY_START) {
				gpu_errs += rec.value;
				off += rec.aux == PT_ERRC_GPU_OFF ? rec.value : 0;
			}
	assert_int_equal(begins, 2 * N_OUTER);
	assert_int_equal(ends, 2 * N_OUTER);
	assert_int_equal(gpu_errs, st.gpu_dropped);
	if (want_state == PT_GPU_OFF) {
		assert_int_equal(instants, 1);
		assert_non_null(reason);
		print_message("# reason: \"%s\"\n", reason);
		assert_true(strncmp(reason, "GPU timing off: ", 16) == 0);
		assert_non_null(strstr(reason, want_reason));
		assert_int_equal(off, 2 * N_OUTER);
		assert_int_equal(launches, 0);
		assert_int_equal(ranges, 0);
	} else {
		/* a real GPU: the first sections may find the pool still empty */
		assert_int_equal(st.gpu_launched, launches);
		assert_int_equal(st.gpu_ranges, launches);
		assert_int_equal(ranges, launches);
		assert_int_equal(launches + st.gpu_dropped, 2 * N_OUTER);
	}
	tu_free(&tr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_runtime),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
