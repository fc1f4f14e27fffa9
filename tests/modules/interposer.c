/* SPDX-License-Identifier: Apache-2.0 */
/* A second interposer of CUDA functions, as another tool may preload beside
 * leakwatch (before or after it): it counts the calls it sees and forwards
 * each to the next definition (dlsym(RTLD_NEXT)), and says at exit how many
 * it saw, on stderr. Built as build/tests/lib/libinterposer.so. */
#include "fake_common.h"

#include <stdatomic.h>
#include <stdio.h>

#define EXPORT __attribute__((visibility("default")))

static atomic_int n_malloc, n_alloc;

EXPORT cudaError_t cudaMalloc(void **p, size_t size) {
    atomic_fetch_add(&n_malloc, 1);
    cudaError_t (*next)(void **, size_t) =
        (cudaError_t(*)(void **, size_t))dlsym(RTLD_NEXT, "cudaMalloc");
    return next ? next(p, size) : cudaErrorInitializationError;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t size) {
    atomic_fetch_add(&n_alloc, 1);
    CUresult (*next)(CUdeviceptr *, size_t) =
        (CUresult(*)(CUdeviceptr *, size_t))dlsym(RTLD_NEXT, "cuMemAlloc_v2");
    return next ? next(p, size) : CUDA_ERROR_NOT_INITIALIZED;
}

__attribute__((destructor)) static void say(void) {
    fprintf(stderr, "interposer: cudaMalloc=%d cuMemAlloc_v2=%d\n", atomic_load(&n_malloc),
            atomic_load(&n_alloc));
}
