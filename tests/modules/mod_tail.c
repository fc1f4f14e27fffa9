/* SPDX-License-Identifier: Apache-2.0 */
/* A module whose wrappers end in a tail call to CUDA, as an optimising
 * compiler makes them: `return cudaMalloc(p, n);` compiled at -O2 is
 * `jmp cudaMalloc@PLT`, so the runtime function (under leakwatch: its export)
 * returns straight to the module's caller, and its return address lies in the
 * caller, not in the module. Opened RTLD_LOCAL by tests/programs/dl_tailcall.c
 * (and by tests/python/tail_ctypes.py) from a program whose global scope holds
 * no CUDA runtime. Built several ways (Makefile, "tail-call modules"):
 *   libmod_tail.so     -O2, linked to the stand-in runtime (libcudart.so.13) and driver
 *   libmod_tail12.so   the same on the second stand-in runtime, libcudart.so.12
 *   libmod_tailno.so   -O2 -fno-optimize-sibling-calls: ordinary calls, for comparison
 *   libmod_tailreal.so -O2, linked to NVIDIA's runtime (MOD_REAL_RT; when a toolkit is installed)
 * tail_is_jump() says whether the compiler made tail_malloc a jump: the tests
 * insist on it, so that they cannot pass on a build that made ordinary calls. */
#include "fake_common.h"

#define API __attribute__((visibility("default")))

API cudaError_t tail_malloc(void **p, size_t n) {
    return cudaMalloc(p, n);
}

API cudaError_t tail_free(void *p) {
    return cudaFree(p);
}

API cudaError_t tail_malloc_host(void **p, size_t n) {
    return cudaMallocHost(p, n);
}

API cudaError_t tail_free_host(void *p) {
    return cudaFreeHost(p);
}

API CUresult tail_mem_alloc(CUdeviceptr *p, size_t n) {
    return cuMemAlloc_v2(p, n);
}

API CUresult tail_mem_free(CUdeviceptr p) {
    return cuMemFree_v2(p);
}

/* Which runtime this module is linked to, and how many allocations reached it
 * (NVIDIA's runtime, MOD_REAL_RT, counts nothing for us). */
API const char *tail_runtime(void) {
#ifdef MOD_REAL_RT
    return "nvidia";
#else
    return fake_cudart_name();
#endif
}

API unsigned long tail_runtime_mallocs(void) {
#ifdef MOD_REAL_RT
    return 0;
#else
    return fake_cudart_mallocs();
#endif
}

/* 1 when tail_malloc's first instruction (after a branch-target marker) is a
 * jump: the compiler made the tail call; 0 when it is anything else. */
API int tail_is_jump(void) {
    const unsigned char *c = (const unsigned char *)(void *)&tail_malloc;
#if defined(__x86_64__)
    static const unsigned char endbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};
    if (__builtin_memcmp(c, endbr64, 4) == 0) c += 4;
    /* jmp rel32, jmp rel8, jmp *mem (-fno-plt) */
    return c[0] == 0xe9 || c[0] == 0xeb || (c[0] == 0xff && c[1] == 0x25);
#elif defined(__aarch64__)
    unsigned int insn;
    __builtin_memcpy(&insn, c, 4);
    if (insn == 0xd503245fu) { /* bti c */
        __builtin_memcpy(&insn, c + 4, 4);
    }
    return (insn & 0xfc000000u) == 0x14000000u; /* b imm26 */
#else
    return -1;
#endif
}
