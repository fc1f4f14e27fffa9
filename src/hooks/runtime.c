/* SPDX-License-Identifier: Apache-2.0 */
/* CUDA runtime wrappers, for programs that link libcudart.so dynamically
 * (PyTorch's pip wheels do). Each forwards to the function its caller would
 * have reached without leakwatch: the global scope's runtime, or the caller's
 * own when it was loaded RTLD_LOCAL with its own libcudart (Python extension
 * modules), so that two runtimes in one process each get their own callers'
 * calls. The caller is known by the entry it called: each wrapper has its
 * export (the caller found by return address, lw_real_for_caller) and 64
 * hidden per-object entries NAME__k (object slot k, lw_real_for_object),
 * which bind.c writes into each object's own global offset table entries;
 * all of them run NAME_body.
 *
 * The runtime reaches the driver through our driver wrappers too; the guard
 * (guard.h) makes the runtime call, the outermost, the one that records. A
 * program with the runtime linked in statically never comes here: its driver
 * calls are seen by driver.c instead. */
#include "hooks.h"

#include "bind.h"
#include "guard.h"
#include "lifecycle.h"
#include "log.h"
#include "real.h"
#include "record.h"
#include "rep64.h"
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

int lw_runtime_index(const char *name) {
    if (name[0] != 'c' || name[1] != 'u' || name[2] != 'd' || name[3] != 'a') return -1;
    for (int i = 0; i < F_COUNT; i++)
        if (strcmp(name, names[i]) == 0) return i;
    return -1;
}

const char *lw_runtime_name(int f) {
    return f >= 0 && f < F_COUNT ? names[f] : NULL;
}

/* Who called: k >= 0, the object whose own entry was called (bind.c);
 * else the return address of the call of our export. */
typedef struct {
    int k;
    const void *ra;
} caller;

/* The real NAME for the caller. */
static void *real_for(caller c, int f) {
    return c.k >= 0 ? lw_real_for_object(c.k, f, names[f]) : lw_real_for_caller(c.ra, f, names[f]);
}

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

#define LW_UNPAREN(...) __VA_ARGS__

/* Object k's own entry for NAME (hidden: only bind.c hands it out). */
#define ENTRY(NAME, PARAMS, ARGS, k)                                                               \
    static cudaError_t NAME##__##k PARAMS {                                                        \
        return NAME##_body((caller){k, NULL}, LW_UNPAREN ARGS);                                    \
    }
#define ENTRY_ADDRESS(NAME, PARAMS, ARGS, k) (void *)NAME##__##k,

/* The export (callers found by return address: not bound yet, dlsym's
 * answer, libffi, generated code) and the per-object entries, around
 * NAME_body, which does the work once for all of them. */
#define ENTRIES(NAME, PARAMS, ARGS)                                                                \
    LW_EXPORT cudaError_t NAME PARAMS {                                                            \
        lw_bind_poll();                                                                            \
        return NAME##_body((caller){-1, __builtin_return_address(0)}, LW_UNPAREN ARGS);            \
    }                                                                                              \
    LW_REP64(ENTRY, NAME, PARAMS, ARGS)                                                            \
    static void *const NAME##_entries[LW_CALLER_OBJECTS] = {                                       \
        LW_REP64(ENTRY_ADDRESS, NAME, PARAMS, ARGS)};

#define BODY(NAME, PARAMS) __attribute__((noinline)) static cudaError_t NAME##_body PARAMS

#define ALLOC_WRAPPER(NAME, REALNAME, KIND, CLS, HOST, SIZE, PARAMS, ARGS, ...)                    \
    BODY(NAME, (caller c, __VA_ARGS__)) {                                                          \
        lw_rt_##REALNAME real = (lw_rt_##REALNAME)real_for(c, F_##NAME);                           \
        if (!real) return NO_RUNTIME;                                                              \
        int outer = lw_hook_enter();                                                               \
        cudaError_t r = real(LW_UNPAREN ARGS);                                                     \
        on_alloc(outer, r, KIND, CLS, r == cudaSuccess && ptr ? *ptr : NULL, SIZE, HOST);          \
        lw_hook_leave();                                                                           \
        return r;                                                                                  \
    }                                                                                              \
    ENTRIES(NAME, PARAMS, ARGS)

