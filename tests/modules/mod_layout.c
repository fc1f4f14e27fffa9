/* SPDX-License-Identifier: Apache-2.0 */
/* A module as a Python extension is one: a shared object linked to a CUDA
 * library, opened by its program with dlopen (tests/programs/dl_layouts.c).
 * Built several ways (Makefile, "layout modules"):
 *   libmod_rt.so       MOD_RUNTIME, linked to the stand-in libcudart.so
 *   libmod_rt12.so     MOD_RUNTIME, linked to the second stand-in, libcudart.so.12
 *   libmod_static.so   MOD_RUNTIME, the stand-in libcudart_static.a linked in
 *   libmod_drv.so      MOD_DRIVER, linked to libcuda.so.1
 *   libmod_realrt.so   MOD_RUNTIME, linked to the toolkit's libcudart.so (when installed)
 * mod_run(via, n, size, out, outlen) allocates n blocks of size bytes from
 * leak_module (kept) and MOD_CHURN more from churn_module (freed), reaching
 * the allocation functions as via says: "plt" (a direct call), "default"
 * (dlsym(RTLD_DEFAULT)), "next" (dlsym(RTLD_NEXT)), "handle" (dlsym on the
 * library's handle). It writes what it saw into out: the tests compare it
 * with and without leakwatch. */
#include "fake_common.h"

#include <stdio.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))
#define MOD_CHURN 4

#ifdef MOD_DRIVER
typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);
#define ALLOC_NAME "cuMemAlloc_v2"
#define FREE_NAME "cuMemFree_v2"
#define LIB_NAME "libcuda.so.1"
#define DIRECT_ALLOC cuMemAlloc_v2
#define DIRECT_FREE cuMemFree_v2
typedef CUdeviceptr ptr_t;
#else
typedef cudaError_t (*alloc_fn)(void **, size_t);
typedef cudaError_t (*free_fn)(void *);
#define ALLOC_NAME "cudaMalloc"
#define FREE_NAME "cudaFree"
#define DIRECT_ALLOC cudaMalloc
#define DIRECT_FREE cudaFree
#ifndef LIB_NAME
#define LIB_NAME "libcudart.so" /* the library "handle" looks the functions up in */
#endif
typedef void *ptr_t;
#endif

static void *find(const char *via, const char *name, void *direct) {
    if (!strcmp(via, "plt")) return direct;
    if (!strcmp(via, "default")) return dlsym(RTLD_DEFAULT, name);
    if (!strcmp(via, "next")) return dlsym(RTLD_NEXT, name);
    if (!strcmp(via, "handle")) {
        void *h = dlopen(LIB_NAME, RTLD_NOW | RTLD_NOLOAD);
        if (!h) return NULL;
        void *p = dlsym(h, name);
        dlclose(h);
        return p;
    }
    return NULL;
}

NOINLINE static int leak_module(alloc_fn a, size_t n, size_t size) {
    int first = 0;
    for (size_t i = 0; i < n; i++) {
        ptr_t p = 0;
        int r = (int)a(&p, size);
        if (r && !first) first = r;
    }
    return first;
}

NOINLINE static int churn_module(alloc_fn a, free_fn f, size_t size, int *free_rc) {
    int first = 0;
    for (int i = 0; i < MOD_CHURN; i++) {
        ptr_t p = 0;
        int r = (int)a(&p, size);
        if (r && !first) first = r;
        if (!r) {
            int fr = (int)f(p);
            if (fr && !*free_rc) *free_rc = fr;
        }
    }
    return first;
}

__attribute__((visibility("default"))) int mod_run(const char *via, size_t n, size_t size,
                                                   char *out, size_t outlen) {
    int start = 0;
#ifdef MOD_DRIVER
    /* A context on this thread, as a program using the driver API makes. */
    CUcontext ctx = NULL;
    start = (int)cuInit(0);
    if (!start) start = (int)cuDevicePrimaryCtxRetain(&ctx, 0);
    if (!start) start = (int)cuCtxSetCurrent(ctx);
#endif
#if defined(MOD_RUNTIME) && defined(MOD_FAKE_RT)
    unsigned long before = fake_cudart_mallocs();
#endif
    alloc_fn a = (alloc_fn)find(via, ALLOC_NAME, (void *)DIRECT_ALLOC);
    free_fn f = (free_fn)find(via, FREE_NAME, (void *)DIRECT_FREE);
    int version = 0;
#ifdef MOD_RUNTIME
    cudaRuntimeGetVersion(&version);
#endif
    if (!a || !f) {
        snprintf(out, outlen, "start=%d version=%d %s: absent", start, version, via);
        return 0;
    }
    int free_rc = 0;
    int churn_rc = churn_module(a, f, size, &free_rc);
    int leak_rc = leak_module(a, n, size);
    int len = snprintf(out, outlen, "start=%d version=%d churn=%d leak=%d free=%d", start, version,
                       churn_rc, leak_rc, free_rc);
#if defined(MOD_RUNTIME) && defined(MOD_FAKE_RT)
    /* Which runtime answered, and how many of these calls reached it. */
    if (len > 0 && (size_t)len < outlen)
        snprintf(out + len, outlen - (size_t)len, " runtime=%s calls=%lu", fake_cudart_name(),
                 fake_cudart_mallocs() - before);
#else
    (void)len;
#endif
    return 0;
}
