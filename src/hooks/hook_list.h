/* SPDX-License-Identifier: Apache-2.0 */
/* The CUDA functions leakwatch wraps, in one list each for the driver and
 * the runtime (X-macros). Everything that must name every wrapped function
 * is generated from them, so no name can be in one place and missing from
 * another:
 *   driver.c:  the slots (wrappers bound to one real function each), the
 *              exports, and the lookup table that cuGetProcAddress, dlsym and
 *              cudaGetDriverEntryPoint are answered from (lookup.c);
 *   runtime.c: the exports, the per-object entries, the per-caller slot
 *              indexes (real.h's LW_CALLER_FUNCS) and the names by index,
 *              which bind.c writes each object's entries from;
 *   src/attach/hook_names.c: attach rewrites the entries of exactly what
 *              the library exports (its own dynamic symbol table), i.e.
 *              these lists plus dlsym and dlclose.
 * tests/integration/test_hook_list checks that the library's exports and
 * these lists are the same names.
 *
 * Adding a function: its row here, its NAME_body in driver.c or runtime.c,
 * and its signature in include/leakwatch/cuda_api.h. */
#ifndef LW_HOOKS_HOOK_LIST_H
#define LW_HOOKS_HOOK_LIST_H

/* ---- the driver ----
 * FAMILY(NAME, PFN, PARAMS, ARGS, BASE, MIN, BELOW): a wrapped function
 *   (NAME_body in driver.c) of type PFN (cuda_api.h's lw_pfn_...), exported
 *   as NAME, and found by cuGetProcAddress as BASE at versions MIN up to (not
 *   including) BELOW (0: no newer version known).
 * ALIAS(NAME, FAMILY, PFN, PARAMS, ARGS, BASE, MIN, BELOW): another exported
 *   name with FAMILY's signature and body (the per-thread-stream _ptsz
 *   versions, cuIpcOpenMemHandle's two versions): each gets its own slot
 *   when looked up. */
#define LW_P_ALLOC (CUdeviceptr * dptr, size_t size)
#define LW_A_ALLOC (dptr, size)
#define LW_P_PITCH (CUdeviceptr * d, size_t * p, size_t w, size_t h, unsigned int e)
#define LW_A_PITCH (d, p, w, h, e)
#define LW_P_MANAGED (CUdeviceptr * d, size_t s, unsigned int f)
#define LW_A_MANAGED (d, s, f)
#define LW_P_ASYNC (CUdeviceptr * d, size_t s, CUstream st)
#define LW_A_ASYNC (d, s, st)
#define LW_P_POOL (CUdeviceptr * d, size_t s, CUmemoryPool p, CUstream st)
#define LW_A_POOL (d, s, p, st)
#define LW_P_HOSTALLOC (void **pp, size_t s, unsigned int f)
#define LW_A_HOSTALLOC (pp, s, f)
#define LW_P_ALLOCHOST (void **pp, size_t s)
#define LW_A_ALLOCHOST (pp, s)
#define LW_P_CREATE                                                                                \
    (CUmemGenericAllocationHandle * h, size_t s, const CUmemAllocationProp *p, unsigned long long f)
#define LW_A_CREATE (h, s, p, f)
#define LW_P_FREE (CUdeviceptr d)
#define LW_A_FREE (d)
#define LW_P_FREEASYNC (CUdeviceptr d, CUstream st)
#define LW_A_FREEASYNC (d, st)
#define LW_P_HOSTPTR (void *p)
#define LW_A_HOSTPTR (p)
#define LW_P_HOSTREG (void *p, size_t s, unsigned int f)
#define LW_A_HOSTREG (p, s, f)
#define LW_P_IPCOPEN (CUdeviceptr * d, CUipcMemHandle h, unsigned int f)
#define LW_A_IPCOPEN (d, h, f)
#define LW_P_IMPORT (CUmemGenericAllocationHandle * h, void *os, CUmemAllocationHandleType t)
#define LW_A_IMPORT (h, os, t)
#define LW_P_HANDLE (CUmemGenericAllocationHandle h)
#define LW_A_HANDLE (h)
#define LW_P_RETAIN (CUmemGenericAllocationHandle * h, void *a)
#define LW_A_RETAIN (h, a)
#define LW_P_MAP                                                                                   \
    (CUdeviceptr p, size_t s, size_t o, CUmemGenericAllocationHandle h, unsigned long long f)
#define LW_A_MAP (p, s, o, h, f)
#define LW_P_UNMAP (CUdeviceptr p, size_t s)
#define LW_A_UNMAP (p, s)
#define LW_P_GPA2                                                                                  \
    (const char *sym, void **pfn, int v, cuuint64_t f, CUdriverProcAddressQueryResult *st)
#define LW_A_GPA2 (sym, pfn, v, f, st)
#define LW_P_GPA (const char *sym, void **pfn, int v, cuuint64_t f)
#define LW_A_GPA (sym, pfn, v, f)

