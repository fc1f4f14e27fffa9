/* SPDX-License-Identifier: Apache-2.0 */
/* CUDA runtime wrappers, for programs that link libcudart.so dynamically
 * (PyTorch's pip wheels do). Each forwards to the function its caller would
 * have reached without leakwatch (lw_real_for_caller): the global scope's
 * runtime, or the caller's own when it was loaded RTLD_LOCAL with its own
 * libcudart (Python extension modules), so that two runtimes in one process
 * each get their own callers' calls.
 *
 * The runtime reaches the driver through our driver wrappers too; the guard
 * (guard.h) makes the runtime call, the outermost, the one that records. A
 * program with the runtime linked in statically never comes here: its driver
 * calls are seen by driver.c instead. */
#include "hooks.h"

#include "guard.h"
#include "lifecycle.h"
#include "log.h"
#include "real.h"
#include "record.h"
#include "device.h"

#include <errno.h>
#include <string.h>

/* Returned only when no real runtime function exists anywhere in the process
 * (a program that found our export by name without loading libcudart):
 * nothing to pass the call to. A caller whose own scope has none (a tail call
 * from a module, libffi, generated code) is passed to a guessed one instead
 * (lw_real_for_caller). */
#define NO_RUNTIME cudaErrorInitializationError

/* One index per exported name, for the per-caller cache. */
enum {
    F_cudaMalloc,
    F_cudaMallocAsync,
    F_cudaMallocAsync_ptsz,
    F_cudaMallocFromPoolAsync,
    F_cudaMallocFromPoolAsync_ptsz,
    F_cudaMallocManaged,
    F_cudaMallocHost,
    F_cudaHostAlloc,
    F_cudaMallocPitch,
    F_cudaFree,
    F_cudaFreeAsync,
    F_cudaFreeAsync_ptsz,
    F_cudaFreeHost,
    F_cudaHostRegister,
    F_cudaHostUnregister,
    F_cudaIpcOpenMemHandle,
    F_cudaIpcCloseMemHandle,
    F_cudaRuntimeGetVersion,
    F_cudaGetDriverEntryPoint,
    F_cudaGetDriverEntryPoint_ptsz,
    F_cudaGetDriverEntryPointByVersion,
    F_cudaGetDriverEntryPointByVersion_ptsz,
    F_COUNT
};
_Static_assert(F_COUNT <= LW_CALLER_FUNCS, "raise LW_CALLER_FUNCS");

static const char *const names[F_COUNT] = {
    "cudaMalloc",
    "cudaMallocAsync",
    "cudaMallocAsync_ptsz",
    "cudaMallocFromPoolAsync",
    "cudaMallocFromPoolAsync_ptsz",
    "cudaMallocManaged",
    "cudaMallocHost",
    "cudaHostAlloc",
    "cudaMallocPitch",
    "cudaFree",
    "cudaFreeAsync",
    "cudaFreeAsync_ptsz",
    "cudaFreeHost",
    "cudaHostRegister",
    "cudaHostUnregister",
    "cudaIpcOpenMemHandle",
    "cudaIpcCloseMemHandle",
    "cudaRuntimeGetVersion",
    "cudaGetDriverEntryPoint",
    "cudaGetDriverEntryPoint_ptsz",
    "cudaGetDriverEntryPointByVersion",
    "cudaGetDriverEntryPointByVersion_ptsz",
};

int lw_export_reaches(const void *ra, const char *name, void *real) {
    for (int i = 0; i < F_COUNT; i++)
        if (strcmp(name, names[i]) == 0) return lw_real_for_caller_nocount(ra, i, name) == real;
    return 1; /* a driver export: one driver per process */
}

/* The real NAME for the call that entered our export from return address ra. */
#define REAL(NAME, TYPE, ra) ((TYPE)lw_real_for_caller((ra), F_##NAME, #NAME))

static void on_alloc(int outer, cudaError_t r, lw_kind kind, lw_key_class cls, const void *p,
                     uint64_t size, int host) {
    if (!outer || !lw_started()) return;
    int saved = errno;
    int device = host ? -1 : lw_device_current();
    if (r == cudaSuccess)
        lw_record_alloc(kind, cls, (uint64_t)(uintptr_t)p, size, device);
    else
        lw_record_failure(kind, size, device, r);
    errno = saved;
}

#define ALLOC_WRAPPER(NAME, REALNAME, KIND, CLS, HOST, SIZE, PARAMS, ...)                          \
    LW_EXPORT cudaError_t NAME PARAMS {                                                            \
        lw_rt_##REALNAME real = REAL(NAME, lw_rt_##REALNAME, __builtin_return_address(0));         \
        if (!real) return NO_RUNTIME;                                                              \
        int outer = lw_hook_enter();                                                               \
        cudaError_t r = real(__VA_ARGS__);                                                         \
        on_alloc(outer, r, KIND, CLS, r == cudaSuccess && ptr ? *ptr : NULL, SIZE, HOST);          \
        lw_hook_leave();                                                                           \
        return r;                                                                                  \
    }