ALLOC_WRAPPER(cudaMalloc, cudaMalloc, LW_KIND_DEVICE, LW_CLASS_DPTR, 0, size,
              (void **ptr, size_t size), (ptr, size), void **ptr, size_t size)
ALLOC_WRAPPER(cudaMallocAsync, cudaMallocAsync, LW_KIND_DEVICE, LW_CLASS_DPTR, 0, size,
              (void **ptr, size_t size, cudaStream_t s), (ptr, size, s), void **ptr, size_t size,
              cudaStream_t s)
ALLOC_WRAPPER(cudaMallocAsync_ptsz, cudaMallocAsync, LW_KIND_DEVICE, LW_CLASS_DPTR, 0, size,
              (void **ptr, size_t size, cudaStream_t s), (ptr, size, s), void **ptr, size_t size,
              cudaStream_t s)
ALLOC_WRAPPER(cudaMallocFromPoolAsync, cudaMallocFromPoolAsync, LW_KIND_DEVICE, LW_CLASS_DPTR, 0,
              size, (void **ptr, size_t size, cudaMemPool_t pool, cudaStream_t s),
              (ptr, size, pool, s), void **ptr, size_t size, cudaMemPool_t pool, cudaStream_t s)
ALLOC_WRAPPER(cudaMallocFromPoolAsync_ptsz, cudaMallocFromPoolAsync, LW_KIND_DEVICE, LW_CLASS_DPTR,
              0, size, (void **ptr, size_t size, cudaMemPool_t pool, cudaStream_t s),
              (ptr, size, pool, s), void **ptr, size_t size, cudaMemPool_t pool, cudaStream_t s)
ALLOC_WRAPPER(cudaMallocManaged, cudaMallocManaged, LW_KIND_MANAGED, LW_CLASS_DPTR, 0, size,
              (void **ptr, size_t size, unsigned int flags), (ptr, size, flags), void **ptr,
              size_t size, unsigned int flags)
ALLOC_WRAPPER(cudaMallocHost, cudaMallocHost, LW_KIND_PINNED_HOST, LW_CLASS_HOST, 1, size,
              (void **ptr, size_t size), (ptr, size), void **ptr, size_t size)
ALLOC_WRAPPER(cudaHostAlloc, cudaHostAlloc, LW_KIND_PINNED_HOST, LW_CLASS_HOST, 1, size,
              (void **ptr, size_t size, unsigned int flags), (ptr, size, flags), void **ptr,
              size_t size, unsigned int flags)
ALLOC_WRAPPER(cudaMallocPitch, cudaMallocPitch, LW_KIND_DEVICE, LW_CLASS_DPTR, 0,
              (r == cudaSuccess && pitch ? *pitch * height : width * height),
              (void **ptr, size_t *pitch, size_t width, size_t height), (ptr, pitch, width, height),
              void **ptr, size_t *pitch, size_t width, size_t height)

/* Host memory the program allocated, page-locked (PyTorch's
 * pinned_use_cuda_host_register): pinned host memory until unregistered. */
BODY(cudaHostRegister, (caller c, void *ptr, size_t size, unsigned int flags)) {
    lw_rt_cudaHostRegister real = (lw_rt_cudaHostRegister)real_for(c, F_cudaHostRegister);
    if (!real) return NO_RUNTIME;
    int outer = lw_hook_enter();
    cudaError_t r = real(ptr, size, flags);
    on_alloc(outer, r, LW_KIND_PINNED_HOST, LW_CLASS_HOST, ptr, size, 1);
    lw_hook_leave();
    return r;
}
ENTRIES(cudaHostRegister, (void *ptr, size_t size, unsigned int flags), (ptr, size, flags))