#define LW_DRIVER_HOOKS(FAMILY, ALIAS)                                                             \
    FAMILY(cuMemAlloc_v2, lw_pfn_cuMemAlloc_v3020, LW_P_ALLOC, LW_A_ALLOC, "cuMemAlloc", 3020, 0)  \
    FAMILY(cuMemFree_v2, lw_pfn_cuMemFree_v3020, LW_P_FREE, LW_A_FREE, "cuMemFree", 3020, 0)       \
    FAMILY(cuMemAllocPitch_v2, lw_pfn_cuMemAllocPitch_v3020, LW_P_PITCH, LW_A_PITCH,               \
           "cuMemAllocPitch", 3020, 0)                                                             \
    FAMILY(cuMemAllocManaged, lw_pfn_cuMemAllocManaged_v6000, LW_P_MANAGED, LW_A_MANAGED,          \
           "cuMemAllocManaged", 6000, 0)                                                           \
    FAMILY(cuMemAllocAsync, lw_pfn_cuMemAllocAsync_v11020, LW_P_ASYNC, LW_A_ASYNC,                 \
           "cuMemAllocAsync", 11020, 0)                                                            \
    ALIAS(cuMemAllocAsync_ptsz, cuMemAllocAsync, lw_pfn_cuMemAllocAsync_v11020, LW_P_ASYNC,        \
          LW_A_ASYNC, "cuMemAllocAsync", 11020, 0)                                                 \
    FAMILY(cuMemFreeAsync, lw_pfn_cuMemFreeAsync_v11020, LW_P_FREEASYNC, LW_A_FREEASYNC,           \
           "cuMemFreeAsync", 11020, 0)                                                             \
    ALIAS(cuMemFreeAsync_ptsz, cuMemFreeAsync, lw_pfn_cuMemFreeAsync_v11020, LW_P_FREEASYNC,       \
          LW_A_FREEASYNC, "cuMemFreeAsync", 11020, 0)                                              \
    FAMILY(cuMemAllocFromPoolAsync, lw_pfn_cuMemAllocFromPoolAsync_v11020, LW_P_POOL, LW_A_POOL,   \
           "cuMemAllocFromPoolAsync", 11020, 0)                                                    \
    ALIAS(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync,                                   \
          lw_pfn_cuMemAllocFromPoolAsync_v11020, LW_P_POOL, LW_A_POOL, "cuMemAllocFromPoolAsync",  \
          11020, 0)                                                                                \
    FAMILY(cuMemCreate, lw_pfn_cuMemCreate_v10020, LW_P_CREATE, LW_A_CREATE, "cuMemCreate", 10020, \
           0)                                                                                      \
    FAMILY(cuMemRelease, lw_pfn_cuMemRelease_v10020, LW_P_HANDLE, LW_A_HANDLE, "cuMemRelease",     \
           10020, 0)                                                                               \
    FAMILY(cuMemRetainAllocationHandle, lw_pfn_cuMemRetainAllocationHandle_v11000, LW_P_RETAIN,    \
           LW_A_RETAIN, "cuMemRetainAllocationHandle", 11000, 0)                                   \
    FAMILY(cuMemMap, lw_pfn_cuMemMap_v10020, LW_P_MAP, LW_A_MAP, "cuMemMap", 10020, 0)             \
    FAMILY(cuMemUnmap, lw_pfn_cuMemUnmap_v10020, LW_P_UNMAP, LW_A_UNMAP, "cuMemUnmap", 10020, 0)   \
    FAMILY(cuMemHostAlloc, lw_pfn_cuMemHostAlloc_v2020, LW_P_HOSTALLOC, LW_A_HOSTALLOC,            \
           "cuMemHostAlloc", 2020, 0)                                                              \
    FAMILY(cuMemAllocHost_v2, lw_pfn_cuMemAllocHost_v3020, LW_P_ALLOCHOST, LW_A_ALLOCHOST,         \
           "cuMemAllocHost", 3020, 0)                                                              \
    FAMILY(cuMemFreeHost, lw_pfn_cuMemFreeHost_v2000, LW_P_HOSTPTR, LW_A_HOSTPTR, "cuMemFreeHost", \
           2000, 0)                                                                                \
    FAMILY(cuMemHostRegister_v2, lw_pfn_cuMemHostRegister_v6050, LW_P_HOSTREG, LW_A_HOSTREG,       \
           "cuMemHostRegister", 6050, 0)                                                           \
    FAMILY(cuMemHostUnregister, lw_pfn_cuMemHostUnregister_v4000, LW_P_HOSTPTR, LW_A_HOSTPTR,      \
           "cuMemHostUnregister", 4000, 0)                                                         \
    /* The first cuIpcOpenMemHandle (4010) and _v2 (11000) share a signature:                      \
     * one family, a slot each. */                                                                 \
    FAMILY(cuIpcOpenMemHandle, lw_pfn_cuIpcOpenMemHandle_v11000, LW_P_IPCOPEN, LW_A_IPCOPEN,       \
           "cuIpcOpenMemHandle", 4010, 11000)                                                      \
    ALIAS(cuIpcOpenMemHandle_v2, cuIpcOpenMemHandle, lw_pfn_cuIpcOpenMemHandle_v11000,             \
          LW_P_IPCOPEN, LW_A_IPCOPEN, "cuIpcOpenMemHandle", 11000, 0)                              \
    FAMILY(cuIpcCloseMemHandle, lw_pfn_cuIpcCloseMemHandle_v4010, LW_P_FREE, LW_A_FREE,            \
           "cuIpcCloseMemHandle", 4010, 0)                                                         \
    FAMILY(cuMemImportFromShareableHandle, lw_pfn_cuMemImportFromShareableHandle_v10020,           \
           LW_P_IMPORT, LW_A_IMPORT, "cuMemImportFromShareableHandle", 10020, 0)                   \
    FAMILY(cuGetProcAddress_v2, lw_pfn_cuGetProcAddress_v12000, LW_P_GPA2, LW_A_GPA2,              \
           "cuGetProcAddress", 12000, 0)                                                           \
    FAMILY(cuGetProcAddress, lw_pfn_cuGetProcAddress_v11030, LW_P_GPA, LW_A_GPA,                   \
           "cuGetProcAddress", 11030, 12000)

