/* SPDX-License-Identifier: Apache-2.0 */
/* The CUDA functions leakwatch wraps, in one list each for the driver and
 * the runtime (X-macros). A row is the one place a hook's signature is
 * written: its parameters (PARAMS, with names) and the same names as the
 * call passes them on (ARGS). Everything that must name every wrapped
 * function is generated from the rows, so no name can be in one place and
 * missing from another:
 *   driver.c:  the declaration of each hook, lw_hook_NAME(the real function,
 *              PARAMS); the slots (wrappers bound to one real function
 *              each), the exports, and the lookup table that
 *              cuGetProcAddress, dlsym and cudaGetDriverEntryPoint are
 *              answered from (lookup.c);
 *   runtime.c: the declaration of each hook, lw_hook_NAME(the caller,
 *              PARAMS); the exports, the per-object entries, the per-caller
 *              slot indexes (real.h's LW_CALLER_FUNCS) and the names by
 *              index, which bind.c writes each object's entries from;
 *   src/attach/hook_names.c: attach rewrites the entries of exactly what
 *              the library exports (its own dynamic symbol table), i.e.
 *              these lists plus dlsym and dlclose.
 * Each export is checked, at compile time, to have the type TYPE that
 * include/leakwatch/cuda_api.h declares for it (CUDA's own signature, checked
 * against cuda.h by make check-cuda-abi), and each hook's definition to match
 * the declaration generated from its row: a row that disagrees with CUDA or
 * with its hook does not build. tests/integration/test_hook_events checks
 * that the library's exports and these lists are the same names.
 *
 * Adding a function: its type in include/leakwatch/cuda_api.h, its row here,
 * and its hook, lw_hook_NAME, a plain function in driver.c or runtime.c
 * (grep 'lw_hook_cuMemAlloc_v2(' finds one). */
#ifndef LW_HOOKS_HOOK_LIST_H
#define LW_HOOKS_HOOK_LIST_H

/* (a, b) -> a, b: how a row's PARAMS and ARGS are spliced into a list. */
#define LW_UNPAREN(...) __VA_ARGS__

/* ---- the driver ----
 * FAMILY(NAME, TYPE, PARAMS, ARGS, BASE, MIN, BELOW): a wrapped function,
 *   lw_hook_NAME in driver.c, of type TYPE (cuda_api.h's lw_pfn_...),
 *   exported as NAME, and found by cuGetProcAddress as BASE at versions MIN
 *   up to (not including) BELOW (0: no newer version known).
 * ALIAS(NAME, FAMILY, TYPE, PARAMS, ARGS, BASE, MIN, BELOW): another exported
 *   name with FAMILY's signature and hook, lw_hook_FAMILY (the per-thread-
 *   stream _ptsz versions, cuIpcOpenMemHandle's two versions): each gets its
 *   own slots when looked up. */