ALLOC_WRAPPER(cudaMalloc, cudaMalloc, LW_KIND_DEVICE, LW_CLASS_DPTR, 0, size,
              (void **ptr, size_t size), ptr, size)
ALLOC_WRAPPER(cudaMallocAsync, cudaMallocAsync, LW_KIND_DEVICE, LW_CLASS_DPTR, 0, size,
              (void **ptr, size_t size, cudaStream_t s), ptr, size, s)
ALLOC_WRAPPER(cudaMallocAsync_ptsz, cudaMallocAsync, LW_KIND_DEVICE, LW_CLASS_DPTR, 0, size,
              (void **ptr, size_t size, cudaStream_t s), ptr, size, s)
ALLOC_WRAPPER(cudaMallocFromPoolAsync, cudaMallocFromPoolAsync, LW_KIND_DEVICE, LW_CLASS_DPTR, 0,
              size, (void **ptr, size_t size, cudaMemPool_t pool, cudaStream_t s), ptr, size, pool,
              s)
ALLOC_WRAPPER(cudaMallocFromPoolAsync_ptsz, cudaMallocFromPoolAsync, LW_KIND_DEVICE, LW_CLASS_DPTR,
              0, size, (void **ptr, size_t size, cudaMemPool_t pool, cudaStream_t s), ptr, size,
              pool, s)
ALLOC_WRAPPER(cudaMallocManaged, cudaMallocManaged, LW_KIND_MANAGED, LW_CLASS_DPTR, 0, size,
              (void **ptr, size_t size, unsigned int flags), ptr, size, flags)
ALLOC_WRAPPER(cudaMallocHost, cudaMallocHost, LW_KIND_PINNED_HOST, LW_CLASS_HOST, 1, size,
              (void **ptr, size_t size), ptr, size)
ALLOC_WRAPPER(cudaHostAlloc, cudaHostAlloc, LW_KIND_PINNED_HOST, LW_CLASS_HOST, 1, size,
              (void **ptr, size_t size, unsigned int flags), ptr, size, flags)
ALLOC_WRAPPER(cudaMallocPitch, cudaMallocPitch, LW_KIND_DEVICE, LW_CLASS_DPTR, 0,
              (r == cudaSuccess && pitch ? *pitch * height : width * height),
              (void **ptr, size_t *pitch, size_t width, size_t height), ptr, pitch, width, height)

/* Host memory the program allocated, page-locked (PyTorch's
 * pinned_use_cuda_host_register): pinned host memory until unregistered. */
LW_EXPORT cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags) {
    lw_rt_cudaHostRegister real =
        REAL(cudaHostRegister, lw_rt_cudaHostRegister, __builtin_return_address(0));
    if (!real) return NO_RUNTIME;
    int outer = lw_hook_enter();
    cudaError_t r = real(ptr, size, flags);
    on_alloc(outer, r, LW_KIND_PINNED_HOST, LW_CLASS_HOST, ptr, size, 1);
    lw_hook_leave();
    return r;
}

/* Frees leave the table before the real free (see record.h). */
#define FREE_WRAPPER(NAME, REALNAME, CLS, PARAMS, ...)                                             \
    LW_EXPORT cudaError_t NAME PARAMS {                                                            \
        lw_rt_##REALNAME real = REAL(NAME, lw_rt_##REALNAME, __builtin_return_address(0));         \
        if (!real) return NO_RUNTIME;                                                              \
        int outer = lw_hook_enter();                                                               \
        int track = outer && ptr != NULL && lw_started();                                          \
        lw_free_ticket t;                                                                          \
        int saved = errno;                                                                         \
        if (track) lw_record_free_begin(CLS, (uint64_t)(uintptr_t)ptr, &t);                        \
        errno = saved;                                                                             \
        cudaError_t r = real(__VA_ARGS__);                                                         \
        saved = errno;                                                                             \
        if (track) lw_record_free_end(&t, r == cudaSuccess);                                       \
        errno = saved;                                                                             \
        lw_hook_leave();                                                                           \
        return r;                                                                                  \
    }

