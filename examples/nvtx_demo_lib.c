/*
 * examples/nvtx_demo_lib.c - second NVTX module of examples/nvtx_demo (see
 * nvtx_demo_lib.h). Plain NVTX, no ptz code.
 */
#include <nvtx3/nvToolsExt.h> /* header-only NVTX v3 */

#include "nvtx_demo_lib.h"

int nvtx_demo_lib_work(int n)
{
	int wrong = 0, untracked = 0;
	for (int i = 0; i < n; i++) {
		int push = nvtxRangePushA("lib");
		nvtxMarkA("lib-mark");
		int pop = nvtxRangePop();
		if (push == NVTX_NO_PUSH_POP_TRACKING && pop == NVTX_NO_PUSH_POP_TRACKING)
			untracked++;
		else if (push != 0 || pop != 0)
			wrong++;
	}
	return n > 0 && untracked == n ? -1 : wrong;
}