#define LW_DRIVER_HOOKS(FAMILY, ALIAS)                                                             \
    FAMILY(cuMemAlloc_v2, lw_pfn_cuMemAlloc_v3020, (CUdeviceptr * dptr, size_t bytesize),          \
           (dptr, bytesize), "cuMemAlloc", 3020, 0)                                                \
    FAMILY(cuMemFree_v2, lw_pfn_cuMemFree_v3020, (CUdeviceptr dptr), (dptr), "cuMemFree", 3020, 0) \
    FAMILY(cuMemAllocPitch_v2, lw_pfn_cuMemAllocPitch_v3020,                                       \
           (CUdeviceptr * dptr, size_t * pitch, size_t width, size_t height,                       \
            unsigned int element_size),                                                            \
           (dptr, pitch, width, height, element_size), "cuMemAllocPitch", 3020, 0)                 \
    FAMILY(cuMemAllocManaged, lw_pfn_cuMemAllocManaged_v6000,                                      \
           (CUdeviceptr * dptr, size_t bytesize, unsigned int flags), (dptr, bytesize, flags),     \
           "cuMemAllocManaged", 6000, 0)                                                           \
    FAMILY(cuMemAllocAsync, lw_pfn_cuMemAllocAsync_v11020,                                         \
           (CUdeviceptr * dptr, size_t bytesize, CUstream stream), (dptr, bytesize, stream),       \
           "cuMemAllocAsync", 11020, 0)                                                            \
    ALIAS(cuMemAllocAsync_ptsz, cuMemAllocAsync, lw_pfn_cuMemAllocAsync_v11020,                    \
          (CUdeviceptr * dptr, size_t bytesize, CUstream stream), (dptr, bytesize, stream),        \
          "cuMemAllocAsync", 11020, 0)                                                             \
    FAMILY(cuMemFreeAsync, lw_pfn_cuMemFreeAsync_v11020, (CUdeviceptr dptr, CUstream stream),      \
           (dptr, stream), "cuMemFreeAsync", 11020, 0)                                             \
    ALIAS(cuMemFreeAsync_ptsz, cuMemFreeAsync, lw_pfn_cuMemFreeAsync_v11020,                       \
          (CUdeviceptr dptr, CUstream stream), (dptr, stream), "cuMemFreeAsync", 11020, 0)         \
    FAMILY(cuMemAllocFromPoolAsync, lw_pfn_cuMemAllocFromPoolAsync_v11020,                         \
           (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream stream),              \
           (dptr, bytesize, pool, stream), "cuMemAllocFromPoolAsync", 11020, 0)                    \
    ALIAS(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync,                                   \
          lw_pfn_cuMemAllocFromPoolAsync_v11020,                                                   \
          (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream stream),               \
          (dptr, bytesize, pool, stream), "cuMemAllocFromPoolAsync", 11020, 0)                     \
    FAMILY(cuMemCreate, lw_pfn_cuMemCreate_v10020,                                                 \
           (CUmemGenericAllocationHandle * handle, size_t size, const CUmemAllocationProp *prop,   \
            unsigned long long flags),                                                             \
           (handle, size, prop, flags), "cuMemCreate", 10020, 0)                                   \
    FAMILY(cuMemRelease, lw_pfn_cuMemRelease_v10020, (CUmemGenericAllocationHandle handle),        \
           (handle), "cuMemRelease", 10020, 0)                                                     \
    FAMILY(cuMemRetainAllocationHandle, lw_pfn_cuMemRetainAllocationHandle_v11000,                 \
           (CUmemGenericAllocationHandle * handle, void *addr), (handle, addr),                    \
           "cuMemRetainAllocationHandle", 11000, 0)                                                \
    FAMILY(cuMemMap, lw_pfn_cuMemMap_v10020,                                                       \
           (CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,      \
            unsigned long long flags),                                                             \
           (ptr, size, offset, handle, flags), "cuMemMap", 10020, 0)                               \
    FAMILY(cuMemUnmap, lw_pfn_cuMemUnmap_v10020, (CUdeviceptr ptr, size_t size), (ptr, size),      \
           "cuMemUnmap", 10020, 0)                                                                 \
    FAMILY(cuMemHostAlloc, lw_pfn_cuMemHostAlloc_v2020,                                            \
           (void **pp, size_t bytesize, unsigned int flags), (pp, bytesize, flags),                \
           "cuMemHostAlloc", 2020, 0)                                                              \
    FAMILY(cuMemAllocHost_v2, lw_pfn_cuMemAllocHost_v3020, (void **pp, size_t bytesize),           \
           (pp, bytesize), "cuMemAllocHost", 3020, 0)                                              \
    FAMILY(cuMemFreeHost, lw_pfn_cuMemFreeHost_v2000, (void *p), (p), "cuMemFreeHost", 2000, 0)    \
    FAMILY(cuMemHostRegister_v2, lw_pfn_cuMemHostRegister_v6050,                                   \
           (void *p, size_t bytesize, unsigned int flags), (p, bytesize, flags),                   \
           "cuMemHostRegister", 6050, 0)                                                           \
    FAMILY(cuMemHostUnregister, lw_pfn_cuMemHostUnregister_v4000, (void *p), (p),                  \
           "cuMemHostUnregister", 4000, 0)                                                         \
    /* The first cuIpcOpenMemHandle (4010) and _v2 (11000) share a signature:                      \
     * one family, slots each. */                                                                  \
    FAMILY(cuIpcOpenMemHandle, lw_pfn_cuIpcOpenMemHandle_v11000,                                   \
           (CUdeviceptr * pdptr, CUipcMemHandle handle, unsigned int flags),                       \
           (pdptr, handle, flags), "cuIpcOpenMemHandle", 4010, 11000)                              \
    ALIAS(cuIpcOpenMemHandle_v2, cuIpcOpenMemHandle, lw_pfn_cuIpcOpenMemHandle_v11000,             \
          (CUdeviceptr * pdptr, CUipcMemHandle handle, unsigned int flags),                        \
          (pdptr, handle, flags), "cuIpcOpenMemHandle", 11000, 0)                                  \
    FAMILY(cuIpcCloseMemHandle, lw_pfn_cuIpcCloseMemHandle_v4010, (CUdeviceptr dptr), (dptr),      \
           "cuIpcCloseMemHandle", 4010, 0)                                                         \
    FAMILY(cuMemImportFromShareableHandle, lw_pfn_cuMemImportFromShareableHandle_v10020,           \
           (CUmemGenericAllocationHandle * handle, void *os_handle,                                \
            CUmemAllocationHandleType handle_type),                                                \
           (handle, os_handle, handle_type), "cuMemImportFromShareableHandle", 10020, 0)           \
    FAMILY(cuGetProcAddress_v2, lw_pfn_cuGetProcAddress_v12000,                                    \
           (const char *symbol, void **pfn, int version, cuuint64_t flags,                         \
            CUdriverProcAddressQueryResult *status),                                               \
           (symbol, pfn, version, flags, status), "cuGetProcAddress", 12000, 0)                    \
    FAMILY(cuGetProcAddress, lw_pfn_cuGetProcAddress_v11030,                                       \
           (const char *symbol, void **pfn, int version, cuuint64_t flags),                        \
           (symbol, pfn, version, flags), "cuGetProcAddress", 11030, 12000)

