/* SPDX-License-Identifier: Apache-2.0 */
/* For py_bench.py with LW_PY_EXT: allocation pairs made by C code under the
 * Python frames, as a C extension (PyTorch's dispatcher, pybind11) makes
 * them: Python calls in once, through ctypes, and the pairs are made from
 * DEPTH native frames below that call. Linked against the CPU stand-in
 * runtime, like rt_bench. */
#include <leakwatch/cuda_api.h>

#include <dlfcn.h>

cudaError_t cudaMalloc(void **p, size_t s);
cudaError_t cudaFree(void *p);

#define NOINLINE __attribute__((noinline))
#define ESCAPE(p) __asm__ volatile("" : : "r"(p) : "memory")

typedef cudaError_t (*malloc_fn)(void **, size_t);
typedef cudaError_t (*free_fn)(void *);
/* The lock-free runtime's unhooked entries (lw_bench_ext_pairs_raw). */
static malloc_fn raw_malloc;
static free_fn raw_free;

/* One loop, two ways of calling: the runtime's names through the PLT (as a
 * C extension calls them, the calls leakwatch hooks), or the unhooked
 * entries through pointers. */
#define PAIRS_LOOP(name, alloc, release)                                                           \
    NOINLINE static long name(long pairs) {                                                        \
        long failed = 0;                                                                           \
        for (long i = 0; i < pairs; i++) {                                                         \
            void *p = NULL;                                                                        \
            failed += alloc(&p, 4096) != 0;                                                        \
            failed += release(p) != 0;                                                             \
        }                                                                                          \
        return failed;                                                                             \
    }
PAIRS_LOOP(pairs_loop, cudaMalloc, cudaFree)
PAIRS_LOOP(raw_pairs_loop, raw_malloc, raw_free)

NOINLINE static long down(int depth, long pairs, int raw) {
    if (depth <= 0) return raw ? raw_pairs_loop(pairs) : pairs_loop(pairs);
    long r = down(depth - 1, pairs, raw);
    ESCAPE(depth); /* not a tail call: each level keeps its frame */
    return r;
}

/* Returns the number of failed calls (0 when all went well). */
__attribute__((visibility("default"))) long lw_bench_ext_pairs(long pairs, int depth) {
    return down(depth, pairs, 0);
}

/* The same pairs through the lock-free runtime's unhooked names
 * (fast_cudart.c): leakwatch sees none of them. -1 when the runtime in use
 * has no such names (the test stand-in). */
__attribute__((visibility("default"))) long lw_bench_ext_pairs_raw(long pairs, int depth) {
    if (!raw_malloc) {
        raw_free = (free_fn)dlsym(RTLD_DEFAULT, "lw_bench_raw_cudaFree");
        raw_malloc = (malloc_fn)dlsym(RTLD_DEFAULT, "lw_bench_raw_cudaMalloc");
    }
    if (!raw_malloc || !raw_free) return -1;
    return down(depth, pairs, 1);
}
