/* SPDX-License-Identifier: Apache-2.0 */
/* A shared allocation wrapper in C: stash() keeps what device_alloc() gives
 * it (the leak), scratch() frees it. Both sites' place to look is
 * device_alloc's call of cudaMalloc; every view must name stash's call of the
 * wrapper, by way of it.
 *
 *   rt_shared_wrapper [STEPS] */
#include "safety.h"

static void *kept[4096];
static int nkept;

NOINLINE static void *device_alloc(size_t size) {
    void *p = NULL;
    CHECK(cudaMalloc(&p, size)); /* WRAPPER-LINE */
    return p;
}

NOINLINE static void stash(void) {
    void *p = device_alloc(512); /* STASH-LINE */
    if (nkept < (int)(sizeof kept / sizeof *kept)) kept[nkept++] = p;
}

NOINLINE static void scratch(void) {
    void *p = device_alloc(1 << 20); /* SCRATCH-LINE */
    CHECK(cudaFree(p));
}

int main(int argc, char **argv) {
    long steps = arg_long(argc, argv, 1, 300);
    for (long i = 0; i < steps; i++) {
        scratch();
        stash();
        lw_call("leakwatch_step");
    }
    printf("ok\n");
    return 0;
}