FREE_WRAPPER(cudaFree, cudaFree, LW_CLASS_DPTR, (void *ptr), ptr)
FREE_WRAPPER(cudaFreeAsync, cudaFreeAsync, LW_CLASS_DPTR, (void *ptr, cudaStream_t s), ptr, s)
FREE_WRAPPER(cudaFreeAsync_ptsz, cudaFreeAsync, LW_CLASS_DPTR, (void *ptr, cudaStream_t s), ptr, s)
FREE_WRAPPER(cudaFreeHost, cudaFreeHost, LW_CLASS_HOST, (void *ptr), ptr)
FREE_WRAPPER(cudaHostUnregister, cudaHostUnregister, LW_CLASS_HOST, (void *ptr), ptr)

/* Another process's memory, opened here: counted as imported (imports.h),
 * never as this process's device memory. */
LW_EXPORT cudaError_t cudaIpcOpenMemHandle(void **ptr, cudaIpcMemHandle_t handle,
                                           unsigned int flags) {
    lw_rt_cudaIpcOpenMemHandle real =
        REAL(cudaIpcOpenMemHandle, lw_rt_cudaIpcOpenMemHandle, __builtin_return_address(0));
    if (!real) return NO_RUNTIME;
    int outer = lw_hook_enter();
    cudaError_t r = real(ptr, handle, flags);
    int ok = r == cudaSuccess && ptr;
    lw_hook_import_opened(outer, ok, 0, ok ? (uint64_t)(uintptr_t)*ptr : 0);
    lw_hook_leave();
    return r;
}

LW_EXPORT cudaError_t cudaIpcCloseMemHandle(void *ptr) {
    lw_rt_cudaIpcCloseMemHandle real =
        REAL(cudaIpcCloseMemHandle, lw_rt_cudaIpcCloseMemHandle, __builtin_return_address(0));
    if (!real) return NO_RUNTIME;
    lw_hook_import_close c;
    lw_hook_import_close_begin(lw_hook_enter(), (uint64_t)(uintptr_t)ptr, &c);
    cudaError_t r = real(ptr);
    lw_hook_import_close_end(&c, r == cudaSuccess);
    lw_hook_leave();
    return r;
}

/* cudaGetDriverEntryPoint*: the runtime answers through the driver's
 * cuGetProcAddress, which it found through us, so what comes back is usually
 * our wrapper already; lw_wrap_by_base leaves those alone (and maps our
 * exports, which an interposable driver hands out, to the driver's own). */
/* The version of the runtime the caller at ra uses. */
static int runtime_version(const void *ra) {
    lw_rt_cudaRuntimeGetVersion fn = (lw_rt_cudaRuntimeGetVersion)lw_real_for_caller_nocount(
        ra, F_cudaRuntimeGetVersion, "cudaRuntimeGetVersion");
    int v = 0;
    if (!fn || fn(&v) != cudaSuccess) return 0;
    return v;
}

#define ENTRY_POINT_WRAPPER(NAME)                                                                  \
    LW_EXPORT cudaError_t NAME(const char *symbol, void **fp, unsigned long long flags,            \
                               enum cudaDriverEntryPointQueryResult *status) {                     \
        const void *ra = __builtin_return_address(0);                                              \
        lw_rt_cudaGetDriverEntryPoint real = REAL(NAME, lw_rt_cudaGetDriverEntryPoint, ra);        \
        if (!real) return NO_RUNTIME;                                                              \
        cudaError_t r = real(symbol, fp, flags, status);                                           \
        if (r == cudaSuccess && symbol && fp && *fp) {                                             \
            int v = runtime_version(ra);                                                           \
            if (v > 0) *fp = lw_wrap_by_base(symbol, v, flags, *fp, NULL);                         \
        }                                                                                          \
        return r;                                                                                  \
    }

#define ENTRY_POINT_BY_VERSION_WRAPPER(NAME)                                                       \
    LW_EXPORT cudaError_t NAME(const char *symbol, void **fp, unsigned int version,                \
                               unsigned long long flags,                                           \
                               enum cudaDriverEntryPointQueryResult *status) {                     \
        lw_rt_cudaGetDriverEntryPointByVersion real =                                              \
            REAL(NAME, lw_rt_cudaGetDriverEntryPointByVersion, __builtin_return_address(0));       \
        if (!real) return NO_RUNTIME;                                                              \
        cudaError_t r = real(symbol, fp, version, flags, status);                                  \
        if (r == cudaSuccess && symbol && fp && *fp)                                               \
            *fp = lw_wrap_by_base(symbol, (int)version, flags, *fp, NULL);                         \
        return r;                                                                                  \
    }

ENTRY_POINT_WRAPPER(cudaGetDriverEntryPoint)
ENTRY_POINT_WRAPPER(cudaGetDriverEntryPoint_ptsz)
ENTRY_POINT_BY_VERSION_WRAPPER(cudaGetDriverEntryPointByVersion)
ENTRY_POINT_BY_VERSION_WRAPPER(cudaGetDriverEntryPointByVersion_ptsz)
