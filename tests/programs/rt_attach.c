/* SPDX-License-Identifier: Apache-2.0 */
/* A job on the CUDA runtime (linked dynamically) that leaks SIZE bytes per
 * step from leak_attach_rt; it allocates some memory before it says ready
 * and frees it at step 5 (frees of allocations an attach never saw). See
 * attach.h. */
#include "attach.h"

cudaError_t cudaMalloc(void **p, size_t s);
cudaError_t cudaFree(void *p);

static void *early[4];

NOINLINE static int leak_attach_rt(size_t size) {
    void *p = NULL;
    return (int)cudaMalloc(&p, size);
}

NOINLINE static int churn_attach_rt(size_t size) {
    void *p = NULL;
    int r = (int)cudaMalloc(&p, size);
    return r ? r : (int)cudaFree(p);
}

static int attach_step(long i, size_t size) {
    if (i == 5)
        for (int k = 0; k < 4; k++)
            cudaFree(early[k]);
    return leak_attach_rt(size) | churn_attach_rt(size);
}

int main(int argc, char **argv) {
    for (int k = 0; k < 4; k++)
        CHECK(cudaMalloc(&early[k], 4096));
    return attach_main(argc, argv);
}