/* ---- the runtime ----
 * WRAPPED(NAME, TYPE, PARAMS, ARGS): a wrapped function, lw_hook_NAME in
 *   runtime.c, of type TYPE (cuda_api.h's lw_rt_...), exported as NAME, with
 *   64 per-object entries (NAME__k) and a few slots, all running
 *   lw_hook_NAME; the real NAME is found per caller (real.h).
 * LOOKED_UP(NAME): a runtime function leakwatch calls for a caller (in that
 *   caller's runtime) without wrapping it: a per-caller slot, no export. */
#define LW_RUNTIME_HOOKS(WRAPPED, LOOKED_UP)                                                       \
    WRAPPED(cudaMalloc, lw_rt_cudaMalloc, (void **ptr, size_t size), (ptr, size))                  \
    WRAPPED(cudaMallocAsync, lw_rt_cudaMallocAsync, (void **ptr, size_t size, cudaStream_t s),     \
            (ptr, size, s))                                                                        \
    WRAPPED(cudaMallocAsync_ptsz, lw_rt_cudaMallocAsync,                                           \
            (void **ptr, size_t size, cudaStream_t s), (ptr, size, s))                             \
    WRAPPED(cudaMallocFromPoolAsync, lw_rt_cudaMallocFromPoolAsync,                                \
            (void **ptr, size_t size, cudaMemPool_t pool, cudaStream_t s), (ptr, size, pool, s))   \
    WRAPPED(cudaMallocFromPoolAsync_ptsz, lw_rt_cudaMallocFromPoolAsync,                           \
            (void **ptr, size_t size, cudaMemPool_t pool, cudaStream_t s), (ptr, size, pool, s))   \
    WRAPPED(cudaMallocManaged, lw_rt_cudaMallocManaged,                                            \
            (void **ptr, size_t size, unsigned int flags), (ptr, size, flags))                     \
    WRAPPED(cudaMallocHost, lw_rt_cudaMallocHost, (void **ptr, size_t size), (ptr, size))          \
    WRAPPED(cudaHostAlloc, lw_rt_cudaHostAlloc, (void **ptr, size_t size, unsigned int flags),     \
            (ptr, size, flags))                                                                    \
    WRAPPED(cudaMallocPitch, lw_rt_cudaMallocPitch,                                                \
            (void **ptr, size_t *pitch, size_t width, size_t height), (ptr, pitch, width, height)) \
    WRAPPED(cudaFree, lw_rt_cudaFree, (void *ptr), (ptr))                                          \
    WRAPPED(cudaFreeAsync, lw_rt_cudaFreeAsync, (void *ptr, cudaStream_t s), (ptr, s))             \
    WRAPPED(cudaFreeAsync_ptsz, lw_rt_cudaFreeAsync, (void *ptr, cudaStream_t s), (ptr, s))        \
    WRAPPED(cudaFreeHost, lw_rt_cudaFreeHost, (void *ptr), (ptr))                                  \
    WRAPPED(cudaHostRegister, lw_rt_cudaHostRegister,                                              \
            (void *ptr, size_t size, unsigned int flags), (ptr, size, flags))                      \
    WRAPPED(cudaHostUnregister, lw_rt_cudaHostUnregister, (void *ptr), (ptr))                      \
    WRAPPED(cudaIpcOpenMemHandle, lw_rt_cudaIpcOpenMemHandle,                                      \
            (void **ptr, cudaIpcMemHandle_t handle, unsigned int flags), (ptr, handle, flags))     \
    WRAPPED(cudaIpcCloseMemHandle, lw_rt_cudaIpcCloseMemHandle, (void *ptr), (ptr))                \
    WRAPPED(cudaGetDriverEntryPoint, lw_rt_cudaGetDriverEntryPoint,                                \
            (const char *symbol, void **fp, unsigned long long flags,                              \
             enum cudaDriverEntryPointQueryResult *status),                                        \
            (symbol, fp, flags, status))                                                           \
    WRAPPED(cudaGetDriverEntryPoint_ptsz, lw_rt_cudaGetDriverEntryPoint,                           \
            (const char *symbol, void **fp, unsigned long long flags,                              \
             enum cudaDriverEntryPointQueryResult *status),                                        \
            (symbol, fp, flags, status))                                                           \
    WRAPPED(cudaGetDriverEntryPointByVersion, lw_rt_cudaGetDriverEntryPointByVersion,              \
            (const char *symbol, void **fp, unsigned int version, unsigned long long flags,        \
             enum cudaDriverEntryPointQueryResult *status),                                        \
            (symbol, fp, version, flags, status))                                                  \
    WRAPPED(cudaGetDriverEntryPointByVersion_ptsz, lw_rt_cudaGetDriverEntryPointByVersion,         \
            (const char *symbol, void **fp, unsigned int version, unsigned long long flags,        \
             enum cudaDriverEntryPointQueryResult *status),                                        \
            (symbol, fp, version, flags, status))                                                  \
    LOOKED_UP(cudaRuntimeGetVersion)

/* An export, checked against CUDA's signature: NAME's type is TYPE. */
#define LW_HAS_CUDA_TYPE(NAME, TYPE)                                                               \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&NAME), TYPE),                          \
                   #NAME "'s row in hook_list.h disagrees with " #TYPE " in cuda_api.h");

#endif
