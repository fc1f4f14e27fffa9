/* SPDX-License-Identifier: Apache-2.0 */
/* One library built twice (VARIANT 1 and 2, libstackvar1.so and
 * libstackvar2.so) with different frame sizes at the same offsets, so that
 * one loaded where the other was unloaded puts other unwind rules at the
 * same addresses. rt_stacks dlclose allocates through each in turn
 * (docs/stacks.md: cached rules must be dropped at dlclose). */
#include <leakwatch/cuda_api.h>

#include <stddef.h>

cudaError_t cudaMalloc(void **p, size_t s);
cudaError_t cudaFree(void *p);

#define KEEP(x) __asm__ volatile("" : : "r"(x) : "memory")
#if VARIANT == 1
#define PAD 200
#else
#define PAD 328
#endif

__attribute__((noinline)) static int level(int d, size_t size) {
    volatile char pad[PAD];
    pad[0] = (char)d;
    if (d == 0) {
        void *p = NULL;
        if (cudaMalloc(&p, size) != 0) return -1000;
        KEEP(p);
        return pad[0];
    }
    int r = level(d - 1, size);
    KEEP(r);
    return r + pad[0];
}

__attribute__((visibility("default"))) int stackvar_run(int depth, size_t size) {
    int r = level(depth, size);
    KEEP(r);
    return r;
}
