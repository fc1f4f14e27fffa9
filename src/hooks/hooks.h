/* SPDX-License-Identifier: Apache-2.0 */
/* The hook layer: wrappers around CUDA's memory functions and the lookup
 * functions (dlsym, cuGetProcAddress, cudaGetDriverEntryPoint) through which
 * callers find them. */
#ifndef LW_HOOKS_H
#define LW_HOOKS_H

#include "export.h"

#include <leakwatch/cuda_api.h>

/* driver.c, over its table (lookup.c picks the entry and the slot): the
 * wrapper to hand out for the driver function that a lookup by base name
 * ("cuMemAlloc") at cudaVersion and flags returned as fn; fn itself when
 * leakwatch does not wrap it (or cannot be sure of its signature). query_v2,
 * when not NULL, is the real cuGetProcAddress_v2 used to confirm that a lookup
 * at a version newer than leakwatch knows returned the function it knows. */
void *lw_wrap_by_base(const char *symbol, int cuda_version, cuuint64_t flags, void *fn,
                      lw_pfn_cuGetProcAddress_v12000 query_v2);

/* The same for a lookup of a driver function by exported, versioned name
 * ("cuMemAlloc_v2", "cuMemAllocAsync_ptsz"), as dlsym does (a runtime name,
 * "cudaMalloc", goes to lw_runtime_bind). */
void *lw_wrap_by_name(const char *versioned_name, void *fn);

/* runtime.c: the wrapper to hand out for the runtime function fn that a
 * lookup of name in a handle found (ctypes' CDLL("libcudart.so").cudaMalloc,
 * which never reaches our export): one bound to fn, so that the call is
 * recorded as a program's call of our export is, failures included (no
 * driver: error 35 and its hint); fn itself when name is not wrapped. */
void *lw_runtime_bind(const char *name, void *fn);

/* 1 when our export named name, called from return address ra, forwards to
 * real (runtime exports forward per caller; the driver's exports all reach
 * the one driver). */
int lw_export_reaches(const void *ra, const char *name, void *real);

/* Cheap tests: can name be one that lw_wrap_by_name wraps or notes, or one
 * of the runtime's that leakwatch exports? ("cuIp": cuIpc*, not cuInit.) */
/* Inlined into dlsym, which runs before a sanitizer runtime is ready. */
__attribute__((always_inline)) static inline int lw_maybe_cuda_name(const char *name) {
    return name[0] == 'c' && name[1] == 'u' &&
           (name[2] == 'M' || name[2] == 'G' || name[2] == 'C' ||
            (name[2] == 'I' && name[3] == 'p') || name[2] == 'd');
}

static inline int lw_maybe_driver_name(const char *name) {
    return name[0] == 'c' && name[1] == 'u' &&
           (name[2] == 'M' || name[2] == 'G' || name[2] == 'C' ||
            (name[2] == 'I' && name[3] == 'p'));
}

/* The newest CUDA version whose signatures leakwatch's declarations match. */
#define LW_CUDA_VERSION_KNOWN 13000

#endif