/* Frees leave the table before the real free (see record.h). */
#define FREE_WRAPPER(NAME, REALNAME, CLS, PARAMS, ARGS, ...)                                       \
    BODY(NAME, (caller c, __VA_ARGS__)) {                                                          \
        lw_rt_##REALNAME real = (lw_rt_##REALNAME)real_for(c, F_##NAME);                           \
        if (!real) return NO_RUNTIME;                                                              \
        int outer = lw_hook_enter();                                                               \
        int track = outer && ptr != NULL && lw_started();                                          \
        lw_free_ticket t;                                                                          \
        int saved = errno;                                                                         \
        if (track) lw_record_free_begin(CLS, (uint64_t)(uintptr_t)ptr, &t);                        \
        errno = saved;                                                                             \
        cudaError_t r = real(LW_UNPAREN ARGS);                                                     \
        saved = errno;                                                                             \
        if (track) lw_record_free_end(&t, r == cudaSuccess);                                       \
        errno = saved;                                                                             \
        lw_hook_leave();                                                                           \
        return r;                                                                                  \
    }                                                                                              \
    ENTRIES(NAME, PARAMS, ARGS)

FREE_WRAPPER(cudaFree, cudaFree, LW_CLASS_DPTR, (void *ptr), (ptr), void *ptr)
FREE_WRAPPER(cudaFreeAsync, cudaFreeAsync, LW_CLASS_DPTR, (void *ptr, cudaStream_t s), (ptr, s),
             void *ptr, cudaStream_t s)
FREE_WRAPPER(cudaFreeAsync_ptsz, cudaFreeAsync, LW_CLASS_DPTR, (void *ptr, cudaStream_t s),
             (ptr, s), void *ptr, cudaStream_t s)
FREE_WRAPPER(cudaFreeHost, cudaFreeHost, LW_CLASS_HOST, (void *ptr), (ptr), void *ptr)
FREE_WRAPPER(cudaHostUnregister, cudaHostUnregister, LW_CLASS_HOST, (void *ptr), (ptr), void *ptr)

/* Another process's memory, opened here: counted as imported (imports.h),
 * never as this process's device memory. */
BODY(cudaIpcOpenMemHandle, (caller c, void **ptr, cudaIpcMemHandle_t handle, unsigned int flags)) {
    lw_rt_cudaIpcOpenMemHandle real =
        (lw_rt_cudaIpcOpenMemHandle)real_for(c, F_cudaIpcOpenMemHandle);
    if (!real) return NO_RUNTIME;
    int outer = lw_hook_enter();
    cudaError_t r = real(ptr, handle, flags);
    int ok = r == cudaSuccess && ptr;
    lw_hook_import_opened(outer, ok, 0, ok ? (uint64_t)(uintptr_t)*ptr : 0);
    lw_hook_leave();
    return r;
}
ENTRIES(cudaIpcOpenMemHandle, (void **ptr, cudaIpcMemHandle_t handle, unsigned int flags),
        (ptr, handle, flags))

BODY(cudaIpcCloseMemHandle, (caller c, void *ptr)) {
    lw_rt_cudaIpcCloseMemHandle real =
        (lw_rt_cudaIpcCloseMemHandle)real_for(c, F_cudaIpcCloseMemHandle);
    if (!real) return NO_RUNTIME;
    lw_hook_import_close ic;
    lw_hook_import_close_begin(lw_hook_enter(), (uint64_t)(uintptr_t)ptr, &ic);
    cudaError_t r = real(ptr);
    lw_hook_import_close_end(&ic, r == cudaSuccess);
    lw_hook_leave();
    return r;
}
ENTRIES(cudaIpcCloseMemHandle, (void *ptr), (ptr))

/* cudaGetDriverEntryPoint*: the runtime answers through the driver's
 * cuGetProcAddress, which it found through us, so what comes back is usually
 * our wrapper already; lw_wrap_by_base leaves those alone (and maps our
 * exports, which an interposable driver hands out, to the driver's own). */
/* The version of the runtime the caller uses. */
static int runtime_version(caller c) {
    lw_rt_cudaRuntimeGetVersion fn =
        (lw_rt_cudaRuntimeGetVersion)(c.k >= 0
                                          ? lw_real_for_object_nocount(c.k, F_cudaRuntimeGetVersion,
                                                                       "cudaRuntimeGetVersion")
                                          : lw_real_for_caller_nocount(c.ra,
                                                                       F_cudaRuntimeGetVersion,
                                                                       "cudaRuntimeGetVersion"));
    int v = 0;
    if (!fn || fn(&v) != cudaSuccess) return 0;
    return v;
}

