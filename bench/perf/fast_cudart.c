/* SPDX-License-Identifier: Apache-2.0 */
/* A lock-free stand-in for libcudart.so, for the benchmark's thread-scaling
 * rows only (built as BUILD/bench/lib/libcudart.so and put first on
 * LD_LIBRARY_PATH). The test stand-in (tests/stubs) serialises every
 * allocation on one driver lock, and with 8 threads on 2 cores that lock's
 * convoys (futex sleeps and wake-ups) swamp what leakwatch itself adds. Here
 * each thread hands out its own fake device addresses, most recently freed
 * first, so threads share nothing and what grows with threads is leakwatch's.
 *
 * Each entry is exported twice: as the runtime's name, which leakwatch
 * hooks, and as lw_bench_raw_NAME, which it does not know, so that one
 * process can time the same pairs without leakwatch and with it, batch
 * after batch (py_bench.py's LW_PY_INTERLEAVE).
 *
 * It loads the test stand-in driver (libcuda.so.1) and initialises it, so that
 * leakwatch finds cuCtxGetDevice as it does beside a real runtime. */
#include <leakwatch/cuda_api.h>

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#define API __attribute__((visibility("default")))
#define FREE_MAX 64

static _Atomic uintptr_t next_thread_base = 0x700000000000u;
static __thread uintptr_t base, bump;
static __thread uintptr_t freed[FREE_MAX];
static __thread int nfreed;

__attribute__((constructor)) static void load_driver(void) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    CUresult (*init)(unsigned) = h ? (CUresult(*)(unsigned))dlsym(h, "cuInit") : NULL;
    if (!init || init(0) != CUDA_SUCCESS)
        fprintf(stderr, "fast_cudart: no stand-in driver; device lookups will fail\n");
}

static cudaError_t take(void **p, size_t size) {
    if (!p) return cudaErrorInvalidValue;
    if (nfreed) {
        *p = (void *)freed[--nfreed];
        return cudaSuccess;
    }
    if (!base) base = bump = atomic_fetch_add(&next_thread_base, (uintptr_t)1 << 36);
    *p = (void *)bump;
    bump += (size + 511) & ~(size_t)511;
    return cudaSuccess;
}

static cudaError_t give(void *p) {
    if (p && nfreed < FREE_MAX) freed[nfreed++] = (uintptr_t)p;
    return cudaSuccess;
}

API cudaError_t cudaMalloc(void **p, size_t size) {
    return take(p, size);
}
API cudaError_t cudaFree(void *p) {
    return give(p);
}
API cudaError_t cudaMallocAsync_ptsz(void **p, size_t size, cudaStream_t s) {
    return take(p, size);
}
API cudaError_t cudaFreeAsync_ptsz(void *p, cudaStream_t s) {
    return give(p);
}

/* The unhooked names (see the top). */
API cudaError_t lw_bench_raw_cudaMalloc(void **p, size_t size) {
    return take(p, size);
}
API cudaError_t lw_bench_raw_cudaFree(void *p) {
    return give(p);
}
