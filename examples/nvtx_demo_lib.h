/*
 * examples/nvtx_demo_lib.h - the second NVTX module of examples/nvtx_demo:
 * a shared library that includes the nvtx3 headers itself, so it has its own
 * NVTX instance and initializes the injection separately (a second
 * InitializeInjectionNvtx2() call in the process).
 */
#ifndef PTZ_NVTX_DEMO_LIB_H
#define PTZ_NVTX_DEMO_LIB_H

/**
 * nvtx_demo_lib_work() - @n times: push "lib", mark "lib-mark", pop.
 * @n: repetitions, >= 0.
 * Return: the number of push/pop return values that were not the levels a
 *         tool reports (0 and 0), or -1 if every one was NVTX's "no tool"
 *         value (NVTX_NO_PUSH_POP_TRACKING); 0 when @n is 0.
 */
__attribute__((visibility("default"))) int nvtx_demo_lib_work(int n);

#endif /* PTZ_NVTX_DEMO_LIB_H */
