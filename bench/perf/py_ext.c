/* SPDX-License-Identifier: Apache-2.0 */
/* For py_bench.py with LW_PY_EXT: allocation pairs made by C code under the
 * Python frames, as a C extension (PyTorch's dispatcher, pybind11) makes
 * them: Python calls in once, through ctypes, and the pairs are made from
 * DEPTH native frames below that call. Linked against the CPU stand-in
 * runtime, like rt_bench. */
#include <leakwatch/cuda_api.h>

cudaError_t cudaMalloc(void **p, size_t s);
cudaError_t cudaFree(void *p);

#define NOINLINE __attribute__((noinline))
#define ESCAPE(p) __asm__ volatile("" : : "r"(p) : "memory")

NOINLINE static long pairs_loop(long pairs) {
    long failed = 0;
    for (long i = 0; i < pairs; i++) {
        void *p = NULL;
        failed += cudaMalloc(&p, 4096) != 0;
        failed += cudaFree(p) != 0;
    }
    return failed;
}

NOINLINE static long down(int depth, long pairs) {
    if (depth <= 0) return pairs_loop(pairs);
    long r = down(depth - 1, pairs);
    ESCAPE(depth); /* not a tail call: each level keeps its frame */
    return r;
}

/* Returns the number of failed calls (0 when all went well). */
__attribute__((visibility("default"))) long lw_bench_ext_pairs(long pairs, int depth) {
    return down(depth, pairs);
}