/* ---- the runtime ----
 * WRAPPED(NAME, PARAMS, ARGS): exported as NAME, with 64 per-object entries
 *   (NAME__k), all running NAME_body in runtime.c; the real NAME is found per
 *   caller (real.h).
 * LOOKED_UP(NAME): a runtime function leakwatch calls for a caller (in that
 *   caller's runtime) without wrapping it: a per-caller slot, no export. */
#define LW_RUNTIME_HOOKS(WRAPPED, LOOKED_UP)                                                       \
    WRAPPED(cudaMalloc, (void **ptr, size_t size), (ptr, size))                                    \
    WRAPPED(cudaMallocAsync, (void **ptr, size_t size, cudaStream_t s), (ptr, size, s))            \
    WRAPPED(cudaMallocAsync_ptsz, (void **ptr, size_t size, cudaStream_t s), (ptr, size, s))       \
    WRAPPED(cudaMallocFromPoolAsync,                                                               \
            (void **ptr, size_t size, cudaMemPool_t pool, cudaStream_t s), (ptr, size, pool, s))   \
    WRAPPED(cudaMallocFromPoolAsync_ptsz,                                                          \
            (void **ptr, size_t size, cudaMemPool_t pool, cudaStream_t s), (ptr, size, pool, s))   \
    WRAPPED(cudaMallocManaged, (void **ptr, size_t size, unsigned int flags), (ptr, size, flags))  \
    WRAPPED(cudaMallocHost, (void **ptr, size_t size), (ptr, size))                                \
    WRAPPED(cudaHostAlloc, (void **ptr, size_t size, unsigned int flags), (ptr, size, flags))      \
    WRAPPED(cudaMallocPitch, (void **ptr, size_t *pitch, size_t width, size_t height),             \
            (ptr, pitch, width, height))                                                           \
    WRAPPED(cudaFree, (void *ptr), (ptr))                                                          \
    WRAPPED(cudaFreeAsync, (void *ptr, cudaStream_t s), (ptr, s))                                  \
    WRAPPED(cudaFreeAsync_ptsz, (void *ptr, cudaStream_t s), (ptr, s))                             \
    WRAPPED(cudaFreeHost, (void *ptr), (ptr))                                                      \
    WRAPPED(cudaHostRegister, (void *ptr, size_t size, unsigned int flags), (ptr, size, flags))    \
    WRAPPED(cudaHostUnregister, (void *ptr), (ptr))                                                \
    WRAPPED(cudaIpcOpenMemHandle, (void **ptr, cudaIpcMemHandle_t handle, unsigned int flags),     \
            (ptr, handle, flags))                                                                  \
    WRAPPED(cudaIpcCloseMemHandle, (void *ptr), (ptr))                                             \
    WRAPPED(cudaGetDriverEntryPoint,                                                               \
            (const char *symbol, void **fp, unsigned long long flags,                              \
             enum cudaDriverEntryPointQueryResult *status),                                        \
            (symbol, fp, flags, status))                                                           \
    WRAPPED(cudaGetDriverEntryPoint_ptsz,                                                          \
            (const char *symbol, void **fp, unsigned long long flags,                              \
             enum cudaDriverEntryPointQueryResult *status),                                        \
            (symbol, fp, flags, status))                                                           \
    WRAPPED(cudaGetDriverEntryPointByVersion,                                                      \
            (const char *symbol, void **fp, unsigned int version, unsigned long long flags,        \
             enum cudaDriverEntryPointQueryResult *status),                                        \
            (symbol, fp, version, flags, status))                                                  \
    WRAPPED(cudaGetDriverEntryPointByVersion_ptsz,                                                 \
            (const char *symbol, void **fp, unsigned int version, unsigned long long flags,        \
             enum cudaDriverEntryPointQueryResult *status),                                        \
            (symbol, fp, version, flags, status))                                                  \
    LOOKED_UP(cudaRuntimeGetVersion)

#endif