/* cudaRuntimeGetVersion itself is looked up (runtime_version) but not
 * wrapped: it has no entries. */

#define ENTRY_POINT_WRAPPER(NAME)                                                                  \
    BODY(NAME, (caller c, const char *symbol, void **fp, unsigned long long flags,                 \
                enum cudaDriverEntryPointQueryResult *status)) {                                   \
        lw_rt_cudaGetDriverEntryPoint real = (lw_rt_cudaGetDriverEntryPoint)real_for(c, F_##NAME); \
        if (!real) return NO_RUNTIME;                                                              \
        cudaError_t r = real(symbol, fp, flags, status);                                           \
        if (r == cudaSuccess && symbol && fp && *fp) {                                             \
            int v = runtime_version(c);                                                            \
            if (v > 0) *fp = lw_wrap_by_base(symbol, v, flags, *fp, NULL);                         \
        }                                                                                          \
        return r;                                                                                  \
    }                                                                                              \
    ENTRIES(NAME,                                                                                  \
            (const char *symbol, void **fp, unsigned long long flags,                              \
             enum cudaDriverEntryPointQueryResult *status),                                        \
            (symbol, fp, flags, status))

#define ENTRY_POINT_BY_VERSION_WRAPPER(NAME)                                                       \
    BODY(NAME, (caller c, const char *symbol, void **fp, unsigned int version,                     \
                unsigned long long flags, enum cudaDriverEntryPointQueryResult *status)) {         \
        lw_rt_cudaGetDriverEntryPointByVersion real =                                              \
            (lw_rt_cudaGetDriverEntryPointByVersion)real_for(c, F_##NAME);                         \
        if (!real) return NO_RUNTIME;                                                              \
        cudaError_t r = real(symbol, fp, version, flags, status);                                  \
        if (r == cudaSuccess && symbol && fp && *fp)                                               \
            *fp = lw_wrap_by_base(symbol, (int)version, flags, *fp, NULL);                         \
        return r;                                                                                  \
    }                                                                                              \
    ENTRIES(NAME,                                                                                  \
            (const char *symbol, void **fp, unsigned int version, unsigned long long flags,        \
             enum cudaDriverEntryPointQueryResult *status),                                        \
            (symbol, fp, version, flags, status))

ENTRY_POINT_WRAPPER(cudaGetDriverEntryPoint)
ENTRY_POINT_WRAPPER(cudaGetDriverEntryPoint_ptsz)
ENTRY_POINT_BY_VERSION_WRAPPER(cudaGetDriverEntryPointByVersion)
ENTRY_POINT_BY_VERSION_WRAPPER(cudaGetDriverEntryPointByVersion_ptsz)

/* Each wrapped name's entries, by index; cudaRuntimeGetVersion has none. */
static void *const *const entries[F_COUNT] = {
#define E(NAME) [F_##NAME] = NAME##_entries
    E(cudaMalloc),
    E(cudaMallocAsync),
    E(cudaMallocAsync_ptsz),
    E(cudaMallocFromPoolAsync),
    E(cudaMallocFromPoolAsync_ptsz),
    E(cudaMallocManaged),
    E(cudaMallocHost),
    E(cudaHostAlloc),
    E(cudaMallocPitch),
    E(cudaFree),
    E(cudaFreeAsync),
    E(cudaFreeAsync_ptsz),
    E(cudaFreeHost),
    E(cudaHostRegister),
    E(cudaHostUnregister),
    E(cudaIpcOpenMemHandle),
    E(cudaIpcCloseMemHandle),
    E(cudaGetDriverEntryPoint),
    E(cudaGetDriverEntryPoint_ptsz),
    E(cudaGetDriverEntryPointByVersion),
    E(cudaGetDriverEntryPointByVersion_ptsz),
#undef E
};

void *lw_runtime_entry(int f, int k) {
    if (f < 0 || f >= F_COUNT || k < 0 || k >= LW_CALLER_OBJECTS || !entries[f]) return NULL;
    return entries[f][k];
}
